/* gpu-kernel-node-attr: kernel nodes with a launch configuration
 * (cus_graph_add_kernel_ex) on the real driver, sm_90 and later.
 * kernels/cluster.cu's cluster_shape writes, per block, the size of its
 * thread-block cluster and its rank there, so the device itself says
 * whether a node's CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION took effect:
 *   - a node with clusters of 2, one without, and one with clusters of 4, a
 *     priority and an L2 window: each replay's blocks report their node's
 *     shape; the attributes read back as set;
 *   - the attributes copied onto the plain node (cus_graph_copy_kernel_attributes)
 *     and a new instantiation: its blocks now run in clusters of 2;
 *   - a per-node update of the executable graph (an output buffer of its
 *     own: no other node writes it): the node's cluster stays; the graph's
 *     node changed and the executable graph updated whole: it stays too;
 *     the cluster changed on the graph's node and the executable graph
 *     updated whole: what the replay runs is printed, for the fake;
 *   - a cluster that does not divide the node's grid: where the driver
 *     refuses it (the add, or the instantiation) is printed, for the fake's
 *     rules (the fake refuses it at the add).
 * Exits 77 without a driver, a device, or below compute capability 9.0. */
#include <stdio.h>
#include <string.h>

#include <cuscope/graph_nodes.h>

#include "harness/env.h"
#include "cusk-images.h"

#define GRID 8

static void check_shape(cus_buffer *out, unsigned int want, const char *what)
{
    unsigned int got[2 * GRID];
    assert_ok(cus_copy_to_host(got, out, 0, sizeof got));
    for (unsigned int b = 0; b < GRID; b++)
        if (got[2 * b] != want || got[2 * b + 1] >= want)
            fail_msg("%s: block %u reports a cluster of %u, rank %u; expected %u blocks", what, b,
                     got[2 * b], got[2 * b + 1], want);
    printf("gpu-kernel-node-attr: %s: every block in a cluster of %u\n", what, want);
}

static void test_cluster_nodes(void **state)
{
    (void)state;
    cus_device dev;
    assert_ok(cus_device_get(0, &dev));
    cus_autoptr(cus_context) ctx = NULL;
    assert_ok(cus_context_retain_primary(dev, &ctx));
    cus_autoptr(cus_module) m = NULL;
    assert_ok(cus_module_load_data(ctx, cusk_cluster.fatbin, cusk_cluster.fatbin_size, NULL, &m));
    cus_autoptr(cus_function) fn = NULL;
    assert_ok(cus_module_get_function(m, "cluster_shape", &fn));
    cus_autoptr(cus_stream) s = NULL;
    assert_ok(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &s));
    cus_autoptr(cus_buffer) out2 = NULL;
    cus_autoptr(cus_buffer) out1 = NULL;
    cus_autoptr(cus_buffer) out4 = NULL;
    cus_autoptr(cus_buffer) window = NULL;
    assert_ok(cus_buffer_alloc_n(ctx, unsigned int, 2 * GRID, &out2));
    assert_ok(cus_buffer_alloc_n(ctx, unsigned int, 2 * GRID, &out1));
    assert_ok(cus_buffer_alloc_n(ctx, unsigned int, 2 * GRID, &out4));
    assert_ok(cus_buffer_alloc(ctx, 1 << 20, &window));
    int least = 0, greatest = 0;
    assert_ok(cus_context_stream_priority_range(ctx, &least, &greatest));

    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_graph_create(ctx, &g));
    const cus_launch_config by2 = {.grid = {GRID, 1, 1}, .block = {32, 1, 1},
                                   .cluster = {2, 1, 1}};
    const cus_launch_config by4 = {
        .grid = {GRID, 1, 1}, .block = {32, 1, 1}, .cluster = {4, 1, 1},
        .set_priority = true, .priority = greatest,
        .access_policy = {.buffer = window, .hit_ratio = 0.5f,
                          .hit_prop = CU_ACCESS_PROPERTY_PERSISTING,
                          .miss_prop = CU_ACCESS_PROPERTY_STREAMING}};
    cus_graph_node n2, n1, n4;
    assert_ok(cus_graph_add_kernel_ex(g, NULL, 0, &n2, fn, &by2, out2));
    assert_ok(cus_graph_add_kernel(g, NULL, 0, &n1, fn, GRID, 32, 0, out1));
    assert_ok(cus_graph_add_kernel_ex(g, NULL, 0, &n4, fn, &by4, out4));

    CUlaunchAttributeValue v;
    assert_ok(cus_graph_kernel_node_attribute(n2, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, &v));
    assert_int_equal(v.clusterDim.x, 2);
    assert_ok(cus_graph_kernel_node_attribute(n1, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, &v));
    printf("gpu-kernel-node-attr: a plain node's cluster dimension reads (%u, %u, %u)\n",
           v.clusterDim.x, v.clusterDim.y, v.clusterDim.z);
    assert_ok(cus_graph_kernel_node_attribute(n4, CU_LAUNCH_ATTRIBUTE_PRIORITY, &v));
    assert_int_equal(v.priority, greatest);
    assert_ok(cus_graph_kernel_node_attribute(n4, CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW, &v));
    assert_true((uintptr_t)v.accessPolicyWindow.base_ptr == cus_buffer_ptr(window));
    assert_int_equal(v.accessPolicyWindow.num_bytes, 1 << 20);

    cus_autoptr(cus_graph_exec) e = NULL;
    assert_ok(cus_graph_instantiate(g, 0, &e));
    for (int round = 0; round < 3; round++) {
        assert_ok(cus_buffer_fill_u8_async(out2, 0, 0xff, 8 * GRID, s));
        assert_ok(cus_buffer_fill_u8_async(out1, 0, 0xff, 8 * GRID, s));
        assert_ok(cus_buffer_fill_u8_async(out4, 0, 0xff, 8 * GRID, s));
        assert_ok(cus_graph_exec_launch(e, s));
        assert_ok(cus_stream_synchronize(s));
    }
    check_shape(out2, 2, "node with clusters of 2");
    check_shape(out1, 1, "plain node");
    check_shape(out4, 4, "node with clusters of 4, a priority and a window");

    /* The plain node takes n2's attributes: a new instantiation runs it in
     * clusters of 2. */
    assert_ok(cus_graph_copy_kernel_attributes(n1, n2));
    cus_autoptr(cus_graph_exec) e2 = NULL;
    assert_ok(cus_graph_instantiate(g, 0, &e2));
    assert_ok(cus_buffer_fill_u8_async(out1, 0, 0xff, 8 * GRID, s));
    assert_ok(cus_graph_exec_launch(e2, s));
    assert_ok(cus_stream_synchronize(s));
    check_shape(out1, 2, "the plain node after the copy of the attributes");

    /* A per-node update of the first executable graph: n2 writes out3 now
     * (a buffer no other node writes: n1 writes out1), still in clusters of
     * 2. */
    cus_autoptr(cus_buffer) out3 = NULL;
    assert_ok(cus_buffer_alloc_n(ctx, unsigned int, 2 * GRID, &out3));
    assert_ok(cus_graph_exec_set_kernel(e, n2, fn, GRID, 32, 0, out3));
    assert_ok(cus_buffer_fill_u8_async(out3, 0, 0xff, 8 * GRID, s));
    assert_ok(cus_graph_exec_launch(e, s));
    assert_ok(cus_stream_synchronize(s));
    check_shape(out3, 2, "n2 updated in the executable graph");
    /* The graph's node changed, the executable graph updated whole. */
    assert_ok(cus_graph_set_kernel(n2, fn, GRID, 32, 0, out3));
    assert_ok(cus_graph_exec_update(e2, g, NULL));
    assert_ok(cus_buffer_fill_u8_async(out3, 0, 0xff, 8 * GRID, s));
    assert_ok(cus_graph_exec_launch(e2, s));
    assert_ok(cus_stream_synchronize(s));
    check_shape(out3, 2, "n2 changed in the graph, an executable graph updated whole");
    /* The cluster changed on the graph's node (4 divides the grid), the
     * executable graph updated whole: does the update carry it? */
    const cus_launch_config four = {.grid = {GRID, 1, 1}, .block = {32, 1, 1},
                                    .cluster = {4, 1, 1}};
    cus_graph_node n2b;
    assert_ok(cus_graph_add_kernel_ex(g, NULL, 0, &n2b, fn, &four, out3));
    assert_ok(cus_graph_copy_kernel_attributes(n2, n2b));
    assert_ok(cus_graph_destroy_node(n2b));
    cus_status up = cus_graph_exec_update(e2, g, NULL);
    if (up == CUS_SUCCESS) {
        assert_ok(cus_buffer_fill_u8_async(out3, 0, 0xff, 8 * GRID, s));
        assert_ok(cus_graph_exec_launch(e2, s));
        assert_ok(cus_stream_synchronize(s));
        unsigned int got[2] = {0, 0};
        assert_ok(cus_copy_to_host(got, out3, 0, sizeof got));
        printf("gpu-kernel-node-attr: n2's cluster set to 4 in the graph, an executable graph "
               "updated whole: block 0 runs in a cluster of %u\n",
               got[0]);
    } else {
        printf("gpu-kernel-node-attr: n2's cluster set to 4 in the graph: the whole update "
               "refused it, %s\n",
               cus_status_name(up));
    }

    /* A cluster of 3 does not divide a grid of 8: where does the driver
     * refuse it? */
    cus_autoptr(cus_graph) bad = NULL;
    assert_ok(cus_graph_create(ctx, &bad));
    const cus_launch_config by3 = {.grid = {GRID, 1, 1}, .block = {32, 1, 1},
                                   .cluster = {3, 1, 1}};
    cus_status st = cus_graph_add_kernel_ex(bad, NULL, 0, NULL, fn, &by3, out2);
    if (st != CUS_SUCCESS) {
        printf("gpu-kernel-node-attr: a cluster of 3 on a grid of 8: refused at the add, %s: %s\n",
               cus_status_name(st), cus_last_error_message());
        assert_string_equal(cus_last_error()->driver_call, "cuGraphKernelNodeSetAttribute");
    } else {
        cus_graph_exec *x = NULL;
        st = cus_graph_instantiate(bad, 0, &x);
        printf("gpu-kernel-node-attr: a cluster of 3 on a grid of 8: the add accepted it; the "
               "instantiation: %s%s%s\n",
               cus_status_name(st), st ? ": " : "", st ? cus_last_error_message() : "");
        if (x) {
            st = cus_graph_exec_launch(x, s);
            if (!st)
                st = cus_stream_synchronize(s);
            printf("gpu-kernel-node-attr: ... and its launch: %s\n", cus_status_name(st));
            cus_graph_exec_unref(x);
        }
    }
    assert_int_equal(cus_context_poisoned(ctx), CUS_SUCCESS);
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
        printf("skipping: thread-block clusters need compute capability 9.0, the device has "
               "%d.%d\n",
               major, minor);
        return 77;
    }
    printf("gpu-kernel-node-attr: device compute capability %d.%d\n", major, minor);
    const struct CMUnitTest tests[] = {ENV_TEST(test_cluster_nodes)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
