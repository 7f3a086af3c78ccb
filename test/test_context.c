/* Contexts (include/cuscope/context.h): creation, primary retains, wrapping,
 * references, accessors, the per-context calls, the sticky-error latch, and
 * the destroy paths. Every failure is checked for what the header promises:
 * the status returned and recorded, out parameters untouched, and the thread's
 * stack (cuscope's mirror and the fake driver's) exactly as before. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cudaTypedefs.h>

#include "harness/env.h"
#include "harness/check.h"

#define CU(x) ((cus_status)(x))

/* The code injected where a test needs a plain, non-sticky driver failure. */
#define FAULT CUDA_ERROR_NOT_PERMITTED

static const cus_fake_config two_devices = {.device_count = 2};

static int setup_two_devices(void **state)
{
    (void)state;
    return env_setup_with(&two_devices);
}

/* For tests that provoke fake-driver misuse on purpose: checks cuscope's own
 * invariants, then reinstalls the fake so env_teardown sees a clean one. */
static int teardown_after_misuse(void **state)
{
    assert_int_equal(cus_context_stack_depth(), 0);
    assert_int_equal(cus_debug_live_objects(), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
    assert_ok(cus_fake_install(NULL));
    return env_teardown(state);
}

#define TWO_DEV_TEST(f) cmocka_unit_test_setup_teardown(f, setup_two_devices, env_teardown)
#define MISUSE_TEST(f) cmocka_unit_test_setup_teardown(f, env_setup, teardown_after_misuse)

static cus_device dev_at(int ordinal)
{
    cus_device d = {-1};
    assert_ok(cus_device_get(ordinal, &d));
    return d;
}

static cus_device dev0(void)
{
    return dev_at(0);
}

static cus_context *new_ctx(unsigned int flags)
{
    cus_context *c = NULL;
    assert_ok(cus_context_create(dev0(), flags, &c));
    assert_non_null(c);
    return c;
}

static cus_context *new_primary(void)
{
    cus_context *c = NULL;
    assert_ok(cus_context_retain_primary(dev0(), &c));
    assert_non_null(c);
    return c;
}

/* Both views of the calling thread's stack. */
typedef struct stack_snap {
    unsigned int depth;
    int fake_depth;
    cus_context *top;
    CUcontext fake_top;
} stack_snap;

static stack_snap snap(void)
{
    stack_snap s;
    s.depth = cus_context_stack_depth();
    s.fake_depth = cus_fake_thread_stack_depth();
    s.top = cus_context_current();
    s.fake_top = s.fake_depth ? cus_fake_thread_stack_at(s.fake_depth - 1) : NULL;
    return s;
}

static bool snap_equal(stack_snap a, stack_snap b)
{
    return a.depth == b.depth && a.fake_depth == b.fake_depth && a.top == b.top &&
           a.fake_top == b.fake_top;
}

#define assert_stack_unchanged(before)                                         \
    do {                                                                       \
        stack_snap now_ = snap();                                              \
        if (!snap_equal((before), now_))                                       \
            fail_msg("stack changed: depth %u/%d top %p/%p -> %u/%d top %p/%p", \
                     (before).depth, (before).fake_depth, (void *)(before).top, \
                     (void *)(before).fake_top, now_.depth, now_.fake_depth,  \
                     (void *)now_.top, (void *)now_.fake_top);                \
    } while (0)

/* --- create --------------------------------------------------------------------- */

static void test_create_makes_an_owned_context_and_pushes_it(void **state)
{
    (void)state;
    cus_context *c = new_ctx(0);
    assert_int_equal(cus_context_get_kind(c), CUS_CONTEXT_OWNED);
    assert_int_equal(cus_context_device(c).handle, 0);
    assert_non_null(cus_context_handle(c));
    assert_int_equal(cus_context_poisoned(c), CUS_SUCCESS);
    assert_int_equal(cus_context_stack_depth(), 1);
    assert_ptr_equal(cus_context_current(), c);
    assert_int_equal(cus_fake_thread_stack_depth(), 1);
    assert_ptr_equal(cus_fake_thread_stack_at(0), cus_context_handle(c));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_CONTEXT), 1);
    assert_int_equal(cus_debug_live_objects(), 1);
    assert_ok(cus_context_pop(NULL));
    c = cus_context_unref(c);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_CONTEXT), 0);
}

static void test_create_passes_its_cu_flags_to_the_driver(void **state)
{
    (void)state;
    const unsigned int flags = CU_CTX_SCHED_BLOCKING_SYNC | CU_CTX_LMEM_RESIZE_TO_MAX;
    cus_context *c = new_ctx(flags);
    unsigned int got = 0;
    assert_ok(cus_context_flags(c, &got));
    assert_int_equal(got, flags);
    assert_ok(cus_context_pop(NULL));
    c = cus_context_unref(c);
}

static void test_create_no_push_is_not_passed_to_the_driver(void **state)
{
    (void)state;
    cus_context *c = new_ctx(CUS_CTX_NO_PUSH | CU_CTX_SCHED_SPIN);
    assert_int_equal(cus_context_stack_depth(), 0);
    assert_int_equal(cus_fake_thread_stack_depth(), 0);
    unsigned int got = 0;
    assert_ok(cus_context_flags(c, &got));
    assert_int_equal(got, CU_CTX_SCHED_SPIN);
    c = cus_context_unref(c);
}

static void test_create_on_the_second_device(void **state)
{
    (void)state;
    cus_context *c = NULL;
    assert_ok(cus_context_create(dev_at(1), CUS_CTX_NO_PUSH, &c));
    assert_int_equal(cus_context_device(c).handle, 1);
    c = cus_context_unref(c);
}

static void test_create_on_a_bad_device_is_invalid_device(void **state)
{
    (void)state;
    cus_context *a = new_ctx(0);
    stack_snap before = snap();
    cus_context *c = (cus_context *)&c;
    assert_status(cus_context_create((cus_device){7}, 0, &c), CU(CUDA_ERROR_INVALID_DEVICE));
    assert_ptr_equal(c, (cus_context *)&c);
    assert_status(cus_context_create((cus_device){-1}, CUS_CTX_NO_PUSH, &c),
                  CU(CUDA_ERROR_INVALID_DEVICE));
    assert_ptr_equal(c, (cus_context *)&c);
    assert_stack_unchanged(before);
    assert_int_equal(cus_debug_live_objects(), 1);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_CONTEXT), 1);
    assert_ok(cus_context_pop(NULL));
    a = cus_context_unref(a);
}

static void test_create_with_invalid_cu_flags_is_the_drivers_invalid_value(void **state)
{
    (void)state;
    static const unsigned int bad[] = {
        CU_CTX_FLAGS_MASK + 1,                   /* an unknown bit */
        1u << 30,                                /* not ours (CUS_CTX_NO_PUSH is 1 << 31) */
        CU_CTX_SCHED_SPIN | CU_CTX_SCHED_YIELD,  /* two scheduling policies */
        (1u << 30) | CUS_CTX_NO_PUSH,
    };
    assert_ok(cus_init());
    stack_snap before = snap();
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cus_context *c = (cus_context *)&c;
        cus_status st = cus_context_create(dev0(), bad[i], &c);
        if (st != CU(CUDA_ERROR_INVALID_VALUE))
            fail_msg("flags 0x%x: %s, expected CUDA_ERROR_INVALID_VALUE", bad[i],
                     cus_status_name(st));
        assert_int_equal(cus_last_status(), CUDA_ERROR_INVALID_VALUE);
        assert_ptr_equal(c, (cus_context *)&c);
        assert_stack_unchanged(before);
    }
    assert_int_equal(cus_debug_live_objects(), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
}

static void test_create_null_out_is_invalid_argument(void **state)
{
    (void)state;
    assert_status(cus_context_create(dev0(), 0, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(cus_fake_calls_of("cuCtxCreate"), 0);
    assert_int_equal(cus_context_stack_depth(), 0);
}

static void test_create_fault_surfaces_and_leaves_out_and_stack(void **state)
{
    (void)state;
    cus_context *a = new_ctx(0);
    for (int no_push = 0; no_push <= 1; no_push++) {
        stack_snap before = snap();
        assert_ok(cus_fake_fail_entry("cuCtxCreate", 1, FAULT, false));
        cus_context *c = (cus_context *)&c;
        assert_status(cus_context_create(dev0(), no_push ? CUS_CTX_NO_PUSH : 0, &c), CU(FAULT));
        assert_ptr_equal(c, (cus_context *)&c);
        assert_string_equal(cus_last_error()->function, "cus_context_create");
        assert_string_equal(cus_last_error()->driver_call, "cuCtxCreate_v4");
        assert_stack_unchanged(before);
        assert_int_equal(cus_debug_live_objects(), 1);
        assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_CONTEXT), 1);
    }
    assert_ok(cus_context_pop(NULL));
    a = cus_context_unref(a);
}

static void test_create_no_push_with_failing_pop_destroys_the_new_context(void **state)
{
    (void)state;
    cus_context *a = new_ctx(0);
    stack_snap before = snap();
    unsigned long destroys = cus_fake_calls_of("cuCtxDestroy");
    assert_ok(cus_fake_fail_entry("cuCtxPopCurrent", 1, FAULT, false));
    cus_context *c = (cus_context *)&c;
    assert_status(cus_context_create(dev0(), CUS_CTX_NO_PUSH, &c), CU(FAULT));
    assert_ptr_equal(c, (cus_context *)&c);
    assert_string_equal(cus_last_error()->driver_call, "cuCtxPopCurrent");
    assert_int_equal(cus_fake_calls_of("cuCtxDestroy"), destroys + 1);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_CONTEXT), 1); /* a only */
    assert_int_equal(cus_debug_live_objects(), 1);
    assert_stack_unchanged(before);
    assert_int_equal(env_destroyed.count, 0);
    assert_ok(cus_context_pop(NULL));
    a = cus_context_unref(a);
}

/* --- retain_primary ------------------------------------------------------------- */

static void test_retain_primary_counts_retains_and_never_pushes(void **state)
{
    (void)state;
    cus_context *a = new_ctx(0);
    stack_snap before = snap();
    unsigned long pushes = cus_fake_calls_of("cuCtxPushCurrent");
    unsigned long pops = cus_fake_calls_of("cuCtxPopCurrent");
    assert_int_equal(cus_fake_primary_retain_count(0), 0);

    cus_context *p1 = new_primary();
    assert_int_equal(cus_context_get_kind(p1), CUS_CONTEXT_PRIMARY);
    assert_int_equal(cus_context_device(p1).handle, 0);
    assert_int_equal(cus_fake_primary_retain_count(0), 1);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_PRIMARY_CONTEXT), 1);
    cus_context *p2 = new_primary();
    assert_ptr_equal(cus_context_handle(p1), cus_context_handle(p2));
    assert_ptr_not_equal(p1, p2); /* two objects, two driver retains */
    assert_int_equal(cus_fake_primary_retain_count(0), 2);

    cus_context *extra = cus_context_ref(p1); /* a reference is not a retain */
    assert_int_equal(cus_fake_primary_retain_count(0), 2);
    extra = cus_context_unref(extra);
    assert_int_equal(cus_fake_primary_retain_count(0), 2);

    p1 = cus_context_unref(p1);
    assert_int_equal(cus_fake_primary_retain_count(0), 1);
    p2 = cus_context_unref(p2);
    assert_int_equal(cus_fake_primary_retain_count(0), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_PRIMARY_CONTEXT), 0);

    assert_stack_unchanged(before);
    assert_int_equal(cus_fake_calls_of("cuCtxPushCurrent"), pushes);
    assert_int_equal(cus_fake_calls_of("cuCtxPopCurrent"), pops);
    assert_ok(cus_context_pop(NULL));
    a = cus_context_unref(a);
}

static void test_primary_context_reports_map_host_flags(void **state)
{
    (void)state;
    cus_context *p = new_primary();
    unsigned int flags = 0;
    assert_ok(cus_context_flags(p, &flags));
    assert_int_equal(flags, CU_CTX_MAP_HOST);
    assert_int_equal(cus_context_stack_depth(), 0);
    p = cus_context_unref(p);
}

static void test_retain_primary_of_each_device_is_separate(void **state)
{
    (void)state;
    cus_context *p0 = NULL, *p1 = NULL;
    assert_ok(cus_context_retain_primary(dev_at(0), &p0));
    assert_ok(cus_context_retain_primary(dev_at(1), &p1));
    assert_ptr_not_equal(cus_context_handle(p0), cus_context_handle(p1));
    assert_int_equal(cus_context_device(p1).handle, 1);
    assert_int_equal(cus_fake_primary_retain_count(0), 1);
    assert_int_equal(cus_fake_primary_retain_count(1), 1);
    p1 = cus_context_unref(p1);
    assert_int_equal(cus_fake_primary_retain_count(0), 1);
    assert_int_equal(cus_fake_primary_retain_count(1), 0);
    p0 = cus_context_unref(p0);
}

static void test_retain_primary_on_a_bad_device_is_invalid_device(void **state)
{
    (void)state;
    assert_ok(cus_init());
    cus_context *p = (cus_context *)&p;
    assert_status(cus_context_retain_primary((cus_device){3}, &p), CU(CUDA_ERROR_INVALID_DEVICE));
    assert_ptr_equal(p, (cus_context *)&p);
    assert_int_equal(cus_debug_live_objects(), 0);
}

static void test_retain_primary_null_out_is_invalid_argument(void **state)
{
    (void)state;
    assert_status(cus_context_retain_primary(dev0(), NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(cus_fake_primary_retain_count(0), 0);
}

static void test_retain_primary_fault_surfaces_and_leaves_out_and_count(void **state)
{
    (void)state;
    cus_context *a = new_ctx(0);
    stack_snap before = snap();
    assert_ok(cus_fake_fail_entry("cuDevicePrimaryCtxRetain", 1, FAULT, false));
    cus_context *p = (cus_context *)&p;
    assert_status(cus_context_retain_primary(dev0(), &p), CU(FAULT));
    assert_ptr_equal(p, (cus_context *)&p);
    assert_string_equal(cus_last_error()->driver_call, "cuDevicePrimaryCtxRetain");
    assert_int_equal(cus_fake_primary_retain_count(0), 0);
    assert_int_equal(cus_debug_live_objects(), 1);
    assert_stack_unchanged(before);
    assert_ok(cus_context_pop(NULL));
    a = cus_context_unref(a);
}

/* --- wrap ----------------------------------------------------------------------- */

static void test_wrap_null_is_invalid_argument(void **state)
{
    (void)state;
    cus_context *o = new_ctx(CUS_CTX_NO_PUSH);
    cus_context *w = (cus_context *)&w;
    unsigned long calls = cus_fake_call_count();
    assert_status(cus_context_wrap(NULL, &w), CUS_ERROR_INVALID_ARGUMENT);
    assert_ptr_equal(w, (cus_context *)&w);
    assert_status(cus_context_wrap(cus_context_handle(o), NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(cus_fake_call_count(), calls);
    o = cus_context_unref(o);
}

static void test_wrap_makes_a_foreign_context_that_is_never_destroyed(void **state)
{
    (void)state;
    cus_context *a = new_ctx(0);
    cus_context *o = new_ctx(CUS_CTX_NO_PUSH);
    stack_snap before = snap();
    unsigned long pushes = cus_fake_calls_of("cuCtxPushCurrent");
    unsigned long pops = cus_fake_calls_of("cuCtxPopCurrent");
    cus_context *w = NULL;
    assert_ok(cus_context_wrap(cus_context_handle(o), &w));
    assert_non_null(w);
    assert_ptr_not_equal(w, o);
    assert_int_equal(cus_context_get_kind(w), CUS_CONTEXT_FOREIGN);
    assert_ptr_equal(cus_context_handle(w), cus_context_handle(o));
    assert_int_equal(cus_context_device(w).handle, 0);
    /* Two driver stack calls, and the stack as it was. */
    assert_int_equal(cus_fake_calls_of("cuCtxPushCurrent"), pushes + 1);
    assert_int_equal(cus_fake_calls_of("cuCtxPopCurrent"), pops + 1);
    assert_stack_unchanged(before);
    assert_ok(cus_context_synchronize(w));

    unsigned long destroys = cus_fake_calls_of("cuCtxDestroy");
    w = cus_context_unref(w);
    assert_null(w);
    assert_int_equal(cus_fake_calls_of("cuCtxDestroy"), destroys); /* never destroyed */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_CONTEXT), 2);
    assert_ok(cus_context_synchronize(o)); /* still alive for its owner */
    o = cus_context_unref(o);
    assert_ok(cus_context_pop(NULL));
    a = cus_context_unref(a);
}

static void test_wrap_records_the_device_of_the_handle(void **state)
{
    (void)state;
    cus_context *o = NULL;
    assert_ok(cus_context_create(dev_at(1), CUS_CTX_NO_PUSH, &o));
    cus_context *w = NULL;
    assert_ok(cus_context_wrap(cus_context_handle(o), &w));
    assert_int_equal(cus_context_device(w).handle, 1);
    w = cus_context_unref(w);
    o = cus_context_unref(o);
}

static void test_wrap_of_an_unknown_handle_fails_and_leaves_the_stack(void **state)
{
    (void)state;
    cus_context *a = new_ctx(0);
    stack_snap before = snap();
    cus_context *w = (cus_context *)&w;
    CUcontext bogus = (CUcontext)(uintptr_t)0x5eed0;
    assert_status(cus_context_wrap(bogus, &w), CU(CUDA_ERROR_INVALID_CONTEXT));
    assert_ptr_equal(w, (cus_context *)&w);
    assert_stack_unchanged(before);
    assert_int_equal(cus_debug_live_objects(), 1);
    assert_int_equal(cus_fake_misuse_count(), 1); /* the fake saw an unknown handle */
    assert_ok(cus_context_pop(NULL));
    a = cus_context_unref(a);
}

/* Wraps o's handle with a one-shot fault on entry and checks the promises.
 * Returns "" or what went wrong, after undoing any push wrap left behind, so
 * that the caller can release its objects before failing. */
static const char *wrap_with_fault(cus_context *o, const char *entry)
{
    static char why[256];
    why[0] = '\0';
    stack_snap before = snap();
    if (cus_fake_fail_entry(entry, 1, FAULT, false))
        return "cus_fake_fail_entry failed";
    cus_context *w = (cus_context *)&w;
    cus_status st = cus_context_wrap(cus_context_handle(o), &w);
    cus_status last = cus_last_status();
    const char *call = cus_last_error()->driver_call;
    stack_snap after = snap();
    if (after.fake_depth > before.fake_depth) {
        PFN_cuCtxPopCurrent_v4000 raw_pop =
            RAW_FN(PFN_cuCtxPopCurrent_v4000, "cuCtxPopCurrent", 4000);
        CUcontext h = NULL;
        (void)raw_pop(&h);
    }
    if (st != CU(FAULT) || last != CU(FAULT))
        snprintf(why, sizeof why, "fault on %s: wrap returned %s, recorded %s", entry,
                 cus_status_name(st), cus_status_name(last));
    else if (strcmp(call, entry) != 0)
        snprintf(why, sizeof why, "fault on %s: recorded driver call %s", entry, call);
    else if (w != (cus_context *)&w)
        snprintf(why, sizeof why, "fault on %s: out parameter written", entry);
    else if (!snap_equal(before, after))
        snprintf(why, sizeof why,
                 "fault on %s: wrap left the stack at depth %u (cuscope) / %d (driver), "
                 "was %u / %d",
                 entry, after.depth, after.fake_depth, before.depth, before.fake_depth);
    else if (cus_debug_live_objects() != 2)
        snprintf(why, sizeof why, "fault on %s: %zu objects alive", entry,
                 cus_debug_live_objects());
    return why;
}

static void test_wrap_push_or_get_device_fault_leaves_out_and_stack(void **state)
{
    (void)state;
    cus_context *a = new_ctx(0);
    cus_context *o = new_ctx(CUS_CTX_NO_PUSH);
    char why[2][256];
    snprintf(why[0], sizeof why[0], "%s", wrap_with_fault(o, "cuCtxPushCurrent"));
    snprintf(why[1], sizeof why[1], "%s", wrap_with_fault(o, "cuCtxGetDevice"));
    o = cus_context_unref(o);
    assert_ok(cus_context_pop(NULL));
    a = cus_context_unref(a);
    assert_string_equal(why[0], "");
    assert_string_equal(why[1], "");
}

/* wrap undoes its push with a pop that is retried once, as every undo in
 * cuscope is: a transient pop failure is absorbed and the stack is back. */
static void test_wrap_retries_a_failed_pop_and_restores_the_stack(void **state)
{
    (void)state;
    cus_context *a = new_ctx(0);
    cus_context *o = new_ctx(CUS_CTX_NO_PUSH);
    stack_snap before = snap();
    unsigned long pops = cus_fake_calls_of("cuCtxPopCurrent");
    assert_ok(cus_fake_fail_entry("cuCtxPopCurrent", 1, CUDA_ERROR_UNKNOWN, false));
    cus_context *w = NULL;
    assert_ok(cus_context_wrap(cus_context_handle(o), &w));
    assert_int_equal(cus_fake_calls_of("cuCtxPopCurrent"), pops + 2);
    assert_true(snap_equal(before, snap()));
    w = cus_context_unref(w);
    /* A pop that keeps failing: the wrap was made, so it is returned with
     * CUS_SUCCESS; the pop goes to the destroy handler, and the driver keeps
     * the entry, one above cuscope's mirror. */
    unsigned long reports = env_destroyed.count;
    assert_ok(cus_fake_fail_entry("cuCtxPopCurrent", 1, CUDA_ERROR_UNKNOWN, true));
    assert_ok(cus_context_wrap(cus_context_handle(o), &w));
    cus_fake_clear_faults();
    assert_non_null(w);
    assert_ptr_equal(cus_context_handle(w), cus_context_handle(o));
    env_assert_one_pop_report(reports, "cus_context_wrap");
    assert_int_equal(env_destroyed.last_status, CUDA_ERROR_UNKNOWN);
    stack_snap pushed = snap();
    assert_int_equal(pushed.depth, before.depth);
    assert_int_equal(pushed.fake_depth, before.fake_depth + 1);
    PFN_cuCtxPopCurrent_v4000 raw_pop = RAW_FN(PFN_cuCtxPopCurrent_v4000, "cuCtxPopCurrent", 4000);
    CUcontext h = NULL;
    assert_int_equal(raw_pop(&h), CUDA_SUCCESS);
    assert_ptr_equal(h, cus_context_handle(o));
    assert_true(snap_equal(before, snap()));
    /* The wrap is usable, and released normally. */
    assert_ok(cus_context_synchronize(w));
    w = cus_context_unref(w);
    o = cus_context_unref(o);
    assert_ok(cus_context_pop(NULL));
    a = cus_context_unref(a);
}

/* --- references and accessors --------------------------------------------------- */

static void test_ref_and_unref_accept_null(void **state)
{
    (void)state;
    assert_null(cus_context_ref(NULL));
    assert_null(cus_context_unref(NULL));
    assert_int_equal(cus_debug_live_objects(), 0);
}

static void test_ref_returns_its_argument_and_unref_always_returns_null(void **state)
{
    (void)state;
    cus_context *c = new_ctx(CUS_CTX_NO_PUSH);
    cus_context *r = cus_context_ref(c);
    assert_ptr_equal(r, c);
    assert_null(cus_context_unref(r));
    assert_int_equal(cus_debug_live_objects(), 1); /* one reference left */
    assert_ok(cus_context_synchronize(c));
    assert_int_equal(cus_fake_calls_of("cuCtxDestroy"), 0);
    c = cus_context_unref(c);
    assert_null(c);
    assert_int_equal(cus_fake_calls_of("cuCtxDestroy"), 1);
    assert_int_equal(cus_debug_live_objects(), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_CONTEXT), 0);
}

static void test_unref_of_a_pushed_context_waits_for_the_pop(void **state)
{
    (void)state;
    cus_context *c = new_ctx(0);
    c = cus_context_unref(c); /* the stack's reference remains */
    assert_int_equal(cus_debug_live_objects(), 1);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_CONTEXT), 1);
    assert_non_null(cus_context_current());
    assert_ok(cus_context_synchronize(cus_context_current()));
    assert_ok(cus_context_pop(NULL));
    assert_int_equal(cus_debug_live_objects(), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_CONTEXT), 0);
}

static void test_accessors_on_null_give_null_and_zero(void **state)
{
    (void)state;
    assert_ok(cus_init());
    unsigned long calls = cus_fake_call_count();
    assert_null(cus_context_handle(NULL));
    assert_int_equal(cus_context_device(NULL).handle, 0);
    assert_int_equal(cus_context_poisoned(NULL), CUS_SUCCESS);
    assert_int_equal(cus_fake_call_count(), calls);
}

/* The kind of NULL is the one that is never destroyed (context.h). */
static void test_kind_of_null_is_foreign(void **state)
{
    (void)state;
    assert_int_equal(cus_context_get_kind(NULL), CUS_CONTEXT_FOREIGN);
}

static void test_accessors_make_no_driver_call(void **state)
{
    (void)state;
    cus_context *c = new_ctx(CUS_CTX_NO_PUSH);
    cus_context *p = new_primary();
    unsigned long calls = cus_fake_call_count();
    for (int i = 0; i < 10; i++) {
        (void)cus_context_handle(c);
        (void)cus_context_device(c);
        (void)cus_context_get_kind(p);
        (void)cus_context_poisoned(c);
        (void)cus_context_current();
        (void)cus_context_stack_depth();
    }
    assert_int_equal(cus_fake_call_count(), calls);
    p = cus_context_unref(p);
    c = cus_context_unref(c);
}

static void test_kinds_are_owned_primary_and_foreign(void **state)
{
    (void)state;
    cus_context *o = new_ctx(CUS_CTX_NO_PUSH);
    cus_context *p = new_primary();
    cus_context *w = NULL;
    assert_ok(cus_context_wrap(cus_context_handle(o), &w));
    assert_int_equal(cus_context_get_kind(o), CUS_CONTEXT_OWNED);
    assert_int_equal(cus_context_get_kind(p), CUS_CONTEXT_PRIMARY);
    assert_int_equal(cus_context_get_kind(w), CUS_CONTEXT_FOREIGN);
    w = cus_context_unref(w);
    p = cus_context_unref(p);
    o = cus_context_unref(o);
}

/* --- the per-context calls: success --------------------------------------------- */

static void test_synchronize_on_top_makes_no_stack_call(void **state)
{
    (void)state;
    cus_context *c = new_ctx(0);
    unsigned long pushes = cus_fake_calls_of("cuCtxPushCurrent");
    unsigned long pops = cus_fake_calls_of("cuCtxPopCurrent");
    assert_ok(cus_context_synchronize(c));
    assert_int_equal(cus_fake_calls_of("cuCtxSynchronize"), 1);
    assert_int_equal(cus_fake_calls_of("cuCtxPushCurrent"), pushes);
    assert_int_equal(cus_fake_calls_of("cuCtxPopCurrent"), pops);
    assert_ok(cus_context_pop(NULL));
    c = cus_context_unref(c);
}

static void test_synchronize_off_top_switches_and_restores(void **state)
{
    (void)state;
    cus_context *a = new_ctx(0);
    cus_context *b = new_ctx(CUS_CTX_NO_PUSH);
    stack_snap before = snap();
    unsigned long pushes = cus_fake_calls_of("cuCtxPushCurrent");
    unsigned long pops = cus_fake_calls_of("cuCtxPopCurrent");
    assert_ok(cus_context_synchronize(b));
    assert_int_equal(cus_fake_calls_of("cuCtxPushCurrent"), pushes + 1);
    assert_int_equal(cus_fake_calls_of("cuCtxPopCurrent"), pops + 1);
    assert_stack_unchanged(before);
    /* Also on an empty stack. */
    assert_ok(cus_context_pop(NULL));
    stack_snap empty = snap();
    assert_ok(cus_context_synchronize(b));
    assert_stack_unchanged(empty);
    b = cus_context_unref(b);
    a = cus_context_unref(a);
}

static void test_synchronize_null_is_invalid_argument(void **state)
{
    (void)state;
    assert_status(cus_context_synchronize(NULL), CUS_ERROR_INVALID_ARGUMENT);
}

static void test_api_version_is_the_context_abi_and_needs_no_push(void **state)
{
    (void)state;
    cus_context *c = new_ctx(CUS_CTX_NO_PUSH);
    cus_context *p = new_primary();
    unsigned long pushes = cus_fake_calls_of("cuCtxPushCurrent");
    unsigned int v = 0;
    assert_ok(cus_context_api_version(c, &v));
    assert_int_equal(v, 3020);
    v = 0;
    assert_ok(cus_context_api_version(p, &v));
    assert_int_equal(v, 3020);
    assert_int_equal(cus_fake_calls_of("cuCtxPushCurrent"), pushes);
    unsigned int keep = 5;
    assert_status(cus_context_api_version(NULL, &keep), CUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(keep, 5);
    assert_status(cus_context_api_version(c, NULL), CUS_ERROR_INVALID_ARGUMENT);
    p = cus_context_unref(p);
    c = cus_context_unref(c);
}

static void test_flags_null_arguments_are_invalid(void **state)
{
    (void)state;
    cus_context *c = new_ctx(CUS_CTX_NO_PUSH);
    unsigned int f = 5;
    assert_status(cus_context_flags(NULL, &f), CUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(f, 5);
    assert_status(cus_context_flags(c, NULL), CUS_ERROR_INVALID_ARGUMENT);
    c = cus_context_unref(c);
}

static void test_limits_get_and_set_per_context(void **state)
{
    (void)state;
    cus_context *a = new_ctx(CUS_CTX_NO_PUSH);
    cus_context *b = new_ctx(CUS_CTX_NO_PUSH);
    size_t v = 0;
    assert_ok(cus_context_get_limit(a, CU_LIMIT_STACK_SIZE, &v));
    assert_int_equal(v, 1024);
    assert_ok(cus_context_get_limit(a, CU_LIMIT_MALLOC_HEAP_SIZE, &v));
    assert_int_equal(v, 8388608);
    assert_ok(cus_context_set_limit(a, CU_LIMIT_STACK_SIZE, 4096));
    assert_ok(cus_context_get_limit(a, CU_LIMIT_STACK_SIZE, &v));
    assert_int_equal(v, 4096);
    assert_ok(cus_context_get_limit(b, CU_LIMIT_STACK_SIZE, &v));
    assert_int_equal(v, 1024); /* b is another context */
    assert_int_equal(cus_context_stack_depth(), 0);
    assert_int_equal(cus_fake_thread_stack_depth(), 0);
    b = cus_context_unref(b);
    a = cus_context_unref(a);
}

static void test_unsupported_limit_is_cuda_error_unsupported_limit(void **state)
{
    (void)state;
    /* The device-runtime sync depth is gone on compute capability 9.0. */
    cus_context *c = new_ctx(CUS_CTX_NO_PUSH);
    size_t v = 77;
    assert_status(cus_context_get_limit(c, CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH, &v),
                  CU(CUDA_ERROR_UNSUPPORTED_LIMIT));
    assert_int_equal(v, 77);
    assert_string_equal(cus_last_error()->driver_call, "cuCtxGetLimit");
    assert_status(cus_context_set_limit(c, CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH, 4),
                  CU(CUDA_ERROR_UNSUPPORTED_LIMIT));
    assert_int_equal(cus_context_poisoned(c), CUS_SUCCESS);
    assert_int_equal(cus_context_stack_depth(), 0);
    assert_int_equal(cus_fake_thread_stack_depth(), 0);
    c = cus_context_unref(c);
}

static void test_limit_out_of_range_is_invalid_value(void **state)
{
    (void)state;
    cus_context *c = new_ctx(CUS_CTX_NO_PUSH);
    size_t v = 77;
    assert_status(cus_context_get_limit(c, CU_LIMIT_MAX, &v), CU(CUDA_ERROR_INVALID_VALUE));
    assert_int_equal(v, 77);
    assert_status(cus_context_get_limit(c, CU_LIMIT_STACK_SIZE, NULL),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_context_get_limit(NULL, CU_LIMIT_STACK_SIZE, &v),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_context_set_limit(NULL, CU_LIMIT_STACK_SIZE, 1),
                  CUS_ERROR_INVALID_ARGUMENT);
    c = cus_context_unref(c);
}

static void test_cache_config_get_and_set(void **state)
{
    (void)state;
    cus_context *c = new_ctx(CUS_CTX_NO_PUSH);
    CUfunc_cache cfg = CU_FUNC_CACHE_PREFER_EQUAL;
    assert_ok(cus_context_get_cache_config(c, &cfg));
    assert_int_equal(cfg, CU_FUNC_CACHE_PREFER_NONE);
    assert_ok(cus_context_set_cache_config(c, CU_FUNC_CACHE_PREFER_L1));
    assert_ok(cus_context_get_cache_config(c, &cfg));
    assert_int_equal(cfg, CU_FUNC_CACHE_PREFER_L1);
    assert_status(cus_context_set_cache_config(c, (CUfunc_cache)42),
                  CU(CUDA_ERROR_INVALID_VALUE));
    assert_ok(cus_context_get_cache_config(c, &cfg));
    assert_int_equal(cfg, CU_FUNC_CACHE_PREFER_L1);
    assert_status(cus_context_get_cache_config(c, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_context_get_cache_config(NULL, &cfg), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_context_set_cache_config(NULL, CU_FUNC_CACHE_PREFER_L1),
                  CUS_ERROR_INVALID_ARGUMENT);
    c = cus_context_unref(c);
}

static void test_shared_mem_config_get_and_set(void **state)
{
    (void)state;
    cus_context *c = new_ctx(CUS_CTX_NO_PUSH);
    CUsharedconfig cfg = CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE;
    assert_ok(cus_context_get_shared_mem_config(c, &cfg));
    assert_int_equal(cfg, CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE);
    assert_ok(cus_context_set_shared_mem_config(c, CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE));
    assert_ok(cus_context_get_shared_mem_config(c, &cfg));
    assert_int_equal(cfg, CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE);
    assert_status(cus_context_set_shared_mem_config(c, (CUsharedconfig)9),
                  CU(CUDA_ERROR_INVALID_VALUE));
    assert_status(cus_context_get_shared_mem_config(c, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_context_get_shared_mem_config(NULL, &cfg), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_context_set_shared_mem_config(NULL, CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE),
                  CUS_ERROR_INVALID_ARGUMENT);
    c = cus_context_unref(c);
}

static void test_stream_priority_range_and_its_null_out_pointers(void **state)
{
    (void)state;
    cus_context *c = new_ctx(CUS_CTX_NO_PUSH);
    int least = 99, greatest = 99;
    assert_ok(cus_context_stream_priority_range(c, &least, &greatest));
    assert_int_equal(least, 0);
    assert_int_equal(greatest, -5);
    assert_true(greatest <= least);
    least = 99;
    assert_ok(cus_context_stream_priority_range(c, &least, NULL));
    assert_int_equal(least, 0);
    greatest = 99;
    assert_ok(cus_context_stream_priority_range(c, NULL, &greatest));
    assert_int_equal(greatest, -5);
    unsigned long calls = cus_fake_call_count();
    assert_status(cus_context_stream_priority_range(c, NULL, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(cus_fake_call_count(), calls);
    assert_status(cus_context_stream_priority_range(NULL, &least, &greatest),
                  CUS_ERROR_INVALID_ARGUMENT);
    c = cus_context_unref(c);
}

/* --- the per-context calls: an injected fault on each entry point --------------- */

#define SENTINEL_U 0xdeadbeefu

typedef cus_status (*ctx_call)(cus_context *ctx, bool *untouched);

static cus_status call_synchronize(cus_context *c, bool *u)
{
    *u = true;
    return cus_context_synchronize(c);
}

static cus_status call_api_version(cus_context *c, bool *u)
{
    unsigned int v = SENTINEL_U;
    cus_status st = cus_context_api_version(c, &v);
    *u = v == SENTINEL_U;
    return st;
}

static cus_status call_flags(cus_context *c, bool *u)
{
    unsigned int v = SENTINEL_U;
    cus_status st = cus_context_flags(c, &v);
    *u = v == SENTINEL_U;
    return st;
}

static cus_status call_get_limit(cus_context *c, bool *u)
{
    size_t v = SENTINEL_U;
    cus_status st = cus_context_get_limit(c, CU_LIMIT_STACK_SIZE, &v);
    *u = v == SENTINEL_U;
    return st;
}

/* Setters: "untouched" is the value read back afterwards (the fault is one-shot). */
static cus_status call_set_limit(cus_context *c, bool *u)
{
    cus_status st = cus_context_set_limit(c, CU_LIMIT_STACK_SIZE, 8192);
    size_t v = 0;
    *u = cus_context_get_limit(c, CU_LIMIT_STACK_SIZE, &v) == CUS_SUCCESS && v == 1024;
    return st;
}

static cus_status call_get_cache_config(cus_context *c, bool *u)
{
    CUfunc_cache v = (CUfunc_cache)77;
    cus_status st = cus_context_get_cache_config(c, &v);
    *u = (int)v == 77;
    return st;
}

static cus_status call_set_cache_config(cus_context *c, bool *u)
{
    cus_status st = cus_context_set_cache_config(c, CU_FUNC_CACHE_PREFER_SHARED);
    CUfunc_cache v = CU_FUNC_CACHE_PREFER_EQUAL;
    *u = cus_context_get_cache_config(c, &v) == CUS_SUCCESS && v == CU_FUNC_CACHE_PREFER_NONE;
    return st;
}

static cus_status call_get_shared_mem_config(cus_context *c, bool *u)
{
    CUsharedconfig v = (CUsharedconfig)77;
    cus_status st = cus_context_get_shared_mem_config(c, &v);
    *u = (int)v == 77;
    return st;
}

static cus_status call_set_shared_mem_config(cus_context *c, bool *u)
{
    cus_status st = cus_context_set_shared_mem_config(c, CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE);
    CUsharedconfig v = CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE;
    *u = cus_context_get_shared_mem_config(c, &v) == CUS_SUCCESS &&
         v == CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE;
    return st;
}

static cus_status call_priority_range(cus_context *c, bool *u)
{
    int least = 77, greatest = 78;
    cus_status st = cus_context_stream_priority_range(c, &least, &greatest);
    *u = least == 77 && greatest == 78;
    return st;
}

static cus_status call_priority_least_only(cus_context *c, bool *u)
{
    int least = 77;
    cus_status st = cus_context_stream_priority_range(c, &least, NULL);
    *u = least == 77;
    return st;
}

typedef struct ctx_case {
    const char *function;
    const char *entry;
    ctx_call call;
    bool switches; /* makes ctx current for the call (push and pop when off top) */
} ctx_case;

static const ctx_case ctx_cases[] = {
    {"cus_context_synchronize", "cuCtxSynchronize", call_synchronize, true},
    {"cus_context_api_version", "cuCtxGetApiVersion", call_api_version, false},
    {"cus_context_flags", "cuCtxGetFlags", call_flags, true},
    {"cus_context_get_limit", "cuCtxGetLimit", call_get_limit, true},
    {"cus_context_set_limit", "cuCtxSetLimit", call_set_limit, true},
    {"cus_context_get_cache_config", "cuCtxGetCacheConfig", call_get_cache_config, true},
    {"cus_context_set_cache_config", "cuCtxSetCacheConfig", call_set_cache_config, true},
    {"cus_context_get_shared_mem_config", "cuCtxGetSharedMemConfig", call_get_shared_mem_config,
     true},
    {"cus_context_set_shared_mem_config", "cuCtxSetSharedMemConfig", call_set_shared_mem_config,
     true},
    {"cus_context_stream_priority_range", "cuCtxGetStreamPriorityRange", call_priority_range,
     true},
    {"cus_context_stream_priority_range", "cuCtxGetStreamPriorityRange",
     call_priority_least_only, true},
};
#define CTX_CASE_COUNT (sizeof ctx_cases / sizeof ctx_cases[0])

#define CASE_CHECK(cond, k, where)                                             \
    do {                                                                       \
        if (!(cond))                                                           \
            fail_msg("%s (fault on %s, context %s): %s", ctx_cases[k].function, \
                     ctx_cases[k].entry, where, #cond);                        \
    } while (0)

static void run_fault_case(size_t k, cus_context *target, const char *where,
                           const char *fault_entry)
{
    stack_snap before = snap();
    unsigned long fired = cus_fake_faults_fired();
    unsigned long entry_calls = cus_fake_calls_of(ctx_cases[k].entry);
    cus_clear_last_error();
    assert_ok(cus_fake_fail_entry(fault_entry, 1, FAULT, false));
    bool untouched = false;
    cus_status st = ctx_cases[k].call(target, &untouched);
    cus_fake_clear_faults();
    CASE_CHECK(st == CU(FAULT), k, where);
    CASE_CHECK(cus_last_status() == CU(FAULT), k, where);
    CASE_CHECK(strcmp(cus_last_error()->function, ctx_cases[k].function) == 0, k, where);
    CASE_CHECK(strcmp(cus_last_error()->driver_call, fault_entry) == 0, k, where);
    CASE_CHECK(untouched, k, where);
    CASE_CHECK(snap_equal(before, snap()), k, where);
    CASE_CHECK(cus_fake_faults_fired() == fired + 1, k, where);
    CASE_CHECK(cus_context_poisoned(target) == CUS_SUCCESS, k, where);
    if (strcmp(fault_entry, ctx_cases[k].entry) != 0) /* the push failed: no call made */
        CASE_CHECK(cus_fake_calls_of(ctx_cases[k].entry) == entry_calls, k, where);
}

static void test_fault_on_each_context_entry_surfaces_and_leaves_out_and_stack(void **state)
{
    (void)state;
    cus_context *a = new_ctx(0);              /* on top */
    cus_context *b = new_ctx(CUS_CTX_NO_PUSH); /* not on the stack */
    for (size_t k = 0; k < CTX_CASE_COUNT; k++) {
        run_fault_case(k, a, "on top", ctx_cases[k].entry);
        run_fault_case(k, b, "off top", ctx_cases[k].entry);
    }
    assert_ok(cus_context_pop(NULL));
    /* And on an empty stack. */
    for (size_t k = 0; k < CTX_CASE_COUNT; k++)
        run_fault_case(k, b, "empty stack", ctx_cases[k].entry);
    b = cus_context_unref(b);
    a = cus_context_unref(a);
}

static void test_failing_switch_push_surfaces_and_skips_the_call(void **state)
{
    (void)state;
    cus_context *a = new_ctx(0);
    cus_context *b = new_ctx(CUS_CTX_NO_PUSH);
    for (size_t k = 0; k < CTX_CASE_COUNT; k++)
        if (ctx_cases[k].switches)
            run_fault_case(k, b, "off top, push fails", "cuCtxPushCurrent");
    assert_ok(cus_context_pop(NULL));
    b = cus_context_unref(b);
    a = cus_context_unref(a);
}

/* --- the sticky-error latch ----------------------------------------------------- */

static void test_sticky_error_poisons_and_later_calls_fail_fast_without_driver_calls(void **state)
{
    (void)state;
    cus_context *c = new_ctx(0);
    assert_ok(cus_fake_fail_entry("cuCtxSynchronize", 1, CUDA_ERROR_ILLEGAL_ADDRESS, false));
    assert_status(cus_context_synchronize(c), CU(CUDA_ERROR_ILLEGAL_ADDRESS));
    assert_int_equal(cus_context_poisoned(c), CUDA_ERROR_ILLEGAL_ADDRESS);
    assert_contains(cus_last_error_message(), "poisoned");
    stack_snap before = snap();

    unsigned long calls = cus_fake_call_count();
    assert_status(cus_context_synchronize(c), CU(CUDA_ERROR_ILLEGAL_ADDRESS));
    assert_contains(cus_last_error_message(), "no driver call");
    assert_status(cus_context_push(c), CU(CUDA_ERROR_ILLEGAL_ADDRESS));
    assert_status(cus_context_set_current(c), CU(CUDA_ERROR_ILLEGAL_ADDRESS));
    unsigned int u = SENTINEL_U;
    assert_status(cus_context_flags(c, &u), CU(CUDA_ERROR_ILLEGAL_ADDRESS));
    assert_int_equal(u, SENTINEL_U);
    assert_status(cus_context_api_version(c, &u), CU(CUDA_ERROR_ILLEGAL_ADDRESS));
    assert_int_equal(u, SENTINEL_U);
    size_t v = 5;
    assert_status(cus_context_get_limit(c, CU_LIMIT_STACK_SIZE, &v),
                  CU(CUDA_ERROR_ILLEGAL_ADDRESS));
    assert_int_equal(v, 5);
    assert_status(cus_context_set_limit(c, CU_LIMIT_STACK_SIZE, 1),
                  CU(CUDA_ERROR_ILLEGAL_ADDRESS));
    int least = 3;
    assert_status(cus_context_stream_priority_range(c, &least, NULL),
                  CU(CUDA_ERROR_ILLEGAL_ADDRESS));
    assert_int_equal(least, 3);
    assert_int_equal(cus_fake_call_count(), calls); /* none reached the driver */
    assert_stack_unchanged(before);

    /* Popping and freeing still work. */
    assert_ok(cus_context_pop(NULL));
    c = cus_context_unref(c);
    assert_int_equal(cus_fake_calls_of("cuCtxDestroy"), 1);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
    assert_int_equal(cus_debug_live_objects(), 0);
}

static void test_every_sticky_code_poisons(void **state)
{
    (void)state;
    static const CUresult sticky[] = {700, 710, 714, 715, 716, 717, 718, 719};
    for (size_t i = 0; i < sizeof sticky / sizeof sticky[0]; i++) {
        cus_context *c = new_ctx(CUS_CTX_NO_PUSH);
        assert_ok(cus_fake_fail_entry("cuCtxGetFlags", 1, sticky[i], false));
        unsigned int f = SENTINEL_U;
        assert_status(cus_context_flags(c, &f), CU(sticky[i]));
        if (cus_context_poisoned(c) != CU(sticky[i]))
            fail_msg("%d did not poison the context", (int)sticky[i]);
        assert_int_equal(cus_context_stack_depth(), 0);
        assert_int_equal(cus_fake_thread_stack_depth(), 0);
        unsigned long calls = cus_fake_call_count();
        assert_status(cus_context_synchronize(c), CU(sticky[i])); /* the original code */
        assert_int_equal(cus_fake_call_count(), calls);
        c = cus_context_unref(c);
    }
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
}

static void test_non_sticky_errors_do_not_poison(void **state)
{
    (void)state;
    static const CUresult plain[] = {CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_OUT_OF_MEMORY,
                                     CUDA_ERROR_NOT_READY, CUDA_ERROR_INVALID_CONTEXT,
                                     CUDA_ERROR_CONTEXT_IS_DESTROYED, CUDA_ERROR_UNKNOWN};
    cus_context *c = new_ctx(0);
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++) {
        assert_ok(cus_fake_fail_entry("cuCtxSynchronize", 1, plain[i], false));
        assert_status(cus_context_synchronize(c), CU(plain[i]));
        assert_int_equal(cus_context_poisoned(c), CUS_SUCCESS);
        unsigned long syncs = cus_fake_calls_of("cuCtxSynchronize");
        assert_ok(cus_context_synchronize(c)); /* reaches the driver again */
        assert_int_equal(cus_fake_calls_of("cuCtxSynchronize"), syncs + 1);
    }
    assert_ok(cus_context_pop(NULL));
    c = cus_context_unref(c);
}

static void test_poison_is_per_context(void **state)
{
    (void)state;
    cus_context *a = new_ctx(CUS_CTX_NO_PUSH);
    cus_context *b = new_ctx(CUS_CTX_NO_PUSH);
    assert_ok(cus_fake_fail_entry("cuCtxSynchronize", 1, CUDA_ERROR_LAUNCH_FAILED, false));
    assert_status(cus_context_synchronize(a), CU(CUDA_ERROR_LAUNCH_FAILED));
    assert_int_equal(cus_context_poisoned(a), CUDA_ERROR_LAUNCH_FAILED);
    assert_int_equal(cus_context_poisoned(b), CUS_SUCCESS);
    assert_ok(cus_context_synchronize(b));
    b = cus_context_unref(b);
    a = cus_context_unref(a);
}

static void test_sticky_error_on_the_switch_push_poisons_too(void **state)
{
    (void)state;
    cus_context *b = new_ctx(CUS_CTX_NO_PUSH);
    assert_ok(cus_fake_fail_entry("cuCtxPushCurrent", 1, CUDA_ERROR_ILLEGAL_ADDRESS, false));
    assert_status(cus_context_synchronize(b), CU(CUDA_ERROR_ILLEGAL_ADDRESS));
    assert_int_equal(cus_context_poisoned(b), CUDA_ERROR_ILLEGAL_ADDRESS);
    assert_int_equal(cus_fake_thread_stack_depth(), 0);
    b = cus_context_unref(b);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
}

static void test_poisoned_primary_still_releases_its_retain(void **state)
{
    (void)state;
    cus_context *p = new_primary();
    assert_ok(cus_fake_fail_entry("cuCtxSynchronize", 1, CUDA_ERROR_ASSERT, false));
    assert_status(cus_context_synchronize(p), CU(CUDA_ERROR_ASSERT));
    assert_int_equal(cus_context_poisoned(p), CUDA_ERROR_ASSERT);
    p = cus_context_unref(p);
    assert_int_equal(cus_fake_primary_retain_count(0), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
}

/* --- destroy errors ------------------------------------------------------------- */

typedef struct saved_error {
    cus_status status;
    char function[64], driver_call[64], message[512];
} saved_error;

static saved_error save_last_error(void)
{
    saved_error s;
    const cus_error *e = cus_last_error();
    s.status = e->status;
    snprintf(s.function, sizeof s.function, "%s", e->function);
    snprintf(s.driver_call, sizeof s.driver_call, "%s", e->driver_call);
    snprintf(s.message, sizeof s.message, "%s", e->message);
    return s;
}

static void assert_last_error_is(const saved_error *s)
{
    const cus_error *e = cus_last_error();
    assert_int_equal(e->status, s->status);
    assert_string_equal(e->function, s->function);
    assert_string_equal(e->driver_call, s->driver_call);
    assert_string_equal(e->message, s->message);
    assert_string_equal(cus_last_error_message(), s->message);
}

static void test_failing_destroy_goes_to_the_handler_and_keeps_the_last_error(void **state)
{
    (void)state;
    cus_context *c = new_ctx(CUS_CTX_NO_PUSH);
    CUcontext h = cus_context_handle(c);
    /* An earlier failing call, whose record must survive the unref. */
    cus_device d;
    assert_status(cus_device_get(42, &d), CU(CUDA_ERROR_INVALID_DEVICE));
    saved_error before = save_last_error();
    unsigned long count = cus_destroy_error_count();

    assert_ok(cus_fake_fail_entry("cuCtxDestroy", 1, CUDA_ERROR_UNKNOWN, false));
    c = cus_context_unref(c);
    assert_null(c);
    assert_int_equal(env_destroyed.count, 1);
    assert_int_equal(env_destroyed.last_status, CUDA_ERROR_UNKNOWN);
    assert_contains(env_destroyed.last_message, "cuCtxDestroy");
    assert_int_equal(cus_destroy_error_count(), count + 1);
    assert_last_error_is(&before);
    assert_int_equal(cus_debug_live_objects(), 0); /* the host side is freed */

    /* The driver still has it: free it by hand so the teardown sees no leak. */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_CONTEXT), 1);
    PFN_cuCtxDestroy_v4000 raw_destroy = RAW_FN(PFN_cuCtxDestroy_v4000, "cuCtxDestroy", 4000);
    assert_int_equal(raw_destroy(h), CUDA_SUCCESS);
}

static void test_failing_destroy_leaves_an_empty_last_error_empty(void **state)
{
    (void)state;
    cus_context *c = new_ctx(CUS_CTX_NO_PUSH);
    CUcontext h = cus_context_handle(c);
    cus_clear_last_error();
    assert_ok(cus_fake_fail_entry("cuCtxDestroy", 1, CUDA_ERROR_UNKNOWN, false));
    c = cus_context_unref(c);
    assert_int_equal(env_destroyed.count, 1);
    assert_int_equal(cus_last_status(), CUS_SUCCESS);
    assert_string_equal(cus_last_error_message(), "");
    PFN_cuCtxDestroy_v4000 raw_destroy = RAW_FN(PFN_cuCtxDestroy_v4000, "cuCtxDestroy", 4000);
    assert_int_equal(raw_destroy(h), CUDA_SUCCESS);
}

static void test_failing_primary_release_goes_to_the_handler_and_keeps_the_last_error(void **state)
{
    (void)state;
    cus_context *p = new_primary();
    assert_status(cus_context_stream_priority_range(p, NULL, NULL), CUS_ERROR_INVALID_ARGUMENT);
    saved_error before = save_last_error();

    assert_ok(cus_fake_fail_entry("cuDevicePrimaryCtxRelease", 1, CUDA_ERROR_UNKNOWN, false));
    p = cus_context_unref(p);
    assert_int_equal(env_destroyed.count, 1);
    assert_int_equal(env_destroyed.last_status, CUDA_ERROR_UNKNOWN);
    assert_contains(env_destroyed.last_message, "cuDevicePrimaryCtxRelease");
    assert_last_error_is(&before);
    assert_int_equal(cus_debug_live_objects(), 0);

    assert_int_equal(cus_fake_primary_retain_count(0), 1); /* the driver kept its retain */
    PFN_cuDevicePrimaryCtxRelease_v11000 raw_release =
        RAW_FN(PFN_cuDevicePrimaryCtxRelease_v11000, "cuDevicePrimaryCtxRelease", 11000);
    assert_int_equal(raw_release(0), CUDA_SUCCESS);
}

static void test_failing_destroy_of_a_poisoned_context_is_reported_once(void **state)
{
    (void)state;
    cus_context *c = new_ctx(CUS_CTX_NO_PUSH);
    CUcontext h = cus_context_handle(c);
    assert_ok(cus_fake_fail_entry("cuCtxSynchronize", 1, CUDA_ERROR_ILLEGAL_ADDRESS, false));
    assert_status(cus_context_synchronize(c), CU(CUDA_ERROR_ILLEGAL_ADDRESS));
    assert_ok(cus_fake_fail_entry("cuCtxDestroy", 1, CUDA_ERROR_ILLEGAL_ADDRESS, false));
    c = cus_context_unref(c);
    assert_int_equal(env_destroyed.count, 1);
    assert_int_equal(env_destroyed.last_status, CUDA_ERROR_ILLEGAL_ADDRESS);
    assert_int_equal(cus_last_status(), CUDA_ERROR_ILLEGAL_ADDRESS); /* from the synchronize */
    assert_string_equal(cus_last_error()->function, "cus_context_synchronize");
    PFN_cuCtxDestroy_v4000 raw_destroy = RAW_FN(PFN_cuCtxDestroy_v4000, "cuCtxDestroy", 4000);
    assert_int_equal(raw_destroy(h), CUDA_SUCCESS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_create_makes_an_owned_context_and_pushes_it),
        ENV_TEST(test_create_passes_its_cu_flags_to_the_driver),
        ENV_TEST(test_create_no_push_is_not_passed_to_the_driver),
        TWO_DEV_TEST(test_create_on_the_second_device),
        ENV_TEST(test_create_on_a_bad_device_is_invalid_device),
        ENV_TEST(test_create_with_invalid_cu_flags_is_the_drivers_invalid_value),
        ENV_TEST(test_create_null_out_is_invalid_argument),
        ENV_TEST(test_create_fault_surfaces_and_leaves_out_and_stack),
        ENV_TEST(test_create_no_push_with_failing_pop_destroys_the_new_context),
        ENV_TEST(test_retain_primary_counts_retains_and_never_pushes),
        ENV_TEST(test_primary_context_reports_map_host_flags),
        TWO_DEV_TEST(test_retain_primary_of_each_device_is_separate),
        ENV_TEST(test_retain_primary_on_a_bad_device_is_invalid_device),
        ENV_TEST(test_retain_primary_null_out_is_invalid_argument),
        ENV_TEST(test_retain_primary_fault_surfaces_and_leaves_out_and_count),
        ENV_TEST(test_wrap_null_is_invalid_argument),
        ENV_TEST(test_wrap_makes_a_foreign_context_that_is_never_destroyed),
        TWO_DEV_TEST(test_wrap_records_the_device_of_the_handle),
        MISUSE_TEST(test_wrap_of_an_unknown_handle_fails_and_leaves_the_stack),
        ENV_TEST(test_wrap_push_or_get_device_fault_leaves_out_and_stack),
        ENV_TEST(test_wrap_retries_a_failed_pop_and_restores_the_stack),
        ENV_TEST(test_ref_and_unref_accept_null),
        ENV_TEST(test_ref_returns_its_argument_and_unref_always_returns_null),
        ENV_TEST(test_unref_of_a_pushed_context_waits_for_the_pop),
        ENV_TEST(test_accessors_on_null_give_null_and_zero),
        ENV_TEST(test_kind_of_null_is_foreign),
        ENV_TEST(test_accessors_make_no_driver_call),
        ENV_TEST(test_kinds_are_owned_primary_and_foreign),
        ENV_TEST(test_synchronize_on_top_makes_no_stack_call),
        ENV_TEST(test_synchronize_off_top_switches_and_restores),
        ENV_TEST(test_synchronize_null_is_invalid_argument),
        ENV_TEST(test_api_version_is_the_context_abi_and_needs_no_push),
        ENV_TEST(test_flags_null_arguments_are_invalid),
        ENV_TEST(test_limits_get_and_set_per_context),
        ENV_TEST(test_unsupported_limit_is_cuda_error_unsupported_limit),
        ENV_TEST(test_limit_out_of_range_is_invalid_value),
        ENV_TEST(test_cache_config_get_and_set),
        ENV_TEST(test_shared_mem_config_get_and_set),
        ENV_TEST(test_stream_priority_range_and_its_null_out_pointers),
        ENV_TEST(test_fault_on_each_context_entry_surfaces_and_leaves_out_and_stack),
        ENV_TEST(test_failing_switch_push_surfaces_and_skips_the_call),
        ENV_TEST(test_sticky_error_poisons_and_later_calls_fail_fast_without_driver_calls),
        ENV_TEST(test_every_sticky_code_poisons),
        ENV_TEST(test_non_sticky_errors_do_not_poison),
        ENV_TEST(test_poison_is_per_context),
        ENV_TEST(test_sticky_error_on_the_switch_push_poisons_too),
        ENV_TEST(test_poisoned_primary_still_releases_its_retain),
        ENV_TEST(test_failing_destroy_goes_to_the_handler_and_keeps_the_last_error),
        ENV_TEST(test_failing_destroy_leaves_an_empty_last_error_empty),
        ENV_TEST(test_failing_primary_release_goes_to_the_handler_and_keeps_the_last_error),
        ENV_TEST(test_failing_destroy_of_a_poisoned_context_is_reported_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
