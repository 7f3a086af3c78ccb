/* bench-context: what cuscope's context stack costs against the raw driver,
 * measured side by side in one process, interleaved in blocks (A B A B ...).
 *
 *   switch:  a guard that really switches (push on entry, pop on exit)
 *            against a raw cuCtxPushCurrent + cuCtxPopCurrent pair;
 *   current: a guard on the context already on top (cuscope's fast path,
 *            no driver call) against a raw cuCtxGetCurrent, the cheapest
 *            driver call that could answer "is it current?".
 *
 * Runs on the real driver, or on the fake when there is none (it says so):
 * there the difference is cuscope's own CPU cost. Prints a table; --json
 * prints JSON instead. --quick runs a few blocks (CI checks it runs). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cudaTypedefs.h>

#include <cuscope/cuscope.h>
#include <cuscope/fake.h>

typedef struct raw_api {
    PFN_cuCtxPushCurrent_v4000 push;
    PFN_cuCtxPopCurrent_v4000 pop;
    PFN_cuCtxGetCurrent_v4000 get_current;
} raw_api;

static int resolve_raw(cus_driver_resolver resolve, raw_api *api)
{
    struct {
        const char *sym;
        int ver;
        void *dst;
    } want[] = {{"cuCtxPushCurrent", 4000, &api->push},
                {"cuCtxPopCurrent", 4000, &api->pop},
                {"cuCtxGetCurrent", 4000, &api->get_current}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        void *p = NULL;
        CUdriverProcAddressQueryResult qs;
        if (resolve(want[i].sym, &p, want[i].ver, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &qs) || !p)
            return -1;
        memcpy(want[i].dst, &p, sizeof p);
    }
    return 0;
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct series {
    double *v;
    int n;
} series;

static double pct(series s, double p)
{
    qsort(s.v, (size_t)s.n, sizeof *s.v, cmp_double);
    int i = (int)(p * (s.n - 1) + 0.5);
    return s.v[i];
}

int main(int argc, char **argv)
{
    bool json = false, quick = false;
    for (int i = 1; i < argc; i++) {
        json |= strcmp(argv[i], "--json") == 0;
        quick |= strcmp(argv[i], "--quick") == 0;
    }
    const char *driver = "real";
    cus_driver_resolver resolve = NULL;
    if (cus_init() != CUS_SUCCESS) {
        fprintf(stderr, "bench-context: no GPU driver (%s)\n  -> measuring on the fake driver: "
                        "the figures are cuscope's own CPU cost\n",
                cus_last_error_message());
        if (cus_fake_install(NULL) || cus_init())
            return fprintf(stderr, "%s\n", cus_last_error_message()), 1;
        driver = "fake";
        resolve = cus_fake_get_proc_address;
    } else {
        void *h = dlopen(getenv("CUSCOPE_LIBCUDA") ? getenv("CUSCOPE_LIBCUDA") : "libcuda.so.1",
                         RTLD_NOW | RTLD_NOLOAD);
        void *sym = h ? dlsym(h, "cuGetProcAddress_v2") : NULL;
        if (!sym)
            return fprintf(stderr, "cannot reach cuGetProcAddress_v2\n"), 1;
        memcpy(&resolve, &sym, sizeof sym);
    }
    raw_api raw;
    if (resolve_raw(resolve, &raw))
        return fprintf(stderr, "cannot resolve the raw entry points\n"), 1;

    cus_device dev;
    cus_autoptr(cus_context) a = NULL;
    cus_autoptr(cus_context) b = NULL;
    if (cus_device_get(0, &dev) || cus_context_retain_primary(dev, &a) ||
        cus_context_create(dev, CUS_CTX_NO_PUSH, &b))
        return fprintf(stderr, "%s\n", cus_last_error_message()), 1;
    char name[128] = "";
    cus_device_name(dev, name, sizeof name);
    int version = 0;
    cus_driver_version(&version);

    const int blocks = quick ? 4 : 200, iters = quick ? 100 : 20000;
    series s[4];
    for (int k = 0; k < 4; k++)
        s[k] = (series){calloc((size_t)blocks, sizeof(double)), blocks};
    CUcontext hb = cus_context_handle(b), got;
    if (cus_context_push(a))
        return fprintf(stderr, "%s\n", cus_last_error_message()), 1;

    for (int warm = 0; warm < 1000; warm++) {
        raw.push(hb);
        raw.pop(&got);
    }
    for (int blk = 0; blk < blocks; blk++) {
        double t0 = now_ns();
        for (int i = 0; i < iters; i++) {
            raw.push(hb);
            raw.pop(&got);
        }
        double t1 = now_ns();
        for (int i = 0; i < iters; i++) {
            cus_context_scope(g, b);
            __asm__ volatile("" ::"r"(&g) : "memory");
        }
        double t2 = now_ns();
        for (int i = 0; i < iters; i++) {
            CUcontext cur;
            raw.get_current(&cur);
            __asm__ volatile("" ::"r"(cur) : "memory");
        }
        double t3 = now_ns();
        for (int i = 0; i < iters; i++) {
            cus_context_scope(g, a);
            __asm__ volatile("" ::"r"(&g) : "memory");
        }
        double t4 = now_ns();
        s[0].v[blk] = (t1 - t0) / iters;
        s[1].v[blk] = (t2 - t1) / iters;
        s[2].v[blk] = (t3 - t2) / iters;
        s[3].v[blk] = (t4 - t3) / iters;
    }
    cus_context_pop(NULL);

    double *ratio_sw = calloc((size_t)blocks, sizeof(double));
    for (int blk = 0; blk < blocks; blk++)
        ratio_sw[blk] = s[1].v[blk] / s[0].v[blk];
    series rs = {ratio_sw, blocks};
    double med[4], p99[4];
    for (int k = 0; k < 4; k++) {
        med[k] = pct(s[k], 0.5);
        p99[k] = pct(s[k], 0.99);
    }
    double r_med = pct(rs, 0.5), r_lo = pct(rs, 0.05), r_hi = pct(rs, 0.95);
    if (json) {
        printf("{\"bench\":\"context\",\"driver\":\"%s\",\"device\":\"%s\",\"driver_version\":%d,"
               "\"blocks\":%d,\"iters\":%d,"
               "\"raw_push_pop_ns\":{\"median\":%.2f,\"p99\":%.2f},"
               "\"guard_switch_ns\":{\"median\":%.2f,\"p99\":%.2f},"
               "\"raw_get_current_ns\":{\"median\":%.2f,\"p99\":%.2f},"
               "\"guard_current_ns\":{\"median\":%.2f,\"p99\":%.2f},"
               "\"switch_ratio\":{\"median\":%.3f,\"p5\":%.3f,\"p95\":%.3f}}\n",
               driver, name, version, blocks, iters, med[0], p99[0], med[1], p99[1], med[2],
               p99[2], med[3], p99[3], r_med, r_lo, r_hi);
    } else {
        printf("bench-context on the %s driver: %s, driver API %d.%d, %d blocks x %d, "
               "interleaved\n",
               driver, name, version / 1000, version % 1000 / 10, blocks, iters);
        printf("  %-40s %10s %10s\n", "per operation", "median ns", "p99 ns");
        printf("  %-40s %10.2f %10.2f\n", "raw cuCtxPushCurrent + cuCtxPopCurrent", med[0], p99[0]);
        printf("  %-40s %10.2f %10.2f\n", "cuscope guard, real switch", med[1], p99[1]);
        printf("  %-40s %10.2f %10.2f\n", "raw cuCtxGetCurrent", med[2], p99[2]);
        printf("  %-40s %10.2f %10.2f\n", "cuscope guard, already current", med[3], p99[3]);
        printf("  switch ratio cuscope/raw: median %.3f (p5 %.3f, p95 %.3f across blocks)\n", r_med,
               r_lo, r_hi);
    }
    for (int k = 0; k < 4; k++)
        free(s[k].v);
    free(ratio_sw);
    return 0;
}
