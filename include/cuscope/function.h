/* cuscope/function.h: kernels of a module, their attributes and parameter
 * layout. Launching them is cuscope/launch.h.
 *
 * A cus_function belongs to its module (cus_module_get_function): ref and
 * unref count references to the module, which stays loaded while any are
 * held. Getters that return values never fail and need no driver.
 *
 * The parameter layout (count, and each parameter's offset and size) is read
 * from the driver once, at the first lookup, with cuFuncGetParamInfo (an
 * optional entry point, drivers from 12.4). Without it, the layout is
 * unknown and launches are not checked. The driver has no call for the
 * count: cuscope reads it from the module's image at load (PTX, cubin or
 * fatbin, compressed entries where the build has liblz4/libzstd) and asks
 * for exactly that many parameters, so a correct program shows no API error
 * under compute-sanitizer. Of an image it cannot read, it asks until the
 * driver answers CUDA_ERROR_INVALID_VALUE one past the last.
 *
 * The calls that need the function's context current (the occupancy
 * queries) make it current for the call and restore the caller's stack, as
 * calls on other objects do (cuscope/context.h, "temporary switches"); the
 * attribute and cache calls need no context current on the driver and make
 * no switch. Either way the caller needs no guard.
 *
 * Thread-safe; failures return a cus_status and record the thread's last
 * error; none may be called from a host function but the layout queries
 * (cus_function_layout_known, _param_count, _param_info), which read what
 * the first lookup stored and make no driver call.
 */
#ifndef CUSCOPE_FUNCTION_H
#define CUSCOPE_FUNCTION_H

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>

#include "module.h"
#include "object.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Adds a reference (to the function's module); NULL-safe; returns fn. */
CUS_API cus_function *cus_function_ref(cus_function *fn);
/* Drops a reference; NULL-safe; returns NULL. The module is unloaded when
 * its last reference, and its functions' last, is gone. */
CUS_API cus_function *cus_function_unref(cus_function *fn);
CUS_DEFINE_AUTOPTR(cus_function, cus_function_unref)

/* The driver's CUfunction; NULL for NULL. */
CUS_API CUfunction cus_function_handle(const cus_function *fn);
/* The kernel's name, valid with the function. */
CUS_API const char *cus_function_name(const cus_function *fn);
/* The function's module, borrowed. */
CUS_API cus_module *cus_function_module(const cus_function *fn);

/* Whether the parameter layout is known (the driver has cuFuncGetParamInfo):
 * then launches are checked against it. */
CUS_API bool cus_function_layout_known(const cus_function *fn);
/* The number of parameters when the layout is known; 0 for NULL. */
CUS_API unsigned int cus_function_param_count(const cus_function *fn);
/* Parameter i's offset and size in bytes (either pointer may be NULL).
 * CUS_ERROR_OUT_OF_RANGE past the last, CUS_ERROR_NOT_SUPPORTED when the
 * layout is unknown. */
CUS_API cus_status cus_function_param_info(const cus_function *fn, unsigned int i,
                                           size_t *offset, size_t *size);

/* An attribute of the kernel (cuFuncGetAttribute: CU_FUNC_ATTRIBUTE_NUM_REGS,
 * MAX_THREADS_PER_BLOCK, SHARED_SIZE_BYTES, ...). */
CUS_API cus_status cus_function_attribute(cus_function *fn, CUfunction_attribute attr, int *value);
/* Sets an attribute of the kernel (cuFuncSetAttribute). */
CUS_API cus_status cus_function_set_attribute(cus_function *fn, CUfunction_attribute attr,
                                              int value);
/* Allows launches with up to bytes of dynamic shared memory (above 48 KiB this
 * is required): CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES. */
CUS_API cus_status cus_function_set_max_dynamic_shared(cus_function *fn, size_t bytes);
/* The kernel's preferred cache configuration (cuFuncSetCacheConfig): a hint. */
CUS_API cus_status cus_function_set_cache_config(cus_function *fn, CUfunc_cache config);
/* The kernel's shared-memory bank configuration (cuFuncSetSharedMemConfig).
 * Deprecated by the driver; CUS_ERROR_NOT_SUPPORTED where it is gone. */
CUS_API cus_status cus_function_set_shared_mem_config(cus_function *fn, CUsharedconfig config);

/* The block size that maximises occupancy (cuOccupancyMaxPotentialBlockSize)
 * with dynamic_shared bytes per block and at most block_limit threads (0: no
 * limit); *min_grid receives the grid size that fills the device (may be
 * NULL). */
CUS_API cus_status cus_function_max_potential_block(cus_function *fn, size_t dynamic_shared,
                                                    int block_limit, int *min_grid, int *block);
/* Active blocks per multiprocessor at that block size. */
CUS_API cus_status cus_function_max_active_blocks(cus_function *fn, int block,
                                                  size_t dynamic_shared, int *blocks);

#ifdef __cplusplus
}
#endif

#endif
