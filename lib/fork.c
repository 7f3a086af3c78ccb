/* fork(): CUDA does not survive it. In the child of a process that called
 * into a driver, every cuscope call that could reach the driver fails with
 * CUS_ERROR_FORKED without a driver call, and the last release of an object
 * frees cuscope's host memory only (cuscope/driver.h states the rule).
 *
 * The handler is registered by a library constructor, not at the first
 * driver load, for two reasons:
 *  - the child handler also repairs cuscope's own locks (a parent thread may
 *    have held one at fork time: the loader's lock is held for the whole
 *    first load, resolver calls included), and that repair is needed in the
 *    child of a fork that raced the first load too, before any registration
 *    at load time could have happened;
 *  - it marks the child as forked only if the parent had called into a
 *    driver (the loader's "before the first driver call" hook, set here,
 *    runs just before the first resolver call), so a process that forks its
 *    workers before using CUDA (the usual pattern) still gets children that
 *    load the driver normally.
 * If pthread_atfork fails in the constructor (ENOMEM), the first load tries
 * again (the loader's "before loading" hook) and fails with
 * CUS_ERROR_OUT_OF_HOST_MEMORY rather than run without the handler. No prepare or parent handler: locking cuscope's locks around
 * fork() could deadlock a fork() made while one is held on the same thread's
 * behalf (a destroy handler, a resolver), and nothing in the parent changes.
 *
 * Layering: fork.c sits above the bottom (error.c, host_alloc.c, object.c)
 * and the driver table (driver/loader.c), and below every object file. It
 * calls down only: it sets the loader's hooks (driver/driver.h) and registers
 * the child hooks of the files below it, which cannot call up to register
 * themselves. The files above register theirs from their own constructors
 * (cus_fork_register_child_hook_). cus_forked_ and cus_refuse_call_, which
 * the loader and everyone read, live in error.c, at the bottom. */
#include <pthread.h>

#include "internal.h"

/* Set once cuscope has called into a driver (a resolver, libcuda): from then
 * on the process is one "that used the CUDA driver". */
static atomic_bool driver_used;
static atomic_bool handler_registered;

/* The child hooks. Order does not matter: each hook re-initialises its own
 * file's locks and drops its own file's state, takes no lock and calls into
 * no other file, and cus_forked_ is set before any runs (they also get
 * `forked` as their argument). So they run in registration order, which is
 * the (unspecified) order of the library's constructors. Registration runs
 * in constructors, before any thread of the library's can fork; the count is
 * published with release so that a racing handler sees whole entries only. */
#define CHILD_HOOKS_MAX 16
static cus_fork_child_hook_ child_hooks[CHILD_HOOKS_MAX];
static atomic_uint child_hook_count;

void cus_fork_register_child_hook_(cus_fork_child_hook_ fn)
{
    unsigned int n = atomic_load_explicit(&child_hook_count, memory_order_relaxed);
    if (n >= CHILD_HOOKS_MAX)
        abort(); /* a build with a new hook and too small an array: a bug */
    child_hooks[n] = fn;
    atomic_store_explicit(&child_hook_count, n + 1, memory_order_release);
}

static void atfork_child(void)
{
    /* The child runs only the thread that called fork(), so plain stores
     * are enough; relaxed atomics keep TSan and the readers happy. */
    bool forked = atomic_load_explicit(&driver_used, memory_order_relaxed);
    if (forked)
        atomic_store_explicit(&cus_forked_, true, memory_order_relaxed);
    unsigned int n = atomic_load_explicit(&child_hook_count, memory_order_acquire);
    for (unsigned int i = 0; i < n; i++)
        child_hooks[i](forked);
}

/* The loader's "before loading" hook: registers the atfork handler if the
 * library constructor could not; CUS_ERROR_OUT_OF_HOST_MEMORY (recorded for
 * cus_init) on failure. Under loader.c's lock. */
static int ensure_handler(void)
{
    if (CUS_LIKELY(atomic_load_explicit(&handler_registered, memory_order_relaxed)))
        return CUS_SUCCESS;
    if (pthread_atfork(NULL, NULL, atfork_child) != 0)
        return cus_fail_(CUS_ERROR_OUT_OF_HOST_MEMORY, "cus_init", NULL,
                         "cannot register the fork() child handler (pthread_atfork): without "
                         "it a fork() child could reach the parent's driver state");
    atomic_store_explicit(&handler_registered, true, memory_order_relaxed);
    return CUS_SUCCESS;
}

/* The loader's "before the first driver call" hook: from then on a fork()
 * child is a CUDA-less process. */
static void note_driver_used(void)
{
    atomic_store_explicit(&driver_used, true, memory_order_relaxed);
}

__attribute__((constructor)) static void register_atfork(void)
{
    static const cus_driver_hooks_ loader_hooks = {
        .before_load = ensure_handler,
        .before_first_call = note_driver_used,
    };
    cus_driver_set_hooks_(&loader_hooks);
    /* The files below this one cannot call up to register their share. */
    cus_fork_register_child_hook_(cus_loader_atfork_child_);
    cus_fork_register_child_hook_(cus_error_atfork_child_);
    cus_fork_register_child_hook_(cus_object_atfork_child_);
    if (pthread_atfork(NULL, NULL, atfork_child) == 0)
        atomic_store_explicit(&handler_registered, true, memory_order_relaxed);
}
