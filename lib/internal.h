/* Internal declarations shared by the files of lib/. Nothing here is API. */
#ifndef CUSCOPE_LIB_INTERNAL_H
#define CUSCOPE_LIB_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/cuscope.h"
#include "driver/driver.h"

#define CUS_HIDDEN __attribute__((visibility("hidden")))
#define CUS_PRINTF(f, a) __attribute__((format(printf, f, a)))
/* What a write by one thread evicts from the others' caches: a 64-byte line,
 * and on x86 its neighbour too (the L2's adjacent-line prefetcher fetches
 * lines in pairs), hence 128, as crossbeam's CachePadded uses. */
#define CUS_CACHE_LINE_ 128
#define CUS_LIKELY(x) __builtin_expect(!!(x), 1)
#define CUS_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* --- errors (error.c) ------------------------------------------------------ */

/* The last-error message's capacity: large enough for a JIT error log's
 * first lines. */
#define CUS_ERROR_MESSAGE_MAX_ 1024

/* Records the calling thread's last error and returns status, so that
 * `return cus_fail_(...)` reads naturally. driver_call may be NULL. */
CUS_HIDDEN cus_status cus_fail_(cus_status status, const char *function, const char *driver_call,
                                const char *fmt, ...) CUS_PRINTF(4, 5);
#define CUS_FAIL(status, driver_call, ...) cus_fail_((status), __func__, (driver_call), __VA_ARGS__)
#define CUS_CHECK_ARG(cond)                                                    \
    do {                                                                       \
        if (CUS_UNLIKELY(!(cond)))                                             \
            return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL, "invalid argument: %s", #cond); \
    } while (0)

/* Delivers an error raised while destroying to the destroy handler; never
 * touches the thread's last error. */
CUS_HIDDEN void cus_destroy_error_(cus_status status, const char *function, const char *driver_call,
                                   const char *fmt, ...) CUS_PRINTF(4, 5);

/* Saves and restores the thread's last error around a destructor, so that a
 * cleanup running during an early return cannot clobber the error being
 * returned. */
typedef struct cus_error_save {
    cus_status status;
    const char *function, *driver_call;
    char message[CUS_ERROR_MESSAGE_MAX_];
} cus_error_save;
CUS_HIDDEN void cus_error_save_(cus_error_save *s);
/* Destructions running on this thread (object.c): cus_fail_ records nothing
 * while it is not 0. */
CUS_HIDDEN extern _Thread_local unsigned int cus_destroy_depth_
    __attribute__((tls_model("initial-exec")));
CUS_HIDDEN void cus_error_restore_(const cus_error_save *s);

/* --- statuses (status.c) ---------------------------------------------------
 * Registers how to describe a code newer than cuscope's headers (the loader
 * asks the loaded driver): status.c calls nothing above it. */
CUS_HIDDEN void cus_status_set_describer_(const char *(*fn)(cus_status status, bool name));

/* --- host allocations (host_alloc.c) ---------------------------------------
 * Every allocation cuscope makes goes through these, so that
 * cus_debug_fail_host_alloc() can fail it; memory is released with free(). */

CUS_HIDDEN void *cus_malloc_(size_t size);
CUS_HIDDEN void *cus_calloc_(size_t count, size_t size);
/* Zeroed, at an address that is a multiple of CUS_CACHE_LINE_: for the
 * objects whose fields are kept on separate lines (contexts, modules). */
CUS_HIDDEN void *cus_calloc_lines_(size_t size);
CUS_HIDDEN void *cus_realloc_(void *p, size_t size);
CUS_HIDDEN char *cus_strdup_(const char *s);
/* The record of an object that programs make and release by the thousand
 * (events, streams, buffers): zeroed, from the calling thread's cache of
 * records released before when it has one, else from malloc. Always a
 * malloc block of its size class, so free() may release it (error paths);
 * cus_record_free_ with the same size gives it to the calling thread's cache
 * instead (or frees it when the cache is full). */
CUS_HIDDEN void *cus_record_new_(size_t size);
CUS_HIDDEN void cus_record_free_(void *p, size_t size);
/* A pointer from cus_malloc_ and friends that is freed at scope exit unless
 * ownership left with cus_steal(&p) (or p was set to NULL). lib/ follows
 * include/linux/cleanup.h: a function uses scope cleanup for every resource
 * or for none, never mixed with goto unwinding. */
static inline void cus_autofree_cleanup_(void *p)
{
    free(*(void **)p);
}
#define cus_autofree __attribute__((cleanup(cus_autofree_cleanup_)))

/* Holds `mutex` until the end of the scope. */
static inline pthread_mutex_t *cus_mutex_lock_(pthread_mutex_t *m)
{
    pthread_mutex_lock(m);
    return m;
}
static inline void cus_mutex_unlock_cleanup_(pthread_mutex_t **m)
{
    pthread_mutex_unlock(*m);
}
#define CUS_LOCK_SCOPE(mutex)                                                  \
    __attribute__((cleanup(cus_mutex_unlock_cleanup_), unused))                \
    pthread_mutex_t *CUS_UNIQUE(cus_lock_) = cus_mutex_lock_(mutex)

/* Called where cuscope absorbs a failed allocation by design (a cache entry
 * not made, a fallback taken, a capture discarded for another error): the
 * call goes on and succeeds. Counted for cus_debug_host_alloc_absorbed(). */
CUS_HIDDEN void cus_host_alloc_absorbed_(void);

/* --- objects (object.c) ----------------------------------------------------- */

typedef void (*cus_destroy_fn_)(void *obj);

typedef struct cus_refcount {
    atomic_uint count;
    /* The driver's id of a capture whose keep list holds the object (0:
     * none): a captured launch that finds its own capture here keeps nothing
     * more, with one load of a line the launch reads anyway (capture.c). */
    _Atomic(cuuint64_t) kept_by;
    /* Set only while a destruction is deferred (the last reference was
     * dropped inside a host function): the deferred list's link. */
    struct cus_refcount *deferred_next;
    void *deferred_obj;
    cus_destroy_fn_ deferred_destroy;
} cus_refcount;

/* The count of live objects, per thread (live.c): a thread's shard, written
 * by that thread only, with a load and a store (no locked instruction); the
 * sum of them all is cus_debug_live_objects(). */
typedef struct cus_live_shard_ {
    atomic_size_t count;         /* creations less destructions, modulo 2^N */
    atomic_bool taken;           /* owned by a running thread */
    struct cus_live_shard_ *next; /* every shard, on a list that only grows */
} cus_live_shard_;
/* The calling thread's shard; NULL until its first object. */
CUS_HIDDEN extern _Thread_local cus_live_shard_ *cus_live_mine_
    __attribute__((tls_model("initial-exec")));
/* Finds the thread a shard, or adds to the shared count when it cannot. */
CUS_HIDDEN void cus_live_add_slow_(size_t delta);
static inline void cus_live_add_(size_t delta)
{
    cus_live_shard_ *s = cus_live_mine_;
    if (CUS_LIKELY(s))
        atomic_store_explicit(&s->count,
                              atomic_load_explicit(&s->count, memory_order_relaxed) + delta,
                              memory_order_relaxed);
    else
        cus_live_add_slow_(delta);
}

/* True on a thread while it runs a host function queued through cuscope. */
CUS_HIDDEN extern _Thread_local bool cus_in_host_fn_ __attribute__((tls_model("initial-exec")));
CUS_HIDDEN extern atomic_bool cus_deferred_pending_;

static inline void cus_refcount_init_(cus_refcount *r)
{
    atomic_init(&r->count, 1);
    atomic_init(&r->kept_by, 0);
    r->deferred_next = NULL;
    cus_live_add_(1);
}
/* Reference counts defend themselves, as the kernel's refcount_t does: a
 * count that reaches CUS_REFCOUNT_SATURATED_ (overflow), a reference taken on
 * an object whose count is 0 (its destruction is under way or deferred), and
 * a release below 0 each go to the destroy handler once, and leave the count
 * saturated: the object then leaks instead of being freed twice or while in
 * use. Never aborts. One compare on each path. */
#define CUS_REFCOUNT_SATURATED_ 0xC0000000u /* counts from here on are saturated */
#define CUS_REFCOUNT_PARKED_ 0xE0000000u    /* where a saturated count is put back */
CUS_HIDDEN void cus_refcount_bad_(cus_refcount *r, unsigned int old, bool taking);
static inline void cus_refcount_inc_(cus_refcount *r)
{
    unsigned int old = atomic_fetch_add_explicit(&r->count, 1, memory_order_relaxed);
    /* old 0 wraps to UINT_MAX: one compare catches both 0 and saturation */
    if (CUS_UNLIKELY(old - 1u >= CUS_REFCOUNT_SATURATED_ - 1u))
        cus_refcount_bad_(r, old, true);
}
/* True when this was the last reference. */
static inline bool cus_refcount_dec_(cus_refcount *r)
{
    /* acq_rel rather than release + acquire fence: same cost on x86 and
     * ARM, and TSan understands it (it does not model standalone fences). */
    unsigned int old = atomic_fetch_sub_explicit(&r->count, 1, memory_order_acq_rel);
    if (CUS_LIKELY(old - 2u < CUS_REFCOUNT_SATURATED_ - 2u))
        return false;
    if (old == 1)
        return true;
    cus_refcount_bad_(r, old, false);
    return false;
}
static inline void cus_object_freed_(void)
{
    cus_live_add_((size_t)-1);
}

/* Captures begun through cuscope and not yet ended (counted by capture.c,
 * defined in object.c): while none is open, nothing is kept for a graph.
 * Counted before cuStreamBeginCapture, so that no work captured is missed.
 * Releases do not wait for captures: the ones a capture would refuse make
 * their driver call in relaxed interaction mode (cus_destroy_in_context_),
 * and a capture keeps what its graph uses alive by references. */
CUS_HIDDEN extern atomic_int cus_captures_active_;
static inline bool cus_captures_open_(void)
{
    return atomic_load_explicit(&cus_captures_active_, memory_order_relaxed) != 0;
}

/* cuCtxSynchronize is refused while a capture is open in the context, in
 * every interaction mode and from any thread, and it invalidates the capture
 * (an H200's answers, test/probes/probes.c release-ctx-sync-*): relaxed mode
 * does not help, and checking cus_captures_open_() first leaves a window in
 * which another thread begins a capture. So a release that waits for its
 * context holds off capture begins: cus_context_wait_hold_() is true when no
 * cuscope capture is open (then none can begin until
 * cus_context_wait_release_()), false when one is (nothing held: do not wait
 * for the context). cus_capture_begin counts its capture and then waits
 * (cus_capture_begin_wait_) for the holds in flight; each side announces
 * itself before it looks at the other (sequentially consistent), so at least
 * one of them sees the other. Defined in object.c. */
CUS_HIDDEN bool cus_context_wait_hold_(void);
CUS_HIDDEN void cus_context_wait_release_(void);
CUS_HIDDEN void cus_capture_begin_wait_(void);

/* Queues a destruction that must not run on a driver thread. */
CUS_HIDDEN void cus_defer_destroy_(cus_refcount *r, void *obj, cus_destroy_fn_ destroy);
/* Runs a destruction with the thread's last error saved and restored. */
CUS_HIDDEN void cus_run_destroy_(void *obj, cus_destroy_fn_ destroy);
static inline void cus_release_deferred_if_any_(void)
{
    if (CUS_UNLIKELY(atomic_load_explicit(&cus_deferred_pending_, memory_order_relaxed)))
        (void)cus_release_deferred();
}

/* --- fork() (fork.c; the flag and the refusal in error.c) -------------------
 * Set, in a fork() child, by the atfork child handler when the parent had
 * called into a driver: every entry point that can reach the driver checks it
 * first (before any lock) and fails with CUS_ERROR_FORKED; destructions free
 * host memory only. Never cleared: the child's driver state is the parent's. */
CUS_HIDDEN extern atomic_bool cus_forked_;
static inline bool cus_is_forked_(void)
{
    return atomic_load_explicit(&cus_forked_, memory_order_relaxed);
}
/* Records and returns the refusal of `function`: CUS_ERROR_FORKED in a fork
 * child, CUS_ERROR_IN_HOST_FUNCTION otherwise. Out of line and cold. Defined
 * in error.c with cus_forked_, so that the driver table may refuse too. */
CUS_HIDDEN cus_status cus_refuse_call_(const char *function);
/* A file's share of the fork() child handler: its locks re-initialised (a
 * thread of the parent may have held them; it does not exist in the child),
 * and what must not be waited for dropped; `forked` as in cus_forked_. Only
 * the forking thread runs in the child. A hook touches its own file's state
 * only (so their order does not matter), and runs in the child handler: it
 * takes no lock and allocates nothing. */
typedef void (*cus_fork_child_hook_)(bool forked);
/* Adds a child hook; called from a library constructor of a file above
 * fork.c. A fixed array: a hook too many aborts (a build bug). */
CUS_HIDDEN void cus_fork_register_child_hook_(cus_fork_child_hook_ fn);
/* The child hooks of the files below fork.c, which fork.c registers for them
 * (they cannot call up). */
CUS_HIDDEN void cus_loader_atfork_child_(bool forked);
CUS_HIDDEN void cus_error_atfork_child_(bool forked);
CUS_HIDDEN void cus_object_atfork_child_(bool forked);

/* Fails the enclosing cuscope function when called inside a host function,
 * or in a fork() child (cuscope/driver.h). Two loads: a thread-local and a
 * relaxed global. */
#define CUS_CHECK_NOT_IN_HOST_FN() CUS_CHECK_NOT_IN_HOST_FN_AS(__func__)
#define CUS_CHECK_NOT_IN_HOST_FN_AS(function)                                  \
    do {                                                                       \
        if (CUS_UNLIKELY(cus_in_host_fn_ || cus_is_forked_()))                 \
            return cus_refuse_call_(function);                                 \
    } while (0)
/* The same for entry points that may run inside a host function but must not
 * in a fork() child. */
#define CUS_CHECK_NOT_FORKED()                                                 \
    do {                                                                       \
        if (CUS_UNLIKELY(cus_is_forked_()))                                    \
            return cus_refuse_call_(__func__);                                 \
    } while (0)

/* The public function the user called: the outermost one running on this
 * thread. cus_fail_ names it in the record, whatever helper or nested public
 * function failed inside it (cuscope/status.h promises that). Set by
 * CUS_API_ENTER, cleared when that function returns. */
CUS_HIDDEN extern _Thread_local const char *cus_api_function_
    __attribute__((tls_model("initial-exec")));
typedef struct cus_api_frame_ {
    bool outer;
} cus_api_frame_;
/* The name a record or a switch's report gives: the public function the user
 * called while one runs, else `function`. A destruction keeps its own name
 * (cus_*_unref): it reports as itself, whoever released the last reference. */
static inline const char *cus_api_name_(const char *function)
{
    return cus_api_function_ && !cus_destroy_depth_ ? cus_api_function_ : function;
}
/* NVTX (nvtx.c, CUSCOPE_NVTX): object names for profilers, and a range
 * around each public call when asked; set once, before main. */
CUS_HIDDEN extern bool cus_nvtx_names_;
CUS_HIDDEN extern bool cus_nvtx_ranges_;
CUS_HIDDEN void cus_nvtx_push_(const char *function);
CUS_HIDDEN void cus_nvtx_pop_(void);
CUS_HIDDEN void cus_nvtx_name_context_(CUcontext ctx, const char *name);
CUS_HIDDEN void cus_nvtx_name_stream_(CUstream stream, const char *name);
CUS_HIDDEN void cus_nvtx_name_event_(CUevent event, const char *name);

static inline cus_api_frame_ cus_api_frame_enter_(const char *function)
{
    if (cus_api_function_)
        return (cus_api_frame_){false};
    cus_api_function_ = function;
    if (CUS_UNLIKELY(cus_nvtx_ranges_))
        cus_nvtx_push_(function);
    return (cus_api_frame_){true};
}
static inline void cus_api_frame_leave_(cus_api_frame_ *f)
{
    if (f->outer) {
        cus_api_function_ = NULL;
        if (CUS_UNLIKELY(cus_nvtx_ranges_))
            cus_nvtx_pop_();
    }
}

/* The first statement of every public function that can reach the driver:
 * refuses host functions and fork() children (before any argument check), and
 * names the function in every error recorded until it returns. */
#define CUS_API_ENTER() CUS_API_ENTER_AS(__func__)
#define CUS_API_ENTER_AS(function)                                             \
    CUS_CHECK_NOT_IN_HOST_FN_AS(function);                                     \
    __attribute__((cleanup(cus_api_frame_leave_), unused)) cus_api_frame_ cus_api_frame_var_ = \
        cus_api_frame_enter_(function)
/* The same for an entry point that may run inside a host function. */
#define CUS_API_ENTER_IN_HOST_FN()                                             \
    CUS_CHECK_NOT_FORKED();                                                    \
    __attribute__((cleanup(cus_api_frame_leave_), unused)) cus_api_frame_ cus_api_frame_var_ = \
        cus_api_frame_enter_(__func__)

/* Generates T_ref and T_unref for a struct with a `cus_refcount refs` member
 * and a destroy function that frees it. The destroy runs with the thread's
 * last error saved and restored; inside a host function it is deferred. */
#define CUS_DEFINE_REF_UNREF(T, destroy) CUS_DEFINE_REF_UNREF_TAKEN(T, destroy, cus_never_taken_)
/* The same, with taken(p, refs, erased destroy): true when it took the
 * destruction to run later (a stream-ordered free whose stream captures). */
#define CUS_DEFINE_REF_UNREF_TAKEN(T, destroy, taken)                          \
    static void T##_destroy_erased_(void *p) { destroy((T *)p); }              \
    CUS_API T *T##_ref(T *p)                                                   \
    {                                                                          \
        if (p)                                                                 \
            cus_refcount_inc_(&p->refs);                                       \
        return p;                                                              \
    }                                                                          \
    CUS_API T *T##_unref(T *p)                                                 \
    {                                                                          \
        if (p && cus_refcount_dec_(&p->refs)) {                                \
            if (CUS_UNLIKELY(cus_in_host_fn_))                                 \
                cus_defer_destroy_(&p->refs, p, T##_destroy_erased_);          \
            else if (!taken(p, &p->refs, T##_destroy_erased_))                 \
                cus_run_destroy_(p, T##_destroy_erased_);                      \
        }                                                                      \
        return NULL;                                                           \
    }
static inline bool cus_never_taken_(const void *p, cus_refcount *r, cus_destroy_fn_ destroy)
{
    (void)p, (void)r, (void)destroy;
    return false;
}

/* --- contexts (context.c, context_stack.c) ---------------------------------- */

/* Every object holds its context, so each buffer, stream, event or module
 * made or freed on any thread writes the context's count, while every call
 * reads its handle and poison: the count is alone on its line, so that those
 * writes do not evict what the calls read. (Only contexts and modules, which
 * are few and shared, pay the padding.) */
struct cus_context {
    _Alignas(CUS_CACHE_LINE_) cus_refcount refs;
    /* Read by every call, written once (poison when the context dies). */
    _Alignas(CUS_CACHE_LINE_) CUcontext handle;
    cus_device device;
    cus_context_kind kind;
    atomic_int poison; /* 0, or the sticky status that killed the context */
    /* The stream priority range, the device's and so fixed for the context's
     * life: asked of the driver by cus_context_stream_priority_range, which
     * stores it here, so that cus_stream_create asks once per context.
     * Threads that fill it at once store the same values (a benign race, on
     * atomics): `known` is set, with release, after the two. */
    atomic_int priority_least, priority_greatest;
    atomic_bool priority_known;
    CUgreenCtx green; /* a green context's (kind CUS_CONTEXT_GREEN); else NULL */
};

/* A context record, not yet counted as alive (free it with free() until
 * published), and its publication (context.c): for the kinds made in other
 * files (green.c). */
CUS_HIDDEN cus_context *cus_context_new_(CUcontext handle, cus_device dev, cus_context_kind kind);
CUS_HIDDEN cus_context *cus_context_publish_(cus_context *c);

/* ctx's stream priority range: the stored one, else asked of the driver
 * (cus_context_stream_priority_range, recorded on failure). */
CUS_HIDDEN cus_status cus_context_priority_range_(cus_context *ctx, int *least, int *greatest);

/* Records a failed driver call on ctx: latches a sticky status, and records
 * the thread's last error. Returns r. */
CUS_HIDDEN cus_status cus_context_driver_fail_(cus_context *ctx, CUresult r, const char *function,
                                               const char *driver_call);
/* The fail-fast check at the top of each call on a context. */
CUS_HIDDEN cus_status cus_context_poisoned_fail_(const cus_context *ctx, const char *function);
#define CUS_CHECK_POISON(ctx) CUS_CHECK_POISON_AS((ctx), __func__)
/* The same in a helper, naming its public caller. */
#define CUS_CHECK_POISON_AS(ctx, function)                                     \
    do {                                                                       \
        if (CUS_UNLIKELY(atomic_load_explicit(&(ctx)->poison, memory_order_relaxed))) \
            return cus_context_poisoned_fail_((ctx), (function));              \
    } while (0)

/* --- making a context current for driver calls (context_stack.c) -----------
 * The one way lib/ makes a context current around driver calls. A switch is
 * a pointer compare when ctx tops the thread's mirror, else a raw push (no
 * mirror entry, so it also works inside destructors), undone at the end of
 * the switch's scope. Its outcome rules, the same for every call
 * (docs/design.md, "Temporary switches"):
 *  - entering fails (ctx poisoned, or the push failed): that status,
 *    recorded; no call is made; the stack is as before;
 *  - the call fails: its status, recorded (a sticky one poisons ctx); the
 *    stack is restored (when the pop fails too, that goes to the destroy
 *    handler, and the context stays pushed on the driver's stack);
 *  - the call succeeds: CUS_SUCCESS whatever the pop says. The work was done
 *    (or queued: it will run) and the out parameters are valid, so the caller
 *    must not undo it. A failed pop goes to the destroy handler, naming the
 *    public function; the context stays pushed on the driver's stack, above
 *    cuscope's mirror.
 * Declare with CUS_SWITCH (or CUS_CALL_IN for one call); never with goto
 * unwinding in the same function. */
typedef struct cus_switch_ {
    cus_context *ctx;     /* NULL for a raw handle (cus_context_wrap) */
    CUcontext pushed;     /* what enter pushed; NULL when nothing was */
    const char *function; /* the public function, for records and reports */
} cus_switch_;
/* Makes ctx current (see above); sets up *sw in every case, so that leave
 * is always safe. */
CUS_HIDDEN cus_status cus_switch_enter_(cus_switch_ *sw, cus_context *ctx, const char *function);
/* The same for a raw handle, with no poison check. */
CUS_HIDDEN cus_status cus_switch_enter_handle_(cus_switch_ *sw, CUcontext handle,
                                              const char *function);
/* Pops what enter pushed; a failure goes to the destroy handler. Idempotent. */
CUS_HIDDEN void cus_switch_leave_(cus_switch_ *sw);
/* The status of a driver call made under sw: recorded, naming driver_call,
 * and latched on ctx when sticky. */
static inline cus_status cus_switch_check_(const cus_switch_ *sw, CUresult r,
                                           const char *driver_call)
{
    if (CUS_LIKELY(r == CUDA_SUCCESS))
        return CUS_SUCCESS;
    return cus_context_driver_fail_(sw->ctx, r, sw->function, driver_call);
}

/* Declares switch `var` for the rest of the scope, and `var`_status: the
 * enter's outcome, to test before any driver call. */
#define CUS_SWITCH_AS(var, ctx, function)                                      \
    __attribute__((cleanup(cus_switch_leave_))) cus_switch_ var;               \
    cus_status var##_status = cus_switch_enter_(&var, (ctx), (function))
#define CUS_SWITCH(var, ctx) CUS_SWITCH_AS(var, ctx, __func__)
/* The same for a raw handle, with no poison check. */
#define CUS_SWITCH_HANDLE_AS(var, handle, function)                            \
    __attribute__((cleanup(cus_switch_leave_))) cus_switch_ var;               \
    cus_status var##_status = cus_switch_enter_handle_(&var, (handle), (function))

/* One driver call `call` (a CUresult expression) with ctx current: a
 * cus_status expression, by the rules above. */
#define CUS_CALL_IN_AS(function, ctx, driver_call, call)                       \
    __extension__({                                                            \
        CUS_SWITCH_AS(cus_sw_, ctx, function);                                 \
        if (CUS_LIKELY(cus_sw__status == CUS_SUCCESS))                         \
            cus_sw__status = cus_switch_check_(&cus_sw_, (call), (driver_call)); \
        cus_sw__status;                                                        \
    })
#define CUS_CALL_IN(ctx, driver_call, call) CUS_CALL_IN_AS(__func__, ctx, driver_call, call)

/* The handle on top of the calling thread's mirror (NULL when empty): the
 * launch path's "already current" test reads it inline. */
CUS_HIDDEN extern _Thread_local CUcontext cus_tls_top_ __attribute__((tls_model("initial-exec")));
/* Makes room for one more entry on the calling thread's mirror, so that the
 * push after a successful driver call cannot fail. */
CUS_HIDDEN cus_status cus_context_mirror_reserve_(const char *function);
/* Records a push the driver already did (cuCtxCreate): takes a reference.
 * Needs a prior successful cus_context_mirror_reserve_(). */
CUS_HIDDEN void cus_context_mirror_push_(cus_context *ctx);

/* --- streams and events ----------------------------------------------------- */

struct cus_stream {
    cus_refcount refs;
    CUstream handle;
    cus_context *ctx; /* a reference */
    cus_stream_kind kind;
    /* The driver's id of the cuscope capture begun on this stream and not yet
     * ended, else 0 (capture.c): the launches on it find their capture
     * without asking the driver. */
    _Atomic(cuuint64_t) capture_id;
};

struct cus_event {
    cus_refcount refs;
    CUevent handle;
    cus_context *ctx; /* a reference */
    unsigned int flags; /* CU_EVENT_*, as created (the driver cannot be asked) */
};

/* An event of ctx that `open` makes with ctx current (driver_call names it
 * in records), with the given flags: for the events cus_event_create does
 * not make (cus_event_ipc_import, ipc.c). Released as any event
 * (cuEventDestroy). Errors recorded naming `function`. */
CUS_HIDDEN cus_status cus_event_open_(cus_context *ctx, unsigned int flags,
                                      const char *driver_call,
                                      CUresult (*open)(CUevent *out, const void *arg),
                                      const void *arg, cus_event **out, const char *function);

/* --- buffers of kinds that memory.c does not allocate (memory.c) -------------
 * A kind above memory.c (ipc.c's imported memory) brings its own acquire and
 * release: memory.c makes the record, calls acquire with the context current,
 * and at the last release calls release with it current (in relaxed capture
 * interaction mode, as cuMemFree), reporting failures as a buffer's. */
typedef struct cus_buffer_ops_ {
    cus_buffer_kind kind;
    const char *acquire_call, *release_call; /* driver calls, for records */
    CUresult (*acquire)(const void *arg, CUdeviceptr *ptr);
    CUresult (*release)(CUdeviceptr ptr);
    const char *what; /* for the destroy handler's report */
} cus_buffer_ops_;
/* A buffer of bytes on ctx made through ops (see above); errors recorded
 * naming `function`; *out untouched on failure. */
CUS_HIDDEN cus_status cus_buffer_new_with_ops_(cus_context *ctx, size_t bytes,
                                               const cus_buffer_ops_ *ops, const void *arg,
                                               cus_buffer **out, const char *function);

/* --- modules and functions (module.c, function.c, launch.c) ------------------ */

/* A function is part of its module: it has no count of its own (its ref and
 * unref count on the module) and is freed with the module. Everything the
 * launch path reads is set before the function is published and never
 * changes, so launches read it without a lock. */
struct cus_function {
    cus_module *module;
    uint64_t name_hash; /* the function cache's key (function.c) */
    CUfunction handle;
    CUcontext ctx_handle; /* the module's context, for the launch's checks */
    /* The module's context (the module's reference): the launch reads its
     * poison from here, and so never reads the module, whose count every
     * cus_function_ref and captured launch writes. */
    cus_context *ctx;
    /* A macro call site's sizes array that matched the layout (launch.c). */
    _Atomic(const size_t *) checked_sizes;
    char *name;
    bool layout_known;
    unsigned int nparams;
    size_t *param_offsets, *param_sizes; /* nparams each, when known */
};

/* Three lines, as for the context: the count (written by every reference to
 * the module or its functions), what lookups read without the lock (written
 * once, or, for the table, when it grows), and what is written under the
 * lock. */
struct cus_module {
    _Alignas(CUS_CACHE_LINE_) cus_refcount refs; /* the module's references and its functions' */
    _Alignas(CUS_CACHE_LINE_) CUmodule handle;
    cus_context *ctx;  /* a reference */
    cus_image_format format;
    char *info_log;
    /* The function cache (function.c): filled under the lock, read with or
     * without it; entries are never removed before the module dies. */
    _Atomic(struct cus_function_table_ *) functions; /* NULL until the first */
    _Alignas(CUS_CACHE_LINE_) pthread_mutex_t lock;
    size_t nfunctions;  /* under the lock */
    const char **names; /* cus_module_function_names, filled once */
    unsigned int nnames;
    struct cus_global_ *globals; /* looked up so far, under the lock */
    struct cus_param_counts_ *param_counts; /* from the image; NULL: ask the driver */
};

/* The function cache's table: open addressing with linear probing, keyed by
 * the name's hash, at most half full, so that a probe always ends at an empty
 * slot. A slot goes from NULL to a function, published with release, once,
 * and never changes again; a table that grew is not freed but kept on `older`
 * until the module dies (together smaller than the newest), so that a lookup
 * may probe any table it loaded without the lock. */
typedef struct cus_function_table_ {
    struct cus_function_table_ *older;
    size_t mask; /* slots - 1; slots is a power of two */
    _Atomic(cus_function *) slots[];
} cus_function_table_;

/* --- parameter counts from an image (param_counts.c) ----------------------- */

/* Each kernel's parameter count as its image declares it, read once at load
 * so that reading a layout never asks the driver past the last parameter. */
typedef struct cus_param_counts_ cus_param_counts_;
/* NULL when the image cannot be parsed here, or out of host memory: the
 * caller then learns the count from the driver. image and size as the
 * driver was given them (size SIZE_MAX: unknown). */
CUS_HIDDEN cus_param_counts_ *cus_param_counts_read_(const void *image, size_t size);
/* The count of the kernel called name, or -1 when unknown (c may be NULL). */
CUS_HIDDEN int cus_param_counts_find_(const cus_param_counts_ *c, const char *name);
CUS_HIDDEN void cus_param_counts_free_(cus_param_counts_ *c);

/* cuFuncGetParamInfo or cuKernelGetParamInfo over an opaque handle. */
typedef CUresult (*cus_param_info_fn_)(void *handle, size_t i, size_t *offset, size_t *size);
/* Reads a kernel's layout: `declared` parameters (cus_param_counts_find_),
 * or, when that is -1, until info answers CUDA_ERROR_INVALID_VALUE past the
 * last, into *offsets and *sizes (grown with cus_realloc_; the caller frees
 * them) and *nparams. Returns CUDA_SUCCESS, or the failing call's CUresult
 * with *out_of_memory false, or CUDA_ERROR_OUT_OF_MEMORY with it true when
 * a host allocation failed. */
/* Records why an argument list (nargs, sizes) does not match a layout
 * (nparams, param_sizes) of the kernel called name: the count, else the
 * first size that differs; CUS_ERROR_INVALID_ARGUMENT (CUS_SUCCESS when they
 * match). Cold: for cus_launch's and the graph nodes' failure paths. */
__attribute__((cold)) CUS_HIDDEN cus_status cus_layout_mismatch_(const char *name,
                                                                 unsigned int nparams,
                                                                 const size_t *param_sizes,
                                                                 unsigned int nargs,
                                                                 const size_t *sizes,
                                                                 const char *function);
CUS_HIDDEN CUresult cus_param_layout_read_(int declared, cus_param_info_fn_ info, void *handle,
                                           unsigned int *nparams, size_t **offsets,
                                           size_t **sizes, bool *out_of_memory);

/* Frees the module's function cache, its functions with it (function.c; for
 * module_destroy). */
CUS_HIDDEN void cus_module_functions_free_(cus_module *m);

/* A __device__ or __constant__ variable the module was asked for. */
typedef struct cus_global_ {
    struct cus_global_ *next;
    CUdeviceptr ptr;
    size_t size;
    char name[];
} cus_global_;

/* --- capture (capture.c) --------------------------------------------------- */

/* While no capture is open (cus_captures_active_ is 0), the keep calls
 * below cost one relaxed load. */
typedef void (*cus_release_fn_)(void *obj);

/* What a graph holds: one reference per entry. */
typedef struct keep_entry {
    void *obj;
    cus_release_fn_ release;
} keep_entry;

typedef struct keep_list {
    keep_entry *items;
    size_t count, capacity;
} keep_list;

/* Releases every entry and empties the list. */
CUS_HIDDEN void cus_keep_list_release_(keep_list *k);

/* One object for a capture to keep: a new reference taken with ref, released
 * with release when the graph dies. refs is the object's count (its kept_by
 * field), or NULL for memory handed over whole (never kept twice). */
typedef struct cus_keep_item_ {
    void *obj;
    cus_refcount *refs;
    void *(*ref)(void *);
    cus_release_fn_ release;
} cus_keep_item_;

/* What capture.c does for the objects below it. capture.c sits above every
 * object (a capture holds its stream), and the objects (streams, events,
 * buffers, modules) must tell it what their work uses: they call through
 * this table, which object.c defines with do-nothing entries (right while no
 * capture can be open) and capture.c fills from its constructor, so that no
 * object file calls capture.c by name. Only ever called while a capture may
 * be open, or on paths that already make a driver call. */
typedef struct cus_capture_ops_ {
    /* Keeps the n items alive with the graph being captured on stream, if
     * stream is in a cuscope capture (begun on it, or joined to it), before
     * the work that uses them is queued. Whether a stream that no capture
     * began on has joined one is asked of the driver with the stream's
     * context current. Fails (recorded, naming `function`) only when that
     * cannot be told: the work must not be queued then. Out of host memory is
     * not a failure here: the capture's end reports it. */
    cus_status (*keep)(cus_stream *stream, const cus_keep_item_ *items, unsigned int n,
                       const char *function);
    /* CUS_ERROR_NOT_SUPPORTED, naming `what`, when stream is being captured
     * (or when that cannot be told: the driver's error); else CUS_SUCCESS. */
    cus_status (*refuse_on)(cus_stream *stream, const char *function, const char *what);
    /* When stream is in a cuscope capture, hands mem (malloc'd) to the
     * graph, which frees it when it dies, and sets *adopted. Fails
     * (recorded, naming `function`) when the capture query failed; out of
     * host memory fails the capture's end. */
    cus_status (*adopt_memory)(cus_stream *stream, void *mem, bool *adopted,
                               const char *function);
    /* A destruction that queues work on stream (a stream-ordered free): when
     * a cuscope capture has the stream, the capture takes it and runs it
     * after its end, and this returns true; else false, and the caller runs
     * it. Asks nothing of the driver when the stream began the capture. */
    bool (*defer_to_end)(cus_stream *stream, cus_refcount *r, void *obj, cus_destroy_fn_ destroy);
} cus_capture_ops_;
CUS_HIDDEN extern cus_capture_ops_ cus_capture_ops;
/* Defines, for an object type T with T_ref/T_unref,
 *   cus_keep_item_ cus_capture_item_<name>_(T *obj): obj as a keep item, and
 *   cus_status cus_capture_keep_<name>_(stream, obj, function): keeps obj
 *     alive with the graph being captured on stream, if stream is in a
 *     cuscope capture (cus_capture_ops_.keep), before the work is queued.
 * One relaxed load while no capture is open. Each object's file defines its
 * own (capture.c keeps; the object's file knows how to hold one). */
#define CUS_DEFINE_CAPTURE_KEEP(name, T)                                       \
    static void *T##_keep_ref_(void *p) { return T##_ref((T *)p); }           \
    static void T##_keep_release_(void *p) { (void)T##_unref((T *)p); }       \
    cus_keep_item_ cus_capture_item_##name##_(T *obj)                          \
    {                                                                          \
        return (cus_keep_item_){obj, &obj->refs, T##_keep_ref_, T##_keep_release_}; \
    }                                                                          \
    cus_status cus_capture_keep_##name##_(cus_stream *stream, T *obj, const char *function) \
    {                                                                          \
        if (CUS_LIKELY(!cus_captures_open_()) || !obj)                         \
            return CUS_SUCCESS;                                                \
        cus_keep_item_ item = cus_capture_item_##name##_(obj);                 \
        return cus_capture_ops.keep(stream, &item, 1, function);               \
    }
/* The same for each kind of object, defined beside it (memory.c, module.c,
 * event.c: the file that knows how to hold one), so that capture.c calls no
 * object file above it but stream.c. */
CUS_HIDDEN cus_status cus_capture_keep_buffer_(cus_stream *stream, cus_buffer *buf,
                                               const char *function);
CUS_HIDDEN cus_status cus_capture_keep_module_(cus_stream *stream, cus_module *mod,
                                               const char *function);
CUS_HIDDEN cus_status cus_capture_keep_event_(cus_stream *stream, cus_event *ev,
                                              const char *function);
CUS_HIDDEN cus_keep_item_ cus_capture_item_buffer_(cus_buffer *buf);
/* Whether the capture `id` keeps the object whose count is refs already, as
 * far as can be told without a lock: the object's kept_by names it, or this
 * thread's memo of objects kept for a capture that found them held by
 * another (capture.c) has it. False may be wrong (then capture.c's keep
 * finds the object kept); true never is. */
#define CUS_CAPTURE_MEMO_ 16
typedef struct cus_capture_memo_entry_ {
    cuuint64_t id;
    const void *obj;
} cus_capture_memo_entry_;
CUS_HIDDEN extern _Thread_local cus_capture_memo_entry_ cus_capture_memo_[CUS_CAPTURE_MEMO_]
    __attribute__((tls_model("initial-exec")));
static inline size_t cus_pointer_hash_(const void *p)
{
    uint64_t x = (uint64_t)(uintptr_t)p; /* a murmur3 finalizer: heap addresses share low bits */
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (size_t)x;
}
static inline cus_capture_memo_entry_ *cus_capture_memo_of_(const void *obj)
{
    return &cus_capture_memo_[cus_pointer_hash_(obj) % CUS_CAPTURE_MEMO_];
}
static inline bool cus_capture_kept_(cuuint64_t id, cus_refcount *refs, const void *obj)
{
    if (atomic_load_explicit(&refs->kept_by, memory_order_acquire) == id)
        return true;
    const cus_capture_memo_entry_ *m = cus_capture_memo_of_(obj);
    return m->id == id && m->obj == obj;
}
/* A buffer's count (its first member, memory.c asserts), read inline by the
 * launch path, which has no buffer's layout. */
static inline cus_refcount *cus_buffer_refs_(cus_buffer *buf)
{
    return (cus_refcount *)(void *)buf;
}
CUS_HIDDEN cus_keep_item_ cus_capture_item_module_(cus_module *mod);
CUS_HIDDEN cus_keep_item_ cus_capture_item_event_(cus_event *ev);
static inline cus_status cus_capture_refuse_on_(cus_stream *stream, const char *function,
                                                const char *what)
{
    return cus_capture_ops.refuse_on(stream, function, what);
}
static inline cus_status cus_capture_adopt_memory_(cus_stream *stream, void *mem, bool *adopted,
                                                   const char *function)
{
    *adopted = false;
    if (CUS_LIKELY(!cus_captures_open_()))
        return CUS_SUCCESS;
    return cus_capture_ops.adopt_memory(stream, mem, adopted, function);
}
/* The buffers that the cus_launch macro's arguments named on this thread,
 * and the module, kept for the launch that follows (only filled while
 * captures are active; launch.c): one call into the capture for all. Fails
 * as cus_capture_ops_.keep does; the note is dropped either way. */
CUS_HIDDEN cus_status cus_capture_launch_args_(cus_stream *stream, cus_module *mod,
                                               const char *function);
CUS_HIDDEN extern _Thread_local unsigned int cus_pending_buffer_count_
    __attribute__((tls_model("initial-exec")));
CUS_HIDDEN void cus_pending_buffers_clear_(void);
/* Notes another object than a buffer that a cus_launch argument named (a
 * texture: cuscope/array.h), whose count is its first member, with how to
 * keep it; only while captures are active. */
CUS_HIDDEN void cus_launch_note_kept_(void *obj, cus_keep_item_ (*item)(void *obj));

/* --- buffers that other files make (memory.c) ----------------------------------
 * The buffers of pools (pool.c) are made by memory.c, which knows a buffer's
 * layout, through one constructor: `alloc` makes the driver call (named
 * driver_call in records) with ctx current, and the new buffer frees its
 * memory as its kind says (stream-ordered: cuMemFreeAsync on stream; else
 * cuMemFree). `parent` is an extra object the buffer holds: the reference
 * the caller passes in is the buffer's on success (released after the
 * buffer's memory is freed), and stays the caller's on failure. */
typedef CUresult (*cus_buffer_alloc_fn_)(CUdeviceptr *p, size_t bytes, void *arg);
typedef struct cus_buffer_parent_ {
    void *obj;               /* NULL: none */
    cus_release_fn_ release; /* drops the buffer's reference to obj */
} cus_buffer_parent_;
CUS_HIDDEN cus_status cus_buffer_new_(cus_context *ctx, cus_stream *stream, size_t bytes,
                                      cus_buffer_kind kind, const char *driver_call,
                                      cus_buffer_alloc_fn_ alloc, void *arg,
                                      cus_buffer_parent_ parent, cus_buffer **out,
                                      const char *function);
/* The buffer's extra parent (NULL: none). */
CUS_HIDDEN const void *cus_buffer_parent_of_(const cus_buffer *buf);

/* --- graphs (graph.c; made by cus_capture_end, instantiated in graph_exec.c) - */

struct cus_graph {
    cus_refcount refs;
    CUgraph handle;
    cus_context *ctx; /* a reference */
    keep_list keep;
    /* The driver does not synchronize a graph: cuscope serializes the calls
     * that read it (node count, instantiate) and change it (graph_nodes.c). */
    pthread_mutex_t lock;
    /* Which objects keep holds, once nodes are added by hand (graph_nodes.c):
     * an open-addressing set of pointers, so that each is kept once. */
    const void **kept_set;
    size_t kept_set_count, kept_set_capacity;
    /* A conditional node's body graph (graph_conditional.c): a reference to
     * the graph of its node, which owns the driver's graph (not destroyed
     * here); what its nodes use is kept, and its calls locked, by the root. */
    struct cus_graph *parent;
    /* The conditional handles made on this graph (its nodes' to use). */
    CUgraphConditionalHandle *cond_handles;
    size_t cond_count, cond_capacity;
    /* Captures open into this graph or its bodies (cus_capture_begin_to_graph,
     * capture.c), counted on the root under its lock: the driver writes the
     * graph from the capturing stream without it, so cuscope's own calls on
     * the graph are refused meanwhile (cus_graph_idle_locked_). */
    unsigned int captures_into;
    /* Child graph nodes whose own graphs were handed out as body graphs
     * (cus_graph_child_graph, graph_inspect.c), on the root: such a node is
     * never destroyed, or the bodies' handles would dangle. */
    CUgraphNode *lent;
    size_t lent_count, lent_capacity;
};

/* The first member of each host function record cuscope hands the driver as
 * a host node's or a host launch's userData, with its own trampoline as fn
 * (stream.c's launches and captures, graph_nodes.c's nodes):
 * cus_graph_host_node_fn reads the caller's function back through it. */
typedef struct cus_host_record_head_ {
    cus_host_fn fn;
    void *user_data;
} cus_host_record_head_;

/* A trampoline's call of h.fn on the driver's thread, marked so that cuscope
 * refuses calls and defers destructions made from inside it. */
static inline void cus_host_record_run_(cus_host_record_head_ h)
{
    bool outer = cus_in_host_fn_;
    cus_in_host_fn_ = true;
    h.fn(h.user_data);
    cus_in_host_fn_ = outer;
}

/* stream.c's trampoline, whose records start with a cus_host_record_head_. */
CUS_HIDDEN void CUDA_CB cus_stream_host_trampoline_(void *record);

/* Fills b (zeroed memory) as a body graph of parent whose driver graph h
 * belongs to a node of parent (a conditional node's body, a child graph
 * node's own graph): one reference, parent's context, and a reference to
 * parent, which keeps what the body's nodes use. Cannot fail. */
CUS_HIDDEN void cus_graph_body_init_(struct cus_graph *b, struct cus_graph *parent, CUgraph h);

/* What keeps g alive in another graph's keep list (a child graph, the
 * original of a clone): its release function tells such entries apart. */
CUS_HIDDEN cus_keep_item_ cus_graph_keep_item_(struct cus_graph *g);

/* CUS_ERROR_INVALID_ARGUMENT, recorded naming function, while a capture
 * writes into root (its lock held); else CUS_SUCCESS. */
static inline cus_status cus_graph_idle_locked_(const struct cus_graph *root, const char *function)
{
    if (CUS_LIKELY(!root->captures_into))
        return CUS_SUCCESS;
    return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL,
                     "the graph is being captured into (cus_capture_begin_to_graph): end the "
                     "capture first");
}

/* The graph that owns g's driver graph: g, or its body's outermost parent. */
static inline struct cus_graph *cus_graph_root_(struct cus_graph *g)
{
    while (g->parent)
        g = g->parent;
    return g;
}

/* Holds g's root lock to the end of the scope, and returns (recorded naming
 * function) while a capture writes into the graph: the start of every
 * cuscope call that reads or changes a graph's nodes. */
/* The graph a node value names (its root owns the lock): the graph is the
 * caller's, borrowed; the const of the value only says so. */
static inline cus_graph *cus_graph_of_node_(cus_graph_node node)
{
    return (cus_graph *)node.graph;
}

/* A public call's check of a node argument: a handle and its graph. */
#define CUS_CHECK_NODE_(node)                                                  \
    do {                                                                       \
        if (!(node).handle || !(node).graph)                                   \
            return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,                  \
                            "invalid argument: %s", (node).handle ? "a node without its graph" \
                                                                  : "no node"); \
    } while (0)

/* CUS_ERROR_NOT_SUPPORTED for a 12.3 edge-data entry point the loaded
 * driver lacks (graph_inspect.c), naming it and the version needed. */
CUS_HIDDEN cus_status cus_graph_edges_unsupported_(const char *entry, const char *function);

#define CUS_GRAPH_LOCK_IDLE_(g, function)                                      \
    CUS_LOCK_SCOPE(&cus_graph_root_(g)->lock);                                 \
    CUS_TRY(cus_graph_idle_locked_(cus_graph_root_(g), (function)))

/* graph_nodes.c's add, for the node types made elsewhere: add(node, graph,
 * deps, ndeps, arg) is the driver call (call in records), made with the
 * graph's context current under its root's lock; nothing is kept. */
typedef CUresult (*cus_graph_add_fn_)(CUgraphNode *node, CUgraph g, const CUgraphNode *deps,
                                      size_t ndeps, const void *arg);
CUS_HIDDEN cus_status cus_graph_add_raw_(struct cus_graph *g, const cus_graph_node *deps,
                                         size_t ndeps, cus_graph_node *out, const char *call,
                                         cus_graph_add_fn_ add, const void *arg,
                                         const char *function);
/* The same, keeping the n items' objects alive with the graph (each once,
 * room made before the driver call, so that a success cannot fail after). */
CUS_HIDDEN cus_status cus_graph_add_keeping_(struct cus_graph *g, const cus_graph_node *deps,
                                             size_t ndeps, cus_graph_node *out,
                                             const cus_keep_item_ *items, unsigned int n,
                                             const char *call, cus_graph_add_fn_ add,
                                             const void *arg, const char *function);
/* The driver wrote up to cap node handles at the start of out (a
 * cus_graph_node array, twice a handle's size per element: room for them
 * without a scratch array), n of them nodes: each becomes out[i] = {handle
 * i, g}, from the last one down, so that no handle is overwritten before it
 * is read; out[n..cap) become {NULL, NULL} (the driver's NULL handles). */
static inline void cus_graph_nodes_widen_(cus_graph_node *out, size_t n, size_t cap,
                                          const struct cus_graph *g)
{
    _Static_assert(sizeof(cus_graph_node) >= 2 * sizeof(CUgraphNode),
                   "a node value holds two handles' room");
    for (size_t i = n; i < cap; i++)
        out[i] = (cus_graph_node){NULL, NULL};
    for (size_t i = n; i-- > 0;) {
        CUgraphNode h;
        memcpy(&h, (const char *)out + i * sizeof h, sizeof h);
        out[i] = (cus_graph_node){h, g};
    }
}
/* The driver's handles of nodes[0..n), each a node of g (else
 * CUS_ERROR_INVALID_ARGUMENT naming it "<noun> i"): in inline_h when n fits
 * (CUS_GRAPH_INLINE_NODES_), else in *heap, which the caller frees. n 0:
 * *out NULL. Failures recorded naming function. */
#define CUS_GRAPH_INLINE_NODES_ 16
CUS_HIDDEN cus_status cus_graph_node_handles_(const struct cus_graph *g,
                                              const cus_graph_node *nodes, size_t n,
                                              const char *noun, CUgraphNode *inline_h,
                                              CUgraphNode **out, CUgraphNode **heap,
                                              const char *function);
/* Moves the references of `from` into root's keep list (root's lock held),
 * dropping those root holds already; from is left empty. False when out of
 * host memory: then nothing moved. */
CUS_HIDDEN bool cus_graph_keep_adopt_locked_(struct cus_graph *root, keep_list *from);
/* Room for n more references in root's keep list (its lock held), so that
 * an adopt of n cannot fail; false when out of host memory. */
CUS_HIDDEN bool cus_graph_keep_reserve_locked_(struct cus_graph *root, size_t n);

/* --- executable graphs (graph_exec.c) ---------------------------------------- */

/* A per-node update of e (graph_nodes.c): set(handle, arg) is the driver
 * call (driver_call in records), made with e's context current and its lock
 * held. On success the node uses the n items' objects: e takes a reference
 * to each (unless an earlier update of the node kept the same ones), and
 * what an earlier update made it use is released as soon as no replay can
 * use it (fenced as cus_graph_exec_update fences a replaced graph). On
 * failure nothing changes. n < 0: what the node uses does not change
 * (cuGraphNodeSetEnabled). A node of another graph than the one e replays
 * is CUS_ERROR_INVALID_ARGUMENT, a poisoned context its status, before any
 * driver call. */
CUS_HIDDEN cus_status cus_graph_exec_node_update_(cus_graph_exec *e, cus_graph_node node,
                                                  const cus_keep_item_ *items, int n,
                                                  const char *driver_call,
                                                  CUresult (*set)(CUgraphExec h, void *arg),
                                                  void *arg, const char *function);
/* e's context's handle: fixed for e's life (read without its lock). */
CUS_HIDDEN CUcontext cus_graph_exec_context_handle_(const cus_graph_exec *e);
/* A new executable graph of graph (graph_inspect.c's instantiation, and
 * cus_graph_instantiate's): inst(&h, graph's handle, arg) is the driver call
 * (driver_call in records), made with graph's context current under its
 * lock; the checks of cus_graph_instantiate (poison, a body graph) first. */
CUS_HIDDEN cus_status cus_graph_exec_instantiate_(struct cus_graph *graph, const char *driver_call,
                                                  CUresult (*inst)(CUgraphExec *h, CUgraph g,
                                                                   void *arg),
                                                  void *arg, cus_graph_exec **out,
                                                  const char *function);
/* A query of e (graph_inspect.c): call(handle, arg) under e's lock, with no
 * context made current (the driver needs none); a poisoned context, and a
 * node's graph (when graph is not NULL) other than the one e replays
 * (CUS_ERROR_INVALID_ARGUMENT), are refused before the call. */
CUS_HIDDEN cus_status cus_graph_exec_query_(cus_graph_exec *e, const struct cus_graph *graph,
                                            const char *driver_call,
                                            CUresult (*call)(CUgraphExec h, void *arg), void *arg,
                                            const char *function);

/* Runs `call` with ctx current (CUS_CALL_IN) and returns its status from the
 * enclosing function on failure. The _AS form names another function than the
 * enclosing one (a helper's public caller). */
#define CUS_IN_CONTEXT(ctx, name, call) CUS_TRY(CUS_CALL_IN(ctx, name, call))
#define CUS_IN_CONTEXT_AS(function, ctx, name, call)                           \
    CUS_TRY(CUS_CALL_IN_AS(function, ctx, name, call))

/* The same for a destructor: runs `call` with ctx current unless ctx is
 * poisoned, and sends any failure to the destroy handler. */
CUS_HIDDEN void cus_destroy_in_context_(cus_context *ctx, const char *function,
                                        const char *driver_call, CUresult (*call)(void *),
                                        void *arg, const char *what);
/* The same for a call that an open capture may refuse (cuMemFree,
 * cuMemFreeHost, cuMemHostUnregister, cuModuleUnload, cuGraphExecDestroy,
 * cuCtxSynchronize, cuMemFreeAsync outside a capture): made in relaxed
 * interaction mode, which no capture refuses (an H200's answers,
 * test/probes/probes.c, release-*), and which neither invalidates a capture
 * nor is recorded into one. Always, not only while a capture is open: a
 * capture may begin on another thread between a check and the call. */
CUS_HIDDEN void cus_destroy_in_context_relaxed_(cus_context *ctx, const char *function,
                                                const char *driver_call,
                                                CUresult (*call)(void *), void *arg,
                                                const char *what);
/* call(arg) in relaxed interaction mode, the thread's mode restored after;
 * a failed exchange goes to the destroy handler, naming function, and the
 * call is made in the thread's mode. For destructions. */
CUS_HIDDEN CUresult cus_call_relaxed_(CUresult (*call)(void *), void *arg, const char *function);
/* The same for a release the driver makes with any context current, or none
 * (the context-rule table, test/rules/expected.txt, says which): no switch. */
CUS_HIDDEN void cus_destroy_call_(cus_context *ctx, const char *function, const char *driver_call,
                                  CUresult (*call)(void *), void *arg, const char *what);

#endif
