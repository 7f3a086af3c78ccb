/* cuscope/event.h: events.
 *
 * A cus_event is a reference-counted CUDA event holding a reference to its
 * context. Functions are thread-safe, return a cus_status, record the
 * thread's last error on failure, and leave out parameters untouched then.
 */
#ifndef CUSCOPE_EVENT_H
#define CUSCOPE_EVENT_H

#include <cuda.h>
#include <stdbool.h>

#include "context.h"
#include "object.h"
#include "status.h"
#include "stream.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Creates an event on ctx with CU_EVENT_* flags (DISABLE_TIMING, BLOCKING_SYNC,
 * INTERPROCESS, which needs DISABLE_TIMING). *out receives a new reference. */
CUS_API cus_status cus_event_create(cus_context *ctx, unsigned int flags, cus_event **out);

/* Adds a reference; NULL-safe; returns event. */
CUS_API cus_event *cus_event_ref(cus_event *event);
/* Drops a reference; NULL-safe; returns NULL. The last one destroys the event
 * (cuEventDestroy, with its context current) and drops its context. */
CUS_API cus_event *cus_event_unref(cus_event *event);
CUS_DEFINE_AUTOPTR(cus_event, cus_event_unref)

/* Names the event for profilers (Nsight Systems), through NVTX, when the
 * environment variable CUSCOPE_NVTX is set (read once, with secure_getenv);
 * otherwise does nothing. name is copied by the tool. Errors:
 * CUS_ERROR_INVALID_ARGUMENT for NULL. Thread-safe; makes no driver call. */
CUS_API cus_status cus_event_set_name(cus_event *event, const char *name);

/* The driver's CUevent; NULL for NULL. No driver call. */
CUS_API CUevent cus_event_handle(const cus_event *event);
/* The event's context, borrowed; NULL for NULL. No driver call. */
CUS_API cus_context *cus_event_context(const cus_event *event);

/* Records the event on a stream of the same context (else
 * CUS_ERROR_CONTEXT_MISMATCH, without a driver call). */
CUS_API cus_status cus_event_record(cus_event *event, cus_stream *stream);

/* Waits for the event's last record to complete. */
CUS_API cus_status cus_event_synchronize(cus_event *event);

/* Whether the last record has completed (*done); not-ready is not an error. */
CUS_API cus_status cus_event_query(cus_event *event, bool *done);

/* Milliseconds between two completed records of timing events of the same
 * context (else CUS_ERROR_CONTEXT_MISMATCH). */
CUS_API cus_status cus_event_elapsed_ms(cus_event *start, cus_event *end, float *ms);

#ifdef __cplusplus
}
#endif

#endif
