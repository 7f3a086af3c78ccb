/* The fake driver itself (include/cuscope/fake.h), called through its raw
 * entry points from cus_fake_get_proc_address: the context-stack rules of
 * DESIGN.md §3 at the driver level, resolver semantics, handle tracking and
 * misuse reports, fault injection, the call log and install validation.
 *
 * Tests that misuse the fake on purpose run under teardown_after_misuse,
 * which reinstalls it so that env_teardown sees a clean fake. */
#include <stdint.h>
#include <string.h>

#include <cudaTypedefs.h>

#include "harness/env.h"
#include "harness/check.h"

typedef struct raw_driver {
    PFN_cuInit_v2000 init;
    PFN_cuDriverGetVersion_v2020 version;
    PFN_cuGetErrorName_v6000 error_name;
    PFN_cuGetErrorString_v6000 error_string;
    PFN_cuDeviceGetCount_v2000 device_count;
    PFN_cuCtxCreate_v3020 create;
    PFN_cuCtxCreate_v12050 create_v4;
    PFN_cuCtxDestroy_v4000 destroy;
    PFN_cuCtxPushCurrent_v4000 push;
    PFN_cuCtxPopCurrent_v4000 pop;
    PFN_cuCtxSetCurrent_v4000 set_current;
    PFN_cuCtxGetCurrent_v4000 get_current;
    PFN_cuCtxSynchronize_v2000 synchronize;
    PFN_cuCtxGetDevice_v2000 get_device;
    PFN_cuDevicePrimaryCtxRetain_v7000 retain;
    PFN_cuDevicePrimaryCtxRelease_v11000 release;
} raw_driver;

static raw_driver D;

static void load_raw(void)
{
    memset(&D, 0, sizeof D);
    RAW(D.init, "cuInit", 2000);
    RAW(D.version, "cuDriverGetVersion", 2020);
    RAW(D.error_name, "cuGetErrorName", 6000);
    RAW(D.error_string, "cuGetErrorString", 6000);
    RAW(D.device_count, "cuDeviceGetCount", 2000);
    RAW(D.create, "cuCtxCreate", 3020);
    RAW(D.destroy, "cuCtxDestroy", 4000);
    RAW(D.push, "cuCtxPushCurrent", 4000);
    RAW(D.pop, "cuCtxPopCurrent", 4000);
    RAW(D.set_current, "cuCtxSetCurrent", 4000);
    RAW(D.get_current, "cuCtxGetCurrent", 4000);
    RAW(D.synchronize, "cuCtxSynchronize", 2000);
    RAW(D.get_device, "cuCtxGetDevice", 2000);
    RAW(D.retain, "cuDevicePrimaryCtxRetain", 7000);
    RAW(D.release, "cuDevicePrimaryCtxRelease", 11000);
    int version = 0;
    assert_int_equal(D.version(&version), CUDA_SUCCESS);
    if (version >= 12050)
        RAW(D.create_v4, "cuCtxCreate", 12050);
}

/* Installs the fake (cfg), resolves the raw entry points and calls cuInit. */
static int raw_setup_with(const cus_fake_config *cfg)
{
    if (env_setup_with(cfg))
        return -1;
    load_raw();
    return D.init(0) == CUDA_SUCCESS ? 0 : -1;
}

static int raw_setup(void **state)
{
    (void)state;
    return raw_setup_with(NULL);
}

static int raw_setup_two_devices(void **state)
{
    (void)state;
    static const cus_fake_config cfg = {.device_count = 2};
    return raw_setup_with(&cfg);
}

static int raw_setup_driver_12000(void **state)
{
    (void)state;
    static const cus_fake_config cfg = {.driver_version = 12000};
    return raw_setup_with(&cfg);
}

static int teardown_after_misuse(void **state)
{
    assert_int_equal(cus_debug_live_objects(), 0);
    assert_ok(cus_fake_install(NULL));
    return env_teardown(state);
}

#define RAW_TEST(f) cmocka_unit_test_setup_teardown(f, raw_setup, env_teardown)
#define RAW_TEST_2DEV(f) cmocka_unit_test_setup_teardown(f, raw_setup_two_devices, env_teardown)
#define RAW_TEST_12000(f) cmocka_unit_test_setup_teardown(f, raw_setup_driver_12000, env_teardown)
#define MISUSE_TEST(f) cmocka_unit_test_setup_teardown(f, raw_setup, teardown_after_misuse)

static CUcontext raw_create(void)
{
    CUcontext h = NULL;
    assert_int_equal(D.create(&h, 0, 0), CUDA_SUCCESS);
    assert_non_null(h);
    return h;
}

/* A context created and taken off the stack again. */
static CUcontext raw_create_unpushed(void)
{
    CUcontext h = raw_create();
    CUcontext got = NULL;
    assert_int_equal(D.pop(&got), CUDA_SUCCESS);
    assert_ptr_equal(got, h);
    return h;
}

static CUcontext top(void)
{
    int d = cus_fake_thread_stack_depth();
    return d ? cus_fake_thread_stack_at(d - 1) : NULL;
}

/* --- the stack rules (DESIGN.md §3) -------------------------------------------- */

static void test_ctx_create_pushes_the_new_context(void **state)
{
    (void)state;
    assert_int_equal(cus_fake_thread_stack_depth(), 0);
    CUcontext h = raw_create();
    assert_int_equal(cus_fake_thread_stack_depth(), 1);
    assert_ptr_equal(cus_fake_thread_stack_at(0), h);
    CUcontext cur = NULL;
    assert_int_equal(D.get_current(&cur), CUDA_SUCCESS);
    assert_ptr_equal(cur, h);
    CUcontext h2 = raw_create(); /* on top of the first */
    assert_int_equal(cus_fake_thread_stack_depth(), 2);
    assert_ptr_equal(cus_fake_thread_stack_at(1), h2);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_CONTEXT), 2);
    assert_int_equal(D.destroy(h2), CUDA_SUCCESS);
    assert_int_equal(D.destroy(h), CUDA_SUCCESS);
    assert_int_equal(cus_fake_thread_stack_depth(), 0);
}

static void test_ctx_create_v4_pushes_too(void **state)
{
    (void)state;
    if (!D.create_v4)
        skip();
    CUcontext h = NULL;
    assert_int_equal(D.create_v4(&h, NULL, 0, 0), CUDA_SUCCESS);
    assert_ptr_equal(top(), h);
    assert_int_equal(D.destroy(h), CUDA_SUCCESS);
    assert_int_equal(cus_fake_thread_stack_depth(), 0);
}

static void test_ctx_create_rejects_bad_flags_and_devices_without_pushing(void **state)
{
    (void)state;
    CUcontext h = (CUcontext)(uintptr_t)1;
    assert_int_equal(D.create(&h, CU_CTX_FLAGS_MASK + 1, 0), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(D.create(&h, CU_CTX_SCHED_SPIN | CU_CTX_SCHED_BLOCKING_SYNC, 0),
                     CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(D.create(&h, 0, 1), CUDA_ERROR_INVALID_DEVICE);
    assert_int_equal(D.create(NULL, 0, 0), CUDA_ERROR_INVALID_VALUE);
    assert_ptr_equal(h, (CUcontext)(uintptr_t)1);
    assert_int_equal(cus_fake_thread_stack_depth(), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
}

static void test_push_makes_the_context_current(void **state)
{
    (void)state;
    CUcontext a = raw_create_unpushed(), b = raw_create_unpushed();
    assert_int_equal(D.push(a), CUDA_SUCCESS);
    assert_ptr_equal(top(), a);
    assert_int_equal(D.push(b), CUDA_SUCCESS);
    assert_ptr_equal(top(), b);
    assert_int_equal(D.push(a), CUDA_SUCCESS); /* the same context twice */
    assert_int_equal(cus_fake_thread_stack_depth(), 3);
    CUcontext cur = NULL;
    assert_int_equal(D.get_current(&cur), CUDA_SUCCESS);
    assert_ptr_equal(cur, a);
    assert_int_equal(D.push(NULL), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cus_fake_thread_stack_depth(), 3);
    for (int i = 0; i < 3; i++)
        assert_int_equal(D.pop(NULL), CUDA_SUCCESS);
    assert_int_equal(D.destroy(a), CUDA_SUCCESS);
    assert_int_equal(D.destroy(b), CUDA_SUCCESS);
}

static void test_pop_returns_the_popped_handle(void **state)
{
    (void)state;
    CUcontext a = raw_create_unpushed(), b = raw_create_unpushed();
    assert_int_equal(D.push(a), CUDA_SUCCESS);
    assert_int_equal(D.push(b), CUDA_SUCCESS);
    CUcontext got = NULL;
    assert_int_equal(D.pop(&got), CUDA_SUCCESS);
    assert_ptr_equal(got, b);
    assert_ptr_equal(top(), a);
    assert_int_equal(D.pop(&got), CUDA_SUCCESS);
    assert_ptr_equal(got, a);
    assert_int_equal(cus_fake_thread_stack_depth(), 0);
    assert_int_equal(D.destroy(a), CUDA_SUCCESS);
    assert_int_equal(D.destroy(b), CUDA_SUCCESS);
}

static void test_pop_on_empty_stack_is_invalid_context(void **state)
{
    (void)state;
    CUcontext got = (CUcontext)(uintptr_t)0x77;
    assert_int_equal(D.pop(&got), CUDA_ERROR_INVALID_CONTEXT);
    assert_ptr_equal(got, (CUcontext)(uintptr_t)0x77);
    assert_int_equal(cus_fake_thread_stack_depth(), 0);
    assert_int_equal(cus_fake_misuse_count(), 0); /* an error, not misuse */
}

static void test_calls_on_the_current_context_need_one(void **state)
{
    (void)state;
    assert_int_equal(D.synchronize(), CUDA_ERROR_INVALID_CONTEXT);
    CUdevice d = 5;
    assert_int_equal(D.get_device(&d), CUDA_ERROR_INVALID_CONTEXT);
    assert_int_equal(d, 5);
    CUcontext cur = (CUcontext)(uintptr_t)1;
    assert_int_equal(D.get_current(&cur), CUDA_SUCCESS);
    assert_null(cur); /* no context is not an error for GetCurrent */
}

static void test_set_current_replaces_the_top(void **state)
{
    (void)state;
    CUcontext a = raw_create_unpushed(), b = raw_create_unpushed(), c = raw_create_unpushed();
    assert_int_equal(D.push(a), CUDA_SUCCESS);
    assert_int_equal(D.push(b), CUDA_SUCCESS);
    assert_int_equal(D.set_current(c), CUDA_SUCCESS);
    assert_int_equal(cus_fake_thread_stack_depth(), 2);
    assert_ptr_equal(cus_fake_thread_stack_at(0), a);
    assert_ptr_equal(cus_fake_thread_stack_at(1), c);
    assert_int_equal(D.pop(NULL), CUDA_SUCCESS);
    assert_int_equal(D.pop(NULL), CUDA_SUCCESS);
    assert_int_equal(D.destroy(a), CUDA_SUCCESS);
    assert_int_equal(D.destroy(b), CUDA_SUCCESS);
    assert_int_equal(D.destroy(c), CUDA_SUCCESS);
}

static void test_set_current_on_an_empty_stack_pushes(void **state)
{
    (void)state;
    CUcontext a = raw_create_unpushed();
    assert_int_equal(D.set_current(a), CUDA_SUCCESS);
    assert_int_equal(cus_fake_thread_stack_depth(), 1);
    assert_ptr_equal(top(), a);
    assert_int_equal(D.destroy(a), CUDA_SUCCESS); /* on top: popped */
    assert_int_equal(cus_fake_thread_stack_depth(), 0);
}

static void test_set_current_null_pops_only_the_top_and_is_a_noop_when_empty(void **state)
{
    (void)state;
    CUcontext a = raw_create_unpushed(), b = raw_create_unpushed();
    assert_int_equal(D.push(a), CUDA_SUCCESS);
    assert_int_equal(D.push(b), CUDA_SUCCESS);
    assert_int_equal(D.set_current(NULL), CUDA_SUCCESS);
    assert_int_equal(cus_fake_thread_stack_depth(), 1);
    assert_ptr_equal(top(), a);
    assert_int_equal(D.set_current(NULL), CUDA_SUCCESS);
    assert_int_equal(cus_fake_thread_stack_depth(), 0);
    assert_int_equal(D.set_current(NULL), CUDA_SUCCESS); /* empty: no-op, no error */
    assert_int_equal(cus_fake_thread_stack_depth(), 0);
    assert_int_equal(D.destroy(a), CUDA_SUCCESS);
    assert_int_equal(D.destroy(b), CUDA_SUCCESS);
}

static void test_ctx_destroy_pops_the_callers_top_copy_only(void **state)
{
    (void)state;
    CUcontext a = raw_create();                /* [a] */
    assert_int_equal(D.push(a), CUDA_SUCCESS); /* [a a] */
    assert_int_equal(D.destroy(a), CUDA_SUCCESS);
    assert_int_equal(cus_fake_thread_stack_depth(), 1); /* one copy popped */
    assert_ptr_equal(top(), a);
    assert_int_equal(D.synchronize(), CUDA_ERROR_CONTEXT_IS_DESTROYED); /* the dead copy */
    CUcontext got = NULL;
    assert_int_equal(D.pop(&got), CUDA_SUCCESS); /* a dead entry pops like any other */
    assert_ptr_equal(got, a);
    assert_int_equal(cus_fake_thread_stack_depth(), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_CONTEXT), 0);
    assert_int_equal(cus_fake_misuse_count(), 0);
}

static void test_ctx_destroy_below_the_top_leaves_the_stack(void **state)
{
    (void)state;
    CUcontext a = raw_create(); /* [a] */
    CUcontext b = raw_create(); /* [a b] */
    assert_int_equal(D.destroy(a), CUDA_SUCCESS);
    assert_int_equal(cus_fake_thread_stack_depth(), 2);
    assert_ptr_equal(top(), b);
    assert_int_equal(D.synchronize(), CUDA_SUCCESS); /* b is alive */
    assert_int_equal(D.pop(NULL), CUDA_SUCCESS);
    assert_ptr_equal(top(), a);
    assert_int_equal(D.synchronize(), CUDA_ERROR_CONTEXT_IS_DESTROYED);
    CUcontext cur = NULL;
    assert_int_equal(D.get_current(&cur), CUDA_SUCCESS);
    assert_ptr_equal(cur, a); /* a dead top is still returned */
    assert_int_equal(D.pop(NULL), CUDA_SUCCESS);
    assert_int_equal(D.destroy(b), CUDA_SUCCESS);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
}

static void test_primary_retain_and_release_never_push_and_keep_a_stable_handle(void **state)
{
    (void)state;
    CUcontext a = raw_create(); /* something on the stack to compare with */
    CUcontext p1 = NULL, p2 = NULL;
    assert_int_equal(D.retain(&p1, 0), CUDA_SUCCESS);
    assert_int_equal(D.retain(&p2, 0), CUDA_SUCCESS);
    assert_ptr_equal(p1, p2);
    assert_ptr_not_equal(p1, a);
    assert_int_equal(cus_fake_primary_retain_count(0), 2);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_PRIMARY_CONTEXT), 1);
    assert_int_equal(cus_fake_thread_stack_depth(), 1);
    assert_ptr_equal(top(), a);
    assert_int_equal(D.release(0), CUDA_SUCCESS);
    assert_int_equal(cus_fake_primary_retain_count(0), 1);
    assert_int_equal(D.release(0), CUDA_SUCCESS);
    assert_int_equal(cus_fake_primary_retain_count(0), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_PRIMARY_CONTEXT), 0);
    assert_int_equal(cus_fake_thread_stack_depth(), 1);
    /* Retained again: the same handle, as with the real driver. */
    CUcontext p3 = NULL;
    assert_int_equal(D.retain(&p3, 0), CUDA_SUCCESS);
    assert_ptr_equal(p3, p1);
    assert_int_equal(D.release(0), CUDA_SUCCESS);
    assert_int_equal(D.destroy(a), CUDA_SUCCESS);
    assert_int_equal(cus_fake_misuse_count(), 0);
}

static void test_primary_contexts_are_per_device(void **state)
{
    (void)state;
    CUcontext p0 = NULL, p1 = NULL;
    assert_int_equal(D.retain(&p0, 0), CUDA_SUCCESS);
    assert_int_equal(D.retain(&p1, 1), CUDA_SUCCESS);
    assert_ptr_not_equal(p0, p1);
    assert_int_equal(D.push(p1), CUDA_SUCCESS);
    CUdevice d = -1;
    assert_int_equal(D.get_device(&d), CUDA_SUCCESS);
    assert_int_equal(d, 1);
    assert_int_equal(D.pop(NULL), CUDA_SUCCESS);
    assert_int_equal(D.retain(&p0, 2), CUDA_ERROR_INVALID_DEVICE);
    assert_int_equal(D.release(2), CUDA_ERROR_INVALID_DEVICE);
    assert_int_equal(D.release(0), CUDA_SUCCESS);
    assert_int_equal(D.release(1), CUDA_SUCCESS);
}

static void test_release_of_a_never_retained_primary_is_invalid_context_and_misuse(void **state)
{
    (void)state;
    assert_int_equal(D.release(0), CUDA_ERROR_INVALID_CONTEXT);
    assert_int_equal(cus_fake_misuse_count(), 1);
    assert_contains(cus_fake_last_misuse(), "not retained");
    assert_contains(cus_fake_last_misuse(), "cuDevicePrimaryCtxRelease");
    assert_int_equal(cus_fake_primary_retain_count(0), 0);
}

static void test_push_of_a_released_primary_is_misuse(void **state)
{
    (void)state;
    CUcontext p = NULL;
    assert_int_equal(D.retain(&p, 0), CUDA_SUCCESS);
    assert_int_equal(D.release(0), CUDA_SUCCESS);
    assert_int_equal(D.push(p), CUDA_ERROR_CONTEXT_IS_DESTROYED);
    assert_int_equal(cus_fake_thread_stack_depth(), 0);
    assert_int_equal(cus_fake_misuse_count(), 1);
    assert_contains(cus_fake_last_misuse(), "primary context");
}

static void test_ctx_destroy_of_a_primary_is_misuse(void **state)
{
    (void)state;
    CUcontext p = NULL;
    assert_int_equal(D.retain(&p, 0), CUDA_SUCCESS);
    assert_int_equal(D.destroy(p), CUDA_ERROR_INVALID_CONTEXT);
    assert_int_equal(cus_fake_misuse_count(), 1);
    assert_contains(cus_fake_last_misuse(), "cuDevicePrimaryCtxRelease");
    assert_int_equal(cus_fake_primary_retain_count(0), 1); /* untouched */
    assert_int_equal(D.release(0), CUDA_SUCCESS);
}

/* --- cuInit --------------------------------------------------------------------- */

static void test_entry_points_need_cuInit_except_version_and_init(void **state)
{
    (void)state;
    load_raw(); /* env_setup only: no cuInit yet */
    int n = -1;
    assert_int_equal(D.device_count(&n), CUDA_ERROR_NOT_INITIALIZED);
    assert_int_equal(n, -1);
    CUcontext h = NULL;
    assert_int_equal(D.create(&h, 0, 0), CUDA_ERROR_NOT_INITIALIZED);
    int v = 0;
    assert_int_equal(D.version(&v), CUDA_SUCCESS);
    assert_int_equal(v, CUDA_VERSION);
    assert_int_equal(D.init(1), CUDA_ERROR_INVALID_VALUE); /* flags must be 0 */
    assert_int_equal(D.device_count(&n), CUDA_ERROR_NOT_INITIALIZED);
    assert_int_equal(D.init(0), CUDA_SUCCESS);
    assert_int_equal(D.device_count(&n), CUDA_SUCCESS);
    assert_int_equal(n, 1);
}

static void test_no_devices_makes_cuInit_fail(void **state)
{
    (void)state;
    const cus_fake_config cfg = {.no_devices = true};
    assert_ok(cus_fake_install(&cfg));
    load_raw();
    assert_int_equal(D.init(0), CUDA_ERROR_NO_DEVICE);
    int n = -1;
    assert_int_equal(D.device_count(&n), CUDA_ERROR_NOT_INITIALIZED);
}

/* --- the resolver --------------------------------------------------------------- */

static void test_resolver_version_above_the_driver_is_invalid_value(void **state)
{
    (void)state;
    void *pfn = (void *)&pfn;
    CUdriverProcAddressQueryResult qs = (CUdriverProcAddressQueryResult)77;
    assert_int_equal(cus_fake_get_proc_address("cuCtxCreate", &pfn, 12050, 0, &qs),
                     CUDA_ERROR_INVALID_VALUE);
    assert_null(pfn);
    assert_int_equal(qs, 77); /* left untouched, as the real driver does */
    assert_int_equal(cus_fake_get_proc_address("cuInit", &pfn, 12010, 0, &qs),
                     CUDA_ERROR_INVALID_VALUE);
}

static void test_resolver_entry_newer_than_the_driver_is_never_handed_out(void **state)
{
    (void)state;
    /* With driver 12.0, the newest cuCtxCreate at or below 12000 is the 11.4
     * variant, never cuCtxCreate_v4 (12.5). */
    void *at_12000 = raw_fn("cuCtxCreate", 12000);
    void *at_11040 = raw_fn("cuCtxCreate", 11040);
    void *at_3020 = raw_fn("cuCtxCreate", 3020);
    assert_ptr_equal(at_12000, at_11040);
    assert_ptr_not_equal(at_12000, at_3020);
}

static void test_resolver_below_the_first_abi_is_version_not_sufficient(void **state)
{
    (void)state;
    void *pfn = (void *)&pfn;
    CUdriverProcAddressQueryResult qs = CU_GET_PROC_ADDRESS_SUCCESS;
    /* cuDeviceGetUuid exists from 11.4; cuCtxCreate's oldest variant is 3020. */
    assert_int_equal(cus_fake_get_proc_address("cuDeviceGetUuid", &pfn, 11000, 0, &qs),
                     CUDA_SUCCESS);
    assert_int_equal(qs, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    assert_null(pfn);
    qs = CU_GET_PROC_ADDRESS_SUCCESS;
    assert_int_equal(cus_fake_get_proc_address("cuCtxCreate", &pfn, 3010, 0, &qs), CUDA_SUCCESS);
    assert_int_equal(qs, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    assert_null(pfn);
}

static void test_resolver_unknown_symbol_is_symbol_not_found(void **state)
{
    (void)state;
    void *pfn = (void *)&pfn;
    CUdriverProcAddressQueryResult qs = CU_GET_PROC_ADDRESS_SUCCESS;
    assert_int_equal(cus_fake_get_proc_address("cuNoSuchEntryPoint", &pfn, 12000, 0, &qs),
                     CUDA_SUCCESS);
    assert_int_equal(qs, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    assert_null(pfn);
    /* A log name is not a symbol: the driver exports cuCtxCreate_v4 as cuCtxCreate. */
    qs = CU_GET_PROC_ADDRESS_SUCCESS;
    assert_int_equal(cus_fake_get_proc_address("cuCtxCreate_v4", &pfn, 12050, 0, &qs),
                     CUDA_SUCCESS);
    assert_int_equal(qs, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
}

static void test_resolver_picks_the_newest_variant_at_or_below_the_version(void **state)
{
    (void)state;
    void *v3020 = raw_fn("cuCtxCreate", 3020);
    void *v11040 = raw_fn("cuCtxCreate", 11040);
    void *v12050 = raw_fn("cuCtxCreate", 12050);
    assert_ptr_not_equal(v3020, v11040);
    assert_ptr_not_equal(v11040, v12050);
    assert_ptr_equal(raw_fn("cuCtxCreate", 11039), v3020);
    assert_ptr_equal(raw_fn("cuCtxCreate", 12049), v11040);
    assert_ptr_equal(raw_fn("cuCtxCreate", 12060), v12050);
    /* Calls through each variant are logged under its own name. */
    unsigned long at = cus_fake_call_count();
    CUcontext h = NULL;
    PFN_cuCtxCreate_v12050 v4;
    memcpy(&v4, &v12050, sizeof v4);
    assert_int_equal(v4(&h, NULL, 0, 0), CUDA_SUCCESS);
    assert_string_equal(cus_fake_call_name(at), "cuCtxCreate_v4");
    assert_int_equal(D.destroy(h), CUDA_SUCCESS);
}

static void test_hidden_symbol_is_symbol_not_found_at_every_version(void **state)
{
    (void)state;
    assert_ok(cus_fake_hide_entry("cuCtxSynchronize"));
    static const int versions[] = {2000, 3020, 12000, CUDA_VERSION};
    for (size_t i = 0; i < sizeof versions / sizeof versions[0]; i++) {
        void *pfn = (void *)&pfn;
        CUdriverProcAddressQueryResult qs = CU_GET_PROC_ADDRESS_SUCCESS;
        assert_int_equal(cus_fake_get_proc_address("cuCtxSynchronize", &pfn, versions[i], 0, &qs),
                         CUDA_SUCCESS);
        assert_int_equal(qs, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
        assert_null(pfn);
    }
    raw_fn("cuCtxPushCurrent", 4000); /* others unaffected */
    assert_int_equal(cus_fake_hide_entry("cuNoSuchEntryPoint"), CUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(cus_fake_hide_entry(NULL), CUS_ERROR_INVALID_ARGUMENT);
}

static void test_hidden_variant_is_absent_only_where_it_would_be_picked(void **state)
{
    (void)state;
    assert_ok(cus_fake_hide_entry("cuCtxCreate_v4"));
    void *pfn = (void *)&pfn;
    CUdriverProcAddressQueryResult qs = CU_GET_PROC_ADDRESS_SUCCESS;
    assert_int_equal(cus_fake_get_proc_address("cuCtxCreate", &pfn, 12050, 0, &qs), CUDA_SUCCESS);
    assert_int_equal(qs, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    assert_null(pfn); /* never the older signature in its place */
    raw_fn("cuCtxCreate", 11040);
    raw_fn("cuCtxCreate", 3020);
}

static void test_install_forgets_hidden_entries(void **state)
{
    (void)state;
    assert_ok(cus_fake_hide_entry("cuCtxSynchronize"));
    assert_ok(cus_fake_install(NULL));
    raw_fn("cuCtxSynchronize", 2000);
}

static void test_resolver_rejects_null_arguments_and_unknown_flags(void **state)
{
    (void)state;
    void *pfn = (void *)&pfn;
    CUdriverProcAddressQueryResult qs;
    assert_int_equal(cus_fake_get_proc_address(NULL, &pfn, 12000, 0, &qs),
                     CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cus_fake_get_proc_address("cuInit", NULL, 12000, 0, &qs),
                     CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cus_fake_get_proc_address("cuInit", &pfn, 12000, 1u << 7, &qs),
                     CUDA_ERROR_INVALID_VALUE);
    assert_null(pfn);
    /* The documented flags and a NULL symbol_status are fine. */
    assert_int_equal(cus_fake_get_proc_address("cuInit", &pfn, 12000,
                                               CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, NULL),
                     CUDA_SUCCESS);
    assert_non_null(pfn);
}

static void test_resolver_calls_are_never_counted(void **state)
{
    (void)state;
    unsigned long calls = cus_fake_call_count();
    for (int i = 0; i < 10; i++)
        raw_fn("cuCtxPushCurrent", 4000);
    assert_int_equal(cus_fake_call_count(), calls);
    /* cuGetProcAddress resolves itself, also uncounted. */
    void *self = raw_fn("cuGetProcAddress", 12000);
    PFN_cuGetProcAddress_v12000 gpa;
    memcpy(&gpa, &self, sizeof gpa);
    void *pfn = NULL;
    CUdriverProcAddressQueryResult qs = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    assert_int_equal(gpa("cuInit", &pfn, 2000, 0, &qs), CUDA_SUCCESS);
    assert_int_equal(qs, CU_GET_PROC_ADDRESS_SUCCESS);
    assert_ptr_equal(pfn, raw_fn("cuInit", 2000));
    assert_int_equal(cus_fake_call_count(), calls);
}

/* --- handle tracking ------------------------------------------------------------ */

static void test_use_after_destroy_is_misuse_with_a_message(void **state)
{
    (void)state;
    CUcontext a = raw_create();
    assert_int_equal(D.destroy(a), CUDA_SUCCESS);
    assert_int_equal(cus_fake_misuse_count(), 0);
    assert_int_equal(D.push(a), CUDA_ERROR_INVALID_CONTEXT);
    assert_int_equal(cus_fake_misuse_count(), 1);
    assert_contains(cus_fake_last_misuse(), "used after cuCtxDestroy");
    assert_contains(cus_fake_last_misuse(), "cuCtxPushCurrent");
    assert_int_equal(D.set_current(a), CUDA_ERROR_INVALID_CONTEXT);
    assert_int_equal(cus_fake_misuse_count(), 2);
    assert_contains(cus_fake_last_misuse(), "cuCtxSetCurrent");
    assert_int_equal(cus_fake_thread_stack_depth(), 0);
}

static void test_double_destroy_is_misuse_with_a_message(void **state)
{
    (void)state;
    CUcontext a = raw_create();
    assert_int_equal(D.destroy(a), CUDA_SUCCESS);
    assert_int_equal(D.destroy(a), CUDA_ERROR_INVALID_CONTEXT);
    assert_int_equal(cus_fake_misuse_count(), 1);
    assert_contains(cus_fake_last_misuse(), "double destroy");
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_CONTEXT), 0);
}

static void test_unknown_handle_is_misuse(void **state)
{
    (void)state;
    CUcontext bogus = (CUcontext)(uintptr_t)0xbad0;
    assert_int_equal(D.push(bogus), CUDA_ERROR_INVALID_CONTEXT);
    assert_int_equal(D.destroy(bogus), CUDA_ERROR_INVALID_CONTEXT);
    assert_int_equal(cus_fake_misuse_count(), 2);
    assert_contains(cus_fake_last_misuse(), "unknown context handle");
    assert_int_equal(cus_fake_thread_stack_depth(), 0);
}

static void test_install_clears_the_misuse_record(void **state)
{
    (void)state;
    assert_int_equal(D.release(0), CUDA_ERROR_INVALID_CONTEXT);
    assert_int_equal(cus_fake_misuse_count(), 1);
    assert_ok(cus_fake_install(NULL));
    assert_int_equal(cus_fake_misuse_count(), 0);
    assert_string_equal(cus_fake_last_misuse(), "");
}

static void test_live_handles_are_counted_by_kind(void **state)
{
    (void)state;
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
    CUcontext a = raw_create_unpushed(), b = raw_create_unpushed();
    CUcontext p = NULL;
    assert_int_equal(D.retain(&p, 0), CUDA_SUCCESS);
    assert_int_equal(D.retain(&p, 1), CUDA_SUCCESS);
    assert_int_equal(D.retain(&p, 1), CUDA_SUCCESS); /* still one handle */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_CONTEXT), 2);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_PRIMARY_CONTEXT), 2);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 4);
    assert_int_equal(D.destroy(a), CUDA_SUCCESS);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_CONTEXT), 1);
    assert_int_equal(D.release(0), CUDA_SUCCESS);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_PRIMARY_CONTEXT), 1);
    assert_int_equal(D.release(1), CUDA_SUCCESS);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_PRIMARY_CONTEXT), 1);
    assert_int_equal(D.release(1), CUDA_SUCCESS);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_PRIMARY_CONTEXT), 0);
    assert_int_equal(D.destroy(b), CUDA_SUCCESS);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_KIND_COUNT_), 0);
    assert_int_equal(cus_fake_live_handles((cus_fake_handle_kind)-1), 0);
}

static void test_install_drops_every_handle(void **state)
{
    (void)state;
    (void)raw_create();
    CUcontext p = NULL;
    assert_int_equal(D.retain(&p, 0), CUDA_SUCCESS);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 2);
    assert_ok(cus_fake_install(NULL));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
    assert_int_equal(cus_fake_thread_stack_depth(), 0); /* stale stacks read empty */
    assert_int_equal(cus_fake_primary_retain_count(0), 0);
}

/* --- faults --------------------------------------------------------------------- */

#define FAULT CUDA_ERROR_NOT_PERMITTED

static void test_fail_call_once_fails_only_the_nth_call(void **state)
{
    (void)state;
    int n = 0;
    cus_fake_fail_call(2, FAULT, false);
    assert_int_equal(D.device_count(&n), CUDA_SUCCESS);
    CUcontext h = (CUcontext)(uintptr_t)1;
    assert_int_equal(D.create(&h, 0, 0), FAULT); /* the second call: fails, does nothing */
    assert_ptr_equal(h, (CUcontext)(uintptr_t)1);
    assert_int_equal(cus_fake_thread_stack_depth(), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
    for (int i = 0; i < 5; i++)
        assert_int_equal(D.device_count(&n), CUDA_SUCCESS);
    assert_int_equal(cus_fake_faults_fired(), 1);
}

static void test_fail_call_persistent_fails_from_the_nth_call_on(void **state)
{
    (void)state;
    int n = 0;
    cus_fake_fail_call(2, FAULT, true);
    assert_int_equal(D.device_count(&n), CUDA_SUCCESS);
    for (int i = 0; i < 4; i++)
        assert_int_equal(D.device_count(&n), FAULT);
    assert_int_equal(D.init(0), FAULT); /* every entry point */
    assert_int_equal(cus_fake_faults_fired(), 5);
    cus_fake_clear_faults();
    assert_int_equal(D.device_count(&n), CUDA_SUCCESS);
    assert_int_equal(cus_fake_faults_fired(), 5);
}

static void test_fail_call_replaces_the_earlier_one_and_zero_disarms(void **state)
{
    (void)state;
    int n = 0;
    cus_fake_fail_call(1, FAULT, true);
    cus_fake_fail_call(3, CUDA_ERROR_UNKNOWN, false); /* replaces the first */
    assert_int_equal(D.device_count(&n), CUDA_SUCCESS);
    assert_int_equal(D.device_count(&n), CUDA_SUCCESS);
    assert_int_equal(D.device_count(&n), CUDA_ERROR_UNKNOWN);
    assert_int_equal(D.device_count(&n), CUDA_SUCCESS);
    cus_fake_fail_call(1, FAULT, true);
    cus_fake_fail_call(0, FAULT, true); /* n = 0 disarms */
    assert_int_equal(D.device_count(&n), CUDA_SUCCESS);
    assert_int_equal(cus_fake_faults_fired(), 1);
}

static void test_fail_entry_counts_only_calls_of_that_entry(void **state)
{
    (void)state;
    CUcontext a = raw_create();
    int n = 0;
    assert_ok(cus_fake_fail_entry("cuCtxSynchronize", 2, FAULT, false));
    assert_int_equal(D.device_count(&n), CUDA_SUCCESS); /* other entries don't count */
    assert_int_equal(D.synchronize(), CUDA_SUCCESS);
    assert_int_equal(D.device_count(&n), CUDA_SUCCESS);
    assert_int_equal(D.synchronize(), FAULT);
    assert_int_equal(D.synchronize(), CUDA_SUCCESS); /* once */
    assert_int_equal(cus_fake_faults_fired(), 1);
    assert_ok(cus_fake_fail_entry("cuCtxSynchronize", 1, FAULT, true));
    for (int i = 0; i < 3; i++)
        assert_int_equal(D.synchronize(), FAULT);
    assert_int_equal(D.device_count(&n), CUDA_SUCCESS);
    assert_int_equal(cus_fake_faults_fired(), 4);
    cus_fake_clear_faults();
    assert_int_equal(D.synchronize(), CUDA_SUCCESS);
    assert_int_equal(D.destroy(a), CUDA_SUCCESS);
}

static void test_fail_entry_base_name_matches_every_variant_log_name_only_one(void **state)
{
    (void)state;
    if (!D.create_v4)
        skip();
    CUcontext h = NULL;
    assert_ok(cus_fake_fail_entry("cuCtxCreate_v4", 1, FAULT, true));
    assert_int_equal(D.create_v4(&h, NULL, 0, 0), FAULT);
    assert_int_equal(D.create(&h, 0, 0), CUDA_SUCCESS); /* the 3.2 variant is not matched */
    assert_int_equal(D.destroy(h), CUDA_SUCCESS);
    cus_fake_clear_faults();
    assert_ok(cus_fake_fail_entry("cuCtxCreate", 1, FAULT, true));
    assert_int_equal(D.create_v4(&h, NULL, 0, 0), FAULT);
    assert_int_equal(D.create(&h, 0, 0), FAULT);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
}

static void test_fail_entry_rejects_unknown_names_zero_and_a_17th_fault(void **state)
{
    (void)state;
    assert_int_equal(cus_fake_fail_entry("cuNoSuchEntryPoint", 1, FAULT, false),
                     CUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(cus_fake_fail_entry(NULL, 1, FAULT, false), CUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(cus_fake_fail_entry("cuInit", 0, FAULT, false), CUS_ERROR_INVALID_ARGUMENT);
    /* The error-string entries are never failed, so naming one is refused. */
    assert_int_equal(cus_fake_fail_entry("cuGetErrorName", 1, FAULT, false),
                     CUS_ERROR_INVALID_ARGUMENT);
    for (int i = 0; i < 16; i++)
        assert_ok(cus_fake_fail_entry("cuCtxSynchronize", 1000, FAULT, false));
    assert_int_equal(cus_fake_fail_entry("cuCtxSynchronize", 1000, FAULT, false),
                     CUS_ERROR_INVALID_ARGUMENT);
    cus_fake_clear_faults();
    assert_ok(cus_fake_fail_entry("cuCtxSynchronize", 1000, FAULT, false)); /* slots free again */
}

static void test_global_fault_wins_over_an_entry_fault(void **state)
{
    (void)state;
    int n = 0;
    assert_ok(cus_fake_fail_entry("cuDeviceGetCount", 1, CUDA_ERROR_UNKNOWN, false));
    cus_fake_fail_call(1, FAULT, false);
    assert_int_equal(D.device_count(&n), FAULT);
    /* The entry rule saw that call too, and is spent. */
    assert_int_equal(D.device_count(&n), CUDA_SUCCESS);
    assert_int_equal(cus_fake_faults_fired(), 1);
}

static void test_clear_faults_disarms_everything(void **state)
{
    (void)state;
    int n = 0;
    cus_fake_fail_call(1, FAULT, true);
    assert_ok(cus_fake_fail_entry("cuDeviceGetCount", 1, FAULT, true));
    cus_fake_clear_faults();
    for (int i = 0; i < 3; i++)
        assert_int_equal(D.device_count(&n), CUDA_SUCCESS);
    assert_int_equal(cus_fake_faults_fired(), 0);
}

static void test_error_string_entries_are_never_counted_or_failed(void **state)
{
    (void)state;
    cus_fake_fail_call(1, FAULT, true);
    unsigned long calls = cus_fake_call_count();
    const char *s = NULL;
    assert_int_equal(D.error_name(CUDA_ERROR_INVALID_VALUE, &s), CUDA_SUCCESS);
    assert_string_equal(s, "CUDA_ERROR_INVALID_VALUE");
    assert_int_equal(D.error_string(CUDA_ERROR_CONTEXT_IS_DESTROYED, &s), CUDA_SUCCESS);
    assert_string_equal(s, "context is destroyed");
    assert_int_equal(D.error_name((CUresult)12345, &s), CUDA_ERROR_INVALID_VALUE);
    assert_null(s);
    assert_int_equal(cus_fake_call_count(), calls);
    assert_int_equal(cus_fake_faults_fired(), 0);
    cus_fake_clear_faults();
}

static void test_failed_calls_are_counted_and_logged(void **state)
{
    (void)state;
    unsigned long at = cus_fake_call_count();
    assert_ok(cus_fake_fail_entry("cuCtxSynchronize", 1, FAULT, false));
    assert_int_equal(D.synchronize(), FAULT);
    assert_int_equal(cus_fake_call_count(), at + 1);
    assert_int_equal(cus_fake_calls_of("cuCtxSynchronize"), 1);
    assert_string_equal(cus_fake_call_name(at), "cuCtxSynchronize");
}

/* --- the call log --------------------------------------------------------------- */

static void test_call_log_counts_and_names_each_call(void **state)
{
    (void)state;
    /* raw_setup made one counted call (cuDriverGetVersion in load_raw) and cuInit. */
    assert_int_equal(cus_fake_call_count(), 2);
    assert_string_equal(cus_fake_call_name(0), "cuDriverGetVersion");
    assert_string_equal(cus_fake_call_name(1), "cuInit");
    int n = 0;
    CUcontext h = raw_create();
    assert_int_equal(D.device_count(&n), CUDA_SUCCESS);
    assert_int_equal(D.synchronize(), CUDA_SUCCESS);
    assert_int_equal(D.destroy(h), CUDA_SUCCESS);
    assert_int_equal(cus_fake_call_count(), 6);
    static const char *const want[] = {"cuDriverGetVersion", "cuInit", "cuCtxCreate",
                                       "cuDeviceGetCount", "cuCtxSynchronize", "cuCtxDestroy"};
    for (unsigned long i = 0; i < 6; i++)
        assert_string_equal(cus_fake_call_name(i), want[i]);
    assert_null(cus_fake_call_name(6)); /* not made yet */
    assert_int_equal(cus_fake_calls_of("cuCtxCreate"), 1);
    assert_int_equal(cus_fake_calls_of("cuInit"), 1);
    assert_int_equal(cus_fake_calls_of("cuCtxPushCurrent"), 0);
    assert_int_equal(cus_fake_calls_of("cuNoSuchEntryPoint"), 0);
    assert_int_equal(cus_fake_calls_of(NULL), 0);
}

static void test_calls_of_a_base_name_counts_every_variant(void **state)
{
    (void)state;
    if (!D.create_v4)
        skip();
    CUcontext a = NULL, b = NULL;
    assert_int_equal(D.create(&a, 0, 0), CUDA_SUCCESS);
    assert_int_equal(D.create_v4(&b, NULL, 0, 0), CUDA_SUCCESS);
    assert_int_equal(cus_fake_calls_of("cuCtxCreate"), 2);
    assert_int_equal(cus_fake_calls_of("cuCtxCreate_v4"), 1);
    assert_int_equal(D.destroy(b), CUDA_SUCCESS);
    assert_int_equal(D.destroy(a), CUDA_SUCCESS);
}

static void test_call_log_keeps_the_last_4096_names(void **state)
{
    (void)state;
    int n = 0;
    for (int i = 0; i < 5000; i++)
        assert_int_equal(D.device_count(&n), CUDA_SUCCESS);
    unsigned long count = cus_fake_call_count();
    assert_int_equal(count, 5002);
    assert_int_equal(cus_fake_calls_of("cuDeviceGetCount"), 5000);
    assert_null(cus_fake_call_name(0));
    assert_null(cus_fake_call_name(count - 4097));
    assert_string_equal(cus_fake_call_name(count - 4096), "cuDeviceGetCount");
    assert_string_equal(cus_fake_call_name(count - 1), "cuDeviceGetCount");
    assert_null(cus_fake_call_name(count));
}

static void test_install_resets_the_log_and_counters(void **state)
{
    (void)state;
    cus_fake_fail_call(1, FAULT, false);
    int n = 0;
    assert_int_equal(D.device_count(&n), FAULT);
    assert_ok(cus_fake_fail_entry("cuInit", 1, FAULT, true));
    assert_ok(cus_fake_install(NULL));
    assert_int_equal(cus_fake_call_count(), 0);
    assert_int_equal(cus_fake_calls_of("cuDeviceGetCount"), 0);
    assert_int_equal(cus_fake_faults_fired(), 0);
    assert_null(cus_fake_call_name(0));
    assert_int_equal(D.init(0), CUDA_SUCCESS); /* the armed fault is gone */
}

/* --- install -------------------------------------------------------------------- */

static void test_install_rejects_bad_configs(void **state)
{
    (void)state;
    assert_int_equal(D.device_count(&(int){0}), CUDA_SUCCESS);
    unsigned long calls = cus_fake_call_count();

    cus_fake_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.device_count = -1;
    assert_int_equal(cus_fake_install(&cfg), CUS_ERROR_INVALID_ARGUMENT);
    cfg.device_count = CUS_FAKE_MAX_DEVICES + 1;
    assert_int_equal(cus_fake_install(&cfg), CUS_ERROR_INVALID_ARGUMENT);
    cfg.device_count = 0;
    cfg.driver_version = -1;
    assert_int_equal(cus_fake_install(&cfg), CUS_ERROR_INVALID_ARGUMENT);
    cfg.driver_version = 0;

    cus_fake_device_config dc[2];
    memset(dc, 0, sizeof dc);
    cfg.device_count = 2;
    cfg.devices = dc;
    dc[1].cc_major = -1;
    assert_int_equal(cus_fake_install(&cfg), CUS_ERROR_INVALID_ARGUMENT);
    dc[1].cc_major = 0;
    dc[1].cc_minor = -1;
    assert_int_equal(cus_fake_install(&cfg), CUS_ERROR_INVALID_ARGUMENT);
    dc[1].cc_minor = 0;
    dc[1].multiprocessor_count = -1;
    assert_int_equal(cus_fake_install(&cfg), CUS_ERROR_INVALID_ARGUMENT);
    dc[1].multiprocessor_count = 0;
    dc[1].override_count = CUS_FAKE_MAX_ATTRIBUTE_OVERRIDES + 1;
    assert_int_equal(cus_fake_install(&cfg), CUS_ERROR_INVALID_ARGUMENT);
    dc[1].override_count = -1;
    assert_int_equal(cus_fake_install(&cfg), CUS_ERROR_INVALID_ARGUMENT);
    dc[1].override_count = 1;
    dc[1].overrides[0].attribute = (CUdevice_attribute)0;
    assert_int_equal(cus_fake_install(&cfg), CUS_ERROR_INVALID_ARGUMENT);
    dc[1].overrides[0].attribute = CU_DEVICE_ATTRIBUTE_MAX;
    assert_int_equal(cus_fake_install(&cfg), CUS_ERROR_INVALID_ARGUMENT);

    /* A refused config left the installed fake as it was. */
    assert_int_equal(cus_fake_call_count(), calls);
    int n = 0;
    assert_int_equal(D.device_count(&n), CUDA_SUCCESS);
    assert_int_equal(n, 1);

    /* And the corrected one installs. */
    dc[1].overrides[0].attribute = CU_DEVICE_ATTRIBUTE_WARP_SIZE;
    assert_ok(cus_fake_install(&cfg));
    assert_int_equal(D.init(0), CUDA_SUCCESS);
    assert_int_equal(D.device_count(&n), CUDA_SUCCESS);
    assert_int_equal(n, 2);
}

static void test_install_is_busy_while_a_cuscope_object_is_alive(void **state)
{
    (void)state;
    cus_context *c = NULL;
    assert_ok(cus_context_create((cus_device){0}, CUS_CTX_NO_PUSH, &c));
    unsigned long calls = cus_fake_call_count();
    assert_int_equal(cus_fake_install(NULL), CUS_ERROR_BUSY);
    assert_int_equal(cus_fake_uninstall(), CUS_ERROR_BUSY);
    assert_int_equal(cus_fake_call_count(), calls); /* nothing was reset */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_CONTEXT), 1);
    assert_ok(cus_context_synchronize(c));
    c = cus_context_unref(c);
    assert_ok(cus_fake_install(NULL));
}

static void test_default_config_is_one_hopper_device_at_the_headers_version(void **state)
{
    (void)state;
    int n = 0, v = 0;
    assert_int_equal(D.device_count(&n), CUDA_SUCCESS);
    assert_int_equal(n, 1);
    assert_int_equal(D.version(&v), CUDA_SUCCESS);
    assert_int_equal(v, CUDA_VERSION);
    int major = 0, sms = 0;
    assert_ok(cus_device_attribute((cus_device){0}, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                   &major));
    assert_ok(cus_device_attribute((cus_device){0}, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                   &sms));
    assert_int_equal(major, 9);
    assert_int_equal(sms, 132);
}

static void test_configured_driver_version_is_reported(void **state)
{
    (void)state;
    int v = 0;
    assert_int_equal(D.version(&v), CUDA_SUCCESS);
    assert_int_equal(v, 12000);
    assert_int_equal(D.version(NULL), CUDA_ERROR_INVALID_VALUE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        RAW_TEST(test_ctx_create_pushes_the_new_context),
        RAW_TEST(test_ctx_create_v4_pushes_too),
        RAW_TEST(test_ctx_create_rejects_bad_flags_and_devices_without_pushing),
        RAW_TEST(test_push_makes_the_context_current),
        RAW_TEST(test_pop_returns_the_popped_handle),
        RAW_TEST(test_pop_on_empty_stack_is_invalid_context),
        RAW_TEST(test_calls_on_the_current_context_need_one),
        RAW_TEST(test_set_current_replaces_the_top),
        RAW_TEST(test_set_current_on_an_empty_stack_pushes),
        RAW_TEST(test_set_current_null_pops_only_the_top_and_is_a_noop_when_empty),
        RAW_TEST(test_ctx_destroy_pops_the_callers_top_copy_only),
        RAW_TEST(test_ctx_destroy_below_the_top_leaves_the_stack),
        RAW_TEST(test_primary_retain_and_release_never_push_and_keep_a_stable_handle),
        RAW_TEST_2DEV(test_primary_contexts_are_per_device),
        MISUSE_TEST(test_release_of_a_never_retained_primary_is_invalid_context_and_misuse),
        MISUSE_TEST(test_push_of_a_released_primary_is_misuse),
        MISUSE_TEST(test_ctx_destroy_of_a_primary_is_misuse),
        ENV_TEST(test_entry_points_need_cuInit_except_version_and_init),
        ENV_TEST(test_no_devices_makes_cuInit_fail),
        RAW_TEST_12000(test_resolver_version_above_the_driver_is_invalid_value),
        RAW_TEST_12000(test_resolver_entry_newer_than_the_driver_is_never_handed_out),
        RAW_TEST_12000(test_resolver_below_the_first_abi_is_version_not_sufficient),
        RAW_TEST(test_resolver_unknown_symbol_is_symbol_not_found),
        RAW_TEST(test_resolver_picks_the_newest_variant_at_or_below_the_version),
        RAW_TEST(test_hidden_symbol_is_symbol_not_found_at_every_version),
        RAW_TEST(test_hidden_variant_is_absent_only_where_it_would_be_picked),
        RAW_TEST(test_install_forgets_hidden_entries),
        RAW_TEST(test_resolver_rejects_null_arguments_and_unknown_flags),
        RAW_TEST(test_resolver_calls_are_never_counted),
        MISUSE_TEST(test_use_after_destroy_is_misuse_with_a_message),
        MISUSE_TEST(test_double_destroy_is_misuse_with_a_message),
        MISUSE_TEST(test_unknown_handle_is_misuse),
        RAW_TEST(test_install_clears_the_misuse_record),
        RAW_TEST_2DEV(test_live_handles_are_counted_by_kind),
        RAW_TEST(test_install_drops_every_handle),
        RAW_TEST(test_fail_call_once_fails_only_the_nth_call),
        RAW_TEST(test_fail_call_persistent_fails_from_the_nth_call_on),
        RAW_TEST(test_fail_call_replaces_the_earlier_one_and_zero_disarms),
        RAW_TEST(test_fail_entry_counts_only_calls_of_that_entry),
        RAW_TEST(test_fail_entry_base_name_matches_every_variant_log_name_only_one),
        RAW_TEST(test_fail_entry_rejects_unknown_names_zero_and_a_17th_fault),
        RAW_TEST(test_global_fault_wins_over_an_entry_fault),
        RAW_TEST(test_clear_faults_disarms_everything),
        RAW_TEST(test_error_string_entries_are_never_counted_or_failed),
        RAW_TEST(test_failed_calls_are_counted_and_logged),
        RAW_TEST(test_call_log_counts_and_names_each_call),
        RAW_TEST(test_calls_of_a_base_name_counts_every_variant),
        RAW_TEST(test_call_log_keeps_the_last_4096_names),
        RAW_TEST(test_install_resets_the_log_and_counters),
        RAW_TEST(test_install_rejects_bad_configs),
        RAW_TEST(test_install_is_busy_while_a_cuscope_object_is_alive),
        RAW_TEST(test_default_config_is_one_hopper_device_at_the_headers_version),
        RAW_TEST_12000(test_configured_driver_version_is_reported),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
