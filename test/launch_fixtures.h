/* Fixtures of the launch tests: test_launch.c, split by its sections into
 * test_launch_basic.c, test_launch_extended.c, test_launch_attributes.c,
 * test_launch_kernels.c. What they test, together: */
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
#ifndef CUSCOPE_TEST_LAUNCH_FIXTURES_H
#define CUSCOPE_TEST_LAUNCH_FIXTURES_H
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
#include "harness/check.h"

#ifdef CUS_TEST_HAVE_KERNELS
#include "cusk-images.h"
#endif

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

static inline cus_fake_launch last_launch(void)
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

static inline cus_function *get_fn(cus_module *m, const char *name)
{
    cus_function *f = NULL;
    assert_ok(cus_module_get_function(m, name, &f));
    assert_non_null(f);
    return f;
}

/* The module loaded into c (a reference taken). */
static inline fixture open_fixture(cus_context *c)
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

static inline void close_fixture(fixture *fx)
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

static inline int fn_attr(cus_function *f, CUfunction_attribute a)
{
    int v = -12345;
    assert_ok(cus_function_attribute(f, a, &v));
    return v;
}

/* --- host twins ----------------------------------------------------------------------------- */

static inline void *ptr_arg(void *arg)
{
    CUdeviceptr p;
    memcpy(&p, arg, sizeof p);
    return (void *)(uintptr_t)p;
}

static inline unsigned long long thread_count(const cus_fake_launch *l)
{
    return (unsigned long long)l->grid[0] * l->grid[1] * l->grid[2] * l->block[0] * l->block[1] *
           l->block[2];
}

typedef struct twin_log {
    int runs;
    pthread_t thread;
    unsigned int one_value;
} twin_log;

static inline CUresult axpy_twin(const cus_fake_launch *l, void **args, void *user)
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

static inline CUresult one_twin(const cus_fake_launch *l, void **args, void *user)
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

static inline CUresult sixteen_twin(const cus_fake_launch *l, void **args, void *user)
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

static inline CUresult boom_twin(const cus_fake_launch *l, void **args, void *user)
{
    (void)l;
    (void)args;
    int *runs = user;
    ++*runs;
    return CUDA_ERROR_ILLEGAL_ADDRESS; /* what writing through a bad pointer does */
}

/* --- setups ------------------------------------------------------------------------------- */

static inline int setup_hiding(const char *name)
{
    if (env_setup_with(NULL))
        return -1;
    return cus_fake_hide_entry(name) ? -1 : 0;
}

static inline int setup_no_param_info(void **state)
{
    (void)state;
    return setup_hiding("cuFuncGetParamInfo");
}

static inline int setup_no_launch_ex(void **state)
{
    (void)state;
    return setup_hiding("cuLaunchKernelEx");
}

static inline int setup_no_shared_mem_config(void **state)
{
    (void)state;
    return setup_hiding("cuFuncSetSharedMemConfig");
}

static const cus_fake_config driver_12000 = {.driver_version = 12000};

static inline int setup_12000(void **state)
{
    (void)state;
    return env_setup_with(&driver_12000);
}

#define TEST_WITH(f, setup) cmocka_unit_test_setup_teardown(f, setup, env_teardown)

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
        raw_pop_current();                                                          \
        assert_nothing_changed(before_);                                       \
    } while (0)

#endif
