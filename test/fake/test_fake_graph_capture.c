/* The fake_graph tests, part capture: entry points and capture basics; begin
 * and end, their errors; invalidation, the legacy stream, unsafe calls and
 * the modes. Their fixtures, and what the fake_graph tests are about:
 * fake_graph_fixtures.h. */
#include "fake_graph_fixtures.h"

/* ============================================================================
 * entry points and capture basics
 * ========================================================================== */

static void test_entry_points_resolve_at_their_versions(void **state)
{
    (void)state;
    void *a = raw_fn("cuStreamGetCaptureInfo", 10010);
    void *b = raw_fn("cuStreamGetCaptureInfo", 11030);
    assert_ptr_not_equal(a, b); /* the _v2 signature from 11.3 */
    assert_ptr_equal(raw_fn("cuStreamGetCaptureInfo", 11020), a);
#if CUDA_VERSION >= 12030
    assert_ptr_not_equal(raw_fn("cuStreamGetCaptureInfo", 12030), b);
#endif
    void *u1 = raw_fn("cuGraphExecUpdate", 11000);
    assert_ptr_not_equal(u1, raw_fn("cuGraphExecUpdate", 12000));
    void *inst = NULL;
    memcpy(&inst, &D.instantiate, sizeof inst);
    assert_ptr_equal(raw_fn("cuGraphInstantiateWithFlags", 12000), inst);
    /* Older than the oldest variant: not sufficient. */
    void *pfn = NULL;
    CUdriverProcAddressQueryResult qs = CU_GET_PROC_ADDRESS_SUCCESS;
    assert_int_equal(cus_fake_get_proc_address("cuGraphInstantiateWithFlags", &pfn, 11030, 0, &qs),
                     CUDA_SUCCESS);
    assert_int_equal(qs, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    assert_int_equal(cus_fake_get_proc_address("cuStreamBeginCapture", &pfn, 10000, 0, &qs),
                     CUDA_SUCCESS);
    assert_int_equal(qs, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
}

static void test_captured_work_is_recorded_not_run(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    CUdeviceptr d = new_buffer(N * 4);
    uint32_t *in = new_pinned(N * 4), *out = new_pinned(N * 4);
    seed(in, 100);
    int runs = 0;
    size_t graphs = cus_fake_live_handles(CUS_FAKE_HANDLE_GRAPH);
    assert_int_equal(status_of(s), CU_STREAM_CAPTURE_STATUS_NONE);
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_int_equal(cus_fake_active_captures(), 1);
    /* The capture's graph exists from the start. */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_GRAPH), graphs + 1);
    assert_int_equal(status_of(s), CU_STREAM_CAPTURE_STATUS_ACTIVE);
    assert_cu_ok(D.htod_async(d, in, N * 4, s));
    assert_cu_ok(D.memset32_async(d + 8, 0xabcd, 4, s));
    assert_cu_ok(D.host_fn(s, count_fn, &runs));
    assert_cu_ok(D.dtoh_async(out, d, N * 4, s));
    assert_cu_ok(D.dtod_async(d + 128, d, 64, s));
    assert_int_equal(cus_fake_stream_pending(s), 0); /* nothing queued */
    cus_fake_run_streams();
    assert_int_equal(runs, 0);
    assert_int_equal(out[0], 0);
    CUgraph g = end_capture(s);
    assert_int_equal(cus_fake_active_captures(), 0);
    assert_int_equal(status_of(s), CU_STREAM_CAPTURE_STATUS_NONE);
    static const CUgraphNodeType want[] = {CU_GRAPH_NODE_TYPE_MEMCPY, CU_GRAPH_NODE_TYPE_MEMSET,
                                           CU_GRAPH_NODE_TYPE_HOST, CU_GRAPH_NODE_TYPE_MEMCPY,
                                           CU_GRAPH_NODE_TYPE_MEMCPY};
    assert_node_types(g, want, 5);
    cus_fake_run_streams();
    assert_int_equal(runs, 0);
    assert_int_equal(out[0], 0);
    /* The stream works normally again. */
    assert_cu_ok(D.htod_async(d, in, 4, s));
    assert_int_equal(cus_fake_stream_pending(s), 1);
    assert_cu_ok(D.stream_sync(s));
    assert_cu_ok(D.graph_destroy(g));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_GRAPH), graphs);
    assert_cu_ok(D.free_host(in));
    assert_cu_ok(D.free_host(out));
    assert_cu_ok(D.free(d));
    assert_cu_ok(D.stream_destroy(s));
}

static void test_an_empty_capture_is_an_empty_graph(void **state)
{
    (void)state;
    CUstream s = new_stream(0);
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CUgraph g = end_capture(s);
    assert_int_equal(node_count(g), 0);
    CUgraphExec x = instantiate(g);
    assert_cu_ok(D.graph_launch(x, s));
    assert_int_equal(cus_fake_stream_pending(s), 0);
    assert_cu_ok(D.stream_sync(s));
    assert_cu_ok(D.exec_destroy(x));
    assert_cu_ok(D.graph_destroy(g));
    assert_cu_ok(D.stream_destroy(s));
}

/* The work queued before the capture runs normally, and is not in the graph. */
static void test_work_queued_before_the_capture_still_runs(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    int runs = 0;
    assert_cu_ok(D.host_fn(s, count_fn, &runs));
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu_ok(D.host_fn(s, count_fn, &runs));
    CUgraph g = end_capture(s);
    assert_int_equal(node_count(g), 1);
    assert_int_equal(cus_fake_stream_pending(s), 1);
    assert_cu_ok(D.stream_sync(s));
    assert_int_equal(runs, 1);
    assert_cu_ok(D.graph_destroy(g));
    assert_cu_ok(D.stream_destroy(s));
}

static void test_get_nodes_fills_up_to_the_count(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    int runs = 0;
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    for (int i = 0; i < 3; i++)
        assert_cu_ok(D.host_fn(s, count_fn, &runs));
    CUgraph g = end_capture(s);
    assert_cu(D.get_nodes(g, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
    CUgraphNode nodes[5];
    memset(nodes, 0xff, sizeof nodes);
    size_t n = 5;
    assert_cu_ok(D.get_nodes(g, nodes, &n));
    assert_int_equal(n, 3); /* the count obtained */
    assert_non_null(nodes[0]);
    assert_non_null(nodes[2]);
    assert_null(nodes[3]); /* the rest: NULL */
    assert_null(nodes[4]);
    CUgraphNode sentinel = (CUgraphNode)(uintptr_t)0x1;
    CUgraphNode three[3] = {NULL, NULL, sentinel};
    n = 2;
    assert_cu_ok(D.get_nodes(g, three, &n));
    assert_int_equal(n, 2);
    assert_ptr_equal(three[0], nodes[0]);
    assert_ptr_equal(three[1], nodes[1]);
    assert_ptr_equal(three[2], sentinel); /* only n entries */
    assert_cu(D.get_nodes(NULL, NULL, &n), CUDA_ERROR_INVALID_VALUE);
    assert_cu_ok(D.graph_destroy(g));
    assert_cu_ok(D.stream_destroy(s));
}

static void test_node_get_type_errors(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    int runs = 0;
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu_ok(D.host_fn(s, count_fn, &runs));
    CUgraph g = end_capture(s);
    CUgraphNode node = NULL;
    size_t n = 1;
    assert_cu_ok(D.get_nodes(g, &node, &n));
    CUgraphNodeType t;
    assert_cu(D.node_type(node, NULL), CUDA_ERROR_INVALID_VALUE);
    assert_cu(D.node_type(NULL, &t), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cus_fake_misuse_count(), 0);
    assert_cu(D.node_type((CUgraphNode)(uintptr_t)&runs, &t), CUDA_ERROR_INVALID_VALUE);
    assert_contains(cus_fake_last_misuse(), "unknown graph node");
    assert_cu_ok(D.graph_destroy(g));
    assert_cu(D.node_type(node, &t), CUDA_ERROR_INVALID_VALUE);
    assert_contains(cus_fake_last_misuse(), "used after its graph was destroyed");
    assert_int_equal(cus_fake_misuse_count(), 2);
    assert_cu_ok(D.stream_destroy(s));
}

/* ============================================================================
 * begin and end: their errors
 * ========================================================================== */

static void test_begin_capture_errors(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    /* The legacy stream cannot capture. */
    assert_cu(D.begin(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    assert_cu(D.begin(CU_STREAM_LEGACY, CU_STREAM_CAPTURE_MODE_GLOBAL),
              CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    assert_cu(D.begin(s, (CUstreamCaptureMode)7), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(status_of(s), CU_STREAM_CAPTURE_STATUS_NONE);
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    assert_cu(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_ILLEGAL_STATE);
    assert_int_equal(cus_fake_active_captures(), 1);
    CUgraph g = end_capture(s);
    assert_cu_ok(D.graph_destroy(g));
    /* Without a current context the legacy stream is no stream. */
    CUcontext popped = NULL;
    assert_cu_ok(D.pop(&popped));
    assert_cu(D.begin(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_INVALID_CONTEXT);
    assert_cu_ok(D.push(popped));
    assert_int_equal(cus_fake_misuse_count(), 0);
    assert_cu_ok(D.stream_destroy(s));
}

static void test_begin_capture_on_a_destroyed_stream_is_misuse(void **state)
{
    (void)state;
    CUstream s = new_stream(0);
    assert_cu_ok(D.stream_destroy(s));
    assert_cu(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_INVALID_HANDLE);
    assert_contains(cus_fake_last_misuse(), "used after cuStreamDestroy");
    assert_int_equal(cus_fake_active_captures(), 0);
}

static void test_end_capture_errors(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING), s2 = new_stream(CU_STREAM_NON_BLOCKING);
    CUevent e = new_event();
    CUgraph g = (CUgraph)(uintptr_t)0x1234;
    assert_cu(D.end(s, &g), CUDA_ERROR_ILLEGAL_STATE); /* not capturing */
    assert_ptr_equal(g, (CUgraph)(uintptr_t)0x1234);
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu(D.end(s, NULL), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(status_of(s), CU_STREAM_CAPTURE_STATUS_ACTIVE);
    /* Ending on a joined stream: unmatched, and the capture is broken. */
    assert_cu_ok(D.event_record(e, s));
    assert_cu_ok(D.wait_event(s2, e, 0));
    assert_int_equal(status_of(s2), CU_STREAM_CAPTURE_STATUS_ACTIVE);
    assert_cu(D.end(s2, &g), CUDA_ERROR_STREAM_CAPTURE_UNMATCHED);
    assert_int_equal(status_of(s), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    assert_int_equal(status_of(s2), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    size_t graphs = cus_fake_live_handles(CUS_FAKE_HANDLE_GRAPH);
    assert_cu(D.end(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    assert_null(g);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_GRAPH), graphs - 1);
    assert_int_equal(status_of(s), CU_STREAM_CAPTURE_STATUS_NONE);
    assert_int_equal(status_of(s2), CU_STREAM_CAPTURE_STATUS_NONE);
    assert_int_equal(cus_fake_misuse_count(), 0);
    assert_cu_ok(D.event_destroy(e));
    assert_cu_ok(D.stream_destroy(s));
    assert_cu_ok(D.stream_destroy(s2));
}

typedef struct end_arg {
    CUstream s;
    CUgraph g;
    CUresult r;
} end_arg;

static void *end_elsewhere(void *p)
{
    end_arg *a = p;
    a->r = D.end(a->s, &a->g);
    return NULL;
}

static CUresult end_on_another_thread(CUstream s, CUgraph *g)
{
    end_arg a = {s, NULL, CUDA_ERROR_UNKNOWN};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, end_elsewhere, &a), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    *g = a.g;
    return a.r;
}

static void test_end_capture_from_another_thread(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    static const CUstreamCaptureMode strict[] = {CU_STREAM_CAPTURE_MODE_GLOBAL,
                                                 CU_STREAM_CAPTURE_MODE_THREAD_LOCAL};
    for (int i = 0; i < 2; i++) {
        assert_cu_ok(D.begin(s, strict[i]));
        CUgraph g = NULL;
        assert_cu(end_on_another_thread(s, &g), CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD);
        assert_null(g);
        assert_int_equal(status_of(s), CU_STREAM_CAPTURE_STATUS_ACTIVE); /* still */
        g = end_capture(s);
        assert_cu_ok(D.graph_destroy(g));
    }
    /* A relaxed capture may end anywhere. */
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CUgraph g = NULL;
    assert_cu_ok(end_on_another_thread(s, &g));
    assert_non_null(g);
    assert_int_equal(status_of(s), CU_STREAM_CAPTURE_STATUS_NONE);
    assert_cu_ok(D.graph_destroy(g));
    assert_cu_ok(D.stream_destroy(s));
}

/* ============================================================================
 * invalidation, the legacy stream, unsafe calls and the modes
 * ========================================================================== */

static void test_synchronizing_a_capturing_stream_invalidates_it(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    int runs = 0;
    size_t handles = cus_fake_live_handles(CUS_FAKE_HANDLE_ANY);
    for (int way = 0; way < 2; way++) {
        assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
        assert_cu_ok(D.host_fn(s, count_fn, &runs));
        assert_cu(way == 0 ? D.stream_sync(s) : D.stream_query(s),
                  CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
        assert_int_equal(status_of(s), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
        /* Everything on it now answers the invalidation; nothing is queued. */
        assert_cu(D.host_fn(s, count_fn, &runs), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
        CUevent e = new_event();
        assert_cu(D.event_record(e, s), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
        assert_cu_ok(D.event_destroy(e));
        CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
        cuuint64_t id = 77;
        assert_cu_ok(D.info(s, &st, &id));
        assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
        assert_int_equal(id, 77); /* only an active capture's data */
        CUgraph g = (CUgraph)(uintptr_t)0x1;
        assert_cu(D.end(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
        assert_null(g);
        assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), handles);
        assert_int_equal(status_of(s), CU_STREAM_CAPTURE_STATUS_NONE);
    }
    assert_cu_ok(D.stream_sync(s));
    assert_int_equal(runs, 0);
    assert_cu_ok(D.stream_destroy(s));
}

static void test_the_legacy_stream_is_blocked_by_a_blocking_capture(void **state)
{
    (void)state;
    CUstream blocking = new_stream(0), nonblocking = new_stream(CU_STREAM_NON_BLOCKING);
    CUdeviceptr d = new_buffer(64);
    /* A non-blocking capture leaves the legacy stream alone. */
    assert_cu_ok(D.begin(nonblocking, CU_STREAM_CAPTURE_MODE_RELAXED));
    assert_cu_ok(D.memset8_async(d, 1, 64, NULL));
    assert_int_equal(status_of(NULL), CU_STREAM_CAPTURE_STATUS_NONE);
    assert_cu_ok(D.stream_sync(NULL));
    CUgraph g = end_capture(nonblocking);
    assert_cu_ok(D.graph_destroy(g));

    /* A blocking one: queries of the legacy stream fail, without harm. */
    assert_cu_ok(D.begin(blocking, CU_STREAM_CAPTURE_MODE_RELAXED));
    CUstreamCaptureStatus st;
    assert_cu(D.is_capturing(NULL, &st), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    assert_cu(D.is_capturing(CU_STREAM_LEGACY, &st), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    cuuint64_t id;
    assert_cu(D.info(NULL, &st, &id), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    assert_int_equal(status_of(blocking), CU_STREAM_CAPTURE_STATUS_ACTIVE);
    /* Its use breaks the capture. */
    assert_cu(D.memset8_async(d, 2, 64, NULL), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    assert_int_equal(status_of(blocking), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    assert_int_equal(cus_fake_stream_pending(NULL), 0);
    assert_cu(D.end(blocking, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    /* And each way of using it: a synchronous copy, a synchronization, a record. */
    unsigned char host[64];
    CUevent e = new_event();
    for (int way = 0; way < 4; way++) {
        assert_cu_ok(D.begin(blocking, CU_STREAM_CAPTURE_MODE_RELAXED));
        CUresult r = way == 0   ? D.htod(d, host, 64)
                     : way == 1 ? D.stream_sync(NULL)
                     : way == 2 ? D.stream_query(CU_STREAM_LEGACY)
                                : D.event_record(e, NULL);
        assert_cu(r, CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
        assert_int_equal(status_of(blocking), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
        assert_cu(D.end(blocking, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    }
    assert_cu_ok(D.event_destroy(e));
    assert_cu_ok(D.free(d));
    assert_cu_ok(D.stream_destroy(blocking));
    assert_cu_ok(D.stream_destroy(nonblocking));
}

typedef struct unsafe_arg {
    CUstreamCaptureMode thread_mode; /* set first, with cuThreadExchangeStreamCaptureMode */
    bool set_mode;
    CUresult r;
} unsafe_arg;

static void *alloc_elsewhere(void *p)
{
    unsafe_arg *a = p;
    if (D.push(ctx) != CUDA_SUCCESS) {
        a->r = CUDA_ERROR_UNKNOWN;
        return NULL;
    }
    if (a->set_mode) {
        CUstreamCaptureMode m = a->thread_mode;
        (void)D.exchange_mode(&m);
    }
    CUdeviceptr d = 0;
    a->r = D.alloc(&d, 16);
    if (a->r == CUDA_SUCCESS)
        (void)D.free(d);
    CUcontext popped;
    (void)D.pop(&popped);
    return NULL;
}

static CUresult alloc_on_another_thread(bool set_mode, CUstreamCaptureMode mode)
{
    unsafe_arg a = {mode, set_mode, CUDA_ERROR_UNKNOWN};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, alloc_elsewhere, &a), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    return a.r;
}

/* Begins a capture in mode on s; checks whether an allocation on this
 * thread and on another one are refused; ends the capture, checking it was
 * invalidated exactly when one was refused. */
static void check_unsafe(CUstream s, CUstreamCaptureMode mode, bool here_refused,
                         bool elsewhere_refused)
{
    CUdeviceptr d = 0;
    CUgraph g = NULL;
    assert_cu_ok(D.begin(s, mode));
    assert_cu(alloc_on_another_thread(false, CU_STREAM_CAPTURE_MODE_GLOBAL),
              elsewhere_refused ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS);
    assert_int_equal(status_of(s), elsewhere_refused ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                                     : CU_STREAM_CAPTURE_STATUS_ACTIVE);
    if (elsewhere_refused) {
        assert_cu(D.end(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
        assert_cu_ok(D.begin(s, mode));
    }
    CUresult r = D.alloc(&d, 16);
    assert_cu(r, here_refused ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS);
    if (r == CUDA_SUCCESS)
        assert_cu_ok(D.free(d));
    if (here_refused) {
        assert_cu(D.end(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    } else {
        g = end_capture(s);
        assert_cu_ok(D.graph_destroy(g));
    }
}

static void test_unsafe_calls_follow_the_capture_modes(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    check_unsafe(s, CU_STREAM_CAPTURE_MODE_GLOBAL, true, true);
    check_unsafe(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, true, false);
    check_unsafe(s, CU_STREAM_CAPTURE_MODE_RELAXED, false, false);

    /* Another thread in RELAXED or THREAD_LOCAL mode may, during a global capture. */
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu_ok(alloc_on_another_thread(true, CU_STREAM_CAPTURE_MODE_RELAXED));
    assert_cu_ok(alloc_on_another_thread(true, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    assert_int_equal(status_of(s), CU_STREAM_CAPTURE_STATUS_ACTIVE);
    /* And this thread, once it made itself RELAXED. */
    CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;
    assert_cu_ok(D.exchange_mode(&m));
    assert_int_equal(m, CU_STREAM_CAPTURE_MODE_GLOBAL); /* the default */
    CUdeviceptr d = 0;
    assert_cu_ok(D.alloc(&d, 16));
    assert_cu_ok(D.free(d));
    assert_cu_ok(D.exchange_mode(&m)); /* back */
    assert_int_equal(m, CU_STREAM_CAPTURE_MODE_RELAXED);
    /* Every unsafe kind of call is refused in GLOBAL mode. */
    unsigned char host[16] = {0};
    CUdeviceptr buf = 0;
    CUgraph g = end_capture(s);
    assert_cu_ok(D.graph_destroy(g));
    assert_cu_ok(D.alloc(&buf, 16));
    for (int way = 0; way < 5; way++) {
        assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
        void *p = NULL;
        CUresult r = way == 0   ? D.htod(buf, host, 16)
                     : way == 1 ? D.dtoh(host, buf, 16)
                     : way == 2 ? D.ctx_sync()
                     : way == 3 ? D.free(buf)
                                : D.host_alloc(&p, 16, 0);
        assert_cu(r, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
        assert_cu(D.end(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    }
    /* An invalidated capture forbids nothing more: cleanup works. */
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu(D.alloc(&d, 16), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    assert_cu_ok(D.free(buf));
    assert_cu(D.end(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    /* Bad arguments. */
    assert_cu(D.exchange_mode(NULL), CUDA_ERROR_INVALID_VALUE);
    m = (CUstreamCaptureMode)9;
    assert_cu(D.exchange_mode(&m), CUDA_ERROR_INVALID_VALUE);
    assert_cu_ok(D.stream_destroy(s));
}

/* A relaxed capture on a non-blocking stream leaves synchronous copies alone. */
static void test_a_relaxed_capture_allows_synchronous_copies(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    CUdeviceptr d = new_buffer(16);
    uint32_t in[4] = {1, 2, 3, 4}, out[4] = {0};
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    assert_cu_ok(D.htod(d, in, 16));
    assert_cu_ok(D.dtoh(out, d, 16));
    assert_int_equal(out[3], 4);
    CUgraph g = end_capture(s);
    assert_int_equal(node_count(g), 0);
    assert_cu_ok(D.graph_destroy(g));
    assert_cu_ok(D.free(d));
    assert_cu_ok(D.stream_destroy(s));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        G_TEST(test_entry_points_resolve_at_their_versions),
        G_TEST(test_captured_work_is_recorded_not_run),
        G_TEST(test_an_empty_capture_is_an_empty_graph),
        G_TEST(test_work_queued_before_the_capture_still_runs),
        G_TEST(test_get_nodes_fills_up_to_the_count),
        MISUSE_TEST(test_node_get_type_errors),
        G_TEST(test_begin_capture_errors),
        MISUSE_TEST(test_begin_capture_on_a_destroyed_stream_is_misuse),
        G_TEST(test_end_capture_errors),
        G_TEST(test_end_capture_from_another_thread),
        G_TEST(test_synchronizing_a_capturing_stream_invalidates_it),
        G_TEST(test_the_legacy_stream_is_blocked_by_a_blocking_capture),
        G_TEST(test_unsafe_calls_follow_the_capture_modes),
        G_TEST(test_a_relaxed_capture_allows_synchronous_copies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
