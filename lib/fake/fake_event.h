/* The event area (fake_event.c): events and their records. */
#ifndef CUSCOPE_LIB_FAKE_EVENT_H
#define CUSCOPE_LIB_FAKE_EVENT_H

#include "fake_stream.h"

struct CUevent_st {
    fake_handle h; /* kind EVENT */
    struct CUctx_st *ctx;
    unsigned int flags;
    bool ctx_destroyed;
    bool recorded;                /* cuEventRecord was called */
    struct CUstream_st *stream;   /* the latest record: its stream and position */
    uint64_t pos;
    unsigned long generation;     /* bumped by each cuEventRecord */
    bool stamped;                 /* the latest record executed, at work counter `stamp` */
    uint64_t stamp;
    unsigned long doomed;
    /* The id of the capture that took its latest record (fake_graph.c), or 0:
     * such an event only orders captured work (fork and join), and answers
     * CUDA_ERROR_CAPTURED_EVENT to queries, synchronizations and timing. */
    unsigned long long capture_id;
};

/* An event argument: unknown or destroyed: misuse and
 * CUDA_ERROR_INVALID_HANDLE; of a dead context: misuse and
 * CUDA_ERROR_CONTEXT_IS_DESTROYED; of a poisoned context: its sticky error. */
FAKE_HIDDEN CUresult fake_event_arg_locked(CUevent he, struct CUevent_st **out);
/* The same, poisoned or not (cuEventSynchronize). */
FAKE_HIDDEN CUresult fake_event_arg_any_locked(CUevent he, struct CUevent_st **out);
/* A new event of c with flags, tracked as cuEventCreate's are (for
 * cuIpcOpenEventHandle, fake_ipc.c). CUDA_ERROR_OUT_OF_MEMORY. */
FAKE_HIDDEN CUresult fake_event_new_locked(struct CUctx_st *c, unsigned int flags,
                                           struct CUevent_st **out);

/* Records e on s as cuEventRecord does, both checked and of one context
 * (for the programmatic event of a launch, fake_module_launch.c). */
FAKE_HIDDEN CUresult fake_event_record_locked(struct CUevent_st *e, struct CUstream_st *s);
/* The same on a stream that does not capture, once deps (ndeps of them) are
 * met too (a green context's record, fake_green.c). */
FAKE_HIDDEN CUresult fake_event_record_after_locked(struct CUevent_st *e, struct CUstream_st *s,
                                                    const fake_dep *deps, size_t ndeps);

#endif
