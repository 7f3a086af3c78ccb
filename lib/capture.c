/* Stream capture: the captures cuscope began (capture records), what each
 * keeps alive for the graph it will make (keep lists, filled by the keep and
 * adopt functions that the object files call as they queue work on a
 * stream), the capture guard's begin, end and abandon, and the count of open
 * captures, while which releases are deferred (object.c) and run at the last
 * one's end. The end hands its keep list to the graph it makes (graph.c). */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void cus_keep_list_release_(keep_list *k)
{
    for (size_t i = 0; i < k->count; i++)
        k->items[i].release(k->items[i].obj);
    free(k->items);
    k->items = NULL;
    k->count = k->capacity = 0;
}

/* An object already kept is not kept twice: a graph replaying one buffer a
 * thousand times holds it once. */
static bool keep_list_has(const keep_list *k, const void *obj)
{
    for (size_t i = k->count; i-- > 0;)
        if (k->items[i].obj == obj)
            return true;
    return false;
}

/* --- the captures cuscope began ------------------------------------------- */

typedef struct capture_record {
    struct capture_record *next;
    cuuint64_t id;
    cus_stream *stream;
    keep_list keep;
    bool out_of_memory;  /* a keep failed: the end reports it */
    CUresult keep_error; /* a stream's capture could not be read: the end reports it */
} capture_record;

static pthread_mutex_t captures_lock = PTHREAD_MUTEX_INITIALIZER;
static capture_record *captures;

static capture_record *record_take_locked(cus_stream *stream)
{
    for (capture_record **p = &captures; *p; p = &(*p)->next)
        if ((*p)->stream == stream) {
            capture_record *r = *p;
            *p = r->next;
            return r;
        }
    return NULL;
}

/* Whether a capture cuscope began is open on stream itself (not joined). */
static bool began_capture(const cus_stream *stream)
{
    bool found = false;
    pthread_mutex_lock(&captures_lock);
    for (capture_record *r = captures; r && !found; r = r->next)
        found = r->stream == stream;
    pthread_mutex_unlock(&captures_lock);
    return found;
}

/* What keep_in_capture() did. */
typedef enum {
    KEEP_DONE,         /* kept with the capture's graph */
    KEEP_NOT_CAPTURED, /* no cuscope capture has the stream */
    KEEP_OUT_OF_MEMORY,
    KEEP_QUERY_FAILED, /* *query: the driver's error; every open capture fails its end */
} keep_outcome;

static keep_outcome keep_in_capture(cus_stream *stream, void *obj, void *(*ref)(void *),
                                    cus_release_fn_ release, CUresult *query)
{
    keep_outcome outcome = KEEP_NOT_CAPTURED;
    if (!stream || !obj)
        return KEEP_NOT_CAPTURED;
    /* The stream a capture began on is found without asking the driver. */
    bool origin = began_capture(stream);
    cuuint64_t id = 0;
    if (!origin) {
        /* It may have joined a capture begun on another stream (through an
         * event): the capture's id finds the record. */
        CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
        CUresult q = cus_drv_.cuStreamGetCaptureInfo_(stream->handle, &status, &id);
        if (q) {
            /* Whether the work is being captured is unknown, so whether it
             * dangles at replay is too: every open capture fails its end. */
            pthread_mutex_lock(&captures_lock);
            for (capture_record *r = captures; r; r = r->next)
                if (!r->keep_error)
                    r->keep_error = q;
            pthread_mutex_unlock(&captures_lock);
            *query = q;
            return KEEP_QUERY_FAILED;
        }
        if (status != CU_STREAM_CAPTURE_STATUS_ACTIVE)
            return KEEP_NOT_CAPTURED;
    }
    pthread_mutex_lock(&captures_lock);
    for (capture_record *r = captures; r; r = r->next) {
        if (origin ? r->stream != stream : r->id != id)
            continue;
        keep_list *k = &r->keep;
        if (keep_list_has(k, obj)) {
            outcome = KEEP_DONE;
            break;
        }
        if (k->count == k->capacity) {
            size_t want = k->capacity ? k->capacity * 2 : 8;
            keep_entry *grown = cus_realloc_(k->items, want * sizeof *grown);
            if (!grown) {
                r->out_of_memory = true;
                outcome = KEEP_OUT_OF_MEMORY;
                break;
            }
            k->items = grown;
            k->capacity = want;
        }
        k->items[k->count++] = (keep_entry){ref(obj), release};
        outcome = KEEP_DONE;
        break;
    }
    pthread_mutex_unlock(&captures_lock);
    return outcome;
}

static bool keep(cus_stream *stream, void *obj, void *(*ref)(void *), cus_release_fn_ release)
{
    CUresult query;
    return keep_in_capture(stream, obj, ref, release, &query) == KEEP_DONE;
}

static cus_status refuse_on(cus_stream *stream, const char *function, const char *what)
{
    bool origin = began_capture(stream);
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    if (!origin) {
        cuuint64_t id;
        CUresult r = cus_drv_.cuStreamGetCaptureInfo_(stream->handle, &status, &id);
        if (r)
            return cus_context_driver_fail_(stream->ctx, r, function, "cuStreamGetCaptureInfo");
    }
    if (origin || status != CU_STREAM_CAPTURE_STATUS_NONE)
        return cus_fail_(CUS_ERROR_NOT_SUPPORTED, function, NULL,
                         "%s on a stream being captured: cuscope does not make graph "
                         "allocations (allocate before the capture)", what);
    return CUS_SUCCESS;
}

static void *ref_identity(void *p) { return p; }

static cus_status adopt_memory(cus_stream *stream, void *mem, bool *adopted,
                               const char *function)
{
    *adopted = false;
    CUresult query = CUDA_SUCCESS;
    switch (keep_in_capture(stream, mem, ref_identity, free, &query)) {
    case KEEP_DONE:
        *adopted = true;
        return CUS_SUCCESS;
    case KEEP_NOT_CAPTURED:
        return CUS_SUCCESS;
    case KEEP_OUT_OF_MEMORY:
        return cus_fail_(CUS_ERROR_OUT_OF_HOST_MEMORY, function, NULL,
                         "keeping a record alive with the graph being captured (the capture's "
                         "end will fail)");
    case KEEP_QUERY_FAILED:
        break;
    }
    return cus_context_driver_fail_(stream->ctx, query, function, "cuStreamGetCaptureInfo");
}

__attribute__((constructor)) static void register_capture_ops(void)
{
    cus_capture_ops = (cus_capture_ops_){keep, refuse_on, adopt_memory};
}

/* Ends a capture that cus_capture_begin could not track; what cannot be
 * undone goes to the destroy handler. */
static void drop_begun_capture(cus_stream *stream)
{
    CUgraph dropped = NULL;
    CUresult r = cus_drv_.cuStreamEndCapture_(stream->handle, &dropped);
    if (r && r != CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)
        cus_destroy_error_((cus_status)r, "cus_capture_begin", "cuStreamEndCapture",
                           "ending a capture it could not track");
    if (dropped && (r = cus_drv_.cuGraphDestroy_(dropped)))
        cus_destroy_error_((cus_status)r, "cus_capture_begin", "cuGraphDestroy",
                           "discarding a capture it could not track");
}

CUS_API cus_capture_guard cus_capture_begin(cus_stream *stream, CUstreamCaptureMode mode)
{
    cus_capture_guard g = {NULL, CUS_SUCCESS, false};
    if (CUS_UNLIKELY(cus_is_forked_())) {
        g.status = cus_refuse_call_(__func__);
        return g;
    }
    if (CUS_UNLIKELY(cus_in_host_fn_)) {
        g.status = CUS_FAIL(CUS_ERROR_IN_HOST_FUNCTION, NULL, "capture inside a host function");
        return g;
    }
    if (!stream || stream->kind == CUS_STREAM_LEGACY_DEFAULT) {
        g.status = CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,
                            stream ? "the legacy default stream cannot be captured"
                                   : "no stream");
        return g;
    }
    cus_context *ctx = stream->ctx;
    if (atomic_load_explicit(&ctx->poison, memory_order_relaxed)) {
        g.status = cus_context_poisoned_fail_(ctx, __func__);
        return g;
    }
    cus_release_deferred_if_any_();
    cus_autofree capture_record *rec = cus_calloc_(1, sizeof *rec);
    if (!rec) {
        g.status = CUS_FAIL(CUS_ERROR_OUT_OF_HOST_MEMORY, NULL, "allocating a capture");
        return g;
    }
    {
        CUS_SWITCH(sw, ctx);
        if ((g.status = sw_status))
            return g;
        g.status = cus_switch_check_(
            &sw, cus_drv_.cuStreamBeginCapture_(stream->handle, mode), "cuStreamBeginCapture");
        if (g.status)
            return g;
        CUstreamCaptureStatus status;
        g.status = cus_switch_check_(
            &sw, cus_drv_.cuStreamGetCaptureInfo_(stream->handle, &status, &rec->id),
            "cuStreamGetCaptureInfo");
        if (g.status) {
            drop_begun_capture(stream); /* cannot track it: do not leave it open */
            return g;
        }
    }
    rec->stream = stream;
    pthread_mutex_lock(&captures_lock);
    rec->next = captures;
    captures = cus_steal(&rec);
    atomic_fetch_add_explicit(&cus_captures_active_, 1, memory_order_relaxed);
    pthread_mutex_unlock(&captures_lock);
    g.stream = cus_stream_ref(stream);
    g.open = true;
    return g;
}

/* Ends the driver's capture; *graph may be NULL. *over says whether the
 * capture is over: ended, invalidated (which ends it), or no longer there.
 * Making the context current failing, a capture ended from the wrong thread,
 * or an end that failed with the stream still capturing leave it open. The
 * record is taken out when the capture is over, or with `always`. */
static CUresult end_capture(cus_capture_guard *g, CUgraph *graph, capture_record **rec,
                            const char **call, bool always, bool *over, const char *function)
{
    cus_context *ctx = g->stream->ctx;
    *over = false;
    *rec = NULL;
    CUresult r;
    {
        /* No poison check: a capture must be able to end on a dead context,
         * or it would count as open for ever. */
        CUS_SWITCH_HANDLE_AS(sw, ctx->handle, function);
        *call = "cuCtxPushCurrent";
        r = (CUresult)sw_status;
        if (!r) {
            *call = "cuStreamEndCapture";
            r = cus_drv_.cuStreamEndCapture_(g->stream->handle, graph);
            if (!r || r == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) {
                *over = true;
            } else if (r != CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD) {
                CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
                *over = cus_drv_.cuStreamIsCapturing_(g->stream->handle, &status) ==
                            CUDA_SUCCESS &&
                        status == CU_STREAM_CAPTURE_STATUS_NONE;
            }
        }
    }
    if (*over || always) {
        pthread_mutex_lock(&captures_lock);
        *rec = record_take_locked(g->stream);
        pthread_mutex_unlock(&captures_lock);
        if (*rec && atomic_fetch_sub_explicit(&cus_captures_active_, 1, memory_order_relaxed) == 1)
            (void)cus_release_deferred(); /* what was released while captures were open */
    }
    return r;
}

static void guard_close(cus_capture_guard *g)
{
    g->open = false;
    g->stream = cus_stream_unref(g->stream);
}

/* A record taken off the list, at the end of cus_capture_end's scope: the
 * references it kept are released, unless they moved to the graph. */
static void record_discard(capture_record **rec)
{
    if (*rec) {
        cus_keep_list_release_(&(*rec)->keep);
        free(*rec);
    }
}

CUS_API cus_status cus_capture_end(cus_capture_guard *guard, cus_graph **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(guard && out);
    if (!guard->open)
        return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL, "the capture is not open");
    cus_context *ctx = guard->stream->ctx;
    cus_autofree cus_graph *g = cus_calloc_(1, sizeof *g);
    CUgraph h = NULL;
    __attribute__((cleanup(record_discard))) capture_record *rec = NULL;
    const char *call;
    bool over;
    CUresult r = end_capture(guard, &h, &rec, &call, false, &over, __func__);
    cus_status st = CUS_SUCCESS;
    if (r)
        st = cus_context_driver_fail_(ctx, r, __func__, call);
    else if (rec && rec->keep_error)
        st = cus_fail_((cus_status)rec->keep_error, __func__, "cuStreamGetCaptureInfo",
                       "a stream's capture could not be read while work was captured, so what "
                       "the graph uses could not be kept alive: the graph is discarded");
    else if (!g || (rec && rec->out_of_memory))
        st = CUS_FAIL(CUS_ERROR_OUT_OF_HOST_MEMORY, NULL,
                      "keeping the captured objects alive: the graph is discarded");
    if (st) {
        if (rec && rec->out_of_memory && st != CUS_ERROR_OUT_OF_HOST_MEMORY)
            cus_host_alloc_absorbed_(); /* the graph is discarded for another error */
        if (h) {
            CUresult rd = cus_drv_.cuGraphDestroy_(h);
            if (rd)
                cus_destroy_error_((cus_status)rd, __func__, "cuGraphDestroy",
                                   "discarding a captured graph");
        }
        if (over)
            guard_close(guard); /* else still open: the scope's exit tries again */
        return st;
    }
    cus_refcount_init_(&g->refs);
    pthread_mutex_init(&g->lock, NULL);
    g->handle = h;
    g->ctx = cus_context_ref(ctx);
    if (rec) {
        g->keep = rec->keep; /* the references move to the graph */
        rec->keep = (keep_list){0};
    }
    guard_close(guard);
    *out = cus_steal(&g);
    return CUS_SUCCESS;
}

CUS_API void cus_capture_abandon(cus_capture_guard *guard)
{
    if (!guard || !guard->open)
        return;
    if (CUS_UNLIKELY(cus_is_forked_())) {
        /* A capture the parent opened: the child cannot end it. Its record
         * stays with the parent's list; the guard lets go of its stream. */
        guard_close(guard);
        return;
    }
    cus_error_save saved;
    cus_error_save_(&saved); /* runs during early returns: keep their error */
    CUgraph h = NULL;
    capture_record *rec = NULL;
    const char *call;
    bool over;
    CUresult r = end_capture(guard, &h, &rec, &call, false, &over, __func__);
    /* An invalidated capture is what error paths usually leave: not news. */
    if (r && r != CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)
        cus_destroy_error_((cus_status)r, "cus_capture_abandon", call, "%s",
                           over ? "ending an abandoned capture"
                                : "ending an abandoned capture (trying once more)");
    if (!over) { /* once more, then give up on it */
        r = end_capture(guard, &h, &rec, &call, true, &over, __func__);
        if (r && r != CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)
            cus_destroy_error_((cus_status)r, "cus_capture_abandon", call, "%s",
                               over ? "ending an abandoned capture"
                                    : "ending an abandoned capture: the stream may still capture");
    }
    if (h) {
        CUresult rd = cus_drv_.cuGraphDestroy_(h);
        if (rd)
            cus_destroy_error_((cus_status)rd, "cus_capture_abandon", "cuGraphDestroy",
                               "discarding an abandoned capture's graph");
    }
    if (rec && rec->out_of_memory)
        cus_host_alloc_absorbed_(); /* nothing was to come of the capture */
    if (rec)
        cus_keep_list_release_(&rec->keep);
    free(rec);
    guard_close(guard);
    cus_error_restore_(&saved);
}

CUS_API cus_status cus_stream_is_capturing(cus_stream *stream, bool *capturing)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(stream && capturing);
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    CUS_IN_CONTEXT(stream->ctx, "cuStreamIsCapturing",
                   cus_drv_.cuStreamIsCapturing_(stream->handle, &status));
    *capturing = status != CU_STREAM_CAPTURE_STATUS_NONE;
    return CUS_SUCCESS;
}

/* fork.c's child hook: a parent thread may have held the lock at fork time.
 * In a forked child no capture can end (cus_capture_end refuses), so none
 * counts as open: releases run at once (host memory only) instead of waiting
 * on a list that nothing would run. */
static void atfork_child(bool forked)
{
    pthread_mutex_init(&captures_lock, NULL);
    if (forked)
        atomic_store_explicit(&cus_captures_active_, 0, memory_order_relaxed);
}

__attribute__((constructor)) static void register_atfork_child(void)
{
    cus_fork_register_child_hook_(atfork_child);
}
