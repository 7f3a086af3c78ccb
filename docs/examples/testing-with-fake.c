/* testing-with-fake: testing your own CUDA host code without a GPU
 * (docs/testing.md).
 *
 * A cmocka test program, as a downstream project would write it: the code
 * under test (scale_on_device, which would live in the project's own
 * sources) runs against cuscope's fake driver, with a host twin of its
 * kernel. The tests check its result and the launch the fake recorded, run it
 * on a configured fake (two devices, an older driver), inject faults, watch
 * streams make progress only when the host waits, poison the context with a
 * faulting kernel, and sweep a fault over every driver call it makes.
 *
 * Build: part of the meson build when cmocka is found, or
 *   cc testing-with-fake.c $(pkg-config --cflags --libs cuscope-fake cmocka)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <cuscope/cuscope.h>
#include <cuscope/fake.h>

/* --- the code under test ---------------------------------------------------- */

/* scale(float *data, float factor, unsigned long long n) multiplies data[i]
 * by factor: the PTX nvcc writes for it (`nvcc -ptx -arch=compute_80`, its
 * .version lowered to 7.0 so that drivers from 11.0 take it). The fake reads
 * the same PTX: the kernel's name and its parameter layout. */
static const char scale_ptx[] =
    ".version 7.0\n"
    ".target sm_80\n"
    ".address_size 64\n"
    ".visible .entry scale(\n"
    "\t.param .u64 scale_param_0,\n"
    "\t.param .f32 scale_param_1,\n"
    "\t.param .u64 scale_param_2\n"
    ")\n"
    "{\n"
    "\t.reg .pred %p<2>;\n"
    "\t.reg .f32 %f<4>;\n"
    "\t.reg .b32 %r<4>;\n"
    "\t.reg .b64 %rd<9>;\n"
    "\tld.param.u64 %rd2, [scale_param_0];\n"
    "\tld.param.f32 %f1, [scale_param_1];\n"
    "\tld.param.u64 %rd3, [scale_param_2];\n"
    "\tmov.u32 %r1, %ctaid.x;\n"
    "\tmov.u32 %r2, %ntid.x;\n"
    "\tmul.wide.u32 %rd4, %r1, %r2;\n"
    "\tmov.u32 %r3, %tid.x;\n"
    "\tcvt.u64.u32 %rd5, %r3;\n"
    "\tadd.s64 %rd1, %rd4, %rd5;\n"
    "\tsetp.ge.u64 %p1, %rd1, %rd3;\n"
    "\t@%p1 bra DONE;\n"
    "\tcvta.to.global.u64 %rd6, %rd2;\n"
    "\tshl.b64 %rd7, %rd1, 2;\n"
    "\tadd.s64 %rd8, %rd6, %rd7;\n"
    "\tld.global.f32 %f2, [%rd8];\n"
    "\tmul.f32 %f3, %f2, %f1;\n"
    "\tst.global.f32 [%rd8], %f3;\n"
    "DONE:\n"
    "\tret;\n"
    "}\n";

#define BLOCK 128

/* Multiplies n floats at data by factor on ctx's device. */
static cus_status scale_on_device(cus_context *ctx, float *data, size_t n, float factor)
{
    cus_autoptr(cus_module) module = NULL;
    CUS_TRY(cus_module_load_data(ctx, scale_ptx, sizeof scale_ptx, NULL, &module));
    cus_autoptr(cus_function) scale = NULL;
    CUS_TRY(cus_module_get_function(module, "scale", &scale));
    cus_autoptr(cus_buffer) buf = NULL;
    CUS_TRY(cus_buffer_alloc_n(ctx, float, n, &buf));
    cus_autoptr(cus_stream) stream = NULL;
    CUS_TRY(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &stream));
    CUS_TRY(cus_copy_to_device_async(buf, 0, data, n * sizeof(float), stream));
    CUS_TRY(cus_launch(scale, cus_grid_for(n, BLOCK), BLOCK, 0, stream, buf, factor,
                       (unsigned long long)n));
    CUS_TRY(cus_copy_to_host_async(data, buf, 0, n * sizeof(float), stream));
    return cus_stream_synchronize(stream);
}

/* --- host twins: what the kernel does, on the CPU ---------------------------- */

/* args[i] points at the copy of argument i; device pointers are host
 * addresses in the fake. Each thread of the grid does what the kernel's does. */
static CUresult scale_twin(const cus_fake_launch *launch, void **args, void *user)
{
    (void)user;
    float *data = (float *)(uintptr_t) * (CUdeviceptr *)args[0];
    float factor = *(float *)args[1];
    unsigned long long n = *(unsigned long long *)args[2];
    unsigned long long threads = (unsigned long long)launch->grid[0] * launch->block[0];
    for (unsigned long long i = 0; i < n && i < threads; i++)
        data[i] *= factor;
    return CUDA_SUCCESS;
}

/* A kernel that faults, as one writing through a bad pointer does: the
 * context is dead from then on. */
static CUresult faulting_twin(const cus_fake_launch *launch, void **args, void *user)
{
    (void)launch;
    (void)args;
    (void)user;
    return CUDA_ERROR_ILLEGAL_ADDRESS;
}

/* --- fixtures ------------------------------------------------------------------- */

/* Errors raised while releasing cannot be returned: count them. */
static unsigned long destroy_errors;
static void count_destroy_error(const cus_error *error, void *user)
{
    (void)error;
    (void)user;
    destroy_errors++;
}

/* A fresh fake (cfg NULL: one default device) with the twin registered:
 * registrations last until the next install. */
static void install(const cus_fake_config *cfg)
{
    assert_int_equal(cus_fake_install(cfg), CUS_SUCCESS);
    assert_int_equal(cus_fake_register_kernel("scale", scale_twin, NULL), CUS_SUCCESS);
    cus_set_destroy_error_handler(count_destroy_error, NULL);
    destroy_errors = 0;
}

static int setup_with(void **state, const cus_fake_config *cfg)
{
    install(cfg);
    cus_device dev;
    cus_context *ctx = NULL;
    if (cus_device_get(0, &dev) != CUS_SUCCESS || cus_context_retain_primary(dev, &ctx))
        return -1;
    *state = ctx;
    return 0;
}

static int setup(void **state)
{
    return setup_with(state, NULL);
}

/* Two devices, the second a small Ampere, and a 12.3 driver: one without
 * cuFuncGetParamInfo, which came with 12.4. */
static int setup_two_devices(void **state)
{
    static const cus_fake_device_config devices[2] = {
        {0},
        {.name = "small GPU", .cc_major = 8, .cc_minor = 0, .total_memory = 1u << 30,
         .multiprocessor_count = 16,
         .overrides = {{CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 512}}, .override_count = 1},
    };
    static const cus_fake_config cfg = {.device_count = 2, .driver_version = 12030,
                                        .devices = devices};
    return setup_with(state, &cfg);
}

/* What every test must leave behind: nothing. */
static int teardown(void **state)
{
    cus_context_unref(*state);
    assert_int_equal(cus_debug_live_objects(), 0);                  /* cuscope objects */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0); /* driver handles */
    if (cus_fake_misuse_count())
        fail_msg("driver misuse: %s", cus_fake_last_misuse());
    assert_int_equal(destroy_errors, 0);
    cus_set_destroy_error_handler(NULL, NULL);
    assert_int_equal(cus_fake_uninstall(), CUS_SUCCESS);
    return 0;
}

static void fill(float *data, size_t n)
{
    for (size_t i = 0; i < n; i++)
        data[i] = (float)i;
}

/* --- the tests --------------------------------------------------------------------- */

/* The result, and the launch as the fake recorded it. */
static void test_scale(void **state)
{
    cus_context *ctx = *state;
    float data[1000];
    fill(data, 1000);
    assert_int_equal(scale_on_device(ctx, data, 1000, 0.5f), CUS_SUCCESS);
    for (int i = 0; i < 1000; i++)
        assert_true(data[i] == 0.5f * (float)i);

    assert_int_equal(cus_fake_launch_count(), 1);
    cus_fake_launch launch;
    assert_int_equal(cus_fake_last_launch(&launch), CUS_SUCCESS);
    assert_string_equal(launch.function, "scale");
    assert_int_equal(launch.grid[0], 8); /* 1000 elements in blocks of 128 */
    assert_int_equal(launch.block[0], BLOCK);
    assert_int_equal(launch.nargs, 3);
    float factor; /* the second parameter: at offset 8, after the pointer */
    memcpy(&factor, launch.args + 8, sizeof factor);
    assert_true(factor == 0.5f);
    unsigned long long n;
    memcpy(&n, launch.args + 16, sizeof n);
    assert_int_equal(n, 1000);
    assert_int_equal(cus_fake_calls_of("cuStreamSynchronize"), 1);
}

/* A configured fake: devices, attributes, an older driver. */
static void test_configured_fake(void **state)
{
    cus_context *ctx = *state;
    int count = 0, threads = 0;
    cus_device small;
    char name[64];
    assert_int_equal(cus_device_count(&count), CUS_SUCCESS);
    assert_int_equal(count, 2);
    assert_int_equal(cus_device_get(1, &small), CUS_SUCCESS);
    assert_int_equal(cus_device_name(small, name, sizeof name), CUS_SUCCESS);
    assert_string_equal(name, "small GPU");
    assert_int_equal(
        cus_device_attribute(small, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &threads),
        CUS_SUCCESS);
    assert_int_equal(threads, 512);

    /* The 12.3 driver has no cuFuncGetParamInfo: the launch goes unchecked,
     * and the code under test still works. */
    assert_false(cus_driver_has("cuFuncGetParamInfo"));
    float data[10];
    fill(data, 10);
    assert_int_equal(scale_on_device(ctx, data, 10, 3.0f), CUS_SUCCESS);
    assert_true(data[9] == 27.0f);
}

/* One call fails: the error comes back, named, and nothing leaks (the
 * teardown checks). */
static void test_out_of_memory(void **state)
{
    cus_context *ctx = *state;
    float data[10];
    fill(data, 10);
    /* The next cuMemAlloc, once (transient). */
    assert_int_equal(cus_fake_fail_entry("cuMemAlloc", 1, CUDA_ERROR_OUT_OF_MEMORY, false),
                     CUS_SUCCESS);
    assert_int_equal(scale_on_device(ctx, data, 10, 2.0f), CUDA_ERROR_OUT_OF_MEMORY);
    assert_string_equal(cus_last_error()->driver_call, "cuMemAlloc");
    assert_int_equal(cus_fake_faults_fired(), 1);
    assert_true(data[9] == 9.0f); /* untouched */

    /* Transient: the next attempt works. */
    assert_int_equal(scale_on_device(ctx, data, 10, 2.0f), CUS_SUCCESS);
    assert_true(data[9] == 18.0f);
}

/* Queued work runs only when the host waits for it; how queries make
 * progress is the query mode's choice. */
static void test_streams_run_when_waited_for(void **state)
{
    cus_context *ctx = *state;
    cus_autoptr(cus_stream) stream = NULL;
    cus_autoptr(cus_buffer) buf = NULL;
    assert_int_equal(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &stream), CUS_SUCCESS);
    assert_int_equal(cus_buffer_alloc(ctx, 64, &buf), CUS_SUCCESS);
    uint8_t host[64] = {0};
    assert_int_equal(cus_buffer_fill_u8_async(buf, 0, 0xab, 64, stream), CUS_SUCCESS);
    assert_int_equal(cus_copy_to_host_async(host, buf, 0, 64, stream), CUS_SUCCESS);
    assert_int_equal(cus_fake_stream_pending(cus_stream_handle(stream)), 2);
    assert_int_equal(host[0], 0); /* nothing ran yet */

    bool done = true;
    cus_fake_set_query_mode(CUS_FAKE_QUERY_NONE); /* queries run nothing */
    assert_int_equal(cus_stream_query(stream, &done), CUS_SUCCESS);
    assert_false(done);
    cus_fake_set_query_mode(CUS_FAKE_QUERY_STEP); /* the default: one operation per query */
    assert_int_equal(cus_stream_query(stream, &done), CUS_SUCCESS);
    assert_false(done);
    assert_int_equal(cus_fake_stream_pending(cus_stream_handle(stream)), 1);

    assert_int_equal(cus_stream_synchronize(stream), CUS_SUCCESS); /* runs the rest */
    assert_int_equal(cus_fake_stream_pending(cus_stream_handle(stream)), 0);
    assert_int_equal(host[63], 0xab);
}

/* A kernel that faults poisons the context: later calls fail fast with the
 * same status and make no driver call; releasing still works. */
static void test_kernel_fault_poisons_the_context(void **state)
{
    cus_context *ctx = *state;
    assert_int_equal(cus_fake_register_kernel("scale", faulting_twin, NULL), CUS_SUCCESS);
    float data[10];
    fill(data, 10);
    /* The launch succeeds; the synchronize that runs the kernel reports it. */
    assert_int_equal(scale_on_device(ctx, data, 10, 2.0f), CUDA_ERROR_ILLEGAL_ADDRESS);
    assert_true(cus_status_is_sticky(CUDA_ERROR_ILLEGAL_ADDRESS));
    assert_int_equal(cus_context_poisoned(ctx), CUDA_ERROR_ILLEGAL_ADDRESS);

    unsigned long calls = cus_fake_call_count();
    cus_buffer *buf = NULL;
    assert_int_equal(cus_buffer_alloc(ctx, 64, &buf), CUDA_ERROR_ILLEGAL_ADDRESS);
    assert_null(buf);
    assert_int_equal(cus_fake_call_count(), calls); /* failed fast */
    /* The teardown's release of the primary context resets it. */
}

/* --- the fault sweep ------------------------------------------------------------------
 * Run a scenario once and count its driver calls; then run it again failing
 * the 1st, the 2nd, ... call, once transiently and once persistently (that
 * call and every later one). Each time the failure must surface (an error
 * returned and recorded, or one sent to the destroy handler), the result must
 * never be silently wrong, and nothing may leak. */

/* data is the caller's, so that it outlives work a failure left queued (the
 * sweep lets the fake run that work after each run). */
static cus_status scenario(float data[100], bool *correct)
{
    cus_device dev;
    CUS_TRY(cus_device_get(0, &dev));
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(cus_context_retain_primary(dev, &ctx));
    fill(data, 100);
    CUS_TRY(scale_on_device(ctx, data, 100, 2.0f));
    *correct = true;
    for (int i = 0; i < 100; i++)
        *correct = *correct && data[i] == 2.0f * (float)i;
    return CUS_SUCCESS;
}

/* The same work inside a guard, as code that calls raw driver functions or
 * libraries needing a current context does. A persistent fault fails the
 * guard's pop on the way out, and the context stays on the thread's stack:
 * the loop's cus_fake_reset() takes it off before the checks. */
static cus_status scenario_guarded(float data[100], bool *correct)
{
    cus_device dev;
    CUS_TRY(cus_device_get(0, &dev));
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(cus_context_retain_primary(dev, &ctx));
    cus_context_scope(guard, ctx);
    if (guard.status)
        return guard.status;
    fill(data, 100);
    CUS_TRY(scale_on_device(ctx, data, 100, 2.0f));
    *correct = true;
    for (int i = 0; i < 100; i++)
        *correct = *correct && data[i] == 2.0f * (float)i;
    return CUS_SUCCESS;
}

static void sweep(cus_status (*run)(float *, bool *))
{
    bool correct = false;
    float data[100];
    install(NULL);
    assert_int_equal(run(data, &correct), CUS_SUCCESS);
    assert_true(correct);
    unsigned long calls = cus_fake_call_count(); /* cuscope's loader included */

    for (int persistent = 0; persistent <= 1; persistent++) {
        for (unsigned long k = 1; k <= calls; k++) {
            install(NULL);
            cus_fake_fail_call(k, CUDA_ERROR_UNKNOWN, persistent);
            correct = false;
            cus_status st = run(data, &correct);
            const char *failed = cus_fake_call_name(k - 1);
            if (!failed)
                failed = "?";
            assert_int_equal(cus_fake_faults_fired() > 0, true);
            /* Disarm the faults, pop what failed pops left pushed, let the
             * "device" finish what was queued. */
            assert_int_equal(cus_fake_reset(NULL), CUS_SUCCESS);

            if (st != CUS_SUCCESS) {
                assert_int_equal(cus_last_status(), st); /* recorded, with a message */
            } else {
                assert_true(correct); /* never a wrong result */
                /* Swallowed only where cuscope reported it to the destroy
                 * handler, or retried a pop that undoes its own push. */
                if (destroy_errors == 0 && strcmp(failed, "cuCtxPopCurrent") != 0)
                    fail_msg("failure %lu of %lu (%s) was swallowed", k, calls, failed);
            }
            if (cus_debug_live_objects())
                fail_msg("failure %lu (%s): %zu objects leaked", k, failed,
                         cus_debug_live_objects());
            /* A release that failed leaves its handle, reported: allowed. */
            if (!persistent && cus_fake_live_handles(CUS_FAKE_HANDLE_ANY) > destroy_errors)
                fail_msg("failure %lu (%s): a driver handle leaked", k, failed);
        }
    }
    print_message("swept %lu driver calls, each failed transiently and persistently\n", calls);
    cus_set_destroy_error_handler(NULL, NULL);
    assert_int_equal(cus_fake_uninstall(), CUS_SUCCESS);
}

static void test_fault_sweep(void **state)
{
    (void)state;
    sweep(scenario);
}

static void test_fault_sweep_with_a_guard(void **state)
{
    (void)state;
    sweep(scenario_guarded);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_scale, setup, teardown),
        cmocka_unit_test_setup_teardown(test_configured_fake, setup_two_devices, teardown),
        cmocka_unit_test_setup_teardown(test_out_of_memory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_streams_run_when_waited_for, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kernel_fault_poisons_the_context, setup, teardown),
        cmocka_unit_test(test_fault_sweep),
        cmocka_unit_test(test_fault_sweep_with_a_guard),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
