/* cuscope/module.h: modules (loaded device code), their functions and globals.
 *
 * A cus_module is a reference-counted module loaded into one context, which
 * it holds alive; it is unloaded with that context made current (the caller's
 * stack is restored) when its last reference, and the last reference to any
 * of its functions, are gone.
 *
 * Images: PTX text (NUL-terminated; JIT-compiled by the driver), a cubin
 * (ELF) or a fatbin (a bare fatbin, or the wrapper nvcc embeds in host
 * objects). cus_module_image_format() tells them apart from their first
 * bytes. A bad image fails with the driver's status
 * (CUDA_ERROR_INVALID_IMAGE, CUDA_ERROR_INVALID_PTX,
 * CUDA_ERROR_NO_BINARY_FOR_GPU, ...), and the JIT's error log is part of the
 * error message (cus_last_error_message()).
 *
 * Functions (cus_function) belong to their module: a cus_function reference
 * is a reference to the module, so a function keeps its module alive, and a
 * repeated lookup of a name returns the same object without a driver call.
 *
 * All functions are thread-safe, return a cus_status, record the thread's
 * last error on failure, and leave out parameters untouched then. None may be
 * called from a host function (CUS_ERROR_IN_HOST_FUNCTION).
 */
#ifndef CUSCOPE_MODULE_H
#define CUSCOPE_MODULE_H

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>

#include "context.h"
#include "object.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A reference-counted module loaded into one context (above). */
typedef struct cus_module cus_module;
/* A kernel of a module; its references are the module's (above). */
typedef struct cus_function cus_function;

/* The kinds of image cus_module_load_data takes (cus_module_image_format). */
typedef enum cus_image_format {
    CUS_IMAGE_UNKNOWN = 0,    /* none of the others */
    CUS_IMAGE_PTX,            /* text starting with PTX directives or comments */
    CUS_IMAGE_CUBIN,          /* ELF */
    CUS_IMAGE_FATBIN,         /* magic 0xBA55ED50 */
    CUS_IMAGE_FATBIN_WRAPPER, /* nvcc's host-side wrapper, magic 0x466243b1 */
} cus_image_format;

/* The format of an image from its first bytes; size is the number of bytes
 * that may be read (at most 16 are). Thread-safe, needs no driver. */
CUS_API cus_image_format cus_module_image_format(const void *image, size_t size);
/* The format's name ("PTX", "cubin", ...), a static string. */
CUS_API const char *cus_image_format_name(cus_image_format format);

/* JIT options (they matter for PTX). Zero-initialise for the defaults. */
typedef struct cus_jit_options {
    int optimization_level; /* 0..4; -1 or 0 with `set_level` false: the driver's default (4) */
    bool set_level;             /* pass optimization_level (then 0..4) to the JIT */
    unsigned int max_registers; /* 0: no limit */
    bool line_info;             /* -lineinfo */
    bool debug_info;            /* -G */
    int target;                 /* a CUjit_target, 0: the context's device */
} cus_jit_options;

/* Loads an image into ctx. size is the image's length in bytes, used to check
 * it before the driver reads it (the format's header must fit, and PTX must be
 * NUL-terminated within it); 0 means unknown (a NUL-terminated PTX string, or
 * a binary whose own header gives its size). jit may be NULL. The driver's
 * JIT info log is kept (cus_module_info_log). *out receives a new reference.
 *
 * A fatbin wrapper (nvcc's host-side struct) holds a pointer to its fatbin,
 * which the driver follows blindly. cuscope checks it first, without
 * dereferencing it: NULL, an address that cannot be read, memory that does
 * not start with a fatbin header, or a fatbin whose last byte (by its header's
 * size) cannot be read, is CUDA_ERROR_INVALID_IMAGE with no driver call. The
 * bytes between the fatbin's first and last are trusted to be one readable
 * allocation, as the fatbin nvcc embeds is. */
CUS_API cus_status cus_module_load_data(cus_context *ctx, const void *image, size_t size,
                                        const cus_jit_options *jit, cus_module **out);

/* Reads the file at path and loads it as above. A missing or unreadable file
 * is CUS_ERROR_INVALID_ARGUMENT with the OS error in the message. */
CUS_API cus_status cus_module_load_file(cus_context *ctx, const char *path,
                                        const cus_jit_options *jit, cus_module **out);

/* Adds a reference; NULL-safe; returns mod. */
CUS_API cus_module *cus_module_ref(cus_module *mod);
/* Drops a reference; NULL-safe; returns NULL. The module is unloaded
 * (cuModuleUnload, its context current) when its last reference, and its
 * functions' last, is gone. */
CUS_API cus_module *cus_module_unref(cus_module *mod);
CUS_DEFINE_AUTOPTR(cus_module, cus_module_unref)

/* The driver's CUmodule; NULL for NULL. No driver call. */
CUS_API CUmodule cus_module_handle(const cus_module *mod);
/* The module's context, borrowed. No driver call. */
CUS_API cus_context *cus_module_context(const cus_module *mod);
/* The format of the image it was loaded from. No driver call. */
CUS_API cus_image_format cus_module_format(const cus_module *mod);
/* The JIT's info log of the load ("" when it wrote none); valid as long as
 * the module. Kept up to 16 KiB for PTX, and up to 4 KiB for a cubin or
 * fatbin (which the JIT compiles only when a fatbin's SASS does not run on
 * the device), whose loads then allocate no log buffer. The error log of a
 * failed load goes to the last error's message, as much as it holds. */
CUS_API const char *cus_module_info_log(const cus_module *mod);

/* The kernel called name. *out receives a new reference (to the module, see
 * above). An unknown name is CUDA_ERROR_NOT_FOUND. The first lookup of a
 * name calls cuModuleGetFunction and reads the parameter layout
 * (cuFuncGetParamInfo, where the driver has it, once per parameter: the
 * count comes from the image, cuscope/function.h); later ones make no driver
 * call, take no lock and cost the same in a module of any size. */
CUS_API cus_status cus_module_get_function(cus_module *mod, const char *name,
                                           cus_function **out);

/* A `__device__` or `__constant__` variable: its device address and size (either
 * pointer may be NULL). An unknown name is CUDA_ERROR_NOT_FOUND. The first
 * lookup of a name calls cuModuleGetGlobal; later ones make no driver call. */
CUS_API cus_status cus_module_get_global(cus_module *mod, const char *name, CUdeviceptr *ptr,
                                         size_t *bytes);
/* Copies bytes of src into the global name at offset, synchronously,
 * bounds-checked against its size (CUS_ERROR_OUT_OF_RANGE before any copy;
 * the global's first lookup is the only driver call an out-of-range copy can
 * make). */
CUS_API cus_status cus_module_copy_to_global(cus_module *mod, const char *name, size_t offset,
                                             const void *src, size_t bytes);
/* Copies bytes of the global name from offset into dst, synchronously,
 * bounds-checked as cus_module_copy_to_global. */
CUS_API cus_status cus_module_copy_from_global(void *dst, cus_module *mod, const char *name,
                                               size_t offset, size_t bytes);

/* The number of kernels in the module (cuModuleGetFunctionCount, drivers
 * from 12.4, else CUS_ERROR_NOT_SUPPORTED). */
CUS_API cus_status cus_module_function_count(cus_module *mod, unsigned int *count);
/* The kernels' names: *count receives their number, and names[i] for i <
 * min(capacity, count) a string valid as long as the module. Needs
 * cuModuleGetFunctionCount, cuModuleEnumerateFunctions and cuFuncGetName
 * (drivers from 12.4), else CUS_ERROR_NOT_SUPPORTED. */
CUS_API cus_status cus_module_function_names(cus_module *mod, const char **names,
                                             unsigned int capacity, unsigned int *count);

#ifdef __cplusplus
}
#endif

#endif
