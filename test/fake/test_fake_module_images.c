/* The fake_module tests, part images: nvcc's images of
 * data/fake_image/kernels.cu (test/meson.build's image_inputs, the
 * arguments, found by their names; without nvcc these tests skip) loaded
 * through the fake's entry points, where the module area follows what the
 * image parser chose (test_fake_image.c tests the parser itself): the fatbin
 * entry for the device, compressed entries, relocatable cubins. What the
 * real driver did with the same images (H200, 9.0, driver 580) is what they
 * expect. Fixtures: fake_module_fixtures.h. */
#include "fake_module_fixtures.h"

enum { IN_FATBIN, IN_FATBIN_PTX, IN_FATBIN_MULTI, IN_FATBIN_90A, IN_RDC_CUBIN, IN_COUNT };
static const char *const input_names[IN_COUNT] = {
    "kernels.fatbin", "kernels-ptx.fatbin", "kernels-multi.fatbin", "kernels-90a.fatbin",
    "kernels-rdc.cubin",
};
static const char *input_paths[IN_COUNT];

/* The input's bytes, or a skip without nvcc. */
static unsigned char *input(int which, size_t *n)
{
    if (!input_paths[which])
        skip();
    FILE *f = fopen(input_paths[which], "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long len = ftell(f);
    assert_true(len > 0);
    assert_int_equal(fseek(f, 0, SEEK_SET), 0);
    unsigned char *b = malloc((size_t)len);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    *n = (size_t)len;
    return b;
}

static size_t param_offset(CUfunction f, size_t i)
{
    size_t off = 0, size = 0;
    assert_non_null(D.param_info);
    assert_cu_ok(D.param_info(f, i, &off, &size));
    return off;
}

/* --- the fatbin entry for the device ------------------------------------------------------------ */

/* sm_80, sm_90 and sm_100 SASS, compute_90 PTX: the 9.0 device gets the
 * sm_90 code, with its layout (the 64-byte aligned parameter at 48). */
static void test_fatbin_loads_the_sass_for_the_device(void **state)
{
    (void)state;
    size_t n;
    unsigned char *fb = input(IN_FATBIN_MULTI, &n);
    CUmodule m = NULL;
    assert_cu_ok(D.load_data(&m, fb));
    CUfunction f = function(m, "aligned");
    assert_int_equal(param_offset(f, 1), 48);
    assert_int_equal(attr(f, CU_FUNC_ATTRIBUTE_BINARY_VERSION), 90);
    assert_cu_ok(D.unload(m));
    free(fb);
}

/* On an 8.6 device the same fatbin gives the sm_80 code (at 32). */
static void test_fatbin_loads_the_sass_for_an_sm86_device(void **state)
{
    (void)state;
    size_t n;
    unsigned char *fb = input(IN_FATBIN_MULTI, &n);
    CUmodule m = NULL;
    assert_cu_ok(D.load_data(&m, fb));
    CUfunction f = function(m, "aligned");
    assert_int_equal(param_offset(f, 1), 32);
    assert_int_equal(attr(f, CU_FUNC_ATTRIBUTE_BINARY_VERSION), 80);
    assert_cu_ok(D.unload(m));
    free(fb);
    /* sm_90a and sm_90 SASS only: nothing for 8.6 */
    fb = input(IN_FATBIN_90A, &n);
    m = (CUmodule)(uintptr_t)1;
    assert_cu(D.load_data(&m, fb), CUDA_ERROR_NO_BINARY_FOR_GPU);
    assert_ptr_equal(m, (CUmodule)(uintptr_t)1);
    free(fb);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 0);
}

/* SASS for another major and no PTX: refused, as the H200 refused sm_80
 * and sm_100 fatbins; with the PTX, the PTX is JIT-compiled. */
static void test_fatbin_without_code_for_the_device_is_refused(void **state)
{
    (void)state;
    size_t n;
    unsigned char *fb = input(IN_FATBIN, &n); /* sm_90 SASS, compute_90 PTX */
    size_t ptx_entry = 16 + 0x40 + (size_t)(fb[24] | fb[25] << 8 | fb[26] << 16 | fb[27] << 24);
    assert_int_equal(fb[16], 2);
    assert_int_equal(fb[ptx_entry], 1);
    for (unsigned arch = 80; arch <= 100; arch += 20) {
        fb[16 + 28] = (unsigned char)arch; /* the ELF entry says sm_80, then sm_100 */
        fb[ptx_entry] = 9;                 /* the PTX entry is of no known kind */
        CUmodule m = (CUmodule)(uintptr_t)1;
        char err[512] = "";
        CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
        void *vals[] = {err, (void *)(uintptr_t)sizeof err};
        assert_cu(D.load_data_ex(&m, fb, 2, opts, vals), CUDA_ERROR_NO_BINARY_FOR_GPU);
        assert_ptr_equal(m, (CUmodule)(uintptr_t)1);
        assert_contains(err, "no code for a device of compute capability 9.0");
        fb[ptx_entry] = 1;
        assert_cu_ok(D.load_data(&m, fb));
        CUfunction f = function(m, "aligned");
        assert_int_equal(attr(f, CU_FUNC_ATTRIBUTE_BINARY_VERSION), 90); /* JIT for the device */
        assert_int_equal(attr(f, CU_FUNC_ATTRIBUTE_PTX_VERSION), 90);
        assert_cu_ok(D.unload(m));
    }
    free(fb);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 0);
}

/* nvcc 13's default fatbin of PTX: compressed (Zstandard). */
static void test_compressed_fatbin_loads(void **state)
{
    (void)state;
    size_t n;
    unsigned char *fb = input(IN_FATBIN_PTX, &n);
    CUmodule m = NULL;
#ifdef FAKE_IMAGE_HAVE_ZSTD
    assert_cu_ok(D.load_fatbin(&m, fb));
    CUfunction f = function(m, "aligned");
    assert_int_equal(param_offset(f, 1), 48);
    assert_int_equal(attr(f, CU_FUNC_ATTRIBUTE_BINARY_VERSION), 90);
    assert_cu_ok(D.unload(m));
#else
    assert_cu(D.load_fatbin(&m, fb), CUDA_ERROR_NO_BINARY_FOR_GPU);
#endif
    free(fb);
}

/* --- relocatable cubins --------------------------------------------------------------------- */

/* -rdc=true -cubin: loaded and listed, but the kernels that need linking
 * cannot be got (cuModuleGetFunction's answers on the H200). */
static void test_relocatable_cubin_lists_kernels_it_cannot_give(void **state)
{
    (void)state;
    if (!input_paths[IN_RDC_CUBIN])
        skip();
    CUmodule m = NULL;
    assert_cu_ok(D.load(&m, input_paths[IN_RDC_CUBIN]));
    if (D.function_count) {
        unsigned count = 0;
        assert_cu_ok(D.function_count(&count, m));
        assert_int_equal(count, 12);
        CUfunction fs[12];
        assert_cu_ok(D.enumerate(fs, 12, m));
        for (size_t i = 0; i < 12; i++)
            assert_non_null(fs[i]);
    }
    CUfunction f = NULL;
    assert_non_null(function(m, "noparams"));
    assert_non_null(function(m, "aligned"));
    assert_cu(D.get_function(&f, m, "ptrs"), CUDA_ERROR_INVALID_IMAGE);
    assert_cu(D.get_function(&f, m, "bounded"), CUDA_ERROR_INVALID_IMAGE);
    assert_cu(D.get_function(&f, m, "dynshared"), CUDA_ERROR_NOT_FOUND);
    assert_cu(D.get_function(&f, m, "no_such_kernel"), CUDA_ERROR_NOT_FOUND);
    assert_null(f);
    assert_cu_ok(D.unload(m));
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *slash = strrchr(argv[i], '/'), *base = slash ? slash + 1 : argv[i];
        for (size_t k = 0; k < IN_COUNT; k++)
            if (strcmp(base, input_names[k]) == 0)
                input_paths[k] = argv[i];
    }
    const struct CMUnitTest tests[] = {
        MOD_TEST(test_fatbin_loads_the_sass_for_the_device),
        MOD_TEST_SM86(test_fatbin_loads_the_sass_for_an_sm86_device),
        MOD_TEST(test_fatbin_without_code_for_the_device_is_refused),
        MOD_TEST(test_compressed_fatbin_loads),
        MOD_TEST(test_relocatable_cubin_lists_kernels_it_cannot_give),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
