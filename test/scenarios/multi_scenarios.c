/* Scenarios across several devices (issue "Several GPUs"): peer access and
 * peer copies, an event that orders the streams of two devices, a thread per
 * device, and the primary contexts of every device. Public API only.
 *
 * Each needs two devices or more: it counts them first and, with one, returns
 * CUS_SUCCESS having done nothing (so the gpu suite passes them vacuously on a
 * one-GPU machine). The unit suite and the fault sweep install the fake with
 * multi_fake_devices() devices for them (two; four for one).
 *
 * Teardown order matters across contexts: a buffer of device 0 read by a
 * copy queued on device 1's stream must outlive that copy. Freeing memory
 * waits for the work of the context that owns it only, so the source buffers
 * are declared before the destination ones: released in reverse, the
 * destination's free (which waits for device 1's work) comes first. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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

/* At most this many devices take part (threads, primary contexts). */
#define MULTI_MAX 16

/* The device count; *n < 2 means: nothing to do. */
#define NEED_TWO_DEVICES(n)                                                    \
    do {                                                                       \
        CUS_TRY(cus_device_count(&(n)));                                       \
        if ((n) < 2)                                                           \
            return CUS_SUCCESS;                                                \
        if ((n) > MULTI_MAX)                                                   \
            (n) = MULTI_MAX;                                                   \
    } while (0)

/* CUS_TEST_KNOWN_BUGS=1 runs the parts written against the intended
 * behaviour that the library refuses today. */
static int known_bugs(void)
{
    const char *v = getenv("CUS_TEST_KNOWN_BUGS");
    return v && strcmp(v, "1") == 0;
}

static cus_status owned_on(int ordinal, cus_context **out)
{
    cus_device dev;
    CUS_TRY(cus_device_get(ordinal, &dev));
    return cus_context_create(dev, CUS_CTX_NO_PUSH, out);
}

static cus_status primary_on(int ordinal, cus_context **out)
{
    cus_device dev;
    CUS_TRY(cus_device_get(ordinal, &dev));
    return cus_context_retain_primary(dev, out);
}

enum { WORDS = 1024, BYTES = WORDS * sizeof(uint32_t) };

/* A context per device; peer access asked both ways and enabled where the
 * devices allow it (twice: the second is not an error); then a buffer of
 * device 0 copied to device 1, synchronously and on device 1's stream. A peer
 * copy works without peer access too (the driver stages it). */
static cus_status scn_multi_peer_copy(void *arg)
{
    (void)arg;
    int n = 0;
    NEED_TWO_DEVICES(n);
    cus_autoptr(cus_context) c0 = NULL;
    cus_autoptr(cus_context) c1 = NULL;
    CUS_TRY(owned_on(0, &c0));
    CUS_TRY(owned_on(1, &c1));
    EXPECT(cus_context_device(c0).handle == 0 && cus_context_device(c1).handle == 1);
    bool can01 = false, can10 = false;
    CUS_TRY(cus_context_can_access_peer(c0, c1, &can01));
    CUS_TRY(cus_context_can_access_peer(c1, c0, &can10));
    if (can01) {
        CUS_TRY(cus_context_enable_peer_access(c0, c1));
        CUS_TRY(cus_context_enable_peer_access(c0, c1)); /* already enabled */
    }
    if (can10)
        CUS_TRY(cus_context_enable_peer_access(c1, c0));

    uint32_t host[WORDS], back[WORDS];
    for (uint32_t i = 0; i < WORDS; i++)
        host[i] = i * 2654435761u + 17u;
    cus_autoptr(cus_buffer) src = NULL; /* before the destinations: see above */
    CUS_TRY(cus_buffer_alloc(c0, BYTES, &src));
    CUS_TRY(cus_copy_to_device(src, 0, host, BYTES));
    cus_autoptr(cus_buffer) dst = NULL;
    cus_autoptr(cus_buffer) dst2 = NULL;
    CUS_TRY(cus_buffer_alloc(c1, BYTES, &dst));
    CUS_TRY(cus_buffer_alloc(c1, BYTES, &dst2));
    EXPECT(cus_buffer_context(dst) == c1);

    /* synchronous: cuMemcpyPeer */
    CUS_TRY(cus_buffer_fill_u32(dst, 0, 0, WORDS));
    CUS_TRY(cus_copy_device(dst, 0, src, 0, BYTES));
    memset(back, 0, sizeof back);
    CUS_TRY(cus_copy_to_host(back, dst, 0, BYTES));
    EXPECT(memcmp(host, back, BYTES) == 0);

    /* on device 1's stream, in two halves swapped: cuMemcpyPeerAsync */
    cus_autoptr(cus_stream) s1 = NULL;
    CUS_TRY(cus_stream_create(c1, CU_STREAM_NON_BLOCKING, 0, &s1));
    CUS_TRY(cus_buffer_fill_u32_async(dst2, 0, 0xffffffffu, WORDS, s1));
    CUS_TRY(cus_copy_device_async(dst2, 0, src, BYTES / 2, BYTES / 2, s1));
    CUS_TRY(cus_copy_device_async(dst2, BYTES / 2, src, 0, BYTES / 2, s1));
    CUS_TRY(cus_stream_synchronize(s1));
    memset(back, 0, sizeof back);
    CUS_TRY(cus_copy_to_host(back, dst2, 0, BYTES));
    EXPECT(memcmp(back, host + WORDS / 2, BYTES / 2) == 0);
    EXPECT(memcmp(back + WORDS / 2, host, BYTES / 2) == 0);

    /* and back the other way, device 1 to device 0, synchronously */
    CUS_TRY(cus_buffer_fill_u32(src, 0, 0, WORDS));
    CUS_TRY(cus_copy_device(src, 0, dst, 0, BYTES));
    memset(back, 0, sizeof back);
    CUS_TRY(cus_copy_to_host(back, src, 0, BYTES));
    EXPECT(memcmp(host, back, BYTES) == 0);
    EXPECT(cus_context_stack_depth() == 0);
    return CUS_SUCCESS;
}

/* Device 0 fills a buffer on its stream and records an event there; device
 * 1's stream waits for that event (another context's: the driver allows it,
 * and so does cuscope) and then copies what device 0 produced. */
static cus_status scn_multi_events_order(void *arg)
{
    (void)arg;
    int n = 0;
    NEED_TWO_DEVICES(n);
    cus_autoptr(cus_context) c0 = NULL;
    cus_autoptr(cus_context) c1 = NULL;
    CUS_TRY(primary_on(0, &c0));
    CUS_TRY(primary_on(1, &c1));
    cus_autoptr(cus_buffer) produced = NULL; /* device 0's, before device 1's */
    CUS_TRY(cus_buffer_alloc(c0, BYTES, &produced));
    cus_autoptr(cus_buffer) copied = NULL;
    CUS_TRY(cus_buffer_alloc(c1, BYTES, &copied));
    cus_autoptr(cus_stream) s0 = NULL;
    cus_autoptr(cus_stream) s1 = NULL;
    CUS_TRY(cus_stream_create(c0, CU_STREAM_NON_BLOCKING, 0, &s0));
    CUS_TRY(cus_stream_create(c1, CU_STREAM_NON_BLOCKING, 0, &s1));
    /* On s1, before the copy: a legacy-stream fill is not ordered with a
     * non-blocking stream's work, and could land after the copy. */
    CUS_TRY(cus_buffer_fill_u32_async(copied, 0, 0, WORDS, s1));
    cus_autoptr(cus_event) made = NULL;
    CUS_TRY(cus_event_create(c0, CU_EVENT_DISABLE_TIMING, &made));

    CUS_TRY(cus_buffer_fill_u32_async(produced, 0, 0x600df00du, WORDS, s0));
    CUS_TRY(cus_buffer_fill_u32_async(produced, BYTES / 2, 0x0badcafeu, WORDS / 2, s0));
    CUS_TRY(cus_event_record(made, s0));
    CUS_TRY(cus_stream_wait_event(s1, made));
    CUS_TRY(cus_copy_device_async(copied, 0, produced, 0, BYTES, s1));
    /* Only device 1's stream is waited for: the event brought device 0's
     * work along. */
    CUS_TRY(cus_stream_synchronize(s1));
    bool done = false;
    CUS_TRY(cus_event_query(made, &done));
    EXPECT(done);
    uint32_t back[WORDS];
    CUS_TRY(cus_copy_to_host(back, copied, 0, BYTES));
    for (int i = 0; i < WORDS; i++)
        EXPECT(back[i] == (i < WORDS / 2 ? 0x600df00du : 0x0badcafeu));
    CUS_TRY(cus_stream_synchronize(s0));
    EXPECT(cus_context_stack_depth() == 0);
    return CUS_SUCCESS;
}

/* KNOWN BUG (runs with CUS_TEST_KNOWN_BUGS=1): a peer copy queued on the
 * SOURCE device's stream ("push"), which cuMemcpyPeerAsync accepts (its
 * stream may belong to either context) and cuscope refuses with
 * CUS_ERROR_CONTEXT_MISMATCH (lib/memory.c, cus_copy_device_async:
 * CHECK_STREAM(dst, stream)). */
static cus_status scn_multi_copy_on_source_stream(void *arg)
{
    (void)arg;
    int n = 0;
    NEED_TWO_DEVICES(n);
    if (!known_bugs())
        return CUS_SUCCESS;
    cus_autoptr(cus_context) c0 = NULL;
    cus_autoptr(cus_context) c1 = NULL;
    CUS_TRY(primary_on(0, &c0));
    CUS_TRY(primary_on(1, &c1));
    uint32_t host[WORDS], back[WORDS];
    for (uint32_t i = 0; i < WORDS; i++)
        host[i] = i ^ 0x5a5a5a5au;
    cus_autoptr(cus_buffer) src = NULL;
    CUS_TRY(cus_buffer_alloc(c0, BYTES, &src));
    CUS_TRY(cus_copy_to_device(src, 0, host, BYTES));
    cus_autoptr(cus_buffer) dst = NULL;
    CUS_TRY(cus_buffer_alloc(c1, BYTES, &dst));
    cus_autoptr(cus_stream) s0 = NULL;
    CUS_TRY(cus_stream_create(c0, CU_STREAM_NON_BLOCKING, 0, &s0));
    CUS_TRY(cus_copy_device_async(dst, 0, src, 0, BYTES, s0));
    CUS_TRY(cus_stream_synchronize(s0));
    CUS_TRY(cus_copy_to_host(back, dst, 0, BYTES));
    EXPECT(memcmp(host, back, BYTES) == 0);
    return CUS_SUCCESS;
}

/* One thread per device: each pushes a context of its own on its own stack,
 * allocates, copies, fills on a stream, synchronizes, checks, pops. */
typedef struct device_worker {
    pthread_t thread;
    int ordinal;
    cus_status status;
    unsigned int depth_inside; /* the stack's depth while working */
    unsigned int depth_after;  /* and after the pop: must be 0 */
    bool top_was_ours;
} device_worker;

static cus_status worker_body(device_worker *w, cus_context *ctx)
{
    w->depth_inside = cus_context_stack_depth();
    w->top_was_ours = cus_context_current() == ctx;
    uint32_t host[WORDS], back[WORDS];
    for (uint32_t i = 0; i < WORDS; i++)
        host[i] = i + (uint32_t)w->ordinal * 100000u;
    cus_autoptr(cus_buffer) a = NULL;
    cus_autoptr(cus_buffer) b = NULL;
    CUS_TRY(cus_buffer_alloc(ctx, BYTES, &a));
    CUS_TRY(cus_buffer_alloc(ctx, BYTES, &b));
    cus_autoptr(cus_stream) s = NULL;
    CUS_TRY(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &s));
    CUS_TRY(cus_copy_to_device(a, 0, host, BYTES));
    CUS_TRY(cus_copy_device_async(b, 0, a, 0, BYTES, s));
    CUS_TRY(cus_buffer_fill_u32_async(b, 0, (uint32_t)w->ordinal, 1, s));
    CUS_TRY(cus_stream_synchronize(s));
    CUS_TRY(cus_context_synchronize(ctx));
    CUS_TRY(cus_copy_to_host(back, b, 0, BYTES));
    host[0] = (uint32_t)w->ordinal;
    EXPECT(memcmp(host, back, BYTES) == 0);
    return CUS_SUCCESS;
}

static void *device_worker_main(void *arg)
{
    device_worker *w = arg;
    cus_context *ctx = NULL;
    w->status = owned_on(w->ordinal, &ctx);
    if (w->status == CUS_SUCCESS) {
        w->status = cus_context_push(ctx);
        if (w->status == CUS_SUCCESS) {
            w->status = worker_body(w, ctx);
            cus_status popped = cus_context_pop(NULL);
            if (w->status == CUS_SUCCESS)
                w->status = popped;
        }
    }
    w->depth_after = cus_context_stack_depth();
    ctx = cus_context_unref(ctx);
    return NULL;
}

static cus_status scn_multi_thread_per_device(void *arg)
{
    (void)arg;
    int n = 0;
    NEED_TWO_DEVICES(n);
    device_worker w[MULTI_MAX];
    memset(w, 0, sizeof w);
    int started = 0;
    for (; started < n; started++) {
        w[started].ordinal = started;
        if (pthread_create(&w[started].thread, NULL, device_worker_main, &w[started]) != 0)
            break;
    }
    for (int i = 0; i < started; i++)
        pthread_join(w[i].thread, NULL);
    EXPECT(started == n);
    for (int i = 0; i < n; i++)
        if (w[i].status != CUS_SUCCESS)
            return w[i].status;
    for (int i = 0; i < n; i++) {
        EXPECT(w[i].depth_inside == 1 && w[i].top_was_ours);
        EXPECT(w[i].depth_after == 0);
    }
    EXPECT(cus_context_stack_depth() == 0);
    return CUS_SUCCESS;
}

/* The primary context of every device: distinct handles, one per device, the
 * same handle again for a second retain, none pushed. */
static cus_status scn_multi_primary_contexts(void *arg)
{
    (void)arg;
    int n = 0;
    NEED_TWO_DEVICES(n);
    cus_context *p[MULTI_MAX] = {NULL};
    cus_context *again[MULTI_MAX] = {NULL};
    cus_status st = CUS_SUCCESS;
    for (int i = 0; i < n && !st; i++) {
        st = primary_on(i, &p[i]);
        if (!st)
            st = primary_on(i, &again[i]);
    }
    if (!st) {
        for (int i = 0; i < n && !st; i++) {
            if (cus_context_get_kind(p[i]) != CUS_CONTEXT_PRIMARY ||
                cus_context_device(p[i]).handle != i || !cus_context_handle(p[i]) ||
                p[i] == again[i] || cus_context_handle(again[i]) != cus_context_handle(p[i]))
                st = SCN_WRONG;
            for (int j = 0; j < i && !st; j++)
                if (cus_context_handle(p[j]) == cus_context_handle(p[i]))
                    st = SCN_WRONG;
        }
        if (st == SCN_WRONG)
            fprintf(stderr, "%s: primary contexts: a wrong kind, device or handle\n", __FILE__);
    }
    /* each one usable: a small buffer on every device */
    for (int i = 0; i < n && !st; i++) {
        cus_buffer *b = NULL;
        st = cus_buffer_alloc(p[i], 64, &b);
        if (!st)
            st = cus_buffer_fill_u8(b, 0, (uint8_t)i, 64);
        b = cus_buffer_unref(b);
    }
    if (!st && cus_context_stack_depth() != 0)
        st = SCN_WRONG;
    for (int i = n - 1; i >= 0; i--) {
        again[i] = cus_context_unref(again[i]);
        p[i] = cus_context_unref(p[i]);
    }
    return st;
}

const scenario multi_scenarios[] = {
    {"multi_peer_copy", scn_multi_peer_copy},
    {"multi_events_order", scn_multi_events_order},
    {"multi_copy_on_source_stream", scn_multi_copy_on_source_stream},
    {"multi_thread_per_device", scn_multi_thread_per_device},
    {"multi_primary_contexts", scn_multi_primary_contexts},
    {NULL, NULL},
};

int multi_fake_devices(const scenario *s)
{
    return strcmp(s->name, "multi_primary_contexts") == 0 ? 4 : 2;
}
