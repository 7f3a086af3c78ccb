/* Stream capture and graphs: cuStreamBeginCapture, cuStreamEndCapture,
 * cuStreamIsCapturing, cuStreamGetCaptureInfo*, cuThreadExchangeStreamCaptureMode,
 * cuGraphDestroy, cuGraphGetNodes, cuGraphNodeGetType,
 * cuGraphInstantiateWithFlags, cuGraphExecDestroy, cuGraphLaunch,
 * cuGraphUpload and cuGraphExecUpdate. This file has the bodies, the graph
 * and executable graph records and the graphs' entry points; stream capture
 * is in fake_graph_capture.c, executable graphs and their replay in
 * fake_graph_exec.c (fake_graph_records.h is private to the three).
 *
 * Capture. A capture is begun on one stream (its origin) and owns a graph
 * record from the start (what cuStreamGetCaptureInfo_v2 hands out). Every
 * stream taking part (the origin, and streams that waited on an event
 * recorded in the capture) is a member with its own dependency set: the nodes
 * the next operation captured on it depends on. An operation that would be
 * queued on a member (fake_stream_enqueue_locked calls the hook in fake_graph_capture.c) becomes
 * a node depending on that set, and the set becomes the node. cuEventRecord
 * on a member copies its set into the capture (the event then carries the
 * capture's id); cuStreamWaitEvent of such an event merges the set into the
 * waiting stream's, making it a member if it was not one (fork and join).
 * Records and waits are edges, not nodes, as with the driver. The nodes are
 * kept in capture order, in which every node comes after its dependencies: a
 * topological order, which replays follow.
 *
 * Graphs. What a graph is (its nodes) is an immutable body, shared by the
 * graph and the executable graphs made from it (instantiation snapshots it,
 * cuGraphExecUpdate points the executable graph at another body), and freed
 * with the last of them. Node records stay until the next install, so that a
 * node handle of a destroyed graph is recognised rather than undefined.
 *
 * Contexts. A graph belongs to no context (the H200's rules,
 * test/rules/expected.txt): it outlives the context it was captured in, and
 * the calls on it answer whatever that context's state. Executable graphs
 * belong to a context and die with it, as do captures in progress (their
 * graphs too); instantiating a graph whose kernels or graph allocations died
 * with its context is misuse (fake_graph_exec.c).
 *
 * Replay. cuGraphLaunch queues each node's operation, in order, on the
 * stream, as the call that captured it would have (with cuGraphLaunch as the
 * call in messages): nothing runs before the host waits for the stream, and
 * execution checks apply (memory freed since the capture is reported as use
 * after free, a kernel of an unloaded module as misuse), every time. Kernel
 * nodes are recorded as launches (cus_fake_launch.graph_exec) at each
 * cuGraphLaunch.
 *
 * Graph memory (cuMemAllocAsync and cuMemFreeAsync during capture) is
 * fake_memory.c's: an allocation node's block is registered at capture under
 * its fixed address, becomes usable when a launch's allocation node executes
 * and unusable at a free; this area holds it (per body) and keeps the
 * driver's launch rule (a launch that would allocate a block an earlier one
 * left allocated fails, unless instantiated with AUTO_FREE_ON_LAUNCH). */
#include <inttypes.h>
#include <stdlib.h>

#include "fake_graph_records.h"

/* --- state ---------------------------------------------------------------------------------- */

struct CUgraph_st **fake_graph_graphs; /* every graph since install, for teardown */
size_t fake_graph_graph_count, fake_graph_graph_capacity;
struct CUgraphExec_st **fake_graph_execs;
size_t fake_graph_exec_count, fake_graph_exec_capacity;
/* Every node since install, by address (open addressing, linear probing, a
 * power of two at most half full): a handle is looked up without being
 * dereferenced, in constant time however many nodes the process made since
 * install; the reset frees them all. */
static struct CUgraphNode_st **node_set;
static size_t node_set_count, node_set_capacity;
static fake_graph_body **bodies; /* the live bodies, for the reset */
static size_t body_count, body_capacity;

/* Grows *array (of elem-byte entries) to hold one more than count. */
bool fake_graph_reserve(void **array, size_t count, size_t *capacity, size_t elem)
{
    if (count < *capacity)
        return true;
    size_t cap = *capacity ? *capacity * 2 : 8;
    void *p = realloc(*array, cap * elem);
    if (!p)
        return false;
    *array = p;
    *capacity = cap;
    return true;
}

/* --- the node set ---------------------------------------------------------------------------- */

static size_t node_slot(const void *p, size_t capacity)
{
    uint64_t k = (uint64_t)(uintptr_t)p;
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL; /* a 64-bit mixer's step: heap addresses differ in few bits */
    k ^= k >> 33;
    return (size_t)k & (capacity - 1);
}

static void node_set_put(struct CUgraphNode_st **set, size_t capacity, struct CUgraphNode_st *n)
{
    size_t i = node_slot(n, capacity);
    while (set[i])
        i = (i + 1) & (capacity - 1);
    set[i] = n;
}

bool fake_graph_node_reserve_locked(void)
{
    if ((node_set_count + 1) * 2 <= node_set_capacity)
        return true;
    size_t capacity = node_set_capacity ? node_set_capacity * 2 : 64;
    struct CUgraphNode_st **set = calloc(capacity, sizeof *set);
    if (!set)
        return false;
    for (size_t i = 0; i < node_set_capacity; i++)
        if (node_set[i])
            node_set_put(set, capacity, node_set[i]);
    free(node_set);
    node_set = set;
    node_set_capacity = capacity;
    return true;
}

void fake_graph_node_register_locked(struct CUgraphNode_st *n)
{
    node_set_put(node_set, node_set_capacity, n);
    node_set_count++;
}

struct CUgraphNode_st *fake_graph_node_find_locked(CUgraphNode hn)
{
    if (!hn || !node_set_capacity)
        return NULL;
    for (size_t i = node_slot(hn, node_set_capacity); node_set[i];
         i = (i + 1) & (node_set_capacity - 1))
        if (node_set[i] == hn)
            return node_set[i];
    return NULL;
}

/* --- bodies ---------------------------------------------------------------------------------- */

fake_graph_body *fake_graph_body_new_locked(void)
{
    if (!RESERVE(bodies, body_count, body_capacity))
        return NULL;
    fake_graph_body *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->refs = 1;
    b->slot = body_count;
    bodies[body_count++] = b;
    return b;
}

/* Frees what a node owns; touch_memory: drop its hold on a graph allocation
 * (not at a reset, where the memory is going anyway). */
static void node_release(struct CUgraphNode_st *n, bool touch_memory)
{
    if (n->released)
        return;
    if (n->kind == FAKE_OP_LAUNCH)
        fake_module_launch_free(n->u.launch.exec);
    else if (n->kind == FAKE_OP_ALLOC && touch_memory)
        fake_memory_graph_drop_locked(n->u.mem.mem);
    if (n->child_graph && touch_memory) /* its handle dies with the node */
        fake_graph_graph_release_locked(n->child_graph);
    n->child_graph = NULL;
    if (n->child && touch_memory)
        fake_graph_body_unref_locked(n->child); /* at a reset, the bodies all go anyway */
    n->child = NULL;
    free(n->deps);
    free(n->edges);
    n->deps = NULL;
    n->edges = NULL;
    n->ndeps = 0;
    n->released = true;
}

void fake_graph_node_release_locked(struct CUgraphNode_st *n)
{
    node_release(n, true);
}

static void body_free(fake_graph_body *b, bool touch_memory)
{
    for (size_t i = 0; i < b->nnodes; i++)
        node_release(b->nodes[i], touch_memory);
    free(b->nodes);
    free(b);
}

fake_graph_body *fake_graph_body_ref(fake_graph_body *b)
{
    b->refs++;
    return b;
}

void fake_graph_body_unref_locked(fake_graph_body *b)
{
    if (!b || --b->refs)
        return;
    bodies[b->slot] = bodies[--body_count];
    bodies[b->slot]->slot = b->slot;
    body_free(b, true);
}

void fake_graph_body_share_out_locked(fake_graph_body *b, const struct CUgraphNode_st *keeper,
                                      fake_graph_body *copy)
{
    for (size_t i = 0; i < body_count; i++) {
        fake_graph_body *a = bodies[i];
        for (size_t j = 0; j < a->nnodes; j++) {
            struct CUgraphNode_st *n = a->nodes[j];
            if (n != keeper && n->child == b && !n->released) {
                n->child = fake_graph_body_ref(copy);
                fake_graph_body_unref_locked(b); /* never its last: keeper holds it */
            }
        }
    }
}

static CUgraphNodeType node_type(fake_op_kind kind)
{
    switch (kind) {
    case FAKE_OP_LAUNCH:
        return CU_GRAPH_NODE_TYPE_KERNEL;
    case FAKE_OP_COPY:
        return CU_GRAPH_NODE_TYPE_MEMCPY;
    case FAKE_OP_MEMSET:
        return CU_GRAPH_NODE_TYPE_MEMSET;
    case FAKE_OP_HOST_FN:
        return CU_GRAPH_NODE_TYPE_HOST;
    case FAKE_OP_ALLOC:
        return CU_GRAPH_NODE_TYPE_MEM_ALLOC;
    case FAKE_OP_FREE:
        return CU_GRAPH_NODE_TYPE_MEM_FREE;
    case FAKE_OP_RECORD:
    case FAKE_OP_CONDITIONAL: /* replays only (fake_graph_conditional.c) */
    case FAKE_OP_WAIT:
    case FAKE_OP_PREFETCH:
        break; /* never nodes */
    }
    return CU_GRAPH_NODE_TYPE_EMPTY;
}

CUgraphNodeType fake_graph_node_type(const struct CUgraphNode_st *n)
{
    return n->typed ? n->type : node_type(n->kind);
}

/* Whether the body has a free node of m; an allocation node of m. */
bool fake_graph_body_frees(const fake_graph_body *b, const fake_mem *m)
{
    for (size_t i = 0; i < b->nnodes; i++)
        if (b->nodes[i]->kind == FAKE_OP_FREE && b->nodes[i]->u.mem.mem == m)
            return true;
    return false;
}

bool fake_graph_body_allocates(const fake_graph_body *b, const fake_mem *m)
{
    for (size_t i = 0; i < b->nnodes; i++)
        if (b->nodes[i]->kind == FAKE_OP_ALLOC && b->nodes[i]->u.mem.mem == m)
            return true;
    return false;
}

/* --- graphs and executable graphs: records and arguments ----------------------------------- */

struct CUgraph_st *fake_graph_record_new_locked(struct CUctx_st *ctx, fake_graph_body *b)
{
    if (!RESERVE(fake_graph_graphs, fake_graph_graph_count, fake_graph_graph_capacity))
        return NULL;
    struct CUgraph_st *g = fake_handle_new_locked(CUS_FAKE_HANDLE_GRAPH, sizeof *g, 0);
    if (!g)
        return NULL;
    g->ctx = ctx;
    g->body = b;
    b->graph = g;
    fake_graph_graphs[fake_graph_graph_count++] = g;
    return g;
}

/* Destroys a graph record: its handle dies, its body loses a reference. */
void fake_graph_graph_release_locked(struct CUgraph_st *g)
{
    fake_graph_conditional_released_locked(g);
    fake_handle_set_state_locked(&g->h, FAKE_DESTROYED);
    if (g->body)
        g->body->graph = NULL;
    fake_graph_body_unref_locked(g->body);
    g->body = NULL;
}

void fake_graph_exec_release_locked(struct CUgraphExec_st *x)
{
    fake_handle_set_state_locked(&x->h, FAKE_DESTROYED);
    if (x->origin->execs_live)
        x->origin->execs_live--;
    fake_graph_body_unref_locked(x->body);
    x->body = NULL;
}

/* A graph argument: NULL is CUDA_ERROR_INVALID_VALUE; unknown and destroyed
 * graphs are misuse too. A graph belongs to no context (as on the H200): the
 * state of the context it was captured in does not matter. */
CUresult fake_graph_graph_arg_locked(CUgraph hg, struct CUgraph_st **out)
{
    if (!hg)
        return CUDA_ERROR_INVALID_VALUE;
    fake_handle *h = fake_handle_find_locked((uintptr_t)hg);
    if (!h || h->kind != CUS_FAKE_HANDLE_GRAPH) {
        fake_misuse_locked("unknown graph handle 0x%" PRIxPTR, (uintptr_t)hg);
        return CUDA_ERROR_INVALID_VALUE;
    }
    struct CUgraph_st *g = (struct CUgraph_st *)h;
    if (h->state != FAKE_LIVE) {
        if (g->owner)
            fake_misuse_locked("graph 0x%" PRIxPTR " used after its child graph node (whose "
                               "own graph it was) was destroyed",
                               (uintptr_t)hg);
        else if (!g->ctx_destroyed)
            fake_misuse_locked("graph 0x%" PRIxPTR " used after cuGraphDestroy (or the end of "
                               "its failed capture)",
                               (uintptr_t)hg);
        else
            fake_misuse_locked("graph 0x%" PRIxPTR " used after its capture was discarded with "
                               "its context",
                               (uintptr_t)hg);
        return CUDA_ERROR_INVALID_VALUE;
    }
    *out = g;
    return CUDA_SUCCESS;
}

CUresult fake_graph_exec_arg_locked(CUgraphExec he, bool healthy, struct CUgraphExec_st **out)
{
    if (!he)
        return CUDA_ERROR_INVALID_VALUE;
    fake_handle *h = fake_handle_find_locked((uintptr_t)he);
    if (!h || h->kind != CUS_FAKE_HANDLE_GRAPH_EXEC) {
        fake_misuse_locked("unknown executable graph handle 0x%" PRIxPTR, (uintptr_t)he);
        return CUDA_ERROR_INVALID_VALUE;
    }
    struct CUgraphExec_st *x = (struct CUgraphExec_st *)h;
    if (h->state != FAKE_LIVE || x->ctx->h.state != FAKE_LIVE) {
        if (h->state != FAKE_LIVE && !x->ctx_destroyed)
            fake_misuse_locked("executable graph 0x%" PRIxPTR " used after cuGraphExecDestroy",
                               (uintptr_t)he);
        else
            fake_misuse_locked("executable graph 0x%" PRIxPTR
                               " used after its context was destroyed",
                               (uintptr_t)he);
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (healthy && x->ctx->sticky != CUDA_SUCCESS)
        return x->ctx->sticky;
    *out = x;
    return CUDA_SUCCESS;
}

/* --- graphs: entry points -------------------------------------------------------------------- */

CUresult CUDAAPI fake_cuGraphDestroy(CUgraph hGraph)
{
    FAKE_ENTER(cuGraphDestroy);
    fake_handle *h = fake_handle_find_locked((uintptr_t)hGraph);
    if (h && h->kind == CUS_FAKE_HANDLE_GRAPH && h->state == FAKE_DESTROYED &&
        !((struct CUgraph_st *)h)->ctx_destroyed) {
        fake_misuse_locked("double destroy of graph 0x%" PRIxPTR, (uintptr_t)hGraph);
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    }
    struct CUgraph_st *g = NULL;
    CUresult r = fake_graph_graph_arg_locked(hGraph, &g); /* its context's state does not matter */
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (g->capture) /* the graph of a capture in progress: cuStreamEndCapture owns it */
        return fake_leave(CUDA_ERROR_ILLEGAL_STATE);
    if (g->parent) {
        fake_misuse_locked("cuGraphDestroy of graph 0x%" PRIxPTR ", %s: its node's graph owns it",
                           (uintptr_t)hGraph,
                           g->owner ? "a child graph node's own graph" : "the body of a conditional node");
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    }
    /* Its executable graphs are independent of it: they keep the body. */
    fake_graph_graph_release_locked(g);
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes)
{
    FAKE_ENTER(cuGraphGetNodes);
    struct CUgraph_st *g = NULL;
    CUresult r = fake_graph_graph_arg_locked(hGraph, &g); /* its context's state does not matter */
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (!numNodes)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    const fake_graph_body *b = g->body;
    if (!nodes) {
        *numNodes = b->nnodes;
        return fake_leave(CUDA_SUCCESS);
    }
    /* Up to *numNodes entries; past the graph's nodes, NULL, and the count
     * obtained written back. */
    size_t want = *numNodes;
    for (size_t i = 0; i < want; i++)
        nodes[i] = i < b->nnodes ? b->nodes[i] : NULL;
    if (want > b->nnodes)
        *numNodes = b->nnodes;
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType *type)
{
    FAKE_ENTER(cuGraphNodeGetType);
    if (!hNode || !type)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    const struct CUgraphNode_st *n = fake_graph_node_find_locked(hNode);
    if (!n) {
        fake_misuse_locked("unknown graph node handle 0x%" PRIxPTR, (uintptr_t)hNode);
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    }
    if (n->released) {
        fake_misuse_locked("graph node 0x%" PRIxPTR " used after its graph was destroyed",
                           (uintptr_t)hNode);
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    }
    *type = fake_graph_node_type(n);
    return fake_leave(CUDA_SUCCESS);
}

/* --- teardown and reset ---------------------------------------------------------------------- */

/* A context's death destroys its executable graphs; its graphs stay, as on
 * the H200 (but the graphs of its captures in progress, which
 * fake_graph_capture.c discards). */
static void graph_doom_locked(struct CUctx_st *c, unsigned long ticket)
{
    for (size_t i = 0; i < fake_graph_exec_count; i++)
        if (fake_graph_execs[i]->ctx == c && fake_graph_execs[i]->h.state == FAKE_LIVE)
            fake_graph_execs[i]->doomed = ticket;
}

static void graph_destroy_doomed_locked(struct CUctx_st *c, unsigned long ticket)
{
    (void)c;
    for (size_t i = 0; i < fake_graph_exec_count; i++) {
        struct CUgraphExec_st *x = fake_graph_execs[i];
        if (x->doomed == ticket && x->h.state == FAKE_LIVE) {
            x->ctx_destroyed = true;
            fake_graph_exec_release_locked(x);
        }
    }
}

static void graph_reset_locked(const cus_fake_config *cfg)
{
    (void)cfg;
    for (size_t i = 0; i < body_count; i++)
        body_free(bodies[i], false);
    free(bodies);
    bodies = NULL;
    body_count = body_capacity = 0;
    for (size_t i = 0; i < node_set_capacity; i++)
        free(node_set[i]); /* released with their bodies above, or before */
    free(node_set);
    node_set = NULL;
    node_set_count = node_set_capacity = 0;
    free(fake_graph_graphs); /* the registry frees the records */
    fake_graph_graphs = NULL;
    fake_graph_graph_count = fake_graph_graph_capacity = 0;
    free(fake_graph_execs);
    fake_graph_execs = NULL;
    fake_graph_exec_count = fake_graph_exec_capacity = 0;
}

/* --- the area -------------------------------------------------------------------------------- */

/* Reset after the captures (fake_graph_capture.c), before the queues (the
 * nodes hold memory and launch payloads); torn down after the captures,
 * before the memory. */
static const fake_area graph_area = {
    .name = "graph",
    .reset_order = 5,
    .teardown_order = 5,
    .reset_locked = graph_reset_locked,
    .doom_locked = graph_doom_locked,
    .destroy_doomed_locked = graph_destroy_doomed_locked,
};
FAKE_AREA(graph_area)
