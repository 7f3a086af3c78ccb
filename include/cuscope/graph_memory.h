/* cuscope/graph_memory.h: memory allocated and freed by the nodes of a
 * graph built by hand (graph memory nodes), and the device's graph memory.
 *
 *   cus_autoptr(cus_buffer) tmp = NULL;
 *   cus_graph_node alloc, fill, down, free;
 *   CUS_TRY(cus_graph_add_alloc(g, NULL, 0, &alloc, bytes, &tmp));
 *   CUS_TRY(cus_graph_add_fill_u32(g, &alloc, 1, &fill, tmp, 0, 7, bytes / 4));
 *   CUS_TRY(cus_graph_add_copy_to_host(g, &fill, 1, &down, host, tmp, 0, bytes));
 *   CUS_TRY(cus_graph_add_free(g, &down, 1, &free, tmp));
 *
 * An allocation node (cuGraphAddMemAllocNode) hands out a cus_buffer of
 * kind CUS_BUFFER_GRAPH: the address the driver assigned to the allocation
 * when the node was made, fixed for the node's life and the same at every
 * launch, and its size. It is a buffer like the others for the node calls
 * of cuscope/graph_nodes.h (kernel arguments of cus_graph_add_kernel, copy
 * and fill nodes, bounds-checked against its size, kept alive by the graph
 * that uses it), but it owns no memory: its last release frees nothing, and
 * it holds its context only (not the graph: a graph that uses it keeps it,
 * so holding the graph would be a cycle).
 *
 * When the address may be touched. The memory exists only between the
 * execution of the allocation node and that of the free, at each launch
 * ("graph allocations are recreated every time a graph runs"):
 *   - freed in the same graph (cus_graph_add_free): only by nodes of that
 *     graph ordered after the allocation node and before the free node, in
 *     its launches; never by stream work, and it cannot be freed outside
 *     the graph;
 *   - not freed in the graph: by the graph's nodes after the allocation
 *     node, and by stream work ordered after the launch, until it is freed
 *     by cus_graph_allocation_free (in stream order), or by a free node of
 *     another graph's launch (cus_graph_add_free there). The next launch of
 *     an executable graph that allocates it again fails with the driver's
 *     CUDA_ERROR_INVALID_VALUE while it is still allocated, unless it was
 *     instantiated with CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH.
 * Outside these windows the address is not memory (the driver may map
 * another allocation's memory there): a use is undefined, and the fake
 * driver reports it as use outside the allocation's lifetime.
 *
 * Graphs with memory nodes, the driver's rules (cuGraphAddMemFreeNode):
 * only one executable graph made from such a graph may exist at a time
 * (a second cus_graph_instantiate fails with the driver's
 * CUDA_ERROR_INVALID_VALUE on the fake; the driver documents "an error");
 * such a graph cannot be a child graph (cus_graph_add_child: the driver's
 * error) nor cloned, and its nodes and edges cannot be removed.
 *
 * Lifetimes. An executable graph holds its graph, so the allocation node
 * lives as long as either. Destroying the graph (its last reference, and
 * its executable graphs') frees no memory a launch left allocated: free it
 * first (cus_graph_allocation_free), or it stays allocated, the driver's,
 * until its context goes. The buffer may outlive the graph; its address is
 * then no memory (but while such an allocation is still allocated).
 *
 * The device's graph memory: the driver keeps the physical memory of graph
 * allocations in a pool per device, reserved at the first launch that needs
 * it and kept for the next ones; cus_device_graph_mem_attribute reads how
 * much is used and reserved, cus_device_graph_mem_trim gives back what no
 * graph uses.
 *
 * Every function is thread-safe (calls on one graph are serialized by its
 * lock), returns a cus_status, records the thread's last error on failure,
 * leaves out parameters untouched then, and must not be called from a host
 * function. A failed add adds nothing and makes nothing. */
#ifndef CUSCOPE_GRAPH_MEMORY_H
#define CUSCOPE_GRAPH_MEMORY_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#include "device.h"
#include "graph.h"
#include "graph_nodes.h"
#include "memory.h"
#include "object.h"
#include "status.h"
#include "stream.h"

#ifdef __cplusplus
extern "C" {
#endif

/* --- nodes ---------------------------------------------------------------------- */

/* Adds an allocation node of bytes of device memory (cuGraphAddMemAllocNode:
 * pinned memory on the device of the graph's context, no peer access, no IPC
 * handle), after deps (NULL and 0 for a root; nodes of graph), and writes
 * the node to *out (NULL when not needed) and a new CUS_BUFFER_GRAPH buffer
 * of its address and size to *buf (a new reference; see the top of this
 * file for when the address may be touched). The call is made with the
 * graph's context current. Errors: CUS_ERROR_INVALID_ARGUMENT (graph or buf
 * NULL, bytes 0, a dependency that is no node of graph), the context's
 * poison, the driver's status (CUDA_ERROR_NOT_SUPPORTED where the device
 * has no memory pools), CUS_ERROR_OUT_OF_HOST_MEMORY. */
CUS_API cus_status cus_graph_add_alloc(cus_graph *graph, const cus_graph_node *deps, size_t ndeps,
                                       cus_graph_node *out, size_t bytes, cus_buffer **buf);

/* Adds a free node of buf (cuGraphAddMemFreeNode), after deps. buf must be a
 * CUS_BUFFER_GRAPH buffer of the graph's context (another kind of buffer is
 * CUS_ERROR_INVALID_ARGUMENT, another context CUS_ERROR_CONTEXT_MISMATCH,
 * before the driver is called). In the allocating graph, the free node must
 * come after the allocation node and after every node that uses the memory
 * (make it depend on them); an allocation is freed once in its graph (a
 * second free node: the driver's CUDA_ERROR_INVALID_VALUE). In another
 * graph, its launch frees what a launch of the allocating graph left
 * allocated. The graph does not keep buf (a free needs the address only). */
CUS_API cus_status cus_graph_add_free(cus_graph *graph, const cus_graph_node *deps, size_t ndeps,
                                      cus_graph_node *out, cus_buffer *buf);

/* Frees, in stream order on stream, the allocation of buf that a launch left
 * allocated (cuMemFreeAsync, with the stream's context current): work
 * queued on stream before it may use the memory, work after may not. Only an
 * allocation not freed in its graph, after a launch that allocated it (the
 * driver refuses the others: CUDA_ERROR_INVALID_VALUE on the fake). buf keeps
 * its address (the next launch allocates it there again). Errors:
 * CUS_ERROR_INVALID_ARGUMENT (NULL, not a CUS_BUFFER_GRAPH buffer),
 * CUS_ERROR_CONTEXT_MISMATCH (a stream of another context), the context's
 * poison, the driver's status. */
CUS_API cus_status cus_graph_allocation_free(cus_buffer *buf, cus_stream *stream);

/* What an allocation node allocates (cuGraphMemAllocNodeGetParams): its size
 * in bytes and its address (either out pointer may be NULL, not both).
 * Another kind of node is the driver's CUDA_ERROR_INVALID_VALUE. */
CUS_API cus_status cus_graph_alloc_node_params(cus_graph_node node, size_t *bytes,
                                               CUdeviceptr *ptr);

/* The address a free node frees (cuGraphMemFreeNodeGetParams). Another kind
 * of node is the driver's CUDA_ERROR_INVALID_VALUE. */
CUS_API cus_status cus_graph_free_node_ptr(cus_graph_node node, CUdeviceptr *ptr);

/* --- the device's graph memory ------------------------------------------------------ */

/* Gives the device's graph memory that no graph uses back to the system
 * (cuDeviceGraphMemTrim): what an executing or queued launch uses stays. No
 * context needed. Errors: the driver's status (CUDA_ERROR_INVALID_DEVICE). */
CUS_API cus_status cus_device_graph_mem_trim(cus_device dev);

/* One of the device's graph memory figures, in bytes
 * (cuDeviceGetGraphMemAttribute): CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT (memory
 * of graph allocations), CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT (memory the
 * graph allocator holds, used or kept for the next launches), and their
 * high-water marks _USED_MEM_HIGH and _RESERVED_MEM_HIGH since the last
 * reset. No context needed. Errors: CUS_ERROR_INVALID_ARGUMENT (value NULL),
 * the driver's status (an unknown attribute: CUDA_ERROR_INVALID_VALUE). */
CUS_API cus_status cus_device_graph_mem_attribute(cus_device dev, CUgraphMem_attribute attr,
                                                  uint64_t *value);

/* Resets both high-water marks to their current values
 * (cuDeviceSetGraphMemAttribute of CU_GRAPH_MEM_ATTR_USED_MEM_HIGH and
 * _RESERVED_MEM_HIGH to 0, the only value the driver takes). No context
 * needed. Errors: the driver's status. */
CUS_API cus_status cus_device_graph_mem_reset_high(cus_device dev);

#ifdef __cplusplus
}
#endif

#endif
