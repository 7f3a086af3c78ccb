/* The fault sweep (SQLite's OOM and I/O-error loops, applied to the driver):
 * run a scenario once to count its driver calls, then rerun it failing the
 * 1st, 2nd, ... call until it completes untouched, once with a transient
 * failure and once with a persistent one (every call from the k-th on fails).
 *
 * After every run the sweep asserts:
 *   - the failure surfaced: the scenario returned an error status, with the
 *     thread's last error naming it, or the destroy handler received it;
 *   - cuscope's mirror of the context stack matches the fake driver's stack
 *     (depth and top): no failure leaves them out of step;
 *   - after popping what the run left pushed, no cuscope object is alive and
 *     (transient runs) no fake handle is alive: nothing leaked.
 *
 * A scenario starts with the fake installed and cuscope not yet loaded, so
 * the loader's own calls are part of every sweep. It returns its first failing
 * status and releases everything it made on every path (cus_autoptr). */
#ifndef CUSCOPE_TEST_SWEEP_H
#define CUSCOPE_TEST_SWEEP_H

#include <cuscope/cuscope.h>
#include <cuscope/fake.h>

typedef cus_status (*sweep_scenario)(void *arg);

typedef struct sweep_stats {
    unsigned long scenarios;
    unsigned long failure_points; /* driver calls failed, transient + persistent */
    unsigned long distinct_sites;  /* distinct entry points failed at least once */
    unsigned long alloc_scenarios;      /* sweep_run_alloc() runs */
    unsigned long alloc_failure_points; /* host allocations failed, transient + persistent */
    unsigned long alloc_absorbed;       /* of them, runs in which cuscope absorbed one */
} sweep_stats;

/* Runs the sweep over one scenario; fails the current cmocka test on any
 * violation. cfg: the fake's configuration (NULL: defaults). */
void sweep_run(const char *name, sweep_scenario fn, void *arg, const cus_fake_config *cfg);

/* The same loop over cuscope's host allocations (cus_debug_fail_host_alloc):
 * the k-th allocation fails, once and from then on; the scenario must return
 * CUS_ERROR_OUT_OF_HOST_MEMORY (recorded as the last error), report it to the
 * destroy handler from a release, or (cus_debug_host_alloc_absorbed) absorb
 * it by design and succeed; and keep the stacks in step and leak nothing. */
void sweep_run_alloc(const char *name, sweep_scenario fn, void *arg, const cus_fake_config *cfg);

/* Totals over every sweep_run() in this process. */
const sweep_stats *sweep_totals(void);
/* Prints the totals and the entry points failed, one line each. */
void sweep_report(void);

#endif
