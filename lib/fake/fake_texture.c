/* Texture and surface objects: cuTexObjectCreate, cuTexObjectDestroy,
 * cuTexObjectGetResourceDesc, cuSurfObjectCreate, cuSurfObjectDestroy; and
 * the texture fetch that host twins call (cus_fake_tex2d). Part of the array
 * area (fake_array.c has the arrays); a linear or pitch-2D resource is
 * checked against the memory area's blocks when made and at every fetch. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fake_array.h"
#include "fake_device.h"
#include "fake_memory_records.h"

typedef struct fake_tex {
    fake_handle h; /* TEXTURE or SURFACE */
    struct CUctx_st *ctx;
    CUDA_RESOURCE_DESC res;
    CUDA_TEXTURE_DESC tex; /* textures */
    fake_array *array;     /* an array resource, or level 0 of a mipmapped one */
    fake_mipmap *mipmap;
    bool ctx_destroyed;
    unsigned long doomed;
} fake_tex;

static fake_tex **objects;
static size_t object_count, object_capacity;

static void texture_reset_locked(const cus_fake_config *cfg)
{
    (void)cfg;
    free(objects); /* the registry frees the records */
    objects = NULL;
    object_count = object_capacity = 0;
}

static void texture_doom_locked(struct CUctx_st *c, unsigned long ticket)
{
    for (size_t i = 0; i < object_count; i++)
        if (objects[i]->ctx == c && objects[i]->h.state == FAKE_LIVE)
            objects[i]->doomed = ticket;
}

static void texture_destroy_doomed_locked(struct CUctx_st *c, unsigned long ticket)
{
    (void)c;
    for (size_t i = 0; i < object_count; i++) {
        if (objects[i]->doomed == ticket && objects[i]->h.state == FAKE_LIVE) {
            objects[i]->ctx_destroyed = true;
            fake_handle_set_state_locked(&objects[i]->h, FAKE_DESTROYED);
        }
    }
}

static const fake_area texture_area = {
    .name = "texture",
    .reset_order = 41,
    .teardown_order = 34, /* before the arrays they read */
    .reset_locked = texture_reset_locked,
    .doom_locked = texture_doom_locked,
    .destroy_doomed_locked = texture_destroy_doomed_locked,
};
FAKE_AREA(texture_area)

/* --- resources ------------------------------------------------------------------------------ */

static bool is_float_format(CUarray_format f)
{
    return f == CU_AD_FORMAT_FLOAT || f == CU_AD_FORMAT_HALF;
}

/* The resource of an object: its array, or its memory's range checked.
 * CUDA_ERROR_INVALID_VALUE (or the array's error). */
static CUresult resource_locked(const CUDA_RESOURCE_DESC *res, const struct CUctx_st *c,
                                bool surface, fake_tex *t)
{
    const int *at = fake_dev.devices[c->device].attributes;
    if (res->flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    switch ((int)res->resType) {
    case CU_RESOURCE_TYPE_ARRAY: {
        CUresult r = fake_array_arg_locked(res->res.array.hArray, "texture or surface resource",
                                           &t->array);
        if (r != CUDA_SUCCESS)
            return r;
        if (surface && !(t->array->desc.Flags & CUDA_ARRAY3D_SURFACE_LDST))
            return CUDA_ERROR_INVALID_VALUE;
        return CUDA_SUCCESS;
    }
    case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY: {
        if (surface)
            return CUDA_ERROR_INVALID_VALUE;
        CUresult r = fake_mipmap_arg_locked(res->res.mipmap.hMipmappedArray, "texture resource",
                                            &t->mipmap);
        if (r == CUDA_SUCCESS)
            t->array = t->mipmap->level[0];
        return r;
    }
    case CU_RESOURCE_TYPE_LINEAR: {
        size_t elem = fake_array_format_bytes(res->res.linear.format);
        unsigned int ch = res->res.linear.numChannels;
        if (surface || !elem || (ch != 1 && ch != 2 && ch != 4) || !res->res.linear.sizeInBytes)
            return CUDA_ERROR_INVALID_VALUE;
        /* The address is aligned to the texture alignment, as documented
         * (512 on Hopper), but for the fake's cuMemAlloc, which aligns to
         * only 256 where the driver's blocks are far more aligned: a
         * leniency (deliberate.txt), so that any buffer can be read. */
        CUdeviceptr align = (CUdeviceptr)at[CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT];
        if (align > 256)
            align = 256;
        if (align && res->res.linear.devPtr % align)
            return CUDA_ERROR_INVALID_VALUE;
        fake_mem *m = NULL;
        return fake_memory_range_locked(res->res.linear.devPtr, res->res.linear.sizeInBytes,
                                        SIDE_DEVICE, "linear texture memory", &m, NULL);
    }
    case CU_RESOURCE_TYPE_PITCH2D: {
        size_t elem = fake_array_format_bytes(res->res.pitch2D.format);
        unsigned int ch = res->res.pitch2D.numChannels;
        size_t w = res->res.pitch2D.width, h = res->res.pitch2D.height;
        size_t pitch = res->res.pitch2D.pitchInBytes;
        size_t palign = (size_t)at[CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT];
        if (surface || !elem || (ch != 1 && ch != 2 && ch != 4) || !w || !h)
            return CUDA_ERROR_INVALID_VALUE;
        /* The address and the pitch are multiples of the texture pitch
         * alignment, and a row fits the pitch (the documented rules; that
         * the address needs only the pitch alignment is unsure). */
        if (w > SIZE_MAX / (elem * ch) || w * elem * ch > pitch || (palign && pitch % palign) ||
            (palign && res->res.pitch2D.devPtr % palign) ||
            w > (size_t)at[CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_WIDTH] ||
            h > (size_t)at[CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_HEIGHT] ||
            h > SIZE_MAX / pitch)
            return CUDA_ERROR_INVALID_VALUE;
        fake_mem *m = NULL;
        return fake_memory_range_locked(res->res.pitch2D.devPtr, (h - 1) * pitch + w * elem * ch,
                                        SIDE_DEVICE, "pitch-2D texture memory", &m, NULL);
    }
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

static CUarray_format resource_format(const fake_tex *t)
{
    if (t->array)
        return t->array->desc.Format;
    return t->res.resType == CU_RESOURCE_TYPE_LINEAR ? t->res.res.linear.format
                                                     : t->res.res.pitch2D.format;
}

/* A texture descriptor's validity: known address, filter and mipmap filter
 * modes and flags; no linear filtering of what is read as integers (a
 * 32-bit integer format, or an integer one with READ_AS_INTEGER: unsure
 * whether the driver refuses at creation, as here, or only fetches wrong). */
static CUresult texture_desc_valid(const CUDA_TEXTURE_DESC *d, CUarray_format format)
{
    const unsigned int known = CU_TRSF_READ_AS_INTEGER | CU_TRSF_NORMALIZED_COORDINATES |
                               CU_TRSF_SRGB | CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION |
                               CU_TRSF_SEAMLESS_CUBEMAP;
    for (int i = 0; i < 3; i++)
        if ((unsigned int)d->addressMode[i] > CU_TR_ADDRESS_MODE_BORDER)
            return CUDA_ERROR_INVALID_VALUE;
    if ((unsigned int)d->filterMode > CU_TR_FILTER_MODE_LINEAR ||
        (unsigned int)d->mipmapFilterMode > CU_TR_FILTER_MODE_LINEAR || (d->flags & ~known))
        return CUDA_ERROR_INVALID_VALUE;
    bool int32 = format == CU_AD_FORMAT_UNSIGNED_INT32 || format == CU_AD_FORMAT_SIGNED_INT32;
    if (d->filterMode == CU_TR_FILTER_MODE_LINEAR &&
        (int32 || ((d->flags & CU_TRSF_READ_AS_INTEGER) && !is_float_format(format))))
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

static CUresult object_new_locked(cus_fake_handle_kind kind, const CUDA_RESOURCE_DESC *res,
                                  const CUDA_TEXTURE_DESC *tex, uintptr_t *out)
{
    struct CUctx_st *c = NULL;
    CUresult r = fake_current_context_locked(&c);
    if (r != CUDA_SUCCESS)
        return r;
    if (!out || !res || (kind == CUS_FAKE_HANDLE_TEXTURE && !tex))
        return CUDA_ERROR_INVALID_VALUE;
    fake_tex probe;
    memset(&probe, 0, sizeof probe);
    probe.res = *res;
    r = resource_locked(res, c, kind == CUS_FAKE_HANDLE_SURFACE, &probe);
    if (r == CUDA_SUCCESS && tex)
        r = texture_desc_valid(tex, resource_format(&probe));
    if (r != CUDA_SUCCESS)
        return r;
    if (object_count == object_capacity) {
        size_t n = object_capacity ? object_capacity * 2 : 16;
        fake_tex **p = realloc(objects, n * sizeof *p);
        if (!p)
            return CUDA_ERROR_OUT_OF_MEMORY;
        objects = p;
        object_capacity = n;
    }
    fake_tex *t = fake_handle_new_locked(kind, sizeof *t, 0);
    if (!t)
        return CUDA_ERROR_OUT_OF_MEMORY;
    t->ctx = c;
    t->res = *res;
    if (tex)
        t->tex = *tex;
    t->array = probe.array;
    t->mipmap = probe.mipmap;
    objects[object_count++] = t;
    *out = (uintptr_t)t;
    return CUDA_SUCCESS;
}

/* The live object of kind registered under h; else a misuse and NULL. */
static fake_tex *object_at_locked(uintptr_t h, cus_fake_handle_kind kind, const char *call)
{
    fake_handle *fh = h ? fake_handle_find_locked(h) : NULL;
    if (!fh || fh->kind != kind) {
        fake_misuse_locked("%s of 0x%" PRIxPTR ", which is not a %s", call, h,
                           fake_kind_noun(kind));
        return NULL;
    }
    if (fh->state != FAKE_LIVE) {
        fake_misuse_locked("%s of destroyed %s 0x%" PRIxPTR "%s", call, fake_kind_noun(kind), h,
                           ((fake_tex *)fh)->ctx_destroyed ? " (with its context)" : "");
        return NULL;
    }
    return (fake_tex *)fh;
}

/* --- entry points ---------------------------------------------------------------------------- */

CUresult CUDAAPI fake_cuTexObjectCreate(CUtexObject *pTexObject, const CUDA_RESOURCE_DESC *pResDesc,
                                        const CUDA_TEXTURE_DESC *pTexDesc,
                                        const CUDA_RESOURCE_VIEW_DESC *pResViewDesc)
{
    FAKE_ENTER(cuTexObjectCreate);
    /* A view only reinterprets an array's elements. */
    if (pResViewDesc && pResDesc && pResDesc->resType != CU_RESOURCE_TYPE_ARRAY &&
        pResDesc->resType != CU_RESOURCE_TYPE_MIPMAPPED_ARRAY)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    uintptr_t h = 0;
    CUresult r = object_new_locked(CUS_FAKE_HANDLE_TEXTURE, pResDesc, pTexDesc, pTexObject ? &h : NULL);
    if (r == CUDA_SUCCESS)
        *pTexObject = (CUtexObject)h;
    return fake_leave(r);
}

CUresult CUDAAPI fake_cuTexObjectDestroy(CUtexObject texObject)
{
    FAKE_ENTER(cuTexObjectDestroy);
    fake_tex *t = object_at_locked((uintptr_t)texObject, CUS_FAKE_HANDLE_TEXTURE,
                                   "cuTexObjectDestroy");
    if (!t)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    fake_handle_set_state_locked(&t->h, FAKE_DESTROYED);
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuTexObjectGetResourceDesc(CUDA_RESOURCE_DESC *pResDesc, CUtexObject texObject)
{
    FAKE_ENTER(cuTexObjectGetResourceDesc);
    if (!pResDesc)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    fake_tex *t = object_at_locked((uintptr_t)texObject, CUS_FAKE_HANDLE_TEXTURE,
                                   "cuTexObjectGetResourceDesc");
    if (!t)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    *pResDesc = t->res;
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuSurfObjectCreate(CUsurfObject *pSurfObject, const CUDA_RESOURCE_DESC *pResDesc)
{
    FAKE_ENTER(cuSurfObjectCreate);
    uintptr_t h = 0;
    CUresult r = object_new_locked(CUS_FAKE_HANDLE_SURFACE, pResDesc, NULL, pSurfObject ? &h : NULL);
    if (r == CUDA_SUCCESS)
        *pSurfObject = (CUsurfObject)h;
    return fake_leave(r);
}

CUresult CUDAAPI fake_cuSurfObjectDestroy(CUsurfObject surfObject)
{
    FAKE_ENTER(cuSurfObjectDestroy);
    fake_tex *t = object_at_locked((uintptr_t)surfObject, CUS_FAKE_HANDLE_SURFACE,
                                   "cuSurfObjectDestroy");
    if (!t)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    fake_handle_set_state_locked(&t->h, FAKE_DESTROYED);
    return fake_leave(CUDA_SUCCESS);
}

/* --- fetches for host twins ------------------------------------------------------------------- */

/* Without libm (the fake links none): floor of a float in texel range, and
 * 2^e scaling by multiplication. */
static float floor_f(float v)
{
    if (!(v > -9.0e15f && v < 9.0e15f))
        return v;
    float t = (float)(long long)v;
    return t > v ? t - 1.0f : t;
}

static float scale2(float m, int e)
{
    for (; e > 0; e--)
        m *= 2.0f;
    for (; e < 0; e++)
        m *= 0.5f;
    return m;
}

/* What a fetch reads: rows of texels. */
typedef struct texels {
    const unsigned char *base;
    size_t width, height, pitch, elem;
    CUarray_format format;
    unsigned int channels;
} texels;

static float half_to_float(uint16_t h)
{
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    float v = e == 0 ? scale2((float)m, -24) : e == 31 ? (m ? NAN : INFINITY)
                                                       : scale2((float)(m | 0x400), e - 25);
    return (h & 0x8000) ? -v : v;
}

/* Channel c of the texel at (i, j), in the read mode. */
static float channel(const texels *t, size_t i, size_t j, unsigned int c, bool as_integer)
{
    const unsigned char *p = t->base + j * t->pitch + i * t->elem +
                             c * fake_array_format_bytes(t->format);
    switch ((int)t->format) {
    case CU_AD_FORMAT_FLOAT: {
        float v;
        memcpy(&v, p, 4);
        return v;
    }
    case CU_AD_FORMAT_HALF: {
        uint16_t v;
        memcpy(&v, p, 2);
        return half_to_float(v);
    }
    case CU_AD_FORMAT_UNSIGNED_INT8:
        return as_integer ? (float)p[0] : (float)p[0] / 255.0f;
    case CU_AD_FORMAT_UNORM_INT8X1:
        return (float)p[0] / 255.0f;
    case CU_AD_FORMAT_SIGNED_INT8:
    case CU_AD_FORMAT_SNORM_INT8X1: {
        float v = (float)(signed char)p[0];
        if (as_integer && t->format == CU_AD_FORMAT_SIGNED_INT8)
            return v;
        return v / 127.0f < -1.0f ? -1.0f : v / 127.0f;
    }
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_UNORM_INT16X1: {
        uint16_t v;
        memcpy(&v, p, 2);
        return as_integer && t->format == CU_AD_FORMAT_UNSIGNED_INT16 ? (float)v
                                                                       : (float)v / 65535.0f;
    }
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_SNORM_INT16X1: {
        int16_t v;
        memcpy(&v, p, 2);
        if (as_integer && t->format == CU_AD_FORMAT_SIGNED_INT16)
            return (float)v;
        return (float)v / 32767.0f < -1.0f ? -1.0f : (float)v / 32767.0f;
    }
    case CU_AD_FORMAT_UNSIGNED_INT32: {
        uint32_t v;
        memcpy(&v, p, 4);
        return (float)v;
    }
    case CU_AD_FORMAT_SIGNED_INT32: {
        int32_t v;
        memcpy(&v, p, 4);
        return (float)v;
    }
    default:
        return 0;
    }
}

/* An index along an axis of n texels by the address mode; false: outside
 * (border). Wrap and mirror need normalized coordinates (else clamp). */
static bool address(long long i, size_t n, CUaddress_mode mode, bool normalized, size_t *out)
{
    long long len = (long long)n;
    if (!normalized && (mode == CU_TR_ADDRESS_MODE_WRAP || mode == CU_TR_ADDRESS_MODE_MIRROR))
        mode = CU_TR_ADDRESS_MODE_CLAMP;
    switch ((int)mode) {
    case CU_TR_ADDRESS_MODE_WRAP:
        i %= len;
        if (i < 0)
            i += len;
        break;
    case CU_TR_ADDRESS_MODE_MIRROR:
        i %= 2 * len;
        if (i < 0)
            i += 2 * len;
        if (i >= len)
            i = 2 * len - 1 - i;
        break;
    case CU_TR_ADDRESS_MODE_BORDER:
        if (i < 0 || i >= len)
            return false;
        break;
    default: /* clamp */
        i = i < 0 ? 0 : i >= len ? len - 1 : i;
        break;
    }
    *out = (size_t)i;
    return true;
}

static void texel(const texels *t, const CUDA_TEXTURE_DESC *d, long long i, long long j,
                  float out[4])
{
    bool normalized = d->flags & CU_TRSF_NORMALIZED_COORDINATES;
    bool as_integer = d->flags & CU_TRSF_READ_AS_INTEGER;
    size_t x, y;
    if (!address(i, t->width, d->addressMode[0], normalized, &x) ||
        !address(j, t->height, d->addressMode[1], normalized, &y)) {
        memcpy(out, d->borderColor, sizeof(float) * 4);
        return;
    }
    for (unsigned int c = 0; c < 4; c++)
        out[c] = c < t->channels ? channel(t, x, y, c, as_integer) : c == 3 ? 1.0f : 0.0f;
}

static void fetch(const texels *t, const CUDA_TEXTURE_DESC *d, float x, float y, float out[4])
{
    float u = x, v = y;
    if (d->flags & CU_TRSF_NORMALIZED_COORDINATES) {
        u = x * (float)t->width;
        v = y * (float)t->height;
    }
    if (d->filterMode != CU_TR_FILTER_MODE_LINEAR) {
        texel(t, d, (long long)floor_f(u), (long long)floor_f(v), out);
        return;
    }
    /* The device's bilinear filter: weights with 8 fractional bits. */
    float xb = u - 0.5f, yb = v - 0.5f;
    float fi = floor_f(xb), fj = floor_f(yb);
    float a = floor_f((xb - fi) * 256.0f + 0.5f) / 256.0f, b = floor_f((yb - fj) * 256.0f + 0.5f) / 256.0f;
    long long i = (long long)fi, j = (long long)fj;
    float t00[4], t10[4], t01[4], t11[4];
    texel(t, d, i, j, t00);
    texel(t, d, i + 1, j, t10);
    texel(t, d, i, j + 1, t01);
    texel(t, d, i + 1, j + 1, t11);
    for (int c = 0; c < 4; c++)
        out[c] = (1 - a) * (1 - b) * t00[c] + a * (1 - b) * t10[c] + (1 - a) * b * t01[c] +
                 a * b * t11[c];
}

CUS_API bool cus_fake_tex2d(CUtexObject tex, float x, float y, float out[4])
{
    memset(out, 0, sizeof(float) * 4);
    fake_lock();
    fake_ensure_configured_locked();
    fake_tex *t = object_at_locked((uintptr_t)tex, CUS_FAKE_HANDLE_TEXTURE, "a texture fetch");
    texels s;
    memset(&s, 0, sizeof s);
    bool ok = t != NULL;
    if (ok && t->array) {
        if (!fake_array_live(t->array)) {
            fake_misuse_locked("a texture fetch from texture 0x%" PRIxPTR
                               ", whose array was destroyed",
                               (uintptr_t)tex);
            ok = false;
        } else {
            s.base = (const unsigned char *)t->array->base;
            s.width = t->array->desc.Width;
            s.height = t->array->rows;
            s.pitch = t->array->row_bytes;
            s.format = t->array->desc.Format;
            s.channels = t->array->desc.NumChannels;
        }
    } else if (ok) {
        fake_mem *m = NULL;
        bool linear = t->res.resType == CU_RESOURCE_TYPE_LINEAR;
        CUdeviceptr p = linear ? t->res.res.linear.devPtr : t->res.res.pitch2D.devPtr;
        s.format = linear ? t->res.res.linear.format : t->res.res.pitch2D.format;
        s.channels = linear ? t->res.res.linear.numChannels : t->res.res.pitch2D.numChannels;
        size_t elem = fake_array_format_bytes(s.format) * s.channels;
        s.width = linear ? t->res.res.linear.sizeInBytes / elem : t->res.res.pitch2D.width;
        s.height = linear ? 1 : t->res.res.pitch2D.height;
        s.pitch = linear ? t->res.res.linear.sizeInBytes : t->res.res.pitch2D.pitchInBytes;
        size_t span = (s.height - 1) * s.pitch + s.width * elem;
        ok = fake_memory_range_locked(p, span, SIDE_DEVICE, "texture fetch memory", &m, NULL) ==
             CUDA_SUCCESS;
        s.base = (const unsigned char *)(uintptr_t)p;
    }
    if (ok) {
        s.elem = fake_array_format_bytes(s.format) * s.channels;
        fetch(&s, &t->tex, x, s.height == 1 && t->res.resType == CU_RESOURCE_TYPE_LINEAR ? 0 : y,
              out);
    }
    fake_unlock();
    return ok;
}

CUS_API float cus_fake_tex2d_float(CUtexObject tex, float x, float y)
{
    float v[4];
    (void)cus_fake_tex2d(tex, x, y, v);
    return v[0];
}
