/* Fatbins: the container's entries, the choice of the one the driver loads
 * for the device (see fake_image_parse), and its payload, decompressed by
 * decompress.c where nvcc compressed it. Calls elf.c or ptx.c for the entry
 * taken.
 *
 * The layout, read off nvcc 13.0's fatbins (every --compress-mode, -G, -rdc,
 * sm_80 to sm_120 with their 'a' and 'f' variants):
 *   {u32 magic 0xBA55ED50, u16 version 1, u16 header_size 16, u64 size},
 *   then `size` bytes of entries, each a header and its payload:
 *     0  u16 kind: 1 PTX, 2 ELF (others are skipped)
 *     2  u16 version (0x0101)
 *     4  u32 header_size (0x40 and more: the options and compat tables)
 *     8  u64 payload_size (padded with zeros)
 *    16  u32 compressed_size: of the stream at the payload's start (0: none)
 *    24  u16 minor, u16 major: a PTX entry's ISA version
 *    28  u32 arch: 90 for sm_90, sm_90a and compute_90
 *    32  u32 offset, u32 size in the header of the source's name (-G)
 *    40  u64 flags: 0x1 64-bit, 0x2 debug (-G), 0x10 Linux, 0x2000 LZ4,
 *        0x8000 Zstandard (decompress.c), 0x100000 arch-specific ('a'),
 *        0x200000 family-specific ('f'), 0x1000000 the header holds the
 *        ELF's .nv.compat (sm_100 and later)
 *    56  u64 uncompressed_size (0: not compressed)
 *
 * Checked on an H200 (9.0): sm_90 and sm_90a SASS side by side, the sm_90a
 * is taken, in either order; sm_86 SASS and compute_80 PTX: the PTX;
 * compute_80 and compute_86 PTX: compute_86; compute_80 and compute_100f
 * PTX: compute_80; sm_100 and compute_90 PTX: the PTX; sm_80 and sm_89
 * SASS only, compute_100 PTX only, sm_100 SASS only:
 * CUDA_ERROR_NO_BINARY_FOR_GPU; of two sm_90 ELFs the first, of two
 * compute_90 PTX the last. Assumed, not checked (no family-specific variant
 * runs on 9.0): the family-specific variant before the plain one of the same
 * arch. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image_internal.h"

enum {
    FATBIN_KIND_PTX = 1,
    FATBIN_KIND_ELF = 2,
    FATBIN_ENTRY_MIN_HEADER = 0x40,
};

#define FATBIN_FLAG_LZ4 UINT64_C(0x2000)
#define FATBIN_FLAG_ZSTD UINT64_C(0x8000)
#define FATBIN_FLAG_ARCH_SPECIFIC UINT64_C(0x100000)
#define FATBIN_FLAG_FAMILY UINT64_C(0x200000)

typedef struct {
    const unsigned char *payload;
    uint64_t payload_size, compressed_size, uncompressed_size;
    unsigned kind, arch, variant;
    uint64_t flags;
} entry;

static entry read_entry(const unsigned char *h)
{
    entry e;
    e.kind = rd16(h);
    e.payload = h + rd32(h + 4);
    e.payload_size = rd64(h + 8);
    e.compressed_size = rd32(h + 16);
    e.arch = rd32(h + 28);
    e.flags = rd64(h + 40);
    e.uncompressed_size = rd64(h + 56);
    e.variant = e.flags & FATBIN_FLAG_ARCH_SPECIFIC ? FAKE_IMAGE_ARCH_SPECIFIC
                : e.flags & FATBIN_FLAG_FAMILY      ? FAKE_IMAGE_ARCH_FAMILY
                                                    : FAKE_IMAGE_ARCH_PLAIN;
    return e;
}

/* The order among entries of one kind that run: the highest arch, then
 * arch-specific, family-specific, plain. */
static unsigned variant_rank(unsigned variant)
{
    return variant == FAKE_IMAGE_ARCH_SPECIFIC ? 2 : variant == FAKE_IMAGE_ARCH_FAMILY ? 1 : 0;
}

/* Whether e, later in the fatbin, is to be taken before best: of two that
 * tie the first SASS, the last PTX (what the H200 took). */
static bool better(const entry *e, const entry *best)
{
    if (!best)
        return true;
    if (e->arch != best->arch)
        return e->arch > best->arch;
    if (e->variant != best->variant)
        return variant_rank(e->variant) > variant_rank(best->variant);
    return e->kind == FATBIN_KIND_PTX;
}

static bool runs(const entry *e, unsigned device_cc)
{
    if (device_cc == FAKE_IMAGE_ANY_DEVICE)
        return true;
    return e->kind == FATBIN_KIND_ELF ? fake_image_sass_runs_on(e->arch, e->variant, device_cc)
                                      : fake_image_ptx_runs_on(e->arch, e->variant, device_cc);
}

static const char *variant_suffix(unsigned variant)
{
    return variant == FAKE_IMAGE_ARCH_SPECIFIC ? "a" : variant == FAKE_IMAGE_ARCH_FAMILY ? "f" : "";
}

/* "sm_90a" (ELF) or "compute_90a" (PTX). */
static void entry_name(const entry *e, char *buf, size_t n)
{
    snprintf(buf, n, "%s_%u%s", e->kind == FATBIN_KIND_ELF ? "sm" : "compute", e->arch,
             variant_suffix(e->variant));
}

/* NO_BINARY_FOR_GPU, naming what the fatbin holds (its first entries). */
static CUresult no_code(const unsigned char *b, uint64_t p, uint64_t end, unsigned device_cc,
                        logbuf *err)
{
    log_add(err, "fatbin: no code for a device of compute capability %u.%u (it holds:",
            device_cc / 10, device_cc % 10);
    unsigned listed = 0;
    for (; end - p >= 16 && listed < 8;) {
        const unsigned char *h = b + p;
        entry e = read_entry(h);
        if (e.kind == FATBIN_KIND_PTX || e.kind == FATBIN_KIND_ELF) {
            char name[48];
            entry_name(&e, name, sizeof name);
            log_add(err, "%s %s", listed++ ? "," : "", name);
        }
        p += rd32(h + 4) + e.payload_size;
    }
    log_add(err, "%s)\n", listed ? "" : " nothing usable");
    return CUDA_ERROR_NO_BINARY_FOR_GPU;
}

/* A PTX entry of binary bytes goes to ptxas, which stops at the first
 * byte it does not take (the H200: compressed bytes, their flag cleared). */
static CUresult not_text(const unsigned char *code, size_t len, logbuf *err)
{
    size_t line = 1, i = 0;
    while (i < len && is_text(code + i, 1)) /* one byte: ASCII text */
        line += code[i++] == '\n';
    log_add(err, "ptxas fatal   : Unexpected non-ASCII character encountered on line %zu\n"
                 "ptxas fatal   : Ptx assembly aborted due to errors\n",
            line);
    return CUDA_ERROR_INVALID_PTX;
}

/* The entry's code: its payload, or the payload decompressed into *owned. */
static CUresult entry_code(const entry *e, logbuf *err, const unsigned char **code, size_t *n,
                           unsigned char **owned)
{
    bool lz4 = e->flags & FATBIN_FLAG_LZ4, zstd = e->flags & FATBIN_FLAG_ZSTD;
    if (!lz4 && !zstd) {
        *code = e->payload;
        *n = (size_t)e->payload_size;
        return CUDA_SUCCESS;
    }
    if (lz4 && zstd)
        return bad_image(err, "fatbin: entry compressed with both LZ4 and Zstandard");
    if (e->compressed_size > e->payload_size)
        return bad_image(err, "fatbin: compressed entry larger than its payload");
    CUresult r = decompress(lz4 ? COMPRESSION_LZ4 : COMPRESSION_ZSTD, e->payload,
                            (size_t)e->compressed_size, e->uncompressed_size, owned, err);
    if (r != CUDA_SUCCESS)
        return r;
    *code = *owned;
    *n = (size_t)e->uncompressed_size;
    return CUDA_SUCCESS;
}

CUresult parse_fatbin(const unsigned char *b, size_t size, unsigned device_cc, fake_image *img,
                      logbuf *err, logbuf *info)
{
    img->format = FAKE_IMAGE_FATBIN;
    if (size < 16)
        return bad_image(err, "fatbin: truncated header");
    uint64_t hsize = rd16(b + 6), fsize = rd64(b + 8);
    if (hsize < 16 || !fits(hsize, fsize, size))
        return bad_image(err, "fatbin: entries out of the image");
    /* the best SASS, and the best PTX */
    entry sass, ptx;
    const entry *best_sass = NULL, *best_ptx = NULL;
    uint64_t end = hsize + fsize, p = hsize;
    while (end - p >= 16) {
        const unsigned char *h = b + p;
        uint64_t ehs = rd32(h + 4), psize = rd64(h + 8);
        if (rd16(h) == 0 && ehs == 0)
            break; /* padding */
        if (ehs < FATBIN_ENTRY_MIN_HEADER || !fits(ehs, psize, (size_t)(end - p)))
            return bad_image(err, "fatbin: entry at 0x%llx out of the image", (unsigned long long)p);
        entry e = read_entry(h);
        if (e.kind == FATBIN_KIND_ELF && runs(&e, device_cc) && better(&e, best_sass)) {
            sass = e;
            best_sass = &sass;
        } else if (e.kind == FATBIN_KIND_PTX && runs(&e, device_cc) && better(&e, best_ptx)) {
            ptx = e;
            best_ptx = &ptx;
        }
        p += ehs + psize;
    }
    const entry *e = best_sass ? best_sass : best_ptx;
    if (!e)
        return no_code(b, hsize, p, device_cc, err);

    const unsigned char *code = NULL;
    unsigned char *owned = NULL;
    size_t n = 0;
    CUresult r = entry_code(e, err, &code, &n, &owned);
    if (r != CUDA_SUCCESS)
        return r;
    if (e->kind == FATBIN_KIND_ELF) {
        r = n < 4 || memcmp(code, "\177ELF", 4) != 0
                ? bad_image(err, "fatbin: ELF entry without an ELF image")
                : parse_cubin(code, n, img, err);
    } else {
        size_t len = text_length(code, n);
        r = len == 0   ? bad_image(err, "fatbin: PTX entry without PTX text")
            : !is_text(code, len) ? not_text(code, len, err)
                                  : parse_ptx((const char *)code, len, device_cc, img, err, info);
    }
    free(owned);
    img->code = img->format;
    img->format = FAKE_IMAGE_FATBIN;
    /* the entry's arch where the code does not say it (an 'f' ELF never does) */
    size_t t = strlen(img->target);
    if (r == CUDA_SUCCESS && e->kind == FATBIN_KIND_ELF && e->arch < 100000 &&
        (t == 0 || (e->variant != FAKE_IMAGE_ARCH_PLAIN && is_digit(img->target[t - 1]))))
        snprintf(img->target, sizeof img->target, "sm_%u%s", e->arch, variant_suffix(e->variant));
    return r;
}
