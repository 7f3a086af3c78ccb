/* cuscope/graph_capture.h: stream capture into a graph that already exists,
 * so that one graph mixes nodes added by hand (cuscope/graph_nodes.h) and
 * captured work.
 *
 *   cus_autoptr(cus_graph) g = NULL;
 *   CUS_TRY(cus_graph_create(ctx, &g));
 *   cus_graph_node up;
 *   CUS_TRY(cus_graph_add_copy_to_device(g, NULL, 0, &up, x, 0, host_x, bytes));
 *   cus_graph_node leaves[4];
 *   size_t nleaves = 4;
 *   {
 *       cus_capture_scope_to_graph(cap, stream, g, &up, 1, CU_STREAM_CAPTURE_MODE_GLOBAL);
 *       CUS_TRY(cap.status);
 *       CUS_TRY(cus_launch(saxpy, grid, 256, 0, stream, 2.0f, x, y, n)); // after `up`
 *       CUS_TRY(cus_capture_leaves(&cap, leaves, &nleaves));
 *       cus_autoptr(cus_graph) same = NULL;
 *       CUS_TRY(cus_capture_end(&cap, &same));                       // same == g
 *   }
 *   CUS_TRY(cus_graph_add_copy_to_host(g, leaves, nleaves, NULL, host_y, y, 0, bytes));
 *
 * The captured work keeps what it uses alive in that graph exactly as a
 * capture keeps it in the graph it makes (cuscope/graph.h): the objects are
 * added to the graph's keep list at the capture's end, each once however
 * many nodes, added or captured, use it (cus_graph_kept_objects counts
 * them). A capture that ends badly (invalidated, abandoned) hands them to the
 * graph all the same: the driver may have left its nodes there. The end
 * makes room for them in the graph before it ends the driver's capture: out
 * of host memory, it fails with CUS_ERROR_OUT_OF_HOST_MEMORY and the capture
 * stays open (end it again, or let the scope abandon it). A keep that fails
 * for want of memory during the capture fails the call that would have
 * queued the work (CUS_ERROR_OUT_OF_HOST_MEMORY, nothing queued), since the
 * end cannot discard the graph as a capture's end discards its own.
 *
 * While the capture is open the graph is the driver's: cuscope's calls on it
 * (adding nodes or edges, listing or counting nodes, instantiating) are
 * refused with CUS_ERROR_INVALID_ARGUMENT. Add what must follow the captured
 * work after cus_capture_end, depending on the nodes cus_capture_leaves gave.
 *
 * Needs a CUDA 12.3 driver (cuStreamBeginCaptureToGraph): an older one makes
 * the begin fail with CUS_ERROR_NOT_SUPPORTED.
 *
 * Functions are thread-safe, return a cus_status, record the thread's last
 * error on failure and leave out parameters untouched then; none may be called
 * from a host function.
 */
#ifndef CUSCOPE_GRAPH_CAPTURE_H
#define CUSCOPE_GRAPH_CAPTURE_H

#include <cuda.h>
#include <stddef.h>

#include "graph.h"
#include "graph_nodes.h"
#include "object.h"
#include "status.h"
#include "stream.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Begins a capture on stream whose work goes into graph
 * (cuStreamBeginCaptureToGraph); check .status. The first work captured
 * depends on the ndeps nodes deps (NULL and 0: none), which must be graph's
 * (CUS_ERROR_INVALID_ARGUMENT before any driver call). The guard holds a
 * reference to graph while open; cus_capture_end hands out another, to the
 * same graph. Errors: CUS_ERROR_INVALID_ARGUMENT (NULL stream or graph, the
 * legacy default stream, a dependency of another graph, a graph being
 * captured into already: begin from cuscope, or a body graph of a conditional
 * node whose root is), CUS_ERROR_CONTEXT_MISMATCH (stream and graph of two
 * contexts), CUS_ERROR_NOT_SUPPORTED (a driver older than 12.3), the
 * context's poison, CUS_ERROR_OUT_OF_HOST_MEMORY, and the driver's (a stream
 * capturing already: CUDA_ERROR_ILLEGAL_STATE). A conditional node's body
 * graph may be captured into: its root keeps what the work uses. */
CUS_API cus_capture_guard cus_capture_begin_to_graph(cus_stream *stream, cus_graph *graph,
                                                     const cus_graph_node *deps, size_t ndeps,
                                                     CUstreamCaptureMode mode);

#ifdef CUS_HAVE_CLEANUP
/* Declares the guard `name`, a capture into graph begun on stream, abandoned
 * at the end of the enclosing block unless ended (cus_capture_scope's rules;
 * an abandoned capture leaves its nodes in the graph, which keeps what they
 * use). */
#define cus_capture_scope_to_graph(name, stream, graph, deps, ndeps, mode)     \
    CUS_GUARD(cus_capture_guard, name,                                         \
              cus_capture_begin_to_graph((stream), (graph), (deps), (ndeps), (mode)))
#endif

/* The nodes the next work captured on the guard's stream would depend on
 * (cuStreamGetCaptureInfo, 11.3's form): the captured work's last nodes, or
 * the begin's dependencies when nothing was captured yet. Nodes added after
 * the capture's end that depend on them run after all of the work captured on
 * that stream. *count is the capacity of nodes on entry; on return the
 * number written (the count of such nodes when it is smaller). With nodes
 * NULL, *count receives the count. Only for an open capture into a graph
 * (CUS_ERROR_INVALID_ARGUMENT otherwise); CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
 * when the capture was invalidated; the driver's errors. */
CUS_API cus_status cus_capture_leaves(cus_capture_guard *guard, cus_graph_node *nodes,
                                      size_t *count);

#ifdef __cplusplus
}
#endif

#endif
