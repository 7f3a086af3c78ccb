/* cuscope/ipc.h: sharing device memory and events between processes (the
 * driver's legacy CUDA IPC: cuIpcGetMemHandle, cuIpcOpenMemHandle,
 * cuIpcCloseMemHandle, cuIpcGetEventHandle, cuIpcOpenEventHandle).
 *
 * One process exports a handle, another imports it:
 *
 *   exporter                               importer
 *   cus_buffer_alloc(ctx, n, &buf)
 *   cus_buffer_ipc_export(buf, &h)   --h-->   cus_buffer_ipc_import(ctx2, &h, 0, n, &view)
 *   (keeps buf alive)                          ... copies, fills, launches on view ...
 *                                              cus_buffer_unref(view): cuIpcCloseMemHandle
 *   cus_buffer_unref(buf): cuMemFree, once the importer has closed
 *
 * What a second process must know:
 *  - A handle is plain bytes (CU_IPC_HANDLE_SIZE, 64): send it over any
 *    channel (a pipe, a socket, shared memory, a file) and use it as it came.
 *    It carries no size: the importer states it (below).
 *  - The exporting process keeps the memory alive (holds a reference to the
 *    buffer) until every importer has closed it, that is, released its last
 *    reference to the imported buffer. Freeing it earlier is undefined
 *    behaviour in the driver's words; a handle of memory already freed fails
 *    to open (the fake answers CUDA_ERROR_INVALID_VALUE, as for any handle
 *    it does not know). The same holds for an event: the importer's event
 *    stays usable as long as the exporter's lives.
 *  - The importer needs a context of its own on the same device, or on a
 *    device that can access the exporting one as a peer (cuscope asks the
 *    driver to enable peer access lazily, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS).
 *    Each process's handles may be opened by one context per device of
 *    another process.
 *  - An import within the exporting process fails: the driver refuses to
 *    open a handle in the process that made it, with
 *    CUDA_ERROR_INVALID_CONTEXT ("invalid device context"), for memory and
 *    for events alike. Within one process, use the buffer or event itself.
 *  - Legacy IPC works on Linux with devices that support unified addressing;
 *    elsewhere the driver's error comes back. It does not survive fork()
 *    (cuscope/driver.h): start the second process with exec(), or
 *    independently, and give it the handles.
 *
 * Ownership: the import functions return a new reference. An imported buffer
 * is a cus_buffer of kind CUS_BUFFER_IMPORTED, holding the importing context:
 * its last release closes the mapping (cuIpcCloseMemHandle, with its context
 * current), never frees the memory, which stays the exporter's. An imported
 * event is a cus_event of the importing context, destroyed with
 * cuEventDestroy at its last release, as the driver documents. Both are
 * ordinary objects otherwise: copies, fills, records, waits, launches, and
 * graph captures keep them alive as they keep any buffer or event
 * (cuscope/graph.h).
 *
 * Functions are thread-safe, return a cus_status, record the thread's last
 * error on failure, and leave out parameters untouched then. Each reaches the
 * driver with its object's context current. Where the driver lacks the entry
 * point, CUS_ERROR_NOT_SUPPORTED. Refused, as every driver call, inside a
 * host function (CUS_ERROR_IN_HOST_FUNCTION) and in a fork() child
 * (CUS_ERROR_FORKED).
 */
#ifndef CUSCOPE_IPC_H
#define CUSCOPE_IPC_H

#include <cuda.h>
#include <stddef.h>

#include "context.h"
#include "event.h"
#include "memory.h"
#include "object.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Writes to *out the handle another process opens buf with
 * (cuIpcGetMemHandle). Only device memory from cus_buffer_alloc (kind
 * CUS_BUFFER_DEVICE) can be exported: a stream-ordered, managed or imported
 * buffer is CUS_ERROR_INVALID_ARGUMENT, before any driver call (the driver
 * refuses the first two with CUDA_ERROR_INVALID_VALUE; memory of a pool made
 * for export goes through the pool's own calls). The handle names the whole
 * allocation. Keep buf alive until every importer has closed it. */
CUS_API cus_status cus_buffer_ipc_export(cus_buffer *buf, CUipcMemHandle *out);

/* Opens, in ctx, memory another process exported (cuIpcOpenMemHandle), and
 * gives it as a new buffer of kind CUS_BUFFER_IMPORTED. flags: 0 or
 * CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS (0 means it; other values go to the
 * driver as given). bytes is the caller's statement of the buffer's size,
 * since the handle carries none (send cus_buffer_size() with the handle):
 * copies and fills are bounds-checked against it like any buffer's
 * (CUS_ERROR_OUT_OF_RANGE), so it must not exceed the exported allocation,
 * which cuscope cannot check. bytes == 0 is CUS_ERROR_INVALID_ARGUMENT.
 * Errors: the driver's; CUDA_ERROR_INVALID_CONTEXT for a handle of this
 * process; CUDA_ERROR_INVALID_VALUE for bytes that are no handle (or of
 * memory already freed). Opening one handle twice in a context gives two
 * buffers of one mapping, closed when both are released (the driver counts
 * the opens). */
CUS_API cus_status cus_buffer_ipc_import(cus_context *ctx, const CUipcMemHandle *handle,
                                         unsigned int flags, size_t bytes, cus_buffer **out);

/* Writes to *out the handle another process opens event with
 * (cuIpcGetEventHandle). The event must have been created with
 * CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING: any other is
 * CUS_ERROR_INVALID_ARGUMENT, naming the flags, before any driver call. */
CUS_API cus_status cus_event_ipc_export(cus_event *event, CUipcEventHandle *out);

/* Opens, in ctx, an event another process exported (cuIpcOpenEventHandle),
 * as a new event of ctx (its flags: CU_EVENT_INTERPROCESS |
 * CU_EVENT_DISABLE_TIMING). Records on it and waits for it, in either
 * process, see one event. Errors: the driver's; CUDA_ERROR_INVALID_CONTEXT
 * for a handle of this process. */
CUS_API cus_status cus_event_ipc_import(cus_context *ctx, const CUipcEventHandle *handle,
                                        cus_event **out);

#ifdef __cplusplus
}
#endif

#endif
