/* Changing a node of a graph that is not instantiated
 * (include/cuscope/graph_inspect.h's cus_graph_set_*) on the fake driver:
 *   - a kernel's arguments (the macro, buffers kept), a fill, copies to the
 *     device and to the host, a host function, an event record and an event
 *     wait node, changed before the instantiation: the launch runs the new
 *     parameters, though every new object was released before it;
 *   - executable graphs instantiated before still run the old parameters;
 *   - a node of another type (the driver's CUDA_ERROR_INVALID_VALUE), a graph
 *     being captured into, bad input (no driver call);
 *   - every new driver call's failure (cus_fake_fail_entry), keeping nothing;
 *   - nothing leaked (the harness's teardown). */
#include <cuscope/graph_capture.h>
#include <cuscope/graph_inspect.h>

#include "graph_fixtures.h"

#ifdef CUS_TEST_HAVE_KERNELS
static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static void test_set_kernel(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_function) fn = NULL;
    cus_autoptr(cus_module) m = load_saxpy(c, &fn);
    assert_non_null(m);
    cus_autoptr(cus_buffer) x = new_buffer(c, G_N * 4);
    cus_autoptr(cus_buffer) y = new_buffer(c, G_N * 4);
    /* On s, the launches' stream (non-blocking: a legacy-stream fill is not
     * ordered with it). */
    assert_ok(cus_buffer_fill_u32_async(x, 0, f32_bits(1.0f), G_N, s));
    assert_ok(cus_buffer_fill_u32_async(y, 0, 0, G_N, s));
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_graph_create(c, &g));
    cus_graph_node k;
    assert_ok(cus_graph_add_kernel(g, NULL, 0, &k, fn, 1, 32, 0, 1.0f, x, y,
                                   (unsigned long long)G_N));
    cus_autoptr(cus_graph_exec) old = instantiate(g);
    /* A new x, released before any launch: the graph keeps it. */
    cus_buffer *x2 = new_buffer(c, G_N * 4);
    assert_ok(cus_buffer_fill_u32_async(x2, 0, f32_bits(3.0f), G_N, s));
    assert_ok(cus_graph_set_kernel(k, fn, 1, 32, 0, 2.0f, x2, y, (unsigned long long)G_N));
    size_t objects = cus_debug_live_objects();
    x2 = cus_buffer_unref(x2);
    assert_int_equal(cus_debug_live_objects(), objects);
    cus_autoptr(cus_graph_exec) now = instantiate(g);
    float out[G_N];
    assert_ok(cus_graph_exec_launch(old, s)); /* y = 1 * 1 + 0 */
    assert_ok(cus_stream_synchronize(s));
    assert_ok(cus_copy_to_host(out, y, 0, sizeof out));
    assert_true(out[0] == 1.0f && out[31] == 1.0f && out[G_N - 1] == 0.0f);
    assert_ok(cus_graph_exec_launch(now, s)); /* y = 2 * 3 + 1 */
    assert_ok(cus_stream_synchronize(s));
    assert_ok(cus_copy_to_host(out, y, 0, sizeof out));
    assert_true(out[0] == 7.0f && out[31] == 7.0f && out[G_N - 1] == 0.0f);
    /* Without the macro. */
    float a = 1.0f;
    CUdeviceptr px = cus_buffer_ptr(x), py = cus_buffer_ptr(y);
    unsigned long long n = G_N;
    void *args[] = {&a, &px, &py, &n};
    const size_t sizes[] = {sizeof a, sizeof px, sizeof py, sizeof n};
    assert_ok(cus_graph_set_kernel_node(k, fn, (cus_dim3){1, 1, 1}, (cus_dim3){32, 1, 1}, 0, 4,
                                        args, sizes));
    assert_status(cus_graph_set_kernel_node(k, fn, (cus_dim3){1, 1, 1}, (cus_dim3){32, 1, 1}, 0,
                                            3, args, sizes),
                  CUS_ERROR_INVALID_ARGUMENT);
    /* Bad arguments (count), a node of another type, the driver's failure. */
    assert_status(cus_graph_set_kernel(k, fn, 1, 32, 0, 2.0f, x, y), CUS_ERROR_INVALID_ARGUMENT);
    cus_graph_node empty;
    assert_ok(cus_graph_add_empty(g, NULL, 0, &empty));
    assert_status(cus_graph_set_kernel(empty, fn, 1, 32, 0, 2.0f, x, y, (unsigned long long)G_N),
                  CUDA_ERROR_INVALID_VALUE);
    assert_fault_surfaces("cuGraphKernelNodeSetParams_v2",
                          cus_graph_set_kernel(k, fn, 1, 32, 0, 2.0f, x, y,
                                               (unsigned long long)G_N));
    cus_autoptr(cus_context) other = new_ctx();
    cus_autoptr(cus_function) fn2 = NULL;
    cus_autoptr(cus_module) m2 = load_saxpy(other, &fn2);
    assert_non_null(m2);
    assert_status(cus_graph_set_kernel(k, fn2, 1, 32, 0, 2.0f, x, y, (unsigned long long)G_N),
                  CUS_ERROR_CONTEXT_MISMATCH);
}
#endif

static void test_set_fill_and_copies(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_buffer) buf = new_buffer(c, G_N * 4);
    uint32_t in[G_N], in2[G_N], out[G_N], out2[G_N];
    seed(in, 100);
    seed(in2, 500);
    memset(out, 0, sizeof out);
    memset(out2, 0, sizeof out2);
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_graph_create(c, &g));
    cus_graph_node up, fill, down;
    assert_ok(cus_graph_add_copy_to_device(g, NULL, 0, &up, buf, 0, in, sizeof in));
    assert_ok(cus_graph_add_fill_u32(g, &up, 1, &fill, buf, 0, 1, 4));
    assert_ok(cus_graph_add_copy_to_host(g, &fill, 1, &down, out, buf, 0, sizeof out));
    cus_autoptr(cus_graph_exec) old = instantiate(g);
    /* Everything to a new buffer, released before the launch. */
    cus_buffer *b2 = new_buffer(c, G_N * 4);
    size_t objects = cus_debug_live_objects();
    assert_ok(cus_graph_set_copy_to_device(up, b2, 0, in2, sizeof in2));
    assert_ok(cus_graph_set_fill_u32(fill, b2, 8, 7, 2));
    assert_ok(cus_graph_set_copy_to_host(down, out2, b2, 0, sizeof out2));
    b2 = cus_buffer_unref(b2);
    assert_int_equal(cus_debug_live_objects(), objects);
    cus_autoptr(cus_graph_exec) now = instantiate(g);
    assert_ok(cus_graph_exec_launch(old, s));
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(out[0], 1);
    assert_int_equal(out[3], 1);
    assert_int_equal(out[4], in[4]);
    assert_int_equal(out2[0], 0);
    assert_ok(cus_graph_exec_launch(now, s));
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(out2[0], in2[0]);
    assert_int_equal(out2[1], in2[1]);
    assert_int_equal(out2[2], 7);
    assert_int_equal(out2[3], 7);
    assert_int_equal(out2[4], in2[4]);
    /* Out of range, misaligned, another type: nothing changes. */
    unsigned long calls = cus_fake_call_count();
    assert_status(cus_graph_set_fill_u32(fill, buf, 0, 7, G_N + 1), CUS_ERROR_OUT_OF_RANGE);
    assert_status(cus_graph_set_fill_u32(fill, buf, 2, 7, 1), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_set_copy_to_device(up, buf, 4, in, sizeof in), CUS_ERROR_OUT_OF_RANGE);
    assert_status(cus_graph_set_copy_to_host(down, out, buf, 1, sizeof out),
                  CUS_ERROR_OUT_OF_RANGE);
    assert_status(cus_graph_set_copy_to_host(down, out, buf, 0, 0), CUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(cus_fake_call_count(), calls);
    assert_status(cus_graph_set_fill_u32(up, buf, 0, 7, 1), CUDA_ERROR_INVALID_VALUE);
    assert_status(cus_graph_set_copy_to_device(fill, buf, 0, in, 4), CUDA_ERROR_INVALID_VALUE);
    assert_fault_surfaces("cuGraphMemsetNodeSetParams", cus_graph_set_fill_u32(fill, buf, 0, 3, 4));
    assert_fault_surfaces("cuGraphMemcpyNodeSetParams",
                          cus_graph_set_copy_to_device(up, buf, 0, in, sizeof in));
    assert_fault_surfaces("cuGraphMemcpyNodeSetParams",
                          cus_graph_set_copy_to_host(down, out, buf, 0, sizeof out));
    cus_autoptr(cus_context) other = new_ctx();
    cus_autoptr(cus_buffer) elsewhere = new_buffer(other, G_N * 4);
    assert_status(cus_graph_set_fill_u32(fill, elsewhere, 0, 3, 4), CUS_ERROR_CONTEXT_MISMATCH);
}

static void test_set_host_fn_and_events(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_event) start = new_event(c, 0);
    cus_autoptr(cus_event) ev1 = new_event(c, 0);
    atomic_int a = 0, b = 0;
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_graph_create(c, &g));
    cus_graph_node host, rec, wait;
    assert_ok(cus_graph_add_host_fn(g, NULL, 0, &host, count_up, &a));
    assert_ok(cus_graph_add_event_record(g, &host, 1, &rec, ev1));
    assert_ok(cus_graph_add_event_wait(g, &rec, 1, &wait, ev1));
    cus_autoptr(cus_graph_exec) old = instantiate(g);
    cus_event *ev2 = new_event(c, 0);
    cus_event *ev3 = new_event(c, 0);
    assert_ok(cus_graph_set_host_fn(host, count_up, &b));
    assert_ok(cus_graph_set_event_record(rec, ev2));
    assert_ok(cus_graph_set_event_wait(wait, ev3));
    size_t objects = cus_debug_live_objects();
    ev2 = cus_event_unref(ev2); /* the graph keeps both */
    ev3 = cus_event_unref(ev3);
    assert_int_equal(cus_debug_live_objects(), objects);
    cus_autoptr(cus_graph_exec) now = instantiate(g);
    float ms = -1;
    assert_ok(cus_event_record(start, s));
    assert_ok(cus_graph_exec_launch(old, s));
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(atomic_load(&a), 1);
    assert_int_equal(atomic_load(&b), 0);
    assert_ok(cus_event_elapsed_ms(start, ev1, &ms));
    assert_ok(cus_graph_exec_launch(now, s));
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(atomic_load(&a), 1);
    assert_int_equal(atomic_load(&b), 1);
    /* The record node's replaced event is kept by the graph until it dies. */
    assert_ok(cus_graph_exec_launch(old, s));
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(atomic_load(&a), 2);
    /* Nodes of other types, another context, bad input, failures. */
    assert_status(cus_graph_set_event_wait(rec, ev1), CUDA_ERROR_INVALID_VALUE);
    assert_status(cus_graph_set_event_record(wait, ev1), CUDA_ERROR_INVALID_VALUE);
    assert_status(cus_graph_set_host_fn(rec, count_up, &a), CUDA_ERROR_INVALID_VALUE);
    cus_autoptr(cus_context) other = new_ctx();
    cus_autoptr(cus_event) elsewhere = new_event(other, 0);
    assert_status(cus_graph_set_event_record(rec, elsewhere), CUS_ERROR_CONTEXT_MISMATCH);
    assert_fault_surfaces("cuGraphHostNodeSetParams", cus_graph_set_host_fn(host, count_up, &a));
    assert_fault_surfaces("cuGraphEventRecordNodeSetEvent", cus_graph_set_event_record(rec, ev1));
    assert_fault_surfaces("cuGraphEventWaitNodeSetEvent", cus_graph_set_event_wait(wait, ev1));
}

static void test_set_refused(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_event) ev = new_event(c, 0);
    cus_autoptr(cus_buffer) buf = new_buffer(c, 64);
    atomic_int a = 0;
    uint32_t host[16];
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_graph_create(c, &g));
    cus_graph_node rec, fill;
    assert_ok(cus_graph_add_event_record(g, NULL, 0, &rec, ev));
    assert_ok(cus_graph_add_fill_u32(g, NULL, 0, &fill, buf, 0, 1, 16));
    cus_graph_node none = {0}, orphan = {rec.handle, NULL};
    unsigned long calls = cus_fake_call_count();
    assert_status(cus_graph_set_event_record(none, ev), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_set_event_record(orphan, ev), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_set_event_record(rec, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_set_event_wait(rec, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_set_host_fn(rec, NULL, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_set_fill_u32(fill, NULL, 0, 1, 1), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_set_copy_to_device(fill, NULL, 0, host, 4),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_set_copy_to_host(fill, host, NULL, 0, 4), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_set_kernel_node(rec, NULL, (cus_dim3){1, 1, 1}, (cus_dim3){1, 1, 1},
                                            0, 0, NULL, NULL),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_set_library_kernel_node(none, NULL, (cus_dim3){1, 1, 1},
                                                    (cus_dim3){1, 1, 1}, 0, 0, NULL, NULL),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(cus_fake_call_count(), calls);
    /* A graph being captured into. */
    {
        cus_capture_scope_to_graph(cap, s, g, NULL, 0, CU_STREAM_CAPTURE_MODE_RELAXED);
        assert_ok(cap.status);
        calls = cus_fake_call_count();
        assert_status(cus_graph_set_event_record(rec, ev), CUS_ERROR_INVALID_ARGUMENT);
        assert_contains(cus_last_error_message(), "captured into");
        assert_status(cus_graph_set_fill_u32(fill, buf, 0, 2, 16), CUS_ERROR_INVALID_ARGUMENT);
        assert_status(cus_graph_set_host_fn(rec, count_up, &a), CUS_ERROR_INVALID_ARGUMENT);
        assert_int_equal(cus_fake_call_count(), calls);
        cus_graph *same = NULL;
        assert_ok(cus_capture_end(&cap, &same));
        same = cus_graph_unref(same);
    }
    assert_ok(cus_graph_set_fill_u32(fill, buf, 0, 2, 16));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#ifdef CUS_TEST_HAVE_KERNELS
        ENV_TEST(test_set_kernel),
#endif
        ENV_TEST(test_set_fill_and_copies),
        ENV_TEST(test_set_host_fn_and_events),
        ENV_TEST(test_set_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
