/* Kernel launch: the argument check against the cached layout, then one
 * driver call. Nothing here allocates or locks. */
#include <stdint.h>

#include "internal.h"
#include "launch_internal.h"
#include "library_internal.h"

CUS_API const size_t cus_launch_no_args_[1] = {0};

static inline bool sizes_match(unsigned int nparams, const size_t *param_sizes,
                               unsigned int nargs, const size_t *sizes)
{
    if (nargs != nparams)
        return false;
    for (unsigned int i = 0; i < nargs; i++)
        if (sizes[i] != param_sizes[i])
            return false;
    return true;
}

/* The argument check. The macros pass a static const sizes array, one per
 * call site (`immutable`): once it has matched, the function remembers its
 * address and later launches from that site compare one pointer instead of
 * every size. A caller's own array may change between calls, so it is
 * compared in full every time. Relaxed is enough: the layout never changes
 * after the function is published, and the remembered array never changes. */
static inline __attribute__((always_inline)) bool sizes_ok(cus_function *fn, unsigned int nargs,
                                                           const size_t *sizes, bool immutable)
{
    if (!sizes || !fn->layout_known)
        return true;
    if (immutable &&
        sizes == atomic_load_explicit(&fn->checked_sizes, memory_order_relaxed) &&
        nargs == fn->nparams)
        return true;
    if (!sizes_match(fn->nparams, fn->param_sizes, nargs, sizes))
        return false;
    if (immutable)
        atomic_store_explicit(&fn->checked_sizes, sizes, memory_order_relaxed);
    return true;
}

/* The checks every launch makes before the driver call; returns the stream's
 * handle through *hs. */
static inline __attribute__((always_inline)) cus_status
launch_prologue(cus_function *fn, cus_stream *stream, unsigned int nargs, void **args,
                const size_t *sizes, bool immutable, CUstream *hs, const char *function)
{
    if (CUS_UNLIKELY(cus_in_host_fn_)) {
        cus_pending_buffers_clear_();
        if (cus_is_forked_())
            return cus_refuse_call_(function);
        return cus_fail_(CUS_ERROR_IN_HOST_FUNCTION, function, NULL,
                         "host functions run on a driver thread and must not launch kernels");
    }
    /* A fork() child is refused below, before the driver call: its threads'
     * cached tops are NULL (fork.c), so every launch takes the switched
     * path, which checks (as launch_ex does). Nothing before that locks or
     * waits there (no capture counts as open, no destruction is pending). */
    /* Buffers the macro noted, and the module, stay with a graph being
     * captured (cuscope/graph.h); the note is dropped either way. */
    if (CUS_UNLIKELY(cus_pending_buffer_count_ ||
                     atomic_load_explicit(&cus_captures_active_, memory_order_relaxed))) {
        cus_status kept = cus_capture_launch_args_(stream, fn ? fn->module : NULL, function);
        if (CUS_UNLIKELY(kept))
            return kept;
    }
    if (CUS_UNLIKELY(!fn || (nargs && !args)))
        return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL,
                         fn ? "arguments missing" : "no function");
    cus_context *ctx = fn->ctx;
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
    if (CUS_UNLIKELY(!sizes_ok(fn, nargs, sizes, immutable)))
        return cus_layout_mismatch_(fn->name, fn->nparams, fn->param_sizes, nargs, sizes,
                                    function);
    cus_release_deferred_if_any_();
    return CUS_SUCCESS;
}

/* The one cuLaunchKernel call site, inlined into each path below. */
static inline __attribute__((always_inline)) CUresult driver_launch(const cus_function *fn,
                                                                    cus_dim3 grid, cus_dim3 block,
                                                                    unsigned int shared_bytes,
                                                                    CUstream hs, void **args)
{
    return cus_drv_.cuLaunchKernel_(fn->handle, grid.x, grid.y, grid.z, block.x, block.y, block.z,
                                    shared_bytes, hs, args, NULL);
}

/* The slow path: the function's context is not current on this thread. */
__attribute__((noinline)) static cus_status launch_switched(cus_function *fn, cus_dim3 grid,
                                                            cus_dim3 block,
                                                            unsigned int shared_bytes, CUstream hs,
                                                            void **args, const char *function)
{
    if (CUS_UNLIKELY(cus_is_forked_())) /* a child's tops are NULL: it comes here */
        return cus_refuse_call_(function);
    cus_status st = CUS_CALL_IN_AS(function, fn->ctx, "cuLaunchKernel",
                                   driver_launch(fn, grid, block, shared_bytes, hs, args));
    if (CUS_UNLIKELY(st))
        return cus_launch_diagnose_(fn, grid, block, shared_bytes, NULL, st, "cuLaunchKernel");
    return CUS_SUCCESS;
}

/* Every launch, with each check in full. */
__attribute__((noinline)) static cus_status launch(cus_function *fn, cus_dim3 grid,
                                                   cus_dim3 block, unsigned int shared_bytes,
                                                   cus_stream *stream, unsigned int nargs,
                                                   void **args, const size_t *sizes,
                                                   bool immutable, const char *function)
{
    CUstream hs = NULL;
    cus_status st = launch_prologue(fn, stream, nargs, args, sizes, immutable, &hs, function);
    if (CUS_UNLIKELY(st))
        return st;
    if (CUS_UNLIKELY(fn->ctx_handle != cus_tls_top_))
        return launch_switched(fn, grid, block, shared_bytes, hs, args, function);
    CUresult r = driver_launch(fn, grid, block, shared_bytes, hs, args);
    if (CUS_UNLIKELY(r))
        return cus_launch_diagnose_(fn, grid, block, shared_bytes, NULL,
                                    cus_context_driver_fail_(fn->ctx, r, function, "cuLaunchKernel"),
                                    "cuLaunchKernel");
    return CUS_SUCCESS;
}

/* Whether a launch from a macro call site may go straight to the driver (never
 * in a fork() child: no context there matches cus_tls_top_, see fork.c): the
 * common case, tested with one branch per condition and no call, so that the
 * compiler keeps the arguments in registers. Anything else (an error, a
 * capture, a deferred release, another context on top, a site not yet
 * checked) takes launch(), which does it all in full. */
/* Buffers the cus_launch macro noted for the launch (see cus_buffer_arg_,
 * below): only while a capture is open. */
#define PENDING_MAX 64
/* obj's count is its first member (buffers, textures); item is NULL for a
 * buffer, else how to keep obj (cus_launch_note_kept_). */
typedef struct pending_arg_ {
    void *obj;
    cus_keep_item_ (*item)(void *obj);
} pending_arg_;
static _Thread_local pending_arg_ pending[PENDING_MAX] __attribute__((tls_model("initial-exec")));
_Thread_local unsigned int cus_pending_buffer_count_ __attribute__((tls_model("initial-exec")));

/* A launch into a capture that already keeps what it uses (the module, the
 * noted buffers: cus_capture_kept_). Then the note is dropped, and nothing
 * is left to keep. */
static inline __attribute__((always_inline)) bool kept_already(const cus_function *fn,
                                                               const cus_stream *stream)
{
    cuuint64_t id = stream ? atomic_load_explicit(&stream->capture_id, memory_order_acquire) : 0;
    cus_module *mod = fn->module;
    if (!id || (mod && !cus_capture_kept_(id, &mod->refs, mod)))
        return false;
    unsigned int n = cus_pending_buffer_count_;
    for (unsigned int i = 0; i < n; i++)
        if (!cus_capture_kept_(id, (cus_refcount *)pending[i].obj, pending[i].obj))
            return false;
    cus_pending_buffer_count_ = 0;
    return true;
}

static inline __attribute__((always_inline)) bool fast_path(const cus_function *fn,
                                                            const cus_stream *stream,
                                                            unsigned int nargs, void **args,
                                                            const size_t *sizes)
{
    if (CUS_UNLIKELY(!fn || cus_in_host_fn_))
        return false;
    if (CUS_UNLIKELY(cus_pending_buffer_count_ ||
                     atomic_load_explicit(&cus_captures_active_, memory_order_relaxed)) &&
        !kept_already(fn, stream))
        return false;
    if (CUS_UNLIKELY(atomic_load_explicit(&cus_deferred_pending_, memory_order_relaxed)))
        return false;
    if (CUS_UNLIKELY(fn->ctx_handle != cus_tls_top_ || (nargs && !args)))
        return false;
    if (CUS_UNLIKELY(atomic_load_explicit(&fn->ctx->poison, memory_order_relaxed)))
        return false;
    if (stream && CUS_UNLIKELY(stream->ctx->handle != fn->ctx_handle))
        return false;
    if (sizes && fn->layout_known &&
        CUS_UNLIKELY(sizes != atomic_load_explicit(&fn->checked_sizes, memory_order_relaxed) ||
                     nargs != fn->nparams))
        return false;
    return true;
}

CUS_API cus_status cus_function_launch(cus_function *fn, cus_dim3 grid, cus_dim3 block,
                                       unsigned int shared_bytes, cus_stream *stream,
                                       unsigned int nargs, void **args, const size_t *sizes)
{
    return launch(fn, grid, block, shared_bytes, stream, nargs, args, sizes, false, __func__);
}

/* The macro's entry: sizes is the call site's static const array. Errors name
 * cus_launch, the call the user wrote. */
CUS_API cus_status cus_launch_site_(cus_function *fn, cus_dim3 grid, cus_dim3 block,
                                    unsigned int shared_bytes, cus_stream *stream,
                                    unsigned int nargs, void **args, const size_t *sizes)
{
    if (CUS_UNLIKELY(!fast_path(fn, stream, nargs, args, sizes)))
        return launch(fn, grid, block, shared_bytes, stream, nargs, args, sizes, true,
                      "cus_launch");
    CUresult r = driver_launch(fn, grid, block, shared_bytes, stream ? stream->handle : NULL, args);
    if (CUS_UNLIKELY(r))
        return cus_launch_diagnose_(fn, grid, block, shared_bytes, NULL,
                                    cus_context_driver_fail_(fn->ctx, r, "cus_launch", "cuLaunchKernel"),
                                    "cuLaunchKernel");
    return CUS_SUCCESS;
}

/* The driver's form of a cuscope launch configuration; attrs holds its
 * cluster and cooperative attributes (cus_launch_attrs_ appends the rest). */
static void launch_config_fill(const cus_launch_config *config, CUstream hs,
                               CUlaunchAttribute *attrs, CUlaunchConfig *lc)
{
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
    *lc = (CUlaunchConfig){
        .gridDimX = config->grid.x, .gridDimY = config->grid.y, .gridDimZ = config->grid.z,
        .blockDimX = config->block.x, .blockDimY = config->block.y, .blockDimZ = config->block.z,
        .sharedMemBytes = config->shared_bytes, .hStream = hs,
        .attrs = n ? attrs : NULL, .numAttrs = n,
    };
}

static cus_status launch_ex(cus_function *fn, const cus_launch_config *config,
                            unsigned int nargs, void **args, const size_t *sizes, bool immutable,
                            const char *function)
{
    if (CUS_UNLIKELY(!config))
        return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL, "no launch configuration");
    CUstream hs = NULL;
    CUS_TRY(launch_prologue(fn, config->stream, nargs, args, sizes, immutable, &hs, function));
    if (CUS_UNLIKELY(cus_is_forked_()))
        return cus_refuse_call_(function);
    if (!cus_drv_.cuLaunchKernelEx_)
        return cus_fail_(CUS_ERROR_NOT_SUPPORTED, function, "cuLaunchKernelEx",
                         "the driver has no cuLaunchKernelEx (needs 11.8)");
    CUlaunchAttribute attrs[CUS_LAUNCH_ATTRS_MAX_];
    CUlaunchConfig lc;
    launch_config_fill(config, hs, attrs, &lc);
    CUS_TRY(cus_launch_attrs_(fn->ctx, fn->name, config, attrs, &lc.numAttrs, true, function));
    lc.attrs = lc.numAttrs ? attrs : NULL;
    cus_status st = CUS_CALL_IN_AS(function, fn->ctx, "cuLaunchKernelEx",
                                   cus_drv_.cuLaunchKernelEx_(&lc, fn->handle, args, NULL));
    if (CUS_UNLIKELY(st))
        return cus_launch_diagnose_(fn, config->grid, config->block, config->shared_bytes, config,
                                    st, "cuLaunchKernelEx");
    return CUS_SUCCESS;
}

CUS_API cus_status cus_function_launch_ex(cus_function *fn, const cus_launch_config *config,
                                          unsigned int nargs, void **args, const size_t *sizes)
{
    return launch_ex(fn, config, nargs, args, sizes, false, __func__);
}

CUS_API cus_status cus_launch_ex_site_(cus_function *fn, const cus_launch_config *config,
                                       unsigned int nargs, void **args, const size_t *sizes)
{
    return launch_ex(fn, config, nargs, args, sizes, true, "cus_launch_ex");
}

/* --- buffers named by launch arguments ---------------------------------------
 * The cus_launch macro turns a cus_buffer * argument into its address with
 * cus_buffer_arg_(), evaluated just before the launch on the same thread; while
 * a capture is active it also notes the buffer here, and the launch keeps what
 * was noted. Plain pointers, not references: the caller holds the buffers for
 * the duration of the launch expression. */


void cus_pending_buffers_clear_(void)
{
    cus_pending_buffer_count_ = 0;
}

CUS_API CUdeviceptr cus_buffer_arg_(const cus_buffer *buf)
{
    if (CUS_UNLIKELY(atomic_load_explicit(&cus_captures_active_, memory_order_relaxed)) && buf &&
        cus_pending_buffer_count_ < PENDING_MAX)
        pending[cus_pending_buffer_count_++] = (pending_arg_){(void *)buf, NULL};
    return cus_buffer_ptr(buf);
}

void cus_launch_note_kept_(void *obj, cus_keep_item_ (*item)(void *obj))
{
    if (cus_pending_buffer_count_ < PENDING_MAX)
        pending[cus_pending_buffer_count_++] = (pending_arg_){obj, item};
}

cus_status cus_capture_launch_args_(cus_stream *stream, cus_module *mod, const char *function)
{
    if (!mod)
        return cus_capture_launch_code_(stream, NULL, function);
    cus_keep_item_ code = cus_capture_item_module_(mod);
    return cus_capture_launch_code_(stream, &code, function);
}

cus_status cus_capture_launch_code_(cus_stream *stream, const cus_keep_item_ *code,
                                    const char *function)
{
    unsigned int n = cus_pending_buffer_count_;
    cus_pending_buffer_count_ = 0;
    if (!atomic_load_explicit(&cus_captures_active_, memory_order_relaxed))
        return CUS_SUCCESS;
    /* Launch after launch in one capture: what each object's kept_by names
     * this capture is kept already (a line the launch read anyway); only the
     * rest goes to the capture. */
    cuuint64_t id = stream ? atomic_load_explicit(&stream->capture_id, memory_order_acquire) : 0;
    cus_keep_item_ items[PENDING_MAX + 1];
    unsigned int count = 0;
    if (code && (!id || !cus_capture_kept_(id, code->refs, code->obj)))
        items[count++] = *code;
    for (unsigned int i = 0; i < n; i++)
        if (!id || !cus_capture_kept_(id, (cus_refcount *)pending[i].obj, pending[i].obj))
            items[count++] = pending[i].item ? pending[i].item(pending[i].obj)
                                             : cus_capture_item_buffer_(pending[i].obj);
    return count ? cus_capture_ops.keep(stream, items, count, function) : CUS_SUCCESS;
}

/* --- library kernels (cuscope/library.h) ---------------------------------------
 * The same checks and the same fast path as a function's, without a switch:
 * the driver takes the context of a CUkernel launch from the stream, or with
 * a NULL stream from the current context (cuLaunchKernel's documentation),
 * so cuscope only finds which, for the poison check and the record. A
 * capture keeps the kernel's library, as it keeps a function's module. */

/* sizes_ok's rules, on a kernel. */
static inline bool kernel_sizes_ok(cus_kernel *k, unsigned int nargs, const size_t *sizes,
                                   bool immutable)
{
    if (!sizes || atomic_load_explicit(&k->layout, memory_order_acquire) != CUS_LAYOUT_KNOWN_)
        return true;
    if (immutable && sizes == atomic_load_explicit(&k->checked_sizes, memory_order_relaxed) &&
        nargs == k->nparams)
        return true;
    if (!sizes_match(k->nparams, k->param_sizes, nargs, sizes))
        return false;
    if (immutable)
        atomic_store_explicit(&k->checked_sizes, sizes, memory_order_relaxed);
    return true;
}

/* The context a kernel launch runs in: NULL when the stream is NULL and no
 * context is current. */
static inline cus_context *kernel_context(const cus_stream *stream)
{
    return stream ? stream->ctx : cus_context_current();
}

/* kept_already's rule, for the kernel's library. */
static inline bool kernel_kept_already(const cus_kernel *k, const cus_stream *stream)
{
    cuuint64_t id = stream ? atomic_load_explicit(&stream->capture_id, memory_order_acquire) : 0;
    if (!id || !cus_capture_kept_(id, &k->library->refs, k->library))
        return false;
    unsigned int n = cus_pending_buffer_count_;
    for (unsigned int i = 0; i < n; i++)
        if (!cus_capture_kept_(id, (cus_refcount *)pending[i].obj, pending[i].obj))
            return false;
    cus_pending_buffer_count_ = 0;
    return true;
}

static inline __attribute__((always_inline)) bool
kernel_fast_path(const cus_kernel *k, const cus_stream *stream, unsigned int nargs, void **args,
                 const size_t *sizes, cus_context **ctx)
{
    if (CUS_UNLIKELY(!k || cus_in_host_fn_))
        return false;
    if (CUS_UNLIKELY(cus_pending_buffer_count_ ||
                     atomic_load_explicit(&cus_captures_active_, memory_order_relaxed)) &&
        !kernel_kept_already(k, stream))
        return false;
    if (CUS_UNLIKELY(atomic_load_explicit(&cus_deferred_pending_, memory_order_relaxed) ||
                     (nargs && !args) || cus_is_forked_()))
        return false;
    cus_context *c = kernel_context(stream);
    if (CUS_UNLIKELY(!c || atomic_load_explicit(&c->poison, memory_order_relaxed)))
        return false;
    /* A pending layout has no checked sizes yet: the slow path reads it. */
    if (sizes &&
        atomic_load_explicit(&k->layout, memory_order_acquire) != CUS_LAYOUT_NONE_ &&
        CUS_UNLIKELY(sizes != atomic_load_explicit(&k->checked_sizes, memory_order_relaxed) ||
                     nargs != k->nparams))
        return false;
    *ctx = c;
    return true;
}

static inline __attribute__((always_inline)) CUresult
kernel_driver_launch(const cus_kernel *k, cus_dim3 grid, cus_dim3 block, unsigned int shared_bytes,
                     const cus_stream *stream, void **args)
{
    return cus_drv_.cuLaunchKernel_((CUfunction)(void *)k->handle, grid.x, grid.y, grid.z, block.x,
                                    block.y, block.z, shared_bytes,
                                    stream ? stream->handle : NULL, args, NULL);
}

/* Every check in full; the launch's context in *ctx. */
static cus_status kernel_prologue(cus_kernel *k, cus_stream *stream, unsigned int nargs,
                                  void **args, const size_t *sizes, bool immutable,
                                  cus_context **ctx, const char *function)
{
    if (CUS_UNLIKELY(cus_in_host_fn_)) {
        cus_pending_buffers_clear_();
        if (cus_is_forked_())
            return cus_refuse_call_(function);
        return cus_fail_(CUS_ERROR_IN_HOST_FUNCTION, function, NULL,
                         "host functions run on a driver thread and must not launch kernels");
    }
    if (CUS_UNLIKELY(cus_pending_buffer_count_ ||
                     atomic_load_explicit(&cus_captures_active_, memory_order_relaxed))) {
        cus_keep_item_ code;
        if (k)
            code = cus_capture_item_library_(k->library);
        cus_status kept = cus_capture_launch_code_(stream, k ? &code : NULL, function);
        if (CUS_UNLIKELY(kept))
            return kept;
    }
    if (CUS_UNLIKELY(!k || (nargs && !args)))
        return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL,
                         k ? "arguments missing" : "no kernel");
    if (CUS_UNLIKELY(cus_is_forked_()))
        return cus_refuse_call_(function);
    cus_context *c = kernel_context(stream);
    if (CUS_UNLIKELY(!c))
        return cus_fail_((cus_status)CUDA_ERROR_INVALID_CONTEXT, function, NULL,
                         "%s: a library kernel launched on the NULL stream runs in the current "
                         "context, and none is current (push one, or pass a stream)",
                         k->key.name);
    if (CUS_UNLIKELY(atomic_load_explicit(&c->poison, memory_order_relaxed)))
        return cus_context_poisoned_fail_(c, function);
    if (sizes)
        CUS_TRY(cus_kernel_layout_in_(k, c->handle, function));
    if (CUS_UNLIKELY(!kernel_sizes_ok(k, nargs, sizes, immutable)))
        return cus_layout_mismatch_(k->key.name, k->nparams, k->param_sizes, nargs, sizes,
                                    function);
    cus_release_deferred_if_any_();
    *ctx = c;
    return CUS_SUCCESS;
}

__attribute__((noinline)) static cus_status kernel_launch(cus_kernel *k, cus_dim3 grid,
                                                          cus_dim3 block,
                                                          unsigned int shared_bytes,
                                                          cus_stream *stream, unsigned int nargs,
                                                          void **args, const size_t *sizes,
                                                          bool immutable, const char *function)
{
    cus_context *c = NULL;
    CUS_TRY(kernel_prologue(k, stream, nargs, args, sizes, immutable, &c, function));
    CUresult r = kernel_driver_launch(k, grid, block, shared_bytes, stream, args);
    if (CUS_UNLIKELY(r))
        return cus_context_driver_fail_(c, r, function, "cuLaunchKernel");
    return CUS_SUCCESS;
}

CUS_API cus_status cus_kernel_launch(cus_kernel *k, cus_dim3 grid, cus_dim3 block,
                                     unsigned int shared_bytes, cus_stream *stream,
                                     unsigned int nargs, void **args, const size_t *sizes)
{
    return kernel_launch(k, grid, block, shared_bytes, stream, nargs, args, sizes, false, __func__);
}

CUS_API cus_status cus_kernel_launch_site_(cus_kernel *k, cus_dim3 grid, cus_dim3 block,
                                           unsigned int shared_bytes, cus_stream *stream,
                                           unsigned int nargs, void **args, const size_t *sizes)
{
    cus_context *c = NULL;
    if (CUS_UNLIKELY(!kernel_fast_path(k, stream, nargs, args, sizes, &c)))
        return kernel_launch(k, grid, block, shared_bytes, stream, nargs, args, sizes, true,
                             "cus_launch");
    CUresult r = kernel_driver_launch(k, grid, block, shared_bytes, stream, args);
    if (CUS_UNLIKELY(r))
        return cus_context_driver_fail_(c, r, "cus_launch", "cuLaunchKernel");
    return CUS_SUCCESS;
}

static cus_status kernel_launch_ex(cus_kernel *k, const cus_launch_config *config,
                                   unsigned int nargs, void **args, const size_t *sizes,
                                   bool immutable, const char *function)
{
    if (CUS_UNLIKELY(!config))
        return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL, "no launch configuration");
    cus_context *c = NULL;
    CUS_TRY(kernel_prologue(k, config->stream, nargs, args, sizes, immutable, &c, function));
    if (!cus_drv_.cuLaunchKernelEx_)
        return cus_fail_(CUS_ERROR_NOT_SUPPORTED, function, "cuLaunchKernelEx",
                         "the driver has no cuLaunchKernelEx (needs 11.8)");
    CUlaunchAttribute attrs[CUS_LAUNCH_ATTRS_MAX_];
    CUlaunchConfig lc;
    launch_config_fill(config, config->stream ? config->stream->handle : NULL, attrs, &lc);
    CUS_TRY(cus_launch_attrs_(c, k->key.name, config, attrs, &lc.numAttrs, true, function));
    lc.attrs = lc.numAttrs ? attrs : NULL;
    CUresult r = cus_drv_.cuLaunchKernelEx_(&lc, (CUfunction)(void *)k->handle, args, NULL);
    if (r)
        return cus_context_driver_fail_(c, r, function, "cuLaunchKernelEx");
    return CUS_SUCCESS;
}

CUS_API cus_status cus_kernel_launch_ex(cus_kernel *k, const cus_launch_config *config,
                                        unsigned int nargs, void **args, const size_t *sizes)
{
    return kernel_launch_ex(k, config, nargs, args, sizes, false, __func__);
}

CUS_API cus_status cus_kernel_launch_ex_site_(cus_kernel *k, const cus_launch_config *config,
                                              unsigned int nargs, void **args,
                                              const size_t *sizes)
{
    return kernel_launch_ex(k, config, nargs, args, sizes, true, "cus_launch_ex");
}
