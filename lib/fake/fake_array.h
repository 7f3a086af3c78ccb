/* The array area (fake_array.c): CUDA arrays and mipmapped arrays, each
 * backed by a block of device memory (a module-global-style block of
 * fake_memory.c: bounds- and lifetime-checked, not counted as an
 * allocation), and the texture and surface objects over them
 * (fake_texture.c). */
#ifndef CUSCOPE_LIB_FAKE_ARRAY_H
#define CUSCOPE_LIB_FAKE_ARRAY_H

#include "fake_memory.h"

typedef struct fake_mipmap fake_mipmap;

typedef struct fake_array {
    fake_handle h; /* ARRAY; a mipmap level too, never registered as live on its own */
    struct CUctx_st *ctx;
    CUDA_ARRAY3D_DESCRIPTOR desc;
    size_t elem;      /* bytes per element */
    size_t row_bytes; /* Width * elem: the storage's pitch */
    size_t rows, slices; /* Height and Depth, 0 counted as 1 */
    fake_mem *store;
    uintptr_t base;
    fake_mipmap *parent; /* a level: its mipmapped array */
    bool ctx_destroyed;
    unsigned long doomed;
} fake_array;

struct fake_mipmap {
    fake_handle h; /* MIPMAPPED_ARRAY */
    struct CUctx_st *ctx;
    CUDA_ARRAY3D_DESCRIPTOR desc;
    unsigned int levels;
    fake_array **level; /* levels of them */
    bool ctx_destroyed;
    unsigned long doomed;
};

/* The bytes of one channel of format (0: a format the fake does not serve). */
FAKE_HIDDEN size_t fake_array_format_bytes(CUarray_format format);
/* An array argument: a live array or a level of a live mipmapped array;
 * else a misuse (naming `what`) and CUDA_ERROR_INVALID_HANDLE (NULL:
 * CUDA_ERROR_INVALID_VALUE); one of a destroyed context:
 * CUDA_ERROR_CONTEXT_IS_DESTROYED. */
FAKE_HIDDEN CUresult fake_array_arg_locked(CUarray a, const char *what, fake_array **out);
/* The same for a mipmapped array. */
FAKE_HIDDEN CUresult fake_mipmap_arg_locked(CUmipmappedArray m, const char *what,
                                            fake_mipmap **out);
/* Whether an array (found before) is still usable: live, and its mipmapped
 * array too. */
FAKE_HIDDEN bool fake_array_live(const fake_array *a);

#endif
