/* Module images for the fake driver: a pure parser of what cuModuleLoadData
 * is given (PTX text, a cubin, a fatbin, or the runtime's fatbin wrapper)
 * into the kernels, their parameter layouts and the module's globals.
 *
 * It touches no fake state and depends on libc and cuda.h only, so that it
 * can be tested and fuzzed on its own. */
#ifndef CUSCOPE_LIB_FAKE_IMAGE_H
#define CUSCOPE_LIB_FAKE_IMAGE_H

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>

#define FAKE_IMAGE_API __attribute__((visibility("hidden")))

typedef enum { FAKE_IMAGE_PTX, FAKE_IMAGE_CUBIN, FAKE_IMAGE_FATBIN } fake_image_format;

typedef struct {
    size_t offset, size, align;
} fake_image_param;

typedef struct {
    char *name;                 /* the .entry name (mangled as written) */
    size_t nparams;
    fake_image_param *params;
    size_t param_bytes;         /* end of the last param (0 for none) */
    unsigned max_threads;       /* .maxntid product, or 0 when not given */
    unsigned reqntid[3];        /* .reqntid, zeros when not given */
    size_t static_shared;       /* sum of .shared declarations in the body (aligned) */
} fake_image_function;

typedef struct {
    char *name;
    size_t size, align;
    bool constant;              /* .const (else .global) */
    unsigned char *init;        /* size bytes: the initializer, zero-filled where absent */
} fake_image_global;

typedef struct {
    fake_image_format format;
    char target[32];            /* e.g. "sm_90" (PTX .target, or the cubin's/fatbin's arch) */
    unsigned ptx_version_major, ptx_version_minor; /* PTX only */
    size_t nfunctions;
    fake_image_function *functions;
    size_t nglobals;
    fake_image_global *globals;
} fake_image;

/* The most bytes of globals one image may declare; more is
 * CUDA_ERROR_OUT_OF_MEMORY (every global gets its init buffer). */
#define FAKE_IMAGE_MAX_GLOBAL_BYTES ((size_t)1 << 30)

/* Parses a module image as cuModuleLoadData sees it: `image` points at PTX
 * text (NUL-terminated), a cubin (ELF), or a fatbin (magic 0xBA55ED50, or the
 * 0x466243b1 wrapper struct whose third member points at the fatbin). `size`
 * is the number of readable bytes when known (tests, fuzzing), or SIZE_MAX;
 * with a known size nothing past it is read, and a wrapper (whose pointer
 * cannot be checked) is CUDA_ERROR_INVALID_IMAGE.
 *
 * Returns CUDA_SUCCESS and *out (free with fake_image_free), or what the real
 * driver gives, leaving *out untouched: CUDA_ERROR_INVALID_VALUE (NULL image
 * or out), CUDA_ERROR_INVALID_IMAGE (empty, unknown magic, binary bytes,
 * truncated or inconsistent ELF/fatbin), CUDA_ERROR_INVALID_PTX (a PTX syntax
 * error), CUDA_ERROR_NO_BINARY_FOR_GPU (a fatbin without usable code),
 * CUDA_ERROR_OUT_OF_MEMORY.
 *
 * Both logs (either may be NULL) are always NUL-terminated, truncated to
 * their size. A PTX error writes ptxas' message into error_log ("ptxas
 * application ptx input, line 12; error   : Not a name of any known
 * instruction: 'frobnicate'"); a PTX success writes ptxas' -v style info
 * ("ptxas info    : Compiling entry function 'add' for 'sm_90'") to info_log.
 *
 * Parameter offsets follow ptxas: each parameter is aligned to the larger of
 * its .align and its element size, and the alignment applies to its address
 * in the constant bank, whose parameter area starts at 0x160 (sm_75..89),
 * 0x210 (sm_9x) or 0x380 (sm_100 and later); so alignments above 16 depend
 * on the target. */
FAKE_IMAGE_API CUresult fake_image_parse(const void *image, size_t size, fake_image **out,
                                         char *error_log, size_t error_log_size,
                                         char *info_log, size_t info_log_size);
FAKE_IMAGE_API void fake_image_free(fake_image *img);
/* NULL when img or name is NULL or nothing has that name. */
FAKE_IMAGE_API const fake_image_function *fake_image_find_function(const fake_image *img,
                                                                   const char *name);
FAKE_IMAGE_API const fake_image_global *fake_image_find_global(const fake_image *img,
                                                               const char *name);

#endif
