/* Object bookkeeping: destructions deferred out of host functions (capture.c
 * defers stream-ordered frees on a capturing stream itself). The count of
 * live objects, which cus_driver_install() checks too, is live.c's. */
#include <pthread.h>

#include "internal.h"

_Thread_local bool cus_in_host_fn_ __attribute__((tls_model("initial-exec")));
atomic_bool cus_deferred_pending_;
atomic_int cus_captures_active_;

/* Context-wide waits in flight that no capture may begin during (internal.h,
 * cus_context_wait_hold_); the lock and condition only for a begin that
 * must wait, and for the release of a hold that may have a begin waiting. */
static atomic_int context_waits;
static pthread_mutex_t context_waits_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t context_waits_done = PTHREAD_COND_INITIALIZER;

bool cus_context_wait_hold_(void)
{
    atomic_fetch_add_explicit(&context_waits, 1, memory_order_seq_cst);
    if (!atomic_load_explicit(&cus_captures_active_, memory_order_seq_cst))
        return true;
    cus_context_wait_release_();
    return false;
}

void cus_context_wait_release_(void)
{
    pthread_mutex_lock(&context_waits_lock);
    if (atomic_fetch_sub_explicit(&context_waits, 1, memory_order_seq_cst) == 1)
        pthread_cond_broadcast(&context_waits_done);
    pthread_mutex_unlock(&context_waits_lock);
}

void cus_capture_begin_wait_(void)
{
    if (CUS_LIKELY(!atomic_load_explicit(&context_waits, memory_order_seq_cst)))
        return;
    pthread_mutex_lock(&context_waits_lock);
    while (atomic_load_explicit(&context_waits, memory_order_seq_cst))
        pthread_cond_wait(&context_waits_done, &context_waits_lock);
    pthread_mutex_unlock(&context_waits_lock);
}

/* The do-nothing capture operations, right while no capture can be open:
 * capture.c's constructor replaces them (internal.h, cus_capture_ops_). */
static cus_status keep_none(cus_stream *stream, const cus_keep_item_ *items, unsigned int n,
                            const char *function)
{
    (void)stream, (void)items, (void)n, (void)function;
    return CUS_SUCCESS;
}
static cus_status refuse_none(cus_stream *stream, const char *function, const char *what)
{
    (void)stream, (void)function, (void)what;
    return CUS_SUCCESS;
}
static cus_status adopt_none(cus_stream *stream, void *mem, bool *adopted, const char *function)
{
    (void)stream, (void)mem, (void)function;
    *adopted = false;
    return CUS_SUCCESS;
}
static bool defer_none(cus_stream *stream, cus_refcount *r, void *obj, cus_destroy_fn_ destroy)
{
    (void)stream, (void)r, (void)obj, (void)destroy;
    return false;
}
cus_capture_ops_ cus_capture_ops = {keep_none, refuse_none, adopt_none, defer_none};

static pthread_mutex_t deferred_lock = PTHREAD_MUTEX_INITIALIZER;
static cus_refcount *deferred_head;

/* Out of line and cold: see cus_refcount_inc_. The count is parked in the
 * middle of the saturated range, so that later references and releases on
 * the object stay there, and are silent. */
void cus_refcount_bad_(cus_refcount *r, unsigned int old, bool taking)
{
    atomic_store_explicit(&r->count, CUS_REFCOUNT_PARKED_, memory_order_relaxed);
    if (old > CUS_REFCOUNT_SATURATED_)
        return; /* parked already: reported when it saturated */
    if (old == CUS_REFCOUNT_SATURATED_)
        cus_destroy_error_(CUS_ERROR_INVALID_ARGUMENT, taking ? "cus_*_ref" : "cus_*_unref", NULL,
                           "object %p: its reference count overflowed; it is kept for the rest "
                           "of the process", (void *)r);
    else if (taking)
        cus_destroy_error_(CUS_ERROR_INVALID_ARGUMENT, "cus_*_ref", NULL,
                           "object %p: a reference taken after its last one was released (its "
                           "destruction is under way or deferred); it will not be freed twice, "
                           "and leaks", (void *)r);
    else
        cus_destroy_error_(CUS_ERROR_INVALID_ARGUMENT, "cus_*_unref", NULL,
                           "object %p: more references released than were taken; it will not "
                           "be freed twice, and leaks", (void *)r);
}

_Thread_local unsigned int cus_destroy_depth_ __attribute__((tls_model("initial-exec")));

/* A destruction's failures go to the destroy handler; while one runs, the
 * thread's last error is left alone (cus_fail_ records nothing), so that a
 * release in a cleanup never overwrites the error being returned. Cheaper
 * than saving and restoring the 1 KiB record around every destruction. */
void cus_run_destroy_(void *obj, cus_destroy_fn_ destroy)
{
    cus_destroy_depth_++;
    destroy(obj);
    cus_object_freed_();
    cus_destroy_depth_--;
}

void cus_defer_destroy_(cus_refcount *r, void *obj, cus_destroy_fn_ destroy)
{
    if (CUS_UNLIKELY(cus_is_forked_())) {
        /* A fork() child: destructions make no driver call, so nothing needs
         * deferring, and nothing would run the list (cus_release_deferred
         * refuses there). */
        cus_run_destroy_(obj, destroy);
        return;
    }
    r->deferred_obj = obj;
    r->deferred_destroy = destroy;
    pthread_mutex_lock(&deferred_lock);
    r->deferred_next = deferred_head;
    deferred_head = r;
    atomic_store_explicit(&cus_deferred_pending_, true, memory_order_relaxed);
    pthread_mutex_unlock(&deferred_lock);
}

CUS_API unsigned int cus_release_deferred(void)
{
    /* Not on a driver thread. Open captures do not matter: a release that a
     * capture would refuse is made in relaxed mode (cus_destroy_in_context_). */
    if (cus_in_host_fn_ || cus_is_forked_())
        return 0;
    pthread_mutex_lock(&deferred_lock);
    cus_refcount *list = deferred_head;
    deferred_head = NULL;
    atomic_store_explicit(&cus_deferred_pending_, false, memory_order_relaxed);
    pthread_mutex_unlock(&deferred_lock);
    unsigned int n = 0;
    while (list) {
        cus_refcount *next = list->deferred_next;
        /* A reference taken while the destruction waited parked the count
         * (cus_refcount_bad_, reported then): whoever took it may use the
         * object, so it is kept, and leaks, rather than freed under them. */
        if (CUS_LIKELY(atomic_load_explicit(&list->count, memory_order_relaxed) == 0)) {
            cus_run_destroy_(list->deferred_obj, list->deferred_destroy);
            n++;
        }
        list = next;
    }
    return n;
}

CUS_API bool cus_in_host_fn(void)
{
    return cus_in_host_fn_;
}

/* fork.c's child hook (fork.c registers it): a parent thread may have held a lock at fork time. In a forked
 * child the destructions deferred in the parent are dropped, not run: the
 * list may be mid-update, and its objects stay reachable from it. */
void cus_object_atfork_child_(bool forked)
{
    pthread_mutex_init(&deferred_lock, NULL);
    pthread_mutex_init(&context_waits_lock, NULL);
    pthread_cond_init(&context_waits_done, NULL);
    if (forked) {
        atomic_store_explicit(&cus_deferred_pending_, false, memory_order_relaxed);
        /* the waits of the parent's other threads: not in this process */
        atomic_store_explicit(&context_waits, 0, memory_order_relaxed);
    }
}
