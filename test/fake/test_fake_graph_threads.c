/* The fake_graph tests, part threads: threads and faults. Their fixtures,
 * and what the fake_graph tests are about: fake_graph_fixtures.h. */
#include "fake_graph_fixtures.h"

/* ============================================================================
 * threads and faults
 * ========================================================================== */

enum { THREADS = 4, REPLAYS = 25 };

typedef struct replay_arg {
    CUresult r;
    int runs;
    uint32_t last;
} replay_arg;

/* Each thread captures its own pipeline and replays it, while the others do. */
static void *replay_worker(void *p)
{
    replay_arg *a = p;
    CUstream s = NULL;
    CUdeviceptr d = 0;
    uint32_t in[N], out[N];
    CUgraph g = NULL;
    CUgraphExec x = NULL;
    CUfunction f = NULL;
    CUmodule m = NULL;
    a->r = D.push(ctx);
    if (a->r == CUDA_SUCCESS)
        a->r = D.load_data(&m, graph_ptx);
    if (a->r == CUDA_SUCCESS)
        a->r = D.get_function(&f, m, "scale");
    if (a->r == CUDA_SUCCESS)
        a->r = D.stream_create(&s, CU_STREAM_NON_BLOCKING);
    if (a->r == CUDA_SUCCESS)
        a->r = D.alloc(&d, sizeof in);
    if (a->r == CUDA_SUCCESS)
        a->r = D.begin(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
    if (a->r == CUDA_SUCCESS) {
        (void)D.htod_async(d, in, sizeof in, s);
        (void)launch_scale(f, s, d, N, 2);
        (void)D.dtoh_async(out, d, sizeof out, s);
        (void)D.host_fn(s, count_fn, &a->runs);
        a->r = D.end(s, &g);
    }
    if (a->r == CUDA_SUCCESS)
        a->r = D.instantiate(&x, g, 0);
    for (int i = 0; a->r == CUDA_SUCCESS && i < REPLAYS; i++) {
        for (int j = 0; j < N; j++)
            in[j] = (uint32_t)(i + j);
        a->r = D.graph_launch(x, s);
        if (a->r == CUDA_SUCCESS)
            a->r = D.stream_sync(s);
        a->last = out[N - 1];
    }
    if (x)
        (void)D.exec_destroy(x);
    if (g)
        (void)D.graph_destroy(g);
    if (d)
        (void)D.free(d);
    if (s)
        (void)D.stream_destroy(s);
    if (m)
        (void)D.unload(m);
    CUcontext popped;
    (void)D.pop(&popped);
    return NULL;
}

static void test_threads_capture_and_replay_concurrently(void **state)
{
    (void)state;
    assert_ok(cus_fake_register_kernel("scale", scale_twin, NULL));
    pthread_t t[THREADS];
    replay_arg a[THREADS];
    memset(a, 0, sizeof a);
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, replay_worker, &a[i]), 0);
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    for (int i = 0; i < THREADS; i++) {
        assert_cu_ok(a[i].r);
        assert_int_equal(a[i].runs, REPLAYS);
        assert_int_equal(a[i].last, (uint32_t)(REPLAYS - 1 + N - 1) * 2u);
    }
    assert_ok(cus_fake_register_kernel("scale", NULL, NULL));
    assert_int_equal(cus_fake_misuse_count(), 0);
}

/* One entry point of the graph family, with valid arguments. */
typedef struct fault_fixture {
    CUstream s, s2;
    CUgraph g, g2;
    CUgraphExec x;
    CUevent e;
} fault_fixture;

static CUresult call_entry(int i, fault_fixture *fx, CUgraph *out_graph, CUgraphExec *out_exec)
{
    CUstreamCaptureStatus st;
    cuuint64_t id;
    CUgraphNode node = NULL;
    size_t n = 1;
    CUgraphNodeType t;
    CUgraphExecUpdateResultInfo info;
    CUgraphExecUpdateResult res;
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
    switch (i) {
    case 0:
        return D.begin(fx->s2, CU_STREAM_CAPTURE_MODE_GLOBAL);
    case 1:
        return D.end(fx->s2, out_graph);
    case 2:
        return D.is_capturing(fx->s, &st);
    case 3:
        return D.info(fx->s, &st, &id);
    case 4:
        return D.info_v2(fx->s, &st, &id, NULL, NULL, NULL);
    case 5:
        return D.exchange_mode(&mode);
    case 6:
        return D.graph_destroy(*out_graph);
    case 7:
        return D.get_nodes(fx->g, &node, &n);
    case 8:
        n = 1;
        (void)D.get_nodes(fx->g, &node, &n);
        return D.node_type(node, &t);
    case 9:
        return D.instantiate(out_exec, fx->g, 0);
    case 10:
        return D.exec_destroy(*out_exec);
    case 11:
        return D.graph_launch(fx->x, fx->s);
    case 12:
        return D.upload(fx->x, fx->s);
    case 13:
        return D.update_v1(fx->x, fx->g2, &node, &res);
    case 14:
        return D.update(fx->x, fx->g2, &info);
    default:
        return CUDA_ERROR_UNKNOWN;
    }
}

static void test_fault_injection_on_every_graph_entry_point(void **state)
{
    (void)state;
    static const char *const names[] = {
        "cuStreamBeginCapture", "cuStreamEndCapture", "cuStreamIsCapturing",
        "cuStreamGetCaptureInfo", "cuStreamGetCaptureInfo_v2",
        "cuThreadExchangeStreamCaptureMode", "cuGraphDestroy", "cuGraphGetNodes",
        "cuGraphNodeGetType", "cuGraphInstantiateWithFlags", "cuGraphExecDestroy",
        "cuGraphLaunch", "cuGraphUpload", "cuGraphExecUpdate", "cuGraphExecUpdate_v2",
    };
    fault_fixture fx;
    memset(&fx, 0, sizeof fx);
    int runs = 0;
    fx.s = new_stream(CU_STREAM_NON_BLOCKING);
    fx.s2 = new_stream(CU_STREAM_NON_BLOCKING);
    assert_cu_ok(D.begin(fx.s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu_ok(D.host_fn(fx.s, count_fn, &runs));
    fx.g = end_capture(fx.s);
    assert_cu_ok(D.begin(fx.s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu_ok(D.host_fn(fx.s, count_fn, &runs));
    fx.g2 = end_capture(fx.s);
    fx.x = instantiate(fx.g);
    CUgraph made = NULL;
    CUgraphExec made_exec = NULL;
    for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++) {
        /* What a destroy destroys exists before it. */
        if (i == 6)
            assert_non_null(made);
        if (i == 10)
            assert_non_null(made_exec);
        unsigned long fired = cus_fake_faults_fired();
        unsigned long calls = cus_fake_calls_of(names[i]);
        size_t handles = cus_fake_live_handles(CUS_FAKE_HANDLE_ANY);
        size_t captures = cus_fake_active_captures();
        size_t pending = cus_fake_stream_pending(fx.s);
        assert_ok(cus_fake_fail_entry(names[i], 1, CUDA_ERROR_UNKNOWN, false));
        CUgraph g_before = made;
        CUgraphExec x_before = made_exec;
        CUresult r = call_entry(i, &fx, &made, &made_exec);
        if (r != CUDA_ERROR_UNKNOWN)
            fail_msg("%s under a fault: %d", names[i], (int)r);
        assert_int_equal(cus_fake_faults_fired(), fired + 1);
        assert_int_equal(cus_fake_calls_of(names[i]), calls + 1);
        /* It did nothing: no handle, capture, queued work or out value changed. */
        assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), handles);
        assert_int_equal(cus_fake_active_captures(), captures);
        assert_int_equal(cus_fake_stream_pending(fx.s), pending);
        assert_ptr_equal(made, g_before);
        assert_ptr_equal(made_exec, x_before);
        r = call_entry(i, &fx, &made, &made_exec); /* the fault is spent */
        if (r != CUDA_SUCCESS)
            fail_msg("%s after the fault: %d", names[i], (int)r);
    }
    /* A persistent fault on the end leaves the capture open; it ends once cleared. */
    assert_cu_ok(D.begin(fx.s2, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_ok(cus_fake_fail_entry("cuStreamEndCapture", 1, CUDA_ERROR_UNKNOWN, true));
    CUgraph g = NULL;
    assert_cu(D.end(fx.s2, &g), CUDA_ERROR_UNKNOWN);
    assert_cu(D.end(fx.s2, &g), CUDA_ERROR_UNKNOWN);
    assert_int_equal(status_of(fx.s2), CU_STREAM_CAPTURE_STATUS_ACTIVE);
    cus_fake_clear_faults();
    g = end_capture(fx.s2);
    assert_cu_ok(D.graph_destroy(g));
    assert_cu_ok(D.stream_sync(fx.s));
    assert_int_equal(runs, 1);
    assert_cu_ok(D.exec_destroy(fx.x));
    assert_cu_ok(D.graph_destroy(fx.g));
    assert_cu_ok(D.graph_destroy(fx.g2));
    assert_cu_ok(D.stream_destroy(fx.s));
    assert_cu_ok(D.stream_destroy(fx.s2));
    assert_int_equal(cus_fake_misuse_count(), 0);
}

/* A fault on the N-th call of a capture-and-replay sequence, for every N:
 * whatever fails, the sequence's cleanup leaves nothing alive. */
static CUresult sequence(CUstream s, int *runs)
{
    CUgraph g = NULL;
    CUgraphExec x = NULL;
    CUresult r = D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    if (r != CUDA_SUCCESS)
        return r;
    r = D.host_fn(s, count_fn, runs);
    CUresult re = D.end(s, &g);
    if (r == CUDA_SUCCESS)
        r = re;
    if (r == CUDA_SUCCESS)
        r = D.instantiate(&x, g, 0);
    if (r == CUDA_SUCCESS)
        r = D.graph_launch(x, s);
    if (r == CUDA_SUCCESS)
        r = D.stream_sync(s);
    if (x && D.exec_destroy(x) != CUDA_SUCCESS && r == CUDA_SUCCESS)
        r = CUDA_ERROR_UNKNOWN;
    if (g && D.graph_destroy(g) != CUDA_SUCCESS && r == CUDA_SUCCESS)
        r = CUDA_ERROR_UNKNOWN;
    return r;
}

static void test_a_fault_anywhere_in_a_sequence_leaves_a_consistent_state(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    int runs = 0;
    size_t handles = cus_fake_live_handles(CUS_FAKE_HANDLE_ANY);
    for (unsigned long k = 1; k < 20; k++) {
        cus_fake_fail_call(k, CUDA_ERROR_UNKNOWN, false);
        CUresult r = sequence(s, &runs);
        bool fired = cus_fake_faults_fired() > 0;
        cus_fake_fail_call(0, CUDA_SUCCESS, false);
        if (!fired) {
            assert_cu_ok(r);
            break;
        }
        assert_cu(r, CUDA_ERROR_UNKNOWN);
        /* A failed end leaves the capture open (the injected failure did nothing). */
        if (status_of(s) != CU_STREAM_CAPTURE_STATUS_NONE) {
            CUgraph g = NULL;
            CUresult re = D.end(s, &g);
            assert_true(re == CUDA_SUCCESS || re == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
            if (g)
                assert_cu_ok(D.graph_destroy(g));
        }
        /* A failed destroy leaves its handle: the only live handles left. */
        cus_fake_run_streams();
        assert_int_equal(cus_fake_active_captures(), 0);
        assert_true(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY) <= handles + 1);
        assert_ok(cus_fake_install(NULL));
        load_raw();
        assert_cu_ok(D.init(0));
        assert_cu_ok(D.ctx_create(&ctx, 0, 0));
        s = new_stream(CU_STREAM_NON_BLOCKING);
        handles = cus_fake_live_handles(CUS_FAKE_HANDLE_ANY);
    }
    assert_cu_ok(D.stream_destroy(s));
    assert_int_equal(cus_fake_misuse_count(), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        G_TEST(test_threads_capture_and_replay_concurrently),
        G_TEST(test_fault_injection_on_every_graph_entry_point),
        G_TEST(test_a_fault_anywhere_in_a_sequence_leaves_a_consistent_state),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
