/* Devices: configuration, attributes, and the entry points cuInit,
 * cuDriverGetVersion and cuDevice*. Primary contexts live in fake_context.c. */
#include <stdio.h>
#include <string.h>

#include "fake_device.h"

_Static_assert(CU_DEVICE_ATTRIBUTE_MAX <= FAKE_ATTRIBUTE_SLOTS, "grow FAKE_ATTRIBUTE_SLOTS");

/* The attributes a query may name: 1 .. CU_DEVICE_ATTRIBUTE_MAX - 1 of the
 * headers the fake was built with (0 and MAX are CUDA_ERROR_INVALID_VALUE on
 * the real driver). */
static bool attribute_valid(int attr)
{
    return attr >= 1 && attr < CU_DEVICE_ATTRIBUTE_MAX;
}

#define A(name) [CU_DEVICE_ATTRIBUTE_##name]

/* A Hopper (H100/H200 class) device: the values an H200 reports (driver
 * 580.159.04), with the memory system of an H100 SXM (clock, bus width, L2).
 * Attributes missing here answer 0. MULTIPROCESSOR_COUNT, the compute
 * capability and PCI_BUS_ID come from the configuration and the ordinal. */
static const int hopper_attributes[FAKE_ATTRIBUTE_SLOTS] = {
    A(MAX_THREADS_PER_BLOCK) = 1024,
    A(MAX_BLOCK_DIM_X) = 1024,
    A(MAX_BLOCK_DIM_Y) = 1024,
    A(MAX_BLOCK_DIM_Z) = 64,
    A(MAX_GRID_DIM_X) = 2147483647,
    A(MAX_GRID_DIM_Y) = 65535,
    A(MAX_GRID_DIM_Z) = 65535,
    A(MAX_SHARED_MEMORY_PER_BLOCK) = 49152,
    A(TOTAL_CONSTANT_MEMORY) = 65536,
    A(WARP_SIZE) = 32,
    A(MAX_PITCH) = 2147483647,
    A(MAX_REGISTERS_PER_BLOCK) = 65536,
    A(CLOCK_RATE) = 1980000,
    A(TEXTURE_ALIGNMENT) = 512,
    A(GPU_OVERLAP) = 1,
    A(CAN_MAP_HOST_MEMORY) = 1,
    A(MAXIMUM_TEXTURE1D_WIDTH) = 131072,
    A(MAXIMUM_TEXTURE2D_WIDTH) = 131072,
    A(MAXIMUM_TEXTURE2D_HEIGHT) = 65536,
    A(MAXIMUM_TEXTURE3D_WIDTH) = 16384,
    A(MAXIMUM_TEXTURE3D_HEIGHT) = 16384,
    A(MAXIMUM_TEXTURE3D_DEPTH) = 16384,
    A(MAXIMUM_TEXTURE2D_LAYERED_WIDTH) = 32768,
    A(MAXIMUM_TEXTURE2D_LAYERED_HEIGHT) = 32768,
    A(MAXIMUM_TEXTURE2D_LAYERED_LAYERS) = 2048,
    A(SURFACE_ALIGNMENT) = 512,
    A(CONCURRENT_KERNELS) = 1,
    A(ECC_ENABLED) = 1,
    A(MEMORY_CLOCK_RATE) = 2619000,
    A(GLOBAL_MEMORY_BUS_WIDTH) = 5120,
    A(L2_CACHE_SIZE) = 52428800,
    A(MAX_THREADS_PER_MULTIPROCESSOR) = 2048,
    A(ASYNC_ENGINE_COUNT) = 3,
    A(UNIFIED_ADDRESSING) = 1,
    A(MAXIMUM_TEXTURE1D_LAYERED_WIDTH) = 32768,
    A(MAXIMUM_TEXTURE1D_LAYERED_LAYERS) = 2048,
    A(CAN_TEX2D_GATHER) = 1,
    A(MAXIMUM_TEXTURE2D_GATHER_WIDTH) = 32768,
    A(MAXIMUM_TEXTURE2D_GATHER_HEIGHT) = 32768,
    A(MAXIMUM_TEXTURE3D_WIDTH_ALTERNATE) = 8192,
    A(MAXIMUM_TEXTURE3D_HEIGHT_ALTERNATE) = 8192,
    A(MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE) = 32768,
    A(TEXTURE_PITCH_ALIGNMENT) = 32,
    A(MAXIMUM_TEXTURECUBEMAP_WIDTH) = 32768,
    A(MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH) = 32768,
    A(MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS) = 2046,
    A(MAXIMUM_SURFACE1D_WIDTH) = 32768,
    A(MAXIMUM_SURFACE2D_WIDTH) = 131072,
    A(MAXIMUM_SURFACE2D_HEIGHT) = 65536,
    A(MAXIMUM_SURFACE3D_WIDTH) = 16384,
    A(MAXIMUM_SURFACE3D_HEIGHT) = 16384,
    A(MAXIMUM_SURFACE3D_DEPTH) = 16384,
    A(MAXIMUM_SURFACE1D_LAYERED_WIDTH) = 32768,
    A(MAXIMUM_SURFACE1D_LAYERED_LAYERS) = 2048,
    A(MAXIMUM_SURFACE2D_LAYERED_WIDTH) = 32768,
    A(MAXIMUM_SURFACE2D_LAYERED_HEIGHT) = 32768,
    A(MAXIMUM_SURFACE2D_LAYERED_LAYERS) = 2048,
    A(MAXIMUM_SURFACECUBEMAP_WIDTH) = 32768,
    A(MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH) = 32768,
    A(MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS) = 2046,
    A(MAXIMUM_TEXTURE1D_LINEAR_WIDTH) = 268435456,
    A(MAXIMUM_TEXTURE2D_LINEAR_WIDTH) = 131072,
    A(MAXIMUM_TEXTURE2D_LINEAR_HEIGHT) = 65000,
    A(MAXIMUM_TEXTURE2D_LINEAR_PITCH) = 2097120,
    A(MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH) = 32768,
    A(MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT) = 32768,
    A(MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH) = 32768,
    A(STREAM_PRIORITIES_SUPPORTED) = 1,
    A(GLOBAL_L1_CACHE_SUPPORTED) = 1,
    A(LOCAL_L1_CACHE_SUPPORTED) = 1,
    A(MAX_SHARED_MEMORY_PER_MULTIPROCESSOR) = 233472,
    A(MAX_REGISTERS_PER_MULTIPROCESSOR) = 65536,
    A(MANAGED_MEMORY) = 1,
    A(SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO) = 2,
    A(CONCURRENT_MANAGED_ACCESS) = 1,
    A(COMPUTE_PREEMPTION_SUPPORTED) = 1,
    A(CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM) = 1,
    A(COOPERATIVE_LAUNCH) = 1,
    A(COOPERATIVE_MULTI_DEVICE_LAUNCH) = 1,
    A(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN) = 232448,
    A(HOST_REGISTER_SUPPORTED) = 1,
    A(VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED) = 1,
    A(HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED) = 1,
    A(MAX_BLOCKS_PER_MULTIPROCESSOR) = 32,
    A(GENERIC_COMPRESSION_SUPPORTED) = 1,
    A(MAX_PERSISTING_L2_CACHE_SIZE) = 39321600,
    A(MAX_ACCESS_POLICY_WINDOW_SIZE) = 134217728,
    A(GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED) = 1,
    A(RESERVED_SHARED_MEMORY_PER_BLOCK) = 1024,
    A(SPARSE_CUDA_ARRAY_SUPPORTED) = 1,
    A(READ_ONLY_HOST_REGISTER_SUPPORTED) = 1,
    A(TIMELINE_SEMAPHORE_INTEROP_SUPPORTED) = 1,
    A(MEMORY_POOLS_SUPPORTED) = 1,
    A(GPU_DIRECT_RDMA_SUPPORTED) = 1,
    A(GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS) = 1,
    A(GPU_DIRECT_RDMA_WRITES_ORDERING) = 100,
    A(MEMPOOL_SUPPORTED_HANDLE_TYPES) = 9,
    A(CLUSTER_LAUNCH) = 1,
    A(DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED) = 1,
    A(CAN_USE_64_BIT_STREAM_MEM_OPS) = 1,
    A(CAN_USE_STREAM_WAIT_VALUE_NOR) = 1,
    A(DMA_BUF_SUPPORTED) = 1,
    A(IPC_EVENT_SUPPORTED) = 1,
    A(MEM_SYNC_DOMAIN_COUNT) = 4,
    A(TENSOR_MAP_ACCESS_SUPPORTED) = 1,
    [128] = 1, /* HANDLE_TYPE_FABRIC_SUPPORTED */
    [129] = 1, /* UNIFIED_FUNCTION_POINTERS */
    [131] = -1, /* NUMA_ID */
    [139] = 590352606, /* GPU_PCI_DEVICE_ID */
    [140] = 381751518, /* GPU_PCI_SUBSYSTEM_ID */
    [141] = 1, /* HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED */
    [142] = 1, /* HOST_NUMA_MEMORY_POOLS_SUPPORTED */
    [144] = 1, /* HOST_MEMORY_POOLS_SUPPORTED */
    [145] = 1, /* HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED */
};

#undef A

static bool device_config_valid(const cus_fake_device_config *dc)
{
    if (dc->cc_major < 0 || dc->cc_minor < 0 || dc->multiprocessor_count < 0)
        return false;
    if (dc->override_count < 0 || dc->override_count > CUS_FAKE_MAX_ATTRIBUTE_OVERRIDES)
        return false;
    for (int i = 0; i < dc->override_count; i++)
        if (!attribute_valid((int)dc->overrides[i].attribute))
            return false;
    return true;
}

static void device_configure(fake_device *d, int ordinal, const cus_fake_device_config *dc)
{
    static const cus_fake_device_config defaults;
    if (!dc)
        dc = &defaults;
    memset(d, 0, sizeof *d);
    if (dc->name)
        snprintf(d->name, sizeof d->name, "%s", dc->name);
    else
        snprintf(d->name, sizeof d->name, "cuscope fake GPU %d", ordinal);
    d->total_memory = dc->total_memory ? dc->total_memory : (size_t)80 << 30;

    /* Deterministic and distinct per ordinal, shaped like a version-4 UUID. */
    static const unsigned char uuid_base[16] = {0xc5, 0xc0, 0x9e, 0xfa, 0x4b, 0xe0, 0x4a, 0x11,
                                                0x9a, 0x5e, 0xfa, 0x4e, 0x00, 0x00, 0x00, 0x00};
    memcpy(d->uuid.bytes, uuid_base, sizeof uuid_base);
    d->uuid.bytes[14] = (char)((ordinal >> 8) & 0xff);
    d->uuid.bytes[15] = (char)(ordinal & 0xff);

    memcpy(d->attributes, hopper_attributes, sizeof d->attributes);
    d->attributes[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR] = dc->cc_major ? dc->cc_major : 9;
    d->attributes[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR] = dc->cc_minor;
    d->attributes[CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT] =
        dc->multiprocessor_count ? dc->multiprocessor_count : 132;
    d->attributes[CU_DEVICE_ATTRIBUTE_PCI_BUS_ID] = ordinal + 1;
    /* Overrides last: they win over everything above. */
    for (int i = 0; i < dc->override_count; i++)
        d->attributes[dc->overrides[i].attribute] = dc->overrides[i].value;
}

/* --- the area: configuration --------------------------------------------------------------- */

fake_devices fake_dev;

static bool devices_config_valid(const cus_fake_config *cfg)
{
    if (!cfg)
        return true;
    if (cfg->device_count < 0 || cfg->device_count > CUS_FAKE_MAX_DEVICES)
        return false;
    if (cfg->devices && !cfg->no_devices) {
        int n = cfg->device_count ? cfg->device_count : 1;
        for (int i = 0; i < n; i++)
            if (!device_config_valid(&cfg->devices[i]))
                return false;
    }
    return true;
}

static void devices_reset_locked(const cus_fake_config *cfg)
{
    memset(&fake_dev, 0, sizeof fake_dev);
    fake_dev.no_devices = cfg && cfg->no_devices;
    fake_dev.count = fake_dev.no_devices ? 0 : (cfg && cfg->device_count ? cfg->device_count : 1);
    for (int i = 0; i < fake_dev.count; i++)
        device_configure(&fake_dev.devices[i], i, cfg && cfg->devices ? &cfg->devices[i] : NULL);
}

/* Last: the contexts' reset may still look at the devices' primary contexts. */
static const fake_area device_area = {
    .name = "device",
    .reset_order = 90,
    .config_valid = devices_config_valid,
    .reset_locked = devices_reset_locked,
};
FAKE_AREA(device_area)

CUS_API cus_status cus_fake_set_attribute(int ordinal, CUdevice_attribute attr, int value)
{
    if (!attribute_valid((int)attr))
        return CUS_ERROR_INVALID_ARGUMENT;
    cus_status st = CUS_ERROR_INVALID_ARGUMENT;
    fake_lock();
    fake_ensure_configured_locked();
    fake_device *d = fake_device_at_locked(ordinal);
    if (d) {
        d->attributes[attr] = value;
        st = CUS_SUCCESS;
    }
    fake_unlock();
    return st;
}

/* --- entry points -------------------------------------------------------------------- */

CUresult CUDAAPI fake_cuDriverGetVersion(int *version)
{
    FAKE_ENTER(cuDriverGetVersion);
    if (!version)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    *version = fake_g.driver_version;
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuInit(unsigned int flags)
{
    FAKE_ENTER(cuInit);
    if (flags != 0)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    if (fake_dev.no_devices)
        return fake_leave(CUDA_ERROR_NO_DEVICE);
    fake_g.initialized = true;
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuDeviceGetCount(int *count)
{
    FAKE_ENTER(cuDeviceGetCount);
    if (!count)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    *count = fake_dev.count;
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuDeviceGet(CUdevice_v1 *device, int ordinal)
{
    FAKE_ENTER(cuDeviceGet);
    if (!device)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    if (!fake_device_at_locked(ordinal))
        return fake_leave(CUDA_ERROR_INVALID_DEVICE);
    *device = ordinal;
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuDeviceGetName(char *name, int len, CUdevice_v1 dev)
{
    FAKE_ENTER(cuDeviceGetName);
    if (!name || len <= 0)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    fake_device *d = fake_device_at_locked(dev);
    if (!d)
        return fake_leave(CUDA_ERROR_INVALID_DEVICE);
    /* Truncated to len - 1 characters and terminated, as the driver does. */
    snprintf(name, (size_t)len, "%s", d->name);
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuDeviceGetUuid(CUuuid *uuid, CUdevice_v1 dev)
{
    FAKE_ENTER(cuDeviceGetUuid);
    if (!uuid)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    fake_device *d = fake_device_at_locked(dev);
    if (!d)
        return fake_leave(CUDA_ERROR_INVALID_DEVICE);
    *uuid = d->uuid;
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuDeviceTotalMem(size_t *bytes, CUdevice_v1 dev)
{
    FAKE_ENTER(cuDeviceTotalMem);
    if (!bytes)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    fake_device *d = fake_device_at_locked(dev);
    if (!d)
        return fake_leave(CUDA_ERROR_INVALID_DEVICE);
    *bytes = d->total_memory;
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice_v1 dev)
{
    FAKE_ENTER(cuDeviceGetAttribute);
    if (!pi || !attribute_valid((int)attrib))
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    fake_device *d = fake_device_at_locked(dev);
    if (!d)
        return fake_leave(CUDA_ERROR_INVALID_DEVICE);
    *pi = d->attributes[attrib];
    return fake_leave(CUDA_SUCCESS);
}
