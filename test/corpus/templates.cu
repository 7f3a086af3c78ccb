// Corpus theme: templates, each instantiated several ways. Type, non-type and
// variadic parameters, a struct template by value, a functor (an empty struct)
// by value, explicit instantiation.
#include <cuda_fp16.h>

template <typename T, int N> struct array { T v[N]; };

struct add_one {
    __device__ float operator()(float x) const { return x + 1.0f; }
};
struct scale {
    float by;
    __device__ float operator()(float x) const { return x * by; }
};

template <typename T> __global__ void axpy(T a, const T *x, T *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + y[i];
}
template __global__ void axpy<float>(float, const float *, float *, int);
template __global__ void axpy<double>(double, const double *, double *, int);
template __global__ void axpy<__half>(__half, const __half *, __half *, int);
template __global__ void axpy<int>(int, const int *, int *, int);

template <int N> __global__ void unrolled(float *p)
{
#pragma unroll
    for (int i = 0; i < N; i++)
        p[i] += 1.0f;
}
template __global__ void unrolled<1>(float *);
template __global__ void unrolled<4>(float *);
template __global__ void unrolled<32>(float *);

template <typename T, typename U> __global__ void two(T t, U u, double *out)
{
    out[0] = (double)t + (double)u;
}
template __global__ void two<char, double>(char, double, double *);
template __global__ void two<double, char>(double, char, double *);
template __global__ void two<short, long long>(short, long long, double *);

template <typename T, int N> __global__ void by_array(array<T, N> a, T *out)
{
    T s = 0;
    for (int i = 0; i < N; i++)
        s += a.v[i];
    out[0] = s;
}
template __global__ void by_array<float, 3>(array<float, 3>, float *);
template __global__ void by_array<char, 5>(array<char, 5>, char *);
template __global__ void by_array<double, 2>(array<double, 2>, double *);

template <typename F> __global__ void apply(F f, float *p, int n)
{
    int i = threadIdx.x;
    if (i < n)
        p[i] = f(p[i]);
}
template __global__ void apply<add_one>(add_one, float *, int);
template __global__ void apply<scale>(scale, float *, int);

template <typename... Ts> __global__ void variadic(int *out, Ts... ts)
{
    out[0] = (int)sizeof...(Ts) + (0 + ... + (int)ts);
}
template __global__ void variadic<>(int *);
template __global__ void variadic<char>(int *, char);
template __global__ void variadic<char, int, double, short>(int *, char, int, double, short);
