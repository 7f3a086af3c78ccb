/* Fixtures of the fake_module tests: test_fake_module.c, split by its
 * sections into test_fake_module_load.c, test_fake_module_launch.c,
 * test_fake_module_errors.c, test_fake_module_kernels.c. What they test,
 * together: */
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
#ifndef CUSCOPE_TEST_FAKE_MODULE_FIXTURES_H
#define CUSCOPE_TEST_FAKE_MODULE_FIXTURES_H
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

static inline void load_raw(void)
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
static inline int setup_with(const cus_fake_config *cfg)
{
    if (env_setup_with(cfg))
        return -1;
    load_raw();
    ctx = NULL;
    if (D.init(0) != CUDA_SUCCESS || D.ctx_create(&ctx, 0, 0) != CUDA_SUCCESS)
        return -1;
    return 0;
}

static inline int mod_setup(void **state)
{
    (void)state;
    return setup_with(NULL);
}

static inline int mod_setup_driver_12000(void **state)
{
    (void)state;
    static const cus_fake_config cfg = {.driver_version = 12000};
    return setup_with(&cfg);
}

static inline int mod_setup_sm86(void **state)
{
    (void)state;
    static const cus_fake_device_config dev = {.cc_major = 8, .cc_minor = 6};
    static const cus_fake_config cfg = {.devices = &dev};
    return setup_with(&cfg);
}

static inline int mod_teardown(void **state)
{
    if (ctx) {
        assert_cu_ok(D.ctx_destroy(ctx));
        ctx = NULL;
    }
    return env_teardown(state);
}

static inline int mod_teardown_after_misuse(void **state)
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

static inline CUmodule load_text(const char *ptx)
{
    CUmodule m = NULL;
    assert_cu_ok(D.load_data(&m, ptx));
    assert_non_null(m);
    return m;
}

static inline CUfunction function(CUmodule m, const char *name)
{
    CUfunction f = NULL;
    assert_cu_ok(D.get_function(&f, m, name));
    assert_non_null(f);
    return f;
}

static inline int attr(CUfunction f, CUfunction_attribute a)
{
    int v = -12345;
    assert_cu_ok(D.get_attr(&v, a, f));
    return v;
}

/* Launches add(p, v) with a 1x1 configuration on stream s. */
static inline CUresult launch_add(CUfunction f, CUstream s, uint64_t p, uint32_t v)
{
    void *args[] = {&p, &v};
    return D.launch(f, 1, 1, 1, 1, 1, 1, 0, s, args, NULL);
}

/* A CUdeviceptr argument as the host pointer it is in the fake. */
static inline uint32_t *ptr_arg_u32(void *arg)
{
    CUdeviceptr p;
    memcpy(&p, arg, sizeof p);
    return (uint32_t *)(uintptr_t)p;
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

static inline CUresult add_twin(const cus_fake_launch *launch, void **args, void *user)
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

#endif
