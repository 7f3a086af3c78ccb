/* tutorial-library: code loaded once for every context
 * (docs/tutorial.md, "13. Libraries").
 *
 * kernels/saxpy.cu's fatbin loaded as a library (cuscope/library.h) with no
 * context current; its kernel looked up once and launched in two contexts of
 * the device (the primary one and one of our own), on a stream of each and
 * then with a NULL stream in the current context; the kernels the library
 * holds listed. Without a GPU it runs on the fake driver, with a host twin
 * of the kernel.
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

/* y = a*x + 1 in ctx with saxpy, on a stream of ctx or (stream false) with a
 * NULL stream and ctx current; checks the result. */
static cus_status saxpy_in(cus_context *ctx, cus_kernel *saxpy, float a, bool stream)
{
    static float x[N], y[N];
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
    if (stream) {
        /* The kernel runs in the stream's context: loaded there by the
         * driver at this first use. */
        cus_autoptr(cus_stream) s = NULL;
        CUS_TRY(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &s));
        CUS_TRY(cus_launch(saxpy, cus_grid_for(N, 256), 256, 0, s, a, dx, dy,
                           (unsigned long long)N));
        CUS_TRY(cus_stream_synchronize(s));
    } else {
        /* A NULL stream: the current context's, so one must be current. */
        cus_context_scope(guard, ctx);
        if (guard.status)
            return guard.status;
        CUS_TRY(cus_launch(saxpy, cus_grid_for(N, 256), 256, 0, NULL, a, dx, dy,
                           (unsigned long long)N));
        CUS_TRY(cus_context_synchronize(ctx));
    }
    CUS_TRY(cus_copy_to_host(y, dy, 0, sizeof y));
    unsigned wrong = 0;
    for (int i = 0; i < N; i++)
        wrong += y[i] != a * (float)i + 1.0f;
    return wrong ? CUS_ERROR_INVALID_ARGUMENT : CUS_SUCCESS;
}

/* The kernel's parameter layout, which cus_launch checks arguments against. */
static cus_status print_layout(cus_kernel *saxpy)
{
    if (!cus_kernel_layout_known(saxpy)) {
        printf("this driver has no cuKernelGetParamInfo (before 12.4): launches are unchecked\n");
        return CUS_SUCCESS;
    }
    printf("saxpy takes %u parameters:", cus_kernel_param_count(saxpy));
    for (unsigned int i = 0; i < cus_kernel_param_count(saxpy); i++) {
        size_t offset = 0, size = 0;
        CUS_TRY(cus_kernel_param_info(saxpy, i, &offset, &size));
        printf(" %zu bytes at %zu%s", size, offset,
               i + 1 < cus_kernel_param_count(saxpy) ? "," : "\n");
    }
    return CUS_SUCCESS;
}

static cus_status run(void)
{
    /* No context yet: a library belongs to none. */
    cus_autoptr(cus_library) lib = NULL;
    CUS_TRY(cus_library_load_data(cusk_saxpy.fatbin, cusk_saxpy.fatbin_size, NULL, NULL, &lib));
    cus_autoptr(cus_kernel) saxpy = NULL;
    CUS_TRY(cus_library_get_kernel(lib, "saxpy", &saxpy));
    /* The driver reads a kernel's layout in a context: with none current,
     * the first launch reads it (in its stream's context). */
    printf("layout read at the lookup: %s\n", cus_kernel_layout_known(saxpy) ? "yes" : "no");
    const char *names[8];
    unsigned int count = 0;
    cus_status st = cus_library_kernel_names(lib, names, 8, &count);
    if (st == CUS_SUCCESS) {
        printf("the library holds %u kernel(s):", count);
        for (unsigned int i = 0; i < count && i < 8; i++)
            printf(" %s", names[i]);
        printf("\n");
    } else if (st != CUS_ERROR_NOT_SUPPORTED) { /* before 12.4: not listed */
        return st;
    }

    /* The same kernel in two contexts of device 0. */
    cus_device dev;
    CUS_TRY(cus_device_get(0, &dev));
    cus_autoptr(cus_context) primary = NULL;
    CUS_TRY(cus_context_retain_primary(dev, &primary));
    cus_autoptr(cus_context) own = NULL;
    CUS_TRY(cus_context_create(dev, CUS_CTX_NO_PUSH, &own));
    CUS_TRY(saxpy_in(primary, saxpy, 2.0f, true));
    printf("primary context, on a stream: y = 2x + 1\n");
    CUS_TRY(print_layout(saxpy));
    CUS_TRY(saxpy_in(own, saxpy, 3.0f, true));
    printf("a context of our own, on a stream: y = 3x + 1\n");
    CUS_TRY(saxpy_in(own, saxpy, -1.0f, false));
    printf("a context of our own, NULL stream: y = -x + 1\n");

    /* With no context current, a NULL stream has no context to run in. */
    st = cus_launch(saxpy, 1, 1, 0, NULL, 1.0f, (CUdeviceptr)0, (CUdeviceptr)0, 0ull);
    printf("NULL stream, no context current: %s\n", cus_status_name(st));
    if (st != CUDA_ERROR_INVALID_CONTEXT)
        return CUS_ERROR_INVALID_ARGUMENT;

    /* The kernel holds the library: dropping ours first is fine, and the
     * contexts may go before or after it. */
    lib = cus_library_unref(lib);
    own = cus_context_unref(own);
    CUS_TRY(saxpy_in(primary, saxpy, 0.5f, true));
    printf("after the library reference and a context went: y = 0.5x + 1\n");
    return CUS_SUCCESS;
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
            fprintf(stderr, "tutorial-library: the fake driver failed: %s\n",
                    cus_last_error_message());
            return 1;
        }
        on_fake = true;
    }
    cus_status st = run();
    if (st == CUS_ERROR_NOT_SUPPORTED) { /* a driver before 12.0 */
        printf("%s: skipped\n", cus_last_error_message());
        return 77;
    }
    if (st != CUS_SUCCESS) {
        fprintf(stderr, "tutorial-library: %s (%s)\n", cus_last_error_message(),
                cus_status_name(st));
        return 1;
    }
    if (cus_debug_live_objects() != 0) {
        fprintf(stderr, "tutorial-library: %zu objects still alive\n", cus_debug_live_objects());
        return 1;
    }
    if (on_fake && cus_fake_uninstall() != CUS_SUCCESS) {
        fprintf(stderr, "tutorial-library: %s\n", cus_last_error_message());
        return 1;
    }
    return 0;
}
