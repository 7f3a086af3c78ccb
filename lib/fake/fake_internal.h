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
 *            FAKE_BEFORE_INIT: works before cuInit.
 * Newer variants are listed even where cuscope uses an older one, because a
 * real driver answers a request at version V with the newest variant <= V: a
 * fake that handed out the old signature there would break a caller (a tracer,
 * a user) that asks at a newer version. */
enum { FAKE_UNCOUNTED = 1, FAKE_BEFORE_INIT = 2 };

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
    X(cuCtxSynchronize, 2000, cuCtxSynchronize, 0)                                    \
    X(cuCtxGetApiVersion, 3020, cuCtxGetApiVersion, 0)                                \
    X(cuCtxGetLimit, 3010, cuCtxGetLimit, 0)                                          \
    X(cuCtxSetLimit, 3010, cuCtxSetLimit, 0)                                          \
    X(cuCtxGetCacheConfig, 3020, cuCtxGetCacheConfig, 0)                              \
    X(cuCtxSetCacheConfig, 3020, cuCtxSetCacheConfig, 0)                              \
    X(cuCtxGetSharedMemConfig, 4020, cuCtxGetSharedMemConfig, 0)                      \
    X(cuCtxSetSharedMemConfig, 4020, cuCtxSetSharedMemConfig, 0)                      \
    X(cuCtxGetStreamPriorityRange, 5050, cuCtxGetStreamPriorityRange, 0)             \
    FAKE_ENTRIES_13000_(X)

/* The variants that take an explicit context (CUDA 13.0); only with headers
 * that declare their types. */
#if CUDA_VERSION >= 13000
#define FAKE_HAVE_13000_ENTRIES 1
#define FAKE_ENTRIES_13000_(X)                                                 \
    X(cuCtxGetDevice, 13000, cuCtxGetDevice_v2, 0)                             \
    X(cuCtxSynchronize, 13000, cuCtxSynchronize_v2, 0)
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

/* Records a misuse (use after destroy, double destroy, ...): counted, and the
 * text kept for cus_fake_last_misuse(), with the entry point appended. */
FAKE_HIDDEN void fake_misuse_locked(const char *fmt, ...) FAKE_PRINTF(1, 2);

/* Applies the default configuration if the fake was never installed, so the
 * resolver and the entry points also work without cus_fake_install(). */
FAKE_HIDDEN void fake_ensure_configured_locked(void);

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

/* Checks one device configuration; false if invalid. */
FAKE_HIDDEN bool fake_device_config_valid(const cus_fake_device_config *dc);
/* Configures device `ordinal` from dc (NULL: defaults). */
FAKE_HIDDEN void fake_device_configure(fake_device *d, int ordinal,
                                       const cus_fake_device_config *dc);

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
};

/* Resets a context's per-context state to the driver's defaults. */
FAKE_HIDDEN void fake_context_defaults(struct CUctx_st *c);
/* Frees every thread's emulated stack (install, uninstall); the threads see
 * empty stacks from the generation bump that goes with it. */
FAKE_HIDDEN void fake_context_reset_locked(void);

/* --- the state shared by the files ---------------------------------------------- */

typedef struct fake_state {
    bool configured;          /* a configuration is applied (install, or the lazy default) */
    unsigned long generation; /* bumped by each install/uninstall: stale thread stacks are empty */
    int driver_version;
    bool no_devices;
    bool initialized; /* cuInit succeeded */
    int device_count;
    fake_device devices[CUS_FAKE_MAX_DEVICES];
    const char *current_call; /* the log name of the entry point holding the lock */
} fake_state;

FAKE_HIDDEN extern fake_state fake_g;

/* The device for an ordinal, or NULL. */
static inline fake_device *fake_device_at_locked(CUdevice dev)
{
    return dev >= 0 && dev < fake_g.device_count ? &fake_g.devices[dev] : NULL;
}

/* Resets the resolver's state (hidden entries) for a new install. */
FAKE_HIDDEN void fake_resolver_reset_locked(void);

#endif
