/* The loader (include/cuscope/driver.h, lib/driver/loader.c): finding the
 * driver, resolving entry points at explicit ABI versions, the errors that say
 * what is missing, idempotence, retries, lazy loading and swapping the source.
 *
 * Every test runs under driver_setup/driver_teardown: the teardown puts back a
 * sane state (no CUSCOPE_LIBCUDA, the default library, a fresh fake) so that a
 * test that swapped the driver cannot affect the next one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/env.h"
#include "harness/check.h"

#define CU(x) ((cus_status)(x))

#define MISSING_LIBCUDA "/nonexistent/libcuda.so.1"

static int driver_setup(void **state)
{
    (void)state;
    unsetenv("CUSCOPE_LIBCUDA");
    if (cus_driver_set_library(NULL))
        return -1;
    return env_setup_with(NULL);
}

static int driver_teardown(void **state)
{
    unsetenv("CUSCOPE_LIBCUDA");
    assert_int_equal(cus_debug_live_objects(), 0);
    assert_int_equal(cus_context_stack_depth(), 0);
    assert_ok(cus_driver_set_library(NULL));
    assert_ok(cus_fake_install(NULL));
    return env_teardown(state);
}

#define DRIVER_TEST(f) cmocka_unit_test_setup_teardown(f, driver_setup, driver_teardown)

/* Goes from the fake to "libcuda" at path (NULL: the default search). */
static void use_library(const char *path)
{
    assert_ok(cus_driver_install(NULL));
    assert_ok(cus_driver_set_library(path));
}

static const char *shim_or_skip(const char *var)
{
    const char *path = getenv(var);
    if (!path || !*path) {
        print_message("%s is not set (run through meson test): skipping\n", var);
        skip();
    }
    return path;
}

static void install_fake(const cus_fake_config *cfg)
{
    assert_ok(cus_fake_install(cfg));
}

/* --- (1)-(4) finding the library ------------------------------------------------ */

static void test_missing_library_is_driver_not_found_naming_the_path(void **state)
{
    (void)state;
    assert_ok(cus_fake_uninstall());
    assert_ok(cus_driver_set_library(MISSING_LIBCUDA));
    assert_status(cus_init(), CUS_ERROR_DRIVER_NOT_FOUND);
    const cus_error *e = cus_last_error();
    assert_string_equal(e->function, "cus_init");
    assert_contains(e->message, MISSING_LIBCUDA);
    assert_contains(e->message, "CUSCOPE_LIBCUDA"); /* what to do */
    assert_contains(e->message, "install");
    assert_false(cus_driver_has("cuInit"));
    /* Every later call that needs the driver fails the same way, never aborts. */
    int n = -1;
    assert_status(cus_device_count(&n), CUS_ERROR_DRIVER_NOT_FOUND);
    assert_int_equal(n, -1);
    int v = -1;
    assert_status(cus_driver_version(&v), CUS_ERROR_DRIVER_NOT_FOUND);
    assert_int_equal(v, -1);
    cus_context *c = NULL;
    assert_status(cus_context_create((cus_device){0}, 0, &c), CUS_ERROR_DRIVER_NOT_FOUND);
    assert_null(c);
    /* Every entry point that loads the driver on first use. */
    cus_device d = {-1};
    assert_status(cus_device_get(0, &d), CUS_ERROR_DRIVER_NOT_FOUND);
    assert_int_equal(d.handle, -1);
    char name[32];
    assert_status(cus_device_name((cus_device){0}, name, sizeof name), CUS_ERROR_DRIVER_NOT_FOUND);
    CUuuid uuid;
    assert_status(cus_device_uuid((cus_device){0}, &uuid), CUS_ERROR_DRIVER_NOT_FOUND);
    size_t bytes = 0;
    assert_status(cus_device_total_memory((cus_device){0}, &bytes), CUS_ERROR_DRIVER_NOT_FOUND);
    assert_status(cus_device_attribute((cus_device){0}, CU_DEVICE_ATTRIBUTE_WARP_SIZE, &n),
                  CUS_ERROR_DRIVER_NOT_FOUND);
    assert_status(cus_context_retain_primary((cus_device){0}, &c), CUS_ERROR_DRIVER_NOT_FOUND);
    assert_status(cus_context_wrap((CUcontext)&d, &c), CUS_ERROR_DRIVER_NOT_FOUND);
    assert_null(c);
    assert_status(cus_context_set_current(NULL), CUS_ERROR_DRIVER_NOT_FOUND);
    assert_int_equal(cus_debug_live_objects(), 0);
    assert_ok(cus_driver_set_library(NULL));
}

static void test_missing_library_through_env_var_is_driver_not_found(void **state)
{
    (void)state;
    use_library(NULL);
    assert_int_equal(setenv("CUSCOPE_LIBCUDA", "/nonexistent/from-env/libcuda.so.1", 1), 0);
    assert_status(cus_init(), CUS_ERROR_DRIVER_NOT_FOUND);
    assert_contains(cus_last_error_message(), "/nonexistent/from-env/libcuda.so.1");
}

static void test_a_library_that_is_not_a_driver_is_symbol_missing(void **state)
{
    (void)state;
    use_library("libc.so.6");
    assert_status(cus_init(), CUS_ERROR_DRIVER_SYMBOL_MISSING);
    assert_contains(cus_last_error_message(), "libc.so.6");
    assert_contains(cus_last_error_message(), "not a CUDA driver");
    assert_false(cus_driver_has("cuInit"));
}

static void test_a_driver_without_cuGetProcAddress_v2_is_too_old(void **state)
{
    (void)state;
    const char *old = shim_or_skip("CUS_TEST_SHIM_OLD");
    use_library(old);
    assert_status(cus_init(), CUS_ERROR_DRIVER_TOO_OLD);
    assert_contains(cus_last_error_message(), old);
    assert_contains(cus_last_error_message(), "12.0");
    assert_contains(cus_last_error_message(), "update");
}

static void test_init_through_dlopen_reaches_the_fake(void **state)
{
    (void)state;
    const char *shim = shim_or_skip("CUS_TEST_SHIM_FAKE");
    static const cus_fake_device_config devs[2] = {{.name = "through dlopen"}, {0}};
    const cus_fake_config cfg = {.device_count = 2, .devices = devs};
    install_fake(&cfg);
    use_library(shim);
    assert_ok(cus_init());
    assert_int_equal(cus_fake_calls_of("cuInit"), 1); /* the fake's state, through the shim */
    assert_true(cus_driver_has("cuCtxPushCurrent"));
    int n = 0;
    assert_ok(cus_device_count(&n));
    assert_int_equal(n, 2);
    cus_device d;
    assert_ok(cus_device_get(0, &d));
    char name[64];
    assert_ok(cus_device_name(d, name, sizeof name));
    assert_string_equal(name, "through dlopen");
    /* Contexts work through it too. */
    cus_context *c = NULL;
    assert_ok(cus_context_create(d, 0, &c));
    assert_ok(cus_context_synchronize(c));
    assert_ok(cus_context_pop(NULL));
    c = cus_context_unref(c);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
}

static void test_init_through_the_env_var_path_reaches_the_fake(void **state)
{
    (void)state;
    const char *shim = shim_or_skip("CUS_TEST_SHIM_FAKE");
    install_fake(NULL);
    use_library(NULL);
    assert_int_equal(setenv("CUSCOPE_LIBCUDA", shim, 1), 0);
    assert_ok(cus_init());
    assert_int_equal(cus_fake_calls_of("cuInit"), 1);
    int n = 0;
    assert_ok(cus_device_count(&n));
    assert_int_equal(n, 1);
    char name[64];
    assert_ok(cus_device_name((cus_device){0}, name, sizeof name));
    assert_string_equal(name, "cuscope fake GPU 0");
}

static void test_set_library_wins_over_the_env_var(void **state)
{
    (void)state;
    const char *shim = shim_or_skip("CUS_TEST_SHIM_FAKE");
    install_fake(NULL);
    assert_int_equal(setenv("CUSCOPE_LIBCUDA", MISSING_LIBCUDA, 1), 0);
    use_library(shim);
    assert_ok(cus_init());
    assert_int_equal(cus_fake_calls_of("cuInit"), 1);
}

static void test_failed_load_is_retried_after_fixing_the_path(void **state)
{
    (void)state;
    const char *shim = shim_or_skip("CUS_TEST_SHIM_FAKE");
    install_fake(NULL);
    use_library(MISSING_LIBCUDA);
    assert_status(cus_init(), CUS_ERROR_DRIVER_NOT_FOUND);
    assert_ok(cus_driver_set_library(shim));
    assert_ok(cus_init());
    assert_true(cus_driver_has("cuInit"));
}

/* --- (5)-(9) what the driver provides ------------------------------------------- */

static void test_driver_below_12_0_is_too_old_naming_its_version(void **state)
{
    (void)state;
    const cus_fake_config cfg = {.driver_version = 11080};
    install_fake(&cfg);
    assert_status(cus_init(), CUS_ERROR_DRIVER_TOO_OLD);
    assert_contains(cus_last_error_message(), "11.8");
    assert_contains(cus_last_error_message(), "12.0");
    assert_int_equal(cus_fake_calls_of("cuInit"), 0); /* refused before initialising */
    int v = -1;
    assert_status(cus_driver_version(&v), CUS_ERROR_DRIVER_TOO_OLD);
    assert_int_equal(v, -1);
}

static void test_missing_required_entry_is_symbol_missing_naming_it(void **state)
{
    (void)state;
    assert_ok(cus_fake_hide_entry("cuCtxPushCurrent"));
    assert_status(cus_init(), CUS_ERROR_DRIVER_SYMBOL_MISSING);
    assert_contains(cus_last_error_message(), "cuCtxPushCurrent");
    assert_contains(cus_last_error_message(), "13.0"); /* the driver version */
    assert_string_equal(cus_last_error()->driver_call, "cuGetProcAddress");
    assert_false(cus_driver_has("cuInit"));
}

static void test_driver_12_0_has_no_cuCtxCreate_v4_and_create_uses_the_old_abi(void **state)
{
    (void)state;
    const cus_fake_config cfg = {.driver_version = 12000};
    install_fake(&cfg);
    assert_ok(cus_init());
    int v = 0;
    assert_ok(cus_driver_version(&v));
    assert_int_equal(v, 12000);
    assert_false(cus_driver_has("cuCtxCreate_v4"));
    assert_true(cus_driver_has("cuCtxCreate"));
    cus_context *c = NULL;
    unsigned long at = cus_fake_call_count();
    assert_ok(cus_context_create((cus_device){0}, 0, &c));
    assert_int_equal(cus_fake_calls_of("cuCtxCreate_v4"), 0);
    assert_int_equal(cus_fake_calls_of("cuCtxCreate"), 1);
    assert_string_equal(cus_fake_call_name(at), "cuCtxCreate"); /* the 3.2 ABI's log name */
    assert_ok(cus_context_pop(NULL));
    c = cus_context_unref(c);
}

static void test_driver_13_0_creates_with_cuCtxCreate_v4(void **state)
{
    (void)state;
    const cus_fake_config cfg = {.driver_version = 13000};
    install_fake(&cfg);
    assert_ok(cus_init());
    assert_true(cus_driver_has("cuCtxCreate_v4"));
    cus_context *c = NULL;
    unsigned long at = cus_fake_call_count();
    assert_ok(cus_context_create((cus_device){0}, 0, &c));
    assert_int_equal(cus_fake_calls_of("cuCtxCreate_v4"), 1);
    assert_string_equal(cus_fake_call_name(at), "cuCtxCreate_v4");
    assert_ok(cus_context_pop(NULL));
    c = cus_context_unref(c);
}

static void test_hidden_cuCtxCreate_v4_falls_back_to_the_old_abi(void **state)
{
    (void)state;
    assert_ok(cus_fake_hide_entry("cuCtxCreate_v4"));
    assert_ok(cus_init());
    assert_false(cus_driver_has("cuCtxCreate_v4"));
    cus_context *c = NULL;
    assert_ok(cus_context_create((cus_device){0}, CUS_CTX_NO_PUSH, &c));
    assert_int_equal(cus_fake_calls_of("cuCtxCreate_v4"), 0);
    assert_int_equal(cus_fake_calls_of("cuCtxCreate"), 1);
    c = cus_context_unref(c);
}

static void test_driver_has_is_false_before_init_and_for_unknown_names(void **state)
{
    (void)state;
    assert_false(cus_driver_has("cuInit"));
    assert_false(cus_driver_has("cuCtxCreate_v4"));
    assert_ok(cus_init());
    assert_true(cus_driver_has("cuInit"));
    assert_true(cus_driver_has("cuCtxGetSharedMemConfig"));
    assert_false(cus_driver_has(NULL));
    assert_false(cus_driver_has(""));
    assert_false(cus_driver_has("cuNoSuchEntryPoint"));
}

static void test_hidden_shared_mem_config_entry_is_not_supported(void **state)
{
    (void)state;
    assert_ok(cus_fake_hide_entry("cuCtxGetSharedMemConfig"));
    assert_ok(cus_init()); /* optional: the load succeeds */
    assert_false(cus_driver_has("cuCtxGetSharedMemConfig"));
    assert_true(cus_driver_has("cuCtxSetSharedMemConfig"));
    cus_context *c = NULL;
    assert_ok(cus_context_create((cus_device){0}, CUS_CTX_NO_PUSH, &c));
    CUsharedconfig cfg = (CUsharedconfig)77;
    unsigned long calls = cus_fake_call_count();
    assert_status(cus_context_get_shared_mem_config(c, &cfg), CUS_ERROR_NOT_SUPPORTED);
    assert_int_equal(cfg, 77);
    assert_int_equal(cus_fake_call_count(), calls); /* decided without the driver */
    assert_contains(cus_last_error_message(), "cuCtxGetSharedMemConfig");
    assert_contains(cus_last_error_message(), "13.0");
    assert_ok(cus_context_set_shared_mem_config(c, CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE));
    c = cus_context_unref(c);
}

static void test_hidden_set_shared_mem_config_entry_is_not_supported(void **state)
{
    (void)state;
    assert_ok(cus_fake_hide_entry("cuCtxSetSharedMemConfig"));
    cus_context *c = NULL;
    assert_ok(cus_context_create((cus_device){0}, CUS_CTX_NO_PUSH, &c));
    assert_status(cus_context_set_shared_mem_config(c, CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE),
                  CUS_ERROR_NOT_SUPPORTED);
    CUsharedconfig cfg;
    assert_ok(cus_context_get_shared_mem_config(c, &cfg));
    assert_int_equal(cfg, CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE);
    c = cus_context_unref(c);
}

static void test_no_devices_is_no_device_with_a_message(void **state)
{
    (void)state;
    const cus_fake_config cfg = {.no_devices = true};
    install_fake(&cfg);
    assert_status(cus_init(), CU(CUDA_ERROR_NO_DEVICE));
    assert_string_equal(cus_last_error()->function, "cus_init");
    assert_contains(cus_last_error_message(), "no CUDA device");
    assert_contains(cus_last_error_message(), "CUDA_VISIBLE_DEVICES");
    int n = -1;
    assert_status(cus_device_count(&n), CU(CUDA_ERROR_NO_DEVICE));
    assert_int_equal(n, -1);
}

/* --- (10)-(12) idempotence, retry, laziness ------------------------------------- */

static void test_init_is_idempotent_and_the_second_call_makes_no_driver_call(void **state)
{
    (void)state;
    assert_ok(cus_init());
    assert_int_equal(cus_fake_calls_of("cuInit"), 1);
    assert_int_equal(cus_fake_calls_of("cuDriverGetVersion"), 1);
    unsigned long calls = cus_fake_call_count();
    assert_true(calls > 0);
    for (int i = 0; i < 10; i++)
        assert_ok(cus_init());
    assert_int_equal(cus_fake_call_count(), calls);
    int v = 0;
    assert_ok(cus_driver_version(&v)); /* answered from the table */
    assert_int_equal(cus_fake_call_count(), calls);
}

static void test_transient_cuInit_fault_fails_once_then_init_succeeds(void **state)
{
    (void)state;
    assert_ok(cus_fake_fail_entry("cuInit", 1, CUDA_ERROR_OPERATING_SYSTEM, false));
    assert_status(cus_init(), CU(CUDA_ERROR_OPERATING_SYSTEM));
    assert_string_equal(cus_last_error()->driver_call, "cuInit");
    assert_false(cus_driver_has("cuInit"));
    assert_ok(cus_init());
    assert_int_equal(cus_fake_calls_of("cuInit"), 2);
    assert_true(cus_driver_has("cuInit"));
}

static void test_device_count_loads_the_driver_lazily(void **state)
{
    (void)state;
    assert_int_equal(cus_fake_call_count(), 0);
    int n = 0;
    assert_ok(cus_device_count(&n));
    assert_int_equal(n, 1);
    assert_int_equal(cus_fake_calls_of("cuInit"), 1);
    assert_true(cus_driver_has("cuInit"));
}

static void test_failed_lazy_load_reports_the_load_error(void **state)
{
    (void)state;
    assert_ok(cus_fake_fail_entry("cuInit", 1, CUDA_ERROR_OPERATING_SYSTEM, false));
    cus_device d = {5};
    assert_status(cus_device_get(0, &d), CU(CUDA_ERROR_OPERATING_SYSTEM));
    assert_int_equal(d.handle, 5);
    assert_ok(cus_device_get(0, &d)); /* retried */
    assert_int_equal(d.handle, 0);
}

/* --- (13) swapping the source --------------------------------------------------- */

static void test_swapping_the_driver_is_busy_while_an_object_is_alive(void **state)
{
    (void)state;
    cus_context *c = NULL;
    assert_ok(cus_context_create((cus_device){0}, CUS_CTX_NO_PUSH, &c));
    unsigned long inits = cus_fake_calls_of("cuInit");
    assert_status(cus_driver_install(NULL), CUS_ERROR_BUSY);
    assert_contains(cus_last_error_message(), "1 cuscope object");
    assert_status(cus_driver_install(cus_fake_get_proc_address), CUS_ERROR_BUSY);
    assert_status(cus_driver_set_library(MISSING_LIBCUDA), CUS_ERROR_BUSY);
    assert_status(cus_driver_set_library(NULL), CUS_ERROR_BUSY);
    assert_int_equal(cus_fake_install(NULL), CUS_ERROR_BUSY);
    assert_int_equal(cus_fake_uninstall(), CUS_ERROR_BUSY);
    /* The loaded table was left alone. */
    assert_true(cus_driver_has("cuInit"));
    assert_ok(cus_context_synchronize(c));
    assert_int_equal(cus_fake_calls_of("cuInit"), inits);
    c = cus_context_unref(c);
    /* And with nothing alive the swap works. */
    assert_ok(cus_driver_set_library(MISSING_LIBCUDA));
    assert_ok(cus_driver_set_library(NULL));
}

static void test_swapping_is_busy_while_a_primary_context_is_retained(void **state)
{
    (void)state;
    cus_context *p = NULL;
    assert_ok(cus_context_retain_primary((cus_device){0}, &p));
    assert_status(cus_driver_install(cus_fake_get_proc_address), CUS_ERROR_BUSY);
    assert_status(cus_driver_set_library(NULL), CUS_ERROR_BUSY);
    p = cus_context_unref(p);
    assert_ok(cus_driver_install(cus_fake_get_proc_address));
}

static void test_install_drops_the_loaded_table(void **state)
{
    (void)state;
    assert_ok(cus_init());
    assert_true(cus_driver_has("cuInit"));
    assert_ok(cus_driver_install(cus_fake_get_proc_address));
    assert_false(cus_driver_has("cuInit")); /* loads again on next use */
    assert_ok(cus_init());
    assert_int_equal(cus_fake_calls_of("cuInit"), 2);
}

/* --- (14) the version ----------------------------------------------------------- */

static void test_driver_version_is_the_drivers(void **state)
{
    (void)state;
    int v = 0;
    assert_ok(cus_driver_version(&v)); /* loads lazily */
    assert_int_equal(v, CUDA_VERSION);
    const cus_fake_config cfg = {.driver_version = 12040};
    install_fake(&cfg);
    assert_ok(cus_driver_version(&v));
    assert_int_equal(v, 12040);
}

static void test_driver_version_null_is_invalid_argument(void **state)
{
    (void)state;
    assert_status(cus_driver_version(NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(cus_fake_call_count(), 0); /* checked before loading */
}

/* --- (15) faults during the load ------------------------------------------------ */

static void test_faults_during_the_load_surface_with_the_injected_code(void **state)
{
    (void)state;
    static const struct {
        const char *entry;
        CUresult code;
    } cases[] = {
        {"cuDriverGetVersion", CUDA_ERROR_UNKNOWN},
        {"cuInit", CUDA_ERROR_OPERATING_SYSTEM},
        {"cuDeviceGetCount", CUDA_ERROR_NOT_PERMITTED},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        install_fake(NULL);
        assert_ok(cus_fake_fail_entry(cases[i].entry, 1, cases[i].code, false));
        cus_status st = cus_init();
        if (st != CU(cases[i].code))
            fail_msg("fault on %s: cus_init gave %s, expected %s", cases[i].entry,
                     cus_status_name(st), cus_status_name(CU(cases[i].code)));
        assert_int_equal(cus_last_status(), cases[i].code);
        assert_string_equal(cus_last_error()->function, "cus_init");
        assert_string_equal(cus_last_error()->driver_call, cases[i].entry);
        assert_int_equal(cus_fake_faults_fired(), 1);
        assert_false(cus_driver_has("cuInit"));
        assert_ok(cus_init()); /* the fault was transient: the retry loads */
    }
}

static void test_persistent_fault_during_the_load_keeps_failing(void **state)
{
    (void)state;
    assert_ok(cus_fake_fail_entry("cuDeviceGetCount", 1, CUDA_ERROR_UNKNOWN, true));
    for (int i = 0; i < 3; i++)
        assert_status(cus_init(), CU(CUDA_ERROR_UNKNOWN));
    cus_fake_clear_faults();
    assert_ok(cus_init());
}

/* cus_driver_proc: any entry point at an explicit version, from the source
 * cuscope loaded (the fake here: the calls are its, counted and
 * fault-injected like cuscope's own), usable under a guard; a name or a
 * version the driver lacks is CUS_ERROR_NOT_SUPPORTED naming them; through
 * the dlopen path too. */
static void test_driver_proc_serves_any_entry_point(void **state)
{
    (void)state;
    install_fake(NULL);
    /* loads the driver itself */
    PFN_cuMemAllocPitch_v3020 alloc_pitch = NULL;
    assert_ok(CUS_DRIVER_PROC(alloc_pitch, "cuMemAllocPitch", 3020));
    assert_non_null(alloc_pitch);
    PFN_cuMemFree_v3020 mem_free = NULL;
    assert_ok(CUS_DRIVER_PROC(mem_free, "cuMemFree", 3020));
    cus_device d;
    assert_ok(cus_device_get(0, &d));
    cus_context *c = NULL;
    assert_ok(cus_context_create(d, CUS_CTX_NO_PUSH, &c));
    unsigned long calls = cus_fake_calls_of("cuMemAllocPitch");
    {
        cus_context_scope(guard, c);
        assert_ok(guard.status);
        CUdeviceptr p = 0;
        size_t pitch = 0;
        assert_int_equal(alloc_pitch(&p, &pitch, 100, 4, 16), CUDA_SUCCESS);
        assert_true(pitch >= 100);
        assert_int_equal(mem_free(p), CUDA_SUCCESS);
    }
    assert_int_equal(cus_fake_calls_of("cuMemAllocPitch"), calls + 1);
    assert_int_equal(cus_context_stack_depth(), 0);
    c = cus_context_unref(c);

    void *fn = SENTINEL_PTR(fn);
    assert_status(cus_driver_proc("cuNoSuchEntryPoint", 2000, &fn), CUS_ERROR_NOT_SUPPORTED);
    assert_contains(cus_last_error_message(), "cuNoSuchEntryPoint at ABI version 2000");
    assert_status(cus_driver_proc("cuMemAlloc", 99000, &fn), CUS_ERROR_NOT_SUPPORTED);
    assert_contains(cus_last_error_message(), "cuMemAlloc at ABI version 99000");
    assert_status(cus_driver_proc(NULL, 3020, &fn), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_driver_proc("cuMemAlloc", 3020, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_driver_proc("cuMemAlloc", 0, &fn), CUS_ERROR_INVALID_ARGUMENT);
    assert_ptr_equal(fn, SENTINEL_PTR(fn));

    /* The same through the loader's dlopen path (the shim forwards to the fake). */
    const char *shim = getenv("CUS_TEST_SHIM_FAKE");
    if (shim) {
        use_library(shim);
        assert_ok(cus_driver_proc("cuMemAlloc", 3020, &fn));
        assert_non_null(fn);
    }
}

/* A load that fails is cus_driver_proc's failure too, *fn untouched. */
static void test_driver_proc_reports_a_failed_load(void **state)
{
    (void)state;
    use_library(MISSING_LIBCUDA);
    void *fn = SENTINEL_PTR(fn);
    assert_status(cus_driver_proc("cuMemAlloc", 3020, &fn), CUS_ERROR_DRIVER_NOT_FOUND);
    assert_ptr_equal(fn, SENTINEL_PTR(fn));
}

/* CUSCOPE_TRACE (lib/driver/trace.c): with a path, every driver call of the
 * loaded table is appended there as name(arguments) = result; "errors:"
 * keeps only the calls that fail; unset (a new load), nothing more is
 * written. */
static size_t count_in(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char line[2048];
    size_t n = 0;
    while (fgets(line, sizeof line, f))
        n += strstr(line, needle) != NULL;
    fclose(f);
    return n;
}

static void test_trace_writes_every_driver_call(void **state)
{
    (void)state;
    char path[] = "/tmp/cuscope-trace-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(setenv("CUSCOPE_TRACE", path, 1), 0);
    install_fake(NULL); /* the load reads the variable */
    cus_device d;
    assert_ok(cus_device_get(0, &d));
    cus_context *c = NULL;
    assert_ok(cus_context_create(d, CUS_CTX_NO_PUSH, &c));
    cus_buffer *b = NULL;
    assert_ok(cus_buffer_alloc(c, 40, &b));
    b = cus_buffer_unref(b);
    assert_status(cus_buffer_alloc(c, (size_t)1 << 62, &b), CU(CUDA_ERROR_OUT_OF_MEMORY));
    assert_int_equal(count_in(path, "cuscope-trace: tracing every driver call"), 1);
    assert_int_equal(count_in(path, "cuMemAlloc(dptr=0x"), 2);
    assert_int_equal(count_in(path, "bytesize=40) = CUDA_SUCCESS (0) in "), 1);
    assert_int_equal(count_in(path, ") = CUDA_ERROR_OUT_OF_MEMORY (2) in "), 1);
    assert_int_equal(count_in(path, "cuMemFree(dptr=0x"), 1);
    c = cus_context_unref(c);

    /* Failures only. */
    unlink(path);
    char spec[64];
    snprintf(spec, sizeof spec, "errors:%s", path);
    assert_int_equal(setenv("CUSCOPE_TRACE", spec, 1), 0);
    install_fake(NULL);
    assert_ok(cus_context_create(d, CUS_CTX_NO_PUSH, &c));
    assert_ok(cus_buffer_alloc(c, 40, &b));
    b = cus_buffer_unref(b);
    assert_status(cus_buffer_alloc(c, (size_t)1 << 62, &b), CU(CUDA_ERROR_OUT_OF_MEMORY));
    assert_int_equal(count_in(path, "tracing the driver calls that fail"), 1);
    assert_int_equal(count_in(path, "= CUDA_SUCCESS"), 0);
    assert_int_equal(count_in(path, "cuMemAlloc("), 1);
    c = cus_context_unref(c);

    /* Unset: a new load writes nothing. */
    unlink(path);
    unsetenv("CUSCOPE_TRACE");
    install_fake(NULL);
    assert_ok(cus_context_create(d, CUS_CTX_NO_PUSH, &c));
    c = cus_context_unref(c);
    assert_int_equal(count_in(path, "cuscope-trace"), 0);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        DRIVER_TEST(test_missing_library_is_driver_not_found_naming_the_path),
        DRIVER_TEST(test_missing_library_through_env_var_is_driver_not_found),
        DRIVER_TEST(test_a_library_that_is_not_a_driver_is_symbol_missing),
        DRIVER_TEST(test_a_driver_without_cuGetProcAddress_v2_is_too_old),
        DRIVER_TEST(test_init_through_dlopen_reaches_the_fake),
        DRIVER_TEST(test_init_through_the_env_var_path_reaches_the_fake),
        DRIVER_TEST(test_set_library_wins_over_the_env_var),
        DRIVER_TEST(test_failed_load_is_retried_after_fixing_the_path),
        DRIVER_TEST(test_driver_below_12_0_is_too_old_naming_its_version),
        DRIVER_TEST(test_missing_required_entry_is_symbol_missing_naming_it),
        DRIVER_TEST(test_driver_12_0_has_no_cuCtxCreate_v4_and_create_uses_the_old_abi),
        DRIVER_TEST(test_driver_13_0_creates_with_cuCtxCreate_v4),
        DRIVER_TEST(test_hidden_cuCtxCreate_v4_falls_back_to_the_old_abi),
        DRIVER_TEST(test_driver_has_is_false_before_init_and_for_unknown_names),
        DRIVER_TEST(test_hidden_shared_mem_config_entry_is_not_supported),
        DRIVER_TEST(test_hidden_set_shared_mem_config_entry_is_not_supported),
        DRIVER_TEST(test_no_devices_is_no_device_with_a_message),
        DRIVER_TEST(test_init_is_idempotent_and_the_second_call_makes_no_driver_call),
        DRIVER_TEST(test_transient_cuInit_fault_fails_once_then_init_succeeds),
        DRIVER_TEST(test_device_count_loads_the_driver_lazily),
        DRIVER_TEST(test_failed_lazy_load_reports_the_load_error),
        DRIVER_TEST(test_swapping_the_driver_is_busy_while_an_object_is_alive),
        DRIVER_TEST(test_swapping_is_busy_while_a_primary_context_is_retained),
        DRIVER_TEST(test_install_drops_the_loaded_table),
        DRIVER_TEST(test_driver_version_is_the_drivers),
        DRIVER_TEST(test_driver_version_null_is_invalid_argument),
        DRIVER_TEST(test_faults_during_the_load_surface_with_the_injected_code),
        DRIVER_TEST(test_persistent_fault_during_the_load_keeps_failing),
        DRIVER_TEST(test_driver_proc_serves_any_entry_point),
        DRIVER_TEST(test_driver_proc_reports_a_failed_load),
        DRIVER_TEST(test_trace_writes_every_driver_call),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
