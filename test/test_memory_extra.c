/* Memory, the remaining checks (include/cuscope/memory.h), on the fake
 * driver: prefetch and advice on managed memory, peer access and peer copies
 * between contexts, a poisoned context's memory calls and releases, host
 * registration edge cases, and the overflow check of cus_buffer_alloc_array.
 *
 * Every failure path returns and records its status, leaves out parameters
 * untouched and the stack unchanged; the teardown checks that nothing leaked.
 * The regressions are named after what they check. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cudaTypedefs.h>

#include <cuscope/memory.h>

#include "stream_common.h"
#include "harness/check.h"

#define N 256
#define STICKY CUDA_ERROR_ILLEGAL_ADDRESS

static cus_buffer *new_buf(cus_context *c, size_t bytes)
{
    cus_buffer *b = NULL;
    assert_ok(cus_buffer_alloc(c, bytes, &b));
    assert_non_null(b);
    return b;
}

static cus_buffer *new_managed(cus_context *c, size_t bytes)
{
    cus_buffer *b = NULL;
    assert_ok(cus_buffer_alloc_managed(c, bytes, CU_MEM_ATTACH_GLOBAL, &b));
    assert_non_null(b);
    return b;
}

static cus_context *ctx_on(int ordinal)
{
    cus_context *c = NULL;
    assert_ok(cus_context_create(dev_at(ordinal), CUS_CTX_NO_PUSH, &c));
    return c;
}

static void pattern(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 13u + seed);
}

/* Device ordinals as CUdevice values: the fake's devices are 0 and 1 (what
 * cuDeviceGet answers); constants, so that no cus_device_get call (which is a
 * driver call) falls between a test's call-count snapshots. */
#define D0 ((CUdevice)0)
#define D1 ((CUdevice)1)

/* Poisons c with a sticky error on a memory call (a synchronous copy). */
static void poison_by_copy(cus_context *c, cus_buffer *b)
{
    unsigned char in[16] = {0};
    assert_ok(cus_fake_fail_entry("cuMemcpyHtoD", 1, STICKY, false));
    assert_status(cus_copy_to_device(b, 0, in, sizeof in), CU(STICKY));
    cus_fake_clear_faults();
    assert_int_equal(cus_context_poisoned(c), STICKY);
    assert_int_equal(cus_context_stack_depth(), 0);
    assert_int_equal(cus_fake_thread_stack_depth(), 0);
}

/* ============================================================================
 * managed memory: prefetch and advice
 * ========================================================================== */

static void test_prefetch_to_device_and_to_cpu(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_stream *s = new_stream(c, 0);
    cus_buffer *m = new_managed(c, N);
    unsigned char want[N], out[N];
    pattern(cus_buffer_host_ptr(m), N, 5);
    pattern(want, N, 5);
    assert_ok(cus_buffer_prefetch(m, D0, s));
    assert_int_equal(cus_fake_calls_of("cuMemPrefetchAsync"), 1);
    assert_int_equal(cus_fake_stream_pending(cus_stream_handle(s)), 1); /* queued, not run */
    assert_ok(cus_buffer_prefetch(m, CU_DEVICE_CPU, s));
    assert_int_equal(cus_fake_calls_of("cuMemPrefetchAsync"), 2);
    assert_int_equal(cus_fake_stream_pending(cus_stream_handle(s)), 2);
    assert_int_equal(cus_context_stack_depth(), 0);
    assert_int_equal(cus_fake_thread_stack_depth(), 0);
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(cus_fake_stream_pending(cus_stream_handle(s)), 0);
    /* Prefetching moves no data. */
    assert_memory_equal(cus_buffer_host_ptr(m), want, N);
    memset(out, 0, N);
    assert_ok(cus_copy_to_host(out, m, 0, N));
    assert_memory_equal(out, want, N);
    assert_int_equal(cus_context_poisoned(c), CUS_SUCCESS);
    m = cus_buffer_unref(m);
    s = cus_stream_unref(s);
    c = cus_context_unref(c);
}

/* On the context's legacy default stream, with the context current (no push). */
static void test_prefetch_on_the_legacy_stream_while_current(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    cus_stream *ls = NULL;
    assert_ok(cus_stream_legacy(c, &ls));
    cus_buffer *m = new_managed(c, N);
    assert_ok(cus_context_push(c));
    unsigned long pushes = cus_fake_calls_of("cuCtxPushCurrent");
    assert_ok(cus_buffer_prefetch(m, D0, ls));
    assert_ok(cus_buffer_advise(m, CU_MEM_ADVISE_SET_READ_MOSTLY, D0));
    assert_int_equal(cus_fake_calls_of("cuCtxPushCurrent"), pushes); /* already current */
    assert_int_equal(cus_fake_stream_pending(CU_STREAM_LEGACY), 1);
    assert_ok(cus_stream_synchronize(ls));
    assert_int_equal(cus_fake_stream_pending(CU_STREAM_LEGACY), 0);
    assert_ok(cus_context_pop(NULL));
    m = cus_buffer_unref(m);
    ls = cus_stream_unref(ls);
    c = cus_context_unref(c);
}

/* With no context current: the driver needs one for cuMemAdvise (the H200
 * answers CUDA_ERROR_INVALID_CONTEXT, test/rules/expected.txt), so cuscope
 * makes the buffer's current for the call; a prefetch names its stream and
 * needs none, but is made in the buffer's context too. */
static void test_advise_makes_the_buffers_context_current(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_buffer *m = new_managed(c, N);
    assert_null(cus_context_current());
    stack_snap before = snap();
    unsigned long calls = cus_fake_call_count();
    assert_ok(cus_buffer_advise(m, CU_MEM_ADVISE_SET_READ_MOSTLY, D0));
    assert_calls_since(calls, "cuCtxPushCurrent", "cuMemAdvise", "cuCtxPopCurrent");
    assert_stack_unchanged(before);
    /* what the switch is for: the driver refuses it with no context */
    PFN_cuMemAdvise_v8000 raw_advise;
    RAW(raw_advise, "cuMemAdvise", 8000);
    assert_cu(raw_advise(cus_buffer_ptr(m), N, CU_MEM_ADVISE_SET_READ_MOSTLY, D0),
              CUDA_ERROR_INVALID_CONTEXT);
    m = cus_buffer_unref(m);
    c = cus_context_unref(c);
}

/* Two devices: prefetch to the other device, advice naming it. */
static void test_prefetch_and_advise_to_another_device(void **state)
{
    (void)state;
    cus_context *c = ctx_on(0);
    cus_stream *s = new_stream(c, 0);
    cus_buffer *m = new_managed(c, N);
    assert_ok(cus_buffer_prefetch(m, D1, s));
    assert_ok(cus_buffer_advise(m, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, D1));
    assert_ok(cus_buffer_advise(m, CU_MEM_ADVISE_SET_ACCESSED_BY, D1));
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(cus_fake_calls_of("cuMemPrefetchAsync"), 1);
    assert_int_equal(cus_fake_calls_of("cuMemAdvise"), 2);
    m = cus_buffer_unref(m);
    s = cus_stream_unref(s);
    c = cus_context_unref(c);
}

static void test_prefetch_to_an_invalid_device(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_stream *s = new_stream(c, 0);
    cus_buffer *m = new_managed(c, N);
    leak_snap before = leak_snap_now();
    assert_status(cus_buffer_prefetch(m, 7, s), CU(CUDA_ERROR_INVALID_DEVICE));
    assert_int_equal(cus_fake_stream_pending(cus_stream_handle(s)), 0);
    assert_int_equal(cus_context_poisoned(c), CUS_SUCCESS);
    assert_nothing_changed(before);
    m = cus_buffer_unref(m);
    s = cus_stream_unref(s);
    c = cus_context_unref(c);
}

static void test_advise(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_buffer *m = new_managed(c, N);
    assert_ok(cus_buffer_advise(m, CU_MEM_ADVISE_SET_READ_MOSTLY, D0));
    assert_ok(cus_buffer_advise(m, CU_MEM_ADVISE_UNSET_READ_MOSTLY, D0));
    assert_ok(cus_buffer_advise(m, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, D0));
    assert_ok(cus_buffer_advise(m, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, CU_DEVICE_CPU));
    assert_ok(cus_buffer_advise(m, CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION, D0));
    assert_ok(cus_buffer_advise(m, CU_MEM_ADVISE_SET_ACCESSED_BY, D0));
    assert_ok(cus_buffer_advise(m, CU_MEM_ADVISE_SET_ACCESSED_BY, CU_DEVICE_CPU));
    assert_ok(cus_buffer_advise(m, CU_MEM_ADVISE_UNSET_ACCESSED_BY, D0));
    assert_int_equal(cus_fake_calls_of("cuMemAdvise"), 8);
    assert_int_equal(cus_context_stack_depth(), 0);
    assert_int_equal(cus_fake_thread_stack_depth(), 0);
    /* What the driver refuses surfaces, without poisoning. */
    leak_snap before = leak_snap_now();
    assert_status(cus_buffer_advise(m, (CUmem_advise)99, D0), CU(CUDA_ERROR_INVALID_VALUE));
    assert_status(cus_buffer_advise(m, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, 7),
                  CU(CUDA_ERROR_INVALID_DEVICE));
    assert_int_equal(cus_fake_calls_of("cuMemAdvise"), 10);
    assert_int_equal(cus_context_poisoned(c), CUS_SUCCESS);
    assert_nothing_changed(before);
    m = cus_buffer_unref(m);
    c = cus_context_unref(c);
}

/* Device and stream-ordered buffers: CUS_ERROR_INVALID_ARGUMENT, no driver call. */
static void test_prefetch_and_advise_on_non_managed_buffers(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_stream *s = new_stream(c, 0);
    cus_buffer *d = new_buf(c, N);
    cus_buffer *so = NULL;
    assert_ok(cus_buffer_alloc_async(s, N, &so));
    assert_ok(cus_stream_synchronize(s));
    leak_snap before = leak_snap_now();
    unsigned long calls = cus_fake_call_count();
    const cus_status I = CUS_ERROR_INVALID_ARGUMENT;
    assert_status(cus_buffer_prefetch(d, D0, s), I);
    assert_status(cus_buffer_prefetch(d, CU_DEVICE_CPU, s), I);
    assert_status(cus_buffer_prefetch(so, D0, s), I);
    assert_status(cus_buffer_advise(d, CU_MEM_ADVISE_SET_READ_MOSTLY, D0), I);
    assert_status(cus_buffer_advise(so, CU_MEM_ADVISE_SET_ACCESSED_BY, D0), I);
    assert_int_equal(cus_fake_call_count(), calls);
    assert_int_equal(cus_fake_stream_pending(cus_stream_handle(s)), 0);
    assert_nothing_changed(before);
    d = cus_buffer_unref(d);
    so = cus_buffer_unref(so);
    s = cus_stream_unref(s);
    c = cus_context_unref(c);
}

static void test_prefetch_and_advise_null_args(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_stream *s = new_stream(c, 0);
    cus_buffer *m = new_managed(c, N);
    leak_snap before = leak_snap_now();
    unsigned long calls = cus_fake_call_count();
    const cus_status I = CUS_ERROR_INVALID_ARGUMENT;
    assert_status(cus_buffer_prefetch(NULL, D0, s), I);
    assert_status(cus_buffer_prefetch(m, D0, NULL), I);
    assert_status(cus_buffer_prefetch(NULL, CU_DEVICE_CPU, NULL), I);
    assert_status(cus_buffer_advise(NULL, CU_MEM_ADVISE_SET_READ_MOSTLY, D0), I);
    assert_int_equal(cus_fake_call_count(), calls);
    assert_nothing_changed(before);
    m = cus_buffer_unref(m);
    s = cus_stream_unref(s);
    c = cus_context_unref(c);
}

static void test_prefetch_and_advise_faults(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_stream *s = new_stream(c, 0);
    cus_buffer *m = new_managed(c, N);
    assert_fault_surfaces("cuMemPrefetchAsync", cus_buffer_prefetch(m, D0, s));
    assert_fault_surfaces("cuMemPrefetchAsync", cus_buffer_prefetch(m, CU_DEVICE_CPU, s));
    assert_fault_surfaces("cuCtxPushCurrent", cus_buffer_prefetch(m, D0, s));
    assert_int_equal(cus_fake_stream_pending(cus_stream_handle(s)), 0); /* nothing queued */
    assert_fault_surfaces("cuMemAdvise", cus_buffer_advise(m, CU_MEM_ADVISE_SET_READ_MOSTLY, D0));
    assert_fault_surfaces("cuCtxPushCurrent",
                          cus_buffer_advise(m, CU_MEM_ADVISE_SET_ACCESSED_BY, D0));
    assert_int_equal(cus_context_poisoned(c), CUS_SUCCESS);
    /* Still usable afterwards. */
    assert_ok(cus_buffer_prefetch(m, D0, s));
    assert_ok(cus_buffer_advise(m, CU_MEM_ADVISE_SET_READ_MOSTLY, D0));
    assert_ok(cus_stream_synchronize(s));
    m = cus_buffer_unref(m);
    s = cus_stream_unref(s);
    c = cus_context_unref(c);
}

/* A pop that fails twice after a successful prefetch: the prefetch is queued
 * (the driver took it), so the call succeeds; the pop goes to the destroy
 * handler, naming the call, and the driver keeps the context pushed. */
static void test_prefetch_and_advise_pop_failure(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_stream *s = new_stream(c, 0);
    cus_buffer *m = new_managed(c, N);
    unsigned long reports = env_destroyed.count;
    cus_clear_last_error();
    assert_ok(cus_fake_fail_entry("cuCtxPopCurrent", 1, FAULT, true));
    assert_ok(cus_buffer_prefetch(m, D0, s));
    cus_fake_clear_faults();
    assert_int_equal(cus_last_status(), CUS_SUCCESS);
    env_assert_one_pop_report(reports, "cus_buffer_prefetch");
    assert_int_equal(env_destroyed.last_status, CU(FAULT));
    assert_int_equal(cus_fake_calls_of("cuMemPrefetchAsync"), 1);
    assert_int_equal(cus_fake_stream_pending(cus_stream_handle(s)), 1); /* queued */
    assert_int_equal(cus_context_stack_depth(), 0);
    assert_int_equal(cus_fake_thread_stack_depth(), 1);
    reconcile_fake_stack();
    reports = env_destroyed.count;
    assert_ok(cus_fake_fail_entry("cuCtxPopCurrent", 1, FAULT, true));
    assert_ok(cus_buffer_advise(m, CU_MEM_ADVISE_SET_READ_MOSTLY, D0));
    cus_fake_clear_faults();
    assert_int_equal(cus_last_status(), CUS_SUCCESS);
    env_assert_one_pop_report(reports, "cus_buffer_advise");
    assert_int_equal(cus_fake_calls_of("cuMemAdvise"), 1);
    assert_int_equal(cus_fake_thread_stack_depth(), 1);
    reconcile_fake_stack();
    assert_int_equal(cus_context_poisoned(c), CUS_SUCCESS);
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(cus_fake_stream_pending(cus_stream_handle(s)), 0); /* it ran */
    m = cus_buffer_unref(m);
    s = cus_stream_unref(s);
    c = cus_context_unref(c);
}

/* A sticky error from cuMemPrefetchAsync poisons the buffer's context. */
static void test_sticky_prefetch_failure_poisons(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_stream *s = new_stream(c, 0);
    cus_buffer *m = new_managed(c, N);
    assert_ok(cus_fake_fail_entry("cuMemPrefetchAsync", 1, STICKY, false));
    assert_status(cus_buffer_prefetch(m, D0, s), CU(STICKY));
    assert_int_equal(cus_context_poisoned(c), STICKY);
    unsigned long calls = cus_fake_call_count();
    assert_status(cus_buffer_prefetch(m, D0, s), CU(STICKY));
    assert_status(cus_buffer_advise(m, CU_MEM_ADVISE_SET_READ_MOSTLY, D0),
                  CU(STICKY));
    assert_int_equal(cus_fake_call_count(), calls);
    m = cus_buffer_unref(m);
    s = cus_stream_unref(s);
    assert_int_equal(cus_fake_call_count(), calls); /* released without driver calls */
    c = cus_context_unref(c);
}

/* An older driver without the entry points: CUS_ERROR_NOT_SUPPORTED, decided
 * without a driver call. */
static void test_prefetch_and_advise_not_supported(void **state)
{
    (void)state;
    assert_ok(cus_fake_hide_entry("cuMemPrefetchAsync"));
    assert_ok(cus_fake_hide_entry("cuMemAdvise"));
    cus_context *c = new_ctx(); /* the load: both are optional */
    assert_false(cus_driver_has("cuMemPrefetchAsync"));
    assert_false(cus_driver_has("cuMemAdvise"));
    cus_stream *s = new_stream(c, 0);
    cus_buffer *m = new_managed(c, N);
    leak_snap before = leak_snap_now();
    unsigned long calls = cus_fake_call_count();
    assert_status(cus_buffer_prefetch(m, D0, s), CUS_ERROR_NOT_SUPPORTED);
    assert_status(cus_buffer_prefetch(m, CU_DEVICE_CPU, s), CUS_ERROR_NOT_SUPPORTED);
    assert_status(cus_buffer_advise(m, CU_MEM_ADVISE_SET_READ_MOSTLY, D0),
                  CUS_ERROR_NOT_SUPPORTED);
    assert_int_equal(cus_fake_call_count(), calls);
    assert_nothing_changed(before);
    /* Argument checks still come first. */
    cus_buffer *d = new_buf(c, N);
    assert_status(cus_buffer_prefetch(d, CU_DEVICE_CPU, s), CUS_ERROR_INVALID_ARGUMENT);
    d = cus_buffer_unref(d);
    m = cus_buffer_unref(m);
    s = cus_stream_unref(s);
    c = cus_context_unref(c);
}

/* ============================================================================
 * peer access
 * ========================================================================== */

static void test_can_access_peer(void **state)
{
    (void)state;
    cus_context *c0 = ctx_on(0), *c1 = ctx_on(1), *c0b = ctx_on(0);
    stack_snap before = snap();
    bool can = false;
    assert_ok(cus_context_can_access_peer(c0, c1, &can));
    assert_true(can);
    can = false;
    assert_ok(cus_context_can_access_peer(c1, c0, &can));
    assert_true(can);
    can = true;
    assert_ok(cus_context_can_access_peer(c0, c0, &can));
    assert_false(can);
    can = true;
    assert_ok(cus_context_can_access_peer(c0, c0b, &can)); /* the same device */
    assert_false(can);
    assert_int_equal(cus_fake_calls_of("cuDeviceCanAccessPeer"), 4);
    assert_stack_unchanged(before);
    c0 = cus_context_unref(c0);
    c1 = cus_context_unref(c1);
    c0b = cus_context_unref(c0b);
}

static void test_can_access_peer_null_args_and_fault(void **state)
{
    (void)state;
    cus_context *c0 = ctx_on(0), *c1 = ctx_on(1);
    leak_snap before = leak_snap_now();
    unsigned long calls = cus_fake_call_count();
    bool can = true;
    const cus_status I = CUS_ERROR_INVALID_ARGUMENT;
    assert_status(cus_context_can_access_peer(NULL, c1, &can), I);
    assert_status(cus_context_can_access_peer(c0, NULL, &can), I);
    assert_status(cus_context_can_access_peer(c0, c1, NULL), I);
    assert_true(can);
    assert_int_equal(cus_fake_call_count(), calls);
    can = false;
    assert_fault_surfaces("cuDeviceCanAccessPeer", cus_context_can_access_peer(c0, c1, &can));
    assert_false(can); /* untouched */
    assert_string_equal(cus_last_error()->driver_call, "cuDeviceCanAccessPeer");
    assert_nothing_changed(before);
    c0 = cus_context_unref(c0);
    c1 = cus_context_unref(c1);
}

static void test_enable_peer_access(void **state)
{
    (void)state;
    cus_context *c0 = ctx_on(0), *c1 = ctx_on(1);
    stack_snap before = snap();
    assert_ok(cus_context_enable_peer_access(c0, c1));
    assert_int_equal(cus_fake_calls_of("cuCtxEnablePeerAccess"), 1);
    /* Already enabled: the driver says CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED,
     * which is not an error here, and records no last error. */
    cus_clear_last_error();
    assert_ok(cus_context_enable_peer_access(c0, c1));
    assert_int_equal(cus_fake_calls_of("cuCtxEnablePeerAccess"), 2);
    assert_int_equal(cus_last_status(), CUS_SUCCESS);
    /* Access is one-way: the other direction is a new grant. */
    assert_ok(cus_context_enable_peer_access(c1, c0));
    assert_int_equal(cus_fake_calls_of("cuCtxEnablePeerAccess"), 3);
    assert_stack_unchanged(before);
    assert_int_equal(cus_context_poisoned(c0), CUS_SUCCESS);
    assert_int_equal(cus_context_poisoned(c1), CUS_SUCCESS);
    c0 = cus_context_unref(c0);
    c1 = cus_context_unref(c1);
}

/* While ctx is current: no push, and the stack is left as it was. */
static void test_enable_peer_access_while_current(void **state)
{
    (void)state;
    cus_context *c0 = ctx_on(0), *c1 = ctx_on(1);
    assert_ok(cus_context_push(c0));
    stack_snap before = snap();
    unsigned long pushes = cus_fake_calls_of("cuCtxPushCurrent");
    assert_ok(cus_context_enable_peer_access(c0, c1));
    assert_int_equal(cus_fake_calls_of("cuCtxPushCurrent"), pushes);
    assert_stack_unchanged(before);
    /* and with the peer current instead: c0 is pushed over it and popped */
    assert_ok(cus_context_pop(NULL));
    assert_ok(cus_context_push(c1));
    before = snap();
    assert_ok(cus_context_enable_peer_access(c0, c1)); /* already enabled */
    assert_ok(cus_context_enable_peer_access(c1, c0));
    assert_stack_unchanged(before);
    assert_ok(cus_context_pop(NULL));
    c0 = cus_context_unref(c0);
    c1 = cus_context_unref(c1);
}

static void test_enable_peer_access_errors(void **state)
{
    (void)state;
    cus_context *c0 = ctx_on(0), *c1 = ctx_on(1), *c0b = ctx_on(0);
    cus_context *p = NULL, *p2 = NULL;
    assert_ok(cus_context_retain_primary(dev_at(0), &p));
    assert_ok(cus_context_retain_primary(dev_at(0), &p2)); /* the same driver context */
    leak_snap before = leak_snap_now();
    unsigned long calls = cus_fake_call_count();
    const cus_status I = CUS_ERROR_INVALID_ARGUMENT;
    assert_status(cus_context_enable_peer_access(NULL, c1), I);
    assert_status(cus_context_enable_peer_access(c0, NULL), I);
    assert_int_equal(cus_fake_call_count(), calls);
    /* The driver's refusals surface as they are: a context with itself is
     * one device with itself, which the H200 refuses as unsupported
     * (test/rules/expected.txt). */
    assert_status(cus_context_enable_peer_access(c0, c0), CU(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED));
    assert_status(cus_context_enable_peer_access(p, p2), CU(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED));
    assert_status(cus_context_enable_peer_access(c0, c0b), CU(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED));
    assert_int_equal(cus_fake_calls_of("cuCtxEnablePeerAccess"), 3);
    assert_string_equal(cus_last_error()->driver_call, "cuCtxEnablePeerAccess");
    assert_int_equal(cus_context_poisoned(c0), CUS_SUCCESS);
    assert_int_equal(cus_context_poisoned(p), CUS_SUCCESS);
    assert_nothing_changed(before);
    p = cus_context_unref(p);
    p2 = cus_context_unref(p2);
    c0 = cus_context_unref(c0);
    c1 = cus_context_unref(c1);
    c0b = cus_context_unref(c0b);
}

static void test_enable_peer_access_faults(void **state)
{
    (void)state;
    cus_context *c0 = ctx_on(0), *c1 = ctx_on(1);
    assert_fault_surfaces("cuCtxEnablePeerAccess", cus_context_enable_peer_access(c0, c1));
    assert_fault_surfaces("cuCtxPushCurrent", cus_context_enable_peer_access(c0, c1));
    assert_int_equal(cus_context_poisoned(c0), CUS_SUCCESS);
    /* An injected "already enabled" is success. */
    assert_ok(cus_fake_fail_entry("cuCtxEnablePeerAccess", 1, CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED,
                                  false));
    stack_snap before = snap();
    assert_ok(cus_context_enable_peer_access(c0, c1));
    assert_int_equal(cus_fake_faults_fired(), 3);
    assert_stack_unchanged(before);
    cus_fake_clear_faults();
    /* A pop failing twice after the grant: the grant stands, so the call
     * succeeds; the pop goes to the destroy handler, naming the call. */
    unsigned long reports = env_destroyed.count;
    unsigned long grants = cus_fake_calls_of("cuCtxEnablePeerAccess");
    cus_clear_last_error();
    assert_ok(cus_fake_fail_entry("cuCtxPopCurrent", 1, FAULT, true));
    assert_ok(cus_context_enable_peer_access(c1, c0));
    cus_fake_clear_faults();
    assert_int_equal(cus_last_status(), CUS_SUCCESS);
    assert_int_equal(cus_fake_calls_of("cuCtxEnablePeerAccess"), grants + 1);
    env_assert_one_pop_report(reports, "cus_context_enable_peer_access");
    assert_int_equal(cus_fake_thread_stack_depth(), (int)cus_context_stack_depth() + 1);
    reconcile_fake_stack();
    /* A sticky error poisons ctx, the context that was current, not the peer. */
    cus_context *c1b = ctx_on(1);
    assert_ok(cus_fake_fail_entry("cuCtxEnablePeerAccess", 1, STICKY, false));
    assert_status(cus_context_enable_peer_access(c1b, c0), CU(STICKY));
    assert_int_equal(cus_context_poisoned(c1b), STICKY);
    assert_int_equal(cus_context_poisoned(c0), CUS_SUCCESS);
    unsigned long calls = cus_fake_call_count();
    assert_status(cus_context_enable_peer_access(c1b, c0), CU(STICKY));
    assert_int_equal(cus_fake_call_count(), calls);
    c1b = cus_context_unref(c1b);
    c0 = cus_context_unref(c0);
    c1 = cus_context_unref(c1);
}

/* ============================================================================
 * peer copies
 * ========================================================================== */

typedef struct peer_pair {
    cus_context *c0, *c1;
    cus_stream *s0, *s1;
    cus_buffer *a, *b; /* a on c0, b on c1 */
} peer_pair;

static peer_pair peer_pair_new(void)
{
    peer_pair p;
    p.c0 = ctx_on(0);
    p.c1 = ctx_on(1);
    p.s0 = new_stream(p.c0, 0);
    p.s1 = new_stream(p.c1, 0);
    p.a = new_buf(p.c0, N);
    p.b = new_buf(p.c1, N);
    return p;
}

static void peer_pair_free(peer_pair *p)
{
    p->a = cus_buffer_unref(p->a);
    p->b = cus_buffer_unref(p->b);
    p->s0 = cus_stream_unref(p->s0);
    p->s1 = cus_stream_unref(p->s1);
    p->c0 = cus_context_unref(p->c0);
    p->c1 = cus_context_unref(p->c1);
}

static void test_peer_copy_async(void **state)
{
    (void)state;
    peer_pair p = peer_pair_new();
    cus_host_buffer *hin = NULL, *hout = NULL;
    assert_ok(cus_host_buffer_alloc(p.c0, N, CU_MEMHOSTALLOC_PORTABLE, &hin));
    assert_ok(cus_host_buffer_alloc(p.c1, N, CU_MEMHOSTALLOC_PORTABLE, &hout));
    unsigned char *in = cus_host_buffer_data(hin), *out = cus_host_buffer_data(hout);
    unsigned char zeros[N] = {0};
    pattern(in, N, 31);
    assert_ok(cus_copy_to_device(p.a, 0, in, N));
    assert_ok(cus_copy_to_device(p.b, 0, zeros, N));
    /* a (c0) -> b (c1) on b's stream */
    assert_ok(cus_copy_device_async(p.b, 0, p.a, 0, N, p.s1));
    assert_int_equal(cus_fake_calls_of("cuMemcpyPeerAsync"), 1);
    assert_int_equal(cus_fake_calls_of("cuMemcpyDtoDAsync"), 0);
    assert_int_equal(cus_fake_stream_pending(cus_stream_handle(p.s1)), 1);
    assert_ok(cus_copy_to_host_async(out, p.b, 0, N, p.s1));
    assert_ok(cus_stream_synchronize(p.s1));
    assert_memory_equal(out, in, N);
    /* with offsets, b -> a on a's stream */
    assert_ok(cus_copy_to_device(p.a, 0, zeros, N));
    assert_ok(cus_copy_device_async(p.a, 100, p.b, 10, 50, p.s0)); /* a[100..150) = in[10..60) */
    assert_ok(cus_copy_to_host_async(out, p.a, 0, N, p.s0));
    assert_ok(cus_stream_synchronize(p.s0));
    assert_memory_equal(out, zeros, 100);
    assert_memory_equal(out + 100, in + 10, 50);
    assert_memory_equal(out + 150, zeros, N - 150);
    assert_int_equal(cus_fake_calls_of("cuMemcpyPeerAsync"), 2);
    assert_int_equal(cus_context_stack_depth(), 0);
    assert_int_equal(cus_fake_thread_stack_depth(), 0);
    hin = cus_host_buffer_unref(hin);
    hout = cus_host_buffer_unref(hout);
    peer_pair_free(&p);
}

/* The stream must be the destination's (memory.h: the device buffer's context). */
static void test_peer_copy_async_on_the_sources_stream_is_a_mismatch(void **state)
{
    (void)state;
    peer_pair p = peer_pair_new();
    leak_snap before = leak_snap_now();
    unsigned long calls = cus_fake_call_count();
    assert_status(cus_copy_device_async(p.b, 0, p.a, 0, N, p.s0), CUS_ERROR_CONTEXT_MISMATCH);
    assert_status(cus_copy_device_async(p.a, 0, p.b, 0, N, p.s1), CUS_ERROR_CONTEXT_MISMATCH);
    assert_int_equal(cus_fake_call_count(), calls);
    assert_nothing_changed(before);
    peer_pair_free(&p);
}

/* Work on the source's context ordered before the peer copy by an event of
 * that context waited on by the destination's stream; only s1 is synchronized. */
static void test_peer_copy_ordered_by_an_event_of_the_other_context(void **state)
{
    (void)state;
    peer_pair p = peer_pair_new();
    cus_event *e0 = new_event(p.c0, CU_EVENT_DISABLE_TIMING);
    unsigned char out[N];
    assert_ok(cus_buffer_fill_u8(p.b, 0, 0, N));
    assert_ok(cus_buffer_fill_u8_async(p.a, 0, 0xc3, N, p.s0));
    assert_ok(cus_event_record(e0, p.s0));
    assert_ok(cus_stream_wait_event(p.s1, e0));
    assert_ok(cus_copy_device_async(p.b, 0, p.a, 0, N, p.s1));
    assert_ok(cus_copy_to_host_async(out, p.b, 0, N, p.s1));
    assert_int_equal(cus_fake_stream_pending(cus_stream_handle(p.s0)), 2); /* fill, record */
    assert_ok(cus_stream_synchronize(p.s1));
    assert_int_equal(cus_fake_stream_pending(cus_stream_handle(p.s0)), 0); /* run for the wait */
    for (int i = 0; i < N; i++)
        assert_int_equal(out[i], 0xc3);
    bool done = false;
    assert_ok(cus_event_query(e0, &done));
    assert_true(done);
    e0 = cus_event_unref(e0);
    peer_pair_free(&p);
}

/* Two cus_context objects of one primary context are one context: a plain
 * device-to-device copy, not a peer copy. */
static void test_copy_between_two_references_of_one_primary_is_dtod(void **state)
{
    (void)state;
    cus_context *p = NULL, *q = NULL;
    assert_ok(cus_context_retain_primary(dev_at(0), &p));
    assert_ok(cus_context_retain_primary(dev_at(0), &q));
    assert_ptr_not_equal(p, q);
    cus_stream *s = new_stream(q, 0);
    cus_buffer *a = new_buf(p, N), *b = new_buf(q, N);
    unsigned char in[N], out[N];
    pattern(in, N, 8);
    assert_ok(cus_copy_to_device(a, 0, in, N));
    assert_ok(cus_copy_device(b, 0, a, 0, N));
    assert_int_equal(cus_fake_calls_of("cuMemcpyDtoD"), 1);
    assert_int_equal(cus_fake_calls_of("cuMemcpyPeer"), 0);
    memset(out, 0, N);
    assert_ok(cus_copy_to_host(out, b, 0, N));
    assert_memory_equal(out, in, N);
    /* and asynchronously, on a stream made through the other reference */
    assert_ok(cus_buffer_fill_u8(a, 0, 0, N));
    assert_ok(cus_copy_device_async(a, 0, b, 0, N, s));
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(cus_fake_calls_of("cuMemcpyDtoDAsync"), 1);
    assert_int_equal(cus_fake_calls_of("cuMemcpyPeerAsync"), 0);
    assert_ok(cus_copy_to_host(out, a, 0, N));
    assert_memory_equal(out, in, N);
    a = cus_buffer_unref(a);
    b = cus_buffer_unref(b);
    s = cus_stream_unref(s);
    p = cus_context_unref(p);
    q = cus_context_unref(q);
}

/* Two contexts of one device are still two contexts: a peer copy. */
static void test_copy_between_two_contexts_of_one_device_is_a_peer_copy(void **state)
{
    (void)state;
    cus_context *c = new_ctx(), *d = new_ctx();
    cus_buffer *a = new_buf(c, N), *b = new_buf(d, N);
    unsigned char in[N], out[N];
    pattern(in, N, 2);
    assert_ok(cus_copy_to_device(a, 0, in, N));
    /* With no context current: the driver needs one for cuMemcpyPeer (the
     * H200 answers CUDA_ERROR_INVALID_CONTEXT, test/rules/expected.txt), so
     * cuscope makes the destination's current for the call. */
    assert_null(cus_context_current());
    stack_snap before = snap();
    unsigned long calls = cus_fake_call_count();
    assert_ok(cus_copy_device(b, 0, a, 0, N));
    assert_calls_since(calls, "cuCtxPushCurrent", "cuMemcpyPeer", "cuCtxPopCurrent");
    assert_stack_unchanged(before);
    assert_int_equal(cus_fake_calls_of("cuMemcpyPeer"), 1);
    assert_int_equal(cus_fake_calls_of("cuMemcpyDtoD"), 0);
    PFN_cuMemcpyPeer_v4000 raw_peer;
    RAW(raw_peer, "cuMemcpyPeer", 4000);
    assert_cu(raw_peer(cus_buffer_ptr(b), cus_context_handle(d), cus_buffer_ptr(a),
                       cus_context_handle(c), N),
              CUDA_ERROR_INVALID_CONTEXT);
    memset(out, 0, N);
    assert_ok(cus_copy_to_host(out, b, 0, N));
    assert_memory_equal(out, in, N);
    a = cus_buffer_unref(a);
    b = cus_buffer_unref(b);
    c = cus_context_unref(c);
    d = cus_context_unref(d);
}

static void test_peer_copy_out_of_range_never_reaches_the_driver(void **state)
{
    (void)state;
    peer_pair p = peer_pair_new();
    leak_snap before = leak_snap_now();
    unsigned long calls = cus_fake_call_count();
    const cus_status R = CUS_ERROR_OUT_OF_RANGE;
    assert_status(cus_copy_device(p.b, N + 1, p.a, 0, 1), R);
    assert_status(cus_copy_device(p.b, 0, p.a, N + 1, 1), R);
    assert_status(cus_copy_device(p.b, 1, p.a, 0, N), R);
    assert_status(cus_copy_device(p.b, 0, p.a, 1, N), R);
    assert_status(cus_copy_device(p.b, 0, p.a, 0, N + 1), R);
    assert_status(cus_copy_device(p.b, 16, p.a, 0, SIZE_MAX), R);
    assert_status(cus_copy_device(p.b, SIZE_MAX, p.a, 0, 16), R);
    assert_status(cus_copy_device(p.b, 0, p.a, SIZE_MAX, 16), R);
    assert_status(cus_copy_device_async(p.b, N + 1, p.a, 0, 1, p.s1), R);
    assert_status(cus_copy_device_async(p.b, 0, p.a, N + 1, 1, p.s1), R);
    assert_status(cus_copy_device_async(p.b, 1, p.a, 0, N, p.s1), R);
    assert_status(cus_copy_device_async(p.b, 0, p.a, 1, N, p.s1), R);
    assert_status(cus_copy_device_async(p.b, 16, p.a, 0, SIZE_MAX, p.s1), R);
    assert_status(cus_copy_device_async(p.b, 0, p.a, SIZE_MAX, 16, p.s1), R);
    /* out of range and on the wrong stream: the range is checked first */
    assert_status(cus_copy_device_async(p.b, 0, p.a, 0, N + 1, p.s0), R);
    assert_int_equal(cus_fake_call_count(), calls);
    assert_int_equal(cus_fake_calls_of("cuMemcpyPeer"), 0);
    assert_int_equal(cus_fake_calls_of("cuMemcpyPeerAsync"), 0);
    assert_int_equal(cus_fake_stream_pending(cus_stream_handle(p.s1)), 0);
    /* zero bytes at the very end is in range, and a no-op */
    assert_ok(cus_copy_device(p.b, N, p.a, N, 0));
    assert_ok(cus_copy_device_async(p.b, N, p.a, 0, 0, p.s1));
    assert_int_equal(cus_fake_call_count(), calls);
    assert_nothing_changed(before);
    peer_pair_free(&p);
}

static void test_peer_copy_faults(void **state)
{
    (void)state;
    peer_pair p = peer_pair_new();
    unsigned char in[N], out[N];
    pattern(in, N, 17);
    assert_ok(cus_copy_to_device(p.a, 0, in, N));
    assert_ok(cus_buffer_fill_u8(p.b, 0, 0, N));
    assert_fault_surfaces("cuMemcpyPeer", cus_copy_device(p.b, 0, p.a, 0, N));
    assert_fault_surfaces("cuCtxPushCurrent", cus_copy_device(p.b, 0, p.a, 0, N));
    assert_fault_surfaces("cuMemcpyPeerAsync", cus_copy_device_async(p.b, 0, p.a, 0, N, p.s1));
    assert_fault_surfaces("cuCtxPushCurrent", cus_copy_device_async(p.b, 0, p.a, 0, N, p.s1));
    assert_int_equal(cus_fake_stream_pending(cus_stream_handle(p.s1)), 0);
    /* nothing was copied */
    assert_ok(cus_copy_to_host(out, p.b, 0, N));
    for (int i = 0; i < N; i++)
        assert_int_equal(out[i], 0);
    assert_int_equal(cus_context_poisoned(p.c0), CUS_SUCCESS);
    assert_int_equal(cus_context_poisoned(p.c1), CUS_SUCCESS);
    /* A sticky error on a peer copy poisons the destination's context (the
     * one made current), not the source's. */
    assert_ok(cus_fake_fail_entry("cuMemcpyPeer", 1, STICKY, false));
    assert_status(cus_copy_device(p.b, 0, p.a, 0, N), CU(STICKY));
    assert_int_equal(cus_context_poisoned(p.c1), STICKY);
    assert_int_equal(cus_context_poisoned(p.c0), CUS_SUCCESS);
    assert_ok(cus_copy_to_host(out, p.a, 0, N)); /* the source still works */
    assert_memory_equal(out, in, N);
    peer_pair_free(&p);
}

/* ============================================================================
 * a poisoned context
 * ========================================================================== */

/* Every memory call on a poisoned context fails with the original code and
 * makes no driver call; releasing its children makes none either, frees
 * their records, and the context's destruction takes their handles. */
static void test_poisoned_context_memory_calls_fail_fast(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_stream *s = new_stream(c, 0);
    cus_event *e = new_event(c, 0);
    cus_buffer *b = new_buf(c, N), *b2 = new_buf(c, N), *m = new_managed(c, N), *so = NULL;
    assert_ok(cus_buffer_alloc_async(s, N, &so));
    cus_host_buffer *hb = NULL, *hr = NULL;
    assert_ok(cus_host_buffer_alloc(c, N, 0, &hb));
    void *mem = malloc(4096);
    assert_non_null(mem);
    assert_ok(cus_host_buffer_register(c, mem, 4096, 0, &hr));
    assert_ok(cus_stream_synchronize(s));
    unsigned char *host = cus_host_buffer_data(hb);
    memset(host, 0, N);

    poison_by_copy(c, b);

    leak_snap before = leak_snap_now();
    unsigned long calls = cus_fake_call_count();
    const cus_status P = CU(STICKY);
    cus_buffer *nb = SENTINEL_PTR(nb);
    cus_host_buffer *nh = SENTINEL_PTR(nh);
    static char block[4096];
    assert_status(cus_buffer_alloc(c, 64, &nb), P);
    assert_status(cus_buffer_alloc_array(c, 8, 8, &nb), P);
    assert_status(cus_buffer_alloc_n(c, uint32_t, 16, &nb), P);
    assert_status(cus_buffer_alloc_async(s, 64, &nb), P);
    assert_status(cus_buffer_alloc_managed(c, 64, CU_MEM_ATTACH_HOST, &nb), P);
    assert_ptr_equal(nb, SENTINEL_PTR(nb));
    assert_status(cus_host_buffer_alloc(c, 64, 0, &nh), P);
    assert_status(cus_host_buffer_register(c, block, sizeof block, 0, &nh), P);
    assert_ptr_equal(nh, SENTINEL_PTR(nh));
    assert_status(cus_copy_to_device(b, 0, host, N), P);
    assert_status(cus_copy_to_host(host, b, 0, N), P);
    assert_status(cus_copy_device(b2, 0, b, 0, N), P);
    assert_status(cus_copy_to_device_async(b, 0, host, N, s), P);
    assert_status(cus_copy_to_host_async(host, b, 0, N, s), P);
    assert_status(cus_copy_device_async(b2, 0, b, 0, N, s), P);
    assert_status(cus_copy_to_device(so, 0, host, N), P);
    assert_status(cus_copy_to_host(host, m, 0, N), P);
    assert_status(cus_buffer_fill_u8(b, 0, 1, N), P);
    assert_status(cus_buffer_fill_u16(b, 0, 1, N / 2), P);
    assert_status(cus_buffer_fill_u32(b, 0, 1, N / 4), P);
    assert_status(cus_buffer_fill_u8_async(b, 0, 1, N, s), P);
    assert_status(cus_buffer_fill_u16_async(b, 0, 1, N / 2, s), P);
    assert_status(cus_buffer_fill_u32_async(b, 0, 1, N / 4, s), P);
    size_t fr = 7, to = 8;
    assert_status(cus_memory_info(c, &fr, &to), P);
    assert_int_equal(fr, 7);
    assert_int_equal(to, 8);
    assert_status(cus_buffer_prefetch(m, D0, s), P);
    assert_status(cus_buffer_advise(m, CU_MEM_ADVISE_SET_READ_MOSTLY, D0), P);
    assert_non_null(strstr(cus_last_error_message(), "no driver call"));
    assert_int_equal(cus_fake_call_count(), calls);
    assert_int_equal(cus_fake_stream_pending(cus_stream_handle(s)), 0);
    assert_nothing_changed(before);

    /* Releases: no driver call, nothing reported, the records freed. */
    size_t handles = cus_fake_live_handles(CUS_FAKE_HANDLE_ANY);
    b = cus_buffer_unref(b);
    b2 = cus_buffer_unref(b2);
    m = cus_buffer_unref(m);
    so = cus_buffer_unref(so);
    hb = cus_host_buffer_unref(hb);
    hr = cus_host_buffer_unref(hr);
    e = cus_event_unref(e);
    s = cus_stream_unref(s);
    assert_int_equal(cus_fake_call_count(), calls);
    assert_int_equal(env_destroyed.count, 0);
    assert_int_equal(cus_debug_live_objects(), 1); /* the context */
    /* The driver still holds them: the dead context owns them. */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), handles);
    assert_int_equal(cus_fake_calls_of("cuMemFree"), 0);
    assert_int_equal(cus_fake_calls_of("cuMemFreeAsync"), 0);
    assert_int_equal(cus_fake_calls_of("cuMemFreeHost"), 0);
    assert_int_equal(cus_fake_calls_of("cuMemHostUnregister"), 0);
    c = cus_context_unref(c);
    assert_int_equal(cus_fake_calls_of("cuCtxDestroy"), 1);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
    assert_int_equal(cus_fake_device_bytes_in_use(0), 0);
    free(mem);
}

/* The same with the primary context: its last release takes everything. */
static void test_poisoned_primary_releases_everything(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    cus_stream *s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_buffer *b = new_buf(c, N), *so = NULL;
    assert_ok(cus_buffer_alloc_async(s, N, &so));
    cus_host_buffer *hb = NULL;
    assert_ok(cus_host_buffer_alloc(c, N, 0, &hb));
    poison_by_copy(c, b);
    unsigned long calls = cus_fake_call_count();
    size_t fr = 1;
    assert_status(cus_memory_info(c, &fr, NULL), CU(STICKY));
    assert_int_equal(fr, 1);
    so = cus_buffer_unref(so);
    b = cus_buffer_unref(b);
    hb = cus_host_buffer_unref(hb);
    s = cus_stream_unref(s);
    assert_int_equal(cus_fake_call_count(), calls);
    assert_int_equal(cus_debug_live_objects(), 1);
    assert_int_equal(cus_fake_primary_retain_count(0), 1);
    c = cus_context_unref(c);
    assert_int_equal(cus_fake_primary_retain_count(0), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
    assert_int_equal(env_destroyed.count, 0);
}

/* A peer copy with either side poisoned fails with that side's code. */
static void test_peer_copy_with_a_poisoned_side(void **state)
{
    (void)state;
    peer_pair p = peer_pair_new();
    poison_by_copy(p.c0, p.a);
    unsigned long calls = cus_fake_call_count();
    assert_status(cus_copy_device(p.b, 0, p.a, 0, N), CU(STICKY));    /* source poisoned */
    assert_status(cus_copy_device(p.a, 0, p.b, 0, N), CU(STICKY));    /* destination */
    assert_status(cus_copy_device_async(p.b, 0, p.a, 0, N, p.s1), CU(STICKY));
    assert_status(cus_copy_device_async(p.a, 0, p.b, 0, N, p.s0), CU(STICKY));
    assert_int_equal(cus_fake_call_count(), calls);
    assert_int_equal(cus_context_poisoned(p.c1), CUS_SUCCESS);
    /* the healthy side still works */
    cus_buffer *b2 = new_buf(p.c1, N);
    assert_ok(cus_buffer_fill_u8(p.b, 0, 9, N));
    assert_ok(cus_copy_device(b2, 0, p.b, 0, N));
    unsigned char out[N];
    assert_ok(cus_copy_to_host(out, b2, 0, N));
    for (int i = 0; i < N; i++)
        assert_int_equal(out[i], 9);
    b2 = cus_buffer_unref(b2);
    peer_pair_free(&p);
}

/* ============================================================================
 * host registration
 * ========================================================================== */

static void test_register_and_alloc_zero_size_and_null(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    static char block[4096];
    leak_snap before = leak_snap_now();
    unsigned long calls = cus_fake_call_count();
    cus_host_buffer *h = SENTINEL_PTR(h);
    const cus_status I = CUS_ERROR_INVALID_ARGUMENT;
    assert_status(cus_host_buffer_register(c, block, 0, 0, &h), I);
    assert_status(cus_host_buffer_register(c, NULL, 0, 0, &h), I);
    assert_status(cus_host_buffer_register(c, NULL, sizeof block, 0, &h), I);
    assert_status(cus_host_buffer_register(NULL, block, sizeof block, 0, &h), I);
    assert_status(cus_host_buffer_alloc(c, 0, 0, &h), I);
    assert_ptr_equal(h, SENTINEL_PTR(h));
    assert_int_equal(cus_fake_call_count(), calls);
    assert_nothing_changed(before);
    c = cus_context_unref(c);
}

static void test_register_twice(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    char *mem = malloc(8192);
    assert_non_null(mem);
    cus_host_buffer *h = NULL;
    assert_ok(cus_host_buffer_register(c, mem, 8192, 0, &h));
    leak_snap before = leak_snap_now();
    cus_host_buffer *h2 = SENTINEL_PTR(h2);
    const cus_status A = CU(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    assert_status(cus_host_buffer_register(c, mem, 8192, 0, &h2), A);       /* the same range */
    assert_status(cus_host_buffer_register(c, mem + 4096, 4096, 0, &h2), A); /* inside it */
    assert_status(cus_host_buffer_register(c, mem + 100, 16, 0, &h2), A);
    assert_ptr_equal(h2, SENTINEL_PTR(h2));
    assert_int_equal(cus_fake_calls_of("cuMemHostRegister"), 4);
    assert_int_equal(cus_context_poisoned(c), CUS_SUCCESS);
    assert_nothing_changed(before);
    /* The first registration is intact. */
    assert_ptr_equal(cus_host_buffer_data(h), mem);
    assert_true(cus_host_buffer_is_registered(h));
    /* Once unregistered, the range can be registered again. */
    h = cus_host_buffer_unref(h);
    assert_int_equal(cus_fake_calls_of("cuMemHostUnregister"), 1);
    assert_ok(cus_host_buffer_register(c, mem, 8192, 0, &h2));
    assert_ptr_equal(cus_host_buffer_data(h2), mem);
    h2 = cus_host_buffer_unref(h2);
    assert_int_equal(cus_fake_calls_of("cuMemHostUnregister"), 2);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_HOST_REGISTRATION), 0);
    free(mem);
    c = cus_context_unref(c);
}

/* Page-locked memory from cus_host_buffer_alloc cannot be registered again. */
static void test_register_pinned_memory(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    cus_host_buffer *pinned = NULL;
    assert_ok(cus_host_buffer_alloc(c, 4096, 0, &pinned));
    leak_snap before = leak_snap_now();
    cus_host_buffer *h = SENTINEL_PTR(h);
    assert_status(cus_host_buffer_register(c, cus_host_buffer_data(pinned), 4096, 0, &h),
                  CU(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED));
    assert_ptr_equal(h, SENTINEL_PTR(h));
    assert_nothing_changed(before);
    pinned = cus_host_buffer_unref(pinned);
    c = cus_context_unref(c);
}

/* Unregistered at the last release, with its context made current, even
 * after the caller dropped its own context reference. */
static void test_register_unregisters_at_last_release(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    void *mem = malloc(4096);
    assert_non_null(mem);
    cus_host_buffer *h = NULL;
    assert_ok(cus_host_buffer_register(c, mem, 4096, CU_MEMHOSTREGISTER_PORTABLE, &h));
    c = cus_context_unref(c);
    assert_int_equal(cus_fake_calls_of("cuCtxDestroy"), 0);
    assert_ptr_equal(cus_host_buffer_ref(h), h);
    stack_snap before = snap();
    assert_null(cus_host_buffer_unref(h));
    assert_int_equal(cus_fake_calls_of("cuMemHostUnregister"), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_HOST_REGISTRATION), 1);
    h = cus_host_buffer_unref(h);
    assert_int_equal(cus_fake_calls_of("cuMemHostUnregister"), 1);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_HOST_REGISTRATION), 0);
    assert_int_equal(cus_fake_calls_of("cuCtxDestroy"), 1); /* then the context went */
    assert_stack_unchanged(before);
    assert_int_equal(env_destroyed.count, 0);
    free(mem);
}

static void test_register_flags(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    static char block[8192];
    cus_host_buffer *h = NULL;
    assert_ok(cus_host_buffer_register(c, block, 4096,
                                       CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP,
                                       &h));
    leak_snap before = leak_snap_now();
    cus_host_buffer *h2 = SENTINEL_PTR(h2);
    assert_status(cus_host_buffer_register(c, block + 4096, 4096, 0x80u, &h2),
                  CU(CUDA_ERROR_INVALID_VALUE)); /* an unknown flag: the driver's refusal */
    assert_ptr_equal(h2, SENTINEL_PTR(h2));
    assert_string_equal(cus_last_error()->driver_call, "cuMemHostRegister");
    assert_nothing_changed(before);
    h = cus_host_buffer_unref(h);
    c = cus_context_unref(c);
}

/* The host side of async copies, synchronized by the stream. */
static void test_registered_memory_in_async_copies(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_stream *s = new_stream(c, 0);
    cus_buffer *b = new_buf(c, N);
    unsigned char *in = malloc(N), *out = malloc(N);
    assert_non_null(in);
    assert_non_null(out);
    cus_host_buffer *hin = NULL, *hout = NULL;
    assert_ok(cus_host_buffer_register(c, in, N, 0, &hin));
    assert_ok(cus_host_buffer_register(c, out, N, 0, &hout));
    pattern(in, N, 66);
    memset(out, 0, N);
    assert_ok(cus_copy_to_device_async(b, 0, in, N, s));
    assert_ok(cus_copy_to_host_async(out, b, 0, N, s));
    assert_ok(cus_stream_synchronize(s));
    assert_memory_equal(out, in, N);
    /* Unregistering waits for queued copies that use the memory. */
    pattern(in, N, 67);
    memset(out, 0, N);
    assert_ok(cus_copy_to_device_async(b, 0, in, N, s));
    assert_ok(cus_copy_to_host_async(out, b, 0, N, s));
    hin = cus_host_buffer_unref(hin);
    hout = cus_host_buffer_unref(hout);
    assert_int_equal(cus_fake_stream_pending(cus_stream_handle(s)), 0);
    unsigned char want[N];
    pattern(want, N, 67);
    assert_memory_equal(out, want, N);
    free(in);
    free(out);
    b = cus_buffer_unref(b);
    s = cus_stream_unref(s);
    c = cus_context_unref(c);
}

static void test_unregister_failure_goes_to_the_handler(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    void *mem = malloc(4096);
    assert_non_null(mem);
    cus_host_buffer *h = NULL;
    assert_ok(cus_host_buffer_register(c, mem, 4096, 0, &h));
    assert_status(cus_buffer_alloc(NULL, 1, NULL), CUS_ERROR_INVALID_ARGUMENT);
    char msg[256];
    snprintf(msg, sizeof msg, "%s", cus_last_error_message());
    assert_ok(cus_fake_fail_entry("cuMemHostUnregister", 1, FAULT, false));
    stack_snap before = snap();
    h = cus_host_buffer_unref(h);
    assert_int_equal(cus_fake_faults_fired(), 1);
    assert_int_equal(env_destroyed.count, 1);
    assert_int_equal(env_destroyed.last_status, CU(FAULT));
    assert_non_null(strstr(env_destroyed.last_message, "cuMemHostUnregister"));
    assert_int_equal(cus_last_status(), CUS_ERROR_INVALID_ARGUMENT); /* not clobbered */
    assert_string_equal(cus_last_error_message(), msg);
    assert_stack_unchanged(before);
    assert_int_equal(cus_debug_live_objects(), 1); /* the context only */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_HOST_REGISTRATION), 1);
    c = cus_context_unref(c); /* cuCtxDestroy takes the registration */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
    free(mem);
}

/* ============================================================================
 * typed conveniences
 * ========================================================================== */

typedef struct big_elem {
    unsigned char bytes[4096];
} big_elem;

static void test_alloc_array_overflow_never_reaches_the_driver(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    leak_snap before = leak_snap_now();
    unsigned long calls = cus_fake_call_count();
    cus_buffer *b = SENTINEL_PTR(b);
    const cus_status R = CUS_ERROR_OUT_OF_RANGE;
    assert_status(cus_buffer_alloc_array(c, SIZE_MAX, 2, &b), R);
    assert_status(cus_buffer_alloc_array(c, 2, SIZE_MAX, &b), R);
    assert_status(cus_buffer_alloc_array(c, SIZE_MAX, SIZE_MAX, &b), R);
    assert_status(cus_buffer_alloc_array(c, ((size_t)1 << (sizeof(size_t) * 4)),
                                         ((size_t)1 << (sizeof(size_t) * 4)), &b),
                  R); /* exactly 2^bits */
    assert_status(cus_buffer_alloc_n(c, big_elem, SIZE_MAX / sizeof(big_elem) + 1, &b), R);
    assert_status(cus_buffer_alloc_n(c, uint64_t, SIZE_MAX / 8 + 1, &b), R);
    assert_non_null(strstr(cus_last_error_message(), "overflow"));
    /* a zero product is a zero size */
    assert_status(cus_buffer_alloc_array(c, 0, 8, &b), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_buffer_alloc_array(c, 8, 0, &b), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_buffer_alloc_n(c, big_elem, 0, &b), CUS_ERROR_INVALID_ARGUMENT);
    assert_ptr_equal(b, SENTINEL_PTR(b));
    assert_int_equal(cus_fake_call_count(), calls);
    assert_int_equal(cus_fake_calls_of("cuMemAlloc"), 0);
    assert_nothing_changed(before);
    /* The largest products that do not overflow reach the driver, which has
     * no such memory. */
    assert_status(cus_buffer_alloc_array(c, SIZE_MAX, 1, &b), CU(CUDA_ERROR_OUT_OF_MEMORY));
    assert_status(cus_buffer_alloc_n(c, big_elem, SIZE_MAX / sizeof(big_elem), &b),
                  CU(CUDA_ERROR_OUT_OF_MEMORY));
    assert_int_equal(cus_fake_calls_of("cuMemAlloc"), 2);
    assert_ptr_equal(b, SENTINEL_PTR(b));
    assert_int_equal(cus_context_poisoned(c), CUS_SUCCESS);
    assert_nothing_changed(before);
    /* and a fitting one works, sized count * elem_size */
    assert_ok(cus_buffer_alloc_n(c, big_elem, 3, &b));
    assert_int_equal(cus_buffer_size(b), 3 * sizeof(big_elem));
    assert_int_equal(cus_fake_device_bytes_in_use(0), 3 * sizeof(big_elem));
    b = cus_buffer_unref(b);
    c = cus_context_unref(c);
}

/* ============================================================================
 * Regressions: each of these failed against an earlier library.
 * ========================================================================== */

/* Regression (lib/memory.c, cus_buffer_prefetch): the stream's context was
 * never looked at, so prefetch pushed the buffer's context and handed the
 * driver a stream of another one, poisoned or not. Like every other
 * stream-taking memory call it refuses without a driver call, with
 * CUS_ERROR_CONTEXT_MISMATCH (or, for the poisoned one, its sticky code). */
static void test_prefetch_refuses_a_stream_of_another_context(void **state)
{
    (void)state;
    cus_context *c = new_ctx(), *d = new_ctx();
    cus_stream *sd = new_stream(d, 0);
    cus_buffer *m = new_managed(c, N);
    unsigned long calls = cus_fake_call_count();
    cus_status st = cus_buffer_prefetch(m, D0, sd);
    unsigned long made = cus_fake_call_count() - calls;
    assert_ok(cus_stream_synchronize(sd));
    /* The stream's context poisoned, the buffer's healthy. */
    cus_buffer *bd = new_buf(d, N);
    poison_by_copy(d, bd);
    calls = cus_fake_call_count();
    cus_status st2 = cus_buffer_prefetch(m, D0, sd);
    unsigned long made2 = cus_fake_call_count() - calls;
    /* Whatever got queued on the poisoned context's stream must run while the
     * buffer is alive: cuMemFree synchronizes only the buffer's own context,
     * and cuscope never synchronizes a poisoned one (a use after free in
     * cuCtxDestroy otherwise; part of the bug). */
    cus_fake_run_streams();
    bd = cus_buffer_unref(bd);
    m = cus_buffer_unref(m);
    sd = cus_stream_unref(sd);
    c = cus_context_unref(c);
    d = cus_context_unref(d);
    if (st != CUS_ERROR_CONTEXT_MISMATCH || made != 0)
        fail_msg("cus_buffer_prefetch on a stream of another context -> %s with %lu "
                 "driver call(s); expected CUS_ERROR_CONTEXT_MISMATCH and none",
                 cus_status_name(st), made);
    if ((st2 != CUS_ERROR_CONTEXT_MISMATCH && st2 != CU(STICKY)) || made2 != 0)
        fail_msg("cus_buffer_prefetch on a stream of a poisoned context -> %s with "
                 "%lu driver call(s); expected a refusal and none",
                 cus_status_name(st2), made2);
}

/* Regression (lib/memory.c, cus_context_enable_peer_access): only ctx's poison
 * was checked, and a poisoned peer still reached cuCtxEnablePeerAccess
 * (context.h: later calls on a poisoned context fail at once with its status;
 * cus_copy_device and cus_stream_wait_event check every context they are
 * given). */
static void test_enable_peer_access_refuses_a_poisoned_peer(void **state)
{
    (void)state;
    cus_context *c0 = ctx_on(0), *c1 = ctx_on(1);
    cus_buffer *b1 = new_buf(c1, N);
    poison_by_copy(c1, b1);
    unsigned long calls = cus_fake_call_count();
    cus_status st = cus_context_enable_peer_access(c0, c1);
    unsigned long made = cus_fake_call_count() - calls;
    b1 = cus_buffer_unref(b1);
    c0 = cus_context_unref(c0);
    c1 = cus_context_unref(c1);
    if (st != CU(STICKY) || made != 0)
        fail_msg("cus_context_enable_peer_access with a poisoned peer -> %s with %lu "
                 "driver call(s); expected %s and none",
                 cus_status_name(st), made, cus_status_name(CU(STICKY)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        /* managed memory */
        ENV_TEST(test_prefetch_to_device_and_to_cpu),
        ENV_TEST(test_prefetch_on_the_legacy_stream_while_current),
        ENV_TEST(test_advise_makes_the_buffers_context_current),
        TWO_DEV_TEST(test_prefetch_and_advise_to_another_device),
        ENV_TEST(test_prefetch_to_an_invalid_device),
        ENV_TEST(test_advise),
        ENV_TEST(test_prefetch_and_advise_on_non_managed_buffers),
        ENV_TEST(test_prefetch_and_advise_null_args),
        ENV_TEST(test_prefetch_and_advise_faults),
        ENV_TEST(test_prefetch_and_advise_pop_failure),
        ENV_TEST(test_sticky_prefetch_failure_poisons),
        ENV_TEST(test_prefetch_and_advise_not_supported),
        ENV_TEST(test_prefetch_refuses_a_stream_of_another_context),
        /* peer access */
        TWO_DEV_TEST(test_can_access_peer),
        TWO_DEV_TEST(test_can_access_peer_null_args_and_fault),
        TWO_DEV_TEST(test_enable_peer_access),
        TWO_DEV_TEST(test_enable_peer_access_while_current),
        TWO_DEV_TEST(test_enable_peer_access_errors),
        TWO_DEV_TEST(test_enable_peer_access_faults),
        TWO_DEV_TEST(test_enable_peer_access_refuses_a_poisoned_peer),
        /* peer copies */
        TWO_DEV_TEST(test_peer_copy_async),
        TWO_DEV_TEST(test_peer_copy_async_on_the_sources_stream_is_a_mismatch),
        TWO_DEV_TEST(test_peer_copy_ordered_by_an_event_of_the_other_context),
        ENV_TEST(test_copy_between_two_references_of_one_primary_is_dtod),
        ENV_TEST(test_copy_between_two_contexts_of_one_device_is_a_peer_copy),
        TWO_DEV_TEST(test_peer_copy_out_of_range_never_reaches_the_driver),
        TWO_DEV_TEST(test_peer_copy_faults),
        /* a poisoned context */
        ENV_TEST(test_poisoned_context_memory_calls_fail_fast),
        ENV_TEST(test_poisoned_primary_releases_everything),
        TWO_DEV_TEST(test_peer_copy_with_a_poisoned_side),
        /* host registration */
        ENV_TEST(test_register_and_alloc_zero_size_and_null),
        ENV_TEST(test_register_twice),
        ENV_TEST(test_register_pinned_memory),
        ENV_TEST(test_register_unregisters_at_last_release),
        ENV_TEST(test_register_flags),
        ENV_TEST(test_registered_memory_in_async_copies),
        ENV_TEST(test_unregister_failure_goes_to_the_handler),
        /* typed conveniences */
        ENV_TEST(test_alloc_array_overflow_never_reaches_the_driver),
    };
    return cmocka_run_group_tests_name("memory_extra", tests, NULL, NULL);
}
