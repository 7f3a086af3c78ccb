/* Graph inspection and editing: cuGraphNodeGetDependencies,
 * cuGraphNodeGetDependentNodes, cuGraphGetEdges (each also in its 12.3
 * edge-data variant), cuGraphNodeGetEnabled, cuGraphExecGetFlags,
 * cuGraphDebugDotPrint, cuGraphRemoveDependencies (and _v2),
 * cuGraphDestroyNode, cuGraphClone, cuGraphNodeFindInClone, the per-node
 * updates cuGraphExec{EventRecordNodeSetEvent,EventWaitNodeSetEvent,
 * HostNodeSetParams,ChildGraphNodeSetParams}, and
 * cuGraphInstantiateWithParams; part of the graph area (fake_graph.c has the
 * bodies and records, fake_graph_nodes.c the node arguments and the copy on
 * write of a body an executable graph shares).
 *
 * The driver's documented rules (cuda.h) the fake keeps: a node's lists and
 * a graph's edges are filled as cuGraphGetNodes fills its list (NULL past
 * the end, the count written back when smaller); a query of edges with data
 * other than the default would be CUDA_ERROR_LOSSY_QUERY, but the fake makes
 * default edges only; cuGraphRemoveDependencies refuses an edge that does
 * not exist, and it and cuGraphDestroyNode refuse a graph with memory
 * allocation or free nodes; cuGraphClone refuses a graph with memory or
 * conditional nodes; cuGraphNodeFindInClone answers for a node that was in
 * the original at the clone and is still in the clone;
 * cuGraphNodeGetEnabled answers for kernel, copy and memset nodes only;
 * cuGraphExecGetFlags leaves out CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD;
 * cuGraphExecChildGraphNodeSetParams needs the topology and insertion order
 * of the node's graph; a per-node update of a node of another type is
 * CUDA_ERROR_INVALID_VALUE.
 *
 * What the fake chose where cuda.h does not say (say so in reports): the
 * refusals above answer CUDA_ERROR_INVALID_VALUE; cloning or removing from a
 * graph being captured is CUDA_ERROR_ILLEGAL_STATE, as adding to one is;
 * cuGraphDestroyNode of a conditional node is CUDA_ERROR_NOT_SUPPORTED (its
 * bodies are not emulated apart from it); cuGraphDebugDotPrint refuses
 * flags outside CU_GRAPH_DEBUG_DOT_FLAGS_* and writes a small DOT file of
 * its own (a node per line, named n<index>, labelled with its index and
 * type, and an edge per line), CUDA_ERROR_OPERATING_SYSTEM when the file
 * cannot be written. The executable-graph queries (cuGraphNodeGetEnabled,
 * cuGraphExecGetFlags) and cuGraphNodeSetEnabled answer in a poisoned
 * context as in a healthy one: the H200's cells (test/rules). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_graph_records.h"

/* --- lists ------------------------------------------------------------------------------------ */

/* Writes up to *count of the n entries of src into dst (NULL past them),
 * and the count when it is smaller, as cuGraphGetNodes does. */
static void fill_list(CUgraphNode *dst, size_t *count, struct CUgraphNode_st *const *src, size_t n)
{
    size_t want = *count;
    for (size_t i = 0; i < want; i++)
        dst[i] = i < n ? src[i] : NULL;
    if (want > n)
        *count = n;
}

/* A list's edge data: written into edges (when given) for the entries the
 * caller's arrays receive; without edges, a list with an edge of other data
 * than the default is a lossy query (documented: CUDA_ERROR_LOSSY_QUERY),
 * unless only its length was asked for. */
static CUresult edges_out(const fake_edge *data, size_t n, bool listed, fake_edge *edges,
                          size_t want)
{
    if (!edges) {
        for (size_t i = 0; listed && i < n; i++)
            if (data[i].from_port || data[i].to_port || data[i].type)
                return CUDA_ERROR_LOSSY_QUERY;
        return CUDA_SUCCESS;
    }
    for (size_t i = 0; i < want; i++)
        edges[i] = i < n ? data[i] : (fake_edge){0, 0, 0};
    return CUDA_SUCCESS;
}

static CUresult dependencies_locked(CUgraphNode hn, CUgraphNode *deps, fake_edge *edges,
                                    size_t *count)
{
    struct CUgraphNode_st *n = NULL;
    CUresult r = fake_graph_node_arg_locked(hn, &n);
    if (r != CUDA_SUCCESS)
        return r;
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    fake_edge *data = malloc((n->ndeps ? n->ndeps : 1) * sizeof *data);
    if (!data)
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (size_t j = 0; j < n->ndeps; j++)
        data[j] = fake_graph_edge_of(n, j);
    r = edges_out(data, n->ndeps, deps != NULL, edges, deps ? *count : 0);
    free(data);
    if (r != CUDA_SUCCESS)
        return r;
    if (!deps)
        *count = n->ndeps;
    else
        fill_list(deps, count, n->deps, n->ndeps);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuGraphNodeGetDependencies(CUgraphNode hNode, CUgraphNode *dependencies,
                                                 size_t *numDependencies)
{
    FAKE_ENTER(cuGraphNodeGetDependencies);
    return fake_leave(dependencies_locked(hNode, dependencies, NULL, numDependencies));
}

/* The nodes of n's body that depend on n, in the body's order (malloc'd),
 * and the data of each one's edge from n (*data_out, malloc'd); false when
 * out of memory. */
static bool dependents_of(const struct CUgraphNode_st *n, struct CUgraphNode_st ***out,
                          fake_edge **data_out, size_t *n_out)
{
    const fake_graph_body *b = n->body;
    size_t cap = b->nnodes ? b->nnodes : 1;
    struct CUgraphNode_st **list = malloc(cap * sizeof *list);
    fake_edge *data = malloc(cap * sizeof *data);
    if (!list || !data) {
        free(list);
        free(data);
        return false;
    }
    size_t k = 0;
    for (size_t i = 0; i < b->nnodes; i++)
        for (size_t j = 0; j < b->nodes[i]->ndeps; j++)
            if (b->nodes[i]->deps[j] == n) {
                data[k] = fake_graph_edge_of(b->nodes[i], j);
                list[k++] = b->nodes[i];
                break;
            }
    *out = list;
    *data_out = data;
    *n_out = k;
    return true;
}

static CUresult dependents_locked(CUgraphNode hn, CUgraphNode *dependents, fake_edge *edges,
                                  size_t *count)
{
    struct CUgraphNode_st *n = NULL;
    CUresult r = fake_graph_node_arg_locked(hn, &n);
    if (r != CUDA_SUCCESS)
        return r;
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    size_t k = 0;
    struct CUgraphNode_st **list = NULL;
    fake_edge *data = NULL;
    if (!dependents_of(n, &list, &data, &k))
        return CUDA_ERROR_OUT_OF_MEMORY;
    r = edges_out(data, k, dependents != NULL, edges, dependents ? *count : 0);
    if (r == CUDA_SUCCESS) {
        if (!dependents)
            *count = k;
        else
            fill_list(dependents, count, list, k);
    }
    free(list);
    free(data);
    return r;
}

CUresult CUDAAPI fake_cuGraphNodeGetDependentNodes(CUgraphNode hNode, CUgraphNode *dependentNodes,
                                                   size_t *numDependentNodes)
{
    FAKE_ENTER(cuGraphNodeGetDependentNodes);
    return fake_leave(dependents_locked(hNode, dependentNodes, NULL, numDependentNodes));
}

static size_t edge_count(const fake_graph_body *b)
{
    size_t n = 0;
    for (size_t i = 0; i < b->nnodes; i++)
        n += b->nodes[i]->ndeps;
    return n;
}

static CUresult edges_locked(CUgraph hg, CUgraphNode *from, CUgraphNode *to, fake_edge *edges,
                             size_t *count)
{
    struct CUgraph_st *g = NULL;
    CUresult r = fake_graph_graph_arg_locked(hg, &g);
    if (r != CUDA_SUCCESS)
        return r;
    if (!count || !from != !to)
        return CUDA_ERROR_INVALID_VALUE;
    const fake_graph_body *b = g->body;
    size_t total = edge_count(b);
    if (!from) {
        *count = total;
        return CUDA_SUCCESS;
    }
    if (!edges)
        for (size_t i = 0; i < b->nnodes; i++)
            if (fake_graph_node_has_edge_data(b->nodes[i]))
                return CUDA_ERROR_LOSSY_QUERY;
    size_t want = *count, k = 0;
    for (size_t i = 0; i < b->nnodes; i++)
        for (size_t j = 0; j < b->nodes[i]->ndeps; j++, k++)
            if (k < want) {
                from[k] = b->nodes[i]->deps[j];
                to[k] = b->nodes[i];
                if (edges)
                    edges[k] = fake_graph_edge_of(b->nodes[i], j);
            }
    for (size_t i = total; i < want; i++) {
        from[i] = to[i] = NULL;
        if (edges)
            edges[i] = (fake_edge){0, 0, 0};
    }
    if (want > total)
        *count = total;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuGraphGetEdges(CUgraph hGraph, CUgraphNode *from, CUgraphNode *to,
                                      size_t *numEdges)
{
    FAKE_ENTER(cuGraphGetEdges);
    return fake_leave(edges_locked(hGraph, from, to, NULL, numEdges));
}

#ifdef FAKE_HAVE_12030_ENTRIES
/* The edge-data variants: edgeData needs the node arrays; the fake's data
 * goes into the driver's struct, its reserved bytes zero. */
static CUresult edge_data_out(CUgraphEdgeData *out, const fake_edge *data, size_t n)
{
    for (size_t i = 0; out && i < n; i++) {
        memset(&out[i], 0, sizeof out[i]);
        out[i].from_port = data[i].from_port;
        out[i].to_port = data[i].to_port;
        out[i].type = data[i].type;
    }
    return CUDA_SUCCESS;
}

/* Room for n edges' data when edgeData is given (n may be 0). */
static fake_edge *edge_room(const CUgraphEdgeData *edgeData, size_t n, bool *oom)
{
    *oom = false;
    if (!edgeData)
        return NULL;
    fake_edge *e = malloc((n ? n : 1) * sizeof *e);
    *oom = !e;
    return e;
}

CUresult CUDAAPI fake_cuGraphNodeGetDependencies_v2(CUgraphNode hNode, CUgraphNode *dependencies,
                                                    CUgraphEdgeData *edgeData,
                                                    size_t *numDependencies)
{
    FAKE_ENTER(cuGraphNodeGetDependencies_v2);
    if (edgeData && !dependencies)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    size_t want = numDependencies ? *numDependencies : 0;
    bool oom;
    fake_edge *e = edge_room(edgeData, want, &oom);
    if (oom)
        return fake_leave(CUDA_ERROR_OUT_OF_MEMORY);
    CUresult r = dependencies_locked(hNode, dependencies, e, numDependencies);
    if (r == CUDA_SUCCESS)
        edge_data_out(edgeData, e, want);
    free(e);
    return fake_leave(r);
}

CUresult CUDAAPI fake_cuGraphNodeGetDependentNodes_v2(CUgraphNode hNode,
                                                      CUgraphNode *dependentNodes,
                                                      CUgraphEdgeData *edgeData,
                                                      size_t *numDependentNodes)
{
    FAKE_ENTER(cuGraphNodeGetDependentNodes_v2);
    if (edgeData && !dependentNodes)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    size_t want = numDependentNodes ? *numDependentNodes : 0;
    bool oom;
    fake_edge *e = edge_room(edgeData, want, &oom);
    if (oom)
        return fake_leave(CUDA_ERROR_OUT_OF_MEMORY);
    CUresult r = dependents_locked(hNode, dependentNodes, e, numDependentNodes);
    if (r == CUDA_SUCCESS)
        edge_data_out(edgeData, e, want);
    free(e);
    return fake_leave(r);
}

CUresult CUDAAPI fake_cuGraphGetEdges_v2(CUgraph hGraph, CUgraphNode *from, CUgraphNode *to,
                                         CUgraphEdgeData *edgeData, size_t *numEdges)
{
    FAKE_ENTER(cuGraphGetEdges_v2);
    if (edgeData && (!from || !to))
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    size_t want = numEdges ? *numEdges : 0;
    bool oom;
    fake_edge *e = edge_room(edgeData, want, &oom);
    if (oom)
        return fake_leave(CUDA_ERROR_OUT_OF_MEMORY);
    CUresult r = edges_locked(hGraph, from, to, e, numEdges);
    if (r == CUDA_SUCCESS)
        edge_data_out(edgeData, e, want);
    free(e);
    return fake_leave(r);
}
#endif

/* --- executable graphs: queries --------------------------------------------------------------- */

/* The executable graph's own node for the graph's node hn, without copying
 * x's body (a query changes nothing). */
static CUresult exec_node_peek_locked(CUgraphExec he, CUgraphNode hn,
                                      const struct CUgraphNode_st **out)
{
    struct CUgraphExec_st *x = NULL;
    CUresult r = fake_graph_exec_arg_locked(he, false, &x); /* poisoned or not (the H200) */
    if (r != CUDA_SUCCESS)
        return r;
    struct CUgraphNode_st *gn = NULL;
    r = fake_graph_node_arg_locked(hn, &gn);
    if (r != CUDA_SUCCESS)
        return r;
    const struct CUgraphNode_st *k = fake_graph_body_node_for_locked(x->body, gn);
    if (k) {
        *out = k;
        return CUDA_SUCCESS;
    }
    fake_misuse_locked("graph node 0x%" PRIxPTR " is not a node of executable graph 0x%" PRIxPTR
                       " (another graph's, or added after the instantiation)",
                       (uintptr_t)hn, (uintptr_t)he);
    return CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI fake_cuGraphNodeGetEnabled(CUgraphExec hGraphExec, CUgraphNode hNode,
                                            unsigned int *isEnabled)
{
    FAKE_ENTER(cuGraphNodeGetEnabled);
    const struct CUgraphNode_st *n = NULL;
    CUresult r = exec_node_peek_locked(hGraphExec, hNode, &n);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (!isEnabled)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    CUgraphNodeType t = fake_graph_node_type(n);
    if (t != CU_GRAPH_NODE_TYPE_KERNEL && t != CU_GRAPH_NODE_TYPE_MEMCPY &&
        t != CU_GRAPH_NODE_TYPE_MEMSET)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    *isEnabled = !n->disabled;
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuGraphExecGetFlags(CUgraphExec hGraphExec, cuuint64_t *flags)
{
    FAKE_ENTER(cuGraphExecGetFlags);
    struct CUgraphExec_st *x = NULL;
    CUresult r = fake_graph_exec_arg_locked(hGraphExec, false, &x); /* poisoned or not */
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (!flags)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    *flags = x->flags & ~(cuuint64_t)CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD;
    return fake_leave(CUDA_SUCCESS);
}

/* --- the DOT file ------------------------------------------------------------------------------- */

static const char *type_name(CUgraphNodeType t)
{
    switch ((int)t) {
    case CU_GRAPH_NODE_TYPE_KERNEL: return "KERNEL";
    case CU_GRAPH_NODE_TYPE_MEMCPY: return "MEMCPY";
    case CU_GRAPH_NODE_TYPE_MEMSET: return "MEMSET";
    case CU_GRAPH_NODE_TYPE_HOST: return "HOST";
    case CU_GRAPH_NODE_TYPE_GRAPH: return "GRAPH";
    case CU_GRAPH_NODE_TYPE_EMPTY: return "EMPTY";
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT: return "WAIT_EVENT";
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD: return "EVENT_RECORD";
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC: return "MEM_ALLOC";
    case CU_GRAPH_NODE_TYPE_MEM_FREE: return "MEM_FREE";
    case 13: return "CONDITIONAL"; /* CU_GRAPH_NODE_TYPE_CONDITIONAL, 12.3 headers */
    default: return "OTHER";
    }
}

/* The flags of CU_GRAPH_DEBUG_DOT_FLAGS_* (through _CONDITIONAL_NODE_PARAMS, 1 << 15). */
#define DOT_FLAGS_KNOWN 0xffffu

CUresult CUDAAPI fake_cuGraphDebugDotPrint(CUgraph hGraph, const char *path, unsigned int flags)
{
    FAKE_ENTER(cuGraphDebugDotPrint);
    struct CUgraph_st *g = NULL;
    CUresult r = fake_graph_graph_arg_locked(hGraph, &g);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (!path || (flags & ~DOT_FLAGS_KNOWN))
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    FILE *f = fopen(path, "w");
    if (!f)
        return fake_leave(CUDA_ERROR_OPERATING_SYSTEM);
    const fake_graph_body *b = g->body;
    bool handles = flags & (CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE | CU_GRAPH_DEBUG_DOT_FLAGS_HANDLES);
    int bad = fprintf(f, "digraph \"graph 0x%" PRIxPTR "\" {\n", (uintptr_t)g) < 0;
    bad |= fprintf(f, "  // the fake driver's description: %zu nodes, %zu edges\n", b->nnodes,
                   edge_count(b)) < 0;
    for (size_t i = 0; i < b->nnodes; i++) {
        const struct CUgraphNode_st *n = b->nodes[i];
        bad |= fprintf(f, "  n%zu [label=\"%zu %s", i, i, type_name(fake_graph_node_type(n))) < 0;
        if (n->child)
            bad |= fprintf(f, " (%zu nodes)", n->child->nnodes) < 0;
        if (handles)
            bad |= fprintf(f, "\\n0x%" PRIxPTR, (uintptr_t)n) < 0;
        bad |= fputs("\"];\n", f) < 0;
    }
    for (size_t i = 0; i < b->nnodes; i++)
        for (size_t j = 0; j < b->nodes[i]->ndeps; j++)
            bad |= fprintf(f, "  n%zu -> n%zu;\n", b->nodes[i]->deps[j]->index, i) < 0;
    bad |= fputs("}\n", f) < 0;
    bad |= fclose(f) != 0;
    return fake_leave(bad ? CUDA_ERROR_OPERATING_SYSTEM : CUDA_SUCCESS);
}

/* --- editing ------------------------------------------------------------------------------------ */

/* The checks of an edit of g's nodes and edges: not being captured (as the
 * adds), no memory nodes (documented for the removals). */
static CUresult editable_locked(const struct CUgraph_st *g)
{
    if (g->capture)
        return CUDA_ERROR_ILLEGAL_STATE;
    if (g->body->has_memory_nodes)
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

static void remove_dep(struct CUgraphNode_st *to, const struct CUgraphNode_st *from)
{
    for (size_t j = 0; j < to->ndeps; j++)
        if (to->deps[j] == from) {
            memmove(&to->deps[j], &to->deps[j + 1], (to->ndeps - j - 1) * sizeof *to->deps);
            if (to->edges)
                memmove(&to->edges[j], &to->edges[j + 1], (to->ndeps - j - 1) * sizeof *to->edges);
            to->ndeps--;
            return;
        }
}

/* The data of the edge from -> to, which exists. */
static fake_edge edge_between(const struct CUgraphNode_st *to, const struct CUgraphNode_st *from)
{
    for (size_t j = 0; j < to->ndeps; j++)
        if (to->deps[j] == from)
            return fake_graph_edge_of(to, j);
    return (fake_edge){0, 0, 0};
}

/* Edges from[i] -> to[i] (with data[i], when given: an edge with other
 * data does not exist), all checked before any is removed; the order of the
 * body stays one in which each node follows its dependencies. */
static CUresult remove_dependencies_locked(CUgraph hg, const CUgraphNode *from,
                                           const CUgraphNode *to, const fake_edge *data, size_t n)
{
    struct CUgraph_st *g = NULL;
    CUresult r = fake_graph_graph_arg_locked(hg, &g);
    if (r != CUDA_SUCCESS)
        return r;
    if (n && (!from || !to))
        return CUDA_ERROR_INVALID_VALUE;
    if (!n)
        return CUDA_SUCCESS;
    r = editable_locked(g);
    if (r != CUDA_SUCCESS)
        return r;
    for (size_t i = 0; i < n; i++) {
        struct CUgraphNode_st *a = NULL, *b = NULL;
        r = fake_graph_node_of_locked(g, from[i], &a);
        if (r == CUDA_SUCCESS)
            r = fake_graph_node_of_locked(g, to[i], &b);
        if (r != CUDA_SUCCESS)
            return r;
        bool exists = false;
        for (size_t j = 0; j < b->ndeps && !exists; j++)
            exists = b->deps[j] == a;
        if (!exists)
            return CUDA_ERROR_INVALID_VALUE; /* documented: an edge that does not exist */
        fake_edge e = edge_between(b, a), want = data ? data[i] : (fake_edge){0, 0, 0};
        if (e.from_port != want.from_port || e.to_port != want.to_port || e.type != want.type)
            return CUDA_ERROR_INVALID_VALUE; /* not with that data */
        for (size_t j = 0; j < i; j++)
            if (from[j] == from[i] && to[j] == to[i])
                return CUDA_ERROR_INVALID_VALUE; /* the second would not exist */
    }
    r = fake_graph_detach_execs_locked(g);
    if (r != CUDA_SUCCESS)
        return r;
    for (size_t i = 0; i < n; i++)
        remove_dep(to[i], from[i]);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuGraphRemoveDependencies(CUgraph hGraph, const CUgraphNode *from,
                                                const CUgraphNode *to, size_t numDependencies)
{
    FAKE_ENTER(cuGraphRemoveDependencies);
    return fake_leave(remove_dependencies_locked(hGraph, from, to, NULL, numDependencies));
}

#ifdef FAKE_HAVE_12030_ENTRIES
CUresult CUDAAPI fake_cuGraphRemoveDependencies_v2(CUgraph hGraph, const CUgraphNode *from,
                                                   const CUgraphNode *to,
                                                   const CUgraphEdgeData *edgeData,
                                                   size_t numDependencies)
{
    FAKE_ENTER(cuGraphRemoveDependencies_v2);
    if (!edgeData || !numDependencies)
        return fake_leave(remove_dependencies_locked(hGraph, from, to, NULL, numDependencies));
    fake_edge *data = malloc(numDependencies * sizeof *data);
    if (!data)
        return fake_leave(CUDA_ERROR_OUT_OF_MEMORY);
    for (size_t i = 0; i < numDependencies; i++)
        data[i] = (fake_edge){edgeData[i].from_port, edgeData[i].to_port, edgeData[i].type};
    CUresult r = remove_dependencies_locked(hGraph, from, to, data, numDependencies);
    free(data);
    return fake_leave(r);
}
#endif

static CUresult destroy_node_locked(CUgraphNode hn)
{
    struct CUgraphNode_st *n = NULL;
    CUresult r = fake_graph_node_arg_locked(hn, &n);
    if (r != CUDA_SUCCESS)
        return r;
    struct CUgraph_st *g = fake_graph_of_node_locked(n);
    if (!g) {
        fake_misuse_locked("cuGraphDestroyNode of node 0x%" PRIxPTR ", which is no graph's "
                           "(an executable graph's copy?)",
                           (uintptr_t)hn);
        return CUDA_ERROR_INVALID_VALUE;
    }
    r = editable_locked(g);
    if (r != CUDA_SUCCESS)
        return r;
    if (fake_graph_node_type(n) == (CUgraphNodeType)13) /* CONDITIONAL: bodies not emulated apart */
        return CUDA_ERROR_NOT_SUPPORTED;
    r = fake_graph_detach_execs_locked(g);
    if (r != CUDA_SUCCESS)
        return r;
    fake_graph_body *b = g->body;
    size_t kept = 0;
    for (size_t i = 0; i < b->nnodes; i++) {
        struct CUgraphNode_st *k = b->nodes[i];
        if (k == n)
            continue;
        remove_dep(k, n);
        k->index = kept;
        b->nodes[kept++] = k;
    }
    b->nnodes = kept;
    fake_graph_node_release_locked(n);
    n->body = NULL; /* a tombstone: its handle is recognised, and refused */
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuGraphDestroyNode(CUgraphNode hNode)
{
    FAKE_ENTER(cuGraphDestroyNode);
    return fake_leave(destroy_node_locked(hNode));
}

/* Whether b, or a child graph in it, has nodes cuGraphClone refuses. */
static bool clone_refused(const fake_graph_body *b)
{
    if (b->has_memory_nodes)
        return true;
    for (size_t i = 0; i < b->nnodes; i++) {
        const struct CUgraphNode_st *n = b->nodes[i];
        CUgraphNodeType t = fake_graph_node_type(n);
        if (t == CU_GRAPH_NODE_TYPE_MEM_ALLOC || t == CU_GRAPH_NODE_TYPE_MEM_FREE ||
            t == (CUgraphNodeType)13 || (n->child && clone_refused(n->child)))
            return true;
    }
    return false;
}

static CUresult clone_locked(CUgraph *out, CUgraph hg)
{
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUgraph_st *g = NULL;
    CUresult r = fake_graph_graph_arg_locked(hg, &g);
    if (r != CUDA_SUCCESS)
        return r;
    if (g->capture)
        return CUDA_ERROR_ILLEGAL_STATE;
    if (clone_refused(g->body))
        return CUDA_ERROR_INVALID_VALUE; /* documented as not supported; the code is a guess */
    if (!RESERVE(fake_graph_graphs, fake_graph_graph_count, fake_graph_graph_capacity))
        return CUDA_ERROR_OUT_OF_MEMORY;
    fake_graph_body *b = fake_graph_body_clone_locked(g->body);
    struct CUgraph_st *c = b ? fake_handle_new_locked(CUS_FAKE_HANDLE_GRAPH, sizeof *c, 0) : NULL;
    if (!c) {
        fake_graph_body_unref_locked(b);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    /* The clone's nodes are its own (not stand-ins for g's, as an
     * executable graph's copies are): cuGraphNodeFindInClone maps them. */
    for (size_t i = 0; i < b->nnodes; i++) {
        b->nodes[i]->cloned_from = g->body->nodes[i];
        b->nodes[i]->origin = NULL;
    }
    c->ctx = g->ctx;
    c->body = b;
    b->graph = c;
    fake_graph_graphs[fake_graph_graph_count++] = c;
    *out = c;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuGraphClone(CUgraph *phGraphClone, CUgraph originalGraph)
{
    FAKE_ENTER(cuGraphClone);
    return fake_leave(clone_locked(phGraphClone, originalGraph));
}

static CUresult find_in_clone_locked(CUgraphNode *out, CUgraphNode horig, CUgraph hclone)
{
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUgraphNode_st *orig = NULL;
    struct CUgraph_st *c = NULL;
    CUresult r = fake_graph_node_arg_locked(horig, &orig);
    if (r == CUDA_SUCCESS)
        r = fake_graph_graph_arg_locked(hclone, &c);
    if (r != CUDA_SUCCESS)
        return r;
    for (size_t i = 0; i < c->body->nnodes; i++)
        if (c->body->nodes[i]->cloned_from == orig) {
            *out = c->body->nodes[i];
            return CUDA_SUCCESS;
        }
    return CUDA_ERROR_INVALID_VALUE; /* not cloned from it, or removed from the clone */
}

CUresult CUDAAPI fake_cuGraphNodeFindInClone(CUgraphNode *phNode, CUgraphNode hOriginalNode,
                                             CUgraph hClonedGraph)
{
    FAKE_ENTER(cuGraphNodeFindInClone);
    return fake_leave(find_in_clone_locked(phNode, hOriginalNode, hClonedGraph));
}

/* --- executable graphs: per-node updates ---------------------------------------------------------- */

static CUresult set_event_locked(CUgraphExec he, CUgraphNode hn, CUevent hev, bool record)
{
    struct CUevent_st *e = NULL;
    CUresult r = fake_event_arg_locked(hev, &e);
    if (r != CUDA_SUCCESS)
        return r;
    struct CUgraphExec_st *x = NULL;
    struct CUgraphNode_st *n = NULL;
    r = fake_graph_exec_node_locked(
        he, hn, record ? CU_GRAPH_NODE_TYPE_EVENT_RECORD : CU_GRAPH_NODE_TYPE_WAIT_EVENT, &x, &n);
    if (r != CUDA_SUCCESS)
        return r;
    n->u.record.event = e;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuGraphExecEventRecordNodeSetEvent(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                         CUevent event)
{
    FAKE_ENTER(cuGraphExecEventRecordNodeSetEvent);
    return fake_leave(set_event_locked(hGraphExec, hNode, event, true));
}

CUresult CUDAAPI fake_cuGraphExecEventWaitNodeSetEvent(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                       CUevent event)
{
    FAKE_ENTER(cuGraphExecEventWaitNodeSetEvent);
    return fake_leave(set_event_locked(hGraphExec, hNode, event, false));
}

CUresult CUDAAPI fake_cuGraphExecHostNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                   const CUDA_HOST_NODE_PARAMS *nodeParams)
{
    FAKE_ENTER(cuGraphExecHostNodeSetParams);
    if (!nodeParams || !nodeParams->fn)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    struct CUgraphExec_st *x = NULL;
    struct CUgraphNode_st *n = NULL;
    CUresult r = fake_graph_exec_node_locked(hGraphExec, hNode, CU_GRAPH_NODE_TYPE_HOST, &x, &n);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    n->u.host.fn = nodeParams->fn;
    n->u.host.user_data = nodeParams->userData;
    return fake_leave(CUDA_SUCCESS);
}

/* Whether two bodies have the same topology and node order: the same
 * types, the same dependencies by position, child graphs alike. */
static bool same_topology(const fake_graph_body *a, const fake_graph_body *b)
{
    if (a->nnodes != b->nnodes)
        return false;
    for (size_t i = 0; i < a->nnodes; i++) {
        const struct CUgraphNode_st *p = a->nodes[i], *q = b->nodes[i];
        if (fake_graph_node_type(p) != fake_graph_node_type(q) || p->ndeps != q->ndeps ||
            !p->child != !q->child || (p->child && !same_topology(p->child, q->child)))
            return false;
        for (size_t j = 0; j < p->ndeps; j++) {
            bool found = false;
            for (size_t k = 0; k < q->ndeps && !found; k++)
                found = p->deps[j]->index == q->deps[k]->index;
            if (!found)
                return false;
        }
    }
    return true;
}

static CUresult set_child_locked(CUgraphExec he, CUgraphNode hn, CUgraph hchild)
{
    struct CUgraph_st *child = NULL;
    CUresult r = fake_graph_graph_arg_locked(hchild, &child);
    if (r != CUDA_SUCCESS)
        return r;
    if (child->capture)
        return CUDA_ERROR_ILLEGAL_STATE;
    struct CUgraphExec_st *x = NULL;
    struct CUgraphNode_st *n = NULL;
    r = fake_graph_exec_node_locked(he, hn, CU_GRAPH_NODE_TYPE_GRAPH, &x, &n);
    if (r != CUDA_SUCCESS)
        return r;
    if (child->body->has_memory_nodes || !same_topology(n->child, child->body))
        return CUDA_ERROR_INVALID_VALUE;
    /* The node's copy of the child is replaced (copies are shared, never
     * changed in place). */
    fake_graph_body *copy = fake_graph_body_clone_locked(child->body);
    if (!copy)
        return CUDA_ERROR_OUT_OF_MEMORY;
    fake_graph_body_unref_locked(n->child);
    n->child = copy;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuGraphExecChildGraphNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                         CUgraph childGraph)
{
    FAKE_ENTER(cuGraphExecChildGraphNodeSetParams);
    return fake_leave(set_child_locked(hGraphExec, hNode, childGraph));
}

/* --- instantiation with parameters ------------------------------------------------------------- */

CUresult CUDAAPI fake_cuGraphInstantiateWithParams(CUgraphExec *phGraphExec, CUgraph hGraph,
                                                   CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
    FAKE_ENTER(cuGraphInstantiateWithParams);
    if (!instantiateParams)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    CUDA_GRAPH_INSTANTIATE_PARAMS *p = instantiateParams;
    p->hErrNode_out = NULL;
    if (p->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD) {
        /* The upload stream, checked as cuGraphUpload checks it; nothing
         * to upload to. */
        struct CUstream_st *s = NULL;
        CUresult r = fake_stream_arg_locked(p->hUploadStream, &s);
        if (r != CUDA_SUCCESS) {
            p->result_out = CUDA_GRAPH_INSTANTIATE_ERROR;
            return fake_leave(r);
        }
    }
    return fake_leave(fake_graph_instantiate_locked(phGraphExec, hGraph, p->flags, true,
                                                    &p->result_out, &p->hErrNode_out));
}
