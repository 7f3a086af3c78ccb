#include "env.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(CUS_TEST_FAKE) && defined(CUS_TEST_HAVE_KERNELS)
#include "twins.h"

/* The host twins of kernels/ go with every install, so that a launch on the
 * fake computes what the GPU computes; the fault sweep installs through
 * env_setup_with() too. (A test that needs the fake's kernel registry
 * empty installs the fake again.) */
static int register_twins(void)
{
    if (twins_register() != CUS_SUCCESS) {
        fprintf(stderr, "env: registering the host twins of kernels/ failed\n");
        return -1;
    }
    return 0;
}
#endif

env_destroy_log env_destroyed;

static void record_destroy_error(const cus_error *e, void *data)
{
    (void)data;
    env_destroyed.count++;
    env_destroyed.last_status = e->status;
    snprintf(env_destroyed.last_message, sizeof env_destroyed.last_message, "%s", e->message);
    snprintf(env_destroyed.last_function, sizeof env_destroyed.last_function, "%s", e->function);
    snprintf(env_destroyed.last_driver_call, sizeof env_destroyed.last_driver_call, "%s",
             e->driver_call);
}

#ifdef CUS_TEST_FAKE
#endif

int env_setup_with(const void *fake_cfg)
{
    memset(&env_destroyed, 0, sizeof env_destroyed);
    cus_set_destroy_error_handler(record_destroy_error, NULL);
    cus_clear_last_error();
#ifdef CUS_TEST_FAKE
    cus_status st = cus_fake_install((const cus_fake_config *)fake_cfg);
    if (st) {
        fprintf(stderr, "cus_fake_install: %s\n", cus_last_error_message());
        return -1;
    }
#if defined(CUS_TEST_HAVE_KERNELS)
    if (register_twins() != 0)
        return -1;
#endif
#else
    (void)fake_cfg;
    if (cus_init()) {
        fprintf(stderr, "cus_init: %s\n", cus_last_error_message());
        return -1;
    }
#endif
    return 0;
}

int env_setup(void **state)
{
    (void)state;
    return env_setup_with(NULL);
}

int env_teardown(void **state)
{
    (void)state;
    unsigned int depth = cus_context_stack_depth();
    while (cus_context_stack_depth() && cus_context_pop(NULL) == CUS_SUCCESS)
        ;
    assert_int_equal(depth, 0);
    assert_int_equal(cus_debug_live_objects(), 0);
#ifdef CUS_TEST_FAKE
    assert_int_equal(cus_fake_thread_stack_depth(), 0);
    if (cus_fake_misuse_count())
        fail_msg("fake driver misuse: %s", cus_fake_last_misuse());
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
#endif
    cus_set_destroy_error_handler(NULL, NULL);
    return 0;
}

void env_require_driver_or_skip(void)
{
#ifndef CUS_TEST_FAKE
    cus_status st = cus_init();
    if (st != CUS_SUCCESS) {
        printf("skipping: no usable CUDA driver or device: %s\n", cus_last_error_message());
        exit(77);
    }
#endif
}
