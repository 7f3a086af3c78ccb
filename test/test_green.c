/* Green contexts (include/cuscope/green.h) on the fake: the SM resource of a
 * device, the split's arithmetic (rounding per architecture, the remaining
 * group, bad counts refused before the driver is asked, the driver's own
 * refusals explained), green contexts as cus_contexts (the stack, guards,
 * streams, events, buffers, modules and a launch that sees only the green
 * context's SMs), any release order, every driver call failed in turn, and
 * drivers without the 12.4 entry points; context-wide event records and
 * waits (what a record takes, a wait holding back streams made after it,
 * the primary-context rule, captures refused, faults, missing entries). */
#include <stdatomic.h>
#include <stdio.h>

#include <cuscope/cuscope.h>

#include "stream_common.h"

#ifdef CUS_TEST_HAVE_KERNELS
#include "cusk-images.h"
#endif

/* An H200's shape: 132 SMs, compute capability 9.0 (the fake's default). */
static const unsigned int H200_SMS = 132;

static CUdevResource device_sms(void)
{
    CUdevResource res;
    memset(&res, 0, sizeof res);
    assert_ok(cus_device_sm_resource(dev_at(0), &res));
    return res;
}

/* One group of `count` SMs and the remaining group. */
static void split_one(unsigned int count, CUdevResource *group, CUdevResource *rest)
{
    CUdevResource res = device_sms();
    unsigned int n = 1;
    assert_ok(cus_sm_resource_split(&res, count, 0, group, &n, rest));
    assert_int_equal(n, 1);
}

static cus_context *new_green(const CUdevResource *res)
{
    cus_context *g = NULL;
    assert_ok(cus_context_create_green(dev_at(0), res, 1, 0, &g));
    assert_non_null(g);
    return g;
}

static void test_device_sm_resource(void **state)
{
    (void)state;
    CUdevResource res = device_sms();
    assert_int_equal(res.type, CU_DEV_RESOURCE_TYPE_SM);
    assert_int_equal(cus_sm_resource_count(&res), H200_SMS);
    assert_int_equal(res.sm.minSmPartitionSize, 8);
    assert_int_equal(cus_sm_resource_count(NULL), 0);
    CUdevResource other = res;
    other.type = CU_DEV_RESOURCE_TYPE_INVALID;
    assert_int_equal(cus_sm_resource_count(&other), 0);
    assert_status(cus_device_sm_resource(dev_at(0), NULL), CUS_ERROR_INVALID_ARGUMENT);
    CUdevResource untouched = res;
    assert_status(cus_device_sm_resource((cus_device){7}, &untouched),
                  CU(CUDA_ERROR_INVALID_DEVICE));
    assert_int_equal(untouched.sm.smCount, H200_SMS);
}

/* Fills the stack below the caller's frame with 0xa5: what a callee then
 * reads without writing is not zero by luck. */
__attribute__((noinline)) static void scribble_stack(void)
{
    volatile unsigned char junk[16384];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = 0xa5;
}

/* Groups are min_count rounded up to 8 on 9.0; as many as fit and asked. */
static void test_split_arithmetic_on_9_0(void **state)
{
    (void)state;
    CUdevResource res = device_sms();
    unsigned int n = 0;
    assert_ok(cus_sm_resource_split(&res, 16, 0, NULL, &n, NULL));
    assert_int_equal(n, 8); /* 8 x 16 = 128 of 132 */
    assert_ok(cus_sm_resource_split(&res, 0, 0, NULL, &n, NULL));
    assert_int_equal(n, 16); /* the minimum, 8 */
    assert_ok(cus_sm_resource_split(&res, 12, 0, NULL, &n, NULL));
    assert_int_equal(n, 8); /* 12 rounds up to 16 */
    /* a query with remaining: the fake simulates no remaining group, which
     * reads as an invalid resource, not as what the stack held */
    CUdevResource queried;
    memset(&queried, 0xa5, sizeof queried);
    scribble_stack();
    assert_ok(cus_sm_resource_split(&res, 16, 0, NULL, &n, &queried));
    assert_int_equal(n, 8);
    assert_int_equal(queried.type, CU_DEV_RESOURCE_TYPE_INVALID);
    assert_int_equal(cus_sm_resource_count(&queried), 0);

    CUdevResource groups[10], rest;
    n = 10;
    assert_ok(cus_sm_resource_split(&res, 16, 0, groups, &n, &rest));
    assert_int_equal(n, 8);
    for (unsigned int i = 0; i < n; i++)
        assert_int_equal(cus_sm_resource_count(&groups[i]), 16);
    assert_int_equal(cus_sm_resource_count(&rest), 4);

    n = 1;
    assert_ok(cus_sm_resource_split(&res, 12, 0, groups, &n, &rest));
    assert_int_equal(n, 1);
    assert_int_equal(cus_sm_resource_count(&groups[0]), 16);
    assert_int_equal(cus_sm_resource_count(&rest), 116);
    n = 2;
    assert_ok(cus_sm_resource_split(&res, 66, 0, groups, &n, NULL));
    assert_int_equal(n, 1); /* 66 rounds to 72: one fits */
    assert_int_equal(cus_sm_resource_count(&groups[0]), 72);
}

static void test_split_arithmetic_on_8_0(void **state)
{
    (void)state;
    cus_fake_device_config dev = {.cc_major = 8, .multiprocessor_count = 108};
    cus_fake_config cfg = {.devices = &dev};
    assert_int_equal(env_setup_with(&cfg), 0);
    CUdevResource res = device_sms();
    assert_int_equal(res.sm.minSmPartitionSize, 4);
    CUdevResource groups[2], rest;
    unsigned int n = 2;
    assert_ok(cus_sm_resource_split(&res, 5, 0, groups, &n, &rest));
    assert_int_equal(n, 2);
    assert_int_equal(cus_sm_resource_count(&groups[0]), 6); /* a multiple of 2 */
    assert_int_equal(cus_sm_resource_count(&rest), 96);
    assert_ok(cus_sm_resource_split(&res, 0, 0, NULL, &n, NULL));
    assert_int_equal(n, 27); /* groups of 4 */
}

/* Bad counts: refused before the driver is asked when cuscope can tell, the
 * driver's refusal explained otherwise; nothing written either way. */
static void test_split_bad_counts(void **state)
{
    (void)state;
    CUdevResource res = device_sms();
    CUdevResource groups[2], rest;
    memset(&rest, 0xab, sizeof rest);
    CUdevResource rest0 = rest;
    unsigned int n = 2;
    unsigned long calls = cus_fake_call_count();
    assert_status(cus_sm_resource_split(&res, H200_SMS + 1, 0, groups, &n, &rest),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_contains(cus_last_error_message(), "133 is above the resource's 132 SMs");
    n = 0;
    assert_status(cus_sm_resource_split(&res, 16, 0, groups, &n, &rest),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_sm_resource_split(NULL, 16, 0, groups, &n, &rest),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_sm_resource_split(&res, 16, 0, groups, NULL, &rest),
                  CUS_ERROR_INVALID_ARGUMENT);
    CUdevResource bad = res;
    bad.type = CU_DEV_RESOURCE_TYPE_INVALID;
    n = 2;
    assert_status(cus_sm_resource_split(&bad, 16, 0, groups, &n, &rest),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_no_calls_since(calls);

    /* 132 fits the count but rounds to 136: the driver refuses. */
    assert_status(cus_sm_resource_split(&res, H200_SMS, 0, groups, &n, &rest),
                  CU(CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION));
    assert_string_equal(cus_last_error()->driver_call, "cuDevSmResourceSplitByCount");
    assert_contains(cus_last_error_message(), "multiple of 8 SMs");
    assert_int_equal(n, 2);
    assert_memory_equal(&rest, &rest0, sizeof rest);
    /* Unknown flags. */
    assert_status(cus_sm_resource_split(&res, 16, 0x80, groups, &n, &rest),
                  CU(CUDA_ERROR_INVALID_VALUE));
    /* A split's output cannot be split again. */
    n = 1;
    assert_ok(cus_sm_resource_split(&res, 16, 0, groups, &n, &rest));
    n = 1;
    assert_status(cus_sm_resource_split(&groups[0], 8, 0, &groups[1], &n, NULL),
                  CU(CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION));
}

static void test_descriptors(void **state)
{
    (void)state;
    CUdevResource res = device_sms(), groups[3], rest;
    unsigned int n = 3;
    assert_ok(cus_sm_resource_split(&res, 16, 0, groups, &n, &rest));
    CUdevResourceDesc d = NULL;
    assert_ok(cus_sm_resource_desc(groups, 3, &d));
    assert_non_null(d);
    assert_ok(cus_sm_resource_desc(&res, 1, &d));
    /* Outputs of two splits. */
    CUdevResource other[2];
    n = 1;
    assert_ok(cus_sm_resource_split(&res, 16, 0, &other[0], &n, NULL));
    other[1] = groups[0];
    CUdevResourceDesc untouched = NULL;
    assert_status(cus_sm_resource_desc(other, 2, &untouched),
                  CU(CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION));
    assert_null(untouched);
    assert_status(cus_sm_resource_desc(groups, 0, &d), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_sm_resource_desc(NULL, 1, &d), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_sm_resource_desc(groups, 1, NULL), CUS_ERROR_INVALID_ARGUMENT);
}

static void test_green_context_is_a_context(void **state)
{
    (void)state;
    CUdevResource group, rest;
    split_one(16, &group, &rest);
    cus_device dev = dev_at(0);
    unsigned long calls = cus_fake_call_count();
    cus_context *a = NULL;
    assert_ok(cus_context_create_green(dev, &group, 1, 0, &a));
    assert_calls_since(calls, "cuDevResourceGenerateDesc", "cuGreenCtxCreate",
                       "cuCtxFromGreenCtx");
    cus_context *b = new_green(&rest);
    assert_int_equal(cus_context_get_kind(a), CUS_CONTEXT_GREEN);
    assert_non_null(cus_context_green_handle(a));
    assert_null(cus_context_green_handle(NULL));
    assert_non_null(cus_context_handle(a));
    assert_int_equal(cus_context_device(a).handle, 0);
    assert_int_equal(cus_context_stack_depth(), 0); /* not pushed */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_GREEN_CONTEXT), 2);
    assert_int_equal(cus_fake_primary_retain_count(0), 2); /* the driver retains it */
    unsigned int sms = 0;
    assert_ok(cus_context_sm_count(a, &sms));
    assert_int_equal(sms, 16);
    assert_ok(cus_context_sm_count(b, &sms));
    assert_int_equal(sms, 116);
    /* A green context's resource splits again. */
    CUdevResource own, halves[2];
    assert_ok(cus_context_sm_resource(a, &own));
    unsigned int n = 2;
    assert_ok(cus_sm_resource_split(&own, 8, 0, halves, &n, NULL));
    assert_int_equal(n, 2);
    cus_context *p = new_primary();
    assert_ok(cus_context_sm_count(p, &sms));
    assert_int_equal(sms, H200_SMS);
    assert_null(cus_context_green_handle(p));
    p = cus_context_unref(p);
    a = cus_context_unref(a);
    b = cus_context_unref(b);
    assert_int_equal(cus_fake_calls_of("cuGreenCtxDestroy"), 2);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_GREEN_CONTEXT), 0);
    assert_int_equal(cus_fake_primary_retain_count(0), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
}

static void test_green_on_the_stack_and_in_guards(void **state)
{
    (void)state;
    CUdevResource group, rest;
    split_one(16, &group, &rest);
    cus_context *g = new_green(&group);
    assert_ok(cus_context_push(g));
    assert_ptr_equal(cus_context_current(), g);
    assert_ptr_equal(cus_fake_thread_stack_at(0), cus_context_handle(g));
    unsigned int flags = 0;
    assert_ok(cus_context_flags(g, &flags));
    cus_context *popped = NULL;
    assert_ok(cus_context_pop(&popped));
    assert_ptr_equal(popped, g);
    popped = cus_context_unref(popped);
    {
        cus_context_scope(guard, g);
        assert_ok(guard.status);
        assert_ptr_equal(cus_context_current(), g);
        assert_int_equal(cus_fake_thread_stack_depth(), 1);
    }
    assert_int_equal(cus_context_stack_depth(), 0);
    assert_int_equal(cus_fake_thread_stack_depth(), 0);
    /* The stack's reference keeps it: unref while pushed, then pop. */
    assert_ok(cus_context_push(g));
    g = cus_context_unref(g);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_GREEN_CONTEXT), 1);
    assert_ok(cus_context_pop(NULL));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_GREEN_CONTEXT), 0);
}

static void test_streams_events_buffers_on_green(void **state)
{
    (void)state;
    CUdevResource group, rest;
    split_one(16, &group, &rest);
    cus_context *g = new_green(&group);
    unsigned long calls = cus_fake_call_count();
    cus_stream *s = new_stream(g, 0);
    /* The green context's own stream: no switch, non-blocking. */
    assert_calls_since(calls, "cuCtxPushCurrent", "cuCtxGetStreamPriorityRange",
                       "cuCtxPopCurrent", "cuGreenCtxStreamCreate");
    unsigned int flags = 0;
    assert_ok(cus_stream_flags(s, &flags));
    assert_int_equal(flags, CU_STREAM_NON_BLOCKING);
    cus_event *e = new_event(g, 0);
    cus_buffer *buf = NULL;
    assert_ok(cus_buffer_alloc(g, 64, &buf));
    int in[16], out[16];
    for (int i = 0; i < 16; i++)
        in[i] = i * 3;
    assert_ok(cus_copy_to_device_async(buf, 0, in, sizeof in, s));
    assert_ok(cus_event_record(e, s));
    assert_ok(cus_event_synchronize(e));
    assert_ok(cus_copy_to_host(out, buf, 0, sizeof out));
    assert_memory_equal(in, out, sizeof in);
    assert_ok(cus_context_synchronize(g));
    /* Any release order: the context first, its children keep it. */
    g = cus_context_unref(g);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_GREEN_CONTEXT), 1);
    buf = cus_buffer_unref(buf);
    e = cus_event_unref(e);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_GREEN_CONTEXT), 1);
    s = cus_stream_unref(s);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
}

/* A 12.4 driver has no cuGreenCtxStreamCreate: the stream is made with the
 * green context current, which ties it to the green context too. */
static void test_stream_on_a_12_4_driver(void **state)
{
    (void)state;
    assert_ok(cus_fake_hide_entry("cuGreenCtxStreamCreate"));
    CUdevResource group, rest;
    split_one(16, &group, &rest);
    cus_context *g = new_green(&group);
    int least = 0, greatest = 0;
    assert_ok(cus_context_stream_priority_range(g, &least, &greatest));
    unsigned long calls = cus_fake_call_count();
    cus_stream *s = new_stream(g, 0);
    assert_calls_since(calls, "cuCtxPushCurrent", "cuStreamCreateWithPriority",
                       "cuCtxPopCurrent");
    unsigned int flags = 0;
    assert_ok(cus_stream_flags(s, &flags));
    assert_int_equal(flags, CU_STREAM_NON_BLOCKING);
    s = cus_stream_unref(s);
    g = cus_context_unref(g);
}

#ifdef CUS_TEST_HAVE_KERNELS
/* The SMs sm_ids saw on ctx with `blocks` blocks (the fake's twin: the
 * context's SM count, at most one per block). */
static unsigned int sms_seen(cus_context *ctx, unsigned int blocks)
{
    cus_module *m = NULL;
    assert_ok(cus_module_load_data(ctx, cusk_smid.fatbin, cusk_smid.fatbin_size, NULL, &m));
    cus_function *f = NULL;
    assert_ok(cus_module_get_function(m, "sm_ids", &f));
    cus_stream *s = new_stream(ctx, 0);
    enum { NSEEN = 1024 };
    cus_buffer *seen = NULL, *count = NULL;
    assert_ok(cus_buffer_alloc(ctx, NSEEN * sizeof(unsigned int), &seen));
    assert_ok(cus_buffer_alloc(ctx, sizeof(unsigned int), &count));
    /* On s: a green context's streams are non-blocking, and a legacy-stream
     * fill may land after the kernel (it did on an H200; the fake's
     * deferred mode, on in the test below, does the same: with the fills of
     * cus_buffer_fill_u8 it counts 0 SMs, as the H200 did). */
    assert_ok(cus_buffer_fill_u8_async(seen, 0, 0, NSEEN * sizeof(unsigned int), s));
    assert_ok(cus_buffer_fill_u8_async(count, 0, 0, sizeof(unsigned int), s));
    assert_ok(cus_launch(f, blocks, 32, 0, s, seen, (unsigned int)NSEEN, count, 1000ll));
    assert_ok(cus_stream_synchronize(s));
    unsigned int n = 0;
    assert_ok(cus_copy_to_host(&n, count, 0, sizeof n));
    seen = cus_buffer_unref(seen);
    count = cus_buffer_unref(count);
    s = cus_stream_unref(s);
    f = cus_function_unref(f);
    m = cus_module_unref(m);
    return n;
}

static void test_kernel_sees_the_green_sms(void **state)
{
    (void)state;
    cus_fake_set_sync_memsets_deferred(true); /* as a GPU: see sms_seen */
    CUdevResource group, rest;
    split_one(16, &group, &rest);
    cus_context *a = new_green(&group);
    cus_context *b = new_green(&rest);
    cus_context *p = new_primary();
    assert_int_equal(sms_seen(a, 4096), 16);
    assert_int_equal(sms_seen(b, 4096), 116);
    assert_int_equal(sms_seen(p, 4096), H200_SMS);
    assert_int_equal(sms_seen(a, 4), 4);
    a = cus_context_unref(a);
    b = cus_context_unref(b);
    p = cus_context_unref(p);
}
#endif

/* --- context-wide events (cus_context_record_event, cus_context_wait_event) ---------------- */

static uint32_t read_u32(cus_buffer *b)
{
    uint32_t v = 0;
    assert_ok(cus_copy_to_host(&v, b, 0, sizeof v));
    return v;
}

/* A record takes the work every stream of the green context queued before
 * it, none queued after; the event completes once all of it ran. */
static void test_context_record_event(void **state)
{
    (void)state;
    CUdevResource groups[2], rest;
    CUdevResource res = device_sms();
    unsigned int n = 2;
    assert_ok(cus_sm_resource_split(&res, 16, 0, groups, &n, &rest));
    cus_autoptr(cus_context) g = new_green(&groups[0]);
    cus_autoptr(cus_stream) s1 = new_stream(g, 0);
    cus_autoptr(cus_stream) s2 = new_stream(g, 0);
    cus_autoptr(cus_buffer) a = NULL;
    cus_autoptr(cus_buffer) b = NULL;
    assert_ok(cus_buffer_alloc(g, 4, &a));
    assert_ok(cus_buffer_alloc(g, 4, &b));
    assert_ok(cus_buffer_fill_u32_async(a, 0, 11, 1, s1));
    assert_ok(cus_buffer_fill_u32_async(b, 0, 22, 1, s2));
    cus_autoptr(cus_event) e = new_event(g, CU_EVENT_DISABLE_TIMING);
    unsigned long calls = cus_fake_call_count();
    stack_snap before = snap();
    assert_ok(cus_context_record_event(g, e));
    /* One call, no switch. */
    assert_calls_since(calls, "cuGreenCtxRecordEvent");
    assert_stack_unchanged(before);
    /* Work after the record is not part of it. */
    assert_ok(cus_buffer_fill_u32_async(a, 0, 33, 1, s1));
    bool done = true;
    cus_fake_set_query_mode(CUS_FAKE_QUERY_NONE);
    assert_ok(cus_event_query(e, &done));
    assert_false(done);
    cus_fake_set_query_mode(CUS_FAKE_QUERY_STEP);
    assert_ok(cus_event_synchronize(e));
    assert_int_equal(cus_fake_stream_pending(cus_stream_handle(s1)), 1);
    assert_int_equal(cus_fake_stream_pending(cus_stream_handle(s2)), 0);
    assert_ok(cus_event_query(e, &done));
    assert_true(done);
    assert_int_equal(read_u32(b), 22);
    assert_ok(cus_stream_synchronize(s1));
    assert_int_equal(read_u32(a), 33);

    /* An event of the device's primary context, or of another green context
     * of the device, will do: "the same primary context". */
    cus_autoptr(cus_context) p = new_primary();
    cus_autoptr(cus_event) pe = new_event(p, 0);
    assert_ok(cus_context_record_event(g, pe));
    assert_ok(cus_event_synchronize(pe));
    cus_autoptr(cus_context) g2 = new_green(&groups[1]);
    cus_autoptr(cus_event) e2 = new_event(g2, 0);
    assert_ok(cus_context_record_event(g, e2));
    /* A green context with no stream: the record waits for nothing. */
    assert_ok(cus_context_record_event(g2, e2));
    assert_ok(cus_event_synchronize(e2));
    assert_int_equal(cus_fake_stream_pending(cus_stream_handle(s1)), 0);
}

/* Host functions that leave a trace: the producer's sets the flag, each
 * consumer's copies what it sees. */
static atomic_int produced;
static void produce(void *arg)
{
    (void)arg;
    atomic_store(&produced, 1);
}
static void consume(void *arg)
{
    *(int *)arg = atomic_load(&produced);
}

/* A wait holds back every stream of the green context, those made after it
 * included, until the event's work ran; the event may be of any context. */
static void test_context_wait_event(void **state)
{
    (void)state;
    CUdevResource groups[2], rest;
    CUdevResource res = device_sms();
    unsigned int n = 2;
    assert_ok(cus_sm_resource_split(&res, 16, 0, groups, &n, &rest));
    cus_autoptr(cus_context) producer = new_green(&groups[0]);
    cus_autoptr(cus_context) consumer = new_green(&groups[1]);
    cus_autoptr(cus_stream) ps = new_stream(producer, 0);
    cus_autoptr(cus_stream) early = new_stream(consumer, 0);
    atomic_store(&produced, 0);
    assert_ok(cus_stream_launch_host_fn(ps, produce, NULL));
    cus_autoptr(cus_event) e = new_event(producer, CU_EVENT_DISABLE_TIMING);
    assert_ok(cus_context_record_event(producer, e));
    unsigned long calls = cus_fake_call_count();
    stack_snap before = snap();
    assert_ok(cus_context_wait_event(consumer, e));
    assert_calls_since(calls, "cuGreenCtxWaitEvent");
    assert_stack_unchanged(before);
    /* A stream made after the wait waits too. */
    cus_autoptr(cus_stream) late = new_stream(consumer, 0);
    int seen[2] = {-1, -1};
    assert_ok(cus_stream_launch_host_fn(late, consume, &seen[1]));
    assert_ok(cus_stream_launch_host_fn(early, consume, &seen[0]));
    assert_ok(cus_stream_synchronize(late));
    assert_int_equal(seen[1], 1);
    assert_ok(cus_stream_synchronize(early));
    assert_int_equal(seen[0], 1);
    /* Without the wait, nothing holds a consumer back. */
    atomic_store(&produced, 0);
    assert_ok(cus_stream_launch_host_fn(ps, produce, NULL));
    assert_ok(cus_stream_launch_host_fn(early, consume, &seen[0]));
    assert_ok(cus_stream_synchronize(early));
    assert_int_equal(seen[0], 0);
    assert_ok(cus_stream_synchronize(ps));
    /* An event of another context (a created one) may be waited for; one
     * never recorded, or complete, gives nothing to wait for. */
    cus_autoptr(cus_context) other = new_ctx();
    cus_autoptr(cus_event) idle = new_event(other, 0);
    assert_ok(cus_context_wait_event(consumer, idle));
    assert_ok(cus_context_wait_event(consumer, e));
    assert_int_equal(cus_fake_stream_pending(cus_stream_handle(early)), 0);
    assert_int_equal(cus_fake_stream_pending(cus_stream_handle(late)), 0);
}

static void test_context_events_bad_input(void **state)
{
    (void)state;
    CUdevResource group, rest;
    split_one(16, &group, &rest);
    cus_autoptr(cus_context) g = new_green(&group);
    cus_autoptr(cus_context) p = new_primary();
    cus_autoptr(cus_context) owned = new_ctx();
    cus_autoptr(cus_event) pe = new_event(p, 0);
    cus_autoptr(cus_event) oe = new_event(owned, 0);
    unsigned long calls = cus_fake_call_count();
    assert_status(cus_context_record_event(NULL, pe), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_context_record_event(g, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_context_wait_event(NULL, pe), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_context_wait_event(g, NULL), CUS_ERROR_INVALID_ARGUMENT);
    /* Not a green context: primary, created. */
    assert_status(cus_context_record_event(p, pe), CUS_ERROR_INVALID_ARGUMENT);
    assert_contains(cus_last_error_message(), "not a green context");
    assert_status(cus_context_wait_event(owned, pe), CUS_ERROR_INVALID_ARGUMENT);
    assert_contains(cus_last_error_message(), "cus_stream_wait_event");
    /* An event of another primary context. */
    assert_status(cus_context_record_event(g, oe), CUS_ERROR_CONTEXT_MISMATCH);
    assert_contains(cus_last_error_message(), "primary context");
    assert_no_calls_since(calls);
    /* What cuscope lets through, the fake refuses as the driver does. */
    PFN_cuGreenCtxRecordEvent_v12040 record =
        RAW_FN(PFN_cuGreenCtxRecordEvent_v12040, "cuGreenCtxRecordEvent", 12040);
    assert_int_equal(record(cus_context_green_handle(g), cus_event_handle(oe)),
                     CUDA_ERROR_INVALID_HANDLE);
}

/* cuda.h: a green context with a capturing stream refuses both calls and the
 * capture is invalidated; so does a wait for an event of an open capture. */
static void test_context_events_and_captures(void **state)
{
    (void)state;
    CUdevResource group, rest;
    split_one(16, &group, &rest);
    cus_autoptr(cus_context) g = new_green(&group);
    cus_autoptr(cus_stream) s = new_stream(g, 0);
    cus_autoptr(cus_event) e = new_event(g, 0);
    for (int wait = 0; wait < 2; wait++) {
        cus_capture_guard cap = cus_capture_begin(s, CU_STREAM_CAPTURE_MODE_RELAXED);
        assert_ok(cap.status);
        assert_status(wait ? cus_context_wait_event(g, e) : cus_context_record_event(g, e),
                      CU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED));
        cus_graph *graph = NULL;
        assert_status(cus_capture_end(&cap, &graph), CU(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED));
        assert_null(graph);
    }
    /* An event recorded in an open capture of another context. */
    cus_autoptr(cus_context) p = new_primary();
    cus_autoptr(cus_stream) ps = new_stream(p, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_event) ce = new_event(p, 0);
    cus_capture_guard cap = cus_capture_begin(ps, CU_STREAM_CAPTURE_MODE_RELAXED);
    assert_ok(cap.status);
    assert_ok(cus_event_record(ce, ps));
    assert_status(cus_context_wait_event(g, ce), CU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED));
    cus_graph *graph = NULL;
    assert_status(cus_capture_end(&cap, &graph), CU(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED));
    assert_null(graph);
    assert_int_equal(cus_fake_stream_pending(cus_stream_handle(s)), 0);
}

/* Each driver call failed: the injected status, recorded, nothing queued. */
static void test_context_events_failures(void **state)
{
    (void)state;
    CUdevResource group, rest;
    split_one(16, &group, &rest);
    cus_autoptr(cus_context) g = new_green(&group);
    cus_autoptr(cus_stream) s = new_stream(g, 0);
    cus_autoptr(cus_event) e = new_event(g, 0);
    atomic_store(&produced, 0);
    assert_ok(cus_stream_launch_host_fn(s, produce, NULL));
    assert_fault_surfaces("cuGreenCtxRecordEvent", cus_context_record_event(g, e));
    assert_string_equal(cus_last_error()->driver_call, "cuGreenCtxRecordEvent");
    assert_string_equal(cus_last_error()->function, "cus_context_record_event");
    assert_ok(cus_event_synchronize(e)); /* never recorded: nothing to wait for */
    assert_int_equal(cus_fake_stream_pending(cus_stream_handle(s)), 1);
    assert_ok(cus_context_record_event(g, e));
    assert_ok(cus_event_synchronize(e));
    assert_int_equal(atomic_load(&produced), 1);
    assert_fault_surfaces("cuGreenCtxWaitEvent", cus_context_wait_event(g, e));
    assert_string_equal(cus_last_error()->driver_call, "cuGreenCtxWaitEvent");
    /* A failure is not sticky: the context stays usable. */
    assert_ok(cus_context_wait_event(g, e));
}

/* A driver without the two entry points (12.4 has them; a driver that
 * resolves green contexts without them is hypothetical, but the calls are
 * optional each): CUS_ERROR_NOT_SUPPORTED naming the call and 12.4. */
static void test_context_events_without_entries(void **state)
{
    (void)state;
    assert_ok(cus_fake_hide_entry("cuGreenCtxRecordEvent"));
    assert_ok(cus_fake_hide_entry("cuGreenCtxWaitEvent"));
    CUdevResource group, rest;
    split_one(16, &group, &rest);
    cus_autoptr(cus_context) g = new_green(&group);
    cus_autoptr(cus_event) e = new_event(g, 0);
    unsigned long calls = cus_fake_call_count();
    assert_status(cus_context_record_event(g, e), CUS_ERROR_NOT_SUPPORTED);
    assert_contains(cus_last_error_message(), "cuGreenCtxRecordEvent");
    assert_contains(cus_last_error_message(), "12.4");
    assert_status(cus_context_wait_event(g, e), CUS_ERROR_NOT_SUPPORTED);
    assert_contains(cus_last_error_message(), "cuGreenCtxWaitEvent");
    assert_no_calls_since(calls);
}

static void test_every_driver_call_failed_in_turn(void **state)
{
    (void)state;
    CUdevResource res = device_sms(), group, rest;
    CUdevResource untouched = res;
    assert_fault_surfaces("cuDeviceGetDevResource", cus_device_sm_resource(dev_at(0), &untouched));
    assert_memory_equal(&untouched, &res, sizeof res);
    unsigned int n = 1;
    assert_fault_surfaces("cuDevSmResourceSplitByCount",
                          cus_sm_resource_split(&res, 16, 0, &group, &n, &rest));
    assert_int_equal(n, 1);
    split_one(16, &group, &rest);
    CUdevResourceDesc d = NULL;
    assert_fault_surfaces("cuDevResourceGenerateDesc", cus_sm_resource_desc(&group, 1, &d));
    assert_null(d);
    static const char *const create_calls[] = {"cuDevResourceGenerateDesc", "cuGreenCtxCreate",
                                               "cuCtxFromGreenCtx"};
    for (size_t i = 0; i < sizeof create_calls / sizeof create_calls[0]; i++) {
        cus_context *g = SENTINEL_PTR(g);
        assert_fault_surfaces(create_calls[i],
                              cus_context_create_green(dev_at(0), &group, 1, 0, &g));
        assert_ptr_equal(g, SENTINEL_PTR(g));
        assert_string_equal(cus_last_error()->driver_call, create_calls[i]);
    }
    assert_int_equal(cus_fake_primary_retain_count(0), 0);
    cus_context *g = new_green(&group);
    unsigned int sms = 7;
    assert_fault_surfaces("cuCtxGetDevResource", cus_context_sm_count(g, &sms));
    assert_int_equal(sms, 7);
    cus_stream *s = SENTINEL_PTR(s);
    assert_ok(cus_context_stream_priority_range(g, NULL, &(int){0}));
    assert_fault_surfaces("cuGreenCtxStreamCreate", cus_stream_create(g, 0, 0, &s));
    assert_ptr_equal(s, SENTINEL_PTR(s));
    /* A failed destroy goes to the handler; the fake's green context stays. */
    unsigned int reports = env_destroyed.count;
    CUgreenCtx raw = cus_context_green_handle(g);
    assert_ok(cus_fake_fail_entry("cuGreenCtxDestroy", 1, FAULT, false));
    g = cus_context_unref(g);
    assert_int_equal(env_destroyed.count, reports + 1);
    assert_int_equal(env_destroyed.last_status, CU(FAULT));
    assert_string_equal(env_destroyed.last_driver_call, "cuGreenCtxDestroy");
    assert_int_equal(cus_debug_live_objects(), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_GREEN_CONTEXT), 1);
    /* The teardown's leak check would find it: destroyed raw. */
    PFN_cuGreenCtxDestroy_v12040 destroy =
        RAW_FN(PFN_cuGreenCtxDestroy_v12040, "cuGreenCtxDestroy", 12040);
    assert_cu_ok(destroy(raw));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
}

static void test_null_arguments(void **state)
{
    (void)state;
    CUdevResource group, rest;
    split_one(16, &group, &rest);
    cus_device dev = dev_at(0);
    unsigned long calls = cus_fake_call_count();
    cus_context *g = SENTINEL_PTR(g);
    assert_status(cus_context_create_green(dev, NULL, 1, 0, &g), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_context_create_green(dev, &group, 0, 0, &g), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_context_create_green(dev, &group, 1, 0, NULL),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_ptr_equal(g, SENTINEL_PTR(g));
    CUdevResource res;
    unsigned int sms = 0;
    assert_status(cus_context_sm_resource(NULL, &res), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_context_sm_count(NULL, &sms), CUS_ERROR_INVALID_ARGUMENT);
    assert_no_calls_since(calls);
}

/* Drivers before 12.4: each call says which version it needs. */
static void test_driver_without_green_entries(void **state)
{
    (void)state;
    cus_fake_config cfg = {.driver_version = 12030};
    assert_int_equal(env_setup_with(&cfg), 0);
    CUdevResource res;
    memset(&res, 0, sizeof res);
    res.type = CU_DEV_RESOURCE_TYPE_SM;
    res.sm.smCount = 132;
    assert_status(cus_device_sm_resource(dev_at(0), &res), CUS_ERROR_NOT_SUPPORTED);
    assert_contains(cus_last_error_message(), "driver API 12.3 does not provide");
    assert_contains(cus_last_error_message(), "12.4");
    unsigned int n = 1;
    assert_status(cus_sm_resource_split(&res, 16, 0, NULL, &n, NULL), CUS_ERROR_NOT_SUPPORTED);
    CUdevResourceDesc d = NULL;
    assert_status(cus_sm_resource_desc(&res, 1, &d), CUS_ERROR_NOT_SUPPORTED);
    cus_context *g = NULL;
    assert_status(cus_context_create_green(dev_at(0), &res, 1, 0, &g), CUS_ERROR_NOT_SUPPORTED);
    assert_contains(cus_last_error_message(), "cuDevResourceGenerateDesc");
    cus_context *c = new_ctx();
    unsigned int sms = 0;
    assert_status(cus_context_sm_count(c, &sms), CUS_ERROR_NOT_SUPPORTED);
    c = cus_context_unref(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_device_sm_resource),
        ENV_TEST(test_split_arithmetic_on_9_0),
        ENV_TEST(test_split_arithmetic_on_8_0),
        ENV_TEST(test_split_bad_counts),
        ENV_TEST(test_descriptors),
        ENV_TEST(test_green_context_is_a_context),
        ENV_TEST(test_green_on_the_stack_and_in_guards),
        ENV_TEST(test_streams_events_buffers_on_green),
        ENV_TEST(test_stream_on_a_12_4_driver),
#ifdef CUS_TEST_HAVE_KERNELS
        ENV_TEST(test_kernel_sees_the_green_sms),
#endif
        ENV_TEST(test_context_record_event),
        ENV_TEST(test_context_wait_event),
        ENV_TEST(test_context_events_bad_input),
        ENV_TEST(test_context_events_and_captures),
        ENV_TEST(test_context_events_failures),
        ENV_TEST(test_context_events_without_entries),
        ENV_TEST(test_every_driver_call_failed_in_turn),
        ENV_TEST(test_null_arguments),
        ENV_TEST(test_driver_without_green_entries),
    };
    return cmocka_run_group_tests_name("green", tests, NULL, NULL);
}
