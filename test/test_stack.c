/* The per-thread context stack: each rule of DESIGN.md §3 pinned by a named
 * test, checked against both cuscope's mirror and the fake driver's stack. */
#include <pthread.h>
#include <string.h>

#include <cudaTypedefs.h>

#include "harness/env.h"
#include "harness/check.h"

static cus_device dev0(void)
{
    cus_device d = {0};
    assert_ok(cus_device_get(0, &d));
    return d;
}

static cus_context *new_ctx(unsigned int flags)
{
    cus_context *c = NULL;
    assert_ok(cus_context_create(dev0(), flags, &c));
    return c;
}

/* Both views of the calling thread's stack agree: depth and top. */
static void assert_stack(unsigned int depth, const cus_context *top)
{
    assert_int_equal(cus_context_stack_depth(), depth);
    assert_int_equal(cus_fake_thread_stack_depth(), (int)depth);
    assert_ptr_equal(cus_context_current(), top);
    if (depth)
        assert_ptr_equal(cus_fake_thread_stack_at((int)depth - 1), cus_context_handle(top));
}

static void test_create_pushes_the_new_context(void **state)
{
    (void)state;
    cus_autoptr(cus_context) ctx = new_ctx(0);
    assert_stack(1, ctx);
    assert_ok(cus_context_pop(NULL));
    assert_stack(0, NULL);
}

static void test_create_no_push_leaves_the_stack_alone(void **state)
{
    (void)state;
    cus_autoptr(cus_context) ctx = new_ctx(CUS_CTX_NO_PUSH);
    assert_non_null(ctx);
    assert_stack(0, NULL);
}

static void test_push_makes_the_context_current(void **state)
{
    (void)state;
    cus_autoptr(cus_context) a = new_ctx(CUS_CTX_NO_PUSH);
    cus_autoptr(cus_context) b = new_ctx(CUS_CTX_NO_PUSH);
    assert_ok(cus_context_push(a));
    assert_stack(1, a);
    assert_ok(cus_context_push(b));
    assert_stack(2, b);
    assert_ok(cus_context_push(a)); /* the same context twice is allowed */
    assert_stack(3, a);
    for (int i = 0; i < 3; i++)
        assert_ok(cus_context_pop(NULL));
}

static void test_pop_returns_the_popped_context(void **state)
{
    (void)state;
    cus_autoptr(cus_context) a = new_ctx(CUS_CTX_NO_PUSH);
    cus_autoptr(cus_context) b = new_ctx(CUS_CTX_NO_PUSH);
    assert_ok(cus_context_push(a));
    assert_ok(cus_context_push(b));
    cus_autoptr(cus_context) popped = NULL;
    assert_ok(cus_context_pop(&popped));
    assert_ptr_equal(popped, b);
    assert_stack(1, a); /* the previous context is current again */
    assert_ok(cus_context_pop(NULL));
    assert_stack(0, NULL);
}

static void test_pop_on_empty_stack_is_unbalanced_and_makes_no_driver_call(void **state)
{
    (void)state;
    assert_ok(cus_init());
    unsigned long calls = cus_fake_call_count();
    cus_context *out = (cus_context *)&out;
    assert_status(cus_context_pop(&out), CUS_ERROR_UNBALANCED_POP);
    assert_ptr_equal(out, (cus_context *)&out);
    assert_int_equal(cus_fake_call_count(), calls);
}

static void test_set_current_replaces_the_top(void **state)
{
    (void)state;
    cus_autoptr(cus_context) a = new_ctx(CUS_CTX_NO_PUSH);
    cus_autoptr(cus_context) b = new_ctx(CUS_CTX_NO_PUSH);
    assert_ok(cus_context_push(a));
    assert_ok(cus_context_set_current(b));
    assert_stack(1, b);
    assert_ok(cus_context_pop(NULL));
    assert_stack(0, NULL);
}

static void test_set_current_on_empty_stack_pushes(void **state)
{
    (void)state;
    cus_autoptr(cus_context) a = new_ctx(CUS_CTX_NO_PUSH);
    assert_ok(cus_context_set_current(a));
    assert_stack(1, a);
    assert_ok(cus_context_pop(NULL));
}

static void test_set_current_null_pops_only_the_top(void **state)
{
    (void)state;
    cus_autoptr(cus_context) a = new_ctx(CUS_CTX_NO_PUSH);
    cus_autoptr(cus_context) b = new_ctx(CUS_CTX_NO_PUSH);
    assert_ok(cus_context_push(a));
    assert_ok(cus_context_push(b));
    assert_ok(cus_context_set_current(NULL));
    assert_stack(1, a); /* current is still non-NULL afterwards */
    assert_ok(cus_context_set_current(NULL));
    assert_stack(0, NULL);
}

static void test_set_current_null_on_empty_stack_is_a_noop(void **state)
{
    (void)state;
    assert_ok(cus_context_set_current(NULL));
    assert_stack(0, NULL);
}

static void test_destroy_pops_the_callers_copy(void **state)
{
    (void)state;
    /* At the driver level, cuCtxDestroy pops the caller's current copy. */
    assert_ok(cus_init());
    PFN_cuCtxCreate_v3020 create = RAW_FN(PFN_cuCtxCreate_v3020, "cuCtxCreate", 3020);
    PFN_cuCtxDestroy_v4000 destroy = RAW_FN(PFN_cuCtxDestroy_v4000, "cuCtxDestroy", 4000);
    CUcontext h = NULL;
    assert_int_equal(create(&h, 0, 0), CUDA_SUCCESS);
    assert_int_equal(cus_fake_thread_stack_depth(), 1);
    assert_int_equal(destroy(h), CUDA_SUCCESS);
    assert_int_equal(cus_fake_thread_stack_depth(), 0);
    /* Through cuscope, the last reference of a popped context destroys it. */
    cus_context *ctx = new_ctx(0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_CONTEXT), 1);
    ctx = cus_context_unref(ctx);
    assert_null(ctx);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_CONTEXT), 1); /* the stack holds it */
    assert_ok(cus_context_pop(NULL));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_CONTEXT), 0);
    assert_stack(0, NULL);
}

static void test_primary_retain_and_release_never_push_or_pop(void **state)
{
    (void)state;
    cus_autoptr(cus_context) a = new_ctx(0);
    assert_stack(1, a);
    cus_context *p1 = NULL, *p2 = NULL;
    assert_ok(cus_context_retain_primary(dev0(), &p1));
    assert_ok(cus_context_retain_primary(dev0(), &p2));
    assert_ptr_equal(cus_context_handle(p1), cus_context_handle(p2)); /* one shared context */
    assert_int_equal(cus_fake_primary_retain_count(0), 2);
    assert_stack(1, a);
    p1 = cus_context_unref(p1);
    assert_int_equal(cus_fake_primary_retain_count(0), 1);
    p2 = cus_context_unref(p2);
    assert_int_equal(cus_fake_primary_retain_count(0), 0);
    assert_stack(1, a);
    assert_ok(cus_context_pop(NULL));
}

static void test_guard_on_current_context_makes_no_driver_call(void **state)
{
    (void)state;
    cus_autoptr(cus_context) a = new_ctx(0);
    unsigned long calls = cus_fake_call_count();
    {
        cus_context_scope(g, a);
        assert_ok(g.status);
        assert_null(g.ctx);
        assert_stack(1, a);
    }
    assert_int_equal(cus_fake_call_count(), calls);
    assert_stack(1, a);
    assert_ok(cus_context_pop(NULL));
}

static void test_guard_pushes_and_pops_exactly_once(void **state)
{
    (void)state;
    cus_autoptr(cus_context) a = new_ctx(0);
    cus_autoptr(cus_context) b = new_ctx(CUS_CTX_NO_PUSH);
    unsigned long push0 = cus_fake_calls_of("cuCtxPushCurrent");
    unsigned long pop0 = cus_fake_calls_of("cuCtxPopCurrent");
    {
        cus_context_scope(g, b);
        assert_ok(g.status);
        assert_stack(2, b);
    }
    assert_int_equal(cus_fake_calls_of("cuCtxPushCurrent"), push0 + 1);
    assert_int_equal(cus_fake_calls_of("cuCtxPopCurrent"), pop0 + 1);
    assert_stack(1, a);
    assert_ok(cus_context_pop(NULL));
}

static cus_status leave_early(cus_context *ctx, int *reached)
{
    cus_context_scope(g, ctx);
    CUS_TRY(g.status);
    *reached = 1;
    return CUS_ERROR_INVALID_ARGUMENT; /* an early error return inside the scope */
}

static void test_guard_restores_on_early_return(void **state)
{
    (void)state;
    cus_autoptr(cus_context) a = new_ctx(CUS_CTX_NO_PUSH);
    int reached = 0;
    assert_int_equal(leave_early(a, &reached), CUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(reached, 1);
    assert_stack(0, NULL);
}

static void test_with_context_break_restores(void **state)
{
    (void)state;
    cus_autoptr(cus_context) a = new_ctx(CUS_CTX_NO_PUSH);
    cus_status st = -1;
    int runs = 0;
    cus_with_context(a, st)
    {
        runs++;
        assert_stack(1, a);
        break;
    }
    assert_int_equal(st, CUS_SUCCESS);
    assert_int_equal(runs, 1);
    assert_stack(0, NULL);
}

static void test_with_context_push_failure_skips_the_body(void **state)
{
    (void)state;
    cus_autoptr(cus_context) a = new_ctx(0);
    cus_autoptr(cus_context) b = new_ctx(CUS_CTX_NO_PUSH);
    assert_ok(cus_fake_fail_entry("cuCtxPushCurrent", 1, CUDA_ERROR_OUT_OF_MEMORY, false));
    cus_status st = CUS_SUCCESS;
    int runs = 0;
    cus_with_context(b, st) runs++;
    assert_int_equal(st, CUDA_ERROR_OUT_OF_MEMORY);
    assert_int_equal(runs, 0);
    assert_stack(1, a); /* exactly as before */
    assert_int_equal(cus_context_poisoned(b), CUS_SUCCESS); /* not sticky */
    assert_ok(cus_context_pop(NULL));
}

static void test_guard_reports_someone_elses_context_on_top(void **state)
{
    (void)state;
    cus_autoptr(cus_context) a = new_ctx(CUS_CTX_NO_PUSH);
    cus_autoptr(cus_context) b = new_ctx(CUS_CTX_NO_PUSH);
    {
        cus_context_scope(g, a);
        assert_ok(g.status);
        assert_ok(cus_context_push(b)); /* pushed inside the scope and never popped */
    }
    assert_int_equal(env_destroyed.count, 1);
    assert_int_equal(env_destroyed.last_status, CUS_ERROR_CONTEXT_MISMATCH);
    assert_stack(2, b); /* left alone, not silently popped */
    assert_ok(cus_context_pop(NULL));
    assert_ok(cus_context_pop(NULL));
}

static void test_pop_detects_a_raw_push_and_restores_the_driver_stack(void **state)
{
    (void)state;
    cus_autoptr(cus_context) a = new_ctx(0);
    cus_autoptr(cus_context) b = new_ctx(CUS_CTX_NO_PUSH);
    PFN_cuCtxPushCurrent_v4000 raw_push =
        RAW_FN(PFN_cuCtxPushCurrent_v4000, "cuCtxPushCurrent", 4000);
    PFN_cuCtxPopCurrent_v4000 raw_pop = RAW_FN(PFN_cuCtxPopCurrent_v4000, "cuCtxPopCurrent", 4000);
    assert_int_equal(raw_push(cus_context_handle(b)), CUDA_SUCCESS); /* behind cuscope's back */
    assert_status(cus_context_pop(NULL), CUS_ERROR_CONTEXT_MISMATCH);
    assert_int_equal(cus_fake_thread_stack_depth(), 2);
    assert_ptr_equal(cus_fake_thread_stack_at(1), cus_context_handle(b));
    assert_int_equal(cus_context_stack_depth(), 1);
    CUcontext h = NULL;
    assert_int_equal(raw_pop(&h), CUDA_SUCCESS);
    assert_ptr_equal(h, cus_context_handle(b));
    assert_stack(1, a);
    assert_ok(cus_context_pop(NULL));
}

/* The guard's inline exit: its context is on top of cuscope's mirror, but the
 * driver pops another one, pushed behind cuscope's back inside the scope. The
 * guard gives the intruder its place back and reports the mismatch to the
 * destroy handler (an exit cannot return it). */
static void test_guard_exit_detects_a_raw_push_and_restores_the_driver_stack(void **state)
{
    (void)state;
    cus_autoptr(cus_context) a = new_ctx(CUS_CTX_NO_PUSH);
    cus_autoptr(cus_context) b = new_ctx(CUS_CTX_NO_PUSH);
    PFN_cuCtxPushCurrent_v4000 raw_push =
        RAW_FN(PFN_cuCtxPushCurrent_v4000, "cuCtxPushCurrent", 4000);
    PFN_cuCtxPopCurrent_v4000 raw_pop = RAW_FN(PFN_cuCtxPopCurrent_v4000, "cuCtxPopCurrent", 4000);
    cus_context_guard g = cus_context_guard_enter(a);
    assert_ok(g.status);
    assert_int_equal(raw_push(cus_context_handle(b)), CUDA_SUCCESS); /* behind cuscope's back */
    unsigned long pushes = cus_fake_calls_of("cuCtxPushCurrent");
    cus_context_guard_exit(&g);
    assert_int_equal(env_destroyed.count, 1);
    assert_int_equal(env_destroyed.last_status, CUS_ERROR_CONTEXT_MISMATCH);
    assert_int_equal(cus_fake_calls_of("cuCtxPushCurrent"), pushes + 1); /* b went back */
    /* The driver: a, then b on top, as before the exit; the mirror keeps a. */
    assert_int_equal(cus_fake_thread_stack_depth(), 2);
    assert_ptr_equal(cus_fake_thread_stack_at(0), cus_context_handle(a));
    assert_ptr_equal(cus_fake_thread_stack_at(1), cus_context_handle(b));
    assert_int_equal(cus_context_stack_depth(), 1);
    CUcontext h = NULL;
    assert_int_equal(raw_pop(&h), CUDA_SUCCESS);
    assert_ptr_equal(h, cus_context_handle(b));
    assert_stack(1, a);
    assert_ok(cus_context_pop(NULL));
    env_destroyed.count = 0;
}

/* A resolver whose cuCtxSynchronize pushes another context as a side effect:
 * what a driver call made between cuscope's temporary push and its pop
 * (a callback, an interposed library) can do. */
static CUcontext intruder;
static PFN_cuCtxSynchronize_v2000 fake_sync;
static PFN_cuCtxPushCurrent_v4000 fake_push;

static CUresult CUDAAPI sync_then_push(void)
{
    CUresult r = fake_sync();
    if (r == CUDA_SUCCESS && intruder)
        r = fake_push(intruder);
    return r;
}

static CUresult intruding_resolver(const char *symbol, void **pfn, int version, cuuint64_t flags,
                                   CUdriverProcAddressQueryResult *qs)
{
    CUresult r = cus_fake_get_proc_address(symbol, pfn, version, flags, qs);
    if (r == CUDA_SUCCESS && *pfn && strcmp(symbol, "cuCtxSynchronize") == 0) {
        memcpy(&fake_sync, pfn, sizeof fake_sync);
        PFN_cuCtxSynchronize_v2000 wrapped = sync_then_push;
        memcpy(pfn, &wrapped, sizeof wrapped);
    }
    return r;
}

/* A call that makes its context current for one driver call, when that call
 * pushes another context: the temporary pop takes the intruder and gives it
 * its place back. The call itself succeeded, so it returns CUS_SUCCESS; the
 * mismatch goes to the destroy handler, naming the call. */
static void test_a_temporary_switch_detects_a_push_made_during_the_call(void **state)
{
    (void)state;
    assert_ok(cus_driver_install(intruding_resolver));
    fake_push = RAW_FN(PFN_cuCtxPushCurrent_v4000, "cuCtxPushCurrent", 4000);
    PFN_cuCtxPopCurrent_v4000 raw_pop = RAW_FN(PFN_cuCtxPopCurrent_v4000, "cuCtxPopCurrent", 4000);
    cus_context *a = new_ctx(CUS_CTX_NO_PUSH);
    cus_context *b = new_ctx(CUS_CTX_NO_PUSH);
    assert_ok(cus_context_synchronize(a)); /* no intruder yet: a plain switch */
    assert_int_equal(cus_fake_thread_stack_depth(), 0);

    intruder = cus_context_handle(b);
    unsigned long reports = env_destroyed.count;
    cus_clear_last_error();
    assert_ok(cus_context_synchronize(a));
    intruder = NULL;
    assert_int_equal(cus_last_status(), CUS_SUCCESS);
    assert_int_equal(env_destroyed.count, reports + 1);
    assert_int_equal(env_destroyed.last_status, CUS_ERROR_CONTEXT_MISMATCH);
    assert_string_equal(env_destroyed.last_function, "cus_context_synchronize");
    assert_string_equal(env_destroyed.last_driver_call, "cuCtxPopCurrent");
    assert_non_null(strstr(env_destroyed.last_message, "pushed back"));
    /* The intruder is back on top; a, pushed for the call, stays below it. */
    assert_int_equal(cus_fake_thread_stack_depth(), 2);
    assert_ptr_equal(cus_fake_thread_stack_at(0), cus_context_handle(a));
    assert_ptr_equal(cus_fake_thread_stack_at(1), cus_context_handle(b));
    assert_int_equal(cus_context_stack_depth(), 0); /* cuscope's mirror has nothing */
    CUcontext h = NULL;
    assert_int_equal(raw_pop(&h), CUDA_SUCCESS);
    assert_ptr_equal(h, cus_context_handle(b));
    assert_int_equal(raw_pop(&h), CUDA_SUCCESS);
    assert_ptr_equal(h, cus_context_handle(a));
    assert_int_equal(cus_context_poisoned(a), CUS_SUCCESS); /* a mismatch is not sticky */
    assert_ok(cus_context_synchronize(a));
    cus_context_unref(b);
    cus_context_unref(a);
    assert_ok(cus_driver_install(cus_fake_get_proc_address));
}

/* --- out of host memory: the mirror's allocations ------------------------------------
 * A thread's mirror is allocated at its first push (the record, then its
 * entries) and grows when full (8, 16, ...): each of those allocations can
 * fail, and each failure leaves both stacks as they were. */

typedef enum { BY_PUSH, BY_CREATE, BY_SET_CURRENT } push_kind;

typedef struct oom_case {
    cus_context *ctx;
    push_kind kind;
    unsigned long fail_at; /* the allocation that fails */
    unsigned int depth;    /* pushed first, with allocations working */
    cus_status st;
    unsigned long fired;
    unsigned int depth_after, fake_depth_after;
    cus_context *created;
} oom_case;

static void *push_out_of_memory(void *arg)
{
    oom_case *c = arg;
    for (unsigned int i = 0; i < c->depth; i++)
        if (cus_context_push(c->ctx) != CUS_SUCCESS)
            return NULL;
    cus_clear_last_error();
    cus_debug_fail_host_alloc(c->fail_at, false);
    if (c->kind == BY_PUSH)
        c->st = cus_context_push(c->ctx);
    else if (c->kind == BY_CREATE)
        c->st = cus_context_create(cus_context_device(c->ctx), 0, &c->created);
    else
        c->st = cus_context_set_current(c->ctx);
    c->fired = cus_debug_host_alloc_faults();
    cus_debug_fail_host_alloc(0, false);
    if (c->st && cus_last_status() != c->st)
        c->st = CUS_ERROR_CONTEXT_MISMATCH; /* not recorded: reported as a mismatch */
    c->depth_after = cus_context_stack_depth();
    c->fake_depth_after = (unsigned)cus_fake_thread_stack_depth();
    while (cus_context_stack_depth())
        (void)cus_context_pop(NULL);
    return NULL;
}

static void test_the_mirror_out_of_host_memory_leaves_both_stacks(void **state)
{
    (void)state;
    cus_autoptr(cus_context) ctx = new_ctx(CUS_CTX_NO_PUSH);
    static const char *const kinds[] = {"cus_context_push", "cus_context_create",
                                        "cus_context_set_current"};
    /* depth 0: a new thread's record (1) and entries (2); depth 8: growth (1). */
    static const struct {
        unsigned int depth;
        unsigned long fail_at;
    } points[] = {{0, 1}, {0, 2}, {8, 1}, {16, 1}};
    for (int kind = BY_PUSH; kind <= BY_SET_CURRENT; kind++) {
        for (size_t p = 0; p < sizeof points / sizeof points[0]; p++) {
            /* set_current replaces the top: a full mirror does not grow. */
            if (kind == BY_SET_CURRENT && points[p].depth)
                continue;
            oom_case c = {.ctx = ctx, .kind = (push_kind)kind, .fail_at = points[p].fail_at,
                          .depth = points[p].depth};
            pthread_t t;
            assert_int_equal(pthread_create(&t, NULL, push_out_of_memory, &c), 0);
            assert_int_equal(pthread_join(t, NULL), 0);
            if (c.fired != 1 || c.st != CUS_ERROR_OUT_OF_HOST_MEMORY ||
                c.depth_after != points[p].depth || c.fake_depth_after != points[p].depth)
                fail_msg("%s at depth %u, allocation %lu failing: %s, %lu fault(s) fired, "
                         "stacks %u/%u deep (want CUS_ERROR_OUT_OF_HOST_MEMORY, %u)",
                         kinds[kind], points[p].depth, points[p].fail_at,
                         cus_status_name(c.st), c.fired, c.depth_after, c.fake_depth_after,
                         points[p].depth);
            assert_null(c.created);
            assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_CONTEXT), 1);
        }
    }
}

/* A call made under a temporary switch fails, and so does the pop that ends
 * the switch (and its retry): the call's error is returned, and the pop's,
 * which leaves the context pushed on the driver's stack, goes to the destroy
 * handler instead of being lost. */
static void test_a_failed_call_whose_pop_fails_too_reports_both(void **state)
{
    (void)state;
    cus_autoptr(cus_context) a = new_ctx(CUS_CTX_NO_PUSH);
    assert_ok(cus_fake_fail_entry("cuCtxSynchronize", 1, CUDA_ERROR_INVALID_VALUE, false));
    assert_ok(cus_fake_fail_entry("cuCtxPopCurrent", 1, CUDA_ERROR_UNKNOWN, true));
    assert_status(cus_context_synchronize(a), CUDA_ERROR_INVALID_VALUE);
    cus_fake_clear_faults();
    assert_string_equal(cus_last_error()->driver_call, "cuCtxSynchronize");
    assert_int_equal(env_destroyed.count, 1);
    assert_int_equal(env_destroyed.last_status, CUDA_ERROR_UNKNOWN);
    assert_non_null(strstr(env_destroyed.last_message, "stays pushed"));
    assert_int_equal(cus_fake_thread_stack_depth(), 1);
    assert_int_equal(cus_context_stack_depth(), 0);
    PFN_cuCtxPopCurrent_v4000 raw_pop = RAW_FN(PFN_cuCtxPopCurrent_v4000, "cuCtxPopCurrent", 4000);
    CUcontext h = NULL;
    assert_int_equal(raw_pop(&h), CUDA_SUCCESS);
    assert_ptr_equal(h, cus_context_handle(a));
    env_destroyed.count = 0;
}

static void test_push_failure_leaves_the_stack(void **state)
{
    (void)state;
    cus_autoptr(cus_context) a = new_ctx(0);
    cus_autoptr(cus_context) b = new_ctx(CUS_CTX_NO_PUSH);
    assert_ok(cus_fake_fail_entry("cuCtxPushCurrent", 1, CUDA_ERROR_INVALID_VALUE, false));
    assert_status(cus_context_push(b), CUDA_ERROR_INVALID_VALUE);
    assert_stack(1, a);
    assert_ok(cus_context_pop(NULL));
}

static void test_pop_failure_leaves_the_stack(void **state)
{
    (void)state;
    cus_autoptr(cus_context) a = new_ctx(0);
    assert_ok(cus_fake_fail_entry("cuCtxPopCurrent", 1, CUDA_ERROR_UNKNOWN, false));
    cus_context *out = NULL;
    assert_status(cus_context_pop(&out), CUDA_ERROR_UNKNOWN);
    assert_null(out);
    assert_stack(1, a);
    assert_ok(cus_context_pop(NULL));
}

static void test_set_current_failure_leaves_the_stack(void **state)
{
    (void)state;
    cus_autoptr(cus_context) a = new_ctx(0);
    cus_autoptr(cus_context) b = new_ctx(CUS_CTX_NO_PUSH);
    assert_ok(cus_fake_fail_entry("cuCtxSetCurrent", 1, CUDA_ERROR_UNKNOWN, false));
    assert_status(cus_context_set_current(b), CUDA_ERROR_UNKNOWN);
    assert_stack(1, a);
    assert_ok(cus_fake_fail_entry("cuCtxSetCurrent", 1, CUDA_ERROR_UNKNOWN, false));
    assert_status(cus_context_set_current(NULL), CUDA_ERROR_UNKNOWN);
    assert_stack(1, a);
    assert_ok(cus_context_pop(NULL));
}

static void test_temporary_switch_restores_after_failure(void **state)
{
    (void)state;
    /* A call on a context that is not on top switches to it and back, also
     * when the call itself fails. */
    cus_autoptr(cus_context) a = new_ctx(0);
    cus_autoptr(cus_context) b = new_ctx(CUS_CTX_NO_PUSH);
    assert_ok(cus_fake_fail_entry("cuCtxSynchronize", 1, CUDA_ERROR_UNKNOWN, false));
    assert_status(cus_context_synchronize(b), CUDA_ERROR_UNKNOWN);
    assert_stack(1, a);
    /* A pop that fails once is retried: the caller's stack comes back. */
    unsigned long pops = cus_fake_calls_of("cuCtxPopCurrent");
    assert_ok(cus_fake_fail_entry("cuCtxPopCurrent", 1, CUDA_ERROR_UNKNOWN, false));
    assert_ok(cus_context_synchronize(b));
    assert_int_equal(cus_fake_calls_of("cuCtxPopCurrent"), pops + 2);
    assert_stack(1, a);
    /* A pop that keeps failing: the synchronize was done, so the call
     * succeeds and the pop goes to the destroy handler (not the last error);
     * the driver keeps b pushed (the mirror never had it), as a failed pop
     * does. */
    unsigned long reports = env_destroyed.count;
    cus_clear_last_error();
    assert_ok(cus_fake_fail_entry("cuCtxPopCurrent", 1, CUDA_ERROR_UNKNOWN, true));
    unsigned long syncs = cus_fake_calls_of("cuCtxSynchronize");
    assert_ok(cus_context_synchronize(b));
    cus_fake_clear_faults();
    assert_int_equal(cus_fake_calls_of("cuCtxSynchronize"), syncs + 1);
    assert_int_equal(cus_last_status(), CUS_SUCCESS);
    env_assert_one_pop_report(reports, "cus_context_synchronize");
    assert_int_equal(env_destroyed.last_status, CUDA_ERROR_UNKNOWN);
    assert_int_equal(cus_context_stack_depth(), 1);
    assert_int_equal(cus_fake_thread_stack_depth(), 2);
    PFN_cuCtxPopCurrent_v4000 raw_pop = RAW_FN(PFN_cuCtxPopCurrent_v4000, "cuCtxPopCurrent", 4000);
    CUcontext h = NULL;
    assert_int_equal(raw_pop(&h), CUDA_SUCCESS);
    assert_ptr_equal(h, cus_context_handle(b));
    assert_stack(1, a);
    assert_ok(cus_context_pop(NULL));
}

static void test_stack_grows_past_its_first_allocation(void **state)
{
    (void)state;
    cus_autoptr(cus_context) a = new_ctx(CUS_CTX_NO_PUSH);
    for (int i = 0; i < 100; i++)
        assert_ok(cus_context_push(a));
    assert_stack(100, a);
    for (int i = 0; i < 100; i++)
        assert_ok(cus_context_pop(NULL));
    assert_stack(0, NULL);
}

/* --- a context pushed over itself (lib/context_stack.c: the entry borrows the
 * reference of the one below) ------------------------------------------------ */

static unsigned long live_contexts(void)
{
    return (unsigned long)cus_fake_live_handles(CUS_FAKE_HANDLE_CONTEXT);
}

/* The context lives until its last entry is popped, however many times it was
 * pushed over itself, and a push and a pop are each their one driver call. */
static void test_a_context_pushed_over_itself_lives_to_its_last_pop(void **state)
{
    (void)state;
    cus_context *a = new_ctx(CUS_CTX_NO_PUSH);
    enum { D = 1000 };
    unsigned long from = cus_fake_call_count();
    unsigned long pushes = cus_fake_calls_of("cuCtxPushCurrent");
    unsigned long pops = cus_fake_calls_of("cuCtxPopCurrent");
    for (int i = 0; i < D; i++)
        assert_ok(cus_context_push(a));
    assert_stack(D, a);
    a = cus_context_unref(a); /* only the stack holds it now */
    cus_context *top = cus_context_current();
    for (int i = 0; i < D - 1; i++) {
        assert_ok(cus_context_pop(NULL));
        assert_int_equal(live_contexts(), 1);
    }
    assert_stack(1, top);
    assert_ok(cus_context_synchronize(top)); /* still usable */
    assert_ok(cus_context_pop(NULL));
    assert_int_equal(live_contexts(), 0);
    assert_stack(0, NULL);
    assert_int_equal(cus_fake_calls_of("cuCtxPushCurrent"), pushes + D);
    assert_int_equal(cus_fake_calls_of("cuCtxPopCurrent"), pops + D);
    assert_int_equal(cus_fake_calls_of("cuCtxDestroy"), 1);
    /* pushes, pops, the synchronize, the destroy: nothing else */
    assert_int_equal(cus_fake_call_count(), from + 2 * D + 2);
}

/* A pop's `popped` is a reference of its own, also for an entry that
 * borrowed the one below's. */
static void test_pop_of_a_context_pushed_over_itself_hands_out_a_reference(void **state)
{
    (void)state;
    cus_context *a = new_ctx(CUS_CTX_NO_PUSH);
    assert_ok(cus_context_push(a));
    assert_ok(cus_context_push(a));
    a = cus_context_unref(a);
    cus_context *upper = NULL, *lower = NULL;
    assert_ok(cus_context_pop(&upper));
    assert_ok(cus_context_pop(&lower));
    assert_ptr_equal(upper, lower);
    assert_stack(0, NULL);
    upper = cus_context_unref(upper);
    assert_int_equal(live_contexts(), 1);
    assert_ok(cus_context_synchronize(lower));
    lower = cus_context_unref(lower);
    assert_int_equal(live_contexts(), 0);
}

/* cus_context_set_current replaces the top: over an entry of the same
 * context, or with the context of the entry below, every context still
 * lives exactly as long as an entry or a reference holds it. */
static void test_set_current_over_a_context_pushed_over_itself(void **state)
{
    (void)state;
    cus_context *a = new_ctx(CUS_CTX_NO_PUSH), *b = new_ctx(CUS_CTX_NO_PUSH);
    cus_context *ha = a, *hb = b; /* borrowed, for the stack checks */
    assert_ok(cus_context_push(a));
    assert_ok(cus_context_push(a));
    assert_ok(cus_context_set_current(b)); /* [a, b]: b's entry holds b */
    assert_stack(2, hb);
    b = cus_context_unref(b);
    assert_int_equal(live_contexts(), 2);
    assert_ok(cus_context_set_current(ha)); /* [a, a]: b's last holder gone */
    assert_stack(2, ha);
    assert_int_equal(live_contexts(), 1);
    a = cus_context_unref(a);
    assert_ok(cus_context_set_current(ha)); /* over itself: nothing changes */
    assert_stack(2, ha);
    assert_ok(cus_context_set_current(NULL));
    assert_stack(1, ha);
    assert_int_equal(live_contexts(), 1);
    assert_ok(cus_context_set_current(NULL));
    assert_stack(0, NULL);
    assert_int_equal(live_contexts(), 0);
    assert_int_equal(cus_fake_calls_of("cuCtxDestroy"), 2);
}

/* A thread that exits with a context pushed over itself releases it once. */
static void *exit_pushed_over_itself(void *arg)
{
    cus_context *a = arg;
    for (int i = 0; i < 3; i++)
        if (cus_context_push(a))
            return (void *)1;
    return NULL;
}

static void test_thread_exit_with_a_context_pushed_over_itself(void **state)
{
    (void)state;
    cus_context *a = new_ctx(CUS_CTX_NO_PUSH);
    pthread_t t;
    void *ret = NULL;
    assert_int_equal(pthread_create(&t, NULL, exit_pushed_over_itself, a), 0);
    assert_int_equal(pthread_join(t, &ret), 0);
    assert_null(ret);
    assert_int_equal(env_destroyed.count, 1);
    assert_int_equal(env_destroyed.last_status, CUS_ERROR_CONTEXTS_LEFT_PUSHED);
    assert_non_null(strstr(env_destroyed.last_message, "3 context"));
    env_destroyed.count = 0; /* the report was expected */
    assert_int_equal(live_contexts(), 1);
    assert_ok(cus_context_synchronize(a));
    a = cus_context_unref(a);
    assert_int_equal(live_contexts(), 0);
    assert_int_equal(cus_debug_live_objects(), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_create_pushes_the_new_context),
        ENV_TEST(test_create_no_push_leaves_the_stack_alone),
        ENV_TEST(test_push_makes_the_context_current),
        ENV_TEST(test_pop_returns_the_popped_context),
        ENV_TEST(test_pop_on_empty_stack_is_unbalanced_and_makes_no_driver_call),
        ENV_TEST(test_set_current_replaces_the_top),
        ENV_TEST(test_set_current_on_empty_stack_pushes),
        ENV_TEST(test_set_current_null_pops_only_the_top),
        ENV_TEST(test_set_current_null_on_empty_stack_is_a_noop),
        ENV_TEST(test_destroy_pops_the_callers_copy),
        ENV_TEST(test_primary_retain_and_release_never_push_or_pop),
        ENV_TEST(test_guard_on_current_context_makes_no_driver_call),
        ENV_TEST(test_guard_pushes_and_pops_exactly_once),
        ENV_TEST(test_guard_restores_on_early_return),
        ENV_TEST(test_with_context_break_restores),
        ENV_TEST(test_with_context_push_failure_skips_the_body),
        ENV_TEST(test_guard_reports_someone_elses_context_on_top),
        ENV_TEST(test_pop_detects_a_raw_push_and_restores_the_driver_stack),
        ENV_TEST(test_guard_exit_detects_a_raw_push_and_restores_the_driver_stack),
        ENV_TEST(test_a_temporary_switch_detects_a_push_made_during_the_call),
        ENV_TEST(test_the_mirror_out_of_host_memory_leaves_both_stacks),
        ENV_TEST(test_a_failed_call_whose_pop_fails_too_reports_both),
        ENV_TEST(test_push_failure_leaves_the_stack),
        ENV_TEST(test_pop_failure_leaves_the_stack),
        ENV_TEST(test_set_current_failure_leaves_the_stack),
        ENV_TEST(test_temporary_switch_restores_after_failure),
        ENV_TEST(test_stack_grows_past_its_first_allocation),
        ENV_TEST(test_a_context_pushed_over_itself_lives_to_its_last_pop),
        ENV_TEST(test_pop_of_a_context_pushed_over_itself_hands_out_a_reference),
        ENV_TEST(test_set_current_over_a_context_pushed_over_itself),
        ENV_TEST(test_thread_exit_with_a_context_pushed_over_itself),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
