/* Kernel launch: the argument check against the cached layout, then one
 * driver call. Nothing here allocates or locks. */
#include <stdint.h>

#include "internal.h"

/* Out of line so that the launch path stays small. */
__attribute__((noinline, cold)) static cus_status check_fail(const cus_function *fn,
                                                             unsigned int nargs,
                                                             const size_t *sizes,
                                                             const char *function)
{
    if (nargs != fn->nparams)
        return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL,
                         "%s: %u argument%s given, the kernel takes %u", fn->name, nargs,
                         nargs == 1 ? "" : "s", fn->nparams);
    for (unsigned int i = 0; i < nargs; i++)
        if (sizes[i] != fn->param_sizes[i])
            return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL,
                             "%s: argument %u is %zu bytes, the kernel's parameter is %zu", fn->name,
                             i + 1, sizes[i], fn->param_sizes[i]);
    return CUS_SUCCESS;
}

static inline bool args_match(const cus_function *fn, unsigned int nargs, const size_t *sizes)
{
    if (nargs != fn->nparams)
        return false;
    for (unsigned int i = 0; i < nargs; i++)
        if (sizes[i] != fn->param_sizes[i])
            return false;
    return true;
}

/* The checks every launch makes before the driver call; returns the stream's
 * handle through *hs. */
static inline cus_status launch_prologue(cus_function *fn, cus_stream *stream, unsigned int nargs,
                                         void **args, const size_t *sizes, CUstream *hs,
                                         const char *function)
{
    if (CUS_UNLIKELY(cus_in_host_fn_)) {
        cus_pending_buffers_clear_();
        return cus_fail_(CUS_ERROR_IN_HOST_FUNCTION, function, NULL,
                         "host functions run on a driver thread and must not launch kernels");
    }
    /* Buffers the macro noted, and the module, stay with a graph being
     * captured (cuscope/graph.h); the note is dropped either way. */
    if (CUS_UNLIKELY(cus_pending_buffer_count_ ||
                     atomic_load_explicit(&cus_captures_active_, memory_order_relaxed)))
        cus_capture_launch_args_(stream, fn ? fn->module : NULL);
    if (CUS_UNLIKELY(!fn || (nargs && !args)))
        return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL,
                         fn ? "arguments missing" : "no function");
    cus_context *ctx = fn->module->ctx;
    if (CUS_UNLIKELY(atomic_load_explicit(&ctx->poison, memory_order_relaxed)))
        return cus_context_poisoned_fail_(ctx, function);
    if (stream) {
        if (CUS_UNLIKELY(stream->ctx->handle != fn->ctx_handle))
            return cus_fail_(CUS_ERROR_CONTEXT_MISMATCH, function, NULL,
                             "%s: the stream belongs to context %p, the function to %p", fn->name,
                             (void *)stream->ctx->handle, (void *)fn->ctx_handle);
        *hs = stream->handle;
    } else {
        *hs = NULL;
    }
    if (sizes && fn->layout_known && CUS_UNLIKELY(!args_match(fn, nargs, sizes)))
        return check_fail(fn, nargs, sizes, function);
    cus_release_deferred_if_any_();
    return CUS_SUCCESS;
}

/* The slow path: the function's context is not current on this thread. */
__attribute__((noinline)) static cus_status launch_switched(cus_function *fn, cus_dim3 grid,
                                                            cus_dim3 block,
                                                            unsigned int shared_bytes, CUstream hs,
                                                            void **args)
{
    CUS_IN_CONTEXT(fn->module->ctx, "cuLaunchKernel",
                   cus_drv_.cuLaunchKernel_(fn->handle, grid.x, grid.y, grid.z, block.x, block.y,
                                            block.z, shared_bytes, hs, args, NULL));
    return CUS_SUCCESS;
}

CUS_API cus_status cus_function_launch(cus_function *fn, cus_dim3 grid, cus_dim3 block,
                                       unsigned int shared_bytes, cus_stream *stream,
                                       unsigned int nargs, void **args, const size_t *sizes)
{
    CUstream hs = NULL;
    cus_status st = launch_prologue(fn, stream, nargs, args, sizes, &hs, __func__);
    if (CUS_UNLIKELY(st))
        return st;
    if (CUS_UNLIKELY(fn->ctx_handle != cus_tls_top_))
        return launch_switched(fn, grid, block, shared_bytes, hs, args);
    CUresult r = cus_drv_.cuLaunchKernel_(fn->handle, grid.x, grid.y, grid.z, block.x, block.y,
                                          block.z, shared_bytes, hs, args, NULL);
    if (CUS_UNLIKELY(r))
        return cus_context_driver_fail_(fn->module->ctx, r, __func__, "cuLaunchKernel");
    return CUS_SUCCESS;
}

CUS_API cus_status cus_function_launch_ex(cus_function *fn, const cus_launch_config *config,
                                          unsigned int nargs, void **args, const size_t *sizes)
{
    if (CUS_UNLIKELY(!config))
        return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL, "no launch configuration");
    CUstream hs = NULL;
    CUS_TRY(launch_prologue(fn, config->stream, nargs, args, sizes, &hs, __func__));
    if (!cus_drv_.cuLaunchKernelEx_)
        return CUS_FAIL(CUS_ERROR_NOT_SUPPORTED, "cuLaunchKernelEx",
                        "the driver has no cuLaunchKernelEx (needs 11.8)");
    CUlaunchAttribute attrs[2];
    unsigned int n = 0;
    if (config->cluster.x || config->cluster.y || config->cluster.z) {
        attrs[n].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        attrs[n].value.clusterDim.x = config->cluster.x ? config->cluster.x : 1;
        attrs[n].value.clusterDim.y = config->cluster.y ? config->cluster.y : 1;
        attrs[n].value.clusterDim.z = config->cluster.z ? config->cluster.z : 1;
        n++;
    }
    if (config->cooperative) {
        attrs[n].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
        attrs[n].value.cooperative = 1;
        n++;
    }
    CUlaunchConfig lc = {
        .gridDimX = config->grid.x, .gridDimY = config->grid.y, .gridDimZ = config->grid.z,
        .blockDimX = config->block.x, .blockDimY = config->block.y, .blockDimZ = config->block.z,
        .sharedMemBytes = config->shared_bytes, .hStream = hs,
        .attrs = n ? attrs : NULL, .numAttrs = n,
    };
    CUS_IN_CONTEXT(fn->module->ctx, "cuLaunchKernelEx",
                   cus_drv_.cuLaunchKernelEx_(&lc, fn->handle, args, NULL));
    return CUS_SUCCESS;
}
