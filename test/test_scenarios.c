/* The shared scenarios as plain tests: on the fake driver (unit suite) or on
 * the real one (gpu suite; exits 77 without a driver or device). */
#include "harness/env.h"
#include "scenarios/scenarios.h"

static void run_scenario(void **state)
{
    const scenario *s = *state;
    cus_status st = s->run(NULL);
    if (st != CUS_SUCCESS)
        fail_msg("scenario %s: %s: %s", s->name, cus_status_name(st), cus_last_error_message());
}

static int scenario_setup(void **state)
{
    (void)state;
    return env_setup_with(NULL);
}

int main(void)
{
    env_require_driver_or_skip();
    struct CMUnitTest tests[128];
    size_t n = 0;
    static const scenario *const lists[] = {context_scenarios, stream_scenarios,
                                                module_scenarios, graph_scenarios};
    for (size_t l = 0; l < sizeof lists / sizeof lists[0]; l++) {
        for (const scenario *s = lists[l]; s->name && n < 128; s++, n++) {
            tests[n] = (struct CMUnitTest){s->name, run_scenario, scenario_setup, env_teardown,
                                           (void *)s};
        }
    }
    return _cmocka_run_group_tests("scenarios", tests, n, NULL, NULL);
}
