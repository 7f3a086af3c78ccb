/* cuscope/vmm.h: virtual memory management. Physical allocations, address
 * reservations, mappings between them, and the growable buffer built on them.
 *
 * The driver's virtual memory calls split what cuMemAlloc does in one step:
 *   cus_physical     physical memory on a device (cuMemCreate), with no
 *                    address; exportable to a file descriptor and importable
 *                    from one (another process's allocation);
 *   cus_reservation  a range of virtual addresses (cuMemAddressReserve) with
 *                    no memory behind it;
 *   mapping          cus_reservation_map puts a physical allocation (or part
 *                    of it) at an offset of a reservation (cuMemMap), and
 *                    cus_reservation_set_access makes it usable by the
 *                    context's device (cuMemSetAccess): a mapping starts with
 *                    no access, and memory without access must not be used;
 *   views            cus_reservation_buffer gives a cus_buffer over a mapped,
 *                    accessible range, for cus_launch, copies, fills and
 *                    graphs, bounds-checked like any buffer.
 *   cus_growable     a buffer that grows in place: one large reservation,
 *                    with physical chunks mapped behind it as it grows. Its
 *                    device address never moves.
 *
 * The driver's rules, which cuscope checks before any driver call
 * (CUS_ERROR_INVALID_ARGUMENT, or CUS_ERROR_OUT_OF_RANGE for a range past
 * the end, with the last error saying which):
 *   - sizes and offsets of physical allocations, reservations, mappings,
 *     unmaps and access changes are multiples of the device's minimum
 *     granularity (cus_physical_granularity; 2 MiB on current GPUs);
 *   - a range is mapped once: a map that meets a mapping is refused;
 *   - an unmap covers whole mappings (one, or several adjacent ones), never
 *     part of one;
 *   - an access change covers mapped memory only.
 * cuscope adds two rules of its own: an access change covers whole mappings
 * (cuscope remembers the access per mapping, to check views), and an unmap
 * is refused (CUS_ERROR_BUSY) while a view of the range is alive, so that no
 * buffer, and no graph keeping one, can point into unmapped memory.
 *
 * Ownership: a physical allocation and a reservation hold their context; a
 * reservation holds every physical allocation mapped into it until that
 * range is unmapped (so a cus_physical may be released right after the map);
 * a view holds its reservation; a growable holds its reservation. The last
 * unref of a reservation unmaps what is still mapped, then frees the range
 * (cuMemUnmap, cuMemAddressFree); of a physical allocation, cuMemRelease
 * (the driver frees the memory once nothing maps it either).
 *
 * As for every cuscope release, nothing waits for queued work: synchronize
 * before releasing the last reference to memory that queued work still uses
 * (a graph keeps its views, and so the memory, alive by itself).
 *
 * Functions return a cus_status, record the thread's last error on failure
 * and leave out parameters untouched then. Every object here is
 * thread-safe: the calls on one reservation or growable are serialized by
 * its lock. Where the driver lacks the entry points the calls fail with
 * CUS_ERROR_NOT_SUPPORTED (they are in every driver cuscope supports, 12.0
 * and later; a device may still refuse: CUDA_ERROR_NOT_SUPPORTED, see
 * CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED).
 */
#ifndef CUSCOPE_VMM_H
#define CUSCOPE_VMM_H

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>

#include "context.h"
#include "memory.h"
#include "object.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A reference-counted physical allocation (cuMemCreate) holding its context. */
typedef struct cus_physical cus_physical;
/* A reference-counted range of virtual addresses, with its mappings. */
typedef struct cus_reservation cus_reservation;
/* A reference-counted buffer that grows in place (above). */
typedef struct cus_growable cus_growable;

/* --- physical allocations ------------------------------------------------- */

/* The allocation granularity of ctx's device for pinned device memory
 * (cuMemGetAllocationGranularity): the minimum one, which every size and
 * offset must be a multiple of, or the recommended one (for performance).
 * Errors: CUS_ERROR_INVALID_ARGUMENT (NULL), the driver's. Thread-safe. */
CUS_API cus_status cus_physical_granularity(cus_context *ctx, bool recommended, size_t *out);

/* bytes of pinned physical memory on ctx's device (cuMemCreate), which
 * may be exported as the handle types given: 0, or
 * CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR. Returns a new reference.
 * Errors: CUS_ERROR_INVALID_ARGUMENT (NULL, bytes 0 or not a multiple of the
 * minimum granularity, another handle type), CUDA_ERROR_OUT_OF_MEMORY and
 * the driver's others. Thread-safe. */
CUS_API cus_status cus_physical_create(cus_context *ctx, size_t bytes, unsigned int handle_types,
                                       cus_physical **out);

/* A new file descriptor for the allocation (cuMemExportToShareableHandle),
 * which the caller owns and closes; it can be sent to another process
 * (SCM_RIGHTS) and imported there. The allocation must have been created
 * with CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR (else
 * CUS_ERROR_INVALID_ARGUMENT, no driver call). Thread-safe. */
CUS_API cus_status cus_physical_export_fd(cus_physical *phys, int *fd);

/* The allocation behind fd, exported by this or another process
 * (cuMemImportFromShareableHandle), as a new cus_physical of ctx, whose size
 * is bytes: what the exporter created, which cuscope cannot ask the driver
 * and trusts (the driver refuses a mapping past the real end). fd stays the
 * caller's. Returns a new reference. Errors: CUS_ERROR_INVALID_ARGUMENT (NULL,
 * fd < 0, bytes 0 or not a multiple of the granularity), the driver's.
 * Thread-safe. */
CUS_API cus_status cus_physical_import_fd(cus_context *ctx, int fd, size_t bytes,
                                          cus_physical **out);

/* Adds a reference; NULL-safe; returns phys. */
CUS_API cus_physical *cus_physical_ref(cus_physical *phys);
/* Drops a reference; NULL-safe; returns NULL. The last one releases the
 * allocation (cuMemRelease); a reservation that maps it holds it. */
CUS_API cus_physical *cus_physical_unref(cus_physical *phys);
CUS_DEFINE_AUTOPTR(cus_physical, cus_physical_unref)

/* The driver's handle, valid while the object lives; 0 for NULL. No driver
 * call. */
CUS_API CUmemGenericAllocationHandle cus_physical_handle(const cus_physical *phys);
/* Its size in bytes; 0 for NULL. No driver call. */
CUS_API size_t cus_physical_size(const cus_physical *phys);
/* Its context, borrowed; NULL for NULL. No driver call. */
CUS_API cus_context *cus_physical_context(const cus_physical *phys);

/* --- address reservations -------------------------------------------------- */

/* bytes of virtual address space (cuMemAddressReserve), a multiple of the
 * minimum granularity (cuscope's rule: nothing smaller can be mapped),
 * aligned to alignment (0: the granularity; else a power of two). fixed_addr
 * (0: anywhere) asks for the range to start there: the driver takes it as a
 * hint, and when it places the range elsewhere, cuscope frees it and fails
 * with CUS_ERROR_INVALID_ARGUMENT. Returns a new reference. Errors:
 * CUS_ERROR_INVALID_ARGUMENT (NULL, bytes 0 or not a multiple, alignment
 * not a power of two, fixed_addr not aligned), CUDA_ERROR_OUT_OF_MEMORY and
 * the driver's others. Thread-safe. */
CUS_API cus_status cus_reservation_create(cus_context *ctx, size_t bytes, size_t alignment,
                                          CUdeviceptr fixed_addr, cus_reservation **out);

/* Adds a reference; NULL-safe; returns res. */
CUS_API cus_reservation *cus_reservation_ref(cus_reservation *res);
/* Drops a reference; NULL-safe; returns NULL. The last one unmaps what is
 * still mapped and frees the range (cuMemUnmap, cuMemAddressFree). */
CUS_API cus_reservation *cus_reservation_unref(cus_reservation *res);
CUS_DEFINE_AUTOPTR(cus_reservation, cus_reservation_unref)

/* The range's first address; 0 for NULL. No driver call. */
CUS_API CUdeviceptr cus_reservation_ptr(const cus_reservation *res);
/* The range's size in bytes; 0 for NULL. No driver call. */
CUS_API size_t cus_reservation_size(const cus_reservation *res);
/* The minimum granularity the reservation's checks use; 0 for NULL. */
CUS_API size_t cus_reservation_granularity(const cus_reservation *res);
/* Its context, borrowed; NULL for NULL. No driver call. */
CUS_API cus_context *cus_reservation_context(const cus_reservation *res);
/* Bytes mapped in it now; 0 for NULL. No driver call. */
CUS_API size_t cus_reservation_mapped_bytes(cus_reservation *res);

/* Maps bytes of phys, from phys_offset, at offset of res (cuMemMap). The
 * range has no access until cus_reservation_set_access. res holds phys
 * until the range is unmapped. Errors: CUS_ERROR_INVALID_ARGUMENT (NULL,
 * bytes 0, an offset or size not a multiple of the granularity, a range that
 * meets a mapping: no double map), CUS_ERROR_OUT_OF_RANGE (past the end of
 * res or of phys), the driver's. Thread-safe. */
CUS_API cus_status cus_reservation_map(cus_reservation *res, size_t offset, cus_physical *phys,
                                       size_t phys_offset, size_t bytes);

/* Unmaps [offset, offset + bytes) (cuMemUnmap), which must be exactly one
 * mapping or several adjacent ones, and drops their physical allocations.
 * Errors: CUS_ERROR_INVALID_ARGUMENT (NULL, bytes 0, not whole mappings),
 * CUS_ERROR_OUT_OF_RANGE, CUS_ERROR_BUSY (a view of the range is alive), the
 * driver's (when one of several mappings fails, those before it stay
 * unmapped). Thread-safe. */
CUS_API cus_status cus_reservation_unmap(cus_reservation *res, size_t offset, size_t bytes);

/* Gives the context's device access to [offset, offset + bytes)
 * (cuMemSetAccess): CU_MEM_ACCESS_FLAGS_PROT_READWRITE, or
 * CU_MEM_ACCESS_FLAGS_PROT_READ. The range must be whole mappings. Errors:
 * CUS_ERROR_INVALID_ARGUMENT (NULL, other flags, bytes 0, not whole
 * mappings, or not mapped), CUS_ERROR_OUT_OF_RANGE, the driver's.
 * Thread-safe. */
CUS_API cus_status cus_reservation_set_access(cus_reservation *res, size_t offset, size_t bytes,
                                              CUmemAccess_flags flags);

/* The access the context's device has at offset, as the driver says
 * (cuMemGetAccess). Errors: CUS_ERROR_INVALID_ARGUMENT (NULL),
 * CUS_ERROR_OUT_OF_RANGE, the driver's (CUDA_ERROR_INVALID_VALUE where
 * nothing is mapped). Thread-safe. */
CUS_API cus_status cus_reservation_get_access(cus_reservation *res, size_t offset,
                                              CUmemAccess_flags *flags);

/* A buffer of bytes at offset of res, which must be mapped with access
 * (read, or read-write) all along: cus_buffer_get_kind() says
 * CUS_BUFFER_VIEW. It holds res; the range cannot be unmapped while it
 * lives. Returns a new reference. Errors: CUS_ERROR_INVALID_ARGUMENT (NULL,
 * bytes 0, a part not mapped or without access), CUS_ERROR_OUT_OF_RANGE.
 * No driver call. Thread-safe. A read-only range gives a buffer that the
 * driver refuses writes into (cuscope does not check the direction). */
CUS_API cus_status cus_reservation_buffer(cus_reservation *res, size_t offset, size_t bytes,
                                          cus_buffer **out);

/* --- the growable buffer ---------------------------------------------------- */

/* A growable buffer of ctx that may grow to max_bytes (rounded up to the
 * granularity): the whole range is reserved now, nothing is mapped yet (size
 * 0). Returns a new reference. Errors: CUS_ERROR_INVALID_ARGUMENT (NULL,
 * max_bytes 0), CUS_ERROR_OUT_OF_RANGE (rounding overflows), and
 * cus_reservation_create's. Thread-safe. */
CUS_API cus_status cus_growable_reserve(cus_context *ctx, size_t max_bytes, cus_growable **out);

/* Grows the buffer to at least new_size bytes: maps one physical chunk
 * behind what is mapped, rounded up to the granularity, with read-write
 * access. The data already there stays, and the address never moves. A
 * new_size at or below the current size changes nothing (it never shrinks);
 * one within what is mapped only moves the size. Errors:
 * CUS_ERROR_INVALID_ARGUMENT (NULL), CUS_ERROR_OUT_OF_RANGE (past
 * max_bytes), and those of the create, map and access calls (then nothing
 * changed: a chunk mapped and not made accessible is unmapped again).
 * Thread-safe; grows are serialized. */
CUS_API cus_status cus_growable_grow(cus_growable *g, size_t new_size);

/* A view of the buffer at its current size (CUS_BUFFER_VIEW), for launches,
 * copies and graphs. A view keeps the size it was taken at: after a grow,
 * take a new one to see the new bytes (the old view stays valid, on the old
 * range, at the same address). Returns a new reference. Errors:
 * CUS_ERROR_INVALID_ARGUMENT (NULL, or size 0: nothing grown yet). No driver
 * call. Thread-safe. */
CUS_API cus_status cus_growable_buffer(cus_growable *g, cus_buffer **out);

/* Adds a reference; NULL-safe; returns g. */
CUS_API cus_growable *cus_growable_ref(cus_growable *g);
/* Drops a reference; NULL-safe; returns NULL. The last one drops its
 * reservation (which its views hold too). */
CUS_API cus_growable *cus_growable_unref(cus_growable *g);
CUS_DEFINE_AUTOPTR(cus_growable, cus_growable_unref)

/* Its device address, fixed for its life; 0 for NULL. No driver call. */
CUS_API CUdeviceptr cus_growable_ptr(const cus_growable *g);
/* Its size: the bytes grown to; 0 for NULL. No driver call. */
CUS_API size_t cus_growable_size(const cus_growable *g);
/* The bytes mapped behind it (at least its size); 0 for NULL. */
CUS_API size_t cus_growable_capacity(const cus_growable *g);
/* The most it may grow to (max_bytes, rounded up); 0 for NULL. */
CUS_API size_t cus_growable_max(const cus_growable *g);
/* Its reservation, borrowed; NULL for NULL. No driver call. */
CUS_API cus_reservation *cus_growable_reservation(const cus_growable *g);

#ifdef __cplusplus
}
#endif

#endif
