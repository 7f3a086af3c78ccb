/* NVRTC, loaded at run time: dlopen of its versioned soname (or
 * CUSCOPE_LIBNVRTC, or the path cus_nvrtc_set_library set), its functions
 * resolved once, and the failures tests inject into them. A program linked
 * against cuscope starts without libnvrtc; only a compile then fails. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "cuscope/program.h"
#include "rtc_internal.h"
#include "toolkit_lib.h"

struct cus_nvrtc_table cus_nvrtc_;
atomic_bool cus_nvrtc_ready_;

/* Newest first. NVRTC 12 has every function cuscope calls, with the same
 * signatures; NVRTC 11 lacks the LTO-IR calls, and an unversioned
 * libnvrtc.so is a development link that may point at any of them: neither
 * is tried (CUSCOPE_LIBNVRTC may still name one, and the version check
 * refuses what is older than 12). */
static const char *const sonames[] = {"libnvrtc.so.13", "libnvrtc.so.12", NULL};
#define NVRTC_MIN_MAJOR 12

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
atomic_bool cus_nvrtc_fault_armed_;
static pthread_mutex_t fault_lock = PTHREAD_MUTEX_INITIALIZER;
static char *library_override; /* cus_nvrtc_set_library */
static char source[512];       /* the loaded library, or what was tried */

static const char *const names[] = {
#define NAME_(name) #name,
    CUS_NVRTC_ENTRIES(NAME_)
#undef NAME_
};

const char *cus_nvrtc_source_(void)
{
    return atomic_load_explicit(&cus_nvrtc_ready_, memory_order_acquire) ? source : "";
}

static cus_status load_locked(const char *function)
{
    char tried[sizeof source];
    /* Never dlclose()d: outputs are copied out, but a reload after
     * cus_nvrtc_set_library must not pull a library from under a compile
     * of another thread that the caller promised not to race. */
    void *h = cus_toolkit_lib_open_(library_override, "CUSCOPE_LIBNVRTC", sonames, tried,
                                    sizeof tried);
    if (!h)
        return cus_fail_(CUS_ERROR_NOT_SUPPORTED, function, NULL,
                         "cannot load NVRTC, the CUDA run-time compiler: tried %s. Install the "
                         "CUDA toolkit's NVRTC (12 or newer), or set CUSCOPE_LIBNVRTC to "
                         "libnvrtc.so.13's full path",
                         tried);
    struct cus_nvrtc_table t;
    memset(&t, 0, sizeof t);
    /* The fields are the entries' function pointers, in the same order. */
    for (size_t i = 0; i < CUS_NVRTC_COUNT_; i++) {
        void *fn = dlsym(h, names[i]);
        if (!fn)
            return cus_fail_(CUS_ERROR_NOT_SUPPORTED, function, NULL,
                             "'%s' is not NVRTC 12 or newer: it has no %s", tried, names[i]);
        memcpy((char *)&t + i * sizeof fn, &fn, sizeof fn);
    }
    void *fn = dlsym(h, "nvrtcGetErrorString");
    if (!fn)
        return cus_fail_(CUS_ERROR_NOT_SUPPORTED, function, NULL,
                         "'%s' is not NVRTC: it has no nvrtcGetErrorString", tried);
    memcpy(&t.nvrtcGetErrorString, &fn, sizeof fn);
    int major = 0, minor = 0;
    nvrtcResult r = t.nvrtcVersion(&major, &minor);
    if (r != NVRTC_SUCCESS || major < NVRTC_MIN_MAJOR)
        return cus_fail_(CUS_ERROR_NOT_SUPPORTED, function, "nvrtcVersion",
                         "'%s' is NVRTC %d.%d (%s); cuscope needs NVRTC %d or newer", tried,
                         major, minor, t.nvrtcGetErrorString(r), NVRTC_MIN_MAJOR);
    cus_nvrtc_ = t;
    memcpy(source, tried, sizeof source);
    atomic_store_explicit(&cus_nvrtc_ready_, true, memory_order_release);
    return CUS_SUCCESS;
}

cus_status cus_nvrtc_load_(const char *function)
{
    CUS_LOCK_SCOPE(&load_lock);
    if (atomic_load_explicit(&cus_nvrtc_ready_, memory_order_relaxed))
        return CUS_SUCCESS;
    return load_locked(function);
}

CUS_API cus_status cus_nvrtc_set_library(const char *path)
{
    CUS_CHECK_NOT_FORKED();
    char *copy = NULL;
    if (path && !(copy = cus_strdup_(path)))
        return CUS_FAIL(CUS_ERROR_OUT_OF_HOST_MEMORY, NULL, "copying the path");
    CUS_LOCK_SCOPE(&load_lock);
    free(library_override);
    library_override = copy;
    atomic_store_explicit(&cus_nvrtc_ready_, false, memory_order_release);
    return CUS_SUCCESS;
}

CUS_API cus_status cus_nvrtc_version(int *major, int *minor)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(major && minor);
    CUS_TRY(cus_nvrtc_ensure_(__func__));
    int ma = 0, mi = 0;
    nvrtcResult r = CUS_NVRTC(nvrtcVersion, &ma, &mi);
    if (r != NVRTC_SUCCESS)
        return CUS_FAIL(cus_nvrtc_status_(r), "nvrtcVersion", "%s: %s", source,
                        cus_nvrtc_result_name_(r));
    *major = ma;
    *minor = mi;
    return CUS_SUCCESS;
}

CUS_API const char *cus_nvrtc_library(void)
{
    return cus_nvrtc_source_();
}

/* fork(): a parent thread may have held a lock mid-load or mid-arm. */
static void atfork_child(bool forked)
{
    (void)forked;
    pthread_mutex_init(&load_lock, NULL);
    pthread_mutex_init(&fault_lock, NULL);
}

__attribute__((constructor)) static void register_fork_hook(void)
{
    cus_fork_register_child_hook_(atfork_child);
}

/* --- statuses ---------------------------------------------------------------- */

cus_status cus_nvrtc_status_(nvrtcResult r)
{
    switch (r) {
    case NVRTC_SUCCESS: return CUS_SUCCESS;
    case NVRTC_ERROR_COMPILATION: return (cus_status)CUDA_ERROR_INVALID_SOURCE;
    case NVRTC_ERROR_OUT_OF_MEMORY:
    case NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED: return CUS_ERROR_OUT_OF_HOST_MEMORY;
    case NVRTC_ERROR_INVALID_INPUT:
    case NVRTC_ERROR_INVALID_OPTION: return CUS_ERROR_INVALID_ARGUMENT;
    case NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID: return (cus_status)CUDA_ERROR_NOT_FOUND;
    case NVRTC_ERROR_BUILTIN_OPERATION_FAILURE: return CUS_ERROR_NOT_SUPPORTED;
    default: return (cus_status)CUDA_ERROR_UNKNOWN;
    }
}

const char *cus_nvrtc_result_name_(nvrtcResult r)
{
    /* NVRTC's own words when it is loaded (its names are the enum's) */
    if (atomic_load_explicit(&cus_nvrtc_ready_, memory_order_acquire))
        return cus_nvrtc_.nvrtcGetErrorString(r);
    return "an NVRTC error";
}

/* --- injected failures (cus_debug_nvrtc_fail) ---------------------------------- */

static int fault_index = -1;         /* under fault_lock */
static unsigned long fault_countdown; /* calls of it left before the one that fails */
static nvrtcResult fault_result;
static unsigned long fault_hits;

nvrtcResult cus_nvrtc_fault_slow_(int index)
{
    CUS_LOCK_SCOPE(&fault_lock);
    if (index != fault_index)
        return NVRTC_SUCCESS;
    if (fault_countdown > 1) {
        fault_countdown--;
        return NVRTC_SUCCESS;
    }
    fault_index = -1;
    fault_hits++;
    atomic_store_explicit(&cus_nvrtc_fault_armed_, false, memory_order_relaxed);
    return fault_result;
}

CUS_API cus_status cus_debug_nvrtc_fail(const char *call, unsigned long nth, int result)
{
    int index = -1;
    if (call) {
        for (size_t i = 0; i < CUS_NVRTC_COUNT_; i++)
            if (strcmp(call, names[i]) == 0)
                index = (int)i;
        if (index < 0 || nth == 0 || result == NVRTC_SUCCESS)
            return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,
                            "cannot fail %s (nth %lu, result %d): an NVRTC function cuscope "
                            "calls, nth from 1 and a result other than NVRTC_SUCCESS are needed",
                            call, nth, result);
    }
    CUS_LOCK_SCOPE(&fault_lock);
    fault_index = index;
    fault_countdown = nth;
    fault_result = (nvrtcResult)result;
    if (!call)
        fault_hits = 0;
    atomic_store_explicit(&cus_nvrtc_fault_armed_, index >= 0, memory_order_relaxed);
    return CUS_SUCCESS;
}

CUS_API unsigned long cus_debug_nvrtc_faults(void)
{
    CUS_LOCK_SCOPE(&fault_lock);
    return fault_hits;
}
