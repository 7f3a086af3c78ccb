/* gpu-modules: every kernel of kernels/ in every image form on the real
 * driver (gpu suite; exits 77 without a driver or device).
 *
 *   - each image as PTX (JIT), as the fatbin and as the cubin built for the
 *     device's compute capability: loaded, each kernel looked up and launched
 *     with real data, its results compared with a CPU reference (the fault
 *     kernel is only loaded and looked up: test_sticky.c launches it);
 *   - the parameter layout the driver reports (cuFuncGetParamInfo, through
 *     cus_function_param_info) against the fake driver's parser
 *     (lib/image/, compiled in) on the same bytes: printed as a
 *     table, and any mismatch fails the test;
 *   - SHARED_SIZE_BYTES, NUM_REGS and MAX_THREADS_PER_BLOCK (and the binary
 *     version) per kernel and form, printed beside what the fake answers;
 *   - the kernels the driver enumerates per module against the parser's;
 *   - a PTX with a syntax error: the error message carries the JIT's log
 *     (ptxas' line), printed beside the fake's;
 *   - bad images (empty, truncated, wrong magic, SASS for another
 *     architecture): clear errors, printed, and the module out untouched.
 * The tables go to stdout (meson test -v, or the test log). */
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/env.h"
#include "harness/check.h"

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

/* --- images and their forms --------------------------------------------------------- */

typedef struct form {
    const char *name; /* "PTX", "fatbin", "cubin" */
    const void *data;
    size_t size;      /* readable bytes: PTX with its NUL */
    cus_image_format format;
    /* PTX that calls device-runtime functions (.extern .func, e.g.
     * cudaGraphSetConditional): the JIT may need libcudadevrt linked in,
     * so a refusal is printed, not failed. */
    bool may_fail;
} form;

/* PTX, the fatbin and the device's cubin (when kernel_archs has it). */
static int forms_of(const cusk_image *img, form out[3])
{
    int n = 0;
    out[n++] = (form){"PTX", img->ptx, img->ptx_size + 1, CUS_IMAGE_PTX,
                      strstr(img->ptx, ".extern .func") != NULL};
    out[n++] = (form){"fatbin", img->fatbin, img->fatbin_size, CUS_IMAGE_FATBIN, false};
    const cusk_cubin *c = cusk_cubin_for(img, device_sm);
    if (c)
        out[n++] = (form){"cubin", c->data, c->size, CUS_IMAGE_CUBIN, false};
    else
        printf("note: no sm_%d cubin of %s in kernels/ (option kernel_archs): that form is "
               "not tested\n",
               device_sm, img->name);
    return n;
}

static cus_module *load(const cusk_image *img, const form *f)
{
    cus_module *m = NULL;
    cus_status st = cus_module_load_data(ctx, f->data, f->size, NULL, &m);
    if (st && f->may_fail) {
        printf("note: %s as %s calls device-runtime functions and did not load alone: %s\n",
               img->name, f->name, cus_last_error_message());
        return NULL;
    }
    if (st)
        fail_msg("loading %s as %s: %s", img->name, f->name, cus_last_error_message());
    assert_int_equal(cus_module_format(m), f->format);
    return m;
}

static cus_function *get(cus_module *m, const char *name)
{
    cus_function *fn = NULL;
    cus_status st = cus_module_get_function(m, name, &fn);
    if (st)
        fail_msg("getting %s: %s", name, cus_last_error_message());
    return fn;
}

/* --- the kernels and their CPU references ---------------------------------------------- */

#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (!(cond)) {                                                         \
            printf("  check failed: %s: ", #cond);                             \
            printf(__VA_ARGS__);                                               \
            printf("\n");                                                      \
            return SCN_WRONG_;                                                 \
        }                                                                      \
    } while (0)
#define SCN_WRONG_ 19999

typedef cus_status (*kernel_run)(cus_module *m, cus_function *fn, cus_stream *s);

/* sum: a grid-stride loop, 16384 threads over 100003 elements. */
static cus_status run_sum(cus_module *m, cus_function *fn, cus_stream *s)
{
    (void)m;
    enum { N = 100003 };
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y), *out = malloc(N * sizeof *out);
    assert_true(x && y && out);
    for (int i = 0; i < N; i++) {
        x[i] = (float)(i % 1000);
        y[i] = 0.5f * (float)(i % 77);
    }
    cus_status st = CUS_SUCCESS;
    {
        cus_autoptr(cus_buffer) dx = NULL;
        cus_autoptr(cus_buffer) dy = NULL;
        cus_autoptr(cus_buffer) dout = NULL;
        if (!(st = cus_buffer_alloc_n(ctx, float, N, &dx)) &&
            !(st = cus_buffer_alloc_n(ctx, float, N, &dy)) &&
            !(st = cus_buffer_alloc_n(ctx, float, N, &dout)) &&
            !(st = cus_copy_to_device(dx, 0, x, N * sizeof *x)) &&
            !(st = cus_copy_to_device(dy, 0, y, N * sizeof *y)) &&
            !(st = cus_buffer_fill_u32(dout, 0, 0x7fc00000u, N)) &&
            !(st = cus_launch(fn, 64, 256, 0, s, dx, dy, dout, (int)N)) &&
            !(st = cus_stream_synchronize(s)) &&
            !(st = cus_copy_to_host(out, dout, 0, N * sizeof *out))) {
            for (int i = 0; i < N && !st; i++)
                if (out[i] != x[i] + y[i]) {
                    printf("  sum: out[%d] = %g, expected %g\n", i, (double)out[i],
                           (double)(x[i] + y[i]));
                    st = SCN_WRONG_;
                }
        }
    }
    free(x);
    free(y);
    free(out);
    return st;
}

/* saxpy: one thread per element, 2^20 + 3 of them; a * x exact, so the
 * device's fma and the CPU's multiply-add agree exactly. */
static cus_status run_saxpy(cus_module *m, cus_function *fn, cus_stream *s)
{
    (void)m;
    const size_t n = ((size_t)1 << 20) + 3;
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), *want = malloc(n * sizeof *want);
    assert_true(x && y && want);
    const float a = 0.75f;
    for (size_t i = 0; i < n; i++) {
        x[i] = (float)(i % 1024);
        y[i] = (float)(i % 999);
        want[i] = a * x[i] + y[i];
    }
    cus_status st = CUS_SUCCESS;
    {
        cus_autoptr(cus_buffer) dx = NULL;
        cus_autoptr(cus_buffer) dy = NULL;
        if (!(st = cus_buffer_alloc_n(ctx, float, n, &dx)) &&
            !(st = cus_buffer_alloc_n(ctx, float, n, &dy)) &&
            !(st = cus_copy_to_device(dx, 0, x, n * sizeof *x)) &&
            !(st = cus_copy_to_device(dy, 0, y, n * sizeof *y)) &&
            !(st = cus_launch(fn, cus_grid_for(n, 256), 256, 0, s, a, dx, dy,
                              (unsigned long long)n)) &&
            !(st = cus_stream_synchronize(s)) &&
            !(st = cus_copy_to_host(y, dy, 0, n * sizeof *y))) {
            for (size_t i = 0; i < n && !st; i++)
                if (y[i] != want[i]) {
                    printf("  saxpy: y[%zu] = %g, expected %g\n", i, (double)y[i],
                           (double)want[i]);
                    st = SCN_WRONG_;
                }
        }
    }
    free(x);
    free(y);
    free(want);
    return st;
}

static cus_status run_empty(cus_module *m, cus_function *fn, cus_stream *s)
{
    (void)m;
    CUS_TRY(cus_launch(fn, 1, 1, 0, s));
    CUS_TRY(cus_launch(fn, CUS_DIM3(100, 2, 1), CUS_DIM3(256, 2, 1), 0, s));
    return cus_stream_synchronize(s);
}

static cus_status run_empty1(cus_module *m, cus_function *fn, cus_stream *s)
{
    (void)m;
    CUS_TRY(cus_launch(fn, 4, 128, 0, s, (int)7));
    return cus_stream_synchronize(s);
}

struct gpu_pair { /* empty.cu's cusk_pair */
    int a;
    double b;
};

static cus_status run_empty16(cus_module *m, cus_function *fn, cus_stream *s)
{
    (void)m;
    struct gpu_pair pair = {1, 2.0};
    CUS_TRY(cus_launch(fn, 2, 64, 0, s, (char)0, (int)1, 2.0f, 3.0, (CUdeviceptr)0, (short)5,
                       6ull, pair, (char)8, (int)9, 10.0f, 11.0, (CUdeviceptr)0, (short)13, 14ull,
                       (int)15));
    return cus_stream_synchronize(s);
}

struct gpu_triple { /* params.cu's cusk_triple */
    char c;
    double d;
    int i;
};

static cus_status run_mixed(cus_module *m, cus_function *fn, cus_stream *s)
{
    (void)m;
    _Static_assert(sizeof(struct gpu_triple) == 24, "cusk_triple is 24 bytes");
    cus_autoptr(cus_buffer) dp = NULL;
    cus_autoptr(cus_buffer) dout = NULL;
    CUS_TRY(cus_buffer_alloc(ctx, sizeof(int), &dp));
    CUS_TRY(cus_buffer_alloc_n(ctx, long long, 9, &dout));
    int pv = -31337;
    CUS_TRY(cus_copy_to_device(dp, 0, &pv, sizeof pv));
    CUS_TRY(cus_buffer_fill_u8(dout, 0, 0xa5, 9 * sizeof(long long)));
    struct gpu_triple t;
    memset(&t, 0, sizeof t);
    t.c = 'q';
    t.d = -6.5;
    t.i = 123456789;
    CUS_TRY(cus_launch(fn, 3, 64, 0, s, (signed char)-128, (unsigned char)255, (int)-2147483647,
                       1.375f, 12345.625, t, dp, dout));
    CUS_TRY(cus_stream_synchronize(s));
    long long out[9];
    CUS_TRY(cus_copy_to_host(out, dout, 0, sizeof out));
    const long long want[9] = {-128, 255, -2147483647, 1375,
                               12345625, 'q', -6500, 123456789, -31337};
    static const char *const fields[9] = {"c8", "u8", "i32", "f32 x1000", "d64 x1000",
                                          "t.c", "t.d x1000", "t.i", "*p"};
    for (int i = 0; i < 9; i++)
        CHECK(out[i] == want[i], "mixed field %s: %lld, expected %lld", fields[i], out[i],
              want[i]);
    CUS_TRY(cus_launch(fn, 1, 1, 0, s, (signed char)1, (unsigned char)2, (int)3, 4.0f, 5.0, t,
                       (CUdeviceptr)0, dout));
    CUS_TRY(cus_stream_synchronize(s));
    CUS_TRY(cus_copy_to_host(out, dout, 0, sizeof out));
    CHECK(out[0] == 1 && out[1] == 2 && out[2] == 3 && out[3] == 4000 && out[4] == 5000,
          "mixed, second launch: %lld %lld %lld %lld %lld", out[0], out[1], out[2], out[3],
          out[4]);
    CHECK(out[8] == -1, "mixed with p = NULL: *p field %lld, expected -1", out[8]);
    return CUS_SUCCESS;
}

static cus_status run_scale(cus_module *m, cus_function *fn, cus_stream *s)
{
    enum { N = 10000 };
    CUdeviceptr coeffs = 0, counter = 0;
    size_t cbytes = 0, nbytes = 0;
    CUS_TRY(cus_module_get_global(m, "cusk_coeffs", &coeffs, &cbytes));
    CUS_TRY(cus_module_get_global(m, "cusk_counter", &counter, &nbytes));
    CHECK(cbytes == 16 && nbytes == 4, "globals of %zu and %zu bytes", cbytes, nbytes);
    float c[4];
    unsigned int count = 0;
    CUS_TRY(cus_module_copy_from_global(c, m, "cusk_coeffs", 0, sizeof c));
    CUS_TRY(cus_module_copy_from_global(&count, m, "cusk_counter", 0, sizeof count));
    CHECK(c[0] == 1.0f && c[1] == 2.0f && c[2] == 3.0f && c[3] == 4.0f && count == 7,
          "initial values %g %g %g %g, counter %u", (double)c[0], (double)c[1], (double)c[2],
          (double)c[3], count);
    static const float nc[4] = {-0.25f, 8.0f, 0.5f, 3.0f};
    CUS_TRY(cus_module_copy_to_global(m, "cusk_coeffs", 0, nc, sizeof nc));
    count = 1000;
    CUS_TRY(cus_module_copy_to_global(m, "cusk_counter", 0, &count, sizeof count));
    static float in[N], out[N];
    for (int i = 0; i < N; i++)
        in[i] = (float)(i % 513) - 256.0f;
    cus_autoptr(cus_buffer) din = NULL;
    cus_autoptr(cus_buffer) dout = NULL;
    CUS_TRY(cus_buffer_alloc_n(ctx, float, N, &din));
    CUS_TRY(cus_buffer_alloc_n(ctx, float, N, &dout));
    CUS_TRY(cus_copy_to_device(din, 0, in, sizeof in));
    CUS_TRY(cus_launch(fn, cus_grid_for(N, 256), 256, 0, s, din, dout, (int)N));
    CUS_TRY(cus_stream_synchronize(s));
    CUS_TRY(cus_copy_to_host(out, dout, 0, sizeof out));
    for (int i = 0; i < N; i++)
        CHECK(out[i] == nc[i % 4] * in[i], "scale_by_coeffs: out[%d] = %g, expected %g", i,
              (double)out[i], (double)(nc[i % 4] * in[i]));
    CUS_TRY(cus_module_copy_from_global(&count, m, "cusk_counter", 0, sizeof count));
    CHECK(count == 1000 + N, "counter %u, expected %u", count, 1000u + N);
    return CUS_SUCCESS;
}

/* pdl.cu's pair in plain stream order (PDL itself: test_gpu_pdl.c):
 * out = 2 * in, then out2 = out + 1. */
static cus_status run_pdl(cus_module *m, cus_function *fn, cus_stream *s)
{
    enum { N = 4099 };
    cus_autoptr(cus_function) second = NULL;
    CUS_TRY(cus_module_get_function(m, "pdl_secondary", &second));
    static float in[N], out2[N];
    for (int i = 0; i < N; i++)
        in[i] = (float)(i % 1000) - 500.0f;
    cus_autoptr(cus_buffer) din = NULL;
    cus_autoptr(cus_buffer) dout = NULL;
    cus_autoptr(cus_buffer) dout2 = NULL;
    CUS_TRY(cus_buffer_alloc_n(ctx, float, N, &din));
    CUS_TRY(cus_buffer_alloc_n(ctx, float, N, &dout));
    CUS_TRY(cus_buffer_alloc_n(ctx, float, N, &dout2));
    CUS_TRY(cus_copy_to_device(din, 0, in, sizeof in));
    CUS_TRY(cus_launch(fn, cus_grid_for(N, 128), 128, 0, s, din, dout, (unsigned long long)N));
    CUS_TRY(cus_launch(second, cus_grid_for(N, 128), 128, 0, s, dout, dout2,
                       (unsigned long long)N));
    CUS_TRY(cus_stream_synchronize(s));
    CUS_TRY(cus_copy_to_host(out2, dout2, 0, sizeof out2));
    for (int i = 0; i < N; i++)
        CHECK(out2[i] == 2.0f * in[i] + 1.0f, "pdl pair: out2[%d] = %g, expected %g", i,
              (double)out2[i], (double)(2.0f * in[i] + 1.0f));
    return CUS_SUCCESS;
}

/* smid.cu: 4 blocks per SM each record their SM; the count of distinct
 * SMs is the number of flags set, at least one and at most the device's. */
static cus_status run_sm_ids(cus_module *m, cus_function *fn, cus_stream *s)
{
    (void)m;
    enum { SEEN = 1024 };
    int sms = 0;
    CUS_TRY(cus_device_attribute(cus_context_device(ctx), CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                 &sms));
    cus_autoptr(cus_buffer) seen = NULL;
    cus_autoptr(cus_buffer) count = NULL;
    CUS_TRY(cus_buffer_alloc_n(ctx, unsigned int, SEEN, &seen));
    CUS_TRY(cus_buffer_alloc_n(ctx, unsigned int, 1, &count));
    CUS_TRY(cus_buffer_fill_u8_async(seen, 0, 0, SEEN * sizeof(unsigned int), s));
    CUS_TRY(cus_buffer_fill_u8_async(count, 0, 0, sizeof(unsigned int), s));
    CUS_TRY(cus_launch(fn, (unsigned)(4 * sms), 32, 0, s, seen, (unsigned)SEEN, count,
                       (long long)100000));
    CUS_TRY(cus_stream_synchronize(s));
    static unsigned int flags[SEEN];
    unsigned int n = 0;
    CUS_TRY(cus_copy_to_host(flags, seen, 0, sizeof flags));
    CUS_TRY(cus_copy_to_host(&n, count, 0, sizeof n));
    unsigned int set = 0;
    for (int i = 0; i < SEEN; i++)
        set += flags[i] == 1;
    CHECK(n == set && n >= 1 && n <= (unsigned)sms, "sm_ids: %u SMs counted, %u flags set, %d SMs",
          n, set, sms);
    return CUS_SUCCESS;
}

/* cluster.cu: a plain launch of 4 blocks; each block is its own cluster
 * (1 block, rank 0), whatever the image's architecture. */
static cus_status run_cluster_shape(cus_module *m, cus_function *fn, cus_stream *s)
{
    (void)m;
    cus_autoptr(cus_buffer) out = NULL;
    CUS_TRY(cus_buffer_alloc_n(ctx, unsigned int, 8, &out));
    CUS_TRY(cus_buffer_fill_u8_async(out, 0, 0xff, 8 * sizeof(unsigned int), s));
    CUS_TRY(cus_launch(fn, 4, 32, 0, s, out));
    CUS_TRY(cus_stream_synchronize(s));
    unsigned int got[8];
    CUS_TRY(cus_copy_to_host(got, out, 0, sizeof got));
    for (int b = 0; b < 4; b++)
        CHECK(got[2 * b] == 1 && got[2 * b + 1] == 0,
              "cluster_shape: block %d says %u blocks, rank %u; expected 1, 0", b, got[2 * b],
              got[2 * b + 1]);
    return CUS_SUCCESS;
}

typedef struct kernel_spec {
    const cusk_image *img;
    const char *name;
    kernel_run run; /* NULL: load and look up only */
} kernel_spec;

static const kernel_spec kernel_specs[] = {
    {&cusk_sum, "sum", run_sum},
    {&cusk_empty, "empty", run_empty},
    {&cusk_empty, "empty1", run_empty1},
    {&cusk_empty, "empty16", run_empty16},
    {&cusk_saxpy, "saxpy", run_saxpy},
    {&cusk_params, "mixed", run_mixed},
    {&cusk_globals, "scale_by_coeffs", run_scale},
    {&cusk_fault, "fault", NULL}, /* launched by test_sticky.c only */
    /* launched with a texture and a surface by the texture_rotate scenario
     * (module_scenarios.c) and docs/examples/texture.c */
    {&cusk_texture, "rotate_texture", NULL},
    {&cusk_texture, "fill_surface", NULL},
    {&cusk_pdl, "pdl_primary", run_pdl},
    {&cusk_pdl, "pdl_secondary", NULL}, /* launched by run_pdl after pdl_primary */
    {&cusk_smid, "sm_ids", run_sm_ids},
    /* needs a conditional handle: launched in a graph by test_gpu_graph_conditional.c */
    {&cusk_countdown, "countdown", NULL},
    {&cusk_cluster, "cluster_shape", run_cluster_shape},
};
#define NSPECS (sizeof kernel_specs / sizeof kernel_specs[0])

static size_t specs_of(const cusk_image *img)
{
    size_t n = 0;
    for (size_t k = 0; k < NSPECS; k++)
        n += kernel_specs[k].img == img;
    return n;
}

/* Every image of kernels/ has its kernels listed above. */
static void test_every_image_is_covered(void **state)
{
    (void)state;
    size_t images = 0;
    for (const cusk_image *const *p = cusk_all; *p; p++, images++)
        if (specs_of(*p) == 0)
            fail_msg("kernels/%s.cu has no entry in kernel_specs (test_gpu_modules.c)",
                     (*p)->name);
    printf("%zu images in kernels/, %zu kernels, device sm_%d\n", images, NSPECS, device_sm);
}

static void test_every_kernel_in_every_form_computes_what_the_cpu_does(void **state)
{
    (void)state;
    int failures = 0;
    for (const cusk_image *const *p = cusk_all; *p; p++) {
        const cusk_image *img = *p;
        form forms[3];
        int nforms = forms_of(img, forms);
        for (int f = 0; f < nforms; f++) {
            cus_module *m = load(img, &forms[f]);
            if (!m)
                continue;
            const char *info = cus_module_info_log(m);
            if (info[0] && forms[f].format == CUS_IMAGE_PTX) {
                printf("%s as PTX, the JIT's info log:\n  ", img->name);
                for (const char *c = info; *c; c++)
                    fputs(*c == '\n' ? "\n  " : (char[2]){*c, 0}, stdout);
                printf("\n");
            }
            cus_stream *s = NULL;
            assert_ok(cus_stream_create(ctx, 0, 0, &s));
            for (size_t k = 0; k < NSPECS; k++) {
                if (kernel_specs[k].img != img)
                    continue;
                cus_function *fn = get(m, kernel_specs[k].name);
                if (!kernel_specs[k].run) {
                    printf("%-16s %-7s loaded (not launched here)\n", kernel_specs[k].name,
                           forms[f].name);
                } else {
                    cus_status st = kernel_specs[k].run(m, fn, s);
                    printf("%-16s %-7s %s\n", kernel_specs[k].name, forms[f].name,
                           st == CUS_SUCCESS ? "ok: matches the CPU"
                           : st == SCN_WRONG_ ? "WRONG RESULT"
                                              : cus_last_error_message());
                    failures += st != CUS_SUCCESS;
                }
                cus_function_unref(fn);
            }
            cus_stream_unref(s);
            cus_module_unref(m);
        }
    }
    if (failures)
        fail_msg("%d kernel run(s) failed (see above)", failures);
}

/* --- the layouts against the fake's parser ---------------------------------------------- */

static fake_image *parse(const cusk_image *img, const form *f)
{
    fake_image *fi = NULL;
    char err[2048] = "";
    CUresult r = fake_image_parse(f->data, f->size, (unsigned)device_sm, &fi, err, sizeof err,
                                  NULL, 0);
    if (r != CUDA_SUCCESS)
        fail_msg("the fake's parser refuses %s as %s: %d: %s", img->name, f->name, (int)r, err);
    return fi;
}

static void test_parameter_layouts_match_the_fake_parser(void **state)
{
    (void)state;
    int mismatches = 0, rows = 0;
    printf("\nparameter layouts: the driver's cuFuncGetParamInfo vs the fake's parser\n");
    printf("%-16s %-7s %5s  %14s  %14s  %s\n", "kernel", "form", "param", "real off/size",
           "fake off/size", "match");
    for (const cusk_image *const *p = cusk_all; *p; p++) {
        const cusk_image *img = *p;
        form forms[3];
        int nforms = forms_of(img, forms);
        for (int f = 0; f < nforms; f++) {
            cus_module *m = load(img, &forms[f]);
            if (!m)
                continue;
            fake_image *fi = parse(img, &forms[f]);
            for (size_t k = 0; k < NSPECS; k++) {
                if (kernel_specs[k].img != img)
                    continue;
                const char *name = kernel_specs[k].name;
                cus_function *fn = get(m, name);
                if (!cus_function_layout_known(fn)) {
                    cus_function_unref(fn);
                    fake_image_free(fi);
                    cus_module_unref(m);
                    int version = 0;
                    (void)cus_driver_version(&version);
                    printf("the driver (%d) has no cuFuncGetParamInfo (12.4+): nothing to "
                           "compare\n",
                           version);
                    skip();
                }
                const fake_image_function *ff = fake_image_find_function(fi, name);
                unsigned int real_n = cus_function_param_count(fn);
                size_t fake_n = ff ? ff->nparams : 0;
                if (!ff) {
                    printf("%-16s %-7s   the fake's parser has no such kernel  MISMATCH\n", name,
                           forms[f].name);
                    mismatches++;
                }
                if (real_n == 0 && fake_n == 0 && ff)
                    printf("%-16s %-7s %5s  %14s  %14s  %s\n", name, forms[f].name, "-",
                           "(none)", "(none)", "yes");
                size_t n = real_n > fake_n ? real_n : fake_n;
                for (size_t i = 0; i < n; i++) {
                    char real[32] = "(absent)", fake[32] = "(absent)";
                    size_t ro = 0, rs = 0;
                    bool have_real = i < real_n &&
                                     cus_function_param_info(fn, (unsigned int)i, &ro, &rs) ==
                                         CUS_SUCCESS;
                    if (have_real)
                        snprintf(real, sizeof real, "%zu/%zu", ro, rs);
                    bool have_fake = i < fake_n;
                    if (have_fake)
                        snprintf(fake, sizeof fake, "%zu/%zu", ff->params[i].offset,
                                 ff->params[i].size);
                    bool match = have_real && have_fake && ro == ff->params[i].offset &&
                                 rs == ff->params[i].size;
                    mismatches += !match;
                    rows++;
                    printf("%-16s %-7s %5zu  %14s  %14s  %s\n", name, forms[f].name, i, real,
                           fake, match ? "yes" : "MISMATCH");
                }
                cus_function_unref(fn);
            }
            fake_image_free(fi);
            cus_module_unref(m);
        }
    }
    printf("%d parameter rows, %d mismatch(es)\n\n", rows, mismatches);
    if (mismatches)
        fail_msg("%d parameter(s) where the fake's parser disagrees with the driver", mismatches);
}

static void test_function_attributes(void **state)
{
    (void)state;
    printf("\nfunction attributes: the driver's, and the fake's where it derives them "
           "(static shared memory, .maxntid; the fake answers 32 registers always)\n");
    printf("%-16s %-7s %12s %8s %11s %7s   %12s %11s\n", "kernel", "form", "SHARED_BYTES",
           "NUM_REGS", "MAX_THREADS", "BINARY", "fake SHARED", "fake THREADS");
    for (const cusk_image *const *p = cusk_all; *p; p++) {
        const cusk_image *img = *p;
        form forms[3];
        int nforms = forms_of(img, forms);
        for (int f = 0; f < nforms; f++) {
            cus_module *m = load(img, &forms[f]);
            if (!m)
                continue;
            fake_image *fi = parse(img, &forms[f]);
            for (size_t k = 0; k < NSPECS; k++) {
                if (kernel_specs[k].img != img)
                    continue;
                cus_function *fn = get(m, kernel_specs[k].name);
                int shared = -1, regs = -1, threads = -1, binary = -1;
                assert_ok(cus_function_attribute(fn, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, &shared));
                assert_ok(cus_function_attribute(fn, CU_FUNC_ATTRIBUTE_NUM_REGS, &regs));
                assert_ok(cus_function_attribute(fn, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                                                 &threads));
                assert_ok(cus_function_attribute(fn, CU_FUNC_ATTRIBUTE_BINARY_VERSION, &binary));
                const fake_image_function *ff = fake_image_find_function(fi, kernel_specs[k].name);
                printf("%-16s %-7s %12d %8d %11d %7d   %12zu %11u\n", kernel_specs[k].name,
                       forms[f].name, shared, regs, threads, binary, ff ? ff->static_shared : 0,
                       ff && ff->max_threads ? ff->max_threads : 1024u);
                assert_true(threads > 0 && threads <= 1024 && regs >= 0 && shared >= 0);
                cus_function_unref(fn);
            }
            fake_image_free(fi);
            cus_module_unref(m);
        }
    }
    printf("\n");
}

/* The driver's list of kernels per module (12.4+) is the one above, and the
 * fake's parser finds the same. */
static void test_modules_enumerate_their_kernels(void **state)
{
    (void)state;
    for (const cusk_image *const *p = cusk_all; *p; p++) {
        const cusk_image *img = *p;
        form forms[3];
        int nforms = forms_of(img, forms);
        for (int f = 0; f < nforms; f++) {
            cus_module *m = load(img, &forms[f]);
            if (!m)
                continue;
            const char *names[16];
            unsigned int count = 0;
            cus_status st = cus_module_function_names(m, names, 16, &count);
            if (st == CUS_ERROR_NOT_SUPPORTED) {
                cus_module_unref(m);
                printf("the driver cannot enumerate functions (12.4+): %s\n",
                       cus_last_error_message());
                skip();
            }
            assert_ok(st);
            fake_image *fi = parse(img, &forms[f]);
            printf("%-8s %-7s kernels:", img->name, forms[f].name);
            for (unsigned int i = 0; i < count && i < 16; i++)
                printf(" %s", names[i]);
            printf(" (fake's parser: %zu)\n", fi->nfunctions);
            assert_int_equal(count, specs_of(img));
            assert_int_equal(fi->nfunctions, specs_of(img));
            for (unsigned int i = 0; i < count && i < 16; i++) {
                bool listed = false;
                for (size_t k = 0; k < NSPECS; k++)
                    listed |= kernel_specs[k].img == img &&
                              strcmp(kernel_specs[k].name, names[i]) == 0;
                if (!listed)
                    fail_msg("%s as %s has a kernel %s that the test does not know", img->name,
                             forms[f].name, names[i]);
                assert_non_null(fake_image_find_function(fi, names[i]));
            }
            fake_image_free(fi);
            cus_module_unref(m);
        }
    }
}

/* --- broken PTX and bad images ------------------------------------------------------------ */

/* sum.ptx's .version, .target and .address_size lines, so that the broken
 * module below fails for its syntax, not for its ISA version. */
static void ptx_header(char *out, size_t size)
{
    out[0] = 0;
    const char *want[] = {".version", ".target", ".address_size"};
    for (size_t w = 0; w < 3; w++) {
        const char *line = strstr(cusk_sum.ptx, want[w]);
        assert_non_null(line);
        size_t len = strcspn(line, "\n");
        size_t used = strlen(out);
        assert_true(used + len + 2 < size);
        memcpy(out + used, line, len);
        out[used + len] = '\n';
        out[used + len + 1] = 0;
    }
}

static void test_broken_ptx_reports_the_jit_log(void **state)
{
    (void)state;
    char text[512];
    ptx_header(text, sizeof text);
    /* lines 1-3 the header; the bad instruction on line 7 */
    strcat(text, "\n.visible .entry broken()\n{\n\tfrobnicate.u32 %r1;\n\tret;\n}\n");
    cus_module *m = (cus_module *)(uintptr_t)0x1; /* untouched on failure */
    cus_status st = cus_module_load_data(ctx, text, strlen(text) + 1, NULL, &m);
    printf("\nbroken PTX:\n%s\n", text);
    printf("the driver: %s (%d)\n  %s\n", cus_status_name(st), st, cus_last_error_message());
    fake_image *fi = NULL;
    char err[2048] = "";
    CUresult fr = fake_image_parse(text, strlen(text) + 1, (unsigned)device_sm, &fi, err,
                                   sizeof err, NULL, 0);
    printf("the fake's parser: %d\n  %s\n\n", (int)fr, err);
    if (fr == CUDA_SUCCESS)
        fake_image_free(fi);
    assert_ptr_equal(m, (cus_module *)(uintptr_t)0x1);
    assert_int_equal(st, CUDA_ERROR_INVALID_PTX);
    assert_int_equal(cus_last_status(), CUDA_ERROR_INVALID_PTX);
    assert_string_equal(cus_last_error()->driver_call, "cuModuleLoadDataEx");
    const char *msg = cus_last_error_message();
    if (!strstr(msg, "ptxas") && !strstr(msg, "line 7"))
        fail_msg("the message carries no JIT log (no \"ptxas\", no \"line 7\"): %s", msg);
    assert_int_equal(fr, CUDA_ERROR_INVALID_PTX); /* the fake agrees on the status */
    assert_int_equal(cus_context_poisoned(ctx), CUS_SUCCESS);
    /* The context is fine: a good module still loads. */
    form forms[3];
    forms_of(&cusk_sum, forms);
    cus_module_unref(load(&cusk_sum, &forms[0]));
}

/* Loads a bad image: it must fail, leave the out parameter alone and poison
 * nothing. Returns the status; prints it with the message and what the
 * fake's parser says of the same bytes. */
static cus_status load_bad(const char *what, const void *data, size_t size)
{
    cus_module *m = (cus_module *)(uintptr_t)0x1;
    cus_status st = cus_module_load_data(ctx, data, size, NULL, &m);
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", st ? cus_last_error_message() : "(loaded!)");
    fake_image *fi = NULL;
    char err[512] = "";
    CUresult fr = fake_image_parse(data, size ? size : 1, (unsigned)device_sm, &fi, err,
                                   sizeof err, NULL, 0);
    if (fr == CUDA_SUCCESS)
        fake_image_free(fi);
    printf("%-34s %-28s %s\n%-34s fake's parser: %d%s%.200s\n", what, cus_status_name(st), msg, "",
           (int)fr, err[0] ? ": " : "", err);
    if (st == CUS_SUCCESS) {
        cus_module_unref(m);
        fail_msg("%s loaded", what);
    }
    assert_ptr_equal(m, (cus_module *)(uintptr_t)0x1);
    assert_int_equal(cus_last_status(), st);
    assert_int_equal(cus_context_poisoned(ctx), CUS_SUCCESS);
    return st;
}

static void test_bad_images_fail_clearly(void **state)
{
    (void)state;
    printf("\nbad images:\n");
    /* empty */
    static const char nothing[1] = "";
    assert_int_equal(load_bad("empty (size unknown)", nothing, 0), CUDA_ERROR_INVALID_IMAGE);
    assert_contains(cus_last_error_message(), "empty");
    assert_int_equal(load_bad("empty (1 byte, a NUL)", nothing, 1), CUDA_ERROR_INVALID_IMAGE);

    const cusk_cubin *cubin = cusk_cubin_for(&cusk_sum, device_sm);
    if (!cubin)
        cubin = &cusk_sum.cubins[0];
    /* truncated */
    assert_int_equal(load_bad("cubin truncated to 40 bytes", cubin->data, 40),
                     CUDA_ERROR_INVALID_IMAGE);
    assert_int_equal(load_bad("cubin truncated to half", cubin->data, cubin->size / 2),
                     CUDA_ERROR_INVALID_IMAGE);
    assert_contains(cus_last_error_message(), "truncated");
    assert_int_equal(load_bad("fatbin truncated to 12 bytes", cusk_sum.fatbin, 12),
                     CUDA_ERROR_INVALID_IMAGE);
    assert_int_equal(load_bad("fatbin truncated to half", cusk_sum.fatbin,
                              cusk_sum.fatbin_size / 2),
                     CUDA_ERROR_INVALID_IMAGE);
    assert_contains(cus_last_error_message(), "truncated");
    char *half = malloc(cusk_sum.ptx_size / 2 + 1);
    assert_non_null(half);
    memcpy(half, cusk_sum.ptx, cusk_sum.ptx_size / 2);
    half[cusk_sum.ptx_size / 2] = 0;
    cus_status st = load_bad("PTX cut in half (NUL-terminated)", half, cusk_sum.ptx_size / 2 + 1);
    free(half);
    if (st != CUDA_ERROR_INVALID_PTX && st != CUDA_ERROR_INVALID_IMAGE)
        fail_msg("half a PTX module: %s", cus_status_name(st));
    unsigned char *nonul = malloc(cusk_sum.ptx_size);
    assert_non_null(nonul);
    memcpy(nonul, cusk_sum.ptx, cusk_sum.ptx_size); /* its size known, its NUL cut off */
    assert_int_equal(load_bad("PTX without its NUL", nonul, cusk_sum.ptx_size),
                     CUDA_ERROR_INVALID_IMAGE);
    free(nonul);

    /* wrong magic */
    unsigned char *copy = malloc(cubin->size);
    assert_non_null(copy);
    memcpy(copy, cubin->data, cubin->size);
    copy[0] = 0x7e; /* "\x7eELF" */
    assert_int_equal(load_bad("cubin with a wrong ELF magic", copy, cubin->size),
                     CUDA_ERROR_INVALID_IMAGE);
    assert_contains(cus_last_error_message(), "7e 45 4c 46");
    free(copy);
    copy = malloc(cusk_sum.fatbin_size);
    assert_non_null(copy);
    memcpy(copy, cusk_sum.fatbin, cusk_sum.fatbin_size);
    copy[3] ^= 0xff; /* 0xBA55ED50 no more */
    assert_int_equal(load_bad("fatbin with a wrong magic", copy, cusk_sum.fatbin_size),
                     CUDA_ERROR_INVALID_IMAGE);
    free(copy);
    static const unsigned char noise[64] = {0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4};
    assert_int_equal(load_bad("64 bytes of noise", noise, sizeof noise), CUDA_ERROR_INVALID_IMAGE);
    assert_contains(cus_last_error_message(), "de ad be ef");

    /* SASS of another architecture (a major version the device is not):
     * CUDA_ERROR_NO_BINARY_FOR_GPU at the load, where the driver checks it
     * there. Should a driver defer the check (lazy loading,
     * CUDA_MODULE_LOADING), the load succeeds and the lookup must fail
     * instead: printed, and required to fail one way or the other. */
    for (size_t i = 0; i < cusk_sum.ncubins; i++) {
        const cusk_cubin *other = &cusk_sum.cubins[i];
        if (other->sm / 10 == device_sm / 10)
            continue;
        char what[64];
        snprintf(what, sizeof what, "an sm_%d cubin on sm_%d", other->sm, device_sm);
        cus_module *m = NULL;
        st = cus_module_load_data(ctx, other->data, other->size, NULL, &m);
        if (st) {
            printf("%-34s %-28s %s\n", what, cus_status_name(st), cus_last_error_message());
            assert_int_equal(st, CUDA_ERROR_NO_BINARY_FOR_GPU);
            assert_null(m);
        } else {
            cus_function *fn = NULL;
            st = cus_module_get_function(m, "sum", &fn);
            printf("%-34s loaded (the check deferred); cus_module_get_function: %s %s\n", what,
                   cus_status_name(st), st ? cus_last_error_message() : "");
            cus_function_unref(fn);
            cus_module_unref(m);
            if (st == CUS_SUCCESS)
                fail_msg("%s: loaded and looked up without an error", what);
        }
        assert_int_equal(cus_context_poisoned(ctx), CUS_SUCCESS);
    }
    printf("\n");
    /* None of it hurt the context. */
    form forms[3];
    forms_of(&cusk_sum, forms);
    cus_module_unref(load(&cusk_sum, &forms[1]));
}

int main(void)
{
    env_require_driver_or_skip();
    const struct CMUnitTest tests[] = {
        GPU_TEST(test_every_image_is_covered),
        GPU_TEST(test_every_kernel_in_every_form_computes_what_the_cpu_does),
        GPU_TEST(test_parameter_layouts_match_the_fake_parser),
        GPU_TEST(test_function_attributes),
        GPU_TEST(test_modules_enumerate_their_kernels),
        GPU_TEST(test_broken_ptx_reports_the_jit_log),
        GPU_TEST(test_bad_images_fail_clearly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
