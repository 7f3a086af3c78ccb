/* Probes of driver behaviour that the context-rule table cannot show, because
 * they are about what a call waits for or accepts rather than its status in
 * a context state. Each prints one line "probe <name>: <answer>", the same
 * on the real driver (gpu-probes, gpu suite) and on the fake (probes, unit
 * suite), and both are held to the answers measured on an H200 (driver
 * 580.159.04), kept in `h200` below.
 *
 *   free-waits-own-context     cuMemFree of a buffer of context A while a
 *                              kernel runs on a stream of A: is the kernel
 *                              done when cuMemFree returns?
 *   free-waits-other-context   the same with the buffer in context B (same
 *                              device): does B's free wait for A's kernel?
 *   free-async-waits           cuMemFreeAsync on A's stream: the call itself
 *                              does not wait (the control).
 *   capture-per-thread-*       capture of the per-thread default stream
 *                              (cuStreamBeginCapture(CU_STREAM_PER_THREAD)):
 *                              begin, a launch into it, end, the node count.
 *   capture-legacy-begin       the same on the legacy default stream.
 *   release-<call>-<case>      a release's driver call (cuMemFree,
 *                              cuMemFreeHost, cuModuleUnload, cuEventDestroy,
 *                              cuStreamDestroy, cuGraphExecDestroy,
 *                              cuGraphDestroy, cuMemFreeAsync on another
 *                              stream) made while a capture is open, and how
 *                              the capture ends: the case says which thread
 *                              calls (own: the capturing one, other: another),
 *                              the capture's mode (global, local) and the
 *                              caller's interaction mode (default, or
 *                              relaxed through cuThreadExchangeStreamCaptureMode).
 *   capture-info-legacy-no-context  cuStreamGetCaptureInfo of the legacy
 *                              stream with no context current.
 *
 * On the fake, "the kernel is done" is asked with cuStreamQuery in
 * CUS_FAKE_QUERY_NONE mode, where queued work stays queued until
 * something waits for it: a call that waits runs it, one that does not
 * leaves it pending. */
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#include <cudaTypedefs.h>

#include "cuscope/driver.h"
#ifdef CUS_TEST_FAKE
#include "cuscope/fake.h"
#else
#include "../harness/libcuda.h"
#endif

/* A kernel that spins for `cycles` clock cycles (0.25 s at 2 GHz for 5e8). */
static const char spin_ptx[] = ".version 8.0\n.target sm_80\n.address_size 64\n"
                               ".visible .entry spin(.param .u64 cycles)\n{\n"
                               "\t.reg .u64 %rd<5>;\n\t.reg .pred %p;\n"
                               "\tld.param.u64 %rd1, [cycles];\n"
                               "\tmov.u64 %rd2, %clock64;\n"
                               "LOOP:\n\tmov.u64 %rd3, %clock64;\n"
                               "\tsub.u64 %rd4, %rd3, %rd2;\n"
                               "\tsetp.lt.u64 %p, %rd4, %rd1;\n"
                               "\t@%p bra LOOP;\n\tret;\n}\n";

static cus_driver_resolver resolve;

static void *fn(const char *symbol, int version)
{
    void *p = NULL;
    CUdriverProcAddressQueryResult qs = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (resolve(symbol, &p, version, CU_GET_PROC_ADDRESS_DEFAULT, &qs) != CUDA_SUCCESS ||
        qs != CU_GET_PROC_ADDRESS_SUCCESS || !p) {
        fprintf(stderr, "probes: %s@%d not resolved\n", symbol, version);
        exit(1);
    }
    return p;
}
#define LOAD(var, symbol, version)                                             \
    do {                                                                       \
        void *p_ = fn(symbol, version);                                        \
        memcpy(&(var), &p_, sizeof(var));                                      \
    } while (0)

static struct {
    PFN_cuInit_v2000 init;
    PFN_cuDeviceGet_v2000 device_get;
    PFN_cuCtxCreate_v3020 ctx_create;
    PFN_cuCtxDestroy_v4000 ctx_destroy;
    PFN_cuCtxPushCurrent_v4000 push;
    PFN_cuCtxPopCurrent_v4000 pop;
    PFN_cuCtxSynchronize_v2000 ctx_sync;
    PFN_cuStreamCreate_v2000 stream_create;
    PFN_cuStreamDestroy_v4000 stream_destroy;
    PFN_cuStreamQuery_v2000 stream_query;
    PFN_cuStreamSynchronize_v2000 stream_sync;
    PFN_cuMemAlloc_v3020 alloc;
    PFN_cuMemFree_v3020 free;
    PFN_cuMemAllocAsync_v11020 alloc_async;
    PFN_cuMemFreeAsync_v11020 free_async;
    PFN_cuModuleLoadData_v2000 load;
    PFN_cuModuleUnload_v2000 unload;
    PFN_cuModuleGetFunction_v2000 get_function;
    PFN_cuLaunchKernel_v4000 launch;
    PFN_cuStreamBeginCapture_v10010 begin_capture;
    PFN_cuStreamEndCapture_v10000 end_capture;
    PFN_cuGraphGetNodes_v10000 graph_nodes;
    PFN_cuGraphDestroy_v10000 graph_destroy;
    PFN_cuGetErrorName_v6000 error_name;
    PFN_cuThreadExchangeStreamCaptureMode_v10010 exchange_mode;
    PFN_cuMemAllocHost_v3020 alloc_host;
    PFN_cuMemFreeHost_v2000 free_host;
    PFN_cuEventCreate_v2000 event_create;
    PFN_cuEventRecord_v2000 event_record;
    PFN_cuEventSynchronize_v2000 event_sync;
    PFN_cuEventDestroy_v4000 event_destroy;
    PFN_cuGraphInstantiateWithFlags_v11040 instantiate;
    PFN_cuGraphExecDestroy_v10000 exec_destroy;
    PFN_cuStreamGetCaptureInfo_v10010 capture_info;
} D;

static const char *name(CUresult r)
{
    const char *s = NULL;
    return D.error_name(r, &s) == CUDA_SUCCESS && s ? s : "?";
}

/* The answers of an NVIDIA H200, driver 580.159.04 (CUDA 13.0), 2026-12-04:
 * both builds are held to them. (In the run that gave the release-* lines a
 * 128-byte buffer cut their last word: "end CUDA_ERROR_STREAM_CAPTURE_INVALID"
 * is the start of no other name than ..._INVALIDATED; the second run, with a
 * longer buffer, printed it whole.) */
static const char *const h200[] = {
    "free-waits-own-context: yes (the kernel had finished)",
    "free-waits-other-context: no (the kernel was still running)",
    "free-async-waits: no (the kernel was still running)",
    "capture-per-thread-begin: CUDA_SUCCESS",
    "capture-per-thread-launch: CUDA_SUCCESS",
    "capture-per-thread-end: CUDA_SUCCESS",
    "capture-per-thread-nodes: 1",
    "capture-legacy-begin: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
    "release-free-own-global-default: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, then launch CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, end CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
    "release-free-own-global-relaxed: CUDA_SUCCESS, then launch CUDA_SUCCESS, end CUDA_SUCCESS",
    "release-free-own-local-relaxed: CUDA_SUCCESS, then launch CUDA_SUCCESS, end CUDA_SUCCESS",
    "release-free-other-global-default: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, then launch CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, end CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
    "release-free-other-global-relaxed: CUDA_SUCCESS, then launch CUDA_SUCCESS, end CUDA_SUCCESS",
    "release-free-other-local-default: CUDA_SUCCESS, then launch CUDA_SUCCESS, end CUDA_SUCCESS",
    "release-free-host-own-global-default: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, then launch CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, end CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
    "release-free-host-own-global-relaxed: CUDA_SUCCESS, then launch CUDA_SUCCESS, end CUDA_SUCCESS",
    "release-free-host-own-local-relaxed: CUDA_SUCCESS, then launch CUDA_SUCCESS, end CUDA_SUCCESS",
    "release-free-host-other-global-default: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, then launch CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, end CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
    "release-free-host-other-global-relaxed: CUDA_SUCCESS, then launch CUDA_SUCCESS, end CUDA_SUCCESS",
    "release-free-host-other-local-default: CUDA_SUCCESS, then launch CUDA_SUCCESS, end CUDA_SUCCESS",
    "release-module-unload-own-global-default: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, then launch CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, end CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
    "release-module-unload-own-global-relaxed: CUDA_SUCCESS, then launch CUDA_SUCCESS, end CUDA_SUCCESS",
    "release-module-unload-own-local-relaxed: CUDA_SUCCESS, then launch CUDA_SUCCESS, end CUDA_SUCCESS",
    "release-module-unload-other-global-default: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, then launch CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, end CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
    "release-module-unload-other-global-relaxed: CUDA_SUCCESS, then launch CUDA_SUCCESS, end CUDA_SUCCESS",
    "release-module-unload-other-local-default: CUDA_SUCCESS, then launch CUDA_SUCCESS, end CUDA_SUCCESS",
    "release-event-destroy-own-global-default: CUDA_SUCCESS, then launch CUDA_SUCCESS, end CUDA_SUCCESS",
    "release-event-destroy-own-global-relaxed: CUDA_SUCCESS, then launch CUDA_SUCCESS, end CUDA_SUCCESS",
    "release-event-destroy-own-local-relaxed: CUDA_SUCCESS, then launch CUDA_SUCCESS, end CUDA_SUCCESS",
    "release-event-destroy-other-global-default: CUDA_SUCCESS, then launch CUDA_SUCCESS, end CUDA_SUCCESS",
    "release-event-destroy-other-global-relaxed: CUDA_SUCCESS, then launch CUDA_SUCCESS, end CUDA_SUCCESS",
    "release-event-destroy-other-local-default: CUDA_SUCCESS, then launch CUDA_SUCCESS, end CUDA_SUCCESS",
    "release-stream-destroy-own-global-default: CUDA_SUCCESS, then launch CUDA_SUCCESS, end CUDA_SUCCESS",
    "release-stream-destroy-own-global-relaxed: CUDA_SUCCESS, then launch CUDA_SUCCESS, end CUDA_SUCCESS",
    "release-stream-destroy-own-local-relaxed: CUDA_SUCCESS, then launch CUDA_SUCCESS, end CUDA_SUCCESS",
    "release-stream-destroy-other-global-default: CUDA_SUCCESS, then launch CUDA_SUCCESS, end CUDA_SUCCESS",
    "release-stream-destroy-other-global-relaxed: CUDA_SUCCESS, then launch CUDA_SUCCESS, end CUDA_SUCCESS",
    "release-stream-destroy-other-local-default: CUDA_SUCCESS, then launch CUDA_SUCCESS, end CUDA_SUCCESS",
    "release-graph-exec-destroy-own-global-default: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, then launch CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, end CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
    "release-graph-exec-destroy-own-global-relaxed: CUDA_SUCCESS, then launch CUDA_SUCCESS, end CUDA_SUCCESS",
    "release-graph-exec-destroy-own-local-relaxed: CUDA_SUCCESS, then launch CUDA_SUCCESS, end CUDA_SUCCESS",
    "release-graph-exec-destroy-other-global-default: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, then launch CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, end CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
    "release-graph-exec-destroy-other-global-relaxed: CUDA_SUCCESS, then launch CUDA_SUCCESS, end CUDA_SUCCESS",
    "release-graph-exec-destroy-other-local-default: CUDA_SUCCESS, then launch CUDA_SUCCESS, end CUDA_SUCCESS",
    "release-graph-destroy-own-global-default: CUDA_SUCCESS, then launch CUDA_SUCCESS, end CUDA_SUCCESS",
    "release-graph-destroy-own-global-relaxed: CUDA_SUCCESS, then launch CUDA_SUCCESS, end CUDA_SUCCESS",
    "release-graph-destroy-own-local-relaxed: CUDA_SUCCESS, then launch CUDA_SUCCESS, end CUDA_SUCCESS",
    "release-graph-destroy-other-global-default: CUDA_SUCCESS, then launch CUDA_SUCCESS, end CUDA_SUCCESS",
    "release-graph-destroy-other-global-relaxed: CUDA_SUCCESS, then launch CUDA_SUCCESS, end CUDA_SUCCESS",
    "release-graph-destroy-other-local-default: CUDA_SUCCESS, then launch CUDA_SUCCESS, end CUDA_SUCCESS",
    "release-free-async-own-global-default: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, then launch CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, end CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
    "release-free-async-own-global-relaxed: CUDA_SUCCESS, then launch CUDA_SUCCESS, end CUDA_SUCCESS",
    "release-free-async-own-local-relaxed: CUDA_SUCCESS, then launch CUDA_SUCCESS, end CUDA_SUCCESS",
    "release-free-async-other-global-default: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, then launch CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, end CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
    "release-free-async-other-global-relaxed: CUDA_SUCCESS, then launch CUDA_SUCCESS, end CUDA_SUCCESS",
    "release-free-async-other-local-default: CUDA_SUCCESS, then launch CUDA_SUCCESS, end CUDA_SUCCESS",
    "release-ctx-sync-own-global-default: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, then launch CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, end CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
    "release-ctx-sync-own-global-relaxed: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, then launch CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, end CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
    "release-ctx-sync-own-local-relaxed: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, then launch CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, end CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
    "release-ctx-sync-other-global-default: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, then launch CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, end CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
    "release-ctx-sync-other-global-relaxed: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, then launch CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, end CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
    "release-ctx-sync-other-local-default: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, then launch CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, end CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
    "release-stream-sync-own-global-default: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, then launch CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, end CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
    "release-stream-sync-own-global-relaxed: CUDA_SUCCESS, then launch CUDA_SUCCESS, end CUDA_SUCCESS",
    "release-stream-sync-own-local-relaxed: CUDA_SUCCESS, then launch CUDA_SUCCESS, end CUDA_SUCCESS",
    "release-stream-sync-other-global-default: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, then launch CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, end CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
    "release-stream-sync-other-global-relaxed: CUDA_SUCCESS, then launch CUDA_SUCCESS, end CUDA_SUCCESS",
    "release-stream-sync-other-local-default: CUDA_SUCCESS, then launch CUDA_SUCCESS, end CUDA_SUCCESS",
    "release-event-record-sync-own-global-default: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, then launch CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, end CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
    "release-event-record-sync-own-global-relaxed: CUDA_SUCCESS, then launch CUDA_SUCCESS, end CUDA_SUCCESS",
    "release-event-record-sync-own-local-relaxed: CUDA_SUCCESS, then launch CUDA_SUCCESS, end CUDA_SUCCESS",
    "release-event-record-sync-other-global-default: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, then launch CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, end CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
    "release-event-record-sync-other-global-relaxed: CUDA_SUCCESS, then launch CUDA_SUCCESS, end CUDA_SUCCESS",
    "release-event-record-sync-other-local-default: CUDA_SUCCESS, then launch CUDA_SUCCESS, end CUDA_SUCCESS",
    "capture-info-legacy-no-context: CUDA_ERROR_INVALID_CONTEXT",
};
#define NPROBES (sizeof h200 / sizeof h200[0])

static char answers[128][224];
static size_t nanswers;

static void say(const char *probe, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(const char *probe, const char *fmt, ...)
{
    char v[192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v, sizeof v, fmt, ap);
    va_end(ap);
    printf("probe %s: %s\n", probe, v);
    if (nanswers < 128)
        snprintf(answers[nanswers++], sizeof answers[0], "%s: %s", probe, v);
}

#define CHECK(call)                                                            \
    do {                                                                       \
        CUresult r_ = (call);                                                  \
        if (r_ != CUDA_SUCCESS) {                                              \
            fprintf(stderr, "probes: %s -> %s (line %d)\n", #call, name(r_), __LINE__); \
            exit(1);                                                           \
        }                                                                      \
    } while (0)

static CUfunction spin;
static unsigned long long spin_cycles = 500000000ull;

static void launch_spin(CUstream s)
{
    void *args[] = {&spin_cycles};
    CHECK(D.launch(spin, 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
}

/* Whether the spin queued on s is still running after `what` returned. */
static const char *still_running(CUstream s)
{
    CUresult q = D.stream_query(s);
    return q == CUDA_ERROR_NOT_READY ? "no (the kernel was still running)"
           : q == CUDA_SUCCESS       ? "yes (the kernel had finished)"
                                     : name(q);
}


/* --- releases while a capture is open ------------------------------------------ */

typedef enum {
    REL_FREE, REL_FREE_HOST, REL_UNLOAD, REL_EVENT, REL_STREAM, REL_EXEC, REL_GRAPH,
    REL_FREE_ASYNC, REL_CTX_SYNC, REL_STREAM_SYNC, REL_EVENT_SYNC, REL_COUNT
} release_kind;
static const char *const release_names[REL_COUNT] = {
    "free", "free-host", "module-unload", "event-destroy", "stream-destroy",
    "graph-exec-destroy", "graph-destroy", "free-async",
    /* not releases, but what a release may wait with: the context (the
     * capturing stream's), another stream, an event recorded on it */
    "ctx-sync", "stream-sync", "event-record-sync",
};

typedef struct release_obj {
    release_kind kind;
    CUdeviceptr ptr;
    void *host;
    CUmodule module;
    CUevent event;
    CUstream stream;
    CUgraphExec exec;
    CUgraph graph;
    CUstream other; /* free-async's stream */
} release_obj;

static CUcontext probe_ctx;
static CUstream side; /* where the graphs released are captured */

static void release_make(release_obj *o)
{
    switch (o->kind) {
    case REL_FREE: CHECK(D.alloc(&o->ptr, 4096)); break;
    case REL_FREE_HOST: CHECK(D.alloc_host(&o->host, 4096)); break;
    case REL_UNLOAD: CHECK(D.load(&o->module, spin_ptx)); break;
    case REL_EVENT: CHECK(D.event_create(&o->event, CU_EVENT_DISABLE_TIMING)); break;
    case REL_STREAM: CHECK(D.stream_create(&o->stream, CU_STREAM_NON_BLOCKING)); break;
    case REL_EXEC:
    case REL_GRAPH: {
        CHECK(D.begin_capture(side, CU_STREAM_CAPTURE_MODE_RELAXED));
        void *args[] = {&spin_cycles};
        CHECK(D.launch(spin, 1, 1, 1, 1, 1, 1, 0, side, args, NULL));
        CHECK(D.end_capture(side, &o->graph));
        if (o->kind == REL_EXEC) {
            CHECK(D.instantiate(&o->exec, o->graph, 0));
            CHECK(D.graph_destroy(o->graph));
            o->graph = NULL;
        }
        break;
    }
    case REL_FREE_ASYNC:
        CHECK(D.alloc_async(&o->ptr, 4096, side));
        CHECK(D.stream_sync(side));
        o->other = side;
        break;
    case REL_CTX_SYNC:
    case REL_STREAM_SYNC: break;
    case REL_EVENT_SYNC: CHECK(D.event_create(&o->event, CU_EVENT_DISABLE_TIMING)); break;
    case REL_COUNT: break;
    }
}

static CUresult release_do(release_obj *o)
{
    switch (o->kind) {
    case REL_FREE: return D.free(o->ptr);
    case REL_FREE_HOST: return D.free_host(o->host);
    case REL_UNLOAD: return D.unload(o->module);
    case REL_EVENT: return D.event_destroy(o->event);
    case REL_STREAM: return D.stream_destroy(o->stream);
    case REL_EXEC: return D.exec_destroy(o->exec);
    case REL_GRAPH: return D.graph_destroy(o->graph);
    case REL_FREE_ASYNC: return D.free_async(o->ptr, o->other);
    case REL_CTX_SYNC: return D.ctx_sync();
    case REL_STREAM_SYNC: return D.stream_sync(side);
    case REL_EVENT_SYNC: {
        CUresult r = D.event_record(o->event, side);
        return r ? r : D.event_sync(o->event);
    }
    case REL_COUNT: break;
    }
    return CUDA_ERROR_UNKNOWN;
}

typedef struct release_call {
    release_obj *obj;
    bool relaxed;
    bool push; /* another thread: make the context current there */
    CUresult r;
} release_call;

static void *release_run(void *arg)
{
    release_call *c = arg;
    if (c->push)
        CHECK(D.push(probe_ctx));
    CUstreamCaptureMode old = CU_STREAM_CAPTURE_MODE_RELAXED;
    if (c->relaxed)
        CHECK(D.exchange_mode(&old));
    c->r = release_do(c->obj);
    if (c->relaxed)
        CHECK(D.exchange_mode(&old));
    if (c->push)
        CHECK(D.pop(NULL));
    return NULL;
}

static void release_probe(CUstream s, release_kind kind, bool other, CUstreamCaptureMode mode,
                          bool relaxed)
{
    release_obj o = {.kind = kind};
    release_make(&o);
    CHECK(D.begin_capture(s, mode));
    void *args[] = {&spin_cycles};
    CHECK(D.launch(spin, 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
    release_call c = {&o, relaxed, other, CUDA_SUCCESS};
    if (other) {
        pthread_t t;
        if (pthread_create(&t, NULL, release_run, &c) || pthread_join(t, NULL)) {
            fprintf(stderr, "probes: pthread\n");
            exit(1);
        }
    } else {
        release_run(&c);
    }
    CUresult rl = D.launch(spin, 1, 1, 1, 1, 1, 1, 0, s, args, NULL);
    CUgraph g = NULL;
    CUresult re = D.end_capture(s, &g);
    if (g)
        CHECK(D.graph_destroy(g));
    char probe[96];
    snprintf(probe, sizeof probe, "release-%s-%s-%s-%s", release_names[kind],
             other ? "other" : "own", mode == CU_STREAM_CAPTURE_MODE_GLOBAL ? "global" : "local",
             relaxed ? "relaxed" : "default");
    say(probe, "%s, then launch %s, end %s", name(c.r), name(rl), name(re));
    if (c.r != CUDA_SUCCESS)
        CHECK(release_do(&o));
    if (kind == REL_EVENT_SYNC)
        CHECK(D.event_destroy(o.event));
    CHECK(D.ctx_sync());
}

int main(void)
{
#ifdef CUS_TEST_FAKE
    if (cus_fake_install(NULL) != CUS_SUCCESS)
        return 1;
    cus_fake_set_query_mode(CUS_FAKE_QUERY_NONE);
    resolve = cus_fake_get_proc_address;
#else
    char why[256];
    if (!(resolve = libcuda_resolver(why, sizeof why))) {
        printf("skipping: %s\n", why);
        return 77;
    }
#endif
    LOAD(D.init, "cuInit", 2000);
    LOAD(D.device_get, "cuDeviceGet", 2000);
    LOAD(D.ctx_create, "cuCtxCreate", 3020);
    LOAD(D.ctx_destroy, "cuCtxDestroy", 4000);
    LOAD(D.push, "cuCtxPushCurrent", 4000);
    LOAD(D.pop, "cuCtxPopCurrent", 4000);
    LOAD(D.ctx_sync, "cuCtxSynchronize", 2000);
    LOAD(D.stream_create, "cuStreamCreate", 2000);
    LOAD(D.stream_destroy, "cuStreamDestroy", 4000);
    LOAD(D.stream_query, "cuStreamQuery", 2000);
    LOAD(D.stream_sync, "cuStreamSynchronize", 2000);
    LOAD(D.alloc, "cuMemAlloc", 3020);
    LOAD(D.free, "cuMemFree", 3020);
    LOAD(D.alloc_async, "cuMemAllocAsync", 11020);
    LOAD(D.free_async, "cuMemFreeAsync", 11020);
    LOAD(D.load, "cuModuleLoadData", 2000);
    LOAD(D.unload, "cuModuleUnload", 2000);
    LOAD(D.get_function, "cuModuleGetFunction", 2000);
    LOAD(D.launch, "cuLaunchKernel", 4000);
    LOAD(D.begin_capture, "cuStreamBeginCapture", 10010);
    LOAD(D.end_capture, "cuStreamEndCapture", 10000);
    LOAD(D.graph_nodes, "cuGraphGetNodes", 10000);
    LOAD(D.graph_destroy, "cuGraphDestroy", 10000);
    LOAD(D.error_name, "cuGetErrorName", 6000);
    LOAD(D.exchange_mode, "cuThreadExchangeStreamCaptureMode", 10010);
    LOAD(D.alloc_host, "cuMemAllocHost", 3020);
    LOAD(D.free_host, "cuMemFreeHost", 2000);
    LOAD(D.event_create, "cuEventCreate", 2000);
    LOAD(D.event_record, "cuEventRecord", 2000);
    LOAD(D.event_sync, "cuEventSynchronize", 2000);
    LOAD(D.event_destroy, "cuEventDestroy", 4000);
    LOAD(D.instantiate, "cuGraphInstantiateWithFlags", 11040);
    LOAD(D.exec_destroy, "cuGraphExecDestroy", 10000);
    LOAD(D.capture_info, "cuStreamGetCaptureInfo", 10010);

    CUdevice dev;
    CUresult ir = D.init(0);
    if (ir != CUDA_SUCCESS || D.device_get(&dev, 0) != CUDA_SUCCESS) {
        printf("skipping: no device (%d)\n", (int)ir);
        return 77;
    }
    CUcontext a = NULL, b = NULL;
    CHECK(D.ctx_create(&b, 0, dev)); /* pushed, then popped: B exists, A on top */
    CHECK(D.pop(NULL));
    CHECK(D.ctx_create(&a, 0, dev));
    CUmodule m = NULL;
    CHECK(D.load(&m, spin_ptx));
    CHECK(D.get_function(&spin, m, "spin"));
    CUstream s = NULL;
    CHECK(D.stream_create(&s, CU_STREAM_NON_BLOCKING));

    /* cuMemFree in the kernel's own context */
    CUdeviceptr p = 0;
    CHECK(D.alloc(&p, 1 << 20));
    launch_spin(s);
    CHECK(D.free(p));
    say("free-waits-own-context", "%s", still_running(s));
    CHECK(D.stream_sync(s));

    /* cuMemFree in another context of the device */
    CHECK(D.push(b));
    CHECK(D.alloc(&p, 1 << 20));
    CHECK(D.pop(NULL));
    launch_spin(s);
    CHECK(D.push(b));
    CHECK(D.free(p));
    CHECK(D.pop(NULL));
    say("free-waits-other-context", "%s", still_running(s));
    CHECK(D.stream_sync(s));

    /* cuMemFreeAsync: ordered on the stream, no wait */
    CHECK(D.alloc_async(&p, 1 << 20, s));
    launch_spin(s);
    CHECK(D.free_async(p, s));
    say("free-async-waits", "%s", still_running(s));
    CHECK(D.stream_sync(s));

    /* capture of the per-thread default stream */
    spin_cycles = 1000;
    CUresult rb = D.begin_capture(CU_STREAM_PER_THREAD, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
    say("capture-per-thread-begin", "%s", name(rb));
    if (rb == CUDA_SUCCESS) {
        void *args[] = {&spin_cycles};
        CUresult rl = D.launch(spin, 1, 1, 1, 1, 1, 1, 0, CU_STREAM_PER_THREAD, args, NULL);
        say("capture-per-thread-launch", "%s", name(rl));
        CUgraph g = NULL;
        CUresult re = D.end_capture(CU_STREAM_PER_THREAD, &g);
        say("capture-per-thread-end", "%s", name(re));
        size_t n = 0;
        if (re == CUDA_SUCCESS && g) {
            CHECK(D.graph_nodes(g, NULL, &n));
            CHECK(D.graph_destroy(g));
        }
        say("capture-per-thread-nodes", "%zu", n);
    }
    CUresult rlb = D.begin_capture(CU_STREAM_LEGACY, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
    say("capture-legacy-begin", "%s", name(rlb));
    if (rlb == CUDA_SUCCESS) {
        CUgraph g = NULL;
        (void)D.end_capture(CU_STREAM_LEGACY, &g);
        if (g)
            (void)D.graph_destroy(g);
    }

    /* releases while a capture is open */
    probe_ctx = a;
    CHECK(D.stream_create(&side, CU_STREAM_NON_BLOCKING));
    for (int k = 0; k < REL_COUNT; k++) {
        release_probe(s, (release_kind)k, false, CU_STREAM_CAPTURE_MODE_GLOBAL, false);
        release_probe(s, (release_kind)k, false, CU_STREAM_CAPTURE_MODE_GLOBAL, true);
        release_probe(s, (release_kind)k, false, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, true);
        release_probe(s, (release_kind)k, true, CU_STREAM_CAPTURE_MODE_GLOBAL, false);
        release_probe(s, (release_kind)k, true, CU_STREAM_CAPTURE_MODE_GLOBAL, true);
        release_probe(s, (release_kind)k, true, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, false);
    }
    CHECK(D.stream_destroy(side));

    /* the legacy stream's capture state, no context current */
    {
        CUcontext top = NULL;
        CHECK(D.pop(&top));
        CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
        cuuint64_t id = 0;
        say("capture-info-legacy-no-context", "%s", name(D.capture_info(CU_STREAM_LEGACY, &st, &id)));
        CHECK(D.push(top));
    }

    CHECK(D.stream_destroy(s));
    CHECK(D.unload(m));
    CHECK(D.ctx_destroy(a));
    CHECK(D.ctx_destroy(b));
#ifdef CUS_TEST_FAKE
    (void)cus_fake_uninstall();
#endif
    int failures = nanswers != NPROBES;
    for (size_t i = 0; i < NPROBES; i++) {
        if (i < nanswers && strcmp(answers[i], h200[i]) == 0)
            continue;
        printf("DIFFERENT from the H200: %s (the H200: %s)\n", i < nanswers ? answers[i] : "none",
               h200[i]);
        failures++;
    }
    return failures ? 1 : 0;
}
