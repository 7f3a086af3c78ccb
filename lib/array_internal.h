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

/* A 2D or 3D copy checked and converted as cus_copy_3d does it (copy_nd.c):
 * the driver's descriptor, the context of its device sides, and the buffers
 * and arrays it uses (to keep). For graph copy nodes (graph_copy_nd.c). */
typedef struct cus_copy_nd_ {
    CUDA_MEMCPY3D p;
    cus_context *ctx; /* borrowed from a side */
    cus_keep_item_ items[4];
    unsigned int n;
} cus_copy_nd_;
/* Resolves and bounds-checks dst and src for a w x h x d region (d 1 for
 * 2D), as cus_copy_3d does, errors recorded (the context's poison too). */
CUS_HIDDEN cus_status cus_copy_nd_prepare_(const cus_copy_endpoint *dst,
                                           const cus_copy_endpoint *src, size_t w, size_t h,
                                           size_t d, cus_copy_nd_ *out);

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
