/* Pitched allocations and 2D and 3D copies: cuMemAllocPitch, cuMemcpy2D,
 * cuMemcpy2DAsync, cuMemcpy3D, cuMemcpy3DAsync; part of the memory area
 * (fake_memory.c has the records and range checks; arrays are
 * fake_array.c's). A copy is checked whole before anything is queued, then
 * queued as ordinary COPY operations: one for a contiguous region, else one
 * per row (so a captured 2D copy of a strided region is that many memcpy
 * nodes, where the driver makes one: deliberate.txt). A 2D or 3D memcpy
 * node added by hand is checked the same way and kept as one strided COPY
 * (fake_memory_copy_3d_payload_locked, for fake_graph_nodes.c). */
#include <inttypes.h>
#include <string.h>

#include "fake_array.h"
#include "fake_device.h"
#include "fake_memory_records.h"

/* --- cuMemAllocPitch ---------------------------------------------------------------------------- */

CUresult CUDAAPI fake_cuMemAllocPitch(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
                                      size_t Height, unsigned int ElementSizeBytes)
{
    FAKE_ENTER(cuMemAllocPitch);
    if (!dptr || !pPitch || WidthInBytes == 0 || Height == 0 ||
        (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16))
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    GET_CURRENT(c);
    const int *at = fake_dev.devices[c->device].attributes;
    if (WidthInBytes > (size_t)at[CU_DEVICE_ATTRIBUTE_MAX_PITCH])
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    /* Rows start at multiples of the texture alignment (512 on Hopper, a
     * multiple of the texture pitch alignment), so that each row may be read
     * through a pitch-2D texture. The real driver's rounding may differ
     * (unsure: the GPU scenario prints the H200's); cuscope relies only on
     * pitch >= width and the pitch alignment. */
    size_t align = (size_t)at[CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT];
    if (align < (size_t)at[CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT])
        align = (size_t)at[CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT];
    if (align == 0)
        align = 1;
    size_t pitch, bytes;
    if (__builtin_add_overflow(WidthInBytes, align - 1, &pitch) ||
        __builtin_mul_overflow(pitch / align * align, Height, &bytes))
        return fake_leave(CUDA_ERROR_OUT_OF_MEMORY);
    pitch = pitch / align * align;
    if (!fake_memory_fits_locked(c, bytes))
        return fake_leave(CUDA_ERROR_OUT_OF_MEMORY);
    fake_mem *m = NULL;
    CUresult r = fake_memory_allocate_locked(CUS_FAKE_HANDLE_DEVICE_MEMORY, bytes, c, 0, &m);
    if (r == CUDA_SUCCESS) {
        *dptr = (CUdeviceptr)m->base;
        *pPitch = pitch;
    }
    return fake_leave(r);
}

/* --- 2D and 3D copies ----------------------------------------------------------------------- */

/* One side, resolved: the address of (0, 0, 0), its row pitch and rows per
 * slice, and the memory the region lies in (NULL: unchecked host memory). */
typedef struct copy_side {
    uintptr_t base;
    size_t x, y, z, pitch, rows;
    side sd;
    fake_mem *mem;
} copy_side;

/* The region of w x h x d at the side's origin: the driver's rules, then
 * the range check of memory the fake knows. CUDA_ERROR_INVALID_VALUE. */
static CUresult side_locked(CUmemorytype type, const void *host, CUdeviceptr device,
                            CUarray array, size_t x, size_t y, size_t z, size_t pitch,
                            size_t rows, size_t w, size_t h, size_t d, const char *what,
                            const struct CUctx_st *c, copy_side *s)
{
    memset(s, 0, sizeof *s);
    s->x = x;
    s->y = y;
    s->z = z;
    switch ((int)type) {
    case CU_MEMORYTYPE_ARRAY: {
        fake_array *a = NULL;
        CUresult r = fake_array_arg_locked(array, what, &a);
        if (r != CUDA_SUCCESS)
            return r == CUDA_ERROR_INVALID_VALUE ? CUDA_ERROR_INVALID_VALUE : r;
        if (x > a->row_bytes || w > a->row_bytes - x || y > a->rows || h > a->rows - y ||
            z > a->slices || d > a->slices - z) {
            fake_misuse_locked("%s region of %zu x %zu x %zu at (%zu, %zu, %zu) leaves the "
                               "array 0x%" PRIxPTR " of %zu bytes x %zu x %zu",
                               what, w, h, d, x, y, z, (uintptr_t)array, a->row_bytes, a->rows,
                               a->slices);
            return CUDA_ERROR_INVALID_VALUE;
        }
        s->base = a->base;
        s->pitch = a->row_bytes;
        s->rows = a->rows;
        s->sd = SIDE_DEVICE;
        break;
    }
    case CU_MEMORYTYPE_HOST:
    case CU_MEMORYTYPE_DEVICE:
    case CU_MEMORYTYPE_UNIFIED: {
        uintptr_t p = type == CU_MEMORYTYPE_HOST ? (uintptr_t)host : (uintptr_t)device;
        if (!p)
            return CUDA_ERROR_INVALID_VALUE;
        /* The pitch covers the rows (when there is more than one), and is
         * within the device's maximum. */
        if ((h > 1 || d > 1) && (pitch < w || x > pitch - w))
            return CUDA_ERROR_INVALID_VALUE;
        if (pitch > (size_t)fake_dev.devices[c->device].attributes[CU_DEVICE_ATTRIBUTE_MAX_PITCH])
            return CUDA_ERROR_INVALID_VALUE;
        if (d > 1 && (rows < h || y > rows - h))
            return CUDA_ERROR_INVALID_VALUE;
        s->base = p;
        s->pitch = pitch;
        s->rows = rows;
        s->sd = type == CU_MEMORYTYPE_HOST ? SIDE_HOST
                : type == CU_MEMORYTYPE_DEVICE ? SIDE_DEVICE : SIDE_ANY;
        break;
    }
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
    /* The span from the region's first byte to its last, in one block. */
    size_t first, last;
    if (__builtin_mul_overflow(z, s->rows, &first) || __builtin_add_overflow(first, y, &first) ||
        __builtin_mul_overflow(first, s->pitch, &first) ||
        __builtin_add_overflow(first, x, &first) ||
        __builtin_mul_overflow(d - 1, s->rows, &last) ||
        __builtin_add_overflow(last, h - 1, &last) ||
        __builtin_mul_overflow(last, s->pitch, &last) || __builtin_add_overflow(last, w, &last) ||
        __builtin_add_overflow(s->base, first, &first))
        return CUDA_ERROR_INVALID_VALUE;
    return fake_memory_range_locked(first, last, s->sd, what, &s->mem, NULL);
}

static uintptr_t row_at(const copy_side *s, size_t row, size_t slice)
{
    return s->base + ((s->z + slice) * s->rows + s->y + row) * s->pitch + s->x;
}

/* Queues (or runs, for a synchronous copy: sync_ctx) the region's copies. */
static CUresult copy_region_locked(struct CUstream_st *s, struct CUctx_st *sync_ctx,
                                   const copy_side *dst, const copy_side *src, size_t w,
                                   size_t h, size_t d)
{
    if (w == 0 || h == 0 || d == 0)
        return CUDA_SUCCESS;
    bool rows_flat = (h == 1 || (dst->pitch == w && src->pitch == w));
    bool slices_flat = rows_flat && (d == 1 || (dst->rows == h && src->rows == h));
    size_t per_op = slices_flat ? w * h * d : rows_flat ? w * h : w;
    size_t ops_rows = rows_flat ? 1 : h, ops_slices = slices_flat ? 1 : d;
    for (size_t k = 0; k < ops_slices; k++) {
        for (size_t i = 0; i < ops_rows; i++) {
            fake_op op = {.kind = FAKE_OP_COPY,
                          .u.copy = {.dst = row_at(dst, i, k),
                                     .src = row_at(src, i, k),
                                     .n = per_op,
                                     .dst_mem = dst->mem,
                                     .src_mem = src->mem}};
            CUresult r = s ? fake_stream_enqueue_locked(s, &op, NULL, 0)
                           : fake_stream_submit_sync_locked(sync_ctx, &op);
            if (r != CUDA_SUCCESS)
                return r;
        }
    }
    return CUDA_SUCCESS;
}

/* The context a copy is checked in: the current one (synchronous), or the
 * stream's. */
static CUresult copy_target_locked(bool async, CUstream hs, struct CUstream_st **s,
                                   struct CUctx_st **c)
{
    if (!async)
        return fake_current_context_locked(c);
    CUresult r = fake_stream_arg_locked(hs, s);
    if (r == CUDA_SUCCESS)
        *c = (*s)->ctx;
    return r;
}

static CUresult copy_2d_locked(const CUDA_MEMCPY2D *p, bool async, CUstream hs)
{
    struct CUstream_st *s = NULL;
    struct CUctx_st *c = NULL;
    CUresult r = copy_target_locked(async, hs, &s, &c);
    if (r != CUDA_SUCCESS)
        return r;
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    size_t w = p->WidthInBytes, h = p->Height;
    if (w == 0 || h == 0)
        return CUDA_SUCCESS;
    copy_side dst, src;
    r = side_locked(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcArray, p->srcXInBytes,
                    p->srcY, 0, p->srcPitch, h + p->srcY, w, h, 1, "2D copy source", c, &src);
    if (r == CUDA_SUCCESS)
        r = side_locked(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstArray,
                        p->dstXInBytes, p->dstY, 0, p->dstPitch, h + p->dstY, w, h, 1,
                        "2D copy destination", c, &dst);
    if (r != CUDA_SUCCESS)
        return r;
    return copy_region_locked(s, c, &dst, &src, w, h, 1);
}

/* The two sides of a 3D copy of a region that is not empty. */
static CUresult sides_3d_locked(const CUDA_MEMCPY3D *p, const struct CUctx_st *c,
                                copy_side *dst, copy_side *src)
{
    size_t w = p->WidthInBytes, h = p->Height, d = p->Depth;
    /* A height of 0 is allowed where the depth is 1. */
    CUresult r = side_locked(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcArray,
                             p->srcXInBytes, p->srcY, p->srcZ, p->srcPitch,
                             p->srcHeight ? p->srcHeight : h + p->srcY, w, h, d,
                             "3D copy source", c, src);
    if (r == CUDA_SUCCESS)
        r = side_locked(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstArray,
                        p->dstXInBytes, p->dstY, p->dstZ, p->dstPitch,
                        p->dstHeight ? p->dstHeight : h + p->dstY, w, h, d,
                        "3D copy destination", c, dst);
    if (r != CUDA_SUCCESS)
        return r;
    if ((p->srcHeight == 0 && d > 1 && p->srcMemoryType != CU_MEMORYTYPE_ARRAY) ||
        (p->dstHeight == 0 && d > 1 && p->dstMemoryType != CU_MEMORYTYPE_ARRAY))
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

CUresult fake_memory_copy_3d_payload_locked(const CUDA_MEMCPY3D *p, const struct CUctx_st *c,
                                            union fake_op_payload *u)
{
    if (!p || p->reserved0 || p->reserved1 || p->srcLOD || p->dstLOD)
        return CUDA_ERROR_INVALID_VALUE;
    size_t w = p->WidthInBytes, h = p->Height, d = p->Depth;
    if (w == 0 || h == 0 || d == 0)
        return CUDA_ERROR_INVALID_VALUE;
    copy_side dst, src;
    CUresult r = sides_3d_locked(p, c, &dst, &src);
    if (r != CUDA_SUCCESS)
        return r;
    memset(u, 0, sizeof *u);
    u->copy.dst = row_at(&dst, 0, 0);
    u->copy.src = row_at(&src, 0, 0);
    u->copy.n = w;
    u->copy.dst_mem = dst.mem;
    u->copy.src_mem = src.mem;
    u->copy.rows = h;
    u->copy.slices = d;
    u->copy.dst_pitch = dst.pitch;
    u->copy.src_pitch = src.pitch;
    u->copy.dst_slice = dst.pitch * dst.rows;
    u->copy.src_slice = src.pitch * src.rows;
    return CUDA_SUCCESS;
}

static CUresult copy_3d_locked(const CUDA_MEMCPY3D *p, bool async, CUstream hs)
{
    struct CUstream_st *s = NULL;
    struct CUctx_st *c = NULL;
    CUresult r = copy_target_locked(async, hs, &s, &c);
    if (r != CUDA_SUCCESS)
        return r;
    if (!p || p->reserved0 || p->reserved1 || p->srcLOD || p->dstLOD)
        return CUDA_ERROR_INVALID_VALUE;
    size_t w = p->WidthInBytes, h = p->Height, d = p->Depth;
    if (w == 0 || h == 0 || d == 0)
        return CUDA_SUCCESS;
    copy_side dst, src;
    r = sides_3d_locked(p, c, &dst, &src);
    if (r != CUDA_SUCCESS)
        return r;
    return copy_region_locked(s, c, &dst, &src, w, h, d);
}

CUresult CUDAAPI fake_cuMemcpy2D(const CUDA_MEMCPY2D *pCopy)
{
    FAKE_ENTER(cuMemcpy2D);
    return fake_leave(copy_2d_locked(pCopy, false, NULL));
}

CUresult CUDAAPI fake_cuMemcpy2DAsync(const CUDA_MEMCPY2D *pCopy, CUstream hStream)
{
    FAKE_ENTER(cuMemcpy2DAsync);
    return fake_leave(copy_2d_locked(pCopy, true, hStream));
}

CUresult CUDAAPI fake_cuMemcpy3D(const CUDA_MEMCPY3D *pCopy)
{
    FAKE_ENTER(cuMemcpy3D);
    return fake_leave(copy_3d_locked(pCopy, false, NULL));
}

CUresult CUDAAPI fake_cuMemcpy3DAsync(const CUDA_MEMCPY3D *pCopy, CUstream hStream)
{
    FAKE_ENTER(cuMemcpy3DAsync);
    return fake_leave(copy_3d_locked(pCopy, true, hStream));
}
