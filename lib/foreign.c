/* Foreign memory: buffers over device memory that cuscope did not allocate
 * (cus_buffer_wrap), never freed by cuscope. */
#include "buffer_owner.h"
#include "cuscope/memory.h"
#include "internal.h"

CUS_API cus_status cus_buffer_wrap(cus_context *ctx, CUdeviceptr ptr, size_t bytes,
                                   cus_buffer **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(ctx && out && ptr && bytes);
    CUS_CHECK_POISON(ctx);
    /* Three cheap queries of the driver's own record of the pointer: which
     * device it is on, and the allocation around it. */
    int ordinal = -1;
    CUdeviceptr start = 0;
    size_t size = 0;
    {
        CUS_SWITCH(sw, ctx);
        CUS_TRY(sw_status);
        CUS_TRY(cus_switch_check_(&sw,
                                  cus_drv_.cuPointerGetAttribute_(
                                      &ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr),
                                  "cuPointerGetAttribute"));
        CUS_TRY(cus_switch_check_(&sw,
                                  cus_drv_.cuPointerGetAttribute_(
                                      &start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, ptr),
                                  "cuPointerGetAttribute"));
        CUS_TRY(cus_switch_check_(&sw,
                                  cus_drv_.cuPointerGetAttribute_(
                                      &size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, ptr),
                                  "cuPointerGetAttribute"));
    }
    if (ordinal != (int)ctx->device.handle)
        return CUS_FAIL(CUS_ERROR_CONTEXT_MISMATCH, "cuPointerGetAttribute",
                        "0x%llx is memory of device %d, not of the context's device %d",
                        (unsigned long long)ptr, ordinal, (int)ctx->device.handle);
    size_t into = (size_t)(ptr - start);
    if (ptr < start || into > size || bytes > size - into)
        return CUS_FAIL(CUS_ERROR_OUT_OF_RANGE, "cuPointerGetAttribute",
                        "%zu bytes at 0x%llx overrun the %zu-byte allocation at 0x%llx", bytes,
                        (unsigned long long)ptr, size, (unsigned long long)start);
    cus_release_deferred_if_any_();
    return cus_buffer_new_owned_(ctx, ptr, bytes, CUS_BUFFER_FOREIGN,
                                 (cus_buffer_owner_){NULL, NULL}, out, __func__);
}
