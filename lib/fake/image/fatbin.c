/* Fatbins: the container's entries, the choice of the entry to load (its
 * ELF, else its PTX), and the compressed entries (skipped: the fake cannot
 * decompress). Calls elf.c and ptx.c for the entry taken. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "image_internal.h"

#define FATBIN_MAGIC 0xBA55ED50u
#define FATBIN_WRAPPER_MAGIC 0x466243B1u

enum {
    FATBIN_KIND_PTX = 1,
    FATBIN_KIND_ELF = 2,
    FATBIN_FLAG_COMPRESSED_LZ4 = 0x2000,
    FATBIN_FLAG_COMPRESSED_ZSTD = 0x8000,
};

/* A fatbin: {u32 magic, u16 version, u16 header_size, u64 size} then entries
 * {u16 kind, u16, u32 header_size, u64 payload_size, u32 compressed_size,
 * u32, u16 minor, u16 major, u32 arch, u32, u32, u64 flags, u64, u64
 * uncompressed_size, ...}. The ELF with the highest arch is taken, else the
 * PTX with the highest; compressed entries are skipped. */
CUresult parse_fatbin(const unsigned char *b, size_t size, fake_image *img, logbuf *err,
                             logbuf *info)
{
    if (size < 16)
        return bad_image(err, "fatbin: truncated header");
    uint64_t hsize = rd16(b + 6), fsize = rd64(b + 8);
    if (hsize < 16 || !fits(hsize, fsize, size))
        return bad_image(err, "fatbin: entries out of the image");
    const unsigned char *best = NULL;
    uint64_t best_size = 0;
    unsigned best_kind = 0, best_arch = 0, compressed = 0;
    for (uint64_t p = hsize, end = hsize + fsize; end - p >= 16;) {
        const unsigned char *h = b + p;
        unsigned kind = rd16(h);
        uint64_t ehs = rd32(h + 4), psize = rd64(h + 8);
        if (kind == 0 && ehs == 0)
            break; /* padding */
        if (ehs < 0x40 || !fits(ehs, psize, (size_t)(end - p)))
            return bad_image(err, "fatbin: entry at 0x%llx out of the image", (unsigned long long)p);
        unsigned arch = rd32(h + 28);
        uint64_t flags = rd64(h + 40);
        if (kind == FATBIN_KIND_PTX || kind == FATBIN_KIND_ELF) {
            if (flags & (FATBIN_FLAG_COMPRESSED_LZ4 | FATBIN_FLAG_COMPRESSED_ZSTD)) {
                compressed++;
            } else if (kind > best_kind || (kind == best_kind && arch >= best_arch)) {
                best = h + ehs;
                best_size = psize;
                best_kind = kind;
                best_arch = arch;
            }
        }
        p += ehs + psize;
    }
    if (!best) {
        log_add(err, "fatbin: no usable code");
        if (compressed)
            log_add(err, " (%u compressed entries skipped: the fake driver cannot decompress; "
                         "build with nvcc --no-compress)", compressed);
        log_add(err, "\n");
        return CUDA_ERROR_NO_BINARY_FOR_GPU;
    }
    CUresult r;
    if (best_kind == FATBIN_KIND_ELF) {
        if (best_size < 4 || memcmp(best, "\177ELF", 4) != 0)
            return bad_image(err, "fatbin: ELF entry without an ELF image");
        r = parse_cubin(best, (size_t)best_size, img, err);
    } else {
        size_t len = text_length(best, (size_t)best_size);
        if (len == 0 || !is_text(best, len))
            return bad_image(err, "fatbin: PTX entry without PTX text");
        r = parse_ptx((const char *)best, len, img, err, info);
    }
    img->format = FAKE_IMAGE_FATBIN;
    if (r == CUDA_SUCCESS && !img->target[0] && best_arch && best_arch < 100000)
        snprintf(img->target, sizeof img->target, "sm_%u", best_arch);
    return r;
}
