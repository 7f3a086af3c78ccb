/* The driver-call trace: with CUSCOPE_TRACE set, every driver call cuscope
 * makes is written as one line, its arguments, its result and the time it
 * took, by wrappers put into the loaded table (trace_gen.c). Functions
 * handed out by cus_driver_proc are the driver's own, untraced. Unset, the
 * table is the driver's and nothing is added.
 *
 *   CUSCOPE_TRACE=1 (or stderr)   every call, on stderr
 *   CUSCOPE_TRACE=errors          the calls that fail, on stderr
 *   CUSCOPE_TRACE=PATH            every call, appended to the file PATH
 *   CUSCOPE_TRACE=errors:PATH     the calls that fail, appended to PATH
 *
 * Read with secure_getenv (a set-user-ID program ignores it), once per load
 * of the table. A line is written with one fprintf, so lines of several
 * threads do not interleave. */
#define _GNU_SOURCE /* secure_getenv */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "trace.h"

static FILE *out;
static bool errors_only;
/* A line being written on this thread: a driver call its formatting makes
 * (a status name asked of the driver) is not traced in turn. */
static _Thread_local bool writing __attribute__((tls_model("initial-exec")));

uint64_t cus_trace_now_(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

bool cus_trace_wants_(CUresult r)
{
    return !writing && (!errors_only || r != CUDA_SUCCESS);
}

void cus_trace_line_(const char *name, CUresult r, uint64_t t0, const char *fmt, ...)
{
    double us = (double)(cus_trace_now_() - t0) / 1000.0;
    writing = true;
    char args[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    fprintf(out, "cuscope-trace: %s(%s) = %s (%d) in %.1f us\n", name, args,
            r == CUDA_SUCCESS ? "CUDA_SUCCESS" : cus_status_name((cus_status)r), (int)r, us);
    writing = false;
}

void cus_trace_install_(struct cus_driver_table *t)
{
    const char *v = secure_getenv("CUSCOPE_TRACE");
    if (!v || !*v || strcmp(v, "0") == 0)
        return;
    errors_only = false;
    if (strncmp(v, "errors", 6) == 0 && (v[6] == 0 || v[6] == ':')) {
        errors_only = true;
        v = v[6] ? v + 7 : "";
    }
    FILE *f = stderr;
    if (*v && strcmp(v, "1") != 0 && strcmp(v, "stderr") != 0) {
        f = fopen(v, "ae");
        if (f)
            setvbuf(f, NULL, _IOLBF, 0);
        else {
            fprintf(stderr, "cuscope: CUSCOPE_TRACE: cannot open '%s' for appending: tracing to "
                            "stderr\n",
                    v);
            f = stderr;
        }
    }
    if (out && out != stderr && out != f)
        fclose(out); /* a reload (another driver installed) */
    out = f;
    fprintf(out, "cuscope-trace: tracing %s\n",
            errors_only ? "the driver calls that fail" : "every driver call");
    cus_trace_wrap_table_(t);
}
