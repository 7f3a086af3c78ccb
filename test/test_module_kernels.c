/* The module tests, part kernels: the kernels of kernels/ in every format
 * (skipped without nvcc). Their fixtures, and what the module tests are
 * about: module_fixtures.h. */
#include "module_fixtures.h"

/* --- the kernels of kernels/ -------------------------------------------------------------- */

#ifdef CUS_TEST_HAVE_KERNELS

static const struct {
    const cusk_image *img;
    const char *kernels[4];
} all_images[] = {
    {&cusk_sum, {"sum"}},
    {&cusk_empty, {"empty", "empty1", "empty16"}},
    {&cusk_saxpy, {"saxpy"}},
    {&cusk_params, {"mixed"}},
    {&cusk_globals, {"scale_by_coeffs"}},
    {&cusk_fault, {"fault"}},
};

static void check_kernels_of(cus_module *m, size_t i, const char *what)
{
    unsigned int count = 0;
    const char *names[4] = {NULL};
    assert_ok(cus_module_function_names(m, names, 4, &count));
    unsigned int want = 0;
    while (want < 4 && all_images[i].kernels[want])
        want++;
    if (count != want)
        fail_msg("%s of %s: %u kernels, expected %u", what, all_images[i].img->name, count, want);
    for (unsigned int k = 0; k < want; k++) {
        cus_function *f = get_fn(m, all_images[i].kernels[k]);
        assert_true(cus_function_layout_known(f));
        f = cus_function_unref(f);
    }
}

static void test_kernels_load_in_every_format(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    for (size_t i = 0; i < sizeof all_images / sizeof all_images[0]; i++) {
        const cusk_image *img = all_images[i].img;
        cus_module *m = NULL;
        /* PTX, with and without its size */
        assert_int_equal(cus_module_image_format(img->ptx, img->ptx_size), CUS_IMAGE_PTX);
        assert_ok(cus_module_load_data(c, img->ptx, img->ptx_size + 1, NULL, &m));
        assert_int_equal(cus_module_format(m), CUS_IMAGE_PTX);
        check_kernels_of(m, i, "PTX");
        m = cus_module_unref(m);
        assert_ok(cus_module_load_data(c, img->ptx, 0, NULL, &m));
        m = cus_module_unref(m);
        /* the fatbin */
        assert_int_equal(cus_module_image_format(img->fatbin, img->fatbin_size), CUS_IMAGE_FATBIN);
        assert_ok(cus_module_load_data(c, img->fatbin, img->fatbin_size, NULL, &m));
        assert_int_equal(cus_module_format(m), CUS_IMAGE_FATBIN);
        check_kernels_of(m, i, "fatbin");
        m = cus_module_unref(m);
        /* its wrapper */
        fatbin_wrapper w = {0x466243b1u, 1, img->fatbin, NULL};
        assert_ok(cus_module_load_data(c, &w, sizeof w, NULL, &m));
        assert_int_equal(cus_module_format(m), CUS_IMAGE_FATBIN_WRAPPER);
        m = cus_module_unref(m);
        /* the sm_90 cubin runs on the 9.0 device */
        const cusk_cubin *c90 = cusk_cubin_for(img, 90);
        if (c90) {
            assert_int_equal(cus_module_image_format(c90->data, c90->size), CUS_IMAGE_CUBIN);
            assert_ok(cus_module_load_data(c, c90->data, c90->size, NULL, &m));
            assert_int_equal(cus_module_format(m), CUS_IMAGE_CUBIN);
            check_kernels_of(m, i, "sm_90 cubin");
            m = cus_module_unref(m);
        }
        /* the sm_80 one does not */
        const cusk_cubin *c80 = cusk_cubin_for(img, 80);
        if (c80) {
            m = SENTINEL_PTR(m);
            assert_status(cus_module_load_data(c, c80->data, c80->size, NULL, &m),
                          CUDA_ERROR_NO_BINARY_FOR_GPU);
            assert_contains(cus_last_error_message(), "loading a cubin image");
            assert_ptr_equal(m, SENTINEL_PTR(m));
        }
    }
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 0);
    c = cus_context_unref(c);
}

static void test_kernels_load_from_files(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    const cusk_image *img = &cusk_empty;
    cus_module *m = NULL;
    const char *path = write_file("empty.ptx", img->ptx, img->ptx_size);
    assert_ok(cus_module_load_file(c, path, NULL, &m));
    assert_int_equal(cus_module_format(m), CUS_IMAGE_PTX);
    check_kernels_of(m, 1, "PTX file");
    m = cus_module_unref(m);
    remove_file(path);
    path = write_file("empty.fatbin", img->fatbin, img->fatbin_size);
    assert_ok(cus_module_load_file(c, path, NULL, &m));
    assert_int_equal(cus_module_format(m), CUS_IMAGE_FATBIN);
    check_kernels_of(m, 1, "fatbin file");
    m = cus_module_unref(m);
    remove_file(path);
    const cusk_cubin *c90 = cusk_cubin_for(img, 90);
    if (c90) {
        path = write_file("empty.cubin", c90->data, c90->size);
        assert_ok(cus_module_load_file(c, path, NULL, &m));
        assert_int_equal(cus_module_format(m), CUS_IMAGE_CUBIN);
        check_kernels_of(m, 1, "cubin file");
        m = cus_module_unref(m);
        /* cut in half: its section headers are past the end */
        remove_file(path);
        path = write_file("cut.cubin", c90->data, c90->size / 2);
        m = SENTINEL_PTR(m);
        assert_status(cus_module_load_file(c, path, NULL, &m), CUDA_ERROR_INVALID_IMAGE);
        assert_contains(cus_last_error_message(), "truncated cubin");
        assert_ptr_equal(m, SENTINEL_PTR(m));
        remove_file(path);
    }
    c = cus_context_unref(c);
}

static void test_kernels_truncated(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    const cusk_image *img = &cusk_saxpy;
    const cusk_cubin *c90 = cusk_cubin_for(img, 90);
    if (c90) {
        check_refused(c, c90->data, c90->size / 2, "truncated cubin");
        check_refused(c, c90->data, c90->size - 1, "truncated cubin");
        check_refused(c, c90->data, 40, "shorter than an ELF64 header");
    }
    check_refused(c, img->fatbin, img->fatbin_size / 2, "truncated fatbin");
    check_refused(c, img->fatbin, img->fatbin_size - 1, "truncated fatbin");
    check_refused(c, img->ptx, img->ptx_size, "is not NUL-terminated");
    c = cus_context_unref(c);
}

static void test_kernels_parameter_layouts(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    cus_module *m = NULL;
    const cusk_cubin *c90 = cusk_cubin_for(&cusk_params, 90);
    assert_ok(cus_module_load_data(c, c90 ? (const void *)c90->data : cusk_params.ptx, 0, NULL, &m));
    cus_function *f = get_fn(m, "mixed");
    static const size_t layout[][2] = {{0, 1},   {1, 1},  {4, 4},  {8, 4},
                                       {16, 8},  {24, 24}, {48, 8}, {56, 8}};
    assert_int_equal(cus_function_param_count(f), 8);
    for (unsigned int i = 0; i < 8; i++) {
        size_t off = 0, size = 0;
        assert_ok(cus_function_param_info(f, i, &off, &size));
        assert_int_equal(off, layout[i][0]);
        assert_int_equal(size, layout[i][1]);
    }
    /* one call a parameter: never one past the last (param_counts.c) */
    assert_int_equal(cus_fake_calls_of("cuFuncGetParamInfo"), 8);
    f = cus_function_unref(f);
    m = cus_module_unref(m);
    c = cus_context_unref(c);
}

static void test_kernels_globals(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    cus_module *m = NULL;
    assert_ok(cus_module_load_data(c, cusk_globals.fatbin, cusk_globals.fatbin_size, NULL, &m));
    size_t bytes = 0;
    assert_ok(cus_module_get_global(m, "cusk_coeffs", NULL, &bytes));
    assert_int_equal(bytes, 16);
    float coeffs[4] = {0};
    assert_ok(cus_module_copy_from_global(coeffs, m, "cusk_coeffs", 0, sizeof coeffs));
    for (int i = 0; i < 4; i++)
        assert_float_equal(coeffs[i], (float)(i + 1), 0);
    unsigned int counter = 0;
    assert_ok(cus_module_copy_from_global(&counter, m, "cusk_counter", 0, 4));
    assert_int_equal(counter, 7);
    assert_status(cus_module_copy_from_global(coeffs, m, "cusk_coeffs", 4, 16),
                  CUS_ERROR_OUT_OF_RANGE);
    m = cus_module_unref(m);
    c = cus_context_unref(c);
}

/* nvcc's cubin, and its fatbin whose sm_90 SASS the device runs (no JIT):
 * a load allocates its module record and its kernels' parameter counts, and
 * no log buffer (lib/module.c). */
static void test_kernels_binary_loads_allocate_only_the_module(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    const cusk_image *img = &cusk_empty;
    const cusk_cubin *c90 = cusk_cubin_for(img, 90);
    if (c90)
        assert_int_equal(allocations_of_loads(c, c90->data, c90->size, 100), 2 * 100);
    cus_module *m = NULL;
    assert_ok(cus_module_load_data(c, img->fatbin, img->fatbin_size, NULL, &m));
    assert_string_equal(cus_module_info_log(m), ""); /* SASS: nothing compiled */
    m = cus_module_unref(m);
    assert_int_equal(allocations_of_loads(c, img->fatbin, img->fatbin_size, 100), 2 * 100);
    c = cus_context_unref(c);
}

/* nvcc 13's PTX (ISA 9.0) is too new for a 12.0 driver; SASS needs no JIT. */
static void test_kernels_on_a_12000_driver(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    check_driver_refuses(c, cusk_sum.ptx, 0, CUDA_ERROR_UNSUPPORTED_PTX_VERSION,
                         "Unsupported .version");
    const cusk_cubin *c90 = cusk_cubin_for(&cusk_sum, 90);
    if (c90) {
        cus_module *m = NULL;
        assert_ok(cus_module_load_data(c, c90->data, c90->size, NULL, &m));
        cus_function *f = get_fn(m, "sum");
        assert_false(cus_function_layout_known(f)); /* no cuFuncGetParamInfo before 12.4 */
        f = cus_function_unref(f);
        m = cus_module_unref(m);
    }
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
        ENV_TEST(test_kernels_load_in_every_format),
        ENV_TEST(test_kernels_load_from_files),
        ENV_TEST(test_kernels_truncated),
        ENV_TEST(test_kernels_parameter_layouts),
        ENV_TEST(test_kernels_globals),
        ENV_TEST(test_kernels_binary_loads_allocate_only_the_module),
        TEST_12000(test_kernels_on_a_12000_driver),
#else
        ENV_TEST(test_kernels_are_skipped_without_nvcc),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, group_teardown);
}
