/* bench-scale: how the cost of an operation grows with the size of what
 * cuscope manages, against the raw driver, side by side in one process.
 *
 * Curves (--curve NAME runs one; several --curve, or a comma list, run
 * those):
 *   capture-same      N = 10 .. 1e5 launches captured into one graph, one
 *                     buffer argument, the same buffer each launch: the
 *                     capture (begin + N launches + end, per launch), the
 *                     instantiation (per node) and the teardown (exec
 *                     destroy, graph destroy, the buffer's release; per
 *                     node).
 *   capture-distinct  the same with N distinct buffers, allocated before
 *                     (not timed) and released in the teardown.
 *   buffers, streams, events
 *                     M = 1e2 .. 1e5 objects created, all, then destroyed,
 *                     all, in creation order: per object, for each half.
 *   push-pop          the same context pushed D = 1 .. 1000 times, then
 *                     popped back: per push + pop pair.
 *   threads           T = 1 .. 16 threads on one context, each on its own
 *                     stream: launching (per launch), allocating + freeing
 *                     (per pair) and capturing 16-launch graphs
 *                     (THREAD_LOCAL mode, per capture), aggregate time per
 *                     operation (the phase's wall time / all operations);
 *                     and the cuscope objects still alive after the capture
 *                     phase beyond those the bench holds (0 expected).
 *   lookup            a module generated as PTX with K = 1 .. 1000 kernels:
 *                     cus_module_get_function (+ the unref of its result)
 *                     against cuModuleGetFunction, each name in turn, the
 *                     cache warm: per lookup.
 *   graph-build       N = 10 .. 1e5 kernel nodes added by hand, a chain
 *                     (each depends on the one before), one buffer
 *                     argument: the build (graph create + N nodes, per
 *                     node), the instantiation and the teardown (per node).
 *   exec-update       U = 10 .. 1e4 updates of one executable graph, each to
 *                     another graph of the same shape (captured before, not
 *                     timed): per update; then the teardown (the exec and
 *                     the U + 1 graphs), per graph; and cuscope's live
 *                     objects before and after that teardown.
 *
 * Method: every size runs in rounds, each round one raw and one cuscope
 * measurement, their order alternating from round to round (interleaved as
 * bench_common.h describes, a whole measurement being the block); the
 * figure of a size is the median over its rounds (the minimum goes to the
 * JSON as well). Small sizes get more rounds (and the cheap operations
 * repeat inside a round), large ones fewer; a size whose projected time is
 * above --budget seconds, or above what --time-limit leaves of the run, is
 * left out, and the output says so. On the fake, each curve runs on a
 * freshly installed fake, the heap touched up front (see main). Each curve
 * ends with the growth exponent of either side: the least-squares slope of
 * log(total time of a size) over log(size); 1 is a flat per-item cost, 2 a
 * per-item cost that grows linearly. Raw entry points come through the
 * resolver cuscope itself used (on the fake, the fake's cuGetProcAddress),
 * at cuscope's ABI versions, so the comparison holds on the fake too, where
 * the figures are cuscope's own CPU cost plus the fake's (the same on both
 * sides). Kernels are generated here as PTX, so no nvcc is needed. Never
 * asserts timings.
 *
 * Output: a table per curve on stdout; --json FILE (or --json-file FILE)
 * writes everything as JSON too; --quick: small sizes, a round or so each
 * (CI checks it runs); --max N: no size above N (the thread counts are not
 * capped); --budget S; --time-limit S; --rounds N. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cudaTypedefs.h>

#include <cuscope/cuscope.h>
#include <cuscope/fake.h>

#include "bench_common.h"

#define PROG "bench-scale"
#define MAX_POINTS 8
#define MAX_SERIES 4
#define MAX_NOTES 8
#define BUF_BYTES 256
#define PREFAULT_MIB 448 /* below bench_env_open's trim threshold, 512 MiB */
/* The launches of one capture in the threads curve. */
#define THREAD_CAPTURE_LAUNCHES 16

/* --- options --------------------------------------------------------------------------------- */

typedef struct scale_opts {
    const char *json_file;
    bool quick;
    long max;           /* 0: no cap */
    double budget_s;    /* a size projected above it is left out */
    double limit_s;     /* the whole run's time: 0, none */
    int rounds;         /* 0: by size */
    const char *curves[16];
    int ncurves;
} scale_opts;

/* --- the raw driver -------------------------------------------------------------------------- */

typedef struct raw_api {
    PFN_cuCtxPushCurrent_v4000 push;
    PFN_cuCtxPopCurrent_v4000 pop;
    PFN_cuMemAlloc_v3020 alloc;
    PFN_cuMemFree_v3020 free;
    PFN_cuStreamCreateWithPriority_v5050 stream_create;
    PFN_cuStreamDestroy_v4000 stream_destroy;
    PFN_cuStreamSynchronize_v2000 sync;
    PFN_cuEventCreate_v2000 event_create;
    PFN_cuEventDestroy_v4000 event_destroy;
    PFN_cuModuleGetFunction_v2000 get_function;
    PFN_cuLaunchKernel_v4000 launch;
    PFN_cuStreamBeginCapture_v10010 begin;
    PFN_cuStreamEndCapture_v10000 end;
    PFN_cuGraphInstantiateWithFlags_v11040 instantiate;
    PFN_cuGraphExecDestroy_v10000 exec_destroy;
    PFN_cuGraphDestroy_v10000 graph_destroy;
    PFN_cuGraphExecUpdate_v12000 exec_update;
    PFN_cuGraphCreate_v10000 graph_create;
    PFN_cuGraphAddKernelNode_v12000 add_kernel_node;
    PFN_cuThreadExchangeStreamCaptureMode_v10010 exchange;
    PFN_cuStreamGetCaptureInfo_v10010 capture_info;
} raw_api;

/* --- results --------------------------------------------------------------------------------- */

typedef struct point {
    long size;
    int rounds;
    double units;                 /* operations one total covers */
    double raw_total, cus_total;  /* ns, median over the rounds */
    double raw_min, cus_min;      /* ns, the fastest round */
} point;

typedef struct series {
    const char *name; /* "capture" */
    const char *unit; /* "ns per launch" */
    int npoints;
    point pts[MAX_POINTS];
} series;

typedef struct curve curve;
typedef struct scale scale;

/* One round of one side (0 raw, 1 cuscope) at one size: untimed setup, the
 * timed parts (ns[k]: the total of series k), untimed cleanup. units[k]: the
 * operations that total covers. Returns nonzero on failure, with a message. */
typedef int (*round_fn)(scale *sc, curve *c, long size, int side, double *ns, double *units);

struct curve {
    const char *name;
    const char *title;
    const char *size_name; /* "N" */
    const long *sizes;
    int nsizes;
    const long *quick_sizes;
    int nquick;
    bool uncapped;         /* --max does not apply (thread counts) */
    double round_units;    /* rounds at a size: about round_units / size, 3 .. 21 */
    int nseries;
    series s[MAX_SERIES];
    round_fn round;
    int (*prepare)(scale *sc, curve *c, long size); /* before a size; may be NULL */
    void (*finish)(scale *sc, curve *c);            /* after it; may be NULL */
    /* Per-size counts the curve reports beside the times (live objects). */
    const char *extra_names[2];
    int nextra;
    long extra[2][MAX_POINTS];
    char notes[MAX_NOTES][240];
    int nnotes;
    bool ran;
    double wall_s;
};

struct scale {
    scale_opts opt;
    double t_start; /* s, of the first curve */
    bench_env env;
    raw_api raw;
    cus_context *ctx;
    CUcontext hctx;
    cus_stream *stream;
    CUstream hs;
    cus_module *mod;   /* the `touch` kernel */
    cus_function *fn;
    CUfunction hfn;
    char target[16];   /* the PTX .target */
    /* Scratch, sized for the largest size of any curve. */
    cus_buffer **bufs;
    CUdeviceptr *ptrs;
    void **objs;       /* streams or events, either side's */
    size_t cap;
    /* lookup: the module of the current size and its names */
    cus_module *lmod;
    char (*names)[24];
    /* exec-update: the graphs of a round */
    cus_graph **graphs;
    CUgraph *hgraphs;
};

static void curve_note(curve *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void curve_note(curve *c, const char *fmt, ...)
{
    if (c->nnotes == MAX_NOTES)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->notes[c->nnotes++], sizeof c->notes[0], fmt, ap);
    va_end(ap);
}

static int fail_cus(const char *what)
{
    fprintf(stderr, PROG ": %s: %s\n", what, cus_last_error_message());
    return -1;
}

static int fail_raw(const char *what, CUresult r)
{
    fprintf(stderr, PROG ": %s: CUresult %d (%s)\n", what, (int)r,
            cus_status_name((cus_status)r));
    return -1;
}

/* --- PTX generated here ---------------------------------------------------------------------- */

/* The PTX header for the device: ISA 7.0 (drivers from 11.0), .target the
 * device's compute capability, at most sm_80 (what ISA 7.0 knows; the JIT
 * compiles it for the device). */
static void ptx_target(scale *sc)
{
    int major = 0, minor = 0;
    if (cus_device_compute_capability(sc->env.dev, &major, &minor) || major * 10 + minor >= 80)
        major = 8, minor = 0;
    snprintf(sc->target, sizeof sc->target, "sm_%d%d", major, minor);
}

/* A module of `count` kernels k0 .. k<count-1> with no parameters (when
 * touch is false), or of the one kernel `touch(.u64)`. NUL-terminated; *len
 * counts the NUL. The caller frees it. */
static char *ptx_module(const scale *sc, long count, bool touch, size_t *len)
{
    size_t cap = 256 + (size_t)count * 64, n = 0;
    char *p = malloc(cap);
    if (!p)
        return NULL;
    n += (size_t)snprintf(p + n, cap - n, ".version 7.0\n.target %s\n.address_size 64\n\n",
                          sc->target);
    if (touch)
        n += (size_t)snprintf(p + n, cap - n,
                              ".visible .entry touch(\n\t.param .u64 touch_p\n)\n{\n\tret;\n}\n");
    for (long i = 0; !touch && i < count; i++)
        n += (size_t)snprintf(p + n, cap - n, ".visible .entry k%ld()\n{\n\tret;\n}\n", i);
    *len = n + 1;
    return p;
}

static int load_ptx(scale *sc, const char *text, size_t len, cus_module **out)
{
    if (cus_module_load_data(sc->ctx, text, len, NULL, out))
        return fail_cus("loading the generated PTX");
    return 0;
}

/* --- statistics ------------------------------------------------------------------------------ */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of(double *v, int n, double *min)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    *min = v[0];
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The least-squares slope of log(total) over log(size); NAN with fewer than
 * two points. */
static double growth_exponent(const series *s, bool cus)
{
    if (s->npoints < 2)
        return NAN;
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    int n = 0;
    for (int i = 0; i < s->npoints; i++) {
        double t = cus ? s->pts[i].cus_total : s->pts[i].raw_total;
        if (!(t > 0))
            continue;
        double x = log((double)s->pts[i].size), y = log(t);
        sx += x, sy += y, sxx += x * x, sxy += x * y;
        n++;
    }
    double d = n * sxx - sx * sx;
    return n >= 2 && d > 0 ? (n * sxy - sx * sy) / d : NAN;
}

/* The slope between the two largest sizes: where a growth shows first. */
static double tail_exponent(const series *s, bool cus)
{
    if (s->npoints < 2)
        return NAN;
    const point *a = &s->pts[s->npoints - 2], *b = &s->pts[s->npoints - 1];
    double ta = cus ? a->cus_total : a->raw_total, tb = cus ? b->cus_total : b->raw_total;
    if (!(ta > 0) || !(tb > 0))
        return NAN;
    return log(tb / ta) / log((double)b->size / (double)a->size);
}

/* --- the engine ------------------------------------------------------------------------------ */

static double now_s(void)
{
    return bench_now_ns() / 1e9;
}

static int rounds_for(const scale *sc, const curve *c, long size)
{
    if (sc->opt.rounds)
        return sc->opt.rounds;
    int lo = sc->opt.quick ? 1 : 3, hi = sc->opt.quick ? 2 : 21;
    double r = c->round_units / (double)size;
    return r < lo ? lo : r > hi ? hi : (int)r;
}

/* Runs every size of c: rounds of raw and cuscope, alternating. */
static int run_curve(scale *sc, curve *c)
{
    const long *sizes = sc->opt.quick ? c->quick_sizes : c->sizes;
    int nsizes = sc->opt.quick ? c->nquick : c->nsizes;
    const int lo = sc->opt.rounds ? sc->opt.rounds : sc->opt.quick ? 1 : 3;
    double t_curve = now_s();
    double last_round_s = 0, growth = 1;
    long last_size = 0;
    c->ran = true;
    for (int i = 0; i < nsizes; i++) {
        long size = sizes[i];
        if (sc->opt.max && size > sc->opt.max && !c->uncapped) {
            curve_note(c, "%s = %ld and above left out (--max %ld)", c->size_name, size,
                       sc->opt.max);
            break;
        }
        int rounds = rounds_for(sc, c, size);
        /* what this size may take: --budget, and what --time-limit leaves */
        double budget = sc->opt.budget_s;
        const char *why = "--budget";
        if (sc->opt.limit_s > 0) {
            double left = sc->opt.limit_s - (now_s() - sc->t_start);
            if (left < budget) {
                budget = left > 0 ? left : 0;
                why = "what --time-limit leaves";
            }
            if (budget <= 0) {
                curve_note(c, "%s = %ld and above left out: --time-limit %.0f s reached",
                           c->size_name, size, sc->opt.limit_s);
                break;
            }
        }
        if (last_size) {
            /* the next size's round, projected from the last one's growth */
            double projected = last_round_s * pow((double)size / (double)last_size, growth);
            if (projected * lo > budget) {
                curve_note(c, "%s = %ld and above left out: %d round(s) projected at %.1f s, "
                              "above %.1f s (%s)",
                           c->size_name, size, lo, projected * lo, budget, why);
                break;
            }
            while (rounds > lo && projected * rounds > budget)
                rounds--;
        }
        if (c->prepare && c->prepare(sc, c, size))
            return -1;
        double *raw = calloc((size_t)rounds * MAX_SERIES, sizeof *raw);
        double *cus = calloc((size_t)rounds * MAX_SERIES, sizeof *cus);
        double units[MAX_SERIES] = {0}, ns[MAX_SERIES];
        int bad = !raw || !cus;
        if (bad)
            fprintf(stderr, PROG ": out of memory\n");
        /* Warm-up: one round of each side at the first size. */
        for (int side = 0; !bad && i == 0 && side < 2; side++)
            bad = c->round(sc, c, size, side, ns, units);
        double t0 = now_s();
        for (int r = 0; !bad && r < rounds; r++) {
            for (int k = 0; !bad && k < 2; k++) {
                int side = (r + k) & 1;
                bad = c->round(sc, c, size, side, ns, units);
                for (int s = 0; s < c->nseries; s++)
                    (side ? cus : raw)[(size_t)s * (size_t)rounds + (size_t)r] = ns[s];
            }
        }
        double round_s = (now_s() - t0) / rounds;
        if (c->finish)
            c->finish(sc, c);
        if (bad) {
            free(raw);
            free(cus);
            fprintf(stderr, PROG ": curve %s failed at %s = %ld\n", c->name, c->size_name, size);
            return -1;
        }
        for (int s = 0; s < c->nseries; s++) {
            point *p = &c->s[s].pts[c->s[s].npoints++];
            p->size = size;
            p->rounds = rounds;
            p->units = units[s];
            p->raw_total = median_of(raw + (size_t)s * (size_t)rounds, rounds, &p->raw_min);
            p->cus_total = median_of(cus + (size_t)s * (size_t)rounds, rounds, &p->cus_min);
        }
        free(raw);
        free(cus);
        if (last_size && last_round_s > 0 && round_s > 0) {
            growth = log(round_s / last_round_s) / log((double)size / (double)last_size);
            if (growth < 1)
                growth = 1;
        }
        last_size = size;
        last_round_s = round_s;
    }
    c->wall_s = now_s() - t_curve;
    return 0;
}

/* Scratch for n objects of either side. */
static int scratch(scale *sc, size_t n)
{
    if (n <= sc->cap)
        return 0;
    free(sc->bufs);
    free(sc->ptrs);
    free(sc->objs);
    free(sc->graphs);
    free(sc->hgraphs);
    sc->bufs = calloc(n, sizeof *sc->bufs);
    sc->ptrs = calloc(n, sizeof *sc->ptrs);
    sc->objs = calloc(n, sizeof *sc->objs);
    sc->graphs = calloc(n, sizeof *sc->graphs);
    sc->hgraphs = calloc(n, sizeof *sc->hgraphs);
    sc->cap = n;
    if (!sc->bufs || !sc->ptrs || !sc->objs || !sc->graphs || !sc->hgraphs) {
        sc->cap = 0;
        fprintf(stderr, PROG ": out of memory for %zu objects\n", n);
        return -1;
    }
    return 0;
}

/* What a release that a capture could refuse pays beside its driver call
 * (cuscope makes cuMemFree, cuMemFreeHost, cuMemHostUnregister,
 * cuModuleUnload and cuGraphExecDestroy in relaxed mode): the mode exchanged
 * there and back, timed once, as a note of the buffers curve. */
static void note_exchange(scale *sc, curve *c)
{
    enum { PAIRS = 20000 };
    double best = 0;
    for (int rep = 0; rep < 5; rep++) {
        CUresult bad = CUDA_SUCCESS;
        double t0 = bench_now_ns();
        for (int i = 0; i < PAIRS; i++) {
            CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
            bad |= sc->raw.exchange(&mode);
            bad |= sc->raw.exchange(&mode);
        }
        double ns = (bench_now_ns() - t0) / PAIRS;
        if (bad) {
            fail_raw("cuThreadExchangeStreamCaptureMode", bad);
            return;
        }
        if (!rep || ns < best)
            best = ns;
    }
    curve_note(c, "cuThreadExchangeStreamCaptureMode to relaxed and back (raw, the fastest of 5 "
                  "rounds of %d): %.1f ns, paid by each cuscope release that a capture could "
                  "refuse (cuMemFree among them)", PAIRS, best);
}

/* What cus_capture_begin asks beside cuStreamBeginCapture (the capture's id,
 * which its records are kept by): one cuStreamGetCaptureInfo on the
 * capturing stream, timed raw once, as a note of the capture-same curve. */
static void note_capture_info(scale *sc, curve *c)
{
    enum { QUERIES = 20000 };
    CUresult r = sc->raw.begin(sc->hs, CU_STREAM_CAPTURE_MODE_GLOBAL);
    if (r) {
        fail_raw("cuStreamBeginCapture", r);
        return;
    }
    double best = 0;
    for (int rep = 0; rep < 5 && !r; rep++) {
        double t0 = bench_now_ns();
        for (int i = 0; i < QUERIES && !r; i++) {
            CUstreamCaptureStatus status;
            cuuint64_t id;
            r = sc->raw.capture_info(sc->hs, &status, &id);
        }
        double ns = (bench_now_ns() - t0) / QUERIES;
        if (!rep || ns < best)
            best = ns;
    }
    CUgraph g = NULL;
    CUresult re = sc->raw.end(sc->hs, &g);
    if (g)
        sc->raw.graph_destroy(g);
    if (r || re) {
        fail_raw("cuStreamGetCaptureInfo / cuStreamEndCapture", r ? r : re);
        return;
    }
    curve_note(c, "cuStreamGetCaptureInfo on a capturing stream (raw, the fastest of 5 rounds of "
                  "%d): %.1f ns, asked once by each cus_capture_begin", QUERIES, best);
}

static int prepare_scratch(scale *sc, curve *c, long size)
{
    static bool info_noted;
    if (!info_noted && !strcmp(c->name, "capture-same")) {
        info_noted = true;
        note_capture_info(sc, c);
    }
    static bool exchange_noted;
    if (!exchange_noted && !strcmp(c->name, "buffers")) {
        exchange_noted = true;
        note_exchange(sc, c);
    }
    return scratch(sc, (size_t)size + 1);
}

/* --- capture: N launches, one buffer or N ---------------------------------------------------- */

static int alloc_buffers(scale *sc, long n, int side)
{
    for (long i = 0; i < n; i++) {
        if (side) {
            if (cus_buffer_alloc(sc->ctx, BUF_BYTES, &sc->bufs[i]))
                return fail_cus("cus_buffer_alloc");
        } else {
            CUresult r = sc->raw.alloc(&sc->ptrs[i], BUF_BYTES);
            if (r)
                return fail_raw("cuMemAlloc", r);
        }
    }
    return 0;
}

static int round_capture(scale *sc, curve *c, long n, int side, double *ns, double *units)
{
    const bool distinct = strcmp(c->name, "capture-distinct") == 0;
    const long nbuf = distinct ? n : 1;
    if (alloc_buffers(sc, nbuf, side))
        return -1;
    units[0] = units[1] = units[2] = (double)n;
    double t0 = bench_now_ns(), t1, t2, t3;
    if (side) {
        cus_graph *g = NULL;
        cus_graph_exec *e = NULL;
        cus_capture_guard cap = cus_capture_begin(sc->stream, CU_STREAM_CAPTURE_MODE_GLOBAL);
        if (cap.status)
            return fail_cus("cus_capture_begin");
        int bad = 0;
        for (long i = 0; i < n; i++)
            bad |= cus_launch(sc->fn, 1, 1, 0, sc->stream, sc->bufs[distinct ? i : 0]);
        if (bad) {
            cus_capture_abandon(&cap);
            return fail_cus("cus_launch in the capture");
        }
        if (cus_capture_end(&cap, &g))
            return fail_cus("cus_capture_end");
        t1 = bench_now_ns();
        if (cus_graph_instantiate(g, 0, &e))
            return fail_cus("cus_graph_instantiate");
        t2 = bench_now_ns();
        cus_graph_exec_unref(e);
        cus_graph_unref(g);
        for (long i = 0; i < nbuf; i++)
            cus_buffer_unref(sc->bufs[i]);
        t3 = bench_now_ns();
    } else {
        CUgraph g = NULL;
        CUgraphExec e = NULL;
        CUresult r = sc->raw.begin(sc->hs, CU_STREAM_CAPTURE_MODE_GLOBAL);
        if (r)
            return fail_raw("cuStreamBeginCapture", r);
        int bad = 0;
        for (long i = 0; i < n; i++) {
            void *args[] = {&sc->ptrs[distinct ? i : 0]};
            bad |= (int)sc->raw.launch(sc->hfn, 1, 1, 1, 1, 1, 1, 0, sc->hs, args, NULL);
        }
        r = sc->raw.end(sc->hs, &g);
        if (bad || r)
            return fail_raw("cuLaunchKernel / cuStreamEndCapture", r ? r : (CUresult)bad);
        t1 = bench_now_ns();
        if ((r = sc->raw.instantiate(&e, g, 0)))
            return fail_raw("cuGraphInstantiateWithFlags", r);
        t2 = bench_now_ns();
        bad |= (int)sc->raw.exec_destroy(e);
        bad |= (int)sc->raw.graph_destroy(g);
        for (long i = 0; i < nbuf; i++)
            bad |= (int)sc->raw.free(sc->ptrs[i]);
        t3 = bench_now_ns();
        if (bad)
            return fail_raw("the raw teardown", (CUresult)bad);
    }
    ns[0] = t1 - t0;
    ns[1] = t2 - t1;
    ns[2] = t3 - t2;
    return 0;
}

/* --- graph-build: N kernel nodes added by hand, a chain -------------------------------------- */

static int round_build(scale *sc, curve *c, long n, int side, double *ns, double *units)
{
    (void)c;
    if (alloc_buffers(sc, 1, side))
        return -1;
    units[0] = units[1] = units[2] = (double)n;
    double t0 = bench_now_ns(), t1, t2, t3;
    int bad = 0;
    if (side) {
        cus_graph *g = NULL;
        cus_graph_exec *e = NULL;
        if (cus_graph_create(sc->ctx, &g))
            return fail_cus("cus_graph_create");
        cus_graph_node prev = {0}, node = {0};
        for (long i = 0; i < n && !bad; i++) {
            bad = cus_graph_add_kernel(g, i ? &prev : NULL, i ? 1 : 0, &node, sc->fn, 1, 1, 0,
                                       sc->bufs[0]);
            prev = node;
        }
        if (bad)
            return fail_cus("cus_graph_add_kernel");
        t1 = bench_now_ns();
        if (cus_graph_instantiate(g, 0, &e))
            return fail_cus("cus_graph_instantiate");
        t2 = bench_now_ns();
        cus_graph_exec_unref(e);
        cus_graph_unref(g);
        cus_buffer_unref(sc->bufs[0]);
        t3 = bench_now_ns();
    } else {
        CUgraph g = NULL;
        CUgraphExec e = NULL;
        CUresult r = sc->raw.graph_create(&g, 0);
        if (r)
            return fail_raw("cuGraphCreate", r);
        void *args[] = {&sc->ptrs[0]};
        CUDA_KERNEL_NODE_PARAMS p = {.func = sc->hfn, .gridDimX = 1, .gridDimY = 1,
                                     .gridDimZ = 1, .blockDimX = 1, .blockDimY = 1,
                                     .blockDimZ = 1, .kernelParams = args};
        CUgraphNode prev = NULL, node = NULL;
        for (long i = 0; i < n && !r; i++) {
            r = sc->raw.add_kernel_node(&node, g, i ? &prev : NULL, i ? 1 : 0, &p);
            prev = node;
        }
        if (r)
            return fail_raw("cuGraphAddKernelNode", r);
        t1 = bench_now_ns();
        if ((r = sc->raw.instantiate(&e, g, 0)))
            return fail_raw("cuGraphInstantiateWithFlags", r);
        t2 = bench_now_ns();
        bad |= (int)sc->raw.exec_destroy(e);
        bad |= (int)sc->raw.graph_destroy(g);
        bad |= (int)sc->raw.free(sc->ptrs[0]);
        t3 = bench_now_ns();
        if (bad)
            return fail_raw("the raw teardown", (CUresult)bad);
    }
    ns[0] = t1 - t0;
    ns[1] = t2 - t1;
    ns[2] = t3 - t2;
    return 0;
}

/* --- buffers, streams, events: M created, then destroyed ------------------------------------- */

static int create_one(scale *sc, const char *kind, long i, int side)
{
    if (kind[0] == 'b') {
        if (side)
            return cus_buffer_alloc(sc->ctx, BUF_BYTES, &sc->bufs[i]) ? fail_cus("cus_buffer_alloc")
                                                                        : 0;
        CUresult r = sc->raw.alloc(&sc->ptrs[i], BUF_BYTES);
        return r ? fail_raw("cuMemAlloc", r) : 0;
    }
    if (kind[0] == 's') {
        if (side)
            return cus_stream_create(sc->ctx, CU_STREAM_NON_BLOCKING, 0,
                                     (cus_stream **)&sc->objs[i])
                       ? fail_cus("cus_stream_create")
                       : 0;
        CUresult r = sc->raw.stream_create((CUstream *)&sc->objs[i], CU_STREAM_NON_BLOCKING, 0);
        return r ? fail_raw("cuStreamCreateWithPriority", r) : 0;
    }
    if (side)
        return cus_event_create(sc->ctx, CU_EVENT_DEFAULT, (cus_event **)&sc->objs[i])
                   ? fail_cus("cus_event_create")
                   : 0;
    CUresult r = sc->raw.event_create((CUevent *)&sc->objs[i], CU_EVENT_DEFAULT);
    return r ? fail_raw("cuEventCreate", r) : 0;
}

static int destroy_one(scale *sc, const char *kind, long i, int side)
{
    CUresult r = CUDA_SUCCESS;
    if (kind[0] == 'b') {
        if (side)
            cus_buffer_unref(sc->bufs[i]);
        else
            r = sc->raw.free(sc->ptrs[i]);
    } else if (kind[0] == 's') {
        if (side)
            cus_stream_unref(sc->objs[i]);
        else
            r = sc->raw.stream_destroy(sc->objs[i]);
    } else {
        if (side)
            cus_event_unref(sc->objs[i]);
        else
            r = sc->raw.event_destroy(sc->objs[i]);
    }
    return r ? fail_raw("the raw destroy", r) : 0;
}

static int round_objects(scale *sc, curve *c, long m, int side, double *ns, double *units)
{
    const char *kind = c->name;
    units[0] = units[1] = (double)m;
    int bad = 0;
    double t0 = bench_now_ns();
    for (long i = 0; i < m && !bad; i++)
        bad = create_one(sc, kind, i, side);
    double t1 = bench_now_ns();
    for (long i = 0; i < m && !bad; i++)
        bad = destroy_one(sc, kind, i, side);
    double t2 = bench_now_ns();
    ns[0] = t1 - t0;
    ns[1] = t2 - t1;
    return bad;
}

/* --- push / pop at depth D ------------------------------------------------------------------- */

static int round_push_pop(scale *sc, curve *c, long d, int side, double *ns, double *units)
{
    (void)c;
    long reps = (sc->opt.quick ? 2000 : 20000) / d;
    if (reps < 1)
        reps = 1;
    units[0] = (double)d;
    int bad = 0;
    CUcontext got;
    double t0 = bench_now_ns();
    for (long k = 0; k < reps; k++) {
        if (side) {
            for (long i = 0; i < d; i++)
                bad |= cus_context_push(sc->ctx);
            for (long i = 0; i < d; i++)
                bad |= cus_context_pop(NULL);
        } else {
            for (long i = 0; i < d; i++)
                bad |= (int)sc->raw.push(sc->hctx);
            for (long i = 0; i < d; i++)
                bad |= (int)sc->raw.pop(&got);
        }
    }
    ns[0] = (bench_now_ns() - t0) / (double)reps;
    return bad ? (side ? fail_cus("push/pop") : fail_raw("push/pop", (CUresult)bad)) : 0;
}

/* --- threads on one context ------------------------------------------------------------------ */

enum { PHASE_LAUNCH, PHASE_ALLOC, PHASE_CAPTURE, PHASES };
#define MAX_THREADS 16

typedef struct worker {
    scale *sc;
    pthread_t thread;
    int side, phase, ops;
    cus_stream *stream;
    CUstream hs;
    cus_buffer *buf;
    CUdeviceptr ptr;
    pthread_barrier_t *barrier;
    int bad;
    char error[200];
} worker;

static int worker_fail(worker *w, const char *what, int status)
{
    if (w->bad)
        return -1;
    w->bad = 1;
    snprintf(w->error, sizeof w->error, "%s: %s", what,
             w->side ? cus_last_error_message() : cus_status_name((cus_status)status));
    return -1;
}

static int worker_launch(worker *w)
{
    scale *sc = w->sc;
    for (int i = 0; i < w->ops; i++) {
        if (w->side) {
            if (cus_launch(sc->fn, 1, 1, 0, w->stream, w->buf))
                return worker_fail(w, "cus_launch", 0);
        } else {
            void *args[] = {&w->ptr};
            CUresult r = sc->raw.launch(sc->hfn, 1, 1, 1, 1, 1, 1, 0, w->hs, args, NULL);
            if (r)
                return worker_fail(w, "cuLaunchKernel", (int)r);
        }
    }
    return 0;
}

static int worker_alloc(worker *w)
{
    scale *sc = w->sc;
    for (int i = 0; i < w->ops; i++) {
        if (w->side) {
            cus_buffer *b = NULL;
            if (cus_buffer_alloc(sc->ctx, BUF_BYTES, &b))
                return worker_fail(w, "cus_buffer_alloc", 0);
            cus_buffer_unref(b);
        } else {
            CUdeviceptr p = 0;
            CUresult r = sc->raw.alloc(&p, BUF_BYTES);
            if (!r)
                r = sc->raw.free(p);
            if (r)
                return worker_fail(w, "cuMemAlloc / cuMemFree", (int)r);
        }
    }
    return 0;
}

static int worker_capture(worker *w)
{
    scale *sc = w->sc;
    for (int i = 0; i < w->ops; i++) {
        if (w->side) {
            cus_graph *g = NULL;
            cus_capture_guard cap =
                cus_capture_begin(w->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
            if (cap.status)
                return worker_fail(w, "cus_capture_begin", 0);
            int bad = 0;
            for (int k = 0; k < THREAD_CAPTURE_LAUNCHES; k++)
                bad |= cus_launch(sc->fn, 1, 1, 0, w->stream, w->buf);
            if (bad) {
                cus_capture_abandon(&cap);
                return worker_fail(w, "cus_launch in a capture", 0);
            }
            if (cus_capture_end(&cap, &g))
                return worker_fail(w, "cus_capture_end", 0);
            cus_graph_unref(g);
        } else {
            CUgraph g = NULL;
            CUresult r = sc->raw.begin(w->hs, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
            if (r)
                return worker_fail(w, "cuStreamBeginCapture", (int)r);
            void *args[] = {&w->ptr};
            for (int k = 0; k < THREAD_CAPTURE_LAUNCHES && !r; k++)
                r = sc->raw.launch(sc->hfn, 1, 1, 1, 1, 1, 1, 0, w->hs, args, NULL);
            CUresult re = sc->raw.end(w->hs, &g);
            if (r || re)
                return worker_fail(w, "cuLaunchKernel / cuStreamEndCapture", (int)(r ? r : re));
            if ((r = sc->raw.graph_destroy(g)))
                return worker_fail(w, "cuGraphDestroy", (int)r);
        }
    }
    return 0;
}

static void *worker_main(void *p)
{
    worker *w = p;
    /* The context current on this thread, for both sides (the raw calls need
     * it; cuscope's launches find it on top). Not timed. */
    if (cus_context_push(w->sc->ctx))
        worker_fail(w, "cus_context_push", 0);
    /* One operation of the phase first, untimed, on either side: a new
     * thread's first allocation maps it a malloc arena (tens of
     * microseconds, which cuscope's records pay and the driver's own
     * allocator does not), and that is the thread's start, not the phase. */
    int ops = w->ops;
    w->ops = 1;
    if (!w->bad)
        (void)(w->phase == PHASE_LAUNCH  ? worker_launch(w)
               : w->phase == PHASE_ALLOC ? worker_alloc(w)
                                         : worker_capture(w));
    w->ops = ops;
    pthread_barrier_wait(w->barrier);
    if (!w->bad)
        (void)(w->phase == PHASE_LAUNCH  ? worker_launch(w)
               : w->phase == PHASE_ALLOC ? worker_alloc(w)
                                         : worker_capture(w));
    pthread_barrier_wait(w->barrier);
    cus_context_pop(NULL);
    return NULL;
}

typedef struct threads_state {
    worker w[MAX_THREADS];
    int ops[PHASES];
} threads_state;

static threads_state *threads_st;

static int prepare_threads(scale *sc, curve *c, long t)
{
    (void)c;
    threads_state *ts = calloc(1, sizeof *ts);
    if (!ts)
        return -1;
    threads_st = ts;
    /* Enough per thread that one thread's phase lasts milliseconds on a GPU
     * (at 50 captures a round, T = 1 moved by half between runs). */
    ts->ops[PHASE_LAUNCH] = sc->opt.quick ? 50 : 4000;
    ts->ops[PHASE_ALLOC] = sc->opt.quick ? 20 : 800;
    ts->ops[PHASE_CAPTURE] = sc->opt.quick ? 5 : 200;
    for (long i = 0; i < t; i++) {
        worker *w = &ts->w[i];
        if (cus_stream_create(sc->ctx, CU_STREAM_NON_BLOCKING, 0, &w->stream) ||
            cus_buffer_alloc(sc->ctx, BUF_BYTES, &w->buf))
            return fail_cus("the threads' streams and buffers");
        w->hs = cus_stream_handle(w->stream);
        w->ptr = cus_buffer_ptr(w->buf);
    }
    return 0;
}

static void finish_threads(scale *sc, curve *c)
{
    (void)sc;
    (void)c;
    for (int i = 0; i < MAX_THREADS; i++) {
        cus_buffer_unref(threads_st->w[i].buf);
        cus_stream_unref(threads_st->w[i].stream);
    }
    free(threads_st);
    threads_st = NULL;
}

/* The wall time of one phase on t threads; -1 on failure. */
static double run_phase(scale *sc, long t, int side, int phase)
{
    threads_state *ts = threads_st;
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, (unsigned)t + 1);
    long started = 0;
    for (long i = 0; i < t; i++) {
        worker *w = &ts->w[i];
        w->sc = sc;
        w->side = side;
        w->phase = phase;
        w->ops = ts->ops[phase];
        w->barrier = &barrier;
        w->bad = 0;
        if (pthread_create(&w->thread, NULL, worker_main, w))
            break;
        started++;
    }
    if (started < t) {
        /* the barrier cannot complete without them: nothing to unwind to */
        fprintf(stderr, PROG ": pthread_create failed after %ld threads\n", started);
        exit(1);
    }
    pthread_barrier_wait(&barrier);
    double t0 = bench_now_ns();
    pthread_barrier_wait(&barrier);
    double t1 = bench_now_ns();
    int bad = 0;
    for (long i = 0; i < t; i++) {
        pthread_join(ts->w[i].thread, NULL);
        if (ts->w[i].bad && !bad) {
            fprintf(stderr, PROG ": thread %ld: %s\n", i, ts->w[i].error);
            bad = 1;
        }
    }
    pthread_barrier_destroy(&barrier);
    /* What the launches queued runs now, untimed. */
    for (long i = 0; i < t && !bad; i++)
        if (cus_stream_synchronize(ts->w[i].stream))
            bad = fail_cus("cus_stream_synchronize");
    return bad ? -1 : t1 - t0;
}

static int round_threads(scale *sc, curve *c, long t, int side, double *ns, double *units)
{
    threads_state *ts = threads_st;
    size_t live0 = cus_debug_live_objects();
    size_t graphs0 = sc->env.fake ? cus_fake_live_handles(CUS_FAKE_HANDLE_GRAPH) : 0;
    for (int ph = 0; ph < PHASES; ph++) {
        units[ph] = (double)t * ts->ops[ph];
        if ((ns[ph] = run_phase(sc, t, side, ph)) < 0)
            return -1;
    }
    if (side) {
        /* After the capture phase every thread has released its graphs:
         * what is alive beyond the bench's objects is what was not. */
        int idx = c->s[0].npoints; /* the point being measured */
        long left = (long)cus_debug_live_objects() - (long)live0;
        long graphs = sc->env.fake ? (long)cus_fake_live_handles(CUS_FAKE_HANDLE_GRAPH) -
                                         (long)graphs0
                                   : 0;
        if (left > c->extra[0][idx])
            c->extra[0][idx] = left;
        if (graphs > c->extra[1][idx])
            c->extra[1][idx] = graphs;
    }
    return 0;
}

/* --- lookups in a module of K kernels -------------------------------------------------------- */

static int prepare_lookup(scale *sc, curve *c, long k)
{
    (void)c;
    size_t len = 0;
    char *text = ptx_module(sc, k, false, &len);
    free(sc->names);
    sc->names = calloc((size_t)k, sizeof *sc->names);
    if (!text || !sc->names) {
        free(text);
        fprintf(stderr, PROG ": out of memory\n");
        return -1;
    }
    int bad = load_ptx(sc, text, len, &sc->lmod);
    free(text);
    if (bad)
        return -1;
    for (long i = 0; i < k; i++)
        snprintf(sc->names[i], sizeof sc->names[i], "k%ld", i);
    /* Every name once on both sides: cuscope's cache is warm, as it is for
     * any lookup after the first. */
    for (long i = 0; i < k; i++) {
        cus_function *f = NULL;
        CUfunction h;
        if (cus_module_get_function(sc->lmod, sc->names[i], &f))
            return fail_cus("cus_module_get_function");
        cus_function_unref(f);
        CUresult r = sc->raw.get_function(&h, cus_module_handle(sc->lmod), sc->names[i]);
        if (r)
            return fail_raw("cuModuleGetFunction", r);
    }
    return 0;
}

static void finish_lookup(scale *sc, curve *c)
{
    (void)c;
    sc->lmod = cus_module_unref(sc->lmod);
}

static int round_lookup(scale *sc, curve *c, long k, int side, double *ns, double *units)
{
    (void)c;
    long passes = (sc->opt.quick ? 2000 : 20000) / k;
    if (passes < 1)
        passes = 1;
    units[0] = (double)k;
    CUmodule hm = cus_module_handle(sc->lmod);
    int bad = 0;
    double t0 = bench_now_ns();
    for (long p = 0; p < passes; p++) {
        if (side) {
            for (long i = 0; i < k; i++) {
                cus_function *f = NULL;
                bad |= cus_module_get_function(sc->lmod, sc->names[i], &f);
                cus_function_unref(f);
            }
        } else {
            for (long i = 0; i < k; i++) {
                CUfunction h;
                bad |= (int)sc->raw.get_function(&h, hm, sc->names[i]);
                __asm__ volatile("" ::"r"(h) : "memory");
            }
        }
    }
    ns[0] = (bench_now_ns() - t0) / (double)passes;
    return bad ? (side ? fail_cus("lookup") : fail_raw("lookup", (CUresult)bad)) : 0;
}

/* --- exec updates ---------------------------------------------------------------------------- */

/* U + 1 graphs of one launch each, untimed. */
static int capture_graphs(scale *sc, long n, int side)
{
    CUdeviceptr p = cus_buffer_ptr(sc->bufs[0]);
    for (long i = 0; i < n; i++) {
        if (side) {
            cus_capture_guard cap = cus_capture_begin(sc->stream, CU_STREAM_CAPTURE_MODE_GLOBAL);
            if (cap.status)
                return fail_cus("cus_capture_begin");
            if (cus_launch(sc->fn, 1, 1, 0, sc->stream, sc->bufs[0])) {
                cus_capture_abandon(&cap);
                return fail_cus("cus_launch");
            }
            if (cus_capture_end(&cap, &sc->graphs[i]))
                return fail_cus("cus_capture_end");
        } else {
            CUresult r = sc->raw.begin(sc->hs, CU_STREAM_CAPTURE_MODE_GLOBAL);
            void *args[] = {&p};
            if (!r)
                r = sc->raw.launch(sc->hfn, 1, 1, 1, 1, 1, 1, 0, sc->hs, args, NULL);
            CUresult re = sc->raw.end(sc->hs, &sc->hgraphs[i]);
            if (r || re)
                return fail_raw("capturing the graphs", r ? r : re);
        }
    }
    return 0;
}

static int prepare_update(scale *sc, curve *c, long u)
{
    if (prepare_scratch(sc, c, u))
        return -1;
    /* one buffer, every graph's argument (bufs[0], the raw side too) */
    if (cus_buffer_alloc(sc->ctx, BUF_BYTES, &sc->bufs[0]))
        return fail_cus("cus_buffer_alloc");
    return 0;
}

static void finish_update(scale *sc, curve *c)
{
    (void)c;
    sc->bufs[0] = cus_buffer_unref(sc->bufs[0]);
}

static int round_update(scale *sc, curve *c, long u, int side, double *ns, double *units)
{
    units[0] = (double)u;
    units[1] = (double)(u + 1);
    size_t live0 = cus_debug_live_objects(); /* the bench's own */
    if (capture_graphs(sc, u + 1, side))
        return -1;
    double t0, t1, t2, t3;
    int bad = 0;
    if (side) {
        cus_graph_exec *e = NULL;
        if (cus_graph_instantiate(sc->graphs[0], 0, &e))
            return fail_cus("cus_graph_instantiate");
        t0 = bench_now_ns();
        for (long i = 1; i <= u; i++)
            bad |= cus_graph_exec_update(e, sc->graphs[i], NULL);
        t1 = bench_now_ns();
        if (bad)
            return fail_cus("cus_graph_exec_update");
        /* the exec keeps the graphs it was updated to: the bench lets go */
        for (long i = 1; i <= u; i++)
            cus_graph_unref(sc->graphs[i]);
        size_t live1 = cus_debug_live_objects();
        t2 = bench_now_ns();
        cus_graph_exec_unref(e);
        cus_graph_unref(sc->graphs[0]);
        t3 = bench_now_ns();
        size_t live2 = cus_debug_live_objects();
        int idx = c->s[0].npoints;
        c->extra[0][idx] = (long)live1 - (long)live0;
        c->extra[1][idx] = (long)live2 - (long)live0;
    } else {
        CUgraphExec e = NULL;
        CUresult r = sc->raw.instantiate(&e, sc->hgraphs[0], 0);
        if (r)
            return fail_raw("cuGraphInstantiateWithFlags", r);
        t0 = bench_now_ns();
        for (long i = 1; i <= u; i++) {
            CUgraphExecUpdateResultInfo info;
            bad |= (int)sc->raw.exec_update(e, sc->hgraphs[i], &info);
        }
        t1 = bench_now_ns();
        if (bad)
            return fail_raw("cuGraphExecUpdate", (CUresult)bad);
        t2 = bench_now_ns();
        bad |= (int)sc->raw.exec_destroy(e);
        for (long i = 0; i <= u; i++)
            bad |= (int)sc->raw.graph_destroy(sc->hgraphs[i]);
        t3 = bench_now_ns();
        if (bad)
            return fail_raw("the raw teardown", (CUresult)bad);
    }
    ns[0] = t1 - t0;
    ns[1] = t3 - t2;
    return 0;
}

/* --- the curves ------------------------------------------------------------------------------ */

static const long capture_sizes[] = {10, 100, 1000, 10000, 100000};
static const long capture_quick[] = {10, 100, 1000};
static const long object_sizes[] = {100, 1000, 10000, 100000};
static const long object_quick[] = {100, 1000};
static const long depth_sizes[] = {1, 10, 100, 1000};
static const long depth_quick[] = {1, 10, 100};
static const long thread_sizes[] = {1, 2, 4, 8, 16};
static const long thread_quick[] = {1, 2, 4};
static const long lookup_sizes[] = {1, 10, 100, 1000};
static const long lookup_quick[] = {1, 10, 100};
static const long update_sizes[] = {10, 100, 1000, 10000};
static const long update_quick[] = {10, 100};

#define SIZES_(full, quick)                                                                        \
    .sizes = full, .nsizes = (int)(sizeof full / sizeof full[0]), .quick_sizes = quick,         \
    .nquick = (int)(sizeof quick / sizeof quick[0])

#define SERIES_(n, u) {.name = n, .unit = u}

static curve curves[] = {
    {.name = "capture-same",
     .title = "capture of N launches, one buffer argument, the same buffer each launch",
     .size_name = "N", SIZES_(capture_sizes, capture_quick), .round_units = 20000,
     .nseries = 3,
     .s = {SERIES_("capture", "ns per launch (begin + N launches + end)"),
           SERIES_("instantiate", "ns per node"),
           SERIES_("teardown",
                   "ns per node (exec destroy, graph destroy, the buffer released)")},
     .round = round_capture, .prepare = prepare_scratch},
    {.name = "capture-distinct",
     .title = "capture of N launches, N distinct buffers (allocated before, not timed)",
     .size_name = "N", SIZES_(capture_sizes, capture_quick), .round_units = 20000,
     .nseries = 3,
     .s = {SERIES_("capture", "ns per launch (begin + N launches + end)"),
           SERIES_("instantiate", "ns per node"),
           SERIES_("teardown",
                   "ns per node (exec destroy, graph destroy, the N buffers released)")},
     .round = round_capture, .prepare = prepare_scratch},
    {.name = "graph-build",
     .title = "N kernel nodes added by hand, each after the one before, one buffer argument",
     .size_name = "N", SIZES_(capture_sizes, capture_quick), .round_units = 20000,
     .nseries = 3,
     .s = {SERIES_("build", "ns per node (graph create + N nodes: cus_graph_add_kernel / "
                            "cuGraphAddKernelNode)"),
           SERIES_("instantiate", "ns per node"),
           SERIES_("teardown", "ns per node (exec destroy, graph destroy, the buffer released)")},
     .round = round_build, .prepare = prepare_scratch},
    {.name = "buffers", .title = "M buffers of 256 bytes allocated, then all freed",
     .size_name = "M", SIZES_(object_sizes, object_quick), .round_units = 50000, .nseries = 2,
     .s = {SERIES_("create", "ns per buffer (cus_buffer_alloc / cuMemAlloc)"),
           SERIES_("destroy", "ns per buffer (cus_buffer_unref / cuMemFree)")},
     .round = round_objects, .prepare = prepare_scratch},
    {.name = "streams", .title = "M non-blocking streams created, then all destroyed",
     .size_name = "M", SIZES_(object_sizes, object_quick), .round_units = 50000, .nseries = 2,
     .s = {SERIES_("create", "ns per stream (cus_stream_create / cuStreamCreateWithPriority)"),
           SERIES_("destroy", "ns per stream (cus_stream_unref / cuStreamDestroy)")},
     .round = round_objects, .prepare = prepare_scratch},
    {.name = "events", .title = "M events created, then all destroyed", .size_name = "M",
     SIZES_(object_sizes, object_quick), .round_units = 50000, .nseries = 2,
     .s = {SERIES_("create", "ns per event (cus_event_create / cuEventCreate)"),
           SERIES_("destroy", "ns per event (cus_event_unref / cuEventDestroy)")},
     .round = round_objects, .prepare = prepare_scratch},
    {.name = "push-pop",
     .title = "the same context pushed D times, then popped back (repeated within a round)",
     .size_name = "D", SIZES_(depth_sizes, depth_quick), .round_units = 1e9, .nseries = 1,
     .s = {SERIES_("push+pop", "ns per push + pop pair")}, .round = round_push_pop},
    {.name = "threads",
     .title = "T threads on one context, each on its own stream: aggregate time per operation",
     .size_name = "T", SIZES_(thread_sizes, thread_quick), .uncapped = true, .round_units = 120,
     .nseries = 3,
     .s = {SERIES_("launch", "ns per launch (all threads' launches / the phase's wall time)"),
           SERIES_("alloc+free", "ns per allocation + free pair"),
           SERIES_("capture", "ns per capture of 16 launches (THREAD_LOCAL; graph released)")},
     .round = round_threads, .prepare = prepare_threads, .finish = finish_threads,
     .extra_names = {"cuscope objects alive after the capture phase, beyond the bench's (max "
                     "over rounds)",
                     "the fake's graph handles alive after it (max over rounds)"},
     .nextra = 2},
    {.name = "lookup",
     .title = "lookups by name in a generated PTX module of K kernels, each name in turn",
     .size_name = "K", SIZES_(lookup_sizes, lookup_quick), .round_units = 1e9, .nseries = 1,
     .s = {SERIES_("lookup", "ns per lookup (cus_module_get_function + unref / "
                             "cuModuleGetFunction), cache warm")},
     .round = round_lookup, .prepare = prepare_lookup, .finish = finish_lookup},
    {.name = "exec-update",
     .title = "U updates of one executable graph, each to another one-launch graph",
     .size_name = "U", SIZES_(update_sizes, update_quick), .round_units = 20000, .nseries = 2,
     .s = {SERIES_("update", "ns per update (cus_graph_exec_update / cuGraphExecUpdate)"),
           SERIES_("teardown", "ns per graph (the exec and the U + 1 graphs released)")},
     .round = round_update, .prepare = prepare_update, .finish = finish_update,
     .extra_names = {"cuscope objects alive before the teardown, beyond the bench's (the exec "
                     "and the graphs it still holds; 0.1 held all U + 1)",
                     "cuscope objects alive after the teardown, beyond the bench's"},
     .nextra = 2},
};
enum { NCURVES = sizeof curves / sizeof curves[0] };

/* --- output ---------------------------------------------------------------------------------- */

static void print_curve(const scale *sc, const curve *c)
{
    printf("\n%s: %s (%.1f s)\n", c->name, c->title, c->wall_s);
    for (int i = 0; i < c->nnotes; i++)
        printf("  note: %s\n", c->notes[i]);
    for (int s = 0; s < c->nseries; s++) {
        const series *se = &c->s[s];
        printf("  %s, %s\n", se->name, se->unit);
        printf("    %8s %6s %12s %12s %8s\n", c->size_name, "rounds", "raw ns", "cuscope ns",
               "ratio");
        for (int i = 0; i < se->npoints; i++) {
            const point *p = &se->pts[i];
            double r = p->raw_total / p->units, q = p->cus_total / p->units;
            printf("    %8ld %6d %12.1f %12.1f %8.3f\n", p->size, p->rounds, r, q,
                   r > 0 ? q / r : 0);
        }
        double er = growth_exponent(se, false), ec = growth_exponent(se, true);
        if (!isnan(er) && !isnan(ec))
            printf("    growth exponent (least-squares slope of log total over log %s): raw "
                   "%.2f, cuscope %.2f; between the two largest: raw %.2f, cuscope %.2f\n",
                   c->size_name, er, ec, tail_exponent(se, false), tail_exponent(se, true));
    }
    for (int x = 0; x < c->nextra; x++) {
        printf("  %s:", c->extra_names[x]);
        for (int i = 0; i < c->s[0].npoints; i++)
            printf(" %s=%ld: %ld%s", c->size_name, c->s[0].pts[i].size, c->extra[x][i],
                   i + 1 < c->s[0].npoints ? "," : "");
        if (x == 1 && !strcmp(c->name, "threads") && !sc->env.fake)
            printf(" (on the fake only)");
        putchar('\n');
    }
}

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

static void json_number(FILE *f, double v)
{
    if (isnan(v) || isinf(v))
        fputs("null", f);
    else
        fprintf(f, "%.6g", v);
}

static void write_json(FILE *f, const scale *sc, const char *date, double total_s)
{
    const bench_env *e = &sc->env;
    fprintf(f, "{\"bench\":\"scale\",\"driver\":\"%s\",\"fake\":%s,\"device\":", e->driver,
            e->fake ? "true" : "false");
    json_string(f, e->device_name);
    fprintf(f, ",\"driver_version\":%d,\"date\":\"%s\",\"quick\":%s,\"max\":%ld,"
               "\"budget_s\":%g,\"time_limit_s\":%g,\"total_s\":%.2f,\"ptx_target\":\"%s\","
               "\"curves\":[",
            e->version, date, sc->opt.quick ? "true" : "false", sc->opt.max, sc->opt.budget_s,
            sc->opt.limit_s, total_s, sc->target);
    bool first = true;
    for (int ci = 0; ci < NCURVES; ci++) {
        const curve *c = &curves[ci];
        if (!c->ran)
            continue;
        fprintf(f, "%s\n{\"name\":\"%s\",\"title\":", first ? "" : ",", c->name);
        first = false;
        json_string(f, c->title);
        fprintf(f, ",\"size_name\":\"%s\",\"wall_s\":%.2f,\"notes\":[", c->size_name, c->wall_s);
        for (int i = 0; i < c->nnotes; i++) {
            if (i)
                fputc(',', f);
            json_string(f, c->notes[i]);
        }
        fprintf(f, "],\"series\":[");
        for (int s = 0; s < c->nseries; s++) {
            const series *se = &c->s[s];
            fprintf(f, "%s{\"name\":", s ? "," : "");
            json_string(f, se->name);
            fprintf(f, ",\"unit\":");
            json_string(f, se->unit);
            fprintf(f, ",\"exponent\":{\"raw\":");
            json_number(f, growth_exponent(se, false));
            fprintf(f, ",\"cuscope\":");
            json_number(f, growth_exponent(se, true));
            fprintf(f, ",\"raw_tail\":");
            json_number(f, tail_exponent(se, false));
            fprintf(f, ",\"cuscope_tail\":");
            json_number(f, tail_exponent(se, true));
            fprintf(f, "},\"points\":[");
            for (int i = 0; i < se->npoints; i++) {
                const point *p = &se->pts[i];
                fprintf(f, "%s{\"size\":%ld,\"rounds\":%d,\"units\":%.0f,\"raw_ns\":", i ? "," : "",
                        p->size, p->rounds, p->units);
                json_number(f, p->raw_total / p->units);
                fprintf(f, ",\"cuscope_ns\":");
                json_number(f, p->cus_total / p->units);
                fprintf(f, ",\"ratio\":");
                json_number(f, p->raw_total > 0 ? p->cus_total / p->raw_total : NAN);
                fprintf(f, ",\"raw_total_ns\":");
                json_number(f, p->raw_total);
                fprintf(f, ",\"cuscope_total_ns\":");
                json_number(f, p->cus_total);
                fprintf(f, ",\"raw_min_total_ns\":");
                json_number(f, p->raw_min);
                fprintf(f, ",\"cuscope_min_total_ns\":");
                json_number(f, p->cus_min);
                fputc('}', f);
            }
            fprintf(f, "]}");
        }
        fprintf(f, "],\"extra\":[");
        for (int x = 0; x < c->nextra; x++) {
            fprintf(f, "%s{\"name\":", x ? "," : "");
            json_string(f, c->extra_names[x]);
            fprintf(f, ",\"values\":[");
            for (int i = 0; i < c->s[0].npoints; i++)
                fprintf(f, "%s{\"size\":%ld,\"value\":%ld}", i ? "," : "", c->s[0].pts[i].size,
                        c->extra[x][i]);
            fprintf(f, "]}");
        }
        fprintf(f, "]}");
    }
    fprintf(f, "\n]}\n");
}

/* --- main ------------------------------------------------------------------------------------ */

static void usage(FILE *f)
{
    fprintf(f, "usage: " PROG " [--quick] [--json FILE] [--curve NAME[,NAME...]] [--max N]\n"
               "                   [--budget S] [--time-limit S] [--rounds N]\n"
               "  --quick        small sizes, a round or two each (CI: a few seconds on the fake)\n"
               "  --json FILE    everything as JSON to FILE as well (--json-file FILE: the same)\n"
               "  --curve NAME   only these curves (repeatable):");
    for (int i = 0; i < NCURVES; i++)
        fprintf(f, " %s", curves[i].name);
    fprintf(f, "\n  --max N        no size above N (thread counts excepted)\n"
               "  --budget S     leave out a size projected above S seconds (default 30; "
               "quick 2)\n"
               "  --time-limit S the whole run within about S seconds: sizes that would not fit\n"
               "                 are left out (default: none)\n"
               "  --rounds N     rounds per size (default: by size, 3..21; quick 1..2)\n");
}

static int parse_long(const char *opt, const char *arg, long lo, long *out)
{
    char *end = NULL;
    double v = arg ? strtod(arg, &end) : 0; /* 1e5 is a size too */
    if (!arg || *end || v < (double)lo || v > 1e9 || v != (double)(long)v) {
        fprintf(stderr, PROG ": %s wants a whole number from %ld\n", opt, lo);
        return -1;
    }
    *out = (long)v;
    return 0;
}

static int parse_args(int argc, char **argv, scale_opts *o)
{
    memset(o, 0, sizeof *o);
    o->budget_s = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *next = i + 1 < argc ? argv[i + 1] : NULL;
        long v = 0;
        if (!strcmp(a, "--quick")) {
            o->quick = true;
        } else if (!strcmp(a, "--json") || !strcmp(a, "--json-file")) {
            if (!next) {
                fprintf(stderr, PROG ": %s wants a file\n", a);
                return -1;
            }
            o->json_file = argv[++i];
        } else if (!strcmp(a, "--curve")) {
            if (!next) {
                fprintf(stderr, PROG ": --curve wants a name\n");
                return -1;
            }
            i++;
            for (char *tok = strtok(argv[i], ","); tok; tok = strtok(NULL, ",")) {
                bool known = false;
                for (int k = 0; k < NCURVES; k++)
                    known |= !strcmp(curves[k].name, tok);
                if (!known || o->ncurves == 16) {
                    fprintf(stderr, PROG ": unknown curve '%s'\n", tok);
                    usage(stderr);
                    return -1;
                }
                o->curves[o->ncurves++] = tok;
            }
        } else if (!strcmp(a, "--max")) {
            if (parse_long(a, next, 1, &v))
                return -1;
            o->max = v;
            i++;
        } else if (!strcmp(a, "--rounds")) {
            if (parse_long(a, next, 1, &v))
                return -1;
            o->rounds = (int)v;
            i++;
        } else if (!strcmp(a, "--budget")) {
            if (parse_long(a, next, 1, &v))
                return -1;
            o->budget_s = (double)v;
            i++;
        } else if (!strcmp(a, "--time-limit")) {
            if (parse_long(a, next, 1, &v))
                return -1;
            o->limit_s = (double)v;
            i++;
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            exit(0);
        } else {
            fprintf(stderr, PROG ": unknown option %s\n", a);
            usage(stderr);
            return -1;
        }
    }
    if (o->budget_s < 0)
        o->budget_s = o->quick ? 2 : 30;
    return 0;
}

static bool wanted(const scale_opts *o, const char *name)
{
    if (!o->ncurves)
        return true;
    for (int i = 0; i < o->ncurves; i++)
        if (!strcmp(o->curves[i], name))
            return true;
    return false;
}

static int open_all(scale *sc)
{
    raw_api *r = &sc->raw;
    const bench_sym syms[] = {
        {"cuCtxPushCurrent", 4000, &r->push},
        {"cuCtxPopCurrent", 4000, &r->pop},
        {"cuMemAlloc", 3020, &r->alloc},
        {"cuMemFree", 3020, &r->free},
        {"cuStreamCreateWithPriority", 5050, &r->stream_create},
        {"cuStreamDestroy", 4000, &r->stream_destroy},
        {"cuStreamSynchronize", 2000, &r->sync},
        {"cuEventCreate", 2000, &r->event_create},
        {"cuEventDestroy", 4000, &r->event_destroy},
        {"cuModuleGetFunction", 2000, &r->get_function},
        {"cuLaunchKernel", 4000, &r->launch},
        {"cuStreamBeginCapture", 10010, &r->begin},
        {"cuStreamEndCapture", 10000, &r->end},
        {"cuGraphInstantiateWithFlags", 11040, &r->instantiate},
        {"cuGraphExecDestroy", 10000, &r->exec_destroy},
        {"cuGraphDestroy", 10000, &r->graph_destroy},
        {"cuGraphExecUpdate", 12000, &r->exec_update},
        {"cuGraphCreate", 10000, &r->graph_create},
        {"cuGraphAddKernelNode", 12000, &r->add_kernel_node},
        {"cuThreadExchangeStreamCaptureMode", 10010, &r->exchange},
        {"cuStreamGetCaptureInfo", 10010, &r->capture_info},
    };
    if (bench_resolve(&sc->env, syms, sizeof syms / sizeof syms[0]))
        return -1;
    if (cus_context_retain_primary(sc->env.dev, &sc->ctx))
        return fail_cus("cus_context_retain_primary");
    sc->hctx = cus_context_handle(sc->ctx);
    /* Current on the main thread throughout: cuscope's fast path, and what
     * the raw calls need. */
    if (cus_context_push(sc->ctx))
        return fail_cus("cus_context_push");
    if (cus_stream_create(sc->ctx, CU_STREAM_NON_BLOCKING, 0, &sc->stream))
        return fail_cus("cus_stream_create");
    sc->hs = cus_stream_handle(sc->stream);
    ptx_target(sc);
    size_t len = 0;
    char *text = ptx_module(sc, 1, true, &len);
    if (!text)
        return -1;
    int bad = load_ptx(sc, text, len, &sc->mod);
    free(text);
    if (bad)
        return -1;
    if (cus_module_get_function(sc->mod, "touch", &sc->fn))
        return fail_cus("cus_module_get_function");
    sc->hfn = cus_function_handle(sc->fn);
    return 0;
}

/* The bench's own objects go (the scratch stays). */
static void close_objects(scale *sc)
{
    sc->fn = cus_function_unref(sc->fn);
    sc->mod = cus_module_unref(sc->mod);
    sc->stream = cus_stream_unref(sc->stream);
    if (sc->ctx)
        cus_context_pop(NULL);
    sc->ctx = cus_context_unref(sc->ctx);
}

static void close_all(scale *sc)
{
    close_objects(sc);
    free(sc->bufs);
    free(sc->ptrs);
    free(sc->objs);
    free(sc->graphs);
    free(sc->hgraphs);
    free(sc->names);
}

/* On the fake, every curve after the first starts on a fresh one: the fake
 * keeps every record and block until the next install (an address is never
 * reused), so without this a curve would pay for the ones before it, and
 * --curve NAME would measure something else than the whole run. The misuse
 * count it reported so far is added to *misuse first. */
static int fresh_fake(scale *sc, unsigned long *misuse)
{
    *misuse += cus_fake_misuse_count();
    close_objects(sc);
    cus_status st = cus_fake_install(NULL);
    if (st) {
        fprintf(stderr, PROG ": reinstalling the fake: %s (%zu cuscope objects alive)\n",
                cus_status_name(st), cus_debug_live_objects());
        return -1;
    }
    if (cus_init() || cus_device_get(0, &sc->env.dev))
        return fail_cus("cus_init on the fresh fake");
    return open_all(sc);
}

/* On the fake, whose blocks are heap blocks it never frees before the next
 * install: the heap grown and its pages touched once, up front, so that the
 * page faults of fresh heap memory are not charged to whichever side
 * allocates first (bench_env_open keeps glibc from trimming it back). */
static void prefault_heap(size_t mib)
{
    void **blocks = calloc(mib, sizeof *blocks);
    if (!blocks)
        return;
    for (size_t i = 0; i < mib; i++)
        if ((blocks[i] = malloc((size_t)1 << 20)))
            memset(blocks[i], 0, (size_t)1 << 20);
    for (size_t i = mib; i-- > 0;)
        free(blocks[i]);
    free(blocks);
}

int main(int argc, char **argv)
{
    static scale sc;
    if (parse_args(argc, argv, &sc.opt))
        return 2;
    if (bench_env_open(PROG, &sc.env))
        return 1;
    if (sc.env.fake && !sc.opt.quick)
        prefault_heap(PREFAULT_MIB);
    double t_start = now_s();
    char date[32];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    if (open_all(&sc)) {
        close_all(&sc);
        return 1;
    }
    printf(PROG " on the %s driver: %s, driver API %d.%d, %s%s\n", sc.env.driver,
           sc.env.device_name, sc.env.version / 1000, sc.env.version % 1000 / 10, date,
           sc.opt.quick ? ", --quick" : "");
    printf("  %s\n", sc.env.fake ? "on the fake driver: the figures are cuscope's own CPU cost "
                                   "plus the fake's, which is the same on both sides; each "
                                   "curve on a freshly installed fake"
                                 : "on the real driver");
    printf("  each size: rounds of raw and cuscope, alternating; medians over the rounds; "
           "ratio cuscope/raw (>1: cuscope slower); kernels: generated PTX (.target %s)\n",
           sc.target);
    size_t live_start = cus_debug_live_objects();
    sc.t_start = now_s();
    int status = 0, done = 0;
    unsigned long misuse = 0;
    for (int i = 0; i < NCURVES && !status; i++) {
        if (!wanted(&sc.opt, curves[i].name))
            continue;
        fflush(stdout);
        if (sc.env.fake && done++ && fresh_fake(&sc, &misuse)) {
            status = 1;
            break;
        }
        if (run_curve(&sc, &curves[i]))
            status = 1;
        else
            print_curve(&sc, &curves[i]);
    }
    size_t live_end = cus_debug_live_objects();
    double total_s = now_s() - t_start;
    printf("\ncuscope objects alive: %zu before the curves, %zu after them (the bench's own)\n",
           live_start, live_end);
    if (sc.env.fake) {
        misuse += cus_fake_misuse_count();
        printf("the fake: %lu misuse(s) reported%s%s\n", misuse,
               cus_fake_misuse_count() ? ", the last: " : "", cus_fake_last_misuse());
    }
    printf("total: %.1f s\n", total_s);
    if (sc.opt.json_file && !status) {
        FILE *f = fopen(sc.opt.json_file, "w");
        if (!f) {
            fprintf(stderr, PROG ": %s: %s\n", sc.opt.json_file, strerror(errno));
            status = 1;
        } else {
            write_json(f, &sc, date, total_s);
            if (fclose(f)) {
                fprintf(stderr, PROG ": writing %s: %s\n", sc.opt.json_file, strerror(errno));
                status = 1;
            }
        }
    }
    close_all(&sc);
    return status;
}
