/* Events: the cuEvent* entry points. An event's latest record is a position
 * in a stream (captured by cuEventRecord, as the driver captures "the
 * contents of the stream at the time of the call"); the event is complete
 * once that stream executed up to it, and an event never recorded is
 * complete. Timing: when the record operation executes, the event takes the
 * work counter (memory operations, launches and host functions executed since install)
 * as its time stamp; cuEventElapsedTime answers 0.001 ms per unit between the
 * two stamps. An event recorded on a capturing stream only marks the
 * capture's dependency set (fake_graph.c): until its next record outside
 * capture, queries, synchronizations and timing answer
 * CUDA_ERROR_CAPTURED_EVENT. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>

#include "fake_event.h"

static struct CUevent_st **events; /* every event since install, for teardown */
static size_t event_count, event_capacity;

static void event_reset_locked(const cus_fake_config *cfg)
{
    (void)cfg;
    free(events); /* the registry frees the records */
    events = NULL;
    event_count = event_capacity = 0;
}

static bool reserve_event_slot_locked(void)
{
    if (event_count < event_capacity)
        return true;
    size_t cap = event_capacity ? event_capacity * 2 : 32;
    struct CUevent_st **list = realloc(events, cap * sizeof *list);
    if (!list)
        return false;
    events = list;
    event_capacity = cap;
    return true;
}

static CUresult event_arg_locked(CUevent he, bool healthy, struct CUevent_st **out)
{
    fake_handle *h = fake_handle_find_locked((uintptr_t)he);
    if (!h || h->kind != CUS_FAKE_HANDLE_EVENT) {
        fake_misuse_locked("unknown event handle 0x%" PRIxPTR, (uintptr_t)he);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    /* As for streams: an event destroyed with its context answers
     * CUDA_ERROR_CONTEXT_IS_DESTROYED (the H200's answer), one destroyed by
     * cuEventDestroy CUDA_ERROR_INVALID_HANDLE (the H200 crashes:
     * deliberate.txt); both are misuse. */
    struct CUevent_st *e = (struct CUevent_st *)h;
    if (h->state == FAKE_DESTROYED && !e->ctx_destroyed) {
        fake_misuse_locked("event 0x%" PRIxPTR " used after cuEventDestroy", (uintptr_t)he);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    if (h->state == FAKE_DESTROYED || e->ctx->h.state != FAKE_LIVE) {
        fake_misuse_locked("event 0x%" PRIxPTR " used after its context was destroyed",
                           (uintptr_t)he);
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    }
    if (healthy && e->ctx->sticky != CUDA_SUCCESS)
        return e->ctx->sticky;
    *out = e;
    return CUDA_SUCCESS;
}

CUresult fake_event_arg_locked(CUevent he, struct CUevent_st **out)
{
    return event_arg_locked(he, true, out);
}

CUresult fake_event_arg_any_locked(CUevent he, struct CUevent_st **out)
{
    return event_arg_locked(he, false, out);
}

static bool complete_locked(const struct CUevent_st *e)
{
    return !e->recorded || e->stream->executed >= e->pos;
}

static CUresult execute_record_locked(const fake_op *op)
{
    struct CUevent_st *e = op->u.record.event;
    /* Only the latest record stamps (an older one may still be in a queue). */
    if (op->u.record.generation == e->generation) {
        e->stamped = true;
        e->stamp = fake_work_done_locked();
    }
    return CUDA_SUCCESS;
}

static void event_doom_locked(struct CUctx_st *c, unsigned long ticket)
{
    for (size_t i = 0; i < event_count; i++)
        if (events[i]->ctx == c && events[i]->h.state == FAKE_LIVE)
            events[i]->doomed = ticket;
}

static void event_destroy_doomed_locked(struct CUctx_st *c, unsigned long ticket)
{
    (void)c;
    for (size_t i = 0; i < event_count; i++) {
        struct CUevent_st *e = events[i];
        if (e->doomed == ticket && e->h.state == FAKE_LIVE) {
            e->ctx_destroyed = true;
            fake_handle_set_state_locked(&e->h, FAKE_DESTROYED);
        }
    }
}

/* --- the area -------------------------------------------------------------------------------- */

static const fake_op_executor event_executors[] = {
    {.kind = FAKE_OP_RECORD, .execute_locked = execute_record_locked},
};

static const fake_area event_area = {
    .name = "event",
    .reset_order = 20,
    .teardown_order = 10,
    .reset_locked = event_reset_locked,
    .doom_locked = event_doom_locked,
    .destroy_doomed_locked = event_destroy_doomed_locked,
    .executors = event_executors,
    .executor_count = sizeof event_executors / sizeof event_executors[0],
};
FAKE_AREA(event_area)

/* --- entry points ---------------------------------------------------------------------------- */

CUresult CUDAAPI fake_cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
    FAKE_ENTER(cuEventCreate);
    const unsigned int known =
        CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
    if (!phEvent || (Flags & ~known))
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    if ((Flags & CU_EVENT_INTERPROCESS) && !(Flags & CU_EVENT_DISABLE_TIMING))
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    struct CUctx_st *c = NULL;
    CUresult r = fake_current_context_locked(&c);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    struct CUevent_st *e = NULL;
    r = fake_event_new_locked(c, Flags, &e);
    if (r == CUDA_SUCCESS)
        *phEvent = e;
    return fake_leave(r);
}

CUresult fake_event_new_locked(struct CUctx_st *c, unsigned int flags, struct CUevent_st **out)
{
    if (!reserve_event_slot_locked())
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct CUevent_st *e = fake_handle_new_locked(CUS_FAKE_HANDLE_EVENT, sizeof *e, 0);
    if (!e)
        return CUDA_ERROR_OUT_OF_MEMORY;
    e->ctx = c;
    e->flags = flags;
    events[event_count++] = e;
    *out = e;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuEventRecord(CUevent hEvent, CUstream hStream)
{
    FAKE_ENTER(cuEventRecord);
    struct CUevent_st *e = NULL;
    CUresult r = fake_event_arg_locked(hEvent, &e);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    struct CUstream_st *s = NULL;
    r = fake_stream_arg_locked(hStream, &s);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (s->ctx != e->ctx) /* documented: "must be from the same context" */
        return fake_leave(CUDA_ERROR_INVALID_HANDLE);
    return fake_leave(fake_event_record_locked(e, s));
}

CUresult fake_event_record_locked(struct CUevent_st *e, struct CUstream_st *s)
{
    if (s->capture) /* a fork or join point, not an operation */
        return fake_capture_ops->record_locked(s, e);
    return fake_event_record_after_locked(e, s, NULL, 0);
}

CUresult fake_event_record_after_locked(struct CUevent_st *e, struct CUstream_st *s,
                                        const fake_dep *deps, size_t ndeps)
{
    fake_op op = {.kind = FAKE_OP_RECORD, .u.record = {e, e->generation + 1}};
    CUresult r = fake_stream_enqueue_locked(s, &op, deps, ndeps);
    if (r != CUDA_SUCCESS)
        return r;
    e->capture_id = 0;
    e->generation++;
    e->recorded = true;
    e->stream = s;
    e->pos = s->enqueued;
    e->stamped = false;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuEventSynchronize(CUevent hEvent)
{
    FAKE_ENTER(cuEventSynchronize);
    /* Poisoned or not: it runs up to the record, and reports a kernel's
     * fault (from before, or from the work it ran) after. */
    struct CUevent_st *e = NULL;
    CUresult r = fake_event_arg_any_locked(hEvent, &e);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (e->capture_id)
        return fake_leave(CUDA_ERROR_CAPTURED_EVENT);
    /* A wait outside the capture: as unsafe as cuStreamSynchronize (an
     * H200, test/probes/probes.c: release-event-record-sync-*). */
    if (fake_unsafe_call_refused_locked())
        return fake_leave(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    if (e->recorded)
        fake_stream_run_to_locked(e->stream, e->pos);
    return fake_leave(e->ctx->sticky);
}

CUresult CUDAAPI fake_cuEventQuery(CUevent hEvent)
{
    FAKE_ENTER(cuEventQuery);
    struct CUevent_st *e = NULL;
    CUresult r = fake_event_arg_locked(hEvent, &e);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (e->capture_id)
        return fake_leave(CUDA_ERROR_CAPTURED_EVENT);
    if (!e->recorded)
        return fake_leave(CUDA_SUCCESS);
    r = fake_stream_query_locked(e->stream, e->pos);
    /* A kernel the query ran may have poisoned the context. */
    return fake_leave(e->ctx->sticky != CUDA_SUCCESS ? e->ctx->sticky : r);
}

/* Both variants: cuEventElapsedTime_v2 (12.8) only changed the resolution the
 * driver promises. Runs nothing. */
static CUresult elapsed_locked(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    struct CUevent_st *a = NULL, *b = NULL;
    CUresult r = fake_event_arg_locked(hStart, &a);
    if (r == CUDA_SUCCESS)
        r = fake_event_arg_locked(hEnd, &b);
    if (r != CUDA_SUCCESS)
        return r;
    if (!pMilliseconds)
        return CUDA_ERROR_INVALID_VALUE;
    if (a->capture_id || b->capture_id)
        return CUDA_ERROR_CAPTURED_EVENT;
    if ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!a->recorded || !b->recorded || a->ctx != b->ctx)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!complete_locked(a) || !complete_locked(b))
        return CUDA_ERROR_NOT_READY;
    /* Complete means the latest record executed, so both are stamped. */
    int64_t units = (int64_t)b->stamp - (int64_t)a->stamp;
    *pMilliseconds = (float)((double)units * 0.001);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    FAKE_ENTER(cuEventElapsedTime);
    return fake_leave(elapsed_locked(pMilliseconds, hStart, hEnd));
}

#ifdef FAKE_HAVE_12080_ENTRIES
CUresult CUDAAPI fake_cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    FAKE_ENTER(cuEventElapsedTime_v2);
    return fake_leave(elapsed_locked(pMilliseconds, hStart, hEnd));
}
#endif

CUresult CUDAAPI fake_cuEventDestroy(CUevent hEvent)
{
    FAKE_ENTER(cuEventDestroy);
    fake_handle *h = fake_handle_find_locked((uintptr_t)hEvent);
    if (h && h->kind == CUS_FAKE_HANDLE_EVENT && h->state == FAKE_DESTROYED &&
        !((struct CUevent_st *)h)->ctx_destroyed) {
        fake_misuse_locked("double destroy of event 0x%" PRIxPTR, (uintptr_t)hEvent);
        return fake_leave(CUDA_ERROR_INVALID_HANDLE);
    }
    /* An event of a poisoned context answers its sticky error, as on the
     * H200: it goes with its context. */
    struct CUevent_st *e = NULL;
    CUresult r = fake_event_arg_locked(hEvent, &e);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    /* A record still queued stays harmless: the record is never freed. */
    fake_handle_set_state_locked(&e->h, FAKE_DESTROYED);
    return fake_leave(CUDA_SUCCESS);
}

/* cuStreamWaitEvent: a stream entry point, here because it is about an event. */
CUresult CUDAAPI fake_cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
    FAKE_ENTER(cuStreamWaitEvent);
    struct CUstream_st *s = NULL;
    CUresult r = fake_stream_arg_locked(hStream, &s);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    struct CUevent_st *e = NULL;
    r = fake_event_arg_locked(hEvent, &e);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (Flags & ~(unsigned int)CU_EVENT_WAIT_EXTERNAL)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    /* A fork or join of a capture, or an error a capture causes. */
    if (fake_captures_active || e->capture_id) {
        bool handled = false;
        r = fake_capture_ops->wait_locked(s, e, Flags, &handled);
        if (handled)
            return fake_leave(r);
    }
    /* The record as of now; an event never recorded (or already complete)
     * gives nothing to wait for. The event may be of another context. */
    if (!e->recorded || e->stream->executed >= e->pos)
        return fake_leave(CUDA_SUCCESS);
    fake_op op = {.kind = FAKE_OP_WAIT};
    fake_dep d = {e->stream, e->pos};
    return fake_leave(fake_stream_enqueue_locked(s, &op, &d, 1));
}
