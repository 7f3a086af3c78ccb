/* The fake's memory pools (lib/fake/fake_pool.c) through its raw entry
 * points: the driver's rules that cuscope's own checks keep the library's
 * tests from reaching (cuscope/fake.h, "memory pools"). */
#include <string.h>
#include <unistd.h>

#include <cudaTypedefs.h>

#include "harness/check.h"
#include "harness/env.h"

typedef struct pool_api {
    PFN_cuDeviceGetDefaultMemPool_v11020 get_default;
    PFN_cuDeviceGetMemPool_v11020 get_current;
    PFN_cuDeviceSetMemPool_v11020 set_current;
    PFN_cuMemPoolCreate_v11020 create;
    PFN_cuMemPoolDestroy_v11020 destroy;
    PFN_cuMemPoolSetAttribute_v11020 set_attr;
    PFN_cuMemPoolGetAttribute_v11020 get_attr;
    PFN_cuMemPoolTrimTo_v11020 trim;
    PFN_cuMemPoolSetAccess_v11020 set_access;
    PFN_cuMemPoolGetAccess_v11020 get_access;
    PFN_cuMemAllocFromPoolAsync_v11020 alloc;
    PFN_cuMemPoolExportToShareableHandle_v11020 export_pool;
    PFN_cuMemPoolImportFromShareableHandle_v11020 import_pool;
    PFN_cuMemPoolExportPointer_v11020 export_ptr;
    PFN_cuMemPoolImportPointer_v11020 import_ptr;
    PFN_cuMemFreeAsync_v11020 free_async;
    PFN_cuMemFree_v3020 free;
    PFN_cuMemAllocAsync_v11020 alloc_async;
    PFN_cuStreamSynchronize_v2000 sync;
    PFN_cuInit_v2000 init;
    PFN_cuDevicePrimaryCtxRetain_v7000 retain;
    PFN_cuDevicePrimaryCtxRelease_v11000 release;
    PFN_cuCtxPushCurrent_v4000 push;
} pool_api;

static pool_api D;
static const cus_fake_config two = {.device_count = 2};

static int setup(void **state)
{
    (void)state;
    if (env_setup_with(&two))
        return -1;
    RAW(D.get_default, "cuDeviceGetDefaultMemPool", 11020);
    RAW(D.get_current, "cuDeviceGetMemPool", 11020);
    RAW(D.set_current, "cuDeviceSetMemPool", 11020);
    RAW(D.create, "cuMemPoolCreate", 11020);
    RAW(D.destroy, "cuMemPoolDestroy", 11020);
    RAW(D.set_attr, "cuMemPoolSetAttribute", 11020);
    RAW(D.get_attr, "cuMemPoolGetAttribute", 11020);
    RAW(D.trim, "cuMemPoolTrimTo", 11020);
    RAW(D.set_access, "cuMemPoolSetAccess", 11020);
    RAW(D.get_access, "cuMemPoolGetAccess", 11020);
    RAW(D.alloc, "cuMemAllocFromPoolAsync", 11020);
    RAW(D.export_pool, "cuMemPoolExportToShareableHandle", 11020);
    RAW(D.import_pool, "cuMemPoolImportFromShareableHandle", 11020);
    RAW(D.export_ptr, "cuMemPoolExportPointer", 11020);
    RAW(D.import_ptr, "cuMemPoolImportPointer", 11020);
    RAW(D.free_async, "cuMemFreeAsync", 11020);
    RAW(D.free, "cuMemFree", 3020);
    RAW(D.alloc_async, "cuMemAllocAsync", 11020);
    RAW(D.sync, "cuStreamSynchronize", 2000);
    RAW(D.init, "cuInit", 2000);
    RAW(D.retain, "cuDevicePrimaryCtxRetain", 7000);
    RAW(D.release, "cuDevicePrimaryCtxRelease", 11000);
    RAW(D.push, "cuCtxPushCurrent", 4000);
    return D.init(0) == CUDA_SUCCESS ? 0 : -1;
}

static CUmemPoolProps props_on(CUdevice dev, CUmemAllocationHandleType handles)
{
    CUmemPoolProps p;
    memset(&p, 0, sizeof p);
    p.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.handleTypes = handles;
    p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.location.id = dev;
    return p;
}

static CUmemoryPool make_pool(CUdevice dev, CUmemAllocationHandleType handles)
{
    CUmemPoolProps p = props_on(dev, handles);
    CUmemoryPool pool = NULL;
    assert_cu_ok(D.create(&pool, &p));
    return pool;
}

/* A primary context of device 0, current (the legacy stream's). */
static CUcontext enter(void)
{
    CUcontext c = NULL;
    assert_cu_ok(D.retain(&c, 0));
    assert_cu_ok(D.push(c));
    return c;
}

static void leave(void)
{
    raw_pop_current();
    assert_cu_ok(D.release(0));
}

static void test_device_pools(void **state)
{
    (void)state;
    CUmemoryPool def0 = NULL, def1 = NULL, cur = NULL;
    assert_cu_ok(D.get_default(&def0, 0));
    assert_cu_ok(D.get_default(&def1, 1));
    assert_true(def0 != def1);
    assert_cu_ok(D.get_current(&cur, 0));
    assert_ptr_equal(cur, def0);
    assert_cu(D.get_default(&cur, 2), CUDA_ERROR_INVALID_DEVICE);
    assert_cu(D.get_default(NULL, 0), CUDA_ERROR_INVALID_VALUE);
    /* The default pool cannot be destroyed. */
    assert_cu(D.destroy(def0), CUDA_ERROR_INVALID_VALUE);
    CUmemoryPool mine = make_pool(0, CU_MEM_HANDLE_TYPE_NONE);
    /* Current only on its own device. */
    assert_cu(D.set_current(1, mine), CUDA_ERROR_INVALID_VALUE);
    assert_cu_ok(D.set_current(0, mine));
    assert_cu_ok(D.get_current(&cur, 0));
    assert_ptr_equal(cur, mine);
    /* Destroying the current pool makes the default current again. */
    assert_cu_ok(D.destroy(mine));
    assert_cu_ok(D.get_current(&cur, 0));
    assert_ptr_equal(cur, def0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MEMORY_POOL), 0);
    /* A destroyed pool is misuse. */
    unsigned long misuse = cus_fake_misuse_count();
    assert_cu(D.trim(mine, 0), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cus_fake_misuse_count(), misuse + 1);
    assert_non_null(strstr(cus_fake_last_misuse(), "after its cuMemPoolDestroy"));
    assert_int_equal(env_setup_with(&two), 0); /* the misuse was the point */
}

static void test_create_rules(void **state)
{
    (void)state;
    CUmemoryPool pool = NULL;
    CUmemPoolProps p = props_on(0, CU_MEM_HANDLE_TYPE_NONE);
    p.allocType = CU_MEM_ALLOCATION_TYPE_INVALID;
    assert_cu(D.create(&pool, &p), CUDA_ERROR_INVALID_VALUE);
    p = props_on(5, CU_MEM_HANDLE_TYPE_NONE);
    assert_cu(D.create(&pool, &p), CUDA_ERROR_INVALID_VALUE);
    p = props_on(0, CU_MEM_HANDLE_TYPE_FABRIC); /* not emulated */
    assert_cu(D.create(&pool, &p), CUDA_ERROR_NOT_SUPPORTED);
    p = props_on(0, CU_MEM_HANDLE_TYPE_NONE);
    p.reserved[3] = 1;
    assert_cu(D.create(&pool, &p), CUDA_ERROR_INVALID_VALUE);
    assert_cu(D.create(&pool, NULL), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MEMORY_POOL), 0);
}

static void test_attribute_rules(void **state)
{
    (void)state;
    CUcontext c = enter();
    CUmemoryPool pool = make_pool(0, CU_MEM_HANDLE_TYPE_NONE);
    cuuint64_t v = 5;
    assert_cu(D.set_attr(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &v), CUDA_ERROR_INVALID_VALUE);
    assert_cu(D.set_attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &v), CUDA_ERROR_INVALID_VALUE);
    v = 0;
    assert_cu(D.set_attr(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &v), CUDA_ERROR_INVALID_VALUE);
    assert_cu(D.set_attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &v),
              CUDA_ERROR_INVALID_VALUE);
    assert_cu(D.set_attr(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, NULL), CUDA_ERROR_INVALID_VALUE);
    assert_cu(D.get_attr(pool, (CUmemPool_attribute)99, &v), CUDA_ERROR_INVALID_VALUE);
    /* Accounting: an allocation counts from the call, until its free executes. */
    CUdeviceptr d = 0;
    assert_cu_ok(D.alloc(&d, 4096, pool, NULL));
    assert_cu_ok(D.get_attr(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &v));
    assert_int_equal(v, 4096);
    assert_cu_ok(D.free_async(d, NULL));
    assert_cu_ok(D.get_attr(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &v));
    assert_int_equal(v, 4096); /* queued, not executed */
    assert_cu_ok(D.sync(NULL));
    assert_cu_ok(D.get_attr(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &v));
    assert_int_equal(v, 0);
    assert_cu_ok(D.get_attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &v));
    assert_int_equal(v, 0); /* threshold 0: given back */
    assert_cu_ok(D.get_attr(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &v));
    assert_int_equal(v, 4096);
    /* cuMemAllocAsync takes the current pool. */
    assert_cu_ok(D.set_current(0, pool));
    assert_cu_ok(D.alloc_async(&d, 8192, NULL));
    assert_cu_ok(D.get_attr(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &v));
    assert_int_equal(v, 8192);
    assert_cu_ok(D.free_async(d, NULL));
    assert_cu_ok(D.sync(NULL));
    assert_cu_ok(D.destroy(pool));
    (void)c;
    leave();
}

static void test_access_rules(void **state)
{
    (void)state;
    CUmemoryPool pool = make_pool(0, CU_MEM_HANDLE_TYPE_NONE);
    CUmemAccessDesc map[2];
    memset(map, 0, sizeof map);
    map[0].location.type = map[1].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    map[0].location.id = 1;
    map[0].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    map[1].location.id = 0;
    map[1].flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;
    /* Validated as a whole: the owner's entry refuses the map, and device 1
     * gets nothing. */
    assert_cu(D.set_access(pool, map, 2), CUDA_ERROR_INVALID_DEVICE);
    CUmemAccess_flags f = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CUmemLocation loc = {CU_MEM_LOCATION_TYPE_DEVICE, 1};
    assert_cu_ok(D.get_access(&f, pool, &loc));
    assert_int_equal(f, CU_MEM_ACCESS_FLAGS_PROT_NONE);
    map[1].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    assert_cu_ok(D.set_access(pool, map, 2));
    assert_cu_ok(D.get_access(&f, pool, &loc));
    assert_int_equal(f, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    map[0].location.type = CU_MEM_LOCATION_TYPE_HOST;
    assert_cu(D.set_access(pool, map, 1), CUDA_ERROR_INVALID_VALUE);
    assert_cu(D.set_access(pool, NULL, 1), CUDA_ERROR_INVALID_VALUE);
    loc.id = 9;
    assert_cu(D.get_access(&f, pool, &loc), CUDA_ERROR_INVALID_DEVICE);
    assert_cu_ok(D.destroy(pool));
}

static void test_ipc_rules(void **state)
{
    (void)state;
    CUcontext c = enter();
    CUmemoryPool plain = make_pool(0, CU_MEM_HANDLE_TYPE_NONE);
    CUmemoryPool ipc = make_pool(0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    CUmemoryPool def = NULL;
    assert_cu_ok(D.get_default(&def, 0));
    int fd = -1;
    /* Export only with the handle type, asked for by it, flags 0. */
    assert_cu(D.export_pool(&fd, plain, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
              CUDA_ERROR_INVALID_VALUE);
    assert_cu(D.export_pool(&fd, def, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
              CUDA_ERROR_INVALID_VALUE);
    assert_cu(D.export_pool(&fd, ipc, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 1),
              CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(fd, -1);
    assert_cu_ok(D.export_pool(&fd, ipc, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    CUmemoryPool imp = NULL;
    assert_cu_ok(D.import_pool(&imp, (void *)(intptr_t)fd,
                               CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    int copy = dup(fd); /* any descriptor of the same file */
    CUmemoryPool imp2 = NULL;
    assert_cu_ok(D.import_pool(&imp2, (void *)(intptr_t)copy,
                               CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    close(copy);
    close(fd);
    assert_true(imp != imp2);
    /* An imported pool allocates nothing and is never current. */
    CUdeviceptr d = 0;
    assert_cu(D.alloc(&d, 64, imp, NULL), CUDA_ERROR_INVALID_VALUE);
    assert_cu(D.set_current(0, imp), CUDA_ERROR_INVALID_VALUE);
    /* Pointers: of an exportable pool's allocation only. */
    CUdeviceptr of_plain = 0, of_ipc = 0;
    assert_cu_ok(D.alloc(&of_plain, 256, plain, NULL));
    assert_cu_ok(D.alloc(&of_ipc, 256, ipc, NULL));
    assert_cu_ok(D.sync(NULL));
    CUmemPoolPtrExportData data;
    assert_cu(D.export_ptr(&data, of_plain), CUDA_ERROR_INVALID_VALUE);
    assert_cu(D.export_ptr(&data, of_ipc + 16), CUDA_ERROR_INVALID_VALUE);
    assert_cu_ok(D.export_ptr(&data, of_ipc));
    /* Imported into an imported pool of that pool only. */
    CUdeviceptr view = 0;
    assert_cu(D.import_ptr(&view, ipc, &data), CUDA_ERROR_INVALID_VALUE);
    assert_cu_ok(D.import_ptr(&view, imp, &data));
    assert_true(view != of_ipc);
    memset((void *)(uintptr_t)view, 0x3c, 256); /* the fake's memory is the host's */
    assert_int_equal(((unsigned char *)(uintptr_t)of_ipc)[255], 0x3c);
    /* Not counted twice in the device's bytes. */
    assert_int_equal(cus_fake_device_bytes_in_use(0), 512);
    assert_cu_ok(D.free(view));
    assert_cu_ok(D.free_async(of_plain, NULL));
    assert_cu_ok(D.free_async(of_ipc, NULL));
    assert_cu_ok(D.sync(NULL));
    /* A pointer freed since: refused. */
    assert_cu(D.import_ptr(&view, imp2, &data), CUDA_ERROR_INVALID_VALUE);
    /* Imported pools keep what they reserved: trim does nothing. */
    cuuint64_t v = 0;
    assert_cu_ok(D.get_attr(imp, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &v));
    assert_int_equal(v, 256);
    assert_cu_ok(D.trim(imp, 0));
    assert_cu_ok(D.get_attr(imp, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &v));
    assert_int_equal(v, 256);
    /* A descriptor that is not an exported pool's. */
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    assert_cu(D.import_pool(&imp2, (void *)(intptr_t)fds[0],
                            CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
              CUDA_ERROR_INVALID_VALUE);
    close(fds[0]);
    close(fds[1]);
    assert_cu_ok(D.destroy(imp));
    assert_cu_ok(D.destroy(imp2));
    assert_cu_ok(D.destroy(ipc));
    assert_cu_ok(D.destroy(plain));
    assert_int_equal(cus_fake_device_bytes_in_use(0), 0);
    (void)c;
    leave();
}

static void test_every_entry_point_fails_on_demand(void **state)
{
    (void)state;
    static const char *const entries[] = {
        "cuDeviceGetDefaultMemPool", "cuDeviceGetMemPool", "cuDeviceSetMemPool",
        "cuMemPoolCreate", "cuMemPoolDestroy", "cuMemPoolSetAttribute",
        "cuMemPoolGetAttribute", "cuMemPoolTrimTo", "cuMemPoolSetAccess",
        "cuMemPoolGetAccess", "cuMemAllocFromPoolAsync", "cuMemPoolExportToShareableHandle",
        "cuMemPoolImportFromShareableHandle", "cuMemPoolExportPointer",
        "cuMemPoolImportPointer"};
    CUmemoryPool def = NULL;
    assert_cu_ok(D.get_default(&def, 0));
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++)
        assert_ok(cus_fake_fail_entry(entries[i], 1, CUDA_ERROR_UNKNOWN, false));
    CUmemoryPool pool = NULL;
    cuuint64_t v = 0;
    CUmemAccess_flags f;
    CUmemLocation loc = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
    CUmemAccessDesc desc = {loc, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CUmemPoolProps p = props_on(0, CU_MEM_HANDLE_TYPE_NONE);
    CUmemPoolPtrExportData data;
    CUdeviceptr d = 0;
    int fd = -1;
    assert_cu(D.get_default(&pool, 0), CUDA_ERROR_UNKNOWN);
    assert_cu(D.get_current(&pool, 0), CUDA_ERROR_UNKNOWN);
    assert_cu(D.set_current(0, def), CUDA_ERROR_UNKNOWN);
    assert_cu(D.create(&pool, &p), CUDA_ERROR_UNKNOWN);
    assert_cu(D.destroy(def), CUDA_ERROR_UNKNOWN);
    assert_cu(D.set_attr(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &v), CUDA_ERROR_UNKNOWN);
    assert_cu(D.get_attr(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &v), CUDA_ERROR_UNKNOWN);
    assert_cu(D.trim(def, 0), CUDA_ERROR_UNKNOWN);
    assert_cu(D.set_access(def, &desc, 1), CUDA_ERROR_UNKNOWN);
    assert_cu(D.get_access(&f, def, &loc), CUDA_ERROR_UNKNOWN);
    assert_cu(D.alloc(&d, 64, def, NULL), CUDA_ERROR_UNKNOWN);
    assert_cu(D.export_pool(&fd, def, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
              CUDA_ERROR_UNKNOWN);
    assert_cu(D.import_pool(&pool, (void *)(intptr_t)0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                            0),
              CUDA_ERROR_UNKNOWN);
    assert_cu(D.export_ptr(&data, 0), CUDA_ERROR_UNKNOWN);
    assert_cu(D.import_ptr(&d, def, &data), CUDA_ERROR_UNKNOWN);
    assert_int_equal(cus_fake_faults_fired(), 15);
    assert_null(pool);
    assert_int_equal(d, 0);
    assert_int_equal(fd, -1);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, env_teardown)
    const struct CMUnitTest tests[] = {
        T(test_device_pools),     T(test_create_rules), T(test_attribute_rules),
        T(test_access_rules),     T(test_ipc_rules),    T(test_every_entry_point_fails_on_demand),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
