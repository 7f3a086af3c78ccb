/* Edges with a kind (cuscope/graph_inspect.h, 12.3): adding and removing
 * them with their CUgraphEdgeData, and the lists of graph_inspect.c with
 * each edge's kind. Queries go through scratch arrays, so that an edge of a
 * kind cuscope does not name leaves the caller's arrays untouched; they are
 * not hot paths. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static CUgraphEdgeData edge_data(cus_edge_kind kind)
{
    CUgraphEdgeData e;
    memset(&e, 0, sizeof e);
    if (kind == CUS_EDGE_PROGRAMMATIC || kind == CUS_EDGE_LAUNCH_ORDER) {
        e.type = CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC;
        e.from_port = kind == CUS_EDGE_PROGRAMMATIC ? CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC
                                                    : CU_GRAPH_KERNEL_NODE_PORT_LAUNCH_ORDER;
    }
    return e;
}

/* The kind of e, false for data no cus_edge_kind stands for. */
static bool edge_kind(const CUgraphEdgeData *e, cus_edge_kind *out)
{
    for (size_t i = 0; i < sizeof e->reserved; i++)
        if (e->reserved[i])
            return false;
    static const cus_edge_kind kinds[] = {CUS_EDGE_DEFAULT, CUS_EDGE_PROGRAMMATIC,
                                          CUS_EDGE_LAUNCH_ORDER};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        CUgraphEdgeData d = edge_data(kinds[k]);
        if (d.from_port == e->from_port && d.to_port == e->to_port && d.type == e->type) {
            *out = kinds[k];
            return true;
        }
    }
    return false;
}

/* kinds[0..n) as the driver's data into *out (inline when it fits, else a
 * heap array in *heap); NULL kinds: NULL data (default edges). */
static cus_status edge_array(const cus_edge_kind *kinds, size_t n, CUgraphEdgeData *inline_e,
                             const CUgraphEdgeData **out, CUgraphEdgeData **heap,
                             const char *function)
{
    *out = NULL;
    *heap = NULL;
    if (!kinds)
        return CUS_SUCCESS;
    for (size_t i = 0; i < n; i++)
        if ((unsigned)kinds[i] > CUS_EDGE_LAUNCH_ORDER)
            return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL,
                             "kind %zu is %d, not a cus_edge_kind (0, 1 or 2)", i + 1,
                             (int)kinds[i]);
    CUgraphEdgeData *e = inline_e;
    if (n > CUS_GRAPH_INLINE_NODES_) {
        e = *heap = cus_malloc_(n * sizeof *e);
        if (!e)
            return cus_fail_(CUS_ERROR_OUT_OF_HOST_MEMORY, function, NULL, "%zu edges' data", n);
    }
    for (size_t i = 0; i < n; i++)
        e[i] = edge_data(kinds[i]);
    *out = e;
    return CUS_SUCCESS;
}

typedef CUresult (*edit_fn)(CUgraph g, const CUgraphNode *from, const CUgraphNode *to,
                            const CUgraphEdgeData *data, size_t n);

static CUresult add_call(CUgraph g, const CUgraphNode *from, const CUgraphNode *to,
                         const CUgraphEdgeData *data, size_t n)
{
    return cus_drv_.cuGraphAddDependencies_v2_(g, from, to, data, n);
}

static CUresult remove_call(CUgraph g, const CUgraphNode *from, const CUgraphNode *to,
                            const CUgraphEdgeData *data, size_t n)
{
    return cus_drv_.cuGraphRemoveDependencies_(g, from, to, data, n);
}

static cus_status edit_edges(cus_graph *graph, const cus_graph_node *from,
                             const cus_graph_node *to, const cus_edge_kind *kinds, size_t n,
                             edit_fn call, bool present, const char *name, const char *function)
{
    CUS_CHECK_POISON_AS(graph->ctx, function);
    if (!present)
        return cus_graph_edges_unsupported_(name, function);
    if (!n)
        return CUS_SUCCESS;
    CUgraphNode inline_f[CUS_GRAPH_INLINE_NODES_], inline_t[CUS_GRAPH_INLINE_NODES_], *hf, *ht;
    CUgraphNode *heap_f, *heap_t;
    CUgraphEdgeData inline_e[CUS_GRAPH_INLINE_NODES_], *heap_e;
    const CUgraphEdgeData *e;
    CUS_TRY(edge_array(kinds, n, inline_e, &e, &heap_e, function));
    __attribute__((unused)) cus_autofree CUgraphEdgeData *owned_e = heap_e;
    CUS_TRY(cus_graph_node_handles_(graph, from, n, "node", inline_f, &hf, &heap_f, function));
    __attribute__((unused)) cus_autofree CUgraphNode *owned_f = heap_f;
    CUS_TRY(cus_graph_node_handles_(graph, to, n, "node", inline_t, &ht, &heap_t, function));
    __attribute__((unused)) cus_autofree CUgraphNode *owned_t = heap_t;
    CUS_GRAPH_LOCK_IDLE_(graph, function);
    CUS_IN_CONTEXT_AS(function, graph->ctx, name, call(graph->handle, hf, ht, e, n));
    return CUS_SUCCESS;
}

CUS_API cus_status cus_graph_add_edges(cus_graph *graph, const cus_graph_node *from,
                                       const cus_graph_node *to, const cus_edge_kind *kinds,
                                       size_t n)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(graph && ((from && to) || !n));
    return edit_edges(graph, from, to, kinds, n, add_call,
                      cus_drv_.cuGraphAddDependencies_v2_ != NULL, "cuGraphAddDependencies",
                      __func__);
}

CUS_API cus_status cus_graph_remove_edges(cus_graph *graph, const cus_graph_node *from,
                                          const cus_graph_node *to, const cus_edge_kind *kinds,
                                          size_t n)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(graph && ((from && to) || !n));
    return edit_edges(graph, from, to, kinds, n, remove_call,
                      cus_drv_.cuGraphRemoveDependencies_ != NULL, "cuGraphRemoveDependencies",
                      __func__);
}

/* --- lists with kinds ---------------------------------------------------------------------- */

/* The kinds of the m entries of e into kinds, all or none. */
static cus_status kinds_out(const CUgraphEdgeData *e, size_t m, cus_edge_kind *kinds,
                            const char *function)
{
    for (size_t i = 0; i < m; i++) {
        cus_edge_kind k;
        if (!edge_kind(&e[i], &k))
            return cus_fail_(CUS_ERROR_NOT_SUPPORTED, function, NULL,
                             "edge %zu has data no cus_edge_kind stands for (from_port %u, "
                             "to_port %u, type %u)",
                             i + 1, e[i].from_port, e[i].to_port, e[i].type);
    }
    for (size_t i = 0; i < m; i++)
        edge_kind(&e[i], &kinds[i]);
    return CUS_SUCCESS;
}

/* Scratch for a list of n entries: nodes (twice for edges) and data, in
 * the struct itself up to CUS_GRAPH_INLINE_NODES_ entries (no allocation
 * for the common short list), else on the heap. */
typedef struct scratch {
    CUgraphNode *nodes;
    CUgraphEdgeData *data;
    bool heap;
    CUgraphNode inline_nodes[2 * CUS_GRAPH_INLINE_NODES_];
    CUgraphEdgeData inline_data[CUS_GRAPH_INLINE_NODES_];
} scratch;

static void scratch_free(scratch *s)
{
    if (s->heap) {
        free(s->nodes);
        free(s->data);
    }
}

static cus_status scratch_alloc(scratch *s, size_t n, size_t lists, const char *function)
{
    s->heap = false;
    s->nodes = NULL;
    s->data = NULL;
    if (!n)
        return CUS_SUCCESS;
    if (n <= CUS_GRAPH_INLINE_NODES_) {
        s->nodes = s->inline_nodes;
        s->data = s->inline_data;
        return CUS_SUCCESS;
    }
    s->heap = true;
    s->nodes = cus_malloc_(lists * n * sizeof *s->nodes);
    s->data = cus_malloc_(n * sizeof *s->data);
    if (!s->nodes || !s->data)
        return cus_fail_(CUS_ERROR_OUT_OF_HOST_MEMORY, function, NULL, "a list of %zu edges", n);
    return CUS_SUCCESS;
}

typedef CUresult (*list_fn)(CUgraphNode n, CUgraphNode *out, CUgraphEdgeData *data,
                            size_t *count);

static CUresult get_dependencies(CUgraphNode n, CUgraphNode *out, CUgraphEdgeData *data,
                                 size_t *count)
{
    return cus_drv_.cuGraphNodeGetDependencies_(n, out, data, count);
}

static CUresult get_dependents(CUgraphNode n, CUgraphNode *out, CUgraphEdgeData *data,
                               size_t *count)
{
    return cus_drv_.cuGraphNodeGetDependentNodes_(n, out, data, count);
}

static cus_status node_list(cus_graph_node node, cus_graph_node *out, cus_edge_kind *kinds,
                            size_t *count, list_fn list, bool present, const char *call,
                            const char *function)
{
    cus_graph *g = cus_graph_of_node_(node);
    CUS_CHECK_POISON_AS(g->ctx, function);
    if (!present)
        return cus_graph_edges_unsupported_(call, function);
    size_t n = out ? *count : 0;
    __attribute__((cleanup(scratch_free))) scratch s;
    CUS_TRY(scratch_alloc(&s, n, 1, function));
    size_t got = n;
    CUresult r;
    {
        CUS_GRAPH_LOCK_IDLE_(g, function);
        r = list(node.handle, s.nodes, s.data, &got);
    }
    if (r)
        return cus_context_driver_fail_(g->ctx, r, function, call);
    size_t m = n < got ? n : got;
    CUS_TRY(kinds_out(s.data, m, kinds, function));
    for (size_t i = 0; i < n; i++)
        out[i] = (cus_graph_node){i < m ? s.nodes[i] : NULL, i < m ? g : NULL};
    *count = got;
    return CUS_SUCCESS;
}

CUS_API cus_status cus_graph_node_dependencies_with_kinds(cus_graph_node node,
                                                          cus_graph_node *deps,
                                                          cus_edge_kind *kinds, size_t *count)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(count && !deps == !kinds);
    CUS_CHECK_NODE_(node);
    return node_list(node, deps, kinds, count, get_dependencies,
                     cus_drv_.cuGraphNodeGetDependencies_ != NULL, "cuGraphNodeGetDependencies",
                     __func__);
}

CUS_API cus_status cus_graph_node_dependents_with_kinds(cus_graph_node node,
                                                        cus_graph_node *dependents,
                                                        cus_edge_kind *kinds, size_t *count)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(count && !dependents == !kinds);
    CUS_CHECK_NODE_(node);
    return node_list(node, dependents, kinds, count, get_dependents,
                     cus_drv_.cuGraphNodeGetDependentNodes_ != NULL,
                     "cuGraphNodeGetDependentNodes", __func__);
}

CUS_API cus_status cus_graph_edges_with_kinds(cus_graph *graph, cus_graph_node *from,
                                              cus_graph_node *to, cus_edge_kind *kinds,
                                              size_t *count)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(graph && count && !from == !to && !from == !kinds);
    CUS_CHECK_POISON(graph->ctx);
    if (!cus_drv_.cuGraphGetEdges_)
        return cus_graph_edges_unsupported_("cuGraphGetEdges", __func__);
    size_t n = from ? *count : 0;
    __attribute__((cleanup(scratch_free))) scratch s;
    CUS_TRY(scratch_alloc(&s, n, 2, __func__));
    size_t got = n;
    CUresult r;
    {
        CUS_GRAPH_LOCK_IDLE_(graph, __func__);
        r = cus_drv_.cuGraphGetEdges_(graph->handle, s.nodes, n ? s.nodes + n : NULL, s.data,
                                      &got);
    }
    if (r)
        return cus_context_driver_fail_(graph->ctx, r, __func__, "cuGraphGetEdges");
    size_t m = n < got ? n : got;
    CUS_TRY(kinds_out(s.data, m, kinds, __func__));
    for (size_t i = 0; i < n; i++) {
        from[i] = (cus_graph_node){i < m ? s.nodes[i] : NULL, i < m ? graph : NULL};
        to[i] = (cus_graph_node){i < m ? s.nodes[n + i] : NULL, i < m ? graph : NULL};
    }
    *count = got;
    return CUS_SUCCESS;
}
