/* Conditional nodes: cuGraphConditionalHandleCreate and cuGraphAddNode (the
 * conditional type only), the body graphs, and their replay; part of the
 * graph area (fake_graph_records.h). cus_fake_graph_set_conditional stands
 * for the device's cudaGraphSetConditional: host twins call it.
 *
 * Replay. A launch queues, before its nodes, an operation that applies the
 * defaults of the handles that ask for them (made on the graph or on its
 * bodies), and for each conditional node an operation that, when the stream
 * executes it, reads the handle's value and runs the chosen body's nodes in
 * place, one after the other (kernels through their twins, copies,
 * memsets; child graphs and nested conditionals recursively): IF runs
 * body 0 when the value is non-zero (body 1, if any, when it is zero), WHILE
 * runs body 0 while the value is non-zero, reading it again after each
 * pass, SWITCH runs body[value] when value < size. A WHILE loop stops after
 * FAKE_COND_MAX_PASSES passes: misuse, and the context is poisoned with
 * CUDA_ERROR_LAUNCH_FAILED (a device fault, as a kernel that never ends
 * would end under a watchdog; CUDA_ERROR_LAUNCH_TIMEOUT is not among the
 * errors cuscope treats as sticky), so that a test cannot hang. Errors of a
 * body's kernels poison the context as at any launch.
 *
 * What the fake does not know of the real driver, and chose (say so in
 * reports): cuGraphAddNode serves the conditional type only
 * (CUDA_ERROR_NOT_SUPPORTED for the others); edge data must be all zeros; a
 * handle made on a graph that neither is the node's nor encloses it
 * (documented: "this graph or one of its children"), a context other than
 * the handle's, a size the type does not take are CUDA_ERROR_INVALID_VALUE; phGraph_out is an output
 * only, as the driver documents it ("CUDA-owned array populated with
 * conditional node child graphs"): whatever the caller put there is
 * ignored, and the fake points it at the node's own array; a body
 * graph is not destroyable (misuse, CUDA_ERROR_INVALID_VALUE) nor
 * instantiable (CUDA_ERROR_INVALID_VALUE), and dies with its node's graph;
 * nodes a body may not hold (host, event, memory nodes) are refused when
 * the body runs (misuse, CUDA_ERROR_INVALID_VALUE), not when added; a body
 * changed after an instantiation changes what the executable graph runs
 * (the driver's copies it). Without CU_GRAPH_COND_ASSIGN_DEFAULT the value
 * starts at 0 and keeps what the last launch left. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "fake_graph_records.h"

#ifdef FAKE_HAVE_CONDITIONAL_ENTRIES

#define FAKE_COND_MAX_PASSES 1000000ul
#define FAKE_COND_MAX_DEPTH 32
#define HANDLE_TAG 0xc0d1000000000000ull

typedef struct cond_handle {
    struct CUgraph_st *graph;
    struct CUctx_st *ctx;
    unsigned int default_value, value;
    bool assign_default;
    struct cond_handle *next_default; /* the root graph's cond_defaults list */
} cond_handle;

struct fake_cond_node {
    struct CUgraph_st *graph; /* that holds the node */
    cond_handle *handle;
    CUgraphConditionalNodeType type;
    unsigned int size;
    struct CUgraph_st **bodies;
    struct fake_cond_node *next_in_graph; /* graph's cond_nodes list */
};

static cond_handle **handles;
static size_t handle_count, handle_capacity;
static struct fake_cond_node **conds;
static size_t cond_count, cond_capacity;

static cond_handle *handle_of(CUgraphConditionalHandle h)
{
    if ((h & ~0xffffffffull) != HANDLE_TAG || (h & 0xffffffffull) == 0 ||
        (h & 0xffffffffull) > handle_count)
        return NULL;
    return handles[(h & 0xffffffffull) - 1];
}

static struct CUgraph_st *root_of(struct CUgraph_st *g)
{
    while (g->parent)
        g = g->parent;
    return g;
}

/* --- entry points ------------------------------------------------------------------------------- */

CUresult CUDAAPI fake_cuGraphConditionalHandleCreate(CUgraphConditionalHandle *pHandle_out,
                                                     CUgraph hGraph, CUcontext ctx,
                                                     unsigned int defaultLaunchValue,
                                                     unsigned int flags)
{
    FAKE_ENTER(cuGraphConditionalHandleCreate);
    if (!pHandle_out || (flags & ~(unsigned int)CU_GRAPH_COND_ASSIGN_DEFAULT) || !ctx)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    struct CUgraph_st *g = NULL;
    CUresult r = fake_graph_graph_arg_locked(hGraph, &g);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    struct CUctx_st *c = NULL;
    r = fake_context_arg_locked(ctx, CUDA_ERROR_CONTEXT_IS_DESTROYED, &c);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (handle_count >= 0xffffffffull || !RESERVE(handles, handle_count, handle_capacity))
        return fake_leave(CUDA_ERROR_OUT_OF_MEMORY);
    cond_handle *h = calloc(1, sizeof *h);
    if (!h)
        return fake_leave(CUDA_ERROR_OUT_OF_MEMORY);
    h->graph = g;
    h->ctx = c;
    h->default_value = defaultLaunchValue;
    h->assign_default = flags & CU_GRAPH_COND_ASSIGN_DEFAULT;
    if (h->assign_default) {
        struct CUgraph_st *root = root_of(g);
        h->next_default = root->cond_defaults;
        root->cond_defaults = h;
    }
    handles[handle_count++] = h;
    *pHandle_out = HANDLE_TAG | handle_count;
    return fake_leave(CUDA_SUCCESS);
}

static bool zeros(const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i])
            return false;
    return true;
}

/* A body graph of g: a graph record like cuGraphCreate's. */
static struct CUgraph_st *body_graph_new_locked(struct CUgraph_st *g)
{
    fake_graph_body *b = fake_graph_body_new_locked();
    struct CUgraph_st *bg = b ? fake_graph_record_new_locked(g->ctx, b) : NULL;
    if (!bg) {
        fake_graph_body_unref_locked(b);
        return NULL;
    }
    bg->parent = g;
    return bg;
}

static CUresult add_conditional_locked(CUgraphNode *out, CUgraph hg, const CUgraphNode *deps,
                                       const CUgraphEdgeData *edges, size_t ndeps,
                                       CUgraphNodeParams *p)
{
    if (!p || !zeros(p->reserved0, sizeof p->reserved0) || p->reserved2)
        return CUDA_ERROR_INVALID_VALUE;
    if (edges && !zeros(edges, ndeps * sizeof *edges))
        return CUDA_ERROR_INVALID_VALUE;
    if (p->type != CU_GRAPH_NODE_TYPE_CONDITIONAL)
        return CUDA_ERROR_NOT_SUPPORTED; /* the fake's limit */
    struct CUgraph_st *g = NULL;
    CUresult r = fake_graph_add_prologue_locked(out, hg, deps, ndeps, &g);
    if (r != CUDA_SUCCESS)
        return r;
    CUDA_CONDITIONAL_NODE_PARAMS *cp = &p->conditional;
    /* Documented: the handle serves "a conditional node in this graph [the
     * one it was made on] or one of its children": g or a graph that encloses
     * g as a conditional body. */
    cond_handle *h = handle_of(cp->handle);
    bool encloses = false;
    for (const struct CUgraph_st *a = g; h && a && !encloses; a = a->parent)
        encloses = a == h->graph;
    if (!encloses || cp->ctx != (CUcontext)h->ctx)
        return CUDA_ERROR_INVALID_VALUE;
    bool size_ok = (cp->type == CU_GRAPH_COND_TYPE_IF && (cp->size == 1 || cp->size == 2)) ||
                   (cp->type == CU_GRAPH_COND_TYPE_WHILE && cp->size == 1) ||
                   (cp->type == CU_GRAPH_COND_TYPE_SWITCH && cp->size >= 1);
    if (!size_ok)
        return CUDA_ERROR_INVALID_VALUE;
    if (!RESERVE(conds, cond_count, cond_capacity))
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct fake_cond_node *c = calloc(1, sizeof *c);
    struct CUgraph_st **bodies = calloc(cp->size, sizeof *bodies);
    if (!c || !bodies) {
        free(c);
        free(bodies);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    c->graph = g;
    c->handle = h;
    c->type = cp->type;
    c->size = cp->size;
    c->bodies = bodies;
    conds[cond_count++] = c; /* from here on, freed at the reset */
    c->next_in_graph = g->cond_nodes;
    g->cond_nodes = c;
    for (unsigned int i = 0; i < cp->size; i++) {
        bodies[i] = body_graph_new_locked(g);
        if (!bodies[i]) {
            for (unsigned int j = 0; j < i; j++)
                fake_graph_graph_release_locked(bodies[j]);
            c->size = 0;
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    struct CUgraphNode_st *n =
        fake_graph_node_add_locked(g, deps, ndeps, CU_GRAPH_NODE_TYPE_CONDITIONAL);
    if (!n) {
        for (unsigned int i = 0; i < cp->size; i++)
            fake_graph_graph_release_locked(bodies[i]);
        c->size = 0;
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    n->cond = c;
    /* The node's array, valid as long as the node (the records live until
     * the next install). */
    cp->phGraph_out = (CUgraph *)bodies;
    *out = n;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuGraphAddNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph,
                                        const CUgraphNode *dependencies,
                                        const CUgraphEdgeData *dependencyData,
                                        size_t numDependencies, CUgraphNodeParams *nodeParams)
{
    FAKE_ENTER(cuGraphAddNode_v2);
    return fake_leave(add_conditional_locked(phGraphNode, hGraph, dependencies, dependencyData,
                                             numDependencies, nodeParams));
}

/* --- replay ------------------------------------------------------------------------------------- */

CUresult fake_graph_conditional_launch_locked(struct CUgraphExec_st *x, struct CUstream_st *s)
{
    struct CUgraph_st *root = root_of(x->origin);
    if (!root->cond_defaults)
        return CUDA_SUCCESS;
    fake_op op = {.kind = FAKE_OP_CONDITIONAL, .call = "cuGraphLaunch"};
    op.u.cond.exec = x;
    op.u.cond.root = root;
    return fake_stream_enqueue_locked(s, &op, NULL, 0);
}

CUresult fake_graph_conditional_replay_locked(struct CUgraphExec_st *x,
                                              const struct CUgraphNode_st *n,
                                              struct CUstream_st *s, CUstream hs)
{
    fake_op op = {.kind = FAKE_OP_CONDITIONAL, .call = "cuGraphLaunch"};
    op.u.cond.node = n;
    op.u.cond.exec = x;
    op.u.cond.hs = hs;
    return fake_stream_enqueue_locked(s, &op, NULL, 0);
}

static CUresult run_cond_locked(const fake_op *op, const struct CUgraphNode_st *n, int depth);

/* Runs b's nodes in place, in order (the lock may be released by kernels). */
static CUresult run_nodes_locked(const fake_op *op, const fake_graph_body *b, int depth)
{
    if (depth > FAKE_COND_MAX_DEPTH) {
        fake_misuse_locked("conditional bodies nested deeper than %d", FAKE_COND_MAX_DEPTH);
        return CUDA_ERROR_INVALID_VALUE;
    }
    for (size_t i = 0; b && i < b->nnodes; i++) {
        const struct CUgraphNode_st *n = b->nodes[i];
        if (n->disabled)
            continue;
        CUresult r = CUDA_SUCCESS;
        bool runs = n->kind == FAKE_OP_LAUNCH || n->kind == FAKE_OP_COPY ||
                    n->kind == FAKE_OP_MEMSET;
        if (n->typed) {
            switch (n->type) {
            case CU_GRAPH_NODE_TYPE_EMPTY:
                continue;
            case CU_GRAPH_NODE_TYPE_GRAPH:
                r = run_nodes_locked(op, n->child, depth + 1);
                if (r != CUDA_SUCCESS)
                    return r;
                continue;
            case CU_GRAPH_NODE_TYPE_CONDITIONAL:
                r = run_cond_locked(op, n, depth + 1);
                if (r != CUDA_SUCCESS)
                    return r;
                continue;
            case CU_GRAPH_NODE_TYPE_KERNEL:
            case CU_GRAPH_NODE_TYPE_MEMCPY:
            case CU_GRAPH_NODE_TYPE_MEMSET:
                break;
            default:
                runs = false;
                break;
            }
        }
        if (!runs) {
            fake_misuse_locked("cuGraphLaunch: node %zu of a conditional body is of a type a "
                               "body may not hold (kernel, empty, copy, memset, child graph and "
                               "conditional nodes only)",
                               i);
            return CUDA_ERROR_INVALID_VALUE;
        }
        const struct CUstream_st *s = op->stream;
        if (s && s->ctx->sticky != CUDA_SUCCESS)
            return s->ctx->sticky; /* a kernel of the body poisoned the context */
        fake_op inner = {.kind = n->kind, .call = "cuGraphLaunch", .stream = op->stream,
                         .u = n->u};
        if (n->kind == FAKE_OP_LAUNCH) {
            inner.u.launch.exec =
                fake_module_launch_replay(n->u.launch.exec, op->u.cond.exec, op->u.cond.hs);
            if (!inner.u.launch.exec)
                return CUDA_ERROR_OUT_OF_MEMORY;
            fake_module_record_launch_locked(inner.u.launch.exec);
        }
        const fake_op_executor *ex = fake_op_executor_of(n->kind);
        r = ex && ex->execute_locked ? ex->execute_locked(&inner) : CUDA_SUCCESS;
        if (ex && ex->free_payload)
            ex->free_payload(&inner);
        if (r != CUDA_SUCCESS)
            return r;
    }
    return CUDA_SUCCESS;
}

static const fake_graph_body *body_of(const struct fake_cond_node *c, unsigned int i)
{
    return i < c->size ? c->bodies[i]->body : NULL;
}

static CUresult run_cond_locked(const fake_op *op, const struct CUgraphNode_st *n, int depth)
{
    const struct fake_cond_node *c = n->cond;
    cond_handle *h = c->handle;
    switch (c->type) {
    case CU_GRAPH_COND_TYPE_IF:
        if (h->value)
            return run_nodes_locked(op, body_of(c, 0), depth);
        return c->size == 2 ? run_nodes_locked(op, body_of(c, 1), depth) : CUDA_SUCCESS;
    case CU_GRAPH_COND_TYPE_SWITCH:
        return h->value < c->size ? run_nodes_locked(op, body_of(c, h->value), depth)
                                  : CUDA_SUCCESS;
    case CU_GRAPH_COND_TYPE_WHILE:
        for (unsigned long pass = 0; h->value; pass++) {
            if (pass == FAKE_COND_MAX_PASSES) {
                fake_misuse_locked("cuGraphLaunch: a WHILE node ran its body %lu times and "
                                   "its condition is still %u: a loop that does not end",
                                   pass, h->value);
                /* A kernel that never ends: the device's fault, sticky. */
                struct CUctx_st *ctx = op->stream->ctx;
                if (ctx->sticky == CUDA_SUCCESS)
                    ctx->sticky = CUDA_ERROR_LAUNCH_FAILED;
                return CUDA_ERROR_LAUNCH_FAILED;
            }
            CUresult r = run_nodes_locked(op, body_of(c, 0), depth);
            if (r != CUDA_SUCCESS)
                return r;
        }
        return CUDA_SUCCESS;
    }
    return CUDA_SUCCESS;
}

static CUresult cond_execute_locked(const fake_op *op)
{
    if (op->u.cond.node)
        return run_cond_locked(op, op->u.cond.node, 0);
    for (cond_handle *h = op->u.cond.root->cond_defaults; h; h = h->next_default)
        h->value = h->default_value;
    return CUDA_SUCCESS;
}

/* --- lifetime ------------------------------------------------------------------------------------ */

void fake_graph_conditional_released_locked(struct CUgraph_st *g)
{
    /* The bodies' handles die; their nodes stay (freed at the reset) for
     * the executable graphs made before. */
    for (struct fake_cond_node *c = g->cond_nodes; c; c = c->next_in_graph) {
        for (unsigned int j = 0; j < c->size; j++) {
            struct CUgraph_st *bg = c->bodies[j];
            if (bg->h.state == FAKE_LIVE) {
                fake_graph_conditional_released_locked(bg);
                fake_handle_set_state_locked(&bg->h, FAKE_DESTROYED);
            }
        }
    }
}

static void cond_reset_locked(const cus_fake_config *cfg)
{
    (void)cfg;
    for (size_t i = 0; i < handle_count; i++)
        free(handles[i]);
    free(handles);
    handles = NULL;
    handle_count = handle_capacity = 0;
    for (size_t i = 0; i < cond_count; i++) {
        free(conds[i]->bodies);
        free(conds[i]);
    }
    free(conds);
    conds = NULL;
    cond_count = cond_capacity = 0;
}

static const fake_op_executor cond_executors[] = {
    {FAKE_OP_CONDITIONAL, FAKE_OP_DEAD_WHEN_POISONED, cond_execute_locked, NULL},
};

static const fake_area cond_area = {
    .name = "conditional nodes",
    .reset_order = 6,
    .teardown_order = 6,
    .reset_locked = cond_reset_locked,
    .executors = cond_executors,
    .executor_count = sizeof cond_executors / sizeof cond_executors[0],
};
FAKE_AREA(cond_area)

#else

CUresult fake_graph_conditional_launch_locked(struct CUgraphExec_st *x, struct CUstream_st *s)
{
    (void)x;
    (void)s;
    return CUDA_SUCCESS;
}

CUresult fake_graph_conditional_replay_locked(struct CUgraphExec_st *x,
                                              const struct CUgraphNode_st *n,
                                              struct CUstream_st *s, CUstream hs)
{
    (void)x, (void)n, (void)s, (void)hs;
    return CUDA_SUCCESS;
}

void fake_graph_conditional_released_locked(struct CUgraph_st *g)
{
    (void)g;
}

#endif

CUS_API cus_status cus_fake_graph_set_conditional(CUgraphConditionalHandle handle,
                                                  unsigned int value)
{
#ifdef FAKE_HAVE_CONDITIONAL_ENTRIES
    fake_lock();
    cond_handle *h = handle_of(handle);
    if (h)
        h->value = value;
    fake_unlock();
    return h ? CUS_SUCCESS : CUS_ERROR_INVALID_ARGUMENT;
#else
    (void)handle;
    (void)value;
    return CUS_ERROR_NOT_SUPPORTED;
#endif
}
