// A WHILE conditional node's body (cuscope/graph_conditional.h): the first
// thread decrements *counter (not below 0) and sets the node's condition to
// whether it is still positive, so a WHILE node whose value starts non-zero
// runs this kernel *counter times without returning to the host.
// cudaGraphSetConditional is a device runtime builtin (sm_80 and later in
// this build): nvcc resolves it without -rdc, the driver at module load.
#include <cuda_runtime.h>

extern "C" __global__ void countdown(unsigned int *counter, cudaGraphConditionalHandle handle)
{
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        unsigned int c = *counter;
        if (c > 0)
            c--;
        *counter = c;
        cudaGraphSetConditional(handle, c > 0 ? 1u : 0u);
    }
}
