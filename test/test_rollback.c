/* Creation rollbacks: when cus_stream_create or cus_event_create cannot
 * restore the stack after creating a handle, they destroy it again; if that
 * destroy fails too, the leaked driver handle must reach the destroy handler
 * (found by the fault sweep's persistent runs over the stream scenarios). */
#include <string.h>

#include <cudaTypedefs.h>

#include "stream_common.h"

/* Raw pops of the fake's stack: what the failed pops left pushed. */
static void reconcile_fake_stack(void)
{
    void *pfn = NULL;
    CUdriverProcAddressQueryResult qs;
    assert_int_equal(cus_fake_get_proc_address("cuCtxPopCurrent", &pfn, 4000, 0, &qs), 0);
    PFN_cuCtxPopCurrent_v4000 raw_pop;
    memcpy(&raw_pop, &pfn, sizeof pfn);
    while (cus_fake_thread_stack_depth() > (int)cus_context_stack_depth()) {
        CUcontext h;
        assert_int_equal(raw_pop(&h), 0);
    }
}

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_stream_create_rollback_failure_is_reported),
        ENV_TEST(test_event_create_rollback_failure_is_reported),
    };
    return cmocka_run_group_tests_name("known_bugs", tests, NULL, NULL);
}
