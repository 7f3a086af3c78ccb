/* Graphs built by hand and per-node updates (include/cuscope/graph_nodes.h)
 * on the fake driver:
 *   - a hand-built graph computes what the same work captured computes (the
 *     saxpy kernel's host twin);
 *   - every node kind, and dependency order (an edge added against the order
 *     of the adds re-sorts the replay);
 *   - the keep rule: every object a node uses may be released before the
 *     graph is instantiated and replayed; a captured graph extended by hand;
 *   - per-node updates: kernel, copy and fill parameters, enabling and
 *     disabling; a thousand updates keep nothing extra alive;
 *   - bad input (argument count and sizes, out-of-range copies, a node of
 *     another graph) and every driver call's failure (cus_fake_fail_entry),
 *     each adding and keeping nothing;
 *   - nothing leaked (the harness's teardown). */
#include <cuscope/graph_nodes.h>

#include "graph_fixtures.h"

static uint32_t *host_u32(cus_host_buffer *h)
{
    return cus_host_buffer_data(h);
}

/* --- every node kind, and the order of a replay ---------------------------------------------- */

/* Host functions that log their tag in order. */
typedef struct order_log {
    int tags[16];
    atomic_int n;
} order_log;

typedef struct tagged {
    order_log *log;
    int tag;
} tagged;

static void log_tag(void *p)
{
    tagged *t = p;
    t->log->tags[atomic_fetch_add(&t->log->n, 1)] = t->tag;
}

static void test_copies_fills_and_host_functions(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_host_buffer) hin = new_pinned(c, G_N * 4);
    cus_autoptr(cus_host_buffer) hout = new_pinned(c, G_N * 4);
    seed(u32s(hin), 100);
    cus_autoptr(cus_buffer) a = new_buffer(c, G_N * 4);
    cus_autoptr(cus_buffer) b = new_buffer(c, G_N * 4);
    order_log log = {.n = 0};
    tagged t1 = {&log, 1}, t2 = {&log, 2};
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_graph_create(c, &g));
    cus_graph_node up, fill8, fill16, fill32, dd, down, h1, h2, join;
    assert_ok(cus_graph_add_copy_to_device(g, NULL, 0, &up, a, 0, u32s(hin), G_N * 4));
    assert_ok(cus_graph_add_fill_u8(g, &up, 1, &fill8, a, 0, 0xab, 4));
    assert_ok(cus_graph_add_fill_u16(g, &fill8, 1, &fill16, a, 4, 0x1234, 2));
    assert_ok(cus_graph_add_fill_u32(g, &fill16, 1, &fill32, a, 8, 0xdeadbeefu, 1));
    assert_ok(cus_graph_add_copy_device(g, &fill32, 1, &dd, b, 0, a, 0, G_N * 4));
    assert_ok(cus_graph_add_copy_to_host(g, &dd, 1, &down, u32s(hout), b, 0, G_N * 4));
    /* h2 is added first, h1 later; the edge h1 -> h2 puts h1 first. */
    assert_ok(cus_graph_add_host_fn(g, &down, 1, &h2, log_tag, &t2));
    assert_ok(cus_graph_add_host_fn(g, &down, 1, &h1, log_tag, &t1));
    assert_ok(cus_graph_add_dependencies(g, &h1, &h2, 1));
    cus_graph_node both[2] = {h1, h2};
    assert_ok(cus_graph_add_empty(g, both, 2, &join));
    assert_non_null(join.handle);
    assert_ptr_equal(join.graph, g);
    size_t n = 0;
    assert_ok(cus_graph_node_count(g, &n));
    assert_int_equal(n, 9);
    size_t roots = 0;
    assert_ok(cus_graph_root_nodes(g, NULL, &roots));
    assert_int_equal(roots, 1);
    cus_graph_node root = {0};
    roots = 1;
    assert_ok(cus_graph_root_nodes(g, &root, &roots));
    assert_ptr_equal(root.handle, up.handle);
    /* a, b and the two host-function records */
    assert_int_equal(cus_graph_kept_objects(g), 4);
    cus_autoptr(cus_graph_exec) e = instantiate(g);
    for (int r = 0; r < 3; r++) {
        atomic_store(&log.n, 0);
        memset(u32s(hout), 0, G_N * 4);
        assert_ok(cus_graph_exec_launch(e, s));
        assert_ok(cus_stream_synchronize(s));
        assert_int_equal(u32s(hout)[0], 0xababababu);
        assert_int_equal(u32s(hout)[1], 0x12341234u);
        assert_int_equal(u32s(hout)[2], 0xdeadbeefu);
        for (int i = 3; i < G_N; i++)
            assert_int_equal(u32s(hout)[i], u32s(hin)[i]);
        assert_int_equal(atomic_load(&log.n), 2);
        assert_int_equal(log.tags[0], 1);
        assert_int_equal(log.tags[1], 2);
    }
    /* A cycle is the driver's to refuse. */
    assert_status(cus_graph_add_dependencies(g, &h2, &h1, 1), CUDA_ERROR_INVALID_VALUE);
}

static void test_events_and_child_graphs(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_host_buffer) hout = new_pinned(c, G_N * 4);
    cus_autoptr(cus_buffer) a = new_buffer(c, G_N * 4);
    cus_graph_exec *e = NULL;
    {
        cus_autoptr(cus_event) ev = new_event(c, CU_EVENT_DISABLE_TIMING);
        cus_autoptr(cus_graph) child = NULL;
        assert_ok(cus_graph_create(c, &child));
        assert_ok(cus_graph_add_fill_u32(child, NULL, 0, NULL, a, 0, 0x5au, G_N));
        cus_autoptr(cus_graph) g = NULL;
        assert_ok(cus_graph_create(c, &g));
        cus_graph_node rec, wait, sub, down;
        assert_ok(cus_graph_add_event_record(g, NULL, 0, &rec, ev));
        assert_ok(cus_graph_add_event_wait(g, &rec, 1, &wait, ev));
        assert_ok(cus_graph_add_child(g, &wait, 1, &sub, child));
        assert_ok(cus_graph_add_copy_to_host(g, &sub, 1, &down, u32s(hout), a, 0, G_N * 4));
        assert_status(cus_graph_add_child(g, NULL, 0, NULL, g), CUS_ERROR_INVALID_ARGUMENT);
        /* ev (once for both nodes), child, a */
        assert_int_equal(cus_graph_kept_objects(g), 3);
        e = instantiate(g);
    } /* the event, the child and the graph go: the exec keeps them */
    assert_ok(cus_graph_exec_launch(e, s));
    assert_ok(cus_stream_synchronize(s));
    for (int i = 0; i < G_N; i++)
        assert_int_equal(u32s(hout)[i], 0x5au);
    e = cus_graph_exec_unref(e);
}

/* A node of one graph is no dependency of another: refused before the driver. */
static void test_dependencies_of_another_graph(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_graph) g1 = NULL;
    cus_autoptr(cus_graph) g2 = NULL;
    assert_ok(cus_graph_create(c, &g1));
    assert_ok(cus_graph_create(c, &g2));
    cus_graph_node n1, n2;
    assert_ok(cus_graph_add_empty(g1, NULL, 0, &n1));
    assert_ok(cus_graph_add_empty(g2, NULL, 0, &n2));
    unsigned long calls = cus_fake_call_count();
    assert_status(cus_graph_add_empty(g2, &n1, 1, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(cus_last_error_message(), "another graph"));
    assert_status(cus_graph_add_dependencies(g2, &n1, &n2, 1), CUS_ERROR_INVALID_ARGUMENT);
    cus_graph_node none = {0};
    assert_status(cus_graph_add_empty(g2, &none, 1, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_add_empty(g2, NULL, 1, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(cus_fake_call_count(), calls);
    size_t n = 0;
    assert_ok(cus_graph_node_count(g2, &n));
    assert_int_equal(n, 1);
}

/* Bounds and alignment of copies and fills, as memory.h checks them. */
static void test_copy_and_fill_bounds(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_context) other = new_ctx();
    cus_autoptr(cus_buffer) a = new_buffer(c, 64);
    cus_autoptr(cus_buffer) elsewhere = new_buffer(other, 64);
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_graph_create(c, &g));
    char host[128] = {0};
    unsigned long calls = cus_fake_call_count();
    assert_status(cus_graph_add_copy_to_device(g, NULL, 0, NULL, a, 1, host, 64),
                  CUS_ERROR_OUT_OF_RANGE);
    assert_status(cus_graph_add_copy_to_host(g, NULL, 0, NULL, host, a, 65, 1),
                  CUS_ERROR_OUT_OF_RANGE);
    assert_status(cus_graph_add_copy_device(g, NULL, 0, NULL, a, 0, a, SIZE_MAX, 2),
                  CUS_ERROR_OUT_OF_RANGE);
    assert_status(cus_graph_add_copy_to_device(g, NULL, 0, NULL, a, 0, host, 0),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_add_fill_u32(g, NULL, 0, NULL, a, 2, 0, 1),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_add_fill_u16(g, NULL, 0, NULL, a, 0, 0, 33), CUS_ERROR_OUT_OF_RANGE);
    assert_status(cus_graph_add_fill_u32(g, NULL, 0, NULL, a, 0, 0, SIZE_MAX / 2),
                  CUS_ERROR_OUT_OF_RANGE);
    assert_status(cus_graph_add_copy_to_device(g, NULL, 0, NULL, elsewhere, 0, host, 8),
                  CUS_ERROR_CONTEXT_MISMATCH);
    assert_status(cus_graph_add_copy_to_device(g, NULL, 0, NULL, NULL, 0, host, 8),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_add_host_fn(g, NULL, 0, NULL, NULL, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_add_event_record(g, NULL, 0, NULL, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_add_empty(NULL, NULL, 0, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_create(NULL, &g), CUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(cus_fake_call_count(), calls);
    assert_int_equal(cus_graph_kept_objects(g), 0);
}

/* Each driver call's failure: reported, naming the call; nothing added or
 * kept; the graph goes on. */
static void test_driver_failures(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_buffer) a = new_buffer(c, 64);
    cus_autoptr(cus_event) ev = new_event(c, CU_EVENT_DISABLE_TIMING);
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_fake_fail_entry("cuGraphCreate", 1, FAULT, false));
    assert_status(cus_graph_create(c, &g), CU(FAULT));
    assert_null(g);
    assert_string_equal(cus_last_error()->driver_call, "cuGraphCreate");
    assert_ok(cus_graph_create(c, &g));
    cus_autoptr(cus_graph) child = NULL;
    assert_ok(cus_graph_create(c, &child));
    char host[64];
    cus_graph_node first = {0}, second = {0};
    assert_ok(cus_graph_add_empty(g, NULL, 0, &first));
    assert_ok(cus_graph_add_empty(g, NULL, 0, &second));
#define FAILS(call, expr)                                                      \
    do {                                                                       \
        cus_graph_node out_ = {0};                                             \
        (void)out_;                                                            \
        assert_ok(cus_fake_fail_entry(call, 1, FAULT, false));                 \
        assert_status((expr), CU(FAULT));                                      \
        assert_string_equal(cus_last_error()->driver_call, call);                     \
        assert_null(out_.handle);                                              \
        assert_int_equal(cus_graph_kept_objects(g), 0);                        \
    } while (0)
    FAILS("cuGraphAddMemcpyNode", cus_graph_add_copy_to_device(g, NULL, 0, &out_, a, 0, host, 8));
    FAILS("cuGraphAddMemsetNode", cus_graph_add_fill_u32(g, NULL, 0, &out_, a, 0, 1, 2));
    FAILS("cuGraphAddHostNode", cus_graph_add_host_fn(g, NULL, 0, &out_, count_up, NULL));
    FAILS("cuGraphAddEventRecordNode", cus_graph_add_event_record(g, NULL, 0, &out_, ev));
    FAILS("cuGraphAddEventWaitNode", cus_graph_add_event_wait(g, NULL, 0, &out_, ev));
    FAILS("cuGraphAddEmptyNode", cus_graph_add_empty(g, NULL, 0, &out_));
    FAILS("cuGraphAddChildGraphNode", cus_graph_add_child(g, NULL, 0, &out_, child));
    FAILS("cuGraphAddDependencies", cus_graph_add_dependencies(g, &first, &second, 1));
    size_t count = 2;
    cus_graph_node nodes[2];
    FAILS("cuGraphGetNodes", cus_graph_nodes(g, nodes, &count));
    FAILS("cuGraphGetRootNodes", cus_graph_root_nodes(g, nodes, &count));
    assert_int_equal(count, 2);
#undef FAILS
    size_t n = 0;
    assert_ok(cus_graph_node_count(g, &n));
    assert_int_equal(n, 2);
    /* Updates of an executable graph. */
    cus_graph_node fill = {0};
    assert_ok(cus_graph_add_fill_u32(g, NULL, 0, &fill, a, 0, 1, 2));
    cus_autoptr(cus_graph_exec) e = instantiate(g);
    size_t objects = cus_debug_live_objects();
    assert_ok(cus_fake_fail_entry("cuGraphExecMemsetNodeSetParams", 1, FAULT, false));
    assert_status(cus_graph_exec_set_fill_u32(e, fill, a, 4, 2, 1), CU(FAULT));
    assert_ok(cus_fake_fail_entry("cuGraphNodeSetEnabled", 1, FAULT, false));
    assert_status(cus_graph_exec_set_node_enabled(e, fill, false), CU(FAULT));
    assert_string_equal(cus_last_error()->driver_call, "cuGraphNodeSetEnabled");
    assert_int_equal(cus_debug_live_objects(), objects);
    assert_ok(cus_graph_exec_set_fill_u32(e, fill, a, 4, 2, 1));
    assert_ok(cus_graph_exec_set_node_enabled(e, fill, true));
    assert_status(cus_graph_exec_set_fill_u32(e, first, a, 4, 2, 1), CUDA_ERROR_INVALID_VALUE);
}

/* A node of another graph than the one the exec replays is refused before
 * the driver. */
static void test_exec_update_bad_input(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_buffer) a = new_buffer(c, 64);
    cus_autoptr(cus_graph) g = NULL;
    cus_autoptr(cus_graph) other = NULL;
    assert_ok(cus_graph_create(c, &g));
    assert_ok(cus_graph_create(c, &other));
    cus_graph_node fill, stranger;
    assert_ok(cus_graph_add_fill_u32(g, NULL, 0, &fill, a, 0, 1, 2));
    assert_ok(cus_graph_add_fill_u32(other, NULL, 0, &stranger, a, 0, 1, 2));
    cus_autoptr(cus_graph_exec) e = instantiate(g);
    unsigned long calls = cus_fake_call_count();
    assert_status(cus_graph_exec_set_fill_u32(e, stranger, a, 0, 1, 2),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_exec_set_fill_u32(e, fill, a, 0, 1, 17), CUS_ERROR_OUT_OF_RANGE);
    assert_status(cus_graph_exec_set_node_enabled(NULL, fill, true), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_exec_set_node_enabled(e, (cus_graph_node){0}, true),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(cus_fake_call_count(), calls);
}

#ifdef CUS_TEST_HAVE_KERNELS
/* --- kernels ------------------------------------------------------------------------------ */

/* x, y = in (H2D), saxpy(2, x, y), y -> out (D2H): by hand, into g. */
static cus_status build_saxpy(cus_graph *g, cus_function *fn, cus_buffer *x, cus_buffer *y,
                              const float *in_x, const float *in_y, float *out,
                              cus_graph_node *kernel)
{
    cus_graph_node ups[2], down;
    CUS_TRY(cus_graph_add_copy_to_device(g, NULL, 0, &ups[0], x, 0, in_x, G_N * 4));
    CUS_TRY(cus_graph_add_copy_to_device(g, NULL, 0, &ups[1], y, 0, in_y, G_N * 4));
    CUS_TRY(cus_graph_add_kernel(g, ups, 2, kernel, fn, cus_grid_for(G_N, 32), 32, 0, 2.0f, x, y,
                                 (unsigned long long)G_N));
    return cus_graph_add_copy_to_host(g, kernel, 1, &down, out, y, 0, G_N * 4);
}

static void test_hand_built_equals_captured(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_function) fn = NULL;
    cus_autoptr(cus_module) m = load_saxpy(c, &fn);
    assert_non_null(m);
    cus_autoptr(cus_host_buffer) hx = new_pinned(c, G_N * 4);
    cus_autoptr(cus_host_buffer) hy = new_pinned(c, G_N * 4);
    cus_autoptr(cus_host_buffer) out1 = new_pinned(c, G_N * 4);
    cus_autoptr(cus_host_buffer) out2 = new_pinned(c, G_N * 4);
    fill_floats(hx, 1.0f, 0.5f);
    fill_floats(hy, -3.0f, 0.25f);
    cus_autoptr(cus_buffer) x = new_buffer(c, G_N * 4);
    cus_autoptr(cus_buffer) y = new_buffer(c, G_N * 4);
    cus_autoptr(cus_graph) hand = NULL;
    cus_autoptr(cus_graph) captured = NULL;
    assert_ok(cus_graph_create(c, &hand));
    cus_graph_node kernel;
    assert_ok(build_saxpy(hand, fn, x, y, cus_host_buffer_data(hx), cus_host_buffer_data(hy),
                          cus_host_buffer_data(out1), &kernel));
    assert_int_equal(cus_graph_kept_objects(hand), 3); /* x, y, the module */
    {
        cus_capture_scope(cap, s, CU_STREAM_CAPTURE_MODE_GLOBAL);
        assert_ok(cap.status);
        assert_ok(cus_copy_to_device_async(x, 0, cus_host_buffer_data(hx), G_N * 4, s));
        assert_ok(cus_copy_to_device_async(y, 0, cus_host_buffer_data(hy), G_N * 4, s));
        assert_ok(cus_launch(fn, cus_grid_for(G_N, 32), 32, 0, s, 2.0f, x, y,
                             (unsigned long long)G_N));
        assert_ok(cus_copy_to_host_async(cus_host_buffer_data(out2), y, 0, G_N * 4, s));
        assert_ok(cus_capture_end(&cap, &captured));
    }
    cus_autoptr(cus_graph_exec) e1 = instantiate(hand);
    cus_autoptr(cus_graph_exec) e2 = instantiate(captured);
    assert_ok(cus_graph_exec_launch(e1, s));
    assert_ok(cus_graph_exec_launch(e2, s));
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(atomic_load(&saxpy_runs), 2);
    const float *o1 = cus_host_buffer_data(out1), *o2 = cus_host_buffer_data(out2);
    const float *px = cus_host_buffer_data(hx), *py = cus_host_buffer_data(hy);
    for (int i = 0; i < G_N; i++) {
        assert_true(o1[i] == 2.0f * px[i] + py[i]);
        assert_true(o1[i] == o2[i]);
    }
    cus_fake_launch l;
    assert_ok(cus_fake_last_launch(&l));
    assert_string_equal(l.function, "saxpy");
}

/* Wrong argument count or sizes: refused before the driver, as cus_launch
 * refuses them. */
static void test_kernel_arguments_checked(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_function) fn = NULL;
    cus_autoptr(cus_module) m = load_saxpy(c, &fn);
    assert_non_null(m);
    cus_autoptr(cus_buffer) x = new_buffer(c, G_N * 4);
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_graph_create(c, &g));
    unsigned long calls = cus_fake_call_count();
    assert_status(cus_graph_add_kernel(g, NULL, 0, NULL, fn, 1, 32, 0, 2.0f, x, x),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(cus_last_error_message(), "3 arguments given, the kernel takes 4"));
    assert_string_equal(cus_last_error()->function, "cus_graph_add_kernel");
    assert_status(cus_graph_add_kernel(g, NULL, 0, NULL, fn, 1, 32, 0, 2.0f, x, x, G_N),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(cus_last_error_message(), "argument 4 is 4 bytes"));
    assert_status(cus_graph_add_kernel(g, NULL, 0, NULL, fn, 1, 32, 0, 2.0, x, x,
                                       (unsigned long long)G_N),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_add_kernel_node(g, NULL, 0, NULL, fn, CUS_DIM3(1, 1, 1),
                                            CUS_DIM3(1, 1, 1), 0, 1, NULL, NULL),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_add_kernel_node(g, NULL, 0, NULL, NULL, CUS_DIM3(1, 1, 1),
                                            CUS_DIM3(1, 1, 1), 0, 0, NULL, NULL),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(cus_fake_call_count(), calls);
    assert_int_equal(cus_graph_kept_objects(g), 0);
    /* The driver's failure: nothing kept. */
    assert_ok(cus_fake_fail_entry("cuGraphAddKernelNode_v2", 1, FAULT, false));
    assert_status(cus_graph_add_kernel(g, NULL, 0, NULL, fn, 1, 32, 0, 2.0f, x, x,
                                       (unsigned long long)G_N),
                  CU(FAULT));
    assert_string_equal(cus_last_error()->driver_call, "cuGraphAddKernelNode");
    assert_int_equal(cus_graph_kept_objects(g), 0);
    /* A function of another context. */
    cus_autoptr(cus_context) other = new_ctx();
    cus_autoptr(cus_graph) g2 = NULL;
    assert_ok(cus_graph_create(other, &g2));
    assert_status(cus_graph_add_kernel(g2, NULL, 0, NULL, fn, 1, 32, 0, 2.0f, x, x,
                                       (unsigned long long)G_N),
                  CUS_ERROR_CONTEXT_MISMATCH);
}

/* Everything a node uses released before the instantiation: the graph keeps
 * it; the replays compute; the fake sees no use after free. */
static void test_keep_alive(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_host_buffer) hx = new_pinned(c, G_N * 4);
    cus_autoptr(cus_host_buffer) hy = new_pinned(c, G_N * 4);
    cus_autoptr(cus_host_buffer) out = new_pinned(c, G_N * 4);
    fill_floats(hx, 2.0f, 1.0f);
    fill_floats(hy, 1.0f, 0.0f);
    size_t modules = cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE);
    cus_graph *g = NULL;
    {
        cus_autoptr(cus_function) fn = NULL;
        cus_autoptr(cus_module) m = load_saxpy(c, &fn);
        assert_non_null(m);
        cus_autoptr(cus_buffer) x = new_buffer(c, G_N * 4);
        cus_autoptr(cus_buffer) y = new_buffer(c, G_N * 4);
        assert_ok(cus_graph_create(c, &g));
        cus_graph_node kernel;
        assert_ok(build_saxpy(g, fn, x, y, cus_host_buffer_data(hx), cus_host_buffer_data(hy),
                              cus_host_buffer_data(out), &kernel));
    }
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), modules + 1);
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_graph_exec *e = instantiate(g);
    g = cus_graph_unref(g);
    for (int r = 0; r < 2; r++) {
        assert_ok(cus_graph_exec_launch(e, s));
        assert_ok(cus_stream_synchronize(s));
        const float *o = cus_host_buffer_data(out);
        for (int i = 0; i < G_N; i++)
            assert_true(o[i] == 2.0f * (2.0f + (float)i) + 1.0f);
    }
    e = cus_graph_exec_unref(e);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), modules);
}

/* A captured graph extended by hand: the new node depends on every captured
 * node. */
static void test_captured_then_extended(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_function) fn = NULL;
    cus_autoptr(cus_module) m = load_saxpy(c, &fn);
    assert_non_null(m);
    cus_autoptr(cus_host_buffer) hx = new_pinned(c, G_N * 4);
    cus_autoptr(cus_host_buffer) out = new_pinned(c, G_N * 4);
    fill_floats(hx, 1.0f, 1.0f);
    cus_autoptr(cus_buffer) x = new_buffer(c, G_N * 4);
    cus_autoptr(cus_buffer) y = new_buffer(c, G_N * 4);
    cus_autoptr(cus_graph) g = NULL;
    {
        cus_capture_scope(cap, s, CU_STREAM_CAPTURE_MODE_GLOBAL);
        assert_ok(cap.status);
        assert_ok(cus_copy_to_device_async(x, 0, cus_host_buffer_data(hx), G_N * 4, s));
        assert_ok(cus_buffer_fill_u32_async(y, 0, 0, G_N, s));
        assert_ok(cus_capture_end(&cap, &g));
    }
    size_t kept = cus_graph_kept_objects(g); /* x, y */
    size_t n = 0;
    assert_ok(cus_graph_nodes(g, NULL, &n));
    assert_int_equal(n, 2);
    cus_graph_node nodes[2];
    assert_ok(cus_graph_nodes(g, nodes, &n));
    cus_graph_node kernel, down;
    assert_ok(cus_graph_add_kernel(g, nodes, n, &kernel, fn, cus_grid_for(G_N, 32), 32, 0, 3.0f,
                                   x, y, (unsigned long long)G_N));
    assert_ok(cus_graph_add_copy_to_host(g, &kernel, 1, &down, cus_host_buffer_data(out), y, 0,
                                         G_N * 4));
    assert_int_equal(cus_graph_kept_objects(g), kept + 1); /* the module; x, y once */
    cus_autoptr(cus_graph_exec) e = instantiate(g);
    assert_ok(cus_graph_exec_launch(e, s));
    assert_ok(cus_stream_synchronize(s));
    const float *o = cus_host_buffer_data(out);
    for (int i = 0; i < G_N; i++)
        assert_true(o[i] == 3.0f * (1.0f + (float)i));
}

/* A thousand updates of a kernel node, alternating its buffers and launching
 * between them: what earlier updates used is released as the replays that
 * used it complete, and the last objects go with the exec. */
static void test_kernel_node_update_loop(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_function) fn = NULL;
    cus_autoptr(cus_module) m = load_saxpy(c, &fn);
    assert_non_null(m);
    cus_autoptr(cus_buffer) x = new_buffer(c, G_N * 4);
    cus_autoptr(cus_buffer) y = new_buffer(c, G_N * 4);
    assert_ok(cus_buffer_fill_u32(x, 0, 0, G_N));
    assert_ok(cus_buffer_fill_u32(y, 0, 0, G_N));
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_graph_create(c, &g));
    cus_graph_node k;
    assert_ok(cus_graph_add_kernel(g, NULL, 0, &k, fn, 1, 32, 0, 1.0f, x, y,
                                   (unsigned long long)G_N));
    cus_autoptr(cus_graph_exec) e = instantiate(g);
    size_t objects = cus_debug_live_objects();
    size_t events = cus_fake_live_handles(CUS_FAKE_HANDLE_EVENT);
    for (int i = 0; i < 1000; i++) {
        cus_autoptr(cus_buffer) a = new_buffer(c, G_N * 4);
        assert_ok(cus_buffer_fill_u32(a, 0, 0, G_N));
        assert_ok(cus_graph_exec_set_kernel(e, k, fn, 1, 32, 0, (float)i, a, y,
                                            (unsigned long long)G_N));
        assert_ok(cus_graph_exec_launch(e, s));
        if (i % 100 == 99)
            assert_ok(cus_stream_synchronize(s));
    }
    assert_ok(cus_stream_synchronize(s));
    /* The last update's buffer, and the retired ones whose fences the next
     * call queries. */
    assert_ok(cus_graph_exec_set_kernel(e, k, fn, 1, 32, 0, 1.0f, x, y, (unsigned long long)G_N));
    assert_ok(cus_graph_exec_launch(e, s));
    assert_ok(cus_stream_synchronize(s));
    assert_ok(cus_graph_exec_launch(e, s)); /* releases the last retired objects */
    assert_ok(cus_stream_synchronize(s));
    assert_ok(cus_graph_exec_set_kernel(e, k, fn, 1, 32, 0, 1.0f, x, y, (unsigned long long)G_N));
    assert_int_equal(cus_debug_live_objects(), objects);
    assert_true(cus_fake_live_handles(CUS_FAKE_HANDLE_EVENT) <= events + 1);
    /* Bad input and failures change nothing. */
    assert_status(cus_graph_exec_set_kernel(e, k, fn, 1, 32, 0, 1.0f, x, y),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_ok(cus_fake_fail_entry("cuGraphExecKernelNodeSetParams_v2", 1, FAULT, false));
    assert_status(cus_graph_exec_set_kernel(e, k, fn, 1, 32, 0, 1.0f, y, x,
                                            (unsigned long long)G_N),
                  CU(FAULT));
    assert_string_equal(cus_last_error()->driver_call, "cuGraphExecKernelNodeSetParams");
    assert_int_equal(cus_debug_live_objects(), objects);
}

/* A disabled kernel node does nothing at the launches after it. */
static void test_node_disabled(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_function) fn = NULL;
    cus_autoptr(cus_module) m = load_saxpy(c, &fn);
    assert_non_null(m);
    cus_autoptr(cus_buffer) x = new_buffer(c, G_N * 4);
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_graph_create(c, &g));
    cus_graph_node k;
    assert_ok(cus_graph_add_kernel(g, NULL, 0, &k, fn, 1, 32, 0, 1.0f, x, x,
                                   (unsigned long long)1));
    cus_autoptr(cus_graph_exec) e = instantiate(g);
    assert_ok(cus_graph_exec_set_node_enabled(e, k, false));
    assert_ok(cus_graph_exec_launch(e, s));
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(atomic_load(&saxpy_runs), 0);
    assert_ok(cus_graph_exec_set_node_enabled(e, k, true));
    assert_ok(cus_graph_exec_launch(e, s));
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(atomic_load(&saxpy_runs), 1);
}
#endif

/* Per-node updates of an executable graph whose graph was re-sorted after
 * the instantiation (an edge added against the nodes' order): the fake finds
 * an executable graph's copy of a node at the node's place, and must fall
 * back to looking for it once the places moved. */
static void test_updates_after_the_graph_was_reordered(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_buffer) a = new_buffer(c, 16);
    cus_autoptr(cus_buffer) b = new_buffer(c, 16);
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_graph_create(c, &g));
    cus_graph_node fa, fb;
    assert_ok(cus_graph_add_fill_u32(g, NULL, 0, &fa, a, 0, 1, 4));
    assert_ok(cus_graph_add_fill_u32(g, NULL, 0, &fb, b, 0, 2, 4));
    cus_autoptr(cus_graph_exec) e = instantiate(g);
    assert_ok(cus_graph_add_dependencies(g, &fb, &fa, 1)); /* fa after fb: re-sorted */
    assert_ok(cus_graph_exec_set_fill_u32(e, fa, a, 0, 5, 4));
    assert_ok(cus_graph_exec_set_fill_u32(e, fb, b, 0, 6, 4));
    assert_ok(cus_graph_exec_set_node_enabled(e, fb, false));
    bool on = true;
    assert_ok(cus_graph_node_enabled(e, fb, &on));
    assert_false(on);
    assert_ok(cus_buffer_fill_u32_async(b, 0, 0, 4, s));
    assert_ok(cus_graph_exec_launch(e, s));
    assert_ok(cus_stream_synchronize(s));
    uint32_t wa[4], wb[4];
    assert_ok(cus_copy_to_host(wa, a, 0, sizeof wa));
    assert_ok(cus_copy_to_host(wb, b, 0, sizeof wb));
    assert_int_equal(wa[3], 5u);
    assert_int_equal(wb[3], 0u); /* disabled */
    assert_int_equal(cus_fake_misuse_count(), 0);
}

/* Copy and fill nodes updated in an executable graph. */
static void test_copy_and_fill_updates(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_host_buffer) hin = new_pinned(c, G_N * 4);
    cus_autoptr(cus_host_buffer) hout = new_pinned(c, G_N * 4);
    seed(u32s(hin), 7);
    cus_autoptr(cus_buffer) a = new_buffer(c, G_N * 4);
    cus_autoptr(cus_buffer) b = new_buffer(c, G_N * 4);
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_graph_create(c, &g));
    cus_graph_node up, fill, down;
    assert_ok(cus_graph_add_copy_to_device(g, NULL, 0, &up, a, 0, u32s(hin), G_N * 4));
    assert_ok(cus_graph_add_fill_u32(g, &up, 1, &fill, a, 0, 1, 1));
    assert_ok(cus_graph_add_copy_to_host(g, &fill, 1, &down, host_u32(hout), a, 0, G_N * 4));
    cus_autoptr(cus_graph_exec) e = instantiate(g);
    assert_ok(cus_graph_exec_set_fill_u32(e, fill, b, 0, 9, G_N));
    size_t objects = cus_debug_live_objects();
    assert_ok(cus_fake_fail_entry("cuGraphExecMemcpyNodeSetParams", 1, FAULT, false));
    assert_status(cus_graph_exec_set_copy_to_device(e, up, b, 0, u32s(hin), 8), CU(FAULT));
    assert_string_equal(cus_last_error()->driver_call, "cuGraphExecMemcpyNodeSetParams");
    assert_int_equal(cus_debug_live_objects(), objects);
    /* A copy node is no fill node: the driver's refusal. */
    assert_status(cus_graph_exec_set_fill_u32(e, up, b, 0, 9, G_N), CUDA_ERROR_INVALID_VALUE);
    assert_ok(cus_graph_exec_set_copy_to_device(e, up, b, 0, u32s(hin), 8));
    assert_ok(cus_graph_exec_set_copy_to_host(e, down, host_u32(hout), b, 0, G_N * 4));
    assert_ok(cus_graph_exec_launch(e, s));
    assert_ok(cus_stream_synchronize(s));
    for (int i = 0; i < G_N; i++)
        assert_int_equal(host_u32(hout)[i], 9u);
    /* The graph itself is unchanged: a new instantiation replays it. */
    cus_autoptr(cus_graph_exec) e2 = instantiate(g);
    assert_ok(cus_graph_exec_launch(e2, s));
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(host_u32(hout)[0], 1u);
    assert_int_equal(host_u32(hout)[1], u32s(hin)[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_copies_fills_and_host_functions),
        ENV_TEST(test_events_and_child_graphs),
        ENV_TEST(test_dependencies_of_another_graph),
        ENV_TEST(test_copy_and_fill_bounds),
        ENV_TEST(test_driver_failures),
        ENV_TEST(test_exec_update_bad_input),
        ENV_TEST(test_copy_and_fill_updates),
        ENV_TEST(test_updates_after_the_graph_was_reordered),
#ifdef CUS_TEST_HAVE_KERNELS
        ENV_TEST(test_hand_built_equals_captured),
        ENV_TEST(test_kernel_arguments_checked),
        ENV_TEST(test_keep_alive),
        ENV_TEST(test_captured_then_extended),
        ENV_TEST(test_kernel_node_update_loop),
        ENV_TEST(test_node_disabled),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
