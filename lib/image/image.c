/* Module images (see fake_image.h): the format detection of
 * fake_image_parse, dispatching to ptx.c, elf.c and fatbin.c, and freeing and
 * searching a parsed image.
 *
 * Every read is bounded by `size`; nothing recurses on the input, so deep
 * nesting costs memory proportional to the input at most. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "image_internal.h"

void fake_image_free(fake_image *img)
{
    if (!img)
        return;
    for (size_t i = 0; i < img->nfunctions; i++) {
        free(img->functions[i].name);
        free(img->functions[i].params);
    }
    free(img->functions);
    for (size_t i = 0; i < img->nglobals; i++) {
        free(img->globals[i].name);
        free(img->globals[i].init);
    }
    free(img->globals);
    free(img);
}

const fake_image_function *fake_image_find_function(const fake_image *img, const char *name)
{
    if (!img || !name)
        return NULL;
    for (size_t i = 0; i < img->nfunctions; i++)
        if (strcmp(img->functions[i].name, name) == 0)
            return &img->functions[i];
    return NULL;
}

const fake_image_global *fake_image_find_global(const fake_image *img, const char *name)
{
    if (!img || !name)
        return NULL;
    for (size_t i = 0; i < img->nglobals; i++)
        if (strcmp(img->globals[i].name, name) == 0)
            return &img->globals[i];
    return NULL;
}

/* Whether the image starts with the 4 bytes of m, reading no further than a
 * mismatch (so never past the NUL of a short string). */
static bool magic_is(const unsigned char *b, size_t size, const unsigned char m[4])
{
    for (size_t i = 0; i < 4; i++)
        if (i >= size || b[i] != m[i])
            return false;
    return true;
}

CUresult fake_image_parse(const void *image, size_t size, unsigned device_cc, fake_image **out,
                          char *error_log, size_t error_log_size, char *info_log,
                          size_t info_log_size)
{
    logbuf err, info;
    log_init(&err, error_log, error_log_size);
    log_init(&info, info_log, info_log_size);
    if (!image || !out)
        return CUDA_ERROR_INVALID_VALUE;
    const unsigned char *b = image;
    static const unsigned char elf_magic[4] = {0x7f, 'E', 'L', 'F'};
    static const unsigned char fat_magic[4] = {0x50, 0xed, 0x55, 0xba};
    static const unsigned char wrap_magic[4] = {0xb1, 0x43, 0x62, 0x46};
    if (size == 0 || b[0] == 0)
        return bad_image(&err, "empty image");

    fake_image *img = calloc(1, sizeof *img);
    if (!img)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r;
    if (magic_is(b, size, elf_magic)) {
        r = parse_cubin(b, size, img, &err);
    } else if (magic_is(b, size, fat_magic)) {
        r = parse_fatbin(b, size, device_cc, img, &err, &info);
    } else if (magic_is(b, size, wrap_magic)) {
        /* {int magic, int version, const unsigned long long *data, void *}: the
         * pointer can only be trusted when the caller vouches for nothing */
        const unsigned char *data = NULL;
        if (size != SIZE_MAX) {
            r = bad_image(&err, "fatbin wrapper: not followed with a known image size");
        } else {
            memcpy(&data, b + 8, sizeof data);
            r = data && magic_is(data, SIZE_MAX, fat_magic)
                    ? parse_fatbin(data, SIZE_MAX, device_cc, img, &err, &info)
                    : bad_image(&err, "fatbin wrapper: no fatbin at its data pointer");
        }
    } else {
        size_t len = text_length(b, size);
        r = is_text(b, len) ? parse_ptx((const char *)b, len, device_cc, img, &err, &info)
                            : bad_image(&err, "not PTX, a cubin or a fatbin");
    }
    if (r != CUDA_SUCCESS) {
        fake_image_free(img);
        log_clear(&info);
        if (r == CUDA_ERROR_OUT_OF_MEMORY && err.len == 0)
            log_add(&err, "out of memory\n");
        return r;
    }
    log_clear(&err);
    *out = img;
    return CUDA_SUCCESS;
}
