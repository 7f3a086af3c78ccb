/* Raw driver calls for handles cuscope does not own (cuscope/raw.h). */
#include "cuscope/raw.h"
#include "internal.h"

CUS_API cus_status cus_driver_mem_free(CUdeviceptr ptr)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(ptr);
    CUS_TRY(cus_driver_ensure_());
    CUresult r = cus_drv_.cuMemFree_(ptr);
    if (r)
        return CUS_FAIL((cus_status)r, "cuMemFree", "freeing 0x%llx", (unsigned long long)ptr);
    return CUS_SUCCESS;
}

CUS_API cus_status cus_driver_mem_release(CUmemGenericAllocationHandle handle)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(handle);
    CUS_TRY(cus_driver_ensure_());
    if (!cus_drv_.cuMemRelease_)
        return CUS_FAIL(CUS_ERROR_NOT_SUPPORTED, NULL, "the driver lacks cuMemRelease");
    CUresult r = cus_drv_.cuMemRelease_(handle);
    if (r)
        return CUS_FAIL((cus_status)r, "cuMemRelease", "releasing handle 0x%llx",
                        (unsigned long long)handle);
    return CUS_SUCCESS;
}

/* Runs a status call as a release: its failure to the destroy handler. */
static void as_release(cus_status (*call)(unsigned long long), unsigned long long v,
                       const char *function, const char *driver_call)
{
    cus_error_save saved;
    cus_error_save_(&saved);
    if (call(v))
        cus_destroy_error_(cus_last_status(), function, driver_call, "%s",
                           cus_last_error_message());
    cus_error_restore_(&saved);
}

static cus_status free_u64(unsigned long long v)
{
    return cus_driver_mem_free((CUdeviceptr)v);
}

static cus_status release_u64(unsigned long long v)
{
    return cus_driver_mem_release((CUmemGenericAllocationHandle)v);
}

CUS_API void cus_raw_mem_free(CUdeviceptr ptr)
{
    if (ptr)
        as_release(free_u64, ptr, __func__, "cuMemFree");
}

CUS_API void cus_raw_mem_release(CUmemGenericAllocationHandle handle)
{
    if (handle)
        as_release(release_u64, handle, __func__, "cuMemRelease");
}
