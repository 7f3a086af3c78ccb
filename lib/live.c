/* The count of live cuscope objects (cus_debug_live_objects), kept per
 * thread and summed when read.
 *
 * Every creation adds 1 and every destruction takes 1 away, on whatever
 * thread runs it. One process-wide atomic took a locked read-modify-write of
 * one line on each of them, from every thread, and that line also held what
 * every call reads (whether a capture is open, whether destructions wait):
 * threads allocating and freeing at once evicted it from each other's caches
 * on every object. Here each thread adds to a shard of its own with a plain
 * load and store (atomics, so that a reader may load them at any time), on a
 * line of its own. A thread's shard may go below zero (it released objects
 * other threads made): the counts are modulo 2^N, and so is their sum.
 *
 * A shard is never freed: the list of them only grows, by a compare-and-swap
 * at its head, so a reader walks it without a lock, and a fork() child
 * inherits it whole (no lock to re-initialise). A thread that exits gives its
 * shard up, count and all, and the next new thread takes it over: the shards
 * are as many as the threads that ever ran at once. A thread without one (its
 * allocation failed, or its shard already given up in its own exit) adds to
 * `unsharded`, with a locked add. */
#include <pthread.h>

#include "internal.h"

_Thread_local cus_live_shard_ *cus_live_mine_ __attribute__((tls_model("initial-exec")));

static _Atomic(cus_live_shard_ *) shards;
static _Alignas(CUS_CACHE_LINE_) atomic_size_t unsharded;
static _Thread_local bool gave_up; /* this thread's exit gave its shard up */

static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;
static int exit_key_error;

/* The key's destructor, at the thread's exit: the shard goes back, its count
 * in it (the release orders this thread's last stores before the next
 * owner's first). Destructions that run after this one in the thread's exit
 * (other keys' destructors: the context stack's references) add to
 * `unsharded`. */
static void thread_exit(void *p)
{
    cus_live_shard_ *s = p;
    cus_live_mine_ = NULL;
    gave_up = true;
    atomic_store_explicit(&s->taken, false, memory_order_release);
}

static void make_key(void)
{
    exit_key_error = pthread_key_create(&exit_key, thread_exit);
}

/* A shard for the calling thread: one given up by a thread that exited, else
 * a new one; NULL when none can be had. */
static cus_live_shard_ *claim(void)
{
    for (cus_live_shard_ *s = atomic_load_explicit(&shards, memory_order_acquire); s;
         s = s->next) {
        bool free_ = false;
        if (!atomic_load_explicit(&s->taken, memory_order_relaxed) &&
            atomic_compare_exchange_strong_explicit(&s->taken, &free_, true,
                                                    memory_order_acquire, memory_order_relaxed))
            return s;
    }
    cus_live_shard_ *s = cus_calloc_lines_(sizeof *s);
    if (!s) {
        cus_host_alloc_absorbed_(); /* the count goes to `unsharded` */
        return NULL;
    }
    atomic_init(&s->count, 0);
    atomic_init(&s->taken, true);
    s->next = atomic_load_explicit(&shards, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(&shards, &s->next, s, memory_order_release,
                                                  memory_order_relaxed))
        ;
    return s;
}

void cus_live_add_slow_(size_t delta)
{
    cus_live_shard_ *s = NULL;
    if (!gave_up) {
        pthread_once(&exit_key_once, make_key);
        if (!exit_key_error && (s = claim()) && pthread_setspecific(exit_key, s)) {
            /* nothing would give it back at the thread's exit */
            atomic_store_explicit(&s->taken, false, memory_order_release);
            s = NULL;
        }
    }
    if (!s) {
        atomic_fetch_add_explicit(&unsharded, delta, memory_order_relaxed);
        return;
    }
    cus_live_mine_ = s;
    cus_live_add_(delta);
}

CUS_API size_t cus_debug_live_objects(void)
{
    size_t n = atomic_load_explicit(&unsharded, memory_order_relaxed);
    for (const cus_live_shard_ *s = atomic_load_explicit(&shards, memory_order_acquire); s;
         s = s->next)
        n += atomic_load_explicit(&s->count, memory_order_relaxed);
    return n;
}
