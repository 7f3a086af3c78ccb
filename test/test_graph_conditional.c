/* Conditional nodes (include/cuscope/graph_conditional.h) on the fake
 * driver:
 *   - WHILE: kernels/countdown.cu's twin decrements a device counter and
 *     sets the condition, and the body runs exactly N times in one launch
 *     (the fake's launch log), again at the next launch (the default applied
 *     anew);
 *   - IF with the value 0 and 1, IF/ELSE, SWITCH in and out of range, a
 *     value set from the host (cus_fake_graph_set_conditional) without a
 *     default;
 *   - ownership: a body graph keeps its parent alive, what its nodes use is
 *     kept by the root (the user's references may all go before a replay),
 *     and nothing is left when the last reference goes;
 *   - a handle of an enclosing graph serving a nested node, not the reverse;
 *   - a body filled by a capture into it (cus_capture_begin_to_graph);
 *   - bad input (no handle, a handle of another graph, sizes, types, a body
 *     instantiated on its own) and each new driver call failing, each adding
 *     and keeping nothing;
 *   - nothing leaked (the harness's teardown). */
#include <cudaTypedefs.h>

#include <cuscope/graph_conditional.h>
#include <cuscope/graph_inspect.h>
#include <cuscope/graph_nodes.h>

#include "graph_fixtures.h"

static uint32_t read_u32(cus_buffer *b, size_t offset)
{
    uint32_t v = 0;
    assert_ok(cus_copy_to_host(&v, b, offset, sizeof v));
    return v;
}

static void write_u32(cus_buffer *b, size_t offset, uint32_t v)
{
    assert_ok(cus_copy_to_device(b, offset, &v, sizeof v));
}

/* Instantiates g, launches it once on a new stream and waits. */
static void run_once(cus_context *c, cus_graph *g)
{
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_graph_exec) e = instantiate(g);
    assert_ok(cus_graph_exec_launch(e, s));
    assert_ok(cus_stream_synchronize(s));
}

/* --- IF, IF/ELSE, SWITCH ----------------------------------------------------------------------- */

/* A graph with one IF node of the given default whose body fills buf[0]
 * with 7 (and, with an ELSE, buf[4] with 9). */
static void if_graph(cus_context *c, cus_buffer *buf, unsigned int value, bool with_else)
{
    write_u32(buf, 0, 0);
    write_u32(buf, 4, 0);
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_graph_create(c, &g));
    CUgraphConditionalHandle h = 0;
    assert_ok(cus_graph_conditional_create(g, value, true, &h));
    assert_true(h != 0);
    cus_graph *bodies[2] = {NULL, NULL};
    cus_graph_node node = {0};
    assert_ok(cus_graph_add_conditional(g, NULL, 0, &node, h, CU_GRAPH_COND_TYPE_IF,
                                        with_else ? 2 : 1, bodies));
    assert_ptr_equal(node.graph, g);
    assert_non_null(bodies[0]);
    assert_ok(cus_graph_add_fill_u32(bodies[0], NULL, 0, NULL, buf, 0, 7, 1));
    if (with_else)
        assert_ok(cus_graph_add_fill_u32(bodies[1], NULL, 0, NULL, buf, 4, 9, 1));
    else
        assert_null(bodies[1]);
    /* The bodies' nodes are kept by the root, once. */
    assert_int_equal(cus_graph_kept_objects(g), 1);
    assert_int_equal(cus_graph_kept_objects(bodies[0]), 0);
    cus_graph_unref(bodies[0]);
    cus_graph_unref(bodies[1]);
    run_once(c, g);
}

/* cus_graph_destroy_node refuses a conditional node (its bodies would
 * dangle), before cuGraphDestroyNode; the graph still runs it. */
static void test_conditional_node_not_destroyed(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = NULL;
    cus_device dev;
    assert_ok(cus_device_get(0, &dev));
    assert_ok(cus_context_retain_primary(dev, &c));
    cus_autoptr(cus_buffer) buf = NULL;
    assert_ok(cus_buffer_alloc(c, 16, &buf));
    write_u32(buf, 0, 0);
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_graph_create(c, &g));
    CUgraphConditionalHandle h = 0;
    assert_ok(cus_graph_conditional_create(g, 1, true, &h));
    cus_autoptr(cus_graph) body = NULL;
    cus_graph_node node = {0};
    assert_ok(cus_graph_add_conditional(g, NULL, 0, &node, h, CU_GRAPH_COND_TYPE_IF, 1, &body));
    assert_ok(cus_graph_add_fill_u32(body, NULL, 0, NULL, buf, 0, 7, 1));
    unsigned long destroys = cus_fake_calls_of("cuGraphDestroyNode");
    assert_status(cus_graph_destroy_node(node), CUS_ERROR_NOT_SUPPORTED);
    assert_contains(cus_last_error_message(), "is a conditional node");
    assert_int_equal(cus_fake_calls_of("cuGraphDestroyNode"), destroys);
    run_once(c, g);
    assert_int_equal(read_u32(buf, 0), 7);
}

static void test_if_and_if_else(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_buffer) buf = new_buffer(c, 8);
    if_graph(c, buf, 0, false);
    assert_int_equal(read_u32(buf, 0), 0);
    if_graph(c, buf, 1, false);
    assert_int_equal(read_u32(buf, 0), 7);
    if_graph(c, buf, 5, true);
    assert_int_equal(read_u32(buf, 0), 7);
    assert_int_equal(read_u32(buf, 4), 0);
    if_graph(c, buf, 0, true);
    assert_int_equal(read_u32(buf, 0), 0);
    assert_int_equal(read_u32(buf, 4), 9);
}

/* SWITCH: body[v] fills buf[v] with 10 + v; a value past the bodies runs none. */
static void test_switch(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_buffer) buf = new_buffer(c, 12);
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_graph_create(c, &g));
    CUgraphConditionalHandle h = 0;
    assert_ok(cus_graph_conditional_create(g, 0, false, &h)); /* set from the host */
    cus_graph *bodies[3] = {NULL};
    assert_ok(
        cus_graph_add_conditional(g, NULL, 0, NULL, h, CU_GRAPH_COND_TYPE_SWITCH, 3, bodies));
    for (unsigned int i = 0; i < 3; i++) {
        assert_ok(cus_graph_add_fill_u32(bodies[i], NULL, 0, NULL, buf, i * 4, 10 + i, 1));
        cus_graph_unref(bodies[i]);
    }
    cus_autoptr(cus_graph_exec) e = instantiate(g);
    const unsigned int values[] = {2, 0, 3, 1};
    for (size_t k = 0; k < sizeof values / sizeof values[0]; k++) {
        assert_ok(cus_buffer_fill_u32_async(buf, 0, 0, 3, s)); /* before the launch on s */
        assert_ok(cus_fake_graph_set_conditional(h, values[k]));
        assert_ok(cus_graph_exec_launch(e, s));
        assert_ok(cus_stream_synchronize(s));
        for (unsigned int i = 0; i < 3; i++)
            assert_int_equal(read_u32(buf, i * 4), i == values[k] ? 10 + i : 0);
    }
    assert_int_equal(cus_fake_graph_set_conditional(12345, 1), CUS_ERROR_INVALID_ARGUMENT);
}

/* --- ownership ---------------------------------------------------------------------------------- */

/* The body keeps its parent; the root keeps what the body's nodes use; all
 * of it goes with the last reference. */
static void test_body_ownership(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    size_t objects = cus_debug_live_objects();
    cus_graph *g = NULL;
    assert_ok(cus_graph_create(c, &g));
    CUgraphConditionalHandle h = 0, inner = 0;
    assert_ok(cus_graph_conditional_create(g, 1, true, &h));
    cus_graph *body = NULL;
    assert_ok(cus_graph_add_conditional(g, NULL, 0, NULL, h, CU_GRAPH_COND_TYPE_IF, 1, &body));
    /* The user lets the parent go: the body still holds it. */
    g = cus_graph_unref(g);
    cus_graph *nested = NULL;
    {
        cus_autoptr(cus_buffer) buf = new_buffer(c, 8);
        assert_ok(cus_graph_add_fill_u32(body, NULL, 0, NULL, buf, 0, 3, 2));
        /* A conditional node in a body: its handle is the body's. */
        assert_ok(cus_graph_conditional_create(body, 1, true, &inner));
        assert_ok(cus_graph_add_conditional(body, NULL, 0, NULL, inner, CU_GRAPH_COND_TYPE_IF, 1,
                                            &nested));
        assert_ok(cus_graph_add_fill_u32(nested, NULL, 0, NULL, buf, 4, 5, 1));
    }
    /* A body is instantiated with its root only. */
    cus_graph_exec *e = NULL;
    assert_status(cus_graph_instantiate(body, 0, &e), CUS_ERROR_INVALID_ARGUMENT);
    assert_null(e);
    nested = cus_graph_unref(nested);
    body = cus_graph_unref(body);
    assert_int_equal(cus_debug_live_objects(), objects);
}

/* A handle made on a graph serves the conditional nodes of its bodies too
 * (cuda.h, cuGraphConditionalHandleCreate: "a conditional node in this graph
 * or one of its children"); one made on a body does not serve its parent. */
static void test_handle_of_an_enclosing_graph(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_buffer) buf = new_buffer(c, 8);
    write_u32(buf, 0, 0);
    write_u32(buf, 4, 0);
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_graph_create(c, &g));
    CUgraphConditionalHandle outer = 0, inner = 0;
    assert_ok(cus_graph_conditional_create(g, 1, true, &outer));
    cus_autoptr(cus_graph) body = NULL;
    assert_ok(cus_graph_add_conditional(g, NULL, 0, NULL, outer, CU_GRAPH_COND_TYPE_IF, 1, &body));
    assert_ok(cus_graph_conditional_create(body, 0, true, &inner));
    cus_graph *wrong = NULL;
    assert_status(
        cus_graph_add_conditional(g, NULL, 0, NULL, inner, CU_GRAPH_COND_TYPE_IF, 1, &wrong),
        CUS_ERROR_INVALID_ARGUMENT);
    assert_null(wrong);
    /* outer, one level down: runs (1); inner, there too: skipped (0). */
    cus_autoptr(cus_graph) runs = NULL;
    cus_autoptr(cus_graph) skipped = NULL;
    assert_ok(cus_graph_add_conditional(body, NULL, 0, NULL, outer, CU_GRAPH_COND_TYPE_IF, 1,
                                        &runs));
    assert_ok(cus_graph_add_conditional(body, NULL, 0, NULL, inner, CU_GRAPH_COND_TYPE_IF, 1,
                                        &skipped));
    assert_ok(cus_graph_add_fill_u32(runs, NULL, 0, NULL, buf, 0, 7, 1));
    assert_ok(cus_graph_add_fill_u32(skipped, NULL, 0, NULL, buf, 4, 9, 1));
    run_once(c, g);
    assert_int_equal(read_u32(buf, 0), 7);
    assert_int_equal(read_u32(buf, 4), 0);
}

/* A body filled by a capture (cuda.h, CUDA_CONDITIONAL_NODE_PARAMS:
 * "These graphs may be populated using graph node creation APIs or
 * cuStreamBeginCaptureToGraph"). */
static void test_body_captured_into(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_buffer) buf = new_buffer(c, 8);
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    write_u32(buf, 0, 0);
    write_u32(buf, 4, 0);
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_graph_create(c, &g));
    CUgraphConditionalHandle h = 0;
    assert_ok(cus_graph_conditional_create(g, 1, true, &h));
    cus_autoptr(cus_graph) body = NULL;
    assert_ok(cus_graph_add_conditional(g, NULL, 0, NULL, h, CU_GRAPH_COND_TYPE_IF, 1, &body));
    {
        cus_capture_scope_to_graph(cap, s, body, NULL, 0, CU_STREAM_CAPTURE_MODE_RELAXED);
        assert_ok(cap.status);
        assert_ok(cus_buffer_fill_u32_async(buf, 0, 5, 2, s));
    }
    size_t n = 0;
    assert_ok(cus_graph_node_count(body, &n));
    assert_int_equal(n, 1);
    run_once(c, g);
    assert_int_equal(read_u32(buf, 0), 5);
    assert_int_equal(read_u32(buf, 4), 5);
}

/* Every user reference but the executable graph's goes before the replays. */
static void test_keep_alive(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_host_buffer) out = new_pinned(c, 8);
    size_t buffers = cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY);
    cus_graph_exec *e = NULL;
    {
        cus_autoptr(cus_graph) g = NULL;
        assert_ok(cus_graph_create(c, &g));
        CUgraphConditionalHandle h = 0;
        assert_ok(cus_graph_conditional_create(g, 1, true, &h));
        cus_autoptr(cus_graph) body = NULL;
        cus_graph_node cond;
        assert_ok(
            cus_graph_add_conditional(g, NULL, 0, &cond, h, CU_GRAPH_COND_TYPE_IF, 1, &body));
        cus_autoptr(cus_buffer) buf = new_buffer(c, 8);
        assert_ok(cus_graph_add_fill_u32(body, NULL, 0, NULL, buf, 0, 0x55, 2));
        assert_ok(cus_graph_add_copy_to_host(g, &cond, 1, NULL, u32s(out), buf, 0, 8));
        assert_int_equal(cus_graph_kept_objects(g), 1);
        assert_ok(cus_graph_instantiate(g, 0, &e));
    }
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY), buffers + 1);
    for (int r = 0; r < 2; r++) {
        memset(u32s(out), 0, 8);
        assert_ok(cus_graph_exec_launch(e, s));
        assert_ok(cus_stream_synchronize(s));
        assert_int_equal(u32s(out)[0], 0x55);
        assert_int_equal(u32s(out)[1], 0x55);
    }
    e = cus_graph_exec_unref(e);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY), buffers);
}

/* --- bad input and driver failures -------------------------------------------------------------- */

static void test_bad_input(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    size_t objects = cus_debug_live_objects();
    cus_autoptr(cus_graph) g = NULL;
    cus_autoptr(cus_graph) other = NULL;
    assert_ok(cus_graph_create(c, &g));
    assert_ok(cus_graph_create(c, &other));
    CUgraphConditionalHandle h = 0, theirs = 0;
    assert_ok(cus_graph_conditional_create(g, 0, false, &h));
    assert_ok(cus_graph_conditional_create(other, 0, false, &theirs));
    cus_graph *body[2] = {NULL, NULL};
    assert_status(cus_graph_conditional_create(NULL, 0, false, &h), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_conditional_create(g, 0, false, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_add_conditional(g, NULL, 0, NULL, 0, CU_GRAPH_COND_TYPE_WHILE, 1, body),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(
        cus_graph_add_conditional(g, NULL, 0, NULL, theirs, CU_GRAPH_COND_TYPE_WHILE, 1, body),
        CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_add_conditional(g, NULL, 0, NULL, h, CU_GRAPH_COND_TYPE_WHILE, 2, body),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_add_conditional(g, NULL, 0, NULL, h, CU_GRAPH_COND_TYPE_IF, 3, body),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_add_conditional(g, NULL, 0, NULL, h, CU_GRAPH_COND_TYPE_SWITCH, 0, body),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_add_conditional(g, NULL, 0, NULL, h, (CUgraphConditionalNodeType)7, 1,
                                            body),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_add_conditional(g, NULL, 0, NULL, h, CU_GRAPH_COND_TYPE_IF, 1, NULL),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_add_conditional(NULL, NULL, 0, NULL, h, CU_GRAPH_COND_TYPE_IF, 1, body),
                  CUS_ERROR_INVALID_ARGUMENT);
    cus_graph_node foreign = {0};
    assert_ok(cus_graph_add_empty(other, NULL, 0, &foreign));
    assert_status(
        cus_graph_add_conditional(g, &foreign, 1, NULL, h, CU_GRAPH_COND_TYPE_IF, 1, body),
        CUS_ERROR_INVALID_ARGUMENT);
    assert_null(body[0]);
    size_t n = 1;
    assert_ok(cus_graph_node_count(g, &n));
    assert_int_equal(n, 0);
    g = cus_graph_unref(g);
    other = cus_graph_unref(other);
    assert_int_equal(cus_debug_live_objects(), objects);
}

static void test_driver_failures(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_graph_create(c, &g));
    size_t objects = cus_debug_live_objects();
    CUgraphConditionalHandle h = 0;
    assert_ok(cus_fake_fail_entry("cuGraphConditionalHandleCreate", 1, FAULT, false));
    assert_status(cus_graph_conditional_create(g, 1, true, &h), CU(FAULT));
    assert_string_equal(cus_last_error()->driver_call, "cuGraphConditionalHandleCreate");
    assert_true(h == 0);
    assert_ok(cus_graph_conditional_create(g, 1, true, &h));
    cus_graph *body = NULL;
    cus_graph_node node = {0};
    assert_ok(cus_fake_fail_entry("cuGraphAddNode", 1, FAULT, false));
    assert_status(
        cus_graph_add_conditional(g, NULL, 0, &node, h, CU_GRAPH_COND_TYPE_WHILE, 1, &body),
        CU(FAULT));
    assert_string_equal(cus_last_error()->driver_call, "cuGraphAddNode");
    assert_null(body);
    assert_null(node.handle);
    assert_int_equal(cus_debug_live_objects(), objects);
    size_t n = 1;
    assert_ok(cus_graph_node_count(g, &n));
    assert_int_equal(n, 0);
    assert_ok(cus_graph_add_conditional(g, NULL, 0, &node, h, CU_GRAPH_COND_TYPE_WHILE, 1, &body));
    body = cus_graph_unref(body);
}

/* Drivers before 12.3 have no conditional nodes; before 12.8, no SWITCH
 * and no IF/ELSE: CUS_ERROR_NOT_SUPPORTED naming the versions, before any
 * driver call of the node. */
static void test_older_drivers(void **state)
{
    (void)state;
    cus_fake_config cfg = {.driver_version = 12050};
    assert_int_equal(env_setup_with(&cfg), 0);
    {
        cus_autoptr(cus_context) c = new_primary();
        cus_autoptr(cus_graph) g = NULL;
        assert_ok(cus_graph_create(c, &g));
        CUgraphConditionalHandle h = 0;
        assert_ok(cus_graph_conditional_create(g, 0, true, &h));
        cus_graph *bodies[2] = {NULL, NULL};
        assert_status(
            cus_graph_add_conditional(g, NULL, 0, NULL, h, CU_GRAPH_COND_TYPE_SWITCH, 2, bodies),
            CUS_ERROR_NOT_SUPPORTED);
        assert_contains(cus_last_error_message(), "driver API 12.5");
        assert_contains(cus_last_error_message(), "SWITCH nodes need driver 12.8");
        assert_status(
            cus_graph_add_conditional(g, NULL, 0, NULL, h, CU_GRAPH_COND_TYPE_IF, 2, bodies),
            CUS_ERROR_NOT_SUPPORTED);
        assert_contains(cus_last_error_message(), "IF/ELSE");
        assert_null(bodies[0]);
        assert_ok(cus_graph_add_conditional(g, NULL, 0, NULL, h, CU_GRAPH_COND_TYPE_IF, 1, bodies));
        bodies[0] = cus_graph_unref(bodies[0]);
    }
    assert_int_equal(env_teardown(NULL), 0);
    cfg.driver_version = 12020;
    assert_int_equal(env_setup_with(&cfg), 0);
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_graph_create(c, &g));
    CUgraphConditionalHandle h = 0;
    assert_status(cus_graph_conditional_create(g, 0, true, &h), CUS_ERROR_NOT_SUPPORTED);
    assert_contains(cus_last_error_message(), "cuGraphConditionalHandleCreate");
    assert_contains(cus_last_error_message(), "12.3");
}

/* A WHILE loop whose value never becomes 0: the fake stops it after 1e6
 * passes (misuse, the context poisoned) instead of hanging. */
static void test_while_bounded(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_graph_create(c, &g));
    CUgraphConditionalHandle h = 0;
    assert_ok(cus_graph_conditional_create(g, 1, true, &h));
    cus_autoptr(cus_graph) body = NULL;
    assert_ok(cus_graph_add_conditional(g, NULL, 0, NULL, h, CU_GRAPH_COND_TYPE_WHILE, 1, &body));
    assert_ok(cus_graph_add_empty(body, NULL, 0, NULL));
    cus_autoptr(cus_graph_exec) e = instantiate(g);
    assert_ok(cus_graph_exec_launch(e, s));
    cus_status st = cus_stream_synchronize(s);
    assert_int_equal(st, CU(CUDA_ERROR_LAUNCH_FAILED));
    assert_int_equal(cus_fake_misuse_count(), 1);
    assert_contains(cus_fake_last_misuse(), "WHILE node ran its body 1000000 times");
}

/* The fake's cuGraphAddNode, raw: what it refuses, as the driver does
 * (and its own limit, the other node types). */
static void test_fake_add_node_raw(void **state)
{
    (void)state;
    PFN_cuGraphAddNode_v12030 add_node = NULL;
    PFN_cuGraphConditionalHandleCreate_v12030 handle_create = NULL;
    PFN_cuGraphDestroy_v10000 destroy = NULL;
    PFN_cuGraphInstantiateWithFlags_v11040 instantiate_raw = NULL;
    assert_int_equal(cus_fake_get_proc_address("cuGraphAddNode", (void **)&add_node, 12030, 0, NULL), 0);
    assert_int_equal(cus_fake_get_proc_address("cuGraphConditionalHandleCreate",
                                               (void **)&handle_create, 12030, 0, NULL), 0);
    assert_int_equal(cus_fake_get_proc_address("cuGraphDestroy", (void **)&destroy, 10000, 0, NULL), 0);
    assert_int_equal(cus_fake_get_proc_address("cuGraphInstantiateWithFlags",
                                               (void **)&instantiate_raw, 11040, 0, NULL), 0);
    cus_autoptr(cus_context) c = new_primary();
    cus_context_scope(guard, c);
    assert_ok(guard.status);
    CUcontext ctx = cus_context_handle(c);
    cus_autoptr(cus_graph) g = NULL;
    cus_autoptr(cus_graph) other = NULL;
    assert_ok(cus_graph_create(c, &g));
    assert_ok(cus_graph_create(c, &other));
    CUgraph hg = cus_graph_handle(g);
    CUgraphConditionalHandle h = 0, theirs = 0;
    assert_int_equal(handle_create(NULL, hg, ctx, 0, 0), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(handle_create(&h, hg, ctx, 0, 2), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(handle_create(&h, hg, NULL, 0, 0), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(handle_create(&h, hg, ctx, 0, 0), CUDA_SUCCESS);
    assert_int_equal(handle_create(&theirs, cus_graph_handle(other), ctx, 0, 0), CUDA_SUCCESS);
    CUgraph bodies[2] = {NULL, NULL};
    CUgraphNodeParams p;
    memset(&p, 0, sizeof p);
    p.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
    p.conditional.handle = h;
    p.conditional.type = CU_GRAPH_COND_TYPE_WHILE;
    p.conditional.size = 1;
    p.conditional.phGraph_out = bodies;
    p.conditional.ctx = ctx;
    CUgraphNode node = NULL;
    CUgraphNodeParams bad = p;
    bad.conditional.handle = theirs;
    assert_int_equal(add_node(&node, hg, NULL, NULL, 0, &bad), CUDA_ERROR_INVALID_VALUE);
    bad = p;
    bad.conditional.size = 2;
    assert_int_equal(add_node(&node, hg, NULL, NULL, 0, &bad), CUDA_ERROR_INVALID_VALUE);
    bad = p;
    bad.reserved2 = 1;
    assert_int_equal(add_node(&node, hg, NULL, NULL, 0, &bad), CUDA_ERROR_INVALID_VALUE);
    bad = p;
    bad.type = CU_GRAPH_NODE_TYPE_EMPTY;
    assert_int_equal(add_node(&node, hg, NULL, NULL, 0, &bad), CUDA_ERROR_NOT_SUPPORTED);
    assert_int_equal(add_node(&node, hg, NULL, NULL, 0, NULL), CUDA_ERROR_INVALID_VALUE);
    assert_null(node);
    assert_null(bodies[0]);
    /* phGraph_out is an output: NULL in, the driver's own array out (the
     * caller's array is not written). */
    p.conditional.phGraph_out = NULL;
    assert_int_equal(add_node(&node, hg, NULL, NULL, 0, &p), CUDA_SUCCESS);
    assert_non_null(node);
    assert_non_null(p.conditional.phGraph_out);
    assert_null(bodies[0]);
    bodies[0] = p.conditional.phGraph_out[0];
    assert_non_null(bodies[0]);
    /* The node's handle serves a node in its body too; the body's handle
     * does not serve the body's parent. */
    CUgraphConditionalHandle own = 0;
    assert_int_equal(handle_create(&own, bodies[0], ctx, 0, 0), CUDA_SUCCESS);
    CUgraphNodeParams nested = p;
    nested.conditional.phGraph_out = NULL;
    CUgraphNode inner_node = NULL;
    assert_int_equal(add_node(&inner_node, bodies[0], NULL, NULL, 0, &nested), CUDA_SUCCESS);
    assert_non_null(nested.conditional.phGraph_out);
    nested.conditional.handle = own;
    nested.conditional.phGraph_out = NULL;
    assert_int_equal(add_node(&inner_node, hg, NULL, NULL, 0, &nested), CUDA_ERROR_INVALID_VALUE);
    /* A body is neither instantiated nor destroyed on its own. */
    CUgraphExec x = NULL;
    assert_int_equal(instantiate_raw(&x, bodies[0], 0), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cus_fake_misuse_count(), 0);
    assert_int_equal(destroy(bodies[0]), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cus_fake_misuse_count(), 1);
    assert_contains(cus_fake_last_misuse(), "the body of a conditional node");
}

/* cus_graph_instantiate passes CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH
 * through, and the fake applies its rules to it: kernel, copy and memset
 * nodes only, so a conditional node is refused (whether the driver takes
 * conditional nodes in a device graph is not probed: a guess). */
static void test_device_launch_flag(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_buffer) buf = new_buffer(c, 16);
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_graph_create(c, &g));
    assert_ok(cus_graph_add_fill_u32(g, NULL, 0, NULL, buf, 0, 1, 4));
    cus_autoptr(cus_graph_exec) e = NULL;
    assert_ok(cus_graph_instantiate(g, CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH, &e));
    cus_autoptr(cus_graph) cond = NULL;
    assert_ok(cus_graph_create(c, &cond));
    CUgraphConditionalHandle h = 0;
    assert_ok(cus_graph_conditional_create(cond, 1, true, &h));
    cus_autoptr(cus_graph) body = NULL;
    assert_ok(cus_graph_add_conditional(cond, NULL, 0, NULL, h, CU_GRAPH_COND_TYPE_IF, 1, &body));
    cus_graph_exec *e2 = NULL;
    assert_status(cus_graph_instantiate(cond, CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH, &e2),
                  CU(CUDA_ERROR_INVALID_VALUE));
    assert_null(e2);
}

/* --- WHILE with the countdown kernel ------------------------------------------------------------- */

#ifdef CUS_TEST_HAVE_KERNELS
static unsigned long countdown_launches(unsigned long from)
{
    unsigned long n = 0, total = cus_fake_launch_count();
    for (unsigned long i = from; i < total; i++) {
        cus_fake_launch l;
        if (cus_fake_launch_at(i, &l) == CUS_SUCCESS && l.function && !strcmp(l.function, "countdown"))
            n++;
    }
    return n;
}

static void test_while_countdown(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_module) m = NULL;
    assert_ok(cus_module_load_data(c, cusk_countdown.fatbin, cusk_countdown.fatbin_size, NULL, &m));
    cus_autoptr(cus_function) fn = NULL;
    assert_ok(cus_module_get_function(m, "countdown", &fn));
    cus_autoptr(cus_buffer) counter = new_buffer(c, 4);
    const uint32_t n = 5;
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_graph_create(c, &g));
    CUgraphConditionalHandle h = 0;
    assert_ok(cus_graph_conditional_create(g, 1, true, &h));
    cus_graph_node init, loop;
    assert_ok(cus_graph_add_copy_to_device(g, NULL, 0, &init, counter, 0, &n, 4));
    cus_autoptr(cus_graph) body = NULL;
    assert_ok(cus_graph_add_conditional(g, &init, 1, &loop, h, CU_GRAPH_COND_TYPE_WHILE, 1, &body));
    /* The handle is a kernel argument like any 8-byte scalar. */
    assert_ok(cus_graph_add_kernel(body, NULL, 0, NULL, fn, 1, 32, 0, counter, h));
    cus_autoptr(cus_graph_exec) e = instantiate(g);
    for (int launch = 0; launch < 2; launch++) {
        unsigned long before = cus_fake_launch_count();
        assert_ok(cus_graph_exec_launch(e, s));
        assert_ok(cus_stream_synchronize(s));
        assert_int_equal(read_u32(counter, 0), 0);
        assert_int_equal(countdown_launches(before), n);
    }
}
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_if_and_if_else),
        ENV_TEST(test_conditional_node_not_destroyed),
        ENV_TEST(test_switch),
        ENV_TEST(test_body_ownership),
        ENV_TEST(test_handle_of_an_enclosing_graph),
        ENV_TEST(test_body_captured_into),
        ENV_TEST(test_keep_alive),
        ENV_TEST(test_bad_input),
        ENV_TEST(test_driver_failures),
        ENV_TEST(test_older_drivers),
        cmocka_unit_test_setup_teardown(test_while_bounded, env_setup, teardown_after_misuse),
        cmocka_unit_test_setup_teardown(test_fake_add_node_raw, env_setup, teardown_after_misuse),
        ENV_TEST(test_device_launch_flag),
#ifdef CUS_TEST_HAVE_KERNELS
        ENV_TEST(test_while_countdown),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
