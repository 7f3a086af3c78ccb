/* Scenarios of stream capture and graphs (include/cuscope/graph.h): public
 * API only, valid on the fake and on a real GPU. With kernels
 * (CUS_TEST_HAVE_KERNELS) the captured work includes a launch of
 * kernels/saxpy.cu, loaded from its embedded fatbin; on the fake it runs as
 * the host twin that the harness registers at every install
 * (harness/twins.c). Without kernels a device-to-device copy stands in.
 *
 * Host memory that captured copies use is page-locked and declared before
 * the stream and the graphs, so that an early return never leaves a queued
 * replay aimed at memory that is gone. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cuscope/event.h>
#include <cuscope/graph.h>
#include <cuscope/graph_inspect.h>
#include <cuscope/graph_memory.h>
#include <cuscope/graph_nodes.h>
#include <cuscope/memory.h>
#include <cuscope/stream.h>

#ifdef CUS_TEST_HAVE_KERNELS
#include <cuscope/function.h>
#include <cuscope/launch.h>
#include <cuscope/module.h>

#include "cusk-images.h"
#endif

#include "scenarios.h"

#define EXPECT(cond)                                                           \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "%s:%d: scenario check failed: %s\n", __FILE__, __LINE__, #cond); \
            return SCN_WRONG;                                                  \
        }                                                                      \
    } while (0)

/* An expected failure: any other error is returned as it is (an injected
 * fault, say), success where a failure was due is a wrong observation. */
#define EXPECT_FAILS_WITH(expr, want)                                          \
    do {                                                                       \
        cus_status got_ = (expr);                                              \
        if (got_ == CUS_SUCCESS) {                                             \
            fprintf(stderr, "%s:%d: %s succeeded, expected %s\n", __FILE__, __LINE__, #expr, \
                    cus_status_name(want));                                    \
            return SCN_WRONG;                                                  \
        }                                                                      \
        if (got_ != (cus_status)(want))                                        \
            return got_;                                                       \
    } while (0)

enum { N = 256 };

static cus_status primary0(cus_context **out)
{
    cus_device dev;
    CUS_TRY(cus_device_get(0, &dev));
    return cus_context_retain_primary(dev, out);
}

static void fill_floats(float *p, float base, float step)
{
    for (int i = 0; i < N; i++)
        p[i] = base + step * (float)i;
}

/* The kernel of the scenarios, or its stand-in. */
typedef struct work {
    cus_module *mod;    /* NULL without kernels */
    cus_function *saxpy;
} work;

static void work_release(work *w)
{
#ifdef CUS_TEST_HAVE_KERNELS
    w->saxpy = cus_function_unref(w->saxpy);
    w->mod = cus_module_unref(w->mod);
#else
    (void)w;
#endif
}

#define cus_work_scope __attribute__((cleanup(work_release))) work

static cus_status work_load(cus_context *ctx, work *w)
{
#ifdef CUS_TEST_HAVE_KERNELS
    CUS_TRY(cus_module_load_data(ctx, cusk_saxpy.fatbin, cusk_saxpy.fatbin_size, NULL, &w->mod));
    CUS_TRY(cus_module_get_function(w->mod, "saxpy", &w->saxpy));
#else
    (void)ctx;
    (void)w;
#endif
    return CUS_SUCCESS;
}

/* b = scale * a + b with the kernel; b = a without (scale is then 1). */
static cus_status work_queue(const work *w, float scale, cus_buffer *a, cus_buffer *b,
                             cus_stream *s)
{
#ifdef CUS_TEST_HAVE_KERNELS
    return cus_launch(w->saxpy, cus_grid_for(N, 128), 128, 0, s, scale, a, b,
                      (unsigned long long)N);
#else
    (void)w;
    (void)scale;
    return cus_copy_device_async(b, 0, a, 0, N * sizeof(float), s);
#endif
}

static float work_scale(float scale)
{
#ifdef CUS_TEST_HAVE_KERNELS
    return scale;
#else
    (void)scale;
    return 1.0f;
#endif
}

/* The cuscope objects a capture of work_capture keeps: a, b and the module. */
static size_t work_kept(void)
{
#ifdef CUS_TEST_HAVE_KERNELS
    return 3;
#else
    return 2;
#endif
}

static void count_up(void *p)
{
    atomic_fetch_add((atomic_int *)p, 1);
}

/* in -> a (H2D), b = 0 (memset), b = scale * a + b (kernel, or a copy),
 * b -> out (D2H); a host function when counter is not NULL. */
static cus_status work_capture(cus_stream *s, CUstreamCaptureMode mode, const work *w,
                               float scale, cus_buffer *a, cus_buffer *b, const float *in,
                               float *out, atomic_int *counter, cus_graph **graph)
{
    cus_capture_scope(cap, s, mode);
    CUS_TRY(cap.status);
    CUS_TRY(cus_copy_to_device_async(a, 0, in, N * sizeof(float), s));
    CUS_TRY(cus_buffer_fill_u32_async(b, 0, 0, N, s));
    CUS_TRY(work_queue(w, scale, a, b, s));
    CUS_TRY(cus_copy_to_host_async(out, b, 0, N * sizeof(float), s));
    if (counter)
        CUS_TRY(cus_stream_launch_host_fn(s, count_up, counter));
    return cus_capture_end(&cap, graph);
}

static bool result_is(const float *in, const float *out, float scale)
{
    for (int i = 0; i < N; i++)
        if (out[i] != work_scale(scale) * in[i])
            return false;
    return true;
}

/* H2D copy, memset, kernel (or copy), D2H copy and a host function,
 * captured once, uploaded, replayed three times with new input each time. */
static cus_status scn_graph_capture_replay(void *arg)
{
    (void)arg;
    static atomic_int counter;
    atomic_store(&counter, 0);
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(primary0(&ctx));
    cus_autoptr(cus_host_buffer) hin = NULL;
    cus_autoptr(cus_host_buffer) hout = NULL;
    CUS_TRY(cus_host_buffer_alloc(ctx, N * sizeof(float), 0, &hin));
    CUS_TRY(cus_host_buffer_alloc(ctx, N * sizeof(float), 0, &hout));
    float *in = cus_host_buffer_data(hin), *out = cus_host_buffer_data(hout);
    cus_autoptr(cus_buffer) a = NULL;
    cus_autoptr(cus_buffer) b = NULL;
    CUS_TRY(cus_buffer_alloc(ctx, N * sizeof(float), &a));
    CUS_TRY(cus_buffer_alloc(ctx, N * sizeof(float), &b));
    cus_work_scope w = {NULL, NULL};
    CUS_TRY(work_load(ctx, &w));
    cus_autoptr(cus_stream) s = NULL;
    CUS_TRY(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &s));

    cus_autoptr(cus_graph) g = NULL;
    CUS_TRY(work_capture(s, CU_STREAM_CAPTURE_MODE_GLOBAL, &w, 2.0f, a, b, in, out, &counter, &g));
    bool capturing = true;
    CUS_TRY(cus_stream_is_capturing(s, &capturing));
    EXPECT(!capturing);
    size_t nodes = 0;
    CUS_TRY(cus_graph_node_count(g, &nodes));
    EXPECT(nodes == 5);
    EXPECT(cus_graph_kept_objects(g) == work_kept() + 1); /* + the host function's record */
    EXPECT(cus_graph_context(g) == ctx);
    EXPECT(atomic_load(&counter) == 0); /* captured, not run */

    cus_autoptr(cus_graph_exec) e = NULL;
    CUS_TRY(cus_graph_instantiate(g, 0, &e));
    CUS_TRY(cus_graph_exec_upload(e, s));
    for (int r = 0; r < 3; r++) {
        fill_floats(in, (float)(r + 1), 0.25f);
        memset(out, 0xff, N * sizeof(float));
        CUS_TRY(cus_graph_exec_launch(e, s));
        CUS_TRY(cus_stream_synchronize(s));
        EXPECT(result_is(in, out, 2.0f));
        EXPECT(atomic_load(&counter) == r + 1);
    }
    EXPECT(cus_context_stack_depth() == 0);
    return CUS_SUCCESS;
}

/* The same work captured on the per-thread default stream, which the driver
 * captures like any blocking stream (an H200 does: test/probes), and
 * replayed on it. */
static cus_status scn_graph_capture_per_thread(void *arg)
{
    (void)arg;
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(primary0(&ctx));
    cus_autoptr(cus_host_buffer) hin = NULL;
    cus_autoptr(cus_host_buffer) hout = NULL;
    CUS_TRY(cus_host_buffer_alloc(ctx, N * sizeof(float), 0, &hin));
    CUS_TRY(cus_host_buffer_alloc(ctx, N * sizeof(float), 0, &hout));
    float *in = cus_host_buffer_data(hin), *out = cus_host_buffer_data(hout);
    cus_autoptr(cus_buffer) a = NULL;
    cus_autoptr(cus_buffer) b = NULL;
    CUS_TRY(cus_buffer_alloc(ctx, N * sizeof(float), &a));
    CUS_TRY(cus_buffer_alloc(ctx, N * sizeof(float), &b));
    cus_work_scope w = {NULL, NULL};
    CUS_TRY(work_load(ctx, &w));
    cus_autoptr(cus_stream) s = NULL;
    CUS_TRY(cus_stream_per_thread(ctx, &s));

    cus_autoptr(cus_graph) g = NULL;
    CUS_TRY(work_capture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, &w, 3.0f, a, b, in, out, NULL,
                         &g));
    size_t nodes = 0;
    CUS_TRY(cus_graph_node_count(g, &nodes));
    EXPECT(nodes == 4);
    cus_autoptr(cus_graph_exec) e = NULL;
    CUS_TRY(cus_graph_instantiate(g, 0, &e));
    fill_floats(in, 1.0f, 0.5f);
    memset(out, 0xff, N * sizeof(float));
    CUS_TRY(cus_graph_exec_launch(e, s));
    CUS_TRY(cus_stream_synchronize(s));
    EXPECT(result_is(in, out, 3.0f));
    EXPECT(cus_context_stack_depth() == 0);
    return CUS_SUCCESS;
}

/* A capture that a cuscope check refuses in the middle (a range past the
 * buffer's end, no driver call): the scope ends the capture. */
static cus_status capture_past_the_end(cus_stream *s, cus_buffer *a, const float *in,
                                       cus_graph **graph)
{
    cus_capture_scope(cap, s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    CUS_TRY(cap.status);
    CUS_TRY(cus_copy_to_device_async(a, 0, in, N * sizeof(float), s));
    CUS_TRY(cus_copy_to_device_async(a, sizeof(float), in, N * sizeof(float), s));
    return cus_capture_end(&cap, graph);
}

/* A capture that the driver refuses in the middle: a stream synchronize
 * cannot be captured, and invalidates the capture. */
static cus_status capture_a_synchronize(cus_stream *s, cus_buffer *a, const float *in,
                                        cus_graph **graph)
{
    cus_capture_scope(cap, s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    CUS_TRY(cap.status);
    CUS_TRY(cus_copy_to_device_async(a, 0, in, N * sizeof(float), s));
    CUS_TRY(cus_stream_synchronize(s));
    return cus_capture_end(&cap, graph);
}

/* Errors inside captures: each leaves the scope through CUS_TRY, the guard
 * ends the capture, no capture remains open, the error is the one that
 * happened, and the stream then works and captures again. */
static cus_status scn_graph_capture_error_path(void *arg)
{
    (void)arg;
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(primary0(&ctx));
    cus_autoptr(cus_host_buffer) hin = NULL;
    cus_autoptr(cus_host_buffer) hout = NULL;
    CUS_TRY(cus_host_buffer_alloc(ctx, N * sizeof(float), 0, &hin));
    CUS_TRY(cus_host_buffer_alloc(ctx, N * sizeof(float), 0, &hout));
    float *in = cus_host_buffer_data(hin), *out = cus_host_buffer_data(hout);
    fill_floats(in, 3.0f, 1.0f);
    cus_autoptr(cus_buffer) a = NULL;
    CUS_TRY(cus_buffer_alloc(ctx, N * sizeof(float), &a));
    cus_autoptr(cus_stream) s = NULL;
    CUS_TRY(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &s));

    cus_graph *g = NULL;
    EXPECT_FAILS_WITH(capture_past_the_end(s, a, in, &g), CUS_ERROR_OUT_OF_RANGE);
    EXPECT(g == NULL);
    EXPECT(cus_last_status() == CUS_ERROR_OUT_OF_RANGE);
    bool capturing = true;
    CUS_TRY(cus_stream_is_capturing(s, &capturing));
    EXPECT(!capturing);

    cus_status st = capture_a_synchronize(s, a, in, &g);
    if (st == CUS_SUCCESS)
        return SCN_WRONG;
    if (st != CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED && st != CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)
        return st;
    EXPECT(g == NULL);
    EXPECT(cus_last_status() == st);
    capturing = true;
    CUS_TRY(cus_stream_is_capturing(s, &capturing));
    EXPECT(!capturing);

    /* The stream works, and captures again. */
    CUS_TRY(cus_copy_to_device_async(a, 0, in, N * sizeof(float), s));
    CUS_TRY(cus_copy_to_host_async(out, a, 0, N * sizeof(float), s));
    CUS_TRY(cus_stream_synchronize(s));
    EXPECT(memcmp(in, out, N * sizeof(float)) == 0);
    cus_autoptr(cus_graph) good = NULL;
    {
        cus_capture_scope(cap, s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
        CUS_TRY(cap.status);
        CUS_TRY(cus_buffer_fill_u32_async(a, 0, 0, N, s));
        CUS_TRY(cus_copy_to_host_async(out, a, 0, N * sizeof(float), s));
        CUS_TRY(cus_capture_end(&cap, &good));
    }
    cus_autoptr(cus_graph_exec) e = NULL;
    CUS_TRY(cus_graph_instantiate(good, 0, &e));
    CUS_TRY(cus_graph_exec_launch(e, s));
    CUS_TRY(cus_stream_synchronize(s));
    for (int i = 0; i < N; i++)
        EXPECT(out[i] == 0.0f);
    EXPECT(cus_context_stack_depth() == 0);
    return CUS_SUCCESS;
}

/* Builds an exec and hands back only it: the stream, the buffers, the module
 * and the graph are the function's own and go at its return. */
static cus_status build_exec_alone(cus_context *ctx, const float *in, float *out,
                                   cus_graph_exec **exec)
{
    cus_autoptr(cus_buffer) a = NULL;
    cus_autoptr(cus_buffer) b = NULL;
    CUS_TRY(cus_buffer_alloc(ctx, N * sizeof(float), &a));
    CUS_TRY(cus_buffer_alloc(ctx, N * sizeof(float), &b));
    cus_work_scope w = {NULL, NULL};
    CUS_TRY(work_load(ctx, &w));
    cus_autoptr(cus_stream) s = NULL;
    CUS_TRY(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &s));
    cus_autoptr(cus_graph) g = NULL;
    CUS_TRY(work_capture(s, CU_STREAM_CAPTURE_MODE_RELAXED, &w, 3.0f, a, b, in, out, NULL, &g));
    EXPECT(cus_graph_kept_objects(g) == work_kept());
    cus_autoptr(cus_graph_exec) e = NULL;
    CUS_TRY(cus_graph_instantiate(g, 0, &e));
    *exec = cus_steal(&e);
    return CUS_SUCCESS;
}

/* The keep rule: with only the exec left, the replays still find their
 * buffers and module alive, on a stream made afterwards. */
static cus_status scn_graph_keep_alive(void *arg)
{
    (void)arg;
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(primary0(&ctx));
    cus_autoptr(cus_host_buffer) hin = NULL;
    cus_autoptr(cus_host_buffer) hout = NULL;
    CUS_TRY(cus_host_buffer_alloc(ctx, N * sizeof(float), 0, &hin));
    CUS_TRY(cus_host_buffer_alloc(ctx, N * sizeof(float), 0, &hout));
    float *in = cus_host_buffer_data(hin), *out = cus_host_buffer_data(hout);
    size_t before = cus_debug_live_objects();
    cus_autoptr(cus_graph_exec) e = NULL;
    CUS_TRY(build_exec_alone(ctx, in, out, &e));
    /* the exec, its graph, a, b, and the module */
    EXPECT(cus_debug_live_objects() == before + 2 + work_kept());
    cus_autoptr(cus_stream) s = NULL;
    CUS_TRY(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &s));
    for (int r = 0; r < 2; r++) {
        fill_floats(in, -1.0f * (float)r, 0.5f);
        memset(out, 0, N * sizeof(float));
        CUS_TRY(cus_graph_exec_launch(e, s));
        CUS_TRY(cus_stream_synchronize(s));
        EXPECT(result_is(in, out, 3.0f));
    }
    e = cus_graph_exec_unref(e);
    EXPECT(cus_debug_live_objects() == before + 1); /* the stream */
    return CUS_SUCCESS;
}

/* Update: a graph of the same topology (new scale, new output) takes over
 * the exec; one of another topology is refused with
 * CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, and the exec replays what it had. */
static cus_status scn_graph_update(void *arg)
{
    (void)arg;
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(primary0(&ctx));
    cus_autoptr(cus_host_buffer) hin = NULL;
    cus_autoptr(cus_host_buffer) hout1 = NULL;
    cus_autoptr(cus_host_buffer) hout2 = NULL;
    CUS_TRY(cus_host_buffer_alloc(ctx, N * sizeof(float), 0, &hin));
    CUS_TRY(cus_host_buffer_alloc(ctx, N * sizeof(float), 0, &hout1));
    CUS_TRY(cus_host_buffer_alloc(ctx, N * sizeof(float), 0, &hout2));
    float *in = cus_host_buffer_data(hin);
    float *out1 = cus_host_buffer_data(hout1), *out2 = cus_host_buffer_data(hout2);
    fill_floats(in, 1.0f, 1.0f);
    memset(out1, 0, N * sizeof(float));
    memset(out2, 0, N * sizeof(float));
    cus_autoptr(cus_buffer) a = NULL;
    cus_autoptr(cus_buffer) b = NULL;
    CUS_TRY(cus_buffer_alloc(ctx, N * sizeof(float), &a));
    CUS_TRY(cus_buffer_alloc(ctx, N * sizeof(float), &b));
    cus_work_scope w = {NULL, NULL};
    CUS_TRY(work_load(ctx, &w));
    cus_autoptr(cus_stream) s = NULL;
    CUS_TRY(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &s));

    cus_autoptr(cus_graph) g1 = NULL;
    cus_autoptr(cus_graph) g2 = NULL;
    cus_autoptr(cus_graph) other = NULL;
    CUS_TRY(work_capture(s, CU_STREAM_CAPTURE_MODE_GLOBAL, &w, 2.0f, a, b, in, out1, NULL, &g1));
    CUS_TRY(work_capture(s, CU_STREAM_CAPTURE_MODE_GLOBAL, &w, 4.0f, a, b, in, out2, NULL, &g2));
    {
        cus_capture_scope(cap, s, CU_STREAM_CAPTURE_MODE_GLOBAL);
        CUS_TRY(cap.status);
        CUS_TRY(cus_copy_to_device_async(a, 0, in, N * sizeof(float), s));
        CUS_TRY(cus_copy_to_host_async(out2, a, 0, N * sizeof(float), s));
        CUS_TRY(cus_capture_end(&cap, &other));
    }
    cus_autoptr(cus_graph_exec) e = NULL;
    CUS_TRY(cus_graph_instantiate(g1, 0, &e));
    CUS_TRY(cus_graph_exec_launch(e, s));
    CUS_TRY(cus_stream_synchronize(s));
    EXPECT(result_is(in, out1, 2.0f));

    CUgraphExecUpdateResult why = CU_GRAPH_EXEC_UPDATE_ERROR;
    CUS_TRY(cus_graph_exec_update(e, g2, &why));
    EXPECT(why == CU_GRAPH_EXEC_UPDATE_SUCCESS);
    g2 = cus_graph_unref(g2); /* the exec holds it now */
    memset(out1, 0, N * sizeof(float));
    CUS_TRY(cus_graph_exec_launch(e, s));
    CUS_TRY(cus_stream_synchronize(s));
    EXPECT(result_is(in, out2, 4.0f));
    for (int i = 0; i < N; i++)
        EXPECT(out1[i] == 0.0f);

    why = CU_GRAPH_EXEC_UPDATE_SUCCESS;
    EXPECT_FAILS_WITH(cus_graph_exec_update(e, other, &why), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
    EXPECT(why != CU_GRAPH_EXEC_UPDATE_SUCCESS);
    memset(out2, 0, N * sizeof(float));
    CUS_TRY(cus_graph_exec_launch(e, s));
    CUS_TRY(cus_stream_synchronize(s));
    EXPECT(result_is(in, out2, 4.0f)); /* still the second graph's work */
    return CUS_SUCCESS;
}

/* Work forked to a second stream through an event and joined back: one
 * graph, what the joined stream used kept with it. */
static cus_status scn_graph_fork_join(void *arg)
{
    (void)arg;
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(primary0(&ctx));
    cus_autoptr(cus_host_buffer) hin = NULL;
    cus_autoptr(cus_host_buffer) hout = NULL;
    CUS_TRY(cus_host_buffer_alloc(ctx, N * sizeof(float), 0, &hin));
    CUS_TRY(cus_host_buffer_alloc(ctx, N * sizeof(float), 0, &hout));
    float *in = cus_host_buffer_data(hin), *out = cus_host_buffer_data(hout);
    cus_autoptr(cus_stream) s1 = NULL;
    CUS_TRY(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &s1));
    cus_autoptr(cus_graph_exec) e = NULL;
    {
        cus_autoptr(cus_buffer) a = NULL;
        cus_autoptr(cus_buffer) b = NULL;
        CUS_TRY(cus_buffer_alloc(ctx, N * sizeof(float), &a));
        CUS_TRY(cus_buffer_alloc(ctx, N * sizeof(float), &b));
        cus_autoptr(cus_event) fork = NULL;
        cus_autoptr(cus_event) join = NULL;
        CUS_TRY(cus_event_create(ctx, CU_EVENT_DISABLE_TIMING, &fork));
        CUS_TRY(cus_event_create(ctx, CU_EVENT_DISABLE_TIMING, &join));
        cus_autoptr(cus_stream) s2 = NULL;
        CUS_TRY(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &s2));
        cus_autoptr(cus_graph) g = NULL;
        {
            cus_capture_scope(cap, s1, CU_STREAM_CAPTURE_MODE_GLOBAL);
            CUS_TRY(cap.status);
            CUS_TRY(cus_copy_to_device_async(a, 0, in, N * sizeof(float), s1));
            CUS_TRY(cus_event_record(fork, s1));
            CUS_TRY(cus_stream_wait_event(s2, fork));
            CUS_TRY(cus_copy_device_async(b, 0, a, 0, N * sizeof(float), s2));
            CUS_TRY(cus_event_record(join, s2));
            CUS_TRY(cus_stream_wait_event(s1, join));
            CUS_TRY(cus_copy_to_host_async(out, b, 0, N * sizeof(float), s1));
            CUS_TRY(cus_capture_end(&cap, &g));
        }
        EXPECT(cus_graph_kept_objects(g) == 4); /* a, b, fork, join */
        CUS_TRY(cus_graph_instantiate(g, 0, &e));
    }
    for (int r = 0; r < 2; r++) {
        fill_floats(in, 10.0f * (float)r, 2.0f);
        memset(out, 0, N * sizeof(float));
        CUS_TRY(cus_graph_exec_launch(e, s1));
        CUS_TRY(cus_stream_synchronize(s1));
        EXPECT(memcmp(in, out, N * sizeof(float)) == 0);
    }
    return CUS_SUCCESS;
}

/* On s: scratch (all of it) = value, dst = scratch's first N words, out =
 * dst. The same three nodes for every value. */
static cus_status capture_scratch(cus_stream *s, cus_buffer *scratch, cus_buffer *dst,
                                  uint32_t *out, uint32_t value, cus_graph **graph)
{
    cus_capture_scope(cap, s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    CUS_TRY(cap.status);
    CUS_TRY(cus_buffer_fill_u32_async(scratch, 0, value, cus_buffer_size(scratch) / 4, s));
    CUS_TRY(cus_copy_device_async(dst, 0, scratch, 0, N * sizeof(uint32_t), s));
    CUS_TRY(cus_copy_to_host_async(out, dst, 0, N * sizeof(uint32_t), s));
    return cus_capture_end(&cap, graph);
}

/* A new graph around a new 1 MiB scratch buffer takes over exec (or makes
 * it); the caller's references to both go at the return. */
static cus_status update_to_new_graph(cus_context *ctx, cus_stream *s, cus_buffer *dst,
                                      uint32_t *out, uint32_t value, cus_graph_exec **exec)
{
    cus_autoptr(cus_buffer) scratch = NULL;
    CUS_TRY(cus_buffer_alloc(ctx, 1u << 20, &scratch));
    cus_autoptr(cus_graph) g = NULL;
    CUS_TRY(capture_scratch(s, scratch, dst, out, value, &g));
    if (!*exec)
        return cus_graph_instantiate(g, 0, exec);
    CUgraphExecUpdateResult why = CU_GRAPH_EXEC_UPDATE_ERROR;
    CUS_TRY(cus_graph_exec_update(*exec, g, &why));
    EXPECT(why == CU_GRAPH_EXEC_UPDATE_SUCCESS);
    return CUS_SUCCESS;
}

static bool words_are(const uint32_t *out, uint32_t value)
{
    for (int i = 0; i < N; i++)
        if (out[i] != value)
            return false;
    return true;
}

/* Issue 16: update loops, each with a new graph around a new 1 MiB scratch
 * buffer, and between them in turn no launch, a launch and a synchronize,
 * a launch and none. The graphs an update replaced go once no replay can
 * use them (at once when the exec was not launched since; else when the
 * fence the update recorded completes), so the live objects stay flat:
 * the exec, its graph and scratch buffer, and a few graphs whose replays
 * may still run (a graph and its scratch each). The exec's release lets go
 * of the rest. */
static cus_status scn_graph_update_loop(void *arg)
{
    (void)arg;
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(primary0(&ctx));
    cus_autoptr(cus_host_buffer) hout = NULL;
    CUS_TRY(cus_host_buffer_alloc(ctx, N * sizeof(uint32_t), 0, &hout));
    uint32_t *out = cus_host_buffer_data(hout);
    cus_autoptr(cus_buffer) dst = NULL;
    CUS_TRY(cus_buffer_alloc(ctx, N * sizeof(uint32_t), &dst));
    cus_autoptr(cus_stream) s = NULL;
    CUS_TRY(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &s));
    size_t before = cus_debug_live_objects();
    cus_autoptr(cus_graph_exec) e = NULL;
    for (uint32_t i = 0; i < 12; i++) {
        CUS_TRY(update_to_new_graph(ctx, s, dst, out, 100 + i, &e));
        /* the exec, its graph and scratch, and at most 3 graphs whose
         * replays may still run: 2 at most when the device keeps up */
        EXPECT(cus_debug_live_objects() <= before + 3 + 2 * 3);
        if (i % 3 == 0)
            continue;
        memset(out, 0, N * sizeof(uint32_t));
        CUS_TRY(cus_graph_exec_launch(e, s));
        if (i % 3 == 1) {
            CUS_TRY(cus_stream_synchronize(s));
            EXPECT(words_are(out, 100 + i));
        }
    }
    CUS_TRY(cus_stream_synchronize(s));
    EXPECT(words_are(out, 100 + 11));
    e = cus_graph_exec_unref(e);
    EXPECT(cus_debug_live_objects() == before);
    EXPECT(cus_context_stack_depth() == 0);
    return CUS_SUCCESS;
}


/* --- graphs built by hand (graph_nodes.h) ------------------------------------------------------ */

/* work_capture's graph, built by hand into g: the same nodes and order
 * (but the fill, which only depends on nothing: it and the upload are roots);
 * *kernel receives the kernel node (the copy without kernels). */
static cus_status work_build(cus_graph *g, const work *w, float scale, cus_buffer *a,
                             cus_buffer *b, const float *in, float *out, atomic_int *counter,
                             cus_graph_node *kernel)
{
    cus_graph_node roots[2], down;
    CUS_TRY(cus_graph_add_copy_to_device(g, NULL, 0, &roots[0], a, 0, in, N * sizeof(float)));
    CUS_TRY(cus_graph_add_fill_u32(g, NULL, 0, &roots[1], b, 0, 0, N));
#ifdef CUS_TEST_HAVE_KERNELS
    CUS_TRY(cus_graph_add_kernel(g, roots, 2, kernel, w->saxpy, cus_grid_for(N, 128), 128, 0,
                                 scale, a, b, (unsigned long long)N));
#else
    (void)w;
    (void)scale;
    CUS_TRY(cus_graph_add_copy_device(g, roots, 2, kernel, b, 0, a, 0, N * sizeof(float)));
#endif
    CUS_TRY(cus_graph_add_copy_to_host(g, kernel, 1, &down, out, b, 0, N * sizeof(float)));
    if (counter)
        CUS_TRY(cus_graph_add_host_fn(g, &down, 1, NULL, count_up, counter));
    return CUS_SUCCESS;
}

/* A graph built by hand computes what the captured one does; everything it
 * uses is released before it is instantiated; a per-node update (the
 * kernel's scale) and a disabled node take effect at the next replay. */
static cus_status scn_graph_nodes_by_hand(void *arg)
{
    (void)arg;
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(primary0(&ctx));
    cus_autoptr(cus_host_buffer) hin = NULL;
    cus_autoptr(cus_host_buffer) hout = NULL;
    cus_autoptr(cus_host_buffer) hcap = NULL;
    CUS_TRY(cus_host_buffer_alloc(ctx, N * sizeof(float), 0, &hin));
    CUS_TRY(cus_host_buffer_alloc(ctx, N * sizeof(float), 0, &hout));
    CUS_TRY(cus_host_buffer_alloc(ctx, N * sizeof(float), 0, &hcap));
    float *in = cus_host_buffer_data(hin), *out = cus_host_buffer_data(hout);
    float *cap_out = cus_host_buffer_data(hcap);
    fill_floats(in, 1.0f, 0.25f);
    atomic_int runs = 0;
    cus_autoptr(cus_stream) s = NULL;
    CUS_TRY(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &s));
    cus_autoptr(cus_graph_exec) e = NULL;
    cus_autoptr(cus_graph_exec) ec = NULL;
    cus_graph_node kernel = {0};
    cus_autoptr(cus_graph) g = NULL;
    {
        cus_autoptr(cus_buffer) a = NULL;
        cus_autoptr(cus_buffer) b = NULL;
        CUS_TRY(cus_buffer_alloc(ctx, N * sizeof(float), &a));
        CUS_TRY(cus_buffer_alloc(ctx, N * sizeof(float), &b));
        cus_work_scope w = {NULL, NULL};
        CUS_TRY(work_load(ctx, &w));
        CUS_TRY(cus_graph_create(ctx, &g));
        CUS_TRY(work_build(g, &w, 2.0f, a, b, in, out, &runs, &kernel));
        EXPECT(cus_graph_kept_objects(g) == work_kept() + 1); /* and the host record */
        size_t n = 0;
        CUS_TRY(cus_graph_node_count(g, &n));
        EXPECT(n == 5);
        cus_autoptr(cus_graph) captured = NULL;
        CUS_TRY(work_capture(s, CU_STREAM_CAPTURE_MODE_GLOBAL, &w, 2.0f, a, b, in, cap_out, NULL,
                             &captured));
        CUS_TRY(cus_graph_instantiate(captured, 0, &ec));
    } /* the buffers and the module go: the graphs keep them */
    CUS_TRY(cus_graph_instantiate(g, 0, &e));
    CUS_TRY(cus_graph_exec_launch(e, s));
    CUS_TRY(cus_graph_exec_launch(ec, s));
    CUS_TRY(cus_stream_synchronize(s));
    EXPECT(atomic_load(&runs) == 1);
    EXPECT(result_is(in, out, 2.0f));
    EXPECT(memcmp(out, cap_out, N * sizeof(float)) == 0);
#ifdef CUS_TEST_HAVE_KERNELS
    {
        /* New buffers for the kernel node: they stay with the exec. */
        cus_autoptr(cus_buffer) a2 = NULL;
        cus_autoptr(cus_buffer) b2 = NULL;
        CUS_TRY(cus_buffer_alloc(ctx, N * sizeof(float), &a2));
        CUS_TRY(cus_buffer_alloc(ctx, N * sizeof(float), &b2));
        CUS_TRY(cus_copy_to_device(a2, 0, in, N * sizeof(float)));
        CUS_TRY(cus_buffer_fill_u32(b2, 0, 0, N));
        cus_work_scope w = {NULL, NULL};
        CUS_TRY(work_load(ctx, &w));
        CUS_TRY(cus_graph_exec_set_kernel(e, kernel, w.saxpy, cus_grid_for(N, 128), 128, 0, 4.0f,
                                          a2, b2, (unsigned long long)N));
        /* out is copied from the graph's b, which the kernel no longer writes:
         * the fill leaves it 0. */
    }
    CUS_TRY(cus_graph_exec_launch(e, s));
    CUS_TRY(cus_stream_synchronize(s));
    for (int i = 0; i < N; i++)
        EXPECT(out[i] == 0.0f);
#endif
    CUS_TRY(cus_graph_exec_set_node_enabled(e, kernel, false));
    memset(out, 0xff, N * sizeof(float));
    CUS_TRY(cus_graph_exec_launch(e, s));
    CUS_TRY(cus_stream_synchronize(s));
    for (int i = 0; i < N; i++)
        EXPECT(out[i] == 0.0f); /* the fill, and no kernel (or copy) after it */
    EXPECT(atomic_load(&runs) == 3);
    return CUS_SUCCESS;
}

/* --- a kernel node with a launch configuration (graph_nodes.h) --------------------------------- */

/* The kernel node of work_build with a priority, an L2 access-policy window
 * over a buffer no argument names, a memory sync domain and (compute
 * capability 9.0 and later) a cluster of two blocks: each attribute read
 * back as the driver holds it; every object released before the
 * instantiation (the graph keeps the window's buffer too); two replays
 * compute b = 2a. */
static cus_status scn_graph_kernel_node_attributes(void *arg)
{
    (void)arg;
#ifndef CUS_TEST_HAVE_KERNELS
    return scn_skip(__func__, "needs the kernels of kernels/ (nvcc at build time)");
#else
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(primary0(&ctx));
    int major = 0, minor = 0;
    CUS_TRY(cus_device_compute_capability(cus_context_device(ctx), &major, &minor));
    int least = 0, greatest = 0;
    CUS_TRY(cus_context_stream_priority_range(ctx, &least, &greatest));
    cus_autoptr(cus_host_buffer) hin = NULL;
    cus_autoptr(cus_host_buffer) hout = NULL;
    CUS_TRY(cus_host_buffer_alloc(ctx, N * sizeof(float), 0, &hin));
    CUS_TRY(cus_host_buffer_alloc(ctx, N * sizeof(float), 0, &hout));
    float *in = cus_host_buffer_data(hin), *out = cus_host_buffer_data(hout);
    fill_floats(in, 1.0f, 0.5f);
    cus_autoptr(cus_stream) s = NULL;
    CUS_TRY(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &s));
    cus_autoptr(cus_graph_exec) e = NULL;
    {
        cus_autoptr(cus_buffer) a = NULL;
        cus_autoptr(cus_buffer) b = NULL;
        cus_autoptr(cus_buffer) window = NULL;
        CUS_TRY(cus_buffer_alloc(ctx, N * sizeof(float), &a));
        CUS_TRY(cus_buffer_alloc(ctx, N * sizeof(float), &b));
        CUS_TRY(cus_buffer_alloc(ctx, 4096, &window));
        cus_work_scope w = {NULL, NULL};
        CUS_TRY(work_load(ctx, &w));
        cus_autoptr(cus_graph) g = NULL;
        CUS_TRY(cus_graph_create(ctx, &g));
        cus_graph_node roots[2], kernel, down;
        CUS_TRY(cus_graph_add_copy_to_device(g, NULL, 0, &roots[0], a, 0, in, N * sizeof(float)));
        CUS_TRY(cus_graph_add_fill_u32(g, NULL, 0, &roots[1], b, 0, 0, N));
        cus_launch_config cfg = {
            .grid = {cus_grid_for(N, 128), 1, 1}, .block = {128, 1, 1},
            .set_priority = true, .priority = greatest,
            .access_policy = {.buffer = window, .hit_ratio = 0.5f,
                              .hit_prop = CU_ACCESS_PROPERTY_PERSISTING,
                              .miss_prop = CU_ACCESS_PROPERTY_STREAMING},
            .set_mem_sync_domain = true, .mem_sync_domain = CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE,
        };
        if (major >= 9)
            cfg.cluster = CUS_DIM3(2, 1, 1);
        CUS_TRY(cus_graph_add_kernel_ex(g, roots, 2, &kernel, w.saxpy, &cfg, 2.0f, a, b,
                                        (unsigned long long)N));
        CUS_TRY(cus_graph_add_copy_to_host(g, &kernel, 1, &down, out, b, 0, N * sizeof(float)));
        EXPECT(cus_graph_kept_objects(g) == work_kept() + 1); /* and the window's buffer */
        CUlaunchAttributeValue v;
        CUS_TRY(cus_graph_kernel_node_attribute(kernel, CU_LAUNCH_ATTRIBUTE_PRIORITY, &v));
        EXPECT(v.priority == greatest);
        CUS_TRY(cus_graph_kernel_node_attribute(kernel, CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW,
                                                &v));
        EXPECT((uintptr_t)v.accessPolicyWindow.base_ptr == cus_buffer_ptr(window));
        EXPECT(v.accessPolicyWindow.num_bytes == 4096);
        EXPECT(v.accessPolicyWindow.hitProp == CU_ACCESS_PROPERTY_PERSISTING);
        CUS_TRY(cus_graph_kernel_node_attribute(kernel, CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN, &v));
        EXPECT(v.memSyncDomain == CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE);
        if (major >= 9) {
            CUS_TRY(cus_graph_kernel_node_attribute(kernel, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
                                                    &v));
            EXPECT(v.clusterDim.x == 2 && v.clusterDim.y == 1 && v.clusterDim.z == 1);
        }
        CUS_TRY(cus_graph_instantiate(g, 0, &e));
    } /* the buffers, the module and the graph go: the executable graph keeps them */
    for (int round = 0; round < 2; round++) {
        memset(out, 0xff, N * sizeof(float));
        CUS_TRY(cus_graph_exec_launch(e, s));
        CUS_TRY(cus_stream_synchronize(s));
        EXPECT(result_is(in, out, 2.0f));
    }
    return CUS_SUCCESS;
#endif
}

/* --- a graph of added and captured nodes (graph_capture.h) ------------------------------------ */

/* The upload and the fill added by hand, the kernel (or copy) captured after
 * them, the download added after the captured leaf as a 2D copy node (16
 * rows): the objects released before the instantiation, two replays with new
 * input. Passes doing nothing on a driver before 12.3. */
static cus_status scn_graph_capture_into_graph(void *arg)
{
    (void)arg;
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(primary0(&ctx));
    cus_autoptr(cus_host_buffer) hin = NULL;
    cus_autoptr(cus_host_buffer) hout = NULL;
    CUS_TRY(cus_host_buffer_alloc(ctx, N * sizeof(float), 0, &hin));
    CUS_TRY(cus_host_buffer_alloc(ctx, N * sizeof(float), 0, &hout));
    float *in = cus_host_buffer_data(hin), *out = cus_host_buffer_data(hout);
    cus_autoptr(cus_stream) s = NULL;
    CUS_TRY(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &s));
    cus_autoptr(cus_graph_exec) e = NULL;
    {
        cus_autoptr(cus_buffer) a = NULL;
        cus_autoptr(cus_buffer) b = NULL;
        CUS_TRY(cus_buffer_alloc(ctx, N * sizeof(float), &a));
        CUS_TRY(cus_buffer_alloc(ctx, N * sizeof(float), &b));
        cus_work_scope w = {NULL, NULL};
        CUS_TRY(work_load(ctx, &w));
        cus_autoptr(cus_graph) g = NULL;
        CUS_TRY(cus_graph_create(ctx, &g));
        cus_graph_node roots[2], leaves[4];
        size_t n = 4;
        CUS_TRY(cus_graph_add_copy_to_device(g, NULL, 0, &roots[0], a, 0, in, N * sizeof(float)));
        CUS_TRY(cus_graph_add_fill_u32(g, NULL, 0, &roots[1], b, 0, 0, N));
        {
            cus_capture_scope_to_graph(cap, s, g, roots, 2, CU_STREAM_CAPTURE_MODE_GLOBAL);
            if (cap.status == CUS_ERROR_NOT_SUPPORTED)
                return CUS_SUCCESS; /* a driver before 12.3 */
            CUS_TRY(cap.status);
            CUS_TRY(work_queue(&w, 2.0f, a, b, s));
            CUS_TRY(cus_capture_leaves(&cap, leaves, &n));
            cus_autoptr(cus_graph) same = NULL;
            CUS_TRY(cus_capture_end(&cap, &same));
            EXPECT(same == g);
        }
        EXPECT(n == 1);
        cus_copy_2d_desc down = {cus_copy_host(out, N / 16 * sizeof(float)),
                                 cus_copy_buffer(b, 0, 0), N / 16 * sizeof(float), 16};
        CUS_TRY(cus_graph_add_copy_2d(g, leaves, n, NULL, &down));
        size_t nodes = 0;
        CUS_TRY(cus_graph_node_count(g, &nodes));
        EXPECT(nodes == 4);
        EXPECT(cus_graph_kept_objects(g) == work_kept());
        CUS_TRY(cus_graph_instantiate(g, 0, &e));
    } /* the buffers, the module and the graph go: the exec keeps them */
    for (int r = 0; r < 2; r++) {
        fill_floats(in, (float)r, 0.5f);
        memset(out, 0xff, N * sizeof(float));
        CUS_TRY(cus_graph_exec_launch(e, s));
        CUS_TRY(cus_stream_synchronize(s));
        EXPECT(result_is(in, out, 2.0f));
    }
    return CUS_SUCCESS;
}

/* Graph memory nodes: a and b allocated by the graph, a <- in, b = 0, the
 * kernel (or its stand-in), b -> out, both freed; launched three times with
 * the result checked. The graph keeps its allocations' buffers; the
 * device's graph memory saw both allocations, and holds no more than it
 * reserved. (An allocation left to a launch is test_graph_memory.c's: under
 * persistent faults its free outside the graph could not be made.) */
static cus_status scn_graph_alloc_nodes(void *arg)
{
    (void)arg;
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(primary0(&ctx));
    cus_device dev = cus_context_device(ctx);
    cus_autoptr(cus_host_buffer) hin = NULL;
    cus_autoptr(cus_host_buffer) hout = NULL;
    CUS_TRY(cus_host_buffer_alloc(ctx, N * sizeof(float), 0, &hin));
    CUS_TRY(cus_host_buffer_alloc(ctx, N * sizeof(float), 0, &hout));
    float *in = cus_host_buffer_data(hin), *out = cus_host_buffer_data(hout);
    cus_autoptr(cus_stream) s = NULL;
    CUS_TRY(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &s));
    cus_autoptr(cus_graph_exec) e = NULL;
    CUdeviceptr addr = 0;
    {
        cus_work_scope w = {NULL, NULL};
        CUS_TRY(work_load(ctx, &w));
        cus_autoptr(cus_graph) g = NULL;
        CUS_TRY(cus_graph_create(ctx, &g));
        cus_autoptr(cus_buffer) a = NULL;
        cus_autoptr(cus_buffer) b = NULL;
        cus_graph_node allocs[2], roots[2], kernel, down;
        CUS_TRY(cus_graph_add_alloc(g, NULL, 0, &allocs[0], N * sizeof(float), &a));
        CUS_TRY(cus_graph_add_alloc(g, NULL, 0, &allocs[1], N * sizeof(float), &b));
        EXPECT(cus_buffer_get_kind(a) == CUS_BUFFER_GRAPH && cus_buffer_ptr(a) != 0);
        addr = cus_buffer_ptr(a);
        size_t bytes = 0;
        CUdeviceptr got = 0;
        CUS_TRY(cus_graph_alloc_node_params(allocs[0], &bytes, &got));
        EXPECT(bytes == N * sizeof(float) && got == addr);
        CUS_TRY(cus_graph_add_copy_to_device(g, &allocs[0], 1, &roots[0], a, 0, in,
                                             N * sizeof(float)));
        CUS_TRY(cus_graph_add_fill_u32(g, &allocs[1], 1, &roots[1], b, 0, 0, N));
#ifdef CUS_TEST_HAVE_KERNELS
        CUS_TRY(cus_graph_add_kernel(g, roots, 2, &kernel, w.saxpy, cus_grid_for(N, 128), 128, 0,
                                     2.0f, a, b, (unsigned long long)N));
#else
        CUS_TRY(cus_graph_add_copy_device(g, roots, 2, &kernel, b, 0, a, 0, N * sizeof(float)));
#endif
        CUS_TRY(cus_graph_add_copy_to_host(g, &kernel, 1, &down, out, b, 0, N * sizeof(float)));
        cus_graph_node freed;
        CUS_TRY(cus_graph_add_free(g, &down, 1, &freed, a));
        CUS_TRY(cus_graph_add_free(g, &down, 1, NULL, b));
        got = 0;
        CUS_TRY(cus_graph_free_node_ptr(freed, &got));
        EXPECT(got == addr);
        CUS_TRY(cus_graph_instantiate(g, 0, &e));
    } /* the graph, its buffers and the module go: the exec keeps them */
    for (int r = 0; r < 3; r++) {
        fill_floats(in, (float)r, 0.5f);
        memset(out, 0xff, N * sizeof(float));
        CUS_TRY(cus_graph_exec_launch(e, s));
        CUS_TRY(cus_stream_synchronize(s));
        EXPECT(result_is(in, out, 2.0f));
    }
    uint64_t used = 0, used_high = 0, reserved = 0, reserved_high = 0;
    CUS_TRY(cus_device_graph_mem_attribute(dev, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &used));
    CUS_TRY(cus_device_graph_mem_attribute(dev, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &used_high));
    CUS_TRY(cus_device_graph_mem_attribute(dev, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT,
                                           &reserved));
    CUS_TRY(cus_device_graph_mem_attribute(dev, CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH,
                                           &reserved_high));
    EXPECT(used_high >= 2 * N * sizeof(float));
    EXPECT(reserved_high >= used_high && reserved >= used && reserved_high >= reserved);
    e = cus_graph_exec_unref(e);
    CUS_TRY(cus_device_graph_mem_trim(dev));
    CUS_TRY(cus_device_graph_mem_attribute(dev, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT,
                                           &reserved));
    EXPECT(reserved <= reserved_high);
    CUS_TRY(cus_device_graph_mem_reset_high(dev));
    return CUS_SUCCESS;
}


/* A graph built by hand, looked into (a node's kind, its dependencies, the
 * edges), cloned, and its kernel changed before the instantiation (the copy
 * node that stands for it without nvcc stays): everything it uses is
 * released before either graph is instantiated; the original computes with
 * the new scale, the clone with the old. Skips on a driver before 12.3 (the
 * edge queries). */
static cus_status scn_graph_inspect_edit(void *arg)
{
    (void)arg;
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(primary0(&ctx));
    cus_autoptr(cus_host_buffer) hin = NULL;
    cus_autoptr(cus_host_buffer) hout = NULL;
    CUS_TRY(cus_host_buffer_alloc(ctx, N * sizeof(float), 0, &hin));
    CUS_TRY(cus_host_buffer_alloc(ctx, N * sizeof(float), 0, &hout));
    float *in = cus_host_buffer_data(hin), *out = cus_host_buffer_data(hout);
    fill_floats(in, 1.0f, 0.25f);
    atomic_int runs = 0;
    cus_autoptr(cus_stream) s = NULL;
    CUS_TRY(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &s));
    cus_autoptr(cus_graph) g = NULL;
    cus_autoptr(cus_graph) copy = NULL;
    float scale = 2.0f;
    {
        cus_autoptr(cus_buffer) a = NULL;
        cus_autoptr(cus_buffer) b = NULL;
        CUS_TRY(cus_buffer_alloc(ctx, N * sizeof(float), &a));
        CUS_TRY(cus_buffer_alloc(ctx, N * sizeof(float), &b));
        cus_work_scope w = {NULL, NULL};
        CUS_TRY(work_load(ctx, &w));
        CUS_TRY(cus_graph_create(ctx, &g));
        cus_graph_node kernel = {0};
        CUS_TRY(work_build(g, &w, scale, a, b, in, out, &runs, &kernel));
        CUgraphNodeType type;
        CUS_TRY(cus_graph_node_type(kernel, &type));
#ifdef CUS_TEST_HAVE_KERNELS
        EXPECT(type == CU_GRAPH_NODE_TYPE_KERNEL);
#else
        EXPECT(type == CU_GRAPH_NODE_TYPE_MEMCPY);
#endif
        size_t n = 0;
        cus_status st = cus_graph_node_dependencies(kernel, NULL, &n);
        if (st == CUS_ERROR_NOT_SUPPORTED)
            return scn_skip("graph_inspect_edit", "%s", cus_last_error_message());
        CUS_TRY(st);
        EXPECT(n == 2); /* the upload and the fill */
        cus_graph_node deps[2];
        CUS_TRY(cus_graph_node_dependencies(kernel, deps, &n));
        EXPECT(deps[0].graph == g && deps[1].graph == g);
        n = 0;
        CUS_TRY(cus_graph_edges(g, NULL, NULL, &n));
        EXPECT(n == 4); /* upload, fill -> kernel -> download -> host function */
        CUS_TRY(cus_graph_clone(g, &copy));
        cus_graph_node twin = {0};
        CUS_TRY(cus_graph_node_in_clone(copy, kernel, &twin));
        EXPECT(twin.graph == copy);
#ifdef CUS_TEST_HAVE_KERNELS
        scale = 3.0f;
        CUS_TRY(cus_graph_set_kernel(kernel, w.saxpy, cus_grid_for(N, 128), 128, 0, scale, a, b,
                                     (unsigned long long)N));
#endif
    } /* the buffers and the module go: the graphs keep them */
    cus_autoptr(cus_graph_exec) e = NULL;
    cus_autoptr(cus_graph_exec) ec = NULL;
    CUS_TRY(cus_graph_instantiate(g, 0, &e));
    CUS_TRY(cus_graph_instantiate(copy, 0, &ec));
    CUS_TRY(cus_graph_exec_launch(e, s));
    CUS_TRY(cus_stream_synchronize(s));
    EXPECT(result_is(in, out, scale));
    memset(out, 0, N * sizeof(float));
    CUS_TRY(cus_graph_exec_launch(ec, s));
    CUS_TRY(cus_stream_synchronize(s));
    EXPECT(result_is(in, out, 2.0f));
    EXPECT(atomic_load(&runs) == 2);
    return CUS_SUCCESS;
}

/* A child graph node changed through its own graph (cus_graph_child_graph):
 * the graph is upload -> child -> download, the child a fill of b with 0;
 * the kernel (or the copy) is added inside the child node afterwards, with
 * every object released before the instantiations. The executable graph made
 * before downloads zeros, the one made after scale * in, a clone made before
 * zeros too; the node is not destroyed while its graph is lent. */
static cus_status scn_graph_child_graph_edit(void *arg)
{
    (void)arg;
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(primary0(&ctx));
    cus_autoptr(cus_host_buffer) hin = NULL;
    cus_autoptr(cus_host_buffer) hout = NULL;
    CUS_TRY(cus_host_buffer_alloc(ctx, N * sizeof(float), 0, &hin));
    CUS_TRY(cus_host_buffer_alloc(ctx, N * sizeof(float), 0, &hout));
    float *in = cus_host_buffer_data(hin), *out = cus_host_buffer_data(hout);
    fill_floats(in, 1.0f, 0.25f);
    cus_autoptr(cus_stream) s = NULL;
    CUS_TRY(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &s));
    cus_autoptr(cus_graph) g = NULL;
    cus_autoptr(cus_graph) copy = NULL;
    cus_autoptr(cus_graph_exec) before = NULL;
    cus_autoptr(cus_graph_exec) after = NULL;
    cus_graph_node sub = {0};
    {
        cus_autoptr(cus_buffer) a = NULL;
        cus_autoptr(cus_buffer) b = NULL;
        CUS_TRY(cus_buffer_alloc(ctx, N * sizeof(float), &a));
        CUS_TRY(cus_buffer_alloc(ctx, N * sizeof(float), &b));
        cus_work_scope w = {NULL, NULL};
        CUS_TRY(work_load(ctx, &w));
        CUS_TRY(cus_graph_create(ctx, &g));
        cus_graph_node up, down;
        CUS_TRY(cus_graph_add_copy_to_device(g, NULL, 0, &up, a, 0, in, N * sizeof(float)));
        {
            cus_autoptr(cus_graph) child = NULL;
            CUS_TRY(cus_graph_create(ctx, &child));
            CUS_TRY(cus_graph_add_fill_u32(child, NULL, 0, NULL, b, 0, 0, N));
            CUS_TRY(cus_graph_add_child(g, &up, 1, &sub, child));
        }
        CUS_TRY(cus_graph_add_copy_to_host(g, &sub, 1, &down, out, b, 0, N * sizeof(float)));
        CUS_TRY(cus_graph_instantiate(g, 0, &before));
        CUS_TRY(cus_graph_clone(g, &copy));
        cus_autoptr(cus_graph) own = NULL;
        CUS_TRY(cus_graph_child_graph(sub, &own));
        cus_graph_node fill;
        size_t n = 1;
        CUS_TRY(cus_graph_root_nodes(own, &fill, &n));
        EXPECT(n == 1);
#ifdef CUS_TEST_HAVE_KERNELS
        CUS_TRY(cus_graph_add_kernel(own, &fill, 1, NULL, w.saxpy, cus_grid_for(N, 128), 128, 0,
                                     3.0f, a, b, (unsigned long long)N));
#else
        CUS_TRY(cus_graph_add_copy_device(own, &fill, 1, NULL, b, 0, a, 0, N * sizeof(float)));
#endif
        CUS_TRY(cus_graph_node_count(own, &n));
        EXPECT(n == 2);
        CUS_TRY(cus_graph_node_count(g, &n));
        EXPECT(n == 3);
        EXPECT_FAILS_WITH(cus_graph_destroy_node(sub), CUS_ERROR_NOT_SUPPORTED);
    } /* the buffers, the module and the lent graph go: g keeps what they name */
    CUS_TRY(cus_graph_instantiate(g, 0, &after));
    cus_autoptr(cus_graph_exec) cloned = NULL;
    CUS_TRY(cus_graph_instantiate(copy, 0, &cloned));
    CUS_TRY(cus_graph_exec_launch(after, s));
    CUS_TRY(cus_stream_synchronize(s));
    EXPECT(result_is(in, out, 3.0f));
    cus_graph_exec *olds[] = {before, cloned};
    for (int k = 0; k < 2; k++) {
        memset(out, 0xff, N * sizeof(float));
        CUS_TRY(cus_graph_exec_launch(olds[k], s));
        CUS_TRY(cus_stream_synchronize(s));
        for (int i = 0; i < N; i++)
            EXPECT(out[i] == 0.0f);
    }
    return CUS_SUCCESS;
}

const scenario graph_scenarios[] = {
    {"graph_capture_replay", scn_graph_capture_replay},
    {"graph_capture_per_thread", scn_graph_capture_per_thread},
    {"graph_capture_error_path", scn_graph_capture_error_path},
    {"graph_keep_alive", scn_graph_keep_alive},
    {"graph_update", scn_graph_update},
    {"graph_fork_join", scn_graph_fork_join},
    {"graph_update_loop", scn_graph_update_loop},
    {"graph_nodes_by_hand", scn_graph_nodes_by_hand},
    {"graph_kernel_node_attributes", scn_graph_kernel_node_attributes},
    {"graph_capture_into_graph", scn_graph_capture_into_graph},
    {"graph_alloc_nodes", scn_graph_alloc_nodes},
    {"graph_inspect_edit", scn_graph_inspect_edit},
    {"graph_child_graph_edit", scn_graph_child_graph_edit},
    {NULL, NULL},
};
