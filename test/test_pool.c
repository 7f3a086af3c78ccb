/* Memory pools (include/cuscope/pool.h) on the fake driver: created,
 * borrowed and imported pools, their attributes and accounting, trim,
 * access, allocation from a pool (the buffer holding its pool), capture,
 * IPC within one process, and every driver call's failure; nothing leaked. */
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cuscope/pool.h>

#include "stream_common.h"

#define MIB ((size_t)1 << 20)

static cus_pool *new_pool(cus_context *c, CUmemAllocationHandleType handles)
{
    cus_pool_options o = {.handle_types = handles};
    cus_pool *p = NULL;
    assert_ok(cus_pool_create(c, &o, &p));
    assert_non_null(p);
    return p;
}

static cus_pool_usage usage_of(cus_pool *p)
{
    cus_pool_usage u;
    memset(&u, 0xff, sizeof u);
    assert_ok(cus_pool_get_usage(p, &u));
    return u;
}

/* --- the object ----------------------------------------------------------------- */

static void test_create_and_destroy(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_pool *p = new_pool(c, CU_MEM_HANDLE_TYPE_NONE);
    assert_int_equal(cus_pool_get_kind(p), CUS_POOL_CREATED);
    assert_int_equal(cus_pool_handle_types(p), CU_MEM_HANDLE_TYPE_NONE);
    assert_ptr_equal(cus_pool_context(p), c);
    assert_non_null(cus_pool_handle(p));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MEMORY_POOL), 1);
    assert_int_equal(cus_context_stack_depth(), 0);
    assert_ptr_equal(cus_pool_ref(p), p);
    assert_null(cus_pool_unref(p));
    assert_int_equal(cus_fake_calls_of("cuMemPoolDestroy"), 0);
    assert_null(cus_pool_unref(p));
    assert_int_equal(cus_fake_calls_of("cuMemPoolDestroy"), 1);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MEMORY_POOL), 0);
}

static void test_pool_keeps_context_alive(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_pool *p = new_pool(c, CU_MEM_HANDLE_TYPE_NONE);
    c = cus_context_unref(c);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_CONTEXT), 1);
    cus_pool_usage u = usage_of(p);
    assert_int_equal(u.used_current, 0);
    p = cus_pool_unref(p);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_CONTEXT), 0);
}

static void test_default_and_current_pools(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_pool) def = NULL;
    cus_autoptr(cus_pool) cur = NULL;
    assert_ok(cus_pool_default(c, &def));
    assert_ok(cus_pool_current(c, &cur));
    assert_int_equal(cus_pool_get_kind(def), CUS_POOL_BORROWED);
    assert_int_equal(cus_pool_get_kind(cur), CUS_POOL_BORROWED);
    assert_ptr_equal(cus_pool_handle(def), cus_pool_handle(cur));
    /* the driver's pools are not live handles to release */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MEMORY_POOL), 0);

    cus_pool *mine = new_pool(c, CU_MEM_HANDLE_TYPE_NONE);
    assert_ok(cus_pool_set_current(mine));
    cus_autoptr(cus_pool) now = NULL;
    assert_ok(cus_pool_current(c, &now));
    assert_ptr_equal(cus_pool_handle(now), cus_pool_handle(mine));
    /* cus_buffer_alloc_async allocates from the current pool */
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_buffer *b = NULL;
    assert_ok(cus_buffer_alloc_async(s, 4096, &b));
    assert_int_equal(usage_of(mine).used_current, 4096);
    assert_int_equal(usage_of(def).used_current, 0);
    b = cus_buffer_unref(b);
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(usage_of(mine).used_current, 0);
    /* Destroying the current pool makes the default current again; the
     * borrowed objects never destroy theirs. */
    mine = cus_pool_unref(mine);
    now = cus_pool_unref(now);
    assert_ok(cus_pool_current(c, &now));
    assert_ptr_equal(cus_pool_handle(now), cus_pool_handle(def));
    assert_ok(cus_pool_set_current(def));
    def = cus_pool_unref(def);
    cur = cus_pool_unref(cur);
    now = cus_pool_unref(now);
    assert_int_equal(cus_fake_calls_of("cuMemPoolDestroy"), 1);
}

static void test_create_options(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_pool) p = NULL;
    cus_pool_options o = {.handle_types = CU_MEM_HANDLE_TYPE_FABRIC};
    leak_snap before = leak_snap_now();
    assert_status(cus_pool_create(c, &o, &p), CUS_ERROR_INVALID_ARGUMENT);
    assert_null(p);
    assert_int_equal(cus_fake_calls_of("cuMemPoolCreate"), 0);
    assert_nothing_changed(before);
    assert_ok(cus_pool_create(c, NULL, &p)); /* the defaults */
    assert_int_equal(cus_pool_handle_types(p), CU_MEM_HANDLE_TYPE_NONE);
    p = cus_pool_unref(p);
    /* A device without pools: the driver's answer. */
    assert_ok(cus_fake_set_attribute(0, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 0));
    assert_status(cus_pool_create(c, NULL, &p), CUDA_ERROR_NOT_SUPPORTED);
    assert_status(cus_pool_default(c, &p), CUDA_ERROR_NOT_SUPPORTED);
    assert_null(p);
}

/* --- attributes ---------------------------------------------------------------------- */

static void test_attributes(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_pool) p = new_pool(c, CU_MEM_HANDLE_TYPE_NONE);
    uint64_t t = 1;
    assert_ok(cus_pool_get_release_threshold(p, &t));
    assert_int_equal(t, 0);
    assert_ok(cus_pool_set_release_threshold(p, 64 * MIB));
    assert_ok(cus_pool_get_release_threshold(p, &t));
    assert_int_equal(t, 64 * MIB);
    static const CUmemPool_attribute reuse[] = {CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES,
                                                CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC,
                                                CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES};
    for (int i = 0; i < 3; i++) {
        bool on = false;
        assert_ok(cus_pool_get_reuse(p, reuse[i], &on));
        assert_true(on);
        assert_ok(cus_pool_set_reuse(p, reuse[i], false));
        assert_ok(cus_pool_get_reuse(p, reuse[i], &on));
        assert_false(on);
    }
    unsigned long calls = cus_fake_call_count();
    bool on = true;
    assert_status(cus_pool_set_reuse(p, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, true),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_pool_get_reuse(p, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &on),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_true(on);
    assert_int_equal(cus_fake_call_count(), calls);
}

static void test_usage_follows_allocations(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_pool) p = new_pool(c, CU_MEM_HANDLE_TYPE_NONE);
    cus_pool_usage u = usage_of(p);
    assert_int_equal(u.reserved_current, 0);
    assert_int_equal(u.used_high, 0);
    assert_ok(cus_pool_set_release_threshold(p, UINT64_MAX)); /* keep what it reserves */
    cus_buffer *a = NULL, *b = NULL;
    assert_ok(cus_pool_alloc_async(p, s, 3 * MIB, &a));
    assert_ok(cus_pool_alloc_async(p, s, 1 * MIB, &b));
    u = usage_of(p);
    assert_int_equal(u.used_current, 4 * MIB);
    assert_int_equal(u.used_high, 4 * MIB);
    assert_true(u.reserved_current >= u.used_current);
    a = cus_buffer_unref(a);
    assert_ok(cus_stream_synchronize(s));
    u = usage_of(p);
    assert_int_equal(u.used_current, 1 * MIB);
    assert_int_equal(u.used_high, 4 * MIB);
    assert_int_equal(u.reserved_current, 4 * MIB); /* above the threshold: kept */
    /* A new allocation reuses the reserved memory. */
    assert_ok(cus_pool_alloc_async(p, s, 2 * MIB, &a));
    assert_int_equal(usage_of(p).reserved_current, 4 * MIB);
    a = cus_buffer_unref(a);
    b = cus_buffer_unref(b);
    assert_ok(cus_stream_synchronize(s));
    /* The high-water marks reset to the current values. */
    assert_ok(cus_pool_reset_high_water(p));
    u = usage_of(p);
    assert_int_equal(u.used_current, 0);
    assert_int_equal(u.used_high, 0);
    assert_int_equal(u.reserved_high, 4 * MIB);
    /* Trim: down to what is asked to keep, then to nothing. */
    assert_ok(cus_pool_trim(p, 1 * MIB));
    assert_int_equal(usage_of(p).reserved_current, 1 * MIB);
    assert_ok(cus_pool_trim(p, 0));
    assert_int_equal(usage_of(p).reserved_current, 0);
    /* With the default threshold, the free's synchronization gives it back. */
    assert_ok(cus_pool_set_release_threshold(p, 0));
    assert_ok(cus_pool_alloc_async(p, s, MIB, &a));
    a = cus_buffer_unref(a);
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(usage_of(p).reserved_current, 0);
    assert_int_equal(cus_fake_device_bytes_in_use(0), 0);
}

static void test_max_size(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_pool_options o = {.max_size = MIB};
    cus_autoptr(cus_pool) p = NULL;
    assert_ok(cus_pool_create(c, &o, &p));
    cus_autoptr(cus_buffer) a = NULL;
    cus_buffer *b = NULL;
    assert_ok(cus_pool_alloc_async(p, s, MIB / 2, &a));
    leak_snap before = leak_snap_now();
    assert_status(cus_pool_alloc_async(p, s, MIB, &b), CUDA_ERROR_OUT_OF_MEMORY);
    assert_null(b);
    assert_nothing_changed(before);
}

/* --- allocation ---------------------------------------------------------------------- */

static void test_alloc_fill_copy(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_pool *p = new_pool(c, CU_MEM_HANDLE_TYPE_NONE);
    cus_buffer *b = NULL;
    assert_ok(cus_pool_alloc_async(p, s, 1024 * 4, &b));
    assert_int_equal(cus_buffer_get_kind(b), CUS_BUFFER_STREAM_ORDERED);
    assert_ptr_equal(cus_buffer_context(b), c);
    assert_int_equal(cus_buffer_size(b), 4096);
    assert_ok(cus_buffer_fill_u32_async(b, 0, 0xC0FFEEu, 1024, s));
    uint32_t host[1024];
    assert_ok(cus_copy_to_host_async(host, b, 0, sizeof host, s));
    assert_ok(cus_stream_synchronize(s));
    for (int i = 0; i < 1024; i++)
        assert_int_equal(host[i], 0xC0FFEEu);
    /* The buffer holds its pool: released first, the pool stays. */
    p = cus_pool_unref(p);
    assert_int_equal(cus_fake_calls_of("cuMemPoolDestroy"), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MEMORY_POOL), 1);
    b = cus_buffer_unref(b);
    assert_int_equal(cus_fake_calls_of("cuMemFreeAsync"), 1);
    assert_int_equal(cus_fake_calls_of("cuMemPoolDestroy"), 1);
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(cus_fake_device_bytes_in_use(0), 0);
}

static void test_alloc_bad_input(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_context) other = new_ctx();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_stream) s_other = new_stream(other, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_pool) p = new_pool(c, CU_MEM_HANDLE_TYPE_NONE);
    cus_buffer *b = SENTINEL_PTR(b);
    leak_snap before = leak_snap_now();
    unsigned long calls = cus_fake_call_count();
    assert_status(cus_pool_alloc_async(p, s, 0, &b), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_pool_alloc_async(p, s_other, 64, &b), CUS_ERROR_CONTEXT_MISMATCH);
    assert_status(cus_pool_alloc_async(NULL, s, 64, &b), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_pool_alloc_async(p, NULL, 64, &b), CUS_ERROR_INVALID_ARGUMENT);
    assert_ptr_equal(b, SENTINEL_PTR(b));
    assert_int_equal(cus_fake_call_count(), calls);
    assert_nothing_changed(before);
}

/* An allocation on a capturing stream is refused; a pool's buffer that
 * captured work uses is kept by the graph, and keeps its pool. */
static void test_capture(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_pool *p = new_pool(c, CU_MEM_HANDLE_TYPE_NONE);
    cus_buffer *b = NULL;
    assert_ok(cus_pool_alloc_async(p, s, 256, &b));
    assert_ok(cus_stream_synchronize(s));
    cus_autoptr(cus_graph) g = NULL;
    {
        cus_capture_scope(cap, s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
        assert_ok(cap.status);
        cus_buffer *refused = NULL;
        assert_status(cus_pool_alloc_async(p, s, 256, &refused), CUS_ERROR_NOT_SUPPORTED);
        assert_null(refused);
        assert_ok(cus_buffer_fill_u8_async(b, 0, 0x5a, 256, s));
        assert_ok(cus_capture_end(&cap, &g));
    }
    b = cus_buffer_unref(b);
    p = cus_pool_unref(p);
    assert_int_equal(cus_fake_calls_of("cuMemFreeAsync"), 0);
    assert_int_equal(cus_fake_calls_of("cuMemPoolDestroy"), 0);
    g = cus_graph_unref(g);
    assert_int_equal(cus_fake_calls_of("cuMemFreeAsync"), 1);
    assert_int_equal(cus_fake_calls_of("cuMemPoolDestroy"), 1);
    assert_ok(cus_stream_synchronize(s));
}

/* A pool's buffer released while its stream captures: its cuMemFreeAsync
 * would become a node of the graph, so the capture's end frees it (and
 * then the pool goes), as for cus_buffer_alloc_async's buffers. */
static void test_release_during_capture_waits_for_its_end(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_pool *p = new_pool(c, CU_MEM_HANDLE_TYPE_NONE);
    cus_buffer *b = NULL;
    assert_ok(cus_pool_alloc_async(p, s, 256, &b));
    assert_ok(cus_stream_synchronize(s));
    p = cus_pool_unref(p);
    cus_autoptr(cus_graph) g = NULL;
    {
        cus_capture_scope(cap, s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
        assert_ok(cap.status);
        b = cus_buffer_unref(b);
        assert_int_equal(cus_fake_calls_of("cuMemFreeAsync"), 0);
        assert_ok(cus_capture_end(&cap, &g));
    }
    assert_int_equal(cus_fake_calls_of("cuMemFreeAsync"), 1);
    assert_int_equal(cus_fake_calls_of("cuMemPoolDestroy"), 1);
    size_t nodes = 1;
    assert_ok(cus_graph_node_count(g, &nodes));
    assert_int_equal(nodes, 0); /* the free is no node of the graph */
    assert_ok(cus_stream_synchronize(s));
}

/* --- access ----------------------------------------------------------------------------- */

static void test_access_own_device(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_pool) p = new_pool(c, CU_MEM_HANDLE_TYPE_NONE);
    CUmemAccess_flags f = CU_MEM_ACCESS_FLAGS_PROT_NONE;
    assert_ok(cus_pool_get_access(p, dev_at(0), &f));
    assert_int_equal(f, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    /* As the driver: read-write there is a no-op, anything else refused. */
    assert_ok(cus_pool_set_access(p, dev_at(0), CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
    assert_status(cus_pool_set_access(p, dev_at(0), CU_MEM_ACCESS_FLAGS_PROT_NONE),
                  CUDA_ERROR_INVALID_DEVICE);
    assert_status(cus_pool_set_access(p, dev_at(0), CU_MEM_ACCESS_FLAGS_PROT_READ),
                  CUDA_ERROR_INVALID_DEVICE);
    assert_status(cus_pool_set_access(p, (cus_device){7}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE),
                  CUDA_ERROR_INVALID_DEVICE);
    assert_ok(cus_pool_get_access(p, dev_at(0), &f));
    assert_int_equal(f, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
}

static void test_access_peer_device(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_pool) p = new_pool(c, CU_MEM_HANDLE_TYPE_NONE);
    CUmemAccess_flags f = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    assert_ok(cus_pool_get_access(p, dev_at(1), &f));
    assert_int_equal(f, CU_MEM_ACCESS_FLAGS_PROT_NONE);
    assert_ok(cus_pool_set_access(p, dev_at(1), CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
    assert_ok(cus_pool_get_access(p, dev_at(1), &f));
    assert_int_equal(f, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    assert_ok(cus_pool_set_access(p, dev_at(1), CU_MEM_ACCESS_FLAGS_PROT_NONE));
    assert_ok(cus_pool_get_access(p, dev_at(1), &f));
    assert_int_equal(f, CU_MEM_ACCESS_FLAGS_PROT_NONE);
}

/* --- IPC within one process ------------------------------------------------------------------- */

/* Sends fd over a socket pair and returns the received descriptor, as a
 * second process would get it. */
static int pass_fd(int fd)
{
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    char byte = 'p';
    struct iovec iov = {&byte, 1};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } ctl;
    memset(&ctl, 0, sizeof ctl);
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                         .msg_controllen = sizeof ctl.buf};
    struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
    if (!cm)
        return -1;
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), &fd, sizeof fd);
    assert_int_equal(sendmsg(sv[0], &msg, 0), 1);
    memset(&ctl, 0, sizeof ctl);
    msg.msg_controllen = sizeof ctl.buf;
    assert_int_equal(recvmsg(sv[1], &msg, 0), 1);
    cm = CMSG_FIRSTHDR(&msg);
    if (!cm)
        return -1;
    int got = -1;
    memcpy(&got, CMSG_DATA(cm), sizeof got);
    close(sv[0]);
    close(sv[1]);
    return got;
}

static void test_ipc_within_one_process(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_pool) p = new_pool(c, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    cus_buffer *b = NULL;
    assert_ok(cus_pool_alloc_async(p, s, 4096, &b));
    assert_ok(cus_buffer_fill_u8_async(b, 0, 0, 4096, s));
    assert_ok(cus_stream_synchronize(s));
    int fd = -1;
    assert_ok(cus_pool_export(p, &fd));
    assert_true(fd >= 0);
    CUmemPoolPtrExportData data;
    assert_ok(cus_pool_export_pointer(p, b, &data));

    /* The "other process": the descriptor it received, the data. */
    int received = pass_fd(fd);
    close(fd);
    cus_pool *imported = NULL;
    assert_ok(cus_pool_import(c, received, &imported));
    close(received);
    assert_int_equal(cus_pool_get_kind(imported), CUS_POOL_IMPORTED);
    cus_buffer *view = NULL;
    assert_ok(cus_pool_import_pointer(imported, &data, 4096, &view));
    assert_int_equal(cus_buffer_get_kind(view), CUS_BUFFER_DEVICE);
    assert_true(cus_buffer_ptr(view) != cus_buffer_ptr(b)); /* mapped again */
    assert_ok(cus_buffer_fill_u32(view, 0, 0xA5A5A5A5u, 1024));
    /* The imported pool allocates nothing, and cannot be current. */
    cus_buffer *none = NULL;
    assert_status(cus_pool_alloc_async(imported, s, 64, &none), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_pool_set_current(imported), CUS_ERROR_INVALID_ARGUMENT);
    assert_null(none);
    /* Its buffer holds it; its release is cuMemFree, and frees nothing of
     * the exporter's. */
    imported = cus_pool_unref(imported);
    unsigned long frees = cus_fake_calls_of("cuMemFree");
    view = cus_buffer_unref(view);
    assert_int_equal(cus_fake_calls_of("cuMemFree"), frees + 1);
    assert_int_equal(cus_fake_calls_of("cuMemPoolDestroy"), 1);

    uint32_t host[1024];
    assert_ok(cus_copy_to_host(host, b, 0, sizeof host));
    for (int i = 0; i < 1024; i++)
        assert_int_equal(host[i], 0xA5A5A5A5u);
    b = cus_buffer_unref(b);
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(cus_fake_device_bytes_in_use(0), 0);
}

static void test_ipc_refusals(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_pool) plain = new_pool(c, CU_MEM_HANDLE_TYPE_NONE);
    cus_autoptr(cus_pool) ipc = new_pool(c, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    cus_autoptr(cus_pool) def = NULL;
    assert_ok(cus_pool_default(c, &def));
    cus_autoptr(cus_buffer) from_plain = NULL;
    cus_autoptr(cus_buffer) from_ipc = NULL;
    assert_ok(cus_pool_alloc_async(plain, s, 256, &from_plain));
    assert_ok(cus_pool_alloc_async(ipc, s, 256, &from_ipc));
    leak_snap before = leak_snap_now();
    unsigned long calls = cus_fake_call_count();
    int fd = -7;
    CUmemPoolPtrExportData data;
    memset(&data, 0x11, sizeof data);
    cus_buffer *b = SENTINEL_PTR(b);
    cus_pool *imp = SENTINEL_PTR(imp);
    assert_status(cus_pool_export(plain, &fd), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_pool_export(def, &fd), CUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(fd, -7);
    assert_status(cus_pool_export_pointer(plain, from_plain, &data), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_pool_export_pointer(ipc, from_plain, &data), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_pool_import(c, -1, &imp), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_pool_import_pointer(ipc, &data, 256, &b), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_pool_import_pointer(ipc, NULL, 256, &b), CUS_ERROR_INVALID_ARGUMENT);
    assert_ptr_equal(b, SENTINEL_PTR(b));
    assert_ptr_equal(imp, SENTINEL_PTR(imp));
    assert_int_equal(cus_fake_call_count(), calls);
    assert_nothing_changed(before);
    /* A descriptor the driver never exported: its refusal. */
    int pipe_fds[2];
    assert_int_equal(pipe(pipe_fds), 0);
    assert_status(cus_pool_import(c, pipe_fds[0], &imp), CUDA_ERROR_INVALID_VALUE);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    assert_ptr_equal(imp, SENTINEL_PTR(imp));
}

/* --- failures ------------------------------------------------------------------------------ */

static void test_driver_faults(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_pool) p = new_pool(c, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    cus_autoptr(cus_buffer) b = NULL;
    assert_ok(cus_pool_alloc_async(p, s, 256, &b));
    assert_ok(cus_stream_synchronize(s));
    cus_pool *out = NULL;
    cus_buffer *ob = NULL;
    uint64_t u64 = 0;
    bool on = false;
    cus_pool_usage usage;
    CUmemAccess_flags f;
    int fd = -1;
    CUmemPoolPtrExportData data;
    assert_fault_surfaces("cuMemPoolCreate", cus_pool_create(c, NULL, &out));
    assert_fault_surfaces("cuDeviceGetDefaultMemPool", cus_pool_default(c, &out));
    assert_fault_surfaces("cuDeviceGetMemPool", cus_pool_current(c, &out));
    assert_fault_surfaces("cuDeviceSetMemPool", cus_pool_set_current(p));
    assert_fault_surfaces("cuMemPoolSetAttribute", cus_pool_set_release_threshold(p, 1));
    assert_fault_surfaces("cuMemPoolSetAttribute",
                          cus_pool_set_reuse(p, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, false));
    assert_fault_surfaces("cuMemPoolSetAttribute", cus_pool_reset_high_water(p));
    assert_fault_surfaces("cuMemPoolGetAttribute", cus_pool_get_release_threshold(p, &u64));
    assert_fault_surfaces("cuMemPoolGetAttribute",
                          cus_pool_get_reuse(p, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &on));
    assert_fault_surfaces("cuMemPoolGetAttribute", cus_pool_get_usage(p, &usage));
    assert_fault_surfaces("cuMemPoolTrimTo", cus_pool_trim(p, 0));
    assert_fault_surfaces("cuMemPoolSetAccess",
                          cus_pool_set_access(p, dev_at(0), CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
    assert_fault_surfaces("cuMemPoolGetAccess", cus_pool_get_access(p, dev_at(0), &f));
    assert_fault_surfaces("cuMemAllocFromPoolAsync", cus_pool_alloc_async(p, s, 64, &ob));
    assert_fault_surfaces("cuMemPoolExportToShareableHandle", cus_pool_export(p, &fd));
    assert_fault_surfaces("cuMemPoolExportPointer", cus_pool_export_pointer(p, b, &data));
    assert_null(out);
    assert_null(ob);
    assert_int_equal(fd, -1);

    /* The second attribute of the usage and of the reset failing. */
    assert_ok(cus_fake_fail_entry("cuMemPoolGetAttribute", 2, FAULT, false));
    memset(&usage, 0x5a, sizeof usage);
    cus_pool_usage copy = usage;
    assert_status(cus_pool_get_usage(p, &usage), CU(FAULT));
    assert_memory_equal(&usage, &copy, sizeof usage);
    assert_ok(cus_fake_fail_entry("cuMemPoolSetAttribute", 2, FAULT, false));
    assert_status(cus_pool_reset_high_water(p), CU(FAULT));
    cus_fake_clear_faults();

    assert_ok(cus_pool_export(p, &fd));
    assert_ok(cus_pool_export_pointer(p, b, &data));
    assert_fault_surfaces("cuMemPoolImportFromShareableHandle", cus_pool_import(c, fd, &out));
    cus_autoptr(cus_pool) imported = NULL;
    assert_ok(cus_pool_import(c, fd, &imported));
    close(fd);
    assert_fault_surfaces("cuMemPoolImportPointer",
                          cus_pool_import_pointer(imported, &data, 256, &ob));
    assert_null(out);
    assert_null(ob);
}

static void test_destroy_failure_goes_to_the_handler(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_pool *p = new_pool(c, CU_MEM_HANDLE_TYPE_NONE);
    CUmemoryPool h = cus_pool_handle(p);
    unsigned long before = env_destroyed.count;
    assert_ok(cus_fake_fail_entry("cuMemPoolDestroy", 1, FAULT, false));
    cus_clear_last_error();
    p = cus_pool_unref(p);
    assert_int_equal(env_destroyed.count, before + 1);
    assert_int_equal(env_destroyed.last_status, CU(FAULT));
    assert_string_equal(env_destroyed.last_function, "cus_pool_unref");
    assert_string_equal(env_destroyed.last_driver_call, "cuMemPoolDestroy");
    assert_int_equal(cus_last_status(), CUS_SUCCESS); /* not the thread's error */
    /* The pool the driver kept: released here, for the teardown's count. */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MEMORY_POOL), 1);
    CUresult (*destroy)(CUmemoryPool) = NULL;
    CUdriverProcAddressQueryResult found;
    assert_int_equal(cus_fake_get_proc_address("cuMemPoolDestroy", (void **)&destroy, 11020,
                                               CU_GET_PROC_ADDRESS_DEFAULT, &found),
                     CUDA_SUCCESS);
    assert_int_equal(destroy(h), CUDA_SUCCESS);
    env_destroyed.count = before;
}

static void test_host_memory_failures(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_pool) p = new_pool(c, CU_MEM_HANDLE_TYPE_NONE);
    cus_pool *out = NULL;
    cus_buffer *b = NULL;
    leak_snap before = leak_snap_now();
    cus_debug_fail_host_alloc(1, false);
    assert_status(cus_pool_create(c, NULL, &out), CUS_ERROR_OUT_OF_HOST_MEMORY);
    cus_debug_fail_host_alloc(1, false);
    assert_status(cus_pool_default(c, &out), CUS_ERROR_OUT_OF_HOST_MEMORY);
    cus_debug_fail_host_alloc(1, false);
    assert_status(cus_pool_alloc_async(p, s, 64, &b), CUS_ERROR_OUT_OF_HOST_MEMORY);
    cus_debug_fail_host_alloc(0, false);
    assert_null(out);
    assert_null(b);
    assert_nothing_changed(before);
}

static void test_null_args_and_accessors(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_pool) p = new_pool(c, CU_MEM_HANDLE_TYPE_NONE);
    assert_status(cus_pool_create(NULL, NULL, &p), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_pool_create(c, NULL, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_pool_default(NULL, &p), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_pool_current(c, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_pool_set_current(NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_pool_get_release_threshold(p, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_pool_get_usage(p, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_pool_trim(NULL, 0), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_pool_get_access(p, dev_at(0), NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_pool_export(p, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_null(cus_pool_ref(NULL));
    assert_null(cus_pool_unref(NULL));
    assert_null(cus_pool_handle(NULL));
    assert_null(cus_pool_context(NULL));
    assert_int_equal(cus_pool_get_kind(NULL), CUS_POOL_CREATED);
    assert_int_equal(cus_pool_handle_types(NULL), CU_MEM_HANDLE_TYPE_NONE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_create_and_destroy),
        ENV_TEST(test_pool_keeps_context_alive),
        ENV_TEST(test_default_and_current_pools),
        ENV_TEST(test_create_options),
        ENV_TEST(test_attributes),
        ENV_TEST(test_usage_follows_allocations),
        ENV_TEST(test_max_size),
        ENV_TEST(test_alloc_fill_copy),
        ENV_TEST(test_alloc_bad_input),
        ENV_TEST(test_capture),
        ENV_TEST(test_release_during_capture_waits_for_its_end),
        ENV_TEST(test_access_own_device),
        TWO_DEV_TEST(test_access_peer_device),
        ENV_TEST(test_ipc_within_one_process),
        ENV_TEST(test_ipc_refusals),
        ENV_TEST(test_driver_faults),
        ENV_TEST(test_destroy_failure_goes_to_the_handler),
        ENV_TEST(test_host_memory_failures),
        ENV_TEST(test_null_args_and_accessors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
