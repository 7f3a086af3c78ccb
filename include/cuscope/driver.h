/* cuscope/driver.h: loading the CUDA driver, and replacing it.
 *
 * cuscope never links against libcuda. cus_init() dlopen()s "libcuda.so.1" and
 * resolves every entry point it uses with cuGetProcAddress at an explicit ABI
 * version, so a program linked against cuscope starts on machines without a
 * GPU and fails with a readable status instead. Each public function that needs
 * the driver calls cus_init() itself, so calling it first is optional but
 * gives the clearest error.
 *
 * The same table is the seam for testing: cus_driver_install() makes cuscope
 * resolve its entry points through another function with the signature of
 * cuGetProcAddress_v2 (the fake driver in cuscope/fake.h, a tracer, a fault
 * injector).
 *
 * fork(): CUDA does not survive it. In the child of a process in which
 * cuscope has called into a driver (libcuda, or an installed resolver such as
 * the fake), every cuscope call that could reach the driver, cus_init()
 * included, fails with CUS_ERROR_FORKED and a last error naming the call; it
 * makes no driver call, takes none of cuscope's locks (a parent thread may
 * have held one at fork time) and never waits for a thread of the parent
 * (the fake's driver thread included). The last release of an object
 * inherited from the parent frees cuscope's host memory only: no cuMemFree,
 * cuCtxDestroy, cuModuleUnload, cuGraphDestroy or synchronization, and the
 * destroy-error handler is told nothing (the resources are the parent's, and
 * the parent frees them). Calls that need no driver keep working (accessors,
 * the last-error functions, cus_status_name(), cus_set_destroy_error_handler,
 * unrefs); cus_driver_has() says false and cus_release_deferred() returns 0.
 * Contexts the forking thread had pushed stay on its mirror (popping needs
 * the driver), so they stay alive. A child forked before cuscope's first
 * driver call is an ordinary process: it loads the driver normally. To use
 * CUDA after fork(), exec() a new program. The parent is unaffected.
 */
#ifndef CUSCOPE_DRIVER_H
#define CUSCOPE_DRIVER_H

#include <string.h>

#include <cuda.h>
#include <stdbool.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Loads the driver (or the installed resolver), resolves the entry points,
 * calls cuInit(0) and checks that there is a device. Idempotent and
 * thread-safe: concurrent callers wait for one load; once it succeeded, later
 * calls cost one atomic load. A failed load is retried by the next call.
 * Errors, each with a message that says what to do:
 *   CUS_ERROR_DRIVER_NOT_FOUND      libcuda.so.1 (or the path set) not loadable
 *   CUS_ERROR_DRIVER_SYMBOL_MISSING a required entry point is absent (named)
 *   CUS_ERROR_DRIVER_TOO_OLD        driver API version below 12.0
 *   CUDA_ERROR_NO_DEVICE            the driver sees no CUDA device
 *   CUS_ERROR_FORKED                a fork() child (see above), without
 *                                   waiting for a load another thread of
 *                                   the parent had under way
 *   any CUresult returned by cuInit. Never aborts. */
CUS_API cus_status cus_init(void);

/* The driver's API version (cuDriverGetVersion: 12040 for 12.4), loading the
 * driver first if needed. Thread-safe. Once the driver is loaded, cus_init()
 * and cus_driver_version() make no driver call and may be called from a host
 * function (they answer from what the load stored). */
CUS_API cus_status cus_driver_version(int *version);

/* The resolver type: cuGetProcAddress_v2's signature. */
typedef CUresult (*cus_driver_resolver)(const char *symbol, void **pfn, int cuda_version,
                                        cuuint64_t flags,
                                        CUdriverProcAddressQueryResult *symbol_status);

/* Makes cuscope resolve its entry points through `resolver` instead of
 * libcuda (NULL goes back to libcuda). Drops the loaded table: the next call
 * that needs the driver loads again through the new source. Fails with
 * CUS_ERROR_BUSY while any cuscope object is alive. Thread-safe, but must not
 * race with other cuscope calls. */
CUS_API cus_status cus_driver_install(cus_driver_resolver resolver);

/* Sets the file that cus_init() dlopen()s (NULL: "libcuda.so.1", or the
 * environment variable CUSCOPE_LIBCUDA when set; the variable is read with
 * secure_getenv, so a setuid, setgid or file-capability program ignores it
 * and loads libcuda.so.1). Drops the loaded table as
 * cus_driver_install() does; CUS_ERROR_BUSY while objects are alive.
 * Thread-safe, but must not race with other cuscope calls (as
 * cus_driver_install). */
CUS_API cus_status cus_driver_set_library(const char *path);

/* The escape hatch: any driver entry point, by its base name and an explicit
 * ABI version (the `_v<N>` of cudaTypedefs.h's `PFN_<name>_v<N>`), from the
 * source cuscope loaded its own table from: libcuda, or an installed
 * resolver (so that the fake driver serves it in tests, and a tracer sees it).
 * Loads the driver first if needed. *fn receives the function, with legacy
 * default-stream semantics (as cuscope's own table), to be converted to its
 * PFN type (CUS_DRIVER_PROC below does it). Errors: CUS_ERROR_INVALID_ARGUMENT
 * (NULL name or fn, a version <= 0), the load's errors (cus_init), and
 * CUS_ERROR_NOT_SUPPORTED naming the entry point and version when the driver
 * has no such entry point at that version (or implements an older API);
 * *fn is untouched on failure. Thread-safe.
 *
 * The call itself is the driver's: cuscope checks nothing of it, and it
 * runs in whatever context is current. Under a guard, it runs in ctx's and
 * the thread's stack is restored after:
 *
 *     PFN_cuMemAllocPitch_v3020 alloc_pitch;
 *     CUS_TRY(CUS_DRIVER_PROC(alloc_pitch, "cuMemAllocPitch", 3020));
 *     {
 *         cus_context_scope(guard, ctx);
 *         CUS_TRY(guard.status);
 *         CUresult r = alloc_pitch(&ptr, &pitch, width, height, 16);
 *     }
 */
CUS_API cus_status cus_driver_proc(const char *name, int version, void **fn);

/* cus_driver_proc into a function pointer variable of the PFN type (a copy
 * of the bytes: C has no cast between object and function pointers); the
 * status as cus_driver_proc's, pfn untouched on failure. */
#define CUS_DRIVER_PROC(pfn, name, version)                                    \
    __extension__({                                                            \
        void *cus_proc_ = NULL;                                                \
        cus_status cus_proc_st_ = cus_driver_proc((name), (version), &cus_proc_); \
        if (cus_proc_st_ == CUS_SUCCESS)                                       \
            memcpy(&(pfn), &cus_proc_, sizeof(pfn));                           \
        cus_proc_st_;                                                          \
    })

/* Whether the loaded driver provides an optional feature's entry point, by
 * driver symbol name ("cuCtxCreate_v4", "cuFuncGetParamInfo"). False before a
 * successful cus_init(). Thread-safe. */
CUS_API bool cus_driver_has(const char *entry);

#ifdef __cplusplus
}
#endif

#endif
