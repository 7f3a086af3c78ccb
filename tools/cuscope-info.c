/* cuscope-info: what the CUDA driver and its devices are, the figures people
 * look up (deviceQuery's), through cuscope.
 *
 *   cuscope-info            the real driver and its devices
 *   cuscope-info --fake     cuscope's fake driver instead (loaded only then)
 *   cuscope-info --json     the same as one JSON object on stdout
 *   cuscope-info --version  cuscope's version
 *   cuscope-info --help     this usage
 *
 * Exit status (EXIT_* below): 0 shown; 1 the driver failed while showing;
 * 2 usage; 3 no CUDA driver could be loaded; 4 a driver but no device; 5 the
 * fake driver could not be loaded (--fake). A script can tell a machine with
 * no GPU from one with a GPU without parsing the output.
 */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <cuscope/cuscope.h>

enum {
    EXIT_SHOWN = 0,
    EXIT_FAILED = 1,
    EXIT_USAGE = 2,
    EXIT_NO_DRIVER = 3,
    EXIT_NO_DEVICE = 4,
    EXIT_NO_FAKE = 5,
};

static const char usage[] =
    "usage: cuscope-info [--fake] [--json] | --version | --help\n"
    "  the CUDA driver and its devices, as cuscope sees them\n"
    "  --fake     show cuscope's fake driver instead (libcuscope-fake.so.0, loaded only then)\n"
    "  --json     one JSON object on stdout instead of text\n"
    "  --version  print cuscope's version and exit\n"
    "  --help     print this and exit\n"
    "exit status: 0 shown, 1 the driver failed, 2 usage, 3 no CUDA driver,\n"
    "  4 no CUDA device, 5 the fake driver could not be loaded\n";

static bool json;
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

/* A JSON string (device names are printable ASCII, but be safe). */
static void json_string(const char *v)
{
    putchar('"');
    for (const unsigned char *c = (const unsigned char *)v; *c; c++) {
        if (*c == '"' || *c == '\\')
            printf("\\%c", *c);
        else if (*c < 0x20)
            printf("\\u%04x", *c);
        else
            putchar(*c);
    }
    putchar('"');
}

/* An attribute's JSON name: its label, lower case, words joined by '_'. */
static void json_key(const char *label)
{
    putchar('"');
    bool gap = false;
    for (const char *c = label; *c; c++) {
        if ((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || (*c >= 'A' && *c <= 'Z')) {
            if (gap)
                putchar('_');
            putchar(*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c);
            gap = false;
        } else {
            gap = true;
        }
    }
    putchar('"');
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
    /* Free memory needs a context: the primary one, released on return. */
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(cus_context_retain_primary(dev, &ctx));
    size_t free_bytes, total_bytes;
    CUS_TRY(cus_memory_info(ctx, &free_bytes, &total_bytes));
    int least, greatest;
    CUS_TRY(cus_context_stream_priority_range(ctx, &least, &greatest));
    if (json) {
        printf("    {\"ordinal\": %d, \"name\": ", ordinal);
        json_string(name);
        printf(", \"uuid\": \"%s\", \"compute_capability\": \"%d.%d\",\n"
               "     \"total_memory_bytes\": %zu, \"free_memory_bytes\": %zu,\n"
               "     \"stream_priorities\": {\"greatest\": %d, \"least\": %d},\n"
               "     \"attributes\": {",
               uuid, major, minor, total, free_bytes, greatest, least);
    } else {
        printf("device %d: %s, compute capability %d.%d (sm_%d%d)\n", ordinal, name, major,
               minor, major, minor);
        printf("  %-36s %s\n", "UUID", uuid);
        printf("  %-36s %.2f GiB\n", "total memory", (double)total / 1073741824.0);
        printf("  %-36s %.2f GiB\n", "free memory (primary context)",
               (double)free_bytes / 1073741824.0);
        printf("  %-36s %d (greatest) .. %d (least)\n", "stream priorities", greatest, least);
    }
    const char *group = "";
    bool first = true;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        int v;
        /* An attribute the driver does not know (an older one) is skipped. */
        if (cus_device_attribute(dev, rows[i].attr, &v) != CUS_SUCCESS)
            continue;
        if (json) {
            printf("%s\n       ", first ? "" : ",");
            json_key(rows[i].label);
            /* raw values: bytes, kHz, 0/1 and mode numbers as the driver gives them */
            printf(": %d", v);
            first = false;
            continue;
        }
        if (strcmp(group, rows[i].group) != 0) {
            group = rows[i].group;
            printf("  %s\n", group);
        }
        printf("    %-34s ", rows[i].label);
        show_value(&rows[i], v);
        putchar('\n');
    }
    if (json)
        printf("}}");
    return CUS_SUCCESS;
}

/* Which device can address which one's memory. */
static cus_status show_peers(int count)
{
    if (count < 2 && !json)
        return CUS_SUCCESS;
    if (json)
        printf(",\n  \"peer_access\": [");
    else
        printf("\npeer access (row: from, column: to)\n      ");
    for (int j = 0; !json && j < count; j++)
        printf(" %4d", j);
    if (!json)
        putchar('\n');
    for (int i = 0; i < count; i++) {
        cus_device di;
        CUS_TRY(cus_device_get(i, &di));
        cus_autoptr(cus_context) ci = NULL;
        CUS_TRY(cus_context_retain_primary(di, &ci));
        if (json)
            printf("%s[", i ? ", " : "");
        else
            printf("  %4d", i);
        for (int j = 0; j < count; j++) {
            if (i == j) {
                if (json)
                    printf("%snull", j ? ", " : "");
                else
                    printf("    -");
                continue;
            }
            cus_device dj;
            CUS_TRY(cus_device_get(j, &dj));
            cus_autoptr(cus_context) cj = NULL;
            CUS_TRY(cus_context_retain_primary(dj, &cj));
            bool can = false;
            CUS_TRY(cus_context_can_access_peer(ci, cj, &can));
            if (json)
                printf("%s%s", j ? ", " : "", can ? "true" : "false");
            else
                printf(" %4s", can ? "yes" : "no");
        }
        if (json)
            putchar(']');
        else
            putchar('\n');
    }
    if (json)
        putchar(']');
    return CUS_SUCCESS;
}

static cus_status show_all(bool on_fake, int count)
{
    int version;
    CUS_TRY(cus_driver_version(&version));
    if (json)
        printf("{\"cuscope\": \"%s\", \"driver\": \"%s\", \"driver_version\": %d,\n"
               "  \"devices\": [\n",
               cus_version_string(), on_fake ? "fake" : "cuda", version);
    else
        printf("cuscope %s, %s driver, CUDA driver API %d.%d, %d device%s\n\n",
               cus_version_string(), on_fake ? "fake" : "CUDA", version / 1000,
               version % 1000 / 10, count, count == 1 ? "" : "s");
    for (int i = 0; i < count; i++) {
        if (i)
            fputs(json ? ",\n" : "\n", stdout);
        CUS_TRY(show_device(i));
    }
    if (json)
        printf("\n  ]");
    CUS_TRY(show_peers(count));
    if (json)
        printf("}\n");
    return CUS_SUCCESS;
}

/* The fake driver, from libcuscope-fake.so.0, only when asked for: the
 * installed tool does not depend on it. The handle stays open to the end. */
typedef cus_status (*fake_install_fn)(const void *options);
typedef cus_status (*fake_uninstall_fn)(void);
static fake_uninstall_fn fake_uninstall;

static int load_fake(void)
{
    void *h = dlopen("libcuscope-fake.so.0", RTLD_NOW | RTLD_LOCAL);
    void *sym_install = h ? dlsym(h, "cus_fake_install") : NULL;
    void *sym_uninstall = h ? dlsym(h, "cus_fake_uninstall") : NULL;
    fake_install_fn install = NULL;
    /* memcpy: ISO C has no cast between object and function pointers */
    memcpy(&install, &sym_install, sizeof install);
    memcpy(&fake_uninstall, &sym_uninstall, sizeof fake_uninstall);
    if (!install || !fake_uninstall) {
        fprintf(stderr, "cuscope-info: cannot load the fake driver (libcuscope-fake.so.0): %s\n",
                h ? "it lacks cus_fake_install" : dlerror());
        return EXIT_NO_FAKE;
    }
    if (install(NULL) != CUS_SUCCESS || cus_init() != CUS_SUCCESS) {
        fprintf(stderr, "cuscope-info: the fake driver failed: %s\n", cus_last_error_message());
        return EXIT_FAILED;
    }
    return EXIT_SHOWN;
}

int main(int argc, char **argv)
{
    bool want_fake = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--fake") == 0) {
            want_fake = true;
        } else if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(usage, stdout);
            return EXIT_SHOWN;
        } else if (strcmp(argv[i], "--version") == 0) {
            printf("cuscope-info (cuscope %s)\n", cus_version_string());
            return EXIT_SHOWN;
        } else {
            fprintf(stderr, "cuscope-info: unknown argument '%s'\n%s", argv[i], usage);
            return EXIT_USAGE;
        }
    }
    if (want_fake) {
        int rc = load_fake();
        if (rc != EXIT_SHOWN)
            return rc;
    } else if (cus_init() != CUS_SUCCESS) {
        cus_status st = cus_last_status();
        fprintf(stderr, "cuscope-info: %s\n", cus_last_error_message());
        if (st == CUS_ERROR_DRIVER_NOT_FOUND || st == CUS_ERROR_DRIVER_SYMBOL_MISSING ||
            st == CUS_ERROR_DRIVER_TOO_OLD) {
            fprintf(stderr, "cuscope-info: no CUDA driver here (--fake shows cuscope's fake "
                            "driver)\n");
            return EXIT_NO_DRIVER;
        }
        if (st == (cus_status)CUDA_ERROR_NO_DEVICE) {
            fprintf(stderr, "cuscope-info: a CUDA driver but no CUDA device\n");
            return EXIT_NO_DEVICE;
        }
        return EXIT_FAILED;
    }
    int count = 0;
    if (cus_device_count(&count) != CUS_SUCCESS) {
        fprintf(stderr, "cuscope-info: %s\n", cus_last_error_message());
        return EXIT_FAILED;
    }
    if (count == 0 && !want_fake) {
        fprintf(stderr, "cuscope-info: a CUDA driver but no CUDA device\n");
        return EXIT_NO_DEVICE;
    }
    cus_status st = show_all(want_fake, count);
    if (st != CUS_SUCCESS) {
        fprintf(stderr, "cuscope-info: %s (%s)\n", cus_last_error_message(),
                cus_status_name(st));
        return EXIT_FAILED;
    }
    if (want_fake && fake_uninstall() != CUS_SUCCESS) {
        fprintf(stderr, "cuscope-info: the fake driver did not uninstall\n");
        return EXIT_FAILED;
    }
    return EXIT_SHOWN;
}
