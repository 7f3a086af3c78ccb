/* Fixtures of the fake_graph tests: test_fake_graph.c, split by its sections
 * into test_fake_graph_capture.c, test_fake_graph_replay.c,
 * test_fake_graph_handles.c, test_fake_graph_threads.c. What they test,
 * together: */
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
#ifndef CUSCOPE_TEST_FAKE_GRAPH_FIXTURES_H
#define CUSCOPE_TEST_FAKE_GRAPH_FIXTURES_H
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

static inline void load_raw(void)
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

static inline int setup_with(const cus_fake_config *cfg)
{
    if (env_setup_with(cfg))
        return -1;
    load_raw();
    ctx = NULL;
    if (D.init(0) != CUDA_SUCCESS || D.ctx_create(&ctx, 0, 0) != CUDA_SUCCESS)
        return -1;
    return 0;
}

static inline int g_setup(void **state)
{
    (void)state;
    return setup_with(NULL);
}

static inline int g_teardown(void **state)
{
    if (ctx) {
        assert_cu_ok(D.ctx_destroy(ctx));
        ctx = NULL;
    }
    assert_int_equal(cus_fake_active_captures(), 0);
    return env_teardown(state);
}

static inline int g_teardown_after_misuse(void **state)
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

static inline CUstream new_stream(unsigned int flags)
{
    CUstream s = NULL;
    assert_cu_ok(D.stream_create(&s, flags));
    return s;
}

static inline CUevent new_event(void)
{
    CUevent e = NULL;
    assert_cu_ok(D.event_create(&e, CU_EVENT_DISABLE_TIMING));
    return e;
}

static inline CUdeviceptr new_buffer(size_t bytes)
{
    CUdeviceptr p = 0;
    assert_cu_ok(D.alloc(&p, bytes));
    return p;
}

static inline uint32_t *new_pinned(size_t bytes)
{
    void *p = NULL;
    assert_cu_ok(D.host_alloc(&p, bytes, 0));
    memset(p, 0, bytes);
    return p;
}

static inline CUstreamCaptureStatus status_of(CUstream s)
{
    CUstreamCaptureStatus st = (CUstreamCaptureStatus)-1;
    assert_cu_ok(D.is_capturing(s, &st));
    return st;
}

static inline size_t node_count(CUgraph g)
{
    size_t n = 12345;
    assert_cu_ok(D.get_nodes(g, NULL, &n));
    return n;
}

static inline CUgraphNodeType type_of(CUgraphNode n)
{
    CUgraphNodeType t = (CUgraphNodeType)-1;
    assert_cu_ok(D.node_type(n, &t));
    return t;
}

/* The types of g's nodes, in order, against want[0..n). */
static inline void assert_node_types(CUgraph g, const CUgraphNodeType *want, size_t n)
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

static inline CUgraphExec instantiate(CUgraph g)
{
    CUgraphExec x = NULL;
    assert_cu_ok(D.instantiate(&x, g, 0));
    assert_non_null(x);
    return x;
}

static inline CUgraph end_capture(CUstream s)
{
    CUgraph g = NULL;
    assert_cu_ok(D.end(s, &g));
    assert_non_null(g);
    return g;
}

static inline void seed(uint32_t *p, uint32_t base)
{
    for (int i = 0; i < N; i++)
        p[i] = base + (uint32_t)i;
}

/* A host function counting its runs. */
static inline void CUDA_CB count_fn(void *p)
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

static inline CUresult scale_twin(const cus_fake_launch *l, void **args, void *user)
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

static inline CUmodule load_module(void)
{
    CUmodule m = NULL;
    assert_cu_ok(D.load_data(&m, graph_ptx));
    return m;
}

static inline CUfunction function(CUmodule m, const char *name)
{
    CUfunction f = NULL;
    assert_cu_ok(D.get_function(&f, m, name));
    return f;
}

static inline CUresult launch_scale(CUfunction f, CUstream s, CUdeviceptr p, uint32_t n, uint32_t k)
{
    void *args[] = {&p, &n, &k};
    return D.launch(f, 1, 1, 1, 32, 1, 1, 0, s, args, NULL);
}

/* Captures on s: in -> d (H2D), scale(d, N, k), d -> out (D2H), and a host
 * function bumping *runs: four nodes. */
static inline CUgraph capture_pipeline(CUstream s, CUfunction f, CUdeviceptr d, const uint32_t *in,
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
 * cuGraphExecUpdate
 * ========================================================================== */

static inline CUgraph capture_round_trip(CUstream s, CUdeviceptr d, const uint32_t *in,
                                         uint32_t *out)
{
    assert_cu_ok(D.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_cu_ok(D.htod_async(d, in, N * 4, s));
    assert_cu_ok(D.dtoh_async(out, d, N * 4, s));
    return end_capture(s);
}

#endif
