/* bench-rtc: compiling at run time, cuscope against raw NVRTC, side by side
 * in one process, interleaved in blocks (bench_common.h has the method).
 *
 *   compile:  nvrtcCreateProgram + nvrtcCompileProgram + nvrtcGetPTXSize +
 *             nvrtcGetPTX + nvrtcDestroyProgram (each call's status checked)
 *             against cus_program_create + cus_program_compile (the cache
 *             bypassed: no_cache) + cus_program_code + cus_program_unref, of
 *             one small kernel to PTX for compute_90. Target: ratio <= 1.02.
 *   cached:   the same raw compile against a repeated cus_program_compile of
 *             the same inputs, which the compile cache answers. Target: at
 *             least 100 times faster.
 *
 * Raw NVRTC is the library cuscope loaded (dlopen RTLD_NOLOAD of
 * cus_nvrtc_library()). NVRTC runs on the CPU, so the figures are the same on
 * the fake driver (used when there is no GPU) as on a GPU machine. Without
 * NVRTC it says so and exits 77. Prints a table; --json prints JSON.
 * --quick runs a few compiles (CI checks it runs). Never asserts timings. */
#include <dlfcn.h>
#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuscope/cuscope.h>

#include "bench_common.h"

static const char source[] =
    "extern \"C\" __global__ void saxpy(float a, const float *x, float *y, unsigned n)\n"
    "{\n"
    "    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n)\n"
    "        y[i] = a * x[i] + y[i];\n"
    "}\n";
static const char *const raw_options[] = {"-arch=compute_90"};

typedef struct raw_nvrtc {
    __typeof__(&nvrtcCreateProgram) create;
    __typeof__(&nvrtcCompileProgram) compile;
    __typeof__(&nvrtcGetPTXSize) ptx_size;
    __typeof__(&nvrtcGetPTX) ptx;
    __typeof__(&nvrtcDestroyProgram) destroy;
} raw_nvrtc;

static raw_nvrtc raw;
static char ptx_buf[1 << 16];

static BENCH_NOINLINE int one_raw(void)
{
    nvrtcProgram p;
    if (raw.create(&p, source, "saxpy.cu", 0, NULL, NULL))
        return 1;
    size_t n = 0;
    int bad = raw.compile(p, 1, raw_options) != NVRTC_SUCCESS ||
              raw.ptx_size(p, &n) != NVRTC_SUCCESS || n > sizeof ptx_buf ||
              raw.ptx(p, ptx_buf) != NVRTC_SUCCESS;
    bad |= raw.destroy(&p) != NVRTC_SUCCESS;
    return bad;
}

static BENCH_NOINLINE int one_cuscope(bool cached)
{
    cus_program *p = NULL;
    if (cus_program_create(source, "saxpy.cu", NULL, 0, &p))
        return 1;
    cus_program_options o = {.arch = 90, .no_cache = !cached};
    const void *ptx = NULL;
    size_t n = 0;
    int bad = cus_program_compile(p, &o) || cus_program_code(p, CUS_PROGRAM_PTX, &ptx, &n);
    cus_program_unref(p);
    return bad;
}

static int loop_raw(void *arg, int iters, uint64_t *ticks)
{
    (void)arg;
    int bad = 0;
    BENCH_LOOP(iters, ticks, bad |= one_raw());
    return bad;
}

static int loop_cuscope(void *arg, int iters, uint64_t *ticks)
{
    (void)arg;
    int bad = 0;
    BENCH_LOOP(iters, ticks, bad |= one_cuscope(false));
    return bad;
}

static int loop_cached(void *arg, int iters, uint64_t *ticks)
{
    (void)arg;
    int bad = 0;
    BENCH_LOOP(iters, ticks, bad |= one_cuscope(true));
    return bad;
}

static int compare(const bench_opts *opt, bench_report *rep, const char *key, const char *title,
                   bench_body_fn cus_body, const char *cus_label, int blocks, int iters)
{
    bench_variant v[2] = {
        {.label = "raw NVRTC", .body = loop_raw},
        {.label = cus_label, .body = cus_body, .per_call = true},
    };
    bench_run run = {.blocks = opt->blocks ? opt->blocks : blocks,
                     .iters = opt->iters ? opt->iters : iters,
                     .warm_iters = 1};
    if (bench_run_variants(&run, v, 2)) {
        bench_run_free(&run, v, 2);
        return 1;
    }
    char basis[64];
    snprintf(basis, sizeof basis, "over %d blocks of %d", run.blocks, run.iters);
    bench_report_section(rep, title, "us per compile", basis, "median", "p99");
    for (int i = 0; i < 2; i++) {
        bench_stats s = bench_stats_of(v[i].block_ns, v[i].nblocks);
        bench_ratio q = i ? bench_ratio_of(&v[0], &v[1]) : (bench_ratio){0};
        char k[64];
        snprintf(k, sizeof k, "%s_%s", key, i ? "cuscope" : "raw");
        bench_report_row(rep, k, v[i].label, s.median / 1e3, s.p99 / 1e3, s.n, i ? &q : NULL);
        if (i)
            bench_report_note(rep, "%s: cuscope/raw %.4f (%.1fx %s)", key, q.of_medians,
                              q.of_medians < 1 ? 1 / q.of_medians : q.of_medians,
                              q.of_medians < 1 ? "faster" : "slower");
    }
    bench_run_free(&run, v, 2);
    return 0;
}

int main(int argc, char **argv)
{
    bench_opts opt;
    if (bench_parse_args("bench-rtc", argc, argv, &opt, NULL))
        return 2;
    bench_env env;
    if (bench_env_open("bench-rtc", &env))
        return 1;
    int major = 0, minor = 0;
    if (cus_nvrtc_version(&major, &minor)) {
        printf("bench-rtc: skipped: %s\n", cus_last_error_message());
        return 77;
    }
    void *h = dlopen(cus_nvrtc_library(), RTLD_NOW | RTLD_NOLOAD);
    if (!h) {
        fprintf(stderr, "bench-rtc: %s is not loaded: %s\n", cus_nvrtc_library(), dlerror());
        return 1;
    }
    void *syms[5] = {dlsym(h, "nvrtcCreateProgram"), dlsym(h, "nvrtcCompileProgram"),
                     dlsym(h, "nvrtcGetPTXSize"), dlsym(h, "nvrtcGetPTX"),
                     dlsym(h, "nvrtcDestroyProgram")};
    for (int i = 0; i < 5; i++)
        if (!syms[i]) {
            fprintf(stderr, "bench-rtc: NVRTC lacks a function\n");
            return 1;
        }
    memcpy(&raw, syms, sizeof raw);

    bench_report *rep = bench_report_new("rtc", &env, &opt, opt.blocks, opt.iters);
    bench_report_note(rep, "NVRTC %d.%d (%s); one small kernel to PTX for compute_90", major,
                      minor, cus_nvrtc_library());
    bench_report_note(rep, "interleaved: rounds of raw and cuscope; timed with CLOCK_MONOTONIC "
                           "per block; each variant warmed up first");
    bench_report_note(rep, "targets: compile ratio <= 1.02; a cached compile >= 100x faster "
                           "than raw");
    int bad = compare(&opt, rep, "compile", "compile (cache bypassed)", loop_cuscope,
                      "cuscope", opt.quick ? 2 : 15, opt.quick ? 1 : 4);
    if (!bad)
        bad = compare(&opt, rep, "cached", "repeated compile (the cache answers)", loop_cached,
                      "cuscope, cached", opt.quick ? 2 : 15, opt.quick ? 1 : 4);
    bench_report_print(rep, opt.json);
    if (bad)
        return bench_fail(&env, "a compile");
    cus_program_cache_clear();
    return 0;
}
