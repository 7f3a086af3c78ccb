/* The differential of the driver's context rules (test/rules): every entry
 * point the fake's resolver serves (FAKE_ENTRIES, lib/fake/fake_core.h),
 * called with a valid call in each of the states that matter, on the real
 * driver (gpu-rules) and on the fake (rules), the CUresult of each cell
 * recorded. The real driver's table is checked in (expected.txt); the fake is
 * held to it cell by cell, but for the differences lib/fake/deliberate.txt
 * lists with their reasons.
 *
 * deliberate.txt: one difference, or a family of them, a line,
 *   <rows> <column> driver=<result> fake=<result> <the reason>
 * <rows> a row's name as the table prints it (cuStreamQuery@2000), or a shell
 * pattern of names (fnmatch(3): cuStream*@*) that names at least one row;
 * <column> one of the columns below; driver= and fake= the two results, *
 * for any. A line excuses every cell of its column, in the rows it names,
 * whose two results it matches; a line that excuses none fails the test
 * (but for a line naming a single row whose cell is not compared, n/a or
 * skip, which stays for a run that compares it).
 *
 * A row is one entry point at one ABI version (symbol@version): one line of
 * RULES_ROWS below and one CALL() in rows.c that makes a valid call with the
 * handles of a fixture. The fixture (cells.c), built afresh in a new context
 * A for every cell: a non-blocking stream that is not capturing, two events
 * recorded and completed, two device buffers, a stream-ordered buffer, a
 * managed buffer, a pinned host buffer, a registered host block, a module
 * loaded from PTX with its function `add`, a graph captured from the stream
 * (one kernel node) and its executable graph.
 *
 * The columns (the states a cell's call is made in):
 *   ok         A current: the control, CUDA_SUCCESS unless the row says why;
 *   none       no context current (the thread's stack empty);
 *   other      a second context B of the same device current, A not;
 *   destroyed  the object's context A destroyed: for an object row, A
 *              destroyed on this thread and B current, the object now stale;
 *              for a current-context row, A destroyed by another thread while
 *              still current on this one (CUDA_ERROR_CONTEXT_IS_DESTROYED's
 *              case);
 *   null       NULL (0) for the row's primary handle, A current;
 *   stale      the primary object itself destroyed, then used, A current (for
 *              a context: A destroyed, B current);
 *   poisoned   A has a sticky error (a kernel that traps) and is current;
 *   otherdev   A's objects used with a context of another device current
 *              (n/a with a single device).
 * Which apply follows from the row's primary handle (rules_columns_of): all
 * eight for an object; no destroyed for a context (its stale is that); ok,
 * none, other, destroyed and poisoned for the current-context calls; ok,
 * none, other and poisoned for the device and process calls.
 *
 * A cell's text is the CUresult's name (cuGetErrorName), or:
 *   -              the column does not apply to the row;
 *   skip           not run on the real driver: the handle is one the driver
 *                  is not documented to validate once stale (a use after
 *                  free inside it, rules_cell_risky); the fake runs them, and
 *                  gpu-rules --risky runs them, each in a process of its own;
 *   n/a            not possible here (otherdev with a single device);
 *   absent         the driver does not resolve the entry point;
 *   setup:<error>  the state could not be made;
 *   SIGSEGV, ..., TIMEOUT  the cell's process died (gpu-rules runs the cells
 *                  of the columns destroyed, null, stale and poisoned each in
 *                  a process of its own, the others in a few shared ones).
 * n/a and skip are not compared. */
#ifndef CUSCOPE_TEST_RULES_H
#define CUSCOPE_TEST_RULES_H

#include <cuda.h>
#include <cudaTypedefs.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* --- the columns ------------------------------------------------------------------ */

typedef enum rules_column {
    COL_OK,
    COL_NONE,
    COL_OTHER,
    COL_DESTROYED,
    COL_NULL,
    COL_STALE,
    COL_POISONED,
    COL_OTHERDEV,
    COL_COUNT
} rules_column;

extern const char *const rules_column_names[COL_COUNT];
#define COL_BIT(c) (1u << (c))

/* --- the primary handle of a row, which decides the columns that apply ------------ */

typedef enum rules_handle {
    H_UNCOUNTED,  /* outside the rules (the resolver, the error strings): all `-` */
    H_NONE,       /* no handle and no context (process- and thread-wide calls) */
    H_DEVICE,     /* a device ordinal */
    H_CURRENT,    /* the current context, implicitly */
    H_CONTEXT,    /* context A, explicitly */
    H_STREAM,     /* the stream */
    H_EVENT,      /* the first event */
    H_BUF,        /* the first device buffer */
    H_ASYNC_BUF,  /* the stream-ordered buffer */
    H_MANAGED,    /* the managed buffer */
    H_HOST,       /* the pinned host buffer */
    H_REGISTERED, /* the registered host block */
    H_MODULE,     /* the module */
    H_FUNCTION,   /* the function */
    H_GRAPH,      /* the graph */
    H_EXEC,       /* the executable graph */
    H_NODE,       /* the graph's kernel node */
    H_COUNT
} rules_handle;

/* Row flags. */
enum {
    R_CONSUMES = 1,  /* a successful call destroys the primary object (or its retain) */
    R_CAPTURING = 2, /* the stream captures (relaxed mode) before the state is made */
    R_RETAINED = 4,  /* the device's primary context is retained before the state is made */
    /* The call reads what the graph's kernel node refers to (the function,
     * which dies with A): once A is destroyed, a use after free inside the
     * driver, like a stale module's (see rules_cell_risky). */
    R_READS_KERNEL = 8,
};

/* The handles a call passes: the fixture's, the primary one replaced as the
 * column says. */
typedef struct rules_args {
    CUdevice dev;
    CUcontext ctx;
    CUstream stream;
    CUevent event, event2;
    CUdeviceptr buf, buf2, async_buf, managed;
    void *host;         /* pinned (cuMemAllocHost), 4 KiB */
    void *registered;   /* registered (cuMemHostRegister), 4 KiB */
    void *unregistered; /* the test's own page, for cuMemHostRegister */
    void *pageable;     /* the test's own page: the host side of copies */
    CUmodule module;
    CUfunction function; /* add(u64, u32), which does nothing */
    CUgraph graph;
    CUgraphExec exec;
    CUgraphNode node;
    const char *ptx;        /* the module's PTX text */
    const void *fatbin;     /* the same PTX in a fatbin */
    const char *ptx_path;   /* the same PTX in a file */
} rules_args;

/* What a call made (set on success only), freed by the teardown. */
typedef struct rules_out {
    CUcontext ctx;          /* cuCtxCreate */
    bool primary;           /* cuDevicePrimaryCtxRetain */
    CUdeviceptr dptr;       /* cuMemAlloc, cuMemAllocManaged */
    CUdeviceptr async_dptr; /* cuMemAllocAsync */
    void *host;             /* cuMemAllocHost, cuMemHostAlloc */
    bool registered;        /* cuMemHostRegister of args.unregistered */
    CUstream stream;
    CUevent event;
    CUmodule module;
    CUgraph graph;
    CUgraphExec exec;
    bool mode_exchanged;    /* cuThreadExchangeStreamCaptureMode: the mode to put back */
    CUstreamCaptureMode old_mode;
} rules_out;

typedef CUresult (*rules_call_fn)(const rules_args *a, rules_out *o);

/* --- the rows ------------------------------------------------------------------------
 * R(symbol, version, primary handle, flags, note): note says why the control
 * (ok) is not CUDA_SUCCESS, NULL where it must be. Adding an entry point: one
 * line here, and its CALL(symbol, version) in rows.c. Symbols are pasted and
 * stringified directly, never passed on to another macro: cuda.h defines many
 * of them (cuMemAlloc is cuMemAlloc_v2). */
#define RULES_ROWS(R)                                                                      \
    R(cuGetProcAddress, 12000, H_UNCOUNTED, 0, NULL)                                       \
    R(cuGetErrorName, 6000, H_UNCOUNTED, 0, NULL)                                          \
    R(cuGetErrorString, 6000, H_UNCOUNTED, 0, NULL)                                        \
    R(cuDriverGetVersion, 2020, H_NONE, 0, NULL)                                           \
    R(cuInit, 2000, H_NONE, 0, NULL)                                                       \
    R(cuDeviceGetCount, 2000, H_NONE, 0, NULL)                                             \
    R(cuDeviceGet, 2000, H_NONE, 0, NULL)                                                  \
    R(cuDeviceGetName, 2000, H_DEVICE, 0, NULL)                                            \
    R(cuDeviceGetUuid, 11040, H_DEVICE, 0, NULL)                                           \
    R(cuDeviceTotalMem, 3020, H_DEVICE, 0, NULL)                                           \
    R(cuDeviceGetAttribute, 2000, H_DEVICE, 0, NULL)                                       \
    R(cuDevicePrimaryCtxRetain, 7000, H_DEVICE, 0, NULL)                                   \
    R(cuDevicePrimaryCtxRelease, 11000, H_DEVICE, R_CONSUMES | R_RETAINED, NULL)           \
    R(cuCtxCreate, 3020, H_DEVICE, 0, NULL)                                                \
    R(cuCtxCreate, 11040, H_DEVICE, 0, NULL)                                               \
    R(cuCtxCreate, 12050, H_DEVICE, 0, NULL)                                               \
    R(cuCtxDestroy, 4000, H_CONTEXT, R_CONSUMES, NULL)                                     \
    R(cuCtxPushCurrent, 4000, H_CONTEXT, 0, NULL)                                          \
    R(cuCtxPopCurrent, 4000, H_CURRENT, 0, NULL)                                           \
    R(cuCtxSetCurrent, 4000, H_CONTEXT, 0, NULL)                                           \
    R(cuCtxGetCurrent, 4000, H_CURRENT, 0, NULL)                                           \
    R(cuCtxGetDevice, 2000, H_CURRENT, 0, NULL)                                            \
    R(cuCtxGetFlags, 7000, H_CURRENT, 0, NULL)                                             \
    R(cuCtxSynchronize, 2000, H_CURRENT, 0, NULL)                                          \
    R(cuCtxGetApiVersion, 3020, H_CONTEXT, 0, NULL)                                        \
    R(cuCtxGetLimit, 3010, H_CURRENT, 0, NULL)                                             \
    R(cuCtxSetLimit, 3010, H_CURRENT, 0, NULL)                                             \
    R(cuCtxGetCacheConfig, 3020, H_CURRENT, 0, NULL)                                       \
    R(cuCtxSetCacheConfig, 3020, H_CURRENT, 0, NULL)                                       \
    R(cuCtxGetSharedMemConfig, 4020, H_CURRENT, 0, NULL)                                   \
    R(cuCtxSetSharedMemConfig, 4020, H_CURRENT, 0, NULL)                                   \
    R(cuCtxGetStreamPriorityRange, 5050, H_CURRENT, 0, NULL)                               \
    R(cuCtxEnablePeerAccess, 4000, H_CONTEXT, 0, "A is asked to be its own peer")          \
    R(cuCtxDisablePeerAccess, 4000, H_CONTEXT, 0, "peer access to A was never enabled")    \
    R(cuDeviceCanAccessPeer, 4000, H_DEVICE, 0, NULL)                                      \
    R(cuStreamCreate, 2000, H_CURRENT, 0, NULL)                                            \
    R(cuStreamCreateWithPriority, 5050, H_CURRENT, 0, NULL)                                \
    R(cuStreamDestroy, 4000, H_STREAM, R_CONSUMES, NULL)                                   \
    R(cuStreamSynchronize, 2000, H_STREAM, 0, NULL)                                        \
    R(cuStreamQuery, 2000, H_STREAM, 0, NULL)                                              \
    R(cuStreamWaitEvent, 3020, H_STREAM, 0, NULL)                                          \
    R(cuStreamGetPriority, 5050, H_STREAM, 0, NULL)                                        \
    R(cuStreamGetFlags, 5050, H_STREAM, 0, NULL)                                           \
    R(cuStreamGetCtx, 9020, H_STREAM, 0, NULL)                                             \
    R(cuLaunchHostFunc, 10000, H_STREAM, 0, NULL)                                          \
    R(cuEventCreate, 2000, H_CURRENT, 0, NULL)                                             \
    R(cuEventRecord, 2000, H_EVENT, 0, NULL)                                               \
    R(cuEventSynchronize, 2000, H_EVENT, 0, NULL)                                          \
    R(cuEventQuery, 2000, H_EVENT, 0, NULL)                                                \
    R(cuEventElapsedTime, 2000, H_EVENT, 0, NULL)                                          \
    R(cuEventDestroy, 4000, H_EVENT, R_CONSUMES, NULL)                                     \
    R(cuMemGetInfo, 3020, H_CURRENT, 0, NULL)                                              \
    R(cuMemAlloc, 3020, H_CURRENT, 0, NULL)                                                \
    R(cuMemFree, 3020, H_BUF, R_CONSUMES, NULL)                                            \
    R(cuMemAllocAsync, 11020, H_STREAM, 0, NULL)                                           \
    R(cuMemFreeAsync, 11020, H_ASYNC_BUF, R_CONSUMES, NULL)                                \
    RULES_ROWS_POOLS_(R)                                                                   \
    R(cuMemAllocHost, 3020, H_CURRENT, 0, NULL)                                            \
    R(cuMemHostAlloc, 2020, H_CURRENT, 0, NULL)                                            \
    R(cuMemFreeHost, 2000, H_HOST, R_CONSUMES, NULL)                                       \
    R(cuMemAllocManaged, 6000, H_CURRENT, 0, NULL)                                         \
    R(cuMemHostRegister, 6050, H_CURRENT, 0, NULL)                                         \
    R(cuMemHostUnregister, 4000, H_REGISTERED, R_CONSUMES, NULL)                           \
    R(cuMemHostGetDevicePointer, 3020, H_HOST, 0, NULL)                                    \
    R(cuPointerGetAttribute, 4000, H_BUF, 0, NULL)                                         \
    R(cuMemcpy, 4000, H_BUF, 0, NULL)                                                      \
    R(cuMemcpyAsync, 4000, H_BUF, 0, NULL)                                                 \
    R(cuMemcpyHtoD, 3020, H_BUF, 0, NULL)                                                  \
    R(cuMemcpyDtoH, 3020, H_BUF, 0, NULL)                                                  \
    R(cuMemcpyDtoD, 3020, H_BUF, 0, NULL)                                                  \
    R(cuMemcpyHtoDAsync, 3020, H_BUF, 0, NULL)                                             \
    R(cuMemcpyDtoHAsync, 3020, H_BUF, 0, NULL)                                             \
    R(cuMemcpyDtoDAsync, 3020, H_BUF, 0, NULL)                                             \
    R(cuMemcpyPeer, 4000, H_BUF, 0, NULL)                                                  \
    R(cuMemcpyPeerAsync, 4000, H_BUF, 0, NULL)                                             \
    R(cuMemsetD8, 3020, H_BUF, 0, NULL)                                                    \
    R(cuMemsetD16, 3020, H_BUF, 0, NULL)                                                   \
    R(cuMemsetD32, 3020, H_BUF, 0, NULL)                                                   \
    R(cuMemsetD8Async, 3020, H_BUF, 0, NULL)                                               \
    R(cuMemsetD16Async, 3020, H_BUF, 0, NULL)                                              \
    R(cuMemsetD32Async, 3020, H_BUF, 0, NULL)                                              \
    R(cuMemPrefetchAsync, 8000, H_MANAGED, 0, NULL)                                        \
    R(cuMemAdvise, 8000, H_MANAGED, 0, NULL)                                               \
    R(cuModuleLoad, 2000, H_CURRENT, 0, NULL)                                              \
    R(cuModuleLoadData, 2000, H_CURRENT, 0, NULL)                                          \
    R(cuModuleLoadDataEx, 2010, H_CURRENT, 0, NULL)                                        \
    R(cuModuleLoadFatBinary, 2000, H_CURRENT, 0, NULL)                                     \
    R(cuModuleUnload, 2000, H_MODULE, R_CONSUMES, NULL)                                    \
    R(cuModuleGetFunction, 2000, H_MODULE, 0, NULL)                                        \
    R(cuModuleGetGlobal, 3020, H_MODULE, 0, NULL)                                          \
    R(cuFuncGetAttribute, 2020, H_FUNCTION, 0, NULL)                                       \
    R(cuFuncSetAttribute, 9000, H_FUNCTION, 0, NULL)                                       \
    R(cuFuncSetCacheConfig, 3000, H_FUNCTION, 0, NULL)                                     \
    R(cuFuncSetSharedMemConfig, 4020, H_FUNCTION, 0, NULL)                                 \
    R(cuLaunchKernel, 4000, H_FUNCTION, 0, NULL)                                           \
    R(cuLaunchKernelEx, 11060, H_FUNCTION, 0, NULL)                                        \
    R(cuOccupancyMaxPotentialBlockSize, 6050, H_FUNCTION, 0, NULL)                         \
    R(cuOccupancyMaxActiveBlocksPerMultiprocessor, 6050, H_FUNCTION, 0, NULL)              \
    R(cuStreamBeginCapture, 10010, H_STREAM, 0, NULL)                                      \
    R(cuStreamEndCapture, 10000, H_STREAM, R_CAPTURING, NULL)                              \
    R(cuStreamIsCapturing, 10000, H_STREAM, 0, NULL)                                       \
    R(cuStreamGetCaptureInfo, 10010, H_STREAM, 0, NULL)                                    \
    R(cuStreamGetCaptureInfo, 11030, H_STREAM, 0, NULL)                                    \
    R(cuThreadExchangeStreamCaptureMode, 10010, H_NONE, 0, NULL)                           \
    R(cuGraphDestroy, 10000, H_GRAPH, R_CONSUMES, NULL)                                    \
    R(cuGraphGetNodes, 10000, H_GRAPH, 0, NULL)                                            \
    R(cuGraphNodeGetType, 10000, H_NODE, 0, NULL)                                          \
    R(cuGraphInstantiateWithFlags, 11040, H_GRAPH, R_READS_KERNEL, NULL)                   \
    R(cuGraphExecDestroy, 10000, H_EXEC, R_CONSUMES, NULL)                                 \
    R(cuGraphLaunch, 10000, H_EXEC, 0, NULL)                                               \
    R(cuGraphUpload, 11010, H_EXEC, 0, NULL)                                               \
    R(cuGraphExecUpdate, 10020, H_EXEC, 0, NULL)                                           \
    R(cuGraphExecUpdate, 12000, H_EXEC, 0, NULL)                                           \
    RULES_ROWS_GRAPH_NODES_(R)                                                             \
    RULES_ROWS_GRAPH_MEMORY_(R)                                                            \
    R(cuIpcGetMemHandle, 4010, H_BUF, 0, NULL)                                             \
    R(cuIpcOpenMemHandle, 11000, H_BUF, 0, "A's buffer's handle, opened in the process that exported it") \
    R(cuIpcCloseMemHandle, 4010, H_BUF, 0, "A's buffer was allocated, never opened through IPC") \
    R(cuIpcGetEventHandle, 4010, H_EVENT, 0, "the fixture's event is not CU_EVENT_INTERPROCESS") \
    R(cuIpcOpenEventHandle, 4010, H_CURRENT, 0, "the handle is zero bytes: no event's")  \
    R(cuArrayCreate, 3020, H_CURRENT, 0, NULL)                                             \
    R(cuArray3DCreate, 3020, H_CURRENT, 0, NULL)                                           \
    R(cuArrayDestroy, 2000, H_CURRENT, 0, NULL)                                            \
    R(cuArray3DGetDescriptor, 3020, H_CURRENT, 0, NULL)                                    \
    R(cuMipmappedArrayCreate, 5000, H_CURRENT, 0, NULL)                                    \
    R(cuMipmappedArrayGetLevel, 5000, H_CURRENT, 0, NULL)                                  \
    R(cuMipmappedArrayDestroy, 5000, H_CURRENT, 0, NULL)                                   \
    R(cuMemAllocPitch, 3020, H_CURRENT, 0, NULL)                                           \
    R(cuMemcpy2D, 3020, H_BUF, 0, NULL)                                                    \
    R(cuMemcpy2DAsync, 3020, H_BUF, 0, NULL)                                               \
    R(cuMemcpy3D, 3020, H_BUF, 0, NULL)                                                    \
    R(cuMemcpy3DAsync, 3020, H_BUF, 0, NULL)                                               \
    R(cuTexObjectCreate, 5000, H_CURRENT, 0, NULL)                                         \
    R(cuTexObjectDestroy, 5000, H_CURRENT, 0, NULL)                                        \
    R(cuTexObjectGetResourceDesc, 5000, H_CURRENT, 0, NULL)                                \
    R(cuSurfObjectCreate, 5000, H_CURRENT, 0, NULL)                                        \
    R(cuSurfObjectDestroy, 5000, H_CURRENT, 0, NULL)                                       \
    RULES_ROWS_12020_(R)                                                                   \
    RULES_ROWS_12030_(R)                                                                   \
    RULES_ROWS_12040_(R)                                                                   \
    RULES_ROWS_LIBRARY_(R)                                                                 \
    RULES_ROWS_12050_(R)                                                                   \
    RULES_ROWS_12080_(R)                                                                   \
    RULES_ROWS_13000_(R)                                                                   \
    RULES_ROWS_VMM_(R)                                                                     \
    RULES_ROWS_LINK_(R)                                                                    \
    RULES_ROWS_GREEN_(R)                                                              \
    RULES_ROWS_TENSOR_MAP_(R)                                                         \
    RULES_ROWS_CONDITIONAL_(R)                                                             \
    RULES_ROWS_GRAPH_INSPECT_(R)                                                           \
    RULES_ROWS_CAPTURE_TO_GRAPH_(R)

/* Graph inspection and editing (issue 19): the queries and edits on the
 * fixture's graph, node and executable graph (the clones read its kernel
 * node); the event, host and child updates build their own graph and
 * executable graph in the current context (rows.c), as the copy and memset
 * updates do. */
#define RULES_ROWS_GRAPH_INSPECT_(R)                                                       \
    R(cuGraphNodeGetDependencies, 10000, H_NODE, 0, NULL)                                  \
    R(cuGraphNodeGetDependentNodes, 10000, H_NODE, 0, NULL)                                \
    R(cuGraphGetEdges, 10000, H_GRAPH, 0, NULL)                                            \
    R(cuGraphRemoveDependencies, 10000, H_GRAPH, 0, NULL)                                  \
    RULES_ROWS_GRAPH_INSPECT_12030_(R)                                                     \
    R(cuGraphNodeGetEnabled, 11060, H_EXEC, 0, NULL)                                       \
    R(cuGraphExecGetFlags, 12000, H_EXEC, 0, NULL)                                         \
    R(cuGraphDebugDotPrint, 11030, H_GRAPH, 0, NULL)                                       \
    R(cuGraphDestroyNode, 10000, H_GRAPH, 0, NULL)                                         \
    R(cuGraphClone, 10000, H_GRAPH, R_READS_KERNEL, NULL)                                  \
    R(cuGraphNodeFindInClone, 10000, H_GRAPH, R_READS_KERNEL, NULL)                        \
    R(cuGraphExecEventRecordNodeSetEvent, 11010, H_CURRENT, 0, NULL)                       \
    R(cuGraphExecEventWaitNodeSetEvent, 11010, H_CURRENT, 0, NULL)                         \
    R(cuGraphExecHostNodeSetParams, 10020, H_CURRENT, 0, NULL)                             \
    R(cuGraphExecChildGraphNodeSetParams, 11010, H_CURRENT, 0, NULL)                       \
    R(cuGraphInstantiateWithParams, 12000, H_GRAPH, R_READS_KERNEL, NULL)                  \
    RULES_ROWS_GRAPH_SET_(R)
/* Changes of a node of a graph (graph-set): the kernel rows set the
 * fixture's kernel node to its own parameters; the others build their own
 * graph of one node in the current context, change it, and free it. */
#define RULES_ROWS_GRAPH_SET_(R)                                                           \
    R(cuGraphKernelNodeSetParams, 10000, H_NODE, 0, NULL)                                  \
    R(cuGraphKernelNodeSetParams, 12000, H_NODE, 0, NULL)                                  \
    R(cuGraphMemcpyNodeSetParams, 10000, H_CURRENT, 0, NULL)                               \
    R(cuGraphMemsetNodeSetParams, 10000, H_CURRENT, 0, NULL)                               \
    R(cuGraphHostNodeSetParams, 10000, H_CURRENT, 0, NULL)                                 \
    R(cuGraphEventRecordNodeSetEvent, 11010, H_CURRENT, 0, NULL)                           \
    R(cuGraphEventWaitNodeSetEvent, 11010, H_CURRENT, 0, NULL)                             \
    R(cuGraphKernelNodeSetAttribute, 11000, H_NODE, 0, NULL)                               \
    R(cuGraphKernelNodeGetAttribute, 11000, H_NODE, 0, NULL)                               \
    R(cuGraphKernelNodeCopyAttributes, 11000, H_NODE, 0, NULL)                             \
    R(cuGraphEventRecordNodeGetEvent, 11010, H_CURRENT, 0, NULL)                           \
    R(cuGraphEventWaitNodeGetEvent, 11010, H_CURRENT, 0, NULL)                             \
    R(cuGraphChildGraphNodeGetGraph, 10000, H_CURRENT, 0, NULL)                            \
    R(cuGraphHostNodeGetParams, 10000, H_CURRENT, 0, NULL)
#if CUDA_VERSION >= 12030
#define RULES_ROWS_GRAPH_INSPECT_12030_(R)                                                 \
    R(cuGraphNodeGetDependencies, 12030, H_NODE, 0, NULL)                                  \
    R(cuGraphNodeGetDependentNodes, 12030, H_NODE, 0, NULL)                                \
    R(cuGraphGetEdges, 12030, H_GRAPH, 0, NULL)                                            \
    R(cuGraphRemoveDependencies, 12030, H_GRAPH, 0, NULL)
#else
#define RULES_ROWS_GRAPH_INSPECT_12030_(R)
#endif

/* Capture into a graph: a capture on the fixture's stream into the
 * fixture's graph, after its node, ended again in the call (rows.c). */
#if CUDA_VERSION >= 12030
#define RULES_ROWS_CAPTURE_TO_GRAPH_(R)                                                    \
    R(cuStreamBeginCaptureToGraph, 12030, H_STREAM, 0, NULL)
#else
#define RULES_ROWS_CAPTURE_TO_GRAPH_(R)
#endif
/* Graph memory nodes: an allocation node of A's device added to the
 * fixture's graph (then a free node after it, or the node's parameters
 * read: rows.c); the device's graph memory (trim, an attribute read, a
 * high-water mark reset), device calls. */
#define RULES_ROWS_GRAPH_MEMORY_(R)                                                        \
    R(cuGraphAddMemAllocNode, 11040, H_GRAPH, 0, NULL)                                     \
    R(cuGraphAddMemFreeNode, 11040, H_GRAPH, 0, NULL)                                      \
    R(cuGraphMemAllocNodeGetParams, 11040, H_GRAPH, 0, NULL)                               \
    R(cuGraphMemFreeNodeGetParams, 11040, H_GRAPH, 0, NULL)                                \
    R(cuDeviceGraphMemTrim, 11040, H_DEVICE, 0, NULL)                                      \
    R(cuDeviceGetGraphMemAttribute, 11040, H_DEVICE, 0, NULL)                              \
    R(cuDeviceSetGraphMemAttribute, 11040, H_DEVICE, 0, NULL)

/* Conditional nodes: a handle on the fixture's graph, and a WHILE node of
 * it (the handle made first, rows.c). */
#if CUDA_VERSION >= 12030
#define RULES_ROWS_CONDITIONAL_(R)                                                         \
    R(cuGraphConditionalHandleCreate, 12030, H_GRAPH, 0, NULL)                             \
    R(cuGraphAddNode, 12030, H_GRAPH, 0, NULL)
#else
#define RULES_ROWS_CONDITIONAL_(R)
#endif

/* TMA tensor maps: values, not objects; the calls name no context and are
 * documented without one, so their rows are process-wide (H_NONE). Each
 * encodes a 2-D float map of the fixture's buffer. */
#define RULES_ROWS_TENSOR_MAP_(R)                                                          \
    R(cuTensorMapEncodeTiled, 12000, H_NONE, 0, NULL)                                      \
    R(cuTensorMapEncodeIm2col, 12000, H_NONE, 0, NULL)                                     \
    R(cuTensorMapReplaceAddress, 12000, H_NONE, 0, NULL)

/* Memory pools: the pool calls make their own pool (created, or the device's
 * default one) and release it, so they take the device's columns;
 * cuMemAllocFromPoolAsync (the default pool) takes the stream's. The IPC
 * rows export and import within the process, which tells what the driver
 * answers there. */
#define RULES_ROWS_POOLS_(R)                                                               \
    R(cuDeviceGetDefaultMemPool, 11020, H_DEVICE, 0, NULL)                                 \
    R(cuDeviceGetMemPool, 11020, H_DEVICE, 0, NULL)                                        \
    R(cuDeviceSetMemPool, 11020, H_DEVICE, 0, NULL)                                        \
    R(cuMemPoolCreate, 11020, H_DEVICE, 0, NULL)                                           \
    R(cuMemPoolDestroy, 11020, H_DEVICE, 0, NULL)                                          \
    R(cuMemPoolSetAttribute, 11020, H_DEVICE, 0, NULL)                                     \
    R(cuMemPoolGetAttribute, 11020, H_DEVICE, 0, NULL)                                     \
    R(cuMemPoolTrimTo, 11020, H_DEVICE, 0, NULL)                                           \
    R(cuMemPoolSetAccess, 11020, H_DEVICE, 0, NULL)                                        \
    R(cuMemPoolGetAccess, 11020, H_DEVICE, 0, NULL)                                        \
    R(cuMemAllocFromPoolAsync, 11020, H_STREAM, 0, NULL)                                   \
    R(cuMemPoolExportToShareableHandle, 11020, H_DEVICE, 0, NULL)                          \
    R(cuMemPoolImportFromShareableHandle, 11020, H_DEVICE, 0, NULL)                        \
    R(cuMemPoolExportPointer, 11020, H_DEVICE, 0, "the fixture's pool is not exported first: the H200 refuses a pointer export before its pool's") \
    R(cuMemPoolImportPointer, 11020, H_DEVICE, 0, NULL)

/* Graphs built by hand (issue 19): the adds work on the fixture's graph (its
 * kernel node as a dependency where one is needed), the per-node updates on
 * its executable graph and kernel node; the copy and memset updates, which
 * need nodes of their kind, build their own graph and executable graph in
 * the current context (so they take the current context's columns). */
#define RULES_ROWS_GRAPH_NODES_(R)                                                         \
    R(cuGraphCreate, 10000, H_CURRENT, 0, NULL)                                            \
    R(cuGraphAddKernelNode, 10000, H_GRAPH, 0, NULL)                                       \
    R(cuGraphAddKernelNode, 12000, H_GRAPH, 0, NULL)                                       \
    R(cuGraphAddMemcpyNode, 10000, H_GRAPH, 0, NULL)                                       \
    R(cuGraphAddMemsetNode, 10000, H_GRAPH, 0, NULL)                                       \
    R(cuGraphAddHostNode, 10000, H_GRAPH, 0, NULL)                                         \
    R(cuGraphAddEventRecordNode, 11010, H_GRAPH, 0, NULL)                                  \
    R(cuGraphAddEventWaitNode, 11010, H_GRAPH, 0, NULL)                                    \
    R(cuGraphAddEmptyNode, 10000, H_GRAPH, 0, NULL)                                        \
    R(cuGraphAddChildGraphNode, 10000, H_GRAPH, 0, NULL)                                   \
    R(cuGraphAddDependencies, 10000, H_GRAPH, 0, NULL)                                     \
    RULES_ROWS_GRAPH_NODES_12030_(R)                                                       \
    R(cuGraphGetRootNodes, 10000, H_GRAPH, 0, NULL)                                        \
    R(cuGraphExecKernelNodeSetParams, 10010, H_EXEC, 0, NULL)                              \
    R(cuGraphExecKernelNodeSetParams, 12000, H_EXEC, 0, NULL)                              \
    R(cuGraphExecMemcpyNodeSetParams, 10020, H_CURRENT, 0, NULL)                           \
    R(cuGraphExecMemsetNodeSetParams, 10020, H_CURRENT, 0, NULL)                           \
    R(cuGraphNodeSetEnabled, 11060, H_EXEC, 0, NULL)
#if CUDA_VERSION >= 12030
#define RULES_ROWS_GRAPH_NODES_12030_(R) R(cuGraphAddDependencies, 12030, H_GRAPH, 0, NULL)
#else
#define RULES_ROWS_GRAPH_NODES_12030_(R)
#endif

/* The newer variants and entry points, with the headers that declare them (as
 * FAKE_ENTRIES has them). */
/* JIT linking: no fixture handle. cuLinkCreate links for the current
 * context (H_CURRENT's columns); the other calls make their own link state in
 * A (A pushed around cuLinkCreate, then popped: the column's state is back
 * for the call), so their cells compare the call with the state's context
 * current, not, or another; where A cannot be pushed (destroyed) or makes no
 * state (poisoned), the cell is that failure (rows.c). */
#define RULES_ROWS_LINK_(R)                                                                \
    R(cuLinkCreate, 6050, H_CURRENT, 0, NULL)                                              \
    R(cuLinkAddData, 6050, H_CURRENT, 0, NULL)                                             \
    R(cuLinkAddFile, 6050, H_CURRENT, 0, NULL)                                             \
    R(cuLinkComplete, 5050, H_CURRENT, 0, NULL)                                            \
    R(cuLinkDestroy, 5050, H_CURRENT, 0, NULL)

/* Virtual memory management: no fixture handle; each call makes what it
 * needs and frees it (rows.c), so that the cells compare the context rules
 * of the call alone. */
#define RULES_ROWS_VMM_(R)                                                                 \
    R(cuMemCreate, 10020, H_NONE, 0, NULL)                                                 \
    R(cuMemRelease, 10020, H_NONE, 0, NULL)                                                \
    R(cuMemGetAllocationGranularity, 10020, H_NONE, 0, NULL)                               \
    R(cuMemAddressReserve, 10020, H_NONE, 0, NULL)                                         \
    R(cuMemAddressFree, 10020, H_NONE, 0, NULL)                                            \
    R(cuMemMap, 10020, H_NONE, 0, NULL)                                                    \
    R(cuMemUnmap, 10020, H_NONE, 0, NULL)                                                  \
    R(cuMemSetAccess, 10020, H_NONE, 0, NULL)                                              \
    R(cuMemGetAccess, 10020, H_NONE, 0, NULL)                                              \
    R(cuMemExportToShareableHandle, 10020, H_NONE, 0, NULL)                                \
    R(cuMemImportFromShareableHandle, 10020, H_NONE, 0, NULL)                              \
    R(cuMemRetainAllocationHandle, 11000, H_NONE, 0, NULL)

#if CUDA_VERSION >= 12020
#define RULES_ROWS_12020_(R)                                                               \
    R(cuMemPrefetchAsync, 12020, H_MANAGED, 0, NULL)                                       \
    R(cuMemAdvise, 12020, H_MANAGED, 0, NULL)
#else
#define RULES_ROWS_12020_(R)
#endif
#if CUDA_VERSION >= 12030
#define RULES_ROWS_12030_(R)                                                               \
    R(cuFuncGetName, 12030, H_FUNCTION, 0, NULL)                                           \
    R(cuStreamGetCaptureInfo, 12030, H_STREAM, 0, NULL)
#else
#define RULES_ROWS_12030_(R)
#endif
#if CUDA_VERSION >= 12040
#define RULES_ROWS_12040_(R)                                                               \
    R(cuModuleGetFunctionCount, 12040, H_MODULE, 0, NULL)                                  \
    R(cuModuleEnumerateFunctions, 12040, H_MODULE, 0, NULL)                                \
    R(cuFuncGetParamInfo, 12040, H_FUNCTION, 0, NULL)
#else
#define RULES_ROWS_12040_(R)
#endif
/* Libraries and kernels: a library belongs to no context, so its rows are
 * process-wide (H_NONE) but for the two calls that act in the current
 * context. Each call loads its own library of the fixture's PTX and unloads
 * it (rows.c). */
#if CUDA_VERSION >= 12040
#define RULES_ROWS_LIBRARY_(R)                                                             \
    R(cuLibraryLoadData, 12000, H_NONE, 0, NULL)                                           \
    R(cuLibraryLoadFromFile, 12000, H_NONE, 0, NULL)                                       \
    R(cuLibraryUnload, 12000, H_NONE, 0, NULL)                                             \
    R(cuLibraryGetKernel, 12000, H_NONE, 0, NULL)                                          \
    R(cuLibraryGetKernelCount, 12040, H_NONE, 0, NULL)                                     \
    R(cuLibraryEnumerateKernels, 12040, H_NONE, 0, NULL)                                   \
    R(cuLibraryGetGlobal, 12000, H_CURRENT, 0, NULL)                                       \
    R(cuLibraryGetManaged, 12000, H_NONE, 0, "the fixture's PTX has no managed variable")  \
    R(cuLibraryGetUnifiedFunction, 12000, H_NONE, 0, "the fixture's PTX has none")         \
    R(cuKernelGetFunction, 12000, H_CURRENT, 0, NULL)                                      \
    R(cuKernelGetAttribute, 12000, H_NONE, 0, NULL)                                        \
    R(cuKernelSetAttribute, 12000, H_NONE, 0, NULL)                                        \
    R(cuKernelGetName, 12030, H_NONE, 0, NULL)                                             \
    R(cuKernelGetParamInfo, 12040, H_NONE, 0, NULL)
#else
#define RULES_ROWS_LIBRARY_(R)
#endif
#if CUDA_VERSION >= 12050
#define RULES_ROWS_12050_(R) R(cuStreamGetCtx, 12050, H_STREAM, 0, NULL)
#else
#define RULES_ROWS_12050_(R)
#endif
#if CUDA_VERSION >= 12080
#define RULES_ROWS_12080_(R) R(cuEventElapsedTime, 12080, H_EVENT, 0, NULL)
#else
#define RULES_ROWS_12080_(R)
#endif
#if CUDA_VERSION >= 13000
#define RULES_ROWS_13000_(R)                                                               \
    R(cuCtxGetDevice, 13000, H_CONTEXT, 0, NULL)                                           \
    R(cuCtxSynchronize, 13000, H_CONTEXT, 0, NULL)
#else
#define RULES_ROWS_13000_(R)
#endif

/* Green contexts: the resource calls take the device's SM resource, and a
 * green context belongs to no fixture context, so the calls on one make
 * their own (of all the device's SMs) and destroy it (rows.c). */
#if CUDA_VERSION >= 12050
#define RULES_ROWS_GREEN_(R)                                                               \
    R(cuDeviceGetDevResource, 12040, H_DEVICE, 0, NULL)                                    \
    R(cuCtxGetDevResource, 12040, H_CONTEXT, 0, NULL)                                      \
    R(cuDevSmResourceSplitByCount, 12040, H_NONE, 0, NULL)                                 \
    R(cuDevResourceGenerateDesc, 12040, H_NONE, 0, NULL)                                   \
    R(cuGreenCtxCreate, 12040, H_DEVICE, 0, NULL)                                          \
    R(cuGreenCtxDestroy, 12040, H_NONE, 0, NULL)                                           \
    R(cuCtxFromGreenCtx, 12040, H_NONE, 0, NULL)                                           \
    R(cuGreenCtxStreamCreate, 12050, H_NONE, 0, NULL)                                     \
    R(cuGreenCtxRecordEvent, 12040, H_NONE, 0, NULL)                                       \
    R(cuGreenCtxWaitEvent, 12040, H_NONE, 0, NULL)
#else
#define RULES_ROWS_GREEN_(R)
#endif

/* The driver under test: one pointer per row, symbol_version, of the row's
 * ABI (NULL when the driver does not resolve it). */
typedef struct rules_driver {
#define RULES_DRIVER_MEMBER_(symbol, version, handle, flags, note)                         \
    PFN_##symbol##_v##version symbol##_##version;
    RULES_ROWS(RULES_DRIVER_MEMBER_)
#undef RULES_DRIVER_MEMBER_
} rules_driver;

extern rules_driver drv;

typedef struct rules_row {
    const char *symbol;
    int version;
    rules_handle handle;
    unsigned flags;
    const char *note;
    rules_call_fn call;      /* NULL for H_UNCOUNTED */
    size_t driver_offset;    /* of its pointer in rules_driver */
} rules_row;

extern const rules_row rules_rows[];
extern const size_t rules_row_count;

/* The row's name as the table prints it: "cuMemAlloc@3020". */
void rules_row_name(const rules_row *row, char *buf, size_t size);
/* Copies src into dst (size bytes), cut short if need be. */
void rules_copy(char *dst, size_t size, const char *src);
/* The row called name, or NULL. */
const rules_row *rules_row_find(const char *name);
/* Whether the row's entry point was resolved. */
bool rules_row_present(const rules_row *row);

/* --- the driver (driver.c) ------------------------------------------------------------ */

/* Opens the driver under test (the fake, installed with two devices; or
 * libcuda.so.1, through cuGetProcAddress_v2 at each row's version), fills drv
 * and calls cuInit. false, with why in `why`, when it cannot. */
bool rules_driver_open(char *why, size_t size);
/* Puts the fake back (uninstall); nothing on the real driver. */
void rules_driver_close(void);
/* cuDeviceGetCount after open. */
int rules_device_count(void);
/* The CUresult's name (cuGetErrorName of the driver under test). */
const char *rules_result_name(CUresult r, char *buf, size_t size);
/* What the table's header says about the driver: "fake" or the real one's
 * version and device name. */
void rules_driver_describe(char *buf, size_t size);
extern const bool rules_on_fake;

/* --- cells (cells.c) ---------------------------------------------------------------- */

/* Room for a result name, or two alternatives "A|B" (expected.txt). */
#define RULES_CELL_SIZE 96

/* The columns that apply to a row (bits of COL_BIT). */
unsigned rules_columns_of(const rules_row *row);
/* Whether a cell is left out on the real driver (see `skip` above). */
bool rules_cell_risky(const rules_row *row, rules_column col);
/* Runs one cell and writes its text (a CUresult name, or one of the words
 * above). Leaves the thread with no context. Returns false when the
 * harness itself failed (a teardown that left state behind on the fake). */
bool rules_run_cell(const rules_row *row, rules_column col, char *out, size_t size);
/* Called with the cell's text as soon as it is known, before the teardown
 * (so that a process that dies in a teardown has told its result); NULL:
 * not called. */
extern void (*rules_cell_result_hook)(const char *result);
/* Writes the fixture's files (the PTX file for cuModuleLoad, the fatbin), and
 * removes them. */
bool rules_cells_init(void);
void rules_cells_fini(void);
/* Whether the driver resolved every entry point the fixture and the states
 * use; false, with the first one missing in `why`. */
bool rules_fixture_ready(char *why, size_t size);

/* --- the table (table.c) -------------------------------------------------------------- */

typedef struct rules_table {
    char (*cells)[COL_COUNT][RULES_CELL_SIZE]; /* [rules_row_count] */
    bool provisional;                          /* made on the fake */
    char driver[128];                          /* the header's driver line */
} rules_table;

bool rules_table_init(rules_table *t);
void rules_table_free(rules_table *t);
/* Prints the table (sorted by symbol, then version) to f, with its header. */
void rules_table_print(const rules_table *t, FILE *f);
bool rules_table_write(const rules_table *t, const char *path);
/* Reads a table that rules_table_write wrote; rows it lacks stay empty. */
bool rules_table_read(rules_table *t, const char *path);
/* Compares got (this run) with want (the checked-in table), cell by cell,
 * on the fake excusing the cells that the deliberate list (path, or NULL)
 * names. Prints every difference; returns their count, not counting the
 * excused ones, plus the deliberate lines that excused nothing. */
int rules_table_compare(const rules_table *got, const rules_table *want,
                        const char *deliberate_path, const bool *ran);
/* On the fake: every entry that the fake's resolver (FAKE_ENTRIES) and
 * cuscope's driver table (CUS_DRIVER_ENTRIES) list has a row, and every row
 * is an entry of the fake. Prints what is missing; returns the count. */
int rules_check_coverage(void);

#endif
