/* The temporary-switch contract (docs/design.md, "Temporary switches";
 * lib/internal.h, cus_switch_): a call on a context that is not on top of
 * the calling thread's stack pushes it for its driver calls and pops it
 * after, with these outcomes, the same for every call:
 *
 *   entering fails (the push fails, or the context is poisoned): that status,
 *     recorded; no driver call made; the stack as before;
 *   the driver call fails: its status, recorded; the stack restored (if the
 *     pop fails too, after one retry, that goes to the destroy handler);
 *   the driver call succeeds: CUS_SUCCESS whatever the pop says. The work
 *     was done or queued and the out parameters are valid; a pop that fails
 *     (it and its retry) goes to the destroy handler, naming the public
 *     function and cuCtxPopCurrent, and the context stays pushed on the
 *     driver's stack, one above cuscope's mirror.
 *
 * Here: one call of each shape (a getter, a creation, queued work, a launch
 * through cus_launch's switched slow path, a destruction) with every pop
 * failing, and the two failure branches. The thread's mirror holds another
 * context `a` throughout, so that "the mirror untouched" means something. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "stream_common.h"
#include "harness/check.h"

static const char switch_ptx[] = ".version 8.0\n.target sm_80\n.address_size 64\n"
                                 ".visible .entry k(\n\t.param .u32 k_param_0\n)\n{\n\tret;\n}\n";

/* The state before a call made with every pop failing. */
typedef struct armed {
    stack_snap before;
    unsigned long reports;
    unsigned long pops;
} armed;

static armed arm_failing_pops(void)
{
    armed r = {snap(), env_destroyed.count, cus_fake_calls_of("cuCtxPopCurrent")};
    cus_clear_last_error();
    assert_ok(cus_fake_fail_entry("cuCtxPopCurrent", 1, FAULT, true));
    return r;
}

/* What the caller of a call whose driver call worked sees when its pop
 * keeps failing: the status is the caller's to check (CUS_SUCCESS for a
 * status-returning call); nothing in the last error; one report naming
 * `function` and cuCtxPopCurrent; the pop tried twice; cuscope's mirror
 * untouched and the driver's stack one deeper, with `switched` on top. Then
 * the raw pop that reconciles the two, and the stack is as before. */
static void check_pop_contract(const armed *r, const char *function, cus_context *switched)
{
    cus_fake_clear_faults();
    assert_int_equal(cus_last_status(), CUS_SUCCESS);
    env_assert_one_pop_report(r->reports, function);
    assert_int_equal(env_destroyed.last_status, FAULT);
    assert_non_null(strstr(env_destroyed.last_message, "stays pushed on the driver's stack"));
    assert_int_equal(cus_fake_calls_of("cuCtxPopCurrent"), r->pops + 2); /* and its retry */
    assert_int_equal(cus_context_stack_depth(), r->before.depth);
    assert_ptr_equal(cus_context_current(), r->before.top);
    assert_int_equal(cus_fake_thread_stack_depth(), r->before.fake_depth + 1);
    assert_ptr_equal(cus_fake_thread_stack_at(r->before.fake_depth), cus_context_handle(switched));
    assert_int_equal(reconcile_fake_stack(), 1);
    assert_stack_unchanged(r->before);
}

/* a pushed (the mirror's top), c not pushed: every call on c switches. */
typedef struct two {
    cus_context *a, *c;
} two;

static two two_contexts(void)
{
    two t = {new_ctx(), new_ctx()};
    assert_ok(cus_context_push(t.a));
    return t;
}

static void two_free(two *t)
{
    assert_ok(cus_context_pop(NULL));
    t->c = cus_context_unref(t->c);
    t->a = cus_context_unref(t->a);
}

/* --- the call succeeds: CUS_SUCCESS whatever the pop says ------------------------------ */

/* A getter: its out parameter is set, to what it is without faults.
 * (cuCtxGetLimit reads the current context's: it needs the switch.) */
static void test_a_getter_whose_pop_fails_returns_its_value(void **state)
{
    (void)state;
    two t = two_contexts();
    size_t want = 0, got = 0;
    assert_ok(cus_context_get_limit(t.c, CU_LIMIT_STACK_SIZE, &want));
    assert_int_not_equal(want, 0);
    armed r = arm_failing_pops();
    assert_ok(cus_context_get_limit(t.c, CU_LIMIT_STACK_SIZE, &got));
    check_pop_contract(&r, "cus_context_get_limit", t.c);
    assert_int_equal(got, want);
    two_free(&t);
}

/* A creation: the object is returned (not rolled back), usable, and freed
 * at its last release; nothing leaks. */
static void test_a_creation_whose_pop_fails_returns_its_object(void **state)
{
    (void)state;
    two t = two_contexts();
    cus_stream *s = new_stream(t.c, 0);
    size_t events = cus_fake_live_handles(CUS_FAKE_HANDLE_EVENT);
    unsigned long destroys = cus_fake_calls_of("cuEventDestroy");
    armed r = arm_failing_pops();
    cus_event *e = NULL;
    assert_ok(cus_event_create(t.c, 0, &e));
    check_pop_contract(&r, "cus_event_create", t.c);
    assert_non_null(e);
    assert_ptr_equal(cus_event_context(e), t.c);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_EVENT), events + 1);
    assert_int_equal(cus_fake_calls_of("cuEventDestroy"), destroys); /* no rollback */
    assert_ok(cus_event_record(e, s));
    assert_ok(cus_event_synchronize(e));
    e = cus_event_unref(e);
    assert_int_equal(cus_fake_calls_of("cuEventDestroy"), destroys + 1);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_EVENT), events);
    assert_int_equal(env_destroyed.count, r.reports + 1);
    s = cus_stream_unref(s);
    two_free(&t);
}

/* Queued work: a host function. It owns its user_data once queued (the
 * caller frees it only when the call fails), so a call that failed with the
 * function queued (before the contract) had the caller free what the
 * function then read. Now: success, and the function runs, once, with its
 * user_data, and frees it (ASan sees any use after free). */
static atomic_int host_fn_runs;
static void host_fn_frees(void *data)
{
    int *p = data;
    if (*p == 0x5117c4)
        atomic_fetch_add(&host_fn_runs, 1);
    free(p);
}

static void test_queued_work_whose_pop_fails_is_queued_and_runs(void **state)
{
    (void)state;
    two t = two_contexts();
    cus_stream *s = new_stream(t.c, 0);
    atomic_store(&host_fn_runs, 0);
    unsigned long ran = cus_fake_host_functions_run();
    int *data = malloc(sizeof *data);
    assert_non_null(data);
    *data = 0x5117c4;
    armed r = arm_failing_pops();
    cus_status st = cus_stream_launch_host_fn(s, host_fn_frees, data);
    if (st != CUS_SUCCESS)
        free(data); /* what a caller does on failure */
    assert_int_equal(st, CUS_SUCCESS);
    check_pop_contract(&r, "cus_stream_launch_host_fn", t.c);
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(atomic_load(&host_fn_runs), 1);
    assert_int_equal(cus_fake_host_functions_run(), ran + 1);
    s = cus_stream_unref(s);
    two_free(&t);
}

/* A launch through the cus_launch macro, whose function's context is not on
 * top: the switched slow path. The launch is made and recorded with the
 * arguments given. */
static void test_a_launch_on_the_slow_path_whose_pop_fails_is_launched(void **state)
{
    (void)state;
    two t = two_contexts();
    cus_stream *s = new_stream(t.c, 0);
    cus_module *m = NULL;
    assert_ok(cus_module_load_data(t.c, switch_ptx, sizeof switch_ptx, NULL, &m));
    cus_function *f = NULL;
    assert_ok(cus_module_get_function(m, "k", &f));
    unsigned long launches = cus_fake_launch_count();
    armed r = arm_failing_pops();
    assert_ok(cus_launch(f, 3, 32, 0, s, 5u));
    check_pop_contract(&r, "cus_launch", t.c);
    assert_int_equal(cus_fake_launch_count(), launches + 1);
    cus_fake_launch l;
    assert_ok(cus_fake_last_launch(&l));
    assert_string_equal(l.function, "k");
    assert_ptr_equal(l.context, cus_context_handle(t.c));
    assert_ptr_equal(l.stream, cus_stream_handle(s));
    assert_int_equal(l.grid[0], 3);
    assert_int_equal(l.block[0], 32);
    assert_ok(cus_stream_synchronize(s));
    f = cus_function_unref(f);
    m = cus_module_unref(m);
    s = cus_stream_unref(s);
    two_free(&t);
}

/* A destruction: the handle is destroyed; the report names the release. */
static void test_a_destruction_whose_pop_fails_destroys(void **state)
{
    (void)state;
    two t = two_contexts();
    cus_stream *s = new_stream(t.c, 0);
    size_t streams = cus_fake_live_handles(CUS_FAKE_HANDLE_STREAM);
    unsigned long destroys = cus_fake_calls_of("cuStreamDestroy");
    armed r = arm_failing_pops();
    assert_null(cus_stream_unref(s));
    check_pop_contract(&r, "cus_stream_unref", t.c);
    assert_int_equal(cus_fake_calls_of("cuStreamDestroy"), destroys + 1);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_STREAM), streams - 1);
    two_free(&t);
}

/* A call on a context already on top makes no switch: nothing to pop, and
 * failing pops change nothing. */
static void test_a_call_on_the_top_context_makes_no_switch(void **state)
{
    (void)state;
    two t = two_contexts();
    size_t v = 0;
    stack_snap before = snap();
    unsigned long pops = cus_fake_calls_of("cuCtxPopCurrent");
    assert_ok(cus_fake_fail_entry("cuCtxPopCurrent", 1, FAULT, true));
    assert_ok(cus_context_get_limit(t.a, CU_LIMIT_STACK_SIZE, &v));
    assert_int_not_equal(v, 0);
    cus_fake_clear_faults();
    assert_int_equal(cus_fake_calls_of("cuCtxPopCurrent"), pops);
    assert_int_equal(env_destroyed.count, 0);
    assert_stack_unchanged(before);
    two_free(&t);
}

/* --- the other two branches -------------------------------------------------------------- */

/* Entering fails: the push's status, recorded; no driver call under the
 * switch, no pop, no report; the stack as before. */
static void test_entering_fails_makes_no_call(void **state)
{
    (void)state;
    two t = two_contexts();
    stack_snap before = snap();
    unsigned long syncs = cus_fake_calls_of("cuCtxSynchronize");
    unsigned long pops = cus_fake_calls_of("cuCtxPopCurrent");
    assert_ok(cus_fake_fail_entry("cuCtxPushCurrent", 1, FAULT, false));
    assert_status(cus_context_synchronize(t.c), FAULT);
    cus_fake_clear_faults();
    assert_string_equal(cus_last_error()->function, "cus_context_synchronize");
    assert_string_equal(cus_last_error()->driver_call, "cuCtxPushCurrent");
    assert_int_equal(cus_fake_calls_of("cuCtxSynchronize"), syncs);
    assert_int_equal(cus_fake_calls_of("cuCtxPopCurrent"), pops);
    assert_int_equal(env_destroyed.count, 0);
    assert_stack_unchanged(before);
    /* A poisoned context: the poison, recorded, and no driver call at all. */
    assert_ok(cus_fake_fail_entry("cuCtxSynchronize", 1, CUDA_ERROR_ILLEGAL_ADDRESS, false));
    assert_status(cus_context_synchronize(t.c), CUDA_ERROR_ILLEGAL_ADDRESS);
    cus_fake_clear_faults();
    assert_stack_unchanged(before);
    unsigned long calls = cus_fake_call_count();
    size_t v = 0;
    assert_status(cus_context_get_limit(t.c, CU_LIMIT_STACK_SIZE, &v), CUDA_ERROR_ILLEGAL_ADDRESS);
    assert_non_null(strstr(cus_last_error_message(), "poisoned"));
    assert_int_equal(cus_fake_call_count(), calls);
    assert_int_equal(v, 0);
    assert_stack_unchanged(before);
    two_free(&t);
    /* The poisoned context's handles stay with the fake: a fresh install. */
    assert_int_equal(env_setup_with(NULL), 0);
}

/* The driver call fails: its status, recorded (not the pop's); the stack
 * restored. When the pop keeps failing too, that goes to the destroy
 * handler, and the context stays pushed above the mirror. */
static void test_a_failed_call_returns_its_own_status(void **state)
{
    (void)state;
    two t = two_contexts();
    stack_snap before = snap();
    assert_ok(cus_fake_fail_entry("cuCtxSynchronize", 1, FAULT, false));
    assert_status(cus_context_synchronize(t.c), FAULT);
    cus_fake_clear_faults();
    assert_string_equal(cus_last_error()->driver_call, "cuCtxSynchronize");
    assert_int_equal(env_destroyed.count, 0);
    assert_stack_unchanged(before);
    /* ... and with its pop failing too. */
    unsigned long pops = cus_fake_calls_of("cuCtxPopCurrent");
    assert_ok(cus_fake_fail_entry("cuCtxSynchronize", 1, FAULT, false));
    assert_ok(cus_fake_fail_entry("cuCtxPopCurrent", 1, CUDA_ERROR_UNKNOWN, true));
    assert_status(cus_context_synchronize(t.c), FAULT);
    cus_fake_clear_faults();
    assert_string_equal(cus_last_error()->function, "cus_context_synchronize");
    assert_string_equal(cus_last_error()->driver_call, "cuCtxSynchronize");
    env_assert_one_pop_report(0, "cus_context_synchronize");
    assert_int_equal(env_destroyed.last_status, CUDA_ERROR_UNKNOWN);
    assert_int_equal(cus_fake_calls_of("cuCtxPopCurrent"), pops + 2);
    assert_int_equal(cus_context_stack_depth(), before.depth);
    assert_int_equal(cus_fake_thread_stack_depth(), before.fake_depth + 1);
    assert_int_equal(reconcile_fake_stack(), 1);
    assert_stack_unchanged(before);
    two_free(&t);
}

/* --- pops that are not a switch's -------------------------------------------------------- */

/* cus_context_pop does not retry: a failed pop is the user's to see,
 * recorded, and the mirror keeps its entry. A guard's exit retries once,
 * as a switch's undo does, and reports to the destroy handler. */
static void test_the_public_pop_does_not_retry_and_a_guard_exit_does(void **state)
{
    (void)state;
    two t = two_contexts();
    assert_ok(cus_context_push(t.c));
    unsigned long pops = cus_fake_calls_of("cuCtxPopCurrent");
    assert_ok(cus_fake_fail_entry("cuCtxPopCurrent", 1, FAULT, true));
    assert_status(cus_context_pop(NULL), FAULT);
    cus_fake_clear_faults();
    assert_int_equal(cus_fake_calls_of("cuCtxPopCurrent"), pops + 1);
    assert_string_equal(cus_last_error()->function, "cus_context_pop");
    assert_string_equal(cus_last_error()->driver_call, "cuCtxPopCurrent");
    assert_ptr_equal(cus_context_current(), t.c);
    assert_int_equal(env_destroyed.count, 0);
    assert_ok(cus_context_pop(NULL));
    /* The guard. */
    cus_context_guard g = cus_context_guard_enter(t.c);
    assert_ok(g.status);
    pops = cus_fake_calls_of("cuCtxPopCurrent");
    assert_ok(cus_fake_fail_entry("cuCtxPopCurrent", 1, FAULT, true));
    cus_context_guard_exit(&g);
    cus_fake_clear_faults();
    assert_int_equal(cus_fake_calls_of("cuCtxPopCurrent"), pops + 2);
    env_assert_one_pop_report(0, "cus_context_guard_exit");
    /* The failed exit leaves c on both stacks: popped by hand. */
    assert_ptr_equal(cus_context_current(), t.c);
    assert_ok(cus_context_pop(NULL));
    two_free(&t);
}

/* cus_fake_reset: after a run whose pops all failed, both leftovers (a
 * switch's, above the mirror; a guard's, on both stacks) go, the references
 * with them, and the fake can be installed again. */
static void test_the_fake_reset_pops_what_failed_pops_left(void **state)
{
    (void)state;
    cus_context *c = new_ctx(), *d = new_ctx();
    cus_context_guard g = cus_context_guard_enter(c);
    assert_ok(g.status);
    assert_ok(cus_fake_fail_entry("cuCtxPopCurrent", 1, FAULT, true));
    size_t limit = 0;
    assert_ok(cus_context_get_limit(d, CU_LIMIT_STACK_SIZE, &limit)); /* its pop fails */
    cus_context_guard_exit(&g);                                       /* and the guard's */
    assert_int_equal(cus_context_stack_depth(), 1);                   /* c */
    assert_int_equal(cus_fake_thread_stack_depth(), 2);               /* c, d */
    c = cus_context_unref(c);
    assert_int_equal(cus_debug_live_objects(), 2); /* c, held by the mirror; d */
    unsigned int popped = 0;
    assert_ok(cus_fake_reset(&popped));
    assert_int_equal(popped, 2);
    d = cus_context_unref(d);
    assert_int_equal(cus_fake_faults_fired() > 0, true);
    assert_int_equal(cus_context_stack_depth(), 0);
    assert_int_equal(cus_fake_thread_stack_depth(), 0);
    assert_int_equal(cus_debug_live_objects(), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
    /* the faults are gone: calls work again */
    cus_context *e = new_ctx();
    assert_ok(cus_context_get_limit(e, CU_LIMIT_STACK_SIZE, &limit));
    e = cus_context_unref(e);
    /* and with nothing left, it pops nothing */
    assert_ok(cus_fake_reset(&popped));
    assert_int_equal(popped, 0);
    assert_ok(cus_fake_reset(NULL));
    env_destroyed.count = 0; /* the two reports were the point */
}

/* Inside a host function the reset is refused, and touches nothing. */
static void reset_in_host_fn(void *user)
{
    *(cus_status *)user = cus_fake_reset(NULL);
}

static void test_the_fake_reset_is_refused_in_a_host_function(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_stream *s = NULL;
    assert_ok(cus_stream_create(c, CU_STREAM_NON_BLOCKING, 0, &s));
    cus_status got = CUS_SUCCESS;
    assert_ok(cus_stream_launch_host_fn(s, reset_in_host_fn, &got));
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(got, CUS_ERROR_IN_HOST_FUNCTION);
    s = cus_stream_unref(s);
    c = cus_context_unref(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_a_getter_whose_pop_fails_returns_its_value),
        ENV_TEST(test_a_creation_whose_pop_fails_returns_its_object),
        ENV_TEST(test_queued_work_whose_pop_fails_is_queued_and_runs),
        ENV_TEST(test_a_launch_on_the_slow_path_whose_pop_fails_is_launched),
        ENV_TEST(test_a_destruction_whose_pop_fails_destroys),
        ENV_TEST(test_a_call_on_the_top_context_makes_no_switch),
        ENV_TEST(test_entering_fails_makes_no_call),
        ENV_TEST(test_a_failed_call_returns_its_own_status),
        ENV_TEST(test_the_public_pop_does_not_retry_and_a_guard_exit_does),
        ENV_TEST(test_the_fake_reset_pops_what_failed_pops_left),
        ENV_TEST(test_the_fake_reset_is_refused_in_a_host_function),
    };
    return cmocka_run_group_tests_name("switch", tests, NULL, NULL);
}
