/* The module image parser's private interface (lib/image/; the public
 * one is lib/image/fake_image.h): the bottom layer that every format uses
 * (image_util.c and the inline helpers below) and the formats' entry points.
 *
 * The layers, each calling only those below it:
 *   image.c        fake_image_parse, fake_image_free, fake_image_find_*:
 *                  detects the format
 *   fatbin.c       fatbins: chooses the entry for the device; calls
 *                  decompress.c, then elf.c or ptx.c for the entry it takes
 *   decompress.c   compressed fatbin entries (liblz4, libzstd)
 *   elf.c          cubins
 *   ptx*.c         PTX text (their own private header: ptx_internal.h)
 *   arch.c         which code runs on which device (fake_image_*_runs_on)
 *   image_util.c   logs, arrays, names, the INVALID_IMAGE error, text */
#ifndef CUSCOPE_LIB_FAKE_IMAGE_INTERNAL_H
#define CUSCOPE_LIB_FAKE_IMAGE_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fake_image.h"

#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))

/* --- image_util.c ----------------------------------------------------------------------------- */

/* A log given by the caller: always NUL-terminated, truncated to its size. */
typedef struct {
    char *buf;
    size_t size, len;
} logbuf;

FAKE_IMAGE_API void log_init(logbuf *l, char *buf, size_t size);
FAKE_IMAGE_API void log_clear(logbuf *l);
PRINTF_LIKE(2, 0) FAKE_IMAGE_API void log_vadd(logbuf *l, const char *fmt, va_list ap);
PRINTF_LIKE(2, 3) FAKE_IMAGE_API void log_add(logbuf *l, const char *fmt, ...);
/* The message and a newline into err; returns CUDA_ERROR_INVALID_IMAGE. */
PRINTF_LIKE(2, 3) FAKE_IMAGE_API CUresult bad_image(logbuf *err, const char *fmt, ...);

FAKE_IMAGE_API void *grow(void *a, size_t *cap, size_t need, size_t elem);
FAKE_IMAGE_API char *dup_n(const char *s, size_t n);

/* Growing img->functions and img->globals; see image_util.c. */
FAKE_IMAGE_API fake_image_function *image_add_function(fake_image *img, size_t *cap,
                                                       const char *name, size_t n);
FAKE_IMAGE_API fake_image_global *image_add_global(fake_image *img, size_t *cap, uint64_t *bytes,
                                                   const char *name, size_t n, uint64_t size,
                                                   uint64_t align, bool constant);

FAKE_IMAGE_API bool is_text(const unsigned char *s, size_t n);
FAKE_IMAGE_API size_t text_length(const unsigned char *s, size_t size);

/* --- arithmetic and bounded little-endian reads ----------------------------------------------- */

/* Saturating arithmetic, for sizes that are checked against a limit after. */
static inline uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }
static inline uint64_t sat_mul(uint64_t a, uint64_t b)
{
    return a && b > UINT64_MAX / a ? UINT64_MAX : a * b;
}
/* Rounds up to a power of two `a`, saturating. */
static inline uint64_t align_up(uint64_t v, uint64_t a)
{
    return v > UINT64_MAX - (a - 1) ? UINT64_MAX : (v + a - 1) & ~(a - 1);
}

static inline bool is_pow2(uint64_t v) { return v && !(v & (v - 1)); }

static inline uint16_t rd16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t rd32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t rd64(const unsigned char *p) { return rd32(p) | (uint64_t)rd32(p + 4) << 32; }

/* Whether [off, off + len) lies inside [0, size). */
static inline bool fits(uint64_t off, uint64_t len, size_t size)
{
    return off <= size && len <= size - off;
}

static inline bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* --- the formats ------------------------------------------------------------------------------ */

/* Each fills img (zeroed by the caller, freed by it on failure), writing
 * what went wrong to err and, for PTX, ptxas' info to info. */

/* ptx.c: `len` bytes of text (already checked with is_text), laid out as
 * the JIT compiles it for a device of compute capability device_cc. */
FAKE_IMAGE_API CUresult parse_ptx(const char *text, size_t len, unsigned device_cc,
                                  fake_image *img, logbuf *err, logbuf *info);
/* elf.c */
FAKE_IMAGE_API CUresult parse_cubin(const unsigned char *b, size_t size, fake_image *img,
                                    logbuf *err);
/* fatbin.c: the entry for a device of compute capability device_cc. */
FAKE_IMAGE_API CUresult parse_fatbin(const unsigned char *b, size_t size, unsigned device_cc,
                                     fake_image *img, logbuf *err, logbuf *info);

/* decompress.c */
typedef enum { COMPRESSION_NONE, COMPRESSION_LZ4, COMPRESSION_ZSTD } compression;
FAKE_IMAGE_API const char *compression_name(compression c);
/* The n bytes at src, compressed with c, into *out (malloc'd, out_size
 * bytes, exactly what they must expand to); CUDA_ERROR_UNKNOWN for a
 * corrupt stream or one of another size (the driver's answer),
 * CUDA_ERROR_OUT_OF_MEMORY (also above FAKE_IMAGE_MAX_ENTRY_BYTES),
 * CUDA_ERROR_NO_BINARY_FOR_GPU where the build has no library for c; each
 * with its message in err. */
FAKE_IMAGE_API CUresult decompress(compression c, const unsigned char *src, size_t n,
                                   uint64_t out_size, unsigned char **out, logbuf *err);

#endif
