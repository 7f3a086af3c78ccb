/* cuscope/pool.h: memory pools, and stream-ordered allocation from them.
 *
 * A cus_pool is a reference-counted CUDA memory pool (CUmemoryPool) that
 * holds its context alive. A pool belongs to a device, not to a context: the
 * context is the device's (its location is the context's device) and the one
 * the pool's driver calls are made in, so that a poisoned context fails them
 * fast. Three kinds:
 *   created   cus_pool_create (cuMemPoolCreate): destroyed with
 *             cuMemPoolDestroy when the last reference goes; memory still
 *             allocated from it then is released by the driver once freed;
 *   borrowed  the device's default pool (cus_pool_default,
 *             cuDeviceGetDefaultMemPool) and its current pool
 *             (cus_pool_current, cuDeviceGetMemPool): the driver's, never
 *             destroyed by cuscope;
 *   imported  cus_pool_import (cuMemPoolImportFromShareableHandle), a pool
 *             another process exported: destroyed with cuMemPoolDestroy. It
 *             allocates nothing (the driver's rule): it only imports
 *             pointers (cus_pool_import_pointer).
 *
 * A buffer allocated from a pool (cus_pool_alloc_async) is a stream-ordered
 * cus_buffer (cuscope/memory.h), freed with cuMemFreeAsync on its stream when
 * its last reference goes, and it holds a reference to its pool: releasing
 * the pool first is valid. Stream capture: like cus_buffer_alloc_async, an
 * allocation on a stream being captured is refused (cuscope makes no graph
 * allocations); a pool's buffers used by captured work are kept alive with
 * the graph, and they keep their pool.
 *
 * IPC between processes (Linux, POSIX file descriptors), for a pool created
 * with handle_types CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR:
 *   exporting process: cus_pool_export gives a file descriptor for the pool;
 *     send it to the other process over a Unix domain socket (SCM_RIGHTS: a
 *     descriptor number means nothing in another process), then allocate
 *     with cus_pool_alloc_async and, for each buffer to share, send the 64
 *     bytes of cus_pool_export_pointer's CUmemPoolPtrExportData and the
 *     buffer's size (any channel: the data is not a secret);
 *   importing process: cus_pool_import(ctx, fd) gives the imported pool (the
 *     fd stays the caller's: close it after), then
 *     cus_pool_import_pointer(pool, &data, size) a buffer over the same
 *     memory. It must not be used before the exporter's allocation has
 *     completed in stream order (synchronize its stream before sending the
 *     data, or share an IPC event), and it must be released (cuMemFree,
 *     which the last unref makes) before the exporter frees the memory;
 *   both: the memory is accessible from the pool's device; other devices
 *     need cus_pool_set_access in each process.
 *
 * Functions are thread-safe, return a cus_status, record the thread's last
 * error on failure, and leave out parameters untouched then. A pool whose
 * context is poisoned fails at once, and is released without driver calls.
 */
#ifndef CUSCOPE_POOL_H
#define CUSCOPE_POOL_H

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "context.h"
#include "device.h"
#include "memory.h"
#include "object.h"
#include "status.h"
#include "stream.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A reference-counted memory pool holding its context (above). */
typedef struct cus_pool cus_pool;

/* Where a pool comes from (cus_pool_get_kind, above). */
typedef enum cus_pool_kind {
    CUS_POOL_CREATED,  /* cus_pool_create: cuMemPoolDestroy at the end */
    CUS_POOL_BORROWED, /* cus_pool_default, cus_pool_current: the driver's */
    CUS_POOL_IMPORTED, /* cus_pool_import: another process's, cuMemPoolDestroy */
} cus_pool_kind;

/* What cus_pool_create makes; a zeroed struct (or NULL) is the default: a
 * pool of the driver's maximum size, without IPC. */
typedef struct cus_pool_options {
    /* The pool's maximum size in bytes; 0: the driver's (system dependent). */
    size_t max_size;
    /* CU_MEM_HANDLE_TYPE_NONE (0), or CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
     * for a pool that can be exported (cus_pool_export). */
    CUmemAllocationHandleType handle_types;
} cus_pool_options;

/* Creates a pool of pinned device memory on ctx's device (cuMemPoolCreate).
 * opts NULL: the defaults. *out receives a new reference.
 * CUS_ERROR_INVALID_ARGUMENT for a handle type other than none and POSIX
 * file descriptors; the driver's CUDA_ERROR_NOT_SUPPORTED where the device
 * has no pools or no such handles. */
CUS_API cus_status cus_pool_create(cus_context *ctx, const cus_pool_options *opts,
                                   cus_pool **out);

/* The default pool of ctx's device (cuDeviceGetDefaultMemPool), borrowed:
 * never destroyed. *out receives a new reference (a new object each call,
 * over the same driver pool). */
CUS_API cus_status cus_pool_default(cus_context *ctx, cus_pool **out);

/* The current pool of ctx's device (cuDeviceGetMemPool: the one
 * cus_buffer_alloc_async allocates from), borrowed. *out receives a new
 * reference. */
CUS_API cus_status cus_pool_current(cus_context *ctx, cus_pool **out);

/* Makes pool the current pool of its device (cuDeviceSetMemPool), for every
 * context of the device. The driver keeps no reference: when a created pool
 * that is current is destroyed (its last unref), the default pool becomes
 * current again. CUS_ERROR_INVALID_ARGUMENT for an imported pool (it cannot
 * allocate). */
CUS_API cus_status cus_pool_set_current(cus_pool *pool);

/* Adds a reference; NULL-safe; returns pool. */
CUS_API cus_pool *cus_pool_ref(cus_pool *pool);
/* Drops a reference; NULL-safe; returns NULL. The last one destroys a
 * created or imported pool (cuMemPoolDestroy) and drops its context; its
 * buffers hold it, so it goes after them. */
CUS_API cus_pool *cus_pool_unref(cus_pool *pool);
CUS_DEFINE_AUTOPTR(cus_pool, cus_pool_unref)

/* The driver's CUmemoryPool; NULL for NULL. No driver call. */
CUS_API CUmemoryPool cus_pool_handle(const cus_pool *pool);
/* The pool's context, borrowed; NULL for NULL. No driver call. */
CUS_API cus_context *cus_pool_context(const cus_pool *pool);
/* The pool's kind; CUS_POOL_CREATED for NULL. No driver call. */
CUS_API cus_pool_kind cus_pool_get_kind(const cus_pool *pool);
/* The handle types it was created with (CU_MEM_HANDLE_TYPE_NONE for a
 * default, current or imported pool). */
CUS_API CUmemAllocationHandleType cus_pool_handle_types(const cus_pool *pool);

/* --- attributes (cuMemPoolSetAttribute, cuMemPoolGetAttribute) ------------- */

/* The reserved memory the pool keeps at a synchronization rather than give
 * back to the system (CU_MEMPOOL_ATTR_RELEASE_THRESHOLD; 0 by default:
 * everything not in use goes back at the next stream, event or context
 * synchronization). UINT64_MAX keeps it all. */
CUS_API cus_status cus_pool_set_release_threshold(cus_pool *pool, uint64_t bytes);
/* The pool's release threshold in bytes (CU_MEMPOOL_ATTR_RELEASE_THRESHOLD). */
CUS_API cus_status cus_pool_get_release_threshold(cus_pool *pool, uint64_t *bytes);

/* A reuse policy on or off: attr is CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES,
 * CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC or
 * CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES (all on by default);
 * another attribute is CUS_ERROR_INVALID_ARGUMENT. */
CUS_API cus_status cus_pool_set_reuse(cus_pool *pool, CUmemPool_attribute attr, bool enabled);
/* Whether a reuse policy is on (attr as for cus_pool_set_reuse; another is
 * CUS_ERROR_INVALID_ARGUMENT). */
CUS_API cus_status cus_pool_get_reuse(cus_pool *pool, CUmemPool_attribute attr, bool *enabled);

/* The pool's memory, in bytes: reserved (backing memory the pool holds) and
 * used (handed out to allocations, freed or not yet), now and at their
 * high-water marks since the pool's creation or the last reset. */
typedef struct cus_pool_usage {
    uint64_t reserved_current, reserved_high; /* reserved: now, and its high-water mark */
    uint64_t used_current, used_high;         /* used: now, and its high-water mark */
} cus_pool_usage;
/* Four attribute queries; *usage is written only when all four succeeded. */
CUS_API cus_status cus_pool_get_usage(cus_pool *pool, cus_pool_usage *usage);
/* Resets both high-water marks to their current values (the driver's only
 * permitted reset: setting them to 0). */
CUS_API cus_status cus_pool_reset_high_water(cus_pool *pool);

/* Gives reserved memory that no allocation uses back to the system, until
 * the pool holds fewer than min_bytes_to_keep reserved bytes or nothing more
 * can be released (cuMemPoolTrimTo). A no-op on imported pools (the driver
 * releases nothing of theirs). */
CUS_API cus_status cus_pool_trim(cus_pool *pool, size_t min_bytes_to_keep);

/* --- access from devices (cuMemPoolSetAccess, cuMemPoolGetAccess) ---------- */

/* Sets dev's access to the pool's memory (cuMemPoolSetAccess), flags:
 * CU_MEM_ACCESS_FLAGS_PROT_NONE, _READ or _READWRITE. The pool's own
 * device always has read-write access: asking for READWRITE there succeeds
 * and changes nothing, anything else is the driver's
 * CUDA_ERROR_INVALID_DEVICE. Another device needs peer access to the pool's
 * (cuDeviceCanAccessPeer), else the driver's error. */
CUS_API cus_status cus_pool_set_access(cus_pool *pool, cus_device dev, CUmemAccess_flags flags);
/* dev's access to the pool's memory (cuMemPoolGetAccess). */
CUS_API cus_status cus_pool_get_access(cus_pool *pool, cus_device dev, CUmemAccess_flags *flags);

/* --- allocation ------------------------------------------------------------- */

/* bytes from pool, in stream order on stream (cuMemAllocFromPoolAsync): a
 * CUS_BUFFER_STREAM_ORDERED buffer of the stream's context, freed on that
 * stream (cuMemFreeAsync) when its last reference goes, holding the pool.
 * The stream must be of the pool's context (else
 * CUS_ERROR_CONTEXT_MISMATCH); bytes 0 and an imported pool are
 * CUS_ERROR_INVALID_ARGUMENT; a stream being captured is
 * CUS_ERROR_NOT_SUPPORTED (cuscope makes no graph allocations). *out
 * receives a new reference. */
CUS_API cus_status cus_pool_alloc_async(cus_pool *pool, cus_stream *stream, size_t bytes,
                                        cus_buffer **out);

/* --- IPC (see the top of this file) ---------------------------------------- */

/* A new file descriptor for a pool created with
 * CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR (cuMemPoolExportToShareableHandle);
 * the caller owns it (close it once sent). Another pool is
 * CUS_ERROR_INVALID_ARGUMENT, before any driver call. */
CUS_API cus_status cus_pool_export(cus_pool *pool, int *fd);

/* The pool another process exported as fd (cuMemPoolImportFromShareableHandle),
 * on ctx's device: a CUS_POOL_IMPORTED pool. fd stays the caller's. A
 * negative fd is CUS_ERROR_INVALID_ARGUMENT. *out receives a new reference. */
CUS_API cus_status cus_pool_import(cus_context *ctx, int fd, cus_pool **out);

/* The data that lets a process that imported pool import buf
 * (cuMemPoolExportPointer). buf must have been allocated from pool, an
 * exportable pool: else CUS_ERROR_INVALID_ARGUMENT, before any driver call.
 * The pool itself must have been exported first (cus_pool_export): the
 * driver refuses a pointer of a pool not yet exported with
 * CUDA_ERROR_INVALID_VALUE (an H200, driver 580.159.04; the fake too). */
CUS_API cus_status cus_pool_export_pointer(cus_pool *pool, cus_buffer *buf,
                                           CUmemPoolPtrExportData *data);

/* A buffer over the allocation that data describes, of an imported pool
 * (cuMemPoolImportPointer), of `bytes` bytes (the exporter's size: the data
 * does not carry it). It is a CUS_BUFFER_DEVICE buffer of the pool's
 * context, holding the pool: its last unref releases the import with
 * cuMemFree, as the driver requires of imported pointers (that frees
 * nothing of the exporter's; release it before the exporter frees the
 * memory). A pool that is not imported, bytes 0 and a NULL data are
 * CUS_ERROR_INVALID_ARGUMENT. *out receives a new reference. */
CUS_API cus_status cus_pool_import_pointer(cus_pool *pool, const CUmemPoolPtrExportData *data,
                                           size_t bytes, cus_buffer **out);

#ifdef __cplusplus
}
#endif

#endif
