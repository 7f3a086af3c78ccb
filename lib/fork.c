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
 *    driver (cus_fork_note_driver_used_, set just before the first resolver
 *    call), so a process that forks its workers before using CUDA (the usual
 *    pattern) still gets children that load the driver normally.
 * If pthread_atfork fails in the constructor (ENOMEM), the first load tries
 * again and fails with CUS_ERROR_OUT_OF_HOST_MEMORY rather than run without
 * the handler. No prepare or parent handler: locking cuscope's locks around
 * fork() could deadlock a fork() made while one is held on the same thread's
 * behalf (a destroy handler, a resolver), and nothing in the parent changes. */
#include <pthread.h>

#include "internal.h"

atomic_bool cus_forked_;
/* Set once cuscope has called into a driver (a resolver, libcuda): from then
 * on the process is one "that used the CUDA driver". */
static atomic_bool driver_used;
static atomic_bool handler_registered;

static void atfork_child(void)
{
    /* The child runs only the thread that called fork(), so plain stores
     * are enough; relaxed atomics keep TSan and the readers happy. */
    bool forked = atomic_load_explicit(&driver_used, memory_order_relaxed);
    if (forked) {
        atomic_store_explicit(&cus_forked_, true, memory_order_relaxed);
        /* The launch fast path compares a function's context with this
         * cached top, and goes to the driver on a match: cleared, no thread
         * of the child can match (a new thread's is NULL, and every call
         * that could set it fails), so every launch takes the slow path,
         * which checks cus_forked_. The launch path pays nothing for fork. */
        cus_tls_top_ = NULL;
    }
    cus_loader_atfork_child_(forked);
    cus_error_atfork_child_();
    cus_object_atfork_child_(forked);
    cus_graph_atfork_child_(forked);
}

__attribute__((constructor)) static void register_atfork(void)
{
    if (pthread_atfork(NULL, NULL, atfork_child) == 0)
        atomic_store_explicit(&handler_registered, true, memory_order_relaxed);
}

cus_status cus_fork_ensure_handler_(void)
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

void cus_fork_note_driver_used_(void)
{
    atomic_store_explicit(&driver_used, true, memory_order_relaxed);
}

__attribute__((noinline, cold)) cus_status cus_refuse_call_(const char *function)
{
    if (cus_is_forked_())
        return cus_fail_(CUS_ERROR_FORKED, function, NULL,
                         "this process is a fork() child of a process that used the CUDA "
                         "driver, and CUDA does not survive fork(): no driver call was made. "
                         "Release the objects inherited from the parent (that frees host memory "
                         "only), and use CUDA in the parent, or in a process started with exec()");
    return cus_fail_(CUS_ERROR_IN_HOST_FUNCTION, function, NULL,
                     "host functions run on a driver thread and must not call CUDA or cuscope; "
                     "no driver call was made");
}
