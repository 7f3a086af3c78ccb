/* The fake driver's core (fake.c, fake_registry.c, fake_resolver.c): the
 * lock, the call prologue, the call log, faults and misuse, the handle
 * registry, the resolver's entry table, and the hooks through which the areas
 * above it (one per object family, each with its own header) register with
 * it. The core names no area. Nothing here is API: the public surface is
 * cuscope/fake.h, and the entry points reach users only as function pointers
 * handed out by the resolver.
 *
 * Locking: one process-wide mutex (fake_lock()) guards every piece of shared
 * state below. Functions named *_locked expect it held. The only unlocked
 * state is each thread's own emulated context stack (fake_context.c). */
#ifndef CUSCOPE_LIB_FAKE_CORE_H
#define CUSCOPE_LIB_FAKE_CORE_H

#include <cuda.h>
#include <cudaTypedefs.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cuscope/fake.h"

#define FAKE_HIDDEN __attribute__((visibility("hidden")))
#define FAKE_PRINTF(f, a) __attribute__((format(printf, f, a)))

/* --- the entry points --------------------------------------------------------
 * X(symbol, version, name, flags): one line per ABI variant the resolver hands
 * out.
 *   symbol   the base name asked for in cuGetProcAddress
 *   version  the ABI version; PFN_<symbol>_v<version> is the type, and the
 *            declarations below make a wrong signature fail to compile
 *   name     the log name (what cus_fake_calls_of/fail_entry also match), and
 *            the implementation is fake_<name>. The oldest variant of a symbol
 *            logs under the base name; newer ones under the driver's exported
 *            name (cuCtxCreate_v4).
 *   flags    FAKE_UNCOUNTED: never counted, logged or failed;
 *            FAKE_BEFORE_INIT: works before cuInit;
 *            FAKE_CAPTURE_UNSAFE: a "potentially unsafe" call during stream
 *            capture (an allocation, a free, a synchronous copy or memset, a
 *            context synchronization): refused by the capture modes' rules
 *            (fake_graph.c).
 * Newer variants are listed even where cuscope uses an older one, because a
 * real driver answers a request at version V with the newest variant <= V: a
 * fake that handed out the old signature there would break a caller (a tracer,
 * a user) that asks at a newer version. */
enum { FAKE_UNCOUNTED = 1, FAKE_BEFORE_INIT = 2, FAKE_CAPTURE_UNSAFE = 4 };

#define FAKE_ENTRIES(X)                                                               \
    X(cuGetProcAddress, 12000, cuGetProcAddress, FAKE_UNCOUNTED)                      \
    X(cuGetErrorName, 6000, cuGetErrorName, FAKE_UNCOUNTED)                           \
    X(cuGetErrorString, 6000, cuGetErrorString, FAKE_UNCOUNTED)                       \
    X(cuDriverGetVersion, 2020, cuDriverGetVersion, FAKE_BEFORE_INIT)                 \
    X(cuInit, 2000, cuInit, FAKE_BEFORE_INIT)                                         \
    X(cuDeviceGetCount, 2000, cuDeviceGetCount, 0)                                    \
    X(cuDeviceGet, 2000, cuDeviceGet, 0)                                              \
    X(cuDeviceGetName, 2000, cuDeviceGetName, 0)                                      \
    X(cuDeviceGetUuid, 11040, cuDeviceGetUuid, 0)                                     \
    X(cuDeviceTotalMem, 3020, cuDeviceTotalMem, 0)                                    \
    X(cuDeviceGetAttribute, 2000, cuDeviceGetAttribute, 0)                            \
    X(cuDevicePrimaryCtxRetain, 7000, cuDevicePrimaryCtxRetain, 0)                    \
    X(cuDevicePrimaryCtxRelease, 11000, cuDevicePrimaryCtxRelease, 0)                 \
    X(cuCtxCreate, 3020, cuCtxCreate, 0)                                              \
    X(cuCtxCreate, 11040, cuCtxCreate_v3, 0)                                          \
    X(cuCtxCreate, 12050, cuCtxCreate_v4, 0)                                          \
    X(cuCtxDestroy, 4000, cuCtxDestroy, 0)                                            \
    X(cuCtxPushCurrent, 4000, cuCtxPushCurrent, 0)                                    \
    X(cuCtxPopCurrent, 4000, cuCtxPopCurrent, 0)                                      \
    X(cuCtxSetCurrent, 4000, cuCtxSetCurrent, 0)                                      \
    X(cuCtxGetCurrent, 4000, cuCtxGetCurrent, 0)                                      \
    X(cuCtxGetDevice, 2000, cuCtxGetDevice, 0)                                        \
    X(cuCtxGetFlags, 7000, cuCtxGetFlags, 0)                                          \
    X(cuCtxSynchronize, 2000, cuCtxSynchronize, FAKE_CAPTURE_UNSAFE)                  \
    X(cuCtxGetApiVersion, 3020, cuCtxGetApiVersion, 0)                                \
    X(cuCtxGetLimit, 3010, cuCtxGetLimit, 0)                                          \
    X(cuCtxSetLimit, 3010, cuCtxSetLimit, 0)                                          \
    X(cuCtxGetCacheConfig, 3020, cuCtxGetCacheConfig, 0)                              \
    X(cuCtxSetCacheConfig, 3020, cuCtxSetCacheConfig, 0)                              \
    X(cuCtxGetSharedMemConfig, 4020, cuCtxGetSharedMemConfig, 0)                      \
    X(cuCtxSetSharedMemConfig, 4020, cuCtxSetSharedMemConfig, 0)                      \
    X(cuCtxGetStreamPriorityRange, 5050, cuCtxGetStreamPriorityRange, 0)             \
    X(cuCtxEnablePeerAccess, 4000, cuCtxEnablePeerAccess, 0)                          \
    X(cuCtxDisablePeerAccess, 4000, cuCtxDisablePeerAccess, 0)                        \
    X(cuDeviceCanAccessPeer, 4000, cuDeviceCanAccessPeer, 0)                          \
    X(cuStreamCreate, 2000, cuStreamCreate, 0)                                        \
    X(cuStreamCreateWithPriority, 5050, cuStreamCreateWithPriority, 0)                \
    X(cuStreamDestroy, 4000, cuStreamDestroy, 0)                                      \
    X(cuStreamSynchronize, 2000, cuStreamSynchronize, FAKE_CAPTURE_UNSAFE)                              \
    X(cuStreamQuery, 2000, cuStreamQuery, 0)                                          \
    X(cuStreamWaitEvent, 3020, cuStreamWaitEvent, 0)                                  \
    X(cuStreamGetPriority, 5050, cuStreamGetPriority, 0)                              \
    X(cuStreamGetFlags, 5050, cuStreamGetFlags, 0)                                    \
    X(cuStreamGetCtx, 9020, cuStreamGetCtx, 0)                                        \
    X(cuLaunchHostFunc, 10000, cuLaunchHostFunc, 0)                                   \
    X(cuEventCreate, 2000, cuEventCreate, 0)                                          \
    X(cuEventRecord, 2000, cuEventRecord, 0)                                          \
    X(cuEventSynchronize, 2000, cuEventSynchronize, 0)                                \
    X(cuEventQuery, 2000, cuEventQuery, 0)                                            \
    X(cuEventElapsedTime, 2000, cuEventElapsedTime, 0)                                \
    X(cuEventDestroy, 4000, cuEventDestroy, 0)                                        \
    X(cuMemGetInfo, 3020, cuMemGetInfo, 0)                                            \
    X(cuMemAlloc, 3020, cuMemAlloc, FAKE_CAPTURE_UNSAFE)                              \
    X(cuMemFree, 3020, cuMemFree, FAKE_CAPTURE_UNSAFE)                                \
    X(cuMemAllocAsync, 11020, cuMemAllocAsync, 0)                                     \
    X(cuMemFreeAsync, 11020, cuMemFreeAsync, 0)                                       \
    FAKE_ENTRIES_POOLS_(X)                                                            \
    X(cuMemAllocHost, 3020, cuMemAllocHost, FAKE_CAPTURE_UNSAFE)                      \
    X(cuMemHostAlloc, 2020, cuMemHostAlloc, FAKE_CAPTURE_UNSAFE)                      \
    X(cuMemFreeHost, 2000, cuMemFreeHost, FAKE_CAPTURE_UNSAFE)                        \
    X(cuMemAllocManaged, 6000, cuMemAllocManaged, FAKE_CAPTURE_UNSAFE)                \
    X(cuMemHostRegister, 6050, cuMemHostRegister, FAKE_CAPTURE_UNSAFE)                \
    X(cuMemHostUnregister, 4000, cuMemHostUnregister, FAKE_CAPTURE_UNSAFE)            \
    X(cuMemHostGetDevicePointer, 3020, cuMemHostGetDevicePointer, 0)                  \
    X(cuPointerGetAttribute, 4000, cuPointerGetAttribute, 0)                          \
    X(cuMemcpy, 4000, cuMemcpy, FAKE_CAPTURE_UNSAFE)                                  \
    X(cuMemcpyAsync, 4000, cuMemcpyAsync, 0)                                          \
    X(cuMemcpyHtoD, 3020, cuMemcpyHtoD, FAKE_CAPTURE_UNSAFE)                          \
    X(cuMemcpyDtoH, 3020, cuMemcpyDtoH, FAKE_CAPTURE_UNSAFE)                          \
    X(cuMemcpyDtoD, 3020, cuMemcpyDtoD, FAKE_CAPTURE_UNSAFE)                          \
    X(cuMemcpyHtoDAsync, 3020, cuMemcpyHtoDAsync, 0)                                  \
    X(cuMemcpyDtoHAsync, 3020, cuMemcpyDtoHAsync, 0)                                  \
    X(cuMemcpyDtoDAsync, 3020, cuMemcpyDtoDAsync, 0)                                  \
    X(cuMemcpyPeer, 4000, cuMemcpyPeer, FAKE_CAPTURE_UNSAFE)                          \
    X(cuMemcpyPeerAsync, 4000, cuMemcpyPeerAsync, 0)                                  \
    X(cuMemsetD8, 3020, cuMemsetD8, FAKE_CAPTURE_UNSAFE)                              \
    X(cuMemsetD16, 3020, cuMemsetD16, FAKE_CAPTURE_UNSAFE)                            \
    X(cuMemsetD32, 3020, cuMemsetD32, FAKE_CAPTURE_UNSAFE)                            \
    X(cuMemsetD8Async, 3020, cuMemsetD8Async, 0)                                      \
    X(cuMemsetD16Async, 3020, cuMemsetD16Async, 0)                                    \
    X(cuMemsetD32Async, 3020, cuMemsetD32Async, 0)                                    \
    X(cuMemPrefetchAsync, 8000, cuMemPrefetchAsync, 0)                                \
    X(cuMemAdvise, 8000, cuMemAdvise, 0)                                              \
    X(cuModuleLoad, 2000, cuModuleLoad, 0)                                            \
    X(cuModuleLoadData, 2000, cuModuleLoadData, 0)                                    \
    X(cuModuleLoadDataEx, 2010, cuModuleLoadDataEx, 0)                                \
    X(cuModuleLoadFatBinary, 2000, cuModuleLoadFatBinary, 0)                          \
    X(cuModuleUnload, 2000, cuModuleUnload, FAKE_CAPTURE_UNSAFE)                      \
    X(cuModuleGetFunction, 2000, cuModuleGetFunction, 0)                              \
    X(cuModuleGetGlobal, 3020, cuModuleGetGlobal, 0)                                  \
    X(cuFuncGetAttribute, 2020, cuFuncGetAttribute, 0)                                \
    X(cuFuncSetAttribute, 9000, cuFuncSetAttribute, 0)                                \
    X(cuFuncSetCacheConfig, 3000, cuFuncSetCacheConfig, 0)                            \
    X(cuFuncSetSharedMemConfig, 4020, cuFuncSetSharedMemConfig, 0)                    \
    X(cuLaunchKernel, 4000, cuLaunchKernel, 0)                                        \
    X(cuLaunchKernelEx, 11060, cuLaunchKernelEx, 0)                                   \
    X(cuOccupancyMaxPotentialBlockSize, 6050, cuOccupancyMaxPotentialBlockSize, 0)    \
    X(cuOccupancyMaxActiveBlocksPerMultiprocessor, 6050,                              \
      cuOccupancyMaxActiveBlocksPerMultiprocessor, 0)                                 \
    X(cuStreamBeginCapture, 10010, cuStreamBeginCapture, 0)                         \
    X(cuStreamEndCapture, 10000, cuStreamEndCapture, 0)                             \
    X(cuStreamIsCapturing, 10000, cuStreamIsCapturing, 0)                           \
    X(cuStreamGetCaptureInfo, 10010, cuStreamGetCaptureInfo, 0)                     \
    X(cuStreamGetCaptureInfo, 11030, cuStreamGetCaptureInfo_v2, 0)                  \
    X(cuThreadExchangeStreamCaptureMode, 10010, cuThreadExchangeStreamCaptureMode, 0) \
    X(cuGraphDestroy, 10000, cuGraphDestroy, 0)                                     \
    X(cuGraphGetNodes, 10000, cuGraphGetNodes, 0)                                   \
    X(cuGraphNodeGetType, 10000, cuGraphNodeGetType, 0)                             \
    X(cuGraphInstantiateWithFlags, 11040, cuGraphInstantiateWithFlags, 0)           \
    X(cuGraphExecDestroy, 10000, cuGraphExecDestroy, FAKE_CAPTURE_UNSAFE)                             \
    X(cuGraphLaunch, 10000, cuGraphLaunch, 0)                                       \
    X(cuGraphUpload, 11010, cuGraphUpload, 0)                                       \
    X(cuGraphExecUpdate, 10020, cuGraphExecUpdate, 0)                               \
    X(cuGraphExecUpdate, 12000, cuGraphExecUpdate_v2, 0)                            \
    X(cuIpcGetMemHandle, 4010, cuIpcGetMemHandle, 0)                                \
    X(cuIpcOpenMemHandle, 11000, cuIpcOpenMemHandle, 0)                             \
    X(cuIpcCloseMemHandle, 4010, cuIpcCloseMemHandle, 0)                            \
    X(cuIpcGetEventHandle, 4010, cuIpcGetEventHandle, 0)                            \
    X(cuIpcOpenEventHandle, 4010, cuIpcOpenEventHandle, 0)                          \
    X(cuArrayCreate, 3020, cuArrayCreate, FAKE_CAPTURE_UNSAFE)                       \
    X(cuArray3DCreate, 3020, cuArray3DCreate, FAKE_CAPTURE_UNSAFE)                   \
    X(cuArrayDestroy, 2000, cuArrayDestroy, FAKE_CAPTURE_UNSAFE)                     \
    X(cuArray3DGetDescriptor, 3020, cuArray3DGetDescriptor, 0)                       \
    X(cuMipmappedArrayCreate, 5000, cuMipmappedArrayCreate, FAKE_CAPTURE_UNSAFE)     \
    X(cuMipmappedArrayGetLevel, 5000, cuMipmappedArrayGetLevel, 0)                   \
    X(cuMipmappedArrayDestroy, 5000, cuMipmappedArrayDestroy, FAKE_CAPTURE_UNSAFE)   \
    X(cuMemAllocPitch, 3020, cuMemAllocPitch, FAKE_CAPTURE_UNSAFE)                   \
    X(cuMemcpy2D, 3020, cuMemcpy2D, FAKE_CAPTURE_UNSAFE)                             \
    X(cuMemcpy2DAsync, 3020, cuMemcpy2DAsync, 0)                                     \
    X(cuMemcpy3D, 3020, cuMemcpy3D, FAKE_CAPTURE_UNSAFE)                             \
    X(cuMemcpy3DAsync, 3020, cuMemcpy3DAsync, 0)                                     \
    X(cuTexObjectCreate, 5000, cuTexObjectCreate, 0)                                 \
    X(cuTexObjectDestroy, 5000, cuTexObjectDestroy, 0)                               \
    X(cuTexObjectGetResourceDesc, 5000, cuTexObjectGetResourceDesc, 0)               \
    X(cuSurfObjectCreate, 5000, cuSurfObjectCreate, 0)                               \
    X(cuSurfObjectDestroy, 5000, cuSurfObjectDestroy, 0)                             \
    FAKE_ENTRIES_VMM_(X)                                                              \
    FAKE_ENTRIES_LINK_(X)                                                             \
    FAKE_ENTRIES_12020_(X)                                                            \
    FAKE_ENTRIES_12030_(X)                                                            \
    FAKE_ENTRIES_12040_(X)                                                            \
    FAKE_ENTRIES_12050_(X)                                                            \
    FAKE_ENTRIES_12080_(X)                                                            \
    FAKE_ENTRIES_13000_(X)                                                            \
    FAKE_ENTRIES_LIBRARY_(X)                                                          \
    FAKE_ENTRIES_GRAPH_NODES_(X)                                                      \
    FAKE_ENTRIES_GRAPH_INSPECT_(X)                                                    \
    FAKE_ENTRIES_GRAPH_MEMORY_(X)                                                     \
    FAKE_ENTRIES_GREEN_(X)                                                            \
    FAKE_ENTRIES_TENSOR_MAP_(X)                                                       \
    FAKE_ENTRIES_CONDITIONAL_(X)                                                      \
    FAKE_ENTRIES_CAPTURE_TO_GRAPH_(X)

/* Capture into a graph (fake_graph_capture.c): 12.3. */
#if CUDA_VERSION >= 12030
#define FAKE_HAVE_CAPTURE_TO_GRAPH_ENTRIES 1
#define FAKE_ENTRIES_CAPTURE_TO_GRAPH_(X)                                      \
    X(cuStreamBeginCaptureToGraph, 12030, cuStreamBeginCaptureToGraph, 0)
#else
#define FAKE_ENTRIES_CAPTURE_TO_GRAPH_(X)
#endif

/* Conditional nodes (fake_graph_conditional.c): 12.3. */
#if CUDA_VERSION >= 12030
#define FAKE_HAVE_CONDITIONAL_ENTRIES 1
#define FAKE_ENTRIES_CONDITIONAL_(X)                                           \
    X(cuGraphConditionalHandleCreate, 12030, cuGraphConditionalHandleCreate, 0) \
    X(cuGraphAddNode, 12030, cuGraphAddNode_v2, 0)
#else
#define FAKE_ENTRIES_CONDITIONAL_(X)
#endif

/* Graph memory nodes built by hand and the device's graph memory
 * (fake_graph_memory.c): 11.4. */
#define FAKE_ENTRIES_GRAPH_MEMORY_(X)                                          \
    X(cuGraphAddMemAllocNode, 11040, cuGraphAddMemAllocNode, 0)                \
    X(cuGraphAddMemFreeNode, 11040, cuGraphAddMemFreeNode, 0)                  \
    X(cuGraphMemAllocNodeGetParams, 11040, cuGraphMemAllocNodeGetParams, 0)    \
    X(cuGraphMemFreeNodeGetParams, 11040, cuGraphMemFreeNodeGetParams, 0)      \
    X(cuDeviceGraphMemTrim, 11040, cuDeviceGraphMemTrim, 0)                    \
    X(cuDeviceGetGraphMemAttribute, 11040, cuDeviceGetGraphMemAttribute, 0)    \
    X(cuDeviceSetGraphMemAttribute, 11040, cuDeviceSetGraphMemAttribute, 0)

/* Graphs built by hand and per-node updates (fake_graph_nodes.c). */
#define FAKE_ENTRIES_GRAPH_NODES_(X)                                           \
    X(cuGraphCreate, 10000, cuGraphCreate, 0)                                  \
    X(cuGraphAddKernelNode, 10000, cuGraphAddKernelNode, 0)                    \
    X(cuGraphAddKernelNode, 12000, cuGraphAddKernelNode_v2, 0)                 \
    X(cuGraphAddMemcpyNode, 10000, cuGraphAddMemcpyNode, 0)                    \
    X(cuGraphAddMemsetNode, 10000, cuGraphAddMemsetNode, 0)                    \
    X(cuGraphAddHostNode, 10000, cuGraphAddHostNode, 0)                        \
    X(cuGraphAddEventRecordNode, 11010, cuGraphAddEventRecordNode, 0)          \
    X(cuGraphAddEventWaitNode, 11010, cuGraphAddEventWaitNode, 0)              \
    X(cuGraphAddEmptyNode, 10000, cuGraphAddEmptyNode, 0)                      \
    X(cuGraphAddChildGraphNode, 10000, cuGraphAddChildGraphNode, 0)            \
    X(cuGraphAddDependencies, 10000, cuGraphAddDependencies, 0)                \
    FAKE_ENTRIES_GRAPH_NODES_12030_(X)                                         \
    X(cuGraphGetRootNodes, 10000, cuGraphGetRootNodes, 0)                      \
    X(cuGraphExecKernelNodeSetParams, 10010, cuGraphExecKernelNodeSetParams, 0) \
    X(cuGraphExecKernelNodeSetParams, 12000, cuGraphExecKernelNodeSetParams_v2, 0) \
    X(cuGraphExecMemcpyNodeSetParams, 10020, cuGraphExecMemcpyNodeSetParams, 0) \
    X(cuGraphExecMemsetNodeSetParams, 10020, cuGraphExecMemsetNodeSetParams, 0) \
    X(cuGraphNodeSetEnabled, 11060, cuGraphNodeSetEnabled, 0)                  \
    X(cuGraphKernelNodeSetParams, 10000, cuGraphKernelNodeSetParams, 0)        \
    X(cuGraphKernelNodeSetParams, 12000, cuGraphKernelNodeSetParams_v2, 0)     \
    X(cuGraphMemcpyNodeSetParams, 10000, cuGraphMemcpyNodeSetParams, 0)        \
    X(cuGraphMemsetNodeSetParams, 10000, cuGraphMemsetNodeSetParams, 0)        \
    X(cuGraphHostNodeSetParams, 10000, cuGraphHostNodeSetParams, 0)            \
    X(cuGraphEventRecordNodeSetEvent, 11010, cuGraphEventRecordNodeSetEvent, 0) \
    X(cuGraphEventWaitNodeSetEvent, 11010, cuGraphEventWaitNodeSetEvent, 0)   \
    X(cuGraphKernelNodeSetAttribute, 11000, cuGraphKernelNodeSetAttribute, 0) \
    X(cuGraphKernelNodeGetAttribute, 11000, cuGraphKernelNodeGetAttribute, 0) \
    X(cuGraphKernelNodeCopyAttributes, 11000, cuGraphKernelNodeCopyAttributes, 0) \
    X(cuGraphEventRecordNodeGetEvent, 11010, cuGraphEventRecordNodeGetEvent, 0) \
    X(cuGraphEventWaitNodeGetEvent, 11010, cuGraphEventWaitNodeGetEvent, 0)   \
    X(cuGraphChildGraphNodeGetGraph, 10000, cuGraphChildGraphNodeGetGraph, 0) \
    X(cuGraphHostNodeGetParams, 10000, cuGraphHostNodeGetParams, 0)
#if CUDA_VERSION >= 12030
#define FAKE_ENTRIES_GRAPH_NODES_12030_(X)                                     \
    X(cuGraphAddDependencies, 12030, cuGraphAddDependencies_v2, 0)
#else
#define FAKE_ENTRIES_GRAPH_NODES_12030_(X)
#endif

/* Graph inspection and editing (fake_graph_inspect.c); the edge-data
 * variants from 12.3. */
#define FAKE_ENTRIES_GRAPH_INSPECT_(X)                                         \
    X(cuGraphNodeGetDependencies, 10000, cuGraphNodeGetDependencies, 0)        \
    X(cuGraphNodeGetDependentNodes, 10000, cuGraphNodeGetDependentNodes, 0)    \
    X(cuGraphGetEdges, 10000, cuGraphGetEdges, 0)                              \
    X(cuGraphRemoveDependencies, 10000, cuGraphRemoveDependencies, 0)          \
    FAKE_ENTRIES_GRAPH_INSPECT_12030_(X)                                       \
    X(cuGraphNodeGetEnabled, 11060, cuGraphNodeGetEnabled, 0)                  \
    X(cuGraphExecGetFlags, 12000, cuGraphExecGetFlags, 0)                      \
    X(cuGraphDebugDotPrint, 11030, cuGraphDebugDotPrint, 0)                    \
    X(cuGraphDestroyNode, 10000, cuGraphDestroyNode, 0)                        \
    X(cuGraphClone, 10000, cuGraphClone, 0)                                    \
    X(cuGraphNodeFindInClone, 10000, cuGraphNodeFindInClone, 0)                \
    X(cuGraphExecEventRecordNodeSetEvent, 11010, cuGraphExecEventRecordNodeSetEvent, 0) \
    X(cuGraphExecEventWaitNodeSetEvent, 11010, cuGraphExecEventWaitNodeSetEvent, 0) \
    X(cuGraphExecHostNodeSetParams, 10020, cuGraphExecHostNodeSetParams, 0)    \
    X(cuGraphExecChildGraphNodeSetParams, 11010, cuGraphExecChildGraphNodeSetParams, 0) \
    X(cuGraphInstantiateWithParams, 12000, cuGraphInstantiateWithParams, 0)
#if CUDA_VERSION >= 12030
#define FAKE_ENTRIES_GRAPH_INSPECT_12030_(X)                                   \
    X(cuGraphNodeGetDependencies, 12030, cuGraphNodeGetDependencies_v2, 0)     \
    X(cuGraphNodeGetDependentNodes, 12030, cuGraphNodeGetDependentNodes_v2, 0) \
    X(cuGraphGetEdges, 12030, cuGraphGetEdges_v2, 0)                           \
    X(cuGraphRemoveDependencies, 12030, cuGraphRemoveDependencies_v2, 0)
#else
#define FAKE_ENTRIES_GRAPH_INSPECT_12030_(X)
#endif

/* TMA tensor maps (fake_tensor_map.c): 12.0. */
#define FAKE_ENTRIES_TENSOR_MAP_(X)                                            \
    X(cuTensorMapEncodeTiled, 12000, cuTensorMapEncodeTiled, 0)                \
    X(cuTensorMapEncodeIm2col, 12000, cuTensorMapEncodeIm2col, 0)              \
    X(cuTensorMapReplaceAddress, 12000, cuTensorMapReplaceAddress, 0)

/* Memory pools (fake_pool.c). */
#define FAKE_ENTRIES_POOLS_(X)                                                 \
    X(cuDeviceGetDefaultMemPool, 11020, cuDeviceGetDefaultMemPool, 0)          \
    X(cuDeviceGetMemPool, 11020, cuDeviceGetMemPool, 0)                        \
    X(cuDeviceSetMemPool, 11020, cuDeviceSetMemPool, 0)                        \
    X(cuMemPoolCreate, 11020, cuMemPoolCreate, 0)                              \
    X(cuMemPoolDestroy, 11020, cuMemPoolDestroy, 0)                            \
    X(cuMemPoolSetAttribute, 11020, cuMemPoolSetAttribute, 0)                  \
    X(cuMemPoolGetAttribute, 11020, cuMemPoolGetAttribute, 0)                  \
    X(cuMemPoolTrimTo, 11020, cuMemPoolTrimTo, 0)                              \
    X(cuMemPoolSetAccess, 11020, cuMemPoolSetAccess, 0)                        \
    X(cuMemPoolGetAccess, 11020, cuMemPoolGetAccess, 0)                        \
    X(cuMemAllocFromPoolAsync, 11020, cuMemAllocFromPoolAsync, 0)              \
    X(cuMemPoolExportToShareableHandle, 11020, cuMemPoolExportToShareableHandle, 0) \
    X(cuMemPoolImportFromShareableHandle, 11020, cuMemPoolImportFromShareableHandle, 0) \
    X(cuMemPoolExportPointer, 11020, cuMemPoolExportPointer, 0)                \
    X(cuMemPoolImportPointer, 11020, cuMemPoolImportPointer, 0)

/* Virtual memory management (fake_vmm.c). */
#define FAKE_ENTRIES_VMM_(X)                                                   \
    X(cuMemCreate, 10020, cuMemCreate, 0)                                      \
    X(cuMemRelease, 10020, cuMemRelease, 0)                                    \
    X(cuMemGetAllocationGranularity, 10020, cuMemGetAllocationGranularity, 0)  \
    X(cuMemAddressReserve, 10020, cuMemAddressReserve, 0)                      \
    X(cuMemAddressFree, 10020, cuMemAddressFree, 0)                            \
    X(cuMemMap, 10020, cuMemMap, 0)                                            \
    X(cuMemUnmap, 10020, cuMemUnmap, 0)                                        \
    X(cuMemSetAccess, 10020, cuMemSetAccess, 0)                                \
    X(cuMemGetAccess, 10020, cuMemGetAccess, 0)                                \
    X(cuMemExportToShareableHandle, 10020, cuMemExportToShareableHandle, 0)    \
    X(cuMemImportFromShareableHandle, 10020, cuMemImportFromShareableHandle, 0) \
    X(cuMemRetainAllocationHandle, 11000, cuMemRetainAllocationHandle, 0)

/* JIT linking (fake_link.c). */
#define FAKE_ENTRIES_LINK_(X)                                                  \
    X(cuLinkCreate, 6050, cuLinkCreate, 0)                                     \
    X(cuLinkAddData, 6050, cuLinkAddData, 0)                                   \
    X(cuLinkAddFile, 6050, cuLinkAddFile, 0)                                   \
    X(cuLinkComplete, 5050, cuLinkComplete, 0)                                 \
    X(cuLinkDestroy, 5050, cuLinkDestroy, 0)

/* Newer variants with a changed signature, listed so that a caller asking at
 * a newer version gets the signature it expects; only with headers that
 * declare their types. */
#if CUDA_VERSION >= 12020
#define FAKE_HAVE_12020_ENTRIES 1
#define FAKE_ENTRIES_12020_(X)                                                 \
    X(cuMemPrefetchAsync, 12020, cuMemPrefetchAsync_v2, 0)                     \
    X(cuMemAdvise, 12020, cuMemAdvise_v2, 0)
#else
#define FAKE_ENTRIES_12020_(X)
#endif
/* Entry points that only exist from 12.3 and 12.4 (not new variants). */
#if CUDA_VERSION >= 12030
#define FAKE_HAVE_12030_ENTRIES 1
#define FAKE_ENTRIES_12030_(X)                                                 \
    X(cuFuncGetName, 12030, cuFuncGetName, 0)                                  \
    X(cuStreamGetCaptureInfo, 12030, cuStreamGetCaptureInfo_v3, 0)
#else
#define FAKE_ENTRIES_12030_(X)
#endif
#if CUDA_VERSION >= 12040
#define FAKE_HAVE_12040_ENTRIES 1
#define FAKE_ENTRIES_12040_(X)                                                 \
    X(cuModuleGetFunctionCount, 12040, cuModuleGetFunctionCount, 0)            \
    X(cuModuleEnumerateFunctions, 12040, cuModuleEnumerateFunctions, 0)        \
    X(cuFuncGetParamInfo, 12040, cuFuncGetParamInfo, 0)
#else
#define FAKE_ENTRIES_12040_(X)
#endif
#if CUDA_VERSION >= 12050
#define FAKE_HAVE_12050_ENTRIES 1
#define FAKE_ENTRIES_12050_(X) X(cuStreamGetCtx, 12050, cuStreamGetCtx_v2, 0)
#else
#define FAKE_ENTRIES_12050_(X)
#endif
#if CUDA_VERSION >= 12080
#define FAKE_HAVE_12080_ENTRIES 1 /* same signature as the 2000 one */
#define FAKE_ENTRIES_12080_(X) X(cuEventElapsedTime, 12080, cuEventElapsedTime_v2, 0)
#else
#define FAKE_ENTRIES_12080_(X)
#endif

/* The variants that take an explicit context (CUDA 13.0); only with headers
 * that declare their types. */
#if CUDA_VERSION >= 13000
#define FAKE_HAVE_13000_ENTRIES 1
#define FAKE_ENTRIES_13000_(X)                                                 \
    X(cuCtxGetDevice, 13000, cuCtxGetDevice_v2, 0)                             \
    X(cuCtxSynchronize, 13000, cuCtxSynchronize_v2, FAKE_CAPTURE_UNSAFE)
#else
#define FAKE_ENTRIES_13000_(X)
#endif

/* Libraries and kernels (fake_library.c): 12.0, cuKernelGetName 12.3, the
 * enumeration and cuKernelGetParamInfo 12.4. */
#if CUDA_VERSION >= 12040
#define FAKE_HAVE_LIBRARY_ENTRIES 1
#define FAKE_ENTRIES_LIBRARY_(X)                                               \
    X(cuLibraryLoadData, 12000, cuLibraryLoadData, 0)                          \
    X(cuLibraryLoadFromFile, 12000, cuLibraryLoadFromFile, 0)                  \
    X(cuLibraryUnload, 12000, cuLibraryUnload, FAKE_CAPTURE_UNSAFE)            \
    X(cuLibraryGetKernel, 12000, cuLibraryGetKernel, 0)                        \
    X(cuLibraryGetKernelCount, 12040, cuLibraryGetKernelCount, 0)              \
    X(cuLibraryEnumerateKernels, 12040, cuLibraryEnumerateKernels, 0)          \
    X(cuLibraryGetGlobal, 12000, cuLibraryGetGlobal, 0)                        \
    X(cuLibraryGetManaged, 12000, cuLibraryGetManaged, 0)                      \
    X(cuLibraryGetUnifiedFunction, 12000, cuLibraryGetUnifiedFunction, 0)      \
    X(cuKernelGetFunction, 12000, cuKernelGetFunction, 0)                      \
    X(cuKernelGetAttribute, 12000, cuKernelGetAttribute, 0)                    \
    X(cuKernelSetAttribute, 12000, cuKernelSetAttribute, 0)                    \
    X(cuKernelGetName, 12030, cuKernelGetName, 0)                              \
    X(cuKernelGetParamInfo, 12040, cuKernelGetParamInfo, 0)
#else
#define FAKE_ENTRIES_LIBRARY_(X)
#endif

/* Green contexts (fake_green.c): 12.4, cuGreenCtxStreamCreate 12.5. */
#if CUDA_VERSION >= 12050
#define FAKE_HAVE_GREEN_ENTRIES 1
#define FAKE_ENTRIES_GREEN_(X)                                                 \
    X(cuDeviceGetDevResource, 12040, cuDeviceGetDevResource, 0)                \
    X(cuCtxGetDevResource, 12040, cuCtxGetDevResource, 0)                      \
    X(cuDevSmResourceSplitByCount, 12040, cuDevSmResourceSplitByCount, 0)      \
    X(cuDevResourceGenerateDesc, 12040, cuDevResourceGenerateDesc, 0)          \
    X(cuGreenCtxCreate, 12040, cuGreenCtxCreate, 0)                            \
    X(cuGreenCtxDestroy, 12040, cuGreenCtxDestroy, 0)                          \
    X(cuCtxFromGreenCtx, 12040, cuCtxFromGreenCtx, 0)                          \
    X(cuGreenCtxStreamCreate, 12050, cuGreenCtxStreamCreate, 0)                \
    X(cuGreenCtxRecordEvent, 12040, cuGreenCtxRecordEvent, 0)                  \
    X(cuGreenCtxWaitEvent, 12040, cuGreenCtxWaitEvent, 0)
#else
#define FAKE_ENTRIES_GREEN_(X)
#endif

typedef enum fake_entry_id {
#define FAKE_ENTRY_ID_(symbol, version, name, flags) FAKE_E_##name,
    FAKE_ENTRIES(FAKE_ENTRY_ID_)
#undef FAKE_ENTRY_ID_
    FAKE_ENTRY_COUNT
} fake_entry_id;

/* Declares fake_<name> with exactly the type of PFN_<symbol>_v<version>, so
 * that each definition is checked against the driver's ABI. */
#define FAKE_ENTRY_DECL_(symbol, version, name, flags)                         \
    FAKE_HIDDEN extern __typeof__(*(PFN_##symbol##_v##version)0) fake_##name;
FAKE_ENTRIES(FAKE_ENTRY_DECL_)
#undef FAKE_ENTRY_DECL_

typedef struct fake_entry {
    const char *symbol; /* base name */
    int version;
    const char *name; /* log name */
    int flags;
    void (*fn)(void); /* the implementation, as a generic function pointer */
} fake_entry;

/* The table, indexed by fake_entry_id (fake_resolver.c). */
FAKE_HIDDEN extern const fake_entry fake_entries[FAKE_ENTRY_COUNT];

/* Whether `name` designates entry id: its log name or its base symbol. */
FAKE_HIDDEN bool fake_entry_matches(fake_entry_id id, const char *name);
/* Whether any counted entry matches name. */
FAKE_HIDDEN bool fake_entry_name_known(const char *name);

/* --- the lock and the call prologue (fake.c) --------------------------------- */

FAKE_HIDDEN void fake_lock(void);
FAKE_HIDDEN void fake_unlock(void);

/* The prologue of every counted entry point: takes the lock, applies the
 * default configuration if nothing was installed yet, counts and logs the
 * call, fires armed faults, and checks cuInit. Returns true with the lock held;
 * false with the lock released and *result set to what the call must return. */
FAKE_HIDDEN bool fake_enter(fake_entry_id id, CUresult *result);
/* The epilogue: releases the lock and returns r. */
FAKE_HIDDEN CUresult fake_leave(CUresult r);
/* Whether a potentially unsafe call made now is refused (a capture prohibits
 * it, in the thread's interaction mode); a refusal invalidates the captures
 * that prohibit it. For the calls that are unsafe only in some cases
 * (cuMemFreeAsync outside a capture); the others say FAKE_CAPTURE_UNSAFE. */
FAKE_HIDDEN bool fake_unsafe_call_refused_locked(void);
/* Whether a cuCtxSynchronize of c is refused now (and the captures that
 * refuse it invalidated). */
FAKE_HIDDEN bool fake_context_sync_refused_locked(CUcontext c);

#define FAKE_ENTER(name)                                                       \
    do {                                                                       \
        CUresult fake_enter_r_;                                                \
        if (!fake_enter(FAKE_E_##name, &fake_enter_r_))                        \
            return fake_enter_r_;                                              \
    } while (0)

/* Waits on cv, releasing the lock meanwhile (pthread_cond_wait on the fake's
 * mutex); the caller's current_call is kept across the wait. Everything may
 * have changed on return: callers recheck their state. */
FAKE_HIDDEN void fake_wait_locked(pthread_cond_t *cv);

/* Records a misuse (use after destroy, double destroy, ...): counted, and the
 * text kept for cus_fake_last_misuse(), with the entry point appended. */
FAKE_HIDDEN void fake_misuse_locked(const char *fmt, ...) FAKE_PRINTF(1, 2);

/* Applies the default configuration if the fake was never installed, so the
 * resolver and the entry points also work without cus_fake_install(). */
FAKE_HIDDEN void fake_ensure_configured_locked(void);

/* Whether the calling thread is running a host function: the driver thread
 * (fake_tls_driver_thread), or a caller running one itself, or a kernel's host
 * implementation (fake_tls_inline_host_fn). The stream engine sets them; the
 * prologue and the uncounted entry points refuse such a thread. */
FAKE_HIDDEN extern _Thread_local bool fake_tls_driver_thread;
FAKE_HIDDEN extern _Thread_local bool fake_tls_inline_host_fn;
FAKE_HIDDEN bool fake_in_host_function(void);

/* --- areas: what each object family registers with the core ----------------------
 * The core names no area. Each area (device, context, stream, event, memory,
 * module, graph) describes its hooks in a const fake_area and registers it
 * from a constructor (FAKE_AREA); the core calls them in the orders given. */
struct fake_op;

/* The executor of one kind of queued stream operation (fake_op_kind), run by
 * the stream engine when the operation reaches the head of its queue. */
enum {
    FAKE_OP_COUNTS_AS_WORK = 1,        /* bumps the work counter (event timing) */
    FAKE_OP_DEAD_WHEN_POISONED = 2,    /* completes with the sticky error, unrun */
};
#define FAKE_OP_KIND_SLOTS 16
typedef struct fake_op_executor {
    int kind;
    unsigned int flags;
    /* Executes op; its outcome. May release the lock. NULL: nothing to do. */
    CUresult (*execute_locked)(const struct fake_op *op);
    /* Frees what op owns (done, or dropped at reset); NULL: nothing. */
    void (*free_payload)(struct fake_op *op);
} fake_op_executor;

typedef struct fake_area {
    const char *name;
    /* The order of the reset hooks (lower first) and of the teardown hooks. */
    int reset_order, teardown_order;
    /* Whether cfg is acceptable to this area (cus_fake_install); NULL: yes. */
    bool (*config_valid)(const cus_fake_config *cfg);
    /* Without the lock, before a reset: stops what runs on its own. */
    void (*shutdown)(void);
    /* Drops everything the area holds and applies cfg (NULL: the defaults);
     * before the registry is cleared. */
    void (*reset_locked)(const cus_fake_config *cfg);
    /* In a fork() child, with the lock re-initialised. */
    void (*fork_child)(void);
    /* A FAKE_CAPTURE_UNSAFE entry point: true refuses it. */
    bool (*unsafe_call_locked)(void);
    /* cuCtxSynchronize of c: true refuses it (a capture open in c, on any
     * thread, in any interaction mode: an H200's answers, probes.c). */
    bool (*context_sync_refused_locked)(CUcontext c);
    /* A context's teardown: mark what c owns with the ticket; later destroy
     * what carries it. */
    void (*doom_locked)(CUcontext c, unsigned long ticket);
    void (*destroy_doomed_locked)(CUcontext c, unsigned long ticket);
    const fake_op_executor *executors;
    size_t executor_count;
} fake_area;

FAKE_HIDDEN void fake_area_register(const fake_area *area);
#define FAKE_AREA(descriptor)                                                  \
    __attribute__((constructor)) static void fake_register_area_(void)         \
    {                                                                          \
        fake_area_register(&(descriptor));                                     \
    }

/* The executor registered for an operation kind, or NULL. */
FAKE_HIDDEN const fake_op_executor *fake_op_executor_of(int kind);
/* Every area's doom, then (later) destroy hooks, in teardown order. */
FAKE_HIDDEN void fake_areas_doom_locked(CUcontext c, unsigned long ticket);
FAKE_HIDDEN void fake_areas_destroy_doomed_locked(CUcontext c, unsigned long ticket);

/* --- the handle registry (fake_registry.c) ------------------------------------
 * Every handle the fake issues is a record that starts with a fake_handle, and
 * is registered under the value the API hands out (its key). Records are never
 * freed or reused before the next install, so a destroyed handle stays
 * recognisable: use after destroy and double destroy are reported instead of
 * being undefined behaviour. Lookup never dereferences the key, so a garbage
 * handle is just "unknown". */
typedef enum fake_handle_state {
    FAKE_LIVE = 0,
    FAKE_DESTROYED, /* destroyed by the API; the record stays as a tombstone */
    FAKE_INACTIVE,  /* a primary context with a retain count of 0 */
} fake_handle_state;

typedef struct fake_handle {
    cus_fake_handle_kind kind;
    fake_handle_state state;
    unsigned long id; /* issue order since install, from 1 */
    uintptr_t key;    /* the registered value: the record's address, or e.g. a device address */
} fake_handle;

/* A new zeroed record of `size` bytes (>= sizeof(fake_handle)) of `kind`,
 * live and registered under key (0: the record's own address). NULL when out
 * of host memory. */
FAKE_HIDDEN void *fake_handle_new_locked(cus_fake_handle_kind kind, size_t size, uintptr_t key);
/* The record registered under key, or NULL. */
FAKE_HIDDEN fake_handle *fake_handle_find_locked(uintptr_t key);
/* Takes a new record out of the live counts for good: a part of another
 * counted handle (a green context's own context). Its state is then set
 * directly, never with fake_handle_set_state_locked. */
FAKE_HIDDEN void fake_handle_uncount_locked(fake_handle *h);
/* Changes a record's state and keeps the live counts. */
FAKE_HIDDEN void fake_handle_set_state_locked(fake_handle *h, fake_handle_state state);
/* Live records of kind (CUS_FAKE_HANDLE_ANY: all). */
FAKE_HIDDEN size_t fake_handle_live_locked(cus_fake_handle_kind kind);
/* The kind's noun for messages ("context"). */
FAKE_HIDDEN const char *fake_kind_noun(cus_fake_handle_kind kind);
/* Frees every record and empties the registry (install, uninstall). */
FAKE_HIDDEN void fake_registry_clear_locked(void);

/* --- the state shared by the files ---------------------------------------------- */

typedef struct fake_state {
    bool configured;          /* a configuration is applied (install, or the lazy default) */
    unsigned long generation; /* bumped by each install/uninstall: stale thread stacks are empty */
    int driver_version;
    bool initialized; /* cuInit succeeded */
    const char *current_call; /* the log name of the entry point holding the lock */
} fake_state;

FAKE_HIDDEN extern fake_state fake_g;

/* Resets the resolver's state (hidden entries) for a new install. */
FAKE_HIDDEN void fake_resolver_reset_locked(void);

#endif
