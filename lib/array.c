/* CUDA arrays and mipmapped arrays (cuscope/array.h). */
#include <stdlib.h>
#include <string.h>

#include "array_internal.h"

CUS_API size_t cus_array_format_bytes(CUarray_format format)
{
    switch ((int)format) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
    case CU_AD_FORMAT_UNORM_INT8X1:
    case CU_AD_FORMAT_SNORM_INT8X1:
        return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
    case CU_AD_FORMAT_UNORM_INT16X1:
    case CU_AD_FORMAT_SNORM_INT16X1:
        return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
        return 4;
    default:
        return 0;
    }
}

/* The checks cuscope makes before the driver sees desc. */
static cus_status check_desc(const CUDA_ARRAY3D_DESCRIPTOR *d, const char *function)
{
    if (cus_array_format_bytes(d->Format) == 0)
        return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL,
                         "array format 0x%x is not one cuscope knows (CU_AD_FORMAT_*, one "
                         "channel of 8, 16 or 32 bits)",
                         (unsigned int)d->Format);
    if (d->NumChannels != 1 && d->NumChannels != 2 && d->NumChannels != 4)
        return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL,
                         "%u channels: an array element has 1, 2 or 4", d->NumChannels);
    if (d->Width == 0 || (d->Height == 0 && d->Depth != 0))
        return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL,
                         "array of %zu x %zu x %zu: the width must not be 0, nor the height "
                         "when there is a depth",
                         d->Width, d->Height, d->Depth);
    return CUS_SUCCESS;
}

/* --- arrays -------------------------------------------------------------------- */

static CUresult array_destroy_call(void *h)
{
    return cus_drv_.cuArrayDestroy_((CUarray)h);
}

static void array_destroy(cus_array *a)
{
    /* A level belongs to its mipmapped array, which the driver frees with it. */
    if (a->handle && !a->parent)
        cus_destroy_in_context_relaxed_(a->ctx, "cus_array_unref", "cuArrayDestroy",
                                        array_destroy_call, a->handle, "an array");
    cus_mipmapped_array_unref(a->parent);
    cus_context_unref(a->ctx);
    free(a);
}

CUS_DEFINE_REF_UNREF(cus_array, array_destroy)

CUS_API cus_status cus_array_create(cus_context *ctx, const CUDA_ARRAY3D_DESCRIPTOR *desc,
                                    cus_array **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(ctx && desc && out);
    CUS_TRY(check_desc(desc, __func__));
    CUS_CHECK_POISON(ctx);
    cus_release_deferred_if_any_();
    cus_autofree cus_array *a = cus_calloc_(1, sizeof *a);
    if (!a)
        return CUS_FAIL(CUS_ERROR_OUT_OF_HOST_MEMORY, NULL, "allocating an array");
    CUarray h = NULL;
    if (desc->Depth == 0 && desc->Flags == 0) {
        CUDA_ARRAY_DESCRIPTOR d2 = {.Width = desc->Width,
                                    .Height = desc->Height,
                                    .Format = desc->Format,
                                    .NumChannels = desc->NumChannels};
        CUS_IN_CONTEXT(ctx, "cuArrayCreate", cus_drv_.cuArrayCreate_(&h, &d2));
    } else {
        CUS_IN_CONTEXT(ctx, "cuArray3DCreate", cus_drv_.cuArray3DCreate_(&h, desc));
    }
    cus_refcount_init_(&a->refs);
    a->handle = h;
    a->ctx = cus_context_ref(ctx);
    a->desc = *desc;
    a->elem = cus_array_format_bytes(desc->Format) * desc->NumChannels;
    *out = cus_steal(&a);
    return CUS_SUCCESS;
}

CUS_API cus_status cus_array_descriptor(cus_array *array, CUDA_ARRAY3D_DESCRIPTOR *out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(array && out);
    CUDA_ARRAY3D_DESCRIPTOR d;
    memset(&d, 0, sizeof d);
    CUS_IN_CONTEXT(array->ctx, "cuArray3DGetDescriptor",
                   cus_drv_.cuArray3DGetDescriptor_(&d, array->handle));
    *out = d;
    return CUS_SUCCESS;
}

CUS_API CUarray cus_array_handle(const cus_array *array)
{
    return array ? array->handle : NULL;
}

CUS_API cus_context *cus_array_context(const cus_array *array)
{
    return array ? array->ctx : NULL;
}

CUS_API size_t cus_array_element_bytes(const cus_array *array)
{
    return array ? array->elem : 0;
}

CUS_API CUDA_ARRAY3D_DESCRIPTOR cus_array_desc(const cus_array *array)
{
    CUDA_ARRAY3D_DESCRIPTOR d;
    memset(&d, 0, sizeof d);
    return array ? array->desc : d;
}

CUS_DEFINE_CAPTURE_KEEP(array, cus_array)

/* --- mipmapped arrays ------------------------------------------------------------ */

static CUresult mipmapped_destroy_call(void *h)
{
    return cus_drv_.cuMipmappedArrayDestroy_((CUmipmappedArray)h);
}

static void mipmapped_destroy(cus_mipmapped_array *m)
{
    if (m->handle)
        cus_destroy_in_context_relaxed_(m->ctx, "cus_mipmapped_array_unref",
                                        "cuMipmappedArrayDestroy", mipmapped_destroy_call,
                                        m->handle, "a mipmapped array");
    cus_context_unref(m->ctx);
    free(m);
}

CUS_DEFINE_REF_UNREF(cus_mipmapped_array, mipmapped_destroy)

CUS_API cus_status cus_mipmapped_array_create(cus_context *ctx,
                                              const CUDA_ARRAY3D_DESCRIPTOR *desc,
                                              unsigned int levels, cus_mipmapped_array **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(ctx && desc && out && levels >= 1);
    CUS_TRY(check_desc(desc, __func__));
    CUS_CHECK_POISON(ctx);
    cus_release_deferred_if_any_();
    cus_autofree cus_mipmapped_array *m = cus_calloc_(1, sizeof *m);
    if (!m)
        return CUS_FAIL(CUS_ERROR_OUT_OF_HOST_MEMORY, NULL, "allocating a mipmapped array");
    CUmipmappedArray h = NULL;
    CUS_IN_CONTEXT(ctx, "cuMipmappedArrayCreate",
                   cus_drv_.cuMipmappedArrayCreate_(&h, desc, levels));
    cus_refcount_init_(&m->refs);
    m->handle = h;
    m->ctx = cus_context_ref(ctx);
    m->desc = *desc;
    m->levels = levels;
    *out = cus_steal(&m);
    return CUS_SUCCESS;
}

static size_t halved(size_t extent, unsigned int level)
{
    if (extent == 0)
        return 0;
    size_t e = level >= sizeof(size_t) * 8 ? 0 : extent >> level;
    return e ? e : 1;
}

CUS_API cus_status cus_mipmapped_array_level(cus_mipmapped_array *mm, unsigned int level,
                                             cus_array **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(mm && out);
    if (level >= mm->levels)
        return CUS_FAIL(CUS_ERROR_OUT_OF_RANGE, NULL,
                        "level %u of a mipmapped array of %u levels", level, mm->levels);
    cus_autofree cus_array *a = cus_calloc_(1, sizeof *a);
    if (!a)
        return CUS_FAIL(CUS_ERROR_OUT_OF_HOST_MEMORY, NULL, "allocating an array");
    CUarray h = NULL;
    CUS_IN_CONTEXT(mm->ctx, "cuMipmappedArrayGetLevel",
                   cus_drv_.cuMipmappedArrayGetLevel_(&h, mm->handle, level));
    cus_refcount_init_(&a->refs);
    a->handle = h;
    a->ctx = cus_context_ref(mm->ctx);
    a->parent = cus_mipmapped_array_ref(mm);
    a->desc = mm->desc;
    a->desc.Width = halved(mm->desc.Width, level);
    a->desc.Height = halved(mm->desc.Height, level);
    /* Layers are not halved. */
    if (!(mm->desc.Flags & CUDA_ARRAY3D_LAYERED))
        a->desc.Depth = halved(mm->desc.Depth, level);
    a->elem = cus_array_format_bytes(mm->desc.Format) * mm->desc.NumChannels;
    *out = cus_steal(&a);
    return CUS_SUCCESS;
}

CUS_API CUmipmappedArray cus_mipmapped_array_handle(const cus_mipmapped_array *mm)
{
    return mm ? mm->handle : NULL;
}

CUS_API unsigned int cus_mipmapped_array_levels(const cus_mipmapped_array *mm)
{
    return mm ? mm->levels : 0;
}
