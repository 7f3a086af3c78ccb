/* Fixtures of the module tests: test_module.c, split by its sections into
 * test_module_load.c, test_module_functions.c, test_module_globals.c,
 * test_module_kernels.c, and test_module_threads.c (the function cache under
 * threads, in the threads suite). What they test, together: */
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
#ifndef CUSCOPE_TEST_MODULE_FIXTURES_H
#define CUSCOPE_TEST_MODULE_FIXTURES_H
#include <errno.h>
#include <limits.h>
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
#include "harness/check.h"

#ifdef CUS_TEST_HAVE_KERNELS
#include "cusk-images.h"
#endif

/* A one-shot fault on entry (assert_fault_surfaces: the status, the fault
 * fired, nothing changed), and the last error names the call. */
#define assert_fault_named(entry, expr)                                        \
    do {                                                                       \
        assert_fault_surfaces((entry), (expr));                                \
        assert_string_equal(cus_last_error()->driver_call, (entry));           \
        assert_contains(cus_last_error_message(), (entry));                    \
    } while (0)

static inline void put16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}
static inline void put32(unsigned char *p, uint32_t v)
{
    put16(p, (uint16_t)v);
    put16(p + 2, (uint16_t)(v >> 16));
}
static inline void put64(unsigned char *p, uint64_t v)
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

/* cuscope's host allocations over `loads` loads (and unloads) of one image:
 * the module records, the kept info logs, any log buffer. */
static inline unsigned long allocations_of_loads(cus_context *c, const void *image, size_t size,
                                                 unsigned loads)
{
    cus_debug_fail_host_alloc(ULONG_MAX, false); /* counts only */
    for (unsigned i = 0; i < loads; i++) {
        cus_module *m = NULL;
        assert_ok(cus_module_load_data(c, image, size, NULL, &m));
        m = cus_module_unref(m);
    }
    unsigned long allocs = cus_debug_host_allocs();
    cus_debug_fail_host_alloc(0, false);
    return allocs;
}

/* PTX with n kernels k0() .. k<n-1>() and no parameters, to free: names that
 * share prefixes and differ only in their last characters (k10 .. k19). */
static inline char *make_many_kernels_ptx(unsigned n)
{
    static const char head[] = ".version 8.0\n.target sm_80\n.address_size 64\n";
    size_t cap = sizeof head + (size_t)n * 48;
    char *ptx = malloc(cap);
    assert_non_null(ptx);
    size_t len = (size_t)snprintf(ptx, cap, "%s", head);
    for (unsigned i = 0; i < n; i++)
        len += (size_t)snprintf(ptx + len, cap - len, ".visible .entry k%u()\n{\n\tret;\n}\n", i);
    assert_true(len < cap);
    return ptx;
}

/* A syntax error on line 6. */
static const char ptx_bad[] = ".version 8.0\n.target sm_80\n.address_size 64\n"
                              ".visible .entry e()\n{\n\tfrobnicate;\n}\n";

static inline cus_module *load(cus_context *c, const char *ptx)
{
    cus_module *m = NULL;
    assert_ok(cus_module_load_data(c, ptx, 0, NULL, &m));
    assert_non_null(m);
    return m;
}

static inline cus_function *get_fn(cus_module *m, const char *name)
{
    cus_function *f = NULL;
    assert_ok(cus_module_get_function(m, name, &f));
    assert_non_null(f);
    return f;
}

static inline int fn_attr(cus_function *f, CUfunction_attribute a)
{
    int v = -12345;
    assert_ok(cus_function_attribute(f, a, &v));
    return v;
}

/* A bare fatbin around one PTX entry, laid out as nvcc writes it (see
 * lib/image/fatbin.c): a 16-byte header, a 64-byte entry header, the text
 * and its NUL padded to 8 bytes. Returns its size. */
static inline size_t make_fatbin(unsigned char *out, size_t cap, const char *ptx, unsigned arch)
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
static inline void make_elf_header(unsigned char h[64], uint64_t shoff, uint16_t shnum)
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
static inline const char *write_file(const char *name, const void *data, size_t n)
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

static inline void remove_file(const char *path)
{
    assert_int_equal(unlink(path), 0);
}

static const cus_fake_config driver_12000 = {.driver_version = 12000};
static const cus_fake_device_config sm86_dev = {.cc_major = 8, .cc_minor = 6};
static const cus_fake_config sm86 = {.devices = &sm86_dev};

static inline int setup_12000(void **state)
{
    (void)state;
    return env_setup_with(&driver_12000);
}

static inline int setup_sm86(void **state)
{
    (void)state;
    return env_setup_with(&sm86);
}

/* A driver without the named entry points (cus_fake_hide_entry between the
 * install and the first load). */
static inline int setup_hiding(const char *const *names)
{
    if (env_setup_with(NULL))
        return -1;
    for (; *names; names++)
        if (cus_fake_hide_entry(*names))
            return -1;
    return 0;
}

static inline int setup_no_param_info(void **state)
{
    (void)state;
    return setup_hiding((const char *const[]){"cuFuncGetParamInfo", NULL});
}

static inline int setup_no_func_get_name(void **state)
{
    (void)state;
    return setup_hiding((const char *const[]){"cuFuncGetName", NULL});
}

static inline int setup_no_enumerate(void **state)
{
    (void)state;
    return setup_hiding((const char *const[]){"cuModuleEnumerateFunctions", NULL});
}

#define TEST_12000(f) cmocka_unit_test_setup_teardown(f, setup_12000, env_teardown)
#define TEST_SM86(f) cmocka_unit_test_setup_teardown(f, setup_sm86, env_teardown)
#define TEST_WITH(f, setup) cmocka_unit_test_setup_teardown(f, setup, env_teardown)

/* Removes the temporary directory the file tests made. */
static inline int group_teardown(void **state)
{
    (void)state;
    if (tmp_made)
        (void)rmdir(tmp_dir);
    return 0;
}

/* Images that cuscope refuses before the driver sees them. */
static inline void check_refused(cus_context *c, const void *image, size_t size, const char *expect)
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

/* Images that pass cuscope's checks and that the driver refuses: its status,
 * and its JIT log in the message. */
static inline void check_driver_refuses(cus_context *c, const void *image, size_t size,
                                        cus_status want, const char *expect)
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
        raw_pop_current();                                                          \
        assert_stack_unchanged(before_);                                       \
    } while (0)

#endif
