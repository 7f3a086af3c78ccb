/* Scenarios written once and run on both drivers: as plain tests on the fake
 * (unit) and the real driver (gpu), and under the fault sweep on the fake.
 * Each uses only the public API, returns its first failing status, checks
 * what it can observe (a wrong observation returns SCN_WRONG), and releases
 * everything it made on every path. */
#ifndef CUSCOPE_TEST_SCENARIOS_H
#define CUSCOPE_TEST_SCENARIOS_H

#include <stdarg.h>
#include <stdio.h>

#include <cuscope/cuscope.h>

/* Returned when a scenario observes a wrong result (not a driver error). */
#define SCN_WRONG 19999
/* Returned when a scenario cannot run here: a driver older than the feature
 * it needs, a device below the compute capability or with fewer SMs than it
 * needs. It says why on stderr first (scn_skip). The gpu suite reports the
 * scenario skipped; on the fake, which has all of it, and under the sweep
 * it is a failure. Decided only from what a call answered successfully or
 * from CUS_ERROR_NOT_SUPPORTED, which the sweep never injects. */
#define SCN_SKIP 19998

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
/* The newer groups, one scenario each: a WHILE conditional node counting
 * down, launch attributes (priority and programmatic serialization), green
 * contexts with their context-wide events, a tiled tensor map and its
 * rebinding, a JIT link of PTX. Those that need kernels of kernels/ are
 * left out without nvcc; each returns SCN_SKIP where the driver or the
 * device cannot run it. */
extern const scenario advanced_scenarios[];

/* Prints why a scenario skips ("name: skipped: ..."), returns SCN_SKIP. */
__attribute__((format(printf, 2, 3))) static inline cus_status scn_skip(const char *name,
                                                                       const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: skipped: ", name);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return (cus_status)SCN_SKIP;
}

#endif
