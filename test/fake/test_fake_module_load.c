/* The fake_module tests, part load: loading, functions and globals. Their
 * fixtures, and what the fake_module tests are about:
 * fake_module_fixtures.h. */
#include "fake_module_fixtures.h"

/* --- loading ------------------------------------------------------------------------ */

static void test_load_ptx_makes_a_module_of_the_current_context(void **state)
{
    (void)state;
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 0);
    CUmodule m = load_text(test_ptx);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 1);
    CUmodule m2 = load_text(test_ptx); /* a second, independent module */
    assert_ptr_not_equal(m, m2);
    assert_ptr_not_equal(function(m, "add"), function(m2, "add"));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 2);
    assert_cu_ok(D.unload(m));
    assert_cu_ok(D.unload(m2));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 0);
}

static void test_load_needs_a_current_context(void **state)
{
    (void)state;
    CUcontext popped = NULL;
    assert_cu_ok(D.pop(&popped));
    CUmodule m = (CUmodule)(uintptr_t)1;
    assert_cu(D.load_data(&m, test_ptx), CUDA_ERROR_INVALID_CONTEXT);
    assert_cu(D.load_data_ex(&m, test_ptx, 0, NULL, NULL), CUDA_ERROR_INVALID_CONTEXT);
    assert_cu(D.load_fatbin(&m, test_ptx), CUDA_ERROR_INVALID_CONTEXT);
    assert_cu(D.load(&m, "/nonexistent"), CUDA_ERROR_INVALID_CONTEXT);
    assert_ptr_equal(m, (CUmodule)(uintptr_t)1);
    assert_cu_ok(D.push(popped));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 0);
}

static void test_load_rejects_bad_arguments_and_images(void **state)
{
    (void)state;
    CUmodule m = NULL;
    assert_cu(D.load_data(NULL, test_ptx), CUDA_ERROR_INVALID_VALUE);
    assert_cu(D.load_data(&m, NULL), CUDA_ERROR_INVALID_VALUE);
    assert_cu(D.load_data(&m, ""), CUDA_ERROR_INVALID_IMAGE);
    static const unsigned char binary[] = {0x01, 0x02, 0x03, 0xfe, 0x00};
    assert_cu(D.load_data(&m, binary), CUDA_ERROR_INVALID_IMAGE);
    assert_cu(D.load_data(&m, ".version 8.0\n.target sm_80\n.address_size 64\n"
                              ".entry e() { frobnicate; }\n"),
              CUDA_ERROR_INVALID_PTX);
    assert_null(m);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 1); /* the context */
    assert_int_equal(cus_fake_misuse_count(), 0);
}

static void test_load_reads_a_file(void **state)
{
    (void)state;
    char path[] = "/tmp/cuscope-fake-module-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    size_t n = strlen(test_ptx); /* without the NUL: the file's end ends the text */
    assert_int_equal(write(fd, test_ptx, n), (ssize_t)n);
    close(fd);
    CUmodule m = NULL;
    assert_cu_ok(D.load(&m, path));
    function(m, "bounded");
    assert_cu_ok(D.unload(m));
    unlink(path);
    assert_cu(D.load(&m, path), CUDA_ERROR_FILE_NOT_FOUND);
    assert_cu(D.load(&m, NULL), CUDA_ERROR_INVALID_VALUE);
    assert_cu(D.load(NULL, path), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 0);
}

static void test_jit_logs_are_written_and_their_sizes_returned(void **state)
{
    (void)state;
    char info[4096], err[4096];
    memset(info, 'x', sizeof info);
    memset(err, 'x', sizeof err);
    CUjit_option opts[] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                           CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *vals[] = {info, (void *)(uintptr_t)sizeof info, err, (void *)(uintptr_t)sizeof err};
    CUmodule m = NULL;
    assert_cu_ok(D.load_data_ex(&m, test_ptx, 4, opts, vals));
    assert_contains(info, "ptxas info    : Compiling entry function 'add' for 'sm_80'");
    assert_int_equal((uintptr_t)vals[1], strlen(info)); /* bytes written, in/out */
    assert_string_equal(err, "");
    assert_int_equal((uintptr_t)vals[3], 0);
    assert_cu_ok(D.unload(m));

    /* A syntax error: ptxas' line in the error log, no info log. */
    static const char bad[] = ".version 8.0\n.target sm_80\n.address_size 64\n"
                              ".entry e()\n{\n\tfrobnicate;\n}\n";
    vals[1] = (void *)(uintptr_t)sizeof info;
    vals[3] = (void *)(uintptr_t)sizeof err;
    m = NULL;
    assert_cu(D.load_data_ex(&m, bad, 4, opts, vals), CUDA_ERROR_INVALID_PTX);
    assert_null(m);
    assert_contains(err, "ptxas application ptx input, line 6; error   : ");
    assert_contains(err, "frobnicate");
    assert_int_equal((uintptr_t)vals[3], strlen(err));
    assert_string_equal(info, "");
    assert_int_equal((uintptr_t)vals[1], 0);

    /* A small buffer: truncated, NUL-terminated, the size says what it holds. */
    char small[8];
    memset(small, 'x', sizeof small);
    void *svals[] = {NULL, NULL, small, (void *)(uintptr_t)sizeof small};
    assert_cu(D.load_data_ex(&m, bad, 4, opts, svals), CUDA_ERROR_INVALID_PTX);
    assert_int_equal(strlen(small), 7);
    assert_int_equal((uintptr_t)svals[3], 7);
    assert_int_equal((uintptr_t)svals[1], 0); /* a size without a buffer: nothing */

    /* The wall time comes back as a float in the pointer's place. */
    CUjit_option wopt[] = {CU_JIT_WALL_TIME};
    void *wval[] = {(void *)(uintptr_t)0xdeadbeef};
    assert_cu_ok(D.load_data_ex(&m, test_ptx, 1, wopt, wval));
    float ms = -1.0f;
    memcpy(&ms, &wval[0], sizeof ms);
    assert_true(ms == 0.0f);
    assert_cu_ok(D.unload(m));
}

static void test_jit_options_are_validated(void **state)
{
    (void)state;
    CUmodule m = NULL;
    struct {
        CUjit_option opt;
        uintptr_t value;
        CUresult want;
    } cases[] = {
        {CU_JIT_OPTIMIZATION_LEVEL, 0, CUDA_SUCCESS},
        {CU_JIT_OPTIMIZATION_LEVEL, 4, CUDA_SUCCESS},
        {CU_JIT_OPTIMIZATION_LEVEL, 5, CUDA_ERROR_INVALID_VALUE},
        {CU_JIT_MAX_REGISTERS, 64, CUDA_SUCCESS},
        {CU_JIT_GENERATE_LINE_INFO, 1, CUDA_SUCCESS},
        {CU_JIT_GENERATE_LINE_INFO, 2, CUDA_ERROR_INVALID_VALUE},
        {CU_JIT_GENERATE_DEBUG_INFO, 1, CUDA_SUCCESS},
        {CU_JIT_GENERATE_DEBUG_INFO, 7, CUDA_ERROR_INVALID_VALUE},
        {CU_JIT_TARGET, CU_TARGET_COMPUTE_90, CUDA_SUCCESS},
        {CU_JIT_TARGET, 91, CUDA_ERROR_INVALID_VALUE},
        {CU_JIT_TARGET, 0, CUDA_ERROR_INVALID_VALUE},
        {CU_JIT_TARGET_FROM_CUCONTEXT, 0, CUDA_SUCCESS},
        {CU_JIT_FALLBACK_STRATEGY, CU_PREFER_BINARY, CUDA_SUCCESS},
        {CU_JIT_FALLBACK_STRATEGY, 2, CUDA_ERROR_INVALID_VALUE},
        {(CUjit_option)35, 0, CUDA_ERROR_INVALID_VALUE},   /* past CUDA 13.0's options */
        {(CUjit_option)-1, 0, CUDA_ERROR_INVALID_VALUE},
        {(CUjit_option)9999, 0, CUDA_ERROR_INVALID_VALUE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CUjit_option o[] = {cases[i].opt};
        void *v[] = {(void *)cases[i].value};
        m = NULL;
        CUresult r = D.load_data_ex(&m, test_ptx, 1, o, v);
        if (r != cases[i].want)
            fail_msg("case %zu (option %d = %zu): %d, expected %d", i, (int)cases[i].opt,
                     (size_t)cases[i].value, (int)r, (int)cases[i].want);
        if (r == CUDA_SUCCESS)
            assert_cu_ok(D.unload(m));
        else
            assert_null(m);
    }
    CUjit_option o[] = {CU_JIT_OPTIMIZATION_LEVEL};
    void *v[] = {(void *)(uintptr_t)1};
    assert_cu(D.load_data_ex(&m, test_ptx, 1, NULL, v), CUDA_ERROR_INVALID_VALUE);
    assert_cu(D.load_data_ex(&m, test_ptx, 1, o, NULL), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 0);
}

static void test_jit_target_and_registers_shape_the_binary(void **state)
{
    (void)state;
    char err[512];
    CUjit_option opts[] = {CU_JIT_TARGET, CU_JIT_ERROR_LOG_BUFFER,
                           CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_MAX_REGISTERS};
    /* compute_90 for PTX of sm_80, with 20 registers at most */
    void *vals[] = {(void *)(uintptr_t)CU_TARGET_COMPUTE_90, err, (void *)(uintptr_t)sizeof err,
                    (void *)(uintptr_t)20};
    CUmodule m = NULL;
    assert_cu_ok(D.load_data_ex(&m, test_ptx, 4, opts, vals));
    CUfunction f = function(m, "add");
    assert_int_equal(attr(f, CU_FUNC_ATTRIBUTE_PTX_VERSION), 80);
    assert_int_equal(attr(f, CU_FUNC_ATTRIBUTE_BINARY_VERSION), 90);
    assert_int_equal(attr(f, CU_FUNC_ATTRIBUTE_NUM_REGS), 20);
    assert_cu_ok(D.unload(m));

    /* Below the PTX's .target: ptxas refuses. */
    vals[0] = (void *)(uintptr_t)CU_TARGET_COMPUTE_75;
    vals[2] = (void *)(uintptr_t)sizeof err;
    assert_cu(D.load_data_ex(&m, test_ptx, 3, opts, vals), CUDA_ERROR_INVALID_PTX);
    assert_contains(err, "SM version specified by .target is higher");
    /* Code for sm_100 cannot run on the 9.0 device. */
    vals[0] = (void *)(uintptr_t)CU_TARGET_COMPUTE_100;
    assert_cu(D.load_data_ex(&m, test_ptx, 3, opts, vals), CUDA_ERROR_NO_BINARY_FOR_GPU);
    /* PTX for a newer device than the context's. */
    assert_cu(D.load_data(&m, ".version 8.0\n.target sm_100\n.address_size 64\n.entry e() { ret; }\n"),
              CUDA_ERROR_INVALID_PTX);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 0);
}

static void test_ptx_newer_than_the_driver_is_unsupported(void **state)
{
    (void)state;
    CUmodule m = load_text(test_ptx); /* ISA 8.0: what a 12.0 driver takes */
    assert_cu_ok(D.unload(m));
    char err[512];
    CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *vals[] = {err, (void *)(uintptr_t)sizeof err};
    assert_cu(D.load_data_ex(&m, ".version 8.1\n.target sm_80\n.address_size 64\n.entry e() { ret; }\n",
                             2, opts, vals),
              CUDA_ERROR_UNSUPPORTED_PTX_VERSION);
    assert_contains(err, "Unsupported .version 8.1; current version is '8.0'");
    /* The 12.4 entry points are absent from a 12.0 driver. */
#if CUDA_VERSION >= 12040
    assert_null(D.function_count);
    assert_null(D.param_info);
#endif
}

static void test_ptx_is_compiled_for_the_device(void **state)
{
    (void)state;
    CUmodule m = load_text(test_ptx); /* sm_80 PTX on an 8.6 device */
    assert_int_equal(attr(function(m, "add"), CU_FUNC_ATTRIBUTE_PTX_VERSION), 80);
    assert_int_equal(attr(function(m, "add"), CU_FUNC_ATTRIBUTE_BINARY_VERSION), 86);
    assert_cu_ok(D.unload(m));
    assert_cu(D.load_data(&m, ".version 8.0\n.target sm_90\n.address_size 64\n.entry e() { ret; }\n"),
              CUDA_ERROR_INVALID_PTX);
    CUjit_option o[] = {CU_JIT_TARGET};
    void *v[] = {(void *)(uintptr_t)CU_TARGET_COMPUTE_89}; /* 8.9 code on 8.6: no */
    assert_cu(D.load_data_ex(&m, test_ptx, 1, o, v), CUDA_ERROR_NO_BINARY_FOR_GPU);
    v[0] = (void *)(uintptr_t)CU_TARGET_COMPUTE_80; /* 8.0 runs on 8.6 */
    assert_cu_ok(D.load_data_ex(&m, test_ptx, 1, o, v));
    assert_int_equal(attr(function(m, "add"), CU_FUNC_ATTRIBUTE_BINARY_VERSION), 80);
    assert_cu_ok(D.unload(m));
}

/* --- functions ---------------------------------------------------------------------- */

static void test_get_function_by_name(void **state)
{
    (void)state;
    CUmodule m = load_text(test_ptx);
    CUfunction f = function(m, "add");
    assert_ptr_equal(function(m, "add"), f); /* the same handle for the same name */
    assert_ptr_not_equal(function(m, "noargs"), f);
    CUfunction g = (CUfunction)(uintptr_t)1;
    assert_cu(D.get_function(&g, m, "nope"), CUDA_ERROR_NOT_FOUND);
    assert_cu(D.get_function(&g, m, "ad"), CUDA_ERROR_NOT_FOUND);
    assert_ptr_equal(g, (CUfunction)(uintptr_t)1);
    assert_cu(D.get_function(&g, m, NULL), CUDA_ERROR_INVALID_VALUE);
    assert_cu(D.get_function(NULL, m, "add"), CUDA_ERROR_INVALID_VALUE);
    assert_cu(D.get_function(&g, NULL, "add"), CUDA_ERROR_INVALID_HANDLE);
#if CUDA_VERSION >= 12030
    const char *name = NULL;
    assert_cu_ok(D.get_name(&name, f));
    assert_string_equal(name, "add");
    assert_cu(D.get_name(NULL, f), CUDA_ERROR_INVALID_VALUE);
    assert_cu(D.get_name(&name, NULL), CUDA_ERROR_INVALID_VALUE);
#endif
#if CUDA_VERSION >= 12040
    unsigned int count = 0;
    assert_cu_ok(D.function_count(&count, m));
    assert_int_equal(count, TEST_PTX_FUNCTIONS);
    assert_cu(D.function_count(NULL, m), CUDA_ERROR_INVALID_VALUE);
    CUfunction all[8] = {0};
    assert_cu_ok(D.enumerate(all, 8, m));
    assert_ptr_equal(all[0], f); /* image order */
    assert_ptr_equal(all[3], function(m, "noargs"));
    assert_null(all[TEST_PTX_FUNCTIONS]);
    CUfunction two[2] = {0};
    assert_cu_ok(D.enumerate(two, 2, m)); /* at most numFunctions */
    assert_ptr_equal(two[1], function(m, "bounded"));
    assert_cu(D.enumerate(NULL, 2, m), CUDA_ERROR_INVALID_VALUE);
#endif
    assert_cu_ok(D.unload(m));
}

/* A module of many kernels, their names out of order: each is found by name
 * (the fake searches them sorted), as the handle enumeration gives in image
 * order; names between, before, after and around them are not. */
static void test_get_function_among_many(void **state)
{
    (void)state;
    enum { N = 300 };
    size_t cap = 64 + (size_t)N * 48, n = 0;
    char *text = malloc(cap);
    assert_non_null(text);
    n += (size_t)snprintf(text + n, cap - n, ".version 8.0\n.target sm_80\n.address_size 64\n");
    for (int i = 0; i < N; i++) /* k299, k000, k298, k001, ...: neither order */
        n += (size_t)snprintf(text + n, cap - n, ".visible .entry k%03d()\n{\n\tret;\n}\n",
                              i % 2 ? i / 2 : N - 1 - i / 2);
    CUmodule m = load_text(text);
    free(text);
#if CUDA_VERSION >= 12040
    CUfunction all[N];
    assert_cu_ok(D.enumerate(all, N, m));
#endif
    for (int i = 0; i < N; i++) {
        char name[8];
        snprintf(name, sizeof name, "k%03d", i % 2 ? i / 2 : N - 1 - i / 2);
        CUfunction f = function(m, name);
        assert_non_null(f);
#if CUDA_VERSION >= 12040
        assert_ptr_equal(f, all[i]);
#endif
    }
    const char *absent[] = {"k", "k00", "k0000", "k1", "k300", "j999", "l000", "k150x", ""};
    for (size_t i = 0; i < sizeof absent / sizeof absent[0]; i++) {
        CUfunction g = NULL;
        assert_cu(D.get_function(&g, m, absent[i]), CUDA_ERROR_NOT_FOUND);
    }
    assert_cu_ok(D.unload(m));
}

static void test_param_info_gives_offsets_and_sizes(void **state)
{
    (void)state;
#if CUDA_VERSION >= 12040
    CUmodule m = load_text(test_ptx);
    CUfunction f = function(m, "add");
    size_t off = 99, size = 99;
    assert_cu_ok(D.param_info(f, 0, &off, &size));
    assert_int_equal(off, 0);
    assert_int_equal(size, 8);
    assert_cu_ok(D.param_info(f, 1, &off, &size));
    assert_int_equal(off, 8);
    assert_int_equal(size, 4);
    assert_cu_ok(D.param_info(f, 1, &off, NULL)); /* the size is optional */
    assert_cu(D.param_info(f, 2, &off, &size), CUDA_ERROR_INVALID_VALUE); /* past the last */
    assert_cu(D.param_info(f, 0, NULL, &size), CUDA_ERROR_INVALID_VALUE);
    assert_cu(D.param_info(function(m, "noargs"), 0, &off, &size), CUDA_ERROR_INVALID_VALUE);
    assert_cu_ok(D.param_info(function(m, "big"), 0, &off, &size));
    assert_int_equal(size, 5000);
    assert_cu_ok(D.unload(m));
#else
    skip();
#endif
}

static void test_function_attributes(void **state)
{
    (void)state;
    CUmodule m = load_text(test_ptx);
    CUfunction add = function(m, "add"), bounded = function(m, "bounded");
    assert_int_equal(attr(add, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK), 1024);
    assert_int_equal(attr(bounded, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK), 128);
    assert_int_equal(attr(function(m, "exact"), CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK), 128);
    assert_int_equal(attr(add, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES), 0);
    assert_int_equal(attr(bounded, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES), 1024);
    assert_int_equal(attr(add, CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES), 8);
    assert_int_equal(attr(add, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES), 0);
    assert_int_equal(attr(add, CU_FUNC_ATTRIBUTE_NUM_REGS), 32);
    assert_int_equal(attr(add, CU_FUNC_ATTRIBUTE_PTX_VERSION), 80);    /* the .target */
    assert_int_equal(attr(add, CU_FUNC_ATTRIBUTE_BINARY_VERSION), 90); /* JIT-compiled for 9.0 */
    assert_int_equal(attr(add, CU_FUNC_ATTRIBUTE_CACHE_MODE_CA), 0);
    assert_int_equal(attr(add, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES), 49152);
    assert_int_equal(attr(bounded, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES), 48 * 1024 - 1024);
    assert_int_equal(attr(add, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT), -1);
    assert_int_equal(attr(add, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH), 0);
    int v = 0;
    assert_cu(D.get_attr(&v, (CUfunction_attribute)99, add), CUDA_ERROR_INVALID_VALUE);
    assert_cu(D.get_attr(NULL, CU_FUNC_ATTRIBUTE_NUM_REGS, add), CUDA_ERROR_INVALID_VALUE);
    assert_cu(D.get_attr(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, NULL), CUDA_ERROR_INVALID_HANDLE);
    assert_cu_ok(D.unload(m));
}

static void test_function_set_attribute_and_configs(void **state)
{
    (void)state;
    CUmodule m = load_text(test_ptx);
    CUfunction add = function(m, "add"), bounded = function(m, "bounded");
    const CUfunction_attribute dyn = CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
    assert_cu_ok(D.set_attr(add, dyn, 232448)); /* the 227 KiB opt-in limit */
    assert_int_equal(attr(add, dyn), 232448);
    assert_cu(D.set_attr(add, dyn, 232449), CUDA_ERROR_INVALID_VALUE);
    assert_cu(D.set_attr(bounded, dyn, 232448), CUDA_ERROR_INVALID_VALUE); /* minus its static */
    assert_cu_ok(D.set_attr(bounded, dyn, 232448 - 1024));
    assert_cu(D.set_attr(add, dyn, -1), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(attr(add, dyn), 232448);
    const CUfunction_attribute carve = CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT;
    assert_cu_ok(D.set_attr(add, carve, 50));
    assert_int_equal(attr(add, carve), 50);
    assert_cu(D.set_attr(add, carve, 101), CUDA_ERROR_INVALID_VALUE);
    assert_cu(D.set_attr(add, carve, -2), CUDA_ERROR_INVALID_VALUE);
    /* read-only and unknown attributes */
    assert_cu(D.set_attr(add, CU_FUNC_ATTRIBUTE_NUM_REGS, 16), CUDA_ERROR_INVALID_VALUE);
    assert_cu(D.set_attr(add, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 256), CUDA_ERROR_INVALID_VALUE);
    assert_cu(D.set_attr(add, (CUfunction_attribute)99, 0), CUDA_ERROR_INVALID_VALUE);
    assert_cu_ok(D.set_attr(add, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1));
    assert_int_equal(attr(add, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED), 1);
    assert_cu(D.set_attr(NULL, carve, 0), CUDA_ERROR_INVALID_HANDLE);

    assert_cu_ok(D.set_cache(add, CU_FUNC_CACHE_PREFER_SHARED));
    assert_cu(D.set_cache(add, (CUfunc_cache)4), CUDA_ERROR_INVALID_VALUE);
    assert_cu_ok(D.set_shared_config(add, CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE));
    assert_cu(D.set_shared_config(add, (CUsharedconfig)3), CUDA_ERROR_INVALID_VALUE);
    assert_cu_ok(D.unload(m));
}

static size_t CUDA_CB shared_64_per_thread(int block)
{
    return (size_t)block * 64;
}

static void test_occupancy_answers_like_a_hopper(void **state)
{
    (void)state;
    CUmodule m = load_text(test_ptx);
    CUfunction add = function(m, "add"), bounded = function(m, "bounded");
    int grid = 0, block = 0;
    assert_cu_ok(D.max_block(&grid, &block, add, NULL, 0, 0));
    assert_int_equal(block, 1024);
    assert_int_equal(grid, 2 * 132); /* 2 blocks of 1024 per SM, 132 SMs */
    assert_cu_ok(D.max_block(&grid, &block, bounded, NULL, 0, 0));
    assert_int_equal(block, 128); /* its .maxntid */
    assert_int_equal(grid, 16 * 132);
    assert_cu_ok(D.max_block(&grid, &block, add, NULL, 0, 100)); /* at most 100 threads */
    assert_int_equal(block, 64); /* 32 blocks of 64 fill an SM */
    assert_int_equal(grid, 32 * 132);
    /* The callback's shared memory per block size: 768 threads would fit
     * 2 blocks, 512 fills the SM with 4. */
    assert_cu_ok(D.max_block(&grid, &block, add, shared_64_per_thread, 0, 0));
    assert_int_equal(block, 512);
    assert_int_equal(grid, 4 * 132);
    assert_cu(D.max_block(NULL, &block, add, NULL, 0, 0), CUDA_ERROR_INVALID_VALUE);
    assert_cu(D.max_block(&grid, NULL, add, NULL, 0, 0), CUDA_ERROR_INVALID_VALUE);

    int n = -1;
    assert_cu_ok(D.max_active(&n, add, 256, 0));
    assert_int_equal(n, 8);
    assert_cu_ok(D.max_active(&n, add, 32, 0));
    assert_int_equal(n, 32); /* the blocks-per-SM limit */
    assert_cu_ok(D.max_active(&n, add, 1024, 100 * 1024)); /* above the dynamic maximum */
    assert_int_equal(n, 0);
    assert_cu_ok(D.set_attr(add, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 200 * 1024));
    assert_cu_ok(D.max_active(&n, add, 256, 100 * 1024));
    assert_int_equal(n, 2); /* by shared memory: 228 KiB per SM */
    assert_cu_ok(D.max_active(&n, bounded, 256, 0)); /* above its .maxntid */
    assert_int_equal(n, 0);
    assert_cu(D.max_active(&n, add, 0, 0), CUDA_ERROR_INVALID_VALUE);
    assert_cu(D.max_active(NULL, add, 32, 0), CUDA_ERROR_INVALID_VALUE);
    assert_cu_ok(D.unload(m));
}

/* --- globals ---------------------------------------------------------------------------- */

static void test_globals_are_device_memory_with_their_initial_values(void **state)
{
    (void)state;
    CUmodule m = load_text(test_ptx);
    CUdeviceptr p = 0;
    size_t bytes = 0;
    assert_cu_ok(D.get_global(&p, &bytes, m, "counter"));
    assert_int_equal(bytes, 4);
    assert_true(p != 0);
    uint32_t counter = 0;
    assert_cu_ok(D.dtoh(&counter, p, 4));
    assert_int_equal(counter, 7);
    CUdeviceptr t = 0;
    assert_cu_ok(D.get_global(&t, &bytes, m, "table"));
    assert_int_equal(bytes, 8);
    uint32_t table[2] = {0};
    assert_cu_ok(D.dtoh(table, t, 8));
    assert_int_equal(table[0], 1);
    assert_int_equal(table[1], 2);
    /* Either output may be NULL. */
    assert_cu_ok(D.get_global(NULL, &bytes, m, "counter"));
    assert_cu_ok(D.get_global(&p, NULL, m, "counter"));
    assert_cu(D.get_global(&p, &bytes, m, "nope"), CUDA_ERROR_NOT_FOUND);
    assert_cu(D.get_global(&p, &bytes, m, NULL), CUDA_ERROR_INVALID_VALUE);
    /* Writable, like any device memory; the pointer belongs to the context. */
    uint32_t v = 42;
    assert_cu_ok(D.htod(p, &v, 4));
    assert_cu_ok(D.dtoh(&counter, p, 4));
    assert_int_equal(counter, 42);
    assert_cu_ok(D.memset8(t, 0, 8));
    CUcontext owner = NULL;
    assert_cu_ok(D.pointer_attr(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, t));
    assert_ptr_equal(owner, ctx);
    /* Not allocations: no handle, no bytes in use. */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY), 0);
    assert_int_equal(cus_fake_device_bytes_in_use(0), 0);
    size_t free_bytes = 0, total = 0;
    assert_cu_ok(D.mem_info(&free_bytes, &total));
    assert_int_equal(free_bytes, total);
    /* A second module has its own copies. */
    CUmodule m2 = load_text(test_ptx);
    CUdeviceptr p2 = 0;
    assert_cu_ok(D.get_global(&p2, NULL, m2, "counter"));
    assert_true(p2 != p);
    assert_cu_ok(D.dtoh(&counter, p2, 4));
    assert_int_equal(counter, 7);
    assert_cu_ok(D.unload(m2));
    assert_cu_ok(D.unload(m));
}

static void test_globals_are_bounds_checked_and_die_with_the_module(void **state)
{
    (void)state;
    CUmodule m = load_text(test_ptx);
    CUdeviceptr t = 0;
    assert_cu_ok(D.get_global(&t, NULL, m, "table"));
    uint32_t big[3] = {0};
    assert_cu(D.dtoh(big, t, 12), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cus_fake_misuse_count(), 1);
    assert_contains(cus_fake_last_misuse(), "overruns the 8-byte");
    assert_cu(D.free(t), CUDA_ERROR_INVALID_VALUE); /* not cuMemFree's */
    assert_int_equal(cus_fake_misuse_count(), 2);
    assert_contains(cus_fake_last_misuse(), "module global");
    assert_cu_ok(D.unload(m));
    assert_cu(D.dtoh(big, t, 4), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cus_fake_misuse_count(), 3);
    assert_contains(cus_fake_last_misuse(), "use after free of module global");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        MOD_TEST(test_load_ptx_makes_a_module_of_the_current_context),
        MOD_TEST(test_load_needs_a_current_context),
        MOD_TEST(test_load_rejects_bad_arguments_and_images),
        MOD_TEST(test_load_reads_a_file),
        MOD_TEST(test_jit_logs_are_written_and_their_sizes_returned),
        MOD_TEST(test_jit_options_are_validated),
        MOD_TEST(test_jit_target_and_registers_shape_the_binary),
        MOD_TEST_12000(test_ptx_newer_than_the_driver_is_unsupported),
        MOD_TEST_SM86(test_ptx_is_compiled_for_the_device),
        MOD_TEST(test_get_function_by_name),
        MOD_TEST(test_get_function_among_many),
        MOD_TEST(test_param_info_gives_offsets_and_sizes),
        MOD_TEST(test_function_attributes),
        MOD_TEST(test_function_set_attribute_and_configs),
        MOD_TEST(test_occupancy_answers_like_a_hopper),
        MOD_TEST(test_globals_are_device_memory_with_their_initial_values),
        MISUSE_TEST(test_globals_are_bounds_checked_and_die_with_the_module),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
