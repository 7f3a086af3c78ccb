/* The kernels of kernels/ (the .cu files), compiled by nvcc at build time and embedded:
 * for each source file, its PTX (for the JIT, and for the fake driver's
 * parser), a fatbin (SASS for every architecture in the `kernel_archs`
 * option, and PTX for newer ones) and one cubin per architecture.
 * Link `cusk_dep` (kernels/meson.build) and include "cusk-images.h". */
#ifndef CUSK_H
#define CUSK_H

#include <stddef.h>

typedef struct cusk_cubin {
    int sm; /* 90 for sm_90 */
    const unsigned char *data;
    size_t size;
} cusk_cubin;

typedef struct cusk_image {
    const char *name;        /* the source file's base name */
    const char *ptx;         /* NUL-terminated */
    size_t ptx_size;         /* without the NUL */
    const unsigned char *fatbin;
    size_t fatbin_size;
    const cusk_cubin *cubins;
    size_t ncubins;
} cusk_image;

/* Every image, NULL-terminated. */
extern const cusk_image *const cusk_all[];

/* The cubin built for sm (e.g. 90), or NULL. */
static inline const cusk_cubin *cusk_cubin_for(const cusk_image *img, int sm)
{
    for (size_t i = 0; i < img->ncubins; i++)
        if (img->cubins[i].sm == sm)
            return &img->cubins[i];
    return NULL;
}

#endif
