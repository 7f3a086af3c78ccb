/* The rows' calls: one valid call per entry point, with the fixture's handles
 * (rules.h). A call that makes something records it in *o (on success only),
 * so that the teardown frees it. The row list itself is RULES_ROWS in
 * rules.h; both are written in its order.
 *
 * The shapes (each pastes the symbol itself: passed on to another macro,
 * cuMemFree would become cuMemFree_v2 first):
 *   CALL(symbol, version) { ... }            any call; a and o in scope
 *   CALL_ON(symbol, version, args...)        returns drv.symbol_version(args)
 *   CALL_OUT(symbol, version, type, args...) the same, with `type out` to
 *                                            write into (&out among args)
 *   CALL_MAKE(symbol, version, field, args...) the same, with `made` (of
 *                                            o->field's type) kept in
 *                                            o->field on success */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rules.h"

rules_driver drv;

#define UNUSED __attribute__((unused))
#define CALL(symbol, version)                                                  \
    static CUresult call_##symbol##_##version(const rules_args *a UNUSED, rules_out *o UNUSED)
#define CALL_ON(symbol, version, ...)                                          \
    static CUresult call_##symbol##_##version(const rules_args *a UNUSED,      \
                                              rules_out *o UNUSED)             \
    {                                                                          \
        return drv.symbol##_##version(__VA_ARGS__);                            \
    }
#define CALL_OUT(symbol, version, type, ...)                                   \
    static CUresult call_##symbol##_##version(const rules_args *a UNUSED,      \
                                              rules_out *o UNUSED)             \
    {                                                                          \
        __typeof__(type) out; /* type may be an array type */                  \
        return drv.symbol##_##version(__VA_ARGS__);                            \
    }
#define CALL_MAKE(symbol, version, field, ...)                                 \
    static CUresult call_##symbol##_##version(const rules_args *a UNUSED,      \
                                              rules_out *o)                    \
    {                                                                          \
        __typeof__(o->field) made;                                             \
        CUresult r = drv.symbol##_##version(__VA_ARGS__);                      \
        if (r == CUDA_SUCCESS)                                                 \
            o->field = made;                                                   \
        return r;                                                              \
    }

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

CALL_OUT(cuDriverGetVersion, 2020, int, &out)
CALL_ON(cuInit, 2000, 0)
CALL_OUT(cuDeviceGetCount, 2000, int, &out)
CALL_OUT(cuDeviceGet, 2000, CUdevice, &out, 0)
CALL_OUT(cuDeviceGetName, 2000, char[128], out, (int)sizeof out, a->dev)
CALL_OUT(cuDeviceGetUuid, 11040, CUuuid, &out, a->dev)
CALL_OUT(cuDeviceTotalMem, 3020, size_t, &out, a->dev)
CALL_OUT(cuDeviceGetAttribute, 2000, int, &out, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, a->dev)

CALL(cuDevicePrimaryCtxRetain, 7000)
{
    CUcontext c;
    CUresult r = drv.cuDevicePrimaryCtxRetain_7000(&c, a->dev);
    if (r == CUDA_SUCCESS)
        o->primary = true;
    return r;
}

CALL_ON(cuDevicePrimaryCtxRelease, 11000, a->dev)

/* --- contexts ---------------------------------------------------------------------------- */

CALL_MAKE(cuCtxCreate, 3020, ctx, &made, 0, a->dev)
CALL_MAKE(cuCtxCreate, 11040, ctx, &made, NULL, 0, 0, a->dev)

CALL(cuCtxCreate, 12050)
{
    CUcontext c;
    CUctxCreateParams params;
    memset(&params, 0, sizeof params);
    CUresult r = drv.cuCtxCreate_12050(&c, &params, 0, a->dev);
    if (r == CUDA_SUCCESS)
        o->ctx = c;
    return r;
}

CALL_ON(cuCtxDestroy, 4000, a->ctx)
CALL_ON(cuCtxPushCurrent, 4000, a->ctx)
CALL_OUT(cuCtxPopCurrent, 4000, CUcontext, &out)
CALL_ON(cuCtxSetCurrent, 4000, a->ctx)
CALL_OUT(cuCtxGetCurrent, 4000, CUcontext, &out)
CALL_OUT(cuCtxGetDevice, 2000, CUdevice, &out)
CALL_OUT(cuCtxGetFlags, 7000, unsigned int, &out)

CALL(cuCtxSynchronize, 2000)
{
    return drv.cuCtxSynchronize_2000();
}

CALL_OUT(cuCtxGetApiVersion, 3020, unsigned int, a->ctx, &out)
CALL_OUT(cuCtxGetLimit, 3010, size_t, &out, CU_LIMIT_STACK_SIZE)
CALL_ON(cuCtxSetLimit, 3010, CU_LIMIT_STACK_SIZE, 2048)
CALL_OUT(cuCtxGetCacheConfig, 3020, CUfunc_cache, &out)
CALL_ON(cuCtxSetCacheConfig, 3020, CU_FUNC_CACHE_PREFER_NONE)
CALL_OUT(cuCtxGetSharedMemConfig, 4020, CUsharedconfig, &out)
CALL_ON(cuCtxSetSharedMemConfig, 4020, CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE)

CALL(cuCtxGetStreamPriorityRange, 5050)
{
    int least, greatest;
    return drv.cuCtxGetStreamPriorityRange_5050(&least, &greatest);
}

CALL_ON(cuCtxEnablePeerAccess, 4000, a->ctx, 0)
CALL_ON(cuCtxDisablePeerAccess, 4000, a->ctx)
CALL_OUT(cuDeviceCanAccessPeer, 4000, int, &out, a->dev, a->dev)

/* --- streams ----------------------------------------------------------------------------- */

CALL_MAKE(cuStreamCreate, 2000, stream, &made, CU_STREAM_NON_BLOCKING)
CALL_MAKE(cuStreamCreateWithPriority, 5050, stream, &made, CU_STREAM_NON_BLOCKING, 0)
CALL_ON(cuStreamDestroy, 4000, a->stream)
CALL_ON(cuStreamSynchronize, 2000, a->stream)
CALL_ON(cuStreamQuery, 2000, a->stream)
CALL_ON(cuStreamWaitEvent, 3020, a->stream, a->event, 0)
CALL_OUT(cuStreamGetPriority, 5050, int, a->stream, &out)
CALL_OUT(cuStreamGetFlags, 5050, unsigned int, a->stream, &out)
CALL_OUT(cuStreamGetCtx, 9020, CUcontext, a->stream, &out)
CALL_ON(cuLaunchHostFunc, 10000, a->stream, host_noop, NULL)

/* --- events ------------------------------------------------------------------------------ */

CALL_MAKE(cuEventCreate, 2000, event, &made, 0)
CALL_ON(cuEventRecord, 2000, a->event, a->stream)
CALL_ON(cuEventSynchronize, 2000, a->event)
CALL_ON(cuEventQuery, 2000, a->event)
CALL_OUT(cuEventElapsedTime, 2000, float, &out, a->event, a->event2)
CALL_ON(cuEventDestroy, 4000, a->event)

/* --- legacy IPC (lib/ipc.c) ----------------------------------------------------------- */

CALL_OUT(cuIpcGetMemHandle, 4010, CUipcMemHandle, &out, a->buf)

/* The handle is taken with A current whatever the column (so that the
 * column's state is the open's); the open then maps it in this process. */
CALL(cuIpcOpenMemHandle, 11000)
{
    CUipcMemHandle h;
    memset(&h, 0, sizeof h);
    if (a->buf && drv.cuIpcGetMemHandle_4010 && drv.cuCtxPushCurrent_4000(a->ctx) == CUDA_SUCCESS) {
        (void)drv.cuIpcGetMemHandle_4010(&h, a->buf);
        CUcontext popped;
        (void)drv.cuCtxPopCurrent_4000(&popped);
    }
    CUdeviceptr p = 0;
    CUresult r = drv.cuIpcOpenMemHandle_11000(&p, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    if (r == CUDA_SUCCESS && drv.cuIpcCloseMemHandle_4010)
        (void)drv.cuIpcCloseMemHandle_4010(p);
    return r;
}

CALL_ON(cuIpcCloseMemHandle, 4010, a->buf)
CALL_OUT(cuIpcGetEventHandle, 4010, CUipcEventHandle, &out, a->event)

CALL(cuIpcOpenEventHandle, 4010)
{
    CUipcEventHandle h;
    memset(&h, 0, sizeof h);
    CUevent e = NULL;
    CUresult r = drv.cuIpcOpenEventHandle_4010(&e, h);
    if (r == CUDA_SUCCESS)
        o->event = e;
    return r;
}

/* --- memory ------------------------------------------------------------------------------ */

CALL(cuMemGetInfo, 3020)
{
    size_t free_bytes, total;
    return drv.cuMemGetInfo_3020(&free_bytes, &total);
}

CALL_MAKE(cuMemAlloc, 3020, dptr, &made, 4096)
CALL_ON(cuMemFree, 3020, a->buf)
CALL_MAKE(cuMemAllocAsync, 11020, async_dptr, &made, 4096, a->stream)
CALL_ON(cuMemFreeAsync, 11020, a->async_buf, a->stream)
CALL_MAKE(cuMemAllocHost, 3020, host, &made, 4096)
CALL_MAKE(cuMemHostAlloc, 2020, host, &made, 4096, 0)
CALL_ON(cuMemFreeHost, 2000, a->host)
CALL_MAKE(cuMemAllocManaged, 6000, dptr, &made, 4096, CU_MEM_ATTACH_GLOBAL)

CALL(cuMemHostRegister, 6050)
{
    CUresult r = drv.cuMemHostRegister_6050(a->unregistered, 4096, 0);
    if (r == CUDA_SUCCESS)
        o->registered = true;
    return r;
}

CALL_ON(cuMemHostUnregister, 4000, a->registered)
CALL_OUT(cuMemHostGetDevicePointer, 3020, CUdeviceptr, &out, a->host, 0)
CALL_OUT(cuPointerGetAttribute, 4000, CUcontext, &out, CU_POINTER_ATTRIBUTE_CONTEXT, a->buf)
CALL_ON(cuMemcpy, 4000, a->buf, a->buf2, COPY_BYTES)
CALL_ON(cuMemcpyAsync, 4000, a->buf, a->buf2, COPY_BYTES, a->stream)
CALL_ON(cuMemcpyHtoD, 3020, a->buf, a->pageable, COPY_BYTES)
CALL_ON(cuMemcpyDtoH, 3020, a->pageable, a->buf, COPY_BYTES)
CALL_ON(cuMemcpyDtoD, 3020, a->buf, a->buf2, COPY_BYTES)
CALL_ON(cuMemcpyHtoDAsync, 3020, a->buf, a->pageable, COPY_BYTES, a->stream)
CALL_ON(cuMemcpyDtoHAsync, 3020, a->pageable, a->buf, COPY_BYTES, a->stream)
CALL_ON(cuMemcpyDtoDAsync, 3020, a->buf, a->buf2, COPY_BYTES, a->stream)
CALL_ON(cuMemcpyPeer, 4000, a->buf, a->ctx, a->buf2, a->ctx, COPY_BYTES)
CALL_ON(cuMemcpyPeerAsync, 4000, a->buf, a->ctx, a->buf2, a->ctx, COPY_BYTES, a->stream)
CALL_ON(cuMemsetD8, 3020, a->buf, 0, COPY_BYTES)
CALL_ON(cuMemsetD16, 3020, a->buf, 0, COPY_BYTES / 2)
CALL_ON(cuMemsetD32, 3020, a->buf, 0, COPY_BYTES / 4)
CALL_ON(cuMemsetD8Async, 3020, a->buf, 0, COPY_BYTES, a->stream)
CALL_ON(cuMemsetD16Async, 3020, a->buf, 0, COPY_BYTES / 2, a->stream)
CALL_ON(cuMemsetD32Async, 3020, a->buf, 0, COPY_BYTES / 4, a->stream)
CALL_ON(cuMemPrefetchAsync, 8000, a->managed, 4096, a->dev, a->stream)
CALL_ON(cuMemAdvise, 8000, a->managed, 4096, CU_MEM_ADVISE_SET_READ_MOSTLY, a->dev)

/* --- memory pools ---------------------------------------------------------------------------- */

static CUresult default_pool(const rules_args *a, CUmemoryPool *pool)
{
    return drv.cuDeviceGetDefaultMemPool_11020(pool, a->dev);
}

static CUresult create_pool(const rules_args *a, CUmemAllocationHandleType handles,
                            CUmemoryPool *pool)
{
    CUmemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.handleTypes = handles;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = a->dev;
    return drv.cuMemPoolCreate_11020(pool, &props);
}

/* An exportable pool with one allocation of it on the stream, completed. */
typedef struct ipc_state {
    CUmemoryPool pool, imported;
    CUdeviceptr ptr, imported_ptr;
    int fd;
} ipc_state;

static CUresult ipc_begin(const rules_args *a, ipc_state *s, bool alloc)
{
    memset(s, 0, sizeof *s);
    s->fd = -1;
    CUresult r = create_pool(a, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, &s->pool);
    if (r != CUDA_SUCCESS) {
        s->pool = NULL;
        return r;
    }
    if (!alloc)
        return CUDA_SUCCESS;
    r = drv.cuMemAllocFromPoolAsync_11020(&s->ptr, 4096, s->pool, a->stream);
    if (r != CUDA_SUCCESS) {
        s->ptr = 0;
        return r;
    }
    return drv.cuStreamSynchronize_2000(a->stream);
}

static CUresult ipc_import_pool(ipc_state *s)
{
    CUresult r = drv.cuMemPoolExportToShareableHandle_11020(
        &s->fd, s->pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    if (r != CUDA_SUCCESS) {
        s->fd = -1;
        return r;
    }
    r = drv.cuMemPoolImportFromShareableHandle_11020(
        &s->imported, (void *)(intptr_t)s->fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    if (r != CUDA_SUCCESS)
        s->imported = NULL;
    return r;
}

/* Releases what ipc_begin and the row made, importer first; r passes through. */
static CUresult ipc_end(const rules_args *a, ipc_state *s, CUresult r)
{
    if (s->imported_ptr)
        drv.cuMemFree_3020(s->imported_ptr);
    if (s->imported)
        drv.cuMemPoolDestroy_11020(s->imported);
    if (s->fd >= 0)
        close(s->fd);
    if (s->ptr) {
        drv.cuMemFreeAsync_11020(s->ptr, a->stream);
        drv.cuStreamSynchronize_2000(a->stream);
    }
    if (s->pool)
        drv.cuMemPoolDestroy_11020(s->pool);
    return r;
}

CALL_OUT(cuDeviceGetDefaultMemPool, 11020, CUmemoryPool, &out, a->dev)
CALL_OUT(cuDeviceGetMemPool, 11020, CUmemoryPool, &out, a->dev)

CALL(cuDeviceSetMemPool, 11020)
{
    CUmemoryPool pool;
    CUresult r = default_pool(a, &pool); /* current already: nothing changes */
    return r != CUDA_SUCCESS ? r : drv.cuDeviceSetMemPool_11020(a->dev, pool);
}

CALL(cuMemPoolCreate, 11020)
{
    CUmemoryPool pool;
    CUresult r = create_pool(a, CU_MEM_HANDLE_TYPE_NONE, &pool);
    if (r == CUDA_SUCCESS)
        drv.cuMemPoolDestroy_11020(pool);
    return r;
}

CALL(cuMemPoolDestroy, 11020)
{
    CUmemoryPool pool;
    CUresult r = create_pool(a, CU_MEM_HANDLE_TYPE_NONE, &pool);
    return r != CUDA_SUCCESS ? r : drv.cuMemPoolDestroy_11020(pool);
}

CALL(cuMemPoolSetAttribute, 11020)
{
    CUmemoryPool pool;
    cuuint64_t threshold = 0; /* the default's value: nothing changes */
    CUresult r = default_pool(a, &pool);
    return r != CUDA_SUCCESS
               ? r
               : drv.cuMemPoolSetAttribute_11020(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                                                 &threshold);
}

CALL(cuMemPoolGetAttribute, 11020)
{
    CUmemoryPool pool;
    cuuint64_t used;
    CUresult r = default_pool(a, &pool);
    return r != CUDA_SUCCESS
               ? r
               : drv.cuMemPoolGetAttribute_11020(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used);
}

CALL(cuMemPoolTrimTo, 11020)
{
    CUmemoryPool pool;
    CUresult r = default_pool(a, &pool);
    return r != CUDA_SUCCESS ? r : drv.cuMemPoolTrimTo_11020(pool, 0);
}

CALL(cuMemPoolSetAccess, 11020)
{
    CUmemoryPool pool;
    CUmemAccessDesc desc;
    memset(&desc, 0, sizeof desc);
    desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    desc.location.id = a->dev;
    desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE; /* the pool's device: always so */
    CUresult r = default_pool(a, &pool);
    return r != CUDA_SUCCESS ? r : drv.cuMemPoolSetAccess_11020(pool, &desc, 1);
}

CALL(cuMemPoolGetAccess, 11020)
{
    CUmemoryPool pool;
    CUmemLocation loc;
    memset(&loc, 0, sizeof loc);
    loc.type = CU_MEM_LOCATION_TYPE_DEVICE;
    loc.id = a->dev;
    CUmemAccess_flags flags;
    CUresult r = default_pool(a, &pool);
    return r != CUDA_SUCCESS ? r : drv.cuMemPoolGetAccess_11020(&flags, pool, &loc);
}

CALL(cuMemAllocFromPoolAsync, 11020)
{
    CUmemoryPool pool;
    CUdeviceptr made;
    CUresult r = default_pool(a, &pool);
    if (r != CUDA_SUCCESS)
        return r;
    r = drv.cuMemAllocFromPoolAsync_11020(&made, 4096, pool, a->stream);
    if (r == CUDA_SUCCESS)
        o->async_dptr = made;
    return r;
}

CALL(cuMemPoolExportToShareableHandle, 11020)
{
    ipc_state s;
    CUresult r = ipc_begin(a, &s, false);
    if (r == CUDA_SUCCESS) {
        r = drv.cuMemPoolExportToShareableHandle_11020(
            &s.fd, s.pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
        if (r != CUDA_SUCCESS)
            s.fd = -1;
    }
    return ipc_end(a, &s, r);
}

CALL(cuMemPoolImportFromShareableHandle, 11020)
{
    ipc_state s;
    CUresult r = ipc_begin(a, &s, false);
    if (r == CUDA_SUCCESS)
        r = ipc_import_pool(&s);
    return ipc_end(a, &s, r);
}

CALL(cuMemPoolExportPointer, 11020)
{
    ipc_state s;
    CUresult r = ipc_begin(a, &s, true);
    CUmemPoolPtrExportData data;
    if (r == CUDA_SUCCESS)
        r = drv.cuMemPoolExportPointer_11020(&data, s.ptr);
    return ipc_end(a, &s, r);
}

CALL(cuMemPoolImportPointer, 11020)
{
    ipc_state s;
    CUmemPoolPtrExportData data;
    CUresult r = ipc_begin(a, &s, true);
    if (r == CUDA_SUCCESS)
        r = ipc_import_pool(&s);
    if (r == CUDA_SUCCESS)
        r = drv.cuMemPoolExportPointer_11020(&data, s.ptr);
    if (r == CUDA_SUCCESS) {
        r = drv.cuMemPoolImportPointer_11020(&s.imported_ptr, s.imported, &data);
        if (r != CUDA_SUCCESS)
            s.imported_ptr = 0;
    }
    return ipc_end(a, &s, r);
}

/* --- modules and functions --------------------------------------------------------------- */

CALL_MAKE(cuModuleLoad, 2000, module, &made, a->ptx_path)
CALL_MAKE(cuModuleLoadData, 2000, module, &made, a->ptx)
CALL_MAKE(cuModuleLoadDataEx, 2010, module, &made, a->ptx, 0, NULL, NULL)
CALL_MAKE(cuModuleLoadFatBinary, 2000, module, &made, a->fatbin)
CALL_ON(cuModuleUnload, 2000, a->module)
CALL_OUT(cuModuleGetFunction, 2000, CUfunction, &out, a->module, "add")

CALL(cuModuleGetGlobal, 3020)
{
    CUdeviceptr p;
    size_t bytes;
    return drv.cuModuleGetGlobal_3020(&p, &bytes, a->module, "counter");
}

CALL_OUT(cuFuncGetAttribute, 2020, int, &out, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
         a->function)
CALL_ON(cuFuncSetAttribute, 9000, a->function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
        1024)
CALL_ON(cuFuncSetCacheConfig, 3000, a->function, CU_FUNC_CACHE_PREFER_NONE)
CALL_ON(cuFuncSetSharedMemConfig, 4020, a->function, CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE)

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

CALL_OUT(cuOccupancyMaxActiveBlocksPerMultiprocessor, 6050, int, &out, a->function, 128, 0)

/* --- stream capture and graphs ------------------------------------------------------------ */

CALL_ON(cuStreamBeginCapture, 10010, a->stream, CU_STREAM_CAPTURE_MODE_RELAXED)
CALL_MAKE(cuStreamEndCapture, 10000, graph, a->stream, &made)
CALL_OUT(cuStreamIsCapturing, 10000, CUstreamCaptureStatus, a->stream, &out)

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
    if (r == CUDA_SUCCESS) {
        o->mode_exchanged = true;
        o->old_mode = mode;
    }
    return r;
}

CALL_ON(cuGraphDestroy, 10000, a->graph)

CALL(cuGraphGetNodes, 10000)
{
    CUgraphNode nodes[4];
    size_t n = 4;
    return drv.cuGraphGetNodes_10000(a->graph, nodes, &n);
}

CALL_OUT(cuGraphNodeGetType, 10000, CUgraphNodeType, a->node, &out)
CALL_MAKE(cuGraphInstantiateWithFlags, 11040, exec, &made, a->graph, 0)
CALL_ON(cuGraphExecDestroy, 10000, a->exec)
CALL_ON(cuGraphLaunch, 10000, a->exec, a->stream)
CALL_ON(cuGraphUpload, 11010, a->exec, a->stream)

CALL(cuGraphExecUpdate, 10020)
{
    CUgraphNode error_node;
    CUgraphExecUpdateResult result;
    return drv.cuGraphExecUpdate_10020(a->exec, a->graph, &error_node, &result);
}

CALL_OUT(cuGraphExecUpdate, 12000, CUgraphExecUpdateResultInfo, a->exec, a->graph, &out)

/* --- graphs built by hand ------------------------------------------------------------------------ */

static CUDA_KERNEL_NODE_PARAMS_v2 add_params(const rules_args *a, void **args)
{
    CUDA_KERNEL_NODE_PARAMS_v2 p;
    memset(&p, 0, sizeof p);
    p.func = a->function;
    p.gridDimX = p.gridDimY = p.gridDimZ = 1;
    p.blockDimX = p.blockDimY = p.blockDimZ = 1;
    p.kernelParams = args;
    return p;
}

/* add(u64, u32)'s arguments. */
#define ADD_ARGS                                                               \
    unsigned long long arg0 = 0;                                               \
    unsigned int arg1 = 0;                                                     \
    void *args[] = {&arg0, &arg1}

static CUDA_MEMCPY3D copy_1d(CUdeviceptr dst, CUdeviceptr src)
{
    CUDA_MEMCPY3D p;
    memset(&p, 0, sizeof p);
    p.srcMemoryType = p.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    p.srcDevice = src;
    p.dstDevice = dst;
    p.srcPitch = p.dstPitch = COPY_BYTES;
    p.srcHeight = p.dstHeight = 1;
    p.WidthInBytes = COPY_BYTES;
    p.Height = p.Depth = 1;
    return p;
}

static CUDA_MEMSET_NODE_PARAMS memset_1d(CUdeviceptr dst)
{
    CUDA_MEMSET_NODE_PARAMS p;
    memset(&p, 0, sizeof p);
    p.dst = dst;
    p.pitch = COPY_BYTES;
    p.elementSize = 4;
    p.width = COPY_BYTES / 4;
    p.height = 1;
    return p;
}

CALL_MAKE(cuGraphCreate, 10000, graph, &made, 0)

CALL(cuGraphAddKernelNode, 10000)
{
    ADD_ARGS;
    CUDA_KERNEL_NODE_PARAMS_v2 q = add_params(a, args);
    CUDA_KERNEL_NODE_PARAMS_v1 p;
    memcpy(&p, &q, sizeof p); /* v1 is v2's first members */
    CUgraphNode node;
    return drv.cuGraphAddKernelNode_10000(&node, a->graph, &a->node, 1, &p);
}

CALL(cuGraphAddKernelNode, 12000)
{
    ADD_ARGS;
    CUDA_KERNEL_NODE_PARAMS_v2 p = add_params(a, args);
    CUgraphNode node;
    return drv.cuGraphAddKernelNode_12000(&node, a->graph, &a->node, 1, &p);
}

CALL(cuGraphAddMemcpyNode, 10000)
{
    CUDA_MEMCPY3D p = copy_1d(a->buf, a->buf2);
    CUgraphNode node;
    return drv.cuGraphAddMemcpyNode_10000(&node, a->graph, NULL, 0, &p, a->ctx);
}

CALL(cuGraphAddMemsetNode, 10000)
{
    CUDA_MEMSET_NODE_PARAMS p = memset_1d(a->buf);
    CUgraphNode node;
    return drv.cuGraphAddMemsetNode_10000(&node, a->graph, NULL, 0, &p, a->ctx);
}

CALL(cuGraphAddHostNode, 10000)
{
    CUDA_HOST_NODE_PARAMS p = {host_noop, NULL};
    CUgraphNode node;
    return drv.cuGraphAddHostNode_10000(&node, a->graph, NULL, 0, &p);
}

CALL(cuGraphAddEventRecordNode, 11010)
{
    CUgraphNode node;
    return drv.cuGraphAddEventRecordNode_11010(&node, a->graph, NULL, 0, a->event);
}

CALL(cuGraphAddEventWaitNode, 11010)
{
    CUgraphNode node;
    return drv.cuGraphAddEventWaitNode_11010(&node, a->graph, NULL, 0, a->event);
}

CALL(cuGraphAddEmptyNode, 10000)
{
    CUgraphNode node;
    return drv.cuGraphAddEmptyNode_10000(&node, a->graph, &a->node, 1);
}

CALL(cuGraphAddChildGraphNode, 10000)
{
    CUgraph child;
    CUresult r = drv.cuGraphCreate_10000(&child, 0);
    if (r != CUDA_SUCCESS)
        return r;
    CUgraphNode node;
    r = drv.cuGraphAddChildGraphNode_10000(&node, a->graph, NULL, 0, child);
    drv.cuGraphDestroy_10000(child);
    return r;
}

CALL(cuGraphAddDependencies, 10000)
{
    CUgraphNode empty;
    CUresult r = drv.cuGraphAddEmptyNode_10000(&empty, a->graph, NULL, 0);
    return r != CUDA_SUCCESS ? r : drv.cuGraphAddDependencies_10000(a->graph, &a->node, &empty, 1);
}

#if CUDA_VERSION >= 12030
CALL(cuGraphAddDependencies, 12030)
{
    CUgraphNode empty;
    CUresult r = drv.cuGraphAddEmptyNode_10000(&empty, a->graph, NULL, 0);
    return r != CUDA_SUCCESS
               ? r
               : drv.cuGraphAddDependencies_12030(a->graph, &a->node, &empty, NULL, 1);
}
#endif

/* Graph memory nodes: 4 KiB on A's device, in the fixture's graph. */
static CUresult add_alloc(const rules_args *a, CUgraphNode *node, CUdeviceptr *dptr)
{
    CUDA_MEM_ALLOC_NODE_PARAMS p;
    memset(&p, 0, sizeof p);
    p.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.poolProps.location.id = a->dev;
    p.bytesize = 4096;
    CUresult r = drv.cuGraphAddMemAllocNode_11040(node, a->graph, NULL, 0, &p);
    if (r == CUDA_SUCCESS && dptr)
        *dptr = p.dptr;
    return r;
}

CALL(cuGraphAddMemAllocNode, 11040)
{
    CUgraphNode node;
    return add_alloc(a, &node, NULL);
}

CALL(cuGraphAddMemFreeNode, 11040)
{
    CUgraphNode alloc, node;
    CUdeviceptr dptr = 0;
    CUresult r = add_alloc(a, &alloc, &dptr);
    return r != CUDA_SUCCESS ? r : drv.cuGraphAddMemFreeNode_11040(&node, a->graph, &alloc, 1, dptr);
}

CALL(cuGraphMemAllocNodeGetParams, 11040)
{
    CUgraphNode alloc;
    CUDA_MEM_ALLOC_NODE_PARAMS p;
    CUresult r = add_alloc(a, &alloc, NULL);
    return r != CUDA_SUCCESS ? r : drv.cuGraphMemAllocNodeGetParams_11040(alloc, &p);
}

CALL(cuGraphMemFreeNodeGetParams, 11040)
{
    CUgraphNode alloc, node;
    CUdeviceptr dptr = 0, got = 0;
    CUresult r = add_alloc(a, &alloc, &dptr);
    if (r == CUDA_SUCCESS)
        r = drv.cuGraphAddMemFreeNode_11040(&node, a->graph, &alloc, 1, dptr);
    return r != CUDA_SUCCESS ? r : drv.cuGraphMemFreeNodeGetParams_11040(node, &got);
}

CALL_ON(cuDeviceGraphMemTrim, 11040, a->dev)

CALL(cuDeviceGetGraphMemAttribute, 11040)
{
    cuuint64_t v = 0;
    return drv.cuDeviceGetGraphMemAttribute_11040(a->dev, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &v);
}

CALL(cuDeviceSetGraphMemAttribute, 11040)
{
    cuuint64_t zero = 0;
    return drv.cuDeviceSetGraphMemAttribute_11040(a->dev, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &zero);
}

#if CUDA_VERSION >= 12030
/* Conditional nodes: a handle on the fixture's graph for A's context. */
CALL(cuGraphConditionalHandleCreate, 12030)
{
    CUgraphConditionalHandle h = 0;
    return drv.cuGraphConditionalHandleCreate_12030(&h, a->graph, a->ctx, 1,
                                                    CU_GRAPH_COND_ASSIGN_DEFAULT);
}

/* A WHILE node after the fixture's node, its handle made first (in A). */
CALL(cuGraphAddNode, 12030)
{
    CUgraphConditionalHandle h = 0;
    CUresult r = drv.cuGraphConditionalHandleCreate_12030(&h, a->graph, a->ctx, 0, 0);
    if (r != CUDA_SUCCESS)
        return r;
    CUgraph body[1] = {NULL};
    CUgraphNodeParams p;
    memset(&p, 0, sizeof p);
    p.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
    p.conditional.handle = h;
    p.conditional.type = CU_GRAPH_COND_TYPE_WHILE;
    p.conditional.size = 1;
    p.conditional.phGraph_out = body;
    p.conditional.ctx = a->ctx;
    CUgraphNode node;
    return drv.cuGraphAddNode_12030(&node, a->graph, &a->node, NULL, 1, &p);
}
#endif

#if CUDA_VERSION >= 12030
/* A capture into the fixture's graph after its node, nothing captured, and
 * ended at once (the end hands back that graph: not destroyed here, nor left
 * open for the teardown, whose end would destroy it). */
CALL(cuStreamBeginCaptureToGraph, 12030)
{
    CUresult r = drv.cuStreamBeginCaptureToGraph_12030(a->stream, a->graph, &a->node, NULL, 1,
                                                       CU_STREAM_CAPTURE_MODE_RELAXED);
    if (r == CUDA_SUCCESS) {
        CUgraph same = NULL;
        drv.cuStreamEndCapture_10000(a->stream, &same);
    }
    return r;
}
#endif

CALL(cuGraphGetRootNodes, 10000)
{
    CUgraphNode nodes[4];
    size_t n = 4;
    return drv.cuGraphGetRootNodes_10000(a->graph, nodes, &n);
}

CALL(cuGraphExecKernelNodeSetParams, 10010)
{
    ADD_ARGS;
    CUDA_KERNEL_NODE_PARAMS_v2 q = add_params(a, args);
    CUDA_KERNEL_NODE_PARAMS_v1 p;
    memcpy(&p, &q, sizeof p);
    return drv.cuGraphExecKernelNodeSetParams_10010(a->exec, a->node, &p);
}

CALL(cuGraphExecKernelNodeSetParams, 12000)
{
    ADD_ARGS;
    CUDA_KERNEL_NODE_PARAMS_v2 p = add_params(a, args);
    return drv.cuGraphExecKernelNodeSetParams_12000(a->exec, a->node, &p);
}

/* A graph of one node (made by add) in the current context, instantiated;
 * set then changes the node in the executable graph; all freed again. */
static CUresult node_exec(const rules_args *a, bool copy)
{
    CUgraph g;
    CUresult r = drv.cuGraphCreate_10000(&g, 0);
    if (r != CUDA_SUCCESS)
        return r;
    CUgraphNode node;
    CUDA_MEMCPY3D cp = copy_1d(a->buf, a->buf2);
    CUDA_MEMSET_NODE_PARAMS ms = memset_1d(a->buf);
    r = copy ? drv.cuGraphAddMemcpyNode_10000(&node, g, NULL, 0, &cp, a->ctx)
             : drv.cuGraphAddMemsetNode_10000(&node, g, NULL, 0, &ms, a->ctx);
    CUgraphExec exec = NULL;
    if (r == CUDA_SUCCESS)
        r = drv.cuGraphInstantiateWithFlags_11040(&exec, g, 0);
    if (r == CUDA_SUCCESS) {
        cp = copy_1d(a->buf2, a->buf);
        ms.value = 7;
        r = copy ? drv.cuGraphExecMemcpyNodeSetParams_10020(exec, node, &cp, a->ctx)
                 : drv.cuGraphExecMemsetNodeSetParams_10020(exec, node, &ms, a->ctx);
        drv.cuGraphExecDestroy_10000(exec);
    }
    drv.cuGraphDestroy_10000(g);
    return r;
}

CALL(cuGraphExecMemcpyNodeSetParams, 10020)
{
    return node_exec(a, true);
}

CALL(cuGraphExecMemsetNodeSetParams, 10020)
{
    return node_exec(a, false);
}

CALL_ON(cuGraphNodeSetEnabled, 11060, a->exec, a->node, 1)

/* --- arrays, 2D and 3D copies, texture and surface objects ---------------------------------------
 * Each array row makes (in the current context) what it works on and frees
 * it again, so that the fixture needs no array: its cell is that of the
 * whole sequence, the first failure's. */

static const CUDA_ARRAY3D_DESCRIPTOR rules_array_desc = {
    .Width = 16, .Height = 16, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1,
    .Flags = CUDA_ARRAY3D_SURFACE_LDST};

static CUresult rules_array(CUarray *out)
{
    return drv.cuArray3DCreate_3020(out, &rules_array_desc);
}

CALL(cuArrayCreate, 3020)
{
    CUDA_ARRAY_DESCRIPTOR d = {.Width = 16, .Height = 16, .Format = CU_AD_FORMAT_FLOAT,
                               .NumChannels = 1};
    CUarray h;
    CUresult r = drv.cuArrayCreate_3020(&h, &d);
    if (r == CUDA_SUCCESS)
        (void)drv.cuArrayDestroy_2000(h);
    return r;
}

CALL(cuArray3DCreate, 3020)
{
    CUarray h;
    CUresult r = rules_array(&h);
    if (r == CUDA_SUCCESS)
        (void)drv.cuArrayDestroy_2000(h);
    return r;
}

CALL(cuArrayDestroy, 2000)
{
    CUarray h;
    CUresult r = rules_array(&h);
    return r == CUDA_SUCCESS ? drv.cuArrayDestroy_2000(h) : r;
}

CALL(cuArray3DGetDescriptor, 3020)
{
    CUarray h;
    CUresult r = rules_array(&h);
    if (r != CUDA_SUCCESS)
        return r;
    CUDA_ARRAY3D_DESCRIPTOR d;
    r = drv.cuArray3DGetDescriptor_3020(&d, h);
    (void)drv.cuArrayDestroy_2000(h);
    return r;
}

CALL(cuMipmappedArrayCreate, 5000)
{
    CUmipmappedArray m;
    CUresult r = drv.cuMipmappedArrayCreate_5000(&m, &rules_array_desc, 2);
    if (r == CUDA_SUCCESS)
        (void)drv.cuMipmappedArrayDestroy_5000(m);
    return r;
}

CALL(cuMipmappedArrayGetLevel, 5000)
{
    CUmipmappedArray m;
    CUresult r = drv.cuMipmappedArrayCreate_5000(&m, &rules_array_desc, 2);
    if (r != CUDA_SUCCESS)
        return r;
    CUarray level;
    r = drv.cuMipmappedArrayGetLevel_5000(&level, m, 1);
    (void)drv.cuMipmappedArrayDestroy_5000(m);
    return r;
}

CALL(cuMipmappedArrayDestroy, 5000)
{
    CUmipmappedArray m;
    CUresult r = drv.cuMipmappedArrayCreate_5000(&m, &rules_array_desc, 2);
    return r == CUDA_SUCCESS ? drv.cuMipmappedArrayDestroy_5000(m) : r;
}

CALL(cuMemAllocPitch, 3020)
{
    CUdeviceptr p;
    size_t pitch;
    CUresult r = drv.cuMemAllocPitch_3020(&p, &pitch, 100, 4, 4);
    if (r == CUDA_SUCCESS)
        o->dptr = p;
    return r;
}

/* COPY_BYTES as 4 rows of a quarter, device to device. */
static CUDA_MEMCPY2D rules_copy_2d(const rules_args *a)
{
    CUDA_MEMCPY2D c;
    memset(&c, 0, sizeof c);
    c.srcMemoryType = c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c.srcDevice = a->buf2;
    c.dstDevice = a->buf;
    c.srcPitch = c.dstPitch = COPY_BYTES / 4;
    c.WidthInBytes = COPY_BYTES / 4;
    c.Height = 4;
    return c;
}

static CUDA_MEMCPY3D rules_copy_3d(const rules_args *a)
{
    CUDA_MEMCPY3D c;
    memset(&c, 0, sizeof c);
    c.srcMemoryType = c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c.srcDevice = a->buf2;
    c.dstDevice = a->buf;
    c.srcPitch = c.dstPitch = COPY_BYTES / 4;
    c.srcHeight = c.dstHeight = 2;
    c.WidthInBytes = COPY_BYTES / 4;
    c.Height = 2;
    c.Depth = 2;
    return c;
}

CALL(cuMemcpy2D, 3020)
{
    CUDA_MEMCPY2D c = rules_copy_2d(a);
    return drv.cuMemcpy2D_3020(&c);
}

CALL(cuMemcpy2DAsync, 3020)
{
    CUDA_MEMCPY2D c = rules_copy_2d(a);
    return drv.cuMemcpy2DAsync_3020(&c, a->stream);
}

CALL(cuMemcpy3D, 3020)
{
    CUDA_MEMCPY3D c = rules_copy_3d(a);
    return drv.cuMemcpy3D_3020(&c);
}

CALL(cuMemcpy3DAsync, 3020)
{
    CUDA_MEMCPY3D c = rules_copy_3d(a);
    return drv.cuMemcpy3DAsync_3020(&c, a->stream);
}

/* A texture (or surface) over a new array, and what the row does with it. */
static CUresult rules_object(bool surface, int what)
{
    CUarray h;
    CUresult r = rules_array(&h);
    if (r != CUDA_SUCCESS)
        return r;
    CUDA_RESOURCE_DESC res;
    memset(&res, 0, sizeof res);
    res.resType = CU_RESOURCE_TYPE_ARRAY;
    res.res.array.hArray = h;
    CUDA_TEXTURE_DESC td;
    memset(&td, 0, sizeof td);
    td.filterMode = CU_TR_FILTER_MODE_LINEAR;
    td.flags = CU_TRSF_NORMALIZED_COORDINATES;
    if (surface) {
        CUsurfObject s;
        r = drv.cuSurfObjectCreate_5000(&s, &res);
        if (r == CUDA_SUCCESS) {
            CUresult d = drv.cuSurfObjectDestroy_5000(s);
            r = what ? d : r;
        }
    } else {
        CUtexObject t;
        r = drv.cuTexObjectCreate_5000(&t, &res, &td, NULL);
        if (r == CUDA_SUCCESS) {
            CUDA_RESOURCE_DESC got;
            CUresult g = what == 2 ? drv.cuTexObjectGetResourceDesc_5000(&got, t) : CUDA_SUCCESS;
            CUresult d = drv.cuTexObjectDestroy_5000(t);
            r = what == 2 ? g : what ? d : r;
        }
    }
    (void)drv.cuArrayDestroy_2000(h);
    return r;
}

CALL(cuTexObjectCreate, 5000)
{
    return rules_object(false, 0);
}

CALL(cuTexObjectDestroy, 5000)
{
    return rules_object(false, 1);
}

CALL(cuTexObjectGetResourceDesc, 5000)
{
    return rules_object(false, 2);
}

CALL(cuSurfObjectCreate, 5000)
{
    return rules_object(true, 0);
}

CALL(cuSurfObjectDestroy, 5000)
{
    return rules_object(true, 1);
}

/* --- the newer variants and entry points ------------------------------------------------------ */

/* --- virtual memory management: each call makes and frees what it needs ------------------ */

#define VMM_G ((size_t)2 << 20) /* at least the granularity of every device so far */

static CUmemAllocationProp vmm_prop(const rules_args *a, unsigned long long types)
{
    CUmemAllocationProp p;
    memset(&p, 0, sizeof p);
    p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.requestedHandleTypes = (CUmemAllocationHandleType)types;
    p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.location.id = a->dev;
    return p;
}

/* A physical allocation, a reservation, and (map) the one mapped in the
 * other; vmm_free undoes what was made, whatever the call did. */
typedef struct vmm_set {
    CUmemGenericAllocationHandle h;
    CUdeviceptr va;
    bool mapped;
} vmm_set;

static CUresult vmm_make(const rules_args *a, vmm_set *v, bool reserve, bool map,
                         unsigned long long types)
{
    memset(v, 0, sizeof *v);
    CUmemAllocationProp p = vmm_prop(a, types);
    CUresult r = drv.cuMemCreate_10020(&v->h, VMM_G, &p, 0);
    if (r != CUDA_SUCCESS || !reserve)
        return r;
    r = drv.cuMemAddressReserve_10020(&v->va, VMM_G, 0, 0, 0);
    if (r != CUDA_SUCCESS || !map)
        return r;
    r = drv.cuMemMap_10020(v->va, VMM_G, 0, v->h, 0);
    v->mapped = r == CUDA_SUCCESS;
    return r;
}

static void vmm_free(vmm_set *v)
{
    if (v->mapped)
        (void)drv.cuMemUnmap_10020(v->va, VMM_G);
    if (v->va)
        (void)drv.cuMemAddressFree_10020(v->va, VMM_G);
    if (v->h)
        (void)drv.cuMemRelease_10020(v->h);
}

CALL(cuMemCreate, 10020)
{
    vmm_set v;
    CUresult r = vmm_make(a, &v, false, false, 0);
    vmm_free(&v);
    return r;
}
CALL(cuMemRelease, 10020)
{
    vmm_set v;
    CUresult r = vmm_make(a, &v, false, false, 0);
    if (r != CUDA_SUCCESS)
        return r;
    r = drv.cuMemRelease_10020(v.h);
    if (r == CUDA_SUCCESS)
        v.h = 0;
    vmm_free(&v);
    return r;
}
CALL(cuMemGetAllocationGranularity, 10020)
{
    CUmemAllocationProp p = vmm_prop(a, 0);
    size_t g = 0;
    return drv.cuMemGetAllocationGranularity_10020(&g, &p, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
}
CALL(cuMemAddressReserve, 10020)
{
    CUdeviceptr va = 0;
    CUresult r = drv.cuMemAddressReserve_10020(&va, VMM_G, 0, 0, 0);
    if (r == CUDA_SUCCESS)
        (void)drv.cuMemAddressFree_10020(va, VMM_G);
    return r;
}
CALL(cuMemAddressFree, 10020)
{
    CUdeviceptr va = 0;
    CUresult r = drv.cuMemAddressReserve_10020(&va, VMM_G, 0, 0, 0);
    return r != CUDA_SUCCESS ? r : drv.cuMemAddressFree_10020(va, VMM_G);
}
CALL(cuMemMap, 10020)
{
    vmm_set v;
    CUresult r = vmm_make(a, &v, true, true, 0);
    vmm_free(&v);
    return r;
}
CALL(cuMemUnmap, 10020)
{
    vmm_set v;
    CUresult r = vmm_make(a, &v, true, true, 0);
    if (r == CUDA_SUCCESS) {
        r = drv.cuMemUnmap_10020(v.va, VMM_G);
        v.mapped = r != CUDA_SUCCESS;
    }
    vmm_free(&v);
    return r;
}
CALL(cuMemSetAccess, 10020)
{
    vmm_set v;
    CUresult r = vmm_make(a, &v, true, true, 0);
    if (r == CUDA_SUCCESS) {
        CUmemAccessDesc d;
        memset(&d, 0, sizeof d);
        d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        d.location.id = a->dev;
        d.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        r = drv.cuMemSetAccess_10020(v.va, VMM_G, &d, 1);
    }
    vmm_free(&v);
    return r;
}
CALL(cuMemGetAccess, 10020)
{
    vmm_set v;
    CUresult r = vmm_make(a, &v, true, true, 0);
    if (r == CUDA_SUCCESS) {
        CUmemLocation l;
        memset(&l, 0, sizeof l);
        l.type = CU_MEM_LOCATION_TYPE_DEVICE;
        l.id = a->dev;
        unsigned long long flags = 0;
        r = drv.cuMemGetAccess_10020(&flags, &l, v.va);
    }
    vmm_free(&v);
    return r;
}
CALL(cuMemExportToShareableHandle, 10020)
{
    vmm_set v;
    CUresult r = vmm_make(a, &v, false, false, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    if (r == CUDA_SUCCESS) {
        int fd = -1;
        r = drv.cuMemExportToShareableHandle_10020(&fd, v.h,
                                                   CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
        if (fd >= 0)
            close(fd);
    }
    vmm_free(&v);
    return r;
}
CALL(cuMemImportFromShareableHandle, 10020)
{
    vmm_set v;
    CUresult r = vmm_make(a, &v, false, false, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    int fd = -1;
    if (r == CUDA_SUCCESS)
        r = drv.cuMemExportToShareableHandle_10020(&fd, v.h,
                                                   CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    if (r == CUDA_SUCCESS) {
        CUmemGenericAllocationHandle h = 0;
        r = drv.cuMemImportFromShareableHandle_10020(&h, (void *)(intptr_t)fd,
                                                     CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
        if (r == CUDA_SUCCESS)
            (void)drv.cuMemRelease_10020(h);
    }
    if (fd >= 0)
        close(fd);
    vmm_free(&v);
    return r;
}
CALL(cuMemRetainAllocationHandle, 11000)
{
    vmm_set v;
    CUresult r = vmm_make(a, &v, true, true, 0);
    if (r == CUDA_SUCCESS) {
        CUmemGenericAllocationHandle h = 0;
        r = drv.cuMemRetainAllocationHandle_11000(&h, (void *)(uintptr_t)v.va);
        if (r == CUDA_SUCCESS)
            (void)drv.cuMemRelease_10020(h);
    }
    vmm_free(&v);
    return r;
}

#if CUDA_VERSION >= 12020
static CUmemLocation device_location(CUdevice dev)
{
    CUmemLocation loc;
    memset(&loc, 0, sizeof loc);
    loc.type = CU_MEM_LOCATION_TYPE_DEVICE;
    loc.id = dev;
    return loc;
}

CALL_ON(cuMemPrefetchAsync, 12020, a->managed, 4096, device_location(a->dev), 0, a->stream)
CALL_ON(cuMemAdvise, 12020, a->managed, 4096, CU_MEM_ADVISE_SET_READ_MOSTLY,
        device_location(a->dev))
#endif

#if CUDA_VERSION >= 12030
CALL_OUT(cuFuncGetName, 12030, const char *, &out, a->function)

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
CALL_OUT(cuModuleGetFunctionCount, 12040, unsigned int, &out, a->module)
CALL_OUT(cuModuleEnumerateFunctions, 12040, CUfunction[3], out, 3, a->module) /* it has three */

CALL(cuFuncGetParamInfo, 12040)
{
    size_t offset, size;
    return drv.cuFuncGetParamInfo_12040(a->function, 0, &offset, &size);
}
#endif

#if CUDA_VERSION >= 12040
/* --- libraries and kernels ------------------------------------------------------------
 * Each call loads a library of the fixture's PTX (it belongs to no context)
 * and unloads it after, so that no state leaves a library behind; a failed
 * load is the cell's result. */
static CUresult lib_load(const rules_args *a, CUlibrary *lib)
{
    return drv.cuLibraryLoadData_12000(lib, a->ptx, NULL, NULL, 0, NULL, NULL, 0);
}

static CUresult lib_end(CUlibrary lib, CUresult r)
{
    (void)drv.cuLibraryUnload_12000(lib);
    return r;
}

/* r, the call on the library's kernel `add` (k in scope). */
#define LIB_KERNEL_CALL(symbol, version, call)                                 \
    CALL(symbol, version)                                                      \
    {                                                                          \
        CUlibrary lib = NULL;                                                  \
        CUkernel k = NULL;                                                     \
        CUresult r = lib_load(a, &lib);                                        \
        if (r != CUDA_SUCCESS)                                                 \
            return r;                                                          \
        r = drv.cuLibraryGetKernel_12000(&k, lib, "add");                      \
        if (r == CUDA_SUCCESS)                                                 \
            r = (call);                                                        \
        return lib_end(lib, r);                                                \
    }
#define LIB_CALL(symbol, version, call)                                        \
    CALL(symbol, version)                                                      \
    {                                                                          \
        CUlibrary lib = NULL;                                                  \
        CUresult r = lib_load(a, &lib);                                        \
        if (r != CUDA_SUCCESS)                                                 \
            return r;                                                          \
        return lib_end(lib, (call));                                           \
    }

CALL(cuLibraryLoadData, 12000)
{
    CUlibrary lib = NULL;
    CUresult r = lib_load(a, &lib);
    return r == CUDA_SUCCESS ? lib_end(lib, r) : r;
}

CALL(cuLibraryLoadFromFile, 12000)
{
    CUlibrary lib = NULL;
    CUresult r = drv.cuLibraryLoadFromFile_12000(&lib, a->ptx_path, NULL, NULL, 0, NULL, NULL, 0);
    return r == CUDA_SUCCESS ? lib_end(lib, r) : r;
}

CALL(cuLibraryUnload, 12000)
{
    CUlibrary lib = NULL;
    CUresult r = lib_load(a, &lib);
    return r == CUDA_SUCCESS ? drv.cuLibraryUnload_12000(lib) : r;
}

LIB_KERNEL_CALL(cuLibraryGetKernel, 12000, CUDA_SUCCESS)

CALL(cuLibraryGetKernelCount, 12040)
{
    unsigned int n;
    CUlibrary lib = NULL;
    CUresult r = lib_load(a, &lib);
    return r == CUDA_SUCCESS ? lib_end(lib, drv.cuLibraryGetKernelCount_12040(&n, lib)) : r;
}

CALL(cuLibraryEnumerateKernels, 12040)
{
    CUkernel ks[1];
    CUlibrary lib = NULL;
    CUresult r = lib_load(a, &lib);
    return r == CUDA_SUCCESS ? lib_end(lib, drv.cuLibraryEnumerateKernels_12040(ks, 1, lib)) : r;
}

CALL(cuLibraryGetGlobal, 12000)
{
    CUdeviceptr p;
    size_t bytes;
    CUlibrary lib = NULL;
    CUresult r = lib_load(a, &lib);
    return r == CUDA_SUCCESS
               ? lib_end(lib, drv.cuLibraryGetGlobal_12000(&p, &bytes, lib, "counter"))
               : r;
}

CALL(cuLibraryGetManaged, 12000)
{
    CUdeviceptr p;
    size_t bytes;
    CUlibrary lib = NULL;
    CUresult r = lib_load(a, &lib);
    return r == CUDA_SUCCESS
               ? lib_end(lib, drv.cuLibraryGetManaged_12000(&p, &bytes, lib, "counter"))
               : r;
}

CALL(cuLibraryGetUnifiedFunction, 12000)
{
    void *f;
    CUlibrary lib = NULL;
    CUresult r = lib_load(a, &lib);
    return r == CUDA_SUCCESS
               ? lib_end(lib, drv.cuLibraryGetUnifiedFunction_12000(&f, lib, "add"))
               : r;
}

static CUfunction kernel_function_out;
static int kernel_attribute_out;
static const char *kernel_name_out;
static size_t kernel_param_out[2];
LIB_KERNEL_CALL(cuKernelGetFunction, 12000, drv.cuKernelGetFunction_12000(&kernel_function_out, k))
LIB_KERNEL_CALL(cuKernelGetAttribute, 12000,
                drv.cuKernelGetAttribute_12000(&kernel_attribute_out,
                                               CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, k, a->dev))
LIB_KERNEL_CALL(cuKernelSetAttribute, 12000,
                drv.cuKernelSetAttribute_12000(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                               1024, k, a->dev))
LIB_KERNEL_CALL(cuKernelGetName, 12030, drv.cuKernelGetName_12030(&kernel_name_out, k))
LIB_KERNEL_CALL(cuKernelGetParamInfo, 12040,
                drv.cuKernelGetParamInfo_12040(k, 0, &kernel_param_out[0], &kernel_param_out[1]))
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
CALL_OUT(cuEventElapsedTime, 12080, float, &out, a->event, a->event2)
#endif

#if CUDA_VERSION >= 13000
CALL_OUT(cuCtxGetDevice, 13000, CUdevice, &out, a->ctx)
CALL_ON(cuCtxSynchronize, 13000, a->ctx)
#endif

/* --- JIT linking: each call but cuLinkCreate makes its state in A -------------------------- */

CALL(cuLinkCreate, 6050)
{
    CUlinkState s = NULL;
    CUresult r = drv.cuLinkCreate_6050(0, NULL, NULL, &s);
    if (r == CUDA_SUCCESS)
        (void)drv.cuLinkDestroy_5050(s);
    return r;
}

/* A link state made with A pushed, the thread's stack as it was after. */
static CUresult link_state_in_a(const rules_args *a, CUlinkState *s)
{
    CUresult r = drv.cuCtxPushCurrent_4000(a->ctx);
    if (r != CUDA_SUCCESS)
        return r;
    r = drv.cuLinkCreate_6050(0, NULL, NULL, s);
    CUcontext popped;
    (void)drv.cuCtxPopCurrent_4000(&popped);
    return r;
}

static CUresult link_add_ptx(const rules_args *a, CUlinkState s)
{
    return drv.cuLinkAddData_6050(s, CU_JIT_INPUT_PTX, (void *)(uintptr_t)a->ptx,
                                  strlen(a->ptx) + 1, "rules.ptx", 0, NULL, NULL);
}

CALL(cuLinkAddData, 6050)
{
    CUlinkState s = NULL;
    CUresult r = link_state_in_a(a, &s);
    if (r != CUDA_SUCCESS)
        return r;
    r = link_add_ptx(a, s);
    (void)drv.cuLinkDestroy_5050(s);
    return r;
}

CALL(cuLinkAddFile, 6050)
{
    CUlinkState s = NULL;
    CUresult r = link_state_in_a(a, &s);
    if (r != CUDA_SUCCESS)
        return r;
    r = drv.cuLinkAddFile_6050(s, CU_JIT_INPUT_PTX, a->ptx_path, 0, NULL, NULL);
    (void)drv.cuLinkDestroy_5050(s);
    return r;
}

CALL(cuLinkComplete, 5050)
{
    CUlinkState s = NULL;
    CUresult r = link_state_in_a(a, &s);
    if (r != CUDA_SUCCESS)
        return r;
    void *cubin;
    size_t size;
    r = link_add_ptx(a, s);
    if (r == CUDA_SUCCESS)
        r = drv.cuLinkComplete_5050(s, &cubin, &size);
    (void)drv.cuLinkDestroy_5050(s);
    return r;
}

CALL(cuLinkDestroy, 5050)
{
    CUlinkState s = NULL;
    CUresult r = link_state_in_a(a, &s);
    if (r != CUDA_SUCCESS)
        return r;
    return drv.cuLinkDestroy_5050(s);
}

/* --- green contexts ----------------------------------------------------------------------------- */
#if CUDA_VERSION >= 12050
/* A green context of all of dev's SMs. */
static CUresult green_make(CUdevice dev, CUgreenCtx *g)
{
    CUdevResource res;
    CUdevResourceDesc desc = NULL;
    CUresult r = drv.cuDeviceGetDevResource_12040(dev, &res, CU_DEV_RESOURCE_TYPE_SM);
    if (r == CUDA_SUCCESS)
        r = drv.cuDevResourceGenerateDesc_12040(&desc, &res, 1);
    if (r == CUDA_SUCCESS)
        r = drv.cuGreenCtxCreate_12040(g, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM);
    return r;
}

static CUresult green_end(CUgreenCtx g, CUresult r)
{
    (void)drv.cuGreenCtxDestroy_12040(g);
    return r;
}

CALL(cuDeviceGetDevResource, 12040)
{
    CUdevResource res;
    return drv.cuDeviceGetDevResource_12040(a->dev, &res, CU_DEV_RESOURCE_TYPE_SM);
}

CALL(cuCtxGetDevResource, 12040)
{
    CUdevResource res;
    return drv.cuCtxGetDevResource_12040(a->ctx, &res, CU_DEV_RESOURCE_TYPE_SM);
}

CALL(cuDevSmResourceSplitByCount, 12040)
{
    CUdevResource res, group, rest;
    unsigned int n = 1;
    CUresult r = drv.cuDeviceGetDevResource_12040(a->dev, &res, CU_DEV_RESOURCE_TYPE_SM);
    if (r != CUDA_SUCCESS)
        return r;
    return drv.cuDevSmResourceSplitByCount_12040(&group, &n, &res, &rest, 0, 0);
}

CALL(cuDevResourceGenerateDesc, 12040)
{
    CUdevResource res;
    CUdevResourceDesc desc = NULL;
    CUresult r = drv.cuDeviceGetDevResource_12040(a->dev, &res, CU_DEV_RESOURCE_TYPE_SM);
    if (r != CUDA_SUCCESS)
        return r;
    return drv.cuDevResourceGenerateDesc_12040(&desc, &res, 1);
}

CALL(cuGreenCtxCreate, 12040)
{
    CUgreenCtx g = NULL;
    CUresult r = green_make(a->dev, &g);
    return r == CUDA_SUCCESS ? green_end(g, r) : r;
}

CALL(cuGreenCtxDestroy, 12040)
{
    CUgreenCtx g = NULL;
    CUresult r = green_make(a->dev, &g);
    return r == CUDA_SUCCESS ? drv.cuGreenCtxDestroy_12040(g) : r;
}

CALL(cuCtxFromGreenCtx, 12040)
{
    CUgreenCtx g = NULL;
    CUcontext c = NULL;
    CUresult r = green_make(a->dev, &g);
    return r == CUDA_SUCCESS ? green_end(g, drv.cuCtxFromGreenCtx_12040(&c, g)) : r;
}

CALL(cuGreenCtxStreamCreate, 12050)
{
    CUgreenCtx g = NULL;
    CUstream s = NULL;
    CUresult r = green_make(a->dev, &g);
    if (r != CUDA_SUCCESS)
        return r;
    r = drv.cuGreenCtxStreamCreate_12050(&s, g, CU_STREAM_NON_BLOCKING, 0);
    if (r == CUDA_SUCCESS)
        (void)drv.cuStreamDestroy_4000(s);
    return green_end(g, r);
}

/* An event of the green context's own context (made with it pushed, the
 * thread's stack as it was after), recorded for the green context: its
 * streams have no work, so the record completes at once. */
CALL(cuGreenCtxRecordEvent, 12040)
{
    CUgreenCtx g = NULL;
    CUcontext c = NULL, popped = NULL;
    CUevent e = NULL;
    CUresult r = green_make(a->dev, &g);
    if (r != CUDA_SUCCESS)
        return r;
    if ((r = drv.cuCtxFromGreenCtx_12040(&c, g)) != CUDA_SUCCESS)
        return green_end(g, r);
    if ((r = drv.cuCtxPushCurrent_4000(c)) != CUDA_SUCCESS)
        return green_end(g, r);
    r = drv.cuEventCreate_2000(&e, CU_EVENT_DISABLE_TIMING);
    (void)drv.cuCtxPopCurrent_4000(&popped);
    if (r != CUDA_SUCCESS)
        return green_end(g, r);
    r = drv.cuGreenCtxRecordEvent_12040(g, e);
    (void)drv.cuEventDestroy_4000(e);
    return green_end(g, r);
}

/* The green context waits for the fixture's first event (of context A: a
 * wait takes an event of any context). */
CALL(cuGreenCtxWaitEvent, 12040)
{
    CUgreenCtx g = NULL;
    CUresult r = green_make(a->dev, &g);
    return r == CUDA_SUCCESS ? green_end(g, drv.cuGreenCtxWaitEvent_12040(g, a->event)) : r;
}
#endif

/* --- TMA tensor maps: a 64 x 16 float map of the fixture's buffer ------------------------ */

static const cuuint64_t tmap_dim[4] = {16, 4, 4, 2}, tmap_strides[3] = {64, 256, 1024};
static const cuuint32_t tmap_box[2] = {16, 4}, tmap_es[4] = {1, 1, 1, 1};

static CUresult tmap_tiled(const rules_args *a, CUtensorMap *m)
{
    return drv.cuTensorMapEncodeTiled_12000(
        m, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, (void *)(uintptr_t)a->buf, tmap_dim, tmap_strides,
        tmap_box, tmap_es, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
        CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

CALL(cuTensorMapEncodeTiled, 12000)
{
    CUtensorMap m;
    return tmap_tiled(a, &m);
}

CALL(cuTensorMapEncodeIm2col, 12000)
{
    CUtensorMap m;
    static const int lower[2] = {0, 0}, upper[2] = {0, 0};
    return drv.cuTensorMapEncodeIm2col_12000(
        &m, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, (void *)(uintptr_t)a->buf, tmap_dim, tmap_strides,
        lower, upper, 16, 16, tmap_es, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
        CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

CALL(cuTensorMapReplaceAddress, 12000)
{
    CUtensorMap m;
    CUresult r = tmap_tiled(a, &m);
    return r == CUDA_SUCCESS ? drv.cuTensorMapReplaceAddress_12000(&m, (void *)(uintptr_t)a->buf2)
                             : r;
}

/* --- graph inspection and editing (graph_inspect.c) --------------------------------------------
 * The queries and edits work on the fixture's graph, node and executable
 * graph; the per-node updates of event, host and child nodes build a graph
 * of one such node in the current context, instantiate it, update the node
 * and free both (as node_exec does), so they take the current context's
 * columns. */

CALL(cuGraphNodeGetDependencies, 10000)
{
    CUgraphNode deps[4];
    size_t n = 4;
    return drv.cuGraphNodeGetDependencies_10000(a->node, deps, &n);
}

CALL(cuGraphNodeGetDependentNodes, 10000)
{
    CUgraphNode deps[4];
    size_t n = 4;
    return drv.cuGraphNodeGetDependentNodes_10000(a->node, deps, &n);
}

CALL(cuGraphGetEdges, 10000)
{
    CUgraphNode from[4], to[4];
    size_t n = 4;
    return drv.cuGraphGetEdges_10000(a->graph, from, to, &n);
}

/* An edge from the fixture's node to a new empty node, removed again. */
CALL(cuGraphRemoveDependencies, 10000)
{
    CUgraphNode empty;
    CUresult r = drv.cuGraphAddEmptyNode_10000(&empty, a->graph, &a->node, 1);
    return r != CUDA_SUCCESS ? r
                             : drv.cuGraphRemoveDependencies_10000(a->graph, &a->node, &empty, 1);
}

#if CUDA_VERSION >= 12030
CALL(cuGraphNodeGetDependencies, 12030)
{
    CUgraphNode deps[4];
    size_t n = 4;
    return drv.cuGraphNodeGetDependencies_12030(a->node, deps, NULL, &n);
}

CALL(cuGraphNodeGetDependentNodes, 12030)
{
    CUgraphNode deps[4];
    size_t n = 4;
    return drv.cuGraphNodeGetDependentNodes_12030(a->node, deps, NULL, &n);
}

CALL(cuGraphGetEdges, 12030)
{
    CUgraphNode from[4], to[4];
    size_t n = 4;
    return drv.cuGraphGetEdges_12030(a->graph, from, to, NULL, &n);
}

CALL(cuGraphRemoveDependencies, 12030)
{
    CUgraphNode empty;
    CUresult r = drv.cuGraphAddEmptyNode_10000(&empty, a->graph, &a->node, 1);
    return r != CUDA_SUCCESS
               ? r
               : drv.cuGraphRemoveDependencies_12030(a->graph, &a->node, &empty, NULL, 1);
}
#endif

CALL(cuGraphNodeGetEnabled, 11060)
{
    unsigned int enabled = 0;
    return drv.cuGraphNodeGetEnabled_11060(a->exec, a->node, &enabled);
}

CALL_OUT(cuGraphExecGetFlags, 12000, cuuint64_t, a->exec, &out)

CALL(cuGraphDebugDotPrint, 11030)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/cuscope-rules-%d.dot", (int)getpid());
    CUresult r = drv.cuGraphDebugDotPrint_11030(a->graph, path, 0);
    unlink(path);
    return r;
}

/* A new empty node of the fixture's graph, destroyed. */
CALL(cuGraphDestroyNode, 10000)
{
    CUgraphNode empty;
    CUresult r = drv.cuGraphAddEmptyNode_10000(&empty, a->graph, NULL, 0);
    return r != CUDA_SUCCESS ? r : drv.cuGraphDestroyNode_10000(empty);
}

CALL_MAKE(cuGraphClone, 10000, graph, &made, a->graph)

/* A clone of the fixture's graph, its kernel node found, the clone freed. */
CALL(cuGraphNodeFindInClone, 10000)
{
    CUgraph clone;
    CUresult r = drv.cuGraphClone_10000(&clone, a->graph);
    if (r != CUDA_SUCCESS)
        return r;
    CUgraphNode found;
    r = drv.cuGraphNodeFindInClone_10000(&found, a->node, clone);
    drv.cuGraphDestroy_10000(clone);
    return r;
}

/* The kinds of node the updates below change. */
typedef enum inspect_node { NODE_RECORD, NODE_WAIT, NODE_HOST, NODE_CHILD } inspect_node;

/* A graph of one empty node (a child's). */
static CUresult child_graph(CUgraph *out)
{
    CUresult r = drv.cuGraphCreate_10000(out, 0);
    CUgraphNode empty;
    if (r == CUDA_SUCCESS && (r = drv.cuGraphAddEmptyNode_10000(&empty, *out, NULL, 0)))
        drv.cuGraphDestroy_10000(*out);
    return r;
}

static CUresult update_node(const rules_args *a, CUgraphExec exec, CUgraphNode node,
                            inspect_node kind)
{
    CUDA_HOST_NODE_PARAMS hp = {host_noop, NULL};
    CUgraph child;
    CUresult r;
    switch (kind) {
    case NODE_RECORD:
        return drv.cuGraphExecEventRecordNodeSetEvent_11010(exec, node, a->event2);
    case NODE_WAIT:
        return drv.cuGraphExecEventWaitNodeSetEvent_11010(exec, node, a->event2);
    case NODE_HOST:
        return drv.cuGraphExecHostNodeSetParams_10020(exec, node, &hp);
    case NODE_CHILD:
        r = child_graph(&child);
        if (r == CUDA_SUCCESS) {
            r = drv.cuGraphExecChildGraphNodeSetParams_11010(exec, node, child);
            drv.cuGraphDestroy_10000(child);
        }
        return r;
    }
    return CUDA_ERROR_INVALID_VALUE;
}

static CUresult inspect_node_exec(const rules_args *a, inspect_node kind)
{
    CUgraph g;
    CUresult r = drv.cuGraphCreate_10000(&g, 0);
    if (r != CUDA_SUCCESS)
        return r;
    CUgraphNode node;
    CUDA_HOST_NODE_PARAMS hp = {host_noop, NULL};
    CUgraph child = NULL;
    switch (kind) {
    case NODE_RECORD: r = drv.cuGraphAddEventRecordNode_11010(&node, g, NULL, 0, a->event); break;
    case NODE_WAIT: r = drv.cuGraphAddEventWaitNode_11010(&node, g, NULL, 0, a->event); break;
    case NODE_HOST: r = drv.cuGraphAddHostNode_10000(&node, g, NULL, 0, &hp); break;
    case NODE_CHILD:
        r = child_graph(&child);
        if (r == CUDA_SUCCESS) {
            r = drv.cuGraphAddChildGraphNode_10000(&node, g, NULL, 0, child);
            drv.cuGraphDestroy_10000(child);
        }
        break;
    }
    CUgraphExec exec = NULL;
    if (r == CUDA_SUCCESS)
        r = drv.cuGraphInstantiateWithFlags_11040(&exec, g, 0);
    if (r == CUDA_SUCCESS) {
        r = update_node(a, exec, node, kind);
        drv.cuGraphExecDestroy_10000(exec);
    }
    drv.cuGraphDestroy_10000(g);
    return r;
}

CALL(cuGraphExecEventRecordNodeSetEvent, 11010)
{
    return inspect_node_exec(a, NODE_RECORD);
}

CALL(cuGraphExecEventWaitNodeSetEvent, 11010)
{
    return inspect_node_exec(a, NODE_WAIT);
}

CALL(cuGraphExecHostNodeSetParams, 10020)
{
    return inspect_node_exec(a, NODE_HOST);
}

CALL(cuGraphExecChildGraphNodeSetParams, 11010)
{
    return inspect_node_exec(a, NODE_CHILD);
}

/* --- changes of a node of a graph (graph-set) --------------------------------------------- */

CALL(cuGraphKernelNodeSetParams, 10000)
{
    ADD_ARGS;
    CUDA_KERNEL_NODE_PARAMS_v2 q = add_params(a, args);
    CUDA_KERNEL_NODE_PARAMS_v1 p;
    memcpy(&p, &q, sizeof p);
    return drv.cuGraphKernelNodeSetParams_10000(a->node, &p);
}

CALL(cuGraphKernelNodeSetParams, 12000)
{
    ADD_ARGS;
    CUDA_KERNEL_NODE_PARAMS_v2 p = add_params(a, args);
    return drv.cuGraphKernelNodeSetParams_12000(a->node, &p);
}

/* The fixture's kernel node's priority set to 0 (its default), read, and
 * its attributes copied onto itself: no change a later row could see. */
CALL(cuGraphKernelNodeSetAttribute, 11000)
{
    CUkernelNodeAttrValue v;
    memset(&v, 0, sizeof v);
    return drv.cuGraphKernelNodeSetAttribute_11000(a->node, CU_KERNEL_NODE_ATTRIBUTE_PRIORITY, &v);
}

CALL(cuGraphKernelNodeGetAttribute, 11000)
{
    CUkernelNodeAttrValue v;
    return drv.cuGraphKernelNodeGetAttribute_11000(a->node, CU_KERNEL_NODE_ATTRIBUTE_PRIORITY, &v);
}

CALL(cuGraphKernelNodeCopyAttributes, 11000)
{
    return drv.cuGraphKernelNodeCopyAttributes_11000(a->node, a->node);
}

typedef enum set_node {
    SET_COPY, SET_MEMSET, SET_HOST, SET_RECORD, SET_WAIT, GET_RECORD, GET_WAIT, GET_CHILD,
    GET_HOST
} set_node;

/* A graph of one node of kind in the current context, the node changed,
 * the graph freed. */
static CUresult graph_node_set(const rules_args *a, set_node kind)
{
    CUgraph g;
    CUresult r = drv.cuGraphCreate_10000(&g, 0);
    if (r != CUDA_SUCCESS)
        return r;
    CUgraphNode node;
    CUDA_MEMCPY3D cp = copy_1d(a->buf, a->buf2);
    CUDA_MEMSET_NODE_PARAMS ms = memset_1d(a->buf);
    CUDA_HOST_NODE_PARAMS hp = {host_noop, NULL};
    CUgraph child = NULL;
    switch (kind) {
    case SET_COPY: r = drv.cuGraphAddMemcpyNode_10000(&node, g, NULL, 0, &cp, a->ctx); break;
    case SET_MEMSET: r = drv.cuGraphAddMemsetNode_10000(&node, g, NULL, 0, &ms, a->ctx); break;
    case SET_HOST:
    case GET_HOST: r = drv.cuGraphAddHostNode_10000(&node, g, NULL, 0, &hp); break;
    case SET_RECORD:
    case GET_RECORD: r = drv.cuGraphAddEventRecordNode_11010(&node, g, NULL, 0, a->event); break;
    case SET_WAIT:
    case GET_WAIT: r = drv.cuGraphAddEventWaitNode_11010(&node, g, NULL, 0, a->event); break;
    case GET_CHILD:
        r = drv.cuGraphCreate_10000(&child, 0);
        if (r == CUDA_SUCCESS)
            r = drv.cuGraphAddChildGraphNode_10000(&node, g, NULL, 0, child);
        break;
    }
    CUevent got = NULL;
    CUgraph own = NULL;
    if (r == CUDA_SUCCESS) {
        cp = copy_1d(a->buf2, a->buf);
        ms.value = 7;
        switch (kind) {
        case SET_COPY: r = drv.cuGraphMemcpyNodeSetParams_10000(node, &cp); break;
        case SET_MEMSET: r = drv.cuGraphMemsetNodeSetParams_10000(node, &ms); break;
        case SET_HOST: r = drv.cuGraphHostNodeSetParams_10000(node, &hp); break;
        case SET_RECORD: r = drv.cuGraphEventRecordNodeSetEvent_11010(node, a->event2); break;
        case SET_WAIT: r = drv.cuGraphEventWaitNodeSetEvent_11010(node, a->event2); break;
        case GET_RECORD: r = drv.cuGraphEventRecordNodeGetEvent_11010(node, &got); break;
        case GET_WAIT: r = drv.cuGraphEventWaitNodeGetEvent_11010(node, &got); break;
        case GET_CHILD: r = drv.cuGraphChildGraphNodeGetGraph_10000(node, &own); break;
        case GET_HOST: r = drv.cuGraphHostNodeGetParams_10000(node, &hp); break;
        }
    }
    if (child)
        drv.cuGraphDestroy_10000(child);
    drv.cuGraphDestroy_10000(g);
    return r;
}

CALL(cuGraphMemcpyNodeSetParams, 10000)
{
    return graph_node_set(a, SET_COPY);
}

CALL(cuGraphMemsetNodeSetParams, 10000)
{
    return graph_node_set(a, SET_MEMSET);
}

CALL(cuGraphHostNodeSetParams, 10000)
{
    return graph_node_set(a, SET_HOST);
}

CALL(cuGraphEventRecordNodeGetEvent, 11010)
{
    return graph_node_set(a, GET_RECORD);
}

CALL(cuGraphEventWaitNodeGetEvent, 11010)
{
    return graph_node_set(a, GET_WAIT);
}

CALL(cuGraphChildGraphNodeGetGraph, 10000)
{
    return graph_node_set(a, GET_CHILD);
}

CALL(cuGraphHostNodeGetParams, 10000)
{
    return graph_node_set(a, GET_HOST);
}

CALL(cuGraphEventRecordNodeSetEvent, 11010)
{
    return graph_node_set(a, SET_RECORD);
}

CALL(cuGraphEventWaitNodeSetEvent, 11010)
{
    return graph_node_set(a, SET_WAIT);
}

CALL(cuGraphInstantiateWithParams, 12000)
{
    CUDA_GRAPH_INSTANTIATE_PARAMS p;
    memset(&p, 0, sizeof p);
    CUgraphExec made;
    CUresult r = drv.cuGraphInstantiateWithParams_12000(&made, a->graph, &p);
    if (r == CUDA_SUCCESS)
        o->exec = made;
    return r;
}

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

