/* JIT linking: the linker object, its options, the choice of backend, its
 * logs and its cubin. The backends are link_nvjitlink.c and link_driver.c. */
#include <string.h>

#include "link_internal.h"

static void linker_destroy(cus_linker *l)
{
    if (l->handle)
        l->ops->destroy(l);
    free(l->cubin);
    free(l->error_log);
    free(l->info_log);
    free(l->driver_error);
    free(l->driver_info);
    pthread_mutex_destroy(&l->lock);
    cus_context_unref(l->ctx);
    free(l);
}

CUS_DEFINE_REF_UNREF(cus_linker, linker_destroy)

bool cus_link_copy_log_(char **dst, const char *log)
{
    size_t n = log ? strlen(log) : 0;
    while (n && (log[n - 1] == '\n' || log[n - 1] == ' ' || log[n - 1] == '\r'))
        n--;
    if (!n) {
        *dst = NULL;
        return true;
    }
    char *s = cus_malloc_(n + 1);
    if (!s)
        return false;
    memcpy(s, log, n);
    s[n] = 0;
    *dst = s;
    return true;
}

void cus_link_keep_error_log_(cus_linker *l, const char *log)
{
    char *copy = NULL;
    if (!cus_link_copy_log_(&copy, log))
        cus_host_alloc_absorbed_(); /* the message still carries the log */
    free(l->error_log);
    l->error_log = copy;
}

static cus_status check_options(const cus_link_options *o, const char *function)
{
    if (o->backend < CUS_LINK_BACKEND_AUTO || o->backend > CUS_LINK_BACKEND_DRIVER)
        return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL, "unknown link backend %d",
                         (int)o->backend);
    if (o->arch < 0 || o->arch > 10000)
        return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL,
                         "link target sm_%d: give the compute capability as major * 10 + minor "
                         "(90 for sm_90)", o->arch);
    if (o->set_level && (o->optimization_level < 0 || o->optimization_level > 3))
        return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL,
                         "link optimization level %d is outside 0..3", o->optimization_level);
    if (o->extra_count && !o->extra)
        return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL,
                         "%zu extra link options given with a NULL array", o->extra_count);
    for (size_t i = 0; i < o->extra_count; i++)
        if (!o->extra[i])
            return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL,
                             "extra link option %zu is NULL", i);
    return CUS_SUCCESS;
}

/* The backend that runs: AUTO is nvJitLink where it loads, else the driver. */
static cus_status choose_backend(cus_context *ctx, const cus_link_options *o,
                                 const cus_link_ops_ **ops, const char *function)
{
    switch (o->backend) {
    case CUS_LINK_BACKEND_NVJITLINK:
        CUS_TRY(cus_nvjitlink_load_(function, true));
        *ops = &cus_link_nvjitlink_ops_;
        return CUS_SUCCESS;
    case CUS_LINK_BACKEND_DRIVER:
        *ops = &cus_link_driver_ops_;
        return CUS_SUCCESS;
    case CUS_LINK_BACKEND_AUTO:
        break;
    }
    if (cus_nvjitlink_load_(function, false) == CUS_SUCCESS) {
        *ops = &cus_link_nvjitlink_ops_;
        return CUS_SUCCESS;
    }
    if (!ctx) /* the driver's linker needs a context: say why nvJitLink is not there */
        return cus_nvjitlink_load_(function, true);
    *ops = &cus_link_driver_ops_;
    return CUS_SUCCESS;
}

CUS_API cus_status cus_linker_create(cus_context *ctx, const cus_link_options *opts,
                                     cus_linker **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(out);
    cus_release_deferred_if_any_();
    static const cus_link_options defaults;
    const cus_link_options *o = opts ? opts : &defaults;
    CUS_TRY(check_options(o, __func__));
    if (ctx)
        CUS_CHECK_POISON(ctx);
    const cus_link_ops_ *ops = &cus_link_driver_ops_;
    CUS_TRY(choose_backend(ctx, o, &ops, __func__));
    if (!ctx && (ops->backend == CUS_LINK_BACKEND_DRIVER || !o->arch))
        return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,
                        ops->backend == CUS_LINK_BACKEND_DRIVER
                            ? "the driver's linker needs a context (cuLinkCreate links for the "
                              "current one)"
                            : "a link without a context needs an explicit arch");
    if (ops->backend == CUS_LINK_BACKEND_DRIVER && (o->lto || o->extra_count))
        return CUS_FAIL(CUS_ERROR_NOT_SUPPORTED, NULL,
                        "the driver's linker (cuLink*) takes no %s: link with nvJitLink "
                        "(libnvJitLink.so.13, or CUSCOPE_LIBNVJITLINK)",
                        o->lto ? "-lto (LTO-IR needs nvJitLink)" : "option strings");

    int arch = o->arch;
    if (!arch && ops->backend == CUS_LINK_BACKEND_NVJITLINK) {
        int major = 0, minor = 0;
        CUS_TRY(cus_device_compute_capability(cus_context_device(ctx), &major, &minor));
        arch = major * 10 + minor;
    }

    cus_autofree cus_linker *l = cus_calloc_(1, sizeof *l);
    if (!l)
        return CUS_FAIL(CUS_ERROR_OUT_OF_HOST_MEMORY, NULL, "allocating a linker");
    l->ops = ops;
    l->arch = arch;
    l->ctx = ctx;
    CUS_TRY(ops->create(l, o, __func__)); /* frees what it made on failure */
    cus_refcount_init_(&l->refs);
    pthread_mutex_init(&l->lock, NULL);
    cus_context_ref(ctx);
    *out = cus_steal(&l);
    return CUS_SUCCESS;
}

static const char *input_name(cus_link_input type)
{
    switch (type) {
    case CUS_LINK_INPUT_CUBIN: return "cubin";
    case CUS_LINK_INPUT_PTX: return "PTX";
    case CUS_LINK_INPUT_LTOIR: return "LTO-IR";
    case CUS_LINK_INPUT_FATBIN: return "fatbin";
    case CUS_LINK_INPUT_OBJECT: return "object";
    case CUS_LINK_INPUT_LIBRARY: return "library";
    }
    return NULL;
}

/* The checks every add makes, under the lock. */
static cus_status add_check(cus_linker *l, cus_link_input type, const char *function)
{
    if (!input_name(type))
        return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL, "unknown link input type %d",
                         (int)type);
    if (l->state != CUS_LINK_OPEN_)
        return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL,
                         "the linker is %s: it takes no more inputs",
                         l->state == CUS_LINK_COMPLETE_ ? "completed" : "failed");
    if (type == CUS_LINK_INPUT_LTOIR && l->ops->backend == CUS_LINK_BACKEND_DRIVER)
        return cus_fail_(CUS_ERROR_NOT_SUPPORTED, function, NULL,
                         "LTO-IR needs nvJitLink (the driver's cuLink* deprecated it): install "
                         "libnvJitLink.so.13 or set CUSCOPE_LIBNVJITLINK");
    if (l->ctx)
        CUS_CHECK_POISON(l->ctx);
    return CUS_SUCCESS;
}

CUS_API cus_status cus_linker_add_data(cus_linker *linker, cus_link_input type, const void *data,
                                       size_t size, const char *name)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(linker && data && size);
    CUS_LOCK_SCOPE(&linker->lock);
    CUS_TRY(add_check(linker, type, __func__));
    cus_status st = linker->ops->add_data(linker, type, data, size, name, __func__);
    if (st)
        linker->state = CUS_LINK_FAILED_;
    return st;
}

CUS_API cus_status cus_linker_add_file(cus_linker *linker, cus_link_input type, const char *path)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(linker && path);
    CUS_LOCK_SCOPE(&linker->lock);
    CUS_TRY(add_check(linker, type, __func__));
    cus_status st = linker->ops->add_file(linker, type, path, __func__);
    if (st)
        linker->state = CUS_LINK_FAILED_;
    return st;
}

/* Completes under the lock (held by the caller). */
static cus_status complete_locked(cus_linker *l, const char *function)
{
    if (l->state == CUS_LINK_COMPLETE_)
        return CUS_SUCCESS;
    if (l->state == CUS_LINK_FAILED_)
        return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL,
                         "the linker failed before: make a new one%s%s",
                         l->error_log ? "; its error log: " : "",
                         l->error_log ? l->error_log : "");
    if (l->ctx)
        CUS_CHECK_POISON(l->ctx);
    cus_status st = l->ops->complete(l, function);
    l->state = st ? CUS_LINK_FAILED_ : CUS_LINK_COMPLETE_;
    return st;
}

CUS_API cus_status cus_linker_complete(cus_linker *linker, const void **cubin, size_t *size)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(linker);
    CUS_LOCK_SCOPE(&linker->lock);
    CUS_TRY(complete_locked(linker, __func__));
    if (cubin)
        *cubin = linker->cubin;
    if (size)
        *size = linker->cubin_size;
    return CUS_SUCCESS;
}

CUS_API cus_status cus_linker_load(cus_linker *linker, const cus_jit_options *jit,
                                   cus_module **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(linker && out);
    if (!linker->ctx)
        return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,
                        "the linker was made without a context: load its cubin with "
                        "cus_module_load_data");
    const void *cubin;
    size_t size;
    {
        CUS_LOCK_SCOPE(&linker->lock);
        CUS_TRY(complete_locked(linker, __func__));
        cubin = linker->cubin;
        size = linker->cubin_size;
    }
    /* The cubin never changes once made, and our caller's reference keeps it. */
    return cus_module_load_data(linker->ctx, cubin, size, jit, out);
}

CUS_API const char *cus_linker_error_log(const cus_linker *linker)
{
    return linker && linker->error_log ? linker->error_log : "";
}

CUS_API const char *cus_linker_info_log(const cus_linker *linker)
{
    return linker && linker->info_log ? linker->info_log : "";
}

CUS_API cus_link_backend cus_linker_backend(const cus_linker *linker)
{
    return linker ? linker->ops->backend : CUS_LINK_BACKEND_AUTO;
}

CUS_API cus_context *cus_linker_context(const cus_linker *linker)
{
    return linker ? linker->ctx : NULL;
}
