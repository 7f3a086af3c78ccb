/* cuscope/stream.h: streams and host functions.
 *
 * A cus_stream is a reference-counted stream that holds a reference to its
 * context (so the context outlives it) and is destroyed with that context
 * made current. Kinds: owned (cus_stream_create), the context's legacy default
 * stream and per-thread default stream (cus_stream_legacy /
 * cus_stream_per_thread: handles the driver owns, never destroyed), and
 * foreign (cus_stream_wrap).
 *
 * Host functions (cus_stream_launch_host_fn) run on a thread that the driver
 * owns, in stream order. They must not call CUDA, and so must not call
 * cuscope: a cuscope call made from inside one fails with
 * CUS_ERROR_IN_HOST_FUNCTION and makes no driver call. Dropping a reference
 * there is allowed: if it is the last one, the object's destruction (which
 * needs the driver) is deferred: it runs at the next synchronizing call,
 * stream query, launch or object creation made outside a host function on
 * any thread, or at cus_release_deferred() (cuscope/object.h).
 *
 * Functions are thread-safe (a stream may be used from several threads, as
 * with the driver), return a cus_status, record the thread's last error on
 * failure, and leave out parameters untouched then.
 */
#ifndef CUSCOPE_STREAM_H
#define CUSCOPE_STREAM_H

#include <cuda.h>
#include <stdbool.h>

#include "context.h"
#include "object.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A reference-counted stream holding its context (above). */
typedef struct cus_stream cus_stream;

/* Where a stream comes from (cus_stream_get_kind); only owned streams are
 * destroyed by cuscope. */
typedef enum cus_stream_kind {
    CUS_STREAM_OWNED,              /* cus_stream_create: cuStreamDestroy at the end */
    CUS_STREAM_LEGACY_DEFAULT,     /* cus_stream_legacy: CU_STREAM_LEGACY */
    CUS_STREAM_PER_THREAD_DEFAULT, /* cus_stream_per_thread: CU_STREAM_PER_THREAD */
    CUS_STREAM_FOREIGN,            /* cus_stream_wrap: someone else's */
} cus_stream_kind;

/* Creates a stream on ctx with CU_STREAM_* flags (CU_STREAM_NON_BLOCKING: no
 * implicit synchronisation with the legacy default stream) and a priority,
 * which must lie in cus_context_stream_priority_range() (numerically
 * greatest <= priority <= least; 0 is the default), else
 * CUS_ERROR_INVALID_ARGUMENT. The range is asked of the driver once per
 * context (by the first create, or cus_context_stream_priority_range), and
 * kept. *out receives a new reference. On a green context
 * (cus_context_create_green) the stream is the green context's, so that its
 * work runs on the green context's SMs only: cuGreenCtxStreamCreate (driver
 * 12.5+), or cuStreamCreateWithPriority with its context current (12.4);
 * always non-blocking there (CU_STREAM_NON_BLOCKING is added: the driver
 * refuses green streams without it). */
CUS_API cus_status cus_stream_create(cus_context *ctx, unsigned int flags, int priority,
                                     cus_stream **out);

/* ctx's legacy default stream (CU_STREAM_LEGACY). *out receives a new
 * reference to an object that never destroys the driver's stream. */
CUS_API cus_status cus_stream_legacy(cus_context *ctx, cus_stream **out);
/* ctx's per-thread default stream (CU_STREAM_PER_THREAD: the calling
 * thread's, wherever it is used). *out receives a new reference to an object
 * that never destroys the driver's stream. */
CUS_API cus_status cus_stream_per_thread(cus_context *ctx, cus_stream **out);

/* Wraps a stream of ctx that someone else owns and keeps alive. *out
 * receives a new reference; the stream is never destroyed by cuscope. */
CUS_API cus_status cus_stream_wrap(cus_context *ctx, CUstream handle, cus_stream **out);

/* Adds a reference; NULL-safe; returns stream. */
CUS_API cus_stream *cus_stream_ref(cus_stream *stream);
/* Drops a reference; NULL-safe; returns NULL. The last one destroys an owned
 * stream (cuStreamDestroy, with its context current) and drops the context. */
CUS_API cus_stream *cus_stream_unref(cus_stream *stream);
CUS_DEFINE_AUTOPTR(cus_stream, cus_stream_unref)

/* Names the stream for profilers (Nsight Systems), through NVTX, when the
 * environment variable CUSCOPE_NVTX is set (read once, with secure_getenv);
 * otherwise does nothing. name is copied by the tool. Errors:
 * CUS_ERROR_INVALID_ARGUMENT for NULL. Thread-safe; makes no driver call. */
CUS_API cus_status cus_stream_set_name(cus_stream *stream, const char *name);

/* The driver's CUstream (CU_STREAM_LEGACY or CU_STREAM_PER_THREAD for the
 * default streams); NULL for NULL. No driver call. */
CUS_API CUstream cus_stream_handle(const cus_stream *stream);
/* The stream's context, borrowed; NULL for NULL. No driver call. */
CUS_API cus_context *cus_stream_context(const cus_stream *stream);
/* The stream's kind. No driver call. */
CUS_API cus_stream_kind cus_stream_get_kind(const cus_stream *stream);

/* Waits until all work queued on the stream has finished. */
CUS_API cus_status cus_stream_synchronize(cus_stream *stream);

/* Whether all work queued on the stream has finished: CUS_SUCCESS with
 * *done = true or false. Not-ready is a result, not an error. */
CUS_API cus_status cus_stream_query(cus_stream *stream, bool *done);

/* A reference-counted event (cuscope/event.h). */
typedef struct cus_event cus_event;
/* Later work on stream waits until event's last record has completed
 * (cuStreamWaitEvent). The event may belong to another context (cross-device
 * ordering). */
CUS_API cus_status cus_stream_wait_event(cus_stream *stream, cus_event *event);

/* A host function: runs on a driver thread, must not call CUDA or cuscope. */
typedef void (*cus_host_fn)(void *user_data);
/* Queues fn(user_data) on the stream (cuLaunchHostFunc). fn runs on a driver
 * thread, after the work before it and before the work after it; it must not
 * call CUDA or cuscope (see above). CUS_SUCCESS means fn will run (even when
 * restoring the caller's context stack failed afterwards: that goes to the
 * destroy handler); on failure fn was not queued, and user_data is still
 * the caller's to free. cuscope queues a small record with fn
 * (freed after the run). Captured into a graph (cuscope/graph.h), the record
 * runs at every replay and lives as long as the graph; when the capture
 * cannot keep it (out of host memory, or the capture query fails) the call
 * fails with that status and queues nothing, and the capture's end fails
 * too. On a stream captured outside cuscope (a raw cuStreamBeginCapture),
 * cuscope cannot tell when the graph dies: the record (a few dozen bytes) is
 * kept for the life of the process. To tell, each call asks the driver
 * whether the stream is capturing (cuStreamIsCapturing) unless a cuscope
 * capture already took the record. */
CUS_API cus_status cus_stream_launch_host_fn(cus_stream *stream, cus_host_fn fn, void *user_data);

/* The stream's priority (cuStreamGetPriority). */
CUS_API cus_status cus_stream_priority(cus_stream *stream, int *priority);
/* The stream's CU_STREAM_* flags (cuStreamGetFlags). */
CUS_API cus_status cus_stream_flags(cus_stream *stream, unsigned int *flags);

#ifdef __cplusplus
}
#endif

#endif
