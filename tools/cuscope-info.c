/* cuscope-info: what the CUDA driver and its devices are, the figures people
 * look up (deviceQuery's), through cuscope.
 *
 *   cuscope-info          the real driver; the fake driver's devices, saying
 *                         so, when there is none
 *   cuscope-info --fake   the fake driver, even on a machine with a GPU
 *
 * Exit status: 0, or 1 when the driver (real or fake) failed.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <cuscope/cuscope.h>
#include <cuscope/fake.h>

typedef enum { NUM, KIB, KHZ, FLAG, MODE } shown_as;

typedef struct row {
    const char *group, *label;
    CUdevice_attribute attr;
    shown_as as;
} row;

static const row rows[] = {
    {"compute", "multiprocessors", CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, NUM},
    {"compute", "max threads per multiprocessor",
     CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, NUM},
    {"compute", "max threads per block", CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, NUM},
    {"compute", "max block x", CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, NUM},
    {"compute", "max block y", CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, NUM},
    {"compute", "max block z", CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, NUM},
    {"compute", "max grid x", CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, NUM},
    {"compute", "max grid y", CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, NUM},
    {"compute", "max grid z", CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, NUM},
    {"compute", "warp size", CU_DEVICE_ATTRIBUTE_WARP_SIZE, NUM},
    {"compute", "registers per block", CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, NUM},
    {"compute", "registers per multiprocessor",
     CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, NUM},
    {"compute", "clock rate", CU_DEVICE_ATTRIBUTE_CLOCK_RATE, KHZ},
    {"compute", "concurrent kernels", CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS, FLAG},
    {"compute", "cooperative launch", CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, FLAG},
    {"compute", "cluster launch", CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH, FLAG},
    {"compute", "compute mode", CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, MODE},
    {"memory", "shared memory per block", CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, KIB},
    {"memory", "shared memory per block (opt-in)",
     CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, KIB},
    {"memory", "shared memory per multiprocessor",
     CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, KIB},
    {"memory", "constant memory", CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY, KIB},
    {"memory", "L2 cache", CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, KIB},
    {"memory", "memory clock rate", CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, KHZ},
    {"memory", "memory bus width (bits)", CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, NUM},
    {"memory", "ECC", CU_DEVICE_ATTRIBUTE_ECC_ENABLED, FLAG},
    {"memory", "unified addressing", CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, FLAG},
    {"memory", "managed memory", CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, FLAG},
    {"memory", "concurrent managed access", CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, FLAG},
    {"memory", "stream-ordered allocation", CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, FLAG},
    {"memory", "async engines", CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, NUM},
    {"bus", "PCI domain", CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, NUM},
    {"bus", "PCI bus", CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, NUM},
    {"bus", "PCI device", CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, NUM},
};

static void show_value(const row *r, int v)
{
    static const char *const modes[] = {"default", "exclusive thread", "prohibited",
                                        "exclusive process"};
    switch (r->as) {
    case NUM:
        printf("%d", v);
        break;
    case KIB:
        if (v >= 1 << 20)
            printf("%.1f MiB", v / 1048576.0);
        else
            printf("%d KiB", v / 1024);
        break;
    case KHZ: /* the driver reports kHz */
        printf("%d MHz", v / 1000);
        break;
    case FLAG:
        fputs(v ? "yes" : "no", stdout);
        break;
    case MODE:
        fputs(v >= 0 && v < 4 ? modes[v] : "?", stdout);
        break;
    }
}

static cus_status show_device(int ordinal)
{
    cus_device dev;
    CUS_TRY(cus_device_get(ordinal, &dev));
    char name[256], uuid[CUS_DEVICE_UUID_STRING_LEN];
    int major, minor;
    size_t total;
    CUS_TRY(cus_device_name(dev, name, sizeof name));
    CUS_TRY(cus_device_uuid_string(dev, uuid));
    CUS_TRY(cus_device_compute_capability(dev, &major, &minor));
    CUS_TRY(cus_device_total_memory(dev, &total));
    printf("device %d: %s, compute capability %d.%d (sm_%d%d)\n", ordinal, name, major, minor,
           major, minor);
    printf("  %-36s %s\n", "UUID", uuid);
    printf("  %-36s %.2f GiB\n", "total memory", (double)total / 1073741824.0);

    /* Free memory needs a context: the primary one, released on return. */
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(cus_context_retain_primary(dev, &ctx));
    size_t free_bytes, total_bytes;
    CUS_TRY(cus_memory_info(ctx, &free_bytes, &total_bytes));
    printf("  %-36s %.2f GiB\n", "free memory (primary context)",
           (double)free_bytes / 1073741824.0);
    int least, greatest;
    CUS_TRY(cus_context_stream_priority_range(ctx, &least, &greatest));
    printf("  %-36s %d (greatest) .. %d (least)\n", "stream priorities", greatest, least);

    const char *group = "";
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        int v;
        /* An attribute the driver does not know (an older one) is skipped. */
        if (cus_device_attribute(dev, rows[i].attr, &v) != CUS_SUCCESS)
            continue;
        if (strcmp(group, rows[i].group) != 0) {
            group = rows[i].group;
            printf("  %s\n", group);
        }
        printf("    %-34s ", rows[i].label);
        show_value(&rows[i], v);
        putchar('\n');
    }
    return CUS_SUCCESS;
}

/* Which device can address which one's memory. */
static cus_status show_peers(int count)
{
    if (count < 2)
        return CUS_SUCCESS;
    printf("\npeer access (row: from, column: to)\n      ");
    for (int j = 0; j < count; j++)
        printf(" %4d", j);
    putchar('\n');
    for (int i = 0; i < count; i++) {
        cus_device di;
        CUS_TRY(cus_device_get(i, &di));
        cus_autoptr(cus_context) ci = NULL;
        CUS_TRY(cus_context_retain_primary(di, &ci));
        printf("  %4d", i);
        for (int j = 0; j < count; j++) {
            if (i == j) {
                printf("    -");
                continue;
            }
            cus_device dj;
            CUS_TRY(cus_device_get(j, &dj));
            cus_autoptr(cus_context) cj = NULL;
            CUS_TRY(cus_context_retain_primary(dj, &cj));
            bool can = false;
            CUS_TRY(cus_context_can_access_peer(ci, cj, &can));
            printf(" %4s", can ? "yes" : "no");
        }
        putchar('\n');
    }
    return CUS_SUCCESS;
}

static cus_status show_all(bool on_fake)
{
    int version, count;
    CUS_TRY(cus_driver_version(&version));
    CUS_TRY(cus_device_count(&count));
    printf("cuscope %s, %s driver, CUDA driver API %d.%d, %d device%s\n\n", cus_version_string(),
           on_fake ? "fake" : "CUDA", version / 1000, version % 1000 / 10, count,
           count == 1 ? "" : "s");
    for (int i = 0; i < count; i++) {
        if (i)
            putchar('\n');
        CUS_TRY(show_device(i));
    }
    return show_peers(count);
}

int main(int argc, char **argv)
{
    bool want_fake = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--fake") == 0) {
            want_fake = true;
        } else {
            fprintf(stderr, "usage: %s [--fake]\n", argv[0]);
            return strcmp(argv[i], "--help") == 0 ? 0 : 2;
        }
    }
    bool on_fake = want_fake;
    if (!want_fake && cus_init() != CUS_SUCCESS) {
        printf("%s\n", cus_last_error_message());
        printf("no GPU here: showing cuscope's fake driver instead (cuscope/fake.h)\n\n");
        on_fake = true;
    }
    if (on_fake && (cus_fake_install(NULL) != CUS_SUCCESS || cus_init() != CUS_SUCCESS)) {
        fprintf(stderr, "cuscope-info: the fake driver failed: %s\n", cus_last_error_message());
        return 1;
    }
    cus_status st = show_all(on_fake);
    if (st != CUS_SUCCESS) {
        fprintf(stderr, "cuscope-info: %s (%s)\n", cus_last_error_message(),
                cus_status_name(st));
        return 1;
    }
    if (on_fake && cus_fake_uninstall() != CUS_SUCCESS) {
        fprintf(stderr, "cuscope-info: the fake driver did not uninstall\n");
        return 1;
    }
    return 0;
}
