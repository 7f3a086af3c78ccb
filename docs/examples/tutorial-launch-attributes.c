/* tutorial-launch-attributes: launch attributes and refused configurations
 * (docs/tutorial.md, "4. Function", "Launch attributes").
 *
 * The PDL pair of kernels/pdl.cu: pdl_primary (out = 2 * in) triggers its
 * dependent launch, and pdl_secondary (out2 = out + 1), launched with
 * cus_launch_ex and programmatic_serialization, may start before the
 * primary completes and waits for its results with
 * cudaGridDependencySynchronize(). Then an attribute out of its range, which
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
