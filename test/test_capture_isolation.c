/* Captures and the calls around them, on the fake driver (the unit and the
 * threads suites; TSan runs the latter). The regression tests of two defects
 * of 0.1, each failing there:
 *   - an unrelated call failed an open capture: thread B, with no context
 *     current, launched and filled on context B's legacy (and per-thread)
 *     stream objects while thread A captured on context A; cuscope asked the
 *     driver about B's stream with no context current, got
 *     CUDA_ERROR_INVALID_CONTEXT, and failed every open capture's end with it;
 *   - a release slipped past the capture deferral: the capture was counted
 *     after cuStreamBeginCapture, so a release that had checked the count
 *     made its cuMemFree inside a GLOBAL capture, which refused it
 *     (STREAM_CAPTURE_UNSUPPORTED, the memory kept until its context died)
 *     and was invalidated. The test forces that ordering: the release is
 *     held inside cuMemFree (a resolver that wraps the fake's) while another
 *     thread begins the capture.
 * And what the redesign promises: a capture of many distinct buffers keeps
 * each once (no quadratic scan: the fake counts the work as references),
 * releases during captures run at once (no object waits for an unrelated
 * capture), and captures on several threads leave no graph alive but those
 * the user holds. */
#include <pthread.h>
#include <string.h>
#include <time.h>

#include <cuscope/graph.h>
#include <cuscope/memory.h>

#include "launch_fixtures.h"
#include "harness/gate.h"

static void assert_no_misuse(void)
{
    if (cus_fake_misuse_count())
        fail_msg("fake driver misuse: %s", cus_fake_last_misuse());
}

/* ============================================================================
 * an unrelated call on another context does not fail an open capture
 * ========================================================================== */

typedef struct bystander {
    cus_function *fn;
    cus_stream *stream; /* of context B: legacy or per-thread */
    cus_buffer *buf;    /* of context B */
    cus_status launch, fill;
    unsigned int depth; /* the thread's stack depth: nothing current */
} bystander;

static void *bystander_run(void *p)
{
    bystander *b = p;
    b->depth = cus_context_stack_depth();
    b->launch = cus_launch(b->fn, 1, 1, 0, b->stream, 3);
    b->fill = cus_buffer_fill_u32_async(b->buf, 0, 7, 16, b->stream);
    /* no synchronize: during a GLOBAL capture the driver refuses it in
     * another thread's default mode (an H200, probes.c) */
    return NULL;
}

static void run_bystander_during_capture(cus_status (*make)(cus_context *, cus_stream **))
{
    cus_autoptr(cus_context) a = new_ctx();
    cus_autoptr(cus_context) bctx = new_ctx();
    while (cus_context_stack_depth())
        assert_ok(cus_context_pop(NULL));
    fixture fx = open_fixture(bctx);
    cus_autoptr(cus_stream) s = new_stream(a, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_buffer) abuf = NULL;
    cus_autoptr(cus_buffer) bbuf = NULL;
    assert_ok(cus_buffer_alloc(a, 64, &abuf));
    assert_ok(cus_buffer_alloc(bctx, 64, &bbuf));
    cus_autoptr(cus_stream) bs = NULL;
    assert_ok(make(bctx, &bs));
    {
        cus_capture_scope(cap, s, CU_STREAM_CAPTURE_MODE_GLOBAL);
        assert_ok(cap.status);
        assert_ok(cus_buffer_fill_u32_async(abuf, 0, 1, 16, s));
        bystander b = {.fn = fx.one, .stream = bs, .buf = bbuf};
        pthread_t t;
        assert_int_equal(pthread_create(&t, NULL, bystander_run, &b), 0);
        assert_int_equal(pthread_join(t, NULL), 0);
        assert_int_equal(b.depth, 0);
        assert_ok(b.launch);
        assert_ok(b.fill);
        assert_ok(cus_buffer_fill_u32_async(abuf, 0, 2, 16, s));
        cus_autoptr(cus_graph) g = NULL;
        assert_ok(cus_capture_end(&cap, &g)); /* 0.1: CUDA_ERROR_INVALID_CONTEXT */
        size_t nodes = 0;
        assert_ok(cus_graph_node_count(g, &nodes));
        assert_int_equal(nodes, 2);
        assert_int_equal(cus_graph_kept_objects(g), 1); /* abuf; nothing of B's */
    }
    assert_ok(cus_stream_synchronize(bs));
    close_fixture(&fx);
    assert_int_equal(env_destroyed.count, 0);
    assert_no_misuse();
}

static void test_legacy_stream_of_another_context_during_capture(void **state)
{
    (void)state;
    run_bystander_during_capture(cus_stream_legacy);
}

static void test_per_thread_stream_of_another_context_during_capture(void **state)
{
    (void)state;
    run_bystander_during_capture(cus_stream_per_thread);
}

/* When whether a stream captures cannot be told (the query fails), the call
 * that would queue work fails with the driver's error and queues nothing;
 * the capture open elsewhere is not touched. */
static void test_a_failed_capture_query_fails_only_its_call(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_stream) other = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_buffer) b = NULL;
    assert_ok(cus_buffer_alloc(c, 64, &b));
    cus_capture_scope(cap, s, CU_STREAM_CAPTURE_MODE_RELAXED);
    assert_ok(cap.status);
    assert_ok(cus_buffer_fill_u32_async(b, 0, 1, 16, s)); /* its own stream: no query */
    unsigned long fills = cus_fake_calls_of("cuMemsetD32Async");
    assert_ok(cus_fake_fail_entry("cuStreamGetCaptureInfo", 1, CUDA_ERROR_UNKNOWN, false));
    assert_status(cus_buffer_fill_u32_async(b, 0, 2, 16, other), CU(CUDA_ERROR_UNKNOWN));
    assert_non_null(strstr(cus_last_error_message(), "cuStreamGetCaptureInfo"));
    assert_int_equal(cus_fake_calls_of("cuMemsetD32Async"), fills); /* nothing queued */
    cus_fake_clear_faults();
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_capture_end(&cap, &g));
    size_t nodes = 0;
    assert_ok(cus_graph_node_count(g, &nodes));
    assert_int_equal(nodes, 1);
    assert_ok(cus_stream_synchronize(other));
}

/* ============================================================================
 * a release racing a capture's begin (the ordering forced)
 * ========================================================================== */

static PFN_cuMemFree_v3020 real_free;

static CUresult gated_free(CUdeviceptr p)
{
    gate_pass();
    return real_free(p);
}

static CUresult gated_resolver(const char *symbol, void **pfn, int version, cuuint64_t flags,
                               CUdriverProcAddressQueryResult *qs)
{
    CUresult r = cus_fake_get_proc_address(symbol, pfn, version, flags, qs);
    if (r == CUDA_SUCCESS && *pfn && strcmp(symbol, "cuMemFree") == 0) {
        memcpy(&real_free, pfn, sizeof *pfn);
        PFN_cuMemFree_v3020 g = gated_free;
        memcpy(pfn, &g, sizeof g);
    }
    return r;
}

static void *release_run(void *p)
{
    cus_buffer *b = p;
    (void)cus_buffer_unref(b); /* the last reference: cuMemFree, held at the gate */
    return NULL;
}

static void test_a_release_racing_a_global_capture_begin(void **state)
{
    (void)state;
    assert_ok(cus_driver_install(gated_resolver));
    cus_context *c = new_ctx();
    cus_stream *s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_buffer *kept = NULL, *doomed = NULL;
    assert_ok(cus_buffer_alloc(c, 64, &kept));
    assert_ok(cus_buffer_alloc(c, 64, &doomed));
    unsigned long blocks = cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY);
    gate_arm();
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, release_run, doomed), 0);
    gate_wait_inside(); /* past every check, about to free */
    {
        cus_capture_scope(cap, s, CU_STREAM_CAPTURE_MODE_GLOBAL);
        assert_ok(cap.status);
        assert_ok(cus_buffer_fill_u32_async(kept, 0, 1, 16, s));
        gate_release(); /* the free runs now, inside the capture */
        assert_int_equal(pthread_join(t, NULL), 0);
        assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY), blocks - 1);
        assert_ok(cus_buffer_fill_u32_async(kept, 0, 2, 16, s));
        cus_autoptr(cus_graph) g = NULL;
        assert_ok(cus_capture_end(&cap, &g)); /* 0.1: STREAM_CAPTURE_INVALIDATED */
        size_t nodes = 0;
        assert_ok(cus_graph_node_count(g, &nodes));
        assert_int_equal(nodes, 2);
    }
    assert_int_equal(env_destroyed.count, 0); /* 0.1: the refused cuMemFree */
    kept = cus_buffer_unref(kept);
    s = cus_stream_unref(s);
    c = cus_context_unref(c);
    assert_no_misuse();
    assert_ok(cus_fake_install(NULL));
}

/* ============================================================================
 * a release's context-wide wait racing a capture's begin (the ordering forced)
 * ========================================================================== */

/* The flake of test_overlapping_captures_leave_no_graph_alive, about 1 run in
 * 10 on a loaded machine: an executable graph's release saw no capture open
 * and went on to cuCtxSynchronize (which relaxed mode does not make safe: an
 * H200 refuses it while any capture of the context is open, from any thread
 * and in every mode, probes.c release-ctx-sync-*); another thread began a
 * THREAD_LOCAL capture in between, and the synchronize invalidated it. Here
 * the release is held inside cuCtxSynchronize while another thread begins a
 * capture: the begin must wait for the release's wait to be over. */

static PFN_cuCtxSynchronize_v2000 real_ctx_sync;

static CUresult gated_ctx_sync(void)
{
    gate_pass();
    return real_ctx_sync();
}

static CUresult ctx_sync_resolver(const char *symbol, void **pfn, int version, cuuint64_t flags,
                                  CUdriverProcAddressQueryResult *qs)
{
    CUresult r = cus_fake_get_proc_address(symbol, pfn, version, flags, qs);
    if (r == CUDA_SUCCESS && *pfn && version < 13000 && strcmp(symbol, "cuCtxSynchronize") == 0) {
        memcpy(&real_ctx_sync, pfn, sizeof *pfn);
        PFN_cuCtxSynchronize_v2000 g = gated_ctx_sync;
        memcpy(pfn, &g, sizeof g);
    }
    return r;
}

static void *exec_release_run(void *p)
{
    (void)cus_graph_exec_unref(p); /* launched, no capture open: cuCtxSynchronize, held */
    return NULL;
}

typedef struct late_capturer {
    cus_function *fn;
    cus_stream *stream;
    pthread_mutex_t lock;
    pthread_cond_t cv;
    bool begun, go;
    cus_status begin, launch, end;
    size_t nodes;
} late_capturer;

static void *late_capture_run(void *p)
{
    late_capturer *l = p;
    cus_capture_guard cap = cus_capture_begin(l->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
    pthread_mutex_lock(&l->lock);
    l->begun = true;
    pthread_cond_broadcast(&l->cv);
    while (!l->go) /* until the release is over: its wait has had its effect */
        pthread_cond_wait(&l->cv, &l->lock);
    pthread_mutex_unlock(&l->lock);
    l->begin = cap.status;
    l->launch = cap.status ? cap.status : cus_launch(l->fn, 1, 1, 0, l->stream, 3);
    cus_graph *g = NULL;
    l->end = cap.status ? cap.status : cus_capture_end(&cap, &g);
    cus_capture_abandon(&cap);
    if (g)
        (void)cus_graph_node_count(g, &l->nodes);
    g = cus_graph_unref(g);
    return NULL;
}

static void test_a_context_wait_racing_a_capture_begin(void **state)
{
    (void)state;
    assert_ok(cus_driver_install(ctx_sync_resolver));
    cus_context *c = new_ctx();
    fixture fx = open_fixture(c);
    cus_stream *s1 = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_stream *s2 = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_graph_exec *e = NULL;
    {
        cus_capture_scope(cap, s1, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
        assert_ok(cap.status);
        assert_ok(cus_launch(fx.one, 1, 1, 0, s1, 3));
        cus_autoptr(cus_graph) g = NULL;
        assert_ok(cus_capture_end(&cap, &g));
        assert_ok(cus_graph_instantiate(g, 0, &e));
    }
    assert_ok(cus_graph_exec_launch(e, s1)); /* a replay may still run: its release waits */
    unsigned long syncs = cus_fake_calls_of("cuCtxSynchronize");
    late_capturer l = {.fn = fx.one, .stream = s2};
    pthread_mutex_init(&l.lock, NULL);
    pthread_cond_init(&l.cv, NULL);
    gate_arm();
    pthread_t releaser, capturer_t;
    assert_int_equal(pthread_create(&releaser, NULL, exec_release_run, e), 0);
    gate_wait_inside(); /* past its check of the open captures, about to synchronize */
    assert_int_equal(pthread_create(&capturer_t, NULL, late_capture_run, &l), 0);
    /* The begin must not get through while the release waits for the
     * context. With the fix it cannot, whatever the timing, and this waits
     * out its bound; the bound only lets the defect show (a begin that gets
     * through at once) without hanging: it orders nothing. */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 300 * 1000 * 1000;
    if (until.tv_nsec >= 1000000000) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000;
    }
    pthread_mutex_lock(&l.lock);
    while (!l.begun && pthread_cond_timedwait(&l.cv, &l.lock, &until) == 0)
        ;
    bool begun_during_wait = l.begun;
    pthread_mutex_unlock(&l.lock);
    gate_release(); /* the synchronize runs now */
    assert_int_equal(pthread_join(releaser, NULL), 0);
    pthread_mutex_lock(&l.lock);
    l.go = true;
    pthread_cond_broadcast(&l.cv);
    pthread_mutex_unlock(&l.lock);
    assert_int_equal(pthread_join(capturer_t, NULL), 0);
    assert_ok(l.begin);
    assert_ok(l.launch); /* before the fix: CUDA_ERROR_STREAM_CAPTURE_INVALIDATED */
    assert_ok(l.end);
    assert_int_equal(l.nodes, 1);
    assert_false(begun_during_wait);
    /* one synchronize, not refused (before the fix: refused, and tried again) */
    assert_int_equal(cus_fake_calls_of("cuCtxSynchronize"), syncs + 1);
    pthread_cond_destroy(&l.cv);
    pthread_mutex_destroy(&l.lock);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_GRAPH_EXEC), 0);
    s2 = cus_stream_unref(s2);
    s1 = cus_stream_unref(s1);
    close_fixture(&fx);
    c = cus_context_unref(c);
    assert_int_equal(env_destroyed.count, 0);
    assert_no_misuse();
    assert_ok(cus_fake_install(NULL));
}

/* Every release a GLOBAL capture would refuse, made during one on this
 * thread: a buffer, pinned host memory, a module, and a launched executable
 * graph (its cuCtxSynchronize and cuGraphExecDestroy). Each goes at once,
 * and the capture is not invalidated. */
static void test_releases_during_a_global_capture_run_at_once(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_stream) side = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_buffer) kept = NULL;
    assert_ok(cus_buffer_alloc(c, 64, &kept));
    cus_buffer *buf = NULL;
    assert_ok(cus_buffer_alloc(c, 64, &buf));
    cus_host_buffer *pinned = NULL;
    assert_ok(cus_host_buffer_alloc(c, 64, 0, &pinned));
    cus_module *mod = NULL;
    assert_ok(cus_module_load_data(c, ptx_src, 0, NULL, &mod));
    cus_graph *g0 = NULL;
    {
        cus_capture_scope(cap, side, CU_STREAM_CAPTURE_MODE_GLOBAL);
        assert_ok(cap.status);
        assert_ok(cus_buffer_fill_u32_async(kept, 0, 1, 16, side));
        assert_ok(cus_capture_end(&cap, &g0));
    }
    cus_graph_exec *e = NULL;
    assert_ok(cus_graph_instantiate(g0, 0, &e));
    g0 = cus_graph_unref(g0);
    assert_ok(cus_graph_exec_launch(e, side));
    size_t before = cus_debug_live_objects();
    {
        cus_capture_scope(cap, s, CU_STREAM_CAPTURE_MODE_GLOBAL);
        assert_ok(cap.status);
        assert_ok(cus_buffer_fill_u32_async(kept, 0, 2, 16, s));
        buf = cus_buffer_unref(buf);
        pinned = cus_host_buffer_unref(pinned);
        mod = cus_module_unref(mod);
        e = cus_graph_exec_unref(e); /* and the graph it held */
        assert_int_equal(cus_debug_live_objects(), before - 5);
        assert_ok(cus_buffer_fill_u32_async(kept, 0, 3, 16, s));
        cus_autoptr(cus_graph) g = NULL;
        assert_ok(cus_capture_end(&cap, &g));
        size_t nodes = 0;
        assert_ok(cus_graph_node_count(g, &nodes));
        assert_int_equal(nodes, 2);
    }
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_GRAPH_EXEC), 0);
    assert_int_equal(env_destroyed.count, 0);
    assert_no_misuse();
}

/* ============================================================================
 * what open captures hold: only what their graphs use
 * ========================================================================== */

/* A capture of many launches on distinct buffers keeps each buffer once and
 * the module once; releasing the buffers during the capture frees none
 * (the capture holds them) and the end hands them to the graph. Objects
 * released meanwhile that the capture does not use go at once. */
static void test_a_capture_holds_what_it_uses_and_nothing_else(void **state)
{
    (void)state;
    enum { BUFFERS = 2000 };
    cus_autoptr(cus_context) c = new_ctx();
    fixture fx = open_fixture(c);
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    static cus_buffer *bufs[BUFFERS];
    for (int i = 0; i < BUFFERS; i++)
        assert_ok(cus_buffer_alloc(c, 16, &bufs[i]));
    cus_buffer *unrelated = NULL;
    assert_ok(cus_buffer_alloc(c, 16, &unrelated));
    size_t before = cus_debug_live_objects() - 1;
    cus_autoptr(cus_graph) g = NULL;
    {
        cus_capture_scope(cap, s, CU_STREAM_CAPTURE_MODE_GLOBAL);
        assert_ok(cap.status);
        for (int rep = 0; rep < 2; rep++)
            for (int i = 0; i < BUFFERS; i++) {
                assert_ok(cus_launch(fx.one, 1, 1, 0, s, 3));
                assert_ok(cus_buffer_fill_u32_async(bufs[i], 0, (uint32_t)i, 4, s));
            }
        unsigned long frees = cus_fake_calls_of("cuMemFree");
        unrelated = cus_buffer_unref(unrelated); /* not used: freed now */
        assert_int_equal(cus_fake_calls_of("cuMemFree"), frees + 1);
        for (int i = 0; i < BUFFERS; i++)
            bufs[i] = cus_buffer_unref(bufs[i]); /* used: kept */
        assert_int_equal(cus_fake_calls_of("cuMemFree"), frees + 1);
        assert_int_equal(cus_debug_live_objects(), before);
        assert_ok(cus_capture_end(&cap, &g));
    }
    assert_int_equal(cus_graph_kept_objects(g), BUFFERS + 1); /* and the module */
    size_t nodes = 0;
    assert_ok(cus_graph_node_count(g, &nodes));
    assert_int_equal(nodes, 4 * BUFFERS);
    unsigned long frees = cus_fake_calls_of("cuMemFree");
    g = cus_graph_unref(g);
    assert_int_equal(cus_fake_calls_of("cuMemFree"), frees + BUFFERS);
    close_fixture(&fx);
    assert_int_equal(env_destroyed.count, 0);
}

/* Threads capturing overlapping graphs, dropping each graph (and an
 * executable graph of it) as soon as it is made: when the captures end, no
 * graph is alive. 0.1 deferred every release while any capture was open,
 * and overlapping captures kept the count above zero. */
#define CAPTURERS 4
#define CAPTURES 50

typedef struct capturer {
    cus_context *ctx;
    cus_function *fn;
    cus_buffer *buf;
    pthread_barrier_t *barrier;
    cus_status first_failure;
    char failure[300]; /* the failing call's message, on its own thread */
} capturer;

static void *capture_loop(void *p)
{
    capturer *w = p;
    cus_stream *s = NULL;
    cus_status st = cus_stream_create(w->ctx, CU_STREAM_NON_BLOCKING, 0, &s);
    pthread_barrier_wait(w->barrier);
    for (int k = 0; !st && k < CAPTURES; k++) {
        cus_capture_guard cap = cus_capture_begin(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
        st = cap.status;
        for (int i = 0; !st && i < 16; i++) {
            st = cus_launch(w->fn, 1, 1, 0, s, 3);
            if (!st)
                st = cus_buffer_fill_u32_async(w->buf, 0, (uint32_t)i, 4, s);
        }
        cus_graph *g = NULL;
        if (!st)
            st = cus_capture_end(&cap, &g);
        cus_capture_abandon(&cap);
        cus_graph_exec *e = NULL;
        if (!st)
            st = cus_graph_instantiate(g, 0, &e);
        if (!st)
            st = cus_graph_exec_launch(e, s);
        e = cus_graph_exec_unref(e);
        g = cus_graph_unref(g);
    }
    if (s && !st)
        st = cus_stream_synchronize(s);
    if (st)
        snprintf(w->failure, sizeof w->failure, "%s", cus_last_error_message());
    s = cus_stream_unref(s);
    w->first_failure = st;
    return NULL;
}

static void test_overlapping_captures_leave_no_graph_alive(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    fixture fx = open_fixture(c);
    cus_autoptr(cus_buffer) buf = NULL;
    assert_ok(cus_buffer_alloc(c, 64, &buf));
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, CAPTURERS);
    capturer w[CAPTURERS];
    pthread_t t[CAPTURERS];
    size_t before = cus_debug_live_objects();
    for (int i = 0; i < CAPTURERS; i++) {
        w[i] = (capturer){c, fx.one, buf, &barrier, CUS_SUCCESS, ""};
        assert_int_equal(pthread_create(&t[i], NULL, capture_loop, &w[i]), 0);
    }
    for (int i = 0; i < CAPTURERS; i++) {
        assert_int_equal(pthread_join(t[i], NULL), 0);
        if (w[i].first_failure)
            fail_msg("capturer %d: %s", i, w[i].failure);
    }
    pthread_barrier_destroy(&barrier);
    assert_int_equal(cus_debug_live_objects(), before);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_GRAPH), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_GRAPH_EXEC), 0);
    close_fixture(&fx);
    assert_int_equal(env_destroyed.count, 0);
    assert_no_misuse();
}

/* What an object's own note of the capture that keeps it (kept_by) must not
 * get wrong: captures open at once that use the same objects each keep them
 * once, whether they took the object first or found it taken (then their set
 * tells), and whether the capture that took it ended meanwhile; a capture
 * after them keeps them once again. */
static void fill(cus_buffer *b, cus_stream *s)
{
    assert_ok(cus_buffer_fill_u32_async(b, 0, 7, 4, s));
}

static void launch_on(fixture *fx, cus_buffer *x, cus_buffer *y, cus_stream *s)
{
    assert_ok(cus_launch(fx->axpy, 1, 1, 0, s, 2.0f, x, y, (uint64_t)1));
}

static void test_overlapping_captures_each_keep_shared_objects_once(void **state)
{
    (void)state;
    enum { MANY = 64 }; /* more than the thread's memo of set hits holds */
    cus_autoptr(cus_context) c = new_ctx();
    fixture fx = open_fixture(c);
    cus_autoptr(cus_stream) s1 = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_stream) s2 = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_buffer) x = NULL;
    cus_autoptr(cus_buffer) y = NULL;
    cus_autoptr(cus_buffer) z = NULL;
    assert_ok(cus_buffer_alloc(c, 16, &x));
    assert_ok(cus_buffer_alloc(c, 16, &y));
    assert_ok(cus_buffer_alloc(c, 16, &z));
    cus_buffer *w[MANY];
    for (int i = 0; i < MANY; i++)
        assert_ok(cus_buffer_alloc(c, 16, &w[i]));
    cus_autoptr(cus_graph) ga = NULL;
    cus_autoptr(cus_graph) gb = NULL;
    cus_autoptr(cus_graph) gc = NULL;
    {
        cus_capture_scope(a, s1, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
        assert_ok(a.status);
        cus_capture_scope(b, s2, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
        assert_ok(b.status);
        launch_on(&fx, x, y, s1); /* a takes the module, x and y */
        for (int i = 0; i < MANY; i++)
            fill(w[i], s1);
        launch_on(&fx, x, z, s2); /* b finds the module and x taken; takes z */
        launch_on(&fx, x, z, s2);
        fill(x, s2);
        for (int i = 0; i < MANY; i++)
            fill(w[i], s2); /* found taken, each */
        launch_on(&fx, x, y, s1);
        assert_ok(cus_capture_end(&a, &ga));
        /* a ended: what it had taken is free to take, and b holds some of it
         * already (its set says which, whatever the thread's memo forgot). */
        launch_on(&fx, x, y, s2); /* x in b's set; y new to b */
        launch_on(&fx, y, x, s2);
        for (int i = 0; i < MANY; i++)
            fill(w[i], s2);
        fill(y, s2);
        fill(z, s2);
        assert_ok(cus_capture_end(&b, &gb));
    }
    assert_int_equal(cus_graph_kept_objects(ga), 3 + MANY); /* the module, x, y, w */
    assert_int_equal(cus_graph_kept_objects(gb), 4 + MANY); /* the module, x, z, y, w */
    {
        cus_capture_scope(cc, s1, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
        assert_ok(cc.status);
        for (int i = 0; i < 3; i++) {
            launch_on(&fx, z, x, s1);
            fill(y, s1);
            fill(w[i], s1);
        }
        assert_ok(cus_capture_end(&cc, &gc));
    }
    assert_int_equal(cus_graph_kept_objects(gc), 7);
    /* Each graph holds one reference on each: released with the graphs and
     * the handles here, the buffers are freed (no reference left over). */
    unsigned long frees = cus_fake_calls_of("cuMemFree");
    ga = cus_graph_unref(ga);
    gb = cus_graph_unref(gb);
    gc = cus_graph_unref(gc);
    x = cus_buffer_unref(x);
    y = cus_buffer_unref(y);
    z = cus_buffer_unref(z);
    for (int i = 0; i < MANY; i++)
        cus_buffer_unref(w[i]);
    assert_int_equal(cus_fake_calls_of("cuMemFree"), frees + 3 + MANY);
    close_fixture(&fx);
    assert_int_equal(env_destroyed.count, 0);
    assert_no_misuse();
}

/* Hundreds of captures while one stays open: their ids meet the open one's
 * at every residue of the table of open captures (capture.c, open_ids), two
 * of them in its very slot (then they are not in the table, and what they
 * take must still count as taken); each keeps what it uses once, and the
 * open one too. */
static void test_many_captures_beside_an_open_one_keep_once(void **state)
{
    (void)state;
    enum { CAPTURES_BESIDE = 600 };
    cus_autoptr(cus_context) c = new_ctx();
    fixture fx = open_fixture(c);
    cus_autoptr(cus_stream) s1 = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_stream) s2 = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_buffer) x = NULL;
    assert_ok(cus_buffer_alloc(c, 16, &x));
    static cus_buffer *vs[CAPTURES_BESIDE]; /* allocated before: a capture refuses cuMemAlloc */
    for (int k = 0; k < CAPTURES_BESIDE; k++)
        assert_ok(cus_buffer_alloc(c, 16, &vs[k]));
    cus_autoptr(cus_graph) ga = NULL;
    {
        cus_capture_scope(a, s1, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
        assert_ok(a.status);
        launch_on(&fx, x, x, s1);
        for (int k = 0; k < CAPTURES_BESIDE; k++) {
            cus_buffer *v = vs[k];
            cus_autoptr(cus_graph) g = NULL;
            {
                cus_capture_scope(b, s2, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
                assert_ok(b.status);
                launch_on(&fx, x, v, s2); /* b takes v (x is a's) */
                fill(v, s1);              /* a finds v taken: must not take it */
                fill(v, s2);
                launch_on(&fx, v, x, s2);
                assert_ok(cus_capture_end(&b, &g));
            }
            assert_int_equal(cus_graph_kept_objects(g), 3); /* the module, x, v */
        }
        assert_ok(cus_capture_end(&a, &ga));
    }
    assert_int_equal(cus_graph_kept_objects(ga), 2 + CAPTURES_BESIDE);
    for (int k = 0; k < CAPTURES_BESIDE; k++)
        vs[k] = cus_buffer_unref(vs[k]);
    close_fixture(&fx);
    assert_int_equal(env_destroyed.count, 0);
    assert_no_misuse();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_legacy_stream_of_another_context_during_capture),
        ENV_TEST(test_per_thread_stream_of_another_context_during_capture),
        ENV_TEST(test_a_failed_capture_query_fails_only_its_call),
        ENV_TEST(test_a_release_racing_a_global_capture_begin),
        ENV_TEST(test_a_context_wait_racing_a_capture_begin),
        ENV_TEST(test_releases_during_a_global_capture_run_at_once),
        ENV_TEST(test_a_capture_holds_what_it_uses_and_nothing_else),
        ENV_TEST(test_overlapping_captures_leave_no_graph_alive),
        ENV_TEST(test_overlapping_captures_each_keep_shared_objects_once),
        ENV_TEST(test_many_captures_beside_an_open_one_keep_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
