/* The diagnosis of a launch configuration the driver refused: which limits
 * of the device and of the function the launch broke. Read only after the
 * refusal (launch.c's failure paths call it), so that a launch that succeeds
 * pays nothing; its own driver calls go straight to the table, record
 * nothing and poison nothing, and a limit that cannot be read is left out. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "launch_internal.h"

typedef struct diag_text {
    char buf[CUS_ERROR_MESSAGE_MAX_ - 256]; /* the record adds its prefix */
    size_t len;
    unsigned int found; /* limits named so far */
} diag_text;

CUS_PRINTF(2, 3) static void add(diag_text *t, const char *fmt, ...)
{
    if (t->len + 1 >= sizeof t->buf)
        return;
    int w = snprintf(t->buf + t->len, sizeof t->buf - t->len, "%s", t->found ? "; " : ": ");
    if (w > 0)
        t->len += (size_t)w;
    if (t->len + 1 >= sizeof t->buf) {
        t->len = sizeof t->buf - 1;
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    w = vsnprintf(t->buf + t->len, sizeof t->buf - t->len, fmt, ap);
    va_end(ap);
    if (w > 0)
        t->len += (size_t)w;
    if (t->len >= sizeof t->buf)
        t->len = sizeof t->buf - 1;
    t->found++;
}

/* A device attribute, or false when it cannot be read. */
static bool device_attr(const cus_function *fn, CUdevice_attribute a, int *v)
{
    int x = 0;
    if (cus_drv_.cuDeviceGetAttribute_(&x, a, fn->ctx->device.handle) != CUDA_SUCCESS)
        return false;
    *v = x;
    return true;
}

static bool function_attr(const cus_function *fn, CUfunction_attribute a, int *v)
{
    int x = 0;
    if (cus_drv_.cuFuncGetAttribute_(&x, a, fn->handle) != CUDA_SUCCESS)
        return false;
    *v = x;
    return true;
}

static const char axis[3] = {'x', 'y', 'z'};

static void dims(const cus_function *fn, const unsigned int d[3], const char *what,
                 const CUdevice_attribute limit[3], const char *const limit_name[3], diag_text *t)
{
    for (int i = 0; i < 3; i++) {
        int max = 0;
        if (d[i] == 0)
            add(t, "%s.%c is 0 (each dimension is at least 1)", what, axis[i]);
        else if (device_attr(fn, limit[i], &max) && max > 0 && d[i] > (unsigned int)max)
            add(t, "%s.%c %u exceeds the device's %d (%s)", what, axis[i], d[i], max,
                limit_name[i]);
    }
}

static void threads(const cus_function *fn, const unsigned int b[3], diag_text *t)
{
    unsigned long long n = (unsigned long long)b[0] * b[1] * b[2];
    if (n == 0)
        return;
    int dev = 0, fmax = 0;
    bool over_device = false;
    if (device_attr(fn, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &dev) && dev > 0 &&
        n > (unsigned long long)dev) {
        add(t, "%llu threads per block exceed the device's %d "
               "(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)",
            n, dev);
        over_device = true;
    }
    /* The function's own limit (its __launch_bounds__, .maxntid, .reqntid, and
     * its registers) when it is the lower one. */
    if (function_attr(fn, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &fmax) && fmax > 0 &&
        n > (unsigned long long)fmax && (!over_device || fmax < dev))
        add(t, "%llu threads per block exceed the function's %d "
               "(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)",
            n, fmax);
    /* Registers: allocated per warp, in units of 256. */
    int regs = 0, per_block = 0, warp = 32;
    if (function_attr(fn, CU_FUNC_ATTRIBUTE_NUM_REGS, &regs) && regs > 0 &&
        device_attr(fn, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, &per_block) &&
        per_block > 0) {
        int w = 0;
        if (device_attr(fn, CU_DEVICE_ATTRIBUTE_WARP_SIZE, &w) && w > 0)
            warp = w;
        unsigned long long warps = (n + (unsigned)warp - 1) / (unsigned)warp;
        unsigned long long need = warps * (((unsigned long long)regs * (unsigned)warp + 255) / 256 * 256);
        if (need > (unsigned long long)per_block)
            add(t, "%d registers per thread x %llu threads need %llu registers, above the "
                   "device's %d per block (CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK)",
                regs, n, need, per_block);
    }
}

static void shared(const cus_function *fn, unsigned int dynamic, diag_text *t)
{
    int fmax = 0, stat = 0, optin = 0;
    bool have_static = function_attr(fn, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, &stat);
    bool have_optin = device_attr(fn, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, &optin);
    unsigned long long total = (unsigned long long)dynamic + (have_static && stat > 0 ? (unsigned)stat : 0);
    if (have_optin && optin > 0 && total > (unsigned long long)optin) {
        if (have_static && stat > 0)
            add(t, "%d B of static and %u B of dynamic shared memory exceed the device's %d B "
                   "per block (CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)",
                stat, dynamic, optin);
        else
            add(t, "%u B of dynamic shared memory exceed the device's %d B per block "
                   "(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)",
                dynamic, optin);
        return;
    }
    if (function_attr(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, &fmax) && fmax >= 0 &&
        dynamic > (unsigned int)fmax)
        add(t, "%u B of dynamic shared memory exceed the function's %d B "
               "(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES; "
               "cus_function_set_max_dynamic_shared raises it up to %d B)",
            dynamic, fmax,
            have_optin ? optin - (have_static && stat > 0 ? stat : 0) : fmax);
}

static void cluster(const cus_function *fn, const unsigned int g[3], const cus_dim3 cd,
                    diag_text *t)
{
    const unsigned int c[3] = {cd.x, cd.y, cd.z};
    if (!c[0] && !c[1] && !c[2])
        return;
    int can = 0;
    if (device_attr(fn, CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH, &can) && !can) {
        add(t, "the device cannot launch clusters (CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH is 0)");
        return;
    }
    unsigned long long size = 1;
    for (int i = 0; i < 3; i++) {
        unsigned int v = c[i] ? c[i] : 1; /* as launch.c sends it */
        size *= v;
        if (g[i] % v != 0)
            add(t, "cluster.%c %u does not divide grid.%c %u", axis[i], v, axis[i], g[i]);
    }
    int nonportable = 0;
    unsigned int max = function_attr(fn, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
                                     &nonportable) && nonportable
                           ? 16
                           : 8;
    if (size > max)
        add(t, "a cluster of %llu blocks exceeds the %s %u%s", size,
            max == 8 ? "portable" : "non-portable", max,
            max == 8 ? " (CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED allows up to 16 "
                       "where the device can)"
                     : "");
    static const CUfunction_attribute req_attr[3] = {CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH,
                                                     CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT,
                                                     CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH};
    int req[3] = {0, 0, 0};
    bool have = true;
    for (int i = 0; i < 3 && have; i++)
        have = function_attr(fn, req_attr[i], &req[i]);
    if (have && (req[0] || req[1] || req[2]) &&
        ((unsigned)req[0] != c[0] || (unsigned)req[1] != c[1] || (unsigned)req[2] != c[2]))
        add(t, "cluster (%u,%u,%u) differs from the function's required (%d,%d,%d) "
               "(CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, _HEIGHT, _DEPTH)",
            c[0], c[1], c[2], req[0], req[1], req[2]);
}

cus_status cus_launch_diagnose_(const cus_function *fn, cus_dim3 grid, cus_dim3 block,
                                unsigned int shared_bytes, const cus_launch_config *config,
                                cus_status st, const char *driver_call)
{
    if (st != (cus_status)CUDA_ERROR_INVALID_VALUE &&
        st != (cus_status)CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES &&
        st != (cus_status)CUDA_ERROR_INVALID_CLUSTER_SIZE)
        return st;
    /* Only the driver's refusal of the launch itself: not a switch that
     * failed before it, nor a record another path made. */
    const cus_error *last = cus_last_error();
    if (!fn || last->status != st || strcmp(last->driver_call, driver_call) != 0)
        return st;
    if (config) {
        grid = config->grid;
        block = config->block;
        shared_bytes = config->shared_bytes;
    }
    const unsigned int g[3] = {grid.x, grid.y, grid.z}, b[3] = {block.x, block.y, block.z};
    diag_text t = {.len = 0};
    int w = snprintf(t.buf, sizeof t.buf, "%s<<<(%u,%u,%u), (%u,%u,%u), %u B>>>", fn->name, g[0],
                     g[1], g[2], b[0], b[1], b[2], shared_bytes);
    t.len = w > 0 && (size_t)w < sizeof t.buf ? (size_t)w : sizeof t.buf - 1;

    static const CUdevice_attribute block_limit[3] = {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X,
                                                      CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y,
                                                      CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z};
    static const char *const block_name[3] = {"CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X",
                                              "CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y",
                                              "CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z"};
    static const CUdevice_attribute grid_limit[3] = {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X,
                                                     CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y,
                                                     CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z};
    static const char *const grid_name[3] = {"CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X",
                                             "CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y",
                                             "CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z"};
    dims(fn, g, "grid", grid_limit, grid_name, &t);
    dims(fn, b, "block", block_limit, block_name, &t);
    threads(fn, b, &t);
    shared(fn, shared_bytes, &t);
    if (config)
        cluster(fn, g, config->cluster, &t);
    if (!t.found)
        return st; /* nothing we can name: the driver's record stands */
    return cus_fail_(st, last->function, driver_call, "%s; context %p", t.buf,
                     (void *)fn->ctx_handle);
}
