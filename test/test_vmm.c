/* Virtual memory management (include/cuscope/vmm.h), foreign buffers
 * (cus_buffer_wrap) and raw cleanups (include/cuscope/raw.h), on the fake
 * driver: the driver's rules checked before any driver call, the fake's
 * own rules through raw calls, data through mappings, the growable buffer,
 * views in graphs, and every driver call's failure path. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cudaTypedefs.h>
#include <cuscope/raw.h>
#include <cuscope/vmm.h>

#include "harness/check.h"
#include "stream_common.h"

#define MIB ((size_t)1 << 20)
#define G (2 * MIB) /* the fake's granularity */

static cus_physical *new_phys(cus_context *c, size_t bytes, unsigned int types)
{
    cus_physical *p = NULL;
    assert_ok(cus_physical_create(c, bytes, types, &p));
    assert_non_null(p);
    return p;
}

static cus_reservation *new_res(cus_context *c, size_t bytes)
{
    cus_reservation *r = NULL;
    assert_ok(cus_reservation_create(c, bytes, 0, 0, &r));
    assert_non_null(r);
    return r;
}

/* A reservation of `bytes` with one accessible mapping of all of it. */
static cus_reservation *new_mapped(cus_context *c, size_t bytes)
{
    cus_reservation *r = new_res(c, bytes);
    cus_autoptr(cus_physical) p = new_phys(c, bytes, 0);
    assert_ok(cus_reservation_map(r, 0, p, 0, bytes));
    assert_ok(cus_reservation_set_access(r, 0, bytes, CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
    return r;
}

/* For tests that provoke fake-driver misuse on purpose. */
static int teardown_after_misuse(void **state)
{
    assert_int_equal(cus_context_stack_depth(), 0);
    assert_int_equal(cus_debug_live_objects(), 0);
    assert_ok(cus_fake_install(NULL));
    return env_teardown(state);
}
#define MISUSE_TEST(f) cmocka_unit_test_setup_teardown(f, env_setup, teardown_after_misuse)

/* --- physical allocations ------------------------------------------------------------------- */

static void test_granularity(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    size_t g = 0;
    assert_ok(cus_physical_granularity(c, false, &g));
    assert_int_equal(g, G);
    assert_ok(cus_physical_granularity(c, true, &g));
    assert_int_equal(g, G);
    assert_status(cus_physical_granularity(NULL, false, &g), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_physical_granularity(c, false, NULL), CUS_ERROR_INVALID_ARGUMENT);
}

static void test_physical_create_and_release(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_physical *p = new_phys(c, 2 * G, 0);
    assert_int_equal(cus_physical_size(p), 2 * G);
    assert_true(cus_physical_handle(p) != 0);
    assert_ptr_equal(cus_physical_context(p), c);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_PHYSICAL_MEMORY), 1);
    assert_int_equal(cus_fake_device_bytes_in_use(0), 2 * G);
    assert_int_equal(cus_context_stack_depth(), 0);
    assert_int_equal(cus_fake_thread_stack_depth(), 0);
    p = cus_physical_unref(p);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_PHYSICAL_MEMORY), 0);
    assert_int_equal(cus_fake_device_bytes_in_use(0), 0);
    assert_int_equal(cus_fake_calls_of("cuMemRelease"), 1);
    assert_null(cus_physical_ref(NULL));
    assert_null(cus_physical_unref(NULL));
    assert_int_equal(cus_physical_size(NULL), 0);
    assert_int_equal(cus_physical_handle(NULL), 0);
    assert_null(cus_physical_context(NULL));
}

static void test_physical_bad_sizes_reach_no_create(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    leak_snap before = leak_snap_now();
    cus_physical *p = SENTINEL_PTR(p);
    assert_status(cus_physical_create(c, 0, 0, &p), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_physical_create(c, G + 4096, 0, &p), CUS_ERROR_INVALID_ARGUMENT);
    assert_contains(cus_last_error_message(), "granularity");
    assert_status(cus_physical_create(c, G, 0x40, &p), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_physical_create(NULL, G, 0, &p), CUS_ERROR_INVALID_ARGUMENT);
    assert_ptr_equal(p, SENTINEL_PTR(p));
    assert_int_equal(cus_fake_calls_of("cuMemCreate"), 0);
    assert_nothing_changed(before);
}

static void test_physical_faults(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    static const char *const entries[] = {"cuCtxPushCurrent", "cuMemGetAllocationGranularity",
                                          "cuMemCreate"};
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
        cus_physical *p = SENTINEL_PTR(p);
        assert_fault_surfaces(entries[i], cus_physical_create(c, G, 0, &p));
        assert_ptr_equal(p, SENTINEL_PTR(p));
    }
    size_t g = 7;
    assert_fault_surfaces("cuMemGetAllocationGranularity", cus_physical_granularity(c, true, &g));
    assert_int_equal(g, 7);
}

static void test_release_failure_goes_to_the_handler(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_physical *p = new_phys(c, G, 0);
    unsigned long reports = env_destroyed.count;
    assert_ok(cus_fake_fail_entry("cuMemRelease", 1, FAULT, false));
    p = cus_physical_unref(p);
    cus_fake_clear_faults();
    assert_int_equal(env_destroyed.count, reports + 1);
    assert_string_equal(env_destroyed.last_driver_call, "cuMemRelease");
    assert_int_equal(cus_debug_live_objects(), 1); /* the context */
    /* The driver still has it: release it raw, so that nothing leaks. */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_PHYSICAL_MEMORY), 1);
}

/* --- export and import ---------------------------------------------------------------------- */

static void test_export_import_share_the_memory(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_autoptr(cus_physical) p = new_phys(c, G, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    int fd = -1;
    assert_ok(cus_physical_export_fd(p, &fd));
    assert_true(fd >= 0);
    cus_autoptr(cus_physical) q = NULL;
    assert_ok(cus_physical_import_fd(c, fd, G, &q));
    close(fd);
    assert_true(cus_physical_handle(q) != cus_physical_handle(p));
    /* Both at once, in one reservation: one memory behind both halves. */
    cus_autoptr(cus_reservation) r = new_res(c, 2 * G);
    assert_ok(cus_reservation_map(r, 0, p, 0, G));
    assert_ok(cus_reservation_map(r, G, q, 0, G));
    assert_ok(cus_reservation_set_access(r, 0, 2 * G, CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
    cus_autoptr(cus_buffer) b = NULL;
    assert_ok(cus_reservation_buffer(r, 0, 2 * G, &b));
    uint32_t v = 0xfeedbeef, got = 0;
    assert_ok(cus_copy_to_device(b, 64, &v, sizeof v));
    assert_ok(cus_copy_to_host(&got, b, G + 64, sizeof got));
    assert_int_equal(got, v);
    assert_int_equal(cus_fake_device_bytes_in_use(0), G); /* counted once */
}

static void test_export_needs_the_handle_type(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_autoptr(cus_physical) p = new_phys(c, G, 0);
    int fd = -7;
    unsigned long calls = cus_fake_call_count();
    assert_status(cus_physical_export_fd(p, &fd), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_physical_export_fd(NULL, &fd), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_physical_export_fd(p, NULL), CUS_ERROR_INVALID_ARGUMENT);
    cus_physical *q = SENTINEL_PTR(q);
    assert_status(cus_physical_import_fd(c, -1, G, &q), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_physical_import_fd(c, 0, 0, &q), CUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(cus_fake_call_count(), calls);
    assert_int_equal(fd, -7);
    assert_ptr_equal(q, SENTINEL_PTR(q));
}

static void test_export_import_faults(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_autoptr(cus_physical) p = new_phys(c, G, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    int fd = -7;
    assert_fault_surfaces("cuMemExportToShareableHandle", cus_physical_export_fd(p, &fd));
    assert_int_equal(fd, -7);
    assert_ok(cus_physical_export_fd(p, &fd));
    cus_physical *q = SENTINEL_PTR(q);
    assert_fault_surfaces("cuMemImportFromShareableHandle", cus_physical_import_fd(c, fd, G, &q));
    assert_ptr_equal(q, SENTINEL_PTR(q));
    close(fd);
}

/* --- reservations and mappings -------------------------------------------------------------- */

static void test_reservation_create_and_free(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_reservation *r = NULL;
    assert_ok(cus_reservation_create(c, 8 * G, 4 * G, 0, &r));
    assert_true(cus_reservation_ptr(r) % (4 * G) == 0);
    assert_int_equal(cus_reservation_size(r), 8 * G);
    assert_int_equal(cus_reservation_granularity(r), G);
    assert_ptr_equal(cus_reservation_context(r), c);
    assert_int_equal(cus_reservation_mapped_bytes(r), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_VA_RESERVATION), 1);
    /* The range is taken: a fixed address there is refused, and freed. */
    cus_reservation *s = SENTINEL_PTR(s);
    assert_status(cus_reservation_create(c, G, 0, cus_reservation_ptr(r), &s),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_contains(cus_last_error_message(), "fixed address");
    assert_ptr_equal(s, SENTINEL_PTR(s));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_VA_RESERVATION), 1);
    r = cus_reservation_unref(r);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_VA_RESERVATION), 0);
    assert_int_equal(cus_fake_calls_of("cuMemAddressFree"), 2);
    assert_int_equal(cus_reservation_ptr(NULL), 0);
    assert_int_equal(cus_reservation_size(NULL), 0);
    assert_null(cus_reservation_unref(NULL));
}

static void test_reservation_bad_input(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    unsigned long calls = cus_fake_calls_of("cuMemAddressReserve");
    cus_reservation *r = SENTINEL_PTR(r);
    assert_status(cus_reservation_create(c, 0, 0, 0, &r), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_reservation_create(c, G + 1, 0, 0, &r), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_reservation_create(c, G, 3 * G, 0, &r), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_reservation_create(c, G, 0, G + 4096, &r), CUS_ERROR_INVALID_ARGUMENT);
    assert_ptr_equal(r, SENTINEL_PTR(r));
    assert_int_equal(cus_fake_calls_of("cuMemAddressReserve"), calls);
}

static void test_map_access_view_copy(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_autoptr(cus_reservation) r = new_res(c, 4 * G);
    {
        cus_autoptr(cus_physical) p = new_phys(c, 2 * G, 0);
        assert_ok(cus_reservation_map(r, G, p, 0, 2 * G));
    } /* the reservation holds it */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_PHYSICAL_MEMORY), 1);
    assert_int_equal(cus_reservation_mapped_bytes(r), 2 * G);
    CUmemAccess_flags f = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    assert_ok(cus_reservation_get_access(r, G, &f));
    assert_int_equal(f, CU_MEM_ACCESS_FLAGS_PROT_NONE);
    cus_buffer *b = SENTINEL_PTR(b);
    /* No access yet: no view. */
    assert_status(cus_reservation_buffer(r, G, 64, &b), CUS_ERROR_INVALID_ARGUMENT);
    assert_ok(cus_reservation_set_access(r, G, 2 * G, CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
    assert_ok(cus_reservation_get_access(r, 2 * G, &f));
    assert_int_equal(f, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    assert_ok(cus_reservation_buffer(r, G + 100, G, &b));
    assert_int_equal(cus_buffer_get_kind(b), CUS_BUFFER_VIEW);
    assert_int_equal(cus_buffer_size(b), G);
    assert_true(cus_buffer_ptr(b) == cus_reservation_ptr(r) + G + 100);
    unsigned char out[256], in[256];
    for (size_t i = 0; i < sizeof out; i++)
        out[i] = (unsigned char)(i * 3 + 1);
    assert_ok(cus_copy_to_device(b, G - sizeof out, out, sizeof out));
    assert_ok(cus_buffer_fill_u8(b, 0, 0x5a, 16));
    assert_ok(cus_copy_to_host(in, b, G - sizeof in, sizeof in));
    assert_memory_equal(in, out, sizeof in);
    assert_ok(cus_copy_to_host(in, b, 0, 16));
    for (int i = 0; i < 16; i++)
        assert_int_equal(in[i], 0x5a);
    /* Bounds-checked like any buffer. */
    assert_status(cus_copy_to_host(in, b, G - 8, 16), CUS_ERROR_OUT_OF_RANGE);
    /* Past the mapping: not mapped; past the reservation: out of range. */
    cus_buffer *v = SENTINEL_PTR(v);
    assert_status(cus_reservation_buffer(r, 2 * G, 2 * G, &v), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_reservation_buffer(r, 3 * G, 2 * G, &v), CUS_ERROR_OUT_OF_RANGE);
    assert_status(cus_reservation_buffer(r, 0, G, &v), CUS_ERROR_INVALID_ARGUMENT);
    assert_ptr_equal(v, SENTINEL_PTR(v));
    /* A view holds the range: no unmap under it. */
    assert_status(cus_reservation_unmap(r, G, 2 * G), CUS_ERROR_BUSY);
    b = cus_buffer_unref(b);
    assert_ok(cus_reservation_unmap(r, G, 2 * G));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_PHYSICAL_MEMORY), 0);
    assert_int_equal(cus_reservation_mapped_bytes(r), 0);
}

static void test_two_mappings_of_one_allocation_alias(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_autoptr(cus_reservation) r = new_res(c, 4 * G);
    cus_autoptr(cus_physical) p = new_phys(c, 2 * G, 0);
    assert_ok(cus_reservation_map(r, 0, p, G, G));      /* its second half */
    assert_ok(cus_reservation_map(r, 2 * G, p, 0, 2 * G)); /* all of it */
    assert_ok(cus_reservation_set_access(r, 0, G, CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
    assert_ok(cus_reservation_set_access(r, 2 * G, 2 * G, CU_MEM_ACCESS_FLAGS_PROT_READ));
    cus_autoptr(cus_buffer) a = NULL;
    cus_autoptr(cus_buffer) whole = NULL;
    assert_ok(cus_reservation_buffer(r, 0, G, &a));
    assert_ok(cus_reservation_buffer(r, 2 * G, 2 * G, &whole));
    assert_ok(cus_buffer_fill_u32(a, 0, 0xabcd1234u, 4));
    uint32_t got[4] = {0};
    assert_ok(cus_copy_to_host(got, whole, G, sizeof got));
    for (int i = 0; i < 4; i++)
        assert_int_equal(got[i], 0xabcd1234u);
    CUmemAccess_flags f = CU_MEM_ACCESS_FLAGS_PROT_NONE;
    assert_ok(cus_reservation_get_access(r, 3 * G, &f));
    assert_int_equal(f, CU_MEM_ACCESS_FLAGS_PROT_READ);
}

/* The driver's rules, refused by cuscope before any driver call. */
static void test_mapping_rules(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_autoptr(cus_reservation) r = new_res(c, 8 * G);
    cus_autoptr(cus_physical) p = new_phys(c, 4 * G, 0);
    unsigned long calls = cus_fake_call_count();
    /* unaligned offset, size, physical offset */
    assert_status(cus_reservation_map(r, 4096, p, 0, G), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_reservation_map(r, 0, p, 0, G + 4096), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_reservation_map(r, 0, p, 4096, G), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_reservation_map(r, 0, p, 0, 0), CUS_ERROR_INVALID_ARGUMENT);
    /* past the reservation, past the allocation */
    assert_status(cus_reservation_map(r, 6 * G, p, 0, 4 * G), CUS_ERROR_OUT_OF_RANGE);
    assert_status(cus_reservation_map(r, 0, p, 2 * G, 4 * G), CUS_ERROR_OUT_OF_RANGE);
    assert_int_equal(cus_fake_call_count(), calls);
    assert_ok(cus_reservation_map(r, 2 * G, p, 0, 2 * G));
    assert_ok(cus_reservation_map(r, 4 * G, p, 2 * G, 2 * G));
    calls = cus_fake_call_count();
    /* a double map, whole or partly */
    assert_status(cus_reservation_map(r, 2 * G, p, 0, 2 * G), CUS_ERROR_INVALID_ARGUMENT);
    assert_contains(cus_last_error_message(), "mapped once");
    assert_status(cus_reservation_map(r, 0, p, 0, 4 * G), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_reservation_map(r, 5 * G, p, 0, 2 * G), CUS_ERROR_INVALID_ARGUMENT);
    /* an unmap of part of a mapping, of a hole, unaligned */
    assert_status(cus_reservation_unmap(r, 2 * G, G), CUS_ERROR_INVALID_ARGUMENT);
    assert_contains(cus_last_error_message(), "whole mappings");
    assert_status(cus_reservation_unmap(r, 3 * G, 2 * G), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_reservation_unmap(r, 0, 4 * G), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_reservation_unmap(r, 2 * G, 4096), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_reservation_unmap(r, 8 * G, 2 * G), CUS_ERROR_OUT_OF_RANGE);
    /* access on part of a mapping, on what is not mapped, with other flags */
    assert_status(cus_reservation_set_access(r, 2 * G, G, CU_MEM_ACCESS_FLAGS_PROT_READ),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_reservation_set_access(r, 0, 2 * G, CU_MEM_ACCESS_FLAGS_PROT_READ),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_reservation_set_access(r, 2 * G, 2 * G, CU_MEM_ACCESS_FLAGS_PROT_NONE),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(cus_fake_call_count(), calls);
    /* Two adjacent whole mappings: one access change, one unmap. */
    assert_ok(cus_reservation_set_access(r, 2 * G, 4 * G, CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
    assert_ok(cus_reservation_unmap(r, 2 * G, 4 * G));
    assert_int_equal(cus_reservation_mapped_bytes(r), 0);
}

/* The fake refuses what the driver refuses, as misuse. */
static void test_fake_rules_through_raw_calls(void **state)
{
    (void)state;
    PFN_cuMemCreate_v10020 create;
    PFN_cuMemMap_v10020 map;
    PFN_cuMemUnmap_v10020 unmap;
    PFN_cuMemRelease_v10020 release;
    PFN_cuMemAddressReserve_v10020 reserve;
    PFN_cuMemAddressFree_v10020 address_free;
    PFN_cuMemcpyHtoD_v3020 htod;
    PFN_cuMemRetainAllocationHandle_v11000 retain;
    RAW(create, "cuMemCreate", 10020);
    RAW(map, "cuMemMap", 10020);
    RAW(unmap, "cuMemUnmap", 10020);
    RAW(release, "cuMemRelease", 10020);
    RAW(reserve, "cuMemAddressReserve", 10020);
    RAW(address_free, "cuMemAddressFree", 10020);
    RAW(htod, "cuMemcpyHtoD", 3020);
    RAW(retain, "cuMemRetainAllocationHandle", 11000);
    cus_autoptr(cus_context) c = new_ctx();
    assert_ok(cus_context_push(c));
    CUmemAllocationProp prop = {0};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    CUmemGenericAllocationHandle h = 0;
    assert_cu(create(&h, G + 4096, &prop, 0), CUDA_ERROR_INVALID_VALUE);
    assert_cu_ok(create(&h, 2 * G, &prop, 0));
    CUdeviceptr va = 0;
    assert_cu_ok(reserve(&va, 4 * G, 0, 0, 0));
    assert_cu(map(va + 4096, G, 0, h, 0), CUDA_ERROR_INVALID_VALUE);
    assert_cu_ok(map(va, 2 * G, 0, h, 0));
    unsigned long misuse = cus_fake_misuse_count();
    assert_cu(map(va + G, 2 * G, 0, h, 0), CUDA_ERROR_INVALID_VALUE); /* double map */
    assert_int_equal(cus_fake_misuse_count(), misuse + 1);
    assert_contains(cus_fake_last_misuse(), "mapped once");
    assert_cu(unmap(va, G), CUDA_ERROR_INVALID_VALUE); /* part of a mapping */
    assert_contains(cus_fake_last_misuse(), "whole mappings");
    /* Mapped, no access: a copy is refused (the driver's memory faults). */
    uint32_t v = 1;
    assert_cu(htod(va, &v, sizeof v), CUDA_ERROR_INVALID_VALUE);
    assert_contains(cus_fake_last_misuse(), "no access");
    /* The handle back from an address, the same value. */
    CUmemGenericAllocationHandle again = 0;
    assert_cu_ok(retain(&again, (void *)(uintptr_t)(va + G + 5)));
    assert_true(again == h);
    assert_cu_ok(release(again));
    assert_cu_ok(release(h)); /* still mapped: the memory stays */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_PHYSICAL_MEMORY), 0);
    assert_int_equal(cus_fake_device_bytes_in_use(0), 2 * G);
    assert_cu(address_free(va, 4 * G), CUDA_ERROR_INVALID_VALUE); /* still mapped */
    assert_cu_ok(unmap(va, 2 * G));
    assert_int_equal(cus_fake_device_bytes_in_use(0), 0);
    assert_cu(htod(va, &v, sizeof v), CUDA_ERROR_INVALID_VALUE); /* unmapped */
    assert_cu_ok(address_free(va, 4 * G));
    assert_cu(release(h), CUDA_ERROR_INVALID_VALUE);
    assert_ok(cus_context_pop(NULL));
}

static void test_mapping_faults(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_autoptr(cus_reservation) r = new_res(c, 4 * G);
    cus_autoptr(cus_physical) p = new_phys(c, 2 * G, 0);
    assert_fault_surfaces("cuMemMap", cus_reservation_map(r, 0, p, 0, 2 * G));
    assert_int_equal(cus_reservation_mapped_bytes(r), 0);
    assert_ok(cus_reservation_map(r, 0, p, 0, 2 * G));
    assert_fault_surfaces("cuMemSetAccess",
                          cus_reservation_set_access(r, 0, 2 * G, CU_MEM_ACCESS_FLAGS_PROT_READ));
    CUmemAccess_flags f = CU_MEM_ACCESS_FLAGS_PROT_READ;
    assert_fault_surfaces("cuMemGetAccess", cus_reservation_get_access(r, 0, &f));
    assert_int_equal(f, CU_MEM_ACCESS_FLAGS_PROT_READ);
    assert_fault_surfaces("cuMemUnmap", cus_reservation_unmap(r, 0, 2 * G));
    assert_int_equal(cus_reservation_mapped_bytes(r), 2 * G);
    cus_reservation *s = SENTINEL_PTR(s);
    assert_fault_surfaces("cuMemAddressReserve", cus_reservation_create(c, G, 0, 0, &s));
    assert_ptr_equal(s, SENTINEL_PTR(s));
}

/* What a reservation's last release cannot undo goes to the handler. */
static void test_reservation_release_faults(void **state)
{
    (void)state;
    static const char *const entries[] = {"cuMemUnmap", "cuMemAddressFree"};
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
        assert_int_equal(env_setup_with(NULL), 0);
        cus_context *c = new_ctx();
        cus_reservation *r = new_mapped(c, G);
        unsigned long reports = env_destroyed.count;
        assert_ok(cus_fake_fail_entry(entries[i], 1, FAULT, false));
        r = cus_reservation_unref(r);
        cus_fake_clear_faults();
        assert_int_equal(env_destroyed.count, reports + 1);
        assert_string_equal(env_destroyed.last_driver_call, entries[i]);
        c = cus_context_unref(c);
        assert_int_equal(cus_debug_live_objects(), 0);
    }
    assert_ok(cus_fake_install(NULL));
}

/* --- the growable buffer -------------------------------------------------------------------- */

static void test_growable_grows_in_place(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_autoptr(cus_growable) g = NULL;
    assert_ok(cus_growable_reserve(c, 9 * MIB, &g));
    CUdeviceptr at = cus_growable_ptr(g);
    assert_true(at != 0);
    assert_int_equal(cus_growable_size(g), 0);
    assert_int_equal(cus_growable_capacity(g), 0);
    assert_int_equal(cus_growable_max(g), 9 * MIB);
    assert_int_equal(cus_reservation_size(cus_growable_reservation(g)), 10 * MIB);
    cus_buffer *none = SENTINEL_PTR(none);
    assert_status(cus_growable_buffer(g, &none), CUS_ERROR_INVALID_ARGUMENT);
    assert_ptr_equal(none, SENTINEL_PTR(none));

    assert_ok(cus_growable_grow(g, 1000));
    assert_int_equal(cus_growable_size(g), 1000);
    assert_int_equal(cus_growable_capacity(g), G);
    cus_autoptr(cus_buffer) first = NULL;
    assert_ok(cus_growable_buffer(g, &first));
    assert_int_equal(cus_buffer_size(first), 1000);
    assert_ok(cus_buffer_fill_u8(first, 0, 0x11, 1000));

    assert_ok(cus_growable_grow(g, 1500)); /* within what is mapped */
    assert_int_equal(cus_growable_capacity(g), G);
    assert_int_equal(cus_fake_calls_of("cuMemCreate"), 1);
    assert_ok(cus_growable_grow(g, 5 * MIB));
    assert_ok(cus_growable_grow(g, 100)); /* never shrinks */
    assert_int_equal(cus_growable_size(g), 5 * MIB);
    assert_int_equal(cus_growable_capacity(g), 3 * G);
    assert_true(cus_growable_ptr(g) == at);
    /* The old view keeps its size; a new one sees the new bytes. */
    assert_int_equal(cus_buffer_size(first), 1000);
    cus_autoptr(cus_buffer) now = NULL;
    assert_ok(cus_growable_buffer(g, &now));
    assert_int_equal(cus_buffer_size(now), 5 * MIB);
    assert_true(cus_buffer_ptr(now) == at);
    assert_ok(cus_buffer_fill_u8(now, 1000, 0x22, 5 * MIB - 1000));
    unsigned char probe[3];
    assert_ok(cus_copy_to_host(&probe[0], now, 999, 1));
    assert_ok(cus_copy_to_host(&probe[1], now, 1000, 1));
    assert_ok(cus_copy_to_host(&probe[2], now, 5 * MIB - 1, 1));
    assert_int_equal(probe[0], 0x11);
    assert_int_equal(probe[1], 0x22);
    assert_int_equal(probe[2], 0x22);
    /* A copy across the chunks' seams. */
    assert_ok(cus_copy_device(now, 3 * MIB, now, 0, 2 * MIB));
    assert_ok(cus_copy_to_host(&probe[0], now, 3 * MIB + 999, 1));
    assert_int_equal(probe[0], 0x11);

    assert_status(cus_growable_grow(g, 9 * MIB + 1), CUS_ERROR_OUT_OF_RANGE);
    assert_ok(cus_growable_grow(g, 9 * MIB));
    assert_int_equal(cus_growable_capacity(g), 10 * MIB);
    assert_true(cus_growable_ptr(g) == at);
}

static void test_growable_bad_input(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_growable *g = SENTINEL_PTR(g);
    assert_status(cus_growable_reserve(c, 0, &g), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_growable_reserve(NULL, G, &g), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_growable_reserve(c, SIZE_MAX, &g), CUS_ERROR_OUT_OF_RANGE);
    assert_ptr_equal(g, SENTINEL_PTR(g));
    assert_status(cus_growable_grow(NULL, 1), CUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(cus_growable_ptr(NULL), 0);
    assert_int_equal(cus_growable_size(NULL), 0);
    assert_int_equal(cus_growable_capacity(NULL), 0);
    assert_null(cus_growable_reservation(NULL));
    assert_null(cus_growable_unref(NULL));
}

/* A grow that fails changes nothing: what it mapped goes again. */
static void test_growable_grow_faults(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_autoptr(cus_growable) g = NULL;
    assert_ok(cus_growable_reserve(c, 8 * G, &g));
    assert_ok(cus_growable_grow(g, G));
    static const char *const entries[] = {"cuMemGetAllocationGranularity", "cuMemCreate",
                                          "cuMemMap", "cuMemSetAccess"};
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
        assert_fault_surfaces(entries[i], cus_growable_grow(g, 3 * G));
        assert_int_equal(cus_growable_size(g), G);
        assert_int_equal(cus_growable_capacity(g), G);
        assert_int_equal(cus_reservation_mapped_bytes(cus_growable_reservation(g)), G);
    }
    assert_ok(cus_growable_grow(g, 3 * G));
    assert_int_equal(cus_growable_capacity(g), 3 * G);
}

/* --- graphs keep views ---------------------------------------------------------------------- */

static void test_graph_keeps_a_view_and_its_memory(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_growable *g = NULL;
    assert_ok(cus_growable_reserve(c, 4 * G, &g));
    assert_ok(cus_growable_grow(g, 3 * G));
    CUdeviceptr at = cus_growable_ptr(g);
    cus_autoptr(cus_graph) graph = NULL;
    {
        cus_buffer *b = NULL;
        assert_ok(cus_growable_buffer(g, &b));
        cus_capture_scope(cap, s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
        assert_ok(cap.status);
        assert_ok(cus_buffer_fill_u32_async(b, 0, 0x600df00du, 3 * G / 4, s));
        b = cus_buffer_unref(b);
        assert_ok(cus_capture_end(&cap, &graph));
    }
    g = cus_growable_unref(g); /* the graph's view holds the reservation */
    assert_int_equal(cus_fake_calls_of("cuMemAddressFree"), 0);
    cus_autoptr(cus_graph_exec) e = NULL;
    assert_ok(cus_graph_instantiate(graph, 0, &e));
    assert_ok(cus_graph_exec_launch(e, s));
    assert_ok(cus_stream_synchronize(s));
    cus_autoptr(cus_buffer) w = NULL;
    assert_ok(cus_buffer_wrap(c, at + 3 * G - 4, 4, &w)); /* foreign, over the same memory */
    uint32_t last = 0;
    assert_ok(cus_copy_to_host(&last, w, 0, 4));
    assert_int_equal(last, 0x600df00du);
    w = cus_buffer_unref(w);
    e = cus_graph_exec_unref(e);
    graph = cus_graph_unref(graph);
    assert_int_equal(cus_fake_calls_of("cuMemAddressFree"), 1);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_PHYSICAL_MEMORY), 0);
}

/* --- foreign memory ------------------------------------------------------------------------- */

static void test_wrap_never_frees(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_autoptr(cus_buffer) owner = NULL;
    assert_ok(cus_buffer_alloc(c, 4096, &owner));
    cus_buffer *w = NULL;
    assert_ok(cus_buffer_wrap(c, cus_buffer_ptr(owner) + 1024, 2048, &w));
    assert_int_equal(cus_buffer_get_kind(w), CUS_BUFFER_FOREIGN);
    assert_int_equal(cus_buffer_size(w), 2048);
    assert_ptr_equal(cus_buffer_context(w), c);
    uint32_t v = 77, got = 0;
    assert_ok(cus_copy_to_device(w, 0, &v, sizeof v));
    assert_ok(cus_copy_to_host(&got, owner, 1024, sizeof got));
    assert_int_equal(got, 77);
    assert_status(cus_copy_to_device(w, 2047, &v, sizeof v), CUS_ERROR_OUT_OF_RANGE);
    w = cus_buffer_unref(w);
    assert_int_equal(cus_fake_calls_of("cuMemFree"), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY), 1);
}

static void test_wrap_bad_input(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_autoptr(cus_buffer) owner = NULL;
    assert_ok(cus_buffer_alloc(c, 4096, &owner));
    CUdeviceptr p = cus_buffer_ptr(owner);
    cus_buffer *w = SENTINEL_PTR(w);
    unsigned long calls = cus_fake_call_count();
    assert_status(cus_buffer_wrap(c, p, 0, &w), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_buffer_wrap(c, 0, 16, &w), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_buffer_wrap(NULL, p, 16, &w), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_buffer_wrap(c, p, 16, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(cus_fake_call_count(), calls);
    assert_status(cus_buffer_wrap(c, p + 4000, 200, &w), CUS_ERROR_OUT_OF_RANGE);
    static char not_device[64];
    assert_status(cus_buffer_wrap(c, (CUdeviceptr)(uintptr_t)not_device, 16, &w),
                  CU(CUDA_ERROR_INVALID_VALUE));
    assert_ptr_equal(w, SENTINEL_PTR(w));
    assert_fault_surfaces("cuPointerGetAttribute", cus_buffer_wrap(c, p, 16, &w));
    assert_ptr_equal(w, SENTINEL_PTR(w));
}

static void test_wrap_of_another_device_is_a_mismatch(void **state)
{
    (void)state;
    cus_context *c0 = NULL, *c1 = NULL;
    assert_ok(cus_context_create(dev_at(0), CUS_CTX_NO_PUSH, &c0));
    assert_ok(cus_context_create(dev_at(1), CUS_CTX_NO_PUSH, &c1));
    cus_autoptr(cus_buffer) on1 = NULL;
    assert_ok(cus_buffer_alloc(c1, 256, &on1));
    cus_buffer *w = SENTINEL_PTR(w);
    assert_status(cus_buffer_wrap(c0, cus_buffer_ptr(on1), 16, &w), CUS_ERROR_CONTEXT_MISMATCH);
    assert_ptr_equal(w, SENTINEL_PTR(w));
    on1 = cus_buffer_unref(on1);
    c0 = cus_context_unref(c0);
    c1 = cus_context_unref(c1);
}

/* --- raw handles in scope ------------------------------------------------------------------- */

static void test_raw_cleanups(void **state)
{
    (void)state;
    PFN_cuMemAlloc_v3020 alloc;
    PFN_cuMemCreate_v10020 create;
    RAW(alloc, "cuMemAlloc", 3020);
    RAW(create, "cuMemCreate", 10020);
    cus_autoptr(cus_context) c = new_ctx();
    assert_ok(cus_context_push(c));
    {
        cus_raw(devptr) CUdeviceptr p = 0;
        cus_raw(mem_handle) CUmemGenericAllocationHandle h = 0;
        assert_cu_ok(alloc(&p, 256));
        CUmemAllocationProp prop = {0};
        prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
        prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        assert_cu_ok(create(&h, G, &prop, 0));
        assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY), 1);
        assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_PHYSICAL_MEMORY), 1);
    }
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_PHYSICAL_MEMORY), 0);
    /* Stolen out of its scope: not freed there. */
    CUdeviceptr kept = 0;
    {
        cus_raw(devptr) CUdeviceptr p = 0;
        assert_cu_ok(alloc(&p, 256));
        kept = cus_raw_steal(&p);
        assert_int_equal(p, 0);
    }
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY), 1);
    assert_ok(cus_driver_mem_free(kept));
    assert_status(cus_driver_mem_free(0), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_driver_mem_release(0), CUS_ERROR_INVALID_ARGUMENT);
    /* A failure at scope exit goes to the handler, the last error kept. */
    cus_clear_last_error();
    unsigned long reports = env_destroyed.count;
    {
        cus_raw(devptr) CUdeviceptr p = 0;
        assert_cu_ok(alloc(&p, 256));
        assert_ok(cus_fake_fail_entry("cuMemFree", 1, FAULT, false));
    }
    cus_fake_clear_faults();
    assert_int_equal(env_destroyed.count, reports + 1);
    assert_string_equal(env_destroyed.last_driver_call, "cuMemFree");
    assert_int_equal(cus_last_status(), CUS_SUCCESS);
    assert_ok(cus_context_pop(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_granularity),
        ENV_TEST(test_physical_create_and_release),
        ENV_TEST(test_physical_bad_sizes_reach_no_create),
        ENV_TEST(test_physical_faults),
        MISUSE_TEST(test_release_failure_goes_to_the_handler),
        ENV_TEST(test_export_import_share_the_memory),
        ENV_TEST(test_export_needs_the_handle_type),
        ENV_TEST(test_export_import_faults),
        ENV_TEST(test_reservation_create_and_free),
        ENV_TEST(test_reservation_bad_input),
        ENV_TEST(test_map_access_view_copy),
        ENV_TEST(test_two_mappings_of_one_allocation_alias),
        ENV_TEST(test_mapping_rules),
        MISUSE_TEST(test_fake_rules_through_raw_calls),
        ENV_TEST(test_mapping_faults),
        MISUSE_TEST(test_reservation_release_faults),
        ENV_TEST(test_growable_grows_in_place),
        ENV_TEST(test_growable_bad_input),
        ENV_TEST(test_growable_grow_faults),
        ENV_TEST(test_graph_keeps_a_view_and_its_memory),
        ENV_TEST(test_wrap_never_frees),
        ENV_TEST(test_wrap_bad_input),
        TWO_DEV_TEST(test_wrap_of_another_device_is_a_mismatch),
        MISUSE_TEST(test_raw_cleanups),
    };
    return cmocka_run_group_tests_name("vmm", tests, NULL, NULL);
}
