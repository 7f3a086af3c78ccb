/* The module tests, part globals: globals, host functions and threads. Their
 * fixtures, and what the module tests are about: module_fixtures.h. */
#include "module_fixtures.h"

/* --- globals ------------------------------------------------------------------------------ */

static void test_globals(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_module *m = load(c, ptx_src);
    stack_snap before = snap();
    CUdeviceptr p = 0;
    size_t bytes = 0;
    unsigned long calls = cus_fake_call_count();
    assert_ok(cus_module_get_global(m, "counter", &p, &bytes));
    assert_calls_since(calls, "cuModuleGetGlobal");
    assert_true(p != 0);
    assert_int_equal(bytes, 4);
    CUdeviceptr q = 0;
    assert_ok(cus_module_get_global(m, "table", &q, NULL));
    assert_true(q != 0 && q != p);
    assert_ok(cus_module_get_global(m, "table", NULL, &bytes));
    assert_int_equal(bytes, 16);
    assert_ok(cus_module_get_global(m, "table", NULL, NULL));
    /* initial values */
    unsigned int counter = 0;
    calls = cus_fake_call_count();
    assert_ok(cus_module_copy_from_global(&counter, m, "counter", 0, sizeof counter));
    /* the global was looked up above: no cuModuleGetGlobal again */
    assert_calls_since(calls, "cuCtxPushCurrent", "cuMemcpyDtoH", "cuCtxPopCurrent");
    assert_stack_unchanged(before);
    assert_int_equal(counter, 7);
    unsigned int table[4] = {0};
    assert_ok(cus_module_copy_from_global(table, m, "table", 0, sizeof table));
    for (unsigned int i = 0; i < 4; i++)
        assert_int_equal(table[i], i + 1);
    /* writes, whole and at an offset */
    counter = 4242;
    calls = cus_fake_call_count();
    assert_ok(cus_module_copy_to_global(m, "counter", 0, &counter, sizeof counter));
    assert_calls_since(calls, "cuCtxPushCurrent", "cuMemcpyHtoD", "cuCtxPopCurrent");
    assert_stack_unchanged(before);
    counter = 0;
    assert_ok(cus_module_copy_from_global(&counter, m, "counter", 0, sizeof counter));
    assert_int_equal(counter, 4242);
    unsigned int nine = 9;
    assert_ok(cus_module_copy_to_global(m, "table", 12, &nine, 4)); /* the very end */
    unsigned int two[2] = {0};
    assert_ok(cus_module_copy_from_global(two, m, "table", 8, 8));
    assert_int_equal(two[0], 3);
    assert_int_equal(two[1], 9);
    /* zero bytes: checked, nothing copied */
    calls = cus_fake_call_count();
    assert_ok(cus_module_copy_to_global(m, "table", 16, NULL, 0));
    assert_ok(cus_module_copy_from_global(NULL, m, "table", 0, 0));
    assert_no_calls_since(calls); /* "table" was looked up before */
    assert_ok(cus_context_push(c));
    assert_ok(cus_module_copy_from_global(&counter, m, "counter", 0, 4)); /* current: no push */
    assert_ok(cus_context_pop(NULL));
    m = cus_module_unref(m);
    c = cus_context_unref(c);
}

static void test_globals_unknown_and_null(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    cus_module *m = load(c, ptx_src);
    leak_snap before = leak_snap_now();
    CUdeviceptr p = 5;
    size_t bytes = 5;
    unsigned int v = 0;
    assert_status(cus_module_get_global(m, "no_such_global", &p, &bytes), CUDA_ERROR_NOT_FOUND);
    assert_contains(cus_last_error_message(),
                    "no __device__ or __constant__ variable named \"no_such_global\"");
    assert_string_equal(cus_last_error()->driver_call, "cuModuleGetGlobal");
    assert_status(cus_module_get_global(m, "add", &p, &bytes), CUDA_ERROR_NOT_FOUND); /* a kernel */
    assert_status(cus_module_copy_to_global(m, "nope", 0, &v, 4), CUDA_ERROR_NOT_FOUND);
    assert_string_equal(cus_last_error()->function, "cus_module_copy_to_global");
    assert_contains(cus_last_error_message(), "\"nope\"");
    assert_status(cus_module_copy_from_global(&v, m, "nope", 0, 4), CUDA_ERROR_NOT_FOUND);
    assert_string_equal(cus_last_error()->function, "cus_module_copy_from_global");
    assert_int_equal(p, 5);
    assert_int_equal(bytes, 5);
    assert_int_equal(cus_context_poisoned(c), CUS_SUCCESS);
    unsigned long calls = cus_fake_call_count();
    assert_status(cus_module_get_global(NULL, "counter", &p, &bytes), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_module_get_global(m, NULL, &p, &bytes), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_module_copy_to_global(NULL, "counter", 0, &v, 4), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_module_copy_to_global(m, NULL, 0, &v, 4), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_module_copy_to_global(m, "counter", 0, NULL, 4), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_module_copy_from_global(&v, NULL, "counter", 0, 4),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_module_copy_from_global(&v, m, NULL, 0, 4), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_module_copy_from_global(NULL, m, "counter", 0, 4),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_no_calls_since(calls);
    assert_int_equal(p, 5);
    assert_nothing_changed(before);
    m = cus_module_unref(m);
    c = cus_context_unref(c);
}

static void test_globals_out_of_range(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_module *m = load(c, ptx_src);
    leak_snap before = leak_snap_now();
    unsigned char buf[32];
    memset(buf, 0xab, sizeof buf);
    unsigned long copies = cus_fake_calls_of("cuMemcpyHtoD") + cus_fake_calls_of("cuMemcpyDtoH");
    unsigned long pushes = cus_fake_calls_of("cuCtxPushCurrent");
    const cus_status R = CUS_ERROR_OUT_OF_RANGE;
    /* counter: 4 bytes; table: 16 */
    assert_status(cus_module_copy_to_global(m, "counter", 0, buf, 5), R);
    assert_contains(cus_last_error_message(), "5 bytes at offset 0 of global counter, which has 4");
    assert_string_equal(cus_last_error()->function, "cus_module_copy_to_global");
    assert_status(cus_module_copy_to_global(m, "counter", 1, buf, 4), R);
    assert_status(cus_module_copy_to_global(m, "counter", 5, buf, 0), R);
    assert_status(cus_module_copy_to_global(m, "table", 16, buf, 1), R);
    assert_status(cus_module_copy_to_global(m, "table", SIZE_MAX, buf, 1), R);
    assert_status(cus_module_copy_to_global(m, "table", 1, buf, SIZE_MAX), R);
    assert_status(cus_module_copy_from_global(buf, m, "counter", 0, 5), R);
    assert_string_equal(cus_last_error()->function, "cus_module_copy_from_global");
    assert_status(cus_module_copy_from_global(buf, m, "counter", 4, 1), R);
    assert_status(cus_module_copy_from_global(buf, m, "table", 8, 9), R);
    assert_status(cus_module_copy_from_global(buf, m, "table", SIZE_MAX, 2), R);
    assert_status(cus_module_copy_from_global(buf, m, "table", 2, SIZE_MAX - 1), R);
    /* no copy, no push */
    assert_int_equal(cus_fake_calls_of("cuMemcpyHtoD") + cus_fake_calls_of("cuMemcpyDtoH"), copies);
    assert_int_equal(cus_fake_calls_of("cuCtxPushCurrent"), pushes);
    for (size_t i = 0; i < sizeof buf; i++)
        assert_int_equal(buf[i], 0xab);
    assert_nothing_changed(before);
    /* the values are untouched */
    unsigned int counter = 0;
    assert_ok(cus_module_copy_from_global(&counter, m, "counter", 0, 4));
    assert_int_equal(counter, 7);
    m = cus_module_unref(m);
    c = cus_context_unref(c);
}

/* Regression: lib/module.c (global_range) once asked cuModuleGetGlobal before
 * the bounds check; module.h says an out-of-range copy makes no driver call.
 * Suggested fix: cache the (name, address, size) of each global looked up,
 * or reword module.h. This test fails until then. */
static void test_global_out_of_range_after_lookup_makes_no_driver_call(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    cus_module *m = load(c, ptx_src);
    unsigned int v[2] = {0};
    assert_ok(cus_module_copy_from_global(v, m, "counter", 0, 4)); /* known to the module */
    unsigned long calls = cus_fake_call_count();
    assert_status(cus_module_copy_to_global(m, "counter", 0, v, 8), CUS_ERROR_OUT_OF_RANGE);
    assert_status(cus_module_copy_from_global(v, m, "counter", 0, 8), CUS_ERROR_OUT_OF_RANGE);
    unsigned long made = cus_fake_call_count() - calls;
    m = cus_module_unref(m);
    c = cus_context_unref(c);
    if (made != 0)
        fail_msg("%lu driver calls (cuModuleGetGlobal) for two "
                 "out-of-range copies; module.h promises none",
                 made);
}

/* Regression: lib/module.c check_image and jit_build once
 * record their failures with CUS_FAIL, whose __func__ is the static helper:
 * cus_last_error()->function is "check_image" or "jit_build", and the
 * message starts so, instead of naming cus_module_load_data (status.h: "the
 * cuscope function that failed"). Suggested fix: pass the public function's
 * name down, as global_range() does, and record with cus_fail_(). This test
 * fails until then. */
static void test_image_and_jit_errors_name_the_public_call(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    cus_module *m = SENTINEL_PTR(m);
    char got[3][64];
    assert_status(cus_module_load_data(c, "junk", 5, NULL, &m), CUDA_ERROR_INVALID_IMAGE);
    snprintf(got[0], sizeof got[0], "%s", cus_last_error()->function);
    assert_status(cus_module_load_data(c, ptx_src, 10, NULL, &m), CUDA_ERROR_INVALID_IMAGE);
    snprintf(got[1], sizeof got[1], "%s", cus_last_error()->function);
    cus_jit_options jit = {.optimization_level = 5, .set_level = true};
    assert_status(cus_module_load_data(c, ptx_src, 0, &jit, &m), CUS_ERROR_INVALID_ARGUMENT);
    snprintf(got[2], sizeof got[2], "%s", cus_last_error()->function);
    assert_ptr_equal(m, SENTINEL_PTR(m));
    c = cus_context_unref(c);
    for (int i = 0; i < 3; i++)
        if (strcmp(got[i], "cus_module_load_data") != 0)
            fail_msg("the error of "
                     "cus_module_load_data names \"%s\"", got[i]);
}

static void test_globals_faults(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_module *m = load(c, ptx_src);
    CUdeviceptr p = 3;
    size_t bytes = 3;
    unsigned int v = 1;
    assert_fault_named("cuModuleGetGlobal", cus_module_get_global(m, "counter", &p, &bytes));
    assert_int_equal(p, 3);
    assert_int_equal(bytes, 3);
    assert_fault_named("cuModuleGetGlobal", cus_module_copy_to_global(m, "counter", 0, &v, 4));
    assert_fault_named("cuCtxPushCurrent", cus_module_copy_to_global(m, "counter", 0, &v, 4));
    assert_fault_named("cuMemcpyHtoD", cus_module_copy_to_global(m, "counter", 0, &v, 4));
    assert_pop_fault_reported("cus_module_copy_to_global",
                              cus_module_copy_to_global(m, "counter", 0, &v, 4));
    v = 0;
    /* "counter" is known to the module by now; "table" is not */
    assert_fault_named("cuModuleGetGlobal", cus_module_copy_from_global(&v, m, "table", 0, 4));
    assert_fault_named("cuCtxPushCurrent", cus_module_copy_from_global(&v, m, "counter", 0, 4));
    assert_fault_named("cuMemcpyDtoH", cus_module_copy_from_global(&v, m, "counter", 0, 4));
    assert_int_equal(v, 0);
    assert_pop_fault_reported("cus_module_copy_from_global",
                              cus_module_copy_from_global(&v, m, "counter", 0, 4));
    assert_int_equal(v, 1); /* the pop failed after the copy: it was made */
    assert_int_equal(cus_context_poisoned(c), CUS_SUCCESS);
    /* a sticky failure of the copy poisons the context */
    assert_ok(cus_fake_fail_entry("cuMemcpyHtoD", 1, CUDA_ERROR_ILLEGAL_ADDRESS, false));
    stack_snap before = snap();
    assert_status(cus_module_copy_to_global(m, "counter", 0, &v, 4), CUDA_ERROR_ILLEGAL_ADDRESS);
    cus_fake_clear_faults();
    assert_stack_unchanged(before);
    assert_int_equal(cus_context_poisoned(c), CUDA_ERROR_ILLEGAL_ADDRESS);
    unsigned long calls = cus_fake_call_count();
    assert_status(cus_module_get_global(m, "counter", &p, &bytes), CUDA_ERROR_ILLEGAL_ADDRESS);
    assert_status(cus_module_copy_to_global(m, "counter", 0, &v, 4), CUDA_ERROR_ILLEGAL_ADDRESS);
    assert_status(cus_module_copy_from_global(&v, m, "counter", 0, 4), CUDA_ERROR_ILLEGAL_ADDRESS);
    assert_status(cus_module_function_count(m, &v), CUDA_ERROR_ILLEGAL_ADDRESS);
    const char *names[1];
    assert_status(cus_module_function_names(m, names, 1, &v), CUDA_ERROR_ILLEGAL_ADDRESS);
    assert_contains(cus_last_error_message(), "poisoned by an earlier CUDA_ERROR_ILLEGAL_ADDRESS");
    assert_no_calls_since(calls);
    m = cus_module_unref(m);
    c = cus_context_unref(c);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
}

/* --- host functions ----------------------------------------------------------------------- */

typedef struct in_host {
    cus_context *ctx;
    cus_module *mod;
    const char *path;
    cus_module *drop; /* the last reference, dropped inside */
    cus_status load, load_file, get_function, get_global, copy_to, copy_from, count, names;
    cus_module *out_mod;
    cus_function *out_fn;
    int ran;
} in_host;

static void host_calls(void *arg)
{
    in_host *h = arg;
    unsigned int v = 0;
    const char *names[2];
    h->out_mod = NULL;
    h->out_fn = NULL;
    h->load = cus_module_load_data(h->ctx, ptx_src, 0, NULL, &h->out_mod);
    h->load_file = cus_module_load_file(h->ctx, h->path, NULL, &h->out_mod);
    h->get_function = cus_module_get_function(h->mod, "add", &h->out_fn);
    h->get_global = cus_module_get_global(h->mod, "counter", NULL, NULL);
    h->copy_to = cus_module_copy_to_global(h->mod, "counter", 0, &v, 4);
    h->copy_from = cus_module_copy_from_global(&v, h->mod, "counter", 0, 4);
    h->count = cus_module_function_count(h->mod, &v);
    h->names = cus_module_function_names(h->mod, names, 2, &v);
    h->drop = cus_module_unref(h->drop);
    h->ran++;
}

static void test_refused_inside_a_host_function(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_stream *s = new_stream(c, 0);
    cus_module *m = load(c, ptx_src);
    const char *path = write_file("add.ptx", ptx_src, strlen(ptx_src));
    in_host h = {.ctx = c, .mod = m, .path = path, .drop = load(c, ptx_src)};
    unsigned long loads = cus_fake_calls_of("cuModuleLoadDataEx");
    unsigned long lookups = cus_fake_calls_of("cuModuleGetFunction");
    unsigned long unloads = cus_fake_calls_of("cuModuleUnload");
    assert_ok(cus_stream_launch_host_fn(s, host_calls, &h));
    assert_ok(cus_stream_synchronize(s)); /* also releases what the host function dropped */
    assert_int_equal(h.ran, 1);
    const cus_status H = CUS_ERROR_IN_HOST_FUNCTION;
    assert_int_equal(h.load, H);
    assert_int_equal(h.load_file, H);
    assert_int_equal(h.get_function, H);
    assert_int_equal(h.get_global, H);
    assert_int_equal(h.copy_to, H);
    assert_int_equal(h.copy_from, H);
    assert_int_equal(h.count, H);
    assert_int_equal(h.names, H);
    assert_null(h.out_mod);
    assert_null(h.out_fn);
    assert_null(h.drop);
    assert_int_equal(cus_fake_calls_of("cuModuleLoadDataEx"), loads);
    assert_int_equal(cus_fake_calls_of("cuModuleGetFunction"), lookups);
    /* the module dropped inside was unloaded outside, afterwards */
    (void)cus_release_deferred();
    assert_int_equal(cus_fake_calls_of("cuModuleUnload"), unloads + 1);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 1);
    assert_int_equal(cus_fake_misuse_count(), 0);
    remove_file(path);
    m = cus_module_unref(m);
    s = cus_stream_unref(s);
    c = cus_context_unref(c);
}

/* --- threads ------------------------------------------------------------------------------ */

#define THREADS 8

typedef struct lookup_arg {
    cus_module *mod;
    pthread_barrier_t *start;
    cus_function *got;
    cus_status st;
} lookup_arg;

static void *lookup(void *p)
{
    lookup_arg *a = p;
    pthread_barrier_wait(a->start);
    a->st = cus_module_get_function(a->mod, "bounded", &a->got);
    return NULL;
}

static void test_threads_share_one_function_object(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    cus_module *m = load(c, ptx_src);
    pthread_barrier_t start;
    assert_int_equal(pthread_barrier_init(&start, NULL, THREADS), 0);
    lookup_arg args[THREADS];
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) {
        args[i] = (lookup_arg){m, &start, NULL, -1};
        assert_int_equal(pthread_create(&th[i], NULL, lookup, &args[i]), 0);
    }
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_join(th[i], NULL), 0);
    pthread_barrier_destroy(&start);
    for (int i = 0; i < THREADS; i++) {
        assert_ok(args[i].st);
        assert_ptr_equal(args[i].got, args[0].got);
    }
    assert_int_equal(cus_fake_calls_of("cuModuleGetFunction"), 1);
    m = cus_module_unref(m);
    for (int i = 0; i < THREADS; i++)
        args[i].got = cus_function_unref(args[i].got);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 0);
    c = cus_context_unref(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_globals),
        ENV_TEST(test_globals_unknown_and_null),
        ENV_TEST(test_globals_out_of_range),
        ENV_TEST(test_global_out_of_range_after_lookup_makes_no_driver_call),
        ENV_TEST(test_image_and_jit_errors_name_the_public_call),
        ENV_TEST(test_globals_faults),
        ENV_TEST(test_refused_inside_a_host_function),
        ENV_TEST(test_threads_share_one_function_object),
    };
    return cmocka_run_group_tests(tests, NULL, group_teardown);
}
