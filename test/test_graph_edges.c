/* Edges with a kind (cus_graph_add_edges, cus_graph_remove_edges and the
 * _with_kinds lists of include/cuscope/graph_inspect.h) on the fake driver:
 *   - a programmatic edge and a launch-order edge between kernel nodes: the
 *     plain lists refuse them (CUDA_ERROR_LOSSY_QUERY, as the driver
 *     documents) but count them; the _with_kinds lists return each kind,
 *     at every capacity; the graph replays and computes;
 *   - removal by kind (the wrong kind does not match); default edges added
 *     without kinds;
 *   - clones keep the kinds; an executable graph's update to a graph whose
 *     edge kinds differ is refused;
 *   - a captured programmatic dependent launch after a kernel: a
 *     programmatic edge (after a fill: a default one);
 *   - the driver's rules (a programmatic edge from or to a node that is no
 *     kernel) and bad input before the driver (an unknown kind, a node of
 *     another graph, NULL arrays); every driver call failing;
 *   - nothing leaked (the harness's teardown). */
#include <cuscope/graph_inspect.h>
#include <cuscope/graph_nodes.h>

#include "graph_fixtures.h"

#ifdef CUS_TEST_HAVE_KERNELS

/* A graph of c: x and y uploaded (up), k1: y = 2x + y, k2: y = 3x + y after
 * k1, and y downloaded after k2 (down), which the caller joins with edges. */
typedef struct pair {
    cus_host_buffer *hx, *hy, *out;
    cus_buffer *x, *y;
    cus_graph *g;
    cus_graph_node up, k1, k2, down;
} pair;

static pair pair_open(cus_context *c, cus_function *fn)
{
    pair p = {.hx = new_pinned(c, G_N * 4), .hy = new_pinned(c, G_N * 4),
              .out = new_pinned(c, G_N * 4), .x = new_buffer(c, G_N * 4),
              .y = new_buffer(c, G_N * 4)};
    fill_floats(p.hx, 1.0f, 0.5f);
    fill_floats(p.hy, -3.0f, 0.25f);
    assert_ok(cus_graph_create(c, &p.g));
    cus_graph_node upx;
    assert_ok(cus_graph_add_copy_to_device(p.g, NULL, 0, &upx, p.x, 0, cus_host_buffer_data(p.hx),
                                           G_N * 4));
    assert_ok(cus_graph_add_copy_to_device(p.g, &upx, 1, &p.up, p.y, 0,
                                           cus_host_buffer_data(p.hy), G_N * 4));
    const unsigned long long n = G_N;
    assert_ok(cus_graph_add_kernel(p.g, &p.up, 1, &p.k1, fn, 2, 32, 0, 2.0f, p.x, p.y, n));
    assert_ok(cus_graph_add_kernel(p.g, NULL, 0, &p.k2, fn, 2, 32, 0, 3.0f, p.x, p.y, n));
    assert_ok(cus_graph_add_copy_to_host(p.g, NULL, 0, &p.down, cus_host_buffer_data(p.out), p.y,
                                         0, G_N * 4));
    return p;
}

static void pair_close(pair *p)
{
    p->g = cus_graph_unref(p->g);
    p->x = cus_buffer_unref(p->x);
    p->y = cus_buffer_unref(p->y);
    p->hx = cus_host_buffer_unref(p->hx);
    p->hy = cus_host_buffer_unref(p->hy);
    p->out = cus_host_buffer_unref(p->out);
}

/* out = 5x + y: both kernels ran, in order or not (they commute). */
static void replay_and_check(cus_graph_exec *e, cus_stream *s, const pair *p)
{
    memset(cus_host_buffer_data(p->out), 0, G_N * 4);
    assert_ok(cus_graph_exec_launch(e, s));
    assert_ok(cus_stream_synchronize(s));
    const float *o = cus_host_buffer_data(p->out), *x = cus_host_buffer_data(p->hx),
                *y = cus_host_buffer_data(p->hy);
    for (int i = 0; i < G_N; i++)
        assert_true(o[i] == 3.0f * x[i] + (2.0f * x[i] + y[i]));
}

static void test_programmatic_edges(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_function) fn = NULL;
    cus_autoptr(cus_module) m = load_saxpy(c, &fn);
    assert_non_null(m);
    pair p = pair_open(c, fn);
    /* k1 -> k2 programmatic; k2 -> down by launch order is refused (down is
     * no kernel), so a default edge there. */
    const cus_edge_kind prog = CUS_EDGE_PROGRAMMATIC;
    unsigned long calls = cus_fake_calls_of("cuGraphAddDependencies_v2");
    assert_ok(cus_graph_add_edges(p.g, &p.k1, &p.k2, &prog, 1));
    assert_ok(cus_graph_add_edges(p.g, &p.k2, &p.down, NULL, 1));
    assert_int_equal(cus_fake_calls_of("cuGraphAddDependencies_v2"), calls + 2);

    /* The plain lists would drop the kind: the driver refuses them. */
    cus_graph_node got[4];
    size_t n = 4;
    assert_status(cus_graph_node_dependencies(p.k2, got, &n), CUDA_ERROR_LOSSY_QUERY);
    n = 4;
    assert_status(cus_graph_node_dependents(p.k1, got, &n), CUDA_ERROR_LOSSY_QUERY);
    cus_graph_node from[8], to[8];
    n = 8;
    assert_status(cus_graph_edges(p.g, from, to, &n), CUDA_ERROR_LOSSY_QUERY);
    /* ... but count them. */
    n = 0;
    assert_ok(cus_graph_node_dependencies(p.k2, NULL, &n));
    assert_int_equal(n, 1);
    n = 0;
    assert_ok(cus_graph_edges(p.g, NULL, NULL, &n));
    assert_int_equal(n, 4); /* upx -> up, up -> k1, k1 -> k2, k2 -> down */
    /* A list without the programmatic edge is not lossy. */
    n = 4;
    assert_ok(cus_graph_node_dependencies(p.down, got, &n));
    assert_int_equal(n, 1);
    assert_ptr_equal(got[0].handle, p.k2.handle);

    cus_edge_kind kinds[8];
    n = 4;
    assert_ok(cus_graph_node_dependencies_with_kinds(p.k2, got, kinds, &n));
    assert_int_equal(n, 1);
    assert_ptr_equal(got[0].handle, p.k1.handle);
    assert_ptr_equal(got[0].graph, p.g);
    assert_int_equal(kinds[0], CUS_EDGE_PROGRAMMATIC);
    assert_null(got[1].handle); /* past the count, as the driver writes */
    n = 4;
    assert_ok(cus_graph_node_dependents_with_kinds(p.k1, got, kinds, &n));
    assert_int_equal(n, 1);
    assert_ptr_equal(got[0].handle, p.k2.handle);
    assert_int_equal(kinds[0], CUS_EDGE_PROGRAMMATIC);
    n = 8;
    assert_ok(cus_graph_edges_with_kinds(p.g, from, to, kinds, &n));
    assert_int_equal(n, 4);
    int programmatic = 0;
    for (size_t i = 0; i < n; i++) {
        bool k1k2 = from[i].handle == p.k1.handle && to[i].handle == p.k2.handle;
        assert_int_equal(kinds[i], k1k2 ? CUS_EDGE_PROGRAMMATIC : CUS_EDGE_DEFAULT);
        programmatic += k1k2;
    }
    assert_int_equal(programmatic, 1);
    /* A smaller capacity: the first entries, the count written. */
    n = 2;
    assert_ok(cus_graph_edges_with_kinds(p.g, from, to, kinds, &n));
    assert_int_equal(n, 2);
    n = 0;
    assert_ok(cus_graph_edges_with_kinds(p.g, NULL, NULL, NULL, &n));
    assert_int_equal(n, 4);

    /* The replays compute (the fake runs kernels in order). */
    cus_autoptr(cus_graph_exec) e = instantiate(p.g);
    replay_and_check(e, s, &p);
    replay_and_check(e, s, &p);

    /* A clone keeps the kind. */
    cus_autoptr(cus_graph) copy = NULL;
    assert_ok(cus_graph_clone(p.g, &copy));
    cus_graph_node ck2;
    assert_ok(cus_graph_node_in_clone(copy, p.k2, &ck2));
    n = 1;
    assert_ok(cus_graph_node_dependencies_with_kinds(ck2, got, kinds, &n));
    assert_int_equal(kinds[0], CUS_EDGE_PROGRAMMATIC);

    /* Removal by kind: the default kind does not match a programmatic edge. */
    assert_status(cus_graph_remove_edges(p.g, &p.k1, &p.k2, NULL, 1), CUDA_ERROR_INVALID_VALUE);
    assert_ok(cus_graph_remove_edges(p.g, &p.k1, &p.k2, &prog, 1));
    n = 4;
    assert_ok(cus_graph_node_dependencies(p.k2, got, &n)); /* no longer lossy */
    assert_int_equal(n, 0);
    /* A launch-order edge instead. */
    const cus_edge_kind order = CUS_EDGE_LAUNCH_ORDER;
    assert_ok(cus_graph_add_edges(p.g, &p.k1, &p.k2, &order, 1));
    n = 1;
    assert_ok(cus_graph_node_dependencies_with_kinds(p.k2, got, kinds, &n));
    assert_int_equal(kinds[0], CUS_EDGE_LAUNCH_ORDER);
    /* The executable graph of the programmatic edge: an update to the
     * launch-order one changes the topology, which the driver refuses. */
    CUgraphExecUpdateResult why = CU_GRAPH_EXEC_UPDATE_SUCCESS;
    assert_status(cus_graph_exec_update(e, p.g, &why), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
    assert_int_equal(why, CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
    replay_and_check(e, s, &p); /* it still replays what it had */
    assert_int_equal(cus_graph_kept_objects(p.g), 3); /* x, y, the module: nothing for edges */
    pair_close(&p);
}

/* What the driver refuses, and what cuscope refuses before it. */
static void test_rules_and_bad_input(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_function) fn = NULL;
    cus_autoptr(cus_module) m = load_saxpy(c, &fn);
    assert_non_null(m);
    pair p = pair_open(c, fn);
    const cus_edge_kind prog = CUS_EDGE_PROGRAMMATIC, order = CUS_EDGE_LAUNCH_ORDER;
    /* Programmatic edges join kernel nodes only. */
    assert_status(cus_graph_add_edges(p.g, &p.up, &p.k2, &prog, 1), CUDA_ERROR_INVALID_VALUE);
    assert_string_equal(cus_last_error()->driver_call, "cuGraphAddDependencies");
    assert_status(cus_graph_add_edges(p.g, &p.k2, &p.down, &prog, 1), CUDA_ERROR_INVALID_VALUE);
    assert_status(cus_graph_add_edges(p.g, &p.k2, &p.down, &order, 1), CUDA_ERROR_INVALID_VALUE);
    /* An edge that exists, whatever its kind. */
    assert_status(cus_graph_add_edges(p.g, &p.up, &p.k1, NULL, 1), CUDA_ERROR_INVALID_VALUE);
    assert_status(cus_graph_add_edges(p.g, &p.up, &p.k1, &prog, 1), CUDA_ERROR_INVALID_VALUE);
    /* A cycle. */
    assert_ok(cus_graph_add_edges(p.g, &p.k1, &p.k2, &prog, 1));
    assert_status(cus_graph_add_edges(p.g, &p.k2, &p.k1, &prog, 1), CUDA_ERROR_INVALID_VALUE);
    size_t n = 0;
    assert_ok(cus_graph_edges(p.g, NULL, NULL, &n));
    assert_int_equal(n, 3); /* upx -> up, up -> k1, k1 -> k2: nothing else added */

    cus_autoptr(cus_graph) other = NULL;
    assert_ok(cus_graph_create(c, &other));
    cus_graph_node far;
    assert_ok(cus_graph_add_empty(other, NULL, 0, &far));
    unsigned long calls = cus_fake_call_count();
    const cus_edge_kind bad = (cus_edge_kind)3;
    assert_status(cus_graph_add_edges(p.g, &p.k2, &p.down, &bad, 1), CUS_ERROR_INVALID_ARGUMENT);
    assert_contains(cus_last_error_message(), "kind 1 is 3, not a cus_edge_kind");
    assert_status(cus_graph_remove_edges(p.g, &p.k1, &p.k2, &bad, 1), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_add_edges(p.g, NULL, &p.k2, NULL, 1), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_add_edges(NULL, &p.k1, &p.k2, NULL, 1), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_add_edges(p.g, &far, &p.k2, NULL, 1), CUS_ERROR_INVALID_ARGUMENT);
    assert_contains(cus_last_error_message(), "a node of another graph");
    cus_graph_node got[2];
    cus_edge_kind kinds[2];
    n = 2;
    assert_status(cus_graph_node_dependencies_with_kinds(p.k2, got, NULL, &n),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_node_dependencies_with_kinds((cus_graph_node){0}, got, kinds, &n),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_edges_with_kinds(p.g, got, got, NULL, &n),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_edges_with_kinds(p.g, got, NULL, kinds, &n),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(cus_fake_call_count(), calls);
    /* No edges: nothing to do, no driver call. */
    assert_ok(cus_graph_add_edges(p.g, NULL, NULL, NULL, 0));
    assert_ok(cus_graph_remove_edges(p.g, NULL, NULL, NULL, 0));
    assert_int_equal(cus_fake_call_count(), calls);
    pair_close(&p);
}

/* More edges than the inline arrays hold: n kernel nodes each with a
 * programmatic edge to one sink, and n default edges from a source. */
static void test_long_lists(void **state)
{
    (void)state;
    enum { K = 37 };
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_function) fn = NULL;
    cus_autoptr(cus_module) m = load_saxpy(c, &fn);
    assert_non_null(m);
    cus_autoptr(cus_buffer) x = new_buffer(c, G_N * 4);
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_graph_create(c, &g));
    const unsigned long long n = G_N;
    cus_graph_node ks[K], sink[K], source;
    cus_edge_kind kinds[K];
    assert_ok(cus_graph_add_empty(g, NULL, 0, &source));
    cus_graph_node sink_node;
    assert_ok(cus_graph_add_kernel(g, NULL, 0, &sink_node, fn, 1, 32, 0, 1.0f, x, x, n));
    for (int i = 0; i < K; i++) {
        assert_ok(cus_graph_add_kernel(g, NULL, 0, &ks[i], fn, 1, 32, 0, 1.0f, x, x, n));
        sink[i] = sink_node;
        kinds[i] = i % 2 ? CUS_EDGE_PROGRAMMATIC : CUS_EDGE_LAUNCH_ORDER;
    }
    cus_graph_node sources[K];
    for (int i = 0; i < K; i++)
        sources[i] = source;
    assert_ok(cus_graph_add_edges(g, sources, ks, NULL, K));
    assert_ok(cus_graph_add_edges(g, ks, sink, kinds, K));
    cus_graph_node got[K + 1];
    cus_edge_kind got_kinds[K + 1];
    for (size_t cap = 1; cap <= K + 1; cap += 6) {
        size_t count = cap;
        memset(got, 0x5a, sizeof got);
        assert_ok(cus_graph_node_dependencies_with_kinds(sink_node, got, got_kinds, &count));
        assert_int_equal(count, cap < K ? cap : K);
        for (size_t i = 0; i < count; i++) {
            int which = -1;
            for (int k = 0; k < K; k++)
                if (got[i].handle == ks[k].handle)
                    which = k;
            assert_true(which >= 0);
            assert_int_equal(got_kinds[i], kinds[which]);
        }
        unsigned char untouched[sizeof got[0]];
        memset(untouched, 0x5a, sizeof untouched);
        for (size_t i = cap; i < K + 1; i++)
            assert_memory_equal(&got[i], untouched, sizeof untouched);
    }
    size_t count = K + 1;
    assert_ok(cus_graph_node_dependents_with_kinds(source, got, got_kinds, &count));
    assert_int_equal(count, K);
    for (size_t i = 0; i < count; i++)
        assert_int_equal(got_kinds[i], CUS_EDGE_DEFAULT);
    assert_ok(cus_graph_remove_edges(g, ks, sink, kinds, K));
    count = 0;
    assert_ok(cus_graph_edges(g, NULL, NULL, &count));
    assert_int_equal(count, K);
}

static void test_driver_failures(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_function) fn = NULL;
    cus_autoptr(cus_module) m = load_saxpy(c, &fn);
    assert_non_null(m);
    pair p = pair_open(c, fn);
    const cus_edge_kind prog = CUS_EDGE_PROGRAMMATIC;
    assert_ok(cus_fake_fail_entry("cuGraphAddDependencies_v2", 1, FAULT, false));
    assert_status(cus_graph_add_edges(p.g, &p.k1, &p.k2, &prog, 1), CU(FAULT));
    assert_string_equal(cus_last_error()->driver_call, "cuGraphAddDependencies");
    size_t n = 0;
    assert_ok(cus_graph_edges(p.g, NULL, NULL, &n));
    assert_int_equal(n, 2);
    assert_ok(cus_graph_add_edges(p.g, &p.k1, &p.k2, &prog, 1));
    cus_graph_node got[4], to[4];
    cus_edge_kind kinds[4];
    n = 4;
    assert_ok(cus_fake_fail_entry("cuGraphNodeGetDependencies_v2", 1, FAULT, false));
    assert_status(cus_graph_node_dependencies_with_kinds(p.k2, got, kinds, &n), CU(FAULT));
    assert_int_equal(n, 4); /* untouched */
    assert_ok(cus_fake_fail_entry("cuGraphNodeGetDependentNodes_v2", 1, FAULT, false));
    assert_status(cus_graph_node_dependents_with_kinds(p.k1, got, kinds, &n), CU(FAULT));
    assert_ok(cus_fake_fail_entry("cuGraphGetEdges_v2", 1, FAULT, false));
    assert_status(cus_graph_edges_with_kinds(p.g, got, to, kinds, &n), CU(FAULT));
    assert_string_equal(cus_last_error()->driver_call, "cuGraphGetEdges");
    assert_ok(cus_fake_fail_entry("cuGraphRemoveDependencies_v2", 1, FAULT, false));
    assert_status(cus_graph_remove_edges(p.g, &p.k1, &p.k2, &prog, 1), CU(FAULT));
    /* The switch to the graph's context. */
    cus_autoptr(cus_context) other = new_ctx();
    {
        cus_context_scope(scope, other);
        assert_ok(scope.status);
        assert_ok(cus_fake_fail_entry("cuCtxPushCurrent", 1, FAULT, false));
        assert_status(cus_graph_remove_edges(p.g, &p.k1, &p.k2, &prog, 1), CU(FAULT));
    }
    assert_ok(cus_graph_remove_edges(p.g, &p.k1, &p.k2, &prog, 1));
    /* Out of host memory for the scratch lists: a capacity past the inline
     * ones (a short list allocates nothing). */
    enum { BIG = 20 };
    cus_graph_node big_from[BIG], big_to[BIG];
    cus_edge_kind big_kinds[BIG];
    for (unsigned long nth = 1; nth <= 2; nth++) {
        cus_debug_fail_host_alloc(nth, false);
        n = BIG;
        assert_status(cus_graph_edges_with_kinds(p.g, big_from, big_to, big_kinds, &n),
                      CUS_ERROR_OUT_OF_HOST_MEMORY);
        assert_int_equal(n, BIG);
        cus_debug_fail_host_alloc(nth, false);
        assert_status(cus_graph_node_dependencies_with_kinds(p.k2, big_from, big_kinds, &n),
                      CUS_ERROR_OUT_OF_HOST_MEMORY);
        cus_debug_fail_host_alloc(0, false);
    }
    cus_debug_fail_host_alloc(1, false);
    n = 4;
    assert_ok(cus_graph_edges_with_kinds(p.g, got, to, kinds, &n)); /* no allocation */
    cus_debug_fail_host_alloc(0, false);
    pair_close(&p);
}

/* A captured programmatic dependent launch: its edge from the kernel
 * before it is a programmatic one (the CUDA Programming Guide's PDL in
 * captured graphs), read with its kind; the plain list is lossy. */
static void test_captured_pdl_edge(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_function) fn = NULL;
    cus_autoptr(cus_module) m = load_saxpy(c, &fn);
    assert_non_null(m);
    cus_autoptr(cus_buffer) x = new_buffer(c, G_N * 4);
    cus_autoptr(cus_buffer) y = new_buffer(c, G_N * 4);
    const unsigned long long n = G_N;
    const cus_launch_config pdl = {.grid = {2, 1, 1}, .block = {32, 1, 1}, .stream = s,
                                   .programmatic_serialization = true};
    cus_autoptr(cus_graph) g = NULL;
    {
        cus_capture_scope(cap, s, CU_STREAM_CAPTURE_MODE_GLOBAL);
        assert_ok(cap.status);
        assert_ok(cus_buffer_fill_u32_async(y, 0, 0, G_N, s));
        assert_ok(cus_launch(fn, 2, 32, 0, s, 1.0f, x, y, n));
        assert_ok(cus_launch_ex(fn, &pdl, 1.0f, x, y, n)); /* after a kernel: programmatic */
        assert_ok(cus_capture_end(&cap, &g));
    }
    cus_graph_node from[4], to[4];
    cus_edge_kind kinds[4];
    size_t count = 4;
    assert_status(cus_graph_edges(g, from, to, &count), CUDA_ERROR_LOSSY_QUERY);
    count = 4;
    assert_ok(cus_graph_edges_with_kinds(g, from, to, kinds, &count));
    assert_int_equal(count, 2); /* fill -> first kernel, first -> second */
    int programmatic = 0;
    for (size_t i = 0; i < count; i++)
        programmatic += kinds[i] == CUS_EDGE_PROGRAMMATIC;
    assert_int_equal(programmatic, 1);
    /* A PDL launch after a fill: its edge stays a default one. */
    cus_autoptr(cus_graph) g2 = NULL;
    {
        cus_capture_scope(cap, s, CU_STREAM_CAPTURE_MODE_GLOBAL);
        assert_ok(cap.status);
        assert_ok(cus_buffer_fill_u32_async(y, 0, 0, G_N, s));
        assert_ok(cus_launch_ex(fn, &pdl, 1.0f, x, y, n));
        assert_ok(cus_capture_end(&cap, &g2));
    }
    count = 4;
    assert_ok(cus_graph_edges(g2, from, to, &count));
    assert_int_equal(count, 1);
    cus_autoptr(cus_graph_exec) e = instantiate(g);
    assert_ok(cus_graph_exec_launch(e, s));
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(atomic_load(&saxpy_runs), 2);
}

#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
#ifdef CUS_TEST_HAVE_KERNELS
        ENV_TEST(test_programmatic_edges),
        ENV_TEST(test_rules_and_bad_input),
        ENV_TEST(test_long_lists),
        ENV_TEST(test_driver_failures),
        ENV_TEST(test_captured_pdl_edge),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
