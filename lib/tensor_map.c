/* TMA tensor maps (cuscope/tensor_map.h).
 *
 * A map is its encoded CUtensorMap, the parameters it was made with, and a
 * reference to its buffer. It never changes after it is made (a rebind makes
 * another), so that a kernel node that captured its descriptor by value and
 * the map the graph keeps describe the same memory. Encoding needs no
 * context (the driver's entry points take none and make no switch); the
 * buffer's context is named only to record a failure and to fail fast when
 * it is poisoned. Freeing a map makes no driver call. */
#include <stdlib.h>
#include <string.h>

#include "cuscope/tensor_map.h"
#include "internal.h"
#include "tensor_map_rules.h"

struct cus_tensor_map {
    cus_refcount refs; /* first: the launch path reads it through the object */
    cus_buffer *buf;   /* a reference */
    void *block;       /* what malloc returned: the record is aligned inside it */
    bool im2col;
    cus_tensor_map_params params; /* element_strides filled in (no zeros) */
    CUtensorMap map;              /* 128-byte aligned, as the type is */
};

/* A record at a 128-byte boundary inside a plain malloc block (not
 * aligned_alloc, whose blocks glibc's per-thread cache does not recycle:
 * making a map costs then what encoding it costs). Uninitialized. */
static cus_tensor_map *record_new(void)
{
    void *block = cus_malloc_(sizeof(cus_tensor_map) + _Alignof(cus_tensor_map) - 1);
    if (!block)
        return NULL;
    cus_tensor_map *m = (cus_tensor_map *)(((uintptr_t)block + _Alignof(cus_tensor_map) - 1) &
                                           ~(uintptr_t)(_Alignof(cus_tensor_map) - 1));
    m->block = block;
    return m;
}
_Static_assert(offsetof(cus_tensor_map, refs) == 0, "the launch path reads the count first");

static void tensor_map_destroy(cus_tensor_map *m)
{
    cus_buffer_unref(m->buf);
    free(m->block);
}

CUS_DEFINE_REF_UNREF(cus_tensor_map, tensor_map_destroy)
CUS_HIDDEN cus_keep_item_ cus_capture_item_tensor_map_(cus_tensor_map *map);
CUS_HIDDEN cus_status cus_capture_keep_tensor_map_(cus_stream *stream, cus_tensor_map *map,
                                                   const char *function);

CUS_API unsigned int cus_tensor_map_element_bits(CUtensorMapDataType type)
{
    return tm_rules_bits(type);
}

/* The byte just past the tensor's last element, relative to its address
 * (false on overflow: the extent passes any buffer). An interleaved tensor's
 * innermost dimension counts as one chunk (16 or 32 bytes), which its
 * strides step over. */
static bool tensor_extent(const cus_tensor_map_params *p, uint64_t *end)
{
    uint64_t bits = tm_rules_bits(p->data_type);
    uint64_t e;
    if (p->interleave == CU_TENSOR_MAP_INTERLEAVE_NONE)
        e = (p->global_dim[0] * bits + 7) / 8; /* dims <= 2^32, bits <= 64: no overflow */
    else
        e = p->interleave == CU_TENSOR_MAP_INTERLEAVE_32B ? 32 : 16;
    for (unsigned int i = 1; i < p->rank; i++) {
        uint64_t step;
        if (__builtin_mul_overflow(p->global_dim[i] - 1, p->global_strides[i - 1], &step) ||
            __builtin_add_overflow(e, step, &e))
            return false;
    }
    *end = e;
    return true;
}

/* The checks that depend on where the tensor lies: the buffer's extent (the
 * alignment is the rules', with the address). */
static cus_status check_extent(const cus_tensor_map_params *p, const cus_buffer *buf,
                               const char *function)
{
    size_t size = cus_buffer_size(buf);
    uint64_t end = 0;
    if (!tensor_extent(p, &end))
        return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL,
                         "tensor map: the tensor's extent passes the buffer's end (its size "
                         "overflows 64 bits; buffer of %zu bytes)", size);
    if (p->offset > size || end > size - p->offset)
        return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL,
                         "tensor map: the tensor's extent passes the buffer's end (offset %zu "
                         "+ %llu bytes > buffer of %zu)",
                         p->offset, (unsigned long long)end, size);
    return CUS_SUCCESS;
}

static tm_rules_args rules_args(const cus_tensor_map_params *p, bool im2col, uint64_t address)
{
    return (tm_rules_args){
        .im2col = im2col,
        .type = p->data_type,
        .rank = p->rank,
        .address = address,
        .dim = p->global_dim,
        .strides = p->global_strides,
        .box = p->box_dim,
        .elem_strides = p->element_strides,
        .lower = p->pixel_box_lower,
        .upper = p->pixel_box_upper,
        .channels = p->channels_per_pixel,
        .pixels = p->pixels_per_column,
        .interleave = p->interleave,
        .swizzle = p->swizzle,
        .l2 = p->l2_promotion,
        .oob = p->oob_fill,
    };
}

static CUresult encode(const cus_tensor_map_params *p, bool im2col, CUdeviceptr address,
                       CUtensorMap *out)
{
    void *a = (void *)(uintptr_t)address;
    if (im2col)
        return cus_drv_.cuTensorMapEncodeIm2col_(
            out, p->data_type, p->rank, a, p->global_dim, p->global_strides, p->pixel_box_lower,
            p->pixel_box_upper, p->channels_per_pixel, p->pixels_per_column, p->element_strides,
            p->interleave, p->swizzle, p->l2_promotion, p->oob_fill);
    return cus_drv_.cuTensorMapEncodeTiled_(out, p->data_type, p->rank, a, p->global_dim,
                                            p->global_strides, p->box_dim, p->element_strides,
                                            p->interleave, p->swizzle, p->l2_promotion,
                                            p->oob_fill);
}

static cus_status tensor_map_new(cus_buffer *buf, const cus_tensor_map_params *params,
                                 bool im2col, cus_tensor_map **out, const char *function)
{
    const char *entry = im2col ? "cuTensorMapEncodeIm2col" : "cuTensorMapEncodeTiled";
    if (CUS_UNLIKELY(im2col ? !cus_drv_.cuTensorMapEncodeIm2col_
                            : !cus_drv_.cuTensorMapEncodeTiled_))
        return cus_fail_(CUS_ERROR_NOT_SUPPORTED, function, entry,
                         "the driver has no %s (needs 12.0)", entry);
    cus_context *ctx = cus_buffer_context(buf);
    if (CUS_UNLIKELY(atomic_load_explicit(&ctx->poison, memory_order_relaxed)))
        return cus_context_poisoned_fail_(ctx, function);

    cus_tensor_map_params p = *params;
    if (p.rank >= 1 && p.rank <= CUS_TENSOR_MAP_MAX_RANK) {
        bool all_zero = true;
        for (unsigned int i = 0; i < p.rank; i++)
            all_zero &= p.element_strides[i] == 0;
        if (all_zero)
            for (unsigned int i = 0; i < p.rank; i++)
                p.element_strides[i] = 1;
    }
    CUdeviceptr address = cus_buffer_ptr(buf) + p.offset;
    char msg[256];
    tm_rules_args ra = rules_args(&p, im2col, address);
    if (CUS_UNLIKELY(tm_rules_check(&ra, msg, sizeof msg)))
        return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL, "%s", msg);
    CUS_TRY(check_extent(&p, buf, function));

    cus_tensor_map *m = record_new();
    if (!m)
        return cus_fail_(CUS_ERROR_OUT_OF_HOST_MEMORY, function, NULL, "allocating a tensor map");
    /* With the buffer's context current: the H200 refuses an encoding
     * without one (CUDA_ERROR_INVALID_CONTEXT). */
    cus_status st = CUS_CALL_IN_AS(function, ctx, entry, encode(&p, im2col, address, &m->map));
    if (CUS_UNLIKELY(st)) {
        free(m->block);
        return st;
    }
    cus_refcount_init_(&m->refs);
    m->buf = cus_buffer_ref(buf);
    m->im2col = im2col;
    m->params = p;
    *out = m;
    return CUS_SUCCESS;
}

CUS_API cus_status cus_tensor_map_create_tiled(cus_buffer *buf,
                                               const cus_tensor_map_params *params,
                                               cus_tensor_map **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(buf && params && out);
    return tensor_map_new(buf, params, false, out, __func__);
}

CUS_API cus_status cus_tensor_map_create_im2col(cus_buffer *buf,
                                                const cus_tensor_map_params *params,
                                                cus_tensor_map **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(buf && params && out);
    return tensor_map_new(buf, params, true, out, __func__);
}

CUS_API cus_status cus_tensor_map_rebind(const cus_tensor_map *map, cus_buffer *buf,
                                         size_t offset, cus_tensor_map **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(map && buf && out);
    if (CUS_UNLIKELY(!cus_drv_.cuTensorMapReplaceAddress_))
        return CUS_FAIL(CUS_ERROR_NOT_SUPPORTED, "cuTensorMapReplaceAddress",
                        "the driver has no cuTensorMapReplaceAddress (needs 12.0)");
    cus_context *ctx = cus_buffer_context(buf);
    CUS_CHECK_POISON(ctx);
    cus_tensor_map_params p = map->params;
    p.offset = offset;
    CUdeviceptr address = cus_buffer_ptr(buf) + offset;
    char msg[256];
    tm_rules_args ra = rules_args(&p, map->im2col, address);
    if (CUS_UNLIKELY(tm_rules_check(&ra, msg, sizeof msg)))
        return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL, "%s", msg);
    CUS_TRY(check_extent(&p, buf, __func__));

    cus_tensor_map *m = record_new();
    if (!m)
        return CUS_FAIL(CUS_ERROR_OUT_OF_HOST_MEMORY, NULL, "allocating a tensor map");
    m->map = map->map;
    cus_status st = CUS_CALL_IN(ctx, "cuTensorMapReplaceAddress",
                                cus_drv_.cuTensorMapReplaceAddress_(&m->map,
                                                                    (void *)(uintptr_t)address));
    if (CUS_UNLIKELY(st)) {
        free(m->block);
        return st;
    }
    cus_refcount_init_(&m->refs);
    m->buf = cus_buffer_ref(buf);
    m->im2col = map->im2col;
    m->params = p;
    *out = m;
    return CUS_SUCCESS;
}

CUS_API const CUtensorMap *cus_tensor_map_get(const cus_tensor_map *map)
{
    return map ? &map->map : NULL;
}

CUS_API cus_buffer *cus_tensor_map_buffer(const cus_tensor_map *map)
{
    return map ? map->buf : NULL;
}

CUS_API const cus_tensor_map_params *cus_tensor_map_params_of(const cus_tensor_map *map)
{
    return map ? &map->params : NULL;
}

CUS_DEFINE_CAPTURE_KEEP(tensor_map, cus_tensor_map)

static cus_keep_item_ tensor_map_item(void *map)
{
    return cus_capture_item_tensor_map_(map);
}

/* A tensor map named by a cus_launch argument (cuscope/launch.h): its
 * descriptor by value, and while a capture is open a note for the launch to
 * keep it (and so its buffer). A NULL map is all zeros, which the kernel's
 * TMA instructions fault on, as a NULL pointer would. */
CUS_API CUtensorMap cus_tensor_map_arg_(const cus_tensor_map *map)
{
    if (CUS_UNLIKELY(cus_captures_open_()) && map)
        cus_launch_note_kept_((void *)map, tensor_map_item);
    if (!map) {
        CUtensorMap zero;
        memset(&zero, 0, sizeof zero);
        return zero;
    }
    return map->map;
}
