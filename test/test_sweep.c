/* The fault sweep over every shared scenario, on the fake driver. */
#include <string.h>

#include "harness/env.h"
#include "harness/sweep.h"
#include "scenarios/scenarios.h"

static void sweep_scenario_test(void **state)
{
    const scenario *s = *state;
    sweep_run(s->name, s->run, NULL, NULL);
    sweep_run_alloc(s->name, s->run, NULL, NULL);
}

/* The multi list: the fake with two devices or more (multi_fake_devices). */
static void sweep_scenario_multi(void **state)
{
    const scenario *s = *state;
    cus_fake_config cfg = {.device_count = multi_fake_devices(s)};
    sweep_run(s->name, s->run, NULL, &cfg);
    sweep_run_alloc(s->name, s->run, NULL, &cfg);
}

/* The scenarios again, impersonating a 12.0 driver (no cuCtxCreate_v4): the
 * older creation ABI's failure paths. */
static void sweep_scenario_old_driver(void **state)
{
    const scenario *s = *state;
    cus_fake_config cfg = {.driver_version = 12000};
    sweep_run(s->name, s->run, NULL, &cfg);
}

/* The green scenarios again, impersonating a 12.4 driver (no
 * cuGreenCtxStreamCreate): a green context's streams are then made with it
 * pushed, whose switch's failure paths this reaches. */
static void sweep_scenario_12_4_driver(void **state)
{
    const scenario *s = *state;
    cus_fake_config cfg = {.driver_version = 12040};
    sweep_run(s->name, s->run, NULL, &cfg);
}

/* No argument: every list. A list's name: that list only (meson runs each
 * list as its own test, so that each reports separately). */
int main(int argc, char **argv)
{
    struct CMUnitTest tests[256];
    size_t n = 0;
    static const scenario *const lists[] = {context_scenarios, stream_scenarios,
                                                module_scenarios, graph_scenarios,
                                                multi_scenarios, pool_scenarios,
                                                vmm_scenarios, library_scenarios,
                                                advanced_scenarios};
    static const char *const list_names[] = {"context", "stream", "module", "graph", "multi",
                                             "pool", "vmm", "library", "advanced"};
    for (size_t l = 0; l < sizeof lists / sizeof lists[0]; l++) {
        if (argc > 1 && strcmp(argv[1], list_names[l]) != 0)
            continue;
        bool multi = lists[l] == multi_scenarios;
        for (const scenario *s = lists[l]; s->name && n < 254; s++) {
            /* A fault on a scenario's own threads lands in their last-error
             * records, which the sweep cannot see: test_multi_device.c
             * injects those faults instead. */
            if (multi && strstr(s->name, "thread"))
                continue;
            tests[n++] = (struct CMUnitTest){s->name,
                                             multi ? sweep_scenario_multi : sweep_scenario_test,
                                             NULL, env_teardown, (void *)s};
            if (strstr(s->name, "create") || strstr(s->name, "guards"))
                tests[n++] = (struct CMUnitTest){s->name, sweep_scenario_old_driver, NULL,
                                                 env_teardown, (void *)s};
            if (strncmp(s->name, "green", 5) == 0 && n < 254)
                tests[n++] = (struct CMUnitTest){s->name, sweep_scenario_12_4_driver, NULL,
                                                 env_teardown, (void *)s};
        }
    }
    int failed = _cmocka_run_group_tests("sweep", tests, n, NULL, NULL);
    sweep_report();
    return failed;
}
