/* cuscope/context.h: contexts and the per-thread context stack.
 *
 * A cus_context is a reference-counted CUDA context of one of three kinds:
 *   owned    cus_context_create(): cuCtxDestroy when the last reference goes;
 *   primary  cus_context_retain_primary(): one cuDevicePrimaryCtxRetain,
 *            released with cuDevicePrimaryCtxRelease when the last reference
 *            goes; the context that the runtime API and other libraries share;
 *   foreign  cus_context_wrap(): a CUcontext someone else owns; never destroyed;
 *   green    cus_context_create_green() (cuscope/green.h): a green context, a
 *            share of the device's SMs, destroyed with cuGreenCtxDestroy when
 *            the last reference goes; its CUcontext (cuCtxFromGreenCtx) is
 *            used as any other context's.
 *
 * The per-thread stack. cuscope keeps, per thread, a mirror of the driver's
 * context stack as far as cuscope changed it. Each entry keeps its context
 * alive (a reference of its own, or the one of the entry below it when that
 * is the same context), so a context can never be destroyed while it is
 * current on any thread through cuscope. The rules are the driver's:
 *   cus_context_create        creates and pushes (unless CUS_CTX_NO_PUSH)
 *   cus_context_push          pushes; the pushed context is current
 *   cus_context_pop           pops what cuscope pushed; an empty mirror gives
 *                             CUS_ERROR_UNBALANCED_POP and no driver call
 *   cus_context_set_current   replaces the top; NULL pops only the top (a
 *                             no-op on an empty stack)
 *   primary contexts          retain/release never push or pop
 * Every failure leaves the thread's stack exactly as it was (a pop that keeps
 * failing excepted: see "Temporary switches" below). A thread that
 * exits with contexts still pushed releases its references (the driver's
 * stack of the thread ends with it: nothing is popped) and reports that once
 * to the destroy handler (CUS_ERROR_CONTEXTS_LEFT_PUSHED).
 * That runs at thread exit (pthread_exit or returning from the thread's
 * function), not at process exit: pop what the main thread pushed before
 * main returns.
 *
 * Temporary switches. A call on an object whose context is not on top of the
 * calling thread's stack pushes that context for its driver calls and pops it
 * after (docs/design.md, "Temporary switches"). What a caller sees: a failed
 * push, or a failed driver call, is the call's status, recorded, with the
 * stack restored. When the driver call succeeded but the closing pop fails
 * (it is retried once), the call still returns CUS_SUCCESS: its work was done
 * or queued (a launch, a copy, a host function, a created object) and its out
 * parameters are valid, so do not undo it. The pop's failure goes to the
 * destroy handler, naming the public function you called and cuCtxPopCurrent,
 * and the context stays pushed on the driver's stack, one above
 * cus_context_current(). Pops you make yourself are not retried:
 * cus_context_pop fails with the driver's status.
 *
 * Mixing raw cuCtxPushCurrent/cuCtxPopCurrent with cuscope's stack calls on the
 * same thread is not supported: cuscope detects it at the next pop (restoring
 * the driver's stack; cus_context_pop returns CUS_ERROR_CONTEXT_MISMATCH, a
 * temporary switch reports it to the destroy handler), not earlier.
 *
 * Unless said otherwise, functions are thread-safe, return a cus_status, record
 * the thread's last error on failure and leave out parameters untouched. A
 * context whose driver call returned a sticky error (cus_status_is_sticky) is
 * poisoned: later calls on it fail at once with that same status, and its
 * children free their host memory without driver calls.
 */
#ifndef CUSCOPE_CONTEXT_H
#define CUSCOPE_CONTEXT_H

#include <cuda.h>
#include <stdbool.h>

#include "device.h"
#include "object.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A reference-counted CUDA context: owned, primary or foreign (above). */
typedef struct cus_context cus_context;

/* What the last reference to a context does (cus_context_get_kind). */
typedef enum cus_context_kind {
    CUS_CONTEXT_OWNED,   /* cus_context_create: destroyed (cuCtxDestroy) */
    CUS_CONTEXT_PRIMARY, /* cus_context_retain_primary: cuDevicePrimaryCtxRelease */
    CUS_CONTEXT_FOREIGN, /* cus_context_wrap: someone else's, never destroyed */
    CUS_CONTEXT_GREEN,   /* cus_context_create_green (cuscope/green.h): cuGreenCtxDestroy */
} cus_context_kind;

/* cuscope's own flag for cus_context_create(): leave the new context off the
 * calling thread's stack. Lies outside CU_CTX_FLAGS_MASK. */
#define CUS_CTX_NO_PUSH (1u << 31)

/* Creates a context on dev with CU_CTX_* flags (cuCtxCreate_v4 where the driver
 * has it, the 3.2 ABI otherwise) and, like cuCtxCreate, pushes it on the
 * calling thread's stack unless flags has CUS_CTX_NO_PUSH. *out receives a new
 * reference (the stack holds one more while pushed). */
CUS_API cus_status cus_context_create(cus_device dev, unsigned int flags, cus_context **out);

/* Retains dev's primary context. Does not push it. *out receives a new
 * reference; the driver's retain is released with the last one. */
CUS_API cus_status cus_context_retain_primary(cus_device dev, cus_context **out);

/* Wraps a context that someone else owns and will keep alive longer than every
 * cuscope object made from it. Never destroys it. *out receives a new
 * reference. Makes two driver stack calls and leaves the stack as it was. */
CUS_API cus_status cus_context_wrap(CUcontext handle, cus_context **out);

/* Adds a reference; NULL-safe; returns ctx. */
CUS_API cus_context *cus_context_ref(cus_context *ctx);
/* Drops a reference; NULL-safe; returns NULL. The last one destroys the
 * context (owned), releases the primary retain (primary), or forgets the
 * handle (foreign); errors go to the destroy handler. */
CUS_API cus_context *cus_context_unref(cus_context *ctx);
CUS_DEFINE_AUTOPTR(cus_context, cus_context_unref)

/* The driver's CUcontext; NULL for a NULL ctx. A plain accessor: no driver
 * call, never fails. */
CUS_API CUcontext cus_context_handle(const cus_context *ctx);
/* The context's device; device 0 for a NULL ctx. No driver call. */
CUS_API cus_device cus_context_device(const cus_context *ctx);
/* The context's kind; CUS_CONTEXT_FOREIGN (the kind that is never destroyed)
 * for a NULL ctx. No driver call. */
CUS_API cus_context_kind cus_context_get_kind(const cus_context *ctx);

/* Names ctx's driver context for profilers (Nsight Systems), through NVTX, when the
 * environment variable CUSCOPE_NVTX is set (read once, with secure_getenv);
 * otherwise does nothing. name is copied by the tool. Errors:
 * CUS_ERROR_INVALID_ARGUMENT for NULL. Thread-safe; makes no driver call. */
CUS_API cus_status cus_context_set_name(cus_context *ctx, const char *name);

/* CUS_SUCCESS, or the sticky status that poisoned ctx. No driver call. (The
 * poison belongs to the cus_context object: two cus_context_retain_primary
 * calls for one device give two objects, and a sticky error met through one
 * poisons that one; the other meets the driver's error at its next call.) */
CUS_API cus_status cus_context_poisoned(const cus_context *ctx);

/* --- calls in ctx: each makes ctx current for its call, then restores ----- */

/* Waits until all work queued in ctx has finished (cuCtxSynchronize), and
 * runs the releases deferred out of host functions. Like every call below,
 * makes ctx current for its driver call (free when ctx is already on top of
 * the calling thread's mirror) and restores the thread's stack afterwards. */
CUS_API cus_status cus_context_synchronize(cus_context *ctx);
/* The context's API version (cuCtxGetApiVersion). Needs no current
 * context: makes no switch. */
CUS_API cus_status cus_context_api_version(cus_context *ctx, unsigned int *version);
/* The CU_CTX_* flags ctx was created with (cuCtxGetFlags). */
CUS_API cus_status cus_context_flags(cus_context *ctx, unsigned int *flags);
/* A limit of ctx (cuCtxGetLimit: CU_LIMIT_STACK_SIZE, _MALLOC_HEAP_SIZE, ...). */
CUS_API cus_status cus_context_get_limit(cus_context *ctx, CUlimit limit, size_t *value);
/* Sets a limit of ctx (cuCtxSetLimit). */
CUS_API cus_status cus_context_set_limit(cus_context *ctx, CUlimit limit, size_t value);
/* ctx's preferred cache configuration (cuCtxGetCacheConfig). */
CUS_API cus_status cus_context_get_cache_config(cus_context *ctx, CUfunc_cache *config);
/* Sets ctx's preferred cache configuration (cuCtxSetCacheConfig): a hint. */
CUS_API cus_status cus_context_set_cache_config(cus_context *ctx, CUfunc_cache config);
/* The shared-memory bank configuration (cuCtxGetSharedMemConfig):
 * deprecated by the driver; an optional entry point, CUS_ERROR_NOT_SUPPORTED
 * where the driver dropped it. */
CUS_API cus_status cus_context_get_shared_mem_config(cus_context *ctx, CUsharedconfig *config);
/* Sets the shared-memory bank configuration (cuCtxSetSharedMemConfig):
 * deprecated, CUS_ERROR_NOT_SUPPORTED where the driver dropped it. */
CUS_API cus_status cus_context_set_shared_mem_config(cus_context *ctx, CUsharedconfig config);
/* Stream priorities (cuCtxGetStreamPriorityRange): numerically, greatest <=
 * least (e.g. -5 and 0). One of the two pointers may be NULL. */
CUS_API cus_status cus_context_stream_priority_range(cus_context *ctx, int *least, int *greatest);

/* --- the per-thread stack ------------------------------------------------ */

/* Pushes ctx on the calling thread's stack (cuCtxPushCurrent). */
CUS_API cus_status cus_context_push(cus_context *ctx);

/* Pops the top of the calling thread's stack (cuCtxPopCurrent). If popped is
 * not NULL it receives the stack's reference to the popped context (a new
 * reference for the caller); otherwise that reference is dropped.
 * CUS_ERROR_UNBALANCED_POP when cuscope pushed nothing on this thread;
 * CUS_ERROR_CONTEXT_MISMATCH when the driver's top is not cuscope's (the
 * driver's stack is restored). */
CUS_API cus_status cus_context_pop(cus_context **popped);

/* Replaces the top of the stack with ctx (cuCtxSetCurrent); NULL pops only the
 * top and is a no-op on an empty stack. */
CUS_API cus_status cus_context_set_current(cus_context *ctx);

/* The context on top of the calling thread's mirror, or NULL: a borrowed
 * pointer, valid while it stays on the stack. No driver call. */
CUS_API cus_context *cus_context_current(void);

/* The number of entries on the calling thread's mirror. No driver call. */
CUS_API unsigned int cus_context_stack_depth(void);

/* --- scoped guards --------------------------------------------------------
 * A guard makes a context current for a scope and restores the thread's stack
 * on every exit path. When ctx is already on top, entering and leaving cost a
 * pointer compare and no driver call. Otherwise the guard pushes on entry and,
 * on exit, pops exactly the context it pushed; if it finds another context on
 * top (the scope pushed and did not pop) it leaves the stack alone and reports
 * CUS_ERROR_CONTEXT_MISMATCH to the destroy handler.
 *
 *   Declaration style (the guard lives until the end of the enclosing block):
 *       cus_context_scope(g, ctx);
 *       if (g.status) return g.status;
 *
 *   Block style (the block runs only if the push succeeded):
 *       cus_status st;
 *       cus_with_context(ctx, st) { ... }
 *       if (st) ...;
 *   `break` leaves the block early and still restores; `return` from inside
 *   restores too.
 *
 * A guard is exited on the thread that entered it. Entering a guard for the
 * context already on top succeeds even when that context is poisoned (it
 * makes no call); the calls inside fail fast. */

/* A guard (above): what cus_context_guard_enter returns. */
typedef struct cus_context_guard {
    cus_context *ctx;      /* the context pushed, NULL if none was needed */
    unsigned int depth;    /* mirror depth before the push */
    cus_status status;     /* CUS_SUCCESS, or why the guard could not enter */
} cus_context_guard;

/* Enters a guard for ctx: pushes it unless it is already on top. Check the
 * returned guard's status, and exit it (cus_context_guard_exit) on every
 * path. The scope macros below do both. */
CUS_API cus_context_guard cus_context_guard_enter(cus_context *ctx);
/* Exits a guard: pops the context it pushed; nothing for a guard that pushed
 * nothing or failed to enter, or a NULL guard. Errors (a scope that left
 * another context on top, see above) go to the destroy handler. */
CUS_API void cus_context_guard_exit(cus_context_guard *guard);

/* The cleanup the scope macros use: a guard that pushed nothing (the fast
 * path) costs no call at all on exit. */
CUS_DEFINE_GUARD(cus_context_guard, cus_context_guard_exit, g_->ctx)

#ifdef CUS_HAVE_CLEANUP
/* Declares the guard `name` for ctx, exited at the end of the enclosing
 * block; check name.status (declaration style, above). */
#define cus_context_scope(name, ctx) CUS_GUARD(cus_context_guard, name, cus_context_guard_enter(ctx))
/* Runs the block that follows with ctx current, only if the push succeeded;
 * status_var (a cus_status) receives the guard's status (block style,
 * above). */
#define cus_with_context(ctx, status_var)                                      \
    CUS_WITH_GUARD(cus_context_guard, status_var, cus_context_guard_enter(ctx))
#endif

#ifdef __cplusplus
}
#endif

#endif
