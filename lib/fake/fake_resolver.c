/* The resolver (the fake's cuGetProcAddress_v2), the entry table it serves,
 * hidden entries, and the error-string entry points. */
#include <string.h>

#include "fake_errors.h"
#include "fake_core.h"

const fake_entry fake_entries[FAKE_ENTRY_COUNT] = {
#define FAKE_ENTRY_ROW_(symbol, version, name, flags)                          \
    [FAKE_E_##name] = {#symbol, version, #name, flags, (void (*)(void))fake_##name},
    FAKE_ENTRIES(FAKE_ENTRY_ROW_)
#undef FAKE_ENTRY_ROW_
};

bool fake_entry_matches(fake_entry_id id, const char *name)
{
    return strcmp(fake_entries[id].name, name) == 0 || strcmp(fake_entries[id].symbol, name) == 0;
}

bool fake_entry_name_known(const char *name)
{
    for (int id = 0; id < FAKE_ENTRY_COUNT; id++)
        if (!(fake_entries[id].flags & FAKE_UNCOUNTED) && fake_entry_matches((fake_entry_id)id, name))
            return true;
    return false;
}

/* --- hidden entries ------------------------------------------------------------- */

static bool hidden[FAKE_ENTRY_COUNT];

void fake_resolver_reset_locked(void)
{
    memset(hidden, 0, sizeof hidden);
}

CUS_API cus_status cus_fake_hide_entry(const char *symbol)
{
    if (!symbol)
        return CUS_ERROR_INVALID_ARGUMENT;
    bool any = false;
    fake_lock();
    fake_ensure_configured_locked();
    /* A base symbol hides every variant; a log name (cuCtxCreate_v4) just that one. */
    for (int id = 0; id < FAKE_ENTRY_COUNT; id++) {
        if (fake_entry_matches((fake_entry_id)id, symbol)) {
            hidden[id] = true;
            any = true;
        }
    }
    fake_unlock();
    return any ? CUS_SUCCESS : CUS_ERROR_INVALID_ARGUMENT;
}

/* --- the host-function rule for the uncounted entry points ------------------------------
 * They skip the prologue, so they apply the rule themselves: a misuse, and
 * CUDA_ERROR_NOT_PERMITTED, without counting or logging the call. */
static CUresult refuse_in_host_function(const char *name)
{
    fake_lock();
    fake_ensure_configured_locked();
    fake_misuse_locked("CUDA call inside a host function (%s)", name);
    fake_unlock();
    return CUDA_ERROR_NOT_PERMITTED;
}

/* --- the resolver ------------------------------------------------------------------- */

CUS_API CUresult cus_fake_get_proc_address(const char *symbol, void **pfn, int cuda_version,
                                           cuuint64_t flags,
                                           CUdriverProcAddressQueryResult *symbol_status)
{
    const cuuint64_t known_flags =
        CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    if (fake_in_host_function())
        return refuse_in_host_function("cuGetProcAddress");
    if (!symbol || !pfn)
        return CUDA_ERROR_INVALID_VALUE;
    *pfn = NULL;
    if (flags & ~known_flags)
        return CUDA_ERROR_INVALID_VALUE;

    fake_lock();
    fake_ensure_configured_locked();
    CUresult r = CUDA_SUCCESS;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (cuda_version > fake_g.driver_version) {
        /* As the real driver: an error, and symbol_status left untouched. */
        r = CUDA_ERROR_INVALID_VALUE;
    } else {
        /* The newest variant at or below cuda_version, as the driver picks. */
        int best = -1;
        bool known = false, all_hidden = true;
        for (int id = 0; id < FAKE_ENTRY_COUNT; id++) {
            const fake_entry *e = &fake_entries[id];
            if (strcmp(e->symbol, symbol) != 0)
                continue;
            known = true;
            all_hidden = all_hidden && hidden[id];
            if (e->version <= cuda_version && (best < 0 || e->version > fake_entries[best].version))
                best = id;
        }
        /* A hidden symbol is absent at every version; a hidden variant is
         * absent where it would be picked (never replaced by an older one,
         * which would hand out the wrong signature). */
        if (!known || all_hidden || (best >= 0 && hidden[best]))
            status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        else if (best < 0)
            status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
        else {
            status = CU_GET_PROC_ADDRESS_SUCCESS;
            *pfn = (void *)(uintptr_t)fake_entries[best].fn;
        }
    }
    fake_unlock();
    if (r == CUDA_SUCCESS && symbol_status)
        *symbol_status = status;
    return r;
}

/* The fake resolving itself, as cuGetProcAddress("cuGetProcAddress") does. */
CUresult CUDAAPI fake_cuGetProcAddress(const char *symbol, void **pfn, int cuda_version,
                                       cuuint64_t flags,
                                       CUdriverProcAddressQueryResult *symbol_status)
{
    return cus_fake_get_proc_address(symbol, pfn, cuda_version, flags, symbol_status);
}

/* --- error strings: never counted, logged or failed, and need no cuInit ------------------ */

CUresult CUDAAPI fake_cuGetErrorName(CUresult error, const char **pstr)
{
    if (fake_in_host_function())
        return refuse_in_host_function("cuGetErrorName");
    if (!pstr)
        return CUDA_ERROR_INVALID_VALUE;
    switch ((int)error) {
#define FAKE_ERROR_NAME_(value, name, text)                                    \
    case value:                                                                \
        *pstr = #name;                                                         \
        return CUDA_SUCCESS;
        FAKE_ERRORS(FAKE_ERROR_NAME_)
#undef FAKE_ERROR_NAME_
    default:
        *pstr = NULL;
        return CUDA_ERROR_INVALID_VALUE;
    }
}

CUresult CUDAAPI fake_cuGetErrorString(CUresult error, const char **pstr)
{
    if (fake_in_host_function())
        return refuse_in_host_function("cuGetErrorString");
    if (!pstr)
        return CUDA_ERROR_INVALID_VALUE;
    switch ((int)error) {
#define FAKE_ERROR_STRING_(value, name, text)                                  \
    case value:                                                                \
        *pstr = text;                                                          \
        return CUDA_SUCCESS;
        FAKE_ERRORS(FAKE_ERROR_STRING_)
#undef FAKE_ERROR_STRING_
    default:
        *pstr = NULL;
        return CUDA_ERROR_INVALID_VALUE;
    }
}
