/* The launch tests, part attributes: sticky errors, function attributes and
 * configuration. Their fixtures, and what the launch tests are about:
 * launch_fixtures.h. */
#include "launch_fixtures.h"

/* --- sticky errors ------------------------------------------------------------------------ */

static void test_a_faulting_kernel_poisons_the_context(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    fixture fx = open_fixture(c);
    cus_stream *s = new_stream(c, 0);
    cus_buffer *b = NULL;
    assert_ok(cus_buffer_alloc(c, 64, &b));
    int runs = 0;
    assert_ok(cus_fake_register_kernel("boom", boom_twin, &runs));
    twin_log log = {0};
    assert_ok(cus_fake_register_kernel("one", one_twin, &log));
    /* the launch succeeds; the fault comes with the synchronization */
    assert_ok(cus_launch(fx.boom, 1, 1, 0, s, (CUdeviceptr)0x10));
    assert_ok(cus_launch(fx.one, 1, 1, 0, s, 1)); /* queued after the fault: skipped */
    assert_int_equal(cus_context_poisoned(c), CUS_SUCCESS);
    assert_status(cus_stream_synchronize(s), CUDA_ERROR_ILLEGAL_ADDRESS);
    assert_int_equal(runs, 1);
    assert_int_equal(log.runs, 0);
    assert_int_equal(cus_context_poisoned(c), CUDA_ERROR_ILLEGAL_ADDRESS);
    assert_contains(cus_last_error_message(), "poisoned");
    /* from now on every call on the context fails fast, without the driver */
    unsigned long calls = cus_fake_call_count();
    const cus_status P = CUDA_ERROR_ILLEGAL_ADDRESS;
    cus_launch_config cfg = {.grid = {1, 1, 1}, .block = {1, 1, 1}};
    int v = 0;
    assert_status(cus_launch(fx.one, 1, 1, 0, NULL, 1), P);
    assert_contains(cus_last_error_message(),
                    "is poisoned by an earlier CUDA_ERROR_ILLEGAL_ADDRESS; no driver call was made");
    assert_string_equal(cus_last_error()->function, "cus_launch");
    assert_status(cus_launch(fx.one, 1, 1, 0, s, 1), P);
    assert_status(cus_launch_ex(fx.one, &cfg, 1), P);
    assert_string_equal(cus_last_error()->function, "cus_launch_ex");
    assert_status(cus_launch(fx.one, 1, 1, 0, NULL, 1ull), P); /* before the argument check */
    assert_status(cus_function_attribute(fx.one, CU_FUNC_ATTRIBUTE_NUM_REGS, &v), P);
    assert_status(cus_function_set_attribute(fx.one,
                                             CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, 1),
                  P);
    assert_status(cus_function_set_max_dynamic_shared(fx.one, 1024), P);
    assert_status(cus_function_set_cache_config(fx.one, CU_FUNC_CACHE_PREFER_L1), P);
    assert_status(cus_function_set_shared_mem_config(fx.one, CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE),
                  P);
    assert_status(cus_function_max_potential_block(fx.one, 0, 0, &v, &v), P);
    assert_status(cus_function_max_active_blocks(fx.one, 32, 0, &v), P);
    cus_function *f = SENTINEL_PTR(f);
    assert_status(cus_module_get_function(fx.mod, "one", &f), P); /* even a cached name */
    assert_ptr_equal(f, SENTINEL_PTR(f));
    assert_status(cus_module_get_global(fx.mod, "x", NULL, NULL), P);
    cus_module *m = SENTINEL_PTR(m);
    assert_status(cus_module_load_data(c, ptx_src, 0, NULL, &m), P);
    assert_ptr_equal(m, SENTINEL_PTR(m));
    assert_no_calls_since(calls);
    assert_int_equal(cus_fake_launch_count(), 2);
    /* the getters still answer */
    assert_true(cus_function_layout_known(fx.one));
    assert_string_equal(cus_function_name(fx.one), "one");
    /* everything still frees, and nothing is unloaded in a dead context */
    unsigned long unloads = cus_fake_calls_of("cuModuleUnload");
    b = cus_buffer_unref(b);
    s = cus_stream_unref(s);
    close_fixture(&fx);
    assert_int_equal(cus_fake_calls_of("cuModuleUnload"), unloads);
    c = cus_context_unref(c);
    assert_int_equal(cus_debug_live_objects(), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
}

/* A sticky status from the launch call itself (the driver found the context
 * dead) poisons as well. */
static void test_a_sticky_launch_failure_poisons(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    fixture fx = open_fixture(c);
    assert_ok(cus_context_push(c));
    assert_ok(cus_fake_fail_entry("cuLaunchKernel", 1, CUDA_ERROR_LAUNCH_FAILED, false));
    assert_status(cus_launch(fx.one, 1, 1, 0, NULL, 1), CUDA_ERROR_LAUNCH_FAILED);
    cus_fake_clear_faults();
    assert_string_equal(cus_last_error()->driver_call, "cuLaunchKernel");
    assert_contains(cus_last_error_message(), "now poisoned");
    assert_int_equal(cus_context_poisoned(c), CUDA_ERROR_LAUNCH_FAILED);
    assert_refused(cus_launch(fx.one, 1, 1, 0, NULL, 1), CUDA_ERROR_LAUNCH_FAILED, "poisoned");
    assert_ok(cus_context_pop(NULL));
    /* the slow path's launch, too */
    cus_context *c2 = new_ctx();
    fixture fx2 = open_fixture(c2);
    assert_ok(cus_fake_fail_entry("cuLaunchKernel", 1, CUDA_ERROR_ILLEGAL_INSTRUCTION, false));
    stack_snap before = snap();
    assert_status(cus_launch(fx2.one, 1, 1, 0, NULL, 1), CUDA_ERROR_ILLEGAL_INSTRUCTION);
    cus_fake_clear_faults();
    assert_stack_unchanged(before);
    assert_int_equal(cus_context_poisoned(c2), CUDA_ERROR_ILLEGAL_INSTRUCTION);
    assert_int_equal(cus_context_poisoned(c), CUDA_ERROR_LAUNCH_FAILED); /* its own */
    close_fixture(&fx);
    close_fixture(&fx2);
    c = cus_context_unref(c);
    c2 = cus_context_unref(c2);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
}

/* A primary context poisoned by a kernel is reset by its last release: a new
 * retain starts healthy. */
static void test_a_poisoned_primary_context_is_reset(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    fixture fx = open_fixture(c);
    int runs = 0;
    assert_ok(cus_fake_register_kernel("boom", boom_twin, &runs));
    assert_ok(cus_launch(fx.boom, 1, 1, 0, NULL, (CUdeviceptr)0));
    assert_status(cus_context_synchronize(c), CUDA_ERROR_ILLEGAL_ADDRESS);
    assert_int_equal(cus_context_poisoned(c), CUDA_ERROR_ILLEGAL_ADDRESS);
    close_fixture(&fx);
    c = cus_context_unref(c);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
    c = new_primary();
    assert_int_equal(cus_context_poisoned(c), CUS_SUCCESS);
    fx = open_fixture(c);
    assert_ok(cus_launch(fx.one, 1, 1, 0, NULL, 1));
    assert_ok(cus_context_synchronize(c));
    close_fixture(&fx);
    c = cus_context_unref(c);
}

/* --- function attributes and configuration ------------------------------------------------ */

static void test_function_attributes(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    fixture fx = open_fixture(c);
    stack_snap before = snap();
    unsigned long calls = cus_fake_call_count();
    assert_int_equal(fn_attr(fx.one, CU_FUNC_ATTRIBUTE_NUM_REGS), 32);
    assert_calls_since(calls, "cuFuncGetAttribute"); /* no context needed */
    assert_stack_unchanged(before);
    assert_int_equal(fn_attr(fx.one, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK), 1024);
    assert_int_equal(fn_attr(fx.bounded, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK), 128);
    assert_int_equal(fn_attr(fx.one, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES), 0);
    assert_int_equal(fn_attr(fx.bounded, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES), 1024);
    assert_int_equal(fn_attr(fx.one, CU_FUNC_ATTRIBUTE_PTX_VERSION), 80);
    assert_int_equal(fn_attr(fx.one, CU_FUNC_ATTRIBUTE_BINARY_VERSION), 90);
    assert_int_equal(fn_attr(fx.one, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES), 49152);
    /* an attribute the driver does not know: its status, the value untouched */
    int v = 1234;
    leak_snap snap0 = leak_snap_now();
    assert_status(cus_function_attribute(fx.one, (CUfunction_attribute)99, &v),
                  CUDA_ERROR_INVALID_VALUE);
    assert_string_equal(cus_last_error()->driver_call, "cuFuncGetAttribute");
    assert_string_equal(cus_last_error()->function, "cus_function_attribute");
    assert_int_equal(v, 1234);
    assert_nothing_changed(snap0);
    assert_int_equal(cus_context_poisoned(c), CUS_SUCCESS);
    /* NULLs */
    calls = cus_fake_call_count();
    assert_status(cus_function_attribute(NULL, CU_FUNC_ATTRIBUTE_NUM_REGS, &v),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_function_attribute(fx.one, CU_FUNC_ATTRIBUTE_NUM_REGS, NULL),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_function_set_attribute(NULL, CU_FUNC_ATTRIBUTE_NUM_REGS, 1),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_function_set_max_dynamic_shared(NULL, 1), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_function_set_cache_config(NULL, CU_FUNC_CACHE_PREFER_L1),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_function_set_shared_mem_config(NULL, CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_function_max_potential_block(NULL, 0, 0, &v, &v), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_function_max_active_blocks(NULL, 32, 0, &v), CUS_ERROR_INVALID_ARGUMENT);
    assert_no_calls_since(calls);
    assert_int_equal(v, 1234);
    close_fixture(&fx);
    c = cus_context_unref(c);
}

static void test_function_set_attribute_and_configs(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    fixture fx = open_fixture(c);
    const CUfunction_attribute carve = CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT;
    unsigned long calls = cus_fake_call_count();
    assert_ok(cus_function_set_attribute(fx.one, carve, 50));
    assert_calls_since(calls, "cuFuncSetAttribute");
    assert_int_equal(fn_attr(fx.one, carve), 50);
    assert_int_equal(fn_attr(fx.axpy, carve), -1); /* per function */
    /* read-only, or out of range: the driver's status */
    assert_status(cus_function_set_attribute(fx.one, CU_FUNC_ATTRIBUTE_NUM_REGS, 8),
                  CUDA_ERROR_INVALID_VALUE);
    assert_string_equal(cus_last_error()->driver_call, "cuFuncSetAttribute");
    assert_status(cus_function_set_attribute(fx.one, carve, 101), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(fn_attr(fx.one, carve), 50);
    /* cache config */
    calls = cus_fake_call_count();
    assert_ok(cus_function_set_cache_config(fx.one, CU_FUNC_CACHE_PREFER_SHARED));
    assert_calls_since(calls, "cuFuncSetCacheConfig");
    assert_ok(cus_function_set_cache_config(fx.one, CU_FUNC_CACHE_PREFER_EQUAL));
    assert_status(cus_function_set_cache_config(fx.one, (CUfunc_cache)99), CUDA_ERROR_INVALID_VALUE);
    assert_string_equal(cus_last_error()->driver_call, "cuFuncSetCacheConfig");
    /* shared memory banks */
    calls = cus_fake_call_count();
    assert_ok(cus_function_set_shared_mem_config(fx.one, CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE));
    assert_calls_since(calls, "cuFuncSetSharedMemConfig");
    assert_status(cus_function_set_shared_mem_config(fx.one, (CUsharedconfig)7),
                  CUDA_ERROR_INVALID_VALUE);
    assert_string_equal(cus_last_error()->driver_call, "cuFuncSetSharedMemConfig");
    assert_int_equal(cus_context_poisoned(c), CUS_SUCCESS);
    close_fixture(&fx);
    c = cus_context_unref(c);
}

static void test_shared_mem_config_not_supported(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    fixture fx = open_fixture(c);
    assert_refused(cus_function_set_shared_mem_config(fx.one, CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE),
                   CUS_ERROR_NOT_SUPPORTED, "the driver no longer has cuFuncSetSharedMemConfig");
    assert_string_equal(cus_last_error()->driver_call, "cuFuncSetSharedMemConfig");
    assert_ok(cus_function_set_cache_config(fx.one, CU_FUNC_CACHE_PREFER_L1));
    close_fixture(&fx);
    c = cus_context_unref(c);
}

static void test_max_dynamic_shared(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    fixture fx = open_fixture(c);
    const CUfunction_attribute dyn = CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
    /* above 48 KiB needs the opt-in */
    assert_status(cus_launch(fx.one, 1, 1, 100000, NULL, 1), CUDA_ERROR_INVALID_VALUE);
    unsigned long calls = cus_fake_call_count();
    assert_ok(cus_function_set_max_dynamic_shared(fx.one, 100000));
    assert_calls_since(calls, "cuFuncSetAttribute");
    assert_int_equal(fn_attr(fx.one, dyn), 100000);
    assert_ok(cus_launch(fx.one, 1, 1, 100000, NULL, 1));
    assert_int_equal(last_launch().shared_bytes, 100000);
    assert_status(cus_launch(fx.one, 1, 1, 100001, NULL, 1), CUDA_ERROR_INVALID_VALUE);
    /* the device's opt-in limit (227 KiB), less the static shared memory */
    assert_ok(cus_function_set_max_dynamic_shared(fx.one, 232448));
    assert_status(cus_function_set_max_dynamic_shared(fx.one, 232449), CUDA_ERROR_INVALID_VALUE);
    assert_string_equal(cus_last_error()->driver_call, "cuFuncSetAttribute");
    assert_string_equal(cus_last_error()->function, "cus_function_set_max_dynamic_shared");
    assert_status(cus_function_set_max_dynamic_shared(fx.bounded, 232448), CUDA_ERROR_INVALID_VALUE);
    assert_ok(cus_function_set_max_dynamic_shared(fx.bounded, 232448 - 1024));
    assert_ok(cus_function_set_max_dynamic_shared(fx.one, 0));
    assert_int_equal(fn_attr(fx.one, dyn), 0);
    /* what an int cannot hold: refused here */
    assert_refused(cus_function_set_max_dynamic_shared(fx.one, (size_t)INT32_MAX + 1),
                   CUS_ERROR_OUT_OF_RANGE, "2147483648 bytes of dynamic shared memory");
    assert_refused(cus_function_set_max_dynamic_shared(fx.one, SIZE_MAX), CUS_ERROR_OUT_OF_RANGE,
                   "bytes of dynamic shared memory");
    assert_int_equal(fn_attr(fx.one, dyn), 0);
    close_fixture(&fx);
    c = cus_context_unref(c);
}

static void test_occupancy(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    fixture fx = open_fixture(c);
    stack_snap before = snap();
    /* 32 registers on a Hopper (132 SMs, 64 K registers, 2048 threads per
     * SM): 1024-thread blocks, two per SM */
    int min_grid = -1, block = -1;
    /* with no context current: the driver needs one (INVALID_CONTEXT on an
     * H200), so cuscope makes the function's current for the call */
    assert_null(cus_context_current());
    unsigned long calls = cus_fake_call_count();
    assert_ok(cus_function_max_potential_block(fx.one, 0, 0, &min_grid, &block));
    assert_calls_since(calls, "cuCtxPushCurrent", "cuOccupancyMaxPotentialBlockSize",
                       "cuCtxPopCurrent");
    assert_stack_unchanged(before);
    assert_int_equal(block, 1024);
    assert_int_equal(min_grid, 2 * 132);
    /* a block limit, no min_grid wanted */
    block = -1;
    assert_ok(cus_function_max_potential_block(fx.one, 0, 128, NULL, &block));
    assert_int_equal(block, 128);
    /* the function's own limit */
    assert_ok(cus_function_max_potential_block(fx.bounded, 0, 0, &min_grid, &block));
    assert_int_equal(block, 128);
    assert_true(min_grid > 0);
    /* active blocks: 128 threads are 4 warps: 16 blocks fill the 64 warps */
    int n = -1;
    calls = cus_fake_call_count();
    assert_ok(cus_function_max_active_blocks(fx.one, 128, 0, &n));
    assert_calls_since(calls, "cuCtxPushCurrent", "cuOccupancyMaxActiveBlocksPerMultiprocessor",
                       "cuCtxPopCurrent");
    assert_stack_unchanged(before);
    assert_int_equal(n, 16);
    /* with it current already: no switch */
    {
        cus_context_scope(g, c);
        assert_ok(g.status);
        calls = cus_fake_call_count();
        assert_ok(cus_function_max_active_blocks(fx.one, 128, 0, &n));
        assert_calls_since(calls, "cuOccupancyMaxActiveBlocksPerMultiprocessor");
    }
    /* the driver itself refuses the call with no context current: what the
     * switch is for */
    PFN_cuOccupancyMaxActiveBlocksPerMultiprocessor_v6050 raw_occ;
    RAW(raw_occ, "cuOccupancyMaxActiveBlocksPerMultiprocessor", 6050);
    assert_cu(raw_occ(&n, cus_function_handle(fx.one), 128, 0), CUDA_ERROR_INVALID_CONTEXT);
    assert_ok(cus_function_max_active_blocks(fx.one, 1024, 0, &n));
    assert_int_equal(n, 2);
    /* more dynamic shared memory than the function allows: none fit */
    assert_ok(cus_function_max_active_blocks(fx.one, 128, 1 << 20, &n));
    assert_int_equal(n, 0);
    /* bad arguments: refused here */
    n = 5;
    block = 5;
    assert_refused(cus_function_max_potential_block(fx.one, 0, -1, &min_grid, &block),
                   CUS_ERROR_INVALID_ARGUMENT, "block_limit >= 0");
    assert_refused(cus_function_max_potential_block(fx.one, 0, 0, &min_grid, NULL),
                   CUS_ERROR_INVALID_ARGUMENT, "invalid argument");
    assert_refused(cus_function_max_active_blocks(fx.one, 0, 0, &n), CUS_ERROR_INVALID_ARGUMENT,
                   "block > 0");
    assert_refused(cus_function_max_active_blocks(fx.one, -32, 0, &n), CUS_ERROR_INVALID_ARGUMENT,
                   "block > 0");
    assert_refused(cus_function_max_active_blocks(fx.one, 32, 0, NULL), CUS_ERROR_INVALID_ARGUMENT,
                   "blocks");
    assert_int_equal(n, 5);
    assert_int_equal(block, 5);
    close_fixture(&fx);
    c = cus_context_unref(c);
}

static void test_function_faults(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    fixture fx = open_fixture(c);
    int v = 77, g = 77;
    assert_fault_named("cuFuncGetAttribute",
                       cus_function_attribute(fx.one, CU_FUNC_ATTRIBUTE_NUM_REGS, &v));
    assert_fault_named("cuFuncSetAttribute",
                       cus_function_set_attribute(
                           fx.one, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, 10));
    assert_fault_named("cuFuncSetAttribute", cus_function_set_max_dynamic_shared(fx.one, 1024));
    assert_fault_named("cuFuncSetCacheConfig",
                       cus_function_set_cache_config(fx.one, CU_FUNC_CACHE_PREFER_L1));
    assert_fault_named("cuFuncSetSharedMemConfig",
                       cus_function_set_shared_mem_config(fx.one,
                                                          CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE));
    assert_fault_named("cuOccupancyMaxPotentialBlockSize",
                       cus_function_max_potential_block(fx.one, 0, 0, &g, &v));
    assert_fault_named("cuOccupancyMaxActiveBlocksPerMultiprocessor",
                       cus_function_max_active_blocks(fx.one, 32, 0, &v));
    assert_int_equal(v, 77);
    assert_int_equal(g, 77);
    /* nothing was changed by the failed setters */
    assert_int_equal(fn_attr(fx.one, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT), -1);
    assert_int_equal(fn_attr(fx.one, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES), 49152);
    assert_int_equal(cus_context_poisoned(c), CUS_SUCCESS);
    /* a sticky failure of any of them poisons */
    assert_ok(cus_fake_fail_entry("cuFuncGetAttribute", 1, CUDA_ERROR_HARDWARE_STACK_ERROR, false));
    assert_status(cus_function_attribute(fx.one, CU_FUNC_ATTRIBUTE_NUM_REGS, &v),
                  CUDA_ERROR_HARDWARE_STACK_ERROR);
    cus_fake_clear_faults();
    assert_int_equal(cus_context_poisoned(c), CUDA_ERROR_HARDWARE_STACK_ERROR);
    assert_refused(cus_function_max_active_blocks(fx.one, 32, 0, &v),
                   CUDA_ERROR_HARDWARE_STACK_ERROR, "poisoned");
    close_fixture(&fx);
    c = cus_context_unref(c);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_a_faulting_kernel_poisons_the_context),
        ENV_TEST(test_a_sticky_launch_failure_poisons),
        ENV_TEST(test_a_poisoned_primary_context_is_reset),
        ENV_TEST(test_function_attributes),
        ENV_TEST(test_function_set_attribute_and_configs),
        TEST_WITH(test_shared_mem_config_not_supported, setup_no_shared_mem_config),
        ENV_TEST(test_max_dynamic_shared),
        ENV_TEST(test_occupancy),
        ENV_TEST(test_function_faults),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
