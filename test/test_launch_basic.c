/* The launch tests, part basic: grids and launches. Their fixtures, and what
 * the launch tests are about: launch_fixtures.h. */
#include "launch_fixtures.h"

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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
