/* Streams and host functions. */
#include <stdlib.h>

#include "internal.h"

static CUresult destroy_stream_call(void *h)
{
    return cus_drv_.cuStreamDestroy_((CUstream)h);
}

static void stream_destroy(cus_stream *s)
{
    if (s->kind == CUS_STREAM_OWNED)
        cus_destroy_in_context_(s->ctx, "cus_stream_unref", "cuStreamDestroy",
                                destroy_stream_call, s->handle, "a stream");
    cus_context_unref(s->ctx);
    cus_record_free_(s, sizeof *s);
}

CUS_DEFINE_REF_UNREF(cus_stream, stream_destroy)

static cus_stream *stream_new(cus_context *ctx, CUstream handle, cus_stream_kind kind)
{
    cus_stream *s = cus_record_new_(sizeof *s);
    if (s) {
        cus_refcount_init_(&s->refs);
        s->handle = handle;
        s->ctx = cus_context_ref(ctx);
        s->kind = kind;
    }
    return s;
}

CUS_API cus_status cus_stream_create(cus_context *ctx, unsigned int flags, int priority,
                                     cus_stream **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(ctx && out);
    CUS_CHECK_POISON(ctx);
    cus_release_deferred_if_any_();
    int least = 0, greatest = 0;
    CUS_TRY(cus_context_priority_range_(ctx, &least, &greatest)); /* asked once per context */
    if (priority > least || priority < greatest)
        return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,
                        "priority %d is outside the context's range [%d, %d] (greatest first)",
                        priority, greatest, least);
    cus_stream *s = stream_new(ctx, NULL, CUS_STREAM_OWNED);
    if (!s)
        return CUS_FAIL(CUS_ERROR_OUT_OF_HOST_MEMORY, NULL, "allocating a stream");
    CUstream h = NULL;
    cus_status st;
    if (ctx->kind == CUS_CONTEXT_GREEN) {
        /* The driver's streams of a green context are non-blocking (it
         * refuses others); made so on every driver, so that a program sees
         * one behaviour. cuGreenCtxStreamCreate (12.5) ignores the current
         * context; a 12.4 driver ties a stream made with the green context's
         * CUcontext current to the green context just the same. */
        flags |= CU_STREAM_NON_BLOCKING;
        if (cus_drv_.cuGreenCtxStreamCreate_) {
            CUresult r = cus_drv_.cuGreenCtxStreamCreate_(&h, ctx->green, flags, priority);
            st = r ? cus_context_driver_fail_(ctx, r, __func__, "cuGreenCtxStreamCreate")
                   : CUS_SUCCESS;
        } else {
            st = CUS_CALL_IN(ctx, "cuStreamCreateWithPriority",
                             cus_drv_.cuStreamCreateWithPriority_(&h, flags, priority));
        }
    } else {
        st = CUS_CALL_IN(ctx, "cuStreamCreateWithPriority",
                         cus_drv_.cuStreamCreateWithPriority_(&h, flags, priority));
    }
    if (st) {
        s->kind = CUS_STREAM_FOREIGN; /* nothing to destroy */
        cus_stream_unref(s);
        return st;
    }
    s->handle = h;
    *out = s;
    return CUS_SUCCESS;
}

static cus_status stream_special(cus_context *ctx, CUstream handle, cus_stream_kind kind,
                                 cus_stream **out, const char *function)
{
    if (!ctx || !out)
        return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL, "ctx and out are required");
    if (CUS_UNLIKELY(atomic_load_explicit(&ctx->poison, memory_order_relaxed)))
        return cus_context_poisoned_fail_(ctx, function);
    cus_stream *s = stream_new(ctx, handle, kind);
    if (!s)
        return cus_fail_(CUS_ERROR_OUT_OF_HOST_MEMORY, function, NULL, "allocating a stream");
    *out = s;
    return CUS_SUCCESS;
}

CUS_API cus_status cus_stream_legacy(cus_context *ctx, cus_stream **out)
{
    CUS_API_ENTER();
    return stream_special(ctx, CU_STREAM_LEGACY, CUS_STREAM_LEGACY_DEFAULT, out, __func__);
}

CUS_API cus_status cus_stream_per_thread(cus_context *ctx, cus_stream **out)
{
    CUS_API_ENTER();
    return stream_special(ctx, CU_STREAM_PER_THREAD, CUS_STREAM_PER_THREAD_DEFAULT, out,
                          __func__);
}

CUS_API cus_status cus_stream_wrap(cus_context *ctx, CUstream handle, cus_stream **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(handle);
    return stream_special(ctx, handle, CUS_STREAM_FOREIGN, out, __func__);
}

CUS_API CUstream cus_stream_handle(const cus_stream *stream)
{
    return stream ? stream->handle : NULL;
}

CUS_API cus_context *cus_stream_context(const cus_stream *stream)
{
    return stream ? stream->ctx : NULL;
}

CUS_API cus_stream_kind cus_stream_get_kind(const cus_stream *stream)
{
    return stream ? stream->kind : CUS_STREAM_FOREIGN;
}

CUS_API cus_status cus_stream_synchronize(cus_stream *stream)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(stream);
    cus_release_deferred_if_any_();
    CUS_IN_CONTEXT(stream->ctx, "cuStreamSynchronize", cus_drv_.cuStreamSynchronize_(stream->handle));
    cus_release_deferred_if_any_(); /* host functions that just ran may have dropped some */
    return CUS_SUCCESS;
}

CUS_API cus_status cus_stream_query(cus_stream *stream, bool *done)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(stream && done);
    CUresult q = CUDA_SUCCESS;
    CUS_IN_CONTEXT(stream->ctx, "cuStreamQuery",
                   ((q = cus_drv_.cuStreamQuery_(stream->handle)) == CUDA_ERROR_NOT_READY
                        ? CUDA_SUCCESS
                        : q));
    *done = q == CUDA_SUCCESS;
    cus_release_deferred_if_any_();
    return CUS_SUCCESS;
}

CUS_API cus_status cus_stream_wait_event(cus_stream *stream, cus_event *event)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(stream && event);
    CUS_CHECK_POISON(event->ctx);
    CUS_IN_CONTEXT(stream->ctx, "cuStreamWaitEvent",
                   cus_drv_.cuStreamWaitEvent_(stream->handle, event->handle, 0));
    /* After the wait: the wait is what joins stream to the event's capture. */
    CUS_TRY(cus_capture_keep_event_(stream, event, __func__));
    return CUS_SUCCESS;
}

typedef struct host_call {
    cus_host_record_head_ head; /* first: read back by cus_graph_host_node_fn */
    bool in_graph; /* captured: runs at every replay, and the graph frees it */
    struct host_call *foreign_next; /* captured outside cuscope: kept forever */
} host_call;

void CUDA_CB cus_stream_host_trampoline_(void *arg)
{
    host_call call = *(host_call *)arg;
    if (!call.in_graph)
        free(arg);
    cus_host_record_run_(call.head);
}

/* Records queued into captures that cuscope did not begin: the graph may be
 * replayed any number of times and cuscope is not told when it dies, so the
 * record is kept for the life of the process (reachable from this list). */
static pthread_mutex_t foreign_lock = PTHREAD_MUTEX_INITIALIZER;
static host_call *foreign_records;

/* A stream captured outside cuscope (cuStreamBeginCapture, or joined to such
 * a capture) would free the record at its first replay: ask the driver, and
 * keep the record forever when it captures (*kept is set then). */
static cus_status check_foreign_capture(cus_stream *stream, host_call *call, bool *kept)
{
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    CUresult r = cus_drv_.cuStreamIsCapturing_(stream->handle, &status);
    if (r)
        return cus_context_driver_fail_(stream->ctx, r, "cus_stream_launch_host_fn",
                                        "cuStreamIsCapturing");
    if (status == CU_STREAM_CAPTURE_STATUS_NONE)
        return CUS_SUCCESS;
    *kept = true;
    pthread_mutex_lock(&foreign_lock);
    call->foreign_next = foreign_records;
    foreign_records = call;
    pthread_mutex_unlock(&foreign_lock);
    return CUS_SUCCESS;
}

CUS_API cus_status cus_stream_launch_host_fn(cus_stream *stream, cus_host_fn fn, void *user_data)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(stream && fn);
    cus_autofree host_call *call = cus_malloc_(sizeof *call);
    if (!call)
        return CUS_FAIL(CUS_ERROR_OUT_OF_HOST_MEMORY, NULL, "allocating a host function record");
    call->head = (cus_host_record_head_){fn, user_data};
    call->in_graph = false;
    call->foreign_next = NULL;
    CUS_SWITCH(sw, stream->ctx);
    if (sw_status)
        return sw_status;
    /* Captured, the record must outlive every replay: a cuscope capture's
     * graph owns it, or, captured outside cuscope, the process keeps it. */
    bool kept = false;
    CUS_TRY(cus_capture_adopt_memory_(stream, call, &kept, __func__));
    if (!kept)
        CUS_TRY(check_foreign_capture(stream, call, &kept));
    call->in_graph = kept;
    CUresult r = cus_drv_.cuLaunchHostFunc_(stream->handle, cus_stream_host_trampoline_, call);
    if (!r || kept)
        call = NULL; /* queued (the trampoline frees it), or kept as above */
    return cus_switch_check_(&sw, r, "cuLaunchHostFunc");
}

CUS_API cus_status cus_stream_priority(cus_stream *stream, int *priority)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(stream && priority);
    int p = 0;
    CUS_IN_CONTEXT(stream->ctx, "cuStreamGetPriority",
                   cus_drv_.cuStreamGetPriority_(stream->handle, &p));
    *priority = p;
    return CUS_SUCCESS;
}

CUS_API cus_status cus_stream_flags(cus_stream *stream, unsigned int *flags)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(stream && flags);
    unsigned int f = 0;
    CUS_IN_CONTEXT(stream->ctx, "cuStreamGetFlags", cus_drv_.cuStreamGetFlags_(stream->handle, &f));
    *flags = f;
    return CUS_SUCCESS;
}

CUS_API cus_status cus_stream_set_name(cus_stream *stream, const char *name)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(stream && name);
    cus_nvtx_name_stream_(stream->handle, name);
    return CUS_SUCCESS;
}
