/* gpu only: a growable buffer grown to several GiB in 1 GiB steps on the
 * real driver, its address never moving, each step written and checked
 * (its first and last words, and one in its middle), and every earlier
 * step's data still there at the end. CUS_VMM_GIB sets the target (8 by
 * default; less when the device has less free memory). Exits 77 (skipped)
 * without a driver or device. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuscope/vmm.h>

#include "harness/env.h"

#define GIB ((size_t)1 << 30)

static cus_status check_word(cus_buffer *b, size_t byte, uint32_t want)
{
    uint32_t v = 0;
    CUS_TRY(cus_copy_to_host(&v, b, byte, sizeof v));
    if (v != want) {
        fail_msg("at byte %zu: 0x%" PRIx32 ", want 0x%" PRIx32, byte, v, want);
    }
    return CUS_SUCCESS;
}

static void test_grow_to_several_gib(void **state)
{
    (void)state;
    cus_device dev;
    assert_ok(cus_device_get(0, &dev));
    cus_autoptr(cus_context) ctx = NULL;
    assert_ok(cus_context_retain_primary(dev, &ctx));
    size_t gib = 8;
    const char *env = getenv("CUS_VMM_GIB");
    if (env && atoi(env) > 0)
        gib = (size_t)atoi(env);
    size_t free_bytes = 0, total = 0;
    assert_ok(cus_memory_info(ctx, &free_bytes, &total));
    if (gib * GIB + GIB > free_bytes)
        gib = free_bytes / GIB > 1 ? free_bytes / GIB - 1 : 1;
    cus_autoptr(cus_growable) g = NULL;
    assert_ok(cus_growable_reserve(ctx, gib * GIB, &g));
    CUdeviceptr at = cus_growable_ptr(g);
    for (size_t step = 1; step <= gib; step++) {
        assert_ok(cus_growable_grow(g, step * GIB));
        assert_true(cus_growable_ptr(g) == at);
        cus_autoptr(cus_buffer) b = NULL;
        assert_ok(cus_growable_buffer(g, &b));
        assert_true(cus_buffer_ptr(b) == at);
        size_t from = (step - 1) * GIB;
        assert_ok(cus_buffer_fill_u32(b, from, (uint32_t)(0xa0000000u + step), GIB / 4));
        assert_ok(check_word(b, from, (uint32_t)(0xa0000000u + step)));
        assert_ok(check_word(b, from + GIB / 2, (uint32_t)(0xa0000000u + step)));
        assert_ok(check_word(b, from + GIB - 4, (uint32_t)(0xa0000000u + step)));
        printf("vmm: grown to %zu GiB at 0x%llx, step %zu checked\n", step,
               (unsigned long long)at, step);
    }
    cus_autoptr(cus_buffer) b = NULL;
    assert_ok(cus_growable_buffer(g, &b));
    for (size_t step = 1; step <= gib; step++)
        assert_ok(check_word(b, (step - 1) * GIB + 12345 * 4, (uint32_t)(0xa0000000u + step)));
    printf("vmm: %zu GiB in %zu steps, the address never moved\n", gib, gib);
}

int main(void)
{
    env_require_driver_or_skip();
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_grow_to_several_gib),
    };
    return cmocka_run_group_tests_name("gpu-vmm", tests, NULL, NULL);
}
