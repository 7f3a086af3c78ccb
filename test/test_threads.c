/* Threads: concurrent loading, per-thread stacks over shared contexts,
 * contexts destroyed while current elsewhere, thread exit with contexts
 * pushed, concurrent reference counting, and the live count across threads. Runs under TSan in CI.
 *
 * Worker threads never call cmocka's asserts (they longjmp into the main
 * thread's test): they record failures in their own struct, which the main
 * thread checks after pthread_join. Synchronisation is by mutex and condition
 * variable only, never by sleeping. */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <cudaTypedefs.h>

#include "harness/env.h"
#include "harness/check.h"
#include "harness/workers.h"

#define N_THREADS 8

/* A gate that opens when `count` threads have arrived (all start together). */
typedef struct gate {
    phase p;
    int arrived, count;
} gate;

static void gate_init(gate *g, int count)
{
    phase_init(&g->p);
    g->arrived = 0;
    g->count = count;
}

static void gate_arrive_and_wait(gate *g)
{
    pthread_mutex_lock(&g->p.lock);
    if (++g->arrived == g->count) {
        g->p.value = 1;
        pthread_cond_broadcast(&g->p.changed);
    }
    while (g->p.value < 1)
        pthread_cond_wait(&g->p.changed, &g->p.lock);
    pthread_mutex_unlock(&g->p.lock);
}

static void assert_nothing_alive(void)
{
    assert_int_equal(cus_debug_live_objects(), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
    assert_int_equal(cus_fake_primary_retain_count(0), 0);
    if (cus_fake_misuse_count())
        fail_msg("fake driver misuse: %s", cus_fake_last_misuse());
}

static cus_device dev0(void)
{
    cus_device d = {-1};
    assert_ok(cus_device_get(0, &d));
    return d;
}

/* --- (1) concurrent cus_init on a fresh install --------------------------------- */

typedef struct init_worker {
    pthread_t thread;
    gate *start;
    cus_status status;
    bool has_init;
} init_worker;

static void *init_main(void *arg)
{
    init_worker *w = arg;
    gate_arrive_and_wait(w->start);
    w->status = cus_init();
    w->has_init = cus_driver_has("cuInit");
    return NULL;
}

static void test_concurrent_init_loads_exactly_once(void **state)
{
    (void)state;
    assert_int_equal(cus_fake_call_count(), 0); /* a fresh install, not loaded */
    gate start;
    gate_init(&start, N_THREADS);
    init_worker w[N_THREADS];
    memset(w, 0, sizeof w);
    for (int i = 0; i < N_THREADS; i++) {
        w[i].start = &start;
        w[i].status = -1;
        assert_int_equal(pthread_create(&w[i].thread, NULL, init_main, &w[i]), 0);
    }
    for (int i = 0; i < N_THREADS; i++)
        assert_int_equal(pthread_join(w[i].thread, NULL), 0);
    phase_destroy(&start.p);
    for (int i = 0; i < N_THREADS; i++) {
        if (w[i].status != CUS_SUCCESS)
            fail_msg("thread %d: cus_init -> %s", i, cus_status_name(w[i].status));
        assert_true(w[i].has_init);
    }
    assert_int_equal(cus_fake_calls_of("cuInit"), 1);
    assert_int_equal(cus_fake_calls_of("cuDriverGetVersion"), 1);
    assert_int_equal(cus_fake_calls_of("cuDeviceGetCount"), 1);
}

/* --- (2) shared contexts pushed and popped on many threads ---------------------- */

#define PUSH_POP_ROUNDS 1000

typedef struct stack_worker {
    pthread_t thread;
    gate *start;
    cus_context *primary, *created;
    report r;
} stack_worker;

/* Both views of this thread's stack: depth and top. */
static void check_stack(report *r, unsigned int depth, const cus_context *top)
{
    T_CHECK(r, cus_context_stack_depth() == depth);
    T_CHECK(r, cus_fake_thread_stack_depth() == (int)depth);
    T_CHECK(r, cus_context_current() == top);
    if (depth)
        T_CHECK(r, cus_fake_thread_stack_at((int)depth - 1) == cus_context_handle(top));
}

static void *stack_main(void *arg)
{
    stack_worker *w = arg;
    report *r = &w->r;
    gate_arrive_and_wait(w->start);
    check_stack(r, 0, NULL);
    for (int i = 0; i < PUSH_POP_ROUNDS && !r->failures; i++) {
        /* A guard. */
        {
            cus_context_scope(g, w->primary);
            T_CHECK(r, g.status == CUS_SUCCESS);
            check_stack(r, 1, w->primary);
            /* A nested guard on the one already current costs nothing. */
            {
                cus_context_scope(g2, w->primary);
                T_CHECK(r, g2.status == CUS_SUCCESS);
                T_CHECK(r, g2.ctx == NULL);
                check_stack(r, 1, w->primary);
            }
            check_stack(r, 1, w->primary);
        }
        check_stack(r, 0, NULL);

        /* Explicit push and pop, two deep. */
        T_CHECK(r, cus_context_push(w->created) == CUS_SUCCESS);
        check_stack(r, 1, w->created);
        T_CHECK(r, cus_context_push(w->primary) == CUS_SUCCESS);
        check_stack(r, 2, w->primary);
        /* A call on the context below the top switches and comes back. */
        T_CHECK(r, cus_context_synchronize(w->created) == CUS_SUCCESS);
        check_stack(r, 2, w->primary);
        cus_context *popped = NULL;
        T_CHECK(r, cus_context_pop(&popped) == CUS_SUCCESS);
        T_CHECK(r, popped == w->primary);
        popped = cus_context_unref(popped);
        check_stack(r, 1, w->created);

        /* A block guard on another context inside. */
        cus_status st = -1;
        int ran = 0;
        cus_with_context(w->primary, st)
        {
            ran++;
            check_stack(r, 2, w->primary);
        }
        T_CHECK(r, st == CUS_SUCCESS);
        T_CHECK(r, ran == 1);
        check_stack(r, 1, w->created);

        T_CHECK(r, cus_context_pop(NULL) == CUS_SUCCESS);
        check_stack(r, 0, NULL);
    }
    return NULL;
}

static void test_threads_push_and_pop_shared_contexts_independently(void **state)
{
    (void)state;
    cus_context *primary = NULL, *created = NULL;
    assert_ok(cus_context_retain_primary(dev0(), &primary));
    assert_ok(cus_context_create(dev0(), CUS_CTX_NO_PUSH, &created));
    gate start;
    gate_init(&start, N_THREADS);
    stack_worker w[N_THREADS];
    memset(w, 0, sizeof w);
    for (int i = 0; i < N_THREADS; i++) {
        w[i].start = &start;
        w[i].primary = primary;
        w[i].created = created;
        assert_int_equal(pthread_create(&w[i].thread, NULL, stack_main, &w[i]), 0);
    }
    for (int i = 0; i < N_THREADS; i++)
        assert_int_equal(pthread_join(w[i].thread, NULL), 0);
    phase_destroy(&start.p);
    for (int i = 0; i < N_THREADS; i++)
        assert_report_clean(&w[i].r, i);
    assert_int_equal(cus_context_stack_depth(), 0); /* the main thread's stack is its own */
    assert_int_equal(env_destroyed.count, 0);
    assert_int_equal(cus_fake_primary_retain_count(0), 1);
    assert_int_equal(cus_debug_live_objects(), 2); /* only main's references are left */
    primary = cus_context_unref(primary);
    created = cus_context_unref(created);
    assert_nothing_alive();
}

/* --- (3) driver level: a context destroyed while current on another thread ------ */

typedef struct raw_worker {
    pthread_t thread;
    phase *ph;
    CUcontext handle;
    PFN_cuCtxPushCurrent_v4000 push;
    PFN_cuCtxPopCurrent_v4000 pop;
    PFN_cuCtxGetCurrent_v4000 get_current;
    PFN_cuCtxSynchronize_v2000 synchronize;
    CUresult sync_before, sync_after, get_current_result, pop_result;
    CUcontext current_after, popped;
    int depth_after_pop;
    report r;
} raw_worker;

static void *raw_main(void *arg)
{
    raw_worker *w = arg;
    T_CHECK(&w->r, w->push(w->handle) == CUDA_SUCCESS);
    w->sync_before = w->synchronize();
    phase_set(w->ph, 1); /* pushed: main may destroy now */
    phase_wait(w->ph, 2);
    w->sync_after = w->synchronize();
    w->get_current_result = w->get_current(&w->current_after);
    w->pop_result = w->pop(&w->popped);
    w->depth_after_pop = cus_fake_thread_stack_depth();
    return NULL;
}

static void test_raw_destroy_while_current_elsewhere_gives_709_and_still_pops(void **state)
{
    (void)state;
    assert_ok(cus_init());
    PFN_cuCtxCreate_v3020 create;
    PFN_cuCtxDestroy_v4000 destroy;
    raw_worker w;
    memset(&w, 0, sizeof w);
    RAW_OR_NULL(create, "cuCtxCreate", 3020);
    RAW_OR_NULL(destroy, "cuCtxDestroy", 4000);
    RAW_OR_NULL(w.push, "cuCtxPushCurrent", 4000);
    RAW_OR_NULL(w.pop, "cuCtxPopCurrent", 4000);
    RAW_OR_NULL(w.get_current, "cuCtxGetCurrent", 4000);
    RAW_OR_NULL(w.synchronize, "cuCtxSynchronize", 2000);
    assert_non_null(create);
    assert_non_null(w.pop);

    /* Created (and pushed) here, then taken off this thread's stack. */
    assert_int_equal(create(&w.handle, 0, 0), CUDA_SUCCESS);
    CUcontext got = NULL;
    assert_int_equal(w.pop(&got), CUDA_SUCCESS);
    assert_ptr_equal(got, w.handle);

    phase ph;
    phase_init(&ph);
    w.ph = &ph;
    assert_int_equal(pthread_create(&w.thread, NULL, raw_main, &w), 0);
    phase_wait(&ph, 1);
    assert_int_equal(destroy(w.handle), CUDA_SUCCESS); /* current on the other thread */
    assert_int_equal(cus_fake_thread_stack_depth(), 0); /* this thread's stack untouched */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_CONTEXT), 0);
    phase_set(&ph, 2);
    assert_int_equal(pthread_join(w.thread, NULL), 0);
    phase_destroy(&ph);

    assert_report_clean(&w.r, 0);
    assert_int_equal(w.sync_before, CUDA_SUCCESS);
    assert_int_equal(w.sync_after, CUDA_ERROR_CONTEXT_IS_DESTROYED);
    assert_int_equal(w.get_current_result, CUDA_SUCCESS);
    assert_ptr_equal(w.current_after, w.handle); /* still its current context */
    assert_int_equal(w.pop_result, CUDA_SUCCESS);
    assert_ptr_equal(w.popped, w.handle);
    assert_int_equal(w.depth_after_pop, 0);
    assert_int_equal(cus_fake_misuse_count(), 0);
}

/* --- (4) cuscope level: the stack's reference keeps the context alive ----------- */

typedef struct holder_worker {
    pthread_t thread;
    phase *ph;
    cus_context *ctx;
    cus_status push_status, sync_status, pop_status;
    size_t live_before_pop, live_after_pop;
    size_t objects_after_pop;
} holder_worker;

static void *holder_main(void *arg)
{
    holder_worker *w = arg;
    w->push_status = cus_context_push(w->ctx);
    phase_set(w->ph, 1);
    phase_wait(w->ph, 2);
    /* Main has dropped its reference: the pointer is still ours through the
     * stack entry (cus_context_current borrows it). */
    w->sync_status = cus_context_synchronize(cus_context_current());
    w->live_before_pop = cus_fake_live_handles(CUS_FAKE_HANDLE_CONTEXT);
    w->pop_status = cus_context_pop(NULL);
    w->live_after_pop = cus_fake_live_handles(CUS_FAKE_HANDLE_CONTEXT);
    w->objects_after_pop = cus_debug_live_objects();
    return NULL;
}

static void test_context_current_on_another_thread_outlives_the_owners_unref(void **state)
{
    (void)state;
    holder_worker w;
    memset(&w, 0, sizeof w);
    assert_ok(cus_context_create(dev0(), CUS_CTX_NO_PUSH, &w.ctx));
    phase ph;
    phase_init(&ph);
    w.ph = &ph;
    assert_int_equal(pthread_create(&w.thread, NULL, holder_main, &w), 0);
    phase_wait(&ph, 1);
    assert_int_equal(w.push_status, CUS_SUCCESS);
    cus_context *mine = w.ctx;
    mine = cus_context_unref(mine); /* main's own reference */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_CONTEXT), 1);
    assert_int_equal(cus_debug_live_objects(), 1);
    assert_int_equal(cus_fake_calls_of("cuCtxDestroy"), 0);
    phase_set(&ph, 2);
    assert_int_equal(pthread_join(w.thread, NULL), 0);
    phase_destroy(&ph);

    assert_int_equal(w.sync_status, CUS_SUCCESS);
    assert_int_equal(w.live_before_pop, 1);
    assert_int_equal(w.pop_status, CUS_SUCCESS);
    assert_int_equal(w.live_after_pop, 0); /* destroyed by the pop, on that thread */
    assert_int_equal(w.objects_after_pop, 0);
    assert_int_equal(cus_fake_calls_of("cuCtxDestroy"), 1);
    assert_int_equal(env_destroyed.count, 0);
    assert_nothing_alive();
}

/* --- (5) a thread that exits with contexts pushed ------------------------------- */

typedef struct exiting_worker {
    pthread_t thread;
    cus_status st[2];
    unsigned int depth;
} exiting_worker;

static void *exiting_main(void *arg)
{
    exiting_worker *w = arg;
    cus_device d = {0};
    for (int i = 0; i < 2; i++) {
        cus_context *c = NULL;
        w->st[i] = cus_context_create(d, 0, &c); /* pushed */
        c = cus_context_unref(c);                /* only the stack holds it now */
    }
    w->depth = cus_context_stack_depth();
    return NULL; /* exits with both pushed */
}

static void test_thread_exit_with_contexts_pushed_releases_them_and_reports_once(void **state)
{
    (void)state;
    assert_ok(cus_init());
    unsigned long count = cus_destroy_error_count();
    exiting_worker w;
    memset(&w, 0, sizeof w);
    assert_int_equal(pthread_create(&w.thread, NULL, exiting_main, &w), 0);
    assert_int_equal(pthread_join(w.thread, NULL), 0);
    assert_int_equal(w.st[0], CUS_SUCCESS);
    assert_int_equal(w.st[1], CUS_SUCCESS);
    assert_int_equal(w.depth, 2);
    assert_int_equal(env_destroyed.count, 1);
    assert_int_equal(env_destroyed.last_status, CUS_ERROR_CONTEXTS_LEFT_PUSHED);
    if (!strstr(env_destroyed.last_message, "2 context"))
        fail_msg("message does not give the count: %s", env_destroyed.last_message);
    assert_int_equal(cus_destroy_error_count(), count + 1);
    assert_int_equal(cus_fake_calls_of("cuCtxDestroy"), 2);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_CONTEXT), 0);
    assert_nothing_alive();
}

static void *quiet_exit_main(void *arg)
{
    cus_status *st = arg;
    cus_context *c = NULL;
    *st = cus_context_create((cus_device){0}, 0, &c);
    if (*st == CUS_SUCCESS)
        *st = cus_context_pop(NULL);
    c = cus_context_unref(c);
    return NULL;
}

static void test_thread_exit_with_a_balanced_stack_reports_nothing(void **state)
{
    (void)state;
    assert_ok(cus_init());
    cus_status st = -1;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, quiet_exit_main, &st), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(st, CUS_SUCCESS);
    assert_int_equal(env_destroyed.count, 0);
    assert_nothing_alive();
}

/* --- (6) concurrent ref/unref --------------------------------------------------- */

#define REF_ROUNDS 10000

typedef struct ref_worker {
    pthread_t thread;
    gate *start;
    cus_context *ctx;
    report r;
} ref_worker;

static void *ref_main(void *arg)
{
    ref_worker *w = arg;
    gate_arrive_and_wait(w->start);
    for (int i = 0; i < REF_ROUNDS; i++) {
        T_CHECK(&w->r, cus_context_ref(w->ctx) == w->ctx);
        T_CHECK(&w->r, cus_context_unref(w->ctx) == NULL);
    }
    /* Then many held at once. */
    for (int i = 0; i < REF_ROUNDS; i++)
        (void)cus_context_ref(w->ctx);
    for (int i = 0; i < REF_ROUNDS; i++)
        (void)cus_context_unref(w->ctx);
    return NULL;
}

static void test_concurrent_ref_and_unref_destroy_exactly_once(void **state)
{
    (void)state;
    cus_context *c = NULL;
    assert_ok(cus_context_create(dev0(), CUS_CTX_NO_PUSH, &c));
    gate start;
    gate_init(&start, N_THREADS);
    ref_worker w[N_THREADS];
    memset(w, 0, sizeof w);
    for (int i = 0; i < N_THREADS; i++) {
        w[i].start = &start;
        w[i].ctx = c;
        assert_int_equal(pthread_create(&w[i].thread, NULL, ref_main, &w[i]), 0);
    }
    for (int i = 0; i < N_THREADS; i++)
        assert_int_equal(pthread_join(w[i].thread, NULL), 0);
    phase_destroy(&start.p);
    for (int i = 0; i < N_THREADS; i++)
        assert_report_clean(&w[i].r, i);
    assert_int_equal(cus_fake_calls_of("cuCtxDestroy"), 0);
    assert_int_equal(cus_debug_live_objects(), 1);
    assert_ok(cus_context_synchronize(c)); /* still usable */
    c = cus_context_unref(c);
    assert_int_equal(cus_fake_calls_of("cuCtxDestroy"), 1);
    assert_nothing_alive();
}

/* --- (7) the live count, kept per thread ------------------------------------------ */

/* cus_debug_live_objects() sums per-thread counts (lib/live.c): objects made
 * on threads that exited and released on others, which take their counts
 * below zero, still sum to what is alive; a thread that exits gives its
 * count up to the next new thread, which allocates nothing for it. */

#define LIVE_PER_THREAD 100

typedef struct live_worker {
    pthread_t thread;
    cus_context *ctx;
    cus_event **events;
    int count;
    bool release; /* release them instead of making them */
    report r;
} live_worker;

static void *live_main(void *arg)
{
    live_worker *w = arg;
    for (int i = 0; i < w->count; i++) {
        if (w->release) {
            w->events[i] = cus_event_unref(w->events[i]);
        } else {
            cus_status st = cus_event_create(w->ctx, 0, &w->events[i]);
            if (st)
                report_fail(&w->r, __LINE__, "cus_event_create", st);
        }
    }
    return NULL;
}

/* One thread that makes (or releases) `count` events, joined. */
static void run_live_worker(cus_context *c, cus_event **events, int count, bool release)
{
    live_worker w;
    memset(&w, 0, sizeof w);
    w.ctx = c;
    w.events = events;
    w.count = count;
    w.release = release;
    assert_int_equal(pthread_create(&w.thread, NULL, live_main, &w), 0);
    assert_int_equal(pthread_join(w.thread, NULL), 0);
    assert_report_clean(&w.r, 0);
}

static void run_live_workers(cus_context *c, cus_event *(*events)[LIVE_PER_THREAD], bool release)
{
    live_worker w[N_THREADS];
    memset(w, 0, sizeof w);
    for (int i = 0; i < N_THREADS; i++) {
        w[i].ctx = c;
        /* each releases what another made */
        w[i].events = events[release ? (i + 1) % N_THREADS : i];
        w[i].count = LIVE_PER_THREAD;
        w[i].release = release;
        assert_int_equal(pthread_create(&w[i].thread, NULL, live_main, &w[i]), 0);
    }
    for (int i = 0; i < N_THREADS; i++)
        assert_int_equal(pthread_join(w[i].thread, NULL), 0);
    for (int i = 0; i < N_THREADS; i++)
        assert_report_clean(&w[i].r, i);
}

static void test_live_count_sums_the_threads(void **state)
{
    (void)state;
    cus_context *c = NULL;
    assert_ok(cus_context_create(dev0(), CUS_CTX_NO_PUSH, &c));
    size_t live = cus_debug_live_objects();
    static cus_event *events[N_THREADS][LIVE_PER_THREAD];
    run_live_workers(c, events, false);
    assert_int_equal(cus_debug_live_objects(), live + N_THREADS * LIVE_PER_THREAD);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_EVENT), N_THREADS * LIVE_PER_THREAD);
    run_live_workers(c, events, true);
    assert_int_equal(cus_debug_live_objects(), live);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_EVENT), 0);
    /* The main thread releases what a thread made, and a thread what the
     * main thread made. */
    run_live_worker(c, events[0], LIVE_PER_THREAD, false);
    assert_int_equal(cus_debug_live_objects(), live + LIVE_PER_THREAD);
    for (int i = 0; i < LIVE_PER_THREAD; i++)
        events[0][i] = cus_event_unref(events[0][i]);
    assert_int_equal(cus_debug_live_objects(), live);
    for (int i = 0; i < LIVE_PER_THREAD; i++)
        assert_ok(cus_event_create(c, 0, &events[0][i]));
    assert_int_equal(cus_debug_live_objects(), live + LIVE_PER_THREAD);
    run_live_worker(c, events[0], LIVE_PER_THREAD, true);
    assert_int_equal(cus_debug_live_objects(), live);
    /* The threads above have all exited: a new one takes over a count they
     * gave up, and its first object allocates the object's record only. */
    cus_debug_fail_host_alloc(ULONG_MAX, false); /* counts only */
    run_live_worker(c, events[0], 1, false);
    unsigned long allocs = cus_debug_host_allocs();
    cus_debug_fail_host_alloc(0, false);
    assert_int_equal(allocs, 1);
    assert_int_equal(cus_debug_live_objects(), live + 1);
    events[0][0] = cus_event_unref(events[0][0]);
    assert_int_equal(cus_debug_live_objects(), live);
    c = cus_context_unref(c);
    assert_nothing_alive();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_concurrent_init_loads_exactly_once),
        ENV_TEST(test_threads_push_and_pop_shared_contexts_independently),
        ENV_TEST(test_raw_destroy_while_current_elsewhere_gives_709_and_still_pops),
        ENV_TEST(test_context_current_on_another_thread_outlives_the_owners_unref),
        ENV_TEST(test_thread_exit_with_contexts_pushed_releases_them_and_reports_once),
        ENV_TEST(test_thread_exit_with_a_balanced_stack_reports_nothing),
        ENV_TEST(test_concurrent_ref_and_unref_destroy_exactly_once),
        ENV_TEST(test_live_count_sums_the_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
