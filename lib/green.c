/* Green contexts: SM resources, their split and descriptors, and the
 * creation of green contexts (their destruction is context.c's, their
 * streams stream.c's). */
#include <string.h>

#include "internal.h"

static cus_status green_unsupported(const char *entry)
{
    return cus_fail_(CUS_ERROR_NOT_SUPPORTED, cus_api_name_(__func__), NULL,
                     "driver API %d.%d does not provide %s: green contexts need driver 12.4 or "
                     "later",
                     cus_driver_version_ / 1000, cus_driver_version_ % 1000 / 10, entry);
}
#define CUS_NEED_ENTRY(field)                                                  \
    do {                                                                       \
        if (CUS_UNLIKELY(!cus_drv_.field##_))                                  \
            return green_unsupported(#field);                                  \
    } while (0)

CUS_API cus_status cus_device_sm_resource(cus_device dev, CUdevResource *res)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(res);
    CUS_TRY(cus_driver_ensure_());
    CUS_NEED_ENTRY(cuDeviceGetDevResource);
    CUdevResource r;
    CUresult cr = cus_drv_.cuDeviceGetDevResource_(dev.handle, &r, CU_DEV_RESOURCE_TYPE_SM);
    if (cr)
        return CUS_FAIL((cus_status)cr, "cuDeviceGetDevResource", "device %d", (int)dev.handle);
    *res = r;
    return CUS_SUCCESS;
}

CUS_API unsigned int cus_sm_resource_count(const CUdevResource *res)
{
    return res && res->type == CU_DEV_RESOURCE_TYPE_SM ? res->sm.smCount : 0;
}

CUS_API cus_status cus_sm_resource_split(const CUdevResource *res, unsigned int min_count,
                                         unsigned int flags, CUdevResource *groups,
                                         unsigned int *ngroups, CUdevResource *remaining)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(res && ngroups);
    if (res->type != CU_DEV_RESOURCE_TYPE_SM)
        return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,
                        "the resource is of type %d, not CU_DEV_RESOURCE_TYPE_SM", (int)res->type);
    if (groups && *ngroups == 0)
        return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,
                        "*ngroups is 0: no room for a group (groups NULL asks how many)");
    if (min_count > res->sm.smCount)
        return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,
                        "min_count %u is above the resource's %u SMs", min_count,
                        res->sm.smCount);
    CUS_TRY(cus_driver_ensure_());
    CUS_NEED_ENTRY(cuDevSmResourceSplitByCount);
    /* Into copies: nothing is written on failure. The groups are many only
     * when asked: a caller's array, copied whole after. */
    unsigned int n = *ngroups;
    /* Zeroed: a query (groups NULL) is documented to give only the count,
     * so a driver may leave remaining unwritten; it then reads as type
     * CU_DEV_RESOURCE_TYPE_INVALID with no SMs, never as stack garbage. */
    CUdevResource rest;
    memset(&rest, 0, sizeof rest);
    CUresult r;
    if (groups) {
        cus_autofree CUdevResource *out = cus_calloc_(n, sizeof *out);
        if (!out)
            return CUS_FAIL(CUS_ERROR_OUT_OF_HOST_MEMORY, NULL, "allocating %u groups", n);
        r = cus_drv_.cuDevSmResourceSplitByCount_(out, &n, res, remaining ? &rest : NULL, flags,
                                                  min_count);
        if (!r)
            memcpy(groups, out, n * sizeof *out);
    } else {
        r = cus_drv_.cuDevSmResourceSplitByCount_(NULL, &n, res, remaining ? &rest : NULL,
                                                  flags, min_count);
    }
    if (r)
        return CUS_FAIL((cus_status)r, "cuDevSmResourceSplitByCount",
                        "splitting %u SMs into groups of at least %u (flags 0x%x): a group is "
                        "min_count rounded up to the architecture's minimum (%u SMs here) and "
                        "granularity (a multiple of 8 SMs on compute capability 9.0 and later, "
                        "of 2 before), and at least one must fit",
                        res->sm.smCount, min_count, flags, res->sm.minSmPartitionSize);
    *ngroups = n;
    if (remaining)
        *remaining = rest;
    return CUS_SUCCESS;
}

/* The descriptor of n resources: the driver's call takes a non-const array. */
static cus_status make_desc(const CUdevResource *res, unsigned int n, CUdevResourceDesc *out)
{
    cus_autofree CUdevResource *copy = cus_calloc_(n, sizeof *copy);
    if (!copy)
        return CUS_FAIL(CUS_ERROR_OUT_OF_HOST_MEMORY, NULL, "copying %u resources", n);
    memcpy(copy, res, n * sizeof *copy);
    CUdevResourceDesc d = NULL;
    CUresult r = cus_drv_.cuDevResourceGenerateDesc_(&d, copy, n);
    if (r)
        return CUS_FAIL((cus_status)r, "cuDevResourceGenerateDesc",
                        "%u resource(s) (several must be outputs of one split, of one device)", n);
    *out = d;
    return CUS_SUCCESS;
}

CUS_API cus_status cus_sm_resource_desc(const CUdevResource *res, unsigned int n,
                                        CUdevResourceDesc *out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(res && n && out);
    CUS_TRY(cus_driver_ensure_());
    CUS_NEED_ENTRY(cuDevResourceGenerateDesc);
    return make_desc(res, n, out);
}

CUS_API cus_status cus_context_create_green(cus_device dev, const CUdevResource *resources,
                                            unsigned int n, unsigned int flags,
                                            cus_context **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(resources && n && out);
    CUS_TRY(cus_driver_ensure_());
    CUS_NEED_ENTRY(cuDevResourceGenerateDesc);
    CUS_NEED_ENTRY(cuGreenCtxCreate);
    CUS_NEED_ENTRY(cuGreenCtxDestroy);
    CUS_NEED_ENTRY(cuCtxFromGreenCtx);
    cus_autofree cus_context *c = cus_context_new_(NULL, dev, CUS_CONTEXT_GREEN);
    if (!c)
        return CUS_FAIL(CUS_ERROR_OUT_OF_HOST_MEMORY, NULL, "allocating a context");
    CUdevResourceDesc desc = NULL;
    CUS_TRY(make_desc(resources, n, &desc));
    unsigned int cu_flags = flags | CU_GREEN_CTX_DEFAULT_STREAM;
    CUgreenCtx g = NULL;
    CUresult r = cus_drv_.cuGreenCtxCreate_(&g, desc, dev.handle, cu_flags);
    if (r)
        return CUS_FAIL((cus_status)r, "cuGreenCtxCreate", "device %d, %u resource(s), flags 0x%x",
                        (int)dev.handle, n, cu_flags);
    CUcontext h = NULL;
    if ((r = cus_drv_.cuCtxFromGreenCtx_(&h, g))) {
        CUresult rd = cus_drv_.cuGreenCtxDestroy_(g);
        if (rd)
            cus_destroy_error_((cus_status)rd, __func__, "cuGreenCtxDestroy",
                               "destroying the new green context %p after cuCtxFromGreenCtx "
                               "failed",
                               (void *)g);
        return CUS_FAIL((cus_status)r, "cuCtxFromGreenCtx",
                        "green context %p (it was destroyed)", (void *)g);
    }
    c->handle = h;
    c->green = g;
    *out = cus_context_publish_(cus_steal(&c));
    return CUS_SUCCESS;
}

CUS_API cus_status cus_context_sm_resource(cus_context *ctx, CUdevResource *res)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(ctx && res);
    CUS_CHECK_POISON(ctx);
    CUS_NEED_ENTRY(cuCtxGetDevResource);
    CUdevResource got;
    /* Names its context: needs none current. */
    CUresult r = cus_drv_.cuCtxGetDevResource_(ctx->handle, &got, CU_DEV_RESOURCE_TYPE_SM);
    if (r)
        return cus_context_driver_fail_(ctx, r, __func__, "cuCtxGetDevResource");
    *res = got;
    return CUS_SUCCESS;
}

CUS_API cus_status cus_context_sm_count(cus_context *ctx, unsigned int *count)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(ctx && count);
    CUdevResource res;
    CUS_TRY(cus_context_sm_resource(ctx, &res));
    *count = res.sm.smCount;
    return CUS_SUCCESS;
}

CUS_API CUgreenCtx cus_context_green_handle(const cus_context *ctx)
{
    return ctx ? ctx->green : NULL;
}

/* The checks both event calls share: a green ctx, live ctx and event. */
static cus_status green_event_args(cus_context *ctx, cus_event *event, const char *function)
{
    if (ctx->kind != CUS_CONTEXT_GREEN)
        return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL,
                         "context %p is not a green context: record or wait on one of its "
                         "streams instead (cus_event_record, cus_stream_wait_event)",
                         (void *)ctx->handle);
    if (CUS_UNLIKELY(atomic_load_explicit(&ctx->poison, memory_order_relaxed)))
        return cus_context_poisoned_fail_(ctx, function);
    if (CUS_UNLIKELY(atomic_load_explicit(&event->ctx->poison, memory_order_relaxed)))
        return cus_context_poisoned_fail_(event->ctx, function);
    return CUS_SUCCESS;
}

CUS_API cus_status cus_context_record_event(cus_context *ctx, cus_event *event)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(ctx && event);
    CUS_TRY(green_event_args(ctx, event, __func__));
    /* "The same primary context": the device's primary context and its green
     * contexts. What cuscope knows to be of another is refused here; a
     * wrapped context is the driver's to judge. */
    const cus_context *ec = event->ctx;
    if (ec->kind == CUS_CONTEXT_OWNED || ec->device.handle != ctx->device.handle)
        return CUS_FAIL(CUS_ERROR_CONTEXT_MISMATCH, NULL,
                        "event of context %p (device %d) recorded for green context %p of "
                        "device %d: the event must be of the device's primary context or of "
                        "one of its green contexts",
                        (void *)ec->handle, (int)ec->device.handle, (void *)ctx->handle,
                        (int)ctx->device.handle);
    CUS_NEED_ENTRY(cuGreenCtxRecordEvent);
    CUresult r = cus_drv_.cuGreenCtxRecordEvent_(ctx->green, event->handle);
    if (r)
        return cus_context_driver_fail_(ctx, r, __func__, "cuGreenCtxRecordEvent");
    return CUS_SUCCESS;
}

CUS_API cus_status cus_context_wait_event(cus_context *ctx, cus_event *event)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(ctx && event);
    CUS_TRY(green_event_args(ctx, event, __func__));
    CUS_NEED_ENTRY(cuGreenCtxWaitEvent);
    CUresult r = cus_drv_.cuGreenCtxWaitEvent_(ctx->green, event->handle);
    if (r)
        return cus_context_driver_fail_(ctx, r, __func__, "cuGreenCtxWaitEvent");
    return CUS_SUCCESS;
}
