// Kernels for test_fake_image whose parameters pass 4 KiB, which ptxas
// describes with EIATTR_KPARAM_INFO_V2 instead of EIATTR_KPARAM_INFO (CUDA
// 12.1 raised the limit to 32764 bytes). Apart from kernels.cu: their
// constant banks make the cubin 64 KiB larger, and the tests that try every
// prefix of kernels.cubin would take that much longer.
struct big { char b[32000]; };
struct mid { char b[5000]; };

extern "C" __global__ void bigparam(big p, int *o) { o[0] = p.b[31999]; }

extern "C" __global__ void mixed(char c, big p, int n, double d, int *o)
{
    o[0] = p.b[n] + c + (int)d;
}

extern "C" __global__ void midparam(int a, mid m, int *o) { o[0] = m.b[4999] + a; }

// of the same compilation, below 4 KiB: KPARAM_INFO
extern "C" __global__ void smallparams(int a, int *o) { o[0] = a; }
