/* Memory pools: created, borrowed (a device's default and current pools) and
 * imported ones, their attributes, trim and access, stream-ordered
 * allocation from them (buffers made by memory.c, holding their pool), and
 * pool export and import for IPC. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/pool.h"
#include "internal.h"

struct cus_pool {
    cus_refcount refs;
    CUmemoryPool handle;
    cus_context *ctx; /* a reference: its device is the pool's */
    cus_pool_kind kind;
    CUmemAllocationHandleType handle_types;
};

/* --- the object ---------------------------------------------------------------- */

static CUresult destroy_call(void *p)
{
    return cus_drv_.cuMemPoolDestroy_(((const cus_pool *)p)->handle);
}

static void pool_destroy(cus_pool *p)
{
    /* A borrowed pool is the driver's, and a pool whose creation failed
     * has no handle. */
    if (p->handle && p->kind != CUS_POOL_BORROWED)
        cus_destroy_in_context_(p->ctx, "cus_pool_unref", "cuMemPoolDestroy", destroy_call, p,
                                "a memory pool");
    cus_context_unref(p->ctx);
    free(p);
}

CUS_DEFINE_REF_UNREF(cus_pool, pool_destroy)

/* A pool record of kind, not yet holding a handle; NULL (recorded) when out
 * of host memory. */
static cus_pool *pool_record(cus_pool_kind kind, CUmemAllocationHandleType handle_types,
                             const char *function)
{
    cus_pool *p = cus_calloc_(1, sizeof *p);
    if (!p) {
        cus_fail_(CUS_ERROR_OUT_OF_HOST_MEMORY, function, NULL, "allocating a memory pool");
        return NULL;
    }
    p->kind = kind;
    p->handle_types = handle_types;
    return p;
}

/* Publishes a record whose handle the driver filled. */
static cus_pool *pool_publish(cus_pool *p, cus_context *ctx)
{
    cus_refcount_init_(&p->refs);
    p->ctx = cus_context_ref(ctx);
    return p;
}

CUS_API cus_status cus_pool_create(cus_context *ctx, const cus_pool_options *opts,
                                   cus_pool **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(ctx && out);
    cus_pool_options o = opts ? *opts : (cus_pool_options){0};
    if (o.handle_types != CU_MEM_HANDLE_TYPE_NONE &&
        o.handle_types != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,
                        "handle types %d: a pool is made without a handle type or with POSIX "
                        "file descriptors (CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)",
                        (int)o.handle_types);
    CUS_CHECK_POISON(ctx);
    cus_autofree cus_pool *p = pool_record(CUS_POOL_CREATED, o.handle_types, __func__);
    if (!p)
        return CUS_ERROR_OUT_OF_HOST_MEMORY;
    CUmemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.handleTypes = o.handle_types;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = ctx->device.handle;
    props.maxSize = o.max_size;
    CUS_IN_CONTEXT(ctx, "cuMemPoolCreate", cus_drv_.cuMemPoolCreate_(&p->handle, &props));
    *out = pool_publish(cus_steal(&p), ctx);
    return CUS_SUCCESS;
}

/* A borrowed pool of ctx's device: its current one, or its default. */
static cus_status borrow(cus_context *ctx, bool current, cus_pool **out, const char *function)
{
    if (!ctx || !out)
        return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL,
                         "a context and an out pointer are required");
    if (CUS_UNLIKELY(atomic_load_explicit(&ctx->poison, memory_order_relaxed)))
        return cus_context_poisoned_fail_(ctx, function);
    cus_autofree cus_pool *p = pool_record(CUS_POOL_BORROWED, CU_MEM_HANDLE_TYPE_NONE,
                                           function);
    if (!p)
        return CUS_ERROR_OUT_OF_HOST_MEMORY;
    CUdevice dev = ctx->device.handle;
    if (current)
        CUS_IN_CONTEXT_AS(function, ctx, "cuDeviceGetMemPool",
                          cus_drv_.cuDeviceGetMemPool_(&p->handle, dev));
    else
        CUS_IN_CONTEXT_AS(function, ctx, "cuDeviceGetDefaultMemPool",
                          cus_drv_.cuDeviceGetDefaultMemPool_(&p->handle, dev));
    *out = pool_publish(cus_steal(&p), ctx);
    return CUS_SUCCESS;
}

CUS_API cus_status cus_pool_default(cus_context *ctx, cus_pool **out)
{
    CUS_API_ENTER();
    return borrow(ctx, false, out, __func__);
}

CUS_API cus_status cus_pool_current(cus_context *ctx, cus_pool **out)
{
    CUS_API_ENTER();
    return borrow(ctx, true, out, __func__);
}

CUS_API cus_status cus_pool_set_current(cus_pool *pool)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(pool);
    if (pool->kind == CUS_POOL_IMPORTED)
        return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,
                        "an imported pool cannot allocate, so it cannot be current");
    CUS_IN_CONTEXT(pool->ctx, "cuDeviceSetMemPool",
                   cus_drv_.cuDeviceSetMemPool_(pool->ctx->device.handle, pool->handle));
    return CUS_SUCCESS;
}

CUS_API CUmemoryPool cus_pool_handle(const cus_pool *pool)
{
    return pool ? pool->handle : NULL;
}

CUS_API cus_context *cus_pool_context(const cus_pool *pool)
{
    return pool ? pool->ctx : NULL;
}

CUS_API cus_pool_kind cus_pool_get_kind(const cus_pool *pool)
{
    return pool ? pool->kind : CUS_POOL_CREATED;
}

CUS_API CUmemAllocationHandleType cus_pool_handle_types(const cus_pool *pool)
{
    return pool ? pool->handle_types : CU_MEM_HANDLE_TYPE_NONE;
}

/* --- attributes ------------------------------------------------------------------ */

static cus_status set_attribute(cus_pool *pool, CUmemPool_attribute attr, void *value,
                                const char *function)
{
    CUS_IN_CONTEXT_AS(function, pool->ctx, "cuMemPoolSetAttribute",
                      cus_drv_.cuMemPoolSetAttribute_(pool->handle, attr, value));
    return CUS_SUCCESS;
}

static cus_status get_attribute(cus_pool *pool, CUmemPool_attribute attr, void *value,
                                const char *function)
{
    CUS_IN_CONTEXT_AS(function, pool->ctx, "cuMemPoolGetAttribute",
                      cus_drv_.cuMemPoolGetAttribute_(pool->handle, attr, value));
    return CUS_SUCCESS;
}

CUS_API cus_status cus_pool_set_release_threshold(cus_pool *pool, uint64_t bytes)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(pool);
    cuuint64_t v = bytes;
    return set_attribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &v, __func__);
}

CUS_API cus_status cus_pool_get_release_threshold(cus_pool *pool, uint64_t *bytes)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(pool && bytes);
    cuuint64_t v = 0;
    CUS_TRY(get_attribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &v, __func__));
    *bytes = v;
    return CUS_SUCCESS;
}

static bool is_reuse(CUmemPool_attribute attr)
{
    return attr == CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES ||
           attr == CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC ||
           attr == CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES;
}

#define CHECK_REUSE(attr)                                                      \
    do {                                                                       \
        if (!is_reuse(attr))                                                   \
            return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,                  \
                            "attribute %d is not a reuse policy", (int)(attr)); \
    } while (0)

CUS_API cus_status cus_pool_set_reuse(cus_pool *pool, CUmemPool_attribute attr, bool enabled)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(pool);
    CHECK_REUSE(attr);
    int v = enabled; /* the driver reads an int */
    return set_attribute(pool, attr, &v, __func__);
}

CUS_API cus_status cus_pool_get_reuse(cus_pool *pool, CUmemPool_attribute attr, bool *enabled)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(pool && enabled);
    CHECK_REUSE(attr);
    int v = 0;
    CUS_TRY(get_attribute(pool, attr, &v, __func__));
    *enabled = v != 0;
    return CUS_SUCCESS;
}

CUS_API cus_status cus_pool_get_usage(cus_pool *pool, cus_pool_usage *usage)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(pool && usage);
    static const CUmemPool_attribute attrs[4] = {
        CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH,
        CU_MEMPOOL_ATTR_USED_MEM_CURRENT, CU_MEMPOOL_ATTR_USED_MEM_HIGH};
    cuuint64_t v[4] = {0};
    CUS_CHECK_POISON(pool->ctx);
    {
        /* One switch for the four. */
        CUS_SWITCH(sw, pool->ctx);
        CUS_TRY(sw_status);
        for (int i = 0; i < 4; i++)
            CUS_TRY(cus_switch_check_(&sw,
                                      cus_drv_.cuMemPoolGetAttribute_(pool->handle, attrs[i],
                                                                      &v[i]),
                                      "cuMemPoolGetAttribute"));
    }
    *usage = (cus_pool_usage){v[0], v[1], v[2], v[3]};
    return CUS_SUCCESS;
}

CUS_API cus_status cus_pool_reset_high_water(cus_pool *pool)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(pool);
    CUS_CHECK_POISON(pool->ctx);
    CUS_SWITCH(sw, pool->ctx);
    CUS_TRY(sw_status);
    cuuint64_t zero = 0;
    CUS_TRY(cus_switch_check_(
        &sw, cus_drv_.cuMemPoolSetAttribute_(pool->handle, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &zero),
        "cuMemPoolSetAttribute"));
    zero = 0;
    return cus_switch_check_(
        &sw, cus_drv_.cuMemPoolSetAttribute_(pool->handle, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &zero),
        "cuMemPoolSetAttribute");
}

CUS_API cus_status cus_pool_trim(cus_pool *pool, size_t min_bytes_to_keep)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(pool);
    CUS_IN_CONTEXT(pool->ctx, "cuMemPoolTrimTo",
                   cus_drv_.cuMemPoolTrimTo_(pool->handle, min_bytes_to_keep));
    return CUS_SUCCESS;
}

/* --- access ------------------------------------------------------------------------ */

CUS_API cus_status cus_pool_set_access(cus_pool *pool, cus_device dev, CUmemAccess_flags flags)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(pool);
    CUmemAccessDesc desc;
    memset(&desc, 0, sizeof desc);
    desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    desc.location.id = dev.handle;
    desc.flags = flags;
    CUS_IN_CONTEXT(pool->ctx, "cuMemPoolSetAccess",
                   cus_drv_.cuMemPoolSetAccess_(pool->handle, &desc, 1));
    return CUS_SUCCESS;
}

CUS_API cus_status cus_pool_get_access(cus_pool *pool, cus_device dev, CUmemAccess_flags *flags)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(pool && flags);
    CUmemLocation loc;
    memset(&loc, 0, sizeof loc);
    loc.type = CU_MEM_LOCATION_TYPE_DEVICE;
    loc.id = dev.handle;
    CUmemAccess_flags f = CU_MEM_ACCESS_FLAGS_PROT_NONE;
    CUS_IN_CONTEXT(pool->ctx, "cuMemPoolGetAccess",
                   cus_drv_.cuMemPoolGetAccess_(&f, pool->handle, &loc));
    *flags = f;
    return CUS_SUCCESS;
}

/* --- allocation ----------------------------------------------------------------------- */

static void pool_release(void *p)
{
    (void)cus_pool_unref(p);
}

typedef struct pool_alloc_args {
    CUmemoryPool pool;
    CUstream stream;
} pool_alloc_args;

static CUresult alloc_from_pool(CUdeviceptr *p, size_t bytes, void *arg)
{
    const pool_alloc_args *a = arg;
    return cus_drv_.cuMemAllocFromPoolAsync_(p, bytes, a->pool, a->stream);
}

CUS_API cus_status cus_pool_alloc_async(cus_pool *pool, cus_stream *stream, size_t bytes,
                                        cus_buffer **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(pool && stream && out && bytes);
    if (pool->kind == CUS_POOL_IMPORTED)
        return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,
                        "an imported pool cannot allocate (the driver's rule): import pointers "
                        "from it instead");
    if (cus_context_handle(stream->ctx) != cus_context_handle(pool->ctx))
        return CUS_FAIL(CUS_ERROR_CONTEXT_MISMATCH, NULL,
                        "a stream of context %p used with a pool of context %p",
                        (void *)cus_context_handle(stream->ctx),
                        (void *)cus_context_handle(pool->ctx));
    /* As cus_buffer_alloc_async: inside a capture the driver would make a
     * graph allocation, owned by the graph rather than the pool. */
    if (CUS_UNLIKELY(cus_captures_open_()))
        CUS_TRY(cus_capture_refuse_on_(stream, __func__, "a stream-ordered allocation"));
    pool_alloc_args args = {pool->handle, stream->handle};
    cus_status st = cus_buffer_new_(stream->ctx, stream, bytes, CUS_BUFFER_STREAM_ORDERED,
                                    "cuMemAllocFromPoolAsync", alloc_from_pool, &args,
                                    (cus_buffer_parent_){cus_pool_ref(pool), pool_release}, out,
                                    __func__);
    if (st)
        cus_pool_unref(pool); /* the buffer's reference, not taken */
    return st;
}

/* --- IPC ---------------------------------------------------------------------------------- */

CUS_API cus_status cus_pool_export(cus_pool *pool, int *fd)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(pool && fd);
    if (pool->handle_types != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,
                        "the pool was not created with CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR: "
                        "it cannot be exported");
    int h = -1;
    CUS_IN_CONTEXT(pool->ctx, "cuMemPoolExportToShareableHandle",
                   cus_drv_.cuMemPoolExportToShareableHandle_(
                       &h, pool->handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    *fd = h;
    return CUS_SUCCESS;
}

CUS_API cus_status cus_pool_import(cus_context *ctx, int fd, cus_pool **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(ctx && out && fd >= 0);
    CUS_CHECK_POISON(ctx);
    cus_autofree cus_pool *p = pool_record(CUS_POOL_IMPORTED, CU_MEM_HANDLE_TYPE_NONE,
                                           __func__);
    if (!p)
        return CUS_ERROR_OUT_OF_HOST_MEMORY;
    /* A descriptor is passed by value, in the pointer. */
    CUS_IN_CONTEXT(ctx, "cuMemPoolImportFromShareableHandle",
                   cus_drv_.cuMemPoolImportFromShareableHandle_(
                       &p->handle, (void *)(intptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                       0));
    *out = pool_publish(cus_steal(&p), ctx);
    return CUS_SUCCESS;
}

CUS_API cus_status cus_pool_export_pointer(cus_pool *pool, cus_buffer *buf,
                                           CUmemPoolPtrExportData *data)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(pool && buf && data);
    if (pool->handle_types != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,
                        "the pool was not created with CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR: "
                        "its memory cannot be exported");
    if (cus_buffer_parent_of_(buf) != pool)
        return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,
                        "the buffer was not allocated from this pool (cus_pool_alloc_async)");
    CUmemPoolPtrExportData d;
    memset(&d, 0, sizeof d);
    CUS_IN_CONTEXT(pool->ctx, "cuMemPoolExportPointer",
                   cus_drv_.cuMemPoolExportPointer_(&d, cus_buffer_ptr(buf)));
    *data = d;
    return CUS_SUCCESS;
}

typedef struct import_args {
    CUmemoryPool pool;
    CUmemPoolPtrExportData data; /* a copy: the driver's parameter is not const */
} import_args;

static CUresult import_pointer(CUdeviceptr *p, size_t bytes, void *arg)
{
    (void)bytes;
    import_args *a = arg;
    return cus_drv_.cuMemPoolImportPointer_(p, a->pool, &a->data);
}

CUS_API cus_status cus_pool_import_pointer(cus_pool *pool, const CUmemPoolPtrExportData *data,
                                           size_t bytes, cus_buffer **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(pool && data && out && bytes);
    if (pool->kind != CUS_POOL_IMPORTED)
        return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,
                        "pointers are imported from an imported pool (cus_pool_import)");
    import_args args = {pool->handle, *data};
    /* A device buffer: its release is the cuMemFree an imported pointer
     * needs, which frees nothing of the exporter's. */
    cus_status st = cus_buffer_new_(pool->ctx, NULL, bytes, CUS_BUFFER_DEVICE,
                                    "cuMemPoolImportPointer", import_pointer, &args,
                                    (cus_buffer_parent_){cus_pool_ref(pool), pool_release}, out,
                                    __func__);
    if (st)
        cus_pool_unref(pool);
    return st;
}
