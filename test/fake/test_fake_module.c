/* The fake driver's modules and launches (lib/fake/fake_module.c), called
 * through its raw entry points from cus_fake_get_proc_address, as
 * test_fake.c does: loading (PTX, cubins, fatbins, files, JIT options and
 * logs), functions, parameter layouts, attributes, globals, occupancy,
 * launches and their validation, the launch record, host implementations of
 * kernels, sticky errors that poison a context, unload at context death,
 * misuse reports and fault injection.
 *
 * A small PTX module written here runs everywhere; the kernels of kernels/
 * (compiled by nvcc at build time: CUS_TEST_HAVE_KERNELS) are loaded in every
 * format where nvcc was found, and those tests skip without it. Tests that
 * misuse the fake on purpose reinstall it before env_teardown checks. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cudaTypedefs.h>

#include "harness/env.h"
#include "harness/check.h"
#include "harness/twins.h"

#ifdef CUS_TEST_HAVE_KERNELS
#include "cusk-images.h"
#endif

typedef struct raw_driver {
    PFN_cuInit_v2000 init;
    PFN_cuDriverGetVersion_v2020 version;
    PFN_cuCtxCreate_v3020 ctx_create;
    PFN_cuCtxDestroy_v4000 ctx_destroy;
    PFN_cuCtxPushCurrent_v4000 push;
    PFN_cuCtxPopCurrent_v4000 pop;
    PFN_cuCtxSynchronize_v2000 ctx_sync;
    PFN_cuCtxGetDevice_v2000 ctx_get_device;
    PFN_cuDevicePrimaryCtxRetain_v7000 retain;
    PFN_cuDevicePrimaryCtxRelease_v11000 release;
    PFN_cuStreamCreate_v2000 stream_create;
    PFN_cuStreamDestroy_v4000 stream_destroy;
    PFN_cuStreamSynchronize_v2000 stream_sync;
    PFN_cuStreamQuery_v2000 stream_query;
    PFN_cuLaunchHostFunc_v10000 host_fn;
    PFN_cuEventCreate_v2000 event_create;
    PFN_cuEventRecord_v2000 event_record;
    PFN_cuEventSynchronize_v2000 event_sync;
    PFN_cuEventElapsedTime_v2000 elapsed;
    PFN_cuEventDestroy_v4000 event_destroy;
    PFN_cuMemGetInfo_v3020 mem_info;
    PFN_cuMemAlloc_v3020 alloc;
    PFN_cuMemFree_v3020 free;
    PFN_cuMemAllocAsync_v11020 alloc_async;
    PFN_cuMemFreeAsync_v11020 free_async;
    PFN_cuMemcpyHtoD_v3020 htod;
    PFN_cuMemcpyDtoH_v3020 dtoh;
    PFN_cuMemsetD8_v3020 memset8;
    PFN_cuMemsetD8Async_v3020 memset8_async;
    PFN_cuPointerGetAttribute_v4000 pointer_attr;
    /* the module entry points */
    PFN_cuModuleLoad_v2000 load;
    PFN_cuModuleLoadData_v2000 load_data;
    PFN_cuModuleLoadDataEx_v2010 load_data_ex;
    PFN_cuModuleLoadFatBinary_v2000 load_fatbin;
    PFN_cuModuleUnload_v2000 unload;
    PFN_cuModuleGetFunction_v2000 get_function;
    PFN_cuModuleGetGlobal_v3020 get_global;
    PFN_cuFuncGetAttribute_v2020 get_attr;
    PFN_cuFuncSetAttribute_v9000 set_attr;
    PFN_cuFuncSetCacheConfig_v3000 set_cache;
    PFN_cuFuncSetSharedMemConfig_v4020 set_shared_config;
    PFN_cuLaunchKernel_v4000 launch;
    PFN_cuLaunchKernelEx_v11060 launch_ex;
    PFN_cuOccupancyMaxPotentialBlockSize_v6050 max_block;
    PFN_cuOccupancyMaxActiveBlocksPerMultiprocessor_v6050 max_active;
#if CUDA_VERSION >= 12030
    PFN_cuFuncGetName_v12030 get_name; /* NULL below a 12.3 driver */
#endif
#if CUDA_VERSION >= 12040
    PFN_cuModuleGetFunctionCount_v12040 function_count; /* NULL below 12.4 */
    PFN_cuModuleEnumerateFunctions_v12040 enumerate;
    PFN_cuFuncGetParamInfo_v12040 param_info;
#endif
} raw_driver;

static raw_driver D;
static CUcontext ctx; /* the test's context, made current by the setup */

static void load_raw(void)
{
    memset(&D, 0, sizeof D);
    RAW(D.init, "cuInit", 2000);
    RAW(D.version, "cuDriverGetVersion", 2020);
    RAW(D.ctx_create, "cuCtxCreate", 3020);
    RAW(D.ctx_destroy, "cuCtxDestroy", 4000);
    RAW(D.push, "cuCtxPushCurrent", 4000);
    RAW(D.pop, "cuCtxPopCurrent", 4000);
    RAW(D.ctx_sync, "cuCtxSynchronize", 2000);
    RAW(D.ctx_get_device, "cuCtxGetDevice", 2000);
    RAW(D.retain, "cuDevicePrimaryCtxRetain", 7000);
    RAW(D.release, "cuDevicePrimaryCtxRelease", 11000);
    RAW(D.stream_create, "cuStreamCreate", 2000);
    RAW(D.stream_destroy, "cuStreamDestroy", 4000);
    RAW(D.stream_sync, "cuStreamSynchronize", 2000);
    RAW(D.stream_query, "cuStreamQuery", 2000);
    RAW(D.host_fn, "cuLaunchHostFunc", 10000);
    RAW(D.event_create, "cuEventCreate", 2000);
    RAW(D.event_record, "cuEventRecord", 2000);
    RAW(D.event_sync, "cuEventSynchronize", 2000);
    RAW(D.elapsed, "cuEventElapsedTime", 2000);
    RAW(D.event_destroy, "cuEventDestroy", 4000);
    RAW(D.mem_info, "cuMemGetInfo", 3020);
    RAW(D.alloc, "cuMemAlloc", 3020);
    RAW(D.free, "cuMemFree", 3020);
    RAW(D.alloc_async, "cuMemAllocAsync", 11020);
    RAW(D.free_async, "cuMemFreeAsync", 11020);
    RAW(D.htod, "cuMemcpyHtoD", 3020);
    RAW(D.dtoh, "cuMemcpyDtoH", 3020);
    RAW(D.memset8, "cuMemsetD8", 3020);
    RAW(D.memset8_async, "cuMemsetD8Async", 3020);
    RAW(D.pointer_attr, "cuPointerGetAttribute", 4000);
    RAW(D.load, "cuModuleLoad", 2000);
    RAW(D.load_data, "cuModuleLoadData", 2000);
    RAW(D.load_data_ex, "cuModuleLoadDataEx", 2010);
    RAW(D.load_fatbin, "cuModuleLoadFatBinary", 2000);
    RAW(D.unload, "cuModuleUnload", 2000);
    RAW(D.get_function, "cuModuleGetFunction", 2000);
    RAW(D.get_global, "cuModuleGetGlobal", 3020);
    RAW(D.get_attr, "cuFuncGetAttribute", 2020);
    RAW(D.set_attr, "cuFuncSetAttribute", 9000);
    RAW(D.set_cache, "cuFuncSetCacheConfig", 3000);
    RAW(D.set_shared_config, "cuFuncSetSharedMemConfig", 4020);
    RAW(D.launch, "cuLaunchKernel", 4000);
    RAW(D.launch_ex, "cuLaunchKernelEx", 11060);
    RAW(D.max_block, "cuOccupancyMaxPotentialBlockSize", 6050);
    RAW(D.max_active, "cuOccupancyMaxActiveBlocksPerMultiprocessor", 6050);
    int version = 0;
    assert_int_equal(D.version(&version), CUDA_SUCCESS);
#if CUDA_VERSION >= 12030
    if (version >= 12030)
        RAW(D.get_name, "cuFuncGetName", 12030);
#endif
#if CUDA_VERSION >= 12040
    if (version >= 12040) {
        RAW(D.function_count, "cuModuleGetFunctionCount", 12040);
        RAW(D.enumerate, "cuModuleEnumerateFunctions", 12040);
        RAW(D.param_info, "cuFuncGetParamInfo", 12040);
    }
#endif
}

/* Installs the fake (cfg), resolves, calls cuInit and creates ctx (current). */
static int setup_with(const cus_fake_config *cfg)
{
    if (env_setup_with(cfg))
        return -1;
    load_raw();
    ctx = NULL;
    if (D.init(0) != CUDA_SUCCESS || D.ctx_create(&ctx, 0, 0) != CUDA_SUCCESS)
        return -1;
    return 0;
}

static int mod_setup(void **state)
{
    (void)state;
    return setup_with(NULL);
}

static int mod_setup_driver_12000(void **state)
{
    (void)state;
    static const cus_fake_config cfg = {.driver_version = 12000};
    return setup_with(&cfg);
}

static int mod_setup_sm86(void **state)
{
    (void)state;
    static const cus_fake_device_config dev = {.cc_major = 8, .cc_minor = 6};
    static const cus_fake_config cfg = {.devices = &dev};
    return setup_with(&cfg);
}

static int mod_teardown(void **state)
{
    if (ctx) {
        assert_cu_ok(D.ctx_destroy(ctx));
        ctx = NULL;
    }
    return env_teardown(state);
}

static int mod_teardown_after_misuse(void **state)
{
    if (ctx)
        (void)D.ctx_destroy(ctx);
    ctx = NULL;
    assert_int_equal(cus_debug_live_objects(), 0);
    assert_ok(cus_fake_install(NULL));
    return env_teardown(state);
}

#define MOD_TEST(f) cmocka_unit_test_setup_teardown(f, mod_setup, mod_teardown)
#define MOD_TEST_12000(f) cmocka_unit_test_setup_teardown(f, mod_setup_driver_12000, mod_teardown)
#define MOD_TEST_SM86(f) cmocka_unit_test_setup_teardown(f, mod_setup_sm86, mod_teardown)
#define MISUSE_TEST(f) cmocka_unit_test_setup_teardown(f, mod_setup, mod_teardown_after_misuse)

/* --- a module written here ---------------------------------------------------------
 * add(u64, u32): params at 0 (8 bytes) and 8 (4); bounded: .maxntid 128 and 1 KiB
 * of static shared memory; exact: .reqntid 64, 2; big: 5000 bytes of
 * parameters, above the fake's 4 KiB record. */
static const char test_ptx[] =
    "//\n// written for test_fake_module.c\n//\n"
    ".version 8.0\n"
    ".target sm_80\n"
    ".address_size 64\n"
    "\n"
    ".const .align 4 .b8 table[8] = {1, 0, 0, 0, 2, 0, 0, 0};\n"
    ".global .align 4 .u32 counter = 7;\n"
    "\n"
    ".visible .entry add(\n"
    "\t.param .u64 add_param_0,\n"
    "\t.param .u32 add_param_1\n"
    ")\n"
    "{\n"
    "\tret;\n"
    "}\n"
    ".visible .entry bounded(\n"
    "\t.param .u64 bounded_param_0\n"
    ")\n"
    ".maxntid 128, 1, 1\n"
    "{\n"
    "\t.shared .align 4 .b8 buf[1024];\n"
    "\tret;\n"
    "}\n"
    ".visible .entry exact()\n"
    ".reqntid 64, 2, 1\n"
    "{\n"
    "\tret;\n"
    "}\n"
    ".visible .entry noargs()\n"
    "{\n"
    "\tret;\n"
    "}\n"
    ".visible .entry big(\n"
    "\t.param .align 4 .b8 big_param_0[5000]\n"
    ")\n"
    "{\n"
    "\tret;\n"
    "}\n";

#define TEST_PTX_FUNCTIONS 5

static CUmodule load_text(const char *ptx)
{
    CUmodule m = NULL;
    assert_cu_ok(D.load_data(&m, ptx));
    assert_non_null(m);
    return m;
}

static CUfunction function(CUmodule m, const char *name)
{
    CUfunction f = NULL;
    assert_cu_ok(D.get_function(&f, m, name));
    assert_non_null(f);
    return f;
}

static int attr(CUfunction f, CUfunction_attribute a)
{
    int v = -12345;
    assert_cu_ok(D.get_attr(&v, a, f));
    return v;
}

/* Launches add(p, v) with a 1x1 configuration on stream s. */
static CUresult launch_add(CUfunction f, CUstream s, uint64_t p, uint32_t v)
{
    void *args[] = {&p, &v};
    return D.launch(f, 1, 1, 1, 1, 1, 1, 0, s, args, NULL);
}

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

/* --- launches ------------------------------------------------------------------------------ */

/* A CUdeviceptr argument as the host pointer it is in the fake. */
static uint32_t *ptr_arg_u32(void *arg)
{
    CUdeviceptr p;
    memcpy(&p, arg, sizeof p);
    return (uint32_t *)(uintptr_t)p;
}

static void test_launch_is_recorded_with_the_arguments_at_their_offsets(void **state)
{
    (void)state;
    cus_fake_launch rec;
    assert_int_equal(cus_fake_last_launch(&rec), CUS_ERROR_OUT_OF_RANGE);
    assert_int_equal(cus_fake_launch_at(0, &rec), CUS_ERROR_OUT_OF_RANGE);
    CUmodule m = load_text(test_ptx);
    CUfunction f = function(m, "add");
    uint64_t p = 0x1122334455667788u;
    uint32_t v = 0xa1b2c3d4u;
    void *args[] = {&p, &v};
    assert_cu_ok(D.launch(f, 3, 2, 1, 32, 4, 2, 128, CU_STREAM_LEGACY, args, NULL));
    assert_int_equal(cus_fake_launch_count(), 1);
    assert_ok(cus_fake_last_launch(&rec));
    assert_string_equal(rec.function, "add");
    assert_ptr_equal(rec.handle, f);
    assert_ptr_equal(rec.context, ctx);
    assert_ptr_equal(rec.stream, CU_STREAM_LEGACY); /* as passed */
    assert_int_equal(rec.grid[0], 3);
    assert_int_equal(rec.grid[1], 2);
    assert_int_equal(rec.grid[2], 1);
    assert_int_equal(rec.block[0], 32);
    assert_int_equal(rec.block[1], 4);
    assert_int_equal(rec.block[2], 2);
    assert_int_equal(rec.cluster[0] | rec.cluster[1] | rec.cluster[2], 0);
    assert_int_equal(rec.shared_bytes, 128);
    assert_false(rec.cooperative);
    assert_false(rec.extended);
    assert_int_equal(rec.nargs, 2);
    assert_int_equal(rec.arg_bytes, 12);
    assert_memory_equal(rec.args, &p, 8);
    assert_memory_equal(rec.args + 8, &v, 4);
    cus_fake_launch first;
    assert_ok(cus_fake_launch_at(0, &first));
    assert_memory_equal(&first, &rec, sizeof rec);
    /* Queued, not run: it runs at synchronization. */
    assert_int_equal(cus_fake_stream_pending(NULL), 1);
    assert_cu_ok(D.ctx_sync());
    assert_int_equal(cus_fake_stream_pending(NULL), 0);
    /* noargs takes NULL parameters. */
    assert_cu_ok(D.launch(function(m, "noargs"), 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
    assert_ok(cus_fake_last_launch(&rec));
    assert_int_equal(rec.nargs, 0);
    assert_int_equal(rec.arg_bytes, 0);
    assert_null(rec.stream);
    assert_int_equal(cus_fake_launch_count(), 2);
    assert_int_equal(cus_fake_launch_at(2, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_cu_ok(D.unload(m)); /* runs the queued launch first */
    assert_int_equal(cus_fake_stream_pending(NULL), 0);
    assert_string_equal(rec.function, "noargs"); /* still valid after the unload */
}

static void test_launch_validates_the_configuration(void **state)
{
    (void)state;
    CUmodule m = load_text(test_ptx);
    CUfunction add = function(m, "add");
    CUfunction bounded = function(m, "bounded"), exact = function(m, "exact");
    CUfunction noargs = function(m, "noargs");
    uint64_t p = 1;
    uint32_t v = 2;
    void *args[] = {&p, &v};
    const CUresult INVAL = CUDA_ERROR_INVALID_VALUE;
    /* zeros */
    assert_cu(D.launch(add, 0, 1, 1, 1, 1, 1, 0, NULL, args, NULL), INVAL);
    assert_cu(D.launch(add, 1, 0, 1, 1, 1, 1, 0, NULL, args, NULL), INVAL);
    assert_cu(D.launch(add, 1, 1, 0, 1, 1, 1, 0, NULL, args, NULL), INVAL);
    assert_cu(D.launch(add, 1, 1, 1, 0, 1, 1, 0, NULL, args, NULL), INVAL);
    assert_cu(D.launch(add, 1, 1, 1, 1, 0, 1, 0, NULL, args, NULL), INVAL);
    assert_cu(D.launch(add, 1, 1, 1, 1, 1, 0, 0, NULL, args, NULL), INVAL);
    /* blocks */
    assert_cu_ok(D.launch(add, 1, 1, 1, 1024, 1, 1, 0, NULL, args, NULL));
    assert_cu(D.launch(add, 1, 1, 1, 1025, 1, 1, 0, NULL, args, NULL), INVAL);
    assert_cu(D.launch(add, 1, 1, 1, 32, 32, 2, 0, NULL, args, NULL), INVAL); /* 2048 threads */
    assert_cu(D.launch(add, 1, 1, 1, 1, 1025, 1, 0, NULL, args, NULL), INVAL);
    assert_cu(D.launch(add, 1, 1, 1, 1, 1, 65, 0, NULL, args, NULL), INVAL);
    assert_cu_ok(D.launch(add, 1, 1, 1, 1, 1, 64, 0, NULL, args, NULL));
    assert_cu_ok(D.launch(bounded, 1, 1, 1, 128, 1, 1, 0, NULL, args, NULL));
    assert_cu(D.launch(bounded, 1, 1, 1, 129, 1, 1, 0, NULL, args, NULL), INVAL); /* .maxntid */
    assert_cu(D.launch(bounded, 1, 1, 1, 8, 8, 4, 0, NULL, args, NULL), INVAL);
    assert_cu_ok(D.launch(exact, 1, 1, 1, 64, 2, 1, 0, NULL, NULL, NULL));
    assert_cu(D.launch(exact, 1, 1, 1, 128, 1, 1, 0, NULL, NULL, NULL), INVAL); /* .reqntid */
    assert_cu(D.launch(exact, 1, 1, 1, 32, 2, 1, 0, NULL, NULL, NULL), INVAL);
    /* grids */
    assert_cu_ok(D.launch(add, 0x7fffffffu, 65535, 65535, 1, 1, 1, 0, NULL, args, NULL));
    assert_cu(D.launch(add, 0x80000000u, 1, 1, 1, 1, 1, 0, NULL, args, NULL), INVAL);
    assert_cu(D.launch(add, 1, 65536, 1, 1, 1, 1, 0, NULL, args, NULL), INVAL);
    assert_cu(D.launch(add, 1, 1, 65536, 1, 1, 1, 0, NULL, args, NULL), INVAL);
    /* dynamic shared memory: up to the function's maximum */
    assert_cu_ok(D.launch(add, 1, 1, 1, 1, 1, 1, 49152, NULL, args, NULL));
    assert_cu(D.launch(add, 1, 1, 1, 1, 1, 1, 49153, NULL, args, NULL), INVAL);
    assert_cu(D.launch(bounded, 1, 1, 1, 1, 1, 1, 49152, NULL, args, NULL), INVAL);
    assert_cu_ok(D.set_attr(add, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 100000));
    assert_cu_ok(D.launch(add, 1, 1, 1, 1, 1, 1, 100000, NULL, args, NULL));
    assert_cu(D.launch(add, 1, 1, 1, 1, 1, 1, 100001, NULL, args, NULL), INVAL);
    /* parameters */
    assert_cu(D.launch(add, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL), INVAL);
    assert_cu_ok(D.launch(noargs, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
    size_t size = 12;
    unsigned char buf[16] = {0};
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                     CU_LAUNCH_PARAM_END};
    assert_cu(D.launch(add, 1, 1, 1, 1, 1, 1, 0, NULL, args, extra), INVAL); /* both */
    /* more than the fake's 4 KiB of arguments */
    unsigned char big[5000] = {0};
    void *bigargs[] = {big};
    assert_cu(D.launch(function(m, "big"), 1, 1, 1, 1, 1, 1, 0, NULL, bigargs, NULL), INVAL);
    assert_cu(D.launch(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL), CUDA_ERROR_INVALID_HANDLE);

    assert_int_equal(cus_fake_launch_count(), 8); /* the successful ones only */
    assert_cu_ok(D.ctx_sync());
    assert_cu_ok(D.unload(m));
    assert_int_equal(cus_fake_misuse_count(), 0);
}

static void test_launch_with_an_extra_buffer(void **state)
{
    (void)state;
    CUmodule m = load_text(test_ptx);
    CUfunction add = function(m, "add");
    unsigned char buf[16];
    for (int i = 0; i < 16; i++)
        buf[i] = (unsigned char)(0x40 + i);
    size_t size = sizeof buf;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                     CU_LAUNCH_PARAM_END};
    assert_cu_ok(D.launch(add, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, extra));
    cus_fake_launch rec;
    assert_ok(cus_fake_last_launch(&rec));
    assert_int_equal(rec.arg_bytes, 12);
    assert_memory_equal(rec.args, buf, 12);
    size = 8; /* smaller than the parameters */
    assert_cu(D.launch(add, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, extra), CUDA_ERROR_INVALID_VALUE);
    void *no_size[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_END};
    assert_cu(D.launch(add, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, no_size), CUDA_ERROR_INVALID_VALUE);
    void *unknown[] = {(void *)(uintptr_t)7, buf, CU_LAUNCH_PARAM_END};
    assert_cu(D.launch(add, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, unknown), CUDA_ERROR_INVALID_VALUE);
    void *empty[] = {CU_LAUNCH_PARAM_END};
    assert_cu_ok(D.launch(function(m, "noargs"), 1, 1, 1, 1, 1, 1, 0, NULL, NULL, empty));
    assert_int_equal(cus_fake_launch_count(), 2);
    assert_cu_ok(D.unload(m));
}

static void test_launch_ex_clusters_and_cooperative_launches(void **state)
{
    (void)state;
    CUmodule m = load_text(test_ptx);
    CUfunction add = function(m, "add");
    uint64_t p = 1;
    uint32_t v = 2;
    void *args[] = {&p, &v};
    CUlaunchAttribute at[2];
    memset(at, 0, sizeof at);
    at[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    at[0].value.clusterDim.x = 2;
    at[0].value.clusterDim.y = 1;
    at[0].value.clusterDim.z = 1;
    CUlaunchConfig cfg = {.gridDimX = 4, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 128,
                          .blockDimY = 1, .blockDimZ = 1, .attrs = at, .numAttrs = 1};
    assert_cu_ok(D.launch_ex(&cfg, add, args, NULL));
    cus_fake_launch rec;
    assert_ok(cus_fake_last_launch(&rec));
    assert_true(rec.extended);
    assert_int_equal(rec.cluster[0], 2);
    assert_int_equal(rec.cluster[1], 1);
    assert_int_equal(rec.cluster[2], 1);
    assert_false(rec.cooperative);
    cfg.gridDimX = 3; /* not a multiple of the cluster */
    assert_cu(D.launch_ex(&cfg, add, args, NULL), CUDA_ERROR_INVALID_CLUSTER_SIZE);
    cfg.gridDimX = 4;
    cfg.gridDimY = 4;
    at[0].value.clusterDim.x = 4;
    at[0].value.clusterDim.y = 4; /* 16: above the portable 8 */
    assert_cu(D.launch_ex(&cfg, add, args, NULL), CUDA_ERROR_INVALID_CLUSTER_SIZE);
    assert_cu_ok(D.set_attr(add, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1));
    assert_cu_ok(D.launch_ex(&cfg, add, args, NULL));
    at[0].value.clusterDim.z = 0;
    assert_cu(D.launch_ex(&cfg, add, args, NULL), CUDA_ERROR_INVALID_CLUSTER_SIZE);

    /* Cooperative: the grid must fit the device at once (2 x 132 blocks of 1024). */
    at[0].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    at[0].value.cooperative = 1;
    cfg.gridDimX = 264;
    cfg.gridDimY = 1;
    cfg.blockDimX = 1024;
    assert_cu_ok(D.launch_ex(&cfg, add, args, NULL));
    assert_ok(cus_fake_last_launch(&rec));
    assert_true(rec.cooperative);
    assert_int_equal(rec.cluster[0], 0);
    cfg.gridDimX = 265;
    assert_cu(D.launch_ex(&cfg, add, args, NULL), CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);

    /* Other attributes */
    at[0].id = CU_LAUNCH_ATTRIBUTE_PRIORITY; /* a hint */
    at[0].value.priority = -1;
    assert_cu_ok(D.launch_ex(&cfg, add, args, NULL));
    at[0].id = CU_LAUNCH_ATTRIBUTE_IGNORE;
    at[1].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT; /* not emulated */
    cfg.numAttrs = 2;
    assert_cu(D.launch_ex(&cfg, add, args, NULL), CUDA_ERROR_NOT_SUPPORTED);
    at[1].id = CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY; /* streams only */
    assert_cu(D.launch_ex(&cfg, add, args, NULL), CUDA_ERROR_INVALID_VALUE);
    at[1].id = (CUlaunchAttributeID)99;
    assert_cu(D.launch_ex(&cfg, add, args, NULL), CUDA_ERROR_INVALID_VALUE);
    cfg.attrs = NULL;
    assert_cu(D.launch_ex(&cfg, add, args, NULL), CUDA_ERROR_INVALID_VALUE);
    cfg.numAttrs = 0; /* no attributes: a plain launch */
    assert_cu_ok(D.launch_ex(&cfg, add, args, NULL));
    cfg.blockDimX = 0;
    assert_cu(D.launch_ex(&cfg, add, args, NULL), CUDA_ERROR_INVALID_VALUE);
    assert_cu(D.launch_ex(NULL, add, args, NULL), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cus_fake_launch_count(), 5);
    assert_cu_ok(D.unload(m));
}

static void test_launch_ring_keeps_the_last_256(void **state)
{
    (void)state;
    CUmodule m = load_text(test_ptx);
    CUfunction f = function(m, "noargs");
    for (unsigned int i = 0; i < 300; i++)
        assert_cu_ok(D.launch(f, i + 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
    assert_int_equal(cus_fake_launch_count(), 300);
    cus_fake_launch rec;
    assert_int_equal(cus_fake_launch_at(0, &rec), CUS_ERROR_OUT_OF_RANGE);
    assert_int_equal(cus_fake_launch_at(43, &rec), CUS_ERROR_OUT_OF_RANGE);
    assert_ok(cus_fake_launch_at(44, &rec));
    assert_int_equal(rec.grid[0], 45);
    assert_ok(cus_fake_launch_at(299, &rec));
    assert_int_equal(rec.grid[0], 300);
    assert_int_equal(cus_fake_launch_at(300, &rec), CUS_ERROR_OUT_OF_RANGE);
    assert_ok(cus_fake_last_launch(&rec));
    assert_int_equal(rec.grid[0], 300);
    /* A slot reused by a launch with fewer argument bytes: the rest is zero. */
    CUfunction add = function(m, "add");
    for (int i = 0; i < 256; i++)
        assert_cu_ok(launch_add(add, NULL, UINT64_MAX, UINT32_MAX));
    for (int i = 0; i < 256; i++)
        assert_cu_ok(D.launch(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
    static const unsigned char zeros[CUS_FAKE_MAX_LAUNCH_ARG_BYTES];
    for (unsigned long i = 300 + 256; i < 300 + 512; i++) {
        assert_ok(cus_fake_launch_at(i, &rec));
        assert_string_equal(rec.function, "noargs");
        assert_memory_equal(rec.args, zeros, sizeof zeros);
    }
    assert_cu_ok(D.unload(m));
}

static void test_a_launch_counts_as_one_operation_for_event_timing(void **state)
{
    (void)state;
    CUmodule m = load_text(test_ptx);
    CUfunction f = function(m, "noargs");
    CUevent a = NULL, b = NULL;
    assert_cu_ok(D.event_create(&a, 0));
    assert_cu_ok(D.event_create(&b, 0));
    assert_cu_ok(D.event_record(a, NULL));
    assert_cu_ok(D.launch(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
    assert_cu_ok(D.launch(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
    assert_cu_ok(D.event_record(b, NULL));
    assert_cu_ok(D.event_sync(b));
    float ms = 0;
    assert_cu_ok(D.elapsed(&ms, a, b));
    assert_float_equal(ms, 0.002, 1e-6);
    assert_cu_ok(D.event_destroy(a));
    assert_cu_ok(D.event_destroy(b));
    assert_cu_ok(D.unload(m));
}

static void test_launch_in_another_context_is_misuse(void **state)
{
    (void)state;
    CUmodule m = load_text(test_ptx);
    CUfunction f = function(m, "add");
    CUcontext other = NULL;
    assert_cu_ok(D.ctx_create(&other, 0, 0)); /* now current */
    assert_cu(launch_add(f, NULL, 1, 2), CUDA_ERROR_INVALID_HANDLE);
    assert_int_equal(cus_fake_misuse_count(), 1);
    assert_contains(cus_fake_last_misuse(), "launched with context");
    assert_contains(cus_fake_last_misuse(), "(in cuLaunchKernel)");
    /* A stream of another context than the function's: the handle is wrong. */
    CUstream s = NULL;
    assert_cu_ok(D.stream_create(&s, 0));
    assert_cu_ok(D.ctx_destroy(other)); /* pops it; ctx current again, s destroyed */
    CUstream s2 = NULL;
    assert_cu_ok(D.ctx_create(&other, 0, 0));
    assert_cu_ok(D.stream_create(&s2, 0));
    CUcontext popped = NULL;
    assert_cu_ok(D.pop(&popped));
    assert_cu(launch_add(f, s2, 1, 2), CUDA_ERROR_INVALID_HANDLE);
    assert_int_equal(cus_fake_misuse_count(), 1); /* as cuEventRecord: no misuse */
    assert_cu(launch_add(f, s, 1, 2), CUDA_ERROR_INVALID_HANDLE); /* destroyed with other */
    assert_int_equal(cus_fake_misuse_count(), 2);
    uint64_t p = 1;
    void *args[] = {&p, NULL};
    assert_cu(D.launch(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cus_fake_misuse_count(), 3);
    assert_contains(cus_fake_last_misuse(), "kernelParams[1]");
    assert_cu_ok(D.stream_destroy(s2));
    assert_cu_ok(D.ctx_destroy(other));
    assert_int_equal(cus_fake_launch_count(), 0);
    assert_cu_ok(D.unload(m));
}

/* --- host kernels ------------------------------------------------------------------------ */

typedef struct add_probe {
    int runs;
    pthread_t thread;
    bool on_driver_thread;
    uint64_t p;
    uint32_t v;
    cus_fake_launch seen;
    CUresult inner; /* what a driver call made inside returned */
    bool call_driver;
    CUresult result;
} add_probe;

static CUresult add_twin(const cus_fake_launch *launch, void **args, void *user)
{
    add_probe *pr = user;
    pr->runs++;
    pr->thread = pthread_self();
    pr->on_driver_thread = cus_fake_on_driver_thread();
    memcpy(&pr->p, args[0], 8);
    memcpy(&pr->v, args[1], 4);
    pr->seen = *launch;
    if (pr->call_driver)
        pr->inner = D.ctx_sync();
    return pr->result;
}

static void test_host_kernel_runs_in_stream_order_on_the_synchronizing_thread(void **state)
{
    (void)state;
    add_probe pr;
    memset(&pr, 0, sizeof pr);
    assert_ok(cus_fake_register_kernel("add", add_twin, &pr));
    CUmodule m = load_text(test_ptx); /* registered before the load: works as well */
    CUfunction f = function(m, "add");
    CUstream s = NULL;
    assert_cu_ok(D.stream_create(&s, CU_STREAM_NON_BLOCKING));
    assert_cu_ok(launch_add(f, s, 0xabcdef, 77));
    assert_int_equal(pr.runs, 0); /* never at enqueue */
    assert_cu_ok(D.stream_sync(s));
    assert_int_equal(pr.runs, 1);
    assert_true(pthread_equal(pr.thread, pthread_self()));
    assert_false(pr.on_driver_thread);
    assert_int_equal(pr.p, 0xabcdef);
    assert_int_equal(pr.v, 77);
    assert_string_equal(pr.seen.function, "add");
    assert_ptr_equal(pr.seen.stream, s);
    /* An unregistered kernel does nothing; removal. */
    assert_cu_ok(D.launch(function(m, "noargs"), 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
    assert_ok(cus_fake_register_kernel("add", NULL, NULL));
    assert_ok(cus_fake_register_kernel("add", NULL, NULL)); /* nothing to remove: fine */
    assert_cu_ok(launch_add(f, s, 1, 1));
    assert_cu_ok(D.stream_sync(s));
    assert_int_equal(pr.runs, 1);
    /* Registered after the load, and queries run it as a step. */
    assert_ok(cus_fake_register_kernel("add", add_twin, &pr));
    assert_cu_ok(launch_add(f, s, 5, 6));
    assert_cu(D.stream_query(s), CUDA_ERROR_NOT_READY);
    assert_int_equal(pr.runs, 2);
    assert_cu_ok(D.stream_query(s));
    assert_cu_ok(D.stream_destroy(s));
    assert_cu_ok(D.unload(m));
}

static void test_register_kernel_limits(void **state)
{
    (void)state;
    /* Every name free: the harness registered the twins of kernels/. */
    twins_unregister();
    add_probe pr;
    memset(&pr, 0, sizeof pr);
    assert_int_equal(cus_fake_register_kernel(NULL, add_twin, &pr), CUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(cus_fake_register_kernel("", add_twin, &pr), CUS_ERROR_INVALID_ARGUMENT);
    char name[32];
    for (int i = 0; i < 64; i++) {
        snprintf(name, sizeof name, "k%d", i);
        assert_ok(cus_fake_register_kernel(name, add_twin, &pr));
    }
    assert_int_equal(cus_fake_register_kernel("add", add_twin, &pr), CUS_ERROR_INVALID_ARGUMENT);
    assert_ok(cus_fake_register_kernel("k5", add_twin, NULL)); /* replacing takes no slot */
    assert_ok(cus_fake_register_kernel("k5", NULL, NULL));
    assert_ok(cus_fake_register_kernel("add", add_twin, &pr)); /* the freed slot */
    CUmodule m = load_text(test_ptx);
    assert_cu_ok(launch_add(function(m, "add"), NULL, 1, 2));
    assert_cu_ok(D.ctx_sync());
    assert_int_equal(pr.runs, 1);
    assert_cu_ok(D.unload(m));
}

static void test_host_kernel_calling_the_driver_is_refused(void **state)
{
    (void)state;
    add_probe pr;
    memset(&pr, 0, sizeof pr);
    pr.call_driver = true;
    assert_ok(cus_fake_register_kernel("add", add_twin, &pr));
    CUmodule m = load_text(test_ptx);
    assert_cu_ok(launch_add(function(m, "add"), NULL, 1, 2));
    assert_cu_ok(D.ctx_sync());
    assert_int_equal(pr.runs, 1);
    assert_int_equal(pr.inner, CUDA_ERROR_NOT_PERMITTED);
    assert_int_equal(cus_fake_misuse_count(), 1);
    assert_contains(cus_fake_last_misuse(), "CUDA call inside a host function (cuCtxSynchronize)");
    assert_cu_ok(D.unload(m));
}

static void test_a_non_sticky_kernel_result_is_misuse(void **state)
{
    (void)state;
    add_probe pr;
    memset(&pr, 0, sizeof pr);
    pr.result = CUDA_ERROR_INVALID_VALUE;
    assert_ok(cus_fake_register_kernel("add", add_twin, &pr));
    CUmodule m = load_text(test_ptx);
    assert_cu_ok(launch_add(function(m, "add"), NULL, 1, 2));
    assert_cu_ok(D.ctx_sync()); /* not the kernel's fate: ignored */
    assert_int_equal(cus_fake_misuse_count(), 1);
    assert_contains(cus_fake_last_misuse(), "neither CUDA_SUCCESS nor a sticky error");
    assert_cu_ok(launch_add(function(m, "add"), NULL, 1, 2)); /* the context is fine */
    assert_cu_ok(D.unload(m));
}

/* --- sticky errors -------------------------------------------------------------------------- */

static void CUDA_CB nop_host_fn(void *data)
{
    (void)data;
}

static void test_a_sticky_kernel_error_poisons_the_context(void **state)
{
    (void)state;
    add_probe pr;
    memset(&pr, 0, sizeof pr);
    pr.result = CUDA_ERROR_ILLEGAL_ADDRESS;
    assert_ok(cus_fake_register_kernel("add", add_twin, &pr));
    CUmodule m = load_text(test_ptx);
    CUfunction f = function(m, "add");
    CUdeviceptr buf = 0;
    assert_cu_ok(D.alloc(&buf, 64));
    assert_cu_ok(D.memset8(buf, 0xaa, 64));
    CUstream s = NULL;
    assert_cu_ok(D.stream_create(&s, 0));
    CUevent e = NULL;
    assert_cu_ok(D.event_create(&e, 0));
    CUdeviceptr abuf = 0;
    assert_cu_ok(D.alloc_async(&abuf, 32, s));
    assert_cu_ok(launch_add(f, s, buf, 1));
    assert_cu_ok(D.memset8_async(buf, 0x55, 64, s)); /* after the fault: never happens */
    assert_cu_ok(D.event_record(e, s));
    assert_cu(D.stream_sync(s), CUDA_ERROR_ILLEGAL_ADDRESS); /* the call that ran it */
    assert_int_equal(pr.runs, 1);
    assert_int_equal(((unsigned char *)(uintptr_t)buf)[0], 0xaa);

    /* Everything that uses the context answers the error now. */
    const CUresult E = CUDA_ERROR_ILLEGAL_ADDRESS;
    assert_cu(D.stream_sync(s), E);
    assert_cu(D.ctx_sync(), E);
    assert_cu(D.event_sync(e), E);
    assert_cu(D.stream_query(s), E);
    assert_cu(D.event_record(e, s), E);
    CUdevice dev = -1;
    assert_cu(D.ctx_get_device(&dev), E);
    CUdeviceptr p = 0;
    assert_cu(D.alloc(&p, 16), E);
    CUstream s2 = NULL;
    assert_cu(D.stream_create(&s2, 0), E);
    unsigned char host[4] = {0};
    assert_cu(D.dtoh(host, buf, 4), E);
    assert_cu(D.htod(buf, host, 4), E);
    CUmodule m2 = NULL;
    assert_cu(D.load_data(&m2, test_ptx), E);
    CUfunction g = NULL;
    assert_cu(D.get_function(&g, m, "add"), E);
    assert_cu(D.get_global(&p, NULL, m, "counter"), E);
    int v = 0;
    assert_cu(D.get_attr(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, f), E);
    assert_cu(launch_add(f, s, buf, 1), E);
    assert_cu(D.host_fn(s, nop_host_fn, NULL), E);
    CUcontext owner = NULL;
    assert_cu(D.pointer_attr(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, buf), E);
    assert_int_equal(cus_fake_launch_count(), 1);

    /* Frees, destroys and unloads still work, and release their handles. */
    assert_cu_ok(D.free_async(abuf, s));
    assert_cu_ok(D.free(buf));
    assert_cu_ok(D.event_destroy(e));
    assert_cu_ok(D.stream_destroy(s));
    assert_cu_ok(D.unload(m));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 0);
    assert_cu_ok(D.ctx_destroy(ctx));
    ctx = NULL;
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
    assert_int_equal(cus_fake_misuse_count(), 0);
    /* A new context is healthy. */
    assert_cu_ok(D.ctx_create(&ctx, 0, 0));
    assert_cu_ok(D.alloc(&p, 16));
    assert_cu_ok(D.free(p));
}

static void test_a_synchronous_copy_after_a_faulting_kernel_returns_the_error(void **state)
{
    (void)state;
    add_probe pr;
    memset(&pr, 0, sizeof pr);
    pr.result = CUDA_ERROR_LAUNCH_FAILED;
    assert_ok(cus_fake_register_kernel("add", add_twin, &pr));
    CUmodule m = load_text(test_ptx);
    CUdeviceptr buf = 0;
    assert_cu_ok(D.alloc(&buf, 16));
    assert_cu_ok(launch_add(function(m, "add"), NULL, buf, 1));
    unsigned char host[16];
    assert_cu(D.dtoh(host, buf, 16), CUDA_ERROR_LAUNCH_FAILED); /* the copy ran it */
    /* Another context is not affected. */
    CUcontext other = NULL;
    assert_cu_ok(D.ctx_create(&other, 0, 0));
    CUdeviceptr p = 0;
    assert_cu_ok(D.alloc(&p, 16));
    assert_cu_ok(D.free(p));
    assert_cu_ok(D.ctx_destroy(other));
    assert_cu(D.ctx_sync(), CUDA_ERROR_LAUNCH_FAILED);
    assert_cu_ok(D.free(buf));
    assert_cu_ok(D.unload(m));
}

static void test_a_poisoned_primary_context_is_reset_by_its_last_release(void **state)
{
    (void)state;
    add_probe pr;
    memset(&pr, 0, sizeof pr);
    pr.result = CUDA_ERROR_ILLEGAL_INSTRUCTION;
    assert_ok(cus_fake_register_kernel("add", add_twin, &pr));
    CUcontext primary = NULL;
    assert_cu_ok(D.retain(&primary, 0));
    assert_cu_ok(D.push(primary));
    CUmodule m = load_text(test_ptx);
    assert_cu_ok(launch_add(function(m, "add"), NULL, 0, 0));
    assert_cu(D.ctx_sync(), CUDA_ERROR_ILLEGAL_INSTRUCTION);
    CUcontext again = NULL;
    assert_cu_ok(D.retain(&again, 0)); /* a second retain: still poisoned */
    assert_cu(D.ctx_sync(), CUDA_ERROR_ILLEGAL_INSTRUCTION);
    assert_cu_ok(D.release(0));
    assert_cu(D.ctx_sync(), CUDA_ERROR_ILLEGAL_INSTRUCTION);
    assert_cu_ok(D.release(0)); /* the last: the module goes with it */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 0);
    assert_cu_ok(D.retain(&again, 0));
    assert_ptr_equal(again, primary);
    assert_cu_ok(D.ctx_sync()); /* reset: healthy again */
    CUdeviceptr p = 0;
    assert_cu_ok(D.alloc(&p, 16));
    assert_cu_ok(D.free(p));
    CUcontext popped = NULL;
    assert_cu_ok(D.pop(&popped));
    assert_ptr_equal(popped, primary);
    assert_cu_ok(D.release(0));
    assert_int_equal(cus_fake_misuse_count(), 0);
}

/* --- module lifetime and misuse ------------------------------------------------------------ */

static void test_unload_runs_the_queued_launches_first(void **state)
{
    (void)state;
    add_probe pr;
    memset(&pr, 0, sizeof pr);
    assert_ok(cus_fake_register_kernel("add", add_twin, &pr));
    CUmodule m = load_text(test_ptx);
    CUstream s = NULL;
    assert_cu_ok(D.stream_create(&s, CU_STREAM_NON_BLOCKING));
    assert_cu_ok(launch_add(function(m, "add"), s, 1, 2));
    assert_cu_ok(launch_add(function(m, "add"), NULL, 3, 4));
    assert_cu_ok(D.unload(m));
    assert_int_equal(pr.runs, 2);
    assert_int_equal(cus_fake_stream_pending(s), 0);
    assert_cu_ok(D.stream_destroy(s));
}

static void test_use_after_unload_is_misuse(void **state)
{
    (void)state;
    CUmodule m = load_text(test_ptx);
    CUfunction f = function(m, "add");
    assert_cu_ok(D.unload(m));
    CUfunction g = NULL;
    assert_cu(D.get_function(&g, m, "add"), CUDA_ERROR_INVALID_HANDLE);
    assert_int_equal(cus_fake_misuse_count(), 1);
    assert_contains(cus_fake_last_misuse(), "used after cuModuleUnload");
    assert_cu(D.unload(m), CUDA_ERROR_INVALID_HANDLE);
    assert_int_equal(cus_fake_misuse_count(), 2);
    assert_contains(cus_fake_last_misuse(), "double cuModuleUnload");
    int v = 0;
    assert_cu(D.get_attr(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, f), CUDA_ERROR_INVALID_HANDLE);
    assert_int_equal(cus_fake_misuse_count(), 3);
    assert_contains(cus_fake_last_misuse(), "('add') used after its module");
    assert_cu(launch_add(f, NULL, 1, 2), CUDA_ERROR_INVALID_HANDLE);
    assert_int_equal(cus_fake_misuse_count(), 4);
    /* Unknown handles */
    assert_cu(D.unload((CUmodule)(uintptr_t)0x1234), CUDA_ERROR_INVALID_HANDLE);
    assert_contains(cus_fake_last_misuse(), "unknown module handle 0x1234");
    assert_cu(D.get_attr(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, (CUfunction)(uintptr_t)0x5678),
              CUDA_ERROR_INVALID_HANDLE);
    assert_contains(cus_fake_last_misuse(), "unknown function handle 0x5678");
    assert_cu(D.unload((CUmodule)ctx), CUDA_ERROR_INVALID_HANDLE); /* a context is no module */
    assert_int_equal(cus_fake_misuse_count(), 7);
    assert_cu(D.unload(NULL), CUDA_ERROR_INVALID_HANDLE); /* NULL: an error, not a misuse */
    assert_int_equal(cus_fake_misuse_count(), 7);
    assert_int_equal(cus_fake_launch_count(), 0);
}

static void test_context_destroy_unloads_its_modules(void **state)
{
    (void)state;
    add_probe pr;
    memset(&pr, 0, sizeof pr);
    assert_ok(cus_fake_register_kernel("add", add_twin, &pr));
    CUmodule m = load_text(test_ptx);
    (void)load_text(test_ptx);
    assert_cu_ok(launch_add(function(m, "add"), NULL, 1, 2));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 2);
    assert_cu_ok(D.ctx_destroy(ctx));
    ctx = NULL;
    assert_int_equal(pr.runs, 1); /* its work ran first */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
    assert_int_equal(cus_fake_misuse_count(), 0);
}

static void test_a_module_of_a_destroyed_context_is_misuse(void **state)
{
    (void)state;
    CUmodule m = load_text(test_ptx);
    CUfunction f = function(m, "add");
    CUdeviceptr counter = 0;
    assert_cu_ok(D.get_global(&counter, NULL, m, "counter"));
    assert_cu_ok(D.ctx_destroy(ctx));
    ctx = NULL;
    assert_int_equal(cus_fake_misuse_count(), 0);
    assert_cu(D.unload(m), CUDA_ERROR_INVALID_HANDLE);
    assert_contains(cus_fake_last_misuse(), "used after its context was destroyed");
    int v = 0;
    assert_cu(D.get_attr(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, f), CUDA_ERROR_INVALID_HANDLE);
    assert_contains(cus_fake_last_misuse(), "with its context");
    assert_cu_ok(D.ctx_create(&ctx, 0, 0));
    uint32_t c = 0;
    assert_cu(D.dtoh(&c, counter, 4), CUDA_ERROR_INVALID_VALUE);
    assert_contains(cus_fake_last_misuse(), "use after free of module global");
    assert_int_equal(cus_fake_misuse_count(), 3);
}

/* --- threads ---------------------------------------------------------------------------------
 * Several threads share one context: each loads a module, launches on its own
 * stream a kernel whose host implementation bumps a counter in device memory,
 * and synchronizes, while another thread runs every stream. TSan checks that
 * host kernels (run without the lock, on whichever thread executes the queue)
 * and the fake's state do not race. */

enum { THREADS = 4, LAUNCHES = 50 };

static CUresult bump_twin(const cus_fake_launch *l, void **args, void *user)
{
    (void)l;
    (void)user;
    uint32_t *counter = ptr_arg_u32(args[0]);
    (*counter)++;
    return CUDA_SUCCESS;
}

typedef struct worker_arg {
    CUresult result;
    uint32_t count;
} worker_arg;

static void *launch_worker(void *p)
{
    worker_arg *w = p;
    w->result = D.push(ctx);
    CUmodule m = NULL;
    CUstream s = NULL;
    CUdeviceptr counter = 0;
    if (w->result == CUDA_SUCCESS)
        w->result = D.load_data(&m, test_ptx);
    if (w->result == CUDA_SUCCESS)
        w->result = D.stream_create(&s, CU_STREAM_NON_BLOCKING);
    if (w->result == CUDA_SUCCESS)
        w->result = D.alloc(&counter, 4);
    if (w->result == CUDA_SUCCESS)
        w->result = D.memset8(counter, 0, 4);
    CUfunction f = NULL;
    if (w->result == CUDA_SUCCESS)
        w->result = D.get_function(&f, m, "add");
    for (int i = 0; w->result == CUDA_SUCCESS && i < LAUNCHES; i++) {
        w->result = launch_add(f, s, counter, (uint32_t)i);
        if (w->result == CUDA_SUCCESS && i % 7 == 0)
            w->result = D.stream_sync(s);
    }
    if (w->result == CUDA_SUCCESS)
        w->result = D.stream_sync(s);
    if (w->result == CUDA_SUCCESS)
        w->result = D.dtoh(&w->count, counter, 4);
    if (counter)
        (void)D.free(counter);
    if (s)
        (void)D.stream_destroy(s);
    if (m)
        (void)D.unload(m);
    CUcontext popped = NULL;
    (void)D.pop(&popped);
    return NULL;
}

static void *run_streams_worker(void *p)
{
    volatile bool *stop = p;
    while (!__atomic_load_n(stop, __ATOMIC_ACQUIRE))
        cus_fake_run_streams();
    return NULL;
}

static void test_threads_launch_and_run_host_kernels_concurrently(void **state)
{
    (void)state;
    assert_ok(cus_fake_register_kernel("add", bump_twin, NULL));
    pthread_t t[THREADS], runner;
    worker_arg w[THREADS];
    memset(w, 0, sizeof w);
    bool stop = false;
    assert_int_equal(pthread_create(&runner, NULL, run_streams_worker, &stop), 0);
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, launch_worker, &w[i]), 0);
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    __atomic_store_n(&stop, true, __ATOMIC_RELEASE);
    assert_int_equal(pthread_join(runner, NULL), 0);
    for (int i = 0; i < THREADS; i++) {
        assert_cu_ok(w[i].result);
        assert_int_equal(w[i].count, LAUNCHES);
    }
    assert_int_equal(cus_fake_launch_count(), THREADS * LAUNCHES);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 0);
}

/* --- fault injection -------------------------------------------------------------------------- */

static size_t CUDA_CB no_shared(int block)
{
    (void)block;
    return 0;
}

/* Calls entry point i the way that succeeds without a fault. */
static CUresult call_entry(int i, CUmodule m, CUfunction f, const char *path)
{
    CUmodule out = NULL;
    CUfunction fo = NULL;
    CUdeviceptr p = 0;
    size_t n = 0, off = 0;
    int v = 0, g = 0, b = 0;
    unsigned int count = 0;
    CUjit_option o[] = {CU_JIT_OPTIMIZATION_LEVEL};
    void *ov[] = {(void *)(uintptr_t)3};
    CUlaunchConfig cfg = {.gridDimX = 1, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 1,
                          .blockDimY = 1, .blockDimZ = 1};
    const char *name = NULL;
    CUresult r = CUDA_ERROR_UNKNOWN;
    (void)name;
    (void)off;
    (void)count;
    switch (i) {
    case 0:
        r = D.load(&out, path);
        break;
    case 1:
        r = D.load_data(&out, test_ptx);
        break;
    case 2:
        r = D.load_data_ex(&out, test_ptx, 1, o, ov);
        break;
    case 3:
        r = D.load_fatbin(&out, test_ptx);
        break;
    case 4: { /* unload a module of its own */
        CUmodule tmp = NULL;
        r = D.load_data(&tmp, test_ptx);
        if (r != CUDA_SUCCESS)
            return r;
        r = D.unload(tmp);
        if (r != CUDA_SUCCESS) /* the fault hit the unload: clean up */
            assert_cu_ok(D.unload(tmp));
        return r;
    }
    case 5:
        return D.get_function(&fo, m, "add");
    case 6:
        return D.get_global(&p, &n, m, "counter");
    case 7:
        return D.get_attr(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, f);
    case 8:
        return D.set_attr(f, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, 10);
    case 9:
        return D.set_cache(f, CU_FUNC_CACHE_PREFER_L1);
    case 10:
        return D.set_shared_config(f, CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE);
    case 11:
        return launch_add(f, NULL, 1, 2);
    case 12: {
        uint64_t a0 = 1;
        uint32_t a1 = 2;
        void *args[] = {&a0, &a1};
        return D.launch_ex(&cfg, f, args, NULL);
    }
    case 13:
        return D.max_block(&g, &b, f, no_shared, 0, 0);
    case 14:
        return D.max_active(&v, f, 128, 0);
#if CUDA_VERSION >= 12030
    case 15:
        return D.get_name(&name, f);
#endif
#if CUDA_VERSION >= 12040
    case 16:
        return D.function_count(&count, m);
    case 17:
        return D.enumerate(&fo, 1, m);
    case 18:
        return D.param_info(f, 0, &off, &n);
#endif
    default:
        fail_msg("no entry %d", i);
    }
    if (r == CUDA_SUCCESS)
        assert_cu_ok(D.unload(out));
    return r;
}

static void test_fault_injection_on_every_module_entry_point(void **state)
{
    (void)state;
    static const char *const names[] = {
        "cuModuleLoad", "cuModuleLoadData", "cuModuleLoadDataEx", "cuModuleLoadFatBinary",
        "cuModuleUnload", "cuModuleGetFunction", "cuModuleGetGlobal", "cuFuncGetAttribute",
        "cuFuncSetAttribute", "cuFuncSetCacheConfig", "cuFuncSetSharedMemConfig",
        "cuLaunchKernel", "cuLaunchKernelEx", "cuOccupancyMaxPotentialBlockSize",
        "cuOccupancyMaxActiveBlocksPerMultiprocessor", "cuFuncGetName",
        "cuModuleGetFunctionCount", "cuModuleEnumerateFunctions", "cuFuncGetParamInfo",
    };
    int n = (int)(sizeof names / sizeof names[0]);
#if CUDA_VERSION < 12030
    n = 15;
#elif CUDA_VERSION < 12040
    n = 16;
#endif
    char path[] = "/tmp/cuscope-fake-module-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, test_ptx, strlen(test_ptx)), (ssize_t)strlen(test_ptx));
    close(fd);
    CUmodule m = load_text(test_ptx);
    CUfunction f = function(m, "add");
    for (int i = 0; i < n; i++) {
        unsigned long fired = cus_fake_faults_fired();
        unsigned long launches = cus_fake_launch_count();
        assert_ok(cus_fake_fail_entry(names[i], 1, CUDA_ERROR_UNKNOWN, false));
        CUresult r = call_entry(i, m, f, path);
        if (r != CUDA_ERROR_UNKNOWN)
            fail_msg("%s under a fault: %d", names[i], (int)r);
        assert_int_equal(cus_fake_faults_fired(), fired + 1);
        assert_int_equal(cus_fake_launch_count(), launches); /* did nothing */
        assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 1);
        r = call_entry(i, m, f, path); /* the fault is spent */
        if (r != CUDA_SUCCESS)
            fail_msg("%s after the fault: %d", names[i], (int)r);
        assert_int_equal(cus_fake_calls_of(names[i]) > 0, 1);
    }
    unlink(path);
    assert_cu_ok(D.unload(m));
    assert_int_equal(cus_fake_misuse_count(), 0);
}

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
    assert_cu_ok(D.unload(m));
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
        MOD_TEST(test_param_info_gives_offsets_and_sizes),
        MOD_TEST(test_function_attributes),
        MOD_TEST(test_function_set_attribute_and_configs),
        MOD_TEST(test_occupancy_answers_like_a_hopper),
        MOD_TEST(test_globals_are_device_memory_with_their_initial_values),
        MISUSE_TEST(test_globals_are_bounds_checked_and_die_with_the_module),
        MOD_TEST(test_launch_is_recorded_with_the_arguments_at_their_offsets),
        MOD_TEST(test_launch_validates_the_configuration),
        MOD_TEST(test_launch_with_an_extra_buffer),
        MOD_TEST(test_launch_ex_clusters_and_cooperative_launches),
        MOD_TEST(test_launch_ring_keeps_the_last_256),
        MOD_TEST(test_a_launch_counts_as_one_operation_for_event_timing),
        MISUSE_TEST(test_launch_in_another_context_is_misuse),
        MOD_TEST(test_host_kernel_runs_in_stream_order_on_the_synchronizing_thread),
        MOD_TEST(test_register_kernel_limits),
        MISUSE_TEST(test_host_kernel_calling_the_driver_is_refused),
        MISUSE_TEST(test_a_non_sticky_kernel_result_is_misuse),
        MOD_TEST(test_a_sticky_kernel_error_poisons_the_context),
        MOD_TEST(test_a_synchronous_copy_after_a_faulting_kernel_returns_the_error),
        MOD_TEST(test_a_poisoned_primary_context_is_reset_by_its_last_release),
        MOD_TEST(test_unload_runs_the_queued_launches_first),
        MISUSE_TEST(test_use_after_unload_is_misuse),
        MOD_TEST(test_context_destroy_unloads_its_modules),
        MISUSE_TEST(test_a_module_of_a_destroyed_context_is_misuse),
        MOD_TEST(test_threads_launch_and_run_host_kernels_concurrently),
        MOD_TEST(test_fault_injection_on_every_module_entry_point),
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
