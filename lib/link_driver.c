/* The driver backend: cuLinkCreate, cuLinkAddData, cuLinkAddFile,
 * cuLinkComplete and cuLinkDestroy, each made with the linker's context
 * current (cuLinkCreate links for the current context, and cuscope does not
 * count on the others finding it through the state). The driver writes its
 * logs into the buffers given to cuLinkCreate, and their sizes into its
 * optionValues array, during every later call, so both live with the
 * linker. The cubin cuLinkComplete returns is the link
 * state's: it is copied out; the state is destroyed with the linker (a
 * failure there goes to the destroy handler, which only a release may use). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "link_internal.h"

#define DRIVER_LOG_SIZE 16384

static CUjitInputType input_type(cus_link_input type)
{
    switch (type) {
    case CUS_LINK_INPUT_CUBIN: return CU_JIT_INPUT_CUBIN;
    case CUS_LINK_INPUT_PTX: return CU_JIT_INPUT_PTX;
    case CUS_LINK_INPUT_FATBIN: return CU_JIT_INPUT_FATBINARY;
    case CUS_LINK_INPUT_OBJECT: return CU_JIT_INPUT_OBJECT;
    case CUS_LINK_INPUT_LIBRARY: return CU_JIT_INPUT_LIBRARY;
    case CUS_LINK_INPUT_LTOIR: break; /* refused before (link.c) */
    }
    return CU_JIT_NUM_INPUT_TYPES;
}

/* Records the failure r of driver_call under sw, with the driver's error
 * log, which is kept. */
static cus_status fail_with_log(cus_linker *l, const cus_switch_ *sw, CUresult r,
                                const char *driver_call, const char *what)
{
    l->driver_error[DRIVER_LOG_SIZE - 1] = 0;
    cus_link_keep_error_log_(l, l->driver_error);
    cus_status st = cus_switch_check_(sw, r, driver_call); /* latches a sticky r */
    const char *log = l->error_log ? l->error_log : "";
    return cus_fail_(st, sw->function, driver_call, "%s%s%s", what, *log ? ": " : " (the driver "
                     "wrote no log)", log);
}

static cus_status drv_create(cus_linker *l, const cus_link_options *o, const char *function)
{
    if (!cus_drv_.cuLinkCreate_ || !cus_drv_.cuLinkAddData_ || !cus_drv_.cuLinkAddFile_ ||
        !cus_drv_.cuLinkComplete_ || !cus_drv_.cuLinkDestroy_)
        return cus_fail_(CUS_ERROR_NOT_SUPPORTED, function, NULL,
                         "the driver does not provide cuLinkCreate and the other cuLink* entry "
                         "points (CUDA 6.5 and later do)");
    cus_autofree char *err = cus_calloc_(1, DRIVER_LOG_SIZE);
    cus_autofree char *info = cus_calloc_(1, DRIVER_LOG_SIZE);
    if (!err || !info)
        return cus_fail_(CUS_ERROR_OUT_OF_HOST_MEMORY, function, NULL, "allocating link logs");
    /* In the linker, not on this stack: the driver writes the log sizes
     * back into values during every later call (link_internal.h). */
    CUjit_option *keys = l->driver_keys;
    void **values = l->driver_values;
    unsigned int n = 0;
#define OPT(k, v) (keys[n] = (k), values[n] = (void *)(uintptr_t)(v), n++)
    OPT(CU_JIT_ERROR_LOG_BUFFER, err);
    OPT(CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, DRIVER_LOG_SIZE);
    OPT(CU_JIT_INFO_LOG_BUFFER, info);
    OPT(CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, DRIVER_LOG_SIZE);
    if (o->arch)
        OPT(CU_JIT_TARGET, o->arch); /* CU_TARGET_COMPUTE_90 is 90 */
    if (o->set_level)
        OPT(CU_JIT_OPTIMIZATION_LEVEL, o->optimization_level);
    if (o->line_info)
        OPT(CU_JIT_GENERATE_LINE_INFO, 1);
    if (o->debug_info)
        OPT(CU_JIT_GENERATE_DEBUG_INFO, 1);
#undef OPT
    CUlinkState state = NULL;
    CUS_IN_CONTEXT_AS(function, l->ctx, "cuLinkCreate",
                      cus_drv_.cuLinkCreate_(n, keys, values, &state));
    l->handle = state;
    l->driver_error = cus_steal(&err);
    l->driver_info = cus_steal(&info);
    return CUS_SUCCESS;
}

static cus_status drv_add_data(cus_linker *l, cus_link_input type, const void *data, size_t size,
                               const char *name, const char *function)
{
    CUS_SWITCH_AS(sw, l->ctx, function);
    CUS_TRY(sw_status);
    l->driver_error[0] = 0;
    /* The driver only reads data (its prototype predates const). */
    CUresult r = cus_drv_.cuLinkAddData_((CUlinkState)l->handle, input_type(type),
                                         (void *)(uintptr_t)data, size, name, 0, NULL, NULL);
    if (!r)
        return CUS_SUCCESS;
    char what[300];
    snprintf(what, sizeof what, "adding %s (%zu bytes)", name ? name : "an input", size);
    return fail_with_log(l, &sw, r, "cuLinkAddData", what);
}

static cus_status drv_add_file(cus_linker *l, cus_link_input type, const char *path,
                               const char *function)
{
    CUS_SWITCH_AS(sw, l->ctx, function);
    CUS_TRY(sw_status);
    l->driver_error[0] = 0;
    CUresult r = cus_drv_.cuLinkAddFile_((CUlinkState)l->handle, input_type(type), path, 0,
                                         NULL, NULL);
    if (!r)
        return CUS_SUCCESS;
    char what[300];
    snprintf(what, sizeof what, "adding the file %s", path);
    return fail_with_log(l, &sw, r, "cuLinkAddFile", what);
}

static CUresult destroy_call(void *state)
{
    return cus_drv_.cuLinkDestroy_((CUlinkState)state);
}


static cus_status drv_complete(cus_linker *l, const char *function)
{
    void *out = NULL;
    size_t size = 0;
    {
        CUS_SWITCH_AS(sw, l->ctx, function);
        CUS_TRY(sw_status);
        l->driver_error[0] = 0;
        CUresult r = cus_drv_.cuLinkComplete_((CUlinkState)l->handle, &out, &size);
        if (r)
            return fail_with_log(l, &sw, r, "cuLinkComplete", "linking");
    }
    cus_autofree void *cubin = cus_malloc_(size ? size : 1);
    if (!cubin)
        return cus_fail_(CUS_ERROR_OUT_OF_HOST_MEMORY, function, NULL,
                         "copying the linked cubin (%zu bytes)", size);
    memcpy(cubin, out, size);
    l->driver_info[DRIVER_LOG_SIZE - 1] = 0;
    if (!cus_link_copy_log_(&l->info_log, l->driver_info))
        return cus_fail_(CUS_ERROR_OUT_OF_HOST_MEMORY, function, NULL, "copying the info log");
    l->cubin = cus_steal(&cubin);
    l->cubin_size = size;
    return CUS_SUCCESS;
}

static void drv_destroy(cus_linker *l)
{
    void *state = l->handle;
    l->handle = NULL;
    cus_destroy_in_context_(l->ctx, "cus_linker_unref", "cuLinkDestroy", destroy_call, state,
                            "a link state");
}

const cus_link_ops_ cus_link_driver_ops_ = {
    .backend = CUS_LINK_BACKEND_DRIVER,
    .create = drv_create,
    .add_data = drv_add_data,
    .add_file = drv_add_file,
    .complete = drv_complete,
    .destroy = drv_destroy,
};
