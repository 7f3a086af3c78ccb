/* Scenarios written once and run on both drivers: as plain tests on the fake
 * (unit) and the real driver (gpu), and under the fault sweep on the fake.
 * Each uses only the public API, returns its first failing status, checks
 * what it can observe (a wrong observation returns SCN_WRONG), and releases
 * everything it made on every path. */
#ifndef CUSCOPE_TEST_SCENARIOS_H
#define CUSCOPE_TEST_SCENARIOS_H

#include <cuscope/cuscope.h>

/* Returned when a scenario observes a wrong result (not a driver error). */
#define SCN_WRONG 19999

typedef struct scenario {
    const char *name;
    cus_status (*run)(void *arg);
} scenario;

/* NULL-terminated. */
extern const scenario context_scenarios[];
extern const scenario stream_scenarios[];
/* Kernels of kernels/ in modules and launches (empty without nvcc). */
extern const scenario module_scenarios[];
/* Memory pools: allocation from a pool, its accounting and trim. */
extern const scenario pool_scenarios[];
/* Stream capture, graphs and their replay. */
extern const scenario graph_scenarios[];
/* Several devices: each needs two or more (with one it passes doing nothing).
 * multi_fake_devices(): how many devices the fake gets for one of them. */
extern const scenario multi_scenarios[];
int multi_fake_devices(const scenario *s);
/* Virtual memory: reservations, mappings, the growable buffer. */
extern const scenario vmm_scenarios[];
/* Libraries (cuscope/library.h): a kernel launched on a stream (empty
 * without nvcc; passes doing nothing before a 12.0 driver). */
extern const scenario library_scenarios[];

#endif
