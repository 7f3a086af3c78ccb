#include "sweep.h"
#include "check.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "env.h"
#include "../scenarios/scenarios.h"

#include <cudaTypedefs.h>

#define INJECTED CUDA_ERROR_UNKNOWN
#define MAX_SITES 128

static sweep_stats totals;
static char sites[MAX_SITES][48];
static unsigned long site_hits[MAX_SITES];
static unsigned site_count;

static void note_site(const char *name)
{
    if (!name)
        return;
    for (unsigned i = 0; i < site_count; i++)
        if (strcmp(sites[i], name) == 0) {
            site_hits[i]++;
            return;
        }
    if (site_count < MAX_SITES) {
        snprintf(sites[site_count], sizeof sites[0], "%s", name);
        site_hits[site_count++] = 1;
    }
}

/* The mirror and the fake's stack agree in depth and top. */
static void check_stacks_agree(const char *name, unsigned long k, const char *mode)
{
    unsigned int depth = cus_context_stack_depth();
    int fake_depth = cus_fake_thread_stack_depth();
    if ((int)depth != fake_depth)
        fail_msg("sweep %s, %s failure of call %lu: cuscope's stack is %u deep, the driver's %d",
                 name, mode, k, depth, fake_depth);
    if (depth) {
        CUcontext top = cus_context_handle(cus_context_current());
        if (top != cus_fake_thread_stack_at(fake_depth - 1))
            fail_msg("sweep %s, %s failure of call %lu: cuscope's top %p is not the driver's %p",
                     name, mode, k, (void *)top, (void *)cus_fake_thread_stack_at(fake_depth - 1));
    }
}

/* Pops whatever a failed run left pushed (a failed pop keeps its entry, as
 * the driver does), and checks that nothing is left alive. */
/* The entry point the current run failed (named in drain_and_check's
 * messages), or NULL. */
static const char *drain_failed;

static void drain_and_check(const char *name, unsigned long k, const char *mode, bool persistent)
{
    /* Let the "GPU" finish what a failed run left queued (host functions
     * among it), as a real device eventually would. */
    cus_fake_run_streams();
    while (cus_context_stack_depth())
        if (cus_context_pop(NULL) != CUS_SUCCESS)
            fail_msg("sweep %s, %s failure of call %lu: cannot pop after the run: %s", name,
                     mode, k, cus_last_error_message());
    if (cus_debug_live_objects())
        fail_msg("sweep %s, %s failure of call %lu: %zu cuscope object(s) leaked", name, mode, k,
                 cus_debug_live_objects());
    /* A failed cuCtxDestroy or primary release leaves its driver handle
     * behind: allowed only when each one reached the destroy handler. What
     * such a handle holds stays with it and counts with it: a green
     * context's retain of its device's primary context (a failed
     * cuGreenCtxDestroy leaves both), a graph's conditional bodies (graphs
     * the driver owns, which go with their root: a failed cuGraphDestroy of
     * a root leaves them all; counted here as one graph). */
    size_t handles = cus_fake_live_handles(CUS_FAKE_HANDLE_ANY);
    size_t green = cus_fake_live_handles(CUS_FAKE_HANDLE_GREEN_CONTEXT);
    size_t primary = cus_fake_live_handles(CUS_FAKE_HANDLE_PRIMARY_CONTEXT);
    size_t graphs = cus_fake_live_handles(CUS_FAKE_HANDLE_GRAPH);
    size_t held = (green < primary ? green : primary) + (graphs ? graphs - 1 : 0);
    if (handles - held > env_destroyed.count)
        fail_msg("sweep %s, %s failure of call %lu (%s): %zu fake handle(s) leaked", name, mode,
                 k, drain_failed ? drain_failed : "none", handles);
    if (!persistent && cus_fake_misuse_count())
        fail_msg("sweep %s, %s failure of call %lu: driver misuse: %s", name, mode, k,
                 cus_fake_last_misuse());
}

static void install(const char *name, const cus_fake_config *cfg)
{
    /* A persistent run can leave fake handles behind: a fresh install drops them. */
    if (env_setup_with(cfg) != 0)
        fail_msg("sweep %s: cannot install the fake driver", name);
}

void sweep_run(const char *name, sweep_scenario fn, void *arg, const cus_fake_config *cfg)
{
    install(name, cfg);
    cus_status st = fn(arg);
    if (st != CUS_SUCCESS)
        fail_msg("sweep %s: the scenario fails without faults: %s", name, cus_last_error_message());
    unsigned long calls = cus_fake_call_count();
    unsigned long baseline_pops = cus_fake_calls_of("cuCtxPopCurrent");
    check_stacks_agree(name, 0, "no");
    drain_and_check(name, 0, "no", false);
    totals.scenarios++;

    for (int mode = 0; mode < 2; mode++) {
        bool persistent = mode == 1;
        const char *mode_name = persistent ? "persistent" : "transient";
        for (unsigned long k = 1;; k++) {
            if (k > calls + 1)
                fail_msg("sweep %s: still failing at call %lu of %lu", name, k, calls);
            install(name, cfg);
            cus_fake_fail_call(k, INJECTED, persistent);
            cus_clear_last_error();
            st = fn(arg);
            unsigned long fired = cus_fake_faults_fired();
            const char *failed = cus_fake_call_name(k - 1);
            cus_fake_clear_faults();
            if (fired == 0) {
                if (st != CUS_SUCCESS)
                    fail_msg("sweep %s: with no fault fired the scenario failed: %s", name,
                             cus_last_error_message());
                drain_and_check(name, k, mode_name, persistent);
                break;
            }
            totals.failure_points++;
            note_site(failed);
            /* cuscope retries a pop that undoes its own push (a temporary
             * switch, a guard's exit) once: a transient pop failure is then
             * absorbed, which shows as exactly one extra pop. */
            bool absorbed = !persistent && failed && strcmp(failed, "cuCtxPopCurrent") == 0 &&
                            cus_fake_calls_of("cuCtxPopCurrent") == baseline_pops + 1;
            /* A cleanup's failure (a guard's pop) cannot be returned: once it
             * reached the destroy handler, the scenario may see its effect. */
            if (st == SCN_WRONG && env_destroyed.count)
                st = CUS_ERROR_CONTEXT_MISMATCH;
            else if (st == SCN_WRONG)
                fail_msg("sweep %s: %s failure of call %lu (%s) made the scenario observe a "
                         "wrong result",
                         name, mode_name, k, failed ? failed : "?");
            if (st == CUS_SUCCESS && env_destroyed.count == 0 && !absorbed)
                fail_msg("sweep %s: %s failure of call %lu (%s) was swallowed: the scenario "
                         "succeeded and nothing reached the destroy handler",
                         name, mode_name, k, failed ? failed : "?");
            if (st != CUS_SUCCESS && st != CUS_ERROR_CONTEXT_MISMATCH && cus_last_status() != st)
                fail_msg("sweep %s: %s failure of call %lu (%s): returned %s but the last "
                         "error records %s",
                         name, mode_name, k, failed ? failed : "?", cus_status_name(st),
                         cus_status_name(cus_last_status()));
            if (st != CUS_SUCCESS && st != INJECTED && st < 10000)
                fail_msg("sweep %s: %s failure of call %lu (%s): returned %s, not the injected "
                         "%s",
                         name, mode_name, k, failed ? failed : "?", cus_status_name(st),
                         cus_status_name(INJECTED));
            drain_failed = failed;
            if (persistent)
                reconcile_fake_stack(); /* a pop that kept failing stays on the driver */
            else
                check_stacks_agree(name, k, mode_name);
            drain_and_check(name, k, mode_name, persistent);
        }
    }
    drain_failed = NULL;
    totals.distinct_sites = site_count;
    printf("sweep %-28s %3lu driver calls, each failed transiently and persistently\n", name,
           calls);
}

void sweep_run_alloc(const char *name, sweep_scenario fn, void *arg, const cus_fake_config *cfg)
{
    install(name, cfg);
    cus_debug_fail_host_alloc(ULONG_MAX, false); /* counts only */
    cus_status st = fn(arg);
    unsigned long allocs = cus_debug_host_allocs();
    cus_debug_fail_host_alloc(0, false);
    if (st != CUS_SUCCESS)
        fail_msg("alloc sweep %s: the scenario fails without faults: %s", name,
                 cus_last_error_message());
    drain_and_check(name, 0, "no", false);

    for (int mode = 0; mode < 2; mode++) {
        bool persistent = mode == 1;
        const char *mode_name = persistent ? "persistent host-allocation" : "host-allocation";
        for (unsigned long k = 1;; k++) {
            if (k > allocs + 1)
                fail_msg("alloc sweep %s: still failing at allocation %lu of %lu", name, k,
                         allocs);
            install(name, cfg);
            cus_clear_last_error();
            cus_debug_fail_host_alloc(k, persistent);
            st = fn(arg);
            unsigned long fired = cus_debug_host_alloc_faults();
            unsigned long absorbed = cus_debug_host_alloc_absorbed();
            cus_debug_fail_host_alloc(0, false);
            if (fired == 0) {
                if (st != CUS_SUCCESS)
                    fail_msg("alloc sweep %s: with no fault fired the scenario failed: %s", name,
                             cus_last_error_message());
                drain_and_check(name, k, mode_name, false);
                break;
            }
            totals.alloc_failure_points++;
            if (st == SCN_WRONG)
                fail_msg("alloc sweep %s: %s failure %lu made the scenario observe a wrong "
                         "result",
                         name, mode_name, k);
            /* A release cannot return its failure: it goes to the destroy
             * handler. Anything else must come back as the call's status. */
            totals.alloc_absorbed += absorbed != 0;
            if (st == CUS_SUCCESS && env_destroyed.count == 0 && !absorbed)
                fail_msg("alloc sweep %s: %s failure %lu was swallowed (not absorbed by design)",
                         name, mode_name, k);
            if (st != CUS_SUCCESS && st != CUS_ERROR_OUT_OF_HOST_MEMORY)
                fail_msg("alloc sweep %s: %s failure %lu: returned %s (%s), not "
                         "CUS_ERROR_OUT_OF_HOST_MEMORY",
                         name, mode_name, k, cus_status_name(st), cus_last_error_message());
            if (st != CUS_SUCCESS && cus_last_status() != st)
                fail_msg("alloc sweep %s: %s failure %lu: returned %s but the last error "
                         "records %s",
                         name, mode_name, k, cus_status_name(st),
                         cus_status_name(cus_last_status()));
            check_stacks_agree(name, k, mode_name);
            drain_and_check(name, k, mode_name, false);
        }
    }
    totals.alloc_scenarios++;
    printf("alloc sweep %-22s %3lu host allocations, each failed transiently and "
           "persistently\n",
           name, allocs);
}

const sweep_stats *sweep_totals(void)
{
    return &totals;
}

void sweep_report(void)
{
    if (totals.alloc_scenarios)
        printf("host-allocation sweep: %lu scenarios, %lu failure points (%lu absorbed by "
               "design)\n",
               totals.alloc_scenarios, totals.alloc_failure_points, totals.alloc_absorbed);
    printf("fault sweep: %lu scenarios, %lu failure points, %lu distinct entry points failed:\n",
           totals.scenarios, totals.failure_points, totals.distinct_sites);
    for (unsigned i = 0; i < site_count; i++)
        printf("  %-32s %lu\n", sites[i], site_hits[i]);
}
