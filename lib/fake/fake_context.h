/* The context area (fake_context.c): contexts, primary contexts and each
 * thread's emulated context stack. */
#ifndef CUSCOPE_LIB_FAKE_CONTEXT_H
#define CUSCOPE_LIB_FAKE_CONTEXT_H

#include "fake_device.h"

/* --- contexts (fake_context.c) ----------------------------------------------------- */

/* The record behind a CUcontext (cuda.h only declares the struct). Both
 * cuCtxCreate contexts (kind CONTEXT) and primary contexts (kind
 * PRIMARY_CONTEXT) use it. */
struct CUctx_st {
    fake_handle h;
    CUdevice device;
    unsigned int flags;
    size_t limits[FAKE_LIMIT_SLOTS];
    CUfunc_cache cache_config;
    CUsharedconfig shared_mem_config;
    /* The legacy default stream (NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD),
     * made on first use and kept across a primary context's reactivations;
     * owned by fake_stream.c, not a registered handle. */
    struct CUstream_st *default_stream;
    /* CUDA_SUCCESS, or the sticky error (CUDA_ERROR_ILLEGAL_ADDRESS, ...) a
     * host kernel returned in this context: from then on the calls that use
     * the context answer it (fake_module.c sets it; fake_context_defaults
     * clears it, at creation and when a primary context is reactivated). */
    CUresult sticky;
    /* The green context whose context this is (cuCtxFromGreenCtx), or NULL:
     * made and destroyed with it (fake_green.c), never by cuCtxDestroy. */
    struct CUgreenCtx_st *green;
    /* Its internal streams for context-wide records and waits, or NULL
     * (fake_context_record_locked, fake_context_wait_locked; fake_stream.c);
     * gate_pos: the gate stream's position of the latest wait. */
    struct CUstream_st *record_stream, *gate_stream;
    uint64_t gate_pos;
};

/* Resets a context's per-context state to the driver's defaults. */
FAKE_HIDDEN void fake_context_defaults(struct CUctx_st *c);

/* The calling thread's current context, live: CUDA_ERROR_INVALID_CONTEXT with
 * none, CUDA_ERROR_CONTEXT_IS_DESTROYED if it is dead, and its sticky error
 * if a kernel poisoned it. */
FAKE_HIDDEN CUresult fake_current_context_locked(struct CUctx_st **out);
/* The same, poisoned or not: for the calls that still work on a poisoned
 * context (the synchronizations, which run the queue and report the error
 * after). */
FAKE_HIDDEN CUresult fake_current_context_any_locked(struct CUctx_st **out);
/* An explicit context argument: an unknown handle is misuse and
 * CUDA_ERROR_INVALID_CONTEXT; a destroyed context or a released primary one
 * is misuse answered with if_dead; a poisoned one answers its sticky error. */
FAKE_HIDDEN CUresult fake_context_arg_locked(CUcontext ctx, CUresult if_dead,
                                             struct CUctx_st **out);

/* A green context's own context (fake_green.c): a new live record on dev,
 * not pushed; NULL when out of memory. Its death: marked destroyed and torn
 * down, as by cuCtxDestroy, but popped from no stack, as a primary
 * context's last release (a guess: the driver's rule is not probed). */
FAKE_HIDDEN struct CUctx_st *fake_context_new_green_locked(CUdevice dev);
FAKE_HIDDEN void fake_context_kill_green_locked(struct CUctx_st *c);
/* The retain a green context holds on its device's primary context (the
 * driver's rule: cuGreenCtxCreate retains it, cuGreenCtxDestroy releases
 * it), as cuDevicePrimaryCtxRetain and cuDevicePrimaryCtxRelease count. */
FAKE_HIDDEN CUresult fake_primary_retain_locked(CUdevice dev, struct CUctx_st **out);
FAKE_HIDDEN void fake_primary_release_locked(CUdevice dev);

/* Pops the calling thread's emulated stack down to depth entries, with no
 * call logged (cus_fake_reset); returns how many it popped. */
FAKE_HIDDEN int fake_context_pop_thread_to_locked(int depth);

/* The two above, as the context area calls them (it lies below the stream
 * engine, which registers them from its constructor). */
typedef struct fake_context_work_hooks {
    void (*synchronize_locked)(struct CUctx_st *c);
    void (*teardown_locked)(struct CUctx_st *c);
} fake_context_work_hooks;
FAKE_HIDDEN extern const fake_context_work_hooks *fake_context_work;

#endif
