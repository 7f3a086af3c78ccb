/* Virtual memory scenarios (include/cuscope/vmm.h): public API only, valid
 * on the fake and on a real GPU. */
#include <stdint.h>
#include <stdio.h>

#include <cuscope/memory.h>
#include <cuscope/vmm.h>

#include "scenarios.h"

#define EXPECT(cond)                                                           \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "%s:%d: scenario check failed: %s\n", __FILE__, __LINE__, #cond); \
            return SCN_WRONG;                                                  \
        }                                                                      \
    } while (0)

/* One u32 of b at element i. */
static cus_status read_u32(cus_buffer *b, size_t i, uint32_t *v)
{
    return cus_copy_to_host(v, b, i * sizeof *v, sizeof *v);
}

/* A growable buffer grown four times, each step filled with its own value:
 * the address never moves, the data of every earlier step stays, and a fill
 * and a copy across the grown range (over the seams between chunks) see
 * every chunk. */
static cus_status scn_growable_grows(void *arg)
{
    (void)arg;
    cus_device dev;
    CUS_TRY(cus_device_get(0, &dev));
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(cus_context_retain_primary(dev, &ctx));
    size_t gran = 0;
    CUS_TRY(cus_physical_granularity(ctx, false, &gran));
    cus_autoptr(cus_growable) g = NULL;
    CUS_TRY(cus_growable_reserve(ctx, 8 * gran, &g));
    CUdeviceptr at = cus_growable_ptr(g);
    size_t size = 0;
    for (uint32_t step = 1; step <= 4; step++) {
        size_t next = step * gran + gran / 2; /* not a chunk boundary */
        if (next > 8 * gran)
            next = 8 * gran;
        CUS_TRY(cus_growable_grow(g, next));
        EXPECT(cus_growable_ptr(g) == at);
        EXPECT(cus_growable_size(g) == next);
        cus_autoptr(cus_buffer) b = NULL;
        CUS_TRY(cus_growable_buffer(g, &b));
        EXPECT(cus_buffer_ptr(b) == at && cus_buffer_size(b) == next);
        CUS_TRY(cus_buffer_fill_u32(b, size, 0x1000u + step, (next - size) / 4));
        for (uint32_t k = 1; k <= step; k++) { /* every step's first and last word */
            size_t lo = k == 1 ? 0 : ((k - 1) * gran + gran / 2) / 4;
            size_t hi = (k * gran + gran / 2) / 4 - 1;
            uint32_t v = 0;
            CUS_TRY(read_u32(b, lo, &v));
            EXPECT(v == 0x1000u + k);
            CUS_TRY(read_u32(b, hi, &v));
            EXPECT(v == 0x1000u + k);
        }
        size = next;
    }
    /* A fill of all of it, then a copy from the first half to the second. */
    cus_autoptr(cus_buffer) b = NULL;
    CUS_TRY(cus_growable_buffer(g, &b));
    /* A reservation's unmap does not wait for queued work (nor does the
     * driver's cuMemUnmap), and these fills return before they are done:
     * the reads below wait for them. (An early return between them leaves
     * one queued: the fake runs these fills at the call unless its deferred
     * mode is on, cus_fake_set_sync_memsets_deferred.) */
    CUS_TRY(cus_buffer_fill_u32(b, 0, 0xabcdu, size / 4));
    CUS_TRY(cus_buffer_fill_u32(b, 0, 0x7777u, size / 8));
    CUS_TRY(cus_copy_device(b, size / 2, b, 0, size / 2));
    size_t words = size / 4;
    size_t probes[] = {0, words / 2 - 1, words / 2, gran / 4, 2 * gran / 4 + 3, words - 1};
    for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++) {
        uint32_t v = 0;
        CUS_TRY(read_u32(b, probes[i], &v));
        EXPECT(v == 0x7777u);
    }
    EXPECT(cus_growable_ptr(g) == at);
    return CUS_SUCCESS;
}

const scenario vmm_scenarios[] = {
    {"growable_grows", scn_growable_grows},
    {NULL, NULL},
};
