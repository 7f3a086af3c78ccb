/* The fake driver's module image parser (lib/image/), on its own,
 * part binaries: cubins and fatbins that nvcc made at build time (their
 * layouts are the PTX's), fatbins put together here, compressed entries,
 * the entry taken for each device, relocatable cubins and large parameters.
 * What the real driver did with the same images (H200, 9.0, driver 580,
 * nvcc 13.0) is what these cases expect. Fixtures: fake_image_fixtures.h. */
#include "fake_image_fixtures.h"

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
        /* nor does the driver give its globals (cuModuleGetGlobal: NOT_FOUND) */
        assert_null(fake_image_find_global(r.img, "counter"));
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

int main(int argc, char **argv)
{
    inputs_from_args(argc, argv);
    const struct CMUnitTest tests[] = {
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
