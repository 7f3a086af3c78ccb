/* Scenarios with a library (cuscope/library.h) of kernels/: loaded with no
 * context, a kernel looked up and launched on a stream, its result checked
 * against the CPU. Public API only; they run as unit tests on the fake (the
 * kernel as its host twin, harness/twins.c), under the fault sweep on the
 * fake (sweep-librarys), and on the real GPU (gpu-scenarios). A driver
 * before 12.0 has no libraries: the scenario then passes doing nothing.
 * Without nvcc there are no kernels: the list is empty.
 *
 * As in module_scenarios.c: synchronous copies, a blocking stream, exact
 * float data; no name contains "create" or "guards" (test_sweep.c reruns
 * those on a 12.0 driver). */
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
    if (cus_kernel_layout_known(k)) {
        size_t off = 0, size = 0;
        EXPECT(cus_kernel_param_count(k) == 4);
        CUS_TRY(cus_kernel_param_info(k, 3, &off, &size));
        EXPECT(off == 24 && size == 8);
    }

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

const scenario library_scenarios[] = {
    {"library_kernel_on_stream", scn_library_kernel_on_stream},
    {NULL, NULL},
};
#else
const scenario library_scenarios[] = {{NULL, NULL}};
#endif
