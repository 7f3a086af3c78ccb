/* The fake_graph tests, part replay: fork and join, captured events; replay;
 * cuGraphExecUpdate. Their fixtures, and what the fake_graph tests are
 * about: fake_graph_fixtures.h. */
#include "fake_graph_fixtures.h"

/* ============================================================================
 * fork and join, captured events
 * ========================================================================== */

static void test_fork_and_join_across_streams(void **state)
{
    (void)state;
    CUstream s1 = new_stream(CU_STREAM_NON_BLOCKING), s2 = new_stream(CU_STREAM_NON_BLOCKING);
    CUevent fork = new_event(), join = new_event();
    CUdeviceptr d = new_buffer(N * 4);
    uint32_t *in = new_pinned(N * 4), *out = new_pinned(N * 4);
    assert_cu_ok(D.begin(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu_ok(D.htod_async(d, in, N * 4, s1));            /* node 0 */
    assert_cu_ok(D.event_record(fork, s1));
    assert_int_equal(status_of(s2), CU_STREAM_CAPTURE_STATUS_NONE);
    assert_cu_ok(D.wait_event(s2, fork, 0));                   /* s2 joins */
    assert_int_equal(status_of(s2), CU_STREAM_CAPTURE_STATUS_ACTIVE);
    CUstreamCaptureStatus st1, st2;
    cuuint64_t id1 = 0, id2 = 0;
    assert_cu_ok(D.info(s1, &st1, &id1));
    assert_cu_ok(D.info(s2, &st2, &id2));
    assert_int_equal(id1, id2); /* one capture */
    assert_cu_ok(D.memset32_async(d + N * 2, 7, N / 2, s2)); /* node 1, after node 0 */
    assert_cu_ok(D.event_record(join, s2));
    assert_cu_ok(D.wait_event(s1, join, 0));                   /* s1 takes s2's work back */
    const CUgraphNode *deps = NULL;
    size_t ndeps = 0;
    CUgraph building = NULL;
    assert_cu_ok(D.info_v2(s1, &st1, NULL, &building, &deps, &ndeps));
    assert_int_equal(ndeps, 2); /* node 0 and node 1 */
    assert_cu_ok(D.dtoh_async(out, d, N * 4, s1));            /* node 2 */
    /* Events recorded in a capture only order captured work. */
    assert_cu(D.event_query(fork), CUDA_ERROR_CAPTURED_EVENT);
    assert_cu(D.event_sync(join), CUDA_ERROR_CAPTURED_EVENT);
    CUgraph g = end_capture(s1);
    assert_ptr_equal(g, building);
    assert_int_equal(status_of(s2), CU_STREAM_CAPTURE_STATUS_NONE);
    static const CUgraphNodeType want[] = {CU_GRAPH_NODE_TYPE_MEMCPY, CU_GRAPH_NODE_TYPE_MEMSET,
                                           CU_GRAPH_NODE_TYPE_MEMCPY};
    assert_node_types(g, want, 3);
    /* Replayed in a valid order: the memset after the upload, the download last. */
    CUgraphExec x = instantiate(g);
    for (int r = 0; r < 3; r++) {
        seed(in, (uint32_t)r * 1000);
        assert_cu_ok(D.graph_launch(x, s2));
        assert_cu_ok(D.stream_sync(s2));
        for (int i = 0; i < N; i++)
            assert_int_equal(out[i], i < N / 2 ? (uint32_t)r * 1000 + (uint32_t)i : 7u);
    }
    /* After the capture, the events are still marked until recorded again. */
    assert_cu(D.wait_event(s2, fork, 0), CUDA_ERROR_CAPTURED_EVENT);
    assert_cu_ok(D.event_record(fork, s2));
    assert_cu_ok(D.event_sync(fork));
    assert_cu_ok(D.exec_destroy(x));
    assert_cu_ok(D.graph_destroy(g));
    assert_cu_ok(D.event_destroy(fork));
    assert_cu_ok(D.event_destroy(join));
    assert_cu_ok(D.free_host(in));
    assert_cu_ok(D.free_host(out));
    assert_cu_ok(D.free(d));
    assert_cu_ok(D.stream_destroy(s1));
    assert_cu_ok(D.stream_destroy(s2));
}

static void test_an_unjoined_fork_fails_the_end(void **state)
{
    (void)state;
    CUstream s1 = new_stream(CU_STREAM_NON_BLOCKING), s2 = new_stream(CU_STREAM_NON_BLOCKING);
    CUevent fork = new_event();
    int runs = 0;
    size_t handles = cus_fake_live_handles(CUS_FAKE_HANDLE_ANY);
    /* A fork with no work of its own needs no join. */
    assert_cu_ok(D.begin(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu_ok(D.host_fn(s1, count_fn, &runs));
    assert_cu_ok(D.event_record(fork, s1));
    assert_cu_ok(D.wait_event(s2, fork, 0));
    assert_cu_ok(D.host_fn(s1, count_fn, &runs));
    CUgraph g = end_capture(s1);
    assert_int_equal(status_of(s2), CU_STREAM_CAPTURE_STATUS_NONE);
    assert_cu_ok(D.graph_destroy(g));
    /* With work that was never joined back: the end fails, and ends it all. */
    assert_cu_ok(D.begin(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu_ok(D.event_record(fork, s1));
    assert_cu_ok(D.wait_event(s2, fork, 0));
    assert_cu_ok(D.host_fn(s2, count_fn, &runs));
    assert_cu_ok(D.host_fn(s1, count_fn, &runs));
    g = (CUgraph)(uintptr_t)0x1;
    assert_cu(D.end(s1, &g), CUDA_ERROR_STREAM_CAPTURE_UNJOINED);
    assert_null(g);
    assert_int_equal(status_of(s1), CU_STREAM_CAPTURE_STATUS_NONE);
    assert_int_equal(status_of(s2), CU_STREAM_CAPTURE_STATUS_NONE);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), handles);
    assert_int_equal(runs, 0);
    assert_cu_ok(D.event_destroy(fork));
    assert_cu_ok(D.stream_destroy(s1));
    assert_cu_ok(D.stream_destroy(s2));
}

static void test_waits_across_capture_boundaries(void **state)
{
    (void)state;
    CUstream a = new_stream(CU_STREAM_NON_BLOCKING), b = new_stream(CU_STREAM_NON_BLOCKING);
    CUevent outside = new_event(), in_a = new_event(), never = new_event();
    CUgraph g = NULL;
    /* An event recorded outside the capture: isolation. */
    assert_cu_ok(D.event_record(outside, b));
    assert_cu_ok(D.begin(a, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu_ok(D.wait_event(a, never, 0)); /* never recorded: nothing to wait for */
    assert_cu(D.wait_event(a, outside, 0), CUDA_ERROR_STREAM_CAPTURE_ISOLATION);
    assert_int_equal(status_of(a), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    assert_cu(D.end(a, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    /* An event of another capture: the two would merge. */
    assert_cu_ok(D.begin(a, CU_STREAM_CAPTURE_MODE_RELAXED));
    assert_cu_ok(D.begin(b, CU_STREAM_CAPTURE_MODE_RELAXED));
    assert_int_equal(cus_fake_active_captures(), 2);
    assert_cu_ok(D.event_record(in_a, a));
    assert_cu(D.wait_event(b, in_a, 0), CUDA_ERROR_STREAM_CAPTURE_MERGE);
    assert_int_equal(status_of(b), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    assert_int_equal(status_of(a), CU_STREAM_CAPTURE_STATUS_ACTIVE);
    assert_cu(D.end(b, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    /* External waits are not emulated. */
    assert_cu(D.wait_event(a, in_a, CU_EVENT_WAIT_EXTERNAL), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    assert_cu(D.end(a, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    /* The legacy stream cannot join. */
    CUstream nb = new_stream(CU_STREAM_NON_BLOCKING); /* the legacy stream stays usable */
    assert_cu_ok(D.begin(nb, CU_STREAM_CAPTURE_MODE_RELAXED));
    assert_cu_ok(D.event_record(in_a, nb));
    assert_cu(D.wait_event(NULL, in_a, 0), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    assert_cu(D.end(nb, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    /* Timing of a captured event. */
    float ms = 0;
    assert_cu(D.elapsed(&ms, in_a, in_a), CUDA_ERROR_CAPTURED_EVENT);
    assert_int_equal(cus_fake_misuse_count(), 0);
    assert_cu_ok(D.event_destroy(outside));
    assert_cu_ok(D.event_destroy(in_a));
    assert_cu_ok(D.event_destroy(never));
    assert_cu_ok(D.stream_destroy(a));
    assert_cu_ok(D.stream_destroy(b));
    assert_cu_ok(D.stream_destroy(nb));
}

static void test_capture_info_of_every_variant(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    int runs = 0;
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    cuuint64_t id = 5;
    assert_cu(D.info(s, NULL, &id), CUDA_ERROR_INVALID_VALUE);
    assert_cu_ok(D.info(s, &st, &id));
    assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_NONE);
    assert_int_equal(id, 5); /* untouched */
    assert_cu(D.is_capturing(s, NULL), CUDA_ERROR_INVALID_VALUE);
    cuuint64_t ids[2];
    for (int i = 0; i < 2; i++) {
        assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
        assert_cu_ok(D.info(s, &st, &ids[i]));
        assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
        if (i == 0) {
            CUgraph g = NULL;
            const CUgraphNode *deps = (const CUgraphNode *)&runs;
            size_t ndeps = 9;
            assert_cu_ok(D.info_v2(s, &st, NULL, &g, &deps, &ndeps));
            assert_non_null(g);
            assert_int_equal(ndeps, 0);
            assert_cu_ok(D.host_fn(s, count_fn, &runs));
            assert_cu_ok(D.info_v2(s, &st, &id, &g, &deps, &ndeps));
            assert_int_equal(id, ids[0]);
            assert_int_equal(ndeps, 1);
            /* The graph being captured may be looked at, not destroyed or instantiated. */
            assert_int_equal(node_count(g), 1);
            CUgraphNode node = NULL;
            size_t one = 1;
            assert_cu_ok(D.get_nodes(g, &node, &one));
            assert_ptr_equal(deps[0], node);
            assert_cu(D.graph_destroy(g), CUDA_ERROR_ILLEGAL_STATE);
            CUgraphExec x = NULL;
            assert_cu(D.instantiate(&x, g, 0), CUDA_ERROR_ILLEGAL_STATE);
            assert_null(x);
#if CUDA_VERSION >= 12030
            const CUgraphEdgeData *edges = NULL;
            assert_cu(D.info_v3(s, &st, NULL, NULL, NULL, &edges, &ndeps),
                      CUDA_ERROR_INVALID_VALUE);
            assert_cu_ok(D.info_v3(s, &st, NULL, NULL, &deps, &edges, &ndeps));
            assert_int_equal(ndeps, 1);
            assert_non_null(edges);
            assert_int_equal(edges[0].type, 0);
            assert_int_equal(edges[0].from_port, 0);
#endif
            assert_ptr_equal(end_capture(s), g);
            assert_cu_ok(D.graph_destroy(g));
        } else {
            CUgraph g = end_capture(s);
            assert_cu_ok(D.graph_destroy(g));
        }
    }
    assert_true(ids[1] > ids[0]); /* unique */
    assert_cu_ok(D.stream_destroy(s));
}

/* ============================================================================
 * replay
 * ========================================================================== */

static void test_replay_copies_kernel_and_host_function_every_time(void **state)
{
    (void)state;
    scale_probe pr = {0};
    assert_ok(cus_fake_register_kernel("scale", scale_twin, &pr));
    CUmodule m = load_module();
    CUfunction f = function(m, "scale");
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING), other = new_stream(0);
    CUdeviceptr d = new_buffer(N * 4);
    uint32_t *in = new_pinned(N * 4), *out = new_pinned(N * 4);
    int runs = 0;
    unsigned long launches = cus_fake_launch_count();
    CUgraph g = capture_pipeline(s, f, d, in, out, 3, &runs);
    assert_int_equal(pr.runs, 0);
    /* The captured launch is recorded, marked. */
    assert_int_equal(cus_fake_launch_count(), launches + 1);
    cus_fake_launch rec;
    assert_ok(cus_fake_last_launch(&rec));
    assert_true(rec.captured);
    assert_null(rec.graph_exec);
    assert_string_equal(rec.function, "scale");
    static const CUgraphNodeType want[] = {CU_GRAPH_NODE_TYPE_MEMCPY, CU_GRAPH_NODE_TYPE_KERNEL,
                                           CU_GRAPH_NODE_TYPE_MEMCPY, CU_GRAPH_NODE_TYPE_HOST};
    assert_node_types(g, want, 4);
    CUgraphExec x = instantiate(g);
    for (int r = 1; r <= 3; r++) {
        seed(in, (uint32_t)r * 100);
        CUstream on = r == 2 ? other : s;
        assert_cu_ok(D.graph_launch(x, on));
        assert_int_equal(cus_fake_stream_pending(on), 4);
        assert_int_equal(runs, r - 1); /* nothing at launch */
        /* Each replay's kernel node is a launch record. */
        assert_int_equal(cus_fake_launch_count(), launches + 1 + (unsigned long)r);
        assert_ok(cus_fake_last_launch(&rec));
        assert_false(rec.captured);
        assert_ptr_equal(rec.graph_exec, x);
        assert_ptr_equal(rec.stream, on);
        assert_int_equal(rec.block[0], 32);
        CUdeviceptr p;
        memcpy(&p, rec.args, sizeof p);
        assert_int_equal(p, d);
        assert_cu_ok(D.stream_sync(on));
        assert_int_equal(runs, r);
        assert_int_equal(pr.runs, r);
        assert_ptr_equal(pr.last_exec, x);
        for (int i = 0; i < N; i++)
            assert_int_equal(out[i], ((uint32_t)r * 100 + (uint32_t)i) * 3u);
    }
    /* Launches queue behind each other, and behind earlier work. */
    seed(in, 1);
    assert_cu_ok(D.graph_launch(x, s));
    assert_cu_ok(D.graph_launch(x, s));
    assert_cu_ok(D.stream_sync(s));
    assert_int_equal(runs, 5);
    assert_int_equal(out[1], 2 * 3);
    /* The graph can go: the executable graph is independent. */
    assert_cu_ok(D.graph_destroy(g));
    assert_cu_ok(D.graph_launch(x, s));
    assert_cu_ok(D.stream_sync(s));
    assert_int_equal(runs, 6);
    assert_cu_ok(D.exec_destroy(x));
    assert_ok(cus_fake_register_kernel("scale", NULL, NULL));
    assert_cu_ok(D.free_host(in));
    assert_cu_ok(D.free_host(out));
    assert_cu_ok(D.free(d));
    assert_cu_ok(D.unload(m));
    assert_cu_ok(D.stream_destroy(s));
    assert_cu_ok(D.stream_destroy(other));
}

static void test_graph_launch_and_upload_errors(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    int runs = 0;
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu_ok(D.host_fn(s, count_fn, &runs));
    CUgraph g = end_capture(s);
    CUgraphExec x = instantiate(g);
    assert_cu(D.graph_launch(NULL, s), CUDA_ERROR_INVALID_VALUE);
    assert_cu(D.upload(NULL, s), CUDA_ERROR_INVALID_VALUE);
    /* Upload: validated, nothing queued; the legacy stream is fine. */
    assert_cu_ok(D.upload(x, s));
    assert_cu_ok(D.upload(x, NULL));
    assert_int_equal(cus_fake_stream_pending(s), 0);
    /* A stream of another context. */
    CUcontext other = NULL;
    assert_cu_ok(D.ctx_create(&other, 0, 0));
    CUstream foreign = new_stream(0);
    assert_cu(D.graph_launch(x, foreign), CUDA_ERROR_INVALID_VALUE);
    assert_cu(D.upload(x, foreign), CUDA_ERROR_INVALID_VALUE);
    assert_cu_ok(D.stream_destroy(foreign));
    assert_cu_ok(D.ctx_destroy(other)); /* off the top: ctx is current again */
    /* On a capturing stream (a child graph: not emulated). */
    CUstream cap = new_stream(CU_STREAM_NON_BLOCKING);
    CUgraph dropped = NULL;
    for (int way = 0; way < 2; way++) {
        assert_cu_ok(D.begin(cap, CU_STREAM_CAPTURE_MODE_GLOBAL));
        assert_cu(way ? D.upload(x, cap) : D.graph_launch(x, cap),
                  CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
        assert_cu(D.graph_launch(x, cap), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
        assert_cu(D.end(cap, &dropped), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    }
    /* On the legacy stream while a blocking stream captures. */
    CUstream blocking = new_stream(0);
    assert_cu_ok(D.begin(blocking, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu(D.graph_launch(x, NULL), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    assert_cu(D.end(blocking, &dropped), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    assert_cu_ok(D.graph_launch(x, NULL));
    assert_cu_ok(D.stream_sync(NULL));
    assert_int_equal(runs, 1);
    assert_int_equal(cus_fake_misuse_count(), 0);
    assert_cu_ok(D.exec_destroy(x));
    assert_cu_ok(D.graph_destroy(g));
    assert_cu_ok(D.stream_destroy(s));
    assert_cu_ok(D.stream_destroy(cap));
    assert_cu_ok(D.stream_destroy(blocking));
}

static void test_instantiate_flags_and_errors(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    CUdeviceptr d = new_buffer(64);
    int runs = 0;
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu_ok(D.memset8_async(d, 1, 64, s));
    CUgraph copies = end_capture(s);
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu_ok(D.host_fn(s, count_fn, &runs));
    CUgraph host = end_capture(s);
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUgraph empty = end_capture(s);
    CUgraphExec x = NULL;
    assert_cu(D.instantiate(NULL, copies, 0), CUDA_ERROR_INVALID_VALUE);
    assert_cu(D.instantiate(&x, NULL, 0), CUDA_ERROR_INVALID_VALUE);
    assert_cu(D.instantiate(&x, copies, 1ull << 20), CUDA_ERROR_INVALID_VALUE);
    assert_cu(D.instantiate(&x, copies, 2), CUDA_ERROR_INVALID_VALUE); /* UPLOAD */
    assert_cu(D.instantiate(&x, copies, 4 | 1), CUDA_ERROR_INVALID_VALUE);
    /* DEVICE_LAUNCH: kernels, copies and memsets only, and not empty. */
    assert_cu(D.instantiate(&x, host, 4), CUDA_ERROR_INVALID_VALUE);
    assert_cu(D.instantiate(&x, empty, 4), CUDA_ERROR_INVALID_VALUE);
    assert_null(x);
    size_t execs = cus_fake_live_handles(CUS_FAKE_HANDLE_GRAPH_EXEC);
    assert_cu_ok(D.instantiate(&x, copies, 4));
    assert_cu_ok(D.exec_destroy(x));
    assert_cu_ok(D.instantiate(&x, copies, 8)); /* USE_NODE_PRIORITY */
    CUgraphExec x2 = NULL;
    assert_cu_ok(D.instantiate(&x2, copies, 1)); /* several executable graphs of one graph */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_GRAPH_EXEC), execs + 2);
    assert_cu_ok(D.exec_destroy(x));
    assert_cu_ok(D.exec_destroy(x2));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_GRAPH_EXEC), execs);
    assert_cu_ok(D.graph_destroy(copies));
    assert_cu_ok(D.graph_destroy(host));
    assert_cu_ok(D.graph_destroy(empty));
    assert_cu_ok(D.free(d));
    assert_cu_ok(D.stream_destroy(s));
}

static void test_exec_update_replaces_the_parameters(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    CUdeviceptr d1 = new_buffer(N * 4), d2 = new_buffer(N * 4);
    uint32_t *in1 = new_pinned(N * 4), *out1 = new_pinned(N * 4);
    uint32_t *in2 = new_pinned(N * 4), *out2 = new_pinned(N * 4);
    seed(in1, 10);
    seed(in2, 20);
    CUgraph a = capture_round_trip(s, d1, in1, out1);
    CUgraph b = capture_round_trip(s, d2, in2, out2);
    CUgraphExec x = instantiate(a);
    assert_cu_ok(D.graph_launch(x, s)); /* queued before the update: keeps a's */
    CUgraphExecUpdateResultInfo info;
    memset(&info, 0xff, sizeof info);
    assert_cu_ok(D.update(x, b, &info));
    assert_int_equal(info.result, CU_GRAPH_EXEC_UPDATE_SUCCESS);
    assert_null(info.errorNode);
    assert_null(info.errorFromNode);
    assert_cu_ok(D.stream_sync(s));
    assert_int_equal(out1[5], 15);
    assert_int_equal(out2[5], 0);
    assert_cu_ok(D.graph_launch(x, s));
    assert_cu_ok(D.stream_sync(s));
    assert_int_equal(out2[5], 25);
    /* The older variant. */
    CUgraphNode err = (CUgraphNode)(uintptr_t)1;
    CUgraphExecUpdateResult res = CU_GRAPH_EXEC_UPDATE_ERROR;
    assert_cu_ok(D.update_v1(x, a, &err, &res));
    assert_int_equal(res, CU_GRAPH_EXEC_UPDATE_SUCCESS);
    assert_null(err);
    memset(out1, 0, N * 4);
    assert_cu_ok(D.graph_launch(x, s));
    assert_cu_ok(D.stream_sync(s));
    assert_int_equal(out1[5], 15);
    /* Destroying the graphs leaves the executable graph working. */
    assert_cu_ok(D.graph_destroy(a));
    assert_cu_ok(D.graph_destroy(b));
    assert_cu_ok(D.graph_launch(x, s));
    assert_cu_ok(D.stream_sync(s));
    assert_cu_ok(D.exec_destroy(x));
    uint32_t *hosts[] = {in1, out1, in2, out2};
    for (int i = 0; i < 4; i++)
        assert_cu_ok(D.free_host(hosts[i]));
    assert_cu_ok(D.free(d1));
    assert_cu_ok(D.free(d2));
    assert_cu_ok(D.stream_destroy(s));
}

static void expect_update_failure(CUgraphExec x, CUgraph g, CUgraphExecUpdateResult want,
                                  bool node_blamed)
{
    CUgraphExecUpdateResultInfo info;
    memset(&info, 0, sizeof info);
    assert_cu(D.update(x, g, &info), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
    assert_int_equal(info.result, want);
    if (node_blamed)
        assert_non_null(info.errorNode);
    else
        assert_null(info.errorNode);
    CUgraphNode err = NULL;
    CUgraphExecUpdateResult res = CU_GRAPH_EXEC_UPDATE_SUCCESS;
    assert_cu(D.update_v1(x, g, &err, &res), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
    assert_int_equal(res, want);
    assert_ptr_equal(err, info.errorNode);
}

static void test_exec_update_refuses_a_changed_graph(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING), s2 = new_stream(CU_STREAM_NON_BLOCKING);
    CUevent e = new_event();
    CUdeviceptr d = new_buffer(N * 4), d2 = new_buffer(N * 4);
    uint32_t *in = new_pinned(N * 4), *out = new_pinned(N * 4);
    int runs = 0;
    seed(in, 40);
    CUgraph base = capture_round_trip(s, d, in, out);
    CUgraphExec x = instantiate(base);
    /* One node more: the topology. */
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu_ok(D.htod_async(d, in, N * 4, s));
    assert_cu_ok(D.dtoh_async(out, d, N * 4, s));
    assert_cu_ok(D.host_fn(s, count_fn, &runs));
    CUgraph more = end_capture(s);
    expect_update_failure(x, more, CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED, false);
    /* A memset where a copy was: the node type. */
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu_ok(D.htod_async(d, in, N * 4, s));
    assert_cu_ok(D.memset8_async(d, 0, 16, s));
    CUgraph typed = end_capture(s);
    expect_update_failure(x, typed, CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED, true);
    /* Device to device where device to host was: the memory type. */
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu_ok(D.htod_async(d, in, N * 4, s));
    assert_cu_ok(D.dtod_async(d2, d, N * 4, s));
    CUgraph params = end_capture(s);
    expect_update_failure(x, params, CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED, true);
    /* Two independent copies (a fork) where one followed the other: the edges. */
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu_ok(D.event_record(e, s));
    assert_cu_ok(D.wait_event(s2, e, 0));
    assert_cu_ok(D.htod_async(d, in, N * 4, s));
    assert_cu_ok(D.dtoh_async(out, d2, N * 4, s2));
    assert_cu_ok(D.event_record(e, s2));
    assert_cu_ok(D.wait_event(s, e, 0));
    CUgraph edges = end_capture(s);
    CUgraphExecUpdateResultInfo info;
    assert_cu(D.update(x, edges, &info), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
    assert_int_equal(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
    assert_non_null(info.errorNode);
    /* Bad arguments. */
    assert_cu(D.update(x, base, NULL), CUDA_ERROR_INVALID_VALUE);
    assert_cu(D.update(NULL, base, &info), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(info.result, CU_GRAPH_EXEC_UPDATE_ERROR);
    CUgraphNode err;
    assert_cu(D.update_v1(x, base, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
    (void)err;
    /* The executable graph still replays what it had. */
    assert_cu_ok(D.graph_launch(x, s));
    assert_cu_ok(D.stream_sync(s));
    assert_int_equal(out[3], 43);
    assert_int_equal(runs, 0);
    assert_int_equal(cus_fake_misuse_count(), 0);
    CUgraph all[] = {base, more, typed, params, edges};
    for (int i = 0; i < 5; i++)
        assert_cu_ok(D.graph_destroy(all[i]));
    assert_cu_ok(D.exec_destroy(x));
    assert_cu_ok(D.event_destroy(e));
    assert_cu_ok(D.free_host(in));
    assert_cu_ok(D.free_host(out));
    assert_cu_ok(D.free(d));
    assert_cu_ok(D.free(d2));
    assert_cu_ok(D.stream_destroy(s));
    assert_cu_ok(D.stream_destroy(s2));
}

static void test_exec_update_of_kernel_nodes(void **state)
{
    (void)state;
    assert_ok(cus_fake_register_kernel("scale", scale_twin, NULL));
    CUmodule m = load_module();
    CUfunction scale = function(m, "scale"), other = function(m, "other");
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    CUdeviceptr d = new_buffer(N * 4);
    uint32_t *in = new_pinned(N * 4), *out = new_pinned(N * 4);
    int runs = 0;
    seed(in, 1);
    CUgraph by2 = capture_pipeline(s, scale, d, in, out, 2, &runs);
    CUgraph by5 = capture_pipeline(s, scale, d, in, out, 5, &runs);
    CUgraphExec x = instantiate(by2);
    CUgraphExecUpdateResultInfo info;
    assert_cu_ok(D.update(x, by5, &info)); /* new kernel arguments */
    assert_cu_ok(D.graph_launch(x, s));
    assert_cu_ok(D.stream_sync(s));
    assert_int_equal(out[2], 3 * 5);
    /* Another function of the same context is fine too. */
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu_ok(D.htod_async(d, in, N * 4, s));
    CUdeviceptr p = d;
    void *args[] = {&p};
    assert_cu_ok(D.launch(other, 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
    assert_cu_ok(D.dtoh_async(out, d, N * 4, s));
    assert_cu_ok(D.host_fn(s, count_fn, &runs));
    CUgraph swapped = end_capture(s);
    assert_cu_ok(D.update(x, swapped, &info));
    /* A cooperative launch where a plain one was: a parameter change. */
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu_ok(D.htod_async(d, in, N * 4, s));
    CUlaunchAttribute at = {.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE};
    at.value.cooperative = 1;
    CUlaunchConfig cfg = {.gridDimX = 1, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 1,
                          .blockDimY = 1, .blockDimZ = 1, .hStream = s, .attrs = &at,
                          .numAttrs = 1};
    assert_cu_ok(D.launch_ex(&cfg, other, args, NULL));
    assert_cu_ok(D.dtoh_async(out, d, N * 4, s));
    assert_cu_ok(D.host_fn(s, count_fn, &runs));
    CUgraph coop = end_capture(s);
    expect_update_failure(x, coop, CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED, true);
    /* A kernel of another context: an unsupported function change. */
    CUcontext c2 = NULL;
    assert_cu_ok(D.ctx_create(&c2, 0, 0));
    CUmodule m2 = load_module();
    CUstream s2 = new_stream(CU_STREAM_NON_BLOCKING);
    CUdeviceptr d2 = new_buffer(N * 4);
    int runs2 = 0;
    CUgraph foreign = capture_pipeline(s2, function(m2, "scale"), d2, in, out, 2, &runs2);
    expect_update_failure(x, foreign, CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE, true);
    assert_cu_ok(D.graph_destroy(foreign));
    assert_cu_ok(D.free(d2));
    assert_cu_ok(D.stream_destroy(s2));
    assert_cu_ok(D.unload(m2));
    assert_cu_ok(D.ctx_destroy(c2)); /* off the top: ctx is current again */
    CUgraph all[] = {by2, by5, swapped, coop};
    for (int i = 0; i < 4; i++)
        assert_cu_ok(D.graph_destroy(all[i]));
    assert_cu_ok(D.exec_destroy(x));
    assert_ok(cus_fake_register_kernel("scale", NULL, NULL));
    assert_cu_ok(D.free_host(in));
    assert_cu_ok(D.free_host(out));
    assert_cu_ok(D.free(d));
    assert_cu_ok(D.unload(m));
    assert_cu_ok(D.stream_destroy(s));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        G_TEST(test_fork_and_join_across_streams),
        G_TEST(test_an_unjoined_fork_fails_the_end),
        G_TEST(test_waits_across_capture_boundaries),
        G_TEST(test_capture_info_of_every_variant),
        G_TEST(test_replay_copies_kernel_and_host_function_every_time),
        G_TEST(test_graph_launch_and_upload_errors),
        G_TEST(test_instantiate_flags_and_errors),
        G_TEST(test_exec_update_replaces_the_parameters),
        G_TEST(test_exec_update_refuses_a_changed_graph),
        G_TEST(test_exec_update_of_kernel_nodes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
