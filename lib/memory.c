/* Device, stream-ordered, managed and page-locked host memory, and the
 * bounds-checked copies and fills between them. */
#include <stddef.h>
#include <stdlib.h>

#include "buffer_owner.h"
#include "cuscope/array.h"
#include "cuscope/memory.h"
#include "internal.h"

struct cus_buffer {
    cus_refcount refs;
    CUdeviceptr ptr;
    size_t size;
    cus_buffer_kind kind;
    cus_context *ctx;   /* a reference */
    cus_stream *stream; /* stream-ordered: the stream it is freed on (a reference) */
    const cus_buffer_ops_ *ops; /* a kind of a file above (cus_buffer_new_with_ops_), or NULL */
    size_t pitch, height; /* cus_buffer_alloc_pitch (cuscope/array.h); else 0 */
    /* What it holds beside its memory: kinds cuscope does not free (views,
     * foreign memory) their owner, released in place of the free; the others
     * a parent (a pool's buffers: the pool), released after the free. One of
     * the two, so that the record stays in the 128-byte class of the record
     * cache (host_alloc.c). */
    union {
        cus_buffer_parent_ parent;
        cus_buffer_owner_ owner;
    } held;
};
_Static_assert(offsetof(cus_buffer, refs) == 0, "cus_buffer_refs_ reads the count first");
_Static_assert(sizeof(cus_buffer) <= 128, "a buffer's record fits the record cache's class");

struct cus_host_buffer {
    cus_refcount refs;
    void *data;
    size_t size;
    bool registered;
    cus_context *ctx; /* a reference */
};

/* --- buffers ------------------------------------------------------------------ */

static CUresult free_call(void *b)
{
    const cus_buffer *buf = b;
    if (buf->ops)
        return buf->ops->release(buf->ptr);
    if (buf->kind == CUS_BUFFER_STREAM_ORDERED)
        return cus_drv_.cuMemFreeAsync_(buf->ptr, buf->stream->handle);
    return cus_drv_.cuMemFree_(buf->ptr);
}

/* Views, foreign memory and graph allocations are someone else's to free. */
static bool buffer_frees(cus_buffer_kind kind)
{
    return kind != CUS_BUFFER_VIEW && kind != CUS_BUFFER_FOREIGN && kind != CUS_BUFFER_GRAPH;
}

static void buffer_destroy(cus_buffer *b)
{
    if (!buffer_frees(b->kind)) {
        if (b->held.owner.release)
            b->held.owner.release(b->held.owner.obj, b->ptr, b->size);
    } else if (b->ptr) {
        cus_destroy_in_context_relaxed_(b->ctx, "cus_buffer_unref",
                                b->ops ? b->ops->release_call
                                : b->kind == CUS_BUFFER_STREAM_ORDERED ? "cuMemFreeAsync"
                                                                       : "cuMemFree",
                                free_call, b, b->ops ? b->ops->what : "device memory");
    }
    if (buffer_frees(b->kind) && b->held.parent.obj)
        b->held.parent.release(b->held.parent.obj);
    cus_stream_unref(b->stream);
    cus_context_unref(b->ctx);
    cus_record_free_(b, sizeof *b);
}

/* A stream-ordered free queued on a stream that a capture has would become a
 * node of its graph: the capture runs the destruction after its end. */
static bool buffer_free_taken(const cus_buffer *b, cus_refcount *r, cus_destroy_fn_ destroy)
{
    return CUS_UNLIKELY(b->kind == CUS_BUFFER_STREAM_ORDERED && cus_captures_open_()) &&
           cus_capture_ops.defer_to_end(b->stream, r, (void *)b, destroy);
}

CUS_DEFINE_REF_UNREF_TAKEN(cus_buffer, buffer_destroy, buffer_free_taken)

/* The allocations of memory.c's own kinds; arg: the stream, or the flags. */
static CUresult alloc_device(CUdeviceptr *p, size_t bytes, void *arg)
{
    (void)arg;
    return cus_drv_.cuMemAlloc_(p, bytes);
}

static CUresult alloc_stream_ordered(CUdeviceptr *p, size_t bytes, void *arg)
{
    return cus_drv_.cuMemAllocAsync_(p, bytes, ((cus_stream *)arg)->handle);
}

static CUresult alloc_managed(CUdeviceptr *p, size_t bytes, void *arg)
{
    return cus_drv_.cuMemAllocManaged_(p, bytes, *(const unsigned int *)arg);
}

/* Allocates through `alloc` with ctx current; fills the new buffer, ops
 * included, before anyone else can see it. */
static cus_status buffer_new_with(cus_context *ctx, cus_stream *stream, size_t bytes,
                                  cus_buffer_kind kind, const char *driver_call,
                                  cus_buffer_alloc_fn_ alloc, void *arg,
                                  const cus_buffer_ops_ *ops, cus_buffer_parent_ parent,
                                  cus_buffer **out, const char *function)
{
    if (!ctx || !out || bytes == 0)
        return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL,
                         "a context, an out pointer and a non-zero size are required");
    if (CUS_UNLIKELY(atomic_load_explicit(&ctx->poison, memory_order_relaxed)))
        return cus_context_poisoned_fail_(ctx, function);
    cus_release_deferred_if_any_();
    cus_autofree cus_buffer *b = cus_record_new_(sizeof *b);
    if (!b)
        return cus_fail_(CUS_ERROR_OUT_OF_HOST_MEMORY, function, NULL, "allocating a buffer");
    CUdeviceptr p = 0;
    CUS_IN_CONTEXT_AS(function, ctx, driver_call, alloc(&p, bytes, arg));
    cus_refcount_init_(&b->refs);
    b->ptr = p;
    b->size = bytes;
    b->kind = kind;
    b->ctx = cus_context_ref(ctx);
    b->stream = cus_stream_ref(stream);
    b->held.parent = parent;
    b->ops = ops;
    *out = cus_steal(&b);
    return CUS_SUCCESS;
}

cus_status cus_buffer_new_(cus_context *ctx, cus_stream *stream, size_t bytes,
                           cus_buffer_kind kind, const char *driver_call,
                           cus_buffer_alloc_fn_ alloc, void *arg, cus_buffer_parent_ parent,
                           cus_buffer **out, const char *function)
{
    return buffer_new_with(ctx, stream, bytes, kind, driver_call, alloc, arg, NULL, parent, out,
                           function);
}

static cus_status buffer_new(cus_context *ctx, cus_stream *stream, size_t bytes,
                             cus_buffer_kind kind, unsigned int flags, cus_buffer **out,
                             const char *function)
{
    switch (kind) {
    case CUS_BUFFER_STREAM_ORDERED:
        return cus_buffer_new_(ctx, stream, bytes, kind, "cuMemAllocAsync", alloc_stream_ordered,
                               stream, (cus_buffer_parent_){0}, out, function);
    case CUS_BUFFER_MANAGED:
        return cus_buffer_new_(ctx, NULL, bytes, kind, "cuMemAllocManaged", alloc_managed, &flags,
                               (cus_buffer_parent_){0}, out, function);
    case CUS_BUFFER_DEVICE:
    case CUS_BUFFER_IMPORTED: /* made by cus_buffer_new_with_ops_ only */
    case CUS_BUFFER_VIEW:     /* and these by cus_buffer_new_owned_ */
    case CUS_BUFFER_FOREIGN:
    case CUS_BUFFER_GRAPH: /* and this by graph_memory.c */
        break;
    }
    return cus_buffer_new_(ctx, NULL, bytes, kind, "cuMemAlloc", alloc_device, NULL,
                           (cus_buffer_parent_){0}, out, function);
}

/* A kind of a file above: its acquire call in place of an allocation, and its
 * release in place of the free (ipc.c's imports). */
typedef struct ops_acquire {
    const cus_buffer_ops_ *ops;
    const void *arg;
} ops_acquire;

static CUresult alloc_with_ops(CUdeviceptr *p, size_t bytes, void *arg)
{
    (void)bytes;
    const ops_acquire *a = arg;
    return a->ops->acquire(a->arg, p);
}

cus_status cus_buffer_new_with_ops_(cus_context *ctx, size_t bytes, const cus_buffer_ops_ *ops,
                                    const void *arg, cus_buffer **out, const char *function)
{
    ops_acquire a = {ops, arg};
    return buffer_new_with(ctx, NULL, bytes, ops->kind, ops->acquire_call, alloc_with_ops, &a, ops,
                           (cus_buffer_parent_){0}, out, function);
}

cus_status cus_buffer_new_owned_(cus_context *ctx, CUdeviceptr ptr, size_t bytes,
                                 cus_buffer_kind kind, cus_buffer_owner_ owner, cus_buffer **out,
                                 const char *function)
{
    cus_buffer *b = cus_record_new_(sizeof *b);
    if (!b)
        return cus_fail_(CUS_ERROR_OUT_OF_HOST_MEMORY, function, NULL, "allocating a buffer");
    cus_refcount_init_(&b->refs);
    b->ptr = ptr;
    b->size = bytes;
    b->kind = kind;
    b->ctx = cus_context_ref(ctx);
    b->held.owner = owner;
    *out = b;
    return CUS_SUCCESS;
}

void cus_buffer_set_ptr_(cus_buffer *buf, CUdeviceptr ptr)
{
    buf->ptr = ptr;
}

CUS_API cus_status cus_buffer_alloc(cus_context *ctx, size_t bytes, cus_buffer **out)
{
    CUS_API_ENTER();
    return buffer_new(ctx, NULL, bytes, CUS_BUFFER_DEVICE, 0, out, __func__);
}

CUS_API cus_status cus_buffer_alloc_array(cus_context *ctx, size_t count, size_t elem_size,
                                          cus_buffer **out)
{
    CUS_API_ENTER();
    size_t bytes;
    if (__builtin_mul_overflow(count, elem_size, &bytes))
        return CUS_FAIL(CUS_ERROR_OUT_OF_RANGE, NULL, "%zu elements of %zu bytes overflow size_t",
                        count, elem_size);
    return buffer_new(ctx, NULL, bytes, CUS_BUFFER_DEVICE, 0, out, __func__);
}

CUS_API cus_status cus_buffer_alloc_async(cus_stream *stream, size_t bytes, cus_buffer **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(stream);
    /* Inside a capture the driver would make a graph allocation, which lives
     * by the graph's rules, not a buffer's. */
    if (CUS_UNLIKELY(cus_captures_open_()))
        CUS_TRY(cus_capture_refuse_on_(stream, __func__, "a stream-ordered allocation"));
    return buffer_new(stream->ctx, stream, bytes, CUS_BUFFER_STREAM_ORDERED, 0, out, __func__);
}

CUS_API cus_status cus_buffer_alloc_managed(cus_context *ctx, size_t bytes, unsigned int flags,
                                            cus_buffer **out)
{
    CUS_API_ENTER();
    return buffer_new(ctx, NULL, bytes, CUS_BUFFER_MANAGED, flags ? flags : CU_MEM_ATTACH_GLOBAL,
                      out, __func__);
}

/* A pitched buffer (cuscope/array.h): a device buffer that knows its rows. */
CUS_API cus_status cus_buffer_alloc_pitch(cus_context *ctx, size_t width_bytes, size_t height,
                                          unsigned int element_bytes, cus_buffer **out,
                                          size_t *pitch)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(ctx && out && pitch && width_bytes && height);
    if (element_bytes != 4 && element_bytes != 8 && element_bytes != 16)
        return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,
                        "element size %u: cuMemAllocPitch takes 4, 8 or 16", element_bytes);
    CUS_CHECK_POISON(ctx);
    cus_release_deferred_if_any_();
    cus_autofree cus_buffer *b = cus_record_new_(sizeof *b);
    if (!b)
        return CUS_FAIL(CUS_ERROR_OUT_OF_HOST_MEMORY, NULL, "allocating a buffer");
    CUdeviceptr p = 0;
    size_t row = 0;
    CUS_IN_CONTEXT(ctx, "cuMemAllocPitch",
                   cus_drv_.cuMemAllocPitch_(&p, &row, width_bytes, height, element_bytes));
    cus_refcount_init_(&b->refs);
    b->ptr = p;
    b->size = row * height; /* the driver allocated it: no overflow */
    b->kind = CUS_BUFFER_DEVICE;
    b->ctx = cus_context_ref(ctx);
    b->pitch = row;
    b->height = height;
    *pitch = row;
    *out = cus_steal(&b);
    return CUS_SUCCESS;
}

CUS_API size_t cus_buffer_pitch(const cus_buffer *buf)
{
    return buf ? buf->pitch : 0;
}

CUS_API size_t cus_buffer_height(const cus_buffer *buf)
{
    return buf ? buf->height : 0;
}

CUS_API CUdeviceptr cus_buffer_ptr(const cus_buffer *buf)
{
    return buf ? buf->ptr : 0;
}

CUS_API size_t cus_buffer_size(const cus_buffer *buf)
{
    return buf ? buf->size : 0;
}

CUS_API cus_buffer_kind cus_buffer_get_kind(const cus_buffer *buf)
{
    return buf ? buf->kind : CUS_BUFFER_DEVICE;
}

CUS_API cus_context *cus_buffer_context(const cus_buffer *buf)
{
    return buf ? buf->ctx : NULL;
}

const void *cus_buffer_parent_of_(const cus_buffer *buf)
{
    return buf && buffer_frees(buf->kind) ? buf->held.parent.obj : NULL;
}

CUS_API void *cus_buffer_host_ptr(const cus_buffer *buf)
{
    return buf && buf->kind == CUS_BUFFER_MANAGED ? (void *)(uintptr_t)buf->ptr : NULL;
}

/* A stream may only carry work on a buffer of its own context. */
#define CHECK_STREAM(buf, stream)                                              \
    do {                                                                       \
        if (cus_context_handle((stream)->ctx) != cus_context_handle((buf)->ctx)) \
            return CUS_FAIL(CUS_ERROR_CONTEXT_MISMATCH, NULL,                  \
                            "a stream of context %p used for a buffer of context %p", \
                            (void *)cus_context_handle((stream)->ctx),         \
                            (void *)cus_context_handle((buf)->ctx));           \
    } while (0)

CUS_API cus_status cus_buffer_prefetch(cus_buffer *buf, CUdevice device, cus_stream *stream)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(buf && stream && buf->kind == CUS_BUFFER_MANAGED);
    CHECK_STREAM(buf, stream);
    if (!cus_drv_.cuMemPrefetchAsync_)
        return CUS_FAIL(CUS_ERROR_NOT_SUPPORTED, NULL, "the driver lacks cuMemPrefetchAsync");
    CUS_IN_CONTEXT(buf->ctx, "cuMemPrefetchAsync",
                   cus_drv_.cuMemPrefetchAsync_(buf->ptr, buf->size, device, stream->handle));
    return CUS_SUCCESS;
}

CUS_API cus_status cus_buffer_advise(cus_buffer *buf, CUmem_advise advice, CUdevice device)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(buf && buf->kind == CUS_BUFFER_MANAGED);
    if (!cus_drv_.cuMemAdvise_)
        return CUS_FAIL(CUS_ERROR_NOT_SUPPORTED, NULL, "the driver lacks cuMemAdvise");
    CUS_IN_CONTEXT(buf->ctx, "cuMemAdvise",
                   cus_drv_.cuMemAdvise_(buf->ptr, buf->size, advice, device));
    return CUS_SUCCESS;
}

/* --- page-locked host memory --------------------------------------------------- */

static CUresult host_free_call(void *h)
{
    const cus_host_buffer *hb = h;
    return hb->registered ? cus_drv_.cuMemHostUnregister_(hb->data)
                          : cus_drv_.cuMemFreeHost_(hb->data);
}

static void host_buffer_destroy(cus_host_buffer *hb)
{
    cus_destroy_in_context_relaxed_(hb->ctx, "cus_host_buffer_unref",
                            hb->registered ? "cuMemHostUnregister" : "cuMemFreeHost",
                            host_free_call, hb, "page-locked host memory");
    cus_context_unref(hb->ctx);
    cus_record_free_(hb, sizeof *hb);
}

CUS_DEFINE_REF_UNREF(cus_host_buffer, host_buffer_destroy)

static cus_status host_buffer_new(cus_context *ctx, void *ptr, size_t bytes, unsigned int flags,
                                  bool registering, cus_host_buffer **out, const char *function)
{
    if (!ctx || !out || bytes == 0 || (registering && !ptr))
        return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL,
                         "a context, an out pointer, a non-zero size (and memory to register) "
                         "are required");
    if (CUS_UNLIKELY(atomic_load_explicit(&ctx->poison, memory_order_relaxed)))
        return cus_context_poisoned_fail_(ctx, function);
    cus_autofree cus_host_buffer *hb = cus_record_new_(sizeof *hb);
    if (!hb)
        return cus_fail_(CUS_ERROR_OUT_OF_HOST_MEMORY, function, NULL, "allocating a record");
    void *p = ptr;
    if (registering)
        CUS_IN_CONTEXT_AS(function, ctx, "cuMemHostRegister",
                          cus_drv_.cuMemHostRegister_(ptr, bytes, flags));
    else
        CUS_IN_CONTEXT_AS(function, ctx, "cuMemHostAlloc",
                          cus_drv_.cuMemHostAlloc_(&p, bytes, flags));
    cus_refcount_init_(&hb->refs);
    hb->data = p;
    hb->size = bytes;
    hb->registered = registering;
    hb->ctx = cus_context_ref(ctx);
    *out = cus_steal(&hb);
    return CUS_SUCCESS;
}

CUS_API cus_status cus_host_buffer_alloc(cus_context *ctx, size_t bytes, unsigned int flags,
                                         cus_host_buffer **out)
{
    CUS_API_ENTER();
    return host_buffer_new(ctx, NULL, bytes, flags, false, out, __func__);
}

CUS_API cus_status cus_host_buffer_register(cus_context *ctx, void *ptr, size_t bytes,
                                            unsigned int flags, cus_host_buffer **out)
{
    CUS_API_ENTER();
    return host_buffer_new(ctx, ptr, bytes, flags, true, out, __func__);
}

CUS_API void *cus_host_buffer_data(const cus_host_buffer *buf)
{
    return buf ? buf->data : NULL;
}

CUS_API size_t cus_host_buffer_size(const cus_host_buffer *buf)
{
    return buf ? buf->size : 0;
}

CUS_API bool cus_host_buffer_is_registered(const cus_host_buffer *buf)
{
    return buf && buf->registered;
}

/* --- copies and fills ------------------------------------------------------------ */

/* [offset, offset + bytes) inside buf, without overflow. */
#define CHECK_RANGE(buf, offset, bytes)                                        \
    do {                                                                       \
        if ((offset) > (buf)->size || (bytes) > (buf)->size - (offset))        \
            return CUS_FAIL(CUS_ERROR_OUT_OF_RANGE, NULL,                      \
                            "%zu bytes at offset %zu of a %zu-byte buffer", (size_t)(bytes), \
                            (size_t)(offset), (buf)->size);                    \
    } while (0)


CUS_API cus_status cus_copy_to_device(cus_buffer *dst, size_t dst_offset, const void *src,
                                      size_t bytes)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(dst && (src || !bytes));
    CHECK_RANGE(dst, dst_offset, bytes);
    if (!bytes)
        return CUS_SUCCESS;
    CUS_IN_CONTEXT(dst->ctx, "cuMemcpyHtoD",
                   cus_drv_.cuMemcpyHtoD_(dst->ptr + dst_offset, src, bytes));
    return CUS_SUCCESS;
}

CUS_API cus_status cus_copy_to_host(void *dst, cus_buffer *src, size_t src_offset, size_t bytes)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(src && (dst || !bytes));
    CHECK_RANGE(src, src_offset, bytes);
    if (!bytes)
        return CUS_SUCCESS;
    CUS_IN_CONTEXT(src->ctx, "cuMemcpyDtoH",
                   cus_drv_.cuMemcpyDtoH_(dst, src->ptr + src_offset, bytes));
    return CUS_SUCCESS;
}

CUS_API cus_status cus_copy_device(cus_buffer *dst, size_t dst_offset, cus_buffer *src,
                                   size_t src_offset, size_t bytes)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(dst && src);
    CHECK_RANGE(dst, dst_offset, bytes);
    CHECK_RANGE(src, src_offset, bytes);
    if (!bytes)
        return CUS_SUCCESS;
    CUS_CHECK_POISON(src->ctx);
    if (cus_context_handle(dst->ctx) == cus_context_handle(src->ctx)) {
        CUS_IN_CONTEXT(dst->ctx, "cuMemcpyDtoD",
                       cus_drv_.cuMemcpyDtoD_(dst->ptr + dst_offset, src->ptr + src_offset, bytes));
    } else {
        CUS_IN_CONTEXT(dst->ctx, "cuMemcpyPeer",
                       cus_drv_.cuMemcpyPeer_(dst->ptr + dst_offset, dst->ctx->handle,
                                              src->ptr + src_offset, src->ctx->handle, bytes));
    }
    return CUS_SUCCESS;
}

CUS_API cus_status cus_copy_to_device_async(cus_buffer *dst, size_t dst_offset, const void *src,
                                            size_t bytes, cus_stream *stream)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(dst && stream && (src || !bytes));
    CHECK_RANGE(dst, dst_offset, bytes);
    CHECK_STREAM(dst, stream);
    if (!bytes)
        return CUS_SUCCESS;
    CUS_TRY(cus_capture_keep_buffer_(stream, dst, __func__));
    CUS_IN_CONTEXT(dst->ctx, "cuMemcpyHtoDAsync",
                   cus_drv_.cuMemcpyHtoDAsync_(dst->ptr + dst_offset, src, bytes, stream->handle));
    return CUS_SUCCESS;
}

CUS_API cus_status cus_copy_to_host_async(void *dst, cus_buffer *src, size_t src_offset,
                                          size_t bytes, cus_stream *stream)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(src && stream && (dst || !bytes));
    CHECK_RANGE(src, src_offset, bytes);
    CHECK_STREAM(src, stream);
    if (!bytes)
        return CUS_SUCCESS;
    CUS_TRY(cus_capture_keep_buffer_(stream, src, __func__));
    CUS_IN_CONTEXT(src->ctx, "cuMemcpyDtoHAsync",
                   cus_drv_.cuMemcpyDtoHAsync_(dst, src->ptr + src_offset, bytes, stream->handle));
    return CUS_SUCCESS;
}

CUS_API cus_status cus_copy_device_async(cus_buffer *dst, size_t dst_offset, cus_buffer *src,
                                         size_t src_offset, size_t bytes, cus_stream *stream)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(dst && src && stream);
    CHECK_RANGE(dst, dst_offset, bytes);
    CHECK_RANGE(src, src_offset, bytes);
    CHECK_STREAM(dst, stream);
    if (!bytes)
        return CUS_SUCCESS;
    CUS_CHECK_POISON(src->ctx);
    CUS_TRY(cus_capture_keep_buffer_(stream, dst, __func__));
    CUS_TRY(cus_capture_keep_buffer_(stream, src, __func__));
    if (cus_context_handle(dst->ctx) == cus_context_handle(src->ctx)) {
        CUS_IN_CONTEXT(dst->ctx, "cuMemcpyDtoDAsync",
                       cus_drv_.cuMemcpyDtoDAsync_(dst->ptr + dst_offset, src->ptr + src_offset,
                                                   bytes, stream->handle));
    } else {
        CUS_IN_CONTEXT(dst->ctx, "cuMemcpyPeerAsync",
                       cus_drv_.cuMemcpyPeerAsync_(dst->ptr + dst_offset, dst->ctx->handle,
                                                   src->ptr + src_offset, src->ctx->handle, bytes,
                                                   stream->handle));
    }
    return CUS_SUCCESS;
}

/* Validates a fill of count elements of `width` bytes at offset. */
#define CHECK_FILL(buf, offset, count, width)                                  \
    do {                                                                       \
        CUS_CHECK_ARG(buf);                                                    \
        if ((offset) % (width))                                                \
            return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,                  \
                            "offset %zu is not aligned to %d bytes", (size_t)(offset), (width)); \
        size_t bytes_;                                                         \
        if (__builtin_mul_overflow((count), (size_t)(width), &bytes_))         \
            return CUS_FAIL(CUS_ERROR_OUT_OF_RANGE, NULL, "%zu elements overflow", (size_t)(count)); \
        CHECK_RANGE(buf, offset, bytes_);                                      \
        if (!(count))                                                          \
            return CUS_SUCCESS;                                                \
    } while (0)

/* The fills of each width, synchronous and stream-ordered: one definition,
 * so that the six cannot drift apart. */
#define DEFINE_FILLS(bits, T)                                                  \
    CUS_API cus_status cus_buffer_fill_u##bits(cus_buffer *buf, size_t offset, T value,  \
                                               size_t count)                   \
    {                                                                          \
        CUS_API_ENTER();                                                       \
        CHECK_FILL(buf, offset, count, (bits) / 8);                            \
        CUS_IN_CONTEXT(buf->ctx, "cuMemsetD" #bits,                            \
                       cus_drv_.cuMemsetD##bits##_(buf->ptr + offset, value, count)); \
        return CUS_SUCCESS;                                                    \
    }                                                                          \
    CUS_API cus_status cus_buffer_fill_u##bits##_async(cus_buffer *buf, size_t offset,   \
                                                       T value, size_t count,  \
                                                       cus_stream *stream)     \
    {                                                                          \
        CUS_API_ENTER();                                                       \
        CUS_CHECK_ARG(stream);                                                 \
        CHECK_FILL(buf, offset, count, (bits) / 8);                            \
        CHECK_STREAM(buf, stream);                                             \
        CUS_TRY(cus_capture_keep_buffer_(stream, buf, __func__));              \
        CUS_IN_CONTEXT(buf->ctx, "cuMemsetD" #bits "Async",                    \
                       cus_drv_.cuMemsetD##bits##Async_(buf->ptr + offset, value, count, \
                                                        stream->handle));      \
        return CUS_SUCCESS;                                                    \
    }

DEFINE_FILLS(8, uint8_t)
DEFINE_FILLS(16, uint16_t)
DEFINE_FILLS(32, uint32_t)

CUS_API cus_status cus_memory_info(cus_context *ctx, size_t *free_bytes, size_t *total_bytes)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(ctx && (free_bytes || total_bytes));
    size_t f = 0, t = 0;
    CUS_IN_CONTEXT(ctx, "cuMemGetInfo", cus_drv_.cuMemGetInfo_(&f, &t));
    if (free_bytes)
        *free_bytes = f;
    if (total_bytes)
        *total_bytes = t;
    return CUS_SUCCESS;
}

CUS_API cus_status cus_context_can_access_peer(cus_context *ctx, cus_context *peer, bool *can)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(ctx && peer && can);
    int v = 0;
    CUresult r = cus_drv_.cuDeviceCanAccessPeer_(&v, ctx->device.handle, peer->device.handle);
    if (r)
        return CUS_FAIL((cus_status)r, "cuDeviceCanAccessPeer", "devices %d and %d",
                        (int)ctx->device.handle, (int)peer->device.handle);
    *can = v != 0;
    return CUS_SUCCESS;
}

CUS_API cus_status cus_context_enable_peer_access(cus_context *ctx, cus_context *peer)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(ctx && peer);
    CUS_CHECK_POISON(peer);
    CUresult rr = CUDA_SUCCESS;
    CUS_IN_CONTEXT(ctx, "cuCtxEnablePeerAccess",
                   ((rr = cus_drv_.cuCtxEnablePeerAccess_(peer->handle, 0)) ==
                            CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED
                        ? CUDA_SUCCESS
                        : rr));
    return CUS_SUCCESS;
}

CUS_DEFINE_CAPTURE_KEEP(buffer, cus_buffer)
