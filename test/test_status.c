/* Status codes, the thread's last-error record and the destroy-error channel
 * (include/cuscope/status.h). */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "harness/env.h"
#include "harness/check.h"

/* A driver code as a cus_status (keeps -Wenum-compare quiet in assert_status). */
#define CU(x) ((cus_status)(x))

static cus_device dev0(void)
{
    cus_device d = {0};
    assert_ok(cus_device_get(0, &d));
    return d;
}

/* --- names and descriptions ----------------------------------------------------- */

static void test_success_is_named_cus_success(void **state)
{
    (void)state;
    assert_string_equal(cus_status_name(CUS_SUCCESS), "CUS_SUCCESS");
    assert_string_equal(cus_status_name(CUDA_SUCCESS), "CUS_SUCCESS"); /* the same code */
    const char *text = cus_status_string(CUS_SUCCESS);
    assert_non_null(text);
    assert_true(text[0] != '\0');
    assert_string_not_equal(text, cus_status_string(123456));
}

static void test_every_own_code_has_its_map_name_and_description(void **state)
{
    (void)state;
    int n = 0;
#define CHECK_OWN_(name, value, desc)                                          \
    do {                                                                       \
        assert_int_equal(CUS_ERROR_##name, value);                             \
        assert_string_equal(cus_status_name(value), "CUS_ERROR_" #name);       \
        assert_string_equal(cus_status_string(value), desc);                   \
        assert_true((value) >= 10000);                                         \
        assert_false(cus_status_is_sticky(value));                             \
        n++;                                                                   \
    } while (0);
    CUS_STATUS_MAP(CHECK_OWN_)
#undef CHECK_OWN_
    assert_true(n >= 10); /* DRIVER_NOT_FOUND .. CONTEXTS_LEFT_PUSHED at least */
}

static void test_own_codes_are_distinct(void **state)
{
    (void)state;
    static const int codes[] = {
#define OWN_VALUE_(name, value, desc) value,
        CUS_STATUS_MAP(OWN_VALUE_)
#undef OWN_VALUE_
    };
    size_t n = sizeof codes / sizeof codes[0];
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++) {
            assert_int_not_equal(codes[i], codes[j]);
            assert_string_not_equal(cus_status_name(codes[i]), cus_status_name(codes[j]));
        }
}

static void test_cuda_codes_keep_their_cuda_h_names(void **state)
{
    (void)state;
    static const struct {
        int code;
        const char *name;
    } cases[] = {
        {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE"},
        {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY"},
        {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE"},
        {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE"},
        {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT"},
        {CUDA_ERROR_UNSUPPORTED_LIMIT, "CUDA_ERROR_UNSUPPORTED_LIMIT"},
        {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY"},
        {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS"},
        {709, "CUDA_ERROR_CONTEXT_IS_DESTROYED"},
        {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED"},
        {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED"},
        {999, "CUDA_ERROR_UNKNOWN"},
    };
    const char *unknown_text = cus_status_string(123456);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_string_equal(cus_status_name(cases[i].code), cases[i].name);
        const char *text = cus_status_string(cases[i].code);
        assert_non_null(text);
        assert_true(text[0] != '\0');
        assert_null(strchr(text, '\n')); /* one line */
        assert_string_not_equal(text, unknown_text);
    }
    assert_contains(cus_status_string(CUDA_ERROR_INVALID_VALUE), "parameters");
    assert_contains(cus_status_string(709), "destroyed");
}

static void test_unknown_codes_are_named_cus_unknown_status(void **state)
{
    (void)state;
    static const int codes[] = {-1, 9, 35, 103, 1000, 9999, 10000, 10999, 20000,
                                INT_MAX, INT_MIN};
    const char *text = cus_status_string(codes[0]);
    assert_non_null(text);
    assert_true(text[0] != '\0');
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        assert_string_equal(cus_status_name(codes[i]), "CUS_UNKNOWN_STATUS");
        assert_non_null(cus_status_string(codes[i]));
        assert_string_equal(cus_status_string(codes[i]), text);
    }
    /* Just past the end of cuscope's own table. */
    int last = 0;
#define OWN_MAX_(name, value, desc) last = (value) > last ? (value) : last;
    CUS_STATUS_MAP(OWN_MAX_)
#undef OWN_MAX_
    assert_string_equal(cus_status_name(last + 1), "CUS_UNKNOWN_STATUS");
}

static void test_status_names_make_no_driver_call(void **state)
{
    (void)state;
    unsigned long calls = cus_fake_call_count();
    for (int code = -5; code < 1100; code++) {
        assert_non_null(cus_status_name(code));
        assert_non_null(cus_status_string(code));
        (void)cus_status_is_sticky(code);
    }
    assert_int_equal(cus_fake_call_count(), calls);
    assert_false(cus_driver_has("cuInit")); /* nothing was loaded either */
}

/* With the driver loaded, a code the headers do not know is asked of the
 * driver (a newer driver knows newer codes); the fake knows none beyond
 * cuda.h, so the answer stays CUS_UNKNOWN_STATUS, and a known code still
 * comes from cuscope's own table. */
static void test_unknown_codes_are_asked_of_a_loaded_driver(void **state)
{
    (void)state;
    assert_ok(cus_init());
    assert_true(cus_driver_has("cuGetErrorName"));
    assert_string_equal(cus_status_name(9), "CUS_UNKNOWN_STATUS");
    assert_non_null(cus_status_string(9));
    assert_string_equal(cus_status_name(CUDA_ERROR_INVALID_VALUE), "CUDA_ERROR_INVALID_VALUE");
    assert_string_equal(cus_status_name(10000 + 999), "CUS_UNKNOWN_STATUS"); /* not asked */
}

static void test_sticky_codes_are_700_710_and_714_to_719(void **state)
{
    (void)state;
    static const int sticky[] = {700, 710, 714, 715, 716, 717, 718, 719};
    for (size_t i = 0; i < sizeof sticky / sizeof sticky[0]; i++)
        if (!cus_status_is_sticky(sticky[i]))
            fail_msg("%d (%s) should be sticky", sticky[i], cus_status_name(sticky[i]));
    static const int not_sticky[] = {
        CUS_SUCCESS, CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_OUT_OF_MEMORY, CUDA_ERROR_NO_DEVICE,
        CUDA_ERROR_INVALID_CONTEXT, CUDA_ERROR_NOT_READY, 699, 701, 702, 708, 709, 711, 712,
        713, 720, 721, CUDA_ERROR_NOT_SUPPORTED, CUDA_ERROR_UNKNOWN, CUS_ERROR_DRIVER_NOT_FOUND,
        CUS_ERROR_CONTEXT_MISMATCH, -700, 10700,
    };
    for (size_t i = 0; i < sizeof not_sticky / sizeof not_sticky[0]; i++)
        if (cus_status_is_sticky(not_sticky[i]))
            fail_msg("%d (%s) should not be sticky", not_sticky[i],
                     cus_status_name(not_sticky[i]));
}

/* --- the last-error record ------------------------------------------------------ */

typedef struct fresh_record {
    bool non_null;
    cus_status status, last_status;
    bool function_empty, driver_call_empty, message_empty, message_text_empty;
} fresh_record;

static void *read_fresh_record(void *arg)
{
    fresh_record *r = arg;
    const cus_error *e = cus_last_error();
    r->non_null = e != NULL;
    if (e) {
        r->status = e->status;
        r->function_empty = e->function && !e->function[0];
        r->driver_call_empty = e->driver_call && !e->driver_call[0];
        r->message_empty = e->message && !e->message[0];
    }
    const char *m = cus_last_error_message();
    r->message_text_empty = m && !m[0];
    r->last_status = cus_last_status();
    return NULL;
}

static void test_fresh_thread_has_an_empty_record(void **state)
{
    (void)state;
    /* Dirty this thread's record: the new thread must not see it. */
    assert_status(cus_device_count(NULL), CUS_ERROR_INVALID_ARGUMENT);
    fresh_record r;
    memset(&r, 0, sizeof r);
    r.status = r.last_status = -1;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, read_fresh_record, &r), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_true(r.non_null);
    assert_int_equal(r.status, CUS_SUCCESS);
    assert_int_equal(r.last_status, CUS_SUCCESS);
    assert_true(r.function_empty);
    assert_true(r.driver_call_empty);
    assert_true(r.message_empty);
    assert_true(r.message_text_empty);
}

static void test_failing_driver_call_records_status_function_call_and_message(void **state)
{
    (void)state;
    cus_device d = {42};
    assert_status(cus_device_get(7, &d), CU(CUDA_ERROR_INVALID_DEVICE));
    assert_int_equal(d.handle, 42);
    const cus_error *e = cus_last_error();
    assert_int_equal(e->status, CUDA_ERROR_INVALID_DEVICE);
    assert_string_equal(e->function, "cus_device_get");
    assert_string_equal(e->driver_call, "cuDeviceGet");
    assert_contains(e->message, "cus_device_get");
    assert_contains(e->message, "cuDeviceGet");
    assert_contains(e->message, "CUDA_ERROR_INVALID_DEVICE");
    assert_contains(e->message, "7"); /* the object involved: the ordinal */
    assert_string_equal(cus_last_error_message(), e->message);
    assert_int_equal(cus_last_status(), CUDA_ERROR_INVALID_DEVICE);
}

static void test_argument_failure_records_no_driver_call(void **state)
{
    (void)state;
    assert_status(cus_device_count(NULL), CUS_ERROR_INVALID_ARGUMENT);
    const cus_error *e = cus_last_error();
    assert_string_equal(e->function, "cus_device_count");
    assert_string_equal(e->driver_call, "");
    assert_contains(e->message, "cus_device_count");
    assert_contains(e->message, "CUS_ERROR_INVALID_ARGUMENT");
}

static void test_injected_driver_failure_is_recorded_with_its_code(void **state)
{
    (void)state;
    assert_ok(cus_init());
    assert_ok(cus_fake_fail_entry("cuDeviceTotalMem", 1, CUDA_ERROR_NOT_PERMITTED, false));
    size_t bytes = 7;
    assert_status(cus_device_total_memory(dev0(), &bytes), CU(CUDA_ERROR_NOT_PERMITTED));
    assert_int_equal(bytes, 7);
    assert_string_equal(cus_last_error()->function, "cus_device_total_memory");
    assert_string_equal(cus_last_error()->driver_call, "cuDeviceTotalMem");
    assert_contains(cus_last_error_message(), "CUDA_ERROR_NOT_PERMITTED");
}

static void test_success_leaves_the_last_error_alone(void **state)
{
    (void)state;
    cus_device d;
    assert_status(cus_device_get(9, &d), CU(CUDA_ERROR_INVALID_DEVICE));
    char before[512];
    snprintf(before, sizeof before, "%s", cus_last_error_message());
    int n = 0;
    assert_ok(cus_device_count(&n));
    assert_ok(cus_device_get(0, &d));
    char name[64];
    assert_ok(cus_device_name(d, name, sizeof name));
    assert_int_equal(cus_last_status(), CUDA_ERROR_INVALID_DEVICE);
    assert_string_equal(cus_last_error()->function, "cus_device_get");
    assert_string_equal(cus_last_error()->driver_call, "cuDeviceGet");
    assert_string_equal(cus_last_error_message(), before);
}

static void test_a_later_failure_overwrites_the_record(void **state)
{
    (void)state;
    cus_device d;
    assert_status(cus_device_get(9, &d), CU(CUDA_ERROR_INVALID_DEVICE));
    assert_status(cus_device_count(NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_string_equal(cus_last_error()->function, "cus_device_count");
    assert_string_equal(cus_last_error()->driver_call, "");
    assert_null(strstr(cus_last_error_message(), "cuDeviceGet"));
}

static void test_clear_last_error_forgets_it(void **state)
{
    (void)state;
    cus_device d;
    assert_status(cus_device_get(9, &d), CU(CUDA_ERROR_INVALID_DEVICE));
    cus_clear_last_error();
    assert_int_equal(cus_last_status(), CUS_SUCCESS);
    assert_int_equal(cus_last_error()->status, CUS_SUCCESS);
    assert_string_equal(cus_last_error()->function, "");
    assert_string_equal(cus_last_error()->driver_call, "");
    assert_string_equal(cus_last_error()->message, "");
    assert_string_equal(cus_last_error_message(), "");
}

typedef struct other_thread_result {
    cus_status returned;
    cus_status status_before, status_after;
    char function[64];
} other_thread_result;

static void *fail_on_other_thread(void *arg)
{
    other_thread_result *r = arg;
    r->status_before = cus_last_status();
    r->returned = cus_device_count(NULL);
    r->status_after = cus_last_status();
    snprintf(r->function, sizeof r->function, "%s", cus_last_error()->function);
    return NULL;
}

static void test_last_error_is_per_thread(void **state)
{
    (void)state;
    cus_device d;
    assert_status(cus_device_get(9, &d), CU(CUDA_ERROR_INVALID_DEVICE));
    other_thread_result r;
    memset(&r, 0, sizeof r);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, fail_on_other_thread, &r), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(r.status_before, CUS_SUCCESS); /* not this thread's record */
    assert_int_equal(r.returned, CUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(r.status_after, CUS_ERROR_INVALID_ARGUMENT);
    assert_string_equal(r.function, "cus_device_count");
    /* This thread's record is untouched by the other thread's failure. */
    assert_int_equal(cus_last_status(), CUDA_ERROR_INVALID_DEVICE);
    assert_string_equal(cus_last_error()->function, "cus_device_get");
}

/* --- the destroy-error handler -------------------------------------------------- */

typedef struct handler_log {
    unsigned long calls;
    cus_status status;
    char function[64];
    char message[512];
    void *user_data;
} handler_log;

static void log_handler(const cus_error *e, void *user_data)
{
    handler_log *log = user_data;
    log->calls++;
    log->status = e->status;
    log->user_data = user_data;
    snprintf(log->function, sizeof log->function, "%s", e->function);
    snprintf(log->message, sizeof log->message, "%s", e->message);
}

/* Produces one destroy error: a guard that finds another context on top. */
static void raise_one_destroy_error(void)
{
    cus_context *a = NULL, *b = NULL;
    assert_ok(cus_context_create(dev0(), CUS_CTX_NO_PUSH, &a));
    assert_ok(cus_context_create(dev0(), CUS_CTX_NO_PUSH, &b));
    {
        cus_context_scope(g, a);
        assert_ok(g.status);
        assert_ok(cus_context_push(b)); /* never popped inside the scope */
    }
    assert_ok(cus_context_pop(NULL));
    assert_ok(cus_context_pop(NULL));
    a = cus_context_unref(a);
    b = cus_context_unref(b);
}

static void test_destroy_handler_receives_each_error_with_its_user_data(void **state)
{
    (void)state;
    handler_log log;
    memset(&log, 0, sizeof log);
    cus_set_destroy_error_handler(log_handler, &log);
    unsigned long count = cus_destroy_error_count();
    cus_clear_last_error();

    raise_one_destroy_error();
    assert_int_equal(log.calls, 1);
    assert_ptr_equal(log.user_data, &log);
    assert_int_equal(log.status, CUS_ERROR_CONTEXT_MISMATCH);
    assert_string_equal(log.function, "cus_context_guard_exit");
    assert_true(log.message[0] != '\0');
    assert_int_equal(cus_destroy_error_count(), count + 1);
    /* Destroy errors never touch the thread's last error. */
    assert_int_equal(cus_last_status(), CUS_SUCCESS);

    raise_one_destroy_error();
    assert_int_equal(log.calls, 2);
    assert_int_equal(cus_destroy_error_count(), count + 2);
    assert_int_equal(env_destroyed.count, 0); /* the env's handler was replaced */
}

static void test_unset_destroy_handler_stops_delivery_but_still_counts(void **state)
{
    (void)state;
    handler_log log;
    memset(&log, 0, sizeof log);
    cus_set_destroy_error_handler(log_handler, &log);
    cus_set_destroy_error_handler(NULL, NULL); /* back to the default: one line on stderr */
    unsigned long count = cus_destroy_error_count();
    raise_one_destroy_error();
    assert_int_equal(log.calls, 0);
    assert_int_equal(env_destroyed.count, 0);
    assert_int_equal(cus_destroy_error_count(), count + 1);
}

static void test_destroy_error_count_increments_through_the_env_handler(void **state)
{
    (void)state;
    unsigned long count = cus_destroy_error_count();
    raise_one_destroy_error();
    assert_int_equal(env_destroyed.count, 1);
    assert_int_equal(env_destroyed.last_status, CUS_ERROR_CONTEXT_MISMATCH);
    assert_int_equal(cus_destroy_error_count(), count + 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_success_is_named_cus_success),
        ENV_TEST(test_every_own_code_has_its_map_name_and_description),
        ENV_TEST(test_own_codes_are_distinct),
        ENV_TEST(test_cuda_codes_keep_their_cuda_h_names),
        ENV_TEST(test_unknown_codes_are_named_cus_unknown_status),
        ENV_TEST(test_status_names_make_no_driver_call),
        ENV_TEST(test_unknown_codes_are_asked_of_a_loaded_driver),
        ENV_TEST(test_sticky_codes_are_700_710_and_714_to_719),
        ENV_TEST(test_fresh_thread_has_an_empty_record),
        ENV_TEST(test_failing_driver_call_records_status_function_call_and_message),
        ENV_TEST(test_argument_failure_records_no_driver_call),
        ENV_TEST(test_injected_driver_failure_is_recorded_with_its_code),
        ENV_TEST(test_success_leaves_the_last_error_alone),
        ENV_TEST(test_a_later_failure_overwrites_the_record),
        ENV_TEST(test_clear_last_error_forgets_it),
        ENV_TEST(test_last_error_is_per_thread),
        ENV_TEST(test_destroy_handler_receives_each_error_with_its_user_data),
        ENV_TEST(test_unset_destroy_handler_stops_delivery_but_still_counts),
        ENV_TEST(test_destroy_error_count_increments_through_the_env_handler),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
