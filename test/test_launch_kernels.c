/* The launch tests, part kernels: the kernels of kernels/ launched (skipped
 * without nvcc). Their fixtures, and what the launch tests are about:
 * launch_fixtures.h. */
#include "launch_fixtures.h"

/* --- the kernels of kernels/ -------------------------------------------------------------- */

#ifdef CUS_TEST_HAVE_KERNELS

static CUresult saxpy_twin(const cus_fake_launch *l, void **args, void *user)
{
    return axpy_twin(l, args, user); /* the same parameters */
}

/* The layouts nvcc wrote, from every form of the image. */
static void test_kernels_launch_checked_by_their_real_layout(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    const void *forms[3] = {cusk_saxpy.ptx, cusk_saxpy.fatbin, NULL};
    size_t sizes[3] = {cusk_saxpy.ptx_size + 1, cusk_saxpy.fatbin_size, 0};
    const cusk_cubin *c90 = cusk_cubin_for(&cusk_saxpy, 90);
    if (c90) {
        forms[2] = c90->data;
        sizes[2] = c90->size;
    }
    twin_log log = {0};
    for (int k = 0; k < 3 && forms[k]; k++) {
        assert_ok(cus_fake_register_kernel("saxpy", saxpy_twin, &log));
        cus_module *m = NULL;
        assert_ok(cus_module_load_data(c, forms[k], sizes[k], NULL, &m));
        cus_function *f = get_fn(m, "saxpy");
        enum { N = 300 };
        float x[N], y[N];
        for (int i = 0; i < N; i++) {
            x[i] = 1.0f;
            y[i] = (float)i;
        }
        cus_buffer *bx = NULL, *by = NULL;
        assert_ok(cus_buffer_alloc(c, sizeof x, &bx));
        assert_ok(cus_buffer_alloc(c, sizeof y, &by));
        assert_ok(cus_copy_to_device(bx, 0, x, sizeof x));
        assert_ok(cus_copy_to_device(by, 0, y, sizeof y));
        int n = N;
        assert_refused(cus_launch(f, cus_grid_for(N, 128), 128, 0, NULL, 2.0f, bx, by, n),
                       CUS_ERROR_INVALID_ARGUMENT,
                       "saxpy: argument 4 is 4 bytes, the kernel's parameter is 8");
        assert_ok(cus_launch(f, cus_grid_for(N, 128), 128, 0, NULL, 2.0f, bx, by, (size_t)n));
        assert_ok(cus_copy_to_host(y, by, 0, sizeof y));
        for (int i = 0; i < N; i++)
            assert_float_equal(y[i], (float)i + 2.0f, 0);
        bx = cus_buffer_unref(bx);
        by = cus_buffer_unref(by);
        f = cus_function_unref(f);
        m = cus_module_unref(m);
    }
    assert_int_equal(log.runs, c90 ? 3 : 2);
    c = cus_context_unref(c);
}

static void test_kernels_empty_with_0_1_16_arguments(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    cus_module *m = NULL;
    assert_ok(cus_module_load_data(c, cusk_empty.fatbin, cusk_empty.fatbin_size, NULL, &m));
    cus_function *e0 = get_fn(m, "empty"), *e1 = get_fn(m, "empty1"), *e16 = get_fn(m, "empty16");
    assert_ok(cus_launch(e0, 1, 1, 0, NULL));
    assert_int_equal(last_launch().arg_bytes, 0);
    assert_ok(cus_launch(e1, 1, 1, 0, NULL, 7));
    assert_int_equal(last_launch().arg_bytes, 4);
    struct pair pr = {1, 2.0};
    assert_ok(cus_launch(e16, 1, 1, 0, NULL, (char)1, 2, 3.0f, 4.0, (void *)0, (short)6, 7ull, pr,
                         (char)9, 10, 11.0f, 12.0, (void *)0, (short)14, 15ull, 16));
    cus_fake_launch rec = last_launch();
    assert_int_equal(rec.arg_bytes, 116);
    int i15 = 0;
    memcpy(&i15, rec.args + 112, 4);
    assert_int_equal(i15, 16);
    assert_refused(cus_launch(e1, 1, 1, 0, NULL, 1, 2), CUS_ERROR_INVALID_ARGUMENT,
                   "empty1: 2 arguments given, the kernel takes 1");
    assert_ok(cus_context_synchronize(c));
    e0 = cus_function_unref(e0);
    e1 = cus_function_unref(e1);
    e16 = cus_function_unref(e16);
    m = cus_module_unref(m);
    c = cus_context_unref(c);
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
        ENV_TEST(test_kernels_launch_checked_by_their_real_layout),
        ENV_TEST(test_kernels_empty_with_0_1_16_arguments),
#else
        ENV_TEST(test_kernels_are_skipped_without_nvcc),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
