/* Internal declarations shared by the files of the fake driver. Nothing here
 * is API: the public surface is cuscope/fake.h, and the entry points reach
 * users only as function pointers handed out by the resolver.
 *
 * Locking: one process-wide mutex (fake_lock()) guards every piece of shared
 * state below. Functions named *_locked expect it held. The only unlocked
 * state is each thread's own emulated context stack (fake_context.c). */
#ifndef CUSCOPE_LIB_FAKE_INTERNAL_H
#define CUSCOPE_LIB_FAKE_INTERNAL_H

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
    X(cuStreamSynchronize, 2000, cuStreamSynchronize, 0)                              \
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
    X(cuGraphExecDestroy, 10000, cuGraphExecDestroy, 0)                             \
    X(cuGraphLaunch, 10000, cuGraphLaunch, 0)                                       \
    X(cuGraphUpload, 11010, cuGraphUpload, 0)                                       \
    X(cuGraphExecUpdate, 10020, cuGraphExecUpdate, 0)                               \
    X(cuGraphExecUpdate, 12000, cuGraphExecUpdate_v2, 0)                            \
    FAKE_ENTRIES_12020_(X)                                                            \
    FAKE_ENTRIES_12030_(X)                                                            \
    FAKE_ENTRIES_12040_(X)                                                            \
    FAKE_ENTRIES_12050_(X)                                                            \
    FAKE_ENTRIES_12080_(X)                                                            \
    FAKE_ENTRIES_13000_(X)

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
/* Changes a record's state and keeps the live counts. */
FAKE_HIDDEN void fake_handle_set_state_locked(fake_handle *h, fake_handle_state state);
/* Live records of kind (CUS_FAKE_HANDLE_ANY: all). */
FAKE_HIDDEN size_t fake_handle_live_locked(cus_fake_handle_kind kind);
/* The kind's noun for messages ("context"). */
FAKE_HIDDEN const char *fake_kind_noun(cus_fake_handle_kind kind);
/* Frees every record and empties the registry (install, uninstall). */
FAKE_HIDDEN void fake_registry_clear_locked(void);

/* --- devices (fake_device.c) ----------------------------------------------------- */

#define FAKE_DEVICE_NAME_MAX 256
/* Fixed sizes rather than CU_DEVICE_ATTRIBUTE_MAX / CU_LIMIT_MAX, which grow
 * with each toolkit: the fake answers the same with any headers. */
#define FAKE_ATTRIBUTE_SLOTS 256
#define FAKE_LIMIT_SLOTS 16

typedef struct fake_device {
    char name[FAKE_DEVICE_NAME_MAX];
    size_t total_memory;
    CUuuid uuid;
    int attributes[FAKE_ATTRIBUTE_SLOTS];
    /* The primary context: one record per device, created on the first
     * retain and kept (stable handle) until the next install. */
    struct CUctx_st *primary;
    int primary_retains;
} fake_device;

/* The configured devices (fake_device.c; applied by its reset hook). */
typedef struct fake_devices {
    bool no_devices;
    int count;
    fake_device devices[CUS_FAKE_MAX_DEVICES];
} fake_devices;

FAKE_HIDDEN extern fake_devices fake_dev;

/* The device for an ordinal, or NULL. */
static inline fake_device *fake_device_at_locked(CUdevice dev)
{
    return dev >= 0 && dev < fake_dev.count ? &fake_dev.devices[dev] : NULL;
}

/* --- contexts (fake_context.c) ----------------------------------------------------- */

/* The record behind a CUcontext (cuda.h only declares the struct). Both
 * cuCtxCreate contexts (kind CONTEXT) and primary contexts (kind
 * PRIMARY_CONTEXT) use it. */
struct CUctx_st {
    fake_handle h;
    CUdevice device;
    unsigned int flags;
    size_t limits[FAKE_LIMIT_SLOTS];
    CUfunc_cache cache_config;
    CUsharedconfig shared_mem_config;
    /* The legacy default stream (NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD),
     * made on first use and kept across a primary context's reactivations;
     * owned by fake_stream.c, not a registered handle. */
    struct CUstream_st *default_stream;
    /* CUDA_SUCCESS, or the sticky error (CUDA_ERROR_ILLEGAL_ADDRESS, ...) a
     * host kernel returned in this context: from then on the calls that use
     * the context answer it (fake_module.c sets it; fake_context_defaults
     * clears it, at creation and when a primary context is reactivated). */
    CUresult sticky;
};

/* Resets a context's per-context state to the driver's defaults. */
FAKE_HIDDEN void fake_context_defaults(struct CUctx_st *c);

/* The calling thread's current context, live: CUDA_ERROR_INVALID_CONTEXT with
 * none, CUDA_ERROR_CONTEXT_IS_DESTROYED if it is dead, and its sticky error
 * if a kernel poisoned it. */
FAKE_HIDDEN CUresult fake_current_context_locked(struct CUctx_st **out);
/* The same, poisoned or not: for the calls that still work on a poisoned
 * context (frees, destroys, synchronizations that report the error after). */
FAKE_HIDDEN CUresult fake_current_context_any_locked(struct CUctx_st **out);
/* An explicit context argument: unknown or destroyed handles are misuse and
 * CUDA_ERROR_INVALID_CONTEXT; a released primary context answers if_inactive;
 * a poisoned one its sticky error. */
FAKE_HIDDEN CUresult fake_context_arg_locked(CUcontext ctx, CUresult if_inactive,
                                             struct CUctx_st **out);

/* --- streams, events, host functions (fake_stream.c, fake_event.c) -------------
 * Every stream has an in-order queue of operations that runs only when the
 * host waits for it (synchronize calls, queries by the query mode, a
 * synchronous copy, cus_fake_run_streams), never at enqueue. Positions count
 * a stream's operations from 1: `enqueued` ever queued, `executed` completed
 * (an operation being executed is off the queue but not yet counted). A
 * dependency (stream, pos) is met once that stream executed >= pos. */

typedef struct fake_mem fake_mem;

typedef enum fake_op_kind {
    FAKE_OP_COPY,     /* memmove(dst, src, n) */
    FAKE_OP_MEMSET,   /* count elements of 1, 2 or 4 bytes */
    FAKE_OP_HOST_FN,  /* cuLaunchHostFunc: runs on the driver thread */
    FAKE_OP_RECORD,   /* cuEventRecord */
    FAKE_OP_WAIT,     /* cuStreamWaitEvent: nothing but its dependency */
    FAKE_OP_ALLOC,    /* cuMemAllocAsync: the block becomes usable */
    FAKE_OP_FREE,     /* cuMemFreeAsync: the block is freed */
    FAKE_OP_PREFETCH, /* cuMemPrefetchAsync: nothing but the lifetime check */
    FAKE_OP_LAUNCH,   /* cuLaunchKernel*: runs the host kernel (fake_module.c) */
} fake_op_kind;

typedef struct fake_launch_exec fake_launch_exec; /* fake_module.c; owned by its op */

typedef struct fake_dep {
    struct CUstream_st *stream;
    uint64_t pos;
} fake_dep;

typedef struct fake_op {
    struct fake_op *next;
    fake_op_kind kind;
    const char *call;  /* the log name of the entry point that queued it */
    struct CUstream_st *stream; /* set at enqueue */
    uint64_t seq;      /* global enqueue order (context synchronization) */
    CUresult *result;  /* where a synchronous caller wants the outcome, or NULL */
    union fake_op_payload { /* named: a graph node keeps one (fake_graph.c) */
        struct { /* COPY; a NULL fake_mem is unchecked host memory */
            uintptr_t dst, src;
            size_t n;
            fake_mem *dst_mem, *src_mem;
        } copy;
        struct { /* MEMSET */
            uintptr_t dst;
            unsigned int value, elem;
            size_t count;
            fake_mem *mem;
        } memset;
        struct { /* HOST_FN */
            CUhostFn fn;
            void *user_data;
        } host;
        struct { /* RECORD */
            struct CUevent_st *event;
            unsigned long generation;
        } record;
        struct { /* ALLOC, FREE, PREFETCH */
            fake_mem *mem;
        } mem;
        struct { /* LAUNCH: freed with the op (fake_module_launch_free) */
            fake_launch_exec *exec;
        } launch;
    } u;
    size_t deps_done, ndeps;
    fake_dep deps[]; /* met in order before the operation executes */
} fake_op;

struct CUstream_st {
    fake_handle h;  /* kind STREAM; a default stream is not registered */
    struct CUctx_st *ctx;
    unsigned int flags;
    int priority;
    bool is_default;    /* the context's legacy default stream */
    bool ctx_destroyed; /* destroyed with its context rather than by cuStreamDestroy */
    bool torn_down;     /* its context's teardown took it */
    bool busy;          /* an operation is executing (maybe with the lock released) */
    uint64_t busy_seq;  /* that operation's seq */
    fake_op *head, *tail;
    uint64_t enqueued, executed;
    struct CUstream_st *pend_prev, *pend_next; /* the list of streams with work */
    bool pending_listed;
    unsigned long doomed; /* the teardown ticket that will destroy it */
    /* The stream capture it takes part in (began on it, or joined through an
     * event), or NULL: its work becomes graph nodes instead (fake_graph.c). */
    struct fake_capture *capture;
};

struct CUevent_st {
    fake_handle h; /* kind EVENT */
    struct CUctx_st *ctx;
    unsigned int flags;
    bool ctx_destroyed;
    bool recorded;                /* cuEventRecord was called */
    struct CUstream_st *stream;   /* the latest record: its stream and position */
    uint64_t pos;
    unsigned long generation;     /* bumped by each cuEventRecord */
    bool stamped;                 /* the latest record executed, at work counter `stamp` */
    uint64_t stamp;
    unsigned long doomed;
    /* The id of the capture that took its latest record (fake_graph.c), or 0:
     * such an event only orders captured work (fork and join), and answers
     * CUDA_ERROR_CAPTURED_EVENT to queries, synchronizations and timing. */
    unsigned long long capture_id;
};


/* A stream argument: NULL, CU_STREAM_LEGACY and CU_STREAM_PER_THREAD are the
 * current context's default stream (INVALID_CONTEXT / CONTEXT_IS_DESTROYED
 * without a live one); an unknown or destroyed stream, or one of a dead
 * context, is misuse and CUDA_ERROR_INVALID_HANDLE; a stream of a poisoned
 * context answers its sticky error. */
FAKE_HIDDEN CUresult fake_stream_arg_locked(CUstream hs, struct CUstream_st **out);
/* The same, poisoned or not (cuStreamDestroy, cuMemFreeAsync, cuStreamSynchronize). */
FAKE_HIDDEN CUresult fake_stream_arg_any_locked(CUstream hs, struct CUstream_st **out);
/* The context's default stream, made on first use; NULL when out of memory. */
FAKE_HIDDEN struct CUstream_st *fake_default_stream_locked(struct CUctx_st *c);
/* Appends a copy of proto (its payload, kind, call and result) to s with the
 * extra dependencies and the legacy-stream ones; CUDA_ERROR_OUT_OF_MEMORY. */
FAKE_HIDDEN CUresult fake_stream_enqueue_locked(struct CUstream_st *s, const fake_op *proto,
                                                const fake_dep *extra, size_t nextra);
/* A synchronous operation: queued on c's default stream (so after the work of
 * the default stream and of c's blocking streams) and run to completion;
 * returns the outcome of its execution. May release the lock. */
FAKE_HIDDEN CUresult fake_stream_submit_sync_locked(struct CUctx_st *c, const fake_op *proto);
/* Runs s until s->executed >= pos (dependencies first). May release the lock. */
FAKE_HIDDEN void fake_stream_run_to_locked(struct CUstream_st *s, uint64_t pos);
/* The rule of cuStreamQuery and cuEventQuery: CUDA_SUCCESS if s had reached
 * target on entry; CUDA_ERROR_NOT_READY otherwise, after running what the
 * query mode says. May release the lock. */
FAKE_HIDDEN CUresult fake_stream_query_locked(struct CUstream_st *s, uint64_t target);
/* An event argument: unknown, destroyed, or of a dead context: misuse and
 * CUDA_ERROR_INVALID_HANDLE; of a poisoned context: its sticky error. */
FAKE_HIDDEN CUresult fake_event_arg_locked(CUevent he, struct CUevent_st **out);
/* The same, poisoned or not (cuEventDestroy, cuEventSynchronize). */
FAKE_HIDDEN CUresult fake_event_arg_any_locked(CUevent he, struct CUevent_st **out);
/* Runs every operation of c's streams queued before the call (all contexts'
 * for NULL). May release the lock. */
FAKE_HIDDEN void fake_context_synchronize_locked(struct CUctx_st *c);
/* A context's death (cuCtxDestroy, the last cuDevicePrimaryCtxRelease): the
 * caller has already marked it. Runs the work queued in its streams, then
 * destroys its streams, events and memory. May release the lock. */
FAKE_HIDDEN void fake_context_teardown_locked(struct CUctx_st *c);
/* The two above, as the context area calls them (it lies below the stream
 * engine, which registers them from its constructor). */
typedef struct fake_context_work_hooks {
    void (*synchronize_locked)(struct CUctx_st *c);
    void (*teardown_locked)(struct CUctx_st *c);
} fake_context_work_hooks;
FAKE_HIDDEN extern const fake_context_work_hooks *fake_context_work;
/* The work counter: memory operations, launches and host functions executed since
 * install (event timing). */
FAKE_HIDDEN uint64_t fake_work_done_locked(void);

/* --- modules and launches (fake_module.c), and what they need elsewhere ----------- */

/* Runs fn(arg) on the calling thread without the lock, as a host function
 * runs: every driver entry point it calls is refused (CUDA_ERROR_NOT_PERMITTED
 * and a misuse), and threads waiting inside the fake see a lock release.
 * The caller holds the stream it executes busy (fake_stream.c). */
FAKE_HIDDEN void fake_stream_call_unlocked_locked(void (*fn)(void *), void *arg);
/* Frees a LAUNCH operation's payload (a queue dropped at reset, or done). */
FAKE_HIDDEN void fake_module_launch_free(fake_launch_exec *exec);
/* Graph replay (fake_graph.c): a copy of a captured launch's payload for one
 * cuGraphLaunch of exec on stream (as passed), NULL when out of memory; and
 * the launch record of a launch queued (or captured). */
FAKE_HIDDEN fake_launch_exec *fake_module_launch_replay(const fake_launch_exec *x, CUgraphExec exec,
                                                        CUstream stream);
FAKE_HIDDEN void fake_module_record_launch_locked(const fake_launch_exec *x);
/* What cuGraphExecUpdate compares: the function's context, cooperative. */
FAKE_HIDDEN CUcontext fake_module_launch_context(const fake_launch_exec *x);
FAKE_HIDDEN bool fake_module_launch_cooperative(const fake_launch_exec *x);

/* A module global: device memory of c, as bounds-checked as any allocation,
 * but not a registered handle: not counted as device memory (live handles,
 * bytes in use, cuMemGetInfo), never freed by cuMemFree nor by its context's
 * teardown, only by fake_memory_global_release_locked (its module's unload).
 * Zero-filled. CUDA_ERROR_OUT_OF_MEMORY. */
FAKE_HIDDEN CUresult fake_memory_global_new_locked(struct CUctx_st *c, size_t size,
                                                   fake_mem **out);
FAKE_HIDDEN void *fake_memory_global_base(const fake_mem *m);
FAKE_HIDDEN void fake_memory_global_release_locked(fake_mem *m, bool with_context);

/* --- graph memory and pointer checks (fake_memory.c) ------------------------------
 * A cuMemAllocAsync during capture makes a graph allocation: device memory
 * registered at once under the fixed address the node hands out, owned by the
 * graph bodies that allocate it (holds), made usable by each launch's
 * allocation node (valid) and unusable again by a free, and released (its
 * handle and bytes) once no body holds it, no launch left it allocated
 * (outstanding) and no allocation or free of it is still queued. */
FAKE_HIDDEN bool fake_memory_is_graph_alloc(const fake_mem *m);
FAKE_HIDDEN void fake_memory_graph_hold_locked(fake_mem *m);
FAKE_HIDDEN void fake_memory_graph_drop_locked(fake_mem *m);
/* Whether an earlier launch left it allocated, with no free queued since. */
FAKE_HIDDEN bool fake_memory_graph_outstanding(const fake_mem *m);
FAKE_HIDDEN void fake_memory_graph_set_outstanding_locked(fake_mem *m, bool outstanding);
/* An ALLOC or FREE operation of it was queued (its execution counts it off). */
FAKE_HIDDEN void fake_memory_graph_op_queued_locked(fake_mem *m);
/* For cuGraphExecUpdate: the device of an operand, and whether it is device
 * memory (device or managed) rather than host memory; NULL is host memory. */
FAKE_HIDDEN void fake_memory_operand_kind(const fake_mem *m, CUdevice *device, bool *on_device);
/* At execution: false, with a misuse, when addr lies in freed memory (or in a
 * graph allocation outside its lifetime); true for live or unknown memory. */
FAKE_HIDDEN bool fake_memory_pointer_usable_locked(uintptr_t addr, const char *what,
                                                   const fake_op *op);

/* --- stream capture and graphs (fake_graph.c) ----------------------------------------
 * While a stream captures (s->capture), what would be queued on it becomes a
 * node of the capture's graph instead; cuGraphLaunch queues a graph's nodes
 * as ordinary operations, in capture order. */

/* Captures begun and not yet ended (any thread): 0 makes every hook free.
 * Defined by the stream engine, which reads it; kept by the graph area. */
FAKE_HIDDEN extern unsigned long fake_captures_active;

/* What the stream engine and the event area hand to the capture code (the
 * graph area registers it from a constructor: fake_capture_ops).
 *   enqueue_locked: for a capturing stream or a legacy default stream while
 *     captures are active: *handled says whether the operation was taken (a
 *     node, or an error: CUDA_ERROR_STREAM_CAPTURE_IMPLICIT on a legacy stream
 *     while a blocking stream of its context captures,
 *     CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, ...). A LAUNCH payload belongs
 *     to the node on success, as it would to the queue.
 *   sync_check_locked: cuStreamSynchronize and cuStreamQuery of s:
 *     CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED for a capturing stream,
 *     CUDA_ERROR_STREAM_CAPTURE_IMPLICIT for a legacy stream that a blocking
 *     capture blocks; both invalidate the capture.
 *   record_locked: cuEventRecord on a capturing stream.
 *   wait_locked: cuStreamWaitEvent while captures are active or of a
 *     captured event (*handled false: an ordinary wait).
 *   stream_destroyed_locked: cuStreamDestroy of a capturing stream: the
 *     capture is discarded (its origin) or invalidated (a joined stream,
 *     which leaves it). */
typedef struct fake_capture_hooks {
    CUresult (*enqueue_locked)(struct CUstream_st *s, const fake_op *proto, bool *handled);
    CUresult (*sync_check_locked)(struct CUstream_st *s);
    CUresult (*record_locked)(struct CUstream_st *s, struct CUevent_st *e);
    CUresult (*wait_locked)(struct CUstream_st *s, struct CUevent_st *e, unsigned int flags,
                            bool *handled);
    void (*stream_destroyed_locked)(struct CUstream_st *s);
} fake_capture_hooks;
FAKE_HIDDEN extern const fake_capture_hooks *fake_capture_ops;


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
