/* corpus_dump: what the driver makes of each image of the kernel corpus
 * (test/corpus/meson.build builds them), as a table that a diff can read.
 *
 *   corpus-dump-fake | gpu-corpus [--expect FILE] [--write FILE] IMAGE...
 *
 * Built twice from this file: against the fake (CUS_TEST_FAKE: its raw entry
 * points, one device of compute capability 9.0, like the H200) for the unit
 * test `corpus`, and against the real driver (libcuda resolved here with
 * dlopen and cuGetProcAddress_v2, device 0's primary context) for the gpu
 * test `gpu-corpus`. Each image is loaded with cuModuleLoadDataEx into the
 * one context; the table has, for every image, sorted by image name:
 *
 *   image  <image> <load result>
 * and for an image that loaded, for every kernel that cuModuleGetFunctionCount
 * and cuModuleEnumerateFunctions list, sorted by name (cuFuncGetName):
 *   kernel <image> <name> <parameter count> <cuModuleGetFunction(name) result>
 *   param  <image> <kernel> <index> <offset> <size>     (cuFuncGetParamInfo)
 * and where a call failed that the table needed an answer from:
 *   error  <image> [<kernel>] <call> <result>
 *
 * Results are as cuGetErrorName names them; an image is its file's name.
 * The parameter count is where cuFuncGetParamInfo first answers
 * CUDA_ERROR_INVALID_VALUE (the driver has no count call).
 *
 * --write FILE writes the table, after a header of '#' lines; the gpu build
 * also writes it to the file that $CUS_CORPUS_WRITE names, if set. --expect
 * FILE compares the table with FILE ('#' lines and blank lines left out) and
 * fails on any difference, listing the lines only FILE has (-) and the lines
 * only the driver gave (+), image by image. The reference is for a 9.0
 * device: on another, gpu-corpus writes the table but skips the comparison.
 * Exit status: 0 when the table matches (or nothing was to compare), 1 when
 * it differs or the run failed, 77 (skipped) without a usable driver or
 * device (gpu build). A load's error log goes to stdout. */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef CUS_TEST_FAKE
#include "harness/check.h"
#else
#include "harness/libcuda.h"

#include "harness/env.h"
#endif

#include <cudaTypedefs.h>

#define EXIT_SKIP 77
#define LOG_BYTES 8192
/* cuFuncGetParamInfo is asked no further: no kernel has this many. */
#define MAX_PARAMS 4096

#if CUDA_VERSION >= 12040

/* --- the entry points ------------------------------------------------------------ */

#define CORPUS_ENTRIES(X)                                                      \
    X(cuGetErrorName, 6000)                                                    \
    X(cuInit, 2000)                                                            \
    X(cuDriverGetVersion, 2020)                                                \
    X(cuDeviceGet, 2000)                                                       \
    X(cuDeviceGetName, 2000)                                                   \
    X(cuDeviceGetAttribute, 2000)                                              \
    X(cuDevicePrimaryCtxRetain, 7000)                                          \
    X(cuDevicePrimaryCtxRelease, 11000)                                        \
    X(cuCtxSetCurrent, 4000)                                                   \
    X(cuModuleLoadDataEx, 2010)                                                \
    X(cuModuleUnload, 2000)                                                    \
    X(cuModuleGetFunction, 2000)                                               \
    X(cuModuleGetFunctionCount, 12040)                                         \
    X(cuModuleEnumerateFunctions, 12040)                                       \
    X(cuFuncGetName, 12030)                                                    \
    X(cuFuncGetParamInfo, 12040)

typedef struct driver {
#define CORPUS_FIELD_(symbol, version) PFN_##symbol##_v##version symbol;
    CORPUS_ENTRIES(CORPUS_FIELD_)
#undef CORPUS_FIELD_
} driver;

static driver drv;

#ifdef CUS_TEST_FAKE
static const char driver_label[] = "the fake";

static void *lookup(const char *symbol, int version)
{
    return raw_lookup(symbol, version);
}

/* The fake, reset to one device of compute capability 9.0. */
static int driver_open(void)
{
    static const cus_fake_device_config h200 = {.name = "cuscope fake H200", .cc_major = 9,
                                                .cc_minor = 0};
    const cus_fake_config cfg = {.device_count = 1, .devices = &h200};
    cus_status st = cus_fake_install(&cfg);
    if (st != CUS_SUCCESS) {
        fprintf(stderr, "corpus: cus_fake_install: %s\n", cus_status_name(st));
        return EXIT_FAILURE;
    }
    return 0;
}

/* Fails on misuse or a handle left alive: the run must leave the fake as it
 * found it. */
static int driver_close(void)
{
    int rc = 0;
    if (cus_fake_misuse_count()) {
        fprintf(stderr, "corpus: fake driver misuse: %s\n", cus_fake_last_misuse());
        rc = EXIT_FAILURE;
    }
    if (cus_fake_live_handles(CUS_FAKE_HANDLE_ANY)) {
        fprintf(stderr, "corpus: %zu fake handle(s) left alive\n",
                cus_fake_live_handles(CUS_FAKE_HANDLE_ANY));
        rc = EXIT_FAILURE;
    }
    (void)cus_fake_uninstall();
    return rc;
}
#else
static const char driver_label[] = "the driver";

static cus_driver_resolver get_proc_address;

static void *lookup(const char *symbol, int version)
{
    void *p = NULL;
    CUdriverProcAddressQueryResult qs = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (get_proc_address(symbol, &p, version, CU_GET_PROC_ADDRESS_DEFAULT, &qs) != CUDA_SUCCESS ||
        qs != CU_GET_PROC_ADDRESS_SUCCESS)
        return NULL;
    return p;
}

/* libcuda (harness/libcuda.h), after the harness's own check that a driver
 * and a device are there. */
static int driver_open(void)
{
    env_require_driver_or_skip();
    char why[256];
    if (!(get_proc_address = libcuda_resolver(why, sizeof why))) {
        printf("skipping: %s\n", why);
        return EXIT_SKIP;
    }
    return 0;
}

static int driver_close(void)
{
    return 0;
}
#endif

/* Every entry point, or the name of the first that is missing. */
static const char *resolve(void)
{
    void *p;
#define CORPUS_RESOLVE_(symbol, version)                                       \
    if (!(p = lookup(#symbol, version)))                                       \
        return #symbol;                                                        \
    memcpy(&drv.symbol, &p, sizeof p);
    CORPUS_ENTRIES(CORPUS_RESOLVE_)
#undef CORPUS_RESOLVE_
    return NULL;
}

static const char *result_name(CUresult r)
{
    static char unknown[32];
    const char *s = NULL;
    if (drv.cuGetErrorName(r, &s) == CUDA_SUCCESS && s)
        return s;
    snprintf(unknown, sizeof unknown, "CUresult_%d", (int)r);
    return unknown;
}

/* --- lines ----------------------------------------------------------------------- */

typedef struct lines {
    char **v;
    size_t n, cap;
} lines;

static _Noreturn void out_of_memory(void)
{
    fprintf(stderr, "corpus: out of memory\n");
    exit(EXIT_FAILURE);
}

static void lines_take(lines *l, char *s)
{
    if (l->n == l->cap) {
        size_t ncap = l->cap ? 2 * l->cap : 64;
        char **nv = realloc(l->v, ncap * sizeof *nv);
        if (!nv)
            out_of_memory();
        l->v = nv;
        l->cap = ncap;
    }
    l->v[l->n++] = s;
}

__attribute__((format(printf, 2, 3))) static void lines_addf(lines *l, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = len < 0 ? NULL : malloc((size_t)len + 1);
    if (!s)
        out_of_memory();
    va_start(ap, fmt);
    (void)vsnprintf(s, (size_t)len + 1, fmt, ap);
    va_end(ap);
    lines_take(l, s);
}

/* Moves every line of from to the end of to. */
static void lines_splice(lines *to, lines *from)
{
    for (size_t i = 0; i < from->n; i++)
        lines_take(to, from->v[i]);
    free(from->v);
    *from = (lines){0};
}

static void lines_free(lines *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    *l = (lines){0};
}

/* The image (the second word) a table line is about, as a length. */
static size_t line_key(const char *s, const char **key)
{
    const char *k = strchr(s, ' ');
    k = k ? k + 1 : s + strlen(s);
    *key = k;
    return strcspn(k, " ");
}

/* --- the table ------------------------------------------------------------------- */

typedef struct kernel_rows {
    char *name;
    lines rows; /* its kernel line, then its param (and error) lines */
} kernel_rows;

static int by_kernel_name(const void *a, const void *b)
{
    return strcmp(((const kernel_rows *)a)->name, ((const kernel_rows *)b)->name);
}


/* The whole file, NUL-terminated (PTX is a string); NULL if unreadable. */
static unsigned char *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    unsigned char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (cap - len < 4096 + 1) {
            unsigned char *nb = realloc(buf, cap ? 2 * cap : 65536);
            if (!nb)
                out_of_memory();
            buf = nb;
            cap = cap ? 2 * cap : 65536;
        }
        size_t n = fread(buf + len, 1, cap - len - 1, f);
        len += n;
        if (n == 0)
            break;
    }
    bool bad = ferror(f) != 0;
    fclose(f);
    if (bad) {
        free(buf);
        return NULL;
    }
    buf[len] = '\0';
    *size = len;
    return buf;
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* Image paths, by the image's name. */
static int by_image_name(const void *a, const void *b)
{
    return strcmp(base_name(*(const char *const *)a), base_name(*(const char *const *)b));
}

/* One kernel's lines: its parameters first, so that the kernel line can
 * carry their count. */
static void dump_kernel(CUmodule mod, CUfunction f, const char *image, unsigned index,
                        kernel_rows *out)
{
    const char *name = NULL;
    CUresult r = drv.cuFuncGetName(&name, f);
    char unnamed[32];
    if (r != CUDA_SUCCESS || !name) {
        snprintf(unnamed, sizeof unnamed, "#%u", index);
        name = unnamed;
    }
    out->name = strdup(name);
    if (!out->name)
        out_of_memory();
    lines params = {0};
    if (r != CUDA_SUCCESS)
        lines_addf(&params, "error %s %s cuFuncGetName %s", image, name, result_name(r));
    size_t n = 0;
    for (; n < MAX_PARAMS; n++) {
        size_t offset = 0, size = 0;
        r = drv.cuFuncGetParamInfo(f, n, &offset, &size);
        if (r == CUDA_ERROR_INVALID_VALUE)
            break;
        if (r != CUDA_SUCCESS) {
            lines_addf(&params, "error %s %s cuFuncGetParamInfo(%zu) %s", image, name, n,
                       result_name(r));
            break;
        }
        lines_addf(&params, "param %s %s %zu %zu %zu", image, name, n, offset, size);
    }
    CUfunction g = NULL;
    r = drv.cuModuleGetFunction(&g, mod, name);
    out->rows = (lines){0};
    lines_addf(&out->rows, "kernel %s %s %zu %s", image, name, n, result_name(r));
    lines_splice(&out->rows, &params);
}

/* One image's lines, appended to table. */
static int dump_image(const char *path, lines *table)
{
    const char *image = base_name(path);
    size_t size = 0;
    unsigned char *data = read_file(path, &size);
    if (!data) {
        fprintf(stderr, "corpus: cannot read %s\n", path);
        return -1;
    }
    char log[LOG_BYTES] = "";
    CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *values[] = {log, (void *)(uintptr_t)sizeof log};
    CUmodule mod = NULL;
    CUresult r = drv.cuModuleLoadDataEx(&mod, data, 2, options, values);
    free(data);
    lines_addf(table, "image %s %s", image, result_name(r));
    if (r != CUDA_SUCCESS) {
        log[sizeof log - 1] = '\0';
        printf("corpus: %s: %s%s%s\n", image, result_name(r), *log ? ", error log:\n" : "",
               log);
        return 0;
    }
    unsigned count = 0;
    r = drv.cuModuleGetFunctionCount(&count, mod);
    CUfunction *fns = NULL;
    if (r != CUDA_SUCCESS) {
        lines_addf(table, "error %s cuModuleGetFunctionCount %s", image, result_name(r));
        count = 0;
    } else if (count) {
        fns = calloc(count, sizeof *fns);
        if (!fns)
            out_of_memory();
        r = drv.cuModuleEnumerateFunctions(fns, count, mod);
        if (r != CUDA_SUCCESS) {
            lines_addf(table, "error %s cuModuleEnumerateFunctions %s", image, result_name(r));
            count = 0;
        }
    }
    kernel_rows *ks = count ? calloc(count, sizeof *ks) : NULL;
    if (count && !ks)
        out_of_memory();
    for (unsigned i = 0; i < count; i++)
        dump_kernel(mod, fns[i], image, i, &ks[i]);
    if (count)
        qsort(ks, count, sizeof *ks, by_kernel_name);
    for (unsigned i = 0; i < count; i++) {
        lines_splice(table, &ks[i].rows);
        free(ks[i].name);
    }
    free(ks);
    free(fns);
    r = drv.cuModuleUnload(mod);
    if (r != CUDA_SUCCESS)
        lines_addf(table, "error %s cuModuleUnload %s", image, result_name(r));
    return 0;
}

/* --- the comparison ---------------------------------------------------------------- */

/* The lines of one image, in table order. */
typedef struct block {
    const char *key;
    size_t key_len;
    lines rows; /* borrowed strings */
} block;

typedef struct blocks {
    block *v;
    size_t n, cap;
} blocks;

static block *block_of(blocks *b, const char *key, size_t key_len)
{
    for (size_t i = 0; i < b->n; i++)
        if (b->v[i].key_len == key_len && memcmp(b->v[i].key, key, key_len) == 0)
            return &b->v[i];
    if (b->n == b->cap) {
        size_t ncap = b->cap ? 2 * b->cap : 32;
        block *nv = realloc(b->v, ncap * sizeof *nv);
        if (!nv)
            out_of_memory();
        b->v = nv;
        b->cap = ncap;
    }
    b->v[b->n] = (block){.key = key, .key_len = key_len};
    return &b->v[b->n++];
}

static blocks split_blocks(const lines *l)
{
    blocks b = {0};
    for (size_t i = 0; i < l->n; i++) {
        const char *key;
        size_t len = line_key(l->v[i], &key);
        lines *rows = &block_of(&b, key, len)->rows;
        lines_take(rows, l->v[i]);
    }
    return b;
}

static void blocks_free(blocks *b)
{
    for (size_t i = 0; i < b->n; i++)
        free(b->v[i].rows.v);
    free(b->v);
    *b = (blocks){0};
}

static int key_cmp(const block *a, const block *b)
{
    size_t n = a->key_len < b->key_len ? a->key_len : b->key_len;
    int c = memcmp(a->key, b->key, n);
    return c ? c : (a->key_len > b->key_len) - (a->key_len < b->key_len);
}

static int by_key(const void *a, const void *b)
{
    return key_cmp(a, b);
}

/* The state of one comparison: the names for its header, which is printed
 * before the first difference, and the counts. */
typedef struct diff_state {
    const char *want_name, *got_name;
    bool header;
    size_t minus, plus;
} diff_state;

static void diff_line(diff_state *d, const char *hunk, bool *hunk_done, char sign,
                      const char *line)
{
    if (!d->header) {
        printf("--- %s\n+++ %s\n", d->want_name, d->got_name);
        d->header = true;
    }
    if (!*hunk_done) {
        printf("@@ %s @@\n", hunk);
        *hunk_done = true;
    }
    printf("%c%s\n", sign, line);
    if (sign == '-')
        d->minus++;
    else
        d->plus++;
}

/* Prints a's lines missing from b (-) and b's missing from a (+), in order,
 * from a longest common subsequence. */
static void diff_rows(diff_state *d, const lines *a, const lines *b, const char *hunk)
{
    size_t n = a->n, m = b->n;
    /* lcs[i][j]: the length of one of a[i..] and b[j..]. */
    size_t *lcs = calloc((n + 1) * (m + 1), sizeof *lcs);
    if (!lcs)
        out_of_memory();
#define LCS(i, j) lcs[(i) * (m + 1) + (j)]
    for (size_t i = n; i-- > 0;)
        for (size_t j = m; j-- > 0;)
            LCS(i, j) = strcmp(a->v[i], b->v[j]) == 0 ? LCS(i + 1, j + 1) + 1
                        : LCS(i + 1, j) >= LCS(i, j + 1) ? LCS(i + 1, j)
                                                         : LCS(i, j + 1);
    bool hunk_done = false;
    size_t i = 0, j = 0;
    while (i < n || j < m) {
        if (i < n && j < m && strcmp(a->v[i], b->v[j]) == 0) {
            i++, j++;
        } else if (j == m || (i < n && LCS(i + 1, j) >= LCS(i, j + 1))) {
            diff_line(d, hunk, &hunk_done, '-', a->v[i++]);
        } else {
            diff_line(d, hunk, &hunk_done, '+', b->v[j++]);
        }
    }
#undef LCS
    free(lcs);
}

/* 0 when got is want; otherwise prints the differences, image by image, and
 * returns 1. */
static int compare(const lines *want, const lines *got, const char *want_name)
{
    static const lines none;
    blocks a = split_blocks(want), b = split_blocks(got);
    if (a.n)
        qsort(a.v, a.n, sizeof *a.v, by_key);
    if (b.n)
        qsort(b.v, b.n, sizeof *b.v, by_key);
    diff_state d = {.want_name = want_name, .got_name = driver_label};
    size_t i = 0, j = 0, images = 0;
    while (i < a.n || j < b.n) {
        int c = i == a.n ? 1 : j == b.n ? -1 : key_cmp(&a.v[i], &b.v[j]);
        block k = c <= 0 ? a.v[i] : b.v[j];
        const lines *ra = c <= 0 ? &a.v[i++].rows : &none;
        const lines *rb = c >= 0 ? &b.v[j++].rows : &none;
        char hunk[256];
        snprintf(hunk, sizeof hunk, "%.*s%s", (int)k.key_len, k.key,
                 c > 0 ? " (not in the reference)" : c < 0 ? " (not given)" : "");
        size_t before = d.minus + d.plus;
        diff_rows(&d, ra, rb, hunk);
        images += d.minus + d.plus != before;
    }
    blocks_free(&a);
    blocks_free(&b);
    if (!d.header)
        return 0;
    printf("corpus: %s differs from %s: %zu image(s), %zu line(s) only there (-), "
           "%zu only here (+)\n",
           driver_label, want_name, images, d.minus, d.plus);
    return 1;
}

/* The table lines of a reference file: '#' lines and blank lines left out.
 * -1 if it cannot be read. */
static int read_reference(const char *path, lines *out)
{
    size_t size;
    unsigned char *data = read_file(path, &size);
    if (!data) {
        fprintf(stderr, "corpus: cannot read %s\n", path);
        return -1;
    }
    char *save = NULL;
    for (char *s = strtok_r((char *)data, "\n", &save); s; s = strtok_r(NULL, "\n", &save)) {
        s[strcspn(s, "\r")] = '\0';
        if (*s == '#' || *s == '\0')
            continue;
        char *copy = strdup(s);
        if (!copy)
            out_of_memory();
        lines_take(out, copy);
    }
    free(data);
    return 0;
}

/* --- the run ------------------------------------------------------------------------- */

typedef struct device_info {
    char name[256];
    int cc_major, cc_minor, driver_version;
} device_info;

static int write_table(const char *path, const lines *table, const device_info *dev)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "corpus: cannot write %s\n", path);
        return -1;
    }
#ifdef CUS_TEST_FAKE
    fputs("# PROVISIONAL: generated on the fake; to be replaced by the H200's table\n", f);
#endif
    fprintf(f,
            "# The kernel corpus (test/corpus) as %s loads it: %s, compute capability %d.%d,\n"
            "# driver %d. Format: test/corpus/corpus_dump.c. '#' lines are not compared.\n"
            "# Regenerate: ninja -C build corpus-expected (the fake), or on a GPU\n"
            "# CUS_CORPUS_WRITE=FILE meson test -C build-gpu gpu-corpus (the driver).\n",
            driver_label, dev->name, dev->cc_major, dev->cc_minor, dev->driver_version);
    for (size_t i = 0; i < table->n; i++)
        fprintf(f, "%s\n", table->v[i]);
    if (fclose(f) != 0) {
        fprintf(stderr, "corpus: cannot write %s\n", path);
        return -1;
    }
    printf("corpus: wrote %zu line(s) to %s\n", table->n, path);
    return 0;
}

/* Initialises the driver and makes device 0's primary context current. */
static int open_device(CUdevice *dev, CUcontext *ctx, device_info *info)
{
    CUresult r = drv.cuInit(0);
    if (r == CUDA_SUCCESS)
        r = drv.cuDeviceGet(dev, 0);
    if (r != CUDA_SUCCESS) {
        printf("skipping: no device: %s\n", result_name(r));
        return EXIT_SKIP;
    }
    if ((r = drv.cuDeviceGetName(info->name, sizeof info->name, *dev)) != CUDA_SUCCESS ||
        (r = drv.cuDeviceGetAttribute(&info->cc_major,
                                      CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, *dev)) !=
            CUDA_SUCCESS ||
        (r = drv.cuDeviceGetAttribute(&info->cc_minor,
                                      CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, *dev)) !=
            CUDA_SUCCESS ||
        (r = drv.cuDriverGetVersion(&info->driver_version)) != CUDA_SUCCESS ||
        (r = drv.cuDevicePrimaryCtxRetain(ctx, *dev)) != CUDA_SUCCESS) {
        fprintf(stderr, "corpus: device 0: %s\n", result_name(r));
        return EXIT_FAILURE;
    }
    if ((r = drv.cuCtxSetCurrent(*ctx)) != CUDA_SUCCESS) {
        fprintf(stderr, "corpus: cuCtxSetCurrent: %s\n", result_name(r));
        (void)drv.cuDevicePrimaryCtxRelease(*dev);
        return EXIT_FAILURE;
    }
    info->name[sizeof info->name - 1] = '\0';
    return 0;
}

static void close_device(CUdevice dev)
{
    CUresult r = drv.cuCtxSetCurrent(NULL);
    if (r == CUDA_SUCCESS)
        r = drv.cuDevicePrimaryCtxRelease(dev);
    if (r != CUDA_SUCCESS)
        fprintf(stderr, "corpus: releasing device 0: %s\n", result_name(r));
}

static int usage(const char *argv0)
{
    fprintf(stderr, "usage: %s [--expect FILE] [--write FILE] IMAGE...\n", argv0);
    return EXIT_FAILURE;
}

static int run(int argc, char **argv)
{
    const char *expect = NULL, *write = NULL;
    lines paths = {0};
    for (int i = 1; i < argc; i++) {
        if ((strcmp(argv[i], "--expect") == 0 || strcmp(argv[i], "--write") == 0) &&
            i + 1 < argc) {
            *(argv[i][2] == 'e' ? &expect : &write) = argv[i + 1];
            i++;
        } else if (argv[i][0] == '-') {
            free(paths.v);
            return usage(argv[0]);
        } else {
            lines_take(&paths, argv[i]);
        }
    }
    if (!paths.n) {
        free(paths.v);
        return usage(argv[0]);
    }
    qsort(paths.v, paths.n, sizeof *paths.v, by_image_name);

    int rc = driver_open();
    if (rc) {
        free(paths.v);
        return rc;
    }
    const char *missing = resolve();
    if (missing) {
        printf("skipping: %s has no %s\n", driver_label, missing);
        (void)driver_close();
        free(paths.v);
        return EXIT_SKIP;
    }
    CUdevice dev = 0;
    CUcontext ctx = NULL;
    device_info info = {0};
    rc = open_device(&dev, &ctx, &info);
    if (rc) {
        (void)driver_close();
        free(paths.v);
        return rc;
    }
    printf("corpus: %zu image(s) on %s, compute capability %d.%d, driver %d\n", paths.n,
           info.name, info.cc_major, info.cc_minor, info.driver_version);

    lines table = {0};
    for (size_t i = 0; i < paths.n && rc == 0; i++)
        if (dump_image(paths.v[i], &table) != 0)
            rc = EXIT_FAILURE;
    close_device(dev);
    if (driver_close() != 0)
        rc = EXIT_FAILURE;
    free(paths.v);

#ifndef CUS_TEST_FAKE
    const char *env_write = getenv("CUS_CORPUS_WRITE");
    if (rc == 0 && env_write && *env_write && write_table(env_write, &table, &info) != 0)
        rc = EXIT_FAILURE;
#endif
    if (rc == 0 && write && write_table(write, &table, &info) != 0)
        rc = EXIT_FAILURE;
    if (rc == 0 && expect) {
        if (info.cc_major != 9 || info.cc_minor != 0) {
            printf("skipping the comparison: %s is for compute capability 9.0, device 0 is "
                   "%d.%d\n",
                   expect, info.cc_major, info.cc_minor);
            rc = EXIT_SKIP;
        } else {
            lines want = {0};
            rc = read_reference(expect, &want) != 0 ? EXIT_FAILURE
                                                    : compare(&want, &table, expect);
            lines_free(&want);
            if (rc == 0)
                printf("corpus: %zu line(s), the same as %s\n", table.n, expect);
        }
    }
    lines_free(&table);
    return rc;
}

#endif /* CUDA_VERSION >= 12040 */

int main(int argc, char **argv)
{
#if CUDA_VERSION >= 12040
    return run(argc, argv);
#else
    (void)argc;
    (void)argv;
    printf("skipping: the corpus needs the CUDA 12.4 headers (cuFuncGetParamInfo)\n");
    return EXIT_SKIP;
#endif
}
