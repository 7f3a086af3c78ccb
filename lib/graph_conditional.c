/* Conditional nodes (cuscope/graph_conditional.h): handles, and nodes whose
 * body graphs are cus_graphs that hold their parent and share their root's
 * keep list and lock (graph_nodes.c). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static cus_status conditional_unsupported(const char *entry, const char *what, const char *needs,
                                          const char *function)
{
    return cus_fail_(CUS_ERROR_NOT_SUPPORTED, function, NULL,
                     "driver API %d.%d does not provide %s: %s need driver %s or later",
                     cus_driver_version_ / 1000, cus_driver_version_ % 1000 / 10, entry, what,
                     needs);
}

/* Whether h was made on g or on a graph that encloses it (a body's parent,
 * and so on): cuGraphConditionalHandleCreate's handle serves "a conditional
 * node in this graph or one of its children" (cuda.h). */
static bool made_on(const cus_graph *g, CUgraphConditionalHandle h)
{
    for (; g; g = g->parent)
        for (size_t i = 0; i < g->cond_count; i++)
            if (g->cond_handles[i] == h)
                return true;
    return false;
}

CUS_API cus_status cus_graph_conditional_create(cus_graph *graph, unsigned int default_value,
                                                bool assign_default,
                                                CUgraphConditionalHandle *out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(graph && out);
    CUS_CHECK_POISON(graph->ctx);
    if (!cus_drv_.cuGraphConditionalHandleCreate_)
        return conditional_unsupported("cuGraphConditionalHandleCreate", "conditional nodes",
                                       "12.3", __func__);
    CUS_LOCK_SCOPE(&cus_graph_root_(graph)->lock);
    /* Room first, so that a made handle is always recorded. */
    if (graph->cond_count == graph->cond_capacity) {
        size_t want = graph->cond_capacity ? graph->cond_capacity * 2 : 4;
        CUgraphConditionalHandle *grown =
            cus_realloc_(graph->cond_handles, want * sizeof *grown);
        if (!grown)
            return CUS_FAIL(CUS_ERROR_OUT_OF_HOST_MEMORY, NULL, "recording a conditional handle");
        graph->cond_handles = grown;
        graph->cond_capacity = want;
    }
    CUgraphConditionalHandle h = 0;
    CUS_IN_CONTEXT(graph->ctx, "cuGraphConditionalHandleCreate",
                   cus_drv_.cuGraphConditionalHandleCreate_(
                       &h, graph->handle, graph->ctx->handle, default_value,
                       assign_default ? CU_GRAPH_COND_ASSIGN_DEFAULT : 0));
    graph->cond_handles[graph->cond_count++] = h;
    *out = h;
    return CUS_SUCCESS;
}

static CUresult add_conditional_call(CUgraphNode *node, CUgraph g, const CUgraphNode *deps,
                                     size_t ndeps, const void *arg)
{
    return cus_drv_.cuGraphAddNode_(node, g, deps, NULL, ndeps, (CUgraphNodeParams *)arg);
}

CUS_API cus_status cus_graph_add_conditional(cus_graph *graph, const cus_graph_node *deps,
                                             size_t ndeps, cus_graph_node *out,
                                             CUgraphConditionalHandle handle,
                                             CUgraphConditionalNodeType type, unsigned int size,
                                             cus_graph **bodies)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(graph && bodies);
    CUS_CHECK_POISON(graph->ctx);
    bool sized = false; /* SWITCH, or IF with an ELSE: 12.8 */
    switch (type) {
    case CU_GRAPH_COND_TYPE_IF:
        if (size != 1 && size != 2)
            return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,
                            "invalid argument: an IF node has 1 or 2 bodies, not %u", size);
        sized = size == 2;
        break;
    case CU_GRAPH_COND_TYPE_WHILE:
        if (size != 1)
            return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,
                            "invalid argument: a WHILE node has 1 body, not %u", size);
        break;
    case CU_GRAPH_COND_TYPE_SWITCH:
        if (size < 1)
            return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,
                            "invalid argument: a SWITCH node has at least 1 body");
        sized = true;
        break;
    default:
        return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,
                        "invalid argument: unknown conditional node type %d", (int)type);
    }
    if (!handle)
        return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,
                        "invalid argument: no conditional handle (make one with "
                        "cus_graph_conditional_create on this graph)");
    {
        CUS_LOCK_SCOPE(&cus_graph_root_(graph)->lock);
        if (!made_on(graph, handle))
            return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,
                            "invalid argument: conditional handle 0x%llx was not made on this "
                            "graph nor on one that encloses it",
                            (unsigned long long)handle);
    }
    if (!cus_drv_.cuGraphAddNode_)
        return conditional_unsupported("cuGraphAddNode", "conditional nodes", "12.3", __func__);
    if (sized && cus_driver_version_ < 12080)
        return conditional_unsupported("conditional nodes of this kind",
                                       type == CU_GRAPH_COND_TYPE_SWITCH ? "SWITCH nodes"
                                                                         : "IF/ELSE nodes",
                                       "12.8", __func__);
    /* Every wrapper before the driver call: a success cannot fail after. */
    cus_autofree cus_graph **made = cus_calloc_(size, sizeof *made);
    cus_autofree CUgraph *handles = cus_calloc_(size, sizeof *handles);
    if (!made || !handles)
        return CUS_FAIL(CUS_ERROR_OUT_OF_HOST_MEMORY, NULL, "the body graphs");
    for (unsigned int i = 0; i < size; i++) {
        made[i] = cus_calloc_(1, sizeof *made[i]);
        if (!made[i]) {
            for (unsigned int j = 0; j < i; j++)
                free(made[j]);
            return CUS_FAIL(CUS_ERROR_OUT_OF_HOST_MEMORY, NULL, "a body graph");
        }
    }
    CUgraphNodeParams p;
    memset(&p, 0, sizeof p);
    p.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
    p.conditional.handle = handle;
    p.conditional.type = type;
    p.conditional.size = size;
    /* An output: the driver points it at its own array of the bodies ("CUDA-
     * owned"). Ours is given as well, so that a driver which fills the
     * caller's array instead is read the same way. */
    p.conditional.phGraph_out = handles;
    p.conditional.ctx = graph->ctx->handle;
    cus_status st = cus_graph_add_raw_(graph, deps, ndeps, out, "cuGraphAddNode",
                                       add_conditional_call, &p, __func__);
    if (st != CUS_SUCCESS) {
        for (unsigned int i = 0; i < size; i++)
            free(made[i]);
        return st;
    }
    for (unsigned int i = 0; i < size; i++) {
        cus_graph_body_init_(made[i], graph, p.conditional.phGraph_out[i]);
        bodies[i] = made[i];
    }
    return CUS_SUCCESS;
}
