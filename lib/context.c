/* Contexts: owned, primary and foreign, with the sticky-error latch. */
#include <stdlib.h>

#include "internal.h"

static void context_destroy(cus_context *c)
{
    CUresult r = CUDA_SUCCESS;
    /* In a fork() child the context is the parent's: host memory only. */
    switch (cus_is_forked_() ? CUS_CONTEXT_FOREIGN : c->kind) {
    case CUS_CONTEXT_OWNED:
        r = cus_drv_.cuCtxDestroy_(c->handle);
        if (r)
            cus_destroy_error_((cus_status)r, "cus_context_unref", "cuCtxDestroy",
                               "destroying context %p", (void *)c->handle);
        break;
    case CUS_CONTEXT_PRIMARY:
        r = cus_drv_.cuDevicePrimaryCtxRelease_(c->device.handle);
        if (r)
            cus_destroy_error_((cus_status)r, "cus_context_unref", "cuDevicePrimaryCtxRelease",
                               "releasing the primary context of device %d",
                               (int)c->device.handle);
        break;
    case CUS_CONTEXT_GREEN:
        /* Needs no context current. Its children (streams first: the driver
         * does not destroy them) went before, as each holds a reference. */
        r = cus_drv_.cuGreenCtxDestroy_(c->green);
        if (r)
            cus_destroy_error_((cus_status)r, "cus_context_unref", "cuGreenCtxDestroy",
                               "destroying green context %p (context %p)", (void *)c->green,
                               (void *)c->handle);
        break;
    case CUS_CONTEXT_FOREIGN:
        break;
    }
    free(c);
}

CUS_DEFINE_REF_UNREF(cus_context, context_destroy)

cus_status cus_context_driver_fail_(cus_context *ctx, CUresult r, const char *function,
                                    const char *driver_call)
{
    const char *latched = "";
    if (ctx && cus_status_is_sticky((cus_status)r)) {
        int expected = 0;
        atomic_compare_exchange_strong(&ctx->poison, &expected, (int)r);
        latched = "; the context is now poisoned: recreate it (a sticky error usually means "
                  "the process must restart)";
    }
    return cus_fail_((cus_status)r, function, driver_call, "context %p%s",
                     ctx ? (void *)ctx->handle : NULL, latched);
}

cus_status cus_context_poisoned_fail_(const cus_context *ctx, const char *function)
{
    cus_status st = atomic_load_explicit(&ctx->poison, memory_order_relaxed);
    return cus_fail_(st, function, NULL,
                     "context %p is poisoned by an earlier %s; no driver call was made", 
                     (void *)ctx->handle, cus_status_name(st));
}

/* A context record, not yet counted as alive: the constructors free it with
 * plain free() (cus_autofree) until the driver has made the context, then
 * publish it (context_publish). */
static cus_context *context_new(CUcontext handle, cus_device dev, cus_context_kind kind)
{
    cus_context *c = cus_calloc_lines_(sizeof *c);
    if (c) {
        c->handle = handle;
        c->device = dev;
        c->kind = kind;
        atomic_init(&c->poison, 0);
        atomic_init(&c->priority_least, 0);
        atomic_init(&c->priority_greatest, 0);
        atomic_init(&c->priority_known, false);
    }
    return c;
}

static cus_context *context_publish(cus_context *c)
{
    cus_refcount_init_(&c->refs);
    return c;
}

cus_context *cus_context_new_(CUcontext handle, cus_device dev, cus_context_kind kind)
{
    return context_new(handle, dev, kind);
}

cus_context *cus_context_publish_(cus_context *c)
{
    return context_publish(c);
}

CUS_API cus_status cus_context_create(cus_device dev, unsigned int flags, cus_context **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(out);
    CUS_TRY(cus_driver_ensure_());
    bool push = !(flags & CUS_CTX_NO_PUSH);
    unsigned int cu_flags = flags & ~CUS_CTX_NO_PUSH;
    if (push)
        CUS_TRY(cus_context_mirror_reserve_(__func__));
    cus_autofree cus_context *c = context_new(NULL, dev, CUS_CONTEXT_OWNED);
    if (!c)
        return CUS_FAIL(CUS_ERROR_OUT_OF_HOST_MEMORY, NULL, "allocating a context");

    CUcontext h = NULL;
    CUresult r;
    const char *call;
    if (cus_drv_.cuCtxCreate_v4_) {
        CUctxCreateParams params = {0};
        call = "cuCtxCreate_v4";
        r = cus_drv_.cuCtxCreate_v4_(&h, &params, cu_flags, dev.handle);
    } else {
        call = "cuCtxCreate";
        r = cus_drv_.cuCtxCreate_(&h, cu_flags, dev.handle);
    }
    if (r)
        return CUS_FAIL((cus_status)r, call, "device %d, flags 0x%x", (int)dev.handle, cu_flags);
    c->handle = h;

    if (!push) {
        CUcontext got = NULL;
        r = cus_drv_.cuCtxPopCurrent_(&got);
        if (r || got != h) {
            /* cuCtxDestroy pops it if it is still on top: the stack is back
             * as it was either way. */
            CUresult rd = cus_drv_.cuCtxDestroy_(h);
            if (rd)
                cus_destroy_error_((cus_status)rd, __func__, "cuCtxDestroy",
                                   "destroying the new context %p after its pop failed",
                                   (void *)h);
            return CUS_FAIL(r ? (cus_status)r : CUS_ERROR_CONTEXT_MISMATCH, "cuCtxPopCurrent",
                            "taking the new context %p off the stack (CUS_CTX_NO_PUSH); it was "
                            "destroyed",
                            (void *)h);
        }
    }
    context_publish(c);
    if (push)
        cus_context_mirror_push_(c); /* the driver pushed it already */
    *out = cus_steal(&c);
    return CUS_SUCCESS;
}

CUS_API cus_status cus_context_retain_primary(cus_device dev, cus_context **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(out);
    CUS_TRY(cus_driver_ensure_());
    cus_autofree cus_context *c = context_new(NULL, dev, CUS_CONTEXT_PRIMARY);
    if (!c)
        return CUS_FAIL(CUS_ERROR_OUT_OF_HOST_MEMORY, NULL, "allocating a context");
    CUresult r = cus_drv_.cuDevicePrimaryCtxRetain_(&c->handle, dev.handle);
    if (r)
        return CUS_FAIL((cus_status)r, "cuDevicePrimaryCtxRetain", "device %d", (int)dev.handle);
    *out = context_publish(cus_steal(&c));
    return CUS_SUCCESS;
}

CUS_API cus_status cus_context_wrap(CUcontext handle, cus_context **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(handle && out);
    CUS_TRY(cus_driver_ensure_());
    /* The device is asked with the handle current; the switch leaves the
     * stack as it was. */
    CUdevice d = 0;
    cus_status st;
    {
        CUS_SWITCH_HANDLE_AS(sw, handle, __func__);
        if (!(st = sw_status) && (st = (cus_status)cus_drv_.cuCtxGetDevice_(&d)))
            CUS_FAIL(st, "cuCtxGetDevice", "wrapping context %p", (void *)handle);
    }
    if (st)
        return st;
    cus_context *c = context_new(handle, (cus_device){d}, CUS_CONTEXT_FOREIGN);
    if (!c)
        return CUS_FAIL(CUS_ERROR_OUT_OF_HOST_MEMORY, NULL, "allocating a context");
    *out = context_publish(c);
    return CUS_SUCCESS;
}

CUS_API CUcontext cus_context_handle(const cus_context *ctx)
{
    return ctx ? ctx->handle : NULL;
}

CUS_API cus_device cus_context_device(const cus_context *ctx)
{
    return ctx ? ctx->device : (cus_device){0};
}

CUS_API cus_context_kind cus_context_get_kind(const cus_context *ctx)
{
    return ctx ? ctx->kind : CUS_CONTEXT_FOREIGN;
}

CUS_API cus_status cus_context_poisoned(const cus_context *ctx)
{
    return ctx ? atomic_load_explicit(&ctx->poison, memory_order_relaxed) : CUS_SUCCESS;
}

CUresult cus_call_relaxed_(CUresult (*call)(void *), void *arg, const char *function)
{
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    CUresult x = cus_drv_.cuThreadExchangeStreamCaptureMode_(&mode);
    if (x)
        cus_destroy_error_((cus_status)x, function, "cuThreadExchangeStreamCaptureMode",
                           "entering relaxed capture interaction for a release (it is made in "
                           "the thread's mode)");
    CUresult r = call(arg);
    if (!x && (x = cus_drv_.cuThreadExchangeStreamCaptureMode_(&mode)))
        cus_destroy_error_((cus_status)x, function, "cuThreadExchangeStreamCaptureMode",
                           "restoring the thread's capture interaction mode after a release "
                           "(the thread stays relaxed)");
    return r;
}

/* What the destructor helpers share after any switch: the call (relaxed or
 * not), a sticky status latched, a failure sent to the destroy handler. */
static void destroy_call(cus_context *ctx, const char *function, const char *driver_call,
                         CUresult (*call)(void *), void *arg, const char *what, bool relaxed)
{
    CUresult r = relaxed ? cus_call_relaxed_(call, arg, function) : call(arg);
    if (r && cus_status_is_sticky((cus_status)r)) {
        /* A fault surfaced by the release: later calls fail fast, as after
         * any other call that returned it. */
        int expected = 0;
        atomic_compare_exchange_strong(&ctx->poison, &expected, (int)r);
    }
    if (r)
        cus_destroy_error_((cus_status)r, function, driver_call, "releasing %s", what);
}

/* Neither helper calls the driver for a dead context (the call would only
 * fail again) nor in a fork() child (the resource is the parent's, and
 * silently so). */
static bool destroy_skipped(const cus_context *ctx)
{
    return atomic_load_explicit(&ctx->poison, memory_order_relaxed) || cus_is_forked_();
}

static void destroy_in_context(cus_context *ctx, const char *function, const char *driver_call,
                               CUresult (*call)(void *), void *arg, const char *what,
                               bool relaxed)
{
    if (destroy_skipped(ctx))
        return;
    /* Inside a destruction nothing is recorded (cus_run_destroy_): every
     * failure goes to the destroy handler, the pop's through the switch. */
    CUS_SWITCH_AS(sw, ctx, function);
    if (sw_status) {
        cus_destroy_error_(sw_status, function, "cuCtxPushCurrent",
                           "making context %p current to release %s", (void *)ctx->handle, what);
        return;
    }
    destroy_call(ctx, function, driver_call, call, arg, what, relaxed);
}

void cus_destroy_in_context_(cus_context *ctx, const char *function, const char *driver_call,
                             CUresult (*call)(void *), void *arg, const char *what)
{
    destroy_in_context(ctx, function, driver_call, call, arg, what, false);
}

void cus_destroy_in_context_relaxed_(cus_context *ctx, const char *function,
                                     const char *driver_call, CUresult (*call)(void *),
                                     void *arg, const char *what)
{
    destroy_in_context(ctx, function, driver_call, call, arg, what, true);
}

void cus_destroy_call_(cus_context *ctx, const char *function, const char *driver_call,
                       CUresult (*call)(void *), void *arg, const char *what)
{
    if (!destroy_skipped(ctx))
        destroy_call(ctx, function, driver_call, call, arg, what, false);
}

CUS_API cus_status cus_context_synchronize(cus_context *ctx)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(ctx);
    CUS_IN_CONTEXT(ctx, "cuCtxSynchronize", cus_drv_.cuCtxSynchronize_());
    cus_release_deferred_if_any_(); /* host functions that just ran may have dropped some */
    return CUS_SUCCESS;
}

CUS_API cus_status cus_context_api_version(cus_context *ctx, unsigned int *version)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(ctx && version);
    CUS_CHECK_POISON(ctx);
    unsigned int v = 0;
    CUresult r = cus_drv_.cuCtxGetApiVersion_(ctx->handle, &v);
    if (r)
        return cus_context_driver_fail_(ctx, r, __func__, "cuCtxGetApiVersion");
    *version = v;
    return CUS_SUCCESS;
}

CUS_API cus_status cus_context_flags(cus_context *ctx, unsigned int *flags)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(ctx && flags);
    unsigned int f = 0;
    CUS_IN_CONTEXT(ctx, "cuCtxGetFlags", cus_drv_.cuCtxGetFlags_(&f));
    *flags = f;
    return CUS_SUCCESS;
}

CUS_API cus_status cus_context_get_limit(cus_context *ctx, CUlimit limit, size_t *value)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(ctx && value);
    size_t v = 0;
    CUS_IN_CONTEXT(ctx, "cuCtxGetLimit", cus_drv_.cuCtxGetLimit_(&v, limit));
    *value = v;
    return CUS_SUCCESS;
}

CUS_API cus_status cus_context_set_limit(cus_context *ctx, CUlimit limit, size_t value)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(ctx);
    CUS_IN_CONTEXT(ctx, "cuCtxSetLimit", cus_drv_.cuCtxSetLimit_(limit, value));
    return CUS_SUCCESS;
}

CUS_API cus_status cus_context_get_cache_config(cus_context *ctx, CUfunc_cache *config)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(ctx && config);
    CUfunc_cache c = CU_FUNC_CACHE_PREFER_NONE;
    CUS_IN_CONTEXT(ctx, "cuCtxGetCacheConfig", cus_drv_.cuCtxGetCacheConfig_(&c));
    *config = c;
    return CUS_SUCCESS;
}

CUS_API cus_status cus_context_set_cache_config(cus_context *ctx, CUfunc_cache config)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(ctx);
    CUS_IN_CONTEXT(ctx, "cuCtxSetCacheConfig", cus_drv_.cuCtxSetCacheConfig_(config));
    return CUS_SUCCESS;
}

static cus_status shared_mem_unsupported(const char *function, const char *entry)
{
    return cus_fail_(CUS_ERROR_NOT_SUPPORTED, function, NULL,
                     "driver API %d.%d does not provide %s", cus_driver_version_ / 1000,
                     cus_driver_version_ % 1000 / 10, entry);
}

CUS_API cus_status cus_context_get_shared_mem_config(cus_context *ctx, CUsharedconfig *config)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(ctx && config);
    if (!cus_drv_.cuCtxGetSharedMemConfig_)
        return shared_mem_unsupported(__func__, "cuCtxGetSharedMemConfig");
    CUsharedconfig c = CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE;
    CUS_IN_CONTEXT(ctx, "cuCtxGetSharedMemConfig", cus_drv_.cuCtxGetSharedMemConfig_(&c));
    *config = c;
    return CUS_SUCCESS;
}

CUS_API cus_status cus_context_set_shared_mem_config(cus_context *ctx, CUsharedconfig config)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(ctx);
    if (!cus_drv_.cuCtxSetSharedMemConfig_)
        return shared_mem_unsupported(__func__, "cuCtxSetSharedMemConfig");
    CUS_IN_CONTEXT(ctx, "cuCtxSetSharedMemConfig", cus_drv_.cuCtxSetSharedMemConfig_(config));
    return CUS_SUCCESS;
}

CUS_API cus_status cus_context_stream_priority_range(cus_context *ctx, int *least, int *greatest)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(ctx && (least || greatest));
    int lo = 0, hi = 0;
    CUS_IN_CONTEXT(ctx, "cuCtxGetStreamPriorityRange", cus_drv_.cuCtxGetStreamPriorityRange_(&lo, &hi));
    atomic_store_explicit(&ctx->priority_least, lo, memory_order_relaxed);
    atomic_store_explicit(&ctx->priority_greatest, hi, memory_order_relaxed);
    atomic_store_explicit(&ctx->priority_known, true, memory_order_release);
    if (least)
        *least = lo;
    if (greatest)
        *greatest = hi;
    return CUS_SUCCESS;
}

cus_status cus_context_priority_range_(cus_context *ctx, int *least, int *greatest)
{
    if (CUS_LIKELY(atomic_load_explicit(&ctx->priority_known, memory_order_acquire))) {
        *least = atomic_load_explicit(&ctx->priority_least, memory_order_relaxed);
        *greatest = atomic_load_explicit(&ctx->priority_greatest, memory_order_relaxed);
        return CUS_SUCCESS;
    }
    return cus_context_stream_priority_range(ctx, least, greatest);
}

CUS_API cus_status cus_context_set_name(cus_context *ctx, const char *name)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(ctx && name);
    cus_nvtx_name_context_(ctx->handle, name);
    return CUS_SUCCESS;
}
