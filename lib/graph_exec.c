/* Executable graphs (cus_graph_exec): instantiate, launch, upload, update;
 * the graphs an update retired, and the host memory of graphs whose replays
 * could not be waited for (orphans). */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct cus_graph_exec {
    cus_refcount refs;
    CUgraphExec handle;
    cus_context *ctx; /* its graphs' (they hold it) */
    /* The driver does not synchronize an executable graph: cuscope
     * serializes its launches, uploads and updates. */
    pthread_mutex_t lock;
    cus_graph *graph; /* a reference: what the replays use stays alive */
    /* Graphs an update replaced: replays queued before it may still use
     * their objects, so they go with the exec. */
    cus_graph **retired;
    size_t nretired;
    atomic_bool launched;
};

static CUresult synchronize_call(void *unused)
{
    (void)unused;
    return cus_drv_.cuCtxSynchronize_();
}

/* Host memory that graphs adopted (host-function records) and that replays
 * nobody could wait for may still read: kept, reachable, until the process
 * ends. A few dozen bytes per host function, and only after a failed wait. */
static pthread_mutex_t orphans_lock = PTHREAD_MUTEX_INITIALIZER;
static keep_list orphans;

static void orphan_adopted(cus_graph *g)
{
    keep_list *k = &g->keep;
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

static void exec_destroy(cus_graph_exec *e)
{
    cus_context *ctx = e->graph->ctx;
    /* Replays may still be queued: what they use must outlive them. A
     * context-wide wait, as the exec does not know the streams it ran on.
     * Device memory is safe either way (its release waits for the device);
     * host-function records are not, and when the wait fails twice on a
     * context that is not dead they are orphaned rather than freed. */
    /* In a fork() child no replay runs (nor can be waited for): host memory
     * only. */
    bool forked = cus_is_forked_();
    if (atomic_load_explicit(&e->launched, memory_order_relaxed) && !forked) {
        bool waited = false;
        for (int attempt = 0; attempt < 2 && !waited; attempt++) {
            unsigned long errors = cus_destroy_error_count();
            cus_destroy_in_context_relaxed_(ctx, "cus_graph_exec_unref", "cuCtxSynchronize",
                                            synchronize_call, NULL,
                                    attempt ? "an executable graph (waiting for its replays)"
                                            : "an executable graph (waiting for its replays; "
                                              "trying once more)");
            waited = cus_destroy_error_count() == errors ||
                     atomic_load_explicit(&ctx->poison, memory_order_relaxed);
        }
        if (!waited) {
            orphan_adopted(e->graph);
            for (size_t i = 0; i < e->nretired; i++)
                orphan_adopted(e->retired[i]);
        }
    }
    if (!atomic_load_explicit(&ctx->poison, memory_order_relaxed) && !forked) {
        /* Relaxed: a capture open on any thread would refuse it (an H200's
         * answer, test/probes/probes.c) and be invalidated. */
        CUresult r = cus_call_relaxed_(exec_destroy_call, e->handle, "cus_graph_exec_unref");
        if (r)
            cus_destroy_error_((cus_status)r, "cus_graph_exec_unref", "cuGraphExecDestroy",
                               "destroying executable graph %p", (void *)e->handle);
    }
    for (size_t i = 0; i < e->nretired; i++)
        cus_graph_unref(e->retired[i]);
    free(e->retired);
    cus_graph_unref(e->graph);
    pthread_mutex_destroy(&e->lock);
    free(e);
}

CUS_DEFINE_REF_UNREF(cus_graph_exec, exec_destroy)

CUS_API cus_status cus_graph_instantiate(cus_graph *graph, unsigned long long flags,
                                         cus_graph_exec **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(graph && out);
    CUS_CHECK_POISON(graph->ctx);
    cus_release_deferred_if_any_();
    cus_autofree cus_graph_exec *e = cus_calloc_(1, sizeof *e);
    if (!e)
        return CUS_FAIL(CUS_ERROR_OUT_OF_HOST_MEMORY, NULL, "allocating an executable graph");
    CUgraphExec h = NULL;
    {
        CUS_LOCK_SCOPE(&graph->lock);
        CUS_IN_CONTEXT(graph->ctx, "cuGraphInstantiateWithFlags",
                       cus_drv_.cuGraphInstantiateWithFlags_(&h, graph->handle, flags));
    }
    cus_refcount_init_(&e->refs);
    pthread_mutex_init(&e->lock, NULL);
    e->ctx = graph->ctx;
    e->handle = h;
    e->graph = cus_graph_ref(graph);
    *out = cus_steal(&e);
    return CUS_SUCCESS;
}

CUS_API CUgraphExec cus_graph_exec_handle(const cus_graph_exec *exec)
{
    return exec ? exec->handle : NULL;
}

static cus_status exec_stream(cus_graph_exec *exec, cus_stream *stream, CUstream *hs,
                              const char *function)
{
    if (stream && stream->ctx->handle != exec->ctx->handle)
        return cus_fail_(CUS_ERROR_CONTEXT_MISMATCH, function, NULL,
                         "the stream belongs to context %p, the graph to %p",
                         (void *)stream->ctx->handle, (void *)exec->ctx->handle);
    *hs = stream ? stream->handle : NULL;
    return CUS_SUCCESS;
}

static cus_status exec_launch_locked(cus_graph_exec *exec, CUstream hs, const char *function)
{
    atomic_store_explicit(&exec->launched, true, memory_order_relaxed);
    CUS_IN_CONTEXT_AS(function, exec->ctx, "cuGraphLaunch", cus_drv_.cuGraphLaunch_(exec->handle, hs));
    return CUS_SUCCESS;
}

static cus_status exec_upload_locked(cus_graph_exec *exec, CUstream hs, const char *function)
{
    CUS_IN_CONTEXT_AS(function, exec->ctx, "cuGraphUpload", cus_drv_.cuGraphUpload_(exec->handle, hs));
    return CUS_SUCCESS;
}

/* A launch or an upload: the same checks and lock, and one driver call. */
static cus_status exec_submit(cus_graph_exec *exec, cus_stream *stream, bool upload,
                              const char *function)
{
    CUS_CHECK_ARG(exec);
    CUstream hs = NULL;
    CUS_TRY(exec_stream(exec, stream, &hs, function));
    if (!upload)
        cus_release_deferred_if_any_();
    CUS_LOCK_SCOPE(&exec->lock);
    return upload ? exec_upload_locked(exec, hs, function) : exec_launch_locked(exec, hs, function);
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

static cus_status exec_update_locked(cus_graph_exec *exec, cus_graph *graph,
                                     CUgraphExecUpdateResult *result, const char *function)
{
    if (graph->ctx->handle != exec->ctx->handle)
        return cus_fail_(CUS_ERROR_CONTEXT_MISMATCH, function, NULL, "the graph belongs to another context");
    CUgraphExecUpdateResultInfo info;
    memset(&info, 0, sizeof info);
    CUresult r = CUDA_SUCCESS;
    if (atomic_load_explicit(&graph->ctx->poison, memory_order_relaxed))
        return cus_context_poisoned_fail_(graph->ctx, function);
    CUS_SWITCH_AS(sw, graph->ctx, function);
    CUS_TRY(sw_status);
    r = cus_drv_.cuGraphExecUpdate_(exec->handle, graph->handle, &info);
    if (result && (!r || r == CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE))
        *result = info.result;
    if (r == CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE)
        return cus_fail_((cus_status)r, function, "cuGraphExecUpdate",
                        "the graph cannot update this executable graph (result %d): "
                        "instantiate it instead", (int)info.result);
    CUS_TRY(cus_switch_check_(&sw, r, "cuGraphExecUpdate"));
    /* Later replays use graph's objects; earlier ones, still queued, may use
     * the old graph's: the exec holds both. */
    if (graph != exec->graph) {
        cus_graph **grown = cus_realloc_(exec->retired, (exec->nretired + 1) * sizeof *grown);
        if (grown) {
            exec->retired = grown;
            exec->retired[exec->nretired++] = exec->graph;
        } else {
            /* cannot keep it: wait for the queued replays instead */
            cus_host_alloc_absorbed_();
            cus_destroy_in_context_relaxed_(graph->ctx, function, "cuCtxSynchronize",
                                            synchronize_call, NULL,
                                            "the graph an update replaced");
            cus_graph_unref(exec->graph);
        }
        exec->graph = cus_graph_ref(graph);
    }
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
