/* Graph memory nodes built by hand: cuGraphAddMemAllocNode,
 * cuGraphAddMemFreeNode, cuGraphMemAllocNodeGetParams,
 * cuGraphMemFreeNodeGetParams; and the device's graph memory:
 * cuDeviceGraphMemTrim, cuDeviceGetGraphMemAttribute,
 * cuDeviceSetGraphMemAttribute. Part of the graph area (fake_graph.c has
 * the bodies and records, fake_graph_nodes.c the adds' common checks).
 *
 * A node added here is the node a capture makes of cuMemAllocAsync or
 * cuMemFreeAsync (kind FAKE_OP_ALLOC or FAKE_OP_FREE, its type read from
 * its kind), so everything downstream is shared with captured graphs:
 * the block registered at the node's creation under the address it hands
 * out (fixed for the node's life), made usable by each launch's allocation
 * and unusable by a free (fake_memory.c), the launch rules of
 * fake_graph_exec.c, the refusal of such a graph as a child
 * (fake_graph_nodes.c), and the device's graph memory counted when the
 * allocations execute (fake_memory.c: used between an allocation's execution
 * and its free, reserved grown by use, kept until a trim).
 *
 * The driver's rules, and where they come from:
 *  - documented (cuGraphAddMemFreeNode): a free of an address that no
 *    allocation node returned, of an invalid address, or a second free of
 *    one allocation in the same graph is CUDA_ERROR_INVALID_VALUE; such
 *    graphs have one executable graph at a time, cannot be children nor
 *    cloned (fake_graph_exec.c, fake_graph_nodes.c; no clone here);
 *  - documented (cuGraphAddMemAllocNode): the address is fixed across
 *    instantiations and launches; handleTypes must be
 *    CU_MEM_HANDLE_TYPE_NONE (IPC is not supported), accessDescCount must
 *    not exceed the number of devices;
 *  - guessed (the codes or the checks are not documented, say so in
 *    reports): a bytesize of 0, an allocation type other than PINNED, a
 *    location that is no device, a handle type, or too many access
 *    descriptors: CUDA_ERROR_INVALID_VALUE; a device without memory pools:
 *    CUDA_ERROR_NOT_SUPPORTED (as cuMemAllocAsync answers); a free node in
 *    the allocating graph that does not come after its allocation node:
 *    CUDA_ERROR_INVALID_VALUE (the driver documents only that the memory may
 *    be used between the two); a memory node in a conditional node's body:
 *    CUDA_ERROR_INVALID_VALUE (documented: bodies take kernel, empty, child,
 *    memset, memcpy and conditional nodes only; where the driver refuses
 *    it, here or at instantiation, is not); the node getters on a node of
 *    another type: CUDA_ERROR_INVALID_VALUE; the attributes' unknown values
 *    and a high-water mark set to anything but 0: CUDA_ERROR_INVALID_VALUE,
 *    a reset setting the mark to its current value (as the pools' do);
 *  - the fake's model of the device's graph memory (the driver documents
 *    only what the attributes mean): used counts the graph allocations that
 *    exist now, reserved what the allocator holds (at least used, kept after
 *    a free for the next launch), and a trim gives back reserved memory no
 *    executed allocation uses; the real driver rounds to its granularity and
 *    may keep memory mapped to an executable graph between launches.
 * The allocation's owner (the fake's records need a context): the graph's
 * context if it lives on the node's device, else the current one there; a
 * node with neither is CUDA_ERROR_INVALID_CONTEXT (a deviation: the driver
 * ties graph memory to the device, not to a context). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "fake_context.h"
#include "fake_device.h"
#include "fake_graph_records.h"
#include "fake_memory.h"

/* --- helpers ------------------------------------------------------------------------------------ */

/* Appends a memory node of kind (ALLOC or FREE) of m to g after deps: the
 * node a capture would have made (untyped: its kind says what it is, and
 * the replay queues its operation). NULL when out of memory. */
static struct CUgraphNode_st *memory_node_add_locked(struct CUgraph_st *g,
                                                     const CUgraphNode *deps, size_t ndeps,
                                                     fake_op_kind kind, fake_mem *m)
{
    struct CUgraphNode_st *n = fake_graph_node_add_locked(
        g, deps, ndeps, kind == FAKE_OP_ALLOC ? CU_GRAPH_NODE_TYPE_MEM_ALLOC
                                              : CU_GRAPH_NODE_TYPE_MEM_FREE);
    if (!n)
        return NULL;
    n->typed = false;
    n->kind = kind;
    n->u.mem.mem = m;
    g->body->has_memory_nodes = true;
    return n;
}

/* The owner of a new graph allocation on dev: see the top of the file. */
static struct CUctx_st *owner_locked(const struct CUgraph_st *g, CUdevice dev)
{
    if (g->ctx && g->ctx->h.state == FAKE_LIVE && g->ctx->device == dev)
        return g->ctx;
    struct CUctx_st *c = NULL;
    if (fake_current_context_any_locked(&c) == CUDA_SUCCESS && c->device == dev)
        return c;
    return NULL;
}

/* Whether `target` is an ancestor of one of deps (or one of them). */
static bool reaches_locked(const fake_graph_body *b, const CUgraphNode *deps, size_t ndeps,
                           const struct CUgraphNode_st *target, bool *oom)
{
    *oom = false;
    bool *seen = calloc(b->nnodes ? b->nnodes : 1, sizeof *seen);
    struct CUgraphNode_st **stack = malloc((b->nnodes ? b->nnodes : 1) * sizeof *stack);
    if (!seen || !stack) {
        free(seen);
        free(stack);
        *oom = true;
        return false;
    }
    size_t top = 0;
    bool found = false;
    for (size_t i = 0; i < ndeps; i++) {
        if (!seen[deps[i]->index]) {
            seen[deps[i]->index] = true;
            stack[top++] = deps[i];
        }
    }
    while (top && !found) {
        struct CUgraphNode_st *n = stack[--top];
        found = n == target;
        for (size_t j = 0; j < n->ndeps && !found; j++) {
            if (!seen[n->deps[j]->index]) {
                seen[n->deps[j]->index] = true;
                stack[top++] = n->deps[j];
            }
        }
    }
    free(seen);
    free(stack);
    return found;
}

/* --- allocation and free nodes -------------------------------------------------------------- */

static CUresult add_alloc_locked(CUgraphNode *out, CUgraph hg, const CUgraphNode *deps,
                                 size_t ndeps, CUDA_MEM_ALLOC_NODE_PARAMS *p)
{
    struct CUgraph_st *g = NULL;
    CUresult r = fake_graph_add_prologue_locked(out, hg, deps, ndeps, &g);
    if (r != CUDA_SUCCESS)
        return r;
    if (!p || p->bytesize == 0 || p->poolProps.allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
        p->poolProps.location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
        p->poolProps.handleTypes != CU_MEM_HANDLE_TYPE_NONE ||
        (p->accessDescCount && !p->accessDescs) ||
        p->accessDescCount > (size_t)fake_dev.count)
        return CUDA_ERROR_INVALID_VALUE;
    CUdevice dev = p->poolProps.location.id;
    if (!fake_device_at_locked(dev))
        return CUDA_ERROR_INVALID_VALUE;
    if (!fake_dev.devices[dev].attributes[CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED])
        return CUDA_ERROR_NOT_SUPPORTED;
    if (g->parent)
        return CUDA_ERROR_INVALID_VALUE; /* a body takes no memory node */
    struct CUctx_st *owner = owner_locked(g, dev);
    if (!owner)
        return CUDA_ERROR_INVALID_CONTEXT;
    fake_mem *m = NULL;
    r = fake_memory_graph_new_locked(owner, p->bytesize, &m);
    if (r != CUDA_SUCCESS)
        return r;
    struct CUgraphNode_st *n = memory_node_add_locked(g, deps, ndeps, FAKE_OP_ALLOC, m);
    if (!n) {
        fake_memory_graph_drop_locked(m); /* held by nothing: released */
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    fake_memory_graph_hold_locked(m); /* the body's */
    p->dptr = (CUdeviceptr)(uintptr_t)fake_memory_global_base(m);
    *out = n;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuGraphAddMemAllocNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                             const CUgraphNode *dependencies,
                                             size_t numDependencies,
                                             CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams)
{
    FAKE_ENTER(cuGraphAddMemAllocNode);
    return fake_leave(
        add_alloc_locked(phGraphNode, hGraph, dependencies, numDependencies, nodeParams));
}

static CUresult add_free_locked(CUgraphNode *out, CUgraph hg, const CUgraphNode *deps,
                                size_t ndeps, CUdeviceptr dptr)
{
    struct CUgraph_st *g = NULL;
    CUresult r = fake_graph_add_prologue_locked(out, hg, deps, ndeps, &g);
    if (r != CUDA_SUCCESS)
        return r;
    fake_mem *m = fake_memory_graph_at_locked((uintptr_t)dptr);
    if (!m)
        return CUDA_ERROR_INVALID_VALUE; /* documented: no allocation node's address */
    if (g->parent)
        return CUDA_ERROR_INVALID_VALUE;
    const fake_graph_body *b = g->body;
    if (fake_graph_body_frees(b, m))
        return CUDA_ERROR_INVALID_VALUE; /* documented: freed twice in one graph */
    for (size_t i = 0; i < b->nnodes; i++) {
        const struct CUgraphNode_st *a = b->nodes[i];
        if (a->kind != FAKE_OP_ALLOC || a->u.mem.mem != m)
            continue;
        bool oom = false;
        if (!reaches_locked(b, deps, ndeps, a, &oom))
            return oom ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_ERROR_INVALID_VALUE;
    }
    struct CUgraphNode_st *n = memory_node_add_locked(g, deps, ndeps, FAKE_OP_FREE, m);
    if (!n)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *out = n;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuGraphAddMemFreeNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                            const CUgraphNode *dependencies,
                                            size_t numDependencies, CUdeviceptr dptr)
{
    FAKE_ENTER(cuGraphAddMemFreeNode);
    return fake_leave(add_free_locked(phGraphNode, hGraph, dependencies, numDependencies, dptr));
}

/* --- the nodes' parameters ------------------------------------------------------------------ */

CUresult CUDAAPI fake_cuGraphMemAllocNodeGetParams(CUgraphNode hNode,
                                                   CUDA_MEM_ALLOC_NODE_PARAMS *params_out)
{
    FAKE_ENTER(cuGraphMemAllocNodeGetParams);
    struct CUgraphNode_st *n = NULL;
    CUresult r = fake_graph_node_arg_locked(hNode, &n);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (!params_out || fake_graph_node_type(n) != CU_GRAPH_NODE_TYPE_MEM_ALLOC)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    const fake_mem *m = n->u.mem.mem;
    memset(params_out, 0, sizeof *params_out);
    params_out->poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    params_out->poolProps.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
    params_out->poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    params_out->poolProps.location.id = fake_memory_graph_device(m);
    params_out->bytesize = fake_memory_graph_size(m);
    params_out->dptr = (CUdeviceptr)(uintptr_t)fake_memory_global_base(m);
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuGraphMemFreeNodeGetParams(CUgraphNode hNode, CUdeviceptr *dptr_out)
{
    FAKE_ENTER(cuGraphMemFreeNodeGetParams);
    struct CUgraphNode_st *n = NULL;
    CUresult r = fake_graph_node_arg_locked(hNode, &n);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (!dptr_out || fake_graph_node_type(n) != CU_GRAPH_NODE_TYPE_MEM_FREE)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    *dptr_out = (CUdeviceptr)(uintptr_t)fake_memory_global_base(n->u.mem.mem);
    return fake_leave(CUDA_SUCCESS);
}

/* --- the device's graph memory ---------------------------------------------------------------- */

CUresult CUDAAPI fake_cuDeviceGraphMemTrim(CUdevice device)
{
    FAKE_ENTER(cuDeviceGraphMemTrim);
    if (!fake_device_at_locked(device))
        return fake_leave(CUDA_ERROR_INVALID_DEVICE);
    fake_memory_graph_trim_locked(device);
    return fake_leave(CUDA_SUCCESS);
}

static bool known_attribute(CUgraphMem_attribute attr)
{
    return attr == CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT || attr == CU_GRAPH_MEM_ATTR_USED_MEM_HIGH ||
           attr == CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT ||
           attr == CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH;
}

CUresult CUDAAPI fake_cuDeviceGetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr,
                                                   void *value)
{
    FAKE_ENTER(cuDeviceGetGraphMemAttribute);
    if (!fake_device_at_locked(device))
        return fake_leave(CUDA_ERROR_INVALID_DEVICE);
    if (!value || !known_attribute(attr))
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    cuuint64_t v[4];
    fake_memory_graph_usage_locked(device, v);
    *(cuuint64_t *)value = v[attr];
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuDeviceSetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr,
                                                   void *value)
{
    FAKE_ENTER(cuDeviceSetGraphMemAttribute);
    if (!fake_device_at_locked(device))
        return fake_leave(CUDA_ERROR_INVALID_DEVICE);
    /* Only a high-water mark, and only to 0 (the current values are read-only). */
    if (!value || *(const cuuint64_t *)value != 0 ||
        (attr != CU_GRAPH_MEM_ATTR_USED_MEM_HIGH && attr != CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH))
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    fake_memory_graph_reset_high_locked(device, attr == CU_GRAPH_MEM_ATTR_USED_MEM_HIGH);
    return fake_leave(CUDA_SUCCESS);
}
