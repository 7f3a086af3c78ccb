/* Kernel node attributes: cuGraphKernelNodeSetAttribute,
 * cuGraphKernelNodeGetAttribute and cuGraphKernelNodeCopyAttributes; part of
 * the graph area (fake_graph_nodes.c has the node arguments and the copy on
 * write of a body an executable graph shares; fake_module_launch.c the
 * attributes' rules).
 *
 * The driver's documented rules (cuda.h) the fake keeps: the attributes a
 * node takes are those "valid for graph nodes" (access-policy window,
 * cooperative, cluster dimension, cluster scheduling policy, priority,
 * memory sync domain and its map, preferred cluster dimension, and the
 * shared-memory carveout and NVLink hints); each value is checked as
 * cuLaunchKernelEx checks it; both nodes of a copy must have the same
 * context; executable graphs made before keep what they were instantiated
 * with; a change of the node's parameters keeps its attributes.
 *
 * What the fake chose where cuda.h does not say (say so in reports, and
 * test/rules/expected.txt says which cells a GPU has confirmed): a node of
 * another type, an attribute that is launches' only (programmatic ones, the
 * launch completion event) or unknown answer CUDA_ERROR_INVALID_VALUE; a
 * device-updatable node (13) is not emulated, CUDA_ERROR_NOT_SUPPORTED; a
 * set or copy checks the node's new configuration at once, as a launch
 * would (a cluster that does not divide the grid:
 * CUDA_ERROR_INVALID_CLUSTER_SIZE); an attribute never set reads as zeros;
 * a graph being captured into is CUDA_ERROR_ILLEGAL_STATE for a set or
 * copy, as other edits.
 *
 * The H200's cells (driver 580, test/rules/expected.txt): no context need
 * be current; the node's context poisoned is its error for a set, nothing
 * for a read, and CUDA_ERROR_INVALID_VALUE for a copy, as is a node whose
 * context was destroyed; a set or read of such a node crashes the driver
 * (the fake: a misuse, CUDA_ERROR_INVALID_HANDLE; lib/fake/deliberate.txt). */
#include <string.h>

#include "fake_graph_records.h"

/* hn, a kernel node of a graph (not an executable graph's copy); for a
 * change (edit), the graph not being captured into and its executable
 * graphs detached. */
static CUresult kernel_node_locked(CUgraphNode hn, bool edit, struct CUgraphNode_st **out)
{
    return fake_graph_node_of_type_locked(hn, CU_GRAPH_NODE_TYPE_KERNEL, edit, out);
}

static CUresult set_locked(CUgraphNode hn, CUlaunchAttributeID attr,
                           const CUlaunchAttributeValue *value)
{
    struct CUgraphNode_st *n = NULL;
    CUresult r = kernel_node_locked(hn, true, &n);
    if (r != CUDA_SUCCESS)
        return r;
    if (!value)
        return CUDA_ERROR_INVALID_VALUE;
    return fake_module_node_attribute_set_locked(n->u.launch.exec, attr, value);
}

CUresult CUDAAPI fake_cuGraphKernelNodeSetAttribute(CUgraphNode hNode, CUkernelNodeAttrID attr,
                                                    const CUkernelNodeAttrValue *value)
{
    FAKE_ENTER(cuGraphKernelNodeSetAttribute);
    return fake_leave(set_locked(hNode, attr, value));
}

static CUresult get_locked(CUgraphNode hn, CUlaunchAttributeID attr, CUlaunchAttributeValue *out)
{
    struct CUgraphNode_st *n = NULL;
    CUresult r = kernel_node_locked(hn, false, &n);
    if (r == CUDA_SUCCESS)
        r = fake_module_node_function_locked(n->u.launch.exec, false);
    if (r != CUDA_SUCCESS)
        return r;
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    return fake_module_node_attribute_get(n->u.launch.exec, attr, out);
}

CUresult CUDAAPI fake_cuGraphKernelNodeGetAttribute(CUgraphNode hNode, CUkernelNodeAttrID attr,
                                                    CUkernelNodeAttrValue *value_out)
{
    FAKE_ENTER(cuGraphKernelNodeGetAttribute);
    return fake_leave(get_locked(hNode, attr, value_out));
}

static CUresult copy_locked(CUgraphNode hdst, CUgraphNode hsrc)
{
    struct CUgraphNode_st *src = NULL, *dst = NULL;
    CUresult r = kernel_node_locked(hsrc, false, &src);
    if (r == CUDA_SUCCESS)
        r = kernel_node_locked(hdst, true, &dst);
    if (r != CUDA_SUCCESS)
        return r;
    /* The H200: a node of a destroyed or poisoned context is
     * CUDA_ERROR_INVALID_VALUE (a destroyed one is a misuse too). */
    if (fake_module_node_function_locked(src->u.launch.exec, true) != CUDA_SUCCESS ||
        fake_module_node_function_locked(dst->u.launch.exec, true) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_VALUE;
    return fake_module_node_attributes_copy_locked(dst->u.launch.exec, src->u.launch.exec);
}

CUresult CUDAAPI fake_cuGraphKernelNodeCopyAttributes(CUgraphNode dst, CUgraphNode src)
{
    FAKE_ENTER(cuGraphKernelNodeCopyAttributes);
    return fake_leave(copy_locked(dst, src));
}
