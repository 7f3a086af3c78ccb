/* Code at run time: a library (cuscope/library.h) of kernels/, loaded with
 * no context, a kernel looked up and launched on a stream, and a kernel
 * compiled by NVRTC (cuscope/program.h), each result checked against the
 * CPU. Public API only; they run as unit tests on the fake (the
 * kernel as its host twin, harness/twins.c), under the fault sweep on the
 * fake (sweep-librarys), and on the real GPU (gpu-scenarios). A driver
 * before 12.0 has no libraries: the scenario then passes doing nothing.
 * Without nvcc there are no kernels: the list is empty.
 *
 * As in module_scenarios.c: synchronous copies, a blocking stream, exact
 * float data; no name contains "create" or "guards" (test_sweep.c reruns
 * those on a 12.0 driver). */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <cuscope/cuscope.h>

#include "scenarios.h"

#ifdef CUS_TEST_HAVE_KERNELS
#include "cusk-images.h"

#define EXPECT(cond)                                                           \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "%s:%d: scenario check failed: %s\n", __FILE__, __LINE__, #cond); \
            return SCN_WRONG;                                                  \
        }                                                                      \
    } while (0)

/* saxpy's fatbin as a library; its kernel launched on a stream of device
 * 0's primary context (which loads the library there), then the kernel
 * alone keeping the library for a second launch. */
static cus_status scn_library_kernel_on_stream(void *arg)
{
    (void)arg;
    enum { N = 1000 };
    cus_autoptr(cus_library) lib = NULL;
    cus_status st =
        cus_library_load_data(cusk_saxpy.fatbin, cusk_saxpy.fatbin_size, NULL, NULL, &lib);
    if (st == CUS_ERROR_NOT_SUPPORTED) { /* never injected: a driver before 12.0 */
        fprintf(stderr, "library scenarios: %s: nothing to run\n", cus_last_error_message());
        return CUS_SUCCESS;
    }
    CUS_TRY(st);
    cus_autoptr(cus_kernel) k = NULL;
    CUS_TRY(cus_library_get_kernel(lib, "saxpy", &k));
    EXPECT(strcmp(cus_kernel_name(k), "saxpy") == 0 && cus_kernel_library(k) == lib);

    cus_device dev;
    CUS_TRY(cus_device_get(0, &dev));
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(cus_context_retain_primary(dev, &ctx));
    float x[N], y[N];
    for (int i = 0; i < N; i++) {
        x[i] = (float)i;
        y[i] = (float)(N - i);
    }
    cus_autoptr(cus_buffer) dx = NULL;
    cus_autoptr(cus_buffer) dy = NULL;
    CUS_TRY(cus_buffer_alloc_n(ctx, float, N, &dx));
    CUS_TRY(cus_buffer_alloc_n(ctx, float, N, &dy));
    CUS_TRY(cus_copy_to_device(dx, 0, x, sizeof x));
    CUS_TRY(cus_copy_to_device(dy, 0, y, sizeof y));
    cus_autoptr(cus_stream) s = NULL;
    CUS_TRY(cus_stream_create(ctx, 0, 0, &s));
    CUS_TRY(cus_launch(k, cus_grid_for(N, 256), 256, 0, s, 2.5f, dx, dy, (unsigned long long)N));
    /* Looked up with no context current, the layout was read by this first
     * launch, in the stream's context (library.h). */
    if (cus_kernel_layout_known(k)) {
        size_t off = 0, size = 0;
        EXPECT(cus_kernel_param_count(k) == 4);
        CUS_TRY(cus_kernel_param_info(k, 3, &off, &size));
        EXPECT(off == 24 && size == 8);
    }
    CUS_TRY(cus_stream_synchronize(s));
    CUS_TRY(cus_copy_to_host(y, dy, 0, sizeof y));
    for (int i = 0; i < N; i++)
        EXPECT(y[i] == 1.5f * (float)i + (float)N);

    /* the kernel reference alone keeps the library */
    lib = cus_library_unref(lib);
    CUS_TRY(cus_launch(k, cus_grid_for(N, 256), 256, 0, s, -1.0f, dx, dy, (unsigned long long)N));
    CUS_TRY(cus_stream_synchronize(s));
    CUS_TRY(cus_copy_to_host(y, dy, 0, sizeof y));
    for (int i = 0; i < N; i++)
        EXPECT(y[i] == 0.5f * (float)i + (float)N);
    return CUS_SUCCESS;
}

/* kernels/sum.cu's kernel given as a string, compiled by NVRTC
 * (cuscope/program.h) for the device's architecture, loaded as a module and
 * as a library, each launched and checked (on the fake, by the harness's
 * twin of `sum`). Without libnvrtc there is nothing to compile: it passes
 * doing nothing. A repeated compile is answered by the cache, so the sweep
 * compiles once. */
static const char sum_source[] =
    "extern \"C\" __global__ void sum(const float *x, const float *y, float *out, int count)\n"
    "{\n"
    "    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count;\n"
    "         i += blockDim.x * gridDim.x)\n"
    "        out[i] = x[i] + y[i];\n"
    "}\n";

static cus_status run_sum(cus_context *ctx, void *fn_or_kernel, bool kernel, cus_stream *s)
{
    enum { N = 777 };
    float x[N], y[N], out[N];
    for (int i = 0; i < N; i++) {
        x[i] = (float)i;
        y[i] = 0.25f * (float)i;
    }
    cus_autoptr(cus_buffer) dx = NULL;
    cus_autoptr(cus_buffer) dy = NULL;
    cus_autoptr(cus_buffer) dout = NULL;
    CUS_TRY(cus_buffer_alloc_n(ctx, float, N, &dx));
    CUS_TRY(cus_buffer_alloc_n(ctx, float, N, &dy));
    CUS_TRY(cus_buffer_alloc_n(ctx, float, N, &dout));
    CUS_TRY(cus_copy_to_device(dx, 0, x, sizeof x));
    CUS_TRY(cus_copy_to_device(dy, 0, y, sizeof y));
    CUS_TRY(cus_buffer_fill_u32(dout, 0, 0x7fc00000u, N)); /* NaN: what is not written shows */
    if (kernel)
        CUS_TRY(cus_launch((cus_kernel *)fn_or_kernel, 2, 128, 0, s, dx, dy, dout, (int)N));
    else
        CUS_TRY(cus_launch((cus_function *)fn_or_kernel, 2, 128, 0, s, dx, dy, dout, (int)N));
    CUS_TRY(cus_stream_synchronize(s));
    CUS_TRY(cus_copy_to_host(out, dout, 0, sizeof out));
    for (int i = 0; i < N; i++)
        EXPECT(out[i] == x[i] + y[i]);
    return CUS_SUCCESS;
}

static cus_status scn_rtc_sum_as_module_and_library(void *arg)
{
    (void)arg;
    int major = 0, minor = 0;
    if (cus_nvrtc_version(&major, &minor) == CUS_ERROR_NOT_SUPPORTED) {
        fprintf(stderr, "rtc scenario: %s: nothing to compile\n", cus_last_error_message());
        return CUS_SUCCESS;
    }
    cus_device dev;
    CUS_TRY(cus_device_get(0, &dev));
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(cus_context_retain_primary(dev, &ctx));
    cus_autoptr(cus_program) prog = NULL;
    CUS_TRY(cus_program_create(sum_source, "sum.cu", NULL, 0, &prog));
    cus_program_options opts = {.target = CUS_PROGRAM_PTX, .ctx = ctx};
    CUS_TRY(cus_program_compile(prog, &opts));
    cus_autoptr(cus_stream) s = NULL;
    CUS_TRY(cus_stream_create(ctx, 0, 0, &s));
    {
        cus_autoptr(cus_module) mod = NULL;
        CUS_TRY(cus_program_load(prog, ctx, NULL, &mod));
        cus_autoptr(cus_function) fn = NULL;
        CUS_TRY(cus_program_get_function(prog, mod, "sum", &fn));
        EXPECT(!cus_function_layout_known(fn) || cus_function_param_count(fn) == 4);
        CUS_TRY(run_sum(ctx, fn, false, s));
    }
    cus_autoptr(cus_library) lib = NULL;
    cus_status st = cus_program_load_library(prog, NULL, &lib);
    if (st == CUS_ERROR_NOT_SUPPORTED) /* never injected: a driver before 12.0 */
        return CUS_SUCCESS;
    CUS_TRY(st);
    cus_autoptr(cus_kernel) k = NULL;
    CUS_TRY(cus_library_get_kernel(lib, "sum", &k));
    EXPECT(!cus_kernel_layout_known(k) || cus_kernel_param_count(k) == 4);
    return run_sum(ctx, k, true, s);
}

const scenario library_scenarios[] = {
    {"library_kernel_on_stream", scn_library_kernel_on_stream},
    {"rtc_sum_as_module_and_library", scn_rtc_sum_as_module_and_library},
    {NULL, NULL},
};
#else
const scenario library_scenarios[] = {{NULL, NULL}};
#endif
