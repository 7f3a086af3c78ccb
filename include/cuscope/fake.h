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

#define CUS_FAKE_MAX_DEVICES 16
#define CUS_FAKE_MAX_ATTRIBUTE_OVERRIDES 16

typedef struct cus_fake_attribute {
    CUdevice_attribute attribute;
    int value;
} cus_fake_attribute;

/* One fake device. Zero fields take the defaults shown. */
typedef struct cus_fake_device_config {
    const char *name;             /* "cuscope fake GPU <ordinal>" */
    int cc_major, cc_minor;       /* 9.0 */
    size_t total_memory;          /* 80 GiB */
    int multiprocessor_count;     /* 132 */
    /* Any other attribute; the fake answers plausible Hopper values for the
     * rest and 0 for attributes it does not know. */
    cus_fake_attribute overrides[CUS_FAKE_MAX_ATTRIBUTE_OVERRIDES];
    int override_count;
} cus_fake_device_config;

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
} cus_fake_config;

/* Resets the fake to a fresh state configured by cfg (NULL: one default
 * device), and makes cuscope use it (cus_driver_install). Fails with
 * CUS_ERROR_BUSY while cuscope objects are alive, and with
 * CUS_ERROR_INVALID_ARGUMENT for a bad config. cuscope then loads on its next
 * call that needs the driver (or an explicit cus_init()). */
CUS_API cus_status cus_fake_install(const cus_fake_config *cfg);

/* Makes cuscope go back to the real driver (cus_driver_install(NULL)) and
 * frees the fake's state. CUS_ERROR_BUSY while cuscope objects are alive. */
CUS_API cus_status cus_fake_uninstall(void);

/* The fake's resolver, cuGetProcAddress_v2's signature, for chaining (a tracer
 * that wraps the fake). */
CUS_API CUresult cus_fake_get_proc_address(const char *symbol, void **pfn, int cuda_version,
                                           cuuint64_t flags,
                                           CUdriverProcAddressQueryResult *symbol_status);

/* Changes one attribute of one device of the installed fake. */
CUS_API cus_status cus_fake_set_attribute(int ordinal, CUdevice_attribute attr, int value);

/* --- handle tracking ------------------------------------------------------ */

typedef enum cus_fake_handle_kind {
    CUS_FAKE_HANDLE_ANY = 0,
    CUS_FAKE_HANDLE_CONTEXT,          /* cuCtxCreate contexts */
    CUS_FAKE_HANDLE_PRIMARY_CONTEXT,  /* primary contexts with a retain count > 0 */
    /* later: modules, streams, events, memory, graphs */
    CUS_FAKE_HANDLE_KIND_COUNT_
} cus_fake_handle_kind;

/* Live handles of one kind (CUS_FAKE_HANDLE_ANY: all kinds). */
CUS_API size_t cus_fake_live_handles(cus_fake_handle_kind kind);

/* Misuse detected since install: a destroyed or unknown handle passed in, a
 * double destroy, a release of a primary context never retained. Each is
 * counted, and the last one described. The call itself returns the driver's
 * error for it (CUDA_ERROR_INVALID_CONTEXT and the like). */
CUS_API unsigned long cus_fake_misuse_count(void);
CUS_API const char *cus_fake_last_misuse(void); /* "" if none; valid until the next misuse */

/* The primary context's retain count on a device, and its handle (stable for
 * the fake's lifetime, as with the real driver). */
CUS_API int cus_fake_primary_retain_count(int ordinal);

/* The calling thread's emulated driver stack: depth, and the entry at index i
 * (0 = bottom), NULL out of range. */
CUS_API int cus_fake_thread_stack_depth(void);
CUS_API CUcontext cus_fake_thread_stack_at(int i);

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
 * persistent: every later call too. Up to 16 at once. */
CUS_API cus_status cus_fake_fail_entry(const char *name, unsigned long n, CUresult result,
                                       bool persistent);

/* Disarms every fault. */
CUS_API void cus_fake_clear_faults(void);

/* The number of injected failures that fired since install. */
CUS_API unsigned long cus_fake_faults_fired(void);

/* Makes the resolver report `symbol` as absent (CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND)
 * from the next load on: an older or stripped driver. Takes effect at the next
 * cus_fake_install()-then-load only if called in between: call it after
 * cus_fake_install() and before the first cuscope call. */
CUS_API cus_status cus_fake_hide_entry(const char *symbol);

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
