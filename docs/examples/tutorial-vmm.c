/* tutorial-vmm: virtual memory, the growable buffer and foreign memory
 * (docs/tutorial.md, "Virtual memory and growable buffers").
 *
 * A reservation with a physical allocation mapped into it, made accessible
 * and used through a buffer view; a growable buffer grown three times in
 * place, its data kept and its address fixed; the rules refused before the
 * driver sees them; and a buffer over memory cuscope did not allocate.
 * Without a GPU it runs on the fake driver.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <cuscope/cuscope.h>
#include <cuscope/fake.h>

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "tutorial-vmm: WRONG: %s\n", #cond);              \
            return CUS_ERROR_INVALID_ARGUMENT;                                 \
        }                                                                      \
    } while (0)

static cus_status read_u32(cus_buffer *b, size_t byte, uint32_t *v)
{
    return cus_copy_to_host(v, b, byte, sizeof *v);
}

/* The three steps by hand: reserve, map, give access; then a view. */
static cus_status by_hand(cus_context *ctx, size_t gran)
{
    cus_autoptr(cus_reservation) res = NULL;
    CUS_TRY(cus_reservation_create(ctx, 4 * gran, 0, 0, &res));
    {
        cus_autoptr(cus_physical) phys = NULL;
        CUS_TRY(cus_physical_create(ctx, 2 * gran, 0, &phys));
        CUS_TRY(cus_reservation_map(res, 0, phys, 0, 2 * gran));
    } /* released: the reservation holds it while it is mapped */
    CUS_TRY(cus_reservation_set_access(res, 0, 2 * gran, CU_MEM_ACCESS_FLAGS_PROT_READWRITE));

    cus_autoptr(cus_buffer) view = NULL;
    CUS_TRY(cus_reservation_buffer(res, 0, 2 * gran, &view));
    CUS_TRY(cus_buffer_fill_u32(view, 0, 0x5eedu, 2 * gran / 4));
    uint32_t v = 0;
    CUS_TRY(read_u32(view, 2 * gran - 4, &v));
    printf("mapped %zu MiB at 0x%llx, filled through a view: %s\n", (2 * gran) >> 20,
           (unsigned long long)cus_reservation_ptr(res), v == 0x5eedu ? "ok" : "WRONG");
    CHECK(v == 0x5eedu);

    /* The rules, refused before any driver call. */
    cus_autoptr(cus_physical) more = NULL;
    CUS_TRY(cus_physical_create(ctx, gran, 0, &more));
    cus_status st = cus_reservation_map(res, gran, more, 0, gran);
    printf("a map over a mapping: %s\n  %s\n", cus_status_name(st), cus_last_error_message());
    CHECK(st == CUS_ERROR_INVALID_ARGUMENT);
    st = cus_reservation_map(res, 2 * gran + 4096, more, 0, gran);
    printf("a map at an offset off the granularity: %s\n", cus_status_name(st));
    CHECK(st == CUS_ERROR_INVALID_ARGUMENT);
    st = cus_reservation_unmap(res, 0, gran);
    printf("an unmap of half a mapping: %s\n", cus_status_name(st));
    CHECK(st == CUS_ERROR_INVALID_ARGUMENT);
    st = cus_reservation_unmap(res, 0, 2 * gran);
    printf("an unmap under a live view: %s\n", cus_status_name(st));
    CHECK(st == CUS_ERROR_BUSY);
    return CUS_SUCCESS; /* the view goes first, then the reservation unmaps */
}

static cus_status growable(cus_context *ctx, size_t gran)
{
    cus_autoptr(cus_growable) g = NULL;
    CUS_TRY(cus_growable_reserve(ctx, 16 * gran, &g));
    CUdeviceptr at = cus_growable_ptr(g);

    CUS_TRY(cus_growable_grow(g, gran));
    cus_autoptr(cus_buffer) first = NULL;
    CUS_TRY(cus_growable_buffer(g, &first));
    CUS_TRY(cus_buffer_fill_u32(first, 0, 1u, gran / 4));

    for (size_t size = 3 * gran; size <= 9 * gran; size += 3 * gran) {
        CUS_TRY(cus_growable_grow(g, size));
        cus_autoptr(cus_buffer) now = NULL;
        CUS_TRY(cus_growable_buffer(g, &now));
        uint32_t v = 0;
        CUS_TRY(read_u32(now, 0, &v));
        printf("grown to %zu MiB: at 0x%llx (%s), first word %u, the old view still %zu "
               "bytes\n",
               size >> 20, (unsigned long long)cus_growable_ptr(g),
               cus_growable_ptr(g) == at ? "unmoved" : "MOVED", v, cus_buffer_size(first));
        CHECK(cus_growable_ptr(g) == at && v == 1u && cus_buffer_size(first) == gran);
    }
    cus_status st = cus_growable_grow(g, 16 * gran + 1);
    printf("growing past the reservation: %s\n", cus_status_name(st));
    CHECK(st == CUS_ERROR_OUT_OF_RANGE);
    return CUS_SUCCESS;
}

/* Memory another library allocated (here, cuscope itself, standing in for
 * cudaMalloc): wrapped, used, and never freed by the wrapper. */
static cus_status foreign(cus_context *ctx)
{
    cus_autoptr(cus_buffer) theirs = NULL;
    CUS_TRY(cus_buffer_alloc(ctx, 4096, &theirs));
    CUdeviceptr ptr = cus_buffer_ptr(theirs); /* all the other library gives us */

    cus_autoptr(cus_buffer) mine = NULL;
    CUS_TRY(cus_buffer_wrap(ctx, ptr, 4096, &mine));
    CUS_TRY(cus_buffer_fill_u32(mine, 0, 42u, 1024));
    uint32_t v = 0;
    CUS_TRY(read_u32(theirs, 4092, &v));
    printf("a wrapped pointer, filled: %u\n", v);
    CHECK(v == 42u);
    cus_status st = cus_buffer_wrap(ctx, ptr, 0, &mine);
    printf("a wrap of 0 bytes: %s\n", cus_status_name(st));
    CHECK(st == CUS_ERROR_INVALID_ARGUMENT);
    return CUS_SUCCESS;
}

static cus_status run(void)
{
    cus_device dev;
    CUS_TRY(cus_device_get(0, &dev));
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(cus_context_retain_primary(dev, &ctx));
    size_t gran = 0;
    CUS_TRY(cus_physical_granularity(ctx, false, &gran));
    printf("granularity: %zu KiB\n", gran >> 10);
    CUS_TRY(by_hand(ctx, gran));
    CUS_TRY(growable(ctx, gran));
    return foreign(ctx);
}

int main(void)
{
    bool on_fake = false;
    if (cus_init() != CUS_SUCCESS) {
        printf("%s\n", cus_last_error_message());
        printf("no GPU here: running on cuscope's fake driver\n");
        if (cus_fake_install(NULL) != CUS_SUCCESS || cus_init() != CUS_SUCCESS) {
            fprintf(stderr, "tutorial-vmm: the fake driver failed: %s\n",
                    cus_last_error_message());
            return 1;
        }
        on_fake = true;
    }
    cus_status st = run();
    if (st != CUS_SUCCESS) {
        fprintf(stderr, "tutorial-vmm: %s (%s)\n", cus_last_error_message(),
                cus_status_name(st));
        return 1;
    }
    if (cus_debug_live_objects() != 0) {
        fprintf(stderr, "tutorial-vmm: %zu objects still alive\n", cus_debug_live_objects());
        return 1;
    }
    if (on_fake && (cus_fake_live_handles(CUS_FAKE_HANDLE_ANY) || cus_fake_misuse_count())) {
        fprintf(stderr, "tutorial-vmm: the fake saw a leak or a misuse: %s\n",
                cus_fake_last_misuse());
        return 1;
    }
    printf("done\n");
    return 0;
}
