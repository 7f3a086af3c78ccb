/* A stand-in libcuda.so.1 for the loader's dlopen path: it exports
 * cuGetProcAddress_v2 (and cuInit, as a real driver does) and forwards to the
 * fake driver, so a test sees cus_init() go through dlopen and dlsym. */
#include <cuda.h>
#include <cuscope/fake.h>

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cuda_version, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *symbol_status);
CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cuda_version, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *symbol_status)
{
    return cus_fake_get_proc_address(symbol, pfn, cuda_version, flags, symbol_status);
}

CUresult cuInit(unsigned int flags);
CUresult cuInit(unsigned int flags)
{
    (void)flags;
    return CUDA_SUCCESS;
}
