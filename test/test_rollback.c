/* Creation rollbacks: when a creation (a stream, an event, a buffer of each
 * kind, a module) cannot restore the stack after making its handle, it
 * destroys the handle again; if that destroy fails too, the leaked driver
 * handle must reach the destroy handler (found by the fault sweep's
 * persistent runs over the stream scenarios), and the call returns the pop's
 * failure. */
#include <string.h>

#include <cudaTypedefs.h>

#include "stream_common.h"
#include "harness/check.h"

typedef struct rollback_result {
    cus_status st;
    unsigned long reported;
    size_t leaked; /* handles of the kind left live after the failed create */
} rollback_result;

static rollback_result failed_create_rollback(bool event)
{
    cus_context *c = new_ctx();
    /* cus_stream_create pops once first, after cuCtxGetStreamPriorityRange:
     * fail from the pop after cuStreamCreateWithPriority on. */
    assert_ok(cus_fake_fail_entry("cuCtxPopCurrent", event ? 1 : 2, FAULT, true));
    assert_ok(cus_fake_fail_entry(event ? "cuEventDestroy" : "cuStreamDestroy", 1, FAULT, false));
    rollback_result r;
    if (event) {
        cus_event *e = NULL;
        r.st = cus_event_create(c, 0, &e);
        assert_null(e);
    } else {
        cus_stream *s = NULL;
        r.st = cus_stream_create(c, 0, 0, &s);
        assert_null(s);
    }
    cus_fake_clear_faults();
    assert_int_equal(cus_fake_calls_of(event ? "cuEventCreate" : "cuStreamCreateWithPriority"), 1);
    assert_int_equal(cus_fake_calls_of(event ? "cuEventDestroy" : "cuStreamDestroy"), 1);
    r.reported = env_destroyed.count;
    r.leaked = cus_fake_live_handles(event ? CUS_FAKE_HANDLE_EVENT : CUS_FAKE_HANDLE_STREAM);
    /* Release everything before asserting: cuCtxDestroy takes the handle. */
    reconcile_fake_stack();
    c = cus_context_unref(c);
    return r;
}

static void test_stream_create_rollback_failure_is_reported(void **state)
{
    (void)state;
    rollback_result r = failed_create_rollback(false);
    assert_int_equal(r.st, CU(FAULT));
    /* The leaked handle must at least reach the destroy handler. */
    if (r.leaked > r.reported)
        fail_msg("a stream handle leaked (%zu live) and the destroy handler got %lu reports",
                 r.leaked, r.reported);
}

static void test_event_create_rollback_failure_is_reported(void **state)
{
    (void)state;
    rollback_result r = failed_create_rollback(true);
    assert_int_equal(r.st, CU(FAULT));
    if (r.leaked > r.reported)
        fail_msg("an event handle leaked (%zu live) and the destroy handler got %lu reports",
                 r.leaked, r.reported);
}

/* The other creations: each makes one handle with a temporary switch to c
 * (not current), so its pop is the first; the pop fails every time, and so
 * does the destroy that rolls the handle back. */
typedef struct creation {
    const char *name;
    const char *destroy_entry;
    cus_fake_handle_kind kind;
    cus_status (*create)(cus_context *c, cus_stream *s);
} creation;

static cus_status make_buffer(cus_context *c, cus_stream *s)
{
    (void)s;
    cus_autoptr(cus_buffer) b = NULL;
    cus_status st = cus_buffer_alloc(c, 64, &b);
    assert_null(b);
    return st;
}

static cus_status make_async_buffer(cus_context *c, cus_stream *s)
{
    (void)c;
    cus_autoptr(cus_buffer) b = NULL;
    cus_status st = cus_buffer_alloc_async(s, 64, &b);
    assert_null(b);
    return st;
}

static cus_status make_managed_buffer(cus_context *c, cus_stream *s)
{
    (void)s;
    cus_autoptr(cus_buffer) b = NULL;
    cus_status st = cus_buffer_alloc_managed(c, 64, CU_MEM_ATTACH_GLOBAL, &b);
    assert_null(b);
    return st;
}

static cus_status make_host_buffer(cus_context *c, cus_stream *s)
{
    (void)s;
    cus_autoptr(cus_host_buffer) b = NULL;
    cus_status st = cus_host_buffer_alloc(c, 64, 0, &b);
    assert_null(b);
    return st;
}

static const char rollback_ptx[] = ".version 8.0\n.target sm_80\n.address_size 64\n"
                                   ".visible .entry k()\n{\n\tret;\n}\n";

static cus_status make_module(cus_context *c, cus_stream *s)
{
    (void)s;
    cus_autoptr(cus_module) m = NULL;
    cus_status st = cus_module_load_data(c, rollback_ptx, sizeof rollback_ptx, NULL, &m);
    assert_null(m);
    return st;
}

static const creation creations[] = {
    {"cus_buffer_alloc", "cuMemFree", CUS_FAKE_HANDLE_DEVICE_MEMORY, make_buffer},
    {"cus_buffer_alloc_async", "cuMemFreeAsync", CUS_FAKE_HANDLE_DEVICE_MEMORY,
     make_async_buffer},
    {"cus_buffer_alloc_managed", "cuMemFree", CUS_FAKE_HANDLE_MANAGED_MEMORY, make_managed_buffer},
    {"cus_host_buffer_alloc", "cuMemFreeHost", CUS_FAKE_HANDLE_HOST_MEMORY, make_host_buffer},
    {"cus_module_load_data", "cuModuleUnload", CUS_FAKE_HANDLE_MODULE, make_module},
};

static void test_every_creation_rollback_failure_is_reported(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof creations / sizeof creations[0]; i++) {
        const creation *k = &creations[i];
        assert_int_equal(env_setup_with(NULL), 0);
        cus_context *c = new_ctx();
        cus_stream *s = new_stream(c, 0);
        size_t before = cus_fake_live_handles(k->kind);
        unsigned long destroys = cus_fake_calls_of(k->destroy_entry);
        assert_ok(cus_fake_fail_entry("cuCtxPopCurrent", 1, FAULT, true));
        assert_ok(cus_fake_fail_entry(k->destroy_entry, 1, FAULT, false));
        cus_clear_last_error();
        cus_status st = k->create(c, s);
        cus_fake_clear_faults();
        if (st != CU(FAULT) || cus_last_status() != CU(FAULT))
            fail_msg("%s: returned %s (last error %s), want the pop's %s", k->name,
                     cus_status_name(st), cus_status_name(cus_last_status()),
                     cus_status_name(CU(FAULT)));
        assert_string_equal(cus_last_error()->driver_call, "cuCtxPopCurrent");
        if (cus_fake_calls_of(k->destroy_entry) != destroys + 1)
            fail_msg("%s: the rollback made %lu %s call(s), want 1", k->name,
                     cus_fake_calls_of(k->destroy_entry) - destroys, k->destroy_entry);
        size_t leaked = cus_fake_live_handles(k->kind) - before;
        if (leaked != 1 || env_destroyed.count != 1 ||
            !strstr(env_destroyed.last_message, "rolling back"))
            fail_msg("%s: %zu handle(s) leaked, %lu destroy report(s) (last: %s); want the one "
                     "leaked handle reported",
                     k->name, leaked, env_destroyed.count, env_destroyed.last_message);
        reconcile_fake_stack();
        s = cus_stream_unref(s);
        c = cus_context_unref(c);
        /* The leaked handle dies with its context: a fresh install checks the rest. */
        assert_int_equal(cus_debug_live_objects(), 0);
    }
    assert_int_equal(env_setup_with(NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_stream_create_rollback_failure_is_reported),
        ENV_TEST(test_event_create_rollback_failure_is_reported),
        ENV_TEST(test_every_creation_rollback_failure_is_reported),
    };
    return cmocka_run_group_tests_name("rollback", tests, NULL, NULL);
}
