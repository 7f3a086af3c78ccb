/* Functions: made on a module's request and cached in it (the function cache,
 * cus_module_get_function), references (which count on their module), the
 * parameter layout, attributes and occupancy. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* --- the function cache, and cus_module_get_function -------------------------- */

/* FNV-1a, 64 bits: a dozen lines of our own, as the build has no hash table
 * library to take one from, and names are short. */
static uint64_t name_hash(const char *name)
{
    uint64_t h = 0xcbf29ce484222325u;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        h = (h ^ *p) * 0x100000001b3u;
    return h;
}

/* The function called name in t, or NULL. Safe without the module's lock
 * (internal.h, cus_function_table_): the acquire load of a slot sees the
 * function fully built, and a probe ends at an empty slot. A lookup that
 * races an insert may miss; the caller then looks again under the lock. */
static cus_function *table_find(const cus_function_table_ *t, const char *name, uint64_t hash)
{
    for (size_t i = (size_t)hash & t->mask;; i = (i + 1) & t->mask) {
        cus_function *f = atomic_load_explicit(&t->slots[i], memory_order_acquire);
        if (!f)
            return NULL;
        if (f->name_hash == hash && strcmp(f->name, name) == 0)
            return f;
    }
}

static void table_put(cus_function_table_ *t, cus_function *f)
{
    size_t i = (size_t)f->name_hash & t->mask;
    while (atomic_load_explicit(&t->slots[i], memory_order_relaxed))
        i = (i + 1) & t->mask;
    atomic_store_explicit(&t->slots[i], f, memory_order_release);
}

/* Makes room for one more function, under the lock: a table twice the size
 * replaces a half-full one (the old one is kept, see cus_function_table_).
 * false when out of host memory, the cache unchanged. */
static bool cache_reserve_locked(cus_module *m)
{
    cus_function_table_ *t = atomic_load_explicit(&m->functions, memory_order_relaxed);
    size_t slots = t ? t->mask + 1 : 0;
    if ((m->nfunctions + 1) * 2 <= slots)
        return true;
    size_t want = slots ? slots * 2 : 8;
    cus_function_table_ *grown = cus_calloc_(1, sizeof *grown + want * sizeof grown->slots[0]);
    if (!grown)
        return false;
    grown->older = t;
    grown->mask = want - 1;
    for (size_t i = 0; i < slots; i++) {
        cus_function *f = atomic_load_explicit(&t->slots[i], memory_order_relaxed);
        if (f)
            table_put(grown, f);
    }
    /* release: a lookup that loads the new table sees its slots filled */
    atomic_store_explicit(&m->functions, grown, memory_order_release);
    return true;
}

static CUresult func_param_info(void *h, size_t i, size_t *offset, size_t *size)
{
    return cus_drv_.cuFuncGetParamInfo_((CUfunction)h, i, offset, size);
}

/* Reads the layout with cuFuncGetParamInfo: as many parameters as the
 * module's image declares for the kernel (param_counts.c), or, where the
 * image could not be read, until the driver answers CUDA_ERROR_INVALID_VALUE
 * past the last. The driver needs no current context for it. */
static cus_status read_layout(cus_function *f)
{
    if (!cus_drv_.cuFuncGetParamInfo_)
        return CUS_SUCCESS; /* unknown: launches go unchecked */
    bool oom;
    CUresult r = cus_param_layout_read_(cus_param_counts_find_(f->module->param_counts, f->name),
                                        func_param_info, f->handle, &f->nparams,
                                        &f->param_offsets, &f->param_sizes, &oom);
    if (oom)
        return cus_fail_(CUS_ERROR_OUT_OF_HOST_MEMORY, "cus_module_get_function", NULL,
                         "the parameter layout of %s", f->name);
    if (r)
        return cus_context_driver_fail_(f->ctx, r, "cus_module_get_function",
                                        "cuFuncGetParamInfo");
    f->layout_known = true;
    return CUS_SUCCESS;
}

static void function_free(cus_function *f)
{
    free(f->name);
    free(f->param_offsets);
    free(f->param_sizes);
    free(f);
}

static void function_free_cleanup(cus_function **f)
{
    if (*f)
        function_free(*f);
}

CUS_API cus_status cus_module_get_function(cus_module *mod, const char *name, cus_function **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(mod && name && out);
    CUS_CHECK_POISON(mod->ctx);
    uint64_t hash = name_hash(name);
    /* A name looked up before: no lock (table_find says why). The caller's
     * reference keeps the module, so taking one more needs no lock either. */
    cus_function_table_ *t = atomic_load_explicit(&mod->functions, memory_order_acquire);
    cus_function *f = t ? table_find(t, name, hash) : NULL;
    if (f) {
        *out = cus_function_ref(f);
        return CUS_SUCCESS;
    }
    CUS_LOCK_SCOPE(&mod->lock);
    t = atomic_load_explicit(&mod->functions, memory_order_relaxed);
    f = t ? table_find(t, name, hash) : NULL;
    if (f) {
        *out = cus_function_ref(f);
        return CUS_SUCCESS;
    }
    /* Made under the lock: two threads asking for one name get one object. */
    __attribute__((cleanup(function_free_cleanup))) cus_function *nf = cus_calloc_(1, sizeof *nf);
    if (nf)
        nf->name = cus_strdup_(name);
    if (!nf || !nf->name)
        return CUS_FAIL(CUS_ERROR_OUT_OF_HOST_MEMORY, NULL, "allocating function %s", name);
    nf->module = mod;
    nf->name_hash = hash;
    nf->ctx_handle = mod->ctx->handle;
    nf->ctx = mod->ctx;
    CUresult r = cus_drv_.cuModuleGetFunction_(&nf->handle, mod->handle, name);
    if (r == CUDA_ERROR_NOT_FOUND)
        return CUS_FAIL((cus_status)r, "cuModuleGetFunction",
                        "no kernel named \"%s\" in the module", name);
    if (r)
        return cus_context_driver_fail_(mod->ctx, r, __func__, "cuModuleGetFunction");
    CUS_TRY(read_layout(nf));
    if (!cache_reserve_locked(mod))
        return CUS_FAIL(CUS_ERROR_OUT_OF_HOST_MEMORY, NULL, "caching function %s", name);
    /* Published last (release): a lookup without the lock that finds it
     * sees every field above. */
    table_put(atomic_load_explicit(&mod->functions, memory_order_relaxed), nf);
    mod->nfunctions++;
    *out = cus_function_ref(cus_steal(&nf));
    return CUS_SUCCESS;
}

void cus_module_functions_free_(cus_module *m)
{
    cus_function_table_ *t = atomic_load_explicit(&m->functions, memory_order_relaxed);
    /* The newest table holds every function; the older ones a subset. */
    for (size_t i = 0; t && i <= t->mask; i++) {
        cus_function *f = atomic_load_explicit(&t->slots[i], memory_order_relaxed);
        if (f)
            function_free(f);
    }
    while (t) {
        cus_function_table_ *older = t->older;
        free(t);
        t = older;
    }
}


CUS_API cus_function *cus_function_ref(cus_function *fn)
{
    if (fn)
        cus_module_ref(fn->module);
    return fn;
}

CUS_API cus_function *cus_function_unref(cus_function *fn)
{
    if (fn)
        cus_module_unref(fn->module);
    return NULL;
}

CUS_API CUfunction cus_function_handle(const cus_function *fn)
{
    return fn ? fn->handle : NULL;
}

CUS_API const char *cus_function_name(const cus_function *fn)
{
    return fn ? fn->name : "";
}

CUS_API cus_module *cus_function_module(const cus_function *fn)
{
    return fn ? fn->module : NULL;
}

CUS_API bool cus_function_layout_known(const cus_function *fn)
{
    return fn && fn->layout_known;
}

CUS_API unsigned int cus_function_param_count(const cus_function *fn)
{
    return fn ? fn->nparams : 0;
}

CUS_API cus_status cus_function_param_info(const cus_function *fn, unsigned int i, size_t *offset,
                                           size_t *size)
{
    CUS_CHECK_ARG(fn);
    if (!fn->layout_known)
        return CUS_FAIL(CUS_ERROR_NOT_SUPPORTED, NULL,
                        "the layout of %s is unknown: the driver has no cuFuncGetParamInfo "
                        "(needs 12.4)", fn->name);
    if (i >= fn->nparams)
        return CUS_FAIL(CUS_ERROR_OUT_OF_RANGE, NULL, "%s has %u parameters, asked for #%u",
                        fn->name, fn->nparams, i);
    if (offset)
        *offset = fn->param_offsets[i];
    if (size)
        *size = fn->param_sizes[i];
    return CUS_SUCCESS;
}

/* The attribute and cache calls below need no current context: the driver
 * knows the function's (the context-rule table, test/rules/expected.txt, says
 * so for each). Only the poison check stands between them and the driver. */
#define FN_PROLOGUE(fn)                                                        \
    CUS_API_ENTER();                                                           \
    CUS_CHECK_ARG(fn);                                                         \
    CUS_CHECK_POISON((fn)->ctx)

#define FN_CALL(fn, name, call)                                                \
    do {                                                                       \
        CUresult r_ = (call);                                                  \
        if (r_)                                                                \
            return cus_context_driver_fail_((fn)->ctx, r_, __func__, (name)); \
    } while (0)

/* The occupancy calls do need it: with none current, or another context's,
 * the driver answers CUDA_ERROR_INVALID_CONTEXT (measured on an H200,
 * test/rules/expected.txt). So they switch, like the calls on other
 * objects. */
#define FN_CALL_IN(fn, name, call) CUS_IN_CONTEXT((fn)->ctx, (name), (call))

CUS_API cus_status cus_function_attribute(cus_function *fn, CUfunction_attribute attr, int *value)
{
    FN_PROLOGUE(fn);
    CUS_CHECK_ARG(value);
    int v = 0;
    FN_CALL(fn, "cuFuncGetAttribute", cus_drv_.cuFuncGetAttribute_(&v, attr, fn->handle));
    *value = v;
    return CUS_SUCCESS;
}

CUS_API cus_status cus_function_set_attribute(cus_function *fn, CUfunction_attribute attr,
                                              int value)
{
    FN_PROLOGUE(fn);
    FN_CALL(fn, "cuFuncSetAttribute", cus_drv_.cuFuncSetAttribute_(fn->handle, attr, value));
    return CUS_SUCCESS;
}

CUS_API cus_status cus_function_set_max_dynamic_shared(cus_function *fn, size_t bytes)
{
    FN_PROLOGUE(fn);
    if (bytes > 0x7fffffff)
        return CUS_FAIL(CUS_ERROR_OUT_OF_RANGE, NULL, "%zu bytes of dynamic shared memory", bytes);
    FN_CALL(fn, "cuFuncSetAttribute",
            cus_drv_.cuFuncSetAttribute_(fn->handle, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                         (int)bytes));
    return CUS_SUCCESS;
}

CUS_API cus_status cus_function_set_cache_config(cus_function *fn, CUfunc_cache config)
{
    FN_PROLOGUE(fn);
    FN_CALL(fn, "cuFuncSetCacheConfig", cus_drv_.cuFuncSetCacheConfig_(fn->handle, config));
    return CUS_SUCCESS;
}

CUS_API cus_status cus_function_set_shared_mem_config(cus_function *fn, CUsharedconfig config)
{
    FN_PROLOGUE(fn);
    if (!cus_drv_.cuFuncSetSharedMemConfig_)
        return CUS_FAIL(CUS_ERROR_NOT_SUPPORTED, "cuFuncSetSharedMemConfig",
                        "the driver no longer has cuFuncSetSharedMemConfig");
    FN_CALL(fn, "cuFuncSetSharedMemConfig", cus_drv_.cuFuncSetSharedMemConfig_(fn->handle, config));
    return CUS_SUCCESS;
}

CUS_API cus_status cus_function_max_potential_block(cus_function *fn, size_t dynamic_shared,
                                                    int block_limit, int *min_grid, int *block)
{
    FN_PROLOGUE(fn);
    CUS_CHECK_ARG(block && block_limit >= 0);
    int g = 0, b = 0;
    FN_CALL_IN(fn, "cuOccupancyMaxPotentialBlockSize",
            cus_drv_.cuOccupancyMaxPotentialBlockSize_(&g, &b, fn->handle, NULL, dynamic_shared,
                                                       block_limit));
    if (min_grid)
        *min_grid = g;
    *block = b;
    return CUS_SUCCESS;
}

CUS_API cus_status cus_function_max_active_blocks(cus_function *fn, int block,
                                                  size_t dynamic_shared, int *blocks)
{
    FN_PROLOGUE(fn);
    CUS_CHECK_ARG(blocks && block > 0);
    int n = 0;
    FN_CALL_IN(fn, "cuOccupancyMaxActiveBlocksPerMultiprocessor",
            cus_drv_.cuOccupancyMaxActiveBlocksPerMultiprocessor_(&n, fn->handle, block,
                                                                  dynamic_shared));
    *blocks = n;
    return CUS_SUCCESS;
}
