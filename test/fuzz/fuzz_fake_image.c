/* Fuzzes the fake driver's module image parser (lib/image/,
 * compiled in as for test_fake_image: the fake library hides its symbols)
 * through every entry point of fake_image.h: fake_image_parse (PTX, cubin,
 * fatbin, the wrapper), fake_image_find_function, fake_image_find_global and
 * fake_image_free, and reads all of a parsed image (the layouts, the
 * globals' initializers), so that AddressSanitizer checks their bounds.
 *
 * Invariants: on failure *out is untouched; logs are NUL-terminated in their
 * size, and a smaller (or no) log buffer changes neither the result nor the
 * prefix of the message; every function and global can be found by its name;
 * parameters lie within param_bytes; a function's lookup is CUDA_SUCCESS
 * unless the image is relocatable; the image gives the same
 * result with its size known and, where it is text with a NUL, with
 * SIZE_MAX (unknown). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_image.h"
#include "fuzz_main.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

static volatile unsigned char sink;

static void walk(const fake_image *img)
{
    FUZZ_CHECK(img->format == FAKE_IMAGE_PTX || img->format == FAKE_IMAGE_CUBIN ||
               img->format == FAKE_IMAGE_FATBIN);
    FUZZ_CHECK(img->code == FAKE_IMAGE_PTX || img->code == FAKE_IMAGE_CUBIN);
    FUZZ_CHECK(img->format == FAKE_IMAGE_FATBIN || img->code == img->format);
    FUZZ_CHECK(memchr(img->target, 0, sizeof img->target) != NULL);
    FUZZ_CHECK(img->nfunctions == 0 || img->functions != NULL);
    FUZZ_CHECK(img->nglobals == 0 || img->globals != NULL);
    for (size_t i = 0; i < img->nfunctions; i++) {
        const fake_image_function *f = &img->functions[i];
        FUZZ_CHECK(f->name != NULL);
        const fake_image_function *found = fake_image_find_function(img, f->name);
        FUZZ_CHECK(found != NULL && strcmp(found->name, f->name) == 0);
        FUZZ_CHECK(f->nparams == 0 || f->params != NULL);
        FUZZ_CHECK(f->lookup == CUDA_SUCCESS ||
                   (img->relocatable && (f->lookup == CUDA_ERROR_INVALID_IMAGE ||
                                         f->lookup == CUDA_ERROR_NOT_FOUND)));
        /* within param_bytes (a cubin's .nv.info may list them in any order) */
        for (size_t j = 0; j < f->nparams; j++) {
            const fake_image_param *p = &f->params[j];
            FUZZ_CHECK(p->size <= SIZE_MAX - p->offset);
            FUZZ_CHECK(p->offset + p->size <= f->param_bytes);
        }
        sink ^= (unsigned char)(f->max_threads + f->reqntid[0] + f->reqntid[1] + f->reqntid[2] +
                                f->static_shared);
    }
    for (size_t i = 0; i < img->nglobals; i++) {
        const fake_image_global *g = &img->globals[i];
        FUZZ_CHECK(g->name != NULL);
        const fake_image_global *found = fake_image_find_global(img, g->name);
        FUZZ_CHECK(found != NULL && strcmp(found->name, g->name) == 0);
        FUZZ_CHECK(g->size <= FAKE_IMAGE_MAX_GLOBAL_BYTES);
        if (g->size) {
            FUZZ_CHECK(g->init != NULL);
            sink ^= g->init[0];
            sink ^= g->init[g->size - 1];
        }
        sink ^= (unsigned char)(g->align + g->constant);
    }
    FUZZ_CHECK(fake_image_find_function(img, NULL) == NULL);
    FUZZ_CHECK(fake_image_find_global(img, NULL) == NULL);
    (void)fake_image_find_function(img, "");
    (void)fake_image_find_global(img, "");
}

static fake_image untouched_sentinel;

/* The device an input is parsed for (the same for all its parses): mostly
 * the H200's 9.0, else others that fatbins choose differently for. */
static unsigned device_cc;

/* One parse. *img receives the image on success (else NULL). */
static CUresult parse(const uint8_t *data, size_t size, fake_image **img, char *err,
                      size_t err_size, char *info, size_t info_size)
{
    fake_image *out = &untouched_sentinel;
    CUresult r = fake_image_parse(data, size, device_cc, &out, err, err_size, info, info_size);
    if (err && err_size)
        FUZZ_CHECK(memchr(err, 0, err_size) != NULL);
    if (info && info_size)
        FUZZ_CHECK(memchr(info, 0, info_size) != NULL);
    if (r != CUDA_SUCCESS) {
        FUZZ_CHECK(out == &untouched_sentinel);
        FUZZ_CHECK(!err || !err_size || err[0] != 0 || r == CUDA_ERROR_OUT_OF_MEMORY);
        FUZZ_CHECK(!info || !info_size || info[0] == 0);
        *img = NULL;
    } else {
        FUZZ_CHECK(out != NULL && out != &untouched_sentinel);
        FUZZ_CHECK(!err || !err_size || err[0] == 0);
        *img = out;
    }
    return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const unsigned ccs[] = {90, 90, 90, 80, 86, 89, 100, 103, 120, 0};
    device_cc = ccs[size % (sizeof ccs / sizeof *ccs)];
    static char err[4096], info[8192];
    fake_image *img;
    CUresult r = parse(data, size, &img, err, sizeof err, info, sizeof info);
    if (img)
        walk(img);

    /* short logs, or none: the same result, a prefix of the message */
    char err2[8], info2[3];
    fake_image *img2;
    bool logs = size & 1;
    CUresult r2 = parse(data, size, &img2, logs ? err2 : NULL, sizeof err2, logs ? info2 : NULL,
                        sizeof info2);
    FUZZ_CHECK(r2 == r);
    if (logs) {
        FUZZ_CHECK(strncmp(err2, err, strlen(err2)) == 0);
        FUZZ_CHECK(strncmp(info2, info, strlen(info2)) == 0);
    }
    if (img) {
        FUZZ_CHECK(img2 && img2->nfunctions == img->nfunctions && img2->nglobals == img->nglobals);
        FUZZ_CHECK(strcmp(img2->target, img->target) == 0);
    }
    fake_image_free(img2);

    /* text with a NUL: the same with the size unknown (what the fake's
     * cuModuleLoadData passes). Binaries are left out: with SIZE_MAX their
     * headers are trusted. */
    if (size && data[0] != 0x7f && data[0] != 0x50 && data[0] != 0xb1 && memchr(data, 0, size)) {
        static char err3[4096];
        fake_image *img3;
        CUresult r3 = parse(data, SIZE_MAX, &img3, err3, sizeof err3, NULL, 0);
        FUZZ_CHECK(r3 == r);
        FUZZ_CHECK(strcmp(err3, err) == 0);
        if (img)
            FUZZ_CHECK(img3 && img3->nfunctions == img->nfunctions);
        fake_image_free(img3);
    }

    fake_image_free(img);
    fake_image_free(NULL);
    FUZZ_CHECK(fake_image_find_function(NULL, "x") == NULL);
    FUZZ_CHECK(fake_image_find_global(NULL, "x") == NULL);
    return 0;
}
