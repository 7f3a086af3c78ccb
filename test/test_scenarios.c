/* The shared scenarios as plain tests: on the fake driver (unit suite) or on
 * the real one (gpu suite; exits 77 without a driver or device). On the real
 * one a scenario that returns SCN_SKIP is reported skipped; on the fake it
 * fails, as any status but success does. On the fake, synchronous memsets
 * are left queued as a GPU may leave them (cus_fake_set_sync_memsets_deferred),
 * so that a scenario ordering a legacy-stream fill before a non-blocking
 * stream's work fails here as it may on the GPU. (The fault sweep runs them
 * with the fills at the call: an injected failure between a fill and the
 * wait for it leaves the fill queued, and a release that unmaps without
 * waiting, a VMM reservation's, would then be a use after unmap.) */
#include "harness/env.h"
#include "scenarios/scenarios.h"

/* A scenario and the number of devices the fake gets for it (0: the default
 * of one; the multi list's need two or more). */
typedef struct scenario_entry {
    const scenario *s;
    int fake_devices;
} scenario_entry;

static void run_scenario(void **state)
{
    const scenario *s = ((const scenario_entry *)*state)->s;
    cus_status st = s->run(NULL);
#ifndef CUS_TEST_FAKE
    /* The real driver or device lacks what it needs: it said why. */
    if (st == SCN_SKIP)
        skip();
#endif
    if (st != CUS_SUCCESS)
        fail_msg("scenario %s: %s: %s", s->name, cus_status_name(st), cus_last_error_message());
}

static int scenario_setup(void **state)
{
    const scenario_entry *e = *state;
#ifdef CUS_TEST_FAKE
    if (e->fake_devices) {
        cus_fake_config cfg = {.device_count = e->fake_devices};
        int r = env_setup_with(&cfg);
        if (r == 0)
            cus_fake_set_sync_memsets_deferred(true);
        return r;
    }
#endif
    (void)e;
    int r = env_setup_with(NULL);
#ifdef CUS_TEST_FAKE
    if (r == 0)
        cus_fake_set_sync_memsets_deferred(true);
#endif
    return r;
}

int main(void)
{
    env_require_driver_or_skip();
    struct CMUnitTest tests[128];
    static scenario_entry entries[128];
    size_t n = 0;
    static const scenario *const lists[] = {context_scenarios, stream_scenarios,
                                                module_scenarios, graph_scenarios,
                                                multi_scenarios, pool_scenarios,
                                                vmm_scenarios, library_scenarios,
                                                advanced_scenarios};
    for (size_t l = 0; l < sizeof lists / sizeof lists[0]; l++) {
        for (const scenario *s = lists[l]; s->name && n < 128; s++, n++) {
            int devices = lists[l] == multi_scenarios ? multi_fake_devices(s) : 0;
            entries[n] = (scenario_entry){s, devices};
            tests[n] = (struct CMUnitTest){s->name, run_scenario, scenario_setup, env_teardown,
                                           &entries[n]};
        }
    }
    return _cmocka_run_group_tests("scenarios", tests, n, NULL, NULL);
}
