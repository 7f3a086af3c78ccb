/* Events (include/cuscope/event.h): creation, references, accessors,
 * record/synchronize/query/elapsed, the context checks, and every failure
 * path: the status returned and recorded, out parameters untouched, the
 * thread's stack unchanged, nothing leaked. */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>

#include "stream_common.h"

static void test_create_and_unref(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    cus_event *e = NULL;
    assert_ok(cus_event_create(c, CU_EVENT_BLOCKING_SYNC, &e));
    assert_non_null(cus_event_handle(e));
    assert_ptr_equal(cus_event_context(e), c);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_EVENT), 1);
    assert_int_equal(cus_context_stack_depth(), 0);
    assert_int_equal(cus_fake_thread_stack_depth(), 0);
    assert_ptr_equal(cus_event_ref(e), e);
    assert_null(cus_event_unref(e));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_EVENT), 1);
    e = cus_event_unref(e);
    assert_null(e);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_EVENT), 0);
    assert_int_equal(cus_fake_calls_of("cuEventDestroy"), 1);
    c = cus_context_unref(c);
}

static void test_null_args(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_stream *s = new_stream(c, 0);
    cus_event *e = new_event(c, 0);
    unsigned long calls = cus_fake_call_count();
    cus_event *out = SENTINEL_PTR(out);
    bool done = true;
    float ms = 42.0f;
    assert_status(cus_event_create(NULL, 0, &out), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_event_create(c, 0, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_ptr_equal(out, SENTINEL_PTR(out));
    assert_status(cus_event_record(NULL, s), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_event_record(e, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_event_synchronize(NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_event_query(NULL, &done), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_event_query(e, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_event_elapsed_ms(NULL, e, &ms), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_event_elapsed_ms(e, NULL, &ms), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_event_elapsed_ms(e, e, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_true(done);
    assert_true(ms == 42.0f);
    assert_int_equal(cus_fake_call_count(), calls);
    assert_null(cus_event_handle(NULL));
    assert_null(cus_event_context(NULL));
    assert_null(cus_event_ref(NULL));
    assert_null(cus_event_unref(NULL));
    e = cus_event_unref(e);
    s = cus_stream_unref(s);
    c = cus_context_unref(c);
}

static void test_create_faults(void **state)
{
    (void)state;
    static const char *const entries[] = {"cuCtxPushCurrent", "cuEventCreate"};
    cus_context *c = new_ctx();
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
        cus_event *e = SENTINEL_PTR(e);
        assert_fault_surfaces(entries[i], cus_event_create(c, 0, &e));
        assert_ptr_equal(e, SENTINEL_PTR(e));
    }
    assert_int_equal(cus_context_poisoned(c), CUS_SUCCESS);
    c = cus_context_unref(c);
}

static void nothing(void *p)
{
    (void)p;
}

static void test_record_synchronize_query_elapsed(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_stream *s = new_stream(c, 0);
    cus_event *a = new_event(c, 0), *b = new_event(c, 0);
    cus_fake_set_query_mode(CUS_FAKE_QUERY_NONE);
    assert_ok(cus_event_record(a, s));
    assert_ok(cus_stream_launch_host_fn(s, nothing, NULL));
    assert_ok(cus_event_record(b, s));
    bool done = true;
    assert_ok(cus_event_query(b, &done));
    assert_false(done);
    assert_ok(cus_event_synchronize(a));
    assert_ok(cus_event_query(a, &done));
    assert_true(done);
    assert_ok(cus_event_query(b, &done));
    assert_false(done);
    assert_ok(cus_event_synchronize(b));
    assert_ok(cus_event_query(b, &done));
    assert_true(done);
    float ms = -1.0f;
    assert_ok(cus_event_elapsed_ms(a, b, &ms));
    assert_true(ms >= 0.0f);
    assert_true(ms > 0.0f); /* the fake: 0.001 ms per host function */
    assert_int_equal(cus_context_stack_depth(), 0);
    b = cus_event_unref(b);
    a = cus_event_unref(a);
    s = cus_stream_unref(s);
    c = cus_context_unref(c);
}

static void test_calls_faults(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_stream *s = new_stream(c, 0);
    cus_event *a = new_event(c, 0), *b = new_event(c, 0);
    assert_ok(cus_event_record(a, s));
    assert_ok(cus_event_record(b, s));
    assert_ok(cus_stream_synchronize(s));
    /* The calls make no switch (lib/event.c), so the driver call is the one
     * that can fail. */
    bool done = false;
    float ms = 42.0f;
    assert_fault_surfaces("cuEventRecord", cus_event_record(a, s));
    assert_fault_surfaces("cuEventSynchronize", cus_event_synchronize(a));
    assert_fault_surfaces("cuEventQuery", cus_event_query(a, &done));
    assert_fault_surfaces("cuEventElapsedTime", cus_event_elapsed_ms(a, b, &ms));
    assert_false(done);
    assert_true(ms == 42.0f);
    /* A record on a default stream does switch: the driver takes the
     * current context's. (A one-shot cuCtxPopCurrent failure is retried by
     * design: see test_one_shot_pop_failure_is_retried.) */
    cus_stream *l = NULL;
    assert_ok(cus_stream_legacy(c, &l));
    assert_fault_surfaces("cuCtxPushCurrent", cus_event_record(a, l));
    assert_fault_surfaces("cuEventRecord", cus_event_record(a, l));
    l = cus_stream_unref(l);
    assert_int_equal(cus_context_poisoned(c), CUS_SUCCESS);
    b = cus_event_unref(b);
    a = cus_event_unref(a);
    s = cus_stream_unref(s);
    c = cus_context_unref(c);
}

/* Only cuEventCreate needs the event's context current: with none current,
 * a create pushes and pops it around the call, and every other call on the
 * event is its one driver call (record on a stream it made, synchronize,
 * query, elapsed time, destroy). With the context current, N creates and N
 * destroys are N cuEventCreate and N cuEventDestroy, nothing else, and
 * allocate N event records. */
static void test_one_driver_call_each(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_stream *s = new_stream(c, 0);
    cus_event *a = NULL, *b = NULL;
    unsigned long from = cus_fake_call_count();
    assert_ok(cus_event_create(c, 0, &a));
    assert_calls_since(from, "cuCtxPushCurrent", "cuEventCreate", "cuCtxPopCurrent");
    b = new_event(c, 0);
    from = cus_fake_call_count();
    bool done = false;
    float ms = -1.0f;
    assert_ok(cus_event_record(a, s));
    assert_ok(cus_event_record(b, s));
    assert_ok(cus_event_synchronize(b));
    assert_ok(cus_event_query(a, &done));
    assert_ok(cus_event_elapsed_ms(a, b, &ms));
    b = cus_event_unref(b);
    assert_calls_since(from, "cuEventRecord", "cuEventRecord", "cuEventSynchronize",
                       "cuEventQuery", "cuEventElapsedTime", "cuEventDestroy");
    assert_true(done);
    assert_true(ms >= 0.0f);
    /* another context current: still no switch */
    cus_context *other = new_ctx();
    assert_ok(cus_context_push(other));
    from = cus_fake_call_count();
    assert_ok(cus_event_query(a, &done));
    a = cus_event_unref(a);
    assert_calls_since(from, "cuEventQuery", "cuEventDestroy");
    assert_ok(cus_context_pop(NULL));
    other = cus_context_unref(other);

    enum { N = 1000 };
    static cus_event *e[N];
    assert_ok(cus_context_push(c));
    unsigned long creates = cus_fake_calls_of("cuEventCreate");
    unsigned long destroys = cus_fake_calls_of("cuEventDestroy");
    size_t live = cus_debug_live_objects();
    from = cus_fake_call_count();
    cus_debug_fail_host_alloc(ULONG_MAX, false); /* counts only */
    for (int i = 0; i < N; i++)
        assert_ok(cus_event_create(c, CU_EVENT_DISABLE_TIMING, &e[i]));
    unsigned long allocs = cus_debug_host_allocs();
    cus_debug_fail_host_alloc(0, false);
    assert_int_equal(allocs, N);
    assert_int_equal(cus_fake_calls_of("cuEventCreate"), creates + N);
    assert_int_equal(cus_fake_call_count(), from + N);
    assert_int_equal(cus_debug_live_objects(), live + N);
    from = cus_fake_call_count();
    for (int i = 0; i < N; i++)
        e[i] = cus_event_unref(e[i]);
    assert_int_equal(cus_fake_calls_of("cuEventDestroy"), destroys + N);
    assert_int_equal(cus_fake_call_count(), from + N);
    assert_int_equal(cus_debug_live_objects(), live);
    assert_ok(cus_context_pop(NULL));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_EVENT), 0);
    s = cus_stream_unref(s);
    c = cus_context_unref(c);
}

static void test_record_across_contexts_is_a_mismatch(void **state)
{
    (void)state;
    cus_context *c1 = new_ctx(), *c2 = new_ctx();
    cus_stream *s2 = new_stream(c2, 0);
    cus_event *e1 = new_event(c1, 0);
    leak_snap before = leak_snap_now();
    unsigned long calls = cus_fake_call_count();
    assert_status(cus_event_record(e1, s2), CUS_ERROR_CONTEXT_MISMATCH);
    assert_int_equal(cus_fake_call_count(), calls);
    assert_nothing_changed(before);
    /* A default stream of the other context too. */
    cus_stream *l2 = NULL;
    assert_ok(cus_stream_legacy(c2, &l2));
    assert_status(cus_event_record(e1, l2), CUS_ERROR_CONTEXT_MISMATCH);
    assert_int_equal(cus_fake_call_count(), calls);
    /* Waiting on another context's event is allowed. */
    cus_stream *s1 = new_stream(c1, 0);
    assert_ok(cus_event_record(e1, s1));
    assert_ok(cus_stream_wait_event(s2, e1));
    assert_ok(cus_stream_synchronize(s2));
    bool done = false;
    assert_ok(cus_event_query(e1, &done));
    assert_true(done);
    s1 = cus_stream_unref(s1);
    l2 = cus_stream_unref(l2);
    e1 = cus_event_unref(e1);
    s2 = cus_stream_unref(s2);
    c2 = cus_context_unref(c2);
    c1 = cus_context_unref(c1);
}

static void test_elapsed_across_contexts_is_a_mismatch(void **state)
{
    (void)state;
    cus_context *c1 = new_ctx();
    cus_context *c2 = NULL;
    assert_ok(cus_context_create(dev_at(1), CUS_CTX_NO_PUSH, &c2));
    cus_stream *s1 = new_stream(c1, 0), *s2 = new_stream(c2, 0);
    cus_event *e1 = new_event(c1, 0), *e2 = new_event(c2, 0);
    assert_ok(cus_event_record(e1, s1));
    assert_ok(cus_event_record(e2, s2));
    assert_ok(cus_stream_synchronize(s1));
    assert_ok(cus_stream_synchronize(s2));
    unsigned long calls = cus_fake_call_count();
    float ms = 42.0f;
    assert_status(cus_event_elapsed_ms(e1, e2, &ms), CUS_ERROR_CONTEXT_MISMATCH);
    assert_status(cus_event_elapsed_ms(e2, e1, &ms), CUS_ERROR_CONTEXT_MISMATCH);
    assert_true(ms == 42.0f);
    assert_int_equal(cus_fake_call_count(), calls);
    assert_int_equal(cus_context_stack_depth(), 0);
    e2 = cus_event_unref(e2);
    e1 = cus_event_unref(e1);
    s2 = cus_stream_unref(s2);
    s1 = cus_stream_unref(s1);
    c2 = cus_context_unref(c2);
    c1 = cus_context_unref(c1);
}

static void test_event_keeps_its_context_alive(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_stream *s = new_stream(c, 0);
    cus_event *e = new_event(c, 0);
    c = cus_context_unref(c);
    assert_ok(cus_event_record(e, s));
    s = cus_stream_unref(s);
    assert_int_equal(cus_fake_calls_of("cuCtxDestroy"), 0);
    assert_ok(cus_event_synchronize(e));
    e = cus_event_unref(e);
    assert_int_equal(cus_fake_calls_of("cuCtxDestroy"), 1);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
}

static void test_destroy_failure_goes_to_the_handler(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_event *e = new_event(c, 0);
    assert_status(cus_event_synchronize(NULL), CUS_ERROR_INVALID_ARGUMENT);
    char msg[256];
    snprintf(msg, sizeof msg, "%s", cus_last_error_message());
    assert_ok(cus_fake_fail_entry("cuEventDestroy", 1, FAULT, false));
    stack_snap before = snap();
    e = cus_event_unref(e);
    assert_int_equal(cus_fake_faults_fired(), 1);
    assert_int_equal(env_destroyed.count, 1);
    assert_int_equal(env_destroyed.last_status, CU(FAULT));
    assert_int_equal(cus_last_status(), CUS_ERROR_INVALID_ARGUMENT);
    assert_string_equal(cus_last_error_message(), msg);
    assert_stack_unchanged(before);
    assert_int_equal(cus_debug_live_objects(), 1);
    c = cus_context_unref(c);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
}

static void test_poisoned_context_fails_fast(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_stream *s = new_stream(c, 0);
    cus_event *e = new_event(c, 0);
    assert_ok(cus_event_record(e, s));
    assert_ok(cus_fake_fail_entry("cuStreamSynchronize", 1, CUDA_ERROR_ILLEGAL_ADDRESS, false));
    assert_status(cus_stream_synchronize(s), CU(CUDA_ERROR_ILLEGAL_ADDRESS));
    leak_snap before = leak_snap_now();
    unsigned long calls = cus_fake_call_count();
    bool done = false;
    float ms = 42.0f;
    cus_event *e2 = SENTINEL_PTR(e2);
    assert_status(cus_event_create(c, 0, &e2), CU(CUDA_ERROR_ILLEGAL_ADDRESS));
    assert_ptr_equal(e2, SENTINEL_PTR(e2));
    assert_status(cus_event_record(e, s), CU(CUDA_ERROR_ILLEGAL_ADDRESS));
    assert_status(cus_event_synchronize(e), CU(CUDA_ERROR_ILLEGAL_ADDRESS));
    assert_status(cus_event_query(e, &done), CU(CUDA_ERROR_ILLEGAL_ADDRESS));
    assert_status(cus_event_elapsed_ms(e, e, &ms), CU(CUDA_ERROR_ILLEGAL_ADDRESS));
    assert_false(done);
    assert_true(ms == 42.0f);
    assert_int_equal(cus_fake_call_count(), calls);
    assert_nothing_changed(before);
    e = cus_event_unref(e);
    s = cus_stream_unref(s);
    assert_int_equal(cus_fake_calls_of("cuEventDestroy"), 0);
    assert_int_equal(cus_fake_call_count(), calls);
    c = cus_context_unref(c);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
}

/* Event records (lib/host_alloc.c, cus_record_new_): one released on a
 * thread goes to that thread's cache, and that thread's next events reuse
 * it, whichever thread made it (malloc would give a second thread memory of
 * its own arena). Builds under ASan or TSan and runs under valgrind cache
 * nothing: there the records are freed, and the test says so. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define RECORDS_CACHED 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define RECORDS_CACHED 0
#endif
#endif
#ifndef RECORDS_CACHED
#define RECORDS_CACHED 1
#endif

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif
#endif
#ifndef RUNNING_ON_VALGRIND
#define RUNNING_ON_VALGRIND 0
#endif

enum { HANDED = 64 };

typedef struct releaser {
    cus_context *ctx;
    cus_event *made[HANDED];
    uintptr_t made_at[HANDED], remade_at[HANDED];
    cus_status st;
} releaser;

static void *release_then_make(void *p)
{
    releaser *r = p;
    for (int i = 0; i < HANDED; i++) {
        r->made_at[i] = (uintptr_t)r->made[i];
        r->made[i] = cus_event_unref(r->made[i]);
    }
    cus_event *remade[HANDED] = {NULL};
    for (int i = 0; i < HANDED && !r->st; i++)
        r->st = cus_event_create(r->ctx, CU_EVENT_DEFAULT, &remade[i]);
    for (int i = 0; i < HANDED; i++) {
        r->remade_at[i] = (uintptr_t)remade[i];
        cus_event_unref(remade[i]); /* cached here, freed at this thread's exit */
    }
    return NULL;
}

static void test_records_are_reused_by_the_releasing_thread(void **state)
{
    (void)state;
    if (!RECORDS_CACHED || RUNNING_ON_VALGRIND)
        skip();
    cus_autoptr(cus_context) c = new_ctx();
    releaser r = {.ctx = c};
    for (int i = 0; i < HANDED; i++)
        assert_ok(cus_event_create(c, CU_EVENT_DEFAULT, &r.made[i]));
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, release_then_make, &r), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_ok(r.st);
    /* Every record the other thread made was one this thread had made. */
    for (int i = 0; i < HANDED; i++) {
        bool found = false;
        for (int j = 0; j < HANDED && !found; j++)
            found = r.remade_at[i] == r.made_at[j];
        assert_true(found);
    }
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_EVENT), 0);
}

/* cus_*_set_name (NVTX names for profilers): without CUSCOPE_NVTX (the
 * tests' environment) they do nothing and succeed; NULL is
 * CUS_ERROR_INVALID_ARGUMENT; no driver call either way. */
static void test_set_name_without_nvtx_is_a_no_op(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_autoptr(cus_stream) s = new_stream(c, 0);
    cus_autoptr(cus_event) e = new_event(c, 0);
    unsigned long calls = cus_fake_call_count();
    assert_ok(cus_context_set_name(c, "the context"));
    assert_ok(cus_stream_set_name(s, "the stream"));
    assert_ok(cus_event_set_name(e, "the event"));
    assert_status(cus_context_set_name(NULL, "x"), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_stream_set_name(s, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_event_set_name(NULL, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(cus_fake_call_count(), calls);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_create_and_unref),
        ENV_TEST(test_null_args),
        ENV_TEST(test_create_faults),
        ENV_TEST(test_record_synchronize_query_elapsed),
        ENV_TEST(test_calls_faults),
        ENV_TEST(test_one_driver_call_each),
        ENV_TEST(test_record_across_contexts_is_a_mismatch),
        TWO_DEV_TEST(test_elapsed_across_contexts_is_a_mismatch),
        ENV_TEST(test_event_keeps_its_context_alive),
        ENV_TEST(test_destroy_failure_goes_to_the_handler),
        ENV_TEST(test_poisoned_context_fails_fast),
        ENV_TEST(test_records_are_reused_by_the_releasing_thread),
        ENV_TEST(test_set_name_without_nvtx_is_a_no_op),
    };
    return cmocka_run_group_tests_name("event", tests, NULL, NULL);
}
