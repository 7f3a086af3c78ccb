/* The fake_graph tests, part handles: misuse; handles, leaks, streams and
 * contexts going away, poisoned contexts; graph memory nodes. Their
 * fixtures, and what the fake_graph tests are about: fake_graph_fixtures.h. */
#include "fake_graph_fixtures.h"

/* ============================================================================
 * misuse: dangling replays, destroyed handles
 * ========================================================================== */

/* The bug cuscope's keep-alive prevents: a replay after the memory it uses
 * was freed is reported, every time, and does nothing. */
static void test_a_replay_of_freed_memory_is_reported(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    CUdeviceptr d = new_buffer(N * 4);
    uint32_t *in = new_pinned(N * 4), *out = new_pinned(N * 4);
    seed(in, 3);
    CUgraph g = capture_round_trip(s, d, in, out);
    CUgraphExec x = instantiate(g);
    assert_cu_ok(D.free(d));
    assert_int_equal(cus_fake_misuse_count(), 0);
    assert_cu_ok(D.graph_launch(x, s)); /* the launch itself is accepted */
    assert_cu_ok(D.stream_sync(s));
    assert_int_equal(cus_fake_misuse_count(), 2); /* both copies */
    assert_contains(cus_fake_last_misuse(), "use after free of device memory");
    assert_contains(cus_fake_last_misuse(), "by cuGraphLaunch queued on stream");
    assert_int_equal(out[0], 0);
    assert_cu_ok(D.graph_launch(x, s));
    assert_cu_ok(D.stream_sync(s));
    assert_int_equal(cus_fake_misuse_count(), 4);
    assert_cu_ok(D.exec_destroy(x));
    assert_cu_ok(D.graph_destroy(g));
    assert_cu_ok(D.free_host(in));
    assert_cu_ok(D.free_host(out));
    assert_cu_ok(D.stream_destroy(s));
}

static void test_a_kernel_replay_with_a_freed_pointer_is_reported(void **state)
{
    (void)state;
    scale_probe pr = {0};
    assert_ok(cus_fake_register_kernel("scale", scale_twin, &pr));
    CUmodule m = load_module();
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    CUdeviceptr d = new_buffer(N * 4);
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu_ok(launch_scale(function(m, "scale"), s, d, N, 2));
    CUgraph g = end_capture(s);
    CUgraphExec x = instantiate(g);
    assert_cu_ok(D.graph_launch(x, s));
    assert_cu_ok(D.stream_sync(s));
    assert_int_equal(pr.runs, 1);
    assert_cu_ok(D.free(d));
    assert_cu_ok(D.graph_launch(x, s));
    assert_cu_ok(D.stream_sync(s));
    assert_int_equal(pr.runs, 1); /* skipped */
    assert_int_equal(cus_fake_misuse_count(), 1);
    assert_contains(cus_fake_last_misuse(), "argument 0 of kernel 'scale'");
    assert_contains(cus_fake_last_misuse(), "use after free");
    /* Unloaded module: the replayed launch is skipped as misuse. */
    assert_cu_ok(D.unload(m));
    assert_cu_ok(D.graph_launch(x, s));
    assert_cu_ok(D.stream_sync(s));
    assert_contains(cus_fake_last_misuse(), "after its module");
    assert_cu_ok(D.exec_destroy(x));
    assert_cu_ok(D.graph_destroy(g));
    assert_ok(cus_fake_register_kernel("scale", NULL, NULL));
    assert_cu_ok(D.stream_destroy(s));
}

static void test_destroyed_graph_handles_are_misuse(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUgraph g = end_capture(s);
    CUgraphExec x = instantiate(g);
    assert_cu_ok(D.graph_destroy(g));
    assert_cu(D.graph_destroy(g), CUDA_ERROR_INVALID_VALUE);
    assert_contains(cus_fake_last_misuse(), "double destroy of graph");
    size_t n = 0;
    assert_cu(D.get_nodes(g, NULL, &n), CUDA_ERROR_INVALID_VALUE);
    assert_contains(cus_fake_last_misuse(), "used after cuGraphDestroy");
    CUgraphExec x2 = NULL;
    assert_cu(D.instantiate(&x2, g, 0), CUDA_ERROR_INVALID_VALUE);
    assert_cu_ok(D.exec_destroy(x));
    assert_cu(D.exec_destroy(x), CUDA_ERROR_INVALID_VALUE);
    assert_contains(cus_fake_last_misuse(), "double destroy of executable graph");
    assert_cu(D.graph_launch(x, s), CUDA_ERROR_INVALID_VALUE);
    assert_contains(cus_fake_last_misuse(), "used after cuGraphExecDestroy");
    assert_cu(D.graph_launch((CUgraphExec)(uintptr_t)&n, s), CUDA_ERROR_INVALID_VALUE);
    assert_contains(cus_fake_last_misuse(), "unknown executable graph");
    assert_cu(D.graph_destroy((CUgraph)(uintptr_t)&n), CUDA_ERROR_INVALID_VALUE);
    assert_contains(cus_fake_last_misuse(), "unknown graph");
    assert_int_equal(cus_fake_misuse_count(), 7);
    assert_cu_ok(D.stream_destroy(s));
}

/* Node handles among many (the fake's set of every node since install grows
 * past several sizes here): each live node is found, those of a destroyed
 * graph are reported as used after it, and an address no node had as
 * unknown. */
static void test_node_handles_among_many(void **state)
{
    (void)state;
    enum { GRAPHS = 3, NODES = 150 };
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    CUdeviceptr p = new_buffer(64);
    CUgraph g[GRAPHS];
    CUgraphNode nodes[GRAPHS][NODES];
    for (int k = 0; k < GRAPHS; k++) {
        assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
        for (int i = 0; i < NODES; i++)
            assert_cu_ok(D.memset32_async(p, (unsigned int)i, 16, s));
        g[k] = end_capture(s);
        size_t n = NODES;
        assert_cu_ok(D.get_nodes(g[k], nodes[k], &n));
        assert_int_equal(n, NODES);
    }
    assert_cu_ok(D.graph_destroy(g[1]));
    for (int k = 0; k < GRAPHS; k++) {
        for (int i = 0; i < NODES; i++) {
            CUgraphNodeType t = CU_GRAPH_NODE_TYPE_EMPTY;
            if (k == 1) {
                assert_cu(D.node_type(nodes[k][i], &t), CUDA_ERROR_INVALID_VALUE);
                assert_contains(cus_fake_last_misuse(), "used after its graph was destroyed");
            } else {
                assert_cu_ok(D.node_type(nodes[k][i], &t));
                assert_int_equal(t, CU_GRAPH_NODE_TYPE_MEMSET);
            }
        }
    }
    assert_int_equal(cus_fake_misuse_count(), NODES);
    CUgraphNodeType t;
    assert_cu(D.node_type((CUgraphNode)(uintptr_t)&t, &t), CUDA_ERROR_INVALID_VALUE);
    assert_contains(cus_fake_last_misuse(), "unknown graph node handle");
    assert_cu_ok(D.graph_destroy(g[0]));
    assert_cu_ok(D.graph_destroy(g[2]));
    assert_cu_ok(D.free(p));
    assert_cu_ok(D.stream_destroy(s));
}

/* ============================================================================
 * handles: leaks, streams and contexts going away, poisoned contexts
 * ========================================================================== */

static void test_graph_handles_are_counted(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    size_t any = cus_fake_live_handles(CUS_FAKE_HANDLE_ANY);
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUgraph g = end_capture(s);
    CUgraphExec x = instantiate(g);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_GRAPH), 1);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_GRAPH_EXEC), 1);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), any + 2);
    /* A leaked graph is what the teardown check sees. */
    assert_cu_ok(D.graph_destroy(g));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), any + 1);
    assert_cu_ok(D.exec_destroy(x));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), any);
    assert_cu_ok(D.stream_destroy(s));
}

static void test_a_stream_destroyed_while_capturing(void **state)
{
    (void)state;
    CUstream s1 = new_stream(CU_STREAM_NON_BLOCKING), s2 = new_stream(CU_STREAM_NON_BLOCKING);
    CUevent e = new_event();
    int runs = 0;
    size_t handles = cus_fake_live_handles(CUS_FAKE_HANDLE_ANY);
    /* A joined stream: the capture is invalidated. */
    assert_cu_ok(D.begin(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu_ok(D.event_record(e, s1));
    assert_cu_ok(D.wait_event(s2, e, 0));
    assert_cu_ok(D.stream_destroy(s2));
    assert_int_equal(status_of(s1), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    CUgraph g = NULL;
    assert_cu(D.end(s1, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    /* The origin: the capture and its graph go. */
    assert_cu_ok(D.begin(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu_ok(D.host_fn(s1, count_fn, &runs));
    assert_cu_ok(D.stream_destroy(s1));
    assert_int_equal(cus_fake_active_captures(), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), handles - 2);
    assert_int_equal(runs, 0);
    assert_cu_ok(D.event_destroy(e));
}

/* A context's death takes its executable graphs and its captures in
 * progress (with their graphs); a graph it made outlives it, as on the H200
 * (test/rules/expected.txt: cuGraphDestroy, cuGraphGetNodes and
 * cuGraphNodeGetType of it succeed). */
static void test_a_graph_outlives_its_context(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING), s2 = new_stream(CU_STREAM_NON_BLOCKING);
    int runs = 0;
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu_ok(D.host_fn(s, count_fn, &runs));
    CUgraph g = end_capture(s);
    CUgraphExec x = instantiate(g);
    assert_cu_ok(D.graph_launch(x, s)); /* queued: runs before the context goes */
    assert_cu_ok(D.begin(s2, CU_STREAM_CAPTURE_MODE_RELAXED)); /* in progress */
    CUgraph captured = NULL;
    CUstreamCaptureStatus st2;
    assert_cu_ok(D.info_v2(s2, &st2, NULL, &captured, NULL, NULL));
    assert_cu_ok(D.ctx_destroy(ctx));
    ctx = NULL;
    assert_int_equal(runs, 1);
    assert_int_equal(cus_fake_active_captures(), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_GRAPH_EXEC), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_GRAPH), 1);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 1);
    assert_int_equal(cus_fake_misuse_count(), 0);

    /* With no context at all: the graph calls that need none. */
    assert_int_equal(node_count(g), 1);
    CUgraphNode node = NULL;
    size_t n = 1;
    assert_cu_ok(D.get_nodes(g, &node, &n));
    assert_int_equal(type_of(node), CU_GRAPH_NODE_TYPE_HOST);
    CUgraphExec x2 = NULL;
    assert_cu(D.instantiate(&x2, g, 0), CUDA_ERROR_INVALID_CONTEXT); /* needs one */
    /* In a new context: a graph of host functions only still instantiates,
     * and its executable graph is the current context's. */
    assert_cu_ok(D.ctx_create(&ctx, 0, 0));
    x2 = instantiate(g);
    CUstream s3 = new_stream(CU_STREAM_NON_BLOCKING);
    assert_cu_ok(D.graph_launch(x2, s3));
    assert_cu_ok(D.stream_sync(s3));
    assert_int_equal(runs, 2);
    assert_int_equal(cus_fake_misuse_count(), 0);
    assert_cu_ok(D.exec_destroy(x2));
    assert_cu_ok(D.stream_destroy(s3));
    assert_cu_ok(D.graph_destroy(g));

    /* What died with the context is misuse. */
    assert_cu(D.exec_destroy(x), CUDA_ERROR_INVALID_VALUE);
    assert_contains(cus_fake_last_misuse(), "used after its context was destroyed");
    assert_cu(D.graph_destroy(captured), CUDA_ERROR_INVALID_VALUE);
    assert_contains(cus_fake_last_misuse(), "capture was discarded with its context");
    assert_int_equal(cus_fake_misuse_count(), 2);
}

/* A graph whose kernel node lost its function with the context it was
 * captured in: read and destroyed, but not instantiated (misuse). */
static void test_a_graph_whose_kernel_died_with_its_context(void **state)
{
    (void)state;
    CUmodule m = load_module();
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    CUdeviceptr d = new_buffer(N * 4);
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu_ok(launch_scale(function(m, "scale"), s, d, N, 2));
    CUgraph g = end_capture(s);
    assert_cu_ok(D.ctx_destroy(ctx));
    ctx = NULL;
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 1); /* the graph */
    assert_int_equal(node_count(g), 1);
    assert_cu_ok(D.ctx_create(&ctx, 0, 0));
    CUgraphExec x = NULL;
    assert_cu(D.instantiate(&x, g, 0), CUDA_ERROR_INVALID_VALUE);
    assert_null(x);
    assert_int_equal(cus_fake_misuse_count(), 1);
    assert_contains(cus_fake_last_misuse(), "kernel node 0 ('scale') lost its function");
    assert_cu_ok(D.graph_destroy(g));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_GRAPH), 0);
}

/* A joined stream of another context: its context's death breaks the capture. */
static void test_a_joined_stream_of_a_dying_context(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    CUevent e = new_event();
    CUcontext c2 = NULL;
    assert_cu_ok(D.ctx_create(&c2, 0, 0));
    CUstream t = new_stream(CU_STREAM_NON_BLOCKING);
    assert_cu_ok(D.pop(NULL));
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    assert_cu_ok(D.event_record(e, s));
    assert_cu_ok(D.wait_event(t, e, 0));
    assert_int_equal(status_of(t), CU_STREAM_CAPTURE_STATUS_ACTIVE);
    assert_cu_ok(D.ctx_destroy(c2));
    assert_int_equal(status_of(s), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    CUgraph g = NULL;
    assert_cu(D.end(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    assert_int_equal(cus_fake_misuse_count(), 0);
    assert_cu_ok(D.event_destroy(e));
    assert_cu_ok(D.stream_destroy(s));
}

static void test_a_poisoned_context(void **state)
{
    (void)state;
    scale_probe pr = {.result = CUDA_ERROR_ILLEGAL_ADDRESS};
    assert_ok(cus_fake_register_kernel("scale", scale_twin, &pr));
    CUmodule m = load_module();
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING), s2 = new_stream(CU_STREAM_NON_BLOCKING);
    CUdeviceptr d = new_buffer(N * 4);
    int runs = 0;
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu_ok(launch_scale(function(m, "scale"), s, d, N, 2));
    assert_cu_ok(D.host_fn(s, count_fn, &runs));
    CUgraph g = end_capture(s);
    CUgraphExec x = instantiate(g);
    assert_cu_ok(D.begin(s2, CU_STREAM_CAPTURE_MODE_RELAXED));
    assert_cu_ok(D.graph_launch(x, s));
    const CUresult E = CUDA_ERROR_ILLEGAL_ADDRESS;
    assert_cu(D.stream_sync(s), E); /* the replayed kernel faulted */
    assert_int_equal(runs, 1); /* host functions still run */
    /* From now on: the sticky error, as on the H200, for what runs or
     * instantiates; the graph calls that only read or change parameters
     * still answer, and the graph destroys and the end still work. */
    assert_cu(D.graph_launch(x, s), E);
    assert_cu(D.upload(x, s), E);
    CUgraphExec x2 = NULL;
    assert_cu(D.instantiate(&x2, g, 0), E);
    size_t n = 0;
    assert_cu_ok(D.get_nodes(g, NULL, &n));
    assert_int_equal(n, 2);
    assert_cu(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL), E);
    CUstreamCaptureStatus st;
    assert_cu(D.is_capturing(s2, &st), E);
    CUgraphExecUpdateResultInfo info;
    assert_cu_ok(D.update(x, g, &info));
    CUgraph dropped = (CUgraph)(uintptr_t)1;
    assert_cu(D.end(s2, &dropped), E); /* ended, and nothing returned */
    assert_null(dropped);
    assert_int_equal(cus_fake_active_captures(), 0);
    assert_cu_ok(D.exec_destroy(x));
    assert_cu_ok(D.graph_destroy(g));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_GRAPH), 0);
    /* The frees, stream destroys and unloads do not: the context's death
     * releases what it has. */
    assert_cu(D.free(d), E);
    assert_cu(D.stream_destroy(s), E);
    assert_cu(D.stream_destroy(s2), E);
    assert_cu(D.unload(m), E);
    assert_ok(cus_fake_register_kernel("scale", NULL, NULL));
    assert_cu_ok(D.ctx_destroy(ctx));
    ctx = NULL;
    assert_int_equal(cus_fake_misuse_count(), 0);
}

/* ============================================================================
 * graph memory: allocation and free nodes
 * ========================================================================== */

static void test_allocation_and_free_nodes(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    uint32_t *out = new_pinned(N * 4);
    size_t mem = cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY);
    size_t bytes = cus_fake_device_bytes_in_use(0);
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUdeviceptr p = 0;
    assert_cu_ok(D.alloc_async(&p, N * 4, s));
    assert_true(p != 0);
    assert_cu_ok(D.memset32_async(p, 0x55, N, s));
    assert_cu_ok(D.dtoh_async(out, p, N * 4, s));
    assert_cu_ok(D.free_async(p, s));
    assert_cu(D.free_async(p, s), CUDA_ERROR_INVALID_VALUE); /* freed in this graph already */
    CUgraph g = end_capture(s);
    static const CUgraphNodeType want[] = {CU_GRAPH_NODE_TYPE_MEM_ALLOC, CU_GRAPH_NODE_TYPE_MEMSET,
                                           CU_GRAPH_NODE_TYPE_MEMCPY, CU_GRAPH_NODE_TYPE_MEM_FREE};
    assert_node_types(g, want, 4);
    /* The allocation exists (fixed address) as long as the graph. */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY), mem + 1);
    assert_int_equal(cus_fake_device_bytes_in_use(0), bytes + N * 4);
    CUgraphExec x = instantiate(g);
    /* One executable graph at a time for a graph with memory nodes. */
    CUgraphExec x2 = NULL;
    assert_cu(D.instantiate(&x2, g, 0), CUDA_ERROR_INVALID_VALUE);
    for (int r = 0; r < 3; r++) {
        memset(out, 0, N * 4);
        assert_cu_ok(D.graph_launch(x, s)); /* freed in the graph: relaunchable */
        assert_cu_ok(D.stream_sync(s));
        assert_int_equal(out[N - 1], 0x55);
    }
    assert_cu_ok(D.graph_destroy(g));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY), mem + 1); /* the exec */
    assert_cu_ok(D.graph_launch(x, s));
    assert_cu_ok(D.exec_destroy(x)); /* the queued launch still runs */
    assert_cu_ok(D.stream_sync(s));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY), mem);
    assert_int_equal(cus_fake_device_bytes_in_use(0), bytes);
    assert_int_equal(cus_fake_misuse_count(), 0);
    /* A free node takes a graph allocation only. */
    CUdeviceptr plain = new_buffer(16);
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    assert_cu(D.free_async(plain, s), CUDA_ERROR_INVALID_VALUE);
    g = end_capture(s);
    assert_int_equal(node_count(g), 0);
    assert_cu_ok(D.graph_destroy(g));
    assert_cu_ok(D.free(plain));
    assert_cu_ok(D.free_host(out));
    assert_cu_ok(D.stream_destroy(s));
}

static void test_an_allocation_left_allocated_by_a_launch(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    uint32_t *out = new_pinned(16);
    size_t mem = cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY);
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUdeviceptr p = 0;
    assert_cu_ok(D.alloc_async(&p, 16, s));
    assert_cu_ok(D.memset8_async(p, 9, 16, s));
    CUgraph g = end_capture(s);
    CUgraphExec x = instantiate(g);
    /* Not freeable before a launch allocated it. */
    assert_cu(D.free_async(p, s), CUDA_ERROR_INVALID_VALUE);
    assert_contains(cus_fake_last_misuse(), "no graph launch left allocated");
    assert_cu_ok(D.graph_launch(x, s));
    /* Still allocated: a relaunch is refused, and nothing is queued. */
    assert_cu(D.graph_launch(x, s), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cus_fake_stream_pending(s), 2);
    /* It is usable after the launch, in stream order, like any allocation. */
    assert_cu_ok(D.dtoh_async(out, p, 16, s));
    assert_cu_ok(D.stream_sync(s));
    assert_int_equal(out[0], 0x09090909u);
    assert_cu_ok(D.free_async(p, s));
    assert_cu_ok(D.graph_launch(x, s));
    assert_cu_ok(D.stream_sync(s));
    assert_cu_ok(D.free(p)); /* cuMemFree too */
    /* AUTO_FREE_ON_LAUNCH relaunches over it. */
    assert_cu_ok(D.exec_destroy(x));
    assert_cu_ok(D.instantiate(&x, g, 1));
    assert_cu_ok(D.graph_launch(x, s));
    assert_cu_ok(D.graph_launch(x, s));
    assert_cu_ok(D.stream_sync(s));
    assert_cu_ok(D.exec_destroy(x));
    assert_cu_ok(D.graph_destroy(g));
    /* Left allocated by the last launch: it lives on until freed. */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY), mem + 1);
    assert_cu_ok(D.dtoh_async(out, p, 16, s));
    assert_cu_ok(D.free_async(p, s));
    assert_cu_ok(D.stream_sync(s));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY), mem);
    /* And now it is gone for good. */
    assert_int_equal(cus_fake_misuse_count(), 1);
    assert_cu(D.dtoh_async(out, p, 16, s), CUDA_ERROR_INVALID_VALUE);
    assert_contains(cus_fake_last_misuse(), "graph allocation");
    assert_cu_ok(D.free_host(out));
    assert_cu_ok(D.stream_destroy(s));
}

static void test_graph_memory_outside_its_lifetime_is_reported(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    uint32_t *out = new_pinned(16);
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUdeviceptr p = 0;
    assert_cu_ok(D.alloc_async(&p, 16, s));
    assert_cu_ok(D.free_async(p, s));
    CUgraph g = end_capture(s);
    /* Before any launch, and after one (it freed it). */
    assert_cu_ok(D.dtoh_async(out, p, 16, s));
    assert_cu_ok(D.stream_sync(s));
    assert_int_equal(cus_fake_misuse_count(), 1);
    assert_contains(cus_fake_last_misuse(), "outside its lifetime");
    CUgraphExec x = instantiate(g);
    assert_cu_ok(D.graph_launch(x, s));
    assert_cu_ok(D.dtoh_async(out, p, 16, s));
    assert_cu_ok(D.stream_sync(s));
    assert_int_equal(cus_fake_misuse_count(), 2);
    assert_cu_ok(D.exec_destroy(x));
    assert_cu_ok(D.graph_destroy(g));
    assert_cu_ok(D.free_host(out));
    assert_cu_ok(D.stream_destroy(s));
}

/* Another graph may free an allocation that a launch left allocated. */
static void test_a_graph_frees_another_graphs_allocation(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    size_t mem = cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY);
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUdeviceptr p = 0;
    assert_cu_ok(D.alloc_async(&p, 64, s));
    CUgraph alloc = end_capture(s);
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu_ok(D.memset8_async(p, 3, 64, s));
    assert_cu_ok(D.free_async(p, s));
    CUgraph use_and_free = end_capture(s);
    static const CUgraphNodeType want[] = {CU_GRAPH_NODE_TYPE_MEMSET, CU_GRAPH_NODE_TYPE_MEM_FREE};
    assert_node_types(use_and_free, want, 2);
    CUgraphExec xa = instantiate(alloc), xf = instantiate(use_and_free);
    for (int r = 0; r < 2; r++) {
        assert_cu_ok(D.graph_launch(xa, s));
        assert_cu_ok(D.graph_launch(xf, s));
    }
    assert_cu_ok(D.stream_sync(s));
    assert_int_equal(cus_fake_misuse_count(), 0);
    /* Freed already: a second free is a double free, refused at the launch. */
    assert_cu(D.graph_launch(xf, s), CUDA_ERROR_INVALID_VALUE);
    assert_contains(cus_fake_last_misuse(), "double free");
    assert_int_equal(cus_fake_stream_pending(s), 0);
    assert_cu_ok(D.exec_destroy(xa));
    assert_cu_ok(D.exec_destroy(xf));
    assert_cu_ok(D.graph_destroy(alloc));
    assert_cu_ok(D.graph_destroy(use_and_free));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY), mem);
    assert_cu_ok(D.stream_destroy(s));
}

/* A context's death takes its graph allocations, allocated or not (the
 * graph that allocates them stays, but cannot be instantiated again). */
static void test_graph_memory_goes_with_its_context(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUdeviceptr p = 0, q = 0;
    assert_cu_ok(D.alloc_async(&p, 64, s));
    assert_cu_ok(D.alloc_async(&q, 64, s));
    assert_cu_ok(D.free_async(q, s));
    CUgraph g = end_capture(s);
    CUgraphExec x = instantiate(g);
    assert_cu_ok(D.graph_launch(x, s)); /* leaves p allocated */
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUdeviceptr r = 0;
    assert_cu_ok(D.alloc_async(&r, 64, s)); /* in a capture in progress */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY), 3);
    assert_cu_ok(D.ctx_destroy(ctx));
    ctx = NULL;
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 1); /* g */
    assert_int_equal(cus_fake_device_bytes_in_use(0), 0);
    assert_int_equal(cus_fake_misuse_count(), 0);
    (void)x; /* gone with the context */
    assert_cu_ok(D.ctx_create(&ctx, 0, 0));
    CUgraphExec x2 = NULL;
    assert_cu(D.instantiate(&x2, g, 0), CUDA_ERROR_INVALID_VALUE);
    assert_contains(cus_fake_last_misuse(), "memory node 0 lost its allocation");
    assert_cu_ok(D.graph_destroy(g));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_GRAPH), 0);
}

static void test_a_prefetch_cannot_be_captured(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    CUdeviceptr m = 0;
    assert_cu_ok(D.alloc_managed(&m, 64, CU_MEM_ATTACH_GLOBAL));
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu(D.prefetch(m, 64, 0, s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CUgraph g = NULL;
    assert_cu(D.end(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    assert_cu_ok(D.free(m));
    assert_cu_ok(D.stream_destroy(s));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        MISUSE_TEST(test_a_replay_of_freed_memory_is_reported),
        MISUSE_TEST(test_a_kernel_replay_with_a_freed_pointer_is_reported),
        MISUSE_TEST(test_destroyed_graph_handles_are_misuse),
        MISUSE_TEST(test_node_handles_among_many),
        G_TEST(test_graph_handles_are_counted),
        G_TEST(test_a_stream_destroyed_while_capturing),
        MISUSE_TEST(test_a_graph_outlives_its_context),
        MISUSE_TEST(test_a_graph_whose_kernel_died_with_its_context),
        G_TEST(test_a_joined_stream_of_a_dying_context),
        G_TEST(test_a_poisoned_context),
        G_TEST(test_allocation_and_free_nodes),
        MISUSE_TEST(test_an_allocation_left_allocated_by_a_launch),
        MISUSE_TEST(test_graph_memory_outside_its_lifetime_is_reported),
        MISUSE_TEST(test_a_graph_frees_another_graphs_allocation),
        MISUSE_TEST(test_graph_memory_goes_with_its_context),
        G_TEST(test_a_prefetch_cannot_be_captured),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
