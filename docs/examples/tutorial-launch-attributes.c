/* tutorial-launch-attributes: launch attributes and refused configurations
 * (docs/tutorial.md, "4. Function", "Launch attributes").
 *
 * The PDL pair of kernels/pdl.cu: pdl_primary (out = 2 * in) triggers its
 * dependent launch, and pdl_secondary (out2 = out + 1), launched with
 * cus_launch_ex and programmatic_serialization, may start before the
 * primary completes and waits for its results with
 * cudaGridDependencySynchronize(). Then the same pair as a graph built by
 * hand, the two kernel nodes joined by a programmatic edge
 * (docs/tutorial.md, "15. Graphs built by hand"). Then an attribute out of
 * its range, which
 * cuscope refuses before the driver, and a configuration the driver
 * refuses, whose message names the limit broken. Without a GPU it runs on
 * the fake driver, with host twins of the two kernels; on a GPU below
 * compute capability 9.0 the attribute is accepted and the launches keep
 * plain stream order.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <cuscope/cuscope.h>
#include <cuscope/fake.h>

#include "cusk-images.h"

#define N 4096

/* The kernels' host twins for the fake driver (the fake runs kernels one
 * after another, so the secondary's wait needs nothing there). */
static CUresult primary_on_host(const cus_fake_launch *launch, void **args, void *user)
{
    (void)user;
    const float *in = (const float *)(uintptr_t) * (CUdeviceptr *)args[0];
    float *out = (float *)(uintptr_t) * (CUdeviceptr *)args[1];
    unsigned long long n = *(unsigned long long *)args[2];
    unsigned long long threads = (unsigned long long)launch->grid[0] * launch->block[0];
    for (unsigned long long i = 0; i < n && i < threads; i++)
        out[i] = 2.0f * in[i];
    return CUDA_SUCCESS;
}

static CUresult secondary_on_host(const cus_fake_launch *launch, void **args, void *user)
{
    (void)user;
    const float *out = (const float *)(uintptr_t) * (CUdeviceptr *)args[0];
    float *out2 = (float *)(uintptr_t) * (CUdeviceptr *)args[1];
    unsigned long long n = *(unsigned long long *)args[2];
    unsigned long long threads = (unsigned long long)launch->grid[0] * launch->block[0];
    for (unsigned long long i = 0; i < n && i < threads; i++)
        out2[i] = out[i] + 1.0f;
    return CUDA_SUCCESS;
}

/* The pair as a graph: the secondary's node depends on the primary's by a
 * programmatic edge, the graph's form of programmatic_serialization. */
static cus_status pdl_graph(cus_context *ctx, cus_function *primary, cus_function *secondary,
                            cus_buffer *din, cus_buffer *dout, cus_buffer *dout2,
                            cus_stream *stream)
{
    cus_autoptr(cus_graph) g = NULL;
    CUS_TRY(cus_graph_create(ctx, &g));
    unsigned int grid = cus_grid_for(N, 256);
    cus_graph_node first, second;
    CUS_TRY(cus_graph_add_kernel(g, NULL, 0, &first, primary, grid, 256, 0, din, dout,
                                 (unsigned long long)N));
    CUS_TRY(cus_graph_add_kernel(g, NULL, 0, &second, secondary, grid, 256, 0, dout, dout2,
                                 (unsigned long long)N));
    const cus_edge_kind kind = CUS_EDGE_PROGRAMMATIC;
    CUS_TRY(cus_graph_add_edges(g, &first, &second, &kind, 1));
    /* The plain list would lose the edge's kind: the driver refuses it. */
    cus_graph_node dep;
    size_t n = 1;
    cus_status st = cus_graph_node_dependencies(second, &dep, &n);
    printf("plain dependency list of the secondary: %s\n", cus_status_name(st));
    cus_edge_kind got = CUS_EDGE_DEFAULT;
    n = 1;
    CUS_TRY(cus_graph_node_dependencies_with_kinds(second, &dep, &got, &n));
    printf("with kinds: %zu dependency, %s\n", n,
           got == CUS_EDGE_PROGRAMMATIC ? "programmatic" : "not programmatic");

    cus_autoptr(cus_graph_exec) exec = NULL;
    CUS_TRY(cus_graph_instantiate(g, 0, &exec));
    CUS_TRY(cus_buffer_fill_u32_async(dout2, 0, 0, N, stream));
    CUS_TRY(cus_graph_exec_launch(exec, stream));
    CUS_TRY(cus_stream_synchronize(stream));
    float out2[N];
    CUS_TRY(cus_copy_to_host(out2, dout2, 0, sizeof out2));
    unsigned wrong = 0;
    for (int i = 0; i < N; i++)
        wrong += out2[i] != 2.0f * (float)i + 1.0f;
    printf("PDL pair as a graph: %s\n", wrong ? "WRONG results" : "out2 = 2 * in + 1");
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
    if (!cus_driver_has("cuLaunchKernelEx")) {
        printf("this driver has no cuLaunchKernelEx (before 11.8): nothing to show\n");
        return CUS_SUCCESS;
    }

    cus_autoptr(cus_module) module = NULL;
    CUS_TRY(cus_module_load_data(ctx, cusk_pdl.fatbin, cusk_pdl.fatbin_size, NULL, &module));
    cus_autoptr(cus_function) primary = NULL;
    cus_autoptr(cus_function) secondary = NULL;
    CUS_TRY(cus_module_get_function(module, "pdl_primary", &primary));
    CUS_TRY(cus_module_get_function(module, "pdl_secondary", &secondary));

    float in[N], out2[N];
    for (int i = 0; i < N; i++)
        in[i] = (float)i;
    cus_autoptr(cus_buffer) din = NULL;
    cus_autoptr(cus_buffer) dout = NULL;
    cus_autoptr(cus_buffer) dout2 = NULL;
    CUS_TRY(cus_buffer_alloc_n(ctx, float, N, &din));
    CUS_TRY(cus_buffer_alloc_n(ctx, float, N, &dout));
    CUS_TRY(cus_buffer_alloc_n(ctx, float, N, &dout2));
    CUS_TRY(cus_copy_to_device(din, 0, in, sizeof in));
    cus_autoptr(cus_stream) stream = NULL;
    CUS_TRY(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &stream));

    /* The primary as usual; the secondary right behind it on the same
     * stream, allowed to start early: it waits in the kernel instead. */
    unsigned int grid = cus_grid_for(N, 256);
    CUS_TRY(cus_launch(primary, grid, 256, 0, stream, din, dout, (unsigned long long)N));
    cus_launch_config pdl = {
        .grid = {grid, 1, 1},
        .block = {256, 1, 1},
        .stream = stream,
        .programmatic_serialization = true,
    };
    CUS_TRY(cus_launch_ex(secondary, &pdl, dout, dout2, (unsigned long long)N));
    CUS_TRY(cus_stream_synchronize(stream));
    CUS_TRY(cus_copy_to_host(out2, dout2, 0, sizeof out2));
    unsigned wrong = 0;
    for (int i = 0; i < N; i++)
        wrong += out2[i] != 2.0f * (float)i + 1.0f;
    printf("PDL pair: %s\n", wrong ? "WRONG results" : "out2 = 2 * in + 1");
    if (wrong)
        return CUS_ERROR_INVALID_ARGUMENT;

    /* The pair as a graph (programmatic edges: sm_90 and later, and 12.3). */
    int major = 0, minor = 0;
    CUS_TRY(cus_device_compute_capability(dev, &major, &minor));
    if (major >= 9 && cus_driver_has("cuGraphAddDependencies"))
        CUS_TRY(pdl_graph(ctx, primary, secondary, din, dout, dout2, stream));
    else
        printf("PDL pair as a graph: needs compute capability 9.0 (the device has %d.%d)\n",
               major, minor);

    /* An attribute out of its range: refused before the driver. */
    cus_launch_config bad = pdl;
    bad.access_policy = (cus_launch_access_policy){
        .buffer = dout, .hit_ratio = 1.5f, .hit_prop = CU_ACCESS_PROPERTY_PERSISTING};
    cus_status st = cus_launch_ex(secondary, &bad, dout, dout2, (unsigned long long)N);
    printf("hit_ratio 1.5: %s\n  %s\n", cus_status_name(st), cus_last_error_message());
    if (st != CUS_ERROR_INVALID_ARGUMENT)
        return CUS_ERROR_INVALID_ARGUMENT;

    /* A configuration the driver refuses: the message names the limit. */
    st = cus_launch(primary, CUS_DIM3(1, 70000, 1), 256, 0, stream, din, dout,
                    (unsigned long long)N);
    printf("grid.y 70000: %s\n  %s\n", cus_status_name(st), cus_last_error_message());
    return st == (cus_status)CUDA_ERROR_INVALID_VALUE ? CUS_SUCCESS : CUS_ERROR_INVALID_ARGUMENT;
}

int main(void)
{
    bool on_fake = false;
    if (cus_init() != CUS_SUCCESS) {
        printf("%s\n", cus_last_error_message());
        printf("no GPU here: running on cuscope's fake driver, the kernels on the CPU\n");
        if (cus_fake_install(NULL) != CUS_SUCCESS ||
            cus_fake_register_kernel("pdl_primary", primary_on_host, NULL) != CUS_SUCCESS ||
            cus_fake_register_kernel("pdl_secondary", secondary_on_host, NULL) != CUS_SUCCESS ||
            cus_init() != CUS_SUCCESS) {
            fprintf(stderr, "tutorial-launch-attributes: the fake driver failed: %s\n",
                    cus_last_error_message());
            return 1;
        }
        on_fake = true;
    }
    cus_status st = run();
    if (st != CUS_SUCCESS) {
        fprintf(stderr, "tutorial-launch-attributes: %s\n", cus_last_error_message());
        return 1;
    }
    if (on_fake && cus_fake_uninstall() != CUS_SUCCESS) {
        fprintf(stderr, "tutorial-launch-attributes: objects left alive\n");
        return 1;
    }
    return 0;
}
