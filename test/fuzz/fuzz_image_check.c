/* Fuzzes cuscope's image checks (lib/module.c: sniff, check_image) and, behind
 * a load that passes them, the fake driver's image parser
 * (lib/image/), through the public API:
 * cus_module_image_format(data, size) and cus_module_load_data(ctx, data,
 * size, NULL, &m) on the fake driver, installed once with one context.
 *
 * For each input: the format from the first 16 bytes is the format of the
 * whole; a load either succeeds (the module's format is the sniffed one, its
 * functions can be listed and looked up, but for those of a relocatable
 * cubin that need linking, and unref unloads it) or fails with
 * nothing returned and an error message; no module handle is left behind.
 * With a NUL in the input, PTX and unknown input is also loaded with size 0
 * (a NUL-terminated string), and must give the same status. PTX without a
 * NUL (as nvcc writes it: the .ptx files given as seeds) must fail as not
 * NUL-terminated; it is then also loaded with a NUL appended.
 *
 * Not loaded: a fatbin wrapper of 16 bytes or more. Its third member is a
 * pointer: cus_module_load_data checks that it can be read and starts a
 * fatbin whose last byte can be read, but trusts the bytes between to be one
 * allocation (module.h), which a fuzzer's pointer need not be; shorter ones
 * are loaded (and must fail). test_module_load.c's
 * test_load_bad_wrappers_never_reach_the_driver covers the pointers. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuscope/cuscope.h>
#include <cuscope/fake.h>

#include "fuzz_main.h"

static cus_context *ctx;

/* A cubin with a section outside the image: check_image refuses it before
 * the driver (which follows the offsets without knowing the size) sees it.
 * This target found that it did not (corpus/image_check/crash-*). */

static uint64_t rd(const uint8_t *p, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = n; i-- > 0;)
        v = v << 8 | p[i];
    return v;
}

static bool cubin_section_outside(const uint8_t *p, size_t size)
{
    if (size < 64 || cus_module_image_format(p, size) != CUS_IMAGE_CUBIN || p[4] != 2 || p[5] != 1)
        return false;
    uint64_t shoff = rd(p + 0x28, 8), shentsize = rd(p + 0x3a, 2), shnum = rd(p + 0x3c, 2);
    if (shentsize < 64 || shoff > size || shentsize * shnum > size - shoff)
        return false; /* cuscope or the fake reject the headers */
    for (uint64_t i = 0; i < shnum; i++) {
        const uint8_t *sh = p + shoff + i * shentsize;
        uint64_t type = rd(sh + 4, 4), off = rd(sh + 24, 8), bytes = rd(sh + 32, 8);
        if (type != 8 && (off > size || bytes > size - off))
            return true;
    }
    return false;
}

static bool reaches_driver(const uint8_t *data, size_t size)
{
    unsigned long before = cus_fake_calls_of("cuModuleLoadDataEx");
    FUZZ_CHECK(cus_fake_fail_entry("cuModuleLoadDataEx", 1, CUDA_ERROR_INVALID_IMAGE, false) ==
               CUS_SUCCESS);
    cus_module *m = NULL;
    cus_status st = cus_module_load_data(ctx, data, size, NULL, &m);
    cus_fake_clear_faults();
    FUZZ_CHECK(st != CUS_SUCCESS && m == NULL);
    return cus_fake_calls_of("cuModuleLoadDataEx") != before;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    cus_status st = cus_fake_install(NULL);
    if (st != CUS_SUCCESS) {
        fprintf(stderr, "cus_fake_install: %s\n", cus_status_name(st));
        abort();
    }
    cus_device dev;
    st = cus_device_get(0, &dev);
    if (st == CUS_SUCCESS)
        st = cus_context_create(dev, CUS_CTX_NO_PUSH, &ctx);
    if (st != CUS_SUCCESS) {
        fprintf(stderr, "creating the context: %s: %s\n", cus_status_name(st),
                cus_last_error_message());
        abort();
    }
    return 0;
}

/* Loads, checks what came back, unloads. Returns the status. */
static cus_status load(const uint8_t *data, size_t size, cus_image_format format)
{
    cus_module *m = NULL;
    cus_status st = cus_module_load_data(ctx, data, size, NULL, &m);
    if (st != CUS_SUCCESS) {
        FUZZ_CHECK(m == NULL);
        const char *msg = cus_last_error_message();
        FUZZ_CHECK(msg && msg[0]);
    } else {
        FUZZ_CHECK(m != NULL);
        FUZZ_CHECK(cus_module_format(m) == format);
        FUZZ_CHECK(cus_module_context(m) == ctx);
        FUZZ_CHECK(cus_module_info_log(m) != NULL);
        unsigned int count = 0;
        if (cus_module_function_count(m, &count) == CUS_SUCCESS && count) {
            const char **names = calloc(count, sizeof *names);
            FUZZ_CHECK(names != NULL);
            unsigned int got = 0;
            FUZZ_CHECK(cus_module_function_names(m, names, count, &got) == CUS_SUCCESS);
            FUZZ_CHECK(got == count);
            for (unsigned int i = 0; i < count; i++) {
                cus_function *fn = NULL;
                FUZZ_CHECK(names[i] != NULL);
                /* a kernel of a relocatable cubin (nvcc -rdc=true) is listed, but
                 * needs linking, as with the driver: INVALID_IMAGE or NOT_FOUND */
                cus_status fs = cus_module_get_function(m, names[i], &fn);
                FUZZ_CHECK(fs == CUS_SUCCESS ||
                           ((fs == CUDA_ERROR_INVALID_IMAGE || fs == CUDA_ERROR_NOT_FOUND) &&
                            fn == NULL));
                cus_function_unref(fn);
            }
            free(names);
        }
        cus_function *none = NULL;
        FUZZ_CHECK(cus_module_get_function(m, "cus_fuzz_no_such_kernel", &none) != CUS_SUCCESS);
        FUZZ_CHECK(none == NULL);
        cus_module_unref(m);
    }
    FUZZ_CHECK(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE) == 0);
    FUZZ_CHECK(cus_fake_misuse_count() == 0);
    return st;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cus_image_format format = cus_module_image_format(data, size);
    FUZZ_CHECK(format >= CUS_IMAGE_UNKNOWN && format <= CUS_IMAGE_FATBIN_WRAPPER);
    FUZZ_CHECK(cus_image_format_name(format) != NULL);
    /* it reads at most 16 bytes */
    FUZZ_CHECK(cus_module_image_format(data, size < 16 ? size : 16) == format);
    FUZZ_CHECK(cus_module_image_format(NULL, size) == CUS_IMAGE_UNKNOWN);
    if (size == 0) {
        FUZZ_CHECK(format == CUS_IMAGE_UNKNOWN);
        return 0;
    }

    if (format == CUS_IMAGE_FATBIN_WRAPPER && size >= 16)
        return 0; /* its pointer would be dereferenced (see the top) */
    if (cubin_section_outside(data, size))
        FUZZ_CHECK(!reaches_driver(data, size));
    cus_status sized = load(data, size, format);
    if (format == CUS_IMAGE_UNKNOWN)
        FUZZ_CHECK(sized == (cus_status)CUDA_ERROR_INVALID_IMAGE);

    /* size 0 (unknown): safe to read up to the NUL for PTX and unknown input */
    if ((format == CUS_IMAGE_PTX || format == CUS_IMAGE_UNKNOWN) && memchr(data, 0, size)) {
        cus_status unsized = load(data, 0, format);
        FUZZ_CHECK(unsized == sized);
    }

    /* PTX without its NUL: loaded again with one (a copy of exactly size + 1 bytes) */
    if (format == CUS_IMAGE_PTX && !memchr(data, 0, size)) {
        FUZZ_CHECK(sized == (cus_status)CUDA_ERROR_INVALID_IMAGE);
        uint8_t *text = malloc(size + 1);
        FUZZ_CHECK(text != NULL);
        memcpy(text, data, size);
        text[size] = 0;
        cus_status terminated = load(text, size + 1, format);
        FUZZ_CHECK(load(text, 0, format) == terminated);
        free(text);
    }
    return 0;
}
