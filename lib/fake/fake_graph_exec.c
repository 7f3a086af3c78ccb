/* Executable graphs: cuGraphInstantiateWithFlags, cuGraphExecDestroy,
 * cuGraphLaunch (the replay), cuGraphUpload and cuGraphExecUpdate; part of
 * the graph area (fake_graph.c has the bodies and records). */
#include <inttypes.h>
#include <string.h>

#include "fake_graph_records.h"

/* --- executable graphs: entry points ------------------------------------------------------------ */

/* The instantiation flags of CUDA 12 (CUDA_GRAPH_INSTANTIATE_FLAG_*). */
enum {
    FLAG_AUTO_FREE_ON_LAUNCH = 1,
    FLAG_UPLOAD = 2,
    FLAG_DEVICE_LAUNCH = 4,
    FLAG_USE_NODE_PRIORITY = 8,
};

/* Whether the graph still has what its nodes refer to, once the context it
 * was captured in is dead: its kernel nodes' functions and its graph
 * allocations went with it (misuse, reported here). Copies, memsets and host
 * functions are checked when they run. */
static bool nodes_survive_locked(const struct CUgraph_st *g)
{
    const fake_graph_body *b = g->body;
    for (size_t i = 0; i < b->nnodes; i++) {
        const struct CUgraphNode_st *n = b->nodes[i];
        const char *kernel = n->kind == FAKE_OP_LAUNCH
                                 ? fake_module_launch_lost_with_context(n->u.launch.exec)
                                 : NULL;
        if (kernel) {
            fake_misuse_locked("cuGraphInstantiateWithFlags of graph 0x%" PRIxPTR ", whose kernel "
                               "node %zu ('%s') lost its function with the context 0x%" PRIxPTR
                               " it was captured in",
                               (uintptr_t)g, i, kernel, (uintptr_t)g->ctx);
            return false;
        }
        if ((n->kind == FAKE_OP_ALLOC || n->kind == FAKE_OP_FREE) &&
            !fake_memory_is_graph_alloc(n->u.mem.mem)) {
            fake_misuse_locked("cuGraphInstantiateWithFlags of graph 0x%" PRIxPTR ", whose memory "
                               "node %zu lost its allocation with the context 0x%" PRIxPTR
                               " it was captured in",
                               (uintptr_t)g, i, (uintptr_t)g->ctx);
            return false;
        }
    }
    return true;
}

/* Instantiation needs a current context, as on the H200 (INVALID_CONTEXT
 * with none; a poisoned one answers its error); the executable graph belongs
 * to the graph's context, or, once that is dead, to the current one (a graph
 * outlives its context: see nodes_survive_locked for what it can still be). */
static CUresult instantiate_locked(CUgraphExec *phGraphExec, CUgraph hGraph,
                                   unsigned long long flags, bool with_params,
                                   CUgraphNode *err_node)
{
    if (!phGraphExec)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUgraph_st *g = NULL;
    CUresult r = fake_graph_graph_arg_locked(hGraph, &g);
    if (r != CUDA_SUCCESS)
        return r;
    struct CUctx_st *current = NULL;
    r = fake_current_context_locked(&current);
    if (r != CUDA_SUCCESS)
        return r;
    const unsigned long long known =
        FLAG_AUTO_FREE_ON_LAUNCH | FLAG_UPLOAD | FLAG_DEVICE_LAUNCH | FLAG_USE_NODE_PRIORITY;
    /* UPLOAD is for cuGraphInstantiateWithParams only; DEVICE_LAUNCH excludes AUTO_FREE. */
    if ((flags & ~known) || ((flags & FLAG_UPLOAD) && !with_params) ||
        ((flags & FLAG_DEVICE_LAUNCH) && (flags & FLAG_AUTO_FREE_ON_LAUNCH)))
        return CUDA_ERROR_INVALID_VALUE;
    if (g->capture)
        return CUDA_ERROR_ILLEGAL_STATE; /* not instantiable before its end */
    if (g->parent)
        return CUDA_ERROR_INVALID_VALUE; /* a body runs inside its node only */
    const fake_graph_body *b = g->body;
    if (flags & FLAG_DEVICE_LAUNCH) {
        /* Device graphs: kernel, memcpy and memset nodes only, and at least one. */
        if (b->nnodes == 0)
            return CUDA_ERROR_INVALID_VALUE;
        for (size_t i = 0; i < b->nnodes; i++) {
            fake_op_kind k = b->nodes[i]->kind;
            if (k != FAKE_OP_LAUNCH && k != FAKE_OP_COPY && k != FAKE_OP_MEMSET) {
                *err_node = b->nodes[i];
                return CUDA_ERROR_INVALID_VALUE;
            }
        }
    }
    /* A graph with memory nodes has one executable graph at a time. */
    if (b->has_memory_nodes && g->execs_live)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUctx_st *owner = g->ctx; /* NULL: made by cuGraphCreate with none current */
    if (!owner || owner->h.state != FAKE_LIVE) {
        if (!nodes_survive_locked(g))
            return CUDA_ERROR_INVALID_VALUE;
        owner = current;
    }
    if (!RESERVE(fake_graph_execs, fake_graph_exec_count, fake_graph_exec_capacity))
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct CUgraphExec_st *x = fake_handle_new_locked(CUS_FAKE_HANDLE_GRAPH_EXEC, sizeof *x, 0);
    if (!x)
        return CUDA_ERROR_OUT_OF_MEMORY;
    x->ctx = owner;
    x->body = fake_graph_body_ref(g->body); /* a snapshot: the body never changes */
    x->origin = g;
    x->flags = flags;
    g->execs_live++;
    fake_graph_execs[fake_graph_exec_count++] = x;
    *phGraphExec = x;
    return CUDA_SUCCESS;
}

CUresult fake_graph_instantiate_locked(CUgraphExec *phGraphExec, CUgraph hGraph,
                                       unsigned long long flags, bool with_params,
                                       CUgraphInstantiateResult *result, CUgraphNode *err_node)
{
    CUgraphNode bad = NULL;
    CUresult r = instantiate_locked(phGraphExec, hGraph, flags, with_params, &bad);
    if (result)
        *result = r == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS
                  : bad             ? CUDA_GRAPH_INSTANTIATE_NODE_OPERATION_NOT_SUPPORTED
                                    : CUDA_GRAPH_INSTANTIATE_ERROR;
    if (err_node)
        *err_node = bad;
    return r;
}

CUresult CUDAAPI fake_cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
                                                  unsigned long long flags)
{
    FAKE_ENTER(cuGraphInstantiateWithFlags);
    return fake_leave(fake_graph_instantiate_locked(phGraphExec, hGraph, flags, false, NULL, NULL));
}

CUresult CUDAAPI fake_cuGraphExecDestroy(CUgraphExec hGraphExec)
{
    FAKE_ENTER(cuGraphExecDestroy);
    fake_handle *h = fake_handle_find_locked((uintptr_t)hGraphExec);
    if (h && h->kind == CUS_FAKE_HANDLE_GRAPH_EXEC && h->state == FAKE_DESTROYED &&
        !((struct CUgraphExec_st *)h)->ctx_destroyed) {
        fake_misuse_locked("double destroy of executable graph 0x%" PRIxPTR,
                           (uintptr_t)hGraphExec);
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    }
    struct CUgraphExec_st *x = NULL;
    CUresult r = fake_graph_exec_arg_locked(hGraphExec, false, &x); /* poisoned or not */
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    /* A launch still queued runs: its operations own copies of the nodes. */
    fake_graph_exec_release_locked(x);
    return fake_leave(CUDA_SUCCESS);
}

/* The checks that cuGraphLaunch and cuGraphUpload share: the executable
 * graph, the stream, their contexts, the stream's capture state. */
static CUresult exec_stream_locked(CUgraphExec he, CUstream hs, struct CUgraphExec_st **xo,
                                   struct CUstream_st **so)
{
    struct CUgraphExec_st *x = NULL;
    CUresult r = fake_graph_exec_arg_locked(he, true, &x);
    if (r != CUDA_SUCCESS)
        return r;
    struct CUstream_st *s = NULL;
    r = fake_stream_arg_locked(hs, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if (s->ctx != x->ctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (s->capture) {
        /* Child graph nodes are not emulated: a capture cannot take a launch. */
        if (s->capture->invalidated)
            return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
        s->capture->invalidated = true;
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    if (s->is_default && fake_captures_active) {
        r = fake_graph_legacy_use_locked(s->ctx);
        if (r != CUDA_SUCCESS)
            return r;
    }
    *xo = x;
    *so = s;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
    FAKE_ENTER(cuGraphLaunch);
    struct CUgraphExec_st *x = NULL;
    struct CUstream_st *s = NULL;
    CUresult r = exec_stream_locked(hGraphExec, hStream, &x, &s);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    const fake_graph_body *b = x->body;
    /* Graph memory first, so that a refused launch queues nothing. */
    for (size_t i = 0; i < b->nnodes; i++) {
        const struct CUgraphNode_st *n = b->nodes[i];
        if (n->kind == FAKE_OP_ALLOC && fake_memory_graph_outstanding(n->u.mem.mem) &&
            !(x->flags & FLAG_AUTO_FREE_ON_LAUNCH))
            return fake_leave(CUDA_ERROR_INVALID_VALUE); /* documented: still allocated */
        if (n->kind == FAKE_OP_FREE && !fake_graph_body_allocates(b, n->u.mem.mem) &&
            !fake_memory_graph_outstanding(n->u.mem.mem)) {
            fake_misuse_locked("cuGraphLaunch of executable graph 0x%" PRIxPTR
                               " frees graph allocation 0x%" PRIxPTR
                               " of another graph, which no launch left allocated (double free)",
                               (uintptr_t)x, (uintptr_t)fake_memory_global_base(n->u.mem.mem));
            return fake_leave(CUDA_ERROR_INVALID_VALUE);
        }
    }
    r = fake_graph_conditional_launch_locked(x, s);
    if (r == CUDA_SUCCESS)
        r = fake_graph_replay_body_locked(x, b, s, hStream);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    /* What the launch leaves allocated, and what it frees of others'. */
    for (size_t i = 0; i < b->nnodes; i++) {
        const struct CUgraphNode_st *n = b->nodes[i];
        if (n->kind == FAKE_OP_ALLOC)
            fake_memory_graph_set_outstanding_locked(n->u.mem.mem,
                                                     !fake_graph_body_frees(b, n->u.mem.mem));
        else if (n->kind == FAKE_OP_FREE && !fake_graph_body_allocates(b, n->u.mem.mem))
            fake_memory_graph_set_outstanding_locked(n->u.mem.mem, false);
    }
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream)
{
    FAKE_ENTER(cuGraphUpload);
    struct CUgraphExec_st *x = NULL;
    struct CUstream_st *s = NULL;
    /* Nothing to upload to: validated, and no operation queued. */
    return fake_leave(exec_stream_locked(hGraphExec, hStream, &x, &s));
}

/* Whether two copy operands are of the same kind of memory on the same
 * device (what an update may not change). */
static bool same_operand(const fake_mem *a, const fake_mem *b)
{
    CUdevice da = -1, db = -1;
    bool on_a = false, on_b = false;
    fake_memory_operand_kind(a, &da, &on_a);
    fake_memory_operand_kind(b, &db, &on_b);
    return on_a == on_b && (!on_a || da == db);
}

/* The update rules, node by node in order; the first failure is the result. */
static CUgraphExecUpdateResult compare_bodies(const fake_graph_body *from,
                                              const fake_graph_body *to, CUgraphNode *error_node,
                                              CUgraphNode *error_from)
{
    if (from->nnodes != to->nnodes)
        return CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED; /* no node to blame */
    for (size_t i = 0; i < to->nnodes; i++) {
        const struct CUgraphNode_st *a = from->nodes[i];
        struct CUgraphNode_st *n = to->nodes[i];
        *error_node = n;
        if (a->kind != n->kind || fake_graph_node_type(a) != fake_graph_node_type(n))
            return CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED;
        if (a->ndeps != n->ndeps)
            return CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
        for (size_t j = 0; j < n->ndeps; j++) {
            fake_edge ea = fake_graph_edge_of(a, j), en = fake_graph_edge_of(n, j);
            if (a->deps[j]->index != n->deps[j]->index || ea.from_port != en.from_port ||
                ea.to_port != en.to_port || ea.type != en.type) {
                *error_from = n->deps[j];
                return CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED; /* an edge's data too */
            }
        }
        switch (n->kind) {
        case FAKE_OP_LAUNCH:
            if (fake_module_launch_context(a->u.launch.exec) !=
                fake_module_launch_context(n->u.launch.exec))
                return CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE;
            if (fake_module_launch_cooperative(a->u.launch.exec) !=
                fake_module_launch_cooperative(n->u.launch.exec))
                return CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED;
            break;
        case FAKE_OP_COPY:
            if (!same_operand(a->u.copy.dst_mem, n->u.copy.dst_mem) ||
                !same_operand(a->u.copy.src_mem, n->u.copy.src_mem))
                return CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED;
            break;
        case FAKE_OP_MEMSET:
            if (!same_operand(a->u.memset.mem, n->u.memset.mem))
                return CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED;
            break;
        case FAKE_OP_ALLOC:
        case FAKE_OP_FREE:
            /* A memory node's allocation is fixed: it cannot change. */
            if (a->u.mem.mem != n->u.mem.mem)
                return CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED;
            break;
        case FAKE_OP_HOST_FN:
        case FAKE_OP_RECORD:
        case FAKE_OP_CONDITIONAL: /* replays only (fake_graph_conditional.c) */
        case FAKE_OP_WAIT:
        case FAKE_OP_PREFETCH:
            break;
        }
    }
    *error_node = NULL;
    return CU_GRAPH_EXEC_UPDATE_SUCCESS;
}

/* Both variants: fills info (when the arguments get that far). */
static CUresult update_locked(CUgraphExec he, CUgraph hg, CUgraphExecUpdateResultInfo *info)
{
    memset(info, 0, sizeof *info);
    info->result = CU_GRAPH_EXEC_UPDATE_ERROR;
    struct CUgraphExec_st *x = NULL;
    struct CUgraph_st *g = NULL;
    /* Poisoned or not, as on the H200: an update only changes parameters. */
    CUresult r = fake_graph_exec_arg_locked(he, false, &x);
    if (r == CUDA_SUCCESS)
        r = fake_graph_graph_arg_locked(hg, &g);
    if (r != CUDA_SUCCESS)
        return r;
    if (g->capture)
        return CUDA_ERROR_ILLEGAL_STATE; /* its capture is not over */
    info->result = compare_bodies(x->body, g->body, &info->errorNode, &info->errorFromNode);
    if (info->result != CU_GRAPH_EXEC_UPDATE_SUCCESS)
        return CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE; /* the executable graph is unchanged */
    /* Future launches replay the new parameters; queued ones keep theirs. */
    fake_graph_body *old = x->body;
    x->body = fake_graph_body_ref(g->body);
    fake_graph_body_unref_locked(old);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuGraphExecUpdate(CUgraphExec hGraphExec, CUgraph hGraph,
                                        CUgraphNode *hErrorNode_out,
                                        CUgraphExecUpdateResult *updateResult_out)
{
    FAKE_ENTER(cuGraphExecUpdate);
    if (!hErrorNode_out || !updateResult_out)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    CUgraphExecUpdateResultInfo info;
    CUresult r = update_locked(hGraphExec, hGraph, &info);
    *hErrorNode_out = info.errorNode;
    *updateResult_out = info.result;
    return fake_leave(r);
}

CUresult CUDAAPI fake_cuGraphExecUpdate_v2(CUgraphExec hGraphExec, CUgraph hGraph,
                                           CUgraphExecUpdateResultInfo *resultInfo)
{
    FAKE_ENTER(cuGraphExecUpdate_v2);
    if (!resultInfo)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    return fake_leave(update_locked(hGraphExec, hGraph, resultInfo));
}
