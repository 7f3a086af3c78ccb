/* Scenarios with the kernels of kernels/: modules in each image form,
 * functions, launches, globals, streams ordered by events. Public API only;
 * they run as unit tests on the fake, under the fault sweep on the fake, and
 * on the real GPU (gpu-scenarios). On the fake the kernels run as their host
 * twins (harness/twins.c), so every result is checked against a CPU
 * reference on both drivers: the data are chosen so that each float result
 * is exact (no rounding, with or without the fma that nvcc contracts
 * saxpy's a * x + y into), and compared exactly.
 *
 * Host to device and back, they copy synchronously (nothing queued can be
 * left aiming at a stack array when a faulted run returns early) and launch
 * on blocking streams (created with flags 0), which wait for the legacy
 * default stream: a synchronous copy from pageable memory may return before
 * its DMA is done, and only the legacy stream's ordering covers that on a
 * GPU. Results are read after the stream is synchronized.
 *
 * No name here contains "create" or "guards": test_sweep.c reruns those on a
 * 12.0 driver, which takes no PTX of the toolkit's ISA version. */
#include <stdio.h>
#include <string.h>

#include <cuscope/cuscope.h>

#include "../harness/twins.h"
#include "cusk-images.h"
#include "scenarios.h"

#define EXPECT(cond)                                                           \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "%s:%d: scenario check failed: %s\n", __FILE__, __LINE__, #cond); \
            return SCN_WRONG;                                                  \
        }                                                                      \
    } while (0)

/* A call that must fail with `want`: any other failure is passed on (under
 * the sweep it is the injected one), a success is a wrong observation. */
#define EXPECT_STATUS(expr, want)                                              \
    do {                                                                       \
        cus_status got_ = (expr);                                              \
        if (got_ == CUS_SUCCESS) {                                             \
            fprintf(stderr, "%s:%d: scenario check failed: %s succeeded, expected %s\n", \
                    __FILE__, __LINE__, #expr, cus_status_name(want));         \
            return SCN_WRONG;                                                  \
        }                                                                      \
        if (got_ != (cus_status)(want))                                        \
            return got_;                                                       \
    } while (0)

static cus_status primary0(cus_context **out)
{
    cus_device dev;
    CUS_TRY(cus_device_get(0, &dev));
    return cus_context_retain_primary(dev, out);
}

/* --- images --------------------------------------------------------------- */

typedef enum image_form { FORM_PTX, FORM_FATBIN, FORM_CUBIN } image_form;

/* Loads img in one form. The cubin is the one built for the device's compute
 * capability (90 on the fake's default device); where kernels/ has none for
 * it (kernel_archs), the fatbin stands in and *form_out says so. */
static cus_status load_image(cus_context *ctx, const cusk_image *img, image_form form,
                             cus_module **out, cus_image_format *format_out)
{
    const void *data = NULL;
    size_t size = 0;
    cus_image_format want = CUS_IMAGE_UNKNOWN;
    if (form == FORM_CUBIN) {
        int major = 0, minor = 0;
        CUS_TRY(cus_device_compute_capability(cus_context_device(ctx), &major, &minor));
        const cusk_cubin *c = cusk_cubin_for(img, major * 10 + minor);
        if (c) {
            data = c->data;
            size = c->size;
            want = CUS_IMAGE_CUBIN;
        } else {
            fprintf(stderr, "module scenarios: no sm_%d%d cubin of %s in kernels/ "
                            "(kernel_archs); the fatbin stands in\n",
                    major, minor, img->name);
            form = FORM_FATBIN;
        }
    }
    if (form == FORM_PTX) {
        data = img->ptx;
        size = img->ptx_size + 1; /* with its NUL */
        want = CUS_IMAGE_PTX;
    } else if (form == FORM_FATBIN) {
        data = img->fatbin;
        size = img->fatbin_size;
        want = CUS_IMAGE_FATBIN;
    }
    cus_module *m = NULL;
    CUS_TRY(cus_module_load_data(ctx, data, size, NULL, &m));
    if (cus_module_format(m) != want || cus_module_context(m) != ctx) {
        fprintf(stderr, "%s:%d: scenario check failed: %s module has format %s, context %p\n",
                __FILE__, __LINE__, img->name, cus_image_format_name(cus_module_format(m)),
                (void *)cus_module_context(m));
        cus_module_unref(m);
        return SCN_WRONG;
    }
    if (format_out)
        *format_out = want;
    *out = m;
    return CUS_SUCCESS;
}

/* The layout, where the driver reports it (cuFuncGetParamInfo, 12.4+). */
static bool layout_is(const cus_function *fn, unsigned int n, const size_t *offsets,
                      const size_t *sizes)
{
    if (!cus_function_layout_known(fn))
        return true;
    if (cus_function_param_count(fn) != n)
        return false;
    for (unsigned int i = 0; i < n; i++) {
        size_t off = 0, size = 0;
        if (cus_function_param_info(fn, i, &off, &size) != CUS_SUCCESS || off != offsets[i] ||
            size != sizes[i])
            return false;
    }
    return true;
}

/* --- sum from PTX ------------------------------------------------------------
 * sum(x, y, out, count) over 1000 floats with 256 threads: the grid-stride
 * loop covers the rest. */
static cus_status scn_sum_ptx(void *arg)
{
    (void)arg;
    enum { N = 1000 };
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(primary0(&ctx));
    cus_autoptr(cus_module) mod = NULL;
    CUS_TRY(load_image(ctx, &cusk_sum, FORM_PTX, &mod, NULL));
    cus_autoptr(cus_function) fn = NULL;
    CUS_TRY(cus_module_get_function(mod, "sum", &fn));
    EXPECT(strcmp(cus_function_name(fn), "sum") == 0 && cus_function_module(fn) == mod);
    EXPECT(layout_is(fn, 4, (const size_t[]){0, 8, 16, 24}, (const size_t[]){8, 8, 8, 4}));
    {
        cus_autoptr(cus_function) again = NULL; /* cached: the same object */
        CUS_TRY(cus_module_get_function(mod, "sum", &again));
        EXPECT(again == fn);
    }
    {
        cus_autoptr(cus_function) none = NULL;
        EXPECT_STATUS(cus_module_get_function(mod, "no_such_kernel", &none), CUDA_ERROR_NOT_FOUND);
        EXPECT(none == NULL);
    }

    float x[N], y[N], out[N];
    for (int i = 0; i < N; i++) {
        x[i] = (float)i;
        y[i] = 0.5f * (float)i + 0.25f;
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
    cus_autoptr(cus_stream) s = NULL;
    CUS_TRY(cus_stream_create(ctx, 0, 0, &s));
    CUS_TRY(cus_launch(fn, 2, 128, 0, s, dx, dy, dout, (int)N));
    CUS_TRY(cus_stream_synchronize(s));
    CUS_TRY(cus_copy_to_host(out, dout, 0, sizeof out));
    for (int i = 0; i < N; i++)
        EXPECT(out[i] == x[i] + y[i]);
    return CUS_SUCCESS;
}

/* --- saxpy from the fatbin ---------------------------------------------------
 * y = 2.5 x + y with x = i, y = 1000 - i: exactly 1.5 i + 1000. The argument
 * check refuses an int where the kernel takes an unsigned long long, and a
 * short argument list, before the driver sees them. */
static cus_status scn_saxpy_fatbin(void *arg)
{
    (void)arg;
    enum { N = 1000 };
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(primary0(&ctx));
    cus_autoptr(cus_module) mod = NULL;
    CUS_TRY(load_image(ctx, &cusk_saxpy, FORM_FATBIN, &mod, NULL));
    cus_autoptr(cus_function) fn = NULL;
    CUS_TRY(cus_module_get_function(mod, "saxpy", &fn));
    EXPECT(layout_is(fn, 4, (const size_t[]){0, 8, 16, 24}, (const size_t[]){4, 8, 8, 8}));

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
    if (cus_function_layout_known(fn)) {
        EXPECT(cus_launch(fn, 1, 32, 0, s, 2.5f, dx, dy, (int)N) == CUS_ERROR_INVALID_ARGUMENT);
        EXPECT(strstr(cus_last_error_message(), "argument 4 is 4 bytes") != NULL);
        EXPECT(cus_launch(fn, 1, 32, 0, s, 2.5f, dx, dy) == CUS_ERROR_INVALID_ARGUMENT);
    }
    CUS_TRY(cus_launch(fn, cus_grid_for(N, 256), 256, 0, s, 2.5f, dx, dy,
                       (unsigned long long)N));
    CUS_TRY(cus_stream_synchronize(s));
    CUS_TRY(cus_copy_to_host(y, dy, 0, sizeof y));
    for (int i = 0; i < N; i++)
        EXPECT(y[i] == 1.5f * (float)i + (float)N);
    return CUS_SUCCESS;
}

/* --- mixed parameters from the cubin -------------------------------------------
 * mixed(signed char, unsigned char, int, float, double, cusk_triple by value,
 * const int *p, long long *out) writes back what it received (floats times
 * 1000), *p or -1 for a NULL p. */
struct scn_triple {
    char c;
    double d;
    int i;
};

static cus_status scn_mixed_params(void *arg)
{
    (void)arg;
    _Static_assert(sizeof(struct scn_triple) == 24, "cusk_triple is 24 bytes");
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(primary0(&ctx));
    cus_autoptr(cus_module) mod = NULL;
    CUS_TRY(load_image(ctx, &cusk_params, FORM_CUBIN, &mod, NULL));
    cus_autoptr(cus_function) fn = NULL;
    CUS_TRY(cus_module_get_function(mod, "mixed", &fn));
    EXPECT(layout_is(fn, 8, (const size_t[]){0, 1, 4, 8, 16, 24, 48, 56},
                     (const size_t[]){1, 1, 4, 4, 8, 24, 8, 8}));

    cus_autoptr(cus_buffer) dp = NULL;
    cus_autoptr(cus_buffer) dout = NULL;
    CUS_TRY(cus_buffer_alloc(ctx, sizeof(int), &dp));
    CUS_TRY(cus_buffer_alloc_n(ctx, long long, 9, &dout));
    int pv = 4242;
    CUS_TRY(cus_copy_to_device(dp, 0, &pv, sizeof pv));
    CUS_TRY(cus_buffer_fill_u8(dout, 0, 0xa5, 9 * sizeof(long long)));
    struct scn_triple t;
    memset(&t, 0, sizeof t);
    t.c = 'z';
    t.d = 3.125;
    t.i = 99;
    cus_autoptr(cus_stream) s = NULL;
    CUS_TRY(cus_stream_create(ctx, 0, 0, &s));
    CUS_TRY(cus_launch(fn, 1, 32, 0, s, (signed char)-5, (unsigned char)250, (int)-123456, 1.5f,
                       -2.25, t, dp, dout));
    CUS_TRY(cus_stream_synchronize(s));
    long long out[9];
    CUS_TRY(cus_copy_to_host(out, dout, 0, sizeof out));
    static const long long want[9] = {-5, 250, -123456, 1500, -2250, 'z', 3125, 99, 4242};
    for (int i = 0; i < 9; i++)
        if (out[i] != want[i]) {
            fprintf(stderr, "%s:%d: mixed: field %d is %lld, expected %lld\n", __FILE__,
                    __LINE__, i, out[i], want[i]);
            return SCN_WRONG;
        }

    /* Other values, and a NULL pointer. */
    t.c = -7;
    t.d = -0.5;
    t.i = -1;
    CUS_TRY(cus_launch(fn, 1, 1, 0, s, (signed char)127, (unsigned char)0, (int)0x7fffffff,
                       -0.125f, 1e6, t, (CUdeviceptr)0, dout));
    CUS_TRY(cus_stream_synchronize(s));
    CUS_TRY(cus_copy_to_host(out, dout, 0, sizeof out));
    static const long long want2[9] = {127, 0, 0x7fffffff, -125, 1000000000, -7, -500, -1, -1};
    for (int i = 0; i < 9; i++)
        if (out[i] != want2[i]) {
            fprintf(stderr, "%s:%d: mixed (second launch): field %d is %lld, expected %lld\n",
                    __FILE__, __LINE__, i, out[i], want2[i]);
            return SCN_WRONG;
        }
    return CUS_SUCCESS;
}

/* --- module globals --------------------------------------------------------------
 * The __constant__ cusk_coeffs (4 floats, initially 1 2 3 4) and the
 * __device__ cusk_counter (initially 7): read, bounds-checked, rewritten,
 * then used by scale_by_coeffs, which writes coeffs[i % 4] * in[i] and
 * counts its threads in the counter. */
static cus_status scn_globals(void *arg)
{
    (void)arg;
    enum { N = 100 };
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(primary0(&ctx));
    cus_autoptr(cus_module) mod = NULL;
    CUS_TRY(load_image(ctx, &cusk_globals, FORM_PTX, &mod, NULL));
    CUdeviceptr coeffs = 0, counter = 0;
    size_t bytes = 0;
    CUS_TRY(cus_module_get_global(mod, "cusk_coeffs", &coeffs, &bytes));
    EXPECT(coeffs != 0 && bytes == 4 * sizeof(float));
    CUS_TRY(cus_module_get_global(mod, "cusk_counter", &counter, &bytes));
    EXPECT(counter != 0 && bytes == sizeof(unsigned int));
    EXPECT_STATUS(cus_module_get_global(mod, "cusk_nothing", NULL, NULL), CUDA_ERROR_NOT_FOUND);

    float c[4] = {0};
    unsigned int count = 0;
    CUS_TRY(cus_module_copy_from_global(c, mod, "cusk_coeffs", 0, sizeof c));
    EXPECT(c[0] == 1.0f && c[1] == 2.0f && c[2] == 3.0f && c[3] == 4.0f);
    CUS_TRY(cus_module_copy_from_global(&count, mod, "cusk_counter", 0, sizeof count));
    EXPECT(count == 7);
    float last = 0.0f;
    CUS_TRY(cus_module_copy_from_global(&last, mod, "cusk_coeffs", 12, sizeof last));
    EXPECT(last == 4.0f);
    EXPECT_STATUS(cus_module_copy_to_global(mod, "cusk_coeffs", 8, c, sizeof c),
                  CUS_ERROR_OUT_OF_RANGE);
    EXPECT_STATUS(cus_module_copy_from_global(&count, mod, "cusk_counter", 1, sizeof count),
                  CUS_ERROR_OUT_OF_RANGE);

    static const float nc[4] = {0.5f, -1.0f, 2.0f, 4.0f};
    CUS_TRY(cus_module_copy_to_global(mod, "cusk_coeffs", 0, nc, sizeof nc));
    count = 0;
    CUS_TRY(cus_module_copy_to_global(mod, "cusk_counter", 0, &count, sizeof count));

    cus_autoptr(cus_function) fn = NULL;
    CUS_TRY(cus_module_get_function(mod, "scale_by_coeffs", &fn));
    twins_bind_globals(fn, coeffs, counter); /* the fake's twin reads them there */
    float in[N], out[N];
    for (int i = 0; i < N; i++)
        in[i] = (float)(i + 1);
    cus_autoptr(cus_buffer) din = NULL;
    cus_autoptr(cus_buffer) dout = NULL;
    CUS_TRY(cus_buffer_alloc_n(ctx, float, N, &din));
    CUS_TRY(cus_buffer_alloc_n(ctx, float, N, &dout));
    CUS_TRY(cus_copy_to_device(din, 0, in, sizeof in));
    cus_autoptr(cus_stream) s = NULL;
    CUS_TRY(cus_stream_create(ctx, 0, 0, &s));
    CUS_TRY(cus_launch(fn, 2, 64, 0, s, din, dout, (int)N)); /* 128 threads, 100 at work */
    CUS_TRY(cus_stream_synchronize(s));
    CUS_TRY(cus_copy_to_host(out, dout, 0, sizeof out));
    for (int i = 0; i < N; i++)
        EXPECT(out[i] == nc[i % 4] * in[i]);
    CUS_TRY(cus_module_copy_from_global(&count, mod, "cusk_counter", 0, sizeof count));
    EXPECT(count == N);
    CUS_TRY(cus_launch(fn, 1, 32, 0, s, din, dout, (int)10)); /* 10 more */
    CUS_TRY(cus_stream_synchronize(s));
    CUS_TRY(cus_module_copy_from_global(&count, mod, "cusk_counter", 0, sizeof count));
    EXPECT(count == N + 10);
    return CUS_SUCCESS;
}

/* --- a function outlives its module's (and context's) references -----------
 * sum from the device's cubin: the module and the context are released
 * right after use, and the function, which holds the module (which holds
 * the context), still launches. */
static cus_status scn_cubin_function_keeps_module(void *arg)
{
    (void)arg;
    enum { N = 300 };
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(primary0(&ctx));
    cus_autoptr(cus_module) mod = NULL;
    cus_image_format format = CUS_IMAGE_UNKNOWN;
    CUS_TRY(load_image(ctx, &cusk_sum, FORM_CUBIN, &mod, &format));
    cus_autoptr(cus_function) fn = NULL;
    CUS_TRY(cus_module_get_function(mod, "sum", &fn));
    cus_autoptr(cus_buffer) dx = NULL;
    cus_autoptr(cus_buffer) dout = NULL;
    CUS_TRY(cus_buffer_alloc_n(ctx, float, N, &dx));
    CUS_TRY(cus_buffer_alloc_n(ctx, float, N, &dout));
    cus_autoptr(cus_stream) s = NULL;
    CUS_TRY(cus_stream_create(ctx, 0, 0, &s));
    mod = cus_module_unref(mod);
    ctx = cus_context_unref(ctx);

    cus_module *held = cus_function_module(fn); /* borrowed, alive through fn */
    EXPECT(held != NULL && cus_module_format(held) == format);
    EXPECT(cus_module_context(held) == cus_stream_context(s));
    {
        cus_autoptr(cus_function) again = NULL;
        CUS_TRY(cus_module_get_function(held, "sum", &again));
        EXPECT(again == fn);
    }
    float x[N], out[N];
    for (int i = 0; i < N; i++)
        x[i] = (float)(3 * i) - 100.0f;
    CUS_TRY(cus_copy_to_device(dx, 0, x, sizeof x));
    CUS_TRY(cus_launch(fn, cus_grid_for(N, 128), 128, 0, s, dx, dx, dout, (int)N));
    CUS_TRY(cus_stream_synchronize(s));
    CUS_TRY(cus_copy_to_host(out, dout, 0, sizeof out));
    for (int i = 0; i < N; i++)
        EXPECT(out[i] == 2.0f * x[i]);
    return CUS_SUCCESS;
}

/* --- two streams ordered by events ---------------------------------------------------
 * sum on stream a (out = x + y), an event recorded after it, stream b
 * waiting for it and running saxpy over sum's output (z = 2 out + z). With
 * x = i, y = 2i and z = -i, z ends as exactly 5i. */
static cus_status scn_launch_on_two_streams(void *arg)
{
    (void)arg;
    enum { N = 512 };
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(primary0(&ctx));
    cus_autoptr(cus_module) msum = NULL;
    cus_autoptr(cus_module) msaxpy = NULL;
    CUS_TRY(load_image(ctx, &cusk_sum, FORM_FATBIN, &msum, NULL));
    CUS_TRY(load_image(ctx, &cusk_saxpy, FORM_PTX, &msaxpy, NULL));
    cus_autoptr(cus_function) sum = NULL;
    cus_autoptr(cus_function) saxpy = NULL;
    CUS_TRY(cus_module_get_function(msum, "sum", &sum));
    CUS_TRY(cus_module_get_function(msaxpy, "saxpy", &saxpy));

    float x[N], y[N], z[N];
    for (int i = 0; i < N; i++) {
        x[i] = (float)i;
        y[i] = (float)(2 * i);
        z[i] = (float)-i;
    }
    cus_autoptr(cus_buffer) dx = NULL;
    cus_autoptr(cus_buffer) dy = NULL;
    cus_autoptr(cus_buffer) dmid = NULL;
    cus_autoptr(cus_buffer) dz = NULL;
    CUS_TRY(cus_buffer_alloc_n(ctx, float, N, &dx));
    CUS_TRY(cus_buffer_alloc_n(ctx, float, N, &dy));
    CUS_TRY(cus_buffer_alloc_n(ctx, float, N, &dmid));
    CUS_TRY(cus_buffer_alloc_n(ctx, float, N, &dz));
    CUS_TRY(cus_copy_to_device(dx, 0, x, sizeof x));
    CUS_TRY(cus_copy_to_device(dy, 0, y, sizeof y));
    CUS_TRY(cus_copy_to_device(dz, 0, z, sizeof z));

    cus_autoptr(cus_stream) a = NULL;
    cus_autoptr(cus_stream) b = NULL;
    CUS_TRY(cus_stream_create(ctx, 0, 0, &a));
    CUS_TRY(cus_stream_create(ctx, 0, 0, &b));
    cus_autoptr(cus_event) sum_done = NULL;
    cus_autoptr(cus_event) saxpy_done = NULL;
    CUS_TRY(cus_event_create(ctx, CU_EVENT_DISABLE_TIMING, &sum_done));
    CUS_TRY(cus_event_create(ctx, CU_EVENT_DISABLE_TIMING, &saxpy_done));

    CUS_TRY(cus_launch(sum, cus_grid_for(N, 128), 128, 0, a, dx, dy, dmid, (int)N));
    CUS_TRY(cus_event_record(sum_done, a));
    CUS_TRY(cus_stream_wait_event(b, sum_done));
    CUS_TRY(cus_launch(saxpy, cus_grid_for(N, 64), 64, 0, b, 2.0f, dmid, dz,
                       (unsigned long long)N));
    CUS_TRY(cus_event_record(saxpy_done, b));
    CUS_TRY(cus_event_synchronize(saxpy_done));
    bool done = false;
    CUS_TRY(cus_event_query(sum_done, &done));
    EXPECT(done); /* b waited for it */
    CUS_TRY(cus_copy_to_host(z, dz, 0, sizeof z));
    for (int i = 0; i < N; i++)
        EXPECT(z[i] == 5.0f * (float)i);
    CUS_TRY(cus_stream_synchronize(a));
    CUS_TRY(cus_stream_synchronize(b));
    return CUS_SUCCESS;
}

/* --- an image rotated through a texture (simpleTextureDrv) ---------------------
 * host -> pitched buffer -> array with 2D copies (the second on a stream), a
 * texture over the array with normalized coordinates and bilinear filtering,
 * rotate_texture reading it for every pixel (a cus_texture argument is its
 * handle), and the result against a CPU reference of the same sampling. The
 * image is x * y, which bilinear filtering reproduces exactly, so the
 * tolerance covers only the device's 8-bit filter weights. The rotation's
 * cosine and sine are 0.8 and 0.6, so that nothing needs libm. */
static float scn_floor(float v)
{
    float t = (float)(long)v;
    return t > v ? t - 1.0f : t;
}

static float scn_texel(const float *img, long w, long h, long x, long y)
{
    x = x < 0 ? 0 : x >= w ? w - 1 : x;
    y = y < 0 ? 0 : y >= h ? h - 1 : y;
    return img[y * w + x];
}

static cus_status scn_texture_rotate(void *arg)
{
    (void)arg;
    enum { W = 64, H = 48 };
    const float c = 0.8f, s = 0.6f;
    static float img[H][W], got[H][W];
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            img[y][x] = ((float)x / W) * ((float)y / H);
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(primary0(&ctx));
    cus_autoptr(cus_module) mod = NULL;
    CUS_TRY(load_image(ctx, &cusk_texture, FORM_FATBIN, &mod, NULL));
    cus_autoptr(cus_function) fn = NULL;
    CUS_TRY(cus_module_get_function(mod, "rotate_texture", &fn));

    size_t pitch = 0;
    cus_autoptr(cus_buffer) pitched = NULL;
    CUS_TRY(cus_buffer_alloc_pitch(ctx, sizeof img[0], H, sizeof(float), &pitched, &pitch));
    EXPECT(pitch >= sizeof img[0] && cus_buffer_pitch(pitched) == pitch);
    CUS_TRY(cus_copy_2d(&(cus_copy_2d_desc){cus_copy_buffer(pitched, 0, 0),
                                            cus_copy_host(img, sizeof img[0]), sizeof img[0], H}));
    cus_autoptr(cus_array) array = NULL;
    CUS_TRY(cus_array_create(ctx,
                             &(CUDA_ARRAY3D_DESCRIPTOR){.Width = W, .Height = H,
                                                        .Format = CU_AD_FORMAT_FLOAT,
                                                        .NumChannels = 1},
                             &array));
    CUDA_ARRAY3D_DESCRIPTOR d;
    CUS_TRY(cus_array_descriptor(array, &d));
    EXPECT(d.Width == W && d.Height == H && d.NumChannels == 1);
    cus_autoptr(cus_stream) st = NULL;
    CUS_TRY(cus_stream_create(ctx, 0, 0, &st));
    CUS_TRY(cus_copy_2d_async(&(cus_copy_2d_desc){cus_copy_array(array, 0, 0),
                                                  cus_copy_buffer(pitched, 0, 0), sizeof img[0],
                                                  H},
                              st));
    /* A region past the array never reaches the driver. */
    EXPECT(cus_copy_2d(&(cus_copy_2d_desc){cus_copy_array(array, 0, 1),
                                           cus_copy_buffer(pitched, 0, 0), sizeof img[0], H}) ==
           CUS_ERROR_OUT_OF_RANGE);

    CUDA_TEXTURE_DESC td = cus_texture_desc(CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_LINEAR,
                                            CU_TRSF_NORMALIZED_COORDINATES);
    cus_autoptr(cus_texture) tex = NULL;
    CUS_TRY(cus_texture_create_array(array, &td, NULL, &tex));
    CUDA_RESOURCE_DESC res;
    CUS_TRY(cus_texture_resource_desc(tex, &res));
    EXPECT(res.resType == CU_RESOURCE_TYPE_ARRAY && res.res.array.hArray == cus_array_handle(array));
    cus_autoptr(cus_buffer) out = NULL;
    CUS_TRY(cus_buffer_alloc_n(ctx, float, W * H, &out));
    CUS_TRY(cus_launch(fn, CUS_DIM3(W / 16, H / 16, 1), CUS_DIM3(16, 16, 1), 0, st, out, tex,
                       (unsigned int)W, (unsigned int)H, c, s));
    CUS_TRY(cus_stream_synchronize(st));
    CUS_TRY(cus_copy_to_host(got, out, 0, sizeof got));
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            float u = (float)x / (float)W - 0.5f, v = (float)y / (float)H - 0.5f;
            float xb = (u * c - v * s + 0.5f) * W - 0.5f, yb = (v * c + u * s + 0.5f) * H - 0.5f;
            float fx = scn_floor(xb), fy = scn_floor(yb), a = xb - fx, b = yb - fy;
            long i = (long)fx, j = (long)fy;
            const float *p = &img[0][0];
            float want = (1 - a) * (1 - b) * scn_texel(p, W, H, i, j) +
                         a * (1 - b) * scn_texel(p, W, H, i + 1, j) +
                         (1 - a) * b * scn_texel(p, W, H, i, j + 1) +
                         a * b * scn_texel(p, W, H, i + 1, j + 1);
            float diff = got[y][x] - want;
            if (diff > 1e-3f || diff < -1e-3f) {
                fprintf(stderr, "texture_rotate: (%d, %d) = %g, expected %g\n", x, y,
                        (double)got[y][x], (double)want);
                return SCN_WRONG;
            }
        }
    return CUS_SUCCESS;
}

const scenario module_scenarios[] = {
    {"sum_ptx", scn_sum_ptx},
    {"saxpy_fatbin", scn_saxpy_fatbin},
    {"mixed_params", scn_mixed_params},
    {"globals", scn_globals},
    {"cubin_function_keeps_module", scn_cubin_function_keeps_module},
    {"launch_on_two_streams", scn_launch_on_two_streams},
    {"texture_rotate", scn_texture_rotate},
    {NULL, NULL},
};
