/* tutorial-rtc: compiling CUDA C++ at run time (docs/tutorial.md,
 * "Compiling at run time").
 *
 * A templated kernel and a header, given as strings, compiled by NVRTC with
 * options and a name expression; the mangled name it gets; a compile error
 * and its log; the compile cache; and the kernel loaded and launched through
 * cus_launch. Without a GPU it runs on the fake driver (with a host twin of
 * the kernel); without NVRTC it says so and exits 77.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cuscope/cuscope.h>
#include <cuscope/fake.h>

static const char source[] =
    "#include \"axpy.h\"\n"
    "template <typename T>\n"
    "__global__ void axpy(T a, const T *x, T *y, unsigned n)\n"
    "{\n"
    "    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n)\n"
    "        y[i] = AXPY(a, x[i], y[i]);\n"
    "}\n";
static const char header[] = "#define AXPY(a, x, y) ((a) * (x) + (y))\n";

/* axpy<float>'s host twin; the fake finds it by the mangled name. */
static CUresult axpy_on_host(const cus_fake_launch *launch, void **args, void *user)
{
    (void)launch;
    (void)user;
    float a = *(float *)args[0];
    const float *x = (const float *)(uintptr_t) * (CUdeviceptr *)args[1];
    float *y = (float *)(uintptr_t) * (CUdeviceptr *)args[2];
    unsigned n = *(unsigned *)args[3];
    for (unsigned i = 0; i < n; i++)
        y[i] = a * x[i] + y[i];
    return CUDA_SUCCESS;
}

static cus_status run(bool on_fake)
{
    cus_device dev;
    CUS_TRY(cus_device_get(0, &dev));
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(cus_context_retain_primary(dev, &ctx));

    /* 1. A program: the source, its name in messages, its headers. */
    cus_program_header headers[] = {{"axpy.h", header}};
    cus_autoptr(cus_program) program = NULL;
    CUS_TRY(cus_program_create(source, "axpy.cu", headers, 1, &program));

    /* 2. Compiled for ctx's device, with a name expression for the
     *    instantiation we want. */
    const char *names[] = {"axpy<float>"};
    cus_program_options options = {
        .ctx = ctx,
        .std = "c++17",
        .line_info = true,
        .name_expressions = names,
        .nname_expressions = 1,
    };
    CUS_TRY(cus_program_compile(program, &options));
    const char *mangled = NULL;
    CUS_TRY(cus_program_lowered_name(program, "axpy<float>", &mangled));
    printf("axpy<float> is %s in the module\n", mangled);
    if (on_fake)
        CUS_TRY(cus_fake_register_kernel(mangled, axpy_on_host, NULL));

    /* 3. A compile error: the log is in the message, and in the program. */
    cus_autoptr(cus_program) broken = NULL;
    CUS_TRY(cus_program_create("__global__ void k() { undefined_name(); }", "broken.cu", NULL,
                               0, &broken));
    cus_program_options plain = {.ctx = ctx};
    if (cus_program_compile(broken, &plain) == CUDA_ERROR_INVALID_SOURCE)
        printf("a compile error, as expected; its log says:\n%s", cus_program_log(broken));

    /* 4. The same compile again comes from the cache: no NVRTC call. */
    cus_autoptr(cus_program) again = NULL;
    CUS_TRY(cus_program_create(source, "axpy.cu", headers, 1, &again));
    CUS_TRY(cus_program_compile(again, &options));
    cus_program_cache_stats stats;
    cus_program_cache_get_stats(&stats);
    printf("second compile from the cache: %s (%lu hit, %zu entries)\n",
           cus_program_from_cache(again) ? "yes" : "no", stats.hits, stats.entries);

    /* 5. Loaded and launched: the name expression finds the kernel. */
    cus_autoptr(cus_module) module = NULL;
    CUS_TRY(cus_program_load(program, ctx, NULL, &module));
    cus_autoptr(cus_function) axpy = NULL;
    CUS_TRY(cus_program_get_function(program, module, "axpy<float>", &axpy));
    enum { N = 256 };
    float x[N], y[N];
    for (int i = 0; i < N; i++) {
        x[i] = (float)i;
        y[i] = 1.0f;
    }
    cus_autoptr(cus_stream) stream = NULL;
    CUS_TRY(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &stream));
    cus_autoptr(cus_buffer) dx = NULL;
    cus_autoptr(cus_buffer) dy = NULL;
    CUS_TRY(cus_buffer_alloc(ctx, sizeof x, &dx));
    CUS_TRY(cus_buffer_alloc(ctx, sizeof y, &dy));
    CUS_TRY(cus_copy_to_device(dx, 0, x, sizeof x));
    CUS_TRY(cus_copy_to_device(dy, 0, y, sizeof y));
    CUS_TRY(cus_launch(axpy, 1, N, 0, stream, 2.0f, dx, dy, (unsigned)N));
    CUS_TRY(cus_stream_synchronize(stream));
    CUS_TRY(cus_copy_to_host(y, dy, 0, sizeof y));
    for (int i = 0; i < N; i++)
        if (y[i] != 2.0f * (float)i + 1.0f) {
            fprintf(stderr, "tutorial-rtc: y[%d] = %g\n", i, y[i]);
            return CUS_ERROR_INVALID_ARGUMENT;
        }
    printf("y = 2x + 1 over %d elements: correct\n", N);
    return CUS_SUCCESS;
}

int main(void)
{
    int major, minor;
    if (cus_nvrtc_version(&major, &minor) != CUS_SUCCESS) {
        printf("tutorial-rtc: skipped: %s\n", cus_last_error_message());
        return 77;
    }
    printf("NVRTC %d.%d (%s)\n", major, minor, cus_nvrtc_library());
    bool on_fake = false;
    if (cus_init() != CUS_SUCCESS) {
        printf("no GPU: on the fake driver\n");
        if (cus_fake_install(NULL) != CUS_SUCCESS || cus_init() != CUS_SUCCESS) {
            fprintf(stderr, "tutorial-rtc: %s\n", cus_last_error_message());
            return 1;
        }
        on_fake = true;
    }
    cus_status st = run(on_fake);
    if (st != CUS_SUCCESS) {
        fprintf(stderr, "tutorial-rtc: %s (%s)\n", cus_last_error_message(), cus_status_name(st));
        return 1;
    }
    if (on_fake && cus_fake_uninstall() != CUS_SUCCESS)
        return 1;
    return 0;
}
