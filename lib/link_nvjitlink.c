/* The nvJitLink backend: libnvJitLink opened at run time (toolkit_lib.c),
 * its calls through a table of function pointers that a test can fail one
 * by one (cus_debug_fail_nvjitlink). nvJitLink's own types are declared
 * here, as its header (nvJitLink.h, CUDA 12.0 on) defines them, so that
 * building cuscope does not need it. */
#include <stdio.h>
#include <string.h>

#include "link_internal.h"
#include "toolkit_lib.h"

typedef struct nvJitLink *nj_handle;
typedef int nj_result; /* nvJitLinkResult */
enum {
    NJ_SUCCESS = 0,
    NJ_ERROR_UNRECOGNIZED_OPTION,
    NJ_ERROR_MISSING_ARCH,
    NJ_ERROR_INVALID_INPUT,
    NJ_ERROR_PTX_COMPILE,
    NJ_ERROR_NVVM_COMPILE,
    NJ_ERROR_INTERNAL,
    NJ_ERROR_THREADPOOL,
    NJ_ERROR_UNRECOGNIZED_INPUT,
    NJ_ERROR_FINALIZE,
    NJ_ERROR_NULL_INPUT,
    NJ_ERROR_INCOMPATIBLE_OPTIONS,
    NJ_ERROR_INCORRECT_INPUT_TYPE,
    NJ_ERROR_ARCH_MISMATCH,
    NJ_ERROR_OUTDATED_LIBRARY,
    NJ_ERROR_MISSING_FATBIN,
    NJ_ERROR_UNRECOGNIZED_ARCH,
    NJ_ERROR_UNSUPPORTED_ARCH,
    NJ_ERROR_LTO_NOT_ENABLED,
};
/* nvJitLinkInputType: the same numbers as cus_link_input (CUBIN 1 ... LIBRARY 6). */

/* The calls, in the order of `names`. The unversioned names: libnvJitLink
 * exports them beside the versioned ones its header's inline functions call
 * (__nvJitLinkCreate_13_0), and they stay across minor versions. */
#define NJ_CALLS(X)                                                            \
    X(Create, nj_result (*)(nj_handle *, uint32_t, const char **))             \
    X(Destroy, nj_result (*)(nj_handle *))                                     \
    X(AddData, nj_result (*)(nj_handle, int, const void *, size_t, const char *)) \
    X(AddFile, nj_result (*)(nj_handle, int, const char *))                    \
    X(Complete, nj_result (*)(nj_handle))                                      \
    X(GetLinkedCubinSize, nj_result (*)(nj_handle, size_t *))                  \
    X(GetLinkedCubin, nj_result (*)(nj_handle, void *))                        \
    X(GetErrorLogSize, nj_result (*)(nj_handle, size_t *))                     \
    X(GetErrorLog, nj_result (*)(nj_handle, char *))                           \
    X(GetInfoLogSize, nj_result (*)(nj_handle, size_t *))                      \
    X(GetInfoLog, nj_result (*)(nj_handle, char *))                            \
    X(Version, nj_result (*)(unsigned int *, unsigned int *))

enum {
#define NJ_ID_(name, type) NJ_##name,
    NJ_CALLS(NJ_ID_)
#undef NJ_ID_
    NJ_COUNT
};

static const char *const names[NJ_COUNT] = {
#define NJ_NAME_(name, type) "nvJitLink" #name,
    NJ_CALLS(NJ_NAME_)
#undef NJ_NAME_
};

static union {
    void *ptr[NJ_COUNT];
    struct {
#define NJ_FIELD_(name, type) __typeof__(type) name;
        NJ_CALLS(NJ_FIELD_)
#undef NJ_FIELD_
    } fn;
} nj;

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_bool loaded;
static bool tried;          /* a load was attempted since the last reset */
static char why[1024];      /* the last failed load's reasons */
static char *override_path; /* cus_link_set_nvjitlink_library() */
static atomic_size_t live_linkers;
static const char *const sonames[] = {"libnvJitLink.so.13", NULL};

/* --- fault injection (cus_debug_fail_nvjitlink) ------------------------------ */

static atomic_bool fault_armed;
static pthread_mutex_t fault_lock = PTHREAD_MUTEX_INITIALIZER;
static int fault_call = -1;
static unsigned long fault_countdown;

CUS_API void cus_debug_fail_nvjitlink(const char *function, unsigned long n)
{
    CUS_LOCK_SCOPE(&fault_lock);
    fault_call = -1;
    for (int i = 0; function && n && i < NJ_COUNT; i++)
        if (strcmp(function, names[i]) == 0)
            fault_call = i;
    fault_countdown = n;
    atomic_store_explicit(&fault_armed, fault_call >= 0, memory_order_relaxed);
}

static bool fault_fires(int call)
{
    CUS_LOCK_SCOPE(&fault_lock);
    if (fault_call != call || --fault_countdown)
        return false;
    fault_call = -1;
    atomic_store_explicit(&fault_armed, false, memory_order_relaxed);
    return true;
}

/* Calls nj.fn.name(args), or fails it as armed (one relaxed load when not). */
#define NJ(name, ...)                                                          \
    (CUS_UNLIKELY(atomic_load_explicit(&fault_armed, memory_order_relaxed)) && \
             fault_fires(NJ_##name)                                            \
         ? NJ_ERROR_INTERNAL                                                   \
         : nj.fn.name(__VA_ARGS__))

/* --- loading ------------------------------------------------------------------ */

cus_status cus_nvjitlink_load_(const char *function, bool record)
{
    if (CUS_LIKELY(atomic_load_explicit(&loaded, memory_order_acquire)))
        return CUS_SUCCESS;
    CUS_LOCK_SCOPE(&load_lock);
    if (!atomic_load_explicit(&loaded, memory_order_relaxed) && !tried) {
        tried = true;
        char paths[768];
        void *h = cus_toolkit_lib_open_(override_path, "CUSCOPE_LIBNVJITLINK", sonames, paths,
                                    sizeof paths);
        const char *missing = h ? cus_toolkit_lib_resolve_(h, names, nj.ptr, NJ_COUNT) : NULL;
        if (!h)
            snprintf(why, sizeof why, "nvJitLink did not load: tried %s", paths);
        else if (missing)
            snprintf(why, sizeof why, "the nvJitLink library has no %s (nvJitLink from CUDA "
                     "12.0 on is needed)", missing);
        else
            atomic_store_explicit(&loaded, true, memory_order_release);
    }
    if (atomic_load_explicit(&loaded, memory_order_relaxed))
        return CUS_SUCCESS;
    if (!record)
        return CUS_ERROR_NOT_SUPPORTED;
    return cus_fail_(CUS_ERROR_NOT_SUPPORTED, function, NULL,
                     "%s. Install the CUDA toolkit's nvJitLink (libnvJitLink.so.13 on the loader "
                     "path), set CUSCOPE_LIBNVJITLINK to its path, or link with the driver "
                     "(CUS_LINK_BACKEND_DRIVER)", why);
}

CUS_API cus_status cus_link_set_nvjitlink_library(const char *path)
{
    CUS_CHECK_NOT_FORKED();
    char *copy = NULL;
    if (path && !(copy = cus_strdup_(path)))
        return CUS_FAIL(CUS_ERROR_OUT_OF_HOST_MEMORY, NULL, "copying the path");
    CUS_LOCK_SCOPE(&load_lock);
    size_t live = atomic_load(&live_linkers);
    if (live) {
        free(copy);
        return CUS_FAIL(CUS_ERROR_BUSY, NULL,
                        "%zu nvJitLink linker(s) still alive; release them first", live);
    }
    free(override_path);
    override_path = copy;
    atomic_store_explicit(&loaded, false, memory_order_release);
    tried = false;
    return CUS_SUCCESS;
}

static const char *result_name(nj_result r)
{
    static const char *const text[] = {
        "NVJITLINK_SUCCESS", "NVJITLINK_ERROR_UNRECOGNIZED_OPTION",
        "NVJITLINK_ERROR_MISSING_ARCH", "NVJITLINK_ERROR_INVALID_INPUT",
        "NVJITLINK_ERROR_PTX_COMPILE", "NVJITLINK_ERROR_NVVM_COMPILE",
        "NVJITLINK_ERROR_INTERNAL", "NVJITLINK_ERROR_THREADPOOL",
        "NVJITLINK_ERROR_UNRECOGNIZED_INPUT", "NVJITLINK_ERROR_FINALIZE",
        "NVJITLINK_ERROR_NULL_INPUT", "NVJITLINK_ERROR_INCOMPATIBLE_OPTIONS",
        "NVJITLINK_ERROR_INCORRECT_INPUT_TYPE", "NVJITLINK_ERROR_ARCH_MISMATCH",
        "NVJITLINK_ERROR_OUTDATED_LIBRARY", "NVJITLINK_ERROR_MISSING_FATBIN",
        "NVJITLINK_ERROR_UNRECOGNIZED_ARCH", "NVJITLINK_ERROR_UNSUPPORTED_ARCH",
        "NVJITLINK_ERROR_LTO_NOT_ENABLED",
    };
    return r >= 0 && (size_t)r < sizeof text / sizeof *text ? text[r] : "an unknown nvJitLink result";
}

/* nvJitLink's results as the driver's codes (link.h). */
static cus_status map_result(nj_result r)
{
    switch (r) {
    case NJ_ERROR_UNRECOGNIZED_OPTION:
    case NJ_ERROR_MISSING_ARCH:
    case NJ_ERROR_NULL_INPUT:
    case NJ_ERROR_INCOMPATIBLE_OPTIONS:
    case NJ_ERROR_UNRECOGNIZED_ARCH:
    case NJ_ERROR_LTO_NOT_ENABLED:
        return CUS_ERROR_INVALID_ARGUMENT;
    case NJ_ERROR_UNSUPPORTED_ARCH:
    case NJ_ERROR_OUTDATED_LIBRARY:
        return CUS_ERROR_NOT_SUPPORTED;
    case NJ_ERROR_INVALID_INPUT:
    case NJ_ERROR_UNRECOGNIZED_INPUT:
    case NJ_ERROR_INCORRECT_INPUT_TYPE:
    case NJ_ERROR_ARCH_MISMATCH:
    case NJ_ERROR_MISSING_FATBIN:
    case NJ_ERROR_NVVM_COMPILE:
        return (cus_status)CUDA_ERROR_INVALID_IMAGE;
    case NJ_ERROR_PTX_COMPILE:
        return (cus_status)CUDA_ERROR_INVALID_PTX;
    default: /* INTERNAL (an unresolved symbol, in 13.0), THREADPOOL, FINALIZE */
        return (cus_status)CUDA_ERROR_UNKNOWN;
    }
}

CUS_API cus_status cus_link_nvjitlink_version(int *major, int *minor)
{
    CUS_CHECK_NOT_FORKED();
    CUS_TRY(cus_nvjitlink_load_(__func__, true));
    unsigned int ma = 0, mi = 0;
    nj_result r = NJ(Version, &ma, &mi);
    if (r)
        return CUS_FAIL(map_result(r), "nvJitLinkVersion", "%s", result_name(r));
    if (major)
        *major = (int)ma;
    if (minor)
        *minor = (int)mi;
    return CUS_SUCCESS;
}

/* --- the backend --------------------------------------------------------------- */

/* The handle's error log, into l->error_log; on failure to read it, a note
 * of why into note[] (else ""). */
static void fetch_error_log(cus_linker *l, char *note, size_t note_size)
{
    note[0] = 0;
    size_t n = 0;
    nj_result r = NJ(GetErrorLogSize, l->handle, &n);
    if (r) {
        snprintf(note, note_size, " (its error log could not be read: nvJitLinkGetErrorLogSize "
                 "answered %s)", result_name(r));
        return;
    }
    cus_autofree char *log = cus_malloc_(n + 1);
    if (!log) {
        snprintf(note, note_size, " (no memory for its error log of %zu bytes)", n);
        return;
    }
    log[0] = 0;
    r = NJ(GetErrorLog, l->handle, log);
    if (r) {
        snprintf(note, note_size, " (its error log could not be read: nvJitLinkGetErrorLog "
                 "answered %s)", result_name(r));
        return;
    }
    log[n] = 0;
    cus_link_keep_error_log_(l, log);
}

/* Records the failure r of `call` on what, with the error log. */
static cus_status fail_with_log(cus_linker *l, nj_result r, const char *call, const char *what,
                                const char *function)
{
    char note[160];
    fetch_error_log(l, note, sizeof note);
    return cus_fail_(map_result(r), function, call, "%s: %s%s%s%s", what, result_name(r), note,
                     l->error_log ? ": " : "", l->error_log ? l->error_log : "");
}

static void free_handle(cus_linker *l, const char *function)
{
    nj_handle h = l->handle;
    l->handle = NULL;
    nj_result r = nj.fn.Destroy(&h);
    if (atomic_load_explicit(&fault_armed, memory_order_relaxed) && fault_fires(NJ_Destroy))
        r = NJ_ERROR_INTERNAL;
    if (r)
        cus_destroy_error_(map_result(r), function, "nvJitLinkDestroy", "freeing a linker: %s",
                           result_name(r));
    atomic_fetch_sub(&live_linkers, 1);
}

static cus_status nj_create(cus_linker *l, const cus_link_options *o, const char *function)
{
    size_t n = 0, cap = 6 + o->extra_count;
    cus_autofree const char **opts = cus_calloc_(cap, sizeof *opts);
    if (!opts)
        return cus_fail_(CUS_ERROR_OUT_OF_HOST_MEMORY, function, NULL, "allocating link options");
    char arch[32], level[16];
    snprintf(arch, sizeof arch, "-arch=sm_%d", l->arch);
    opts[n++] = arch;
    if (o->lto)
        opts[n++] = "-lto";
    if (o->set_level) {
        snprintf(level, sizeof level, "-O%d", o->optimization_level);
        opts[n++] = level;
    }
    if (o->line_info)
        opts[n++] = "-lineinfo";
    if (o->debug_info)
        opts[n++] = "-g";
    for (size_t i = 0; i < o->extra_count; i++)
        opts[n++] = o->extra[i];

    nj_handle h = NULL;
    nj_result r = NJ(Create, &h, (uint32_t)n, opts);
    if (r) {
        char shown[256] = "";
        for (size_t i = 0, used = 0; i < n && used + 1 < sizeof shown; i++, used = strlen(shown))
            snprintf(shown + used, sizeof shown - used, "%s%s", i ? " " : "", opts[i]);
        if (h) { /* a handle despite the failure: its log says which option */
            l->handle = h;
            atomic_fetch_add(&live_linkers, 1);
            char what[320];
            snprintf(what, sizeof what, "creating a linker with options %s", shown);
            cus_status st = fail_with_log(l, r, "nvJitLinkCreate", what, function);
            free_handle(l, function);
            free(l->error_log);
            l->error_log = NULL;
            return st;
        }
        return cus_fail_(map_result(r), function, "nvJitLinkCreate",
                         "creating a linker with options %s: %s", shown, result_name(r));
    }
    l->handle = h;
    atomic_fetch_add(&live_linkers, 1);
    return CUS_SUCCESS;
}

static cus_status nj_add_data(cus_linker *l, cus_link_input type, const void *data, size_t size,
                              const char *name, const char *function)
{
    nj_result r = NJ(AddData, l->handle, (int)type, data, size, name);
    if (!r)
        return CUS_SUCCESS;
    char what[300];
    snprintf(what, sizeof what, "adding %s (%zu bytes)", name ? name : "an input", size);
    return fail_with_log(l, r, "nvJitLinkAddData", what, function);
}

static cus_status nj_add_file(cus_linker *l, cus_link_input type, const char *path,
                              const char *function)
{
    nj_result r = NJ(AddFile, l->handle, (int)type, path);
    if (!r)
        return CUS_SUCCESS;
    char what[300];
    snprintf(what, sizeof what, "adding the file %s", path);
    return fail_with_log(l, r, "nvJitLinkAddFile", what, function);
}

static cus_status nj_complete(cus_linker *l, const char *function)
{
    nj_result r = NJ(Complete, l->handle);
    if (r)
        return fail_with_log(l, r, "nvJitLinkComplete", "linking", function);
    size_t size = 0, info_size = 0;
    if ((r = NJ(GetLinkedCubinSize, l->handle, &size)))
        return cus_fail_(map_result(r), function, "nvJitLinkGetLinkedCubinSize", "%s",
                         result_name(r));
    cus_autofree void *cubin = cus_malloc_(size ? size : 1);
    if (!cubin)
        return cus_fail_(CUS_ERROR_OUT_OF_HOST_MEMORY, function, NULL,
                         "allocating the linked cubin (%zu bytes)", size);
    if ((r = NJ(GetLinkedCubin, l->handle, cubin)))
        return cus_fail_(map_result(r), function, "nvJitLinkGetLinkedCubin", "%s",
                         result_name(r));
    if ((r = NJ(GetInfoLogSize, l->handle, &info_size)))
        return cus_fail_(map_result(r), function, "nvJitLinkGetInfoLogSize", "%s",
                         result_name(r));
    cus_autofree char *info = cus_malloc_(info_size + 1);
    if (!info)
        return cus_fail_(CUS_ERROR_OUT_OF_HOST_MEMORY, function, NULL,
                         "allocating the info log (%zu bytes)", info_size);
    info[0] = 0;
    if ((r = NJ(GetInfoLog, l->handle, info)))
        return cus_fail_(map_result(r), function, "nvJitLinkGetInfoLog", "%s", result_name(r));
    info[info_size] = 0;
    if (!cus_link_copy_log_(&l->info_log, info))
        return cus_fail_(CUS_ERROR_OUT_OF_HOST_MEMORY, function, NULL,
                         "copying the info log (%zu bytes)", info_size);
    l->cubin = cus_steal(&cubin);
    l->cubin_size = size;
    return CUS_SUCCESS; /* the handle goes with the linker: only a release reports to the handler */
}

static void nj_destroy(cus_linker *l)
{
    free_handle(l, "cus_linker_unref");
}

const cus_link_ops_ cus_link_nvjitlink_ops_ = {
    .backend = CUS_LINK_BACKEND_NVJITLINK,
    .create = nj_create,
    .add_data = nj_add_data,
    .add_file = nj_add_file,
    .complete = nj_complete,
    .destroy = nj_destroy,
};
