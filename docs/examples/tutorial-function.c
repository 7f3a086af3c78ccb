/* tutorial-function: launching a kernel with checked arguments
 * (docs/tutorial.md, "4. Function").
 *
 * saxpy (kernels/saxpy.cu: y = a*x + y over n floats, n a 64-bit
 * unsigned long long) launched with cus_launch, its arguments checked
 * against the kernel's parameter layout; then the same call with n passed as
 * an int, which cuscope refuses before the driver sees it; then the explicit
 * form with an argument array. Without a GPU it runs on the fake driver,
 * with a host twin of the kernel.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <cuscope/cuscope.h>
#include <cuscope/fake.h>

#include "cusk-images.h"

#define N 4096

/* The kernel's host twin for the fake driver: args[i] points at argument i,
 * and device pointers are host addresses there. */
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

static cus_status run(void)
{
    cus_device dev;
    CUS_TRY(cus_device_get(0, &dev));
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(cus_context_retain_primary(dev, &ctx));
    /* Current for the whole function: every launch then takes the fast path
     * (one driver call, no stack switch). */
    cus_context_scope(guard, ctx);
    if (guard.status)
        return guard.status;

    cus_autoptr(cus_module) module = NULL;
    CUS_TRY(cus_module_load_data(ctx, cusk_saxpy.fatbin, cusk_saxpy.fatbin_size, NULL, &module));
    cus_autoptr(cus_function) saxpy = NULL;
    CUS_TRY(cus_module_get_function(module, "saxpy", &saxpy));

    bool checked = cus_function_layout_known(saxpy);
    if (checked) {
        printf("saxpy takes %u parameters:", cus_function_param_count(saxpy));
        for (unsigned int i = 0; i < cus_function_param_count(saxpy); i++) {
            size_t offset = 0, size = 0;
            CUS_TRY(cus_function_param_info(saxpy, i, &offset, &size));
            printf(" %zu bytes at %zu%s", size, offset, i + 1 < cus_function_param_count(saxpy) ? "," : "\n");
        }
    } else {
        printf("this driver has no cuFuncGetParamInfo (before 12.4): launches are unchecked\n");
    }

    float x[N], y[N];
    for (int i = 0; i < N; i++) {
        x[i] = (float)i;
        y[i] = 1.0f;
    }
    cus_autoptr(cus_buffer) dx = NULL;
    cus_autoptr(cus_buffer) dy = NULL;
    CUS_TRY(cus_buffer_alloc_n(ctx, float, N, &dx));
    CUS_TRY(cus_buffer_alloc_n(ctx, float, N, &dy));
    CUS_TRY(cus_copy_to_device(dx, 0, x, sizeof x));
    CUS_TRY(cus_copy_to_device(dy, 0, y, sizeof y));
    cus_autoptr(cus_stream) stream = NULL;
    CUS_TRY(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &stream));

    /* The block size that maximises occupancy, and a grid that covers N. */
    int min_grid = 0, block = 0;
    CUS_TRY(cus_function_max_potential_block(saxpy, 0, 0, &min_grid, &block));
    unsigned int grid = cus_grid_for(N, (unsigned int)block);

    /* saxpy<<<grid, block, 0, stream>>>(2.0f, dx, dy, N): 2.0f is a float,
     * a cus_buffer * passes as its device address, and n must be 8 bytes. */
    CUS_TRY(cus_launch(saxpy, grid, (unsigned int)block, 0, stream, 2.0f, dx, dy,
                       (unsigned long long)N));
    CUS_TRY(cus_stream_synchronize(stream));
    CUS_TRY(cus_copy_to_host(y, dy, 0, sizeof y));
    unsigned wrong = 0;
    for (int i = 0; i < N; i++)
        wrong += y[i] != 2.0f * (float)i + 1.0f;
    printf("launched %u x %d threads: %s\n", grid, block, wrong ? "WRONG results" : "y = 2x + 1");
    if (wrong)
        return CUS_ERROR_INVALID_ARGUMENT;

    if (checked) {
        /* n as an int is 4 bytes: refused, and nothing reaches the driver.
         * (Unchecked, this launch would read garbage for n's upper half.) */
        cus_status st = cus_launch(saxpy, grid, (unsigned int)block, 0, stream, 2.0f, dx, dy, N);
        printf("n passed as an int: %s\n  %s\n", cus_status_name(st), cus_last_error_message());
        if (st != CUS_ERROR_INVALID_ARGUMENT)
            return CUS_ERROR_INVALID_ARGUMENT;
        st = cus_launch(saxpy, grid, (unsigned int)block, 0, stream, 2.0f, dx, dy);
        printf("an argument missing: %s\n  %s\n", cus_status_name(st), cus_last_error_message());
        if (st != CUS_ERROR_INVALID_ARGUMENT)
            return CUS_ERROR_INVALID_ARGUMENT;
    }

    /* The explicit form, for arguments assembled at run time: pointers to
     * each argument and their sizes (NULL sizes: no check). */
    float a = -1.0f;
    CUdeviceptr px = cus_buffer_ptr(dx), py = cus_buffer_ptr(dy);
    unsigned long long n = N;
    void *args[] = {&a, &px, &py, &n};
    const size_t sizes[] = {sizeof a, sizeof px, sizeof py, sizeof n};
    CUS_TRY(cus_function_launch(saxpy, CUS_DIM3(grid, 1, 1), CUS_DIM3((unsigned int)block, 1, 1),
                                0, stream, 4, args, sizes));
    CUS_TRY(cus_stream_synchronize(stream));
    CUS_TRY(cus_copy_to_host(y, dy, 0, sizeof y));
    wrong = 0;
    for (int i = 0; i < N; i++)
        wrong += y[i] != (float)i + 1.0f;
    printf("cus_function_launch with a = -1: %s\n", wrong ? "WRONG results" : "y = x + 1");
    return wrong ? CUS_ERROR_INVALID_ARGUMENT : CUS_SUCCESS;
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
            fprintf(stderr, "tutorial-function: the fake driver failed: %s\n",
                    cus_last_error_message());
            return 1;
        }
        on_fake = true;
    }

    cus_status st = run();
    if (st != CUS_SUCCESS) {
        fprintf(stderr, "tutorial-function: %s (%s)\n", cus_last_error_message(),
                cus_status_name(st));
        return 1;
    }
    if (cus_debug_live_objects() != 0) {
        fprintf(stderr, "tutorial-function: %zu objects still alive\n", cus_debug_live_objects());
        return 1;
    }
    if (on_fake && cus_fake_uninstall() != CUS_SUCCESS) {
        fprintf(stderr, "tutorial-function: %s\n", cus_last_error_message());
        return 1;
    }
    return 0;
}
