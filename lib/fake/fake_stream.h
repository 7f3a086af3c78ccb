/* The stream engine (fake_stream.c): the queues of operations and their
 * execution, the driver thread, context synchronization and teardown, and the
 * hooks through which the event and graph areas take part. */
#ifndef CUSCOPE_LIB_FAKE_STREAM_H
#define CUSCOPE_LIB_FAKE_STREAM_H

#include "fake_context.h"

/* --- streams and host functions (fake_stream.c) --------------------------------
 * Every stream has an in-order queue of operations that runs only when the
 * host waits for it (synchronize calls, queries by the query mode, a
 * synchronous copy, cus_fake_run_streams), never at enqueue. Positions count
 * a stream's operations from 1: `enqueued` ever queued, `executed` completed
 * (an operation being executed is off the queue but not yet counted). A
 * dependency (stream, pos) is met once that stream executed >= pos. */

typedef struct fake_mem fake_mem;

typedef enum fake_op_kind {
    FAKE_OP_COPY,     /* memmove(dst, src, n) */
    FAKE_OP_MEMSET,   /* count elements of 1, 2 or 4 bytes */
    FAKE_OP_HOST_FN,  /* cuLaunchHostFunc: runs on the driver thread */
    FAKE_OP_RECORD,   /* cuEventRecord */
    FAKE_OP_WAIT,     /* cuStreamWaitEvent: nothing but its dependency */
    FAKE_OP_ALLOC,    /* cuMemAllocAsync: the block becomes usable */
    FAKE_OP_FREE,     /* cuMemFreeAsync: the block is freed */
    FAKE_OP_PREFETCH, /* cuMemPrefetchAsync: nothing but the lifetime check */
    FAKE_OP_LAUNCH,   /* cuLaunchKernel*: runs the host kernel (fake_module.c) */
    FAKE_OP_CONDITIONAL, /* a conditional node's replay (fake_graph_conditional.c) */
} fake_op_kind;

typedef struct fake_launch_exec fake_launch_exec; /* fake_module.c; owned by its op */

typedef struct fake_dep {
    struct CUstream_st *stream;
    uint64_t pos;
} fake_dep;

typedef struct fake_op {
    struct fake_op *next;
    fake_op_kind kind;
    const char *call;  /* the log name of the entry point that queued it */
    struct CUstream_st *stream; /* set at enqueue */
    uint64_t seq;      /* global enqueue order (context synchronization) */
    CUresult *result;  /* where a synchronous caller wants the outcome, or NULL */
    union fake_op_payload { /* named: a graph node keeps one (fake_graph.c) */
        struct { /* COPY; a NULL fake_mem is unchecked host memory */
            uintptr_t dst, src;
            size_t n;
            fake_mem *dst_mem, *src_mem;
            /* A strided region (a 2D or 3D memcpy node): rows rows of n
             * bytes, pitch apart, in slices slices, slice bytes apart, each
             * side its own; rows 0 is one flat run of n bytes. */
            size_t rows, slices, dst_pitch, src_pitch, dst_slice, src_slice;
            /* A memcpy node's operands are multidimensional (an array, more
             * than one row or slice): cuGraphExecMemcpyNodeSetParams refuses
             * such a node (fake_graph_nodes.c). */
            bool multidim;
        } copy;
        struct { /* MEMSET */
            uintptr_t dst;
            unsigned int value, elem;
            size_t count;
            fake_mem *mem;
        } memset;
        struct { /* HOST_FN */
            CUhostFn fn;
            void *user_data;
        } host;
        struct { /* RECORD */
            struct CUevent_st *event;
            unsigned long generation;
        } record;
        struct { /* ALLOC, FREE, PREFETCH */
            fake_mem *mem;
        } mem;
        struct { /* LAUNCH: freed with the op (fake_module_launch_free) */
            fake_launch_exec *exec;
        } launch;
        struct { /* CONDITIONAL: node NULL applies root's handles' defaults */
            const struct CUgraphNode_st *node;
            struct CUgraphExec_st *exec;
            struct CUgraph_st *root;
            CUstream hs;
        } cond;
    } u;
    size_t deps_done, ndeps;
    fake_dep deps[]; /* met in order before the operation executes */
} fake_op;

struct CUstream_st {
    fake_handle h;  /* kind STREAM; a default stream is not registered */
    struct CUctx_st *ctx;
    unsigned int flags;
    int priority;
    bool is_default;    /* the context's legacy default stream */
    /* A thread's per-thread default stream in ctx (CU_STREAM_PER_THREAD),
     * owner the thread's number: an ordinary blocking stream, made on the
     * thread's first use and, like the legacy one, not registered and kept
     * until the next install. */
    bool per_thread;
    unsigned long owner;
    /* One of a context's own streams (fake_context_record_locked,
     * fake_context_wait_locked): made on first use, never registered, kept
     * until the next install, like the default ones. */
    bool internal;
    bool ctx_destroyed; /* destroyed with its context rather than by cuStreamDestroy */
    bool torn_down;     /* its context's teardown took it */
    bool busy;          /* an operation is executing (maybe with the lock released) */
    uint64_t busy_seq;  /* that operation's seq */
    fake_op *head, *tail;
    uint64_t enqueued, executed;
    struct CUstream_st *pend_prev, *pend_next; /* the list of streams with work */
    bool pending_listed;
    unsigned long doomed; /* the teardown ticket that will destroy it */
    /* The stream capture it takes part in (began on it, or joined through an
     * event), or NULL: its work becomes graph nodes instead (fake_graph.c). */
    struct fake_capture *capture;
};

/* A stream argument: NULL and CU_STREAM_LEGACY are the current context's
 * legacy default stream, CU_STREAM_PER_THREAD the calling thread's
 * per-thread default stream in it (INVALID_CONTEXT / CONTEXT_IS_DESTROYED
 * without a live one); an unknown or destroyed stream is misuse and
 * CUDA_ERROR_INVALID_HANDLE, one of a dead context misuse and
 * CUDA_ERROR_CONTEXT_IS_DESTROYED (the H200's answer); a stream of a
 * poisoned context answers its sticky error. */
FAKE_HIDDEN CUresult fake_stream_arg_locked(CUstream hs, struct CUstream_st **out);
/* The same, poisoned or not (cuStreamSynchronize, cuStreamEndCapture). */
FAKE_HIDDEN CUresult fake_stream_arg_any_locked(CUstream hs, struct CUstream_st **out);
/* A stream argument of a call that carries its context c (a launch: the
 * function's): NULL and CU_STREAM_LEGACY are c's legacy default stream,
 * CU_STREAM_PER_THREAD the calling thread's per-thread one in c, whatever
 * is current; the others as fake_stream_arg_locked. */
FAKE_HIDDEN CUresult fake_stream_arg_in_locked(CUstream hs, struct CUctx_st *c,
                                               struct CUstream_st **out);
/* The context's default stream, made on first use; NULL when out of memory. */
/* A new stream of c (cuStreamCreateWithPriority's work, and
 * cuGreenCtxStreamCreate's in the green context's c): flags checked by the
 * caller, priority clamped. */
FAKE_HIDDEN CUresult fake_stream_create_in_locked(struct CUctx_st *c, CUstream *phStream,
                                                  unsigned int flags, int priority);
FAKE_HIDDEN struct CUstream_st *fake_default_stream_locked(struct CUctx_st *c);
/* Whether synchronous memsets of device memory are left queued on the
 * default stream (cus_fake_set_sync_memsets_deferred). */
FAKE_HIDDEN bool fake_stream_sync_memsets_deferred_locked(void);
/* The calling thread's per-thread default stream in c, made on first use;
 * NULL when out of memory. create: false finds it only. */
FAKE_HIDDEN struct CUstream_st *fake_per_thread_stream_locked(struct CUctx_st *c, bool create);
/* Appends a copy of proto (its payload, kind, call and result) to s with the
 * extra dependencies and the legacy-stream ones; CUDA_ERROR_OUT_OF_MEMORY. */
FAKE_HIDDEN CUresult fake_stream_enqueue_locked(struct CUstream_st *s, const fake_op *proto,
                                                const fake_dep *extra, size_t nextra);
/* A synchronous operation: queued on c's default stream (so after the work of
 * the default stream and of c's blocking streams) and run to completion;
 * returns the outcome of its execution. May release the lock. */
FAKE_HIDDEN CUresult fake_stream_submit_sync_locked(struct CUctx_st *c, const fake_op *proto);
/* Runs s until s->executed >= pos (dependencies first). May release the lock. */
FAKE_HIDDEN void fake_stream_run_to_locked(struct CUstream_st *s, uint64_t pos);
/* The rule of cuStreamQuery and cuEventQuery: CUDA_SUCCESS if s had reached
 * target on entry; CUDA_ERROR_NOT_READY otherwise, after running what the
 * query mode says. May release the lock. */
FAKE_HIDDEN CUresult fake_stream_query_locked(struct CUstream_st *s, uint64_t target);

/* Context-wide records and waits (cuGreenCtxRecordEvent, cuGreenCtxWaitEvent,
 * fake_green.c). A context has two internal streams for them, made on first
 * use: the record stream, on which a context-wide record queues its RECORD
 * operation after the work every stream of c had queued, and the gate
 * stream, which holds only the context-wide waits, so that a stream made in
 * c later waits for them too (and not for any record).
 *   fake_context_capture_check_locked: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
 *     if a stream of c captures (each such capture is invalidated), else
 *     CUDA_SUCCESS;
 *   fake_context_record_locked: the record stream, with *deps (n of them, a
 *     new array the caller frees) on every stream of c with work queued;
 *     CUDA_ERROR_OUT_OF_MEMORY;
 *   fake_context_wait_locked: every stream of c (those made later too) waits
 *     for d; CUDA_ERROR_OUT_OF_MEMORY, having queued nothing. */
FAKE_HIDDEN CUresult fake_context_capture_check_locked(struct CUctx_st *c);
FAKE_HIDDEN CUresult fake_context_record_locked(struct CUctx_st *c, struct CUstream_st **stream,
                                                fake_dep **deps, size_t *n);
FAKE_HIDDEN CUresult fake_context_wait_locked(struct CUctx_st *c, fake_dep d);

/* Runs every operation of c's streams queued before the call (all contexts'
 * for NULL). May release the lock. */
FAKE_HIDDEN void fake_context_synchronize_locked(struct CUctx_st *c);
/* A context's death (cuCtxDestroy, the last cuDevicePrimaryCtxRelease): the
 * caller has already marked it. Runs the work queued in its streams, then
 * destroys its streams, events and memory. May release the lock. */
FAKE_HIDDEN void fake_context_teardown_locked(struct CUctx_st *c);

/* The work counter: memory operations, launches and host functions executed since
 * install (event timing). */
FAKE_HIDDEN uint64_t fake_work_done_locked(void);

/* Runs fn(arg) on the calling thread without the lock, as a host function
 * runs: every driver entry point it calls is refused (CUDA_ERROR_NOT_PERMITTED
 * and a misuse), and threads waiting inside the fake see a lock release.
 * The caller holds the stream it executes busy (fake_stream.c). */
FAKE_HIDDEN void fake_stream_call_unlocked_locked(void (*fn)(void *), void *arg);

/* --- stream capture and graphs (fake_graph.c) ----------------------------------------
 * While a stream captures (s->capture), what would be queued on it becomes a
 * node of the capture's graph instead; cuGraphLaunch queues a graph's nodes
 * as ordinary operations, in capture order. */

/* Captures begun and not yet ended (any thread): 0 makes every hook free.
 * Defined by the stream engine, which reads it; kept by the graph area. */
FAKE_HIDDEN extern unsigned long fake_captures_active;

/* What the stream engine and the event area hand to the capture code (the
 * graph area registers it from a constructor: fake_capture_ops).
 *   enqueue_locked: for a capturing stream or a legacy default stream while
 *     captures are active: *handled says whether the operation was taken (a
 *     node, or an error: CUDA_ERROR_STREAM_CAPTURE_IMPLICIT on a legacy stream
 *     while a blocking stream of its context captures,
 *     CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, ...). A LAUNCH payload belongs
 *     to the node on success, as it would to the queue.
 *   sync_check_locked: cuStreamSynchronize and cuStreamQuery of s:
 *     CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED for a capturing stream,
 *     CUDA_ERROR_STREAM_CAPTURE_IMPLICIT for a legacy stream that a blocking
 *     capture blocks; both invalidate the capture.
 *   record_locked: cuEventRecord on a capturing stream.
 *   wait_locked: cuStreamWaitEvent while captures are active or of a
 *     captured event (*handled false: an ordinary wait).
 *   stream_destroyed_locked: cuStreamDestroy of a capturing stream: the
 *     capture is discarded (its origin) or invalidated (a joined stream,
 *     which leaves it). */
typedef struct fake_capture_hooks {
    CUresult (*enqueue_locked)(struct CUstream_st *s, const fake_op *proto, bool *handled);
    CUresult (*sync_check_locked)(struct CUstream_st *s);
    CUresult (*record_locked)(struct CUstream_st *s, struct CUevent_st *e);
    CUresult (*wait_locked)(struct CUstream_st *s, struct CUevent_st *e, unsigned int flags,
                            bool *handled);
    void (*stream_destroyed_locked)(struct CUstream_st *s);
} fake_capture_hooks;
FAKE_HIDDEN extern const fake_capture_hooks *fake_capture_ops;

#endif
