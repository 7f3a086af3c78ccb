/* Cubins (CUDA ELF images).
 *
 * Cubins are read through their section and symbol tables: a kernel is a
 * STT_FUNC symbol marked as an entry (st_other & 0x10), its parameters the
 * EIATTR_KPARAM_INFO records of its .nv.info.<name> section (or, where its
 * parameters take more than 4 KiB, EIATTR_KPARAM_INFO_V2's), its static
 * shared memory the size of its .nv.shared.<name> section, and the globals
 * the STT_OBJECT symbols of .nv.global* and the .nv.constant<bank> sections.
 * An arch-specific cubin (sm_90a) says so in its .nv.compat only (e_flags
 * are those of sm_90; a family-specific one, sm_100f, is sm_100's byte for
 * byte).
 *
 * A relocatable cubin (ET_REL, nvcc -rdc=true) is loaded by the driver, and
 * its kernels listed, but cuModuleGetFunction links only calls: on an H200
 * it answered CUDA_ERROR_INVALID_IMAGE for each kernel whose .text had a
 * relocation against data (globals, constants, static __shared__ arrays),
 * CUDA_ERROR_NOT_FOUND for those with one against undefined data (an extern
 * __shared__ array), alone or with others against data, and found the
 * others, whose relocations are against functions only: calls to a device
 * function of the cubin, branches within the kernel, and calls to the device
 * graph API (cudaGraphLaunch, cudaGraphSetConditional: undefined, and
 * resolved by the driver). test/corpus/expected.txt has 40 such kernels.
 * Its globals are not given either (cuModuleGetGlobal: NOT_FOUND): their
 * symbols are not STT_OBJECT there, so the fake has none. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image_internal.h"

enum {
    ET_REL_ = 1,
    SHT_SYMTAB_ = 2,
    SHT_STRTAB_ = 3,
    SHT_RELA_ = 4,
    SHT_NOBITS_ = 8,
    SHT_REL_ = 9,
    STT_OBJECT_ = 1,
    STT_FUNC_ = 2,
    STO_CUDA_ENTRY_ = 0x10,
    EM_CUDA_ = 190,
    SHN_LORESERVE_ = 0xff00,
    /* .nv.info attributes */
    EIFMT_SVAL_ = 4,
    EIATTR_MAX_THREADS_ = 0x05,
    EIATTR_REQNTID_ = 0x10,
    EIATTR_KPARAM_INFO_ = 0x17,
    EIATTR_CBANK_PARAM_SIZE_ = 0x19,
    EIATTR_KPARAM_INFO_V2_ = 0x45,
    /* .nv.compat attributes (the same records) */
    EIFMT_BVAL_ = 2,
    EICOMPAT_ATTR_CUDA_ACCELERATOR_TARGET_ = 0x09,
};

typedef struct {
    const unsigned char *b;
    size_t size;
    uint64_t shoff;
    unsigned shnum, shentsize, shstrndx;
    logbuf *err;
} elf;

typedef struct {
    uint32_t name, type, link, info;
    uint64_t offset, size, addralign, entsize;
} section;

static section sec(const elf *e, unsigned i)
{
    const unsigned char *h = e->b + e->shoff + (uint64_t)i * e->shentsize;
    return (section){rd32(h),      rd32(h + 4),  rd32(h + 40), rd32(h + 44),
                     rd64(h + 24), rd64(h + 32), rd64(h + 48), rd64(h + 56)};
}

/* The NUL-terminated string at off in string table section i; NULL when it
 * does not fit. */
static const char *elf_string(const elf *e, unsigned i, uint64_t off)
{
    if (i >= e->shnum)
        return NULL;
    section s = sec(e, i);
    if (s.type == SHT_NOBITS_ || off >= s.size)
        return NULL;
    const char *p = (const char *)e->b + s.offset + off;
    return memchr(p, 0, (size_t)(s.size - off)) ? p : NULL;
}

static const char *sec_name(const elf *e, unsigned i)
{
    return elf_string(e, e->shstrndx, sec(e, i).name);
}

static bool has_prefix(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* "1".."17": a constant bank other than 0 */
static bool is_bank(const char *s)
{
    if (*s < '1' || *s > '9')
        return false;
    while (is_digit(*s))
        s++;
    return *s == '\0';
}

/* The largest power of two dividing v, at most cap (v == 0: cap). */
static uint64_t pow2_dividing(uint64_t v, uint64_t cap)
{
    uint64_t a = 1;
    while (a < cap && !(v & a))
        a <<= 1;
    return a;
}

/* A kernel's attributes from its .nv.info.<name> section. */
static CUresult parse_nv_info(const elf *e, const section *s, fake_image_function *f)
{
    const unsigned char *d = e->b + s->offset;
    uint64_t n = s->size, p = 0, param_size = UINT64_MAX, pcap = 0;
    bool *seen = NULL;
    size_t seencap = 0;
    CUresult r = CUDA_SUCCESS;
    while (p < n && r == CUDA_SUCCESS) {
        if (n - p < 4) {
            r = bad_image(e->err, "cubin: truncated .nv.info attribute");
            break;
        }
        /* {u8 format, u8 attribute, u16 v}: EIFMT_NVAL (1), EIFMT_BVAL (2) and
         * EIFMT_HVAL (3) are these 4 bytes, the value in v; EIFMT_SVAL (4) is
         * followed by v bytes. So cuobjdump 13.0 reads nvcc 13's cubins
         * (BVAL, HVAL and SVAL seen; no NVAL). */
        unsigned fmt = d[p], attr = d[p + 1], v = rd16(d + p + 2);
        p += 4;
        if (fmt < 1 || fmt > 4) {
            r = bad_image(e->err, "cubin: unknown .nv.info attribute format %u", fmt);
            break;
        }
        if (fmt != EIFMT_SVAL_) {
            if (attr == EIATTR_CBANK_PARAM_SIZE_)
                param_size = v;
            continue;
        }
        if (v > n - p) {
            r = bad_image(e->err, "cubin: truncated .nv.info attribute");
            break;
        }
        const unsigned char *a = d + p;
        p += v;
        if ((attr == EIATTR_KPARAM_INFO_ || attr == EIATTR_KPARAM_INFO_V2_) && v >= 12) {
            /* {u32 index, u16 ordinal, u16 offset, then KPARAM_INFO: u32 flags,
             * the size in bits 18..31 (so below 16 KiB); KPARAM_INFO_V2, which
             * nvcc 13 writes for every parameter of a kernel whose parameters
             * pass 4 KiB: u16 size, u16 flags (the pointee's log alignment and
             * space: 0 so far)} */
            size_t ordinal = rd16(a + 4), off = rd16(a + 6);
            size_t size = attr == EIATTR_KPARAM_INFO_ ? (rd32(a + 8) >> 18) & 0x3fff : rd16(a + 8);
            fake_image_param *pa = grow(f->params, &pcap, ordinal + 1, sizeof *pa);
            bool *sn = pa ? grow(seen, &seencap, ordinal + 1, sizeof *sn) : NULL;
            if (pa)
                f->params = pa;
            if (!sn) {
                r = CUDA_ERROR_OUT_OF_MEMORY;
                break;
            }
            seen = sn;
            for (; f->nparams <= ordinal; f->nparams++)
                seen[f->nparams] = false;
            if (seen[ordinal]) {
                r = bad_image(e->err, "cubin: parameter %zu of '%s' described twice", ordinal, f->name);
                break;
            }
            seen[ordinal] = true;
            /* not recorded: the largest power of two dividing both, at most 16 */
            f->params[ordinal] = (fake_image_param){off, size, pow2_dividing(off | (size ? size : 1), 16)};
        } else if ((attr == EIATTR_MAX_THREADS_ || attr == EIATTR_REQNTID_) && v >= 12) {
            uint64_t x = rd32(a), y = rd32(a + 4), z = rd32(a + 8);
            if (attr == EIATTR_REQNTID_) {
                f->reqntid[0] = (unsigned)x, f->reqntid[1] = (unsigned)y, f->reqntid[2] = (unsigned)z;
            } else {
                uint64_t t = sat_mul(sat_mul(x, y), z);
                f->max_threads = t > UINT_MAX ? UINT_MAX : (unsigned)t;
            }
        }
    }
    for (size_t i = 0; r == CUDA_SUCCESS && i < f->nparams; i++) {
        if (!seen[i])
            r = bad_image(e->err, "cubin: parameter %zu of '%s' not described", i, f->name);
        else if (f->params[i].offset + f->params[i].size > f->param_bytes)
            f->param_bytes = f->params[i].offset + f->params[i].size;
    }
    /* The parameter bank's size, unless a parameter ends past it (the
     * launch copies each at its offset: found by fuzzing,
     * test/fuzz/corpus/fake_image/crash-*). */
    if (param_size != UINT64_MAX && r == CUDA_SUCCESS) {
        if (param_size < f->param_bytes)
            r = bad_image(e->err, "cubin: a parameter of '%s' ends past its %llu-byte bank",
                          f->name, (unsigned long long)param_size);
        else
            f->param_bytes = (size_t)param_size;
    }
    free(seen);
    return r;
}

/* Whether the .nv.compat section marks the code arch-specific (sm_90a):
 * EICOMPAT_ATTR_CUDA_ACCELERATOR_TARGET, 1. */
static bool accelerator_target(const elf *e)
{
    for (unsigned i = 1; i < e->shnum; i++) {
        section s = sec(e, i);
        if (s.type == SHT_NOBITS_ || strcmp(sec_name(e, i), ".nv.compat") != 0)
            continue;
        const unsigned char *d = e->b + s.offset;
        for (uint64_t p = 0; p <= s.size && s.size - p >= 4;) {
            unsigned fmt = d[p], attr = d[p + 1];
            if (fmt == EIFMT_BVAL_ && attr == EICOMPAT_ATTR_CUDA_ACCELERATOR_TARGET_)
                return d[p + 2] != 0;
            p += 4 + (fmt == EIFMT_SVAL_ ? rd16(d + p + 2) : 0);
        }
    }
    return false;
}

/* A relocatable cubin's relocations: lookup_of[i] (CUDA_SUCCESS on entry)
 * becomes what cuModuleGetFunction answers for a kernel in section i where
 * relocations apply to that section (see the top). */
static CUresult relocations(const elf *e, CUresult *lookup_of)
{
    for (unsigned i = 1; i < e->shnum; i++) {
        section s = sec(e, i);
        if ((s.type != SHT_RELA_ && s.type != SHT_REL_) || s.info == 0 || s.info >= e->shnum)
            continue;
        if (s.link >= e->shnum || sec(e, s.link).type != SHT_SYMTAB_)
            return bad_image(e->err, "cubin: relocation section %u without its symbols", i);
        section st = sec(e, s.link);
        uint64_t min = s.type == SHT_RELA_ ? 24 : 16;
        uint64_t entsize = s.entsize < min ? min : s.entsize;
        uint64_t stent = st.entsize < 24 ? 24 : st.entsize, nsyms = st.size / stent;
        CUresult *l = &lookup_of[s.info];
        for (uint64_t k = 0; k < s.size / entsize; k++) {
            uint64_t sym = rd64(e->b + s.offset + k * entsize + 8) >> 32; /* ELF64_R_SYM */
            if (sym >= nsyms)
                return bad_image(e->err, "cubin: relocation against symbol %llu, not in its table",
                                 (unsigned long long)sym);
            const unsigned char *y = e->b + st.offset + sym * stent;
            /* Calls and branches (against functions, defined here or, like
             * the device graph API's, not) the driver links: no effect. */
            if (sym && (y[4] & 0xf) == STT_FUNC_)
                continue;
            bool undefined = sym && rd16(y + 6) == 0;
            if (undefined)
                *l = CUDA_ERROR_NOT_FOUND;
            else if (*l == CUDA_SUCCESS)
                *l = CUDA_ERROR_INVALID_IMAGE;
        }
    }
    return CUDA_SUCCESS;
}

CUresult parse_cubin(const unsigned char *b, size_t size, fake_image *img, logbuf *err)
{
    img->format = img->code = FAKE_IMAGE_CUBIN;
    if (size < 64)
        return bad_image(err, "cubin: truncated ELF header");
    if (b[4] != 2 || b[5] != 1)
        return bad_image(err, "cubin: not a little-endian ELF64 image");
    if (rd16(b + 18) != EM_CUDA_)
        return bad_image(err, "cubin: not a CUDA ELF image (machine %u)", (unsigned)rd16(b + 18));
    elf e = {b, size, rd64(b + 40), rd16(b + 60), rd16(b + 58), rd16(b + 62), err};
    uint64_t phoff = rd64(b + 32);
    unsigned phentsize = rd16(b + 54), phnum = rd16(b + 56);
    if (e.shnum == 0 || e.shentsize < 64 || e.shstrndx >= e.shnum ||
        !fits(e.shoff, (uint64_t)e.shnum * e.shentsize, size))
        return bad_image(err, "cubin: section headers out of the image");
    if (phnum && (phentsize < 56 || !fits(phoff, (uint64_t)phnum * phentsize, size)))
        return bad_image(err, "cubin: program headers out of the image");
    unsigned symtab = 0;
    for (unsigned i = 0; i < e.shnum; i++) {
        section s = sec(&e, i);
        if (s.type != SHT_NOBITS_ && !fits(s.offset, s.size, size))
            return bad_image(err, "cubin: section %u out of the image", i);
    }
    for (unsigned i = 1; i < e.shnum; i++) {
        if (!sec_name(&e, i))
            return bad_image(err, "cubin: section %u has no name", i);
        if (sec(&e, i).type == SHT_SYMTAB_ && !symtab)
            symtab = i;
    }
    /* arch: bits 8..15 of e_flags from ELF ABI version 8 (CUDA 13), else 0..7 */
    unsigned flags = rd32(b + 48), sm = b[8] >= 8 ? (flags >> 8) & 0xff : flags & 0xff;
    if (sm)
        snprintf(img->target, sizeof img->target, "sm_%u%s", sm, accelerator_target(&e) ? "a" : "");
    img->relocatable = rd16(b + 16) == ET_REL_;
    if (!symtab)
        return CUDA_SUCCESS;

    section st = sec(&e, symtab);
    if (st.link >= e.shnum || sec(&e, st.link).type != SHT_STRTAB_)
        return bad_image(err, "cubin: symbol table without strings");
    uint64_t entsize = st.entsize < 24 ? 24 : st.entsize;
    /* per text section: its .nv.info.<name> and .nv.shared.<name> sections */
    unsigned *info_of = calloc(e.shnum, 2 * sizeof *info_of);
    if (!info_of)
        return CUDA_ERROR_OUT_OF_MEMORY;
    unsigned *shared_of = info_of + e.shnum;
    CUresult *lookup_of = img->relocatable ? calloc(e.shnum, sizeof *lookup_of) : NULL;
    if (img->relocatable && !lookup_of) {
        free(info_of);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    /* 1 KiB of shared memory reserved in every kernel's section (.nv_debug.shared
     * is that kiB in -G cubins, which have no .nv.shared.reserved.0) */
    bool reserved = false;
    for (unsigned i = 1; i < e.shnum; i++) {
        section s = sec(&e, i);
        const char *n = sec_name(&e, i);
        if (has_prefix(n, ".nv.shared.reserved.") || strcmp(n, ".nv_debug.shared") == 0)
            reserved = true;
        else if (has_prefix(n, ".nv.info.") && s.info && s.info < e.shnum)
            info_of[s.info] = i;
        else if (has_prefix(n, ".nv.shared.") && s.info && s.info < e.shnum)
            shared_of[s.info] = i;
    }
    CUresult r = lookup_of ? relocations(&e, lookup_of) : CUDA_SUCCESS;
    size_t fcap = 0, gcap = 0;
    uint64_t gbytes = 0;
    for (uint64_t k = 1; r == CUDA_SUCCESS && k < st.size / entsize; k++) {
        const unsigned char *y = b + st.offset + k * entsize;
        unsigned type = y[4] & 0xf, other = y[5], shndx = rd16(y + 6);
        uint64_t value = rd64(y + 8), ssize = rd64(y + 16);
        if ((type != STT_FUNC_ && type != STT_OBJECT_) || shndx == 0 || shndx >= e.shnum ||
            shndx >= SHN_LORESERVE_)
            continue;
        const char *name = elf_string(&e, st.link, rd32(y));
        if (!name) {
            r = bad_image(err, "cubin: symbol %llu has no name", (unsigned long long)k);
            break;
        }
        if (!*name)
            continue;
        if (type == STT_FUNC_ && (other & STO_CUDA_ENTRY_)) {
            fake_image_function *f = image_add_function(img, &fcap, name, strlen(name));
            if (!f) {
                r = CUDA_ERROR_OUT_OF_MEMORY;
                break;
            }
            f->lookup = lookup_of ? lookup_of[shndx] : CUDA_SUCCESS;
            if (info_of[shndx]) {
                section is = sec(&e, info_of[shndx]);
                if (is.type != SHT_NOBITS_)
                    r = parse_nv_info(&e, &is, f);
            }
            if (shared_of[shndx]) {
                uint64_t sh = sec(&e, shared_of[shndx]).size;
                if (reserved)
                    sh = sh > 1024 ? sh - 1024 : 0;
                f->static_shared = sh > SIZE_MAX / 2 ? SIZE_MAX / 2 : (size_t)sh;
            }
            continue;
        }
        if (type != STT_OBJECT_)
            continue;
        section s = sec(&e, shndx);
        const char *sn = sec_name(&e, shndx);
        /* a bank of its own (.nv.constant3), not a kernel's parameters (.nv.constant0.k) */
        bool constant = has_prefix(sn, ".nv.constant") && is_bank(sn + strlen(".nv.constant"));
        if (!constant && strcmp(sn, ".nv.global") != 0 && strcmp(sn, ".nv.global.init") != 0)
            continue;
        if (s.type != SHT_NOBITS_ && !fits(value, ssize, (size_t)s.size)) {
            r = bad_image(err, "cubin: global '%s' out of its section", name);
            break;
        }
        /* not recorded either: guessed from the address, the section's and
         * the size's alignment */
        uint64_t cap = !is_pow2(s.addralign) ? 1 : s.addralign < 4096 ? s.addralign : 4096;
        while (cap > 1 && cap / 2 >= ssize)
            cap /= 2;
        fake_image_global *g = image_add_global(img, &gcap, &gbytes, name, strlen(name), ssize,
                                                pow2_dividing(value, cap), constant);
        if (!g) {
            r = CUDA_ERROR_OUT_OF_MEMORY;
            break;
        }
        if (s.type != SHT_NOBITS_ && ssize)
            memcpy(g->init, b + s.offset + value, (size_t)ssize);
    }
    free(info_of);
    free(lookup_of);
    return r;
}
