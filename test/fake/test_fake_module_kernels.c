/* The fake_module tests, part kernels: the kernels of kernels/ in every
 * format (skipped without nvcc). Their fixtures, and what the fake_module
 * tests are about: fake_module_fixtures.h. */
#include "fake_module_fixtures.h"

/* --- the kernels of kernels/ ------------------------------------------------------------------ */

#ifdef CUS_TEST_HAVE_KERNELS

typedef struct image_form {
    const char *what;
    const void *data;
} image_form;

/* The forms of an image the 9.0 device runs: PTX, the fatbin, the sm_90 cubin. */
static int forms_of(const cusk_image *img, image_form out[3])
{
    int n = 0;
    out[n++] = (image_form){"PTX", img->ptx};
    out[n++] = (image_form){"fatbin", img->fatbin};
    const cusk_cubin *c = cusk_cubin_for(img, 90);
    if (c)
        out[n++] = (image_form){"sm_90 cubin", c->data};
    return n;
}

static CUmodule load_form(const image_form *f)
{
    CUmodule m = NULL;
    CUresult r = D.load_data(&m, f->data);
    if (r != CUDA_SUCCESS)
        fail_msg("loading the %s: %d", f->what, (int)r);
    return m;
}

static void test_kernels_load_in_every_format(void **state)
{
    (void)state;
    static const struct {
        const cusk_image *img;
        const char *kernels[3];
    } all[] = {
        {&cusk_sum, {"sum"}},
        {&cusk_empty, {"empty", "empty1", "empty16"}},
        {&cusk_saxpy, {"saxpy"}},
        {&cusk_params, {"mixed"}},
        {&cusk_globals, {"scale_by_coeffs"}},
        {&cusk_fault, {"fault"}},
    };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        image_form forms[3];
        int n = forms_of(all[i].img, forms);
        for (int k = 0; k < n; k++) {
            CUmodule m = load_form(&forms[k]);
            for (int j = 0; j < 3 && all[i].kernels[j]; j++)
                function(m, all[i].kernels[j]);
#if CUDA_VERSION >= 12040
            unsigned int count = 0;
            assert_cu_ok(D.function_count(&count, m));
            assert_int_equal(count, all[i].kernels[1] ? 3 : 1);
#endif
            assert_cu_ok(D.unload(m));
        }
        /* cuModuleLoadFatBinary takes the fatbin too. */
        CUmodule m = NULL;
        assert_cu_ok(D.load_fatbin(&m, all[i].img->fatbin));
        assert_cu_ok(D.unload(m));
        /* SASS for sm_80 does not run on a 9.0 device. */
        const cusk_cubin *c80 = cusk_cubin_for(all[i].img, 80);
        if (c80)
            assert_cu(D.load_data(&m, c80->data), CUDA_ERROR_NO_BINARY_FOR_GPU);
    }
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 0);
}

static void test_kernels_on_an_sm86_device(void **state)
{
    (void)state;
    CUmodule m = NULL;
    const cusk_cubin *c80 = cusk_cubin_for(&cusk_sum, 80);
    const cusk_cubin *c90 = cusk_cubin_for(&cusk_sum, 90);
    if (!c80 || !c90)
        skip();
    assert_cu_ok(D.load_data(&m, c80->data)); /* 8.0 SASS runs on 8.6 */
    CUfunction f = function(m, "sum");
    assert_int_equal(attr(f, CU_FUNC_ATTRIBUTE_BINARY_VERSION), 80);
    assert_cu_ok(D.unload(m));
    assert_cu(D.load_data(&m, c90->data), CUDA_ERROR_NO_BINARY_FOR_GPU);
    assert_cu_ok(D.load_data(&m, cusk_sum.ptx)); /* PTX for sm_80: JIT-compiled for 8.6 */
    assert_int_equal(attr(function(m, "sum"), CU_FUNC_ATTRIBUTE_BINARY_VERSION), 86);
    assert_cu_ok(D.unload(m));
}

static void test_kernels_ptx_needs_a_recent_driver(void **state)
{
    (void)state;
    CUmodule m = NULL;
    /* nvcc 13 writes PTX ISA 9.0, which a 12.0 driver cannot compile. */
    assert_cu(D.load_data(&m, cusk_sum.ptx), CUDA_ERROR_UNSUPPORTED_PTX_VERSION);
    const cusk_cubin *c90 = cusk_cubin_for(&cusk_sum, 90);
    if (c90) { /* SASS needs no JIT */
        assert_cu_ok(D.load_data(&m, c90->data));
        assert_cu_ok(D.unload(m));
    }
}

#define CHECK_PARAM(f, i, off_, size_)                                         \
    do {                                                                       \
        size_t o_ = 0, s_ = 0;                                                 \
        assert_cu_ok(D.param_info((f), (i), &o_, &s_));                        \
        if (o_ != (off_) || s_ != (size_))                                     \
            fail_msg("%s: param %d at %zu (%zu bytes), expected %zu (%zu)", forms[k].what, \
                     (int)(i), o_, s_, (size_t)(off_), (size_t)(size_));       \
    } while (0)

static void test_kernels_parameter_layouts(void **state)
{
    (void)state;
#if CUDA_VERSION >= 12040
    image_form forms[3];
    int n = forms_of(&cusk_params, forms);
    for (int k = 0; k < n; k++) {
        CUmodule m = load_form(&forms[k]);
        CUfunction f = function(m, "mixed");
        /* signed char, unsigned char, int, float, double, cusk_triple (24, align 8),
         * const int *, long long * */
        static const size_t layout[][2] = {{0, 1}, {1, 1}, {4, 4}, {8, 4},
                                           {16, 8}, {24, 24}, {48, 8}, {56, 8}};
        for (size_t i = 0; i < 8; i++)
            CHECK_PARAM(f, i, layout[i][0], layout[i][1]);
        size_t o = 0;
        assert_cu(D.param_info(f, 8, &o, NULL), CUDA_ERROR_INVALID_VALUE);
        assert_cu_ok(D.unload(m));
    }
    n = forms_of(&cusk_empty, forms);
    for (int k = 0; k < n; k++) {
        CUmodule m = load_form(&forms[k]);
        CUfunction f = function(m, "empty16");
        static const size_t layout[][2] = {{0, 1},   {4, 4},   {8, 4},   {16, 8},
                                           {24, 8},  {32, 2},  {40, 8},  {48, 16},
                                           {64, 1},  {68, 4},  {72, 4},  {80, 8},
                                           {88, 8},  {96, 2},  {104, 8}, {112, 4}};
        for (size_t i = 0; i < 16; i++)
            CHECK_PARAM(f, i, layout[i][0], layout[i][1]);
        size_t o = 0;
        assert_cu(D.param_info(f, 16, &o, NULL), CUDA_ERROR_INVALID_VALUE);
        assert_cu(D.param_info(function(m, "empty"), 0, &o, NULL), CUDA_ERROR_INVALID_VALUE);
        CHECK_PARAM(function(m, "empty1"), 0, 0, 4);
        assert_cu_ok(D.unload(m));
    }
#else
    skip();
#endif
}

static void test_kernels_globals_with_their_initial_values(void **state)
{
    (void)state;
    image_form forms[3];
    int n = forms_of(&cusk_globals, forms);
    for (int k = 0; k < n; k++) {
        CUmodule m = load_form(&forms[k]);
        CUdeviceptr coeffs = 0, counter = 0;
        size_t bytes = 0;
        assert_cu_ok(D.get_global(&coeffs, &bytes, m, "cusk_coeffs"));
        assert_int_equal(bytes, 16);
        float c[4] = {0};
        assert_cu_ok(D.dtoh(c, coeffs, sizeof c));
        for (int i = 0; i < 4; i++)
            assert_float_equal(c[i], (float)(i + 1), 0);
        assert_cu_ok(D.get_global(&counter, &bytes, m, "cusk_counter"));
        assert_int_equal(bytes, 4);
        unsigned int v = 0;
        assert_cu_ok(D.dtoh(&v, counter, 4));
        assert_int_equal(v, 7);
        assert_int_equal(attr(function(m, "scale_by_coeffs"), CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES), 16);
        assert_cu_ok(D.unload(m));
    }
}

/* Host twins of kernels/sum.cu, saxpy.cu, params.cu, globals.cu and fault.cu:
 * one loop over the grid's threads, as the device would run them. */
static unsigned long long thread_count(const cus_fake_launch *l)
{
    return (unsigned long long)l->grid[0] * l->grid[1] * l->grid[2] * l->block[0] * l->block[1] *
           l->block[2];
}

static void *ptr_arg(void *arg)
{
    CUdeviceptr p;
    memcpy(&p, arg, sizeof p);
    return (void *)(uintptr_t)p;
}

static CUresult sum_twin(const cus_fake_launch *l, void **args, void *user)
{
    (void)user;
    const float *x = ptr_arg(args[0]), *y = ptr_arg(args[1]);
    float *out = ptr_arg(args[2]);
    int count;
    memcpy(&count, args[3], sizeof count);
    unsigned long long threads = thread_count(l);
    for (unsigned long long t = 0; t < threads; t++)
        for (unsigned long long i = t; i < (unsigned long long)count; i += threads)
            out[i] = x[i] + y[i];
    return CUDA_SUCCESS;
}

static CUresult saxpy_twin(const cus_fake_launch *l, void **args, void *user)
{
    (void)user;
    float a;
    memcpy(&a, args[0], sizeof a);
    const float *x = ptr_arg(args[1]);
    float *y = ptr_arg(args[2]);
    unsigned long long n;
    memcpy(&n, args[3], sizeof n);
    for (unsigned long long i = 0; i < thread_count(l) && i < n; i++)
        y[i] = a * x[i] + y[i];
    return CUDA_SUCCESS;
}

static void test_kernels_sum_and_saxpy_through_host_twins(void **state)
{
    (void)state;
    assert_ok(cus_fake_register_kernel("sum", sum_twin, NULL));
    assert_ok(cus_fake_register_kernel("saxpy", saxpy_twin, NULL));
    CUmodule ms = NULL, mx = NULL;
    assert_cu_ok(D.load_data(&ms, cusk_sum.fatbin));
    assert_cu_ok(D.load_data(&mx, cusk_saxpy.ptx));
    enum { N = 1000 };
    static float x[N], y[N], out[N];
    for (int i = 0; i < N; i++) {
        x[i] = (float)i;
        y[i] = (float)(2 * i);
    }
    CUdeviceptr dx = 0, dy = 0, dout = 0;
    assert_cu_ok(D.alloc(&dx, sizeof x));
    assert_cu_ok(D.alloc(&dy, sizeof y));
    assert_cu_ok(D.alloc(&dout, sizeof out));
    assert_cu_ok(D.htod(dx, x, sizeof x));
    assert_cu_ok(D.htod(dy, y, sizeof y));
    CUstream s = NULL;
    assert_cu_ok(D.stream_create(&s, 0));
    int count = N;
    void *sum_args[] = {&dx, &dy, &dout, &count};
    assert_cu_ok(D.launch(function(ms, "sum"), 2, 1, 1, 128, 1, 1, 0, s, sum_args, NULL));
    float a = 0.5f;
    unsigned long long n = N;
    void *saxpy_args[] = {&a, &dx, &dy, &n};
    assert_cu_ok(D.launch(function(mx, "saxpy"), (N + 255) / 256, 1, 1, 256, 1, 1, 0, s,
                          saxpy_args, NULL));
    cus_fake_launch rec;
    assert_ok(cus_fake_last_launch(&rec));
    assert_int_equal(rec.arg_bytes, 32);
    assert_memory_equal(rec.args + 24, &n, 8);
    assert_cu_ok(D.stream_sync(s));
    assert_cu_ok(D.dtoh(out, dout, sizeof out));
    for (int i = 0; i < N; i++)
        assert_float_equal(out[i], 3.0f * (float)i, 0);
    assert_cu_ok(D.dtoh(y, dy, sizeof y));
    for (int i = 0; i < N; i++)
        assert_float_equal(y[i], 2.5f * (float)i, 0);
    assert_cu_ok(D.stream_destroy(s));
    assert_cu_ok(D.free(dx));
    assert_cu_ok(D.free(dy));
    assert_cu_ok(D.free(dout));
    assert_cu_ok(D.unload(ms));
    assert_cu_ok(D.unload(mx));
}

struct cusk_triple_h {
    char c;
    double d;
    int i;
};

static CUresult mixed_twin(const cus_fake_launch *l, void **args, void *user)
{
    (void)l;
    (void)user;
    signed char c8;
    unsigned char u8;
    int i32;
    float f32;
    double d64;
    struct cusk_triple_h t;
    memcpy(&c8, args[0], 1);
    memcpy(&u8, args[1], 1);
    memcpy(&i32, args[2], 4);
    memcpy(&f32, args[3], 4);
    memcpy(&d64, args[4], 8);
    memcpy(&t, args[5], sizeof t);
    const int *p = ptr_arg(args[6]);
    long long *out = ptr_arg(args[7]);
    out[0] = c8;
    out[1] = u8;
    out[2] = i32;
    out[3] = (long long)(f32 * 1000.0f);
    out[4] = (long long)(d64 * 1000.0);
    out[5] = t.c;
    out[6] = (long long)(t.d * 1000.0);
    out[7] = t.i;
    out[8] = p ? *p : -1;
    return CUDA_SUCCESS;
}

static void test_kernels_mixed_arguments_arrive_at_their_offsets(void **state)
{
    (void)state;
    _Static_assert(sizeof(struct cusk_triple_h) == 24, "cusk_triple is 24 bytes");
    assert_ok(cus_fake_register_kernel("mixed", mixed_twin, NULL));
    const cusk_cubin *c90 = cusk_cubin_for(&cusk_params, 90);
    CUmodule m = NULL;
    assert_cu_ok(D.load_data(&m, c90 ? (const void *)c90->data : cusk_params.ptx));
    CUdeviceptr dp = 0, dout = 0;
    assert_cu_ok(D.alloc(&dp, sizeof(int)));
    assert_cu_ok(D.alloc(&dout, 9 * sizeof(long long)));
    int pv = 4242;
    assert_cu_ok(D.htod(dp, &pv, sizeof pv));
    signed char c8 = -5;
    unsigned char u8 = 250;
    int i32 = -123456;
    float f32 = 1.5f;
    double d64 = -2.25;
    struct cusk_triple_h t;
    memset(&t, 0, sizeof t); /* the padding too: the record is compared whole */
    t.c = 'z';
    t.d = 3.125;
    t.i = 99;
    void *args[] = {&c8, &u8, &i32, &f32, &d64, &t, &dp, &dout};
    assert_cu_ok(D.launch(function(m, "mixed"), 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
    cus_fake_launch rec;
    assert_ok(cus_fake_last_launch(&rec));
    assert_int_equal(rec.nargs, 8);
    assert_int_equal(rec.arg_bytes, 64);
    assert_memory_equal(rec.args + 0, &c8, 1);
    assert_memory_equal(rec.args + 1, &u8, 1);
    assert_memory_equal(rec.args + 4, &i32, 4);
    assert_memory_equal(rec.args + 8, &f32, 4);
    assert_memory_equal(rec.args + 16, &d64, 8);
    assert_memory_equal(rec.args + 24, &t, 24);
    assert_memory_equal(rec.args + 48, &dp, 8);
    assert_memory_equal(rec.args + 56, &dout, 8);
    long long out[9] = {0};
    assert_cu_ok(D.dtoh(out, dout, sizeof out)); /* runs the default stream first */
    static const long long want[9] = {-5, 250, -123456, 1500, -2250, 'z', 3125, 99, 4242};
    assert_memory_equal(out, want, sizeof want);
    assert_cu_ok(D.free(dp));
    assert_cu_ok(D.free(dout));
    assert_cu_ok(D.unload(m));
}

typedef struct coeffs_env {
    CUdeviceptr coeffs, counter;
} coeffs_env;

static CUresult scale_twin(const cus_fake_launch *l, void **args, void *user)
{
    const coeffs_env *env = user;
    const float *in = ptr_arg(args[0]);
    float *out = ptr_arg(args[1]);
    int n;
    memcpy(&n, args[2], sizeof n);
    const float *coeffs = (const float *)(uintptr_t)env->coeffs;
    unsigned int *counter = (unsigned int *)(uintptr_t)env->counter;
    for (unsigned long long i = 0; i < thread_count(l) && i < (unsigned long long)n; i++) {
        out[i] = coeffs[i % 4] * in[i];
        (*counter)++;
    }
    return CUDA_SUCCESS;
}

static void test_kernels_a_host_twin_uses_the_module_globals(void **state)
{
    (void)state;
    CUmodule m = NULL;
    assert_cu_ok(D.load_data(&m, cusk_globals.fatbin));
    coeffs_env env;
    assert_cu_ok(D.get_global(&env.coeffs, NULL, m, "cusk_coeffs"));
    assert_cu_ok(D.get_global(&env.counter, NULL, m, "cusk_counter"));
    assert_ok(cus_fake_register_kernel("scale_by_coeffs", scale_twin, &env));
    float in[10], out[10];
    for (int i = 0; i < 10; i++)
        in[i] = 1.0f + (float)i;
    CUdeviceptr din = 0, dout = 0;
    assert_cu_ok(D.alloc(&din, sizeof in));
    assert_cu_ok(D.alloc(&dout, sizeof out));
    assert_cu_ok(D.htod(din, in, sizeof in));
    int n = 10;
    void *args[] = {&din, &dout, &n};
    assert_cu_ok(D.launch(function(m, "scale_by_coeffs"), 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
    assert_cu_ok(D.ctx_sync());
    assert_cu_ok(D.dtoh(out, dout, sizeof out));
    for (int i = 0; i < 10; i++)
        assert_float_equal(out[i], (float)(i % 4 + 1) * in[i], 0);
    unsigned int counter = 0;
    assert_cu_ok(D.dtoh(&counter, env.counter, 4));
    assert_int_equal(counter, 7 + 10);
    assert_cu_ok(D.free(din));
    assert_cu_ok(D.free(dout));
    assert_cu_ok(D.unload(m));
}

static CUresult fault_twin(const cus_fake_launch *l, void **args, void *user)
{
    (void)l;
    (void)user;
    int *bad = ptr_arg(args[0]);
    (void)bad; /* *bad = 42 on an address that maps nothing */
    return CUDA_ERROR_ILLEGAL_ADDRESS;
}

static void test_kernels_fault_poisons_the_context(void **state)
{
    (void)state;
    assert_ok(cus_fake_register_kernel("fault", fault_twin, NULL));
    CUmodule m = NULL;
    assert_cu_ok(D.load_data(&m, cusk_fault.ptx));
    CUfunction f = function(m, "fault");
    CUdeviceptr bad = 0x10; /* maps nothing */
    void *args[] = {&bad};
    assert_cu_ok(D.launch(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
    assert_cu(D.ctx_sync(), CUDA_ERROR_ILLEGAL_ADDRESS);
    assert_cu(D.ctx_sync(), CUDA_ERROR_ILLEGAL_ADDRESS);
    CUdeviceptr p = 0;
    assert_cu(D.alloc(&p, 4), CUDA_ERROR_ILLEGAL_ADDRESS);
    assert_cu(D.launch(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL), CUDA_ERROR_ILLEGAL_ADDRESS);
    CUfunction g = NULL;
    assert_cu(D.get_function(&g, m, "fault"), CUDA_ERROR_ILLEGAL_ADDRESS);
    /* As on the H200: the unload is refused; the context's death unloads it. */
    assert_cu(D.unload(m), CUDA_ERROR_ILLEGAL_ADDRESS);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 1);
    assert_cu_ok(D.ctx_destroy(ctx));
    ctx = NULL;
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
}

#else

static void test_kernels_are_skipped_without_nvcc(void **state)
{
    (void)state;
    skip();
}

#endif /* CUS_TEST_HAVE_KERNELS */

int main(void)
{
    const struct CMUnitTest tests[] = {
#ifdef CUS_TEST_HAVE_KERNELS
        MOD_TEST(test_kernels_load_in_every_format),
        MOD_TEST_SM86(test_kernels_on_an_sm86_device),
        MOD_TEST_12000(test_kernels_ptx_needs_a_recent_driver),
        MOD_TEST(test_kernels_parameter_layouts),
        MOD_TEST(test_kernels_globals_with_their_initial_values),
        MOD_TEST(test_kernels_sum_and_saxpy_through_host_twins),
        MOD_TEST(test_kernels_mixed_arguments_arrive_at_their_offsets),
        MOD_TEST(test_kernels_a_host_twin_uses_the_module_globals),
        MOD_TEST(test_kernels_fault_poisons_the_context),
#else
        cmocka_unit_test(test_kernels_are_skipped_without_nvcc),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
