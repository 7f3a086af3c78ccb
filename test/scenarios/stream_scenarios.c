/* Stream and event scenarios (include/cuscope/stream.h, event.h): public API
 * only, valid on the fake and on a real GPU. */
#include <stdatomic.h>
#include <stdio.h>

#include <string.h>

#include <cuscope/event.h>
#include <cuscope/memory.h>
#include <cuscope/stream.h>

#include "scenarios.h"

#define EXPECT(cond)                                                           \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "%s:%d: scenario check failed: %s\n", __FILE__, __LINE__, #cond); \
            return SCN_WRONG;                                                  \
        }                                                                      \
    } while (0)

static cus_status primary0(cus_context **out)
{
    cus_device dev;
    CUS_TRY(cus_device_get(0, &dev));
    return cus_context_retain_primary(dev, out);
}

/* A stream with the greatest priority: queried and synchronized. */
static cus_status scn_stream_priority(void *arg)
{
    (void)arg;
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(primary0(&ctx));
    int least = 0, greatest = 0;
    CUS_TRY(cus_context_stream_priority_range(ctx, &least, &greatest));
    cus_autoptr(cus_stream) s = NULL;
    CUS_TRY(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, greatest, &s));
    EXPECT(cus_stream_get_kind(s) == CUS_STREAM_OWNED && cus_stream_context(s) == ctx);
    int p = least + 1;
    CUS_TRY(cus_stream_priority(s, &p));
    EXPECT(p == greatest);
    unsigned int flags = 0;
    CUS_TRY(cus_stream_flags(s, &flags));
    EXPECT(flags & CU_STREAM_NON_BLOCKING);
    CUS_TRY(cus_stream_synchronize(s));
    bool done = false;
    CUS_TRY(cus_stream_query(s, &done));
    EXPECT(done);
    EXPECT(cus_context_stack_depth() == 0);
    return CUS_SUCCESS;
}

/* Two streams ordered by an event: recorded on A, waited for on B. */
static cus_status scn_event_orders_streams(void *arg)
{
    (void)arg;
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(primary0(&ctx));
    cus_autoptr(cus_stream) a = NULL;
    CUS_TRY(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &a));
    cus_autoptr(cus_stream) b = NULL;
    CUS_TRY(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &b));
    cus_autoptr(cus_event) e = NULL;
    CUS_TRY(cus_event_create(ctx, CU_EVENT_DISABLE_TIMING, &e));
    CUS_TRY(cus_event_record(e, a));
    CUS_TRY(cus_stream_wait_event(b, e));
    CUS_TRY(cus_stream_synchronize(b));
    bool done = false;
    CUS_TRY(cus_event_query(e, &done));
    EXPECT(done);
    CUS_TRY(cus_event_synchronize(e));
    return CUS_SUCCESS;
}

static void count_up(void *p)
{
    atomic_fetch_add((atomic_int *)p, 1);
}

/* Timing records around a host function. */
static cus_status scn_event_timing(void *arg)
{
    (void)arg;
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(primary0(&ctx));
    cus_autoptr(cus_stream) s = NULL;
    CUS_TRY(cus_stream_create(ctx, 0, 0, &s));
    cus_autoptr(cus_event) start = NULL;
    CUS_TRY(cus_event_create(ctx, 0, &start));
    cus_autoptr(cus_event) end = NULL;
    CUS_TRY(cus_event_create(ctx, CU_EVENT_BLOCKING_SYNC, &end));
    static atomic_int counter;
    atomic_store(&counter, 0);
    CUS_TRY(cus_event_record(start, s));
    CUS_TRY(cus_stream_launch_host_fn(s, count_up, &counter));
    CUS_TRY(cus_event_record(end, s));
    CUS_TRY(cus_event_synchronize(end));
    EXPECT(atomic_load(&counter) == 1);
    float ms = -1.0f;
    CUS_TRY(cus_event_elapsed_ms(start, end, &ms));
    EXPECT(ms >= 0.0f);
    CUS_TRY(cus_stream_synchronize(s));
    return CUS_SUCCESS;
}

/* Host functions run in order, all before synchronize returns. */
static cus_status scn_host_fn_counter(void *arg)
{
    (void)arg;
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(primary0(&ctx));
    cus_autoptr(cus_stream) s = NULL;
    CUS_TRY(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &s));
    static atomic_int counter;
    atomic_store(&counter, 0);
    for (int i = 0; i < 3; i++)
        CUS_TRY(cus_stream_launch_host_fn(s, count_up, &counter));
    CUS_TRY(cus_stream_synchronize(s));
    EXPECT(atomic_load(&counter) == 3);
    bool done = false;
    CUS_TRY(cus_stream_query(s, &done));
    EXPECT(done);
    return CUS_SUCCESS;
}

/* The legacy and per-thread default streams. */
static cus_status scn_default_streams(void *arg)
{
    (void)arg;
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(primary0(&ctx));
    cus_autoptr(cus_stream) legacy = NULL;
    CUS_TRY(cus_stream_legacy(ctx, &legacy));
    EXPECT(cus_stream_get_kind(legacy) == CUS_STREAM_LEGACY_DEFAULT);
    EXPECT(cus_stream_handle(legacy) == CU_STREAM_LEGACY);
    cus_autoptr(cus_stream) pts = NULL;
    CUS_TRY(cus_stream_per_thread(ctx, &pts));
    EXPECT(cus_stream_get_kind(pts) == CUS_STREAM_PER_THREAD_DEFAULT);
    EXPECT(cus_stream_handle(pts) == CU_STREAM_PER_THREAD);
    static atomic_int counter;
    atomic_store(&counter, 0);
    CUS_TRY(cus_stream_launch_host_fn(legacy, count_up, &counter));
    CUS_TRY(cus_stream_synchronize(legacy));
    EXPECT(atomic_load(&counter) == 1);
    cus_autoptr(cus_event) e = NULL;
    CUS_TRY(cus_event_create(ctx, CU_EVENT_DISABLE_TIMING, &e));
    CUS_TRY(cus_event_record(e, pts));
    CUS_TRY(cus_stream_synchronize(pts));
    bool done = false;
    CUS_TRY(cus_event_query(e, &done));
    EXPECT(done);
    EXPECT(cus_context_stack_depth() == 0);
    return CUS_SUCCESS;
}

/* Pinned host memory, device buffers, async copies on a stream and a
 * device-to-device copy: the data makes the round trip intact. */
static cus_status scn_memory_round_trip(void *arg)
{
    (void)arg;
    enum { N = 4096 };
    cus_device dev;
    CUS_TRY(cus_device_get(0, &dev));
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(cus_context_retain_primary(dev, &ctx));
    cus_autoptr(cus_stream) s = NULL;
    CUS_TRY(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &s));
    cus_autoptr(cus_host_buffer) in = NULL;
    cus_autoptr(cus_host_buffer) out = NULL;
    CUS_TRY(cus_host_buffer_alloc(ctx, N, 0, &in));
    CUS_TRY(cus_host_buffer_alloc(ctx, N, 0, &out));
    unsigned char *src = cus_host_buffer_data(in), *dst = cus_host_buffer_data(out);
    for (int i = 0; i < N; i++)
        src[i] = (unsigned char)(i * 7 + 3);
    memset(dst, 0, N);
    cus_autoptr(cus_buffer) a = NULL;
    cus_autoptr(cus_buffer) b = NULL;
    CUS_TRY(cus_buffer_alloc(ctx, N, &a));
    CUS_TRY(cus_buffer_alloc_n(ctx, unsigned char, N, &b));
    CUS_TRY(cus_copy_to_device_async(a, 0, src, N, s));
    CUS_TRY(cus_copy_device_async(b, 0, a, 0, N, s));
    CUS_TRY(cus_copy_to_host_async(dst, b, 0, N, s));
    CUS_TRY(cus_stream_synchronize(s));
    EXPECT(memcmp(src, dst, N) == 0);
    EXPECT(cus_copy_to_host(dst, b, 1, N) == CUS_ERROR_OUT_OF_RANGE); /* never reaches the driver */
    CUS_TRY(cus_buffer_fill_u32(a, 0, 0xdeadbeefu, N / 4));
    CUS_TRY(cus_copy_to_host(dst, a, 0, 8));
    uint32_t w;
    memcpy(&w, dst + 4, 4);
    EXPECT(w == 0xdeadbeefu);
    size_t free_b = 0, total = 0;
    CUS_TRY(cus_memory_info(ctx, &free_b, &total));
    EXPECT(free_b <= total && total > 0);
    return CUS_SUCCESS;
}

/* A stream-ordered buffer: allocated, filled and read on its stream, and
 * freed on it at release. The host side is page-locked and declared before
 * the stream: an early return must not leave a queued copy aimed at memory
 * that is gone (a stack array would be, and the sweep found it). Freeing
 * page-locked memory waits for the context's work. */
static cus_status scn_stream_ordered_buffer(void *arg)
{
    (void)arg;
    cus_device dev;
    CUS_TRY(cus_device_get(0, &dev));
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(cus_context_retain_primary(dev, &ctx));
    enum { N = 256 };
    cus_autoptr(cus_host_buffer) pinned = NULL;
    CUS_TRY(cus_host_buffer_alloc(ctx, N, 0, &pinned));
    unsigned char *host = cus_host_buffer_data(pinned);
    memset(host, 0, N);
    cus_autoptr(cus_stream) s = NULL;
    CUS_TRY(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &s));
    {
        cus_autoptr(cus_buffer) buf = NULL;
        CUS_TRY(cus_buffer_alloc_async(s, N, &buf));
        EXPECT(cus_buffer_get_kind(buf) == CUS_BUFFER_STREAM_ORDERED);
        CUS_TRY(cus_buffer_fill_u8_async(buf, 0, 0x5a, N, s));
        CUS_TRY(cus_copy_to_host_async(host, buf, 0, N, s));
    } /* freed on s, after the copy */
    CUS_TRY(cus_stream_synchronize(s));
    for (size_t i = 0; i < N; i++)
        EXPECT(host[i] == 0x5a);
    return CUS_SUCCESS;
}

const scenario stream_scenarios[] = {
    {"memory_round_trip", scn_memory_round_trip},
    {"stream_ordered_buffer", scn_stream_ordered_buffer},
    {"stream_priority", scn_stream_priority},
    {"event_orders_streams", scn_event_orders_streams},
    {"event_timing", scn_event_timing},
    {"host_fn_counter", scn_host_fn_counter},
    {"default_streams", scn_default_streams},
    {NULL, NULL},
};
