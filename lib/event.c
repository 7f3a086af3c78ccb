/* Events. */
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
        cus_destroy_in_context_(e->ctx, "cus_event_unref", "cuEventDestroy", destroy_event_call,
                                e->handle, "an event");
    cus_context_unref(e->ctx);
    free(e);
}

CUS_DEFINE_REF_UNREF(cus_event, event_destroy)

CUS_API cus_status cus_event_create(cus_context *ctx, unsigned int flags, cus_event **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(ctx && out);
    cus_release_deferred_if_any_();
    cus_autofree cus_event *e = cus_calloc_(1, sizeof *e);
    if (!e)
        return CUS_FAIL(CUS_ERROR_OUT_OF_HOST_MEMORY, NULL, "allocating an event");
    CUevent h = NULL;
    CUS_IN_CONTEXT(ctx, "cuEventCreate", cus_drv_.cuEventCreate_(&h, flags));
    cus_refcount_init_(&e->refs);
    e->handle = h;
    e->ctx = cus_context_ref(ctx);
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
    CUS_IN_CONTEXT(event->ctx, "cuEventRecord",
                   cus_drv_.cuEventRecord_(event->handle, stream->handle));
    return CUS_SUCCESS;
}

CUS_API cus_status cus_event_synchronize(cus_event *event)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(event);
    CUS_IN_CONTEXT(event->ctx, "cuEventSynchronize", cus_drv_.cuEventSynchronize_(event->handle));
    cus_release_deferred_if_any_();
    return CUS_SUCCESS;
}

CUS_API cus_status cus_event_query(cus_event *event, bool *done)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(event && done);
    CUresult q = CUDA_SUCCESS;
    CUS_IN_CONTEXT(event->ctx, "cuEventQuery",
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
    CUS_IN_CONTEXT(start->ctx, "cuEventElapsedTime",
                   cus_drv_.cuEventElapsedTime_(&t, start->handle, end->handle));
    *ms = t;
    return CUS_SUCCESS;
}

CUS_DEFINE_CAPTURE_KEEP(event, cus_event)
