// Corpus theme: device-side graph calls. cudaGraphSetConditional (the body
// of a conditional node sets its condition), device graph launch (tail and
// fire-and-forget), and programmatic dependent launch (sm_90 on). The first
// two are device runtime builtins: nvcc 13 accepts them without -rdc, and
// every cubin (sm_90, -rdc, device-linked with cudadevrt) keeps them as
// undefined symbols, for the driver to resolve at load (gpu-corpus shows
// whether it does, form by form).
#include <cuda_runtime.h>

extern "C" __global__ void set_condition(cudaGraphConditionalHandle h, const unsigned *value)
{
    if (threadIdx.x == 0)
        cudaGraphSetConditional(h, *value);
}

// The body of a while node: counts down, and ends the loop at zero.
extern "C" __global__ void loop_body(unsigned *counter, cudaGraphConditionalHandle h)
{
    if (threadIdx.x == 0 && --*counter == 0)
        cudaGraphSetConditional(h, 0);
}

extern "C" __global__ void tail_launch(cudaGraphExec_t g, int *launched)
{
    if (threadIdx.x == 0 && cudaGraphLaunch(g, cudaStreamGraphTailLaunch) == cudaSuccess)
        *launched = 1;
}

extern "C" __global__ void fire_and_forget(cudaGraphExec_t g)
{
    if (threadIdx.x == 0)
        (void)cudaGraphLaunch(g, cudaStreamGraphFireAndForget);
}

extern "C" __global__ void programmatic(float *p, int n)
{
#if __CUDA_ARCH__ >= 900 // griddepcontrol: sm_90 on
    cudaGridDependencySynchronize();
#endif
    if ((int)threadIdx.x < n)
        p[threadIdx.x] += 1.0f;
#if __CUDA_ARCH__ >= 900
    cudaTriggerProgrammaticLaunchCompletion();
#endif
}
