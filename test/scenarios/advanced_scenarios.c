/* Scenarios of the newer groups, one each, every result checked: a WHILE
 * conditional node whose body counts down a device counter (graph
 * conditionals), a programmatic dependent pair with priorities (launch
 * attributes through cus_launch_ex), two green contexts ordered by their
 * context-wide events, a tiled tensor map and its rebinding, and a JIT link
 * of PTX loaded and launched. Public API only; they run as unit tests on
 * the fake (kernels as their host twins, harness/twins.c), under the fault
 * sweep on the fake (sweep-advanceds), and on the real GPU
 * (gpu-scenarios), where one that the driver or the device cannot run
 * returns SCN_SKIP, saying why: conditional nodes before driver 12.3, green
 * contexts before 12.4 or on a device too small to split in two, PDL and
 * the link's compute_90 PTX below compute capability 9.0, tensor maps
 * before 12.0. Without nvcc the scenarios that need kernels of kernels/ (or
 * the link inputs of kernels/link) are left out.
 *
 * As in module_scenarios.c: host data go up and down with synchronous
 * copies, results are read after a synchronization, float data are exact.
 * No name contains "create" or "guards" (test_sweep.c reruns those on a
 * 12.0 driver, which has none of these features). */
#include <stdio.h>
#include <string.h>

#include <cuscope/cuscope.h>
#ifdef CUS_TEST_FAKE
#include <cuscope/fake.h>
#endif

#include "../harness/twins.h"
#include "scenarios.h"

#ifdef CUS_TEST_HAVE_KERNELS
#include "cusk-images.h"
#endif
#ifdef CUS_SCN_HAVE_LINK_KERNELS
#include "cusk-link.h"
#endif

#define EXPECT(cond)                                                           \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "%s:%d: scenario check failed: %s\n", __FILE__, __LINE__, #cond); \
            return SCN_WRONG;                                                  \
        }                                                                      \
    } while (0)

/* A call that must fail with `want`: any other failure is passed on (under
 * the sweep it is the injected one), a success is a wrong observation. */
#define EXPECT_STATUS(expr, want)                                              \
    do {                                                                       \
        cus_status got_ = (expr);                                              \
        if (got_ == CUS_SUCCESS) {                                             \
            fprintf(stderr, "%s:%d: scenario check failed: %s succeeded, expected %s\n", \
                    __FILE__, __LINE__, #expr, cus_status_name(want));         \
            return SCN_WRONG;                                                  \
        }                                                                      \
        if (got_ != (cus_status)(want))                                        \
            return got_;                                                       \
    } while (0)

static cus_status primary0(cus_context **out)
{
    cus_device dev;
    CUS_TRY(cus_device_get(0, &dev));
    return cus_context_retain_primary(dev, out);
}

#if defined(CUS_TEST_HAVE_KERNELS) || defined(CUS_SCN_HAVE_LINK_KERNELS)
/* The device's compute capability, major * 10 + minor, in *cc. */
static cus_status device_cc(cus_context *ctx, int *cc)
{
    int major = 0, minor = 0;
    CUS_TRY(cus_device_compute_capability(cus_context_device(ctx), &major, &minor));
    *cc = major * 10 + minor;
    return CUS_SUCCESS;
}
#endif

/* --- green contexts -------------------------------------------------------------------------- */

enum { GREEN_N = 512 };

/* The producer's work on s of g: y = 3 * x + y with saxpy (x = i, y = 1),
 * or, without kernels, y filled with a pattern; *want the values. */
static cus_status green_produce(cus_context *g, cus_stream *s, cus_buffer *y, float *want)
{
    float host[GREEN_N];
#ifdef CUS_TEST_HAVE_KERNELS
    cus_autoptr(cus_module) m = NULL;
    CUS_TRY(cus_module_load_data(g, cusk_saxpy.fatbin, cusk_saxpy.fatbin_size, NULL, &m));
    cus_autoptr(cus_function) saxpy = NULL;
    CUS_TRY(cus_module_get_function(m, "saxpy", &saxpy));
    cus_autoptr(cus_buffer) x = NULL;
    CUS_TRY(cus_buffer_alloc_n(g, float, GREEN_N, &x));
    for (int i = 0; i < GREEN_N; i++)
        host[i] = (float)i;
    CUS_TRY(cus_copy_to_device(x, 0, host, sizeof host));
    for (int i = 0; i < GREEN_N; i++)
        host[i] = 1.0f;
    CUS_TRY(cus_copy_to_device(y, 0, host, sizeof host));
    /* The copies are synchronous, but s does not wait for the legacy stream
     * (a green context's streams are non-blocking): let them land first. */
    CUS_TRY(cus_context_synchronize(g));
    CUS_TRY(cus_launch(saxpy, cus_grid_for(GREEN_N, 128), 128, 0, s, 3.0f, x, y,
                       (unsigned long long)GREEN_N));
    for (int i = 0; i < GREEN_N; i++)
        want[i] = 3.0f * (float)i + 1.0f;
#else
    (void)g;
    (void)host;
    CUS_TRY(cus_buffer_fill_u32_async(y, 0, 0x40400000u, GREEN_N, s)); /* 3.0f */
    for (int i = 0; i < GREEN_N; i++)
        want[i] = 3.0f;
#endif
    return CUS_SUCCESS;
}

/* Two green contexts of one split: the producer's work on its stream, a
 * record of all of the producer's work in an event of the consumer (the
 * same primary context), the consumer waiting for it, then a stream of the
 * consumer made after the wait copying the producer's result over (a peer
 * copy between the two contexts), which must see all of it. On the fake the
 * copy would run first without the wait: nothing else orders the two. */
static cus_status scn_green_split_record_wait(void *arg)
{
    (void)arg;
    cus_device dev;
    CUS_TRY(cus_device_get(0, &dev));
    CUdevResource res;
    cus_status st = cus_device_sm_resource(dev, &res);
    if (st == CUS_ERROR_NOT_SUPPORTED)
        return scn_skip(__func__, "%s", cus_last_error_message());
    CUS_TRY(st);
    unsigned int total = cus_sm_resource_count(&res), min = res.sm.minSmPartitionSize;
    EXPECT(total > 0 && min > 0);
    if (total < 2 * min)
        return scn_skip(__func__, "%u SMs cannot make two groups of at least %u", total, min);
    CUdevResource groups[2], rest;
    unsigned int n = 2;
    CUS_TRY(cus_sm_resource_split(&res, min, 0, groups, &n, &rest));
    EXPECT(n == 2);
    EXPECT(groups[0].sm.smCount >= min && groups[0].sm.smCount == groups[1].sm.smCount);
    EXPECT(groups[0].sm.smCount + groups[1].sm.smCount + rest.sm.smCount == total);

    cus_autoptr(cus_context) producer = NULL;
    cus_autoptr(cus_context) consumer = NULL;
    CUS_TRY(cus_context_create_green(dev, &groups[0], 1, 0, &producer));
    CUS_TRY(cus_context_create_green(dev, &groups[1], 1, 0, &consumer));
    EXPECT(cus_context_get_kind(producer) == CUS_CONTEXT_GREEN);
    unsigned int sms = 0;
    CUS_TRY(cus_context_sm_count(producer, &sms));
    EXPECT(sms == groups[0].sm.smCount);

    cus_autoptr(cus_stream) ps = NULL;
    CUS_TRY(cus_stream_create(producer, CU_STREAM_NON_BLOCKING, 0, &ps));
    cus_autoptr(cus_buffer) y = NULL;
    CUS_TRY(cus_buffer_alloc_n(producer, float, GREEN_N, &y));
    float want[GREEN_N];
    CUS_TRY(green_produce(producer, ps, y, want));
    cus_autoptr(cus_event) done = NULL;
    CUS_TRY(cus_event_create(consumer, CU_EVENT_DISABLE_TIMING, &done));
    CUS_TRY(cus_context_record_event(producer, done));
    CUS_TRY(cus_context_wait_event(consumer, done));

    cus_autoptr(cus_stream) cs = NULL;
    CUS_TRY(cus_stream_create(consumer, CU_STREAM_NON_BLOCKING, 0, &cs));
    cus_autoptr(cus_buffer) copy = NULL;
    CUS_TRY(cus_buffer_alloc_n(consumer, float, GREEN_N, &copy));
    CUS_TRY(cus_copy_device_async(copy, 0, y, 0, GREEN_N * sizeof(float), cs));
    CUS_TRY(cus_stream_synchronize(cs));
    float got[GREEN_N];
    CUS_TRY(cus_copy_to_host(got, copy, 0, sizeof got));
    for (int i = 0; i < GREEN_N; i++)
        EXPECT(got[i] == want[i]);
    /* The record holds all of the producer's work: done is complete. */
    CUS_TRY(cus_event_synchronize(done));
    bool complete = false;
    CUS_TRY(cus_event_query(done, &complete));
    EXPECT(complete);
    return CUS_SUCCESS;
}

/* --- tensor maps ----------------------------------------------------------------------------- */

/* A 64 x 16 float matrix (rows of 256 bytes) in a buffer with room for a
 * second at an offset: a tiled map of 16 x 4 boxes, its parameters, a
 * rebinding to another buffer and offset (the original unchanged), a
 * rebinding back that encodes the very same descriptor, and the buffers
 * kept by the maps alone. On the fake the descriptor is decoded too. */
static cus_status scn_tensor_map_tiled_rebind(void *arg)
{
    (void)arg;
    enum { W = 64, H = 16, ROW = W * 4 };
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(primary0(&ctx));
    cus_autoptr(cus_buffer) a = NULL;
    cus_autoptr(cus_buffer) b = NULL;
    CUS_TRY(cus_buffer_alloc(ctx, ROW * H, &a));
    CUS_TRY(cus_buffer_alloc(ctx, ROW * H + 256, &b));
    cus_tensor_map_params p = {
        .data_type = CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
        .rank = 2,
        .global_dim = {W, H},
        .global_strides = {ROW},
        .box_dim = {16, 4},
        .element_strides = {1, 1},
    };
    cus_autoptr(cus_tensor_map) map = NULL;
    cus_status st = cus_tensor_map_create_tiled(a, &p, &map);
    if (st == CUS_ERROR_NOT_SUPPORTED)
        return scn_skip(__func__, "%s", cus_last_error_message());
    CUS_TRY(st);
    const cus_tensor_map_params *got = cus_tensor_map_params_of(map);
    EXPECT(got && got->rank == 2 && got->global_dim[0] == W && got->global_dim[1] == H);
    EXPECT(got->global_strides[0] == ROW && got->box_dim[0] == 16 && got->box_dim[1] == 4);
    EXPECT(got->offset == 0 && cus_tensor_map_buffer(map) == a);
    CUtensorMap original = *cus_tensor_map_get(map);

    /* Out of the buffer, misaligned: refused before the driver. */
    cus_tensor_map *bad = NULL;
    EXPECT_STATUS(cus_tensor_map_rebind(map, a, 256, &bad), CUS_ERROR_INVALID_ARGUMENT);
    EXPECT_STATUS(cus_tensor_map_rebind(map, b, 4, &bad), CUS_ERROR_INVALID_ARGUMENT);
    EXPECT(bad == NULL);

    cus_autoptr(cus_tensor_map) moved = NULL;
    CUS_TRY(cus_tensor_map_rebind(map, b, 256, &moved));
    EXPECT(cus_tensor_map_buffer(moved) == b && cus_tensor_map_params_of(moved)->offset == 256);
    EXPECT(cus_tensor_map_params_of(moved)->global_dim[0] == W);
    EXPECT(cus_tensor_map_buffer(map) == a && cus_tensor_map_params_of(map)->offset == 0);
    EXPECT(memcmp(cus_tensor_map_get(map), &original, sizeof original) == 0);
    EXPECT(memcmp(cus_tensor_map_get(moved), &original, sizeof original) != 0);
#ifdef CUS_TEST_FAKE
    cus_fake_tensor_map d;
    EXPECT(cus_fake_tensor_map_decode(cus_tensor_map_get(moved), &d));
    EXPECT(!d.im2col && d.rank == 2 && d.address == cus_buffer_ptr(b) + 256);
    EXPECT(d.global_dim[0] == W && d.global_strides[0] == ROW && d.box_dim[1] == 4);
#endif
    cus_autoptr(cus_tensor_map) back = NULL;
    CUS_TRY(cus_tensor_map_rebind(moved, a, 0, &back));
    EXPECT(memcmp(cus_tensor_map_get(back), &original, sizeof original) == 0);

    /* The maps keep their buffers. */
    a = cus_buffer_unref(a);
    b = cus_buffer_unref(b);
    EXPECT(cus_buffer_size(cus_tensor_map_buffer(map)) == ROW * H);
    EXPECT(cus_buffer_size(cus_tensor_map_buffer(moved)) == ROW * H + 256);
    float probe[4] = {1, 2, 3, 4}, read[4] = {0};
    CUS_TRY(cus_copy_to_device(cus_tensor_map_buffer(back), ROW, probe, sizeof probe));
    CUS_TRY(cus_copy_to_host(read, cus_tensor_map_buffer(map), ROW, sizeof read));
    EXPECT(memcmp(probe, read, sizeof probe) == 0);
    return CUS_SUCCESS;
}

#ifdef CUS_TEST_HAVE_KERNELS
/* --- conditional nodes ----------------------------------------------------------------------- */

/* A graph that sets a counter to COUNT, then runs a WHILE node whose body
 * is countdown (the counter down by one, the condition set to whether it is
 * still positive) followed by saxpy adding 1 to every element of acc: after
 * a launch the counter is 0 and acc holds exactly how many times the body
 * ran, COUNT. Launched twice (the default applied anew each time). */
static cus_status scn_conditional_while_countdown(void *arg)
{
    (void)arg;
    enum { COUNT = 5, M = 300 };
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(primary0(&ctx));
    int cc = 0;
    CUS_TRY(device_cc(ctx, &cc));
    if (cc < 80) /* countdown.cu's cudaGraphSetConditional */
        return scn_skip(__func__, "compute capability %d.%d is below 8.0", cc / 10, cc % 10);
    cus_autoptr(cus_graph) g = NULL;
    CUS_TRY(cus_graph_create(ctx, &g));
    CUgraphConditionalHandle h = 0;
    cus_status st = cus_graph_conditional_create(g, 1, true, &h);
    if (st == CUS_ERROR_NOT_SUPPORTED)
        return scn_skip(__func__, "%s", cus_last_error_message());
    CUS_TRY(st);

    cus_autoptr(cus_module) cm = NULL;
    cus_autoptr(cus_module) sm = NULL;
    CUS_TRY(cus_module_load_data(ctx, cusk_countdown.fatbin, cusk_countdown.fatbin_size, NULL,
                                 &cm));
    CUS_TRY(cus_module_load_data(ctx, cusk_saxpy.fatbin, cusk_saxpy.fatbin_size, NULL, &sm));
    cus_autoptr(cus_function) countdown = NULL;
    cus_autoptr(cus_function) saxpy = NULL;
    CUS_TRY(cus_module_get_function(cm, "countdown", &countdown));
    CUS_TRY(cus_module_get_function(sm, "saxpy", &saxpy));
    cus_autoptr(cus_buffer) counter = NULL;
    cus_autoptr(cus_buffer) ones = NULL;
    cus_autoptr(cus_buffer) acc = NULL;
    CUS_TRY(cus_buffer_alloc(ctx, sizeof(unsigned int), &counter));
    CUS_TRY(cus_buffer_alloc_n(ctx, float, M, &ones));
    CUS_TRY(cus_buffer_alloc_n(ctx, float, M, &acc));
    CUS_TRY(cus_buffer_fill_u32(ones, 0, 0x3f800000u, M)); /* 1.0f */

    cus_graph_node start[2], cond, step;
    CUS_TRY(cus_graph_add_fill_u32(g, NULL, 0, &start[0], counter, 0, COUNT, 1));
    CUS_TRY(cus_graph_add_fill_u32(g, NULL, 0, &start[1], acc, 0, 0, M));
    cus_autoptr(cus_graph) body = NULL;
    CUS_TRY(cus_graph_add_conditional(g, start, 2, &cond, h, CU_GRAPH_COND_TYPE_WHILE, 1, &body));
    CUS_TRY(cus_graph_add_kernel(body, NULL, 0, &step, countdown, 1, 32, 0, counter, h));
    CUS_TRY(cus_graph_add_kernel(body, &step, 1, NULL, saxpy, cus_grid_for(M, 128), 128, 0, 1.0f,
                                 ones, acc, (unsigned long long)M));
    size_t nodes = 0;
    CUS_TRY(cus_graph_node_count(body, &nodes));
    EXPECT(nodes == 2);

    cus_autoptr(cus_graph_exec) exec = NULL;
    CUS_TRY(cus_graph_instantiate(g, 0, &exec));
    cus_autoptr(cus_stream) s = NULL;
    CUS_TRY(cus_stream_create(ctx, 0, 0, &s));
    for (int launch = 0; launch < 2; launch++) {
        CUS_TRY(cus_graph_exec_launch(exec, s));
        CUS_TRY(cus_stream_synchronize(s));
        unsigned int left = 99;
        float got[M];
        CUS_TRY(cus_copy_to_host(&left, counter, 0, sizeof left));
        CUS_TRY(cus_copy_to_host(got, acc, 0, sizeof got));
        EXPECT(left == 0);
        for (int i = 0; i < M; i++)
            EXPECT(got[i] == (float)COUNT);
    }
    return CUS_SUCCESS;
}

/* --- launch attributes ----------------------------------------------------------------------- */

/* pdl.cu's pair on one stream: pdl_primary (out = 2 * in) at the greatest
 * priority, then pdl_secondary (out2 = out + 1) at the least, launched with
 * programmatic stream serialization, so that it may start before the
 * primary ends and waits for it on the device. Three rounds with new
 * inputs: a secondary that read too early would see the last round's. Then
 * the primary with a programmatic event, and the pair captured into a graph
 * that alone keeps what it uses. */
static cus_status scn_launch_priority_pdl(void *arg)
{
    (void)arg;
    enum { N = 2048 };
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(primary0(&ctx));
    int cc = 0;
    CUS_TRY(device_cc(ctx, &cc));
    if (cc < 90)
        return scn_skip(__func__, "programmatic dependent launch needs compute capability 9.0, "
                                  "the device has %d.%d",
                        cc / 10, cc % 10);
    cus_autoptr(cus_module) m = NULL;
    CUS_TRY(cus_module_load_data(ctx, cusk_pdl.fatbin, cusk_pdl.fatbin_size, NULL, &m));
    cus_autoptr(cus_function) primary = NULL;
    cus_autoptr(cus_function) secondary = NULL;
    CUS_TRY(cus_module_get_function(m, "pdl_primary", &primary));
    CUS_TRY(cus_module_get_function(m, "pdl_secondary", &secondary));
    int least = 0, greatest = 0;
    CUS_TRY(cus_context_stream_priority_range(ctx, &least, &greatest));
    EXPECT(greatest <= least);
    cus_autoptr(cus_stream) s = NULL;
    CUS_TRY(cus_stream_create(ctx, 0, greatest, &s));
    int prio = 1;
    CUS_TRY(cus_stream_priority(s, &prio));
    EXPECT(prio == greatest);
    cus_autoptr(cus_buffer) in = NULL;
    cus_autoptr(cus_buffer) out = NULL;
    cus_autoptr(cus_buffer) out2 = NULL;
    CUS_TRY(cus_buffer_alloc_n(ctx, float, N, &in));
    CUS_TRY(cus_buffer_alloc_n(ctx, float, N, &out));
    CUS_TRY(cus_buffer_alloc_n(ctx, float, N, &out2));
    unsigned int grid = cus_grid_for(N, 256);
    cus_launch_config first = {.grid = {grid, 1, 1}, .block = {256, 1, 1}, .stream = s,
                               .set_priority = true, .priority = greatest};
    cus_launch_config second = first;
    second.programmatic_serialization = true;
    second.priority = least;
    float host[N];
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < N; i++)
            host[i] = (float)(i % 100 + round * 1000);
        CUS_TRY(cus_copy_to_device(in, 0, host, sizeof host));
        CUS_TRY(cus_launch_ex(primary, &first, in, out, (unsigned long long)N));
        CUS_TRY(cus_launch_ex(secondary, &second, out, out2, (unsigned long long)N));
        CUS_TRY(cus_stream_synchronize(s));
        float got[N];
        CUS_TRY(cus_copy_to_host(got, out2, 0, sizeof got));
        for (int i = 0; i < N; i++)
            EXPECT(got[i] == 2.0f * host[i] + 1.0f);
    }
    /* The primary with a programmatic event, which fires once its blocks
     * have triggered: the host waits for it, then for the pair. */
    cus_autoptr(cus_event) fired = NULL;
    CUS_TRY(cus_event_create(ctx, CU_EVENT_DISABLE_TIMING, &fired));
    cus_launch_config signalled = first;
    signalled.programmatic_event = fired;
    CUS_TRY(cus_launch_ex(primary, &signalled, in, out, (unsigned long long)N));
    CUS_TRY(cus_launch_ex(secondary, &second, out, out2, (unsigned long long)N));
    CUS_TRY(cus_event_synchronize(fired));
    CUS_TRY(cus_stream_synchronize(s));
    float got[N];
    CUS_TRY(cus_copy_to_host(got, out2, 0, sizeof got));
    for (int i = 0; i < N; i++)
        EXPECT(got[i] == 2.0f * host[i] + 1.0f);

    /* A priority outside the range is refused before the driver. */
    cus_launch_config wrong = first;
    wrong.priority = least + 1;
    EXPECT_STATUS(cus_launch_ex(primary, &wrong, in, out, (unsigned long long)N),
                  CUS_ERROR_INVALID_ARGUMENT);

    /* The pair captured (a programmatic edge in the graph) and replayed on
     * new input, with every reference but the executable graph's dropped:
     * the graph keeps the module and the buffers its nodes use. */
    cus_autoptr(cus_graph_exec) exec = NULL;
    {
        cus_autoptr(cus_graph) graph = NULL;
        cus_capture_scope(cap, s, CU_STREAM_CAPTURE_MODE_RELAXED);
        CUS_TRY(cap.status);
        CUS_TRY(cus_launch_ex(primary, &first, in, out, (unsigned long long)N));
        CUS_TRY(cus_launch_ex(secondary, &second, out, out2, (unsigned long long)N));
        CUS_TRY(cus_capture_end(&cap, &graph));
        CUS_TRY(cus_graph_instantiate(graph, 0, &exec));
    }
    for (int i = 0; i < N; i++)
        host[i] = (float)(i % 7);
    CUS_TRY(cus_copy_to_device(in, 0, host, sizeof host));
    cus_buffer *keep_in = cus_buffer_ref(in), *keep_out2 = cus_buffer_ref(out2);
    primary = cus_function_unref(primary);
    m = cus_module_unref(m);
    in = cus_buffer_unref(in);
    out = cus_buffer_unref(out);
    out2 = cus_buffer_unref(out2);
    cus_status st = cus_graph_exec_launch(exec, s);
    if (st == CUS_SUCCESS)
        st = cus_stream_synchronize(s);
    if (st == CUS_SUCCESS)
        st = cus_copy_to_host(got, keep_out2, 0, sizeof got);
    cus_buffer_unref(keep_in);
    cus_buffer_unref(keep_out2);
    CUS_TRY(st);
    for (int i = 0; i < N; i++)
        EXPECT(got[i] == 2.0f * host[i] + 1.0f);

    return CUS_SUCCESS;
}

/* pdl.cu's pair as a graph built by hand: copy in, pdl_primary, a
 * programmatic edge (cus_graph_add_edges), pdl_secondary, copy out. The
 * edge's kind read back; the graph released before its replays, which
 * compute out2 = 2 * in + 1 on new input each round. */
static cus_status scn_graph_programmatic_edge(void *arg)
{
    (void)arg;
    enum { N = 4096 };
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(primary0(&ctx));
    int cc = 0;
    CUS_TRY(device_cc(ctx, &cc));
    if (cc < 90)
        return scn_skip(__func__, "programmatic dependent launch needs compute capability 9.0, "
                                  "the device has %d.%d",
                        cc / 10, cc % 10);
    cus_autoptr(cus_host_buffer) hin = NULL;
    cus_autoptr(cus_host_buffer) hout = NULL;
    CUS_TRY(cus_host_buffer_alloc(ctx, N * sizeof(float), 0, &hin));
    CUS_TRY(cus_host_buffer_alloc(ctx, N * sizeof(float), 0, &hout));
    float *host = cus_host_buffer_data(hin), *got = cus_host_buffer_data(hout);
    cus_autoptr(cus_stream) s = NULL;
    CUS_TRY(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &s));
    cus_autoptr(cus_graph_exec) exec = NULL;
    {
        cus_autoptr(cus_module) m = NULL;
        CUS_TRY(cus_module_load_data(ctx, cusk_pdl.fatbin, cusk_pdl.fatbin_size, NULL, &m));
        cus_autoptr(cus_function) primary = NULL;
        cus_autoptr(cus_function) secondary = NULL;
        CUS_TRY(cus_module_get_function(m, "pdl_primary", &primary));
        CUS_TRY(cus_module_get_function(m, "pdl_secondary", &secondary));
        cus_autoptr(cus_buffer) in = NULL;
        cus_autoptr(cus_buffer) out = NULL;
        cus_autoptr(cus_buffer) out2 = NULL;
        CUS_TRY(cus_buffer_alloc_n(ctx, float, N, &in));
        CUS_TRY(cus_buffer_alloc_n(ctx, float, N, &out));
        CUS_TRY(cus_buffer_alloc_n(ctx, float, N, &out2));
        cus_autoptr(cus_graph) g = NULL;
        CUS_TRY(cus_graph_create(ctx, &g));
        cus_graph_node up, first, second, down;
        CUS_TRY(cus_graph_add_copy_to_device(g, NULL, 0, &up, in, 0, host, N * sizeof(float)));
        unsigned int grid = cus_grid_for(N, 256);
        CUS_TRY(cus_graph_add_kernel(g, &up, 1, &first, primary, grid, 256, 0, in, out,
                                     (unsigned long long)N));
        CUS_TRY(cus_graph_add_kernel(g, NULL, 0, &second, secondary, grid, 256, 0, out, out2,
                                     (unsigned long long)N));
        const cus_edge_kind prog = CUS_EDGE_PROGRAMMATIC;
        CUS_TRY(cus_graph_add_edges(g, &first, &second, &prog, 1));
        CUS_TRY(cus_graph_add_copy_to_host(g, &second, 1, &down, got, out2, 0,
                                           N * sizeof(float)));
        cus_graph_node dep;
        cus_edge_kind kind = CUS_EDGE_DEFAULT;
        size_t n = 1;
        CUS_TRY(cus_graph_node_dependencies_with_kinds(second, &dep, &kind, &n));
        EXPECT(n == 1 && dep.handle == first.handle && kind == CUS_EDGE_PROGRAMMATIC);
        n = 1;
        EXPECT_STATUS(cus_graph_node_dependencies(second, &dep, &n), CUDA_ERROR_LOSSY_QUERY);
        CUS_TRY(cus_graph_instantiate(g, 0, &exec));
    } /* the module, buffers and graph go: the executable graph keeps them */
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < N; i++)
            host[i] = (float)(i % 100 + round * 1000);
        memset(got, 0, N * sizeof(float));
        CUS_TRY(cus_graph_exec_launch(exec, s));
        CUS_TRY(cus_stream_synchronize(s));
        for (int i = 0; i < N; i++)
            EXPECT(got[i] == 2.0f * host[i] + 1.0f);
    }
    return CUS_SUCCESS;
}
#endif /* CUS_TEST_HAVE_KERNELS */

#ifdef CUS_SCN_HAVE_LINK_KERNELS
/* --- JIT linking ----------------------------------------------------------------------------- */

/* kernels/link's two relocatable PTX files linked by the driver's linker
 * (cuLink*: every step a driver call, so the sweep reaches them all): the
 * kernel calls a function of the other file, which only the link resolves.
 * The image loaded as a module and launched, the result checked. */
static cus_status scn_link_ptx_module_launch(void *arg)
{
    (void)arg;
    enum { N = 100 };
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(primary0(&ctx));
    int cc = 0;
    CUS_TRY(device_cc(ctx, &cc));
    if (cc < 90)
        return scn_skip(__func__, "the link inputs are compute_90 PTX; the device is %d.%d",
                        cc / 10, cc % 10);
    cus_link_options o = {.backend = CUS_LINK_BACKEND_DRIVER};
    cus_autoptr(cus_linker) l = NULL;
    cus_status st = cus_linker_create(ctx, &o, &l);
    if (st == CUS_ERROR_NOT_SUPPORTED)
        return scn_skip(__func__, "%s", cus_last_error_message());
    CUS_TRY(st);
    CUS_TRY(cus_linker_add_data(l, CUS_LINK_INPUT_PTX, cusk_link_main_ptx,
                                cusk_link_main_ptx_size + 1, "link_main.ptx"));
    CUS_TRY(cus_linker_add_data(l, CUS_LINK_INPUT_PTX, cusk_link_lib_ptx,
                                cusk_link_lib_ptx_size + 1, "link_lib.ptx"));
    const void *cubin = NULL;
    size_t size = 0;
    CUS_TRY(cus_linker_complete(l, &cubin, &size));
    EXPECT(cubin != NULL && size > 0);
    cus_autoptr(cus_module) m = NULL;
    CUS_TRY(cus_linker_load(l, NULL, &m));
    l = cus_linker_unref(l); /* the module stands alone */
    cus_autoptr(cus_function) f = NULL;
    CUS_TRY(cus_module_get_function(m, "link_scale", &f));
    float x[N];
    for (int i = 0; i < N; i++)
        x[i] = (float)i;
    cus_autoptr(cus_buffer) b = NULL;
    CUS_TRY(cus_buffer_alloc_n(ctx, float, N, &b));
    CUS_TRY(cus_copy_to_device(b, 0, x, sizeof x));
    cus_autoptr(cus_stream) s = NULL;
    CUS_TRY(cus_stream_create(ctx, 0, 0, &s));
    CUS_TRY(cus_launch(f, cus_grid_for(N, 64), 64, 0, s, b, (int)N));
    CUS_TRY(cus_stream_synchronize(s));
    CUS_TRY(cus_copy_to_host(x, b, 0, sizeof x));
    for (int i = 0; i < N; i++)
        EXPECT(x[i] == 2.0f * (float)i + 1.0f);
    return CUS_SUCCESS;
}
#endif /* CUS_SCN_HAVE_LINK_KERNELS */

const scenario advanced_scenarios[] = {
    {"green_split_record_wait", scn_green_split_record_wait},
    {"tensor_map_tiled_rebind", scn_tensor_map_tiled_rebind},
#ifdef CUS_TEST_HAVE_KERNELS
    {"conditional_while_countdown", scn_conditional_while_countdown},
    {"launch_priority_pdl", scn_launch_priority_pdl},
    {"graph_programmatic_edge", scn_graph_programmatic_edge},
#endif
#ifdef CUS_SCN_HAVE_LINK_KERNELS
    {"link_ptx_module_launch", scn_link_ptx_module_launch},
#endif
    {NULL, NULL},
};
