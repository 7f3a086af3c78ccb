/* Streams (include/cuscope/stream.h): creation, the default and foreign
 * streams, references, accessors, synchronize/query/wait/priority/flags, host
 * functions, and every failure path: the status returned and recorded, out
 * parameters untouched, the thread's stack unchanged, nothing leaked. */
#include <stdio.h>

#include "stream_common.h"

static void nothing(void *p)
{
    (void)p;
}

/* --- create ---------------------------------------------------------------- */

static void test_create_with_priority_and_flags(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    int least = 1, greatest = 1;
    assert_ok(cus_context_stream_priority_range(c, &least, &greatest));
    assert_true(greatest < least);
    cus_stream *s = NULL;
    assert_ok(cus_stream_create(c, CU_STREAM_NON_BLOCKING, greatest, &s));
    assert_int_equal(cus_stream_get_kind(s), CUS_STREAM_OWNED);
    assert_ptr_equal(cus_stream_context(s), c);
    assert_non_null(cus_stream_handle(s));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_STREAM), 1);
    int p = 99;
    assert_ok(cus_stream_priority(s, &p));
    assert_int_equal(p, greatest);
    unsigned int f = 0;
    assert_ok(cus_stream_flags(s, &f));
    assert_int_equal(f & CU_STREAM_NON_BLOCKING, CU_STREAM_NON_BLOCKING);
    assert_int_equal(cus_context_stack_depth(), 0);
    assert_int_equal(cus_fake_thread_stack_depth(), 0);
    s = cus_stream_unref(s);
    assert_null(s);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_STREAM), 0);
    assert_int_equal(cus_fake_calls_of("cuStreamDestroy"), 1);
    c = cus_context_unref(c);
}

static void test_create_null_args(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_stream *s = SENTINEL_PTR(s);
    assert_status(cus_stream_create(NULL, 0, 0, &s), CUS_ERROR_INVALID_ARGUMENT);
    assert_ptr_equal(s, SENTINEL_PTR(s));
    assert_status(cus_stream_create(c, 0, 0, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(cus_fake_calls_of("cuStreamCreateWithPriority"), 0);
    c = cus_context_unref(c);
}

static void test_create_priority_out_of_range(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    int least = 0, greatest = 0;
    assert_ok(cus_context_stream_priority_range(c, &least, &greatest));
    leak_snap before = leak_snap_now();
    cus_stream *s = SENTINEL_PTR(s);
    assert_status(cus_stream_create(c, 0, least + 1, &s), CUS_ERROR_INVALID_ARGUMENT);
    assert_ptr_equal(s, SENTINEL_PTR(s));
    assert_status(cus_stream_create(c, 0, greatest - 1, &s), CUS_ERROR_INVALID_ARGUMENT);
    assert_ptr_equal(s, SENTINEL_PTR(s));
    assert_int_equal(cus_fake_calls_of("cuStreamCreateWithPriority"), 0);
    assert_nothing_changed(before);
    c = cus_context_unref(c);
}

/* The priority range is the device's: asked of the driver by the first
 * create on a context (and by cus_context_stream_priority_range), not by
 * every create. A failed query is not kept: the next create asks again. */
static void test_create_asks_the_priority_range_once_per_context(void **state)
{
    (void)state;
    cus_context *c = new_ctx(), *other = new_ctx();
    assert_ok(cus_fake_fail_entry("cuCtxGetStreamPriorityRange", 1, FAULT, false));
    cus_stream *failed = SENTINEL_PTR(failed);
    assert_status(cus_stream_create(c, 0, 0, &failed), FAULT);
    cus_fake_clear_faults();
    assert_ptr_equal(failed, SENTINEL_PTR(failed));
    unsigned long ranges = cus_fake_calls_of("cuCtxGetStreamPriorityRange");
    unsigned long creates = cus_fake_calls_of("cuStreamCreateWithPriority");
    enum { N = 100 };
    static cus_stream *s[N];
    for (int i = 0; i < N; i++)
        assert_ok(cus_stream_create(c, 0, 0, &s[i]));
    assert_int_equal(cus_fake_calls_of("cuStreamCreateWithPriority"), creates + N);
    assert_int_equal(cus_fake_calls_of("cuCtxGetStreamPriorityRange"), ranges + 1);
    /* a non-default priority is checked against the same range, and an
     * out-of-range one still refused, with no driver call */
    int least = 0, greatest = 0;
    assert_ok(cus_context_stream_priority_range(c, &least, &greatest));
    ranges = cus_fake_calls_of("cuCtxGetStreamPriorityRange");
    cus_stream *high = NULL;
    assert_ok(cus_stream_create(c, 0, greatest, &high));
    int p = 99;
    assert_ok(cus_stream_priority(high, &p));
    assert_int_equal(p, greatest);
    unsigned long calls = cus_fake_call_count();
    cus_stream *bad = SENTINEL_PTR(bad);
    assert_status(cus_stream_create(c, 0, greatest - 1, &bad), CUS_ERROR_INVALID_ARGUMENT);
    assert_contains(cus_last_error_message(), "outside the context's range");
    assert_status(cus_stream_create(c, 0, least + 1, &bad), CUS_ERROR_INVALID_ARGUMENT);
    assert_ptr_equal(bad, SENTINEL_PTR(bad));
    assert_no_calls_since(calls);
    assert_int_equal(cus_fake_calls_of("cuCtxGetStreamPriorityRange"), ranges);
    /* another context asks for its own */
    cus_stream *o = NULL;
    assert_ok(cus_stream_create(other, 0, 0, &o));
    assert_int_equal(cus_fake_calls_of("cuCtxGetStreamPriorityRange"), ranges + 1);
    o = cus_stream_unref(o);
    high = cus_stream_unref(high);
    for (int i = 0; i < N; i++)
        s[i] = cus_stream_unref(s[i]);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_STREAM), 0);
    other = cus_context_unref(other);
    c = cus_context_unref(c);
}

static void test_create_faults(void **state)
{
    (void)state;
    static const char *const entries[] = {"cuCtxGetStreamPriorityRange", "cuCtxPushCurrent",
                                          "cuStreamCreateWithPriority"};
    cus_context *c = new_primary();
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
        cus_stream *s = SENTINEL_PTR(s);
        assert_fault_surfaces(entries[i], cus_stream_create(c, 0, 0, &s));
        assert_ptr_equal(s, SENTINEL_PTR(s));
        assert_int_equal(cus_context_poisoned(c), CUS_SUCCESS);
    }
    c = cus_context_unref(c);
}

/* Faults on the create path while the context is current (no push needed). */
static void test_create_faults_when_current(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    assert_ok(cus_context_push(c));
    unsigned long pushes = cus_fake_calls_of("cuCtxPushCurrent");
    cus_stream *s = SENTINEL_PTR(s);
    assert_fault_surfaces("cuStreamCreateWithPriority", cus_stream_create(c, 0, 0, &s));
    assert_ptr_equal(s, SENTINEL_PTR(s));
    assert_int_equal(cus_fake_calls_of("cuCtxPushCurrent"), pushes);
    assert_ok(cus_context_pop(NULL));
    c = cus_context_unref(c);
}

/* cus_context_leave_ pops once more after a failed pop, so a one-shot
 * failure of cuCtxPopCurrent is absorbed: success, stack as before. */
static void test_one_shot_pop_failure_is_retried(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    leak_snap before = leak_snap_now();
    assert_ok(cus_fake_fail_entry("cuCtxPopCurrent", 1, FAULT, false));
    cus_stream *s = NULL;
    assert_ok(cus_stream_create(c, 0, 0, &s));
    assert_int_equal(cus_fake_faults_fired(), 1);
    assert_stack_unchanged(before.stack);
    assert_ok(cus_fake_fail_entry("cuCtxPopCurrent", 1, FAULT, false));
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(cus_fake_faults_fired(), 2);
    assert_stack_unchanged(before.stack);
    s = cus_stream_unref(s);
    c = cus_context_unref(c);
}

/* --- default and foreign streams -------------------------------------------- */

static void test_default_and_foreign_streams(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    unsigned long calls = cus_fake_call_count();
    cus_stream *l = NULL, *p = NULL, *w = NULL;
    assert_ok(cus_stream_legacy(c, &l));
    assert_ok(cus_stream_per_thread(c, &p));
    assert_int_equal(cus_stream_get_kind(l), CUS_STREAM_LEGACY_DEFAULT);
    assert_int_equal(cus_stream_get_kind(p), CUS_STREAM_PER_THREAD_DEFAULT);
    assert_ptr_equal(cus_stream_handle(l), CU_STREAM_LEGACY);
    assert_ptr_equal(cus_stream_handle(p), CU_STREAM_PER_THREAD);
    assert_int_equal(cus_fake_call_count(), calls); /* no driver call */

    cus_stream *owned = new_stream(c, 0);
    assert_ok(cus_stream_wrap(c, cus_stream_handle(owned), &w));
    assert_int_equal(cus_stream_get_kind(w), CUS_STREAM_FOREIGN);
    assert_ptr_equal(cus_stream_handle(w), cus_stream_handle(owned));
    assert_ptr_equal(cus_stream_context(w), c);
    assert_ok(cus_stream_synchronize(w));
    assert_ok(cus_stream_synchronize(l));
    assert_ok(cus_stream_synchronize(p));

    l = cus_stream_unref(l);
    p = cus_stream_unref(p);
    w = cus_stream_unref(w);
    assert_int_equal(cus_fake_calls_of("cuStreamDestroy"), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_STREAM), 1);
    owned = cus_stream_unref(owned);
    assert_int_equal(cus_fake_calls_of("cuStreamDestroy"), 1);
    c = cus_context_unref(c);
}

static void test_default_and_foreign_null_args(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    size_t objects = cus_debug_live_objects();
    cus_stream *s = SENTINEL_PTR(s);
    assert_status(cus_stream_legacy(NULL, &s), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_stream_legacy(c, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_stream_per_thread(NULL, &s), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_stream_per_thread(c, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_stream_wrap(c, NULL, &s), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_stream_wrap(NULL, CU_STREAM_LEGACY, &s), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_stream_wrap(c, CU_STREAM_LEGACY, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_ptr_equal(s, SENTINEL_PTR(s));
    assert_int_equal(cus_debug_live_objects(), objects);
    c = cus_context_unref(c);
}

static void test_accessors_and_refs_on_null(void **state)
{
    (void)state;
    assert_null(cus_stream_handle(NULL));
    assert_null(cus_stream_context(NULL));
    assert_int_equal(cus_stream_get_kind(NULL), CUS_STREAM_FOREIGN);
    assert_null(cus_stream_ref(NULL));
    assert_null(cus_stream_unref(NULL));
}

static void test_ref_keeps_the_stream(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_stream *s = new_stream(c, 0);
    assert_ptr_equal(cus_stream_ref(s), s);
    assert_null(cus_stream_unref(s));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_STREAM), 1);
    assert_ok(cus_stream_synchronize(s));
    s = cus_stream_unref(s);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_STREAM), 0);
    c = cus_context_unref(c);
}

/* --- the per-stream calls ------------------------------------------------------ */

static void test_calls_null_args(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_stream *s = new_stream(c, 0);
    cus_event *e = new_event(c, 0);
    unsigned long calls = cus_fake_call_count();
    bool done = true;
    int p = 42;
    unsigned int f = 42;
    assert_status(cus_stream_synchronize(NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_stream_query(NULL, &done), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_stream_query(s, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_stream_wait_event(NULL, e), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_stream_wait_event(s, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_stream_launch_host_fn(NULL, nothing, NULL),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_stream_launch_host_fn(s, NULL, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_stream_priority(NULL, &p), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_stream_priority(s, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_stream_flags(NULL, &f), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_stream_flags(s, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_true(done);
    assert_int_equal(p, 42);
    assert_int_equal(f, 42);
    assert_int_equal(cus_fake_call_count(), calls);
    e = cus_event_unref(e);
    s = cus_stream_unref(s);
    c = cus_context_unref(c);
}

static void test_calls_faults(void **state)
{
    (void)state;
    cus_context *c = new_ctx(); /* not current: every call pushes and pops */
    cus_stream *s = new_stream(c, 0);
    cus_event *e = new_event(c, 0);
    assert_ok(cus_event_record(e, s));
    /* (A one-shot cuCtxPopCurrent failure is retried by design: see
     * test_one_shot_pop_failure_is_retried.) */
    static const char *const around[] = {"cuCtxPushCurrent"};
    for (size_t i = 0; i < 2; i++) {
        bool done = false;
        int p = 42;
        unsigned int f = 42;
        const char *a = i < 1 ? around[i] : NULL;
        assert_fault_surfaces(a ? a : "cuStreamSynchronize", cus_stream_synchronize(s));
        assert_fault_surfaces(a ? a : "cuStreamQuery", cus_stream_query(s, &done));
        assert_fault_surfaces(a ? a : "cuStreamWaitEvent", cus_stream_wait_event(s, e));
        assert_fault_surfaces(a ? a : "cuStreamGetPriority", cus_stream_priority(s, &p));
        assert_fault_surfaces(a ? a : "cuStreamGetFlags", cus_stream_flags(s, &f));
        assert_fault_surfaces(a ? a : "cuLaunchHostFunc",
                              cus_stream_launch_host_fn(s, nothing, NULL));
        assert_false(done);
        assert_int_equal(p, 42);
        assert_int_equal(f, 42);
        assert_int_equal(cus_context_poisoned(c), CUS_SUCCESS);
    }
    assert_ok(cus_stream_synchronize(s));
    e = cus_event_unref(e);
    s = cus_stream_unref(s);
    c = cus_context_unref(c);
}

static void test_query_pending_then_done(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_stream *s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_fake_set_query_mode(CUS_FAKE_QUERY_NONE);
    bool done = false;
    assert_ok(cus_stream_query(s, &done));
    assert_true(done);
    assert_ok(cus_stream_launch_host_fn(s, nothing, NULL));
    assert_int_equal(cus_fake_stream_pending(cus_stream_handle(s)), 1);
    done = true;
    assert_ok(cus_stream_query(s, &done));
    assert_false(done);
    assert_ok(cus_stream_query(s, &done));
    assert_false(done);
    assert_int_equal(cus_fake_host_functions_run(), 0);
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(cus_fake_stream_pending(cus_stream_handle(s)), 0);
    assert_int_equal(cus_fake_host_functions_run(), 1);
    assert_ok(cus_stream_query(s, &done));
    assert_true(done);
    s = cus_stream_unref(s);
    c = cus_context_unref(c);
}

static void test_stream_keeps_its_context_alive(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_stream *s = new_stream(c, 0);
    c = cus_context_unref(c);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_CONTEXT), 1);
    assert_int_equal(cus_fake_calls_of("cuCtxDestroy"), 0);
    assert_ok(cus_stream_launch_host_fn(s, nothing, NULL));
    assert_ok(cus_stream_synchronize(s));
    bool done = false;
    assert_ok(cus_stream_query(s, &done));
    assert_true(done);
    assert_non_null(cus_stream_context(s));
    s = cus_stream_unref(s);
    assert_int_equal(cus_fake_calls_of("cuStreamDestroy"), 1);
    assert_int_equal(cus_fake_calls_of("cuCtxDestroy"), 1);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
}

static void test_destroy_failure_goes_to_the_handler(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_stream *s = new_stream(c, 0);
    /* A last error that the unref must not clobber. */
    assert_status(cus_stream_synchronize(NULL), CUS_ERROR_INVALID_ARGUMENT);
    char msg[256];
    snprintf(msg, sizeof msg, "%s", cus_last_error_message());
    assert_ok(cus_fake_fail_entry("cuStreamDestroy", 1, FAULT, false));
    stack_snap before = snap();
    s = cus_stream_unref(s);
    assert_int_equal(cus_fake_faults_fired(), 1);
    assert_int_equal(env_destroyed.count, 1);
    assert_int_equal(env_destroyed.last_status, CU(FAULT));
    assert_int_equal(cus_last_status(), CUS_ERROR_INVALID_ARGUMENT);
    assert_string_equal(cus_last_error_message(), msg);
    assert_stack_unchanged(before);
    assert_int_equal(cus_debug_live_objects(), 1); /* the context only */
    c = cus_context_unref(c);                      /* cuCtxDestroy takes the stream */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
}

static void test_poisoned_context_fails_fast(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_stream *s = new_stream(c, 0);
    cus_event *e = new_event(c, 0);
    assert_ok(cus_fake_fail_entry("cuStreamSynchronize", 1, CUDA_ERROR_ILLEGAL_ADDRESS, false));
    assert_status(cus_stream_synchronize(s), CU(CUDA_ERROR_ILLEGAL_ADDRESS));
    assert_int_equal(cus_context_poisoned(c), CUDA_ERROR_ILLEGAL_ADDRESS);
    leak_snap before = leak_snap_now();
    unsigned long calls = cus_fake_call_count();
    bool done = false;
    int p = 42;
    unsigned int f = 42;
    cus_stream *s2 = SENTINEL_PTR(s2);
    assert_status(cus_stream_synchronize(s), CU(CUDA_ERROR_ILLEGAL_ADDRESS));
    assert_status(cus_stream_query(s, &done), CU(CUDA_ERROR_ILLEGAL_ADDRESS));
    assert_status(cus_stream_wait_event(s, e), CU(CUDA_ERROR_ILLEGAL_ADDRESS));
    assert_status(cus_stream_launch_host_fn(s, nothing, NULL), CU(CUDA_ERROR_ILLEGAL_ADDRESS));
    assert_status(cus_stream_priority(s, &p), CU(CUDA_ERROR_ILLEGAL_ADDRESS));
    assert_status(cus_stream_flags(s, &f), CU(CUDA_ERROR_ILLEGAL_ADDRESS));
    assert_status(cus_stream_create(c, 0, 0, &s2), CU(CUDA_ERROR_ILLEGAL_ADDRESS));
    assert_false(done);
    assert_int_equal(p, 42);
    assert_int_equal(f, 42);
    assert_ptr_equal(s2, SENTINEL_PTR(s2));
    assert_int_equal(cus_fake_call_count(), calls);
    assert_nothing_changed(before);
    e = cus_event_unref(e);
    s = cus_stream_unref(s);
    assert_int_equal(cus_fake_calls_of("cuStreamDestroy"), 0);
    assert_int_equal(cus_fake_calls_of("cuEventDestroy"), 0);
    assert_int_equal(cus_fake_call_count(), calls);
    assert_int_equal(env_destroyed.count, 0);
    c = cus_context_unref(c);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
}

/* --- host functions --------------------------------------------------------------- */

typedef struct host_probe {
    atomic_int runs;
    bool on_driver_thread;
    bool in_host_fn;
    cus_status query_status;
    cus_status create_status;
    cus_status sync_status;
    cus_status last_status;
    unsigned int release_deferred;
    cus_stream *stream; /* queried from inside */
    cus_context *ctx;
    cus_event *event_out;
} host_probe;

static void probe_fn(void *arg)
{
    host_probe *p = arg;
    p->on_driver_thread = cus_fake_on_driver_thread();
    p->in_host_fn = cus_in_host_fn();
    bool done = false;
    p->query_status = cus_stream_query(p->stream, &done);
    p->last_status = cus_last_status();
    p->create_status = cus_event_create(p->ctx, 0, &p->event_out);
    p->sync_status = cus_stream_synchronize(p->stream);
    p->release_deferred = cus_release_deferred();
    atomic_fetch_add(&p->runs, 1);
}

static void test_host_fn_runs_on_the_driver_thread_and_refuses_cuscope(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_stream *s = new_stream(c, 0);
    host_probe p = {.stream = s, .ctx = c, .event_out = SENTINEL_PTR(p)};
    assert_false(cus_in_host_fn());
    assert_false(cus_fake_on_driver_thread());
    unsigned long calls_before = cus_fake_call_count();
    assert_ok(cus_stream_launch_host_fn(s, probe_fn, &p));
    assert_int_equal(atomic_load(&p.runs), 0); /* queued, not run */
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(atomic_load(&p.runs), 1);
    assert_true(p.on_driver_thread);
    assert_true(p.in_host_fn);
    assert_int_equal(p.query_status, CUS_ERROR_IN_HOST_FUNCTION);
    assert_int_equal(p.last_status, CUS_ERROR_IN_HOST_FUNCTION);
    assert_int_equal(p.create_status, CUS_ERROR_IN_HOST_FUNCTION);
    assert_int_equal(p.sync_status, CUS_ERROR_IN_HOST_FUNCTION);
    assert_int_equal(p.release_deferred, 0);
    assert_ptr_equal(p.event_out, SENTINEL_PTR(p));
    assert_int_equal(cus_fake_misuse_count(), 0);
    assert_int_equal(cus_fake_host_functions_run(), 1);
    /* launch (push, capture query, call, pop) and synchronize (push, call,
     * pop): nothing else */
    assert_int_equal(cus_fake_call_count() - calls_before, 7);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_EVENT), 0);
    assert_false(cus_in_host_fn());
    s = cus_stream_unref(s);
    c = cus_context_unref(c);
}

typedef struct drop_probe {
    cus_stream *stream;
    cus_event *event;
    size_t objects_inside;
    bool ran;
} drop_probe;

static void drop_fn(void *arg)
{
    drop_probe *d = arg;
    d->stream = cus_stream_unref(d->stream);
    d->event = cus_event_unref(d->event);
    d->objects_inside = cus_debug_live_objects();
    d->ran = true;
}

static void check_drop_deferred(bool by_release)
{
    cus_context *c = new_ctx();
    cus_stream *s = new_stream(c, 0);
    size_t objects = cus_debug_live_objects();
    size_t handles = cus_fake_live_handles(CUS_FAKE_HANDLE_ANY);
    drop_probe d = {.stream = new_stream(c, 0), .event = new_event(c, 0)};
    assert_ok(cus_stream_launch_host_fn(s, drop_fn, &d));
    if (by_release) {
        cus_fake_run_streams();
        assert_true(d.ran);
        assert_int_equal(cus_fake_misuse_count(), 0);
        assert_int_equal(cus_fake_calls_of("cuStreamDestroy"), 0);
        assert_int_equal(cus_fake_calls_of("cuEventDestroy"), 0);
        assert_int_equal(cus_debug_live_objects(), objects + 2); /* deferred, not freed */
        assert_int_equal(cus_release_deferred(), 2);
        assert_int_equal(cus_release_deferred(), 0);
    } else {
        assert_ok(cus_stream_synchronize(s));
        assert_true(d.ran);
    }
    assert_null(d.stream);
    assert_null(d.event);
    assert_int_equal(d.objects_inside, objects + 2);
    assert_int_equal(cus_fake_misuse_count(), 0);
    assert_int_equal(cus_debug_live_objects(), objects);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), handles);
    assert_int_equal(cus_fake_calls_of("cuStreamDestroy"), 1);
    assert_int_equal(cus_fake_calls_of("cuEventDestroy"), 1);
    assert_int_equal(env_destroyed.count, 0);
    s = cus_stream_unref(s);
    c = cus_context_unref(c);
}

static void test_last_unref_in_host_fn_deferred_to_synchronize(void **state)
{
    (void)state;
    check_drop_deferred(false);
}

static void test_last_unref_in_host_fn_deferred_to_release_deferred(void **state)
{
    (void)state;
    check_drop_deferred(true);
}

static void count_fn(void *arg)
{
    atomic_fetch_add((atomic_int *)arg, 1);
}

static void test_failed_launch_frees_its_record_and_never_runs(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_stream *s = new_stream(c, 0);
    atomic_int runs = 0;
    assert_fault_surfaces("cuLaunchHostFunc", cus_stream_launch_host_fn(s, count_fn, &runs));
    assert_int_equal(cus_fake_stream_pending(cus_stream_handle(s)), 0);
    assert_ok(cus_stream_synchronize(s));
    cus_fake_run_streams();
    assert_int_equal(atomic_load(&runs), 0);
    assert_int_equal(cus_fake_host_functions_run(), 0);
    assert_ok(cus_stream_launch_host_fn(s, count_fn, &runs));
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(atomic_load(&runs), 1);
    s = cus_stream_unref(s);
    c = cus_context_unref(c);
}

static void test_host_fns_run_in_stream_order(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_stream *s = new_stream(c, 0);
    atomic_int runs = 0;
    for (int i = 0; i < 5; i++)
        assert_ok(cus_stream_launch_host_fn(s, count_fn, &runs));
    assert_int_equal(cus_fake_stream_pending(cus_stream_handle(s)), 5);
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(atomic_load(&runs), 5);
    s = cus_stream_unref(s);
    c = cus_context_unref(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_create_with_priority_and_flags),
        ENV_TEST(test_create_null_args),
        ENV_TEST(test_create_priority_out_of_range),
        ENV_TEST(test_create_asks_the_priority_range_once_per_context),
        ENV_TEST(test_create_faults),
        ENV_TEST(test_create_faults_when_current),
        ENV_TEST(test_one_shot_pop_failure_is_retried),
        ENV_TEST(test_default_and_foreign_streams),
        ENV_TEST(test_default_and_foreign_null_args),
        ENV_TEST(test_accessors_and_refs_on_null),
        ENV_TEST(test_ref_keeps_the_stream),
        ENV_TEST(test_calls_null_args),
        ENV_TEST(test_calls_faults),
        ENV_TEST(test_query_pending_then_done),
        ENV_TEST(test_stream_keeps_its_context_alive),
        ENV_TEST(test_destroy_failure_goes_to_the_handler),
        ENV_TEST(test_poisoned_context_fails_fast),
        ENV_TEST(test_host_fn_runs_on_the_driver_thread_and_refuses_cuscope),
        ENV_TEST(test_last_unref_in_host_fn_deferred_to_synchronize),
        ENV_TEST(test_last_unref_in_host_fn_deferred_to_release_deferred),
        ENV_TEST(test_failed_launch_frees_its_record_and_never_runs),
        ENV_TEST(test_host_fns_run_in_stream_order),
    };
    return cmocka_run_group_tests_name("stream", tests, NULL, NULL);
}
