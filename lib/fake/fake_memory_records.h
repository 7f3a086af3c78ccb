/* What the memory area's files share (fake_memory.c: the records, blocks,
 * range checks, graph allocations, host registrations and module globals;
 * fake_memory_alloc.c: the allocation entry points; fake_memory_copy.c:
 * copies, memsets, prefetch and advice, and their execution;
 * fake_memory_peer.c: pointer attributes and peer access; fake_pool.c:
 * memory pools, their accounting and IPC). Private to the area: other areas
 * include fake_memory.h. */
#ifndef CUSCOPE_LIB_FAKE_MEMORY_RECORDS_H
#define CUSCOPE_LIB_FAKE_MEMORY_RECORDS_H

#include "fake_memory.h"

/* --- records ---------------------------------------------------------------------------- */


struct fake_mem {
    fake_handle h; /* DEVICE_MEMORY, HOST_MEMORY, MANAGED_MEMORY or HOST_REGISTRATION */
    uintptr_t base;
    size_t size;           /* as requested */
    struct CUctx_st *ctx;  /* the owner (allocating or registering context) */
    CUdevice device;
    unsigned int flags;    /* cuMemHostAlloc, cuMemHostRegister or attach flags */
    bool async;            /* cuMemAllocAsync */
    bool valid;            /* async: its allocation executed */
    bool free_queued;      /* a cuMemFreeAsync of it is queued */
    bool ctx_destroyed;    /* freed by its context's destruction */
    bool mapped;           /* the block is mmap()ed */
    bool global;           /* a module global: unregistered, uncounted, freed with its module */
    size_t length;         /* of the block */
    unsigned long doomed;
    /* A graph allocation (async too): the bodies holding it, whether a launch
     * left it allocated with no free queued since, and its queued ALLOC and
     * FREE operations. */
    bool graph;
    bool graph_part; /* made by cuGraphAddMemAllocNode: not a counted handle */
    bool outstanding;
    unsigned long holds, pending;
    /* Stream-ordered memory of a pool (fake_pool.c): the pool, whose used
     * bytes count it until it is released. A block of an exportable pool is
     * shared memory (a memfd, its descriptor kept in shm_fd when owns_fd),
     * so that an import maps the same memory again: an import (imported, not
     * counted in the device's bytes in use) names its exported allocation
     * in origin, which counts its live imports. */
    struct fake_pool *pool;
    bool shared, owns_fd, imported;
    int shm_fd;
    struct fake_mem *origin;
    unsigned long imports;
    /* A cuMemMap range: the vmm area's record of it (fake_vmm.c), else NULL. */
    const void *mapping;
};

/* A memory pool (fake_pool.c): a registered handle (CUS_FAKE_HANDLE_MEMORY_POOL)
 * for cuMemPoolCreate's and imported ones; a device's default pool is a
 * record of fake_pool.c that is never registered (it cannot be destroyed).
 * Bytes: reserved (backing memory held), used (handed out, not yet
 * released), and their high-water marks. */
typedef struct fake_pool {
    fake_handle h;
    CUdevice device;
    bool is_default, imported;
    /* cuMemPoolExportToShareableHandle made a handle of it: its pointers may
     * be exported from then on (an H200 refuses them before, with
     * CUDA_ERROR_INVALID_VALUE) */
    bool exported;
    CUmemAllocationHandleType handle_types;
    size_t max_size;               /* 0: no limit but the device's */
    cuuint64_t threshold;          /* CU_MEMPOOL_ATTR_RELEASE_THRESHOLD */
    int reuse[3];                  /* the three reuse policies, in attribute order */
    cuuint64_t reserved, reserved_high, used, used_high;
    CUmemAccess_flags access[CUS_FAKE_MAX_DEVICES]; /* by device */
    struct fake_pool *origin;      /* imported: the exported pool */
} fake_pool;

typedef enum side {
    SIDE_DEVICE, /* must be fake memory: allocated, or registered */
    SIDE_HOST,   /* host memory: checked if pinned, managed or registered */
    SIDE_ANY,    /* cuMemcpy: either */
} side;

/* --- helpers for the entry points ------------------------------------------------------------ */

#define GET_CURRENT(c)                                                         \
    struct CUctx_st *c = NULL;                                                 \
    do {                                                                       \
        CUresult cur_r_ = fake_current_context_locked(&c);                     \
        if (cur_r_ != CUDA_SUCCESS)                                            \
            return fake_leave(cur_r_);                                         \
    } while (0)

/* --- helpers of fake_memory.c that the other memory files use --------------------------- */

FAKE_HIDDEN const char *fake_memory_noun(const fake_mem *m);
/* The allocation holding addr, in any state; the live registration holding it. */
FAKE_HIDDEN fake_mem *fake_memory_allocation_containing_locked(uintptr_t addr);
FAKE_HIDDEN fake_mem *fake_memory_registration_containing_locked(uintptr_t addr);
FAKE_HIDDEN CUresult fake_memory_allocate_locked(cus_fake_handle_kind kind, size_t size,
                                                 struct CUctx_st *c, unsigned int flags,
                                                 fake_mem **out);
FAKE_HIDDEN void fake_memory_release_locked(fake_mem *m);
FAKE_HIDDEN bool fake_memory_fits_locked(const struct CUctx_st *c, size_t size);
FAKE_HIDDEN void fake_memory_report_dead_locked(const fake_mem *m, uintptr_t addr,
                                                const char *what, const char *by);
FAKE_HIDDEN CUresult fake_memory_range_locked(uintptr_t addr, size_t n, side sd, const char *what,
                                              fake_mem **ref, fake_mem **owner);
FAKE_HIDDEN bool fake_memory_usable_locked(const fake_mem *m, uintptr_t addr, const char *what,
                                           const fake_op *op);
FAKE_HIDDEN void fake_memory_graph_retire_locked(fake_mem *m);
/* A 3D copy's descriptor (cuMemcpy3D's rules, with c's limits) as one
 * strided COPY payload: a 2D or 3D memcpy node's (fake_memory_2d.c).
 * CUDA_ERROR_INVALID_VALUE for a zero extent too (a node copies something). */
FAKE_HIDDEN CUresult fake_memory_copy_3d_payload_locked(const CUDA_MEMCPY3D *p,
                                                        const struct CUctx_st *c,
                                                        union fake_op_payload *u);
/* A device allocation of `size` bytes for context c on dev whose block is
 * shared memory (an exportable pool's); from: NULL for new memory, else the
 * allocation whose memory is mapped again (an import, not counted in the
 * device's bytes in use). CUDA_ERROR_OUT_OF_MEMORY. */
FAKE_HIDDEN CUresult fake_memory_allocate_shared_locked(size_t size, struct CUctx_st *c,
                                                        CUdevice dev, fake_mem *from,
                                                        fake_mem **out);

/* --- pools (fake_pool.c) ------------------------------------------------------------------ */

/* The current pool of a device: what cuMemAllocAsync allocates from. */
FAKE_HIDDEN fake_pool *fake_pool_current_locked(CUdevice dev);
/* A stream-ordered allocation of size bytes from p on s (cuMemAllocAsync,
 * cuMemAllocFromPoolAsync), queued: its address in *dptr. During capture, a
 * graph allocation, which the graph owns rather than the pool. */
FAKE_HIDDEN CUresult fake_pool_alloc_locked(struct CUstream_st *s, fake_pool *p, size_t size,
                                            CUdeviceptr *dptr);
/* Accounts the release of m (fake_memory_release_locked), and gives back
 * what the release threshold lets go: the fake's frees execute only when
 * the host synchronizes (or queries), where the driver releases. */
FAKE_HIDDEN void fake_pool_released_locked(fake_mem *m);

#endif
