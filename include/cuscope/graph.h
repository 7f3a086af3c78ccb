/* cuscope/graph.h: CUDA graphs from stream capture, and their executable form.
 *
 * Capture is a scoped construct:
 *
 *   cus_autoptr(cus_graph) graph = NULL;
 *   {
 *       cus_capture_scope(cap, stream, CU_STREAM_CAPTURE_MODE_GLOBAL);
 *       CUS_TRY(cap.status);                 // the capture began, or why not
 *       CUS_TRY(cus_launch(fn, grid, block, 0, stream, buf, n));
 *       CUS_TRY(cus_copy_to_host_async(host, buf, 0, bytes, stream));
 *       CUS_TRY(cus_capture_end(&cap, &graph));
 *   }
 *
 * The capture ends on every path out of the scope: an early return (a failed
 * CUS_TRY) ends it and discards what was captured, so no stream is left in
 * capture mode. Modes are the driver's: CU_STREAM_CAPTURE_MODE_GLOBAL,
 * _THREAD_LOCAL and _RELAXED.
 *
 * Lifetimes: work captured into a graph refers to cuscope objects (the
 * module of each launched function, the buffers that launches, copies and
 * fills use, the events recorded or waited for). cuscope keeps each of them
 * alive for as long as the graph, and each executable graph keeps its graph
 * (so: as long as anything can replay the work), releasing them when the last
 * goes. The rule for you: what you pass to a cuscope call during capture is
 * kept; raw CUdeviceptr values and host pointers are not (keep host memory
 * alive yourself, as for any async copy). Buffers passed as launch arguments
 * are kept when they go through the cus_launch macro. An executable graph
 * also keeps a graph an update replaced for as long as replays queued before
 * the update may still use its objects, and no longer (see
 * cus_graph_exec_update). Its last release waits for the replays still
 * queued in its context (cuCtxSynchronize) before it lets go of what they
 * use, when one may still run: when it was launched since its graph became
 * current, or a replaced graph's replays have not been seen to complete.
 * If what a graph uses cannot be kept for want of memory, cus_capture_end
 * fails and discards the graph rather than return one that could replay into
 * freed memory. Whether a stream that no cuscope capture began on has joined
 * one is asked of the driver, with the stream's context current; when that
 * question fails, the call that would have queued work fails with the
 * driver's error and queues nothing (no other capture is affected).
 * Keeping costs O(1) per object (a hash set per capture); captures share no
 * lock unless their ids fall in the same one of 64 shards.
 *
 * While a capture begun here is open:
 *   - releases run at once, on any thread: what a graph being captured uses
 *     is kept by references, so a last release cannot reach it, and a
 *     release whose driver call a capture would refuse (cuMemFree,
 *     cuMemFreeHost, cuModuleUnload, cuGraphExecDestroy, ...) makes it in
 *     relaxed capture interaction mode, which no capture refuses and none
 *     records. One exception: a stream-ordered buffer released while its
 *     stream is in a cuscope capture is freed after that capture's end (its
 *     cuMemFreeAsync would become a node of the graph). Work that the calling
 *     thread queues is what captures; a release you make yourself through the
 *     driver follows the driver's rules;
 *   - cus_buffer_alloc_async on a stream being captured is refused
 *     (CUS_ERROR_NOT_SUPPORTED): the driver would make a graph allocation,
 *     which follows the graph's lifetime rules, not a buffer's; allocate
 *     before the capture;
 *   - the driver's own rules apply to the rest: in GLOBAL mode (and in
 *     THREAD_LOCAL mode on the capturing thread) synchronous calls such as
 *     cus_buffer_alloc or cus_copy_to_device fail with
 *     CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidate the capture; use
 *     RELAXED mode to allow them.
 * When an end fails with the capture still open in the driver (for example
 * CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD), the guard stays open and the
 * scope's exit, on the capturing thread, ends it.
 *
 * Every function is thread-safe, returns a cus_status, records the thread's
 * last error on failure and leaves out parameters untouched then; none may be
 * called from a host function. The driver does not synchronize graph
 * objects (calls on one CUgraph or CUgraphExec must be serialized): cuscope
 * serializes its own calls on each cus_graph and cus_graph_exec with a lock,
 * so one executable graph may be launched from several threads. Calls made
 * on their raw handles are yours to serialize.
 */
#ifndef CUSCOPE_GRAPH_H
#define CUSCOPE_GRAPH_H

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>

#include "object.h"
#include "status.h"
#include "stream.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A reference-counted captured graph that keeps what its work uses alive. */
typedef struct cus_graph cus_graph;
/* A reference-counted executable graph, holding its graph. */
typedef struct cus_graph_exec cus_graph_exec;

/* --- capture --------------------------------------------------------------- */

/* An open (or failed) stream capture: what cus_capture_begin returns and
 * cus_capture_scope declares. */
typedef struct cus_capture_guard {
    cus_stream *stream; /* a reference while open */
    cus_status status;  /* of the begin: CUS_SUCCESS when the capture is open */
    bool open;          /* until cus_capture_end or cus_capture_abandon */
    /* The graph captured into (cus_capture_begin_to_graph, cuscope/graph_capture.h),
     * a reference while open; NULL for a capture that makes its own graph. */
    struct cus_graph *graph;
} cus_capture_guard;

/* Begins capture on stream (cuStreamBeginCapture); check .status. */
CUS_API cus_capture_guard cus_capture_begin(cus_stream *stream, CUstreamCaptureMode mode);

/* Ends the capture: *out receives a new reference to the captured graph, which
 * keeps the captured objects alive (for a capture into a graph,
 * cus_capture_begin_to_graph: that graph). The guard is closed even on failure
 * (e.g. CUDA_ERROR_STREAM_CAPTURE_INVALIDATED after an operation the capture
 * could not take). CUS_ERROR_INVALID_ARGUMENT when not open. */
CUS_API cus_status cus_capture_end(cus_capture_guard *guard, cus_graph **out);

/* Ends an open capture and discards its graph; reports failures to the
 * destroy handler. What cus_capture_scope runs at scope exit. */
CUS_API void cus_capture_abandon(cus_capture_guard *guard);

/* What cus_capture_scope runs at scope exit (abandon ignores a closed guard). */
CUS_DEFINE_GUARD(cus_capture_guard, cus_capture_abandon, g_->open)

#ifdef CUS_HAVE_CLEANUP
/* Declares the guard `name`, a capture begun on stream in mode, abandoned at
 * the end of the enclosing block unless ended (the top of this file). */
#define cus_capture_scope(name, stream, mode)                                  \
    CUS_GUARD(cus_capture_guard, name, cus_capture_begin((stream), (mode)))
#endif

/* Whether stream is capturing now (cuStreamIsCapturing). */
CUS_API cus_status cus_stream_is_capturing(cus_stream *stream, bool *capturing);

/* --- graphs ---------------------------------------------------------------- */

/* Adds a reference; NULL-safe; returns graph. */
CUS_API cus_graph *cus_graph_ref(cus_graph *graph);
/* Drops a reference; NULL-safe; returns NULL. The last one destroys the
 * graph (cuGraphDestroy) and releases what it kept alive. */
CUS_API cus_graph *cus_graph_unref(cus_graph *graph);
CUS_DEFINE_AUTOPTR(cus_graph, cus_graph_unref)

/* The driver's CUgraph; NULL for NULL. No driver call. */
CUS_API CUgraph cus_graph_handle(const cus_graph *graph);
/* The graph's context, borrowed. No driver call. */
CUS_API cus_context *cus_graph_context(const cus_graph *graph);
/* The number of nodes (cuGraphGetNodes). */
CUS_API cus_status cus_graph_node_count(cus_graph *graph, size_t *count);
/* The number of cuscope objects the graph keeps alive. */
CUS_API size_t cus_graph_kept_objects(const cus_graph *graph);

/* --- executable graphs ------------------------------------------------------ */

/* cuGraphInstantiateWithFlags (CUDA_GRAPH_INSTANTIATE_FLAG_*). *out receives
 * a new reference; it holds a reference to graph. */
CUS_API cus_status cus_graph_instantiate(cus_graph *graph, unsigned long long flags,
                                         cus_graph_exec **out);
/* Adds a reference; NULL-safe; returns exec. */
CUS_API cus_graph_exec *cus_graph_exec_ref(cus_graph_exec *exec);
/* Drops a reference; NULL-safe; returns NULL. The last one waits for the
 * replays that may still run (above), destroys the executable graph
 * (cuGraphExecDestroy) and drops its graphs and streams. */
CUS_API cus_graph_exec *cus_graph_exec_unref(cus_graph_exec *exec);
CUS_DEFINE_AUTOPTR(cus_graph_exec, cus_graph_exec_unref)
/* The driver's CUgraphExec; NULL for NULL. No driver call. */
CUS_API CUgraphExec cus_graph_exec_handle(const cus_graph_exec *exec);

/* Replays the graph on stream (NULL: the legacy default stream), whose
 * context must be the graph's (CUS_ERROR_CONTEXT_MISMATCH). exec keeps a
 * reference to stream until its next update that replaces the graph (or its
 * last release), which fences the replays queued there (see
 * cus_graph_exec_update); a wrapped stream (cus_stream_wrap) is not held.
 * First, when graphs an update replaced are still held, the oldest are
 * released if their replays have completed (cuEventQuery, stopping at the
 * first not complete; a query that fails goes to the destroy handler and the
 * graph stays). */
CUS_API cus_status cus_graph_exec_launch(cus_graph_exec *exec, cus_stream *stream);
/* Uploads the graph's work to the device ahead of its first launch. */
CUS_API cus_status cus_graph_exec_upload(cus_graph_exec *exec, cus_stream *stream);

/* Updates exec in place to replay graph (same topology, new parameters)
 * with cuGraphExecUpdate. On success exec holds a reference to graph (and so
 * to its objects), and the graph it replaced, with what that one keeps, is
 * released as soon as no replay can use it:
 *   - exec not launched since that graph became current (instantiated or
 *     updated to): at once;
 *   - launched on streams cuscope can name: a fence (an event,
 *     CU_EVENT_DISABLE_TIMING) is recorded on each (cuEventCreate,
 *     cuEventRecord, before cuGraphExecUpdate), and the graph is kept until
 *     they all complete: they are queried (cuEventQuery) at each later update
 *     and launch and at exec's last release, which release the graphs whose
 *     fences completed (a synchronize that covers them does not release them
 *     by itself: the next of those calls does). exec then lets go of the
 *     streams it held;
 *   - launched on a stream it cannot fence (a wrapped one, whose owner may
 *     have destroyed it; the per-thread default stream of another thread,
 *     CU_STREAM_PER_THREAD naming the caller's; any stream, once a launch
 *     could not allocate to note one): the update first waits for
 *     the context (cuCtxSynchronize), then releases it, and every graph still
 *     held, at once.
 * Updating to the graph exec already has replaces nothing. A fence query that
 * fails goes to the destroy handler, naming this function, and the graph
 * stays until a later query answers (a sticky status poisons the context, as
 * any call's does).
 *
 * Failures change nothing (exec replays the graph it had and holds nothing
 * new; the fences made are destroyed): the driver's status of any call above
 * (a fence that cannot be recorded fails the update rather than keep a graph
 * it cannot release); CUS_ERROR_OUT_OF_HOST_MEMORY, before any driver call,
 * when the list of replaced graphs (which grows by doubling) or their fences
 * cannot grow. When the driver refuses the update (a topology change), the
 * status is CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE and *result (may be NULL)
 * says why: instantiate graph instead. *result is written only when the
 * driver answered (success or that refusal). */
CUS_API cus_status cus_graph_exec_update(cus_graph_exec *exec, cus_graph *graph,
                                         CUgraphExecUpdateResult *result);

#ifdef __cplusplus
}
#endif

#endif
