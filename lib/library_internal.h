/* Libraries and kernels (library.c), and what launch.c reads of a kernel.
 * Nothing here is API. */
#ifndef CUSCOPE_LIB_LIBRARY_INTERNAL_H
#define CUSCOPE_LIB_LIBRARY_INTERNAL_H

#include "internal.h"
#include "name_table.h"

/* Where a kernel's parameter layout stands. cuKernelGetParamInfo needs a
 * current context: a kernel looked up with none current reads its layout at
 * the first use that has one (cus_kernel_layout_in_). */
enum { CUS_LAYOUT_PENDING_, CUS_LAYOUT_KNOWN_, CUS_LAYOUT_NONE_ /* the driver cannot say */ };

/* A kernel is part of its library, as a function of its module: no count of
 * its own, freed with the library. Everything a launch reads is set before
 * the kernel is published and never changes, but the layout: written once
 * under the library's lock while `layout` is pending, then published by it
 * (release). */
struct cus_kernel {
    cus_library *library;
    cus_name_key_ key; /* the kernel cache's (name_table.h) */
    CUkernel handle;
    /* A macro call site's sizes array that matched the layout (launch.c). */
    _Atomic(const size_t *) checked_sizes;
    _Atomic(unsigned char) layout; /* CUS_LAYOUT_* */
    unsigned int nparams;
    size_t *param_offsets, *param_sizes; /* nparams each, when known */
};

/* The count alone on its line (every kernel reference and captured launch
 * writes it), then what lookups read without the lock, then what is
 * written under it. */
struct cus_library {
    _Alignas(CUS_CACHE_LINE_) cus_refcount refs;
    _Alignas(CUS_CACHE_LINE_) CUlibrary handle;
    cus_image_format format;
    char *info_log;
    _Atomic(cus_name_table_ *) kernels; /* NULL until the first lookup */
    _Alignas(CUS_CACHE_LINE_) pthread_mutex_t lock;
    size_t nkernels;    /* under the lock */
    const char **names; /* cus_library_kernel_names, filled once */
    unsigned int nnames;
    struct cus_param_counts_ *param_counts; /* from the image; NULL: ask the driver */
    /* The JIT options and log buffers given to cuLibraryLoadData, kept until
     * the unload: with lazy loading the driver may compile the library into
     * a context after the load returned, and write its logs then. */
    void *jit_buffers;
    /* In jit_buffers: the JIT's error log, which a lazy compile fills at the
     * first use (a kernel lookup of PTX that does not compile). */
    const char *jit_error_log;
};

/* Reads k's layout if still pending, with ctx current (NULL: the thread's
 * current context, none switched); CUDA_ERROR_INVALID_CONTEXT when none is.
 * Cheap once read: one acquire load. */
CUS_HIDDEN cus_status cus_kernel_layout_in_(cus_kernel *k, CUcontext ctx, const char *function);

/* capture.c's keep of a library (CUS_DEFINE_CAPTURE_KEEP in library.c). */
CUS_HIDDEN cus_keep_item_ cus_capture_item_library_(cus_library *lib);
CUS_HIDDEN cus_status cus_capture_keep_library_(cus_stream *stream, cus_library *lib,
                                                const char *function);

/* The launch's keep of what a captured launch uses (launch.c): the noted
 * arguments and `code` (the module or library; NULL: none). */
CUS_HIDDEN cus_status cus_capture_launch_code_(cus_stream *stream, const cus_keep_item_ *code,
                                               const char *function);

#endif
