/* Fixtures of the graph tests: test_graph.c, split by its sections into
 * test_graph_capture.c, test_graph_exec.c, test_graph_keep.c. What they
 * test, together: */
/* Stream capture and graphs (include/cuscope/graph.h) on the fake driver:
 *   - capture in the three modes, the scoped guard ending the capture on
 *     every path out (an early return abandons it, an error inside leaves no
 *     half-open capture, the stream is usable again and no graph leaks);
 *   - every function of graph.h with each driver call it makes failing
 *     (cus_fake_fail_entry), and refused inside a host function;
 *   - instantiate, replay N times with the results checked, upload, update
 *     (matching topology succeeds, a changed one fails clearly and the exec
 *     still replays what it had);
 *   - the keep rule: a graph keeps the buffers, modules, events and host
 *     function records that its captured work uses, so the user may drop
 *     them (and the stream) and replay; they go with the last graph or exec;
 *   - a stream of one context with a buffer of another, joined streams, a
 *     graph whose context died.
 * Kernels (kernels/saxpy.cu) run as host twins registered here. */
#ifndef CUSCOPE_TEST_GRAPH_FIXTURES_H
#define CUSCOPE_TEST_GRAPH_FIXTURES_H
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuscope/event.h>
#include <cuscope/graph.h>
#include <cuscope/memory.h>
#include <cuscope/stream.h>

#include "stream_common.h"
#include "harness/check.h"

#ifdef CUS_TEST_HAVE_KERNELS
#include <cuscope/function.h>
#include <cuscope/launch.h>
#include <cuscope/module.h>

#include "cusk-images.h"
#endif

#define G_N 64 /* elements in the test buffers */

/* --- fixtures ------------------------------------------------------------------ */

static inline bool capturing(cus_stream *s)
{
    bool c = true;
    assert_ok(cus_stream_is_capturing(s, &c));
    return c;
}

static inline cus_host_buffer *new_pinned(cus_context *c, size_t bytes)
{
    cus_host_buffer *h = NULL;
    assert_ok(cus_host_buffer_alloc(c, bytes, 0, &h));
    memset(cus_host_buffer_data(h), 0, bytes);
    return h;
}

static inline cus_buffer *new_buffer(cus_context *c, size_t bytes)
{
    cus_buffer *b = NULL;
    assert_ok(cus_buffer_alloc(c, bytes, &b));
    return b;
}

static inline uint32_t *u32s(cus_host_buffer *h)
{
    return cus_host_buffer_data(h);
}

/* Captures, on s in `mode`: in -> buf (H2D), buf[half..] = fill (memset),
 * buf -> out (D2H): three nodes, one buffer kept. */
static inline cus_status capture_copies(cus_stream *s, CUstreamCaptureMode mode, cus_buffer *buf,
                                        const uint32_t *in, uint32_t *out, uint32_t fill,
                                        cus_graph **graph)
{
    cus_capture_scope(cap, s, mode);
    CUS_TRY(cap.status);
    CUS_TRY(cus_copy_to_device_async(buf, 0, in, G_N * 4, s));
    CUS_TRY(cus_buffer_fill_u32_async(buf, G_N / 2 * 4, fill, G_N / 2, s));
    CUS_TRY(cus_copy_to_host_async(out, buf, 0, G_N * 4, s));
    return cus_capture_end(&cap, graph);
}

/* What a replay of capture_copies must have produced. */
static inline void assert_copies_result(const uint32_t *in, const uint32_t *out, uint32_t fill)
{
    for (int i = 0; i < G_N; i++) {
        uint32_t want = i < G_N / 2 ? in[i] : fill;
        if (out[i] != want)
            fail_msg("out[%d] = %#x, expected %#x", i, out[i], want);
    }
}

static inline void seed(uint32_t *p, uint32_t base)
{
    for (int i = 0; i < G_N; i++)
        p[i] = base + (uint32_t)i * 3u;
}

/* The teardown of a test that misuses the fake on purpose: nothing of
 * cuscope left alive, a fresh fake (its misuse count back to 0), then the
 * usual checks. */
static inline int teardown_after_misuse(void **state)
{
    cus_release_deferred();
    if (cus_debug_live_objects())
        fail_msg("%zu objects alive after the misuse test", cus_debug_live_objects());
    assert_ok(cus_fake_install(NULL));
    return env_teardown(state);
}

static inline cus_graph_exec *instantiate(cus_graph *g)
{
    cus_graph_exec *e = NULL;
    assert_ok(cus_graph_instantiate(g, 0, &e));
    assert_non_null(e);
    assert_non_null(cus_graph_exec_handle(e));
    return e;
}

/* A scope that begins a capture, queues a copy, and returns without ending
 * it: the guard abandons the capture. */
static inline cus_status capture_and_walk_away(cus_stream *s, cus_buffer *buf, const void *in)
{
    cus_capture_scope(cap, s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    CUS_TRY(cap.status);
    CUS_TRY(cus_copy_to_device_async(buf, 0, in, 16, s));
    return CUS_SUCCESS; /* no end */
}

/* A scope whose second captured call fails (cuscope's own check: a range
 * past the buffer's end, no driver call): CUS_TRY leaves, the guard ends. */
static inline cus_status capture_with_bad_range(cus_stream *s, cus_buffer *buf, const void *in,
                                                cus_graph **graph)
{
    cus_capture_scope(cap, s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    CUS_TRY(cap.status);
    CUS_TRY(cus_copy_to_device_async(buf, 0, in, 16, s));
    CUS_TRY(cus_copy_to_device_async(buf, cus_buffer_size(buf), in, 16, s));
    return cus_capture_end(&cap, graph);
}

/* A scope whose captured call is one the capture cannot take: a stream
 * synchronize (the driver refuses it and invalidates the capture). */
static inline cus_status capture_with_sync(cus_stream *s, cus_buffer *buf, const void *in,
                                           cus_graph **graph)
{
    cus_capture_scope(cap, s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    CUS_TRY(cap.status);
    CUS_TRY(cus_copy_to_device_async(buf, 0, in, 16, s));
    CUS_TRY(cus_stream_synchronize(s));
    return cus_capture_end(&cap, graph);
}

/* The stream still works after a capture: a copy round trip, synchronized. */
static inline void assert_stream_usable(cus_stream *s, cus_buffer *buf, cus_host_buffer *h)
{
    uint32_t *p = u32s(h);
    p[0] = 0x1234u;
    p[1] = 0;
    assert_ok(cus_copy_to_device_async(buf, 0, p, 4, s));
    assert_ok(cus_copy_to_host_async(p + 1, buf, 0, 4, s));
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(p[1], 0x1234u);
}

/* Two failed pops (cuscope retries one) after expr's driver call worked:
 * the work stands, so expr succeeds (the last error untouched) and the pop
 * goes to the destroy handler, naming `function` and cuCtxPopCurrent; the
 * context the pops left on the driver's stack, one above cuscope's mirror, is
 * taken off afterwards. */
#define assert_double_pop_reported(function, expr)                             \
    do {                                                                       \
        unsigned long reports_ = env_destroyed.count;                          \
        int fake_depth_ = cus_fake_thread_stack_depth();                       \
        cus_clear_last_error();                                                \
        assert_ok(cus_fake_fail_entry("cuCtxPopCurrent", 1, FAULT, false));    \
        assert_ok(cus_fake_fail_entry("cuCtxPopCurrent", 2, FAULT, false));    \
        cus_status got_ = (expr);                                              \
        cus_fake_clear_faults();                                               \
        if (got_ != CUS_SUCCESS)                                               \
            fail_msg("%s with two pops failing -> %s (%s)", #expr,             \
                     cus_status_name(got_), cus_last_error_message());         \
        assert_int_equal(cus_last_status(), CUS_SUCCESS);                      \
        env_assert_one_pop_report(reports_, (function));                       \
        assert_int_equal(cus_fake_thread_stack_depth(), fake_depth_ + 1);      \
        reconcile_fake_stack();                                                   \
    } while (0)

/* Ends, with the fake's raw entry points, a capture the driver still has
 * open on s that cuscope no longer tracks, and destroys its graph. */
static inline void raw_end_capture(cus_context *c, cus_stream *s)
{
    void *pfn = NULL, *dpfn = NULL;
    CUdriverProcAddressQueryResult qs;
    assert_int_equal(cus_fake_get_proc_address("cuStreamEndCapture", &pfn, 10000, 0, &qs), 0);
    assert_int_equal(cus_fake_get_proc_address("cuGraphDestroy", &dpfn, 10000, 0, &qs), 0);
    CUresult (*end)(CUstream, CUgraph *);
    CUresult (*destroy)(CUgraph);
    memcpy(&end, &pfn, sizeof pfn);
    memcpy(&destroy, &dpfn, sizeof dpfn);
    CUgraph raw = NULL;
    assert_ok(cus_context_push(c));
    CUresult r = end(cus_stream_handle(s), &raw);
    assert_ok(cus_context_pop(NULL));
    if (r != CUDA_SUCCESS && r != CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)
        fail_msg("raw cuStreamEndCapture -> %d", (int)r);
    if (raw)
        assert_int_equal(destroy(raw), CUDA_SUCCESS);
}

#ifdef CUS_TEST_HAVE_KERNELS
/* The host twin of kernels/saxpy.cu: y[i] = a * x[i] + y[i] for the i < n
 * that the grid covers. */
static atomic_int saxpy_runs;

static inline CUresult saxpy_twin(const cus_fake_launch *l, void **args, void *user)
{
    (void)user;
    float a;
    CUdeviceptr x, y;
    unsigned long long n;
    memcpy(&a, args[0], sizeof a);
    memcpy(&x, args[1], sizeof x);
    memcpy(&y, args[2], sizeof y);
    memcpy(&n, args[3], sizeof n);
    unsigned long long threads = (unsigned long long)l->grid[0] * l->block[0];
    const float *xp = (const float *)(uintptr_t)x;
    float *yp = (float *)(uintptr_t)y;
    for (unsigned long long i = 0; i < n && i < threads; i++)
        yp[i] = a * xp[i] + yp[i];
    atomic_fetch_add(&saxpy_runs, 1);
    return CUDA_SUCCESS;
}

static inline cus_module *load_saxpy(cus_context *c, cus_function **fn)
{
    assert_ok(cus_fake_register_kernel("saxpy", saxpy_twin, NULL));
    atomic_store(&saxpy_runs, 0);
    cus_module *m = NULL;
    assert_ok(cus_module_load_data(c, cusk_saxpy.ptx, cusk_saxpy.ptx_size + 1, NULL, &m));
    assert_ok(cus_module_get_function(m, "saxpy", fn));
    return m;
}

static inline void fill_floats(cus_host_buffer *h, float base, float step)
{
    float *p = cus_host_buffer_data(h);
    for (int i = 0; i < G_N; i++)
        p[i] = base + step * (float)i;
}
#endif

static inline void count_up(void *p)
{
    atomic_fetch_add((atomic_int *)p, 1);
}

#endif
