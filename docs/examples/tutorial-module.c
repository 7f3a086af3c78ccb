/* tutorial-module: loading device code, its kernels and its globals
 * (docs/tutorial.md, "2. Module").
 *
 * Loads kernels/globals.cu as PTX text (JIT-compiled by the driver), looks up
 * a kernel (twice: the same object, one driver call), reads and writes its
 * __constant__ and __device__ variables, shows that a function keeps its
 * module alive, and what a broken PTX image gives: the status and the JIT's
 * error log in the message. Without a GPU it runs on the fake driver, which
 * parses the same PTX.
 */
#include <stdbool.h>
#include <stdio.h>

#include <cuscope/cuscope.h>
#include <cuscope/fake.h>

#include "cusk-images.h"

static const char broken_ptx[] = ".version 7.0\n"
                                 ".target sm_80\n"
                                 ".address_size 64\n"
                                 ".visible .entry broken()\n"
                                 "{\n"
                                 "\tfrobnicate;\n"
                                 "}\n";

static cus_status run(void)
{
    cus_device dev;
    CUS_TRY(cus_device_get(0, &dev));
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(cus_context_retain_primary(dev, &ctx));

    /* The size lets cuscope check the image before the driver reads it; the
     * PTX's size includes its NUL. */
    cus_autoptr(cus_module) module = NULL;
    CUS_TRY(cus_module_load_data(ctx, cusk_globals.ptx, cusk_globals.ptx_size + 1, NULL,
                                 &module));
    printf("loaded a %s image; JIT info log: \"%s\"\n",
           cus_image_format_name(cus_module_format(module)), cus_module_info_log(module));

    /* A function is part of its module: the second lookup of a name returns
     * the same object, without a driver call. */
    cus_autoptr(cus_function) fn = NULL;
    cus_autoptr(cus_function) again = NULL;
    CUS_TRY(cus_module_get_function(module, "scale_by_coeffs", &fn));
    CUS_TRY(cus_module_get_function(module, "scale_by_coeffs", &again));
    printf("kernel %s: looked up twice, %s object\n", cus_function_name(fn),
           fn == again ? "the same" : "another");
    if (cus_function_layout_known(fn))
        printf("  %u parameters (the driver has cuFuncGetParamInfo)\n",
               cus_function_param_count(fn));

    cus_function *missing = NULL;
    cus_status st = cus_module_get_function(module, "no_such_kernel", &missing);
    printf("an unknown name: %s\n  %s\n", cus_status_name(st), cus_last_error_message());
    if (st != CUDA_ERROR_NOT_FOUND)
        return CUS_ERROR_INVALID_ARGUMENT;

    /* Globals, bounds-checked against their size. */
    size_t bytes = 0;
    CUS_TRY(cus_module_get_global(module, "cusk_coeffs", NULL, &bytes));
    float coeffs[4];
    CUS_TRY(cus_module_copy_from_global(coeffs, module, "cusk_coeffs", 0, sizeof coeffs));
    printf("__constant__ cusk_coeffs: %zu bytes = {%g, %g, %g, %g}\n", bytes, coeffs[0],
           coeffs[1], coeffs[2], coeffs[3]);
    unsigned int counter = 0, reset = 100;
    CUS_TRY(cus_module_copy_from_global(&counter, module, "cusk_counter", 0, sizeof counter));
    CUS_TRY(cus_module_copy_to_global(module, "cusk_counter", 0, &reset, sizeof reset));
    CUS_TRY(cus_module_copy_from_global(&reset, module, "cusk_counter", 0, sizeof reset));
    printf("__device__ cusk_counter: was %u, now %u\n", counter, reset);
    st = cus_module_copy_to_global(module, "cusk_counter", 2, &reset, sizeof reset);
    printf("4 bytes at offset 2 of it: %s\n", cus_status_name(st));
    if (st != CUS_ERROR_OUT_OF_RANGE)
        return CUS_ERROR_INVALID_ARGUMENT;

    /* Our module reference can go: the functions keep the module loaded. */
    module = cus_module_unref(module);
    again = cus_function_unref(again);
    printf("dropped the module: %s still belongs to a loaded module (%p)\n",
           cus_function_name(fn), (void *)cus_module_handle(cus_function_module(fn)));

    /* A broken image: the driver's status, and the JIT log in the message. */
    cus_module *bad = NULL;
    st = cus_module_load_data(ctx, broken_ptx, sizeof broken_ptx, NULL, &bad);
    printf("loading broken PTX: %s\n  %s\n", cus_status_name(st), cus_last_error_message());
    if (st == CUS_SUCCESS) {
        bad = cus_module_unref(bad);
        return CUS_ERROR_INVALID_ARGUMENT;
    }
    return CUS_SUCCESS; /* fn goes, and with it the module */
}

int main(void)
{
    bool on_fake = false;
    if (cus_init() != CUS_SUCCESS) {
        printf("%s\n", cus_last_error_message());
        printf("no GPU here: running on cuscope's fake driver\n");
        if (cus_fake_install(NULL) != CUS_SUCCESS || cus_init() != CUS_SUCCESS) {
            fprintf(stderr, "tutorial-module: the fake driver failed: %s\n",
                    cus_last_error_message());
            return 1;
        }
        on_fake = true;
    }

    cus_status st = run();
    if (st != CUS_SUCCESS) {
        fprintf(stderr, "tutorial-module: %s (%s)\n", cus_last_error_message(),
                cus_status_name(st));
        return 1;
    }
    if (cus_debug_live_objects() != 0) {
        fprintf(stderr, "tutorial-module: %zu objects still alive\n", cus_debug_live_objects());
        return 1;
    }
    if (on_fake && cus_fake_uninstall() != CUS_SUCCESS) {
        fprintf(stderr, "tutorial-module: %s\n", cus_last_error_message());
        return 1;
    }
    return 0;
}
