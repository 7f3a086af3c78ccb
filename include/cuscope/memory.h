/* cuscope/memory.h: device, stream-ordered, managed and host memory, and
 * copies between them.
 *
 * A cus_buffer is reference-counted device-accessible memory that holds its
 * context (and, when stream-ordered, its stream) alive:
 *   device          cus_buffer_alloc: cuMemAlloc, freed with cuMemFree;
 *   stream-ordered  cus_buffer_alloc_async: cuMemAllocAsync on a stream, and
 *                   freed on that same stream (cuMemFreeAsync) when the last
 *                   reference goes, so work queued before the release still
 *                   sees valid memory;
 *   managed         cus_buffer_alloc_managed: cuMemAllocManaged, usable from
 *                   the host through cus_buffer_host_ptr();
 *   imported        cus_buffer_ipc_import (cuscope/ipc.h): memory another
 *                   process exported, closed with cuIpcCloseMemHandle.
 * A cus_host_buffer is page-locked host memory: allocated (cuMemHostAlloc) or
 * registered (cuMemHostRegister over memory the caller owns and keeps alive).
 *
 * Copies and fills are bounds-checked against the buffers before any driver
 * call: a range past the end, or whose end overflows, fails with
 * CUS_ERROR_OUT_OF_RANGE and reaches no driver. Sizes computed from element
 * counts are overflow-checked (CUS_ERROR_OUT_OF_RANGE).
 *
 * Functions are thread-safe, return a cus_status, record the thread's last
 * error on failure, and leave out parameters untouched then. A buffer whose
 * context is poisoned frees its host-side record without driver calls.
 */
#ifndef CUSCOPE_MEMORY_H
#define CUSCOPE_MEMORY_H

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "context.h"
#include "object.h"
#include "status.h"
#include "stream.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Reference-counted device-accessible memory (above). */
typedef struct cus_buffer cus_buffer;
/* Reference-counted page-locked host memory (above). */
typedef struct cus_host_buffer cus_host_buffer;

/* What a buffer is, and how its last release frees it (cus_buffer_get_kind). */
typedef enum cus_buffer_kind {
    CUS_BUFFER_DEVICE,         /* cus_buffer_alloc: cuMemFree */
    CUS_BUFFER_STREAM_ORDERED, /* cus_buffer_alloc_async: cuMemFreeAsync on its stream */
    CUS_BUFFER_MANAGED,        /* cus_buffer_alloc_managed: cuMemFree */
    /* cus_buffer_ipc_import (cuscope/ipc.h): another process's memory,
     * closed (cuIpcCloseMemHandle) at the last release, never freed. */
    CUS_BUFFER_IMPORTED,
    CUS_BUFFER_VIEW,    /* not freed: a range of a reservation (cuscope/vmm.h): holds it */
    CUS_BUFFER_FOREIGN, /* not freed: cus_buffer_wrap, memory cuscope did not allocate */
    /* not freed: a graph allocation (cus_graph_add_alloc, cuscope/graph_memory.h),
     * freed by a free node or cus_graph_allocation_free */
    CUS_BUFFER_GRAPH,
} cus_buffer_kind;

/* bytes of device memory on ctx. bytes == 0 is CUS_ERROR_INVALID_ARGUMENT. */
CUS_API cus_status cus_buffer_alloc(cus_context *ctx, size_t bytes, cus_buffer **out);

/* count elements of elem_size bytes, the product overflow-checked. */
CUS_API cus_status cus_buffer_alloc_array(cus_context *ctx, size_t count, size_t elem_size,
                                          cus_buffer **out);
/* count elements of type: cus_buffer_alloc_array with sizeof(type). */
#define cus_buffer_alloc_n(ctx, type, count, out)                              \
    cus_buffer_alloc_array((ctx), (count), sizeof(type), (out))

/* Stream-ordered: allocated in stream order on stream, freed on it. */
CUS_API cus_status cus_buffer_alloc_async(cus_stream *stream, size_t bytes, cus_buffer **out);

/* Managed memory (CU_MEM_ATTACH_GLOBAL or CU_MEM_ATTACH_HOST; 0 means
 * CU_MEM_ATTACH_GLOBAL). */
CUS_API cus_status cus_buffer_alloc_managed(cus_context *ctx, size_t bytes, unsigned int flags,
                                            cus_buffer **out);

/* Foreign memory: a buffer over bytes of device memory at ptr that cuscope did
 * not allocate (cudaMalloc, another library, an import), so that it can be
 * launched on, copied, bounds-checked and kept alive by graphs like any
 * buffer (CUS_BUFFER_FOREIGN). cuscope never frees it: its owner keeps it
 * alive until the last reference, and every graph holding one, is gone. The
 * driver is asked where ptr lies (cuPointerGetAttribute: its device, and the
 * allocation's range), so a pointer of another device fails with
 * CUS_ERROR_CONTEXT_MISMATCH and a range past its allocation's end with
 * CUS_ERROR_OUT_OF_RANGE; a pointer the driver does not know fails with its
 * status (CUDA_ERROR_INVALID_VALUE). Errors: CUS_ERROR_INVALID_ARGUMENT (NULL,
 * ptr 0, bytes 0), those. Returns a new reference. Thread-safe. */
CUS_API cus_status cus_buffer_wrap(cus_context *ctx, CUdeviceptr ptr, size_t bytes,
                                   cus_buffer **out);

/* Adds a reference; NULL-safe; returns buf. */
CUS_API cus_buffer *cus_buffer_ref(cus_buffer *buf);
/* Drops a reference; NULL-safe; returns NULL. The last one frees the memory
 * as its kind says (cus_buffer_kind) and drops what the buffer holds. */
CUS_API cus_buffer *cus_buffer_unref(cus_buffer *buf);
CUS_DEFINE_AUTOPTR(cus_buffer, cus_buffer_unref)

/* The buffer's device address; 0 for NULL. No driver call. */
CUS_API CUdeviceptr cus_buffer_ptr(const cus_buffer *buf);
/* The buffer's size in bytes, which copies are checked against; 0 for NULL.
 * No driver call. */
CUS_API size_t cus_buffer_size(const cus_buffer *buf);
/* The buffer's kind. No driver call. */
CUS_API cus_buffer_kind cus_buffer_get_kind(const cus_buffer *buf);
/* The buffer's context, borrowed; NULL for NULL. No driver call. */
CUS_API cus_context *cus_buffer_context(const cus_buffer *buf);
/* The host address of a managed buffer; NULL for the other kinds. */
CUS_API void *cus_buffer_host_ptr(const cus_buffer *buf);

/* Managed memory: prefetches it to a device (CU_DEVICE_CPU for the host) on
 * a stream (cuMemPrefetchAsync). CUS_ERROR_INVALID_ARGUMENT for other kinds;
 * CUS_ERROR_NOT_SUPPORTED where the driver lacks the entry point. */
CUS_API cus_status cus_buffer_prefetch(cus_buffer *buf, CUdevice device, cus_stream *stream);
/* Managed memory: usage advice for a device (cuMemAdvise).
 * CUS_ERROR_INVALID_ARGUMENT for other kinds; CUS_ERROR_NOT_SUPPORTED where
 * the driver lacks the entry point. */
CUS_API cus_status cus_buffer_advise(cus_buffer *buf, CUmem_advise advice, CUdevice device);

/* Page-locked host memory of bytes with CU_MEMHOSTALLOC_* flags
 * (cuMemHostAlloc). *out receives a new reference. */
CUS_API cus_status cus_host_buffer_alloc(cus_context *ctx, size_t bytes, unsigned int flags,
                                         cus_host_buffer **out);
/* Page-locks [ptr, ptr + bytes), which the caller keeps alive until the last
 * reference is dropped (then it is unregistered). CU_MEMHOSTREGISTER_* flags.
 * *out receives a new reference. */
CUS_API cus_status cus_host_buffer_register(cus_context *ctx, void *ptr, size_t bytes,
                                            unsigned int flags, cus_host_buffer **out);
/* Adds a reference; NULL-safe; returns buf. */
CUS_API cus_host_buffer *cus_host_buffer_ref(cus_host_buffer *buf);
/* Drops a reference; NULL-safe; returns NULL. The last one frees the memory
 * (cuMemFreeHost) or unregisters it (cuMemHostUnregister). */
CUS_API cus_host_buffer *cus_host_buffer_unref(cus_host_buffer *buf);
CUS_DEFINE_AUTOPTR(cus_host_buffer, cus_host_buffer_unref)
/* The host address of the memory; NULL for NULL. No driver call. */
CUS_API void *cus_host_buffer_data(const cus_host_buffer *buf);
/* Its size in bytes; 0 for NULL. No driver call. */
CUS_API size_t cus_host_buffer_size(const cus_host_buffer *buf);
/* Whether it is registered memory (cus_host_buffer_register) rather than
 * allocated. No driver call. */
CUS_API bool cus_host_buffer_is_registered(const cus_host_buffer *buf);

/* --- copies: bounds-checked first; _async forms queue on a stream --------- */

/* Copies bytes from host memory src into dst at dst_offset, in dst's
 * context's legacy default stream, after the work before it there; returns
 * once src may be reused (the driver has read it), when the write to dst may
 * still be in flight for pageable src (the driver's rule): work of the
 * context's blocking streams comes after it, a non-blocking stream's does
 * not (copy on that stream, or synchronize). */
CUS_API cus_status cus_copy_to_device(cus_buffer *dst, size_t dst_offset, const void *src,
                                      size_t bytes);
/* Copies bytes of src from src_offset into host memory dst, after the work
 * before it in src's context's legacy stream (and so its blocking streams'),
 * and returns when the bytes are in dst. */
CUS_API cus_status cus_copy_to_host(void *dst, cus_buffer *src, size_t src_offset, size_t bytes);
/* Between two buffers, in the legacy stream; between two contexts it is a
 * peer copy. The driver's "synchronous" copy between device memory returns
 * before it is done: as for cus_buffer_fill_u8 below, a non-blocking
 * stream's work is not ordered after it. */
CUS_API cus_status cus_copy_device(cus_buffer *dst, size_t dst_offset, cus_buffer *src,
                                   size_t src_offset, size_t bytes);
/* cus_copy_to_device queued on stream (not NULL: CUS_ERROR_INVALID_ARGUMENT;
 * use cus_stream_legacy for the default stream), whose context must be dst's
 * (else CUS_ERROR_CONTEXT_MISMATCH). src should be a cus_host_buffer's
 * memory, or the driver copies synchronously. */
CUS_API cus_status cus_copy_to_device_async(cus_buffer *dst, size_t dst_offset, const void *src,
                                            size_t bytes, cus_stream *stream);
/* cus_copy_to_host queued on stream (not NULL), whose context must be src's
 * (else CUS_ERROR_CONTEXT_MISMATCH). dst should be a cus_host_buffer's
 * memory, or the driver copies synchronously. */
CUS_API cus_status cus_copy_to_host_async(void *dst, cus_buffer *src, size_t src_offset,
                                          size_t bytes, cus_stream *stream);
/* cus_copy_device queued on stream (not NULL), whose context must be the
 * destination's (else CUS_ERROR_CONTEXT_MISMATCH): between contexts it is a
 * peer copy. */
CUS_API cus_status cus_copy_device_async(cus_buffer *dst, size_t dst_offset, cus_buffer *src,
                                         size_t src_offset, size_t bytes, cus_stream *stream);

/* Fills count 8-bit elements starting at byte offset (cuMemsetD8), in the
 * buffer's context's legacy default stream. The driver's "synchronous"
 * fill: for device memory it may return before the fill is done. Later
 * work of that stream, of the context's blocking streams and the
 * synchronous copies comes after it; a non-blocking stream's (every stream
 * of a green context's is one) does not: fill on that stream
 * (cus_buffer_fill_u8_async), or synchronize the context first. The same
 * for the 16- and 32-bit fills. */
CUS_API cus_status cus_buffer_fill_u8(cus_buffer *buf, size_t offset, uint8_t value, size_t count);
/* Fills count 16-bit elements starting at byte offset (2-byte aligned). */
CUS_API cus_status cus_buffer_fill_u16(cus_buffer *buf, size_t offset, uint16_t value,
                                       size_t count);
/* Fills count 32-bit elements starting at byte offset (4-byte aligned). */
CUS_API cus_status cus_buffer_fill_u32(cus_buffer *buf, size_t offset, uint32_t value,
                                       size_t count);
/* cus_buffer_fill_u8 queued on stream, whose context must be buf's (else
 * CUS_ERROR_CONTEXT_MISMATCH). */
CUS_API cus_status cus_buffer_fill_u8_async(cus_buffer *buf, size_t offset, uint8_t value,
                                            size_t count, cus_stream *stream);
/* cus_buffer_fill_u16 queued on stream, of buf's context. */
CUS_API cus_status cus_buffer_fill_u16_async(cus_buffer *buf, size_t offset, uint16_t value,
                                             size_t count, cus_stream *stream);
/* cus_buffer_fill_u32 queued on stream, of buf's context. */
CUS_API cus_status cus_buffer_fill_u32_async(cus_buffer *buf, size_t offset, uint32_t value,
                                             size_t count, cus_stream *stream);

/* Free and total memory of ctx's device. */
CUS_API cus_status cus_memory_info(cus_context *ctx, size_t *free_bytes, size_t *total_bytes);

/* Whether ctx's device can access peer's memory (cuDeviceCanAccessPeer). */
CUS_API cus_status cus_context_can_access_peer(cus_context *ctx, cus_context *peer, bool *can);
/* Lets ctx access peer's memory; already enabled is not an error. */
CUS_API cus_status cus_context_enable_peer_access(cus_context *ctx, cus_context *peer);

#ifdef __cplusplus
}
#endif

#endif
