/* Modules and functions (include/cuscope/module.h, the lookup half of
 * function.h) on the fake driver: image formats and their checks, loading
 * from memory and from files with JIT options and logs, the function cache
 * and parameter layouts, enumeration, globals, references (a function keeps
 * its module, a module its context), host functions, threads, and every
 * driver call each function makes failing in turn: the error surfaces with
 * the injected status and a message naming the call, out parameters stay
 * untouched, the stack is as it was and nothing leaks.
 *
 * The PTX written here needs no nvcc; the kernels of kernels/ (embedded when
 * nvcc built them: CUS_TEST_HAVE_KERNELS) add real cubins and fatbins, and
 * those tests skip without them.
 *
 * Regressions of bugs this file found are named after what they check; each
 * says what the library once did. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cudaTypedefs.h>

#include <cuscope/function.h>
#include <cuscope/launch.h>
#include <cuscope/module.h>

#include "stream_common.h"

#ifdef CUS_TEST_HAVE_KERNELS
#include "cusk-images.h"
#endif

/* --- helpers ---------------------------------------------------------------------------- */

#define assert_contains(haystack, needle)                                      \
    do {                                                                       \
        const char *h_ = (haystack);                                           \
        const char *n_ = (needle);                                             \
        assert_non_null(h_);                                                   \
        if (!strstr(h_, n_))                                                   \
            fail_msg("\"%s\" does not contain \"%s\"", h_, n_);                \
    } while (0)

/* The driver calls made since `from`, exactly. */
static void check_calls(unsigned long from, const char *const *want, const char *what)
{
    unsigned long now = cus_fake_call_count();
    size_t n = 0;
    while (want[n])
        n++;
    char got[1024] = "";
    size_t len = 0;
    for (unsigned long i = from; i < now && len < sizeof got - 64; i++) {
        const char *c = cus_fake_call_name(i);
        len += (size_t)snprintf(got + len, sizeof got - len, "%s%s", i == from ? "" : ", ",
                                c ? c : "?");
    }
    if (now - from != n)
        fail_msg("calls: [%s], expected [%s]", got, what);
    for (size_t i = 0; i < n; i++)
        if (!cus_fake_call_name(from + i) || strcmp(cus_fake_call_name(from + i), want[i]) != 0)
            fail_msg("calls: [%s], expected [%s]", got, what);
}
#define assert_calls_since(from, ...)                                          \
    check_calls((from), (const char *const[]){__VA_ARGS__, NULL}, #__VA_ARGS__)
#define assert_no_calls_since(from) check_calls((from), (const char *const[]){NULL}, "")

/* A one-shot fault on entry (assert_fault_surfaces: the status, the fault
 * fired, nothing changed), and the last error names the call. */
#define assert_fault_named(entry, expr)                                        \
    do {                                                                       \
        assert_fault_surfaces((entry), (expr));                                \
        assert_string_equal(cus_last_error()->driver_call, (entry));           \
        assert_contains(cus_last_error_message(), (entry));                    \
    } while (0)

/* The driver's pop, for putting back a stack that a failed pop left. */
static void raw_pop(void)
{
    void *p = NULL;
    CUdriverProcAddressQueryResult qs;
    assert_int_equal(cus_fake_get_proc_address("cuCtxPopCurrent", &p, 4000, 0, &qs), 0);
    PFN_cuCtxPopCurrent_v4000 pop;
    memcpy(&pop, &p, sizeof pop);
    CUcontext got = NULL;
    assert_int_equal(pop(&got), CUDA_SUCCESS);
}

/* cuCtxPopCurrent failing for good after the call's work: the library's pop
 * and its one retry fail, so the context it pushed stays on the driver's
 * stack, one above cuscope's mirror (nothing can take it off). The work was
 * done, so the call returns CUS_SUCCESS (the last error untouched) and the pop
 * goes to the destroy handler, naming `function` and cuCtxPopCurrent. The
 * test pops it; the caller checks the work. */
#define assert_pop_fault_reported(function, expr)                              \
    do {                                                                       \
        stack_snap before_ = snap();                                           \
        unsigned long pops_ = cus_fake_calls_of("cuCtxPopCurrent");            \
        unsigned long reports_ = env_destroyed.count;                          \
        cus_clear_last_error();                                                \
        assert_ok(cus_fake_fail_entry("cuCtxPopCurrent", 1, FAULT, true));     \
        cus_status got_ = (expr);                                              \
        cus_fake_clear_faults();                                               \
        if (got_ != CUS_SUCCESS)                                               \
            fail_msg("%s with cuCtxPopCurrent failing -> %s (%s)", #expr,      \
                     cus_status_name(got_), cus_last_error_message());         \
        assert_int_equal(cus_last_status(), CUS_SUCCESS);                      \
        env_assert_one_pop_report(reports_, (function));                       \
        assert_int_equal(env_destroyed.last_status, FAULT);                    \
        assert_int_equal(cus_fake_calls_of("cuCtxPopCurrent"), pops_ + 2);     \
        assert_int_equal(cus_context_stack_depth(), before_.depth);            \
        assert_int_equal(cus_fake_thread_stack_depth(), before_.fake_depth + 1); \
        raw_pop();                                                             \
        assert_stack_unchanged(before_);                                       \
    } while (0)

static void put16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}
static void put32(unsigned char *p, uint32_t v)
{
    put16(p, (uint16_t)v);
    put16(p + 2, (uint16_t)(v >> 16));
}
static void put64(unsigned char *p, uint64_t v)
{
    put32(p, (uint32_t)v);
    put32(p + 4, (uint32_t)(v >> 32));
}

/* --- the module written here -------------------------------------------------------------
 * add(u64, u32): params at 0 (8 bytes) and 8 (4); bounded(u64): .maxntid 128,
 * 1 KiB of static shared memory; noargs(). A 16-byte __constant__ table
 * {1, 2, 3, 4} and a 4-byte __device__ counter = 7. PTX ISA 8.0 for sm_80:
 * what a 12.0 driver still compiles. */
static const char ptx_src[] =
    "//\n// written for test_module.c\n//\n"
    ".version 8.0\n"
    ".target sm_80\n"
    ".address_size 64\n"
    "\n"
    ".const .align 4 .b8 table[16] = {1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0};\n"
    ".global .align 4 .u32 counter = 7;\n"
    "\n"
    ".visible .entry add(\n"
    "\t.param .u64 add_param_0,\n"
    "\t.param .u32 add_param_1\n"
    ")\n"
    "{\n"
    "\tret;\n"
    "}\n"
    ".visible .entry bounded(\n"
    "\t.param .u64 bounded_param_0\n"
    ")\n"
    ".maxntid 128, 1, 1\n"
    "{\n"
    "\t.shared .align 4 .b8 buf[1024];\n"
    "\tret;\n"
    "}\n"
    ".visible .entry noargs()\n"
    "{\n"
    "\tret;\n"
    "}\n";

#define PTX_FUNCTIONS 3

/* A syntax error on line 6. */
static const char ptx_bad[] = ".version 8.0\n.target sm_80\n.address_size 64\n"
                              ".visible .entry e()\n{\n\tfrobnicate;\n}\n";

static cus_module *load(cus_context *c, const char *ptx)
{
    cus_module *m = NULL;
    assert_ok(cus_module_load_data(c, ptx, 0, NULL, &m));
    assert_non_null(m);
    return m;
}

static cus_function *get_fn(cus_module *m, const char *name)
{
    cus_function *f = NULL;
    assert_ok(cus_module_get_function(m, name, &f));
    assert_non_null(f);
    return f;
}

static int fn_attr(cus_function *f, CUfunction_attribute a)
{
    int v = -12345;
    assert_ok(cus_function_attribute(f, a, &v));
    return v;
}

/* A bare fatbin around one PTX entry, laid out as nvcc writes it (see
 * lib/fake/fake_image.c): a 16-byte header, a 64-byte entry header, the text
 * and its NUL padded to 8 bytes. Returns its size. */
static size_t make_fatbin(unsigned char *out, size_t cap, const char *ptx, unsigned arch)
{
    size_t text = strlen(ptx) + 1, payload = (text + 7) & ~(size_t)7;
    size_t total = 16 + 64 + payload;
    assert_true(total <= cap);
    memset(out, 0, total);
    put32(out, 0xBA55ED50u);
    put16(out + 4, 1);
    put16(out + 6, 16);
    put64(out + 8, 64 + payload);
    unsigned char *e = out + 16;
    put16(e, 1); /* PTX */
    put16(e + 2, 0x0101);
    put32(e + 4, 64);
    put64(e + 8, payload);
    put16(e + 24, 0);
    put16(e + 26, 8);
    put32(e + 28, arch);
    memcpy(e + 64, ptx, text);
    return total;
}

/* nvcc's host-side wrapper: {magic, version, the fatbin, NULL}. */
typedef struct fatbin_wrapper {
    uint32_t magic;
    uint32_t version;
    const void *data;
    void *unused;
} fatbin_wrapper;

/* A 64-byte ELF64 little-endian header, with section headers at shoff. */
static void make_elf_header(unsigned char h[64], uint64_t shoff, uint16_t shnum)
{
    memset(h, 0, 64);
    h[0] = 0x7f;
    h[1] = 'E';
    h[2] = 'L';
    h[3] = 'F';
    h[4] = 2; /* ELF64 */
    h[5] = 1; /* little-endian */
    h[6] = 1;
    put16(h + 0x34, 64);
    put64(h + 0x28, shoff);
    put16(h + 0x3a, 64);
    put16(h + 0x3c, shnum);
}

static char tmp_dir[] = "/tmp/cuscope-test-module-XXXXXX";
static bool tmp_made;
static char tmp_path[sizeof tmp_dir + 32];

/* Writes n bytes to a new file of the test's temporary directory. */
static const char *write_file(const char *name, const void *data, size_t n)
{
    if (!tmp_made) {
        assert_non_null(mkdtemp(tmp_dir));
        tmp_made = true;
    }
    snprintf(tmp_path, sizeof tmp_path, "%s/%s", tmp_dir, name);
    FILE *f = fopen(tmp_path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
    return tmp_path;
}

static void remove_file(const char *path)
{
    assert_int_equal(unlink(path), 0);
}

static const cus_fake_config driver_12000 = {.driver_version = 12000};
static const cus_fake_device_config sm86_dev = {.cc_major = 8, .cc_minor = 6};
static const cus_fake_config sm86 = {.devices = &sm86_dev};

static int setup_12000(void **state)
{
    (void)state;
    return env_setup_with(&driver_12000);
}

static int setup_sm86(void **state)
{
    (void)state;
    return env_setup_with(&sm86);
}

/* A driver without the named entry points (cus_fake_hide_entry between the
 * install and the first load). */
static int setup_hiding(const char *const *names)
{
    if (env_setup_with(NULL))
        return -1;
    for (; *names; names++)
        if (cus_fake_hide_entry(*names))
            return -1;
    return 0;
}

static int setup_no_param_info(void **state)
{
    (void)state;
    return setup_hiding((const char *const[]){"cuFuncGetParamInfo", NULL});
}

static int setup_no_func_get_name(void **state)
{
    (void)state;
    return setup_hiding((const char *const[]){"cuFuncGetName", NULL});
}

static int setup_no_enumerate(void **state)
{
    (void)state;
    return setup_hiding((const char *const[]){"cuModuleEnumerateFunctions", NULL});
}

#define TEST_12000(f) cmocka_unit_test_setup_teardown(f, setup_12000, env_teardown)
#define TEST_SM86(f) cmocka_unit_test_setup_teardown(f, setup_sm86, env_teardown)
#define TEST_WITH(f, setup) cmocka_unit_test_setup_teardown(f, setup, env_teardown)

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
    assert_calls_since(calls, "cuCtxPushCurrent", "cuModuleUnload", "cuCtxPopCurrent",
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
    assert_calls_since(calls, "cuCtxPushCurrent", "cuModuleUnload", "cuCtxPopCurrent");
    assert_stack_unchanged(before);
    /* Current already: no push. */
    m = load(c, ptx_src);
    assert_ok(cus_context_push(c));
    calls = cus_fake_call_count();
    assert_null(cus_module_unref(m));
    assert_calls_since(calls, "cuModuleUnload");
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

/* Images that cuscope refuses before the driver sees them. */
static void check_refused(cus_context *c, const void *image, size_t size, const char *expect)
{
    leak_snap before = leak_snap_now();
    unsigned long calls = cus_fake_call_count();
    cus_module *m = SENTINEL_PTR(m);
    cus_status st = cus_module_load_data(c, image, size, NULL, &m);
    if (st != CU(CUDA_ERROR_INVALID_IMAGE))
        fail_msg("expected CUDA_ERROR_INVALID_IMAGE for \"%s\", got %s (%s)", expect,
                 cus_status_name(st), cus_last_error_message());
    assert_int_equal(cus_last_status(), CUDA_ERROR_INVALID_IMAGE);
    assert_contains(cus_last_error_message(), expect);
    assert_string_equal(cus_last_error()->driver_call, "");
    assert_ptr_equal(m, SENTINEL_PTR(m));
    assert_no_calls_since(calls);
    assert_nothing_changed(before);
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

/* Images that pass cuscope's checks and that the driver refuses: its status,
 * and its JIT log in the message. */
static void check_driver_refuses(cus_context *c, const void *image, size_t size, cus_status want,
                                 const char *expect)
{
    leak_snap before = leak_snap_now();
    unsigned long loads = cus_fake_calls_of("cuModuleLoadDataEx");
    cus_module *m = SENTINEL_PTR(m);
    cus_status st = cus_module_load_data(c, image, size, NULL, &m);
    if (st != want)
        fail_msg("expected %s for \"%s\", got %s (%s)", cus_status_name(want), expect,
                 cus_status_name(st), cus_last_error_message());
    assert_int_equal(cus_last_status(), want);
    assert_string_equal(cus_last_error()->driver_call, "cuModuleLoadDataEx");
    assert_contains(cus_last_error_message(), "cuModuleLoadDataEx");
    assert_contains(cus_last_error_message(), cus_status_name(want));
    assert_contains(cus_last_error_message(), expect);
    assert_int_equal(cus_fake_calls_of("cuModuleLoadDataEx"), loads + 1);
    assert_ptr_equal(m, SENTINEL_PTR(m));
    assert_nothing_changed(before);
    assert_int_equal(cus_context_poisoned(c), CUS_SUCCESS);
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
    /* a wrapper around nothing */
    fatbin_wrapper w = {0x466243b1u, 1, "junk", NULL};
    check_driver_refuses(c, &w, sizeof w, CUDA_ERROR_INVALID_IMAGE,
                         "loading a fatbin wrapper image: fatbin wrapper: no fatbin");
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 0);
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
    raw_pop();
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
    raw_pop();
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

/* --- functions ------------------------------------------------------------------------- */

static void test_get_function(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_module *m = load(c, ptx_src);
    stack_snap before = snap();
    unsigned long calls = cus_fake_call_count();
    cus_function *f = NULL;
    assert_ok(cus_module_get_function(m, "add", &f));
    /* no context needed; the layout read once: 2 parameters, and the one past */
    assert_calls_since(calls, "cuModuleGetFunction", "cuFuncGetParamInfo", "cuFuncGetParamInfo",
                       "cuFuncGetParamInfo");
    assert_stack_unchanged(before);
    assert_non_null(f);
    assert_string_equal(cus_function_name(f), "add");
    assert_ptr_equal(cus_function_module(f), m);
    assert_non_null(cus_function_handle(f));
    assert_int_equal(cus_debug_live_objects(), 2); /* a function is part of its module */
    /* the same name: the same object, no driver call */
    calls = cus_fake_call_count();
    cus_function *again = NULL;
    assert_ok(cus_module_get_function(m, "add", &again));
    assert_ptr_equal(again, f);
    assert_no_calls_since(calls);
    /* another name: another object */
    cus_function *g = get_fn(m, "noargs");
    assert_ptr_not_equal(g, f);
    assert_ptr_not_equal(cus_function_handle(g), cus_function_handle(f));
    assert_string_equal(cus_function_name(g), "noargs");
    /* a name built at run time, then freed: the cache holds its own copy */
    char *name = strdup("bounded");
    cus_function *b = get_fn(m, name);
    free(name);
    assert_string_equal(cus_function_name(b), "bounded");
    cus_function *b2 = get_fn(m, "bounded");
    assert_ptr_equal(b2, b);
    b = cus_function_unref(b);
    b2 = cus_function_unref(b2);
    f = cus_function_unref(f);
    again = cus_function_unref(again);
    g = cus_function_unref(g);
    assert_int_equal(cus_fake_calls_of("cuModuleUnload"), 0);
    m = cus_module_unref(m);
    assert_int_equal(cus_fake_calls_of("cuModuleUnload"), 1);
    c = cus_context_unref(c);
}

static void test_get_function_unknown_name(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    cus_module *m = load(c, ptx_src);
    leak_snap before = leak_snap_now();
    cus_function *f = SENTINEL_PTR(f);
    unsigned long lookups = cus_fake_calls_of("cuModuleGetFunction");
    assert_status(cus_module_get_function(m, "no_such_kernel", &f), CUDA_ERROR_NOT_FOUND);
    assert_contains(cus_last_error_message(), "no kernel named \"no_such_kernel\" in the module");
    assert_contains(cus_last_error_message(), "cuModuleGetFunction");
    assert_string_equal(cus_last_error()->driver_call, "cuModuleGetFunction");
    assert_string_equal(cus_last_error()->function, "cus_module_get_function");
    /* a prefix, and a global's name, are no kernel either */
    assert_status(cus_module_get_function(m, "ad", &f), CUDA_ERROR_NOT_FOUND);
    assert_status(cus_module_get_function(m, "counter", &f), CUDA_ERROR_NOT_FOUND);
    /* not cached: asked again */
    assert_status(cus_module_get_function(m, "no_such_kernel", &f), CUDA_ERROR_NOT_FOUND);
    assert_int_equal(cus_fake_calls_of("cuModuleGetFunction"), lookups + 4);
    assert_ptr_equal(f, SENTINEL_PTR(f));
    assert_nothing_changed(before);
    assert_int_equal(cus_context_poisoned(c), CUS_SUCCESS);
    cus_function *g = get_fn(m, "add");
    g = cus_function_unref(g);
    m = cus_module_unref(m);
    c = cus_context_unref(c);
}

static void test_get_function_null_arguments(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    cus_module *m = load(c, ptx_src);
    unsigned long calls = cus_fake_call_count();
    cus_function *f = SENTINEL_PTR(f);
    assert_status(cus_module_get_function(NULL, "add", &f), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_module_get_function(m, NULL, &f), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_module_get_function(m, "add", NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_ptr_equal(f, SENTINEL_PTR(f));
    assert_no_calls_since(calls);
    m = cus_module_unref(m);
    c = cus_context_unref(c);
}

static void test_get_function_faults(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_module *m = load(c, ptx_src);
    cus_function *f = SENTINEL_PTR(f);
    assert_fault_named("cuModuleGetFunction", cus_module_get_function(m, "add", &f));
    assert_fault_named("cuFuncGetParamInfo", cus_module_get_function(m, "add", &f));
    assert_contains(cus_last_error_message(), "cus_module_get_function");
    /* the second and the third read of the layout */
    for (unsigned long n = 2; n <= 3; n++) {
        leak_snap before = leak_snap_now();
        assert_ok(cus_fake_fail_entry("cuFuncGetParamInfo", n, FAULT, false));
        assert_status(cus_module_get_function(m, "add", &f), FAULT);
        cus_fake_clear_faults();
        assert_string_equal(cus_last_error()->driver_call, "cuFuncGetParamInfo");
        assert_nothing_changed(before);
    }
    assert_ptr_equal(f, SENTINEL_PTR(f));
    /* nothing was cached: the next lookup asks the driver and succeeds */
    unsigned long lookups = cus_fake_calls_of("cuModuleGetFunction");
    f = get_fn(m, "add");
    assert_int_equal(cus_fake_calls_of("cuModuleGetFunction"), lookups + 1);
    assert_int_equal(cus_function_param_count(f), 2);
    /* a cached one needs no driver, so no fault reaches it */
    cus_fake_fail_call(1, FAULT, true);
    cus_function *again = NULL;
    assert_ok(cus_module_get_function(m, "add", &again));
    cus_fake_clear_faults();
    assert_ptr_equal(again, f);
    again = cus_function_unref(again);
    f = cus_function_unref(f);
    /* a sticky failure poisons the context: later lookups fail fast */
    assert_ok(cus_fake_fail_entry("cuModuleGetFunction", 1, CUDA_ERROR_LAUNCH_FAILED, false));
    assert_status(cus_module_get_function(m, "noargs", &f), CUDA_ERROR_LAUNCH_FAILED);
    cus_fake_clear_faults();
    assert_contains(cus_last_error_message(), "poisoned");
    unsigned long calls = cus_fake_call_count();
    assert_status(cus_module_get_function(m, "add", &f), CUDA_ERROR_LAUNCH_FAILED);
    assert_no_calls_since(calls);
    m = cus_module_unref(m);
    assert_int_equal(cus_fake_calls_of("cuModuleUnload"), 0); /* dead context: none */
    c = cus_context_unref(c);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
}

static void test_function_keeps_its_module_alive(void **state)
{
    (void)state;
    cus_context *c = new_ctx(), *other = new_ctx();
    cus_module *m = load(c, ptx_src);
    cus_function *f = get_fn(m, "add");
    cus_function *g = get_fn(m, "noargs");
    m = cus_module_unref(m);
    c = cus_context_unref(c);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 1);
    assert_int_equal(cus_fake_calls_of("cuModuleUnload"), 0);
    /* still usable: the module and the context are there */
    assert_non_null(cus_function_module(f));
    assert_ptr_equal(cus_function_module(f), cus_function_module(g));
    assert_int_equal(fn_attr(f, CU_FUNC_ATTRIBUTE_NUM_REGS), 32);
    cus_function *again = NULL;
    assert_ok(cus_module_get_function(cus_function_module(f), "add", &again));
    assert_ptr_equal(again, f);
    again = cus_function_unref(again);
    g = cus_function_unref(g);
    assert_int_equal(cus_fake_calls_of("cuModuleUnload"), 0);
    /* the last function goes: unloaded with its context current, the
     * caller's stack as it was, then the context destroyed */
    assert_ok(cus_context_push(other));
    stack_snap before = snap();
    unsigned long calls = cus_fake_call_count();
    assert_null(cus_function_unref(f));
    assert_calls_since(calls, "cuCtxPushCurrent", "cuModuleUnload", "cuCtxPopCurrent",
                       "cuCtxDestroy");
    assert_stack_unchanged(before);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_CONTEXT), 1);
    assert_ok(cus_context_pop(NULL));
    other = cus_context_unref(other);
}

static void test_function_refs_and_null(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    cus_module *m = load(c, ptx_src);
    cus_function *f = get_fn(m, "add");
    assert_ptr_equal(cus_function_ref(f), f);
    assert_ptr_equal(cus_function_ref(f), f);
    m = cus_module_unref(m);
    assert_null(cus_function_unref(f));
    assert_null(cus_function_unref(f));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 1);
    assert_null(cus_function_unref(f));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 0);
    /* NULL */
    assert_null(cus_function_ref(NULL));
    assert_null(cus_function_unref(NULL));
    assert_null(cus_function_handle(NULL));
    assert_string_equal(cus_function_name(NULL), "");
    assert_null(cus_function_module(NULL));
    assert_false(cus_function_layout_known(NULL));
    assert_int_equal(cus_function_param_count(NULL), 0);
    size_t off = 7, size = 7;
    assert_status(cus_function_param_info(NULL, 0, &off, &size), CUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(off, 7);
    c = cus_context_unref(c);
}

/* --- parameter layouts ---------------------------------------------------------------------- */

static void test_param_layout(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    cus_module *m = load(c, ptx_src);
    cus_function *f = get_fn(m, "add");
    assert_true(cus_function_layout_known(f));
    assert_int_equal(cus_function_param_count(f), 2);
    unsigned long calls = cus_fake_call_count();
    size_t off = 99, size = 99;
    assert_ok(cus_function_param_info(f, 0, &off, &size));
    assert_int_equal(off, 0);
    assert_int_equal(size, 8);
    assert_ok(cus_function_param_info(f, 1, &off, &size));
    assert_int_equal(off, 8);
    assert_int_equal(size, 4);
    assert_ok(cus_function_param_info(f, 1, NULL, NULL));
    off = size = 99;
    assert_status(cus_function_param_info(f, 2, &off, &size), CUS_ERROR_OUT_OF_RANGE);
    assert_contains(cus_last_error_message(), "add has 2 parameters, asked for #2");
    assert_status(cus_function_param_info(f, UINT32_MAX, &off, &size), CUS_ERROR_OUT_OF_RANGE);
    assert_int_equal(off, 99);
    assert_int_equal(size, 99);
    assert_no_calls_since(calls); /* cached at the lookup */
    cus_function *g = get_fn(m, "noargs");
    assert_true(cus_function_layout_known(g));
    assert_int_equal(cus_function_param_count(g), 0);
    assert_status(cus_function_param_info(g, 0, &off, &size), CUS_ERROR_OUT_OF_RANGE);
    cus_function *b = get_fn(m, "bounded");
    assert_int_equal(cus_function_param_count(b), 1);
    assert_ok(cus_function_param_info(b, 0, &off, &size));
    assert_int_equal(off, 0);
    assert_int_equal(size, 8);
    f = cus_function_unref(f);
    g = cus_function_unref(g);
    b = cus_function_unref(b);
    m = cus_module_unref(m);
    c = cus_context_unref(c);
}

/* Without cuFuncGetParamInfo: the layout is unknown, the lookup still works. */
static void check_layout_unknown(void)
{
    cus_context *c = new_primary();
    cus_module *m = load(c, ptx_src);
    unsigned long calls = cus_fake_call_count();
    cus_function *f = get_fn(m, "add");
    assert_calls_since(calls, "cuModuleGetFunction");
    assert_false(cus_function_layout_known(f));
    assert_int_equal(cus_function_param_count(f), 0);
    size_t off = 5, size = 5;
    assert_status(cus_function_param_info(f, 0, &off, &size), CUS_ERROR_NOT_SUPPORTED);
    assert_contains(cus_last_error_message(), "the layout of add is unknown");
    assert_contains(cus_last_error_message(), "cuFuncGetParamInfo");
    assert_int_equal(off, 5);
    assert_int_equal(cus_fake_calls_of("cuFuncGetParamInfo"), 0);
    f = cus_function_unref(f);
    m = cus_module_unref(m);
    c = cus_context_unref(c);
}

static void test_param_layout_unknown_without_param_info(void **state)
{
    (void)state;
    check_layout_unknown();
}

static void test_param_layout_unknown_on_a_12000_driver(void **state)
{
    (void)state;
    check_layout_unknown();
}

/* --- enumeration -------------------------------------------------------------------------- */

static void test_enumeration(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_module *m = load(c, ptx_src);
    stack_snap before = snap();
    unsigned long calls = cus_fake_call_count();
    unsigned int count = 0;
    assert_ok(cus_module_function_count(m, &count));
    assert_calls_since(calls, "cuModuleGetFunctionCount");
    assert_int_equal(count, PTX_FUNCTIONS);
    /* names, in the module's order */
    const char *names[8] = {NULL};
    count = 0;
    calls = cus_fake_call_count();
    assert_ok(cus_module_function_names(m, names, 8, &count));
    assert_calls_since(calls, "cuModuleGetFunctionCount", "cuModuleEnumerateFunctions",
                       "cuFuncGetName", "cuFuncGetName", "cuFuncGetName");
    assert_stack_unchanged(before);
    assert_int_equal(count, PTX_FUNCTIONS);
    assert_string_equal(names[0], "add");
    assert_string_equal(names[1], "bounded");
    assert_string_equal(names[2], "noargs");
    assert_null(names[3]);
    /* filled once: later calls make no driver call */
    const char *two[3] = {NULL, NULL, SENTINEL_PTR(two)};
    count = 0;
    calls = cus_fake_call_count();
    assert_ok(cus_module_function_names(m, two, 2, &count));
    assert_no_calls_since(calls);
    assert_int_equal(count, PTX_FUNCTIONS); /* all of them, even past the capacity */
    assert_string_equal(two[0], "add");
    assert_string_equal(two[1], "bounded");
    assert_ptr_equal(two[2], SENTINEL_PTR(two));
    count = 0;
    assert_ok(cus_module_function_names(m, NULL, 0, &count)); /* the count only */
    assert_int_equal(count, PTX_FUNCTIONS);
    /* every name finds its function */
    for (unsigned int i = 0; i < PTX_FUNCTIONS; i++) {
        cus_function *f = get_fn(m, names[i]);
        assert_string_equal(cus_function_name(f), names[i]);
        f = cus_function_unref(f);
    }
    /* bad arguments */
    calls = cus_fake_call_count();
    count = 77;
    assert_status(cus_module_function_count(NULL, &count), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_module_function_count(m, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_module_function_names(NULL, names, 8, &count), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_module_function_names(m, names, 8, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_module_function_names(m, NULL, 1, &count), CUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(count, 77);
    assert_no_calls_since(calls);
    /* the names stay valid as long as the module: held by a function only */
    cus_function *f = get_fn(m, "noargs");
    m = cus_module_unref(m);
    assert_string_equal(names[2], "noargs");
    f = cus_function_unref(f);
    c = cus_context_unref(c);
}

static void test_enumeration_of_an_empty_module(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    cus_module *m = load(c, ".version 8.0\n.target sm_80\n.address_size 64\n"
                            ".global .align 4 .u32 only_a_global = 1;\n");
    unsigned int count = 99;
    assert_ok(cus_module_function_count(m, &count));
    assert_int_equal(count, 0);
    const char *names[2] = {NULL, NULL};
    count = 99;
    unsigned long calls = cus_fake_call_count();
    assert_ok(cus_module_function_names(m, names, 2, &count));
    assert_calls_since(calls, "cuModuleGetFunctionCount");
    assert_int_equal(count, 0);
    assert_null(names[0]);
    m = cus_module_unref(m);
    c = cus_context_unref(c);
}

static void test_enumeration_faults(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    cus_module *m = load(c, ptx_src);
    unsigned int count = 77;
    const char *names[4] = {NULL};
    assert_fault_named("cuModuleGetFunctionCount", cus_module_function_count(m, &count));
    assert_fault_named("cuModuleGetFunctionCount", cus_module_function_names(m, names, 4, &count));
    assert_fault_named("cuModuleEnumerateFunctions",
                       cus_module_function_names(m, names, 4, &count));
    assert_fault_named("cuFuncGetName", cus_module_function_names(m, names, 4, &count));
    leak_snap before = leak_snap_now();
    assert_ok(cus_fake_fail_entry("cuFuncGetName", 3, FAULT, false)); /* the last one */
    assert_status(cus_module_function_names(m, names, 4, &count), FAULT);
    cus_fake_clear_faults();
    assert_string_equal(cus_last_error()->driver_call, "cuFuncGetName");
    assert_nothing_changed(before);
    assert_int_equal(count, 77);
    assert_null(names[0]);
    /* nothing kept from the failures: the next call fills the names */
    unsigned long calls = cus_fake_call_count();
    assert_ok(cus_module_function_names(m, names, 4, &count));
    assert_calls_since(calls, "cuModuleGetFunctionCount", "cuModuleEnumerateFunctions",
                       "cuFuncGetName", "cuFuncGetName", "cuFuncGetName");
    assert_int_equal(count, PTX_FUNCTIONS);
    assert_string_equal(names[1], "bounded");
    m = cus_module_unref(m);
    c = cus_context_unref(c);
}

/* cuModuleGetFunctionCount is there; a part of the enumeration is not. */
static void check_names_not_supported(bool count_supported)
{
    cus_context *c = new_primary();
    cus_module *m = load(c, ptx_src);
    unsigned long calls = cus_fake_call_count();
    unsigned int count = 77;
    const char *names[4] = {NULL};
    assert_status(cus_module_function_names(m, names, 4, &count), CUS_ERROR_NOT_SUPPORTED);
    assert_contains(cus_last_error_message(), "cuModuleEnumerateFunctions and cuFuncGetName");
    assert_contains(cus_last_error_message(), "12.4");
    assert_int_equal(count, 77);
    assert_null(names[0]);
    assert_no_calls_since(calls);
    if (count_supported) {
        assert_ok(cus_module_function_count(m, &count));
        assert_int_equal(count, PTX_FUNCTIONS);
    } else {
        assert_status(cus_module_function_count(m, &count), CUS_ERROR_NOT_SUPPORTED);
        assert_string_equal(cus_last_error()->driver_call, "cuModuleGetFunctionCount");
        assert_contains(cus_last_error_message(), "needs 12.4");
        assert_int_equal(count, 77);
        assert_no_calls_since(calls);
    }
    /* the rest works */
    cus_function *f = get_fn(m, "add");
    f = cus_function_unref(f);
    m = cus_module_unref(m);
    c = cus_context_unref(c);
}

static void test_enumeration_without_func_get_name(void **state)
{
    (void)state;
    check_names_not_supported(true);
}

static void test_enumeration_without_enumerate(void **state)
{
    (void)state;
    check_names_not_supported(true);
}

static void test_enumeration_on_a_12000_driver(void **state)
{
    (void)state;
    check_names_not_supported(false);
}

/* --- globals ------------------------------------------------------------------------------ */

static void test_globals(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_module *m = load(c, ptx_src);
    stack_snap before = snap();
    CUdeviceptr p = 0;
    size_t bytes = 0;
    unsigned long calls = cus_fake_call_count();
    assert_ok(cus_module_get_global(m, "counter", &p, &bytes));
    assert_calls_since(calls, "cuModuleGetGlobal");
    assert_true(p != 0);
    assert_int_equal(bytes, 4);
    CUdeviceptr q = 0;
    assert_ok(cus_module_get_global(m, "table", &q, NULL));
    assert_true(q != 0 && q != p);
    assert_ok(cus_module_get_global(m, "table", NULL, &bytes));
    assert_int_equal(bytes, 16);
    assert_ok(cus_module_get_global(m, "table", NULL, NULL));
    /* initial values */
    unsigned int counter = 0;
    calls = cus_fake_call_count();
    assert_ok(cus_module_copy_from_global(&counter, m, "counter", 0, sizeof counter));
    /* the global was looked up above: no cuModuleGetGlobal again */
    assert_calls_since(calls, "cuCtxPushCurrent", "cuMemcpyDtoH", "cuCtxPopCurrent");
    assert_stack_unchanged(before);
    assert_int_equal(counter, 7);
    unsigned int table[4] = {0};
    assert_ok(cus_module_copy_from_global(table, m, "table", 0, sizeof table));
    for (unsigned int i = 0; i < 4; i++)
        assert_int_equal(table[i], i + 1);
    /* writes, whole and at an offset */
    counter = 4242;
    calls = cus_fake_call_count();
    assert_ok(cus_module_copy_to_global(m, "counter", 0, &counter, sizeof counter));
    assert_calls_since(calls, "cuCtxPushCurrent", "cuMemcpyHtoD", "cuCtxPopCurrent");
    assert_stack_unchanged(before);
    counter = 0;
    assert_ok(cus_module_copy_from_global(&counter, m, "counter", 0, sizeof counter));
    assert_int_equal(counter, 4242);
    unsigned int nine = 9;
    assert_ok(cus_module_copy_to_global(m, "table", 12, &nine, 4)); /* the very end */
    unsigned int two[2] = {0};
    assert_ok(cus_module_copy_from_global(two, m, "table", 8, 8));
    assert_int_equal(two[0], 3);
    assert_int_equal(two[1], 9);
    /* zero bytes: checked, nothing copied */
    calls = cus_fake_call_count();
    assert_ok(cus_module_copy_to_global(m, "table", 16, NULL, 0));
    assert_ok(cus_module_copy_from_global(NULL, m, "table", 0, 0));
    assert_no_calls_since(calls); /* "table" was looked up before */
    assert_ok(cus_context_push(c));
    assert_ok(cus_module_copy_from_global(&counter, m, "counter", 0, 4)); /* current: no push */
    assert_ok(cus_context_pop(NULL));
    m = cus_module_unref(m);
    c = cus_context_unref(c);
}

static void test_globals_unknown_and_null(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    cus_module *m = load(c, ptx_src);
    leak_snap before = leak_snap_now();
    CUdeviceptr p = 5;
    size_t bytes = 5;
    unsigned int v = 0;
    assert_status(cus_module_get_global(m, "no_such_global", &p, &bytes), CUDA_ERROR_NOT_FOUND);
    assert_contains(cus_last_error_message(),
                    "no __device__ or __constant__ variable named \"no_such_global\"");
    assert_string_equal(cus_last_error()->driver_call, "cuModuleGetGlobal");
    assert_status(cus_module_get_global(m, "add", &p, &bytes), CUDA_ERROR_NOT_FOUND); /* a kernel */
    assert_status(cus_module_copy_to_global(m, "nope", 0, &v, 4), CUDA_ERROR_NOT_FOUND);
    assert_string_equal(cus_last_error()->function, "cus_module_copy_to_global");
    assert_contains(cus_last_error_message(), "\"nope\"");
    assert_status(cus_module_copy_from_global(&v, m, "nope", 0, 4), CUDA_ERROR_NOT_FOUND);
    assert_string_equal(cus_last_error()->function, "cus_module_copy_from_global");
    assert_int_equal(p, 5);
    assert_int_equal(bytes, 5);
    assert_int_equal(cus_context_poisoned(c), CUS_SUCCESS);
    unsigned long calls = cus_fake_call_count();
    assert_status(cus_module_get_global(NULL, "counter", &p, &bytes), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_module_get_global(m, NULL, &p, &bytes), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_module_copy_to_global(NULL, "counter", 0, &v, 4), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_module_copy_to_global(m, NULL, 0, &v, 4), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_module_copy_to_global(m, "counter", 0, NULL, 4), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_module_copy_from_global(&v, NULL, "counter", 0, 4),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_module_copy_from_global(&v, m, NULL, 0, 4), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_module_copy_from_global(NULL, m, "counter", 0, 4),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_no_calls_since(calls);
    assert_int_equal(p, 5);
    assert_nothing_changed(before);
    m = cus_module_unref(m);
    c = cus_context_unref(c);
}

static void test_globals_out_of_range(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_module *m = load(c, ptx_src);
    leak_snap before = leak_snap_now();
    unsigned char buf[32];
    memset(buf, 0xab, sizeof buf);
    unsigned long copies = cus_fake_calls_of("cuMemcpyHtoD") + cus_fake_calls_of("cuMemcpyDtoH");
    unsigned long pushes = cus_fake_calls_of("cuCtxPushCurrent");
    const cus_status R = CUS_ERROR_OUT_OF_RANGE;
    /* counter: 4 bytes; table: 16 */
    assert_status(cus_module_copy_to_global(m, "counter", 0, buf, 5), R);
    assert_contains(cus_last_error_message(), "5 bytes at offset 0 of global counter, which has 4");
    assert_string_equal(cus_last_error()->function, "cus_module_copy_to_global");
    assert_status(cus_module_copy_to_global(m, "counter", 1, buf, 4), R);
    assert_status(cus_module_copy_to_global(m, "counter", 5, buf, 0), R);
    assert_status(cus_module_copy_to_global(m, "table", 16, buf, 1), R);
    assert_status(cus_module_copy_to_global(m, "table", SIZE_MAX, buf, 1), R);
    assert_status(cus_module_copy_to_global(m, "table", 1, buf, SIZE_MAX), R);
    assert_status(cus_module_copy_from_global(buf, m, "counter", 0, 5), R);
    assert_string_equal(cus_last_error()->function, "cus_module_copy_from_global");
    assert_status(cus_module_copy_from_global(buf, m, "counter", 4, 1), R);
    assert_status(cus_module_copy_from_global(buf, m, "table", 8, 9), R);
    assert_status(cus_module_copy_from_global(buf, m, "table", SIZE_MAX, 2), R);
    assert_status(cus_module_copy_from_global(buf, m, "table", 2, SIZE_MAX - 1), R);
    /* no copy, no push */
    assert_int_equal(cus_fake_calls_of("cuMemcpyHtoD") + cus_fake_calls_of("cuMemcpyDtoH"), copies);
    assert_int_equal(cus_fake_calls_of("cuCtxPushCurrent"), pushes);
    for (size_t i = 0; i < sizeof buf; i++)
        assert_int_equal(buf[i], 0xab);
    assert_nothing_changed(before);
    /* the values are untouched */
    unsigned int counter = 0;
    assert_ok(cus_module_copy_from_global(&counter, m, "counter", 0, 4));
    assert_int_equal(counter, 7);
    m = cus_module_unref(m);
    c = cus_context_unref(c);
}

/* Regression: lib/module.c (global_range) once asked cuModuleGetGlobal before
 * the bounds check; module.h says an out-of-range copy makes no driver call.
 * Suggested fix: cache the (name, address, size) of each global looked up,
 * or reword module.h. This test fails until then. */
static void test_global_out_of_range_after_lookup_makes_no_driver_call(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    cus_module *m = load(c, ptx_src);
    unsigned int v[2] = {0};
    assert_ok(cus_module_copy_from_global(v, m, "counter", 0, 4)); /* known to the module */
    unsigned long calls = cus_fake_call_count();
    assert_status(cus_module_copy_to_global(m, "counter", 0, v, 8), CUS_ERROR_OUT_OF_RANGE);
    assert_status(cus_module_copy_from_global(v, m, "counter", 0, 8), CUS_ERROR_OUT_OF_RANGE);
    unsigned long made = cus_fake_call_count() - calls;
    m = cus_module_unref(m);
    c = cus_context_unref(c);
    if (made != 0)
        fail_msg("%lu driver calls (cuModuleGetGlobal) for two "
                 "out-of-range copies; module.h promises none",
                 made);
}

/* Regression: lib/module.c check_image and jit_build once
 * record their failures with CUS_FAIL, whose __func__ is the static helper:
 * cus_last_error()->function is "check_image" or "jit_build", and the
 * message starts so, instead of naming cus_module_load_data (status.h: "the
 * cuscope function that failed"). Suggested fix: pass the public function's
 * name down, as global_range() does, and record with cus_fail_(). This test
 * fails until then. */
static void test_image_and_jit_errors_name_the_public_call(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    cus_module *m = SENTINEL_PTR(m);
    char got[3][64];
    assert_status(cus_module_load_data(c, "junk", 5, NULL, &m), CUDA_ERROR_INVALID_IMAGE);
    snprintf(got[0], sizeof got[0], "%s", cus_last_error()->function);
    assert_status(cus_module_load_data(c, ptx_src, 10, NULL, &m), CUDA_ERROR_INVALID_IMAGE);
    snprintf(got[1], sizeof got[1], "%s", cus_last_error()->function);
    cus_jit_options jit = {.optimization_level = 5, .set_level = true};
    assert_status(cus_module_load_data(c, ptx_src, 0, &jit, &m), CUS_ERROR_INVALID_ARGUMENT);
    snprintf(got[2], sizeof got[2], "%s", cus_last_error()->function);
    assert_ptr_equal(m, SENTINEL_PTR(m));
    c = cus_context_unref(c);
    for (int i = 0; i < 3; i++)
        if (strcmp(got[i], "cus_module_load_data") != 0)
            fail_msg("the error of "
                     "cus_module_load_data names \"%s\"", got[i]);
}

static void test_globals_faults(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_module *m = load(c, ptx_src);
    CUdeviceptr p = 3;
    size_t bytes = 3;
    unsigned int v = 1;
    assert_fault_named("cuModuleGetGlobal", cus_module_get_global(m, "counter", &p, &bytes));
    assert_int_equal(p, 3);
    assert_int_equal(bytes, 3);
    assert_fault_named("cuModuleGetGlobal", cus_module_copy_to_global(m, "counter", 0, &v, 4));
    assert_fault_named("cuCtxPushCurrent", cus_module_copy_to_global(m, "counter", 0, &v, 4));
    assert_fault_named("cuMemcpyHtoD", cus_module_copy_to_global(m, "counter", 0, &v, 4));
    assert_pop_fault_reported("cus_module_copy_to_global",
                              cus_module_copy_to_global(m, "counter", 0, &v, 4));
    v = 0;
    /* "counter" is known to the module by now; "table" is not */
    assert_fault_named("cuModuleGetGlobal", cus_module_copy_from_global(&v, m, "table", 0, 4));
    assert_fault_named("cuCtxPushCurrent", cus_module_copy_from_global(&v, m, "counter", 0, 4));
    assert_fault_named("cuMemcpyDtoH", cus_module_copy_from_global(&v, m, "counter", 0, 4));
    assert_int_equal(v, 0);
    assert_pop_fault_reported("cus_module_copy_from_global",
                              cus_module_copy_from_global(&v, m, "counter", 0, 4));
    assert_int_equal(v, 1); /* the pop failed after the copy: it was made */
    assert_int_equal(cus_context_poisoned(c), CUS_SUCCESS);
    /* a sticky failure of the copy poisons the context */
    assert_ok(cus_fake_fail_entry("cuMemcpyHtoD", 1, CUDA_ERROR_ILLEGAL_ADDRESS, false));
    stack_snap before = snap();
    assert_status(cus_module_copy_to_global(m, "counter", 0, &v, 4), CUDA_ERROR_ILLEGAL_ADDRESS);
    cus_fake_clear_faults();
    assert_stack_unchanged(before);
    assert_int_equal(cus_context_poisoned(c), CUDA_ERROR_ILLEGAL_ADDRESS);
    unsigned long calls = cus_fake_call_count();
    assert_status(cus_module_get_global(m, "counter", &p, &bytes), CUDA_ERROR_ILLEGAL_ADDRESS);
    assert_status(cus_module_copy_to_global(m, "counter", 0, &v, 4), CUDA_ERROR_ILLEGAL_ADDRESS);
    assert_status(cus_module_copy_from_global(&v, m, "counter", 0, 4), CUDA_ERROR_ILLEGAL_ADDRESS);
    assert_status(cus_module_function_count(m, &v), CUDA_ERROR_ILLEGAL_ADDRESS);
    const char *names[1];
    assert_status(cus_module_function_names(m, names, 1, &v), CUDA_ERROR_ILLEGAL_ADDRESS);
    assert_contains(cus_last_error_message(), "poisoned by an earlier CUDA_ERROR_ILLEGAL_ADDRESS");
    assert_no_calls_since(calls);
    m = cus_module_unref(m);
    c = cus_context_unref(c);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
}

/* --- host functions ----------------------------------------------------------------------- */

typedef struct in_host {
    cus_context *ctx;
    cus_module *mod;
    const char *path;
    cus_module *drop; /* the last reference, dropped inside */
    cus_status load, load_file, get_function, get_global, copy_to, copy_from, count, names;
    cus_module *out_mod;
    cus_function *out_fn;
    int ran;
} in_host;

static void host_calls(void *arg)
{
    in_host *h = arg;
    unsigned int v = 0;
    const char *names[2];
    h->out_mod = NULL;
    h->out_fn = NULL;
    h->load = cus_module_load_data(h->ctx, ptx_src, 0, NULL, &h->out_mod);
    h->load_file = cus_module_load_file(h->ctx, h->path, NULL, &h->out_mod);
    h->get_function = cus_module_get_function(h->mod, "add", &h->out_fn);
    h->get_global = cus_module_get_global(h->mod, "counter", NULL, NULL);
    h->copy_to = cus_module_copy_to_global(h->mod, "counter", 0, &v, 4);
    h->copy_from = cus_module_copy_from_global(&v, h->mod, "counter", 0, 4);
    h->count = cus_module_function_count(h->mod, &v);
    h->names = cus_module_function_names(h->mod, names, 2, &v);
    h->drop = cus_module_unref(h->drop);
    h->ran++;
}

static void test_refused_inside_a_host_function(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_stream *s = new_stream(c, 0);
    cus_module *m = load(c, ptx_src);
    const char *path = write_file("add.ptx", ptx_src, strlen(ptx_src));
    in_host h = {.ctx = c, .mod = m, .path = path, .drop = load(c, ptx_src)};
    unsigned long loads = cus_fake_calls_of("cuModuleLoadDataEx");
    unsigned long lookups = cus_fake_calls_of("cuModuleGetFunction");
    unsigned long unloads = cus_fake_calls_of("cuModuleUnload");
    assert_ok(cus_stream_launch_host_fn(s, host_calls, &h));
    assert_ok(cus_stream_synchronize(s)); /* also releases what the host function dropped */
    assert_int_equal(h.ran, 1);
    const cus_status H = CUS_ERROR_IN_HOST_FUNCTION;
    assert_int_equal(h.load, H);
    assert_int_equal(h.load_file, H);
    assert_int_equal(h.get_function, H);
    assert_int_equal(h.get_global, H);
    assert_int_equal(h.copy_to, H);
    assert_int_equal(h.copy_from, H);
    assert_int_equal(h.count, H);
    assert_int_equal(h.names, H);
    assert_null(h.out_mod);
    assert_null(h.out_fn);
    assert_null(h.drop);
    assert_int_equal(cus_fake_calls_of("cuModuleLoadDataEx"), loads);
    assert_int_equal(cus_fake_calls_of("cuModuleGetFunction"), lookups);
    /* the module dropped inside was unloaded outside, afterwards */
    (void)cus_release_deferred();
    assert_int_equal(cus_fake_calls_of("cuModuleUnload"), unloads + 1);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 1);
    assert_int_equal(cus_fake_misuse_count(), 0);
    remove_file(path);
    m = cus_module_unref(m);
    s = cus_stream_unref(s);
    c = cus_context_unref(c);
}

/* --- threads ------------------------------------------------------------------------------ */

#define THREADS 8

typedef struct lookup_arg {
    cus_module *mod;
    pthread_barrier_t *start;
    cus_function *got;
    cus_status st;
} lookup_arg;

static void *lookup(void *p)
{
    lookup_arg *a = p;
    pthread_barrier_wait(a->start);
    a->st = cus_module_get_function(a->mod, "bounded", &a->got);
    return NULL;
}

static void test_threads_share_one_function_object(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    cus_module *m = load(c, ptx_src);
    pthread_barrier_t start;
    assert_int_equal(pthread_barrier_init(&start, NULL, THREADS), 0);
    lookup_arg args[THREADS];
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) {
        args[i] = (lookup_arg){m, &start, NULL, -1};
        assert_int_equal(pthread_create(&th[i], NULL, lookup, &args[i]), 0);
    }
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_join(th[i], NULL), 0);
    pthread_barrier_destroy(&start);
    for (int i = 0; i < THREADS; i++) {
        assert_ok(args[i].st);
        assert_ptr_equal(args[i].got, args[0].got);
    }
    assert_int_equal(cus_fake_calls_of("cuModuleGetFunction"), 1);
    m = cus_module_unref(m);
    for (int i = 0; i < THREADS; i++)
        args[i].got = cus_function_unref(args[i].got);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 0);
    c = cus_context_unref(c);
}

/* --- the kernels of kernels/ -------------------------------------------------------------- */

#ifdef CUS_TEST_HAVE_KERNELS

static const struct {
    const cusk_image *img;
    const char *kernels[4];
} all_images[] = {
    {&cusk_sum, {"sum"}},
    {&cusk_empty, {"empty", "empty1", "empty16"}},
    {&cusk_saxpy, {"saxpy"}},
    {&cusk_params, {"mixed"}},
    {&cusk_globals, {"scale_by_coeffs"}},
    {&cusk_fault, {"fault"}},
};

static void check_kernels_of(cus_module *m, size_t i, const char *what)
{
    unsigned int count = 0;
    const char *names[4] = {NULL};
    assert_ok(cus_module_function_names(m, names, 4, &count));
    unsigned int want = 0;
    while (want < 4 && all_images[i].kernels[want])
        want++;
    if (count != want)
        fail_msg("%s of %s: %u kernels, expected %u", what, all_images[i].img->name, count, want);
    for (unsigned int k = 0; k < want; k++) {
        cus_function *f = get_fn(m, all_images[i].kernels[k]);
        assert_true(cus_function_layout_known(f));
        f = cus_function_unref(f);
    }
}

static void test_kernels_load_in_every_format(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    for (size_t i = 0; i < sizeof all_images / sizeof all_images[0]; i++) {
        const cusk_image *img = all_images[i].img;
        cus_module *m = NULL;
        /* PTX, with and without its size */
        assert_int_equal(cus_module_image_format(img->ptx, img->ptx_size), CUS_IMAGE_PTX);
        assert_ok(cus_module_load_data(c, img->ptx, img->ptx_size + 1, NULL, &m));
        assert_int_equal(cus_module_format(m), CUS_IMAGE_PTX);
        check_kernels_of(m, i, "PTX");
        m = cus_module_unref(m);
        assert_ok(cus_module_load_data(c, img->ptx, 0, NULL, &m));
        m = cus_module_unref(m);
        /* the fatbin */
        assert_int_equal(cus_module_image_format(img->fatbin, img->fatbin_size), CUS_IMAGE_FATBIN);
        assert_ok(cus_module_load_data(c, img->fatbin, img->fatbin_size, NULL, &m));
        assert_int_equal(cus_module_format(m), CUS_IMAGE_FATBIN);
        check_kernels_of(m, i, "fatbin");
        m = cus_module_unref(m);
        /* its wrapper */
        fatbin_wrapper w = {0x466243b1u, 1, img->fatbin, NULL};
        assert_ok(cus_module_load_data(c, &w, sizeof w, NULL, &m));
        assert_int_equal(cus_module_format(m), CUS_IMAGE_FATBIN_WRAPPER);
        m = cus_module_unref(m);
        /* the sm_90 cubin runs on the 9.0 device */
        const cusk_cubin *c90 = cusk_cubin_for(img, 90);
        if (c90) {
            assert_int_equal(cus_module_image_format(c90->data, c90->size), CUS_IMAGE_CUBIN);
            assert_ok(cus_module_load_data(c, c90->data, c90->size, NULL, &m));
            assert_int_equal(cus_module_format(m), CUS_IMAGE_CUBIN);
            check_kernels_of(m, i, "sm_90 cubin");
            m = cus_module_unref(m);
        }
        /* the sm_80 one does not */
        const cusk_cubin *c80 = cusk_cubin_for(img, 80);
        if (c80) {
            m = SENTINEL_PTR(m);
            assert_status(cus_module_load_data(c, c80->data, c80->size, NULL, &m),
                          CUDA_ERROR_NO_BINARY_FOR_GPU);
            assert_contains(cus_last_error_message(), "loading a cubin image");
            assert_ptr_equal(m, SENTINEL_PTR(m));
        }
    }
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 0);
    c = cus_context_unref(c);
}

static void test_kernels_load_from_files(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    const cusk_image *img = &cusk_empty;
    cus_module *m = NULL;
    const char *path = write_file("empty.ptx", img->ptx, img->ptx_size);
    assert_ok(cus_module_load_file(c, path, NULL, &m));
    assert_int_equal(cus_module_format(m), CUS_IMAGE_PTX);
    check_kernels_of(m, 1, "PTX file");
    m = cus_module_unref(m);
    remove_file(path);
    path = write_file("empty.fatbin", img->fatbin, img->fatbin_size);
    assert_ok(cus_module_load_file(c, path, NULL, &m));
    assert_int_equal(cus_module_format(m), CUS_IMAGE_FATBIN);
    check_kernels_of(m, 1, "fatbin file");
    m = cus_module_unref(m);
    remove_file(path);
    const cusk_cubin *c90 = cusk_cubin_for(img, 90);
    if (c90) {
        path = write_file("empty.cubin", c90->data, c90->size);
        assert_ok(cus_module_load_file(c, path, NULL, &m));
        assert_int_equal(cus_module_format(m), CUS_IMAGE_CUBIN);
        check_kernels_of(m, 1, "cubin file");
        m = cus_module_unref(m);
        /* cut in half: its section headers are past the end */
        remove_file(path);
        path = write_file("cut.cubin", c90->data, c90->size / 2);
        m = SENTINEL_PTR(m);
        assert_status(cus_module_load_file(c, path, NULL, &m), CUDA_ERROR_INVALID_IMAGE);
        assert_contains(cus_last_error_message(), "truncated cubin");
        assert_ptr_equal(m, SENTINEL_PTR(m));
        remove_file(path);
    }
    c = cus_context_unref(c);
}

static void test_kernels_truncated(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    const cusk_image *img = &cusk_saxpy;
    const cusk_cubin *c90 = cusk_cubin_for(img, 90);
    if (c90) {
        check_refused(c, c90->data, c90->size / 2, "truncated cubin");
        check_refused(c, c90->data, c90->size - 1, "truncated cubin");
        check_refused(c, c90->data, 40, "shorter than an ELF64 header");
    }
    check_refused(c, img->fatbin, img->fatbin_size / 2, "truncated fatbin");
    check_refused(c, img->fatbin, img->fatbin_size - 1, "truncated fatbin");
    check_refused(c, img->ptx, img->ptx_size, "is not NUL-terminated");
    c = cus_context_unref(c);
}

static void test_kernels_parameter_layouts(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    cus_module *m = NULL;
    const cusk_cubin *c90 = cusk_cubin_for(&cusk_params, 90);
    assert_ok(cus_module_load_data(c, c90 ? (const void *)c90->data : cusk_params.ptx, 0, NULL, &m));
    cus_function *f = get_fn(m, "mixed");
    static const size_t layout[][2] = {{0, 1},   {1, 1},  {4, 4},  {8, 4},
                                       {16, 8},  {24, 24}, {48, 8}, {56, 8}};
    assert_int_equal(cus_function_param_count(f), 8);
    for (unsigned int i = 0; i < 8; i++) {
        size_t off = 0, size = 0;
        assert_ok(cus_function_param_info(f, i, &off, &size));
        assert_int_equal(off, layout[i][0]);
        assert_int_equal(size, layout[i][1]);
    }
    assert_int_equal(cus_fake_calls_of("cuFuncGetParamInfo"), 9);
    f = cus_function_unref(f);
    m = cus_module_unref(m);
    c = cus_context_unref(c);
}

static void test_kernels_globals(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    cus_module *m = NULL;
    assert_ok(cus_module_load_data(c, cusk_globals.fatbin, cusk_globals.fatbin_size, NULL, &m));
    size_t bytes = 0;
    assert_ok(cus_module_get_global(m, "cusk_coeffs", NULL, &bytes));
    assert_int_equal(bytes, 16);
    float coeffs[4] = {0};
    assert_ok(cus_module_copy_from_global(coeffs, m, "cusk_coeffs", 0, sizeof coeffs));
    for (int i = 0; i < 4; i++)
        assert_float_equal(coeffs[i], (float)(i + 1), 0);
    unsigned int counter = 0;
    assert_ok(cus_module_copy_from_global(&counter, m, "cusk_counter", 0, 4));
    assert_int_equal(counter, 7);
    assert_status(cus_module_copy_from_global(coeffs, m, "cusk_coeffs", 4, 16),
                  CUS_ERROR_OUT_OF_RANGE);
    m = cus_module_unref(m);
    c = cus_context_unref(c);
}

/* nvcc 13's PTX (ISA 9.0) is too new for a 12.0 driver; SASS needs no JIT. */
static void test_kernels_on_a_12000_driver(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    check_driver_refuses(c, cusk_sum.ptx, 0, CUDA_ERROR_UNSUPPORTED_PTX_VERSION,
                         "Unsupported .version");
    const cusk_cubin *c90 = cusk_cubin_for(&cusk_sum, 90);
    if (c90) {
        cus_module *m = NULL;
        assert_ok(cus_module_load_data(c, c90->data, c90->size, NULL, &m));
        cus_function *f = get_fn(m, "sum");
        assert_false(cus_function_layout_known(f)); /* no cuFuncGetParamInfo before 12.4 */
        f = cus_function_unref(f);
        m = cus_module_unref(m);
    }
    c = cus_context_unref(c);
}

#else

static void test_kernels_are_skipped_without_nvcc(void **state)
{
    (void)state;
    skip();
}

#endif /* CUS_TEST_HAVE_KERNELS */

static int group_teardown(void **state)
{
    (void)state;
    if (tmp_made)
        (void)rmdir(tmp_dir);
    return 0;
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
        ENV_TEST(test_get_function),
        ENV_TEST(test_get_function_unknown_name),
        ENV_TEST(test_get_function_null_arguments),
        ENV_TEST(test_get_function_faults),
        ENV_TEST(test_function_keeps_its_module_alive),
        ENV_TEST(test_function_refs_and_null),
        ENV_TEST(test_param_layout),
        TEST_WITH(test_param_layout_unknown_without_param_info, setup_no_param_info),
        TEST_12000(test_param_layout_unknown_on_a_12000_driver),
        ENV_TEST(test_enumeration),
        ENV_TEST(test_enumeration_of_an_empty_module),
        ENV_TEST(test_enumeration_faults),
        TEST_WITH(test_enumeration_without_func_get_name, setup_no_func_get_name),
        TEST_WITH(test_enumeration_without_enumerate, setup_no_enumerate),
        TEST_12000(test_enumeration_on_a_12000_driver),
        ENV_TEST(test_globals),
        ENV_TEST(test_globals_unknown_and_null),
        ENV_TEST(test_globals_out_of_range),
        ENV_TEST(test_global_out_of_range_after_lookup_makes_no_driver_call),
        ENV_TEST(test_image_and_jit_errors_name_the_public_call),
        ENV_TEST(test_globals_faults),
        ENV_TEST(test_refused_inside_a_host_function),
        ENV_TEST(test_threads_share_one_function_object),
#ifdef CUS_TEST_HAVE_KERNELS
        ENV_TEST(test_kernels_load_in_every_format),
        ENV_TEST(test_kernels_load_from_files),
        ENV_TEST(test_kernels_truncated),
        ENV_TEST(test_kernels_parameter_layouts),
        ENV_TEST(test_kernels_globals),
        TEST_12000(test_kernels_on_a_12000_driver),
#else
        ENV_TEST(test_kernels_are_skipped_without_nvcc),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, group_teardown);
}
