/* Virtual memory management: physical allocations (cuMemCreate, cuMemRelease,
 * cuMemGetAllocationGranularity, cuMemExportToShareableHandle,
 * cuMemImportFromShareableHandle, cuMemRetainAllocationHandle), address
 * reservations (cuMemAddressReserve, cuMemAddressFree) and mappings
 * (cuMemMap, cuMemUnmap, cuMemSetAccess, cuMemGetAccess).
 *
 * The host plays the device's page tables. A physical allocation is a memfd
 * of its size (lazily backed), shared by every handle to it (an import finds
 * the allocation by the file's identity) and by every mapping of it. A
 * reservation is a PROT_NONE range of the fake's address space: it collides
 * with no other fake memory, whose addresses are host addresses too, and it
 * is never returned before the next install, so an address is never reused.
 * cuMemMap maps the memfd over the reservation's pages (MAP_SHARED |
 * MAP_FIXED), so two mappings of one allocation see the same bytes, and
 * registers the range with the memory area (fake_memory_mapping_new_locked)
 * so that copies, memsets, pointer attributes and kernel twins find it as
 * they find allocations. Pages without access stay PROT_NONE and the memory
 * area refuses them (a misuse), as the driver's memory faults there;
 * cuMemUnmap puts the reservation's PROT_NONE pages back.
 *
 * The driver's rules: sizes, offsets and addresses of physical allocations,
 * mappings and access changes are multiples of the granularity (2 MiB here,
 * minimum and recommended, as on an H100 or H200); a reservation's size and
 * address are multiples of the host page and its alignment a power of two
 * (or 0); a range is mapped once; an unmap covers whole mappings; an access
 * change covers mapped memory only; every mapping starts with no access.
 * Where the documentation names no error code the fake answers
 * CUDA_ERROR_INVALID_VALUE (double map, partial unmap, a free of a
 * reservation still mapped, the export of a handle not created for that
 * handle type): not checked against an H200 yet. The calls need cuInit, not
 * a current context. A read-only mapping is not write-protected (the fake's
 * copies would fault the process): a leniency, since the fake checks access
 * without the direction of a use. */
#define _GNU_SOURCE /* memfd_create */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fake_context.h"
#include "fake_device.h"
#include "fake_memory.h"

#define GRANULARITY ((size_t)2 << 20)

/* The memory: shared by the handles to it and its mappings. */
typedef struct vmm_block {
    int fd;
    size_t size;
    CUdevice device;
    unsigned long refs; /* live handles and mappings */
    bool charged;       /* counted in the device's bytes in use (not an adopted import) */
    dev_t st_dev;
    ino_t st_ino;
} vmm_block;

/* A CUmemGenericAllocationHandle: the record's address. */
typedef struct vmm_phys {
    fake_handle h; /* CUS_FAKE_HANDLE_PHYSICAL_MEMORY */
    vmm_block *block;
    unsigned long long handle_types;
    unsigned long retains; /* the create or import, and each cuMemRetainAllocationHandle */
} vmm_phys;

typedef struct vmm_res {
    fake_handle h; /* CUS_FAKE_HANDLE_VA_RESERVATION, under its address */
    uintptr_t base;
    size_t size;
} vmm_res;

typedef struct vmm_map {
    uintptr_t base;
    size_t size;
    vmm_phys *phys; /* the handle it was mapped with: cuMemRetainAllocationHandle's answer */
    vmm_block *block;
    fake_mem *mem;
    /* per granule, per device: CUmemAccess_flags */
    unsigned char *access;
} vmm_map;

static vmm_block **blocks; /* every block since install */
static size_t block_count, block_capacity;
static vmm_res **reservations; /* every reservation since install: their pages are ours */
static size_t res_count, res_capacity;
static vmm_map **maps; /* live mappings, unordered */
static size_t map_count, map_capacity;

static bool grow(void ***a, size_t count, size_t *capacity)
{
    if (count < *capacity)
        return true;
    size_t cap = *capacity ? *capacity * 2 : 16;
    void **list = realloc(*a, cap * sizeof *list);
    if (!list)
        return false;
    *a = list;
    *capacity = cap;
    return true;
}
#define GROW(a, count, capacity) grow((void ***)&(a), (count), &(capacity))

static size_t page_size(void)
{
    return (size_t)sysconf(_SC_PAGESIZE);
}

/* --- lookups ------------------------------------------------------------------------------ */

static CUresult phys_arg_locked(CUmemGenericAllocationHandle handle, vmm_phys **out)
{
    fake_handle *h = fake_handle_find_locked((uintptr_t)handle);
    if (!h || h->kind != CUS_FAKE_HANDLE_PHYSICAL_MEMORY) {
        fake_misuse_locked("unknown allocation handle 0x%llx", (unsigned long long)handle);
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (h->state != FAKE_LIVE) {
        fake_misuse_locked("allocation handle 0x%llx used after its cuMemRelease",
                           (unsigned long long)handle);
        return CUDA_ERROR_INVALID_VALUE;
    }
    *out = (vmm_phys *)h;
    return CUDA_SUCCESS;
}

static vmm_res *reservation_holding_locked(uintptr_t p, size_t n)
{
    for (size_t i = 0; i < res_count; i++) {
        vmm_res *r = reservations[i];
        if (r->h.state == FAKE_LIVE && p >= r->base && p - r->base < r->size &&
            n <= r->size - (p - r->base))
            return r;
    }
    return NULL;
}

static vmm_map *map_containing_locked(uintptr_t p)
{
    for (size_t i = 0; i < map_count; i++)
        if (p >= maps[i]->base && p - maps[i]->base < maps[i]->size)
            return maps[i];
    return NULL;
}

static bool meets(uintptr_t a, size_t an, uintptr_t b, size_t bn)
{
    return a < b + bn && b < a + an;
}

/* Whether the live mappings cover [p, p + n) with no hole; with `whole`,
 * each one they meet must lie inside it too. */
static bool covered_locked(uintptr_t p, size_t n, bool whole)
{
    size_t covered = 0;
    for (size_t i = 0; i < map_count; i++) {
        const vmm_map *m = maps[i];
        if (!meets(p, n, m->base, m->size))
            continue;
        if (whole && (m->base < p || m->base + m->size > p + n))
            return false;
        uintptr_t lo = m->base > p ? m->base : p;
        uintptr_t hi = m->base + m->size < p + n ? m->base + m->size : p + n;
        covered += hi - lo; /* mappings never overlap */
    }
    return covered == n;
}

static bool granular(uintptr_t v)
{
    return v % GRANULARITY == 0;
}

/* --- blocks -------------------------------------------------------------------------------- */

static void block_unref_locked(vmm_block *b)
{
    if (--b->refs)
        return;
    close(b->fd);
    b->fd = -1;
    if (b->charged)
        fake_memory_uncharge_locked(b->device, b->size);
}

static CUresult handle_new_locked(vmm_block *b, unsigned long long types,
                                  CUmemGenericAllocationHandle *out)
{
    vmm_phys *p = fake_handle_new_locked(CUS_FAKE_HANDLE_PHYSICAL_MEMORY, sizeof *p, 0);
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    p->block = b;
    p->handle_types = types;
    p->retains = 1;
    b->refs++;
    *out = (CUmemGenericAllocationHandle)(uintptr_t)p;
    return CUDA_SUCCESS;
}

/* --- allocation properties ------------------------------------------------------------------ */

static CUresult check_location(const CUmemLocation *l)
{
    if (l->type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE; /* host and NUMA locations: not emulated */
    return fake_device_at_locked(l->id) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

static CUresult check_prop(const CUmemAllocationProp *prop)
{
    if (prop->type != CU_MEM_ALLOCATION_TYPE_PINNED)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = check_location(&prop->location);
    if (r != CUDA_SUCCESS)
        return r;
    const fake_device *d = fake_device_at_locked(prop->location.id);
    if (!d || !d->attributes[CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED])
        return CUDA_ERROR_NOT_SUPPORTED;
    unsigned long long types = (unsigned long long)prop->requestedHandleTypes;
    if (types & ~(unsigned long long)CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return CUDA_ERROR_NOT_SUPPORTED; /* Win32, fabric: not on this platform */
    if ((types & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) &&
        !d->attributes[CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED])
        return CUDA_ERROR_NOT_SUPPORTED;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuMemGetAllocationGranularity(size_t *granularity,
                                                    const CUmemAllocationProp *prop,
                                                    CUmemAllocationGranularity_flags option)
{
    FAKE_ENTER(cuMemGetAllocationGranularity);
    if (!granularity || !prop ||
        (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
         option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    CUresult r = check_prop(prop);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    *granularity = GRANULARITY;
    return fake_leave(CUDA_SUCCESS);
}

/* --- physical allocations ------------------------------------------------------------------- */

CUresult CUDAAPI fake_cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                                  const CUmemAllocationProp *prop, unsigned long long flags)
{
    FAKE_ENTER(cuMemCreate);
    if (!handle || !prop || flags != 0 || size == 0 || !granular(size))
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    CUresult r = check_prop(prop);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    CUdevice dev = prop->location.id;
    if (!GROW(blocks, block_count, block_capacity))
        return fake_leave(CUDA_ERROR_OUT_OF_MEMORY);
    vmm_block *b = calloc(1, sizeof *b);
    if (!b)
        return fake_leave(CUDA_ERROR_OUT_OF_MEMORY);
    b->fd = memfd_create("cuscope-fake-physical", MFD_CLOEXEC);
    struct stat st;
    if (b->fd < 0 || ftruncate(b->fd, (off_t)size) != 0 || fstat(b->fd, &st) != 0 ||
        !fake_memory_charge_locked(dev, size)) {
        if (b->fd >= 0)
            close(b->fd);
        free(b);
        return fake_leave(CUDA_ERROR_OUT_OF_MEMORY);
    }
    b->size = size;
    b->device = dev;
    b->charged = true;
    b->st_dev = st.st_dev;
    b->st_ino = st.st_ino;
    r = handle_new_locked(b, (unsigned long long)prop->requestedHandleTypes, handle);
    if (r != CUDA_SUCCESS) {
        close(b->fd);
        fake_memory_uncharge_locked(dev, size);
        free(b);
        return fake_leave(r);
    }
    blocks[block_count++] = b;
    return fake_leave(CUDA_SUCCESS);
}

/* The handle's last release: the memory goes once no mapping holds it
 * either, as the driver documents. */
static void phys_release_locked(vmm_phys *p)
{
    if (--p->retains)
        return;
    fake_handle_set_state_locked(&p->h, FAKE_DESTROYED);
    block_unref_locked(p->block);
}

CUresult CUDAAPI fake_cuMemRelease(CUmemGenericAllocationHandle handle)
{
    FAKE_ENTER(cuMemRelease);
    vmm_phys *p = NULL;
    CUresult r = phys_arg_locked(handle, &p);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    phys_release_locked(p);
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuMemExportToShareableHandle(void *shareableHandle,
                                                   CUmemGenericAllocationHandle handle,
                                                   CUmemAllocationHandleType handleType,
                                                   unsigned long long flags)
{
    FAKE_ENTER(cuMemExportToShareableHandle);
    if (!shareableHandle || flags != 0)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    if (handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return fake_leave(CUDA_ERROR_NOT_SUPPORTED);
    vmm_phys *p = NULL;
    CUresult r = phys_arg_locked(handle, &p);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (!(p->handle_types & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    int fd = fcntl(p->block->fd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0)
        return fake_leave(CUDA_ERROR_OPERATING_SYSTEM);
    *(int *)shareableHandle = fd;
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle,
                                                     void *osHandle,
                                                     CUmemAllocationHandleType shHandleType)
{
    FAKE_ENTER(cuMemImportFromShareableHandle);
    if (!handle)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    if (shHandleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return fake_leave(CUDA_ERROR_NOT_SUPPORTED);
    int fd = (int)(intptr_t)osHandle;
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    for (size_t i = 0; i < block_count; i++) {
        vmm_block *b = blocks[i];
        if (b->refs && b->st_dev == st.st_dev && b->st_ino == st.st_ino)
            return fake_leave(
                handle_new_locked(b, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, handle));
    }
    /* Another process's allocation (its fake's memfd): adopted, on the
     * current context's device, not counted against this process's budget. */
    size_t size = (size_t)st.st_size;
    if (size == 0 || !granular(size))
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    struct CUctx_st *c = NULL;
    CUdevice dev = fake_current_context_locked(&c) == CUDA_SUCCESS && c ? c->device : 0;
    if (!GROW(blocks, block_count, block_capacity))
        return fake_leave(CUDA_ERROR_OUT_OF_MEMORY);
    vmm_block *b = calloc(1, sizeof *b);
    if (!b)
        return fake_leave(CUDA_ERROR_OUT_OF_MEMORY);
    b->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (b->fd < 0) {
        free(b);
        return fake_leave(CUDA_ERROR_OPERATING_SYSTEM);
    }
    b->size = size;
    b->device = dev;
    b->st_dev = st.st_dev;
    b->st_ino = st.st_ino;
    CUresult r = handle_new_locked(b, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, handle);
    if (r != CUDA_SUCCESS) {
        close(b->fd);
        free(b);
        return fake_leave(r);
    }
    blocks[block_count++] = b;
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle,
                                                  void *addr)
{
    FAKE_ENTER(cuMemRetainAllocationHandle);
    if (!handle)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    vmm_map *m = map_containing_locked((uintptr_t)addr);
    if (!m)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    vmm_phys *p = m->phys;
    if (p->retains++ == 0) { /* released, still mapped: the same value again */
        fake_handle_set_state_locked(&p->h, FAKE_LIVE);
        p->block->refs++;
    }
    *handle = (CUmemGenericAllocationHandle)(uintptr_t)p;
    return fake_leave(CUDA_SUCCESS);
}

/* --- reservations --------------------------------------------------------------------------- */

/* `length` bytes of PROT_NONE address space at a multiple of `align`, at
 * `hint` when that is free; NULL when the host has no room. */
static void *reserve_pages(size_t length, size_t align, uintptr_t hint)
{
    const int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
    if (hint && hint % align == 0) {
#ifdef MAP_FIXED_NOREPLACE
        void *p = mmap((void *)hint, length, PROT_NONE, flags | MAP_FIXED_NOREPLACE, -1, 0);
        if (p == (void *)hint)
            return p;
        if (p != MAP_FAILED)
            munmap(p, length); /* an old kernel took it as a hint */
#endif
    }
    if (length > SIZE_MAX - align)
        return NULL;
    char *p = mmap(NULL, length + align, PROT_NONE, flags, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    uintptr_t start = ((uintptr_t)p + align - 1) / align * align;
    size_t before = start - (uintptr_t)p, after = align - before;
    if (before)
        munmap(p, before);
    if (after)
        munmap((char *)start + length, after);
    return (void *)start;
}

CUresult CUDAAPI fake_cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
                                          CUdeviceptr addr, unsigned long long flags)
{
    FAKE_ENTER(cuMemAddressReserve);
    size_t page = page_size();
    if (!ptr || flags != 0 || size == 0 || size % page || addr % page ||
        (alignment & (alignment - 1)))
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    size_t align = alignment > GRANULARITY ? alignment : GRANULARITY;
    if (!GROW(reservations, res_count, res_capacity))
        return fake_leave(CUDA_ERROR_OUT_OF_MEMORY);
    void *p = reserve_pages(size, align, (uintptr_t)addr);
    if (!p)
        return fake_leave(CUDA_ERROR_OUT_OF_MEMORY);
    vmm_res *r = fake_handle_new_locked(CUS_FAKE_HANDLE_VA_RESERVATION, sizeof *r, (uintptr_t)p);
    if (!r) {
        munmap(p, size);
        return fake_leave(CUDA_ERROR_OUT_OF_MEMORY);
    }
    r->base = (uintptr_t)p;
    r->size = size;
    reservations[res_count++] = r;
    *ptr = (CUdeviceptr)(uintptr_t)p;
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    FAKE_ENTER(cuMemAddressFree);
    fake_handle *h = fake_handle_find_locked((uintptr_t)ptr);
    if (!h || h->kind != CUS_FAKE_HANDLE_VA_RESERVATION) {
        fake_misuse_locked("cuMemAddressFree of 0x%llx, which no cuMemAddressReserve returned",
                           (unsigned long long)ptr);
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    }
    vmm_res *r = (vmm_res *)h;
    if (h->state != FAKE_LIVE) {
        fake_misuse_locked("double free: cuMemAddressFree of the reservation at 0x%llx, already "
                           "freed",
                           (unsigned long long)ptr);
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    }
    if (size != r->size)
        return fake_leave(CUDA_ERROR_INVALID_VALUE); /* the size reserved, exactly */
    for (size_t i = 0; i < map_count; i++)
        if (meets(r->base, r->size, maps[i]->base, maps[i]->size)) {
            fake_misuse_locked("cuMemAddressFree of the reservation at 0x%llx, still mapped at "
                               "0x%" PRIxPTR "+%zu (cuMemUnmap first)",
                               (unsigned long long)ptr, maps[i]->base, maps[i]->size);
            return fake_leave(CUDA_ERROR_INVALID_VALUE);
        }
    /* The pages stay reserved, PROT_NONE, until the next install: a later
     * use is an unknown address, and no address is reused. */
    fake_handle_set_state_locked(h, FAKE_DESTROYED);
    return fake_leave(CUDA_SUCCESS);
}

/* --- mappings ------------------------------------------------------------------------------ */

/* The host protection of a mapping's granule: readable and writable as soon
 * as any device has access (the fake's copies run on the host), else none. */
static void protect_granule(const vmm_map *m, size_t g)
{
    bool any = false;
    for (int d = 0; d < CUS_FAKE_MAX_DEVICES; d++)
        any |= m->access[g * CUS_FAKE_MAX_DEVICES + (size_t)d] != CU_MEM_ACCESS_FLAGS_PROT_NONE;
    (void)mprotect((void *)(m->base + g * GRANULARITY), GRANULARITY,
                   any ? PROT_READ | PROT_WRITE : PROT_NONE);
}

static CUmemAccess_flags access_of(const void *mapping, uintptr_t addr, size_t n, CUdevice device)
{
    const vmm_map *m = mapping;
    if (device < 0 || device >= CUS_FAKE_MAX_DEVICES || n == 0)
        return CU_MEM_ACCESS_FLAGS_PROT_NONE;
    CUmemAccess_flags weakest = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    for (size_t g = (addr - m->base) / GRANULARITY; g <= (addr + n - 1 - m->base) / GRANULARITY;
         g++) {
        CUmemAccess_flags f = m->access[g * CUS_FAKE_MAX_DEVICES + (size_t)device];
        if (f < weakest)
            weakest = f;
    }
    return weakest;
}

CUresult CUDAAPI fake_cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                               CUmemGenericAllocationHandle handle, unsigned long long flags)
{
    FAKE_ENTER(cuMemMap);
    uintptr_t p = (uintptr_t)ptr;
    if (flags != 0 || size == 0 || !granular(p) || !granular(size) || !granular(offset))
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    vmm_phys *ph = NULL;
    CUresult r = phys_arg_locked(handle, &ph);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    vmm_block *b = ph->block;
    if (offset > b->size || size > b->size - offset)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    if (!reservation_holding_locked(p, size)) {
        fake_misuse_locked("cuMemMap of 0x%" PRIxPTR "+%zu, outside every live reservation", p,
                           size);
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    }
    for (size_t i = 0; i < map_count; i++)
        if (meets(p, size, maps[i]->base, maps[i]->size)) {
            fake_misuse_locked("cuMemMap of 0x%" PRIxPTR "+%zu meets the mapping at 0x%" PRIxPTR
                               "+%zu: a range is mapped once",
                               p, size, maps[i]->base, maps[i]->size);
            return fake_leave(CUDA_ERROR_INVALID_VALUE);
        }
    if (!GROW(maps, map_count, map_capacity))
        return fake_leave(CUDA_ERROR_OUT_OF_MEMORY);
    vmm_map *m = calloc(1, sizeof *m);
    if (m)
        m->access = calloc(size / GRANULARITY, CUS_FAKE_MAX_DEVICES);
    if (!m || !m->access) {
        if (m)
            free(m);
        return fake_leave(CUDA_ERROR_OUT_OF_MEMORY);
    }
    m->base = p;
    m->size = size;
    m->phys = ph;
    m->block = b;
    m->mem = fake_memory_mapping_new_locked(m, b->device, p, size);
    if (!m->mem ||
        mmap((void *)p, size, PROT_NONE, MAP_SHARED | MAP_FIXED, b->fd, (off_t)offset) ==
            MAP_FAILED) {
        if (m->mem)
            fake_memory_mapping_release_locked(m->mem);
        free(m->access);
        free(m);
        return fake_leave(CUDA_ERROR_OUT_OF_MEMORY);
    }
    b->refs++;
    maps[map_count++] = m;
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    FAKE_ENTER(cuMemUnmap);
    uintptr_t p = (uintptr_t)ptr;
    if (size == 0 || !granular(p) || !granular(size))
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    if (!covered_locked(p, size, true)) {
        fake_misuse_locked("cuMemUnmap of 0x%" PRIxPTR "+%zu, which is not whole mappings "
                           "(a mapping is unmapped from its start to its end)",
                           p, size);
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    }
    for (size_t i = map_count; i-- > 0;) {
        vmm_map *m = maps[i];
        if (!meets(p, size, m->base, m->size))
            continue;
        /* The reservation's own pages back: PROT_NONE, unbacked. */
        (void)mmap((void *)m->base, m->size, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
        fake_memory_mapping_release_locked(m->mem);
        block_unref_locked(m->block);
        free(m->access);
        free(m);
        maps[i] = maps[--map_count];
    }
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc,
                                     size_t count)
{
    FAKE_ENTER(cuMemSetAccess);
    uintptr_t p = (uintptr_t)ptr;
    if (!desc || count == 0 || size == 0 || !granular(p) || !granular(size))
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    for (size_t i = 0; i < count; i++) {
        CUresult r = check_location(&desc[i].location);
        if (r != CUDA_SUCCESS)
            return fake_leave(r);
        if (desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE &&
            desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
            desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            return fake_leave(CUDA_ERROR_INVALID_VALUE);
    }
    if (!covered_locked(p, size, false)) {
        fake_misuse_locked("cuMemSetAccess of 0x%" PRIxPTR "+%zu, which is not all mapped", p,
                           size);
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    }
    for (size_t i = 0; i < map_count; i++) {
        vmm_map *m = maps[i];
        if (!meets(p, size, m->base, m->size))
            continue;
        uintptr_t lo = m->base > p ? m->base : p;
        uintptr_t hi = m->base + m->size < p + size ? m->base + m->size : p + size;
        for (size_t g = (lo - m->base) / GRANULARITY; g < (hi - m->base) / GRANULARITY; g++) {
            for (size_t k = 0; k < count; k++)
                m->access[g * CUS_FAKE_MAX_DEVICES + (size_t)desc[k].location.id] =
                    (unsigned char)desc[k].flags;
            protect_granule(m, g);
        }
    }
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuMemGetAccess(unsigned long long *flags, const CUmemLocation *location,
                                     CUdeviceptr ptr)
{
    FAKE_ENTER(cuMemGetAccess);
    if (!flags || !location)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    CUresult r = check_location(location);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    const vmm_map *m = map_containing_locked((uintptr_t)ptr);
    if (!m)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    *flags = access_of(m, (uintptr_t)ptr, 1, location->id);
    return fake_leave(CUDA_SUCCESS);
}

/* --- the area -------------------------------------------------------------------------------- */

static void vmm_reset_locked(const cus_fake_config *cfg)
{
    (void)cfg;
    for (size_t i = 0; i < map_count; i++) {
        free(maps[i]->access);
        free(maps[i]); /* the memory area frees its records */
    }
    free(maps);
    maps = NULL;
    map_count = map_capacity = 0;
    for (size_t i = 0; i < res_count; i++)
        munmap((void *)reservations[i]->base, reservations[i]->size); /* the registry frees it */
    free(reservations);
    reservations = NULL;
    res_count = res_capacity = 0;
    for (size_t i = 0; i < block_count; i++) {
        if (blocks[i]->fd >= 0)
            close(blocks[i]->fd);
        free(blocks[i]);
    }
    free(blocks);
    blocks = NULL;
    block_count = block_capacity = 0;
}

static const fake_area vmm_area = {
    .name = "vmm",
    .reset_order = 31, /* after the memory area, which counts our bytes */
    .teardown_order = 31,
    .reset_locked = vmm_reset_locked,
};

__attribute__((constructor)) static void vmm_register(void)
{
    fake_area_register(&vmm_area);
    fake_memory_set_mapping_access_fn(access_of);
}
