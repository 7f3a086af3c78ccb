/* Events.
 *
 * Only cuEventCreate needs the context current (it makes the event in the
 * current one). The calls on an event (destroy, record, synchronize, query,
 * elapsed time) find its context through the event: the H200 answers the same
 * with none current or another one (test/rules/expected.txt), and the fake
 * does too. So they make no switch: one driver call each, wherever they run,
 * but for a record on a default stream (below). The poison check stays in
 * front of each. */
#include <stdlib.h>

#include "cuscope/event.h"
#include "internal.h"

static CUresult destroy_event_call(void *h)
{
    return cus_drv_.cuEventDestroy_((CUevent)h);
}

static void event_destroy(cus_event *e)
{
    if (e->handle)
        cus_destroy_call_(e->ctx, "cus_event_unref", "cuEventDestroy", destroy_event_call,
                          e->handle, "an event");
    cus_context_unref(e->ctx);
    cus_record_free_(e, sizeof *e);
}

CUS_DEFINE_REF_UNREF(cus_event, event_destroy)

/* One driver call on an event of ctx, with no switch (see the top): its
 * failure is recorded (a sticky status poisons ctx) and returned from the
 * enclosing function. */
#define EVENT_CALL(ctx, name, call)                                            \
    do {                                                                       \
        CUS_CHECK_POISON(ctx);                                                 \
        CUresult r_ = (call);                                                  \
        if (CUS_UNLIKELY(r_))                                                  \
            return cus_context_driver_fail_((ctx), r_, __func__, (name));      \
    } while (0)

CUS_API cus_status cus_event_create(cus_context *ctx, unsigned int flags, cus_event **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(ctx && out);
    cus_release_deferred_if_any_();
    cus_autofree cus_event *e = cus_record_new_(sizeof *e);
    if (!e)
        return CUS_FAIL(CUS_ERROR_OUT_OF_HOST_MEMORY, NULL, "allocating an event");
    CUevent h = NULL;
    CUS_IN_CONTEXT(ctx, "cuEventCreate", cus_drv_.cuEventCreate_(&h, flags));
    cus_refcount_init_(&e->refs);
    e->handle = h;
    e->ctx = cus_context_ref(ctx);
    e->flags = flags;
    *out = cus_steal(&e);
    return CUS_SUCCESS;
}

cus_status cus_event_open_(cus_context *ctx, unsigned int flags, const char *driver_call,
                           CUresult (*open)(CUevent *out, const void *arg), const void *arg,
                           cus_event **out, const char *function)
{
    cus_release_deferred_if_any_();
    cus_autofree cus_event *e = cus_record_new_(sizeof *e);
    if (!e)
        return cus_fail_(CUS_ERROR_OUT_OF_HOST_MEMORY, function, NULL, "allocating an event");
    CUevent h = NULL;
    CUS_IN_CONTEXT_AS(function, ctx, driver_call, open(&h, arg));
    cus_refcount_init_(&e->refs);
    e->handle = h;
    e->ctx = cus_context_ref(ctx);
    e->flags = flags;
    *out = cus_steal(&e);
    return CUS_SUCCESS;
}

CUS_API CUevent cus_event_handle(const cus_event *event)
{
    return event ? event->handle : NULL;
}

CUS_API cus_context *cus_event_context(const cus_event *event)
{
    return event ? event->ctx : NULL;
}

CUS_API cus_status cus_event_record(cus_event *event, cus_stream *stream)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(event && stream);
    if (cus_context_handle(stream->ctx) != cus_context_handle(event->ctx))
        return CUS_FAIL(CUS_ERROR_CONTEXT_MISMATCH, NULL,
                        "event of context %p recorded on a stream of context %p",
                        (void *)cus_context_handle(event->ctx),
                        (void *)cus_context_handle(stream->ctx));
    CUS_TRY(cus_capture_keep_event_(stream, event, __func__));
    /* A default stream's handle names no context: the driver takes the
     * current one's, so a record on it (or on a wrapped handle, which may be
     * one) switches. */
    if (CUS_LIKELY(stream->kind == CUS_STREAM_OWNED))
        EVENT_CALL(event->ctx, "cuEventRecord",
                   cus_drv_.cuEventRecord_(event->handle, stream->handle));
    else
        CUS_IN_CONTEXT(event->ctx, "cuEventRecord",
                       cus_drv_.cuEventRecord_(event->handle, stream->handle));
    return CUS_SUCCESS;
}

CUS_API cus_status cus_event_synchronize(cus_event *event)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(event);
    EVENT_CALL(event->ctx, "cuEventSynchronize", cus_drv_.cuEventSynchronize_(event->handle));
    cus_release_deferred_if_any_();
    return CUS_SUCCESS;
}

CUS_API cus_status cus_event_query(cus_event *event, bool *done)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(event && done);
    CUresult q = CUDA_SUCCESS;
    EVENT_CALL(event->ctx, "cuEventQuery",
               ((q = cus_drv_.cuEventQuery_(event->handle)) == CUDA_ERROR_NOT_READY
                    ? CUDA_SUCCESS
                    : q));
    *done = q == CUDA_SUCCESS;
    return CUS_SUCCESS;
}

CUS_API cus_status cus_event_elapsed_ms(cus_event *start, cus_event *end, float *ms)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(start && end && ms);
    if (cus_context_handle(start->ctx) != cus_context_handle(end->ctx))
        return CUS_FAIL(CUS_ERROR_CONTEXT_MISMATCH, NULL,
                        "events of two contexts (%p and %p) have no common clock",
                        (void *)cus_context_handle(start->ctx),
                        (void *)cus_context_handle(end->ctx));
    float t = 0;
    EVENT_CALL(start->ctx, "cuEventElapsedTime",
               cus_drv_.cuEventElapsedTime_(&t, start->handle, end->handle));
    *ms = t;
    return CUS_SUCCESS;
}

CUS_DEFINE_CAPTURE_KEEP(event, cus_event)

CUS_API cus_status cus_event_set_name(cus_event *event, const char *name)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(event && name);
    cus_nvtx_name_event_(event->handle, name);
    return CUS_SUCCESS;
}
