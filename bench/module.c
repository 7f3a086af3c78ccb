/* bench-module: what loading code and looking kernels up cost in cuscope
 * against the raw driver, side by side in one process, interleaved in blocks
 * (bench_common.h has the method).
 *
 *   module load:   cuModuleLoadData + cuModuleUnload against
 *                  cus_module_load_data + cus_module_unref of kernels/empty.cu
 *                  (its fatbin, else its PTX), the context current.
 *   library load:  cuLibraryLoadData + cuLibraryUnload against
 *                  cus_library_load_data + cus_library_unref of the same
 *                  bytes (drivers from 12.0; left out before).
 *   first lookup:  the first lookup of a name in a fresh module (library),
 *                  each call timed on its own with the cheap clock, the load
 *                  and unload around it untimed: cuModuleGetFunction against
 *                  cus_module_get_function (which also reads the parameter
 *                  layout), cuLibraryGetKernel against cus_library_get_kernel.
 *   cached lookup: the same name again in a loaded module (library), over
 *                  blocks: cus_module_get_function + cus_function_unref (a hit
 *                  in cuscope's cache, no driver call) against
 *                  cuModuleGetFunction; likewise for kernels.
 *
 * Raw entry points come from the driver cuscope loaded, at the ABI versions
 * cuscope uses. Runs on the real driver, or on the fake when there is none
 * (it says so). Prints a table; --json prints JSON, --json-file F writes it
 * to F as well. --quick runs a few hundred calls (CI checks it runs). Never
 * asserts timings. Exits 77 (skipped) on a fake without modules. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cudaTypedefs.h>

#include <cuscope/cuscope.h>

#include "bench_common.h"
#include "cusk-images.h"

typedef struct raw_api {
    PFN_cuModuleLoadData_v2000 load;
    PFN_cuModuleUnload_v2000 unload;
    PFN_cuModuleGetFunction_v2000 get_function;
    PFN_cuLibraryLoadData_v12000 lib_load;
    PFN_cuLibraryUnload_v12000 lib_unload;
    PFN_cuLibraryGetKernel_v12000 get_kernel;
} raw_api;

typedef struct module_arg {
    raw_api raw;
    cus_context *ctx;
    const void *image;
    size_t size;
    cus_module *mod;  /* loaded once, for the cached lookups */
    cus_library *lib; /* NULL without libraries */
    CUmodule hmod;
    CUlibrary hlib;
} module_arg;

static const char kname[] = "empty16"; /* 16 parameters: the layout read is the longest */

/* --- loads ------------------------------------------------------------------------------- */

static BENCH_NOINLINE int loop_raw_module_load(void *p, int iters, uint64_t *ticks)
{
    module_arg *c = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        CUmodule m = NULL;
        bad |= (int)c->raw.load(&m, c->image);
        bad |= (int)c->raw.unload(m);
    });
    return bad;
}

static BENCH_NOINLINE int loop_cus_module_load(void *p, int iters, uint64_t *ticks)
{
    module_arg *c = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        cus_module *m = NULL;
        bad |= cus_module_load_data(c->ctx, c->image, c->size, NULL, &m);
        cus_module_unref(m);
    });
    return bad;
}

static BENCH_NOINLINE int loop_raw_library_load(void *p, int iters, uint64_t *ticks)
{
    module_arg *c = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        CUlibrary l = NULL;
        bad |= (int)c->raw.lib_load(&l, c->image, NULL, NULL, 0, NULL, NULL, 0);
        bad |= (int)c->raw.lib_unload(l);
    });
    return bad;
}

static BENCH_NOINLINE int loop_cus_library_load(void *p, int iters, uint64_t *ticks)
{
    module_arg *c = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        cus_library *l = NULL;
        bad |= cus_library_load_data(c->image, c->size, NULL, NULL, &l);
        cus_library_unref(l);
    });
    return bad;
}

/* --- first lookups: the load and unload untimed, the lookup timed alone --------------------- */

#define TIME_ONE(ticks, i, ...)                                                \
    do {                                                                       \
        uint64_t t0_ = bench_ticks();                                          \
        __VA_ARGS__;                                                           \
        if (ticks)                                                             \
            (ticks)[i] = bench_ticks() - t0_;                                  \
    } while (0)

static BENCH_NOINLINE int loop_raw_first_function(void *p, int iters, uint64_t *ticks)
{
    module_arg *c = p;
    int bad = 0;
    for (int i = 0; i < iters; i++) {
        CUmodule m = NULL;
        CUfunction f = NULL;
        bad |= (int)c->raw.load(&m, c->image);
        TIME_ONE(ticks, i, bad |= (int)c->raw.get_function(&f, m, kname));
        bad |= (int)c->raw.unload(m);
    }
    return bad;
}

static BENCH_NOINLINE int loop_cus_first_function(void *p, int iters, uint64_t *ticks)
{
    module_arg *c = p;
    int bad = 0;
    for (int i = 0; i < iters; i++) {
        cus_module *m = NULL;
        cus_function *f = NULL;
        bad |= cus_module_load_data(c->ctx, c->image, c->size, NULL, &m);
        TIME_ONE(ticks, i, bad |= cus_module_get_function(m, kname, &f));
        cus_function_unref(f);
        cus_module_unref(m);
    }
    return bad;
}

static BENCH_NOINLINE int loop_raw_first_kernel(void *p, int iters, uint64_t *ticks)
{
    module_arg *c = p;
    int bad = 0;
    for (int i = 0; i < iters; i++) {
        CUlibrary l = NULL;
        CUkernel k = NULL;
        bad |= (int)c->raw.lib_load(&l, c->image, NULL, NULL, 0, NULL, NULL, 0);
        TIME_ONE(ticks, i, bad |= (int)c->raw.get_kernel(&k, l, kname));
        bad |= (int)c->raw.lib_unload(l);
    }
    return bad;
}

static BENCH_NOINLINE int loop_cus_first_kernel(void *p, int iters, uint64_t *ticks)
{
    module_arg *c = p;
    int bad = 0;
    for (int i = 0; i < iters; i++) {
        cus_library *l = NULL;
        cus_kernel *k = NULL;
        bad |= cus_library_load_data(c->image, c->size, NULL, NULL, &l);
        TIME_ONE(ticks, i, bad |= cus_library_get_kernel(l, kname, &k));
        cus_kernel_unref(k);
        cus_library_unref(l);
    }
    return bad;
}

/* --- cached lookups ----------------------------------------------------------------------- */

static BENCH_NOINLINE int loop_raw_cached_function(void *p, int iters, uint64_t *ticks)
{
    module_arg *c = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        CUfunction f = NULL;
        bad |= (int)c->raw.get_function(&f, c->hmod, kname);
    });
    return bad;
}

static BENCH_NOINLINE int loop_cus_cached_function(void *p, int iters, uint64_t *ticks)
{
    module_arg *c = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        cus_function *f = NULL;
        bad |= cus_module_get_function(c->mod, kname, &f);
        cus_function_unref(f);
    });
    return bad;
}

static BENCH_NOINLINE int loop_raw_cached_kernel(void *p, int iters, uint64_t *ticks)
{
    module_arg *c = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        CUkernel k = NULL;
        bad |= (int)c->raw.get_kernel(&k, c->hlib, kname);
    });
    return bad;
}

static BENCH_NOINLINE int loop_cus_cached_kernel(void *p, int iters, uint64_t *ticks)
{
    module_arg *c = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        cus_kernel *k = NULL;
        bad |= cus_library_get_kernel(c->lib, kname, &k);
        cus_kernel_unref(k);
    });
    return bad;
}

/* --- reporting ------------------------------------------------------------------------------ */

int main(int argc, char **argv)
{
    bench_opts opt;
    if (bench_parse_args("bench-module", argc, argv, &opt, NULL))
        return 2;
    bench_env env;
    if (bench_env_open("bench-module", &env))
        return 1;
    if (!cus_driver_has("cuModuleLoadDataEx")) {
        fprintf(stderr, "bench-module: the %s driver has no modules: nothing to measure%s\n",
                env.driver, env.fake ? ": skipped" : "");
        return env.fake ? 77 : 1;
    }
    const bool libraries = cus_driver_has("cuLibraryLoadData");
    module_arg c;
    memset(&c, 0, sizeof c);
    const bench_sym syms[] = {{"cuModuleLoadData", 2000, &c.raw.load},
                              {"cuModuleUnload", 2000, &c.raw.unload},
                              {"cuModuleGetFunction", 2000, &c.raw.get_function}};
    const bench_sym lib_syms[] = {{"cuLibraryLoadData", 12000, &c.raw.lib_load},
                                  {"cuLibraryUnload", 12000, &c.raw.lib_unload},
                                  {"cuLibraryGetKernel", 12000, &c.raw.get_kernel}};
    if (bench_resolve(&env, syms, sizeof syms / sizeof syms[0]) ||
        (libraries && bench_resolve(&env, lib_syms, sizeof lib_syms / sizeof lib_syms[0])))
        return 1;

    cus_autoptr(cus_context) a = NULL;
    if (cus_context_retain_primary(env.dev, &a))
        return bench_fail(&env, "cus_context_retain_primary");
    if (cus_context_push(a))
        return bench_fail(&env, "cus_context_push");
    c.ctx = a;
    /* The fatbin (SASS for the built architectures, PTX for newer ones),
     * else the PTX for the JIT. */
    cus_autoptr(cus_module) mod = NULL;
    const char *which = "fatbin";
    c.image = cusk_empty.fatbin, c.size = cusk_empty.fatbin_size;
    if (cus_module_load_data(a, c.image, c.size, NULL, &mod)) {
        fprintf(stderr, "bench-module: the fatbin of kernels/empty.cu did not load (%s); trying "
                        "its PTX\n",
                cus_last_error_message());
        which = "PTX";
        c.image = cusk_empty.ptx, c.size = cusk_empty.ptx_size + 1;
        if (cus_module_load_data(a, c.image, c.size, NULL, &mod))
            return bench_fail(&env, "loading kernels/empty.cu");
    }
    c.mod = mod;
    c.hmod = cus_module_handle(mod);
    cus_autoptr(cus_library) lib = NULL;
    if (libraries) {
        if (cus_library_load_data(c.image, c.size, NULL, NULL, &lib))
            return bench_fail(&env, "cus_library_load_data");
        c.lib = lib;
        c.hlib = cus_library_handle(lib);
    }

    /* A load is a hundred times a launch: fewer calls. */
    const int blocks = opt.blocks ? opt.blocks : opt.quick ? 4 : 100;
    const int load_iters = opt.iters ? opt.iters : opt.quick ? 10 : 50;
    const int iters = opt.iters ? opt.iters : opt.quick ? 50 : 1000;

    bench_report *rep = bench_report_new("module", &env, &opt, blocks, iters);
    bench_report_note(rep, "%s", env.fake ? "on the fake driver: the figures are cuscope's own CPU "
                                            "cost (the fake's is the same on both sides)"
                                          : "on the real driver");
    bench_report_note(rep, "kernels/empty.cu loaded as %s (%zu bytes); the kernel looked up: %s",
                      which, c.size, kname);
    bench_report_note(rep, "interleaved: %d rounds of every variant, %d calls per block for loads "
                           "and first lookups, %d for cached lookups",
                      blocks, load_iters, iters);
    bench_report_note(rep, "ratio: cuscope/raw of the medians (>1: cuscope slower); in brackets "
                           "p5..p95 of the per-round ratio of block times");
    if (!libraries)
        bench_report_note(rep, "library rows left out: the driver has no libraries (12.0+)");

    /* 1. loads */
    bench_variant load[] = {
        {.label = "raw cuModuleLoadData + cuModuleUnload", .body = loop_raw_module_load, .arg = &c},
        {.label = "cus_module_load_data + cus_module_unref", .body = loop_cus_module_load,
         .arg = &c},
        {.label = "raw cuLibraryLoadData + cuLibraryUnload", .body = loop_raw_library_load,
         .arg = &c},
        {.label = "cus_library_load_data + cus_library_unref", .body = loop_cus_library_load,
         .arg = &c},
    };
    const int nload = libraries ? 4 : 2;
    bench_run run1 = {.blocks = blocks, .iters = load_iters};
    if (bench_run_variants(&run1, load, nload))
        return 1;
    bench_report_section(rep, "load + unload of an image, the context current", "ns per load",
                         "over blocks", "median", "p99");
    bench_report_row_blocks(rep, "raw_module_load", &load[0], NULL);
    bench_report_row_blocks(rep, "cus_module_load", &load[1], &load[0]);
    if (libraries) {
        bench_report_row_blocks(rep, "raw_library_load", &load[2], NULL);
        bench_report_row_blocks(rep, "cus_library_load", &load[3], &load[2]);
    }
    bench_run_free(&run1, load, nload);

    /* 2. first lookups, single calls */
    bench_variant first[] = {
        {.label = "raw cuModuleGetFunction, fresh module", .body = loop_raw_first_function,
         .arg = &c, .per_call = true},
        {.label = "cus_module_get_function, first (layout read)", .body = loop_cus_first_function,
         .arg = &c, .per_call = true},
        {.label = "raw cuLibraryGetKernel, fresh library", .body = loop_raw_first_kernel,
         .arg = &c, .per_call = true},
        {.label = "cus_library_get_kernel, first (layout read)", .body = loop_cus_first_kernel,
         .arg = &c, .per_call = true},
    };
    bench_run run2 = {.blocks = blocks, .iters = load_iters};
    if (bench_run_variants(&run2, first, nload))
        return 1;
    char basis[96];
    snprintf(basis, sizeof basis, "over single calls (%s, reading included)", bench_clock_name());
    bench_report_section(rep, "first lookup of a name (the load and unload around it untimed)",
                         "ns per lookup", basis, "median", "p99");
    bench_report_note(rep, "first lookups: in brackets, the per-round ratio of whole blocks, "
                           "which include the untimed loads and unloads");
    bench_report_row_calls(rep, "raw_first_function", &first[0], NULL);
    bench_report_row_calls(rep, "cus_first_function", &first[1], &first[0]);
    if (libraries) {
        bench_report_row_calls(rep, "raw_first_kernel", &first[2], NULL);
        bench_report_row_calls(rep, "cus_first_kernel", &first[3], &first[2]);
    }
    bench_run_free(&run2, first, nload);

    /* 3. cached lookups */
    bench_variant cached[] = {
        {.label = "raw cuModuleGetFunction", .body = loop_raw_cached_function, .arg = &c},
        {.label = "cus_module_get_function + unref (cached)", .body = loop_cus_cached_function,
         .arg = &c},
        {.label = "raw cuLibraryGetKernel", .body = loop_raw_cached_kernel, .arg = &c},
        {.label = "cus_library_get_kernel + unref (cached)", .body = loop_cus_cached_kernel,
         .arg = &c},
    };
    bench_run run3 = {.blocks = blocks, .iters = iters};
    if (bench_run_variants(&run3, cached, nload))
        return 1;
    bench_report_section(rep, "lookup of a name already looked up", "ns per lookup", "over blocks",
                         "median", "p99");
    bench_report_row_blocks(rep, "raw_cached_function", &cached[0], NULL);
    bench_report_row_blocks(rep, "cus_cached_function", &cached[1], &cached[0]);
    if (libraries) {
        bench_report_row_blocks(rep, "raw_cached_kernel", &cached[2], NULL);
        bench_report_row_blocks(rep, "cus_cached_kernel", &cached[3], &cached[2]);
    }
    bench_run_free(&run3, cached, nload);

    bench_report_print(rep, opt.json);
    cus_context_pop(NULL);
    return 0;
}
