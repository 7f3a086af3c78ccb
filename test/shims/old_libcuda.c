/* A stand-in for a driver older than CUDA 12.0: it has cuInit but no
 * cuGetProcAddress_v2. */
#include <cuda.h>

CUresult cuInit(unsigned int flags);
CUresult cuInit(unsigned int flags)
{
    (void)flags;
    return CUDA_SUCCESS;
}
