/* The graph tests, part exec: graphs and executable graphs: instantiate,
 * launch, upload, update. Their fixtures, and what the graph tests are
 * about: graph_fixtures.h. */
#include "graph_fixtures.h"

/* ============================================================================
 * graphs: node count, kept objects, ref/unref
 * ========================================================================== */

static void test_graph_accessors_and_refs(void **state)
{
    (void)state;
    assert_null(cus_graph_ref(NULL));
    assert_null(cus_graph_unref(NULL));
    assert_null(cus_graph_exec_ref(NULL));
    assert_null(cus_graph_exec_unref(NULL));
    assert_null(cus_graph_handle(NULL));
    assert_null(cus_graph_context(NULL));
    assert_null(cus_graph_exec_handle(NULL));
    assert_int_equal(cus_graph_kept_objects(NULL), 0);
    size_t n = 5;
    assert_status(cus_graph_node_count(NULL, &n), CUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(n, 5);
    cus_graph_exec *e = SENTINEL_PTR(n);
    assert_status(cus_graph_instantiate(NULL, 0, &e), CUS_ERROR_INVALID_ARGUMENT);
    assert_ptr_equal(e, SENTINEL_PTR(n));
    assert_status(cus_graph_exec_launch(NULL, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_exec_upload(NULL, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_exec_update(NULL, NULL, NULL), CUS_ERROR_INVALID_ARGUMENT);

    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_host_buffer) h = new_pinned(c, G_N * 4);
    cus_autoptr(cus_buffer) buf = new_buffer(c, G_N * 4);
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(capture_copies(s, CU_STREAM_CAPTURE_MODE_GLOBAL, buf, u32s(h), u32s(h), 1, &g));
    assert_status(cus_graph_node_count(g, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_instantiate(g, 0, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_exec_update(NULL, g, NULL), CUS_ERROR_INVALID_ARGUMENT);
    size_t objects = cus_debug_live_objects();
    assert_ptr_equal(cus_graph_ref(g), g);
    assert_null(cus_graph_unref(g));
    assert_int_equal(cus_debug_live_objects(), objects);
    cus_autoptr(cus_graph_exec) ex = instantiate(g);
    assert_status(cus_graph_exec_update(ex, NULL, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_ptr_equal(cus_graph_exec_ref(ex), ex);
    assert_null(cus_graph_exec_unref(ex));
    assert_ok(cus_graph_exec_launch(ex, s));
    assert_ok(cus_stream_synchronize(s));
}

/* With no context current: the driver needs one for
 * cuGraphInstantiateWithFlags (the H200 answers CUDA_ERROR_INVALID_CONTEXT,
 * test/rules/expected.txt), so cuscope makes the graph's context current for
 * the call. */
static void test_instantiate_makes_the_graphs_context_current(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_host_buffer) h = new_pinned(c, G_N * 4);
    cus_autoptr(cus_buffer) buf = new_buffer(c, G_N * 4);
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(capture_copies(s, CU_STREAM_CAPTURE_MODE_GLOBAL, buf, u32s(h), u32s(h), 1, &g));
    assert_null(cus_context_current());
    stack_snap before = snap();
    unsigned long calls = cus_fake_call_count();
    cus_autoptr(cus_graph_exec) ex = instantiate(g);
    assert_calls_since(calls, "cuCtxPushCurrent", "cuGraphInstantiateWithFlags",
                       "cuCtxPopCurrent");
    assert_stack_unchanged(before);
    /* what the switch is for: the driver refuses it with no context */
    PFN_cuGraphInstantiateWithFlags_v11040 raw_instantiate;
    RAW(raw_instantiate, "cuGraphInstantiateWithFlags", 11040);
    CUgraphExec raw = NULL;
    assert_cu(raw_instantiate(&raw, cus_graph_handle(g), 0), CUDA_ERROR_INVALID_CONTEXT);
    assert_null(raw);
    assert_ok(cus_graph_exec_launch(ex, s));
    assert_ok(cus_stream_synchronize(s));
}

static void test_graph_node_count_faults(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_host_buffer) h = new_pinned(c, G_N * 4);
    cus_autoptr(cus_buffer) buf = new_buffer(c, G_N * 4);
    cus_autoptr(cus_graph) g = NULL;
    {
        cus_capture_scope(cap, s, CU_STREAM_CAPTURE_MODE_GLOBAL);
        assert_ok(cap.status);
        for (int i = 0; i < 7; i++)
            assert_ok(cus_copy_to_device_async(buf, (size_t)i * 4, u32s(h) + i, 4, s));
        assert_ok(cus_capture_end(&cap, &g));
    }
    size_t n = 0;
    assert_ok(cus_graph_node_count(g, &n));
    assert_int_equal(n, 7);
    assert_int_equal(cus_graph_kept_objects(g), 1);
    n = 42;
    assert_fault_surfaces("cuGraphGetNodes", cus_graph_node_count(g, &n));
    assert_int_equal(n, 42);
}

/* What a capture keeps: each buffer once, the events recorded or waited
 * for, each host function's record. */
static void test_kept_objects_counts(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_host_buffer) h = new_pinned(c, G_N * 4);
    cus_autoptr(cus_buffer) a = new_buffer(c, G_N * 4);
    cus_autoptr(cus_buffer) b = new_buffer(c, G_N * 4);
    cus_autoptr(cus_event) e = new_event(c, CU_EVENT_DISABLE_TIMING);
    static atomic_int counter;
    atomic_store(&counter, 0);
    cus_autoptr(cus_graph) g = NULL;
    {
        cus_capture_scope(cap, s, CU_STREAM_CAPTURE_MODE_GLOBAL);
        assert_ok(cap.status);
        assert_ok(cus_copy_to_device_async(a, 0, u32s(h), G_N * 4, s));
        assert_ok(cus_copy_device_async(b, 0, a, 0, G_N * 4, s));
        assert_ok(cus_buffer_fill_u8_async(a, 0, 1, 8, s));
        assert_ok(cus_buffer_fill_u16_async(b, 0, 2, 4, s));
        assert_ok(cus_event_record(e, s));
        assert_ok(cus_stream_wait_event(s, e));
        assert_ok(cus_stream_launch_host_fn(s, count_up, &counter));
        assert_ok(cus_stream_launch_host_fn(s, count_up, &counter));
        assert_ok(cus_copy_to_host_async(u32s(h), b, 0, G_N * 4, s));
        assert_ok(cus_capture_end(&cap, &g));
    }
    /* a, b, e and two host function records */
    assert_int_equal(cus_graph_kept_objects(g), 5);
    cus_autoptr(cus_graph_exec) ex = instantiate(g);
    for (int r = 1; r <= 3; r++) {
        assert_ok(cus_graph_exec_launch(ex, s));
        assert_ok(cus_stream_synchronize(s));
        assert_int_equal(atomic_load(&counter), 2 * r);
    }
    /* Outside any capture nothing is kept: the count of a fresh capture of
     * uncaptured work is 0. */
    assert_ok(cus_copy_to_device_async(a, 0, u32s(h), 4, s));
    assert_ok(cus_stream_synchronize(s));
    cus_autoptr(cus_graph) empty = NULL;
    {
        cus_capture_scope(cap, s, CU_STREAM_CAPTURE_MODE_GLOBAL);
        assert_ok(cap.status);
        assert_ok(cus_capture_end(&cap, &empty));
    }
    assert_int_equal(cus_graph_kept_objects(empty), 0);
    assert_ok(cus_stream_synchronize(s));
}

/* A graph's last reference dropped: cuGraphDestroy failing reaches the
 * destroy handler; an exec's, cuGraphExecDestroy. */
static void test_graph_unref_faults(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_host_buffer) h = new_pinned(c, G_N * 4);
    cus_autoptr(cus_buffer) buf = new_buffer(c, G_N * 4);
    cus_graph *g = NULL;
    assert_ok(capture_copies(s, CU_STREAM_CAPTURE_MODE_GLOBAL, buf, u32s(h), u32s(h), 1, &g));
    cus_graph_exec *e = instantiate(g);
    size_t objects = cus_debug_live_objects();
    cus_clear_last_error();
    assert_ok(cus_fake_fail_entry("cuGraphExecDestroy", 1, FAULT, false));
    e = cus_graph_exec_unref(e);
    cus_fake_clear_faults();
    assert_int_equal(env_destroyed.count, 1);
    assert_int_equal(env_destroyed.last_status, CU(FAULT));
    assert_non_null(strstr(env_destroyed.last_message, "executable graph"));
    assert_int_equal(cus_debug_live_objects(), objects - 1);
    assert_ok(cus_fake_fail_entry("cuGraphDestroy", 1, FAULT, false));
    g = cus_graph_unref(g);
    cus_fake_clear_faults();
    assert_int_equal(env_destroyed.count, 2);
    assert_non_null(strstr(env_destroyed.last_message, "graph"));
    assert_int_equal(cus_last_status(), CUS_SUCCESS); /* destructors leave it alone */
    assert_int_equal(cus_debug_live_objects(), objects - 2);
    /* The handles the failed destroys left in the fake go with a reinstall. */
    buf = cus_buffer_unref(buf);
    h = cus_host_buffer_unref(h);
    s = cus_stream_unref(s);
    c = cus_context_unref(c);
    assert_ok(cus_fake_install(NULL));
}

/* ============================================================================
 * executable graphs: instantiate, launch, upload, update
 * ========================================================================== */

static void test_instantiate_faults(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_host_buffer) hin = new_pinned(c, G_N * 4);
    cus_autoptr(cus_host_buffer) hout = new_pinned(c, G_N * 4);
    cus_autoptr(cus_buffer) buf = new_buffer(c, G_N * 4);
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(capture_copies(s, CU_STREAM_CAPTURE_MODE_GLOBAL, buf, u32s(hin), u32s(hout), 9, &g));
    cus_graph_exec *e = SENTINEL_PTR(g);
    assert_fault_surfaces("cuGraphInstantiateWithFlags", cus_graph_instantiate(g, 0, &e));
    assert_ptr_equal(e, SENTINEL_PTR(g));
    assert_fault_surfaces("cuCtxPushCurrent", cus_graph_instantiate(g, 0, &e));
    assert_ptr_equal(e, SENTINEL_PTR(g));
    /* Two failed pops: the exec was made, so it is returned (no rollback),
     * replays, and is destroyed at its last release; the pop is reported. */
    size_t objects = cus_debug_live_objects();
    unsigned long destroys = cus_fake_calls_of("cuGraphExecDestroy");
    assert_double_pop_reported("cus_graph_instantiate", cus_graph_instantiate(g, 0, &e));
    assert_ptr_not_equal(e, SENTINEL_PTR(g));
    assert_non_null(e);
    assert_int_equal(cus_fake_calls_of("cuGraphExecDestroy"), destroys);
    assert_int_equal(cus_debug_live_objects(), objects + 1);
    seed(u32s(hin), 3);
    assert_ok(cus_graph_exec_launch(e, s));
    assert_ok(cus_stream_synchronize(s));
    assert_copies_result(u32s(hin), u32s(hout), 9);
    e = cus_graph_exec_unref(e);
    assert_int_equal(cus_fake_calls_of("cuGraphExecDestroy"), destroys + 1);
    assert_int_equal(cus_debug_live_objects(), objects);
    assert_int_equal(env_destroyed.count, 1); /* the pop's report only */
    /* Two execs of one graph replay independently. */
    cus_autoptr(cus_graph_exec) e1 = instantiate(g);
    cus_autoptr(cus_graph_exec) e2 = instantiate(g);
    assert_ptr_not_equal(cus_graph_exec_handle(e1), cus_graph_exec_handle(e2));
    seed(u32s(hin), 5);
    assert_ok(cus_graph_exec_launch(e1, s));
    assert_ok(cus_stream_synchronize(s));
    assert_copies_result(u32s(hin), u32s(hout), 9);
    seed(u32s(hin), 500);
    assert_ok(cus_graph_exec_launch(e2, s));
    assert_ok(cus_stream_synchronize(s));
    assert_copies_result(u32s(hin), u32s(hout), 9);
}

static void test_exec_launch_and_upload(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_context) other = new_ctx();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_stream) foreign = new_stream(other, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_host_buffer) hin = new_pinned(c, G_N * 4);
    cus_autoptr(cus_host_buffer) hout = new_pinned(c, G_N * 4);
    cus_autoptr(cus_buffer) buf = new_buffer(c, G_N * 4);
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(capture_copies(s, CU_STREAM_CAPTURE_MODE_GLOBAL, buf, u32s(hin), u32s(hout), 3, &g));
    cus_autoptr(cus_graph_exec) e = instantiate(g);
    uint32_t *in = u32s(hin), *out = u32s(hout);

    /* Upload, then replays: on the stream, and on the legacy default stream
     * (NULL). */
    assert_ok(cus_graph_exec_upload(e, s));
    assert_ok(cus_graph_exec_upload(e, NULL));
    for (uint32_t r = 0; r < 5; r++) {
        seed(in, 1000u * r);
        assert_ok(cus_graph_exec_launch(e, r % 2 ? NULL : s));
        if (r % 2)
            assert_ok(cus_context_synchronize(c));
        else
            assert_ok(cus_stream_synchronize(s));
        assert_copies_result(in, out, 3);
    }
    /* A stream of another context: refused before the driver. */
    unsigned long launches = cus_fake_calls_of("cuGraphLaunch");
    unsigned long uploads = cus_fake_calls_of("cuGraphUpload");
    assert_status(cus_graph_exec_launch(e, foreign), CUS_ERROR_CONTEXT_MISMATCH);
    assert_status(cus_graph_exec_upload(e, foreign), CUS_ERROR_CONTEXT_MISMATCH);
    assert_int_equal(cus_fake_calls_of("cuGraphLaunch"), launches);
    assert_int_equal(cus_fake_calls_of("cuGraphUpload"), uploads);
    /* Faults. */
    assert_fault_surfaces("cuGraphLaunch", cus_graph_exec_launch(e, s));
    assert_fault_surfaces("cuCtxPushCurrent", cus_graph_exec_launch(e, s));
    assert_fault_surfaces("cuGraphUpload", cus_graph_exec_upload(e, s));
    assert_fault_surfaces("cuCtxPushCurrent", cus_graph_exec_upload(e, s));
    uploads = cus_fake_calls_of("cuGraphUpload");
    assert_double_pop_reported("cus_graph_exec_upload", cus_graph_exec_upload(e, s));
    assert_int_equal(cus_fake_calls_of("cuGraphUpload"), uploads + 1);
    seed(in, 4242);
    assert_double_pop_reported("cus_graph_exec_launch", cus_graph_exec_launch(e, s));
    assert_ok(cus_stream_synchronize(s));
    assert_copies_result(in, out, 3); /* launched: its work ran */
    bool cap = true;
    assert_double_pop_reported("cus_stream_is_capturing", cus_stream_is_capturing(s, &cap));
    assert_false(cap); /* the out parameter is set: not capturing */
    /* With the context current, no push. */
    assert_ok(cus_context_push(c));
    unsigned long pushes = cus_fake_calls_of("cuCtxPushCurrent");
    seed(in, 77);
    assert_ok(cus_graph_exec_launch(e, s));
    assert_int_equal(cus_fake_calls_of("cuCtxPushCurrent"), pushes);
    assert_ok(cus_context_pop(NULL));
    assert_ok(cus_stream_synchronize(s));
    assert_copies_result(in, out, 3);
}

/* Update: a graph of the same topology takes over the exec (and its objects
 * are kept instead of the old graph's); a changed topology is refused with
 * CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE and the exec still replays what it
 * had. */
static void test_exec_update(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_context) other = new_ctx();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_stream) so = new_stream(other, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_host_buffer) in1 = new_pinned(c, G_N * 4);
    cus_autoptr(cus_host_buffer) out1 = new_pinned(c, G_N * 4);
    cus_autoptr(cus_host_buffer) in2 = new_pinned(c, G_N * 4);
    cus_autoptr(cus_host_buffer) out2 = new_pinned(c, G_N * 4);
    cus_autoptr(cus_host_buffer) ho = new_pinned(other, G_N * 4);
    cus_buffer *b1 = new_buffer(c, G_N * 4);
    cus_buffer *b2 = new_buffer(c, G_N * 4);
    cus_autoptr(cus_buffer) bo = new_buffer(other, G_N * 4);
    size_t dev_blocks = cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY);

    cus_graph *g1 = NULL, *g2 = NULL;
    assert_ok(capture_copies(s, CU_STREAM_CAPTURE_MODE_GLOBAL, b1, u32s(in1), u32s(out1), 11, &g1));
    assert_ok(capture_copies(s, CU_STREAM_CAPTURE_MODE_GLOBAL, b2, u32s(in2), u32s(out2), 22, &g2));
    cus_autoptr(cus_graph_exec) e = instantiate(g1);
    seed(u32s(in1), 1);
    assert_ok(cus_graph_exec_launch(e, s));
    assert_ok(cus_stream_synchronize(s));
    assert_copies_result(u32s(in1), u32s(out1), 11);

    /* A changed topology: two nodes instead of three. */
    cus_autoptr(cus_graph) g3 = NULL;
    {
        cus_capture_scope(cap, s, CU_STREAM_CAPTURE_MODE_GLOBAL);
        assert_ok(cap.status);
        assert_ok(cus_copy_to_device_async(b2, 0, u32s(in2), G_N * 4, s));
        assert_ok(cus_copy_to_host_async(u32s(out2), b2, 0, G_N * 4, s));
        assert_ok(cus_capture_end(&cap, &g3));
    }
    CUgraphExecUpdateResult why = CU_GRAPH_EXEC_UPDATE_SUCCESS;
    assert_status(cus_graph_exec_update(e, g3, &why), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
    assert_int_not_equal(why, CU_GRAPH_EXEC_UPDATE_SUCCESS);
    assert_non_null(strstr(cus_last_error_message(), "instantiate"));
    assert_status(cus_graph_exec_update(e, g3, NULL), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
    seed(u32s(in1), 2);
    memset(u32s(out2), 0, G_N * 4);
    assert_ok(cus_graph_exec_launch(e, s));
    assert_ok(cus_stream_synchronize(s));
    assert_copies_result(u32s(in1), u32s(out1), 11); /* still g1's work */
    for (int i = 0; i < G_N; i++)
        assert_int_equal(u32s(out2)[i], 0);

    /* A graph of another context: refused before the driver. */
    cus_autoptr(cus_graph) go = NULL;
    assert_ok(capture_copies(so, CU_STREAM_CAPTURE_MODE_GLOBAL, bo, u32s(ho), u32s(ho), 1, &go));
    unsigned long updates = cus_fake_calls_of("cuGraphExecUpdate");
    assert_status(cus_graph_exec_update(e, go, NULL), CUS_ERROR_CONTEXT_MISMATCH);
    assert_int_equal(cus_fake_calls_of("cuGraphExecUpdate"), updates);

    /* Faults leave the exec as it was. */
    assert_fault_surfaces("cuGraphExecUpdate", cus_graph_exec_update(e, g2, NULL));
    assert_fault_surfaces("cuCtxPushCurrent", cus_graph_exec_update(e, g2, NULL));
    /* An update done, whose stack restoring fails: it succeeds, the pop is
     * reported, and the exec holds (and replays) the graph it was updated
     * to. Updating it back to g1 and on to g2 again leaves it where the rest
     * expects it. */
    assert_double_pop_reported("cus_graph_exec_update", cus_graph_exec_update(e, g2, NULL));
    seed(u32s(in2), 7);
    assert_ok(cus_graph_exec_launch(e, s));
    assert_ok(cus_stream_synchronize(s));
    assert_copies_result(u32s(in2), u32s(out2), 22);
    assert_ok(cus_graph_exec_update(e, g1, NULL));

    /* The same topology: the exec replays g2's work from now on, and holds
     * g2 instead of g1. */
    why = CU_GRAPH_EXEC_UPDATE_ERROR;
    assert_ok(cus_graph_exec_update(e, g2, &why));
    assert_int_equal(why, CU_GRAPH_EXEC_UPDATE_SUCCESS);
    /* The user drops g1, g2 and their buffers: g2 and b2 stay with the exec.
     * g1 and b1 go at once: the exec was not launched since g1 became
     * current, so no replay can use them (test_graph_update_loop.c has the
     * replaced graphs that replays may still use). */
    g1 = cus_graph_unref(g1);
    b1 = cus_buffer_unref(b1);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY), dev_blocks - 1);
    dev_blocks--;
    g2 = cus_graph_unref(g2);
    b2 = cus_buffer_unref(b2);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY), dev_blocks);
    for (uint32_t r = 0; r < 3; r++) {
        seed(u32s(in2), 300 + r);
        memset(u32s(out1), 0, G_N * 4);
        assert_ok(cus_graph_exec_launch(e, s));
        assert_ok(cus_stream_synchronize(s));
        assert_copies_result(u32s(in2), u32s(out2), 22);
        for (int i = 0; i < G_N; i++)
            assert_int_equal(u32s(out1)[i], 0);
    }
    if (cus_fake_misuse_count())
        fail_msg("fake misuse: %s", cus_fake_last_misuse());
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_graph_accessors_and_refs),
        ENV_TEST(test_instantiate_makes_the_graphs_context_current),
        ENV_TEST(test_graph_node_count_faults),
        ENV_TEST(test_kept_objects_counts),
        ENV_TEST(test_graph_unref_faults),
        ENV_TEST(test_instantiate_faults),
        ENV_TEST(test_exec_launch_and_upload),
        ENV_TEST(test_exec_update),
        /* regressions of bugs these tests found in lib/graph.c */
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
