/* The rows' calls: one valid call per entry point, with the fixture's handles
 * (rules.h). A call that makes something records it in *o (on success only),
 * so that the teardown frees it. The row list itself is RULES_ROWS in
 * rules.h; both are written in its order. */
#include <stdlib.h>
#include <string.h>

#include "rules.h"

rules_driver drv;

#define UNUSED __attribute__((unused))
#define CALL(symbol, version)                                                  \
    static CUresult call_##symbol##_##version(const rules_args *a UNUSED, rules_out *o UNUSED)
/* What a successful call made, for the teardown. */
#define KEEP(r, field, value)                                                  \
    do {                                                                       \
        if ((r) == CUDA_SUCCESS)                                               \
            (field) = (value);                                                 \
    } while (0)

enum { COPY_BYTES = 256 };

static void CUDA_CB host_noop(void *data)
{
    (void)data;
}

/* The entry points outside the rules have no call. */
#define call_cuGetProcAddress_12000 NULL
#define call_cuGetErrorName_6000 NULL
#define call_cuGetErrorString_6000 NULL

/* --- the process, devices and primary contexts --------------------------------------- */

CALL(cuDriverGetVersion, 2020)
{
    int v;
    return drv.cuDriverGetVersion_2020(&v);
}

CALL(cuInit, 2000)
{
    return drv.cuInit_2000(0);
}

CALL(cuDeviceGetCount, 2000)
{
    int n;
    return drv.cuDeviceGetCount_2000(&n);
}

CALL(cuDeviceGet, 2000)
{
    CUdevice d;
    return drv.cuDeviceGet_2000(&d, 0);
}

CALL(cuDeviceGetName, 2000)
{
    char name[128];
    return drv.cuDeviceGetName_2000(name, (int)sizeof name, a->dev);
}

CALL(cuDeviceGetUuid, 11040)
{
    CUuuid u;
    return drv.cuDeviceGetUuid_11040(&u, a->dev);
}

CALL(cuDeviceTotalMem, 3020)
{
    size_t bytes;
    return drv.cuDeviceTotalMem_3020(&bytes, a->dev);
}

CALL(cuDeviceGetAttribute, 2000)
{
    int v;
    return drv.cuDeviceGetAttribute_2000(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, a->dev);
}

CALL(cuDevicePrimaryCtxRetain, 7000)
{
    CUcontext c;
    CUresult r = drv.cuDevicePrimaryCtxRetain_7000(&c, a->dev);
    KEEP(r, o->primary, true);
    return r;
}

CALL(cuDevicePrimaryCtxRelease, 11000)
{
    return drv.cuDevicePrimaryCtxRelease_11000(a->dev);
}

/* --- contexts ---------------------------------------------------------------------------- */

CALL(cuCtxCreate, 3020)
{
    CUcontext c;
    CUresult r = drv.cuCtxCreate_3020(&c, 0, a->dev);
    KEEP(r, o->ctx, c);
    return r;
}

CALL(cuCtxCreate, 11040)
{
    CUcontext c;
    CUresult r = drv.cuCtxCreate_11040(&c, NULL, 0, 0, a->dev);
    KEEP(r, o->ctx, c);
    return r;
}

CALL(cuCtxCreate, 12050)
{
    CUcontext c;
    CUctxCreateParams params;
    memset(&params, 0, sizeof params);
    CUresult r = drv.cuCtxCreate_12050(&c, &params, 0, a->dev);
    KEEP(r, o->ctx, c);
    return r;
}

CALL(cuCtxDestroy, 4000)
{
    return drv.cuCtxDestroy_4000(a->ctx);
}

CALL(cuCtxPushCurrent, 4000)
{
    return drv.cuCtxPushCurrent_4000(a->ctx);
}

CALL(cuCtxPopCurrent, 4000)
{
    CUcontext c;
    return drv.cuCtxPopCurrent_4000(&c);
}

CALL(cuCtxSetCurrent, 4000)
{
    return drv.cuCtxSetCurrent_4000(a->ctx);
}

CALL(cuCtxGetCurrent, 4000)
{
    CUcontext c;
    return drv.cuCtxGetCurrent_4000(&c);
}

CALL(cuCtxGetDevice, 2000)
{
    CUdevice d;
    return drv.cuCtxGetDevice_2000(&d);
}

CALL(cuCtxGetFlags, 7000)
{
    unsigned int flags;
    return drv.cuCtxGetFlags_7000(&flags);
}

CALL(cuCtxSynchronize, 2000)
{
    return drv.cuCtxSynchronize_2000();
}

CALL(cuCtxGetApiVersion, 3020)
{
    unsigned int v;
    return drv.cuCtxGetApiVersion_3020(a->ctx, &v);
}

CALL(cuCtxGetLimit, 3010)
{
    size_t v;
    return drv.cuCtxGetLimit_3010(&v, CU_LIMIT_STACK_SIZE);
}

CALL(cuCtxSetLimit, 3010)
{
    return drv.cuCtxSetLimit_3010(CU_LIMIT_STACK_SIZE, 2048);
}

CALL(cuCtxGetCacheConfig, 3020)
{
    CUfunc_cache c;
    return drv.cuCtxGetCacheConfig_3020(&c);
}

CALL(cuCtxSetCacheConfig, 3020)
{
    return drv.cuCtxSetCacheConfig_3020(CU_FUNC_CACHE_PREFER_NONE);
}

CALL(cuCtxGetSharedMemConfig, 4020)
{
    CUsharedconfig c;
    return drv.cuCtxGetSharedMemConfig_4020(&c);
}

CALL(cuCtxSetSharedMemConfig, 4020)
{
    return drv.cuCtxSetSharedMemConfig_4020(CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE);
}

CALL(cuCtxGetStreamPriorityRange, 5050)
{
    int least, greatest;
    return drv.cuCtxGetStreamPriorityRange_5050(&least, &greatest);
}

CALL(cuCtxEnablePeerAccess, 4000)
{
    return drv.cuCtxEnablePeerAccess_4000(a->ctx, 0);
}

CALL(cuCtxDisablePeerAccess, 4000)
{
    return drv.cuCtxDisablePeerAccess_4000(a->ctx);
}

CALL(cuDeviceCanAccessPeer, 4000)
{
    int can;
    return drv.cuDeviceCanAccessPeer_4000(&can, a->dev, a->dev);
}

/* --- streams ----------------------------------------------------------------------------- */

CALL(cuStreamCreate, 2000)
{
    CUstream s;
    CUresult r = drv.cuStreamCreate_2000(&s, CU_STREAM_NON_BLOCKING);
    KEEP(r, o->stream, s);
    return r;
}

CALL(cuStreamCreateWithPriority, 5050)
{
    CUstream s;
    CUresult r = drv.cuStreamCreateWithPriority_5050(&s, CU_STREAM_NON_BLOCKING, 0);
    KEEP(r, o->stream, s);
    return r;
}

CALL(cuStreamDestroy, 4000)
{
    return drv.cuStreamDestroy_4000(a->stream);
}

CALL(cuStreamSynchronize, 2000)
{
    return drv.cuStreamSynchronize_2000(a->stream);
}

CALL(cuStreamQuery, 2000)
{
    return drv.cuStreamQuery_2000(a->stream);
}

CALL(cuStreamWaitEvent, 3020)
{
    return drv.cuStreamWaitEvent_3020(a->stream, a->event, 0);
}

CALL(cuStreamGetPriority, 5050)
{
    int p;
    return drv.cuStreamGetPriority_5050(a->stream, &p);
}

CALL(cuStreamGetFlags, 5050)
{
    unsigned int flags;
    return drv.cuStreamGetFlags_5050(a->stream, &flags);
}

CALL(cuStreamGetCtx, 9020)
{
    CUcontext c;
    return drv.cuStreamGetCtx_9020(a->stream, &c);
}

CALL(cuLaunchHostFunc, 10000)
{
    return drv.cuLaunchHostFunc_10000(a->stream, host_noop, NULL);
}

/* --- events ------------------------------------------------------------------------------ */

CALL(cuEventCreate, 2000)
{
    CUevent e;
    CUresult r = drv.cuEventCreate_2000(&e, 0);
    KEEP(r, o->event, e);
    return r;
}

CALL(cuEventRecord, 2000)
{
    return drv.cuEventRecord_2000(a->event, a->stream);
}

CALL(cuEventSynchronize, 2000)
{
    return drv.cuEventSynchronize_2000(a->event);
}

CALL(cuEventQuery, 2000)
{
    return drv.cuEventQuery_2000(a->event);
}

CALL(cuEventElapsedTime, 2000)
{
    float ms;
    return drv.cuEventElapsedTime_2000(&ms, a->event, a->event2);
}

CALL(cuEventDestroy, 4000)
{
    return drv.cuEventDestroy_4000(a->event);
}

/* --- memory ------------------------------------------------------------------------------ */

CALL(cuMemGetInfo, 3020)
{
    size_t free_bytes, total;
    return drv.cuMemGetInfo_3020(&free_bytes, &total);
}

CALL(cuMemAlloc, 3020)
{
    CUdeviceptr p;
    CUresult r = drv.cuMemAlloc_3020(&p, 4096);
    KEEP(r, o->dptr, p);
    return r;
}

CALL(cuMemFree, 3020)
{
    return drv.cuMemFree_3020(a->buf);
}

CALL(cuMemAllocAsync, 11020)
{
    CUdeviceptr p;
    CUresult r = drv.cuMemAllocAsync_11020(&p, 4096, a->stream);
    KEEP(r, o->async_dptr, p);
    return r;
}

CALL(cuMemFreeAsync, 11020)
{
    return drv.cuMemFreeAsync_11020(a->async_buf, a->stream);
}

CALL(cuMemAllocHost, 3020)
{
    void *p;
    CUresult r = drv.cuMemAllocHost_3020(&p, 4096);
    KEEP(r, o->host, p);
    return r;
}

CALL(cuMemHostAlloc, 2020)
{
    void *p;
    CUresult r = drv.cuMemHostAlloc_2020(&p, 4096, 0);
    KEEP(r, o->host, p);
    return r;
}

CALL(cuMemFreeHost, 2000)
{
    return drv.cuMemFreeHost_2000(a->host);
}

CALL(cuMemAllocManaged, 6000)
{
    CUdeviceptr p;
    CUresult r = drv.cuMemAllocManaged_6000(&p, 4096, CU_MEM_ATTACH_GLOBAL);
    KEEP(r, o->dptr, p);
    return r;
}

CALL(cuMemHostRegister, 6050)
{
    CUresult r = drv.cuMemHostRegister_6050(a->unregistered, 4096, 0);
    KEEP(r, o->registered, true);
    return r;
}

CALL(cuMemHostUnregister, 4000)
{
    return drv.cuMemHostUnregister_4000(a->registered);
}

CALL(cuMemHostGetDevicePointer, 3020)
{
    CUdeviceptr p;
    return drv.cuMemHostGetDevicePointer_3020(&p, a->host, 0);
}

CALL(cuPointerGetAttribute, 4000)
{
    CUcontext c;
    return drv.cuPointerGetAttribute_4000(&c, CU_POINTER_ATTRIBUTE_CONTEXT, a->buf);
}

CALL(cuMemcpy, 4000)
{
    return drv.cuMemcpy_4000(a->buf, a->buf2, COPY_BYTES);
}

CALL(cuMemcpyAsync, 4000)
{
    return drv.cuMemcpyAsync_4000(a->buf, a->buf2, COPY_BYTES, a->stream);
}

CALL(cuMemcpyHtoD, 3020)
{
    return drv.cuMemcpyHtoD_3020(a->buf, a->pageable, COPY_BYTES);
}

CALL(cuMemcpyDtoH, 3020)
{
    return drv.cuMemcpyDtoH_3020(a->pageable, a->buf, COPY_BYTES);
}

CALL(cuMemcpyDtoD, 3020)
{
    return drv.cuMemcpyDtoD_3020(a->buf, a->buf2, COPY_BYTES);
}

CALL(cuMemcpyHtoDAsync, 3020)
{
    return drv.cuMemcpyHtoDAsync_3020(a->buf, a->pageable, COPY_BYTES, a->stream);
}

CALL(cuMemcpyDtoHAsync, 3020)
{
    return drv.cuMemcpyDtoHAsync_3020(a->pageable, a->buf, COPY_BYTES, a->stream);
}

CALL(cuMemcpyDtoDAsync, 3020)
{
    return drv.cuMemcpyDtoDAsync_3020(a->buf, a->buf2, COPY_BYTES, a->stream);
}

CALL(cuMemcpyPeer, 4000)
{
    return drv.cuMemcpyPeer_4000(a->buf, a->ctx, a->buf2, a->ctx, COPY_BYTES);
}

CALL(cuMemcpyPeerAsync, 4000)
{
    return drv.cuMemcpyPeerAsync_4000(a->buf, a->ctx, a->buf2, a->ctx, COPY_BYTES, a->stream);
}

CALL(cuMemsetD8, 3020)
{
    return drv.cuMemsetD8_3020(a->buf, 0, COPY_BYTES);
}

CALL(cuMemsetD16, 3020)
{
    return drv.cuMemsetD16_3020(a->buf, 0, COPY_BYTES / 2);
}

CALL(cuMemsetD32, 3020)
{
    return drv.cuMemsetD32_3020(a->buf, 0, COPY_BYTES / 4);
}

CALL(cuMemsetD8Async, 3020)
{
    return drv.cuMemsetD8Async_3020(a->buf, 0, COPY_BYTES, a->stream);
}

CALL(cuMemsetD16Async, 3020)
{
    return drv.cuMemsetD16Async_3020(a->buf, 0, COPY_BYTES / 2, a->stream);
}

CALL(cuMemsetD32Async, 3020)
{
    return drv.cuMemsetD32Async_3020(a->buf, 0, COPY_BYTES / 4, a->stream);
}

CALL(cuMemPrefetchAsync, 8000)
{
    return drv.cuMemPrefetchAsync_8000(a->managed, 4096, a->dev, a->stream);
}

CALL(cuMemAdvise, 8000)
{
    return drv.cuMemAdvise_8000(a->managed, 4096, CU_MEM_ADVISE_SET_READ_MOSTLY, a->dev);
}

/* --- modules and functions --------------------------------------------------------------- */

CALL(cuModuleLoad, 2000)
{
    CUmodule m;
    CUresult r = drv.cuModuleLoad_2000(&m, a->ptx_path);
    KEEP(r, o->module, m);
    return r;
}

CALL(cuModuleLoadData, 2000)
{
    CUmodule m;
    CUresult r = drv.cuModuleLoadData_2000(&m, a->ptx);
    KEEP(r, o->module, m);
    return r;
}

CALL(cuModuleLoadDataEx, 2010)
{
    CUmodule m;
    CUresult r = drv.cuModuleLoadDataEx_2010(&m, a->ptx, 0, NULL, NULL);
    KEEP(r, o->module, m);
    return r;
}

CALL(cuModuleLoadFatBinary, 2000)
{
    CUmodule m;
    CUresult r = drv.cuModuleLoadFatBinary_2000(&m, a->fatbin);
    KEEP(r, o->module, m);
    return r;
}

CALL(cuModuleUnload, 2000)
{
    return drv.cuModuleUnload_2000(a->module);
}

CALL(cuModuleGetFunction, 2000)
{
    CUfunction f;
    return drv.cuModuleGetFunction_2000(&f, a->module, "add");
}

CALL(cuModuleGetGlobal, 3020)
{
    CUdeviceptr p;
    size_t bytes;
    return drv.cuModuleGetGlobal_3020(&p, &bytes, a->module, "counter");
}

CALL(cuFuncGetAttribute, 2020)
{
    int v;
    return drv.cuFuncGetAttribute_2020(&v, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, a->function);
}

CALL(cuFuncSetAttribute, 9000)
{
    return drv.cuFuncSetAttribute_9000(a->function,
                                       CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 1024);
}

CALL(cuFuncSetCacheConfig, 3000)
{
    return drv.cuFuncSetCacheConfig_3000(a->function, CU_FUNC_CACHE_PREFER_NONE);
}

CALL(cuFuncSetSharedMemConfig, 4020)
{
    return drv.cuFuncSetSharedMemConfig_4020(a->function, CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE);
}

CALL(cuLaunchKernel, 4000)
{
    CUdeviceptr p = a->buf;
    unsigned int n = 16;
    void *params[] = {&p, &n};
    return drv.cuLaunchKernel_4000(a->function, 1, 1, 1, 1, 1, 1, 0, a->stream, params, NULL);
}

CALL(cuLaunchKernelEx, 11060)
{
    CUdeviceptr p = a->buf;
    unsigned int n = 16;
    void *params[] = {&p, &n};
    CUlaunchConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.hStream = a->stream;
    return drv.cuLaunchKernelEx_11060(&cfg, a->function, params, NULL);
}

CALL(cuOccupancyMaxPotentialBlockSize, 6050)
{
    int min_grid, block;
    return drv.cuOccupancyMaxPotentialBlockSize_6050(&min_grid, &block, a->function, NULL, 0, 0);
}

CALL(cuOccupancyMaxActiveBlocksPerMultiprocessor, 6050)
{
    int blocks;
    return drv.cuOccupancyMaxActiveBlocksPerMultiprocessor_6050(&blocks, a->function, 128, 0);
}

/* --- stream capture and graphs ------------------------------------------------------------ */

CALL(cuStreamBeginCapture, 10010)
{
    return drv.cuStreamBeginCapture_10010(a->stream, CU_STREAM_CAPTURE_MODE_RELAXED);
}

CALL(cuStreamEndCapture, 10000)
{
    CUgraph g = NULL;
    CUresult r = drv.cuStreamEndCapture_10000(a->stream, &g);
    KEEP(r, o->graph, g);
    return r;
}

CALL(cuStreamIsCapturing, 10000)
{
    CUstreamCaptureStatus st;
    return drv.cuStreamIsCapturing_10000(a->stream, &st);
}

CALL(cuStreamGetCaptureInfo, 10010)
{
    CUstreamCaptureStatus st;
    cuuint64_t id;
    return drv.cuStreamGetCaptureInfo_10010(a->stream, &st, &id);
}

CALL(cuStreamGetCaptureInfo, 11030)
{
    CUstreamCaptureStatus st;
    cuuint64_t id;
    CUgraph g;
    const CUgraphNode *deps;
    size_t n;
    return drv.cuStreamGetCaptureInfo_11030(a->stream, &st, &id, &g, &deps, &n);
}

CALL(cuThreadExchangeStreamCaptureMode, 10010)
{
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    CUresult r = drv.cuThreadExchangeStreamCaptureMode_10010(&mode);
    KEEP(r, o->mode_exchanged, true);
    KEEP(r, o->old_mode, mode);
    return r;
}

CALL(cuGraphDestroy, 10000)
{
    return drv.cuGraphDestroy_10000(a->graph);
}

CALL(cuGraphGetNodes, 10000)
{
    CUgraphNode nodes[4];
    size_t n = 4;
    return drv.cuGraphGetNodes_10000(a->graph, nodes, &n);
}

CALL(cuGraphNodeGetType, 10000)
{
    CUgraphNodeType t;
    return drv.cuGraphNodeGetType_10000(a->node, &t);
}

CALL(cuGraphInstantiateWithFlags, 11040)
{
    CUgraphExec x;
    CUresult r = drv.cuGraphInstantiateWithFlags_11040(&x, a->graph, 0);
    KEEP(r, o->exec, x);
    return r;
}

CALL(cuGraphExecDestroy, 10000)
{
    return drv.cuGraphExecDestroy_10000(a->exec);
}

CALL(cuGraphLaunch, 10000)
{
    return drv.cuGraphLaunch_10000(a->exec, a->stream);
}

CALL(cuGraphUpload, 11010)
{
    return drv.cuGraphUpload_11010(a->exec, a->stream);
}

CALL(cuGraphExecUpdate, 10020)
{
    CUgraphNode error_node;
    CUgraphExecUpdateResult result;
    return drv.cuGraphExecUpdate_10020(a->exec, a->graph, &error_node, &result);
}

CALL(cuGraphExecUpdate, 12000)
{
    CUgraphExecUpdateResultInfo info;
    return drv.cuGraphExecUpdate_12000(a->exec, a->graph, &info);
}

/* --- the newer variants and entry points ------------------------------------------------------ */

#if CUDA_VERSION >= 12020
static CUmemLocation device_location(CUdevice dev)
{
    CUmemLocation loc;
    memset(&loc, 0, sizeof loc);
    loc.type = CU_MEM_LOCATION_TYPE_DEVICE;
    loc.id = dev;
    return loc;
}

CALL(cuMemPrefetchAsync, 12020)
{
    return drv.cuMemPrefetchAsync_12020(a->managed, 4096, device_location(a->dev), 0, a->stream);
}

CALL(cuMemAdvise, 12020)
{
    return drv.cuMemAdvise_12020(a->managed, 4096, CU_MEM_ADVISE_SET_READ_MOSTLY,
                                 device_location(a->dev));
}
#endif

#if CUDA_VERSION >= 12030
CALL(cuFuncGetName, 12030)
{
    const char *name;
    return drv.cuFuncGetName_12030(&name, a->function);
}

CALL(cuStreamGetCaptureInfo, 12030)
{
    CUstreamCaptureStatus st;
    cuuint64_t id;
    CUgraph g;
    const CUgraphNode *deps;
    const CUgraphEdgeData *edges;
    size_t n;
    return drv.cuStreamGetCaptureInfo_12030(a->stream, &st, &id, &g, &deps, &edges, &n);
}
#endif

#if CUDA_VERSION >= 12040
CALL(cuModuleGetFunctionCount, 12040)
{
    unsigned int n;
    return drv.cuModuleGetFunctionCount_12040(&n, a->module);
}

CALL(cuModuleEnumerateFunctions, 12040)
{
    CUfunction fns[3]; /* the module has three */
    return drv.cuModuleEnumerateFunctions_12040(fns, 3, a->module);
}

CALL(cuFuncGetParamInfo, 12040)
{
    size_t offset, size;
    return drv.cuFuncGetParamInfo_12040(a->function, 0, &offset, &size);
}
#endif

#if CUDA_VERSION >= 12050
CALL(cuStreamGetCtx, 12050)
{
    CUcontext c;
    CUgreenCtx g;
    return drv.cuStreamGetCtx_12050(a->stream, &c, &g);
}
#endif

#if CUDA_VERSION >= 12080
CALL(cuEventElapsedTime, 12080)
{
    float ms;
    return drv.cuEventElapsedTime_12080(&ms, a->event, a->event2);
}
#endif

#if CUDA_VERSION >= 13000
CALL(cuCtxGetDevice, 13000)
{
    CUdevice d;
    return drv.cuCtxGetDevice_13000(&d, a->ctx);
}

CALL(cuCtxSynchronize, 13000)
{
    return drv.cuCtxSynchronize_13000(a->ctx);
}
#endif

/* --- the table ----------------------------------------------------------------------------------- */

const rules_row rules_rows[] = {
#define RULES_ROW_(symbol, version, handle, flags, note)                                   \
    {#symbol, version, handle, flags, note, call_##symbol##_##version,                     \
     offsetof(rules_driver, symbol##_##version)},
    RULES_ROWS(RULES_ROW_)
#undef RULES_ROW_
};
const size_t rules_row_count = sizeof rules_rows / sizeof rules_rows[0];

void rules_row_name(const rules_row *row, char *buf, size_t size)
{
    snprintf(buf, size, "%s@%d", row->symbol, row->version);
}

void rules_copy(char *dst, size_t size, const char *src)
{
    size_t n = strlen(src);
    if (n >= size)
        n = size - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

const rules_row *rules_row_find(const char *name)
{
    char buf[96];
    for (size_t i = 0; i < rules_row_count; i++) {
        rules_row_name(&rules_rows[i], buf, sizeof buf);
        if (strcmp(buf, name) == 0)
            return &rules_rows[i];
    }
    return NULL;
}

bool rules_row_present(const rules_row *row)
{
    void *p;
    memcpy(&p, (const char *)&drv + row->driver_offset, sizeof p);
    return p != NULL;
}
