/* cuscope/graph_nodes.h: graphs built by hand, node by node, and the
 * per-node updates of executable graphs.
 *
 *   cus_autoptr(cus_graph) g = NULL;
 *   CUS_TRY(cus_graph_create(ctx, &g));
 *   cus_graph_node up, run, down;
 *   CUS_TRY(cus_graph_add_copy_to_device(g, NULL, 0, &up, x, 0, host_x, bytes));
 *   CUS_TRY(cus_graph_add_kernel(g, &up, 1, &run, saxpy, grid, 256, 0, 2.0f, x, y, n));
 *   CUS_TRY(cus_graph_add_copy_to_host(g, &run, 1, &down, host_y, y, 0, bytes));
 *
 * A graph made here is a cus_graph like a captured one (cuscope/graph.h):
 * it holds its context, is instantiated, launched and updated the same way,
 * and keeps alive what its nodes use: the module (or library) of a kernel
 * node, the buffers its arguments name (cus_buffer * and cus_texture *
 * arguments of the cus_graph_add_kernel macro) and those of copy and fill
 * nodes, the events of event nodes, the record of a host function node, and
 * a child graph. Raw CUdeviceptr values and host pointers are not kept (keep
 * host memory alive yourself, as for any async copy). A captured graph may
 * be extended here, and a hand-built one is a valid child.
 *
 * Every add function has the same first four parameters: the graph, the
 * nodes the new one depends on (deps, ndeps; NULL and 0 for a root), and
 * where to write the new node (NULL when it is not needed); its own
 * parameters follow, so that the kernel macro can end with the kernel's
 * arguments. A dependency must be a node of the same graph
 * (CUS_ERROR_INVALID_ARGUMENT before the driver is called). Kernel arguments
 * are checked against the kernel's parameter layout exactly as cus_launch
 * checks them (cuscope/launch.h); copies and fills are bounds-checked as
 * cuscope/memory.h's are (CUS_ERROR_OUT_OF_RANGE); a buffer, function or
 * event of another context than the graph's is CUS_ERROR_CONTEXT_MISMATCH.
 * The driver call is made with the graph's context current.
 *
 * An executable graph's nodes are updated one by one with the
 * cus_graph_exec_set_* functions (same checks, same keep rule): the objects
 * the new parameters name are kept alive, and what an earlier update made
 * the node use is released as soon as no replay can use it, as
 * cus_graph_exec_update releases a replaced graph (fences on the streams it
 * was launched on). Updating a node to the objects it already uses costs
 * nothing beyond the driver call.
 *
 * Every function is thread-safe (calls on one graph, or one executable graph,
 * are serialized by its lock), returns a cus_status, records the thread's
 * last error on failure, leaves out parameters untouched then, and must not
 * be called from a host function. A failure adds nothing and keeps nothing.
 */
#ifndef CUSCOPE_GRAPH_NODES_H
#define CUSCOPE_GRAPH_NODES_H

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "array.h"
#include "context.h"
#include "event.h"
#include "function.h"
#include "graph.h"
#include "launch.h"
#include "library.h"
#include "memory.h"
#include "object.h"
#include "status.h"
#include "stream.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A node of a graph: a value, borrowed from its graph (valid while the graph
 * lives; no reference of its own). Zero-initialised, it is no node. */
typedef struct cus_graph_node {
    CUgraphNode handle;     /* the driver's node */
    const cus_graph *graph; /* the graph it belongs to */
} cus_graph_node;

/* --- graphs ------------------------------------------------------------------ */

/* Makes an empty graph of ctx (cuGraphCreate); *out receives a new
 * reference, which holds ctx. Errors: CUS_ERROR_INVALID_ARGUMENT (NULL), the
 * context's poison, the driver's status, CUS_ERROR_OUT_OF_HOST_MEMORY. */
CUS_API cus_status cus_graph_create(cus_context *ctx, cus_graph **out);

/* The graph's nodes (cuGraphGetNodes), in an order in which each comes after
 * its dependencies on the fake (the driver's order is its own). *count is
 * the capacity of nodes on entry; on return the number written (the graph's
 * node count when that is smaller than the capacity; the entries past it,
 * up to the capacity, are set to {NULL, NULL}, as the driver sets its
 * handles). With nodes NULL,
 * *count receives the node count. Depending on every node of a captured
 * graph runs a new node after all of its work. No current context needed;
 * errors: CUS_ERROR_INVALID_ARGUMENT, the context's poison, the driver's
 * status, CUS_ERROR_OUT_OF_HOST_MEMORY. */
CUS_API cus_status cus_graph_nodes(cus_graph *graph, cus_graph_node *nodes, size_t *count);

/* The same for the root nodes, those without dependencies
 * (cuGraphGetRootNodes). */
CUS_API cus_status cus_graph_root_nodes(cus_graph *graph, cus_graph_node *nodes, size_t *count);

/* Adds the n edges from[i] -> to[i] (cuGraphAddDependencies): to[i] runs
 * after from[i]. Every node must be graph's (CUS_ERROR_INVALID_ARGUMENT);
 * the driver refuses a cycle or an edge that exists. */
CUS_API cus_status cus_graph_add_dependencies(cus_graph *graph, const cus_graph_node *from,
                                              const cus_graph_node *to, size_t n);

/* --- nodes --------------------------------------------------------------------- */

/* A kernel node (cuGraphAddKernelNode) launching fn with grid, block and
 * shared_bytes; args[i] points at argument i and sizes[i] is its size (NULL:
 * unchecked), checked against fn's layout as cus_function_launch checks
 * them. The graph keeps fn's module; it keeps buffers named by arguments
 * only through the cus_graph_add_kernel macro. fn must be of the graph's
 * context (CUS_ERROR_CONTEXT_MISMATCH). */
CUS_API cus_status cus_graph_add_kernel_node(cus_graph *graph, const cus_graph_node *deps,
                                             size_t ndeps, cus_graph_node *out, cus_function *fn,
                                             cus_dim3 grid, cus_dim3 block,
                                             unsigned int shared_bytes, unsigned int nargs,
                                             void **args, const size_t *sizes);

/* The same for a library kernel (cuscope/library.h), run in the graph's
 * context; the graph keeps its library. */
CUS_API cus_status cus_graph_add_library_kernel_node(cus_graph *graph, const cus_graph_node *deps,
                                                     size_t ndeps, cus_graph_node *out,
                                                     cus_kernel *k, cus_dim3 grid,
                                                     cus_dim3 block, unsigned int shared_bytes,
                                                     unsigned int nargs, void **args,
                                                     const size_t *sizes);

/* cus_graph_add_kernel_node with a launch configuration (see
 * cus_graph_add_kernel_ex): args and sizes as there. Errors: those of
 * cus_graph_add_kernel_node, CUS_ERROR_INVALID_ARGUMENT for a NULL config,
 * a stream or a programmatic field in it, or an attribute out of its range
 * (naming it), CUS_ERROR_CONTEXT_MISMATCH for a window buffer of another
 * context, CUS_ERROR_NOT_SUPPORTED for preferred_cluster with headers older
 * than 12.8, and the driver's status for cuGraphKernelNodeSetAttribute. */
CUS_API cus_status cus_graph_add_kernel_node_ex(cus_graph *graph, const cus_graph_node *deps,
                                                size_t ndeps, cus_graph_node *out,
                                                cus_function *fn, const cus_launch_config *config,
                                                unsigned int nargs, void **args,
                                                const size_t *sizes);

/* The same for a library kernel, run in the graph's context. */
CUS_API cus_status cus_graph_add_library_kernel_node_ex(cus_graph *graph,
                                                        const cus_graph_node *deps, size_t ndeps,
                                                        cus_graph_node *out, cus_kernel *k,
                                                        const cus_launch_config *config,
                                                        unsigned int nargs, void **args,
                                                        const size_t *sizes);

/* One attribute of a kernel node (cuGraphKernelNodeGetAttribute), as the
 * driver holds it: what cus_graph_add_kernel_ex (or a captured
 * cus_launch_ex) set, its default otherwise. id is one of the attributes a
 * kernel node takes (cuda.h: "valid for graph nodes"); a node of another
 * type, or another id, is the driver's CUDA_ERROR_INVALID_VALUE. The value
 * is the driver's union: a window's base_ptr is an address, not a buffer.
 * No context is made current (the H200 needs none). Errors:
 * CUS_ERROR_INVALID_ARGUMENT (no
 * node, value NULL, the graph being captured into), the context's poison,
 * the driver's status. */
CUS_API cus_status cus_graph_kernel_node_attribute(cus_graph_node node, CUlaunchAttributeID id,
                                                   CUlaunchAttributeValue *value);

/* Gives kernel node dst the attributes of kernel node src
 * (cuGraphKernelNodeCopyAttributes), both of one graph (or of one graph's
 * conditional bodies): what src's attributes name is kept by that graph
 * already; nodes of two graphs are CUS_ERROR_INVALID_ARGUMENT (dst's graph
 * would not keep src's window buffer). The driver checks dst's shape
 * against the attributes (a cluster that does not divide its grid). Errors:
 * as cus_graph_kernel_node_attribute's. */
CUS_API cus_status cus_graph_copy_kernel_attributes(cus_graph_node dst, cus_graph_node src);

#ifndef __cplusplus
/* Adds a kernel node, as cus_launch launches: cus_graph_add_kernel(graph,
 * deps, ndeps, out, fn, grid, block, shared_bytes, args...). fn is a
 * cus_function * or a cus_kernel *; each argument is packed as cus_launch
 * packs it (a cus_buffer * becomes its address, a cus_texture * its handle,
 * and both are kept alive by the graph) and checked against the kernel's
 * layout. Returns the cus_status. C only (C++: the _node functions). */
#define cus_graph_add_kernel(graph, deps, ndeps, out, fn, grid, block, ...)    \
    _Generic((fn), cus_kernel *: cus_graph_add_library_kernel_site_,          \
             default: cus_graph_add_kernel_site_)((graph), (deps), (ndeps), (out), (fn), \
                                                  CUS_DIM_(grid), CUS_DIM_(block), \
                                                  CUS_GRAPH_PACK_(__VA_ARGS__))

/* Adds a kernel node with a launch configuration, as cus_launch_ex launches:
 * cus_graph_add_kernel_ex(graph, deps, ndeps, out, fn, &config, args...).
 * config (cuscope/launch.h) gives the grid, block and dynamic shared bytes,
 * and the attributes a kernel node takes, set on the node
 * (cuGraphKernelNodeSetAttribute) and kept by its instantiations and
 * replays: cluster, cooperative, priority, cluster_policy,
 * preferred_cluster, access_policy (its buffer kept alive by the graph),
 * mem_sync_domain and mem_sync_domain_map, each checked as cus_launch_ex
 * checks it. config.stream must be NULL (a node runs on the stream its graph
 * is launched on), and the programmatic fields unset: programmatic
 * dependent launch is a launch attribute, not a node's (capture the pair of
 * launches with cus_launch_ex instead); both CUS_ERROR_INVALID_ARGUMENT,
 * before the driver. If the driver refuses an attribute, the node is
 * removed again and the message names the attribute. Returns the
 * cus_status. C only (C++: the _node_ex functions). */
#define cus_graph_add_kernel_ex(graph, deps, ndeps, out, fn, ...)              \
    _Generic((fn), cus_kernel *: cus_graph_add_library_kernel_ex_site_,       \
             default: cus_graph_add_kernel_ex_site_)((graph), (deps), (ndeps), (out), (fn), \
                                                     CUS_GRAPH_PACK_(__VA_ARGS__))

/* Updates a kernel node of an executable graph, as cus_graph_add_kernel adds
 * one: cus_graph_exec_set_kernel(exec, node, fn, grid, block, shared_bytes,
 * args...). Returns the cus_status. C only. */
#define cus_graph_exec_set_kernel(exec, node, fn, grid, block, ...)            \
    _Generic((fn), cus_kernel *: cus_graph_exec_set_library_kernel_site_,      \
             default: cus_graph_exec_set_kernel_site_)((exec), (node), (fn), CUS_DIM_(grid), \
                                                       CUS_DIM_(block),         \
                                                       CUS_GRAPH_PACK_(__VA_ARGS__))
#endif

/* A copy node of bytes from host memory src into dst at dst_offset
 * (cuGraphAddMemcpyNode, 1-D). src must stay valid while the graph may
 * replay; dst is kept alive. */
CUS_API cus_status cus_graph_add_copy_to_device(cus_graph *graph, const cus_graph_node *deps,
                                                size_t ndeps, cus_graph_node *out,
                                                cus_buffer *dst, size_t dst_offset,
                                                const void *src, size_t bytes);

/* A copy node of bytes from src at src_offset into host memory dst. */
CUS_API cus_status cus_graph_add_copy_to_host(cus_graph *graph, const cus_graph_node *deps,
                                              size_t ndeps, cus_graph_node *out, void *dst,
                                              cus_buffer *src, size_t src_offset, size_t bytes);

/* A copy node between two buffers of the graph's context. */
CUS_API cus_status cus_graph_add_copy_device(cus_graph *graph, const cus_graph_node *deps,
                                             size_t ndeps, cus_graph_node *out, cus_buffer *dst,
                                             size_t dst_offset, cus_buffer *src,
                                             size_t src_offset, size_t bytes);

/* A 2D copy node (cuGraphAddMemcpyNode) of the region desc describes,
 * between host memory, buffers and arrays (cuscope/array.h), checked as
 * cus_copy_2d checks it (CUS_ERROR_OUT_OF_RANGE for a region that leaves a
 * buffer or an array, CUS_ERROR_INVALID_ARGUMENT for a row wider than its
 * pitch, an endpoint without its object, or a copy between host memory only)
 * and refused when its extent is zero (CUS_ERROR_INVALID_ARGUMENT). The
 * buffers and arrays must be of the graph's context
 * (CUS_ERROR_CONTEXT_MISMATCH) and are kept alive; host memory must stay
 * valid while the graph may replay. */
CUS_API cus_status cus_graph_add_copy_2d(cus_graph *graph, const cus_graph_node *deps,
                                         size_t ndeps, cus_graph_node *out,
                                         const cus_copy_2d_desc *desc);

/* The same for a 3D region (cus_copy_3d's checks; a 3D region's rows must
 * stay inside a slice of a buffer or host endpoint). */
CUS_API cus_status cus_graph_add_copy_3d(cus_graph *graph, const cus_graph_node *deps,
                                         size_t ndeps, cus_graph_node *out,
                                         const cus_copy_3d_desc *desc);

/* A memset node (cuGraphAddMemsetNode) writing count bytes of value at
 * offset of buf. */
CUS_API cus_status cus_graph_add_fill_u8(cus_graph *graph, const cus_graph_node *deps,
                                         size_t ndeps, cus_graph_node *out, cus_buffer *buf,
                                         size_t offset, uint8_t value, size_t count);

/* The same with count 2-byte elements (offset aligned to 2). */
CUS_API cus_status cus_graph_add_fill_u16(cus_graph *graph, const cus_graph_node *deps,
                                          size_t ndeps, cus_graph_node *out, cus_buffer *buf,
                                          size_t offset, uint16_t value, size_t count);

/* The same with count 4-byte elements (offset aligned to 4). */
CUS_API cus_status cus_graph_add_fill_u32(cus_graph *graph, const cus_graph_node *deps,
                                          size_t ndeps, cus_graph_node *out, cus_buffer *buf,
                                          size_t offset, uint32_t value, size_t count);

/* A host function node (cuGraphAddHostNode): fn(user_data) at each replay,
 * on a driver thread, with the rules of cus_stream_launch_host_fn. The
 * record is freed with the graph (or kept for the process when a replay
 * could not be waited for). */
CUS_API cus_status cus_graph_add_host_fn(cus_graph *graph, const cus_graph_node *deps,
                                         size_t ndeps, cus_graph_node *out, cus_host_fn fn,
                                         void *user_data);

/* An event record node (cuGraphAddEventRecordNode); event is kept alive. */
CUS_API cus_status cus_graph_add_event_record(cus_graph *graph, const cus_graph_node *deps,
                                              size_t ndeps, cus_graph_node *out,
                                              cus_event *event);

/* An event wait node (cuGraphAddEventWaitNode): the replay waits for the
 * event's latest record. event is kept alive. */
CUS_API cus_status cus_graph_add_event_wait(cus_graph *graph, const cus_graph_node *deps,
                                            size_t ndeps, cus_graph_node *out, cus_event *event);

/* An empty node (cuGraphAddEmptyNode): a join point. */
CUS_API cus_status cus_graph_add_empty(cus_graph *graph, const cus_graph_node *deps,
                                       size_t ndeps, cus_graph_node *out);

/* A child graph node (cuGraphAddChildGraphNode): the driver copies child's
 * nodes now (later changes to child do not reach the node); graph keeps a
 * reference to child, and so what child keeps. child must not be graph. */
CUS_API cus_status cus_graph_add_child(cus_graph *graph, const cus_graph_node *deps,
                                       size_t ndeps, cus_graph_node *out, cus_graph *child);

/* --- per-node updates of executable graphs --------------------------------------- */

/* Sets a kernel node's parameters in exec (cuGraphExecKernelNodeSetParams):
 * node is a node of the graph exec was instantiated from (or updated to);
 * fn must be of the same context (the driver's rule), the arguments are
 * checked as cus_graph_add_kernel_node checks them, and fn's module is kept.
 * Affects the launches after it, not those queued. */
CUS_API cus_status cus_graph_exec_set_kernel_node(cus_graph_exec *exec, cus_graph_node node,
                                                  cus_function *fn, cus_dim3 grid,
                                                  cus_dim3 block, unsigned int shared_bytes,
                                                  unsigned int nargs, void **args,
                                                  const size_t *sizes);

/* The same for a library kernel node; k's library is kept. */
CUS_API cus_status cus_graph_exec_set_library_kernel_node(cus_graph_exec *exec,
                                                          cus_graph_node node, cus_kernel *k,
                                                          cus_dim3 grid, cus_dim3 block,
                                                          unsigned int shared_bytes,
                                                          unsigned int nargs, void **args,
                                                          const size_t *sizes);

/* Sets a copy node made by cus_graph_add_copy_to_device to copy from src
 * into dst (cuGraphExecMemcpyNodeSetParams): the same kinds of memory. */
CUS_API cus_status cus_graph_exec_set_copy_to_device(cus_graph_exec *exec, cus_graph_node node,
                                                     cus_buffer *dst, size_t dst_offset,
                                                     const void *src, size_t bytes);

/* Sets a copy node made by cus_graph_add_copy_to_host. */
CUS_API cus_status cus_graph_exec_set_copy_to_host(cus_graph_exec *exec, cus_graph_node node,
                                                   void *dst, cus_buffer *src, size_t src_offset,
                                                   size_t bytes);

/* Sets a copy node made by cus_graph_add_copy_2d to copy the region desc
 * describes (cuGraphExecMemcpyNodeSetParams), with cus_graph_add_copy_2d's
 * checks; the driver refuses other kinds of memory than the node's, and the
 * buffers and arrays of desc are kept. The driver updates 1-dimensional
 * copies only: the node's region and desc's are one row of one slice,
 * without arrays. desc with rows, slices or an array is
 * CUS_ERROR_NOT_SUPPORTED (no driver call); a node made with them is
 * refused by the driver (CUDA_ERROR_INVALID_VALUE): update such a node with
 * cus_graph_exec_update. */
CUS_API cus_status cus_graph_exec_set_copy_2d(cus_graph_exec *exec, cus_graph_node node,
                                              const cus_copy_2d_desc *desc);

/* The same for a node made by cus_graph_add_copy_3d. */
CUS_API cus_status cus_graph_exec_set_copy_3d(cus_graph_exec *exec, cus_graph_node node,
                                              const cus_copy_3d_desc *desc);

/* Sets a memset node made by cus_graph_add_fill_u32
 * (cuGraphExecMemsetNodeSetParams). */
CUS_API cus_status cus_graph_exec_set_fill_u32(cus_graph_exec *exec, cus_graph_node node,
                                               cus_buffer *buf, size_t offset, uint32_t value,
                                               size_t count);

/* Enables or disables a kernel, copy or memset node of exec
 * (cuGraphNodeSetEnabled): a disabled node does nothing at later launches
 * (its dependencies still order the rest). */
CUS_API cus_status cus_graph_exec_set_node_enabled(cus_graph_exec *exec, cus_graph_node node,
                                                   bool enabled);

/* --- the machinery behind the macros ---------------------------------------------- */

/* The macros' entry points: the _node functions, errors named after the
 * macro. Not for direct use. */
CUS_API cus_status cus_graph_add_kernel_site_(cus_graph *graph, const cus_graph_node *deps,
                                              size_t ndeps, cus_graph_node *out, cus_function *fn,
                                              cus_dim3 grid, cus_dim3 block,
                                              unsigned int shared_bytes, unsigned int nargs,
                                              void **args, const size_t *sizes);
/* The library kernel's. Not for direct use. */
CUS_API cus_status cus_graph_add_library_kernel_site_(cus_graph *graph,
                                                      const cus_graph_node *deps, size_t ndeps,
                                                      cus_graph_node *out, cus_kernel *k,
                                                      cus_dim3 grid, cus_dim3 block,
                                                      unsigned int shared_bytes,
                                                      unsigned int nargs, void **args,
                                                      const size_t *sizes);
/* The cus_graph_add_kernel_ex macro's entry points. Not for direct use. */
CUS_API cus_status cus_graph_add_kernel_ex_site_(cus_graph *graph, const cus_graph_node *deps,
                                                 size_t ndeps, cus_graph_node *out,
                                                 cus_function *fn, const cus_launch_config *config,
                                                 unsigned int nargs, void **args,
                                                 const size_t *sizes);
CUS_API cus_status cus_graph_add_library_kernel_ex_site_(cus_graph *graph,
                                                         const cus_graph_node *deps, size_t ndeps,
                                                         cus_graph_node *out, cus_kernel *k,
                                                         const cus_launch_config *config,
                                                         unsigned int nargs, void **args,
                                                         const size_t *sizes);
/* The update macro's. Not for direct use. */
CUS_API cus_status cus_graph_exec_set_kernel_site_(cus_graph_exec *exec, cus_graph_node node,
                                                   cus_function *fn, cus_dim3 grid,
                                                   cus_dim3 block, unsigned int shared_bytes,
                                                   unsigned int nargs, void **args,
                                                   const size_t *sizes);
/* The update macro's, for a library kernel. Not for direct use. */
CUS_API cus_status cus_graph_exec_set_library_kernel_site_(cus_graph_exec *exec,
                                                           cus_graph_node node, cus_kernel *k,
                                                           cus_dim3 grid, cus_dim3 block,
                                                           unsigned int shared_bytes,
                                                           unsigned int nargs, void **args,
                                                           const size_t *sizes);

/* A cus_buffer * argument of the macros: its address, and a note (on the
 * calling thread) for the node to keep it. Not for direct use. */
CUS_API CUdeviceptr cus_graph_buffer_arg_(const cus_buffer *buf);
/* The same for a cus_texture *: its CUtexObject. Not for direct use. */
CUS_API CUtexObject cus_graph_texture_arg_(const cus_texture *tex);

/* cus_launch's packing (launch.h), with the notes above. */
#define CUS_GRAPH_ARG_VALUE_(a)                                                \
    _Generic((a), cus_buffer *: cus_graph_buffer_arg_(CUS_AS_BUFFER_(a)),      \
             const cus_buffer *: cus_graph_buffer_arg_(CUS_AS_BUFFER_(a)),     \
             cus_texture *: cus_graph_texture_arg_(CUS_AS_TEXTURE_(a)),        \
             const cus_texture *: cus_graph_texture_arg_(CUS_AS_TEXTURE_(a)), default: (a))
#define CUS_GRAPH_ARG_PTR_(a)                                                  \
    ((void *)(__typeof__(CUS_GRAPH_ARG_VALUE_(a))[1]){CUS_GRAPH_ARG_VALUE_(a)})
#define CUS_GRAPH_ARG_SIZE_(a) sizeof(CUS_GRAPH_ARG_VALUE_(a))
#define CUS_GRAPH_ARRAYS_(n, ...)                                              \
    (void *[]){CUS_CAT_(CUS_MAP_, n, _)(CUS_GRAPH_ARG_PTR_, __VA_ARGS__)}, __extension__({ \
        static const size_t cus_sizes_[] = {CUS_CAT_(CUS_MAP_, n, _)(CUS_GRAPH_ARG_SIZE_, __VA_ARGS__)}; \
        cus_sizes_;                                                            \
    })
#define CUS_GRAPH_PACK_(...) CUS_CAT_(CUS_GRAPH_PACK_, CUS_NARGS_(__VA_ARGS__), _)(__VA_ARGS__)
/* Generated: up to 63 kernel arguments. */
/* clang-format off */
#define CUS_GRAPH_PACK_1_(h) (h), 0u, (void **)0, cus_launch_no_args_
#define CUS_GRAPH_PACK_2_(h, ...) (h), 1u, CUS_GRAPH_ARRAYS_(1, __VA_ARGS__)
#define CUS_GRAPH_PACK_3_(h, ...) (h), 2u, CUS_GRAPH_ARRAYS_(2, __VA_ARGS__)
#define CUS_GRAPH_PACK_4_(h, ...) (h), 3u, CUS_GRAPH_ARRAYS_(3, __VA_ARGS__)
#define CUS_GRAPH_PACK_5_(h, ...) (h), 4u, CUS_GRAPH_ARRAYS_(4, __VA_ARGS__)
#define CUS_GRAPH_PACK_6_(h, ...) (h), 5u, CUS_GRAPH_ARRAYS_(5, __VA_ARGS__)
#define CUS_GRAPH_PACK_7_(h, ...) (h), 6u, CUS_GRAPH_ARRAYS_(6, __VA_ARGS__)
#define CUS_GRAPH_PACK_8_(h, ...) (h), 7u, CUS_GRAPH_ARRAYS_(7, __VA_ARGS__)
#define CUS_GRAPH_PACK_9_(h, ...) (h), 8u, CUS_GRAPH_ARRAYS_(8, __VA_ARGS__)
#define CUS_GRAPH_PACK_10_(h, ...) (h), 9u, CUS_GRAPH_ARRAYS_(9, __VA_ARGS__)
#define CUS_GRAPH_PACK_11_(h, ...) (h), 10u, CUS_GRAPH_ARRAYS_(10, __VA_ARGS__)
#define CUS_GRAPH_PACK_12_(h, ...) (h), 11u, CUS_GRAPH_ARRAYS_(11, __VA_ARGS__)
#define CUS_GRAPH_PACK_13_(h, ...) (h), 12u, CUS_GRAPH_ARRAYS_(12, __VA_ARGS__)
#define CUS_GRAPH_PACK_14_(h, ...) (h), 13u, CUS_GRAPH_ARRAYS_(13, __VA_ARGS__)
#define CUS_GRAPH_PACK_15_(h, ...) (h), 14u, CUS_GRAPH_ARRAYS_(14, __VA_ARGS__)
#define CUS_GRAPH_PACK_16_(h, ...) (h), 15u, CUS_GRAPH_ARRAYS_(15, __VA_ARGS__)
#define CUS_GRAPH_PACK_17_(h, ...) (h), 16u, CUS_GRAPH_ARRAYS_(16, __VA_ARGS__)
#define CUS_GRAPH_PACK_18_(h, ...) (h), 17u, CUS_GRAPH_ARRAYS_(17, __VA_ARGS__)
#define CUS_GRAPH_PACK_19_(h, ...) (h), 18u, CUS_GRAPH_ARRAYS_(18, __VA_ARGS__)
#define CUS_GRAPH_PACK_20_(h, ...) (h), 19u, CUS_GRAPH_ARRAYS_(19, __VA_ARGS__)
#define CUS_GRAPH_PACK_21_(h, ...) (h), 20u, CUS_GRAPH_ARRAYS_(20, __VA_ARGS__)
#define CUS_GRAPH_PACK_22_(h, ...) (h), 21u, CUS_GRAPH_ARRAYS_(21, __VA_ARGS__)
#define CUS_GRAPH_PACK_23_(h, ...) (h), 22u, CUS_GRAPH_ARRAYS_(22, __VA_ARGS__)
#define CUS_GRAPH_PACK_24_(h, ...) (h), 23u, CUS_GRAPH_ARRAYS_(23, __VA_ARGS__)
#define CUS_GRAPH_PACK_25_(h, ...) (h), 24u, CUS_GRAPH_ARRAYS_(24, __VA_ARGS__)
#define CUS_GRAPH_PACK_26_(h, ...) (h), 25u, CUS_GRAPH_ARRAYS_(25, __VA_ARGS__)
#define CUS_GRAPH_PACK_27_(h, ...) (h), 26u, CUS_GRAPH_ARRAYS_(26, __VA_ARGS__)
#define CUS_GRAPH_PACK_28_(h, ...) (h), 27u, CUS_GRAPH_ARRAYS_(27, __VA_ARGS__)
#define CUS_GRAPH_PACK_29_(h, ...) (h), 28u, CUS_GRAPH_ARRAYS_(28, __VA_ARGS__)
#define CUS_GRAPH_PACK_30_(h, ...) (h), 29u, CUS_GRAPH_ARRAYS_(29, __VA_ARGS__)
#define CUS_GRAPH_PACK_31_(h, ...) (h), 30u, CUS_GRAPH_ARRAYS_(30, __VA_ARGS__)
#define CUS_GRAPH_PACK_32_(h, ...) (h), 31u, CUS_GRAPH_ARRAYS_(31, __VA_ARGS__)
#define CUS_GRAPH_PACK_33_(h, ...) (h), 32u, CUS_GRAPH_ARRAYS_(32, __VA_ARGS__)
#define CUS_GRAPH_PACK_34_(h, ...) (h), 33u, CUS_GRAPH_ARRAYS_(33, __VA_ARGS__)
#define CUS_GRAPH_PACK_35_(h, ...) (h), 34u, CUS_GRAPH_ARRAYS_(34, __VA_ARGS__)
#define CUS_GRAPH_PACK_36_(h, ...) (h), 35u, CUS_GRAPH_ARRAYS_(35, __VA_ARGS__)
#define CUS_GRAPH_PACK_37_(h, ...) (h), 36u, CUS_GRAPH_ARRAYS_(36, __VA_ARGS__)
#define CUS_GRAPH_PACK_38_(h, ...) (h), 37u, CUS_GRAPH_ARRAYS_(37, __VA_ARGS__)
#define CUS_GRAPH_PACK_39_(h, ...) (h), 38u, CUS_GRAPH_ARRAYS_(38, __VA_ARGS__)
#define CUS_GRAPH_PACK_40_(h, ...) (h), 39u, CUS_GRAPH_ARRAYS_(39, __VA_ARGS__)
#define CUS_GRAPH_PACK_41_(h, ...) (h), 40u, CUS_GRAPH_ARRAYS_(40, __VA_ARGS__)
#define CUS_GRAPH_PACK_42_(h, ...) (h), 41u, CUS_GRAPH_ARRAYS_(41, __VA_ARGS__)
#define CUS_GRAPH_PACK_43_(h, ...) (h), 42u, CUS_GRAPH_ARRAYS_(42, __VA_ARGS__)
#define CUS_GRAPH_PACK_44_(h, ...) (h), 43u, CUS_GRAPH_ARRAYS_(43, __VA_ARGS__)
#define CUS_GRAPH_PACK_45_(h, ...) (h), 44u, CUS_GRAPH_ARRAYS_(44, __VA_ARGS__)
#define CUS_GRAPH_PACK_46_(h, ...) (h), 45u, CUS_GRAPH_ARRAYS_(45, __VA_ARGS__)
#define CUS_GRAPH_PACK_47_(h, ...) (h), 46u, CUS_GRAPH_ARRAYS_(46, __VA_ARGS__)
#define CUS_GRAPH_PACK_48_(h, ...) (h), 47u, CUS_GRAPH_ARRAYS_(47, __VA_ARGS__)
#define CUS_GRAPH_PACK_49_(h, ...) (h), 48u, CUS_GRAPH_ARRAYS_(48, __VA_ARGS__)
#define CUS_GRAPH_PACK_50_(h, ...) (h), 49u, CUS_GRAPH_ARRAYS_(49, __VA_ARGS__)
#define CUS_GRAPH_PACK_51_(h, ...) (h), 50u, CUS_GRAPH_ARRAYS_(50, __VA_ARGS__)
#define CUS_GRAPH_PACK_52_(h, ...) (h), 51u, CUS_GRAPH_ARRAYS_(51, __VA_ARGS__)
#define CUS_GRAPH_PACK_53_(h, ...) (h), 52u, CUS_GRAPH_ARRAYS_(52, __VA_ARGS__)
#define CUS_GRAPH_PACK_54_(h, ...) (h), 53u, CUS_GRAPH_ARRAYS_(53, __VA_ARGS__)
#define CUS_GRAPH_PACK_55_(h, ...) (h), 54u, CUS_GRAPH_ARRAYS_(54, __VA_ARGS__)
#define CUS_GRAPH_PACK_56_(h, ...) (h), 55u, CUS_GRAPH_ARRAYS_(55, __VA_ARGS__)
#define CUS_GRAPH_PACK_57_(h, ...) (h), 56u, CUS_GRAPH_ARRAYS_(56, __VA_ARGS__)
#define CUS_GRAPH_PACK_58_(h, ...) (h), 57u, CUS_GRAPH_ARRAYS_(57, __VA_ARGS__)
#define CUS_GRAPH_PACK_59_(h, ...) (h), 58u, CUS_GRAPH_ARRAYS_(58, __VA_ARGS__)
#define CUS_GRAPH_PACK_60_(h, ...) (h), 59u, CUS_GRAPH_ARRAYS_(59, __VA_ARGS__)
#define CUS_GRAPH_PACK_61_(h, ...) (h), 60u, CUS_GRAPH_ARRAYS_(60, __VA_ARGS__)
#define CUS_GRAPH_PACK_62_(h, ...) (h), 61u, CUS_GRAPH_ARRAYS_(61, __VA_ARGS__)
#define CUS_GRAPH_PACK_63_(h, ...) (h), 62u, CUS_GRAPH_ARRAYS_(62, __VA_ARGS__)
#define CUS_GRAPH_PACK_64_(h, ...) (h), 63u, CUS_GRAPH_ARRAYS_(63, __VA_ARGS__)
/* clang-format on */

#ifdef __cplusplus
}
#endif

#endif
