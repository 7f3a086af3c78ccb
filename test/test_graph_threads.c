/* Stream capture and graphs under threads, on the fake driver (run under
 * TSan in the threads suite):
 *   - several threads capturing at once, each on its own stream, in
 *     thread-local mode and in relaxed mode (where a thread may allocate
 *     during its capture: the graph keeps what it allocated and dropped);
 *     the threads then swap graphs: each replays, and releases, the one
 *     another thread captured;
 *   - a relaxed capture ended on another thread than the one that began it;
 *   - one executable graph launched from several threads on their own
 *     streams;
 *   - the last reference to a graph (and to what it keeps) dropped on
 *     another thread, and inside a host function.
 *
 * Worker threads never call cmocka's asserts (they would longjmp into the
 * main thread's test): they record failures in their own report, which the
 * main thread checks after pthread_join. Threads meet at barriers, never by
 * sleeping; a worker that failed still goes through every barrier. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuscope/graph.h>
#include <cuscope/memory.h>

#include "stream_common.h"
#include "harness/workers.h"

#define THREADS 4
#define ROUNDS 5
#define N 128 
#define T_OK(r, expr)                                                          \
    __extension__({                                                            \
        cus_status t_st_ = (expr);                                             \
        if (t_st_ != CUS_SUCCESS)                                              \
            report_fail((r), __LINE__, #expr, t_st_);                          \
        t_st_ == CUS_SUCCESS;                                                  \
    })

static void assert_no_misuse(void)
{
    if (cus_fake_misuse_count())
        fail_msg("fake driver misuse: %s", cus_fake_last_misuse());
}

static void count_up(void *p)
{
    atomic_fetch_add((atomic_int *)p, 1);
}

/* ============================================================================
 * (1) concurrent captures, thread-local and relaxed; graphs swapped
 * ========================================================================== */

typedef struct capture_thread {
    int index;
    CUstreamCaptureMode mode;
    cus_context *ctx;
    pthread_barrier_t *barrier;
    struct capture_thread *all;
    /* made by this thread, replayed by the next one */
    cus_graph_exec *exec;
    cus_host_buffer *hin, *hout; /* the host side of its copies */
    uint32_t fill;
    int met;                     /* barriers of the capture passed */
    atomic_int counter;          /* its host function's runs */
    size_t kept;
    report r;
} capture_thread;

static void seed(uint32_t *p, uint32_t base)
{
    for (int i = 0; i < N; i++)
        p[i] = base ^ ((uint32_t)i * 2654435761u);
}

static bool copies_result_ok(const uint32_t *in, const uint32_t *out, uint32_t fill)
{
    for (int i = 0; i < N; i++)
        if (out[i] != (i < N / 2 ? in[i] : fill))
            return false;
    return true;
}

/* A barrier of the capture phase (two of them; a thread that failed before
 * one still meets the others there). */
static void meet(capture_thread *t)
{
    t->met++;
    pthread_barrier_wait(t->barrier);
}

/* The capture, inside the scope of a guard; `own` is a buffer made before
 * the capture, and in relaxed mode another one is allocated during it and
 * dropped before the end (the graph keeps it). */
static cus_status capture_work(capture_thread *t, cus_stream *s, cus_buffer *own, cus_graph **out)
{
    uint32_t *in = cus_host_buffer_data(t->hin), *outp = cus_host_buffer_data(t->hout);
    cus_capture_scope(cap, s, t->mode);
    CUS_TRY(cap.status);
    /* every thread is capturing before anyone queues anything */
    meet(t);
    cus_autoptr(cus_buffer) extra = NULL;
    cus_buffer *b = own;
    if (t->mode == CU_STREAM_CAPTURE_MODE_RELAXED) {
        /* an allocation during capture: not prohibited in relaxed mode */
        CUS_TRY(cus_buffer_alloc(t->ctx, N * 4, &extra));
        b = extra;
    }
    CUS_TRY(cus_copy_to_device_async(b, 0, in, N * 4, s));
    CUS_TRY(cus_buffer_fill_u32_async(b, N / 2 * 4, t->fill, N / 2, s));
    CUS_TRY(cus_stream_launch_host_fn(s, count_up, &t->counter));
    CUS_TRY(cus_copy_to_host_async(outp, b, 0, N * 4, s));
    bool capturing = false;
    CUS_TRY(cus_stream_is_capturing(s, &capturing));
    if (!capturing)
        return CUS_ERROR_INVALID_ARGUMENT; /* reported as a failure */
    /* every thread still capturing: the captures overlap */
    meet(t);
    return cus_capture_end(&cap, out);
}

static void *capture_worker(void *p)
{
    capture_thread *t = p;
    report *r = &t->r;
    cus_stream *s = NULL;
    cus_buffer *own = NULL;
    cus_graph *g = NULL;
    bool ready = T_OK(r, cus_stream_create(t->ctx, CU_STREAM_NON_BLOCKING, 0, &s)) &&
                 T_OK(r, cus_buffer_alloc(t->ctx, N * 4, &own)) &&
                 T_OK(r, cus_host_buffer_alloc(t->ctx, N * 4, 0, &t->hin)) &&
                 T_OK(r, cus_host_buffer_alloc(t->ctx, N * 4, 0, &t->hout));
    pthread_barrier_wait(t->barrier); /* everything allocated */
    if (ready) {
        cus_status st = capture_work(t, s, own, &g);
        if (st)
            report_fail(r, __LINE__, "capture_work", st);
    }
    while (t->met < 2)
        meet(t);
    if (g) {
        bool capturing = true;
        T_OK(r, cus_stream_is_capturing(s, &capturing));
        T_CHECK(r, !capturing);
        size_t nodes = 0;
        T_OK(r, cus_graph_node_count(g, &nodes));
        T_CHECK(r, nodes == 4);
        t->kept = cus_graph_kept_objects(g);
        T_OK(r, cus_graph_instantiate(g, 0, &t->exec));
    }
    g = cus_graph_unref(g);
    own = cus_buffer_unref(own); /* in thread-local mode the graph keeps it */
    s = cus_stream_unref(s);
    pthread_barrier_wait(t->barrier); /* every exec made */

    /* Replay the next thread's graph on a stream of our own, and release it
     * (the last reference: its buffers go on this thread). */
    capture_thread *o = &t->all[(t->index + 1) % THREADS];
    cus_stream *s2 = NULL;
    if (o->exec && T_OK(r, cus_stream_create(t->ctx, CU_STREAM_NON_BLOCKING, 0, &s2))) {
        uint32_t *in = cus_host_buffer_data(o->hin), *out = cus_host_buffer_data(o->hout);
        for (int k = 0; k < ROUNDS; k++) {
            seed(in, (uint32_t)(o->index * 1000 + k));
            if (!T_OK(r, cus_graph_exec_launch(o->exec, s2)) ||
                !T_OK(r, cus_stream_synchronize(s2)))
                break;
            T_CHECK(r, copies_result_ok(in, out, o->fill));
        }
        T_CHECK(r, atomic_load(&o->counter) == ROUNDS);
    }
    o->exec = cus_graph_exec_unref(o->exec);
    s2 = cus_stream_unref(s2);
    pthread_barrier_wait(t->barrier); /* every exec released */
    return NULL;
}

static void run_concurrent_captures(CUstreamCaptureMode mode)
{
    cus_autoptr(cus_context) c = new_primary();
    static capture_thread ts[THREADS];
    pthread_barrier_t barrier;
    assert_int_equal(pthread_barrier_init(&barrier, NULL, THREADS), 0);
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) {
        memset(&ts[i], 0, sizeof ts[i]);
        ts[i].index = i;
        ts[i].mode = mode;
        ts[i].ctx = c;
        ts[i].barrier = &barrier;
        ts[i].all = ts;
        ts[i].fill = 0xf0000000u + (uint32_t)i;
        atomic_init(&ts[i].counter, 0);
        assert_int_equal(pthread_create(&th[i], NULL, capture_worker, &ts[i]), 0);
    }
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_join(th[i], NULL), 0);
    pthread_barrier_destroy(&barrier);
    for (int i = 0; i < THREADS; i++) {
        assert_report_clean(&ts[i].r, i);
        /* a buffer, the host function's record */
        assert_int_equal(ts[i].kept, 2);
        assert_null(ts[i].exec);
        ts[i].hin = cus_host_buffer_unref(ts[i].hin);
        ts[i].hout = cus_host_buffer_unref(ts[i].hout);
    }
    assert_no_misuse();
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY), 0);
}

static void test_concurrent_captures_thread_local(void **state)
{
    (void)state;
    run_concurrent_captures(CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
}

static void test_concurrent_captures_relaxed(void **state)
{
    (void)state;
    run_concurrent_captures(CU_STREAM_CAPTURE_MODE_RELAXED);
}

/* ============================================================================
 * (2) a capture ended on another thread
 * ========================================================================== */

typedef struct end_elsewhere {
    cus_capture_guard *guard;
    cus_stream *stream;
    cus_buffer *buf;
    uint32_t *in;
    cus_graph *graph;
    cus_status end;
    report r;
} end_elsewhere;

static void *end_worker(void *p)
{
    end_elsewhere *w = p;
    /* captured on this thread too: the stream is capturing, whoever calls */
    T_OK(&w->r, cus_copy_to_device_async(w->buf, 0, w->in, N * 4, w->stream));
    w->end = cus_capture_end(w->guard, &w->graph);
    return NULL;
}

static void test_relaxed_capture_ended_on_another_thread(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_host_buffer) hin = NULL;
    cus_autoptr(cus_host_buffer) hout = NULL;
    assert_ok(cus_host_buffer_alloc(c, N * 4, 0, &hin));
    assert_ok(cus_host_buffer_alloc(c, N * 4, 0, &hout));
    cus_autoptr(cus_buffer) buf = NULL;
    assert_ok(cus_buffer_alloc(c, N * 4, &buf));
    uint32_t *in = cus_host_buffer_data(hin), *out = cus_host_buffer_data(hout);
    cus_autoptr(cus_graph) g = NULL;
    {
        cus_capture_scope(cap, s, CU_STREAM_CAPTURE_MODE_RELAXED);
        assert_ok(cap.status);
        assert_ok(cus_buffer_fill_u32_async(buf, 0, 0, N, s));
        end_elsewhere w = {.guard = &cap, .stream = s, .buf = buf, .in = in};
        pthread_t th;
        assert_int_equal(pthread_create(&th, NULL, end_worker, &w), 0);
        assert_int_equal(pthread_join(th, NULL), 0);
        assert_report_clean(&w.r, 0);
        if (w.end)
            fail_msg("end on another thread -> %s", cus_status_name(w.end));
        assert_false(cap.open);
        g = w.graph;
        assert_ok(cus_copy_to_host_async(out, buf, 0, N * 4, s)); /* not captured */
        assert_ok(cus_stream_synchronize(s));
    }
    size_t nodes = 0;
    assert_ok(cus_graph_node_count(g, &nodes));
    assert_int_equal(nodes, 2);
    assert_int_equal(cus_graph_kept_objects(g), 1);
    cus_autoptr(cus_graph_exec) e = NULL;
    assert_ok(cus_graph_instantiate(g, 0, &e));
    seed(in, 17);
    assert_ok(cus_graph_exec_launch(e, s));
    assert_ok(cus_copy_to_host_async(out, buf, 0, N * 4, s));
    assert_ok(cus_stream_synchronize(s));
    assert_memory_equal(in, out, N * 4);
}

/* Regression: lib/graph.c (end_locked_out) once took the capture's record and
 * :355 (cus_capture_end) closes the guard before knowing whether the driver ended
 * the capture: a thread-local (or global) capture ended on another thread
 * fails with CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, the driver's capture
 * stays open, and no one can end it through cuscope any more (the scope's
 * abandon sees a closed guard). Suggested fix: when cuStreamEndCapture
 * fails with a status that leaves the capture open (WRONG_THREAD, or any
 * failure after which cuStreamIsCapturing still reports a capture), put the
 * record back and leave the guard open, so that the scope's exit on the
 * right thread ends it. */
static void test_thread_local_capture_ended_on_another_thread(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    cus_stream *s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_host_buffer *hin = NULL;
    assert_ok(cus_host_buffer_alloc(c, N * 4, 0, &hin));
    cus_buffer *buf = NULL;
    assert_ok(cus_buffer_alloc(c, N * 4, &buf));
    end_elsewhere w = {.stream = s, .buf = buf, .in = cus_host_buffer_data(hin)};
    {
        cus_capture_scope(cap, s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
        assert_ok(cap.status);
        w.guard = &cap;
        pthread_t th;
        assert_int_equal(pthread_create(&th, NULL, end_worker, &w), 0);
        assert_int_equal(pthread_join(th, NULL), 0);
    } /* the scope's exit, on the thread that began it, must end it */
    bool capturing = true;
    assert_ok(cus_stream_is_capturing(s, &capturing));
    if (capturing) { /* end it by hand, so that what follows starts clean */
        void *pfn = NULL, *dpfn = NULL;
        CUdriverProcAddressQueryResult qs;
        assert_int_equal(cus_fake_get_proc_address("cuStreamEndCapture", &pfn, 10000, 0, &qs), 0);
        assert_int_equal(cus_fake_get_proc_address("cuGraphDestroy", &dpfn, 10000, 0, &qs), 0);
        CUresult (*end)(CUstream, CUgraph *);
        CUresult (*destroy)(CUgraph);
        memcpy(&end, &pfn, sizeof pfn);
        memcpy(&destroy, &dpfn, sizeof dpfn);
        CUgraph raw = NULL;
        assert_ok(cus_context_push(c));
        (void)end(cus_stream_handle(s), &raw);
        assert_ok(cus_context_pop(NULL));
        if (raw)
            (void)destroy(raw);
    }
    buf = cus_buffer_unref(buf);
    hin = cus_host_buffer_unref(hin);
    s = cus_stream_unref(s);
    c = cus_context_unref(c);
    assert_int_equal(w.end, CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD);
    assert_null(w.graph);
    if (capturing)
        fail_msg("the capture stayed open after a failed end on the wrong thread");
}

/* ============================================================================
 * (2b) what a capture prohibits on other threads
 * ========================================================================== */

typedef struct allocator {
    cus_context *ctx;
    cus_status status;
    cus_buffer *buf;
} allocator;

static void *alloc_worker(void *p)
{
    allocator *a = p;
    a->status = cus_buffer_alloc(a->ctx, 64, &a->buf);
    a->buf = cus_buffer_unref(a->buf);
    return NULL;
}

/* A global capture prohibits another thread's allocation (and is
 * invalidated by it: its end says so); a thread-local or relaxed one does
 * not. */
static void test_global_capture_prohibits_other_threads(void **state)
{
    (void)state;
    static const CUstreamCaptureMode modes[] = {CU_STREAM_CAPTURE_MODE_GLOBAL,
                                                CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
                                                CU_STREAM_CAPTURE_MODE_RELAXED};
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_buffer) b = NULL;
    assert_ok(cus_buffer_alloc(c, N * 4, &b));
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        cus_capture_scope(cap, s, modes[m]);
        assert_ok(cap.status);
        assert_ok(cus_buffer_fill_u32_async(b, 0, 1, N, s));
        allocator a = {.ctx = c};
        pthread_t th;
        assert_int_equal(pthread_create(&th, NULL, alloc_worker, &a), 0);
        assert_int_equal(pthread_join(th, NULL), 0);
        cus_graph *g = NULL;
        cus_status end = cus_capture_end(&cap, &g);
        if (m == 0) {
            assert_int_equal(a.status, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
            assert_int_equal(end, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
            assert_null(g);
        } else {
            assert_int_equal(a.status, CUS_SUCCESS);
            assert_int_equal(end, CUS_SUCCESS);
            assert_non_null(g);
            assert_int_equal(cus_graph_kept_objects(g), 1);
        }
        g = cus_graph_unref(g);
        assert_false(cap.open);
    }
    bool capturing = true;
    assert_ok(cus_stream_is_capturing(s, &capturing));
    assert_false(capturing);
    assert_int_equal(env_destroyed.count, 0);
    assert_no_misuse();
}

/* ============================================================================
 * (3) one exec launched from several threads, each on its own stream
 * ========================================================================== */

typedef struct launcher {
    cus_context *ctx;
    cus_graph_exec *exec; /* a reference of the thread's own */
    pthread_barrier_t *barrier;
    report r;
} launcher;

static void *launch_worker(void *p)
{
    launcher *l = p;
    cus_stream *s = NULL;
    bool ok = T_OK(&l->r, cus_stream_create(l->ctx, CU_STREAM_NON_BLOCKING, 0, &s));
    pthread_barrier_wait(l->barrier);
    for (int k = 0; ok && k < ROUNDS; k++) {
        ok = T_OK(&l->r, cus_graph_exec_launch(l->exec, s));
        if (ok && k % 2)
            ok = T_OK(&l->r, cus_stream_synchronize(s));
    }
    if (s)
        T_OK(&l->r, cus_stream_synchronize(s));
    s = cus_stream_unref(s);
    l->exec = cus_graph_exec_unref(l->exec);
    return NULL;
}

static void test_one_exec_launched_from_many_threads(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    static atomic_int counter;
    atomic_store(&counter, 0);
    cus_graph_exec *e = NULL;
    {
        cus_autoptr(cus_graph) g = NULL;
        cus_capture_scope(cap, s, CU_STREAM_CAPTURE_MODE_GLOBAL);
        assert_ok(cap.status);
        assert_ok(cus_stream_launch_host_fn(s, count_up, &counter));
        assert_ok(cus_stream_launch_host_fn(s, count_up, &counter));
        assert_ok(cus_capture_end(&cap, &g));
        assert_ok(cus_graph_instantiate(g, 0, &e));
    }
    static launcher ls[THREADS];
    pthread_barrier_t barrier;
    assert_int_equal(pthread_barrier_init(&barrier, NULL, THREADS), 0);
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) {
        ls[i] = (launcher){.ctx = c, .exec = cus_graph_exec_ref(e), .barrier = &barrier};
        assert_int_equal(pthread_create(&th[i], NULL, launch_worker, &ls[i]), 0);
    }
    e = cus_graph_exec_unref(e); /* the threads hold the exec now */
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_join(th[i], NULL), 0);
    pthread_barrier_destroy(&barrier);
    for (int i = 0; i < THREADS; i++)
        assert_report_clean(&ls[i].r, i);
    assert_int_equal(atomic_load(&counter), 2 * THREADS * ROUNDS);
    assert_no_misuse();
}

/* ============================================================================
 * (4) the last reference dropped on another thread, and in a host function
 * ========================================================================== */

typedef struct dropper {
    cus_context *ctx;
    cus_graph *graph;
    cus_graph_exec *exec;
    uint32_t *in, *out;
    size_t objects_after; /* live objects once it released them */
    report r;
} dropper;

static void *drop_worker(void *p)
{
    dropper *d = p;
    cus_stream *s = NULL;
    if (T_OK(&d->r, cus_stream_create(d->ctx, CU_STREAM_NON_BLOCKING, 0, &s))) {
        seed(d->in, 99);
        if (T_OK(&d->r, cus_graph_exec_launch(d->exec, s)) &&
            T_OK(&d->r, cus_stream_synchronize(s)))
            T_CHECK(&d->r, copies_result_ok(d->in, d->out, 0xabcdu));
    }
    s = cus_stream_unref(s);
    d->graph = cus_graph_unref(d->graph);
    d->exec = cus_graph_exec_unref(d->exec); /* the last: the buffer goes here */
    T_CHECK(&d->r, cus_context_stack_depth() == 0);
    return NULL;
}

static cus_status capture_copies(cus_stream *s, cus_buffer *b, const uint32_t *in, uint32_t *out,
                                 cus_graph **g)
{
    cus_capture_scope(cap, s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    CUS_TRY(cap.status);
    CUS_TRY(cus_copy_to_device_async(b, 0, in, N * 4, s));
    CUS_TRY(cus_buffer_fill_u32_async(b, N / 2 * 4, 0xabcdu, N / 2, s));
    CUS_TRY(cus_copy_to_host_async(out, b, 0, N * 4, s));
    return cus_capture_end(&cap, g);
}

static void test_last_reference_dropped_on_another_thread(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_host_buffer) hin = NULL;
    cus_autoptr(cus_host_buffer) hout = NULL;
    assert_ok(cus_host_buffer_alloc(c, N * 4, 0, &hin));
    assert_ok(cus_host_buffer_alloc(c, N * 4, 0, &hout));
    dropper d = {.ctx = c, .in = cus_host_buffer_data(hin), .out = cus_host_buffer_data(hout)};
    {
        cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
        cus_autoptr(cus_buffer) b = NULL;
        assert_ok(cus_buffer_alloc(c, N * 4, &b));
        assert_ok(capture_copies(s, b, d.in, d.out, &d.graph));
        assert_ok(cus_graph_instantiate(d.graph, 0, &d.exec));
    }
    size_t objects = cus_debug_live_objects();
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, drop_worker, &d), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_report_clean(&d.r, 0);
    assert_null(d.graph);
    assert_null(d.exec);
    assert_int_equal(cus_debug_live_objects(), objects - 3); /* exec, graph, buffer */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY), 0);
    assert_int_equal(env_destroyed.count, 0);
    assert_no_misuse();
}

typedef struct host_drop {
    cus_graph *graph;
    cus_graph_exec *exec;
} host_drop;

static void drop_in_host_fn(void *p)
{
    host_drop *h = p;
    h->exec = cus_graph_exec_unref(h->exec);
    h->graph = cus_graph_unref(h->graph);
}

static void *run_deferred(void *p)
{
    *(unsigned int *)p = cus_release_deferred();
    return NULL;
}

/* Dropped inside a host function (the driver's thread): deferred, and run by
 * another thread's cus_release_deferred(). */
static void test_last_reference_dropped_in_a_host_function(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_host_buffer) hin = NULL;
    cus_autoptr(cus_host_buffer) hout = NULL;
    assert_ok(cus_host_buffer_alloc(c, N * 4, 0, &hin));
    assert_ok(cus_host_buffer_alloc(c, N * 4, 0, &hout));
    host_drop h = {NULL, NULL};
    {
        cus_autoptr(cus_buffer) b = NULL;
        assert_ok(cus_buffer_alloc(c, N * 4, &b));
        assert_ok(capture_copies(s, b, cus_host_buffer_data(hin), cus_host_buffer_data(hout),
                                 &h.graph));
        assert_ok(cus_graph_instantiate(h.graph, 0, &h.exec));
    }
    size_t objects = cus_debug_live_objects();
    seed(cus_host_buffer_data(hin), 5);
    assert_ok(cus_graph_exec_launch(h.exec, s));
    assert_ok(cus_stream_launch_host_fn(s, drop_in_host_fn, &h));
    /* The fake runs the queue (the host function on its driver thread)
     * without a cuscope call: the destruction waits, deferred. */
    cus_fake_run_streams();
    assert_null(h.exec);
    assert_null(h.graph);
    assert_true(copies_result_ok(cus_host_buffer_data(hin), cus_host_buffer_data(hout), 0xabcdu));
    assert_int_equal(cus_debug_live_objects(), objects);
    unsigned int ran = 0;
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, run_deferred, &ran), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    /* the exec; its graph and buffer go with it, on that thread */
    assert_int_equal(ran, 1);
    assert_int_equal(cus_debug_live_objects(), objects - 3);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY), 0);
    assert_ok(cus_stream_synchronize(s));
    assert_no_misuse();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_concurrent_captures_thread_local),
        ENV_TEST(test_concurrent_captures_relaxed),
        ENV_TEST(test_relaxed_capture_ended_on_another_thread),
        ENV_TEST(test_thread_local_capture_ended_on_another_thread),
        ENV_TEST(test_global_capture_prohibits_other_threads),
        ENV_TEST(test_one_exec_launched_from_many_threads),
        ENV_TEST(test_last_reference_dropped_on_another_thread),
        ENV_TEST(test_last_reference_dropped_in_a_host_function),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
