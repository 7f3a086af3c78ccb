/* Helpers shared by the tests of cuscope objects on the fake (streams,
 * events, host functions, memory, modules, launches, graphs ...). */
#ifndef CUSCOPE_TEST_STREAM_COMMON_H
#define CUSCOPE_TEST_STREAM_COMMON_H

#include <stdatomic.h>
#include <string.h>

#include <cuscope/event.h>
#include <cuscope/stream.h>

#include "harness/check.h"
#include "harness/env.h"

#define CU(x) ((cus_status)(x))
/* A plain, non-sticky driver failure. */
#define FAULT CUDA_ERROR_NOT_PERMITTED

static const cus_fake_config two_devices = {.device_count = 2};

static inline int setup_two_devices(void **state)
{
    (void)state;
    return env_setup_with(&two_devices);
}

#define TWO_DEV_TEST(f) cmocka_unit_test_setup_teardown(f, setup_two_devices, env_teardown)

static inline cus_device dev_at(int ordinal)
{
    cus_device d = {-1};
    assert_ok(cus_device_get(ordinal, &d));
    return d;
}

/* An owned context that is not pushed. */
static inline cus_context *new_ctx(void)
{
    cus_context *c = NULL;
    assert_ok(cus_context_create(dev_at(0), CUS_CTX_NO_PUSH, &c));
    return c;
}

static inline cus_context *new_primary(void)
{
    cus_context *c = NULL;
    assert_ok(cus_context_retain_primary(dev_at(0), &c));
    return c;
}

static inline cus_stream *new_stream(cus_context *c, unsigned int flags)
{
    cus_stream *s = NULL;
    assert_ok(cus_stream_create(c, flags, 0, &s));
    assert_non_null(s);
    return s;
}

static inline cus_event *new_event(cus_context *c, unsigned int flags)
{
    cus_event *e = NULL;
    assert_ok(cus_event_create(c, flags, &e));
    assert_non_null(e);
    return e;
}

typedef struct stack_snap {
    unsigned int depth;
    int fake_depth;
    cus_context *top;
    CUcontext fake_top;
} stack_snap;

static inline stack_snap snap(void)
{
    stack_snap s;
    s.depth = cus_context_stack_depth();
    s.fake_depth = cus_fake_thread_stack_depth();
    s.top = cus_context_current();
    s.fake_top = s.fake_depth ? cus_fake_thread_stack_at(s.fake_depth - 1) : NULL;
    return s;
}

#define assert_stack_unchanged(before)                                         \
    do {                                                                       \
        stack_snap now_ = snap();                                              \
        if (now_.depth != (before).depth || now_.fake_depth != (before).fake_depth || \
            now_.top != (before).top || now_.fake_top != (before).fake_top)    \
            fail_msg("stack changed: depth %u/%d -> %u/%d", (before).depth,    \
                     (before).fake_depth, now_.depth, now_.fake_depth);        \
    } while (0)

/* What a failing call must leave alone. */
typedef struct leak_snap {
    stack_snap stack;
    size_t objects;
    size_t handles;
} leak_snap;

static inline leak_snap leak_snap_now(void)
{
    return (leak_snap){snap(), cus_debug_live_objects(),
                       cus_fake_live_handles(CUS_FAKE_HANDLE_ANY)};
}

#define assert_nothing_changed(before)                                         \
    do {                                                                       \
        assert_stack_unchanged((before).stack);                                \
        assert_int_equal(cus_debug_live_objects(), (before).objects);          \
        assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), (before).handles); \
    } while (0)

/* Arms a one-shot fault on `entry`, runs `expr`, and checks that it returned
 * the injected code, that the fault fired and that nothing changed. */
#define assert_fault_surfaces(entry, expr)                                     \
    do {                                                                       \
        leak_snap before_ = leak_snap_now();                                   \
        unsigned long fired_ = cus_fake_faults_fired();                        \
        assert_ok(cus_fake_fail_entry((entry), 1, FAULT, false));              \
        cus_status got_ = (expr);                                              \
        cus_fake_clear_faults();                                               \
        if (cus_fake_faults_fired() != fired_ + 1)                             \
            fail_msg("%s: the fault on %s did not fire", #expr, (entry));      \
        if (got_ != CU(FAULT))                                                 \
            fail_msg("%s with %s failing -> %s (%s)", #expr, (entry),          \
                     cus_status_name(got_), cus_last_error_message());         \
        assert_int_equal(cus_last_status(), CU(FAULT));                        \
        assert_nothing_changed(before_);                                       \
    } while (0)


#endif
