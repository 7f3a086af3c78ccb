/* Graphs that mix nodes added by hand and captured work
 * (include/cuscope/graph_capture.h), and 2D and 3D copy nodes
 * (cus_graph_add_copy_2d/3d, include/cuscope/graph_nodes.h), on the fake:
 *   - a copy added by hand, work captured after it, a node added after the
 *     captured leaves: the replay computes what it should, and the end hands
 *     back the same graph;
 *   - keep-alive: every object released before the instantiation, the graph
 *     still replays; each object is kept once (cus_graph_kept_objects);
 *   - while captured into, the graph refuses cuscope's calls; an invalidated
 *     or abandoned capture leaves the graph usable and keeping its objects;
 *     an executable graph made before the capture replays what it had;
 *   - 2D and 3D copy nodes between host memory, pitched and linear buffers
 *     and arrays, their per-node updates, and their bounds checks;
 *   - bad input (NULL, a dependency of another graph, contexts that differ,
 *     an out-of-range region), refused before any driver call;
 *   - each driver call failing (cus_fake_fail_entry), and host allocations
 *     failing, with nothing leaked (the harness's teardown). */
#include <cuscope/array.h>
#include <cuscope/graph_capture.h>
#include <cuscope/graph_inspect.h>
#include <cuscope/graph_nodes.h>

#include "graph_fixtures.h"

static cus_graph *new_graph(cus_context *c)
{
    cus_graph *g = NULL;
    assert_ok(cus_graph_create(c, &g));
    return g;
}

static size_t node_count(cus_graph *g)
{
    size_t n = 0;
    assert_ok(cus_graph_node_count(g, &n));
    return n;
}

/* --- a graph of added and captured nodes --------------------------------------------------- */

/* up: in -> a (by hand); captured: a -> b, b[0..1] = fill; down: b -> out
 * after the captured leaves (by hand). */
static void test_added_captured_added(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_host_buffer) hin = new_pinned(c, G_N * 4);
    cus_autoptr(cus_host_buffer) hout = new_pinned(c, G_N * 4);
    seed(u32s(hin), 7);
    cus_graph_exec *e = NULL;
    {
        cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
        cus_autoptr(cus_buffer) a = new_buffer(c, G_N * 4);
        cus_autoptr(cus_buffer) b = new_buffer(c, G_N * 4);
        cus_autoptr(cus_graph) g = new_graph(c);
        cus_graph_node up;
        assert_ok(cus_graph_add_copy_to_device(g, NULL, 0, &up, a, 0, u32s(hin), G_N * 4));
        cus_graph_node leaves[4];
        size_t nleaves = 4;
        {
            cus_capture_scope_to_graph(cap, s, g, &up, 1, CU_STREAM_CAPTURE_MODE_GLOBAL);
            assert_ok(cap.status);
            assert_true(cap.open);
            assert_ptr_equal(cap.graph, g);
            assert_true(capturing(s));
            /* Nothing captured yet: the leaves are the begin's dependencies. */
            size_t n0 = 0;
            assert_ok(cus_capture_leaves(&cap, NULL, &n0));
            assert_int_equal(n0, 1);
            cus_graph_node first = {0};
            n0 = 1;
            assert_ok(cus_capture_leaves(&cap, &first, &n0));
            assert_ptr_equal(first.handle, up.handle);
            assert_ok(cus_copy_device_async(b, 0, a, 0, G_N * 4, s));
            assert_ok(cus_buffer_fill_u32_async(b, 0, 0xabcdu, 2, s));
            assert_ok(cus_capture_leaves(&cap, leaves, &nleaves));
            assert_int_equal(nleaves, 1);
            assert_ptr_equal(leaves[0].graph, g);
            assert_ptr_not_equal(leaves[0].handle, up.handle);
            cus_autoptr(cus_graph) same = NULL;
            assert_ok(cus_capture_end(&cap, &same));
            assert_ptr_equal(same, g);
            assert_false(cap.open);
            assert_null(cap.graph);
        }
        assert_false(capturing(s));
        assert_ok(cus_graph_add_copy_to_host(g, leaves, nleaves, NULL, u32s(hout), b, 0,
                                             G_N * 4));
        assert_int_equal(node_count(g), 4);
        assert_int_equal(cus_graph_kept_objects(g), 2); /* a and b, each once */
        e = instantiate(g);
    } /* the stream, the buffers and the graph go: the exec keeps what it needs */
    cus_autoptr(cus_stream) s2 = new_stream(c, CU_STREAM_NON_BLOCKING);
    for (int r = 0; r < 2; r++) {
        memset(u32s(hout), 0, G_N * 4);
        assert_ok(cus_graph_exec_launch(e, s2));
        assert_ok(cus_stream_synchronize(s2));
        for (int i = 0; i < G_N; i++)
            assert_int_equal(u32s(hout)[i], i < 2 ? 0xabcdu : u32s(hin)[i]);
    }
    e = cus_graph_exec_unref(e);
}

/* While captured into, the graph is the driver's: cuscope's calls on it are
 * refused (no driver call), and a second capture into it too. */
static void test_graph_busy_while_captured_into(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_stream) s2 = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_buffer) a = new_buffer(c, 64);
    cus_autoptr(cus_graph) g = new_graph(c);
    cus_graph_node n0;
    assert_ok(cus_graph_add_empty(g, NULL, 0, &n0));
    cus_graph_exec *before = instantiate(g);
    {
        cus_capture_scope_to_graph(cap, s, g, NULL, 0, CU_STREAM_CAPTURE_MODE_RELAXED);
        assert_ok(cap.status);
        assert_ok(cus_buffer_fill_u32_async(a, 0, 1, 16, s));
        unsigned long calls = cus_fake_call_count();
        size_t n = 0;
        cus_graph_exec *e = NULL;
        assert_status(cus_graph_add_empty(g, NULL, 0, NULL), CUS_ERROR_INVALID_ARGUMENT);
        assert_non_null(strstr(cus_last_error_message(), "captured into"));
        assert_status(cus_graph_add_dependencies(g, &n0, &n0, 1), CUS_ERROR_INVALID_ARGUMENT);
        assert_status(cus_graph_node_count(g, &n), CUS_ERROR_INVALID_ARGUMENT);
        assert_status(cus_graph_nodes(g, NULL, &n), CUS_ERROR_INVALID_ARGUMENT);
        assert_status(cus_graph_instantiate(g, 0, &e), CUS_ERROR_INVALID_ARGUMENT);
        assert_null(e);
        /* graph_inspect.h's calls on it too. */
        CUgraphNodeType type;
        cus_graph *clone = NULL;
        assert_status(cus_graph_node_type(n0, &type), CUS_ERROR_INVALID_ARGUMENT);
        assert_status(cus_graph_node_dependents(n0, NULL, &n), CUS_ERROR_INVALID_ARGUMENT);
        assert_status(cus_graph_edges(g, NULL, NULL, &n), CUS_ERROR_INVALID_ARGUMENT);
        assert_status(cus_graph_debug_dot(g, "/dev/null", 0), CUS_ERROR_INVALID_ARGUMENT);
        assert_status(cus_graph_remove_dependencies(g, &n0, &n0, 1), CUS_ERROR_INVALID_ARGUMENT);
        assert_status(cus_graph_destroy_node(n0), CUS_ERROR_INVALID_ARGUMENT);
        assert_status(cus_graph_clone(g, &clone), CUS_ERROR_INVALID_ARGUMENT);
        assert_null(clone);
        assert_status(cus_graph_instantiate_with_params(g, 0, NULL, NULL, &e),
                      CUS_ERROR_INVALID_ARGUMENT);
        assert_null(e);
        cus_capture_guard second = cus_capture_begin_to_graph(s2, g, NULL, 0,
                                                              CU_STREAM_CAPTURE_MODE_RELAXED);
        assert_status(second.status, CUS_ERROR_INVALID_ARGUMENT);
        assert_false(second.open);
        assert_int_equal(cus_fake_call_count(), calls);
        assert_int_equal(cus_fake_active_captures(), 1);
        cus_autoptr(cus_graph) same = NULL;
        assert_ok(cus_capture_end(&cap, &same));
    }
    assert_int_equal(node_count(g), 2);
    assert_ok(cus_graph_add_empty(g, NULL, 0, NULL));
    /* An executable graph made before replays what it had (one empty node). */
    assert_ok(cus_graph_exec_launch(before, s));
    assert_ok(cus_stream_synchronize(s));
    before = cus_graph_exec_unref(before);
}

/* Bad input: refused before any driver call, nothing open, the graph usable. */
static void test_bad_input(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_context) other = new_ctx();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_stream) legacy = NULL;
    assert_ok(cus_stream_legacy(c, &legacy));
    cus_autoptr(cus_graph) g = new_graph(c);
    cus_autoptr(cus_graph) g2 = new_graph(c);
    cus_autoptr(cus_graph) elsewhere = new_graph(other);
    cus_graph_node mine, theirs;
    assert_ok(cus_graph_add_empty(g, NULL, 0, &mine));
    assert_ok(cus_graph_add_empty(g2, NULL, 0, &theirs));
    cus_graph_node none = {0};
    unsigned long calls = cus_fake_call_count();
    const CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_GLOBAL;
#define REFUSED(expr, want)                                                    \
    do {                                                                       \
        cus_capture_guard g_ = (expr);                                         \
        assert_status(g_.status, (want));                                    \
        assert_false(g_.open);                                                 \
        assert_null(g_.stream);                                                \
        assert_null(g_.graph);                                                 \
    } while (0)
    REFUSED(cus_capture_begin_to_graph(NULL, g, NULL, 0, m), CUS_ERROR_INVALID_ARGUMENT);
    REFUSED(cus_capture_begin_to_graph(s, NULL, NULL, 0, m), CUS_ERROR_INVALID_ARGUMENT);
    REFUSED(cus_capture_begin_to_graph(legacy, g, NULL, 0, m), CUS_ERROR_INVALID_ARGUMENT);
    REFUSED(cus_capture_begin_to_graph(s, g, NULL, 1, m), CUS_ERROR_INVALID_ARGUMENT);
    REFUSED(cus_capture_begin_to_graph(s, g, &theirs, 1, m), CUS_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(cus_last_error_message(), "another graph"));
    REFUSED(cus_capture_begin_to_graph(s, g, &none, 1, m), CUS_ERROR_INVALID_ARGUMENT);
    REFUSED(cus_capture_begin_to_graph(s, elsewhere, NULL, 0, m), CUS_ERROR_CONTEXT_MISMATCH);
#undef REFUSED
    /* More dependencies than fit on the stack, the last of another graph. */
    cus_graph_node many[20];
    for (int i = 0; i < 20; i++)
        many[i] = mine;
    many[19] = theirs;
    cus_capture_guard big = cus_capture_begin_to_graph(s, g, many, 20, m);
    assert_status(big.status, CUS_ERROR_INVALID_ARGUMENT);
    /* The leaves of no capture, of a closed one, of one that makes its graph. */
    cus_capture_guard closed = {0};
    size_t n = 4;
    cus_graph_node out[4];
    assert_status(cus_capture_leaves(NULL, out, &n), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_capture_leaves(&closed, out, &n), CUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(cus_fake_call_count(), calls);
    assert_false(capturing(s));
    {
        cus_capture_scope(cap, s, m);
        assert_ok(cap.status);
        assert_status(cus_capture_leaves(&cap, out, &n), CUS_ERROR_INVALID_ARGUMENT);
        assert_status(cus_capture_leaves(&cap, out, NULL), CUS_ERROR_INVALID_ARGUMENT);
    }
    assert_int_equal(n, 4);
    assert_int_equal(node_count(g), 1);
    assert_int_equal(cus_fake_active_captures(), 0);
    /* The driver refuses a stream that captures already. */
    {
        cus_capture_scope(cap, s, m);
        assert_ok(cap.status);
        cus_capture_guard again = cus_capture_begin_to_graph(s, g, NULL, 0, m);
        assert_status(again.status, CUDA_ERROR_ILLEGAL_STATE);
        assert_string_equal(cus_last_error()->driver_call, "cuStreamBeginCaptureToGraph");
        assert_false(again.open);
    }
    assert_int_equal(node_count(g), 1);
    assert_ok(cus_graph_add_empty(g, &mine, 1, NULL));
}

/* A driver before 12.3: the begin says which version it needs, before any
 * driver call; nothing open. */
static void test_older_driver(void **state)
{
    (void)state;
    cus_fake_config cfg = {.driver_version = 12020};
    assert_int_equal(env_setup_with(&cfg), 0);
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_graph) g = new_graph(c);
    unsigned long calls = cus_fake_call_count();
    cus_capture_guard cap = cus_capture_begin_to_graph(s, g, NULL, 0,
                                                       CU_STREAM_CAPTURE_MODE_GLOBAL);
    assert_status(cap.status, CUS_ERROR_NOT_SUPPORTED);
    assert_false(cap.open);
    assert_contains(cus_last_error_message(), "driver API 12.2");
    assert_contains(cus_last_error_message(), "cuStreamBeginCaptureToGraph");
    assert_contains(cus_last_error_message(), "12.3");
    assert_int_equal(cus_fake_call_count(), calls);
    assert_false(capturing(s));
}

/* The fake serves cuStreamBeginCaptureToGraph with the driver's rules. */
static void test_driver_failures(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_buffer) a = new_buffer(c, 64);
    cus_autoptr(cus_graph) g = new_graph(c);
    cus_graph_node n0;
    assert_ok(cus_graph_add_empty(g, NULL, 0, &n0));
    const CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_GLOBAL;
    /* The begin fails: nothing open, the graph usable. */
    assert_ok(cus_fake_fail_entry("cuStreamBeginCaptureToGraph", 1, FAULT, false));
    cus_capture_guard g1 = cus_capture_begin_to_graph(s, g, &n0, 1, m);
    assert_status(g1.status, CU(FAULT));
    assert_string_equal(cus_last_error()->driver_call, "cuStreamBeginCaptureToGraph");
    assert_false(g1.open);
    assert_false(capturing(s));
    assert_int_equal(node_count(g), 1);
    /* The capture cannot be tracked (its id): ended again, the graph kept. */
    assert_ok(cus_fake_fail_entry("cuStreamGetCaptureInfo", 1, FAULT, false));
    cus_capture_guard g2 = cus_capture_begin_to_graph(s, g, &n0, 1, m);
    assert_status(g2.status, CU(FAULT));
    assert_string_equal(cus_last_error()->driver_call, "cuStreamGetCaptureInfo");
    assert_false(capturing(s));
    assert_int_equal(cus_fake_active_captures(), 0);
    assert_int_equal(node_count(g), 1);
    assert_ok(cus_graph_add_empty(g, &n0, 1, NULL));
    assert_int_equal(node_count(g), 2);
    {
        cus_capture_scope_to_graph(cap, s, g, &n0, 1, m);
        assert_ok(cap.status);
        assert_ok(cus_buffer_fill_u32_async(a, 0, 1, 16, s));
        /* The leaves cannot be asked. */
        cus_graph_node leaves[2];
        size_t n = 2;
        assert_ok(cus_fake_fail_entry("cuStreamGetCaptureInfo_v2", 1, FAULT, false));
        assert_status(cus_capture_leaves(&cap, leaves, &n), CU(FAULT));
        assert_int_equal(n, 2);
        /* No room for the keep list in the graph: the capture stays open. */
        cus_graph *same = NULL;
        cus_debug_fail_host_alloc(1, false);
        assert_status(cus_capture_end(&cap, &same), CUS_ERROR_OUT_OF_HOST_MEMORY);
        cus_debug_fail_host_alloc(0, false);
        assert_null(same);
        assert_true(cap.open);
        assert_true(capturing(s));
        /* The end fails with the capture still open: the guard stays open. */
        assert_ok(cus_fake_fail_entry("cuStreamEndCapture", 1, FAULT, false));
        assert_status(cus_capture_end(&cap, &same), CU(FAULT));
        assert_null(same);
        assert_true(cap.open);
        assert_true(capturing(s));
        assert_ok(cus_capture_end(&cap, &same));
        assert_ptr_equal(same, g);
        same = cus_graph_unref(same);
    }
    assert_int_equal(node_count(g), 3);
    assert_int_equal(cus_graph_kept_objects(g), 1);
}

/* A keep that cannot allocate fails the call and queues nothing (the end
 * cannot discard a graph captured into). */
static void test_keep_out_of_memory(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_buffer) a = new_buffer(c, 64);
    cus_autoptr(cus_buffer) b = new_buffer(c, 64);
    cus_autoptr(cus_graph) g = new_graph(c);
    {
        cus_capture_scope_to_graph(cap, s, g, NULL, 0, CU_STREAM_CAPTURE_MODE_GLOBAL);
        assert_ok(cap.status);
        cus_debug_fail_host_alloc(1, false);
        assert_status(cus_copy_device_async(b, 0, a, 0, 64, s), CUS_ERROR_OUT_OF_HOST_MEMORY);
        assert_int_equal(cus_debug_host_alloc_faults(), 1);
        cus_debug_fail_host_alloc(0, false);
        assert_ok(cus_buffer_fill_u32_async(a, 0, 3, 16, s));
        cus_autoptr(cus_graph) same = NULL;
        assert_ok(cus_capture_end(&cap, &same));
    }
    assert_int_equal(node_count(g), 1); /* the fill; the copy was never queued */
    assert_int_equal(cus_graph_kept_objects(g), 1);
}

/* An invalidated capture, and an abandoned one: the graph stays usable and
 * keeps what the nodes the driver left there use. */
static cus_status abandon_after_copy(cus_stream *s, cus_graph *g, cus_buffer *a, cus_buffer *b)
{
    cus_capture_scope_to_graph(cap, s, g, NULL, 0, CU_STREAM_CAPTURE_MODE_GLOBAL);
    CUS_TRY(cap.status);
    CUS_TRY(cus_copy_device_async(b, 0, a, 0, 64, s));
    return CUS_SUCCESS; /* no end: the scope abandons it */
}

static void test_invalidated_and_abandoned(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_host_buffer) h = new_pinned(c, 64);
    cus_autoptr(cus_graph) g = new_graph(c);
    {
        cus_autoptr(cus_buffer) a = new_buffer(c, 64);
        {
            cus_capture_scope_to_graph(cap, s, g, NULL, 0, CU_STREAM_CAPTURE_MODE_GLOBAL);
            assert_ok(cap.status);
            assert_ok(cus_buffer_fill_u32_async(a, 0, 5, 16, s));
            assert_status(cus_stream_synchronize(s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
            size_t n = 1;
            cus_graph_node leaf;
            assert_status(cus_capture_leaves(&cap, &leaf, &n),
                          CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
            cus_graph *same = NULL;
            assert_status(cus_capture_end(&cap, &same), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
            assert_null(same);
            assert_false(cap.open);
        }
        assert_false(capturing(s));
    }
    /* The fake leaves the node captured before the invalidation (a guess at
     * the driver's behaviour): the graph keeps its buffer either way. */
    assert_int_equal(cus_graph_kept_objects(g), 1);
    size_t before = node_count(g);
    {
        cus_autoptr(cus_buffer) a = new_buffer(c, 64);
        cus_autoptr(cus_buffer) b = new_buffer(c, 64);
        assert_ok(cus_buffer_fill_u32_async(a, 0, 9, 16, s));
        assert_ok(abandon_after_copy(s, g, a, b));
        assert_false(capturing(s));
        assert_int_equal(cus_graph_kept_objects(g), 3);
        assert_int_equal(node_count(g), before + 1);
        assert_ok(cus_stream_synchronize(s));
    } /* a and b released: the graph holds them */
    cus_graph_node last;
    size_t n = 1;
    assert_ok(cus_graph_nodes(g, NULL, &n));
    assert_int_equal(n, before + 1);
    assert_ok(cus_graph_add_empty(g, NULL, 0, &last));
    cus_autoptr(cus_graph_exec) e = instantiate(g);
    assert_ok(cus_graph_exec_launch(e, s));
    assert_ok(cus_stream_synchronize(s));
    (void)h;
}

#ifdef CUS_TEST_HAVE_KERNELS
/* x, y up by hand; saxpy captured after them; y down by hand after the
 * captured leaf: everything released before the replay. */
static void test_mixed_saxpy(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_host_buffer) hx = new_pinned(c, G_N * 4);
    cus_autoptr(cus_host_buffer) hy = new_pinned(c, G_N * 4);
    cus_autoptr(cus_host_buffer) out = new_pinned(c, G_N * 4);
    fill_floats(hx, 1.0f, 0.5f);
    fill_floats(hy, -3.0f, 0.25f);
    cus_graph_exec *e = NULL;
    {
        cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
        cus_autoptr(cus_function) fn = NULL;
        cus_autoptr(cus_module) m = load_saxpy(c, &fn);
        assert_non_null(m);
        cus_autoptr(cus_buffer) x = new_buffer(c, G_N * 4);
        cus_autoptr(cus_buffer) y = new_buffer(c, G_N * 4);
        cus_autoptr(cus_graph) g = new_graph(c);
        cus_graph_node ups[2];
        assert_ok(cus_graph_add_copy_to_device(g, NULL, 0, &ups[0], x, 0,
                                               cus_host_buffer_data(hx), G_N * 4));
        assert_ok(cus_graph_add_copy_to_device(g, NULL, 0, &ups[1], y, 0,
                                               cus_host_buffer_data(hy), G_N * 4));
        cus_graph_node leaf;
        size_t n = 1;
        {
            cus_capture_scope_to_graph(cap, s, g, ups, 2, CU_STREAM_CAPTURE_MODE_GLOBAL);
            assert_ok(cap.status);
            assert_ok(cus_launch(fn, cus_grid_for(G_N, 32), 32, 0, s, 2.0f, x, y,
                                 (unsigned long long)G_N));
            assert_ok(cus_capture_leaves(&cap, &leaf, &n));
            cus_autoptr(cus_graph) same = NULL;
            assert_ok(cus_capture_end(&cap, &same));
        }
        assert_ok(cus_graph_add_copy_to_host(g, &leaf, n, NULL, cus_host_buffer_data(out), y, 0,
                                             G_N * 4));
        assert_int_equal(node_count(g), 4);
        assert_int_equal(cus_graph_kept_objects(g), 3); /* x, y, the module */
        e = instantiate(g);
    }
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    assert_ok(cus_graph_exec_launch(e, s));
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(atomic_load(&saxpy_runs), 1);
    const float *o = cus_host_buffer_data(out), *px = cus_host_buffer_data(hx),
                *py = cus_host_buffer_data(hy);
    for (int i = 0; i < G_N; i++)
        assert_true(o[i] == 2.0f * px[i] + py[i]);
    e = cus_graph_exec_unref(e);
}
#endif

/* --- 2D and 3D copy nodes ------------------------------------------------------------------ */

#define W 16 /* elements of a row */
#define H 8  /* rows */
#define D 2  /* slices */

static cus_array *new_array(cus_context *c, size_t w, size_t h, size_t d)
{
    CUDA_ARRAY3D_DESCRIPTOR desc;
    memset(&desc, 0, sizeof desc);
    desc.Width = w;
    desc.Height = h;
    desc.Depth = d;
    desc.Format = CU_AD_FORMAT_UNSIGNED_INT32;
    desc.NumChannels = 1;
    cus_array *a = NULL;
    assert_ok(cus_array_create(c, &desc, &a));
    return a;
}

static cus_copy_2d_desc desc_2d(cus_copy_endpoint dst, cus_copy_endpoint src, size_t w,
                                size_t h)
{
    cus_copy_2d_desc d = {dst, src, w, h};
    return d;
}

/* host -> pitched buffer -> 2D array -> host, and host -> 3D array ->
 * linear buffer -> host: everything released before the replay. */
static void test_copy_nodes(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    uint32_t in2[H][W], out2[H][W], in3[D][H / 2][W], out3[D][H / 2][W];
    for (int i = 0; i < H * W; i++)
        (&in2[0][0])[i] = 1000u + (uint32_t)i;
    for (int i = 0; i < D * H / 2 * W; i++)
        (&in3[0][0][0])[i] = 5000u + (uint32_t)i * 7u;
    memset(out2, 0, sizeof out2);
    memset(out3, 0, sizeof out3);
    cus_graph_exec *e = NULL;
    cus_graph_node to_host2 = {0}, to_row = {0};
    uint32_t row[8];
    memset(row, 0, sizeof row);
    {
        size_t pitch = 0;
        cus_autoptr(cus_buffer) p = NULL;
        assert_ok(cus_buffer_alloc_pitch(c, W * 4, H, 4, &p, &pitch));
        assert_true(pitch > W * 4);
        cus_autoptr(cus_array) a2 = new_array(c, W, H, 0);
        cus_autoptr(cus_array) a3 = new_array(c, W, H / 2, D);
        cus_autoptr(cus_buffer) lin = new_buffer(c, sizeof in3);
        cus_autoptr(cus_graph) g = new_graph(c);
        cus_graph_node n1, n2, n3, n4;
        cus_copy_2d_desc d1 = desc_2d(cus_copy_buffer(p, 0, 0), cus_copy_host(in2, W * 4),
                                      W * 4, H);
        assert_ok(cus_graph_add_copy_2d(g, NULL, 0, &n1, &d1));
        cus_copy_2d_desc d2 = desc_2d(cus_copy_array(a2, 0, 0), cus_copy_buffer(p, 0, 0),
                                      W * 4, H);
        assert_ok(cus_graph_add_copy_2d(g, &n1, 1, &n2, &d2));
        cus_copy_2d_desc d3 = desc_2d(cus_copy_host(out2, W * 4), cus_copy_array(a2, 0, 0),
                                      W * 4, H);
        assert_ok(cus_graph_add_copy_2d(g, &n2, 1, &to_host2, &d3));
        cus_copy_3d_desc d4 = {cus_copy_array(a3, 0, 0), cus_copy_host(in3, W * 4), W * 4,
                               H / 2, D};
        assert_ok(cus_graph_add_copy_3d(g, NULL, 0, &n3, &d4));
        cus_copy_3d_desc d5 = {cus_copy_buffer(lin, 0, W * 4), cus_copy_array(a3, 0, 0), W * 4,
                               H / 2, D};
        assert_ok(cus_graph_add_copy_3d(g, &n3, 1, &n4, &d5));
        assert_ok(cus_graph_add_copy_to_host(g, &n4, 1, NULL, out3, lin, 0, sizeof out3));
        /* One row (32 bytes at x 16 of row 1 of lin): a 1-D copy node. */
        cus_copy_2d_desc d6 = desc_2d(cus_copy_host(row, 32), cus_copy_buffer(lin, W * 4 + 16, 0),
                                      32, 1);
        assert_ok(cus_graph_add_copy_2d(g, &n4, 1, &to_row, &d6));
        assert_int_equal(cus_graph_kept_objects(g), 4); /* p, a2, a3, lin */
        e = instantiate(g);
    } /* the buffers, arrays and graph go */
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    assert_ok(cus_graph_exec_launch(e, s));
    assert_ok(cus_stream_synchronize(s));
    assert_memory_equal(out2, in2, sizeof in2);
    assert_memory_equal(out3, in3, sizeof in3);
    for (int i = 0; i < 8; i++)
        assert_int_equal(row[i], (&in3[0][0][0])[W + 4 + i]);
    /* The driver updates copy nodes whose operands are 1-dimensional only,
     * before and after (cuda.h, cuGraphExecMemcpyNodeSetParams): no rows,
     * no slices, no arrays. */
    uint32_t part[8];
    memset(part, 0, sizeof part);
    cus_copy_2d_desc sub = desc_2d(cus_copy_host(part, 32), cus_copy_array(NULL, 16, 1), 32, 1);
    assert_status(cus_graph_exec_set_copy_2d(e, to_row, &sub), CUS_ERROR_INVALID_ARGUMENT);
    {
        /* The exec holds the array through its graph; borrow it back. */
        cus_autoptr(cus_array) a2 = new_array(c, W, H, 0);
        cus_autoptr(cus_buffer) src = new_buffer(c, 4 * W * 4);
        cus_copy_2d_desc fill = desc_2d(cus_copy_buffer(src, 0, W * 4), cus_copy_host(in2, W * 4),
                                        W * 4, 4);
        assert_ok(cus_copy_2d(&fill));
        /* Rows, slices or an array: refused before the driver sees them. */
        unsigned long calls = cus_fake_call_count();
        cus_copy_2d_desc rows = desc_2d(cus_copy_host(part, 16), cus_copy_buffer(src, 16, W * 4),
                                        16, 2);
        assert_status(cus_graph_exec_set_copy_2d(e, to_row, &rows), CUS_ERROR_NOT_SUPPORTED);
        cus_copy_3d_desc slices = {cus_copy_host(part, 16), cus_copy_buffer(src, 0, W * 4), 16, 1,
                                   2};
        slices.src.rows = 2;
        slices.dst.rows = 1;
        assert_status(cus_graph_exec_set_copy_3d(e, to_row, &slices), CUS_ERROR_NOT_SUPPORTED);
        cus_copy_2d_desc of_array = desc_2d(cus_copy_host(part, 32), cus_copy_array(a2, 16, 1),
                                            32, 1);
        assert_status(cus_graph_exec_set_copy_2d(e, to_row, &of_array), CUS_ERROR_NOT_SUPPORTED);
        assert_int_equal(cus_fake_call_count(), calls);
        /* One row, for a node of rows: the driver refuses it. */
        sub = desc_2d(cus_copy_host(part, 32), cus_copy_buffer(src, W * 4 + 16, 0), 32, 1);
        size_t objects = cus_debug_live_objects();
        assert_status(cus_graph_exec_set_copy_2d(e, to_host2, &sub), CU(CUDA_ERROR_INVALID_VALUE));
        assert_int_equal(cus_debug_live_objects(), objects);
        /* One row, for the one-row node: 32 bytes at x 16 of row 1. */
        assert_ok(cus_fake_fail_entry("cuGraphExecMemcpyNodeSetParams", 1, FAULT, false));
        assert_status(cus_graph_exec_set_copy_2d(e, to_row, &sub), CU(FAULT));
        assert_int_equal(cus_debug_live_objects(), objects);
        assert_ok(cus_graph_exec_set_copy_2d(e, to_row, &sub));
        /* A region that leaves the buffer: no driver call. */
        calls = cus_fake_call_count();
        cus_copy_2d_desc wide = desc_2d(cus_copy_host(part, 64),
                                        cus_copy_buffer(src, 4 * W * 4 - 16, 0), 64, 1);
        assert_status(cus_graph_exec_set_copy_2d(e, to_row, &wide), CUS_ERROR_OUT_OF_RANGE);
        cus_copy_3d_desc deep = {cus_copy_host(part, 32), cus_copy_array(a2, 16, 1), 32, 2, 2};
        assert_status(cus_graph_exec_set_copy_3d(e, to_row, &deep), CUS_ERROR_OUT_OF_RANGE);
        assert_status(cus_graph_exec_set_copy_2d(e, to_row, NULL), CUS_ERROR_INVALID_ARGUMENT);
        assert_status(cus_graph_exec_set_copy_2d(NULL, to_row, &sub), CUS_ERROR_INVALID_ARGUMENT);
        assert_int_equal(cus_fake_call_count(), calls);
    } /* the exec keeps the new buffer */
    assert_ok(cus_graph_exec_launch(e, s));
    assert_ok(cus_stream_synchronize(s));
    for (int i = 0; i < 8; i++)
        assert_int_equal(part[i], in2[1][4 + i]);
    e = cus_graph_exec_unref(e);
}

/* Bounds, kinds and contexts, as cus_copy_2d/3d check them: no driver call,
 * nothing kept; and the driver call's failure. */
static void test_copy_node_bad_input(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_context) other = new_ctx();
    cus_autoptr(cus_buffer) p = NULL;
    size_t pitch = 0;
    assert_ok(cus_buffer_alloc_pitch(c, W * 4, H, 4, &p, &pitch));
    cus_autoptr(cus_buffer) elsewhere = new_buffer(other, 4096);
    cus_autoptr(cus_array) a = new_array(c, W, H, 0);
    cus_autoptr(cus_graph) g = new_graph(c);
    cus_autoptr(cus_graph) g2 = new_graph(c);
    cus_graph_node theirs;
    assert_ok(cus_graph_add_empty(g2, NULL, 0, &theirs));
    uint32_t host[H + 1][W];
    unsigned long calls = cus_fake_call_count();
    cus_copy_2d_desc ok = desc_2d(cus_copy_buffer(p, 0, 0), cus_copy_host(host, W * 4), W * 4, H);
    cus_copy_2d_desc d;
    d = desc_2d(cus_copy_buffer(p, 0, 0), cus_copy_host(host, W * 4), W * 4, H + 1);
    assert_status(cus_graph_add_copy_2d(g, NULL, 0, NULL, &d), CUS_ERROR_OUT_OF_RANGE);
    d = desc_2d(cus_copy_array(a, 8, 0), cus_copy_host(host, W * 4), W * 4, H);
    assert_status(cus_graph_add_copy_2d(g, NULL, 0, NULL, &d), CUS_ERROR_OUT_OF_RANGE);
    d = desc_2d(cus_copy_buffer(p, 0, 16), cus_copy_host(host, W * 4), W * 4, H);
    assert_status(cus_graph_add_copy_2d(g, NULL, 0, NULL, &d), CUS_ERROR_INVALID_ARGUMENT);
    d = desc_2d(cus_copy_buffer(p, 0, 0), cus_copy_host(host, W * 4), 0, H);
    assert_status(cus_graph_add_copy_2d(g, NULL, 0, NULL, &d), CUS_ERROR_INVALID_ARGUMENT);
    d = desc_2d(cus_copy_host(host, W * 4), cus_copy_host(host, W * 4), W * 4, H);
    assert_status(cus_graph_add_copy_2d(g, NULL, 0, NULL, &d), CUS_ERROR_INVALID_ARGUMENT);
    d = desc_2d(cus_copy_buffer(elsewhere, 0, W * 4), cus_copy_host(host, W * 4), W * 4, H);
    assert_status(cus_graph_add_copy_2d(g, NULL, 0, NULL, &d), CUS_ERROR_CONTEXT_MISMATCH);
    d = ok;
    d.src.kind = CUS_COPY_NONE;
    assert_status(cus_graph_add_copy_2d(g, NULL, 0, NULL, &d), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_add_copy_2d(g, &theirs, 1, NULL, &ok), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_add_copy_2d(g, NULL, 0, NULL, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_add_copy_2d(NULL, NULL, 0, NULL, &ok), CUS_ERROR_INVALID_ARGUMENT);
    cus_copy_3d_desc d3 = {cus_copy_buffer(p, 0, 0), cus_copy_host(host, W * 4), W * 4, H, 2};
    assert_status(cus_graph_add_copy_3d(g, NULL, 0, NULL, &d3), CUS_ERROR_OUT_OF_RANGE);
    d3.depth = 0;
    assert_status(cus_graph_add_copy_3d(g, NULL, 0, NULL, &d3), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_add_copy_3d(g, NULL, 0, NULL, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(cus_fake_call_count(), calls);
    assert_int_equal(cus_graph_kept_objects(g), 0);
    cus_graph_node out = {0};
    assert_ok(cus_fake_fail_entry("cuGraphAddMemcpyNode", 1, FAULT, false));
    assert_status(cus_graph_add_copy_2d(g, NULL, 0, &out, &ok), CU(FAULT));
    assert_string_equal(cus_last_error()->driver_call, "cuGraphAddMemcpyNode");
    assert_ok(cus_fake_fail_entry("cuGraphAddMemcpyNode", 1, FAULT, false));
    d3.depth = 1;
    assert_status(cus_graph_add_copy_3d(g, NULL, 0, &out, &d3), CU(FAULT));
    assert_null(out.handle);
    assert_int_equal(cus_graph_kept_objects(g), 0);
    assert_int_equal(node_count(g), 0);
    assert_ok(cus_graph_add_copy_3d(g, NULL, 0, &out, &d3));
    assert_non_null(out.handle);
    assert_int_equal(cus_graph_kept_objects(g), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_added_captured_added),
        ENV_TEST(test_graph_busy_while_captured_into),
        ENV_TEST(test_bad_input),
        ENV_TEST(test_older_driver),
        ENV_TEST(test_driver_failures),
        ENV_TEST(test_keep_out_of_memory),
        ENV_TEST(test_invalidated_and_abandoned),
#ifdef CUS_TEST_HAVE_KERNELS
        ENV_TEST(test_mixed_saxpy),
#endif
        ENV_TEST(test_copy_nodes),
        ENV_TEST(test_copy_node_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
