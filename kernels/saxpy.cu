// y = a*x + y over n floats.
extern "C" __global__ void saxpy(float a, const float *__restrict__ x, float *__restrict__ y,
                                 unsigned long long n)
{
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + y[i];
}
