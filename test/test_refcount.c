/* Reference counts that defend themselves (lib/internal.h, cus_refcount_*):
 * a reference taken on an object whose last one was released, and a release
 * below zero, each reach the destroy handler once and leave the object kept
 * (leaked) instead of freed twice or under its user. The window in which
 * such an object is still there to misuse is a deferred destruction: while a
 * capture is open every last release waits for its end (cuscope/object.h).
 *
 * Each test leaks its object on purpose, so each runs in a binary of its own
 * kind: the teardown checks what was reported instead of the usual "nothing
 * alive", and the leaked objects stay reachable from `kept` (no leak report
 * from valgrind or LeakSanitizer). */
#include <stdio.h>
#include <string.h>

#include "stream_common.h"

/* Not static: stores to it cannot be optimised away, so the objects stay
 * reachable. */
extern cus_buffer *refcount_kept[4];
cus_buffer *refcount_kept[4];
static unsigned int nkept;

/* The destroy handler's reports, by kind. */
static unsigned int reports_ref, reports_unref;
static void on_destroy_error(const cus_error *e, void *data)
{
    (void)data;
    if (strstr(e->message, "a reference taken after its last one was released"))
        reports_ref++;
    else if (strstr(e->message, "more references released than were taken"))
        reports_unref++;
}

/* One install for the whole group: a reinstall is refused while cuscope
 * objects are alive, and these tests leave some. */
static int group_setup(void **state)
{
    return env_setup(state);
}

static int setup(void **state)
{
    (void)state;
    cus_set_destroy_error_handler(on_destroy_error, NULL);
    reports_ref = reports_unref = 0;
    return 0;
}

/* The objects the test leaked on purpose are alive, and nothing else. */
static int teardown(void **state)
{
    (void)state;
    cus_set_destroy_error_handler(NULL, NULL);
    cus_clear_last_error();
    return 0;
}

/* A stream-ordered buffer whose last reference is dropped while its stream
 * captures: its destruction is deferred to the capture's end (its
 * cuMemFreeAsync would become a node of the graph), so the pointer is still
 * valid memory for the misuse that follows. */
static cus_buffer *deferred_buffer(cus_context *c, cus_stream *s, cus_capture_guard *cap)
{
    (void)c;
    cus_buffer *b = NULL;
    assert_ok(cus_buffer_alloc_async(s, 256, &b));
    assert_ok(cus_stream_synchronize(s));
    unsigned long blocks = cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY);
    *cap = cus_capture_begin(s, CU_STREAM_CAPTURE_MODE_RELAXED);
    assert_ok(cap->status);
    assert_null(cus_buffer_unref(b)); /* the last one: deferred */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY), blocks);
    return b;
}

static void test_a_reference_taken_at_zero_keeps_the_object(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_stream *s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_capture_guard cap;
    cus_buffer *e = deferred_buffer(c, s, &cap);
    unsigned long before = cus_destroy_error_count();
    assert_ptr_equal(cus_buffer_ref(e), e); /* a use after the last release */
    assert_int_equal(reports_ref, 1);
    assert_int_equal(cus_destroy_error_count(), before + 1);
    /* Later references and releases on it are silent. */
    assert_ptr_equal(cus_buffer_ref(e), e);
    assert_null(cus_buffer_unref(e));
    assert_null(cus_buffer_unref(e));
    assert_int_equal(reports_ref + reports_unref, 1);
    unsigned long blocks = cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY);
    cus_capture_abandon(&cap);
    /* The deferred destruction skipped it: the taker may still use it. */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY), blocks);
    assert_true(cus_buffer_ptr(e) != 0);
    assert_ok(cus_buffer_fill_u8_async(e, 0, 7, 256, s));
    assert_ok(cus_stream_synchronize(s));
    refcount_kept[nkept++] = e;
    s = cus_stream_unref(s); /* the buffer keeps it */
    c = cus_context_unref(c); /* the buffer and its stream keep it */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_CONTEXT), 1);
    assert_int_equal(cus_debug_live_objects(), 3); /* the buffer, its stream and context */
}

static void test_a_release_below_zero_is_reported_and_not_freed_twice(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_stream *s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_capture_guard cap;
    cus_buffer *e = deferred_buffer(c, s, &cap);
    unsigned long destroys = cus_fake_calls_of("cuMemFreeAsync");
    assert_null(cus_buffer_unref(e)); /* one release too many */
    assert_int_equal(reports_unref, 1);
    assert_null(cus_buffer_unref(e));
    assert_int_equal(reports_unref, 1);
    unsigned long blocks = cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY);
    cus_capture_abandon(&cap);
    assert_int_equal(cus_fake_calls_of("cuMemFreeAsync"), destroys);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY), blocks);
    refcount_kept[nkept++] = e;
    s = cus_stream_unref(s);
    c = cus_context_unref(c);
}

/* The common case is untouched: a deferred destruction with no misuse runs
 * at the capture's end, with no report. */
static void test_a_deferred_destruction_without_misuse_runs(void **state)
{
    (void)state;
    unsigned long blocks = cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY);
    cus_context *c = new_ctx();
    cus_stream *s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_capture_guard cap;
    (void)deferred_buffer(c, s, &cap);
    cus_capture_abandon(&cap);
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY), blocks);
    assert_int_equal(reports_ref + reports_unref, 0);
    s = cus_stream_unref(s);
    c = cus_context_unref(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_a_deferred_destruction_without_misuse_runs, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_reference_taken_at_zero_keeps_the_object, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_release_below_zero_is_reported_and_not_freed_twice,
                                        setup, teardown),
    };
    return cmocka_run_group_tests(tests, group_setup, NULL);
}
