/* Graph inspection and editing (cuscope/graph_inspect.h): node types and
 * edges, the DOT dump, removing edges and nodes, clones, and the per-node
 * updates of event, host function and child graph nodes. The updates go
 * through graph_exec.c's cus_graph_exec_node_update_, which keeps what a
 * node uses now and retires what it used before (fenced), as for the
 * updates of graph_nodes.c; queries of an executable graph through
 * cus_graph_exec_query_. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "graph_set_internal.h"
#include "internal.h"

cus_status cus_graph_edges_unsupported_(const char *entry, const char *function)
{
    return cus_fail_(CUS_ERROR_NOT_SUPPORTED, function, NULL,
                     "driver API %d.%d does not provide %s (the edge-data variant): graph edge "
                     "queries and removals need driver 12.3 or later",
                     cus_driver_version_ / 1000, cus_driver_version_ % 1000 / 10, entry);
}

/* --- inspection ------------------------------------------------------------------------------- */

CUS_API cus_status cus_graph_node_type(cus_graph_node node, CUgraphNodeType *type)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(type);
    CUS_CHECK_NODE_(node);
    cus_graph *g = cus_graph_of_node_(node);
    CUS_CHECK_POISON(g->ctx);
    CUgraphNodeType t;
    CUresult r;
    {
        CUS_GRAPH_LOCK_IDLE_(g, __func__);
        r = cus_drv_.cuGraphNodeGetType_(node.handle, &t);
    }
    if (r)
        return cus_context_driver_fail_(g->ctx, r, __func__, "cuGraphNodeGetType");
    *type = t;
    return CUS_SUCCESS;
}

typedef CUresult (*node_list_fn)(CUgraphNode n, CUgraphNode *out, size_t *count);

static CUresult get_dependencies(CUgraphNode n, CUgraphNode *out, size_t *count)
{
    return cus_drv_.cuGraphNodeGetDependencies_(n, out, NULL, count);
}

static CUresult get_dependents(CUgraphNode n, CUgraphNode *out, size_t *count)
{
    return cus_drv_.cuGraphNodeGetDependentNodes_(n, out, NULL, count);
}

/* The driver's list of a node's neighbours, written into the caller's
 * array itself and widened there (cus_graph_nodes_widen_), as
 * cus_graph_nodes lists a graph's nodes. */
static cus_status node_list(cus_graph_node node, cus_graph_node *out, size_t *count,
                            node_list_fn list, bool present, const char *call,
                            const char *function)
{
    cus_graph *g = cus_graph_of_node_(node);
    if (atomic_load_explicit(&g->ctx->poison, memory_order_relaxed))
        return cus_context_poisoned_fail_(g->ctx, function);
    if (!present)
        return cus_graph_edges_unsupported_(call, function);
    size_t n = out ? *count : 0;
    size_t got = n;
    CUresult r;
    {
        CUS_GRAPH_LOCK_IDLE_(g, function);
        r = list(node.handle, n ? (CUgraphNode *)(void *)out : NULL, &got);
    }
    if (r)
        return cus_context_driver_fail_(g->ctx, r, function, call);
    cus_graph_nodes_widen_(out, n < got ? n : got, n, g);
    *count = got;
    return CUS_SUCCESS;
}

CUS_API cus_status cus_graph_node_dependencies(cus_graph_node node, cus_graph_node *deps,
                                               size_t *count)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(count);
    CUS_CHECK_NODE_(node);
    return node_list(node, deps, count, get_dependencies,
                     cus_drv_.cuGraphNodeGetDependencies_ != NULL, "cuGraphNodeGetDependencies",
                     __func__);
}

CUS_API cus_status cus_graph_node_dependents(cus_graph_node node, cus_graph_node *dependents,
                                             size_t *count)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(count);
    CUS_CHECK_NODE_(node);
    return node_list(node, dependents, count, get_dependents,
                     cus_drv_.cuGraphNodeGetDependentNodes_ != NULL,
                     "cuGraphNodeGetDependentNodes", __func__);
}

CUS_API cus_status cus_graph_edges(cus_graph *graph, cus_graph_node *from, cus_graph_node *to,
                                   size_t *count)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(graph && count && !from == !to);
    CUS_CHECK_POISON(graph->ctx);
    if (!cus_drv_.cuGraphGetEdges_)
        return cus_graph_edges_unsupported_("cuGraphGetEdges", __func__);
    size_t n = from ? *count : 0;
    cus_autofree CUgraphNode *h = n ? cus_malloc_(2 * n * sizeof *h) : NULL;
    if (n && !h)
        return CUS_FAIL(CUS_ERROR_OUT_OF_HOST_MEMORY, NULL, "a list of edges");
    size_t got = n;
    CUresult r;
    {
        CUS_GRAPH_LOCK_IDLE_(graph, __func__);
        r = cus_drv_.cuGraphGetEdges_(graph->handle, h, h ? h + n : NULL, NULL, &got);
    }
    if (r)
        return cus_context_driver_fail_(graph->ctx, r, __func__, "cuGraphGetEdges");
    for (size_t i = 0; i < n && i < got; i++) {
        from[i] = (cus_graph_node){h[i], graph};
        to[i] = (cus_graph_node){h[n + i], graph};
    }
    *count = got;
    return CUS_SUCCESS;
}

typedef struct enabled_get {
    CUgraphNode node;
    unsigned int enabled;
} enabled_get;

static CUresult get_enabled_call(CUgraphExec h, void *arg)
{
    enabled_get *a = arg;
    return cus_drv_.cuGraphNodeGetEnabled_(h, a->node, &a->enabled);
}

CUS_API cus_status cus_graph_node_enabled(cus_graph_exec *exec, cus_graph_node node,
                                          bool *enabled)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(exec && enabled);
    CUS_CHECK_NODE_(node);
    enabled_get a = {node.handle, 0};
    CUS_TRY(cus_graph_exec_query_(exec, node.graph, "cuGraphNodeGetEnabled", get_enabled_call,
                                  &a, __func__));
    *enabled = a.enabled != 0;
    return CUS_SUCCESS;
}

static CUresult get_flags_call(CUgraphExec h, void *arg)
{
    return cus_drv_.cuGraphExecGetFlags_(h, arg);
}

CUS_API cus_status cus_graph_exec_flags(cus_graph_exec *exec, cuuint64_t *flags)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(exec && flags);
    cuuint64_t f = 0;
    CUS_TRY(cus_graph_exec_query_(exec, NULL, "cuGraphExecGetFlags", get_flags_call, &f,
                                  __func__));
    *flags = f;
    return CUS_SUCCESS;
}

CUS_API cus_status cus_graph_debug_dot(cus_graph *graph, const char *path, unsigned int flags)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(graph && path && *path);
    CUS_CHECK_POISON(graph->ctx);
    CUresult r;
    {
        CUS_GRAPH_LOCK_IDLE_(graph, __func__);
        r = cus_drv_.cuGraphDebugDotPrint_(graph->handle, path, flags);
    }
    if (r)
        return cus_fail_((cus_status)r, __func__, "cuGraphDebugDotPrint",
                         "writing the DOT description of graph %p to '%s' (flags %#x)",
                         (void *)graph->handle, path, flags);
    return CUS_SUCCESS;
}

/* --- editing --------------------------------------------------------------------------------- */

#define INLINE_EDGES CUS_GRAPH_INLINE_NODES_

CUS_API cus_status cus_graph_remove_dependencies(cus_graph *graph, const cus_graph_node *from,
                                                 const cus_graph_node *to, size_t n)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(graph && ((from && to) || !n));
    CUS_CHECK_POISON(graph->ctx);
    if (!cus_drv_.cuGraphRemoveDependencies_)
        return cus_graph_edges_unsupported_("cuGraphRemoveDependencies", __func__);
    if (!n)
        return CUS_SUCCESS;
    CUgraphNode inline_from[INLINE_EDGES], inline_to[INLINE_EDGES], *hf, *ht, *heap_f, *heap_t;
    CUS_TRY(cus_graph_node_handles_(graph, from, n, "node", inline_from, &hf, &heap_f,
                                    __func__));
    __attribute__((unused)) cus_autofree CUgraphNode *owned_f = heap_f;
    CUS_TRY(cus_graph_node_handles_(graph, to, n, "node", inline_to, &ht, &heap_t,
                                    __func__));
    __attribute__((unused)) cus_autofree CUgraphNode *owned_t = heap_t;
    CUS_GRAPH_LOCK_IDLE_(graph, __func__);
    CUS_IN_CONTEXT(graph->ctx, "cuGraphRemoveDependencies",
                   cus_drv_.cuGraphRemoveDependencies_(graph->handle, hf, ht, NULL, n));
    return CUS_SUCCESS;
}

/* Whether root handed out the own graph of child graph node h. */
static bool lent_find_locked(const cus_graph *root, CUgraphNode h)
{
    for (size_t i = 0; i < root->lent_count; i++)
        if (root->lent[i] == h)
            return true;
    return false;
}

static bool lent_reserve_locked(cus_graph *root)
{
    if (root->lent_count < root->lent_capacity)
        return true;
    size_t want = root->lent_capacity ? root->lent_capacity * 2 : 4;
    CUgraphNode *grown = cus_realloc_(root->lent, want * sizeof *grown);
    if (!grown)
        return false;
    root->lent = grown;
    root->lent_capacity = want;
    return true;
}

/* What the node kept stays in its graph's keep list: another node may use
 * the same objects (each is kept once), and the executable graphs made
 * before still replay the node. */
CUS_API cus_status cus_graph_destroy_node(cus_graph_node node)
{
    CUS_API_ENTER();
    CUS_CHECK_NODE_(node);
    cus_graph *g = cus_graph_of_node_(node);
    CUS_CHECK_POISON(g->ctx);
    CUS_GRAPH_LOCK_IDLE_(g, __func__);
    /* A conditional node's bodies are "valid for the lifetime of the
     * conditional node" (cuda.h), and a child graph node owns its graph:
     * cus_graph objects of those would outlive the driver's graphs. */
    CUgraphNodeType type;
    CUresult r = cus_drv_.cuGraphNodeGetType_(node.handle, &type);
    if (r)
        return cus_context_driver_fail_(g->ctx, r, __func__, "cuGraphNodeGetType");
#if CUDA_VERSION >= 12030
    if (type == CU_GRAPH_NODE_TYPE_CONDITIONAL)
        return CUS_FAIL(CUS_ERROR_NOT_SUPPORTED, NULL,
                        "node %p is a conditional node: its body graphs die with it, and "
                        "cuscope's handles to them would dangle; build the graph again without it",
                        (void *)node.handle);
#endif
    if (type == CU_GRAPH_NODE_TYPE_GRAPH && lent_find_locked(cus_graph_root_(g), node.handle))
        return CUS_FAIL(CUS_ERROR_NOT_SUPPORTED, NULL,
                        "node %p is a child graph node whose own graph cus_graph_child_graph "
                        "handed out: that graph dies with the node, and cuscope's handles to it "
                        "would dangle; build the graph again without it",
                        (void *)node.handle);
    CUS_IN_CONTEXT(g->ctx, "cuGraphDestroyNode", cus_drv_.cuGraphDestroyNode_(node.handle));
    return CUS_SUCCESS;
}

CUS_API cus_status cus_graph_clone(cus_graph *graph, cus_graph **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(graph && out);
    CUS_CHECK_POISON(graph->ctx);
    cus_autofree cus_graph *c = cus_calloc_(1, sizeof *c);
    /* The one entry of its keep list: room made before the driver call, so
     * that a clone made is never lost. */
    cus_autofree keep_entry *items = cus_malloc_(sizeof *items);
    if (!c || !items)
        return CUS_FAIL(CUS_ERROR_OUT_OF_HOST_MEMORY, NULL, "allocating a graph");
    cus_graph *root = cus_graph_root_(graph);
    CUgraph h = NULL;
    bool keeps;
    {
        CUS_LOCK_SCOPE(&root->lock);
        CUS_TRY(cus_graph_idle_locked_(root, __func__));
        CUS_IN_CONTEXT(graph->ctx, "cuGraphClone", cus_drv_.cuGraphClone_(&h, graph->handle));
        /* The clone's nodes use what graph's use: holding graph keeps them
         * all (the keep list has releases, not references, to copy). */
        keeps = root->keep.count != 0;
    }
    cus_refcount_init_(&c->refs);
    pthread_mutex_init(&c->lock, NULL);
    c->handle = h;
    c->ctx = cus_context_ref(graph->ctx);
    if (keeps) {
        cus_keep_item_ item = cus_graph_keep_item_(graph);
        items[0] = (keep_entry){item.ref(graph), item.release};
        c->keep = (keep_list){cus_steal(&items), 1, 1};
    }
    *out = cus_steal(&c);
    return CUS_SUCCESS;
}

CUS_API cus_status cus_graph_node_in_clone(cus_graph *clone, cus_graph_node original,
                                           cus_graph_node *out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(clone && out);
    CUS_CHECK_NODE_(original);
    CUS_CHECK_POISON(clone->ctx);
    CUgraphNode h = NULL;
    CUresult r;
    {
        /* The driver reads both graphs: both locks, in address order. */
        pthread_mutex_t *a = &cus_graph_root_(clone)->lock;
        pthread_mutex_t *b = &cus_graph_root_(cus_graph_of_node_(original))->lock;
        if ((uintptr_t)b < (uintptr_t)a) {
            pthread_mutex_t *t = a;
            a = b, b = t;
        }
        CUS_LOCK_SCOPE(a);
        pthread_mutex_t *second = b != a ? cus_mutex_lock_(b) : NULL;
        r = cus_drv_.cuGraphNodeFindInClone_(&h, original.handle, clone->handle);
        if (second)
            pthread_mutex_unlock(second);
    }
    if (r)
        return cus_context_driver_fail_(clone->ctx, r, __func__, "cuGraphNodeFindInClone");
    *out = (cus_graph_node){h, clone};
    return CUS_SUCCESS;
}

/* --- per-node updates ----------------------------------------------------------------------- */

static cus_status exec_node_check(cus_graph_exec *exec, cus_graph_node node, const char *function)
{
    if (!exec || !node.handle)
        return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL,
                         exec ? "invalid argument: no node" : "invalid argument: exec");
    return CUS_SUCCESS;
}

typedef struct event_set {
    CUgraphNode node;
    CUevent event;
} event_set;

static CUresult set_record_call(CUgraphExec h, void *arg)
{
    const event_set *a = arg;
    return cus_drv_.cuGraphExecEventRecordNodeSetEvent_(h, a->node, a->event);
}

static CUresult set_wait_call(CUgraphExec h, void *arg)
{
    const event_set *a = arg;
    return cus_drv_.cuGraphExecEventWaitNodeSetEvent_(h, a->node, a->event);
}

static cus_status set_event(cus_graph_exec *exec, cus_graph_node node, cus_event *event,
                            bool record, const char *function)
{
    CUS_TRY(exec_node_check(exec, node, function));
    if (!event)
        return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL, "invalid argument: event");
    CUcontext ctx = cus_graph_exec_context_handle_(exec);
    if (event->ctx->handle != ctx)
        return cus_fail_(CUS_ERROR_CONTEXT_MISMATCH, function, NULL,
                         "the event belongs to context %p, the executable graph to %p",
                         (void *)event->ctx->handle, (void *)ctx);
    cus_keep_item_ item = cus_capture_item_event_(event);
    event_set a = {node.handle, event->handle};
    return cus_graph_exec_node_update_(exec, node, &item, 1,
                                       record ? "cuGraphExecEventRecordNodeSetEvent"
                                              : "cuGraphExecEventWaitNodeSetEvent",
                                       record ? set_record_call : set_wait_call, &a, function);
}

CUS_API cus_status cus_graph_exec_set_event_record(cus_graph_exec *exec, cus_graph_node node,
                                                   cus_event *event)
{
    CUS_API_ENTER();
    return set_event(exec, node, event, true, __func__);
}

CUS_API cus_status cus_graph_exec_set_event_wait(cus_graph_exec *exec, cus_graph_node node,
                                                 cus_event *event)
{
    CUS_API_ENTER();
    return set_event(exec, node, event, false, __func__);
}

typedef cus_graph_host_record_ host_record;

static void *host_record_take(void *p)
{
    host_record *rec = p;
    *rec->taken = true;
    return rec;
}

typedef struct host_set {
    CUgraphNode node;
    CUDA_HOST_NODE_PARAMS p;
} host_set;

static CUresult set_host_call(CUgraphExec h, void *arg)
{
    const host_set *a = arg;
    return cus_drv_.cuGraphExecHostNodeSetParams_(h, a->node, &a->p);
}

CUS_API cus_status cus_graph_exec_set_host_fn(cus_graph_exec *exec, cus_graph_node node,
                                              cus_host_fn fn, void *user_data)
{
    CUS_API_ENTER();
    CUS_TRY(exec_node_check(exec, node, __func__));
    CUS_CHECK_ARG(fn);
    bool taken = false;
    host_record *rec = cus_malloc_(sizeof *rec);
    if (!rec)
        return CUS_FAIL(CUS_ERROR_OUT_OF_HOST_MEMORY, NULL, "allocating a host function record");
    *rec = (host_record){{fn, user_data}, &taken};
    cus_keep_item_ item = {rec, NULL, host_record_take, free};
    host_set a = {node.handle, {cus_graph_host_trampoline_, rec}};
    cus_status st = cus_graph_exec_node_update_(exec, node, &item, 1,
                                                "cuGraphExecHostNodeSetParams", set_host_call,
                                                &a, __func__);
    /* Taken: exec's (kept, or freed by the failed update); else still ours. */
    if (!taken)
        free(rec);
    return st;
}

typedef struct child_set {
    CUgraphNode node;
    CUgraph child;
} child_set;

static CUresult set_child_call(CUgraphExec h, void *arg)
{
    const child_set *a = arg;
    return cus_drv_.cuGraphExecChildGraphNodeSetParams_(h, a->node, a->child);
}

CUS_API cus_status cus_graph_exec_set_child(cus_graph_exec *exec, cus_graph_node node,
                                            cus_graph *child)
{
    CUS_API_ENTER();
    CUS_TRY(exec_node_check(exec, node, __func__));
    CUS_CHECK_ARG(child);
    CUcontext ctx = cus_graph_exec_context_handle_(exec);
    if (child->ctx->handle != ctx)
        return CUS_FAIL(CUS_ERROR_CONTEXT_MISMATCH, NULL,
                        "the child graph belongs to context %p, the executable graph to %p",
                        (void *)child->ctx->handle, (void *)ctx);
    cus_keep_item_ item = cus_graph_keep_item_(child);
    child_set a = {node.handle, child->handle};
    /* The driver reads child's nodes in the call: its lock, taken before
     * exec's (no path takes a graph's lock while holding an exec's). */
    CUS_GRAPH_LOCK_IDLE_(child, __func__);
    return cus_graph_exec_node_update_(exec, node, &item, 1, "cuGraphExecChildGraphNodeSetParams",
                                       set_child_call, &a, __func__);
}

/* --- instantiation with parameters ---------------------------------------------------------- */

static CUresult instantiate_params_call(CUgraphExec *h, CUgraph g, void *arg)
{
    return cus_drv_.cuGraphInstantiateWithParams_(h, g, arg);
}

static const char *instantiate_result_name(CUgraphInstantiateResult r)
{
    switch ((int)r) {
    case CUDA_GRAPH_INSTANTIATE_SUCCESS: return "CUDA_GRAPH_INSTANTIATE_SUCCESS";
    case CUDA_GRAPH_INSTANTIATE_ERROR: return "CUDA_GRAPH_INSTANTIATE_ERROR";
    case CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE: return "CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE";
    case CUDA_GRAPH_INSTANTIATE_NODE_OPERATION_NOT_SUPPORTED:
        return "CUDA_GRAPH_INSTANTIATE_NODE_OPERATION_NOT_SUPPORTED";
    case CUDA_GRAPH_INSTANTIATE_MULTIPLE_CTXS_NOT_SUPPORTED:
        return "CUDA_GRAPH_INSTANTIATE_MULTIPLE_CTXS_NOT_SUPPORTED";
#if CUDA_VERSION >= 12030
    case CUDA_GRAPH_INSTANTIATE_CONDITIONAL_HANDLE_UNUSED:
        return "CUDA_GRAPH_INSTANTIATE_CONDITIONAL_HANDLE_UNUSED";
#endif
    default: return "an unknown result";
    }
}

CUS_API cus_status cus_graph_instantiate_with_params(cus_graph *graph, unsigned long long flags,
                                                     cus_stream *upload,
                                                     CUgraphInstantiateResult *result,
                                                     cus_graph_exec **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(graph && out);
    if (upload && upload->ctx->handle != graph->ctx->handle)
        return CUS_FAIL(CUS_ERROR_CONTEXT_MISMATCH, NULL,
                        "the upload stream belongs to context %p, the graph to %p",
                        (void *)upload->ctx->handle, (void *)graph->ctx->handle);
    CUDA_GRAPH_INSTANTIATE_PARAMS p;
    memset(&p, 0, sizeof p);
    p.flags = flags;
    p.hUploadStream = upload ? upload->handle : NULL;
    p.result_out = (CUgraphInstantiateResult)-1; /* not written: the driver never answered */
    cus_status st = cus_graph_exec_instantiate_(graph, "cuGraphInstantiateWithParams",
                                                instantiate_params_call, &p, out, __func__);
    bool answered = (int)p.result_out != -1;
    if (result && answered)
        *result = p.result_out;
    if (st && answered && p.result_out != CUDA_GRAPH_INSTANTIATE_SUCCESS)
        return cus_fail_(st, __func__, "cuGraphInstantiateWithParams",
                         "instantiating graph %p: %s (node %p)", (void *)graph->handle,
                         instantiate_result_name(p.result_out), (void *)p.hErrNode_out);
    return st;
}

/* --- changing a node of a graph ------------------------------------------------------------
 * The packing and checks are graph_nodes.c's (graph_set_internal.h). */

CUS_API cus_status cus_graph_set_kernel_node(cus_graph_node node, cus_function *fn, cus_dim3 grid,
                                             cus_dim3 block, unsigned int shared_bytes,
                                             unsigned int nargs, void **args, const size_t *sizes)
{
    CUS_API_ENTER();
    return cus_graph_set_kernel_(node, fn, NULL, grid, block, shared_bytes, nargs, args, sizes,
                                 false, __func__);
}

CUS_API cus_status cus_graph_set_library_kernel_node(cus_graph_node node, cus_kernel *k,
                                                     cus_dim3 grid, cus_dim3 block,
                                                     unsigned int shared_bytes,
                                                     unsigned int nargs, void **args,
                                                     const size_t *sizes)
{
    CUS_API_ENTER();
    return cus_graph_set_kernel_(node, NULL, k, grid, block, shared_bytes, nargs, args, sizes,
                                 false, __func__);
}

/* The macro's entries drop the notes whatever happens (also when refused
 * in a host function, before the frame), as graph_nodes.c's do. */
#define SET_MACRO_ENTER(name)                                                  \
    do {                                                                       \
        if (CUS_UNLIKELY(cus_in_host_fn_ || cus_is_forked_()))                 \
            cus_graph_notes_drop_();                                           \
    } while (0);                                                               \
    CUS_API_ENTER_AS(name)

CUS_API cus_status cus_graph_set_kernel_site_(cus_graph_node node, cus_function *fn,
                                              cus_dim3 grid, cus_dim3 block,
                                              unsigned int shared_bytes, unsigned int nargs,
                                              void **args, const size_t *sizes)
{
    SET_MACRO_ENTER("cus_graph_set_kernel");
    return cus_graph_set_kernel_(node, fn, NULL, grid, block, shared_bytes, nargs, args, sizes,
                                 true, "cus_graph_set_kernel");
}

CUS_API cus_status cus_graph_set_library_kernel_site_(cus_graph_node node, cus_kernel *k,
                                                      cus_dim3 grid, cus_dim3 block,
                                                      unsigned int shared_bytes,
                                                      unsigned int nargs, void **args,
                                                      const size_t *sizes)
{
    SET_MACRO_ENTER("cus_graph_set_kernel");
    return cus_graph_set_kernel_(node, NULL, k, grid, block, shared_bytes, nargs, args, sizes,
                                 true, "cus_graph_set_kernel");
}

CUS_API cus_status cus_graph_set_event_record(cus_graph_node node, cus_event *event)
{
    CUS_API_ENTER();
    return cus_graph_set_event_(node, event, true, __func__);
}

CUS_API cus_status cus_graph_set_event_wait(cus_graph_node node, cus_event *event)
{
    CUS_API_ENTER();
    return cus_graph_set_event_(node, event, false, __func__);
}

/* --- reading an event node ------------------------------------------------------------------ */

/* The graphs g's keep list holds (a clone's original, child graphs), each
 * with a new reference, into *out (malloc'd; NULL when none); and the
 * cus_event of handle h among the events it holds, a new reference, into
 * *ev. Under g's root lock. False when out of host memory. */
static bool kept_scan_locked(const cus_graph *root, CUevent h, cus_event **ev, cus_graph ***out,
                             size_t *n)
{
    static cus_event event_probe;
    static cus_graph graph_probe;
    const cus_release_fn_ event_release = cus_capture_item_event_(&event_probe).release;
    const cus_release_fn_ graph_release = cus_graph_keep_item_(&graph_probe).release;
    size_t graphs = 0;
    for (size_t i = 0; i < root->keep.count; i++) {
        const keep_entry *e = &root->keep.items[i];
        if (!*ev && e->release == event_release && ((cus_event *)e->obj)->handle == h)
            *ev = cus_event_ref(e->obj);
        graphs += e->release == graph_release;
    }
    *out = NULL;
    *n = 0;
    if (*ev || !graphs)
        return true;
    cus_graph **list = cus_malloc_(graphs * sizeof *list);
    if (!list)
        return false;
    for (size_t i = 0; i < root->keep.count; i++)
        if (root->keep.items[i].release == graph_release)
            list[(*n)++] = cus_graph_ref(root->keep.items[i].obj);
    *out = list;
    return true;
}

/* The cus_event of handle h that g keeps, directly or through the graphs it
 * keeps, as a new reference; NULL when none. One graph's lock at a time
 * (no order to keep between them); keep lists only grow while a graph
 * lives, so what was seen stays. */
static cus_status kept_event(cus_graph *g, CUevent h, unsigned int depth, cus_event **ev,
                             const char *function)
{
    cus_graph **inner = NULL;
    size_t n = 0;
    bool ok;
    {
        cus_graph *root = cus_graph_root_(g);
        CUS_LOCK_SCOPE(&root->lock);
        ok = kept_scan_locked(root, h, ev, &inner, &n);
    }
    if (!ok)
        return cus_fail_(CUS_ERROR_OUT_OF_HOST_MEMORY, function, NULL, "a list of kept graphs");
    cus_status st = CUS_SUCCESS;
    for (size_t i = 0; i < n; i++) {
        if (!*ev && !st && depth < 64)
            st = kept_event(inner[i], h, depth + 1, ev, function);
        cus_graph_unref(inner[i]);
    }
    free(inner);
    return st;
}

CUS_API cus_status cus_graph_event_node_event(cus_graph_node node, cus_event **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(out);
    CUS_CHECK_NODE_(node);
    cus_graph *g = cus_graph_of_node_(node);
    CUS_CHECK_POISON(g->ctx);
    CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
    CUevent h = NULL;
    const char *call = "cuGraphNodeGetType";
    CUresult r;
    {
        CUS_GRAPH_LOCK_IDLE_(g, __func__);
        r = cus_drv_.cuGraphNodeGetType_(node.handle, &type);
        /* Any other type: the record getter, which the driver refuses. */
        if (r == CUDA_SUCCESS && type == CU_GRAPH_NODE_TYPE_WAIT_EVENT) {
            call = "cuGraphEventWaitNodeGetEvent";
            r = cus_drv_.cuGraphEventWaitNodeGetEvent_(node.handle, &h);
        } else if (r == CUDA_SUCCESS) {
            call = "cuGraphEventRecordNodeGetEvent";
            r = cus_drv_.cuGraphEventRecordNodeGetEvent_(node.handle, &h);
        }
    }
    if (r)
        return cus_context_driver_fail_(g->ctx, r, __func__, call);
    cus_event *ev = NULL;
    CUS_TRY(kept_event(g, h, 0, &ev, __func__));
    if (!ev)
        return CUS_FAIL((cus_status)CUDA_ERROR_NOT_FOUND, call,
                        "node %p's event %p is no cus_event its graph keeps (a node the raw "
                        "driver made or changed?)",
                        (void *)node.handle, (void *)h);
    *out = ev;
    return CUS_SUCCESS;
}

/* The body is made before the driver call and the node's slot in the root's
 * lent list reserved, so that nothing fails after it. */
CUS_API cus_status cus_graph_child_graph(cus_graph_node node, cus_graph **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(out);
    CUS_CHECK_NODE_(node);
    cus_graph *g = cus_graph_of_node_(node);
    CUS_CHECK_POISON(g->ctx);
    cus_autofree cus_graph *b = cus_calloc_(1, sizeof *b);
    if (!b)
        return CUS_FAIL(CUS_ERROR_OUT_OF_HOST_MEMORY, NULL, "allocating a graph");
    cus_graph *root = cus_graph_root_(g);
    CUgraph h = NULL;
    {
        CUS_GRAPH_LOCK_IDLE_(g, __func__);
        bool lent = lent_find_locked(root, node.handle);
        if (!lent && !lent_reserve_locked(root))
            return CUS_FAIL(CUS_ERROR_OUT_OF_HOST_MEMORY, NULL, "the list of lent child graphs");
        CUresult r = cus_drv_.cuGraphChildGraphNodeGetGraph_(node.handle, &h);
        if (r)
            return cus_context_driver_fail_(g->ctx, r, __func__, "cuGraphChildGraphNodeGetGraph");
        if (!lent)
            root->lent[root->lent_count++] = node.handle;
    }
    cus_graph_body_init_(b, g, h);
    *out = cus_steal(&b);
    return CUS_SUCCESS;
}

/* A record is alive while the node is in a graph: the graph keeps what its
 * nodes were added or set with (a capture's graph its host records, a clone
 * its original). */
CUS_API cus_status cus_graph_host_node_fn(cus_graph_node node, cus_host_fn *fn, void **user_data)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(fn);
    CUS_CHECK_NODE_(node);
    cus_graph *g = cus_graph_of_node_(node);
    CUS_CHECK_POISON(g->ctx);
    CUDA_HOST_NODE_PARAMS p = {NULL, NULL};
    CUresult r;
    {
        CUS_GRAPH_LOCK_IDLE_(g, __func__);
        r = cus_drv_.cuGraphHostNodeGetParams_(node.handle, &p);
    }
    if (r)
        return cus_context_driver_fail_(g->ctx, r, __func__, "cuGraphHostNodeGetParams");
    cus_host_record_head_ raw = {(cus_host_fn)p.fn, p.userData};
    const cus_host_record_head_ *rec = &raw;
    if (p.fn == cus_graph_host_trampoline_ || p.fn == cus_stream_host_trampoline_)
        rec = p.userData;
    *fn = rec->fn;
    if (user_data)
        *user_data = rec->user_data;
    return CUS_SUCCESS;
}

CUS_API cus_status cus_graph_set_host_fn(cus_graph_node node, cus_host_fn fn, void *user_data)
{
    CUS_API_ENTER();
    return cus_graph_set_host_fn_(node, fn, user_data, __func__);
}

CUS_API cus_status cus_graph_set_fill_u32(cus_graph_node node, cus_buffer *buf, size_t offset,
                                          uint32_t value, size_t count)
{
    CUS_API_ENTER();
    return cus_graph_set_fill_(node, buf, offset, value, 4, count, __func__);
}

CUS_API cus_status cus_graph_set_copy_to_device(cus_graph_node node, cus_buffer *dst,
                                                size_t dst_offset, const void *src, size_t bytes)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(dst && src);
    return cus_graph_set_copy_(node, dst, dst_offset, src, NULL, 0, NULL, bytes, __func__);
}

CUS_API cus_status cus_graph_set_copy_to_host(cus_graph_node node, void *dst, cus_buffer *src,
                                              size_t src_offset, size_t bytes)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(dst && src);
    return cus_graph_set_copy_(node, NULL, 0, NULL, src, src_offset, dst, bytes, __func__);
}
