/* The shared parts of bench/: see bench_common.h. */
#include "bench_common.h"

#include <dlfcn.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuscope/fake.h>

/* --- options ------------------------------------------------------------------ */

static int parse_count(const char *prog, const char *opt, const char *arg, int *out)
{
    char *end = NULL;
    long v = arg ? strtol(arg, &end, 10) : 0;
    if (!arg || *end || v < 1 || v > 100000000) {
        fprintf(stderr, "%s: %s wants a positive count\n", prog, opt);
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* --json-file F: the JSON also goes to F, the table still to stdout. */
static const char *json_file;

int bench_parse_args(const char *prog, int argc, char **argv, bench_opts *o, const char *extra)
{
    memset(o, 0, sizeof *o);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--json") == 0) {
            o->json = true;
        } else if (strcmp(a, "--json-file") == 0 && i + 1 < argc) {
            json_file = argv[++i];
        } else if (strcmp(a, "--quick") == 0) {
            o->quick = true;
        } else if (strcmp(a, "--blocks") == 0) {
            if (parse_count(prog, a, i + 1 < argc ? argv[++i] : NULL, &o->blocks))
                return -1;
        } else if (strcmp(a, "--iters") == 0) {
            if (parse_count(prog, a, i + 1 < argc ? argv[++i] : NULL, &o->iters))
                return -1;
        } else {
            bool help = strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0;
            fprintf(help ? stdout : stderr,
                    "%s%s%s\nusage: %s [--json] [--json-file F] [--quick] [--blocks N] [--iters N]\n"
                    "  --json      JSON on stdout instead of the table\n"
                    "  --json-file F  the JSON to F as well (the table stays on stdout)\n"
                    "  --quick     a few hundred calls only (checks that it runs)\n"
                    "  --blocks N  interleaved rounds (blocks per variant)\n"
                    "  --iters N   calls per block\n%s%s",
                    help ? "" : prog, help ? "" : ": unknown option ", help ? "" : a, prog,
                    extra ? extra : "", extra ? "\n" : "");
            if (help)
                exit(0);
            return -1;
        }
    }
    return 0;
}

/* --- clocks -------------------------------------------------------------------- */

bool bench_use_tsc_;
static double tsc_ns_per_tick = 1.0;
static double clock_overhead_ns;

uint64_t bench_clock_gettime_ns_(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

double bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

#if defined(__x86_64__) || defined(__i386__)
/* Whether /proc/cpuinfo lists both flags of an invariant TSC. */
static bool tsc_invariant(void)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return false;
    char line[8192];
    bool constant = false, nonstop = false;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5) != 0)
            continue;
        constant = strstr(line, " constant_tsc") != NULL;
        nonstop = strstr(line, " nonstop_tsc") != NULL;
        break;
    }
    fclose(f);
    return constant && nonstop;
}
#endif

void bench_clock_init(void)
{
    static bool done;
    if (done)
        return;
    done = true;
#if defined(__x86_64__) || defined(__i386__)
    if (tsc_invariant()) {
        /* 20 ms against CLOCK_MONOTONIC: a few ppm, plenty for ns figures. */
        uint64_t c0 = bench_clock_gettime_ns_(), t0 = __builtin_ia32_rdtsc();
        uint64_t c1;
        do
            c1 = bench_clock_gettime_ns_();
        while (c1 - c0 < 20000000u);
        uint64_t t1 = __builtin_ia32_rdtsc();
        if (t1 > t0) {
            tsc_ns_per_tick = (double)(c1 - c0) / (double)(t1 - t0);
            bench_use_tsc_ = true;
        }
    }
#endif
    enum { N = 1001 };
    double d[N];
    for (int i = 0; i < N; i++) {
        uint64_t a = bench_ticks();
        uint64_t b = bench_ticks();
        d[i] = bench_ticks_to_ns((double)(b - a));
    }
    clock_overhead_ns = bench_stats_of(d, N).median;
}

double bench_ticks_to_ns(double ticks)
{
    return bench_use_tsc_ ? ticks * tsc_ns_per_tick : ticks;
}

const char *bench_clock_name(void)
{
    return bench_use_tsc_ ? "tsc" : "clock_gettime";
}

double bench_clock_overhead_ns(void)
{
    return clock_overhead_ns;
}

/* --- the driver ---------------------------------------------------------------- */

int bench_env_open(const char *prog, bench_env *env)
{
    memset(env, 0, sizeof *env);
    env->prog = prog;
    env->driver = "real";
    if (cus_init() != CUS_SUCCESS) {
        fprintf(stderr, "%s: no GPU driver (%s)\n  -> measuring on the fake driver: "
                        "the figures are cuscope's own CPU cost\n",
                prog, cus_last_error_message());
        if (cus_fake_install(NULL) || cus_init()) {
            fprintf(stderr, "%s: %s\n", prog, cus_last_error_message());
            return -1;
        }
        env->fake = true;
        env->driver = "fake";
        env->resolve = cus_fake_get_proc_address;
#ifdef __GLIBC__
        /* The fake allocates a record per queued operation and frees them
         * when the queue runs: without this, glibc gives the heap's top back
         * after each synchronize and the next block pays the page faults
         * (tens of microseconds, charged to whichever variant comes next). */
        mallopt(M_TRIM_THRESHOLD, 512 << 20);
        mallopt(M_MMAP_THRESHOLD, 64 << 20);
#endif
    } else {
        const char *lib = getenv("CUSCOPE_LIBCUDA");
        void *h = dlopen(lib && *lib ? lib : "libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
        void *sym = h ? dlsym(h, "cuGetProcAddress_v2") : NULL;
        if (!sym) {
            fprintf(stderr, "%s: cannot reach cuGetProcAddress_v2\n", prog);
            return -1;
        }
        memcpy(&env->resolve, &sym, sizeof sym);
    }
    if (cus_device_get(0, &env->dev)) {
        fprintf(stderr, "%s: %s\n", prog, cus_last_error_message());
        return -1;
    }
    cus_device_name(env->dev, env->device_name, sizeof env->device_name);
    cus_driver_version(&env->version);
    bench_clock_init();
    return 0;
}

int bench_resolve(const bench_env *env, const bench_sym *syms, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        void *p = NULL;
        CUdriverProcAddressQueryResult qs = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        if (env->resolve(syms[i].symbol, &p, syms[i].version, CU_GET_PROC_ADDRESS_LEGACY_STREAM,
                         &qs) ||
            !p) {
            fprintf(stderr, "%s: cannot resolve the raw entry point %s (ABI %d)\n", env->prog,
                    syms[i].symbol, syms[i].version);
            return -1;
        }
        memcpy(syms[i].dst, &p, sizeof p);
    }
    return 0;
}

int bench_fail(const bench_env *env, const char *what)
{
    fprintf(stderr, "%s: %s: %s\n", env->prog, what, cus_last_error_message());
    return 1;
}

/* --- statistics ------------------------------------------------------------------ */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

bench_stats bench_stats_of(const double *v, int n)
{
    bench_stats s = {.n = n};
    if (n <= 0)
        return s;
    double *c = malloc((size_t)n * sizeof *c);
    if (!c)
        return s;
    memcpy(c, v, (size_t)n * sizeof *c);
    qsort(c, (size_t)n, sizeof *c, cmp_double);
#define PCT_(p) c[(int)((p) * (n - 1) + 0.5)]
    s.median = PCT_(0.5);
    s.p99 = PCT_(0.99);
    s.p95 = PCT_(0.95);
    s.p5 = PCT_(0.05);
    s.p1 = PCT_(0.01);
#undef PCT_
    s.min = c[0];
    s.max = c[n - 1];
    free(c);
    return s;
}

/* --- the runner -------------------------------------------------------------------- */

static int run_between(bench_run *run, double *out)
{
    if (!run->between)
        return 0;
    double t0 = bench_now_ns();
    int bad = run->between(run->between_arg);
    if (out)
        *out = bench_now_ns() - t0;
    return bad;
}

int bench_run_variants(bench_run *run, bench_variant *v, int n)
{
    const int blocks = run->blocks, iters = run->iters;
    const int warm = run->warm_iters > 0 ? run->warm_iters : iters;
    int cap = warm > iters ? warm : iters;
    uint64_t *ticks = calloc((size_t)cap, sizeof *ticks);
    run->between_ns = calloc((size_t)blocks * (size_t)n, sizeof *run->between_ns);
    run->nbetween = 0;
    if (!ticks || !run->between_ns)
        goto oom;
    for (int k = 0; k < n; k++) {
        v[k].nblocks = blocks;
        v[k].ncalls = v[k].per_call ? blocks * iters : 0;
        v[k].block_ns = calloc((size_t)blocks, sizeof *v[k].block_ns);
        v[k].call_ns = v[k].per_call ? calloc((size_t)blocks * (size_t)iters, sizeof(double)) : NULL;
        if (!v[k].block_ns || (v[k].per_call && !v[k].call_ns))
            goto oom;
    }
    /* Warm-up: every body (lazy loading makes the first launch of each
     * function slow; the first call of anything touches cold code). */
    for (int k = 0; k < n; k++) {
        if (v[k].body(v[k].arg, warm, v[k].per_call ? ticks : NULL) || run_between(run, NULL)) {
            fprintf(stderr, "bench: warming up '%s' failed: %s\n", v[k].label,
                    cus_last_error_message());
            free(ticks);
            return -1;
        }
    }
    for (int b = 0; b < blocks; b++) {
        for (int k = 0; k < n; k++) {
            uint64_t *t = v[k].per_call ? ticks : NULL;
            double t0 = bench_now_ns();
            int bad = v[k].body(v[k].arg, iters, t);
            double t1 = bench_now_ns();
            if (bad || run_between(run, &run->between_ns[run->nbetween++])) {
                fprintf(stderr, "bench: '%s' failed in block %d: %s\n", v[k].label, b,
                        cus_last_error_message());
                free(ticks);
                return -1;
            }
            v[k].block_ns[b] = (t1 - t0) / iters;
            if (t)
                for (int i = 0; i < iters; i++)
                    v[k].call_ns[(size_t)b * (size_t)iters + (size_t)i] =
                        bench_ticks_to_ns((double)t[i]);
        }
    }
    free(ticks);
    return 0;
oom:
    free(ticks);
    fprintf(stderr, "bench: out of memory for %d blocks of %d\n", blocks, iters);
    return -1;
}

void bench_run_free(bench_run *run, bench_variant *v, int n)
{
    free(run->between_ns);
    run->between_ns = NULL;
    for (int k = 0; k < n; k++) {
        free(v[k].block_ns);
        free(v[k].call_ns);
        v[k].block_ns = v[k].call_ns = NULL;
    }
}

bench_ratio bench_ratio_of(const bench_variant *raw, const bench_variant *cus)
{
    bench_ratio r = {0};
    int n = raw->nblocks < cus->nblocks ? raw->nblocks : cus->nblocks;
    double *q = malloc((size_t)(n > 0 ? n : 1) * sizeof *q);
    if (!q || n <= 0) {
        free(q);
        return r;
    }
    for (int b = 0; b < n; b++)
        q[b] = raw->block_ns[b] > 0 ? cus->block_ns[b] / raw->block_ns[b] : 0;
    bench_stats s = bench_stats_of(q, n);
    free(q);
    double mr = bench_stats_of(raw->block_ns, n).median;
    double mc = bench_stats_of(cus->block_ns, n).median;
    r.of_medians = mr > 0 ? mc / mr : 0;
    r.median = s.median;
    r.p5 = s.p5;
    r.p95 = s.p95;
    return r;
}

void bench_variant_divide(bench_variant *v, double n)
{
    for (int b = 0; b < v->nblocks; b++)
        v->block_ns[b] /= n;
    for (int i = 0; i < v->ncalls; i++)
        v->call_ns[i] /= n;
}

double bench_calls_median(const bench_variant *v)
{
    return bench_stats_of(v->call_ns, v->ncalls).median;
}

/* --- the report ------------------------------------------------------------------------ */

typedef struct report_row {
    char key[64], label[96];
    double median, tail;
    int n;
    bool has_ratio;
    bench_ratio ratio;
    int section;
} report_row;

typedef struct report_section {
    char title[128], unit[64], basis[96], col_median[24], col_tail[24];
} report_section;

struct bench_report {
    char bench[32];
    const bench_env *env;
    int blocks, iters;
    bool quick;
    char notes[16][256];
    int nnotes;
    report_section sections[32];
    int nsections;
    report_row *rows;
    int nrows, caprows;
};

bench_report *bench_report_new(const char *bench, const bench_env *env, const bench_opts *o,
                               int blocks, int iters)
{
    bench_report *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    snprintf(r->bench, sizeof r->bench, "%s", bench);
    r->env = env;
    r->blocks = blocks;
    r->iters = iters;
    r->quick = o->quick;
    return r;
}

void bench_report_note(bench_report *r, const char *fmt, ...)
{
    if (!r || r->nnotes == (int)(sizeof r->notes / sizeof r->notes[0]))
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->notes[r->nnotes++], sizeof r->notes[0], fmt, ap);
    va_end(ap);
}

void bench_report_section(bench_report *r, const char *title, const char *unit,
                          const char *basis, const char *col_median, const char *col_tail)
{
    if (!r || r->nsections == (int)(sizeof r->sections / sizeof r->sections[0]))
        return;
    report_section *s = &r->sections[r->nsections++];
    snprintf(s->title, sizeof s->title, "%s", title);
    snprintf(s->unit, sizeof s->unit, "%s", unit);
    snprintf(s->basis, sizeof s->basis, "%s", basis);
    snprintf(s->col_median, sizeof s->col_median, "%s", col_median);
    snprintf(s->col_tail, sizeof s->col_tail, "%s", col_tail);
}

void bench_report_row(bench_report *r, const char *key, const char *label, double median,
                      double tail, int n, const bench_ratio *ratio)
{
    if (!r || !r->nsections)
        return;
    if (r->nrows == r->caprows) {
        int cap = r->caprows ? r->caprows * 2 : 32;
        report_row *rows = realloc(r->rows, (size_t)cap * sizeof *rows);
        if (!rows)
            return;
        r->rows = rows;
        r->caprows = cap;
    }
    report_row *w = &r->rows[r->nrows++];
    memset(w, 0, sizeof *w);
    snprintf(w->key, sizeof w->key, "%s", key);
    snprintf(w->label, sizeof w->label, "%s", label);
    w->median = median;
    w->tail = tail;
    w->n = n;
    w->section = r->nsections - 1;
    if (ratio) {
        w->has_ratio = true;
        w->ratio = *ratio;
    }
}

static void json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c < 0x20)
            fprintf(out, "\\u%04x", c);
        else
            fputc(c, out);
    }
    fputc('"', out);
}

static void print_json(FILE *out, const bench_report *r)
{
    const bench_env *e = r->env;
    fprintf(out, "{\"bench\":");
    json_string(out, r->bench);
    fprintf(out, ",\"driver\":\"%s\",\"device\":", e->driver);
    json_string(out, e->device_name);
    fprintf(out, ",\"driver_version\":%d,", e->version);
    if (r->blocks > 0 && r->iters > 0) /* else they vary by section (in its title) */
        fprintf(out, "\"blocks\":%d,\"iters\":%d,", r->blocks, r->iters);
    fprintf(out, "\"quick\":%s,\"clock\":\"%s\",\"clock_overhead_ns\":%.2f,\"notes\":[",
           r->quick ? "true" : "false", bench_clock_name(), bench_clock_overhead_ns());
    for (int i = 0; i < r->nnotes; i++) {
        if (i)
            fputc(',', out);
        json_string(out, r->notes[i]);
    }
    fprintf(out, "],\"sections\":[");
    for (int s = 0; s < r->nsections; s++) {
        const report_section *sec = &r->sections[s];
        fprintf(out, "%s{\"title\":", s ? "," : "");
        json_string(out, sec->title);
        fprintf(out, ",\"unit\":");
        json_string(out, sec->unit);
        fprintf(out, ",\"basis\":");
        json_string(out, sec->basis);
        fprintf(out, ",\"rows\":[");
        bool first = true;
        for (int i = 0; i < r->nrows; i++) {
            const report_row *w = &r->rows[i];
            if (w->section != s)
                continue;
            fprintf(out, "%s{\"key\":", first ? "" : ",");
            first = false;
            json_string(out, w->key);
            fprintf(out, ",\"label\":");
            json_string(out, w->label);
            fprintf(out, ",\"%s\":%.6g,\"%s\":%.6g,\"n\":%d", sec->col_median, w->median, sec->col_tail,
                   w->tail, w->n);
            if (w->has_ratio)
                fprintf(out, ",\"ratio\":{\"of_medians\":%.4f,\"median\":%.4f,\"p5\":%.4f,\"p95\":%.4f}",
                       w->ratio.of_medians, w->ratio.median, w->ratio.p5, w->ratio.p95);
            fputc('}', out);
        }
        fprintf(out, "]}");
    }
    fprintf(out, "]}\n");
}

/* A value in 11 columns with 4 significant digits or so, never an exponent. */
static const char *fmt_value(char *buf, size_t n, double v)
{
    double a = v < 0 ? -v : v;
    snprintf(buf, n, a >= 1000 ? "%.0f" : a >= 100 ? "%.1f" : a >= 10 ? "%.2f" : "%.3f", v);
    return buf;
}

static void print_table(const bench_report *r)
{
    const bench_env *e = r->env;
    printf("bench-%s on the %s driver: %s, driver API %d.%d\n", r->bench, e->driver,
           e->device_name, e->version / 1000, e->version % 1000 / 10);
    for (int i = 0; i < r->nnotes; i++)
        printf("  %s\n", r->notes[i]);
    for (int s = 0; s < r->nsections; s++) {
        const report_section *sec = &r->sections[s];
        printf("\n%s\n", sec->title);
        printf("  (%s, %s)\n", sec->unit, sec->basis);
        printf("  %-52s %11s %11s   %s\n", "", sec->col_median, sec->col_tail,
               "cuscope/raw (p5..p95 per round)");
        for (int i = 0; i < r->nrows; i++) {
            const report_row *w = &r->rows[i];
            if (w->section != s)
                continue;
            char m[32], t[32];
            printf("  %-52s %11s %11s", w->label, fmt_value(m, sizeof m, w->median),
                   fmt_value(t, sizeof t, w->tail));
            if (w->has_ratio)
                printf("   %.3f (%.3f..%.3f)", w->ratio.of_medians, w->ratio.p5, w->ratio.p95);
            putchar('\n');
        }
    }
}

void bench_report_print(bench_report *r, bool json)
{
    if (!r)
        return;
    if (json)
        print_json(stdout, r);
    else
        print_table(r);
    if (json_file) {
        FILE *f = fopen(json_file, "w");
        if (f) {
            print_json(f, r);
            fclose(f);
        } else {
            perror(json_file);
        }
    }
    free(r->rows);
    free(r);
}

void bench_report_row_blocks(bench_report *r, const char *key, const bench_variant *v,
                             const bench_variant *raw)
{
    bench_stats s = bench_stats_of(v->block_ns, v->nblocks);
    bench_ratio q = raw ? bench_ratio_of(raw, v) : (bench_ratio){0};
    bench_report_row(r, key, v->label, s.median, s.p99, s.n, raw ? &q : NULL);
}

void bench_report_row_calls(bench_report *r, const char *key, const bench_variant *v,
                            const bench_variant *raw)
{
    bench_stats s = bench_stats_of(v->call_ns, v->ncalls);
    bench_ratio q = {0};
    if (raw) {
        q = bench_ratio_of(raw, v);
        double mr = bench_calls_median(raw);
        q.of_medians = mr > 0 ? s.median / mr : 0;
    }
    bench_report_row(r, key, v->label, s.median, s.p99, s.n, raw ? &q : NULL);
}

int bench_take_counts(int *argc, char **argv, const char *option, int *counts, int max,
                      const int *defaults, int ndefaults)
{
    int n = 0, out = 1;
    bool given = false;
    for (int i = 1; i < *argc; i++) {
        if (strcmp(argv[i], option) != 0) {
            argv[out++] = argv[i];
            continue;
        }
        if (i + 1 >= *argc)
            return -1;
        given = true;
        n = 0;
        char *list = argv[++i], *end = NULL;
        for (;;) {
            long v = strtol(list, &end, 10);
            if (end == list || v < 1 || v > 100000 || n == max)
                return -1;
            counts[n++] = (int)v;
            if (*end == '\0')
                break;
            if (*end != ',')
                return -1;
            list = end + 1;
        }
    }
    *argc = out;
    argv[out] = NULL;
    if (!given) {
        for (n = 0; n < ndefaults && n < max; n++)
            counts[n] = defaults[n];
    }
    return n;
}
