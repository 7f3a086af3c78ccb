/* tutorial-green: green contexts, a share of the device's SMs each
 * (docs/tutorial.md, "Green contexts").
 *
 * The device's SMs split into a group of 16 and the rest, a green context
 * on each, a stream, buffers and a module on each, and kernels/smid.cu's
 * sm_ids launched with many blocks: it counts the distinct SMs its blocks
 * ran on, which stays within the green context's share; then B ordered
 * after A with a context-wide event record and wait. Needs driver 12.4
 * or later (it says so and stops on an older one). Without a GPU it runs on
 * the fake driver, with a host twin of the kernel that reports the green
 * context's SM count.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cuscope/cuscope.h>
#include <cuscope/fake.h>

#include "cusk-images.h"

enum { NSEEN = 4096, BLOCKS = 8192 };

/* The kernel's host twin for the fake driver: the blocks spread over the
 * launch context's SMs (device pointers are host addresses there). */
static CUresult sm_ids_on_host(const cus_fake_launch *launch, void **args, void *user)
{
    (void)user;
    unsigned int *seen = (unsigned int *)(uintptr_t) * (CUdeviceptr *)args[0];
    unsigned int nseen = *(unsigned int *)args[1];
    unsigned int *count = (unsigned int *)(uintptr_t) * (CUdeviceptr *)args[2];
    unsigned int n = cus_fake_context_sm_count(launch->context);
    for (unsigned int id = 0; id < n && id < nseen && id < launch->grid[0]; id++)
        if (!seen[id]) {
            seen[id] = 1;
            ++*count;
        }
    return CUDA_SUCCESS;
}

/* The distinct SMs sm_ids ran on, on a stream of ctx. */
static cus_status sms_seen(cus_context *ctx, unsigned int *out)
{
    cus_autoptr(cus_module) mod = NULL;
    CUS_TRY(cus_module_load_data(ctx, cusk_smid.fatbin, cusk_smid.fatbin_size, NULL, &mod));
    cus_autoptr(cus_function) f = NULL;
    CUS_TRY(cus_module_get_function(mod, "sm_ids", &f));
    /* On a green context, cus_stream_create makes the green context's stream
     * (cuGreenCtxStreamCreate): its work runs on the green context's SMs. */
    cus_autoptr(cus_stream) s = NULL;
    CUS_TRY(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &s));
    cus_autoptr(cus_buffer) seen = NULL;
    cus_autoptr(cus_buffer) count = NULL;
    CUS_TRY(cus_buffer_alloc(ctx, NSEEN * sizeof(unsigned int), &seen));
    CUS_TRY(cus_buffer_alloc(ctx, sizeof(unsigned int), &count));
    CUS_TRY(cus_buffer_fill_u8_async(seen, 0, 0, NSEEN * sizeof(unsigned int), s));
    CUS_TRY(cus_buffer_fill_u8_async(count, 0, 0, sizeof(unsigned int), s));
    CUS_TRY(cus_launch(f, BLOCKS, 64, 0, s, seen, (unsigned int)NSEEN, count, 20000ll));
    CUS_TRY(cus_stream_synchronize(s));
    return cus_copy_to_host(out, count, 0, sizeof *out);
}

static cus_status run(void)
{
    cus_device dev;
    CUS_TRY(cus_device_get(0, &dev));
    /* The driver retains the primary context for each green context:
     * retaining it first spares it an initialisation per green context. */
    cus_autoptr(cus_context) primary = NULL;
    CUS_TRY(cus_context_retain_primary(dev, &primary));

    /* 1. All of the device's SMs. */
    CUdevResource all;
    cus_status st = cus_device_sm_resource(dev, &all);
    if (st == CUS_ERROR_NOT_SUPPORTED) {
        printf("%s\n", cus_last_error_message());
        return CUS_SUCCESS;
    }
    CUS_TRY(st);
    printf("the device has %u SMs; the smallest group is %u\n", cus_sm_resource_count(&all),
           all.sm.minSmPartitionSize);

    /* 2. One group of at least 16 (rounded up to the architecture's
     *    granularity: a multiple of 8 from compute capability 9.0), and the
     *    remaining group. groups NULL would only count the groups. */
    CUdevResource group, rest;
    unsigned int n = 1;
    CUS_TRY(cus_sm_resource_split(&all, 16, 0, &group, &n, &rest));
    printf("split: a group of %u SMs, %u remaining\n", cus_sm_resource_count(&group),
           cus_sm_resource_count(&rest));

    /* A count no group fits is the driver's to refuse; cuscope explains. */
    n = 1;
    CUdevResource too_big;
    if (cus_sm_resource_split(&all, cus_sm_resource_count(&all), 0, &too_big, &n, NULL) !=
        CUS_SUCCESS)
        printf("min_count = every SM: %s\n", cus_status_name(cus_last_status()));

    /* 3. A green context of each: a cus_context like any other. */
    cus_autoptr(cus_context) a = NULL;
    cus_autoptr(cus_context) b = NULL;
    CUS_TRY(cus_context_create_green(dev, &group, 1, 0, &a));
    CUS_TRY(cus_context_create_green(dev, &rest, 1, 0, &b));
    unsigned int sa = 0, sb = 0;
    CUS_TRY(cus_context_sm_count(a, &sa));
    CUS_TRY(cus_context_sm_count(b, &sb));

    /* Pushed and guarded as any context. */
    {
        cus_context_scope(guard, a);
        CUS_TRY(guard.status);
        printf("green context A is current: %s\n",
               cus_context_current() == a ? "yes" : "no");
    }

    unsigned int seen_a = 0, seen_b = 0;
    CUS_TRY(sms_seen(a, &seen_a));
    CUS_TRY(sms_seen(b, &seen_b));
    printf("green context A: %u SMs, the kernel ran on %u\n", sa, seen_a);
    printf("green context B: %u SMs, the kernel ran on %u\n", sb, seen_b);
    if (seen_a > sa || seen_b > sb) {
        printf("a kernel ran on more SMs than its green context has\n");
        return CUS_ERROR_INVALID_ARGUMENT;
    }

    /* 4. Ordering one green context after another: B's work from now on,
     *    on every stream of B (those made later too), waits on the device
     *    for all the work A had queued at the record. The host goes on. */
    cus_autoptr(cus_stream) sa_stream = NULL;
    cus_autoptr(cus_buffer) from_a = NULL;
    CUS_TRY(cus_stream_create(a, CU_STREAM_NON_BLOCKING, 0, &sa_stream));
    CUS_TRY(cus_buffer_alloc(a, sizeof(uint32_t), &from_a));
    CUS_TRY(cus_buffer_fill_u32_async(from_a, 0, 42, 1, sa_stream));
    cus_autoptr(cus_event) a_done = NULL;
    CUS_TRY(cus_event_create(b, CU_EVENT_DISABLE_TIMING, &a_done));
    CUS_TRY(cus_context_record_event(a, a_done));
    CUS_TRY(cus_context_wait_event(b, a_done));
    cus_autoptr(cus_stream) sb_stream = NULL;
    cus_autoptr(cus_buffer) in_b = NULL;
    CUS_TRY(cus_stream_create(b, CU_STREAM_NON_BLOCKING, 0, &sb_stream));
    CUS_TRY(cus_buffer_alloc(b, sizeof(uint32_t), &in_b));
    CUS_TRY(cus_copy_device_async(in_b, 0, from_a, 0, sizeof(uint32_t), sb_stream));
    CUS_TRY(cus_stream_synchronize(sb_stream));
    uint32_t v = 0;
    CUS_TRY(cus_copy_to_host(&v, in_b, 0, sizeof v));
    printf("green context B copied A's result after waiting for it: %u\n", v);
    if (v != 42)
        return CUS_ERROR_INVALID_ARGUMENT;
    /* a and b go at the end of the scope, after what was made on them; any
     * order would do: children hold their context. */
    return CUS_SUCCESS;
}

int main(void)
{
    bool on_fake = false;
    if (cus_init() != CUS_SUCCESS) {
        printf("%s\n", cus_last_error_message());
        printf("no GPU here: running on cuscope's fake driver, the kernel on the CPU\n");
        if (cus_fake_install(NULL) != CUS_SUCCESS ||
            cus_fake_register_kernel("sm_ids", sm_ids_on_host, NULL) != CUS_SUCCESS ||
            cus_init() != CUS_SUCCESS) {
            fprintf(stderr, "tutorial-green: the fake driver failed: %s\n",
                    cus_last_error_message());
            return 1;
        }
        on_fake = true;
    }
    cus_status st = run();
    if (st != CUS_SUCCESS) {
        fprintf(stderr, "tutorial-green: %s (%s)\n", cus_last_error_message(),
                cus_status_name(st));
        return 1;
    }
    if (cus_debug_live_objects() != 0) {
        fprintf(stderr, "tutorial-green: %zu objects still alive\n", cus_debug_live_objects());
        return 1;
    }
    if (on_fake && cus_fake_uninstall() != CUS_SUCCESS) {
        fprintf(stderr, "tutorial-green: %s\n", cus_last_error_message());
        return 1;
    }
    return 0;
}
