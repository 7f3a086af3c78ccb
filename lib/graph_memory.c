/* Graph memory nodes (cuscope/graph_memory.h): allocation and free nodes of
 * graphs built by hand, the free of a graph allocation outside its graph,
 * the nodes' parameters, and the device's graph memory. An allocation node's
 * memory is handed out as a CUS_BUFFER_GRAPH buffer (memory.c's buffer over
 * memory it does not free), so that the node calls of graph_nodes.c take it
 * as any buffer: bounds-checked, kept by the graphs that use it. */
#include <stdint.h>
#include <string.h>

#include "buffer_owner.h"
#include "cuscope/graph_memory.h"
#include "internal.h"

/* --- nodes ------------------------------------------------------------------------------- */

static CUresult add_alloc_call(CUgraphNode *node, CUgraph g, const CUgraphNode *deps,
                               size_t ndeps, const void *arg)
{
    /* The driver writes the address into the parameters (graph_memory's own). */
    return cus_drv_.cuGraphAddMemAllocNode_(node, g, deps, ndeps,
                                            (CUDA_MEM_ALLOC_NODE_PARAMS *)(uintptr_t)arg);
}

CUS_API cus_status cus_graph_add_alloc(cus_graph *graph, const cus_graph_node *deps, size_t ndeps,
                                       cus_graph_node *out, size_t bytes, cus_buffer **buf)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(graph && buf);
    CUS_CHECK_ARG(bytes > 0);
    CUS_CHECK_POISON(graph->ctx);
    cus_release_deferred_if_any_();
    /* The record first: once the node exists, nothing may fail. */
    cus_buffer *b = NULL;
    CUS_TRY(cus_buffer_new_owned_(graph->ctx, 0, bytes, CUS_BUFFER_GRAPH,
                                  (cus_buffer_owner_){NULL, NULL}, &b, __func__));
    CUDA_MEM_ALLOC_NODE_PARAMS p;
    memset(&p, 0, sizeof p);
    p.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.poolProps.handleTypes = CU_MEM_HANDLE_TYPE_NONE; /* graph allocations have no IPC */
    p.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.poolProps.location.id = graph->ctx->device.handle;
    p.bytesize = bytes;
    cus_status st = cus_graph_add_raw_(graph, deps, ndeps, out, "cuGraphAddMemAllocNode",
                                       add_alloc_call, &p, __func__);
    if (st != CUS_SUCCESS) {
        cus_buffer_unref(b); /* keeps the error recorded */
        return st;
    }
    cus_buffer_set_ptr_(b, p.dptr);
    *buf = b;
    return CUS_SUCCESS;
}

/* A CUS_BUFFER_GRAPH buffer of ctx (else recorded, naming function). */
static cus_status graph_buffer_of(const cus_buffer *buf, const cus_context *ctx,
                                  const char *what, const char *function)
{
    cus_buffer_kind kind = cus_buffer_get_kind(buf);
    if (kind != CUS_BUFFER_GRAPH)
        return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL,
                         "the buffer (0x%llx) is no graph allocation (cus_graph_add_alloc): its "
                         "memory is freed with its last reference, not by a graph",
                         (unsigned long long)cus_buffer_ptr(buf));
    const cus_context *owner = cus_buffer_context(buf);
    if (owner->handle != ctx->handle)
        return cus_fail_(CUS_ERROR_CONTEXT_MISMATCH, function, NULL,
                         "the graph allocation belongs to context %p, the %s to %p",
                         (void *)owner->handle, what, (void *)ctx->handle);
    return CUS_SUCCESS;
}

static CUresult add_free_call(CUgraphNode *node, CUgraph g, const CUgraphNode *deps,
                              size_t ndeps, const void *arg)
{
    return cus_drv_.cuGraphAddMemFreeNode_(node, g, deps, ndeps, *(const CUdeviceptr *)arg);
}

CUS_API cus_status cus_graph_add_free(cus_graph *graph, const cus_graph_node *deps, size_t ndeps,
                                      cus_graph_node *out, cus_buffer *buf)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(graph && buf);
    CUS_CHECK_POISON(graph->ctx);
    CUS_TRY(graph_buffer_of(buf, graph->ctx, "graph", __func__));
    CUdeviceptr ptr = cus_buffer_ptr(buf);
    return cus_graph_add_raw_(graph, deps, ndeps, out, "cuGraphAddMemFreeNode", add_free_call,
                              &ptr, __func__);
}

CUS_API cus_status cus_graph_allocation_free(cus_buffer *buf, cus_stream *stream)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(buf && stream);
    CUS_TRY(graph_buffer_of(buf, stream->ctx, "stream", __func__));
    CUS_CHECK_POISON(stream->ctx);
    CUS_IN_CONTEXT(stream->ctx, "cuMemFreeAsync",
                   cus_drv_.cuMemFreeAsync_(cus_buffer_ptr(buf), stream->handle));
    return CUS_SUCCESS;
}

/* The checks of the getters: a node, its graph's context not poisoned. */
#define NODE_PROLOGUE(node)                                                    \
    do {                                                                       \
        if (!(node).handle || !(node).graph)                                   \
            return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL, "invalid argument: no node"); \
        CUS_CHECK_POISON((node).graph->ctx);                                   \
    } while (0)

CUS_API cus_status cus_graph_alloc_node_params(cus_graph_node node, size_t *bytes,
                                               CUdeviceptr *ptr)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(bytes || ptr);
    NODE_PROLOGUE(node);
    CUDA_MEM_ALLOC_NODE_PARAMS p;
    memset(&p, 0, sizeof p);
    {
        /* The driver's graph is not thread-safe: its lock, as for the adds. */
        CUS_LOCK_SCOPE(&cus_graph_root_((cus_graph *)node.graph)->lock);
        CUS_IN_CONTEXT(node.graph->ctx, "cuGraphMemAllocNodeGetParams",
                       cus_drv_.cuGraphMemAllocNodeGetParams_(node.handle, &p));
    }
    if (bytes)
        *bytes = p.bytesize;
    if (ptr)
        *ptr = p.dptr;
    return CUS_SUCCESS;
}

CUS_API cus_status cus_graph_free_node_ptr(cus_graph_node node, CUdeviceptr *ptr)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(ptr);
    NODE_PROLOGUE(node);
    CUdeviceptr p = 0;
    {
        CUS_LOCK_SCOPE(&cus_graph_root_((cus_graph *)node.graph)->lock);
        CUS_IN_CONTEXT(node.graph->ctx, "cuGraphMemFreeNodeGetParams",
                       cus_drv_.cuGraphMemFreeNodeGetParams_(node.handle, &p));
    }
    *ptr = p;
    return CUS_SUCCESS;
}

/* --- the device's graph memory ------------------------------------------------------------- */

#define DEVICE_FAIL(r, call, dev)                                              \
    CUS_FAIL((cus_status)(r), (call), "graph memory of device %d", (int)(dev).handle)

CUS_API cus_status cus_device_graph_mem_trim(cus_device dev)
{
    CUS_API_ENTER();
    CUS_TRY(cus_driver_ensure_());
    CUresult r = cus_drv_.cuDeviceGraphMemTrim_(dev.handle);
    if (r)
        return DEVICE_FAIL(r, "cuDeviceGraphMemTrim", dev);
    return CUS_SUCCESS;
}

CUS_API cus_status cus_device_graph_mem_attribute(cus_device dev, CUgraphMem_attribute attr,
                                                  uint64_t *value)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(value);
    CUS_TRY(cus_driver_ensure_());
    cuuint64_t v = 0;
    CUresult r = cus_drv_.cuDeviceGetGraphMemAttribute_(dev.handle, attr, &v);
    if (r)
        return DEVICE_FAIL(r, "cuDeviceGetGraphMemAttribute", dev);
    *value = v;
    return CUS_SUCCESS;
}

CUS_API cus_status cus_device_graph_mem_reset_high(cus_device dev)
{
    CUS_API_ENTER();
    CUS_TRY(cus_driver_ensure_());
    static const CUgraphMem_attribute highs[2] = {CU_GRAPH_MEM_ATTR_USED_MEM_HIGH,
                                                  CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH};
    for (int i = 0; i < 2; i++) {
        cuuint64_t zero = 0; /* the only value taken */
        CUresult r = cus_drv_.cuDeviceSetGraphMemAttribute_(dev.handle, highs[i], &zero);
        if (r)
            return DEVICE_FAIL(r, "cuDeviceSetGraphMemAttribute", dev);
    }
    return CUS_SUCCESS;
}
