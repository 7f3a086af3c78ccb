/* The launch tests, part extended: host functions, extended launches, and
 * older drivers, on which launches go unchecked. Their fixtures, and what
 * the launch tests are about: launch_fixtures.h. */
#include "launch_fixtures.h"

/* A module unload is made in relaxed capture interaction mode
 * (cus_destroy_in_context_relaxed_): the exchange, the unload, the exchange back. */
#define UNLOAD_RELAXED                                                         \
    "cuThreadExchangeStreamCaptureMode", "cuModuleUnload", "cuThreadExchangeStreamCaptureMode"

/* --- host functions ----------------------------------------------------------------------- */

typedef struct host_launch {
    fixture *fx;
    cus_status launch, launch_ex, explicit_launch, attribute, set_attribute, cache, shared_config,
        max_dynamic, max_block, max_active;
    int ran;
} host_launch;

static void launch_in_host(void *arg)
{
    host_launch *h = arg;
    cus_launch_config cfg = {.grid = {1, 1, 1}, .block = {1, 1, 1}};
    int v = 0;
    h->launch = cus_launch(h->fx->one, 1, 1, 0, NULL, 1);
    h->launch_ex = cus_launch_ex(h->fx->one, &cfg, 1);
    h->explicit_launch = cus_function_launch(h->fx->noargs, CUS_DIM3(1, 1, 1), CUS_DIM3(1, 1, 1), 0,
                                             NULL, 0, NULL, NULL);
    h->attribute = cus_function_attribute(h->fx->one, CU_FUNC_ATTRIBUTE_NUM_REGS, &v);
    h->set_attribute = cus_function_set_attribute(h->fx->one,
                                                  CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, 50);
    h->cache = cus_function_set_cache_config(h->fx->one, CU_FUNC_CACHE_PREFER_L1);
    h->shared_config = cus_function_set_shared_mem_config(h->fx->one,
                                                          CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE);
    h->max_dynamic = cus_function_set_max_dynamic_shared(h->fx->one, 1024);
    h->max_block = cus_function_max_potential_block(h->fx->one, 0, 0, &v, &v);
    h->max_active = cus_function_max_active_blocks(h->fx->one, 32, 0, &v);
    h->ran++;
}

static void test_refused_inside_a_host_function(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    fixture fx = open_fixture(c);
    cus_stream *s = new_stream(c, 0);
    host_launch h = {.fx = &fx};
    unsigned long calls_of_fn = cus_fake_calls_of("cuFuncGetAttribute") +
                                cus_fake_calls_of("cuFuncSetAttribute") +
                                cus_fake_calls_of("cuLaunchKernel") +
                                cus_fake_calls_of("cuLaunchKernelEx");
    assert_ok(cus_stream_launch_host_fn(s, launch_in_host, &h));
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(h.ran, 1);
    const cus_status H = CUS_ERROR_IN_HOST_FUNCTION;
    assert_int_equal(h.launch, H);
    assert_int_equal(h.launch_ex, H);
    assert_int_equal(h.explicit_launch, H);
    assert_int_equal(h.attribute, H);
    assert_int_equal(h.set_attribute, H);
    assert_int_equal(h.cache, H);
    assert_int_equal(h.shared_config, H);
    assert_int_equal(h.max_dynamic, H);
    assert_int_equal(h.max_block, H);
    assert_int_equal(h.max_active, H);
    assert_int_equal(cus_fake_launch_count(), 0);
    assert_int_equal(cus_fake_calls_of("cuFuncGetAttribute") +
                         cus_fake_calls_of("cuFuncSetAttribute") +
                         cus_fake_calls_of("cuLaunchKernel") + cus_fake_calls_of("cuLaunchKernelEx"),
                     calls_of_fn);
    assert_int_equal(cus_fake_misuse_count(), 0);
    s = cus_stream_unref(s);
    close_fixture(&fx);
    c = cus_context_unref(c);
}

/* A last reference dropped inside a host function is released by the next
 * launch (which then takes its full path), before the launch itself. */
static void drop_in_host(void *arg)
{
    cus_module **m = arg;
    *m = cus_module_unref(*m);
}

static void test_launch_releases_what_host_functions_dropped(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    fixture fx = open_fixture(c);
    cus_stream *s = new_stream(c, 0);
    cus_module *extra = NULL;
    assert_ok(cus_module_load_data(c, ptx_src, 0, NULL, &extra));
    assert_ok(cus_stream_launch_host_fn(s, drop_in_host, &extra));
    cus_fake_run_streams(); /* the host function runs: no cuscope call to release after it */
    assert_null(extra);
    assert_int_equal(cus_fake_calls_of("cuModuleUnload"), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 2);
    assert_ok(cus_context_push(c));
    unsigned long calls = cus_fake_call_count();
    assert_ok(cus_launch(fx.one, 1, 1, 0, NULL, 3));
    assert_calls_since(calls, UNLOAD_RELAXED, "cuLaunchKernel");
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 1);
    /* and the fast path is back */
    calls = cus_fake_call_count();
    assert_ok(cus_launch(fx.one, 1, 1, 0, NULL, 3));
    assert_calls_since(calls, "cuLaunchKernel");
    assert_ok(cus_context_pop(NULL));
    s = cus_stream_unref(s);
    close_fixture(&fx);
    c = cus_context_unref(c);
}

/* The macro's limit: 63 arguments. */
static void test_launch_63_arguments(void **state)
{
    (void)state;
    char ptx[4096];
    size_t n = (size_t)snprintf(ptx, sizeof ptx,
                                ".version 8.0\n.target sm_80\n.address_size 64\n"
                                ".visible .entry many(\n");
    for (int i = 0; i < 63; i++)
        n += (size_t)snprintf(ptx + n, sizeof ptx - n, "\t.param .u32 many_%d%s\n", i,
                              i < 62 ? "," : "");
    snprintf(ptx + n, sizeof ptx - n, ")\n{\n\tret;\n}\n");
    cus_context *c = new_primary();
    cus_module *m = NULL;
    assert_ok(cus_module_load_data(c, ptx, 0, NULL, &m));
    cus_function *f = get_fn(m, "many");
    assert_int_equal(cus_function_param_count(f), 63);
    assert_ok(cus_launch(f, 1, 1, 0, NULL, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
                         16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34,
                         35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53,
                         54, 55, 56, 57, 58, 59, 60, 61, 62));
    cus_fake_launch rec = last_launch();
    assert_int_equal(rec.nargs, 63);
    assert_int_equal(rec.arg_bytes, 63 * 4);
    for (int i = 0; i < 63; i++) {
        int v = -1;
        memcpy(&v, rec.args + 4 * i, 4);
        assert_int_equal(v, i);
    }
    assert_refused(cus_launch(f, 1, 1, 0, NULL, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
                              15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31,
                              32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48,
                              49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62ull),
                   CUS_ERROR_INVALID_ARGUMENT, "many: argument 63 is 8 bytes");
    f = cus_function_unref(f);
    m = cus_module_unref(m);
    c = cus_context_unref(c);
}

/* --- extended launches -------------------------------------------------------------------- */

static void test_launch_ex(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    fixture fx = open_fixture(c);
    cus_stream *s = new_stream(c, 0);
    twin_log log = {0};
    assert_ok(cus_fake_register_kernel("one", one_twin, &log));
    assert_ok(cus_context_push(c));
    /* clusters: zeros in y and z are 1 */
    cus_launch_config cfg = {.grid = {4, 2, 1}, .block = {64, 1, 1}, .shared_bytes = 256,
                             .stream = s, .cluster = {2, 0, 0}};
    unsigned long calls = cus_fake_call_count();
    assert_ok(cus_launch_ex(fx.one, &cfg, 77u));
    assert_calls_since(calls, "cuLaunchKernelEx"); /* current: one call */
    cus_fake_launch rec = last_launch();
    assert_true(rec.extended);
    assert_false(rec.cooperative);
    assert_dims(rec.grid, 4, 2, 1);
    assert_dims(rec.block, 64, 1, 1);
    assert_dims(rec.cluster, 2, 1, 1);
    assert_int_equal(rec.shared_bytes, 256);
    assert_ptr_equal(rec.stream, cus_stream_handle(s));
    unsigned int v = 77;
    assert_memory_equal(rec.args, &v, 4);
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(log.runs, 1);
    assert_int_equal(log.one_value, 77);
    /* a full cluster shape */
    cfg.cluster = CUS_DIM3(2, 2, 1);
    assert_ok(cus_launch_ex(fx.one, &cfg, 78u));
    assert_dims(last_launch().cluster, 2, 2, 1);
    /* cooperative */
    cfg = (cus_launch_config){.grid = {4, 1, 1}, .block = {32, 1, 1}, .cooperative = true};
    assert_ok(cus_launch_ex(fx.noargs, &cfg));
    rec = last_launch();
    assert_true(rec.extended);
    assert_true(rec.cooperative);
    assert_dims(rec.cluster, 0, 0, 0);
    assert_null(rec.stream);
    assert_int_equal(rec.nargs, 0);
    /* both */
    cfg.cluster = CUS_DIM3(2, 1, 1);
    assert_ok(cus_launch_ex(fx.noargs, &cfg));
    rec = last_launch();
    assert_true(rec.cooperative);
    assert_dims(rec.cluster, 2, 1, 1);
    /* neither: a plain launch through cuLaunchKernelEx */
    cfg = (cus_launch_config){.grid = {1, 1, 1}, .block = {1, 1, 1}};
    assert_ok(cus_launch_ex(fx.axpy, &cfg, 1.0f, (CUdeviceptr)0, (CUdeviceptr)0, 0ull));
    rec = last_launch();
    assert_true(rec.extended);
    assert_false(rec.cooperative);
    assert_dims(rec.cluster, 0, 0, 0);
    assert_int_equal(rec.arg_bytes, 32);
    /* the explicit form */
    void *args[] = {&v};
    const size_t sizes[] = {4};
    assert_ok(cus_function_launch_ex(fx.one, &cfg, 1, args, sizes));
    assert_memory_equal(last_launch().args, &v, 4);
    assert_ok(cus_context_pop(NULL));
    /* not current: made current for the call, the stack restored */
    stack_snap before = snap();
    calls = cus_fake_call_count();
    assert_ok(cus_launch_ex(fx.one, &cfg, 79u));
    assert_calls_since(calls, "cuCtxPushCurrent", "cuLaunchKernelEx", "cuCtxPopCurrent");
    assert_stack_unchanged(before);
    assert_ok(cus_stream_synchronize(s));
    s = cus_stream_unref(s);
    close_fixture(&fx);
    c = cus_context_unref(c);
}

static void test_launch_ex_refusals(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    fixture fx = open_fixture(c);
    cus_launch_config cfg = {.grid = {1, 1, 1}, .block = {1, 1, 1}};
    const cus_status E = CUS_ERROR_INVALID_ARGUMENT;
    assert_refused(cus_launch_ex(fx.one, NULL, 1), E, "no launch configuration");
    assert_string_equal(cus_last_error()->function, "cus_launch_ex");
    assert_refused(cus_launch_ex(fx.one, &cfg, 1ull), E,
                   "one: argument 1 is 8 bytes, the kernel's parameter is 4");
    assert_refused(cus_launch_ex((cus_function *)NULL, &cfg), E, "no function");
    assert_refused(cus_function_launch_ex(fx.one, &cfg, 1, NULL, NULL), E, "arguments missing");
    /* what the driver refuses: its status */
    leak_snap before = leak_snap_now();
    cfg = (cus_launch_config){.grid = {3, 1, 1}, .block = {32, 1, 1}, .cluster = {2, 1, 1}};
    assert_status(cus_launch_ex(fx.noargs, &cfg), CUDA_ERROR_INVALID_CLUSTER_SIZE);
    assert_string_equal(cus_last_error()->driver_call, "cuLaunchKernelEx");
    cfg.cluster = CUS_DIM3(16, 1, 1); /* more than 8 blocks, not opted in */
    cfg.grid = CUS_DIM3(16, 1, 1);
    assert_status(cus_launch_ex(fx.noargs, &cfg), CUDA_ERROR_INVALID_CLUSTER_SIZE);
    cfg = (cus_launch_config){.grid = {100000, 1, 1}, .block = {1024, 1, 1}, .cooperative = true};
    assert_status(cus_launch_ex(fx.noargs, &cfg), CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
    assert_contains(cus_last_error_message(), "cuLaunchKernelEx");
    cfg = (cus_launch_config){.grid = {0, 1, 1}, .block = {1, 1, 1}};
    assert_status(cus_launch_ex(fx.noargs, &cfg), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cus_fake_launch_count(), 0);
    assert_nothing_changed(before);
    assert_int_equal(cus_context_poisoned(c), CUS_SUCCESS);
    close_fixture(&fx);
    c = cus_context_unref(c);
}

static void test_launch_ex_faults(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    fixture fx = open_fixture(c);
    cus_launch_config cfg = {.grid = {2, 1, 1}, .block = {1, 1, 1}, .cluster = {2, 1, 1}};
    assert_fault_named("cuCtxPushCurrent", cus_launch_ex(fx.one, &cfg, 1));
    assert_fault_named("cuLaunchKernelEx", cus_launch_ex(fx.one, &cfg, 1));
    assert_string_equal(cus_last_error()->function, "cus_launch_ex");
    assert_pop_fault_reported("cus_launch_ex", cus_launch_ex(fx.one, &cfg, 1));
    assert_ok(cus_context_push(c));
    assert_fault_named("cuLaunchKernelEx", cus_launch_ex(fx.one, &cfg, 1));
    assert_ok(cus_context_pop(NULL));
    /* a sticky failure of the launch itself poisons */
    assert_ok(cus_fake_fail_entry("cuLaunchKernelEx", 1, CUDA_ERROR_LAUNCH_FAILED, false));
    assert_status(cus_launch_ex(fx.one, &cfg, 1), CUDA_ERROR_LAUNCH_FAILED);
    cus_fake_clear_faults();
    assert_contains(cus_last_error_message(), "now poisoned");
    assert_int_equal(cus_context_poisoned(c), CUDA_ERROR_LAUNCH_FAILED);
    assert_refused(cus_launch_ex(fx.one, &cfg, 1), CUDA_ERROR_LAUNCH_FAILED, "poisoned");
    close_fixture(&fx);
    c = cus_context_unref(c);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
}

static void test_launch_ex_not_supported(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    fixture fx = open_fixture(c);
    cus_launch_config cfg = {.grid = {2, 1, 1}, .block = {1, 1, 1}, .cluster = {2, 1, 1}};
    assert_refused(cus_launch_ex(fx.one, &cfg, 1), CUS_ERROR_NOT_SUPPORTED,
                   "the driver has no cuLaunchKernelEx (needs 11.8)");
    assert_string_equal(cus_last_error()->function, "cus_launch_ex");
    assert_string_equal(cus_last_error()->driver_call, "cuLaunchKernelEx");
    /* the argument checks come first */
    assert_refused(cus_launch_ex(fx.one, &cfg, 1, 2), CUS_ERROR_INVALID_ARGUMENT, "2 arguments given");
    /* plain launches are unaffected */
    assert_ok(cus_launch(fx.one, 2, 1, 0, NULL, 1));
    assert_false(last_launch().extended);
    close_fixture(&fx);
    c = cus_context_unref(c);
}

/* --- older drivers: launches go unchecked ------------------------------------------------ */

static void check_unchecked_launches(void)
{
    cus_context *c = new_primary();
    fixture fx = open_fixture(c);
    assert_false(cus_function_layout_known(fx.one));
    assert_false(cus_function_layout_known(fx.axpy));
    twin_log log = {0};
    assert_ok(cus_fake_register_kernel("one", one_twin, &log));
    /* right: it works */
    assert_ok(cus_launch(fx.one, 1, 1, 0, NULL, 5u));
    unsigned int five = 5;
    assert_memory_equal(last_launch().args, &five, 4);
    /* 8 bytes for a 4-byte parameter: not checked, the driver takes 4 */
    assert_ok(cus_launch(fx.one, 1, 1, 0, NULL, 0x1122334400000006ull));
    unsigned int six = 6;
    assert_memory_equal(last_launch().args, &six, 4);
    /* and more arguments than parameters: the driver reads what it needs */
    assert_ok(cus_launch(fx.one, 1, 1, 0, NULL, 7u, 8u, 9u));
    assert_ok(cus_context_synchronize(c));
    assert_int_equal(log.runs, 3);
    assert_int_equal(log.one_value, 7);
    /* axpy computes as before */
    assert_ok(cus_fake_register_kernel("axpy", axpy_twin, NULL));
    float x[4] = {1, 2, 3, 4}, y[4] = {10, 20, 30, 40};
    cus_buffer *bx = NULL, *by = NULL;
    assert_ok(cus_buffer_alloc(c, sizeof x, &bx));
    assert_ok(cus_buffer_alloc(c, sizeof y, &by));
    assert_ok(cus_copy_to_device(bx, 0, x, sizeof x));
    assert_ok(cus_copy_to_device(by, 0, y, sizeof y));
    assert_ok(cus_launch(fx.axpy, 1, 4, 0, NULL, 3.0f, bx, by, 4ull));
    assert_ok(cus_copy_to_host(y, by, 0, sizeof y));
    for (int i = 0; i < 4; i++)
        assert_float_equal(y[i], 10.0f * (float)(i + 1) + 3.0f * (float)(i + 1), 0);
    bx = cus_buffer_unref(bx);
    by = cus_buffer_unref(by);
    close_fixture(&fx);
    c = cus_context_unref(c);
    /* log is going out of scope */
    assert_ok(cus_fake_register_kernel("one", NULL, NULL));
}

static void test_unchecked_without_param_info(void **state)
{
    (void)state;
    check_unchecked_launches();
}

static void test_unchecked_on_a_12000_driver(void **state)
{
    (void)state;
    check_unchecked_launches();
    /* cuLaunchKernelEx is there (11.8) */
    cus_context *c = new_primary();
    fixture fx = open_fixture(c);
    cus_launch_config cfg = {.grid = {2, 1, 1}, .block = {1, 1, 1}, .cluster = {2, 1, 1}};
    assert_ok(cus_launch_ex(fx.one, &cfg, 1));
    assert_true(last_launch().extended);
    close_fixture(&fx);
    c = cus_context_unref(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_refused_inside_a_host_function),
        ENV_TEST(test_launch_releases_what_host_functions_dropped),
        ENV_TEST(test_launch_63_arguments),
        ENV_TEST(test_launch_ex),
        ENV_TEST(test_launch_ex_refusals),
        ENV_TEST(test_launch_ex_faults),
        TEST_WITH(test_launch_ex_not_supported, setup_no_launch_ex),
        TEST_WITH(test_unchecked_without_param_info, setup_no_param_info),
        TEST_WITH(test_unchecked_on_a_12000_driver, setup_12000),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
