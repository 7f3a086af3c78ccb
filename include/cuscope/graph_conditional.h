/* cuscope/graph_conditional.h: conditional nodes of graphs built by hand
 * (IF, IF/ELSE, WHILE, SWITCH), whose bodies run or repeat on the device
 * according to a value that kernels set, without returning to the host.
 *
 *   CUgraphConditionalHandle h;
 *   CUS_TRY(cus_graph_conditional_create(g, 1, true, &h));   // 1 at each launch
 *   cus_autoptr(cus_graph) body = NULL;
 *   CUS_TRY(cus_graph_add_conditional(g, NULL, 0, NULL, h, CU_GRAPH_COND_TYPE_WHILE, 1, &body));
 *   CUS_TRY(cus_graph_add_kernel(body, NULL, 0, NULL, countdown, 1, 1, 0, counter, h));
 *
 * A kernel sets the value with cudaGraphSetConditional(handle, value) (device
 * runtime, cuda_device_runtime_api.h); the handle is passed to it as a kernel
 * argument of type CUgraphConditionalHandle (8 bytes), which
 * cus_graph_add_kernel packs as any scalar. On the fake driver a host twin
 * sets it with cus_fake_graph_set_conditional (cuscope/fake.h).
 *
 * Body graphs. Each body is a cus_graph (a new reference) that is filled
 * with the cus_graph_add_* calls of cuscope/graph_nodes.h, conditional nodes
 * included. The driver owns the body's graph: it belongs to the node, lives
 * as long as the graph that holds the node, and is never destroyed by
 * cuscope. The body's cus_graph holds a reference to that graph (its
 * parent), so it may outlive the caller's reference to the parent; what the
 * body's nodes use is kept alive by the outermost graph (its root), exactly
 * as if the nodes were the root's, and calls on a body are serialized by the
 * root's lock. A body is not instantiated on its own
 * (CUS_ERROR_INVALID_ARGUMENT); instantiate the root. The driver allows
 * kernel, empty, copy, fill, child graph and conditional nodes in a body, all
 * of the graph's context.
 *
 * Driver versions: conditional nodes need driver API 12.3 (WHILE, and IF
 * with one body); SWITCH and IF with two bodies (IF/ELSE) need 12.8. An
 * older driver gives CUS_ERROR_NOT_SUPPORTED, naming its version.
 *
 * Every function is thread-safe, returns a cus_status, records the thread's
 * last error on failure, leaves out parameters untouched then, and must not
 * be called from a host function. A failure adds nothing and keeps nothing.
 */
#ifndef CUSCOPE_GRAPH_CONDITIONAL_H
#define CUSCOPE_GRAPH_CONDITIONAL_H

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>

#include "graph.h"
#include "graph_nodes.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Makes a conditional handle on graph (cuGraphConditionalHandleCreate), for
 * a conditional node of graph or of one of its bodies, at any depth (a body
 * graph may also make its own for the nodes in it). With assign_default,
 * the value is default_value at the start of each launch of the executable
 * graph; without, it keeps what the last launch left (the driver leaves it
 * undefined before the first set). *out receives the handle: a value, which
 * lives as long as graph (no reference of its own). Errors:
 * CUS_ERROR_INVALID_ARGUMENT (NULL), the context's poison,
 * CUS_ERROR_NOT_SUPPORTED (a driver older than 12.3), the driver's status,
 * CUS_ERROR_OUT_OF_HOST_MEMORY. */
CUS_API cus_status cus_graph_conditional_create(cus_graph *graph, unsigned int default_value,
                                                bool assign_default,
                                                CUgraphConditionalHandle *out);

/* Adds a conditional node of type (CU_GRAPH_COND_TYPE_IF, _WHILE or
 * _SWITCH) to graph, after deps (cuGraphAddNode with a
 * CU_GRAPH_NODE_TYPE_CONDITIONAL node), reading handle, which must have been
 * made by cus_graph_conditional_create on graph or on a graph that encloses
 * it (graph is a body of its conditional node, or of a body's, ...). size
 * is the number of bodies: 1 for WHILE, 1 or 2 for IF (bodies[0] runs when
 * the value is non-zero, bodies[1] when it is zero), 1 or more for SWITCH
 * (bodies[v] runs when the value v < size). bodies[0..size-1] each receive a
 * new reference to an empty body graph (see above for who owns what). The
 * node is written to *out (NULL: not needed). Errors:
 * CUS_ERROR_INVALID_ARGUMENT (NULL graph or bodies, handle 0 or made on none
 * of graph and the graphs that enclose it, an unknown type, a size the type
 * does not take, a dependency of another graph), the context's poison,
 * CUS_ERROR_NOT_SUPPORTED (a driver older than 12.3, or than 12.8 for SWITCH
 * and IF/ELSE), the driver's status, CUS_ERROR_OUT_OF_HOST_MEMORY. */
CUS_API cus_status cus_graph_add_conditional(cus_graph *graph, const cus_graph_node *deps,
                                             size_t ndeps, cus_graph_node *out,
                                             CUgraphConditionalHandle handle,
                                             CUgraphConditionalNodeType type, unsigned int size,
                                             cus_graph **bodies);

#ifdef __cplusplus
}
#endif

#endif
