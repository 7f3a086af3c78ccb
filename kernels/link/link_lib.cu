// The callee side of the JIT link test inputs: defines what link_main.cu's
// kernel calls. link_scale computes x[i] = 2 * x[i] + 1 once linked.
__device__ float link_twice(float x)
{
    return 2.0f * x;
}
