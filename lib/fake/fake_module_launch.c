/* Lookups (cuModuleGetFunction, cuModuleGetGlobal), function attributes,
 * occupancy, launches (cuLaunchKernel*), their execution, the launch record
 * and the host implementations of kernels: the second half of the module
 * area (fake_module.c has the records, loading and unloading). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/status.h"
#include "fake_event.h"
#include "fake_module_records.h"

/* --- state ---------------------------------------------------------------------------- */

#define LAUNCH_RING 256
static cus_fake_launch launch_ring[LAUNCH_RING]; /* bytes past arg_bytes are zero */
static unsigned long launch_count;

#define MAX_KERNELS 64
static struct {
    char *name; /* NULL: a free slot */
    cus_fake_kernel_fn fn;
    void *user;
} kernels[MAX_KERNELS];
/* Runs of kernels without one, the last one's name, and the config's
 * strict_kernels. */
static unsigned long untwinned_runs;
static char untwinned_last[128];
static bool strict_kernels;

fake_kernel_resolver_fn fake_module_kernel_resolver;

/* --- lookups ------------------------------------------------------------------------------------ */

CUresult CUDAAPI fake_cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
    FAKE_ENTER(cuModuleGetFunction);
    struct CUmod_st *m = NULL;
    CUresult r = fake_module_module_arg_locked(hmod, true, &m);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (!hfunc || !name)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    struct CUfunc_st *f = fake_module_function_named(m, name);
    if (!f)
        return fake_leave(CUDA_ERROR_NOT_FOUND);
    /* a kernel of a relocatable cubin that the driver cannot link */
    if (f->fi->lookup != CUDA_SUCCESS)
        return fake_leave(f->fi->lookup);
    *hfunc = f;
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuModuleGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod,
                                        const char *name)
{
    FAKE_ENTER(cuModuleGetGlobal);
    struct CUmod_st *m = NULL;
    CUresult r = fake_module_module_arg_locked(hmod, true, &m);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (!name)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    for (size_t i = 0; i < m->nglobals; i++) {
        if (strcmp(m->img->globals[i].name, name) == 0) {
            if (dptr)
                *dptr = (CUdeviceptr)(uintptr_t)fake_memory_global_base(m->globals[i]);
            if (bytes)
                *bytes = m->img->globals[i].size;
            return fake_leave(CUDA_SUCCESS);
        }
    }
    return fake_leave(CUDA_ERROR_NOT_FOUND);
}

#ifdef FAKE_HAVE_12040_ENTRIES
CUresult CUDAAPI fake_cuModuleGetFunctionCount(unsigned int *count, CUmodule hmod)
{
    FAKE_ENTER(cuModuleGetFunctionCount);
    struct CUmod_st *m = NULL;
    CUresult r = fake_module_module_arg_locked(hmod, true, &m);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (!count)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    *count = m->nfunctions > UINT32_MAX ? UINT32_MAX : (unsigned int)m->nfunctions;
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuModuleEnumerateFunctions(CUfunction *functions, unsigned int numFunctions,
                                                 CUmodule mod)
{
    FAKE_ENTER(cuModuleEnumerateFunctions);
    struct CUmod_st *m = NULL;
    CUresult r = fake_module_module_arg_locked(mod, true, &m);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (!functions)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    for (size_t i = 0; i < m->nfunctions && i < numFunctions; i++)
        functions[i] = &m->functions[i];
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t *paramOffset,
                                         size_t *paramSize)
{
    FAKE_ENTER(cuFuncGetParamInfo);
    struct CUfunc_st *f = NULL; /* NULL: CUDA_ERROR_INVALID_VALUE, as the H200 answers */
    CUresult r = fake_module_function_arg_locked(func, CUDA_ERROR_INVALID_VALUE, &f);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (!paramOffset || paramIndex >= f->fi->nparams) /* past the last: as the driver */
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    *paramOffset = f->fi->params[paramIndex].offset;
    if (paramSize)
        *paramSize = f->fi->params[paramIndex].size;
    return fake_leave(CUDA_SUCCESS);
}
#endif

#ifdef FAKE_HAVE_12030_ENTRIES
CUresult CUDAAPI fake_cuFuncGetName(const char **name, CUfunction hfunc)
{
    FAKE_ENTER(cuFuncGetName);
    if (!name)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    struct CUfunc_st *f = NULL;
    CUresult r = fake_module_function_arg_locked(hfunc, CUDA_ERROR_INVALID_VALUE, &f);
    if (r == CUDA_SUCCESS)
        *name = f->name;
    return fake_leave(r);
}
#endif

/* --- attributes ---------------------------------------------------------------------------------- */

CUresult CUDAAPI fake_cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc)
{
    FAKE_ENTER(cuFuncGetAttribute);
    struct CUfunc_st *f = NULL;
    CUresult r = fake_module_function_arg_locked(hfunc, CUDA_ERROR_INVALID_HANDLE, &f);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (!pi)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    int v = 0;
    switch ((int)attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
        v = fake_module_max_threads_of(f);
        break;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
        v = fake_module_static_shared_of(f);
        break;
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES:
        v = f->mod->const_bytes > INT32_MAX ? INT32_MAX : (int)f->mod->const_bytes;
        break;
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:
        v = 0;
        break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS:
        v = f->mod->num_regs;
        break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION:
        v = f->mod->ptx_version;
        break;
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION:
        v = f->mod->binary_version;
        break;
    case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA:
        v = 0;
        break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
        v = f->max_dynamic_shared;
        break;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
        v = f->carveout;
        break;
    case CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET:
        v = 0;
        break;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
        v = f->required_cluster[(int)attrib - CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH];
        break;
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
        v = f->non_portable_cluster;
        break;
    case 15: /* CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE */
        v = f->cluster_policy;
        break;
    default:
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    }
    *pi = v;
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value)
{
    FAKE_ENTER(cuFuncSetAttribute);
    struct CUfunc_st *f = NULL;
    CUresult r = fake_module_function_arg_locked(hfunc, CUDA_ERROR_INVALID_HANDLE, &f);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    switch ((int)attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
        if (value < 0 || value > fake_module_optin_dynamic_shared(f))
            return fake_leave(CUDA_ERROR_INVALID_VALUE);
        f->max_dynamic_shared = value;
        break;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
        if (value < CU_SHAREDMEM_CARVEOUT_DEFAULT || value > CU_SHAREDMEM_CARVEOUT_MAX_SHARED)
            return fake_leave(CUDA_ERROR_INVALID_VALUE);
        f->carveout = value;
        break;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
        if (value < 0 || value > 16)
            return fake_leave(CUDA_ERROR_INVALID_VALUE);
        f->required_cluster[(int)attrib - CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH] = value;
        break;
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
        if (value != 0 && value != 1)
            return fake_leave(CUDA_ERROR_INVALID_VALUE);
        f->non_portable_cluster = value;
        break;
    case 15: /* CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE */
        if (value < 0 || value > 2)
            return fake_leave(CUDA_ERROR_INVALID_VALUE);
        f->cluster_policy = value;
        break;
    default: /* read-only, or unknown */
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    }
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config)
{
    FAKE_ENTER(cuFuncSetCacheConfig);
    struct CUfunc_st *f = NULL;
    CUresult r = fake_module_function_arg_locked(hfunc, CUDA_ERROR_INVALID_HANDLE, &f);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if ((int)config < CU_FUNC_CACHE_PREFER_NONE || (int)config > CU_FUNC_CACHE_PREFER_EQUAL)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    f->cache_config = config;
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuFuncSetSharedMemConfig(CUfunction hfunc, CUsharedconfig config)
{
    FAKE_ENTER(cuFuncSetSharedMemConfig);
    struct CUfunc_st *f = NULL;
    CUresult r = fake_module_function_arg_locked(hfunc, CUDA_ERROR_INVALID_HANDLE, &f);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if ((int)config < CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE ||
        (int)config > CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    f->shared_config = config; /* kept; a Hopper ignores it */
    return fake_leave(CUDA_SUCCESS);
}

/* --- occupancy -------------------------------------------------------------------------------------- */

/* Unlike the attribute calls, the occupancy calls need a current context,
 * whichever it is: with none the H200 answers CUDA_ERROR_INVALID_CONTEXT
 * (test/rules/expected.txt). */
static CUresult occupancy_context_locked(void)
{
    struct CUctx_st *c = NULL;
    return fake_current_context_locked(&c);
}

CUresult CUDAAPI fake_cuOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, CUfunction func,
                                                                  int blockSize,
                                                                  size_t dynamicSMemSize)
{
    FAKE_ENTER(cuOccupancyMaxActiveBlocksPerMultiprocessor);
    struct CUfunc_st *f = NULL;
    CUresult r = occupancy_context_locked();
    if (r == CUDA_SUCCESS)
        r = fake_module_function_arg_locked(func, CUDA_ERROR_INVALID_HANDLE, &f);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (!numBlocks || blockSize <= 0)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    occupancy_in o = fake_module_occupancy_of(f);
    *numBlocks = fake_module_blocks_per_sm(&o, blockSize, dynamicSMemSize);
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuOccupancyMaxPotentialBlockSize(int *minGridSize, int *blockSize,
                                                       CUfunction func,
                                                       CUoccupancyB2DSize blockSizeToDynamicSMemSize,
                                                       size_t dynamicSMemSize, int blockSizeLimit)
{
    FAKE_ENTER(cuOccupancyMaxPotentialBlockSize);
    struct CUfunc_st *f = NULL;
    CUresult r = occupancy_context_locked();
    if (r == CUDA_SUCCESS)
        r = fake_module_function_arg_locked(func, CUDA_ERROR_INVALID_HANDLE, &f);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (!minGridSize || !blockSize || blockSizeLimit < 0)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    occupancy_in o = fake_module_occupancy_of(f);
    /* The rest without the lock: the callback is the caller's code. */
    (void)fake_leave(CUDA_SUCCESS);

    int limit = o.max_threads;
    if (blockSizeLimit > 0 && blockSizeLimit < limit)
        limit = blockSizeLimit;
    int best = 0, best_blocks = 0;
    long long best_threads = 0;
    /* From the largest block down in warp steps, as the occupancy calculator
     * does; the first with the most resident threads wins. */
    for (int aligned = (limit + o.warp - 1) / o.warp * o.warp; aligned > 0; aligned -= o.warp) {
        int b = aligned < limit ? aligned : limit;
        size_t dyn = blockSizeToDynamicSMemSize ? blockSizeToDynamicSMemSize(b) : dynamicSMemSize;
        int n = fake_module_blocks_per_sm(&o, b, dyn);
        long long threads = (long long)n * b;
        if (threads > best_threads) {
            best_threads = threads;
            best = b;
            best_blocks = n;
        }
        if (threads >= o.threads_per_sm)
            break;
    }
    *blockSize = best;
    *minGridSize = best_blocks * o.sm_count;
    return CUDA_SUCCESS;
}

/* --- launches ------------------------------------------------------------------------------------ */

typedef struct launch_cfg {
    unsigned int grid[3], block[3], cluster[3];
    unsigned int shared;
    CUstream stream;
    bool cooperative, extended;
    cus_fake_launch_attributes attrs; /* cuLaunchKernelEx's, for the record */
    fake_launch_hints hints;          /* the attributes with no effect and no record */
    struct CUevent_st *event;         /* the programmatic event, checked; NULL: none */
} launch_cfg;

void fake_module_launch_free(fake_launch_exec *exec)
{
    free(exec);
}

/* The record of a launch, but for the argument bytes past arg_bytes. */
static void fill_record(cus_fake_launch *rec, const fake_launch_exec *x)
{
    rec->function = x->fn->name;
    rec->handle = x->fn;
    rec->context = x->context;
    rec->stream = x->stream;
    memcpy(rec->grid, x->grid, sizeof rec->grid);
    memcpy(rec->block, x->block, sizeof rec->block);
    memcpy(rec->cluster, x->cluster, sizeof rec->cluster);
    rec->shared_bytes = x->shared_bytes;
    rec->cooperative = x->cooperative;
    rec->extended = x->extended;
    rec->captured = x->captured;
    rec->graph_exec = x->graph_exec;
    rec->attributes = x->attrs;
    rec->nargs = x->nargs;
    rec->arg_bytes = x->arg_bytes;
    memcpy(rec->args, x->args, x->arg_bytes);
}

/* Copies the arguments by the layout: kernelParams[i] (its size), or the
 * `extra` buffer whole. */
static CUresult copy_arguments_locked(const struct CUfunc_st *f, void **kernelParams, void **extra,
                                      fake_launch_exec *x)
{
    const fake_image_function *fi = f->fi;
    if (kernelParams && extra)
        return CUDA_ERROR_INVALID_VALUE; /* documented: only one of them */
    if (extra) {
        const void *buf = NULL;
        const size_t *bufsize = NULL;
        for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
            if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
                buf = extra[i + 1];
            else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
                bufsize = extra[i + 1];
            else
                return CUDA_ERROR_INVALID_VALUE;
        }
        if (fi->param_bytes) {
            if (!buf || !bufsize || *bufsize < fi->param_bytes)
                return CUDA_ERROR_INVALID_VALUE;
            memcpy(x->args, buf, fi->param_bytes);
        }
        return CUDA_SUCCESS;
    }
    if (fi->nparams && !kernelParams)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < fi->nparams; i++) {
        if (!kernelParams[i]) {
            fake_misuse_locked("kernelParams[%zu] of a launch of '%s' is NULL", i, f->name);
            return CUDA_ERROR_INVALID_VALUE;
        }
        memcpy(x->args + fi->params[i].offset, kernelParams[i], fi->params[i].size);
    }
    return CUDA_SUCCESS;
}

/* The configuration against the device and the function. */
static CUresult check_config_locked(const struct CUfunc_st *f, const launch_cfg *cfg)
{
    const int *a = fake_module_device_attrs(f->mod->ctx);
    const unsigned int *g = cfg->grid, *b = cfg->block;
    for (int i = 0; i < 3; i++)
        if (g[i] == 0 || b[i] == 0)
            return CUDA_ERROR_INVALID_VALUE;
    if (b[0] > (unsigned)a[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X] ||
        b[1] > (unsigned)a[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y] ||
        b[2] > (unsigned)a[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z])
        return CUDA_ERROR_INVALID_VALUE;
    unsigned long long threads = (unsigned long long)b[0] * b[1] * b[2];
    if (threads > (unsigned long long)fake_module_max_threads_of(f))
        return CUDA_ERROR_INVALID_VALUE;
    const unsigned *req = f->fi->reqntid;
    if (req[0] && (b[0] != req[0] || b[1] != (req[1] ? req[1] : 1) || b[2] != (req[2] ? req[2] : 1)))
        return CUDA_ERROR_INVALID_VALUE;
    if (g[0] > (unsigned)a[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X] ||
        g[1] > (unsigned)a[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y] ||
        g[2] > (unsigned)a[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z])
        return CUDA_ERROR_INVALID_VALUE;
    if (cfg->shared > (unsigned)f->max_dynamic_shared)
        return CUDA_ERROR_INVALID_VALUE;
    /* Registers, allocated per warp in 256-register units: a block that
     * needs more than the device has per block is "too many resources
     * requested for launch" (the runtime's cudaErrorLaunchOutOfResources
     * says so: too many threads for the kernel's register count). */
    if (a[CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK] > 0) {
        int warp = a[CU_DEVICE_ATTRIBUTE_WARP_SIZE] > 0 ? a[CU_DEVICE_ATTRIBUTE_WARP_SIZE] : 32;
        unsigned long long warps = (threads + (unsigned)warp - 1) / (unsigned)warp;
        unsigned long long per_warp = ((unsigned long long)f->mod->num_regs * (unsigned)warp + 255) / 256 * 256;
        if (warps * per_warp > (unsigned long long)a[CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK])
            return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
    }
    /* The attributes whose rules are the device's. The driver documents
     * num_bytes as limited by CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE
     * and the map's ids by CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT; that it
     * answers CUDA_ERROR_INVALID_VALUE beyond them is our assumption. */
    const cus_fake_launch_attributes *at = &cfg->attrs;
    if (at->has_access_policy &&
        at->access_policy.num_bytes > (size_t)(unsigned)a[CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE])
        return CUDA_ERROR_INVALID_VALUE;
    if (at->has_mem_sync_domain_map &&
        (at->mem_sync_domain_map.default_ >= a[CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT] ||
         at->mem_sync_domain_map.remote >= a[CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT]))
        return CUDA_ERROR_INVALID_VALUE;

    /* Clusters: the launch's, or the function's required one. */
    const unsigned *c = cfg->cluster;
    unsigned req_c[3] = {(unsigned)f->required_cluster[0], (unsigned)f->required_cluster[1],
                         (unsigned)f->required_cluster[2]};
    bool launch_cluster = c[0] || c[1] || c[2];
    bool required = req_c[0] || req_c[1] || req_c[2];
    if (launch_cluster || required) {
        if (!a[CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH])
            return CUDA_ERROR_NOT_SUPPORTED;
        const unsigned *use = launch_cluster ? c : req_c;
        if (launch_cluster && required &&
            (c[0] != req_c[0] || c[1] != req_c[1] || c[2] != req_c[2]))
            return CUDA_ERROR_INVALID_CLUSTER_SIZE;
        unsigned long long size = 1;
        for (int i = 0; i < 3; i++) {
            if (use[i] == 0 || g[i] % use[i] != 0)
                return CUDA_ERROR_INVALID_CLUSTER_SIZE;
            size *= use[i];
        }
        if (size > (f->non_portable_cluster ? 16u : 8u))
            return CUDA_ERROR_INVALID_CLUSTER_SIZE;
    }
    /* A preferred cluster: documented as needing a regular one, x and y
     * multiples of it that divide the grid, z equal; the code for a breach is
     * not documented: CUDA_ERROR_INVALID_CLUSTER_SIZE is our guess. */
    const unsigned *p = at->preferred_cluster;
    if (p[0] || p[1] || p[2]) {
        const unsigned *use = launch_cluster ? c : req_c;
        if (!launch_cluster && !required)
            return CUDA_ERROR_INVALID_CLUSTER_SIZE;
        for (int i = 0; i < 2; i++)
            if (p[i] == 0 || p[i] % use[i] != 0 || g[i] % p[i] != 0)
                return CUDA_ERROR_INVALID_CLUSTER_SIZE;
        if (p[2] != use[2])
            return CUDA_ERROR_INVALID_CLUSTER_SIZE;
    }

    if (cfg->cooperative) {
        if (!a[CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH])
            return CUDA_ERROR_NOT_SUPPORTED;
        occupancy_in o = fake_module_occupancy_of(f);
        unsigned long long fit =
            (unsigned long long)fake_module_blocks_per_sm(&o, (int)threads, cfg->shared) * (unsigned)o.sm_count;
        if ((unsigned long long)g[0] * g[1] * g[2] > fit)
            return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
    }
    return CUDA_SUCCESS;
}

/* A launch runs in its function's context, whatever is current (none, or
 * another context: the H200 launches either way, test/rules/expected.txt);
 * the legacy stream handles are that context's default stream. */
static CUresult launch_locked(CUfunction hfunc, const launch_cfg *cfg, void **kernelParams,
                              void **extra)
{
    struct CUfunc_st *f = NULL;
    CUresult r;
    /* A CUkernel cast to CUfunction runs in the stream's context, or the
     * current one (fake_library.c). */
    if (hfunc && fake_module_kernel_resolver && !fake_module_is_function(hfunc) &&
        fake_module_kernel_resolver(hfunc, cfg->stream, &r, &f)) {
        if (r != CUDA_SUCCESS)
            return r;
        hfunc = (CUfunction)f;
    }
    r = fake_module_function_arg_locked(hfunc, CUDA_ERROR_INVALID_HANDLE, &f);
    if (r != CUDA_SUCCESS)
        return r;
    struct CUctx_st *c = f->mod->ctx; /* live and healthy: the function's check */
    struct CUstream_st *s = NULL;
    r = fake_stream_arg_in_locked(cfg->stream, c, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if (s->ctx != c) /* as cuEventRecord: a stream of another context */
        return CUDA_ERROR_INVALID_HANDLE;
    if (cfg->event && cfg->event->ctx != c) /* as cuEventRecord, too */
        return CUDA_ERROR_INVALID_HANDLE;
    r = check_config_locked(f, cfg);
    if (r != CUDA_SUCCESS)
        return r;
    const fake_image_function *fi = f->fi;
    if (fi->param_bytes > CUS_FAKE_MAX_LAUNCH_ARG_BYTES)
        return CUDA_ERROR_INVALID_VALUE; /* the fake's limit (the driver's is 32764) */

    fake_launch_exec *x = calloc(1, sizeof *x + fi->param_bytes);
    if (!x)
        return CUDA_ERROR_OUT_OF_MEMORY;
    x->fn = f;
    x->context = c;
    x->stream = cfg->stream;
    memcpy(x->grid, cfg->grid, sizeof x->grid);
    memcpy(x->block, cfg->block, sizeof x->block);
    memcpy(x->cluster, cfg->cluster, sizeof x->cluster);
    x->shared_bytes = cfg->shared;
    x->cooperative = cfg->cooperative;
    x->extended = cfg->extended;
    x->attrs = cfg->attrs;
    x->hints = cfg->hints;
    x->nargs = fi->nparams;
    x->arg_bytes = fi->param_bytes;
    r = copy_arguments_locked(f, kernelParams, extra, x);
    if (r != CUDA_SUCCESS) {
        free(x);
        return r;
    }
    x->captured = s->capture != NULL; /* then it becomes a graph node (fake_graph.c) */
    fake_op op = {.kind = FAKE_OP_LAUNCH, .u.launch = {x}};
    r = fake_stream_enqueue_locked(s, &op, NULL, 0);
    if (r != CUDA_SUCCESS) {
        free(x);
        return r;
    }
    /* x now belongs to the queue (or the graph); the record goes into the ring. */
    fake_module_record_launch_locked(x);
    /* The programmatic event fires once every block has triggered: at the
     * latest when the kernel completes, which is when the fake records it.
     * (Out of host memory here leaves the launch queued and the event not
     * recorded: the fake's own limit.) */
    if (cfg->event)
        return fake_event_record_locked(cfg->event, s);
    return CUDA_SUCCESS;
}

void fake_module_record_launch_locked(const fake_launch_exec *x)
{
    cus_fake_launch *rec = &launch_ring[launch_count % LAUNCH_RING];
    size_t old_bytes = rec->arg_bytes;
    fill_record(rec, x);
    if (old_bytes > x->arg_bytes) /* keep the bytes past arg_bytes zero */
        memset(rec->args + x->arg_bytes, 0, old_bytes - x->arg_bytes);
    launch_count++;
}

fake_launch_exec *fake_module_launch_replay(const fake_launch_exec *x, CUgraphExec exec,
                                            CUstream stream)
{
    fake_launch_exec *r = malloc(sizeof *r + x->arg_bytes);
    if (!r)
        return NULL;
    memcpy(r, x, sizeof *r + x->arg_bytes);
    r->captured = false;
    r->graph_exec = exec;
    r->stream = stream;
    return r;
}

const char *fake_module_launch_lost_with_context(const fake_launch_exec *x)
{
    const struct CUmod_st *m = x->fn->mod;
    return m->h.state != FAKE_LIVE && m->ctx_destroyed ? x->fn->name : NULL;
}

CUcontext fake_module_launch_context(const fake_launch_exec *x)
{
    return x->fn->mod->ctx;
}

bool fake_module_launch_cooperative(const fake_launch_exec *x)
{
    return x->cooperative;
}

bool fake_module_launch_programmatic(const fake_launch_exec *x)
{
    return x->attrs.programmatic_serialization;
}

/* One launch attribute into cfg, checked as the driver checks it. A kernel
 * node (node) takes the attributes cuda.h calls valid for graph nodes; the
 * programmatic ones and the launch completion event are launches' only
 * (CUDA_ERROR_INVALID_VALUE: our assumption of the code), and a
 * device-updatable node is not emulated (CUDA_ERROR_NOT_SUPPORTED). */
static CUresult attribute_locked(launch_cfg *cfg, const CUlaunchAttribute *at, bool node)
{
    if (node) {
        switch ((int)at->id) {
        case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
        case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT:
        case 12: /* LAUNCH_COMPLETION_EVENT */
        case CU_LAUNCH_ATTRIBUTE_IGNORE:
            return CUDA_ERROR_INVALID_VALUE;
        case 13: /* DEVICE_UPDATABLE_KERNEL_NODE */
            return CUDA_ERROR_NOT_SUPPORTED;
        default:
            break;
        }
    }
    switch ((int)at->id) {
    case CU_LAUNCH_ATTRIBUTE_IGNORE:
        break;
    case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
        cfg->cooperative = at->value.cooperative != 0;
        break;
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
        cfg->cluster[0] = at->value.clusterDim.x;
        cfg->cluster[1] = at->value.clusterDim.y;
        cfg->cluster[2] = at->value.clusterDim.z;
        if (!cfg->cluster[0] || !cfg->cluster[1] || !cfg->cluster[2])
            return CUDA_ERROR_INVALID_CLUSTER_SIZE;
        break;
    case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
        cfg->attrs.programmatic_serialization = at->value.programmaticStreamSerializationAllowed != 0;
        break;
    case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT: {
        /* Documented: not an interprocess event, timing disabled, and
         * no CU_EVENT_RECORD_EXTERNAL; the codes are our assumption. */
        struct CUevent_st *e = NULL;
        CUresult r = fake_event_arg_locked(at->value.programmaticEvent.event, &e);
        if (r != CUDA_SUCCESS)
            return r;
        if (!(e->flags & CU_EVENT_DISABLE_TIMING) || (e->flags & CU_EVENT_INTERPROCESS) ||
            at->value.programmaticEvent.flags != 0)
            return CUDA_ERROR_INVALID_VALUE;
        cfg->event = e;
        cfg->attrs.programmatic_event = at->value.programmaticEvent.event;
        cfg->attrs.programmatic_event_flags = at->value.programmaticEvent.flags;
        cfg->attrs.programmatic_event_at_block_start =
            at->value.programmaticEvent.triggerAtBlockStart != 0;
        break;
    }
    case CU_LAUNCH_ATTRIBUTE_PRIORITY:
        /* Any value: the driver clamps stream priorities to the range,
         * and, we assume, a launch's too. */
        cfg->attrs.has_priority = true;
        cfg->attrs.priority = at->value.priority;
        break;
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
        if ((unsigned)at->value.clusterSchedulingPolicyPreference >
            CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING)
            return CUDA_ERROR_INVALID_VALUE;
        cfg->attrs.cluster_policy = (int)at->value.clusterSchedulingPolicyPreference;
        break;
    case 11: /* PREFERRED_CLUSTER_DIMENSION (12.8): checked with the grid */
        cfg->attrs.preferred_cluster[0] = at->value.clusterDim.x;
        cfg->attrs.preferred_cluster[1] = at->value.clusterDim.y;
        cfg->attrs.preferred_cluster[2] = at->value.clusterDim.z;
        break;
    case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW: {
        /* missProp "must be either NORMAL or STREAMING" (cuda.h); the
         * ratio a share; num_bytes against the device with the grid. */
        const CUaccessPolicyWindow *w = &at->value.accessPolicyWindow;
        if (!(w->hitRatio >= 0.0f && w->hitRatio <= 1.0f) ||
            (unsigned)w->hitProp > CU_ACCESS_PROPERTY_PERSISTING ||
            (unsigned)w->missProp > CU_ACCESS_PROPERTY_STREAMING)
            return CUDA_ERROR_INVALID_VALUE;
        cfg->attrs.has_access_policy = true;
        cfg->attrs.access_policy = *w;
        break;
    }
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
        if ((unsigned)at->value.memSyncDomain > CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE)
            return CUDA_ERROR_INVALID_VALUE;
        cfg->attrs.has_mem_sync_domain = true;
        cfg->attrs.mem_sync_domain = (int)at->value.memSyncDomain;
        break;
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
        cfg->attrs.has_mem_sync_domain_map = true;
        cfg->attrs.mem_sync_domain_map = at->value.memSyncDomainMap;
        break;
    case 14: /* PREFERRED_SHARED_MEMORY_CARVEOUT */
        cfg->hints.has_carveout = true; /* a hint: no effect on the fake */
        cfg->hints.carveout = at->value.sharedMemCarveout;
        break;
    case 16: /* NVLINK_UTIL_CENTRIC_SCHEDULING */
        cfg->hints.has_nvlink = true; /* a hint */
        cfg->hints.nvlink = at->value.nvlinkUtilCentricScheduling;
        break;
    case 12: /* LAUNCH_COMPLETION_EVENT */
        /* Events fired when a kernel's blocks have begun are not
         * emulated: refused rather than silently never recorded. */
        return CUDA_ERROR_NOT_SUPPORTED;
    default: /* stream-only, graph-only (13) or unknown */
        return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                     unsigned int gridDimZ, unsigned int blockDimX,
                                     unsigned int blockDimY, unsigned int blockDimZ,
                                     unsigned int sharedMemBytes, CUstream hStream,
                                     void **kernelParams, void **extra)
{
    FAKE_ENTER(cuLaunchKernel);
    launch_cfg cfg = {
        .grid = {gridDimX, gridDimY, gridDimZ},
        .block = {blockDimX, blockDimY, blockDimZ},
        .shared = sharedMemBytes,
        .stream = hStream,
    };
    return fake_leave(launch_locked(f, &cfg, kernelParams, extra));
}

CUresult CUDAAPI fake_cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
                                       void **kernelParams, void **extra)
{
    FAKE_ENTER(cuLaunchKernelEx);
    if (!config || (config->numAttrs && !config->attrs))
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    launch_cfg cfg = {
        .grid = {config->gridDimX, config->gridDimY, config->gridDimZ},
        .block = {config->blockDimX, config->blockDimY, config->blockDimZ},
        .shared = config->sharedMemBytes,
        .stream = config->hStream,
        .extended = true,
    };
    for (unsigned int i = 0; i < config->numAttrs; i++) {
        CUresult r = attribute_locked(&cfg, &config->attrs[i], false);
        if (r != CUDA_SUCCESS)
            return fake_leave(r);
    }
    return fake_leave(launch_locked(f, &cfg, kernelParams, extra));
}

/* --- execution ---------------------------------------------------------------------------------- */

typedef struct kernel_call {
    cus_fake_kernel_fn fn;
    void *user;
    cus_fake_launch *rec;
    void **argv; /* argv[i] = rec->args + offset of parameter i */
    CUresult result;
} kernel_call;

static void run_kernel(void *arg)
{
    kernel_call *k = arg;
    k->result = k->fn(k->rec, k->argv, k->user);
}

static CUresult execute_launch_locked(const fake_op *op)
{
    fake_launch_exec *x = op->u.launch.exec;
    struct CUfunc_st *f = x->fn;
    if (f->mod->h.state != FAKE_LIVE) {
        fake_misuse_locked("a launch of '%s' queued on stream 0x%" PRIxPTR " executed after its "
                           "module 0x%" PRIxPTR " was unloaded; skipped",
                           f->name, op->stream->is_default ? (uintptr_t)0 : (uintptr_t)op->stream,
                           (uintptr_t)f->mod);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    /* A pointer-sized argument into freed memory (a replay whose buffer went,
     * above all) is reported, and the kernel skipped, as a copy would be. */
    for (size_t i = 0; i < x->nargs; i++) {
        const fake_image_param *p = &f->fi->params[i];
        uint64_t v = 0;
        if (p->size != sizeof v)
            continue;
        memcpy(&v, x->args + p->offset, sizeof v);
        char what[96];
        snprintf(what, sizeof what, "argument %zu of kernel '%s'", i, f->name);
        if (v && !fake_memory_pointer_usable_locked((uintptr_t)v, what, op))
            return CUDA_ERROR_INVALID_VALUE;
    }
    kernel_call k = {.result = CUDA_SUCCESS};
    for (int i = 0; i < MAX_KERNELS; i++) {
        if (kernels[i].name && strcmp(kernels[i].name, f->name) == 0) {
            k.fn = kernels[i].fn;
            k.user = kernels[i].user;
            break;
        }
    }
    if (!k.fn) {
        /* A kernel without a host implementation does nothing: counted, and
         * under strict_kernels a launch failure, so that a test cannot pass
         * on results no kernel computed. */
        untwinned_runs++;
        snprintf(untwinned_last, sizeof untwinned_last, "%s", f->name);
        if (!strict_kernels)
            return CUDA_SUCCESS;
        fake_misuse_locked("kernel '%s' ran with no host implementation (strict_kernels: register "
                           "one with cus_fake_register_kernel)",
                           f->name);
        struct CUctx_st *c = op->stream->ctx;
        if (c->sticky == CUDA_SUCCESS)
            c->sticky = CUDA_ERROR_LAUNCH_FAILED;
        return CUDA_ERROR_LAUNCH_FAILED;
    }
    /* The record and the argument pointers, for the kernel only: the module
     * stays loaded while it runs (an unload synchronizes the context first). */
    k.rec = calloc(1, sizeof *k.rec + x->nargs * sizeof *k.argv);
    if (!k.rec) {
        fake_misuse_locked("out of host memory to run the host implementation of '%s'; "
                           "skipped",
                           f->name);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    k.argv = (void **)(k.rec + 1);
    fill_record(k.rec, x);
    for (size_t i = 0; i < x->nargs; i++)
        k.argv[i] = k.rec->args + f->fi->params[i].offset;
    fake_stream_call_unlocked_locked(run_kernel, &k);
    free(k.rec);
    if (k.result == CUDA_SUCCESS)
        return CUDA_SUCCESS;
    if (cus_status_is_sticky((cus_status)k.result)) {
        struct CUctx_st *c = op->stream->ctx;
        if (c->sticky == CUDA_SUCCESS)
            c->sticky = k.result; /* the first fault is the one that sticks */
        return k.result;
    }
    fake_misuse_locked("the host implementation of kernel '%s' returned %d, which is neither "
                       "CUDA_SUCCESS nor a sticky error; ignored",
                       f->name, (int)k.result);
    return CUDA_SUCCESS;
}

/* --- control and queries -------------------------------------------------------------------------- */

CUS_API unsigned long cus_fake_launch_count(void)
{
    fake_lock();
    fake_ensure_configured_locked();
    unsigned long n = launch_count;
    fake_unlock();
    return n;
}

CUS_API cus_status cus_fake_launch_at(unsigned long i, cus_fake_launch *out)
{
    if (!out)
        return CUS_ERROR_INVALID_ARGUMENT;
    cus_status st = CUS_ERROR_OUT_OF_RANGE;
    fake_lock();
    fake_ensure_configured_locked();
    if (i < launch_count && launch_count - i <= LAUNCH_RING) {
        *out = launch_ring[i % LAUNCH_RING];
        st = CUS_SUCCESS;
    }
    fake_unlock();
    return st;
}

CUS_API cus_status cus_fake_last_launch(cus_fake_launch *out)
{
    if (!out)
        return CUS_ERROR_INVALID_ARGUMENT;
    cus_status st = CUS_ERROR_OUT_OF_RANGE;
    fake_lock();
    fake_ensure_configured_locked();
    if (launch_count) {
        *out = launch_ring[(launch_count - 1) % LAUNCH_RING];
        st = CUS_SUCCESS;
    }
    fake_unlock();
    return st;
}

CUS_API cus_status cus_fake_register_kernel(const char *name, cus_fake_kernel_fn fn, void *user)
{
    if (!name || !*name)
        return CUS_ERROR_INVALID_ARGUMENT;
    cus_status st = CUS_SUCCESS;
    fake_lock();
    fake_ensure_configured_locked();
    int slot = -1, free_slot = -1;
    for (int i = 0; i < MAX_KERNELS; i++) {
        if (kernels[i].name && strcmp(kernels[i].name, name) == 0)
            slot = i;
        else if (!kernels[i].name && free_slot < 0)
            free_slot = i;
    }
    if (!fn) { /* removal; nothing to remove is fine */
        if (slot >= 0) {
            free(kernels[slot].name);
            memset(&kernels[slot], 0, sizeof kernels[slot]);
        }
    } else if (slot >= 0) {
        kernels[slot].fn = fn;
        kernels[slot].user = user;
    } else if (free_slot < 0) {
        st = CUS_ERROR_INVALID_ARGUMENT; /* all 64 in use */
    } else {
        char *copy = strdup(name);
        if (!copy) {
            st = CUS_ERROR_OUT_OF_HOST_MEMORY;
        } else {
            kernels[free_slot].name = copy;
            kernels[free_slot].fn = fn;
            kernels[free_slot].user = user;
        }
    }
    fake_unlock();
    return st;
}

CUS_API unsigned long cus_fake_kernels_without_twin(const char **last)
{
    fake_lock();
    unsigned long n = untwinned_runs;
    if (last)
        *last = n ? untwinned_last : NULL;
    fake_unlock();
    return n;
}

/* --- the area -------------------------------------------------------------------------------- */

static void launch_payload_free(fake_op *op)
{
    fake_module_launch_free(op->u.launch.exec);
}

static const fake_op_executor launch_executors[] = {
    {FAKE_OP_LAUNCH, FAKE_OP_COUNTS_AS_WORK | FAKE_OP_DEAD_WHEN_POISONED, execute_launch_locked,
     launch_payload_free},
};

/* The launch record and the kernel registrations (after the modules). */
static void launch_reset_locked(const cus_fake_config *cfg)
{
    strict_kernels = cfg && cfg->strict_kernels;
    untwinned_runs = 0;
    untwinned_last[0] = '\0';
    launch_count = 0;
    memset(launch_ring, 0, sizeof launch_ring);
    for (int i = 0; i < MAX_KERNELS; i++)
        free(kernels[i].name);
    memset(kernels, 0, sizeof kernels);
}

static const fake_area launch_area = {
    .name = "module launches",
    .reset_order = 45,
    .reset_locked = launch_reset_locked,
    .executors = launch_executors,
    .executor_count = sizeof launch_executors / sizeof launch_executors[0],
};
FAKE_AREA(launch_area)

/* --- kernel nodes built by hand (fake_graph_nodes.c) -------------------------------------------- */

/* A kernel node's launch: the function (or the CUkernel, in the current
 * context) and the configuration checked, and the arguments copied, as
 * cuLaunchKernel does; nothing queued or recorded. */
/* A kernel node's configuration: its launch shape, and the attributes it
 * was given (cuGraphKernelNodeSetAttribute, or a captured cuLaunchKernelEx),
 * which a change of its parameters keeps. */
static launch_cfg node_cfg(const fake_launch_exec *x)
{
    launch_cfg cfg = {.shared = x->shared_bytes, .cooperative = x->cooperative,
                      .extended = x->extended, .attrs = x->attrs, .hints = x->hints};
    memcpy(cfg.grid, x->grid, sizeof cfg.grid);
    memcpy(cfg.block, x->block, sizeof cfg.block);
    memcpy(cfg.cluster, x->cluster, sizeof cfg.cluster);
    return cfg;
}

static void node_cfg_store(fake_launch_exec *x, const launch_cfg *cfg)
{
    memcpy(x->cluster, cfg->cluster, sizeof x->cluster);
    x->cooperative = cfg->cooperative;
    x->extended = cfg->extended;
    x->attrs = cfg->attrs;
    x->hints = cfg->hints;
}

CUresult fake_module_node_launch_locked(const CUDA_KERNEL_NODE_PARAMS_v2 *p,
                                        const fake_launch_exec *like, fake_launch_exec **out)
{
    CUfunction hfunc = p->func ? p->func : (CUfunction)(void *)p->kern;
    if (!hfunc)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUfunc_st *f = NULL;
    CUresult r;
    if (!p->func && fake_module_kernel_resolver && !fake_module_is_function(hfunc) &&
        fake_module_kernel_resolver(hfunc, NULL, &r, &f)) {
        if (r != CUDA_SUCCESS)
            return r;
        hfunc = (CUfunction)f;
    }
    r = fake_module_function_arg_locked(hfunc, CUDA_ERROR_INVALID_VALUE, &f);
    if (r != CUDA_SUCCESS)
        return r;
    launch_cfg cfg = like ? node_cfg(like) : (launch_cfg){.shared = 0};
    cfg.grid[0] = p->gridDimX, cfg.grid[1] = p->gridDimY, cfg.grid[2] = p->gridDimZ;
    cfg.block[0] = p->blockDimX, cfg.block[1] = p->blockDimY, cfg.block[2] = p->blockDimZ;
    cfg.shared = p->sharedMemBytes;
    r = check_config_locked(f, &cfg);
    if (r != CUDA_SUCCESS)
        return r;
    const fake_image_function *fi = f->fi;
    if (fi->param_bytes > CUS_FAKE_MAX_LAUNCH_ARG_BYTES)
        return CUDA_ERROR_INVALID_VALUE;
    fake_launch_exec *x = calloc(1, sizeof *x + fi->param_bytes);
    if (!x)
        return CUDA_ERROR_OUT_OF_MEMORY;
    x->fn = f;
    x->context = f->mod->ctx;
    memcpy(x->grid, cfg.grid, sizeof x->grid);
    memcpy(x->block, cfg.block, sizeof x->block);
    x->shared_bytes = cfg.shared;
    node_cfg_store(x, &cfg);
    x->nargs = fi->nparams;
    x->arg_bytes = fi->param_bytes;
    x->captured = true; /* a node: its replays are the launches */
    r = copy_arguments_locked(f, p->kernelParams, p->extra, x);
    if (r != CUDA_SUCCESS) {
        free(x);
        return r;
    }
    *out = x;
    return CUDA_SUCCESS;
}

/* --- kernel node attributes ---------------------------------------------------------------------
 * cuGraphKernelNodeSetAttribute/GetAttribute/CopyAttributes on a node's
 * launch (fake_graph_kernel_attr.c finds the node). The node's function
 * must be in a healthy context; the new configuration is checked as a launch
 * checks its own (a cluster that does not divide the grid: at the set, our
 * assumption; the driver may defer it to the instantiation). */

CUresult fake_module_node_attribute_set_locked(fake_launch_exec *x, CUlaunchAttributeID id,
                                               const CUlaunchAttributeValue *value)
{
    struct CUfunc_st *f = NULL;
    CUresult r = fake_module_function_arg_locked((CUfunction)x->fn, CUDA_ERROR_INVALID_VALUE, &f);
    if (r != CUDA_SUCCESS)
        return r;
    launch_cfg cfg = node_cfg(x);
    const CUlaunchAttribute at = {.id = id, .value = *value};
    r = attribute_locked(&cfg, &at, true);
    if (r == CUDA_SUCCESS)
        r = check_config_locked(f, &cfg);
    if (r == CUDA_SUCCESS)
        node_cfg_store(x, &cfg);
    return r;
}

CUresult fake_module_node_attribute_get(const fake_launch_exec *x, CUlaunchAttributeID id,
                                        CUlaunchAttributeValue *out)
{
    CUlaunchAttributeValue v;
    memset(&v, 0, sizeof v);
    const cus_fake_launch_attributes *a = &x->attrs;
    switch ((int)id) {
    case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
        v.cooperative = x->cooperative;
        break;
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
        v.clusterDim.x = x->cluster[0], v.clusterDim.y = x->cluster[1];
        v.clusterDim.z = x->cluster[2];
        break;
    case CU_LAUNCH_ATTRIBUTE_PRIORITY:
        v.priority = a->has_priority ? a->priority : 0;
        break;
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
        v.clusterSchedulingPolicyPreference = (CUclusterSchedulingPolicy)a->cluster_policy;
        break;
    case 11: /* PREFERRED_CLUSTER_DIMENSION */
        v.clusterDim.x = a->preferred_cluster[0], v.clusterDim.y = a->preferred_cluster[1];
        v.clusterDim.z = a->preferred_cluster[2];
        break;
    case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
        if (a->has_access_policy)
            v.accessPolicyWindow = a->access_policy;
        break;
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
        v.memSyncDomain = (CUlaunchMemSyncDomain)(a->has_mem_sync_domain ? a->mem_sync_domain : 0);
        break;
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
        if (a->has_mem_sync_domain_map)
            v.memSyncDomainMap = a->mem_sync_domain_map;
        break;
    case 14: /* PREFERRED_SHARED_MEMORY_CARVEOUT */
        v.sharedMemCarveout = x->hints.carveout;
        break;
    case 16: /* NVLINK_UTIL_CENTRIC_SCHEDULING */
        v.nvlinkUtilCentricScheduling = x->hints.nvlink;
        break;
    default: /* launches' only, stream-only, not emulated (13) or unknown */
        return CUDA_ERROR_INVALID_VALUE;
    }
    *out = v;
    return CUDA_SUCCESS;
}

CUresult fake_module_node_function_locked(const fake_launch_exec *x, bool healthy)
{
    struct CUfunc_st *f = NULL;
    CUresult r = fake_module_function_arg_locked((CUfunction)x->fn, CUDA_ERROR_INVALID_VALUE, &f);
    return r == CUDA_ERROR_INVALID_HANDLE || healthy ? r : CUDA_SUCCESS;
}

CUresult fake_module_node_attributes_copy_locked(fake_launch_exec *dst, const fake_launch_exec *src)
{
    struct CUfunc_st *f = NULL;
    CUresult r =
        fake_module_function_arg_locked((CUfunction)dst->fn, CUDA_ERROR_INVALID_VALUE, &f);
    if (r != CUDA_SUCCESS)
        return r;
    /* Documented: both nodes must have the same context. */
    if (src->fn->mod->ctx != dst->fn->mod->ctx)
        return CUDA_ERROR_INVALID_VALUE;
    launch_cfg cfg = node_cfg(dst);
    const launch_cfg from = node_cfg(src);
    memcpy(cfg.cluster, from.cluster, sizeof cfg.cluster);
    cfg.cooperative = from.cooperative;
    cfg.extended = from.extended;
    cfg.attrs = from.attrs;
    cfg.hints = from.hints;
    r = check_config_locked(f, &cfg);
    if (r == CUDA_SUCCESS)
        node_cfg_store(dst, &cfg);
    return r;
}
