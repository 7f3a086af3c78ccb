/* Memory pools: each device's default and current pool, cuMemPoolCreate's
 * pools, their attributes and accounting, trim and access, stream-ordered
 * allocation from a pool, and export and import within one process; part
 * of the memory area (fake_memory.c has the records and blocks), an area of
 * its own for the pools (cuscope/fake.h, "memory pools", says what is
 * emulated).
 *
 * Export gives a real file descriptor (a memfd of its own, which the caller
 * closes), known by its inode: an import finds the pool from the descriptor
 * or any dup of it (one received over a socket). Export data names the
 * allocation by its address and handle id. */
#define _GNU_SOURCE /* memfd_create */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fake_memory_records.h"

static fake_pool default_pools[CUS_FAKE_MAX_DEVICES];
static fake_pool *current[CUS_FAKE_MAX_DEVICES];

typedef struct pool_export {
    dev_t dev;
    ino_t ino;
    fake_pool *pool;
} pool_export;

static pool_export *exports;
static size_t export_count, export_capacity;

/* Export data: magic, the allocation's handle id and address. */
static const char export_magic[8] = {'c', 'u', 's', 'f', 'a', 'k', 'e', 'p'};

static void pool_defaults(fake_pool *p, CUdevice dev)
{
    p->device = dev;
    for (int i = 0; i < 3; i++)
        p->reuse[i] = 1; /* every reuse policy on, the driver's default */
    p->access[dev] = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
}

static void pool_reset_locked(const cus_fake_config *cfg)
{
    (void)cfg;
    /* Every slot: the device area (reset last) sets the count later. */
    for (int i = 0; i < CUS_FAKE_MAX_DEVICES; i++) {
        fake_pool *p = &default_pools[i];
        memset(p, 0, sizeof *p);
        p->h.kind = CUS_FAKE_HANDLE_MEMORY_POOL;
        p->h.state = FAKE_LIVE;
        p->h.key = (uintptr_t)p;
        p->is_default = true;
        pool_defaults(p, i);
        current[i] = p;
    }
    free(exports);
    exports = NULL;
    export_count = export_capacity = 0;
}

/* --- lookups and accounting ------------------------------------------------------------------- */

static CUresult pool_arg_locked(CUmemoryPool hp, const char *call, fake_pool **out)
{
    if (!hp)
        return CUDA_ERROR_INVALID_VALUE;
    for (int i = 0; i < fake_dev.count; i++)
        if ((fake_pool *)hp == &default_pools[i]) {
            *out = &default_pools[i];
            return CUDA_SUCCESS;
        }
    fake_handle *h = fake_handle_find_locked((uintptr_t)hp);
    if (!h || h->kind != CUS_FAKE_HANDLE_MEMORY_POOL) {
        fake_misuse_locked("%s of %p, which is not a memory pool of the fake", call, (void *)hp);
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (h->state != FAKE_LIVE) {
        fake_misuse_locked("%s of memory pool %p after its cuMemPoolDestroy", call, (void *)hp);
        return CUDA_ERROR_INVALID_VALUE;
    }
    *out = (fake_pool *)h;
    return CUDA_SUCCESS;
}

static bool pools_supported(CUdevice dev)
{
    return fake_dev.devices[dev].attributes[CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED] != 0;
}

fake_pool *fake_pool_current_locked(CUdevice dev)
{
    return current[dev];
}

static void account_locked(fake_pool *p, fake_mem *m)
{
    m->pool = p;
    p->used += m->size;
    if (p->used > p->used_high)
        p->used_high = p->used;
    if (p->used > p->reserved)
        p->reserved = p->used; /* the rest reused what was reserved */
    if (p->reserved > p->reserved_high)
        p->reserved_high = p->reserved;
}

void fake_pool_released_locked(fake_mem *m)
{
    fake_pool *p = m->pool;
    p->used = p->used >= m->size ? p->used - m->size : 0;
    /* Imported pools give nothing back (documented). */
    if (!p->imported && p->reserved > p->threshold)
        p->reserved = p->used > p->threshold ? p->used : p->threshold;
}

CUresult fake_pool_alloc_locked(struct CUstream_st *s, fake_pool *p, size_t size,
                                CUdeviceptr *dptr)
{
    struct CUctx_st *c = s->ctx;
    bool captured = s->capture != NULL; /* a graph's allocation node (fake_graph.c) */
    if (!captured && p->max_size && (p->used > p->max_size || size > p->max_size - p->used))
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (!fake_memory_fits_locked(c, size))
        return CUDA_ERROR_OUT_OF_MEMORY;
    fake_mem *m = NULL;
    CUresult r = !captured && p->handle_types == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
                     ? fake_memory_allocate_shared_locked(size, c, p->device, NULL, &m)
                     : fake_memory_allocate_locked(CUS_FAKE_HANDLE_DEVICE_MEMORY, size, c, 0, &m);
    if (r != CUDA_SUCCESS)
        return r;
    m->async = true;
    m->graph = captured;
    fake_op op = {.kind = FAKE_OP_ALLOC, .u.mem = {m}};
    r = fake_stream_enqueue_locked(s, &op, NULL, 0);
    if (r != CUDA_SUCCESS) {
        m->graph = false;
        fake_memory_release_locked(m); /* never handed out */
        return r;
    }
    if (!captured)
        account_locked(p, m);
    *dptr = (CUdeviceptr)m->base;
    return CUDA_SUCCESS;
}

/* --- the device's pools ------------------------------------------------------------------------- */

static CUresult device_pool_arg_locked(CUmemoryPool *pool_out, CUdevice dev)
{
    if (!pool_out)
        return CUDA_ERROR_INVALID_VALUE;
    if (!fake_device_at_locked(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    if (!pools_supported(dev))
        return CUDA_ERROR_NOT_SUPPORTED;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
    FAKE_ENTER(cuDeviceGetDefaultMemPool);
    CUresult r = device_pool_arg_locked(pool_out, dev);
    if (r == CUDA_SUCCESS)
        *pool_out = (CUmemoryPool)&default_pools[dev];
    return fake_leave(r);
}

CUresult CUDAAPI fake_cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
    FAKE_ENTER(cuDeviceGetMemPool);
    CUresult r = device_pool_arg_locked(pool, dev);
    if (r == CUDA_SUCCESS)
        *pool = (CUmemoryPool)current[dev];
    return fake_leave(r);
}

CUresult CUDAAPI fake_cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
    FAKE_ENTER(cuDeviceSetMemPool);
    if (!fake_device_at_locked(dev))
        return fake_leave(CUDA_ERROR_INVALID_DEVICE);
    fake_pool *p = NULL;
    CUresult r = pool_arg_locked(pool, "cuDeviceSetMemPool", &p);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    /* Local to the device, and able to allocate. */
    if (p->device != dev || p->imported)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    current[dev] = p;
    return fake_leave(CUDA_SUCCESS);
}

/* --- created pools ------------------------------------------------------------------------------ */

static bool all_zero(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return false;
    return true;
}

CUresult CUDAAPI fake_cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props)
{
    FAKE_ENTER(cuMemPoolCreate);
    if (!pool || !props || props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
        props->win32SecurityAttributes || !all_zero(props->reserved, sizeof props->reserved))
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    if (props->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return fake_leave(CUDA_ERROR_NOT_SUPPORTED); /* host pools: not emulated */
    CUdevice dev = props->location.id;
    if (!fake_device_at_locked(dev))
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    if (!pools_supported(dev) || props->usage)
        return fake_leave(CUDA_ERROR_NOT_SUPPORTED);
    if (props->handleTypes != CU_MEM_HANDLE_TYPE_NONE) {
        int supported =
            fake_dev.devices[dev].attributes[CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES];
        /* Only descriptors are emulated (fabric and Win32 handles are not). */
        if (props->handleTypes != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR ||
            !(supported & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
            return fake_leave(CUDA_ERROR_NOT_SUPPORTED);
    }
    fake_pool *p = fake_handle_new_locked(CUS_FAKE_HANDLE_MEMORY_POOL, sizeof *p, 0);
    if (!p)
        return fake_leave(CUDA_ERROR_OUT_OF_MEMORY);
    pool_defaults(p, dev);
    p->handle_types = props->handleTypes;
    p->max_size = props->maxSize;
    *pool = (CUmemoryPool)p;
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuMemPoolDestroy(CUmemoryPool pool)
{
    FAKE_ENTER(cuMemPoolDestroy);
    fake_pool *p = NULL;
    CUresult r = pool_arg_locked(pool, "cuMemPoolDestroy", &p);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (p->is_default)
        return fake_leave(CUDA_ERROR_INVALID_VALUE); /* documented: it cannot be */
    /* Its allocations stay valid until freed (the driver releases the pool
     * then); their accounting goes to the dead record. */
    fake_handle_set_state_locked(&p->h, FAKE_DESTROYED);
    if (current[p->device] == p)
        current[p->device] = &default_pools[p->device];
    return fake_leave(CUDA_SUCCESS);
}

/* --- attributes, trim, access -------------------------------------------------------------------- */

static bool is_reuse(CUmemPool_attribute attr)
{
    return attr >= CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES &&
           attr <= CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES;
}

CUresult CUDAAPI fake_cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr,
                                            void *value)
{
    FAKE_ENTER(cuMemPoolSetAttribute);
    fake_pool *p = NULL;
    CUresult r = pool_arg_locked(pool, "cuMemPoolSetAttribute", &p);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (!value)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    if (is_reuse(attr)) {
        p->reuse[attr - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES] = *(int *)value != 0;
        return fake_leave(CUDA_SUCCESS);
    }
    cuuint64_t v = *(cuuint64_t *)value;
    switch (attr) {
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
        p->threshold = v;
        return fake_leave(CUDA_SUCCESS);
    /* A high-water mark is reset, to its current value, by 0 only. */
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
        if (v)
            return fake_leave(CUDA_ERROR_INVALID_VALUE);
        p->reserved_high = p->reserved;
        return fake_leave(CUDA_SUCCESS);
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
        if (v)
            return fake_leave(CUDA_ERROR_INVALID_VALUE);
        p->used_high = p->used;
        return fake_leave(CUDA_SUCCESS);
    default: /* the current values are read-only */
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    }
}

CUresult CUDAAPI fake_cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr,
                                            void *value)
{
    FAKE_ENTER(cuMemPoolGetAttribute);
    fake_pool *p = NULL;
    CUresult r = pool_arg_locked(pool, "cuMemPoolGetAttribute", &p);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (!value)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    if (is_reuse(attr)) {
        *(int *)value = p->reuse[attr - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES];
        return fake_leave(CUDA_SUCCESS);
    }
    cuuint64_t *out = value;
    switch (attr) {
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
        *out = p->threshold;
        break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
        *out = p->reserved;
        break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
        *out = p->reserved_high;
        break;
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
        *out = p->used;
        break;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
        *out = p->used_high;
        break;
    default:
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    }
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
    FAKE_ENTER(cuMemPoolTrimTo);
    fake_pool *p = NULL;
    CUresult r = pool_arg_locked(pool, "cuMemPoolTrimTo", &p);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (!p->imported && p->reserved > minBytesToKeep)
        p->reserved = p->used > minBytesToKeep ? p->used : minBytesToKeep;
    return fake_leave(CUDA_SUCCESS);
}

static CUresult location_arg_locked(const CUmemLocation *loc)
{
    if (!loc || loc->type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    return fake_device_at_locked(loc->id) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

CUresult CUDAAPI fake_cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc *map,
                                         size_t count)
{
    FAKE_ENTER(cuMemPoolSetAccess);
    fake_pool *p = NULL;
    CUresult r = pool_arg_locked(pool, "cuMemPoolSetAccess", &p);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (count && !map)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    /* The whole map is checked before any entry applies, as the driver does. */
    for (size_t i = 0; i < count; i++) {
        if ((r = location_arg_locked(&map[i].location)) != CUDA_SUCCESS)
            return fake_leave(r);
        CUmemAccess_flags f = map[i].flags;
        if (f != CU_MEM_ACCESS_FLAGS_PROT_NONE && f != CU_MEM_ACCESS_FLAGS_PROT_READ &&
            f != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            return fake_leave(CUDA_ERROR_INVALID_VALUE);
        /* The owning device's read-write access cannot change. */
        if (map[i].location.id == p->device && f != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            return fake_leave(CUDA_ERROR_INVALID_DEVICE);
    }
    for (size_t i = 0; i < count; i++)
        p->access[map[i].location.id] = map[i].flags;
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuMemPoolGetAccess(CUmemAccess_flags *flags, CUmemoryPool memPool,
                                         CUmemLocation *location)
{
    FAKE_ENTER(cuMemPoolGetAccess);
    fake_pool *p = NULL;
    CUresult r = pool_arg_locked(memPool, "cuMemPoolGetAccess", &p);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (!flags)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    if ((r = location_arg_locked(location)) != CUDA_SUCCESS)
        return fake_leave(r);
    *flags = p->access[location->id];
    return fake_leave(CUDA_SUCCESS);
}

/* --- allocation ------------------------------------------------------------------------------- */

CUresult CUDAAPI fake_cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize,
                                              CUmemoryPool pool, CUstream hStream)
{
    FAKE_ENTER(cuMemAllocFromPoolAsync);
    struct CUstream_st *s = NULL;
    CUresult r = fake_stream_arg_locked(hStream, &s);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (!dptr || bytesize == 0)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    fake_pool *p = NULL;
    if ((r = pool_arg_locked(pool, "cuMemAllocFromPoolAsync", &p)) != CUDA_SUCCESS)
        return fake_leave(r);
    if (p->imported) /* documented: imported pools do not allocate */
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    return fake_leave(fake_pool_alloc_locked(s, p, bytesize, dptr));
}

/* --- IPC ----------------------------------------------------------------------------------------- */

CUresult CUDAAPI fake_cuMemPoolExportToShareableHandle(void *handle_out, CUmemoryPool pool,
                                                       CUmemAllocationHandleType handleType,
                                                       unsigned long long flags)
{
    FAKE_ENTER(cuMemPoolExportToShareableHandle);
    fake_pool *p = NULL;
    CUresult r = pool_arg_locked(pool, "cuMemPoolExportToShareableHandle", &p);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    /* Only a pool made with that handle type (never a default one). */
    if (!handle_out || flags || handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR ||
        p->handle_types != handleType)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    if (export_count == export_capacity) {
        size_t cap = export_capacity ? export_capacity * 2 : 8;
        pool_export *e = realloc(exports, cap * sizeof *e);
        if (!e)
            return fake_leave(CUDA_ERROR_OUT_OF_MEMORY);
        exports = e;
        export_capacity = cap;
    }
    int fd = memfd_create("cuscope-fake-pool-export", MFD_CLOEXEC);
    struct stat st;
    if (fd < 0)
        return fake_leave(CUDA_ERROR_OUT_OF_MEMORY);
    if (fstat(fd, &st) != 0) {
        close(fd);
        return fake_leave(CUDA_ERROR_OUT_OF_MEMORY);
    }
    exports[export_count++] = (pool_export){st.st_dev, st.st_ino, p};
    p->exported = true;
    *(int *)handle_out = fd;
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuMemPoolImportFromShareableHandle(CUmemoryPool *pool_out, void *handle,
                                                         CUmemAllocationHandleType handleType,
                                                         unsigned long long flags)
{
    FAKE_ENTER(cuMemPoolImportFromShareableHandle);
    int fd = (int)(intptr_t)handle; /* a descriptor comes by value */
    struct stat st;
    if (!pool_out || flags || handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR || fd < 0 ||
        fstat(fd, &st) != 0)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    fake_pool *origin = NULL;
    for (size_t i = 0; i < export_count && !origin; i++)
        if (exports[i].dev == st.st_dev && exports[i].ino == st.st_ino)
            origin = exports[i].pool;
    if (!origin) /* not a descriptor of an exported pool */
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    fake_pool *p = fake_handle_new_locked(CUS_FAKE_HANDLE_MEMORY_POOL, sizeof *p, 0);
    if (!p)
        return fake_leave(CUDA_ERROR_OUT_OF_MEMORY);
    pool_defaults(p, origin->device);
    p->imported = true;
    p->origin = origin;
    *pool_out = (CUmemoryPool)p;
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuMemPoolExportPointer(CUmemPoolPtrExportData *shareData_out,
                                             CUdeviceptr ptr)
{
    FAKE_ENTER(cuMemPoolExportPointer);
    if (!shareData_out)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    fake_handle *h = fake_handle_find_locked((uintptr_t)ptr);
    const fake_mem *m = h && h->kind == CUS_FAKE_HANDLE_DEVICE_MEMORY ? (const fake_mem *)h : NULL;
    /* The start of a live allocation of an exportable pool. */
    /* The start of a live allocation of a pool exported before (the H200's
     * answer to a pointer of a pool not yet exported: CUDA_ERROR_INVALID_VALUE). */
    if (!m || m->h.state != FAKE_LIVE || !m->pool || m->imported ||
        m->pool->handle_types != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR || !m->pool->exported)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    uint64_t id = m->h.id, base = m->base;
    memset(shareData_out, 0, sizeof *shareData_out);
    memcpy(shareData_out->reserved, export_magic, sizeof export_magic);
    memcpy(shareData_out->reserved + 8, &id, sizeof id);
    memcpy(shareData_out->reserved + 16, &base, sizeof base);
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuMemPoolImportPointer(CUdeviceptr *ptr_out, CUmemoryPool pool,
                                             CUmemPoolPtrExportData *shareData)
{
    FAKE_ENTER(cuMemPoolImportPointer);
    fake_pool *p = NULL;
    CUresult r = pool_arg_locked(pool, "cuMemPoolImportPointer", &p);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (!ptr_out || !shareData || !p->imported ||
        memcmp(shareData->reserved, export_magic, sizeof export_magic) != 0)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    uint64_t id, base;
    memcpy(&id, shareData->reserved + 8, sizeof id);
    memcpy(&base, shareData->reserved + 16, sizeof base);
    fake_handle *h = fake_handle_find_locked((uintptr_t)base);
    fake_mem *m = h && h->kind == CUS_FAKE_HANDLE_DEVICE_MEMORY ? (fake_mem *)h : NULL;
    /* A live allocation of the pool this one imported. */
    if (!m || m->h.id != id || m->h.state != FAKE_LIVE || m->pool != p->origin)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    /* Owned by the importing context: the current one, else the exporter's. */
    struct CUctx_st *c = NULL;
    if (fake_current_context_locked(&c) != CUDA_SUCCESS)
        c = m->ctx;
    fake_mem *imp = NULL;
    if ((r = fake_memory_allocate_shared_locked(m->size, c, p->device, m, &imp)) != CUDA_SUCCESS)
        return fake_leave(r);
    account_locked(p, imp);
    *ptr_out = (CUdeviceptr)imp->base;
    return fake_leave(CUDA_SUCCESS);
}

/* --- the area -------------------------------------------------------------------------------- */

/* Pools belong to devices: nothing of theirs goes with a context (their
 * allocations go with the memory's owners, fake_memory.c). */
static const fake_area pool_area = {
    .name = "memory pools",
    .reset_order = 32,
    .teardown_order = 32,
    .reset_locked = pool_reset_locked,
};
FAKE_AREA(pool_area)
