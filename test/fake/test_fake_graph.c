/* The fake driver's stream capture and graphs (lib/fake/fake_graph.c), called
 * through its raw entry points from cus_fake_get_proc_address, as
 * test_fake_module.c does: every capture and graph entry point and its
 * errors, the three capture modes and the unsafe calls they forbid,
 * invalidation, the legacy stream, fork and join across streams, captured
 * events, replay (data, host functions, host kernels and launch records, at
 * every launch), cuGraphExecUpdate, graph memory nodes, handle tracking and
 * leaks, context death, poisoned contexts, threads, and fault injection.
 *
 * The kernels are a small PTX module written here with host implementations
 * registered by the tests, so nothing needs nvcc. Tests that misuse the fake
 * on purpose reinstall it before env_teardown checks. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cudaTypedefs.h>

#include "harness/env.h"
#include "harness/check.h"

typedef struct raw_driver {
    PFN_cuInit_v2000 init;
    PFN_cuCtxCreate_v3020 ctx_create;
    PFN_cuCtxDestroy_v4000 ctx_destroy;
    PFN_cuCtxPushCurrent_v4000 push;
    PFN_cuCtxPopCurrent_v4000 pop;
    PFN_cuCtxSynchronize_v2000 ctx_sync;
    PFN_cuStreamCreate_v2000 stream_create;
    PFN_cuStreamDestroy_v4000 stream_destroy;
    PFN_cuStreamSynchronize_v2000 stream_sync;
    PFN_cuStreamQuery_v2000 stream_query;
    PFN_cuStreamWaitEvent_v3020 wait_event;
    PFN_cuLaunchHostFunc_v10000 host_fn;
    PFN_cuEventCreate_v2000 event_create;
    PFN_cuEventRecord_v2000 event_record;
    PFN_cuEventQuery_v2000 event_query;
    PFN_cuEventSynchronize_v2000 event_sync;
    PFN_cuEventElapsedTime_v2000 elapsed;
    PFN_cuEventDestroy_v4000 event_destroy;
    PFN_cuMemAlloc_v3020 alloc;
    PFN_cuMemFree_v3020 free;
    PFN_cuMemAllocAsync_v11020 alloc_async;
    PFN_cuMemFreeAsync_v11020 free_async;
    PFN_cuMemAllocManaged_v6000 alloc_managed;
    PFN_cuMemHostAlloc_v2020 host_alloc;
    PFN_cuMemFreeHost_v2000 free_host;
    PFN_cuMemcpyHtoD_v3020 htod;
    PFN_cuMemcpyDtoH_v3020 dtoh;
    PFN_cuMemcpyHtoDAsync_v3020 htod_async;
    PFN_cuMemcpyDtoHAsync_v3020 dtoh_async;
    PFN_cuMemcpyDtoDAsync_v3020 dtod_async;
    PFN_cuMemsetD8Async_v3020 memset8_async;
    PFN_cuMemsetD32Async_v3020 memset32_async;
    PFN_cuMemPrefetchAsync_v8000 prefetch;
    PFN_cuModuleLoadData_v2000 load_data;
    PFN_cuModuleUnload_v2000 unload;
    PFN_cuModuleGetFunction_v2000 get_function;
    PFN_cuLaunchKernel_v4000 launch;
    PFN_cuLaunchKernelEx_v11060 launch_ex;
    /* capture and graphs */
    PFN_cuStreamBeginCapture_v10010 begin;
    PFN_cuStreamEndCapture_v10000 end;
    PFN_cuStreamIsCapturing_v10000 is_capturing;
    PFN_cuStreamGetCaptureInfo_v10010 info;
    PFN_cuStreamGetCaptureInfo_v11030 info_v2;
#if CUDA_VERSION >= 12030
    PFN_cuStreamGetCaptureInfo_v12030 info_v3;
#endif
    PFN_cuThreadExchangeStreamCaptureMode_v10010 exchange_mode;
    PFN_cuGraphDestroy_v10000 graph_destroy;
    PFN_cuGraphGetNodes_v10000 get_nodes;
    PFN_cuGraphNodeGetType_v10000 node_type;
    PFN_cuGraphInstantiateWithFlags_v11040 instantiate;
    PFN_cuGraphExecDestroy_v10000 exec_destroy;
    PFN_cuGraphLaunch_v10000 graph_launch;
    PFN_cuGraphUpload_v11010 upload;
    PFN_cuGraphExecUpdate_v10020 update_v1;
    PFN_cuGraphExecUpdate_v12000 update;
} raw_driver;

static raw_driver D;
static CUcontext ctx; /* the test's context, made current by the setup */

static void load_raw(void)
{
    memset(&D, 0, sizeof D);
    RAW(D.init, "cuInit", 2000);
    RAW(D.ctx_create, "cuCtxCreate", 3020);
    RAW(D.ctx_destroy, "cuCtxDestroy", 4000);
    RAW(D.push, "cuCtxPushCurrent", 4000);
    RAW(D.pop, "cuCtxPopCurrent", 4000);
    RAW(D.ctx_sync, "cuCtxSynchronize", 2000);
    RAW(D.stream_create, "cuStreamCreate", 2000);
    RAW(D.stream_destroy, "cuStreamDestroy", 4000);
    RAW(D.stream_sync, "cuStreamSynchronize", 2000);
    RAW(D.stream_query, "cuStreamQuery", 2000);
    RAW(D.wait_event, "cuStreamWaitEvent", 3020);
    RAW(D.host_fn, "cuLaunchHostFunc", 10000);
    RAW(D.event_create, "cuEventCreate", 2000);
    RAW(D.event_record, "cuEventRecord", 2000);
    RAW(D.event_query, "cuEventQuery", 2000);
    RAW(D.event_sync, "cuEventSynchronize", 2000);
    RAW(D.elapsed, "cuEventElapsedTime", 2000);
    RAW(D.event_destroy, "cuEventDestroy", 4000);
    RAW(D.alloc, "cuMemAlloc", 3020);
    RAW(D.free, "cuMemFree", 3020);
    RAW(D.alloc_async, "cuMemAllocAsync", 11020);
    RAW(D.free_async, "cuMemFreeAsync", 11020);
    RAW(D.alloc_managed, "cuMemAllocManaged", 6000);
    RAW(D.host_alloc, "cuMemHostAlloc", 2020);
    RAW(D.free_host, "cuMemFreeHost", 2000);
    RAW(D.htod, "cuMemcpyHtoD", 3020);
    RAW(D.dtoh, "cuMemcpyDtoH", 3020);
    RAW(D.htod_async, "cuMemcpyHtoDAsync", 3020);
    RAW(D.dtoh_async, "cuMemcpyDtoHAsync", 3020);
    RAW(D.dtod_async, "cuMemcpyDtoDAsync", 3020);
    RAW(D.memset8_async, "cuMemsetD8Async", 3020);
    RAW(D.memset32_async, "cuMemsetD32Async", 3020);
    RAW(D.prefetch, "cuMemPrefetchAsync", 8000);
    RAW(D.load_data, "cuModuleLoadData", 2000);
    RAW(D.unload, "cuModuleUnload", 2000);
    RAW(D.get_function, "cuModuleGetFunction", 2000);
    RAW(D.launch, "cuLaunchKernel", 4000);
    RAW(D.launch_ex, "cuLaunchKernelEx", 11060);
    RAW(D.begin, "cuStreamBeginCapture", 10010);
    RAW(D.end, "cuStreamEndCapture", 10000);
    RAW(D.is_capturing, "cuStreamIsCapturing", 10000);
    RAW(D.info, "cuStreamGetCaptureInfo", 10010);
    RAW(D.info_v2, "cuStreamGetCaptureInfo", 11030);
#if CUDA_VERSION >= 12030
    RAW(D.info_v3, "cuStreamGetCaptureInfo", 12030);
#endif
    RAW(D.exchange_mode, "cuThreadExchangeStreamCaptureMode", 10010);
    RAW(D.graph_destroy, "cuGraphDestroy", 10000);
    RAW(D.get_nodes, "cuGraphGetNodes", 10000);
    RAW(D.node_type, "cuGraphNodeGetType", 10000);
    RAW(D.instantiate, "cuGraphInstantiateWithFlags", 11040);
    RAW(D.exec_destroy, "cuGraphExecDestroy", 10000);
    RAW(D.graph_launch, "cuGraphLaunch", 10000);
    RAW(D.upload, "cuGraphUpload", 11010);
    RAW(D.update_v1, "cuGraphExecUpdate", 10020);
    RAW(D.update, "cuGraphExecUpdate", 12000);
}

static int setup_with(const cus_fake_config *cfg)
{
    if (env_setup_with(cfg))
        return -1;
    load_raw();
    ctx = NULL;
    if (D.init(0) != CUDA_SUCCESS || D.ctx_create(&ctx, 0, 0) != CUDA_SUCCESS)
        return -1;
    return 0;
}

static int g_setup(void **state)
{
    (void)state;
    return setup_with(NULL);
}

static int g_teardown(void **state)
{
    if (ctx) {
        assert_cu_ok(D.ctx_destroy(ctx));
        ctx = NULL;
    }
    assert_int_equal(cus_fake_active_captures(), 0);
    return env_teardown(state);
}

static int g_teardown_after_misuse(void **state)
{
    if (ctx)
        (void)D.ctx_destroy(ctx);
    ctx = NULL;
    assert_int_equal(cus_debug_live_objects(), 0);
    assert_ok(cus_fake_install(NULL));
    return env_teardown(state);
}

#define G_TEST(f) cmocka_unit_test_setup_teardown(f, g_setup, g_teardown)
#define MISUSE_TEST(f) cmocka_unit_test_setup_teardown(f, g_setup, g_teardown_after_misuse)

/* --- helpers ------------------------------------------------------------------------ */

enum { N = 64 }; /* u32 elements in the test buffers */

static CUstream new_stream(unsigned int flags)
{
    CUstream s = NULL;
    assert_cu_ok(D.stream_create(&s, flags));
    return s;
}

static CUevent new_event(void)
{
    CUevent e = NULL;
    assert_cu_ok(D.event_create(&e, CU_EVENT_DISABLE_TIMING));
    return e;
}

static CUdeviceptr new_buffer(size_t bytes)
{
    CUdeviceptr p = 0;
    assert_cu_ok(D.alloc(&p, bytes));
    return p;
}

static uint32_t *new_pinned(size_t bytes)
{
    void *p = NULL;
    assert_cu_ok(D.host_alloc(&p, bytes, 0));
    memset(p, 0, bytes);
    return p;
}

static CUstreamCaptureStatus status_of(CUstream s)
{
    CUstreamCaptureStatus st = (CUstreamCaptureStatus)-1;
    assert_cu_ok(D.is_capturing(s, &st));
    return st;
}

static size_t node_count(CUgraph g)
{
    size_t n = 12345;
    assert_cu_ok(D.get_nodes(g, NULL, &n));
    return n;
}

static CUgraphNodeType type_of(CUgraphNode n)
{
    CUgraphNodeType t = (CUgraphNodeType)-1;
    assert_cu_ok(D.node_type(n, &t));
    return t;
}

/* The types of g's nodes, in order, against want[0..n). */
static void assert_node_types(CUgraph g, const CUgraphNodeType *want, size_t n)
{
    assert_int_equal(node_count(g), n);
    CUgraphNode nodes[16];
    size_t got = n;
    assert_true(n <= 16);
    assert_cu_ok(D.get_nodes(g, nodes, &got));
    assert_int_equal(got, n);
    for (size_t i = 0; i < n; i++)
        if (type_of(nodes[i]) != want[i])
            fail_msg("node %zu has type %d, expected %d", i, (int)type_of(nodes[i]), (int)want[i]);
}

static CUgraphExec instantiate(CUgraph g)
{
    CUgraphExec x = NULL;
    assert_cu_ok(D.instantiate(&x, g, 0));
    assert_non_null(x);
    return x;
}

static CUgraph end_capture(CUstream s)
{
    CUgraph g = NULL;
    assert_cu_ok(D.end(s, &g));
    assert_non_null(g);
    return g;
}

static void seed(uint32_t *p, uint32_t base)
{
    for (int i = 0; i < N; i++)
        p[i] = base + (uint32_t)i;
}

/* A host function counting its runs. */
static void CUDA_CB count_fn(void *p)
{
    (*(int *)p)++;
}

/* --- the module written here -------------------------------------------------------
 * scale(u64 p, u32 n, u32 k): p[i] *= k for i < n (host implementation below);
 * other(u64 p): a second kernel, for updates. */
static const char graph_ptx[] =
    ".version 8.0\n"
    ".target sm_80\n"
    ".address_size 64\n"
    "\n"
    ".visible .entry scale(\n"
    "\t.param .u64 scale_param_0,\n"
    "\t.param .u32 scale_param_1,\n"
    "\t.param .u32 scale_param_2\n"
    ")\n"
    "{\n"
    "\tret;\n"
    "}\n"
    ".visible .entry other(\n"
    "\t.param .u64 other_param_0\n"
    ")\n"
    "{\n"
    "\tret;\n"
    "}\n";

typedef struct scale_probe {
    int runs;
    CUgraphExec last_exec;
    CUresult result;
} scale_probe;

static CUresult scale_twin(const cus_fake_launch *l, void **args, void *user)
{
    scale_probe *pr = user;
    CUdeviceptr p;
    uint32_t n, k;
    memcpy(&p, args[0], sizeof p);
    memcpy(&n, args[1], 4);
    memcpy(&k, args[2], 4);
    uint32_t *v = (uint32_t *)(uintptr_t)p;
    for (uint32_t i = 0; i < n; i++)
        v[i] *= k;
    if (pr) {
        pr->runs++;
        pr->last_exec = l->graph_exec;
        return pr->result;
    }
    return CUDA_SUCCESS;
}

static CUmodule load_module(void)
{
    CUmodule m = NULL;
    assert_cu_ok(D.load_data(&m, graph_ptx));
    return m;
}

static CUfunction function(CUmodule m, const char *name)
{
    CUfunction f = NULL;
    assert_cu_ok(D.get_function(&f, m, name));
    return f;
}

static CUresult launch_scale(CUfunction f, CUstream s, CUdeviceptr p, uint32_t n, uint32_t k)
{
    void *args[] = {&p, &n, &k};
    return D.launch(f, 1, 1, 1, 32, 1, 1, 0, s, args, NULL);
}

/* Captures on s: in -> d (H2D), scale(d, N, k), d -> out (D2H), and a host
 * function bumping *runs: four nodes. */
static CUgraph capture_pipeline(CUstream s, CUfunction f, CUdeviceptr d, const uint32_t *in,
                                uint32_t *out, uint32_t k, int *runs)
{
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu_ok(D.htod_async(d, in, N * 4, s));
    assert_cu_ok(launch_scale(f, s, d, N, k));
    assert_cu_ok(D.dtoh_async(out, d, N * 4, s));
    assert_cu_ok(D.host_fn(s, count_fn, runs));
    return end_capture(s);
}

/* ============================================================================
 * entry points and capture basics
 * ========================================================================== */

static void test_entry_points_resolve_at_their_versions(void **state)
{
    (void)state;
    void *a = raw_fn("cuStreamGetCaptureInfo", 10010);
    void *b = raw_fn("cuStreamGetCaptureInfo", 11030);
    assert_ptr_not_equal(a, b); /* the _v2 signature from 11.3 */
    assert_ptr_equal(raw_fn("cuStreamGetCaptureInfo", 11020), a);
#if CUDA_VERSION >= 12030
    assert_ptr_not_equal(raw_fn("cuStreamGetCaptureInfo", 12030), b);
#endif
    void *u1 = raw_fn("cuGraphExecUpdate", 11000);
    assert_ptr_not_equal(u1, raw_fn("cuGraphExecUpdate", 12000));
    void *inst = NULL;
    memcpy(&inst, &D.instantiate, sizeof inst);
    assert_ptr_equal(raw_fn("cuGraphInstantiateWithFlags", 12000), inst);
    /* Older than the oldest variant: not sufficient. */
    void *pfn = NULL;
    CUdriverProcAddressQueryResult qs = CU_GET_PROC_ADDRESS_SUCCESS;
    assert_int_equal(cus_fake_get_proc_address("cuGraphInstantiateWithFlags", &pfn, 11030, 0, &qs),
                     CUDA_SUCCESS);
    assert_int_equal(qs, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    assert_int_equal(cus_fake_get_proc_address("cuStreamBeginCapture", &pfn, 10000, 0, &qs),
                     CUDA_SUCCESS);
    assert_int_equal(qs, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
}

static void test_captured_work_is_recorded_not_run(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    CUdeviceptr d = new_buffer(N * 4);
    uint32_t *in = new_pinned(N * 4), *out = new_pinned(N * 4);
    seed(in, 100);
    int runs = 0;
    size_t graphs = cus_fake_live_handles(CUS_FAKE_HANDLE_GRAPH);
    assert_int_equal(status_of(s), CU_STREAM_CAPTURE_STATUS_NONE);
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_int_equal(cus_fake_active_captures(), 1);
    /* The capture's graph exists from the start. */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_GRAPH), graphs + 1);
    assert_int_equal(status_of(s), CU_STREAM_CAPTURE_STATUS_ACTIVE);
    assert_cu_ok(D.htod_async(d, in, N * 4, s));
    assert_cu_ok(D.memset32_async(d + 8, 0xabcd, 4, s));
    assert_cu_ok(D.host_fn(s, count_fn, &runs));
    assert_cu_ok(D.dtoh_async(out, d, N * 4, s));
    assert_cu_ok(D.dtod_async(d + 128, d, 64, s));
    assert_int_equal(cus_fake_stream_pending(s), 0); /* nothing queued */
    cus_fake_run_streams();
    assert_int_equal(runs, 0);
    assert_int_equal(out[0], 0);
    CUgraph g = end_capture(s);
    assert_int_equal(cus_fake_active_captures(), 0);
    assert_int_equal(status_of(s), CU_STREAM_CAPTURE_STATUS_NONE);
    static const CUgraphNodeType want[] = {CU_GRAPH_NODE_TYPE_MEMCPY, CU_GRAPH_NODE_TYPE_MEMSET,
                                           CU_GRAPH_NODE_TYPE_HOST, CU_GRAPH_NODE_TYPE_MEMCPY,
                                           CU_GRAPH_NODE_TYPE_MEMCPY};
    assert_node_types(g, want, 5);
    cus_fake_run_streams();
    assert_int_equal(runs, 0);
    assert_int_equal(out[0], 0);
    /* The stream works normally again. */
    assert_cu_ok(D.htod_async(d, in, 4, s));
    assert_int_equal(cus_fake_stream_pending(s), 1);
    assert_cu_ok(D.stream_sync(s));
    assert_cu_ok(D.graph_destroy(g));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_GRAPH), graphs);
    assert_cu_ok(D.free_host(in));
    assert_cu_ok(D.free_host(out));
    assert_cu_ok(D.free(d));
    assert_cu_ok(D.stream_destroy(s));
}

static void test_an_empty_capture_is_an_empty_graph(void **state)
{
    (void)state;
    CUstream s = new_stream(0);
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CUgraph g = end_capture(s);
    assert_int_equal(node_count(g), 0);
    CUgraphExec x = instantiate(g);
    assert_cu_ok(D.graph_launch(x, s));
    assert_int_equal(cus_fake_stream_pending(s), 0);
    assert_cu_ok(D.stream_sync(s));
    assert_cu_ok(D.exec_destroy(x));
    assert_cu_ok(D.graph_destroy(g));
    assert_cu_ok(D.stream_destroy(s));
}

/* The work queued before the capture runs normally, and is not in the graph. */
static void test_work_queued_before_the_capture_still_runs(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    int runs = 0;
    assert_cu_ok(D.host_fn(s, count_fn, &runs));
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu_ok(D.host_fn(s, count_fn, &runs));
    CUgraph g = end_capture(s);
    assert_int_equal(node_count(g), 1);
    assert_int_equal(cus_fake_stream_pending(s), 1);
    assert_cu_ok(D.stream_sync(s));
    assert_int_equal(runs, 1);
    assert_cu_ok(D.graph_destroy(g));
    assert_cu_ok(D.stream_destroy(s));
}

static void test_get_nodes_fills_up_to_the_count(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    int runs = 0;
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    for (int i = 0; i < 3; i++)
        assert_cu_ok(D.host_fn(s, count_fn, &runs));
    CUgraph g = end_capture(s);
    assert_cu(D.get_nodes(g, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
    CUgraphNode nodes[5];
    memset(nodes, 0xff, sizeof nodes);
    size_t n = 5;
    assert_cu_ok(D.get_nodes(g, nodes, &n));
    assert_int_equal(n, 3); /* the count obtained */
    assert_non_null(nodes[0]);
    assert_non_null(nodes[2]);
    assert_null(nodes[3]); /* the rest: NULL */
    assert_null(nodes[4]);
    CUgraphNode sentinel = (CUgraphNode)(uintptr_t)0x1;
    CUgraphNode three[3] = {NULL, NULL, sentinel};
    n = 2;
    assert_cu_ok(D.get_nodes(g, three, &n));
    assert_int_equal(n, 2);
    assert_ptr_equal(three[0], nodes[0]);
    assert_ptr_equal(three[1], nodes[1]);
    assert_ptr_equal(three[2], sentinel); /* only n entries */
    assert_cu(D.get_nodes(NULL, NULL, &n), CUDA_ERROR_INVALID_VALUE);
    assert_cu_ok(D.graph_destroy(g));
    assert_cu_ok(D.stream_destroy(s));
}

static void test_node_get_type_errors(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    int runs = 0;
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu_ok(D.host_fn(s, count_fn, &runs));
    CUgraph g = end_capture(s);
    CUgraphNode node = NULL;
    size_t n = 1;
    assert_cu_ok(D.get_nodes(g, &node, &n));
    CUgraphNodeType t;
    assert_cu(D.node_type(node, NULL), CUDA_ERROR_INVALID_VALUE);
    assert_cu(D.node_type(NULL, &t), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cus_fake_misuse_count(), 0);
    assert_cu(D.node_type((CUgraphNode)(uintptr_t)&runs, &t), CUDA_ERROR_INVALID_VALUE);
    assert_contains(cus_fake_last_misuse(), "unknown graph node");
    assert_cu_ok(D.graph_destroy(g));
    assert_cu(D.node_type(node, &t), CUDA_ERROR_INVALID_VALUE);
    assert_contains(cus_fake_last_misuse(), "used after its graph was destroyed");
    assert_int_equal(cus_fake_misuse_count(), 2);
    assert_cu_ok(D.stream_destroy(s));
}

/* ============================================================================
 * begin and end: their errors
 * ========================================================================== */

static void test_begin_capture_errors(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    /* The legacy stream cannot capture. */
    assert_cu(D.begin(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    assert_cu(D.begin(CU_STREAM_LEGACY, CU_STREAM_CAPTURE_MODE_GLOBAL),
              CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    assert_cu(D.begin(s, (CUstreamCaptureMode)7), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(status_of(s), CU_STREAM_CAPTURE_STATUS_NONE);
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    assert_cu(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_ILLEGAL_STATE);
    assert_int_equal(cus_fake_active_captures(), 1);
    CUgraph g = end_capture(s);
    assert_cu_ok(D.graph_destroy(g));
    /* Without a current context the legacy stream is no stream. */
    CUcontext popped = NULL;
    assert_cu_ok(D.pop(&popped));
    assert_cu(D.begin(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_INVALID_CONTEXT);
    assert_cu_ok(D.push(popped));
    assert_int_equal(cus_fake_misuse_count(), 0);
    assert_cu_ok(D.stream_destroy(s));
}

static void test_begin_capture_on_a_destroyed_stream_is_misuse(void **state)
{
    (void)state;
    CUstream s = new_stream(0);
    assert_cu_ok(D.stream_destroy(s));
    assert_cu(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_INVALID_HANDLE);
    assert_contains(cus_fake_last_misuse(), "used after cuStreamDestroy");
    assert_int_equal(cus_fake_active_captures(), 0);
}

static void test_end_capture_errors(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING), s2 = new_stream(CU_STREAM_NON_BLOCKING);
    CUevent e = new_event();
    CUgraph g = (CUgraph)(uintptr_t)0x1234;
    assert_cu(D.end(s, &g), CUDA_ERROR_ILLEGAL_STATE); /* not capturing */
    assert_ptr_equal(g, (CUgraph)(uintptr_t)0x1234);
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu(D.end(s, NULL), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(status_of(s), CU_STREAM_CAPTURE_STATUS_ACTIVE);
    /* Ending on a joined stream: unmatched, and the capture is broken. */
    assert_cu_ok(D.event_record(e, s));
    assert_cu_ok(D.wait_event(s2, e, 0));
    assert_int_equal(status_of(s2), CU_STREAM_CAPTURE_STATUS_ACTIVE);
    assert_cu(D.end(s2, &g), CUDA_ERROR_STREAM_CAPTURE_UNMATCHED);
    assert_int_equal(status_of(s), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    assert_int_equal(status_of(s2), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    size_t graphs = cus_fake_live_handles(CUS_FAKE_HANDLE_GRAPH);
    assert_cu(D.end(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    assert_null(g);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_GRAPH), graphs - 1);
    assert_int_equal(status_of(s), CU_STREAM_CAPTURE_STATUS_NONE);
    assert_int_equal(status_of(s2), CU_STREAM_CAPTURE_STATUS_NONE);
    assert_int_equal(cus_fake_misuse_count(), 0);
    assert_cu_ok(D.event_destroy(e));
    assert_cu_ok(D.stream_destroy(s));
    assert_cu_ok(D.stream_destroy(s2));
}

typedef struct end_arg {
    CUstream s;
    CUgraph g;
    CUresult r;
} end_arg;

static void *end_elsewhere(void *p)
{
    end_arg *a = p;
    a->r = D.end(a->s, &a->g);
    return NULL;
}

static CUresult end_on_another_thread(CUstream s, CUgraph *g)
{
    end_arg a = {s, NULL, CUDA_ERROR_UNKNOWN};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, end_elsewhere, &a), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    *g = a.g;
    return a.r;
}

static void test_end_capture_from_another_thread(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    static const CUstreamCaptureMode strict[] = {CU_STREAM_CAPTURE_MODE_GLOBAL,
                                                 CU_STREAM_CAPTURE_MODE_THREAD_LOCAL};
    for (int i = 0; i < 2; i++) {
        assert_cu_ok(D.begin(s, strict[i]));
        CUgraph g = NULL;
        assert_cu(end_on_another_thread(s, &g), CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD);
        assert_null(g);
        assert_int_equal(status_of(s), CU_STREAM_CAPTURE_STATUS_ACTIVE); /* still */
        g = end_capture(s);
        assert_cu_ok(D.graph_destroy(g));
    }
    /* A relaxed capture may end anywhere. */
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CUgraph g = NULL;
    assert_cu_ok(end_on_another_thread(s, &g));
    assert_non_null(g);
    assert_int_equal(status_of(s), CU_STREAM_CAPTURE_STATUS_NONE);
    assert_cu_ok(D.graph_destroy(g));
    assert_cu_ok(D.stream_destroy(s));
}

/* ============================================================================
 * invalidation, the legacy stream, unsafe calls and the modes
 * ========================================================================== */

static void test_synchronizing_a_capturing_stream_invalidates_it(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    int runs = 0;
    size_t handles = cus_fake_live_handles(CUS_FAKE_HANDLE_ANY);
    for (int way = 0; way < 2; way++) {
        assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
        assert_cu_ok(D.host_fn(s, count_fn, &runs));
        assert_cu(way == 0 ? D.stream_sync(s) : D.stream_query(s),
                  CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
        assert_int_equal(status_of(s), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
        /* Everything on it now answers the invalidation; nothing is queued. */
        assert_cu(D.host_fn(s, count_fn, &runs), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
        CUevent e = new_event();
        assert_cu(D.event_record(e, s), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
        assert_cu_ok(D.event_destroy(e));
        CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
        cuuint64_t id = 77;
        assert_cu_ok(D.info(s, &st, &id));
        assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
        assert_int_equal(id, 77); /* only an active capture's data */
        CUgraph g = (CUgraph)(uintptr_t)0x1;
        assert_cu(D.end(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
        assert_null(g);
        assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), handles);
        assert_int_equal(status_of(s), CU_STREAM_CAPTURE_STATUS_NONE);
    }
    assert_cu_ok(D.stream_sync(s));
    assert_int_equal(runs, 0);
    assert_cu_ok(D.stream_destroy(s));
}

static void test_the_legacy_stream_is_blocked_by_a_blocking_capture(void **state)
{
    (void)state;
    CUstream blocking = new_stream(0), nonblocking = new_stream(CU_STREAM_NON_BLOCKING);
    CUdeviceptr d = new_buffer(64);
    /* A non-blocking capture leaves the legacy stream alone. */
    assert_cu_ok(D.begin(nonblocking, CU_STREAM_CAPTURE_MODE_RELAXED));
    assert_cu_ok(D.memset8_async(d, 1, 64, NULL));
    assert_int_equal(status_of(NULL), CU_STREAM_CAPTURE_STATUS_NONE);
    assert_cu_ok(D.stream_sync(NULL));
    CUgraph g = end_capture(nonblocking);
    assert_cu_ok(D.graph_destroy(g));

    /* A blocking one: queries of the legacy stream fail, without harm. */
    assert_cu_ok(D.begin(blocking, CU_STREAM_CAPTURE_MODE_RELAXED));
    CUstreamCaptureStatus st;
    assert_cu(D.is_capturing(NULL, &st), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    assert_cu(D.is_capturing(CU_STREAM_LEGACY, &st), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    cuuint64_t id;
    assert_cu(D.info(NULL, &st, &id), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    assert_int_equal(status_of(blocking), CU_STREAM_CAPTURE_STATUS_ACTIVE);
    /* Its use breaks the capture. */
    assert_cu(D.memset8_async(d, 2, 64, NULL), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    assert_int_equal(status_of(blocking), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    assert_int_equal(cus_fake_stream_pending(NULL), 0);
    assert_cu(D.end(blocking, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    /* And each way of using it: a synchronous copy, a synchronization, a record. */
    unsigned char host[64];
    CUevent e = new_event();
    for (int way = 0; way < 4; way++) {
        assert_cu_ok(D.begin(blocking, CU_STREAM_CAPTURE_MODE_RELAXED));
        CUresult r = way == 0   ? D.htod(d, host, 64)
                     : way == 1 ? D.stream_sync(NULL)
                     : way == 2 ? D.stream_query(CU_STREAM_LEGACY)
                                : D.event_record(e, NULL);
        assert_cu(r, CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
        assert_int_equal(status_of(blocking), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
        assert_cu(D.end(blocking, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    }
    assert_cu_ok(D.event_destroy(e));
    assert_cu_ok(D.free(d));
    assert_cu_ok(D.stream_destroy(blocking));
    assert_cu_ok(D.stream_destroy(nonblocking));
}

typedef struct unsafe_arg {
    CUstreamCaptureMode thread_mode; /* set first, with cuThreadExchangeStreamCaptureMode */
    bool set_mode;
    CUresult r;
} unsafe_arg;

static void *alloc_elsewhere(void *p)
{
    unsafe_arg *a = p;
    if (D.push(ctx) != CUDA_SUCCESS) {
        a->r = CUDA_ERROR_UNKNOWN;
        return NULL;
    }
    if (a->set_mode) {
        CUstreamCaptureMode m = a->thread_mode;
        (void)D.exchange_mode(&m);
    }
    CUdeviceptr d = 0;
    a->r = D.alloc(&d, 16);
    if (a->r == CUDA_SUCCESS)
        (void)D.free(d);
    CUcontext popped;
    (void)D.pop(&popped);
    return NULL;
}

static CUresult alloc_on_another_thread(bool set_mode, CUstreamCaptureMode mode)
{
    unsafe_arg a = {mode, set_mode, CUDA_ERROR_UNKNOWN};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, alloc_elsewhere, &a), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    return a.r;
}

/* Begins a capture in mode on s; checks whether an allocation on this
 * thread and on another one are refused; ends the capture, checking it was
 * invalidated exactly when one was refused. */
static void check_unsafe(CUstream s, CUstreamCaptureMode mode, bool here_refused,
                         bool elsewhere_refused)
{
    CUdeviceptr d = 0;
    CUgraph g = NULL;
    assert_cu_ok(D.begin(s, mode));
    assert_cu(alloc_on_another_thread(false, CU_STREAM_CAPTURE_MODE_GLOBAL),
              elsewhere_refused ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS);
    assert_int_equal(status_of(s), elsewhere_refused ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                                     : CU_STREAM_CAPTURE_STATUS_ACTIVE);
    if (elsewhere_refused) {
        assert_cu(D.end(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
        assert_cu_ok(D.begin(s, mode));
    }
    CUresult r = D.alloc(&d, 16);
    assert_cu(r, here_refused ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS);
    if (r == CUDA_SUCCESS)
        assert_cu_ok(D.free(d));
    if (here_refused) {
        assert_cu(D.end(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    } else {
        g = end_capture(s);
        assert_cu_ok(D.graph_destroy(g));
    }
}

static void test_unsafe_calls_follow_the_capture_modes(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    check_unsafe(s, CU_STREAM_CAPTURE_MODE_GLOBAL, true, true);
    check_unsafe(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, true, false);
    check_unsafe(s, CU_STREAM_CAPTURE_MODE_RELAXED, false, false);

    /* Another thread in RELAXED or THREAD_LOCAL mode may, during a global capture. */
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu_ok(alloc_on_another_thread(true, CU_STREAM_CAPTURE_MODE_RELAXED));
    assert_cu_ok(alloc_on_another_thread(true, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    assert_int_equal(status_of(s), CU_STREAM_CAPTURE_STATUS_ACTIVE);
    /* And this thread, once it made itself RELAXED. */
    CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;
    assert_cu_ok(D.exchange_mode(&m));
    assert_int_equal(m, CU_STREAM_CAPTURE_MODE_GLOBAL); /* the default */
    CUdeviceptr d = 0;
    assert_cu_ok(D.alloc(&d, 16));
    assert_cu_ok(D.free(d));
    assert_cu_ok(D.exchange_mode(&m)); /* back */
    assert_int_equal(m, CU_STREAM_CAPTURE_MODE_RELAXED);
    /* Every unsafe kind of call is refused in GLOBAL mode. */
    unsigned char host[16] = {0};
    CUdeviceptr buf = 0;
    CUgraph g = end_capture(s);
    assert_cu_ok(D.graph_destroy(g));
    assert_cu_ok(D.alloc(&buf, 16));
    for (int way = 0; way < 5; way++) {
        assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
        void *p = NULL;
        CUresult r = way == 0   ? D.htod(buf, host, 16)
                     : way == 1 ? D.dtoh(host, buf, 16)
                     : way == 2 ? D.ctx_sync()
                     : way == 3 ? D.free(buf)
                                : D.host_alloc(&p, 16, 0);
        assert_cu(r, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
        assert_cu(D.end(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    }
    /* An invalidated capture forbids nothing more: cleanup works. */
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu(D.alloc(&d, 16), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    assert_cu_ok(D.free(buf));
    assert_cu(D.end(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    /* Bad arguments. */
    assert_cu(D.exchange_mode(NULL), CUDA_ERROR_INVALID_VALUE);
    m = (CUstreamCaptureMode)9;
    assert_cu(D.exchange_mode(&m), CUDA_ERROR_INVALID_VALUE);
    assert_cu_ok(D.stream_destroy(s));
}

/* A relaxed capture on a non-blocking stream leaves synchronous copies alone. */
static void test_a_relaxed_capture_allows_synchronous_copies(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    CUdeviceptr d = new_buffer(16);
    uint32_t in[4] = {1, 2, 3, 4}, out[4] = {0};
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    assert_cu_ok(D.htod(d, in, 16));
    assert_cu_ok(D.dtoh(out, d, 16));
    assert_int_equal(out[3], 4);
    CUgraph g = end_capture(s);
    assert_int_equal(node_count(g), 0);
    assert_cu_ok(D.graph_destroy(g));
    assert_cu_ok(D.free(d));
    assert_cu_ok(D.stream_destroy(s));
}

/* ============================================================================
 * fork and join, captured events
 * ========================================================================== */

static void test_fork_and_join_across_streams(void **state)
{
    (void)state;
    CUstream s1 = new_stream(CU_STREAM_NON_BLOCKING), s2 = new_stream(CU_STREAM_NON_BLOCKING);
    CUevent fork = new_event(), join = new_event();
    CUdeviceptr d = new_buffer(N * 4);
    uint32_t *in = new_pinned(N * 4), *out = new_pinned(N * 4);
    assert_cu_ok(D.begin(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu_ok(D.htod_async(d, in, N * 4, s1));            /* node 0 */
    assert_cu_ok(D.event_record(fork, s1));
    assert_int_equal(status_of(s2), CU_STREAM_CAPTURE_STATUS_NONE);
    assert_cu_ok(D.wait_event(s2, fork, 0));                   /* s2 joins */
    assert_int_equal(status_of(s2), CU_STREAM_CAPTURE_STATUS_ACTIVE);
    CUstreamCaptureStatus st1, st2;
    cuuint64_t id1 = 0, id2 = 0;
    assert_cu_ok(D.info(s1, &st1, &id1));
    assert_cu_ok(D.info(s2, &st2, &id2));
    assert_int_equal(id1, id2); /* one capture */
    assert_cu_ok(D.memset32_async(d + N * 2, 7, N / 2, s2)); /* node 1, after node 0 */
    assert_cu_ok(D.event_record(join, s2));
    assert_cu_ok(D.wait_event(s1, join, 0));                   /* s1 takes s2's work back */
    const CUgraphNode *deps = NULL;
    size_t ndeps = 0;
    CUgraph building = NULL;
    assert_cu_ok(D.info_v2(s1, &st1, NULL, &building, &deps, &ndeps));
    assert_int_equal(ndeps, 2); /* node 0 and node 1 */
    assert_cu_ok(D.dtoh_async(out, d, N * 4, s1));            /* node 2 */
    /* Events recorded in a capture only order captured work. */
    assert_cu(D.event_query(fork), CUDA_ERROR_CAPTURED_EVENT);
    assert_cu(D.event_sync(join), CUDA_ERROR_CAPTURED_EVENT);
    CUgraph g = end_capture(s1);
    assert_ptr_equal(g, building);
    assert_int_equal(status_of(s2), CU_STREAM_CAPTURE_STATUS_NONE);
    static const CUgraphNodeType want[] = {CU_GRAPH_NODE_TYPE_MEMCPY, CU_GRAPH_NODE_TYPE_MEMSET,
                                           CU_GRAPH_NODE_TYPE_MEMCPY};
    assert_node_types(g, want, 3);
    /* Replayed in a valid order: the memset after the upload, the download last. */
    CUgraphExec x = instantiate(g);
    for (int r = 0; r < 3; r++) {
        seed(in, (uint32_t)r * 1000);
        assert_cu_ok(D.graph_launch(x, s2));
        assert_cu_ok(D.stream_sync(s2));
        for (int i = 0; i < N; i++)
            assert_int_equal(out[i], i < N / 2 ? (uint32_t)r * 1000 + (uint32_t)i : 7u);
    }
    /* After the capture, the events are still marked until recorded again. */
    assert_cu(D.wait_event(s2, fork, 0), CUDA_ERROR_CAPTURED_EVENT);
    assert_cu_ok(D.event_record(fork, s2));
    assert_cu_ok(D.event_sync(fork));
    assert_cu_ok(D.exec_destroy(x));
    assert_cu_ok(D.graph_destroy(g));
    assert_cu_ok(D.event_destroy(fork));
    assert_cu_ok(D.event_destroy(join));
    assert_cu_ok(D.free_host(in));
    assert_cu_ok(D.free_host(out));
    assert_cu_ok(D.free(d));
    assert_cu_ok(D.stream_destroy(s1));
    assert_cu_ok(D.stream_destroy(s2));
}

static void test_an_unjoined_fork_fails_the_end(void **state)
{
    (void)state;
    CUstream s1 = new_stream(CU_STREAM_NON_BLOCKING), s2 = new_stream(CU_STREAM_NON_BLOCKING);
    CUevent fork = new_event();
    int runs = 0;
    size_t handles = cus_fake_live_handles(CUS_FAKE_HANDLE_ANY);
    /* A fork with no work of its own needs no join. */
    assert_cu_ok(D.begin(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu_ok(D.host_fn(s1, count_fn, &runs));
    assert_cu_ok(D.event_record(fork, s1));
    assert_cu_ok(D.wait_event(s2, fork, 0));
    assert_cu_ok(D.host_fn(s1, count_fn, &runs));
    CUgraph g = end_capture(s1);
    assert_int_equal(status_of(s2), CU_STREAM_CAPTURE_STATUS_NONE);
    assert_cu_ok(D.graph_destroy(g));
    /* With work that was never joined back: the end fails, and ends it all. */
    assert_cu_ok(D.begin(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu_ok(D.event_record(fork, s1));
    assert_cu_ok(D.wait_event(s2, fork, 0));
    assert_cu_ok(D.host_fn(s2, count_fn, &runs));
    assert_cu_ok(D.host_fn(s1, count_fn, &runs));
    g = (CUgraph)(uintptr_t)0x1;
    assert_cu(D.end(s1, &g), CUDA_ERROR_STREAM_CAPTURE_UNJOINED);
    assert_null(g);
    assert_int_equal(status_of(s1), CU_STREAM_CAPTURE_STATUS_NONE);
    assert_int_equal(status_of(s2), CU_STREAM_CAPTURE_STATUS_NONE);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), handles);
    assert_int_equal(runs, 0);
    assert_cu_ok(D.event_destroy(fork));
    assert_cu_ok(D.stream_destroy(s1));
    assert_cu_ok(D.stream_destroy(s2));
}

static void test_waits_across_capture_boundaries(void **state)
{
    (void)state;
    CUstream a = new_stream(CU_STREAM_NON_BLOCKING), b = new_stream(CU_STREAM_NON_BLOCKING);
    CUevent outside = new_event(), in_a = new_event(), never = new_event();
    CUgraph g = NULL;
    /* An event recorded outside the capture: isolation. */
    assert_cu_ok(D.event_record(outside, b));
    assert_cu_ok(D.begin(a, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu_ok(D.wait_event(a, never, 0)); /* never recorded: nothing to wait for */
    assert_cu(D.wait_event(a, outside, 0), CUDA_ERROR_STREAM_CAPTURE_ISOLATION);
    assert_int_equal(status_of(a), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    assert_cu(D.end(a, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    /* An event of another capture: the two would merge. */
    assert_cu_ok(D.begin(a, CU_STREAM_CAPTURE_MODE_RELAXED));
    assert_cu_ok(D.begin(b, CU_STREAM_CAPTURE_MODE_RELAXED));
    assert_int_equal(cus_fake_active_captures(), 2);
    assert_cu_ok(D.event_record(in_a, a));
    assert_cu(D.wait_event(b, in_a, 0), CUDA_ERROR_STREAM_CAPTURE_MERGE);
    assert_int_equal(status_of(b), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    assert_int_equal(status_of(a), CU_STREAM_CAPTURE_STATUS_ACTIVE);
    assert_cu(D.end(b, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    /* External waits are not emulated. */
    assert_cu(D.wait_event(a, in_a, CU_EVENT_WAIT_EXTERNAL), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    assert_cu(D.end(a, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    /* The legacy stream cannot join. */
    CUstream nb = new_stream(CU_STREAM_NON_BLOCKING); /* the legacy stream stays usable */
    assert_cu_ok(D.begin(nb, CU_STREAM_CAPTURE_MODE_RELAXED));
    assert_cu_ok(D.event_record(in_a, nb));
    assert_cu(D.wait_event(NULL, in_a, 0), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    assert_cu(D.end(nb, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    /* Timing of a captured event. */
    float ms = 0;
    assert_cu(D.elapsed(&ms, in_a, in_a), CUDA_ERROR_CAPTURED_EVENT);
    assert_int_equal(cus_fake_misuse_count(), 0);
    assert_cu_ok(D.event_destroy(outside));
    assert_cu_ok(D.event_destroy(in_a));
    assert_cu_ok(D.event_destroy(never));
    assert_cu_ok(D.stream_destroy(a));
    assert_cu_ok(D.stream_destroy(b));
    assert_cu_ok(D.stream_destroy(nb));
}

static void test_capture_info_of_every_variant(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    int runs = 0;
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    cuuint64_t id = 5;
    assert_cu(D.info(s, NULL, &id), CUDA_ERROR_INVALID_VALUE);
    assert_cu_ok(D.info(s, &st, &id));
    assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_NONE);
    assert_int_equal(id, 5); /* untouched */
    assert_cu(D.is_capturing(s, NULL), CUDA_ERROR_INVALID_VALUE);
    cuuint64_t ids[2];
    for (int i = 0; i < 2; i++) {
        assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
        assert_cu_ok(D.info(s, &st, &ids[i]));
        assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
        if (i == 0) {
            CUgraph g = NULL;
            const CUgraphNode *deps = (const CUgraphNode *)&runs;
            size_t ndeps = 9;
            assert_cu_ok(D.info_v2(s, &st, NULL, &g, &deps, &ndeps));
            assert_non_null(g);
            assert_int_equal(ndeps, 0);
            assert_cu_ok(D.host_fn(s, count_fn, &runs));
            assert_cu_ok(D.info_v2(s, &st, &id, &g, &deps, &ndeps));
            assert_int_equal(id, ids[0]);
            assert_int_equal(ndeps, 1);
            /* The graph being captured may be looked at, not destroyed or instantiated. */
            assert_int_equal(node_count(g), 1);
            CUgraphNode node = NULL;
            size_t one = 1;
            assert_cu_ok(D.get_nodes(g, &node, &one));
            assert_ptr_equal(deps[0], node);
            assert_cu(D.graph_destroy(g), CUDA_ERROR_ILLEGAL_STATE);
            CUgraphExec x = NULL;
            assert_cu(D.instantiate(&x, g, 0), CUDA_ERROR_ILLEGAL_STATE);
            assert_null(x);
#if CUDA_VERSION >= 12030
            const CUgraphEdgeData *edges = NULL;
            assert_cu(D.info_v3(s, &st, NULL, NULL, NULL, &edges, &ndeps),
                      CUDA_ERROR_INVALID_VALUE);
            assert_cu_ok(D.info_v3(s, &st, NULL, NULL, &deps, &edges, &ndeps));
            assert_int_equal(ndeps, 1);
            assert_non_null(edges);
            assert_int_equal(edges[0].type, 0);
            assert_int_equal(edges[0].from_port, 0);
#endif
            assert_ptr_equal(end_capture(s), g);
            assert_cu_ok(D.graph_destroy(g));
        } else {
            CUgraph g = end_capture(s);
            assert_cu_ok(D.graph_destroy(g));
        }
    }
    assert_true(ids[1] > ids[0]); /* unique */
    assert_cu_ok(D.stream_destroy(s));
}

/* ============================================================================
 * replay
 * ========================================================================== */

static void test_replay_copies_kernel_and_host_function_every_time(void **state)
{
    (void)state;
    scale_probe pr = {0};
    assert_ok(cus_fake_register_kernel("scale", scale_twin, &pr));
    CUmodule m = load_module();
    CUfunction f = function(m, "scale");
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING), other = new_stream(0);
    CUdeviceptr d = new_buffer(N * 4);
    uint32_t *in = new_pinned(N * 4), *out = new_pinned(N * 4);
    int runs = 0;
    unsigned long launches = cus_fake_launch_count();
    CUgraph g = capture_pipeline(s, f, d, in, out, 3, &runs);
    assert_int_equal(pr.runs, 0);
    /* The captured launch is recorded, marked. */
    assert_int_equal(cus_fake_launch_count(), launches + 1);
    cus_fake_launch rec;
    assert_ok(cus_fake_last_launch(&rec));
    assert_true(rec.captured);
    assert_null(rec.graph_exec);
    assert_string_equal(rec.function, "scale");
    static const CUgraphNodeType want[] = {CU_GRAPH_NODE_TYPE_MEMCPY, CU_GRAPH_NODE_TYPE_KERNEL,
                                           CU_GRAPH_NODE_TYPE_MEMCPY, CU_GRAPH_NODE_TYPE_HOST};
    assert_node_types(g, want, 4);
    CUgraphExec x = instantiate(g);
    for (int r = 1; r <= 3; r++) {
        seed(in, (uint32_t)r * 100);
        CUstream on = r == 2 ? other : s;
        assert_cu_ok(D.graph_launch(x, on));
        assert_int_equal(cus_fake_stream_pending(on), 4);
        assert_int_equal(runs, r - 1); /* nothing at launch */
        /* Each replay's kernel node is a launch record. */
        assert_int_equal(cus_fake_launch_count(), launches + 1 + (unsigned long)r);
        assert_ok(cus_fake_last_launch(&rec));
        assert_false(rec.captured);
        assert_ptr_equal(rec.graph_exec, x);
        assert_ptr_equal(rec.stream, on);
        assert_int_equal(rec.block[0], 32);
        CUdeviceptr p;
        memcpy(&p, rec.args, sizeof p);
        assert_int_equal(p, d);
        assert_cu_ok(D.stream_sync(on));
        assert_int_equal(runs, r);
        assert_int_equal(pr.runs, r);
        assert_ptr_equal(pr.last_exec, x);
        for (int i = 0; i < N; i++)
            assert_int_equal(out[i], ((uint32_t)r * 100 + (uint32_t)i) * 3u);
    }
    /* Launches queue behind each other, and behind earlier work. */
    seed(in, 1);
    assert_cu_ok(D.graph_launch(x, s));
    assert_cu_ok(D.graph_launch(x, s));
    assert_cu_ok(D.stream_sync(s));
    assert_int_equal(runs, 5);
    assert_int_equal(out[1], 2 * 3);
    /* The graph can go: the executable graph is independent. */
    assert_cu_ok(D.graph_destroy(g));
    assert_cu_ok(D.graph_launch(x, s));
    assert_cu_ok(D.stream_sync(s));
    assert_int_equal(runs, 6);
    assert_cu_ok(D.exec_destroy(x));
    assert_ok(cus_fake_register_kernel("scale", NULL, NULL));
    assert_cu_ok(D.free_host(in));
    assert_cu_ok(D.free_host(out));
    assert_cu_ok(D.free(d));
    assert_cu_ok(D.unload(m));
    assert_cu_ok(D.stream_destroy(s));
    assert_cu_ok(D.stream_destroy(other));
}

static void test_graph_launch_and_upload_errors(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    int runs = 0;
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu_ok(D.host_fn(s, count_fn, &runs));
    CUgraph g = end_capture(s);
    CUgraphExec x = instantiate(g);
    assert_cu(D.graph_launch(NULL, s), CUDA_ERROR_INVALID_VALUE);
    assert_cu(D.upload(NULL, s), CUDA_ERROR_INVALID_VALUE);
    /* Upload: validated, nothing queued; the legacy stream is fine. */
    assert_cu_ok(D.upload(x, s));
    assert_cu_ok(D.upload(x, NULL));
    assert_int_equal(cus_fake_stream_pending(s), 0);
    /* A stream of another context. */
    CUcontext other = NULL;
    assert_cu_ok(D.ctx_create(&other, 0, 0));
    CUstream foreign = new_stream(0);
    assert_cu(D.graph_launch(x, foreign), CUDA_ERROR_INVALID_VALUE);
    assert_cu(D.upload(x, foreign), CUDA_ERROR_INVALID_VALUE);
    assert_cu_ok(D.stream_destroy(foreign));
    assert_cu_ok(D.ctx_destroy(other)); /* off the top: ctx is current again */
    /* On a capturing stream (a child graph: not emulated). */
    CUstream cap = new_stream(CU_STREAM_NON_BLOCKING);
    CUgraph dropped = NULL;
    for (int way = 0; way < 2; way++) {
        assert_cu_ok(D.begin(cap, CU_STREAM_CAPTURE_MODE_GLOBAL));
        assert_cu(way ? D.upload(x, cap) : D.graph_launch(x, cap),
                  CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
        assert_cu(D.graph_launch(x, cap), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
        assert_cu(D.end(cap, &dropped), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    }
    /* On the legacy stream while a blocking stream captures. */
    CUstream blocking = new_stream(0);
    assert_cu_ok(D.begin(blocking, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu(D.graph_launch(x, NULL), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    assert_cu(D.end(blocking, &dropped), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    assert_cu_ok(D.graph_launch(x, NULL));
    assert_cu_ok(D.stream_sync(NULL));
    assert_int_equal(runs, 1);
    assert_int_equal(cus_fake_misuse_count(), 0);
    assert_cu_ok(D.exec_destroy(x));
    assert_cu_ok(D.graph_destroy(g));
    assert_cu_ok(D.stream_destroy(s));
    assert_cu_ok(D.stream_destroy(cap));
    assert_cu_ok(D.stream_destroy(blocking));
}

static void test_instantiate_flags_and_errors(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    CUdeviceptr d = new_buffer(64);
    int runs = 0;
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu_ok(D.memset8_async(d, 1, 64, s));
    CUgraph copies = end_capture(s);
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu_ok(D.host_fn(s, count_fn, &runs));
    CUgraph host = end_capture(s);
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUgraph empty = end_capture(s);
    CUgraphExec x = NULL;
    assert_cu(D.instantiate(NULL, copies, 0), CUDA_ERROR_INVALID_VALUE);
    assert_cu(D.instantiate(&x, NULL, 0), CUDA_ERROR_INVALID_VALUE);
    assert_cu(D.instantiate(&x, copies, 1ull << 20), CUDA_ERROR_INVALID_VALUE);
    assert_cu(D.instantiate(&x, copies, 2), CUDA_ERROR_INVALID_VALUE); /* UPLOAD */
    assert_cu(D.instantiate(&x, copies, 4 | 1), CUDA_ERROR_INVALID_VALUE);
    /* DEVICE_LAUNCH: kernels, copies and memsets only, and not empty. */
    assert_cu(D.instantiate(&x, host, 4), CUDA_ERROR_INVALID_VALUE);
    assert_cu(D.instantiate(&x, empty, 4), CUDA_ERROR_INVALID_VALUE);
    assert_null(x);
    size_t execs = cus_fake_live_handles(CUS_FAKE_HANDLE_GRAPH_EXEC);
    assert_cu_ok(D.instantiate(&x, copies, 4));
    assert_cu_ok(D.exec_destroy(x));
    assert_cu_ok(D.instantiate(&x, copies, 8)); /* USE_NODE_PRIORITY */
    CUgraphExec x2 = NULL;
    assert_cu_ok(D.instantiate(&x2, copies, 1)); /* several executable graphs of one graph */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_GRAPH_EXEC), execs + 2);
    assert_cu_ok(D.exec_destroy(x));
    assert_cu_ok(D.exec_destroy(x2));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_GRAPH_EXEC), execs);
    assert_cu_ok(D.graph_destroy(copies));
    assert_cu_ok(D.graph_destroy(host));
    assert_cu_ok(D.graph_destroy(empty));
    assert_cu_ok(D.free(d));
    assert_cu_ok(D.stream_destroy(s));
}

/* ============================================================================
 * cuGraphExecUpdate
 * ========================================================================== */

static CUgraph capture_round_trip(CUstream s, CUdeviceptr d, const uint32_t *in, uint32_t *out)
{
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu_ok(D.htod_async(d, in, N * 4, s));
    assert_cu_ok(D.dtoh_async(out, d, N * 4, s));
    return end_capture(s);
}

static void test_exec_update_replaces_the_parameters(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    CUdeviceptr d1 = new_buffer(N * 4), d2 = new_buffer(N * 4);
    uint32_t *in1 = new_pinned(N * 4), *out1 = new_pinned(N * 4);
    uint32_t *in2 = new_pinned(N * 4), *out2 = new_pinned(N * 4);
    seed(in1, 10);
    seed(in2, 20);
    CUgraph a = capture_round_trip(s, d1, in1, out1);
    CUgraph b = capture_round_trip(s, d2, in2, out2);
    CUgraphExec x = instantiate(a);
    assert_cu_ok(D.graph_launch(x, s)); /* queued before the update: keeps a's */
    CUgraphExecUpdateResultInfo info;
    memset(&info, 0xff, sizeof info);
    assert_cu_ok(D.update(x, b, &info));
    assert_int_equal(info.result, CU_GRAPH_EXEC_UPDATE_SUCCESS);
    assert_null(info.errorNode);
    assert_null(info.errorFromNode);
    assert_cu_ok(D.stream_sync(s));
    assert_int_equal(out1[5], 15);
    assert_int_equal(out2[5], 0);
    assert_cu_ok(D.graph_launch(x, s));
    assert_cu_ok(D.stream_sync(s));
    assert_int_equal(out2[5], 25);
    /* The older variant. */
    CUgraphNode err = (CUgraphNode)(uintptr_t)1;
    CUgraphExecUpdateResult res = CU_GRAPH_EXEC_UPDATE_ERROR;
    assert_cu_ok(D.update_v1(x, a, &err, &res));
    assert_int_equal(res, CU_GRAPH_EXEC_UPDATE_SUCCESS);
    assert_null(err);
    memset(out1, 0, N * 4);
    assert_cu_ok(D.graph_launch(x, s));
    assert_cu_ok(D.stream_sync(s));
    assert_int_equal(out1[5], 15);
    /* Destroying the graphs leaves the executable graph working. */
    assert_cu_ok(D.graph_destroy(a));
    assert_cu_ok(D.graph_destroy(b));
    assert_cu_ok(D.graph_launch(x, s));
    assert_cu_ok(D.stream_sync(s));
    assert_cu_ok(D.exec_destroy(x));
    uint32_t *hosts[] = {in1, out1, in2, out2};
    for (int i = 0; i < 4; i++)
        assert_cu_ok(D.free_host(hosts[i]));
    assert_cu_ok(D.free(d1));
    assert_cu_ok(D.free(d2));
    assert_cu_ok(D.stream_destroy(s));
}

static void expect_update_failure(CUgraphExec x, CUgraph g, CUgraphExecUpdateResult want,
                                  bool node_blamed)
{
    CUgraphExecUpdateResultInfo info;
    memset(&info, 0, sizeof info);
    assert_cu(D.update(x, g, &info), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
    assert_int_equal(info.result, want);
    if (node_blamed)
        assert_non_null(info.errorNode);
    else
        assert_null(info.errorNode);
    CUgraphNode err = NULL;
    CUgraphExecUpdateResult res = CU_GRAPH_EXEC_UPDATE_SUCCESS;
    assert_cu(D.update_v1(x, g, &err, &res), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
    assert_int_equal(res, want);
    assert_ptr_equal(err, info.errorNode);
}

static void test_exec_update_refuses_a_changed_graph(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING), s2 = new_stream(CU_STREAM_NON_BLOCKING);
    CUevent e = new_event();
    CUdeviceptr d = new_buffer(N * 4), d2 = new_buffer(N * 4);
    uint32_t *in = new_pinned(N * 4), *out = new_pinned(N * 4);
    int runs = 0;
    seed(in, 40);
    CUgraph base = capture_round_trip(s, d, in, out);
    CUgraphExec x = instantiate(base);
    /* One node more: the topology. */
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu_ok(D.htod_async(d, in, N * 4, s));
    assert_cu_ok(D.dtoh_async(out, d, N * 4, s));
    assert_cu_ok(D.host_fn(s, count_fn, &runs));
    CUgraph more = end_capture(s);
    expect_update_failure(x, more, CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED, false);
    /* A memset where a copy was: the node type. */
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu_ok(D.htod_async(d, in, N * 4, s));
    assert_cu_ok(D.memset8_async(d, 0, 16, s));
    CUgraph typed = end_capture(s);
    expect_update_failure(x, typed, CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED, true);
    /* Device to device where device to host was: the memory type. */
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu_ok(D.htod_async(d, in, N * 4, s));
    assert_cu_ok(D.dtod_async(d2, d, N * 4, s));
    CUgraph params = end_capture(s);
    expect_update_failure(x, params, CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED, true);
    /* Two independent copies (a fork) where one followed the other: the edges. */
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu_ok(D.event_record(e, s));
    assert_cu_ok(D.wait_event(s2, e, 0));
    assert_cu_ok(D.htod_async(d, in, N * 4, s));
    assert_cu_ok(D.dtoh_async(out, d2, N * 4, s2));
    assert_cu_ok(D.event_record(e, s2));
    assert_cu_ok(D.wait_event(s, e, 0));
    CUgraph edges = end_capture(s);
    CUgraphExecUpdateResultInfo info;
    assert_cu(D.update(x, edges, &info), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
    assert_int_equal(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
    assert_non_null(info.errorNode);
    /* Bad arguments. */
    assert_cu(D.update(x, base, NULL), CUDA_ERROR_INVALID_VALUE);
    assert_cu(D.update(NULL, base, &info), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(info.result, CU_GRAPH_EXEC_UPDATE_ERROR);
    CUgraphNode err;
    assert_cu(D.update_v1(x, base, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
    (void)err;
    /* The executable graph still replays what it had. */
    assert_cu_ok(D.graph_launch(x, s));
    assert_cu_ok(D.stream_sync(s));
    assert_int_equal(out[3], 43);
    assert_int_equal(runs, 0);
    assert_int_equal(cus_fake_misuse_count(), 0);
    CUgraph all[] = {base, more, typed, params, edges};
    for (int i = 0; i < 5; i++)
        assert_cu_ok(D.graph_destroy(all[i]));
    assert_cu_ok(D.exec_destroy(x));
    assert_cu_ok(D.event_destroy(e));
    assert_cu_ok(D.free_host(in));
    assert_cu_ok(D.free_host(out));
    assert_cu_ok(D.free(d));
    assert_cu_ok(D.free(d2));
    assert_cu_ok(D.stream_destroy(s));
    assert_cu_ok(D.stream_destroy(s2));
}

static void test_exec_update_of_kernel_nodes(void **state)
{
    (void)state;
    assert_ok(cus_fake_register_kernel("scale", scale_twin, NULL));
    CUmodule m = load_module();
    CUfunction scale = function(m, "scale"), other = function(m, "other");
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    CUdeviceptr d = new_buffer(N * 4);
    uint32_t *in = new_pinned(N * 4), *out = new_pinned(N * 4);
    int runs = 0;
    seed(in, 1);
    CUgraph by2 = capture_pipeline(s, scale, d, in, out, 2, &runs);
    CUgraph by5 = capture_pipeline(s, scale, d, in, out, 5, &runs);
    CUgraphExec x = instantiate(by2);
    CUgraphExecUpdateResultInfo info;
    assert_cu_ok(D.update(x, by5, &info)); /* new kernel arguments */
    assert_cu_ok(D.graph_launch(x, s));
    assert_cu_ok(D.stream_sync(s));
    assert_int_equal(out[2], 3 * 5);
    /* Another function of the same context is fine too. */
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu_ok(D.htod_async(d, in, N * 4, s));
    CUdeviceptr p = d;
    void *args[] = {&p};
    assert_cu_ok(D.launch(other, 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
    assert_cu_ok(D.dtoh_async(out, d, N * 4, s));
    assert_cu_ok(D.host_fn(s, count_fn, &runs));
    CUgraph swapped = end_capture(s);
    assert_cu_ok(D.update(x, swapped, &info));
    /* A cooperative launch where a plain one was: a parameter change. */
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu_ok(D.htod_async(d, in, N * 4, s));
    CUlaunchAttribute at = {.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE};
    at.value.cooperative = 1;
    CUlaunchConfig cfg = {.gridDimX = 1, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 1,
                          .blockDimY = 1, .blockDimZ = 1, .hStream = s, .attrs = &at,
                          .numAttrs = 1};
    assert_cu_ok(D.launch_ex(&cfg, other, args, NULL));
    assert_cu_ok(D.dtoh_async(out, d, N * 4, s));
    assert_cu_ok(D.host_fn(s, count_fn, &runs));
    CUgraph coop = end_capture(s);
    expect_update_failure(x, coop, CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED, true);
    /* A kernel of another context: an unsupported function change. */
    CUcontext c2 = NULL;
    assert_cu_ok(D.ctx_create(&c2, 0, 0));
    CUmodule m2 = load_module();
    CUstream s2 = new_stream(CU_STREAM_NON_BLOCKING);
    CUdeviceptr d2 = new_buffer(N * 4);
    int runs2 = 0;
    CUgraph foreign = capture_pipeline(s2, function(m2, "scale"), d2, in, out, 2, &runs2);
    expect_update_failure(x, foreign, CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE, true);
    assert_cu_ok(D.graph_destroy(foreign));
    assert_cu_ok(D.free(d2));
    assert_cu_ok(D.stream_destroy(s2));
    assert_cu_ok(D.unload(m2));
    assert_cu_ok(D.ctx_destroy(c2)); /* off the top: ctx is current again */
    CUgraph all[] = {by2, by5, swapped, coop};
    for (int i = 0; i < 4; i++)
        assert_cu_ok(D.graph_destroy(all[i]));
    assert_cu_ok(D.exec_destroy(x));
    assert_ok(cus_fake_register_kernel("scale", NULL, NULL));
    assert_cu_ok(D.free_host(in));
    assert_cu_ok(D.free_host(out));
    assert_cu_ok(D.free(d));
    assert_cu_ok(D.unload(m));
    assert_cu_ok(D.stream_destroy(s));
}

/* ============================================================================
 * misuse: dangling replays, destroyed handles
 * ========================================================================== */

/* The bug cuscope's keep-alive prevents: a replay after the memory it uses
 * was freed is reported, every time, and does nothing. */
static void test_a_replay_of_freed_memory_is_reported(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    CUdeviceptr d = new_buffer(N * 4);
    uint32_t *in = new_pinned(N * 4), *out = new_pinned(N * 4);
    seed(in, 3);
    CUgraph g = capture_round_trip(s, d, in, out);
    CUgraphExec x = instantiate(g);
    assert_cu_ok(D.free(d));
    assert_int_equal(cus_fake_misuse_count(), 0);
    assert_cu_ok(D.graph_launch(x, s)); /* the launch itself is accepted */
    assert_cu_ok(D.stream_sync(s));
    assert_int_equal(cus_fake_misuse_count(), 2); /* both copies */
    assert_contains(cus_fake_last_misuse(), "use after free of device memory");
    assert_contains(cus_fake_last_misuse(), "by cuGraphLaunch queued on stream");
    assert_int_equal(out[0], 0);
    assert_cu_ok(D.graph_launch(x, s));
    assert_cu_ok(D.stream_sync(s));
    assert_int_equal(cus_fake_misuse_count(), 4);
    assert_cu_ok(D.exec_destroy(x));
    assert_cu_ok(D.graph_destroy(g));
    assert_cu_ok(D.free_host(in));
    assert_cu_ok(D.free_host(out));
    assert_cu_ok(D.stream_destroy(s));
}

static void test_a_kernel_replay_with_a_freed_pointer_is_reported(void **state)
{
    (void)state;
    scale_probe pr = {0};
    assert_ok(cus_fake_register_kernel("scale", scale_twin, &pr));
    CUmodule m = load_module();
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    CUdeviceptr d = new_buffer(N * 4);
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu_ok(launch_scale(function(m, "scale"), s, d, N, 2));
    CUgraph g = end_capture(s);
    CUgraphExec x = instantiate(g);
    assert_cu_ok(D.graph_launch(x, s));
    assert_cu_ok(D.stream_sync(s));
    assert_int_equal(pr.runs, 1);
    assert_cu_ok(D.free(d));
    assert_cu_ok(D.graph_launch(x, s));
    assert_cu_ok(D.stream_sync(s));
    assert_int_equal(pr.runs, 1); /* skipped */
    assert_int_equal(cus_fake_misuse_count(), 1);
    assert_contains(cus_fake_last_misuse(), "argument 0 of kernel 'scale'");
    assert_contains(cus_fake_last_misuse(), "use after free");
    /* Unloaded module: the replayed launch is skipped as misuse. */
    assert_cu_ok(D.unload(m));
    assert_cu_ok(D.graph_launch(x, s));
    assert_cu_ok(D.stream_sync(s));
    assert_contains(cus_fake_last_misuse(), "after its module");
    assert_cu_ok(D.exec_destroy(x));
    assert_cu_ok(D.graph_destroy(g));
    assert_ok(cus_fake_register_kernel("scale", NULL, NULL));
    assert_cu_ok(D.stream_destroy(s));
}

static void test_destroyed_graph_handles_are_misuse(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUgraph g = end_capture(s);
    CUgraphExec x = instantiate(g);
    assert_cu_ok(D.graph_destroy(g));
    assert_cu(D.graph_destroy(g), CUDA_ERROR_INVALID_VALUE);
    assert_contains(cus_fake_last_misuse(), "double destroy of graph");
    size_t n = 0;
    assert_cu(D.get_nodes(g, NULL, &n), CUDA_ERROR_INVALID_VALUE);
    assert_contains(cus_fake_last_misuse(), "used after cuGraphDestroy");
    CUgraphExec x2 = NULL;
    assert_cu(D.instantiate(&x2, g, 0), CUDA_ERROR_INVALID_VALUE);
    assert_cu_ok(D.exec_destroy(x));
    assert_cu(D.exec_destroy(x), CUDA_ERROR_INVALID_VALUE);
    assert_contains(cus_fake_last_misuse(), "double destroy of executable graph");
    assert_cu(D.graph_launch(x, s), CUDA_ERROR_INVALID_VALUE);
    assert_contains(cus_fake_last_misuse(), "used after cuGraphExecDestroy");
    assert_cu(D.graph_launch((CUgraphExec)(uintptr_t)&n, s), CUDA_ERROR_INVALID_VALUE);
    assert_contains(cus_fake_last_misuse(), "unknown executable graph");
    assert_cu(D.graph_destroy((CUgraph)(uintptr_t)&n), CUDA_ERROR_INVALID_VALUE);
    assert_contains(cus_fake_last_misuse(), "unknown graph");
    assert_int_equal(cus_fake_misuse_count(), 7);
    assert_cu_ok(D.stream_destroy(s));
}

/* ============================================================================
 * handles: leaks, streams and contexts going away, poisoned contexts
 * ========================================================================== */

static void test_graph_handles_are_counted(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    size_t any = cus_fake_live_handles(CUS_FAKE_HANDLE_ANY);
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUgraph g = end_capture(s);
    CUgraphExec x = instantiate(g);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_GRAPH), 1);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_GRAPH_EXEC), 1);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), any + 2);
    /* A leaked graph is what the teardown check sees. */
    assert_cu_ok(D.graph_destroy(g));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), any + 1);
    assert_cu_ok(D.exec_destroy(x));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), any);
    assert_cu_ok(D.stream_destroy(s));
}

static void test_a_stream_destroyed_while_capturing(void **state)
{
    (void)state;
    CUstream s1 = new_stream(CU_STREAM_NON_BLOCKING), s2 = new_stream(CU_STREAM_NON_BLOCKING);
    CUevent e = new_event();
    int runs = 0;
    size_t handles = cus_fake_live_handles(CUS_FAKE_HANDLE_ANY);
    /* A joined stream: the capture is invalidated. */
    assert_cu_ok(D.begin(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu_ok(D.event_record(e, s1));
    assert_cu_ok(D.wait_event(s2, e, 0));
    assert_cu_ok(D.stream_destroy(s2));
    assert_int_equal(status_of(s1), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    CUgraph g = NULL;
    assert_cu(D.end(s1, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    /* The origin: the capture and its graph go. */
    assert_cu_ok(D.begin(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu_ok(D.host_fn(s1, count_fn, &runs));
    assert_cu_ok(D.stream_destroy(s1));
    assert_int_equal(cus_fake_active_captures(), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), handles - 2);
    assert_int_equal(runs, 0);
    assert_cu_ok(D.event_destroy(e));
}

static void test_context_destruction_takes_its_graphs(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING), s2 = new_stream(CU_STREAM_NON_BLOCKING);
    int runs = 0;
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu_ok(D.host_fn(s, count_fn, &runs));
    CUgraph g = end_capture(s);
    CUgraphExec x = instantiate(g);
    assert_cu_ok(D.graph_launch(x, s)); /* queued: runs before the context goes */
    assert_cu_ok(D.begin(s2, CU_STREAM_CAPTURE_MODE_RELAXED)); /* in progress */
    assert_cu_ok(D.ctx_destroy(ctx));
    ctx = NULL;
    assert_int_equal(runs, 1);
    assert_int_equal(cus_fake_active_captures(), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_GRAPH), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_GRAPH_EXEC), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
    assert_int_equal(cus_fake_misuse_count(), 0);
    assert_cu(D.graph_destroy(g), CUDA_ERROR_INVALID_VALUE);
    assert_contains(cus_fake_last_misuse(), "used after its context was destroyed");
    assert_cu(D.exec_destroy(x), CUDA_ERROR_INVALID_VALUE);
    assert_contains(cus_fake_last_misuse(), "used after its context was destroyed");
    assert_int_equal(cus_fake_misuse_count(), 2);
}

/* A joined stream of another context: its context's death breaks the capture. */
static void test_a_joined_stream_of_a_dying_context(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    CUevent e = new_event();
    CUcontext c2 = NULL;
    assert_cu_ok(D.ctx_create(&c2, 0, 0));
    CUstream t = new_stream(CU_STREAM_NON_BLOCKING);
    assert_cu_ok(D.pop(NULL));
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    assert_cu_ok(D.event_record(e, s));
    assert_cu_ok(D.wait_event(t, e, 0));
    assert_int_equal(status_of(t), CU_STREAM_CAPTURE_STATUS_ACTIVE);
    assert_cu_ok(D.ctx_destroy(c2));
    assert_int_equal(status_of(s), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    CUgraph g = NULL;
    assert_cu(D.end(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    assert_int_equal(cus_fake_misuse_count(), 0);
    assert_cu_ok(D.event_destroy(e));
    assert_cu_ok(D.stream_destroy(s));
}

static void test_a_poisoned_context(void **state)
{
    (void)state;
    scale_probe pr = {.result = CUDA_ERROR_ILLEGAL_ADDRESS};
    assert_ok(cus_fake_register_kernel("scale", scale_twin, &pr));
    CUmodule m = load_module();
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING), s2 = new_stream(CU_STREAM_NON_BLOCKING);
    CUdeviceptr d = new_buffer(N * 4);
    int runs = 0;
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu_ok(launch_scale(function(m, "scale"), s, d, N, 2));
    assert_cu_ok(D.host_fn(s, count_fn, &runs));
    CUgraph g = end_capture(s);
    CUgraphExec x = instantiate(g);
    assert_cu_ok(D.begin(s2, CU_STREAM_CAPTURE_MODE_RELAXED));
    assert_cu_ok(D.graph_launch(x, s));
    const CUresult E = CUDA_ERROR_ILLEGAL_ADDRESS;
    assert_cu(D.stream_sync(s), E); /* the replayed kernel faulted */
    assert_int_equal(runs, 1); /* host functions still run */
    /* From now on: the sticky error, but destroys and the end still work. */
    assert_cu(D.graph_launch(x, s), E);
    assert_cu(D.upload(x, s), E);
    CUgraphExec x2 = NULL;
    assert_cu(D.instantiate(&x2, g, 0), E);
    size_t n = 0;
    assert_cu(D.get_nodes(g, NULL, &n), E);
    assert_cu(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL), E);
    CUstreamCaptureStatus st;
    assert_cu(D.is_capturing(s2, &st), E);
    CUgraphExecUpdateResultInfo info;
    assert_cu(D.update(x, g, &info), E);
    CUgraph dropped = (CUgraph)(uintptr_t)1;
    assert_cu(D.end(s2, &dropped), E); /* ended, and nothing returned */
    assert_null(dropped);
    assert_int_equal(cus_fake_active_captures(), 0);
    assert_cu_ok(D.exec_destroy(x));
    assert_cu_ok(D.graph_destroy(g));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_GRAPH), 0);
    assert_cu_ok(D.free(d));
    assert_cu_ok(D.stream_destroy(s));
    assert_cu_ok(D.stream_destroy(s2));
    assert_cu_ok(D.unload(m));
    assert_ok(cus_fake_register_kernel("scale", NULL, NULL));
    assert_cu_ok(D.ctx_destroy(ctx));
    ctx = NULL;
    assert_int_equal(cus_fake_misuse_count(), 0);
}

/* ============================================================================
 * graph memory: allocation and free nodes
 * ========================================================================== */

static void test_allocation_and_free_nodes(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    uint32_t *out = new_pinned(N * 4);
    size_t mem = cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY);
    size_t bytes = cus_fake_device_bytes_in_use(0);
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUdeviceptr p = 0;
    assert_cu_ok(D.alloc_async(&p, N * 4, s));
    assert_true(p != 0);
    assert_cu_ok(D.memset32_async(p, 0x55, N, s));
    assert_cu_ok(D.dtoh_async(out, p, N * 4, s));
    assert_cu_ok(D.free_async(p, s));
    assert_cu(D.free_async(p, s), CUDA_ERROR_INVALID_VALUE); /* freed in this graph already */
    CUgraph g = end_capture(s);
    static const CUgraphNodeType want[] = {CU_GRAPH_NODE_TYPE_MEM_ALLOC, CU_GRAPH_NODE_TYPE_MEMSET,
                                           CU_GRAPH_NODE_TYPE_MEMCPY, CU_GRAPH_NODE_TYPE_MEM_FREE};
    assert_node_types(g, want, 4);
    /* The allocation exists (fixed address) as long as the graph. */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY), mem + 1);
    assert_int_equal(cus_fake_device_bytes_in_use(0), bytes + N * 4);
    CUgraphExec x = instantiate(g);
    /* One executable graph at a time for a graph with memory nodes. */
    CUgraphExec x2 = NULL;
    assert_cu(D.instantiate(&x2, g, 0), CUDA_ERROR_INVALID_VALUE);
    for (int r = 0; r < 3; r++) {
        memset(out, 0, N * 4);
        assert_cu_ok(D.graph_launch(x, s)); /* freed in the graph: relaunchable */
        assert_cu_ok(D.stream_sync(s));
        assert_int_equal(out[N - 1], 0x55);
    }
    assert_cu_ok(D.graph_destroy(g));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY), mem + 1); /* the exec */
    assert_cu_ok(D.graph_launch(x, s));
    assert_cu_ok(D.exec_destroy(x)); /* the queued launch still runs */
    assert_cu_ok(D.stream_sync(s));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY), mem);
    assert_int_equal(cus_fake_device_bytes_in_use(0), bytes);
    assert_int_equal(cus_fake_misuse_count(), 0);
    /* A free node takes a graph allocation only. */
    CUdeviceptr plain = new_buffer(16);
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    assert_cu(D.free_async(plain, s), CUDA_ERROR_INVALID_VALUE);
    g = end_capture(s);
    assert_int_equal(node_count(g), 0);
    assert_cu_ok(D.graph_destroy(g));
    assert_cu_ok(D.free(plain));
    assert_cu_ok(D.free_host(out));
    assert_cu_ok(D.stream_destroy(s));
}

static void test_an_allocation_left_allocated_by_a_launch(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    uint32_t *out = new_pinned(16);
    size_t mem = cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY);
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUdeviceptr p = 0;
    assert_cu_ok(D.alloc_async(&p, 16, s));
    assert_cu_ok(D.memset8_async(p, 9, 16, s));
    CUgraph g = end_capture(s);
    CUgraphExec x = instantiate(g);
    /* Not freeable before a launch allocated it. */
    assert_cu(D.free_async(p, s), CUDA_ERROR_INVALID_VALUE);
    assert_contains(cus_fake_last_misuse(), "no graph launch left allocated");
    assert_cu_ok(D.graph_launch(x, s));
    /* Still allocated: a relaunch is refused, and nothing is queued. */
    assert_cu(D.graph_launch(x, s), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cus_fake_stream_pending(s), 2);
    /* It is usable after the launch, in stream order, like any allocation. */
    assert_cu_ok(D.dtoh_async(out, p, 16, s));
    assert_cu_ok(D.stream_sync(s));
    assert_int_equal(out[0], 0x09090909u);
    assert_cu_ok(D.free_async(p, s));
    assert_cu_ok(D.graph_launch(x, s));
    assert_cu_ok(D.stream_sync(s));
    assert_cu_ok(D.free(p)); /* cuMemFree too */
    /* AUTO_FREE_ON_LAUNCH relaunches over it. */
    assert_cu_ok(D.exec_destroy(x));
    assert_cu_ok(D.instantiate(&x, g, 1));
    assert_cu_ok(D.graph_launch(x, s));
    assert_cu_ok(D.graph_launch(x, s));
    assert_cu_ok(D.stream_sync(s));
    assert_cu_ok(D.exec_destroy(x));
    assert_cu_ok(D.graph_destroy(g));
    /* Left allocated by the last launch: it lives on until freed. */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY), mem + 1);
    assert_cu_ok(D.dtoh_async(out, p, 16, s));
    assert_cu_ok(D.free_async(p, s));
    assert_cu_ok(D.stream_sync(s));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY), mem);
    /* And now it is gone for good. */
    assert_int_equal(cus_fake_misuse_count(), 1);
    assert_cu(D.dtoh_async(out, p, 16, s), CUDA_ERROR_INVALID_VALUE);
    assert_contains(cus_fake_last_misuse(), "graph allocation");
    assert_cu_ok(D.free_host(out));
    assert_cu_ok(D.stream_destroy(s));
}

static void test_graph_memory_outside_its_lifetime_is_reported(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    uint32_t *out = new_pinned(16);
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUdeviceptr p = 0;
    assert_cu_ok(D.alloc_async(&p, 16, s));
    assert_cu_ok(D.free_async(p, s));
    CUgraph g = end_capture(s);
    /* Before any launch, and after one (it freed it). */
    assert_cu_ok(D.dtoh_async(out, p, 16, s));
    assert_cu_ok(D.stream_sync(s));
    assert_int_equal(cus_fake_misuse_count(), 1);
    assert_contains(cus_fake_last_misuse(), "outside its lifetime");
    CUgraphExec x = instantiate(g);
    assert_cu_ok(D.graph_launch(x, s));
    assert_cu_ok(D.dtoh_async(out, p, 16, s));
    assert_cu_ok(D.stream_sync(s));
    assert_int_equal(cus_fake_misuse_count(), 2);
    assert_cu_ok(D.exec_destroy(x));
    assert_cu_ok(D.graph_destroy(g));
    assert_cu_ok(D.free_host(out));
    assert_cu_ok(D.stream_destroy(s));
}

/* Another graph may free an allocation that a launch left allocated. */
static void test_a_graph_frees_another_graphs_allocation(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    size_t mem = cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY);
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUdeviceptr p = 0;
    assert_cu_ok(D.alloc_async(&p, 64, s));
    CUgraph alloc = end_capture(s);
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu_ok(D.memset8_async(p, 3, 64, s));
    assert_cu_ok(D.free_async(p, s));
    CUgraph use_and_free = end_capture(s);
    static const CUgraphNodeType want[] = {CU_GRAPH_NODE_TYPE_MEMSET, CU_GRAPH_NODE_TYPE_MEM_FREE};
    assert_node_types(use_and_free, want, 2);
    CUgraphExec xa = instantiate(alloc), xf = instantiate(use_and_free);
    for (int r = 0; r < 2; r++) {
        assert_cu_ok(D.graph_launch(xa, s));
        assert_cu_ok(D.graph_launch(xf, s));
    }
    assert_cu_ok(D.stream_sync(s));
    assert_int_equal(cus_fake_misuse_count(), 0);
    /* Freed already: a second free is a double free, refused at the launch. */
    assert_cu(D.graph_launch(xf, s), CUDA_ERROR_INVALID_VALUE);
    assert_contains(cus_fake_last_misuse(), "double free");
    assert_int_equal(cus_fake_stream_pending(s), 0);
    assert_cu_ok(D.exec_destroy(xa));
    assert_cu_ok(D.exec_destroy(xf));
    assert_cu_ok(D.graph_destroy(alloc));
    assert_cu_ok(D.graph_destroy(use_and_free));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY), mem);
    assert_cu_ok(D.stream_destroy(s));
}

/* A context's death takes its graph allocations, allocated or not. */
static void test_graph_memory_goes_with_its_context(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUdeviceptr p = 0, q = 0;
    assert_cu_ok(D.alloc_async(&p, 64, s));
    assert_cu_ok(D.alloc_async(&q, 64, s));
    assert_cu_ok(D.free_async(q, s));
    CUgraph g = end_capture(s);
    CUgraphExec x = instantiate(g);
    assert_cu_ok(D.graph_launch(x, s)); /* leaves p allocated */
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUdeviceptr r = 0;
    assert_cu_ok(D.alloc_async(&r, 64, s)); /* in a capture in progress */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY), 3);
    assert_cu_ok(D.ctx_destroy(ctx));
    ctx = NULL;
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
    assert_int_equal(cus_fake_device_bytes_in_use(0), 0);
    assert_int_equal(cus_fake_misuse_count(), 0);
}

static void test_a_prefetch_cannot_be_captured(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    CUdeviceptr m = 0;
    assert_cu_ok(D.alloc_managed(&m, 64, CU_MEM_ATTACH_GLOBAL));
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu(D.prefetch(m, 64, 0, s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CUgraph g = NULL;
    assert_cu(D.end(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    assert_cu_ok(D.free(m));
    assert_cu_ok(D.stream_destroy(s));
}

/* ============================================================================
 * threads and faults
 * ========================================================================== */

enum { THREADS = 4, REPLAYS = 25 };

typedef struct replay_arg {
    CUresult r;
    int runs;
    uint32_t last;
} replay_arg;

/* Each thread captures its own pipeline and replays it, while the others do. */
static void *replay_worker(void *p)
{
    replay_arg *a = p;
    CUstream s = NULL;
    CUdeviceptr d = 0;
    uint32_t in[N], out[N];
    CUgraph g = NULL;
    CUgraphExec x = NULL;
    CUfunction f = NULL;
    CUmodule m = NULL;
    a->r = D.push(ctx);
    if (a->r == CUDA_SUCCESS)
        a->r = D.load_data(&m, graph_ptx);
    if (a->r == CUDA_SUCCESS)
        a->r = D.get_function(&f, m, "scale");
    if (a->r == CUDA_SUCCESS)
        a->r = D.stream_create(&s, CU_STREAM_NON_BLOCKING);
    if (a->r == CUDA_SUCCESS)
        a->r = D.alloc(&d, sizeof in);
    if (a->r == CUDA_SUCCESS)
        a->r = D.begin(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
    if (a->r == CUDA_SUCCESS) {
        (void)D.htod_async(d, in, sizeof in, s);
        (void)launch_scale(f, s, d, N, 2);
        (void)D.dtoh_async(out, d, sizeof out, s);
        (void)D.host_fn(s, count_fn, &a->runs);
        a->r = D.end(s, &g);
    }
    if (a->r == CUDA_SUCCESS)
        a->r = D.instantiate(&x, g, 0);
    for (int i = 0; a->r == CUDA_SUCCESS && i < REPLAYS; i++) {
        for (int j = 0; j < N; j++)
            in[j] = (uint32_t)(i + j);
        a->r = D.graph_launch(x, s);
        if (a->r == CUDA_SUCCESS)
            a->r = D.stream_sync(s);
        a->last = out[N - 1];
    }
    if (x)
        (void)D.exec_destroy(x);
    if (g)
        (void)D.graph_destroy(g);
    if (d)
        (void)D.free(d);
    if (s)
        (void)D.stream_destroy(s);
    if (m)
        (void)D.unload(m);
    CUcontext popped;
    (void)D.pop(&popped);
    return NULL;
}

static void test_threads_capture_and_replay_concurrently(void **state)
{
    (void)state;
    assert_ok(cus_fake_register_kernel("scale", scale_twin, NULL));
    pthread_t t[THREADS];
    replay_arg a[THREADS];
    memset(a, 0, sizeof a);
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, replay_worker, &a[i]), 0);
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    for (int i = 0; i < THREADS; i++) {
        assert_cu_ok(a[i].r);
        assert_int_equal(a[i].runs, REPLAYS);
        assert_int_equal(a[i].last, (uint32_t)(REPLAYS - 1 + N - 1) * 2u);
    }
    assert_ok(cus_fake_register_kernel("scale", NULL, NULL));
    assert_int_equal(cus_fake_misuse_count(), 0);
}

/* One entry point of the graph family, with valid arguments. */
typedef struct fault_fixture {
    CUstream s, s2;
    CUgraph g, g2;
    CUgraphExec x;
    CUevent e;
} fault_fixture;

static CUresult call_entry(int i, fault_fixture *fx, CUgraph *out_graph, CUgraphExec *out_exec)
{
    CUstreamCaptureStatus st;
    cuuint64_t id;
    CUgraphNode node = NULL;
    size_t n = 1;
    CUgraphNodeType t;
    CUgraphExecUpdateResultInfo info;
    CUgraphExecUpdateResult res;
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
    switch (i) {
    case 0:
        return D.begin(fx->s2, CU_STREAM_CAPTURE_MODE_GLOBAL);
    case 1:
        return D.end(fx->s2, out_graph);
    case 2:
        return D.is_capturing(fx->s, &st);
    case 3:
        return D.info(fx->s, &st, &id);
    case 4:
        return D.info_v2(fx->s, &st, &id, NULL, NULL, NULL);
    case 5:
        return D.exchange_mode(&mode);
    case 6:
        return D.graph_destroy(*out_graph);
    case 7:
        return D.get_nodes(fx->g, &node, &n);
    case 8:
        n = 1;
        (void)D.get_nodes(fx->g, &node, &n);
        return D.node_type(node, &t);
    case 9:
        return D.instantiate(out_exec, fx->g, 0);
    case 10:
        return D.exec_destroy(*out_exec);
    case 11:
        return D.graph_launch(fx->x, fx->s);
    case 12:
        return D.upload(fx->x, fx->s);
    case 13:
        return D.update_v1(fx->x, fx->g2, &node, &res);
    case 14:
        return D.update(fx->x, fx->g2, &info);
    default:
        return CUDA_ERROR_UNKNOWN;
    }
}

static void test_fault_injection_on_every_graph_entry_point(void **state)
{
    (void)state;
    static const char *const names[] = {
        "cuStreamBeginCapture", "cuStreamEndCapture", "cuStreamIsCapturing",
        "cuStreamGetCaptureInfo", "cuStreamGetCaptureInfo_v2",
        "cuThreadExchangeStreamCaptureMode", "cuGraphDestroy", "cuGraphGetNodes",
        "cuGraphNodeGetType", "cuGraphInstantiateWithFlags", "cuGraphExecDestroy",
        "cuGraphLaunch", "cuGraphUpload", "cuGraphExecUpdate", "cuGraphExecUpdate_v2",
    };
    fault_fixture fx;
    memset(&fx, 0, sizeof fx);
    int runs = 0;
    fx.s = new_stream(CU_STREAM_NON_BLOCKING);
    fx.s2 = new_stream(CU_STREAM_NON_BLOCKING);
    assert_cu_ok(D.begin(fx.s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu_ok(D.host_fn(fx.s, count_fn, &runs));
    fx.g = end_capture(fx.s);
    assert_cu_ok(D.begin(fx.s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu_ok(D.host_fn(fx.s, count_fn, &runs));
    fx.g2 = end_capture(fx.s);
    fx.x = instantiate(fx.g);
    CUgraph made = NULL;
    CUgraphExec made_exec = NULL;
    for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++) {
        /* What a destroy destroys exists before it. */
        if (i == 6)
            assert_non_null(made);
        if (i == 10)
            assert_non_null(made_exec);
        unsigned long fired = cus_fake_faults_fired();
        unsigned long calls = cus_fake_calls_of(names[i]);
        size_t handles = cus_fake_live_handles(CUS_FAKE_HANDLE_ANY);
        size_t captures = cus_fake_active_captures();
        size_t pending = cus_fake_stream_pending(fx.s);
        assert_ok(cus_fake_fail_entry(names[i], 1, CUDA_ERROR_UNKNOWN, false));
        CUgraph g_before = made;
        CUgraphExec x_before = made_exec;
        CUresult r = call_entry(i, &fx, &made, &made_exec);
        if (r != CUDA_ERROR_UNKNOWN)
            fail_msg("%s under a fault: %d", names[i], (int)r);
        assert_int_equal(cus_fake_faults_fired(), fired + 1);
        assert_int_equal(cus_fake_calls_of(names[i]), calls + 1);
        /* It did nothing: no handle, capture, queued work or out value changed. */
        assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), handles);
        assert_int_equal(cus_fake_active_captures(), captures);
        assert_int_equal(cus_fake_stream_pending(fx.s), pending);
        assert_ptr_equal(made, g_before);
        assert_ptr_equal(made_exec, x_before);
        r = call_entry(i, &fx, &made, &made_exec); /* the fault is spent */
        if (r != CUDA_SUCCESS)
            fail_msg("%s after the fault: %d", names[i], (int)r);
    }
    /* A persistent fault on the end leaves the capture open; it ends once cleared. */
    assert_cu_ok(D.begin(fx.s2, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_ok(cus_fake_fail_entry("cuStreamEndCapture", 1, CUDA_ERROR_UNKNOWN, true));
    CUgraph g = NULL;
    assert_cu(D.end(fx.s2, &g), CUDA_ERROR_UNKNOWN);
    assert_cu(D.end(fx.s2, &g), CUDA_ERROR_UNKNOWN);
    assert_int_equal(status_of(fx.s2), CU_STREAM_CAPTURE_STATUS_ACTIVE);
    cus_fake_clear_faults();
    g = end_capture(fx.s2);
    assert_cu_ok(D.graph_destroy(g));
    assert_cu_ok(D.stream_sync(fx.s));
    assert_int_equal(runs, 1);
    assert_cu_ok(D.exec_destroy(fx.x));
    assert_cu_ok(D.graph_destroy(fx.g));
    assert_cu_ok(D.graph_destroy(fx.g2));
    assert_cu_ok(D.stream_destroy(fx.s));
    assert_cu_ok(D.stream_destroy(fx.s2));
    assert_int_equal(cus_fake_misuse_count(), 0);
}

/* A fault on the N-th call of a capture-and-replay sequence, for every N:
 * whatever fails, the sequence's cleanup leaves nothing alive. */
static CUresult sequence(CUstream s, int *runs)
{
    CUgraph g = NULL;
    CUgraphExec x = NULL;
    CUresult r = D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    if (r != CUDA_SUCCESS)
        return r;
    r = D.host_fn(s, count_fn, runs);
    CUresult re = D.end(s, &g);
    if (r == CUDA_SUCCESS)
        r = re;
    if (r == CUDA_SUCCESS)
        r = D.instantiate(&x, g, 0);
    if (r == CUDA_SUCCESS)
        r = D.graph_launch(x, s);
    if (r == CUDA_SUCCESS)
        r = D.stream_sync(s);
    if (x && D.exec_destroy(x) != CUDA_SUCCESS && r == CUDA_SUCCESS)
        r = CUDA_ERROR_UNKNOWN;
    if (g && D.graph_destroy(g) != CUDA_SUCCESS && r == CUDA_SUCCESS)
        r = CUDA_ERROR_UNKNOWN;
    return r;
}

static void test_a_fault_anywhere_in_a_sequence_leaves_a_consistent_state(void **state)
{
    (void)state;
    CUstream s = new_stream(CU_STREAM_NON_BLOCKING);
    int runs = 0;
    size_t handles = cus_fake_live_handles(CUS_FAKE_HANDLE_ANY);
    for (unsigned long k = 1; k < 20; k++) {
        cus_fake_fail_call(k, CUDA_ERROR_UNKNOWN, false);
        CUresult r = sequence(s, &runs);
        bool fired = cus_fake_faults_fired() > 0;
        cus_fake_fail_call(0, CUDA_SUCCESS, false);
        if (!fired) {
            assert_cu_ok(r);
            break;
        }
        assert_cu(r, CUDA_ERROR_UNKNOWN);
        /* A failed end leaves the capture open (the injected failure did nothing). */
        if (status_of(s) != CU_STREAM_CAPTURE_STATUS_NONE) {
            CUgraph g = NULL;
            CUresult re = D.end(s, &g);
            assert_true(re == CUDA_SUCCESS || re == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
            if (g)
                assert_cu_ok(D.graph_destroy(g));
        }
        /* A failed destroy leaves its handle: the only live handles left. */
        cus_fake_run_streams();
        assert_int_equal(cus_fake_active_captures(), 0);
        assert_true(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY) <= handles + 1);
        assert_ok(cus_fake_install(NULL));
        load_raw();
        assert_cu_ok(D.init(0));
        assert_cu_ok(D.ctx_create(&ctx, 0, 0));
        s = new_stream(CU_STREAM_NON_BLOCKING);
        handles = cus_fake_live_handles(CUS_FAKE_HANDLE_ANY);
    }
    assert_cu_ok(D.stream_destroy(s));
    assert_int_equal(cus_fake_misuse_count(), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        G_TEST(test_entry_points_resolve_at_their_versions),
        G_TEST(test_captured_work_is_recorded_not_run),
        G_TEST(test_an_empty_capture_is_an_empty_graph),
        G_TEST(test_work_queued_before_the_capture_still_runs),
        G_TEST(test_get_nodes_fills_up_to_the_count),
        MISUSE_TEST(test_node_get_type_errors),
        G_TEST(test_begin_capture_errors),
        MISUSE_TEST(test_begin_capture_on_a_destroyed_stream_is_misuse),
        G_TEST(test_end_capture_errors),
        G_TEST(test_end_capture_from_another_thread),
        G_TEST(test_synchronizing_a_capturing_stream_invalidates_it),
        G_TEST(test_the_legacy_stream_is_blocked_by_a_blocking_capture),
        G_TEST(test_unsafe_calls_follow_the_capture_modes),
        G_TEST(test_a_relaxed_capture_allows_synchronous_copies),
        G_TEST(test_fork_and_join_across_streams),
        G_TEST(test_an_unjoined_fork_fails_the_end),
        G_TEST(test_waits_across_capture_boundaries),
        G_TEST(test_capture_info_of_every_variant),
        G_TEST(test_replay_copies_kernel_and_host_function_every_time),
        G_TEST(test_graph_launch_and_upload_errors),
        G_TEST(test_instantiate_flags_and_errors),
        G_TEST(test_exec_update_replaces_the_parameters),
        G_TEST(test_exec_update_refuses_a_changed_graph),
        G_TEST(test_exec_update_of_kernel_nodes),
        MISUSE_TEST(test_a_replay_of_freed_memory_is_reported),
        MISUSE_TEST(test_a_kernel_replay_with_a_freed_pointer_is_reported),
        MISUSE_TEST(test_destroyed_graph_handles_are_misuse),
        G_TEST(test_graph_handles_are_counted),
        G_TEST(test_a_stream_destroyed_while_capturing),
        MISUSE_TEST(test_context_destruction_takes_its_graphs),
        G_TEST(test_a_joined_stream_of_a_dying_context),
        G_TEST(test_a_poisoned_context),
        G_TEST(test_allocation_and_free_nodes),
        MISUSE_TEST(test_an_allocation_left_allocated_by_a_launch),
        MISUSE_TEST(test_graph_memory_outside_its_lifetime_is_reported),
        MISUSE_TEST(test_a_graph_frees_another_graphs_allocation),
        G_TEST(test_graph_memory_goes_with_its_context),
        G_TEST(test_a_prefetch_cannot_be_captured),
        G_TEST(test_threads_capture_and_replay_concurrently),
        G_TEST(test_fault_injection_on_every_graph_entry_point),
        G_TEST(test_a_fault_anywhere_in_a_sequence_leaves_a_consistent_state),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
