/* The parameter count of each kernel of an image, read from the image itself
 * (lib/image, the parser the fake driver loads modules with).
 *
 * Why: the driver has no call that gives a kernel's parameter count.
 * cuFuncGetParamInfo (and cuKernelGetParamInfo) answer one index at a time,
 * and asking one past the last is the only way to find the end: a correct
 * program then shows an API error under compute-sanitizer. With the count
 * from the image, the layout is read with exactly `count` calls. Where the
 * image cannot be read (a format or compression this build does not parse),
 * the caller falls back to asking past the end. */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fake_image.h"
#include "internal.h"

/* One allocation: the header, the entries, then the names. */
struct cus_param_counts_ {
    size_t n;
    struct cus_param_count_entry_ {
        const char *name;
        unsigned int nparams;
    } entries[]; /* sorted by name; the names follow the last */
};

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct cus_param_count_entry_ *)a)->name,
                  ((const struct cus_param_count_entry_ *)b)->name);
}

CUS_HIDDEN cus_param_counts_ *cus_param_counts_read_(const void *image, size_t size)
{
    fake_image *img = NULL;
    /* Any device will do: a kernel has the same parameters in every entry. */
    if (fake_image_parse(image, size, FAKE_IMAGE_ANY_DEVICE, &img, NULL, 0, NULL, 0))
        return NULL;
    size_t bytes = sizeof(cus_param_counts_), n = 0;
    for (size_t i = 0; i < img->nfunctions; i++) {
        if (img->functions[i].nparams <= INT_MAX) {
            bytes += sizeof(struct cus_param_count_entry_) + strlen(img->functions[i].name) + 1;
            n++;
        }
    }
    cus_param_counts_ *c = cus_malloc_(bytes);
    if (!c) {
        cus_host_alloc_absorbed_(); /* the layout is asked of the driver instead */
        fake_image_free(img);
        return NULL;
    }
    c->n = 0;
    char *p = (char *)&c->entries[n];
    for (size_t i = 0; i < img->nfunctions; i++) {
        const fake_image_function *f = &img->functions[i];
        if (f->nparams > INT_MAX)
            continue;
        size_t len = strlen(f->name) + 1;
        memcpy(p, f->name, len);
        c->entries[c->n++] = (struct cus_param_count_entry_){p, (unsigned int)f->nparams};
        p += len;
    }
    fake_image_free(img);
    qsort(c->entries, c->n, sizeof c->entries[0], by_name);
    return c;
}

CUS_HIDDEN int cus_param_counts_find_(const cus_param_counts_ *c, const char *name)
{
    if (!c || !name)
        return -1;
    struct cus_param_count_entry_ key = {name, 0};
    const struct cus_param_count_entry_ *e =
        bsearch(&key, c->entries, c->n, sizeof c->entries[0], by_name);
    return e ? (int)e->nparams : -1;
}

CUS_HIDDEN void cus_param_counts_free_(cus_param_counts_ *c)
{
    free(c);
}

CUS_HIDDEN CUresult cus_param_layout_read_(int declared, cus_param_info_fn_ info, void *handle,
                                           unsigned int *nparams, size_t **offsets,
                                           size_t **sizes, bool *out_of_memory)
{
    size_t cap = 0;
    *out_of_memory = false;
    for (unsigned int i = 0; declared < 0 || i < (unsigned int)declared; i++) {
        size_t off = 0, sz = 0;
        CUresult r = info(handle, i, &off, &sz);
        if (r == CUDA_ERROR_INVALID_VALUE)
            break; /* past the last; with `declared`, an image read wrong */
        if (r)
            return r;
        if (i == cap) {
            size_t want = cap ? cap * 2 : 8;
            size_t *o = cus_realloc_(*offsets, want * sizeof *o);
            if (o)
                *offsets = o;
            size_t *z = o ? cus_realloc_(*sizes, want * sizeof *z) : NULL;
            if (z)
                *sizes = z;
            if (!o || !z) {
                *out_of_memory = true;
                return CUDA_ERROR_OUT_OF_MEMORY;
            }
            cap = want;
        }
        (*offsets)[i] = off;
        (*sizes)[i] = sz;
        *nparams = i + 1;
    }
    return CUDA_SUCCESS;
}

CUS_HIDDEN cus_status cus_layout_mismatch_(const char *name, unsigned int nparams,
                                           const size_t *param_sizes, unsigned int nargs,
                                           const size_t *sizes, const char *function)
{
    if (nargs != nparams)
        return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL,
                         "%s: %u argument%s given, the kernel takes %u", name, nargs,
                         nargs == 1 ? "" : "s", nparams);
    for (unsigned int i = 0; i < nargs; i++)
        if (sizes[i] != param_sizes[i])
            return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL,
                             "%s: argument %u is %zu bytes, the kernel's parameter is %zu", name,
                             i + 1, sizes[i], param_sizes[i]);
    return CUS_SUCCESS;
}
