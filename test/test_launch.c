/* Kernel launch (include/cuscope/launch.h) and the launch-sizing half of
 * function.h (attributes, cache and shared-memory configuration, dynamic
 * shared memory, occupancy) on the fake driver: the cus_launch macro with 0,
 * 1 and 16 arguments, checked against the parameter layout (count and every
 * size) without reaching the driver, cus_buffer arguments, streams of
 * another context, the fast path (one driver call) and the slow one (the
 * context pushed and popped, the caller's stack as it was, on any thread),
 * host functions, cus_launch_ex with clusters and cooperative launches, older
 * drivers (no cuFuncGetParamInfo: unchecked launches; no cuLaunchKernelEx),
 * sticky errors from a faulting kernel, and every driver call failing in
 * turn. Each successful launch is checked against the fake's launch record
 * (grid, block, shared bytes, stream, the argument bytes as packed), and
 * host twins registered for the kernels compute into buffers that are copied
 * back.
 *
 * The PTX written here needs no nvcc; with the kernels of kernels/
 * (CUS_TEST_HAVE_KERNELS) a few launches run on real cubins and PTX too.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cudaTypedefs.h>

#include <cuscope/function.h>
#include <cuscope/launch.h>
#include <cuscope/memory.h>
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

/* A one-shot fault on entry: the status, the fault fired, nothing changed,
 * no launch recorded, and the last error names the call. */
#define assert_fault_named(entry, expr)                                        \
    do {                                                                       \
        unsigned long launches_ = cus_fake_launch_count();                     \
        leak_snap before_ = leak_snap_now();                                   \
        unsigned long fired_ = cus_fake_faults_fired();                        \
        assert_ok(cus_fake_fail_entry((entry), 1, FAULT, false));              \
        cus_status got_ = (expr);                                              \
        cus_fake_clear_faults();                                               \
        if (cus_fake_faults_fired() != fired_ + 1)                             \
            fail_msg("%s: the fault on %s did not fire", #expr, (entry));      \
        if (got_ != CU(FAULT))                                                 \
            fail_msg("%s with %s failing -> %s (%s)", #expr, (entry),          \
                     cus_status_name(got_), cus_last_error_message());         \
        assert_int_equal(cus_last_status(), CU(FAULT));                        \
        assert_nothing_changed(before_);                                       \
        assert_string_equal(cus_last_error()->driver_call, (entry));           \
        assert_contains(cus_last_error_message(), (entry));                    \
        assert_int_equal(cus_fake_launch_count(), launches_);                  \
    } while (0)

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

/* cuCtxPopCurrent failing for good after the launch was made (it and its
 * retry): the launch is queued, so the call returns CUS_SUCCESS (the last
 * error untouched); the pop goes to the destroy handler, naming `function`
 * and cuCtxPopCurrent; the context stays pushed on the driver's stack, one
 * above cuscope's mirror, and the test pops it. */
#define assert_pop_fault_reported(function, expr)                              \
    do {                                                                       \
        leak_snap before_ = leak_snap_now();                                   \
        unsigned long pops_ = cus_fake_calls_of("cuCtxPopCurrent");            \
        unsigned long launches_ = cus_fake_launch_count();                     \
        unsigned long reports_ = env_destroyed.count;                          \
        cus_clear_last_error();                                                \
        assert_ok(cus_fake_fail_entry("cuCtxPopCurrent", 1, FAULT, true));     \
        cus_status got_ = (expr);                                              \
        cus_fake_clear_faults();                                               \
        if (got_ != CUS_SUCCESS)                                               \
            fail_msg("%s with cuCtxPopCurrent failing -> %s (%s)", #expr,      \
                     cus_status_name(got_), cus_last_error_message());         \
        assert_int_equal(cus_last_status(), CUS_SUCCESS);                      \
        assert_int_equal(cus_fake_launch_count(), launches_ + 1);              \
        env_assert_one_pop_report(reports_, (function));                       \
        assert_int_equal(env_destroyed.last_status, FAULT);                    \
        assert_int_equal(cus_fake_calls_of("cuCtxPopCurrent"), pops_ + 2);     \
        assert_int_equal(cus_context_stack_depth(), before_.stack.depth);      \
        assert_int_equal(cus_fake_thread_stack_depth(), before_.stack.fake_depth + 1); \
        raw_pop();                                                             \
        assert_nothing_changed(before_);                                       \
    } while (0)

/* A launch refused before the driver: the status, the message, no call, no
 * launch recorded, nothing changed. (driver_call is "" but for
 * CUS_ERROR_NOT_SUPPORTED, where it names the missing entry point.) */
#define assert_refused(expr, want, text)                                       \
    do {                                                                       \
        leak_snap before_ = leak_snap_now();                                   \
        unsigned long calls_ = cus_fake_call_count();                          \
        unsigned long launches_ = cus_fake_launch_count();                     \
        cus_status got_ = (expr);                                              \
        if (got_ != (cus_status)(want))                                        \
            fail_msg("%s -> %s, expected %s (%s)", #expr, cus_status_name(got_), \
                     cus_status_name((cus_status)(want)), cus_last_error_message()); \
        assert_int_equal(cus_last_status(), (cus_status)(want));               \
        assert_contains(cus_last_error_message(), (text));                     \
        assert_no_calls_since(calls_);                                         \
        assert_int_equal(cus_fake_launch_count(), launches_);                  \
        assert_nothing_changed(before_);                                       \
    } while (0)

static cus_fake_launch last_launch(void)
{
    cus_fake_launch rec;
    memset(&rec, 0, sizeof rec);
    assert_ok(cus_fake_last_launch(&rec));
    return rec;
}

#define assert_dims(a, x, y, z)                                                \
    do {                                                                       \
        assert_int_equal((a)[0], (x));                                         \
        assert_int_equal((a)[1], (y));                                         \
        assert_int_equal((a)[2], (z));                                         \
    } while (0)

/* --- the module written here -------------------------------------------------------------
 * noargs(); one(u32); axpy(f32 a, u64 x, u64 y, u64 n): y = a x + y;
 * sixteen(...): the parameters of kernels/empty.cu's empty16 (mixed sizes and
 * alignments, a 16-byte struct); boom(u64): faults; bounded(u64): .maxntid
 * 128 and 1 KiB of static shared memory; big(5000 bytes): above the fake's
 * 4 KiB argument limit. Names the harness's twins of kernels/ do not use. */
static const char ptx_src[] =
    ".version 8.0\n"
    ".target sm_80\n"
    ".address_size 64\n"
    "\n"
    ".visible .entry noargs()\n"
    "{\n\tret;\n}\n"
    ".visible .entry one(\n"
    "\t.param .u32 one_param_0\n"
    ")\n"
    "{\n\tret;\n}\n"
    ".visible .entry axpy(\n"
    "\t.param .f32 axpy_param_0,\n"
    "\t.param .u64 axpy_param_1,\n"
    "\t.param .u64 axpy_param_2,\n"
    "\t.param .u64 axpy_param_3\n"
    ")\n"
    "{\n\tret;\n}\n"
    ".visible .entry sixteen(\n"
    "\t.param .u8 s_0,\n"
    "\t.param .u32 s_1,\n"
    "\t.param .f32 s_2,\n"
    "\t.param .f64 s_3,\n"
    "\t.param .u64 s_4,\n"
    "\t.param .u16 s_5,\n"
    "\t.param .u64 s_6,\n"
    "\t.param .align 8 .b8 s_7[16],\n"
    "\t.param .u8 s_8,\n"
    "\t.param .u32 s_9,\n"
    "\t.param .f32 s_10,\n"
    "\t.param .f64 s_11,\n"
    "\t.param .u64 s_12,\n"
    "\t.param .u16 s_13,\n"
    "\t.param .u64 s_14,\n"
    "\t.param .u32 s_15\n"
    ")\n"
    "{\n\tret;\n}\n"
    ".visible .entry boom(\n"
    "\t.param .u64 boom_param_0\n"
    ")\n"
    "{\n\tret;\n}\n"
    ".visible .entry bounded(\n"
    "\t.param .u64 bounded_param_0\n"
    ")\n"
    ".maxntid 128, 1, 1\n"
    "{\n"
    "\t.shared .align 4 .b8 buf[1024];\n"
    "\tret;\n"
    "}\n"
    ".visible .entry big(\n"
    "\t.param .align 4 .b8 big_param_0[5000]\n"
    ")\n"
    "{\n\tret;\n}\n";

/* The offsets of sixteen's parameters (empty16's, as nvcc lays them out). */
static const size_t sixteen_offsets[16] = {0, 4, 8, 16, 24, 32, 40, 48,
                                           64, 68, 72, 80, 88, 96, 104, 112};
struct pair {
    int a;
    double b;
};

typedef struct fixture {
    cus_context *ctx;
    cus_module *mod;
    cus_function *noargs, *one, *axpy, *sixteen, *boom, *bounded, *big;
} fixture;

static cus_function *get_fn(cus_module *m, const char *name)
{
    cus_function *f = NULL;
    assert_ok(cus_module_get_function(m, name, &f));
    assert_non_null(f);
    return f;
}

/* The module loaded into c (a reference taken). */
static fixture open_fixture(cus_context *c)
{
    fixture fx = {.ctx = cus_context_ref(c)};
    assert_ok(cus_module_load_data(c, ptx_src, 0, NULL, &fx.mod));
    fx.noargs = get_fn(fx.mod, "noargs");
    fx.one = get_fn(fx.mod, "one");
    fx.axpy = get_fn(fx.mod, "axpy");
    fx.sixteen = get_fn(fx.mod, "sixteen");
    fx.boom = get_fn(fx.mod, "boom");
    fx.bounded = get_fn(fx.mod, "bounded");
    fx.big = get_fn(fx.mod, "big");
    return fx;
}

static void close_fixture(fixture *fx)
{
    fx->noargs = cus_function_unref(fx->noargs);
    fx->one = cus_function_unref(fx->one);
    fx->axpy = cus_function_unref(fx->axpy);
    fx->sixteen = cus_function_unref(fx->sixteen);
    fx->boom = cus_function_unref(fx->boom);
    fx->bounded = cus_function_unref(fx->bounded);
    fx->big = cus_function_unref(fx->big);
    fx->mod = cus_module_unref(fx->mod);
    fx->ctx = cus_context_unref(fx->ctx);
}

static int fn_attr(cus_function *f, CUfunction_attribute a)
{
    int v = -12345;
    assert_ok(cus_function_attribute(f, a, &v));
    return v;
}

/* --- host twins ----------------------------------------------------------------------------- */

static void *ptr_arg(void *arg)
{
    CUdeviceptr p;
    memcpy(&p, arg, sizeof p);
    return (void *)(uintptr_t)p;
}

static unsigned long long thread_count(const cus_fake_launch *l)
{
    return (unsigned long long)l->grid[0] * l->grid[1] * l->grid[2] * l->block[0] * l->block[1] *
           l->block[2];
}

typedef struct twin_log {
    int runs;
    pthread_t thread;
    unsigned int one_value;
} twin_log;

static CUresult axpy_twin(const cus_fake_launch *l, void **args, void *user)
{
    twin_log *log = user;
    float a;
    memcpy(&a, args[0], sizeof a);
    const float *x = ptr_arg(args[1]);
    float *y = ptr_arg(args[2]);
    unsigned long long n;
    memcpy(&n, args[3], sizeof n);
    for (unsigned long long i = 0; i < thread_count(l) && i < n; i++)
        y[i] = a * x[i] + y[i];
    if (log) {
        log->runs++;
        log->thread = pthread_self();
    }
    return CUDA_SUCCESS;
}

static CUresult one_twin(const cus_fake_launch *l, void **args, void *user)
{
    (void)l;
    twin_log *log = user;
    memcpy(&log->one_value, args[0], sizeof log->one_value);
    log->runs++;
    log->thread = pthread_self();
    return CUDA_SUCCESS;
}

typedef struct sixteen_seen {
    int runs;
    char c0, c8;
    int i1, i9;
    float f2, f10;
    double d3, d11;
    void *p4, *p12;
    short s5, s13;
    unsigned long long u6, u14;
    struct pair s7;
    int i15;
} sixteen_seen;

static CUresult sixteen_twin(const cus_fake_launch *l, void **args, void *user)
{
    (void)l;
    sixteen_seen *s = user;
    memcpy(&s->c0, args[0], 1);
    memcpy(&s->i1, args[1], 4);
    memcpy(&s->f2, args[2], 4);
    memcpy(&s->d3, args[3], 8);
    memcpy(&s->p4, args[4], 8);
    memcpy(&s->s5, args[5], 2);
    memcpy(&s->u6, args[6], 8);
    memcpy(&s->s7.a, args[7], 4);
    memcpy(&s->s7.b, (char *)args[7] + 8, 8);
    memcpy(&s->c8, args[8], 1);
    memcpy(&s->i9, args[9], 4);
    memcpy(&s->f10, args[10], 4);
    memcpy(&s->d11, args[11], 8);
    memcpy(&s->p12, args[12], 8);
    memcpy(&s->s13, args[13], 2);
    memcpy(&s->u14, args[14], 8);
    memcpy(&s->i15, args[15], 4);
    s->runs++;
    return CUDA_SUCCESS;
}

static CUresult boom_twin(const cus_fake_launch *l, void **args, void *user)
{
    (void)l;
    (void)args;
    int *runs = user;
    ++*runs;
    return CUDA_ERROR_ILLEGAL_ADDRESS; /* what writing through a bad pointer does */
}

/* --- setups ------------------------------------------------------------------------------- */

static int setup_hiding(const char *name)
{
    if (env_setup_with(NULL))
        return -1;
    return cus_fake_hide_entry(name) ? -1 : 0;
}

static int setup_no_param_info(void **state)
{
    (void)state;
    return setup_hiding("cuFuncGetParamInfo");
}

static int setup_no_launch_ex(void **state)
{
    (void)state;
    return setup_hiding("cuLaunchKernelEx");
}

static int setup_no_shared_mem_config(void **state)
{
    (void)state;
    return setup_hiding("cuFuncSetSharedMemConfig");
}

static const cus_fake_config driver_12000 = {.driver_version = 12000};

static int setup_12000(void **state)
{
    (void)state;
    return env_setup_with(&driver_12000);
}

#define TEST_WITH(f, setup) cmocka_unit_test_setup_teardown(f, setup, env_teardown)

/* --- grids -------------------------------------------------------------------------------- */

static void test_grid_for(void **state)
{
    (void)state;
    assert_int_equal(cus_grid_for(0, 256), 1); /* at least one block */
    assert_int_equal(cus_grid_for(1, 256), 1);
    assert_int_equal(cus_grid_for(255, 256), 1);
    assert_int_equal(cus_grid_for(256, 256), 1);
    assert_int_equal(cus_grid_for(257, 256), 2);
    assert_int_equal(cus_grid_for(1000, 128), 8);
    assert_int_equal(cus_grid_for(1024, 128), 8);
    assert_int_equal(cus_grid_for(7, 1), 7);
    assert_int_equal(cus_grid_for(100, 0), 1); /* no block size: one block */
    assert_int_equal(cus_grid_for(0, 0), 1);
    /* the driver's limit on x */
    assert_int_equal(cus_grid_for(0x7fffffffull, 1), 0x7fffffffu);
    assert_int_equal(cus_grid_for(0x80000000ull, 1), 0x7fffffffu);
    assert_int_equal(cus_grid_for(0x7fffffffull * 256, 256), 0x7fffffffu);
    assert_int_equal(cus_grid_for(0x7fffffffull * 256 + 1, 256), 0x7fffffffu);
    assert_int_equal(cus_grid_for(SIZE_MAX, 1), 0x7fffffffu);
    assert_int_equal(cus_grid_for(SIZE_MAX, 1024), 0x7fffffffu);
    assert_int_equal(cus_grid_for(SIZE_MAX, UINT32_MAX), 0x7fffffffu);
    assert_int_equal(cus_grid_for((size_t)UINT32_MAX, UINT32_MAX), 1);
}

static void test_dims(void **state)
{
    (void)state;
    cus_dim3 d = CUS_DIM_(5);
    assert_int_equal(d.x, 5);
    assert_int_equal(d.y, 1);
    assert_int_equal(d.z, 1);
    d = CUS_DIM_((size_t)7);
    assert_int_equal(d.x, 7);
    d = CUS_DIM_(cus_grid_for(1000, 256));
    assert_int_equal(d.x, 4);
    d = CUS_DIM_(CUS_DIM3(2, 3, 4));
    assert_int_equal(d.x, 2);
    assert_int_equal(d.y, 3);
    assert_int_equal(d.z, 4);
    const cus_dim3 c = {9, 8, 7};
    d = CUS_DIM_(c);
    assert_int_equal(d.y, 8);
}

/* --- launches ----------------------------------------------------------------------------- */

static void test_launch_without_arguments(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    fixture fx = open_fixture(c);
    assert_ok(cus_context_push(c));
    stack_snap before = snap();
    unsigned long calls = cus_fake_call_count();
    assert_ok(cus_launch(fx.noargs, 1, 1, 0, NULL));
    assert_calls_since(calls, "cuLaunchKernel"); /* current: one driver call */
    assert_stack_unchanged(before);
    cus_fake_launch rec = last_launch();
    assert_string_equal(rec.function, "noargs");
    assert_ptr_equal(rec.handle, cus_function_handle(fx.noargs));
    assert_ptr_equal(rec.context, cus_context_handle(c));
    assert_null(rec.stream);
    assert_dims(rec.grid, 1, 1, 1);
    assert_dims(rec.block, 1, 1, 1);
    assert_dims(rec.cluster, 0, 0, 0);
    assert_int_equal(rec.shared_bytes, 0);
    assert_false(rec.extended);
    assert_false(rec.cooperative);
    assert_int_equal(rec.nargs, 0);
    assert_int_equal(rec.arg_bytes, 0);
    assert_int_equal(cus_fake_launch_count(), 1);
    /* the explicit form, with no arrays at all */
    assert_ok(cus_function_launch(fx.noargs, CUS_DIM3(3, 2, 1), CUS_DIM3(32, 2, 1), 64, NULL, 0,
                                  NULL, NULL));
    rec = last_launch();
    assert_dims(rec.grid, 3, 2, 1);
    assert_dims(rec.block, 32, 2, 1);
    assert_int_equal(rec.shared_bytes, 64);
    assert_ok(cus_context_pop(NULL));
    close_fixture(&fx);
    c = cus_context_unref(c);
}

static void test_launch_one_argument(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    fixture fx = open_fixture(c);
    cus_stream *s = new_stream(c, 0);
    twin_log log = {0};
    assert_ok(cus_fake_register_kernel("one", one_twin, &log));
    assert_ok(cus_launch(fx.one, CUS_DIM3(2, 3, 4), CUS_DIM3(8, 4, 2), 128, s, 42u));
    cus_fake_launch rec = last_launch();
    assert_string_equal(rec.function, "one");
    assert_ptr_equal(rec.stream, cus_stream_handle(s));
    assert_dims(rec.grid, 2, 3, 4);
    assert_dims(rec.block, 8, 4, 2);
    assert_int_equal(rec.shared_bytes, 128);
    assert_int_equal(rec.nargs, 1);
    assert_int_equal(rec.arg_bytes, 4);
    unsigned int v = 42;
    assert_memory_equal(rec.args, &v, 4);
    /* queued: the twin runs when the stream is synchronized, on this thread */
    assert_int_equal(log.runs, 0);
    assert_int_equal(cus_fake_stream_pending(cus_stream_handle(s)), 1);
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(log.runs, 1);
    assert_int_equal(log.one_value, 42);
    assert_true(pthread_equal(log.thread, pthread_self()));
    /* an int (4 bytes) is fine for a u32 too; the legacy stream */
    cus_stream *legacy = NULL;
    assert_ok(cus_stream_legacy(c, &legacy));
    int minus = -7;
    assert_ok(cus_launch(fx.one, 1, 1, 0, legacy, minus));
    rec = last_launch();
    assert_ptr_equal(rec.stream, CU_STREAM_LEGACY);
    assert_memory_equal(rec.args, &minus, 4);
    assert_ok(cus_context_synchronize(c));
    assert_int_equal(log.runs, 2);
    assert_int_equal((int)log.one_value, -7);
    legacy = cus_stream_unref(legacy);
    s = cus_stream_unref(s);
    close_fixture(&fx);
    c = cus_context_unref(c);
}

static void test_launch_sixteen_arguments(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    fixture fx = open_fixture(c);
    sixteen_seen seen;
    memset(&seen, 0, sizeof seen);
    assert_ok(cus_fake_register_kernel("sixteen", sixteen_twin, &seen));
    struct pair pr;
    memset(&pr, 0, sizeof pr);
    pr.a = -77;
    pr.b = 6.5;
    int anchor = 0;
    void *p4 = &anchor, *p12 = &seen;
    assert_int_equal(cus_function_param_count(fx.sixteen), 16);
    for (unsigned int i = 0; i < 16; i++) {
        size_t off = 0;
        assert_ok(cus_function_param_info(fx.sixteen, i, &off, NULL));
        assert_int_equal(off, sixteen_offsets[i]);
    }
    assert_ok(cus_launch(fx.sixteen, 1, 1, 0, NULL, (char)'a', 2, 3.5f, 4.25, p4, (short)-6,
                         7ull, pr, (char)'z', 10, 11.5f, 12.75, p12, (short)14, 15ull, 16));
    cus_fake_launch rec = last_launch();
    assert_int_equal(rec.nargs, 16);
    assert_int_equal(rec.arg_bytes, 116);
    const unsigned char *a = rec.args;
    char ch;
    int i32;
    float f32;
    double f64;
    void *ptr;
    short i16;
    unsigned long long u64;
#define AT(i, var, want)                                                       \
    do {                                                                       \
        memcpy(&(var), a + sixteen_offsets[i], sizeof(var));                   \
        assert_true((var) == (want));                                          \
    } while (0)
    AT(0, ch, 'a');
    AT(1, i32, 2);
    AT(2, f32, 3.5f);
    AT(3, f64, 4.25);
    AT(4, ptr, p4);
    AT(5, i16, -6);
    AT(6, u64, 7ull);
    AT(7, i32, -77);
    memcpy(&f64, a + 56, 8);
    assert_true(f64 == 6.5);
    AT(8, ch, 'z');
    AT(9, i32, 10);
    AT(10, f32, 11.5f);
    AT(11, f64, 12.75);
    AT(12, ptr, p12);
    AT(13, i16, 14);
    AT(14, u64, 15ull);
    AT(15, i32, 16);
#undef AT
    /* the gaps between parameters stay zero: nothing else was packed */
    static const unsigned char zeros[8] = {0};
    assert_memory_equal(a + 1, zeros, 3);
    assert_memory_equal(a + 12, zeros, 4);
    assert_memory_equal(a + 34, zeros, 6);
    assert_memory_equal(a + 116, zeros, 8);
    /* the twin saw the same */
    assert_ok(cus_context_synchronize(c));
    assert_int_equal(seen.runs, 1);
    assert_int_equal(seen.c0, 'a');
    assert_int_equal(seen.i1, 2);
    assert_true(seen.f2 == 3.5f);
    assert_true(seen.d3 == 4.25);
    assert_ptr_equal(seen.p4, p4);
    assert_int_equal(seen.s5, -6);
    assert_int_equal(seen.u6, 7);
    assert_int_equal(seen.s7.a, -77);
    assert_true(seen.s7.b == 6.5);
    assert_int_equal(seen.c8, 'z');
    assert_int_equal(seen.i9, 10);
    assert_true(seen.f10 == 11.5f);
    assert_true(seen.d11 == 12.75);
    assert_ptr_equal(seen.p12, p12);
    assert_int_equal(seen.s13, 14);
    assert_int_equal(seen.u14, 15);
    assert_int_equal(seen.i15, 16);
    close_fixture(&fx);
    c = cus_context_unref(c);
}

static void test_launch_computes_through_a_host_twin(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    fixture fx = open_fixture(c);
    cus_stream *s = new_stream(c, CU_STREAM_NON_BLOCKING);
    twin_log log = {0};
    assert_ok(cus_fake_register_kernel("axpy", axpy_twin, &log));
    enum { N = 1000 };
    static float x[N], y[N];
    for (int i = 0; i < N; i++) {
        x[i] = (float)i;
        y[i] = (float)(3 * i);
    }
    cus_buffer *bx = NULL, *by = NULL;
    assert_ok(cus_buffer_alloc_n(c, float, N, &bx));
    assert_ok(cus_buffer_alloc_n(c, float, N, &by));
    assert_ok(cus_copy_to_device(bx, 0, x, sizeof x));
    assert_ok(cus_copy_to_device(by, 0, y, sizeof y));
    /* cus_buffer * arguments go as their device addresses */
    const unsigned int block = 256;
    assert_ok(cus_launch(fx.axpy, cus_grid_for(N, block), block, 0, s, 2.0f, bx, by,
                         (unsigned long long)N));
    cus_fake_launch rec = last_launch();
    assert_dims(rec.grid, 4, 1, 1);
    assert_dims(rec.block, 256, 1, 1);
    assert_int_equal(rec.arg_bytes, 32);
    float a = 2.0f;
    CUdeviceptr px = cus_buffer_ptr(bx), py = cus_buffer_ptr(by);
    unsigned long long n = N;
    assert_memory_equal(rec.args + 0, &a, 4);
    assert_memory_equal(rec.args + 8, &px, 8);
    assert_memory_equal(rec.args + 16, &py, 8);
    assert_memory_equal(rec.args + 24, &n, 8);
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(log.runs, 1);
    assert_ok(cus_copy_to_host(y, by, 0, sizeof y));
    for (int i = 0; i < N; i++)
        assert_float_equal(y[i], 5.0f * (float)i, 0);
    /* const buffers and raw device pointers go the same way; half the grid
     * covers half the elements */
    const cus_buffer *cbx = bx;
    assert_ok(cus_launch(fx.axpy, 2, block, 0, s, -1.0f, cbx, py, n));
    rec = last_launch();
    assert_memory_equal(rec.args + 8, &px, 8);
    assert_memory_equal(rec.args + 16, &py, 8);
    assert_ok(cus_stream_synchronize(s));
    assert_ok(cus_copy_to_host(y, by, 0, sizeof y));
    for (int i = 0; i < N; i++)
        assert_float_equal(y[i], (i < 512 ? 4.0f : 5.0f) * (float)i, 0);
    assert_int_equal(log.runs, 2);
    bx = cus_buffer_unref(bx);
    by = cus_buffer_unref(by);
    s = cus_stream_unref(s);
    close_fixture(&fx);
    c = cus_context_unref(c);
}

static void test_launch_wrong_argument_count(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    fixture fx = open_fixture(c);
    cus_buffer *b = NULL;
    assert_ok(cus_buffer_alloc(c, 64, &b));
    const cus_status E = CUS_ERROR_INVALID_ARGUMENT;
    assert_refused(cus_launch(fx.axpy, 1, 1, 0, NULL, 2.0f, b, b), E,
                   "axpy: 3 arguments given, the kernel takes 4");
    assert_string_equal(cus_last_error()->function, "cus_launch"); /* the call written */
    assert_string_equal(cus_last_error()->driver_call, "");
    assert_refused(cus_launch(fx.axpy, 1, 1, 0, NULL, 2.0f, b, b, 4ull, 5), E,
                   "axpy: 5 arguments given, the kernel takes 4");
    assert_refused(cus_launch(fx.noargs, 1, 1, 0, NULL, 1), E,
                   "noargs: 1 argument given, the kernel takes 0");
    assert_refused(cus_launch(fx.sixteen, 1, 1, 0, NULL, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13,
                              14, 15),
                   E, "sixteen: 15 arguments given, the kernel takes 16");
    b = cus_buffer_unref(b);
    close_fixture(&fx);
    c = cus_context_unref(c);
}

static void test_launch_wrong_argument_size(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    fixture fx = open_fixture(c);
    cus_buffer *b = NULL;
    assert_ok(cus_buffer_alloc(c, 64, &b));
    const cus_status E = CUS_ERROR_INVALID_ARGUMENT;
    int n = 16;
    /* launch.h's example: an int where the kernel takes 8 bytes */
    assert_refused(cus_launch(fx.axpy, 1, 1, 0, NULL, 2.0f, b, b, n), E,
                   "axpy: argument 4 is 4 bytes, the kernel's parameter is 8");
    /* a double where it takes a float */
    assert_refused(cus_launch(fx.axpy, 1, 1, 0, NULL, 2.0, b, b, (size_t)n), E,
                   "axpy: argument 1 is 8 bytes, the kernel's parameter is 4");
    /* a 4-byte pointer-sized mistake: an int for a pointer */
    assert_refused(cus_launch(fx.axpy, 1, 1, 0, NULL, 2.0f, 0, b, (size_t)n), E,
                   "axpy: argument 2 is 4 bytes, the kernel's parameter is 8");
    /* the first mismatch is the one reported */
    assert_refused(cus_launch(fx.axpy, 1, 1, 0, NULL, 2.0f, b, 0, 1), E,
                   "axpy: argument 3 is 4 bytes");
    assert_refused(cus_launch(fx.one, 1, 1, 0, NULL, 1ull), E,
                   "one: argument 1 is 8 bytes, the kernel's parameter is 4");
    assert_refused(cus_launch(fx.one, 1, 1, 0, NULL, (short)1), E,
                   "one: argument 1 is 2 bytes, the kernel's parameter is 4");
    /* sixteen: an int for its char, then a struct of the wrong size */
    struct pair pr = {1, 2.0};
    int small_struct[2] = {1, 2};
    assert_refused(cus_launch(fx.sixteen, 1, 1, 0, NULL, 1, 2, 3.0f, 4.0, (void *)0, (short)6,
                              7ull, pr, (char)9, 10, 11.0f, 12.0, (void *)0, (short)14, 15ull, 16),
                   E, "sixteen: argument 1 is 4 bytes, the kernel's parameter is 1");
    struct {
        int v[2];
    } wrong = {{small_struct[0], small_struct[1]}};
    assert_refused(cus_launch(fx.sixteen, 1, 1, 0, NULL, (char)1, 2, 3.0f, 4.0, (void *)0,
                              (short)6, 7ull, wrong, (char)9, 10, 11.0f, 12.0, (void *)0, (short)14,
                              15ull, 16),
                   E, "sixteen: argument 8 is 8 bytes, the kernel's parameter is 16");
    /* the right ones go through */
    assert_ok(cus_launch(fx.sixteen, 1, 1, 0, NULL, (char)1, 2, 3.0f, 4.0, (void *)0, (short)6,
                         7ull, pr, (char)9, 10, 11.0f, 12.0, (void *)0, (short)14, 15ull, 16));
    b = cus_buffer_unref(b);
    close_fixture(&fx);
    c = cus_context_unref(c);
}

static void test_launch_explicit_form(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    fixture fx = open_fixture(c);
    float a = 1.0f;
    CUdeviceptr p = 0;
    unsigned long long n = 0;
    void *args[] = {&a, &p, &p, &n};
    const size_t sizes[] = {4, 8, 8, 8};
    const size_t bad[] = {4, 8, 4, 8};
    assert_ok(cus_function_launch(fx.axpy, CUS_DIM3(1, 1, 1), CUS_DIM3(1, 1, 1), 0, NULL, 4, args,
                                  sizes));
    assert_int_equal(last_launch().arg_bytes, 32);
    assert_ok(cus_function_launch(fx.axpy, CUS_DIM3(1, 1, 1), CUS_DIM3(1, 1, 1), 0, NULL, 4, args,
                                  NULL)); /* no sizes: no check */
    assert_refused(cus_function_launch(fx.axpy, CUS_DIM3(1, 1, 1), CUS_DIM3(1, 1, 1), 0, NULL, 4,
                                       args, bad),
                   CUS_ERROR_INVALID_ARGUMENT, "axpy: argument 3 is 4 bytes");
    assert_refused(cus_function_launch(fx.axpy, CUS_DIM3(1, 1, 1), CUS_DIM3(1, 1, 1), 0, NULL, 4,
                                       NULL, sizes),
                   CUS_ERROR_INVALID_ARGUMENT, "arguments missing");
    assert_refused(cus_function_launch(NULL, CUS_DIM3(1, 1, 1), CUS_DIM3(1, 1, 1), 0, NULL, 0, NULL,
                                       NULL),
                   CUS_ERROR_INVALID_ARGUMENT, "no function");
    assert_refused(cus_launch((cus_function *)NULL, 1, 1, 0, NULL, 1), CUS_ERROR_INVALID_ARGUMENT,
                   "no function");
    close_fixture(&fx);
    c = cus_context_unref(c);
}

static void test_launch_on_a_stream_of_another_context(void **state)
{
    (void)state;
    cus_context *c = new_ctx(), *other = new_ctx();
    fixture fx = open_fixture(c);
    cus_stream *s = new_stream(other, 0);
    char want[160];
    snprintf(want, sizeof want, "one: the stream belongs to context %p, the function to %p",
             (void *)cus_context_handle(other), (void *)cus_context_handle(c));
    assert_ok(cus_context_push(c));
    assert_refused(cus_launch(fx.one, 1, 1, 0, s, 1), CUS_ERROR_CONTEXT_MISMATCH, want);
    cus_launch_config cfg = {.grid = {1, 1, 1}, .block = {1, 1, 1}, .stream = s};
    assert_refused(cus_launch_ex(fx.one, &cfg, 1), CUS_ERROR_CONTEXT_MISMATCH, want);
    assert_string_equal(cus_last_error()->function, "cus_launch_ex");
    void *args[] = {&(int){1}};
    assert_refused(cus_function_launch(fx.one, CUS_DIM3(1, 1, 1), CUS_DIM3(1, 1, 1), 0, s, 1, args,
                                       NULL),
                   CUS_ERROR_CONTEXT_MISMATCH, want);
    assert_string_equal(cus_last_error()->function, "cus_function_launch");
    assert_refused(cus_function_launch_ex(fx.one, &cfg, 1, args, NULL), CUS_ERROR_CONTEXT_MISMATCH,
                   want);
    assert_string_equal(cus_last_error()->function, "cus_function_launch_ex");
    assert_ok(cus_context_pop(NULL));
    s = cus_stream_unref(s);
    close_fixture(&fx);
    c = cus_context_unref(c);
    other = cus_context_unref(other);
}

/* Two cus_context objects of one primary context are one context: a stream
 * of either serves a function of the other. */
static void test_launch_on_a_stream_of_the_same_primary(void **state)
{
    (void)state;
    cus_context *c = new_primary(), *again = new_primary();
    assert_ptr_not_equal(c, again);
    fixture fx = open_fixture(c);
    cus_stream *s = new_stream(again, 0);
    assert_ok(cus_launch(fx.one, 1, 1, 0, s, 5));
    assert_ptr_equal(last_launch().stream, cus_stream_handle(s));
    assert_ok(cus_stream_synchronize(s));
    s = cus_stream_unref(s);
    close_fixture(&fx);
    c = cus_context_unref(c);
    again = cus_context_unref(again);
}

static void test_launch_makes_its_context_current(void **state)
{
    (void)state;
    cus_context *c = new_ctx(), *other = new_ctx();
    fixture fx = open_fixture(c);
    /* nothing current: pushed for the launch, popped after */
    stack_snap before = snap();
    assert_int_equal(before.depth, 0);
    unsigned long calls = cus_fake_call_count();
    assert_ok(cus_launch(fx.one, 1, 1, 0, NULL, 1));
    assert_calls_since(calls, "cuCtxPushCurrent", "cuLaunchKernel", "cuCtxPopCurrent");
    assert_stack_unchanged(before);
    assert_ptr_equal(last_launch().context, cus_context_handle(c));
    /* another context current: the same, and it is current again after */
    assert_ok(cus_context_push(other));
    before = snap();
    calls = cus_fake_call_count();
    assert_ok(cus_launch(fx.one, 1, 1, 0, NULL, 2));
    assert_calls_since(calls, "cuCtxPushCurrent", "cuLaunchKernel", "cuCtxPopCurrent");
    assert_stack_unchanged(before);
    assert_ptr_equal(cus_context_current(), other);
    assert_ptr_equal(last_launch().context, cus_context_handle(c));
    /* the function's context on top: one call */
    assert_ok(cus_context_push(c));
    calls = cus_fake_call_count();
    assert_ok(cus_launch(fx.one, 1, 1, 0, NULL, 3));
    assert_calls_since(calls, "cuLaunchKernel");
    assert_ok(cus_context_pop(NULL));
    /* current through set_current: one call too */
    assert_ok(cus_context_set_current(c));
    calls = cus_fake_call_count();
    assert_ok(cus_launch(fx.one, 1, 1, 0, NULL, 4));
    assert_calls_since(calls, "cuLaunchKernel");
    assert_ok(cus_context_pop(NULL));
    assert_int_equal(cus_context_stack_depth(), 0);
    assert_int_equal(cus_fake_launch_count(), 4);
    assert_int_equal(cus_fake_misuse_count(), 0);
    close_fixture(&fx);
    c = cus_context_unref(c);
    other = cus_context_unref(other);
}

typedef struct thread_launch {
    fixture *fx;
    cus_context *own; /* pushed on the thread first, or NULL */
    cus_status st;
    int depth_before, depth_after;
    CUcontext top_before, top_after;
    unsigned long pushes, pops;
} thread_launch;

static void *launch_on_thread(void *p)
{
    thread_launch *t = p;
    if (t->own && cus_context_push(t->own))
        return NULL;
    t->depth_before = cus_fake_thread_stack_depth();
    t->top_before = t->depth_before ? cus_fake_thread_stack_at(t->depth_before - 1) : NULL;
    t->st = cus_launch(t->fx->one, 1, 1, 0, NULL, 9);
    t->depth_after = cus_fake_thread_stack_depth();
    t->top_after = t->depth_after ? cus_fake_thread_stack_at(t->depth_after - 1) : NULL;
    if (t->own)
        (void)cus_context_pop(NULL);
    return NULL;
}

static void test_launch_from_other_threads(void **state)
{
    (void)state;
    cus_context *c = new_ctx(), *other = new_ctx();
    fixture fx = open_fixture(c);
    assert_ok(cus_context_push(c)); /* current here, not there */
    for (int k = 0; k < 2; k++) {
        thread_launch t = {.fx = &fx, .own = k ? other : NULL, .st = -1};
        unsigned long pushes = cus_fake_calls_of("cuCtxPushCurrent");
        unsigned long pops = cus_fake_calls_of("cuCtxPopCurrent");
        pthread_t th;
        assert_int_equal(pthread_create(&th, NULL, launch_on_thread, &t), 0);
        assert_int_equal(pthread_join(th, NULL), 0);
        assert_ok(t.st);
        assert_int_equal(t.depth_after, t.depth_before);
        assert_ptr_equal(t.top_after, t.top_before);
        assert_ptr_equal(t.top_before, k ? cus_context_handle(other) : NULL);
        /* the push and pop of the launch (and of the thread's own context) */
        assert_int_equal(cus_fake_calls_of("cuCtxPushCurrent"), pushes + 1 + k);
        assert_int_equal(cus_fake_calls_of("cuCtxPopCurrent"), pops + 1 + k);
        cus_fake_launch rec = last_launch();
        assert_ptr_equal(rec.context, cus_context_handle(c));
        unsigned int nine = 9;
        assert_memory_equal(rec.args, &nine, 4);
    }
    assert_int_equal(cus_fake_misuse_count(), 0);
    assert_ok(cus_context_pop(NULL));
    close_fixture(&fx);
    c = cus_context_unref(c);
    other = cus_context_unref(other);
}

/* Threads launching from one call site at once, each with the context
 * current (the fast path) or not (the slow one): every launch made, once. */
typedef struct hammer {
    fixture *fx;
    pthread_barrier_t *start;
    bool push;
    int failures;
} hammer;

static void *hammer_launches(void *p)
{
    hammer *h = p;
    if (h->push && cus_context_push(h->fx->ctx)) {
        h->failures++;
        return NULL;
    }
    pthread_barrier_wait(h->start);
    for (unsigned int i = 0; i < 200; i++)
        if (cus_launch(h->fx->one, 1, 1, 0, NULL, i) != CUS_SUCCESS)
            h->failures++;
    if (h->push && cus_context_pop(NULL))
        h->failures++;
    return NULL;
}

static void test_launch_from_many_threads_at_once(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    fixture fx = open_fixture(c);
    enum { T = 8 };
    pthread_barrier_t start;
    assert_int_equal(pthread_barrier_init(&start, NULL, T), 0);
    hammer h[T];
    pthread_t th[T];
    for (int i = 0; i < T; i++) {
        h[i] = (hammer){&fx, &start, i % 2 == 0, 0};
        assert_int_equal(pthread_create(&th[i], NULL, hammer_launches, &h[i]), 0);
    }
    for (int i = 0; i < T; i++)
        assert_int_equal(pthread_join(th[i], NULL), 0);
    pthread_barrier_destroy(&start);
    for (int i = 0; i < T; i++)
        assert_int_equal(h[i].failures, 0);
    assert_int_equal(cus_fake_launch_count(), T * 200);
    assert_int_equal(cus_fake_calls_of("cuLaunchKernel"), T * 200);
    assert_int_equal(cus_fake_misuse_count(), 0);
    assert_ok(cus_context_synchronize(c));
    close_fixture(&fx);
    c = cus_context_unref(c);
}

static void test_launch_faults(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    fixture fx = open_fixture(c);
    /* the slow path: each of its calls */
    assert_fault_named("cuCtxPushCurrent", cus_launch(fx.one, 1, 1, 0, NULL, 1));
    assert_fault_named("cuLaunchKernel", cus_launch(fx.one, 1, 1, 0, NULL, 1));
    unsigned long launches = cus_fake_launch_count();
    assert_pop_fault_reported("cus_launch", cus_launch(fx.one, 1, 1, 0, NULL, 1));
    assert_int_equal(cus_fake_launch_count(), launches + 1); /* launched, then the pop failed */
    /* a pop that fails once: its retry restores the stack, the launch succeeds */
    stack_snap before = snap();
    assert_ok(cus_fake_fail_entry("cuCtxPopCurrent", 1, FAULT, false));
    assert_ok(cus_launch(fx.one, 1, 1, 0, NULL, 1));
    cus_fake_clear_faults();
    assert_stack_unchanged(before);
    /* the fast path */
    assert_ok(cus_context_push(c));
    assert_fault_named("cuLaunchKernel", cus_launch(fx.one, 1, 1, 0, NULL, 1));
    assert_string_equal(cus_last_error()->function, "cus_launch");
    void *args[] = {&(int){1}};
    assert_fault_named("cuLaunchKernel", cus_function_launch(fx.one, CUS_DIM3(1, 1, 1),
                                                             CUS_DIM3(1, 1, 1), 0, NULL, 1, args,
                                                             NULL));
    assert_string_equal(cus_last_error()->function, "cus_function_launch");
    assert_ok(cus_context_pop(NULL));
    /* the explicit form's slow path */
    assert_fault_named("cuCtxPushCurrent",
                       cus_function_launch(fx.one, CUS_DIM3(1, 1, 1), CUS_DIM3(1, 1, 1), 0, NULL, 1,
                                           args, NULL));
    assert_string_equal(cus_last_error()->function, "cus_function_launch");
    assert_fault_named("cuLaunchKernel",
                       cus_function_launch(fx.one, CUS_DIM3(1, 1, 1), CUS_DIM3(1, 1, 1), 0, NULL, 1,
                                           args, NULL));
    assert_pop_fault_reported("cus_function_launch",
                              cus_function_launch(fx.one, CUS_DIM3(1, 1, 1), CUS_DIM3(1, 1, 1), 0,
                                                  NULL, 1, args, NULL));
    assert_int_equal(cus_context_poisoned(c), CUS_SUCCESS);
    close_fixture(&fx);
    c = cus_context_unref(c);
}

/* Errors name the call the user wrote: cus_launch for the macro (on its fast
 * path, its full path and its slow path alike), cus_function_launch for the
 * explicit form. */
static void test_launch_errors_name_the_call_written(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    fixture fx = open_fixture(c);
    void *args[] = {&(int){1}};
    const size_t sizes[] = {4};
    for (int current = 0; current < 2; current++) {
        if (current)
            assert_ok(cus_context_push(c));
        for (int round = 0; round < 2; round++) { /* the site unchecked, then checked */
            assert_ok(cus_fake_fail_entry("cuLaunchKernel", 1, FAULT, false));
            assert_status(cus_launch(fx.one, 1, 1, 0, NULL, 1), FAULT);
            cus_fake_clear_faults();
            assert_string_equal(cus_last_error()->function, "cus_launch");
            assert_string_equal(cus_last_error()->driver_call, "cuLaunchKernel");
            assert_true(strncmp(cus_last_error_message(), "cus_launch: cuLaunchKernel failed", 33) == 0);
            assert_ok(cus_fake_fail_entry("cuLaunchKernel", 1, FAULT, false));
            assert_status(cus_function_launch(fx.one, CUS_DIM3(1, 1, 1), CUS_DIM3(1, 1, 1), 0, NULL,
                                              1, args, sizes),
                          FAULT);
            cus_fake_clear_faults();
            assert_string_equal(cus_last_error()->function, "cus_function_launch");
        }
        if (current)
            assert_ok(cus_context_pop(NULL));
    }
    cus_launch_config cfg = {.grid = {1, 1, 1}, .block = {1, 1, 1}};
    assert_ok(cus_fake_fail_entry("cuLaunchKernelEx", 1, FAULT, false));
    assert_status(cus_launch_ex(fx.one, &cfg, 1), FAULT);
    cus_fake_clear_faults();
    assert_string_equal(cus_last_error()->function, "cus_launch_ex");
    assert_ok(cus_fake_fail_entry("cuLaunchKernelEx", 1, FAULT, false));
    assert_status(cus_function_launch_ex(fx.one, &cfg, 1, args, sizes), FAULT);
    cus_fake_clear_faults();
    assert_string_equal(cus_last_error()->function, "cus_function_launch_ex");
    close_fixture(&fx);
    c = cus_context_unref(c);
}

/* A call site's sizes are checked in full once per function; later launches
 * from it compare a pointer. Another site, or another function at the same
 * site, is checked again. */
static cus_status launch_one_from_site_a(cus_function *f, unsigned int v)
{
    return cus_launch(f, 1, 1, 0, NULL, v);
}

static cus_status launch_one_from_site_b(cus_function *f, unsigned long long v)
{
    return cus_launch(f, 1, 1, 0, NULL, v);
}

static void test_launch_call_sites_are_checked_once(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    fixture fx = open_fixture(c);
    assert_ok(cus_context_push(c));
    for (unsigned int i = 0; i < 5; i++) {
        unsigned long calls = cus_fake_call_count();
        assert_ok(launch_one_from_site_a(fx.one, i));
        assert_calls_since(calls, "cuLaunchKernel");
        assert_memory_equal(last_launch().args, &i, 4);
    }
    /* another site, wrong: refused every time, and site a still works */
    for (int i = 0; i < 3; i++) {
        assert_refused(launch_one_from_site_b(fx.one, 1), CUS_ERROR_INVALID_ARGUMENT,
                       "one: argument 1 is 8 bytes, the kernel's parameter is 4");
        assert_ok(launch_one_from_site_a(fx.one, 7));
    }
    /* site a with functions of other layouts: each checked on its own */
    for (int i = 0; i < 3; i++) {
        assert_refused(launch_one_from_site_a(fx.axpy, 1), CUS_ERROR_INVALID_ARGUMENT,
                       "axpy: 1 argument given, the kernel takes 4");
        assert_refused(launch_one_from_site_a(fx.bounded, 1), CUS_ERROR_INVALID_ARGUMENT,
                       "bounded: argument 1 is 4 bytes, the kernel's parameter is 8");
        assert_ok(launch_one_from_site_a(fx.one, 8));
    }
    /* site b suits bounded (8 bytes) */
    assert_ok(launch_one_from_site_b(fx.bounded, 0));
    assert_ok(launch_one_from_site_b(fx.bounded, 0));
    assert_refused(launch_one_from_site_b(fx.one, 1), CUS_ERROR_INVALID_ARGUMENT, "argument 1");
    /* the same for cus_launch_ex */
    cus_launch_config cfg = {.grid = {2, 1, 1}, .block = {1, 1, 1}, .cluster = {2, 1, 1}};
    for (unsigned int i = 0; i < 3; i++) {
        unsigned long calls = cus_fake_call_count();
        assert_ok(cus_launch_ex(fx.one, &cfg, i));
        assert_calls_since(calls, "cuLaunchKernelEx");
        assert_memory_equal(last_launch().args, &i, 4);
    }
    /* a checked site still goes through every other check */
    cus_context *other = new_ctx();
    cus_stream *s = new_stream(other, 0);
    assert_refused(cus_launch(fx.one, 1, 1, 0, s, 1u), CUS_ERROR_CONTEXT_MISMATCH, "belongs");
    s = cus_stream_unref(s);
    other = cus_context_unref(other);
    assert_ok(cus_context_pop(NULL));
    unsigned long calls = cus_fake_call_count();
    assert_ok(launch_one_from_site_a(fx.one, 9)); /* not current now: the slow path */
    assert_calls_since(calls, "cuCtxPushCurrent", "cuLaunchKernel", "cuCtxPopCurrent");
    close_fixture(&fx);
    c = cus_context_unref(c);
}

/* Regression: include/cuscope/launch.h (CUS_PACK_1_): the macros once passed
 * sizes = NULL when they are given no kernel argument, and NULL means "no
 * check" (lib/launch.c:44 sizes_ok, :147 fast_path), so cus_launch(fn, g, b,
 * 0, stream) of a kernel that takes parameters is not refused with "0
 * arguments given, the kernel takes N" as launch.h promises: it reaches the
 * driver with kernelParams = NULL (the fake answers CUDA_ERROR_INVALID_VALUE;
 * a real driver may read garbage). The same for cus_launch_ex(fn, &cfg).
 * Suggested fix: CUS_PACK_1_ passes a non-NULL sizes array (e.g. a static
 * const size_t[1] that nargs = 0 never reads), so that the count is checked.
 * This test fails until then. */
static void test_zero_arguments_are_checked(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    fixture fx = open_fixture(c);
    cus_launch_config cfg = {.grid = {1, 1, 1}, .block = {1, 1, 1}};
    unsigned long calls = cus_fake_call_count();
    cus_status st = cus_launch(fx.one, 1, 1, 0, NULL);
    char msg[512];
    snprintf(msg, sizeof msg, "%s", cus_last_error_message());
    cus_status st_ex = cus_launch_ex(fx.one, &cfg);
    char msg_ex[512];
    snprintf(msg_ex, sizeof msg_ex, "%s", cus_last_error_message());
    unsigned long made = cus_fake_call_count() - calls;
    close_fixture(&fx);
    c = cus_context_unref(c);
    if (st != CUS_ERROR_INVALID_ARGUMENT || !strstr(msg, "one: 0 arguments given, the kernel takes 1"))
        fail_msg("cus_launch of one(u32) with no argument -> "
                 "%s (%s)", cus_status_name(st), msg);
    if (st_ex != CUS_ERROR_INVALID_ARGUMENT || made != 0)
        fail_msg("cus_launch_ex of one(u32) with no argument -> "
                 "%s (%s), %lu driver calls", cus_status_name(st_ex), msg_ex, made);
}

/* The driver's own checks of the configuration surface as its status. */
static void test_launch_configurations_the_driver_refuses(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    fixture fx = open_fixture(c);
    struct {
        cus_function *fn;
        cus_dim3 grid, block;
        unsigned int shared;
    } cases[] = {
        {fx.noargs, {0, 1, 1}, {1, 1, 1}, 0},          /* an empty grid */
        {fx.noargs, {1, 1, 1}, {1, 0, 1}, 0},          /* an empty block */
        {fx.noargs, {1, 1, 1}, {2048, 1, 1}, 0},       /* more than 1024 threads */
        {fx.noargs, {1, 1, 1}, {32, 32, 2}, 0},
        {fx.noargs, {1, 1, 1}, {1, 1, 128}, 0},        /* z above 64 */
        {fx.noargs, {1, 65536, 1}, {1, 1, 1}, 0},      /* y above 65535 */
        {fx.noargs, {1, 1, 1}, {1, 1, 1}, 49153},      /* above 48 KiB without opting in */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        leak_snap before = leak_snap_now();
        unsigned long launches = cus_fake_launch_count();
        cus_status st = cus_function_launch(cases[i].fn, cases[i].grid, cases[i].block,
                                            cases[i].shared, NULL, 0, NULL, NULL);
        if (st != CU(CUDA_ERROR_INVALID_VALUE))
            fail_msg("case %zu: %s (%s)", i, cus_status_name(st), cus_last_error_message());
        assert_string_equal(cus_last_error()->driver_call, "cuLaunchKernel");
        assert_contains(cus_last_error_message(), "cuLaunchKernel failed with CUDA_ERROR_INVALID_VALUE");
        assert_int_equal(cus_fake_launch_count(), launches);
        assert_nothing_changed(before);
    }
    /* the function's own limit: .maxntid 128 */
    assert_status(cus_launch(fx.bounded, 1, 256, 0, NULL, (CUdeviceptr)0), CUDA_ERROR_INVALID_VALUE);
    assert_ok(cus_launch(fx.bounded, 1, 128, 0, NULL, (CUdeviceptr)0));
    /* more parameter bytes than the fake takes (the driver's limit is higher) */
    struct {
        unsigned char b[5000];
    } big;
    memset(&big, 0, sizeof big);
    assert_status(cus_launch(fx.big, 1, 1, 0, NULL, big), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cus_context_poisoned(c), CUS_SUCCESS); /* not sticky */
    close_fixture(&fx);
    c = cus_context_unref(c);
}

/* --- host functions ----------------------------------------------------------------------- */

typedef struct host_launch {
    fixture *fx;
    cus_status launch, launch_ex, explicit_launch, attribute, set_attribute, cache, shared_config,
        max_dynamic, max_block, max_active;
    int ran;
} host_launch;

static void launch_in_host(void *arg)
{
    host_launch *h = arg;
    cus_launch_config cfg = {.grid = {1, 1, 1}, .block = {1, 1, 1}};
    int v = 0;
    h->launch = cus_launch(h->fx->one, 1, 1, 0, NULL, 1);
    h->launch_ex = cus_launch_ex(h->fx->one, &cfg, 1);
    h->explicit_launch = cus_function_launch(h->fx->noargs, CUS_DIM3(1, 1, 1), CUS_DIM3(1, 1, 1), 0,
                                             NULL, 0, NULL, NULL);
    h->attribute = cus_function_attribute(h->fx->one, CU_FUNC_ATTRIBUTE_NUM_REGS, &v);
    h->set_attribute = cus_function_set_attribute(h->fx->one,
                                                  CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, 50);
    h->cache = cus_function_set_cache_config(h->fx->one, CU_FUNC_CACHE_PREFER_L1);
    h->shared_config = cus_function_set_shared_mem_config(h->fx->one,
                                                          CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE);
    h->max_dynamic = cus_function_set_max_dynamic_shared(h->fx->one, 1024);
    h->max_block = cus_function_max_potential_block(h->fx->one, 0, 0, &v, &v);
    h->max_active = cus_function_max_active_blocks(h->fx->one, 32, 0, &v);
    h->ran++;
}

static void test_refused_inside_a_host_function(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    fixture fx = open_fixture(c);
    cus_stream *s = new_stream(c, 0);
    host_launch h = {.fx = &fx};
    unsigned long calls_of_fn = cus_fake_calls_of("cuFuncGetAttribute") +
                                cus_fake_calls_of("cuFuncSetAttribute") +
                                cus_fake_calls_of("cuLaunchKernel") +
                                cus_fake_calls_of("cuLaunchKernelEx");
    assert_ok(cus_stream_launch_host_fn(s, launch_in_host, &h));
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(h.ran, 1);
    const cus_status H = CUS_ERROR_IN_HOST_FUNCTION;
    assert_int_equal(h.launch, H);
    assert_int_equal(h.launch_ex, H);
    assert_int_equal(h.explicit_launch, H);
    assert_int_equal(h.attribute, H);
    assert_int_equal(h.set_attribute, H);
    assert_int_equal(h.cache, H);
    assert_int_equal(h.shared_config, H);
    assert_int_equal(h.max_dynamic, H);
    assert_int_equal(h.max_block, H);
    assert_int_equal(h.max_active, H);
    assert_int_equal(cus_fake_launch_count(), 0);
    assert_int_equal(cus_fake_calls_of("cuFuncGetAttribute") +
                         cus_fake_calls_of("cuFuncSetAttribute") +
                         cus_fake_calls_of("cuLaunchKernel") + cus_fake_calls_of("cuLaunchKernelEx"),
                     calls_of_fn);
    assert_int_equal(cus_fake_misuse_count(), 0);
    s = cus_stream_unref(s);
    close_fixture(&fx);
    c = cus_context_unref(c);
}

/* A last reference dropped inside a host function is released by the next
 * launch (which then takes its full path), before the launch itself. */
static void drop_in_host(void *arg)
{
    cus_module **m = arg;
    *m = cus_module_unref(*m);
}

static void test_launch_releases_what_host_functions_dropped(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    fixture fx = open_fixture(c);
    cus_stream *s = new_stream(c, 0);
    cus_module *extra = NULL;
    assert_ok(cus_module_load_data(c, ptx_src, 0, NULL, &extra));
    assert_ok(cus_stream_launch_host_fn(s, drop_in_host, &extra));
    cus_fake_run_streams(); /* the host function runs: no cuscope call to release after it */
    assert_null(extra);
    assert_int_equal(cus_fake_calls_of("cuModuleUnload"), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 2);
    assert_ok(cus_context_push(c));
    unsigned long calls = cus_fake_call_count();
    assert_ok(cus_launch(fx.one, 1, 1, 0, NULL, 3));
    assert_calls_since(calls, "cuModuleUnload", "cuLaunchKernel");
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 1);
    /* and the fast path is back */
    calls = cus_fake_call_count();
    assert_ok(cus_launch(fx.one, 1, 1, 0, NULL, 3));
    assert_calls_since(calls, "cuLaunchKernel");
    assert_ok(cus_context_pop(NULL));
    s = cus_stream_unref(s);
    close_fixture(&fx);
    c = cus_context_unref(c);
}

/* The macro's limit: 63 arguments. */
static void test_launch_63_arguments(void **state)
{
    (void)state;
    char ptx[4096];
    size_t n = (size_t)snprintf(ptx, sizeof ptx,
                                ".version 8.0\n.target sm_80\n.address_size 64\n"
                                ".visible .entry many(\n");
    for (int i = 0; i < 63; i++)
        n += (size_t)snprintf(ptx + n, sizeof ptx - n, "\t.param .u32 many_%d%s\n", i,
                              i < 62 ? "," : "");
    snprintf(ptx + n, sizeof ptx - n, ")\n{\n\tret;\n}\n");
    cus_context *c = new_primary();
    cus_module *m = NULL;
    assert_ok(cus_module_load_data(c, ptx, 0, NULL, &m));
    cus_function *f = get_fn(m, "many");
    assert_int_equal(cus_function_param_count(f), 63);
    assert_ok(cus_launch(f, 1, 1, 0, NULL, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
                         16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34,
                         35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53,
                         54, 55, 56, 57, 58, 59, 60, 61, 62));
    cus_fake_launch rec = last_launch();
    assert_int_equal(rec.nargs, 63);
    assert_int_equal(rec.arg_bytes, 63 * 4);
    for (int i = 0; i < 63; i++) {
        int v = -1;
        memcpy(&v, rec.args + 4 * i, 4);
        assert_int_equal(v, i);
    }
    assert_refused(cus_launch(f, 1, 1, 0, NULL, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
                              15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31,
                              32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48,
                              49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62ull),
                   CUS_ERROR_INVALID_ARGUMENT, "many: argument 63 is 8 bytes");
    f = cus_function_unref(f);
    m = cus_module_unref(m);
    c = cus_context_unref(c);
}

/* --- extended launches -------------------------------------------------------------------- */

static void test_launch_ex(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    fixture fx = open_fixture(c);
    cus_stream *s = new_stream(c, 0);
    twin_log log = {0};
    assert_ok(cus_fake_register_kernel("one", one_twin, &log));
    assert_ok(cus_context_push(c));
    /* clusters: zeros in y and z are 1 */
    cus_launch_config cfg = {.grid = {4, 2, 1}, .block = {64, 1, 1}, .shared_bytes = 256,
                             .stream = s, .cluster = {2, 0, 0}};
    unsigned long calls = cus_fake_call_count();
    assert_ok(cus_launch_ex(fx.one, &cfg, 77u));
    assert_calls_since(calls, "cuLaunchKernelEx"); /* current: one call */
    cus_fake_launch rec = last_launch();
    assert_true(rec.extended);
    assert_false(rec.cooperative);
    assert_dims(rec.grid, 4, 2, 1);
    assert_dims(rec.block, 64, 1, 1);
    assert_dims(rec.cluster, 2, 1, 1);
    assert_int_equal(rec.shared_bytes, 256);
    assert_ptr_equal(rec.stream, cus_stream_handle(s));
    unsigned int v = 77;
    assert_memory_equal(rec.args, &v, 4);
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(log.runs, 1);
    assert_int_equal(log.one_value, 77);
    /* a full cluster shape */
    cfg.cluster = CUS_DIM3(2, 2, 1);
    assert_ok(cus_launch_ex(fx.one, &cfg, 78u));
    assert_dims(last_launch().cluster, 2, 2, 1);
    /* cooperative */
    cfg = (cus_launch_config){.grid = {4, 1, 1}, .block = {32, 1, 1}, .cooperative = true};
    assert_ok(cus_launch_ex(fx.noargs, &cfg));
    rec = last_launch();
    assert_true(rec.extended);
    assert_true(rec.cooperative);
    assert_dims(rec.cluster, 0, 0, 0);
    assert_null(rec.stream);
    assert_int_equal(rec.nargs, 0);
    /* both */
    cfg.cluster = CUS_DIM3(2, 1, 1);
    assert_ok(cus_launch_ex(fx.noargs, &cfg));
    rec = last_launch();
    assert_true(rec.cooperative);
    assert_dims(rec.cluster, 2, 1, 1);
    /* neither: a plain launch through cuLaunchKernelEx */
    cfg = (cus_launch_config){.grid = {1, 1, 1}, .block = {1, 1, 1}};
    assert_ok(cus_launch_ex(fx.axpy, &cfg, 1.0f, (CUdeviceptr)0, (CUdeviceptr)0, 0ull));
    rec = last_launch();
    assert_true(rec.extended);
    assert_false(rec.cooperative);
    assert_dims(rec.cluster, 0, 0, 0);
    assert_int_equal(rec.arg_bytes, 32);
    /* the explicit form */
    void *args[] = {&v};
    const size_t sizes[] = {4};
    assert_ok(cus_function_launch_ex(fx.one, &cfg, 1, args, sizes));
    assert_memory_equal(last_launch().args, &v, 4);
    assert_ok(cus_context_pop(NULL));
    /* not current: made current for the call, the stack restored */
    stack_snap before = snap();
    calls = cus_fake_call_count();
    assert_ok(cus_launch_ex(fx.one, &cfg, 79u));
    assert_calls_since(calls, "cuCtxPushCurrent", "cuLaunchKernelEx", "cuCtxPopCurrent");
    assert_stack_unchanged(before);
    assert_ok(cus_stream_synchronize(s));
    s = cus_stream_unref(s);
    close_fixture(&fx);
    c = cus_context_unref(c);
}

static void test_launch_ex_refusals(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    fixture fx = open_fixture(c);
    cus_launch_config cfg = {.grid = {1, 1, 1}, .block = {1, 1, 1}};
    const cus_status E = CUS_ERROR_INVALID_ARGUMENT;
    assert_refused(cus_launch_ex(fx.one, NULL, 1), E, "no launch configuration");
    assert_string_equal(cus_last_error()->function, "cus_launch_ex");
    assert_refused(cus_launch_ex(fx.one, &cfg, 1ull), E,
                   "one: argument 1 is 8 bytes, the kernel's parameter is 4");
    assert_refused(cus_launch_ex((cus_function *)NULL, &cfg), E, "no function");
    assert_refused(cus_function_launch_ex(fx.one, &cfg, 1, NULL, NULL), E, "arguments missing");
    /* what the driver refuses: its status */
    leak_snap before = leak_snap_now();
    cfg = (cus_launch_config){.grid = {3, 1, 1}, .block = {32, 1, 1}, .cluster = {2, 1, 1}};
    assert_status(cus_launch_ex(fx.noargs, &cfg), CUDA_ERROR_INVALID_CLUSTER_SIZE);
    assert_string_equal(cus_last_error()->driver_call, "cuLaunchKernelEx");
    cfg.cluster = CUS_DIM3(16, 1, 1); /* more than 8 blocks, not opted in */
    cfg.grid = CUS_DIM3(16, 1, 1);
    assert_status(cus_launch_ex(fx.noargs, &cfg), CUDA_ERROR_INVALID_CLUSTER_SIZE);
    cfg = (cus_launch_config){.grid = {100000, 1, 1}, .block = {1024, 1, 1}, .cooperative = true};
    assert_status(cus_launch_ex(fx.noargs, &cfg), CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
    assert_contains(cus_last_error_message(), "cuLaunchKernelEx");
    cfg = (cus_launch_config){.grid = {0, 1, 1}, .block = {1, 1, 1}};
    assert_status(cus_launch_ex(fx.noargs, &cfg), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cus_fake_launch_count(), 0);
    assert_nothing_changed(before);
    assert_int_equal(cus_context_poisoned(c), CUS_SUCCESS);
    close_fixture(&fx);
    c = cus_context_unref(c);
}

static void test_launch_ex_faults(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    fixture fx = open_fixture(c);
    cus_launch_config cfg = {.grid = {2, 1, 1}, .block = {1, 1, 1}, .cluster = {2, 1, 1}};
    assert_fault_named("cuCtxPushCurrent", cus_launch_ex(fx.one, &cfg, 1));
    assert_fault_named("cuLaunchKernelEx", cus_launch_ex(fx.one, &cfg, 1));
    assert_string_equal(cus_last_error()->function, "cus_launch_ex");
    assert_pop_fault_reported("cus_launch_ex", cus_launch_ex(fx.one, &cfg, 1));
    assert_ok(cus_context_push(c));
    assert_fault_named("cuLaunchKernelEx", cus_launch_ex(fx.one, &cfg, 1));
    assert_ok(cus_context_pop(NULL));
    /* a sticky failure of the launch itself poisons */
    assert_ok(cus_fake_fail_entry("cuLaunchKernelEx", 1, CUDA_ERROR_LAUNCH_FAILED, false));
    assert_status(cus_launch_ex(fx.one, &cfg, 1), CUDA_ERROR_LAUNCH_FAILED);
    cus_fake_clear_faults();
    assert_contains(cus_last_error_message(), "now poisoned");
    assert_int_equal(cus_context_poisoned(c), CUDA_ERROR_LAUNCH_FAILED);
    assert_refused(cus_launch_ex(fx.one, &cfg, 1), CUDA_ERROR_LAUNCH_FAILED, "poisoned");
    close_fixture(&fx);
    c = cus_context_unref(c);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
}

static void test_launch_ex_not_supported(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    fixture fx = open_fixture(c);
    cus_launch_config cfg = {.grid = {2, 1, 1}, .block = {1, 1, 1}, .cluster = {2, 1, 1}};
    assert_refused(cus_launch_ex(fx.one, &cfg, 1), CUS_ERROR_NOT_SUPPORTED,
                   "the driver has no cuLaunchKernelEx (needs 11.8)");
    assert_string_equal(cus_last_error()->function, "cus_launch_ex");
    assert_string_equal(cus_last_error()->driver_call, "cuLaunchKernelEx");
    /* the argument checks come first */
    assert_refused(cus_launch_ex(fx.one, &cfg, 1, 2), CUS_ERROR_INVALID_ARGUMENT, "2 arguments given");
    /* plain launches are unaffected */
    assert_ok(cus_launch(fx.one, 2, 1, 0, NULL, 1));
    assert_false(last_launch().extended);
    close_fixture(&fx);
    c = cus_context_unref(c);
}

/* --- older drivers: launches go unchecked ------------------------------------------------ */

static void check_unchecked_launches(void)
{
    cus_context *c = new_primary();
    fixture fx = open_fixture(c);
    assert_false(cus_function_layout_known(fx.one));
    assert_false(cus_function_layout_known(fx.axpy));
    twin_log log = {0};
    assert_ok(cus_fake_register_kernel("one", one_twin, &log));
    /* right: it works */
    assert_ok(cus_launch(fx.one, 1, 1, 0, NULL, 5u));
    unsigned int five = 5;
    assert_memory_equal(last_launch().args, &five, 4);
    /* 8 bytes for a 4-byte parameter: not checked, the driver takes 4 */
    assert_ok(cus_launch(fx.one, 1, 1, 0, NULL, 0x1122334400000006ull));
    unsigned int six = 6;
    assert_memory_equal(last_launch().args, &six, 4);
    /* and more arguments than parameters: the driver reads what it needs */
    assert_ok(cus_launch(fx.one, 1, 1, 0, NULL, 7u, 8u, 9u));
    assert_ok(cus_context_synchronize(c));
    assert_int_equal(log.runs, 3);
    assert_int_equal(log.one_value, 7);
    /* axpy computes as before */
    assert_ok(cus_fake_register_kernel("axpy", axpy_twin, NULL));
    float x[4] = {1, 2, 3, 4}, y[4] = {10, 20, 30, 40};
    cus_buffer *bx = NULL, *by = NULL;
    assert_ok(cus_buffer_alloc(c, sizeof x, &bx));
    assert_ok(cus_buffer_alloc(c, sizeof y, &by));
    assert_ok(cus_copy_to_device(bx, 0, x, sizeof x));
    assert_ok(cus_copy_to_device(by, 0, y, sizeof y));
    assert_ok(cus_launch(fx.axpy, 1, 4, 0, NULL, 3.0f, bx, by, 4ull));
    assert_ok(cus_copy_to_host(y, by, 0, sizeof y));
    for (int i = 0; i < 4; i++)
        assert_float_equal(y[i], 10.0f * (float)(i + 1) + 3.0f * (float)(i + 1), 0);
    bx = cus_buffer_unref(bx);
    by = cus_buffer_unref(by);
    close_fixture(&fx);
    c = cus_context_unref(c);
    /* log is going out of scope */
    assert_ok(cus_fake_register_kernel("one", NULL, NULL));
}

static void test_unchecked_without_param_info(void **state)
{
    (void)state;
    check_unchecked_launches();
}

static void test_unchecked_on_a_12000_driver(void **state)
{
    (void)state;
    check_unchecked_launches();
    /* cuLaunchKernelEx is there (11.8) */
    cus_context *c = new_primary();
    fixture fx = open_fixture(c);
    cus_launch_config cfg = {.grid = {2, 1, 1}, .block = {1, 1, 1}, .cluster = {2, 1, 1}};
    assert_ok(cus_launch_ex(fx.one, &cfg, 1));
    assert_true(last_launch().extended);
    close_fixture(&fx);
    c = cus_context_unref(c);
}

/* --- sticky errors ------------------------------------------------------------------------ */

static void test_a_faulting_kernel_poisons_the_context(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    fixture fx = open_fixture(c);
    cus_stream *s = new_stream(c, 0);
    cus_buffer *b = NULL;
    assert_ok(cus_buffer_alloc(c, 64, &b));
    int runs = 0;
    assert_ok(cus_fake_register_kernel("boom", boom_twin, &runs));
    twin_log log = {0};
    assert_ok(cus_fake_register_kernel("one", one_twin, &log));
    /* the launch succeeds; the fault comes with the synchronization */
    assert_ok(cus_launch(fx.boom, 1, 1, 0, s, (CUdeviceptr)0x10));
    assert_ok(cus_launch(fx.one, 1, 1, 0, s, 1)); /* queued after the fault: skipped */
    assert_int_equal(cus_context_poisoned(c), CUS_SUCCESS);
    assert_status(cus_stream_synchronize(s), CUDA_ERROR_ILLEGAL_ADDRESS);
    assert_int_equal(runs, 1);
    assert_int_equal(log.runs, 0);
    assert_int_equal(cus_context_poisoned(c), CUDA_ERROR_ILLEGAL_ADDRESS);
    assert_contains(cus_last_error_message(), "poisoned");
    /* from now on every call on the context fails fast, without the driver */
    unsigned long calls = cus_fake_call_count();
    const cus_status P = CUDA_ERROR_ILLEGAL_ADDRESS;
    cus_launch_config cfg = {.grid = {1, 1, 1}, .block = {1, 1, 1}};
    int v = 0;
    assert_status(cus_launch(fx.one, 1, 1, 0, NULL, 1), P);
    assert_contains(cus_last_error_message(),
                    "is poisoned by an earlier CUDA_ERROR_ILLEGAL_ADDRESS; no driver call was made");
    assert_string_equal(cus_last_error()->function, "cus_launch");
    assert_status(cus_launch(fx.one, 1, 1, 0, s, 1), P);
    assert_status(cus_launch_ex(fx.one, &cfg, 1), P);
    assert_string_equal(cus_last_error()->function, "cus_launch_ex");
    assert_status(cus_launch(fx.one, 1, 1, 0, NULL, 1ull), P); /* before the argument check */
    assert_status(cus_function_attribute(fx.one, CU_FUNC_ATTRIBUTE_NUM_REGS, &v), P);
    assert_status(cus_function_set_attribute(fx.one,
                                             CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, 1),
                  P);
    assert_status(cus_function_set_max_dynamic_shared(fx.one, 1024), P);
    assert_status(cus_function_set_cache_config(fx.one, CU_FUNC_CACHE_PREFER_L1), P);
    assert_status(cus_function_set_shared_mem_config(fx.one, CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE),
                  P);
    assert_status(cus_function_max_potential_block(fx.one, 0, 0, &v, &v), P);
    assert_status(cus_function_max_active_blocks(fx.one, 32, 0, &v), P);
    cus_function *f = SENTINEL_PTR(f);
    assert_status(cus_module_get_function(fx.mod, "one", &f), P); /* even a cached name */
    assert_ptr_equal(f, SENTINEL_PTR(f));
    assert_status(cus_module_get_global(fx.mod, "x", NULL, NULL), P);
    cus_module *m = SENTINEL_PTR(m);
    assert_status(cus_module_load_data(c, ptx_src, 0, NULL, &m), P);
    assert_ptr_equal(m, SENTINEL_PTR(m));
    assert_no_calls_since(calls);
    assert_int_equal(cus_fake_launch_count(), 2);
    /* the getters still answer */
    assert_true(cus_function_layout_known(fx.one));
    assert_string_equal(cus_function_name(fx.one), "one");
    /* everything still frees, and nothing is unloaded in a dead context */
    unsigned long unloads = cus_fake_calls_of("cuModuleUnload");
    b = cus_buffer_unref(b);
    s = cus_stream_unref(s);
    close_fixture(&fx);
    assert_int_equal(cus_fake_calls_of("cuModuleUnload"), unloads);
    c = cus_context_unref(c);
    assert_int_equal(cus_debug_live_objects(), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
}

/* A sticky status from the launch call itself (the driver found the context
 * dead) poisons as well. */
static void test_a_sticky_launch_failure_poisons(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    fixture fx = open_fixture(c);
    assert_ok(cus_context_push(c));
    assert_ok(cus_fake_fail_entry("cuLaunchKernel", 1, CUDA_ERROR_LAUNCH_FAILED, false));
    assert_status(cus_launch(fx.one, 1, 1, 0, NULL, 1), CUDA_ERROR_LAUNCH_FAILED);
    cus_fake_clear_faults();
    assert_string_equal(cus_last_error()->driver_call, "cuLaunchKernel");
    assert_contains(cus_last_error_message(), "now poisoned");
    assert_int_equal(cus_context_poisoned(c), CUDA_ERROR_LAUNCH_FAILED);
    assert_refused(cus_launch(fx.one, 1, 1, 0, NULL, 1), CUDA_ERROR_LAUNCH_FAILED, "poisoned");
    assert_ok(cus_context_pop(NULL));
    /* the slow path's launch, too */
    cus_context *c2 = new_ctx();
    fixture fx2 = open_fixture(c2);
    assert_ok(cus_fake_fail_entry("cuLaunchKernel", 1, CUDA_ERROR_ILLEGAL_INSTRUCTION, false));
    stack_snap before = snap();
    assert_status(cus_launch(fx2.one, 1, 1, 0, NULL, 1), CUDA_ERROR_ILLEGAL_INSTRUCTION);
    cus_fake_clear_faults();
    assert_stack_unchanged(before);
    assert_int_equal(cus_context_poisoned(c2), CUDA_ERROR_ILLEGAL_INSTRUCTION);
    assert_int_equal(cus_context_poisoned(c), CUDA_ERROR_LAUNCH_FAILED); /* its own */
    close_fixture(&fx);
    close_fixture(&fx2);
    c = cus_context_unref(c);
    c2 = cus_context_unref(c2);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
}

/* A primary context poisoned by a kernel is reset by its last release: a new
 * retain starts healthy. */
static void test_a_poisoned_primary_context_is_reset(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    fixture fx = open_fixture(c);
    int runs = 0;
    assert_ok(cus_fake_register_kernel("boom", boom_twin, &runs));
    assert_ok(cus_launch(fx.boom, 1, 1, 0, NULL, (CUdeviceptr)0));
    assert_status(cus_context_synchronize(c), CUDA_ERROR_ILLEGAL_ADDRESS);
    assert_int_equal(cus_context_poisoned(c), CUDA_ERROR_ILLEGAL_ADDRESS);
    close_fixture(&fx);
    c = cus_context_unref(c);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
    c = new_primary();
    assert_int_equal(cus_context_poisoned(c), CUS_SUCCESS);
    fx = open_fixture(c);
    assert_ok(cus_launch(fx.one, 1, 1, 0, NULL, 1));
    assert_ok(cus_context_synchronize(c));
    close_fixture(&fx);
    c = cus_context_unref(c);
}

/* --- function attributes and configuration ------------------------------------------------ */

static void test_function_attributes(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    fixture fx = open_fixture(c);
    stack_snap before = snap();
    unsigned long calls = cus_fake_call_count();
    assert_int_equal(fn_attr(fx.one, CU_FUNC_ATTRIBUTE_NUM_REGS), 32);
    assert_calls_since(calls, "cuFuncGetAttribute"); /* no context needed */
    assert_stack_unchanged(before);
    assert_int_equal(fn_attr(fx.one, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK), 1024);
    assert_int_equal(fn_attr(fx.bounded, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK), 128);
    assert_int_equal(fn_attr(fx.one, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES), 0);
    assert_int_equal(fn_attr(fx.bounded, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES), 1024);
    assert_int_equal(fn_attr(fx.one, CU_FUNC_ATTRIBUTE_PTX_VERSION), 80);
    assert_int_equal(fn_attr(fx.one, CU_FUNC_ATTRIBUTE_BINARY_VERSION), 90);
    assert_int_equal(fn_attr(fx.one, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES), 49152);
    /* an attribute the driver does not know: its status, the value untouched */
    int v = 1234;
    leak_snap snap0 = leak_snap_now();
    assert_status(cus_function_attribute(fx.one, (CUfunction_attribute)99, &v),
                  CUDA_ERROR_INVALID_VALUE);
    assert_string_equal(cus_last_error()->driver_call, "cuFuncGetAttribute");
    assert_string_equal(cus_last_error()->function, "cus_function_attribute");
    assert_int_equal(v, 1234);
    assert_nothing_changed(snap0);
    assert_int_equal(cus_context_poisoned(c), CUS_SUCCESS);
    /* NULLs */
    calls = cus_fake_call_count();
    assert_status(cus_function_attribute(NULL, CU_FUNC_ATTRIBUTE_NUM_REGS, &v),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_function_attribute(fx.one, CU_FUNC_ATTRIBUTE_NUM_REGS, NULL),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_function_set_attribute(NULL, CU_FUNC_ATTRIBUTE_NUM_REGS, 1),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_function_set_max_dynamic_shared(NULL, 1), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_function_set_cache_config(NULL, CU_FUNC_CACHE_PREFER_L1),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_function_set_shared_mem_config(NULL, CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_function_max_potential_block(NULL, 0, 0, &v, &v), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_function_max_active_blocks(NULL, 32, 0, &v), CUS_ERROR_INVALID_ARGUMENT);
    assert_no_calls_since(calls);
    assert_int_equal(v, 1234);
    close_fixture(&fx);
    c = cus_context_unref(c);
}

static void test_function_set_attribute_and_configs(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    fixture fx = open_fixture(c);
    const CUfunction_attribute carve = CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT;
    unsigned long calls = cus_fake_call_count();
    assert_ok(cus_function_set_attribute(fx.one, carve, 50));
    assert_calls_since(calls, "cuFuncSetAttribute");
    assert_int_equal(fn_attr(fx.one, carve), 50);
    assert_int_equal(fn_attr(fx.axpy, carve), -1); /* per function */
    /* read-only, or out of range: the driver's status */
    assert_status(cus_function_set_attribute(fx.one, CU_FUNC_ATTRIBUTE_NUM_REGS, 8),
                  CUDA_ERROR_INVALID_VALUE);
    assert_string_equal(cus_last_error()->driver_call, "cuFuncSetAttribute");
    assert_status(cus_function_set_attribute(fx.one, carve, 101), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(fn_attr(fx.one, carve), 50);
    /* cache config */
    calls = cus_fake_call_count();
    assert_ok(cus_function_set_cache_config(fx.one, CU_FUNC_CACHE_PREFER_SHARED));
    assert_calls_since(calls, "cuFuncSetCacheConfig");
    assert_ok(cus_function_set_cache_config(fx.one, CU_FUNC_CACHE_PREFER_EQUAL));
    assert_status(cus_function_set_cache_config(fx.one, (CUfunc_cache)99), CUDA_ERROR_INVALID_VALUE);
    assert_string_equal(cus_last_error()->driver_call, "cuFuncSetCacheConfig");
    /* shared memory banks */
    calls = cus_fake_call_count();
    assert_ok(cus_function_set_shared_mem_config(fx.one, CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE));
    assert_calls_since(calls, "cuFuncSetSharedMemConfig");
    assert_status(cus_function_set_shared_mem_config(fx.one, (CUsharedconfig)7),
                  CUDA_ERROR_INVALID_VALUE);
    assert_string_equal(cus_last_error()->driver_call, "cuFuncSetSharedMemConfig");
    assert_int_equal(cus_context_poisoned(c), CUS_SUCCESS);
    close_fixture(&fx);
    c = cus_context_unref(c);
}

static void test_shared_mem_config_not_supported(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    fixture fx = open_fixture(c);
    assert_refused(cus_function_set_shared_mem_config(fx.one, CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE),
                   CUS_ERROR_NOT_SUPPORTED, "the driver no longer has cuFuncSetSharedMemConfig");
    assert_string_equal(cus_last_error()->driver_call, "cuFuncSetSharedMemConfig");
    assert_ok(cus_function_set_cache_config(fx.one, CU_FUNC_CACHE_PREFER_L1));
    close_fixture(&fx);
    c = cus_context_unref(c);
}

static void test_max_dynamic_shared(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    fixture fx = open_fixture(c);
    const CUfunction_attribute dyn = CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
    /* above 48 KiB needs the opt-in */
    assert_status(cus_launch(fx.one, 1, 1, 100000, NULL, 1), CUDA_ERROR_INVALID_VALUE);
    unsigned long calls = cus_fake_call_count();
    assert_ok(cus_function_set_max_dynamic_shared(fx.one, 100000));
    assert_calls_since(calls, "cuFuncSetAttribute");
    assert_int_equal(fn_attr(fx.one, dyn), 100000);
    assert_ok(cus_launch(fx.one, 1, 1, 100000, NULL, 1));
    assert_int_equal(last_launch().shared_bytes, 100000);
    assert_status(cus_launch(fx.one, 1, 1, 100001, NULL, 1), CUDA_ERROR_INVALID_VALUE);
    /* the device's opt-in limit (227 KiB), less the static shared memory */
    assert_ok(cus_function_set_max_dynamic_shared(fx.one, 232448));
    assert_status(cus_function_set_max_dynamic_shared(fx.one, 232449), CUDA_ERROR_INVALID_VALUE);
    assert_string_equal(cus_last_error()->driver_call, "cuFuncSetAttribute");
    assert_string_equal(cus_last_error()->function, "cus_function_set_max_dynamic_shared");
    assert_status(cus_function_set_max_dynamic_shared(fx.bounded, 232448), CUDA_ERROR_INVALID_VALUE);
    assert_ok(cus_function_set_max_dynamic_shared(fx.bounded, 232448 - 1024));
    assert_ok(cus_function_set_max_dynamic_shared(fx.one, 0));
    assert_int_equal(fn_attr(fx.one, dyn), 0);
    /* what an int cannot hold: refused here */
    assert_refused(cus_function_set_max_dynamic_shared(fx.one, (size_t)INT32_MAX + 1),
                   CUS_ERROR_OUT_OF_RANGE, "2147483648 bytes of dynamic shared memory");
    assert_refused(cus_function_set_max_dynamic_shared(fx.one, SIZE_MAX), CUS_ERROR_OUT_OF_RANGE,
                   "bytes of dynamic shared memory");
    assert_int_equal(fn_attr(fx.one, dyn), 0);
    close_fixture(&fx);
    c = cus_context_unref(c);
}

static void test_occupancy(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    fixture fx = open_fixture(c);
    stack_snap before = snap();
    /* 32 registers on a Hopper (132 SMs, 64 K registers, 2048 threads per
     * SM): 1024-thread blocks, two per SM */
    int min_grid = -1, block = -1;
    unsigned long calls = cus_fake_call_count();
    assert_ok(cus_function_max_potential_block(fx.one, 0, 0, &min_grid, &block));
    assert_calls_since(calls, "cuOccupancyMaxPotentialBlockSize");
    assert_stack_unchanged(before);
    assert_int_equal(block, 1024);
    assert_int_equal(min_grid, 2 * 132);
    /* a block limit, no min_grid wanted */
    block = -1;
    assert_ok(cus_function_max_potential_block(fx.one, 0, 128, NULL, &block));
    assert_int_equal(block, 128);
    /* the function's own limit */
    assert_ok(cus_function_max_potential_block(fx.bounded, 0, 0, &min_grid, &block));
    assert_int_equal(block, 128);
    assert_true(min_grid > 0);
    /* active blocks: 128 threads are 4 warps: 16 blocks fill the 64 warps */
    int n = -1;
    calls = cus_fake_call_count();
    assert_ok(cus_function_max_active_blocks(fx.one, 128, 0, &n));
    assert_calls_since(calls, "cuOccupancyMaxActiveBlocksPerMultiprocessor");
    assert_int_equal(n, 16);
    assert_ok(cus_function_max_active_blocks(fx.one, 1024, 0, &n));
    assert_int_equal(n, 2);
    /* more dynamic shared memory than the function allows: none fit */
    assert_ok(cus_function_max_active_blocks(fx.one, 128, 1 << 20, &n));
    assert_int_equal(n, 0);
    /* bad arguments: refused here */
    n = 5;
    block = 5;
    assert_refused(cus_function_max_potential_block(fx.one, 0, -1, &min_grid, &block),
                   CUS_ERROR_INVALID_ARGUMENT, "block_limit >= 0");
    assert_refused(cus_function_max_potential_block(fx.one, 0, 0, &min_grid, NULL),
                   CUS_ERROR_INVALID_ARGUMENT, "invalid argument");
    assert_refused(cus_function_max_active_blocks(fx.one, 0, 0, &n), CUS_ERROR_INVALID_ARGUMENT,
                   "block > 0");
    assert_refused(cus_function_max_active_blocks(fx.one, -32, 0, &n), CUS_ERROR_INVALID_ARGUMENT,
                   "block > 0");
    assert_refused(cus_function_max_active_blocks(fx.one, 32, 0, NULL), CUS_ERROR_INVALID_ARGUMENT,
                   "blocks");
    assert_int_equal(n, 5);
    assert_int_equal(block, 5);
    close_fixture(&fx);
    c = cus_context_unref(c);
}

static void test_function_faults(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    fixture fx = open_fixture(c);
    int v = 77, g = 77;
    assert_fault_named("cuFuncGetAttribute",
                       cus_function_attribute(fx.one, CU_FUNC_ATTRIBUTE_NUM_REGS, &v));
    assert_fault_named("cuFuncSetAttribute",
                       cus_function_set_attribute(
                           fx.one, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, 10));
    assert_fault_named("cuFuncSetAttribute", cus_function_set_max_dynamic_shared(fx.one, 1024));
    assert_fault_named("cuFuncSetCacheConfig",
                       cus_function_set_cache_config(fx.one, CU_FUNC_CACHE_PREFER_L1));
    assert_fault_named("cuFuncSetSharedMemConfig",
                       cus_function_set_shared_mem_config(fx.one,
                                                          CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE));
    assert_fault_named("cuOccupancyMaxPotentialBlockSize",
                       cus_function_max_potential_block(fx.one, 0, 0, &g, &v));
    assert_fault_named("cuOccupancyMaxActiveBlocksPerMultiprocessor",
                       cus_function_max_active_blocks(fx.one, 32, 0, &v));
    assert_int_equal(v, 77);
    assert_int_equal(g, 77);
    /* nothing was changed by the failed setters */
    assert_int_equal(fn_attr(fx.one, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT), -1);
    assert_int_equal(fn_attr(fx.one, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES), 49152);
    assert_int_equal(cus_context_poisoned(c), CUS_SUCCESS);
    /* a sticky failure of any of them poisons */
    assert_ok(cus_fake_fail_entry("cuFuncGetAttribute", 1, CUDA_ERROR_HARDWARE_STACK_ERROR, false));
    assert_status(cus_function_attribute(fx.one, CU_FUNC_ATTRIBUTE_NUM_REGS, &v),
                  CUDA_ERROR_HARDWARE_STACK_ERROR);
    cus_fake_clear_faults();
    assert_int_equal(cus_context_poisoned(c), CUDA_ERROR_HARDWARE_STACK_ERROR);
    assert_refused(cus_function_max_active_blocks(fx.one, 32, 0, &v),
                   CUDA_ERROR_HARDWARE_STACK_ERROR, "poisoned");
    close_fixture(&fx);
    c = cus_context_unref(c);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
}

/* --- the kernels of kernels/ -------------------------------------------------------------- */

#ifdef CUS_TEST_HAVE_KERNELS

static CUresult saxpy_twin(const cus_fake_launch *l, void **args, void *user)
{
    return axpy_twin(l, args, user); /* the same parameters */
}

/* The layouts nvcc wrote, from every form of the image. */
static void test_kernels_launch_checked_by_their_real_layout(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    const void *forms[3] = {cusk_saxpy.ptx, cusk_saxpy.fatbin, NULL};
    size_t sizes[3] = {cusk_saxpy.ptx_size + 1, cusk_saxpy.fatbin_size, 0};
    const cusk_cubin *c90 = cusk_cubin_for(&cusk_saxpy, 90);
    if (c90) {
        forms[2] = c90->data;
        sizes[2] = c90->size;
    }
    twin_log log = {0};
    for (int k = 0; k < 3 && forms[k]; k++) {
        assert_ok(cus_fake_register_kernel("saxpy", saxpy_twin, &log));
        cus_module *m = NULL;
        assert_ok(cus_module_load_data(c, forms[k], sizes[k], NULL, &m));
        cus_function *f = get_fn(m, "saxpy");
        enum { N = 300 };
        float x[N], y[N];
        for (int i = 0; i < N; i++) {
            x[i] = 1.0f;
            y[i] = (float)i;
        }
        cus_buffer *bx = NULL, *by = NULL;
        assert_ok(cus_buffer_alloc(c, sizeof x, &bx));
        assert_ok(cus_buffer_alloc(c, sizeof y, &by));
        assert_ok(cus_copy_to_device(bx, 0, x, sizeof x));
        assert_ok(cus_copy_to_device(by, 0, y, sizeof y));
        int n = N;
        assert_refused(cus_launch(f, cus_grid_for(N, 128), 128, 0, NULL, 2.0f, bx, by, n),
                       CUS_ERROR_INVALID_ARGUMENT,
                       "saxpy: argument 4 is 4 bytes, the kernel's parameter is 8");
        assert_ok(cus_launch(f, cus_grid_for(N, 128), 128, 0, NULL, 2.0f, bx, by, (size_t)n));
        assert_ok(cus_copy_to_host(y, by, 0, sizeof y));
        for (int i = 0; i < N; i++)
            assert_float_equal(y[i], (float)i + 2.0f, 0);
        bx = cus_buffer_unref(bx);
        by = cus_buffer_unref(by);
        f = cus_function_unref(f);
        m = cus_module_unref(m);
    }
    assert_int_equal(log.runs, c90 ? 3 : 2);
    c = cus_context_unref(c);
}

static void test_kernels_empty_with_0_1_16_arguments(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    cus_module *m = NULL;
    assert_ok(cus_module_load_data(c, cusk_empty.fatbin, cusk_empty.fatbin_size, NULL, &m));
    cus_function *e0 = get_fn(m, "empty"), *e1 = get_fn(m, "empty1"), *e16 = get_fn(m, "empty16");
    assert_ok(cus_launch(e0, 1, 1, 0, NULL));
    assert_int_equal(last_launch().arg_bytes, 0);
    assert_ok(cus_launch(e1, 1, 1, 0, NULL, 7));
    assert_int_equal(last_launch().arg_bytes, 4);
    struct pair pr = {1, 2.0};
    assert_ok(cus_launch(e16, 1, 1, 0, NULL, (char)1, 2, 3.0f, 4.0, (void *)0, (short)6, 7ull, pr,
                         (char)9, 10, 11.0f, 12.0, (void *)0, (short)14, 15ull, 16));
    cus_fake_launch rec = last_launch();
    assert_int_equal(rec.arg_bytes, 116);
    int i15 = 0;
    memcpy(&i15, rec.args + 112, 4);
    assert_int_equal(i15, 16);
    assert_refused(cus_launch(e1, 1, 1, 0, NULL, 1, 2), CUS_ERROR_INVALID_ARGUMENT,
                   "empty1: 2 arguments given, the kernel takes 1");
    assert_ok(cus_context_synchronize(c));
    e0 = cus_function_unref(e0);
    e1 = cus_function_unref(e1);
    e16 = cus_function_unref(e16);
    m = cus_module_unref(m);
    c = cus_context_unref(c);
}

#else

static void test_kernels_are_skipped_without_nvcc(void **state)
{
    (void)state;
    skip();
}

#endif /* CUS_TEST_HAVE_KERNELS */

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grid_for),
        cmocka_unit_test(test_dims),
        ENV_TEST(test_launch_without_arguments),
        ENV_TEST(test_launch_one_argument),
        ENV_TEST(test_launch_sixteen_arguments),
        ENV_TEST(test_launch_computes_through_a_host_twin),
        ENV_TEST(test_launch_wrong_argument_count),
        ENV_TEST(test_launch_wrong_argument_size),
        ENV_TEST(test_launch_explicit_form),
        ENV_TEST(test_launch_on_a_stream_of_another_context),
        ENV_TEST(test_launch_on_a_stream_of_the_same_primary),
        ENV_TEST(test_launch_makes_its_context_current),
        ENV_TEST(test_launch_from_other_threads),
        ENV_TEST(test_launch_from_many_threads_at_once),
        ENV_TEST(test_launch_faults),
        ENV_TEST(test_launch_errors_name_the_call_written),
        ENV_TEST(test_launch_call_sites_are_checked_once),
        ENV_TEST(test_zero_arguments_are_checked),
        ENV_TEST(test_launch_configurations_the_driver_refuses),
        ENV_TEST(test_refused_inside_a_host_function),
        ENV_TEST(test_launch_releases_what_host_functions_dropped),
        ENV_TEST(test_launch_63_arguments),
        ENV_TEST(test_launch_ex),
        ENV_TEST(test_launch_ex_refusals),
        ENV_TEST(test_launch_ex_faults),
        TEST_WITH(test_launch_ex_not_supported, setup_no_launch_ex),
        TEST_WITH(test_unchecked_without_param_info, setup_no_param_info),
        TEST_WITH(test_unchecked_on_a_12000_driver, setup_12000),
        ENV_TEST(test_a_faulting_kernel_poisons_the_context),
        ENV_TEST(test_a_sticky_launch_failure_poisons),
        ENV_TEST(test_a_poisoned_primary_context_is_reset),
        ENV_TEST(test_function_attributes),
        ENV_TEST(test_function_set_attribute_and_configs),
        TEST_WITH(test_shared_mem_config_not_supported, setup_no_shared_mem_config),
        ENV_TEST(test_max_dynamic_shared),
        ENV_TEST(test_occupancy),
        ENV_TEST(test_function_faults),
#ifdef CUS_TEST_HAVE_KERNELS
        ENV_TEST(test_kernels_launch_checked_by_their_real_layout),
        ENV_TEST(test_kernels_empty_with_0_1_16_arguments),
#else
        ENV_TEST(test_kernels_are_skipped_without_nvcc),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
