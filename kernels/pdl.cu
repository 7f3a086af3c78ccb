// A programmatic dependent launch pair (sm_90 and later; PDL): pdl_primary
// writes out[i] = 2 * in[i] and, once its writes are done, lets the next
// kernel of the stream start; pdl_secondary, launched with
// CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, may start before
// pdl_primary completes, does work that needs nothing of it, then waits for
// it (cudaGridDependencySynchronize) before reading what it wrote:
// out2[i] = out[i] + 1. On older architectures the two calls are left out
// and the launches are ordinary stream order.
extern "C" __global__ void pdl_primary(const float *__restrict__ in, float *__restrict__ out,
                                       unsigned long long n)
{
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = 2.0f * in[i];
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    // The writes above are visible to the dependent grid after its
    // cudaGridDependencySynchronize(): the trigger only lets it be scheduled.
    cudaTriggerProgrammaticLaunchCompletion();
#endif
}

extern "C" __global__ void pdl_secondary(const float *__restrict__ out, float *__restrict__ out2,
                                         unsigned long long n)
{
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    // Waits for the primary grid to complete and its memory to be visible.
    cudaGridDependencySynchronize();
#endif
    if (i < n)
        out2[i] = out[i] + 1.0f;
}
