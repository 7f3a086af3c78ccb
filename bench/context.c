/* bench-context: what cuscope's context stack costs against the raw driver,
 * measured side by side in one process, interleaved in blocks (A B A B ...).
 *
 *   switch:  a guard that really switches (push on entry, pop on exit)
 *            against a raw cuCtxPushCurrent + cuCtxPopCurrent pair;
 *   floor:   the raw pair plus a reference taken and dropped
 *            (cus_context_ref + cus_context_unref): what a guard whose
 *            mirror entry holds a reference cannot go below;
 *   current: a guard on the context already on top (cuscope's fast path,
 *            no driver call) against a raw cuCtxGetCurrent, the cheapest
 *            driver call that could answer "is it current?";
 *   green:   cus_context_push + cus_context_pop of a green context (all of
 *            the device's SMs) against raw cuCtxPushCurrent +
 *            cuCtxPopCurrent of its CUcontext (rows left out where the
 *            driver has no green contexts, before 12.4).
 *
 * Runs on the real driver, or on the fake when there is none (it says so):
 * there the difference is cuscope's own CPU cost. Prints a table; --json
 * prints JSON instead. --quick runs a few blocks (CI checks it runs).
 * The method and the shared parts: bench_common.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cudaTypedefs.h>

#include <cuscope/cuscope.h>

#include "bench_common.h"

typedef struct raw_api {
    PFN_cuCtxPushCurrent_v4000 push;
    PFN_cuCtxPopCurrent_v4000 pop;
    PFN_cuCtxGetCurrent_v4000 get_current;
} raw_api;

typedef struct ctx_arg {
    raw_api raw;
    cus_context *a, *b; /* a is on top; b is another context */
    cus_context *green; /* a green context, or NULL */
} ctx_arg;

static BENCH_NOINLINE int raw_green_push_pop(void *p, int iters, uint64_t *ticks)
{
    ctx_arg *c = p;
    CUcontext hg = cus_context_handle(c->green), got;
    BENCH_LOOP(iters, ticks, {
        c->raw.push(hg);
        c->raw.pop(&got);
    });
    return 0;
}

static BENCH_NOINLINE int green_push_pop(void *p, int iters, uint64_t *ticks)
{
    ctx_arg *c = p;
    BENCH_LOOP(iters, ticks, {
        cus_context_push(c->green);
        cus_context_pop(NULL);
    });
    return 0;
}

static BENCH_NOINLINE int raw_push_pop(void *p, int iters, uint64_t *ticks)
{
    ctx_arg *c = p;
    CUcontext hb = cus_context_handle(c->b), got;
    BENCH_LOOP(iters, ticks, {
        c->raw.push(hb);
        c->raw.pop(&got);
    });
    return 0;
}

static BENCH_NOINLINE int guard_switch(void *p, int iters, uint64_t *ticks)
{
    ctx_arg *c = p;
    BENCH_LOOP(iters, ticks, {
        cus_context_scope(g, c->b);
        __asm__ volatile("" ::"r"(&g) : "memory");
    });
    return 0;
}

static BENCH_NOINLINE int raw_push_pop_ref(void *p, int iters, uint64_t *ticks)
{
    ctx_arg *c = p;
    CUcontext hb = cus_context_handle(c->b), got;
    BENCH_LOOP(iters, ticks, {
        c->raw.push(hb);
        cus_context_ref(c->b);
        c->raw.pop(&got);
        cus_context_unref(c->b);
    });
    return 0;
}

static BENCH_NOINLINE int raw_get_current(void *p, int iters, uint64_t *ticks)
{
    ctx_arg *c = p;
    BENCH_LOOP(iters, ticks, {
        CUcontext cur;
        c->raw.get_current(&cur);
        __asm__ volatile("" ::"r"(cur) : "memory");
    });
    return 0;
}

static BENCH_NOINLINE int guard_current(void *p, int iters, uint64_t *ticks)
{
    ctx_arg *c = p;
    BENCH_LOOP(iters, ticks, {
        cus_context_scope(g, c->a);
        __asm__ volatile("" ::"r"(&g) : "memory");
    });
    return 0;
}

int main(int argc, char **argv)
{
    bench_opts opt;
    if (bench_parse_args("bench-context", argc, argv, &opt, NULL))
        return 2;
    bench_env env;
    if (bench_env_open("bench-context", &env))
        return 1;
    ctx_arg c = {0};
    const bench_sym syms[] = {{"cuCtxPushCurrent", 4000, &c.raw.push},
                              {"cuCtxPopCurrent", 4000, &c.raw.pop},
                              {"cuCtxGetCurrent", 4000, &c.raw.get_current}};
    if (bench_resolve(&env, syms, sizeof syms / sizeof syms[0]))
        return 1;

    cus_autoptr(cus_context) a = NULL;
    cus_autoptr(cus_context) b = NULL;
    if (cus_context_retain_primary(env.dev, &a) || cus_context_create(env.dev, CUS_CTX_NO_PUSH, &b))
        return bench_fail(&env, "creating the contexts");
    c.a = a;
    c.b = b;
    /* A green context of all the SMs, where the driver has them. */
    cus_autoptr(cus_context) green = NULL;
    CUdevResource sms;
    if (cus_device_sm_resource(env.dev, &sms) == CUS_SUCCESS &&
        cus_context_create_green(env.dev, &sms, 1, 0, &green) != CUS_SUCCESS)
        return bench_fail(&env, "cus_context_create_green");
    c.green = green;

    const int blocks = opt.blocks ? opt.blocks : opt.quick ? 4 : 200;
    const int iters = opt.iters ? opt.iters : opt.quick ? 100 : 20000;
    if (cus_context_push(a))
        return bench_fail(&env, "cus_context_push");
    enum { NV_MAX = 7 };
    const int NV = green ? 7 : 5;
    bench_variant v[NV_MAX] = {
        {.label = "raw cuCtxPushCurrent + cuCtxPopCurrent", .body = raw_push_pop, .arg = &c},
        {.label = "cuscope guard, real switch", .body = guard_switch, .arg = &c},
        {.label = "raw pair + cus_context_ref/unref", .body = raw_push_pop_ref, .arg = &c},
        {.label = "raw cuCtxGetCurrent", .body = raw_get_current, .arg = &c},
        {.label = "cuscope guard, already current", .body = guard_current, .arg = &c},
        {.label = "raw push + pop of a green CUcontext", .body = raw_green_push_pop, .arg = &c},
        {.label = "cus_context_push + pop, green", .body = green_push_pop, .arg = &c},
    };
    bench_run run = {.blocks = blocks, .iters = iters, .warm_iters = opt.quick ? 100 : 1000};
    int bad = bench_run_variants(&run, v, NV);
    cus_context_pop(NULL);
    if (bad)
        return 1;

    bench_ratio rs = bench_ratio_of(&v[0], &v[1]);
    bench_ratio rf = bench_ratio_of(&v[2], &v[1]);
    bench_ratio rg = green ? bench_ratio_of(&v[5], &v[6]) : (bench_ratio){0};
    double med[NV_MAX] = {0}, p99[NV_MAX] = {0};
    for (int k = 0; k < NV; k++) {
        bench_stats s = bench_stats_of(v[k].block_ns, blocks);
        med[k] = s.median;
        p99[k] = s.p99;
    }
    if (opt.json) {
        printf("{\"bench\":\"context\",\"driver\":\"%s\",\"device\":\"%s\",\"driver_version\":%d,"
               "\"blocks\":%d,\"iters\":%d,"
               "\"raw_push_pop_ns\":{\"median\":%.2f,\"p99\":%.2f},"
               "\"guard_switch_ns\":{\"median\":%.2f,\"p99\":%.2f},"
               "\"floor_ns\":{\"median\":%.2f,\"p99\":%.2f},"
               "\"raw_get_current_ns\":{\"median\":%.2f,\"p99\":%.2f},"
               "\"guard_current_ns\":{\"median\":%.2f,\"p99\":%.2f},"
               "\"switch_ratio\":{\"median\":%.3f,\"p5\":%.3f,\"p95\":%.3f},"
               "\"switch_over_floor\":{\"median\":%.3f,\"p5\":%.3f,\"p95\":%.3f}",
               env.driver, env.device_name, env.version, blocks, iters, med[0], p99[0], med[1],
               p99[1], med[2], p99[2], med[3], p99[3], med[4], p99[4], rs.median, rs.p5, rs.p95,
               rf.median, rf.p5, rf.p95);
        if (green)
            printf(",\"raw_green_push_pop_ns\":{\"median\":%.2f,\"p99\":%.2f},"
                   "\"green_push_pop_ns\":{\"median\":%.2f,\"p99\":%.2f},"
                   "\"green_ratio\":{\"median\":%.3f,\"p5\":%.3f,\"p95\":%.3f}",
                   med[5], p99[5], med[6], p99[6], rg.median, rg.p5, rg.p95);
        printf("}\n");
    } else {
        printf("bench-context on the %s driver: %s, driver API %d.%d, %d blocks x %d, "
               "interleaved\n",
               env.driver, env.device_name, env.version / 1000, env.version % 1000 / 10, blocks,
               iters);
        printf("  %-40s %10s %10s\n", "per operation", "median ns", "p99 ns");
        for (int k = 0; k < NV; k++)
            printf("  %-40s %10.2f %10.2f\n", v[k].label, med[k], p99[k]);
        printf("  switch ratio cuscope/raw: median %.3f (p5 %.3f, p95 %.3f across blocks)\n",
               rs.median, rs.p5, rs.p95);
        printf("  switch ratio cuscope/floor: median %.3f (p5 %.3f, p95 %.3f)\n", rf.median,
               rf.p5, rf.p95);
        if (green)
            printf("  green push+pop ratio cuscope/raw: median %.3f (p5 %.3f, p95 %.3f)\n",
                   rg.median, rg.p5, rg.p95);
        else
            printf("  green contexts: not on this driver (12.4+)\n");
    }
    bench_run_free(&run, v, NV);
    return 0;
}
