/* The payloads of compressed fatbin entries (fatbin.c reads the headers).
 *
 * nvcc 13.0 compresses fatbin entries by default (fatbinary --compress: the
 * PTX and -G debug images; --compress-mode=size, -rdc or -Xfatbin
 * -compress-all: the ELF too). Read off its output, each compressed payload
 * is one stream at the payload's start, `compressed_size` bytes long (the
 * entry header's word at 16), then zero padding to the payload's size, and
 * expands to exactly `uncompressed_size` bytes (the word at 56; for PTX the
 * text and its NUL):
 *   flag 0x2000: LZ4, one raw block (no frame, no size prefix): what
 *                --compress-mode=speed writes;
 *   flag 0x8000: Zstandard, one frame with its content size: what the
 *                default, balance and size modes write.
 *
 * Decompressed with the reference libraries, as Debian ships them (liblz4,
 * libzstd): they are the formats' own implementations, kept up for decades,
 * fuzzed upstream (OSS-Fuzz), and their one-shot calls are documented safe
 * on malformed input (LZ4_decompress_safe never reads past the source or
 * writes past the destination; ZSTD_decompress reports corruption as an
 * error). The build finds them optionally (lib/fake/meson.build); without
 * one its entries are CUDA_ERROR_NO_BINARY_FOR_GPU with a message saying
 * how to do without.
 *
 * Bounded: the output is allocated once, at the size the entry header
 * claims, which must be at most FAKE_IMAGE_MAX_ENTRY_BYTES, and the stream
 * must expand to exactly that (a Zstandard frame must also say so in its
 * own header before anything is allocated). A stream that does not is what
 * the H200's driver answered for a corrupt frame, one cut short and one of
 * another size than the header's: CUDA_ERROR_UNKNOWN, "error   : Uncompress
 * failed" in the JIT error log. */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>

#include "image_internal.h"

#ifdef FAKE_IMAGE_HAVE_LZ4
#include <lz4.h>
#endif
#ifdef FAKE_IMAGE_HAVE_ZSTD
#include <zstd.h>
#endif

const char *compression_name(compression c)
{
    return c == COMPRESSION_LZ4 ? "LZ4" : c == COMPRESSION_ZSTD ? "Zstandard" : "none";
}

/* The driver's answer to a stream that does not expand as its header says. */
static CUresult uncompress_failed(logbuf *err)
{
    log_add(err, "error   : Uncompress failed\n");
    return CUDA_ERROR_UNKNOWN;
}

#ifdef FAKE_IMAGE_HAVE_LZ4
static bool lz4(const unsigned char *src, size_t n, unsigned char *dst, size_t out_size)
{
    if (n > INT_MAX || out_size > INT_MAX)
        return false;
    int got = LZ4_decompress_safe((const char *)src, (char *)dst, (int)n, (int)out_size);
    return got >= 0 && (size_t)got == out_size;
}
#endif

#ifdef FAKE_IMAGE_HAVE_ZSTD
static bool zstd(const unsigned char *src, size_t n, unsigned char *dst, size_t out_size)
{
    size_t got = ZSTD_decompress(dst, out_size, src, n);
    return !ZSTD_isError(got) && got == out_size;
}
#endif

CUresult decompress(compression c, const unsigned char *src, size_t n, uint64_t out_size,
                    unsigned char **out, logbuf *err)
{
    (void)src; /* unused when the build has neither library */
#ifndef FAKE_IMAGE_HAVE_LZ4
    if (c == COMPRESSION_LZ4) {
        log_add(err, "fatbin: the entry for the device is LZ4-compressed and the fake driver was "
                     "built without liblz4: install liblz4-dev and rebuild, or build with nvcc "
                     "--no-compress\n");
        return CUDA_ERROR_NO_BINARY_FOR_GPU;
    }
#endif
#ifndef FAKE_IMAGE_HAVE_ZSTD
    if (c == COMPRESSION_ZSTD) {
        log_add(err, "fatbin: the entry for the device is Zstandard-compressed and the fake "
                     "driver was built without libzstd: install libzstd-dev and rebuild, or "
                     "build with nvcc --no-compress\n");
        return CUDA_ERROR_NO_BINARY_FOR_GPU;
    }
#endif
    if (c != COMPRESSION_LZ4 && c != COMPRESSION_ZSTD)
        return bad_image(err, "fatbin: unknown compression");
    if (n == 0 || out_size == 0)
        return uncompress_failed(err);
    if (out_size > FAKE_IMAGE_MAX_ENTRY_BYTES) {
        log_add(err, "fatbin: a compressed entry expands to %llu bytes, more than the fake's "
                     "%zu\n", (unsigned long long)out_size, (size_t)FAKE_IMAGE_MAX_ENTRY_BYTES);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
#ifdef FAKE_IMAGE_HAVE_ZSTD
    if (c == COMPRESSION_ZSTD && ZSTD_getFrameContentSize(src, n) != out_size)
        return uncompress_failed(err);
#endif
    unsigned char *dst = malloc((size_t)out_size);
    if (!dst)
        return CUDA_ERROR_OUT_OF_MEMORY;
    bool ok = false;
#ifdef FAKE_IMAGE_HAVE_LZ4
    if (c == COMPRESSION_LZ4)
        ok = lz4(src, n, dst, (size_t)out_size);
#endif
#ifdef FAKE_IMAGE_HAVE_ZSTD
    if (c == COMPRESSION_ZSTD)
        ok = zstd(src, n, dst, (size_t)out_size);
#endif
    if (!ok) {
        free(dst);
        return uncompress_failed(err);
    }
    *out = dst;
    return CUDA_SUCCESS;
}
