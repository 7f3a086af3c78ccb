/* The array area: cuArrayCreate, cuArray3DCreate, cuArrayDestroy,
 * cuArray3DGetDescriptor, cuMipmappedArrayCreate, cuMipmappedArrayGetLevel,
 * cuMipmappedArrayDestroy. An array's elements are a block of device memory
 * of Width * elem bytes per row, rows after rows, slices after slices, which
 * the 2D and 3D copies (fake_memory_2d.c) and the texture fetches
 * (fake_texture.c) address; destroyed with the array, its context or the
 * next install. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "fake_array.h"
#include "fake_device.h"

static fake_array **arrays; /* every array made since install, levels too */
static size_t array_count, array_capacity;
static fake_mipmap **mipmaps;
static size_t mipmap_count, mipmap_capacity;

static void array_reset_locked(const cus_fake_config *cfg)
{
    (void)cfg;
    /* The storage blocks are fake_memory.c's, freed by its reset; the
     * records are the registry's, but for the levels' tables. */
    for (size_t i = 0; i < mipmap_count; i++)
        free(mipmaps[i]->level);
    free(arrays);
    arrays = NULL;
    array_count = array_capacity = 0;
    free(mipmaps);
    mipmaps = NULL;
    mipmap_count = mipmap_capacity = 0;
}

static bool grow(void ***list, size_t count, size_t *capacity)
{
    if (count < *capacity)
        return true;
    size_t n = *capacity ? *capacity * 2 : 16;
    void **p = realloc(*list, n * sizeof *p);
    if (!p)
        return false;
    *list = p;
    *capacity = n;
    return true;
}

size_t fake_array_format_bytes(CUarray_format format)
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

/* The driver's rules for a descriptor, against the device's limits: a known
 * format and 1, 2 or 4 channels, a non-zero width, a height with any depth,
 * the flags it knows, extents within the texture (or surface) maxima of the
 * array's shape. CUDA_ERROR_INVALID_VALUE otherwise. */
static CUresult check_desc_locked(const CUDA_ARRAY3D_DESCRIPTOR *d, const struct CUctx_st *c,
                                  bool three_d)
{
    const unsigned int known = CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_SURFACE_LDST |
                               CUDA_ARRAY3D_CUBEMAP | CUDA_ARRAY3D_TEXTURE_GATHER;
    if (!fake_array_format_bytes(d->Format) ||
        (d->NumChannels != 1 && d->NumChannels != 2 && d->NumChannels != 4))
        return CUDA_ERROR_INVALID_VALUE;
    if (d->Width == 0 || (d->Height == 0 && d->Depth != 0) || (d->Flags & ~known))
        return CUDA_ERROR_INVALID_VALUE;
    if ((d->Flags & CUDA_ARRAY3D_CUBEMAP) &&
        (d->Width != d->Height || (d->Flags & CUDA_ARRAY3D_LAYERED ? d->Depth % 6 : d->Depth != 6)))
        return CUDA_ERROR_INVALID_VALUE;
    const int *at = fake_dev.devices[c->device].attributes;
#define MAX_(name) ((size_t)at[CU_DEVICE_ATTRIBUTE_##name])
    bool surf = d->Flags & CUDA_ARRAY3D_SURFACE_LDST;
    bool layered = d->Flags & CUDA_ARRAY3D_LAYERED;
    size_t w = d->Width, h = d->Height, z = d->Depth;
    bool ok;
    if (layered && h == 0)
        ok = w <= MAX_(MAXIMUM_TEXTURE1D_LAYERED_WIDTH) && z <= MAX_(MAXIMUM_TEXTURE1D_LAYERED_LAYERS);
    else if (layered)
        ok = w <= MAX_(MAXIMUM_TEXTURE2D_LAYERED_WIDTH) &&
             h <= MAX_(MAXIMUM_TEXTURE2D_LAYERED_HEIGHT) &&
             z <= MAX_(MAXIMUM_TEXTURE2D_LAYERED_LAYERS);
    else if (z)
        ok = w <= MAX_(MAXIMUM_TEXTURE3D_WIDTH) && h <= MAX_(MAXIMUM_TEXTURE3D_HEIGHT) &&
             z <= MAX_(MAXIMUM_TEXTURE3D_DEPTH);
    else if (h)
        ok = w <= (surf ? MAX_(MAXIMUM_SURFACE2D_WIDTH) : MAX_(MAXIMUM_TEXTURE2D_WIDTH)) &&
             h <= (surf ? MAX_(MAXIMUM_SURFACE2D_HEIGHT) : MAX_(MAXIMUM_TEXTURE2D_HEIGHT));
    else
        ok = w <= (surf ? MAX_(MAXIMUM_SURFACE1D_WIDTH) : MAX_(MAXIMUM_TEXTURE1D_WIDTH));
#undef MAX_
    (void)three_d;
    return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* A new array record of c (not yet registered as live when level), with its
 * zeroed storage. */
static CUresult array_new_locked(struct CUctx_st *c, const CUDA_ARRAY3D_DESCRIPTOR *d,
                                 fake_mipmap *parent, fake_array **out)
{
    if (!grow((void ***)&arrays, array_count, &array_capacity))
        return CUDA_ERROR_OUT_OF_MEMORY;
    size_t elem = fake_array_format_bytes(d->Format) * d->NumChannels;
    size_t rows = d->Height ? d->Height : 1, slices = d->Depth ? d->Depth : 1, bytes;
    if (__builtin_mul_overflow(d->Width, elem, &bytes) ||
        __builtin_mul_overflow(bytes, rows, &bytes) ||
        __builtin_mul_overflow(bytes, slices, &bytes))
        return CUDA_ERROR_OUT_OF_MEMORY;
    fake_mem *store = NULL;
    CUresult r = fake_memory_global_new_locked(c, bytes, &store);
    if (r != CUDA_SUCCESS)
        return r;
    fake_array *a = fake_handle_new_locked(CUS_FAKE_HANDLE_ARRAY, sizeof *a, 0);
    if (!a) {
        fake_memory_global_release_locked(store, false);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (parent) /* a level is part of its mipmapped array: not a live array of its own */
        fake_handle_set_state_locked(&a->h, FAKE_INACTIVE);
    a->ctx = c;
    a->desc = *d;
    a->elem = elem;
    a->row_bytes = d->Width * elem;
    a->rows = rows;
    a->slices = slices;
    a->store = store;
    a->base = (uintptr_t)fake_memory_global_base(store);
    a->parent = parent;
    arrays[array_count++] = a;
    *out = a;
    return CUDA_SUCCESS;
}

static void array_free_locked(fake_array *a, bool with_context)
{
    a->ctx_destroyed = with_context;
    fake_memory_global_release_locked(a->store, with_context);
    fake_handle_set_state_locked(&a->h, FAKE_DESTROYED);
}

bool fake_array_live(const fake_array *a)
{
    return a->parent ? a->parent->h.state == FAKE_LIVE : a->h.state == FAKE_LIVE;
}

CUresult fake_array_arg_locked(CUarray ha, const char *what, fake_array **out)
{
    if (!ha)
        return CUDA_ERROR_INVALID_VALUE;
    fake_handle *h = fake_handle_find_locked((uintptr_t)ha);
    if (!h || h->kind != CUS_FAKE_HANDLE_ARRAY) {
        fake_misuse_locked("%s 0x%" PRIxPTR " is not an array", what, (uintptr_t)ha);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    fake_array *a = (fake_array *)h;
    if (!fake_array_live(a)) {
        fake_misuse_locked("%s 0x%" PRIxPTR " is a destroyed array%s", what, (uintptr_t)ha,
                           a->ctx_destroyed ? " (with its context)" : "");
        return a->ctx_destroyed ? CUDA_ERROR_CONTEXT_IS_DESTROYED : CUDA_ERROR_INVALID_HANDLE;
    }
    *out = a;
    return CUDA_SUCCESS;
}

CUresult fake_mipmap_arg_locked(CUmipmappedArray hm, const char *what, fake_mipmap **out)
{
    if (!hm)
        return CUDA_ERROR_INVALID_VALUE;
    fake_handle *h = fake_handle_find_locked((uintptr_t)hm);
    if (!h || h->kind != CUS_FAKE_HANDLE_MIPMAPPED_ARRAY) {
        fake_misuse_locked("%s 0x%" PRIxPTR " is not a mipmapped array", what, (uintptr_t)hm);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    fake_mipmap *m = (fake_mipmap *)h;
    if (h->state != FAKE_LIVE) {
        fake_misuse_locked("%s 0x%" PRIxPTR " is a destroyed mipmapped array%s", what,
                           (uintptr_t)hm, m->ctx_destroyed ? " (with its context)" : "");
        return m->ctx_destroyed ? CUDA_ERROR_CONTEXT_IS_DESTROYED : CUDA_ERROR_INVALID_HANDLE;
    }
    *out = m;
    return CUDA_SUCCESS;
}

/* --- teardown with a context --------------------------------------------------------- */

static void array_doom_locked(struct CUctx_st *c, unsigned long ticket)
{
    for (size_t i = 0; i < array_count; i++)
        if (arrays[i]->ctx == c && arrays[i]->h.state == FAKE_LIVE && !arrays[i]->parent)
            arrays[i]->doomed = ticket;
    for (size_t i = 0; i < mipmap_count; i++)
        if (mipmaps[i]->ctx == c && mipmaps[i]->h.state == FAKE_LIVE)
            mipmaps[i]->doomed = ticket;
}

static void mipmap_free_locked(fake_mipmap *m, bool with_context)
{
    m->ctx_destroyed = with_context;
    for (unsigned int l = 0; l < m->levels; l++) {
        m->level[l]->ctx_destroyed = with_context;
        fake_memory_global_release_locked(m->level[l]->store, with_context);
    }
    fake_handle_set_state_locked(&m->h, FAKE_DESTROYED);
}

static void array_destroy_doomed_locked(struct CUctx_st *c, unsigned long ticket)
{
    (void)c;
    for (size_t i = 0; i < array_count; i++)
        if (arrays[i]->doomed == ticket && arrays[i]->h.state == FAKE_LIVE)
            array_free_locked(arrays[i], true);
    for (size_t i = 0; i < mipmap_count; i++)
        if (mipmaps[i]->doomed == ticket && mipmaps[i]->h.state == FAKE_LIVE)
            mipmap_free_locked(mipmaps[i], true);
}

static const fake_area array_area = {
    .name = "array",
    .reset_order = 40,
    .teardown_order = 35,
    .reset_locked = array_reset_locked,
    .doom_locked = array_doom_locked,
    .destroy_doomed_locked = array_destroy_doomed_locked,
};
FAKE_AREA(array_area)

/* --- entry points ---------------------------------------------------------------------- */

static CUresult create_locked(CUarray *out, const CUDA_ARRAY3D_DESCRIPTOR *d)
{
    struct CUctx_st *c = NULL;
    CUresult r = fake_current_context_locked(&c);
    if (r != CUDA_SUCCESS)
        return r;
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    r = check_desc_locked(d, c, true);
    if (r != CUDA_SUCCESS)
        return r;
    fake_array *a = NULL;
    r = array_new_locked(c, d, NULL, &a);
    if (r == CUDA_SUCCESS)
        *out = (CUarray)a;
    return r;
}

CUresult CUDAAPI fake_cuArrayCreate(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray)
{
    FAKE_ENTER(cuArrayCreate);
    if (!pAllocateArray)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    CUDA_ARRAY3D_DESCRIPTOR d = {.Width = pAllocateArray->Width,
                                 .Height = pAllocateArray->Height,
                                 .Format = pAllocateArray->Format,
                                 .NumChannels = pAllocateArray->NumChannels};
    return fake_leave(create_locked(pHandle, &d));
}

CUresult CUDAAPI fake_cuArray3DCreate(CUarray *pHandle,
                                      const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray)
{
    FAKE_ENTER(cuArray3DCreate);
    if (!pAllocateArray)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    return fake_leave(create_locked(pHandle, pAllocateArray));
}

CUresult CUDAAPI fake_cuArrayDestroy(CUarray hArray)
{
    FAKE_ENTER(cuArrayDestroy);
    fake_array *a = NULL;
    CUresult r = fake_array_arg_locked(hArray, "cuArrayDestroy of", &a);
    if (r != CUDA_SUCCESS)
        return fake_leave(r == CUDA_ERROR_INVALID_VALUE ? CUDA_ERROR_INVALID_HANDLE : r);
    if (a->parent) {
        /* The driver frees levels with their mipmapped array. */
        fake_misuse_locked("cuArrayDestroy of level array 0x%" PRIxPTR
                           " of a mipmapped array (freed by cuMipmappedArrayDestroy)",
                           (uintptr_t)hArray);
        return fake_leave(CUDA_ERROR_INVALID_HANDLE);
    }
    if (a->ctx->sticky != CUDA_SUCCESS)
        return fake_leave(a->ctx->sticky);
    /* The work queued on the array's context (copies into it) runs first. */
    fake_context_synchronize_locked(a->ctx);
    if (a->h.state != FAKE_LIVE) /* destroyed meanwhile by another thread */
        return fake_leave(CUDA_ERROR_INVALID_HANDLE);
    array_free_locked(a, false);
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuArray3DGetDescriptor(CUDA_ARRAY3D_DESCRIPTOR *pArrayDescriptor,
                                             CUarray hArray)
{
    FAKE_ENTER(cuArray3DGetDescriptor);
    if (!pArrayDescriptor)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    fake_array *a = NULL;
    CUresult r = fake_array_arg_locked(hArray, "cuArray3DGetDescriptor of", &a);
    if (r != CUDA_SUCCESS)
        return fake_leave(r == CUDA_ERROR_INVALID_VALUE ? CUDA_ERROR_INVALID_HANDLE : r);
    *pArrayDescriptor = a->desc;
    return fake_leave(CUDA_SUCCESS);
}

static size_t halved(size_t e, unsigned int level)
{
    if (e == 0)
        return 0;
    e = level >= sizeof(size_t) * 8 ? 0 : e >> level;
    return e ? e : 1;
}

CUresult CUDAAPI fake_cuMipmappedArrayCreate(CUmipmappedArray *pHandle,
                                             const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc,
                                             unsigned int numMipmapLevels)
{
    FAKE_ENTER(cuMipmappedArrayCreate);
    struct CUctx_st *c = NULL;
    CUresult cr = fake_current_context_locked(&c);
    if (cr != CUDA_SUCCESS)
        return fake_leave(cr);
    const CUDA_ARRAY3D_DESCRIPTOR *d = pMipmappedArrayDesc;
    if (!pHandle || !d || numMipmapLevels == 0)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    CUresult r = check_desc_locked(d, c, true);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    /* No more levels than halving the largest extent down to 1 gives. */
    size_t largest = d->Width > d->Height ? d->Width : d->Height;
    if (!(d->Flags & CUDA_ARRAY3D_LAYERED) && d->Depth > largest)
        largest = d->Depth;
    unsigned int most = 1;
    while (largest >>= 1)
        most++;
    if (numMipmapLevels > most)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    if (!grow((void ***)&mipmaps, mipmap_count, &mipmap_capacity))
        return fake_leave(CUDA_ERROR_OUT_OF_MEMORY);
    fake_array **levels = calloc(numMipmapLevels, sizeof *levels);
    fake_mipmap *m = levels ? fake_handle_new_locked(CUS_FAKE_HANDLE_MIPMAPPED_ARRAY, sizeof *m, 0)
                            : NULL;
    if (!m) {
        free(levels);
        return fake_leave(CUDA_ERROR_OUT_OF_MEMORY);
    }
    m->ctx = c;
    m->desc = *d;
    m->level = levels;
    mipmaps[mipmap_count++] = m;
    for (unsigned int l = 0; l < numMipmapLevels; l++) {
        CUDA_ARRAY3D_DESCRIPTOR ld = *d;
        ld.Width = halved(d->Width, l);
        ld.Height = halved(d->Height, l);
        if (!(d->Flags & CUDA_ARRAY3D_LAYERED))
            ld.Depth = halved(d->Depth, l);
        r = array_new_locked(c, &ld, m, &levels[l]);
        if (r != CUDA_SUCCESS) {
            mipmap_free_locked(m, false);
            return fake_leave(r);
        }
        m->levels = l + 1;
    }
    *pHandle = (CUmipmappedArray)m;
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuMipmappedArrayGetLevel(CUarray *pLevelArray,
                                               CUmipmappedArray hMipmappedArray,
                                               unsigned int level)
{
    FAKE_ENTER(cuMipmappedArrayGetLevel);
    if (!pLevelArray)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    fake_mipmap *m = NULL;
    CUresult r = fake_mipmap_arg_locked(hMipmappedArray, "cuMipmappedArrayGetLevel of", &m);
    if (r != CUDA_SUCCESS)
        return fake_leave(r == CUDA_ERROR_INVALID_VALUE ? CUDA_ERROR_INVALID_HANDLE : r);
    if (level >= m->levels)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    *pLevelArray = (CUarray)m->level[level];
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray)
{
    FAKE_ENTER(cuMipmappedArrayDestroy);
    fake_mipmap *m = NULL;
    CUresult r = fake_mipmap_arg_locked(hMipmappedArray, "cuMipmappedArrayDestroy of", &m);
    if (r != CUDA_SUCCESS)
        return fake_leave(r == CUDA_ERROR_INVALID_VALUE ? CUDA_ERROR_INVALID_HANDLE : r);
    if (m->ctx->sticky != CUDA_SUCCESS)
        return fake_leave(m->ctx->sticky);
    fake_context_synchronize_locked(m->ctx);
    if (m->h.state != FAKE_LIVE)
        return fake_leave(CUDA_ERROR_INVALID_HANDLE);
    mipmap_free_locked(m, false);
    return fake_leave(CUDA_SUCCESS);
}
