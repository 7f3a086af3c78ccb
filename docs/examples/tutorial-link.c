/* tutorial-link: JIT linking (docs/tutorial.md, "12. JIT linking").
 *
 * kernels/link/link_main.cu's kernel calls a __device__ function that
 * link_lib.cu defines; both were compiled relocatable (nvcc -rdc=true) at
 * build time. This links them into one image, loads it, launches the kernel
 * and checks x[i] = 2 * x[i] + 1: with nvJitLink (LTO-IR, -lto) where it
 * loads, and with the driver's linker (PTX inputs). Then it shows what an
 * unresolved symbol gives: the linker's error log in the message. Without a
 * GPU it runs on the fake driver, whose linker takes PTX, with a host
 * version of the kernel.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cuscope/cuscope.h>
#include <cuscope/fake.h>

#include "cusk-link.h"

enum { N = 256 };

/* The kernel's host version, for the fake driver. */
static CUresult link_scale_on_host(const cus_fake_launch *l, void **args, void *user)
{
    (void)user;
    CUdeviceptr p;
    int n;
    memcpy(&p, args[0], sizeof p);
    memcpy(&n, args[1], sizeof n);
    float *x = (float *)(uintptr_t)p;
    for (unsigned long i = 0; i < (unsigned long)l->grid[0] * l->block[0] && i < (unsigned long)n; i++)
        x[i] = 2.0f * x[i] + 1.0f;
    return CUDA_SUCCESS;
}

/* Loads the linker's image, runs link_scale on N floats, checks them. */
static cus_status load_and_run(cus_context *ctx, cus_linker *linker)
{
    cus_autoptr(cus_module) module = NULL;
    CUS_TRY(cus_linker_load(linker, NULL, &module)); /* completes the link if needed */
    cus_autoptr(cus_function) fn = NULL;
    CUS_TRY(cus_module_get_function(module, "link_scale", &fn));
    float x[N];
    for (int i = 0; i < N; i++)
        x[i] = (float)i;
    cus_autoptr(cus_buffer) buf = NULL;
    CUS_TRY(cus_buffer_alloc(ctx, sizeof x, &buf));
    CUS_TRY(cus_copy_to_device(buf, 0, x, sizeof x));
    CUS_TRY(cus_launch(fn, cus_grid_for(N, 128), 128, 0, NULL, buf, (int)N));
    CUS_TRY(cus_copy_to_host(x, buf, 0, sizeof x));
    for (int i = 0; i < N; i++)
        if (x[i] != 2.0f * (float)i + 1.0f) {
            printf("x[%d] = %g: wrong\n", i, (double)x[i]);
            return CUS_ERROR_INVALID_ARGUMENT;
        }
    printf("  linked, loaded, launched: x[i] = 2i + 1 for all %d elements\n", N);
    return CUS_SUCCESS;
}

static cus_status run(void)
{
    cus_device dev;
    CUS_TRY(cus_device_get(0, &dev));
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(cus_context_retain_primary(dev, &ctx));

    /* 1. nvJitLink: LTO-IR needs -lto; the target is the context's device. */
    int major = 0, minor = 0;
    if (cus_link_nvjitlink_version(&major, &minor) == CUS_SUCCESS) {
        printf("nvJitLink %d.%d: linking two LTO-IR inputs\n", major, minor);
        cus_link_options lto = {.backend = CUS_LINK_BACKEND_NVJITLINK, .lto = true};
        cus_autoptr(cus_linker) linker = NULL;
        CUS_TRY(cus_linker_create(ctx, &lto, &linker));
        CUS_TRY(cus_linker_add_data(linker, CUS_LINK_INPUT_LTOIR, cusk_link_main_ltoir,
                                    cusk_link_main_ltoir_size, "link_main.ltoir"));
        CUS_TRY(cus_linker_add_data(linker, CUS_LINK_INPUT_LTOIR, cusk_link_lib_ltoir,
                                    cusk_link_lib_ltoir_size, "link_lib.ltoir"));
        const void *cubin = NULL; /* the linker's: valid as long as it */
        size_t size = 0;
        CUS_TRY(cus_linker_complete(linker, &cubin, &size));
        printf("  a %zu-byte %s\n", size, cus_image_format_name(cus_module_image_format(cubin, size)));
        CUS_TRY(load_and_run(ctx, linker));
    } else {
        printf("no nvJitLink here (%s)\n", cus_last_error_message());
    }

    /* 2. The driver's linker (cuLink*): PTX inputs, sizes with their NUL. */
    printf("the driver's linker: two PTX inputs\n");
    cus_link_options driver = {.backend = CUS_LINK_BACKEND_DRIVER};
    cus_autoptr(cus_linker) linker = NULL;
    CUS_TRY(cus_linker_create(ctx, &driver, &linker));
    CUS_TRY(cus_linker_add_data(linker, CUS_LINK_INPUT_PTX, cusk_link_main_ptx,
                                cusk_link_main_ptx_size + 1, "link_main.ptx"));
    CUS_TRY(cus_linker_add_data(linker, CUS_LINK_INPUT_PTX, cusk_link_lib_ptx,
                                cusk_link_lib_ptx_size + 1, "link_lib.ptx"));
    CUS_TRY(load_and_run(ctx, linker));

    /* 3. A link that misses a definition: the log is in the message. */
    cus_autoptr(cus_linker) broken = NULL;
    CUS_TRY(cus_linker_create(ctx, &driver, &broken));
    CUS_TRY(cus_linker_add_data(broken, CUS_LINK_INPUT_PTX, cusk_link_main_ptx,
                                cusk_link_main_ptx_size + 1, "link_main.ptx"));
    cus_status st = cus_linker_complete(broken, NULL, NULL);
    printf("linking link_main alone: %s\n  %s\n", cus_status_name(st), cus_last_error_message());
    return st != CUS_SUCCESS ? CUS_SUCCESS : CUS_ERROR_INVALID_ARGUMENT;
}

int main(void)
{
    bool on_fake = false;
    if (cus_init() != CUS_SUCCESS) {
        printf("%s\n", cus_last_error_message());
        printf("no GPU here: running on cuscope's fake driver\n");
        if (cus_fake_install(NULL) != CUS_SUCCESS || cus_init() != CUS_SUCCESS ||
            cus_fake_register_kernel("link_scale", link_scale_on_host, NULL) != CUS_SUCCESS) {
            fprintf(stderr, "tutorial-link: the fake driver failed: %s\n",
                    cus_last_error_message());
            return 1;
        }
        on_fake = true;
    }
    cus_status st = run();
    if (st != CUS_SUCCESS) {
        fprintf(stderr, "tutorial-link: %s (%s)\n", cus_last_error_message(),
                cus_status_name(st));
        return 1;
    }
    if (cus_debug_live_objects() != 0) {
        fprintf(stderr, "tutorial-link: %zu objects still alive\n", cus_debug_live_objects());
        return 1;
    }
    if (on_fake && cus_fake_uninstall() != CUS_SUCCESS) {
        fprintf(stderr, "tutorial-link: %s\n", cus_last_error_message());
        return 1;
    }
    return 0;
}
