/* The module tests, part load: image formats, loading from memory and from
 * files, JIT options, load and unload failures. Their fixtures, and what the
 * module tests are about: module_fixtures.h. */
#include <sys/mman.h>
#include <unistd.h>

#include "module_fixtures.h"

/* A module unload is made in relaxed capture interaction mode
 * (cus_destroy_in_context_relaxed_): the exchange, the unload, the exchange back. */
#define UNLOAD_RELAXED                                                         \
    "cuThreadExchangeStreamCaptureMode", "cuModuleUnload", "cuThreadExchangeStreamCaptureMode"

/* --- image formats ------------------------------------------------------------------------ */

static void test_image_format_detection(void **state)
{
    (void)state;
    static const unsigned char elf[] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0};
    static const unsigned char fat[] = {0x50, 0xed, 0x55, 0xba, 1, 0, 16, 0};
    static const unsigned char wrap[] = {0xb1, 0x43, 0x62, 0x46, 1, 0, 0, 0};
    static const unsigned char elg[] = {0x7f, 'E', 'L', 'G', 2, 1, 1, 0};
    unsigned long calls = cus_fake_call_count();
    assert_int_equal(cus_module_image_format(ptx_src, sizeof ptx_src), CUS_IMAGE_PTX);
    assert_int_equal(cus_module_image_format(ptx_src, 0), CUS_IMAGE_UNKNOWN);
    assert_int_equal(cus_module_image_format(".version 8.0", 12), CUS_IMAGE_PTX);
    assert_int_equal(cus_module_image_format(" \t\r\n.target sm_80", 17), CUS_IMAGE_PTX);
    assert_int_equal(cus_module_image_format("// a comment\n", 13), CUS_IMAGE_PTX);
    assert_int_equal(cus_module_image_format("/* a comment */", 15), CUS_IMAGE_PTX);
    assert_int_equal(cus_module_image_format("/", 1), CUS_IMAGE_PTX); /* all it could see */
    assert_int_equal(cus_module_image_format(".", 1), CUS_IMAGE_PTX);
    assert_int_equal(cus_module_image_format("/x", 2), CUS_IMAGE_UNKNOWN);
    assert_int_equal(cus_module_image_format(".Version", 8), CUS_IMAGE_UNKNOWN);
    assert_int_equal(cus_module_image_format(".1", 2), CUS_IMAGE_UNKNOWN);
    assert_int_equal(cus_module_image_format("hello", 5), CUS_IMAGE_UNKNOWN);
    assert_int_equal(cus_module_image_format("", 1), CUS_IMAGE_UNKNOWN);
    assert_int_equal(cus_module_image_format("                    ", 20), CUS_IMAGE_UNKNOWN);
    assert_int_equal(cus_module_image_format(NULL, 16), CUS_IMAGE_UNKNOWN);
    assert_int_equal(cus_module_image_format(elf, sizeof elf), CUS_IMAGE_CUBIN);
    assert_int_equal(cus_module_image_format(elf, 3), CUS_IMAGE_UNKNOWN); /* the magic cut */
    assert_int_equal(cus_module_image_format(fat, sizeof fat), CUS_IMAGE_FATBIN);
    assert_int_equal(cus_module_image_format(fat, 4), CUS_IMAGE_FATBIN);
    assert_int_equal(cus_module_image_format(wrap, sizeof wrap), CUS_IMAGE_FATBIN_WRAPPER);
    assert_int_equal(cus_module_image_format(elg, sizeof elg), CUS_IMAGE_UNKNOWN);
    assert_no_calls_since(calls);
}

static void test_image_format_names(void **state)
{
    (void)state;
    assert_string_equal(cus_image_format_name(CUS_IMAGE_PTX), "PTX");
    assert_string_equal(cus_image_format_name(CUS_IMAGE_CUBIN), "cubin");
    assert_string_equal(cus_image_format_name(CUS_IMAGE_FATBIN), "fatbin");
    assert_string_equal(cus_image_format_name(CUS_IMAGE_FATBIN_WRAPPER), "fatbin wrapper");
    assert_string_equal(cus_image_format_name(CUS_IMAGE_UNKNOWN), "unknown");
    assert_string_equal(cus_image_format_name((cus_image_format)42), "unknown");
}

/* --- loading from memory ------------------------------------------------------------------ */

static void test_load_ptx(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    stack_snap before = snap();
    unsigned long calls = cus_fake_call_count();
    cus_module *m = NULL;
    assert_ok(cus_module_load_data(c, ptx_src, 0, NULL, &m)); /* size unknown: a string */
    /* not current: made current for the load, then the stack is as it was */
    assert_calls_since(calls, "cuCtxPushCurrent", "cuModuleLoadDataEx", "cuCtxPopCurrent");
    assert_stack_unchanged(before);
    assert_non_null(m);
    assert_non_null(cus_module_handle(m));
    assert_ptr_equal(cus_module_context(m), c);
    assert_int_equal(cus_module_format(m), CUS_IMAGE_PTX);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 1);
    assert_int_equal(cus_debug_live_objects(), 2);
    /* The JIT's info log, trailing newline trimmed. */
    const char *info = cus_module_info_log(m);
    assert_contains(info, "ptxas info    : Compiling entry function 'add' for 'sm_80'");
    assert_true(info[strlen(info) - 1] != '\n');

    /* With the size, NUL included, and with the context current: one call. */
    cus_module *m2 = NULL;
    assert_ok(cus_context_push(c));
    calls = cus_fake_call_count();
    assert_ok(cus_module_load_data(c, ptx_src, sizeof ptx_src, NULL, &m2));
    assert_calls_since(calls, "cuModuleLoadDataEx");
    assert_ok(cus_context_pop(NULL));
    assert_ptr_not_equal(m2, m);
    assert_ptr_not_equal(cus_module_handle(m2), cus_module_handle(m));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 2);

    /* A size past the NUL is fine: the NUL is within it. */
    cus_module *m3 = NULL;
    char padded[sizeof ptx_src + 16];
    memset(padded, 0, sizeof padded);
    memcpy(padded, ptx_src, sizeof ptx_src);
    assert_ok(cus_module_load_data(c, padded, sizeof padded, NULL, &m3));

    m = cus_module_unref(m);
    m2 = cus_module_unref(m2);
    m3 = cus_module_unref(m3);
    assert_null(m);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 0);
    assert_int_equal(cus_fake_calls_of("cuModuleUnload"), 3);
    c = cus_context_unref(c);
}

static void test_module_keeps_its_context_alive(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_module *m = load(c, ptx_src);
    c = cus_context_unref(c);
    assert_int_equal(cus_fake_calls_of("cuCtxDestroy"), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_CONTEXT), 1);
    cus_function *f = get_fn(m, "add");
    assert_int_equal(fn_attr(f, CU_FUNC_ATTRIBUTE_NUM_REGS), 32);
    f = cus_function_unref(f);
    unsigned long calls = cus_fake_call_count();
    m = cus_module_unref(m);
    /* unloaded with its context current, then the context goes */
    assert_calls_since(calls, "cuCtxPushCurrent", UNLOAD_RELAXED, "cuCtxPopCurrent",
                       "cuCtxDestroy");
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
}

static void test_module_unref_restores_the_callers_stack(void **state)
{
    (void)state;
    cus_context *c = new_ctx(), *other = new_ctx();
    cus_module *m = load(c, ptx_src);
    assert_ok(cus_context_push(other));
    stack_snap before = snap();
    assert_ptr_equal(before.top, other);
    unsigned long calls = cus_fake_call_count();
    assert_null(cus_module_unref(m));
    assert_calls_since(calls, "cuCtxPushCurrent", UNLOAD_RELAXED, "cuCtxPopCurrent");
    assert_stack_unchanged(before);
    /* Current already: no push. */
    m = load(c, ptx_src);
    assert_ok(cus_context_push(c));
    calls = cus_fake_call_count();
    assert_null(cus_module_unref(m));
    assert_calls_since(calls, UNLOAD_RELAXED);
    assert_ok(cus_context_pop(NULL));
    assert_ok(cus_context_pop(NULL));
    c = cus_context_unref(c);
    other = cus_context_unref(other);
}

static void test_module_refs_and_null(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    cus_module *m = load(c, ptx_src);
    assert_ptr_equal(cus_module_ref(m), m);
    assert_null(cus_module_unref(m));
    assert_int_equal(cus_fake_calls_of("cuModuleUnload"), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 1);
    assert_null(cus_module_unref(m));
    assert_int_equal(cus_fake_calls_of("cuModuleUnload"), 1);
    /* NULL everywhere a getter or a ref takes a module */
    assert_null(cus_module_ref(NULL));
    assert_null(cus_module_unref(NULL));
    assert_null(cus_module_handle(NULL));
    assert_null(cus_module_context(NULL));
    assert_int_equal(cus_module_format(NULL), CUS_IMAGE_UNKNOWN);
    assert_string_equal(cus_module_info_log(NULL), "");
    c = cus_context_unref(c);
}

static void test_autoptr_and_steal(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    cus_module *kept = NULL;
    {
        cus_autoptr(cus_module) m = load(c, ptx_src);
        cus_autoptr(cus_function) f = get_fn(m, "add");
        cus_autoptr(cus_module) dropped = load(c, ptx_src);
        assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 2);
        kept = cus_steal(&m);
        assert_null(m);
        (void)f;
        (void)dropped;
    }
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 1);
    assert_int_equal(cus_debug_live_objects(), 2);
    kept = cus_module_unref(kept);
    c = cus_context_unref(c);
}

static void test_load_null_arguments(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    leak_snap before = leak_snap_now();
    unsigned long calls = cus_fake_call_count();
    cus_module *m = SENTINEL_PTR(m);
    assert_status(cus_module_load_data(NULL, ptx_src, 0, NULL, &m), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_module_load_data(c, NULL, 0, NULL, &m), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_module_load_data(c, ptx_src, 0, NULL, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_module_load_file(NULL, "/x", NULL, &m), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_module_load_file(c, NULL, NULL, &m), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_module_load_file(c, "/x", NULL, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_contains(cus_last_error_message(), "cus_module_load_file");
    assert_ptr_equal(m, SENTINEL_PTR(m));
    assert_no_calls_since(calls);
    assert_nothing_changed(before);
    c = cus_context_unref(c);
}

static void test_load_empty_and_unknown_images(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    static const unsigned char junk[] = {0x01, 0x02, 0x03, 0xfe, 0x00};
    static const unsigned char elg[64] = {0x7f, 'E', 'L', 'G', 2, 1, 1};
    check_refused(c, "", 0, "an empty image (first bytes: 00)");
    check_refused(c, "", 1, "an unknown image (first bytes: 00)");
    check_refused(c, junk, sizeof junk, "first bytes: 01 02 03 fe");
    check_refused(c, junk, 2, "(first bytes: 01 02)");
    check_refused(c, junk, 0, "first bytes: 01 02 03 fe"); /* unknown size: up to 4 */
    check_refused(c, elg, sizeof elg, "(first bytes: 7f 45 4c 47): neither PTX text, a cubin");
    check_refused(c, "hello", 6, "68 65 6c 6c");
    c = cus_context_unref(c);
}

static void test_load_truncated_images(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    /* PTX cut: no NUL within the size */
    check_refused(c, ptx_src, sizeof ptx_src - 1, "PTX image of");
    check_refused(c, ptx_src, 40, "PTX image of 40 bytes is not NUL-terminated");
    /* a cubin shorter than its ELF header, or whose headers reach past its end */
    unsigned char elf[128];
    make_elf_header(elf, 4096, 8);
    check_refused(c, elf, 63, "cubin of 63 bytes is shorter than an ELF64 header");
    check_refused(c, elf, 128, "truncated cubin: 128 bytes");
    make_elf_header(elf, 64, 2); /* 64 + 2 * 64 = 192 bytes of section headers */
    check_refused(c, elf, 128, "truncated cubin");
    make_elf_header(elf, UINT64_MAX - 8, 2); /* an offset that overflows */
    check_refused(c, elf, 128, "truncated cubin");
    make_elf_header(elf, 0, 0);
    put64(elf + 0x20, 100); /* program headers past the end */
    put16(elf + 0x36, 56);
    put16(elf + 0x38, 1);
    check_refused(c, elf, 128, "truncated cubin");
    /* a fatbin shorter than its header, or whose header claims more */
    unsigned char fat[512];
    size_t n = make_fatbin(fat, sizeof fat, ".version 8.0\n.target sm_80\n.address_size 64\n"
                                            ".visible .entry k() { ret; }\n", 80);
    check_refused(c, fat, 15, "fatbin of 15 bytes is shorter than its header");
    char want[96];
    snprintf(want, sizeof want, "truncated fatbin: 40 bytes, its header says %zu", n);
    check_refused(c, fat, 40, want);
    snprintf(want, sizeof want, "truncated fatbin: %zu bytes, its header says %zu", n - 1, n);
    check_refused(c, fat, n - 1, want);
    put64(fat + 8, UINT64_MAX); /* a body size that overflows */
    check_refused(c, fat, n, "truncated fatbin");
    put64(fat + 8, n - 16);
    put16(fat + 6, 0xffff); /* a header size past the end */
    check_refused(c, fat, n, "truncated fatbin");
    /* a fatbin wrapper too short for its fields */
    static const unsigned char wrap[8] = {0xb1, 0x43, 0x62, 0x46, 1, 0, 0, 0};
    check_refused(c, wrap, sizeof wrap, "fatbin wrapper of 8 bytes is too short");
    c = cus_context_unref(c);
}

static void test_load_bad_images_the_driver_refuses(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    /* PTX with a syntax error: ptxas' line, from the JIT's error log */
    check_driver_refuses(c, ptx_bad, 0, CUDA_ERROR_INVALID_PTX,
                         "loading a PTX image: ptxas application ptx input, line 6; error   : ");
    check_driver_refuses(c, ptx_bad, sizeof ptx_bad, CUDA_ERROR_INVALID_PTX, "frobnicate");
    check_driver_refuses(c, ptx_bad, 0, CUDA_ERROR_INVALID_PTX, "Ptx assembly aborted");
    /* PTX cut in the middle (NUL-terminated, so it passes cuscope's check) */
    char cut[sizeof ptx_src];
    const char *body = strstr(ptx_src, "\tret;");
    size_t at = (size_t)(body - ptx_src);
    memcpy(cut, ptx_src, at);
    cut[at] = 0;
    check_driver_refuses(c, cut, at + 1, CUDA_ERROR_INVALID_PTX, "ptxas");
    /* PTX for a newer device than the context's */
    check_driver_refuses(c, ".version 8.0\n.target sm_100\n.address_size 64\n.entry e() { ret; }\n",
                         0, CUDA_ERROR_INVALID_PTX, "SM version specified by .target is higher");
    /* text that looks like PTX and is not */
    check_driver_refuses(c, ".frob\n", 0, CUDA_ERROR_INVALID_PTX, "ptxas");
    /* an ELF header that fits, of no CUDA machine */
    unsigned char elf[64];
    make_elf_header(elf, 0, 0);
    check_driver_refuses(c, elf, sizeof elf, CUDA_ERROR_INVALID_IMAGE,
                         "loading a cubin image: cubin: not a CUDA ELF image (machine 0)");
    /* ELF32 and big-endian ELF: cuscope leaves their headers to the driver */
    make_elf_header(elf, 4096, 8);
    elf[4] = 1;
    check_driver_refuses(c, elf, sizeof elf, CUDA_ERROR_INVALID_IMAGE,
                         "cubin: not a little-endian ELF64 image");
    elf[4] = 2;
    elf[5] = 2;
    check_driver_refuses(c, elf, sizeof elf, CUDA_ERROR_INVALID_IMAGE,
                         "cubin: not a little-endian ELF64 image");
    /* a fatbin whose entry reaches past it */
    unsigned char fat[512];
    size_t n = make_fatbin(fat, sizeof fat, ".version 8.0\n.target sm_80\n.address_size 64\n"
                                            ".visible .entry k() { ret; }\n", 80);
    put64(fat + 16 + 8, 4096);
    check_driver_refuses(c, fat, n, CUDA_ERROR_INVALID_IMAGE,
                         "loading a fatbin image: fatbin: entry at 0x10 out of the image");
    /* a wrapper around something that is not a fatbin: refused before the
     * driver now (test_load_bad_wrappers_never_reach_the_driver) */
    fatbin_wrapper w = {0x466243b1u, 1, "junk", NULL};
    check_refused(c, &w, sizeof w, "is not a fatbin (magic 6b6e756a)");
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 0);
    c = cus_context_unref(c);
}

/* The JIT's log buffers (lib/module.c): PTX, always compiled, gets a 16 KiB
 * info log from the heap; a fatbin's logs are on the stack. A load then
 * allocates the module record, the kept copy of a non-empty info log, the
 * kernels' parameter counts (one block, lib/param_counts.c), and for PTX its
 * log buffer: nothing that grows with the number of loads beyond that. The fake's JIT writes an info log for PTX, and for a fatbin's PTX. */
static void test_loads_allocate_no_log_buffer_for_fatbins(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    static unsigned char fat[4096];
    size_t n = make_fatbin(fat, sizeof fat, ptx_src, 80);
    /* the module, its info log and its counts, per load; no log buffer */
    assert_int_equal(allocations_of_loads(c, fat, n, 100), 3 * 100);
    fatbin_wrapper w = {0x466243b1u, 1, fat, NULL};
    assert_int_equal(allocations_of_loads(c, &w, sizeof w, 100), 3 * 100);
    /* PTX: the info log's buffer as well */
    assert_int_equal(allocations_of_loads(c, ptx_src, 0, 100), 4 * 100);
    /* the fatbin's info log is kept whole */
    cus_module *m = NULL;
    assert_ok(cus_module_load_data(c, fat, n, NULL, &m));
    assert_contains(cus_module_info_log(m), "Compiling entry function 'add'");
    assert_contains(cus_module_info_log(m), "Compiling entry function 'noargs'");
    m = cus_module_unref(m);
    /* and the error log reaches the message as before */
    n = make_fatbin(fat, sizeof fat, ptx_bad, 80);
    m = SENTINEL_PTR(m);
    assert_status(cus_module_load_data(c, fat, n, NULL, &m), CUDA_ERROR_INVALID_PTX);
    assert_contains(cus_last_error_message(), "frobnicate");
    assert_ptr_equal(m, SENTINEL_PTR(m));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 0);
    c = cus_context_unref(c);
}

/* A fatbin whose JIT writes more than the stack's info log takes keeps the
 * first 4 KiB of it (module.h, cus_module_info_log); PTX keeps 16 KiB. */
static void test_info_log_capacity_by_format(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    char *ptx = make_many_kernels_ptx(200); /* some 40 KiB of info log */
    size_t cap = strlen(ptx) + 256;
    unsigned char *fat = malloc(cap);
    assert_non_null(fat);
    size_t n = make_fatbin(fat, cap, ptx, 80);
    cus_module *m = NULL;
    assert_ok(cus_module_load_data(c, fat, n, NULL, &m));
    size_t kept = strlen(cus_module_info_log(m));
    assert_true(kept > 3000 && kept < 4096);
    assert_true(strncmp(cus_module_info_log(m), "ptxas info", 10) == 0);
    m = cus_module_unref(m);
    assert_ok(cus_module_load_data(c, ptx, 0, NULL, &m));
    kept = strlen(cus_module_info_log(m));
    assert_true(kept > 15000 && kept < 16384);
    m = cus_module_unref(m);
    free(fat);
    free(ptx);
    c = cus_context_unref(c);
}

static void test_load_hand_built_fatbin_and_wrapper(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    static unsigned char fat[4096];
    size_t n = make_fatbin(fat, sizeof fat, ptx_src, 80);
    assert_int_equal(cus_module_image_format(fat, n), CUS_IMAGE_FATBIN);
    cus_module *m = NULL;
    assert_ok(cus_module_load_data(c, fat, n, NULL, &m));
    assert_int_equal(cus_module_format(m), CUS_IMAGE_FATBIN);
    cus_function *f = get_fn(m, "bounded");
    assert_int_equal(fn_attr(f, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK), 128);
    f = cus_function_unref(f);
    m = cus_module_unref(m);
    /* size unknown: the header's */
    assert_ok(cus_module_load_data(c, fat, 0, NULL, &m));
    m = cus_module_unref(m);
    /* the wrapper, with and without its size */
    fatbin_wrapper w = {0x466243b1u, 1, fat, NULL};
    assert_int_equal(cus_module_image_format(&w, sizeof w), CUS_IMAGE_FATBIN_WRAPPER);
    assert_ok(cus_module_load_data(c, &w, sizeof w, NULL, &m));
    assert_int_equal(cus_module_format(m), CUS_IMAGE_FATBIN_WRAPPER);
    f = get_fn(m, "noargs");
    f = cus_function_unref(f);
    m = cus_module_unref(m);
    assert_ok(cus_module_load_data(c, &w, 0, NULL, &m));
    m = cus_module_unref(m);
    c = cus_context_unref(c);
}

/* --- JIT options -------------------------------------------------------------------------- */

static void test_jit_options_reach_the_driver(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    cus_module *m = NULL;
    cus_function *f = NULL;
    /* defaults: NULL, or zeros */
    cus_jit_options jit = {0};
    assert_ok(cus_module_load_data(c, ptx_src, 0, &jit, &m));
    f = get_fn(m, "add");
    assert_int_equal(fn_attr(f, CU_FUNC_ATTRIBUTE_NUM_REGS), 32);
    assert_int_equal(fn_attr(f, CU_FUNC_ATTRIBUTE_BINARY_VERSION), 90);
    f = cus_function_unref(f);
    m = cus_module_unref(m);
    /* a register limit: the fake's ptxas honours it */
    jit = (cus_jit_options){.max_registers = 20};
    assert_ok(cus_module_load_data(c, ptx_src, 0, &jit, &m));
    f = get_fn(m, "add");
    assert_int_equal(fn_attr(f, CU_FUNC_ATTRIBUTE_NUM_REGS), 20);
    f = cus_function_unref(f);
    m = cus_module_unref(m);
    /* levels 0 and 4, line and debug info: accepted */
    jit = (cus_jit_options){.optimization_level = 0, .set_level = true, .line_info = true};
    assert_ok(cus_module_load_data(c, ptx_src, 0, &jit, &m));
    m = cus_module_unref(m);
    jit = (cus_jit_options){.optimization_level = 4, .set_level = true, .debug_info = true};
    assert_ok(cus_module_load_data(c, ptx_src, 0, &jit, &m));
    m = cus_module_unref(m);
    /* a level without set_level is not passed */
    jit = (cus_jit_options){.optimization_level = 9};
    assert_ok(cus_module_load_data(c, ptx_src, 0, &jit, &m));
    m = cus_module_unref(m);
    /* a target: compute_90 explicitly */
    jit = (cus_jit_options){.target = CU_TARGET_COMPUTE_90};
    assert_ok(cus_module_load_data(c, ptx_src, 0, &jit, &m));
    f = get_fn(m, "add");
    assert_int_equal(fn_attr(f, CU_FUNC_ATTRIBUTE_BINARY_VERSION), 90);
    assert_int_equal(fn_attr(f, CU_FUNC_ATTRIBUTE_PTX_VERSION), 80);
    f = cus_function_unref(f);
    m = cus_module_unref(m);
    /* targets the driver refuses: so they reached it */
    leak_snap before = leak_snap_now();
    m = SENTINEL_PTR(m);
    jit = (cus_jit_options){.target = CU_TARGET_COMPUTE_100};
    assert_status(cus_module_load_data(c, ptx_src, 0, &jit, &m), CUDA_ERROR_NO_BINARY_FOR_GPU);
    assert_contains(cus_last_error_message(), "the JIT wrote no log");
    jit = (cus_jit_options){.target = CU_TARGET_COMPUTE_75}; /* below the PTX's .target */
    assert_status(cus_module_load_data(c, ptx_src, 0, &jit, &m), CUDA_ERROR_INVALID_PTX);
    assert_contains(cus_last_error_message(), "SM version specified by .target is higher");
    jit = (cus_jit_options){.target = 91}; /* no such target */
    assert_status(cus_module_load_data(c, ptx_src, 0, &jit, &m), CUDA_ERROR_INVALID_VALUE);
    assert_string_equal(cus_last_error()->driver_call, "cuModuleLoadDataEx");
    assert_ptr_equal(m, SENTINEL_PTR(m));
    assert_nothing_changed(before);
    c = cus_context_unref(c);
}

static void test_jit_options_refused_before_the_driver(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    leak_snap before = leak_snap_now();
    unsigned long calls = cus_fake_call_count();
    cus_module *m = SENTINEL_PTR(m);
    cus_jit_options jit = {.optimization_level = 5, .set_level = true};
    assert_status(cus_module_load_data(c, ptx_src, 0, &jit, &m), CUS_ERROR_INVALID_ARGUMENT);
    assert_contains(cus_last_error_message(), "JIT optimization level 5 is outside 0..4");
    /* -1 with set_level: refused too (module.h: "-1 or 0 with set_level false:
     * the driver's default"; the code reads it as "-1 never, 0 only without
     * set_level") */
    jit = (cus_jit_options){.optimization_level = -1, .set_level = true};
    assert_status(cus_module_load_data(c, ptx_src, 0, &jit, &m), CUS_ERROR_INVALID_ARGUMENT);
    jit = (cus_jit_options){.target = -3};
    assert_status(cus_module_load_data(c, ptx_src, 0, &jit, &m), CUS_ERROR_INVALID_ARGUMENT);
    assert_contains(cus_last_error_message(), "JIT target -3");
    /* the image is checked first */
    jit = (cus_jit_options){.target = -3};
    assert_status(cus_module_load_data(c, "junk", 5, &jit, &m), CUDA_ERROR_INVALID_IMAGE);
    assert_ptr_equal(m, SENTINEL_PTR(m));
    assert_no_calls_since(calls);
    assert_nothing_changed(before);
    c = cus_context_unref(c);
}

static void test_jit_target_on_an_sm86_device(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    cus_module *m = NULL;
    assert_ok(cus_module_load_data(c, ptx_src, 0, NULL, &m));
    cus_function *f = get_fn(m, "add");
    assert_int_equal(fn_attr(f, CU_FUNC_ATTRIBUTE_BINARY_VERSION), 86); /* the device's */
    f = cus_function_unref(f);
    m = cus_module_unref(m);
    cus_jit_options jit = {.target = CU_TARGET_COMPUTE_80};
    assert_ok(cus_module_load_data(c, ptx_src, 0, &jit, &m));
    f = get_fn(m, "add");
    assert_int_equal(fn_attr(f, CU_FUNC_ATTRIBUTE_BINARY_VERSION), 80); /* the option's */
    f = cus_function_unref(f);
    m = cus_module_unref(m);
    jit.target = CU_TARGET_COMPUTE_89;
    m = SENTINEL_PTR(m);
    assert_status(cus_module_load_data(c, ptx_src, 0, &jit, &m), CUDA_ERROR_NO_BINARY_FOR_GPU);
    assert_ptr_equal(m, SENTINEL_PTR(m));
    c = cus_context_unref(c);
}

static void test_ptx_newer_than_the_driver(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    cus_module *m = load(c, ptx_src); /* ISA 8.0: what a 12.0 driver takes */
    m = cus_module_unref(m);
    check_driver_refuses(c, ".version 8.1\n.target sm_80\n.address_size 64\n.entry e() { ret; }\n",
                         0, CUDA_ERROR_UNSUPPORTED_PTX_VERSION,
                         "Unsupported .version 8.1; current version is '8.0'");
    c = cus_context_unref(c);
}

/* --- loading from files ------------------------------------------------------------------- */

static void test_load_file(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    /* PTX without a NUL: the file's end ends the text */
    const char *path = write_file("add.ptx", ptx_src, strlen(ptx_src));
    cus_module *m = NULL;
    stack_snap before = snap();
    assert_ok(cus_module_load_file(c, path, NULL, &m));
    assert_stack_unchanged(before);
    assert_int_equal(cus_module_format(m), CUS_IMAGE_PTX);
    assert_contains(cus_module_info_log(m), "Compiling entry function 'noargs'");
    cus_function *f = get_fn(m, "noargs");
    f = cus_function_unref(f);
    m = cus_module_unref(m);
    /* with JIT options */
    cus_jit_options jit = {.max_registers = 24};
    assert_ok(cus_module_load_file(c, path, &jit, &m));
    f = get_fn(m, "add");
    assert_int_equal(fn_attr(f, CU_FUNC_ATTRIBUTE_NUM_REGS), 24);
    f = cus_function_unref(f);
    m = cus_module_unref(m);
    remove_file(path);

    /* larger than the first read buffer (64 KiB): a long comment first */
    size_t big = 200000;
    char *text = malloc(big + sizeof ptx_src);
    assert_non_null(text);
    memset(text, ' ', big);
    memcpy(text, "/*", 2);
    memcpy(text + big - 3, "*/\n", 3);
    memcpy(text + big, ptx_src, sizeof ptx_src);
    path = write_file("big.ptx", text, big + sizeof ptx_src - 1);
    free(text);
    assert_ok(cus_module_load_file(c, path, NULL, &m));
    f = get_fn(m, "bounded");
    f = cus_function_unref(f);
    m = cus_module_unref(m);
    remove_file(path);

    /* a hand-built fatbin */
    static unsigned char fat[4096];
    size_t n = make_fatbin(fat, sizeof fat, ptx_src, 80);
    path = write_file("add.fatbin", fat, n);
    assert_ok(cus_module_load_file(c, path, NULL, &m));
    assert_int_equal(cus_module_format(m), CUS_IMAGE_FATBIN);
    m = cus_module_unref(m);
    /* and cut: the header claims more than the file holds */
    path = write_file("cut.fatbin", fat, n - 8);
    m = SENTINEL_PTR(m);
    assert_status(cus_module_load_file(c, path, NULL, &m), CUDA_ERROR_INVALID_IMAGE);
    assert_contains(cus_last_error_message(), "truncated fatbin");
    assert_ptr_equal(m, SENTINEL_PTR(m));
    remove_file(path);
    remove_file(write_file("add.fatbin", "", 0));
    c = cus_context_unref(c);
}

static void test_load_file_failures(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    leak_snap before = leak_snap_now();
    unsigned long calls = cus_fake_call_count();
    cus_module *m = SENTINEL_PTR(m);
    /* missing */
    assert_status(cus_module_load_file(c, "/nonexistent/cuscope.ptx", NULL, &m),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_contains(cus_last_error_message(), "opening /nonexistent/cuscope.ptx");
    assert_contains(cus_last_error_message(), strerror(ENOENT));
    /* a directory: opens, and fails to read */
    const char *path = write_file("x", "", 0);
    remove_file(path);
    assert_int_equal(mkdir(path, 0700), 0);
    assert_status(cus_module_load_file(c, path, NULL, &m), CUS_ERROR_INVALID_ARGUMENT);
    assert_contains(cus_last_error_message(), strerror(EISDIR));
    assert_int_equal(rmdir(path), 0);
    /* empty */
    path = write_file("empty.ptx", "", 0);
    assert_status(cus_module_load_file(c, path, NULL, &m), CUDA_ERROR_INVALID_IMAGE);
    assert_contains(cus_last_error_message(), "an empty image");
    remove_file(path);
    /* junk */
    path = write_file("junk.bin", "\x01\x02\x03\x04\x05", 5);
    assert_status(cus_module_load_file(c, path, NULL, &m), CUDA_ERROR_INVALID_IMAGE);
    assert_contains(cus_last_error_message(), "01 02 03 04");
    remove_file(path);
    /* a bad JIT option */
    path = write_file("add.ptx", ptx_src, strlen(ptx_src));
    cus_jit_options jit = {.optimization_level = 7, .set_level = true};
    assert_status(cus_module_load_file(c, path, &jit, &m), CUS_ERROR_INVALID_ARGUMENT);
    assert_no_calls_since(calls);
    /* PTX with a syntax error: the JIT log */
    remove_file(path);
    path = write_file("bad.ptx", ptx_bad, strlen(ptx_bad));
    assert_status(cus_module_load_file(c, path, NULL, &m), CUDA_ERROR_INVALID_PTX);
    assert_contains(cus_last_error_message(), "line 6");
    assert_contains(cus_last_error_message(), "frobnicate");
    remove_file(path);
    assert_ptr_equal(m, SENTINEL_PTR(m));
    assert_nothing_changed(before);
    c = cus_context_unref(c);
}

/* --- load failures ------------------------------------------------------------------------ */

static void test_load_faults(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_module *m = SENTINEL_PTR(m);
    assert_fault_named("cuCtxPushCurrent", cus_module_load_data(c, ptx_src, 0, NULL, &m));
    assert_fault_named("cuModuleLoadDataEx", cus_module_load_data(c, ptx_src, 0, NULL, &m));
    assert_contains(cus_last_error_message(), "loading a PTX image");
    const char *path = write_file("add.ptx", ptx_src, strlen(ptx_src));
    assert_fault_named("cuCtxPushCurrent", cus_module_load_file(c, path, NULL, &m));
    assert_fault_named("cuModuleLoadDataEx", cus_module_load_file(c, path, NULL, &m));
    /* named after the call the user made */
    assert_string_equal(cus_last_error()->function, "cus_module_load_file");
    remove_file(path);
    assert_ptr_equal(m, SENTINEL_PTR(m));
    /* the pop failing for good after the load: the module is loaded, so it
     * is returned (no rollback), usable, and unloaded at its last release */
    unsigned long unloads = cus_fake_calls_of("cuModuleUnload");
    assert_pop_fault_reported("cus_module_load_data",
                              cus_module_load_data(c, ptx_src, 0, NULL, &m));
    assert_int_equal(cus_fake_calls_of("cuModuleUnload"), unloads);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 1);
    assert_ptr_not_equal(m, SENTINEL_PTR(m));
    assert_non_null(m);
    {
        cus_function *f = NULL;
        assert_ok(cus_module_get_function(m, "add", &f));
        f = cus_function_unref(f);
    }
    m = cus_module_unref(m);
    assert_int_equal(cus_fake_calls_of("cuModuleUnload"), unloads + 1);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 0);
    assert_int_equal(env_destroyed.count, 1); /* the pop's report only */
    /* one pop failing: its retry puts the stack back, the load succeeds */
    stack_snap before = snap();
    unsigned long fired = cus_fake_faults_fired();
    assert_ok(cus_fake_fail_entry("cuCtxPopCurrent", 1, FAULT, false));
    m = NULL;
    assert_ok(cus_module_load_data(c, ptx_src, 0, NULL, &m));
    assert_int_equal(cus_fake_faults_fired(), fired + 1);
    cus_fake_clear_faults();
    assert_stack_unchanged(before);
    m = cus_module_unref(m);
    c = cus_context_unref(c);
}

/* A load whose closing pop fails for good is not rolled back (before the
 * switch contract it unloaded the module, and a failing unload went to the
 * handler): the module is loaded, so it is returned, and the unload armed to
 * fail is never called; the one report is the pop's. */
static void test_load_whose_pop_fails_is_not_rolled_back(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_module *m = SENTINEL_PTR(m);
    unsigned long unloads = cus_fake_calls_of("cuModuleUnload");
    cus_clear_last_error();
    assert_ok(cus_fake_fail_entry("cuCtxPopCurrent", 1, FAULT, true));
    assert_ok(cus_fake_fail_entry("cuModuleUnload", 1, CUDA_ERROR_UNKNOWN, false));
    assert_ok(cus_module_load_data(c, ptx_src, 0, NULL, &m));
    cus_fake_clear_faults();
    raw_pop_current();
    assert_int_equal(cus_last_status(), CUS_SUCCESS);
    assert_int_equal(cus_fake_calls_of("cuModuleUnload"), unloads);
    env_assert_one_pop_report(0, "cus_module_load_data");
    assert_int_equal(env_destroyed.last_status, FAULT);
    assert_ptr_not_equal(m, SENTINEL_PTR(m));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 1);
    CUdeviceptr p = 0;
    size_t bytes = 0;
    assert_ok(cus_module_get_global(m, "counter", &p, &bytes));
    assert_int_equal(bytes, 4);
    m = cus_module_unref(m);
    assert_int_equal(cus_fake_calls_of("cuModuleUnload"), unloads + 1);
    assert_int_equal(env_destroyed.count, 1);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 0);
    c = cus_context_unref(c);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
}

static void test_load_with_a_sticky_failure_poisons(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_module *m = SENTINEL_PTR(m);
    assert_ok(cus_fake_fail_entry("cuModuleLoadDataEx", 1, CUDA_ERROR_ILLEGAL_ADDRESS, false));
    assert_status(cus_module_load_data(c, ptx_src, 0, NULL, &m), CUDA_ERROR_ILLEGAL_ADDRESS);
    cus_fake_clear_faults();
    assert_contains(cus_last_error_message(), "cuModuleLoadDataEx");
    assert_int_equal(cus_context_poisoned(c), CUDA_ERROR_ILLEGAL_ADDRESS);
    /* from now on: fails fast, no driver call */
    unsigned long calls = cus_fake_call_count();
    assert_status(cus_module_load_data(c, ptx_src, 0, NULL, &m), CUDA_ERROR_ILLEGAL_ADDRESS);
    assert_contains(cus_last_error_message(), "poisoned");
    const char *path = write_file("add.ptx", ptx_src, strlen(ptx_src));
    assert_status(cus_module_load_file(c, path, NULL, &m), CUDA_ERROR_ILLEGAL_ADDRESS);
    remove_file(path);
    assert_no_calls_since(calls);
    assert_ptr_equal(m, SENTINEL_PTR(m));
    c = cus_context_unref(c);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
}

/* --- unload failures ---------------------------------------------------------------------- */

static void test_unload_failures_go_to_the_handler(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    /* the unload fails */
    cus_module *m = load(c, ptx_src);
    cus_clear_last_error();
    assert_ok(cus_fake_fail_entry("cuModuleUnload", 1, FAULT, false));
    stack_snap before = snap();
    assert_null(cus_module_unref(m));
    cus_fake_clear_faults();
    assert_stack_unchanged(before);
    assert_int_equal(env_destroyed.count, 1);
    assert_int_equal(env_destroyed.last_status, FAULT);
    assert_contains(env_destroyed.last_message, "cus_module_unref");
    assert_contains(env_destroyed.last_message, "cuModuleUnload");
    assert_int_equal(cus_last_status(), CUS_SUCCESS); /* destructors leave it alone */
    assert_int_equal(cus_debug_live_objects(), 1);    /* the context only */
    /* making the context current fails: no unload */
    m = load(c, ptx_src);
    unsigned long unloads = cus_fake_calls_of("cuModuleUnload");
    assert_ok(cus_fake_fail_entry("cuCtxPushCurrent", 1, FAULT, false));
    assert_null(cus_module_unref(m));
    cus_fake_clear_faults();
    assert_stack_unchanged(before);
    assert_int_equal(env_destroyed.count, 2);
    assert_contains(env_destroyed.last_message, "cuCtxPushCurrent");
    assert_int_equal(cus_fake_calls_of("cuModuleUnload"), unloads);
    /* the pop fails for good after the unload */
    m = load(c, ptx_src);
    assert_ok(cus_fake_fail_entry("cuCtxPopCurrent", 1, FAULT, true));
    assert_null(cus_module_unref(m));
    cus_fake_clear_faults();
    raw_pop_current();
    assert_stack_unchanged(before);
    assert_int_equal(env_destroyed.count, 3);
    assert_contains(env_destroyed.last_message, "cuCtxPopCurrent");
    assert_int_equal(cus_fake_calls_of("cuModuleUnload"), unloads + 1);
    assert_int_equal(cus_last_status(), CUS_SUCCESS);
    /* the two modules left behind go with their context */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 2);
    c = cus_context_unref(c);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
}

/* A failing call's error survives the cleanup of a module that unloads
 * during the early return (cus_autoptr). */
static cus_status load_then_fail(cus_context *c)
{
    cus_autoptr(cus_module) m = NULL;
    CUS_TRY(cus_module_load_data(c, ptx_src, 0, NULL, &m));
    cus_function *f = NULL;
    CUS_TRY(cus_module_get_function(m, "missing", &f));
    return CUS_SUCCESS;
}

static void test_cleanup_keeps_the_error_being_returned(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    assert_status(load_then_fail(c), CUDA_ERROR_NOT_FOUND);
    assert_contains(cus_last_error_message(), "\"missing\"");
    assert_string_equal(cus_last_error()->function, "cus_module_get_function");
    assert_int_equal(cus_fake_calls_of("cuModuleUnload"), 1);
    c = cus_context_unref(c);
}

/* A fatbin wrapper's data pointer is checked before the driver follows it
 * (issue 20: one pointing at garbage crashed the fake's parser, and the
 * driver follows it as blindly): NULL, an unmapped address, memory that is
 * not a fatbin, and a fatbin whose header claims more than can be read are
 * each CUDA_ERROR_INVALID_IMAGE, with no driver call; with the size known or
 * not (0). */
static void test_load_bad_wrappers_never_reach_the_driver(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    for (int sized = 0; sized < 2; sized++) {
        size_t size = sized ? sizeof(fatbin_wrapper) : 0;
        fatbin_wrapper w = {0x466243b1u, 1, NULL, NULL};
        check_refused(c, &w, size, "fatbin wrapper with no fatbin (a NULL data pointer)");
        w.data = (const void *)(uintptr_t)0x1000; /* the second page: never mapped */
        check_refused(c, &w, size, "is not readable memory");
        static const char text[] = "not a fatbin at all";
        w.data = text;
        check_refused(c, &w, size, "is not a fatbin");
        /* a fatbin header at the end of a page, its body claimed past it into
         * a page that cannot be read */
        long page = sysconf(_SC_PAGESIZE);
        unsigned char *two = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE,
                                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        assert_true(two != MAP_FAILED);
        assert_int_equal(mprotect(two + page, (size_t)page, PROT_NONE), 0);
        unsigned char *fat = two + page - 16;
        memset(fat, 0, 16);
        fat[0] = 0x50, fat[1] = 0xed, fat[2] = 0x55, fat[3] = 0xba; /* 0xBA55ED50 */
        fat[4] = 1, fat[6] = 16;                                     /* version, header size */
        fat[8] = 0x00, fat[9] = 0x10;                                /* a 4 KiB body */
        w.data = fat;
        check_refused(c, &w, size, "which are not all readable");
        assert_int_equal(munmap(two, (size_t)page * 2), 0);
    }
    c = cus_context_unref(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_image_format_detection),
        ENV_TEST(test_image_format_names),
        ENV_TEST(test_load_ptx),
        ENV_TEST(test_module_keeps_its_context_alive),
        ENV_TEST(test_module_unref_restores_the_callers_stack),
        ENV_TEST(test_module_refs_and_null),
        ENV_TEST(test_autoptr_and_steal),
        ENV_TEST(test_load_null_arguments),
        ENV_TEST(test_load_empty_and_unknown_images),
        ENV_TEST(test_load_truncated_images),
        ENV_TEST(test_load_bad_images_the_driver_refuses),
        ENV_TEST(test_load_hand_built_fatbin_and_wrapper),
        ENV_TEST(test_load_bad_wrappers_never_reach_the_driver),
        ENV_TEST(test_loads_allocate_no_log_buffer_for_fatbins),
        ENV_TEST(test_info_log_capacity_by_format),
        ENV_TEST(test_jit_options_reach_the_driver),
        ENV_TEST(test_jit_options_refused_before_the_driver),
        TEST_SM86(test_jit_target_on_an_sm86_device),
        TEST_12000(test_ptx_newer_than_the_driver),
        ENV_TEST(test_load_file),
        ENV_TEST(test_load_file_failures),
        ENV_TEST(test_load_faults),
        ENV_TEST(test_load_whose_pop_fails_is_not_rolled_back),
        ENV_TEST(test_load_with_a_sticky_failure_poisons),
        ENV_TEST(test_unload_failures_go_to_the_handler),
        ENV_TEST(test_cleanup_keeps_the_error_being_returned),
    };
    return cmocka_run_group_tests(tests, NULL, group_teardown);
}
