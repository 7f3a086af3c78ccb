/* gpu-rtc: a kernel compiled at run time by NVRTC, to PTX and to a cubin for
 * the device's architecture, loaded, launched through cus_launch and its
 * results checked on the real driver. Exits 77 without a driver, a device or
 * NVRTC. Prints the NVRTC version, the architecture and one line per form. */
#include <stdio.h>
#include <string.h>

#include "harness/env.h"

static const char src[] =
    "template <typename T>\n"
    "__global__ void scale(T *x, T a, unsigned n)\n"
    "{\n"
    "    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n)\n"
    "        x[i] *= a;\n"
    "}\n";

#define N 4096

static void run_form(cus_context *ctx, cus_program_target target, const char *label)
{
    const char *names[] = {"scale<float>"};
    cus_program_options o = {.ctx = ctx, .target = target, .name_expressions = names,
                             .nname_expressions = 1, .no_cache = true};
    cus_autoptr(cus_program) p = NULL;
    assert_ok(cus_program_create(src, "gpu-rtc.cu", NULL, 0, &p));
    assert_ok(cus_program_compile(p, &o));
    cus_autoptr(cus_module) m = NULL;
    assert_ok(cus_program_load(p, ctx, NULL, &m));
    assert_int_equal(cus_module_format(m),
                     target == CUS_PROGRAM_CUBIN ? CUS_IMAGE_CUBIN : CUS_IMAGE_PTX);
    cus_autoptr(cus_function) f = NULL;
    assert_ok(cus_program_get_function(p, m, "scale<float>", &f));
    static float x[N];
    for (int i = 0; i < N; i++)
        x[i] = (float)i;
    cus_autoptr(cus_stream) s = NULL;
    assert_ok(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &s));
    cus_autoptr(cus_buffer) b = NULL;
    assert_ok(cus_buffer_alloc(ctx, sizeof x, &b));
    assert_ok(cus_copy_to_device(b, 0, x, sizeof x));
    assert_ok(cus_launch(f, N / 256, 256, 0, s, b, 3.0f, (unsigned)N));
    assert_ok(cus_stream_synchronize(s));
    assert_ok(cus_copy_to_host(x, b, 0, sizeof x));
    for (int i = 0; i < N; i++)
        if (x[i] != 3.0f * (float)i)
            fail_msg("%s: x[%d] = %g, want %g", label, i, x[i], 3.0 * i);
    const char *lowered = NULL;
    assert_ok(cus_program_lowered_name(p, "scale<float>", &lowered));
    printf("gpu-rtc: %s: scale<float> (%s) loaded and launched, %d results correct\n", label,
           lowered, N);
}

static void test_ptx_and_cubin(void **state)
{
    (void)state;
    cus_device dev;
    assert_ok(cus_device_get(0, &dev));
    int major = 0, minor = 0;
    assert_ok(cus_device_compute_capability(dev, &major, &minor));
    printf("gpu-rtc: device compute capability %d.%d\n", major, minor);
    cus_autoptr(cus_context) ctx = NULL;
    assert_ok(cus_context_retain_primary(dev, &ctx));
    run_form(ctx, CUS_PROGRAM_PTX, "PTX");
    run_form(ctx, CUS_PROGRAM_CUBIN, "cubin");
}

int main(void)
{
    env_require_driver_or_skip();
    int major = 0, minor = 0;
    if (cus_nvrtc_version(&major, &minor) != CUS_SUCCESS) {
        printf("skipping: %s\n", cus_last_error_message());
        return 77;
    }
    printf("gpu-rtc: NVRTC %d.%d (%s)\n", major, minor, cus_nvrtc_library());
    const struct CMUnitTest tests[] = {ENV_TEST(test_ptx_and_cubin)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
