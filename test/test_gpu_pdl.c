/* gpu-pdl: programmatic dependent launch through cus_launch_ex on the real
 * driver (kernels/pdl.cu, sm_90 and later). pdl_primary writes
 * out = 2 * in and triggers; pdl_secondary, launched with
 * programmatic_serialization right behind it on the same stream, waits with
 * cudaGridDependencySynchronize() and writes out2 = out + 1; every result is
 * checked, for many pairs in a row (a secondary that read too early would
 * see the previous round's values). Then the primary with a programmatic
 * event, which the host waits for. Exits 77 without a driver, a device, or
 * on a device below compute capability 9.0. Prints the device, one line per
 * part, and what a refused configuration's message looks like. */
#include <stdio.h>
#include <string.h>

#include <cuscope/event.h>
#include <cuscope/graph_inspect.h>

#include "harness/env.h"
#include "cusk-images.h"

#define N (1u << 20)
#define ROUNDS 200

static float host_in[N], host_out2[N];

static void test_pdl_pair(void **state)
{
    (void)state;
    cus_device dev;
    assert_ok(cus_device_get(0, &dev));
    cus_autoptr(cus_context) ctx = NULL;
    assert_ok(cus_context_retain_primary(dev, &ctx));
    cus_autoptr(cus_module) m = NULL;
    assert_ok(cus_module_load_data(ctx, cusk_pdl.fatbin, cusk_pdl.fatbin_size, NULL, &m));
    cus_autoptr(cus_function) primary = NULL;
    cus_autoptr(cus_function) secondary = NULL;
    assert_ok(cus_module_get_function(m, "pdl_primary", &primary));
    assert_ok(cus_module_get_function(m, "pdl_secondary", &secondary));
    cus_autoptr(cus_stream) s = NULL;
    assert_ok(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &s));
    cus_autoptr(cus_buffer) in = NULL;
    cus_autoptr(cus_buffer) out = NULL;
    cus_autoptr(cus_buffer) out2 = NULL;
    assert_ok(cus_buffer_alloc(ctx, sizeof host_in, &in));
    assert_ok(cus_buffer_alloc(ctx, sizeof host_in, &out));
    assert_ok(cus_buffer_alloc(ctx, sizeof host_out2, &out2));

    unsigned int grid = cus_grid_for(N, 256);
    cus_launch_config pdl = {.grid = {grid, 1, 1}, .block = {256, 1, 1}, .stream = s,
                             .programmatic_serialization = true};
    for (int r = 0; r < ROUNDS; r++) {
        for (unsigned int i = 0; i < N; i++)
            host_in[i] = (float)(i % 1000) + (float)r;
        assert_ok(cus_copy_to_device_async(in, 0, host_in, sizeof host_in, s));
        assert_ok(cus_launch(primary, grid, 256, 0, s, in, out, (unsigned long long)N));
        assert_ok(cus_launch_ex(secondary, &pdl, out, out2, (unsigned long long)N));
        assert_ok(cus_copy_to_host_async(host_out2, out2, 0, sizeof host_out2, s));
        assert_ok(cus_stream_synchronize(s));
        for (unsigned int i = 0; i < N; i++)
            if (host_out2[i] != 2.0f * host_in[i] + 1.0f)
                fail_msg("round %d: out2[%u] = %g, want %g", r, i, (double)host_out2[i],
                         2.0 * host_in[i] + 1.0);
    }
    printf("gpu-pdl: %d PDL pairs (primary, then secondary with programmatic_serialization), "
           "%u results each correct\n",
           ROUNDS, N);

    /* the primary with a programmatic event; the host waits for it */
    cus_autoptr(cus_event) ev = NULL;
    assert_ok(cus_event_create(ctx, CU_EVENT_DISABLE_TIMING, &ev));
    cus_launch_config with_event = {.grid = {grid, 1, 1}, .block = {256, 1, 1}, .stream = s,
                                    .programmatic_event = ev};
    assert_ok(cus_launch_ex(primary, &with_event, in, out, (unsigned long long)N));
    assert_ok(cus_launch_ex(secondary, &pdl, out, out2, (unsigned long long)N));
    assert_ok(cus_event_synchronize(ev));
    assert_ok(cus_stream_synchronize(s));
    assert_ok(cus_copy_to_host(host_out2, out2, 0, sizeof host_out2));
    for (unsigned int i = 0; i < N; i++)
        if (host_out2[i] != 2.0f * host_in[i] + 1.0f)
            fail_msg("with the event: out2[%u] = %g, want %g", i, (double)host_out2[i],
                     2.0 * host_in[i] + 1.0);
    printf("gpu-pdl: primary with a programmatic event, event waited for, results correct\n");

    /* the other attributes, accepted by the driver */
    int least = 0, greatest = 0;
    assert_ok(cus_context_stream_priority_range(ctx, &least, &greatest));
    cus_launch_config attrs = pdl;
    attrs.set_priority = true;
    attrs.priority = greatest;
    attrs.access_policy = (cus_launch_access_policy){
        .buffer = out, .hit_ratio = 0.5f, .hit_prop = CU_ACCESS_PROPERTY_PERSISTING,
        .miss_prop = CU_ACCESS_PROPERTY_STREAMING};
    attrs.set_mem_sync_domain = true;
    attrs.mem_sync_domain = CU_LAUNCH_MEM_SYNC_DOMAIN_DEFAULT;
    assert_ok(cus_launch_ex(secondary, &attrs, out, out2, (unsigned long long)N));
    assert_ok(cus_stream_synchronize(s));
    printf("gpu-pdl: priority %d, an access-policy window and a memory sync domain accepted\n",
           greatest);

    /* a configuration the driver refuses, diagnosed */
    cus_status st = cus_launch(primary, CUS_DIM3(1, 70000, 1), 256, 0, s, in, out,
                               (unsigned long long)N);
    assert_int_equal(st, CUDA_ERROR_INVALID_VALUE);
    assert_non_null(strstr(cus_last_error_message(),
                           "grid.y 70000 exceeds the device's 65535 "
                           "(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)"));
    printf("gpu-pdl: refused: %s\n", cus_last_error_message());
    st = cus_launch(primary, 1, 2048, 0, s, in, out, (unsigned long long)N);
    assert_int_equal(st, CUDA_ERROR_INVALID_VALUE);
    assert_non_null(strstr(cus_last_error_message(), "block.x 2048 exceeds the device's 1024"));
    printf("gpu-pdl: refused: %s\n", cus_last_error_message());
    st = cus_launch(primary, 1, 256, 200 * 1024, s, in, out, (unsigned long long)N);
    assert_int_equal(st, CUDA_ERROR_INVALID_VALUE);
    assert_non_null(strstr(cus_last_error_message(), "204800 B of dynamic shared memory exceed"));
    printf("gpu-pdl: refused: %s\n", cus_last_error_message());
    assert_int_equal(cus_context_poisoned(ctx), CUS_SUCCESS);
}

/* The pair as a graph built by hand, joined by a programmatic edge (and
 * then a launch-order one): the upload, both kernels and the download
 * replayed ROUNDS times on new input; a secondary that read too early would
 * see the previous round's out. A captured PDL pair's edge kind is printed
 * (the fake makes it a programmatic edge, test_graph_edges.c). */
static void test_pdl_graph_edges(void **state)
{
    (void)state;
    cus_device dev;
    assert_ok(cus_device_get(0, &dev));
    cus_autoptr(cus_context) ctx = NULL;
    assert_ok(cus_context_retain_primary(dev, &ctx));
    cus_autoptr(cus_module) m = NULL;
    assert_ok(cus_module_load_data(ctx, cusk_pdl.fatbin, cusk_pdl.fatbin_size, NULL, &m));
    cus_autoptr(cus_function) primary = NULL;
    cus_autoptr(cus_function) secondary = NULL;
    assert_ok(cus_module_get_function(m, "pdl_primary", &primary));
    assert_ok(cus_module_get_function(m, "pdl_secondary", &secondary));
    cus_autoptr(cus_stream) s = NULL;
    assert_ok(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &s));
    cus_autoptr(cus_buffer) in = NULL;
    cus_autoptr(cus_buffer) out = NULL;
    cus_autoptr(cus_buffer) out2 = NULL;
    assert_ok(cus_buffer_alloc(ctx, sizeof host_in, &in));
    assert_ok(cus_buffer_alloc(ctx, sizeof host_in, &out));
    assert_ok(cus_buffer_alloc(ctx, sizeof host_out2, &out2));
    cus_autoptr(cus_host_buffer) hin = NULL;
    cus_autoptr(cus_host_buffer) hout = NULL;
    assert_ok(cus_host_buffer_alloc(ctx, sizeof host_in, 0, &hin));
    assert_ok(cus_host_buffer_alloc(ctx, sizeof host_out2, 0, &hout));
    float *pin = cus_host_buffer_data(hin), *pout = cus_host_buffer_data(hout);
    unsigned int grid = cus_grid_for(N, 256);
    const cus_edge_kind kinds[] = {CUS_EDGE_PROGRAMMATIC, CUS_EDGE_LAUNCH_ORDER};
    const char *const names[] = {"programmatic", "launch-order"};
    for (int k = 0; k < 2; k++) {
        cus_autoptr(cus_graph) g = NULL;
        assert_ok(cus_graph_create(ctx, &g));
        cus_graph_node up, first, second, down;
        assert_ok(cus_graph_add_copy_to_device(g, NULL, 0, &up, in, 0, pin, sizeof host_in));
        assert_ok(cus_graph_add_kernel(g, &up, 1, &first, primary, grid, 256, 0, in, out,
                                       (unsigned long long)N));
        assert_ok(cus_graph_add_kernel(g, NULL, 0, &second, secondary, grid, 256, 0, out, out2,
                                       (unsigned long long)N));
        assert_ok(cus_graph_add_edges(g, &first, &second, &kinds[k], 1));
        assert_ok(cus_graph_add_copy_to_host(g, &second, 1, &down, pout, out2, 0,
                                             sizeof host_out2));
        cus_graph_node dep;
        cus_edge_kind got = CUS_EDGE_DEFAULT;
        size_t n = 1;
        assert_ok(cus_graph_node_dependencies_with_kinds(second, &dep, &got, &n));
        assert_int_equal(n, 1);
        assert_int_equal(got, kinds[k]);
        n = 1;
        cus_status lossy = cus_graph_node_dependencies(second, &dep, &n);
        printf("gpu-pdl-graph: the plain dependency list of a %s edge: %s\n", names[k],
               cus_status_name(lossy));
        cus_autoptr(cus_graph_exec) e = NULL;
        assert_ok(cus_graph_instantiate(g, 0, &e));
        for (int r = 0; r < ROUNDS; r++) {
            for (unsigned int i = 0; i < N; i++)
                pin[i] = (float)(i % 1000) + (float)r;
            assert_ok(cus_graph_exec_launch(e, s));
            assert_ok(cus_stream_synchronize(s));
            for (unsigned int i = 0; i < N; i++)
                if (pout[i] != 2.0f * pin[i] + 1.0f)
                    fail_msg("%s edge, round %d: out2[%u] = %g, want %g", names[k], r, i,
                             (double)pout[i], 2.0 * pin[i] + 1.0);
        }
        printf("gpu-pdl-graph: %d replays of the pair joined by a %s edge, every result "
               "correct\n",
               ROUNDS, names[k]);
    }

    /* What a capture of the PDL pair makes of the edge. */
    cus_launch_config pdl = {.grid = {grid, 1, 1}, .block = {256, 1, 1}, .stream = s,
                             .programmatic_serialization = true};
    cus_autoptr(cus_graph) captured = NULL;
    {
        cus_capture_scope(cap, s, CU_STREAM_CAPTURE_MODE_RELAXED);
        assert_ok(cap.status);
        assert_ok(cus_launch(primary, grid, 256, 0, s, in, out, (unsigned long long)N));
        assert_ok(cus_launch_ex(secondary, &pdl, out, out2, (unsigned long long)N));
        assert_ok(cus_capture_end(&cap, &captured));
    }
    cus_graph_node from[4], to[4];
    cus_edge_kind ek[4];
    size_t n = 4;
    cus_status st = cus_graph_edges_with_kinds(captured, from, to, ek, &n);
    if (st == CUS_SUCCESS)
        for (size_t i = 0; i < n; i++)
            printf("gpu-pdl-graph: the captured pair: edge %zu of kind %d (0 default, 1 "
                   "programmatic, 2 launch order)\n",
                   i, (int)ek[i]);
    else
        printf("gpu-pdl-graph: the captured pair's edges: %s: %s\n", cus_status_name(st),
               cus_last_error_message());
}

int main(void)
{
    env_require_driver_or_skip();
    cus_device dev;
    int major = 0, minor = 0;
    if (cus_device_get(0, &dev) != CUS_SUCCESS ||
        cus_device_compute_capability(dev, &major, &minor) != CUS_SUCCESS) {
        printf("skipping: %s\n", cus_last_error_message());
        return 77;
    }
    if (major < 9) {
        printf("skipping: programmatic dependent launch needs compute capability 9.0, the "
               "device has %d.%d\n",
               major, minor);
        return 77;
    }
    printf("gpu-pdl: device compute capability %d.%d\n", major, minor);
    const struct CMUnitTest tests[] = {ENV_TEST(test_pdl_pair), ENV_TEST(test_pdl_graph_edges)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
