/* NVRTC, loaded at run time (rtc_loader.c), and the compile cache
 * (program_cache.c), for program.c. Nothing here is API. */
#ifndef CUSCOPE_LIB_RTC_INTERNAL_H
#define CUSCOPE_LIB_RTC_INTERNAL_H

#include <nvrtc.h>
#include <stdatomic.h>
#include <stdint.h>

#include "internal.h"

/* --- the NVRTC table (rtc_loader.c) -------------------------------------------
 * Every NVRTC function cuscope calls, with the toolkit header's own types.
 * Only program.c calls them, and only through CUS_NVRTC (below), so that a
 * test can fail each one (cus_debug_nvrtc_fail). */
#define CUS_NVRTC_ENTRIES(X)                                                   \
    X(nvrtcVersion)                                                            \
    X(nvrtcCreateProgram)                                                      \
    X(nvrtcDestroyProgram)                                                     \
    X(nvrtcAddNameExpression)                                                  \
    X(nvrtcCompileProgram)                                                     \
    X(nvrtcGetProgramLogSize)                                                  \
    X(nvrtcGetProgramLog)                                                      \
    X(nvrtcGetPTXSize)                                                         \
    X(nvrtcGetPTX)                                                             \
    X(nvrtcGetCUBINSize)                                                       \
    X(nvrtcGetCUBIN)                                                           \
    X(nvrtcGetLTOIRSize)                                                       \
    X(nvrtcGetLTOIR)                                                           \
    X(nvrtcGetLoweredName)

struct cus_nvrtc_table {
#define CUS_NVRTC_FIELD_(name) __typeof__(&name) name;
    CUS_NVRTC_ENTRIES(CUS_NVRTC_FIELD_)
#undef CUS_NVRTC_FIELD_
    __typeof__(&nvrtcGetErrorString) nvrtcGetErrorString;
};
CUS_HIDDEN extern struct cus_nvrtc_table cus_nvrtc_;

enum cus_nvrtc_index_ {
#define CUS_NVRTC_INDEX_(name) CUS_NVRTC_IDX_##name,
    CUS_NVRTC_ENTRIES(CUS_NVRTC_INDEX_)
#undef CUS_NVRTC_INDEX_
    CUS_NVRTC_COUNT_
};

/* Loads libnvrtc and fills cus_nvrtc_, once (thread-safe; a failed load is
 * tried again by the next call). Fails with CUS_ERROR_NOT_SUPPORTED, recorded
 * naming `function` and the library looked for. One acquire load once
 * loaded. */
CUS_HIDDEN extern atomic_bool cus_nvrtc_ready_;
CUS_HIDDEN cus_status cus_nvrtc_load_(const char *function);
static inline cus_status cus_nvrtc_ensure_(const char *function)
{
    if (CUS_LIKELY(atomic_load_explicit(&cus_nvrtc_ready_, memory_order_acquire)))
        return CUS_SUCCESS;
    return cus_nvrtc_load_(function);
}
/* The library the table came from, for messages ("" before a load). */
CUS_HIDDEN const char *cus_nvrtc_source_(void);

/* The injected failure of the call `index` (cus_debug_nvrtc_fail), or
 * NVRTC_SUCCESS: one relaxed load while nothing is armed. */
CUS_HIDDEN extern atomic_bool cus_nvrtc_fault_armed_;
CUS_HIDDEN nvrtcResult cus_nvrtc_fault_slow_(int index);
static inline nvrtcResult cus_nvrtc_fault_(int index)
{
    if (CUS_LIKELY(!atomic_load_explicit(&cus_nvrtc_fault_armed_, memory_order_relaxed)))
        return NVRTC_SUCCESS;
    return cus_nvrtc_fault_slow_(index);
}
/* One NVRTC call through the table, failed instead when a test asked. */
#define CUS_NVRTC(name, ...)                                                   \
    __extension__({                                                            \
        nvrtcResult cus_nr_ = cus_nvrtc_fault_(CUS_NVRTC_IDX_##name);          \
        if (CUS_LIKELY(cus_nr_ == NVRTC_SUCCESS))                              \
            cus_nr_ = cus_nvrtc_.name(__VA_ARGS__);                            \
        cus_nr_;                                                               \
    })

/* The cuscope status for an NVRTC result (program.h lists the mapping), and
 * its name ("NVRTC_ERROR_COMPILATION"). */
CUS_HIDDEN cus_status cus_nvrtc_status_(nvrtcResult r);
CUS_HIDDEN const char *cus_nvrtc_result_name_(nvrtcResult r);

/* --- compiled outputs, shared by programs and the cache (program_cache.c) ----
 * Immutable once made; counted, so that the cache and every program that
 * compiled the same inputs hold the same one. */
typedef struct cus_rtc_output_ {
    atomic_uint refs;
    char *ptx;           /* NUL-terminated, ptx_size with the NUL; NULL: none */
    size_t ptx_size;
    void *cubin;         /* NULL: none */
    size_t cubin_size;
    void *ltoir;         /* NULL: none */
    size_t ltoir_size;
    char *log;           /* never NULL */
    size_t nnames;
    char **expressions;  /* nnames each, the name expressions as given */
    char **lowered;      /* and their lowered (mangled) names */
    size_t bytes;        /* what the cache counts against its bound */
} cus_rtc_output_;

CUS_HIDDEN cus_rtc_output_ *cus_rtc_output_ref_(cus_rtc_output_ *o);
CUS_HIDDEN void cus_rtc_output_unref_(cus_rtc_output_ *o);

/* A 128-bit key of everything a compile reads (program_cache.c). */
typedef struct cus_rtc_key_ {
    uint64_t lo, hi;
} cus_rtc_key_;
/* FNV-1a 128 over length-prefixed fields: feed each field once, in order. */
typedef struct cus_rtc_hasher_ {
    __extension__ unsigned __int128 h;
} cus_rtc_hasher_;
CUS_HIDDEN void cus_rtc_hash_init_(cus_rtc_hasher_ *s);
CUS_HIDDEN void cus_rtc_hash_field_(cus_rtc_hasher_ *s, const void *data, size_t size);
CUS_HIDDEN void cus_rtc_hash_string_(cus_rtc_hasher_ *s, const char *str); /* NULL differs from "" */
CUS_HIDDEN cus_rtc_key_ cus_rtc_hash_end_(const cus_rtc_hasher_ *s);

/* The cache's single flight: the output for key, a new reference, when the
 * cache has it (waiting while another thread compiles the same key); else
 * NULL, and the caller must compile and then call cus_rtc_cache_finish_
 * (with its output, or NULL when it failed) exactly once, so that threads
 * waiting for the key go on. */
CUS_HIDDEN cus_rtc_output_ *cus_rtc_cache_begin_(cus_rtc_key_ key);
CUS_HIDDEN void cus_rtc_cache_finish_(cus_rtc_key_ key, cus_rtc_output_ *out);
/* Whether compiles use the cache (cus_program_cache_set_enabled). */
CUS_HIDDEN bool cus_rtc_cache_enabled_(void);

#endif
