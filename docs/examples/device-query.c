/* device-query: lists the CUDA devices that the driver sees, with the
 * properties most programs need, through cuscope.
 *
 * Without a GPU (no libcuda.so.1, no device, a driver that is too old) it says
 * why, installs cuscope's fake driver (cuscope/fake.h) and lists the fake's
 * devices instead, so the program always has something to show.
 *
 * The idioms to copy:
 *   - every cuscope call returns a cus_status; CUS_TRY returns it from the
 *     enclosing function on failure, and cus_last_error_message() says what
 *     failed, in which call, on which object;
 *   - cus_autoptr(T) p = NULL; drops the reference at scope exit, on every
 *     return path, so an early CUS_TRY return leaks nothing.
 *
 * Build: part of the meson build (build/docs/examples/device-query), or
 *   cc device-query.c $(pkg-config --cflags --libs cuscope-fake)
 */
#include <stdbool.h>
#include <stdio.h>

#include <cuscope/cuscope.h>
#include <cuscope/fake.h>

enum unit { PLAIN, BYTES, MHZ, BITS, YES_NO };

static const struct {
    CUdevice_attribute attr;
    const char *label;
    enum unit unit;
} attributes[] = {
    {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "multiprocessors (SMs)", PLAIN},
    {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "max threads per block", PLAIN},
    {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, "max shared memory per block", BYTES},
    {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, "  with opt-in", BYTES},
    {CU_DEVICE_ATTRIBUTE_WARP_SIZE, "warp size", PLAIN},
    {CU_DEVICE_ATTRIBUTE_CLOCK_RATE, "clock rate", MHZ},
    {CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, "memory clock rate", MHZ},
    {CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, "memory bus width", BITS},
    {CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, "L2 cache", BYTES},
    {CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS, "concurrent kernels", YES_NO},
    {CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, "unified addressing", YES_NO},
    {CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, "managed memory", YES_NO},
};

static void print_attribute(const char *label, enum unit unit, int v)
{
    printf("  %-30s ", label);
    switch (unit) {
    case PLAIN:
        printf("%d\n", v);
        break;
    case BYTES:
        if (v >= 1024 * 1024)
            printf("%.1f MiB\n", v / (1024.0 * 1024.0));
        else
            printf("%d KiB\n", v / 1024);
        break;
    case MHZ: /* the driver reports kHz */
        printf("%d MHz\n", v / 1000);
        break;
    case BITS:
        printf("%d bits\n", v);
        break;
    case YES_NO:
        printf("%s\n", v ? "yes" : "no");
        break;
    }
}

static cus_status print_device(int ordinal)
{
    cus_device dev;
    CUS_TRY(cus_device_get(ordinal, &dev));

    char name[256];
    char uuid[CUS_DEVICE_UUID_STRING_LEN];
    int major, minor;
    size_t memory;
    CUS_TRY(cus_device_name(dev, name, sizeof name));
    CUS_TRY(cus_device_uuid_string(dev, uuid));
    CUS_TRY(cus_device_compute_capability(dev, &major, &minor));
    CUS_TRY(cus_device_total_memory(dev, &memory));

    printf("device %d: %s\n", ordinal, name);
    printf("  %-30s %s\n", "UUID", uuid);
    printf("  %-30s %d.%d\n", "compute capability", major, minor);
    printf("  %-30s %.1f GiB\n", "total memory", (double)memory / (1024.0 * 1024.0 * 1024.0));

    for (size_t i = 0; i < sizeof attributes / sizeof attributes[0]; i++) {
        int v;
        CUS_TRY(cus_device_attribute(dev, attributes[i].attr, &v));
        print_attribute(attributes[i].label, attributes[i].unit, v);
    }

    /* The primary context is the one the runtime API and most libraries share.
     * Retaining it does not make it current; the calls below make it current
     * for themselves and restore the thread's stack. The autoptr releases the
     * retain when the function returns, on the error paths too. */
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(cus_context_retain_primary(dev, &ctx));

    unsigned int api_version;
    int least, greatest;
    CUS_TRY(cus_context_api_version(ctx, &api_version));
    CUS_TRY(cus_context_stream_priority_range(ctx, &least, &greatest));
    printf("  %-30s %u.%u\n", "primary context API version", api_version / 1000,
           api_version % 1000 / 10);
    printf("  %-30s %d (greatest) .. %d (least)\n", "stream priorities", greatest, least);
    return CUS_SUCCESS;
}

static cus_status print_devices(void)
{
    int version, count;
    CUS_TRY(cus_driver_version(&version));
    CUS_TRY(cus_device_count(&count));
    printf("driver API version %d.%d, %d device%s\n\n", version / 1000, version % 1000 / 10,
           count, count == 1 ? "" : "s");
    for (int i = 0; i < count; i++) {
        if (i > 0)
            printf("\n");
        CUS_TRY(print_device(i));
    }
    return CUS_SUCCESS;
}

int main(void)
{
    bool on_fake = false;
    cus_status st = cus_init();
    if (st != CUS_SUCCESS) {
        printf("%s\n", cus_last_error_message());
        printf("no GPU here: showing the fake driver's devices instead (cuscope/fake.h)\n\n");
        st = cus_fake_install(NULL); /* one default device */
        if (st == CUS_SUCCESS)
            st = cus_init();
        if (st != CUS_SUCCESS) {
            fprintf(stderr, "device-query: the fake driver failed: %s\n",
                    cus_last_error_message());
            return 1;
        }
        on_fake = true;
    }

    st = print_devices();
    if (st != CUS_SUCCESS) {
        fprintf(stderr, "device-query: %s (%s)\n", cus_last_error_message(),
                cus_status_name(st));
        return 1;
    }

    /* Every object is gone by now, so the fake can be torn down. */
    if (on_fake && cus_fake_uninstall() != CUS_SUCCESS) {
        fprintf(stderr, "device-query: %s\n", cus_last_error_message());
        return 1;
    }
    return 0;
}
