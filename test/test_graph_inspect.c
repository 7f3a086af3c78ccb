/* Graph inspection and editing (include/cuscope/graph_inspect.h) on the
 * fake driver:
 *   - node types, dependency and dependent lists, a graph's edges (count
 *     only, a larger and a smaller capacity), the edges after removals;
 *   - a node destroyed: its edges go, what the graph kept stays, an
 *     executable graph made before still replays it;
 *   - clones: launched after the original and every object it used were
 *     released, the clone still computes, its nodes are found from the
 *     original's, and nothing leaks; a graph the driver cannot clone;
 *   - per-node updates: an event record node switched to other events (the
 *     one an update replaced released, at once or after the replays), a host
 *     function node, a child graph node (and one of another topology);
 *   - a host node's function read back (added, set, cloned, captured, raw);
 *   - a child graph node's own graph (cus_graph_child_graph): changed, in
 *     the executable graphs made after it only, not in clones made before;
 *     nested; the lent node not destroyed; outliving its graph;
 *   - enabled state, instantiation flags, instantiation with parameters
 *     (upload stream, the driver's result and offending node reported);
 *   - the DOT file written (a line per node and per edge);
 *   - every driver call's failure (cus_fake_fail_entry), changing nothing;
 *   - bad input refused before the driver, and drivers before 12.3;
 *   - nothing leaked (the harness's teardown). */
#include <unistd.h>

#include <cuscope/graph_conditional.h>
#include <cudaTypedefs.h>

#include <cuscope/driver.h>
#include <cuscope/graph_inspect.h>

#include "graph_fixtures.h"

static size_t node_count(cus_graph *g)
{
    size_t n = 0;
    assert_ok(cus_graph_node_count(g, &n));
    return n;
}

static size_t edge_count(cus_graph *g)
{
    size_t n = 0;
    assert_ok(cus_graph_edges(g, NULL, NULL, &n));
    return n;
}

static bool has_node(const cus_graph_node *list, size_t n, cus_graph_node want)
{
    for (size_t i = 0; i < n; i++)
        if (list[i].handle == want.handle && list[i].graph == want.graph)
            return true;
    return false;
}

/* --- types, lists, edges ----------------------------------------------------------------------- */

static void test_types_and_edges(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_buffer) buf = new_buffer(c, 64);
    cus_autoptr(cus_event) ev = new_event(c, CU_EVENT_DISABLE_TIMING);
    atomic_int counter = 0;
    cus_autoptr(cus_graph) child = NULL;
    assert_ok(cus_graph_create(c, &child));
    assert_ok(cus_graph_add_empty(child, NULL, 0, NULL));
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_graph_create(c, &g));
    /* a -> fill -> host, a -> host, a -> sub; rec alone */
    cus_graph_node a, fill, host, sub, rec;
    assert_ok(cus_graph_add_empty(g, NULL, 0, &a));
    assert_ok(cus_graph_add_fill_u32(g, &a, 1, &fill, buf, 0, 7, 16));
    cus_graph_node both[2] = {a, fill};
    assert_ok(cus_graph_add_host_fn(g, both, 2, &host, count_up, &counter));
    assert_ok(cus_graph_add_child(g, &a, 1, &sub, child));
    assert_ok(cus_graph_add_event_record(g, NULL, 0, &rec, ev));
    CUgraphNodeType t;
    assert_ok(cus_graph_node_type(a, &t));
    assert_int_equal(t, CU_GRAPH_NODE_TYPE_EMPTY);
    assert_ok(cus_graph_node_type(fill, &t));
    assert_int_equal(t, CU_GRAPH_NODE_TYPE_MEMSET);
    assert_ok(cus_graph_node_type(host, &t));
    assert_int_equal(t, CU_GRAPH_NODE_TYPE_HOST);
    assert_ok(cus_graph_node_type(sub, &t));
    assert_int_equal(t, CU_GRAPH_NODE_TYPE_GRAPH);
    assert_ok(cus_graph_node_type(rec, &t));
    assert_int_equal(t, CU_GRAPH_NODE_TYPE_EVENT_RECORD);

    /* Counts alone, then the lists. */
    size_t n = 0;
    assert_ok(cus_graph_node_dependencies(host, NULL, &n));
    assert_int_equal(n, 2);
    cus_graph_node list[8];
    n = 8;
    assert_ok(cus_graph_node_dependencies(host, list, &n));
    assert_int_equal(n, 2); /* a larger capacity: the count written back */
    assert_true(has_node(list, n, a) && has_node(list, n, fill));
    assert_ptr_equal(list[0].graph, g);
    n = 8;
    assert_ok(cus_graph_node_dependents(a, list, &n));
    assert_int_equal(n, 3);
    assert_true(has_node(list, n, fill) && has_node(list, n, host) && has_node(list, n, sub));
    n = 1; /* a smaller one: filled to it */
    assert_ok(cus_graph_node_dependents(a, list, &n));
    assert_int_equal(n, 1);
    n = 8;
    assert_ok(cus_graph_node_dependencies(rec, list, &n));
    assert_int_equal(n, 0);
    assert_int_equal(edge_count(g), 4);
    cus_graph_node from[8], to[8];
    n = 8;
    assert_ok(cus_graph_edges(g, from, to, &n));
    assert_int_equal(n, 4);
    bool a_host = false;
    for (size_t i = 0; i < n; i++)
        a_host |= from[i].handle == a.handle && to[i].handle == host.handle;
    assert_true(a_host);

    /* Removing edges: a -> host goes, and host still follows fill. */
    assert_ok(cus_graph_remove_dependencies(g, &a, &host, 1));
    assert_int_equal(edge_count(g), 3);
    n = 8;
    assert_ok(cus_graph_node_dependencies(host, list, &n));
    assert_int_equal(n, 1);
    assert_ptr_equal(list[0].handle, fill.handle);
    /* An edge that does not exist is the driver's to refuse. */
    assert_status(cus_graph_remove_dependencies(g, &a, &host, 1), CUDA_ERROR_INVALID_VALUE);
    assert_ok(cus_graph_remove_dependencies(g, NULL, NULL, 0));
    /* The graph still runs, in order. */
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_graph_exec) e = instantiate(g);
    assert_ok(cus_graph_exec_launch(e, s));
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(atomic_load(&counter), 1);
}

/* Lists of many nodes: the driver writes its handles into the caller's
 * array, which cuscope widens in place into node values; every one must
 * come out whole, in any length, and nothing past the capacity touched. */
static void test_long_lists(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_graph_create(c, &g));
    enum { N = 37 };
    cus_graph_node made[N], sink;
    for (int i = 0; i < N; i++)
        assert_ok(cus_graph_add_empty(g, NULL, 0, &made[i]));
    assert_ok(cus_graph_add_empty(g, made, N, &sink));
    const cus_graph_node guard = {(CUgraphNode)(uintptr_t)0x5a5a, NULL};
    for (size_t cap = 1; cap <= N + 1; cap += 6) {
        cus_graph_node list[N + 3];
        for (size_t i = 0; i < N + 3; i++)
            list[i] = guard;
        size_t n = cap;
        assert_ok(cus_graph_node_dependencies(sink, list, &n));
        size_t filled = cap < N ? cap : N;
        assert_int_equal(n, filled); /* the capacity, or the count when smaller */
        for (size_t i = 0; i < filled; i++) {
            assert_true(has_node(made, N, list[i]));
            assert_ptr_equal(list[i].graph, g);
            for (size_t j = 0; j < i; j++)
                assert_true(list[j].handle != list[i].handle);
        }
        for (size_t i = filled; i < cap; i++) /* past the count: NULL, as the driver's */
            assert_true(list[i].handle == NULL && list[i].graph == NULL);
        for (size_t i = cap; i < N + 3; i++) /* past the capacity: untouched */
            assert_true(list[i].handle == guard.handle && list[i].graph == NULL);
        /* the graph's own list, roots and all */
        for (size_t i = 0; i < N + 3; i++)
            list[i] = guard;
        n = cap;
        assert_ok(cus_graph_nodes(g, list, &n));
        filled = cap < N + 1 ? cap : N + 1;
        assert_int_equal(n, filled);
        for (size_t i = 0; i < filled; i++) {
            assert_true(has_node(made, N, list[i]) || list[i].handle == sink.handle);
            assert_ptr_equal(list[i].graph, g);
        }
        for (size_t i = cap; i < N + 3; i++)
            assert_true(list[i].handle == guard.handle);
    }
}

/* --- destroying a node ----------------------------------------------------------------------- */

static void test_destroy_node(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_buffer) buf = new_buffer(c, G_N * 4);
    cus_autoptr(cus_host_buffer) out = new_pinned(c, G_N * 4);
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_graph_create(c, &g));
    /* fill 1 -> fill 2 -> down: without the second fill, down copies 1s. */
    cus_graph_node f1, f2, down;
    assert_ok(cus_graph_add_fill_u32(g, NULL, 0, &f1, buf, 0, 1, G_N));
    assert_ok(cus_graph_add_fill_u32(g, &f1, 1, &f2, buf, 0, 2, G_N));
    assert_ok(cus_graph_add_copy_to_host(g, &f2, 1, &down, u32s(out), buf, 0, G_N * 4));
    cus_autoptr(cus_graph_exec) before = instantiate(g);
    size_t kept = cus_graph_kept_objects(g);
    assert_ok(cus_graph_destroy_node(f2));
    assert_int_equal(node_count(g), 2);
    assert_int_equal(edge_count(g), 0); /* f1 -> f2 and f2 -> down went with f2 */
    assert_int_equal(cus_graph_kept_objects(g), kept); /* kept until the graph dies */
    assert_ok(cus_graph_add_dependencies(g, &f1, &down, 1));
    cus_autoptr(cus_graph_exec) after = instantiate(g);
    assert_ok(cus_graph_exec_launch(after, s));
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(u32s(out)[0], 1u);
    /* The executable graph made before still has the node. */
    assert_ok(cus_graph_exec_launch(before, s));
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(u32s(out)[G_N - 1], 2u);
}

/* --- clones ----------------------------------------------------------------------------------- */

static void test_clone_outlives_everything(void **state)
{
    (void)state;
    size_t base = cus_debug_live_objects();
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_host_buffer) in = new_pinned(c, G_N * 4);
    cus_autoptr(cus_host_buffer) out = new_pinned(c, G_N * 4);
    seed(u32s(in), 40);
    atomic_int counter = 0;
    cus_graph *copy = NULL;
    cus_graph_node copy_fill = {0};
    {
        cus_autoptr(cus_buffer) buf = new_buffer(c, G_N * 4);
        cus_autoptr(cus_graph) g = NULL;
        assert_ok(cus_graph_create(c, &g));
        cus_graph_node up, fill, down, host;
        assert_ok(cus_graph_add_copy_to_device(g, NULL, 0, &up, buf, 0, u32s(in), G_N * 4));
        assert_ok(cus_graph_add_fill_u32(g, &up, 1, &fill, buf, 0, 5, G_N / 2));
        assert_ok(cus_graph_add_copy_to_host(g, &fill, 1, &down, u32s(out), buf, 0, G_N * 4));
        assert_ok(cus_graph_add_host_fn(g, &down, 1, &host, count_up, &counter));
        assert_ok(cus_graph_clone(g, &copy));
        assert_non_null(copy);
        assert_ptr_equal(cus_graph_context(copy), c);
        assert_int_equal(node_count(copy), 4);
        assert_int_equal(edge_count(copy), 3);
        /* It holds the original, which keeps the buffer and the record. */
        assert_int_equal(cus_graph_kept_objects(copy), 1);
        assert_ok(cus_graph_node_in_clone(copy, fill, &copy_fill));
        assert_ptr_equal(copy_fill.graph, copy);
        assert_ptr_not_equal(copy_fill.handle, fill.handle);
        CUgraphNodeType t;
        assert_ok(cus_graph_node_type(copy_fill, &t));
        assert_int_equal(t, CU_GRAPH_NODE_TYPE_MEMSET);
        /* A node that is none of the original's. */
        cus_graph_node later;
        assert_ok(cus_graph_add_empty(g, NULL, 0, &later));
        cus_graph_node none = {0};
        assert_status(cus_graph_node_in_clone(copy, later, &none), CUDA_ERROR_INVALID_VALUE);
        assert_null(none.handle);
        assert_int_equal(node_count(copy), 4); /* the original's change did not reach it */
        /* The original first, then everything it used. */
        cus_autoptr(cus_graph_exec) e = instantiate(g);
        assert_ok(cus_graph_exec_launch(e, s));
        assert_ok(cus_stream_synchronize(s));
    }
    assert_int_equal(atomic_load(&counter), 1);
    memset(u32s(out), 0, G_N * 4);
    cus_graph_exec *e2 = instantiate(copy);
    copy = cus_graph_unref(copy);
    assert_ok(cus_graph_exec_launch(e2, s));
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(atomic_load(&counter), 2);
    for (int i = 0; i < G_N; i++)
        assert_int_equal(u32s(out)[i], i < G_N / 2 ? 5u : 40u + (uint32_t)i * 3u);
    e2 = cus_graph_exec_unref(e2);
    /* The clone, the original, the buffer: all gone. */
    cus_stream *sp = cus_steal(&s);
    cus_stream_unref(sp);
    cus_host_buffer_unref(cus_steal(&in));
    cus_host_buffer_unref(cus_steal(&out));
    cus_context_unref(cus_steal(&c));
    assert_int_equal(cus_debug_live_objects(), base);
}

/* A clone of a graph that keeps nothing keeps nothing; a clone is a graph
 * like any: changed by hand apart from its original. */
static void test_clone_is_a_graph(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_graph_create(c, &g));
    cus_graph_node a;
    assert_ok(cus_graph_add_empty(g, NULL, 0, &a));
    cus_autoptr(cus_graph) copy = NULL;
    assert_ok(cus_graph_clone(g, &copy));
    assert_int_equal(cus_graph_kept_objects(copy), 0);
    cus_graph_node ca;
    assert_ok(cus_graph_node_in_clone(copy, a, &ca));
    assert_ok(cus_graph_add_empty(copy, &ca, 1, NULL));
    assert_int_equal(node_count(copy), 2);
    assert_int_equal(node_count(g), 1);
    /* The original's node is no node of the clone. */
    assert_status(cus_graph_add_empty(copy, &a, 1, NULL), CUS_ERROR_INVALID_ARGUMENT);
    cus_autoptr(cus_graph) again = NULL;
    assert_ok(cus_graph_clone(copy, &again));
    assert_int_equal(node_count(again), 2);
}

/* The driver does not clone graphs with conditional nodes. */
static void test_clone_refused(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_graph_create(c, &g));
    CUgraphConditionalHandle h = 0;
    assert_ok(cus_graph_conditional_create(g, 0, true, &h));
    cus_graph *bodies[1] = {NULL};
    assert_ok(cus_graph_add_conditional(g, NULL, 0, NULL, h, CU_GRAPH_COND_TYPE_IF, 1, bodies));
    bodies[0] = cus_graph_unref(bodies[0]);
    size_t objects = cus_debug_live_objects();
    cus_graph *copy = NULL;
    assert_status(cus_graph_clone(g, &copy), CUDA_ERROR_INVALID_VALUE);
    assert_string_equal(cus_last_error()->driver_call, "cuGraphClone");
    assert_null(copy);
    assert_int_equal(cus_debug_live_objects(), objects);
}

/* --- per-node updates ------------------------------------------------------------------------ */

static void test_event_record_update(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_event) start = new_event(c, 0);
    cus_autoptr(cus_event) ev1 = new_event(c, 0);
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_graph_create(c, &g));
    cus_graph_node rec;
    assert_ok(cus_graph_add_event_record(g, NULL, 0, &rec, ev1));
    cus_autoptr(cus_graph_exec) e = instantiate(g);
    cus_event *ev2 = new_event(c, 0);
    cus_event *ev3 = new_event(c, 0);
    size_t objects = cus_debug_live_objects();
    size_t events = cus_fake_live_handles(CUS_FAKE_HANDLE_EVENT);
    float ms = -1;
    assert_ok(cus_graph_exec_set_event_record(e, rec, ev2));
    /* The replay records ev2 (timed from start); ev3, never recorded, has
     * no time yet. */
    assert_ok(cus_event_record(start, s));
    assert_ok(cus_graph_exec_launch(e, s));
    assert_ok(cus_stream_synchronize(s));
    assert_ok(cus_event_elapsed_ms(start, ev2, &ms));
    assert_true(cus_event_elapsed_ms(start, ev3, &ms) != CUS_SUCCESS);
    ev2 = cus_event_unref(ev2); /* exec keeps it */
    assert_int_equal(cus_debug_live_objects(), objects);
    /* Switched after a launch: ev2 stays until the replays queued before
     * are seen complete (a fence), then goes. */
    assert_ok(cus_graph_exec_set_event_record(e, rec, ev3));
    ev3 = cus_event_unref(ev3);
    assert_int_equal(cus_debug_live_objects(), objects);
    assert_ok(cus_stream_synchronize(s));
    assert_ok(cus_event_record(start, s));
    assert_ok(cus_graph_exec_launch(e, s)); /* queries the fence: ev2 released */
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(cus_debug_live_objects(), objects - 1);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_EVENT), events - 1);
    /* Back to the event the node was built with (the graph keeps it): ev3
     * goes too. */
    assert_ok(cus_graph_exec_set_event_record(e, rec, ev1));
    assert_ok(cus_stream_synchronize(s));
    assert_ok(cus_graph_exec_launch(e, s));
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(cus_debug_live_objects(), objects - 2);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_EVENT), events - 2);
    /* A record node is no wait node. */
    assert_status(cus_graph_exec_set_event_wait(e, rec, ev1), CUDA_ERROR_INVALID_VALUE);
}

static void test_event_wait_update(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_event) ev1 = new_event(c, CU_EVENT_DISABLE_TIMING);
    cus_autoptr(cus_event) ev2 = new_event(c, CU_EVENT_DISABLE_TIMING);
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_graph_create(c, &g));
    cus_graph_node wait;
    assert_ok(cus_graph_add_event_wait(g, NULL, 0, &wait, ev1));
    cus_autoptr(cus_graph_exec) e = instantiate(g);
    assert_ok(cus_event_record(ev2, s));
    assert_ok(cus_graph_exec_set_event_wait(e, wait, ev2));
    assert_ok(cus_graph_exec_launch(e, s));
    assert_ok(cus_stream_synchronize(s));
    assert_status(cus_graph_exec_set_event_record(e, wait, ev2), CUDA_ERROR_INVALID_VALUE);
    cus_autoptr(cus_context) other = new_ctx();
    cus_autoptr(cus_event) elsewhere = new_event(other, 0);
    assert_status(cus_graph_exec_set_event_wait(e, wait, elsewhere), CUS_ERROR_CONTEXT_MISMATCH);
}

/* cus_graph_event_node_event: the cus_event a record or wait node uses,
 * a new reference, after a set, in a clone; a node of another type is the
 * driver's refusal, an event set through the raw driver is not found. */
static void test_event_node_event(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_graph_create(c, &g));
    cus_graph_node rec, wait, empty;
    {
        cus_autoptr(cus_event) ev1 = new_event(c, 0);
        cus_autoptr(cus_event) ev2 = new_event(c, CU_EVENT_DISABLE_TIMING);
        assert_ok(cus_graph_add_event_record(g, NULL, 0, &rec, ev1));
        assert_ok(cus_graph_add_event_wait(g, &rec, 1, &wait, ev2));
        cus_event *got = NULL;
        assert_ok(cus_graph_event_node_event(rec, &got));
        assert_ptr_equal(got, ev1);
        got = cus_event_unref(got);
        assert_ok(cus_graph_event_node_event(wait, &got));
        assert_ptr_equal(got, ev2);
        got = cus_event_unref(got);
        /* After a set: the new event. */
        assert_ok(cus_graph_set_event_record(rec, ev2));
        assert_ok(cus_graph_event_node_event(rec, &got));
        assert_ptr_equal(got, ev2);
        got = cus_event_unref(got);
    } /* the graph holds both events */
    cus_event *held = NULL;
    assert_ok(cus_graph_event_node_event(wait, &held));
    assert_non_null(held);
    held = cus_event_unref(held);
    /* A clone's node finds the original's event, through the original the
     * clone holds. */
    cus_autoptr(cus_graph) copy = NULL;
    assert_ok(cus_graph_clone(g, &copy));
    cus_graph_node crec;
    assert_ok(cus_graph_node_in_clone(copy, rec, &crec));
    cus_event *from_clone = NULL, *original = NULL;
    assert_ok(cus_graph_event_node_event(crec, &from_clone));
    assert_ok(cus_graph_event_node_event(rec, &original));
    assert_ptr_equal(from_clone, original);
    from_clone = cus_event_unref(from_clone);
    original = cus_event_unref(original);
    /* Another type of node, and bad input. */
    assert_ok(cus_graph_add_empty(g, NULL, 0, &empty));
    cus_event *none = SENTINEL_PTR(none);
    assert_status(cus_graph_event_node_event(empty, &none), CUDA_ERROR_INVALID_VALUE);
    assert_string_equal(cus_last_error()->driver_call, "cuGraphEventRecordNodeGetEvent");
    assert_ptr_equal(none, SENTINEL_PTR(none));
    assert_status(cus_graph_event_node_event(rec, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_event_node_event((cus_graph_node){0}, &none),
                  CUS_ERROR_INVALID_ARGUMENT);
    /* The driver's failures. */
    assert_ok(cus_fake_fail_entry("cuGraphEventWaitNodeGetEvent", 1, FAULT, false));
    assert_status(cus_graph_event_node_event(wait, &none), CU(FAULT));
    assert_ok(cus_fake_fail_entry("cuGraphNodeGetType", 1, FAULT, false));
    assert_status(cus_graph_event_node_event(wait, &none), CU(FAULT));
    assert_string_equal(cus_last_error()->driver_call, "cuGraphNodeGetType");
    /* An event the graph does not keep: set through the raw driver. */
    cus_autoptr(cus_event) raw = new_event(c, 0);
    PFN_cuGraphEventRecordNodeSetEvent_v11010 set_raw = NULL;
    assert_ok(CUS_DRIVER_PROC(set_raw, "cuGraphEventRecordNodeSetEvent", 11010));
    assert_int_equal(set_raw(rec.handle, cus_event_handle(raw)), CUDA_SUCCESS);
    assert_status(cus_graph_event_node_event(rec, &none), CUDA_ERROR_NOT_FOUND);
    assert_contains(cus_last_error_message(), "is no cus_event its graph keeps");
    assert_ptr_equal(none, SENTINEL_PTR(none));
}

static void test_host_fn_update(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    atomic_int a = 0, b = 0, d = 0;
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_graph_create(c, &g));
    cus_graph_node host, empty;
    assert_ok(cus_graph_add_host_fn(g, NULL, 0, &host, count_up, &a));
    assert_ok(cus_graph_add_empty(g, NULL, 0, &empty));
    cus_autoptr(cus_graph_exec) e = instantiate(g);
    assert_ok(cus_graph_exec_launch(e, s));
    assert_ok(cus_stream_synchronize(s));
    assert_ok(cus_graph_exec_set_host_fn(e, host, count_up, &b));
    assert_ok(cus_graph_exec_launch(e, s));
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(atomic_load(&a), 1);
    assert_int_equal(atomic_load(&b), 1);
    /* Again, with a launch queued: the record replaced is fenced, freed later. */
    assert_ok(cus_graph_exec_launch(e, s));
    assert_ok(cus_graph_exec_set_host_fn(e, host, count_up, &d));
    assert_ok(cus_graph_exec_launch(e, s));
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(atomic_load(&b), 2);
    assert_int_equal(atomic_load(&d), 1);
    /* Failures free the record they made (LeakSanitizer would say). */
    assert_status(cus_graph_exec_set_host_fn(e, empty, count_up, &a), CUDA_ERROR_INVALID_VALUE);
    assert_ok(cus_fake_fail_entry("cuGraphExecHostNodeSetParams", 1, FAULT, false));
    assert_status(cus_graph_exec_set_host_fn(e, host, count_up, &a), CU(FAULT));
    cus_graph_node stranger;
    cus_autoptr(cus_graph) g2 = NULL;
    assert_ok(cus_graph_create(c, &g2));
    assert_ok(cus_graph_add_host_fn(g2, NULL, 0, &stranger, count_up, &a));
    assert_status(cus_graph_exec_set_host_fn(e, stranger, count_up, &a),
                  CUS_ERROR_INVALID_ARGUMENT);
    /* The node still calls d's. */
    assert_ok(cus_graph_exec_launch(e, s));
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(atomic_load(&d), 2);
    assert_int_equal(atomic_load(&a), 1);
}

static void CUDA_CB raw_host_fn(void *p)
{
    (void)p;
}

static void count_down(void *p)
{
    atomic_fetch_sub((atomic_int *)p, 1);
}

/* A value no call writes: what an out parameter holds when nothing was. */
static void untouched(void *p)
{
    (void)p;
}

/* A host node's function and data read back: added, set, captured, and set
 * through the raw driver; an executable graph's update leaves the graph's
 * node alone. */
static void test_host_node_fn(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    atomic_int a = 0, b = 0;
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_graph_create(c, &g));
    cus_graph_node host, empty;
    assert_ok(cus_graph_add_host_fn(g, NULL, 0, &host, count_up, &a));
    assert_ok(cus_graph_add_empty(g, NULL, 0, &empty));
    cus_host_fn fn = NULL;
    void *data = NULL;
    assert_ok(cus_graph_host_node_fn(host, &fn, &data));
    assert_ptr_equal(fn, count_up);
    assert_ptr_equal(data, &a);
    assert_ok(cus_graph_set_host_fn(host, count_down, &b));
    fn = NULL;
    assert_ok(cus_graph_host_node_fn(host, &fn, NULL));
    assert_ptr_equal(fn, count_down);
    cus_autoptr(cus_graph_exec) e = instantiate(g);
    assert_ok(cus_graph_exec_set_host_fn(e, host, count_up, &a));
    assert_ok(cus_graph_host_node_fn(host, &fn, &data));
    assert_ptr_equal(fn, count_down);
    assert_ptr_equal(data, &b);
    /* A clone's node: the record the original keeps. */
    cus_autoptr(cus_graph) copy = NULL;
    assert_ok(cus_graph_clone(g, &copy));
    cus_graph_node chost;
    assert_ok(cus_graph_node_in_clone(copy, host, &chost));
    assert_ok(cus_graph_host_node_fn(chost, &fn, &data));
    assert_ptr_equal(fn, count_down);
    assert_ptr_equal(data, &b);
    /* Captured: stream.c's record. */
    cus_autoptr(cus_graph) captured = NULL;
    {
        cus_capture_scope(cap, s, CU_STREAM_CAPTURE_MODE_GLOBAL);
        assert_ok(cap.status);
        assert_ok(cus_stream_launch_host_fn(s, count_up, &b));
        assert_ok(cus_capture_end(&cap, &captured));
    }
    cus_graph_node roots[1];
    size_t n = 1;
    assert_ok(cus_graph_root_nodes(captured, roots, &n));
    assert_int_equal(n, 1);
    assert_ok(cus_graph_host_node_fn(roots[0], &fn, &data));
    assert_ptr_equal(fn, count_up);
    assert_ptr_equal(data, &b);
    /* Set through the raw driver: the raw function and data. */
    PFN_cuGraphHostNodeSetParams_v10000 set_raw = NULL;
    assert_ok(CUS_DRIVER_PROC(set_raw, "cuGraphHostNodeSetParams", 10000));
    CUDA_HOST_NODE_PARAMS raw = {raw_host_fn, &n};
    assert_int_equal(set_raw(host.handle, &raw), CUDA_SUCCESS);
    assert_ok(cus_graph_host_node_fn(host, &fn, &data));
    assert_ptr_equal(fn, raw_host_fn);
    assert_ptr_equal(data, &n);
    /* Another type, bad input, the driver's failure: nothing written. */
    cus_host_fn none = untouched;
    assert_status(cus_graph_host_node_fn(empty, &none, NULL), CUDA_ERROR_INVALID_VALUE);
    assert_string_equal(cus_last_error()->driver_call, "cuGraphHostNodeGetParams");
    assert_true(none == untouched);
    assert_status(cus_graph_host_node_fn(host, NULL, &data), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_host_node_fn((cus_graph_node){0}, &none, NULL),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_ok(cus_fake_fail_entry("cuGraphHostNodeGetParams", 1, FAULT, false));
    assert_status(cus_graph_host_node_fn(host, &none, NULL), CU(FAULT));
    assert_true(none == untouched);
    /* The graph still runs the raw function (the exec its own update). */
    assert_ok(cus_graph_exec_launch(e, s));
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(atomic_load(&a), 1);
}

static void test_child_update(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_host_buffer) out = new_pinned(c, G_N * 4);
    cus_autoptr(cus_buffer) buf = new_buffer(c, G_N * 4);
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_graph_create(c, &g));
    cus_graph_node sub, down;
    {
        cus_autoptr(cus_graph) child = NULL;
        assert_ok(cus_graph_create(c, &child));
        assert_ok(cus_graph_add_fill_u32(child, NULL, 0, NULL, buf, 0, 1, G_N));
        assert_ok(cus_graph_add_child(g, NULL, 0, &sub, child));
    }
    assert_ok(cus_graph_add_copy_to_host(g, &sub, 1, &down, u32s(out), buf, 0, G_N * 4));
    cus_autoptr(cus_graph_exec) e = instantiate(g);
    size_t objects = cus_debug_live_objects();
    {
        /* Same topology, another buffer and value; released here, kept by exec. */
        cus_autoptr(cus_buffer) other = new_buffer(c, G_N * 4);
        cus_autoptr(cus_graph) child2 = NULL;
        assert_ok(cus_graph_create(c, &child2));
        assert_ok(cus_graph_add_fill_u32(child2, NULL, 0, NULL, buf, 0, 2, G_N));
        assert_ok(cus_graph_add_fill_u32(child2, NULL, 0, NULL, other, 0, 3, G_N)); /* no: 2 nodes */
        assert_status(cus_graph_exec_set_child(e, sub, child2), CUDA_ERROR_INVALID_VALUE);
        cus_autoptr(cus_graph) child3 = NULL;
        assert_ok(cus_graph_create(c, &child3));
        assert_ok(cus_graph_add_fill_u32(child3, NULL, 0, NULL, buf, 0, 2, G_N));
        assert_ok(cus_graph_exec_set_child(e, sub, child3));
        assert_status(cus_graph_exec_set_child(e, down, child3), CUDA_ERROR_INVALID_VALUE);
    }
    assert_int_equal(cus_debug_live_objects(), objects + 1); /* child3, held by exec */
    assert_ok(cus_graph_exec_launch(e, s));
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(u32s(out)[0], 2u);
    assert_int_equal(u32s(out)[G_N - 1], 2u);
    cus_autoptr(cus_context) other_ctx = new_ctx();
    cus_autoptr(cus_graph) elsewhere = NULL;
    assert_ok(cus_graph_create(other_ctx, &elsewhere));
    assert_status(cus_graph_exec_set_child(e, sub, elsewhere), CUS_ERROR_CONTEXT_MISMATCH);
}

/* The value every element of buf holds (a test failure when they differ). */
static uint32_t uniform_value(cus_context *c, cus_buffer *buf)
{
    cus_autoptr(cus_host_buffer) out = new_pinned(c, G_N * 4);
    assert_ok(cus_copy_to_host(u32s(out), buf, 0, G_N * 4));
    for (int i = 1; i < G_N; i++)
        if (u32s(out)[i] != u32s(out)[0])
            fail_msg("element %d is %u, element 0 %u", i, u32s(out)[i], u32s(out)[0]);
    return u32s(out)[0];
}

static void assert_buffer_is(cus_context *c, cus_buffer *buf, uint32_t want)
{
    assert_int_equal(uniform_value(c, buf), want);
}

static void launch_and_wait(cus_graph *g, cus_stream *s)
{
    cus_autoptr(cus_graph_exec) e = instantiate(g);
    assert_ok(cus_graph_exec_launch(e, s));
    assert_ok(cus_stream_synchronize(s));
}

/* A child graph node's own graph: nodes added to it run in the node, in the
 * executable graphs made after only; clones and executable graphs made
 * before keep what they had; the graph and the node's buffers outlive the
 * caller's references; the node is not destroyed once its graph is lent. */
static void test_child_graph(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_buffer) a = new_buffer(c, G_N * 4);
    cus_autoptr(cus_buffer) b = new_buffer(c, G_N * 4);
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_graph_create(c, &g));
    cus_graph_node sub, spare, empty;
    cus_autoptr(cus_graph) child = NULL;
    assert_ok(cus_graph_create(c, &child));
    assert_ok(cus_graph_add_fill_u32(child, NULL, 0, NULL, a, 0, 1, G_N));
    assert_ok(cus_graph_add_child(g, NULL, 0, &sub, child));
    assert_ok(cus_graph_add_child(g, NULL, 0, &spare, child));
    assert_ok(cus_graph_add_empty(g, NULL, 0, &empty));
    cus_autoptr(cus_graph_exec) before = instantiate(g);
    cus_autoptr(cus_graph) copy_before = NULL;
    assert_ok(cus_graph_clone(g, &copy_before));

    cus_autoptr(cus_graph) own = NULL;
    assert_ok(cus_graph_child_graph(sub, &own));
    assert_non_null(own);
    assert_ptr_not_equal(own, child);
    assert_ptr_equal(cus_graph_context(own), c);
    assert_int_equal(node_count(own), 1);
    cus_graph_node first;
    size_t n = 1;
    assert_ok(cus_graph_root_nodes(own, &first, &n));
    assert_int_equal(n, 1);
    /* A node added to it: the node's, not the child's the node was made of. */
    {
        cus_autoptr(cus_buffer) d = new_buffer(c, G_N * 4);
        assert_ok(cus_graph_add_fill_u32(own, &first, 1, NULL, b, 0, 5, G_N));
        assert_ok(cus_graph_add_fill_u32(own, NULL, 0, NULL, d, 0, 6, G_N));
    } /* d: kept by g, the outermost graph */
    assert_int_equal(node_count(own), 3);
    assert_int_equal(node_count(child), 1);
    assert_int_equal(node_count(g), 3);
    /* Made before: a, not b. */
    assert_ok(cus_buffer_fill_u32(b, 0, 0, G_N));
    assert_ok(cus_graph_exec_launch(before, s));
    assert_ok(cus_stream_synchronize(s));
    assert_buffer_is(c, a, 1);
    assert_buffer_is(c, b, 0);
    launch_and_wait(copy_before, s);
    assert_buffer_is(c, b, 0);
    /* Made after: b too. */
    launch_and_wait(g, s);
    assert_buffer_is(c, b, 5);
    /* A clone made now has the node as it is, and keeps it after a change. */
    cus_autoptr(cus_graph) copy_after = NULL;
    assert_ok(cus_graph_clone(g, &copy_after));
    assert_ok(cus_graph_add_fill_u32(own, NULL, 0, NULL, a, 0, 9, G_N));
    assert_int_equal(node_count(own), 4);
    assert_ok(cus_buffer_fill_u32(a, 0, 0, G_N));
    launch_and_wait(copy_after, s);
    assert_buffer_is(c, a, 1); /* not 9: the clone's node kept its nodes */
    cus_autoptr(cus_graph_exec) after = instantiate(g);
    assert_ok(cus_graph_exec_launch(after, s));
    assert_ok(cus_stream_synchronize(s));
    /* The fill of 1 and the fill of 9 are unordered: either value, whole. */
    uint32_t v = uniform_value(c, a);
    assert_true(v == 1 || v == 9);

    /* The clone made before has its own node and graph: what is added to
     * the one is not in the other (the fake shared the node's copy until
     * now). */
    cus_graph_node csub;
    assert_ok(cus_graph_node_in_clone(copy_before, sub, &csub));
    {
        cus_autoptr(cus_graph) cown = NULL;
        assert_ok(cus_graph_child_graph(csub, &cown));
        assert_ptr_not_equal(cus_graph_handle(cown), cus_graph_handle(own));
        assert_int_equal(node_count(cown), 1);
        assert_ok(cus_graph_add_empty(cown, NULL, 0, NULL));
        assert_int_equal(node_count(cown), 2);
        assert_int_equal(node_count(own), 4);
    }
    /* Two nodes sharing one copy (a clone's, before any change) ask for
     * their graphs: each gets its own. */
    {
        cus_autoptr(cus_graph) g2 = NULL;
        cus_autoptr(cus_graph) c2 = NULL;
        cus_graph_node s2, cs2;
        assert_ok(cus_graph_create(c, &g2));
        assert_ok(cus_graph_add_child(g2, NULL, 0, &s2, child));
        assert_ok(cus_graph_clone(g2, &c2));
        assert_ok(cus_graph_node_in_clone(c2, s2, &cs2));
        cus_autoptr(cus_graph) own2 = NULL;
        cus_autoptr(cus_graph) cown2 = NULL;
        assert_ok(cus_graph_child_graph(s2, &own2));
        assert_ok(cus_graph_child_graph(cs2, &cown2));
        assert_ptr_not_equal(cus_graph_handle(own2), cus_graph_handle(cown2));
        assert_ok(cus_graph_add_empty(cown2, NULL, 0, NULL));
        assert_int_equal(node_count(cown2), 2);
        assert_int_equal(node_count(own2), 1);
        assert_ok(cus_graph_add_empty(own2, NULL, 0, NULL));
        assert_ok(cus_graph_add_empty(own2, NULL, 0, NULL));
        assert_int_equal(node_count(own2), 3);
        assert_int_equal(node_count(cown2), 2);
    }
    /* Another call: another cus_graph, the same driver graph. */
    cus_autoptr(cus_graph) again = NULL;
    assert_ok(cus_graph_child_graph(sub, &again));
    assert_ptr_not_equal(again, own);
    assert_ptr_equal(cus_graph_handle(again), cus_graph_handle(own));
    /* Not instantiated alone; the driver takes no memory node in it. */
    cus_graph_exec *e = SENTINEL_PTR(e);
    assert_status(cus_graph_instantiate(own, 0, &e), CUS_ERROR_INVALID_ARGUMENT);
    assert_contains(cus_last_error_message(), "child graph node's own graph");
    assert_ptr_equal(e, SENTINEL_PTR(e));
    cus_buffer *mem = NULL;
    assert_status(cus_graph_add_alloc(own, NULL, 0, NULL, 256, &mem), CUDA_ERROR_INVALID_VALUE);
    assert_null(mem);
    /* The lent node stays; the other child node goes. */
    assert_status(cus_graph_destroy_node(sub), CUS_ERROR_NOT_SUPPORTED);
    assert_contains(cus_last_error_message(), "cus_graph_child_graph handed out");
    assert_ok(cus_graph_destroy_node(spare));
    assert_int_equal(node_count(g), 2);
    /* A child node in the lent graph lends its own too (the outermost
     * graph's list). */
    cus_graph_node inner;
    assert_ok(cus_graph_add_child(own, NULL, 0, &inner, child));
    cus_autoptr(cus_graph) inner_own = NULL;
    assert_ok(cus_graph_child_graph(inner, &inner_own));
    assert_ok(cus_graph_add_fill_u32(inner_own, NULL, 0, NULL, b, 0, 11, G_N));
    assert_status(cus_graph_destroy_node(inner), CUS_ERROR_NOT_SUPPORTED);
    assert_ok(cus_buffer_fill_u32(b, 0, 0, G_N));
    launch_and_wait(g, s);
    v = uniform_value(c, b); /* the fill of 5 and the inner one of 11, unordered */
    assert_true(v == 5 || v == 11);
    /* Another type of node, bad input, the driver's failure: nothing lent. */
    cus_graph *none = SENTINEL_PTR(none);
    assert_status(cus_graph_child_graph(empty, &none), CUDA_ERROR_INVALID_VALUE);
    assert_string_equal(cus_last_error()->driver_call, "cuGraphChildGraphNodeGetGraph");
    assert_ptr_equal(none, SENTINEL_PTR(none));
    assert_status(cus_graph_child_graph(sub, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_child_graph((cus_graph_node){0}, &none), CUS_ERROR_INVALID_ARGUMENT);
    cus_graph_node third;
    assert_ok(cus_graph_add_child(g, NULL, 0, &third, child));
    assert_ok(cus_fake_fail_entry("cuGraphChildGraphNodeGetGraph", 1, FAULT, false));
    assert_status(cus_graph_child_graph(third, &none), CU(FAULT));
    assert_ptr_equal(none, SENTINEL_PTR(none));
    assert_ok(cus_graph_destroy_node(third));
    /* The lent graph outlives every other reference to the graph it is in. */
    before = cus_graph_exec_unref(before);
    after = cus_graph_exec_unref(after);
    copy_before = cus_graph_unref(copy_before);
    copy_after = cus_graph_unref(copy_after);
    again = cus_graph_unref(again);
    g = cus_graph_unref(g);
    assert_int_equal(node_count(own), 5);
    assert_ok(cus_graph_add_empty(own, NULL, 0, NULL));
    assert_int_equal(node_count(own), 6);
}

/* The fake's cuGraphChildGraphNodeGetGraph, raw: one handle per node, which
 * is not destroyed nor instantiated on its own, and dies with its node. */
static void test_fake_child_graph_raw(void **state)
{
    (void)state;
    PFN_cuGraphChildGraphNodeGetGraph_v10000 get = NULL;
    PFN_cuGraphDestroy_v10000 destroy = NULL;
    PFN_cuGraphDestroyNode_v10000 destroy_node = NULL;
    PFN_cuGraphGetNodes_v10000 get_nodes = NULL;
    PFN_cuGraphInstantiateWithFlags_v11040 instantiate_raw = NULL;
    assert_ok(CUS_DRIVER_PROC(get, "cuGraphChildGraphNodeGetGraph", 10000));
    assert_ok(CUS_DRIVER_PROC(destroy, "cuGraphDestroy", 10000));
    assert_ok(CUS_DRIVER_PROC(destroy_node, "cuGraphDestroyNode", 10000));
    assert_ok(CUS_DRIVER_PROC(get_nodes, "cuGraphGetNodes", 10000));
    assert_ok(CUS_DRIVER_PROC(instantiate_raw, "cuGraphInstantiateWithFlags", 11040));
    cus_autoptr(cus_context) c = new_primary();
    cus_context_scope(guard, c);
    assert_ok(guard.status);
    cus_autoptr(cus_graph) g = NULL;
    cus_autoptr(cus_graph) child = NULL;
    assert_ok(cus_graph_create(c, &g));
    assert_ok(cus_graph_create(c, &child));
    assert_ok(cus_graph_add_empty(child, NULL, 0, NULL));
    cus_graph_node sub, empty;
    assert_ok(cus_graph_add_child(g, NULL, 0, &sub, child));
    assert_ok(cus_graph_add_empty(g, NULL, 0, &empty));
    CUgraph own = NULL, again = NULL;
    assert_int_equal(get(sub.handle, NULL), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(get(empty.handle, &own), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(get(sub.handle, &own), CUDA_SUCCESS);
    assert_int_equal(get(sub.handle, &again), CUDA_SUCCESS);
    assert_ptr_equal(own, again);
    assert_ptr_not_equal(own, cus_graph_handle(child));
    size_t n = 0;
    assert_int_equal(get_nodes(own, NULL, &n), CUDA_SUCCESS);
    assert_int_equal(n, 1);
    CUgraphExec x = NULL;
    assert_int_equal(instantiate_raw(&x, own, 0), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cus_fake_misuse_count(), 0);
    assert_int_equal(destroy(own), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cus_fake_misuse_count(), 1);
    assert_contains(cus_fake_last_misuse(), "a child graph node's own graph");
    /* The node destroyed behind cuscope's back: its graph's handle dies. */
    assert_int_equal(destroy_node(sub.handle), CUDA_SUCCESS);
    assert_int_equal(get_nodes(own, NULL, &n), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cus_fake_misuse_count(), 2);
    assert_contains(cus_fake_last_misuse(), "used after its child graph node");
}

/* --- enabled, flags, instantiation with parameters ------------------------------------------- */

static void test_enabled_and_flags(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_buffer) buf = new_buffer(c, 64);
    atomic_int counter = 0;
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_graph_create(c, &g));
    cus_graph_node fill, host;
    assert_ok(cus_graph_add_fill_u32(g, NULL, 0, &fill, buf, 0, 1, 16));
    assert_ok(cus_graph_add_host_fn(g, &fill, 1, &host, count_up, &counter));
    cus_autoptr(cus_graph_exec) e = NULL;
    assert_ok(cus_graph_instantiate(g, CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY, &e));
    bool on = false;
    assert_ok(cus_graph_node_enabled(e, fill, &on));
    assert_true(on);
    assert_ok(cus_graph_exec_set_node_enabled(e, fill, false));
    assert_ok(cus_graph_node_enabled(e, fill, &on));
    assert_false(on);
    assert_status(cus_graph_node_enabled(e, host, &on), CUDA_ERROR_INVALID_VALUE);
    cuuint64_t flags = 0;
    assert_ok(cus_graph_exec_flags(e, &flags));
    assert_int_equal(flags, CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY);

    /* With parameters: an upload, which the flags do not report. */
    cus_autoptr(cus_graph_exec) up = NULL;
    CUgraphInstantiateResult result = CUDA_GRAPH_INSTANTIATE_ERROR;
    assert_ok(cus_graph_instantiate_with_params(g, CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD, s, &result,
                                                &up));
    assert_int_equal(result, CUDA_GRAPH_INSTANTIATE_SUCCESS);
    assert_ok(cus_graph_exec_flags(up, &flags));
    assert_int_equal(flags, 0);
    assert_ok(cus_graph_exec_launch(up, s));
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(atomic_load(&counter), 1);
    /* Refused: the result and the node in the message. */
    cus_graph_exec *none = NULL;
    assert_status(cus_graph_instantiate_with_params(g, CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH,
                                                    NULL, &result, &none),
                  CUDA_ERROR_INVALID_VALUE);
    assert_null(none);
    assert_int_equal(result, CUDA_GRAPH_INSTANTIATE_NODE_OPERATION_NOT_SUPPORTED);
    assert_contains(cus_last_error_message(), "NODE_OPERATION_NOT_SUPPORTED");
    assert_string_equal(cus_last_error()->driver_call, "cuGraphInstantiateWithParams");
    assert_status(cus_graph_instantiate_with_params(
                      g,
                      CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH |
                          CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH,
                      NULL, &result, &none),
                  CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(result, CUDA_GRAPH_INSTANTIATE_ERROR);
    cus_autoptr(cus_context) other = new_ctx();
    cus_autoptr(cus_stream) elsewhere = new_stream(other, CU_STREAM_NON_BLOCKING);
    assert_status(cus_graph_instantiate_with_params(g, CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD,
                                                    elsewhere, NULL, &none),
                  CUS_ERROR_CONTEXT_MISMATCH);
}

/* --- the DOT file ----------------------------------------------------------------------------- */

static size_t count_in(const char *text, const char *what)
{
    size_t n = 0;
    for (const char *p = strstr(text, what); p; p = strstr(p + 1, what))
        n++;
    return n;
}

static void test_debug_dot(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_graph_create(c, &g));
    cus_graph_node a, b;
    assert_ok(cus_graph_add_empty(g, NULL, 0, &a));
    assert_ok(cus_graph_add_empty(g, &a, 1, &b));
    assert_ok(cus_graph_add_empty(g, &a, 1, NULL));
    char path[] = "/tmp/cuscope-dot-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_ok(cus_graph_debug_dot(g, path, CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE));
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char text[4096];
    size_t len = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    unlink(path);
    text[len] = '\0';
    assert_true(len > 0);
    assert_contains(text, "digraph");
    assert_int_equal(count_in(text, "label="), node_count(g));
    assert_int_equal(count_in(text, "->"), edge_count(g));
    assert_status(cus_graph_debug_dot(g, "/nonexistent-dir/graph.dot", 0),
                  CUDA_ERROR_OPERATING_SYSTEM);
    assert_contains(cus_last_error_message(), "/nonexistent-dir/graph.dot");
}

/* --- failures ---------------------------------------------------------------------------------- */

static void test_driver_failures(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_event) ev = new_event(c, CU_EVENT_DISABLE_TIMING);
    cus_autoptr(cus_buffer) buf = new_buffer(c, 64);
    atomic_int counter = 0;
    cus_autoptr(cus_graph) child = NULL;
    assert_ok(cus_graph_create(c, &child));
    assert_ok(cus_graph_add_empty(child, NULL, 0, NULL));
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_graph_create(c, &g));
    cus_graph_node fill, rec, wait, host, sub;
    assert_ok(cus_graph_add_fill_u32(g, NULL, 0, &fill, buf, 0, 1, 16));
    assert_ok(cus_graph_add_event_record(g, &fill, 1, &rec, ev));
    assert_ok(cus_graph_add_event_wait(g, &rec, 1, &wait, ev));
    assert_ok(cus_graph_add_host_fn(g, &wait, 1, &host, count_up, &counter));
    assert_ok(cus_graph_add_child(g, &host, 1, &sub, child));
    cus_autoptr(cus_graph_exec) e = instantiate(g);
    assert_ok(cus_graph_exec_launch(e, s)); /* updates below fence the replaced */
    size_t n = 4;
    cus_graph_node list[4], list2[4];
    CUgraphNodeType t;
    bool on;
    cuuint64_t flags;
    cus_graph *copy = NULL;
    cus_graph_exec *made = NULL;
    cus_graph_node found = {0};
    assert_fault_surfaces("cuGraphNodeGetType", cus_graph_node_type(fill, &t));
    assert_fault_surfaces("cuGraphNodeGetDependencies_v2",
                          cus_graph_node_dependencies(rec, list, &n));
    assert_fault_surfaces("cuGraphNodeGetDependentNodes_v2",
                          cus_graph_node_dependents(rec, list, &n));
    assert_fault_surfaces("cuGraphGetEdges_v2", cus_graph_edges(g, list, list2, &n));
    assert_int_equal(n, 4);
    assert_fault_surfaces("cuGraphNodeGetEnabled", cus_graph_node_enabled(e, fill, &on));
    assert_fault_surfaces("cuGraphExecGetFlags", cus_graph_exec_flags(e, &flags));
    assert_fault_surfaces("cuGraphDebugDotPrint", cus_graph_debug_dot(g, "/tmp/unused.dot", 0));
    assert_fault_surfaces("cuGraphRemoveDependencies_v2",
                          cus_graph_remove_dependencies(g, &fill, &rec, 1));
    assert_fault_surfaces("cuGraphDestroyNode", cus_graph_destroy_node(sub));
    assert_fault_surfaces("cuGraphClone", cus_graph_clone(g, &copy));
    assert_null(copy);
    assert_ok(cus_graph_clone(g, &copy));
    assert_fault_surfaces("cuGraphNodeFindInClone", cus_graph_node_in_clone(copy, fill, &found));
    assert_null(found.handle);
    copy = cus_graph_unref(copy);
    cus_autoptr(cus_event) ev2 = new_event(c, CU_EVENT_DISABLE_TIMING);
    assert_fault_surfaces("cuGraphExecEventRecordNodeSetEvent",
                          cus_graph_exec_set_event_record(e, rec, ev2));
    assert_fault_surfaces("cuGraphExecEventWaitNodeSetEvent",
                          cus_graph_exec_set_event_wait(e, wait, ev2));
    assert_fault_surfaces("cuGraphExecHostNodeSetParams",
                          cus_graph_exec_set_host_fn(e, host, count_up, &counter));
    assert_fault_surfaces("cuGraphExecChildGraphNodeSetParams",
                          cus_graph_exec_set_child(e, sub, child));
    assert_fault_surfaces("cuGraphInstantiateWithParams",
                          cus_graph_instantiate_with_params(g, 0, NULL, NULL, &made));
    assert_null(made);
    assert_ok(cus_stream_synchronize(s));
    /* Everything still works after. */
    assert_ok(cus_graph_exec_set_event_record(e, rec, ev2));
    assert_ok(cus_graph_exec_set_child(e, sub, child));
    assert_ok(cus_graph_exec_launch(e, s));
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(atomic_load(&counter), 2);
}

static void test_bad_input(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_event) ev = new_event(c, 0);
    cus_autoptr(cus_graph) g = NULL;
    cus_autoptr(cus_graph) g2 = NULL;
    assert_ok(cus_graph_create(c, &g));
    assert_ok(cus_graph_create(c, &g2));
    cus_graph_node a, b, stranger;
    assert_ok(cus_graph_add_empty(g, NULL, 0, &a));
    assert_ok(cus_graph_add_empty(g, &a, 1, &b));
    assert_ok(cus_graph_add_event_record(g2, NULL, 0, &stranger, ev));
    cus_autoptr(cus_graph_exec) e = instantiate(g);
    cus_graph_node none = {0}, orphan = {a.handle, NULL};
    size_t n = 2;
    cus_graph_node list[2];
    CUgraphNodeType t;
    bool on;
    unsigned long calls = cus_fake_call_count();
    assert_status(cus_graph_node_type(none, &t), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_node_type(orphan, &t), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_node_type(a, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_node_dependencies(a, list, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_node_dependents(none, list, &n), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_edges(g, list, NULL, &n), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_edges(NULL, NULL, NULL, &n), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_node_enabled(e, stranger, &on), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_node_enabled(NULL, a, &on), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_exec_flags(e, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_debug_dot(g, "", 0), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_debug_dot(g, NULL, 0), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_remove_dependencies(g, &stranger, &b, 1), CUS_ERROR_INVALID_ARGUMENT);
    assert_contains(cus_last_error_message(), "another graph");
    assert_status(cus_graph_remove_dependencies(g, NULL, &b, 1), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_destroy_node(none), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_clone(g, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_node_in_clone(NULL, a, list), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_exec_set_event_record(e, stranger, ev), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_exec_set_event_record(e, a, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_exec_set_event_wait(NULL, a, ev), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_exec_set_host_fn(e, a, NULL, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_exec_set_child(e, a, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_exec_set_child(e, none, g2), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_instantiate_with_params(NULL, 0, NULL, NULL, NULL),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(cus_fake_call_count(), calls);
}

/* Drivers before 12.3 have no edge-data entry points: the edge calls are
 * not supported, naming the version; the rest work. */
static void test_older_driver(void **state)
{
    (void)state;
    cus_fake_config cfg = {.driver_version = 12020};
    assert_int_equal(env_setup_with(&cfg), 0);
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_graph_create(c, &g));
    cus_graph_node a, b;
    assert_ok(cus_graph_add_empty(g, NULL, 0, &a));
    assert_ok(cus_graph_add_empty(g, &a, 1, &b));
    size_t n = 0;
    assert_status(cus_graph_edges(g, NULL, NULL, &n), CUS_ERROR_NOT_SUPPORTED);
    assert_contains(cus_last_error_message(), "cuGraphGetEdges");
    assert_contains(cus_last_error_message(), "12.3");
    assert_status(cus_graph_node_dependencies(b, NULL, &n), CUS_ERROR_NOT_SUPPORTED);
    assert_status(cus_graph_node_dependents(a, NULL, &n), CUS_ERROR_NOT_SUPPORTED);
    assert_status(cus_graph_remove_dependencies(g, &a, &b, 1), CUS_ERROR_NOT_SUPPORTED);
    /* The edges with a kind too, before any driver call. */
    unsigned long calls = cus_fake_call_count();
    assert_status(cus_graph_add_edges(g, &b, &a, NULL, 1), CUS_ERROR_NOT_SUPPORTED);
    assert_contains(cus_last_error_message(), "cuGraphAddDependencies");
    assert_status(cus_graph_remove_edges(g, &a, &b, NULL, 1), CUS_ERROR_NOT_SUPPORTED);
    assert_status(cus_graph_edges_with_kinds(g, NULL, NULL, NULL, &n), CUS_ERROR_NOT_SUPPORTED);
    assert_status(cus_graph_node_dependencies_with_kinds(b, NULL, NULL, &n),
                  CUS_ERROR_NOT_SUPPORTED);
    assert_status(cus_graph_node_dependents_with_kinds(a, NULL, NULL, &n),
                  CUS_ERROR_NOT_SUPPORTED);
    assert_int_equal(cus_fake_call_count(), calls);
    CUgraphNodeType t;
    assert_ok(cus_graph_node_type(b, &t));
    cus_autoptr(cus_graph) copy = NULL;
    assert_ok(cus_graph_clone(g, &copy));
    assert_ok(cus_graph_destroy_node(b));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_types_and_edges),
        ENV_TEST(test_long_lists),
        ENV_TEST(test_destroy_node),
        ENV_TEST(test_clone_outlives_everything),
        ENV_TEST(test_clone_is_a_graph),
        ENV_TEST(test_clone_refused),
        ENV_TEST(test_event_record_update),
        ENV_TEST(test_event_wait_update),
        ENV_TEST(test_event_node_event),
        ENV_TEST(test_host_fn_update),
        ENV_TEST(test_host_node_fn),
        ENV_TEST(test_child_update),
        ENV_TEST(test_child_graph),
        cmocka_unit_test_setup_teardown(test_fake_child_graph_raw, env_setup,
                                        teardown_after_misuse),
        ENV_TEST(test_enabled_and_flags),
        ENV_TEST(test_debug_dot),
        ENV_TEST(test_driver_failures),
        ENV_TEST(test_bad_input),
        ENV_TEST(test_older_driver),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
