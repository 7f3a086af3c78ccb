// Kernels for test_fake_image: every parameter and global form the parser
// reads, compiled to PTX, a cubin and fatbins at build time; the test checks
// that the cubin's layouts (ptxas') are the ones it computes from the PTX.
#include <cstddef>

struct triple { char c; double d; int i; };
struct with_f3 { float3 v; char c; };
struct words { int a[33]; };
struct alignas(64) descriptor { unsigned char bytes[128]; };  // like a CUtensorMap
struct alignas(32) wide { double d[4]; };

extern "C" {
__constant__ float coeffs[4] = {1.0f, 2.0f, 3.0f, 4.0f};
__constant__ int ctab[3];
__device__ unsigned int counter = 7;
__device__ unsigned long long big = 5;
__device__ char carr[16] = {1, 2, 3};
__device__ double dnoinit;
}
__device__ int mangled_global = 3;

extern "C" __global__ void noparams(void) {}

extern "C" __global__ void ptrs(float *a, const float *__restrict__ b, float *__restrict__ c, int n)
{
    int i = threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i] + coeffs[i % 4] + ctab[i % 3];
    atomicAdd(&counter, 1u);
}

extern "C" __global__ void small(char c, unsigned char uc, short s, unsigned short us, int i,
                                 double d, size_t z, long long *out)
{
    out[0] = c + uc + s + us + i + (long long)d + z + carr[1] + big;
}

extern "C" __global__ void bystruct(triple t, with_f3 f, float3 g, char tail, long long *out)
{
    out[0] = t.c + (long long)t.d + t.i + (long long)f.v.x + f.c + (long long)g.z + tail;
}

extern "C" __global__ void bigstruct(words w, int *out) { out[0] = w.a[32]; }

extern "C" __global__ void aligned(char c, const __grid_constant__ descriptor t, wide w, char d,
                                   int *out)
{
    out[0] = c + t.bytes[127] + (int)w.d[3] + d;
}

__global__ void cxxkernel(int a, float *o) { o[a] = 1.0f + (float)dnoinit; }

template <typename T> __global__ void tmpl(T *o, T v) { o[threadIdx.x] = v; }
template __global__ void tmpl<double>(double *, double);
template __global__ void tmpl<char>(char *, char);

__device__ __noinline__ float helper(float x) { return x * 2.0f + mangled_global; }

extern "C" __global__ void __launch_bounds__(256, 2) bounded(float *o)
{
    __shared__ float buf[256];
    __shared__ double buf2[10];
    buf[threadIdx.x] = helper(o[threadIdx.x]);
    buf2[threadIdx.x % 10] = 1.0;
    __syncthreads();
    o[threadIdx.x] = buf[255 - threadIdx.x] + buf2[3];
}

extern "C" __global__ void __launch_bounds__(128) bounded1(float *o) { o[0] = 1; }

extern "C" __global__ void dynshared(float *o)
{
    extern __shared__ float d[];
    d[threadIdx.x] = 1;
    __syncthreads();
    o[threadIdx.x] = d[0];
}
