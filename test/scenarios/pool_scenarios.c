/* Memory pool scenarios (include/cuscope/pool.h): public API only, valid on
 * the fake and on a real GPU (where the driver reserves in chunks, so only
 * bounds of the reserved bytes are checked). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cuscope/pool.h>

#include "scenarios.h"

#define EXPECT(cond)                                                           \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "%s:%d: scenario check failed: %s\n", __FILE__, __LINE__, #cond); \
            return SCN_WRONG;                                                  \
        }                                                                      \
    } while (0)

/* A pool that keeps what it reserves, two buffers from it on a stream, a
 * fill, a copy between them and back to the host, the frees, a trim, and
 * the high-water marks before and after their reset. The pinned copy target
 * outlives the stream's work on every path. */
static cus_status scn_pool_lifecycle(void *arg)
{
    (void)arg;
    enum { N = 1 << 18 }; /* u32 elements: 1 MiB */
    const size_t bytes = (size_t)N * 4;
    cus_device dev;
    CUS_TRY(cus_device_get(0, &dev));
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(cus_context_retain_primary(dev, &ctx));
    cus_autoptr(cus_host_buffer) pinned = NULL;
    CUS_TRY(cus_host_buffer_alloc(ctx, bytes, 0, &pinned));
    uint32_t *host = cus_host_buffer_data(pinned);
    memset(host, 0, bytes);
    cus_autoptr(cus_stream) s = NULL;
    CUS_TRY(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &s));
    cus_autoptr(cus_pool) pool = NULL;
    CUS_TRY(cus_pool_create(ctx, NULL, &pool));
    CUS_TRY(cus_pool_set_release_threshold(pool, UINT64_MAX));
    uint64_t threshold = 0;
    CUS_TRY(cus_pool_get_release_threshold(pool, &threshold));
    EXPECT(threshold == UINT64_MAX);
    {
        cus_autoptr(cus_buffer) a = NULL;
        cus_autoptr(cus_buffer) b = NULL;
        CUS_TRY(cus_pool_alloc_async(pool, s, bytes, &a));
        CUS_TRY(cus_pool_alloc_async(pool, s, bytes, &b));
        EXPECT(cus_buffer_get_kind(a) == CUS_BUFFER_STREAM_ORDERED);
        CUS_TRY(cus_buffer_fill_u32_async(a, 0, 0x600DF00Du, N, s));
        CUS_TRY(cus_copy_device_async(b, 0, a, 0, bytes, s));
        CUS_TRY(cus_copy_to_host_async(host, b, 0, bytes, s));
        cus_pool_usage u;
        CUS_TRY(cus_pool_get_usage(pool, &u));
        EXPECT(u.used_current >= 2 * bytes);
        EXPECT(u.reserved_current >= u.used_current);
    } /* freed on s, after the copies */
    CUS_TRY(cus_stream_synchronize(s));
    for (size_t i = 0; i < N; i++)
        EXPECT(host[i] == 0x600DF00Du);
    cus_pool_usage kept;
    CUS_TRY(cus_pool_get_usage(pool, &kept));
    EXPECT(kept.used_current == 0);
    EXPECT(kept.used_high >= 2 * bytes);
    EXPECT(kept.reserved_high >= kept.used_high);
    EXPECT(kept.reserved_current >= 2 * bytes); /* above the threshold: kept */
    CUS_TRY(cus_pool_trim(pool, 0));
    cus_pool_usage trimmed;
    CUS_TRY(cus_pool_get_usage(pool, &trimmed));
    EXPECT(trimmed.reserved_current < kept.reserved_current);
    EXPECT(trimmed.reserved_high == kept.reserved_high);
    CUS_TRY(cus_pool_reset_high_water(pool));
    cus_pool_usage reset;
    CUS_TRY(cus_pool_get_usage(pool, &reset));
    EXPECT(reset.used_high == 0);
    EXPECT(reset.reserved_high <= kept.reserved_high);
    return CUS_SUCCESS;
}

const scenario pool_scenarios[] = {
    {"pool_lifecycle", scn_pool_lifecycle},
    {NULL, NULL},
};
