/* Libraries (cuLibrary*) and their kernels (cuKernel*): loading with the
 * module's image checks and JIT logs, the kernel cache, the parameter
 * layout, attributes per device, globals. Launches of a kernel are
 * launch.c's. A library holds no context (cuscope/library.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "library_internal.h"
#include "module_image.h"

#define KEY_OFFSET offsetof(cus_kernel, key)

/* Every call that needs the library API: drivers before 12.0 have none. */
#define LIBRARY_NEEDS(entry, version)                                          \
    do {                                                                       \
        if (CUS_UNLIKELY(!cus_drv_.entry##_))                                  \
            return CUS_FAIL(CUS_ERROR_NOT_SUPPORTED, #entry,                   \
                            "the driver has no " #entry " (needs " version ")"); \
    } while (0)

/* --- the library object ------------------------------------------------------- */

static void kernel_free(void *p)
{
    cus_kernel *k = p;
    free(k->key.name);
    free(k->param_offsets);
    free(k->param_sizes);
    free(k);
}

static CUresult unload_call(void *h)
{
    return cus_drv_.cuLibraryUnload_((CUlibrary)h);
}

static void library_destroy(cus_library *lib)
{
    /* No context to switch to: the driver unloads the library from every
     * context it was loaded in, whatever is current. Relaxed, as
     * cuModuleUnload: an open capture refuses an unload in another mode.
     * Not in a fork() child: the library is the parent's. */
    if (lib->handle && !cus_is_forked_()) {
        CUresult r = cus_call_relaxed_(unload_call, lib->handle, "cus_library_unref");
        if (r)
            cus_destroy_error_((cus_status)r, "cus_library_unref", "cuLibraryUnload",
                               "releasing a library");
    }
    cus_name_table_free_(&lib->kernels, kernel_free);
    free(lib->names);
    free(lib->info_log);
    free(lib->jit_buffers); /* after the unload: the driver's until then */
    cus_param_counts_free_(lib->param_counts);
    pthread_mutex_destroy(&lib->lock);
    free(lib);
}

CUS_DEFINE_REF_UNREF(cus_library, library_destroy)

typedef struct lib_opts {
    CUlibraryOption keys[1];
    void *values[1];
    unsigned int n;
} lib_opts;

static void lib_opts_build(lib_opts *o, const cus_library_options *options, cus_image_format format)
{
    o->n = 0;
    /* PTX is compiled from a copy whatever is said: only binaries may be kept. */
    if (options && options->binary_is_preserved && format != CUS_IMAGE_PTX) {
        o->keys[o->n] = CU_LIBRARY_BINARY_IS_PRESERVED;
        o->values[o->n] = (void *)(uintptr_t)1;
        o->n++;
    }
}

/* cus_library_load_data and _load_file: errors name `function`. */
static cus_status library_load(const void *image, size_t size, const cus_jit_options *jit,
                               const cus_library_options *options, cus_library **out,
                               const char *function)
{
    cus_release_deferred_if_any_();
    CUS_TRY(cus_driver_ensure_());
    if (!cus_drv_.cuLibraryLoadData_)
        return cus_fail_(CUS_ERROR_NOT_SUPPORTED, function, "cuLibraryLoadData",
                         "the driver has no cuLibraryLoadData (needs 12.0)");
    cus_image_format format;
    CUS_TRY(cus_image_check_(image, size, &format, function));

    cus_autofree cus_library *lib = cus_calloc_lines_(sizeof *lib);
    bool ptx = format == CUS_IMAGE_PTX;
    size_t info_size = ptx ? CUS_JIT_INFO_LOG_SIZE_PTX_ : CUS_JIT_INFO_LOG_SIZE_BINARY_;
    /* The option arrays and the logs they point at outlive this call (the
     * library keeps them): see jit_buffers. */
    struct jit_buffers {
        cus_jit_opts_ o;
        char error_log[CUS_JIT_ERROR_LOG_SIZE_];
        char info_log[];
    };
    cus_autofree struct jit_buffers *jb = cus_malloc_(sizeof *jb + info_size);
    if (!lib || !jb)
        return cus_fail_(CUS_ERROR_OUT_OF_HOST_MEMORY, function, NULL, "allocating a library");
    char *error_log = jb->error_log, *info_log = jb->info_log;
    const size_t error_size = sizeof jb->error_log;
    error_log[0] = info_log[0] = 0;
    cus_jit_opts_ *o = &jb->o;
    CUS_TRY(cus_jit_opts_build_(function, o, jit, error_log, error_size, info_log, info_size));
    lib_opts lo;
    lib_opts_build(&lo, options, format);

    CUlibrary h = NULL;
    CUresult r = cus_drv_.cuLibraryLoadData_(&h, image, o->keys, o->values, o->n,
                                             lo.n ? lo.keys : NULL, lo.n ? lo.values : NULL, lo.n);
    error_log[error_size - 1] = info_log[info_size - 1] = 0;
    if (r)
        return cus_jit_load_fail_((cus_status)r, function, "cuLibraryLoadData", format,
                                  error_log);
    if (!cus_jit_info_keep_(info_log, &lib->info_log)) {
        CUresult ru = cus_drv_.cuLibraryUnload_(h);
        if (ru)
            cus_destroy_error_((cus_status)ru, function, "cuLibraryUnload",
                               "rolling back a library whose info log could not be kept");
        return cus_fail_(CUS_ERROR_OUT_OF_HOST_MEMORY, function, NULL,
                         "copying the JIT's info log");
    }
    cus_refcount_init_(&lib->refs);
    pthread_mutex_init(&lib->lock, NULL);
    atomic_init(&lib->kernels, NULL);
    lib->handle = h;
    lib->format = format;
    lib->jit_error_log = jb->error_log;
    lib->jit_buffers = cus_steal(&jb);
    lib->param_counts = cus_param_counts_read_(
        image, size && format != CUS_IMAGE_FATBIN_WRAPPER ? size : SIZE_MAX);
    *out = cus_steal(&lib);
    return CUS_SUCCESS;
}

CUS_API cus_status cus_library_load_data(const void *image, size_t size,
                                         const cus_jit_options *jit,
                                         const cus_library_options *options, cus_library **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(image && out);
    return library_load(image, size, jit, options, out, __func__);
}

CUS_API cus_status cus_library_load_file(const char *path, const cus_jit_options *jit,
                                         cus_library **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(path && out);
    cus_autofree unsigned char *data = NULL;
    size_t size = 0;
    CUS_TRY(cus_file_read_(path, &data, &size));
    data[size] = 0; /* PTX files need not end with a NUL */
    cus_image_format format = cus_module_image_format(data, size);
    /* Loaded from memory (cuLibraryLoadData, which copies): the file's
     * bytes get the same checks as any image. */
    return library_load(data, format == CUS_IMAGE_PTX ? size + 1 : size, jit, NULL, out,
                        __func__);
}

CUS_API CUlibrary cus_library_handle(const cus_library *lib)
{
    return lib ? lib->handle : NULL;
}

CUS_API cus_image_format cus_library_format(const cus_library *lib)
{
    return lib ? lib->format : CUS_IMAGE_UNKNOWN;
}

CUS_API const char *cus_library_info_log(const cus_library *lib)
{
    return lib && lib->info_log ? lib->info_log : "";
}

/* --- kernels ------------------------------------------------------------------ */

/* The parameter layout, asked of cuKernelGetParamInfo until it answers
 * CUDA_ERROR_INVALID_VALUE past the last parameter. The one place that
 * reads a kernel's layout. */
static CUresult kernel_param_info(void *h, size_t i, size_t *offset, size_t *size)
{
    return cus_drv_.cuKernelGetParamInfo_((CUkernel)h, i, offset, size);
}

/* Reads the layout into k with whatever context is current, as many
 * parameters as the image declares (function.c's rule). Under the library's
 * lock, or before k is published. A context missing or destroyed leaves the
 * layout pending (CUS_SUCCESS with *pending set): cuKernelGetParamInfo needs
 * a current context (an H200 answers CUDA_ERROR_INVALID_CONTEXT without
 * one), though the layout is the same in every context. */
static cus_status kernel_read_layout(cus_kernel *k, const char *function, bool *pending)
{
    *pending = false;
    if (!cus_drv_.cuKernelGetParamInfo_) {
        atomic_store_explicit(&k->layout, CUS_LAYOUT_NONE_, memory_order_release);
        return CUS_SUCCESS; /* unknown: launches go unchecked */
    }
    bool oom;
    CUresult r = cus_param_layout_read_(
        cus_param_counts_find_(k->library->param_counts, k->key.name), kernel_param_info,
        k->handle, &k->nparams, &k->param_offsets, &k->param_sizes, &oom);
    if (oom)
        return cus_fail_(CUS_ERROR_OUT_OF_HOST_MEMORY, function, NULL,
                         "the parameter layout of %s", k->key.name);
    if (r == CUDA_ERROR_INVALID_CONTEXT || r == CUDA_ERROR_CONTEXT_IS_DESTROYED) {
        k->nparams = 0;
        *pending = true;
        return CUS_SUCCESS;
    }
    if (r)
        return cus_fail_((cus_status)r, function, "cuKernelGetParamInfo", "the layout of %s",
                         k->key.name);
    /* Release: a launch that sees the state reads the arrays. */
    atomic_store_explicit(&k->layout, CUS_LAYOUT_KNOWN_, memory_order_release);
    return CUS_SUCCESS;
}

CUS_HIDDEN cus_status cus_kernel_layout_in_(cus_kernel *k, CUcontext ctx, const char *function)
{
    if (atomic_load_explicit(&k->layout, memory_order_acquire) != CUS_LAYOUT_PENDING_)
        return CUS_SUCCESS;
    if (CUS_UNLIKELY(cus_is_forked_()))
        return cus_refuse_call_(function);
    if (CUS_UNLIKELY(cus_in_host_fn_))
        return cus_fail_(CUS_ERROR_IN_HOST_FUNCTION, function, NULL,
                         "the layout of %s is not read yet, and reading it is a driver call, "
                         "which a host function must not make", k->key.name);
    CUS_LOCK_SCOPE(&k->library->lock);
    if (atomic_load_explicit(&k->layout, memory_order_relaxed) != CUS_LAYOUT_PENDING_)
        return CUS_SUCCESS;
    bool pending;
    if (!ctx)
        CUS_TRY(kernel_read_layout(k, function, &pending));
    else {
        CUS_SWITCH_HANDLE_AS(sw, ctx, function);
        CUS_TRY(sw_status);
        CUS_TRY(kernel_read_layout(k, function, &pending));
    }
    if (pending)
        return cus_fail_((cus_status)CUDA_ERROR_INVALID_CONTEXT, function, "cuKernelGetParamInfo",
                         "no context is current to read the parameter layout of %s (the driver "
                         "reads it in one; any context will do)", k->key.name);
    return CUS_SUCCESS;
}

static void kernel_free_cleanup(cus_kernel **k)
{
    if (*k)
        kernel_free(*k);
}

CUS_API cus_status cus_library_get_kernel(cus_library *lib, const char *name, cus_kernel **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(lib && name && out);
    uint64_t hash = cus_name_hash_(name);
    /* A name looked up before: no lock, no driver (name_table.h). */
    cus_name_table_ *t = atomic_load_explicit(&lib->kernels, memory_order_acquire);
    cus_kernel *k = t ? cus_name_table_find_(t, name, hash, KEY_OFFSET) : NULL;
    if (k) {
        *out = cus_kernel_ref(k);
        return CUS_SUCCESS;
    }
    LIBRARY_NEEDS(cuLibraryGetKernel, "12.0");
    CUS_LOCK_SCOPE(&lib->lock);
    t = atomic_load_explicit(&lib->kernels, memory_order_relaxed);
    k = t ? cus_name_table_find_(t, name, hash, KEY_OFFSET) : NULL;
    if (k) {
        *out = cus_kernel_ref(k);
        return CUS_SUCCESS;
    }
    /* Made under the lock: two threads asking for one name get one object. */
    __attribute__((cleanup(kernel_free_cleanup))) cus_kernel *nk = cus_calloc_(1, sizeof *nk);
    if (nk)
        nk->key.name = cus_strdup_(name);
    if (!nk || !nk->key.name)
        return CUS_FAIL(CUS_ERROR_OUT_OF_HOST_MEMORY, NULL, "allocating kernel %s", name);
    nk->library = lib;
    nk->key.hash = hash;
    CUresult r = cus_drv_.cuLibraryGetKernel_(&nk->handle, lib->handle, name);
    if (r == CUDA_ERROR_NOT_FOUND)
        return CUS_FAIL((cus_status)r, "cuLibraryGetKernel", "no kernel named \"%s\" in the library",
                        name);
    /* PTX is compiled at the first use (an H200 loads broken PTX and
     * refuses the lookup): the JIT's log says why. */
    if (r && lib->jit_error_log && lib->jit_error_log[0])
        return CUS_FAIL((cus_status)r, "cuLibraryGetKernel",
                        "kernel %s: the library's %s did not compile at its first use: %s", name,
                        cus_image_format_name(lib->format), lib->jit_error_log);
    if (r)
        return CUS_FAIL((cus_status)r, "cuLibraryGetKernel", "kernel %s", name);
    /* With no context current the layout waits for the first use that has
     * one (a launch, a kernel node, cus_kernel_param_info). Asked first, so
     * as not to provoke the driver's refusal, which compute-sanitizer
     * reports as an error. */
    bool pending = true;
    CUcontext current = NULL;
    r = cus_drv_.cuCtxGetCurrent_(&current);
    if (r)
        return CUS_FAIL((cus_status)r, "cuCtxGetCurrent", "kernel %s", name);
    if (current)
        CUS_TRY(kernel_read_layout(nk, __func__, &pending));
    if (!cus_name_table_reserve_(&lib->kernels, lib->nkernels, KEY_OFFSET))
        return CUS_FAIL(CUS_ERROR_OUT_OF_HOST_MEMORY, NULL, "caching kernel %s", name);
    /* Published last (release): a lookup without the lock sees every field. */
    cus_name_table_put_(atomic_load_explicit(&lib->kernels, memory_order_relaxed), nk, KEY_OFFSET);
    lib->nkernels++;
    *out = cus_kernel_ref(cus_steal(&nk));
    return CUS_SUCCESS;
}

CUS_API cus_kernel *cus_kernel_ref(cus_kernel *k)
{
    if (k)
        cus_library_ref(k->library);
    return k;
}

CUS_API cus_kernel *cus_kernel_unref(cus_kernel *k)
{
    if (k)
        cus_library_unref(k->library);
    return NULL;
}

CUS_API CUkernel cus_kernel_handle(const cus_kernel *k)
{
    return k ? k->handle : NULL;
}

CUS_API const char *cus_kernel_name(const cus_kernel *k)
{
    return k ? k->key.name : "";
}

CUS_API cus_library *cus_kernel_library(const cus_kernel *k)
{
    return k ? k->library : NULL;
}

CUS_API bool cus_kernel_layout_known(const cus_kernel *k)
{
    return k && atomic_load_explicit(&k->layout, memory_order_acquire) == CUS_LAYOUT_KNOWN_;
}

CUS_API unsigned int cus_kernel_param_count(const cus_kernel *k)
{
    return cus_kernel_layout_known(k) ? k->nparams : 0;
}

CUS_API cus_status cus_kernel_param_info(const cus_kernel *k, unsigned int i, size_t *offset,
                                         size_t *size)
{
    CUS_CHECK_ARG(k);
    /* Not read at the lookup (no context was current): read now, in the
     * current context. The kernel's own record, not the caller's. */
    CUS_TRY(cus_kernel_layout_in_((cus_kernel *)k, NULL, __func__));
    if (!cus_kernel_layout_known(k))
        return CUS_FAIL(CUS_ERROR_NOT_SUPPORTED, NULL,
                        "the layout of %s is unknown: the driver has no cuKernelGetParamInfo "
                        "(needs 12.4)", k->key.name);
    if (i >= k->nparams)
        return CUS_FAIL(CUS_ERROR_OUT_OF_RANGE, NULL, "%s has %u parameters, asked for #%u",
                        k->key.name, k->nparams, i);
    if (offset)
        *offset = k->param_offsets[i];
    if (size)
        *size = k->param_sizes[i];
    return CUS_SUCCESS;
}

CUS_API cus_status cus_kernel_attribute(cus_kernel *k, CUfunction_attribute attr, cus_device dev,
                                        int *value)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(k && value);
    LIBRARY_NEEDS(cuKernelGetAttribute, "12.0");
    int v = 0;
    CUresult r = cus_drv_.cuKernelGetAttribute_(&v, attr, k->handle, dev.handle);
    if (r)
        return CUS_FAIL((cus_status)r, "cuKernelGetAttribute", "attribute %d of %s on device %d",
                        (int)attr, k->key.name, (int)dev.handle);
    *value = v;
    return CUS_SUCCESS;
}

CUS_API cus_status cus_kernel_set_attribute(cus_kernel *k, CUfunction_attribute attr, int value,
                                            cus_device dev)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(k);
    LIBRARY_NEEDS(cuKernelSetAttribute, "12.0");
    CUresult r = cus_drv_.cuKernelSetAttribute_(attr, value, k->handle, dev.handle);
    if (r)
        return CUS_FAIL((cus_status)r, "cuKernelSetAttribute",
                        "attribute %d of %s on device %d to %d", (int)attr, k->key.name,
                        (int)dev.handle, value);
    return CUS_SUCCESS;
}

CUS_API cus_status cus_kernel_function(cus_kernel *k, cus_context *ctx, CUfunction *out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(k && ctx && out);
    CUS_CHECK_POISON(ctx);
    LIBRARY_NEEDS(cuKernelGetFunction, "12.0");
    CUfunction f = NULL;
    /* The function of the *current* context: ctx is made current for it. */
    CUS_IN_CONTEXT(ctx, "cuKernelGetFunction", cus_drv_.cuKernelGetFunction_(&f, k->handle));
    *out = f;
    return CUS_SUCCESS;
}

/* --- enumeration ---------------------------------------------------------------- */

CUS_API cus_status cus_library_kernel_count(cus_library *lib, unsigned int *count)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(lib && count);
    LIBRARY_NEEDS(cuLibraryGetKernelCount, "12.4");
    unsigned int n = 0;
    CUresult r = cus_drv_.cuLibraryGetKernelCount_(&n, lib->handle);
    if (r)
        return CUS_FAIL((cus_status)r, "cuLibraryGetKernelCount", "counting kernels");
    *count = n;
    return CUS_SUCCESS;
}

/* Fills lib->names once, under the lock. */
static cus_status names_fill_locked(cus_library *lib)
{
    unsigned int n = 0;
    CUresult r = cus_drv_.cuLibraryGetKernelCount_(&n, lib->handle);
    if (r)
        return CUS_FAIL((cus_status)r, "cuLibraryGetKernelCount", "counting kernels");
    cus_autofree CUkernel *ks = cus_calloc_(n ? n : 1, sizeof *ks);
    cus_autofree const char **names = cus_calloc_(n ? n : 1, sizeof *names);
    if (!ks || !names)
        return CUS_FAIL(CUS_ERROR_OUT_OF_HOST_MEMORY, NULL, "listing %u kernels", n);
    r = n ? cus_drv_.cuLibraryEnumerateKernels_(ks, n, lib->handle) : CUDA_SUCCESS;
    if (r)
        return CUS_FAIL((cus_status)r, "cuLibraryEnumerateKernels", "listing %u kernels", n);
    for (unsigned int i = 0; i < n; i++) {
        r = cus_drv_.cuKernelGetName_(&names[i], ks[i]); /* the driver's, lives with the library */
        if (r)
            return CUS_FAIL((cus_status)r, "cuKernelGetName", "the name of kernel %u", i);
    }
    lib->names = cus_steal(&names);
    lib->nnames = n;
    return CUS_SUCCESS;
}

CUS_API cus_status cus_library_kernel_names(cus_library *lib, const char **names,
                                            unsigned int capacity, unsigned int *count)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(lib && count && (names || capacity == 0));
    if (!cus_drv_.cuLibraryGetKernelCount_ || !cus_drv_.cuLibraryEnumerateKernels_ ||
        !cus_drv_.cuKernelGetName_)
        return CUS_FAIL(CUS_ERROR_NOT_SUPPORTED, NULL,
                        "enumerating kernels needs cuLibraryEnumerateKernels and "
                        "cuKernelGetName (drivers from 12.4)");
    CUS_LOCK_SCOPE(&lib->lock);
    if (!lib->names)
        CUS_TRY(names_fill_locked(lib));
    for (unsigned int i = 0; i < capacity && i < lib->nnames; i++)
        names[i] = lib->names[i];
    *count = lib->nnames;
    return CUS_SUCCESS;
}

/* --- variables ---------------------------------------------------------------- */

CUS_API cus_status cus_library_get_global(cus_library *lib, cus_context *ctx, const char *name,
                                          CUdeviceptr *ptr, size_t *bytes)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(lib && ctx && name);
    CUS_CHECK_POISON(ctx);
    LIBRARY_NEEDS(cuLibraryGetGlobal, "12.0");
    CUdeviceptr p = 0;
    size_t n = 0;
    CUS_SWITCH(sw, ctx);
    CUS_TRY(sw_status);
    CUresult r = cus_drv_.cuLibraryGetGlobal_(&p, &n, lib->handle, name);
    if (r == CUDA_ERROR_NOT_FOUND)
        return CUS_FAIL((cus_status)r, "cuLibraryGetGlobal",
                        "no __device__ or __constant__ variable named \"%s\" in the library", name);
    CUS_TRY(cus_switch_check_(&sw, r, "cuLibraryGetGlobal"));
    if (ptr)
        *ptr = p;
    if (bytes)
        *bytes = n;
    return CUS_SUCCESS;
}

CUS_API cus_status cus_library_get_managed(cus_library *lib, const char *name, CUdeviceptr *ptr,
                                           size_t *bytes)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(lib && name);
    LIBRARY_NEEDS(cuLibraryGetManaged, "12.0");
    CUdeviceptr p = 0;
    size_t n = 0;
    CUresult r = cus_drv_.cuLibraryGetManaged_(&p, &n, lib->handle, name);
    if (r == CUDA_ERROR_NOT_FOUND)
        return CUS_FAIL((cus_status)r, "cuLibraryGetManaged",
                        "no __managed__ variable named \"%s\" in the library", name);
    if (r)
        return CUS_FAIL((cus_status)r, "cuLibraryGetManaged", "variable %s", name);
    if (ptr)
        *ptr = p;
    if (bytes)
        *bytes = n;
    return CUS_SUCCESS;
}

CUS_API cus_status cus_library_get_unified_function(cus_library *lib, const char *symbol,
                                                    void **fptr)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(lib && symbol && fptr);
    LIBRARY_NEEDS(cuLibraryGetUnifiedFunction, "12.0");
    void *f = NULL;
    CUresult r = cus_drv_.cuLibraryGetUnifiedFunction_(&f, lib->handle, symbol);
    if (r == CUDA_ERROR_NOT_FOUND || r == CUDA_ERROR_INVALID_VALUE)
        return CUS_FAIL((cus_status)r, "cuLibraryGetUnifiedFunction",
                        "no unified function named \"%s\" in the library", symbol);
    if (r)
        return CUS_FAIL((cus_status)r, "cuLibraryGetUnifiedFunction", "symbol %s", symbol);
    *fptr = f;
    return CUS_SUCCESS;
}

CUS_DEFINE_CAPTURE_KEEP(library, cus_library)
