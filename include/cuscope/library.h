/* cuscope/library.h: context-independent libraries (cuLibrary*) and their
 * kernels (cuKernel*), the driver's way to load code since CUDA 12.0.
 *
 * Ownership. A cus_library belongs to no context: it is the one cuscope
 * object that holds none, as the driver's CUlibrary does. The driver loads
 * its code into a context lazily, the first time a kernel is used there (a
 * launch, cus_kernel_function, cus_library_get_global), and unloads it from
 * every context at cuLibraryUnload. A context may therefore be destroyed
 * while a library lives (the library's code goes with it, nothing else), and
 * a library may be released while contexts live. The library is unloaded
 * when its last reference, and the last reference to any of its kernels,
 * are gone; no context needs to be current for that.
 *
 * A cus_kernel belongs to its library as a cus_function does to its module:
 * a kernel reference is a reference to the library, and a repeated lookup of
 * a name returns the same object with no driver call and no lock.
 *
 * Launching a kernel (cus_launch, cus_launch_ex of cuscope/launch.h, which
 * take a cus_kernel * as well as a cus_function *) picks its context as the
 * driver does: the stream's context, or with a NULL stream the thread's
 * current context (none current: CUDA_ERROR_INVALID_CONTEXT, with a
 * message, before the driver is called). No context is switched. A launch
 * queued on a stream does not keep the library: release it only after the
 * work completed, or the driver's unload waits for it (cuLibraryUnload
 * synchronizes the contexts it was loaded in, as cuModuleUnload does).
 * A launch captured into a graph (cuscope/graph.h) keeps the library alive
 * as long as the graph and its executable graphs.
 *
 * Images are what cus_module_load_data takes, checked the same way (a bad
 * one fails before the driver reads it), and a JIT error log goes into the
 * error message. A library for no architecture of the devices fails as the
 * driver says (CUDA_ERROR_NO_BINARY_FOR_GPU, or CUDA_ERROR_INVALID_PTX for
 * PTX whose .target is above the device).
 *
 * Driver versions: the library API needs a 12.0 driver (every function here
 * then fails with CUS_ERROR_NOT_SUPPORTED, naming the version);
 * cus_library_kernel_count needs 12.4, cus_library_kernel_names 12.4 (and
 * cuKernelGetName, 12.3); the parameter layout needs cuKernelGetParamInfo
 * (12.4), without which launches of a kernel go unchecked.
 *
 * All functions are thread-safe, return a cus_status, record the thread's
 * last error on failure and leave out parameters untouched then. None may be
 * called from a host function (CUS_ERROR_IN_HOST_FUNCTION) but the getters
 * that make no driver call (handle, name, library, format, info log, the
 * layout queries once the layout is read).
 */
#ifndef CUSCOPE_LIBRARY_H
#define CUSCOPE_LIBRARY_H

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>

#include "context.h"
#include "device.h"
#include "module.h"
#include "object.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A loaded library: reference-counted, held by no context and holding
 * none. */
typedef struct cus_library cus_library;
/** A kernel of a library: its references count on the library. */
typedef struct cus_kernel cus_kernel;

/** Library options (CUlibraryOption). Zero-initialise for the defaults. */
typedef struct cus_library_options {
    /* CU_LIBRARY_BINARY_IS_PRESERVED: the caller keeps the image unchanged
     * and readable until the library is unloaded, so that the driver need
     * not copy it. Only for a cubin or a fatbin (the driver ignores it for
     * PTX). */
    bool binary_is_preserved;
} cus_library_options;

/** Loads an image as a library (cuLibraryLoadData). size, jit: as for
 * cus_module_load_data (0: unknown; jit may be NULL); options may be NULL.
 * No context need be current. *out receives a new reference. Errors: the
 * image checks of cus_module_load_data (CUDA_ERROR_INVALID_IMAGE ...), the
 * driver's status with the JIT error log in the message,
 * CUS_ERROR_NOT_SUPPORTED before 12.0, CUS_ERROR_INVALID_ARGUMENT for bad JIT
 * options, CUS_ERROR_OUT_OF_HOST_MEMORY. */
CUS_API cus_status cus_library_load_data(const void *image, size_t size,
                                         const cus_jit_options *jit,
                                         const cus_library_options *options, cus_library **out);

/** Reads the file at path and loads it as above (the image is copied by the
 * driver; no option to preserve it). A missing or unreadable file is
 * CUS_ERROR_INVALID_ARGUMENT with the OS error in the message. */
CUS_API cus_status cus_library_load_file(const char *path, const cus_jit_options *jit,
                                         cus_library **out);

/** Takes a reference (NULL accepted); returns lib. */
CUS_API cus_library *cus_library_ref(cus_library *lib);
/** Drops a reference (NULL accepted); always returns NULL. The last one, with
 * no kernel reference left, unloads the library (cuLibraryUnload, in relaxed
 * capture interaction mode); a failure goes to the destroy handler. */
CUS_API cus_library *cus_library_unref(cus_library *lib);
CUS_DEFINE_AUTOPTR(cus_library, cus_library_unref)

/** The driver's handle (NULL for NULL); valid as long as the library. */
CUS_API CUlibrary cus_library_handle(const cus_library *lib);
/** The image's format, as cus_module_image_format() told it. */
CUS_API cus_image_format cus_library_format(const cus_library *lib);
/** The JIT's info log of the load ("" when none), valid as long as the
 * library; kept as cus_module_info_log keeps a module's. */
CUS_API const char *cus_library_info_log(const cus_library *lib);

/** The kernel called name (cuLibraryGetKernel). *out receives a new
 * reference (to the library). An unknown name is CUDA_ERROR_NOT_FOUND. The
 * first lookup of a name also reads the parameter layout
 * (cuKernelGetParamInfo, where the driver has it); later ones make no
 * driver call and take no lock. No context need be current. */
CUS_API cus_status cus_library_get_kernel(cus_library *lib, const char *name, cus_kernel **out);

/** The number of kernels in the library (cuLibraryGetKernelCount, drivers
 * from 12.4, else CUS_ERROR_NOT_SUPPORTED). */
CUS_API cus_status cus_library_kernel_count(cus_library *lib, unsigned int *count);

/** The kernels' names: names[i] for i < min(capacity, count) receives a
 * string valid as long as the library; *count the number of kernels. Needs
 * cuLibraryEnumerateKernels (12.4) and cuKernelGetName (12.3), else
 * CUS_ERROR_NOT_SUPPORTED. Asked of the driver once. */
CUS_API cus_status cus_library_kernel_names(cus_library *lib, const char **names,
                                            unsigned int capacity, unsigned int *count);

/** A __device__ or __constant__ variable of the library as loaded in ctx
 * (cuLibraryGetGlobal with ctx made current for the call, which loads the
 * library there if it was not yet): its address and size, either pointer
 * may be NULL. An unknown name is CUDA_ERROR_NOT_FOUND. Each call asks the
 * driver: the address differs per context. */
CUS_API cus_status cus_library_get_global(cus_library *lib, cus_context *ctx, const char *name,
                                          CUdeviceptr *ptr, size_t *bytes);

/** A __managed__ variable of the library (cuLibraryGetManaged): one address
 * for every context; either pointer may be NULL. An unknown name is
 * CUDA_ERROR_NOT_FOUND. */
CUS_API cus_status cus_library_get_managed(cus_library *lib, const char *name, CUdeviceptr *ptr,
                                           size_t *bytes);

/** The host-callable address of a unified function (cuLibraryGetUnifiedFunction,
 * a function compiled for host and device with unified function pointers).
 * A symbol that is no unified function (unknown, or a kernel) is the
 * driver's CUDA_ERROR_INVALID_VALUE (an H200's answer; CUDA_ERROR_NOT_FOUND
 * is taken too), with a message naming it. */
CUS_API cus_status cus_library_get_unified_function(cus_library *lib, const char *symbol,
                                                    void **fptr);

/** Takes a reference to the kernel, which is a reference to its library
 * (NULL accepted); returns k. */
CUS_API cus_kernel *cus_kernel_ref(cus_kernel *k);
/** Drops a reference (NULL accepted); always returns NULL. */
CUS_API cus_kernel *cus_kernel_unref(cus_kernel *k);
CUS_DEFINE_AUTOPTR(cus_kernel, cus_kernel_unref)

/** The driver's handle (NULL for NULL); cuLaunchKernel takes it cast to
 * CUfunction. */
CUS_API CUkernel cus_kernel_handle(const cus_kernel *k);
/** The name it was looked up by; valid as long as the kernel ("" for NULL). */
CUS_API const char *cus_kernel_name(const cus_kernel *k);
/** Its library (borrowed; NULL for NULL). */
CUS_API cus_library *cus_kernel_library(const cus_kernel *k);

/* The parameter layout. The driver reads it in a context
 * (cuKernelGetParamInfo needs one current, though the layout is the same in
 * all): cus_library_get_kernel reads it when a context is current, and
 * otherwise the first use that has one does, once: a checked launch (in its
 * stream's or the current context), a kernel node (in its graph's), or
 * cus_kernel_param_info (in the current one). */

/** Whether the parameter layout is known: read, and the driver has
 * cuKernelGetParamInfo. Makes no driver call. */
CUS_API bool cus_kernel_layout_known(const cus_kernel *k);
/** The number of parameters, when the layout is known (else 0). Makes no
 * driver call. */
CUS_API unsigned int cus_kernel_param_count(const cus_kernel *k);
/** Parameter i's offset and size in bytes (either may be NULL):
 * CUS_ERROR_OUT_OF_RANGE past the last, CUS_ERROR_NOT_SUPPORTED when the
 * driver cannot say. Reads the layout first if it is not read yet (above):
 * CUDA_ERROR_INVALID_CONTEXT when no context is current then, and
 * CUS_ERROR_IN_HOST_FUNCTION in a host function; otherwise makes no driver
 * call. */
CUS_API cus_status cus_kernel_param_info(const cus_kernel *k, unsigned int i, size_t *offset,
                                         size_t *size);

/** An attribute of the kernel on device dev (cuKernelGetAttribute; no
 * context need be current). */
CUS_API cus_status cus_kernel_attribute(cus_kernel *k, CUfunction_attribute attr, cus_device dev,
                                        int *value);
/** Sets an attribute of the kernel for device dev (cuKernelSetAttribute),
 * e.g. CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: it applies to every
 * context of that device, present and future. */
CUS_API cus_status cus_kernel_set_attribute(cus_kernel *k, CUfunction_attribute attr, int value,
                                            cus_device dev);

/** The kernel as a function of ctx (cuKernelGetFunction with ctx made
 * current for the call, which loads the library there if it was not yet).
 * *out is borrowed: valid while the library is loaded and ctx lives; it is
 * for raw driver calls (cuFuncGetAttribute, the occupancy queries). */
CUS_API cus_status cus_kernel_function(cus_kernel *k, cus_context *ctx, CUfunction *out);

#ifdef __cplusplus
}
#endif

#endif
