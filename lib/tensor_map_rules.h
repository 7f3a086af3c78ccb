/* The documented rules of cuTensorMapEncodeTiled and cuTensorMapEncodeIm2col
 * (cuda.h of CUDA 13.0, the Driver API reference), written once: cuscope
 * checks them before the driver (lib/tensor_map.c), and the fake refuses
 * what breaks them with CUDA_ERROR_INVALID_VALUE, as the driver documents
 * (lib/fake/fake_tensor_map.c). Header-only, no state, no cuscope object.
 *
 * tm_rules_check() returns NULL when every rule holds, else writes a message
 * naming the rule and its values to msg and returns it. */
#ifndef CUSCOPE_TENSOR_MAP_RULES_H
#define CUSCOPE_TENSOR_MAP_RULES_H

#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct tm_rules_args {
    bool im2col;
    CUtensorMapDataType type;
    cuuint32_t rank;
    uint64_t address;
    const cuuint64_t *dim;     /* rank */
    const cuuint64_t *strides; /* rank - 1 */
    const cuuint32_t *box;     /* rank; tiled */
    const cuuint32_t *elem_strides; /* rank */
    const int *lower, *upper;  /* rank - 2; im2col */
    cuuint32_t channels, pixels; /* im2col */
    CUtensorMapInterleave interleave;
    CUtensorMapSwizzle swizzle;
    CUtensorMapL2promotion l2;
    CUtensorMapFloatOOBfill oob;
} tm_rules_args;

/* Bits per element in memory (the packed types with their gaps); 0: none. */
static inline unsigned int tm_rules_bits(CUtensorMapDataType t)
{
    switch (t) {
    case CU_TENSOR_MAP_DATA_TYPE_UINT8:
        return 8;
    case CU_TENSOR_MAP_DATA_TYPE_UINT16:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT16:
    case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16:
        return 16;
    case CU_TENSOR_MAP_DATA_TYPE_UINT32:
    case CU_TENSOR_MAP_DATA_TYPE_INT32:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ:
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32:
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ:
        return 32;
    case CU_TENSOR_MAP_DATA_TYPE_UINT64:
    case CU_TENSOR_MAP_DATA_TYPE_INT64:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT64:
        return 64;
    case CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B:
        return 4;
    case CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B:
    case CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B:
        return 8;
    }
    return 0;
}

static inline bool tm_rules_is_float(CUtensorMapDataType t)
{
    return t == CU_TENSOR_MAP_DATA_TYPE_FLOAT16 || t == CU_TENSOR_MAP_DATA_TYPE_FLOAT32 ||
           t == CU_TENSOR_MAP_DATA_TYPE_FLOAT64 || t == CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 ||
           t == CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ || t == CU_TENSOR_MAP_DATA_TYPE_TFLOAT32 ||
           t == CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ;
}

/* The packed types whose values sit in 16-byte chunks. */
static inline bool tm_rules_packed16(CUtensorMapDataType t)
{
    return t == CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B || t == CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B;
}

/* The swizzle's span in bytes; 0 for none. */
static inline unsigned int tm_rules_swizzle_span(CUtensorMapSwizzle s)
{
    switch (s) {
    case CU_TENSOR_MAP_SWIZZLE_NONE:
        return 0;
    case CU_TENSOR_MAP_SWIZZLE_32B:
        return 32;
    case CU_TENSOR_MAP_SWIZZLE_64B:
        return 64;
    default:
        return 128;
    }
}

#define TM_RULE_(...)                                                          \
    do {                                                                       \
        snprintf(msg, cap, "tensor map: " __VA_ARGS__);                        \
        return msg;                                                            \
    } while (0)

static inline const char *tm_rules_check(const tm_rules_args *a, char *msg, size_t cap)
{
    unsigned int bits = tm_rules_bits(a->type);
    if (!bits)
        TM_RULE_("data type %d is not a CUtensorMapDataType", (int)a->type);
    if ((unsigned)a->interleave > CU_TENSOR_MAP_INTERLEAVE_32B)
        TM_RULE_("interleave %d is not a CUtensorMapInterleave", (int)a->interleave);
    if ((unsigned)a->swizzle > CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B)
        TM_RULE_("swizzle %d is not a CUtensorMapSwizzle", (int)a->swizzle);
    if ((unsigned)a->l2 > CU_TENSOR_MAP_L2_PROMOTION_L2_256B)
        TM_RULE_("L2 promotion %d is not a CUtensorMapL2promotion", (int)a->l2);
    if ((unsigned)a->oob > CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA)
        TM_RULE_("OOB fill %d is not a CUtensorMapFloatOOBfill", (int)a->oob);

    cuuint32_t rmin = a->im2col ? 3 : 1;
    if (a->rank < rmin || a->rank > 5)
        TM_RULE_("rank %u is outside 1..5 (3..5 for im2col)", a->rank);
    if (a->interleave != CU_TENSOR_MAP_INTERLEAVE_NONE && a->rank < 3)
        TM_RULE_("rank %u is below 3, which interleave needs", a->rank);

    bool wide = a->interleave == CU_TENSOR_MAP_INTERLEAVE_32B || tm_rules_packed16(a->type);
    uint64_t align = wide ? 32 : 16;
    if (a->address % align)
        TM_RULE_("the global address 0x%llx is not %llu-byte aligned (16, 32 with 32-byte "
                 "interleave or a 16U*_ALIGN16B type)",
                 (unsigned long long)a->address, (unsigned long long)align);

    for (cuuint32_t i = 0; i < a->rank; i++)
        if (a->dim[i] == 0 || a->dim[i] > (1ull << 32))
            TM_RULE_("globalDim[%u] = %llu is outside 1..2^32", i,
                     (unsigned long long)a->dim[i]);
    if (tm_rules_packed16(a->type) && a->dim[0] % 128)
        TM_RULE_("globalDim[0] = %llu is not a multiple of 128, which a 16U*_ALIGN16B type "
                 "needs", (unsigned long long)a->dim[0]);
    if (a->type == CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B && a->dim[0] % 2)
        TM_RULE_("globalDim[0] = %llu is not a multiple of 2, which 16U4_ALIGN8B needs",
                 (unsigned long long)a->dim[0]);

    for (cuuint32_t i = 0; i + 1 < a->rank; i++) {
        if (a->strides[i] % align)
            TM_RULE_("globalStrides[%u] = %llu is not a multiple of %llu", i,
                     (unsigned long long)a->strides[i], (unsigned long long)align);
        if (a->strides[i] >= (1ull << 40))
            TM_RULE_("globalStrides[%u] = %llu is not below 2^40", i,
                     (unsigned long long)a->strides[i]);
    }

    /* The inner dimension of what one request reads, in bytes (bits kept for
     * the half-byte type). */
    uint64_t inner_bits;
    if (!a->im2col) {
        for (cuuint32_t i = 0; i < a->rank; i++)
            if (a->box[i] == 0 || a->box[i] > 256)
                TM_RULE_("boxDim[%u] = %u is outside 1..256", i, a->box[i]);
        inner_bits = (uint64_t)a->box[0] * bits;
        if (a->interleave == CU_TENSOR_MAP_INTERLEAVE_NONE && inner_bits % 128)
            TM_RULE_("boxDim[0] * element size = %llu%s bytes is not a multiple of 16",
                     (unsigned long long)(inner_bits / 8), inner_bits % 8 ? ".5" : "");
        if (tm_rules_packed16(a->type) && a->box[0] != 128)
            TM_RULE_("boxDim[0] = %u is not 128, which a 16U*_ALIGN16B type needs", a->box[0]);
    } else {
        cuuint32_t n = a->rank - 2;
        int lim = a->rank == 3 ? 32768 : a->rank == 4 ? 128 : 16;
        for (cuuint32_t i = 0; i < n; i++) {
            if (a->lower[i] < -lim || a->lower[i] >= lim)
                TM_RULE_("pixelBoxLowerCorner[%u] = %d is outside %d..%d (rank %u)", i,
                         a->lower[i], -lim, lim - 1, a->rank);
            if (a->upper[i] < -lim || a->upper[i] >= lim)
                TM_RULE_("pixelBoxUpperCorner[%u] = %d is outside %d..%d (rank %u)", i,
                         a->upper[i], -lim, lim - 1, a->rank);
            /* The box along a spatial dimension spans dim + upper - lower
             * pixels (CUTLASS: the output size at stride 1). */
            if ((int64_t)a->dim[i + 1] + a->upper[i] - a->lower[i] <= 0)
                TM_RULE_("the pixel box is empty along dimension %u: globalDim[%u] = %llu, "
                         "corners %d and %d",
                         i + 1, i + 1, (unsigned long long)a->dim[i + 1], a->lower[i],
                         a->upper[i]);
        }
        if (a->channels == 0 || a->channels > 256)
            TM_RULE_("channelsPerPixel = %u is outside 1..256", a->channels);
        if (tm_rules_packed16(a->type) && a->channels != 128)
            TM_RULE_("channelsPerPixel = %u is not 128, which a 16U*_ALIGN16B type needs",
                     a->channels);
        if (a->pixels == 0 || a->pixels > 1024)
            TM_RULE_("pixelsPerColumn = %u is outside 1..1024", a->pixels);
        inner_bits = (uint64_t)a->channels * bits;
    }

    for (cuuint32_t i = 0; i < a->rank; i++)
        if (a->elem_strides[i] == 0 || a->elem_strides[i] > 8)
            TM_RULE_("elementStrides[%u] = %u is outside 1..8", i, a->elem_strides[i]);

    if (a->interleave == CU_TENSOR_MAP_INTERLEAVE_32B && a->swizzle != CU_TENSOR_MAP_SWIZZLE_32B)
        TM_RULE_("32-byte interleave needs the 32-byte swizzle, not swizzle %d",
                 (int)a->swizzle);
    unsigned int span = tm_rules_swizzle_span(a->swizzle);
    if (a->interleave == CU_TENSOR_MAP_INTERLEAVE_NONE && span && inner_bits > span * 8ull)
        TM_RULE_("%s * element size = %llu bytes exceeds the %u-byte swizzle span",
                 a->im2col ? "channelsPerPixel" : "boxDim[0]",
                 (unsigned long long)(inner_bits / 8), span);
    if (a->type == CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B &&
        a->interleave != CU_TENSOR_MAP_INTERLEAVE_NONE)
        TM_RULE_("16U6_ALIGN16B needs interleave NONE, not %d", (int)a->interleave);
    if (tm_rules_packed16(a->type) && a->swizzle != CU_TENSOR_MAP_SWIZZLE_NONE &&
        a->swizzle != CU_TENSOR_MAP_SWIZZLE_128B &&
        a->swizzle != CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B &&
        !(a->type == CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B &&
          a->swizzle == CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B))
        TM_RULE_("swizzle %d is not one a 16U*_ALIGN16B type takes", (int)a->swizzle);
    if (a->oob == CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA && !tm_rules_is_float(a->type))
        TM_RULE_("the NaN OOB fill needs a floating-point data type, not %d", (int)a->type);
    return NULL;
}

#undef TM_RULE_

#endif
