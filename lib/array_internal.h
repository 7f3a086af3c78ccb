/* Internal: what array.c, copy_nd.c and texture.c share (cuscope/array.h).
 * Nothing here is API. */
#ifndef CUSCOPE_LIB_ARRAY_INTERNAL_H
#define CUSCOPE_LIB_ARRAY_INTERNAL_H

#include "cuscope/array.h"
#include "internal.h"

struct cus_mipmapped_array {
    cus_refcount refs;
    CUmipmappedArray handle;
    cus_context *ctx; /* a reference */
    CUDA_ARRAY3D_DESCRIPTOR desc;
    unsigned int levels;
};

struct cus_array {
    cus_refcount refs; /* first: cus_capture_kept_ reads it through the object */
    CUarray handle;
    cus_context *ctx;            /* a reference */
    cus_mipmapped_array *parent; /* a level: its mipmapped array (a reference), else NULL */
    CUDA_ARRAY3D_DESCRIPTOR desc; /* a level's own extents */
    size_t elem;                 /* bytes per element */
};

/* Keeps an array alive with the graph captured on stream (array.c). */
CUS_HIDDEN cus_status cus_capture_keep_array_(cus_stream *stream, cus_array *array,
                                              const char *function);
CUS_HIDDEN cus_keep_item_ cus_capture_item_array_(cus_array *array);

/* The extents of an array as copies see them: 0 means 1. */
static inline size_t cus_array_rows_(const cus_array *a)
{
    return a->desc.Height ? a->desc.Height : 1;
}
static inline size_t cus_array_slices_(const cus_array *a)
{
    return a->desc.Depth ? a->desc.Depth : 1;
}

#endif
