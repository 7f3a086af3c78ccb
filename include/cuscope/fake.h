/* cuscope/fake.h: a stateful fake CUDA driver that runs on any CPU.
 *
 * Link cuscope-fake (meson: cuscope_fake_dep / dependency('cuscope-fake'),
 * pkg-config: cuscope-fake) and call cus_fake_install(): every cuscope call
 * from then on runs against the fake, which implements the driver entry points
 * cuscope resolves, with the driver's semantics (per-thread context stacks,
 * primary-context counting, error codes). It tracks every handle, reports
 * misuse (use after destroy, double destroy), counts live handles so a test can
 * assert that nothing leaked, logs calls, injects faults, and can impersonate
 * an older driver.
 *
 * fork(): in a child, cuscope makes no driver call (cuscope/driver.h), so the
 * fake's entry points are not reached. The fake's own functions do not hang
 * there: a fork() child handler (registered by a constructor) re-initialises
 * its lock, which another parent thread may have held, and forgets its driver
 * thread, which the child does not have (host functions queued or running in
 * the parent never run in the child; cus_fake_install() and
 * cus_fake_uninstall() reset the child's copy without waiting for them, then
 * report cuscope's CUS_ERROR_FORKED). The counters and queries
 * (cus_fake_call_count() and the like) read the child's copy of the state.
 *
 * Cost as work grows: a handle is found in constant time however many were
 * made since install (graph nodes and per-thread streams too), so a call costs
 * the same in the ten-thousandth test case as in the first; a per-node update
 * of an executable graph finds its node in constant time too (a scan once
 * its graph was re-sorted by an edge added after the instantiation). But a destroyed
 * handle's record, and freed device memory's block (quarantined: poisoned, or
 * mapped out), stay until the next install, so that a later use is reported
 * and no address is reused: a suite that makes millions of handles, or frees
 * much memory, should reinstall between cases.
 *
 * Thread safety: the entry points are thread-safe (one internal lock); each
 * thread has its own emulated context stack, as with the real driver. The
 * control functions below (install, faults, queries) are thread-safe too, but a
 * test should not reconfigure while other threads are mid-scenario.
 */
#ifndef CUSCOPE_FAKE_H
#define CUSCOPE_FAKE_H

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>

#include "object.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The most devices a fake can have (cus_fake_config.device_count). */
#define CUS_FAKE_MAX_DEVICES 16
/* The most attribute overrides per device (cus_fake_device_config). */
#define CUS_FAKE_MAX_ATTRIBUTE_OVERRIDES 16

/* One device attribute's value, overriding the fake's default. */
typedef struct cus_fake_attribute {
    CUdevice_attribute attribute; /* CU_DEVICE_ATTRIBUTE_* */
    int value;                    /* what cuDeviceGetAttribute answers */
} cus_fake_attribute;

/* One fake device. Zero fields take the defaults shown. */
typedef struct cus_fake_device_config {
    const char *name;             /* `"cuscope fake GPU <ordinal>"` */
    int cc_major, cc_minor;       /* the compute capability: 9.0 */
    size_t total_memory;          /* 80 GiB */
    int multiprocessor_count;     /* 132 */
    /* Any other attribute; the fake answers plausible Hopper values for the
     * rest and 0 for attributes it does not know. */
    cus_fake_attribute overrides[CUS_FAKE_MAX_ATTRIBUTE_OVERRIDES];
    int override_count;           /* the entries of overrides in use */
} cus_fake_device_config;

/* The fake's configuration (cus_fake_install). Zero fields take the
 * defaults said. */
typedef struct cus_fake_config {
    /* Number of devices; 0 means the default of 1. Use no_devices for none. */
    int device_count;
    bool no_devices;              /* cuInit returns CUDA_ERROR_NO_DEVICE */
    /* The driver API version reported by cuDriverGetVersion and honoured by
     * the resolver: entry points newer than it are absent
     * (CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT), and asking for a version
     * above it is CUDA_ERROR_INVALID_VALUE, as with a real driver. 0 means
     * CUDA_VERSION of the headers cuscope was built with. */
    int driver_version;
    /* Per-device settings; NULL for defaults. Indexed by ordinal, at least
     * device_count entries when not NULL. */
    const cus_fake_device_config *devices;
    /* A kernel that runs with no host implementation (cus_fake_register_kernel)
     * fails as a faulting kernel does: the synchronization that ran it
     * returns CUDA_ERROR_LAUNCH_FAILED, the context is poisoned, and
     * cus_fake_last_misuse() names the kernel. Off (false), such a kernel
     * does nothing, and is counted (cus_fake_kernels_without_twin). */
    bool strict_kernels;
} cus_fake_config;

/* Resets the fake to a fresh state configured by cfg (NULL: one default
 * device), and makes cuscope use it (cus_driver_install). First waits for
 * host functions still running and joins the driver thread. Fails with
 * CUS_ERROR_BUSY while cuscope objects are alive or inside a host function,
 * and with CUS_ERROR_INVALID_ARGUMENT for a bad config (these two refusals
 * do not record the thread's last error: report the status itself). cuscope
 * then loads on its next call that needs the driver (or an explicit
 * cus_init()). Not thread-safe against other cuscope calls. */
CUS_API cus_status cus_fake_install(const cus_fake_config *cfg);

/* Makes cuscope go back to the real driver (cus_driver_install(NULL)) and
 * frees the fake's state, joining the driver thread as cus_fake_install()
 * does. CUS_ERROR_BUSY while cuscope objects are alive or inside a host
 * function. */
CUS_API cus_status cus_fake_uninstall(void);

/* The fake's resolver, cuGetProcAddress_v2's signature, for chaining (a tracer
 * that wraps the fake). */
CUS_API CUresult cus_fake_get_proc_address(const char *symbol, void **pfn, int cuda_version,
                                           cuuint64_t flags,
                                           CUdriverProcAddressQueryResult *symbol_status);

/* Changes one attribute of one device of the installed fake. */
CUS_API cus_status cus_fake_set_attribute(int ordinal, CUdevice_attribute attr, int value);

/* --- handle tracking ------------------------------------------------------ */

/* The kinds of driver handle the fake counts (cus_fake_live_handles). */
typedef enum cus_fake_handle_kind {
    CUS_FAKE_HANDLE_ANY = 0,          /* every kind below */
    CUS_FAKE_HANDLE_CONTEXT,          /* cuCtxCreate contexts */
    CUS_FAKE_HANDLE_PRIMARY_CONTEXT,  /* primary contexts with a retain count > 0 */
    CUS_FAKE_HANDLE_STREAM,           /* cuStreamCreate* streams (not the default streams) */
    CUS_FAKE_HANDLE_EVENT,            /* cuEventCreate events */
    /* cuMemAlloc blocks, and cuMemAllocAsync blocks from the call until their
     * cuMemFreeAsync executes */
    CUS_FAKE_HANDLE_DEVICE_MEMORY,
    CUS_FAKE_HANDLE_HOST_MEMORY,      /* pinned: cuMemHostAlloc, cuMemAllocHost */
    CUS_FAKE_HANDLE_MANAGED_MEMORY,   /* cuMemAllocManaged */
    CUS_FAKE_HANDLE_HOST_REGISTRATION, /* cuMemHostRegister ranges */
    CUS_FAKE_HANDLE_MODULE,           /* cuModuleLoadData* modules */
    /* graphs of stream capture: from cuStreamBeginCapture (the graph being
     * captured) until cuGraphDestroy, or the end of a failed capture */
    CUS_FAKE_HANDLE_GRAPH,
    CUS_FAKE_HANDLE_GRAPH_EXEC,       /* cuGraphInstantiateWithFlags executable graphs */
    /* cuIpcOpenMemHandle mappings in a context, until the cuIpcCloseMemHandle
     * that balances the last open (or their context's destruction) */
    CUS_FAKE_HANDLE_IPC_MAPPING,
    CUS_FAKE_HANDLE_ARRAY,            /* cuArrayCreate, cuArray3DCreate arrays (not mipmap levels) */
    CUS_FAKE_HANDLE_MIPMAPPED_ARRAY,  /* cuMipmappedArrayCreate */
    CUS_FAKE_HANDLE_TEXTURE,          /* cuTexObjectCreate */
    CUS_FAKE_HANDLE_SURFACE,          /* cuSurfObjectCreate */
    /* cuMemPoolCreate and cuMemPoolImportFromShareableHandle pools (not a
     * device's default pool) */
    CUS_FAKE_HANDLE_MEMORY_POOL,
    /* cuMemCreate and cuMemImportFromShareableHandle handles, until their
     * last cuMemRelease (cuMemRetainAllocationHandle counts too) */
    CUS_FAKE_HANDLE_PHYSICAL_MEMORY,
    CUS_FAKE_HANDLE_VA_RESERVATION,   /* cuMemAddressReserve ranges, until cuMemAddressFree */
    CUS_FAKE_HANDLE_LIBRARY,          /* cuLibraryLoadData, cuLibraryLoadFromFile libraries */
    CUS_FAKE_HANDLE_LINK_STATE,       /* cuLinkCreate link states, until cuLinkDestroy */
    /* cuGreenCtxCreate green contexts, until cuGreenCtxDestroy (their
     * contexts, cuCtxFromGreenCtx, are not counted apart; the primary
     * context each retains is) */
    CUS_FAKE_HANDLE_GREEN_CONTEXT,
    CUS_FAKE_HANDLE_KIND_COUNT_
} cus_fake_handle_kind;

/* Live handles of one kind (CUS_FAKE_HANDLE_ANY: all kinds). */
CUS_API size_t cus_fake_live_handles(cus_fake_handle_kind kind);

/* Misuse detected since install: a destroyed or unknown handle passed in, a
 * double destroy, a release of a primary context never retained, a copy or
 * memset range outside its allocation, memory used after it was freed (or
 * outside its stream-ordered lifetime), a CUDA call inside a host function.
 * Each is counted, and the last one described. The call itself returns the
 * driver's error for it (CUDA_ERROR_INVALID_CONTEXT and the like; a stream or
 * event whose context was destroyed answers CUDA_ERROR_CONTEXT_IS_DESTROYED,
 * as the H200 does), or, where the real driver crashes or accepts the handle,
 * an error of its own (see "Known differences from the real driver"); misuse
 * found while a queued operation executes skips that operation and leaves
 * the synchronizing call's result alone. */
CUS_API unsigned long cus_fake_misuse_count(void);
/* "" if none; valid until the next misuse (on any thread: read it when no
 * other thread can misuse the fake). */
CUS_API const char *cus_fake_last_misuse(void);

/* --- known differences from the real driver ---------------------------------
 * The fake follows the context rules an H200 (driver 580.159.04) showed, entry
 * point by entry point and state by state (test/rules/expected.txt; the unit
 * test `rules` holds the fake to it). It differs on purpose only where the
 * real driver's behaviour is undefined, a use after destroy, and there it
 * crashes (SIGSEGV: it dereferences the destroyed handle) or accepts what it
 * should not. The fake recognises the destroyed handle (its records outlive
 * their handles), counts a misuse and returns an error instead:
 *   - a stream used after cuStreamDestroy (cuStreamQuery, cuStreamSynchronize,
 *     cuStreamWaitEvent, the getters, the capture calls, cuLaunchHostFunc,
 *     cuMemAllocAsync, a second cuStreamDestroy), and an event used after
 *     cuEventDestroy (cuEventRecord, cuEventQuery, cuEventSynchronize,
 *     cuEventElapsedTime, a second cuEventDestroy): the driver crashes; the
 *     fake answers CUDA_ERROR_INVALID_HANDLE. (A stream or event destroyed
 *     with its context is no difference: both answer
 *     CUDA_ERROR_CONTEXT_IS_DESTROYED.)
 *   - cuMemcpy of memory freed (by cuMemFree, or with its context), and
 *     cuMemcpyAsync of memory freed by cuMemFree: the driver crashes; the fake
 *     reports the use after free and answers CUDA_ERROR_INVALID_VALUE (as the
 *     typed copies cuMemcpyHtoD and the like do on both);
 *   - cuMemcpyPeer naming a destroyed context, and cuCtxGetDevice_v2 of one:
 *     the driver crashes; the fake answers CUDA_ERROR_INVALID_CONTEXT;
 *   - cuCtxPushCurrent and cuCtxSetCurrent of a destroyed context: the driver
 *     accepts it (and the process dies later, in its teardown); the fake
 *     answers CUDA_ERROR_INVALID_CONTEXT and changes no stack (so the cuLink*
 *     probes that push one first answer that, not the H200's
 *     CUDA_ERROR_CONTEXT_IS_DESTROYED);
 *   - cuGraphAddKernelNode, cuGraphKernelNodeSetParams and
 *     cuGraphExecKernelNodeSetParams with no context current: the driver
 *     crashes; the fake answers CUDA_ERROR_INVALID_CONTEXT;
 *   - event record and wait nodes added or set with an event destroyed with
 *     its context: the driver accepts it; the fake answers
 *     CUDA_ERROR_CONTEXT_IS_DESTROYED.
 * lib/fake/deliberate.txt lists the same cells for the test. Beyond the
 * context rules, one more on purpose: cuIpcOpenMemHandle of a handle whose
 * memory the exporter has freed succeeds on the H200 (a mapping of memory
 * nobody owns); the fake refuses it with CUDA_ERROR_INVALID_VALUE. What the
 * fake does not emulate is said where it applies (stream capture and graphs,
 * below; the launch argument limit; IPC, pools, VMM and arrays, with their
 * own sections; JIT linking, next). */

/* --- JIT linking (cuLinkCreate, cuLinkAddData, cuLinkAddFile, cuLinkComplete,
 * cuLinkDestroy) -------------------------------------------------------------
 * The fake has no ptxas and no nvlink: it links PTX, which its parser reads.
 * Each PTX input is parsed when added (a syntax error answers the add with
 * CUDA_ERROR_INVALID_PTX and ptxas' message in the error log, as the driver,
 * which compiles it then); calls to functions that no input defines yet are
 * allowed there. cuLinkComplete merges the inputs into one PTX module (the
 * highest .version, .target the link's target, the bodies in order, so that
 * an .extern .func meets the .visible .func another input defines) and
 * parses it whole. Known differences from the real driver:
 *   - the "cubin" cuLinkComplete returns is that PTX text (NUL-terminated,
 *     its size counting the NUL), not an ELF: the fake's cuModuleLoadData
 *     loads it; a real driver would JIT-compile it. It stays the state's
 *     until cuLinkDestroy, as the driver's cubin;
 *   - inputs other than PTX (cubin, fatbin, object, library, NVVM) are
 *     refused with CUDA_ERROR_NOT_SUPPORTED and a misuse: link them with
 *     nvJitLink (cuscope/link.h), which runs on the CPU;
 *   - an unresolved function answers cuLinkComplete CUDA_ERROR_UNKNOWN with
 *     "error   : Undefined reference to 'f'" in the error log: nvJitLink
 *     13.0's answer; the driver's code is not yet checked on a GPU
 *     (gpu-link prints it); two inputs defining one function answer
 *     CUDA_ERROR_INVALID_PTX (the parser's duplicate), nvlink's is unchecked;
 *   - a completion with no input answers CUDA_ERROR_INVALID_VALUE (unchecked);
 *   - an input added after cuLinkComplete is CUDA_ERROR_INVALID_VALUE and a
 *     misuse (unchecked);
 *   - options: the log buffers and CU_JIT_TARGET are honoured (a target
 *     outside 30..1000 is CUDA_ERROR_INVALID_VALUE, an unknown option too);
 *     the rest (optimization, debug, line info, the per-input options) is
 *     accepted and does nothing; the output options
 *     (CU_JIT_*_LOG_BUFFER_SIZE_BYTES: the bytes each log holds, without its
 *     NUL; CU_JIT_WALL_TIME) are written back into cuLinkCreate's
 *     optionValues after every add and completion, as the driver documents
 *     ("optionValues must remain valid for the life of the CUlinkState if
 *     output options are used"): an array that no longer holds its log
 *     buffers by then (one that went out of scope) is a misuse; an input
 *     whose .target is above the link's is not refused;
 *   - context rules: cuLinkCreate needs a current context; the other calls
 *     find the context through the state and need none current (as the
 *     events' calls; the H200's cells, test/rules/expected.txt). A state dies with its context; a
 *     destroyed one is misuse and CUDA_ERROR_INVALID_HANDLE (or
 *     CUDA_ERROR_CONTEXT_IS_DESTROYED, destroyed with its context). Live
 *     states are counted as CUS_FAKE_HANDLE_LINK_STATE. */

/* --- graphs built by hand (cuGraphCreate, cuGraphAdd*Node,
 * cuGraphAddDependencies, cuGraphGetRootNodes, cuGraphExec*NodeSetParams,
 * cuGraphNodeSetEnabled) ------------------------------------------------------
 * Nodes are kept in an order in which each follows its dependencies (an edge
 * added against it re-sorts them); a replay queues them in that order on the
 * stream, kernels as launches (host twins run), child graphs in place, event
 * nodes as the record or wait the stream call would make, disabled nodes not
 * at all. A graph and its executable graphs share their nodes until one of
 * them changes (copy on write), so an update changes only its executable
 * graph. A node of another graph, NULL parameters, a kernel node's bad
 * function or configuration are refused as the driver refuses them (a node
 * unknown or of a destroyed graph is also a misuse). Known differences, none
 * checked on a GPU yet (test/rules/expected.txt holds the fake's cells):
 *   - copy and memset nodes are 1-D only (CUDA_ERROR_NOT_SUPPORTED for
 *     arrays, 2-D and 3-D);
 *   - a repeated dependency, an edge that exists, a cycle, and a child graph
 *     with memory nodes answer CUDA_ERROR_INVALID_VALUE;
 *   - adding to the graph of a capture in progress answers
 *     CUDA_ERROR_ILLEGAL_STATE (the driver allows it, with
 *     cuStreamUpdateCaptureDependencies, which the fake lacks);
 *   - kernel node attributes (cuGraphKernelNode{Set,Get,Copy}Attribute*):
 *     those cuda.h calls valid for graph nodes, checked as cuLaunchKernelEx
 *     checks them and with the node's shape at once (a cluster that does not
 *     divide the grid: CUDA_ERROR_INVALID_CLUSTER_SIZE at the set); the
 *     launch-only ones CUDA_ERROR_INVALID_VALUE, device-updatable nodes
 *     CUDA_ERROR_NOT_SUPPORTED; kept when the node's parameters change (an
 *     H100 kept a node's cluster through cuGraphExecKernelNodeSetParams,
 *     driver 580), and in each replay's launch record
 *     (cus_fake_launch.attributes);
 *   - edge data (cuGraphAddDependencies_v2, 12.3) by cuda.h's rules for
 *     CUgraphEdgeData: a programmatic edge joins two kernel nodes from the
 *     programmatic or launch-order port, a non-default port leaves a kernel
 *     node only, to_port and the reserved bytes are zero (a breach:
 *     CUDA_ERROR_INVALID_VALUE, our guess of the code); a list with an edge
 *     of other data, asked for without edgeData, is CUDA_ERROR_LOSSY_QUERY
 *     (a count alone is not); clones keep the data, cuGraphExecUpdate
 *     compares it; a replay runs the kernels one after the other anyway
 *     (stricter than the overlap a programmatic edge allows). A captured
 *     launch with CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
 *     gets programmatic edges from the kernel nodes it follows (the CUDA
 *     Programming Guide's PDL in captured graphs; not yet checked on a
 *     GPU: gpu-pdl prints what the driver made), default ones from others;
 *     conditional and cuGraphAddNode_v2 dependencies take default edges
 *     only (CUDA_ERROR_NOT_SUPPORTED otherwise);
 *   - cuGraphExecUpdate does not compare the nodes inside child graphs;
 *   - cuGraphChildGraphNodeGetGraph answers one handle per node, the node's
 *     own copy of the child, changed in place (executable graphs and clones
 *     that shared it get their own copy at the first change); the graph
 *     refuses instantiation, destruction (a misuse) and memory nodes, as a
 *     conditional node's body does, and dies with its node. */

/* The primary context's retain count on a device, and its handle (stable for
 * the fake's lifetime, as with the real driver). */
CUS_API int cus_fake_primary_retain_count(int ordinal);

/* Green contexts (driver 12.4+ entry points: cuDeviceGetDevResource,
 * cuCtxGetDevResource, cuDevSmResourceSplitByCount, cuDevResourceGenerateDesc,
 * cuGreenCtxCreate, cuGreenCtxDestroy, cuCtxFromGreenCtx; 12.5:
 * cuGreenCtxStreamCreate). A device's SM resource is its
 * CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT; a split makes groups of one
 * size, min_count rounded up by compute capability (cuda.h's table: 9.0+ at
 * least 8, a multiple of 8; 8.x at least 4, a multiple of 2; before, at least
 * 2, a multiple of 2), as many as fit and as asked, the rest in the remaining
 * group; a split's outputs cannot be split again, and several resources make
 * one descriptor only from one split. A green context retains its device's
 * primary context (cus_fake_primary_retain_count) until cuGreenCtxDestroy,
 * is counted as CUS_FAKE_HANDLE_GREEN_CONTEXT (its CUcontext not apart), and
 * its CUcontext is a context of the stack emulation that owns what is made in
 * it; cuCtxDestroy refuses it (CUDA_ERROR_INVALID_CONTEXT), and its
 * destruction pops it from no thread's stack. Guesses, not probed on a GPU
 * (lib/fake/fake_green.c marks each): the error codes the documentation does
 * not name, the device resource's co-scheduling alignment (2), what
 * CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING lowers the rules to (at
 * least 2, a multiple of 2), and the two answers about cuCtxDestroy and the
 * stack above. */

/* The SMs a context has: a green context's (cuCtxFromGreenCtx), else its
 * device's CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT; 0 for an unknown handle.
 * For a kernel's host implementation (it takes the fake's lock, and makes no
 * driver call): what a kernel reading %smid would see at most. */
CUS_API unsigned int cus_fake_context_sm_count(CUcontext ctx);

/* The depth of the calling thread's emulated driver stack. */
CUS_API int cus_fake_thread_stack_depth(void);
/* The entry at index i (0 = bottom) of the calling thread's emulated driver
 * stack; NULL out of range. */
CUS_API CUcontext cus_fake_thread_stack_at(int i);

/* --- streams, events and host functions ------------------------------------
 * Work queued on a stream (copies, memsets, host functions, event records,
 * waits on events, stream-ordered allocations and frees, prefetches) is never
 * executed when it is queued: it runs, in stream order, when the host waits
 * for it:
 *   cuStreamSynchronize(s)   runs s to the end of what was queued;
 *   cuEventSynchronize(e)    runs e's stream up to the record;
 *   cuCtxSynchronize         runs every stream of the context; cuCtxDestroy and
 *                            the last cuDevicePrimaryCtxRelease too, before the
 *                            context's streams, events and memory are destroyed;
 *   synchronous copies and memsets (cuMemcpyHtoD, cuMemsetD8, ...) run on the
 *                            default stream, so after the work of the default
 *                            stream and of the context's blocking streams;
 *   cuMemFree, cuMemFreeHost and cuMemHostUnregister synchronize the context
 *                            that owns the memory first (not for cuMemAllocAsync
 *                            blocks, as documented for the driver);
 *   cus_fake_run_streams()   runs everything.
 * Running an operation first runs what it waits for: the event's stream up to
 * the record for cuStreamWaitEvent, and the legacy default stream's rules (an
 * operation on the default stream waits for all earlier work of the context's
 * blocking streams, and an operation on a blocking stream for all earlier work
 * of the default stream; CU_STREAM_NON_BLOCKING streams take no part).
 * CU_STREAM_PER_THREAD is the calling thread's per-thread default stream in
 * the current context: a blocking stream of its own, made on first use, as
 * with the driver (and so it captures; the legacy stream cannot).
 *
 * cuStreamQuery(s) and cuEventQuery(e) answer CUDA_SUCCESS when the work they
 * look at (s's queue; e's stream up to the record) had completed when they
 * were called, and CUDA_ERROR_NOT_READY otherwise; what they run is set by
 * the query mode below. cuEventElapsedTime never runs anything.
 *
 * Host functions (cuLaunchHostFunc) run on the fake's driver thread, one
 * thread the fake starts on first need and joins at cus_fake_install() and
 * cus_fake_uninstall(); the thread that runs the queue waits for each. Every
 * driver entry point called from a host function (even the uncounted ones and
 * cus_fake_get_proc_address) fails with CUDA_ERROR_NOT_PERMITTED and counts a
 * misuse "CUDA call inside a host function (cuXxx)".
 *
 * Event timing: cuEventElapsedTime answers 0.001 ms per memory operation and
 * host function executed (on any stream) between the executions of the two
 * records; negative when the end record executed first. */

/* How cuStreamQuery and cuEventQuery make progress (cus_fake_set_query_mode). */
typedef enum cus_fake_query_mode {
    /* The default: a query that answers CUDA_ERROR_NOT_READY then runs one
     * operation of the stream it looks at (with what that operation waits
     * for), as if the device made progress; a polling loop ends after
     * pending + 1 queries. A query never blocks, though: it skips work that
     * another thread is executing, and a host function it reaches is handed
     * to the driver thread without waiting, the stream staying not ready
     * until the function returns (so with host functions the count of
     * polls is no longer exact). */
    CUS_FAKE_QUERY_STEP = 0,
    /* Queries run nothing: only synchronization makes progress. */
    CUS_FAKE_QUERY_NONE,
    /* Queries run the work they look at to completion first, waiting for
     * whatever it waits for, and so answer CUDA_SUCCESS (an infinitely fast
     * device; a host function that waits for the querying thread then
     * deadlocks). */
    CUS_FAKE_QUERY_ALL,
} cus_fake_query_mode;

/* Sets how cuStreamQuery and cuEventQuery make progress; install resets it
 * to CUS_FAKE_QUERY_STEP. */
CUS_API void cus_fake_set_query_mode(cus_fake_query_mode mode);

/* Synchronous memsets (cuMemsetD8, cuMemsetD16, cuMemsetD32) of
 * device memory. The driver's return before the fill is done (they are
 * fully synchronous for pinned host and managed memory only): work that a
 * non-blocking stream queued after one may run before it, and a fill that
 * a test believes done may still be pending when its memory is unmapped.
 * By default the fake runs such a memset at the call, which hides those
 * races; with deferred true it leaves it queued on the default stream, to
 * run when the host next waits for that stream (a synchronous copy or
 * memset, a synchronization), after the non-blocking streams' work when
 * that is waited for first. An H200 showed the race (a green context's
 * kernel raced the fills of its buffers: test_gpu_green.c). Install resets
 * it to false. Thread-safe. */
CUS_API void cus_fake_set_sync_memsets_deferred(bool deferred);

/* Operations queued on a stream and not yet completed (NULL and
 * CU_STREAM_LEGACY: the current context's legacy default stream;
 * CU_STREAM_PER_THREAD: the calling thread's per-thread one); 0 for an
 * unknown handle or a per-thread stream not used yet. A destroyed stream still counts the work
 * it has left, which still runs. */
CUS_API size_t cus_fake_stream_pending(CUstream stream);

/* Runs every queued operation of every stream to completion, as if the device
 * caught up. Does nothing (and counts a misuse) inside a host function. */
CUS_API void cus_fake_run_streams(void);

/* Host functions that have run to completion since install. */
CUS_API unsigned long cus_fake_host_functions_run(void);

/* Whether the calling thread is the fake's driver thread, the one that runs
 * host functions. */
CUS_API bool cus_fake_on_driver_thread(void);

/* --- memory ----------------------------------------------------------------
 * Device memory, pinned host memory and managed memory are host blocks whose
 * addresses are the CUdeviceptr values, so a copy is a memmove. Addresses are
 * never reused before the next install: a freed block stays reserved, and any
 * later use of it is reported as use after free. Every device-side range of a
 * copy or memset must lie inside one live allocation (or registered range);
 * host-side ranges are checked only when they fall in pinned, managed or
 * registered memory. cuMemGetInfo reports free = total_memory minus the
 * device memory in use, and allocations beyond it fail with
 * CUDA_ERROR_OUT_OF_MEMORY. Managed and pinned memory are not counted. */

/* Bytes of device memory (cuMemAlloc, and cuMemAllocAsync until its free
 * executes) live on a device; 0 for an unknown ordinal. */
CUS_API size_t cus_fake_device_bytes_in_use(int ordinal);

/* --- memory pools (lib/fake/fake_pool.c) ------------------------------------
 * Each device has a default pool (cuDeviceGetDefaultMemPool), which cannot
 * be destroyed (CUDA_ERROR_INVALID_VALUE) and is its current pool until
 * cuDeviceSetMemPool names another of the device (a pool of another device,
 * or an imported one: CUDA_ERROR_INVALID_VALUE); destroying the current pool
 * makes the default current again. cuMemAllocAsync allocates from the
 * stream's device's current pool, cuMemAllocFromPoolAsync from the one given
 * (of any device; an imported pool allocates nothing:
 * CUDA_ERROR_INVALID_VALUE). A pool counts, in bytes: used (allocations from
 * the call until their free executes or their context dies), reserved (at
 * least used: an allocation reuses reserved bytes no allocation holds, and
 * grows reserved by the rest; the driver reserves in larger chunks, so on a
 * GPU reserved only bounds used), and each one's high-water mark, which
 * cuMemPoolSetAttribute resets to the current value when given 0 (another
 * value is CUDA_ERROR_INVALID_VALUE, as are the current values and unknown
 * attributes). A free that executes gives back the reserved bytes above
 * max(used, the release threshold): the driver does it at the next
 * synchronization, and the fake's frees execute only when the host
 * synchronizes or queries. cuMemPoolTrimTo(n) gives back down to max(used, n).
 * An allocation beyond the pool's maxSize is CUDA_ERROR_OUT_OF_MEMORY.
 * cuMemPoolCreate takes pinned device memory with no handle type or
 * CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR (host locations, fabric and
 * Win32 handles and usage flags are not emulated: CUDA_ERROR_NOT_SUPPORTED);
 * pools need no current context. Access (cuMemPoolSetAccess, validated as a
 * whole before any entry applies, as the driver does): the pool's own device
 * always reads and writes (READWRITE there succeeds, anything else is
 * CUDA_ERROR_INVALID_DEVICE), another device starts with none; an unknown
 * device is CUDA_ERROR_INVALID_DEVICE.
 *
 * IPC within one process: cuMemPoolExportToShareableHandle (a pool created
 * with the POSIX descriptor type only, else CUDA_ERROR_INVALID_VALUE) gives a
 * real descriptor (a memfd) that the caller closes; importing it, or a dup
 * of it (one passed over a socket), makes an imported pool, a new handle;
 * cuMemPoolExportPointer's data imported into it (cuMemPoolImportPointer)
 * maps the same memory at another address, as another process would see
 * it, freed with cuMemFree or cuMemFreeAsync, and not counted again in the
 * device's bytes in use. That the importers free first, as the driver
 * requires, is not checked (a release that failed must not make the others
 * fail): the import's mapping keeps the memory.
 * Unverified on a GPU: whether the driver lets a process import its own
 * pool (the fake does; test/test_gpu_pool_ipc.c prints the driver's answer),
 * and that imported pools ignore trim and release threshold (documented). */

/* --- modules and launches --------------------------------------------------
 * cuModuleLoadData and cuModuleLoadDataEx accept PTX text, cubins (ELF) and
 * fatbins (compressed ones where the fake was built with liblz4 and
 * libzstd), and parse them: kernel names, parameter layouts
 * (cuFuncGetParamInfo answers the offsets and sizes the real driver does),
 * `__device__` and `__constant__` globals with their initial values (device
 * memory that cuModuleGetGlobal returns: bounds-checked like allocations, but
 * not counted as CUS_FAKE_HANDLE_DEVICE_MEMORY nor in the bytes in use, and
 * gone with their module), .maxntid, .reqntid and static shared memory.
 * A malformed image fails as with the driver (CUDA_ERROR_INVALID_IMAGE,
 * CUDA_ERROR_INVALID_PTX with a ptxas-style line in the JIT error log,
 * CUDA_ERROR_NO_BINARY_FOR_GPU). cuModuleLoad reads a file. A cubin runs only
 * on a device of its major version and at least its minor (sm_80 SASS is
 * CUDA_ERROR_NO_BINARY_FOR_GPU on the default 9.0 device); PTX is
 * JIT-compiled for the device (or CU_JIT_TARGET) when its .target is not
 * newer, and its .version must not be newer than the configured
 * driver_version supports (CUDA_ERROR_UNSUPPORTED_PTX_VERSION); of a fatbin
 * the entry the driver takes is loaded: the newest SASS that runs on the
 * device, else the newest PTX not above it, else
 * CUDA_ERROR_NO_BINARY_FOR_GPU. The kernels of a relocatable cubin (nvcc
 * -rdc=true) are listed, but cuModuleGetFunction fails, as with the driver,
 * for those whose code needs linking. The JIT log size options are
 * in/out: on return they hold the bytes written, without the NUL.
 * cuModuleUnload synchronizes the module's context first (its queued
 * launches run), as the driver does; destroying a context, or the last
 * release of a primary context, unloads its modules.
 *
 * cuLaunchKernel and cuLaunchKernelEx validate the configuration (a grid or
 * block of 0, more than 1024 threads per block or more than the function
 * allows, a block other than its .reqntid, dynamic shared memory above the
 * function's maximum, clusters that do not divide the grid, a cooperative
 * grid larger than the device holds at once), copy the arguments by the
 * kernel's layout, record the launch, and queue it on the stream. A function
 * carries its context: the launch runs there whatever is current (another
 * context, or none, as on the H200), NULL, CU_STREAM_LEGACY and
 * CU_STREAM_PER_THREAD are that context's default stream, and a stream of
 * another context is CUDA_ERROR_INVALID_HANDLE. When it
 * executes, in stream order, the host implementation registered for the
 * kernel's name (if any) runs on the thread that executes the queue, without
 * the fake's lock, with args[i] pointing at the copied argument i: device
 * pointers are host addresses in the fake, so it can read and write buffers
 * directly. Like a host function, it must not call the driver (every entry
 * point it calls fails with CUDA_ERROR_NOT_PERMITTED and counts a misuse).
 * A launch counts as one operation for cuEventElapsedTime. Its return value
 * is the kernel's fate: CUDA_SUCCESS, or a sticky error
 * (cus_status_is_sticky: CUDA_ERROR_ILLEGAL_ADDRESS, ...), which poisons the
 * context as a faulting kernel does: the synchronization that ran the kernel
 * returns the error, and from then on so does every call that uses the
 * context (its current-context calls, and calls on its streams, events,
 * memory, modules and functions), until the context is destroyed or its
 * primary context reset by its last release. That includes the releases,
 * as on a real GPU (an H200, driver 580): cuMemFree, cuMemFreeAsync,
 * cuMemFreeHost, cuMemHostUnregister, cuStreamDestroy, cuEventDestroy and
 * cuModuleUnload of the context's objects answer the error and release
 * nothing, and so do cuCtxCreate and cuDevicePrimaryCtxRetain while the
 * poisoned context is current. After a fault only destroying the context
 * (cuCtxDestroy, which still works), or resetting a primary context by its
 * last cuDevicePrimaryCtxRelease, releases what it has: its streams, events,
 * memory, registrations, modules and executable graphs go with it. The
 * synchronizations run the queue, then return the error. A few calls still
 * answer, as the driver's do: cuCtxGetDevice (both variants), cuCtxGetFlags,
 * cuCtxGetApiVersion, cuPointerGetAttribute, and the graph calls that read or
 * change a graph without running it (cuGraphGetNodes, cuGraphNodeGetType,
 * cuGraphExecUpdate, cuGraphDestroy, cuGraphExecDestroy). The work queued in
 * the context after the fault (copies, memsets, launches, prefetches) is
 * skipped; host functions, event records and stream-ordered allocations and
 * frees queued before still execute. Any other error returned by a host
 * implementation is a misuse, and ignored. */

/* The driver's limit is 32764 bytes from 12.1; the fake keeps 4 KiB, and a
 * launch of a kernel with more parameter bytes fails with
 * CUDA_ERROR_INVALID_VALUE. */
#define CUS_FAKE_MAX_LAUNCH_ARG_BYTES 4096

/* The launch attributes a cuLaunchKernelEx was given
 * (cus_fake_launch.attributes); each zero when not given. The fake checks
 * each as the driver does (CUDA_ERROR_INVALID_VALUE for a value out of its
 * range) and, but for the programmatic event, which it records on the
 * launch's stream after the kernel (a kernel that completes has triggered),
 * lets none change how the kernel runs: kernels run one after another, so a
 * twin of a kernel that calls cudaGridDependencySynchronize() needs nothing. */
typedef struct cus_fake_launch_attributes {
    bool programmatic_serialization; /* CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION */
    CUevent programmatic_event;      /* CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT; NULL: none */
    int programmatic_event_flags;    /* its flags */
    bool programmatic_event_at_block_start; /* its triggerAtBlockStart */
    bool has_priority;               /* CU_LAUNCH_ATTRIBUTE_PRIORITY was given: */
    int priority;                    /*   its value, as given */
    int cluster_policy;              /* CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE */
    unsigned int preferred_cluster[3]; /* CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION */
    bool has_access_policy;          /* CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW was given: */
    CUaccessPolicyWindow access_policy; /*   its value */
    bool has_mem_sync_domain;        /* CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN was given: */
    int mem_sync_domain;             /*   its value */
    bool has_mem_sync_domain_map;    /* CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP was given: */
    CUlaunchMemSyncDomainMap mem_sync_domain_map; /* its value */
} cus_fake_launch_attributes;

/* A launch as the fake saw it: what a host implementation of a kernel
 * receives (cus_fake_kernel_fn), and what the launch log keeps. */
typedef struct cus_fake_launch {
    const char *function;     /* the kernel's name; valid until the next install */
    CUfunction handle;        /* the kernel launched */
    CUcontext context;        /* the context it was launched in */
    CUstream stream;          /* as passed (NULL, CU_STREAM_LEGACY, ...) */
    unsigned int grid[3], block[3], cluster[3]; /* cluster: zeros unless cuLaunchKernelEx set it */
    unsigned int shared_bytes; /* dynamic shared memory per block */
    bool cooperative;         /* a cooperative launch */
    bool extended;            /* launched with cuLaunchKernelEx */
    /* A launch on a capturing stream: recorded into the graph as a kernel
     * node, not queued (its replays are recorded again, with graph_exec). */
    bool captured;
    /* A kernel node replayed by a cuGraphLaunch of this executable graph
     * (stream: the launch's stream, as passed); NULL for a stream launch. */
    CUgraphExec graph_exec;
    size_t nargs;             /* the kernel's parameter count */
    size_t arg_bytes;         /* the packed size (the end of the last parameter) */
    unsigned char args[CUS_FAKE_MAX_LAUNCH_ARG_BYTES]; /* at the kernel's offsets; zeros past arg_bytes */
    cus_fake_launch_attributes attributes; /* cuLaunchKernelEx's attributes; zeros: none */
} cus_fake_launch;

/* Launches recorded since install: every successful cuLaunchKernel* (a
 * captured one too, marked `captured`), and each kernel node of every
 * successful cuGraphLaunch (marked with its graph_exec), in call order. */
CUS_API unsigned long cus_fake_launch_count(void);
/* A copy of the i-th recorded launch (0-based, since install; the last 256 are
 * kept): CUS_ERROR_OUT_OF_RANGE for one not kept or not made,
 * CUS_ERROR_INVALID_ARGUMENT for a NULL out. */
CUS_API cus_status cus_fake_launch_at(unsigned long i, cus_fake_launch *out);
/* The last one: CUS_ERROR_OUT_OF_RANGE if there was none. */
CUS_API cus_status cus_fake_last_launch(cus_fake_launch *out);

/* A host implementation of a kernel: args[i] points at the copy of argument i
 * (launch->args + its offset); both are valid while it runs. */
typedef CUresult (*cus_fake_kernel_fn)(const cus_fake_launch *launch, void **args, void *user);

/* Registers fn as the host implementation of the kernels called name (in any
 * module, loaded before or after: the name is looked up when a launch
 * executes); NULL removes it (nothing to remove is fine). Registrations last
 * until the next install. A kernel without one does nothing when it runs
 * (counted: cus_fake_kernels_without_twin; or a failure: strict_kernels). Up
 * to 64 names: CUS_ERROR_INVALID_ARGUMENT beyond, and for a NULL or empty
 * name. */
CUS_API cus_status cus_fake_register_kernel(const char *name, cus_fake_kernel_fn fn, void *user);

/* The kernel runs since install that found no host implementation (each
 * launch, and each kernel node of each replay, that executed), and in *last
 * (may be NULL) the name of the last such kernel (valid until the next such
 * run or install; NULL when there was none). A test that expects every
 * kernel to compute its results asserts 0, or installs with strict_kernels. */
CUS_API unsigned long cus_fake_kernels_without_twin(const char **last);

/* --- texture fetches for host twins ------------------------------------------ */

/* What a kernel's `tex2D<float4>(tex, x, y)` returns, for a twin to call (the
 * one fake function a twin may call while it runs): the texture's own
 * coordinates (normalized to [0, 1) with CU_TRSF_NORMALIZED_COORDINATES, else
 * texels), address modes (wrap and mirror with normalized coordinates only,
 * as on the device: clamp otherwise; border gives the border colour), point
 * or linear filtering (with the device's 8-bit fraction of the weights:
 * 1/256 steps), and read mode (8- and 16-bit integer formats are read as
 * normalized floats unless CU_TRSF_READ_AS_INTEGER; 32-bit ones as their
 * value; half floats as floats). An array, a mipmapped array (its level 0),
 * or a linear (y ignored) or pitch-2D buffer. Missing channels read as 0
 * (alpha as 1). An unknown or destroyed texture, or one over freed memory,
 * is a misuse and reads zeros; false then. */
CUS_API bool cus_fake_tex2d(CUtexObject tex, float x, float y, float out[4]);
/* Its first channel: `tex2D<float>(tex, x, y)`. */
CUS_API float cus_fake_tex2d_float(CUtexObject tex, float x, float y);

/* --- tensor maps for host twins -----------------------------------------------
 * The fake's cuTensorMapEncodeTiled and cuTensorMapEncodeIm2col check the
 * documented rules (CUDA_ERROR_INVALID_VALUE for a broken one, as the driver
 * documents) and write into the opaque CUtensorMap a layout of the fake's
 * own (lib/fake/fake_tensor_map.c), which no GPU reads: a twin of a TMA
 * kernel decodes it with cus_fake_tensor_map_decode. */

/* A tensor map as the fake encoded it. */
typedef struct cus_fake_tensor_map {
    bool im2col;                   /* cuTensorMapEncodeIm2col, else tiled */
    CUtensorMapDataType data_type; /* the encoded data type */
    unsigned int rank;             /* 1..5 */
    CUdeviceptr address;           /* the global address (the replaced one after cuTensorMapReplaceAddress) */
    cuuint64_t global_dim[5];      /* elements per dimension (rank used) */
    cuuint64_t global_strides[4];  /* bytes, of dimensions 1..rank-1 */
    cuuint32_t box_dim[5];         /* tiled: the box */
    cuuint32_t element_strides[5]; /* traversal steps */
    CUtensorMapInterleave interleave;    /* as encoded */
    CUtensorMapSwizzle swizzle;          /* as encoded */
    CUtensorMapL2promotion l2_promotion; /* as encoded */
    CUtensorMapFloatOOBfill oob_fill;    /* as encoded */
    int pixel_box_lower[3];        /* im2col: the corners (rank - 2 used) */
    int pixel_box_upper[3];        /* im2col: see pixel_box_lower */
    cuuint32_t channels_per_pixel; /* im2col */
    cuuint32_t pixels_per_column;  /* im2col */
} cus_fake_tensor_map;

/* Decodes a CUtensorMap the fake encoded into *out: true; false (and *out
 * untouched) for NULL arguments or 128 bytes that no fake encoding wrote
 * (a zeroed map, a real driver's). A twin may call it while it runs: it
 * takes no lock and makes no driver call. */
CUS_API bool cus_fake_tensor_map_decode(const CUtensorMap *map, cus_fake_tensor_map *out);

/* --- stream capture and graphs ---------------------------------------------
 * cuStreamBeginCapture makes a stream capture: what would be queued on it
 * (kernel launches, async copies and memsets, host functions, stream-ordered
 * allocations and frees) becomes nodes of a graph instead, and nothing runs.
 * cuEventRecord on a capturing stream and cuStreamWaitEvent of that event
 * are edges, not nodes, as with the driver: a stream that waits on such an
 * event joins the capture (a fork) and the origin waiting on an event
 * recorded on the joined stream takes its work back (a join).
 * cuStreamEndCapture returns the graph; a fork that was never joined is
 * CUDA_ERROR_STREAM_CAPTURE_UNJOINED. Nodes are kept in capture order, in
 * which each comes after what it depends on; cuGraphGetNodes lists them in it,
 * and cuGraphNodeGetType answers their types. cuStreamGetCaptureInfo (every
 * variant) writes the status, and the id, graph and dependency set (edge
 * data: zeros) only for an active capture; ids are unique in the process.
 *
 * The capture rules (CUDA_ERROR_* below; "invalidates": the capture goes on,
 * every later operation on its streams answers
 * CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, and cuStreamEndCapture ends it with
 * that error and a NULL graph):
 *   - the legacy stream (NULL, CU_STREAM_LEGACY) cannot capture: _UNSUPPORTED;
 *   - beginning on a stream that captures (or was joined to a capture):
 *     CUDA_ERROR_ILLEGAL_STATE; ending one that does not: _ILLEGAL_STATE; on a
 *     joined stream rather than the origin: _UNMATCHED (invalidates); from
 *     another thread than the one that began a GLOBAL or THREAD_LOCAL
 *     capture: _WRONG_THREAD (and it still captures);
 *   - cuStreamSynchronize or cuStreamQuery of a capturing stream:
 *     _STREAM_CAPTURE_UNSUPPORTED, and invalidates;
 *   - work on (or a synchronization of) the legacy stream while a blocking
 *     stream of its context captures: _STREAM_CAPTURE_IMPLICIT, and
 *     invalidates (cuStreamIsCapturing and cuStreamGetCaptureInfo of it answer
 *     _IMPLICIT without invalidating, as documented);
 *   - "potentially unsafe" calls: cuMemAlloc, cuMemFree, cuMemAllocHost,
 *     cuMemHostAlloc, cuMemFreeHost, cuMemAllocManaged, cuMemHostRegister,
 *     cuMemHostUnregister, the synchronous copies and memsets (cuMemcpy*,
 *     cuMemcpyPeer, cuMemsetD*), cuCtxSynchronize and cuModuleUnload answer
 *     _STREAM_CAPTURE_UNSUPPORTED, and invalidate the captures that forbid
 *     them, by the calling thread's mode (cuThreadExchangeStreamCaptureMode,
 *     GLOBAL by default): in GLOBAL mode, its own captures not begun RELAXED
 *     and every other thread's GLOBAL capture forbid them; in THREAD_LOCAL
 *     mode only its own; in RELAXED mode none. An invalidated capture forbids
 *     nothing more (cleanup code can free);
 *   - waiting, on a capturing stream, for an event recorded outside the
 *     capture: _STREAM_CAPTURE_ISOLATION (invalidates); for an event of
 *     another capture: _STREAM_CAPTURE_MERGE (invalidates the waiting one);
 *   - an event whose latest record was captured answers
 *     CUDA_ERROR_CAPTURED_EVENT to cuEventQuery, cuEventSynchronize,
 *     cuEventElapsedTime, and to cuStreamWaitEvent once its capture is over,
 *     until it is recorded again outside capture;
 *   - cuStreamDestroy of a capturing stream ends the capture and destroys its
 *     graph (the origin), or invalidates it (a joined stream, which leaves).
 *
 * Graphs and executable graphs are tracked handles (CUS_FAKE_HANDLE_GRAPH,
 * _GRAPH_EXEC): the capture's graph exists from cuStreamBeginCapture (it is
 * what cuStreamGetCaptureInfo_v2 returns) and is destroyed by a failed end.
 * cuGraphDestroy of the graph of a capture in progress is
 * CUDA_ERROR_ILLEGAL_STATE, as are instantiating it and updating from it.
 * NULL handles are CUDA_ERROR_INVALID_VALUE. Destroying a graph leaves
 * its executable graphs working: instantiation snapshots the nodes. Unknown
 * and destroyed handles are misuse and CUDA_ERROR_INVALID_VALUE. A graph
 * belongs to no context, as on the H200: it outlives the death of the context
 * it was captured in (a live handle, to destroy), and cuGraphDestroy,
 * cuGraphGetNodes and cuGraphNodeGetType need no current context and answer
 * whatever that context's state, poisoned or destroyed. A context's death
 * destroys its executable graphs and its captures in progress with their
 * graphs (a later use is misuse, "used after its context was destroyed" or
 * "capture was discarded with its context"). A graph that outlived its
 * context keeps its nodes, but what they referred to died with it: its kernel
 * nodes' functions and its graph allocations (memory nodes), so instantiating
 * such a graph is misuse and CUDA_ERROR_INVALID_VALUE; one of copies,
 * memsets and host functions only still instantiates, in the current context
 * (its copies of the dead context's memory are reported when they run). On a
 * poisoned context executable graphs follow the rules of the modules above
 * (cuGraphLaunch and cuGraphUpload answer the sticky error, cuGraphExecUpdate
 * and cuGraphExecDestroy still work), and cuStreamEndCapture ends the
 * capture and returns the sticky error.
 *
 * cuGraphLaunch queues the nodes, in order, as ordinary operations on the
 * stream: they run when the host waits for it, like any other work (host
 * kernels through their registered implementations, copies and memsets with
 * the execution checks, host functions on the driver thread), at every
 * launch; each kernel node is recorded as a launch (graph_exec set). So a
 * replay whose memory was freed since the capture is reported as use after
 * free ("... by cuGraphLaunch queued on stream ...") and the operation
 * skipped; a kernel whose pointer-sized (8-byte) argument points into freed
 * memory is reported and skipped the same way, replayed or not. A launch of
 * an executable graph of another context than the stream's is
 * CUDA_ERROR_INVALID_VALUE. cuGraphUpload validates and queues nothing.
 * cuGraphInstantiateWithFlags needs a current context (CUDA_ERROR_INVALID_CONTEXT
 * with none, its sticky error for a poisoned one, as on the H200); the
 * executable graph belongs to the graph's context (while that lives). It
 * takes AUTO_FREE_ON_LAUNCH, DEVICE_LAUNCH (only
 * kernel, memcpy and memset nodes, at least one) and USE_NODE_PRIORITY (no
 * effect); UPLOAD is for cuGraphInstantiateWithParams (not emulated):
 * CUDA_ERROR_INVALID_VALUE.
 *
 * cuGraphExecUpdate (both variants) succeeds when the graph has as many nodes,
 * of the same types with the same dependencies, in capture order, and then
 * replaces every parameter; otherwise CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE
 * with the result (_TOPOLOGY_CHANGED with no error node for a different
 * count; _NODE_TYPE_CHANGED, _TOPOLOGY_CHANGED (and the mismatched
 * dependency as errorFromNode), _UNSUPPORTED_FUNCTION_CHANGE for a kernel of
 * another context, _PARAMETERS_CHANGED for a changed cooperative flag or a
 * copy or memset operand of another kind of memory or device, _NOT_SUPPORTED
 * for memory nodes of other allocations, with the graph's node as errorNode)
 * and the executable graph unchanged. Launches queued before keep what they
 * had.
 *
 * Graph memory: cuMemAllocAsync during capture makes an allocation node whose
 * address is fixed at the capture; the block counts as device memory (a
 * handle, and bytes in use) from then until no graph or executable graph holds
 * it and no launch left it allocated. Each launch's allocation node makes it
 * usable, in stream order, and a free node (cuMemFreeAsync during capture,
 * of a graph allocation only: others are CUDA_ERROR_INVALID_VALUE) unusable
 * again; use outside that is reported like use after free. One not freed in
 * its graph stays allocated after the launch, until cuMemFreeAsync or
 * cuMemFree (of it, after such a launch only: otherwise misuse), a graph
 * that frees it, or the next launch of an exec instantiated with
 * AUTO_FREE_ON_LAUNCH; relaunching without is CUDA_ERROR_INVALID_VALUE, and
 * a graph with memory nodes has one executable graph at a time
 * (CUDA_ERROR_INVALID_VALUE), as documented.
 * cuGraphAddMemAllocNode and cuGraphAddMemFreeNode make the same nodes by
 * hand (a free of an address no allocation node returned, a second free in
 * one graph, or, guessed, a free in the allocating graph not after its
 * allocation: CUDA_ERROR_INVALID_VALUE); cuDeviceGetGraphMemAttribute
 * counts as used the graph allocations whose allocation executed and that
 * are not freed since, as reserved at least that (kept after a free for the
 * next launch) until cuDeviceGraphMemTrim (lib/fake/fake_graph_memory.c
 * says which of these rules are documented and which guessed).
 *
 * Deviations from the driver: external event wait nodes
 * (CU_EVENT_WAIT_EXTERNAL during capture), child graph nodes (a cuGraphLaunch
 * or cuGraphUpload on a capturing stream) and prefetches during capture are
 * not emulated: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, and the capture
 * invalidated. Graphs come from stream capture only (no cuGraphCreate,
 * cuGraphAdd*Node, node parameter calls, cuStreamBeginCaptureToGraph or
 * cuEventRecordWithFlags). Replays run their nodes one after the other in
 * capture order on the launch stream (a valid order, with no concurrency
 * between branches). A failed (fault-injected) cuStreamEndCapture did none of
 * its work, so the stream still captures. No graph call but
 * cuGraphInstantiateWithFlags needs a current context, beyond the stream
 * arguments'. */

/* Captures begun and not yet ended, on any thread (a teardown check). */
CUS_API size_t cus_fake_active_captures(void);

/* --- legacy IPC -----------------------------------------------------------
 * The fake serves cuIpcGetMemHandle, cuIpcOpenMemHandle, cuIpcCloseMemHandle,
 * cuIpcGetEventHandle and cuIpcOpenEventHandle. Its handles encode the
 * exporting process's id, the install, and the exported allocation or event
 * (its id and address), and it applies the driver's rules:
 *  - a handle opened in the process that exported it: CUDA_ERROR_INVALID_CONTEXT;
 *  - bytes that are no handle of this fake's install, or the handle of memory
 *    (or an event) since freed: CUDA_ERROR_INVALID_VALUE;
 *  - only cuMemAlloc memory is exported (stream-ordered, managed and pinned
 *    host memory: CUDA_ERROR_INVALID_VALUE), and only events created with
 *    CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING (else
 *    CUDA_ERROR_INVALID_HANDLE);
 *  - opening a handle again in a context counts up, and returns the same
 *    pointer; each open needs its cuIpcCloseMemHandle, in that context;
 *    opening it in a second context of the same device:
 *    CUDA_ERROR_ALREADY_MAPPED.
 * The fake is one process: an opened mapping is the exported allocation
 * itself, at the same address (a real driver maps it elsewhere in the
 * importer's address space: code must not assume the two addresses are
 * equal), and an opened event is a new event of the importing context that
 * does not share the exporter's records. Two ways to test the importer's side:
 *  - in one process, pass the handle through cus_fake_ipc_*_as_foreign first;
 *  - in a fork() child, which the fake sees as another process (its state is
 *    the parent's copy, writes do not reach the parent): cuscope refuses to
 *    run there (CUS_ERROR_FORKED), but the fake's entry points, resolved
 *    with cus_fake_get_proc_address, answer as the driver would in a second
 *    process (the real driver does not work in a fork() child at all). */

/* Rewrites a handle this process exported so that the fake opens it as if
 * another process had exported it. CUS_ERROR_INVALID_ARGUMENT for NULL or
 * bytes that are no fake handle. Touches no state: thread-safe. */
CUS_API cus_status cus_fake_ipc_mem_handle_as_foreign(CUipcMemHandle *handle);
/* The same for an event's handle. */
CUS_API cus_status cus_fake_ipc_event_handle_as_foreign(CUipcEventHandle *handle);

/* --- faults ---------------------------------------------------------------
 * Injected failures return `result` from the entry point without doing any of
 * its work, as a failing real call would. Calls are counted from the moment the
 * fault is armed: n = 1 fails the next counted call. The error-string entry
 * points (cuGetErrorName, cuGetErrorString) are never counted or failed. */

/* Fails the n-th counted driver call from now; persistent: that one and every
 * one after it. Replaces any earlier global fault. */
CUS_API void cus_fake_fail_call(unsigned long n, CUresult result, bool persistent);

/* Fails the n-th call from now of one entry point (by base symbol name, e.g.
 * "cuCtxPushCurrent", or "cuCtxCreate_v4" for a versioned variant);
 * persistent: every later call too. Up to 16 at once. n = 0, an unknown name
 * and a 17th fault are CUS_ERROR_INVALID_ARGUMENT. */
CUS_API cus_status cus_fake_fail_entry(const char *name, unsigned long n, CUresult result,
                                       bool persistent);

/* Disarms every fault. */
CUS_API void cus_fake_clear_faults(void);

/* Puts the calling thread back where a fault sweep's next run needs it:
 * disarms every fault, pops what the run left pushed, and lets queued work
 * finish. A persistent fault fails the pops that guards and temporary
 * switches make on the way out (reported to the destroy handler), so a run
 * can end with its context still on the thread's stack, holding a reference
 * that keeps cuscope objects alive and makes the next cus_fake_install()
 * CUS_ERROR_BUSY. This pops every entry of the fake's stack above cuscope's
 * mirror (no call logged), then every entry of cuscope's own stack
 * (cus_context_pop, dropping its references), then runs the streams
 * (cus_fake_run_streams). Call it where the thread should hold nothing
 * pushed: between runs, after the scenario returned. *popped (may be NULL)
 * receives how many contexts were popped. CUS_ERROR_IN_HOST_FUNCTION inside
 * a host function; otherwise the first failed cus_context_pop's status (none
 * is expected with the faults gone). */
CUS_API cus_status cus_fake_reset(unsigned int *popped);

/* The number of injected failures that fired since install. */
CUS_API unsigned long cus_fake_faults_fired(void);

/* Makes the resolver report `symbol` as absent (CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND)
 * from the next load on: an older or stripped driver. Takes effect at the next
 * cus_fake_install()-then-load only if called in between: call it after
 * cus_fake_install() and before the first cuscope call. */
CUS_API cus_status cus_fake_hide_entry(const char *symbol);

/* --- conditional nodes ------------------------------------------------------ */

/* Sets the value of a conditional handle (cuscope/graph_conditional.h), as
 * the device's cudaGraphSetConditional(handle, value) does: for host twins
 * of kernels that call it (called from a twin, it takes effect for the
 * conditional nodes that run after the kernel, as on the device), and for
 * tests. The fake's replay reads the value when a conditional node runs: IF
 * runs its body when it is non-zero (its ELSE body when zero), WHILE runs
 * its body while it is non-zero (at most 1e6 passes: then misuse, and the
 * context poisoned with CUDA_ERROR_LAUNCH_FAILED), SWITCH runs body[value]. Each launch starts at
 * the handle's default when made with CU_GRAPH_COND_ASSIGN_DEFAULT.
 * Returns CUS_ERROR_INVALID_ARGUMENT for a handle the fake did not make
 * (since the last install), CUS_ERROR_NOT_SUPPORTED when built against a
 * toolkit older than 12.3. */
CUS_API cus_status cus_fake_graph_set_conditional(CUgraphConditionalHandle handle,
                                                  unsigned int value);

/* --- the call log ---------------------------------------------------------- */

/* Counted driver calls since install (every entry point but the
 * error-string ones), all threads. */
CUS_API unsigned long cus_fake_call_count(void);

/* Calls of one entry point since install (base symbol name). */
CUS_API unsigned long cus_fake_calls_of(const char *name);

/* The name of the i-th counted call since install (0-based), if still in the
 * log (the last 4096 are kept); NULL otherwise. */
CUS_API const char *cus_fake_call_name(unsigned long i);

#ifdef __cplusplus
}
#endif

#endif
