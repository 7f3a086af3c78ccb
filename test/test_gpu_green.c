/* gpu only: green contexts on the real driver. The device's SMs split into
 * a group of 16 and the rest; a green context on each; kernels/smid.cu's
 * sm_ids launched with many blocks on a stream of each, counting the
 * distinct SMs (%smid) its blocks ran on, which must not exceed the green
 * context's share (the driver allows two more on 9.x once a module with
 * dynamic parallelism is loaded: none is here). Prints the device's SM
 * resource (its minimum group and co-scheduling alignment, what the fake
 * guesses), the split, and what each context saw. Exits 77 (skipped) without
 * a driver or device; skips (77) on a driver before 12.4. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuscope/cuscope.h>

#include "cusk-images.h"
#include "harness/env.h"

enum { NSEEN = 4096, BLOCKS = 8192 };

/* Distinct SMs sm_ids ran on in ctx, on a stream of ctx. */
static unsigned int sms_seen(cus_context *ctx, const char *what)
{
    cus_autoptr(cus_module) m = NULL;
    assert_ok(cus_module_load_data(ctx, cusk_smid.fatbin, cusk_smid.fatbin_size, NULL, &m));
    cus_autoptr(cus_function) f = NULL;
    assert_ok(cus_module_get_function(m, "sm_ids", &f));
    cus_autoptr(cus_stream) s = NULL;
    assert_ok(cus_stream_create(ctx, 0, 0, &s));
    cus_autoptr(cus_buffer) seen = NULL;
    cus_autoptr(cus_buffer) count = NULL;
    assert_ok(cus_buffer_alloc(ctx, NSEEN * sizeof(unsigned int), &seen));
    assert_ok(cus_buffer_alloc(ctx, sizeof(unsigned int), &count));
    /* On s: a green context's streams are non-blocking, so the fills of
     * cus_buffer_fill_u8 (the legacy stream, returning before they are done)
     * would race the kernel. The H200 run of 2026-12-05 did that: the
     * 16-SM context's count read 0, the fills landing after its kernel. */
    assert_ok(cus_buffer_fill_u8_async(seen, 0, 0, NSEEN * sizeof(unsigned int), s));
    assert_ok(cus_buffer_fill_u8_async(count, 0, 0, sizeof(unsigned int), s));
    assert_ok(cus_launch(f, BLOCKS, 64, 0, s, seen, (unsigned int)NSEEN, count, 20000ll));
    assert_ok(cus_stream_synchronize(s));
    unsigned int n = 0;
    assert_ok(cus_copy_to_host(&n, count, 0, sizeof n));
    unsigned int sms = 0;
    assert_ok(cus_context_sm_count(ctx, &sms));
    printf("green: %s: cus_context_sm_count %u, sm_ids saw %u distinct SMs (%d blocks)\n", what,
           sms, n, BLOCKS);
    return n;
}

static void test_two_green_contexts_see_their_sms(void **state)
{
    (void)state;
    int version = 0;
    assert_ok(cus_driver_version(&version));
    if (version < 12040) {
        printf("skipping: driver API %d.%d has no green contexts (12.4+)\n", version / 1000,
               version % 1000 / 10);
        exit(77);
    }
    cus_device dev;
    assert_ok(cus_device_get(0, &dev));
    /* The primary context first, as the driver advises: each green context
     * retains it, and would otherwise initialise it. */
    cus_autoptr(cus_context) primary = NULL;
    assert_ok(cus_context_retain_primary(dev, &primary));
    int major = 0, minor = 0, mps = 0;
    assert_ok(cus_device_attribute(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &major));
    assert_ok(cus_device_attribute(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &minor));
    assert_ok(cus_device_attribute(dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &mps));
    CUdevResource res;
    assert_ok(cus_device_sm_resource(dev, &res));
    printf("green: driver %d.%d, compute capability %d.%d, %d SMs; device resource: smCount %u, "
           "minSmPartitionSize %u, smCoscheduledAlignment %u\n",
           version / 1000, version % 1000 / 10, major, minor, mps, res.sm.smCount,
           res.sm.minSmPartitionSize, res.sm.smCoscheduledAlignment);
    assert_int_equal(res.sm.smCount, (unsigned int)mps);
    unsigned int n = 0;
    assert_ok(cus_sm_resource_split(&res, 16, 0, NULL, &n, NULL));
    printf("green: min_count 16 makes up to %u groups\n", n);
    /* A query (groups NULL) promises the count only: does the driver fill
     * remaining too? (the fake does not: cuscope then hands back type 0) */
    CUdevResource qrest;
    memset(&qrest, 0xa5, sizeof qrest);
    assert_ok(cus_sm_resource_split(&res, 16, 0, NULL, &n, &qrest));
    printf("green: a query's remaining: type %d, smCount %u\n", (int)qrest.type,
           qrest.type == CU_DEV_RESOURCE_TYPE_SM ? qrest.sm.smCount : 0u);
    CUdevResource group, rest;
    n = 1;
    assert_ok(cus_sm_resource_split(&res, 16, 0, &group, &n, &rest));
    printf("green: split: 1 group of %u (minSmPartitionSize %u, smCoscheduledAlignment %u), "
           "remaining %u (smCoscheduledAlignment %u)\n",
           group.sm.smCount, group.sm.minSmPartitionSize, group.sm.smCoscheduledAlignment,
           rest.sm.smCount, rest.sm.smCoscheduledAlignment);
    /* What the driver answers where the fake guesses. */
    n = 1;
    CUdevResource probe;
    cus_status st = cus_sm_resource_split(&res, res.sm.smCount, 0, &probe, &n, NULL);
    printf("green: min_count = all %u SMs: %s\n", res.sm.smCount, cus_status_name(st));
    n = 1;
    st = cus_sm_resource_split(&group, 8, 0, &probe, &n, NULL);
    printf("green: a split's output split again: %s\n", cus_status_name(st));
    n = 0;
    st = cus_sm_resource_split(&res, 2, CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING, NULL,
                               &n, NULL);
    printf("green: IGNORE_SM_COSCHEDULING, min_count 2: %s, %u groups\n", cus_status_name(st), n);

    cus_autoptr(cus_context) a = NULL;
    cus_autoptr(cus_context) b = NULL;
    assert_ok(cus_context_create_green(dev, &group, 1, 0, &a));
    assert_ok(cus_context_create_green(dev, &rest, 1, 0, &b));
    unsigned int sa = 0, sb = 0;
    assert_ok(cus_context_sm_count(a, &sa));
    assert_ok(cus_context_sm_count(b, &sb));
    assert_int_equal(sa, group.sm.smCount);
    assert_int_equal(sb, rest.sm.smCount);
    unsigned int seen_a = sms_seen(a, "green context A (the group)");
    unsigned int seen_b = sms_seen(b, "green context B (the remaining group)");
    unsigned int seen_p = sms_seen(primary, "the primary context");
    assert_true(seen_a >= 1 && seen_a <= sa);
    assert_true(seen_b >= 1 && seen_b <= sb);
    assert_true(seen_p <= (unsigned int)mps);
    printf("green: PASS: A saw %u <= %u, B saw %u <= %u, the primary context %u of %d\n", seen_a,
           sa, seen_b, sb, seen_p, mps);
}

int main(void)
{
    env_require_driver_or_skip();
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_two_green_contexts_see_their_sms),
    };
    return cmocka_run_group_tests_name("gpu-green", tests, NULL, NULL);
}
