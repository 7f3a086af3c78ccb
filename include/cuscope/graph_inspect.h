/* cuscope/graph_inspect.h: looking into graphs and executable graphs,
 * editing graphs (edges, nodes, clones), and the per-node updates of
 * executable graphs that cuscope/graph_nodes.h does not have (event, host
 * function and child graph nodes).
 *
 *   cus_autoptr(cus_graph) copy = NULL;
 *   CUS_TRY(cus_graph_clone(g, &copy));            // keeps what g keeps
 *   cus_graph_node k;
 *   CUS_TRY(cus_graph_node_in_clone(copy, kernel, &k));
 *   size_t n = 0;
 *   CUS_TRY(cus_graph_node_dependencies(k, NULL, &n));
 *   CUS_TRY(cus_graph_debug_dot(copy, "graph.dot", 0));   // dot -Tsvg graph.dot
 *
 * Nodes are the cus_graph_node values of cuscope/graph_nodes.h: borrowed
 * from their graph, valid while it lives and until the node is destroyed.
 * The lists (dependencies, dependents, edges) are filled as cus_graph_nodes
 * fills its list: *count is the capacity on entry and the number written on
 * return (the list's length when that is smaller); with the arrays NULL,
 * *count receives the length. The nodes written belong to the graph of the
 * node (or graph) asked about.
 *
 * The edge functions use the driver's edge-data entry points (CUDA 12.3:
 * cuGraphGetEdges_v2, cuGraphNodeGetDependencies_v2,
 * cuGraphNodeGetDependentNodes_v2, cuGraphRemoveDependencies_v2), which
 * cuda.h's names resolve to: with an older driver they answer
 * CUS_ERROR_NOT_SUPPORTED, naming the version needed. A list with an edge
 * of another kind than the default (cus_edge_kind: a programmatic
 * dependency) is refused by the plain queries with the driver's
 * CUDA_ERROR_LOSSY_QUERY, which would drop the kind; the _with_kinds
 * queries return it.
 *
 * Every function is thread-safe (calls on one graph, or one executable
 * graph, are serialized by its lock), returns a cus_status, records the
 * thread's last error on failure, leaves out parameters untouched then, and
 * must not be called from a host function. Queries make no context current
 * (the driver needs none for a graph); edits and updates make the graph's
 * (or executable graph's) context current for the driver call. Errors, for
 * every function: CUS_ERROR_INVALID_ARGUMENT (NULL, no node; or, for the
 * calls on a graph or its nodes, the graph being captured into by
 * cus_capture_begin_to_graph, whose end must come first), the context's
 * poison, and the driver's status.
 */
#ifndef CUSCOPE_GRAPH_INSPECT_H
#define CUSCOPE_GRAPH_INSPECT_H

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "event.h"
#include "graph.h"
#include "graph_nodes.h"
#include "status.h"
#include "stream.h"

#ifdef __cplusplus
extern "C" {
#endif

/* --- inspection ------------------------------------------------------------------------- */

/* The node's type (cuGraphNodeGetType): CU_GRAPH_NODE_TYPE_KERNEL, _MEMCPY,
 * _MEMSET, _HOST, _GRAPH, _EMPTY, _EVENT_RECORD, _WAIT_EVENT, ... */
CUS_API cus_status cus_graph_node_type(cus_graph_node node, CUgraphNodeType *type);

/* The nodes node depends on (cuGraphNodeGetDependencies, 12.3), filled as
 * above. */
CUS_API cus_status cus_graph_node_dependencies(cus_graph_node node, cus_graph_node *deps,
                                               size_t *count);

/* The nodes that depend on node (cuGraphNodeGetDependentNodes, 12.3). */
CUS_API cus_status cus_graph_node_dependents(cus_graph_node node, cus_graph_node *dependents,
                                             size_t *count);

/* The graph's edges (cuGraphGetEdges, 12.3): to[i] depends on from[i].
 * from and to are both NULL (count only) or both given. */
CUS_API cus_status cus_graph_edges(cus_graph *graph, cus_graph_node *from, cus_graph_node *to,
                                   size_t *count);

/* Whether node is enabled in exec (cuGraphNodeGetEnabled): node is a node
 * of the graph exec replays (CUS_ERROR_INVALID_ARGUMENT otherwise, before
 * the driver); the driver answers only for kernel, copy and memset nodes
 * (CUDA_ERROR_INVALID_VALUE for the others). */
CUS_API cus_status cus_graph_node_enabled(cus_graph_exec *exec, cus_graph_node node,
                                          bool *enabled);

/* The flags exec was instantiated with (cuGraphExecGetFlags), less
 * CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD, which the driver does not report. */
CUS_API cus_status cus_graph_exec_flags(cus_graph_exec *exec, cuuint64_t *flags);

/* Writes a DOT description of graph to the file at path
 * (cuGraphDebugDotPrint): the topology, the node types and ids, kernel
 * names and copy directions by default; flags (CU_GRAPH_DEBUG_DOT_FLAGS_*,
 * e.g. _VERBOSE) add parameters and handles. The file is replaced. Errors:
 * also CUDA_ERROR_OPERATING_SYSTEM when the file cannot be written (the
 * driver's). Render it with Graphviz: dot -Tsvg path > graph.svg. */
CUS_API cus_status cus_graph_debug_dot(cus_graph *graph, const char *path, unsigned int flags);

/* --- edges with a kind (12.3) -------------------------------------------------------------- */

/* What an edge from -> to waits for of from (the driver's CUgraphEdgeData:
 * its type and from's port). */
typedef enum cus_edge_kind {
    /* The default: to runs after from has completed, with from's writes
     * visible to it. */
    CUS_EDGE_DEFAULT = 0,
    /* Programmatic dependent launch, between two kernel nodes
     * (CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC from
     * CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC): to may start once every block
     * of from has called cudaTriggerProgrammaticLaunchCompletion() or ended,
     * and must call cudaGridDependencySynchronize() before it reads what
     * from wrote. The graph's form of cus_launch_config's
     * programmatic_serialization (sm_90 and later). */
    CUS_EDGE_PROGRAMMATIC = 1,
    /* The same from CU_GRAPH_KERNEL_NODE_PORT_LAUNCH_ORDER: to may start once
     * every block of from has begun. */
    CUS_EDGE_LAUNCH_ORDER = 2,
} cus_edge_kind;

/* Adds the n edges from[i] -> to[i] of kinds[i] (cuGraphAddDependencies_v2,
 * 12.3); kinds NULL: all CUS_EDGE_DEFAULT, as cus_graph_add_dependencies.
 * Every node must be graph's and every kind a cus_edge_kind
 * (CUS_ERROR_INVALID_ARGUMENT, before the driver); a programmatic edge
 * whose nodes are not both kernel nodes, an edge that exists and a cycle are
 * the driver's CUDA_ERROR_INVALID_VALUE. Nothing is kept (an edge names no
 * object). The graph's context is made current for the call. */
CUS_API cus_status cus_graph_add_edges(cus_graph *graph, const cus_graph_node *from,
                                       const cus_graph_node *to, const cus_edge_kind *kinds,
                                       size_t n);

/* Removes the n edges from[i] -> to[i] of kinds[i]
 * (cuGraphRemoveDependencies_v2; kinds NULL: default ones): an edge of
 * another kind does not match, the driver's CUDA_ERROR_INVALID_VALUE. As
 * cus_graph_remove_dependencies otherwise. */
CUS_API cus_status cus_graph_remove_edges(cus_graph *graph, const cus_graph_node *from,
                                          const cus_graph_node *to, const cus_edge_kind *kinds,
                                          size_t n);

/* The nodes node depends on, with the kind of each edge
 * (cuGraphNodeGetDependencies_v2): cus_graph_node_dependencies with kinds[i]
 * the kind of the edge deps[i] -> node (the same capacity as deps; both
 * NULL for the count alone). An edge whose data is none of cus_edge_kind's
 * (a newer driver's) is CUS_ERROR_NOT_SUPPORTED, naming its fields; nothing
 * is written then. The _with_kinds lists below work the same way. */
CUS_API cus_status cus_graph_node_dependencies_with_kinds(cus_graph_node node,
                                                          cus_graph_node *deps,
                                                          cus_edge_kind *kinds, size_t *count);

/* The nodes that depend on node, with the kind of each one's edge from it
 * (cuGraphNodeGetDependentNodes_v2), as above. */
CUS_API cus_status cus_graph_node_dependents_with_kinds(cus_graph_node node,
                                                        cus_graph_node *dependents,
                                                        cus_edge_kind *kinds, size_t *count);

/* The graph's edges with their kinds (cuGraphGetEdges_v2): to[i] depends on
 * from[i] by an edge of kinds[i], as above. */
CUS_API cus_status cus_graph_edges_with_kinds(cus_graph *graph, cus_graph_node *from,
                                              cus_graph_node *to, cus_edge_kind *kinds,
                                              size_t *count);

/* --- editing ------------------------------------------------------------------------------ */

/* Removes the n edges from[i] -> to[i] (cuGraphRemoveDependencies, 12.3).
 * Every node must be graph's (CUS_ERROR_INVALID_ARGUMENT, before the
 * driver); an edge that does not exist is the driver's
 * CUDA_ERROR_INVALID_VALUE, as is a graph with memory allocation or free
 * nodes. Executable graphs made before are not changed. */
CUS_API cus_status cus_graph_remove_dependencies(cus_graph *graph, const cus_graph_node *from,
                                                 const cus_graph_node *to, size_t n);

/* Removes node from its graph (cuGraphDestroyNode), and every edge to or
 * from it; node (and copies of it) must not be used after. What the graph
 * kept alive for the node (its module, buffers, event, host function
 * record, child graph) stays kept until the graph dies: cuscope does not
 * know which other node uses the same objects, and an executable graph made
 * before still replays the node. The driver refuses a node of a graph with
 * memory allocation or free nodes (CUDA_ERROR_INVALID_VALUE). A conditional
 * node is refused (CUS_ERROR_NOT_SUPPORTED, after cuGraphNodeGetType): its
 * body graphs die with it, and the cus_graph of each body would dangle; so
 * is a child graph node whose own graph cus_graph_child_graph handed out. */
CUS_API cus_status cus_graph_destroy_node(cus_graph_node node);

/* A copy of graph (cuGraphClone): its nodes and edges, child graphs copied
 * recursively; later changes to either do not reach the other. *out
 * receives a new reference to a graph of graph's context, which holds a
 * reference to graph and so keeps alive everything graph keeps (graph's
 * driver graph lives as long as the clone, then). The driver refuses a
 * graph with memory allocation, memory free or conditional nodes
 * (CUDA_ERROR_INVALID_VALUE, or its status). Errors also:
 * CUS_ERROR_OUT_OF_HOST_MEMORY. */
CUS_API cus_status cus_graph_clone(cus_graph *graph, cus_graph **out);

/* The node of clone that stands for original, a node of the graph clone was
 * made from (cuGraphNodeFindInClone). *out is clone's. A node of another
 * graph, or added after the clone, is the driver's CUDA_ERROR_INVALID_VALUE. */
CUS_API cus_status cus_graph_node_in_clone(cus_graph *clone, cus_graph_node original,
                                           cus_graph_node *out);

/* --- changing a node of a graph -----------------------------------------------------------
 * The cus_graph_set_* functions change a node of a graph that is not
 * instantiated yet, or whose executable graphs are to keep the old
 * parameters: executable graphs made before are not changed (update them with
 * cus_graph_exec_set_* or cus_graph_exec_update). Each checks its arguments
 * as the matching add of cuscope/graph_nodes.h does (kernel arguments
 * against the kernel's layout, copies and fills bounds-checked,
 * CUS_ERROR_OUT_OF_RANGE; a buffer, function or event of another context
 * than the graph's is CUS_ERROR_CONTEXT_MISMATCH), makes the graph's context
 * current for the driver call, and refuses a graph being captured into
 * (CUS_ERROR_INVALID_ARGUMENT). A node of another type is the driver's
 * CUDA_ERROR_INVALID_VALUE. The graph keeps alive what the new parameters
 * name (room made before the driver call, kept on its success); what the
 * node used before stays kept until the graph dies (conservative, as for
 * cus_graph_destroy_node: another node, or an executable graph made before,
 * may still use it). Errors also: CUS_ERROR_OUT_OF_HOST_MEMORY. */

#ifndef __cplusplus
/* Sets a kernel node's kernel, launch shape and arguments
 * (cuGraphKernelNodeSetParams), as cus_graph_add_kernel adds one:
 * cus_graph_set_kernel(node, fn, grid, block, shared_bytes, args...). fn is
 * a cus_function * or a cus_kernel * (run in the graph's context); the
 * graph keeps its module (or library) and the cus_buffer * and
 * cus_texture * arguments. Returns the cus_status. C only (C++: the _node
 * functions). */
#define cus_graph_set_kernel(node, fn, grid, block, ...)                       \
    _Generic((fn), cus_kernel *: cus_graph_set_library_kernel_site_,           \
             default: cus_graph_set_kernel_site_)((node), (fn), CUS_DIM_(grid), CUS_DIM_(block), \
                                                  CUS_GRAPH_PACK_(__VA_ARGS__))
#endif

/* The same without the macro: args[i] points at argument i, sizes[i] is its
 * size (NULL: unchecked); buffers named by arguments are not kept. */
CUS_API cus_status cus_graph_set_kernel_node(cus_graph_node node, cus_function *fn, cus_dim3 grid,
                                             cus_dim3 block, unsigned int shared_bytes,
                                             unsigned int nargs, void **args,
                                             const size_t *sizes);

/* The same for a library kernel; the graph keeps k's library. */
CUS_API cus_status cus_graph_set_library_kernel_node(cus_graph_node node, cus_kernel *k,
                                                     cus_dim3 grid, cus_dim3 block,
                                                     unsigned int shared_bytes,
                                                     unsigned int nargs, void **args,
                                                     const size_t *sizes);

/* The event an event record or event wait node records or waits for
 * (cuGraphEventRecordNodeGetEvent, cuGraphEventWaitNodeGetEvent): *out
 * receives a new reference to the cus_event the node's graph keeps for it
 * (the one the node was added or last set with; a clone's node finds its
 * original's). A node of another type is
 * the driver's CUDA_ERROR_INVALID_VALUE; an event no graph keeps (a node the
 * raw driver made or changed) is CUDA_ERROR_NOT_FOUND. No context is made
 * current. Errors also: CUS_ERROR_INVALID_ARGUMENT (no node, out NULL, the
 * graph being captured into), the context's poison, and
 * CUS_ERROR_OUT_OF_HOST_MEMORY when it looks through kept graphs. */
CUS_API cus_status cus_graph_event_node_event(cus_graph_node node, cus_event **out);

/* A child graph node's own graph (cuGraphChildGraphNodeGetGraph): not a
 * copy but the graph the node runs, so nodes added to it or changed in it
 * change the node (executable graphs made before keep what they had). *out
 * receives a new reference to a body graph, as a conditional node's bodies
 * are (cuscope/graph_conditional.h): the driver's graph belongs to the
 * node; the cus_graph holds a reference to node's graph; what its nodes
 * use is kept alive by the outermost graph; it is not instantiated on its
 * own (CUS_ERROR_INVALID_ARGUMENT); the driver takes no memory allocation
 * or free node in it. Each call returns a new cus_graph for the same driver
 * graph. From then on the node is not destroyed (cus_graph_destroy_node:
 * CUS_ERROR_NOT_SUPPORTED). A node of another type is the driver's
 * CUDA_ERROR_INVALID_VALUE. No context is made current. Errors also:
 * CUS_ERROR_INVALID_ARGUMENT (no node, out NULL, the graph being captured
 * into), the context's poison, CUS_ERROR_OUT_OF_HOST_MEMORY. */
CUS_API cus_status cus_graph_child_graph(cus_graph_node node, cus_graph **out);

/* The function a host function node calls, and its user data
 * (cuGraphHostNodeGetParams): *fn and, when user_data is not NULL,
 * *user_data receive what the node was added or last set with
 * (cus_graph_add_host_fn, cus_graph_set_host_fn, or a captured
 * cus_stream_launch_host_fn; for a node the raw driver made or changed, its
 * raw function and user data). An executable graph's update
 * (cus_graph_exec_set_host_fn) does not change the graph's node. A node of
 * another type is the driver's CUDA_ERROR_INVALID_VALUE. No context is made
 * current. Errors also: CUS_ERROR_INVALID_ARGUMENT (no node, fn NULL, the
 * graph being captured into), the context's poison. */
CUS_API cus_status cus_graph_host_node_fn(cus_graph_node node, cus_host_fn *fn, void **user_data);

/* The event an event record node records (cuGraphEventRecordNodeSetEvent);
 * event is kept alive. */
CUS_API cus_status cus_graph_set_event_record(cus_graph_node node, cus_event *event);

/* The event an event wait node waits for (cuGraphEventWaitNodeSetEvent). */
CUS_API cus_status cus_graph_set_event_wait(cus_graph_node node, cus_event *event);

/* The function of a host function node (cuGraphHostNodeSetParams): fn (not
 * NULL) with user_data, with the rules of cus_graph_add_host_fn; the new
 * record is the graph's. */
CUS_API cus_status cus_graph_set_host_fn(cus_graph_node node, cus_host_fn fn, void *user_data);

/* A memset node's fill (cuGraphMemsetNodeSetParams): count 4-byte elements
 * of value at offset of buf (offset aligned to 4), as cus_graph_add_fill_u32
 * checks it; the driver refuses other kinds of memory than the node's. */
CUS_API cus_status cus_graph_set_fill_u32(cus_graph_node node, cus_buffer *buf, size_t offset,
                                          uint32_t value, size_t count);

/* A copy node's copy (cuGraphMemcpyNodeSetParams, 1-D): bytes from host
 * memory src into dst at dst_offset, as cus_graph_add_copy_to_device checks
 * it; src must stay valid while the graph may replay. */
CUS_API cus_status cus_graph_set_copy_to_device(cus_graph_node node, cus_buffer *dst,
                                                size_t dst_offset, const void *src, size_t bytes);

/* The same from src at src_offset into host memory dst. */
CUS_API cus_status cus_graph_set_copy_to_host(cus_graph_node node, void *dst, cus_buffer *src,
                                              size_t src_offset, size_t bytes);

/* The macro's entry points. Not for direct use. */
CUS_API cus_status cus_graph_set_kernel_site_(cus_graph_node node, cus_function *fn,
                                              cus_dim3 grid, cus_dim3 block,
                                              unsigned int shared_bytes, unsigned int nargs,
                                              void **args, const size_t *sizes);
/* The library kernel's. Not for direct use. */
CUS_API cus_status cus_graph_set_library_kernel_site_(cus_graph_node node, cus_kernel *k,
                                                      cus_dim3 grid, cus_dim3 block,
                                                      unsigned int shared_bytes,
                                                      unsigned int nargs, void **args,
                                                      const size_t *sizes);

/* --- per-node updates of executable graphs ---------------------------------------------------
 * As cuscope/graph_nodes.h's cus_graph_exec_set_* functions: node is a node
 * of the graph exec replays (CUS_ERROR_INVALID_ARGUMENT otherwise, before
 * the driver), of the right type (the driver's CUDA_ERROR_INVALID_VALUE
 * otherwise); the new objects are kept alive by exec, and what an earlier
 * update made the node use is released as soon as no replay queued before
 * can use it (fenced on the streams exec was launched on). What the node was
 * built with stays with its graph. Only later launches see the change. */

/* The event an event record node records (cuGraphExecEventRecordNodeSetEvent).
 * event must be of exec's context (CUS_ERROR_CONTEXT_MISMATCH). */
CUS_API cus_status cus_graph_exec_set_event_record(cus_graph_exec *exec, cus_graph_node node,
                                                   cus_event *event);

/* The event an event wait node waits for (cuGraphExecEventWaitNodeSetEvent). */
CUS_API cus_status cus_graph_exec_set_event_wait(cus_graph_exec *exec, cus_graph_node node,
                                                 cus_event *event);

/* The function of a host function node (cuGraphExecHostNodeSetParams): fn
 * (not NULL) with user_data, with the rules of cus_graph_add_host_fn. Its
 * record is exec's, freed as the objects of an update are. */
CUS_API cus_status cus_graph_exec_set_host_fn(cus_graph_exec *exec, cus_graph_node node,
                                              cus_host_fn fn, void *user_data);

/* The parameters of a child graph node's nodes, from child
 * (cuGraphExecChildGraphNodeSetParams): child must have the topology of the
 * node's graph, its nodes added in the same order (the driver's
 * CUDA_ERROR_INVALID_VALUE otherwise), the rules of cuGraphExecUpdate apply
 * to each node. exec keeps child (and what it keeps); child must be of
 * exec's context (CUS_ERROR_CONTEXT_MISMATCH). */
CUS_API cus_status cus_graph_exec_set_child(cus_graph_exec *exec, cus_graph_node node,
                                            cus_graph *child);

/* --- instantiation with parameters -------------------------------------------------------- */

/* Instantiates graph as cus_graph_instantiate does, with
 * cuGraphInstantiateWithParams: flags (CUDA_GRAPH_INSTANTIATE_FLAG_*), and
 * with CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD an upload of the graph into
 * upload (a stream of graph's context, CUS_ERROR_CONTEXT_MISMATCH; NULL: the
 * legacy default stream; ignored without the flag). On failure the message
 * names the driver's CUgraphInstantiateResult and the offending node, and
 * *result (may be NULL) receives the result (CUDA_GRAPH_INSTANTIATE_SUCCESS
 * on success); written only when the driver answered. */
CUS_API cus_status cus_graph_instantiate_with_params(cus_graph *graph, unsigned long long flags,
                                                     cus_stream *upload,
                                                     CUgraphInstantiateResult *result,
                                                     cus_graph_exec **out);

#ifdef __cplusplus
}
#endif

#endif
