/* Legacy CUDA IPC (include/cuscope/ipc.h) on the fake: exports, the imports
 * the driver refuses in the exporting process (CUDA_ERROR_INVALID_CONTEXT),
 * imports of handles made foreign (cus_fake_ipc_*_as_foreign: the importer's
 * side in one process), stale and garbage handles, the bounds of a stated
 * size, the kinds and flags refused before any driver call, every driver
 * call's failure, graphs keeping imported buffers, and a fork() child, which
 * the fake sees as a second process. Two real processes: test_gpu_ipc.c. */
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuscope/graph.h>
#include <cuscope/ipc.h>
#include <cuscope/memory.h>

#include "stream_common.h"

#define IPC_EVENT (CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING)

static cus_buffer *new_buf(cus_context *c, size_t bytes)
{
    cus_buffer *b = NULL;
    assert_ok(cus_buffer_alloc(c, bytes, &b));
    return b;
}

/* buf's handle, made foreign. */
static CUipcMemHandle foreign_handle(cus_buffer *buf)
{
    CUipcMemHandle h;
    assert_ok(cus_buffer_ipc_export(buf, &h));
    assert_ok(cus_fake_ipc_mem_handle_as_foreign(&h));
    return h;
}

static CUipcEventHandle foreign_event_handle(cus_event *e)
{
    CUipcEventHandle h;
    assert_ok(cus_event_ipc_export(e, &h));
    assert_ok(cus_fake_ipc_event_handle_as_foreign(&h));
    return h;
}

/* --- memory -------------------------------------------------------------------------- */

static void test_import_round_trip(void **state)
{
    (void)state;
    cus_autoptr(cus_context) exporter = new_ctx();
    cus_autoptr(cus_context) importer = new_ctx();
    cus_autoptr(cus_buffer) buf = new_buf(exporter, 4096);
    uint32_t pattern[1024];
    for (unsigned i = 0; i < 1024; i++)
        pattern[i] = 0xC0DE0000u + i;
    assert_ok(cus_copy_to_device(buf, 0, pattern, sizeof pattern));
    CUipcMemHandle h = foreign_handle(buf);

    unsigned long opens = cus_fake_calls_of("cuIpcOpenMemHandle");
    cus_buffer *view = NULL;
    assert_ok(cus_buffer_ipc_import(importer, &h, 0, 4096, &view));
    assert_int_equal(cus_fake_calls_of("cuIpcOpenMemHandle"), opens + 1);
    assert_int_equal(cus_buffer_get_kind(view), CUS_BUFFER_IMPORTED);
    assert_int_equal(cus_buffer_size(view), 4096);
    assert_ptr_equal(cus_buffer_context(view), importer);
    assert_null(cus_buffer_host_ptr(view));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_IPC_MAPPING), 1);
    assert_int_equal(cus_context_stack_depth(), 0);
    assert_int_equal(cus_fake_thread_stack_depth(), 0);

    uint32_t back[1024] = {0};
    assert_ok(cus_copy_to_host(back, view, 0, sizeof back));
    assert_memory_equal(back, pattern, sizeof back);
    /* Writes through the import land in the exporter's memory. */
    assert_ok(cus_buffer_fill_u32(view, 0, 0xFEEDu, 16));
    /* The fill is the importer's legacy stream's, which returns first; the
     * exporter's copy below does not wait for another context's stream. */
    assert_ok(cus_context_synchronize(importer));
    assert_ok(cus_copy_to_host(back, buf, 0, 64));
    assert_int_equal(back[15], 0xFEEDu);
    assert_int_equal(back[16], pattern[16]);

    unsigned long closes = cus_fake_calls_of("cuIpcCloseMemHandle");
    unsigned long frees = cus_fake_calls_of("cuMemFree");
    view = cus_buffer_unref(view);
    assert_int_equal(cus_fake_calls_of("cuIpcCloseMemHandle"), closes + 1);
    assert_int_equal(cus_fake_calls_of("cuMemFree"), frees); /* never freed by the importer */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_IPC_MAPPING), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY), 1);
}

/* The driver refuses a handle in the process that made it. */
static void test_import_in_the_exporting_process(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_autoptr(cus_buffer) buf = new_buf(c, 256);
    CUipcMemHandle h;
    assert_ok(cus_buffer_ipc_export(buf, &h));
    leak_snap before = leak_snap_now();
    cus_buffer *view = SENTINEL_PTR(view);
    assert_status(cus_buffer_ipc_import(c, &h, 0, 256, &view), CUDA_ERROR_INVALID_CONTEXT);
    assert_ptr_equal(view, SENTINEL_PTR(view));
    assert_string_equal(cus_last_error()->function, "cus_buffer_ipc_import");
    assert_string_equal(cus_last_error()->driver_call, "cuIpcOpenMemHandle");
    assert_nothing_changed(before);
}

static void test_stale_and_garbage_handles(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_buffer *buf = new_buf(c, 256);
    CUipcMemHandle h = foreign_handle(buf);
    buf = cus_buffer_unref(buf); /* the exporter freed it */
    cus_buffer *view = SENTINEL_PTR(view);
    assert_status(cus_buffer_ipc_import(c, &h, 0, 256, &view), CUDA_ERROR_INVALID_VALUE);
    assert_ptr_equal(view, SENTINEL_PTR(view));
    /* A new allocation, maybe at the same address, does not revive it. */
    cus_autoptr(cus_buffer) again = new_buf(c, 256);
    assert_non_null(again);
    assert_status(cus_buffer_ipc_import(c, &h, 0, 256, &view), CUDA_ERROR_INVALID_VALUE);
    CUipcMemHandle zero;
    memset(&zero, 0, sizeof zero);
    assert_status(cus_buffer_ipc_import(c, &zero, 0, 256, &view), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cus_fake_ipc_mem_handle_as_foreign(&zero), CUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(cus_fake_ipc_mem_handle_as_foreign(NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(cus_fake_misuse_count(), 0);
}

/* The stated size bounds copies; 0 is refused. */
static void test_stated_size_bounds_copies(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_autoptr(cus_buffer) buf = new_buf(c, 4096);
    CUipcMemHandle h = foreign_handle(buf);
    cus_buffer *view = SENTINEL_PTR(view);
    unsigned long calls = cus_fake_call_count();
    assert_status(cus_buffer_ipc_import(c, &h, 0, 0, &view), CUS_ERROR_INVALID_ARGUMENT);
    assert_contains(cus_last_error_message(), "carries none");
    assert_int_equal(cus_fake_call_count(), calls);
    assert_ptr_equal(view, SENTINEL_PTR(view));

    cus_autoptr(cus_buffer) part = NULL;
    assert_ok(cus_buffer_ipc_import(c, &h, 0, 1024, &part));
    char host[2048] = {0};
    calls = cus_fake_call_count();
    assert_status(cus_copy_to_host(host, part, 512, 1024), CUS_ERROR_OUT_OF_RANGE);
    assert_status(cus_buffer_fill_u8(part, 0, 1, 1025), CUS_ERROR_OUT_OF_RANGE);
    assert_int_equal(cus_fake_call_count(), calls);
    assert_ok(cus_copy_to_host(host, part, 0, 1024));
}

/* One handle opened twice in a context: two buffers, one mapping, closed
 * when both are gone; a second context of the device is refused. */
static void test_import_twice(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_autoptr(cus_context) other = new_ctx();
    cus_autoptr(cus_buffer) buf = new_buf(c, 512);
    CUipcMemHandle h = foreign_handle(buf);
    cus_buffer *a = NULL, *b = NULL;
    assert_ok(cus_buffer_ipc_import(c, &h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS, 512, &a));
    assert_ok(cus_buffer_ipc_import(c, &h, 0, 512, &b));
    assert_true(a != b);
    assert_int_equal(cus_buffer_ptr(a), cus_buffer_ptr(b));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_IPC_MAPPING), 1);
    cus_buffer *x = SENTINEL_PTR(x);
    assert_status(cus_buffer_ipc_import(other, &h, 0, 512, &x), CUDA_ERROR_ALREADY_MAPPED);
    a = cus_buffer_unref(a);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_IPC_MAPPING), 1);
    b = cus_buffer_unref(b);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_IPC_MAPPING), 0);
    /* Now the other context may. */
    assert_ok(cus_buffer_ipc_import(other, &h, 0, 512, &x));
    x = cus_buffer_unref(x);
    /* flags other than the lazy one go to the driver, which refuses them */
    assert_status(cus_buffer_ipc_import(c, &h, 2, 512, &x), CUDA_ERROR_INVALID_VALUE);
}

/* Only device memory from cus_buffer_alloc is exported. */
static void test_export_refuses_other_kinds(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_autoptr(cus_stream) s = new_stream(c, 0);
    cus_autoptr(cus_buffer) async = NULL;
    cus_autoptr(cus_buffer) managed = NULL;
    assert_ok(cus_buffer_alloc_async(s, 256, &async));
    assert_ok(cus_buffer_alloc_managed(c, 256, 0, &managed));
    cus_autoptr(cus_buffer) buf = new_buf(c, 256);
    CUipcMemHandle h = foreign_handle(buf);
    cus_autoptr(cus_buffer) view = NULL;
    assert_ok(cus_buffer_ipc_import(c, &h, 0, 256, &view));
    CUipcMemHandle out;
    memset(&out, 0x5A, sizeof out);
    unsigned long calls = cus_fake_call_count();
    assert_status(cus_buffer_ipc_export(async, &out), CUS_ERROR_INVALID_ARGUMENT);
    assert_contains(cus_last_error_message(), "stream-ordered");
    assert_status(cus_buffer_ipc_export(managed, &out), CUS_ERROR_INVALID_ARGUMENT);
    assert_contains(cus_last_error_message(), "managed");
    assert_status(cus_buffer_ipc_export(view, &out), CUS_ERROR_INVALID_ARGUMENT);
    assert_contains(cus_last_error_message(), "imported");
    assert_int_equal(cus_fake_call_count(), calls);
    assert_int_equal((unsigned char)out.reserved[0], 0x5A);
    assert_ok(cus_stream_synchronize(s));
}

/* The fake refuses what cuscope never passes: pool and managed memory. */
static void test_fake_refuses_pool_memory(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_autoptr(cus_stream) s = new_stream(c, 0);
    cus_autoptr(cus_buffer) async = NULL;
    assert_ok(cus_buffer_alloc_async(s, 256, &async));
    assert_ok(cus_stream_synchronize(s));
    PFN_cuIpcGetMemHandle_v4010 get;
    RAW(get, "cuIpcGetMemHandle", 4010);
    CUipcMemHandle h;
    assert_ok(cus_context_push(c));
    assert_int_equal(get(&h, cus_buffer_ptr(async)), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(get(&h, cus_buffer_ptr(async) + 1), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(get(NULL, cus_buffer_ptr(async)), CUDA_ERROR_INVALID_VALUE);
    assert_ok(cus_context_pop(NULL));
    assert_int_equal(get(&h, cus_buffer_ptr(async)), CUDA_ERROR_INVALID_CONTEXT);
}

static void test_memory_faults(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_autoptr(cus_buffer) buf = new_buf(c, 256);
    CUipcMemHandle h;
    memset(&h, 0x5A, sizeof h);
    assert_fault_surfaces("cuIpcGetMemHandle", cus_buffer_ipc_export(buf, &h));
    assert_int_equal((unsigned char)h.reserved[0], 0x5A);
    assert_string_equal(cus_last_error()->driver_call, "cuIpcGetMemHandle");
    h = foreign_handle(buf);
    cus_buffer *view = SENTINEL_PTR(view);
    assert_fault_surfaces("cuIpcOpenMemHandle", cus_buffer_ipc_import(c, &h, 0, 256, &view));
    assert_ptr_equal(view, SENTINEL_PTR(view));
    assert_string_equal(cus_last_error()->driver_call, "cuIpcOpenMemHandle");
    /* A failed close goes to the destroy handler, naming it. */
    view = NULL;
    assert_ok(cus_buffer_ipc_import(c, &h, 0, 256, &view));
    assert_ok(cus_fake_fail_entry("cuIpcCloseMemHandle", 1, FAULT, false));
    unsigned long reports = env_destroyed.count;
    view = cus_buffer_unref(view);
    assert_int_equal(env_destroyed.count, reports + 1);
    assert_int_equal(env_destroyed.last_status, CU(FAULT));
    assert_string_equal(env_destroyed.last_driver_call, "cuIpcCloseMemHandle");
    assert_string_equal(env_destroyed.last_function, "cus_buffer_unref");
    /* The mapping stays, until its context goes (cuCtxDestroy unmaps it). */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_IPC_MAPPING), 1);
}

/* A driver without the entry points: CUS_ERROR_NOT_SUPPORTED. */
static void test_not_supported(void **state)
{
    (void)state;
    assert_ok(cus_fake_hide_entry("cuIpcOpenMemHandle"));
    assert_ok(cus_fake_hide_entry("cuIpcGetEventHandle"));
    cus_autoptr(cus_context) c = new_ctx();
    cus_autoptr(cus_buffer) buf = new_buf(c, 256);
    CUipcMemHandle h = foreign_handle(buf); /* cuIpcGetMemHandle is there */
    cus_autoptr(cus_event) e = new_event(c, IPC_EVENT);
    cus_buffer *view = SENTINEL_PTR(view);
    unsigned long calls = cus_fake_call_count();
    assert_status(cus_buffer_ipc_import(c, &h, 0, 256, &view), CUS_ERROR_NOT_SUPPORTED);
    assert_contains(cus_last_error_message(), "cuIpcOpenMemHandle");
    assert_ptr_equal(view, SENTINEL_PTR(view));
    CUipcEventHandle eh;
    assert_status(cus_event_ipc_export(e, &eh), CUS_ERROR_NOT_SUPPORTED);
    assert_contains(cus_last_error_message(), "cuIpcGetEventHandle");
    assert_int_equal(cus_fake_call_count(), calls);
}

/* Graphs keep imported buffers as they keep any buffer: the mapping is
 * closed with the graph, not with the caller's last reference. */
static void test_graph_keeps_an_imported_buffer(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_autoptr(cus_stream) s = new_stream(c, 0);
    cus_autoptr(cus_buffer) buf = new_buf(c, 1024);
    CUipcMemHandle h = foreign_handle(buf);
    cus_buffer *view = NULL;
    assert_ok(cus_buffer_ipc_import(c, &h, 0, 1024, &view));
    cus_graph *graph = NULL;
    {
        cus_capture_scope(cap, s, CU_STREAM_CAPTURE_MODE_GLOBAL);
        assert_ok(cap.status);
        assert_ok(cus_buffer_fill_u32_async(view, 0, 0xABCDu, 256, s));
        assert_ok(cus_capture_end(&cap, &graph));
    }
    assert_int_equal(cus_graph_kept_objects(graph), 1);
    unsigned long closes = cus_fake_calls_of("cuIpcCloseMemHandle");
    view = cus_buffer_unref(view);
    assert_int_equal(cus_fake_calls_of("cuIpcCloseMemHandle"), closes);
    cus_graph_exec *exec = NULL;
    assert_ok(cus_graph_instantiate(graph, 0, &exec));
    assert_ok(cus_graph_exec_launch(exec, s));
    assert_ok(cus_stream_synchronize(s));
    uint32_t back[256];
    assert_ok(cus_copy_to_host(back, buf, 0, sizeof back));
    assert_int_equal(back[0], 0xABCDu);
    assert_int_equal(back[255], 0xABCDu);
    exec = cus_graph_exec_unref(exec);
    graph = cus_graph_unref(graph);
    assert_int_equal(cus_fake_calls_of("cuIpcCloseMemHandle"), closes + 1);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_IPC_MAPPING), 0);
}

/* A context's destruction unmaps what it opened (the driver's rule): an
 * imported buffer holds its context, so only a raw open can outlive it. */
static void test_context_destruction_closes_raw_mappings(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_autoptr(cus_buffer) buf = new_buf(c, 256);
    CUipcMemHandle h = foreign_handle(buf);
    cus_context *importer = new_ctx();
    PFN_cuIpcOpenMemHandle_v11000 open_mem;
    RAW(open_mem, "cuIpcOpenMemHandle", 11000);
    assert_ok(cus_context_push(importer));
    CUdeviceptr p = 0;
    assert_int_equal(open_mem(&p, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), CUDA_SUCCESS);
    assert_ok(cus_context_pop(NULL));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_IPC_MAPPING), 1);
    importer = cus_context_unref(importer);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_IPC_MAPPING), 0);
}

/* --- events -------------------------------------------------------------------------- */

static void test_event_round_trip(void **state)
{
    (void)state;
    cus_autoptr(cus_context) exporter = new_ctx();
    cus_autoptr(cus_context) importer = new_ctx();
    cus_autoptr(cus_event) e = new_event(exporter, IPC_EVENT);
    CUipcEventHandle h = foreign_event_handle(e);
    size_t events = cus_fake_live_handles(CUS_FAKE_HANDLE_EVENT);
    cus_event *imported = NULL;
    assert_ok(cus_event_ipc_import(importer, &h, &imported));
    assert_ptr_equal(cus_event_context(imported), importer);
    assert_non_null(cus_event_handle(imported));
    assert_true(cus_event_handle(imported) != cus_event_handle(e));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_EVENT), events + 1);
    cus_autoptr(cus_stream) s = new_stream(importer, 0);
    assert_ok(cus_event_record(imported, s));
    assert_ok(cus_event_synchronize(imported));
    bool done = false;
    assert_ok(cus_event_query(imported, &done));
    assert_true(done);
    /* an imported event is interprocess: it can be exported again */
    CUipcEventHandle again;
    assert_ok(cus_event_ipc_export(imported, &again));
    unsigned long destroys = cus_fake_calls_of("cuEventDestroy");
    imported = cus_event_unref(imported);
    assert_int_equal(cus_fake_calls_of("cuEventDestroy"), destroys + 1);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_EVENT), events);
}

static void test_event_import_in_the_exporting_process(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_autoptr(cus_event) e = new_event(c, IPC_EVENT);
    CUipcEventHandle h;
    assert_ok(cus_event_ipc_export(e, &h));
    leak_snap before = leak_snap_now();
    cus_event *out = SENTINEL_PTR(out);
    assert_status(cus_event_ipc_import(c, &h, &out), CUDA_ERROR_INVALID_CONTEXT);
    assert_ptr_equal(out, SENTINEL_PTR(out));
    assert_string_equal(cus_last_error()->driver_call, "cuIpcOpenEventHandle");
    assert_nothing_changed(before);
    /* stale: the exporter destroyed it */
    cus_event *gone = new_event(c, IPC_EVENT);
    CUipcEventHandle g = foreign_event_handle(gone);
    gone = cus_event_unref(gone);
    assert_status(cus_event_ipc_import(c, &g, &out), CUDA_ERROR_INVALID_VALUE);
    /* bytes that are no handle: CUDA_ERROR_MAP_FAILED, as on the H200 */
    CUipcEventHandle zero;
    memset(&zero, 0, sizeof zero);
    assert_status(cus_event_ipc_import(c, &zero, &out), CUDA_ERROR_MAP_FAILED);
    assert_ptr_equal(out, SENTINEL_PTR(out));
}

/* The driver needs CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING: said
 * before any driver call, naming what is missing. */
static void test_event_export_needs_the_flags(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_autoptr(cus_event) plain = new_event(c, 0);
    cus_autoptr(cus_event) untimed = new_event(c, CU_EVENT_DISABLE_TIMING);
    CUipcEventHandle h;
    memset(&h, 0x5A, sizeof h);
    unsigned long calls = cus_fake_call_count();
    assert_status(cus_event_ipc_export(plain, &h), CUS_ERROR_INVALID_ARGUMENT);
    assert_contains(cus_last_error_message(), "CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING");
    assert_contains(cus_last_error_message(), "without either");
    assert_status(cus_event_ipc_export(untimed, &h), CUS_ERROR_INVALID_ARGUMENT);
    assert_contains(cus_last_error_message(), "without CU_EVENT_INTERPROCESS");
    assert_int_equal(cus_fake_call_count(), calls);
    assert_int_equal((unsigned char)h.reserved[0], 0x5A);
    /* the driver's own answer, for a caller that goes around cuscope: with a
     * context current CUDA_ERROR_INVALID_HANDLE, with none
     * CUDA_ERROR_INVALID_CONTEXT (the H200's table) */
    PFN_cuIpcGetEventHandle_v4010 get;
    RAW(get, "cuIpcGetEventHandle", 4010);
    assert_int_equal(get(&h, cus_event_handle(plain)), CUDA_ERROR_INVALID_CONTEXT);
    {
        cus_context_scope(guard, c);
        assert_ok(guard.status);
        assert_int_equal(get(&h, cus_event_handle(plain)), CUDA_ERROR_INVALID_HANDLE);
    }
}

static void test_event_faults(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_autoptr(cus_event) e = new_event(c, IPC_EVENT);
    CUipcEventHandle h;
    assert_fault_surfaces("cuIpcGetEventHandle", cus_event_ipc_export(e, &h));
    assert_string_equal(cus_last_error()->driver_call, "cuIpcGetEventHandle");
    h = foreign_event_handle(e);
    cus_event *out = SENTINEL_PTR(out);
    assert_fault_surfaces("cuIpcOpenEventHandle", cus_event_ipc_import(c, &h, &out));
    assert_ptr_equal(out, SENTINEL_PTR(out));
    assert_string_equal(cus_last_error()->driver_call, "cuIpcOpenEventHandle");
    /* A host allocation that fails: nothing opened. */
    cus_debug_fail_host_alloc(1, false);
    assert_status(cus_event_ipc_import(c, &h, &out), CUS_ERROR_OUT_OF_HOST_MEMORY);
    cus_buffer *view = SENTINEL_PTR(view);
    cus_autoptr(cus_buffer) buf = new_buf(c, 256);
    CUipcMemHandle mh = foreign_handle(buf);
    unsigned long opens = cus_fake_calls_of("cuIpcOpenMemHandle");
    cus_debug_fail_host_alloc(1, false);
    assert_status(cus_buffer_ipc_import(c, &mh, 0, 256, &view), CUS_ERROR_OUT_OF_HOST_MEMORY);
    assert_int_equal(cus_fake_calls_of("cuIpcOpenMemHandle"), opens);
    assert_ptr_equal(view, SENTINEL_PTR(view));
}

/* --- a fork() child: the fake's second process ----------------------------------------- */

typedef struct child_args {
    cus_context *ctx;
    cus_buffer *buf;
    CUipcMemHandle handle, stale;
    CUipcEventHandle event;
} child_args;

#define CHILD_CHECK(cond)                                                      \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "child: %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            return __LINE__ % 255 + 1;                                         \
        }                                                                      \
    } while (0)

static int child_opens(const child_args *a)
{
    /* cuscope refuses to run in a fork() child ... */
    cus_buffer *view = NULL;
    CHILD_CHECK(cus_buffer_ipc_import(a->ctx, &a->handle, 0, 4096, &view) == CUS_ERROR_FORKED);
    /* ... but the fake's entry points answer as a second process's driver. */
    PFN_cuCtxPushCurrent_v4000 push;
    PFN_cuCtxPopCurrent_v4000 pop;
    PFN_cuIpcOpenMemHandle_v11000 open_mem;
    PFN_cuIpcCloseMemHandle_v4010 close_mem;
    PFN_cuIpcOpenEventHandle_v4010 open_event;
    PFN_cuEventDestroy_v4000 destroy_event;
    PFN_cuMemcpyDtoH_v3020 dtoh;
    RAW_OR_NULL(push, "cuCtxPushCurrent", 4000);
    RAW_OR_NULL(pop, "cuCtxPopCurrent", 4000);
    RAW_OR_NULL(open_mem, "cuIpcOpenMemHandle", 11000);
    RAW_OR_NULL(close_mem, "cuIpcCloseMemHandle", 4010);
    RAW_OR_NULL(open_event, "cuIpcOpenEventHandle", 4010);
    RAW_OR_NULL(destroy_event, "cuEventDestroy", 4000);
    RAW_OR_NULL(dtoh, "cuMemcpyDtoH", 3020);
    CHILD_CHECK(push && pop && open_mem && close_mem && open_event && destroy_event && dtoh);
    CHILD_CHECK(push(cus_context_handle(a->ctx)) == CUDA_SUCCESS);
    CUdeviceptr p = 0;
    CHILD_CHECK(open_mem(&p, a->handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) == CUDA_SUCCESS);
    uint32_t back[4] = {0};
    CHILD_CHECK(dtoh(back, p, sizeof back) == CUDA_SUCCESS);
    CHILD_CHECK(back[0] == 0x1234u && back[3] == 0x1234u);
    CHILD_CHECK(close_mem(p) == CUDA_SUCCESS);
    CHILD_CHECK(open_mem(&p, a->stale, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) ==
                CUDA_ERROR_INVALID_VALUE);
    CUevent e = NULL;
    CHILD_CHECK(open_event(&e, a->event) == CUDA_SUCCESS && e);
    CHILD_CHECK(destroy_event(e) == CUDA_SUCCESS);
    CUcontext popped = NULL;
    CHILD_CHECK(pop(&popped) == CUDA_SUCCESS);
    return 0;
}

static void test_fork_child_is_a_second_process(void **state)
{
    (void)state;
    child_args a = {0};
    a.ctx = new_ctx();
    a.buf = new_buf(a.ctx, 4096);
    assert_ok(cus_buffer_fill_u32(a.buf, 0, 0x1234u, 1024));
    assert_ok(cus_buffer_ipc_export(a.buf, &a.handle));
    cus_buffer *gone = new_buf(a.ctx, 256);
    assert_ok(cus_buffer_ipc_export(gone, &a.stale));
    gone = cus_buffer_unref(gone);
    cus_event *e = new_event(a.ctx, IPC_EVENT);
    assert_ok(cus_event_ipc_export(e, &a.event));
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(10);
        int rc = child_opens(&a);
        /* The parent's objects, freed in the child too (a fork child's
         * releases make no driver call): nothing leaks at its exit (valgrind
         * checks the child as well). */
        e = cus_event_unref(e);
        a.buf = cus_buffer_unref(a.buf);
        a.ctx = cus_context_unref(a.ctx);
        child_exit(rc);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    if (WEXITSTATUS(status))
        fail_msg("the child failed a check (status %d; see its stderr)", WEXITSTATUS(status));
    /* The parent is unaffected: its import is still refused, its copy of the
     * fake saw nothing of the child's. */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_IPC_MAPPING), 0);
    cus_buffer *view = NULL;
    assert_status(cus_buffer_ipc_import(a.ctx, &a.handle, 0, 4096, &view),
                  CUDA_ERROR_INVALID_CONTEXT);
    e = cus_event_unref(e);
    a.buf = cus_buffer_unref(a.buf);
    a.ctx = cus_context_unref(a.ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_import_round_trip),
        ENV_TEST(test_import_in_the_exporting_process),
        ENV_TEST(test_stale_and_garbage_handles),
        ENV_TEST(test_stated_size_bounds_copies),
        ENV_TEST(test_import_twice),
        ENV_TEST(test_export_refuses_other_kinds),
        ENV_TEST(test_fake_refuses_pool_memory),
        ENV_TEST(test_memory_faults),
        ENV_TEST(test_not_supported),
        ENV_TEST(test_graph_keeps_an_imported_buffer),
        ENV_TEST(test_context_destruction_closes_raw_mappings),
        ENV_TEST(test_event_round_trip),
        ENV_TEST(test_event_import_in_the_exporting_process),
        ENV_TEST(test_event_export_needs_the_flags),
        ENV_TEST(test_event_faults),
        ENV_TEST(test_fork_child_is_a_second_process),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
