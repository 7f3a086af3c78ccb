/* Devices (include/cuscope/device.h): every function's success path against
 * the fake's configured values, and its failure paths (NULL pointers, a bad
 * ordinal, an injected driver fault) with out parameters left untouched. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "harness/env.h"

#define CU(x) ((cus_status)(x))

#define GiB ((size_t)1 << 30)

/* Three devices: two configured in full (the second with overrides, one of
 * which beats its multiprocessor_count), the third all defaults. */
static const cus_fake_device_config three_devices[3] = {
    {
        .name = "Fake H200",
        .cc_major = 9,
        .cc_minor = 0,
        .total_memory = 141 * GiB,
        .multiprocessor_count = 132,
        .overrides = {{CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, 62914560}},
        .override_count = 1,
    },
    {
        .name = "Fake A6000 with a rather long name",
        .cc_major = 8,
        .cc_minor = 6,
        .total_memory = 48 * GiB,
        .multiprocessor_count = 84,
        .overrides = {{CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 1800000},
                      {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 80},
                      {CU_DEVICE_ATTRIBUTE_ECC_ENABLED, 0}},
        .override_count = 3,
    },
    {0},
};
static const cus_fake_config three_device_config = {.device_count = 3, .devices = three_devices};

static int setup_three(void **state)
{
    (void)state;
    return env_setup_with(&three_device_config);
}

#define DEV_TEST(f) cmocka_unit_test_setup_teardown(f, setup_three, env_teardown)

static cus_device dev(int ordinal)
{
    cus_device d = {-1};
    assert_ok(cus_device_get(ordinal, &d));
    return d;
}

static int attr(int ordinal, CUdevice_attribute a)
{
    int v = -12345;
    assert_ok(cus_device_attribute(dev(ordinal), a, &v));
    return v;
}

/* --- success paths -------------------------------------------------------------- */

static void test_device_count_is_the_configured_number(void **state)
{
    (void)state;
    int n = -1;
    assert_ok(cus_device_count(&n));
    assert_int_equal(n, 3);
}

static void test_default_config_has_one_device(void **state)
{
    (void)state;
    int n = -1;
    assert_ok(cus_device_count(&n));
    assert_int_equal(n, 1);
}

static void test_device_get_returns_the_ordinal(void **state)
{
    (void)state;
    for (int i = 0; i < 3; i++)
        assert_int_equal(dev(i).handle, i);
}

static void test_device_names_are_the_configured_ones(void **state)
{
    (void)state;
    char name[128];
    assert_ok(cus_device_name(dev(0), name, sizeof name));
    assert_string_equal(name, "Fake H200");
    assert_ok(cus_device_name(dev(1), name, sizeof name));
    assert_string_equal(name, "Fake A6000 with a rather long name");
    assert_ok(cus_device_name(dev(2), name, sizeof name));
    assert_string_equal(name, "cuscope fake GPU 2"); /* the default */
}

static void test_name_is_truncated_to_len_minus_one(void **state)
{
    (void)state;
    char name[16];
    memset(name, 'x', sizeof name);
    assert_ok(cus_device_name(dev(0), name, 5));
    assert_string_equal(name, "Fake");
    for (size_t i = 5; i < sizeof name; i++)
        assert_int_equal(name[i], 'x'); /* nothing written past len */

    memset(name, 'x', sizeof name);
    assert_ok(cus_device_name(dev(0), name, 1));
    assert_int_equal(name[0], '\0');
    assert_int_equal(name[1], 'x');

    /* Exactly the name's length plus the NUL fits; one less cuts one char. */
    size_t full = strlen("Fake H200");
    memset(name, 'x', sizeof name);
    assert_ok(cus_device_name(dev(0), name, full + 1));
    assert_string_equal(name, "Fake H200");
    assert_ok(cus_device_name(dev(0), name, full));
    assert_string_equal(name, "Fake H20");
}

static void test_total_memory_is_the_configured_size(void **state)
{
    (void)state;
    size_t bytes = 0;
    assert_ok(cus_device_total_memory(dev(0), &bytes));
    assert_int_equal(bytes, 141 * GiB);
    assert_ok(cus_device_total_memory(dev(1), &bytes));
    assert_int_equal(bytes, 48 * GiB);
    assert_ok(cus_device_total_memory(dev(2), &bytes));
    assert_int_equal(bytes, 80 * GiB); /* the default */
}

static void test_compute_capability_is_the_configured_one(void **state)
{
    (void)state;
    int major = -1, minor = -1;
    assert_ok(cus_device_compute_capability(dev(0), &major, &minor));
    assert_int_equal(major, 9);
    assert_int_equal(minor, 0);
    assert_ok(cus_device_compute_capability(dev(1), &major, &minor));
    assert_int_equal(major, 8);
    assert_int_equal(minor, 6);
    assert_ok(cus_device_compute_capability(dev(2), &major, &minor));
    assert_int_equal(major, 9); /* the default, 9.0 */
    assert_int_equal(minor, 0);
    /* The same numbers as the attributes. */
    assert_int_equal(attr(1, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR), 8);
    assert_int_equal(attr(1, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR), 6);
}

static void test_multiprocessor_count_is_the_configured_one(void **state)
{
    (void)state;
    assert_int_equal(attr(0, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT), 132);
    assert_int_equal(attr(2, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT), 132); /* default */
}

static void test_attribute_overrides_apply_and_win(void **state)
{
    (void)state;
    assert_int_equal(attr(0, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE), 62914560);
    assert_int_equal(attr(1, CU_DEVICE_ATTRIBUTE_CLOCK_RATE), 1800000);
    assert_int_equal(attr(1, CU_DEVICE_ATTRIBUTE_ECC_ENABLED), 0);
    /* The override beats multiprocessor_count = 84. */
    assert_int_equal(attr(1, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT), 80);
    /* Devices without that override keep the Hopper values. */
    assert_int_equal(attr(2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE), 52428800);
    assert_int_equal(attr(2, CU_DEVICE_ATTRIBUTE_ECC_ENABLED), 1);
}

static void test_unconfigured_attributes_have_hopper_values(void **state)
{
    (void)state;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(attr(i, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK), 1024);
        assert_int_equal(attr(i, CU_DEVICE_ATTRIBUTE_WARP_SIZE), 32);
        assert_int_equal(attr(i, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z), 64);
    }
}

static void test_set_attribute_is_visible_through_device_attribute(void **state)
{
    (void)state;
    assert_int_equal(attr(1, CU_DEVICE_ATTRIBUTE_WARP_SIZE), 32);
    assert_ok(cus_fake_set_attribute(1, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 64));
    assert_int_equal(attr(1, CU_DEVICE_ATTRIBUTE_WARP_SIZE), 64);
    assert_int_equal(attr(0, CU_DEVICE_ATTRIBUTE_WARP_SIZE), 32); /* only that device */
    assert_int_equal(attr(2, CU_DEVICE_ATTRIBUTE_WARP_SIZE), 32);
    /* Compute capability goes through the same attributes. */
    assert_ok(cus_fake_set_attribute(2, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 10));
    assert_ok(cus_fake_set_attribute(2, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 3));
    int major = 0, minor = 0;
    assert_ok(cus_device_compute_capability(dev(2), &major, &minor));
    assert_int_equal(major, 10);
    assert_int_equal(minor, 3);
}

static void test_set_attribute_rejects_bad_ordinals_and_attributes(void **state)
{
    (void)state;
    assert_int_equal(cus_fake_set_attribute(3, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 1),
                     CUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(cus_fake_set_attribute(-1, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 1),
                     CUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(cus_fake_set_attribute(0, (CUdevice_attribute)0, 1),
                     CUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(cus_fake_set_attribute(0, CU_DEVICE_ATTRIBUTE_MAX, 1),
                     CUS_ERROR_INVALID_ARGUMENT);
}

static void test_uuid_is_stable_and_distinct_per_device(void **state)
{
    (void)state;
    CUuuid u[3], again;
    for (int i = 0; i < 3; i++)
        assert_ok(cus_device_uuid(dev(i), &u[i]));
    assert_ok(cus_device_uuid(dev(1), &again));
    assert_memory_equal(u[1].bytes, again.bytes, sizeof again.bytes);
    assert_memory_not_equal(u[0].bytes, u[1].bytes, sizeof u[0].bytes);
    assert_memory_not_equal(u[1].bytes, u[2].bytes, sizeof u[1].bytes);
    assert_memory_not_equal(u[0].bytes, u[2].bytes, sizeof u[0].bytes);
}

static void test_uuid_string_has_nvidia_smi_form_and_matches_the_raw_uuid(void **state)
{
    (void)state;
    for (int i = 0; i < 3; i++) {
        char s[CUS_DEVICE_UUID_STRING_LEN + 8];
        memset(s, '#', sizeof s);
        assert_ok(cus_device_uuid_string(dev(i), s));
        assert_int_equal(strlen(s), CUS_DEVICE_UUID_STRING_LEN - 1);
        assert_int_equal(s[CUS_DEVICE_UUID_STRING_LEN], '#'); /* no overrun */
        assert_memory_equal(s, "GPU-", 4);
        for (int k = 4; k < CUS_DEVICE_UUID_STRING_LEN - 1; k++) {
            if (k == 12 || k == 17 || k == 22 || k == 27) {
                assert_int_equal(s[k], '-');
            } else if (!isxdigit((unsigned char)s[k]) || isupper((unsigned char)s[k])) {
                fail_msg("character %d of \"%s\" is not a lowercase hex digit", k, s);
            }
        }
        /* The digits are the raw bytes, in order. */
        CUuuid u;
        assert_ok(cus_device_uuid(dev(i), &u));
        char want[CUS_DEVICE_UUID_STRING_LEN];
        const unsigned char *b = (const unsigned char *)u.bytes;
        snprintf(want, sizeof want,
                 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                 b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                 b[14], b[15]);
        assert_string_equal(s, want);
    }
}

/* --- NULL pointers -------------------------------------------------------------- */

static void test_null_out_pointers_are_invalid_argument_without_a_driver_call(void **state)
{
    (void)state;
    assert_ok(cus_init());
    cus_device d = dev(0);
    unsigned long calls = cus_fake_call_count();
    int v = 7;
    char name[8] = "keep";
    assert_status(cus_device_count(NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_device_get(0, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_device_name(d, NULL, 16), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_device_name(d, name, 0), CUS_ERROR_INVALID_ARGUMENT);
    assert_string_equal(name, "keep");
    assert_status(cus_device_uuid(d, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_device_uuid_string(d, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_device_total_memory(d, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_device_attribute(d, CU_DEVICE_ATTRIBUTE_WARP_SIZE, NULL),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_device_compute_capability(d, NULL, &v), CUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(v, 7);
    assert_status(cus_device_compute_capability(d, &v, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(v, 7);
    assert_int_equal(cus_fake_call_count(), calls);
}

/* --- bad ordinals --------------------------------------------------------------- */

static void test_device_get_past_the_end_is_invalid_device(void **state)
{
    (void)state;
    static const int bad[] = {3, 4, 16, -1, 1000};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cus_device d = {77};
        assert_status(cus_device_get(bad[i], &d), CU(CUDA_ERROR_INVALID_DEVICE));
        assert_int_equal(d.handle, 77);
        assert_string_equal(cus_last_error()->driver_call, "cuDeviceGet");
    }
}

static void test_calls_on_a_bad_device_are_invalid_device(void **state)
{
    (void)state;
    static const cus_device bad[] = {{3}, {-1}, {99}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cus_device d = bad[i];
        char name[16] = "keep";
        assert_status(cus_device_name(d, name, sizeof name), CU(CUDA_ERROR_INVALID_DEVICE));
        assert_string_equal(name, "keep");
        CUuuid u;
        memset(&u, 0x5a, sizeof u);
        assert_status(cus_device_uuid(d, &u), CU(CUDA_ERROR_INVALID_DEVICE));
        for (size_t k = 0; k < sizeof u.bytes; k++)
            assert_int_equal((unsigned char)u.bytes[k], 0x5a);
        char s[CUS_DEVICE_UUID_STRING_LEN] = "keep";
        assert_status(cus_device_uuid_string(d, s), CU(CUDA_ERROR_INVALID_DEVICE));
        assert_string_equal(s, "keep");
        size_t bytes = 5;
        assert_status(cus_device_total_memory(d, &bytes), CU(CUDA_ERROR_INVALID_DEVICE));
        assert_int_equal(bytes, 5);
        int v = 6;
        assert_status(cus_device_attribute(d, CU_DEVICE_ATTRIBUTE_WARP_SIZE, &v),
                      CU(CUDA_ERROR_INVALID_DEVICE));
        assert_int_equal(v, 6);
        int major = 1, minor = 2;
        assert_status(cus_device_compute_capability(d, &major, &minor),
                      CU(CUDA_ERROR_INVALID_DEVICE));
        assert_int_equal(major, 1);
        assert_int_equal(minor, 2);
    }
}

static void test_invalid_attribute_is_the_drivers_invalid_value(void **state)
{
    (void)state;
    int v = 9;
    assert_status(cus_device_attribute(dev(0), (CUdevice_attribute)0, &v),
                  CU(CUDA_ERROR_INVALID_VALUE));
    assert_int_equal(v, 9);
    assert_status(cus_device_attribute(dev(0), CU_DEVICE_ATTRIBUTE_MAX, &v),
                  CU(CUDA_ERROR_INVALID_VALUE));
    assert_int_equal(v, 9);
}

/* --- injected faults ------------------------------------------------------------ */

#define FAULT CUDA_ERROR_NOT_PERMITTED

/* Arms a one-shot fault on entry's n-th call from now. */
static void arm(const char *entry, unsigned long n)
{
    assert_ok(cus_init());
    assert_ok(cus_fake_fail_entry(entry, n, FAULT, false));
}

/* The fault fired and the call reported it under the right names. */
static void assert_fault_reported(unsigned long fired_before, const char *function,
                                  const char *driver_call)
{
    assert_int_equal(cus_fake_faults_fired(), fired_before + 1);
    assert_int_equal(cus_last_status(), FAULT);
    assert_string_equal(cus_last_error()->function, function);
    assert_string_equal(cus_last_error()->driver_call, driver_call);
}

static void test_fault_on_cuDeviceGetCount_surfaces_and_leaves_count(void **state)
{
    (void)state;
    arm("cuDeviceGetCount", 1);
    unsigned long fired = cus_fake_faults_fired();
    int n = -1;
    assert_status(cus_device_count(&n), CU(FAULT));
    assert_int_equal(n, -1);
    assert_fault_reported(fired, "cus_device_count", "cuDeviceGetCount");
}

static void test_fault_on_cuDeviceGet_surfaces_and_leaves_the_device(void **state)
{
    (void)state;
    arm("cuDeviceGet", 1);
    unsigned long fired = cus_fake_faults_fired();
    cus_device d = {-7};
    assert_status(cus_device_get(1, &d), CU(FAULT));
    assert_int_equal(d.handle, -7);
    assert_fault_reported(fired, "cus_device_get", "cuDeviceGet");
}

static void test_fault_on_cuDeviceGetName_surfaces_and_leaves_the_buffer(void **state)
{
    (void)state;
    cus_device d = dev(0);
    arm("cuDeviceGetName", 1);
    unsigned long fired = cus_fake_faults_fired();
    char name[32] = "untouched";
    assert_status(cus_device_name(d, name, sizeof name), CU(FAULT));
    assert_string_equal(name, "untouched");
    assert_fault_reported(fired, "cus_device_name", "cuDeviceGetName");
}

static void test_fault_on_cuDeviceGetUuid_surfaces_and_leaves_the_uuid(void **state)
{
    (void)state;
    cus_device d = dev(0);
    arm("cuDeviceGetUuid", 1);
    unsigned long fired = cus_fake_faults_fired();
    CUuuid u;
    memset(&u, 0xa5, sizeof u);
    assert_status(cus_device_uuid(d, &u), CU(FAULT));
    for (size_t k = 0; k < sizeof u.bytes; k++)
        assert_int_equal((unsigned char)u.bytes[k], 0xa5);
    assert_fault_reported(fired, "cus_device_uuid", "cuDeviceGetUuid");

    arm("cuDeviceGetUuid", 1);
    char s[CUS_DEVICE_UUID_STRING_LEN] = "untouched";
    assert_status(cus_device_uuid_string(d, s), CU(FAULT));
    assert_string_equal(s, "untouched");
}

static void test_fault_on_cuDeviceTotalMem_surfaces_and_leaves_bytes(void **state)
{
    (void)state;
    cus_device d = dev(0);
    arm("cuDeviceTotalMem", 1);
    unsigned long fired = cus_fake_faults_fired();
    size_t bytes = 3;
    assert_status(cus_device_total_memory(d, &bytes), CU(FAULT));
    assert_int_equal(bytes, 3);
    assert_fault_reported(fired, "cus_device_total_memory", "cuDeviceTotalMem");
}

static void test_fault_on_cuDeviceGetAttribute_surfaces_and_leaves_the_value(void **state)
{
    (void)state;
    cus_device d = dev(0);
    arm("cuDeviceGetAttribute", 1);
    unsigned long fired = cus_fake_faults_fired();
    int v = -4;
    assert_status(cus_device_attribute(d, CU_DEVICE_ATTRIBUTE_WARP_SIZE, &v), CU(FAULT));
    assert_int_equal(v, -4);
    assert_fault_reported(fired, "cus_device_attribute", "cuDeviceGetAttribute");
}

static void test_fault_on_either_cc_query_leaves_both_outputs(void **state)
{
    (void)state;
    cus_device d = dev(1);
    for (unsigned long n = 1; n <= 2; n++) { /* the major query, then the minor one */
        arm("cuDeviceGetAttribute", n);
        int major = -1, minor = -2;
        assert_status(cus_device_compute_capability(d, &major, &minor), CU(FAULT));
        assert_int_equal(major, -1);
        assert_int_equal(minor, -2);
    }
    int major = -1, minor = -2;
    assert_ok(cus_device_compute_capability(d, &major, &minor));
    assert_int_equal(major, 8);
    assert_int_equal(minor, 6);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        DEV_TEST(test_device_count_is_the_configured_number),
        ENV_TEST(test_default_config_has_one_device),
        DEV_TEST(test_device_get_returns_the_ordinal),
        DEV_TEST(test_device_names_are_the_configured_ones),
        DEV_TEST(test_name_is_truncated_to_len_minus_one),
        DEV_TEST(test_total_memory_is_the_configured_size),
        DEV_TEST(test_compute_capability_is_the_configured_one),
        DEV_TEST(test_multiprocessor_count_is_the_configured_one),
        DEV_TEST(test_attribute_overrides_apply_and_win),
        DEV_TEST(test_unconfigured_attributes_have_hopper_values),
        DEV_TEST(test_set_attribute_is_visible_through_device_attribute),
        DEV_TEST(test_set_attribute_rejects_bad_ordinals_and_attributes),
        DEV_TEST(test_uuid_is_stable_and_distinct_per_device),
        DEV_TEST(test_uuid_string_has_nvidia_smi_form_and_matches_the_raw_uuid),
        DEV_TEST(test_null_out_pointers_are_invalid_argument_without_a_driver_call),
        DEV_TEST(test_device_get_past_the_end_is_invalid_device),
        DEV_TEST(test_calls_on_a_bad_device_are_invalid_device),
        DEV_TEST(test_invalid_attribute_is_the_drivers_invalid_value),
        DEV_TEST(test_fault_on_cuDeviceGetCount_surfaces_and_leaves_count),
        DEV_TEST(test_fault_on_cuDeviceGet_surfaces_and_leaves_the_device),
        DEV_TEST(test_fault_on_cuDeviceGetName_surfaces_and_leaves_the_buffer),
        DEV_TEST(test_fault_on_cuDeviceGetUuid_surfaces_and_leaves_the_uuid),
        DEV_TEST(test_fault_on_cuDeviceTotalMem_surfaces_and_leaves_bytes),
        DEV_TEST(test_fault_on_cuDeviceGetAttribute_surfaces_and_leaves_the_value),
        DEV_TEST(test_fault_on_either_cc_query_leaves_both_outputs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
