/* The fake driver's module image parser (lib/fake/image/), on its
 * own: PTX as nvcc writes it (the strings below are its output, trimmed),
 * cubins and fatbins that nvcc made at build time from
 * data/fake_image/kernels.cu and bigparams.cu (their paths are the
 * arguments, found by their names: input_names; without nvcc those cases
 * skip), fatbins put together here, and bad input of every kind. Inputs are
 * copied into buffers of exactly their size, so that AddressSanitizer and
 * valgrind see any read past the end.
 *
 * What the real driver did with the same images (H200, 9.0, driver 580,
 * nvcc 13.0) is what the fatbin, relocatable and large-parameter cases
 * expect. */
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
static result parse_bytes(const void *bytes, size_t n)
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
static result parse_text(const char *ptx)
{
    result a = parse_bytes(ptx, strlen(ptx) + 1);
    result b = parse_bytes(ptx, strlen(ptx));
    assert_int_equal(a.r, b.r);
    assert_string_equal(a.err, b.err);
    fake_image_free(b.img);
    return a;
}

static fake_image *parse_ok(const char *ptx)
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
static void expect_ptx_error(const char *ptx, unsigned line, const char *what)
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

static const fake_image_function *function(const fake_image *img, const char *name)
{
    const fake_image_function *f = fake_image_find_function(img, name);
    if (!f)
        print_error("no function '%s'\n", name);
    assert_non_null(f);
    return f;
}

static const fake_image_global *global(const fake_image *img, const char *name)
{
    const fake_image_global *g = fake_image_find_global(img, name);
    if (!g)
        print_error("no global '%s'\n", name);
    assert_non_null(g);
    return g;
}

/* Checks a layout given as {offset, size} pairs. */
static void expect_layout(const fake_image_function *f, size_t param_bytes, size_t n,
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

static void *read_file(const char *path, size_t *n)
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
static void *input(int which, size_t *n)
{
    if (!input_paths[which])
        skip();
    return read_file(input_paths[which], n);
}

static const char *ptx_header = ".version 9.0\n.target sm_90\n.address_size 64\n";

/* ptx_header + body, in a static buffer. */
static const char *with_header(const char *body)
{
    static char buf[16384];
    int n = snprintf(buf, sizeof buf, "%s%s", ptx_header, body);
    assert_true(n > 0 && (size_t)n < sizeof buf);
    return buf;
}

/* --- real nvcc output ---------------------------------------------------------------------- */

/* nvcc -ptx -arch=sm_90 of data/fake_image/kernels.cu, trimmed; in two
 * parts, each under the 4095 characters ISO C promises for a literal. */
static const char ptx_kernels_1[] =
    "//\n"
    "// Generated by NVIDIA NVVM Compiler\n"
    "//\n"
    "// Compiler Build ID: CL-36424714\n"
    "// Cuda compilation tools, release 13.0, V13.0.88\n"
    "// Based on NVVM 7.0.1\n"
    "//\n"
    "\n"
    ".version 9.0\n"
    ".target sm_90\n"
    ".address_size 64\n"
    "\n"
    ".const .align 4 .b8 coeffs[16] = {0, 0, 128, 63, 0, 0, 0, 64, 0, 0, 64, 64, 0, 0, 128, 64};\n"
    ".const .align 4 .b8 ctab[12];\n"
    ".global .align 4 .u32 counter = 7;\n"
    ".global .align 8 .u64 big = 5;\n"
    ".global .align 1 .b8 carr[16] = {1, 2, 3};\n"
    ".global .align 8 .f64 dnoinit;\n"
    ".global .align 4 .u32 mangled_global = 3;\n"
    "// _ZZ7boundedE3buf has been demoted\n"
    "// _ZZ7boundedE4buf2 has been demoted\n"
    ".extern .shared .align 16 .b8 d[];\n"
    "\n"
    ".func  (.param .b32 func_retval0) _Z6helperf(\n"
    "\t.param .b32 _Z6helperf_param_0\n"
    ")\n"
    "{\n"
    "\t.reg .f32 \t%f<4>;\n"
    "\t.reg .b32 \t%r<2>;\n"
    "\n"
    "\n"
    "\tld.param.f32 \t%f1, [_Z6helperf_param_0];\n"
    "\tld.global.u32 \t%r1, [mangled_global];\n"
    "\tcvt.rn.f32.s32 \t%f2, %r1;\n"
    "\tfma.rn.f32 \t%f3, %f1, 0f40000000, %f2;\n"
    "\tst.param.f32 \t[func_retval0+0], %f3;\n"
    "\tret;\n"
    "\n"
    "}\n"
    "\t// .globl\tnoparams\n"
    ".visible .entry noparams()\n"
    "{\n"
    "\n"
    "\n"
    "\n"
    "\tret;\n"
    "\n"
    "}\n"
    "\t// .globl\tptrs\n"
    ".visible .entry ptrs(\n"
    "\t.param .u64 ptrs_param_0,\n"
    "\t.param .u64 ptrs_param_1,\n"
    "\t.param .u64 ptrs_param_2,\n"
    "\t.param .u32 ptrs_param_3\n"
    ")\n"
    "{\n"
    "\t.reg .pred \t%p<2>;\n"
    "\t.reg .f32 \t%f<8>;\n"
    "\t.reg .b32 \t%r<15>;\n"
    "\t.reg .b64 \t%rd<18>;\n"
    "\n"
    "\n"
    "\tld.param.u64 \t%rd1, [ptrs_param_0];\n"
    "\tld.param.u32 \t%r2, [ptrs_param_3];\n"
    "\tmov.u32 \t%r1, %tid.x;\n"
    "\tsetp.ge.s32 \t%p1, %r1, %r2;\n"
    "\t@%p1 bra \t$L__BB2_2;\n"
    "\n"
    "\tcvta.to.global.u64 \t%rd4, %rd1;\n"
    "\tld.global.nc.f32 \t%f1, [%rd8];\n"
    "\tand.b32  \t%r6, %r5, -4;\n"
    "\tmov.u64 \t%rd10, coeffs;\n"
    "\tld.const.f32 \t%f4, [%rd11];\n"
    "\tmul.hi.s32 \t%r8, %r1, 1431655766;\n"
    "\tst.global.f32 \t[%rd16], %f7;\n"
    "\n"
    "$L__BB2_2:\n"
    "\tmov.u64 \t%rd17, counter;\n"
    "\tatom.global.add.u32 \t%r14, [%rd17], 1;\n"
    "\tret;\n"
    "\n"
    "}\n"
    "\t// .globl\tsmall\n"
    ".visible .entry small(\n"
    "\t.param .u8 small_param_0,\n"
    "\t.param .u8 small_param_1,\n"
    "\t.param .u16 small_param_2,\n"
    "\t.param .u16 small_param_3,\n"
    "\t.param .u32 small_param_4,\n"
    "\t.param .f64 small_param_5,\n"
    "\t.param .u64 small_param_6,\n"
    "\t.param .u64 small_param_7\n"
    ")\n"
    "{\n"
    "\t.reg .b16 \t%rs<3>;\n"
    "\t.reg .b64 \t%rd<12>;\n"
    "\n"
    "\n"
    "\tld.param.u8 \t%rs1, [small_param_1];\n"
    "\tld.param.s8 \t%rs2, [small_param_0];\n"
    "\tcvt.rzi.s64.f64 \t%rd5, %fd1;\n"
    "\tld.global.s8 \t%rd6, [carr+1];\n"
    "\tst.global.u64 \t[%rd3], %rd11;\n"
    "\tret;\n"
    "\n"
    "}\n";
static const char ptx_kernels_2[] =
    "\t// .globl\tbystruct\n"
    ".visible .entry bystruct(\n"
    "\t.param .align 8 .b8 bystruct_param_0[24],\n"
    "\t.param .align 4 .b8 bystruct_param_1[16],\n"
    "\t.param .align 4 .b8 bystruct_param_2[12],\n"
    "\t.param .u8 bystruct_param_3,\n"
    "\t.param .u64 bystruct_param_4\n"
    ")\n"
    "{\n"
    "\t.reg .b16 \t%rs<7>;\n"
    "\n"
    "\n"
    "\tld.param.s8 \t%rs1, [bystruct_param_3];\n"
    "\tld.param.v4.u8 \t{%rs2, %rs3, %rs4, %rs5}, [bystruct_param_1+12];\n"
    "\tld.param.f64 \t%fd1, [bystruct_param_0+8];\n"
    "\tst.global.u64 \t[%rd3], %rd16;\n"
    "\tret;\n"
    "\n"
    "}\n"
    "\t// .globl\tbigstruct\n"
    ".visible .entry bigstruct(\n"
    "\t.param .align 4 .b8 bigstruct_param_0[132],\n"
    "\t.param .u64 bigstruct_param_1\n"
    ")\n"
    "{\n"
    "\tld.param.u32 \t%r1, [bigstruct_param_0+128];\n"
    "\tret;\n"
    "}\n"
    "\t// .globl\taligned\n"
    ".visible .entry aligned(\n"
    "\t.param .u8 aligned_param_0,\n"
    "\t.param .align 64 .b8 aligned_param_1[128],\n"
    "\t.param .align 32 .b8 aligned_param_2[32],\n"
    "\t.param .u8 aligned_param_3,\n"
    "\t.param .u64 aligned_param_4\n"
    ")\n"
    "{\n"
    "\tld.param.u8 \t%r2, [aligned_param_1+127];\n"
    "\tret;\n"
    "}\n"
    "\t// .globl\t_Z9cxxkerneliPf\n"
    ".visible .entry _Z9cxxkerneliPf(\n"
    "\t.param .u32 _Z9cxxkerneliPf_param_0,\n"
    "\t.param .u64 _Z9cxxkerneliPf_param_1\n"
    ")\n"
    "{\n"
    "\tld.global.f64 \t%fd1, [dnoinit];\n"
    "\tret;\n"
    "}\n"
    "\t// .globl\t_Z4tmplIcEvPT_S0_\n"
    ".weak .entry _Z4tmplIcEvPT_S0_(\n"
    "\t.param .u64 _Z4tmplIcEvPT_S0__param_0,\n"
    "\t.param .u8 _Z4tmplIcEvPT_S0__param_1\n"
    ")\n"
    "{\n"
    "\tret;\n"
    "}\n"
    "\t// .globl\tbounded\n"
    ".visible .entry bounded(\n"
    "\t.param .u64 bounded_param_0\n"
    ")\n"
    ".maxntid 256, 1, 1\n"
    ".minnctapersm 2\n"
    "{\n"
    "\t.reg .f32 \t%f<5>;\n"
    "\t// demoted variable\n"
    "\t.shared .align 4 .b8 _ZZ7boundedE3buf[1024];\n"
    "\t// demoted variable\n"
    "\t.shared .align 8 .b8 _ZZ7boundedE4buf2[80];\n"
    "\n"
    "\tld.param.u64 \t%rd1, [bounded_param_0];\n"
    "\t{ // callseq 0, 0\n"
    "\t.reg .b32 temp_param_reg;\n"
    "\t.param .b32 param0;\n"
    "\tst.param.f32 \t[param0+0], %f1;\n"
    "\t.param .b32 retval0;\n"
    "\tcall.uni (retval0), \n"
    "\t_Z6helperf, \n"
    "\t(\n"
    "\tparam0\n"
    "\t);\n"
    "\tld.param.f32 \t%f2, [retval0+0];\n"
    "\t} // callseq 0\n"
    "\tmov.u32 \t%r3, _ZZ7boundedE3buf;\n"
    "\tmov.u64 \t%rd7, 4607182418800017408;\n"
    "\tbar.sync \t0;\n"
    "\tld.shared.f64 \t%fd2, [_ZZ7boundedE4buf2+24];\n"
    "\tret;\n"
    "\n"
    "}\n"
    "\t// .globl\tbounded1\n"
    ".visible .entry bounded1(\n"
    "\t.param .u64 bounded1_param_0\n"
    ")\n"
    ".maxntid 128, 1, 1\n"
    "{\n"
    "\tret;\n"
    "}\n"
    "\t// .globl\tdynshared\n"
    ".visible .entry dynshared(\n"
    "\t.param .u64 dynshared_param_0\n"
    ")\n"
    "{\n"
    "\tmov.u32 \t%r3, d;\n"
    "\tst.shared.u32 \t[%r4], %r5;\n"
    "\tld.shared.f32 \t%f1, [d];\n"
    "\tret;\n"
    "}\n";

static char ptx_kernels[sizeof ptx_kernels_1 + sizeof ptx_kernels_2];

static int setup_ptx_kernels(void **state)
{
    (void)state;
    snprintf(ptx_kernels, sizeof ptx_kernels, "%s%s", ptx_kernels_1, ptx_kernels_2);
    return 0;
}

static void test_ptx_kernels(void **state)
{
    (void)state;
    fake_image *img = parse_ok(ptx_kernels);
    assert_int_equal(img->format, FAKE_IMAGE_PTX);
    assert_string_equal(img->target, "sm_90");
    assert_int_equal(img->ptx_version_major, 9);
    assert_int_equal(img->ptx_version_minor, 0);
    /* the entries only, in order; not the .func */
    assert_int_equal(img->nfunctions, 11);
    assert_string_equal(img->functions[0].name, "noparams");
    assert_null(fake_image_find_function(img, "_Z6helperf"));

    const fake_image_function *f = function(img, "noparams");
    assert_int_equal(f->nparams, 0);
    assert_int_equal(f->param_bytes, 0);
    assert_int_equal(f->max_threads, 0);
    assert_int_equal(f->static_shared, 0);

    EXPECT_LAYOUT(function(img, "ptrs"), 28, {0, 8}, {8, 8}, {16, 8}, {24, 4});
    EXPECT_LAYOUT(function(img, "small"), 40, {0, 1}, {1, 1}, {2, 2}, {4, 2}, {8, 4}, {16, 8},
                  {24, 8}, {32, 8});
    /* struct {char; double; int} (align 8), struct {float3; char}, float3 */
    EXPECT_LAYOUT(function(img, "bystruct"), 64, {0, 24}, {24, 16}, {40, 12}, {52, 1}, {56, 8});
    EXPECT_LAYOUT(function(img, "bigstruct"), 144, {0, 132}, {136, 8});
    /* .align 64 and 32 apply to the address in the constant bank, which on
     * sm_90 starts at 0x210: 0x210 + 48 is a multiple of 64 */
    EXPECT_LAYOUT(function(img, "aligned"), 224, {0, 1}, {48, 128}, {176, 32}, {208, 1}, {216, 8});
    assert_int_equal(function(img, "aligned")->params[1].align, 64);
    EXPECT_LAYOUT(function(img, "_Z9cxxkerneliPf"), 16, {0, 4}, {8, 8});
    EXPECT_LAYOUT(function(img, "_Z4tmplIcEvPT_S0_"), 9, {0, 8}, {8, 1});
    assert_int_equal(function(img, "small")->params[2].align, 2);

    f = function(img, "bounded");
    assert_int_equal(f->max_threads, 256);
    assert_int_equal(f->reqntid[0], 0);
    assert_int_equal(f->static_shared, 1024 + 80);
    assert_int_equal(function(img, "bounded1")->max_threads, 128);
    assert_int_equal(function(img, "dynshared")->static_shared, 0); /* extern shared is dynamic */

    fake_image_free(img);
    result r = parse_text(ptx_kernels);
    assert_non_null(strstr(r.info, "ptxas info    : Compiling entry function 'ptrs' for 'sm_90'\n"));
    assert_non_null(strstr(r.info, "ptxas info    : 40 bytes gmem, 28 bytes cmem[3]\n"));
    fake_image_free(r.img);
}

static void test_ptx_globals(void **state)
{
    (void)state;
    fake_image *img = parse_ok(ptx_kernels);
    assert_int_equal(img->nglobals, 7);
    assert_null(fake_image_find_global(img, "d")); /* .extern .shared */
    assert_null(fake_image_find_global(img, "_ZZ7boundedE3buf"));

    const fake_image_global *g = global(img, "coeffs");
    static const float coeffs[4] = {1.0f, 2.0f, 3.0f, 4.0f};
    assert_true(g->constant);
    assert_int_equal(g->size, 16);
    assert_int_equal(g->align, 4);
    assert_memory_equal(g->init, coeffs, 16);

    g = global(img, "ctab");
    assert_true(g->constant);
    assert_int_equal(g->size, 12);
    static const unsigned char zeros[16] = {0};
    assert_memory_equal(g->init, zeros, 12);

    g = global(img, "counter");
    uint32_t u32 = 7;
    assert_false(g->constant);
    assert_int_equal(g->size, 4);
    assert_memory_equal(g->init, &u32, 4);

    g = global(img, "big");
    uint64_t u64 = 5;
    assert_int_equal(g->size, 8);
    assert_int_equal(g->align, 8);
    assert_memory_equal(g->init, &u64, 8);

    g = global(img, "carr");
    static const unsigned char carr[16] = {1, 2, 3};
    assert_int_equal(g->size, 16);
    assert_int_equal(g->align, 1);
    assert_memory_equal(g->init, carr, 16);

    g = global(img, "dnoinit");
    assert_int_equal(g->size, 8);
    assert_memory_equal(g->init, zeros, 8);
    assert_int_equal(global(img, "mangled_global")->init[0], 3);
    fake_image_free(img);
}

/* Initializers as ptxas takes them. */
static void test_ptx_initializers(void **state)
{
    (void)state;
    fake_image *img = parse_ok(with_header(
        ".global .u32 a, b = 3, c[2] = {1, 2};\n"
        ".global .u32 arr[] = {1, 2, 3};\n"
        ".global .u32 m[2][3] = {{1, 2}, {4}};\n"
        ".global .s8 neg[2] = {-1, -128};\n"
        ".global .u8 wrap = 300;\n"
        ".global .u32 hex = 0x1f, oct = 017, bin = 0b101, uns = 7U;\n"
        ".global .f32 f = 0f3F800000, fd = 1.5, fneg = -2.5e1;\n"
        ".global .f64 dd = 0d4000000000000000, df = 0f3F800000;\n"
        ".global .b32 bits = 0f40400000;\n"
        ".global .align 16 .v2 .f32 v[2] = {{1.0, 2.0}, {3.0}};\n"
        ".global .u64 addr = generic(a);\n"
        ".global .u64 sum = a + 4;\n"
        ".const .align 8 .u16 empty[4] = {};\n"
        "/* a comment with ./{}[] and UTF-8: \xc3\xa9 */\n"
        ".visible .global .align 4 .b8 vis[2];\n"));
    uint32_t u[6];
    memcpy(u, global(img, "a")->init, 4);
    assert_int_equal(u[0], 0);
    memcpy(u, global(img, "b")->init, 4);
    assert_int_equal(u[0], 3);
    memcpy(u, global(img, "c")->init, 8);
    assert_int_equal(u[0], 1);
    assert_int_equal(u[1], 2);
    assert_int_equal(global(img, "arr")->size, 12);
    memcpy(u, global(img, "arr")->init, 12);
    assert_int_equal(u[2], 3);
    assert_int_equal(global(img, "m")->size, 24);
    memcpy(u, global(img, "m")->init, 24);
    assert_int_equal(u[0], 1);
    assert_int_equal(u[1], 2);
    assert_int_equal(u[2], 0);
    assert_int_equal(u[3], 4);
    assert_int_equal(u[4], 0);
    assert_int_equal(u[5], 0);
    assert_int_equal((signed char)global(img, "neg")->init[0], -1);
    assert_int_equal((signed char)global(img, "neg")->init[1], -128);
    assert_int_equal(global(img, "wrap")->init[0], 300 & 0xff);
    memcpy(u, global(img, "hex")->init, 4);
    assert_int_equal(u[0], 31);
    memcpy(u, global(img, "oct")->init, 4);
    assert_int_equal(u[0], 15);
    memcpy(u, global(img, "bin")->init, 4);
    assert_int_equal(u[0], 5);
    memcpy(u, global(img, "uns")->init, 4);
    assert_int_equal(u[0], 7);
    float f;
    memcpy(&f, global(img, "f")->init, 4);
    assert_true(f == 1.0f);
    memcpy(&f, global(img, "fd")->init, 4);
    assert_true(f == 1.5f);
    memcpy(&f, global(img, "fneg")->init, 4);
    assert_true(f == -25.0f);
    double d;
    memcpy(&d, global(img, "dd")->init, 8);
    assert_true(d == 2.0);
    memcpy(&d, global(img, "df")->init, 8);
    assert_true(d == 1.0);
    memcpy(&f, global(img, "bits")->init, 4);
    assert_true(f == 3.0f);
    const fake_image_global *g = global(img, "v");
    assert_int_equal(g->size, 16);
    assert_int_equal(g->align, 16);
    float v[4];
    memcpy(v, g->init, 16);
    assert_true(v[0] == 1.0f && v[1] == 2.0f && v[2] == 3.0f && v[3] == 0.0f);
    static const unsigned char zeros[8] = {0};
    assert_memory_equal(global(img, "addr")->init, zeros, 8); /* no addresses in the fake */
    assert_memory_equal(global(img, "sum")->init, zeros, 8);
    assert_true(global(img, "empty")->constant);
    assert_int_equal(global(img, "empty")->align, 8);
    assert_int_equal(global(img, "vis")->size, 2);
    fake_image_free(img);

    expect_ptx_error(with_header(".global .f32 x = 2;\n"), 4, "Initial value type mismatch");
    expect_ptx_error(with_header(".global .u32 x = 1.5;\n"), 4, "Initial value type mismatch");
    expect_ptx_error(with_header(".global .u32 x = {1};\n"), 4, "Initial value type mismatch");
    expect_ptx_error(with_header(".global .u32 x[2][2] = {1, 2, 3, 4};\n"), 4,
                     "Greater number of elements in array initializer");
    expect_ptx_error(with_header(".global .u32 x[2][2] = {{1, 2}, 3};\n"), 4,
                     "Initial value type mismatch");
    expect_ptx_error(with_header(".global .u32 x[4] = {1, 2, 3, 4, 5};\n"), 4,
                     "Greater number of elements in array initializer");
    expect_ptx_error(with_header(".global .u32 x[2] = {1, 2,};\n"), 4, "Parsing error near '}'");
    expect_ptx_error(with_header(".global .u32 x[2] = {1 2};\n"), 4, "Parsing error near '2'");
    expect_ptx_error(with_header(".global .u32 x[2] = {1, 2;\n"), 4, "Parsing error near ';'");
    expect_ptx_error(with_header(".global .u32 g[];\n"), 4, "has incomplete type");
    expect_ptx_error(with_header(".global .u32 g[0];\n"), 4, "has incomplete type");
    expect_ptx_error(with_header(".global .align 3 .u32 g;\n"), 4,
                     "Alignment must be a power of two");
    expect_ptx_error(with_header(".global .u32 g\n"), 5, "Parsing error near ''");
    expect_ptx_error(with_header(".global g;\n"), 4, "Parsing error near 'g'");
    expect_ptx_error(with_header(".global .u32 x = 0f3F80;\n"), 4, "Parsing error near '0f3F80'");
    expect_ptx_error(with_header(".global .b8 huge[1125899906842624];\n"), 4,
                     "Variable 'huge' is too large");
    expect_ptx_error(with_header(".global .b8 huge[65536][65536][65536][65536];\n"), 4,
                     "Variable 'huge' is too large");
}

static void test_ptx_too_large_globals(void **state)
{
    (void)state;
    /* past FAKE_IMAGE_MAX_GLOBAL_BYTES: out of memory, as a too large module is */
    result r = parse_text(with_header(".global .b8 a[1073741824];\n.global .b8 b[1];\n"));
    assert_int_equal(r.r, CUDA_ERROR_OUT_OF_MEMORY);
    r = parse_text(with_header(".global .b8 huge[1099511627776];\n"));
    assert_int_equal(r.r, CUDA_ERROR_OUT_OF_MEMORY);
}

/* What ptxas does with .extern, prototypes and calls. */
static void test_ptx_declarations(void **state)
{
    (void)state;
    /* printf, malloc, free and assert resolve; unused externs are fine; an
     * .extern variable nothing defines becomes one (ptxas warns) */
    fake_image *img = parse_ok(with_header(
        ".extern .func  (.param .b32 func_retval0) vprintf\n"
        "(\n"
        "\t.param .b64 vprintf_param_0,\n"
        "\t.param .b64 vprintf_param_1\n"
        ")\n"
        ";\n"
        ".extern .func (.param .b32 r) unused (.param .b32 a);\n"
        ".extern .global .u32 eg;\n"
        ".extern .global .u32 defined_later;\n"
        ".visible .global .u32 defined_later = 9;\n"
        ".func f();\n"
        ".visible .entry pr()\n"
        "{\n"
        "\t{ // callseq 0, 0\n"
        "\t.param .b64 param0;\n"
        "\t.param .b64 param1;\n"
        "\t.param .b32 retval0;\n"
        "\tcall.uni (retval0), \n"
        "\tvprintf, \n"
        "\t(\n"
        "\tparam0, \n"
        "\tparam1\n"
        "\t);\n"
        "\t} // callseq 0\n"
        "\tcall f, ();\n"
        "\tret;\n"
        "}\n"
        ".func f() { ret; }\n"));
    assert_int_equal(img->nglobals, 2);
    assert_int_equal(global(img, "eg")->size, 4);
    assert_int_equal(global(img, "defined_later")->init[0], 9);
    fake_image_free(img);
    result r = parse_text(with_header(".extern .global .u32 eg;\n.entry e() { ret; }\n"));
    assert_int_equal(r.r, CUDA_SUCCESS);
    assert_non_null(strstr(r.info, "ptxas warning : Unresolved extern variable 'eg'"));
    fake_image_free(r.img);

    expect_ptx_error(with_header(".extern .func g();\n.entry e()\n{\ncall g, ();\nret;\n}\n"), 0,
                     "ptxas fatal   : Unresolved extern function 'g'");
    expect_ptx_error(with_header(".entry e();\n"), 0, "Unresolved extern function 'e'");
    expect_ptx_error(with_header(".entry e() { ret; }\n.entry e() { ret; }\n"), 5,
                     "Duplicate definition of function 'e'");
    expect_ptx_error(with_header(".func e() { ret; }\n.entry e() { ret; }\n"), 5,
                     "Duplicate definition of function 'e'");
    expect_ptx_error(with_header(".global .u32 g;\n.global .u32 g;\n"), 5,
                     "Duplicate definition of variable 'g'");
    expect_ptx_error(with_header(".entry e() { ret; }\n.global .u32 e;\n"), 5,
                     "Inconsistent redefinition of variable 'e'");
}

/* The forms of nvcc -G, -lineinfo and -rdc output. */
static void test_ptx_debug_forms(void **state)
{
    (void)state;
    fake_image *img = parse_ok(
        "//\n// Generated by NVIDIA NVVM Compiler\n//\n"
        ".version 9.0\n"
        ".target sm_90, debug\n"
        ".address_size 64\n"
        "\t.file\t1 \"/tmp/k.cu\"\n"
        "\t.file\t2 \"/usr/local/cuda/include/vector_types.h\", 1700000000, 1234\n"
        ".weak .func _Z7weakishi(.param .b32 a) .noreturn { trap; }\n"
        ".visible .entry loops(\n"
        "\t.param .u64 .ptr .global .align 4 loops_param_0,\n"
        "\t.param .u32 loops_param_1\n"
        ")\n"
        ".reqntid 32, 2\n"
        "{\n"
        "\t.local .align 8 .b8 \t__local_depot0[16];\n"
        "\t.reg .b64 \t%SP;\n"
        "$L__func_begin0:\n"
        "\t.loc\t1 22 0\n"
        "\t.loc\t1 5 3, function_name $L__info_string0, inlined_at 1 10 5\n"
        "$L__BB5_2:\n"
        "\t.pragma \"nounroll\";\n"
        "\tshfl.sync.idx.b32 \t%r9|%p2, %r5, %r4, %r6, %r8;\n"
        "\t@!%p3 bra.uni \t$L__BB5_2;\n"
        "\tfence.proxy.async.shared::cta;\n"
        "\tcp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1, {%r2, %r3}], [%r4];\n"
        "\twgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f1, %f2, %f3, %f4}, %rd1, %rd2, p, 1, 1, 0, 0;\n"
        "\tprototype_0 : .callprototype (.param .b32 _) _ (.param .b32 _);\n"
        "\tret;\n"
        "$L__func_end0:\n"
        "}\n"
        "\t.section\t.debug_abbrev\n"
        "\t{\n"
        ".b8 1\n"
        ".b8 17\n"
        "\t}\n"
        "\t.section\t.debug_str\n"
        "\t{\n"
        "$L__info_string0:\n"
        ".b8 95,90,0\n"
        "\t}\n");
    const fake_image_function *f = function(img, "loops");
    /* the .align after .ptr is the pointee's */
    EXPECT_LAYOUT(f, 12, {0, 8}, {8, 4});
    assert_int_equal(f->params[0].align, 8);
    assert_int_equal(f->reqntid[0], 32);
    assert_int_equal(f->reqntid[1], 2);
    assert_int_equal(f->reqntid[2], 1);
    assert_int_equal(f->max_threads, 0);
    fake_image_free(img);
}

/* Layout rules, as ptxas gave them for this very PTX (see fake_image.h). */
static void test_ptx_param_alignment(void **state)
{
    (void)state;
    static const char body[] =
        ".visible .entry r3(\n"
        "\t.param .u8 a,\n"
        "\t.param .u64 .ptr .global .align 16 b,\n"
        "\t.param .u8 c,\n"
        "\t.param .align 32 .b8 d[4],\n"
        "\t.param .align 4 .u64 e,\n"
        "\t.param .b16 f,\n"
        "\t.param .s8 g,\n"
        "\t.param .b64 h[2],\n"
        "\t.param .align 128 .b8 i[1]\n"
        ")\n"
        "{ ret; }\n"
        ".visible .entry r2(.param .u8 a, .param .align 1 .u32 b, .param .b8 c[3], .param .align 2 "
        ".b8 d[3], .param .f16 e, .param .texref t)\n"
        "{ ret; }\n";
    char ptx[2048];
    /* compiled for the device (the JIT's target), whatever the .target:
     * compute_80 PTX on an H200 was laid out as sm_90 */
    struct {
        const char *target;
        unsigned cc;
        size_t offsets[9], bytes;
    } cases[] = {
        {"sm_80", 80, {0, 8, 16, 32, 40, 48, 50, 56, 160}, 161},
        {"sm_80", 86, {0, 8, 16, 32, 40, 48, 50, 56, 160}, 161},
        {"sm_90", 90, {0, 8, 16, 48, 56, 64, 66, 72, 112}, 113},
        {"sm_80", 90, {0, 8, 16, 48, 56, 64, 66, 72, 112}, 113},
        {"sm_90a", 90, {0, 8, 16, 48, 56, 64, 66, 72, 112}, 113},
        {"sm_100", 100, {0, 8, 16, 32, 40, 48, 50, 56, 128}, 129},
        {"sm_90", 100, {0, 8, 16, 32, 40, 48, 50, 56, 128}, 129},
        {"sm_80", 120, {0, 8, 16, 32, 40, 48, 50, 56, 128}, 129},
        {"sm_120", 120, {0, 8, 16, 32, 40, 48, 50, 56, 128}, 129},
        {"sm_120", 0, {0, 8, 16, 32, 40, 48, 50, 56, 128}, 129}, /* 0: for the .target */
        {"sm_80", 0, {0, 8, 16, 32, 40, 48, 50, 56, 160}, 161},
    };
    static const size_t sizes[9] = {1, 8, 1, 4, 8, 2, 1, 16, 1};
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        snprintf(ptx, sizeof ptx, ".version 9.0\n.target %s\n.address_size 64\n%s", cases[k].target,
                 body);
        device_cc = cases[k].cc;
        fake_image *img = parse_ok(ptx);
        device_cc = 90;
        assert_string_equal(img->target, cases[k].target);
        const fake_image_function *f = function(img, "r3");
        assert_int_equal(f->nparams, 9);
        for (size_t i = 0; i < 9; i++) {
            assert_int_equal(f->params[i].offset, cases[k].offsets[i]);
            assert_int_equal(f->params[i].size, sizes[i]);
        }
        assert_int_equal(f->param_bytes, cases[k].bytes);
        /* .align below the natural alignment does not lower it; a texref is 8 bytes */
        EXPECT_LAYOUT(function(img, "r2"), 32, {0, 1}, {4, 4}, {8, 3}, {12, 3}, {16, 2}, {24, 8});
        fake_image_free(img);
    }
}

/* A kernel with hundreds of parameters and a long name. */
static void test_ptx_many_params(void **state)
{
    (void)state;
    enum { N = 300 };
    static const char *const types[] = {".u8", ".u64", ".u16", ".f32", ".b8", ".f64", ".s32"};
    static const size_t tsize[] = {1, 8, 2, 4, 1, 8, 4};
    size_t cap = 64 * 1024, len = 0;
    char *ptx = malloc(cap);
    assert_non_null(ptx);
    char name[5001];
    memset(name, 'k', 5000);
    name[5000] = '\0';
    len += (size_t)snprintf(ptx + len, cap - len, "%s.visible .entry %s(\n", ptx_header, name);
    size_t expect_off[N], expect_size[N], end = 0;
    for (size_t i = 0; i < N; i++) {
        size_t t = i % 7, count = i % 5 == 4 ? 3 : 1;
        if (count > 1)
            len += (size_t)snprintf(ptx + len, cap - len, "\t.param .align 4 %s p%zu[%zu]%s\n",
                                    types[t], i, count, i + 1 < N ? "," : "");
        else
            len += (size_t)snprintf(ptx + len, cap - len, "\t.param %s p%zu%s\n", types[t], i,
                                    i + 1 < N ? "," : "");
        size_t a = count > 1 && tsize[t] < 4 ? 4 : tsize[t]; /* up to 16: as relative */
        end = (end + a - 1) / a * a;
        expect_off[i] = end;
        expect_size[i] = tsize[t] * count;
        end += expect_size[i];
    }
    len += (size_t)snprintf(ptx + len, cap - len, ")\n{\n\tret;\n}\n");
    assert_true(len < cap);
    fake_image *img = parse_ok(ptx);
    const fake_image_function *f = function(img, name);
    assert_int_equal(f->nparams, N);
    for (size_t i = 0; i < N; i++) {
        assert_int_equal(f->params[i].offset, expect_off[i]);
        assert_int_equal(f->params[i].size, expect_size[i]);
    }
    assert_int_equal(f->param_bytes, end);
    result r = parse_text(ptx);
    assert_non_null(strstr(r.info, name));
    fake_image_free(r.img);
    fake_image_free(img);
    free(ptx);

    /* ptxas' limit: 0x7ffc bytes */
    img = parse_ok(with_header(".entry big(.param .align 4 .b8 p[32764])\n{ ret; }\n"));
    assert_int_equal(function(img, "big")->param_bytes, 32764);
    fake_image_free(img);
    expect_ptx_error(with_header(".entry big(.param .align 4 .b8 p[32765])\n{ ret; }\n"), 4,
                     "Entry function 'big' uses too much parameter space (0x7ffd bytes, 0x7ffc max).");
    expect_ptx_error(with_header(".entry big(.param .b8 p[99999999999999999999999])\n{ ret; }\n"), 4,
                     "uses too much parameter space");
}

static void test_ptx_shared(void **state)
{
    (void)state;
    fake_image *img = parse_ok(with_header(
        ".shared .align 4 .b8 module_buf[100];\n"
        ".shared .align 4 .b8 unused_buf[1000];\n"
        ".entry a()\n{\n"
        "\t.shared .align 8 .b8 s[12];\n"
        "\t.shared .align 4 .b8 t[3];\n"
        "\t.shared .align 16 .b8 u[1];\n"
        "\tret;\n}\n"
        ".entry b()\n{\n"
        "\t.shared .align 8 .b8 s[12];\n"
        "\tmov.u32 %r1, module_buf;\n"
        "\tmov.u32 %r1, module_buf;\n"
        "\tret;\n}\n"
        ".func c()\n{\n"
        "\t.shared .u32 x;\n"
        "\tret;\n}\n"));
    /* in order, aligned, as ptxas (17 bytes smem for a) */
    assert_int_equal(function(img, "a")->static_shared, 17);
    /* module-scope shared memory counts where named, once */
    assert_int_equal(function(img, "b")->static_shared, 12 + 100);
    fake_image_free(img);
    img = parse_ok(with_header(".entry big()\n{\n.shared .align 4 .b8 s[49152];\nret;\n}\n"));
    assert_int_equal(function(img, "big")->static_shared, 49152);
    fake_image_free(img);
    expect_ptx_error(with_header(".entry big()\n{\n.shared .align 4 .b8 s[49153];\nret;\n}\n"), 0,
                     "ptxas error   : Entry function 'big' uses too much shared data (0xc001 bytes, 0xc000 max)");
    expect_ptx_error(with_header(".entry e()\n{\n.shared .u32 s = 1;\nret;\n}\n"), 6,
                     "No initial value is allowed for 's' in this state space");
}

static void test_ptx_launch_bounds(void **state)
{
    (void)state;
    fake_image *img = parse_ok(with_header(
        ".entry a() .maxntid 32, 32, 2 { ret; }\n"
        ".entry b() .maxntid 2048 { ret; }\n"
        ".entry c() .reqntid 64 .minnctapersm 4 .maxnreg 32 { ret; }\n"
        ".entry d() .explicitcluster .reqnctapercluster 2, 1, 1 .maxclusterrank 8 { ret; }\n"
        ".entry e() .pragma \"nounroll\"; { ret; }\n"));
    assert_int_equal(function(img, "a")->max_threads, 2048);
    assert_int_equal(function(img, "b")->max_threads, 2048);
    assert_int_equal(function(img, "c")->reqntid[0], 64);
    assert_int_equal(function(img, "c")->reqntid[1], 1);
    assert_int_equal(function(img, "c")->max_threads, 0);
    assert_int_equal(function(img, "d")->max_threads, 0);
    fake_image_free(img);
    expect_ptx_error(with_header(".entry e() .maxntid 1,2,3,4 { ret; }\n"), 4, "Parsing error near ','");
    expect_ptx_error(with_header(".entry e()\n.maxntid 64\n.reqntid 16\n{ ret; }\n"), 6,
                     "Conflicting directives: .maxntid and .reqntid cannot both be specified");
}

static void test_ptx_syntax_errors(void **state)
{
    (void)state;
    static const char unknown[] =
        ".version 9.0\n"
        ".target sm_90\n"
        ".address_size 64\n"
        "\n"
        ".visible .entry add(\n"
        "\t.param .u64 add_param_0\n"
        ")\n"
        "{\n"
        "\t.reg .b64 \t%rd<3>;\n"
        "\tld.param.u64 \t%rd1, [add_param_0];\n"
        "\tfrobnicate.u32 %rd1, %rd1;\n"
        "\tret;\n"
        "}\n";
    expect_ptx_error(unknown, 11, "error   : Not a name of any known instruction: 'frobnicate'");
    /* the same in a .func, after a predicate */
    expect_ptx_error(with_header(".func f()\n{\n@%p1 frob;\n}\n"), 6,
                     "Not a name of any known instruction: 'frob'");

    expect_ptx_error(".target sm_90\n.entry a() { ret; }\n", 1,
                     "fatal   : Missing .version directive at start of file");
    expect_ptx_error("// nothing but a comment\n", 2, "Missing .version directive");
    expect_ptx_error(".version 9\n.target sm_90\n", 1, "Missing .version directive");
    expect_ptx_error(".version 9.0\n.entry e() { ret; }\n", 2, "Missing .target directive");
    expect_ptx_error(".version 9.0\n.target foo\n", 2, "Target architecture not defined");
    expect_ptx_error(".version 9.0\n.target sm_9000000000000000000000000000000000000\n", 2,
                     "Target architecture not defined");
    /* braces */
    expect_ptx_error(".version 9.0\n.target sm_90\n.entry a() { ret; \n", 4,
                     "Parsing error near '': syntax error");
    expect_ptx_error(".version 9.0\n.target sm_90\n.entry a() { ret; }}\n", 3,
                     "Parsing error near '}': syntax error");
    expect_ptx_error(with_header(".entry a() { { ret; }\n"), 5, "Parsing error near ''");
    expect_ptx_error(with_header(".entry a(.param .u32 x { ret; }\n"), 4, "Parsing error near '{'");
    expect_ptx_error(with_header(".entry a() { ld.param.u32 %r1, [x; }\n"), 4, "Parsing error near ';'");
    expect_ptx_error(with_header(".entry a() { call f, (p; }\n"), 4, "Parsing error near ';'");
    expect_ptx_error(with_header(".entry a() { ret] }\n"), 4, "Parsing error near ']'");
    /* statements */
    expect_ptx_error(".version 9.0\n.target sm_90\n.entry a() { ret }\n", 3,
                     "Parsing error near '}'");
    expect_ptx_error(with_header(".entry a()\n{\n\tmov.u32 %r1, 1\n\tadd.s32 %r2, %r1, 1;\n}\n"), 7,
                     "Parsing error near 'add'");
    expect_ptx_error(".version 9.0\n.target sm_90\n.bogus 5;\n.entry a() { ret; }\n", 3,
                     "Parsing error near '.bogus'");
    expect_ptx_error(".version 9.0\n.target sm_90\n.entry a() { .foo; ret; }\n", 3,
                     "Parsing error near '.foo'");
    expect_ptx_error(with_header("entry a() { ret; }\n"), 4, "Parsing error near 'entry'");
    expect_ptx_error(with_header(".entry a() { ret; } ;\n"), 4, "Parsing error near ';'");
    expect_ptx_error(with_header("#define X 1\n"), 4, "Parsing error near '#'");
    expect_ptx_error(with_header(".entry a() { @ ret; }\n"), 4, "Parsing error near ';'");
    expect_ptx_error(with_header(".entry a(.param .u32 x, ) { ret; }\n"), 4, "Parsing error near ')'");
    expect_ptx_error(with_header(".entry a(.param .u32) { ret; }\n"), 4, "Parsing error near ')'");
    expect_ptx_error(with_header(".entry a(.param x) { ret; }\n"), 4, "Parsing error near 'x'");
    expect_ptx_error(with_header(".entry a(.param .v2 .u32 x) { ret; }\n"), 4,
                     "Variable 'x' cannot be allocated in .param state space");
    expect_ptx_error(with_header(".entry a(.param .align 6 .b8 x[2]) { ret; }\n"), 4,
                     "Alignment must be a power of two");
    /* comments and strings */
    expect_ptx_error(with_header(".entry a() { /* x\n\n"), 6,
                     "Parsing error near '': unexpected EOF while scanning");
    expect_ptx_error(with_header(".entry a() { .pragma \"nounroll; }\n"), 4, "unterminated string");
    /* a NUL ends the text: what follows it is not read */
    static const char nul[] = ".version 9.0\n.target sm_90\n.entry a() { ret; \0 }\n";
    result r = parse_bytes(nul, sizeof nul);
    assert_int_equal(r.r, CUDA_ERROR_INVALID_PTX);
    assert_non_null(strstr(r.err, "line 3;"));
}

static void test_logs(void **state)
{
    (void)state;
    char err[32], info[16];
    fake_image *img = NULL;
    static const char bad[] = ".version 9.0\n.target sm_90\n.entry a() { frob; }\n";
    memset(err, 'x', sizeof err);
    memset(info, 'x', sizeof info);
    assert_int_equal(fake_image_parse(bad, sizeof bad, device_cc, &img, err, sizeof err, info, sizeof info),
                     CUDA_ERROR_INVALID_PTX);
    assert_null(img);
    assert_int_equal(strlen(err), sizeof err - 1); /* truncated, terminated */
    assert_true(strncmp(err, "ptxas application ptx input, line 3", sizeof err - 1) == 0);
    assert_string_equal(info, "");
    /* a size of one: just the NUL; none: nothing written; NULL logs */
    err[0] = 'x';
    assert_int_equal(fake_image_parse(bad, sizeof bad, device_cc, &img, err, 1, NULL, 0), CUDA_ERROR_INVALID_PTX);
    assert_int_equal(err[0], '\0');
    err[0] = 'x';
    assert_int_equal(fake_image_parse(bad, sizeof bad, device_cc, &img, err, 0, NULL, 0), CUDA_ERROR_INVALID_PTX);
    assert_int_equal(err[0], 'x');
    assert_int_equal(fake_image_parse(bad, SIZE_MAX, device_cc, &img, NULL, 0, NULL, 0), CUDA_ERROR_INVALID_PTX);
    /* success: the error log is emptied, the info log truncated */
    static const char good[] = ".version 9.0\n.target sm_90\n.entry add() { ret; }\n";
    assert_int_equal(fake_image_parse(good, SIZE_MAX, device_cc, &img, err, sizeof err, info, sizeof info),
                     CUDA_SUCCESS);
    assert_string_equal(err, "");
    assert_int_equal(strlen(info), sizeof info - 1);
    fake_image_free(img);
    char big[1024];
    img = NULL;
    assert_int_equal(fake_image_parse(good, SIZE_MAX, device_cc, &img, NULL, 0, big, sizeof big), CUDA_SUCCESS);
    assert_non_null(strstr(big, "ptxas info    : 0 bytes gmem\n"));
    assert_non_null(strstr(big, "ptxas info    : Compiling entry function 'add' for 'sm_90'\n"));
    fake_image_free(img);
}

/* --- bad images ---------------------------------------------------------------------------- */

static void test_bad_images(void **state)
{
    (void)state;
    fake_image *img = (fake_image *)(uintptr_t)1, *none = NULL;
    char err[256];
    assert_int_equal(fake_image_parse(NULL, 10, device_cc, &img, err, sizeof err, NULL, 0),
                     CUDA_ERROR_INVALID_VALUE);
    assert_true(img == (fake_image *)(uintptr_t)1);
    assert_int_equal(fake_image_parse("x", 2, device_cc, NULL, NULL, 0, NULL, 0), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(fake_image_parse("", SIZE_MAX, device_cc, &none, err, sizeof err, NULL, 0),
                     CUDA_ERROR_INVALID_IMAGE);
    assert_int_equal(fake_image_parse(".version", 0, device_cc, &none, NULL, 0, NULL, 0),
                     CUDA_ERROR_INVALID_IMAGE);
    assert_null(none);
    assert_int_equal(parse_bytes("\x7f" "EL", 3).r, CUDA_ERROR_INVALID_IMAGE);
    assert_int_equal(parse_bytes("\x7f" "ELF", 4).r, CUDA_ERROR_INVALID_IMAGE);
    assert_int_equal(parse_bytes("\x50\xed\x55", 3).r, CUDA_ERROR_INVALID_IMAGE);
    assert_int_equal(parse_bytes("\x50\xed\x55\xba\x01\x00\x10\x00", 8).r, CUDA_ERROR_INVALID_IMAGE);
    assert_int_equal(parse_bytes("\xb1\x43\x62\x46", 4).r, CUDA_ERROR_INVALID_IMAGE);
    assert_int_equal(parse_bytes("\x7f" "ELG\x02\x01\x01", 7).r, CUDA_ERROR_INVALID_IMAGE);
    static const unsigned char binary[] = {0xde, 0xad, 0xbe, 0xef, 0x00, 0x01, 0x02, 0x03};
    result r = parse_bytes(binary, sizeof binary);
    assert_int_equal(r.r, CUDA_ERROR_INVALID_IMAGE);
    assert_non_null(strstr(r.err, "not PTX"));
    assert_int_equal(parse_bytes("\x01\x02\x03", 3).r, CUDA_ERROR_INVALID_IMAGE);
    assert_int_equal(parse_bytes("abc", 3).r, CUDA_ERROR_INVALID_PTX);
    /* an ELF that is not a CUDA one */
    unsigned char elf[64] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
    elf[18] = 62; /* EM_X86_64 */
    r = parse_bytes(elf, sizeof elf);
    assert_int_equal(r.r, CUDA_ERROR_INVALID_IMAGE);
    assert_non_null(strstr(r.err, "not a CUDA ELF"));
    elf[18] = 190;
    assert_int_equal(parse_bytes(elf, sizeof elf).r, CUDA_ERROR_INVALID_IMAGE); /* no sections */
    elf[4] = 1; /* ELF32 */
    assert_int_equal(parse_bytes(elf, sizeof elf).r, CUDA_ERROR_INVALID_IMAGE);
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

/* A fatbin of those entries, laid out as nvcc's (see lib/fake/image/fatbin.c):
 * payloads padded to 16 bytes. */
static unsigned char *make_fatbin_of(const fat_entry *es, size_t count, size_t *out_size)
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
static unsigned char *make_fatbin(unsigned kind, uint64_t flags, const void *payload, size_t n,
                                  size_t *out_size)
{
    fat_entry e = {kind, 90, flags, payload, n, 0, 0};
    return make_fatbin_of(&e, 1, out_size);
}

static void test_fatbin_made(void **state)
{
    (void)state;
    static const char ptx[] = "\n\n.version 8.4\n.target sm_90\n.entry k(.param .u32 a) { ret; }\n";
    size_t n;
    unsigned char *fb = make_fatbin(1, 0x11, ptx, sizeof ptx - 1, &n);
    result r = parse_bytes(fb, n);
    assert_int_equal(r.r, CUDA_SUCCESS);
    assert_int_equal(r.img->format, FAKE_IMAGE_FATBIN);
    assert_string_equal(r.img->target, "sm_90");
    assert_int_equal(r.img->ptx_version_major, 8);
    assert_int_equal(r.img->ptx_version_minor, 4);
    EXPECT_LAYOUT(function(r.img, "k"), 4, {0, 4});
    assert_non_null(strstr(r.info, "Compiling entry function 'k'"));
    fake_image_free(r.img);

    /* the wrapper: followed only when the size is unknown */
    struct {
        int magic, version;
        const unsigned long long *data;
        void *filename_or_fatbins;
    } wrapper = {0x466243B1, 1, (const unsigned long long *)(void *)fb, NULL};
    fake_image *img = NULL;
    assert_int_equal(fake_image_parse(&wrapper, SIZE_MAX, device_cc, &img, NULL, 0, NULL, 0), CUDA_SUCCESS);
    assert_int_equal(img->format, FAKE_IMAGE_FATBIN);
    assert_non_null(fake_image_find_function(img, "k"));
    fake_image_free(img);
    assert_int_equal(parse_bytes(&wrapper, sizeof wrapper).r, CUDA_ERROR_INVALID_IMAGE);
    wrapper.data = NULL;
    assert_int_equal(fake_image_parse(&wrapper, SIZE_MAX, device_cc, &img, NULL, 0, NULL, 0),
                     CUDA_ERROR_INVALID_IMAGE);
    /* the raw fatbin with SIZE_MAX trusts its own size */
    img = NULL;
    assert_int_equal(fake_image_parse(fb, SIZE_MAX, device_cc, &img, NULL, 0, NULL, 0), CUDA_SUCCESS);
    fake_image_free(img);

    /* every prefix is invalid (the first byte alone is text: PTX) */
    for (size_t k = 0; k < n; k++) {
        r = parse_bytes(fb, k);
        assert_int_equal(r.r, k == 1 ? CUDA_ERROR_INVALID_PTX : CUDA_ERROR_INVALID_IMAGE);
    }
    /* errors inside are the PTX's */
    free(fb);
    static const char bad[] = ".version 8.4\n.target sm_90\n.entry k() { frob; }\n";
    fb = make_fatbin(1, 0x11, bad, sizeof bad - 1, &n);
    r = parse_bytes(fb, n);
    assert_int_equal(r.r, CUDA_ERROR_INVALID_PTX);
    assert_non_null(strstr(r.err, "line 3; error   : Not a name of any known instruction: 'frob'"));
    free(fb);

    /* compressed, but not really (and without sizes): what the driver says
     * of a stream that fails (or, without the library, refused) */
    fb = make_fatbin(1, 0x8011, ptx, sizeof ptx - 1, &n);
    r = parse_bytes(fb, n);
#ifdef FAKE_IMAGE_HAVE_ZSTD
    assert_int_equal(r.r, CUDA_ERROR_UNKNOWN);
    assert_string_equal(r.err, "error   : Uncompress failed\n");
#else
    assert_int_equal(r.r, CUDA_ERROR_NO_BINARY_FOR_GPU);
    assert_non_null(strstr(r.err, "libzstd"));
#endif
    free(fb);
    fb = make_fatbin(1, 0x2011, ptx, sizeof ptx - 1, &n);
    r = parse_bytes(fb, n);
#ifdef FAKE_IMAGE_HAVE_LZ4
    assert_int_equal(r.r, CUDA_ERROR_UNKNOWN);
#else
    assert_int_equal(r.r, CUDA_ERROR_NO_BINARY_FOR_GPU);
    assert_non_null(strstr(r.err, "liblz4"));
#endif
    free(fb);
    /* an entry of another kind only */
    fb = make_fatbin(4, 0x11, ptx, sizeof ptx - 1, &n);
    r = parse_bytes(fb, n);
    assert_int_equal(r.r, CUDA_ERROR_NO_BINARY_FOR_GPU);
    assert_non_null(strstr(r.err, "no code for a device of compute capability 9.0"));
    free(fb);
    /* an ELF entry that is not one */
    fb = make_fatbin(2, 0x11, ptx, sizeof ptx - 1, &n);
    assert_int_equal(parse_bytes(fb, n).r, CUDA_ERROR_INVALID_IMAGE);
    free(fb);
    /* an entry that claims more than there is */
    fb = make_fatbin(1, 0x11, ptx, sizeof ptx - 1, &n);
    uint64_t huge = UINT64_MAX - 8;
    memcpy(fb + 16 + 8, &huge, 8);
    assert_int_equal(parse_bytes(fb, n).r, CUDA_ERROR_INVALID_IMAGE);
    memcpy(fb + 8, &huge, 8);
    assert_int_equal(parse_bytes(fb, n).r, CUDA_ERROR_INVALID_IMAGE);
    free(fb);
}

/* --- what nvcc made ------------------------------------------------------------------------ */

static void expect_same_kernels(const fake_image *a, const fake_image *b)
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

static void expect_same_globals(const fake_image *a, const fake_image *b)
{
    assert_int_equal(a->nglobals, b->nglobals);
    for (size_t i = 0; i < a->nglobals; i++) {
        const fake_image_global *x = &a->globals[i], *y = global(b, a->globals[i].name);
        assert_int_equal(x->size, y->size);
        assert_int_equal(x->constant, y->constant);
        assert_memory_equal(x->init, y->init, x->size);
    }
}

/* ptxas' layouts (the cubin's KPARAM_INFO) are the ones computed from the
 * PTX. */
static void test_cubin_matches_ptx(void **state)
{
    (void)state;
    size_t pn, cn;
    char *ptx = input(IN_PTX, &pn);
    unsigned char *cubin = input(IN_CUBIN, &cn);
    result p = parse_bytes(ptx, pn), c = parse_bytes(cubin, cn);
    if (p.r != CUDA_SUCCESS)
        print_error("%s\n", p.err);
    assert_int_equal(p.r, CUDA_SUCCESS);
    if (c.r != CUDA_SUCCESS)
        print_error("%s\n", c.err);
    assert_int_equal(c.r, CUDA_SUCCESS);
    assert_int_equal(c.img->format, FAKE_IMAGE_CUBIN);
    assert_string_equal(c.img->target, "sm_90");
    assert_string_equal(c.info, "");
    expect_same_kernels(p.img, c.img);
    expect_same_globals(p.img, c.img);
    /* and the particular ones */
    EXPECT_LAYOUT(function(c.img, "aligned"), 224, {0, 1}, {48, 128}, {176, 32}, {208, 1}, {216, 8});
    assert_int_equal(function(c.img, "bounded")->max_threads, 256);
    assert_int_equal(function(c.img, "bounded")->static_shared, 1104);
    assert_true(global(c.img, "coeffs")->constant);
    fake_image_free(p.img);
    fake_image_free(c.img);
    free(ptx);
    free(cubin);
}

/* Every prefix of a real cubin is invalid or parses; so is any byte
 * changed. */
static void test_cubin_truncated_and_corrupt(void **state)
{
    (void)state;
    size_t n;
    unsigned char *cubin = input(IN_CUBIN, &n);
    for (size_t k = 0; k < n; k++) {
        result r = parse_bytes(cubin, k);
        if (r.r != CUDA_ERROR_INVALID_IMAGE && r.r != CUDA_SUCCESS)
            print_error("prefix %zu: %d\n", k, (int)r.r);
        assert_true(r.r == CUDA_ERROR_INVALID_IMAGE || r.r == CUDA_SUCCESS);
        fake_image_free(r.img);
    }
    /* the headers and tables, byte by byte, to a few values */
    unsigned char *copy = malloc(n);
    assert_non_null(copy);
    static const unsigned char values[] = {0x00, 0x01, 0x7f, 0x80, 0xff};
    for (size_t k = 0; k < n; k += k < 64 ? 1 : 11) {
        for (size_t v = 0; v < sizeof values; v++) {
            memcpy(copy, cubin, n);
            copy[k] = values[v];
            fake_image *img = NULL;
            CUresult r = fake_image_parse(copy, n, device_cc, &img, NULL, 0, NULL, 0);
            assert_true(r == CUDA_SUCCESS || r == CUDA_ERROR_INVALID_IMAGE ||
                        r == CUDA_ERROR_OUT_OF_MEMORY || r == CUDA_ERROR_INVALID_PTX);
            fake_image_free(img);
        }
    }
    free(copy);
    free(cubin);
}

static void test_fatbin_from_nvcc(void **state)
{
    (void)state;
    size_t fn, cn;
    unsigned char *fb = input(IN_FATBIN, &fn);
    unsigned char *cubin = input(IN_CUBIN, &cn);
    result f = parse_bytes(fb, fn), c = parse_bytes(cubin, cn);
    assert_int_equal(f.r, CUDA_SUCCESS);
    assert_int_equal(c.r, CUDA_SUCCESS);
    assert_int_equal(f.img->format, FAKE_IMAGE_FATBIN);
    assert_string_equal(f.img->target, "sm_90");
    assert_int_equal(f.img->ptx_version_major, 0); /* the ELF was taken */
    expect_same_kernels(c.img, f.img);
    expect_same_globals(c.img, f.img);
    fake_image_free(f.img);
    fake_image_free(c.img);
    for (size_t k = 0; k < fn; k += k < 4096 ? 1 : 13) {
        result r = parse_bytes(fb, k);
        assert_int_equal(r.r, k == 1 ? CUDA_ERROR_INVALID_PTX : CUDA_ERROR_INVALID_IMAGE);
    }
    free(cubin);

    /* the PTX of it, with the ELF entry turned into another kind */
    assert_int_equal(fb[16], 2);
    fb[16] = 9;
    f = parse_bytes(fb, fn);
    assert_int_equal(f.r, CUDA_SUCCESS);
    assert_int_equal(f.img->ptx_version_major, 9);
    assert_non_null(fake_image_find_function(f.img, "aligned"));
    fake_image_free(f.img);
    free(fb);
}

/* Parses for a device of compute capability cc. */
static result parse_for(const void *bytes, size_t n, unsigned cc)
{
    unsigned saved = device_cc;
    device_cc = cc;
    result r = parse_bytes(bytes, n);
    device_cc = saved;
    return r;
}

static const fake_image_param *param(const fake_image *img, const char *fn, size_t i)
{
    const fake_image_function *f = function(img, fn);
    assert_true(i < f->nparams);
    return &f->params[i];
}

/* --- compressed fatbins ---------------------------------------------------------------------- */

/* Each compressed form nvcc 13 writes gives what the uncompressed code
 * gives (the H200 loaded them all, with the same cuFuncGetParamInfo). */
static void test_fatbin_compressed_from_nvcc(void **state)
{
    (void)state;
    size_t pn, cn;
    char *ptx = input(IN_PTX, &pn);
    unsigned char *cubin = input(IN_CUBIN, &cn);
    result p = parse_bytes(ptx, pn), c = parse_bytes(cubin, cn);
    static const struct {
        int in;
        fake_image_format code;
        bool lz4;
    } forms[] = {
        {IN_FATBIN_COMPRESSED, FAKE_IMAGE_CUBIN, false}, /* -Xfatbin -compress-all: Zstandard */
        {IN_FATBIN_PTX, FAKE_IMAGE_PTX, false},          /* the default, PTX only */
        {IN_FATBIN_SPEED, FAKE_IMAGE_CUBIN, true},       /* --compress-mode=speed: LZ4 */
        {IN_FATBIN_DEBUG, FAKE_IMAGE_CUBIN, false},      /* -G */
    };
    for (size_t i = 0; i < sizeof forms / sizeof *forms; i++) {
        size_t n;
        unsigned char *fb = input(forms[i].in, &n);
        result f = parse_bytes(fb, n);
#if defined(FAKE_IMAGE_HAVE_LZ4) && defined(FAKE_IMAGE_HAVE_ZSTD)
        (void)forms[i].lz4;
        if (f.r != CUDA_SUCCESS)
            print_error("%s: %s\n", input_names[forms[i].in], f.err);
        assert_int_equal(f.r, CUDA_SUCCESS);
        assert_int_equal(f.img->format, FAKE_IMAGE_FATBIN);
        assert_int_equal(f.img->code, forms[i].code);
        assert_string_equal(f.img->target, "sm_90");
        const fake_image *twin = forms[i].code == FAKE_IMAGE_PTX ? p.img : c.img;
        expect_same_kernels(twin, f.img);
        if (forms[i].in != IN_FATBIN_DEBUG) /* -G keeps more globals */
            expect_same_globals(twin, f.img);
        if (forms[i].code == FAKE_IMAGE_PTX) {
            assert_int_equal(f.img->ptx_version_major, 9);
            assert_non_null(strstr(f.info, "Compiling entry function 'aligned'"));
        }
        fake_image_free(f.img);
#else
        /* without the library: refused, saying what to do */
        assert_int_equal(f.r, CUDA_ERROR_NO_BINARY_FOR_GPU);
        assert_non_null(strstr(f.err, "--no-compress"));
        assert_non_null(strstr(f.err, forms[i].lz4 ? "liblz4" : "libzstd"));
#endif
        free(fb);
    }
    fake_image_free(p.img);
    fake_image_free(c.img);
    free(ptx);
    free(cubin);

    /* every prefix of the compressed PTX is invalid; any byte changed is
     * invalid or parses */
    size_t n;
    unsigned char *fb = input(IN_FATBIN_PTX, &n);
    for (size_t k = 0; k < n; k++) {
        result r = parse_bytes(fb, k);
        assert_int_equal(r.r, k == 1 ? CUDA_ERROR_INVALID_PTX : CUDA_ERROR_INVALID_IMAGE);
    }
    unsigned char *copy = malloc(n);
    assert_non_null(copy);
    for (size_t k = 0; k < n; k += k < 0x60 ? 1 : 7) {
        memcpy(copy, fb, n);
        copy[k] ^= 0x5a;
        fake_image *img = NULL;
        CUresult r = fake_image_parse(copy, n, device_cc, &img, NULL, 0, NULL, 0);
        assert_true(r == CUDA_SUCCESS || r == CUDA_ERROR_INVALID_IMAGE ||
                    r == CUDA_ERROR_INVALID_PTX || r == CUDA_ERROR_NO_BINARY_FOR_GPU ||
                    r == CUDA_ERROR_OUT_OF_MEMORY || r == CUDA_ERROR_UNKNOWN);
        fake_image_free(img);
    }
    free(copy);
    /* the Zstandard flag cleared: binary bytes for ptxas, as on the H200 */
    fb[16 + 41] ^= 0x80;
    result r = parse_bytes(fb, n);
    assert_int_equal(r.r, CUDA_ERROR_INVALID_PTX);
    assert_string_equal(r.err, "ptxas fatal   : Unexpected non-ASCII character encountered on "
                               "line 1\nptxas fatal   : Ptx assembly aborted due to errors\n");
    free(fb);
}

/* The framing, compressed here: the stream's exact size at 16, what it
 * expands to at 56, zeros after it to the padded payload size. */
static void test_fatbin_compressed_made(void **state)
{
    (void)state;
    static const char ptx[] = ".version 8.4\n.target sm_90\n.entry k(.param .u32 a) { ret; }\n";
    size_t n;
    unsigned char *fb;
    result r;
#ifdef FAKE_IMAGE_HAVE_ZSTD
    size_t zcap = ZSTD_compressBound(sizeof ptx);
    unsigned char *z = malloc(zcap);
    assert_non_null(z);
    size_t zn = ZSTD_compress(z, zcap, ptx, sizeof ptx, 19);
    assert_false(ZSTD_isError(zn));
    struct {
        uint32_t csize;
        uint64_t usize, flags;
        CUresult expect;
    } zcases[] = {
        {(uint32_t)zn, sizeof ptx, 0x8011, CUDA_SUCCESS},
        /* "Uncompress failed" on the H200: not the frame's size, cut short */
        {(uint32_t)zn, sizeof ptx + 1, 0x8011, CUDA_ERROR_UNKNOWN},
        {(uint32_t)zn, sizeof ptx - 1, 0x8011, CUDA_ERROR_UNKNOWN},
        {(uint32_t)zn - 1, sizeof ptx, 0x8011, CUDA_ERROR_UNKNOWN},
        {0, sizeof ptx, 0x8011, CUDA_ERROR_UNKNOWN},
        {(uint32_t)zn, 0, 0x8011, CUDA_ERROR_UNKNOWN},
        {(uint32_t)zn + 64, sizeof ptx, 0x8011, CUDA_ERROR_INVALID_IMAGE}, /* past the payload */
        {(uint32_t)zn, (uint64_t)FAKE_IMAGE_MAX_ENTRY_BYTES + 1, 0x8011, CUDA_ERROR_OUT_OF_MEMORY},
        {(uint32_t)zn, UINT64_MAX, 0x8011, CUDA_ERROR_OUT_OF_MEMORY},
        {(uint32_t)zn, sizeof ptx, 0xa011, CUDA_ERROR_INVALID_IMAGE}, /* LZ4 and Zstandard */
    };
    for (size_t i = 0; i < sizeof zcases / sizeof *zcases; i++) {
        fat_entry e = {1, 90, zcases[i].flags, z, zn, zcases[i].csize, zcases[i].usize};
        fb = make_fatbin_of(&e, 1, &n);
        r = parse_bytes(fb, n);
        if (r.r != zcases[i].expect)
            print_error("zstd case %zu: %d, %s\n", i, (int)r.r, r.err);
        assert_int_equal(r.r, zcases[i].expect);
        if (r.r == CUDA_SUCCESS) {
            assert_int_equal(r.img->code, FAKE_IMAGE_PTX);
            EXPECT_LAYOUT(function(r.img, "k"), 4, {0, 4});
        }
        fake_image_free(r.img);
        free(fb);
    }
    free(z);
#endif
#ifdef FAKE_IMAGE_HAVE_LZ4
    int lcap = LZ4_compressBound((int)sizeof ptx);
    char *l = malloc((size_t)lcap);
    assert_non_null(l);
    int ln = LZ4_compress_default(ptx, l, (int)sizeof ptx, lcap);
    assert_true(ln > 0);
    struct {
        uint32_t csize;
        uint64_t usize;
        CUresult expect;
    } lcases[] = {
        {(uint32_t)ln, sizeof ptx, CUDA_SUCCESS},
        {(uint32_t)ln, sizeof ptx + 1, CUDA_ERROR_UNKNOWN}, /* expands to less */
        {(uint32_t)ln, sizeof ptx - 1, CUDA_ERROR_UNKNOWN}, /* to more */
        {(uint32_t)ln - 1, sizeof ptx, CUDA_ERROR_UNKNOWN},
        {(uint32_t)ln + 64, sizeof ptx, CUDA_ERROR_INVALID_IMAGE},
        {(uint32_t)ln, (uint64_t)FAKE_IMAGE_MAX_ENTRY_BYTES + 1, CUDA_ERROR_OUT_OF_MEMORY},
    };
    for (size_t i = 0; i < sizeof lcases / sizeof *lcases; i++) {
        fat_entry e = {1, 90, 0x2011, l, (size_t)ln, lcases[i].csize, lcases[i].usize};
        fb = make_fatbin_of(&e, 1, &n);
        r = parse_bytes(fb, n);
        if (r.r != lcases[i].expect)
            print_error("lz4 case %zu: %d, %s\n", i, (int)r.r, r.err);
        assert_int_equal(r.r, lcases[i].expect);
        if (r.r == CUDA_SUCCESS)
            EXPECT_LAYOUT(function(r.img, "k"), 4, {0, 4});
        fake_image_free(r.img);
        free(fb);
    }
    free(l);
#endif
    /* a compressed entry that is not the one taken is never decompressed */
    fat_entry two[] = {{1, 90, 0x11, ptx, sizeof ptx, 0, 0},
                       {1, 80, 0x8011, "garbage", 7, 7, UINT64_MAX}};
    fb = make_fatbin_of(two, 2, &n);
    r = parse_bytes(fb, n);
    assert_int_equal(r.r, CUDA_SUCCESS);
    fake_image_free(r.img);
    free(fb);
}

/* --- the entry for the device ------------------------------------------------------------- */

/* PTX entries of each variant, and SASS before PTX. */
static void test_fatbin_choice_made(void **state)
{
    (void)state;
    static const struct {
        unsigned arch;
        uint64_t flags;
        const char *target, *kernel;
    } ptxs[] = {
        {80, 0x11, "sm_80", "k80"},
        {86, 0x11, "sm_86", "k86"},
        {90, 0x100011, "sm_90a", "k90a"},
        {100, 0x11, "sm_100", "k100"},
        {100, 0x200011, "sm_100f", "k100f"},
    };
    enum { NPTX = sizeof ptxs / sizeof *ptxs };
    char text[NPTX][160];
    fat_entry es[NPTX];
    for (size_t i = 0; i < NPTX; i++) {
        int len = snprintf(text[i], sizeof text[i],
                           ".version 9.0\n.target %s\n.address_size 64\n"
                           ".visible .entry %s(.param .u8 c, .param .align 64 .b8 t[128]) { ret; }\n",
                           ptxs[i].target, ptxs[i].kernel);
        es[i] = (fat_entry){1, ptxs[i].arch, ptxs[i].flags, text[i], (size_t)len + 1, 0, 0};
    }
    size_t n;
    unsigned char *fb = make_fatbin_of(es, NPTX, &n);
    /* the newest that can be JIT-compiled for the device, laid out for it;
     * the 'f' before the plain one of the same arch is assumed, not seen */
    static const struct {
        unsigned cc;
        const char *kernel;
        size_t t_offset;
    } cases[] = {
        {90, "k90a", 48}, /* compute_90a only on exactly 9.0 */
        {89, "k86", 32},  {86, "k86", 32},    {80, "k80", 32},   {100, "k100f", 64},
        {103, "k100f", 64}, {120, "k100", 64}, /* 100f: not of the 12 family */
        {110, "k100", 64},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        result r = parse_for(fb, n, cases[i].cc);
        if (r.r != CUDA_SUCCESS)
            print_error("cc %u: %s\n", cases[i].cc, r.err);
        assert_int_equal(r.r, CUDA_SUCCESS);
        assert_int_equal(r.img->nfunctions, 1);
        assert_string_equal(r.img->functions[0].name, cases[i].kernel);
        assert_int_equal(r.img->code, FAKE_IMAGE_PTX);
        assert_int_equal(param(r.img, cases[i].kernel, 1)->offset, cases[i].t_offset);
        fake_image_free(r.img);
    }
    result r = parse_for(fb, n, 75);
    assert_int_equal(r.r, CUDA_ERROR_NO_BINARY_FOR_GPU);
    assert_non_null(strstr(r.err, "no code for a device of compute capability 7.5 (it holds: "
                                  "compute_80, compute_86, compute_90a, compute_100, compute_100f)"));
    free(fb);

    /* of two PTX of one arch the last, as the H200 took */
    fat_entry tie[] = {es[3], es[3]};
    char last[160];
    int len = snprintf(last, sizeof last, ".version 9.0\n.target sm_100\n.address_size 64\n"
                                          ".visible .entry last() { ret; }\n");
    tie[1].payload = last;
    tie[1].n = (size_t)len + 1;
    fb = make_fatbin_of(tie, 2, &n);
    r = parse_for(fb, n, 100);
    assert_int_equal(r.r, CUDA_SUCCESS);
    assert_non_null(fake_image_find_function(r.img, "last"));
    fake_image_free(r.img);
    free(fb);

    /* SASS (nvcc's sm_90 cubin) before PTX, whatever their order */
    size_t cn;
    unsigned char *cubin = input(IN_CUBIN, &cn);
    fat_entry mixed[] = {es[1], {2, 90, 0x11, cubin, cn, 0, 0}, es[3]};
    fb = make_fatbin_of(mixed, 3, &n);
    static const struct {
        unsigned cc;
        fake_image_format code;
        const char *kernel;
    } sass_cases[] = {
        {90, FAKE_IMAGE_CUBIN, "aligned"}, {100, FAKE_IMAGE_PTX, "k100"},
        {89, FAKE_IMAGE_PTX, "k86"},       {120, FAKE_IMAGE_PTX, "k100"},
    };
    for (size_t i = 0; i < sizeof sass_cases / sizeof *sass_cases; i++) {
        r = parse_for(fb, n, sass_cases[i].cc);
        assert_int_equal(r.r, CUDA_SUCCESS);
        assert_int_equal(r.img->code, sass_cases[i].code);
        assert_non_null(fake_image_find_function(r.img, sass_cases[i].kernel));
        fake_image_free(r.img);
    }
    free(fb);
    /* of two sm_90 ELFs the first, as the H200 took */
    size_t bn;
    unsigned char *big = input(IN_BIG_CUBIN, &bn);
    fat_entry elfs[] = {{2, 90, 0x11, big, bn, 0, 0}, {2, 90, 0x11, cubin, cn, 0, 0}};
    unsigned char *fb2 = make_fatbin_of(elfs, 2, &n);
    r = parse_for(fb2, n, 90);
    assert_int_equal(r.r, CUDA_SUCCESS);
    assert_non_null(fake_image_find_function(r.img, "bigparam"));
    assert_null(fake_image_find_function(r.img, "aligned"));
    fake_image_free(r.img);
    free(fb2);
    free(big);
    /* an arch-specific ELF is so named */
    mixed[1].flags = 0x100011;
    fb = make_fatbin_of(mixed, 3, &n);
    r = parse_for(fb, n, 90);
    assert_int_equal(r.r, CUDA_SUCCESS);
    assert_int_equal(r.img->code, FAKE_IMAGE_CUBIN);
    assert_string_equal(r.img->target, "sm_90a");
    fake_image_free(r.img);
    free(fb);
    free(cubin);
}

/* nvcc's multi-architecture fatbins: the SASS for the device, with its
 * own layout ('aligned' has a 64-byte aligned parameter, placed by each
 * architecture's constant bank), else the PTX laid out for the device. */
static void test_fatbin_choice_from_nvcc(void **state)
{
    (void)state;
    size_t n, pn;
    unsigned char *fb = input(IN_FATBIN_MULTI, &n);
    char *ptx = input(IN_PTX, &pn);
    static const struct {
        unsigned cc;
        fake_image_format code;
        const char *target;
        size_t t_offset;
    } cases[] = {
        {90, FAKE_IMAGE_CUBIN, "sm_90", 48},   {86, FAKE_IMAGE_CUBIN, "sm_80", 32},
        {89, FAKE_IMAGE_CUBIN, "sm_80", 32},   {80, FAKE_IMAGE_CUBIN, "sm_80", 32},
        {100, FAKE_IMAGE_CUBIN, "sm_100", 64}, {103, FAKE_IMAGE_CUBIN, "sm_100", 64},
        {120, FAKE_IMAGE_PTX, "sm_90", 64}, /* compute_90, JIT-compiled for 12.0 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        result f = parse_for(fb, n, cases[i].cc), p = parse_for(ptx, pn, cases[i].cc);
#ifndef FAKE_IMAGE_HAVE_ZSTD
        if (cases[i].code == FAKE_IMAGE_PTX) { /* the PTX is compressed */
            assert_int_equal(f.r, CUDA_ERROR_NO_BINARY_FOR_GPU);
            fake_image_free(p.img);
            continue;
        }
#endif
        if (f.r != CUDA_SUCCESS)
            print_error("cc %u: %s\n", cases[i].cc, f.err);
        assert_int_equal(f.r, CUDA_SUCCESS);
        assert_int_equal(f.img->code, cases[i].code);
        assert_string_equal(f.img->target, cases[i].target);
        assert_int_equal(param(f.img, "aligned", 1)->offset, cases[i].t_offset);
        /* ptxas' layouts for that architecture are the PTX's for the device */
        expect_same_kernels(p.img, f.img);
        fake_image_free(f.img);
        fake_image_free(p.img);
    }
    result f = parse_for(fb, n, 75);
    assert_int_equal(f.r, CUDA_ERROR_NO_BINARY_FOR_GPU);
    assert_non_null(strstr(f.err, "sm_80, sm_90, compute_90, sm_100"));
    free(fb);
    free(ptx);

    /* sm_90a then sm_90: the arch-specific one, as the H200 took it */
    fb = input(IN_FATBIN_90A, &n);
    f = parse_for(fb, n, 90);
    assert_int_equal(f.r, CUDA_SUCCESS);
    assert_string_equal(f.img->target, "sm_90a");
    fake_image_free(f.img);
    assert_int_equal(parse_for(fb, n, 100).r, CUDA_ERROR_NO_BINARY_FOR_GPU);
    free(fb);

    /* sm_90 SASS and compute_90 PTX, the SASS made sm_80's or sm_100's:
     * refused on 9.0 without its PTX (the H200 refused sm_80 + sm_89 SASS,
     * and sm_100 SASS alone), the PTX taken with it */
    fb = input(IN_FATBIN, &n);
    size_t ptx_entry = 16 + 0x40 + (size_t)(fb[24] | fb[25] << 8 | fb[26] << 16 | fb[27] << 24);
    assert_int_equal(fb[16], 2);
    assert_int_equal(fb[ptx_entry], 1);
    for (unsigned arch = 80; arch <= 100; arch += 20) {
        fb[16 + 28] = (unsigned char)arch;
        fb[ptx_entry] = 9; /* no PTX */
        f = parse_for(fb, n, 90);
        assert_int_equal(f.r, CUDA_ERROR_NO_BINARY_FOR_GPU);
        fb[ptx_entry] = 1;
        f = parse_for(fb, n, 90);
        assert_int_equal(f.r, CUDA_SUCCESS);
        assert_int_equal(f.img->code, FAKE_IMAGE_PTX);
        fake_image_free(f.img);
    }
    free(fb);
}

/* --- relocatable cubins ------------------------------------------------------------------ */

/* -rdc=true: the H200 loaded both, listed all 12 kernels with the same
 * layouts, and cuModuleGetFunction answered this for each. */
static void test_relocatable_cubin(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        CUresult lookup;
    } expect[] = {
        {"noparams", CUDA_SUCCESS},
        {"ptrs", CUDA_ERROR_INVALID_IMAGE},        /* globals, __constant__ */
        {"small", CUDA_ERROR_INVALID_IMAGE},       /* globals */
        {"bystruct", CUDA_SUCCESS},
        {"bigstruct", CUDA_SUCCESS},
        {"aligned", CUDA_SUCCESS},
        {"_Z9cxxkerneliPf", CUDA_ERROR_INVALID_IMAGE}, /* a global */
        {"_Z4tmplIdEvPT_S0_", CUDA_SUCCESS},
        {"_Z4tmplIcEvPT_S0_", CUDA_SUCCESS},
        {"bounded", CUDA_ERROR_INVALID_IMAGE},     /* static __shared__, a call */
        {"bounded1", CUDA_SUCCESS},
        {"dynshared", CUDA_ERROR_NOT_FOUND},       /* extern __shared__: undefined */
    };
    size_t cn;
    unsigned char *cubin = input(IN_CUBIN, &cn);
    result c = parse_bytes(cubin, cn);
    assert_int_equal(c.r, CUDA_SUCCESS);
    assert_false(c.img->relocatable);
    for (size_t i = 0; i < c.img->nfunctions; i++)
        assert_int_equal(c.img->functions[i].lookup, CUDA_SUCCESS);
    static const int ins[] = {IN_RDC_CUBIN, IN_RDC_FATBIN};
    for (size_t k = 0; k < 2; k++) {
        size_t n;
        unsigned char *b = input(ins[k], &n);
        result r = parse_bytes(b, n);
#ifndef FAKE_IMAGE_HAVE_ZSTD
        if (ins[k] == IN_RDC_FATBIN) { /* its ELF is compressed */
            assert_int_equal(r.r, CUDA_ERROR_NO_BINARY_FOR_GPU);
            free(b);
            continue;
        }
#endif
        if (r.r != CUDA_SUCCESS)
            print_error("%s: %s\n", input_names[ins[k]], r.err);
        assert_int_equal(r.r, CUDA_SUCCESS);
        assert_true(r.img->relocatable);
        assert_int_equal(r.img->code, FAKE_IMAGE_CUBIN);
        assert_int_equal(r.img->nfunctions, sizeof expect / sizeof *expect);
        for (size_t i = 0; i < sizeof expect / sizeof *expect; i++)
            assert_int_equal(function(r.img, expect[i].name)->lookup, expect[i].lookup);
        expect_same_kernels(c.img, r.img);
        fake_image_free(r.img);
        free(b);
    }
    fake_image_free(c.img);
    free(cubin);
}

/* --- large parameters -------------------------------------------------------------------- */

/* Past 4 KiB of parameters ptxas writes EIATTR_KPARAM_INFO_V2; these are
 * the H200's cuFuncGetParamInfo for bigparams.cu, in every form. */
static void test_large_parameters(void **state)
{
    (void)state;
    static const int ins[] = {IN_BIG_PTX, IN_BIG_CUBIN, IN_BIG_FATBIN};
    result rs[3];
    for (size_t k = 0; k < 3; k++) {
        size_t n;
        unsigned char *b = input(ins[k], &n);
        rs[k] = parse_bytes(b, n);
        free(b);
        if (rs[k].r != CUDA_SUCCESS)
            print_error("%s: %s\n", input_names[ins[k]], rs[k].err);
        assert_int_equal(rs[k].r, CUDA_SUCCESS);
        const fake_image *img = rs[k].img;
        EXPECT_LAYOUT(function(img, "bigparam"), 32008, {0, 32000}, {32000, 8});
        EXPECT_LAYOUT(function(img, "mixed"), 32024, {0, 1}, {1, 32000}, {32004, 4}, {32008, 8},
                      {32016, 8});
        EXPECT_LAYOUT(function(img, "midparam"), 5016, {0, 4}, {4, 5000}, {5008, 8});
        EXPECT_LAYOUT(function(img, "smallparams"), 16, {0, 4}, {8, 8});
        if (k)
            expect_same_kernels(rs[0].img, img);
    }
    for (size_t k = 0; k < 3; k++)
        fake_image_free(rs[k].img);
}

/* --- PTX externs the JIT resolves --------------------------------------------------------- */

/* nvcc 13 declares the device graph API .extern (without -rdc), and the
 * JIT resolves it as it does vprintf; the rest of the device runtime needs
 * libcudadevrt and stays unresolved (on the H200 too). */
static void test_ptx_device_runtime_externs(void **state)
{
    (void)state;
    static const char graph[] =
        ".extern .func cudaGraphSetConditional\n"
        "(\n\t.param .b64 cudaGraphSetConditional_param_0,\n"
        "\t.param .b32 cudaGraphSetConditional_param_1\n)\n;\n"
        ".extern .func  (.param .b32 func_retval0) cudaGraphLaunch\n"
        "(\n\t.param .b64 cudaGraphLaunch_param_0,\n\t.param .b64 cudaGraphLaunch_param_1\n)\n;\n"
        ".visible .entry setcond(\n\t.param .u64 setcond_param_0,\n\t.param .u32 setcond_param_1\n)\n"
        "{\n\t.reg .b32 \t%r<2>;\n\t.reg .b64 \t%rd<2>;\n"
        "\tld.param.u64 \t%rd1, [setcond_param_0];\n"
        "\tld.param.u32 \t%r1, [setcond_param_1];\n"
        "\t{ // callseq 0, 0\n\t.reg .b32 temp_param_reg;\n\t.param .b64 param0;\n"
        "\tst.param.b64 \t[param0+0], %rd1;\n\t.param .b32 param1;\n"
        "\tst.param.b32 \t[param1+0], %r1;\n"
        "\tcall.uni \n\tcudaGraphSetConditional, \n\t(\n\tparam0, \n\tparam1\n\t);\n"
        "\t} // callseq 0\n\tret;\n\n}\n"
        ".visible .entry devlaunch(\n\t.param .u64 devlaunch_param_0\n)\n"
        "{\n\t.reg .b32 \t%r<2>;\n\t.reg .b64 \t%rd<2>;\n"
        "\tld.param.u64 \t%rd1, [devlaunch_param_0];\n"
        "\t{ // callseq 1, 0\n\t.reg .b32 temp_param_reg;\n\t.param .b64 param0;\n"
        "\tst.param.b64 \t[param0+0], %rd1;\n\t.param .b64 param1;\n"
        "\tst.param.b64 \t[param1+0], 72057594037927936;\n\t.param .b32 retval0;\n"
        "\tcall.uni (retval0), \n\tcudaGraphLaunch, \n\t(\n\tparam0, \n\tparam1\n\t);\n"
        "\tld.param.b32 \t%r1, [retval0+0];\n\t} // callseq 1\n\tret;\n\n}\n";
    fake_image *img = parse_ok(with_header(graph));
    EXPECT_LAYOUT(function(img, "setcond"), 12, {0, 8}, {8, 4});
    EXPECT_LAYOUT(function(img, "devlaunch"), 8, {0, 8});
    fake_image_free(img);

    /* each of ptxas 13.0's device graph functions, called; and ones it
     * leaves unresolved */
    static const struct {
        const char *name;
        bool resolved;
    } fns[] = {
        {"cudaGraphSetConditional", true},       {"cudaGraphLaunch", true},
        {"cudaGraphKernelNodeSetParam", true},   {"cudaGraphKernelNodeSetEnabled", true},
        {"cudaGraphKernelNodeSetGridDim", true}, {"cudaGraphKernelNodeUpdatesApply", true},
        {"vprintf", true},                       {"malloc", true},
        {"free", true},                          {"__assertfail", true},
        {"cudaGetParameterBuffer", false},       {"cudaGetParameterBufferV2", false},
        {"cudaLaunchDevice", false},             {"cudaGetCurrentGraphExec", false},
        {"cudaGetLastError", false},             {"cudaMalloc", false},
        {"cudaGraphLaunchX", false},             {"memcpy", false},
    };
    for (size_t i = 0; i < sizeof fns / sizeof *fns; i++) {
        char body[512];
        snprintf(body, sizeof body,
                 ".extern .func %s ();\n.visible .entry k() { call.uni %s, (); ret; }\n",
                 fns[i].name, fns[i].name);
        result r = parse_text(with_header(body));
        if (fns[i].resolved) {
            assert_int_equal(r.r, CUDA_SUCCESS);
        } else {
            char msg[128];
            snprintf(msg, sizeof msg, "ptxas fatal   : Unresolved extern function '%s'",
                     fns[i].name);
            assert_int_equal(r.r, CUDA_ERROR_INVALID_PTX);
            assert_non_null(strstr(r.err, msg));
        }
        fake_image_free(r.img);
    }
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *slash = strrchr(argv[i], '/'), *base = slash ? slash + 1 : argv[i];
        for (size_t k = 0; k < IN_COUNT; k++)
            if (strcmp(base, input_names[k]) == 0)
                input_paths[k] = argv[i];
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ptx_kernels),
        cmocka_unit_test(test_ptx_globals),
        cmocka_unit_test(test_ptx_initializers),
        cmocka_unit_test(test_ptx_too_large_globals),
        cmocka_unit_test(test_ptx_declarations),
        cmocka_unit_test(test_ptx_debug_forms),
        cmocka_unit_test(test_ptx_param_alignment),
        cmocka_unit_test(test_ptx_many_params),
        cmocka_unit_test(test_ptx_shared),
        cmocka_unit_test(test_ptx_launch_bounds),
        cmocka_unit_test(test_ptx_syntax_errors),
        cmocka_unit_test(test_logs),
        cmocka_unit_test(test_bad_images),
        cmocka_unit_test(test_fatbin_made),
        cmocka_unit_test(test_cubin_matches_ptx),
        cmocka_unit_test(test_cubin_truncated_and_corrupt),
        cmocka_unit_test(test_fatbin_from_nvcc),
        cmocka_unit_test(test_fatbin_compressed_from_nvcc),
        cmocka_unit_test(test_fatbin_compressed_made),
        cmocka_unit_test(test_fatbin_choice_made),
        cmocka_unit_test(test_fatbin_choice_from_nvcc),
        cmocka_unit_test(test_relocatable_cubin),
        cmocka_unit_test(test_large_parameters),
        cmocka_unit_test(test_ptx_device_runtime_externs),
    };
    return cmocka_run_group_tests(tests, setup_ptx_kernels, NULL);
}
