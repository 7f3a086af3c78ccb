/* The launch tests, part diagnose: a configuration the driver refuses gets a
 * message that names the launch and each limit it broke (launch_diagnose.c),
 * on every launch path, read only after the refusal; and the launch
 * attributes of cus_launch_ex (launch_attr.c): each reaches the driver as
 * given, each bad value is refused before the driver with the field named,
 * and what they use is kept alive by a capture. */
#include "launch_fixtures.h"

#include <cuscope/event.h>
#include <cuscope/graph.h>
#include <cuscope/library.h>

/* The diagnosis's own reads. */
static unsigned long diagnosis_reads(void)
{
    return cus_fake_calls_of("cuDeviceGetAttribute") + cus_fake_calls_of("cuFuncGetAttribute");
}

/* A launch refused by the driver with want, whose message has each text. */
#define assert_refused_by_driver(expr, want, ...)                              \
    do {                                                                       \
        unsigned long launches_ = cus_fake_launch_count();                     \
        cus_status got_ = (expr);                                              \
        if (got_ != (cus_status)(want))                                        \
            fail_msg("%s -> %s, expected %s (%s)", #expr, cus_status_name(got_), \
                     cus_status_name((cus_status)(want)), cus_last_error_message()); \
        assert_int_equal(cus_last_status(), (cus_status)(want));               \
        const char *texts_[] = {__VA_ARGS__};                                  \
        for (size_t i_ = 0; i_ < sizeof texts_ / sizeof texts_[0]; i_++)       \
            assert_contains(cus_last_error_message(), texts_[i_]);             \
        assert_int_equal(cus_fake_launch_count(), launches_);                  \
    } while (0)

static void test_grid_y_is_named(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    fixture fx = open_fixture(c);
    const char *want = "noargs<<<(1,70000,1), (256,1,1), 0 B>>>: grid.y 70000 exceeds the "
                       "device's 65535 (CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)";
    /* the macro's fast path (c current), twice (the second from a checked site) */
    assert_ok(cus_context_push(c));
    for (int i = 0; i < 2; i++) {
        assert_refused_by_driver(cus_launch(fx.noargs, CUS_DIM3(1, 70000, 1), 256, 0, NULL),
                                 CUDA_ERROR_INVALID_VALUE, want, "cuLaunchKernel failed",
                                 "context 0x");
        assert_string_equal(cus_last_error()->function, "cus_launch");
        assert_string_equal(cus_last_error()->driver_call, "cuLaunchKernel");
    }
    /* the explicit form (every check in full) */
    assert_refused_by_driver(cus_function_launch(fx.noargs, CUS_DIM3(1, 70000, 1),
                                                 CUS_DIM3(256, 1, 1), 0, NULL, 0, NULL, NULL),
                             CUDA_ERROR_INVALID_VALUE, want);
    assert_string_equal(cus_last_error()->function, "cus_function_launch");
    assert_ok(cus_context_pop(NULL));
    /* the switched path: c not current */
    assert_refused_by_driver(cus_launch(fx.noargs, CUS_DIM3(1, 70000, 1), 256, 0, NULL),
                             CUDA_ERROR_INVALID_VALUE, want);
    assert_int_equal(cus_fake_thread_stack_depth(), 0); /* restored */
    /* the extended launch */
    cus_launch_config cfg = {.grid = {1, 70000, 1}, .block = {256, 1, 1}};
    assert_refused_by_driver(cus_launch_ex(fx.noargs, &cfg), CUDA_ERROR_INVALID_VALUE, want,
                             "cuLaunchKernelEx failed");
    assert_string_equal(cus_last_error()->driver_call, "cuLaunchKernelEx");
    assert_int_equal(cus_context_poisoned(c), CUS_SUCCESS);
    close_fixture(&fx);
    c = cus_context_unref(c);
}

static void test_blocks_threads_and_every_limit(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    fixture fx = open_fixture(c);
    assert_refused_by_driver(cus_launch(fx.noargs, 1, CUS_DIM3(2048, 1, 1), 0, NULL),
                             CUDA_ERROR_INVALID_VALUE, "noargs<<<(1,1,1), (2048,1,1), 0 B>>>",
                             "block.x 2048 exceeds the device's 1024 "
                             "(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)",
                             "2048 threads per block exceed the device's 1024 "
                             "(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)");
    /* each dimension within its own limit, the product not */
    assert_refused_by_driver(cus_launch(fx.noargs, 1, CUS_DIM3(64, 32, 1), 0, NULL),
                             CUDA_ERROR_INVALID_VALUE, "2048 threads per block exceed the device's");
    assert_refused_by_driver(cus_launch(fx.noargs, 1, CUS_DIM3(1, 1, 65), 0, NULL),
                             CUDA_ERROR_INVALID_VALUE,
                             "block.z 65 exceeds the device's 64 (CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)");
    assert_refused_by_driver(cus_launch(fx.noargs, CUS_DIM3(1, 1, 0), 1, 0, NULL),
                             CUDA_ERROR_INVALID_VALUE, "grid.z is 0 (each dimension is at least 1)");
    /* the function's own limit (.maxntid 128), below the device's */
    assert_refused_by_driver(cus_launch(fx.bounded, 1, 256, 0, NULL, (CUdeviceptr)0),
                             CUDA_ERROR_INVALID_VALUE,
                             "256 threads per block exceed the function's 128 "
                             "(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)");
    /* several at once: each named */
    assert_refused_by_driver(cus_launch(fx.noargs, CUS_DIM3(1, 70000, 70000), 2048, 0, NULL),
                             CUDA_ERROR_INVALID_VALUE, "grid.y 70000 exceeds", "grid.z 70000 exceeds",
                             "block.x 2048 exceeds", "2048 threads per block");
    close_fixture(&fx);
    c = cus_context_unref(c);
}

static void test_shared_memory_is_named(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    fixture fx = open_fixture(c);
    /* 200 KiB: within the device's opt-in, above the function's default */
    assert_refused_by_driver(cus_launch(fx.noargs, 1, 32, 200 * 1024, NULL),
                             CUDA_ERROR_INVALID_VALUE, "noargs<<<(1,1,1), (32,1,1), 204800 B>>>",
                             "204800 B of dynamic shared memory exceed the function's 49152 B "
                             "(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES",
                             "raises it up to 232448 B");
    assert_ok(cus_function_set_max_dynamic_shared(fx.noargs, 200 * 1024));
    assert_ok(cus_launch(fx.noargs, 1, 32, 200 * 1024, NULL));
    /* above the device's opt-in, with the function's static 1 KiB */
    assert_refused_by_driver(cus_launch(fx.bounded, 1, 32, 232 * 1024, NULL, (CUdeviceptr)0),
                             CUDA_ERROR_INVALID_VALUE,
                             "1024 B of static and 237568 B of dynamic shared memory exceed the "
                             "device's 232448 B per block "
                             "(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)");
    close_fixture(&fx);
    c = cus_context_unref(c);
}

static void test_registers_are_named(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    fixture fx = open_fixture(c);
    /* 32 registers (the fake's) x 1024 threads = 32768 */
    assert_ok(cus_fake_set_attribute(0, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, 16384));
    assert_refused_by_driver(cus_launch(fx.noargs, 1, 1024, 0, NULL),
                             CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
                             "32 registers per thread x 1024 threads need 32768 registers, above "
                             "the device's 16384 per block "
                             "(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK)");
    assert_ok(cus_launch(fx.noargs, 1, 512, 0, NULL));
    close_fixture(&fx);
    c = cus_context_unref(c);
}

static void test_clusters_are_named(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    fixture fx = open_fixture(c);
    cus_launch_config cfg = {.grid = {4, 1, 1}, .block = {32, 1, 1}, .cluster = {3, 1, 1}};
    assert_refused_by_driver(cus_launch_ex(fx.noargs, &cfg), CUDA_ERROR_INVALID_CLUSTER_SIZE,
                             "noargs<<<(4,1,1), (32,1,1), 0 B>>>",
                             "cluster.x 3 does not divide grid.x 4");
    cfg.grid = CUS_DIM3(16, 1, 1);
    cfg.cluster = CUS_DIM3(16, 1, 1);
    assert_refused_by_driver(cus_launch_ex(fx.noargs, &cfg), CUDA_ERROR_INVALID_CLUSTER_SIZE,
                             "a cluster of 16 blocks exceeds the portable 8");
    close_fixture(&fx);
    c = cus_context_unref(c);
}

/* A success reads no limit; the diagnosis's reads failing (plain or sticky)
 * leave their limits out, keep the status, and poison nothing. */
static void test_diagnosis_costs_nothing_and_changes_nothing(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    fixture fx = open_fixture(c);
    unsigned long reads = diagnosis_reads();
    cus_launch_config cfg = {.grid = {1, 1, 1}, .block = {32, 1, 1}};
    for (int i = 0; i < 3; i++) {
        assert_ok(cus_launch(fx.noargs, 1, 32, 0, NULL));
        assert_ok(cus_launch_ex(fx.noargs, &cfg));
        assert_ok(cus_function_launch(fx.noargs, CUS_DIM3(1, 1, 1), CUS_DIM3(1, 1, 1), 0, NULL, 0,
                                      NULL, NULL));
    }
    assert_int_equal(diagnosis_reads(), reads);

    CUresult faults[] = {FAULT, CUDA_ERROR_HARDWARE_STACK_ERROR};
    for (int i = 0; i < 2; i++) {
        assert_ok(cus_fake_fail_entry("cuDeviceGetAttribute", 1, faults[i], true));
        assert_ok(cus_fake_fail_entry("cuFuncGetAttribute", 1, faults[i], true));
        assert_refused_by_driver(cus_launch(fx.noargs, CUS_DIM3(1, 70000, 1), 256, 0, NULL),
                                 CUDA_ERROR_INVALID_VALUE, "cus_launch: cuLaunchKernel failed");
        assert_string_equal(cus_last_error()->driver_call, "cuLaunchKernel");
        assert_null(strstr(cus_last_error_message(), "exceeds"));
        /* a dimension of 0 needs no read: still named */
        assert_refused_by_driver(cus_launch(fx.noargs, 0, 32, 0, NULL), CUDA_ERROR_INVALID_VALUE,
                                 "grid.x is 0");
        cus_fake_clear_faults();
        assert_int_equal(cus_context_poisoned(c), CUS_SUCCESS);
    }
    /* a refusal the diagnosis does not explain keeps the driver's message */
    assert_ok(cus_fake_fail_entry("cuLaunchKernel", 1, CUDA_ERROR_INVALID_VALUE, false));
    assert_refused_by_driver(cus_launch(fx.noargs, 1, 32, 0, NULL), CUDA_ERROR_INVALID_VALUE,
                             "cus_launch: cuLaunchKernel failed with CUDA_ERROR_INVALID_VALUE");
    assert_null(strstr(cus_last_error_message(), "<<<"));
    cus_fake_clear_faults();
    assert_ok(cus_launch(fx.noargs, 1, 32, 0, NULL));
    close_fixture(&fx);
    c = cus_context_unref(c);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
}

/* --- launch attributes ------------------------------------------------------------------- */

static void test_attributes_reach_the_driver(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    fixture fx = open_fixture(c);
    cus_stream *s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_event *ev = new_event(c, CU_EVENT_DISABLE_TIMING);
    cus_buffer *buf = NULL;
    assert_ok(cus_buffer_alloc(c, 4096, &buf));

    /* zeroed: no attribute */
    cus_launch_config cfg = {.grid = {2, 1, 1}, .block = {32, 1, 1}, .stream = s};
    assert_ok(cus_launch_ex(fx.noargs, &cfg));
    cus_fake_launch rec = last_launch();
    cus_fake_launch_attributes none;
    memset(&none, 0, sizeof none);
    assert_memory_equal(&rec.attributes, &none, sizeof none);
    assert_true(rec.extended);

    cfg.cluster = CUS_DIM3(1, 1, 1);
    cfg.programmatic_serialization = true;
    cfg.programmatic_event = ev;
    cfg.programmatic_event_at_block_start = true;
    cfg.set_priority = true;
    cfg.priority = -3;
    cfg.cluster_policy = CU_CLUSTER_SCHEDULING_POLICY_SPREAD;
#if CUDA_VERSION >= 12080
    cfg.preferred_cluster = CUS_DIM3(2, 1, 1);
#endif
    cfg.access_policy = (cus_launch_access_policy){
        .buffer = buf, .offset = 1024, .bytes = 2048, .hit_ratio = 0.6f,
        .hit_prop = CU_ACCESS_PROPERTY_PERSISTING, .miss_prop = CU_ACCESS_PROPERTY_STREAMING};
    cfg.set_mem_sync_domain = true;
    cfg.mem_sync_domain = CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE;
    cfg.set_mem_sync_domain_map = true;
    cfg.mem_sync_domain_map = (CUlaunchMemSyncDomainMap){.default_ = 0, .remote = 3};
    assert_ok(cus_launch_ex(fx.noargs, &cfg));
    rec = last_launch();
    const cus_fake_launch_attributes *a = &rec.attributes;
    assert_true(a->programmatic_serialization);
    assert_ptr_equal(a->programmatic_event, cus_event_handle(ev));
    assert_int_equal(a->programmatic_event_flags, 0);
    assert_true(a->programmatic_event_at_block_start);
    assert_true(a->has_priority);
    assert_int_equal(a->priority, -3);
    assert_int_equal(a->cluster_policy, CU_CLUSTER_SCHEDULING_POLICY_SPREAD);
#if CUDA_VERSION >= 12080
    assert_dims(a->preferred_cluster, 2, 1, 1);
#endif
    assert_true(a->has_access_policy);
    assert_ptr_equal(a->access_policy.base_ptr, (void *)(uintptr_t)(cus_buffer_ptr(buf) + 1024));
    assert_int_equal(a->access_policy.num_bytes, 2048);
    assert_true(a->access_policy.hitRatio == 0.6f);
    assert_int_equal(a->access_policy.hitProp, CU_ACCESS_PROPERTY_PERSISTING);
    assert_int_equal(a->access_policy.missProp, CU_ACCESS_PROPERTY_STREAMING);
    assert_true(a->has_mem_sync_domain);
    assert_int_equal(a->mem_sync_domain, CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE);
    assert_true(a->has_mem_sync_domain_map);
    assert_int_equal(a->mem_sync_domain_map.remote, 3);
    assert_dims(rec.cluster, 1, 1, 1);

    /* the window's length defaults to the buffer's end; the event fires */
    cfg.access_policy.bytes = 0;
    assert_ok(cus_launch_ex(fx.noargs, &cfg));
    rec = last_launch();
    assert_int_equal(rec.attributes.access_policy.num_bytes, 4096 - 1024);
    cus_fake_set_query_mode(CUS_FAKE_QUERY_NONE);
    bool done = true;
    assert_ok(cus_event_query(ev, &done));
    assert_false(done);
    assert_ok(cus_stream_synchronize(s));
    assert_ok(cus_event_query(ev, &done));
    assert_true(done);
    if (cus_fake_misuse_count())
        fail_msg("fake misuse: %s", cus_fake_last_misuse());

    buf = cus_buffer_unref(buf);
    ev = cus_event_unref(ev);
    s = cus_stream_unref(s);
    close_fixture(&fx);
    c = cus_context_unref(c);
}

static void test_bad_attributes_are_refused_before_the_driver(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    fixture fx = open_fixture(c);
    cus_buffer *buf = NULL;
    assert_ok(cus_buffer_alloc(c, 4096, &buf));
    cus_event *timed = new_event(c, 0);
    const cus_launch_config base = {.grid = {4, 2, 1}, .block = {32, 1, 1}};
    const cus_launch_access_policy window = {.buffer = buf, .bytes = 1024, .hit_ratio = 0.5f};
    cus_launch_config cfg;
#define REFUSED(field_assignments, want, text)                                  \
    do {                                                                       \
        cfg = base;                                                            \
        field_assignments;                                                     \
        assert_refused(cus_launch_ex(fx.noargs, &cfg), want, text);            \
    } while (0)
    const cus_status BAD = CUS_ERROR_INVALID_ARGUMENT;
    int least = 0, greatest = 0; /* cached: the priority check then asks nothing */
    assert_ok(cus_context_stream_priority_range(c, &least, &greatest));
    REFUSED((cfg.access_policy = window, cfg.access_policy.hit_ratio = 1.5f), BAD,
            "noargs: access_policy.hit_ratio 1.5 is outside [0, 1]");
    REFUSED((cfg.access_policy = window, cfg.access_policy.hit_ratio = -0.25f), BAD,
            "access_policy.hit_ratio -0.25 is outside [0, 1]");
    REFUSED((cfg.access_policy = window, cfg.access_policy.miss_prop = CU_ACCESS_PROPERTY_PERSISTING),
            BAD, "access_policy.miss_prop 2 must be NORMAL (0) or STREAMING (1)");
    REFUSED((cfg.access_policy = window, cfg.access_policy.hit_prop = (CUaccessProperty)7), BAD,
            "access_policy.hit_prop 7 is not a CUaccessProperty");
    REFUSED((cfg.access_policy = window, cfg.access_policy.offset = 3072,
             cfg.access_policy.bytes = 2048),
            BAD, "access_policy window [3072, 5120) ends past the buffer's 4096 bytes");
    REFUSED((cfg.access_policy = window, cfg.access_policy.offset = 4096), BAD,
            "access_policy.offset 4096 is past the buffer's end (4096 bytes)");
    REFUSED((cfg.access_policy = window, cfg.access_policy.buffer = NULL), BAD,
            "access_policy has a window but no buffer");
    REFUSED((cfg.set_priority = true, cfg.priority = 1), BAD,
            "priority 1 is outside the context's range [-5, 0]");
    REFUSED((cfg.set_priority = true, cfg.priority = -6), BAD, "priority -6 is outside");
    REFUSED((cfg.cluster_policy = (CUclusterSchedulingPolicy)5), BAD,
            "cluster_policy 5 is not a CUclusterSchedulingPolicy");
#if CUDA_VERSION >= 12080
    /* Without a launch cluster the kernel's compile-time one may be the
     * regular cluster: cuscope checks the grid only, and the driver the rest
     * (here noargs has none: the fake refuses it). */
    REFUSED((cfg.preferred_cluster = CUS_DIM3(3, 1, 1)), BAD,
            "preferred_cluster (3, 1, 1) must be non-zero and divide the grid (4, 2)");
    cfg = base;
    cfg.preferred_cluster = CUS_DIM3(2, 1, 1);
    assert_status(cus_launch_ex(fx.noargs, &cfg), (cus_status)CUDA_ERROR_INVALID_CLUSTER_SIZE);
    REFUSED((cfg.cluster = CUS_DIM3(2, 1, 1), cfg.preferred_cluster = CUS_DIM3(3, 1, 1)), BAD,
            "preferred_cluster.x 3 must be a multiple of cluster.x 2 that divides grid.x 4");
    REFUSED((cfg.cluster = CUS_DIM3(2, 1, 1), cfg.preferred_cluster = CUS_DIM3(4, 1, 2)), BAD,
            "preferred_cluster.z 2 must equal cluster.z 1");
#endif
    REFUSED((cfg.set_mem_sync_domain = true, cfg.mem_sync_domain = (CUlaunchMemSyncDomain)2), BAD,
            "mem_sync_domain 2 is neither DEFAULT (0) nor REMOTE (1)");
    /* the map is checked against the device (one read), not sent */
    cfg = base;
    cfg.set_mem_sync_domain_map = true;
    cfg.mem_sync_domain_map.remote = 4;
    unsigned long ex_calls = cus_fake_calls_of("cuLaunchKernelEx");
    assert_status(cus_launch_ex(fx.noargs, &cfg), BAD);
    assert_contains(cus_last_error_message(),
                    "mem_sync_domain_map (default_ 0, remote 4) names a domain not below the "
                    "device's 4");
    assert_int_equal(cus_fake_calls_of("cuLaunchKernelEx"), ex_calls);
    REFUSED((cfg.programmatic_event = timed), BAD,
            "programmatic_event was made without CU_EVENT_DISABLE_TIMING");
    REFUSED((cfg.programmatic_event_at_block_start = true), BAD,
            "programmatic_event_at_block_start needs a programmatic_event");

    /* objects of another context */
    cus_context *other = new_ctx();
    cus_event *foreign_ev = new_event(other, CU_EVENT_DISABLE_TIMING);
    cus_buffer *foreign_buf = NULL;
    assert_ok(cus_buffer_alloc(other, 64, &foreign_buf));
    REFUSED((cfg.programmatic_event = foreign_ev), CUS_ERROR_CONTEXT_MISMATCH,
            "programmatic_event belongs to context");
    REFUSED((cfg.access_policy = window, cfg.access_policy.buffer = foreign_buf),
            CUS_ERROR_CONTEXT_MISMATCH, "access_policy.buffer belongs to context");
#undef REFUSED
    foreign_buf = cus_buffer_unref(foreign_buf);
    foreign_ev = cus_event_unref(foreign_ev);
    other = cus_context_unref(other);
    timed = cus_event_unref(timed);
    buf = cus_buffer_unref(buf);
    close_fixture(&fx);
    c = cus_context_unref(c);
}

/* The driver calls the attributes make fail as any: named, nothing sent. */
static void test_attribute_reads_fail(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    fixture fx = open_fixture(c);
    cus_launch_config cfg = {.grid = {1, 1, 1}, .block = {32, 1, 1}, .set_priority = true};
    assert_fault_named("cuCtxGetStreamPriorityRange", cus_launch_ex(fx.noargs, &cfg));
    assert_ok(cus_launch_ex(fx.noargs, &cfg));
    cfg.set_priority = false;
    cfg.set_mem_sync_domain_map = true;
    assert_fault_named("cuDeviceGetAttribute", cus_launch_ex(fx.noargs, &cfg));
    assert_ok(cus_launch_ex(fx.noargs, &cfg));
    close_fixture(&fx);
    c = cus_context_unref(c);
}

/* A capture keeps the window's buffer and the programmatic event with the
 * graph: the user drops both, and the replays still use them. */
static void test_capture_keeps_what_attributes_use(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    fixture fx = open_fixture(c);
    size_t blocks = cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY);
    size_t events = cus_fake_live_handles(CUS_FAKE_HANDLE_EVENT);
    cus_graph *g = NULL;
    {
        cus_stream *s = new_stream(c, CU_STREAM_NON_BLOCKING);
        cus_event *ev = new_event(c, CU_EVENT_DISABLE_TIMING);
        cus_buffer *buf = NULL;
        assert_ok(cus_buffer_alloc(c, 4096, &buf));
        cus_launch_config cfg = {
            .grid = {1, 1, 1}, .block = {32, 1, 1}, .stream = s,
            .programmatic_serialization = true, .programmatic_event = ev,
            .access_policy = {.buffer = buf, .hit_ratio = 1.0f,
                              .hit_prop = CU_ACCESS_PROPERTY_PERSISTING}};
        {
            cus_capture_scope(cap, s, CU_STREAM_CAPTURE_MODE_GLOBAL);
            assert_ok(cap.status);
            assert_ok(cus_launch_ex(fx.noargs, &cfg));
            assert_ok(cus_launch_ex(fx.noargs, &cfg)); /* kept once */
            assert_ok(cus_capture_end(&cap, &g));
        }
        /* the module, the buffer and the event */
        assert_int_equal(cus_graph_kept_objects(g), 3);
        buf = cus_buffer_unref(buf);
        ev = cus_event_unref(ev);
        s = cus_stream_unref(s);
    }
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY), blocks + 1);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_EVENT), events + 1);
    cus_graph_exec *e = NULL;
    assert_ok(cus_graph_instantiate(g, 0, &e));
    cus_stream *s2 = new_stream(c, CU_STREAM_NON_BLOCKING);
    assert_ok(cus_graph_exec_launch(e, s2));
    assert_ok(cus_stream_synchronize(s2));
    cus_fake_launch rec = last_launch();
    assert_true(rec.attributes.programmatic_serialization);
    assert_true(rec.attributes.has_access_policy);
    if (cus_fake_misuse_count())
        fail_msg("fake misuse: %s", cus_fake_last_misuse());
    s2 = cus_stream_unref(s2);
    e = cus_graph_exec_unref(e);
    g = cus_graph_unref(g);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY), blocks);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_EVENT), events);
    close_fixture(&fx);
    c = cus_context_unref(c);
}

/* A library kernel's extended launch takes the same attributes, checked
 * the same way against the launch's context (the stream's). */
static void test_kernel_launch_ex_attributes(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_stream *s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_event *ev = new_event(c, CU_EVENT_DISABLE_TIMING);
    cus_library *lib = NULL;
    assert_ok(cus_library_load_data(ptx_src, 0, NULL, NULL, &lib));
    cus_kernel *k = NULL;
    assert_ok(cus_library_get_kernel(lib, "noargs", &k));
    cus_launch_config cfg = {.grid = {1, 1, 1}, .block = {32, 1, 1}, .stream = s,
                             .programmatic_serialization = true, .programmatic_event = ev};
    assert_ok(cus_launch_ex(k, &cfg));
    cus_fake_launch rec = last_launch();
    assert_true(rec.attributes.programmatic_serialization);
    assert_ptr_equal(rec.attributes.programmatic_event, cus_event_handle(ev));
    cfg.access_policy = (cus_launch_access_policy){.hit_ratio = 0.5f};
    assert_refused(cus_launch_ex(k, &cfg), CUS_ERROR_INVALID_ARGUMENT,
                   "noargs: access_policy has a window but no buffer");
    assert_ok(cus_stream_synchronize(s));
    k = cus_kernel_unref(k);
    lib = cus_library_unref(lib);
    ev = cus_event_unref(ev);
    s = cus_stream_unref(s);
    c = cus_context_unref(c);
}

#ifdef CUS_TEST_HAVE_KERNELS
/* --- the PDL pair of kernels/pdl.cu, on host twins -------------------------------------- */

/* pdl_primary: out = 2 * in. */
static CUresult pdl_primary_twin(const cus_fake_launch *l, void **args, void *user)
{
    (void)user;
    const float *in = ptr_arg(args[0]);
    float *out = ptr_arg(args[1]);
    unsigned long long n;
    memcpy(&n, args[2], sizeof n);
    for (unsigned long long i = 0; i < thread_count(l) && i < n; i++)
        out[i] = 2.0f * in[i];
    return CUDA_SUCCESS;
}

/* pdl_secondary: out2 = out + 1 (its cudaGridDependencySynchronize() needs
 * nothing here: the fake runs kernels one after another). */
static CUresult pdl_secondary_twin(const cus_fake_launch *l, void **args, void *user)
{
    int *runs = user;
    const float *out = ptr_arg(args[0]);
    float *out2 = ptr_arg(args[1]);
    unsigned long long n;
    memcpy(&n, args[2], sizeof n);
    for (unsigned long long i = 0; i < thread_count(l) && i < n; i++)
        out2[i] = out[i] + 1.0f;
    assert_true(l->attributes.programmatic_serialization);
    ++*runs;
    return CUDA_SUCCESS;
}

static void test_pdl_pair_on_twins(void **state)
{
    (void)state;
    enum { n = 1000 };
    int runs = 0;
    assert_ok(cus_fake_register_kernel("pdl_primary", pdl_primary_twin, NULL));
    assert_ok(cus_fake_register_kernel("pdl_secondary", pdl_secondary_twin, &runs));
    cus_context *c = new_primary();
    cus_module *m = NULL;
    assert_ok(cus_module_load_data(c, cusk_pdl.fatbin, cusk_pdl.fatbin_size, NULL, &m));
    cus_function *primary = get_fn(m, "pdl_primary"), *secondary = get_fn(m, "pdl_secondary");
    cus_stream *s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_buffer *in = NULL, *out = NULL, *out2 = NULL;
    assert_ok(cus_buffer_alloc(c, n * sizeof(float), &in));
    assert_ok(cus_buffer_alloc(c, n * sizeof(float), &out));
    assert_ok(cus_buffer_alloc(c, n * sizeof(float), &out2));
    float h[n];
    for (int i = 0; i < n; i++)
        h[i] = (float)i;
    assert_ok(cus_copy_to_device(in, 0, h, sizeof h));
    cus_launch_config pdl = {.grid = {cus_grid_for(n, 256), 1, 1}, .block = {256, 1, 1},
                             .stream = s, .programmatic_serialization = true};
    assert_ok(cus_launch(primary, cus_grid_for(n, 256), 256, 0, s, in, out,
                         (unsigned long long)n));
    assert_ok(cus_launch_ex(secondary, &pdl, out, out2, (unsigned long long)n));
    assert_ok(cus_stream_synchronize(s));
    assert_ok(cus_copy_to_host(h, out2, 0, sizeof h));
    for (int i = 0; i < n; i++)
        if (h[i] != 2.0f * (float)i + 1.0f)
            fail_msg("out2[%d] = %g", i, (double)h[i]);
    assert_int_equal(runs, 1);
    assert_int_equal(cus_fake_kernels_without_twin(NULL), 0);
    in = cus_buffer_unref(in);
    out = cus_buffer_unref(out);
    out2 = cus_buffer_unref(out2);
    s = cus_stream_unref(s);
    primary = cus_function_unref(primary);
    secondary = cus_function_unref(secondary);
    m = cus_module_unref(m);
    c = cus_context_unref(c);
}
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_grid_y_is_named),
        ENV_TEST(test_blocks_threads_and_every_limit),
        ENV_TEST(test_shared_memory_is_named),
        ENV_TEST(test_registers_are_named),
        ENV_TEST(test_clusters_are_named),
        ENV_TEST(test_diagnosis_costs_nothing_and_changes_nothing),
        ENV_TEST(test_attributes_reach_the_driver),
        ENV_TEST(test_bad_attributes_are_refused_before_the_driver),
        ENV_TEST(test_attribute_reads_fail),
        ENV_TEST(test_capture_keeps_what_attributes_use),
        ENV_TEST(test_kernel_launch_ex_attributes),
#ifdef CUS_TEST_HAVE_KERNELS
        ENV_TEST(test_pdl_pair_on_twins),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
