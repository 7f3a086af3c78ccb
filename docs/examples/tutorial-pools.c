/* tutorial-pools: memory pools (docs/tutorial.md, "Memory pools").
 *
 * A pool of its own with a release threshold, stream-ordered buffers
 * allocated from it (each holding the pool), its accounting before and
 * after the frees, a trim, the high-water marks and their reset, the
 * device's default and current pools, and a pool exported and imported
 * through a file descriptor (within this process, as a second process
 * would). Without a GPU it runs on the fake driver.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include <cuscope/cuscope.h>
#include <cuscope/fake.h>

#define N (1 << 18) /* 32-bit elements: 1 MiB */

static void show(const char *when, cus_pool *pool)
{
    cus_pool_usage u;
    if (cus_pool_get_usage(pool, &u) == CUS_SUCCESS)
        printf("  %-26s used %8" PRIu64 " (high %8" PRIu64 "), reserved %8" PRIu64
               " (high %8" PRIu64 ")\n",
               when, u.used_current, u.used_high, u.reserved_current, u.reserved_high);
}

/* Two buffers from the pool, a fill, a copy between them and back. */
static cus_status use_pool(cus_context *ctx, cus_pool *pool, bool *ok)
{
    cus_autoptr(cus_host_buffer) pinned = NULL;
    CUS_TRY(cus_host_buffer_alloc(ctx, N * sizeof(uint32_t), 0, &pinned));
    uint32_t *host = cus_host_buffer_data(pinned);
    cus_autoptr(cus_stream) stream = NULL;
    CUS_TRY(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &stream));
    {
        cus_autoptr(cus_buffer) a = NULL;
        cus_autoptr(cus_buffer) b = NULL;
        CUS_TRY(cus_pool_alloc_async(pool, stream, N * sizeof(uint32_t), &a));
        CUS_TRY(cus_pool_alloc_async(pool, stream, N * sizeof(uint32_t), &b));
        CUS_TRY(cus_buffer_fill_u32_async(a, 0, 0x600DF00Du, N, stream));
        CUS_TRY(cus_copy_device_async(b, 0, a, 0, N * sizeof(uint32_t), stream));
        CUS_TRY(cus_copy_to_host_async(host, b, 0, N * sizeof(uint32_t), stream));
        show("two buffers allocated:", pool);
    } /* both freed on the stream (cuMemFreeAsync), after the copies */
    CUS_TRY(cus_stream_synchronize(stream));
    *ok = true;
    for (size_t i = 0; i < N; i++)
        *ok = *ok && host[i] == 0x600DF00Du;
    return CUS_SUCCESS;
}

/* Export and import: what two processes do, here in one (see pool.h for
 * sending the descriptor over a Unix socket). */
static cus_status share(cus_context *ctx, bool *ok)
{
    cus_pool_options opts = {.handle_types = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR};
    cus_autoptr(cus_pool) pool = NULL;
    CUS_TRY(cus_pool_create(ctx, &opts, &pool));
    cus_autoptr(cus_stream) stream = NULL;
    CUS_TRY(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &stream));
    cus_autoptr(cus_buffer) buf = NULL;
    CUS_TRY(cus_pool_alloc_async(pool, stream, 4096, &buf));
    CUS_TRY(cus_buffer_fill_u8_async(buf, 0, 0, 4096, stream));
    CUS_TRY(cus_stream_synchronize(stream)); /* allocated before the importer uses it */

    /* The exporter: a descriptor for the pool, and the data of one buffer. */
    int fd = -1;
    CUS_TRY(cus_pool_export(pool, &fd));
    CUmemPoolPtrExportData data;
    cus_status st = cus_pool_export_pointer(pool, buf, &data);

    /* The importer: the pool, then a buffer over the same memory. */
    cus_autoptr(cus_pool) imported = NULL;
    if (st == CUS_SUCCESS)
        st = cus_pool_import(ctx, fd, &imported);
    close(fd);
    if (st == CUS_ERROR_NOT_SUPPORTED || st == CUDA_ERROR_INVALID_VALUE ||
        st == CUDA_ERROR_NOT_SUPPORTED) {
        printf("  this driver does not import its own process's pool: %s\n",
               cus_status_name(st));
        *ok = true;
        return CUS_SUCCESS;
    }
    CUS_TRY(st);
    {
        cus_autoptr(cus_buffer) view = NULL;
        CUS_TRY(cus_pool_import_pointer(imported, &data, 4096, &view));
        CUS_TRY(cus_buffer_fill_u32(view, 0, 0xA5A5A5A5u, 1024));
    } /* the import released (cuMemFree) before the exporter frees */
    uint32_t host[1024];
    CUS_TRY(cus_copy_to_host(host, buf, 0, sizeof host));
    *ok = true;
    for (size_t i = 0; i < 1024; i++)
        *ok = *ok && host[i] == 0xA5A5A5A5u;
    printf("  written through the import, read by the exporter: %s\n", *ok ? "ok" : "WRONG");
    return CUS_SUCCESS;
}

static cus_status run(void)
{
    cus_device dev;
    CUS_TRY(cus_device_get(0, &dev));
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(cus_context_retain_primary(dev, &ctx));

    /* A pool of our own that keeps what it reserves at synchronizations. */
    cus_autoptr(cus_pool) pool = NULL;
    CUS_TRY(cus_pool_create(ctx, NULL, &pool));
    CUS_TRY(cus_pool_set_release_threshold(pool, UINT64_MAX));
    printf("a pool on %s's device:\n", cus_context_get_kind(ctx) == CUS_CONTEXT_PRIMARY
                                           ? "the primary context"
                                           : "the context");
    bool ok = false;
    CUS_TRY(use_pool(ctx, pool, &ok));
    printf("  fill and copies through the pool's buffers: %s\n", ok ? "ok" : "WRONG");
    if (!ok)
        return CUS_ERROR_INVALID_ARGUMENT;
    show("after the frees:", pool);
    CUS_TRY(cus_pool_trim(pool, 0));
    show("after a trim to 0:", pool);
    CUS_TRY(cus_pool_reset_high_water(pool));
    show("after the marks' reset:", pool);

    /* The device's own pools: borrowed, never destroyed by cuscope. */
    cus_autoptr(cus_pool) def = NULL;
    cus_autoptr(cus_pool) current = NULL;
    CUS_TRY(cus_pool_default(ctx, &def));
    CUS_TRY(cus_pool_current(ctx, &current));
    printf("the default pool is %s\n", cus_pool_handle(def) == cus_pool_handle(current)
                                           ? "the current one"
                                           : "not the current one");

    printf("a pool shared through a file descriptor:\n");
    ok = false;
    CUS_TRY(share(ctx, &ok));
    return ok ? CUS_SUCCESS : CUS_ERROR_INVALID_ARGUMENT;
}

int main(void)
{
    bool on_fake = false;
    if (cus_init() != CUS_SUCCESS) {
        printf("%s\n", cus_last_error_message());
        printf("no GPU here: running on cuscope's fake driver\n");
        if (cus_fake_install(NULL) != CUS_SUCCESS || cus_init() != CUS_SUCCESS) {
            fprintf(stderr, "tutorial-pools: the fake driver failed: %s\n",
                    cus_last_error_message());
            return 1;
        }
        on_fake = true;
    }

    cus_status st = run();
    if (st != CUS_SUCCESS) {
        fprintf(stderr, "tutorial-pools: %s (%s)\n", cus_last_error_message(),
                cus_status_name(st));
        return 1;
    }
    if (cus_debug_live_objects() != 0) {
        fprintf(stderr, "tutorial-pools: %zu objects still alive\n", cus_debug_live_objects());
        return 1;
    }
    if (on_fake && cus_fake_uninstall() != CUS_SUCCESS) {
        fprintf(stderr, "tutorial-pools: %s\n", cus_last_error_message());
        return 1;
    }
    return 0;
}
