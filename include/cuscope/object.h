/* cuscope/object.h: the ownership machinery shared by every object type.
 *
 * Every cuscope object is reference-counted. The contract (systemd's):
 *   T *cus_T_ref(T *p)    accepts NULL, returns p, adds one reference;
 *   T *cus_T_unref(T *p)  accepts NULL, drops one reference, always returns NULL,
 *                         so `p = cus_T_unref(p);` is idiomatic.
 * Both are thread-safe (C11 atomics); the last unref destroys the object on the
 * calling thread, with the object's context made current for the call and the
 * thread's previous context restored afterwards. In a fork() child of a
 * process that used the driver, the last unref frees cuscope's host memory
 * only, with no driver call (cuscope/driver.h).
 *
 * Scope helpers (GCC and clang; gated on __has_attribute(cleanup)):
 *   cus_autoptr(cus_context) ctx = NULL;   unref'd at scope exit
 *   return cus_steal(&ctx);                transfer ownership out of the scope
 *   CUS_TRY(cus_context_push(ctx));        return the status on failure
 * Rules (from the Linux kernel's cleanup.h): declare and initialise a cleanup
 * variable in one statement; cleanups run in reverse order of declaration;
 * never mix goto-unwinding and cleanup attributes in one function.
 */
#ifndef CUSCOPE_OBJECT_H
#define CUSCOPE_OBJECT_H

#include <stdbool.h>
#include <stddef.h>

/* Marks cuscope's public functions: exported from the library when it is
 * built, nothing for its users. */
#if defined(CUSCOPE_COMPILATION)
#define CUS_API __attribute__((visibility("default")))
#else
#define CUS_API
#endif

#ifdef __has_attribute
#if __has_attribute(cleanup)
#define CUS_HAVE_CLEANUP 1
#endif
#if __has_attribute(warn_unused_result)
#define CUS_MUST_CHECK __attribute__((warn_unused_result))
#endif
#endif
#ifndef CUS_MUST_CHECK
#define CUS_MUST_CHECK
#endif

/* Declares, for type T with unref function `unref`, the cleanup function that
 * cus_autoptr(T) uses. One line per object type, in that type's header. */
#define CUS_DEFINE_AUTOPTR(T, unref)                                           \
    static inline void T##_autoptr_cleanup_(T **p_)                            \
    {                                                                          \
        if (*p_)                                                               \
            (void)unref(*p_);                                                  \
    }

#ifdef CUS_HAVE_CLEANUP
/* A pointer to T that is unref'd when it goes out of scope. */
#define cus_autoptr(T) __attribute__((cleanup(T##_autoptr_cleanup_))) T *
#endif

#define CUS_CONCAT_(a, b) a##b
/* a and b pasted into one token, after their expansion. */
#define CUS_CONCAT(a, b) CUS_CONCAT_(a, b)
/* A unique identifier starting with prefix, for the macros' hidden
 * variables (`__COUNTER__`, or `__LINE__` where the compiler lacks it). */
#ifdef __COUNTER__
#define CUS_UNIQUE(prefix) CUS_CONCAT(prefix, __COUNTER__)
#else
#define CUS_UNIQUE(prefix) CUS_CONCAT(prefix, __LINE__)
#endif

/* Scoped guards, in two layers as in the kernel's include/linux/cleanup.h.
 * The definer, once per guard type T (a struct with a `status` member, the
 * enter's outcome): CUS_DEFINE_GUARD(T, exit, is_open) declares T_cleanup_,
 * which runs exit(&g) at scope exit when the expression is_open (over g_, a
 * T *) holds. The use-site forms, for a definer's T and an expression that
 * enters one (returns a T):
 *
 *     CUS_GUARD(T, name, enter);        name lives to the end of the block
 *     CUS_WITH_GUARD(T, st, enter) { }  the block runs only if st == 0; st
 *                                       receives the status; break leaves it
 */
#define CUS_DEFINE_GUARD(T, exit, is_open)                                     \
    static inline void T##_cleanup_(T *g_)                                     \
    {                                                                          \
        if (is_open)                                                           \
            exit(g_);                                                          \
    }
#ifdef CUS_HAVE_CLEANUP
/* Declares the guard `name` of type T, entered by the expression enter and
 * exited at the end of the block. The cleanup attribute follows the
 * declarator so that it binds to the guard alone (the kernel's scoped_guard
 * does the same). */
#define CUS_GUARD(T, name, enter) T name __attribute__((cleanup(T##_cleanup_))) = (enter)
/* Runs the block that follows inside a guard of type T entered by enter,
 * only if it entered; status_var receives the enter's status. */
#define CUS_WITH_GUARD(T, status_var, enter)                                   \
    CUS_WITH_GUARD_(T, status_var, enter, CUS_UNIQUE(cus_guard_), CUS_UNIQUE(cus_guard_done_))
#define CUS_WITH_GUARD_(T, status_var, enter, g, done)                         \
    for (T g __attribute__((cleanup(T##_cleanup_))) = (enter),                 \
           *done = ((status_var) = g.status, (T *)0);                          \
         !done && g.status == 0; done = &g)
#endif

static inline CUS_MUST_CHECK void *cus_steal_ptr_(void *pp)
{
    /* Copied as bytes: *pp is a T *, not a void * (strict aliasing). */
    void *v, *none = 0;
    __builtin_memcpy(&v, pp, sizeof v);
    __builtin_memcpy(pp, &none, sizeof none);
    return v;
}
/* Takes the pointer out of *pp (leaving NULL there) and returns it: the typed
 * ownership transfer out of a cus_autoptr scope. The result must be used
 * (gcc warns otherwise: a discarded steal is a leak). Uses `__typeof__`. */
#define cus_steal(pp) ((__typeof__(*(pp)))cus_steal_ptr_((pp)))

/* Evaluates expr (a cus_status) once and returns it from the enclosing
 * function if it is not CUS_SUCCESS. */
#define CUS_TRY(expr)                                                          \
    do {                                                                       \
        int cus_try_status_ = (expr);                                          \
        if (cus_try_status_ != 0)                                              \
            return cus_try_status_;                                            \
    } while (0)

#ifdef __cplusplus
extern "C" {
#endif

/* Diagnostics: the number of cuscope objects alive in this process (all
 * types). Tests assert it returns to zero. Thread-safe; the sum of per-thread
 * counts, so exact when no object is made or released meanwhile (after the
 * threads that did have been joined, say), and only approximate while other
 * threads make and release objects. */
CUS_API size_t cus_debug_live_objects(void);

/* Diagnostics for tests of the out-of-host-memory paths: makes cuscope's own
 * host allocations (its objects, lists, logs; not the driver's) fail, so that
 * the calls making them return CUS_ERROR_OUT_OF_HOST_MEMORY. Counts from this
 * call: the nth allocation made from now on, in any thread, fails (1: the
 * next); with `persistent`, every one after it fails too. nth 0 disarms and
 * resets the counters. Armed with ULONG_MAX it only counts. Every failure
 * returns CUS_ERROR_OUT_OF_HOST_MEMORY from the call that allocated, or, in
 * a release, goes to the destroy handler, unless cuscope absorbs it by
 * design (cus_debug_host_alloc_absorbed). Thread-safe; arming is not ordered
 * against allocations already under way in other threads. */
CUS_API void cus_debug_fail_host_alloc(unsigned long nth, bool persistent);
/* The allocations made since the last cus_debug_fail_host_alloc() while
 * armed. Thread-safe. */
CUS_API unsigned long cus_debug_host_allocs(void);
/* How many of those allocations were failed. Thread-safe. */
CUS_API unsigned long cus_debug_host_alloc_faults(void);
/* How many times cuscope absorbed such a failure by design and went on (a
 * cache entry not made, a fallback taken: the call succeeds). Thread-safe. */
CUS_API unsigned long cus_debug_host_alloc_absorbed(void);

/* Host functions (cuLaunchHostFunc callbacks) run on a thread the driver owns
 * and must not call CUDA. Dropping a last reference there defers the object's
 * destruction (which needs the driver): cus_release_deferred() runs the
 * deferred ones on the calling thread and returns how many (0, doing nothing,
 * when called inside a host function); cuscope also runs them at its next
 * synchronizing call. Open stream captures (cuscope/graph.h) defer nothing
 * but one kind: what a graph being captured uses it keeps alive by
 * references, and the releases that a capture would refuse (cuMemFree,
 * cuModuleUnload, cuGraphExecDestroy and the like) are made in relaxed
 * capture interaction mode, which neither invalidates a capture nor is
 * recorded into one. The one kind: a stream-ordered buffer released while
 * its stream is in a cuscope capture, whose cuMemFreeAsync would become a
 * node of the graph; that capture's end frees it. In a fork() child it
 * returns 0: what the parent deferred stays unreleased there. Thread-safe. */
CUS_API unsigned int cus_release_deferred(void);

/* Whether the calling thread is running a host function queued by cuscope. */
CUS_API bool cus_in_host_fn(void);

#ifdef __cplusplus
}
#endif

#endif
