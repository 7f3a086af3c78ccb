/* bench-launch: what cus_launch costs against a raw cuLaunchKernel, side by
 * side in one process, interleaved in blocks (bench_common.h has the method).
 *
 *   submission:  back-to-back launches of the kernels of kernels/empty.cu
 *                with 0, 1 and 16 (mixed-size) arguments, on a stream that
 *                cuscope created, the function's context current (the fast
 *                path). The stream is synchronized after every block,
 *                outside the timed region, so the launch queue never fills.
 *                Also cus_function_launch with a prebuilt argument array,
 *                with sizes (checked) and without (sizes = NULL, unchecked),
 *                against a raw launch over the same array: the difference
 *                between the two is the argument check's cost.
 *                And the library kernel: kernels/empty.cu loaded as a
 *                library too (cuscope/library.h), cus_launch of its
 *                cus_kernel against cuLaunchKernel of its CUkernel (cast to
 *                CUfunction, as the driver allows), 0 arguments.
 *   single:      the same launches, each timed on its own with the cheap
 *                clock (median and p99 over single calls).
 *   slow path:   another context on top, so the launch pushes the
 *                function's context, launches and pops; against a raw
 *                cuCtxPushCurrent + cuLaunchKernel + cuCtxPopCurrent.
 *   round trip:  launch + stream synchronize, each iteration timed on its own.
 *
 * Raw entry points come from the driver cuscope loaded, at the ABI versions
 * cuscope uses. Runs on the real driver, or on the fake when there is none
 * (it says so): there the figures are cuscope's own CPU cost, plus the
 * fake's, which is the same on both sides. Prints a table; --json prints JSON.
 * --quick runs a few hundred calls (CI checks it runs). Never asserts timings.
 * Exits 77 (skipped) on a fake that has no modules or launches yet. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cudaTypedefs.h>

#include <cuscope/cuscope.h>

#include "bench_common.h"
#include "cusk-images.h"

typedef struct raw_api {
    PFN_cuLaunchKernel_v4000 launch;
    PFN_cuStreamSynchronize_v2000 sync;
    PFN_cuCtxPushCurrent_v4000 push;
    PFN_cuCtxPopCurrent_v4000 pop;
    PFN_cuOccupancyMaxActiveBlocksPerMultiprocessor_v6050 occupancy;
    PFN_cuLaunchKernelEx_v11060 launch_ex; /* NULL: no extended launch rows */
} raw_api;

/* empty16's parameter of struct type (kernels/empty.cu). */
struct cusk_pair {
    int a;
    double b;
};

typedef struct launch_arg {
    raw_api raw;
    cus_function *fn0, *fn1, *fn16;
    CUfunction h0, h1, h16;
    cus_stream *stream;
    CUstream hs;
    CUcontext ha; /* the functions' context */
    cus_kernel *k0; /* empty as a library kernel; NULL without libraries */
    CUfunction hk0; /* its CUkernel, cast */
    /* empty16's arguments, and a prebuilt array over them for the
     * cus_function_launch rows */
    char c0, c8;
    int i1, i9, i15;
    float f2, f10;
    double d3, d11;
    void *p4, *p12;
    short s5, s13;
    unsigned long long u6, u14;
    struct cusk_pair s7;
    void *args16[16];
    size_t sizes16[16];
} launch_arg;

static void prebuild16(launch_arg *c)
{
    c->c0 = 1, c->i1 = 2, c->f2 = 3.0f, c->d3 = 4.0, c->p4 = NULL, c->s5 = 5, c->u6 = 6;
    c->s7 = (struct cusk_pair){7, 7.5};
    c->c8 = 8, c->i9 = 9, c->f10 = 10.0f, c->d11 = 11.0, c->p12 = NULL, c->s13 = 13, c->u14 = 14;
    c->i15 = 15;
    void *a[16] = {&c->c0, &c->i1, &c->f2, &c->d3, &c->p4, &c->s5, &c->u6, &c->s7,
                   &c->c8, &c->i9, &c->f10, &c->d11, &c->p12, &c->s13, &c->u14, &c->i15};
    size_t s[16] = {sizeof c->c0, sizeof c->i1, sizeof c->f2, sizeof c->d3,
                    sizeof c->p4, sizeof c->s5, sizeof c->u6, sizeof c->s7,
                    sizeof c->c8, sizeof c->i9, sizeof c->f10, sizeof c->d11,
                    sizeof c->p12, sizeof c->s13, sizeof c->u14, sizeof c->i15};
    memcpy(c->args16, a, sizeof a);
    memcpy(c->sizes16, s, sizeof s);
}

/* --- the timed bodies: one function per variant, so that callgrind's
 * --toggle-collect can count each (their names start with loop_) ---------- */

#define RAW_LAUNCH(c, h, args) (c)->raw.launch((h), 1, 1, 1, 1, 1, 1, 0, (c)->hs, (args), NULL)

static BENCH_NOINLINE int loop_raw_launch0(void *p, int iters, uint64_t *ticks)
{
    launch_arg *c = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, bad |= (int)RAW_LAUNCH(c, c->h0, NULL));
    return bad;
}

static BENCH_NOINLINE int loop_cus_launch0(void *p, int iters, uint64_t *ticks)
{
    launch_arg *c = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, bad |= cus_launch(c->fn0, 1, 1, 0, c->stream));
    return bad;
}

static BENCH_NOINLINE int loop_raw_launch1(void *p, int iters, uint64_t *ticks)
{
    launch_arg *c = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        int a = 1;
        void *args[] = {&a};
        bad |= (int)RAW_LAUNCH(c, c->h1, args);
    });
    return bad;
}

static BENCH_NOINLINE int loop_cus_launch1(void *p, int iters, uint64_t *ticks)
{
    launch_arg *c = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, bad |= cus_launch(c->fn1, 1, 1, 0, c->stream, 1));
    return bad;
}

/* As a raw caller writes it: the argument array built at the call. */
static BENCH_NOINLINE int loop_raw_launch16(void *p, int iters, uint64_t *ticks)
{
    launch_arg *c = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        char c0 = 1, c8 = 8;
        int i1 = 2, i9 = 9, i15 = 15;
        float f2 = 3.0f, f10 = 10.0f;
        double d3 = 4.0, d11 = 11.0;
        void *p4 = NULL, *p12 = NULL;
        short s5 = 5, s13 = 13;
        unsigned long long u6 = 6, u14 = 14;
        struct cusk_pair s7 = {7, 7.5};
        void *args[] = {&c0, &i1, &f2, &d3, &p4, &s5, &u6, &s7,
                        &c8, &i9, &f10, &d11, &p12, &s13, &u14, &i15};
        bad |= (int)RAW_LAUNCH(c, c->h16, args);
    });
    return bad;
}

static BENCH_NOINLINE int loop_cus_launch16(void *p, int iters, uint64_t *ticks)
{
    launch_arg *c = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        char c0 = 1, c8 = 8;
        int i1 = 2, i9 = 9, i15 = 15;
        float f2 = 3.0f, f10 = 10.0f;
        double d3 = 4.0, d11 = 11.0;
        void *p4 = NULL, *p12 = NULL;
        short s5 = 5, s13 = 13;
        unsigned long long u6 = 6, u14 = 14;
        struct cusk_pair s7 = {7, 7.5};
        bad |= cus_launch(c->fn16, 1, 1, 0, c->stream, c0, i1, f2, d3, p4, s5, u6, s7, c8, i9,
                          f10, d11, p12, s13, u14, i15);
    });
    return bad;
}

/* The reference for the cus_function_launch rows: the same prebuilt array. */
static BENCH_NOINLINE int loop_raw_launch16_prebuilt(void *p, int iters, uint64_t *ticks)
{
    launch_arg *c = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, bad |= (int)RAW_LAUNCH(c, c->h16, c->args16));
    return bad;
}

static BENCH_NOINLINE int loop_cus_fl16_checked(void *p, int iters, uint64_t *ticks)
{
    launch_arg *c = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks,
               bad |= cus_function_launch(c->fn16, CUS_DIM3(1, 1, 1), CUS_DIM3(1, 1, 1), 0,
                                          c->stream, 16, c->args16, c->sizes16));
    return bad;
}

static BENCH_NOINLINE int loop_cus_fl16_unchecked(void *p, int iters, uint64_t *ticks)
{
    launch_arg *c = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks,
               bad |= cus_function_launch(c->fn16, CUS_DIM3(1, 1, 1), CUS_DIM3(1, 1, 1), 0,
                                          c->stream, 16, c->args16, NULL));
    return bad;
}

/* A library's kernel: the CUkernel cast to CUfunction on the raw side. */
static BENCH_NOINLINE int loop_raw_kernel0(void *p, int iters, uint64_t *ticks)
{
    launch_arg *c = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, bad |= (int)RAW_LAUNCH(c, c->hk0, NULL));
    return bad;
}

static BENCH_NOINLINE int loop_cus_kernel0(void *p, int iters, uint64_t *ticks)
{
    launch_arg *c = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, bad |= cus_launch(c->k0, 1, 1, 0, c->stream));
    return bad;
}

/* The slow path: another context is on top. */
static BENCH_NOINLINE int loop_raw_switched0(void *p, int iters, uint64_t *ticks)
{
    launch_arg *c = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        CUcontext got;
        bad |= (int)c->raw.push(c->ha);
        bad |= (int)RAW_LAUNCH(c, c->h0, NULL);
        bad |= (int)c->raw.pop(&got);
    });
    return bad;
}

static BENCH_NOINLINE int loop_cus_switched0(void *p, int iters, uint64_t *ticks)
{
    launch_arg *c = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, bad |= cus_launch(c->fn0, 1, 1, 0, c->stream));
    return bad;
}

/* The occupancy query, which needs a current context: with the function's
 * current (no switch on either side), and with another on top (the raw side
 * pushes and pops as cuscope's switch does). */
static BENCH_NOINLINE int loop_raw_occupancy(void *p, int iters, uint64_t *ticks)
{
    launch_arg *c = p;
    int bad = 0, n = 0;
    BENCH_LOOP(iters, ticks, bad |= (int)c->raw.occupancy(&n, c->h0, 128, 0));
    return bad;
}

static BENCH_NOINLINE int loop_cus_occupancy(void *p, int iters, uint64_t *ticks)
{
    launch_arg *c = p;
    int bad = 0, n = 0;
    BENCH_LOOP(iters, ticks, bad |= cus_function_max_active_blocks(c->fn0, 128, 0, &n));
    return bad;
}

static BENCH_NOINLINE int loop_raw_occupancy_switched(void *p, int iters, uint64_t *ticks)
{
    launch_arg *c = p;
    int bad = 0, n = 0;
    BENCH_LOOP(iters, ticks, {
        CUcontext got;
        bad |= (int)c->raw.push(c->ha);
        bad |= (int)c->raw.occupancy(&n, c->h0, 128, 0);
        bad |= (int)c->raw.pop(&got);
    });
    return bad;
}

static BENCH_NOINLINE int loop_raw_roundtrip0(void *p, int iters, uint64_t *ticks)
{
    launch_arg *c = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        bad |= (int)RAW_LAUNCH(c, c->h0, NULL);
        bad |= (int)c->raw.sync(c->hs);
    });
    return bad;
}

static BENCH_NOINLINE int loop_cus_roundtrip0(void *p, int iters, uint64_t *ticks)
{
    launch_arg *c = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        bad |= cus_launch(c->fn0, 1, 1, 0, c->stream);
        bad |= cus_stream_synchronize(c->stream);
    });
    return bad;
}

/* Programmatic dependent launch, the one attribute, built at each call on
 * both sides, as a caller writes it. */
static BENCH_NOINLINE int loop_raw_launch_ex_pdl(void *p, int iters, uint64_t *ticks)
{
    launch_arg *c = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        int a = 1;
        void *args[] = {&a};
        CUlaunchAttribute at[1];
        at[0].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        at[0].value.programmaticStreamSerializationAllowed = 1;
        CUlaunchConfig lc = {.gridDimX = 1, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 1,
                             .blockDimY = 1, .blockDimZ = 1, .hStream = c->hs, .attrs = at,
                             .numAttrs = 1};
        bad |= (int)c->raw.launch_ex(&lc, c->h1, args, NULL);
    });
    return bad;
}

static BENCH_NOINLINE int loop_cus_launch_ex_pdl(void *p, int iters, uint64_t *ticks)
{
    launch_arg *c = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        cus_launch_config cfg = {.grid = {1, 1, 1}, .block = {1, 1, 1}, .stream = c->stream,
                                 .programmatic_serialization = true};
        bad |= cus_launch_ex(c->fn1, &cfg, 1);
    });
    return bad;
}

static int sync_stream(void *p)
{
    launch_arg *c = p;
    return cus_stream_synchronize(c->stream);
}

/* --- reporting ----------------------------------------------------------------------- */

static int load_empty(const bench_env *env, cus_context *ctx, cus_module **mod, const char **which)
{
    /* The fatbin (SASS for the built architectures, PTX for newer ones),
     * else the PTX for the JIT. The fake reads either. */
    if (cus_module_load_data(ctx, cusk_empty.fatbin, cusk_empty.fatbin_size, NULL, mod) == 0) {
        *which = "fatbin";
        return 0;
    }
    fprintf(stderr, "%s: the fatbin of kernels/empty.cu did not load (%s); trying its PTX\n",
            env->prog, cus_last_error_message());
    if (cus_module_load_data(ctx, cusk_empty.ptx, cusk_empty.ptx_size + 1, NULL, mod) == 0) {
        *which = "PTX";
        return 0;
    }
    return -1;
}

int main(int argc, char **argv)
{
    bench_opts opt;
    if (bench_parse_args("bench-launch", argc, argv, &opt, NULL))
        return 2;
    bench_env env;
    if (bench_env_open("bench-launch", &env))
        return 1;
    if (!cus_driver_has("cuModuleLoadDataEx") || !cus_driver_has("cuLaunchKernel")) {
        fprintf(stderr, "bench-launch: the %s driver has no %s: nothing to measure%s\n",
                env.driver, cus_driver_has("cuLaunchKernel") ? "cuModuleLoadDataEx" : "cuLaunchKernel",
                env.fake ? " (the fake's modules and launches are not there yet): skipped" : "");
        return env.fake ? 77 : 1;
    }
    launch_arg c;
    memset(&c, 0, sizeof c);
    const bench_sym syms[] = {{"cuLaunchKernel", 4000, &c.raw.launch},
                              {"cuStreamSynchronize", 2000, &c.raw.sync},
                              {"cuCtxPushCurrent", 4000, &c.raw.push},
                              {"cuCtxPopCurrent", 4000, &c.raw.pop},
                              {"cuOccupancyMaxActiveBlocksPerMultiprocessor", 6050,
                               &c.raw.occupancy}};
    if (bench_resolve(&env, syms, sizeof syms / sizeof syms[0]))
        return 1;

    cus_autoptr(cus_context) a = NULL;
    cus_autoptr(cus_context) b = NULL;
    if (cus_context_retain_primary(env.dev, &a) || cus_context_create(env.dev, CUS_CTX_NO_PUSH, &b))
        return bench_fail(&env, "creating the contexts");
    if (cus_context_push(a))
        return bench_fail(&env, "cus_context_push");
    cus_autoptr(cus_stream) stream = NULL;
    cus_autoptr(cus_module) mod = NULL;
    cus_autoptr(cus_function) fn0 = NULL;
    cus_autoptr(cus_function) fn1 = NULL;
    cus_autoptr(cus_function) fn16 = NULL;
    const char *image = "";
    if (cus_stream_create(a, CU_STREAM_NON_BLOCKING, 0, &stream))
        return bench_fail(&env, "cus_stream_create");
    if (load_empty(&env, a, &mod, &image))
        return bench_fail(&env, "loading kernels/empty.cu");
    if (cus_module_get_function(mod, "empty", &fn0) || cus_module_get_function(mod, "empty1", &fn1) ||
        cus_module_get_function(mod, "empty16", &fn16))
        return bench_fail(&env, "cus_module_get_function");
    c.fn0 = fn0, c.fn1 = fn1, c.fn16 = fn16;
    c.h0 = cus_function_handle(fn0), c.h1 = cus_function_handle(fn1);
    c.h16 = cus_function_handle(fn16);
    c.stream = stream;
    c.hs = cus_stream_handle(stream);
    c.ha = cus_context_handle(a);
    prebuild16(&c);
    /* The same image as a library, where the driver has libraries (12.0+). */
    cus_autoptr(cus_library) lib = NULL;
    cus_autoptr(cus_kernel) k0 = NULL;
    if (cus_driver_has("cuLibraryLoadData")) {
        if (cus_library_load_data(cusk_empty.fatbin, cusk_empty.fatbin_size, NULL, NULL, &lib) &&
            cus_library_load_data(cusk_empty.ptx, cusk_empty.ptx_size + 1, NULL, NULL, &lib))
            return bench_fail(&env, "loading kernels/empty.cu as a library");
        if (cus_library_get_kernel(lib, "empty", &k0))
            return bench_fail(&env, "cus_library_get_kernel");
        c.k0 = k0;
        c.hk0 = (CUfunction)cus_kernel_handle(k0);
    }

    const int blocks = opt.blocks ? opt.blocks : opt.quick ? 4 : 200;
    const int iters = opt.iters ? opt.iters : opt.quick ? 50 : 1000;
    const int rt_iters = opt.iters ? opt.iters : opt.quick ? 25 : 100;

    bench_report *rep = bench_report_new("launch", &env, &opt, blocks, iters);
    bench_report_note(rep, "%s", env.fake ? "on the fake driver: the figures are cuscope's own CPU "
                                            "cost (the fake's is the same on both sides)"
                                          : "on the real driver");
    bench_report_note(rep, "kernels/empty.cu loaded as %s; parameter layout %s (argument check %s)",
                      image, cus_function_layout_known(fn16) ? "known" : "unknown",
                      cus_function_layout_known(fn16) ? "on" : "off: cuFuncGetParamInfo missing");
    bench_report_note(rep, "grid 1, block 1, no shared memory; a non-blocking stream created by "
                           "cuscope; each function warmed up on both paths first");
    bench_report_note(rep, "interleaved: %d rounds of every variant, %d calls per block (%d for the "
                           "round trip); single calls timed with %s (%.1f ns per reading pair)",
                      blocks, iters, rt_iters, bench_clock_name(), bench_clock_overhead_ns());
    bench_report_note(rep, "ratio: cuscope/raw of the medians (>1: cuscope slower); in brackets "
                           "p5..p95 of the per-round ratio of block times");

    /* 1. submission, back to back, over blocks */
    bench_variant sub[] = {
        {.label = "raw cuLaunchKernel, 0 args", .body = loop_raw_launch0, .arg = &c},
        {.label = "cus_launch, 0 args", .body = loop_cus_launch0, .arg = &c},
        {.label = "raw cuLaunchKernel, 1 arg", .body = loop_raw_launch1, .arg = &c},
        {.label = "cus_launch, 1 arg", .body = loop_cus_launch1, .arg = &c},
        {.label = "raw cuLaunchKernel, 16 mixed args", .body = loop_raw_launch16, .arg = &c},
        {.label = "cus_launch, 16 mixed args (checked)", .body = loop_cus_launch16, .arg = &c},
        {.label = "raw cuLaunchKernel, 16 args, prebuilt array", .body = loop_raw_launch16_prebuilt,
         .arg = &c},
        {.label = "cus_function_launch, 16, sizes given (checked)", .body = loop_cus_fl16_checked,
         .arg = &c},
        {.label = "cus_function_launch, 16, sizes=NULL (unchecked)",
         .body = loop_cus_fl16_unchecked, .arg = &c},
        /* the library kernel rows: last, so that they go only where the
         * driver has libraries */
        {.label = "raw cuLaunchKernel of a CUkernel, 0 args", .body = loop_raw_kernel0, .arg = &c},
        {.label = "cus_launch of a library kernel, 0 args", .body = loop_cus_kernel0, .arg = &c},
    };
    /* without libraries, the two library kernel rows are left out */
    const int NSUB = (int)(sizeof sub / sizeof sub[0]) - (c.k0 ? 0 : 2);
    bench_run run1 = {.blocks = blocks, .iters = iters, .between = sync_stream, .between_arg = &c};
    if (bench_run_variants(&run1, sub, NSUB))
        return 1;
    char title[160];
    snprintf(title, sizeof title,
             "launch submission, back to back (the stream synchronized after each block of %d, "
             "untimed)",
             iters);
    bench_report_section(rep, title, "ns per launch", "over blocks", "median", "p99");
    bench_report_row_blocks(rep, "raw_0", &sub[0], NULL);
    bench_report_row_blocks(rep, "cus_0", &sub[1], &sub[0]);
    bench_report_row_blocks(rep, "raw_1", &sub[2], NULL);
    bench_report_row_blocks(rep, "cus_1", &sub[3], &sub[2]);
    bench_report_row_blocks(rep, "raw_16", &sub[4], NULL);
    bench_report_row_blocks(rep, "cus_16", &sub[5], &sub[4]);
    bench_report_row_blocks(rep, "raw_16_prebuilt", &sub[6], NULL);
    bench_report_row_blocks(rep, "cus_function_launch_16_checked", &sub[7], &sub[6]);
    bench_report_row_blocks(rep, "cus_function_launch_16_unchecked", &sub[8], &sub[6]);
    if (c.k0) {
        bench_report_row_blocks(rep, "raw_kernel_0", &sub[9], NULL);
        bench_report_row_blocks(rep, "cus_kernel_0", &sub[10], &sub[9]);
    } else {
        bench_report_note(rep, "library kernel rows left out: the driver has no libraries (12.0+)");
    }
    {
        double ck = bench_stats_of(sub[7].block_ns, blocks).median;
        double un = bench_stats_of(sub[8].block_ns, blocks).median;
        bench_report_note(rep, "argument check of 16 parameters: %.1f ns per launch (checked - "
                               "unchecked medians)", ck - un);
    }
    bench_report_section(rep, "the untimed stream synchronize after each block (the queue's "
                              "backlog; not in the figures above)",
                         "us per synchronize", "over blocks", "median", "p99");
    {
        for (int i = 0; i < run1.nbetween; i++)
            run1.between_ns[i] /= 1000.0;
        bench_stats s = bench_stats_of(run1.between_ns, run1.nbetween);
        char label[96];
        snprintf(label, sizeof label, "cus_stream_synchronize after %d launches", iters);
        bench_report_row(rep, "sync_after_block", label, s.median, s.p99, s.n, NULL);
    }
    bench_run_free(&run1, sub, NSUB);

    /* 2. the same launches, single calls */
    bench_variant one[] = {
        {.label = "raw cuLaunchKernel, 0 args", .body = loop_raw_launch0, .arg = &c, .per_call = true},
        {.label = "cus_launch, 0 args", .body = loop_cus_launch0, .arg = &c, .per_call = true},
        {.label = "raw cuLaunchKernel, 1 arg", .body = loop_raw_launch1, .arg = &c, .per_call = true},
        {.label = "cus_launch, 1 arg", .body = loop_cus_launch1, .arg = &c, .per_call = true},
        {.label = "raw cuLaunchKernel, 16 mixed args", .body = loop_raw_launch16, .arg = &c,
         .per_call = true},
        {.label = "cus_launch, 16 mixed args (checked)", .body = loop_cus_launch16, .arg = &c,
         .per_call = true},
    };
    enum { NONE = sizeof one / sizeof one[0] };
    bench_run run2 = {.blocks = blocks, .iters = iters, .between = sync_stream, .between_arg = &c};
    if (bench_run_variants(&run2, one, NONE))
        return 1;
    char basis[96];
    snprintf(basis, sizeof basis, "over single calls (%s, reading included)", bench_clock_name());
    bench_report_section(rep, "launch submission, each launch timed on its own", "ns per launch",
                         basis, "median", "p99");
    bench_report_row_calls(rep, "raw_0", &one[0], NULL);
    bench_report_row_calls(rep, "cus_0", &one[1], &one[0]);
    bench_report_row_calls(rep, "raw_1", &one[2], NULL);
    bench_report_row_calls(rep, "cus_1", &one[3], &one[2]);
    bench_report_row_calls(rep, "raw_16", &one[4], NULL);
    bench_report_row_calls(rep, "cus_16", &one[5], &one[4]);
    bench_run_free(&run2, one, NONE);

    /* 3. the slow path: context b on top */
    if (cus_context_push(b))
        return bench_fail(&env, "cus_context_push");
    bench_variant slow[] = {
        {.label = "raw push + cuLaunchKernel + pop, 0 args", .body = loop_raw_switched0, .arg = &c},
        {.label = "cus_launch, 0 args, context not current", .body = loop_cus_switched0, .arg = &c},
    };
    bench_run run3 = {.blocks = blocks, .iters = iters, .between = sync_stream, .between_arg = &c};
    int bad = bench_run_variants(&run3, slow, 2);
    cus_context_pop(NULL);
    if (bad)
        return 1;
    bench_report_section(rep, "SLOW PATH: the function's context not current (another on top): "
                              "push, launch, pop",
                         "ns per launch", "over blocks", "median", "p99");
    bench_report_row_blocks(rep, "raw_switched_0", &slow[0], NULL);
    bench_report_row_blocks(rep, "cus_switched_0", &slow[1], &slow[0]);
    bench_run_free(&run3, slow, 2);

    /* 3b. the occupancy query, current and not */
    bench_variant occ[] = {
        {.label = "raw cuOccupancyMaxActiveBlocksPerMultiprocessor", .body = loop_raw_occupancy,
         .arg = &c},
        {.label = "cus_function_max_active_blocks", .body = loop_cus_occupancy, .arg = &c},
    };
    bench_run run_occ = {.blocks = blocks, .iters = iters};
    if (bench_run_variants(&run_occ, occ, 2))
        return 1;
    if (cus_context_push(b))
        return bench_fail(&env, "cus_context_push");
    bench_variant occ_sw[] = {
        {.label = "raw push + cuOccupancyMaxActiveBlocksPerMultiprocessor + pop",
         .body = loop_raw_occupancy_switched, .arg = &c},
        {.label = "cus_function_max_active_blocks, context not current",
         .body = loop_cus_occupancy, .arg = &c},
    };
    /* a run of its own: a run's between_ns is its last bench_run_variants' */
    bench_run run_occ_sw = {.blocks = blocks, .iters = iters};
    bad = bench_run_variants(&run_occ_sw, occ_sw, 2);
    cus_context_pop(NULL);
    if (bad)
        return 1;
    bench_report_section(rep, "occupancy query (needs a current context): the function's current, "
                              "then another on top",
                         "ns per call", "over blocks", "median", "p99");
    bench_report_row_blocks(rep, "raw_occupancy", &occ[0], NULL);
    bench_report_row_blocks(rep, "cus_occupancy", &occ[1], &occ[0]);
    bench_report_row_blocks(rep, "raw_occupancy_switched", &occ_sw[0], NULL);
    bench_report_row_blocks(rep, "cus_occupancy_switched", &occ_sw[1], &occ_sw[0]);
    bench_run_free(&run_occ, occ, 2);
    bench_run_free(&run_occ_sw, occ_sw, 2);

    /* 3c. extended launch with programmatic dependent launch */
    if (cus_driver_has("cuLaunchKernelEx")) {
        const bench_sym ex[] = {{"cuLaunchKernelEx", 11060, &c.raw.launch_ex}};
        if (bench_resolve(&env, ex, 1))
            return 1;
        bench_variant pdl[] = {
            {.label = "raw cuLaunchKernelEx, PDL attribute, 1 arg", .body = loop_raw_launch_ex_pdl,
             .arg = &c},
            {.label = "cus_launch_ex, programmatic_serialization, 1 arg",
             .body = loop_cus_launch_ex_pdl, .arg = &c},
        };
        bench_run run_pdl = {.blocks = blocks, .iters = iters, .between = sync_stream,
                             .between_arg = &c};
        if (bench_run_variants(&run_pdl, pdl, 2))
            return 1;
        bench_report_section(rep, "extended launch with programmatic dependent launch "
                                  "(CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION)",
                             "ns per launch", "over blocks", "median", "p99");
        bench_report_row_blocks(rep, "raw_launch_ex_pdl", &pdl[0], NULL);
        bench_report_row_blocks(rep, "cus_launch_ex_pdl", &pdl[1], &pdl[0]);
        bench_run_free(&run_pdl, pdl, 2);
    }

    /* 4. round trip */
    bench_variant rt[] = {
        {.label = "raw cuLaunchKernel + cuStreamSynchronize", .body = loop_raw_roundtrip0,
         .arg = &c, .per_call = true},
        {.label = "cus_launch + cus_stream_synchronize", .body = loop_cus_roundtrip0, .arg = &c,
         .per_call = true},
    };
    bench_run run4 = {.blocks = blocks, .iters = rt_iters};
    if (bench_run_variants(&run4, rt, 2))
        return 1;
    bench_report_section(rep, "round trip: launch (0 args) + stream synchronize",
                         "ns per iteration", basis, "median", "p99");
    bench_report_row_calls(rep, "raw_roundtrip_0", &rt[0], NULL);
    bench_report_row_calls(rep, "cus_roundtrip_0", &rt[1], &rt[0]);
    bench_run_free(&run4, rt, 2);

    bench_report_print(rep, opt.json);
    if (cus_stream_synchronize(stream))
        return bench_fail(&env, "the last synchronize");
    cus_context_pop(NULL);
    return 0;
}
