/* tutorial-memory: device buffers, page-locked host memory, copies and fills
 * (docs/tutorial.md, "5. Memory").
 *
 * Synchronous and stream-ordered copies and fills, pinned host memory
 * (allocated and registered), a stream-ordered allocation, and the
 * bounds checks that refuse a bad range before any driver call. Without a
 * GPU it runs on the fake driver.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuscope/cuscope.h>
#include <cuscope/fake.h>

#define N 1024

static bool all_equal(const uint32_t *p, size_t n, uint32_t want)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != want)
            return false;
    return true;
}

/* Queued on one stream, in order: in -> a, the upper half of a set to 7,
 * a -> out; out is `mine`, registered for the duration. */
static cus_status async_round_trip(cus_context *ctx, cus_buffer *a, void *mine, bool *ok)
{
    cus_autoptr(cus_host_buffer) pinned = NULL;
    CUS_TRY(cus_host_buffer_alloc(ctx, N * sizeof(uint32_t), 0, &pinned));
    cus_autoptr(cus_host_buffer) registered = NULL;
    CUS_TRY(cus_host_buffer_register(ctx, mine, N * sizeof(uint32_t), 0, &registered));
    uint32_t *in = cus_host_buffer_data(pinned), *out = mine;
    for (size_t i = 0; i < N; i++) {
        in[i] = (uint32_t)i;
        out[i] = 0;
    }

    /* Declared after the host buffers it works on, so it is released before
     * them. */
    cus_autoptr(cus_stream) stream = NULL;
    CUS_TRY(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &stream));
    CUS_TRY(cus_copy_to_device_async(a, 0, in, N * sizeof(uint32_t), stream));
    CUS_TRY(cus_buffer_fill_u32_async(a, N / 2 * sizeof(uint32_t), 7, N / 2, stream));
    CUS_TRY(cus_copy_to_host_async(out, a, 0, N * sizeof(uint32_t), stream));

    /* A stream-ordered buffer: allocated on the stream, and freed on it when
     * the last reference goes, after the work queued before. */
    cus_autoptr(cus_buffer) scratch = NULL;
    CUS_TRY(cus_buffer_alloc_async(stream, 256, &scratch));
    CUS_TRY(cus_buffer_fill_u8_async(scratch, 0, 0xff, 256, stream));

    CUS_TRY(cus_stream_synchronize(stream));
    *ok = true;
    for (size_t i = 0; i < N; i++)
        *ok = *ok && out[i] == (i < N / 2 ? (uint32_t)i : 7u);
    return CUS_SUCCESS;
}

static cus_status run(void)
{
    cus_device dev;
    CUS_TRY(cus_device_get(0, &dev));
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(cus_context_retain_primary(dev, &ctx));

    size_t free_bytes = 0, total = 0;
    CUS_TRY(cus_memory_info(ctx, &free_bytes, &total));
    printf("device memory: %zu MiB free of %zu MiB\n", free_bytes >> 20, total >> 20);

    /* Device buffers: N elements, the size overflow-checked. Each holds a
     * reference to its context. */
    cus_autoptr(cus_buffer) a = NULL;
    cus_autoptr(cus_buffer) b = NULL;
    CUS_TRY(cus_buffer_alloc_n(ctx, uint32_t, N, &a));
    CUS_TRY(cus_buffer_alloc_n(ctx, uint32_t, N, &b));
    printf("two buffers of %zu bytes\n", cus_buffer_size(a));

    /* The driver's synchronous calls, in the legacy stream: each comes after
     * the work before it; the copy to the host returns with the bytes there. */
    uint32_t host[N];
    CUS_TRY(cus_buffer_fill_u32(a, 0, 0xC0FFEEu, N));
    CUS_TRY(cus_copy_device(b, 0, a, 0, N * sizeof(uint32_t)));
    CUS_TRY(cus_copy_to_host(host, b, 0, sizeof host));
    printf("fill, device-to-device copy, copy back: %s\n",
           all_equal(host, N, 0xC0FFEEu) ? "ok" : "WRONG");
    if (!all_equal(host, N, 0xC0FFEEu))
        return CUS_ERROR_INVALID_ARGUMENT;

    /* Page-locked host memory, so that async copies are truly asynchronous:
     * allocated by the driver, or registered over memory we own (and must
     * keep alive until the last reference is gone). */
    void *mine = aligned_alloc(4096, N * sizeof(uint32_t));
    if (!mine)
        return CUS_ERROR_OUT_OF_HOST_MEMORY;
    bool ok = false;
    cus_status st = async_round_trip(ctx, a, mine, &ok);
    free(mine); /* unregistered when async_round_trip returned */
    CUS_TRY(st);
    printf("async copies and fills on one stream: %s\n", ok ? "ok" : "WRONG");
    if (!ok)
        return CUS_ERROR_INVALID_ARGUMENT;

    /* Bounds: a range past the end is refused before the driver sees it. */
    st = cus_copy_to_host(host, a, (N - 2) * sizeof(uint32_t), 4 * sizeof(uint32_t));
    printf("copying 16 bytes from 8 before the end: %s\n  %s\n", cus_status_name(st),
           cus_last_error_message());
    if (st != CUS_ERROR_OUT_OF_RANGE)
        return CUS_ERROR_INVALID_ARGUMENT;
    st = cus_buffer_fill_u32(a, 2, 0, 1);
    printf("a 32-bit fill at byte 2: %s\n", cus_status_name(st));
    if (st != CUS_ERROR_INVALID_ARGUMENT)
        return CUS_ERROR_INVALID_ARGUMENT;
    return CUS_SUCCESS;
}

int main(void)
{
    bool on_fake = false;
    if (cus_init() != CUS_SUCCESS) {
        printf("%s\n", cus_last_error_message());
        printf("no GPU here: running on cuscope's fake driver\n");
        if (cus_fake_install(NULL) != CUS_SUCCESS || cus_init() != CUS_SUCCESS) {
            fprintf(stderr, "tutorial-memory: the fake driver failed: %s\n",
                    cus_last_error_message());
            return 1;
        }
        on_fake = true;
    }

    cus_status st = run();
    if (st != CUS_SUCCESS) {
        fprintf(stderr, "tutorial-memory: %s (%s)\n", cus_last_error_message(),
                cus_status_name(st));
        return 1;
    }
    if (cus_debug_live_objects() != 0) {
        fprintf(stderr, "tutorial-memory: %zu objects still alive\n", cus_debug_live_objects());
        return 1;
    }
    if (on_fake && cus_fake_uninstall() != CUS_SUCCESS) {
        fprintf(stderr, "tutorial-memory: %s\n", cus_last_error_message());
        return 1;
    }
    return 0;
}
