/* Test environment shared by every suite: the driver under test (the fake for
 * the unit suite, the real one for the gpu suite), a destroy-error recorder,
 * and the teardown checks that every test must pass: no live cuscope object,
 * an empty context stack, and (on the fake) no live handle and no misuse. */
#ifndef CUSCOPE_TEST_ENV_H
#define CUSCOPE_TEST_ENV_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <cuscope/cuscope.h>
#ifdef CUS_TEST_FAKE
#include <cuscope/fake.h>
#endif

/* The destroy handler's record of what it received. */
typedef struct env_destroy_log {
    unsigned long count;
    cus_status last_status;
    char last_message[512];
    char last_function[64];    /* the last report's cus_error.function */
    char last_driver_call[64]; /* the last report's cus_error.driver_call */
} env_destroy_log;
extern env_destroy_log env_destroyed;

/* Asserts that the destroy handler got exactly one report since it counted
 * `before`, and that it names `function` (the public function the user
 * called) and the driver call cuCtxPopCurrent: what a temporary switch whose
 * closing pop keeps failing reports (docs/design.md, "Temporary switches"). */
#define env_assert_one_pop_report(before, function)                            \
    do {                                                                       \
        if (env_destroyed.count != (before) + 1)                               \
            fail_msg("%lu destroy report(s), want 1 (last: %s)",               \
                     env_destroyed.count - (before), env_destroyed.last_message); \
        assert_string_equal(env_destroyed.last_function, (function));          \
        assert_string_equal(env_destroyed.last_driver_call, "cuCtxPopCurrent"); \
    } while (0)

/* Installs the fake with cfg (NULL: defaults) or, for the gpu suite, checks
 * the real driver; resets the destroy log. Returns 0 or -1 (cmocka setup). */
int env_setup_with(const void *fake_cfg);
int env_setup(void **state);
/* Asserts the invariants above, then puts the stack back to empty. */
int env_teardown(void **state);
/* For gpu mains: exits 77 (skipped) when there is no usable driver or device. */
void env_require_driver_or_skip(void);

/* Asserts that status is CUS_SUCCESS, printing the last error otherwise. */
#define assert_ok(expr)                                                        \
    do {                                                                       \
        cus_status st_ = (expr);                                               \
        if (st_ != CUS_SUCCESS)                                                \
            fail_msg("%s -> %s: %s", #expr, cus_status_name(st_), cus_last_error_message()); \
    } while (0)

/* Asserts that expr returns want, and that the last error records it. */
#define assert_status(expr, want)                                              \
    do {                                                                       \
        cus_status st_ = (expr);                                               \
        cus_status want_ = (cus_status)(want);                                 \
        if (st_ != want_)                                                      \
            fail_msg("%s -> %s, expected %s (%s)", #expr, cus_status_name(st_), \
                     cus_status_name(want_), cus_last_error_message());        \
        if (want_ != CUS_SUCCESS)                                              \
            assert_int_equal(cus_last_status(), want_);                        \
    } while (0)

#define ENV_TEST(f) cmocka_unit_test_setup_teardown(f, env_setup, env_teardown)

#endif
