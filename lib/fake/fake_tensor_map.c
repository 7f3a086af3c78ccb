/* TMA tensor maps: cuTensorMapEncodeTiled, cuTensorMapEncodeIm2col,
 * cuTensorMapReplaceAddress, and the decoding that host twins call
 * (cus_fake_tensor_map_decode). A tensor map is a value, not a handle: the
 * fake keeps no record of it, as the driver keeps none.
 *
 * The rules are the documented ones (cuda.h of CUDA 13.0), in
 * lib/tensor_map_rules.h, which cuscope checks too; a broken one is
 * CUDA_ERROR_INVALID_VALUE, the one error the documentation gives for them,
 * and so is a NULL tensorMap, one not 64-byte aligned, or NULL arrays.
 * The three calls need a current context, though none is named in their
 * arguments (the H200's table, test/rules: CUDA_ERROR_INVALID_CONTEXT with
 * none, a poisoned one's error); the fake checks it before the arguments.
 * Unsure, and so not modelled: whether the driver checks that the address
 * lies in an allocation (the fake does not), and the exact meaning of the
 * im2col corners' "non-zero area" (the fake takes dim + upper - lower > 0 per
 * spatial dimension, CUTLASS's output size at stride 1).
 *
 * The fake's layout of the 128 bytes, sixteen little-endian 64-bit words:
 *   q[0]   bits 0-7 rank, 8-15 kind (1 tiled, 2 im2col), 16-23 layout
 *          version (1), 32-63 the magic 0x50414d54 ("TMAP")
 *   q[1]   the global address
 *   q[2]   bits 0-7 data type, 8-15 interleave, 16-23 swizzle, 24-31 L2
 *          promotion, 32-39 OOB fill
 *   q[3..7]   globalDim[0..4] (zeros past the rank)
 *   q[8..11]  globalStrides[0..3]
 *   q[12]  boxDim[0..3], 16 bits each
 *   q[13]  bits 0-15 boxDim[4], 16-35 elementStrides[0..4] (4 bits each),
 *          36-47 channelsPerPixel, 48-63 pixelsPerColumn
 *   q[14]  pixelBoxLowerCorner[0..2], 16-bit two's complement each
 *   q[15]  pixelBoxUpperCorner[0..2], the same */
#include <string.h>

#include "../tensor_map_rules.h"
#include "fake_context.h"
#include "fake_core.h"

#define TMAP_MAGIC 0x50414d54ull
#define TMAP_VERSION 1ull

static void encode_map(CUtensorMap *out, const tm_rules_args *a)
{
    cuuint64_t q[16];
    memset(q, 0, sizeof q);
    q[0] = (TMAP_MAGIC << 32) | (TMAP_VERSION << 16) | ((a->im2col ? 2ull : 1ull) << 8) | a->rank;
    q[1] = a->address;
    q[2] = (cuuint64_t)a->type | (cuuint64_t)a->interleave << 8 | (cuuint64_t)a->swizzle << 16 |
           (cuuint64_t)a->l2 << 24 | (cuuint64_t)a->oob << 32;
    for (cuuint32_t i = 0; i < a->rank; i++) {
        q[3 + i] = a->dim[i];
        if (i + 1 < a->rank)
            q[8 + i] = a->strides[i];
        q[13] |= (cuuint64_t)(a->elem_strides[i] & 0xf) << (16 + 4 * i);
        if (!a->im2col) {
            if (i < 4)
                q[12] |= (cuuint64_t)a->box[i] << (16 * i);
            else
                q[13] |= a->box[i];
        }
    }
    if (a->im2col) {
        q[13] |= (cuuint64_t)(a->channels & 0xfff) << 36 | (cuuint64_t)(a->pixels & 0xffff) << 48;
        for (cuuint32_t i = 0; i + 2 < a->rank; i++) {
            q[14] |= (cuuint64_t)(uint16_t)a->lower[i] << (16 * i);
            q[15] |= (cuuint64_t)(uint16_t)a->upper[i] << (16 * i);
        }
    }
    memcpy(out->opaque, q, sizeof q);
}

static bool map_aligned(const CUtensorMap *m)
{
    return m && ((uintptr_t)m % 64) == 0;
}

/* Checks and encodes; the lock is held. */
static CUresult encode_locked(CUtensorMap *map, tm_rules_args *a)
{
    struct CUctx_st *c = NULL;
    CUresult r = fake_current_context_locked(&c);
    if (r != CUDA_SUCCESS)
        return r;
    if (!map_aligned(map) || !a->dim || (a->rank > 1 && !a->strides) || !a->elem_strides ||
        (!a->im2col && !a->box) || (a->im2col && (!a->lower || !a->upper)))
        return CUDA_ERROR_INVALID_VALUE;
    char msg[256];
    if (tm_rules_check(a, msg, sizeof msg))
        return CUDA_ERROR_INVALID_VALUE;
    encode_map(map, a);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuTensorMapEncodeTiled(CUtensorMap *tensorMap,
                                             CUtensorMapDataType tensorDataType,
                                             cuuint32_t tensorRank, void *globalAddress,
                                             const cuuint64_t *globalDim,
                                             const cuuint64_t *globalStrides,
                                             const cuuint32_t *boxDim,
                                             const cuuint32_t *elementStrides,
                                             CUtensorMapInterleave interleave,
                                             CUtensorMapSwizzle swizzle,
                                             CUtensorMapL2promotion l2Promotion,
                                             CUtensorMapFloatOOBfill oobFill)
{
    FAKE_ENTER(cuTensorMapEncodeTiled);
    tm_rules_args a = {
        .im2col = false,
        .type = tensorDataType,
        .rank = tensorRank,
        .address = (uint64_t)(uintptr_t)globalAddress,
        .dim = globalDim,
        .strides = globalStrides,
        .box = boxDim,
        .elem_strides = elementStrides,
        .interleave = interleave,
        .swizzle = swizzle,
        .l2 = l2Promotion,
        .oob = oobFill,
    };
    return fake_leave(encode_locked(tensorMap, &a));
}

CUresult CUDAAPI fake_cuTensorMapEncodeIm2col(
    CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType, cuuint32_t tensorRank,
    void *globalAddress, const cuuint64_t *globalDim, const cuuint64_t *globalStrides,
    const int *pixelBoxLowerCorner, const int *pixelBoxUpperCorner, cuuint32_t channelsPerPixel,
    cuuint32_t pixelsPerColumn, const cuuint32_t *elementStrides, CUtensorMapInterleave interleave,
    CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion, CUtensorMapFloatOOBfill oobFill)
{
    FAKE_ENTER(cuTensorMapEncodeIm2col);
    tm_rules_args a = {
        .im2col = true,
        .type = tensorDataType,
        .rank = tensorRank,
        .address = (uint64_t)(uintptr_t)globalAddress,
        .dim = globalDim,
        .strides = globalStrides,
        .elem_strides = elementStrides,
        .lower = pixelBoxLowerCorner,
        .upper = pixelBoxUpperCorner,
        .channels = channelsPerPixel,
        .pixels = pixelsPerColumn,
        .interleave = interleave,
        .swizzle = swizzle,
        .l2 = l2Promotion,
        .oob = oobFill,
    };
    return fake_leave(encode_locked(tensorMap, &a));
}

CUS_API bool cus_fake_tensor_map_decode(const CUtensorMap *map, cus_fake_tensor_map *out)
{
    if (!map || !out)
        return false;
    cuuint64_t q[16];
    memcpy(q, map->opaque, sizeof q);
    unsigned int kind = (q[0] >> 8) & 0xff, rank = q[0] & 0xff;
    if ((q[0] >> 32) != TMAP_MAGIC || ((q[0] >> 16) & 0xff) != TMAP_VERSION ||
        (kind != 1 && kind != 2) || rank < 1 || rank > 5)
        return false;
    cus_fake_tensor_map d;
    memset(&d, 0, sizeof d);
    d.im2col = kind == 2;
    d.rank = rank;
    d.address = (CUdeviceptr)q[1];
    d.data_type = (CUtensorMapDataType)(q[2] & 0xff);
    d.interleave = (CUtensorMapInterleave)((q[2] >> 8) & 0xff);
    d.swizzle = (CUtensorMapSwizzle)((q[2] >> 16) & 0xff);
    d.l2_promotion = (CUtensorMapL2promotion)((q[2] >> 24) & 0xff);
    d.oob_fill = (CUtensorMapFloatOOBfill)((q[2] >> 32) & 0xff);
    for (unsigned int i = 0; i < rank; i++) {
        d.global_dim[i] = q[3 + i];
        if (i + 1 < rank)
            d.global_strides[i] = q[8 + i];
        d.element_strides[i] = (q[13] >> (16 + 4 * i)) & 0xf;
        if (!d.im2col)
            d.box_dim[i] = i < 4 ? (q[12] >> (16 * i)) & 0xffff : q[13] & 0xffff;
    }
    if (d.im2col) {
        d.channels_per_pixel = (q[13] >> 36) & 0xfff;
        d.pixels_per_column = (q[13] >> 48) & 0xffff;
        for (unsigned int i = 0; i + 2 < rank; i++) {
            d.pixel_box_lower[i] = (int16_t)((q[14] >> (16 * i)) & 0xffff);
            d.pixel_box_upper[i] = (int16_t)((q[15] >> (16 * i)) & 0xffff);
        }
    }
    *out = d;
    return true;
}

/* The new address must keep the alignment the map's encoding needs (16
 * bytes; 32 with 32-byte interleave or a 16U*_ALIGN16B type). A map the
 * fake did not encode is CUDA_ERROR_INVALID_VALUE (the driver's answer for
 * garbage is unknown; it cannot read another encoder's maps either). */
CUresult CUDAAPI fake_cuTensorMapReplaceAddress(CUtensorMap *tensorMap, void *globalAddress)
{
    FAKE_ENTER(cuTensorMapReplaceAddress);
    struct CUctx_st *c = NULL;
    CUresult r = fake_current_context_locked(&c);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    cus_fake_tensor_map d;
    if (!map_aligned(tensorMap) || !cus_fake_tensor_map_decode(tensorMap, &d))
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    uint64_t align = d.interleave == CU_TENSOR_MAP_INTERLEAVE_32B || tm_rules_packed16(d.data_type)
                         ? 32
                         : 16;
    if ((uintptr_t)globalAddress % align)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    tensorMap->opaque[1] = (cuuint64_t)(uintptr_t)globalAddress;
    return fake_leave(CUDA_SUCCESS);
}
