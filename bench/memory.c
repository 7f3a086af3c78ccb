/* bench-memory: cuscope's copies and allocations against the raw driver, side
 * by side in one process, interleaved in blocks (bench_common.h has the
 * method).
 *
 *   copies:      host to device and device to host, from page-locked memory
 *                (cus_host_buffer_alloc) and from pageable memory (malloc),
 *                synchronous (cuMemcpyHtoD / cuMemcpyDtoH against
 *                cus_copy_to_device / cus_copy_to_host) and asynchronous on
 *                a stream, each copy followed by a stream synchronize
 *                (cuMemcpy*Async + cuStreamSynchronize against
 *                cus_copy_*_async + cus_stream_synchronize); 4 KiB, 1 MiB
 *                and 64 MiB (less on --quick and on the fake).
 *   2D copies:   a 1024 x 1024 float image from a pitched device buffer to
 *                page-locked host memory, cuMemcpy2D against cus_copy_2d.
 *   allocation:  cuMemAlloc + cuMemFree against cus_buffer_alloc +
 *                cus_buffer_unref, and cuMemAllocAsync + cuMemFreeAsync
 *                against cus_buffer_alloc_async + cus_buffer_unref, with one
 *                stream synchronize closing each block (timed, amortized).
 *   tensor maps: cuTensorMapEncodeTiled into a stack descriptor against
 *                cus_tensor_map_create_tiled + cus_tensor_map_unref (the
 *                documented rules checked, the extent, the record).
 *   pools:       cuMemAllocFromPoolAsync + cuMemFreeAsync against
 *                cus_pool_alloc_async + cus_buffer_unref, from one pool
 *                made by cuscope that keeps what it reserves (release
 *                threshold UINT64_MAX), a stream synchronize closing each
 *                block.
 *
 * Raw entry points come from the driver cuscope loaded, at the ABI versions
 * cuscope uses, and use the same buffers. Runs on the real driver, or on the
 * fake when there is none (it says so): there a copy is a memmove and the
 * figures are cuscope's own CPU cost on top of it. Prints a table; --json
 * prints JSON. --quick runs a few hundred calls (CI checks it runs). Never
 * asserts timings. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cudaTypedefs.h>

#include <cuscope/cuscope.h>

#include "bench_common.h"

typedef struct raw_api {
    PFN_cuMemcpyHtoD_v3020 htod;
    PFN_cuMemcpyDtoH_v3020 dtoh;
    PFN_cuMemcpyHtoDAsync_v3020 htod_async;
    PFN_cuMemcpyDtoHAsync_v3020 dtoh_async;
    PFN_cuStreamSynchronize_v2000 sync;
    PFN_cuMemAlloc_v3020 alloc;
    PFN_cuMemFree_v3020 free;
    PFN_cuMemAllocAsync_v11020 alloc_async;
    PFN_cuMemFreeAsync_v11020 free_async;
    PFN_cuMemAllocFromPoolAsync_v11020 alloc_from_pool;
    /* virtual memory (bench_vmm) */
    PFN_cuMemMap_v10020 map;
    PFN_cuMemSetAccess_v10020 set_access;
    PFN_cuMemUnmap_v10020 unmap;
} raw_api;

typedef struct mem_arg {
    const raw_api *raw;
    cus_context *ctx;
    cus_stream *stream;
    CUstream hs;
    cus_buffer *dev; /* copies: the device side */
    CUdeviceptr dp;
    void *host;      /* copies: the host side (pinned or pageable) */
    size_t bytes;
    cus_pool *pool;  /* pools: the pool allocated from */
    CUmemoryPool hp;
} mem_arg;

/* --- the timed bodies ------------------------------------------------------------ */

static BENCH_NOINLINE int loop_raw_htod(void *p, int iters, uint64_t *ticks)
{
    const mem_arg *m = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, bad |= (int)m->raw->htod(m->dp, m->host, m->bytes));
    return bad;
}

static BENCH_NOINLINE int loop_cus_htod(void *p, int iters, uint64_t *ticks)
{
    const mem_arg *m = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, bad |= cus_copy_to_device(m->dev, 0, m->host, m->bytes));
    return bad;
}

static BENCH_NOINLINE int loop_raw_dtoh(void *p, int iters, uint64_t *ticks)
{
    const mem_arg *m = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, bad |= (int)m->raw->dtoh(m->host, m->dp, m->bytes));
    return bad;
}

static BENCH_NOINLINE int loop_cus_dtoh(void *p, int iters, uint64_t *ticks)
{
    const mem_arg *m = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, bad |= cus_copy_to_host(m->host, m->dev, 0, m->bytes));
    return bad;
}

static BENCH_NOINLINE int loop_raw_htod_async(void *p, int iters, uint64_t *ticks)
{
    const mem_arg *m = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        bad |= (int)m->raw->htod_async(m->dp, m->host, m->bytes, m->hs);
        bad |= (int)m->raw->sync(m->hs);
    });
    return bad;
}

static BENCH_NOINLINE int loop_cus_htod_async(void *p, int iters, uint64_t *ticks)
{
    const mem_arg *m = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        bad |= cus_copy_to_device_async(m->dev, 0, m->host, m->bytes, m->stream);
        bad |= cus_stream_synchronize(m->stream);
    });
    return bad;
}

static BENCH_NOINLINE int loop_raw_dtoh_async(void *p, int iters, uint64_t *ticks)
{
    const mem_arg *m = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        bad |= (int)m->raw->dtoh_async(m->host, m->dp, m->bytes, m->hs);
        bad |= (int)m->raw->sync(m->hs);
    });
    return bad;
}

static BENCH_NOINLINE int loop_cus_dtoh_async(void *p, int iters, uint64_t *ticks)
{
    const mem_arg *m = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        bad |= cus_copy_to_host_async(m->host, m->dev, 0, m->bytes, m->stream);
        bad |= cus_stream_synchronize(m->stream);
    });
    return bad;
}

static BENCH_NOINLINE int loop_raw_alloc(void *p, int iters, uint64_t *ticks)
{
    const mem_arg *m = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        CUdeviceptr d = 0;
        bad |= (int)m->raw->alloc(&d, m->bytes);
        bad |= (int)m->raw->free(d);
    });
    return bad;
}

static BENCH_NOINLINE int loop_cus_alloc(void *p, int iters, uint64_t *ticks)
{
    const mem_arg *m = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        cus_buffer *b = NULL;
        bad |= cus_buffer_alloc(m->ctx, m->bytes, &b);
        cus_buffer_unref(b);
    });
    return bad;
}

static BENCH_NOINLINE int loop_raw_alloc_async(void *p, int iters, uint64_t *ticks)
{
    const mem_arg *m = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        CUdeviceptr d = 0;
        bad |= (int)m->raw->alloc_async(&d, m->bytes, m->hs);
        bad |= (int)m->raw->free_async(d, m->hs);
    });
    return bad | (int)m->raw->sync(m->hs);
}

static BENCH_NOINLINE int loop_cus_alloc_async(void *p, int iters, uint64_t *ticks)
{
    const mem_arg *m = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        cus_buffer *b = NULL;
        bad |= cus_buffer_alloc_async(m->stream, m->bytes, &b);
        cus_buffer_unref(b);
    });
    return bad | cus_stream_synchronize(m->stream);
}

static BENCH_NOINLINE int loop_raw_pool_alloc(void *p, int iters, uint64_t *ticks)
{
    const mem_arg *m = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        CUdeviceptr d = 0;
        bad |= (int)m->raw->alloc_from_pool(&d, m->bytes, m->hp, m->hs);
        bad |= (int)m->raw->free_async(d, m->hs);
    });
    return bad | (int)m->raw->sync(m->hs);
}

static BENCH_NOINLINE int loop_cus_pool_alloc(void *p, int iters, uint64_t *ticks)
{
    const mem_arg *m = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        cus_buffer *b = NULL;
        bad |= cus_pool_alloc_async(m->pool, m->stream, m->bytes, &b);
        cus_buffer_unref(b);
    });
    return bad | cus_stream_synchronize(m->stream);
}

/* --- sizes ------------------------------------------------------------------------ */

typedef struct size_plan {
    size_t bytes;
    int iters, blocks;
} size_plan;

static const size_plan copy_real[] = {{4096, 100, 200}, {1 << 20, 10, 100}, {64 << 20, 1, 30}};
static const size_plan copy_fake[] = {{4096, 100, 100}, {1 << 20, 10, 50}, {16 << 20, 1, 20}};
static const size_plan copy_quick[] = {{4096, 25, 4}, {64 << 10, 10, 4}, {1 << 20, 2, 3}};
/* The fake never reuses an address before the next install (every block it
 * handed out stays reserved), so allocations there are counted in thousands. */
static const size_plan alloc_real[] = {{4096, 100, 100}, {1 << 20, 20, 100}};
static const size_plan alloc_fake[] = {{4096, 100, 50}};
static const size_plan alloc_quick[] = {{4096, 25, 4}};

static const char *size_name(char *buf, size_t n, size_t bytes)
{
    if (bytes >= (1u << 20) && bytes % (1u << 20) == 0)
        snprintf(buf, n, "%zu MiB", bytes >> 20);
    else if (bytes >= 1024 && bytes % 1024 == 0)
        snprintf(buf, n, "%zu KiB", bytes >> 10);
    else
        snprintf(buf, n, "%zu B", bytes);
    return buf;
}

/* GB/s (10^9 bytes per second) of `bytes` in ns. */
static double gbps(size_t bytes, double ns)
{
    return ns > 0 ? (double)bytes / ns : 0;
}

typedef struct copy_kind {
    const char *key, *what;
    bench_body_fn raw, cus;
} copy_kind;

static const copy_kind copy_kinds[] = {
    {"htod", "host to device, sync", loop_raw_htod, loop_cus_htod},
    {"htod_async", "host to device, async + sync", loop_raw_htod_async, loop_cus_htod_async},
    {"dtoh", "device to host, sync", loop_raw_dtoh, loop_cus_dtoh},
    {"dtoh_async", "device to host, async + sync", loop_raw_dtoh_async, loop_cus_dtoh_async},
};
enum { NKINDS = sizeof copy_kinds / sizeof copy_kinds[0] };

static int bench_copies(const bench_env *env, const bench_opts *opt, bench_report *rep,
                        const raw_api *raw, cus_context *ctx, cus_stream *stream, size_plan plan)
{
    const int blocks = opt->blocks ? opt->blocks : plan.blocks;
    const int iters = opt->iters ? opt->iters : plan.iters;
    const size_t bytes = plan.bytes;
    cus_autoptr(cus_buffer) dev = NULL;
    cus_autoptr(cus_host_buffer) pinned = NULL;
    if (cus_buffer_alloc(ctx, bytes, &dev) || cus_host_buffer_alloc(ctx, bytes, 0, &pinned))
        return bench_fail(env, "allocating the copy buffers");
    void *pageable = malloc(bytes);
    if (!pageable)
        return fprintf(stderr, "%s: out of memory\n", env->prog), 1;
    memset(pageable, 0x5a, bytes);
    memset(cus_host_buffer_data(pinned), 0xa5, bytes);
    mem_arg host_arg[2];
    for (int h = 0; h < 2; h++)
        host_arg[h] = (mem_arg){.raw = raw, .ctx = ctx, .stream = stream,
                                .hs = cus_stream_handle(stream), .dev = dev,
                                .dp = cus_buffer_ptr(dev),
                                .host = h ? pageable : cus_host_buffer_data(pinned),
                                .bytes = bytes};
    static const char *const host_name[2] = {"pinned", "pageable"};

    /* Every kind, pinned and pageable, raw and cuscope: one interleaved run. */
    bench_variant v[2 * 2 * NKINDS];
    char labels[2 * 2 * NKINDS][96];
    int n = 0;
    for (int h = 0; h < 2; h++)
        for (int k = 0; k < NKINDS; k++)
            for (int side = 0; side < 2; side++) {
                snprintf(labels[n], sizeof labels[n], "%s %s, %s", side ? "cuscope" : "raw",
                         host_name[h], copy_kinds[k].what);
                v[n] = (bench_variant){.label = labels[n],
                                       .body = side ? copy_kinds[k].cus : copy_kinds[k].raw,
                                       .arg = &host_arg[h]};
                n++;
            }
    bench_run run = {.blocks = blocks, .iters = iters, .warm_iters = iters};
    int bad = bench_run_variants(&run, v, n);
    if (!bad) {
        char sz[32], title[160];
        size_name(sz, sizeof sz, bytes);
        snprintf(title, sizeof title, "copies of %s (%d blocks of %d copies per variant)", sz,
                 blocks, iters);
        bench_report_section(rep, title, "GB/s", "over blocks; p99_time: at the p99 block time",
                             "median", "p99_time");
        for (int i = 0; i < n; i++) {
            bench_stats s = bench_stats_of(v[i].block_ns, blocks);
            bench_ratio q = i % 2 ? bench_ratio_of(&v[i - 1], &v[i]) : (bench_ratio){0};
            char key[64];
            int h = i / (2 * NKINDS), k = i / 2 % NKINDS;
            snprintf(key, sizeof key, "%s_%s_%s_%zu", i % 2 ? "cus" : "raw", host_name[h],
                     copy_kinds[k].key, bytes);
            bench_report_row(rep, key, v[i].label, gbps(bytes, s.median), gbps(bytes, s.p99), s.n,
                             i % 2 ? &q : NULL);
        }
    }
    bench_run_free(&run, v, n);
    free(pageable);
    return bad ? 1 : 0;
}

static int bench_allocs(const bench_env *env, const bench_opts *opt, bench_report *rep,
                        const raw_api *raw, cus_context *ctx, cus_stream *stream, size_plan plan)
{
    const int blocks = opt->blocks ? opt->blocks : plan.blocks;
    const int iters = opt->iters ? opt->iters : plan.iters;
    mem_arg m = {.raw = raw, .ctx = ctx, .stream = stream, .hs = cus_stream_handle(stream),
                 .bytes = plan.bytes};
    bench_variant v[] = {
        {.label = "raw cuMemAlloc + cuMemFree", .body = loop_raw_alloc, .arg = &m},
        {.label = "cus_buffer_alloc + cus_buffer_unref", .body = loop_cus_alloc, .arg = &m},
        {.label = "raw cuMemAllocAsync + cuMemFreeAsync", .body = loop_raw_alloc_async, .arg = &m},
        {.label = "cus_buffer_alloc_async + cus_buffer_unref", .body = loop_cus_alloc_async,
         .arg = &m},
    };
    enum { N = sizeof v / sizeof v[0] };
    bench_run run = {.blocks = blocks, .iters = iters};
    int bad = bench_run_variants(&run, v, N);
    if (!bad) {
        char sz[32], title[200];
        size_name(sz, sizeof sz, plan.bytes);
        snprintf(title, sizeof title,
                 "allocation of %s and its release (%d blocks of %d pairs; the stream-ordered "
                 "blocks end with a stream synchronize, timed)",
                 sz, blocks, iters);
        bench_report_section(rep, title, "ns per pair", "over blocks", "median", "p99");
        static const char *const keys[N] = {"raw_alloc_free", "cus_alloc_unref",
                                            "raw_alloc_free_async", "cus_alloc_unref_async"};
        for (int i = 0; i < N; i++) {
            bench_stats s = bench_stats_of(v[i].block_ns, blocks);
            bench_ratio q = i % 2 ? bench_ratio_of(&v[i - 1], &v[i]) : (bench_ratio){0};
            char key[64];
            snprintf(key, sizeof key, "%s_%zu", keys[i], plan.bytes);
            bench_report_row(rep, key, v[i].label, s.median, s.p99, s.n, i % 2 ? &q : NULL);
        }
    }
    bench_run_free(&run, v, N);
    (void)env;
    return bad ? 1 : 0;
}

/* --- 2D copies (cuscope/array.h): a 1024 x 1024 float image, pitched device
 * buffer to host, cuMemcpy2D against cus_copy_2d (its descriptor built each
 * time, as a caller would) ------------------------------------------------ */

typedef struct copy2d_arg {
    PFN_cuMemcpy2D_v3020 raw;
    cus_buffer *dev; /* pitched */
    void *host;
    size_t width, height;
} copy2d_arg;

static BENCH_NOINLINE int loop_raw_copy_2d(void *p, int iters, uint64_t *ticks)
{
    const copy2d_arg *m = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        CUDA_MEMCPY2D c;
        memset(&c, 0, sizeof c);
        c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
        c.srcDevice = cus_buffer_ptr(m->dev);
        c.srcPitch = cus_buffer_pitch(m->dev);
        c.dstMemoryType = CU_MEMORYTYPE_HOST;
        c.dstHost = m->host;
        c.dstPitch = m->width;
        c.WidthInBytes = m->width;
        c.Height = m->height;
        bad |= (int)m->raw(&c);
    });
    return bad;
}

static BENCH_NOINLINE int loop_cus_copy_2d(void *p, int iters, uint64_t *ticks)
{
    const copy2d_arg *m = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks,
               bad |= cus_copy_2d(&(cus_copy_2d_desc){cus_copy_host(m->host, m->width),
                                                      cus_copy_buffer(m->dev, 0, 0), m->width,
                                                      m->height}));
    return bad;
}

static int bench_copy_2d(const bench_env *env, const bench_opts *opt, bench_report *rep,
                         cus_context *ctx)
{
    PFN_cuMemcpy2D_v3020 raw2d = NULL;
    const bench_sym sym[] = {{"cuMemcpy2D", 3020, &raw2d}};
    if (bench_resolve(env, sym, 1))
        return 1;
    const int blocks = opt->blocks ? opt->blocks : opt->quick ? 3 : env->fake ? 10 : 30;
    const int iters = opt->iters ? opt->iters : opt->quick ? 2 : env->fake ? 5 : 10;
    enum { SIDE = 1024 };
    copy2d_arg m = {.raw = raw2d, .width = SIDE * sizeof(float), .height = SIDE};
    size_t pitch = 0;
    cus_autoptr(cus_buffer) dev = NULL;
    cus_autoptr(cus_host_buffer) host = NULL;
    if (cus_buffer_alloc_pitch(ctx, m.width, m.height, sizeof(float), &dev, &pitch) ||
        cus_host_buffer_alloc(ctx, m.width * m.height, 0, &host))
        return bench_fail(env, "allocating the 2D copy buffers");
    m.dev = dev;
    m.host = cus_host_buffer_data(host);
    bench_variant v[] = {
        {.label = "raw cuMemcpy2D, pitched device to pinned host", .body = loop_raw_copy_2d,
         .arg = &m},
        {.label = "cus_copy_2d, pitched device to pinned host", .body = loop_cus_copy_2d,
         .arg = &m},
    };
    bench_run run = {.blocks = blocks, .iters = iters, .warm_iters = iters};
    int bad = bench_run_variants(&run, v, 2);
    if (!bad) {
        char title[200];
        snprintf(title, sizeof title,
                 "2D copies of a 1024 x 1024 float image, pitch %zu (%d blocks of %d copies per "
                 "variant)",
                 pitch, blocks, iters);
        bench_report_section(rep, title, "GB/s", "over blocks; p99_time: at the p99 block time",
                             "median", "p99_time");
        static const char *const keys[2] = {"raw_copy_2d_dtoh_4m", "cus_copy_2d_dtoh_4m"};
        for (int i = 0; i < 2; i++) {
            bench_stats st = bench_stats_of(v[i].block_ns, blocks);
            bench_ratio q = i ? bench_ratio_of(&v[0], &v[1]) : (bench_ratio){0};
            bench_report_row(rep, keys[i], v[i].label, gbps(m.width * m.height, st.median),
                             gbps(m.width * m.height, st.p99), st.n, i ? &q : NULL);
        }
    }
    bench_run_free(&run, v, 2);
    return bad ? 1 : 0;
}

static int bench_pool_allocs(const bench_opts *opt, bench_report *rep, const raw_api *raw,
                             cus_context *ctx, cus_stream *stream, size_plan plan)
{
    const int blocks = opt->blocks ? opt->blocks : plan.blocks;
    const int iters = opt->iters ? opt->iters : plan.iters;
    cus_autoptr(cus_pool) pool = NULL;
    if (cus_pool_create(ctx, NULL, &pool) || cus_pool_set_release_threshold(pool, UINT64_MAX)) {
        fprintf(stderr, "bench-memory: a pool: %s\n", cus_last_error_message());
        return 1;
    }
    mem_arg m = {.raw = raw, .ctx = ctx, .stream = stream, .hs = cus_stream_handle(stream),
                 .bytes = plan.bytes, .pool = pool, .hp = cus_pool_handle(pool)};
    bench_variant v[] = {
        {.label = "raw cuMemAllocFromPoolAsync + cuMemFreeAsync", .body = loop_raw_pool_alloc,
         .arg = &m},
        {.label = "cus_pool_alloc_async + cus_buffer_unref", .body = loop_cus_pool_alloc,
         .arg = &m},
    };
    enum { N = sizeof v / sizeof v[0] };
    bench_run run = {.blocks = blocks, .iters = iters};
    int bad = bench_run_variants(&run, v, N);
    if (!bad) {
        char sz[32], title[200];
        size_name(sz, sizeof sz, plan.bytes);
        snprintf(title, sizeof title,
                 "allocation of %s from a pool and its release (%d blocks of %d pairs, each "
                 "ending with a stream synchronize, timed; the pool keeps what it reserves)",
                 sz, blocks, iters);
        bench_report_section(rep, title, "ns per pair", "over blocks", "median", "p99");
        static const char *const keys[N] = {"raw_pool_alloc_free", "cus_pool_alloc_unref"};
        for (int i = 0; i < N; i++) {
            bench_stats s = bench_stats_of(v[i].block_ns, blocks);
            bench_ratio q = i ? bench_ratio_of(&v[0], &v[1]) : (bench_ratio){0};
            char key[64];
            snprintf(key, sizeof key, "%s_%zu", keys[i], plan.bytes);
            bench_report_row(rep, key, v[i].label, s.median, s.p99, s.n, i ? &q : NULL);
        }
    }
    bench_run_free(&run, v, N);
    return bad ? 1 : 0;
}

/* --- virtual memory: map + set access + unmap of one chunk ------------------------ */

typedef struct vmm_arg {
    const raw_api *raw;
    CUdeviceptr raw_va; /* a reservation of cuscope's, its range used raw */
    CUmemGenericAllocationHandle raw_h;
    CUmemAccessDesc desc;
    cus_reservation *res; /* another one, through cuscope */
    cus_physical *phys;
    size_t bytes;
} vmm_arg;

static BENCH_NOINLINE int loop_raw_vmm(void *p, int iters, uint64_t *ticks)
{
    const vmm_arg *m = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        bad |= (int)m->raw->map(m->raw_va, m->bytes, 0, m->raw_h, 0);
        bad |= (int)m->raw->set_access(m->raw_va, m->bytes, &m->desc, 1);
        bad |= (int)m->raw->unmap(m->raw_va, m->bytes);
    });
    return bad;
}

static BENCH_NOINLINE int loop_cus_vmm(void *p, int iters, uint64_t *ticks)
{
    const vmm_arg *m = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        bad |= cus_reservation_map(m->res, 0, m->phys, 0, m->bytes);
        bad |= cus_reservation_set_access(m->res, 0, m->bytes, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
        bad |= cus_reservation_unmap(m->res, 0, m->bytes);
    });
    return bad;
}

static int bench_vmm(const bench_env *env, const bench_opts *opt, bench_report *rep,
                     const raw_api *raw, cus_context *ctx)
{
    const int blocks = opt->blocks ? opt->blocks : opt->quick ? 4 : env->fake ? 30 : 100;
    const int iters = opt->iters ? opt->iters : opt->quick ? 5 : 20;
    size_t g = 0;
    if (cus_physical_granularity(ctx, false, &g))
        return bench_fail(env, "cus_physical_granularity");
    size_t bytes = g > ((size_t)2 << 20) ? g : (size_t)2 << 20;
    cus_autoptr(cus_reservation) raw_res = NULL; /* the raw side's range and memory */
    cus_autoptr(cus_physical) raw_phys = NULL;
    cus_autoptr(cus_reservation) res = NULL;
    cus_autoptr(cus_physical) phys = NULL;
    if (cus_reservation_create(ctx, bytes, 0, 0, &raw_res) ||
        cus_physical_create(ctx, bytes, 0, &raw_phys) ||
        cus_reservation_create(ctx, bytes, 0, 0, &res) ||
        cus_physical_create(ctx, bytes, 0, &phys))
        return bench_fail(env, "making the reservations and allocations");
    vmm_arg m = {.raw = raw, .raw_va = cus_reservation_ptr(raw_res),
                 .raw_h = cus_physical_handle(raw_phys), .res = res, .phys = phys,
                 .bytes = bytes};
    m.desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    m.desc.location.id = cus_context_device(ctx).handle;
    m.desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    bench_variant v[] = {
        {.label = "raw cuMemMap + cuMemSetAccess + cuMemUnmap", .body = loop_raw_vmm, .arg = &m},
        {.label = "cus_reservation_map + _set_access + _unmap", .body = loop_cus_vmm, .arg = &m},
    };
    enum { N = sizeof v / sizeof v[0] };
    bench_run run = {.blocks = blocks, .iters = iters};
    int bad = bench_run_variants(&run, v, N);
    if (!bad) {
        char sz[32], title[200];
        size_name(sz, sizeof sz, bytes);
        snprintf(title, sizeof title,
                 "virtual memory: a %s chunk mapped, made accessible and unmapped (%d blocks of "
                 "%d)",
                 sz, blocks, iters);
        bench_report_section(rep, title, "ns per round", "over blocks", "median", "p99");
        static const char *const keys[N] = {"raw_map_access_unmap", "cus_map_access_unmap"};
        for (int i = 0; i < N; i++) {
            bench_stats st = bench_stats_of(v[i].block_ns, blocks);
            bench_ratio q = i % 2 ? bench_ratio_of(&v[i - 1], &v[i]) : (bench_ratio){0};
            char key[64];
            snprintf(key, sizeof key, "%s_%zu", keys[i], bytes);
            bench_report_row(rep, key, v[i].label, st.median, st.p99, st.n, i % 2 ? &q : NULL);
        }
    }
    bench_run_free(&run, v, N);
    return bad ? 1 : 0;
}


/* --- tensor maps (cuscope/tensor_map.h): a 1024 x 1024 float tensor in 64 x 32
 * boxes, raw cuTensorMapEncodeTiled into a stack descriptor against
 * cus_tensor_map_create_tiled + cus_tensor_map_unref (the rules checked, the
 * extent, the record allocated and freed) -------------------------------- */

typedef struct tmap_arg {
    PFN_cuTensorMapEncodeTiled_v12000 raw;
    cus_buffer *buf;
    cus_tensor_map_params params;
} tmap_arg;

static BENCH_NOINLINE int loop_raw_tmap(void *p, int iters, uint64_t *ticks)
{
    const tmap_arg *m = p;
    const cus_tensor_map_params *q = &m->params;
    static const cuuint32_t ones[5] = {1, 1, 1, 1, 1};
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        CUtensorMap map;
        bad |= (int)m->raw(&map, q->data_type, q->rank, (void *)(uintptr_t)cus_buffer_ptr(m->buf),
                           q->global_dim, q->global_strides, q->box_dim, ones, q->interleave,
                           q->swizzle, q->l2_promotion, q->oob_fill);
        __asm__ volatile("" : : "r"(&map) : "memory");
    });
    return bad;
}

static BENCH_NOINLINE int loop_cus_tmap(void *p, int iters, uint64_t *ticks)
{
    const tmap_arg *m = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        cus_tensor_map *map = NULL;
        bad |= cus_tensor_map_create_tiled(m->buf, &m->params, &map);
        map = cus_tensor_map_unref(map);
    });
    return bad;
}

static int bench_tensor_map(const bench_env *env, const bench_opts *opt, bench_report *rep,
                            cus_context *ctx)
{
    PFN_cuTensorMapEncodeTiled_v12000 raw = NULL;
    const bench_sym sym[] = {{"cuTensorMapEncodeTiled", 12000, &raw}};
    if (bench_resolve(env, sym, 1))
        return 1;
    const int blocks = opt->blocks ? opt->blocks : opt->quick ? 3 : 50;
    const int iters = opt->iters ? opt->iters : opt->quick ? 10 : 1000;
    enum { SIDE = 1024 };
    cus_autoptr(cus_buffer) buf = NULL;
    if (cus_buffer_alloc(ctx, SIDE * SIDE * sizeof(float), &buf))
        return bench_fail(env, "allocating the tensor");
    tmap_arg m = {.raw = raw,
                  .buf = buf,
                  .params = {.data_type = CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
                             .rank = 2,
                             .global_dim = {SIDE, SIDE},
                             .global_strides = {SIDE * sizeof(float)},
                             .box_dim = {64, 32},
                             .swizzle = CU_TENSOR_MAP_SWIZZLE_NONE}};
    bench_variant v[] = {
        {.label = "raw cuTensorMapEncodeTiled", .body = loop_raw_tmap, .arg = &m},
        {.label = "cus_tensor_map_create_tiled + cus_tensor_map_unref", .body = loop_cus_tmap,
         .arg = &m},
    };
    bench_run run = {.blocks = blocks, .iters = iters, .warm_iters = iters};
    int bad = bench_run_variants(&run, v, 2);
    if (!bad) {
        char title[200];
        snprintf(title, sizeof title,
                 "tensor maps: a 1024 x 1024 float tensor in 64 x 32 boxes (%d blocks of %d "
                 "encodings per variant)",
                 blocks, iters);
        bench_report_section(rep, title, "ns per map", "over blocks", "median", "p99");
        static const char *const keys[2] = {"raw_tensor_map_encode", "cus_tensor_map_create"};
        for (int i = 0; i < 2; i++) {
            bench_stats st = bench_stats_of(v[i].block_ns, blocks);
            bench_ratio q = i ? bench_ratio_of(&v[0], &v[1]) : (bench_ratio){0};
            bench_report_row(rep, keys[i], v[i].label, st.median, st.p99, st.n, i ? &q : NULL);
        }
    }
    bench_run_free(&run, v, 2);
    return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
    bench_opts opt;
    if (bench_parse_args("bench-memory", argc, argv, &opt,
                         "  (blocks and iters default per size; given, they apply to every size)"))
        return 2;
    bench_env env;
    if (bench_env_open("bench-memory", &env))
        return 1;
    raw_api raw;
    const bench_sym syms[] = {
        {"cuMemcpyHtoD", 3020, &raw.htod},          {"cuMemcpyDtoH", 3020, &raw.dtoh},
        {"cuMemcpyHtoDAsync", 3020, &raw.htod_async}, {"cuMemcpyDtoHAsync", 3020, &raw.dtoh_async},
        {"cuStreamSynchronize", 2000, &raw.sync},   {"cuMemAlloc", 3020, &raw.alloc},
        {"cuMemFree", 3020, &raw.free},             {"cuMemAllocAsync", 11020, &raw.alloc_async},
        {"cuMemFreeAsync", 11020, &raw.free_async},
        {"cuMemMap", 10020, &raw.map},              {"cuMemSetAccess", 10020, &raw.set_access},
        {"cuMemUnmap", 10020, &raw.unmap},
        {"cuMemAllocFromPoolAsync", 11020, &raw.alloc_from_pool},
    };
    if (bench_resolve(&env, syms, sizeof syms / sizeof syms[0]))
        return 1;

    cus_autoptr(cus_context) ctx = NULL;
    if (cus_context_retain_primary(env.dev, &ctx))
        return bench_fail(&env, "cus_context_retain_primary");
    if (cus_context_push(ctx))
        return bench_fail(&env, "cus_context_push");
    cus_autoptr(cus_stream) stream = NULL;
    if (cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &stream))
        return bench_fail(&env, "cus_stream_create");

    const size_plan *copies = opt.quick ? copy_quick : env.fake ? copy_fake : copy_real;
    const size_plan *allocs = opt.quick ? alloc_quick : env.fake ? alloc_fake : alloc_real;
    size_t ncopies = 3;
    size_t nallocs = opt.quick ? 1 : env.fake ? 1 : 2;

    bench_report *rep = bench_report_new("memory", &env, &opt, opt.blocks, opt.iters);
    bench_report_note(rep, "%s", env.fake ? "on the fake driver: a copy is a memmove; the figures "
                                            "are cuscope's own CPU cost on top of the fake's"
                                          : "on the real driver");
    bench_report_note(rep, "the context current, a non-blocking stream created by cuscope; raw "
                           "and cuscope use the same buffers; every variant warmed up first");
    bench_report_note(rep, "interleaved: per size, rounds of every variant; blocks and calls per "
                           "block in each section's title; timed with CLOCK_MONOTONIC per block");
    bench_report_note(rep, "GB/s = 10^9 bytes/s; ratio: cuscope/raw of the median times (>1: "
                           "cuscope slower); in brackets p5..p95 of the per-round ratio");
    int bad = 0;
    for (size_t i = 0; i < ncopies && !bad; i++)
        bad = bench_copies(&env, &opt, rep, &raw, ctx, stream, copies[i]);
    for (size_t i = 0; i < nallocs && !bad; i++)
        bad = bench_allocs(&env, &opt, rep, &raw, ctx, stream, allocs[i]);
    if (!bad)
        bad = bench_copy_2d(&env, &opt, rep, ctx);
    for (size_t i = 0; i < nallocs && !bad; i++)
        bad = bench_pool_allocs(&opt, rep, &raw, ctx, stream, allocs[i]);
    if (!bad)
        bad = bench_vmm(&env, &opt, rep, &raw, ctx);
    if (!bad)
        bad = bench_tensor_map(&env, &opt, rep, ctx);
    bench_report_print(rep, opt.json); /* on a failure, what was measured before it */
    if (bad)
        return 1;
    cus_context_pop(NULL);
    return 0;
}
