/* 2D and 3D copies between host memory, buffers and arrays
 * (cuscope/array.h): every side that cuscope knows the extent of is
 * bounds-checked before the driver sees the copy. */
#include <string.h>

#include "array_internal.h"

/* One side of a copy, resolved: what the driver descriptor takes. */
typedef struct side_ {
    CUmemorytype type;
    const void *host;
    CUdeviceptr device;
    CUarray array;
    size_t x, y, z, pitch, rows;
    cus_context *ctx;   /* a buffer's or an array's; NULL for host memory */
    cus_buffer *buffer; /* to keep in a capture */
    cus_array *arr;
} side_;

#define RANGE_FAIL(...) CUS_FAIL(CUS_ERROR_OUT_OF_RANGE, NULL, __VA_ARGS__)

/* The byte after the region's last one, from base: ((z + d - 1) * rows +
 * y + h - 1) * pitch + x + w; false on overflow. Extents are not 0. */
static bool region_end(size_t x, size_t y, size_t z, size_t w, size_t h, size_t d, size_t pitch,
                       size_t rows, size_t *end)
{
    size_t row, e;
    return !__builtin_mul_overflow(z + d - 1, rows, &row) &&
           !__builtin_add_overflow(row, y + h - 1, &row) &&
           !__builtin_mul_overflow(row, pitch, &e) && !__builtin_add_overflow(e, x, &e) &&
           !__builtin_add_overflow(e, w, end);
}

/* Resolves and checks one endpoint for a region of w x h x d (d is 1 for a
 * 2D copy; any extent 0: nothing is copied, only the arguments checked). */
static cus_status resolve(const cus_copy_endpoint *e, const char *name, size_t w, size_t h,
                          size_t d, side_ *s)
{
    memset(s, 0, sizeof *s);
    bool empty = !w || !h || !d;
    /* Origins and extents far beyond any memory are refused as such, so
     * that the sums below cannot overflow. */
    if (e->y > SIZE_MAX / 4 || e->z > SIZE_MAX / 4 || h > SIZE_MAX / 4 || d > SIZE_MAX / 4 ||
        e->x_bytes > SIZE_MAX / 4 || w > SIZE_MAX / 4)
        return RANGE_FAIL("the %s region's origin or extent overflows", name);
    s->x = e->x_bytes;
    s->y = e->y;
    s->z = e->z;
    switch (e->kind) {
    case CUS_COPY_HOST:
    case CUS_COPY_BUFFER: {
        bool host = e->kind == CUS_COPY_HOST;
        if (host ? !e->host : !e->buffer)
            return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL, "the %s has no %s", name,
                            host ? "host memory" : "buffer");
        size_t pitch = e->pitch;
        if (!pitch && !host)
            pitch = cus_buffer_pitch(e->buffer);
        if (!pitch)
            pitch = w;
        size_t rows = e->rows;
        if (!rows && !host)
            rows = cus_buffer_height(e->buffer);
        if (!rows)
            rows = e->y + h;
        if (w > pitch)
            return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,
                            "rows of %zu bytes are wider than the %s's pitch of %zu", w, name,
                            pitch);
        if (!empty && e->x_bytes > pitch - w)
            return RANGE_FAIL("%zu bytes at x %zu leave the %s's %zu-byte rows", w, e->x_bytes,
                              name, pitch);
        if (!empty && e->y + h > rows && d > 1)
            return RANGE_FAIL("rows %zu to %zu leave the %s's %zu-row slices", e->y, e->y + h,
                              name, rows);
        s->pitch = pitch;
        s->rows = rows;
        if (host) {
            s->type = CU_MEMORYTYPE_HOST;
            s->host = e->host;
            return CUS_SUCCESS;
        }
        size_t size = cus_buffer_size(e->buffer), end = 0;
        if (e->offset > size)
            return RANGE_FAIL("offset %zu of the %s, a %zu-byte buffer", e->offset, name, size);
        if (!empty && (!region_end(e->x_bytes, e->y, e->z, w, h, d, pitch, rows, &end) ||
                       end > size - e->offset))
            return RANGE_FAIL("a %zu x %zu x %zu region at (%zu, %zu, %zu), pitch %zu, leaves "
                              "the %s: %zu bytes from offset %zu",
                              w, h, d, e->x_bytes, e->y, e->z, pitch, name, size - e->offset,
                              e->offset);
        s->type = CU_MEMORYTYPE_DEVICE;
        s->device = cus_buffer_ptr(e->buffer) + e->offset;
        s->ctx = cus_buffer_context(e->buffer);
        s->buffer = e->buffer;
        return CUS_SUCCESS;
    }
    case CUS_COPY_ARRAY: {
        const cus_array *a = e->array;
        if (!a)
            return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL, "the %s has no array", name);
        size_t row_bytes = a->desc.Width * a->elem;
        if (!empty && (e->x_bytes + w > row_bytes || e->y + h > cus_array_rows_(a) ||
                       e->z + d > cus_array_slices_(a)))
            return RANGE_FAIL("a %zu-byte x %zu x %zu region at (%zu, %zu, %zu) leaves the %s, "
                              "an array of %zu-byte x %zu x %zu",
                              w, h, d, e->x_bytes, e->y, e->z, name, row_bytes,
                              cus_array_rows_(a), cus_array_slices_(a));
        s->type = CU_MEMORYTYPE_ARRAY;
        s->array = a->handle;
        s->ctx = a->ctx;
        s->arr = e->array;
        return CUS_SUCCESS;
    }
    case CUS_COPY_NONE:
    default:
        return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL, "the %s's kind is %d, not HOST, "
                        "BUFFER or ARRAY", name, (int)e->kind);
    }
}

/* The context the copy runs in: the device sides' (one context), checked
 * against the stream's when there is one. */
static cus_status copy_context(const side_ *dst, const side_ *src, const cus_stream *stream,
                               cus_context **out)
{
    cus_context *ctx = dst->ctx ? dst->ctx : src->ctx;
    if (!ctx)
        return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,
                        "a copy between host memory only: one side must be a buffer or an array");
    if (dst->ctx && src->ctx && cus_context_handle(dst->ctx) != cus_context_handle(src->ctx))
        return CUS_FAIL(CUS_ERROR_CONTEXT_MISMATCH, NULL,
                        "a copy from context %p to context %p",
                        (void *)cus_context_handle(src->ctx), (void *)cus_context_handle(dst->ctx));
    if (stream && cus_context_handle(stream->ctx) != cus_context_handle(ctx))
        return CUS_FAIL(CUS_ERROR_CONTEXT_MISMATCH, NULL,
                        "a stream of context %p used for a copy in context %p",
                        (void *)cus_context_handle(stream->ctx), (void *)cus_context_handle(ctx));
    CUS_CHECK_POISON(ctx);
    *out = ctx;
    return CUS_SUCCESS;
}

static cus_status keep_sides(cus_stream *stream, const side_ *dst, const side_ *src,
                             const char *function)
{
    CUS_TRY(cus_capture_keep_buffer_(stream, dst->buffer, function));
    CUS_TRY(cus_capture_keep_buffer_(stream, src->buffer, function));
    CUS_TRY(cus_capture_keep_array_(stream, dst->arr, function));
    return cus_capture_keep_array_(stream, src->arr, function);
}

static CUDA_MEMCPY2D desc_2d(const side_ *dst, const side_ *src, size_t w, size_t h)
{
    CUDA_MEMCPY2D c;
    memset(&c, 0, sizeof c);
    c.srcXInBytes = src->x;
    c.srcY = src->y;
    c.srcMemoryType = src->type;
    c.srcHost = src->host;
    c.srcDevice = src->device;
    c.srcArray = src->array;
    c.srcPitch = src->type == CU_MEMORYTYPE_ARRAY ? 0 : src->pitch;
    c.dstXInBytes = dst->x;
    c.dstY = dst->y;
    c.dstMemoryType = dst->type;
    c.dstHost = (void *)(uintptr_t)dst->host;
    c.dstDevice = dst->device;
    c.dstArray = dst->array;
    c.dstPitch = dst->type == CU_MEMORYTYPE_ARRAY ? 0 : dst->pitch;
    c.WidthInBytes = w;
    c.Height = h;
    return c;
}

static CUDA_MEMCPY3D desc_3d(const side_ *dst, const side_ *src, size_t w, size_t h, size_t d)
{
    CUDA_MEMCPY3D c;
    memset(&c, 0, sizeof c);
    c.srcXInBytes = src->x;
    c.srcY = src->y;
    c.srcZ = src->z;
    c.srcMemoryType = src->type;
    c.srcHost = src->host;
    c.srcDevice = src->device;
    c.srcArray = src->array;
    if (src->type != CU_MEMORYTYPE_ARRAY) {
        c.srcPitch = src->pitch;
        c.srcHeight = src->rows;
    }
    c.dstXInBytes = dst->x;
    c.dstY = dst->y;
    c.dstZ = dst->z;
    c.dstMemoryType = dst->type;
    c.dstHost = (void *)(uintptr_t)dst->host;
    c.dstDevice = dst->device;
    c.dstArray = dst->array;
    if (dst->type != CU_MEMORYTYPE_ARRAY) {
        c.dstPitch = dst->pitch;
        c.dstHeight = dst->rows;
    }
    c.WidthInBytes = w;
    c.Height = h;
    c.Depth = d;
    return c;
}

cus_status cus_copy_nd_prepare_(const cus_copy_endpoint *dst, const cus_copy_endpoint *src,
                                size_t w, size_t h, size_t d, cus_copy_nd_ *out)
{
    side_ ds, ss;
    CUS_TRY(resolve(dst, "destination", w, h, d, &ds));
    CUS_TRY(resolve(src, "source", w, h, d, &ss));
    cus_context *ctx = NULL;
    CUS_TRY(copy_context(&ds, &ss, NULL, &ctx));
    out->p = desc_3d(&ds, &ss, w, h, d);
    out->ctx = ctx;
    out->n = 0;
    const side_ *sides[2] = {&ds, &ss};
    for (int i = 0; i < 2; i++) {
        if (sides[i]->buffer)
            out->items[out->n++] = cus_capture_item_buffer_(sides[i]->buffer);
        if (sides[i]->arr)
            out->items[out->n++] = cus_capture_item_array_(sides[i]->arr);
    }
    return CUS_SUCCESS;
}

static cus_status copy_2d(const cus_copy_2d_desc *desc, cus_stream *stream, bool async,
                          const char *function)
{
    if (!desc || (async && !stream))
        return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL,
                         async ? "a descriptor and a stream are required"
                               : "a descriptor is required");
    side_ dst, src;
    CUS_TRY(resolve(&desc->dst, "destination", desc->width_bytes, desc->height, 1, &dst));
    CUS_TRY(resolve(&desc->src, "source", desc->width_bytes, desc->height, 1, &src));
    cus_context *ctx = NULL;
    CUS_TRY(copy_context(&dst, &src, stream, &ctx));
    if (!desc->width_bytes || !desc->height)
        return CUS_SUCCESS;
    CUDA_MEMCPY2D c = desc_2d(&dst, &src, desc->width_bytes, desc->height);
    if (!async) {
        CUS_IN_CONTEXT_AS(function, ctx, "cuMemcpy2D", cus_drv_.cuMemcpy2D_(&c));
        return CUS_SUCCESS;
    }
    CUS_TRY(keep_sides(stream, &dst, &src, function));
    CUS_IN_CONTEXT_AS(function, ctx, "cuMemcpy2DAsync",
                      cus_drv_.cuMemcpy2DAsync_(&c, stream->handle));
    return CUS_SUCCESS;
}

static cus_status copy_3d(const cus_copy_3d_desc *desc, cus_stream *stream, bool async,
                          const char *function)
{
    if (!desc || (async && !stream))
        return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL,
                         async ? "a descriptor and a stream are required"
                               : "a descriptor is required");
    size_t w = desc->width_bytes, h = desc->height, d = desc->depth;
    side_ dst, src;
    CUS_TRY(resolve(&desc->dst, "destination", w, h, d, &dst));
    CUS_TRY(resolve(&desc->src, "source", w, h, d, &src));
    cus_context *ctx = NULL;
    CUS_TRY(copy_context(&dst, &src, stream, &ctx));
    if (!w || !h || !d)
        return CUS_SUCCESS;
    CUDA_MEMCPY3D c = desc_3d(&dst, &src, w, h, d);
    if (!async) {
        CUS_IN_CONTEXT_AS(function, ctx, "cuMemcpy3D", cus_drv_.cuMemcpy3D_(&c));
        return CUS_SUCCESS;
    }
    CUS_TRY(keep_sides(stream, &dst, &src, function));
    CUS_IN_CONTEXT_AS(function, ctx, "cuMemcpy3DAsync",
                      cus_drv_.cuMemcpy3DAsync_(&c, stream->handle));
    return CUS_SUCCESS;
}

CUS_API cus_status cus_copy_2d(const cus_copy_2d_desc *desc)
{
    CUS_API_ENTER();
    return copy_2d(desc, NULL, false, __func__);
}

CUS_API cus_status cus_copy_2d_async(const cus_copy_2d_desc *desc, cus_stream *stream)
{
    CUS_API_ENTER();
    return copy_2d(desc, stream, true, __func__);
}

CUS_API cus_status cus_copy_3d(const cus_copy_3d_desc *desc)
{
    CUS_API_ENTER();
    return copy_3d(desc, NULL, false, __func__);
}

CUS_API cus_status cus_copy_3d_async(const cus_copy_3d_desc *desc, cus_stream *stream)
{
    CUS_API_ENTER();
    return copy_3d(desc, stream, true, __func__);
}
