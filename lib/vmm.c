/* Virtual memory management: physical allocations (cuMemCreate), address
 * reservations (cuMemAddressReserve), the mappings between them (cuMemMap,
 * cuMemSetAccess, cuMemUnmap), views of mapped ranges as buffers, and the
 * growable buffer built on them.
 *
 * A reservation keeps its mappings in an array sorted by offset, under its
 * lock: each holds its physical allocation, the access cuscope set on it, and
 * a count of the views that cover part of it, so that a map that meets a
 * mapping, an unmap of part of one, and an unmap under a live view are
 * refused before the driver sees them. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "buffer_owner.h"
#include "cuscope/vmm.h"
#include "internal.h"

struct cus_physical {
    cus_refcount refs;
    CUmemGenericAllocationHandle handle;
    size_t size;
    size_t granularity;
    unsigned int handle_types;
    cus_context *ctx; /* a reference */
};

typedef struct vmm_mapping_ {
    size_t offset, bytes;
    cus_physical *phys; /* a reference, until unmapped */
    size_t phys_offset;
    CUmemAccess_flags access; /* as last set through cuscope, for ctx's device */
    unsigned long views;      /* live buffer views over part of it */
} vmm_mapping_;

struct cus_reservation {
    cus_refcount refs;
    CUdeviceptr ptr;
    size_t size;
    size_t granularity;
    cus_context *ctx; /* a reference */
    pthread_mutex_t lock;
    vmm_mapping_ *maps; /* by offset, under the lock */
    size_t nmaps, capacity;
    size_t mapped; /* bytes, under the lock */
};

struct cus_growable {
    cus_refcount refs;
    cus_reservation *res; /* a reference */
    pthread_mutex_t lock; /* serializes grows */
    atomic_size_t size;
    size_t mapped; /* under the lock */
    size_t max;
};

/* --- helpers ----------------------------------------------------------------------------- */

#define NEED_ENTRY(entry)                                                      \
    do {                                                                       \
        if (CUS_UNLIKELY(!cus_drv_.entry##_))                                  \
            return CUS_FAIL(CUS_ERROR_NOT_SUPPORTED, NULL,                     \
                            "the driver lacks " #entry " (virtual memory management, CUDA 10.2+)"); \
    } while (0)

static CUmemAllocationProp prop_for(const cus_context *ctx, unsigned int handle_types)
{
    CUmemAllocationProp p;
    memset(&p, 0, sizeof p);
    p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.requestedHandleTypes = (CUmemAllocationHandleType)handle_types;
    p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.location.id = ctx->device.handle;
    return p;
}

static CUmemLocation location_of(const cus_context *ctx)
{
    CUmemLocation l;
    memset(&l, 0, sizeof l);
    l.type = CU_MEM_LOCATION_TYPE_DEVICE;
    l.id = ctx->device.handle;
    return l;
}

/* The minimum (or recommended) granularity of ctx's device, recorded on
 * failure under the public function's name. */
static cus_status granularity_of(cus_context *ctx, unsigned int handle_types, bool recommended,
                                 size_t *out, const char *function)
{
    if (!cus_drv_.cuMemGetAllocationGranularity_)
        return cus_fail_(CUS_ERROR_NOT_SUPPORTED, function, NULL,
                         "the driver lacks cuMemGetAllocationGranularity (virtual memory "
                         "management, CUDA 10.2+)");
    CUmemAllocationProp p = prop_for(ctx, handle_types);
    size_t g = 0;
    CUS_IN_CONTEXT_AS(function, ctx, "cuMemGetAllocationGranularity",
                      cus_drv_.cuMemGetAllocationGranularity_(
                          &g, &p,
                          recommended ? CU_MEM_ALLOC_GRANULARITY_RECOMMENDED
                                      : CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    if (g == 0)
        return cus_fail_(CUS_ERROR_NOT_SUPPORTED, function, "cuMemGetAllocationGranularity",
                         "the driver reports a granularity of 0");
    *out = g;
    return CUS_SUCCESS;
}

/* [offset, offset + bytes) inside size, without overflow. */
static bool range_inside(size_t offset, size_t bytes, size_t size)
{
    return offset <= size && bytes <= size - offset;
}

/* --- physical allocations ------------------------------------------------------------------- */

static CUresult release_call(void *p)
{
    return cus_drv_.cuMemRelease_(((const cus_physical *)p)->handle);
}

static void physical_destroy(cus_physical *p)
{
    if (p->handle)
        cus_destroy_in_context_(p->ctx, "cus_physical_unref", "cuMemRelease", release_call, p,
                                "a physical allocation");
    cus_context_unref(p->ctx);
    free(p);
}

CUS_DEFINE_REF_UNREF(cus_physical, physical_destroy)

CUS_API cus_status cus_physical_granularity(cus_context *ctx, bool recommended, size_t *out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(ctx && out);
    CUS_CHECK_POISON(ctx);
    return granularity_of(ctx, 0, recommended, out, __func__);
}

static cus_status physical_new(cus_context *ctx, size_t bytes, unsigned int handle_types,
                               CUmemGenericAllocationHandle handle, size_t granularity,
                               cus_physical **out, const char *function)
{
    cus_autofree cus_physical *p = cus_calloc_(1, sizeof *p);
    if (!p) {
        if (handle)
            (void)cus_drv_.cuMemRelease_(handle); /* imported: nothing else holds it */
        return cus_fail_(CUS_ERROR_OUT_OF_HOST_MEMORY, function, NULL, "allocating a record");
    }
    cus_refcount_init_(&p->refs);
    p->handle = handle;
    p->size = bytes;
    p->handle_types = handle_types;
    p->granularity = granularity;
    p->ctx = cus_context_ref(ctx);
    *out = cus_steal(&p);
    return CUS_SUCCESS;
}

/* Checks bytes against the granularity (a driver query): the common part of
 * create and import. */
static cus_status check_physical_size(cus_context *ctx, size_t bytes, unsigned int handle_types,
                                      size_t *granularity, const char *function)
{
    CUS_TRY(granularity_of(ctx, handle_types, false, granularity, function));
    if (bytes % *granularity)
        return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL,
                         "%zu bytes is not a multiple of the granularity, %zu bytes", bytes,
                         *granularity);
    return CUS_SUCCESS;
}

CUS_API cus_status cus_physical_create(cus_context *ctx, size_t bytes, unsigned int handle_types,
                                       cus_physical **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(ctx && out && bytes);
    if (handle_types & ~(unsigned int)CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,
                        "handle types 0x%x: only CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR is "
                        "supported",
                        handle_types);
    CUS_CHECK_POISON(ctx);
    NEED_ENTRY(cuMemCreate);
    cus_release_deferred_if_any_();
    size_t g = 0;
    CUS_TRY(check_physical_size(ctx, bytes, handle_types, &g, __func__));
    /* The record first: once the memory exists, nothing may fail. */
    cus_physical *p = NULL;
    CUS_TRY(physical_new(ctx, bytes, handle_types, 0, g, &p, __func__));
    CUmemAllocationProp prop = prop_for(ctx, handle_types);
    CUmemGenericAllocationHandle h = 0;
    cus_status st = CUS_CALL_IN(ctx, "cuMemCreate", cus_drv_.cuMemCreate_(&h, bytes, &prop, 0));
    if (st) {
        cus_physical_unref(p); /* handle 0: no release */
        return st;
    }
    p->handle = h;
    *out = p;
    return CUS_SUCCESS;
}

CUS_API cus_status cus_physical_export_fd(cus_physical *phys, int *fd)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(phys && fd);
    if (!(phys->handle_types & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
        return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,
                        "the allocation was not created exportable as a file descriptor "
                        "(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)");
    CUS_CHECK_POISON(phys->ctx);
    NEED_ENTRY(cuMemExportToShareableHandle);
    int v = -1;
    CUS_IN_CONTEXT(phys->ctx, "cuMemExportToShareableHandle",
                   cus_drv_.cuMemExportToShareableHandle_(
                       &v, phys->handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    *fd = v;
    return CUS_SUCCESS;
}

CUS_API cus_status cus_physical_import_fd(cus_context *ctx, int fd, size_t bytes,
                                          cus_physical **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(ctx && out && fd >= 0 && bytes);
    CUS_CHECK_POISON(ctx);
    NEED_ENTRY(cuMemImportFromShareableHandle);
    cus_release_deferred_if_any_();
    size_t g = 0;
    CUS_TRY(check_physical_size(ctx, bytes, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, &g,
                                __func__));
    CUmemGenericAllocationHandle h = 0;
    CUS_IN_CONTEXT(ctx, "cuMemImportFromShareableHandle",
                   cus_drv_.cuMemImportFromShareableHandle_(
                       &h, (void *)(intptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    return physical_new(ctx, bytes, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, h, g, out,
                        __func__);
}

CUS_API CUmemGenericAllocationHandle cus_physical_handle(const cus_physical *phys)
{
    return phys ? phys->handle : 0;
}

CUS_API size_t cus_physical_size(const cus_physical *phys)
{
    return phys ? phys->size : 0;
}

CUS_API cus_context *cus_physical_context(const cus_physical *phys)
{
    return phys ? phys->ctx : NULL;
}

/* --- reservations --------------------------------------------------------------------------- */

typedef struct unmap_arg_ {
    CUdeviceptr ptr;
    size_t bytes;
} unmap_arg_;

static CUresult unmap_call(void *a)
{
    const unmap_arg_ *u = a;
    return cus_drv_.cuMemUnmap_(u->ptr, u->bytes);
}

static CUresult address_free_call(void *r)
{
    const cus_reservation *res = r;
    return cus_drv_.cuMemAddressFree_(res->ptr, res->size);
}

static void reservation_destroy(cus_reservation *res)
{
    /* No view is alive (each holds the reservation): unmap what is left. A
     * range still mapped cannot be freed: after a failed unmap (reported)
     * the range is left to the driver. */
    bool unmapped = true;
    for (size_t i = 0; i < res->nmaps; i++) {
        unmap_arg_ u = {res->ptr + res->maps[i].offset, res->maps[i].bytes};
        unsigned long reports = cus_destroy_error_count();
        cus_destroy_in_context_relaxed_(res->ctx, "cus_reservation_unref", "cuMemUnmap",
                                        unmap_call, &u, "a mapping");
        unmapped &= cus_destroy_error_count() == reports;
        cus_physical_unref(res->maps[i].phys);
    }
    free(res->maps);
    if (res->ptr && unmapped)
        cus_destroy_in_context_(res->ctx, "cus_reservation_unref", "cuMemAddressFree",
                                address_free_call, res, "an address reservation");
    pthread_mutex_destroy(&res->lock);
    cus_context_unref(res->ctx);
    free(res);
}

CUS_DEFINE_REF_UNREF(cus_reservation, reservation_destroy)

static CUresult free_range_call(void *a)
{
    const unmap_arg_ *u = a;
    return cus_drv_.cuMemAddressFree_(u->ptr, u->bytes);
}

CUS_API cus_status cus_reservation_create(cus_context *ctx, size_t bytes, size_t alignment,
                                          CUdeviceptr fixed_addr, cus_reservation **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(ctx && out && bytes);
    if (alignment & (alignment - 1))
        return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,
                        "alignment %zu is not a power of two", alignment);
    CUS_CHECK_POISON(ctx);
    NEED_ENTRY(cuMemAddressReserve);
    NEED_ENTRY(cuMemAddressFree);
    cus_release_deferred_if_any_();
    size_t g = 0;
    CUS_TRY(granularity_of(ctx, 0, false, &g, __func__));
    if (bytes % g)
        return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,
                        "%zu bytes is not a multiple of the granularity, %zu bytes", bytes, g);
    if (fixed_addr % (alignment > g ? alignment : g))
        return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,
                        "fixed address 0x%llx is not aligned to %zu bytes",
                        (unsigned long long)fixed_addr, alignment > g ? alignment : g);
    cus_autofree cus_reservation *res = cus_calloc_(1, sizeof *res);
    if (!res)
        return CUS_FAIL(CUS_ERROR_OUT_OF_HOST_MEMORY, NULL, "allocating a reservation");
    CUdeviceptr p = 0;
    CUS_IN_CONTEXT(ctx, "cuMemAddressReserve",
                   cus_drv_.cuMemAddressReserve_(&p, bytes, alignment, fixed_addr, 0));
    if (fixed_addr && p != fixed_addr) {
        unmap_arg_ u = {p, bytes};
        cus_destroy_in_context_(ctx, __func__, "cuMemAddressFree", free_range_call, &u,
                                "an address reservation");
        return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, "cuMemAddressReserve",
                        "the driver placed the range at 0x%llx, not at the fixed address 0x%llx "
                        "(taken)",
                        (unsigned long long)p, (unsigned long long)fixed_addr);
    }
    cus_refcount_init_(&res->refs);
    pthread_mutex_init(&res->lock, NULL);
    res->ptr = p;
    res->size = bytes;
    res->granularity = g;
    res->ctx = cus_context_ref(ctx);
    *out = cus_steal(&res);
    return CUS_SUCCESS;
}

CUS_API CUdeviceptr cus_reservation_ptr(const cus_reservation *res)
{
    return res ? res->ptr : 0;
}

CUS_API size_t cus_reservation_size(const cus_reservation *res)
{
    return res ? res->size : 0;
}

CUS_API size_t cus_reservation_granularity(const cus_reservation *res)
{
    return res ? res->granularity : 0;
}

CUS_API cus_context *cus_reservation_context(const cus_reservation *res)
{
    return res ? res->ctx : NULL;
}

CUS_API size_t cus_reservation_mapped_bytes(cus_reservation *res)
{
    if (!res)
        return 0;
    CUS_LOCK_SCOPE(&res->lock);
    return res->mapped;
}

/* The index of the first mapping that ends after offset (res->nmaps: none). */
static size_t first_ending_after(const cus_reservation *res, size_t offset)
{
    size_t lo = 0, hi = res->nmaps;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (res->maps[mid].offset + res->maps[mid].bytes <= offset)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The mappings [*first, *last) that exactly tile [offset, offset + bytes)
 * (each whole when `whole`, else the ends may fall inside one), with no
 * hole: false if there is none such. */
static bool tiled_by_mappings(const cus_reservation *res, size_t offset, size_t bytes, bool whole,
                              size_t *first, size_t *last)
{
    size_t i = first_ending_after(res, offset);
    size_t at = offset, end = offset + bytes;
    size_t start = i;
    if (i == res->nmaps || res->maps[i].offset > offset ||
        (whole && res->maps[i].offset != offset))
        return false;
    for (; i < res->nmaps && at < end; i++) {
        const vmm_mapping_ *m = &res->maps[i];
        if (m->offset > at)
            return false; /* a hole */
        at = m->offset + m->bytes;
    }
    if (at < end || (whole && at != end))
        return false;
    *first = start;
    *last = i;
    return true;
}

#define CHECK_GRANULE(res, value, what)                                        \
    do {                                                                       \
        if ((value) % (res)->granularity)                                      \
            return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,                  \
                            "%s %zu is not a multiple of the granularity, %zu bytes", (what), \
                            (size_t)(value), (res)->granularity);              \
    } while (0)

#define CHECK_INSIDE(res, offset, bytes)                                       \
    do {                                                                       \
        if (!range_inside((offset), (bytes), (res)->size))                     \
            return CUS_FAIL(CUS_ERROR_OUT_OF_RANGE, NULL,                      \
                            "%zu bytes at offset %zu of a %zu-byte reservation", (size_t)(bytes), \
                            (size_t)(offset), (res)->size);                    \
    } while (0)

CUS_API cus_status cus_reservation_map(cus_reservation *res, size_t offset, cus_physical *phys,
                                       size_t phys_offset, size_t bytes)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(res && phys && bytes);
    CHECK_GRANULE(res, offset, "offset");
    CHECK_GRANULE(res, bytes, "size");
    CHECK_GRANULE(res, phys_offset, "physical offset");
    CHECK_INSIDE(res, offset, bytes);
    if (!range_inside(phys_offset, bytes, phys->size))
        return CUS_FAIL(CUS_ERROR_OUT_OF_RANGE, NULL,
                        "%zu bytes at offset %zu of a %zu-byte physical allocation", bytes,
                        phys_offset, phys->size);
    CUS_CHECK_POISON(res->ctx);
    NEED_ENTRY(cuMemMap);
    CUS_LOCK_SCOPE(&res->lock);
    size_t i = first_ending_after(res, offset);
    if (i < res->nmaps && res->maps[i].offset < offset + bytes)
        return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,
                        "[%zu, %zu) meets the mapping at [%zu, %zu): a range is mapped once",
                        offset, offset + bytes, res->maps[i].offset,
                        res->maps[i].offset + res->maps[i].bytes);
    /* Room first: once the driver mapped, recording it cannot fail. */
    if (res->nmaps == res->capacity) {
        size_t cap = res->capacity ? res->capacity * 2 : 8;
        vmm_mapping_ *maps = cus_realloc_(res->maps, cap * sizeof *maps);
        if (!maps)
            return CUS_FAIL(CUS_ERROR_OUT_OF_HOST_MEMORY, NULL, "recording a mapping");
        res->maps = maps;
        res->capacity = cap;
    }
    CUS_IN_CONTEXT(res->ctx, "cuMemMap",
                   cus_drv_.cuMemMap_(res->ptr + offset, bytes, phys_offset, phys->handle, 0));
    memmove(&res->maps[i + 1], &res->maps[i], (res->nmaps - i) * sizeof *res->maps);
    res->maps[i] = (vmm_mapping_){offset, bytes, cus_physical_ref(phys), phys_offset,
                                  CU_MEM_ACCESS_FLAGS_PROT_NONE, 0};
    res->nmaps++;
    res->mapped += bytes;
    return CUS_SUCCESS;
}

CUS_API cus_status cus_reservation_unmap(cus_reservation *res, size_t offset, size_t bytes)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(res && bytes);
    CHECK_GRANULE(res, offset, "offset");
    CHECK_GRANULE(res, bytes, "size");
    CHECK_INSIDE(res, offset, bytes);
    CUS_CHECK_POISON(res->ctx);
    NEED_ENTRY(cuMemUnmap);
    CUS_LOCK_SCOPE(&res->lock);
    size_t first = 0, last = 0;
    if (!tiled_by_mappings(res, offset, bytes, true, &first, &last))
        return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,
                        "[%zu, %zu) is not whole mappings: an unmap covers each mapping it meets, "
                        "from its start to its end",
                        offset, offset + bytes);
    for (size_t i = first; i < last; i++)
        if (res->maps[i].views)
            return CUS_FAIL(CUS_ERROR_BUSY, NULL,
                            "%lu buffer view(s) of the mapping at [%zu, %zu) are alive",
                            res->maps[i].views, res->maps[i].offset,
                            res->maps[i].offset + res->maps[i].bytes);
    /* One driver call per mapping (the driver's documented unit); a failure
     * leaves the ones before it unmapped, and recorded so. */
    cus_status st = CUS_SUCCESS;
    size_t done = first;
    for (; done < last; done++) {
        const vmm_mapping_ *m = &res->maps[done];
        st = CUS_CALL_IN(res->ctx, "cuMemUnmap", cus_drv_.cuMemUnmap_(res->ptr + m->offset,
                                                                      m->bytes));
        if (st)
            break;
        res->mapped -= m->bytes;
    }
    for (size_t i = first; i < done; i++)
        cus_physical_unref(res->maps[i].phys);
    memmove(&res->maps[first], &res->maps[done], (res->nmaps - done) * sizeof *res->maps);
    res->nmaps -= done - first;
    return st;
}

CUS_API cus_status cus_reservation_set_access(cus_reservation *res, size_t offset, size_t bytes,
                                              CUmemAccess_flags flags)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(res && bytes);
    if (flags != CU_MEM_ACCESS_FLAGS_PROT_READ && flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
        return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,
                        "access flags %d: CU_MEM_ACCESS_FLAGS_PROT_READ or _READWRITE", (int)flags);
    CHECK_GRANULE(res, offset, "offset");
    CHECK_GRANULE(res, bytes, "size");
    CHECK_INSIDE(res, offset, bytes);
    CUS_CHECK_POISON(res->ctx);
    NEED_ENTRY(cuMemSetAccess);
    CUS_LOCK_SCOPE(&res->lock);
    size_t first = 0, last = 0;
    if (!tiled_by_mappings(res, offset, bytes, true, &first, &last))
        return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,
                        "[%zu, %zu) is not whole mappings: access is set on mapped memory, a "
                        "mapping at a time",
                        offset, offset + bytes);
    CUmemAccessDesc desc;
    memset(&desc, 0, sizeof desc);
    desc.location = location_of(res->ctx);
    desc.flags = flags;
    CUS_IN_CONTEXT(res->ctx, "cuMemSetAccess",
                   cus_drv_.cuMemSetAccess_(res->ptr + offset, bytes, &desc, 1));
    for (size_t i = first; i < last; i++)
        res->maps[i].access = flags;
    return CUS_SUCCESS;
}

CUS_API cus_status cus_reservation_get_access(cus_reservation *res, size_t offset,
                                              CUmemAccess_flags *flags)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(res && flags);
    if (offset >= res->size)
        return CUS_FAIL(CUS_ERROR_OUT_OF_RANGE, NULL, "offset %zu of a %zu-byte reservation",
                        offset, res->size);
    CUS_CHECK_POISON(res->ctx);
    NEED_ENTRY(cuMemGetAccess);
    CUmemLocation loc = location_of(res->ctx);
    unsigned long long v = 0;
    CUS_IN_CONTEXT(res->ctx, "cuMemGetAccess",
                   cus_drv_.cuMemGetAccess_(&v, &loc, res->ptr + offset));
    *flags = (CUmemAccess_flags)v;
    return CUS_SUCCESS;
}

/* A view's release: its mappings may be unmapped again once no view covers
 * them. */
static void view_release(void *obj, CUdeviceptr ptr, size_t bytes)
{
    cus_reservation *res = obj;
    {
        CUS_LOCK_SCOPE(&res->lock);
        size_t offset = (size_t)(ptr - res->ptr);
        for (size_t i = first_ending_after(res, offset);
             i < res->nmaps && res->maps[i].offset < offset + bytes; i++)
            res->maps[i].views--;
    }
    cus_reservation_unref(res);
}

/* The view itself, under the lock: [offset, offset + bytes) mapped with
 * access all along. */
static cus_status reservation_view_locked(cus_reservation *res, size_t offset, size_t bytes,
                                          cus_buffer **out, const char *function)
{
    size_t first = 0, last = 0;
    if (!tiled_by_mappings(res, offset, bytes, false, &first, &last))
        return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL,
                         "[%zu, %zu) of the reservation is not all mapped", offset,
                         offset + bytes);
    for (size_t i = first; i < last; i++)
        if (res->maps[i].access == CU_MEM_ACCESS_FLAGS_PROT_NONE)
            return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL,
                             "the mapping at [%zu, %zu) has no access for the device yet "
                             "(cus_reservation_set_access)",
                             res->maps[i].offset, res->maps[i].offset + res->maps[i].bytes);
    cus_buffer_owner_ owner = {cus_reservation_ref(res), view_release};
    cus_status st = cus_buffer_new_owned_(res->ctx, res->ptr + offset, bytes, CUS_BUFFER_VIEW,
                                          owner, out, function);
    if (st) {
        cus_reservation_unref(res); /* the last reference is the caller's: no destroy here */
        return st;
    }
    for (size_t i = first; i < last; i++)
        res->maps[i].views++;
    return CUS_SUCCESS;
}

CUS_API cus_status cus_reservation_buffer(cus_reservation *res, size_t offset, size_t bytes,
                                          cus_buffer **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(res && out && bytes);
    CHECK_INSIDE(res, offset, bytes);
    CUS_LOCK_SCOPE(&res->lock);
    return reservation_view_locked(res, offset, bytes, out, __func__);
}

/* --- the growable buffer -------------------------------------------------------------------- */

static void growable_destroy(cus_growable *g)
{
    cus_reservation_unref(g->res);
    pthread_mutex_destroy(&g->lock);
    free(g);
}

CUS_DEFINE_REF_UNREF(cus_growable, growable_destroy)

CUS_API cus_status cus_growable_reserve(cus_context *ctx, size_t max_bytes, cus_growable **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(ctx && out && max_bytes);
    CUS_CHECK_POISON(ctx);
    size_t gran = 0;
    CUS_TRY(granularity_of(ctx, 0, false, &gran, __func__));
    size_t rounded;
    if (__builtin_add_overflow(max_bytes, gran - 1, &rounded))
        return CUS_FAIL(CUS_ERROR_OUT_OF_RANGE, NULL,
                        "%zu bytes rounded up to the granularity overflow", max_bytes);
    rounded -= rounded % gran;
    cus_autofree cus_growable *g = cus_calloc_(1, sizeof *g);
    if (!g)
        return CUS_FAIL(CUS_ERROR_OUT_OF_HOST_MEMORY, NULL, "allocating a growable buffer");
    cus_reservation *res = NULL;
    CUS_TRY(cus_reservation_create(ctx, rounded, 0, 0, &res));
    cus_refcount_init_(&g->refs);
    pthread_mutex_init(&g->lock, NULL);
    g->res = res;
    atomic_init(&g->size, 0);
    g->max = max_bytes;
    *out = cus_steal(&g);
    return CUS_SUCCESS;
}

CUS_API cus_status cus_growable_grow(cus_growable *g, size_t new_size)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(g);
    if (new_size > g->max)
        return CUS_FAIL(CUS_ERROR_OUT_OF_RANGE, NULL,
                        "%zu bytes is past the growable buffer's maximum, %zu bytes", new_size,
                        g->max);
    CUS_LOCK_SCOPE(&g->lock);
    size_t size = atomic_load_explicit(&g->size, memory_order_relaxed);
    if (new_size <= size)
        return CUS_SUCCESS;
    if (new_size > g->mapped) {
        cus_reservation *res = g->res;
        size_t gran = res->granularity;
        /* new_size <= max, whose rounding fitted: no overflow. */
        size_t target = (new_size + gran - 1) / gran * gran;
        size_t chunk = target - g->mapped;
        cus_autoptr(cus_physical) phys = NULL;
        CUS_TRY(cus_physical_create(res->ctx, chunk, 0, &phys));
        CUS_TRY(cus_reservation_map(res, g->mapped, phys, 0, chunk));
        cus_status st =
            cus_reservation_set_access(res, g->mapped, chunk, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
        if (st) {
            /* Nothing changed: the chunk goes again (an unmap that fails too
             * goes to the destroy handler; the reservation frees it later). */
            cus_error_save saved;
            cus_error_save_(&saved);
            if (cus_reservation_unmap(res, g->mapped, chunk))
                cus_destroy_error_(cus_last_status(), __func__, "cuMemUnmap", "%s",
                                   cus_last_error_message());
            cus_error_restore_(&saved);
            return st;
        }
        g->mapped = target;
    }
    atomic_store_explicit(&g->size, new_size, memory_order_release);
    return CUS_SUCCESS;
}

CUS_API cus_status cus_growable_buffer(cus_growable *g, cus_buffer **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(g && out);
    CUS_LOCK_SCOPE(&g->lock);
    size_t size = atomic_load_explicit(&g->size, memory_order_relaxed);
    if (!size)
        return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,
                        "the growable buffer is empty: grow it first");
    CUS_LOCK_SCOPE(&g->res->lock);
    return reservation_view_locked(g->res, 0, size, out, __func__);
}

CUS_API CUdeviceptr cus_growable_ptr(const cus_growable *g)
{
    return g ? g->res->ptr : 0;
}

CUS_API size_t cus_growable_size(const cus_growable *g)
{
    return g ? atomic_load_explicit(&((cus_growable *)g)->size, memory_order_acquire) : 0;
}

CUS_API size_t cus_growable_capacity(const cus_growable *g)
{
    if (!g)
        return 0;
    CUS_LOCK_SCOPE(&((cus_growable *)g)->lock);
    return g->mapped;
}

CUS_API size_t cus_growable_max(const cus_growable *g)
{
    return g ? g->max : 0;
}

CUS_API cus_reservation *cus_growable_reservation(const cus_growable *g)
{
    return g ? g->res : NULL;
}
