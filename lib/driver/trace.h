/* Internal: the driver-call trace (CUSCOPE_TRACE). trace.c reads the
 * variable and writes the lines; the wrappers that call it are generated
 * (scripts/gen-trace.py, one per entry of entries.h) into trace_gen.c. */
#ifndef CUSCOPE_LIB_DRIVER_TRACE_H
#define CUSCOPE_LIB_DRIVER_TRACE_H

#include <stdbool.h>
#include <stdint.h>

#include "../internal.h"

/* Swaps the wrappers into t (its non-NULL entries) when CUSCOPE_TRACE asks
 * for a trace; else leaves t alone, and the calls cost nothing more. */
CUS_HIDDEN void cus_trace_install_(struct cus_driver_table *t);
/* Generated: the wrappers into t, the real functions kept. */
CUS_HIDDEN void cus_trace_wrap_table_(struct cus_driver_table *t);

CUS_HIDDEN uint64_t cus_trace_now_(void);
/* Whether a call with result r is written (all calls, or failures only). */
CUS_HIDDEN bool cus_trace_wants_(CUresult r);
/* One line: name(arguments) = result, and the time since t0. */
CUS_HIDDEN void cus_trace_line_(const char *name, CUresult r, uint64_t t0, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static inline const void *cus_trace_addr_(uintptr_t v)
{
    return (const void *)v;
}

#endif
