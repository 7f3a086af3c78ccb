/* JIT linking on the real driver (suite gpu; exit 77 without a driver or
 * device, or without the link inputs): link_main calls link_lib's
 * __device__ function; linked with nvJitLink (LTO-IR; relocatable cubins)
 * and with the driver's cuLink* (PTX; relocatable cubins), loaded, launched,
 * the result checked. Also prints what cuLinkComplete answers for an
 * unresolved symbol (the fake answers CUDA_ERROR_UNKNOWN, nvJitLink 13.0's
 * code: cuscope/fake.h asks for the driver's). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuscope/cuscope.h>

#include "harness/env.h"

#ifdef CUS_TEST_HAVE_LINK_KERNELS
#include "cusk-link.h"

static int failures;

#define CHECK(expr)                                                            \
    do {                                                                       \
        cus_status st_ = (expr);                                               \
        if (st_ != CUS_SUCCESS) {                                              \
            printf("FAIL %s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #expr,    \
                   cus_status_name(st_), cus_last_error_message());            \
            failures++;                                                        \
            return;                                                            \
        }                                                                      \
    } while (0)

typedef struct in {
    cus_link_input type;
    const unsigned char *data;
    size_t size;
} in;

static void link_run(cus_context *c, const char *what, const cus_link_options *o, const in *inputs,
                     size_t n)
{
    cus_autoptr(cus_linker) l = NULL;
    CHECK(cus_linker_create(c, o, &l));
    for (size_t i = 0; i < n; i++)
        CHECK(cus_linker_add_data(l, inputs[i].type, inputs[i].data, inputs[i].size, what));
    const void *cubin = NULL;
    size_t size = 0;
    CHECK(cus_linker_complete(l, &cubin, &size));
    cus_autoptr(cus_module) m = NULL;
    CHECK(cus_linker_load(l, NULL, &m));
    cus_autoptr(cus_function) f = NULL;
    CHECK(cus_module_get_function(m, "link_scale", &f));
    enum { N = 1000 };
    float x[N];
    for (int i = 0; i < N; i++)
        x[i] = (float)i;
    cus_autoptr(cus_buffer) b = NULL;
    CHECK(cus_buffer_alloc(c, sizeof x, &b));
    CHECK(cus_copy_to_device(b, 0, x, sizeof x));
    CHECK(cus_launch(f, cus_grid_for(N, 128), 128, 0, NULL, b, (int)N));
    CHECK(cus_copy_to_host(x, b, 0, sizeof x));
    for (int i = 0; i < N; i++)
        if (x[i] != 2.0f * (float)i + 1.0f) {
            printf("FAIL %s: x[%d] = %g, want %g\n", what, i, (double)x[i], 2.0 * i + 1.0);
            failures++;
            return;
        }
    printf("ok   %s: %s backend, %zu-byte image, x[i] = 2i + 1 for %d elements\n", what,
           cus_linker_backend(l) == CUS_LINK_BACKEND_NVJITLINK ? "nvJitLink" : "cuLink*", size,
           N);
}
#endif

int main(void)
{
    env_require_driver_or_skip();
#ifndef CUS_TEST_HAVE_LINK_KERNELS
    printf("skipping: no nvcc at build time, no link inputs\n");
    return 77;
#else
    cus_device dev;
    cus_context *c = NULL;
    if (cus_device_get(0, &dev) || cus_context_retain_primary(dev, &c)) {
        printf("FAIL: no context: %s\n", cus_last_error_message());
        return 1;
    }
    const in ltoir[] = {{CUS_LINK_INPUT_LTOIR, cusk_link_main_ltoir, cusk_link_main_ltoir_size},
                        {CUS_LINK_INPUT_LTOIR, cusk_link_lib_ltoir, cusk_link_lib_ltoir_size}};
    const in cubins[] = {{CUS_LINK_INPUT_CUBIN, cusk_link_main_cubin, cusk_link_main_cubin_size},
                         {CUS_LINK_INPUT_CUBIN, cusk_link_lib_cubin, cusk_link_lib_cubin_size}};
    const in ptx[] = {{CUS_LINK_INPUT_PTX, cusk_link_main_ptx, cusk_link_main_ptx_size + 1},
                      {CUS_LINK_INPUT_PTX, cusk_link_lib_ptx, cusk_link_lib_ptx_size + 1}};
    cus_link_options nj = {.backend = CUS_LINK_BACKEND_NVJITLINK, .lto = true};
    cus_link_options nj_plain = {.backend = CUS_LINK_BACKEND_NVJITLINK};
    cus_link_options drv = {.backend = CUS_LINK_BACKEND_DRIVER};
    if (cus_link_nvjitlink_version(NULL, NULL) == CUS_SUCCESS) {
        link_run(c, "nvJitLink LTO-IR", &nj, ltoir, 2);
        link_run(c, "nvJitLink cubins", &nj_plain, cubins, 2);
    } else {
        printf("FAIL nvJitLink does not load: %s\n", cus_last_error_message());
        failures++;
    }
    link_run(c, "cuLink* PTX", &drv, ptx, 2);
    link_run(c, "cuLink* cubins", &drv, cubins, 2);
    /* the driver's answer to an unresolved symbol, for cuscope/fake.h */
    cus_linker *l = NULL;
    if (cus_linker_create(c, &drv, &l) == CUS_SUCCESS) {
        cus_status st = cus_linker_add_data(l, CUS_LINK_INPUT_PTX, cusk_link_main_ptx,
                                            cusk_link_main_ptx_size + 1, "main.ptx");
        if (st == CUS_SUCCESS)
            st = cus_linker_complete(l, NULL, NULL);
        printf("info cuLinkComplete with an unresolved symbol: %s (the fake answers "
               "CUDA_ERROR_UNKNOWN): %s\n", cus_status_name(st), cus_linker_error_log(l));
        l = cus_linker_unref(l);
    }
    c = cus_context_unref(c);
    printf("%s\n", failures ? "gpu-link: FAILED" : "gpu-link: all links ran on the device");
    return failures ? 1 : 0;
#endif
}
