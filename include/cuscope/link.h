/* cuscope/link.h: JIT linking of device code into one cubin.
 *
 * A cus_linker links inputs (LTO-IR, relocatable cubins, PTX, fatbins, host
 * objects and libraries holding device code) added from memory or from files
 * into one cubin, which cus_module_load_data (or cus_linker_load) loads. It
 * has two backends behind one API:
 *  - nvJitLink, the toolkit's linker library (it runs on the CPU): opened at
 *    run time with dlopen, never linked, so a program linked against cuscope
 *    starts without it. Looked for at the path given to
 *    cus_link_set_nvjitlink_library(), else at the environment variable
 *    CUSCOPE_LIBNVJITLINK (read with secure_getenv: ignored in setuid
 *    programs), else as libnvJitLink.so.13 on the loader path;
 *  - the driver's cuLink* entry points (cuLinkCreate, cuLinkAddData,
 *    cuLinkAddFile, cuLinkComplete, cuLinkDestroy), through cuscope's
 *    driver table: the fallback where nvJitLink does not load, or chosen
 *    explicitly. It cannot take LTO-IR (the driver deprecated it) nor option
 *    strings: those are CUS_ERROR_NOT_SUPPORTED.
 *
 * Errors: a link that fails records the backend's error log in the last
 * error's message (cus_last_error_message(), as much as it holds), and keeps
 * it whole (cus_linker_error_log). Failures map onto the driver's codes
 * whichever backend ran, so that a caller tests one set: a bad input is
 * CUDA_ERROR_INVALID_IMAGE (CUDA_ERROR_INVALID_PTX for PTX that does not
 * compile), an unresolved symbol CUDA_ERROR_UNKNOWN (what nvJitLink 13.0
 * answers: NVJITLINK_ERROR_INTERNAL with "Undefined reference" in its log),
 * an unknown option or architecture CUS_ERROR_INVALID_ARGUMENT, an input or
 * option the backend lacks CUS_ERROR_NOT_SUPPORTED. The message names
 * nvJitLink's own result (NVJITLINK_ERROR_...), or the driver's.
 *
 * A linker holds a reference to its context (when given one). All functions
 * are thread-safe: a linker's calls are serialized by its own lock. None may
 * be called from a host function (CUS_ERROR_IN_HOST_FUNCTION). Functions
 * that return a cus_status record the thread's last error on failure and
 * leave out parameters untouched then.
 */
#ifndef CUSCOPE_LINK_H
#define CUSCOPE_LINK_H

#include <stdbool.h>
#include <stddef.h>

#include "context.h"
#include "module.h"
#include "object.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A JIT link in progress, then its cubin: reference-counted, holding its
 * context (when it has one) until the last unref. */
typedef struct cus_linker cus_linker;

/* Which linker runs. */
typedef enum cus_link_backend {
    CUS_LINK_BACKEND_AUTO = 0,  /* nvJitLink where it loads, else the driver's cuLink* */
    CUS_LINK_BACKEND_NVJITLINK, /* nvJitLink only: CUS_ERROR_NOT_SUPPORTED where it does not load */
    CUS_LINK_BACKEND_DRIVER,    /* the driver's cuLink* */
} cus_link_backend;

/* The kind of an input. */
typedef enum cus_link_input {
    CUS_LINK_INPUT_CUBIN = 1, /* a cubin (relocatable: nvcc -rdc=true -cubin) */
    CUS_LINK_INPUT_PTX,       /* PTX text (relocatable: nvcc -rdc=true -ptx) */
    CUS_LINK_INPUT_LTOIR,     /* LTO-IR (nvcc -dlto -ltoir -rdc=true): nvJitLink only */
    CUS_LINK_INPUT_FATBIN,    /* a fatbin */
    CUS_LINK_INPUT_OBJECT,    /* a host object holding device code */
    CUS_LINK_INPUT_LIBRARY,   /* a host library (.a) holding device code */
} cus_link_input;

/* Options of a link. Zero-initialise for the defaults. */
typedef struct cus_link_options {
    cus_link_backend backend; /* which linker runs (AUTO: nvJitLink, else the driver's) */
    /* The target, sm_<arch> (90 for sm_90); 0: the context's device. */
    int arch;
    bool lto;               /* -lto: link-time optimization of LTO-IR (nvJitLink only) */
    bool set_level;         /* apply optimization_level (else the backend's default) */
    int optimization_level; /* 0..3 (-O<n>; CU_JIT_OPTIMIZATION_LEVEL) */
    bool line_info;         /* -lineinfo */
    bool debug_info;        /* -g (CU_JIT_GENERATE_DEBUG_INFO) */
    /* More nvJitLink option strings ("-maxrregcount=32"), copied at create;
     * the driver backend refuses them (CUS_ERROR_NOT_SUPPORTED). */
    const char *const *extra;
    size_t extra_count; /* the number of extra option strings */
} cus_link_options;

/* Creates a linker. ctx gives the default target (its device's compute
 * capability) and the context cus_linker_load loads into; the driver backend
 * needs it (cuLinkCreate needs a current context: cuscope makes ctx current
 * for each call). ctx may be NULL for nvJitLink with an explicit arch (a link
 * on a machine without a driver): then cus_linker_load is
 * CUS_ERROR_INVALID_ARGUMENT. opts may be NULL (the defaults). *out receives
 * a new reference, which holds one to ctx.
 * Errors: CUS_ERROR_INVALID_ARGUMENT (NULL out, a level outside 0..3, a
 * negative arch, extra_count with a NULL extra or a NULL string in it, no ctx
 * where one is needed, an option nvJitLink rejects), CUS_ERROR_NOT_SUPPORTED
 * (nvJitLink asked for and absent, with the paths tried; -lto or extra
 * options on the driver backend), the driver's status of cuLinkCreate or of
 * reading the device's compute capability, CUS_ERROR_OUT_OF_HOST_MEMORY.
 * Thread-safe. */
CUS_API cus_status cus_linker_create(cus_context *ctx, const cus_link_options *opts,
                                     cus_linker **out);

/* Takes a reference to linker (NULL: none) and returns linker. Thread-safe. */
CUS_API cus_linker *cus_linker_ref(cus_linker *linker);
/* Drops a reference (NULL: nothing); the last one frees the backend's state
 * (nvJitLinkDestroy, or cuLinkDestroy with the context current; a failure
 * goes to the destroy handler) and the cubin. Returns NULL. Thread-safe. */
CUS_API cus_linker *cus_linker_unref(cus_linker *linker);
CUS_DEFINE_AUTOPTR(cus_linker, cus_linker_unref)

/* Adds size bytes at data, of kind type, to the link; name (may be NULL)
 * names the input in logs. The data is copied or consumed by the backend
 * before the call returns. Errors: CUS_ERROR_INVALID_ARGUMENT (NULL linker
 * or data, size 0, an unknown type, a linker already completed or failed),
 * CUS_ERROR_NOT_SUPPORTED (LTO-IR on the driver backend), the backend's
 * status for a bad input (its error log in the message). A failed add leaves
 * the linker failed: later adds and cus_linker_complete fail. Thread-safe. */
CUS_API cus_status cus_linker_add_data(cus_linker *linker, cus_link_input type, const void *data,
                                       size_t size, const char *name);

/* Adds the file at path, as cus_linker_add_data; the backend reads it. An
 * unreadable file is the backend's error (nvJitLink: CUDA_ERROR_INVALID_IMAGE;
 * the driver: CUDA_ERROR_FILE_NOT_FOUND). Errors otherwise as
 * cus_linker_add_data. Thread-safe. */
CUS_API cus_status cus_linker_add_file(cus_linker *linker, cus_link_input type, const char *path);

/* Links what was added into one cubin: *cubin (may be NULL) receives it and
 * *size (may be NULL) its length. The cubin is the linker's, borrowed: valid
 * as long as the linker, copy it to keep it longer (it is copied out of the
 * backend's state, which the linker frees with itself). A second call returns the same
 * cubin. The info log is kept (cus_linker_info_log). Errors: the backend's
 * status (an unresolved symbol: CUDA_ERROR_UNKNOWN), with its error log in the
 * message; CUS_ERROR_INVALID_ARGUMENT for NULL or a failed linker;
 * CUS_ERROR_OUT_OF_HOST_MEMORY. Thread-safe. */
CUS_API cus_status cus_linker_complete(cus_linker *linker, const void **cubin, size_t *size);

/* Completes the link if it is not yet, and loads the cubin into the linker's
 * context (cus_module_load_data with jit, which may be NULL). The cubin is
 * an ordinary image: a context-independent library (cuLibraryLoadData) can
 * load it too, from cus_linker_complete's bytes. *out receives a
 * new reference. Errors: those of cus_linker_complete and
 * cus_module_load_data; CUS_ERROR_INVALID_ARGUMENT for a linker made without
 * a context. Thread-safe. */
CUS_API cus_status cus_linker_load(cus_linker *linker, const cus_jit_options *jit,
                                   cus_module **out);

/* The backend's error log of the last failure ("" when none or NULL linker),
 * valid until the linker's next call or its end. Thread-safe. */
CUS_API const char *cus_linker_error_log(const cus_linker *linker);

/* The backend's info log of the completed link ("" before, when it wrote
 * none, or NULL linker), valid as long as the linker. Thread-safe. */
CUS_API const char *cus_linker_info_log(const cus_linker *linker);

/* The backend the linker runs (never AUTO; AUTO for NULL). Thread-safe. */
CUS_API cus_link_backend cus_linker_backend(const cus_linker *linker);

/* The linker's context, borrowed (NULL when made without one, or NULL
 * linker). Thread-safe. */
CUS_API cus_context *cus_linker_context(const cus_linker *linker);

/* Sets the nvJitLink library to open (a path or soname for dlopen; NULL: back
 * to CUSCOPE_LIBNVJITLINK, then libnvJitLink.so.13), and forgets the library
 * opened before (which stays mapped: it is never dlclose()d), so that the
 * next linker opens the new one. The string is copied. Errors:
 * CUS_ERROR_BUSY while a nvJitLink linker is alive; CUS_ERROR_OUT_OF_HOST_MEMORY.
 * Thread-safe. */
CUS_API cus_status cus_link_set_nvjitlink_library(const char *path);

/* Opens nvJitLink if it is not yet, and gives its version (nvJitLinkVersion;
 * either pointer may be NULL). Errors: CUS_ERROR_NOT_SUPPORTED where it does
 * not load (the message says what was tried and why), the status nvJitLink's
 * version call maps to. Thread-safe; makes no driver call. */
CUS_API cus_status cus_link_nvjitlink_version(int *major, int *minor);

/* Testing: makes the nth call from now (1: the next) of the nvJitLink
 * function named `function` ("nvJitLinkComplete", any of the 12 cuscope
 * calls) fail with NVJITLINK_ERROR_INTERNAL, once, without calling it
 * (nvJitLinkDestroy is called, so that nothing leaks, and its result
 * replaced). NULL or n 0 disarms. Not for production use. Thread-safe. */
CUS_API void cus_debug_fail_nvjitlink(const char *function, unsigned long n);

#ifdef __cplusplus
}
#endif

#endif
