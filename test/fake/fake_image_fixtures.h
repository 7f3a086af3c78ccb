/* Fixtures of the image parser's tests: test_fake_image.c (PTX, logs, bad
 * images) and test_fake_image_binary.c (cubins and fatbins), split along
 * their sections; each is compiled with the parser (lib/image/: the
 * fake library hides its symbols). Both take nvcc's images of
 * data/fake_image/kernels.cu and bigparams.cu as arguments
 * (test/meson.build's image_inputs), found by their names (input_names,
 * inputs_from_args); without nvcc the cases that need them skip. Inputs are
 * copied into buffers of exactly their size, so that AddressSanitizer and
 * valgrind see any read past the end. */
#ifndef CUSCOPE_TEST_FAKE_IMAGE_FIXTURES_H
#define CUSCOPE_TEST_FAKE_IMAGE_FIXTURES_H
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake_image.h"

#ifdef FAKE_IMAGE_HAVE_LZ4
#include <lz4.h>
#endif
#ifdef FAKE_IMAGE_HAVE_ZSTD
#include <zstd.h>
#endif

/* test/meson.build's image_inputs */
enum {
    IN_PTX,
    IN_CUBIN,
    IN_FATBIN,
    IN_FATBIN_COMPRESSED,
    IN_FATBIN_PTX,
    IN_FATBIN_SPEED,
    IN_FATBIN_DEBUG,
    IN_FATBIN_MULTI,
    IN_FATBIN_90A,
    IN_RDC_CUBIN,
    IN_RDC_FATBIN,
    IN_BIG_PTX,
    IN_BIG_CUBIN,
    IN_BIG_FATBIN,
    IN_COUNT
};
static const char *const input_names[IN_COUNT] = {
    "kernels.ptx",        "kernels.cubin",       "kernels.fatbin",      "kernels-compressed.fatbin",
    "kernels-ptx.fatbin", "kernels-speed.fatbin", "kernels-debug.fatbin", "kernels-multi.fatbin",
    "kernels-90a.fatbin", "kernels-rdc.cubin",    "kernels-rdc.fatbin",  "bigparams.ptx",
    "bigparams.cubin",    "bigparams.fatbin",
};
static const char *input_paths[IN_COUNT];

/* The device images are parsed for (FAKE_IMAGE_CC): the H200's 9.0 unless a
 * test says otherwise (and puts it back). */
static unsigned device_cc = 90;

/* --- helpers ------------------------------------------------------------------------------ */

typedef struct {
    CUresult r;
    fake_image *img;
    char err[4096];
    char info[8192];
} result;

/* Parses a copy of n bytes, in a buffer of exactly that size. */
static inline result parse_bytes(const void *bytes, size_t n)
{
    result res;
    memset(&res, 0, sizeof res);
    void *copy = malloc(n ? n : 1);
    assert_non_null(copy);
    memcpy(copy, bytes, n);
    res.r = fake_image_parse(copy, n, device_cc, &res.img, res.err, sizeof res.err, res.info, sizeof res.info);
    free(copy);
    if (res.r != CUDA_SUCCESS)
        assert_null(res.img); /* untouched */
    return res;
}

/* Parses PTX, with its NUL and, separately, without it. */
static inline result parse_text(const char *ptx)
{
    result a = parse_bytes(ptx, strlen(ptx) + 1);
    result b = parse_bytes(ptx, strlen(ptx));
    assert_int_equal(a.r, b.r);
    assert_string_equal(a.err, b.err);
    fake_image_free(b.img);
    return a;
}

static inline fake_image *parse_ok(const char *ptx)
{
    result r = parse_text(ptx);
    if (r.r != CUDA_SUCCESS)
        print_error("unexpected failure: %s\n", r.err);
    assert_int_equal(r.r, CUDA_SUCCESS);
    assert_string_equal(r.err, "");
    return r.img;
}

/* Parses PTX that must fail with INVALID_PTX and a message naming `line`
 * (0: none) and containing `what`. */
static inline void expect_ptx_error(const char *ptx, unsigned line, const char *what)
{
    result r = parse_text(ptx);
    if (r.r != CUDA_ERROR_INVALID_PTX)
        print_error("expected INVALID_PTX (%s), got %d: %s\n", what, (int)r.r, r.err);
    assert_int_equal(r.r, CUDA_ERROR_INVALID_PTX);
    assert_string_equal(r.info, "");
    if (line) {
        char at[64];
        snprintf(at, sizeof at, "ptxas application ptx input, line %u; ", line);
        if (strncmp(r.err, at, strlen(at)) != 0)
            print_error("expected \"%s\" in: %s\n", at, r.err);
        assert_true(strncmp(r.err, at, strlen(at)) == 0);
    }
    if (!strstr(r.err, what))
        print_error("expected \"%s\" in: %s\n", what, r.err);
    assert_non_null(strstr(r.err, what));
    assert_non_null(strstr(r.err, "ptxas fatal   : Ptx assembly aborted due to errors\n"));
}

static inline const fake_image_function *function(const fake_image *img, const char *name)
{
    const fake_image_function *f = fake_image_find_function(img, name);
    if (!f)
        print_error("no function '%s'\n", name);
    assert_non_null(f);
    return f;
}

static inline const fake_image_global *global(const fake_image *img, const char *name)
{
    const fake_image_global *g = fake_image_find_global(img, name);
    if (!g)
        print_error("no global '%s'\n", name);
    assert_non_null(g);
    return g;
}

/* Checks a layout given as {offset, size} pairs. */
static inline void expect_layout(const fake_image_function *f, size_t param_bytes, size_t n,
                          const size_t (*params)[2])
{
    assert_int_equal(f->nparams, n);
    for (size_t i = 0; i < n; i++) {
        if (f->params[i].offset != params[i][0] || f->params[i].size != params[i][1])
            print_error("%s param %zu: %zu/%zu, expected %zu/%zu\n", f->name, i,
                        f->params[i].offset, f->params[i].size, params[i][0], params[i][1]);
        assert_int_equal(f->params[i].offset, params[i][0]);
        assert_int_equal(f->params[i].size, params[i][1]);
    }
    assert_int_equal(f->param_bytes, param_bytes);
}

#define EXPECT_LAYOUT(f, bytes, ...)                                                           \
    do {                                                                                       \
        static const size_t layout_[][2] = {__VA_ARGS__};                                      \
        expect_layout((f), (bytes), sizeof layout_ / sizeof *layout_, layout_);                \
    } while (0)

static inline void *read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long len = ftell(f);
    assert_true(len > 0);
    assert_int_equal(fseek(f, 0, SEEK_SET), 0);
    void *b = malloc((size_t)len);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    *n = (size_t)len;
    return b;
}

/* The input made by nvcc, or a skip without it. */
static inline void *input(int which, size_t *n)
{
    if (!input_paths[which])
        skip();
    return read_file(input_paths[which], n);
}

#define PTX_HEADER ".version 9.0\n.target sm_90\n.address_size 64\n"

/* PTX_HEADER + body, in a static buffer. */
static inline const char *with_header(const char *body)
{
    static char buf[16384];
    int n = snprintf(buf, sizeof buf, "%s%s", PTX_HEADER, body);
    assert_true(n > 0 && (size_t)n < sizeof buf);
    return buf;
}

/* --- fatbins put together here, around PTX -------------------------------------------------- */

/* A fatbin entry to put together: kind 1 PTX, 2 ELF; csize and usize are the
 * compressed and uncompressed sizes of a compressed payload (0: none). */
typedef struct {
    unsigned kind, arch;
    uint64_t flags;
    const void *payload;
    size_t n;
    uint32_t csize;
    uint64_t usize;
} fat_entry;

/* A fatbin of those entries, laid out as nvcc's (see lib/image/fatbin.c):
 * payloads padded to 16 bytes. */
static inline unsigned char *make_fatbin_of(const fat_entry *es, size_t count, size_t *out_size)
{
    size_t size = 16;
    for (size_t i = 0; i < count; i++)
        size += (es[i].kind == 1 ? 0x50 : 0x40) + (es[i].n + 15) / 16 * 16;
    unsigned char *b = calloc(1, size);
    assert_non_null(b);
    uint32_t magic = 0xBA55ED50u;
    uint16_t version = 1, hs = 16;
    uint64_t fat = size - 16;
    memcpy(b, &magic, 4);
    memcpy(b + 4, &version, 2);
    memcpy(b + 6, &hs, 2);
    memcpy(b + 8, &fat, 8);
    unsigned char *e = b + 16;
    for (size_t i = 0; i < count; i++) {
        size_t ehs = es[i].kind == 1 ? 0x50 : 0x40, padded = (es[i].n + 15) / 16 * 16;
        uint16_t k = (uint16_t)es[i].kind, unk = 0x101;
        uint64_t psize = padded;
        uint32_t ehs32 = (uint32_t)ehs, arch = es[i].arch;
        memcpy(e, &k, 2);
        memcpy(e + 2, &unk, 2);
        memcpy(e + 4, &ehs32, 4);
        memcpy(e + 8, &psize, 8);
        memcpy(e + 16, &es[i].csize, 4);
        memcpy(e + 28, &arch, 4);
        memcpy(e + 40, &es[i].flags, 8);
        memcpy(e + 56, &es[i].usize, 8);
        memcpy(e + ehs, es[i].payload, es[i].n);
        e += ehs + padded;
    }
    *out_size = size;
    return b;
}

/* A fatbin of one uncompressed entry for sm_90/compute_90. */
static inline unsigned char *make_fatbin(unsigned kind, uint64_t flags, const void *payload,
                                         size_t n, size_t *out_size)
{
    fat_entry e = {kind, 90, flags, payload, n, 0, 0};
    return make_fatbin_of(&e, 1, out_size);
}

/* --- what nvcc made ------------------------------------------------------------------------ */

static inline void expect_same_kernels(const fake_image *a, const fake_image *b)
{
    assert_int_equal(a->nfunctions, b->nfunctions);
    for (size_t i = 0; i < a->nfunctions; i++) {
        const fake_image_function *x = &a->functions[i];
        const fake_image_function *y = function(b, x->name);
        assert_int_equal(x->nparams, y->nparams);
        for (size_t k = 0; k < x->nparams; k++) {
            if (x->params[k].offset != y->params[k].offset || x->params[k].size != y->params[k].size)
                print_error("%s param %zu: %zu/%zu against %zu/%zu\n", x->name, k,
                            x->params[k].offset, x->params[k].size, y->params[k].offset,
                            y->params[k].size);
            assert_int_equal(x->params[k].offset, y->params[k].offset);
            assert_int_equal(x->params[k].size, y->params[k].size);
        }
        assert_int_equal(x->param_bytes, y->param_bytes);
        assert_int_equal(x->max_threads, y->max_threads);
        assert_memory_equal(x->reqntid, y->reqntid, sizeof x->reqntid);
        assert_int_equal(x->static_shared, y->static_shared);
    }
}

static inline void expect_same_globals(const fake_image *a, const fake_image *b)
{
    assert_int_equal(a->nglobals, b->nglobals);
    for (size_t i = 0; i < a->nglobals; i++) {
        const fake_image_global *x = &a->globals[i], *y = global(b, a->globals[i].name);
        assert_int_equal(x->size, y->size);
        assert_int_equal(x->constant, y->constant);
        assert_memory_equal(x->init, y->init, x->size);
    }
}

/* Parses for a device of compute capability cc. */
static inline result parse_for(const void *bytes, size_t n, unsigned cc)
{
    unsigned saved = device_cc;
    device_cc = cc;
    result r = parse_bytes(bytes, n);
    device_cc = saved;
    return r;
}

static inline const fake_image_param *param(const fake_image *img, const char *fn, size_t i)
{
    const fake_image_function *f = function(img, fn);
    assert_true(i < f->nparams);
    return &f->params[i];
}

/* Takes the inputs among the arguments, by their names. */
static inline void inputs_from_args(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *slash = strrchr(argv[i], '/'), *base = slash ? slash + 1 : argv[i];
        for (size_t k = 0; k < IN_COUNT; k++)
            if (strcmp(base, input_names[k]) == 0)
                input_paths[k] = argv[i];
    }
}

#endif
