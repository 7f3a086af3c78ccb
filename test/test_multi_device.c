/* Several devices (issue "Several GPUs"), on the fake driver with 2, 3 and 4
 * devices: the peer access matrix, enabling twice, peer copies with and
 * without access enabled, copies between every pair of devices, events that
 * order the streams of different devices, a thread per device (run under
 * TSan in the threads suite), and the failure paths of the entry points
 * cuscope calls for them (cuDeviceCanAccessPeer, cuCtxEnablePeerAccess,
 * cuMemcpyPeer, cuMemcpyPeerAsync).
 *
 * The fake lets every pair of distinct devices access each other (it has no
 * peer configuration) and, like the driver, needs no enabled access for
 * cuMemcpyPeer*: those copies are staged by the driver. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuscope/memory.h>

#include "stream_common.h"

#define MAXDEV 4
#define WORDS 256
#define BYTES (WORDS * sizeof(uint32_t))

static const cus_fake_config cfg2 = {.device_count = 2};
static const cus_fake_config cfg3 = {.device_count = 3};
static const cus_fake_config cfg4 = {.device_count = 4};

static int setup_n(void **state)
{
    return env_setup_with(*state);
}

static int ndev(void)
{
    int n = 0;
    assert_ok(cus_device_count(&n));
    assert_in_range(n, 2, MAXDEV);
    return n;
}

static cus_context *owned(int ordinal)
{
    cus_context *c = NULL;
    assert_ok(cus_context_create(dev_at(ordinal), CUS_CTX_NO_PUSH, &c));
    return c;
}

static cus_buffer *buf_on(cus_context *c)
{
    cus_buffer *b = NULL;
    assert_ok(cus_buffer_alloc(c, BYTES, &b));
    return b;
}

static void pattern(uint32_t *w, uint32_t seed)
{
    for (uint32_t i = 0; i < WORDS; i++)
        w[i] = seed * 0x01000193u + i;
}

static void assert_holds(cus_buffer *b, uint32_t seed)
{
    uint32_t want[WORDS], got[WORDS];
    pattern(want, seed);
    assert_ok(cus_copy_to_host(got, b, 0, BYTES));
    assert_memory_equal(want, got, BYTES);
}

static void fill_pattern(cus_buffer *b, uint32_t seed)
{
    uint32_t w[WORDS];
    pattern(w, seed);
    assert_ok(cus_copy_to_device(b, 0, w, BYTES));
}

/* ---------------------------------------------------------------------- */

static void test_peer_matrix(void **state)
{
    (void)state;
    int n = ndev();
    cus_context *c[MAXDEV];
    for (int i = 0; i < n; i++)
        c[i] = owned(i);
    cus_context *again0 = owned(0);
    stack_snap before = snap();
    unsigned long calls = cus_fake_calls_of("cuDeviceCanAccessPeer");
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            bool can = i == j;
            assert_ok(cus_context_can_access_peer(c[i], c[j], &can));
            assert_int_equal(can, i != j);
        }
    bool can = true;
    assert_ok(cus_context_can_access_peer(c[0], again0, &can)); /* one device */
    assert_false(can);
    assert_int_equal(cus_fake_calls_of("cuDeviceCanAccessPeer"), calls + (unsigned long)(n * n) + 1);
    assert_stack_unchanged(before);
    again0 = cus_context_unref(again0);
    for (int i = 0; i < n; i++)
        c[i] = cus_context_unref(c[i]);
}

static void test_enable_every_pair_twice(void **state)
{
    (void)state;
    int n = ndev();
    cus_context *c[MAXDEV];
    for (int i = 0; i < n; i++)
        c[i] = owned(i);
    cus_context *again0 = owned(0);
    stack_snap before = snap();
    unsigned long calls = cus_fake_calls_of("cuCtxEnablePeerAccess");
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                if (i != j) {
                    cus_clear_last_error();
                    assert_ok(cus_context_enable_peer_access(c[i], c[j]));
                    assert_int_equal(cus_last_status(), CUS_SUCCESS); /* already: no error */
                }
    assert_int_equal(cus_fake_calls_of("cuCtxEnablePeerAccess"),
                     calls + 2ul * (unsigned long)(n * (n - 1)));
    /* what the driver refuses: two contexts of one device, and itself (one
     * device too, as the H200 answers: test/rules/expected.txt) */
    assert_status(cus_context_enable_peer_access(c[0], again0),
                  CU(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED));
    assert_status(cus_context_enable_peer_access(c[1], c[1]),
                  CU(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED));
    assert_stack_unchanged(before);
    for (int i = 0; i < n; i++)
        assert_int_equal(cus_context_poisoned(c[i]), CUS_SUCCESS);
    again0 = cus_context_unref(again0);
    for (int i = 0; i < n; i++)
        c[i] = cus_context_unref(c[i]);
}

/* No access enabled: cuMemcpyPeer and cuMemcpyPeerAsync still copy. */
static void test_peer_copy_without_enable(void **state)
{
    (void)state;
    (void)ndev();
    cus_context *c0 = owned(0), *c1 = owned(1);
    cus_buffer *a = buf_on(c0), *b = buf_on(c1);
    fill_pattern(a, 7);
    assert_ok(cus_copy_device(b, 0, a, 0, BYTES));
    assert_holds(b, 7);
    assert_int_equal(cus_fake_calls_of("cuMemcpyPeer"), 1);
    assert_int_equal(cus_fake_calls_of("cuCtxEnablePeerAccess"), 0);
    cus_stream *s1 = new_stream(c1, CU_STREAM_NON_BLOCKING);
    fill_pattern(a, 8);
    assert_ok(cus_copy_device_async(b, 0, a, 0, BYTES, s1));
    assert_ok(cus_stream_synchronize(s1));
    assert_holds(b, 8);
    assert_int_equal(cus_fake_calls_of("cuMemcpyPeerAsync"), 1);
    /* a stream of the source's context is refused today (see the report on
     * multi_copy_on_source_stream in scenarios/multi_scenarios.c) */
    cus_stream *s0 = new_stream(c0, CU_STREAM_NON_BLOCKING);
    unsigned long calls = cus_fake_call_count();
    assert_status(cus_copy_device_async(b, 0, a, 0, BYTES, s0), CUS_ERROR_CONTEXT_MISMATCH);
    assert_int_equal(cus_fake_call_count(), calls);
    s0 = cus_stream_unref(s0);
    s1 = cus_stream_unref(s1);
    b = cus_buffer_unref(b);
    a = cus_buffer_unref(a);
    c0 = cus_context_unref(c0);
    c1 = cus_context_unref(c1);
}

/* Every ordered pair (i, j): a synchronous copy i -> j, and an async one on
 * j's stream, each checked; with access enabled on every pair for half the
 * copies. */
static void test_copies_between_every_pair(void **state)
{
    (void)state;
    int n = ndev();
    cus_context *c[MAXDEV];
    cus_buffer *src[MAXDEV], *dst[MAXDEV];
    cus_stream *s[MAXDEV];
    for (int i = 0; i < n; i++) {
        c[i] = owned(i);
        src[i] = buf_on(c[i]);
        fill_pattern(src[i], (uint32_t)i + 1);
    }
    for (int i = 0; i < n; i++) {
        dst[i] = buf_on(c[i]);
        s[i] = new_stream(c[i], CU_STREAM_NON_BLOCKING);
    }
    for (int enabled = 0; enabled < 2; enabled++) {
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                if (i == j)
                    continue;
                assert_ok(cus_buffer_fill_u32(dst[j], 0, 0, WORDS));
                assert_ok(cus_copy_device(dst[j], 0, src[i], 0, BYTES));
                assert_holds(dst[j], (uint32_t)i + 1);
                assert_ok(cus_buffer_fill_u32_async(dst[j], 0, 0, WORDS, s[j]));
                assert_ok(cus_copy_device_async(dst[j], 0, src[i], 0, BYTES, s[j]));
                assert_ok(cus_stream_synchronize(s[j]));
                assert_holds(dst[j], (uint32_t)i + 1);
            }
        for (int i = 0; i < n && !enabled; i++)
            for (int j = 0; j < n; j++)
                if (i != j)
                    assert_ok(cus_context_enable_peer_access(c[i], c[j]));
    }
    unsigned long pairs = (unsigned long)(n * (n - 1));
    assert_int_equal(cus_fake_calls_of("cuMemcpyPeer"), 2 * pairs);
    assert_int_equal(cus_fake_calls_of("cuMemcpyPeerAsync"), 2 * pairs);
    assert_int_equal(cus_context_stack_depth(), 0);
    for (int i = n - 1; i >= 0; i--) {
        s[i] = cus_stream_unref(s[i]);
        dst[i] = cus_buffer_unref(dst[i]);
    }
    for (int i = n - 1; i >= 0; i--) {
        src[i] = cus_buffer_unref(src[i]);
        c[i] = cus_context_unref(c[i]);
    }
}

/* A relay around the devices: device i waits for device i-1's event, copies
 * its buffer and records its own; only the last stream is synchronized and
 * the whole chain has run. Events of two devices cannot be timed against
 * each other. */
static void test_events_across_devices(void **state)
{
    (void)state;
    int n = ndev();
    cus_context *c[MAXDEV];
    cus_buffer *b[MAXDEV];
    cus_stream *s[MAXDEV];
    cus_event *e[MAXDEV];
    for (int i = 0; i < n; i++)
        c[i] = owned(i);
    for (int i = 0; i < n; i++) { /* device i's buffer is read by i+1: declared first */
        b[i] = buf_on(c[i]);
        s[i] = new_stream(c[i], CU_STREAM_NON_BLOCKING);
        /* on s[i]: a legacy-stream fill is not ordered with its work */
        assert_ok(cus_buffer_fill_u32_async(b[i], 0, 0, WORDS, s[i]));
        e[i] = new_event(c[i], 0);
    }
    assert_ok(cus_buffer_fill_u32_async(b[0], 0, 0xabcd0123u, WORDS, s[0]));
    assert_ok(cus_event_record(e[0], s[0]));
    for (int i = 1; i < n; i++) {
        assert_ok(cus_stream_wait_event(s[i], e[i - 1]));
        assert_ok(cus_copy_device_async(b[i], 0, b[i - 1], 0, BYTES, s[i]));
        assert_ok(cus_event_record(e[i], s[i]));
    }
    assert_ok(cus_event_synchronize(e[n - 1]));
    for (int i = 0; i < n; i++) {
        bool done = false;
        assert_ok(cus_event_query(e[i], &done));
        assert_true(done);
        uint32_t got[WORDS];
        assert_ok(cus_copy_to_host(got, b[i], 0, BYTES));
        for (int k = 0; k < WORDS; k++)
            assert_int_equal(got[k], 0xabcd0123u);
    }
    float ms = -1.0f;
    assert_status(cus_event_elapsed_ms(e[0], e[1], &ms), CUS_ERROR_CONTEXT_MISMATCH);
    assert_true(ms == -1.0f);
    assert_ok(cus_event_elapsed_ms(e[0], e[0], &ms));
    /* an event is recorded on a stream of its own context only */
    assert_status(cus_event_record(e[0], s[1]), CUS_ERROR_CONTEXT_MISMATCH);
    for (int i = n - 1; i >= 0; i--) {
        e[i] = cus_event_unref(e[i]);
        s[i] = cus_stream_unref(s[i]);
    }
    for (int i = n - 1; i >= 0; i--)
        b[i] = cus_buffer_unref(b[i]);
    for (int i = 0; i < n; i++)
        c[i] = cus_context_unref(c[i]);
}

/* --- a thread per device ------------------------------------------------ */

typedef struct worker {
    pthread_t thread;
    int ordinal, n;
    cus_buffer **bufs;    /* one per device, shared: worker i writes bufs[i] */
    pthread_barrier_t *written;
    cus_status status;
    char driver_call[64];
    int driver_depth_after, depth_after;
} worker;

/* Pushes its own context, fills its buffer, waits for every other worker,
 * then copies the next device's buffer into a buffer of its own (a peer
 * copy, concurrently with the others) on its stream; pops. */
static cus_status worker_run(worker *w, cus_context *ctx)
{
    uint32_t want[WORDS], got[WORDS];
    pattern(want, (uint32_t)w->ordinal + 100);
    cus_status st = cus_copy_to_device(w->bufs[w->ordinal], 0, want, BYTES);
    pthread_barrier_wait(w->written);
    if (st)
        return st;
    int next = (w->ordinal + 1) % w->n;
    cus_autoptr(cus_buffer) mine = NULL;
    CUS_TRY(cus_buffer_alloc(ctx, BYTES, &mine));
    cus_autoptr(cus_stream) s = NULL;
    CUS_TRY(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &s));
    CUS_TRY(cus_copy_device_async(mine, 0, w->bufs[next], 0, BYTES, s));
    CUS_TRY(cus_stream_synchronize(s));
    CUS_TRY(cus_copy_to_host(got, mine, 0, BYTES));
    pattern(want, (uint32_t)next + 100);
    if (memcmp(want, got, BYTES) != 0)
        return CUS_ERROR_INVALID_ARGUMENT;
    return CUS_SUCCESS;
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    cus_context *ctx = cus_buffer_context(w->bufs[w->ordinal]);
    w->status = cus_context_push(ctx);
    if (w->status == CUS_SUCCESS) {
        if (cus_context_current() != ctx || cus_context_stack_depth() != 1 ||
            cus_fake_thread_stack_depth() != 1)
            w->status = CUS_ERROR_CONTEXT_MISMATCH;
        cus_status st = worker_run(w, ctx);
        if (!w->status)
            w->status = st;
        st = cus_context_pop(NULL);
        if (!w->status)
            w->status = st;
    } else {
        pthread_barrier_wait(w->written);
    }
    snprintf(w->driver_call, sizeof w->driver_call, "%s",
             w->status ? cus_last_error()->driver_call : "");
    w->depth_after = (int)cus_context_stack_depth();
    w->driver_depth_after = cus_fake_thread_stack_depth();
    return NULL;
}

/* Runs one worker per device (bufs[i] on device i), joins them, and checks
 * that every thread's stack ended empty, cuscope's and the driver's. */
static void run_workers(int n, worker *w, cus_buffer **bufs)
{
    pthread_barrier_t written;
    assert_int_equal(pthread_barrier_init(&written, NULL, (unsigned)n), 0);
    for (int i = 0; i < n; i++)
        w[i] = (worker){.ordinal = i, .n = n, .bufs = bufs, .written = &written};
    for (int i = 0; i < n; i++)
        assert_int_equal(pthread_create(&w[i].thread, NULL, worker_main, &w[i]), 0);
    for (int i = 0; i < n; i++)
        assert_int_equal(pthread_join(w[i].thread, NULL), 0);
    pthread_barrier_destroy(&written);
    for (int i = 0; i < n; i++) {
        assert_int_equal(w[i].depth_after, 0);
        assert_int_equal(w[i].driver_depth_after, 0);
    }
}

static void test_thread_per_device(void **state)
{
    (void)state;
    int n = ndev();
    cus_context *c[MAXDEV];
    cus_buffer *bufs[MAXDEV];
    worker w[MAXDEV];
    for (int i = 0; i < n; i++) {
        c[i] = owned(i);
        bufs[i] = buf_on(c[i]);
    }
    run_workers(n, w, bufs);
    for (int i = 0; i < n; i++)
        if (w[i].status)
            fail_msg("worker %d: %s", i, cus_status_name(w[i].status));
    assert_int_equal(cus_fake_calls_of("cuMemcpyPeerAsync"), (unsigned long)n);
    assert_int_equal(env_destroyed.count, 0);
    assert_int_equal(cus_context_stack_depth(), 0);
    for (int i = 0; i < n; i++) {
        bufs[i] = cus_buffer_unref(bufs[i]);
        c[i] = cus_context_unref(c[i]);
    }
}

/* One peer copy of the n fails: that worker alone reports it, in its own
 * last-error record, and every stack ends empty. */
static void test_thread_per_device_one_copy_fails(void **state)
{
    (void)state;
    int n = ndev();
    cus_context *c[MAXDEV];
    cus_buffer *bufs[MAXDEV];
    worker w[MAXDEV];
    for (int i = 0; i < n; i++) {
        c[i] = owned(i);
        bufs[i] = buf_on(c[i]);
    }
    cus_clear_last_error();
    assert_ok(cus_fake_fail_entry("cuMemcpyPeerAsync", 2, FAULT, false));
    run_workers(n, w, bufs);
    cus_fake_clear_faults();
    int failed = 0;
    for (int i = 0; i < n; i++) {
        if (!w[i].status)
            continue;
        failed++;
        assert_int_equal(w[i].status, CU(FAULT));
        assert_string_equal(w[i].driver_call, "cuMemcpyPeerAsync");
    }
    assert_int_equal(failed, 1);
    assert_int_equal(cus_last_status(), CUS_SUCCESS); /* not the main thread's */
    for (int i = 0; i < n; i++) {
        bufs[i] = cus_buffer_unref(bufs[i]);
        c[i] = cus_context_unref(c[i]);
    }
}

/* --- failure paths ------------------------------------------------------- */

static void test_peer_failures(void **state)
{
    (void)state;
    int n = ndev();
    cus_context *c0 = owned(0), *c1 = owned(n - 1);
    cus_buffer *a = buf_on(c0), *b = buf_on(c1);
    fill_pattern(a, 3);
    fill_pattern(b, 4);
    cus_stream *s1 = new_stream(c1, CU_STREAM_NON_BLOCKING);

    bool can = false;
    assert_fault_surfaces("cuDeviceCanAccessPeer", cus_context_can_access_peer(c0, c1, &can));
    assert_false(can);
    assert_string_equal(cus_last_error()->driver_call, "cuDeviceCanAccessPeer");

    assert_fault_surfaces("cuCtxEnablePeerAccess", cus_context_enable_peer_access(c0, c1));
    assert_string_equal(cus_last_error()->driver_call, "cuCtxEnablePeerAccess");
    /* the push that makes c0 current for it fails: the same, and no enable */
    unsigned long enables = cus_fake_calls_of("cuCtxEnablePeerAccess");
    assert_fault_surfaces("cuCtxPushCurrent", cus_context_enable_peer_access(c0, c1));
    assert_int_equal(cus_fake_calls_of("cuCtxEnablePeerAccess"), enables);
    /* nothing was enabled by the failures: the first real enable succeeds */
    assert_ok(cus_context_enable_peer_access(c0, c1));

    assert_fault_surfaces("cuMemcpyPeer", cus_copy_device(b, 0, a, 0, BYTES));
    assert_string_equal(cus_last_error()->driver_call, "cuMemcpyPeer");
    assert_holds(b, 4); /* untouched */
    assert_fault_surfaces("cuMemcpyPeerAsync", cus_copy_device_async(b, 0, a, 0, BYTES, s1));
    assert_string_equal(cus_last_error()->driver_call, "cuMemcpyPeerAsync");
    assert_ok(cus_stream_synchronize(s1));
    assert_holds(b, 4);
    /* none of them poisoned anything; the copies work afterwards */
    assert_int_equal(cus_context_poisoned(c0), CUS_SUCCESS);
    assert_int_equal(cus_context_poisoned(c1), CUS_SUCCESS);
    assert_ok(cus_copy_device_async(b, 0, a, 0, BYTES, s1));
    assert_ok(cus_stream_synchronize(s1));
    assert_holds(b, 3);
    assert_int_equal(cus_context_stack_depth(), 0);

    s1 = cus_stream_unref(s1);
    b = cus_buffer_unref(b);
    a = cus_buffer_unref(a);
    c0 = cus_context_unref(c0);
    c1 = cus_context_unref(c1);
}

/* A persistent cuMemcpyPeer failure from the second copy on, every pair:
 * each copy returns it, the data stays, and nothing leaks. */
static void test_peer_copy_persistent_failure(void **state)
{
    (void)state;
    int n = ndev();
    cus_context *c[MAXDEV];
    cus_buffer *b[MAXDEV];
    for (int i = 0; i < n; i++) {
        c[i] = owned(i);
        b[i] = buf_on(c[i]);
        fill_pattern(b[i], (uint32_t)i);
    }
    assert_ok(cus_fake_fail_entry("cuMemcpyPeer", 2, FAULT, true));
    int ok = 0, failed = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (i != j) {
                cus_status st = cus_copy_device(b[j], 0, b[i], 0, BYTES);
                if (st == CUS_SUCCESS) {
                    ok++;
                    fill_pattern(b[j], (uint32_t)j); /* put it back */
                } else {
                    assert_int_equal(st, CU(FAULT));
                    assert_int_equal(cus_last_status(), CU(FAULT));
                    failed++;
                }
            }
    cus_fake_clear_faults();
    assert_int_equal(ok, 1);
    assert_int_equal(failed, n * (n - 1) - 1);
    for (int i = 0; i < n; i++)
        assert_holds(b[i], (uint32_t)i);
    assert_int_equal(cus_context_stack_depth(), 0);
    for (int i = 0; i < n; i++) {
        b[i] = cus_buffer_unref(b[i]);
        c[i] = cus_context_unref(c[i]);
    }
}

#define ON_2_3_4(f)                                                            \
    cmocka_unit_test_prestate_setup_teardown(f, setup_n, env_teardown, (void *)&cfg2), \
    cmocka_unit_test_prestate_setup_teardown(f, setup_n, env_teardown, (void *)&cfg3), \
    cmocka_unit_test_prestate_setup_teardown(f, setup_n, env_teardown, (void *)&cfg4)

int main(void)
{
    const struct CMUnitTest tests[] = {
        ON_2_3_4(test_peer_matrix),
        ON_2_3_4(test_enable_every_pair_twice),
        ON_2_3_4(test_peer_copy_without_enable),
        ON_2_3_4(test_copies_between_every_pair),
        ON_2_3_4(test_events_across_devices),
        ON_2_3_4(test_thread_per_device),
        ON_2_3_4(test_thread_per_device_one_copy_fails),
        ON_2_3_4(test_peer_failures),
        ON_2_3_4(test_peer_copy_persistent_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
