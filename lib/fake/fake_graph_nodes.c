/* Graphs built by hand: cuGraphCreate, cuGraphAdd{Kernel,Memcpy,Memset,Host,
 * EventRecord,EventWait,Empty,ChildGraph}Node, cuGraphAddDependencies,
 * cuGraphGetRootNodes, and the per-node updates of executable graphs
 * (cuGraphExec{Kernel,Memcpy,Memset}NodeSetParams, cuGraphNodeSetEnabled);
 * part of the graph area (fake_graph.c has the bodies and records), and the
 * replay of a body, which cuGraphLaunch makes (fake_graph_exec.c).
 *
 * A body is shared by its graph and the executable graphs made from it. A
 * change to either side copies it first (copy on write): a graph changed
 * after an instantiation gives its executable graphs one copy of its old
 * nodes (so its own node handles stay its own); an executable graph whose
 * node is updated takes a copy for itself. A copy's nodes name the graph's
 * node they stand for (origin), which is how the per-node updates find
 * them.
 *
 * Order: a body's nodes are kept in an order in which every node comes after
 * its dependencies (a node added names only nodes already there; an edge
 * added against that order re-sorts the body, and a cycle is refused), and
 * replays queue them in that order, which respects every edge.
 *
 * What the fake does not know of the real driver, and chose (say so in
 * reports): a copy node's 2D or 3D region is checked as cuMemcpy3D checks
 * it (fake_memory_2d.c), and runs as one strided copy; an edge that exists already, a cycle, or a child graph with memory nodes
 * are refused with CUDA_ERROR_INVALID_VALUE; adding nodes to the graph of a
 * capture in progress is refused with CUDA_ERROR_ILLEGAL_STATE (the driver
 * allows it, with cuStreamUpdateCaptureDependencies, which the fake lacks);
 * a child graph node's nodes are not compared by cuGraphExecUpdate. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "fake_graph_records.h"
#include "fake_memory_records.h"

/* --- bodies: copies, order ------------------------------------------------------------------ */

static bool register_node_locked(struct CUgraphNode_st *n)
{
    if (!fake_graph_node_reserve_locked())
        return false;
    fake_graph_node_register_locked(n);
    return true;
}

fake_graph_body *fake_graph_body_clone_locked(const fake_graph_body *b)
{
    fake_graph_body *c = fake_graph_body_new_locked();
    if (!c)
        return NULL;
    c->has_memory_nodes = b->has_memory_nodes;
    c->nodes = b->nnodes ? calloc(b->nnodes, sizeof *c->nodes) : NULL;
    if (b->nnodes && !c->nodes) {
        fake_graph_body_unref_locked(c);
        return NULL;
    }
    c->capacity = b->nnodes;
    for (size_t i = 0; i < b->nnodes; i++) {
        const struct CUgraphNode_st *n = b->nodes[i];
        struct CUgraphNode_st *k = calloc(1, sizeof *k);
        bool ok = k && register_node_locked(k);
        if (!ok) {
            free(k);
            fake_graph_body_unref_locked(c);
            return NULL;
        }
        *k = *n;
        k->body = c;
        k->origin = n->origin ? n->origin : (struct CUgraphNode_st *)n;
        k->deps = NULL;
        k->edges = NULL;
        k->ndeps = 0;
        k->child = NULL;
        k->child_graph = NULL; /* the original's handle stays the original's */
        if (n->kind == FAKE_OP_LAUNCH)
            k->u.launch.exec = NULL; /* until copied below */
        c->nodes[c->nnodes++] = k; /* from here on, the body's to free */
        if (n->kind == FAKE_OP_LAUNCH) {
            k->u.launch.exec = fake_module_launch_replay(n->u.launch.exec, NULL, NULL);
            if (!k->u.launch.exec) {
                fake_graph_body_unref_locked(c);
                return NULL;
            }
        } else if (n->kind == FAKE_OP_ALLOC) {
            fake_memory_graph_hold_locked(n->u.mem.mem);
        }
        if (n->child)
            k->child = fake_graph_body_ref(n->child);
        if (n->ndeps) {
            k->deps = malloc(n->ndeps * sizeof *k->deps);
            if (!k->deps) {
                fake_graph_body_unref_locked(c);
                return NULL;
            }
            for (size_t j = 0; j < n->ndeps; j++)
                k->deps[j] = c->nodes[n->deps[j]->index]; /* earlier: copied already */
            k->ndeps = n->ndeps;
            if (!fake_graph_edges_copy(k, n)) {
                fake_graph_body_unref_locked(c);
                return NULL;
            }
        }
    }
    return c;
}

/* Before g's nodes change: the executable graphs that share its body get a
 * copy of it. A child graph node's own graph changes its node: the graph
 * that holds the node is detached first, then the other holders of the
 * child body (executable graphs' copies, clones) get a copy of it. */
static CUresult detach_execs_locked(struct CUgraph_st *g)
{
    fake_graph_body *b = g->body;
    if (g->owner) {
        CUresult r = detach_execs_locked(g->parent);
        if (r != CUDA_SUCCESS || b->refs <= 2) /* the node's and g's */
            return r;
        fake_graph_body *copy = fake_graph_body_clone_locked(b);
        if (!copy)
            return CUDA_ERROR_OUT_OF_MEMORY;
        fake_graph_body_share_out_locked(b, g->owner, copy);
        fake_graph_body_unref_locked(copy);
        return CUDA_SUCCESS;
    }
    if (b->refs == 1)
        return CUDA_SUCCESS;
    fake_graph_body *copy = fake_graph_body_clone_locked(b);
    if (!copy)
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (size_t i = 0; i < fake_graph_exec_count; i++) {
        struct CUgraphExec_st *x = fake_graph_execs[i];
        if (x->body == b) {
            x->body = fake_graph_body_ref(copy);
            fake_graph_body_unref_locked(b);
        }
    }
    fake_graph_body_unref_locked(copy);
    return CUDA_SUCCESS;
}

/* A node argument: known, not a tombstone; NULL: CUDA_ERROR_INVALID_VALUE. */
static CUresult node_arg_locked(CUgraphNode hn, struct CUgraphNode_st **out)
{
    if (!hn)
        return CUDA_ERROR_INVALID_VALUE;
    if (!fake_graph_node_find_locked(hn)) {
        fake_misuse_locked("unknown graph node handle 0x%" PRIxPTR, (uintptr_t)hn);
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (hn->released || !hn->body) {
        fake_misuse_locked("graph node 0x%" PRIxPTR " used after its graph was destroyed",
                           (uintptr_t)hn);
        return CUDA_ERROR_INVALID_VALUE;
    }
    *out = hn;
    return CUDA_SUCCESS;
}

/* A node of graph g (another graph's is refused, as by the driver). */
static CUresult node_of_locked(const struct CUgraph_st *g, CUgraphNode hn,
                               struct CUgraphNode_st **out)
{
    struct CUgraphNode_st *n = NULL;
    CUresult r = node_arg_locked(hn, &n);
    if (r != CUDA_SUCCESS)
        return r;
    if (n->body != g->body) {
        fake_misuse_locked("graph node 0x%" PRIxPTR " belongs to another graph than 0x%" PRIxPTR,
                           (uintptr_t)hn, (uintptr_t)g);
        return CUDA_ERROR_INVALID_VALUE;
    }
    *out = n;
    return CUDA_SUCCESS;
}

/* Sorts b's nodes so that each comes after its dependencies (Kahn's
 * algorithm, stable); false, b unchanged, on a cycle or out of memory
 * (*oom says which). */
static bool body_sort(fake_graph_body *b, bool *oom)
{
    size_t n = b->nnodes;
    *oom = false;
    struct CUgraphNode_st **order = malloc(n * sizeof *order);
    bool *placed = calloc(n, sizeof *placed);
    if (!order || !placed) {
        free(order);
        free(placed);
        *oom = true;
        return false;
    }
    size_t count = 0;
    bool progress = true;
    while (count < n && progress) {
        progress = false;
        for (size_t i = 0; i < n; i++) {
            struct CUgraphNode_st *x = b->nodes[i];
            if (placed[i])
                continue;
            bool ready = true;
            for (size_t j = 0; j < x->ndeps && ready; j++)
                ready = placed[x->deps[j]->index];
            if (ready) {
                placed[i] = true;
                order[count++] = x;
                progress = true;
            }
        }
    }
    free(placed);
    if (count < n) {
        free(order);
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        b->nodes[i] = order[i];
        order[i]->index = i;
    }
    free(order);
    return true;
}

/* --- graphs ---------------------------------------------------------------------------------- */

/* A graph belongs to no context; it remembers the current one (if any) for
 * its executable graphs, as a captured graph remembers its capture's. */
CUresult CUDAAPI fake_cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
    FAKE_ENTER(cuGraphCreate);
    if (!phGraph || flags != 0)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    struct CUctx_st *c = NULL;
    if (fake_current_context_any_locked(&c) != CUDA_SUCCESS)
        c = NULL;
    fake_graph_body *b = fake_graph_body_new_locked();
    struct CUgraph_st *g = b ? fake_graph_record_new_locked(c, b) : NULL;
    if (!g) {
        fake_graph_body_unref_locked(b);
        return fake_leave(CUDA_ERROR_OUT_OF_MEMORY);
    }
    *phGraph = g;
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuGraphGetRootNodes(CUgraph hGraph, CUgraphNode *rootNodes,
                                          size_t *numRootNodes)
{
    FAKE_ENTER(cuGraphGetRootNodes);
    struct CUgraph_st *g = NULL;
    CUresult r = fake_graph_graph_arg_locked(hGraph, &g);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (!numRootNodes)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    const fake_graph_body *b = g->body;
    size_t roots = 0;
    for (size_t i = 0; i < b->nnodes; i++)
        roots += b->nodes[i]->ndeps == 0;
    if (!rootNodes) {
        *numRootNodes = roots;
        return fake_leave(CUDA_SUCCESS);
    }
    /* As cuGraphGetNodes: up to *numRootNodes, NULL past the roots. */
    size_t want = *numRootNodes, k = 0;
    for (size_t i = 0; i < b->nnodes && k < want; i++)
        if (b->nodes[i]->ndeps == 0)
            rootNodes[k++] = b->nodes[i];
    for (size_t i = k; i < want; i++)
        rootNodes[i] = NULL;
    if (want > roots)
        *numRootNodes = roots;
    return fake_leave(CUDA_SUCCESS);
}

/* --- adding nodes ------------------------------------------------------------------------------ */

/* The checks every add makes: the out pointer, the graph (not being
 * captured), the dependencies (nodes of this graph, no repeats). */
static CUresult add_prologue_locked(CUgraphNode *out, CUgraph hg, const CUgraphNode *deps,
                                    size_t ndeps, struct CUgraph_st **g)
{
    if (!out || (ndeps && !deps))
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = fake_graph_graph_arg_locked(hg, g);
    if (r != CUDA_SUCCESS)
        return r;
    if ((*g)->capture)
        return CUDA_ERROR_ILLEGAL_STATE;
    for (size_t i = 0; i < ndeps; i++) {
        struct CUgraphNode_st *d = NULL;
        r = node_of_locked(*g, deps[i], &d);
        if (r != CUDA_SUCCESS)
            return r;
        for (size_t j = 0; j < i; j++)
            if (deps[j] == deps[i])
                return CUDA_ERROR_INVALID_VALUE; /* a repeated dependency */
    }
    return CUDA_SUCCESS;
}

/* Appends a node of `type` after deps (checked) to g; its payload is the
 * caller's to fill. NULL when out of memory, nothing changed. */
static struct CUgraphNode_st *node_add_locked(struct CUgraph_st *g, const CUgraphNode *deps,
                                              size_t ndeps, CUgraphNodeType type,
                                              fake_op_kind kind, const union fake_op_payload *u)
{
    if (detach_execs_locked(g) != CUDA_SUCCESS)
        return NULL;
    fake_graph_body *b = g->body;
    if (!RESERVE(b->nodes, b->nnodes, b->capacity))
        return NULL;
    struct CUgraphNode_st *n = calloc(1, sizeof *n);
    if (!n || (ndeps && !(n->deps = malloc(ndeps * sizeof *n->deps))) || !register_node_locked(n)) {
        if (n)
            free(n->deps);
        free(n);
        return NULL;
    }
    if (ndeps)
        memcpy(n->deps, deps, ndeps * sizeof *n->deps);
    n->ndeps = ndeps;
    n->typed = true;
    n->type = type;
    n->kind = kind;
    if (u)
        n->u = *u;
    n->call = fake_g.current_call;
    n->index = b->nnodes;
    n->body = b;
    b->nodes[b->nnodes++] = n;
    return n;
}

/* Appends the node and hands it out, or answers out of memory. */
#define ADD_NODE(out, g, deps, ndeps, type, kind, u)                           \
    do {                                                                       \
        struct CUgraphNode_st *added_ = node_add_locked(g, deps, ndeps, type, kind, u); \
        if (!added_)                                                           \
            return CUDA_ERROR_OUT_OF_MEMORY;                                   \
        *(out) = added_;                                                       \
        return CUDA_SUCCESS;                                                   \
    } while (0)

/* The kernel-node calls with no context current: the H200 crashes
 * (SIGSEGV, deliberate.txt); the fake reports the misuse and refuses. */
static CUresult kernel_node_context_locked(void)
{
    struct CUctx_st *c = NULL;
    if (fake_current_context_any_locked(&c) != CUDA_ERROR_INVALID_CONTEXT)
        return CUDA_SUCCESS;
    fake_misuse_locked("%s with no context current (the driver crashes)", fake_g.current_call);
    return CUDA_ERROR_INVALID_CONTEXT;
}

static CUresult add_kernel_locked(CUgraphNode *out, CUgraph hg, const CUgraphNode *deps,
                                  size_t ndeps, const CUDA_KERNEL_NODE_PARAMS_v2 *p)
{
    struct CUgraph_st *g = NULL;
    CUresult r = kernel_node_context_locked();
    if (r == CUDA_SUCCESS)
        r = add_prologue_locked(out, hg, deps, ndeps, &g);
    if (r != CUDA_SUCCESS)
        return r;
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    union fake_op_payload u = {0};
    r = fake_module_node_launch_locked(p, NULL, &u.launch.exec);
    if (r != CUDA_SUCCESS)
        return r;
    struct CUgraphNode_st *n =
        node_add_locked(g, deps, ndeps, CU_GRAPH_NODE_TYPE_KERNEL, FAKE_OP_LAUNCH, &u);
    if (!n) {
        fake_module_launch_free(u.launch.exec);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *out = n;
    return CUDA_SUCCESS;
}

static CUDA_KERNEL_NODE_PARAMS_v2 params_v2(const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
    CUDA_KERNEL_NODE_PARAMS_v2 q = {
        .func = p->func, .gridDimX = p->gridDimX, .gridDimY = p->gridDimY,
        .gridDimZ = p->gridDimZ, .blockDimX = p->blockDimX, .blockDimY = p->blockDimY,
        .blockDimZ = p->blockDimZ, .sharedMemBytes = p->sharedMemBytes,
        .kernelParams = p->kernelParams, .extra = p->extra,
    };
    return q;
}

CUresult CUDAAPI fake_cuGraphAddKernelNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                           const CUgraphNode *dependencies,
                                           size_t numDependencies,
                                           const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams)
{
    FAKE_ENTER(cuGraphAddKernelNode);
    CUDA_KERNEL_NODE_PARAMS_v2 q;
    if (nodeParams)
        q = params_v2(nodeParams);
    return fake_leave(add_kernel_locked(phGraphNode, hGraph, dependencies, numDependencies,
                                        nodeParams ? &q : NULL));
}

CUresult CUDAAPI fake_cuGraphAddKernelNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph,
                                              const CUgraphNode *dependencies,
                                              size_t numDependencies,
                                              const CUDA_KERNEL_NODE_PARAMS_v2 *nodeParams)
{
    FAKE_ENTER(cuGraphAddKernelNode_v2);
    return fake_leave(
        add_kernel_locked(phGraphNode, hGraph, dependencies, numDependencies, nodeParams));
}

/* A copy's operands: a 1-D copy checked as cuMemcpyAsync checks it, any
 * other (rows, slices, arrays) as cuMemcpy3D checks it, in context c. */
static CUresult copy_payload_locked(const CUDA_MEMCPY3D *p, const struct CUctx_st *c,
                                    union fake_op_payload *u)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    if (p->srcMemoryType == CU_MEMORYTYPE_ARRAY || p->dstMemoryType == CU_MEMORYTYPE_ARRAY ||
        p->Height > 1 || p->Depth > 1 || p->srcY || p->srcZ || p->dstY || p->dstZ || p->srcLOD ||
        p->dstLOD) {
        CUresult r = fake_memory_copy_3d_payload_locked(p, c, u);
        if (r == CUDA_SUCCESS)
            u->copy.multidim = p->srcMemoryType == CU_MEMORYTYPE_ARRAY ||
                               p->dstMemoryType == CU_MEMORYTYPE_ARRAY || p->Height > 1 ||
                               p->Depth > 1;
        return r;
    }
    uintptr_t dst, src;
    side ds, ss;
    switch (p->dstMemoryType) {
    case CU_MEMORYTYPE_HOST: dst = (uintptr_t)p->dstHost, ds = SIDE_HOST; break;
    case CU_MEMORYTYPE_DEVICE: dst = (uintptr_t)p->dstDevice, ds = SIDE_DEVICE; break;
    case CU_MEMORYTYPE_UNIFIED: dst = (uintptr_t)p->dstDevice, ds = SIDE_ANY; break;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
    switch (p->srcMemoryType) {
    case CU_MEMORYTYPE_HOST: src = (uintptr_t)p->srcHost, ss = SIDE_HOST; break;
    case CU_MEMORYTYPE_DEVICE: src = (uintptr_t)p->srcDevice, ss = SIDE_DEVICE; break;
    case CU_MEMORYTYPE_UNIFIED: src = (uintptr_t)p->srcDevice, ss = SIDE_ANY; break;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
    size_t n = p->WidthInBytes;
    if (n == 0 || !dst || !src)
        return CUDA_ERROR_INVALID_VALUE;
    dst += p->dstXInBytes;
    src += p->srcXInBytes;
    memset(u, 0, sizeof *u);
    u->copy.dst = dst;
    u->copy.src = src;
    u->copy.n = n;
    CUresult r = fake_memory_range_locked(dst, n, ds, "destination", &u->copy.dst_mem, NULL);
    if (r == CUDA_SUCCESS)
        r = fake_memory_range_locked(src, n, ss, "source", &u->copy.src_mem, NULL);
    return r;
}

/* The context a copy or memset node runs in: a live one (in *out, when
 * not NULL). */
static CUresult node_context_locked(CUcontext ctx, struct CUctx_st **out)
{
    struct CUctx_st *c = NULL;
    CUresult r = ctx ? fake_context_arg_locked(ctx, CUDA_ERROR_CONTEXT_IS_DESTROYED, &c)
                     : fake_current_context_locked(&c);
    if (out)
        *out = c;
    return r;
}

CUresult CUDAAPI fake_cuGraphAddMemcpyNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                           const CUgraphNode *dependencies,
                                           size_t numDependencies, const CUDA_MEMCPY3D *copyParams,
                                           CUcontext ctx)
{
    FAKE_ENTER(cuGraphAddMemcpyNode);
    struct CUgraph_st *g = NULL;
    CUresult r = add_prologue_locked(phGraphNode, hGraph, dependencies, numDependencies, &g);
    struct CUctx_st *c = NULL;
    if (r == CUDA_SUCCESS)
        r = node_context_locked(ctx, &c);
    union fake_op_payload u;
    if (r == CUDA_SUCCESS)
        r = copy_payload_locked(copyParams, c, &u);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    struct CUgraphNode_st *n = node_add_locked(g, dependencies, numDependencies,
                                               CU_GRAPH_NODE_TYPE_MEMCPY, FAKE_OP_COPY, &u);
    if (!n)
        return fake_leave(CUDA_ERROR_OUT_OF_MEMORY);
    n->ctx = c;
    *phGraphNode = n;
    return fake_leave(CUDA_SUCCESS);
}

static CUresult memset_payload_locked(const CUDA_MEMSET_NODE_PARAMS *p, union fake_op_payload *u)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned int e = p->elementSize;
    if ((e != 1 && e != 2 && e != 4) || p->width == 0 || p->height == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (p->height > 1)
        return CUDA_ERROR_NOT_SUPPORTED; /* the fake's memset nodes are 1-D */
    if (p->dst % e != 0 || p->width > SIZE_MAX / e)
        return CUDA_ERROR_INVALID_VALUE;
    memset(u, 0, sizeof *u);
    u->memset.dst = (uintptr_t)p->dst;
    u->memset.value = e == 4 ? p->value : p->value & (e == 2 ? 0xffffu : 0xffu);
    u->memset.elem = e;
    u->memset.count = p->width;
    return fake_memory_range_locked((uintptr_t)p->dst, p->width * e, SIDE_DEVICE,
                                    "memset destination", &u->memset.mem, NULL);
}

CUresult CUDAAPI fake_cuGraphAddMemsetNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                           const CUgraphNode *dependencies,
                                           size_t numDependencies,
                                           const CUDA_MEMSET_NODE_PARAMS *memsetParams,
                                           CUcontext ctx)
{
    FAKE_ENTER(cuGraphAddMemsetNode);
    struct CUgraph_st *g = NULL;
    CUresult r = add_prologue_locked(phGraphNode, hGraph, dependencies, numDependencies, &g);
    struct CUctx_st *c = NULL;
    if (r == CUDA_SUCCESS)
        r = node_context_locked(ctx, &c);
    union fake_op_payload u;
    if (r == CUDA_SUCCESS)
        r = memset_payload_locked(memsetParams, &u);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    struct CUgraphNode_st *n = node_add_locked(g, dependencies, numDependencies,
                                               CU_GRAPH_NODE_TYPE_MEMSET, FAKE_OP_MEMSET, &u);
    if (!n)
        return fake_leave(CUDA_ERROR_OUT_OF_MEMORY);
    n->ctx = c;
    *phGraphNode = n;
    return fake_leave(CUDA_SUCCESS);
}

static CUresult add_host_locked(CUgraphNode *out, CUgraph hg, const CUgraphNode *deps,
                                size_t ndeps, const CUDA_HOST_NODE_PARAMS *p)
{
    struct CUgraph_st *g = NULL;
    CUresult r = add_prologue_locked(out, hg, deps, ndeps, &g);
    if (r != CUDA_SUCCESS)
        return r;
    if (!p || !p->fn)
        return CUDA_ERROR_INVALID_VALUE;
    union fake_op_payload u = {.host = {p->fn, p->userData}};
    ADD_NODE(out, g, deps, ndeps, CU_GRAPH_NODE_TYPE_HOST, FAKE_OP_HOST_FN, &u);
}

CUresult CUDAAPI fake_cuGraphAddHostNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                         const CUgraphNode *dependencies, size_t numDependencies,
                                         const CUDA_HOST_NODE_PARAMS *nodeParams)
{
    FAKE_ENTER(cuGraphAddHostNode);
    return fake_leave(
        add_host_locked(phGraphNode, hGraph, dependencies, numDependencies, nodeParams));
}

/* Event nodes keep the event in the record payload; a wait node's kind is
 * WAIT (nothing but its dependency, found at each replay). */
static CUresult add_event_locked(CUgraphNode *out, CUgraph hg, const CUgraphNode *deps,
                                 size_t ndeps, CUevent he, bool record)
{
    struct CUgraph_st *g = NULL;
    CUresult r = add_prologue_locked(out, hg, deps, ndeps, &g);
    if (r != CUDA_SUCCESS)
        return r;
    /* Poisoned or not: the H200 adds the node (a replay reports). */
    struct CUevent_st *e = NULL;
    r = fake_event_arg_any_locked(he, &e);
    if (r != CUDA_SUCCESS)
        return r;
    union fake_op_payload u = {.record = {e, 0}};
    ADD_NODE(out, g, deps, ndeps,
             record ? CU_GRAPH_NODE_TYPE_EVENT_RECORD : CU_GRAPH_NODE_TYPE_WAIT_EVENT,
             record ? FAKE_OP_RECORD : FAKE_OP_WAIT, &u);
}

CUresult CUDAAPI fake_cuGraphAddEventRecordNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                                const CUgraphNode *dependencies,
                                                size_t numDependencies, CUevent event)
{
    FAKE_ENTER(cuGraphAddEventRecordNode);
    return fake_leave(
        add_event_locked(phGraphNode, hGraph, dependencies, numDependencies, event, true));
}

CUresult CUDAAPI fake_cuGraphAddEventWaitNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                              const CUgraphNode *dependencies,
                                              size_t numDependencies, CUevent event)
{
    FAKE_ENTER(cuGraphAddEventWaitNode);
    return fake_leave(
        add_event_locked(phGraphNode, hGraph, dependencies, numDependencies, event, false));
}

static CUresult add_empty_locked(CUgraphNode *out, CUgraph hg, const CUgraphNode *deps,
                                 size_t ndeps)
{
    struct CUgraph_st *g = NULL;
    CUresult r = add_prologue_locked(out, hg, deps, ndeps, &g);
    if (r != CUDA_SUCCESS)
        return r;
    ADD_NODE(out, g, deps, ndeps, CU_GRAPH_NODE_TYPE_EMPTY, FAKE_OP_WAIT, NULL);
}

CUresult CUDAAPI fake_cuGraphAddEmptyNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                          const CUgraphNode *dependencies, size_t numDependencies)
{
    FAKE_ENTER(cuGraphAddEmptyNode);
    return fake_leave(add_empty_locked(phGraphNode, hGraph, dependencies, numDependencies));
}

/* The child graph is copied (the driver clones it): later changes to it do
 * not reach the node. */
static CUresult add_child_locked(CUgraphNode *out, CUgraph hg, const CUgraphNode *deps,
                                 size_t ndeps, CUgraph hchild)
{
    struct CUgraph_st *g = NULL, *child = NULL;
    CUresult r = add_prologue_locked(out, hg, deps, ndeps, &g);
    if (r == CUDA_SUCCESS)
        r = fake_graph_graph_arg_locked(hchild, &child);
    if (r != CUDA_SUCCESS)
        return r;
    if (child == g || child->body->has_memory_nodes)
        return CUDA_ERROR_INVALID_VALUE;
    if (child->capture)
        return CUDA_ERROR_ILLEGAL_STATE;
    fake_graph_body *copy = fake_graph_body_clone_locked(child->body);
    if (!copy)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct CUgraphNode_st *n =
        node_add_locked(g, deps, ndeps, CU_GRAPH_NODE_TYPE_GRAPH, FAKE_OP_WAIT, NULL);
    if (!n) {
        fake_graph_body_unref_locked(copy);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    n->child = copy;
    *out = n;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuGraphAddChildGraphNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                               const CUgraphNode *dependencies,
                                               size_t numDependencies, CUgraph childGraph)
{
    FAKE_ENTER(cuGraphAddChildGraphNode);
    return fake_leave(
        add_child_locked(phGraphNode, hGraph, dependencies, numDependencies, childGraph));
}

/* --- edge data --------------------------------------------------------------------------------- */

fake_edge fake_graph_edge_of(const struct CUgraphNode_st *n, size_t j)
{
    return n->edges ? n->edges[j] : (fake_edge){0, 0, 0};
}

bool fake_graph_node_has_edge_data(const struct CUgraphNode_st *n)
{
    for (size_t j = 0; n->edges && j < n->ndeps; j++)
        if (n->edges[j].from_port || n->edges[j].to_port || n->edges[j].type)
            return true;
    return false;
}

bool fake_graph_edges_copy(struct CUgraphNode_st *to, const struct CUgraphNode_st *from)
{
    to->edges = NULL;
    if (!from->edges || !from->ndeps)
        return true;
    to->edges = malloc(from->ndeps * sizeof *to->edges);
    if (!to->edges)
        return false;
    memcpy(to->edges, from->edges, from->ndeps * sizeof *to->edges);
    return true;
}

/* An edge a -> b with data e, by cuda.h's rules for CUgraphEdgeData: to_port
 * and the reserved bytes zero; a type of CUgraphDependencyType; an upstream
 * port of the CU_GRAPH_KERNEL_NODE_PORT_* values, other than the default
 * only from a kernel node; CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC only on a
 * programmatic edge, which joins two kernel nodes from the programmatic or
 * the launch-order port. (The code for a breach is not documented:
 * CUDA_ERROR_INVALID_VALUE is our guess.) */
static CUresult edge_check(const struct CUgraphNode_st *a, const struct CUgraphNode_st *b,
                           const fake_edge *e, const unsigned char reserved[5])
{
    for (int i = 0; i < 5; i++)
        if (reserved[i])
            return CUDA_ERROR_INVALID_VALUE;
    if (e->to_port || e->type > 1 || e->from_port > 2)
        return CUDA_ERROR_INVALID_VALUE;
    bool kernel_a = fake_graph_node_type(a) == CU_GRAPH_NODE_TYPE_KERNEL;
    bool kernel_b = fake_graph_node_type(b) == CU_GRAPH_NODE_TYPE_KERNEL;
    if (e->from_port && !kernel_a)
        return CUDA_ERROR_INVALID_VALUE;
    if (e->from_port == 1 && e->type != 1)
        return CUDA_ERROR_INVALID_VALUE;
    if (e->type == 1 && (!kernel_a || !kernel_b || e->from_port == 0))
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

/* Edges from[i] -> to[i] with data[i] (NULL: default edges): all checked
 * before any is added. */
static CUresult add_dependencies_locked(CUgraph hg, const CUgraphNode *from, const CUgraphNode *to,
                                        const fake_edge *data, const unsigned char (*reserved)[5],
                                        size_t n)
{
    struct CUgraph_st *g = NULL;
    CUresult r = fake_graph_graph_arg_locked(hg, &g);
    if (r != CUDA_SUCCESS)
        return r;
    if (n && (!from || !to))
        return CUDA_ERROR_INVALID_VALUE;
    if (g->capture)
        return CUDA_ERROR_ILLEGAL_STATE;
    for (size_t i = 0; i < n; i++) {
        struct CUgraphNode_st *a = NULL, *b = NULL;
        r = node_of_locked(g, from[i], &a);
        if (r == CUDA_SUCCESS)
            r = node_of_locked(g, to[i], &b);
        if (r != CUDA_SUCCESS)
            return r;
        if (a == b)
            return CUDA_ERROR_INVALID_VALUE;
        for (size_t j = 0; j < b->ndeps; j++)
            if (b->deps[j] == a)
                return CUDA_ERROR_INVALID_VALUE; /* the edge exists */
        for (size_t j = 0; j < i; j++)
            if (from[j] == from[i] && to[j] == to[i])
                return CUDA_ERROR_INVALID_VALUE;
        if (data) {
            r = edge_check(a, b, &data[i], reserved[i]);
            if (r != CUDA_SUCCESS)
                return r;
        }
    }
    r = detach_execs_locked(g);
    if (r != CUDA_SUCCESS)
        return r;
    /* Room first (deps and, for data, edges), so that the appends cannot fail. */
    size_t added = 0;
    bool oom = false;
    for (size_t i = 0; i < n && !oom; i++) {
        struct CUgraphNode_st *b = to[i];
        size_t want = b->ndeps + n; /* enough whatever the other edges */
        struct CUgraphNode_st **d = realloc(b->deps, want * sizeof *d);
        if (d)
            b->deps = d;
        bool with_data = data && (data[i].from_port || data[i].type);
        if (d && (with_data || b->edges)) {
            fake_edge *e = realloc(b->edges, want * sizeof *e);
            if (e && !b->edges)
                memset(e, 0, want * sizeof *e);
            if (e)
                b->edges = e;
            oom = !e;
        }
        oom = oom || !d;
    }
    for (; !oom && added < n; added++) {
        struct CUgraphNode_st *b = to[added];
        if (b->edges)
            b->edges[b->ndeps] = data ? data[added] : (fake_edge){0, 0, 0};
        b->deps[b->ndeps++] = from[added];
    }
    if (!oom && body_sort(g->body, &oom))
        return CUDA_SUCCESS;
    while (added--) /* a cycle, or out of memory: the edges go again */
        to[added]->ndeps--;
    return oom ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI fake_cuGraphAddDependencies(CUgraph hGraph, const CUgraphNode *from,
                                             const CUgraphNode *to, size_t numDependencies)
{
    FAKE_ENTER(cuGraphAddDependencies);
    return fake_leave(add_dependencies_locked(hGraph, from, to, NULL, NULL, numDependencies));
}

#ifdef FAKE_HAVE_12030_ENTRIES
CUresult CUDAAPI fake_cuGraphAddDependencies_v2(CUgraph hGraph, const CUgraphNode *from,
                                                const CUgraphNode *to,
                                                const CUgraphEdgeData *edgeData,
                                                size_t numDependencies)
{
    FAKE_ENTER(cuGraphAddDependencies_v2);
    if (!edgeData || !numDependencies)
        return fake_leave(add_dependencies_locked(hGraph, from, to, NULL, NULL, numDependencies));
    fake_edge *data = malloc(numDependencies * sizeof *data);
    unsigned char (*reserved)[5] = malloc(numDependencies * sizeof *reserved);
    CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
    if (data && reserved) {
        for (size_t i = 0; i < numDependencies; i++) {
            data[i] = (fake_edge){edgeData[i].from_port, edgeData[i].to_port, edgeData[i].type};
            memcpy(reserved[i], edgeData[i].reserved, sizeof reserved[i]);
        }
        r = add_dependencies_locked(hGraph, from, to, data, (const unsigned char (*)[5])reserved,
                                    numDependencies);
    }
    free(data);
    free(reserved);
    return fake_leave(r);
}
#endif

/* --- executable graphs: per-node updates ------------------------------------------------------- */

struct CUgraphNode_st *fake_graph_body_node_for_locked(const fake_graph_body *b,
                                                      const struct CUgraphNode_st *gn)
{
    /* A copy keeps its nodes' places: the graph node's index finds its copy
     * unless the graph was re-sorted since (an edge added), then a scan. */
    if (gn->index < b->nnodes) {
        struct CUgraphNode_st *k = b->nodes[gn->index];
        if (k == gn || k->origin == gn)
            return k;
    }
    for (size_t i = 0; i < b->nnodes; i++) {
        struct CUgraphNode_st *k = b->nodes[i];
        if (k == gn || k->origin == gn)
            return k;
    }
    return NULL;
}

/* The node of x that stands for the graph's node hn (x's own copy: x's body
 * is copied first when shared). */
static CUresult exec_node_any_locked(CUgraphExec he, CUgraphNode hn, CUgraphNodeType type,
                                     bool healthy, struct CUgraphExec_st **xo,
                                     struct CUgraphNode_st **out)
{
    struct CUgraphExec_st *x = NULL;
    CUresult r = fake_graph_exec_arg_locked(he, healthy, &x);
    if (r != CUDA_SUCCESS)
        return r;
    struct CUgraphNode_st *gn = NULL;
    r = node_arg_locked(hn, &gn);
    if (r != CUDA_SUCCESS)
        return r;
    struct CUgraphNode_st *n = fake_graph_body_node_for_locked(x->body, gn);
    if (!n) {
        fake_misuse_locked("graph node 0x%" PRIxPTR " is not a node of executable graph 0x%" PRIxPTR
                           " (another graph's, or added after the instantiation)",
                           (uintptr_t)hn, (uintptr_t)he);
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (type != (CUgraphNodeType)-1 && fake_graph_node_type(n) != type)
        return CUDA_ERROR_INVALID_VALUE;
    if (x->body->refs > 1) {
        fake_graph_body *copy = fake_graph_body_clone_locked(x->body);
        if (!copy)
            return CUDA_ERROR_OUT_OF_MEMORY;
        size_t index = n->index;
        fake_graph_body_unref_locked(x->body);
        x->body = copy;
        n = copy->nodes[index];
    }
    *xo = x;
    *out = n;
    return CUDA_SUCCESS;
}

/* The same in a healthy context: a poisoned one answers its error. */
static CUresult exec_node_locked(CUgraphExec he, CUgraphNode hn, CUgraphNodeType type,
                                 struct CUgraphExec_st **xo, struct CUgraphNode_st **out)
{
    return exec_node_any_locked(he, hn, type, true, xo, out);
}

static CUresult exec_kernel_locked(CUgraphExec he, CUgraphNode hn,
                                   const CUDA_KERNEL_NODE_PARAMS_v2 *p)
{
    struct CUgraphExec_st *x = NULL;
    struct CUgraphNode_st *n = NULL;
    CUresult r = kernel_node_context_locked();
    if (r != CUDA_SUCCESS)
        return r;
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    r = exec_node_locked(he, hn, CU_GRAPH_NODE_TYPE_KERNEL, &x, &n);
    if (r != CUDA_SUCCESS)
        return r;
    fake_launch_exec *l = NULL;
    r = fake_module_node_launch_locked(p, n->u.launch.exec, &l);
    if (r != CUDA_SUCCESS)
        return r;
    /* The function may change, its context may not (documented). */
    if (fake_module_launch_context(l) != fake_module_launch_context(n->u.launch.exec)) {
        fake_module_launch_free(l);
        return CUDA_ERROR_INVALID_VALUE;
    }
    fake_module_launch_free(n->u.launch.exec);
    n->u.launch.exec = l;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuGraphExecKernelNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                     const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams)
{
    FAKE_ENTER(cuGraphExecKernelNodeSetParams);
    CUDA_KERNEL_NODE_PARAMS_v2 q;
    if (nodeParams)
        q = params_v2(nodeParams);
    return fake_leave(exec_kernel_locked(hGraphExec, hNode, nodeParams ? &q : NULL));
}

CUresult CUDAAPI fake_cuGraphExecKernelNodeSetParams_v2(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                        const CUDA_KERNEL_NODE_PARAMS_v2 *nodeParams)
{
    FAKE_ENTER(cuGraphExecKernelNodeSetParams_v2);
    return fake_leave(exec_kernel_locked(hGraphExec, hNode, nodeParams));
}

/* Whether two operands are the same kind of memory (what an update may not
 * change): device memory of one device, or host memory. */
static bool same_kind(const fake_mem *a, const fake_mem *b)
{
    CUdevice da = -1, db = -1;
    bool on_a = false, on_b = false;
    fake_memory_operand_kind(a, &da, &on_a);
    fake_memory_operand_kind(b, &db, &on_b);
    return on_a == on_b && (!on_a || da == db);
}

CUresult CUDAAPI fake_cuGraphExecMemcpyNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                     const CUDA_MEMCPY3D *copyParams,
                                                     CUcontext ctx)
{
    FAKE_ENTER(cuGraphExecMemcpyNodeSetParams);
    union fake_op_payload u;
    struct CUctx_st *c = NULL;
    CUresult r = node_context_locked(ctx, &c);
    if (r == CUDA_SUCCESS)
        r = copy_payload_locked(copyParams, c, &u);
    struct CUgraphExec_st *x = NULL;
    struct CUgraphNode_st *n = NULL;
    if (r == CUDA_SUCCESS)
        r = exec_node_locked(hGraphExec, hNode, CU_GRAPH_NODE_TYPE_MEMCPY, &x, &n);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    /* Documented (cuda.h): "Both the instantiation-time memory operands and
     * the memory operands in copyParams must be 1-dimensional", else
     * CUDA_ERROR_INVALID_VALUE. What counts as 1-dimensional is the fake's
     * reading: no array, one row, one slice (an origin at a row or slice
     * other than 0 is taken; unsure). */
    if (u.copy.multidim || n->u.copy.multidim)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    if (!same_kind(u.copy.dst_mem, n->u.copy.dst_mem) || !same_kind(u.copy.src_mem, n->u.copy.src_mem))
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    n->u = u;
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuGraphExecMemsetNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                     const CUDA_MEMSET_NODE_PARAMS *memsetParams,
                                                     CUcontext ctx)
{
    FAKE_ENTER(cuGraphExecMemsetNodeSetParams);
    union fake_op_payload u;
    CUresult r = node_context_locked(ctx, NULL);
    if (r == CUDA_SUCCESS)
        r = memset_payload_locked(memsetParams, &u);
    struct CUgraphExec_st *x = NULL;
    struct CUgraphNode_st *n = NULL;
    if (r == CUDA_SUCCESS)
        r = exec_node_locked(hGraphExec, hNode, CU_GRAPH_NODE_TYPE_MEMSET, &x, &n);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (!same_kind(u.memset.mem, n->u.memset.mem))
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    n->u = u;
    return fake_leave(CUDA_SUCCESS);
}

/* Kernel, copy and memset nodes only (the documented kinds). */
CUresult CUDAAPI fake_cuGraphNodeSetEnabled(CUgraphExec hGraphExec, CUgraphNode hNode,
                                            unsigned int isEnabled)
{
    FAKE_ENTER(cuGraphNodeSetEnabled);
    struct CUgraphExec_st *x = NULL;
    struct CUgraphNode_st *n = NULL;
    CUresult r = exec_node_any_locked(hGraphExec, hNode, (CUgraphNodeType)-1, false, &x, &n);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    CUgraphNodeType t = fake_graph_node_type(n);
    if (t != CU_GRAPH_NODE_TYPE_KERNEL && t != CU_GRAPH_NODE_TYPE_MEMCPY &&
        t != CU_GRAPH_NODE_TYPE_MEMSET)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    n->disabled = !isEnabled;
    return fake_leave(CUDA_SUCCESS);
}

/* --- replay -------------------------------------------------------------------------------- */

/* An event record node: the record cuEventRecord would make, now. */
static CUresult replay_record_locked(struct CUevent_st *e, struct CUstream_st *s)
{
    if (e->h.state != FAKE_LIVE) {
        fake_misuse_locked("cuGraphLaunch: event 0x%" PRIxPTR " of a record node was destroyed",
                           (uintptr_t)e);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    fake_op op = {.kind = FAKE_OP_RECORD, .call = "cuGraphLaunch",
                  .u.record = {e, e->generation + 1}};
    CUresult r = fake_stream_enqueue_locked(s, &op, NULL, 0);
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

/* An event wait node: the event's latest record, as of now. */
static CUresult replay_wait_locked(struct CUevent_st *e, struct CUstream_st *s)
{
    if (e->h.state != FAKE_LIVE) {
        fake_misuse_locked("cuGraphLaunch: event 0x%" PRIxPTR " of a wait node was destroyed",
                           (uintptr_t)e);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    if (!e->recorded || e->stream->executed >= e->pos)
        return CUDA_SUCCESS;
    fake_op op = {.kind = FAKE_OP_WAIT, .call = "cuGraphLaunch"};
    fake_dep d = {e->stream, e->pos};
    return fake_stream_enqueue_locked(s, &op, &d, 1);
}

CUresult fake_graph_replay_body_locked(struct CUgraphExec_st *x, const fake_graph_body *b,
                                       struct CUstream_st *s, CUstream hs)
{
    for (size_t i = 0; i < b->nnodes; i++) {
        const struct CUgraphNode_st *n = b->nodes[i];
        CUresult r = CUDA_SUCCESS;
        if (n->disabled)
            continue;
        if (n->typed) {
            switch (n->type) {
            case CU_GRAPH_NODE_TYPE_EMPTY:
                continue;
            case CU_GRAPH_NODE_TYPE_GRAPH:
                r = fake_graph_replay_body_locked(x, n->child, s, hs);
                break;
            case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
                r = replay_record_locked(n->u.record.event, s);
                break;
            case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
                r = replay_wait_locked(n->u.record.event, s);
                break;
            case CU_GRAPH_NODE_TYPE_CONDITIONAL:
                r = fake_graph_conditional_replay_locked(x, n, s, hs);
                break;
            default:
                break;
            }
            if (r != CUDA_SUCCESS)
                return r;
            if (n->type != CU_GRAPH_NODE_TYPE_KERNEL && n->type != CU_GRAPH_NODE_TYPE_MEMCPY &&
                n->type != CU_GRAPH_NODE_TYPE_MEMSET && n->type != CU_GRAPH_NODE_TYPE_HOST)
                continue;
        }
        fake_op op = {.kind = n->kind, .call = "cuGraphLaunch", .u = n->u};
        if (n->kind == FAKE_OP_LAUNCH) {
            op.u.launch.exec = fake_module_launch_replay(n->u.launch.exec, x, hs);
            if (!op.u.launch.exec)
                return CUDA_ERROR_OUT_OF_MEMORY;
        }
        /* An out-of-memory here leaves the nodes before it queued. */
        r = fake_stream_enqueue_locked(s, &op, NULL, 0);
        if (r != CUDA_SUCCESS) {
            if (n->kind == FAKE_OP_LAUNCH)
                fake_module_launch_free(op.u.launch.exec);
            return r;
        }
        if (n->kind == FAKE_OP_LAUNCH)
            fake_module_record_launch_locked(op.u.launch.exec); /* queued, not run yet */
        else if (n->kind == FAKE_OP_ALLOC || n->kind == FAKE_OP_FREE)
            fake_memory_graph_op_queued_locked(n->u.mem.mem);
    }
    return CUDA_SUCCESS;
}

/* --- for the conditional nodes (fake_graph_conditional.c) ---------------------------------------- */

CUresult fake_graph_add_prologue_locked(CUgraphNode *out, CUgraph hg, const CUgraphNode *deps,
                                        size_t ndeps, struct CUgraph_st **g)
{
    return add_prologue_locked(out, hg, deps, ndeps, g);
}

struct CUgraphNode_st *fake_graph_node_add_locked(struct CUgraph_st *g, const CUgraphNode *deps,
                                                  size_t ndeps, CUgraphNodeType type)
{
    return node_add_locked(g, deps, ndeps, type, FAKE_OP_WAIT, NULL);
}

/* --- for graph inspection and editing (fake_graph_inspect.c) -------------------------------------- */

CUresult fake_graph_node_arg_locked(CUgraphNode hn, struct CUgraphNode_st **out)
{
    return node_arg_locked(hn, out);
}

struct CUgraph_st *fake_graph_of_node_locked(const struct CUgraphNode_st *n)
{
    struct CUgraph_st *g = n->body ? n->body->graph : NULL;
    return g && g->h.state == FAKE_LIVE && g->body == n->body ? g : NULL;
}

CUresult fake_graph_node_of_locked(const struct CUgraph_st *g, CUgraphNode hn,
                                   struct CUgraphNode_st **out)
{
    return node_of_locked(g, hn, out);
}

CUresult fake_graph_detach_execs_locked(struct CUgraph_st *g)
{
    return detach_execs_locked(g);
}

CUresult fake_graph_exec_node_locked(CUgraphExec he, CUgraphNode hn, CUgraphNodeType type,
                                     struct CUgraphExec_st **xo, struct CUgraphNode_st **out)
{
    return exec_node_locked(he, hn, type, xo, out);
}

/* --- per-node changes of a graph ----------------------------------------------------------------
 * cuGraph{Kernel,Memcpy,Memset,Host}NodeSetParams and
 * cuGraphEvent{Record,Wait}NodeSetEvent. Documented (cuda.h): they change
 * the node of the graph; executable graphs made before keep what they were
 * instantiated with (they get a copy of the old nodes first). A node of
 * another type is CUDA_ERROR_INVALID_VALUE. The fake chose (say so in
 * reports): a node of an executable graph's copy is CUDA_ERROR_INVALID_VALUE
 * (misuse), a graph being captured into is CUDA_ERROR_ILLEGAL_STATE, as the
 * other edits; a copy node's new operands are checked in the current
 * context (cuGraphMemcpyNodeSetParams takes none; cuscope makes the graph's
 * current). */

CUresult fake_graph_node_of_type_locked(CUgraphNode hn, CUgraphNodeType type, bool edit,
                                        struct CUgraphNode_st **out)
{
    struct CUgraphNode_st *n = NULL;
    CUresult r = node_arg_locked(hn, &n);
    if (r != CUDA_SUCCESS)
        return r;
    struct CUgraph_st *g = fake_graph_of_node_locked(n);
    if (!g) {
        fake_misuse_locked("graph node 0x%" PRIxPTR " is no graph's (an executable graph's copy?)",
                           (uintptr_t)hn);
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (fake_graph_node_type(n) != type)
        return CUDA_ERROR_INVALID_VALUE;
    if (edit) {
        if (g->capture)
            return CUDA_ERROR_ILLEGAL_STATE;
        r = detach_execs_locked(g);
        if (r != CUDA_SUCCESS)
            return r;
    }
    *out = n;
    return CUDA_SUCCESS;
}

/* The graph node hn of type, its executable graphs detached. */
static CUresult graph_node_set_locked(CUgraphNode hn, CUgraphNodeType type,
                                      struct CUgraphNode_st **out)
{
    return fake_graph_node_of_type_locked(hn, type, true, out);
}

/* The context a copy or memset node's setter checks and reads the operands
 * in: the one the node was added with (the H200's cells: no current context
 * needed, that one destroyed is CUDA_ERROR_CONTEXT_IS_DESTROYED, poisoned
 * its error); for a captured node, its graph's; else the current one. */
static CUresult setter_context_locked(CUgraphNode hn, struct CUctx_st **out)
{
    struct CUgraphNode_st *n = NULL;
    CUresult r = node_arg_locked(hn, &n);
    if (r != CUDA_SUCCESS)
        return r;
    const struct CUgraph_st *g = fake_graph_of_node_locked(n);
    struct CUctx_st *c = n->ctx ? n->ctx : g ? g->ctx : NULL;
    return c ? fake_context_arg_locked(c, CUDA_ERROR_CONTEXT_IS_DESTROYED, out)
             : fake_current_context_locked(out);
}

static CUresult set_kernel_locked(CUgraphNode hn, const CUDA_KERNEL_NODE_PARAMS_v2 *p)
{
    CUresult r = kernel_node_context_locked();
    if (r != CUDA_SUCCESS)
        return r;
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUgraphNode_st *n = NULL;
    fake_launch_exec *l = NULL;
    /* The node's attributes stay (a node of another type: refused below). */
    const fake_launch_exec *like = NULL;
    if (hn && fake_graph_node_find_locked(hn) && !hn->released && hn->body &&
        fake_graph_node_type(hn) == CU_GRAPH_NODE_TYPE_KERNEL)
        like = hn->u.launch.exec;
    r = fake_module_node_launch_locked(p, like, &l);
    if (r != CUDA_SUCCESS)
        return r;
    r = graph_node_set_locked(hn, CU_GRAPH_NODE_TYPE_KERNEL, &n);
    if (r != CUDA_SUCCESS) {
        fake_module_launch_free(l);
        return r;
    }
    fake_module_launch_free(n->u.launch.exec);
    n->u.launch.exec = l;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuGraphKernelNodeSetParams(CUgraphNode hNode,
                                                 const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams)
{
    FAKE_ENTER(cuGraphKernelNodeSetParams);
    CUDA_KERNEL_NODE_PARAMS_v2 q;
    if (nodeParams)
        q = params_v2(nodeParams);
    return fake_leave(set_kernel_locked(hNode, nodeParams ? &q : NULL));
}

CUresult CUDAAPI fake_cuGraphKernelNodeSetParams_v2(CUgraphNode hNode,
                                                    const CUDA_KERNEL_NODE_PARAMS_v2 *nodeParams)
{
    FAKE_ENTER(cuGraphKernelNodeSetParams_v2);
    return fake_leave(set_kernel_locked(hNode, nodeParams));
}

CUresult CUDAAPI fake_cuGraphMemcpyNodeSetParams(CUgraphNode hNode, const CUDA_MEMCPY3D *nodeParams)
{
    FAKE_ENTER(cuGraphMemcpyNodeSetParams);
    struct CUctx_st *c = NULL;
    union fake_op_payload u;
    CUresult r = setter_context_locked(hNode, &c);
    if (r == CUDA_SUCCESS)
        r = copy_payload_locked(nodeParams, c, &u);
    struct CUgraphNode_st *n = NULL;
    if (r == CUDA_SUCCESS)
        r = graph_node_set_locked(hNode, CU_GRAPH_NODE_TYPE_MEMCPY, &n);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    n->u = u;
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuGraphMemsetNodeSetParams(CUgraphNode hNode,
                                                 const CUDA_MEMSET_NODE_PARAMS *nodeParams)
{
    FAKE_ENTER(cuGraphMemsetNodeSetParams);
    union fake_op_payload u;
    struct CUctx_st *c = NULL;
    CUresult r = setter_context_locked(hNode, &c);
    if (r == CUDA_SUCCESS)
        r = memset_payload_locked(nodeParams, &u);
    struct CUgraphNode_st *n = NULL;
    if (r == CUDA_SUCCESS)
        r = graph_node_set_locked(hNode, CU_GRAPH_NODE_TYPE_MEMSET, &n);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    n->u = u;
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuGraphHostNodeSetParams(CUgraphNode hNode,
                                               const CUDA_HOST_NODE_PARAMS *nodeParams)
{
    FAKE_ENTER(cuGraphHostNodeSetParams);
    if (!nodeParams || !nodeParams->fn)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    struct CUgraphNode_st *n = NULL;
    CUresult r = graph_node_set_locked(hNode, CU_GRAPH_NODE_TYPE_HOST, &n);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    n->u.host.fn = nodeParams->fn;
    n->u.host.user_data = nodeParams->userData;
    return fake_leave(CUDA_SUCCESS);
}

/* Documented: another type of node is CUDA_ERROR_INVALID_VALUE. A captured
 * host function is a host node too (its type says so). */
CUresult CUDAAPI fake_cuGraphHostNodeGetParams(CUgraphNode hNode, CUDA_HOST_NODE_PARAMS *nodeParams)
{
    FAKE_ENTER(cuGraphHostNodeGetParams);
    struct CUgraphNode_st *n = NULL;
    CUresult r = fake_graph_node_of_type_locked(hNode, CU_GRAPH_NODE_TYPE_HOST, false, &n);
    if (r == CUDA_SUCCESS && !nodeParams)
        r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) {
        nodeParams->fn = n->u.host.fn;
        nodeParams->userData = n->u.host.user_data;
    }
    return fake_leave(r);
}

static CUresult set_node_event_locked(CUgraphNode hn, CUevent hev, CUgraphNodeType type)
{
    struct CUevent_st *e = NULL;
    CUresult r = fake_event_arg_any_locked(hev, &e); /* poisoned or not, as the add */
    if (r != CUDA_SUCCESS)
        return r;
    struct CUgraphNode_st *n = NULL;
    r = graph_node_set_locked(hn, type, &n);
    if (r != CUDA_SUCCESS)
        return r;
    n->u.record.event = e;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuGraphEventRecordNodeSetEvent(CUgraphNode hNode, CUevent event)
{
    FAKE_ENTER(cuGraphEventRecordNodeSetEvent);
    return fake_leave(set_node_event_locked(hNode, event, CU_GRAPH_NODE_TYPE_EVENT_RECORD));
}

CUresult CUDAAPI fake_cuGraphEventWaitNodeSetEvent(CUgraphNode hNode, CUevent event)
{
    FAKE_ENTER(cuGraphEventWaitNodeSetEvent);
    return fake_leave(set_node_event_locked(hNode, event, CU_GRAPH_NODE_TYPE_WAIT_EVENT));
}

/* The getters: a node of a graph of that type (documented: another type is
 * CUDA_ERROR_INVALID_VALUE); no context needed, as for the setters (the
 * H200's cells for those). */
static CUresult get_node_event_locked(CUgraphNode hn, CUevent *out, CUgraphNodeType type)
{
    struct CUgraphNode_st *n = NULL;
    CUresult r = fake_graph_node_of_type_locked(hn, type, false, &n);
    if (r != CUDA_SUCCESS)
        return r;
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    *out = n->u.record.event;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuGraphEventRecordNodeGetEvent(CUgraphNode hNode, CUevent *event_out)
{
    FAKE_ENTER(cuGraphEventRecordNodeGetEvent);
    return fake_leave(get_node_event_locked(hNode, event_out, CU_GRAPH_NODE_TYPE_EVENT_RECORD));
}

CUresult CUDAAPI fake_cuGraphEventWaitNodeGetEvent(CUgraphNode hNode, CUevent *event_out)
{
    FAKE_ENTER(cuGraphEventWaitNodeGetEvent);
    return fake_leave(get_node_event_locked(hNode, event_out, CU_GRAPH_NODE_TYPE_WAIT_EVENT));
}

/* --- a child graph node's own graph ------------------------------------------------------------ */

/* Documented: "does not clone the graph. Changes to the graph will be
 * reflected in the node, and the node retains ownership of the graph." The
 * node's child body becomes the graph's; a body that another node shares
 * (a clone's, an executable graph's copy) is shared out at the first change
 * (detach_execs_locked), or here when another node's graph has it already.
 * The same handle each time; it dies with the node. */
static CUresult child_graph_locked(CUgraphNode hn, CUgraph *out)
{
    struct CUgraphNode_st *n = NULL;
    CUresult r = fake_graph_node_of_type_locked(hn, CU_GRAPH_NODE_TYPE_GRAPH, false, &n);
    if (r != CUDA_SUCCESS)
        return r;
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    if (!n->child_graph) {
        fake_graph_body *b = n->child;
        if (b->graph) { /* another node's graph has it: this node gets a copy */
            b = fake_graph_body_clone_locked(n->child);
            if (!b)
                return CUDA_ERROR_OUT_OF_MEMORY;
            for (size_t i = 0; i < b->nnodes; i++)
                b->nodes[i]->origin = NULL; /* a graph's own nodes, as a clone's */
        } else {
            fake_graph_body_ref(b);
        }
        struct CUgraph_st *g = fake_graph_of_node_locked(n); /* not NULL: checked above */
        struct CUgraph_st *cg = g ? fake_graph_record_new_locked(g->ctx, b) : NULL;
        if (!cg) {
            fake_graph_body_unref_locked(b);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        if (b != n->child) {
            fake_graph_body_unref_locked(n->child);
            n->child = fake_graph_body_ref(b);
        }
        cg->parent = g;
        cg->owner = n;
        n->child_graph = cg;
    }
    *out = n->child_graph;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuGraphChildGraphNodeGetGraph(CUgraphNode hNode, CUgraph *phGraph)
{
    FAKE_ENTER(cuGraphChildGraphNodeGetGraph);
    return fake_leave(child_graph_locked(hNode, phGraph));
}
