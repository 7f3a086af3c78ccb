/* bench-link: JIT linking with cuscope (cus_linker over nvJitLink) against
 * raw nvJitLink, interleaved in one process (bench_common.h's method). One
 * call is a whole link of kernels/link's two relocatable inputs for sm_90:
 * create, add both, complete, get the cubin (size, then a copy), destroy;
 * cuscope's: cus_linker_create, two cus_linker_add_data,
 * cus_linker_complete (which copies the cubin out), cus_linker_unref. Two
 * sections: relocatable cubins, and LTO-IR with -lto. nvJitLink runs on the
 * CPU, so the driver plays no part (no context: an explicit arch). Without
 * nvJitLink (or without nvcc's link inputs) it says so and exits 0. */
#define _GNU_SOURCE /* secure_getenv */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuscope/cuscope.h>

#include "bench_common.h"
#include "cusk-link.h"

typedef struct nvJitLink *nj_handle;
typedef struct raw_nj {
    int (*create)(nj_handle *, uint32_t, const char **);
    int (*destroy)(nj_handle *);
    int (*add_data)(nj_handle, int, const void *, size_t, const char *);
    int (*complete)(nj_handle);
    int (*cubin_size)(nj_handle, size_t *);
    int (*cubin)(nj_handle, void *);
} raw_nj;

typedef struct link_arg {
    const raw_nj *raw;
    bool lto;
    int type; /* nvJitLinkInputType, = cus_link_input */
    const unsigned char *data[2];
    size_t size[2];
    void *buf; /* the raw side's cubin copy */
    size_t buf_size;
    int failed;
} link_arg;

static BENCH_NOINLINE int raw_link(link_arg *a)
{
    const char *opts[2] = {"-arch=sm_90", "-lto"};
    nj_handle h = NULL;
    if (a->raw->create(&h, a->lto ? 2 : 1, opts))
        return 1;
    int bad = a->raw->add_data(h, a->type, a->data[0], a->size[0], "main") ||
              a->raw->add_data(h, a->type, a->data[1], a->size[1], "lib") ||
              a->raw->complete(h);
    size_t size = 0;
    if (!bad && !(bad = a->raw->cubin_size(h, &size))) {
        if (size > a->buf_size) {
            free(a->buf);
            a->buf = malloc(size);
            a->buf_size = a->buf ? size : 0;
        }
        bad = !a->buf || a->raw->cubin(h, a->buf);
    }
    a->raw->destroy(&h);
    return bad;
}

static BENCH_NOINLINE int cus_link(link_arg *a)
{
    cus_link_options o = {.backend = CUS_LINK_BACKEND_NVJITLINK, .arch = 90, .lto = a->lto};
    cus_autoptr(cus_linker) l = NULL;
    const void *cubin = NULL;
    size_t size = 0;
    return cus_linker_create(NULL, &o, &l) ||
           cus_linker_add_data(l, (cus_link_input)a->type, a->data[0], a->size[0], "main") ||
           cus_linker_add_data(l, (cus_link_input)a->type, a->data[1], a->size[1], "lib") ||
           cus_linker_complete(l, &cubin, &size);
}

static int loop_raw(void *arg, int iters, uint64_t *ticks)
{
    link_arg *a = arg;
    BENCH_LOOP(iters, ticks, a->failed |= raw_link(a));
    return a->failed;
}

static int loop_cus(void *arg, int iters, uint64_t *ticks)
{
    link_arg *a = arg;
    BENCH_LOOP(iters, ticks, a->failed |= cus_link(a));
    return a->failed;
}

static int open_raw(raw_nj *raw)
{
    const char *path = secure_getenv("CUSCOPE_LIBNVJITLINK");
    void *h = dlopen(path && *path ? path : "libnvJitLink.so.13", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return 1;
    const char *names[] = {"nvJitLinkCreate", "nvJitLinkDestroy", "nvJitLinkAddData",
                           "nvJitLinkComplete", "nvJitLinkGetLinkedCubinSize",
                           "nvJitLinkGetLinkedCubin"};
    void *fns[6];
    for (int i = 0; i < 6; i++)
        if (!(fns[i] = dlsym(h, names[i])))
            return 1;
    memcpy(&raw->create, &fns[0], sizeof fns[0]);
    memcpy(&raw->destroy, &fns[1], sizeof fns[1]);
    memcpy(&raw->add_data, &fns[2], sizeof fns[2]);
    memcpy(&raw->complete, &fns[3], sizeof fns[3]);
    memcpy(&raw->cubin_size, &fns[4], sizeof fns[4]);
    memcpy(&raw->cubin, &fns[5], sizeof fns[5]);
    return 0;
}

static int section(const bench_opts *opt, bench_report *rep, const raw_nj *raw, bool lto)
{
    const int blocks = opt->blocks ? opt->blocks : opt->quick ? 2 : 15;
    const int iters = opt->iters ? opt->iters : opt->quick ? 1 : 4;
    link_arg a = {.raw = raw, .lto = lto};
    if (lto) {
        a.type = CUS_LINK_INPUT_LTOIR;
        a.data[0] = cusk_link_main_ltoir, a.size[0] = cusk_link_main_ltoir_size;
        a.data[1] = cusk_link_lib_ltoir, a.size[1] = cusk_link_lib_ltoir_size;
    } else {
        a.type = CUS_LINK_INPUT_CUBIN;
        a.data[0] = cusk_link_main_cubin, a.size[0] = cusk_link_main_cubin_size;
        a.data[1] = cusk_link_lib_cubin, a.size[1] = cusk_link_lib_cubin_size;
    }
    link_arg b = a;
    bench_variant v[] = {
        {.label = "raw nvJitLink: create, add x2, complete, get cubin, destroy", .body = loop_raw,
         .arg = &a},
        {.label = "cus_linker_create, add_data x2, complete, unref", .body = loop_cus, .arg = &b},
    };
    bench_run run = {.blocks = blocks, .iters = iters};
    int bad = bench_run_variants(&run, v, 2);
    if (bad || a.failed || b.failed) {
        fprintf(stderr, "bench-link: a link failed: %s\n", cus_last_error_message());
        bad = 1;
    } else {
        char title[200];
        snprintf(title, sizeof title, "a link of two %s for sm_90 (%d blocks of %d links)",
                 lto ? "LTO-IR inputs with -lto" : "relocatable cubins", blocks, iters);
        bench_report_section(rep, title, "us per link", "over blocks", "median", "p99");
        bench_ratio q = bench_ratio_of(&v[0], &v[1]);
        static const char *const keys[2][2] = {{"raw_link_cubins", "cus_link_cubins"},
                                               {"raw_link_ltoir", "cus_link_ltoir"}};
        for (int i = 0; i < 2; i++) {
            bench_stats s = bench_stats_of(v[i].block_ns, blocks);
            bench_report_row(rep, keys[lto][i], v[i].label, s.median / 1000, s.p99 / 1000, s.n,
                             i ? &q : NULL);
        }
    }
    bench_run_free(&run, v, 2);
    free(a.buf);
    return bad;
}

int main(int argc, char **argv)
{
    bench_opts opt;
    if (bench_parse_args("bench-link", argc, argv, &opt, NULL))
        return 2;
    bench_env env;
    if (bench_env_open("bench-link", &env))
        return 1;
    raw_nj raw;
    if (open_raw(&raw) || cus_link_nvjitlink_version(NULL, NULL)) {
        printf("bench-link: nvJitLink (libnvJitLink.so.13, or CUSCOPE_LIBNVJITLINK) does not "
               "load here: nothing to measure\n");
        return 0;
    }
    bench_report *rep = bench_report_new("link", &env, &opt, opt.blocks, opt.iters);
    bench_report_note(rep, "nvJitLink on the CPU, no driver involved; the same inputs both sides; "
                           "every variant warmed up first; interleaved rounds, CLOCK_MONOTONIC "
                           "per block");
    bench_report_note(rep, "ratio: cuscope/raw of the median times (target <= 1.02)");
    int bad = section(&opt, rep, &raw, false) || section(&opt, rep, &raw, true);
    bench_report_print(rep, opt.json);
    return bad;
}
