/* Host functions under threads: several threads queue host functions on
 * their own streams and on a shared one; each host function drops the last
 * reference to an event made by its thread, and checks it is refused cuscope.
 * Run under TSan in the threads suite. */
#include <pthread.h>

#include <cudaTypedefs.h>

#include "stream_common.h"

#define THREADS 4
#define ROUNDS 8

typedef struct host_work {
    atomic_int *counter;
    atomic_int *refused;
    atomic_int *driver_thread;
    cus_event *drop; /* last reference, dropped inside */
} host_work;

static void host_fn(void *arg)
{
    host_work *w = arg;
    if (cus_fake_on_driver_thread() && cus_in_host_fn())
        atomic_fetch_add(w->driver_thread, 1);
    bool done = false;
    cus_stream *s = NULL;
    if (cus_stream_query(NULL, &done) == CUS_ERROR_IN_HOST_FUNCTION &&
        cus_stream_legacy(NULL, &s) == CUS_ERROR_IN_HOST_FUNCTION)
        atomic_fetch_add(w->refused, 1);
    w->drop = cus_event_unref(w->drop);
    atomic_fetch_add(w->counter, 1);
}

typedef struct thread_arg {
    cus_context *ctx;
    cus_stream *shared;
    atomic_int counter, refused, driver_thread;
    host_work work[ROUNDS * 2];
    int failures;
} thread_arg;

static void *worker(void *p)
{
    thread_arg *t = p;
    cus_stream *own = NULL;
    if (cus_stream_create(t->ctx, CU_STREAM_NON_BLOCKING, 0, &own)) {
        t->failures++;
        return NULL;
    }
    for (int i = 0; i < ROUNDS * 2; i++) {
        host_work *w = &t->work[i];
        *w = (host_work){&t->counter, &t->refused, &t->driver_thread, NULL};
        if (cus_event_create(t->ctx, CU_EVENT_DISABLE_TIMING, &w->drop)) {
            t->failures++;
            continue;
        }
        if (cus_stream_launch_host_fn(i % 2 ? t->shared : own, host_fn, w)) {
            t->failures++;
            w->drop = cus_event_unref(w->drop);
        }
    }
    if (cus_stream_synchronize(own) || cus_stream_synchronize(t->shared))
        t->failures++;
    own = cus_stream_unref(own);
    return NULL;
}

static void test_threads_queue_host_functions(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    cus_stream *shared = new_stream(c, 0);
    static thread_arg args[THREADS];
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) {
        args[i] = (thread_arg){.ctx = c, .shared = shared};
        assert_int_equal(pthread_create(&th[i], NULL, worker, &args[i]), 0);
    }
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_join(th[i], NULL), 0);
    assert_ok(cus_stream_synchronize(shared));
    (void)cus_release_deferred();
    for (int i = 0; i < THREADS; i++) {
        assert_int_equal(args[i].failures, 0);
        assert_int_equal(atomic_load(&args[i].counter), ROUNDS * 2);
        assert_int_equal(atomic_load(&args[i].refused), ROUNDS * 2);
        assert_int_equal(atomic_load(&args[i].driver_thread), ROUNDS * 2);
        for (int j = 0; j < ROUNDS * 2; j++)
            assert_null(args[i].work[j].drop);
    }
    assert_int_equal(cus_fake_host_functions_run(), THREADS * ROUNDS * 2);
    assert_int_equal(cus_fake_misuse_count(), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_EVENT), 0);
    assert_int_equal(cus_debug_live_objects(), 2);
    shared = cus_stream_unref(shared);
    c = cus_context_unref(c);
}

/* A host function dropping the last reference while another thread keeps
 * calling cuscope: the other thread's calls run the deferred destruction. */
typedef struct drop_arg {
    cus_stream *victim;
    atomic_bool dropped;
} drop_arg;

static void drop_victim(void *p)
{
    drop_arg *d = p;
    d->victim = cus_stream_unref(d->victim);
    atomic_store(&d->dropped, true);
}

static void *poller(void *p)
{
    cus_stream *s = p;
    bool done = false;
    for (int i = 0; i < 100000 && !done; i++)
        if (cus_stream_query(s, &done))
            break;
    return NULL;
}

static void test_deferred_release_from_another_thread(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_stream *s = new_stream(c, 0);
    size_t objects = cus_debug_live_objects();
    drop_arg d = {.victim = new_stream(c, 0)};
    atomic_init(&d.dropped, false);
    assert_ok(cus_stream_launch_host_fn(s, drop_victim, &d));
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, poller, s), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_ok(cus_stream_synchronize(s));
    (void)cus_release_deferred();
    assert_true(atomic_load(&d.dropped));
    assert_null(d.victim);
    assert_int_equal(cus_debug_live_objects(), objects);
    assert_int_equal(cus_fake_calls_of("cuStreamDestroy"), 1);
    assert_int_equal(cus_fake_misuse_count(), 0);
    s = cus_stream_unref(s);
    c = cus_context_unref(c);
}

static void count_run(void *data)
{
    atomic_fetch_add((atomic_int *)data, 1);
}

static void test_host_fn_in_a_raw_capture_survives_every_replay(void **state)
{
    (void)state;
    PFN_cuStreamBeginCapture_v10010 begin =
        RAW_FN(PFN_cuStreamBeginCapture_v10010, "cuStreamBeginCapture", 10010);
    PFN_cuStreamEndCapture_v10000 end =
        RAW_FN(PFN_cuStreamEndCapture_v10000, "cuStreamEndCapture", 10000);
    PFN_cuGraphInstantiateWithFlags_v11040 instantiate =
        RAW_FN(PFN_cuGraphInstantiateWithFlags_v11040, "cuGraphInstantiateWithFlags", 11040);
    PFN_cuGraphLaunch_v10000 launch = RAW_FN(PFN_cuGraphLaunch_v10000, "cuGraphLaunch", 10000);
    PFN_cuGraphExecDestroy_v10000 exec_destroy =
        RAW_FN(PFN_cuGraphExecDestroy_v10000, "cuGraphExecDestroy", 10000);
    PFN_cuGraphDestroy_v10000 graph_destroy =
        RAW_FN(PFN_cuGraphDestroy_v10000, "cuGraphDestroy", 10000);

    cus_autoptr(cus_context) c = new_ctx();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    atomic_int runs = 0;
    assert_ok(cus_context_push(c));
    assert_int_equal(begin(cus_stream_handle(s), CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), 0);
    assert_ok(cus_stream_launch_host_fn(s, count_run, &runs));
    CUgraph g = NULL;
    assert_int_equal(end(cus_stream_handle(s), &g), 0);
    CUgraphExec e = NULL;
    assert_int_equal(instantiate(&e, g, 0), 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(launch(e, cus_stream_handle(s)), 0);
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(atomic_load(&runs), 3);
    assert_int_equal(exec_destroy(e), 0);
    assert_int_equal(graph_destroy(g), 0);
    assert_ok(cus_context_pop(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_threads_queue_host_functions),
        ENV_TEST(test_deferred_release_from_another_thread),
        ENV_TEST(test_host_fn_in_a_raw_capture_survives_every_replay),
    };
    return cmocka_run_group_tests_name("host_fn", tests, NULL, NULL);
}
