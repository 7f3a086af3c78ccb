/* Executable graphs (cus_graph_exec): instantiate, launch, upload, update;
 * the graphs an update retired, each kept until the replays that may use it
 * have completed, and the host memory of graphs whose replays could not be
 * waited for (orphans). Per-node updates (graph_nodes.c makes them through
 * cus_graph_exec_node_update_) keep what a node uses now, and retire what it
 * used before as an update retires a graph. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* A stream the exec was launched on since its graph became current. */
typedef struct launched_stream {
    cus_stream *stream; /* a reference; NULL: the legacy default stream */
    pthread_t thread;   /* a per-thread default stream: the launching thread */
} launched_stream;

/* What a node updated by hand uses now (the objects its parameters name):
 * its graph keeps what the node used when it was added. */
typedef struct node_keep {
    CUgraphNode node;
    keep_list keep;
} node_keep;

/* A graph an update replaced while replays of it may still be queued: kept
 * until the fences, events the update recorded on each stream it was
 * replayed on, have all completed. A per-node update retires the objects
 * the node used (keep) the same way, with no graph. */
typedef struct retired_graph {
    cus_graph *graph; /* a reference; NULL for a node's objects */
    keep_list keep;   /* a node's objects an update replaced */
    node_keep *nodes; /* the replaced graph's updated nodes (malloc'd) */
    size_t nnodes;
    size_t nfences;   /* 1 or more */
    size_t done;      /* fences found complete so far (they are queried in order) */
    CUevent one;      /* the fence when there is one */
    CUevent *many;    /* the fences when there are more (malloc'd) */
} retired_graph;

static CUevent *fences_of(retired_graph *r)
{
    return r->nfences == 1 ? &r->one : r->many;
}

/* Streams tracked without an allocation: a program launches an exec on one
 * or two streams. */
#define INLINE_STREAMS 4

struct cus_graph_exec {
    cus_refcount refs;
    CUgraphExec handle;
    CUcontext ctx_handle; /* never changes: read without the lock */
    cus_context *ctx;     /* the current graph's (it holds it); under the lock */
    /* The driver does not synchronize an executable graph: cuscope
     * serializes its launches, uploads and updates, and everything below. */
    pthread_mutex_t lock;
    cus_graph *graph; /* a reference: what the replays use stays alive */
    /* Since graph became current: whether the exec was launched, on which
     * streams, and whether on a stream an update cannot fence (a wrapped
     * one, whose owner may have destroyed it by then; or when the list
     * could not grow). */
    bool launched, unfenced;
    launched_stream *streams; /* inline_streams, or malloc'd */
    size_t nstreams, stream_capacity, last_stream;
    launched_stream inline_streams[INLINE_STREAMS];
    /* Graphs an update replaced whose replays may still be queued, oldest
     * first; released as their fences complete. */
    retired_graph *retired;
    size_t nretired, retired_capacity;
    /* The nodes of graph updated by hand, with what each uses now. */
    node_keep *nodes;
    size_t nnodes, nodes_capacity;
};

static CUresult synchronize_call(void *unused)
{
    (void)unused;
    return cus_drv_.cuCtxSynchronize_();
}

static bool poisoned(const cus_context *ctx)
{
    return atomic_load_explicit(&ctx->poison, memory_order_relaxed) != 0;
}

/* Host memory that graphs adopted (host-function records) and that replays
 * nobody could wait for may still read: kept, reachable, until the process
 * ends. A few dozen bytes per host function, and only after a failed wait. */
static pthread_mutex_t orphans_lock = PTHREAD_MUTEX_INITIALIZER;
static keep_list orphans;

static void orphan_adopted(keep_list *k)
{
    pthread_mutex_lock(&orphans_lock);
    size_t kept = 0;
    for (size_t i = 0; i < k->count; i++) {
        if (k->items[i].release != free) {
            k->items[kept++] = k->items[i];
            continue;
        }
        if (orphans.count == orphans.capacity) {
            size_t want = orphans.capacity ? orphans.capacity * 2 : 16;
            keep_entry *grown = cus_realloc_(orphans.items, want * sizeof *grown);
            if (!grown) {
                cus_host_alloc_absorbed_();
                continue; /* lost, never freed: still no use after free */
            }
            orphans.items = grown;
            orphans.capacity = want;
        }
        orphans.items[orphans.count++] = k->items[i];
    }
    k->count = kept;
    pthread_mutex_unlock(&orphans_lock);
}

static CUresult exec_destroy_call(void *h)
{
    return cus_drv_.cuGraphExecDestroy_((CUgraphExec)h);
}

/* --- fences and retired graphs ------------------------------------------------------------------
 * The driver calls here need no current context (cuEventQuery and
 * cuEventDestroy take the event's: test/rules/expected.txt). Failures go to
 * the destroy handler naming `function`, the public function that released:
 * a release cannot fail the call it happens in. */

static void fence_destroy(CUevent ev, const char *function)
{
    if (cus_is_forked_())
        return; /* the parent's: host memory only */
    CUresult r = cus_drv_.cuEventDestroy_(ev);
    if (r)
        cus_destroy_error_((cus_status)r, function, "cuEventDestroy",
                           "releasing the fence of a graph an update replaced (event %p)",
                           (void *)ev);
}

/* Destroys n fences (but on a poisoned context, whose events go with it). */
static void fences_destroy(cus_context *ctx, CUevent *fences, size_t n, const char *function)
{
    if (poisoned(ctx))
        return;
    for (size_t i = 0; i < n; i++)
        fence_destroy(fences[i], function);
}

/* Whether every fence of r has completed: each is queried once it is the
 * first not known complete. A failed query counts as not complete (a
 * sticky status poisons the context, as after any call). */
static bool retired_complete(cus_context *ctx, retired_graph *r, const char *function)
{
    CUevent *fences = fences_of(r);
    while (r->done < r->nfences) {
        CUresult q = cus_drv_.cuEventQuery_(fences[r->done]);
        if (q == CUDA_ERROR_NOT_READY)
            return false;
        if (q) {
            if (cus_status_is_sticky((cus_status)q)) {
                int expected = 0;
                atomic_compare_exchange_strong(&ctx->poison, &expected, (int)q);
            }
            cus_destroy_error_((cus_status)q, function, "cuEventQuery",
                               "releasing the graph an update replaced: its replays may still "
                               "run, so it is kept");
            return false;
        }
        r->done++;
    }
    return true;
}

static void node_keeps_release(node_keep *nodes, size_t n)
{
    for (size_t i = 0; i < n; i++)
        cus_keep_list_release_(&nodes[i].keep);
    free(nodes);
}

static void retired_release(cus_context *ctx, retired_graph *r, const char *function)
{
    fences_destroy(ctx, fences_of(r), r->nfences, function);
    free(r->many);
    cus_keep_list_release_(&r->keep);
    node_keeps_release(r->nodes, r->nnodes);
    cus_graph_unref(r->graph);
}

/* Every keep list a retired entry holds goes to the orphans. */
static void retired_orphan(retired_graph *r)
{
    if (r->graph)
        orphan_adopted(&r->graph->keep);
    orphan_adopted(&r->keep);
    for (size_t i = 0; i < r->nnodes; i++)
        orphan_adopted(&r->nodes[i].keep);
}

/* Releases the retired graphs whose replays have completed. every: query
 * them all; else stop at the first not complete (the launch path: at most
 * one query that answers not ready). Nothing on a poisoned context: its
 * queries would only answer the sticky status (the exec's release lets go
 * of them). */
static void prune_locked(cus_graph_exec *e, bool every, const char *function)
{
    if (!e->nretired || poisoned(e->ctx))
        return;
    size_t kept = 0;
    bool stop = false;
    for (size_t i = 0; i < e->nretired; i++) {
        retired_graph *r = &e->retired[i];
        if (!stop && retired_complete(e->ctx, r, function)) {
            retired_release(e->ctx, r, function);
            continue;
        }
        stop = !every;
        e->retired[kept++] = *r;
    }
    e->nretired = kept;
}

/* Releases every retired graph, their replays known complete (or never to
 * be waited for). */
static void release_all_retired(cus_graph_exec *e, const char *function)
{
    for (size_t i = 0; i < e->nretired; i++)
        retired_release(e->ctx, &e->retired[i], function);
    e->nretired = 0;
}

/* Forgets the streams launched on (the graph they replayed is retired or
 * released). */
static void streams_reset(cus_graph_exec *e)
{
    for (size_t i = 0; i < e->nstreams; i++)
        cus_stream_unref(e->streams[i].stream);
    e->nstreams = e->last_stream = 0;
    e->launched = e->unfenced = false;
}

static bool fenceable_locked(const cus_graph_exec *e);

static CUresult stream_synchronize_call(void *h)
{
    return cus_drv_.cuStreamSynchronize_((CUstream)h);
}

/* Waits, in relaxed mode, for each stream the current graph was launched on
 * (the legacy stream, a stream being captured, or no retired graph's fences
 * known: not waited for, false); true when every wait succeeded. */
static bool wait_streams(cus_graph_exec *e)
{
    if (e->nretired || !fenceable_locked(e))
        return false;
    for (size_t i = 0; i < e->nstreams; i++) {
        const cus_stream *s = e->streams[i].stream;
        if (!s || s->kind == CUS_STREAM_LEGACY_DEFAULT ||
            atomic_load_explicit(&s->capture_id, memory_order_acquire))
            return false;
    }
    unsigned long errors = cus_destroy_error_count();
    for (size_t i = 0; i < e->nstreams; i++)
        cus_destroy_in_context_relaxed_(e->ctx, "cus_graph_exec_unref", "cuStreamSynchronize",
                                        stream_synchronize_call, e->streams[i].stream->handle,
                                        "an executable graph (waiting for its replays)");
    return cus_destroy_error_count() == errors;
}

static void exec_destroy(cus_graph_exec *e)
{
    cus_context *ctx = e->ctx;
    /* In a fork() child no replay runs (nor can be waited for): host memory
     * only. */
    bool forked = cus_is_forked_();
    if (!forked)
        prune_locked(e, true, "cus_graph_exec_unref");
    /* Replays may still be queued: what they use must outlive them. A
     * context-wide wait, and only when a replay may still run: the current
     * graph was launched since it became current, or a retired graph's
     * fences have not all completed. Device memory is safe either way (its
     * release waits for the device); host-function records are not, and
     * when the wait fails twice on a context that is not dead they are
     * orphaned rather than freed. */
    if ((e->launched || e->nretired) && !forked) {
        /* While a capture is open in the context its cuCtxSynchronize is
         * refused in every mode and invalidates the capture (an H200's
         * answers, probes.c release-ctx-sync-*): the streams launched on are
         * waited for instead, when they are all there is to wait for; else
         * nothing is waited for, and the host-function records are orphaned
         * below (device memory is safe: its release waits for the device).
         * With none open, capture begins are held off until the wait is
         * over: checking the count alone let another thread begin a capture
         * before the cuCtxSynchronize, which invalidated it. */
        bool capturing = !cus_context_wait_hold_();
        bool waited = capturing && wait_streams(e);
        for (int attempt = 0; attempt < 2 && !waited && !capturing; attempt++) {
            unsigned long errors = cus_destroy_error_count();
            cus_destroy_in_context_relaxed_(ctx, "cus_graph_exec_unref", "cuCtxSynchronize",
                                            synchronize_call, NULL,
                                    attempt ? "an executable graph (waiting for its replays)"
                                            : "an executable graph (waiting for its replays; "
                                              "trying once more)");
            waited = cus_destroy_error_count() == errors || poisoned(ctx);
        }
        if (!capturing)
            cus_context_wait_release_();
        if (!waited) {
            orphan_adopted(&e->graph->keep);
            for (size_t i = 0; i < e->nnodes; i++)
                orphan_adopted(&e->nodes[i].keep);
            for (size_t i = 0; i < e->nretired; i++)
                retired_orphan(&e->retired[i]);
        }
    }
    if (!poisoned(ctx) && !forked) {
        /* Relaxed: a capture open on any thread would refuse it (an H200's
         * answer, test/probes/probes.c) and be invalidated. */
        CUresult r = cus_call_relaxed_(exec_destroy_call, e->handle, "cus_graph_exec_unref");
        if (r)
            cus_destroy_error_((cus_status)r, "cus_graph_exec_unref", "cuGraphExecDestroy",
                               "destroying executable graph %p", (void *)e->handle);
    }
    release_all_retired(e, "cus_graph_exec_unref");
    free(e->retired);
    node_keeps_release(e->nodes, e->nnodes);
    streams_reset(e);
    if (e->streams != e->inline_streams)
        free(e->streams);
    cus_graph_unref(e->graph);
    pthread_mutex_destroy(&e->lock);
    free(e);
}

CUS_DEFINE_REF_UNREF(cus_graph_exec, exec_destroy)

cus_status cus_graph_exec_instantiate_(cus_graph *graph, const char *driver_call,
                                       CUresult (*inst)(CUgraphExec *h, CUgraph g, void *arg),
                                       void *arg, cus_graph_exec **out, const char *function)
{
    if (atomic_load_explicit(&graph->ctx->poison, memory_order_relaxed))
        return cus_context_poisoned_fail_(graph->ctx, function);
    if (graph->parent) /* the driver's body graphs run only inside their node */
        return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL,
                         "invalid argument: graph belongs to a node (the body of a "
                         "conditional node, or a child graph node's own graph); instantiate "
                         "the graph that holds the node");
    cus_release_deferred_if_any_();
    cus_autofree cus_graph_exec *e = cus_calloc_(1, sizeof *e);
    if (!e)
        return cus_fail_(CUS_ERROR_OUT_OF_HOST_MEMORY, function, NULL,
                         "allocating an executable graph");
    CUgraphExec h = NULL;
    {
        CUS_LOCK_SCOPE(&graph->lock);
        CUS_TRY(cus_graph_idle_locked_(graph, function));
        CUS_IN_CONTEXT_AS(function, graph->ctx, driver_call, inst(&h, graph->handle, arg));
    }
    cus_refcount_init_(&e->refs);
    pthread_mutex_init(&e->lock, NULL);
    e->ctx = graph->ctx;
    e->ctx_handle = graph->ctx->handle;
    e->handle = h;
    e->graph = cus_graph_ref(graph);
    e->streams = e->inline_streams;
    e->stream_capacity = INLINE_STREAMS;
    *out = cus_steal(&e);
    return CUS_SUCCESS;
}

static CUresult instantiate_call(CUgraphExec *h, CUgraph g, void *arg)
{
    return cus_drv_.cuGraphInstantiateWithFlags_(h, g, *(const unsigned long long *)arg);
}

CUS_API cus_status cus_graph_instantiate(cus_graph *graph, unsigned long long flags,
                                         cus_graph_exec **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(graph && out);
    return cus_graph_exec_instantiate_(graph, "cuGraphInstantiateWithFlags", instantiate_call,
                                       &flags, out, __func__);
}

CUS_API CUgraphExec cus_graph_exec_handle(const cus_graph_exec *exec)
{
    return exec ? exec->handle : NULL;
}

static cus_status exec_stream(cus_graph_exec *exec, cus_stream *stream, CUstream *hs,
                              const char *function)
{
    if (stream && stream->ctx->handle != exec->ctx_handle)
        return cus_fail_(CUS_ERROR_CONTEXT_MISMATCH, function, NULL,
                         "the stream belongs to context %p, the graph to %p",
                         (void *)stream->ctx->handle, (void *)exec->ctx_handle);
    *hs = stream ? stream->handle : NULL;
    return CUS_SUCCESS;
}

static bool same_stream(const launched_stream *l, const cus_stream *stream, bool per_thread,
                        pthread_t self)
{
    return l->stream == stream && (!per_thread || pthread_equal(l->thread, self));
}

/* Notes that the exec is launched on stream (NULL: the legacy default
 * stream), for the next update to fence. A pointer compare when it is the
 * last stream launched on; a reference taken the first time. A wrapped
 * stream cannot be fenced later (its owner may destroy it), nor can any
 * stream once the list could not grow: the update waits for the context
 * instead. */
static void note_stream_locked(cus_graph_exec *e, cus_stream *stream)
{
    e->launched = true;
    if (stream && stream->kind == CUS_STREAM_FOREIGN) {
        e->unfenced = true;
        return;
    }
    bool per_thread = stream && stream->kind == CUS_STREAM_PER_THREAD_DEFAULT;
    pthread_t self;
    memset(&self, 0, sizeof self);
    if (per_thread)
        self = pthread_self();
    if (e->nstreams && same_stream(&e->streams[e->last_stream], stream, per_thread, self))
        return;
    for (size_t i = 0; i < e->nstreams; i++) {
        if (same_stream(&e->streams[i], stream, per_thread, self)) {
            e->last_stream = i;
            return;
        }
    }
    if (e->nstreams == e->stream_capacity) {
        size_t want = e->stream_capacity * 2;
        launched_stream *grown = e->streams == e->inline_streams
                                     ? cus_malloc_(want * sizeof *grown)
                                     : cus_realloc_(e->streams, want * sizeof *grown);
        if (!grown) {
            cus_host_alloc_absorbed_(); /* the update waits for the context instead */
            e->unfenced = true;
            return;
        }
        if (e->streams == e->inline_streams)
            memcpy(grown, e->inline_streams, sizeof e->inline_streams);
        e->streams = grown;
        e->stream_capacity = want;
    }
    e->streams[e->nstreams] = (launched_stream){cus_stream_ref(stream), self};
    e->last_stream = e->nstreams++;
}

static cus_status exec_launch_locked(cus_graph_exec *exec, cus_stream *stream, CUstream hs,
                                     const char *function)
{
    prune_locked(exec, false, function);
    /* Noted before the call: a launch that fails may have queued part of
     * the graph (the driver does not say), which the next update fences
     * too. */
    note_stream_locked(exec, stream);
    CUS_IN_CONTEXT_AS(function, exec->ctx, "cuGraphLaunch", cus_drv_.cuGraphLaunch_(exec->handle, hs));
    return CUS_SUCCESS;
}

static cus_status exec_upload_locked(cus_graph_exec *exec, CUstream hs, const char *function)
{
    CUS_IN_CONTEXT_AS(function, exec->ctx, "cuGraphUpload", cus_drv_.cuGraphUpload_(exec->handle, hs));
    return CUS_SUCCESS;
}

/* A launch or an upload: the same checks and lock, and one driver call
 * (a launch also queries the oldest retired graph's fences, if any). */
static cus_status exec_submit(cus_graph_exec *exec, cus_stream *stream, bool upload,
                              const char *function)
{
    CUS_CHECK_ARG(exec);
    CUstream hs = NULL;
    CUS_TRY(exec_stream(exec, stream, &hs, function));
    if (!upload)
        cus_release_deferred_if_any_();
    CUS_LOCK_SCOPE(&exec->lock);
    return upload ? exec_upload_locked(exec, hs, function)
                  : exec_launch_locked(exec, stream, hs, function);
}

CUS_API cus_status cus_graph_exec_launch(cus_graph_exec *exec, cus_stream *stream)
{
    CUS_API_ENTER();
    return exec_submit(exec, stream, false, __func__);
}

CUS_API cus_status cus_graph_exec_upload(cus_graph_exec *exec, cus_stream *stream)
{
    CUS_API_ENTER();
    return exec_submit(exec, stream, true, __func__);
}

/* Whether the replays queued since the graph became current can be fenced
 * from this thread: not on a wrapped stream, nor on another thread's
 * per-thread default stream (CU_STREAM_PER_THREAD names the caller's). */
static bool fenceable_locked(const cus_graph_exec *e)
{
    if (e->unfenced)
        return false;
    pthread_t self = pthread_self();
    for (size_t i = 0; i < e->nstreams; i++) {
        const launched_stream *l = &e->streams[i];
        if (l->stream && l->stream->kind == CUS_STREAM_PER_THREAD_DEFAULT &&
            !pthread_equal(l->thread, self))
            return false;
    }
    return true;
}

/* Makes room for one more retired graph, by doubling. */
static cus_status reserve_retired_locked(cus_graph_exec *e, const char *function)
{
    if (e->nretired < e->retired_capacity)
        return CUS_SUCCESS;
    size_t want = e->retired_capacity ? e->retired_capacity * 2 : 4;
    retired_graph *grown = cus_realloc_(e->retired, want * sizeof *grown);
    if (!grown)
        return cus_fail_(CUS_ERROR_OUT_OF_HOST_MEMORY, function, NULL,
                         "keeping the graph an update replaces");
    e->retired = grown;
    e->retired_capacity = want;
    return CUS_SUCCESS;
}

/* Records a fence on each stream launched on since the graph became current,
 * into r (its graph not set yet). On failure nothing is left: the fences
 * made are destroyed, and the status is recorded. */
static cus_status record_fences_locked(cus_graph_exec *e, const cus_switch_ *sw,
                                       retired_graph *r, const char *function)
{
    memset(r, 0, sizeof *r);
    CUevent *fences = &r->one;
    if (e->nstreams > 1) {
        r->many = cus_malloc_(e->nstreams * sizeof *r->many);
        if (!r->many)
            return cus_fail_(CUS_ERROR_OUT_OF_HOST_MEMORY, function, NULL,
                             "fencing the graph an update replaces");
        fences = r->many;
    }
    for (size_t i = 0; i < e->nstreams; i++) {
        cus_stream *s = e->streams[i].stream;
        CUevent ev = NULL;
        CUresult rc = cus_drv_.cuEventCreate_(&ev, CU_EVENT_DISABLE_TIMING);
        const char *call = "cuEventCreate";
        if (!rc) {
            rc = cus_drv_.cuEventRecord_(ev, s ? s->handle : NULL);
            call = "cuEventRecord";
            if (rc)
                fence_destroy(ev, function);
        }
        if (rc) {
            fences_destroy(e->ctx, fences, i, function);
            free(r->many);
            r->many = NULL;
            return cus_switch_check_(sw, rc, call);
        }
        fences[i] = ev;
    }
    r->nfences = e->nstreams;
    return CUS_SUCCESS;
}

static cus_status exec_update_locked(cus_graph_exec *exec, cus_graph *graph,
                                     CUgraphExecUpdateResult *result, const char *function);

CUS_API cus_status cus_graph_exec_update(cus_graph_exec *exec, cus_graph *graph,
                                         CUgraphExecUpdateResult *result)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(exec && graph);
    pthread_mutex_lock(&exec->lock);
    cus_status st = exec_update_locked(exec, graph, result, __func__);
    pthread_mutex_unlock(&exec->lock);
    return st;
}

/* What becomes of the graph an update replaces (include/cuscope/graph.h):
 *  - not launched since it became current: released at once;
 *  - launched on streams this thread can name: a fence is recorded on each
 *    (before the update, so that a failure changes nothing), and the graph
 *    is kept with its fences until they complete (queried here, at launches
 *    and at the exec's release);
 *  - launched on a stream it cannot fence: the update waits for the context
 *    first, and then releases it (and every retired graph) at once. */
static cus_status exec_update_locked(cus_graph_exec *exec, cus_graph *graph,
                                     CUgraphExecUpdateResult *result, const char *function)
{
    if (graph->ctx->handle != exec->ctx_handle)
        return cus_fail_(CUS_ERROR_CONTEXT_MISMATCH, function, NULL, "the graph belongs to another context");
    CUgraphExecUpdateResultInfo info;
    memset(&info, 0, sizeof info);
    CUresult r = CUDA_SUCCESS;
    if (poisoned(graph->ctx))
        return cus_context_poisoned_fail_(graph->ctx, function);
    CUS_SWITCH_AS(sw, graph->ctx, function);
    CUS_TRY(sw_status);
    prune_locked(exec, true, function);
    bool replacing = graph != exec->graph;
    bool fencing = replacing && exec->launched && fenceable_locked(exec);
    bool waiting = replacing && exec->launched && !fencing;
    retired_graph fenced;
    memset(&fenced, 0, sizeof fenced);
    if (fencing) {
        CUS_TRY(reserve_retired_locked(exec, function));
        CUS_TRY(record_fences_locked(exec, &sw, &fenced, function));
    } else if (waiting) {
        CUS_TRY(cus_switch_check_(&sw, cus_drv_.cuCtxSynchronize_(), "cuCtxSynchronize"));
    }
    r = cus_drv_.cuGraphExecUpdate_(exec->handle, graph->handle, &info);
    if (result && (!r || r == CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE))
        *result = info.result;
    if (r) {
        fences_destroy(exec->ctx, fences_of(&fenced), fenced.nfences, function);
        free(fenced.many);
    }
    if (r == CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE)
        return cus_fail_((cus_status)r, function, "cuGraphExecUpdate",
                        "the graph cannot update this executable graph (result %d): "
                        "instantiate it instead", (int)info.result);
    CUS_TRY(cus_switch_check_(&sw, r, "cuGraphExecUpdate"));
    if (!replacing)
        return CUS_SUCCESS; /* the same graph: its replays go on using it */
    if (fencing) {
        fenced.graph = exec->graph;
        fenced.nodes = exec->nodes; /* what its nodes used, updated by hand */
        fenced.nnodes = exec->nnodes;
        exec->retired[exec->nretired++] = fenced;
    } else {
        if (waiting)
            release_all_retired(exec, function); /* the wait covered theirs too */
        node_keeps_release(exec->nodes, exec->nnodes);
        cus_graph_unref(exec->graph);
    }
    exec->nodes = NULL;
    exec->nnodes = exec->nodes_capacity = 0;
    streams_reset(exec);
    exec->graph = cus_graph_ref(graph);
    exec->ctx = graph->ctx; /* the same driver context, perhaps another object */
    return CUS_SUCCESS;
}

/* fork.c's child hook: a parent thread may have held the lock at fork time. */
static void atfork_child(bool forked)
{
    (void)forked;
    pthread_mutex_init(&orphans_lock, NULL);
}

__attribute__((constructor)) static void register_atfork_child(void)
{
    cus_fork_register_child_hook_(atfork_child);
}

/* --- per-node updates (graph_nodes.c) -------------------------------------------------------------- */

/* Whether a keep list holds the n items' objects, in the same order. */
static bool same_objects(const keep_list *a, const cus_keep_item_ *items, unsigned int n)
{
    if (a->count != n)
        return false;
    for (unsigned int i = 0; i < n; i++)
        if (a->items[i].obj != items[i].obj)
            return false;
    return true;
}

/* A keep list being built: released at scope exit unless moved out. */
static void keep_list_drop(keep_list *k)
{
    cus_keep_list_release_(k);
}

static cus_status exec_node_update_locked(cus_graph_exec *e, CUgraphNode node,
                                          const cus_graph *graph,
                                          const cus_keep_item_ *items, int n,
                                          const char *driver_call,
                                          CUresult (*set)(CUgraphExec h, void *arg), void *arg,
                                          const char *function)
{
    if (poisoned(e->ctx))
        return cus_context_poisoned_fail_(e->ctx, function);
    if (graph != e->graph)
        return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL,
                         "the node is not one of the graph the executable graph replays");
    node_keep *entry = NULL;
    for (size_t i = 0; n >= 0 && i < e->nnodes && !entry; i++)
        if (e->nodes[i].node == node)
            entry = &e->nodes[i];
    /* Nothing to keep or retire: what the node uses does not change (n < 0),
     * is what an earlier update kept, or (first update, nothing named) what
     * the graph keeps for it. The common case: one switch and the call. */
    if (n < 0 || (entry && same_objects(&entry->keep, items, (unsigned int)n)) ||
        (!entry && n == 0)) {
        CUS_SWITCH_AS(plain, e->ctx, function);
        CUS_TRY(plain_status);
        return cus_switch_check_(&plain, set(e->handle, arg), driver_call);
    }
    /* What the node used before: its entry's, or (first update) what the
     * graph keeps for it, which stays with the graph: nothing to retire. */
    bool changing = entry && entry->keep.count;
    if (!entry && e->nnodes == e->nodes_capacity) {
        size_t want = e->nodes_capacity ? e->nodes_capacity * 2 : 4;
        node_keep *grown = cus_realloc_(e->nodes, want * sizeof *grown);
        if (!grown)
            return cus_fail_(CUS_ERROR_OUT_OF_HOST_MEMORY, function, NULL,
                             "keeping what the updated node uses");
        e->nodes = grown;
        e->nodes_capacity = want;
    }
    __attribute__((cleanup(keep_list_drop))) keep_list fresh = {0};
    if (n) {
        fresh.items = cus_malloc_((size_t)n * sizeof *fresh.items);
        if (!fresh.items)
            return cus_fail_(CUS_ERROR_OUT_OF_HOST_MEMORY, function, NULL,
                             "keeping what the updated node uses");
        for (int i = 0; i < n; i++)
            fresh.items[i] = (keep_entry){items[i].ref(items[i].obj), items[i].release};
        fresh.count = fresh.capacity = (size_t)n;
    }
    CUS_SWITCH_AS(sw, e->ctx, function);
    CUS_TRY(sw_status);
    prune_locked(e, true, function);
    bool fencing = changing && e->launched && fenceable_locked(e);
    bool waiting = changing && e->launched && !fencing;
    retired_graph fenced;
    memset(&fenced, 0, sizeof fenced);
    if (fencing) {
        CUS_TRY(reserve_retired_locked(e, function));
        CUS_TRY(record_fences_locked(e, &sw, &fenced, function));
    } else if (waiting) {
        CUS_TRY(cus_switch_check_(&sw, cus_drv_.cuCtxSynchronize_(), "cuCtxSynchronize"));
    }
    CUresult r = set(e->handle, arg);
    if (r) {
        fences_destroy(e->ctx, fences_of(&fenced), fenced.nfences, function);
        free(fenced.many);
        return cus_switch_check_(&sw, r, driver_call);
    }
    if (!entry) {
        entry = &e->nodes[e->nnodes++];
        entry->node = node;
        entry->keep = (keep_list){0};
    }
    keep_list old = entry->keep;
    entry->keep = fresh;
    fresh = (keep_list){0};
    if (fencing) {
        fenced.keep = old;
        e->retired[e->nretired++] = fenced;
    } else {
        cus_keep_list_release_(&old); /* empty, not launched, or waited for */
    }
    return CUS_SUCCESS;
}

cus_status cus_graph_exec_node_update_(cus_graph_exec *e, cus_graph_node node,
                                       const cus_keep_item_ *items, int n,
                                       const char *driver_call,
                                       CUresult (*set)(CUgraphExec h, void *arg), void *arg,
                                       const char *function)
{
    pthread_mutex_lock(&e->lock);
    cus_status st = exec_node_update_locked(e, node.handle, node.graph, items, n, driver_call, set,
                                            arg, function);
    pthread_mutex_unlock(&e->lock);
    return st;
}

CUcontext cus_graph_exec_context_handle_(const cus_graph_exec *e)
{
    return e->ctx_handle;
}

cus_status cus_graph_exec_query_(cus_graph_exec *e, const cus_graph *graph,
                                 const char *driver_call,
                                 CUresult (*call)(CUgraphExec h, void *arg), void *arg,
                                 const char *function)
{
    CUS_LOCK_SCOPE(&e->lock);
    if (poisoned(e->ctx))
        return cus_context_poisoned_fail_(e->ctx, function);
    if (graph && graph != e->graph)
        return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL,
                         "the node is not one of the graph the executable graph replays");
    CUresult r = call(e->handle, arg);
    if (r)
        return cus_context_driver_fail_(e->ctx, r, function, driver_call);
    return CUS_SUCCESS;
}
