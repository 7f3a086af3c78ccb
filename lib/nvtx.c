/* NVTX for profilers (Nsight Systems), through the toolkit's header-only
 * NVTX3: off unless CUSCOPE_NVTX asks.
 *
 *   CUSCOPE_NVTX=1        cus_*_set_name names contexts, streams and events
 *                         for the tool (nvtxNameCu*A)
 *   CUSCOPE_NVTX=ranges   that, and a range around each public cuscope call
 *                         (the function's name), on its thread
 *
 * Unset, no NVTX function is ever called: NVTX's own initialisation (which
 * reads NVTX_INJECTION64_PATH with getenv and dlopen()s it) never runs, and
 * the variable is read with secure_getenv, so a set-user-ID program cannot
 * be made to load an injection library. The ranges cost each public call one
 * load of a flag while off. */
#define _GNU_SOURCE /* secure_getenv */
#include <stdlib.h>
#include <string.h>

#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtCuda.h>

#include "internal.h"

bool cus_nvtx_names_;
bool cus_nvtx_ranges_;

__attribute__((constructor)) static void read_the_variable(void)
{
    const char *v = secure_getenv("CUSCOPE_NVTX");
    if (!v || !*v || strcmp(v, "0") == 0)
        return;
    cus_nvtx_names_ = true;
    cus_nvtx_ranges_ = strcmp(v, "ranges") == 0;
}

void cus_nvtx_push_(const char *function)
{
    nvtxRangePushA(function);
}

void cus_nvtx_pop_(void)
{
    nvtxRangePop();
}

void cus_nvtx_name_context_(CUcontext ctx, const char *name)
{
    if (cus_nvtx_names_)
        nvtxNameCuContextA(ctx, name);
}

void cus_nvtx_name_stream_(CUstream stream, const char *name)
{
    if (cus_nvtx_names_)
        nvtxNameCuStreamA(stream, name);
}

void cus_nvtx_name_event_(CUevent event, const char *name)
{
    if (cus_nvtx_names_)
        nvtxNameCuEventA(event, name);
}
