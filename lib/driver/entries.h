/* The driver entry points cuscope uses: one line each, the only list.
 *
 * X(field, symbol, version, need)
 *   field    the member of struct cus_driver_table (and the name in messages)
 *   symbol   the base name passed to cuGetProcAddress
 *   version  the ABI version asked for; PFN_<symbol>_v<version> from
 *            cudaTypedefs.h is the member's type, so a wrong pair fails to
 *            compile
 *   need     REQUIRED (the load fails without it) or OPTIONAL (NULL, and the
 *            feature reports CUS_ERROR_NOT_SUPPORTED)
 * Versions stay at or below CUSCOPE_MIN_DRIVER_VERSION for required entries,
 * so a 12.0 driver resolves them all.
 */
#define CUS_DRIVER_ENTRIES(X)                                                  \
    X(cuDriverGetVersion, cuDriverGetVersion, 2020, REQUIRED)                  \
    X(cuInit, cuInit, 2000, REQUIRED)                                          \
    X(cuGetErrorName, cuGetErrorName, 6000, REQUIRED)                          \
    X(cuGetErrorString, cuGetErrorString, 6000, REQUIRED)                      \
    X(cuDeviceGetCount, cuDeviceGetCount, 2000, REQUIRED)                      \
    X(cuDeviceGet, cuDeviceGet, 2000, REQUIRED)                                \
    X(cuDeviceGetName, cuDeviceGetName, 2000, REQUIRED)                        \
    X(cuDeviceGetUuid, cuDeviceGetUuid, 11040, REQUIRED)                       \
    X(cuDeviceTotalMem, cuDeviceTotalMem, 3020, REQUIRED)                      \
    X(cuDeviceGetAttribute, cuDeviceGetAttribute, 2000, REQUIRED)              \
    X(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain, 7000, REQUIRED)      \
    X(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease, 11000, REQUIRED)   \
    X(cuCtxCreate, cuCtxCreate, 3020, REQUIRED)                                \
    X(cuCtxCreate_v4, cuCtxCreate, 12050, OPTIONAL)                            \
    X(cuCtxDestroy, cuCtxDestroy, 4000, REQUIRED)                              \
    X(cuCtxPushCurrent, cuCtxPushCurrent, 4000, REQUIRED)                      \
    X(cuCtxPopCurrent, cuCtxPopCurrent, 4000, REQUIRED)                        \
    X(cuCtxSetCurrent, cuCtxSetCurrent, 4000, REQUIRED)                        \
    X(cuCtxGetCurrent, cuCtxGetCurrent, 4000, REQUIRED)                        \
    X(cuCtxGetDevice, cuCtxGetDevice, 2000, REQUIRED)                          \
    X(cuCtxGetFlags, cuCtxGetFlags, 7000, REQUIRED)                            \
    X(cuCtxSynchronize, cuCtxSynchronize, 2000, REQUIRED)                      \
    X(cuCtxGetApiVersion, cuCtxGetApiVersion, 3020, REQUIRED)                  \
    X(cuCtxGetLimit, cuCtxGetLimit, 3010, REQUIRED)                            \
    X(cuCtxSetLimit, cuCtxSetLimit, 3010, REQUIRED)                            \
    X(cuCtxGetCacheConfig, cuCtxGetCacheConfig, 3020, REQUIRED)                \
    X(cuCtxSetCacheConfig, cuCtxSetCacheConfig, 3020, REQUIRED)                \
    X(cuCtxGetSharedMemConfig, cuCtxGetSharedMemConfig, 4020, OPTIONAL)        \
    X(cuCtxSetSharedMemConfig, cuCtxSetSharedMemConfig, 4020, OPTIONAL)        \
    X(cuCtxGetStreamPriorityRange, cuCtxGetStreamPriorityRange, 5050, REQUIRED) \
    X(cuStreamCreateWithPriority, cuStreamCreateWithPriority, 5050, REQUIRED)  \
    X(cuStreamDestroy, cuStreamDestroy, 4000, REQUIRED)                        \
    X(cuStreamSynchronize, cuStreamSynchronize, 2000, REQUIRED)                \
    X(cuStreamQuery, cuStreamQuery, 2000, REQUIRED)                            \
    X(cuStreamWaitEvent, cuStreamWaitEvent, 3020, REQUIRED)                    \
    X(cuStreamGetPriority, cuStreamGetPriority, 5050, REQUIRED)                \
    X(cuStreamGetFlags, cuStreamGetFlags, 5050, REQUIRED)                      \
    X(cuLaunchHostFunc, cuLaunchHostFunc, 10000, REQUIRED)                     \
    X(cuEventCreate, cuEventCreate, 2000, REQUIRED)                            \
    X(cuEventRecord, cuEventRecord, 2000, REQUIRED)                            \
    X(cuEventSynchronize, cuEventSynchronize, 2000, REQUIRED)                  \
    X(cuEventQuery, cuEventQuery, 2000, REQUIRED)                              \
    X(cuEventElapsedTime, cuEventElapsedTime, 2000, REQUIRED)                  \
    X(cuEventDestroy, cuEventDestroy, 4000, REQUIRED) \
    X(cuMemAlloc, cuMemAlloc, 3020, REQUIRED)                                  \
    X(cuMemFree, cuMemFree, 3020, REQUIRED)                                    \
    X(cuMemAllocAsync, cuMemAllocAsync, 11020, REQUIRED)                       \
    X(cuMemFreeAsync, cuMemFreeAsync, 11020, REQUIRED)                         \
    X(cuDeviceGetDefaultMemPool, cuDeviceGetDefaultMemPool, 11020, REQUIRED)   \
    X(cuDeviceGetMemPool, cuDeviceGetMemPool, 11020, REQUIRED)                 \
    X(cuDeviceSetMemPool, cuDeviceSetMemPool, 11020, REQUIRED)                 \
    X(cuMemPoolCreate, cuMemPoolCreate, 11020, REQUIRED)                       \
    X(cuMemPoolDestroy, cuMemPoolDestroy, 11020, REQUIRED)                     \
    X(cuMemPoolSetAttribute, cuMemPoolSetAttribute, 11020, REQUIRED)           \
    X(cuMemPoolGetAttribute, cuMemPoolGetAttribute, 11020, REQUIRED)           \
    X(cuMemPoolTrimTo, cuMemPoolTrimTo, 11020, REQUIRED)                       \
    X(cuMemPoolSetAccess, cuMemPoolSetAccess, 11020, REQUIRED)                 \
    X(cuMemPoolGetAccess, cuMemPoolGetAccess, 11020, REQUIRED)                 \
    X(cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync, 11020, REQUIRED)       \
    X(cuMemPoolExportToShareableHandle, cuMemPoolExportToShareableHandle, 11020, REQUIRED) \
    X(cuMemPoolImportFromShareableHandle, cuMemPoolImportFromShareableHandle, 11020, \
      REQUIRED)                                                                \
    X(cuMemPoolExportPointer, cuMemPoolExportPointer, 11020, REQUIRED)         \
    X(cuMemPoolImportPointer, cuMemPoolImportPointer, 11020, REQUIRED)         \
    X(cuMemAllocManaged, cuMemAllocManaged, 6000, REQUIRED)                    \
    X(cuMemHostAlloc, cuMemHostAlloc, 2020, REQUIRED)                          \
    X(cuMemFreeHost, cuMemFreeHost, 2000, REQUIRED)                            \
    X(cuMemHostRegister, cuMemHostRegister, 6050, REQUIRED)                    \
    X(cuMemHostUnregister, cuMemHostUnregister, 4000, REQUIRED)                \
    X(cuMemGetInfo, cuMemGetInfo, 3020, REQUIRED)                              \
    X(cuMemcpyHtoD, cuMemcpyHtoD, 3020, REQUIRED)                              \
    X(cuMemcpyDtoH, cuMemcpyDtoH, 3020, REQUIRED)                              \
    X(cuMemcpyDtoD, cuMemcpyDtoD, 3020, REQUIRED)                              \
    X(cuMemcpyHtoDAsync, cuMemcpyHtoDAsync, 3020, REQUIRED)                    \
    X(cuMemcpyDtoHAsync, cuMemcpyDtoHAsync, 3020, REQUIRED)                    \
    X(cuMemcpyDtoDAsync, cuMemcpyDtoDAsync, 3020, REQUIRED)                    \
    X(cuMemcpyPeer, cuMemcpyPeer, 4000, REQUIRED)                              \
    X(cuMemcpyPeerAsync, cuMemcpyPeerAsync, 4000, REQUIRED)                    \
    X(cuMemsetD8, cuMemsetD8, 3020, REQUIRED)                                  \
    X(cuMemsetD16, cuMemsetD16, 3020, REQUIRED)                                \
    X(cuMemsetD32, cuMemsetD32, 3020, REQUIRED)                                \
    X(cuMemsetD8Async, cuMemsetD8Async, 3020, REQUIRED)                        \
    X(cuMemsetD16Async, cuMemsetD16Async, 3020, REQUIRED)                      \
    X(cuMemsetD32Async, cuMemsetD32Async, 3020, REQUIRED)                      \
    X(cuMemPrefetchAsync, cuMemPrefetchAsync, 8000, OPTIONAL)                  \
    X(cuMemAdvise, cuMemAdvise, 8000, OPTIONAL)                                \
    X(cuDeviceCanAccessPeer, cuDeviceCanAccessPeer, 4000, REQUIRED)            \
    X(cuCtxEnablePeerAccess, cuCtxEnablePeerAccess, 4000, REQUIRED)            \
    X(cuModuleLoadDataEx, cuModuleLoadDataEx, 2010, REQUIRED)                  \
    X(cuModuleUnload, cuModuleUnload, 2000, REQUIRED)                          \
    X(cuModuleGetFunction, cuModuleGetFunction, 2000, REQUIRED)                \
    X(cuModuleGetGlobal, cuModuleGetGlobal, 3020, REQUIRED)                    \
    X(cuModuleGetFunctionCount, cuModuleGetFunctionCount, 12040, OPTIONAL)     \
    X(cuModuleEnumerateFunctions, cuModuleEnumerateFunctions, 12040, OPTIONAL) \
    X(cuFuncGetName, cuFuncGetName, 12030, OPTIONAL)                           \
    X(cuFuncGetParamInfo, cuFuncGetParamInfo, 12040, OPTIONAL)                 \
    X(cuLinkCreate, cuLinkCreate, 6050, OPTIONAL)                              \
    X(cuLinkAddData, cuLinkAddData, 6050, OPTIONAL)                            \
    X(cuLinkAddFile, cuLinkAddFile, 6050, OPTIONAL)                            \
    X(cuLinkComplete, cuLinkComplete, 5050, OPTIONAL)                          \
    X(cuLinkDestroy, cuLinkDestroy, 5050, OPTIONAL)                            \
    X(cuFuncGetAttribute, cuFuncGetAttribute, 2020, REQUIRED)                  \
    X(cuFuncSetAttribute, cuFuncSetAttribute, 9000, REQUIRED)                  \
    X(cuFuncSetCacheConfig, cuFuncSetCacheConfig, 3000, REQUIRED)              \
    X(cuFuncSetSharedMemConfig, cuFuncSetSharedMemConfig, 4020, OPTIONAL)      \
    X(cuOccupancyMaxPotentialBlockSize, cuOccupancyMaxPotentialBlockSize, 6050, REQUIRED) \
    X(cuOccupancyMaxActiveBlocksPerMultiprocessor,                             \
      cuOccupancyMaxActiveBlocksPerMultiprocessor, 6050, REQUIRED)             \
    X(cuLaunchKernel, cuLaunchKernel, 4000, REQUIRED)                          \
    X(cuLaunchKernelEx, cuLaunchKernelEx, 11060, OPTIONAL)                     \
    X(cuLibraryLoadData, cuLibraryLoadData, 12000, OPTIONAL)                   \
    X(cuLibraryLoadFromFile, cuLibraryLoadFromFile, 12000, OPTIONAL)           \
    X(cuLibraryUnload, cuLibraryUnload, 12000, OPTIONAL)                       \
    X(cuLibraryGetKernel, cuLibraryGetKernel, 12000, OPTIONAL)                 \
    X(cuLibraryGetKernelCount, cuLibraryGetKernelCount, 12040, OPTIONAL)       \
    X(cuLibraryEnumerateKernels, cuLibraryEnumerateKernels, 12040, OPTIONAL)   \
    X(cuLibraryGetGlobal, cuLibraryGetGlobal, 12000, OPTIONAL)                 \
    X(cuLibraryGetManaged, cuLibraryGetManaged, 12000, OPTIONAL)               \
    X(cuLibraryGetUnifiedFunction, cuLibraryGetUnifiedFunction, 12000, OPTIONAL) \
    X(cuKernelGetFunction, cuKernelGetFunction, 12000, OPTIONAL)               \
    X(cuKernelGetAttribute, cuKernelGetAttribute, 12000, OPTIONAL)             \
    X(cuKernelSetAttribute, cuKernelSetAttribute, 12000, OPTIONAL)             \
    X(cuKernelGetName, cuKernelGetName, 12030, OPTIONAL)                       \
    X(cuKernelGetParamInfo, cuKernelGetParamInfo, 12040, OPTIONAL)             \
    X(cuTensorMapEncodeTiled, cuTensorMapEncodeTiled, 12000, OPTIONAL)         \
    X(cuTensorMapEncodeIm2col, cuTensorMapEncodeIm2col, 12000, OPTIONAL)       \
    X(cuTensorMapReplaceAddress, cuTensorMapReplaceAddress, 12000, OPTIONAL)   \
    X(cuStreamBeginCapture, cuStreamBeginCapture, 10010, REQUIRED)             \
    X(cuStreamEndCapture, cuStreamEndCapture, 10000, REQUIRED)                 \
    X(cuStreamIsCapturing, cuStreamIsCapturing, 10000, REQUIRED)               \
    X(cuStreamGetCaptureInfo, cuStreamGetCaptureInfo, 10010, REQUIRED)         \
    X(cuThreadExchangeStreamCaptureMode, cuThreadExchangeStreamCaptureMode, 10010, REQUIRED) \
    /* Capture into a graph (capture.c): the capture's dependencies (11.3), and   \
     * cuStreamBeginCaptureToGraph (12.3). */                                   \
    X(cuStreamGetCaptureInfo_v2, cuStreamGetCaptureInfo, 11030, REQUIRED)      \
    X(cuStreamBeginCaptureToGraph, cuStreamBeginCaptureToGraph, 12030, OPTIONAL) \
    X(cuGraphDestroy, cuGraphDestroy, 10000, REQUIRED)                         \
    X(cuGraphGetNodes, cuGraphGetNodes, 10000, REQUIRED)                       \
    X(cuGraphInstantiateWithFlags, cuGraphInstantiateWithFlags, 11040, REQUIRED) \
    X(cuGraphExecDestroy, cuGraphExecDestroy, 10000, REQUIRED)                 \
    X(cuGraphLaunch, cuGraphLaunch, 10000, REQUIRED)                           \
    X(cuGraphUpload, cuGraphUpload, 11010, REQUIRED)                           \
    X(cuGraphExecUpdate, cuGraphExecUpdate, 12000, REQUIRED)                   \
    X(cuGraphCreate, cuGraphCreate, 10000, REQUIRED)                           \
    X(cuGraphAddKernelNode, cuGraphAddKernelNode, 12000, REQUIRED)             \
    X(cuGraphAddMemcpyNode, cuGraphAddMemcpyNode, 10000, REQUIRED)             \
    X(cuGraphAddMemsetNode, cuGraphAddMemsetNode, 10000, REQUIRED)             \
    X(cuGraphAddHostNode, cuGraphAddHostNode, 10000, REQUIRED)                 \
    X(cuGraphAddEventRecordNode, cuGraphAddEventRecordNode, 11010, REQUIRED)   \
    X(cuGraphAddEventWaitNode, cuGraphAddEventWaitNode, 11010, REQUIRED)       \
    X(cuGraphAddEmptyNode, cuGraphAddEmptyNode, 10000, REQUIRED)               \
    X(cuGraphAddChildGraphNode, cuGraphAddChildGraphNode, 10000, REQUIRED)     \
    X(cuGraphAddDependencies, cuGraphAddDependencies, 10000, REQUIRED)         \
    X(cuGraphGetRootNodes, cuGraphGetRootNodes, 10000, REQUIRED)               \
    X(cuGraphExecKernelNodeSetParams, cuGraphExecKernelNodeSetParams, 12000, REQUIRED) \
    X(cuGraphExecMemcpyNodeSetParams, cuGraphExecMemcpyNodeSetParams, 10020, REQUIRED) \
    X(cuGraphExecMemsetNodeSetParams, cuGraphExecMemsetNodeSetParams, 10020, REQUIRED) \
    X(cuGraphNodeSetEnabled, cuGraphNodeSetEnabled, 11060, REQUIRED)           \
    /* Graph memory nodes and the device's graph memory (graph_memory.c). */   \
    X(cuGraphAddMemAllocNode, cuGraphAddMemAllocNode, 11040, REQUIRED)         \
    X(cuGraphAddMemFreeNode, cuGraphAddMemFreeNode, 11040, REQUIRED)           \
    X(cuGraphMemAllocNodeGetParams, cuGraphMemAllocNodeGetParams, 11040, REQUIRED) \
    X(cuGraphMemFreeNodeGetParams, cuGraphMemFreeNodeGetParams, 11040, REQUIRED) \
    X(cuDeviceGraphMemTrim, cuDeviceGraphMemTrim, 11040, REQUIRED)             \
    X(cuDeviceGetGraphMemAttribute, cuDeviceGetGraphMemAttribute, 11040, REQUIRED) \
    X(cuDeviceSetGraphMemAttribute, cuDeviceSetGraphMemAttribute, 11040, REQUIRED) \
    /* Conditional nodes (graph_conditional.c): 12.3; SWITCH and IF/ELSE 12.8. */ \
    X(cuGraphConditionalHandleCreate, cuGraphConditionalHandleCreate, 12030, OPTIONAL) \
    X(cuGraphAddNode, cuGraphAddNode, 12030, OPTIONAL)                         \
    X(cuIpcGetMemHandle, cuIpcGetMemHandle, 4010, OPTIONAL)                    \
    X(cuIpcOpenMemHandle, cuIpcOpenMemHandle, 11000, OPTIONAL)                 \
    X(cuIpcCloseMemHandle, cuIpcCloseMemHandle, 4010, OPTIONAL)                \
    X(cuIpcGetEventHandle, cuIpcGetEventHandle, 4010, OPTIONAL)                \
    X(cuIpcOpenEventHandle, cuIpcOpenEventHandle, 4010, OPTIONAL) \
    X(cuArrayCreate, cuArrayCreate, 3020, REQUIRED)                            \
    X(cuArray3DCreate, cuArray3DCreate, 3020, REQUIRED)                        \
    X(cuArrayDestroy, cuArrayDestroy, 2000, REQUIRED)                          \
    X(cuArray3DGetDescriptor, cuArray3DGetDescriptor, 3020, REQUIRED)          \
    X(cuMipmappedArrayCreate, cuMipmappedArrayCreate, 5000, REQUIRED)          \
    X(cuMipmappedArrayGetLevel, cuMipmappedArrayGetLevel, 5000, REQUIRED)      \
    X(cuMipmappedArrayDestroy, cuMipmappedArrayDestroy, 5000, REQUIRED)        \
    X(cuMemAllocPitch, cuMemAllocPitch, 3020, REQUIRED)                        \
    X(cuMemcpy2D, cuMemcpy2D, 3020, REQUIRED)                                  \
    X(cuMemcpy2DAsync, cuMemcpy2DAsync, 3020, REQUIRED)                        \
    X(cuMemcpy3D, cuMemcpy3D, 3020, REQUIRED)                                  \
    X(cuMemcpy3DAsync, cuMemcpy3DAsync, 3020, REQUIRED)                        \
    X(cuTexObjectCreate, cuTexObjectCreate, 5000, REQUIRED)                    \
    X(cuTexObjectDestroy, cuTexObjectDestroy, 5000, REQUIRED)                  \
    X(cuTexObjectGetResourceDesc, cuTexObjectGetResourceDesc, 5000, REQUIRED)  \
    X(cuSurfObjectCreate, cuSurfObjectCreate, 5000, REQUIRED)                  \
    X(cuSurfObjectDestroy, cuSurfObjectDestroy, 5000, REQUIRED) \
    CUS_DRIVER_ENTRIES_VMM_(X)                                                 \
    CUS_DRIVER_ENTRIES_GREEN_(X)                                               \
    CUS_DRIVER_ENTRIES_GRAPH_INSPECT_(X)

/* Virtual memory management (vmm.c, raw.c) and pointer queries (foreign.c).
 * The VMM entries are OPTIONAL: a driver or platform without them makes the
 * feature CUS_ERROR_NOT_SUPPORTED, not the load fail. */
#define CUS_DRIVER_ENTRIES_VMM_(X)                                             \
    X(cuPointerGetAttribute, cuPointerGetAttribute, 4000, REQUIRED)            \
    X(cuMemCreate, cuMemCreate, 10020, OPTIONAL)                               \
    X(cuMemRelease, cuMemRelease, 10020, OPTIONAL)                             \
    X(cuMemGetAllocationGranularity, cuMemGetAllocationGranularity, 10020, OPTIONAL) \
    X(cuMemAddressReserve, cuMemAddressReserve, 10020, OPTIONAL)               \
    X(cuMemAddressFree, cuMemAddressFree, 10020, OPTIONAL)                     \
    X(cuMemMap, cuMemMap, 10020, OPTIONAL)                                     \
    X(cuMemUnmap, cuMemUnmap, 10020, OPTIONAL)                                 \
    X(cuMemSetAccess, cuMemSetAccess, 10020, OPTIONAL)                         \
    X(cuMemGetAccess, cuMemGetAccess, 10020, OPTIONAL)                         \
    X(cuMemExportToShareableHandle, cuMemExportToShareableHandle, 10020, OPTIONAL) \
    X(cuMemImportFromShareableHandle, cuMemImportFromShareableHandle, 10020, OPTIONAL)

/* Green contexts (green.c, context.c, stream.c): 12.4, cuGreenCtxStreamCreate 12.5; their
 * event calls (cuGreenCtxRecordEvent, cuGreenCtxWaitEvent) 12.4. OPTIONAL: an
 * older driver makes the feature CUS_ERROR_NOT_SUPPORTED, naming the version;
 * without cuGreenCtxStreamCreate (12.4), a green context's streams are made
 * with its context current (cuStreamCreateWithPriority), which the driver
 * ties to the green context as well. */
#define CUS_DRIVER_ENTRIES_GREEN_(X)                                           \
    X(cuDeviceGetDevResource, cuDeviceGetDevResource, 12040, OPTIONAL)         \
    X(cuCtxGetDevResource, cuCtxGetDevResource, 12040, OPTIONAL)               \
    X(cuDevSmResourceSplitByCount, cuDevSmResourceSplitByCount, 12040, OPTIONAL) \
    X(cuDevResourceGenerateDesc, cuDevResourceGenerateDesc, 12040, OPTIONAL)   \
    X(cuGreenCtxCreate, cuGreenCtxCreate, 12040, OPTIONAL)                     \
    X(cuGreenCtxDestroy, cuGreenCtxDestroy, 12040, OPTIONAL)                   \
    X(cuCtxFromGreenCtx, cuCtxFromGreenCtx, 12040, OPTIONAL)                   \
    X(cuGreenCtxStreamCreate, cuGreenCtxStreamCreate, 12050, OPTIONAL)         \
    X(cuGreenCtxRecordEvent, cuGreenCtxRecordEvent, 12040, OPTIONAL)           \
    X(cuGreenCtxWaitEvent, cuGreenCtxWaitEvent, 12040, OPTIONAL)

/* Graph inspection and editing (graph_inspect.c). The edge entry points are
 * the 12.3 edge-data variants that cuda.h's names resolve to
 * (cuGraphGetEdges is cuGraphGetEdges_v2), OPTIONAL as cuGraphAddNode is: an
 * older driver makes those calls CUS_ERROR_NOT_SUPPORTED, naming 12.3. */
#define CUS_DRIVER_ENTRIES_GRAPH_INSPECT_(X)                                   \
    X(cuGraphNodeGetType, cuGraphNodeGetType, 10000, REQUIRED)                 \
    X(cuGraphNodeGetDependencies, cuGraphNodeGetDependencies, 12030, OPTIONAL) \
    X(cuGraphNodeGetDependentNodes, cuGraphNodeGetDependentNodes, 12030, OPTIONAL) \
    X(cuGraphGetEdges, cuGraphGetEdges, 12030, OPTIONAL)                       \
    X(cuGraphRemoveDependencies, cuGraphRemoveDependencies, 12030, OPTIONAL)   \
    X(cuGraphAddDependencies_v2, cuGraphAddDependencies, 12030, OPTIONAL)      \
    X(cuGraphNodeGetEnabled, cuGraphNodeGetEnabled, 11060, REQUIRED)           \
    X(cuGraphExecGetFlags, cuGraphExecGetFlags, 12000, REQUIRED)               \
    X(cuGraphDebugDotPrint, cuGraphDebugDotPrint, 11030, REQUIRED)             \
    X(cuGraphDestroyNode, cuGraphDestroyNode, 10000, REQUIRED)                 \
    X(cuGraphClone, cuGraphClone, 10000, REQUIRED)                             \
    X(cuGraphNodeFindInClone, cuGraphNodeFindInClone, 10000, REQUIRED)         \
    X(cuGraphExecEventRecordNodeSetEvent, cuGraphExecEventRecordNodeSetEvent, 11010, REQUIRED) \
    X(cuGraphExecEventWaitNodeSetEvent, cuGraphExecEventWaitNodeSetEvent, 11010, REQUIRED) \
    X(cuGraphExecHostNodeSetParams, cuGraphExecHostNodeSetParams, 10020, REQUIRED) \
    X(cuGraphExecChildGraphNodeSetParams, cuGraphExecChildGraphNodeSetParams, 11010, REQUIRED) \
    X(cuGraphKernelNodeSetParams, cuGraphKernelNodeSetParams, 12000, REQUIRED) \
    X(cuGraphMemcpyNodeSetParams, cuGraphMemcpyNodeSetParams, 10000, REQUIRED) \
    X(cuGraphMemsetNodeSetParams, cuGraphMemsetNodeSetParams, 10000, REQUIRED) \
    X(cuGraphHostNodeSetParams, cuGraphHostNodeSetParams, 10000, REQUIRED)     \
    X(cuGraphEventRecordNodeSetEvent, cuGraphEventRecordNodeSetEvent, 11010, REQUIRED) \
    X(cuGraphEventWaitNodeSetEvent, cuGraphEventWaitNodeSetEvent, 11010, REQUIRED) \
    X(cuGraphKernelNodeSetAttribute, cuGraphKernelNodeSetAttribute, 11000, REQUIRED) \
    X(cuGraphKernelNodeGetAttribute, cuGraphKernelNodeGetAttribute, 11000, REQUIRED) \
    X(cuGraphKernelNodeCopyAttributes, cuGraphKernelNodeCopyAttributes, 11000, REQUIRED) \
    X(cuGraphEventRecordNodeGetEvent, cuGraphEventRecordNodeGetEvent, 11010, REQUIRED) \
    X(cuGraphEventWaitNodeGetEvent, cuGraphEventWaitNodeGetEvent, 11010, REQUIRED) \
    X(cuGraphChildGraphNodeGetGraph, cuGraphChildGraphNodeGetGraph, 10000, REQUIRED) \
    X(cuGraphHostNodeGetParams, cuGraphHostNodeGetParams, 10000, REQUIRED)     \
    X(cuGraphInstantiateWithParams, cuGraphInstantiateWithParams, 12000, REQUIRED)
