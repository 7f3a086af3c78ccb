/* The module tests, part functions: functions, parameter layouts and
 * enumeration. Their fixtures, and what the module tests are about:
 * module_fixtures.h. */
#include "module_fixtures.h"

/* A module unload is made in relaxed capture interaction mode
 * (cus_destroy_in_context_relaxed_): the exchange, the unload, the exchange back. */
#define UNLOAD_RELAXED                                                         \
    "cuThreadExchangeStreamCaptureMode", "cuModuleUnload", "cuThreadExchangeStreamCaptureMode"

/* --- functions ------------------------------------------------------------------------- */

static void test_get_function(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_module *m = load(c, ptx_src);
    stack_snap before = snap();
    unsigned long calls = cus_fake_call_count();
    cus_function *f = NULL;
    assert_ok(cus_module_get_function(m, "add", &f));
    /* no context needed; the layout read once: 2 parameters, as many calls
     * (the count is the image's: nothing is asked past the last, which
     * compute-sanitizer would report as an API error) */
    assert_calls_since(calls, "cuModuleGetFunction", "cuFuncGetParamInfo", "cuFuncGetParamInfo");
    assert_stack_unchanged(before);
    assert_non_null(f);
    assert_string_equal(cus_function_name(f), "add");
    assert_ptr_equal(cus_function_module(f), m);
    assert_non_null(cus_function_handle(f));
    assert_int_equal(cus_debug_live_objects(), 2); /* a function is part of its module */
    /* the same name: the same object, no driver call */
    calls = cus_fake_call_count();
    cus_function *again = NULL;
    assert_ok(cus_module_get_function(m, "add", &again));
    assert_ptr_equal(again, f);
    assert_no_calls_since(calls);
    /* another name: another object */
    cus_function *g = get_fn(m, "noargs");
    assert_ptr_not_equal(g, f);
    assert_ptr_not_equal(cus_function_handle(g), cus_function_handle(f));
    assert_string_equal(cus_function_name(g), "noargs");
    /* a name built at run time, then freed: the cache holds its own copy */
    char *name = strdup("bounded");
    cus_function *b = get_fn(m, name);
    free(name);
    assert_string_equal(cus_function_name(b), "bounded");
    cus_function *b2 = get_fn(m, "bounded");
    assert_ptr_equal(b2, b);
    b = cus_function_unref(b);
    b2 = cus_function_unref(b2);
    f = cus_function_unref(f);
    again = cus_function_unref(again);
    g = cus_function_unref(g);
    assert_int_equal(cus_fake_calls_of("cuModuleUnload"), 0);
    m = cus_module_unref(m);
    assert_int_equal(cus_fake_calls_of("cuModuleUnload"), 1);
    c = cus_context_unref(c);
}

/* The cache is a hash table (function.c): in a module of many kernels, every
 * name is looked up in the driver once, a second lookup returns the same
 * object with no driver call and no host allocation, and names that differ
 * only in their last character are distinct entries. Growing the table
 * moves no function: pointers taken early stay the ones handed out later. */
#define MANY_KERNELS 1000

static void test_get_function_in_a_module_of_many_kernels(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    char *ptx = make_many_kernels_ptx(MANY_KERNELS);
    cus_module *m = load(c, ptx);
    free(ptx);
    static cus_function *first[MANY_KERNELS];
    char name[16];
    unsigned long lookups = cus_fake_calls_of("cuModuleGetFunction");
    for (unsigned i = 0; i < MANY_KERNELS; i++) {
        snprintf(name, sizeof name, "k%u", i);
        first[i] = get_fn(m, name);
        assert_string_equal(cus_function_name(first[i]), name);
    }
    assert_int_equal(cus_fake_calls_of("cuModuleGetFunction"), lookups + MANY_KERNELS);
    /* the second round, in reverse order: the first round's objects, with no
     * driver call and no allocation */
    unsigned long calls = cus_fake_call_count();
    cus_debug_fail_host_alloc(ULONG_MAX, false); /* counts only */
    for (unsigned i = MANY_KERNELS; i-- > 0;) {
        snprintf(name, sizeof name, "k%u", i);
        cus_function *again = NULL;
        assert_ok(cus_module_get_function(m, name, &again));
        assert_ptr_equal(again, first[i]);
        again = cus_function_unref(again);
    }
    unsigned long allocs = cus_debug_host_allocs();
    cus_debug_fail_host_alloc(0, false);
    assert_no_calls_since(calls);
    assert_int_equal(allocs, 0);
    /* k10 .. k19 share "k1" and differ in their last character */
    for (unsigned i = 10; i < 20; i++) {
        assert_ptr_not_equal(first[i], first[1]);
        if (i > 10)
            assert_ptr_not_equal(first[i], first[i - 1]);
        assert_ptr_not_equal(cus_function_handle(first[i]), cus_function_handle(first[1]));
    }
    /* a name that differs only in the last character from cached ones, and is
     * no kernel: asked of the driver, and not cached */
    cus_function *f = SENTINEL_PTR(f);
    assert_status(cus_module_get_function(m, "k1000", &f), CUDA_ERROR_NOT_FOUND);
    assert_status(cus_module_get_function(m, "k99x", &f), CUDA_ERROR_NOT_FOUND);
    assert_ptr_equal(f, SENTINEL_PTR(f));
    assert_int_equal(cus_fake_calls_of("cuModuleGetFunction"), lookups + MANY_KERNELS + 2);
    for (unsigned i = 0; i < MANY_KERNELS; i++)
        first[i] = cus_function_unref(first[i]);
    m = cus_module_unref(m);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 0);
    c = cus_context_unref(c);
}

static void test_get_function_unknown_name(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    cus_module *m = load(c, ptx_src);
    leak_snap before = leak_snap_now();
    cus_function *f = SENTINEL_PTR(f);
    unsigned long lookups = cus_fake_calls_of("cuModuleGetFunction");
    assert_status(cus_module_get_function(m, "no_such_kernel", &f), CUDA_ERROR_NOT_FOUND);
    assert_contains(cus_last_error_message(), "no kernel named \"no_such_kernel\" in the module");
    assert_contains(cus_last_error_message(), "cuModuleGetFunction");
    assert_string_equal(cus_last_error()->driver_call, "cuModuleGetFunction");
    assert_string_equal(cus_last_error()->function, "cus_module_get_function");
    /* a prefix, and a global's name, are no kernel either */
    assert_status(cus_module_get_function(m, "ad", &f), CUDA_ERROR_NOT_FOUND);
    assert_status(cus_module_get_function(m, "counter", &f), CUDA_ERROR_NOT_FOUND);
    /* not cached: asked again */
    assert_status(cus_module_get_function(m, "no_such_kernel", &f), CUDA_ERROR_NOT_FOUND);
    assert_int_equal(cus_fake_calls_of("cuModuleGetFunction"), lookups + 4);
    assert_ptr_equal(f, SENTINEL_PTR(f));
    assert_nothing_changed(before);
    assert_int_equal(cus_context_poisoned(c), CUS_SUCCESS);
    cus_function *g = get_fn(m, "add");
    g = cus_function_unref(g);
    m = cus_module_unref(m);
    c = cus_context_unref(c);
}

static void test_get_function_null_arguments(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    cus_module *m = load(c, ptx_src);
    unsigned long calls = cus_fake_call_count();
    cus_function *f = SENTINEL_PTR(f);
    assert_status(cus_module_get_function(NULL, "add", &f), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_module_get_function(m, NULL, &f), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_module_get_function(m, "add", NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_ptr_equal(f, SENTINEL_PTR(f));
    assert_no_calls_since(calls);
    m = cus_module_unref(m);
    c = cus_context_unref(c);
}

static void test_get_function_faults(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_module *m = load(c, ptx_src);
    cus_function *f = SENTINEL_PTR(f);
    assert_fault_named("cuModuleGetFunction", cus_module_get_function(m, "add", &f));
    assert_fault_named("cuFuncGetParamInfo", cus_module_get_function(m, "add", &f));
    assert_contains(cus_last_error_message(), "cus_module_get_function");
    /* the second read of the layout (the last: add has two parameters) */
    for (unsigned long n = 2; n <= 2; n++) {
        leak_snap before = leak_snap_now();
        assert_ok(cus_fake_fail_entry("cuFuncGetParamInfo", n, FAULT, false));
        assert_status(cus_module_get_function(m, "add", &f), FAULT);
        cus_fake_clear_faults();
        assert_string_equal(cus_last_error()->driver_call, "cuFuncGetParamInfo");
        assert_nothing_changed(before);
    }
    assert_ptr_equal(f, SENTINEL_PTR(f));
    /* nothing was cached: the next lookup asks the driver and succeeds */
    unsigned long lookups = cus_fake_calls_of("cuModuleGetFunction");
    f = get_fn(m, "add");
    assert_int_equal(cus_fake_calls_of("cuModuleGetFunction"), lookups + 1);
    assert_int_equal(cus_function_param_count(f), 2);
    /* a cached one needs no driver, so no fault reaches it */
    cus_fake_fail_call(1, FAULT, true);
    cus_function *again = NULL;
    assert_ok(cus_module_get_function(m, "add", &again));
    cus_fake_clear_faults();
    assert_ptr_equal(again, f);
    again = cus_function_unref(again);
    f = cus_function_unref(f);
    /* a sticky failure poisons the context: later lookups fail fast */
    assert_ok(cus_fake_fail_entry("cuModuleGetFunction", 1, CUDA_ERROR_LAUNCH_FAILED, false));
    assert_status(cus_module_get_function(m, "noargs", &f), CUDA_ERROR_LAUNCH_FAILED);
    cus_fake_clear_faults();
    assert_contains(cus_last_error_message(), "poisoned");
    unsigned long calls = cus_fake_call_count();
    assert_status(cus_module_get_function(m, "add", &f), CUDA_ERROR_LAUNCH_FAILED);
    assert_no_calls_since(calls);
    m = cus_module_unref(m);
    assert_int_equal(cus_fake_calls_of("cuModuleUnload"), 0); /* dead context: none */
    c = cus_context_unref(c);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
}

static void test_function_keeps_its_module_alive(void **state)
{
    (void)state;
    cus_context *c = new_ctx(), *other = new_ctx();
    cus_module *m = load(c, ptx_src);
    cus_function *f = get_fn(m, "add");
    cus_function *g = get_fn(m, "noargs");
    m = cus_module_unref(m);
    c = cus_context_unref(c);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 1);
    assert_int_equal(cus_fake_calls_of("cuModuleUnload"), 0);
    /* still usable: the module and the context are there */
    assert_non_null(cus_function_module(f));
    assert_ptr_equal(cus_function_module(f), cus_function_module(g));
    assert_int_equal(fn_attr(f, CU_FUNC_ATTRIBUTE_NUM_REGS), 32);
    cus_function *again = NULL;
    assert_ok(cus_module_get_function(cus_function_module(f), "add", &again));
    assert_ptr_equal(again, f);
    again = cus_function_unref(again);
    g = cus_function_unref(g);
    assert_int_equal(cus_fake_calls_of("cuModuleUnload"), 0);
    /* the last function goes: unloaded with its context current, the
     * caller's stack as it was, then the context destroyed */
    assert_ok(cus_context_push(other));
    stack_snap before = snap();
    unsigned long calls = cus_fake_call_count();
    assert_null(cus_function_unref(f));
    assert_calls_since(calls, "cuCtxPushCurrent", UNLOAD_RELAXED, "cuCtxPopCurrent",
                       "cuCtxDestroy");
    assert_stack_unchanged(before);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_CONTEXT), 1);
    assert_ok(cus_context_pop(NULL));
    other = cus_context_unref(other);
}

static void test_function_refs_and_null(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    cus_module *m = load(c, ptx_src);
    cus_function *f = get_fn(m, "add");
    assert_ptr_equal(cus_function_ref(f), f);
    assert_ptr_equal(cus_function_ref(f), f);
    m = cus_module_unref(m);
    assert_null(cus_function_unref(f));
    assert_null(cus_function_unref(f));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 1);
    assert_null(cus_function_unref(f));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 0);
    /* NULL */
    assert_null(cus_function_ref(NULL));
    assert_null(cus_function_unref(NULL));
    assert_null(cus_function_handle(NULL));
    assert_string_equal(cus_function_name(NULL), "");
    assert_null(cus_function_module(NULL));
    assert_false(cus_function_layout_known(NULL));
    assert_int_equal(cus_function_param_count(NULL), 0);
    size_t off = 7, size = 7;
    assert_status(cus_function_param_info(NULL, 0, &off, &size), CUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(off, 7);
    c = cus_context_unref(c);
}

/* --- parameter layouts ---------------------------------------------------------------------- */

static void test_param_layout(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    cus_module *m = load(c, ptx_src);
    cus_function *f = get_fn(m, "add");
    assert_true(cus_function_layout_known(f));
    assert_int_equal(cus_function_param_count(f), 2);
    unsigned long calls = cus_fake_call_count();
    size_t off = 99, size = 99;
    assert_ok(cus_function_param_info(f, 0, &off, &size));
    assert_int_equal(off, 0);
    assert_int_equal(size, 8);
    assert_ok(cus_function_param_info(f, 1, &off, &size));
    assert_int_equal(off, 8);
    assert_int_equal(size, 4);
    assert_ok(cus_function_param_info(f, 1, NULL, NULL));
    off = size = 99;
    assert_status(cus_function_param_info(f, 2, &off, &size), CUS_ERROR_OUT_OF_RANGE);
    assert_contains(cus_last_error_message(), "add has 2 parameters, asked for #2");
    assert_status(cus_function_param_info(f, UINT32_MAX, &off, &size), CUS_ERROR_OUT_OF_RANGE);
    assert_int_equal(off, 99);
    assert_int_equal(size, 99);
    assert_no_calls_since(calls); /* cached at the lookup */
    cus_function *g = get_fn(m, "noargs");
    assert_true(cus_function_layout_known(g));
    assert_int_equal(cus_function_param_count(g), 0);
    assert_status(cus_function_param_info(g, 0, &off, &size), CUS_ERROR_OUT_OF_RANGE);
    cus_function *b = get_fn(m, "bounded");
    assert_int_equal(cus_function_param_count(b), 1);
    assert_ok(cus_function_param_info(b, 0, &off, &size));
    assert_int_equal(off, 0);
    assert_int_equal(size, 8);
    f = cus_function_unref(f);
    g = cus_function_unref(g);
    b = cus_function_unref(b);
    m = cus_module_unref(m);
    c = cus_context_unref(c);
}

/* Where the module holds no counts from its image (here: the host
 * allocation for them failed; elsewhere an image this build cannot parse),
 * the layout comes from the driver alone, read until it answers
 * CUDA_ERROR_INVALID_VALUE one past the last parameter: the same layout. */
static void test_param_layout_without_the_image_counts(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    bool fell_back = false;
    for (unsigned long n = 1; n <= 8 && !fell_back; n++) {
        cus_debug_fail_host_alloc(n, false);
        cus_module *m = NULL;
        cus_status st = cus_module_load_data(c, ptx_src, 0, NULL, &m);
        cus_debug_fail_host_alloc(0, false);
        if (st != CUS_SUCCESS) {
            assert_int_equal(st, CUS_ERROR_OUT_OF_HOST_MEMORY); /* the module's own */
            continue;
        }
        unsigned long asked = cus_fake_calls_of("cuFuncGetParamInfo");
        cus_function *f = get_fn(m, "add");
        asked = cus_fake_calls_of("cuFuncGetParamInfo") - asked;
        assert_true(asked == 2 || asked == 3);
        fell_back = asked == 3;
        assert_true(cus_function_layout_known(f));
        assert_int_equal(cus_function_param_count(f), 2);
        size_t off = 0, size = 0;
        assert_ok(cus_function_param_info(f, 1, &off, &size));
        assert_int_equal(off, 8);
        assert_int_equal(size, 4);
        f = cus_function_unref(f);
        m = cus_module_unref(m);
    }
    assert_true(fell_back);
    c = cus_context_unref(c);
}

/* Without cuFuncGetParamInfo: the layout is unknown, the lookup still works. */
static void check_layout_unknown(void)
{
    cus_context *c = new_primary();
    cus_module *m = load(c, ptx_src);
    unsigned long calls = cus_fake_call_count();
    cus_function *f = get_fn(m, "add");
    assert_calls_since(calls, "cuModuleGetFunction");
    assert_false(cus_function_layout_known(f));
    assert_int_equal(cus_function_param_count(f), 0);
    size_t off = 5, size = 5;
    assert_status(cus_function_param_info(f, 0, &off, &size), CUS_ERROR_NOT_SUPPORTED);
    assert_contains(cus_last_error_message(), "the layout of add is unknown");
    assert_contains(cus_last_error_message(), "cuFuncGetParamInfo");
    assert_int_equal(off, 5);
    assert_int_equal(cus_fake_calls_of("cuFuncGetParamInfo"), 0);
    f = cus_function_unref(f);
    m = cus_module_unref(m);
    c = cus_context_unref(c);
}

static void test_param_layout_unknown_without_param_info(void **state)
{
    (void)state;
    check_layout_unknown();
}

static void test_param_layout_unknown_on_a_12000_driver(void **state)
{
    (void)state;
    check_layout_unknown();
}

/* --- enumeration -------------------------------------------------------------------------- */

static void test_enumeration(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_module *m = load(c, ptx_src);
    stack_snap before = snap();
    unsigned long calls = cus_fake_call_count();
    unsigned int count = 0;
    assert_ok(cus_module_function_count(m, &count));
    assert_calls_since(calls, "cuModuleGetFunctionCount");
    assert_int_equal(count, PTX_FUNCTIONS);
    /* names, in the module's order */
    const char *names[8] = {NULL};
    count = 0;
    calls = cus_fake_call_count();
    assert_ok(cus_module_function_names(m, names, 8, &count));
    assert_calls_since(calls, "cuModuleGetFunctionCount", "cuModuleEnumerateFunctions",
                       "cuFuncGetName", "cuFuncGetName", "cuFuncGetName");
    assert_stack_unchanged(before);
    assert_int_equal(count, PTX_FUNCTIONS);
    assert_string_equal(names[0], "add");
    assert_string_equal(names[1], "bounded");
    assert_string_equal(names[2], "noargs");
    assert_null(names[3]);
    /* filled once: later calls make no driver call */
    const char *two[3] = {NULL, NULL, SENTINEL_PTR(two)};
    count = 0;
    calls = cus_fake_call_count();
    assert_ok(cus_module_function_names(m, two, 2, &count));
    assert_no_calls_since(calls);
    assert_int_equal(count, PTX_FUNCTIONS); /* all of them, even past the capacity */
    assert_string_equal(two[0], "add");
    assert_string_equal(two[1], "bounded");
    assert_ptr_equal(two[2], SENTINEL_PTR(two));
    count = 0;
    assert_ok(cus_module_function_names(m, NULL, 0, &count)); /* the count only */
    assert_int_equal(count, PTX_FUNCTIONS);
    /* every name finds its function */
    for (unsigned int i = 0; i < PTX_FUNCTIONS; i++) {
        cus_function *f = get_fn(m, names[i]);
        assert_string_equal(cus_function_name(f), names[i]);
        f = cus_function_unref(f);
    }
    /* bad arguments */
    calls = cus_fake_call_count();
    count = 77;
    assert_status(cus_module_function_count(NULL, &count), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_module_function_count(m, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_module_function_names(NULL, names, 8, &count), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_module_function_names(m, names, 8, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_module_function_names(m, NULL, 1, &count), CUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(count, 77);
    assert_no_calls_since(calls);
    /* the names stay valid as long as the module: held by a function only */
    cus_function *f = get_fn(m, "noargs");
    m = cus_module_unref(m);
    assert_string_equal(names[2], "noargs");
    f = cus_function_unref(f);
    c = cus_context_unref(c);
}

static void test_enumeration_of_an_empty_module(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    cus_module *m = load(c, ".version 8.0\n.target sm_80\n.address_size 64\n"
                            ".global .align 4 .u32 only_a_global = 1;\n");
    unsigned int count = 99;
    assert_ok(cus_module_function_count(m, &count));
    assert_int_equal(count, 0);
    const char *names[2] = {NULL, NULL};
    count = 99;
    unsigned long calls = cus_fake_call_count();
    assert_ok(cus_module_function_names(m, names, 2, &count));
    assert_calls_since(calls, "cuModuleGetFunctionCount");
    assert_int_equal(count, 0);
    assert_null(names[0]);
    m = cus_module_unref(m);
    c = cus_context_unref(c);
}

static void test_enumeration_faults(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    cus_module *m = load(c, ptx_src);
    unsigned int count = 77;
    const char *names[4] = {NULL};
    assert_fault_named("cuModuleGetFunctionCount", cus_module_function_count(m, &count));
    assert_fault_named("cuModuleGetFunctionCount", cus_module_function_names(m, names, 4, &count));
    assert_fault_named("cuModuleEnumerateFunctions",
                       cus_module_function_names(m, names, 4, &count));
    assert_fault_named("cuFuncGetName", cus_module_function_names(m, names, 4, &count));
    leak_snap before = leak_snap_now();
    assert_ok(cus_fake_fail_entry("cuFuncGetName", 3, FAULT, false)); /* the last one */
    assert_status(cus_module_function_names(m, names, 4, &count), FAULT);
    cus_fake_clear_faults();
    assert_string_equal(cus_last_error()->driver_call, "cuFuncGetName");
    assert_nothing_changed(before);
    assert_int_equal(count, 77);
    assert_null(names[0]);
    /* nothing kept from the failures: the next call fills the names */
    unsigned long calls = cus_fake_call_count();
    assert_ok(cus_module_function_names(m, names, 4, &count));
    assert_calls_since(calls, "cuModuleGetFunctionCount", "cuModuleEnumerateFunctions",
                       "cuFuncGetName", "cuFuncGetName", "cuFuncGetName");
    assert_int_equal(count, PTX_FUNCTIONS);
    assert_string_equal(names[1], "bounded");
    m = cus_module_unref(m);
    c = cus_context_unref(c);
}

/* cuModuleGetFunctionCount is there; a part of the enumeration is not. */
static void check_names_not_supported(bool count_supported)
{
    cus_context *c = new_primary();
    cus_module *m = load(c, ptx_src);
    unsigned long calls = cus_fake_call_count();
    unsigned int count = 77;
    const char *names[4] = {NULL};
    assert_status(cus_module_function_names(m, names, 4, &count), CUS_ERROR_NOT_SUPPORTED);
    assert_contains(cus_last_error_message(), "cuModuleEnumerateFunctions and cuFuncGetName");
    assert_contains(cus_last_error_message(), "12.4");
    assert_int_equal(count, 77);
    assert_null(names[0]);
    assert_no_calls_since(calls);
    if (count_supported) {
        assert_ok(cus_module_function_count(m, &count));
        assert_int_equal(count, PTX_FUNCTIONS);
    } else {
        assert_status(cus_module_function_count(m, &count), CUS_ERROR_NOT_SUPPORTED);
        assert_string_equal(cus_last_error()->driver_call, "cuModuleGetFunctionCount");
        assert_contains(cus_last_error_message(), "needs 12.4");
        assert_int_equal(count, 77);
        assert_no_calls_since(calls);
    }
    /* the rest works */
    cus_function *f = get_fn(m, "add");
    f = cus_function_unref(f);
    m = cus_module_unref(m);
    c = cus_context_unref(c);
}

static void test_enumeration_without_func_get_name(void **state)
{
    (void)state;
    check_names_not_supported(true);
}

static void test_enumeration_without_enumerate(void **state)
{
    (void)state;
    check_names_not_supported(true);
}

static void test_enumeration_on_a_12000_driver(void **state)
{
    (void)state;
    check_names_not_supported(false);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_get_function),
        ENV_TEST(test_get_function_in_a_module_of_many_kernels),
        ENV_TEST(test_get_function_unknown_name),
        ENV_TEST(test_get_function_null_arguments),
        ENV_TEST(test_get_function_faults),
        ENV_TEST(test_function_keeps_its_module_alive),
        ENV_TEST(test_function_refs_and_null),
        ENV_TEST(test_param_layout),
        ENV_TEST(test_param_layout_without_the_image_counts),
        TEST_WITH(test_param_layout_unknown_without_param_info, setup_no_param_info),
        TEST_12000(test_param_layout_unknown_on_a_12000_driver),
        ENV_TEST(test_enumeration),
        ENV_TEST(test_enumeration_of_an_empty_module),
        ENV_TEST(test_enumeration_faults),
        TEST_WITH(test_enumeration_without_func_get_name, setup_no_func_get_name),
        TEST_WITH(test_enumeration_without_enumerate, setup_no_enumerate),
        TEST_12000(test_enumeration_on_a_12000_driver),
    };
    return cmocka_run_group_tests(tests, NULL, group_teardown);
}
