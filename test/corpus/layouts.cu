// Corpus theme: parameter layouts. Scalars of every width, structs and vector
// types by value (padding, over-alignment, nesting), half and bf16, extern "C"
// and C++ (mangled) names, namespaces and overloads, and a device function
// that is not a kernel (the driver must not list it).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

struct pair { char c; double d; };            // 16 bytes, align 8
struct alignas(16) aligned16 { int a; };      // 16 bytes, align 16
struct odd { char c[3]; };                    // 3 bytes, align 1
struct nested { pair p; short s; };           // 24 bytes, align 8
struct empty {};                              // 1 byte

__device__ __noinline__ long long fold(long long a, long long b)
{
    return a * 31 + b;
}

extern "C" __global__ void empty_params(void) {}

extern "C" __global__ void scalars(char c, short s, int i, long long ll, float f, double d, bool b,
                                   unsigned char uc, const void *p, long long *out)
{
    out[0] = fold(c + s + i + ll + (long long)f + (long long)d + b + uc, (long long)p);
}

extern "C" __global__ void padding(char a, double b, char c, int d, char e, short f, long long *out)
{
    out[0] = a + (long long)b + c + d + e + f;
}

extern "C" __global__ void structs(pair p, char c, aligned16 a, odd o, nested n, empty e, int tail,
                                   long long *out)
{
    (void)e;
    out[0] = fold(p.c + (long long)p.d + c + a.a + o.c[2], n.p.c + n.s + tail);
}

extern "C" __global__ void vectors(char3 c3, float4 f4, short2 s2, double2 d2, int3 i3,
                                   longlong4_32a l4, uchar1 u1, float3 f3, long long *out)
{
    out[0] = c3.z + (long long)f4.w + s2.y + (long long)d2.x + i3.z + l4.w + u1.x +
             (long long)f3.y;
}

extern "C" __global__ void halves(__half h, __nv_bfloat16 b, __half2 h2, __nv_bfloat162 b2,
                                  __half h_tail, float *out)
{
    out[0] = __half2float(h) + __bfloat162float(b) + __low2float(h2) + __high2float(b2) +
             __half2float(h_tail);
}

// C++ names: the driver knows them mangled.
__global__ void mangled(int a, float b, double *out)
{
    out[0] = a + b;
}

__global__ void overloaded(int a, int *out)
{
    out[0] = a;
}

__global__ void overloaded(double a, pair p, double *out)
{
    out[0] = a + p.d;
}

namespace corpus {
namespace inner {
__global__ void in_namespace(const float *__restrict__ in, float *__restrict__ out, size_t n)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = in[i];
}
} // namespace inner
} // namespace corpus
