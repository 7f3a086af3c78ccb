/* Texture and surface objects (cuscope/array.h): each holds the resource it
 * reads, so that the resource outlives every kernel that may still use the
 * handle through cuscope. */
#include <stdlib.h>
#include <string.h>

#include "array_internal.h"

typedef enum resource_kind_ {
    RES_ARRAY,
    RES_MIPMAPPED,
    RES_BUFFER,
} resource_kind_;

struct cus_texture {
    cus_refcount refs; /* first: the launch path reads it through the object */
    CUtexObject handle;
    cus_context *ctx; /* a reference */
    resource_kind_ kind;
    void *resource; /* a reference to the array, mipmapped array or buffer */
};
_Static_assert(offsetof(cus_texture, refs) == 0, "the launch path reads the count first");

struct cus_surface {
    cus_refcount refs;
    CUsurfObject handle;
    cus_context *ctx;  /* a reference */
    cus_array *array;  /* a reference */
};

static void resource_unref(resource_kind_ kind, void *r)
{
    switch (kind) {
    case RES_ARRAY:
        cus_array_unref(r);
        break;
    case RES_MIPMAPPED:
        cus_mipmapped_array_unref(r);
        break;
    case RES_BUFFER:
        cus_buffer_unref(r);
        break;
    }
}

static CUresult texture_destroy_call(void *h)
{
    return cus_drv_.cuTexObjectDestroy_((CUtexObject)(uintptr_t)h);
}

static void texture_destroy(cus_texture *t)
{
    if (t->handle)
        cus_destroy_in_context_(t->ctx, "cus_texture_unref", "cuTexObjectDestroy",
                                texture_destroy_call, (void *)(uintptr_t)t->handle,
                                "a texture object");
    resource_unref(t->kind, t->resource);
    cus_context_unref(t->ctx);
    free(t);
}

CUS_DEFINE_REF_UNREF(cus_texture, texture_destroy)
CUS_HIDDEN cus_keep_item_ cus_capture_item_texture_(cus_texture *tex);
CUS_HIDDEN cus_status cus_capture_keep_texture_(cus_stream *stream, cus_texture *tex,
                                                const char *function);

/* Makes the texture over res (whose owner is `resource`, of kind). */
static cus_status texture_new(cus_context *ctx, const CUDA_RESOURCE_DESC *res,
                              const CUDA_TEXTURE_DESC *desc, const CUDA_RESOURCE_VIEW_DESC *view,
                              resource_kind_ kind, void *resource, cus_texture **out,
                              const char *function)
{
    CUS_CHECK_POISON(ctx);
    cus_release_deferred_if_any_();
    cus_autofree cus_texture *t = cus_calloc_(1, sizeof *t);
    if (!t)
        return cus_fail_(CUS_ERROR_OUT_OF_HOST_MEMORY, function, NULL, "allocating a texture");
    CUtexObject h = 0;
    CUS_IN_CONTEXT_AS(function, ctx, "cuTexObjectCreate",
                      cus_drv_.cuTexObjectCreate_(&h, res, desc, view));
    cus_refcount_init_(&t->refs);
    t->handle = h;
    t->ctx = cus_context_ref(ctx);
    t->kind = kind;
    switch (kind) {
    case RES_ARRAY:
        t->resource = cus_array_ref(resource);
        break;
    case RES_MIPMAPPED:
        t->resource = cus_mipmapped_array_ref(resource);
        break;
    case RES_BUFFER:
        t->resource = cus_buffer_ref(resource);
        break;
    }
    *out = cus_steal(&t);
    return CUS_SUCCESS;
}

CUS_API cus_status cus_texture_create_array(cus_array *array, const CUDA_TEXTURE_DESC *desc,
                                            const CUDA_RESOURCE_VIEW_DESC *view,
                                            cus_texture **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(array && desc && out);
    CUDA_RESOURCE_DESC res;
    memset(&res, 0, sizeof res);
    res.resType = CU_RESOURCE_TYPE_ARRAY;
    res.res.array.hArray = array->handle;
    return texture_new(array->ctx, &res, desc, view, RES_ARRAY, array, out, __func__);
}

CUS_API cus_status cus_texture_create_mipmapped(cus_mipmapped_array *mm,
                                                const CUDA_TEXTURE_DESC *desc,
                                                const CUDA_RESOURCE_VIEW_DESC *view,
                                                cus_texture **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(mm && desc && out);
    CUDA_RESOURCE_DESC res;
    memset(&res, 0, sizeof res);
    res.resType = CU_RESOURCE_TYPE_MIPMAPPED_ARRAY;
    res.res.mipmap.hMipmappedArray = mm->handle;
    return texture_new(mm->ctx, &res, desc, view, RES_MIPMAPPED, mm, out, __func__);
}

/* A buffer texture's element: a known format, 1, 2 or 4 channels. */
#define CHECK_ELEMENT(format, channels)                                        \
    do {                                                                       \
        if (!cus_array_format_bytes(format) ||                                 \
            ((channels) != 1 && (channels) != 2 && (channels) != 4))           \
            return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,                  \
                            "format 0x%x with %u channels is not a texture element cuscope " \
                            "knows", (unsigned int)(format), (channels));      \
    } while (0)

CUS_API cus_status cus_texture_create_linear(cus_buffer *buf, CUarray_format format,
                                             unsigned int channels,
                                             const CUDA_TEXTURE_DESC *desc, cus_texture **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(buf && desc && out);
    CHECK_ELEMENT(format, channels);
    CUDA_RESOURCE_DESC res;
    memset(&res, 0, sizeof res);
    res.resType = CU_RESOURCE_TYPE_LINEAR;
    res.res.linear.devPtr = cus_buffer_ptr(buf);
    res.res.linear.format = format;
    res.res.linear.numChannels = channels;
    res.res.linear.sizeInBytes = cus_buffer_size(buf);
    return texture_new(cus_buffer_context(buf), &res, desc, NULL, RES_BUFFER, buf, out,
                       __func__);
}

CUS_API cus_status cus_texture_create_pitch2d(cus_buffer *buf, CUarray_format format,
                                              unsigned int channels, size_t width, size_t height,
                                              const CUDA_TEXTURE_DESC *desc, cus_texture **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(buf && desc && out && width && height);
    CHECK_ELEMENT(format, channels);
    size_t pitch = cus_buffer_pitch(buf), row;
    if (!pitch)
        return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,
                        "a pitch-2D texture needs a pitched buffer (cus_buffer_alloc_pitch)");
    if (__builtin_mul_overflow(width, cus_array_format_bytes(format) * channels, &row) ||
        row > pitch || height > cus_buffer_height(buf))
        return CUS_FAIL(CUS_ERROR_OUT_OF_RANGE, NULL,
                        "%zu x %zu elements of %zu bytes do not fit a buffer of %zu rows of %zu "
                        "bytes",
                        width, height, cus_array_format_bytes(format) * channels,
                        cus_buffer_height(buf), pitch);
    CUDA_RESOURCE_DESC res;
    memset(&res, 0, sizeof res);
    res.resType = CU_RESOURCE_TYPE_PITCH2D;
    res.res.pitch2D.devPtr = cus_buffer_ptr(buf);
    res.res.pitch2D.format = format;
    res.res.pitch2D.numChannels = channels;
    res.res.pitch2D.width = width;
    res.res.pitch2D.height = height;
    res.res.pitch2D.pitchInBytes = pitch;
    return texture_new(cus_buffer_context(buf), &res, desc, NULL, RES_BUFFER, buf, out,
                       __func__);
}

CUS_API CUtexObject cus_texture_handle(const cus_texture *tex)
{
    return tex ? tex->handle : 0;
}

CUS_API cus_context *cus_texture_context(const cus_texture *tex)
{
    return tex ? tex->ctx : NULL;
}

CUS_API cus_status cus_texture_resource_desc(cus_texture *tex, CUDA_RESOURCE_DESC *out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(tex && out);
    CUDA_RESOURCE_DESC r;
    memset(&r, 0, sizeof r);
    CUS_IN_CONTEXT(tex->ctx, "cuTexObjectGetResourceDesc",
                   cus_drv_.cuTexObjectGetResourceDesc_(&r, tex->handle));
    *out = r;
    return CUS_SUCCESS;
}

CUS_DEFINE_CAPTURE_KEEP(texture, cus_texture)

static cus_keep_item_ texture_item(void *tex)
{
    return cus_capture_item_texture_(tex);
}

/* A texture named by a cus_launch argument (cuscope/launch.h): its handle,
 * and while a capture is open a note for the launch to keep it. */
CUS_API CUtexObject cus_texture_arg_(const cus_texture *tex)
{
    if (CUS_UNLIKELY(cus_captures_open_()) && tex)
        cus_launch_note_kept_((void *)tex, texture_item);
    return tex ? tex->handle : 0;
}

/* --- surfaces ------------------------------------------------------------------ */

static CUresult surface_destroy_call(void *h)
{
    return cus_drv_.cuSurfObjectDestroy_((CUsurfObject)(uintptr_t)h);
}

static void surface_destroy(cus_surface *s)
{
    if (s->handle)
        cus_destroy_in_context_(s->ctx, "cus_surface_unref", "cuSurfObjectDestroy",
                                surface_destroy_call, (void *)(uintptr_t)s->handle,
                                "a surface object");
    cus_array_unref(s->array);
    cus_context_unref(s->ctx);
    free(s);
}

CUS_DEFINE_REF_UNREF(cus_surface, surface_destroy)

CUS_API cus_status cus_surface_create(cus_array *array, cus_surface **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(array && out);
    if (!(array->desc.Flags & CUDA_ARRAY3D_SURFACE_LDST))
        return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,
                        "a surface needs an array made with CUDA_ARRAY3D_SURFACE_LDST");
    CUS_CHECK_POISON(array->ctx);
    cus_release_deferred_if_any_();
    cus_autofree cus_surface *s = cus_calloc_(1, sizeof *s);
    if (!s)
        return CUS_FAIL(CUS_ERROR_OUT_OF_HOST_MEMORY, NULL, "allocating a surface");
    CUDA_RESOURCE_DESC res;
    memset(&res, 0, sizeof res);
    res.resType = CU_RESOURCE_TYPE_ARRAY;
    res.res.array.hArray = array->handle;
    CUsurfObject h = 0;
    CUS_IN_CONTEXT(array->ctx, "cuSurfObjectCreate", cus_drv_.cuSurfObjectCreate_(&h, &res));
    cus_refcount_init_(&s->refs);
    s->handle = h;
    s->ctx = cus_context_ref(array->ctx);
    s->array = cus_array_ref(array);
    *out = cus_steal(&s);
    return CUS_SUCCESS;
}

CUS_API CUsurfObject cus_surface_handle(const cus_surface *surf)
{
    return surf ? surf->handle : 0;
}
