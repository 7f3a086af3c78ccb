/* The driver table: filled once by dlopen("libcuda.so.1") and
 * cuGetProcAddress_v2 at an explicit ABI version per entry point (entries.h),
 * or through an installed resolver (the fake driver, a tracer). */
#define _GNU_SOURCE /* secure_getenv */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "trace.h"

struct cus_driver_table cus_drv_;
atomic_bool cus_driver_ready_;

/* cus_status_name and _string of a code newer than cuscope's headers: the
 * loaded driver's own words, when one is loaded (and never in a fork()
 * child, where the driver is the parent's). */
static const char *describe_status(cus_status status, bool name)
{
    if (cus_is_forked_() || !atomic_load_explicit(&cus_driver_ready_, memory_order_acquire))
        return NULL;
    const char *text = NULL;
    CUresult r = name ? cus_drv_.cuGetErrorName_((CUresult)status, &text)
                      : cus_drv_.cuGetErrorString_((CUresult)status, &text);
    return r == CUDA_SUCCESS ? text : NULL;
}

__attribute__((constructor)) static void register_status_describer(void)
{
    cus_status_set_describer_(describe_status);
}
int cus_driver_version_;

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static cus_driver_resolver installed_resolver; /* NULL: libcuda */
/* The resolver the loaded table came from (cus_driver_proc asks it too);
 * set before cus_driver_ready_ is published. */
static cus_driver_resolver loaded_resolver;
static char *library_override;                 /* cus_driver_set_library() */
static void *libcuda_handle;                   /* never dlclose()d: the driver keeps threads */
static char source_desc[256];                  /* where the table came from, for messages */
static const cus_driver_hooks_ *hooks;          /* fork.c's, set from its constructor */

void cus_driver_set_hooks_(const cus_driver_hooks_ *h)
{
    hooks = h;
}

enum { REQUIRED = 1, OPTIONAL = 0 };

typedef struct entry_desc {
    const char *field;
    const char *symbol;
    int version;
    int required;
    size_t offset;
} entry_desc;

static const entry_desc entries[] = {
#define CUS_ENTRY_DESC_(field, symbol, version, need)                          \
    {#field, #symbol, version, need, offsetof(struct cus_driver_table, field##_)},
    CUS_DRIVER_ENTRIES(CUS_ENTRY_DESC_)
#undef CUS_ENTRY_DESC_
};
#define ENTRY_COUNT (sizeof entries / sizeof entries[0])

static void reset_locked(void)
{
    atomic_store_explicit(&cus_driver_ready_, false, memory_order_release);
    memset(&cus_drv_, 0, sizeof cus_drv_);
    cus_driver_version_ = 0;
}

/* Finds the resolver: the installed one, or cuGetProcAddress_v2 from libcuda. */
static cus_status open_source_locked(cus_driver_resolver *out)
{
    if (installed_resolver) {
        snprintf(source_desc, sizeof source_desc, "the installed driver resolver");
        *out = installed_resolver;
        return CUS_SUCCESS;
    }
    const char *path = library_override;
    /* secure_getenv: in a setuid or setgid program (or one with file
     * capabilities) the variable is ignored, so that whoever runs it cannot
     * make it load a library of their choosing with its privileges. */
    if (!path)
        path = secure_getenv("CUSCOPE_LIBCUDA");
    if (!path || !*path)
        path = "libcuda.so.1";
    snprintf(source_desc, sizeof source_desc, "%s", path);

    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        return cus_fail_(CUS_ERROR_DRIVER_NOT_FOUND, "cus_init", NULL,
                         "cannot load the CUDA driver '%s' (%s). This machine has no NVIDIA "
                         "driver, or it is not on the loader path: install the driver (nvidia-smi "
                         "should work), set CUSCOPE_LIBCUDA to libcuda.so.1's full path, or run "
                         "on the fake driver (cuscope/fake.h)",
                         path, why ? why : "unknown reason");
    }
    void *sym = dlsym(h, "cuGetProcAddress_v2");
    if (!sym) {
        bool is_cuda = dlsym(h, "cuInit") != NULL;
        dlclose(h);
        if (is_cuda)
            return cus_fail_(CUS_ERROR_DRIVER_TOO_OLD, "cus_init", NULL,
                             "the CUDA driver '%s' has no cuGetProcAddress_v2, so it predates "
                             "CUDA 12.0; cuscope needs a driver for CUDA 12.0 or newer: update "
                             "the NVIDIA driver",
                             path);
        return cus_fail_(CUS_ERROR_DRIVER_SYMBOL_MISSING, "cus_init", NULL,
                         "'%s' loaded but is not a CUDA driver (no cuInit, no "
                         "cuGetProcAddress_v2): point CUSCOPE_LIBCUDA at NVIDIA's libcuda.so.1",
                         path);
    }
    libcuda_handle = h;
    memcpy(out, &sym, sizeof sym);
    return CUS_SUCCESS;
}

static cus_status load_locked(void)
{
    if (hooks && hooks->before_load)
        CUS_TRY((cus_status)hooks->before_load());
    cus_driver_resolver resolve = NULL;
    CUS_TRY(open_source_locked(&resolve));
    /* From the first call into it on, a fork() child must keep off the
     * driver (fork.c). Told before the call: a fork during it counts. */
    if (hooks && hooks->before_first_call)
        hooks->before_first_call();

    /* The version first: it bounds which ABI versions may be asked for. */
    void *pfn = NULL;
    CUdriverProcAddressQueryResult qs = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult r = resolve("cuDriverGetVersion", &pfn, 2020, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &qs);
    if (r != CUDA_SUCCESS || !pfn)
        return cus_fail_(CUS_ERROR_DRIVER_SYMBOL_MISSING, "cus_init", "cuGetProcAddress",
                         "%s does not provide cuDriverGetVersion (result %s, status %d)",
                         source_desc, cus_status_name((cus_status)r), (int)qs);
    int version = 0;
    PFN_cuDriverGetVersion_v2020 get_version;
    memcpy(&get_version, &pfn, sizeof pfn); /* object to function pointer, without UB warnings */
    r = get_version(&version);
    if (r != CUDA_SUCCESS)
        return cus_fail_((cus_status)r, "cus_init", "cuDriverGetVersion",
                         "cannot read the version of %s", source_desc);
    if (version < CUSCOPE_MIN_DRIVER_VERSION)
        return cus_fail_(CUS_ERROR_DRIVER_TOO_OLD, "cus_init", NULL,
                         "%s implements CUDA driver API %d.%d; cuscope needs %d.%d or newer: "
                         "update the NVIDIA driver",
                         source_desc, version / 1000, version % 1000 / 10,
                         CUSCOPE_MIN_DRIVER_VERSION / 1000, CUSCOPE_MIN_DRIVER_VERSION % 1000 / 10);

    struct cus_driver_table table;
    memset(&table, 0, sizeof table);
    for (size_t i = 0; i < ENTRY_COUNT; i++) {
        const entry_desc *e = &entries[i];
        void *fn = NULL;
        /* Asking for a version above the driver's is an error, and a lower
         * one would hand back a different signature: skip instead. */
        if (e->version <= version) {
            qs = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
            r = resolve(e->symbol, &fn, e->version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &qs);
            if (r != CUDA_SUCCESS || qs != CU_GET_PROC_ADDRESS_SUCCESS)
                fn = NULL;
        }
        if (!fn && e->required)
            return cus_fail_(CUS_ERROR_DRIVER_SYMBOL_MISSING, "cus_init", "cuGetProcAddress",
                             "%s (driver API %d.%d) does not provide %s at ABI version %d, which "
                             "cuscope requires: update the NVIDIA driver",
                             source_desc, version / 1000, version % 1000 / 10, e->symbol,
                             e->version);
        memcpy((char *)&table + e->offset, &fn, sizeof fn);
    }

    r = table.cuInit_(0);
    if (r == CUDA_ERROR_NO_DEVICE)
        return cus_fail_((cus_status)r, "cus_init", "cuInit",
                         "the driver sees no CUDA device: check nvidia-smi and "
                         "CUDA_VISIBLE_DEVICES, or run on the fake driver (cuscope/fake.h)");
    if (r != CUDA_SUCCESS)
        return cus_fail_((cus_status)r, "cus_init", "cuInit", "initialising %s", source_desc);
    int count = 0;
    r = table.cuDeviceGetCount_(&count);
    if (r != CUDA_SUCCESS)
        return cus_fail_((cus_status)r, "cus_init", "cuDeviceGetCount", "counting devices");
    if (count == 0)
        return cus_fail_(CUDA_ERROR_NO_DEVICE, "cus_init", NULL,
                         "the driver loaded but reports no CUDA device: check nvidia-smi and "
                         "CUDA_VISIBLE_DEVICES, or run on the fake driver (cuscope/fake.h)");

    cus_trace_install_(&table);
    cus_drv_ = table;
    cus_driver_version_ = version;
    loaded_resolver = resolve;
    atomic_store_explicit(&cus_driver_ready_, true, memory_order_release);
    return CUS_SUCCESS;
}

CUS_API cus_status cus_init(void)
{
    if (atomic_load_explicit(&cus_driver_ready_, memory_order_acquire))
        return CUS_SUCCESS; /* never in a fork() child: its handler clears the flag */
    CUS_CHECK_NOT_FORKED();
    pthread_mutex_lock(&load_lock);
    cus_status st = CUS_SUCCESS;
    if (!atomic_load_explicit(&cus_driver_ready_, memory_order_relaxed))
        st = load_locked();
    pthread_mutex_unlock(&load_lock);
    return st;
}

int cus_driver_ensure_slow_(void)
{
    return cus_init();
}

CUS_API cus_status cus_driver_version(int *version)
{
    CUS_CHECK_NOT_FORKED();
    CUS_CHECK_ARG(version);
    CUS_TRY(cus_driver_ensure_());
    *version = cus_driver_version_;
    return CUS_SUCCESS;
}

static cus_status swap_source(cus_driver_resolver resolver, const char *path, bool set_path,
                              const char *function)
{
    char *copy = NULL;
    if (set_path && path && !(copy = cus_strdup_(path)))
        return cus_fail_(CUS_ERROR_OUT_OF_HOST_MEMORY, function, NULL, "copying the path");
    pthread_mutex_lock(&load_lock);
    size_t live = cus_debug_live_objects();
    if (live) {
        pthread_mutex_unlock(&load_lock);
        free(copy);
        return cus_fail_(CUS_ERROR_BUSY, function, NULL,
                         "%zu cuscope object(s) still alive; release them before swapping the "
                         "driver",
                         live);
    }
    if (set_path) {
        free(library_override);
        library_override = copy;
    } else {
        installed_resolver = resolver;
    }
    reset_locked();
    pthread_mutex_unlock(&load_lock);
    return CUS_SUCCESS;
}

CUS_API cus_status cus_driver_install(cus_driver_resolver resolver)
{
    CUS_CHECK_NOT_FORKED();
    return swap_source(resolver, NULL, false, __func__);
}

CUS_API cus_status cus_driver_set_library(const char *path)
{
    CUS_CHECK_NOT_FORKED();
    return swap_source(NULL, path, true, __func__);
}

CUS_API bool cus_driver_has(const char *entry)
{
    if (!entry || !atomic_load_explicit(&cus_driver_ready_, memory_order_acquire))
        return false;
    for (size_t i = 0; i < ENTRY_COUNT; i++) {
        if (strcmp(entries[i].field, entry) == 0) {
            void *fn;
            memcpy(&fn, (const char *)&cus_drv_ + entries[i].offset, sizeof fn);
            return fn != NULL;
        }
    }
    return false;
}

CUS_API cus_status cus_driver_proc(const char *name, int version, void **fn)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(name && fn && version > 0);
    CUS_TRY(cus_driver_ensure_());
    if (version > cus_driver_version_)
        return CUS_FAIL(CUS_ERROR_NOT_SUPPORTED, "cuGetProcAddress",
                        "%s at ABI version %d: the loaded driver implements driver API %d.%d",
                        name, version, cus_driver_version_ / 1000, cus_driver_version_ % 1000 / 10);
    void *p = NULL;
    CUdriverProcAddressQueryResult qs = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult r = loaded_resolver(name, &p, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &qs);
    if (r != CUDA_SUCCESS || qs != CU_GET_PROC_ADDRESS_SUCCESS || !p)
        return CUS_FAIL(CUS_ERROR_NOT_SUPPORTED, "cuGetProcAddress",
                        "%s does not provide %s at ABI version %d (%s)", source_desc, name,
                        version,
                        qs == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                            ? "a version this driver does not have"
                            : r != CUDA_SUCCESS ? cus_status_name((cus_status)r)
                                                : "no entry point of that name");
    *fn = p;
    return CUS_SUCCESS;
}

/* The fork() child's hook (fork.c registers it): the lock may have been held by a parent
 * thread mid-load; and in a forked child the table is marked unloaded, so
 * that cus_driver_ensure_() falls through to cus_init(), which refuses,
 * cus_driver_has() says false, and cus_status_name() asks no driver. The
 * table itself stays (nothing calls through it). */
void cus_loader_atfork_child_(bool forked)
{
    pthread_mutex_init(&load_lock, NULL);
    if (forked)
        atomic_store_explicit(&cus_driver_ready_, false, memory_order_relaxed);
}
