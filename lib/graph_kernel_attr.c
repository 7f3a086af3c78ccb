/* Kernel node attributes (cuscope/graph_nodes.h): the attributes of a
 * cus_launch_config a kernel node takes, for cus_graph_add_kernel_ex
 * (graph_nodes.c makes the node); reading one back; copying them between
 * two nodes of one graph. */
#include <string.h>

#include "launch_internal.h"

#define BAD(function, ...) cus_fail_(CUS_ERROR_INVALID_ARGUMENT, (function), NULL, __VA_ARGS__)

cus_status cus_graph_kernel_attrs_(cus_context *ctx, const char *name,
                                   const cus_launch_config *c, CUlaunchAttribute *attrs,
                                   unsigned int *n, const char *function)
{
    if (c->stream)
        return BAD(function, "%s: a kernel node runs on the stream its graph is launched on; "
                             "config.stream must be NULL",
                   name);
    if (c->programmatic_serialization || c->programmatic_event ||
        c->programmatic_event_at_block_start)
        return BAD(function, "%s: programmatic dependent launch is a launch's attribute, not a "
                             "kernel node's (the driver refuses it there); capture the two "
                             "launches with cus_launch_ex, which records the dependency",
                   name);
    unsigned int k = 0;
    if (c->cluster.x || c->cluster.y || c->cluster.z) {
        attrs[k] = (CUlaunchAttribute){.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION};
        attrs[k].value.clusterDim.x = c->cluster.x ? c->cluster.x : 1;
        attrs[k].value.clusterDim.y = c->cluster.y ? c->cluster.y : 1;
        attrs[k].value.clusterDim.z = c->cluster.z ? c->cluster.z : 1;
        k++;
    }
    if (c->cooperative) {
        attrs[k] = (CUlaunchAttribute){.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE};
        attrs[k++].value.cooperative = 1;
    }
    *n = k;
    return cus_launch_attrs_(ctx, name, c, attrs, n, false, function);
}

const char *cus_launch_attribute_name_(CUlaunchAttributeID id)
{
    switch ((int)id) {
    case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW: return "CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW";
    case CU_LAUNCH_ATTRIBUTE_COOPERATIVE: return "CU_LAUNCH_ATTRIBUTE_COOPERATIVE";
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION: return "CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION";
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
        return "CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE";
    case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
        return "CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION";
    case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT: return "CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT";
    case CU_LAUNCH_ATTRIBUTE_PRIORITY: return "CU_LAUNCH_ATTRIBUTE_PRIORITY";
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP: return "CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP";
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN: return "CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN";
    case 11: return "CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION";
    case 12: return "CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT";
    case 13: return "CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE";
    case 14: return "CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT";
    case 16: return "CU_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING";
    default: return "an unknown launch attribute";
    }
}

CUS_API cus_status cus_graph_kernel_node_attribute(cus_graph_node node, CUlaunchAttributeID id,
                                                   CUlaunchAttributeValue *value)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(value);
    CUS_CHECK_NODE_(node);
    cus_graph *g = cus_graph_of_node_(node);
    CUS_CHECK_POISON(g->ctx);
    CUlaunchAttributeValue v;
    memset(&v, 0, sizeof v);
    {
        /* No context needed (the H200's rule): no switch. */
        CUS_GRAPH_LOCK_IDLE_(g, __func__);
        CUresult r = cus_drv_.cuGraphKernelNodeGetAttribute_(node.handle, id, &v);
        if (r)
            return cus_fail_((cus_status)r, __func__, "cuGraphKernelNodeGetAttribute",
                             "reading %s (%d) of node %p (the driver's "
                             "CUDA_ERROR_INVALID_VALUE: not a kernel node, or not an attribute "
                             "of kernel nodes)",
                             cus_launch_attribute_name_(id), (int)id, (void *)node.handle);
    }
    *value = v;
    return CUS_SUCCESS;
}

CUS_API cus_status cus_graph_copy_kernel_attributes(cus_graph_node dst, cus_graph_node src)
{
    CUS_API_ENTER();
    CUS_CHECK_NODE_(dst);
    CUS_CHECK_NODE_(src);
    cus_graph *g = cus_graph_of_node_(dst);
    /* What src's attributes name (its window's buffer) is kept by its graph
     * only: copied into another graph's node, it would not be kept. */
    if (cus_graph_root_(g) != cus_graph_root_(cus_graph_of_node_(src)))
        return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,
                        "the nodes belong to two graphs: the destination's graph would not keep "
                        "what the source's attributes name; set them with "
                        "cus_graph_add_kernel_ex instead");
    CUS_CHECK_POISON(g->ctx);
    CUS_GRAPH_LOCK_IDLE_(g, __func__);
    /* No context needed (the H200's rule): no switch. */
    CUresult r = cus_drv_.cuGraphKernelNodeCopyAttributes_(dst.handle, src.handle);
    if (r)
        return cus_context_driver_fail_(g->ctx, r, __func__, "cuGraphKernelNodeCopyAttributes");
    return CUS_SUCCESS;
}
