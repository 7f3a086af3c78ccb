/* cuscope/raw.h: raw driver handles under scope cleanup.
 *
 * cuscope's objects free themselves at scope exit (cus_autoptr). A raw
 * handle that cuscope does not own (a CUdeviceptr from another library, a
 * CUmemGenericAllocationHandle from cuMemRetainAllocationHandle) can be put
 * under the same discipline with a definer and a use-site form, as the
 * Linux kernel's DEFINE_FREE and __free do:
 *
 *     CUS_DEFINE_RAW_CLEANUP(name, type, release_expression)
 *
 * defines, once per type, the cleanup that runs release_expression with the
 * handle in `raw` at scope exit, unless the handle is 0; and
 *
 *     cus_raw(name) type var = 0;
 *
 * declares a variable released that way. cus_raw_steal(&var) moves the handle
 * out of the scope and leaves 0 behind. Declare and initialise in one
 * statement; cleanups run in reverse order of declaration.
 *
 * A program linked against cuscope does not link libcuda (cuscope dlopen()s
 * it), so release expressions call the driver through cuscope: the ready-made
 * cleanups below use cus_raw_mem_free and cus_raw_mem_release, which report a
 * failure to the destroy-error handler (cus_set_destroy_error_handler) and
 * leave the thread's last error alone, as every cuscope release does:
 *
 *     cus_raw(devptr) CUdeviceptr p = 0;      (cuMemFree at scope exit)
 *     cus_raw(mem_handle) CUmemGenericAllocationHandle h = 0;  (cuMemRelease)
 *
 * cuMemFree needs the allocating context current: the scope must end with it
 * current (declare the variable after a cus_context_scope guard of it, so
 * that the variable goes first).
 */
#ifndef CUSCOPE_RAW_H
#define CUSCOPE_RAW_H

#include <cuda.h>

#include "object.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* cuMemFree(ptr) through cuscope's driver table, with the current context.
 * Errors: CUS_ERROR_INVALID_ARGUMENT (ptr 0), the driver's (recorded).
 * Thread-safe. */
CUS_API cus_status cus_driver_mem_free(CUdeviceptr ptr);
/* cuMemRelease(handle) through cuscope's driver table. Errors:
 * CUS_ERROR_INVALID_ARGUMENT (handle 0), CUS_ERROR_NOT_SUPPORTED (no
 * cuMemRelease in the driver), the driver's (recorded). Thread-safe. */
CUS_API cus_status cus_driver_mem_release(CUmemGenericAllocationHandle handle);

/* cus_driver_mem_free for a cleanup: nothing for 0, a failure to the
 * destroy-error handler, the thread's last error untouched. Thread-safe. */
CUS_API void cus_raw_mem_free(CUdeviceptr ptr);
/* cus_driver_mem_release for a cleanup: nothing for 0, a failure to the
 * destroy-error handler, the thread's last error untouched. Thread-safe. */
CUS_API void cus_raw_mem_release(CUmemGenericAllocationHandle handle);

/* Defines the cleanup `name` for handles of type: release_expression runs
 * with the handle in `raw` at scope exit, unless it is 0 (the top of this
 * file). */
#define CUS_DEFINE_RAW_CLEANUP(name, type, release_expression)                 \
    static inline void cus_raw_cleanup_##name##_(type *cus_raw_p_)             \
    {                                                                          \
        type raw = *cus_raw_p_;                                                \
        if (raw)                                                               \
            (void)(release_expression);                                        \
    }

#ifdef CUS_HAVE_CLEANUP
/* A raw handle released by the cleanup `name` at scope exit. */
#define cus_raw(name) __attribute__((cleanup(cus_raw_cleanup_##name##_)))
#endif

/* Moves a raw handle out of its scope: its value, with 0 left behind. */
#define cus_raw_steal(p)                                                       \
    __extension__({                                                            \
        __typeof__(*(p)) cus_raw_v_ = *(p);                                    \
        *(p) = 0;                                                              \
        cus_raw_v_;                                                            \
    })

CUS_DEFINE_RAW_CLEANUP(devptr, CUdeviceptr, (cus_raw_mem_free(raw), 0))
CUS_DEFINE_RAW_CLEANUP(mem_handle, CUmemGenericAllocationHandle, (cus_raw_mem_release(raw), 0))

#ifdef __cplusplus
}
#endif

#endif
