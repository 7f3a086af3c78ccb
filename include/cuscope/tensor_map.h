/* cuscope/tensor_map.h: TMA tensor maps (Hopper's Tensor Memory Accelerator).
 *
 * A cus_tensor_map is a reference-counted, immutable CUtensorMap (the
 * 128-byte descriptor cuTensorMapEncodeTiled or cuTensorMapEncodeIm2col
 * writes) holding a reference to the cus_buffer whose memory it describes,
 * so that the buffer outlives every kernel that may still use the map
 * through cuscope. A map passed to cus_launch (cuscope/launch.h) goes by
 * value, as the kernel's `const __grid_constant__ CUtensorMap` parameter
 * (128 bytes, 64-byte aligned), and a capture keeps it, and so its buffer,
 * alive with its graph.
 *
 * Every rule the driver documents for the encoding is checked before the
 * driver is called, and the tensor's extent against the buffer's size; a
 * broken rule fails with CUS_ERROR_INVALID_ARGUMENT and a message that names
 * it and its values ("tensor map: globalStrides[1] = 100 is not a multiple
 * of 16"). Encoding needs no current context and switches none. The entry
 * points come with drivers from 12.0 (CUS_ERROR_NOT_SUPPORTED without
 * them); tensor maps are used by devices of compute capability 9.0 and
 * later, which the encoding cannot check (it knows no device).
 *
 * Functions are thread-safe, return a cus_status, record the thread's last
 * error on failure and leave out parameters untouched then.
 */
#ifndef CUSCOPE_TENSOR_MAP_H
#define CUSCOPE_TENSOR_MAP_H

#include <cuda.h>
#include <stddef.h>

#include "memory.h"
#include "object.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A reference-counted, immutable TMA tensor map holding its buffer. */
typedef struct cus_tensor_map cus_tensor_map;

/* The most dimensions a tensor map has (the driver's limit). */
#define CUS_TENSOR_MAP_MAX_RANK 5

/* What a tensor map describes: the arguments of cuTensorMapEncodeTiled and
 * cuTensorMapEncodeIm2col but the address, which is the buffer's plus
 * offset. Dimension 0 is the innermost (contiguous) one. Zero fields of
 * the enums are the driver's NONE values. */
typedef struct cus_tensor_map_params {
    CUtensorMapDataType data_type; /* CU_TENSOR_MAP_DATA_TYPE_* */
    unsigned int rank;             /* 1..5 (tiled), 3..5 (im2col) */
    size_t offset;                 /* bytes from the buffer's start to the tensor's */
    cuuint64_t global_dim[CUS_TENSOR_MAP_MAX_RANK]; /* elements along each dimension, 1..2^32 */
    /* bytes between consecutive indices of dimensions 1..rank-1
     * (global_strides[i] is dimension i+1's): multiples of 16, below 2^40 */
    cuuint64_t global_strides[CUS_TENSOR_MAP_MAX_RANK - 1];
    /* tiled: the box's elements along each dimension, 1..256 */
    cuuint32_t box_dim[CUS_TENSOR_MAP_MAX_RANK];
    /* the traversal step along each dimension, 1..8; all zeros means all 1 */
    cuuint32_t element_strides[CUS_TENSOR_MAP_MAX_RANK];
    CUtensorMapInterleave interleave;     /* CU_TENSOR_MAP_INTERLEAVE_* */
    CUtensorMapSwizzle swizzle;           /* CU_TENSOR_MAP_SWIZZLE_* */
    CUtensorMapL2promotion l2_promotion;  /* CU_TENSOR_MAP_L2_PROMOTION_* */
    CUtensorMapFloatOOBfill oob_fill;     /* CU_TENSOR_MAP_FLOAT_OOB_FILL_* */
    /* im2col: the pixel box's corners, rank - 2 offsets each (W, H, D) */
    int pixel_box_lower[CUS_TENSOR_MAP_MAX_RANK - 2];
    int pixel_box_upper[CUS_TENSOR_MAP_MAX_RANK - 2]; /* see pixel_box_lower */
    cuuint32_t channels_per_pixel; /* im2col: 1..256 */
    cuuint32_t pixels_per_column;  /* im2col: 1..1024 */
} cus_tensor_map_params;

/* Encodes a tiled tensor map (cuTensorMapEncodeTiled) of the tensor at
 * buf + params->offset; *out receives a new reference, which holds buf.
 * CUS_ERROR_INVALID_ARGUMENT, without a driver call, for a NULL argument,
 * a broken rule of the driver's (rank, alignment of the address, dims,
 * strides, box, element strides, interleave and swizzle, data-type limits,
 * the enums' ranges) or a tensor whose extent passes the buffer's end, each
 * named in the message; CUS_ERROR_NOT_SUPPORTED without the entry point
 * (drivers before 12.0); the driver's error (CUDA_ERROR_INVALID_VALUE) for
 * what it refuses beyond. No context switch. */
CUS_API cus_status cus_tensor_map_create_tiled(cus_buffer *buf,
                                               const cus_tensor_map_params *params,
                                               cus_tensor_map **out);

/* The same for an im2col tensor map (cuTensorMapEncodeIm2col): rank 3..5,
 * the pixel box corners, channels_per_pixel and pixels_per_column in place
 * of box_dim (ignored). Errors as cus_tensor_map_create_tiled. */
CUS_API cus_status cus_tensor_map_create_im2col(cus_buffer *buf,
                                                const cus_tensor_map_params *params,
                                                cus_tensor_map **out);

/* A new map like map over another buffer, at offset (cuTensorMapReplaceAddress
 * on a copy of map's descriptor): map itself is unchanged, so that graphs
 * that captured it keep what they read. The same checks of the address's
 * alignment and the extent against buf's size as at creation. *out receives
 * a new reference, which holds buf. Errors as cus_tensor_map_create_tiled. */
CUS_API cus_status cus_tensor_map_rebind(const cus_tensor_map *map, cus_buffer *buf,
                                         size_t offset, cus_tensor_map **out);

/* Adds a reference; NULL-safe; returns map. */
CUS_API cus_tensor_map *cus_tensor_map_ref(cus_tensor_map *map);
/* Drops a reference; NULL-safe; returns NULL. The last one frees the map and
 * drops its buffer (no driver call: a tensor map is a plain value). */
CUS_API cus_tensor_map *cus_tensor_map_unref(cus_tensor_map *map);
CUS_DEFINE_AUTOPTR(cus_tensor_map, cus_tensor_map_unref)

/* The encoded descriptor, borrowed from map (valid while map lives); NULL for
 * NULL. Pass a copy by value to a kernel's `const __grid_constant__
 * CUtensorMap` parameter; cus_launch does it from the map itself. No driver
 * call. */
CUS_API const CUtensorMap *cus_tensor_map_get(const cus_tensor_map *map);
/* The buffer map describes, borrowed; NULL for NULL. No driver call. */
CUS_API cus_buffer *cus_tensor_map_buffer(const cus_tensor_map *map);
/* The parameters map was made with (offset: the rebound one), borrowed;
 * NULL for NULL. No driver call. */
CUS_API const cus_tensor_map_params *cus_tensor_map_params_of(const cus_tensor_map *map);
/* The bits one element of a data type takes in memory: 8, 16, 32 or 64; 4
 * for CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B, 8 for the 16U4_ALIGN16B and
 * 16U6_ALIGN16B types (16 values in 16 bytes, gaps included); 0 for a value
 * that is no CUtensorMapDataType. No driver call. */
CUS_API unsigned int cus_tensor_map_element_bits(CUtensorMapDataType type);

#ifdef __cplusplus
}
#endif

#endif
