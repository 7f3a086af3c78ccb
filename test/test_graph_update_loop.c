/* The graphs an update replaces (issue 16), on the fake driver: what
 * cus_graph_exec_update does with them (include/cuscope/graph.h). Released at
 * once when the exec was not launched since the graph became current; else
 * kept, with a fence (an event) recorded on each stream launched on, until
 * the fences complete: queried at later updates, launches and the exec's
 * release. So 1,000 update loops, each capturing a graph around a 1 MiB
 * scratch buffer, keep cuscope's objects, the fake's device memory and its
 * driver graphs flat, whatever launches and synchronizes come between; and
 * a graph whose replays have not run stays alive (its buffer with it) until
 * they have. Plus: the update's new failure paths (fences, the retired
 * list) fail cleanly and change nothing; a fence query that fails reports
 * and keeps the graph; the exec's release waits only while a replay may
 * still run; streams an update cannot fence make it wait for the context. */
#include <limits.h>

#include "graph_fixtures.h"

#define SCRATCH (1u << 20) /* bytes of each loop's scratch buffer */
#define LOOPS 1000

/* The world of a loop: a context, two streams, where the replays write. */
typedef struct loop {
    cus_context *c;
    cus_stream *s, *s2;
    cus_host_buffer *out; /* G_N words: the replay's result */
    cus_buffer *dst;      /* G_N words of device memory */
    cus_graph_exec *exec;
    uint32_t current;     /* the value the current graph writes */
    CUstreamCaptureMode mode; /* of the captures (GLOBAL) */
    size_t objects, bytes; /* before the exec */
    size_t max_retired;
} loop;

static void loop_open(loop *l)
{
    memset(l, 0, sizeof *l);
    l->mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
    l->c = new_primary();
    l->s = new_stream(l->c, CU_STREAM_NON_BLOCKING);
    l->s2 = new_stream(l->c, CU_STREAM_NON_BLOCKING);
    l->out = new_pinned(l->c, G_N * 4);
    l->dst = new_buffer(l->c, G_N * 4);
    l->objects = cus_debug_live_objects();
    l->bytes = cus_fake_device_bytes_in_use(0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_GRAPH), 0);
}

/* Releases the exec (if not done yet), and checks that everything the loop
 * made went with it: events_left, driver events whose destroy failed. */
static void loop_close_leaving(loop *l, size_t events_left)
{
    l->exec = cus_graph_exec_unref(l->exec);
    assert_int_equal(cus_debug_live_objects(), l->objects);
    assert_int_equal(cus_fake_device_bytes_in_use(0), l->bytes);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_GRAPH), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_GRAPH_EXEC), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_EVENT), events_left);
    l->dst = cus_buffer_unref(l->dst);
    l->out = cus_host_buffer_unref(l->out);
    l->s2 = cus_stream_unref(l->s2);
    l->s = cus_stream_unref(l->s);
    l->c = cus_context_unref(l->c);
}

static void loop_close(loop *l)
{
    loop_close_leaving(l, 0);
}

/* Releases the exec: the cuCtxSynchronize calls its release made. */
static unsigned long release_exec(loop *l)
{
    unsigned long syncs = cus_fake_calls_of("cuCtxSynchronize");
    l->exec = cus_graph_exec_unref(l->exec);
    return cus_fake_calls_of("cuCtxSynchronize") - syncs;
}

/* On s: scratch = value (the whole 1 MiB), dst = scratch's first words,
 * out = dst. Three nodes; the graph keeps scratch and dst. */
static cus_status capture_scratch(cus_stream *s, CUstreamCaptureMode mode, cus_buffer *scratch,
                                  cus_buffer *dst, uint32_t *out, uint32_t value,
                                  cus_graph **graph)
{
    cus_capture_scope(cap, s, mode);
    CUS_TRY(cap.status);
    CUS_TRY(cus_buffer_fill_u32_async(scratch, 0, value, SCRATCH / 4, s));
    CUS_TRY(cus_copy_device_async(dst, 0, scratch, 0, G_N * 4, s));
    CUS_TRY(cus_copy_to_host_async(out, dst, 0, G_N * 4, s));
    return cus_capture_end(&cap, graph);
}

/* A new graph around a new scratch buffer (the caller holds both). */
static cus_graph *new_graph(loop *l, uint32_t value, cus_buffer **scratch)
{
    *scratch = new_buffer(l->c, SCRATCH);
    cus_graph *g = NULL;
    assert_ok(capture_scratch(l->s, l->mode, *scratch, l->dst, u32s(l->out), value, &g));
    return g;
}

/* One loop: a new graph around a new scratch buffer takes over the exec (or
 * makes it), and the loop drops its references to both. */
static void loop_step(loop *l, uint32_t value)
{
    cus_buffer *scratch = NULL;
    cus_graph *g = new_graph(l, value, &scratch);
    if (!l->exec) {
        l->exec = instantiate(g);
    } else {
        CUgraphExecUpdateResult why = CU_GRAPH_EXEC_UPDATE_ERROR;
        assert_ok(cus_graph_exec_update(l->exec, g, &why));
        assert_int_equal(why, CU_GRAPH_EXEC_UPDATE_SUCCESS);
    }
    l->current = value;
    cus_graph_unref(g);
    cus_buffer_unref(scratch);
}

/* The graphs the exec holds besides its current one, from three counts that
 * must agree: cuscope's objects (each graph and its scratch buffer), the
 * fake's device memory (a scratch buffer each) and its driver graphs. */
static size_t retired(loop *l)
{
    size_t objects = cus_debug_live_objects() - l->objects;
    size_t bytes = cus_fake_device_bytes_in_use(0) - l->bytes;
    size_t graphs = cus_fake_live_handles(CUS_FAKE_HANDLE_GRAPH);
    assert_true(objects >= 3); /* the exec, its graph, the graph's scratch */
    assert_int_equal((objects - 3) % 2, 0);
    size_t n = (objects - 3) / 2;
    assert_int_equal(bytes, (n + 1) * SCRATCH);
    assert_int_equal(graphs, n + 1);
    if (n > l->max_retired)
        l->max_retired = n;
    return n;
}

static void assert_out(loop *l, uint32_t value)
{
    for (int i = 0; i < G_N; i++)
        if (u32s(l->out)[i] != value)
            fail_msg("out[%d] = %u, the replay of the graph writing %u expected", i,
                     u32s(l->out)[i], value);
}

static void launch_and_sync(loop *l, cus_stream *s)
{
    memset(u32s(l->out), 0, G_N * 4);
    assert_ok(cus_graph_exec_launch(l->exec, s));
    assert_ok(cus_stream_synchronize(s));
    assert_out(l, l->current);
}

/* ============================================================================
 * the loops
 * ========================================================================== */

/* Never launched: each replaced graph goes at once, with no driver call of
 * its own (no fence). */
static void test_update_loop_without_launches(void **state)
{
    (void)state;
    loop l;
    loop_open(&l);
    unsigned long events = cus_fake_calls_of("cuEventCreate");
    for (uint32_t i = 0; i < LOOPS; i++) {
        loop_step(&l, i);
        assert_int_equal(retired(&l), 0);
    }
    assert_int_equal(cus_fake_calls_of("cuEventCreate"), events);
    launch_and_sync(&l, l.s); /* the exec replays the last graph */
    assert_int_equal(release_exec(&l), 1); /* launched since: a replay may run */
    loop_close(&l);
}

/* A launch and a synchronize in each loop: the replaced graph is fenced,
 * and the next update finds the fence complete and releases it. */
static void test_update_loop_with_launches_and_syncs(void **state)
{
    (void)state;
    loop l;
    loop_open(&l);
    for (uint32_t i = 0; i < LOOPS; i++) {
        loop_step(&l, 3 * i + 1);
        assert_true(retired(&l) <= 1);
        launch_and_sync(&l, l.s);
    }
    assert_int_equal(l.max_retired, 1);
    loop_close(&l);
}

/* Launches and no synchronize: the fake's device makes progress as the
 * fences are queried (CUS_FAKE_QUERY_STEP), and the graphs go as their
 * replays complete: a few at most are held. */
static void test_update_loop_with_launches_without_syncs(void **state)
{
    (void)state;
    loop l;
    loop_open(&l);
    for (uint32_t i = 0; i < LOOPS; i++) {
        loop_step(&l, i + 7);
        assert_true(retired(&l) <= 4);
        assert_ok(cus_graph_exec_launch(l.exec, l.s));
    }
    assert_ok(cus_stream_synchronize(l.s));
    assert_out(&l, l.current);
    print_message("without synchronizes: at most %zu replaced graphs held\n", l.max_retired);
    loop_close(&l);
}

/* Each way of waiting and each kind of stream in turn: nothing, a stream
 * synchronize, none (the device progresses), two streams and a context
 * synchronize, the legacy default stream (NULL), the per-thread default
 * stream of this thread. */
static void test_update_loop_mixed(void **state)
{
    (void)state;
    loop l;
    loop_open(&l);
    cus_autoptr(cus_stream) per_thread = NULL;
    assert_ok(cus_stream_per_thread(l.c, &per_thread));
    l.objects++; /* made after loop_open */
    unsigned long syncs_before = cus_fake_calls_of("cuCtxSynchronize");
    unsigned long explicit_syncs = 0;
    for (uint32_t i = 0; i < LOOPS; i++) {
        loop_step(&l, 5 * i);
        assert_true(retired(&l) <= 4);
        switch (i % 6) {
        case 0:
            break;
        case 1:
            launch_and_sync(&l, l.s);
            break;
        case 2:
            assert_ok(cus_graph_exec_launch(l.exec, l.s));
            break;
        case 3:
            assert_ok(cus_graph_exec_launch(l.exec, l.s));
            assert_ok(cus_graph_exec_launch(l.exec, l.s2));
            assert_ok(cus_context_synchronize(l.c));
            explicit_syncs++;
            assert_out(&l, l.current);
            break;
        case 4:
            memset(u32s(l.out), 0, G_N * 4);
            assert_ok(cus_graph_exec_launch(l.exec, NULL));
            assert_ok(cus_context_synchronize(l.c));
            explicit_syncs++;
            assert_out(&l, l.current);
            break;
        case 5:
            launch_and_sync(&l, per_thread);
            break;
        }
    }
    /* Every stream was fenced: no update waited for the context. */
    assert_int_equal(cus_fake_calls_of("cuCtxSynchronize") - syncs_before, explicit_syncs);
    print_message("mixed: at most %zu replaced graphs held\n", l.max_retired);
    per_thread = cus_stream_unref(per_thread);
    l.objects--;
    loop_close(&l);
}

/* A device that makes no progress unless waited for (CUS_FAKE_QUERY_NONE):
 * every replaced graph has replays queued, so each is kept, its scratch
 * buffer with it, and the replays find them alive when they run. The
 * synchronize lets the next update release them all. The retired list
 * grows by doubling: the updates' own host allocations are logarithmic. */
static void test_update_loop_keeps_what_queued_replays_use(void **state)
{
    (void)state;
    loop l;
    loop_open(&l);
    cus_fake_set_query_mode(CUS_FAKE_QUERY_NONE);
    loop_step(&l, 1000);
    unsigned long update_allocs = 0;
    enum { PENDING = 64 };
    for (uint32_t i = 0; i < PENDING; i++) {
        assert_ok(cus_graph_exec_launch(l.exec, l.s));
        cus_buffer *scratch = NULL;
        cus_graph *g = new_graph(&l, 2000 + i, &scratch);
        cus_debug_fail_host_alloc(ULONG_MAX, false); /* counts only */
        assert_ok(cus_graph_exec_update(l.exec, g, NULL));
        update_allocs += cus_debug_host_allocs();
        cus_debug_fail_host_alloc(0, false);
        l.current = 2000 + i;
        cus_graph_unref(g);
        cus_buffer_unref(scratch);
        assert_int_equal(retired(&l), i + 1);
    }
    /* 4, 8, 16, 32, 64 entries: five allocations, not one per update */
    assert_true(update_allocs <= 5);
    assert_true(cus_fake_stream_pending(cus_stream_handle(l.s)) > 0);
    assert_ok(cus_stream_synchronize(l.s));
    assert_int_equal(cus_fake_misuse_count(), 0); /* the replays found their buffers */
    assert_int_equal(retired(&l), PENDING);       /* not pruned until the next call */
    /* The next update finds every fence complete; the current graph, not
     * launched since it became current, goes at once. */
    loop_step(&l, 9999);
    assert_int_equal(retired(&l), 0);
    /* A launch, a synchronize: its fence, recorded at the next update, runs
     * only when waited for, so the graph it replaced stays until then. */
    launch_and_sync(&l, l.s);
    loop_step(&l, 4242);
    assert_int_equal(retired(&l), 1);
    assert_ok(cus_stream_synchronize(l.s));
    /* The exec's release finds the fence complete, and was not launched
     * since: no wait. */
    unsigned long queries = cus_fake_calls_of("cuEventQuery");
    assert_int_equal(release_exec(&l), 0);
    assert_int_equal(cus_fake_calls_of("cuEventQuery"), queries + 1);
    loop_close(&l);
}

/* A launch prunes too, from the oldest, and stops at the first fence not
 * complete: at most one query that answers not ready. */
static void test_launch_releases_completed_graphs(void **state)
{
    (void)state;
    loop l;
    loop_open(&l);
    cus_fake_set_query_mode(CUS_FAKE_QUERY_NONE);
    loop_step(&l, 1);
    for (uint32_t i = 0; i < 3; i++) {
        assert_ok(cus_graph_exec_launch(l.exec, l.s));
        loop_step(&l, 10 + i);
    }
    assert_int_equal(retired(&l), 3);
    unsigned long queries = cus_fake_calls_of("cuEventQuery");
    assert_ok(cus_graph_exec_launch(l.exec, l.s)); /* nothing ran: one query */
    assert_int_equal(cus_fake_calls_of("cuEventQuery"), queries + 1);
    assert_int_equal(retired(&l), 3);
    assert_ok(cus_stream_synchronize(l.s));
    queries = cus_fake_calls_of("cuEventQuery");
    assert_ok(cus_graph_exec_launch(l.exec, l.s)); /* all complete: all released */
    assert_int_equal(cus_fake_calls_of("cuEventQuery"), queries + 3);
    assert_int_equal(retired(&l), 0);
    assert_ok(cus_stream_synchronize(l.s));
    assert_out(&l, l.current);
    loop_close(&l);
}

/* ============================================================================
 * the exec's release
 * ========================================================================== */

static void test_release_waits_only_while_a_replay_may_run(void **state)
{
    (void)state;
    /* Never launched: no wait. */
    loop l;
    loop_open(&l);
    loop_step(&l, 1);
    assert_int_equal(release_exec(&l), 0);
    loop_close(&l);

    /* Launched, synchronized, then updated and not launched again: the
     * replaced graph's fence is complete by the release, which then waits
     * for nothing. */
    loop_open(&l);
    loop_step(&l, 1);
    launch_and_sync(&l, l.s);
    loop_step(&l, 2);
    assert_ok(cus_stream_synchronize(l.s));
    assert_int_equal(release_exec(&l), 0);
    loop_close(&l);

    /* A fence not complete: the release waits (for the context, as before). */
    loop_open(&l);
    cus_fake_set_query_mode(CUS_FAKE_QUERY_NONE);
    loop_step(&l, 1);
    assert_ok(cus_graph_exec_launch(l.exec, l.s));
    loop_step(&l, 2);
    assert_int_equal(release_exec(&l), 1);
    assert_int_equal(cus_fake_misuse_count(), 0);
    loop_close(&l);

    /* The current graph launched: the release waits. */
    loop_open(&l);
    loop_step(&l, 1);
    memset(u32s(l.out), 0, G_N * 4);
    assert_ok(cus_graph_exec_launch(l.exec, l.s));
    assert_int_equal(release_exec(&l), 1);
    assert_out(&l, 1); /* run by the release's wait */
    loop_close(&l);
}

/* ============================================================================
 * streams
 * ========================================================================== */

/* An update to the graph the exec already has retires nothing, and the
 * launches before it still count for the next one. */
static void test_update_to_the_same_graph_keeps_the_streams(void **state)
{
    (void)state;
    loop l;
    loop_open(&l);
    cus_buffer *scratch = NULL;
    cus_graph *g = new_graph(&l, 5, &scratch);
    l.exec = instantiate(g);
    l.current = 5;
    assert_ok(cus_graph_exec_launch(l.exec, l.s));
    unsigned long events = cus_fake_calls_of("cuEventCreate");
    assert_ok(cus_graph_exec_update(l.exec, g, NULL));
    assert_int_equal(cus_fake_calls_of("cuEventCreate"), events);
    cus_graph_unref(g);
    cus_buffer_unref(scratch);
    cus_fake_set_query_mode(CUS_FAKE_QUERY_NONE);
    loop_step(&l, 6);
    assert_int_equal(cus_fake_calls_of("cuEventCreate"), events + 1);
    assert_int_equal(retired(&l), 1);
    loop_close(&l);
}

/* The exec holds the streams it was launched on until the update that
 * fences them: a stream the user dropped is destroyed then. */
static void test_streams_are_held_until_the_update(void **state)
{
    (void)state;
    loop l;
    loop_open(&l);
    loop_step(&l, 1);
    cus_stream *s3 = new_stream(l.c, CU_STREAM_NON_BLOCKING);
    size_t streams = cus_fake_live_handles(CUS_FAKE_HANDLE_STREAM);
    assert_ok(cus_graph_exec_launch(l.exec, s3));
    s3 = cus_stream_unref(s3);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_STREAM), streams);
    loop_step(&l, 2); /* fences s3, then lets it go */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_STREAM), streams - 1);
    assert_true(retired(&l) <= 1);
    loop_close(&l);
}

/* Launched on more streams than the exec tracks without allocating: one
 * fence each. */
static void test_many_streams_get_a_fence_each(void **state)
{
    (void)state;
    loop l;
    loop_open(&l);
    loop_step(&l, 1);
    enum { STREAMS = 9 };
    cus_stream *ss[STREAMS];
    l.objects += STREAMS;
    for (int i = 0; i < STREAMS; i++) {
        ss[i] = new_stream(l.c, CU_STREAM_NON_BLOCKING);
        assert_ok(cus_graph_exec_launch(l.exec, ss[i]));
        assert_ok(cus_graph_exec_launch(l.exec, ss[i])); /* the same: no new entry */
    }
    cus_fake_set_query_mode(CUS_FAKE_QUERY_NONE);
    unsigned long records = cus_fake_calls_of("cuEventRecord");
    loop_step(&l, 2);
    assert_int_equal(cus_fake_calls_of("cuEventRecord"), records + STREAMS);
    assert_int_equal(retired(&l), 1);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_EVENT), STREAMS);
    for (int i = 0; i < STREAMS - 1; i++)
        assert_ok(cus_stream_synchronize(ss[i]));
    loop_step(&l, 3); /* one fence not complete: kept */
    assert_int_equal(retired(&l), 1);
    assert_ok(cus_stream_synchronize(ss[STREAMS - 1]));
    loop_step(&l, 4);
    assert_int_equal(retired(&l), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_EVENT), 0);
    for (int i = 0; i < STREAMS; i++)
        cus_stream_unref(ss[i]);
    l.objects -= STREAMS;
    loop_close(&l);
}

typedef struct per_thread_launch {
    cus_graph_exec *exec;
    cus_stream *stream;
    cus_status st;
} per_thread_launch;

static void *launch_on_thread(void *p)
{
    per_thread_launch *pl = p;
    pl->st = cus_graph_exec_launch(pl->exec, pl->stream);
    if (pl->st == CUS_SUCCESS)
        pl->st = cus_stream_synchronize(pl->stream);
    return NULL;
}

/* A wrapped stream (its owner may have destroyed it by the update) and
 * another thread's per-thread default stream (CU_STREAM_PER_THREAD names the
 * updating thread's) cannot be fenced: the update waits for the context,
 * and the replaced graph goes at once. */
static void test_streams_an_update_cannot_fence(void **state)
{
    (void)state;
    loop l;
    loop_open(&l);
    loop_step(&l, 1);
    cus_stream *wrapped = NULL;
    assert_ok(cus_stream_wrap(l.c, cus_stream_handle(l.s2), &wrapped));
    assert_ok(cus_graph_exec_launch(l.exec, wrapped));
    wrapped = cus_stream_unref(wrapped); /* not held: no reference taken */
    unsigned long syncs = cus_fake_calls_of("cuCtxSynchronize");
    unsigned long events = cus_fake_calls_of("cuEventCreate");
    loop_step(&l, 2);
    assert_int_equal(cus_fake_calls_of("cuCtxSynchronize"), syncs + 1);
    assert_int_equal(cus_fake_calls_of("cuEventCreate"), events);
    assert_int_equal(retired(&l), 0);
    assert_out(&l, 1); /* the wait ran the replay */

    /* A wait that fails fails the update, which changes nothing. */
    assert_ok(cus_stream_wrap(l.c, cus_stream_handle(l.s2), &wrapped));
    assert_ok(cus_graph_exec_launch(l.exec, wrapped));
    wrapped = cus_stream_unref(wrapped);
    cus_buffer *scratch = NULL;
    cus_graph *g = new_graph(&l, 3, &scratch);
    assert_fault_surfaces("cuCtxSynchronize", cus_graph_exec_update(l.exec, g, NULL));
    cus_graph_unref(g);
    cus_buffer_unref(scratch);
    assert_int_equal(retired(&l), 0);
    loop_step(&l, 3);

    /* The per-thread default stream, launched on from another thread. */
    cus_stream *pt = NULL;
    assert_ok(cus_stream_per_thread(l.c, &pt));
    l.objects++;
    per_thread_launch pl = {l.exec, pt, CUS_SUCCESS};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, launch_on_thread, &pl), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_ok(pl.st);
    assert_out(&l, 3);
    syncs = cus_fake_calls_of("cuCtxSynchronize");
    events = cus_fake_calls_of("cuEventCreate");
    loop_step(&l, 4);
    assert_int_equal(cus_fake_calls_of("cuCtxSynchronize"), syncs + 1);
    assert_int_equal(cus_fake_calls_of("cuEventCreate"), events);
    assert_int_equal(retired(&l), 0);
    /* ... and from this thread: fenced, no wait. */
    launch_and_sync(&l, pt);
    syncs = cus_fake_calls_of("cuCtxSynchronize");
    loop_step(&l, 5);
    assert_int_equal(cus_fake_calls_of("cuCtxSynchronize"), syncs);
    assert_int_equal(cus_fake_calls_of("cuEventCreate"), events + 1);
    pt = cus_stream_unref(pt);
    l.objects--;
    loop_close(&l);
}

/* ============================================================================
 * failures
 * ========================================================================== */

/* An update whose fence cannot be made fails with the driver's status and
 * changes nothing: the exec replays the graph it had, the graph offered is
 * not held (its buffer goes when the user drops it), no event is left. The
 * same for the update's own refusal after the fences were recorded, and for
 * the host allocations (the retired list, the fences of several streams). */
static void test_update_fails_cleanly_when_it_cannot_fence(void **state)
{
    (void)state;
    loop l;
    loop_open(&l);
    loop_step(&l, 1);
    launch_and_sync(&l, l.s);
    cus_buffer *scratch = NULL;
    cus_graph *g = new_graph(&l, 2, &scratch);
    /* The host allocation of the retired list's first entries. */
    leak_snap before = leak_snap_now();
    unsigned long events = cus_fake_calls_of("cuEventCreate");
    cus_debug_fail_host_alloc(1, false);
    assert_status(cus_graph_exec_update(l.exec, g, NULL), CUS_ERROR_OUT_OF_HOST_MEMORY);
    cus_debug_fail_host_alloc(0, false);
    assert_int_equal(cus_fake_calls_of("cuEventCreate"), events); /* before any driver call */
    assert_nothing_changed(before);
    assert_fault_surfaces("cuEventCreate", cus_graph_exec_update(l.exec, g, NULL));
    assert_fault_surfaces("cuEventRecord", cus_graph_exec_update(l.exec, g, NULL));
    assert_fault_surfaces("cuGraphExecUpdate", cus_graph_exec_update(l.exec, g, NULL));
    /* Two streams: the second record failing destroys the first fence. */
    assert_ok(cus_graph_exec_launch(l.exec, l.s2));
    before = leak_snap_now();
    assert_ok(cus_fake_fail_entry("cuEventRecord", 2, FAULT, false));
    assert_status(cus_graph_exec_update(l.exec, g, NULL), CU(FAULT));
    cus_fake_clear_faults();
    assert_nothing_changed(before);
    /* ... and the allocation of their fences (the list has room now). */
    cus_debug_fail_host_alloc(1, false);
    assert_status(cus_graph_exec_update(l.exec, g, NULL), CUS_ERROR_OUT_OF_HOST_MEMORY);
    cus_debug_fail_host_alloc(0, false);
    assert_nothing_changed(before);
    /* The exec still replays the first graph; the second was never held. */
    assert_ok(cus_stream_synchronize(l.s2));
    launch_and_sync(&l, l.s);
    size_t bytes = cus_fake_device_bytes_in_use(0);
    cus_graph_unref(g);
    cus_buffer_unref(scratch);
    assert_int_equal(cus_fake_device_bytes_in_use(0), bytes - SCRATCH);
    assert_int_equal(retired(&l), 0);
    loop_step(&l, 3);
    launch_and_sync(&l, l.s);
    assert_int_equal(env_destroyed.count, 0);
    loop_close(&l);
}

/* A fence query that fails at an update or a launch: the call succeeds, the
 * failure goes to the destroy handler naming it, and the graph is kept
 * until a later query finds the fence complete. A fence that cannot be
 * destroyed is reported, and its graph released all the same. */
static void test_a_failed_fence_query_keeps_the_graph(void **state)
{
    (void)state;
    loop l;
    loop_open(&l);
    loop_step(&l, 1);
    launch_and_sync(&l, l.s);
    loop_step(&l, 2); /* retires the first graph, fenced */
    assert_ok(cus_stream_synchronize(l.s));
    assert_int_equal(retired(&l), 1);

    assert_ok(cus_fake_fail_entry("cuEventQuery", 1, FAULT, false));
    assert_ok(cus_graph_exec_launch(l.exec, l.s));
    cus_fake_clear_faults();
    assert_int_equal(env_destroyed.count, 1);
    assert_string_equal(env_destroyed.last_function, "cus_graph_exec_launch");
    assert_string_equal(env_destroyed.last_driver_call, "cuEventQuery");
    assert_int_equal(retired(&l), 1);
    assert_ok(cus_stream_synchronize(l.s));

    cus_buffer *scratch = NULL;
    cus_graph *g = new_graph(&l, 3, &scratch);
    assert_ok(cus_fake_fail_entry("cuEventQuery", 1, FAULT, false));
    assert_ok(cus_graph_exec_update(l.exec, g, NULL));
    cus_fake_clear_faults();
    l.current = 3;
    cus_graph_unref(g);
    cus_buffer_unref(scratch);
    assert_int_equal(env_destroyed.count, 2);
    assert_string_equal(env_destroyed.last_function, "cus_graph_exec_update");
    assert_string_equal(env_destroyed.last_driver_call, "cuEventQuery");
    assert_int_equal(retired(&l), 2); /* the first still, and the second now */
    assert_ok(cus_stream_synchronize(l.s));

    /* Both found complete; the first fence's destroy fails. */
    assert_ok(cus_fake_fail_entry("cuEventDestroy", 1, FAULT, false));
    loop_step(&l, 4);
    cus_fake_clear_faults();
    assert_int_equal(env_destroyed.count, 3);
    assert_string_equal(env_destroyed.last_driver_call, "cuEventDestroy");
    assert_int_equal(retired(&l), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_EVENT), 1); /* the driver's */
    assert_int_equal(cus_fake_misuse_count(), 0);
    loop_close_leaving(&l, 1);
    assert_int_equal(env_setup_with(NULL), 0); /* the fake drops the event */
}

/* A fence query that answers a sticky error poisons the context, as any
 * call does (the launch that made it then fails fast); the exec's release
 * lets go of everything without a driver call but the graphs' own
 * cuGraphDestroy. */
static void test_a_sticky_fence_query_poisons(void **state)
{
    (void)state;
    loop l;
    loop_open(&l);
    loop_step(&l, 1);
    launch_and_sync(&l, l.s);
    loop_step(&l, 2);
    assert_ok(cus_stream_synchronize(l.s));
    assert_ok(cus_fake_fail_entry("cuEventQuery", 1, CUDA_ERROR_ILLEGAL_ADDRESS, false));
    /* the launch that queried finds its context dead */
    assert_status(cus_graph_exec_launch(l.exec, l.s), CUDA_ERROR_ILLEGAL_ADDRESS);
    cus_fake_clear_faults();
    assert_int_equal(cus_context_poisoned(l.c), CUDA_ERROR_ILLEGAL_ADDRESS);
    assert_int_equal(env_destroyed.last_status, CUDA_ERROR_ILLEGAL_ADDRESS);
    cus_buffer *scratch = NULL;
    assert_status(cus_buffer_alloc(l.c, SCRATCH, &scratch), CUDA_ERROR_ILLEGAL_ADDRESS);
    unsigned long calls = cus_fake_call_count();
    l.exec = cus_graph_exec_unref(l.exec);
    l.dst = cus_buffer_unref(l.dst);
    l.out = cus_host_buffer_unref(l.out);
    l.s2 = cus_stream_unref(l.s2);
    l.s = cus_stream_unref(l.s);
    assert_int_equal(cus_fake_call_count(), calls + 2); /* the two cuGraphDestroy */
    l.c = cus_context_unref(l.c);
    assert_int_equal(cus_debug_live_objects(), 0);
    assert_int_equal(env_setup_with(NULL), 0); /* the poisoned context's handles */
}

/* ============================================================================
 * threads
 * ========================================================================== */

typedef struct launcher {
    cus_graph_exec *exec;
    cus_stream *stream;
    atomic_bool *stop;
    cus_status st;
    unsigned long launches;
} launcher;

static void *launch_until_stopped(void *p)
{
    launcher *w = p;
    while (!atomic_load(w->stop) && w->st == CUS_SUCCESS) {
        w->st = cus_graph_exec_launch(w->exec, w->stream);
        if (w->st == CUS_SUCCESS && ++w->launches % 8 == 0)
            w->st = cus_stream_synchronize(w->stream);
    }
    return NULL;
}

/* Launches on their own streams from four threads while this one updates:
 * the exec's lock serializes them, and the loop stays flat. (RELAXED
 * captures: the other threads' synchronizes would invalidate GLOBAL ones.) */
static void test_update_loop_while_other_threads_launch(void **state)
{
    (void)state;
    loop l;
    loop_open(&l);
    l.mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    loop_step(&l, 1);
    enum { THREADS = 4 };
    atomic_bool stop = false;
    launcher ws[THREADS];
    pthread_t ts[THREADS];
    l.objects += THREADS;
    for (int i = 0; i < THREADS; i++) {
        ws[i] = (launcher){l.exec, new_stream(l.c, CU_STREAM_NON_BLOCKING), &stop, CUS_SUCCESS, 0};
        assert_int_equal(pthread_create(&ts[i], NULL, launch_until_stopped, &ws[i]), 0);
    }
    for (uint32_t i = 0; i < 200; i++) {
        loop_step(&l, 100 + i);
        if (i % 10 == 0)
            assert_ok(cus_context_synchronize(l.c));
    }
    atomic_store(&stop, true);
    for (int i = 0; i < THREADS; i++) {
        assert_int_equal(pthread_join(ts[i], NULL), 0);
        assert_ok(ws[i].st);
        assert_ok(cus_stream_synchronize(ws[i].stream));
    }
    loop_step(&l, 7);
    assert_true(retired(&l) <= 1); /* the fences recorded now: not queried yet */
    for (int i = 0; i < THREADS; i++)
        cus_stream_unref(ws[i].stream);
    l.objects -= THREADS;
    assert_int_equal(env_destroyed.count, 0);
    loop_close(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_update_loop_without_launches),
        ENV_TEST(test_update_loop_with_launches_and_syncs),
        ENV_TEST(test_update_loop_with_launches_without_syncs),
        ENV_TEST(test_update_loop_mixed),
        ENV_TEST(test_update_loop_keeps_what_queued_replays_use),
        ENV_TEST(test_launch_releases_completed_graphs),
        ENV_TEST(test_release_waits_only_while_a_replay_may_run),
        ENV_TEST(test_update_to_the_same_graph_keeps_the_streams),
        ENV_TEST(test_streams_are_held_until_the_update),
        ENV_TEST(test_many_streams_get_a_fence_each),
        ENV_TEST(test_streams_an_update_cannot_fence),
        ENV_TEST(test_update_fails_cleanly_when_it_cannot_fence),
        ENV_TEST(test_a_failed_fence_query_keeps_the_graph),
        ENV_TEST(test_a_sticky_fence_query_poisons),
        ENV_TEST(test_update_loop_while_other_threads_launch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
