/* 2D and 3D copy nodes (cuscope/graph_nodes.h): the descriptors of
 * cus_copy_2d and cus_copy_3d, checked and converted by copy_nd.c, added with
 * cuGraphAddMemcpyNode (graph_nodes.c keeps the buffers and arrays) and
 * updated with cuGraphExecMemcpyNodeSetParams (graph_exec.c retires what
 * the node used before). */
#include <string.h>

#include "array_internal.h"

/* A copy node's parameters: the descriptor, and the context it runs in. */
typedef struct copy_nd_arg {
    CUDA_MEMCPY3D p;
    CUcontext ctx;
    CUgraphNode node; /* an update's */
} copy_nd_arg;

/* The region checked against its endpoints (copy_nd.c) and against ctx, the
 * graph's; a zero extent is refused (a node must copy something). */
static cus_status prepare(CUcontext ctx, const cus_copy_endpoint *dst,
                          const cus_copy_endpoint *src, size_t w, size_t h, size_t d,
                          cus_copy_nd_ *c, copy_nd_arg *a, const char *function)
{
    CUS_TRY(cus_copy_nd_prepare_(dst, src, w, h, d, c));
    if (!w || !h || !d)
        return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL,
                         "a copy node of a %zu x %zu x %zu region copies nothing", w, h, d);
    if (cus_context_handle(c->ctx) != ctx)
        return cus_fail_(CUS_ERROR_CONTEXT_MISMATCH, function, NULL,
                         "the copy's buffers or arrays belong to context %p, the graph to %p",
                         (void *)cus_context_handle(c->ctx), (void *)ctx);
    memset(a, 0, sizeof *a);
    a->p = c->p;
    a->ctx = ctx;
    return CUS_SUCCESS;
}

static CUresult add_call(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                         const void *arg)
{
    const copy_nd_arg *a = arg;
    return cus_drv_.cuGraphAddMemcpyNode_(node, g, deps, ndeps, &a->p, a->ctx);
}

static cus_status add_copy(cus_graph *g, const cus_graph_node *deps, size_t ndeps,
                           cus_graph_node *out, const cus_copy_endpoint *dst,
                           const cus_copy_endpoint *src, size_t w, size_t h, size_t d,
                           const char *function)
{
    cus_copy_nd_ c;
    copy_nd_arg a;
    CUS_TRY(prepare(g->ctx->handle, dst, src, w, h, d, &c, &a, function));
    return cus_graph_add_keeping_(g, deps, ndeps, out, c.items, c.n, "cuGraphAddMemcpyNode",
                                  add_call, &a, function);
}

CUS_API cus_status cus_graph_add_copy_2d(cus_graph *graph, const cus_graph_node *deps,
                                         size_t ndeps, cus_graph_node *out,
                                         const cus_copy_2d_desc *desc)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(graph && desc);
    CUS_CHECK_POISON(graph->ctx);
    return add_copy(graph, deps, ndeps, out, &desc->dst, &desc->src, desc->width_bytes,
                    desc->height, 1, __func__);
}

CUS_API cus_status cus_graph_add_copy_3d(cus_graph *graph, const cus_graph_node *deps,
                                         size_t ndeps, cus_graph_node *out,
                                         const cus_copy_3d_desc *desc)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(graph && desc);
    CUS_CHECK_POISON(graph->ctx);
    return add_copy(graph, deps, ndeps, out, &desc->dst, &desc->src, desc->width_bytes,
                    desc->height, desc->depth, __func__);
}

static CUresult set_call(CUgraphExec h, void *arg)
{
    const copy_nd_arg *a = arg;
    return cus_drv_.cuGraphExecMemcpyNodeSetParams_(h, a->node, &a->p, a->ctx);
}

static cus_status set_copy(cus_graph_exec *exec, cus_graph_node node,
                           const cus_copy_endpoint *dst, const cus_copy_endpoint *src, size_t w,
                           size_t h, size_t d, const char *function)
{
    if (!exec || !node.handle)
        return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL, "invalid argument: %s",
                         exec ? "no node" : "exec");
    cus_copy_nd_ c;
    copy_nd_arg a;
    CUS_TRY(prepare(cus_graph_exec_context_handle_(exec), dst, src, w, h, d, &c, &a, function));
    /* cuda.h, cuGraphExecMemcpyNodeSetParams: "Both the instantiation-time
     * memory operands and the memory operands in copyParams must be
     * 1-dimensional" (else CUDA_ERROR_INVALID_VALUE). The new region is
     * checked here; the node's own, by the driver. */
    if (h > 1 || d > 1 || dst->kind == CUS_COPY_ARRAY || src->kind == CUS_COPY_ARRAY)
        return cus_fail_(CUS_ERROR_NOT_SUPPORTED, function, NULL,
                         "the driver updates copy nodes of one row only, without arrays "
                         "(cuGraphExecMemcpyNodeSetParams), not a %zu x %zu x %zu region%s: "
                         "update the whole executable graph (cus_graph_exec_update)",
                         w, h, d,
                         dst->kind == CUS_COPY_ARRAY || src->kind == CUS_COPY_ARRAY
                             ? " of an array"
                             : "");
    a.node = node.handle;
    return cus_graph_exec_node_update_(exec, node, c.items, (int)c.n,
                                       "cuGraphExecMemcpyNodeSetParams", set_call, &a, function);
}

CUS_API cus_status cus_graph_exec_set_copy_2d(cus_graph_exec *exec, cus_graph_node node,
                                              const cus_copy_2d_desc *desc)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(desc);
    return set_copy(exec, node, &desc->dst, &desc->src, desc->width_bytes, desc->height, 1,
                    __func__);
}

CUS_API cus_status cus_graph_exec_set_copy_3d(cus_graph_exec *exec, cus_graph_node node,
                                              const cus_copy_3d_desc *desc)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(desc);
    return set_copy(exec, node, &desc->dst, &desc->src, desc->width_bytes, desc->height,
                    desc->depth, __func__);
}
