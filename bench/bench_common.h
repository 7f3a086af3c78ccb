/* What the benchmarks in bench/ share: options, the driver (the real one, or
 * the fake when there is none), raw entry points resolved through the same
 * source cuscope loaded, clocks, statistics, the interleaved-block runner,
 * and a report printed as a table or as JSON.
 *
 * Method (every benchmark): the variants of one comparison run in the same
 * process, after a warm-up, interleaved in blocks (V0 V1 ... Vn-1, V0 V1 ...,
 * `blocks` rounds of `iters` calls each). A block is timed as a whole with
 * CLOCK_MONOTONIC; its per-call time is block time / iters. A variant may
 * also time each call on its own with the cheap clock (bench_ticks: the TSC
 * where it is invariant, else CLOCK_MONOTONIC). Ratios are cuscope/raw: the
 * ratio of the medians, and the spread (p5..p95) of the per-round ratio
 * (the cuscope block over the raw block of the same round). */
#ifndef CUSCOPE_BENCH_COMMON_H
#define CUSCOPE_BENCH_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cuscope/cuscope.h>

#define BENCH_NOINLINE __attribute__((noinline))

/* --- options ------------------------------------------------------------------ */

typedef struct bench_opts {
    bool json;  /* --json: JSON on stdout instead of the table */
    bool quick; /* --quick: a few hundred calls (CI checks that it runs) */
    int blocks; /* --blocks N; 0: the benchmark's default */
    int iters;  /* --iters N (calls per block); 0: the benchmark's default */
} bench_opts;

/* Parses the options above (and --help); prints usage and returns -1 on a bad
 * one. `extra` is a line of usage for the benchmark's own notes (may be NULL). */
int bench_parse_args(const char *prog, int argc, char **argv, bench_opts *o, const char *extra);
/* Takes `option LIST` (comma-separated counts from 1 to 100000, at most max)
 * out of argv, before bench_parse_args. Without the option, the defaults
 * (ndefaults of them). Returns the number of counts, or -1 on a bad list. */
int bench_take_counts(int *argc, char **argv, const char *option, int *counts, int max,
                      const int *defaults, int ndefaults);

/* --- the driver ---------------------------------------------------------------- */

typedef struct bench_env {
    const char *prog;
    bool fake;          /* running on cuscope's fake driver */
    const char *driver; /* "real" or "fake" */
    cus_driver_resolver resolve; /* where raw entry points come from */
    cus_device dev;     /* device 0 */
    char device_name[128];
    int version;        /* cuDriverGetVersion */
} bench_env;

/* cus_init(); without a driver, says so on stderr and installs the fake. Then
 * finds the resolver for raw entry points: cuGetProcAddress_v2 of the libcuda
 * cuscope loaded (dlopen RTLD_NOLOAD; CUSCOPE_LIBCUDA is honoured), or
 * cus_fake_get_proc_address on the fake. Returns 0, or -1 with a message. */
int bench_env_open(const char *prog, bench_env *env);

typedef struct bench_sym {
    const char *symbol; /* base name, as cuscope asks for it */
    int version;        /* the ABI version cuscope uses (lib/driver/entries.h) */
    void *dst;          /* a function pointer variable of the PFN_ type */
} bench_sym;

/* Resolves each symbol at its version with CU_GET_PROC_ADDRESS_LEGACY_STREAM,
 * as cuscope does, so the pointers are the ones cuscope calls. */
int bench_resolve(const bench_env *env, const bench_sym *syms, size_t n);

/* Prints "prog: what: <cuscope's last error>" on stderr and returns 1. */
int bench_fail(const bench_env *env, const char *what);

/* --- clocks -------------------------------------------------------------------- */

double bench_now_ns(void); /* CLOCK_MONOTONIC */

/* The cheap clock, for single calls: the TSC when the CPU says it is
 * invariant (constant_tsc and nonstop_tsc), calibrated against
 * CLOCK_MONOTONIC; otherwise CLOCK_MONOTONIC in ns. */
extern bool bench_use_tsc_;
uint64_t bench_clock_gettime_ns_(void);
static inline uint64_t bench_ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
    if (bench_use_tsc_)
        return __builtin_ia32_rdtsc();
#endif
    return bench_clock_gettime_ns_();
}
void bench_clock_init(void);      /* calibrates; bench_env_open calls it */
double bench_ticks_to_ns(double ticks);
const char *bench_clock_name(void); /* "tsc" or "clock_gettime" */
double bench_clock_overhead_ns(void); /* two back-to-back bench_ticks(), median */

/* Runs the statement (the rest of the arguments) `iters` times; when ticks is
 * not NULL, times each run on its own with bench_ticks (ticks[i]). */
#define BENCH_LOOP(iters, ticks, ...)                                         \
    do {                                                                       \
        if (ticks) {                                                           \
            for (int bench_i_ = 0; bench_i_ < (iters); bench_i_++) {           \
                uint64_t bench_t0_ = bench_ticks();                            \
                __VA_ARGS__;                                                   \
                (ticks)[bench_i_] = bench_ticks() - bench_t0_;                 \
            }                                                                  \
        } else {                                                               \
            for (int bench_i_ = 0; bench_i_ < (iters); bench_i_++) {           \
                __VA_ARGS__;                                                   \
            }                                                                  \
        }                                                                      \
    } while (0)

/* --- statistics ------------------------------------------------------------------ */

typedef struct bench_stats {
    int n;
    double median, p99, p5, p95, p1, min, max;
} bench_stats;

/* Percentiles (nearest rank) of v[0..n), which is left as it is. */
bench_stats bench_stats_of(const double *v, int n);

/* --- the runner -------------------------------------------------------------------- */

/* A variant's timed body: `iters` calls; ticks as in BENCH_LOOP. Must return
 * nonzero on failure (the run stops and reports it). */
typedef int (*bench_body_fn)(void *arg, int iters, uint64_t *ticks);

typedef struct bench_variant {
    const char *label;
    bench_body_fn body;
    void *arg;
    bool per_call; /* also time each call with the cheap clock */
    /* Results, after bench_run: */
    double *block_ns; /* [blocks]: block time / iters */
    double *call_ns;  /* [blocks * iters] when per_call */
    int nblocks, ncalls;
} bench_variant;

typedef struct bench_run {
    int blocks, iters;
    int warm_iters; /* calls of each body before timing; 0: iters */
    /* Called after every block (and after each warm-up), untimed: e.g. a
     * stream synchronize so that the queue never saturates. May be NULL. */
    int (*between)(void *arg);
    void *between_arg;
    /* Results: the time of each `between` call after a timed block. */
    double *between_ns;
    int nbetween;
} bench_run;

/* Runs the warm-up, then `blocks` rounds of every variant in order. Returns
 * 0, or -1 when a body or `between` failed (with a message on stderr). */
int bench_run_variants(bench_run *run, bench_variant *v, int n);
void bench_run_free(bench_run *run, bench_variant *v, int n);
/* Divides a variant's results by n: from per-iteration to per-item figures
 * (per kernel of a graph, per pass of a loop). */
void bench_variant_divide(bench_variant *v, double n);
/* The median of a variant's single calls (call_ns). */
double bench_calls_median(const bench_variant *v);

typedef struct bench_ratio {
    double of_medians;        /* median(cuscope) / median(raw) */
    double median, p5, p95;   /* of the per-round ratio */
} bench_ratio;

bench_ratio bench_ratio_of(const bench_variant *raw, const bench_variant *cus);

/* --- the report ------------------------------------------------------------------------ */

typedef struct bench_report bench_report;

bench_report *bench_report_new(const char *bench, const bench_env *env, const bench_opts *o,
                               int blocks, int iters);
/* A line printed under the title (JSON: "notes"). */
void bench_report_note(bench_report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Starts a section: its title, what a value means ("ns per launch"), the
 * basis of the statistics ("over blocks", "over single calls (tsc)") and
 * the names of the two value columns (JSON keys: "median", "p99"). */
void bench_report_section(bench_report *r, const char *title, const char *unit,
                          const char *basis, const char *col_median, const char *col_tail);
/* A row; ratio may be NULL (a reference row). n: the number of samples. */
void bench_report_row(bench_report *r, const char *key, const char *label, double median,
                      double tail, int n, const bench_ratio *ratio);
/* A row over blocks (per-call time = block time / iters); raw NULL: a
 * reference row, else the ratio to raw (bench_ratio_of). */
void bench_report_row_blocks(bench_report *r, const char *key, const bench_variant *v,
                             const bench_variant *raw);
/* A row over single calls (v->call_ns); the ratio of the single-call
 * medians, its spread over the rounds' block ratios. */
void bench_report_row_calls(bench_report *r, const char *key, const bench_variant *v,
                            const bench_variant *raw);
/* Prints the table or the JSON, and frees the report. */
void bench_report_print(bench_report *r, bool json);

#endif
