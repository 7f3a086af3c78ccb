// Corpus theme: the edges of the parameter space. A 32,000-byte parameter
// (CUDA 12.1's limit is 32,764 bytes), the old 4 KiB limit and one byte past
// it, a list of 40 parameters, __grid_constant__ parameters, and CUtensorMap
// (128 bytes, aligned to 128) by value.
#include <cuda.h>

struct big { unsigned char bytes[32000]; };
struct page { int v[1024]; };                 // 4096 bytes
struct pair { char c; double d; };

extern "C" __global__ void big_param(big b, int *out)
{
    out[0] = b.bytes[0] + b.bytes[31999];
}

extern "C" __global__ void at_old_limit(page p)
{
    if (p.v[1023] == 7)
        asm volatile("trap;");
}

extern "C" __global__ void past_old_limit(page p, char c, int *out)
{
    out[0] = p.v[0] + c;
}

extern "C" __global__ void forty(char a0, short a1, int a2, long long a3, float a4, double a5,
                                 char a6, int a7, char a8, double a9, short a10, float a11,
                                 int *a12, char a13, long long a14, char a15, short a16, int a17,
                                 char a18, double a19, float a20, char a21, int a22, short a23,
                                 long long a24, char a25, float a26, double a27, char a28,
                                 int a29, short a30, char a31, long long a32, float a33,
                                 char a34, double a35, int a36, char a37, short a38,
                                 long long *a39)
{
    a39[0] = a0 + a1 + a2 + a3 + (long long)a4 + (long long)a5 + a6 + a7 + a8 +
             (long long)a9 + a10 + (long long)a11 + (a12 ? *a12 : 0) + a13 + a14 + a15 + a16 +
             a17 + a18 + (long long)a19 + (long long)a20 + a21 + a22 + a23 + a24 + a25 +
             (long long)a26 + (long long)a27 + a28 + a29 + a30 + a31 + a32 + (long long)a33 +
             a34 + (long long)a35 + a36 + a37 + a38;
}

// __grid_constant__: the kernel takes the parameter's address, without a copy.
__device__ __noinline__ long long read_pair(const pair *p)
{
    return p->c + (long long)p->d;
}

extern "C" __global__ void grid_constant(const __grid_constant__ pair p, int n,
                                         const __grid_constant__ page q, long long *out)
{
    out[0] = read_pair(&p) + n + q.v[n & 1023];
}

extern "C" __global__ void tensor_map(int before, const __grid_constant__ CUtensorMap map,
                                      float *out)
{
#if __CUDA_ARCH__ >= 900
    asm volatile("prefetch.tensormap [%0];" ::"l"(&map) : "memory");
#endif
    out[0] = (float)(before + (long long)map.opaque[0]);
}

extern "C" __global__ void tensor_maps(const __grid_constant__ CUtensorMap a, char c,
                                       const __grid_constant__ CUtensorMap b, int *out)
{
    out[0] = (int)(a.opaque[1] + b.opaque[15]) + c;
}
