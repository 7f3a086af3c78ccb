/* rtc-sum: the sum example (docs/examples/sum.c) with its kernel compiled at
 * run time from a C string by NVRTC (cuscope/program.h), so that it builds
 * without nvcc: it needs the CUDA toolkit's libnvrtc when it runs, not when
 * it is built.
 *
 * The kernel is kernels/sum.cu's, compiled for the device's architecture.
 * Without a GPU it runs on cuscope's fake driver, with a host twin of the
 * kernel (NVRTC runs on the CPU, and the fake loads the PTX it writes).
 * Without NVRTC it says so and exits 77 ("skipped" for meson).
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <cuscope/cuscope.h>
#include <cuscope/fake.h>

#define N 10

static const char sum_source[] =
    "extern \"C\" __global__ void sum(const float *x, const float *y, float *out, int count)\n"
    "{\n"
    "    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count;\n"
    "         i += blockDim.x * gridDim.x)\n"
    "        out[i] = x[i] + y[i];\n"
    "}\n";

/* The kernel's host twin, for the fake driver. */
static CUresult sum_on_host(const cus_fake_launch *launch, void **args, void *user)
{
    (void)launch;
    (void)user;
    const float *x = (const float *)(uintptr_t) * (CUdeviceptr *)args[0];
    const float *y = (const float *)(uintptr_t) * (CUdeviceptr *)args[1];
    float *out = (float *)(uintptr_t) * (CUdeviceptr *)args[2];
    int count = *(int *)args[3];
    for (int i = 0; i < count; i++)
        out[i] = x[i] + y[i];
    return CUDA_SUCCESS;
}

static cus_status run(float result[N])
{
    cus_device dev;
    CUS_TRY(cus_device_get(0, &dev));
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(cus_context_create(dev, CUS_CTX_NO_PUSH, &ctx));
    cus_context_scope(guard, ctx);
    if (guard.status)
        return guard.status;

    /* Compiled for ctx's device (PTX for its compute capability); a
     * compile error would be in cus_last_error_message(). */
    cus_autoptr(cus_program) program = NULL;
    CUS_TRY(cus_program_create(sum_source, "sum.cu", NULL, 0, &program));
    cus_program_options options = {.ctx = ctx};
    CUS_TRY(cus_program_compile(program, &options));
    cus_autoptr(cus_module) module = NULL;
    CUS_TRY(cus_program_load(program, ctx, NULL, &module));
    cus_autoptr(cus_function) sum = NULL;
    CUS_TRY(cus_module_get_function(module, "sum", &sum));

    cus_autoptr(cus_stream) stream = NULL;
    CUS_TRY(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &stream));
    float x[N], y[N];
    for (int i = 0; i < N; i++) {
        x[i] = 1.0f;
        y[i] = 2.0f * (float)i;
    }
    cus_autoptr(cus_buffer) dx = NULL;
    cus_autoptr(cus_buffer) dy = NULL;
    cus_autoptr(cus_buffer) dout = NULL;
    CUS_TRY(cus_buffer_alloc_array(ctx, N, sizeof(float), &dx));
    CUS_TRY(cus_buffer_alloc_array(ctx, N, sizeof(float), &dy));
    CUS_TRY(cus_buffer_alloc_array(ctx, N, sizeof(float), &dout));
    CUS_TRY(cus_copy_to_device(dx, 0, x, sizeof x));
    CUS_TRY(cus_copy_to_device(dy, 0, y, sizeof y));
    CUS_TRY(cus_launch(sum, 1, N, 0, stream, dx, dy, dout, (int)N));
    CUS_TRY(cus_stream_synchronize(stream));
    CUS_TRY(cus_copy_to_host(result, dout, 0, N * sizeof(float)));
    return CUS_SUCCESS;
}

int main(void)
{
    int major, minor;
    if (cus_nvrtc_version(&major, &minor) != CUS_SUCCESS) {
        printf("rtc-sum: skipped: %s\n", cus_last_error_message());
        return 77;
    }
    bool on_fake = false;
    if (cus_init() != CUS_SUCCESS) {
        printf("no GPU here: running on cuscope's fake driver, the kernel on the CPU\n");
        if (cus_fake_install(NULL) != CUS_SUCCESS ||
            cus_fake_register_kernel("sum", sum_on_host, NULL) != CUS_SUCCESS ||
            cus_init() != CUS_SUCCESS) {
            fprintf(stderr, "rtc-sum: the fake driver failed: %s\n", cus_last_error_message());
            return 1;
        }
        on_fake = true;
    }
    float result[N];
    cus_status st = run(result);
    if (st != CUS_SUCCESS) {
        fprintf(stderr, "rtc-sum: %s (%s)\n", cus_last_error_message(), cus_status_name(st));
        return 1;
    }
    int wrong = 0;
    printf("sum compiled by NVRTC %d.%d, run on %s:\n", major, minor,
           on_fake ? "the fake driver" : "the GPU");
    for (int i = 0; i < N; i++) {
        printf("  out[%d] = %g\n", i, result[i]);
        wrong += fabsf(result[i] - (1.0f + 2.0f * (float)i)) > 0.0f;
    }
    if (wrong) {
        fprintf(stderr, "rtc-sum: %d wrong results\n", wrong);
        return 1;
    }
    printf("all %d correct\n", N);
    if (on_fake && (st = cus_fake_uninstall()) != CUS_SUCCESS) {
        fprintf(stderr, "rtc-sum: the fake driver did not uninstall: %s\n", cus_status_name(st));
        return 1;
    }
    return 0;
}
