/* tutorial-graph-nodes: a graph built by hand, node by node, then updated
 * node by node (docs/tutorial.md, "Graphs built by hand").
 *
 * Builds copy-in (x and y, in parallel), saxpy after both, copy-out after it,
 * and a host function at the end, in a function whose module, function and
 * buffers go out of scope at its end: the graph keeps them, as a captured
 * graph does. Then replays it, changes the kernel node's scale in the
 * executable graph (cus_graph_exec_set_kernel, checked like cus_launch),
 * refuses a wrong argument, disables the node, builds a kernel node with a
 * launch configuration (priority, L2 window, cluster) and reads its
 * attributes back, and extends a graph with a child. Without a GPU it runs on the fake driver, with a host twin of the
 * kernel.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <cuscope/cuscope.h>
#include <cuscope/fake.h>

#include "cusk-images.h"

#define N 1024

static CUresult saxpy_on_host(const cus_fake_launch *launch, void **args, void *user)
{
    (void)user;
    float a = *(float *)args[0];
    const float *x = (const float *)(uintptr_t) * (CUdeviceptr *)args[1];
    float *y = (float *)(uintptr_t) * (CUdeviceptr *)args[2];
    unsigned long long n = *(unsigned long long *)args[3];
    unsigned long long threads = (unsigned long long)launch->grid[0] * launch->block[0];
    for (unsigned long long i = 0; i < n && i < threads; i++)
        y[i] = a * x[i] + y[i];
    return CUDA_SUCCESS;
}

static void replayed(void *counter)
{
    atomic_fetch_add((atomic_int *)counter, 1);
}

/* What the caller keeps: the kernel node, to update it later. */
typedef struct built {
    cus_graph *graph;
    cus_graph_node kernel;
} built;

/* x and y are pinned host arrays of N floats that outlive the graph. */
static cus_status build(cus_context *ctx, float *x, float *y, atomic_int *counter, built *out)
{
    cus_autoptr(cus_module) module = NULL;
    CUS_TRY(cus_module_load_data(ctx, cusk_saxpy.fatbin, cusk_saxpy.fatbin_size, NULL, &module));
    cus_autoptr(cus_function) saxpy = NULL;
    CUS_TRY(cus_module_get_function(module, "saxpy", &saxpy));
    cus_autoptr(cus_buffer) dx = NULL;
    cus_autoptr(cus_buffer) dy = NULL;
    CUS_TRY(cus_buffer_alloc_n(ctx, float, N, &dx));
    CUS_TRY(cus_buffer_alloc_n(ctx, float, N, &dy));

    cus_autoptr(cus_graph) g = NULL;
    CUS_TRY(cus_graph_create(ctx, &g));
    cus_graph_node up[2], kernel, down;
    /* Two roots: the copies have no dependency on each other. */
    CUS_TRY(cus_graph_add_copy_to_device(g, NULL, 0, &up[0], dx, 0, x, N * sizeof(float)));
    CUS_TRY(cus_graph_add_copy_to_device(g, NULL, 0, &up[1], dy, 0, y, N * sizeof(float)));
    /* After both; the arguments are checked against saxpy's parameters, and
     * dx, dy (and the module) are kept by the graph. */
    CUS_TRY(cus_graph_add_kernel(g, up, 2, &kernel, saxpy, cus_grid_for(N, 256), 256, 0, 3.0f,
                                 dx, dy, (unsigned long long)N));
    CUS_TRY(cus_graph_add_copy_to_host(g, &kernel, 1, &down, y, dy, 0, N * sizeof(float)));
    CUS_TRY(cus_graph_add_host_fn(g, &down, 1, NULL, replayed, counter));
    out->kernel = kernel;
    out->graph = cus_steal(&g);
    return CUS_SUCCESS;
    /* module, saxpy, dx and dy are released here; the graph holds them. */
}

static cus_status check(const float *x, const float *y, float a, float y0, const char *what)
{
    unsigned wrong = 0;
    for (int i = 0; i < N; i++)
        wrong += y[i] != a * x[i] + y0 + (float)i;
    printf("%s: %s\n", what, wrong ? "WRONG" : "ok");
    return wrong ? CUS_ERROR_INVALID_ARGUMENT : CUS_SUCCESS;
}

static void reset(float *x, float *y)
{
    for (int i = 0; i < N; i++) {
        x[i] = 2.0f;
        y[i] = (float)i;
    }
}

/* y = 2 * x on the device, by a graph of one kernel node that runs at the
 * context's greatest priority, keeps x in the L2 cache's persisting part,
 * and (compute capability 9.0 and later) runs in clusters of two blocks. */
static cus_status configured_node(cus_context *ctx, cus_function *saxpy, cus_buffer *dx,
                                  cus_buffer *dy, cus_stream *stream)
{
    int least = 0, greatest = 0, major = 0, minor = 0;
    CUS_TRY(cus_context_stream_priority_range(ctx, &least, &greatest));
    CUS_TRY(cus_device_compute_capability(cus_context_device(ctx), &major, &minor));
    cus_launch_config cfg = {
        .grid = {cus_grid_for(N, 256), 1, 1}, .block = {256, 1, 1},
        .set_priority = true, .priority = greatest,
        .access_policy = {.buffer = dx, .hit_ratio = 1.0f,
                          .hit_prop = CU_ACCESS_PROPERTY_PERSISTING,
                          .miss_prop = CU_ACCESS_PROPERTY_STREAMING},
    };
    if (major >= 9)
        cfg.cluster = CUS_DIM3(2, 1, 1);
    cus_autoptr(cus_graph) g = NULL;
    CUS_TRY(cus_graph_create(ctx, &g));
    cus_graph_node node;
    CUS_TRY(cus_graph_add_kernel_ex(g, NULL, 0, &node, saxpy, &cfg, 2.0f, dx, dy,
                                    (unsigned long long)N));
    CUlaunchAttributeValue prio, window, cluster;
    CUS_TRY(cus_graph_kernel_node_attribute(node, CU_LAUNCH_ATTRIBUTE_PRIORITY, &prio));
    CUS_TRY(cus_graph_kernel_node_attribute(node, CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW,
                                            &window));
    CUS_TRY(cus_graph_kernel_node_attribute(node, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
                                            &cluster));
    printf("configured node: priority %d, a window of %zu bytes, clusters of %u\n", prio.priority,
           window.accessPolicyWindow.num_bytes, cluster.clusterDim.x);
    /* A stream in the configuration is refused: a node runs on the stream
     * its graph is launched on. */
    cfg.stream = stream;
    cus_status st = cus_graph_add_kernel_ex(g, NULL, 0, NULL, saxpy, &cfg, 2.0f, dx, dy,
                                            (unsigned long long)N);
    printf("a stream in a node's configuration: %s\n", cus_status_name(st));
    if (st != CUS_ERROR_INVALID_ARGUMENT)
        return CUS_ERROR_INVALID_ARGUMENT;

    cus_autoptr(cus_graph_exec) exec = NULL;
    CUS_TRY(cus_graph_instantiate(g, 0, &exec));
    CUS_TRY(cus_buffer_fill_u32(dy, 0, 0, N));
    CUS_TRY(cus_graph_exec_launch(exec, stream));
    CUS_TRY(cus_stream_synchronize(stream));
    float x[N], y[N];
    CUS_TRY(cus_copy_to_host(x, dx, 0, sizeof x));
    CUS_TRY(cus_copy_to_host(y, dy, 0, sizeof y));
    unsigned wrong = 0;
    for (int i = 0; i < N; i++)
        wrong += y[i] != 2.0f * x[i];
    printf("configured node: dy = 2 * x %s\n", wrong ? "WRONG" : "ok");
    return wrong ? CUS_ERROR_INVALID_ARGUMENT : CUS_SUCCESS;
}

static cus_status run(void)
{
    cus_device dev;
    CUS_TRY(cus_device_get(0, &dev));
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(cus_context_retain_primary(dev, &ctx));
    cus_context_scope(guard, ctx);
    if (guard.status)
        return guard.status;

    cus_autoptr(cus_host_buffer) hx = NULL;
    cus_autoptr(cus_host_buffer) hy = NULL;
    CUS_TRY(cus_host_buffer_alloc(ctx, N * sizeof(float), 0, &hx));
    CUS_TRY(cus_host_buffer_alloc(ctx, N * sizeof(float), 0, &hy));
    float *x = cus_host_buffer_data(hx), *y = cus_host_buffer_data(hy);
    cus_autoptr(cus_stream) stream = NULL;
    CUS_TRY(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &stream));
    atomic_int replays = 0;

    built b = {NULL, {0}};
    CUS_TRY(build(ctx, x, y, &replays, &b));
    cus_autoptr(cus_graph) graph = b.graph;
    size_t nodes = 0;
    CUS_TRY(cus_graph_node_count(graph, &nodes));
    printf("built %zu nodes; the graph keeps %zu objects alive (module, two buffers, the host "
           "function's record)\n",
           nodes, cus_graph_kept_objects(graph));
    cus_autoptr(cus_graph_exec) exec = NULL;
    CUS_TRY(cus_graph_instantiate(graph, 0, &exec));

    reset(x, y);
    CUS_TRY(cus_graph_exec_launch(exec, stream));
    CUS_TRY(cus_stream_synchronize(stream));
    CUS_TRY(check(x, y, 3.0f, 0.0f, "replay: y = 3 * x + i"));

    /* The kernel node's parameters, in the executable graph only (the graph
     * is unchanged): new buffers, which the executable graph keeps from now
     * on, while the graph still keeps the ones the node was built with. */
    cus_autoptr(cus_module) module = NULL;
    CUS_TRY(cus_module_load_data(ctx, cusk_saxpy.fatbin, cusk_saxpy.fatbin_size, NULL, &module));
    cus_autoptr(cus_function) saxpy = NULL;
    CUS_TRY(cus_module_get_function(module, "saxpy", &saxpy));
    cus_autoptr(cus_buffer) dx = NULL;
    cus_autoptr(cus_buffer) dy = NULL;
    CUS_TRY(cus_buffer_alloc_n(ctx, float, N, &dx));
    CUS_TRY(cus_buffer_alloc_n(ctx, float, N, &dy));
    CUS_TRY(cus_buffer_fill_u32(dy, 0, 0, N)); /* 0.0f */
    CUS_TRY(cus_copy_to_device(dx, 0, x, N * sizeof(float)));
    CUS_TRY(cus_graph_exec_set_kernel(exec, b.kernel, saxpy, cus_grid_for(N, 256), 256, 0, 5.0f,
                                      dx, dy, (unsigned long long)N));
    CUS_TRY(cus_graph_exec_launch(exec, stream));
    CUS_TRY(cus_stream_synchronize(stream));
    float back[N];
    CUS_TRY(cus_copy_to_host(back, dy, 0, sizeof back));
    unsigned wrong = 0;
    for (int i = 0; i < N; i++)
        wrong += back[i] != 5.0f * 2.0f;
    printf("updated kernel node: dy = 5 * x %s\n", wrong ? "WRONG" : "ok");
    if (wrong)
        return CUS_ERROR_INVALID_ARGUMENT;

    /* A wrong argument is refused before the driver, as cus_launch does. */
    cus_status st = cus_graph_exec_set_kernel(exec, b.kernel, saxpy, 1, 256, 0, 5.0, dx, dy,
                                              (unsigned long long)N);
    printf("a double for a float: %s\n  %s\n", cus_status_name(st), cus_last_error_message());
    if (st != CUS_ERROR_INVALID_ARGUMENT)
        return CUS_ERROR_INVALID_ARGUMENT;

    /* Disabled, the node does nothing: y comes back as it went. */
    CUS_TRY(cus_graph_exec_set_node_enabled(exec, b.kernel, false));
    reset(x, y);
    CUS_TRY(cus_graph_exec_launch(exec, stream));
    CUS_TRY(cus_stream_synchronize(stream));
    CUS_TRY(check(x, y, 0.0f, 0.0f, "kernel node disabled: y = i"));

    /* A kernel node with a launch configuration, as cus_launch_ex takes one:
     * the attributes become the node's, and every replay runs with them. */
    CUS_TRY(configured_node(ctx, saxpy, dx, dy, stream));

    /* A graph as a node of another: the child's nodes are copied in. */
    cus_autoptr(cus_graph) outer = NULL;
    CUS_TRY(cus_graph_create(ctx, &outer));
    cus_graph_node child;
    CUS_TRY(cus_graph_add_child(outer, NULL, 0, &child, graph));
    CUS_TRY(cus_graph_add_host_fn(outer, &child, 1, NULL, replayed, &replays));
    cus_autoptr(cus_graph_exec) outer_exec = NULL;
    CUS_TRY(cus_graph_instantiate(outer, 0, &outer_exec));
    reset(x, y);
    CUS_TRY(cus_graph_exec_launch(outer_exec, stream));
    CUS_TRY(cus_stream_synchronize(stream));
    CUS_TRY(check(x, y, 3.0f, 0.0f, "the graph as a child: y = 3 * x + i"));
    printf("host functions ran %d times\n", atomic_load(&replays));
    return atomic_load(&replays) == 5 ? CUS_SUCCESS : CUS_ERROR_INVALID_ARGUMENT;
}

int main(void)
{
    bool on_fake = false;
    if (cus_init() != CUS_SUCCESS) {
        printf("%s\n", cus_last_error_message());
        printf("no GPU here: running on cuscope's fake driver, the kernel on the CPU\n");
        if (cus_fake_install(NULL) != CUS_SUCCESS ||
            cus_fake_register_kernel("saxpy", saxpy_on_host, NULL) != CUS_SUCCESS ||
            cus_init() != CUS_SUCCESS) {
            fprintf(stderr, "tutorial-graph-nodes: the fake driver failed: %s\n",
                    cus_last_error_message());
            return 1;
        }
        on_fake = true;
    }
    cus_status st = run();
    if (st != CUS_SUCCESS) {
        fprintf(stderr, "tutorial-graph-nodes: %s (%s)\n", cus_last_error_message(),
                cus_status_name(st));
        return 1;
    }
    if (cus_debug_live_objects() != 0) {
        fprintf(stderr, "tutorial-graph-nodes: %zu objects still alive\n",
                cus_debug_live_objects());
        return 1;
    }
    if (on_fake && cus_fake_uninstall() != CUS_SUCCESS) {
        fprintf(stderr, "tutorial-graph-nodes: %s\n", cus_last_error_message());
        return 1;
    }
    return 0;
}
