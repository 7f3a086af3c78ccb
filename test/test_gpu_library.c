/* gpu-library: kernels/saxpy loaded as a module and as a library on the real
 * driver (gpu suite; exits 77 without a driver or device).
 *
 *   - in each form (PTX, the fatbin, the device's cubin): a module and a
 *     library of the same bytes, saxpy launched through cus_launch as the
 *     module's function and as the library's kernel (on a stream, and with
 *     a NULL stream in the current context), both results compared with the
 *     CPU's;
 *   - each library kernel's parameter layout (cuKernelGetParamInfo, through
 *     cus_kernel_param_info) against the fake driver's image parser
 *     (fake_image_parse, compiled in) and the module function's layout;
 *   - one summary line:
 *       gpu-library: N form(s), M launch(es) match the CPU; R parameter rows, X mismatch(es)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuscope/library.h>

#include "harness/check.h"
#include "harness/env.h"

#include "cusk-images.h"
#include "fake_image.h"

static cus_context *ctx; /* device 0's primary context, for each test */
static int device_sm;    /* e.g. 90 */

static int gpu_setup(void **state)
{
    if (env_setup(state))
        return -1;
    cus_device dev;
    int major = 0, minor = 0;
    if (cus_device_get(0, &dev) || cus_device_compute_capability(dev, &major, &minor) ||
        cus_context_retain_primary(dev, &ctx)) {
        fprintf(stderr, "setup: %s\n", cus_last_error_message());
        return -1;
    }
    device_sm = major * 10 + minor;
    return 0;
}

static int gpu_teardown(void **state)
{
    ctx = cus_context_unref(ctx);
    return env_teardown(state);
}

#define GPU_TEST(f) cmocka_unit_test_setup_teardown(f, gpu_setup, gpu_teardown)

typedef struct form {
    const char *name; /* "PTX", "fatbin", "cubin" */
    const void *data;
    size_t size;      /* readable bytes: PTX with its NUL */
} form;

static int forms_of(const cusk_image *img, form out[3])
{
    int n = 0;
    out[n++] = (form){"PTX", img->ptx, img->ptx_size + 1};
    out[n++] = (form){"fatbin", img->fatbin, img->fatbin_size};
    const cusk_cubin *c = cusk_cubin_for(img, device_sm);
    if (c)
        out[n++] = (form){"cubin", c->data, c->size};
    else
        printf("note: no sm_%d cubin of %s in kernels/ (option kernel_archs): that form is "
               "not tested\n",
               device_sm, img->name);
    return n;
}

typedef enum { AS_FUNCTION, AS_KERNEL } callee_kind;

/* saxpy through cus_launch of callee (a cus_function * or a cus_kernel *)
 * on s (NULL: ctx current), 2^20 + 3 elements; a * x exact, so the device's
 * fma and the CPU agree exactly. Returns the number of wrong elements, or
 * -1 on an error. */
static long run_saxpy(callee_kind kind, void *callee, cus_stream *s, const char *what)
{
    const size_t n = ((size_t)1 << 20) + 3;
    const float a = 0.75f;
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), *want = malloc(n * sizeof *want);
    assert_true(x && y && want);
    for (size_t i = 0; i < n; i++) {
        x[i] = (float)(i % 1024);
        y[i] = (float)(i % 999);
        want[i] = a * x[i] + y[i];
    }
    long wrong = -1;
    cus_buffer *dx = NULL, *dy = NULL;
    cus_status st;
    if (!(st = cus_buffer_alloc_n(ctx, float, n, &dx)) &&
        !(st = cus_buffer_alloc_n(ctx, float, n, &dy)) &&
        !(st = cus_copy_to_device(dx, 0, x, n * sizeof *x)) &&
        !(st = cus_copy_to_device(dy, 0, y, n * sizeof *y))) {
        unsigned int grid = cus_grid_for(n, 256);
        if (kind == AS_FUNCTION)
            st = cus_launch((cus_function *)callee, grid, 256, 0, s, a, dx, dy,
                            (unsigned long long)n);
        else
            st = cus_launch((cus_kernel *)callee, grid, 256, 0, s, a, dx, dy,
                            (unsigned long long)n);
        if (!st)
            st = s ? cus_stream_synchronize(s) : cus_context_synchronize(ctx);
        if (!st)
            st = cus_copy_to_host(y, dy, 0, n * sizeof *y);
        if (!st) {
            wrong = 0;
            for (size_t i = 0; i < n; i++)
                if (y[i] != want[i]) {
                    if (!wrong)
                        printf("  %s: y[%zu] = %g, expected %g\n", what, i, (double)y[i],
                               (double)want[i]);
                    wrong++;
                }
        }
    }
    if (st)
        printf("  %s: %s\n", what, cus_last_error_message());
    cus_buffer_unref(dx);
    cus_buffer_unref(dy);
    free(x);
    free(y);
    free(want);
    return wrong;
}

static void test_saxpy_as_module_and_library(void **state)
{
    (void)state;
    form forms[3];
    int nforms = forms_of(&cusk_saxpy, forms);
    int launches = 0, failures = 0, rows = 0, mismatches = 0;
    bool layouts = true;
    printf("\nsaxpy as a module and as a library\n");
    printf("%-7s %-28s %s\n", "form", "launch", "result");
    for (int f = 0; f < nforms; f++) {
        cus_autoptr(cus_module) m = NULL;
        cus_autoptr(cus_library) lib = NULL;
        cus_autoptr(cus_function) fn = NULL;
        cus_autoptr(cus_kernel) k = NULL;
        cus_autoptr(cus_stream) s = NULL;
        if (cus_module_load_data(ctx, forms[f].data, forms[f].size, NULL, &m) ||
            cus_module_get_function(m, "saxpy", &fn))
            fail_msg("module of saxpy as %s: %s", forms[f].name, cus_last_error_message());
        cus_status st = cus_library_load_data(forms[f].data, forms[f].size, NULL, NULL, &lib);
        if (st == CUS_ERROR_NOT_SUPPORTED) {
            printf("the driver has no libraries (12.0+): %s\n", cus_last_error_message());
            fn = cus_function_unref(fn); /* skip() jumps past the autoptrs */
            m = cus_module_unref(m);
            skip();
        }
        if (st || cus_library_get_kernel(lib, "saxpy", &k))
            fail_msg("library of saxpy as %s: %s", forms[f].name, cus_last_error_message());
        assert_ok(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &s));

        struct {
            const char *what;
            callee_kind kind;
            void *callee;
            cus_stream *s;
        } runs[] = {
            {"module function, stream", AS_FUNCTION, fn, s},
            {"library kernel, stream", AS_KERNEL, k, s},
            {"library kernel, NULL stream", AS_KERNEL, k, NULL},
        };
        for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
            bool pushed = runs[r].s == NULL;
            if (pushed)
                assert_ok(cus_context_push(ctx));
            long wrong = run_saxpy(runs[r].kind, runs[r].callee, runs[r].s, runs[r].what);
            if (pushed)
                assert_ok(cus_context_pop(NULL));
            launches++;
            failures += wrong != 0;
            printf("%-7s %-28s %s\n", forms[f].name, runs[r].what,
                   wrong == 0   ? "ok: matches the CPU"
                   : wrong > 0 ? "WRONG RESULT"
                               : "ERROR");
        }

        /* the kernel's layout against the parser's and the function's */
        if (!cus_kernel_layout_known(k)) {
            layouts = false;
            continue;
        }
        fake_image *fi = NULL;
        char err[2048] = "";
        CUresult r = fake_image_parse(forms[f].data, forms[f].size, (unsigned)device_sm, &fi, err,
                                      sizeof err, NULL, 0);
        if (r != CUDA_SUCCESS)
            fail_msg("the fake's parser refuses saxpy as %s: %d: %s", forms[f].name, (int)r, err);
        const fake_image_function *ff = fake_image_find_function(fi, "saxpy");
        unsigned int kn = cus_kernel_param_count(k);
        size_t fake_n = ff ? ff->nparams : 0;
        size_t n = kn > fake_n ? kn : fake_n;
        if (!ff || kn != fake_n)
            mismatches++;
        for (size_t i = 0; i < n; i++) {
            size_t ko = 0, ks = 0, fo = 0, fs = 0;
            bool have_k = i < kn && cus_kernel_param_info(k, (unsigned)i, &ko, &ks) == 0;
            bool have_p = i < fake_n;
            bool have_f = cus_function_layout_known(fn) &&
                          cus_function_param_info(fn, (unsigned)i, &fo, &fs) == 0;
            bool match = have_k && have_p && ko == ff->params[i].offset &&
                         ks == ff->params[i].size && (!have_f || (fo == ko && fs == ks));
            mismatches += !match;
            rows++;
            printf("%-7s param %zu: kernel %zu/%zu, parser %zu/%zu, function %zu/%zu  %s\n",
                   forms[f].name, i, ko, ks, have_p ? ff->params[i].offset : 0,
                   have_p ? ff->params[i].size : 0, fo, fs, match ? "yes" : "MISMATCH");
        }
        fake_image_free(fi);
    }
    printf("gpu-library: %d form(s), %d of %d launch(es) match the CPU; %d parameter rows, "
           "%d mismatch(es)%s\n\n",
           nforms, launches - failures, launches, rows, mismatches,
           layouts ? "" : " (no cuKernelGetParamInfo: layouts not compared)");
    if (failures)
        fail_msg("%d launch(es) failed (see above)", failures);
    if (mismatches)
        fail_msg("%d parameter(s) where the kernel's layout disagrees", mismatches);
}

/* When does the driver compile a library's PTX? An H200 (driver 580.159.04,
 * 2026-12-05) loads broken PTX and refuses it at cuLibraryGetKernel with
 * CUDA_ERROR_INVALID_PTX: the JIT runs at the first use (lazy loading, the
 * default since 12.2), after cuLibraryLoadData returned, and writes the JIT
 * logs then; cuscope keeps the option arrays and log buffers with the
 * library for it (lib/library.c, jit_buffers) and puts the error log into
 * the lookup's message. The fake does the same (test_library.c). */
static void test_broken_ptx_library_fails_at_first_use(void **state)
{
    (void)state;
    const char *hdr = strstr(cusk_saxpy.ptx, ".version");
    const char *tgt = strstr(cusk_saxpy.ptx, ".target");
    assert_non_null(hdr);
    assert_non_null(tgt);
    char text[512];
    snprintf(text, sizeof text,
             "%.*s\n%.*s\n.address_size 64\n\n.visible .entry broken()\n{\n"
             "\tfrobnicate.u32 %%r1;\n\tret;\n}\n",
             (int)strcspn(hdr, "\n"), hdr, (int)strcspn(tgt, "\n"), tgt);
    cus_library *lib = NULL;
    cus_status st = cus_library_load_data(text, strlen(text) + 1, NULL, NULL, &lib);
    printf("gpu-library: broken PTX, cus_library_load_data: %s\n  %s\n", cus_status_name(st),
           st ? cus_last_error_message() : "(loaded)");
    if (st) {
        /* a driver that compiles at the load (CUDA_MODULE_LOADING=EAGER) */
        assert_int_equal(st, CUDA_ERROR_INVALID_PTX);
        assert_non_null(strstr(cus_last_error_message(), "frobnicate"));
        return;
    }
    cus_kernel *k = NULL;
    cus_status sk = cus_library_get_kernel(lib, "broken", &k);
    char msg[2048];
    snprintf(msg, sizeof msg, "%s", sk ? cus_last_error_message() : "");
    printf("gpu-library: then cus_library_get_kernel: %s\n  %s\n", cus_status_name(sk), msg);
    cus_kernel_unref(k);
    cus_library_unref(lib);
    assert_int_equal(sk, CUDA_ERROR_INVALID_PTX);
    if (!strstr(msg, "frobnicate"))
        printf("note: the lookup's message has no JIT log naming the bad instruction\n");
    assert_int_equal(cus_context_poisoned(ctx), CUS_SUCCESS);
}

int main(void)
{
    env_require_driver_or_skip();
    const struct CMUnitTest tests[] = {
        GPU_TEST(test_saxpy_as_module_and_library),
        GPU_TEST(test_broken_ptx_library_fails_at_first_use),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
