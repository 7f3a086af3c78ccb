/* The bottom layer of the module image parser: the logs (error and info),
 * growing arrays and copying names, the INVALID_IMAGE error, and the test for
 * PTX text (used by the format detection and by the fatbin's PTX entries). */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image_internal.h"

/* --- logs ----------------------------------------------------------------------------------- */

void log_init(logbuf *l, char *buf, size_t size)
{
    l->buf = size ? buf : NULL;
    l->size = buf ? size : 0;
    l->len = 0;
    if (l->buf)
        l->buf[0] = '\0';
}

void log_clear(logbuf *l)
{
    l->len = 0;
    if (l->buf)
        l->buf[0] = '\0';
}

PRINTF_LIKE(2, 0) void log_vadd(logbuf *l, const char *fmt, va_list ap)
{
    if (!l->buf || l->len + 1 >= l->size)
        return;
    int n = vsnprintf(l->buf + l->len, l->size - l->len, fmt, ap);
    if (n < 0) {
        l->buf[l->len] = '\0';
        return;
    }
    size_t room = l->size - l->len - 1;
    l->len += (size_t)n < room ? (size_t)n : room;
}

PRINTF_LIKE(2, 3) void log_add(logbuf *l, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_vadd(l, fmt, ap);
    va_end(ap);
}

/* --- small helpers ---------------------------------------------------------------------------- */

/* Grows an array to hold `need` elements; NULL (the old one intact) on
 * overflow or OOM. */
void *grow(void *a, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return a;
    size_t c = *cap ? *cap : 8;
    while (c < need) {
        if (c > SIZE_MAX / 2)
            return NULL;
        c *= 2;
    }
    if (c > SIZE_MAX / elem)
        return NULL;
    void *p = realloc(a, c * elem);
    if (!p)
        return NULL;
    *cap = c;
    return p;
}

char *dup_n(const char *s, size_t n)
{
    if (n == SIZE_MAX)
        return NULL;
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

/* Appends to img a zeroed function named by the n bytes at name (*cap: the
 * capacity of img->functions); NULL on OOM, img->nfunctions unchanged. */
fake_image_function *image_add_function(fake_image *img, size_t *cap, const char *name, size_t n)
{
    fake_image_function *f = grow(img->functions, cap, img->nfunctions + 1, sizeof *f);
    if (!f)
        return NULL;
    img->functions = f;
    f = &img->functions[img->nfunctions];
    memset(f, 0, sizeof *f);
    if (!(f->name = dup_n(name, n)))
        return NULL;
    img->nfunctions++;
    return f;
}

/* Appends to img a global named by the n bytes at name, its initializer
 * zero-filled, adding its size to *bytes (the image's globals so far); NULL
 * on OOM, which is also what more than FAKE_IMAGE_MAX_GLOBAL_BYTES in all is,
 * img->nglobals unchanged. */
fake_image_global *image_add_global(fake_image *img, size_t *cap, uint64_t *bytes,
                                    const char *name, size_t n, uint64_t size, uint64_t align,
                                    bool constant)
{
    *bytes = sat_add(*bytes, size);
    if (*bytes > FAKE_IMAGE_MAX_GLOBAL_BYTES)
        return NULL;
    fake_image_global *g = grow(img->globals, cap, img->nglobals + 1, sizeof *g);
    if (!g)
        return NULL;
    img->globals = g;
    g = &img->globals[img->nglobals];
    *g = (fake_image_global){dup_n(name, n), (size_t)size, (size_t)align, constant,
                             calloc(size ? (size_t)size : 1, 1)};
    if (!g->name || !g->init) {
        free(g->name);
        free(g->init);
        return NULL;
    }
    img->nglobals++;
    return g;
}

PRINTF_LIKE(2, 3) CUresult bad_image(logbuf *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_vadd(err, fmt, ap);
    va_end(ap);
    log_add(err, "\n");
    return CUDA_ERROR_INVALID_IMAGE;
}

/* Whether bytes are text, as PTX must be: UTF-8 (in comments and strings)
 * without control characters other than white space. */
bool is_text(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = s[i];
        if (c < 0x80) {
            if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\v' && c != '\f') ||
                c == 0x7f)
                return false;
            continue;
        }
        size_t k = c >= 0xc2 && c <= 0xdf ? 1 : c >= 0xe0 && c <= 0xef ? 2 : c >= 0xf0 && c <= 0xf4 ? 3 : 0;
        if (k == 0 || n - i - 1 < k)
            return false;
        for (size_t j = 1; j <= k; j++)
            if ((s[i + j] & 0xc0) != 0x80)
                return false;
        i += k;
    }
    return true;
}

/* The length of the text at s: to its NUL, or size. */
size_t text_length(const unsigned char *s, size_t size)
{
    size_t n = 0;
    while (n < size && s[n])
        n++;
    return n;
}
