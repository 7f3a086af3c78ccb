// The seed's kernel: c[i] = a[i] + b[i] over n floats.
extern "C" __global__ void sum(const float *x, const float *y, float *out, int count)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += blockDim.x * gridDim.x)
        out[i] = x[i] + y[i];
}
