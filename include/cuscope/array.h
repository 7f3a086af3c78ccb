/* cuscope/array.h: CUDA arrays, pitched memory, 2D and 3D copies, and
 * texture and surface objects.
 *
 * A cus_array is a reference-counted CUDA array (cuArrayCreate,
 * cuArray3DCreate) holding its context; a level of a cus_mipmapped_array is
 * a cus_array too, which holds its mipmapped array alive (and is not
 * destroyed by itself: the driver frees levels with their mipmapped array).
 *
 * cus_buffer_alloc_pitch (cuMemAllocPitch) makes a cus_buffer that knows its
 * pitch and height, so that 2D copies and pitch-2D textures over it are
 * bounds-checked.
 *
 * cus_copy_2d and cus_copy_3d (cuMemcpy2D, cuMemcpy3D, and their _async
 * forms on a cus_stream) copy a region between typed endpoints: host memory
 * with a pitch, a buffer (pitched or linear) at an offset with a pitch, or an
 * array at an origin. Every endpoint that cuscope knows the size of is
 * bounds-checked before any driver call: a region that leaves a buffer or an
 * array is CUS_ERROR_OUT_OF_RANGE; a row wider than its pitch is
 * CUS_ERROR_INVALID_ARGUMENT. Host memory is the caller's: its extent is
 * not known, and not checked.
 *
 * A cus_texture (cuTexObjectCreate) reads an array, a mipmapped array, a
 * linear buffer or a pitch-2D buffer, and holds that resource alive; a
 * cus_surface (cuSurfObjectCreate) writes and reads an array made with
 * CUDA_ARRAY3D_SURFACE_LDST. Pass cus_texture_handle() / cus_surface_handle()
 * to kernels; a cus_texture * given to cus_launch is passed as its handle and
 * kept alive by a graph that captures the launch (cuscope/launch.h).
 *
 * Functions are thread-safe, return a cus_status, record the thread's last
 * error on failure and leave out parameters untouched then; constructors
 * write a new reference. An object whose context is poisoned frees its
 * host-side record without driver calls.
 */
#ifndef CUSCOPE_ARRAY_H
#define CUSCOPE_ARRAY_H

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>

#include "context.h"
#include "memory.h"
#include "object.h"
#include "status.h"
#include "stream.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A reference-counted CUDA array (or a mipmap level) holding its context. */
typedef struct cus_array cus_array;
/* A reference-counted mipmapped array holding its context. */
typedef struct cus_mipmapped_array cus_mipmapped_array;
/* A reference-counted texture object holding the resource it reads. */
typedef struct cus_texture cus_texture;
/* A reference-counted surface object holding its array. */
typedef struct cus_surface cus_surface;

/* --- arrays ------------------------------------------------------------------ */

/* An array on ctx as desc describes: Width (> 0), Height (0 for 1D), Depth
 * (0 for 1D and 2D; the layer count with CUDA_ARRAY3D_LAYERED), Format
 * (CU_AD_FORMAT_*), NumChannels (1, 2 or 4) and CUDA_ARRAY3D_* Flags
 * (LAYERED, SURFACE_LDST, CUBEMAP, TEXTURE_GATHER, ...). Made with
 * cuArrayCreate when Depth and Flags are 0, else with cuArray3DCreate.
 * CUS_ERROR_INVALID_ARGUMENT, before any driver call, for a NULL argument, a
 * zero width, a height of 0 with a depth, an unknown format or a channel
 * count other than 1, 2 or 4; the driver's error for what it refuses (a size
 * above the device's limits, a flag it does not take). */
CUS_API cus_status cus_array_create(cus_context *ctx, const CUDA_ARRAY3D_DESCRIPTOR *desc,
                                    cus_array **out);

/* Adds a reference; NULL-safe; returns array. */
CUS_API cus_array *cus_array_ref(cus_array *array);
/* Drops a reference; NULL-safe; returns NULL. The last reference destroys the array (cuArrayDestroy; a mipmapped level
 * only drops its mipmapped array). Textures and surfaces over it hold it. */
CUS_API cus_array *cus_array_unref(cus_array *array);
CUS_DEFINE_AUTOPTR(cus_array, cus_array_unref)

/* The driver's descriptor of the array (cuArray3DGetDescriptor). */
CUS_API cus_status cus_array_descriptor(cus_array *array, CUDA_ARRAY3D_DESCRIPTOR *out);

/* The driver's CUarray; NULL for NULL. No driver call. */
CUS_API CUarray cus_array_handle(const cus_array *array);
/* The array's context, borrowed; NULL for NULL. No driver call. */
CUS_API cus_context *cus_array_context(const cus_array *array);
/* The bytes of one element: the format's size times the channels. */
CUS_API size_t cus_array_element_bytes(const cus_array *array);
/* The descriptor cuscope made it with (a level's: its extents). */
CUS_API CUDA_ARRAY3D_DESCRIPTOR cus_array_desc(const cus_array *array);

/* The size of one channel of format in bytes; 0 for an unknown format (and
 * for the planar and block-compressed ones, which cuscope does not copy). */
CUS_API size_t cus_array_format_bytes(CUarray_format format);

/* --- mipmapped arrays -------------------------------------------------------- */

/* levels (>= 1) mipmap levels of desc's extents, halved at each level
 * (cuMipmappedArrayCreate). The same argument checks as cus_array_create. */
CUS_API cus_status cus_mipmapped_array_create(cus_context *ctx,
                                              const CUDA_ARRAY3D_DESCRIPTOR *desc,
                                              unsigned int levels, cus_mipmapped_array **out);
/* Adds a reference; NULL-safe; returns mm. */
CUS_API cus_mipmapped_array *cus_mipmapped_array_ref(cus_mipmapped_array *mm);
/* Drops a reference; NULL-safe; returns NULL. The last reference destroys it (cuMipmappedArrayDestroy): its levels hold it. */
CUS_API cus_mipmapped_array *cus_mipmapped_array_unref(cus_mipmapped_array *mm);
CUS_DEFINE_AUTOPTR(cus_mipmapped_array, cus_mipmapped_array_unref)

/* Level `level` (cuMipmappedArrayGetLevel) as a new cus_array reference that
 * holds mm alive. CUS_ERROR_OUT_OF_RANGE for a level >= the level count. */
CUS_API cus_status cus_mipmapped_array_level(cus_mipmapped_array *mm, unsigned int level,
                                             cus_array **out);
/* The driver's CUmipmappedArray; NULL for NULL. No driver call. */
CUS_API CUmipmappedArray cus_mipmapped_array_handle(const cus_mipmapped_array *mm);
/* The number of levels it was made with; 0 for NULL. No driver call. */
CUS_API unsigned int cus_mipmapped_array_levels(const cus_mipmapped_array *mm);

/* --- pitched memory ---------------------------------------------------------- */

/* height rows of width_bytes, each row padded to the pitch the driver picks
 * for element_bytes-sized accesses (4, 8 or 16: cuMemAllocPitch), which is
 * written to *pitch. The buffer (of pitch * height bytes) knows its pitch
 * and height: cus_buffer_pitch, cus_buffer_height. CUS_ERROR_INVALID_ARGUMENT
 * for a zero width or height or another element size. */
CUS_API cus_status cus_buffer_alloc_pitch(cus_context *ctx, size_t width_bytes, size_t height,
                                          unsigned int element_bytes, cus_buffer **out,
                                          size_t *pitch);
/* The pitch of a pitched buffer; 0 for the others (and NULL). */
CUS_API size_t cus_buffer_pitch(const cus_buffer *buf);
/* The rows of a pitched buffer; 0 for the others (and NULL). */
CUS_API size_t cus_buffer_height(const cus_buffer *buf);

/* --- 2D and 3D copies -------------------------------------------------------- */

/* What one side of a 2D or 3D copy is (cus_copy_endpoint). */
typedef enum cus_copy_kind {
    CUS_COPY_NONE = 0, /* invalid: an endpoint must say what it is */
    CUS_COPY_HOST,     /* host memory at `host`, rows `pitch` bytes apart */
    CUS_COPY_BUFFER,   /* `buffer` at byte `offset`, rows `pitch` apart */
    CUS_COPY_ARRAY,    /* `array`, the region at (x_bytes, y, z) */
} cus_copy_kind;

/* One side of a copy. Build it with cus_copy_host(), cus_copy_buffer() or
 * cus_copy_array() and adjust the origin fields where needed. */
typedef struct cus_copy_endpoint {
    cus_copy_kind kind; /* which of the fields below it uses */
    const void *host;   /* HOST (a destination's is written) */
    cus_buffer *buffer; /* BUFFER */
    cus_array *array;   /* ARRAY */
    size_t offset;      /* BUFFER: the byte where row 0 of slice 0 starts */
    /* HOST, BUFFER: bytes from a row to the next; 0 for a buffer: its pitch
     * (cus_buffer_pitch), or for a linear one the copy's width_bytes. */
    size_t pitch;
    /* 3D, HOST and BUFFER: rows from a slice to the next; 0: a pitched
     * buffer's height, else the copy's height. */
    size_t rows;
    size_t x_bytes, y, z; /* the region's origin (HOST and BUFFER too: added to host/offset) */
} cus_copy_endpoint;

/* A host endpoint: memory at host, rows pitch bytes apart. */
static inline cus_copy_endpoint cus_copy_host(const void *host, size_t pitch)
{
    cus_copy_endpoint e = {CUS_COPY_HOST, host, NULL, NULL, 0, pitch, 0, 0, 0, 0};
    return e;
}

/* A buffer endpoint: buffer at byte offset, rows pitch bytes apart (0: the
 * buffer's pitch, or the copy's width for a linear buffer). */
static inline cus_copy_endpoint cus_copy_buffer(cus_buffer *buffer, size_t offset, size_t pitch)
{
    cus_copy_endpoint e = {CUS_COPY_BUFFER, NULL, buffer, NULL, offset, pitch, 0, 0, 0, 0};
    return e;
}

/* An array endpoint: the region of array at (x_bytes, y, 0). */
static inline cus_copy_endpoint cus_copy_array(cus_array *array, size_t x_bytes, size_t y)
{
    cus_copy_endpoint e = {CUS_COPY_ARRAY, NULL, NULL, array, 0, 0, 0, x_bytes, y, 0};
    return e;
}

/* A 2D copy (cus_copy_2d): width_bytes by height from src to dst. */
typedef struct cus_copy_2d_desc {
    cus_copy_endpoint dst, src; /* the two sides */
    size_t width_bytes, height; /* the region's extent: bytes of a row, rows */
} cus_copy_2d_desc;

/* A 3D copy (cus_copy_3d): width_bytes by height by depth from src to dst. */
typedef struct cus_copy_3d_desc {
    cus_copy_endpoint dst, src;        /* the two sides */
    size_t width_bytes, height, depth; /* the region's extent: bytes of a row, rows, slices */
} cus_copy_3d_desc;

/* Copies the region (cuMemcpy2D), synchronously. At least one
 * side must be a buffer or an array (CUS_ERROR_INVALID_ARGUMENT), and the
 * buffers and arrays must be of one context (CUS_ERROR_CONTEXT_MISMATCH). A
 * region with a zero extent copies nothing and makes no driver call, once
 * checked. Errors, all before any driver call: CUS_ERROR_INVALID_ARGUMENT
 * (a NULL desc or endpoint object, an endpoint of kind NONE, a row wider
 * than its pitch, a host endpoint with NULL memory); CUS_ERROR_OUT_OF_RANGE
 * (the region leaves a buffer or an array, or a 3D region's rows leave a
 * slice); the driver's otherwise. */
CUS_API cus_status cus_copy_2d(const cus_copy_2d_desc *desc);
/* Copies the region (cuMemcpy3D), synchronously, as cus_copy_2d does. */
CUS_API cus_status cus_copy_3d(const cus_copy_3d_desc *desc);
/* cus_copy_2d queued on stream (cuMemcpy2DAsync), whose context must be
 * the endpoints' (CUS_ERROR_CONTEXT_MISMATCH). Host memory should be
 * page-locked (a cus_host_buffer), or the driver copies synchronously. In a
 * capture begun through cuscope, the buffers and arrays are kept alive with
 * the graph. */
CUS_API cus_status cus_copy_2d_async(const cus_copy_2d_desc *desc, cus_stream *stream);
/* cus_copy_3d queued on stream (cuMemcpy3DAsync), as cus_copy_2d_async. */
CUS_API cus_status cus_copy_3d_async(const cus_copy_3d_desc *desc, cus_stream *stream);

/* --- textures ---------------------------------------------------------------- */

/* The common texture: one address mode on every axis
 * (CU_TR_ADDRESS_MODE_WRAP, CLAMP, MIRROR, BORDER), a filter
 * (CU_TR_FILTER_MODE_POINT or LINEAR), and CU_TRSF_* flags
 * (NORMALIZED_COORDINATES, READ_AS_INTEGER, ...). */
static inline CUDA_TEXTURE_DESC cus_texture_desc(CUaddress_mode address, CUfilter_mode filter,
                                                 unsigned int flags)
{
    CUDA_TEXTURE_DESC d;
    __builtin_memset(&d, 0, sizeof d);
    d.addressMode[0] = d.addressMode[1] = d.addressMode[2] = address;
    d.filterMode = filter;
    d.flags = flags;
    return d;
}

/* A texture over an array (cuTexObjectCreate with CU_RESOURCE_TYPE_ARRAY),
 * holding it. view may be NULL. CUS_ERROR_INVALID_ARGUMENT for a NULL array,
 * desc or out; the driver's error for a descriptor it refuses (an unknown
 * address or filter mode, linear filtering of an integer read, ...). */
CUS_API cus_status cus_texture_create_array(cus_array *array, const CUDA_TEXTURE_DESC *desc,
                                            const CUDA_RESOURCE_VIEW_DESC *view,
                                            cus_texture **out);
/* Over a mipmapped array (CU_RESOURCE_TYPE_MIPMAPPED_ARRAY). */
CUS_API cus_status cus_texture_create_mipmapped(cus_mipmapped_array *mm,
                                                const CUDA_TEXTURE_DESC *desc,
                                                const CUDA_RESOURCE_VIEW_DESC *view,
                                                cus_texture **out);
/* Over the whole of a buffer as a linear texture of format x channels
 * elements (CU_RESOURCE_TYPE_LINEAR). */
CUS_API cus_status cus_texture_create_linear(cus_buffer *buf, CUarray_format format,
                                             unsigned int channels,
                                             const CUDA_TEXTURE_DESC *desc, cus_texture **out);
/* Over width x height elements of a pitched buffer, at its pitch
 * (CU_RESOURCE_TYPE_PITCH2D). CUS_ERROR_INVALID_ARGUMENT for a buffer
 * without a pitch; CUS_ERROR_OUT_OF_RANGE when the rows do not fit it. */
CUS_API cus_status cus_texture_create_pitch2d(cus_buffer *buf, CUarray_format format,
                                              unsigned int channels, size_t width, size_t height,
                                              const CUDA_TEXTURE_DESC *desc, cus_texture **out);

/* Adds a reference; NULL-safe; returns tex. */
CUS_API cus_texture *cus_texture_ref(cus_texture *tex);
/* Drops a reference; NULL-safe; returns NULL. The last reference destroys it (cuTexObjectDestroy), then drops its resource. */
CUS_API cus_texture *cus_texture_unref(cus_texture *tex);
CUS_DEFINE_AUTOPTR(cus_texture, cus_texture_unref)

/* The handle to pass to a kernel (valid while the texture lives); 0 for NULL. */
CUS_API CUtexObject cus_texture_handle(const cus_texture *tex);
/* The texture's context, borrowed; NULL for NULL. No driver call. */
CUS_API cus_context *cus_texture_context(const cus_texture *tex);
/* The driver's resource descriptor of the texture (cuTexObjectGetResourceDesc). */
CUS_API cus_status cus_texture_resource_desc(cus_texture *tex, CUDA_RESOURCE_DESC *out);

/* --- surfaces ---------------------------------------------------------------- */

/* A surface over an array made with CUDA_ARRAY3D_SURFACE_LDST (else
 * CUS_ERROR_INVALID_ARGUMENT, before any driver call): cuSurfObjectCreate. */
CUS_API cus_status cus_surface_create(cus_array *array, cus_surface **out);
/* Adds a reference; NULL-safe; returns surf. */
CUS_API cus_surface *cus_surface_ref(cus_surface *surf);
/* Drops a reference; NULL-safe; returns NULL. The last reference destroys it (cuSurfObjectDestroy), then drops its array. */
CUS_API cus_surface *cus_surface_unref(cus_surface *surf);
CUS_DEFINE_AUTOPTR(cus_surface, cus_surface_unref)
/* The handle to pass to a kernel (valid while the surface lives); 0 for NULL. */
CUS_API CUsurfObject cus_surface_handle(const cus_surface *surf);

#ifdef __cplusplus
}
#endif

#endif
