// The caller side of the JIT link test inputs (kernels/meson.build): a
// kernel that calls a __device__ function defined in link_lib.cu, compiled
// relocatable (-rdc=true) so that only a link resolves the call.
extern __device__ float link_twice(float x);

extern "C" __global__ void link_scale(float *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] = link_twice(x[i]) + 1.0f;
}
