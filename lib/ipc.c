/* Legacy CUDA IPC: device memory and events shared with another process.
 *
 * Above memory.c and event.c: an imported buffer is a cus_buffer whose kind
 * brings its own acquire (cuIpcOpenMemHandle) and release
 * (cuIpcCloseMemHandle) through memory.c's ops hook, so that copies, fills,
 * launches and graph keeps treat it as any buffer; an imported event is a
 * plain cus_event (the driver destroys it with cuEventDestroy). Every call
 * is made with the object's context current: the driver documents none of
 * them as context-free, and cuIpcCloseMemHandle fails with no context
 * current (CUDA_ERROR_INVALID_CONTEXT, which UCX met). */
#include <string.h>

#include "cuscope/ipc.h"
#include "internal.h"

#define IPC_EVENT_FLAGS (CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING)

/* The entry points are optional: a driver that lacks one cannot share. */
#define IPC_REQUIRE(field)                                                     \
    do {                                                                       \
        if (CUS_UNLIKELY(!cus_drv_.field##_))                                  \
            return CUS_FAIL(CUS_ERROR_NOT_SUPPORTED, NULL,                     \
                            "the driver lacks " #field                         \
                            " (legacy CUDA IPC needs a Linux driver of CUDA 4.1 or newer)"); \
    } while (0)

static const char *kind_noun(cus_buffer_kind kind)
{
    switch (kind) {
    case CUS_BUFFER_DEVICE:
        return "device memory";
    case CUS_BUFFER_STREAM_ORDERED:
        return "stream-ordered memory (cus_buffer_alloc_async)";
    case CUS_BUFFER_MANAGED:
        return "managed memory (cus_buffer_alloc_managed)";
    case CUS_BUFFER_IMPORTED:
        return "memory imported from another process";
    case CUS_BUFFER_VIEW:
        return "a view of a virtual address reservation (cus_reservation_buffer)";
    case CUS_BUFFER_FOREIGN:
        return "foreign memory (cus_buffer_wrap)";
    case CUS_BUFFER_GRAPH:
        return "a graph allocation (cus_graph_add_alloc)";
    }
    return "memory";
}

/* --- memory ------------------------------------------------------------------ */

CUS_API cus_status cus_buffer_ipc_export(cus_buffer *buf, CUipcMemHandle *out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(buf && out);
    /* The driver refuses pool memory and managed memory with
     * CUDA_ERROR_INVALID_VALUE; an imported buffer is the exporter's to
     * share. Said here, with the reason, before any driver call. */
    cus_buffer_kind kind = cus_buffer_get_kind(buf);
    if (kind != CUS_BUFFER_DEVICE)
        return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,
                        "only device memory from cus_buffer_alloc can be exported; this buffer "
                        "is %s",
                        kind_noun(kind));
    IPC_REQUIRE(cuIpcGetMemHandle);
    CUipcMemHandle h;
    memset(&h, 0, sizeof h);
    CUS_IN_CONTEXT(cus_buffer_context(buf), "cuIpcGetMemHandle",
                   cus_drv_.cuIpcGetMemHandle_(&h, cus_buffer_ptr(buf)));
    *out = h;
    return CUS_SUCCESS;
}

typedef struct open_mem_args {
    CUipcMemHandle handle;
    unsigned int flags;
} open_mem_args;

static CUresult open_mem(const void *arg, CUdeviceptr *ptr)
{
    const open_mem_args *a = arg;
    return cus_drv_.cuIpcOpenMemHandle_(ptr, a->handle, a->flags);
}

static CUresult close_mem(CUdeviceptr ptr)
{
    return cus_drv_.cuIpcCloseMemHandle_(ptr);
}

static const cus_buffer_ops_ imported_ops = {
    .kind = CUS_BUFFER_IMPORTED,
    .acquire_call = "cuIpcOpenMemHandle",
    .release_call = "cuIpcCloseMemHandle",
    .acquire = open_mem,
    .release = close_mem,
    .what = "memory imported from another process",
};

CUS_API cus_status cus_buffer_ipc_import(cus_context *ctx, const CUipcMemHandle *handle,
                                         unsigned int flags, size_t bytes, cus_buffer **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(ctx && handle && out);
    if (bytes == 0)
        return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,
                        "a non-zero size is required: the handle carries none (send the "
                        "exporter's cus_buffer_size with it)");
    IPC_REQUIRE(cuIpcOpenMemHandle);
    IPC_REQUIRE(cuIpcCloseMemHandle);
    open_mem_args a = {*handle, flags ? flags : CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS};
    return cus_buffer_new_with_ops_(ctx, bytes, &imported_ops, &a, out, __func__);
}

/* --- events ------------------------------------------------------------------- */

CUS_API cus_status cus_event_ipc_export(cus_event *event, CUipcEventHandle *out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(event && out);
    unsigned int missing = IPC_EVENT_FLAGS & ~event->flags;
    if (missing)
        return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,
                        "cuIpcGetEventHandle needs an event created with CU_EVENT_INTERPROCESS | "
                        "CU_EVENT_DISABLE_TIMING; this one has flags 0x%x, without %s",
                        event->flags,
                        missing == IPC_EVENT_FLAGS ? "either"
                        : missing == CU_EVENT_INTERPROCESS ? "CU_EVENT_INTERPROCESS"
                                                            : "CU_EVENT_DISABLE_TIMING");
    IPC_REQUIRE(cuIpcGetEventHandle);
    CUipcEventHandle h;
    memset(&h, 0, sizeof h);
    CUS_IN_CONTEXT(event->ctx, "cuIpcGetEventHandle",
                   cus_drv_.cuIpcGetEventHandle_(&h, event->handle));
    *out = h;
    return CUS_SUCCESS;
}

static CUresult open_event(CUevent *out, const void *arg)
{
    return cus_drv_.cuIpcOpenEventHandle_(out, *(const CUipcEventHandle *)arg);
}

CUS_API cus_status cus_event_ipc_import(cus_context *ctx, const CUipcEventHandle *handle,
                                        cus_event **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(ctx && handle && out);
    IPC_REQUIRE(cuIpcOpenEventHandle);
    return cus_event_open_(ctx, IPC_EVENT_FLAGS, "cuIpcOpenEventHandle", open_event, handle, out,
                           __func__);
}
