/* Memory (include/cuscope/memory.h): device, stream-ordered, managed and
 * host buffers, copies, fills, memory info and peer copies, on the fake
 * driver; every failure path returns and records its status, leaves out
 * parameters untouched, the stack unchanged and nothing leaked. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuscope/memory.h>

#include "stream_common.h"

#define N 256

static cus_buffer *new_buf(cus_context *c, size_t bytes)
{
    cus_buffer *b = NULL;
    assert_ok(cus_buffer_alloc(c, bytes, &b));
    assert_non_null(b);
    return b;
}

static void pattern(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 7u + seed);
}

/* --- alloc ------------------------------------------------------------------ */

static void test_alloc_and_free(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    assert_int_equal(cus_fake_device_bytes_in_use(0), 0);
    cus_buffer *b = new_buf(c, 4096);
    assert_int_equal(cus_fake_device_bytes_in_use(0), 4096);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY), 1);
    assert_int_equal(cus_buffer_size(b), 4096);
    assert_int_equal(cus_buffer_get_kind(b), CUS_BUFFER_DEVICE);
    assert_true(cus_buffer_ptr(b) != 0);
    assert_ptr_equal(cus_buffer_context(b), c);
    assert_null(cus_buffer_host_ptr(b));
    assert_int_equal(cus_context_stack_depth(), 0);
    assert_int_equal(cus_fake_thread_stack_depth(), 0);
    assert_ptr_equal(cus_buffer_ref(b), b);
    assert_null(cus_buffer_unref(b));
    assert_int_equal(cus_fake_device_bytes_in_use(0), 4096);
    assert_null(cus_buffer_unref(b));
    assert_int_equal(cus_fake_device_bytes_in_use(0), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY), 0);
    assert_int_equal(cus_fake_calls_of("cuMemFree"), 1);
    c = cus_context_unref(c);
}

/* cus_buffer_fill_u32 is the driver's "synchronous" fill, which returns
 * before it is done: a non-blocking stream's work is not ordered after it.
 * The fake's deferred mode shows the race an H200 showed (gpu-green), and
 * that the fill on the stream has none. */
static void test_sync_fill_races_a_non_blocking_stream(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_buffer) a = NULL;
    cus_autoptr(cus_buffer) b = NULL;
    assert_ok(cus_buffer_alloc(c, 64, &a));
    assert_ok(cus_buffer_alloc(c, 64, &b));
    uint32_t words[16];
    /* by default the fill runs at the call */
    assert_ok(cus_buffer_fill_u32(a, 0, 1u, 16));
    assert_ok(cus_copy_device_async(b, 0, a, 0, 64, s));
    assert_ok(cus_stream_synchronize(s));
    assert_ok(cus_copy_to_host(words, b, 0, sizeof words));
    assert_int_equal(words[7], 1u);
    /* deferred: the stream's copy runs first and sees the old words */
    cus_fake_set_sync_memsets_deferred(true);
    assert_ok(cus_buffer_fill_u32(a, 0, 2u, 16));
    assert_ok(cus_copy_device_async(b, 0, a, 0, 64, s));
    assert_ok(cus_stream_synchronize(s));
    assert_ok(cus_copy_to_host(words, b, 0, sizeof words));
    assert_int_equal(words[7], 1u); /* the race, as on a GPU */
    assert_ok(cus_copy_to_host(words, a, 0, sizeof words)); /* waits for the fill */
    assert_int_equal(words[7], 2u);
    /* the fill on the stream: ordered */
    assert_ok(cus_buffer_fill_u32_async(a, 0, 3u, 16, s));
    assert_ok(cus_copy_device_async(b, 0, a, 0, 64, s));
    assert_ok(cus_stream_synchronize(s));
    assert_ok(cus_copy_to_host(words, b, 0, sizeof words));
    assert_int_equal(words[7], 3u);
    cus_fake_set_sync_memsets_deferred(false);
}

static void test_alloc_zero_bytes(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    leak_snap before = leak_snap_now();
    cus_buffer *b = SENTINEL_PTR(b);
    assert_status(cus_buffer_alloc(c, 0, &b), CUS_ERROR_INVALID_ARGUMENT);
    assert_ptr_equal(b, SENTINEL_PTR(b));
    assert_int_equal(cus_fake_calls_of("cuMemAlloc"), 0);
    assert_nothing_changed(before);
    c = cus_context_unref(c);
}

static void test_buffer_keeps_context_alive(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_buffer *b = new_buf(c, 64);
    c = cus_context_unref(c);
    assert_null(c);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_CONTEXT), 1);
    assert_int_equal(cus_fake_calls_of("cuCtxDestroy"), 0);
    assert_non_null(cus_buffer_context(b));
    unsigned char in[64], out[64];
    pattern(in, sizeof in, 3);
    memset(out, 0, sizeof out);
    assert_ok(cus_copy_to_device(b, 0, in, sizeof in));
    assert_ok(cus_copy_to_host(out, b, 0, sizeof out));
    assert_memory_equal(in, out, sizeof in);
    b = cus_buffer_unref(b);
    assert_int_equal(cus_fake_calls_of("cuCtxDestroy"), 1);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
}

static void test_alloc_array(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    cus_buffer *b = NULL;
    assert_ok(cus_buffer_alloc_n(c, uint32_t, 10, &b));
    assert_int_equal(cus_buffer_size(b), 40);
    b = cus_buffer_unref(b);
    leak_snap before = leak_snap_now();
    b = SENTINEL_PTR(b);
    assert_status(cus_buffer_alloc_array(c, SIZE_MAX / 2 + 1, 2, &b), CUS_ERROR_OUT_OF_RANGE);
    assert_ptr_equal(b, SENTINEL_PTR(b));
    assert_int_equal(cus_fake_calls_of("cuMemAlloc"), 1);
    assert_nothing_changed(before);
    c = cus_context_unref(c);
}

static void test_alloc_async_freed_on_its_stream(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_stream *s = new_stream(c, 0);
    cus_buffer *b = NULL;
    assert_ok(cus_buffer_alloc_async(s, 1024, &b));
    assert_non_null(b);
    assert_int_equal(cus_buffer_get_kind(b), CUS_BUFFER_STREAM_ORDERED);
    assert_int_equal(cus_buffer_size(b), 1024);
    assert_ptr_equal(cus_buffer_context(b), c);
    assert_int_equal(cus_fake_calls_of("cuMemAllocAsync"), 1);
    assert_ok(cus_buffer_fill_u8_async(b, 0, 0x5a, 1024, s));
    unsigned char out[1024];
    assert_ok(cus_copy_to_host_async(out, b, 0, sizeof out, s));
    assert_ok(cus_stream_synchronize(s));
    for (size_t i = 0; i < sizeof out; i++)
        assert_int_equal(out[i], 0x5a);
    b = cus_buffer_unref(b);
    assert_int_equal(cus_fake_calls_of("cuMemFreeAsync"), 1);
    assert_int_equal(cus_fake_calls_of("cuMemFree"), 0);
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(cus_fake_device_bytes_in_use(0), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY), 0);
    s = cus_stream_unref(s);
    c = cus_context_unref(c);
}

/* The buffer holds its stream: the free is queued on it even after the
 * caller dropped its own stream reference. */
static void test_alloc_async_keeps_stream(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_stream *s = new_stream(c, 0);
    cus_buffer *b = NULL;
    assert_ok(cus_buffer_alloc_async(s, 256, &b));
    s = cus_stream_unref(s);
    assert_int_equal(cus_fake_calls_of("cuStreamDestroy"), 0);
    b = cus_buffer_unref(b);
    assert_int_equal(cus_fake_calls_of("cuMemFreeAsync"), 1);
    c = cus_context_unref(c);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
}

static void test_managed(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    cus_buffer *b = NULL;
    assert_ok(cus_buffer_alloc_managed(c, N, CU_MEM_ATTACH_GLOBAL, &b));
    assert_int_equal(cus_buffer_get_kind(b), CUS_BUFFER_MANAGED);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MANAGED_MEMORY), 1);
    unsigned char *h = cus_buffer_host_ptr(b);
    assert_non_null(h);
    pattern(h, N, 11);
    unsigned char out[N], want[N];
    pattern(want, N, 11);
    memset(out, 0, sizeof out);
    assert_ok(cus_copy_to_host(out, b, 0, N));
    assert_memory_equal(out, want, N);
    b = cus_buffer_unref(b);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MANAGED_MEMORY), 0);
    c = cus_context_unref(c);
}

/* --- copies ------------------------------------------------------------------ */

static void test_copy_round_trip(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    cus_buffer *a = new_buf(c, N), *b = new_buf(c, N);
    unsigned char in[N], in2[N], out[N];
    pattern(in, N, 1);
    pattern(in2, N, 99);
    assert_ok(cus_copy_to_device(a, 0, in, N));
    assert_ok(cus_copy_to_device(b, 0, in2, N));
    assert_ok(cus_copy_device(b, 0, a, 0, N));
    memset(out, 0, N);
    assert_ok(cus_copy_to_host(out, b, 0, N));
    assert_memory_equal(out, in, N);
    assert_int_equal(cus_context_stack_depth(), 0);
    assert_int_equal(cus_fake_thread_stack_depth(), 0);
    a = cus_buffer_unref(a);
    b = cus_buffer_unref(b);
    c = cus_context_unref(c);
}

static void test_copy_offsets(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    cus_buffer *a = new_buf(c, N), *b = new_buf(c, N);
    unsigned char zeros[N] = {0}, in[N], out[N];
    pattern(in, N, 5);
    assert_ok(cus_copy_to_device(a, 0, zeros, N));
    assert_ok(cus_copy_to_device(b, 0, zeros, N));
    assert_ok(cus_copy_to_device(a, 10, in, 20));      /* a[10..30) = in[0..20) */
    assert_ok(cus_copy_device(b, 100, a, 15, 10));     /* b[100..110) = in[5..15) */
    memset(out, 0xff, N);
    assert_ok(cus_copy_to_host(out, b, 98, 14));       /* b[98..112) */
    assert_int_equal(out[0], 0);
    assert_int_equal(out[1], 0);
    assert_memory_equal(out + 2, in + 5, 10);
    assert_int_equal(out[12], 0);
    assert_int_equal(out[13], 0);
    /* The very end of the buffer. */
    assert_ok(cus_copy_to_device(a, N - 4, in, 4));
    assert_ok(cus_copy_to_host(out, a, N - 4, 4));
    assert_memory_equal(out, in, 4);
    a = cus_buffer_unref(a);
    b = cus_buffer_unref(b);
    c = cus_context_unref(c);
}

static void test_copy_out_of_range(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_stream *s = new_stream(c, 0);
    cus_buffer *a = new_buf(c, N), *b = new_buf(c, N);
    unsigned char host[2 * N] = {0};
    leak_snap before = leak_snap_now();
    unsigned long calls = cus_fake_call_count();
    const cus_status R = CUS_ERROR_OUT_OF_RANGE;
    /* offset past the end */
    assert_status(cus_copy_to_device(a, N + 1, host, 1), R);
    assert_status(cus_copy_to_host(host, a, N + 1, 1), R);
    assert_status(cus_copy_device(b, N + 1, a, 0, 1), R);
    assert_status(cus_copy_device(b, 0, a, N + 1, 1), R);
    /* offset + bytes past the end */
    assert_status(cus_copy_to_device(a, 1, host, N), R);
    assert_status(cus_copy_to_device(a, 0, host, N + 1), R);
    assert_status(cus_copy_to_host(host, a, 1, N), R);
    assert_status(cus_copy_to_host(host, a, 0, N + 1), R);
    assert_status(cus_copy_device(b, 1, a, 0, N), R);
    assert_status(cus_copy_device(b, 0, a, 1, N), R);
    /* the end overflows */
    assert_status(cus_copy_to_device(a, 16, host, SIZE_MAX), R);
    assert_status(cus_copy_to_device(a, SIZE_MAX, host, 16), R);
    assert_status(cus_copy_to_host(host, a, 16, SIZE_MAX), R);
    assert_status(cus_copy_to_host(host, a, SIZE_MAX, 16), R);
    assert_status(cus_copy_device(b, 16, a, 0, SIZE_MAX), R);
    assert_status(cus_copy_device(b, 0, a, SIZE_MAX, 16), R);
    assert_status(cus_copy_device(b, SIZE_MAX, a, 0, 16), R);
    /* and the async forms */
    assert_status(cus_copy_to_device_async(a, N + 1, host, 1, s), R);
    assert_status(cus_copy_to_device_async(a, 1, host, N, s), R);
    assert_status(cus_copy_to_device_async(a, 16, host, SIZE_MAX, s), R);
    assert_status(cus_copy_to_host_async(host, a, N + 1, 1, s), R);
    assert_status(cus_copy_to_host_async(host, a, 1, N, s), R);
    assert_status(cus_copy_to_host_async(host, a, SIZE_MAX, 16, s), R);
    assert_status(cus_copy_device_async(b, N + 1, a, 0, 1, s), R);
    assert_status(cus_copy_device_async(b, 0, a, 1, N, s), R);
    assert_status(cus_copy_device_async(b, 16, a, 0, SIZE_MAX, s), R);
    assert_int_equal(cus_fake_call_count(), calls);
    assert_int_equal(cus_fake_stream_pending(cus_stream_handle(s)), 0);
    assert_nothing_changed(before);
    a = cus_buffer_unref(a);
    b = cus_buffer_unref(b);
    s = cus_stream_unref(s);
    c = cus_context_unref(c);
}

static void test_copy_async(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_stream *s = new_stream(c, 0);
    cus_buffer *a = new_buf(c, N), *b = new_buf(c, N);
    cus_host_buffer *hin = NULL, *hout = NULL;
    assert_ok(cus_host_buffer_alloc(c, N, 0, &hin));
    assert_ok(cus_host_buffer_alloc(c, N, 0, &hout));
    unsigned char *in = cus_host_buffer_data(hin), *out = cus_host_buffer_data(hout);
    pattern(in, N, 42);
    memset(out, 0, N);
    assert_ok(cus_copy_to_device_async(a, 0, in, N, s));
    assert_ok(cus_copy_device_async(b, 0, a, 0, N, s));
    assert_ok(cus_copy_to_host_async(out, b, 0, N, s));
    assert_ok(cus_stream_synchronize(s));
    assert_memory_equal(out, in, N);
    assert_int_equal(cus_fake_calls_of("cuMemcpyHtoDAsync"), 1);
    assert_int_equal(cus_fake_calls_of("cuMemcpyDtoDAsync"), 1);
    assert_int_equal(cus_fake_calls_of("cuMemcpyDtoHAsync"), 1);
    assert_int_equal(cus_context_stack_depth(), 0);
    assert_int_equal(cus_fake_thread_stack_depth(), 0);
    hin = cus_host_buffer_unref(hin);
    hout = cus_host_buffer_unref(hout);
    a = cus_buffer_unref(a);
    b = cus_buffer_unref(b);
    s = cus_stream_unref(s);
    c = cus_context_unref(c);
}

static void test_async_on_other_context_stream(void **state)
{
    (void)state;
    cus_context *c = new_ctx(), *d = new_ctx();
    cus_stream *s = new_stream(d, 0);
    cus_buffer *a = new_buf(c, N), *b = new_buf(c, N);
    unsigned char host[N] = {0};
    leak_snap before = leak_snap_now();
    const cus_status M = CUS_ERROR_CONTEXT_MISMATCH;
    assert_status(cus_copy_to_device_async(a, 0, host, N, s), M);
    assert_status(cus_copy_to_host_async(host, a, 0, N, s), M);
    assert_status(cus_copy_device_async(b, 0, a, 0, N, s), M);
    assert_status(cus_buffer_fill_u8_async(a, 0, 1, N, s), M);
    assert_int_equal(cus_fake_calls_of("cuMemcpyHtoDAsync"), 0);
    assert_int_equal(cus_fake_calls_of("cuMemcpyDtoHAsync"), 0);
    assert_int_equal(cus_fake_calls_of("cuMemcpyDtoDAsync"), 0);
    assert_int_equal(cus_fake_calls_of("cuMemsetD8Async"), 0);
    assert_nothing_changed(before);
    a = cus_buffer_unref(a);
    b = cus_buffer_unref(b);
    s = cus_stream_unref(s);
    c = cus_context_unref(c);
    d = cus_context_unref(d);
}

/* --- fills -------------------------------------------------------------------- */

static void test_fills(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    cus_buffer *b = new_buf(c, 64);
    unsigned char out[64];
    assert_ok(cus_buffer_fill_u8(b, 0, 0x00, 64));
    assert_ok(cus_buffer_fill_u8(b, 3, 0xab, 5));         /* [3, 8) */
    assert_ok(cus_buffer_fill_u16(b, 8, 0x1234, 4));      /* [8, 16) */
    assert_ok(cus_buffer_fill_u32(b, 16, 0xdeadbeefu, 4)); /* [16, 32) */
    assert_ok(cus_copy_to_host(out, b, 0, 64));
    for (int i = 0; i < 3; i++)
        assert_int_equal(out[i], 0);
    for (int i = 3; i < 8; i++)
        assert_int_equal(out[i], 0xab);
    for (int i = 8; i < 16; i += 2) {
        uint16_t v;
        memcpy(&v, out + i, 2);
        assert_int_equal(v, 0x1234);
    }
    for (int i = 16; i < 32; i += 4) {
        uint32_t v;
        memcpy(&v, out + i, 4);
        assert_int_equal(v, 0xdeadbeefu);
    }
    for (int i = 32; i < 64; i++)
        assert_int_equal(out[i], 0);
    b = cus_buffer_unref(b);
    c = cus_context_unref(c);
}

static void test_fills_async(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_stream *s = new_stream(c, 0);
    cus_buffer *b = new_buf(c, 32);
    unsigned char out[32];
    assert_ok(cus_buffer_fill_u8_async(b, 0, 0x11, 8, s));
    assert_ok(cus_buffer_fill_u16_async(b, 8, 0xbeef, 4, s));
    assert_ok(cus_buffer_fill_u32_async(b, 16, 0xcafef00du, 4, s));
    assert_ok(cus_stream_synchronize(s));
    assert_ok(cus_copy_to_host(out, b, 0, 32));
    for (int i = 0; i < 8; i++)
        assert_int_equal(out[i], 0x11);
    for (int i = 8; i < 16; i += 2) {
        uint16_t v;
        memcpy(&v, out + i, 2);
        assert_int_equal(v, 0xbeef);
    }
    for (int i = 16; i < 32; i += 4) {
        uint32_t v;
        memcpy(&v, out + i, 4);
        assert_int_equal(v, 0xcafef00du);
    }
    b = cus_buffer_unref(b);
    s = cus_stream_unref(s);
    c = cus_context_unref(c);
}

static void test_fill_misaligned_and_out_of_range(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_stream *s = new_stream(c, 0);
    cus_buffer *b = new_buf(c, 64);
    leak_snap before = leak_snap_now();
    unsigned long calls = cus_fake_call_count();
    const cus_status I = CUS_ERROR_INVALID_ARGUMENT, R = CUS_ERROR_OUT_OF_RANGE;
    assert_status(cus_buffer_fill_u16(b, 1, 1, 2), I);
    assert_status(cus_buffer_fill_u32(b, 2, 1, 2), I);
    assert_status(cus_buffer_fill_u32(b, 1, 1, 2), I);
    assert_status(cus_buffer_fill_u16_async(b, 1, 1, 2, s), I);
    assert_status(cus_buffer_fill_u32_async(b, 2, 1, 2, s), I);
    assert_status(cus_buffer_fill_u8(b, 65, 1, 1), R);
    assert_status(cus_buffer_fill_u8(b, 0, 1, 65), R);
    assert_status(cus_buffer_fill_u8(b, 1, 1, SIZE_MAX), R);
    assert_status(cus_buffer_fill_u16(b, 0, 1, 33), R);
    assert_status(cus_buffer_fill_u16(b, 2, 1, SIZE_MAX / 2 + 1), R);
    assert_status(cus_buffer_fill_u32(b, 0, 1, 17), R);
    assert_status(cus_buffer_fill_u32(b, 60, 1, 2), R);
    assert_status(cus_buffer_fill_u32(b, 4, 1, SIZE_MAX / 4), R);
    assert_status(cus_buffer_fill_u8_async(b, 0, 1, 65, s), R);
    assert_status(cus_buffer_fill_u16_async(b, 0, 1, 33, s), R);
    assert_status(cus_buffer_fill_u32_async(b, 0, 1, 17, s), R);
    assert_int_equal(cus_fake_call_count(), calls);
    assert_nothing_changed(before);
    b = cus_buffer_unref(b);
    s = cus_stream_unref(s);
    c = cus_context_unref(c);
}

/* --- host buffers ---------------------------------------------------------------- */

static void test_host_buffer_alloc(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    cus_host_buffer *h = NULL;
    assert_ok(cus_host_buffer_alloc(c, 1000, 0, &h));
    assert_non_null(h);
    assert_non_null(cus_host_buffer_data(h));
    assert_int_equal(cus_host_buffer_size(h), 1000);
    assert_false(cus_host_buffer_is_registered(h));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_HOST_MEMORY), 1);
    memset(cus_host_buffer_data(h), 0x77, 1000);
    assert_ptr_equal(cus_host_buffer_ref(h), h);
    assert_null(cus_host_buffer_unref(h));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_HOST_MEMORY), 1);
    h = cus_host_buffer_unref(h);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_HOST_MEMORY), 0);
    c = cus_context_unref(c);
}

static void test_host_buffer_register(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    void *mem = malloc(8192);
    assert_non_null(mem);
    cus_host_buffer *h = NULL;
    assert_ok(cus_host_buffer_register(c, mem, 8192, 0, &h));
    assert_ptr_equal(cus_host_buffer_data(h), mem);
    assert_int_equal(cus_host_buffer_size(h), 8192);
    assert_true(cus_host_buffer_is_registered(h));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_HOST_REGISTRATION), 1);
    /* usable as the host side of a copy */
    cus_buffer *b = new_buf(c, 8192);
    pattern(mem, 8192, 9);
    assert_ok(cus_copy_to_device(b, 0, mem, 8192));
    unsigned char out[64];
    assert_ok(cus_copy_to_host(out, b, 100, 64));
    assert_memory_equal(out, (unsigned char *)mem + 100, 64);
    b = cus_buffer_unref(b);
    assert_int_equal(cus_fake_calls_of("cuMemHostUnregister"), 0);
    h = cus_host_buffer_unref(h);
    assert_int_equal(cus_fake_calls_of("cuMemHostUnregister"), 1);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_HOST_REGISTRATION), 0);
    free(mem);
    c = cus_context_unref(c);
}

/* --- memory info ------------------------------------------------------------------- */

static void test_memory_info(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    size_t free_b = 0, total_b = 0;
    assert_ok(cus_memory_info(c, &free_b, &total_b));
    assert_true(free_b <= total_b);
    assert_int_equal(total_b, (size_t)80 << 30); /* the fake's default */
    cus_buffer *b = new_buf(c, 1 << 20);
    size_t free2 = 0, total2 = 0;
    assert_ok(cus_memory_info(c, &free2, &total2));
    assert_int_equal(total2, total_b);
    assert_int_equal(free2, total_b - cus_fake_device_bytes_in_use(0));
    assert_true(free2 < free_b);
    b = cus_buffer_unref(b);
    c = cus_context_unref(c);
}

static const cus_fake_device_config small_dev[] = {{.total_memory = (size_t)1 << 30}};
static const cus_fake_config small_cfg = {.device_count = 1, .devices = small_dev};

static int setup_small(void **state)
{
    (void)state;
    return env_setup_with(&small_cfg);
}

static void test_memory_info_configured_total(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    size_t free_b = 0, total_b = 0;
    assert_ok(cus_memory_info(c, &free_b, &total_b));
    assert_int_equal(total_b, (size_t)1 << 30);
    assert_int_equal(free_b, total_b);
    c = cus_context_unref(c);
}

/* --- faults -------------------------------------------------------------------------- */

static void test_alloc_faults(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_stream *s = new_stream(c, 0);
    cus_buffer *b = SENTINEL_PTR(b);
    cus_host_buffer *h = SENTINEL_PTR(h);
    static char block[4096];
    assert_fault_surfaces("cuCtxPushCurrent", cus_buffer_alloc(c, 64, &b));
    assert_fault_surfaces("cuMemAlloc", cus_buffer_alloc(c, 64, &b));
    assert_fault_surfaces("cuMemAlloc", cus_buffer_alloc_array(c, 8, 8, &b));
    assert_fault_surfaces("cuMemAllocAsync", cus_buffer_alloc_async(s, 64, &b));
    assert_fault_surfaces("cuMemAllocManaged",
                          cus_buffer_alloc_managed(c, 64, CU_MEM_ATTACH_GLOBAL, &b));
    assert_ptr_equal(b, SENTINEL_PTR(b));
    assert_fault_surfaces("cuMemHostAlloc", cus_host_buffer_alloc(c, 64, 0, &h));
    assert_fault_surfaces("cuMemHostRegister",
                          cus_host_buffer_register(c, block, sizeof block, 0, &h));
    assert_ptr_equal(h, SENTINEL_PTR(h));
    size_t fr = 7, to = 8;
    assert_fault_surfaces("cuMemGetInfo", cus_memory_info(c, &fr, &to));
    assert_int_equal(fr, 7);
    assert_int_equal(to, 8);
    assert_int_equal(cus_context_poisoned(c), CUS_SUCCESS);
    s = cus_stream_unref(s);
    c = cus_context_unref(c);
}

static void test_copy_and_fill_faults(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_stream *s = new_stream(c, 0);
    cus_buffer *a = new_buf(c, N), *b = new_buf(c, N);
    cus_host_buffer *hb = NULL;
    assert_ok(cus_host_buffer_alloc(c, N, 0, &hb));
    unsigned char *host = cus_host_buffer_data(hb);
    memset(host, 0, N);
    assert_fault_surfaces("cuMemcpyHtoD", cus_copy_to_device(a, 0, host, N));
    assert_fault_surfaces("cuMemcpyDtoH", cus_copy_to_host(host, a, 0, N));
    assert_fault_surfaces("cuMemcpyDtoD", cus_copy_device(b, 0, a, 0, N));
    assert_fault_surfaces("cuMemsetD8", cus_buffer_fill_u8(a, 0, 1, N));
    assert_fault_surfaces("cuMemsetD16", cus_buffer_fill_u16(a, 0, 1, N / 2));
    assert_fault_surfaces("cuMemsetD32", cus_buffer_fill_u32(a, 0, 1, N / 4));
    assert_fault_surfaces("cuMemcpyHtoDAsync", cus_copy_to_device_async(a, 0, host, N, s));
    assert_fault_surfaces("cuMemcpyDtoHAsync", cus_copy_to_host_async(host, a, 0, N, s));
    assert_fault_surfaces("cuMemcpyDtoDAsync", cus_copy_device_async(b, 0, a, 0, N, s));
    assert_fault_surfaces("cuMemsetD8Async", cus_buffer_fill_u8_async(a, 0, 1, N, s));
    assert_fault_surfaces("cuMemsetD16Async", cus_buffer_fill_u16_async(a, 0, 1, N / 2, s));
    assert_fault_surfaces("cuMemsetD32Async", cus_buffer_fill_u32_async(a, 0, 1, N / 4, s));
    assert_fault_surfaces("cuCtxPushCurrent", cus_copy_to_device(a, 0, host, N));
    assert_int_equal(cus_fake_stream_pending(cus_stream_handle(s)), 0);
    assert_int_equal(cus_context_poisoned(c), CUS_SUCCESS);
    hb = cus_host_buffer_unref(hb);
    a = cus_buffer_unref(a);
    b = cus_buffer_unref(b);
    s = cus_stream_unref(s);
    c = cus_context_unref(c);
}

static void test_free_failure_goes_to_the_handler(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_buffer *b = new_buf(c, 128);
    /* A last error that the unref must not clobber. */
    assert_status(cus_buffer_alloc(NULL, 1, &b), CUS_ERROR_INVALID_ARGUMENT);
    char msg[256];
    snprintf(msg, sizeof msg, "%s", cus_last_error_message());
    assert_ok(cus_fake_fail_entry("cuMemFree", 1, FAULT, false));
    stack_snap before = snap();
    b = cus_buffer_unref(b);
    assert_null(b);
    assert_int_equal(cus_fake_faults_fired(), 1);
    assert_int_equal(env_destroyed.count, 1);
    assert_int_equal(env_destroyed.last_status, CU(FAULT));
    assert_int_equal(cus_last_status(), CUS_ERROR_INVALID_ARGUMENT);
    assert_string_equal(cus_last_error_message(), msg);
    assert_stack_unchanged(before);
    assert_int_equal(cus_debug_live_objects(), 1); /* the context only */
    c = cus_context_unref(c);                      /* cuCtxDestroy takes the memory */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
}

/* --- NULL arguments ------------------------------------------------------------------ */

static void test_null_args(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_stream *s = new_stream(c, 0);
    cus_buffer *a = new_buf(c, N);
    unsigned char host[N];
    leak_snap before = leak_snap_now();
    unsigned long calls = cus_fake_call_count();
    const cus_status I = CUS_ERROR_INVALID_ARGUMENT;
    cus_buffer *b = SENTINEL_PTR(b);
    cus_host_buffer *h = SENTINEL_PTR(h);
    assert_status(cus_buffer_alloc(NULL, 16, &b), I);
    assert_status(cus_buffer_alloc(c, 16, NULL), I);
    assert_status(cus_buffer_alloc_array(NULL, 4, 4, &b), I);
    assert_status(cus_buffer_alloc_array(c, 4, 4, NULL), I);
    assert_status(cus_buffer_alloc_async(NULL, 16, &b), I);
    assert_status(cus_buffer_alloc_async(s, 16, NULL), I);
    assert_status(cus_buffer_alloc_managed(NULL, 16, CU_MEM_ATTACH_GLOBAL, &b), I);
    assert_status(cus_buffer_alloc_managed(c, 16, CU_MEM_ATTACH_GLOBAL, NULL), I);
    assert_ptr_equal(b, SENTINEL_PTR(b));
    assert_status(cus_host_buffer_alloc(NULL, 16, 0, &h), I);
    assert_status(cus_host_buffer_alloc(c, 16, 0, NULL), I);
    assert_status(cus_host_buffer_register(NULL, host, sizeof host, 0, &h), I);
    assert_status(cus_host_buffer_register(c, NULL, sizeof host, 0, &h), I);
    assert_status(cus_host_buffer_register(c, host, sizeof host, 0, NULL), I);
    assert_ptr_equal(h, SENTINEL_PTR(h));
    assert_status(cus_copy_to_device(NULL, 0, host, 1), I);
    assert_status(cus_copy_to_device(a, 0, NULL, 1), I);
    assert_status(cus_copy_to_host(NULL, a, 0, 1), I);
    assert_status(cus_copy_to_host(host, NULL, 0, 1), I);
    assert_status(cus_copy_device(NULL, 0, a, 0, 1), I);
    assert_status(cus_copy_device(a, 0, NULL, 0, 1), I);
    assert_status(cus_copy_to_device_async(NULL, 0, host, 1, s), I);
    assert_status(cus_copy_to_device_async(a, 0, NULL, 1, s), I);
    assert_status(cus_copy_to_device_async(a, 0, host, 1, NULL), I);
    assert_status(cus_copy_to_host_async(NULL, a, 0, 1, s), I);
    assert_status(cus_copy_to_host_async(host, NULL, 0, 1, s), I);
    assert_status(cus_copy_to_host_async(host, a, 0, 1, NULL), I);
    assert_status(cus_copy_device_async(NULL, 0, a, 0, 1, s), I);
    assert_status(cus_copy_device_async(a, 0, NULL, 0, 1, s), I);
    assert_status(cus_copy_device_async(a, 0, a, 0, 1, NULL), I);
    assert_status(cus_buffer_fill_u8(NULL, 0, 1, 1), I);
    assert_status(cus_buffer_fill_u16(NULL, 0, 1, 1), I);
    assert_status(cus_buffer_fill_u32(NULL, 0, 1, 1), I);
    assert_status(cus_buffer_fill_u8_async(NULL, 0, 1, 1, s), I);
    assert_status(cus_buffer_fill_u16_async(NULL, 0, 1, 1, s), I);
    assert_status(cus_buffer_fill_u32_async(NULL, 0, 1, 1, s), I);
    assert_status(cus_buffer_fill_u8_async(a, 0, 1, 1, NULL), I);
    size_t fr = 7, to = 8;
    assert_status(cus_memory_info(NULL, &fr, &to), I);
    assert_int_equal(fr, 7);
    assert_int_equal(to, 8);
    assert_int_equal(cus_fake_call_count(), calls);
    assert_nothing_changed(before);
    a = cus_buffer_unref(a);
    s = cus_stream_unref(s);
    c = cus_context_unref(c);
}

static void test_accessors_and_refs_on_null(void **state)
{
    (void)state;
    assert_true(cus_buffer_ptr(NULL) == 0);
    assert_int_equal(cus_buffer_size(NULL), 0);
    assert_null(cus_buffer_context(NULL));
    assert_null(cus_buffer_host_ptr(NULL));
    assert_null(cus_buffer_ref(NULL));
    assert_null(cus_buffer_unref(NULL));
    assert_null(cus_host_buffer_data(NULL));
    assert_int_equal(cus_host_buffer_size(NULL), 0);
    assert_false(cus_host_buffer_is_registered(NULL));
    assert_null(cus_host_buffer_ref(NULL));
    assert_null(cus_host_buffer_unref(NULL));
}

/* --- two devices: a peer copy ------------------------------------------------------------ */

static void test_peer_copy(void **state)
{
    (void)state;
    cus_context *c0 = NULL, *c1 = NULL;
    assert_ok(cus_context_create(dev_at(0), CUS_CTX_NO_PUSH, &c0));
    assert_ok(cus_context_create(dev_at(1), CUS_CTX_NO_PUSH, &c1));
    cus_buffer *a = new_buf(c0, N), *b = new_buf(c1, N);
    assert_int_equal(cus_fake_device_bytes_in_use(0), N);
    assert_int_equal(cus_fake_device_bytes_in_use(1), N);
    unsigned char in[N], zeros[N] = {0}, out[N];
    pattern(in, N, 77);
    assert_ok(cus_copy_to_device(a, 0, in, N));
    assert_ok(cus_copy_to_device(b, 0, zeros, N));
    assert_ok(cus_copy_device(b, 0, a, 0, N));
    memset(out, 0, N);
    assert_ok(cus_copy_to_host(out, b, 0, N));
    assert_memory_equal(out, in, N);
    /* with offsets, the other way */
    assert_ok(cus_copy_to_device(b, 0, zeros, N));
    assert_ok(cus_copy_device(a, 8, b, 0, 16));
    assert_ok(cus_copy_to_host(out, a, 0, 32));
    assert_memory_equal(out, in, 8);
    assert_memory_equal(out + 8, zeros, 16);
    assert_memory_equal(out + 24, in + 24, 8);
    assert_int_equal(cus_context_stack_depth(), 0);
    assert_int_equal(cus_fake_thread_stack_depth(), 0);
    a = cus_buffer_unref(a);
    b = cus_buffer_unref(b);
    c0 = cus_context_unref(c0);
    c1 = cus_context_unref(c1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_alloc_and_free),
        ENV_TEST(test_alloc_zero_bytes),
        ENV_TEST(test_sync_fill_races_a_non_blocking_stream),
        ENV_TEST(test_buffer_keeps_context_alive),
        ENV_TEST(test_alloc_array),
        ENV_TEST(test_alloc_async_freed_on_its_stream),
        ENV_TEST(test_alloc_async_keeps_stream),
        ENV_TEST(test_managed),
        ENV_TEST(test_copy_round_trip),
        ENV_TEST(test_copy_offsets),
        ENV_TEST(test_copy_out_of_range),
        ENV_TEST(test_copy_async),
        ENV_TEST(test_async_on_other_context_stream),
        ENV_TEST(test_fills),
        ENV_TEST(test_fills_async),
        ENV_TEST(test_fill_misaligned_and_out_of_range),
        ENV_TEST(test_host_buffer_alloc),
        ENV_TEST(test_host_buffer_register),
        ENV_TEST(test_memory_info),
        cmocka_unit_test_setup_teardown(test_memory_info_configured_total, setup_small,
                                        env_teardown),
        ENV_TEST(test_alloc_faults),
        ENV_TEST(test_copy_and_fill_faults),
        ENV_TEST(test_free_failure_goes_to_the_handler),
        ENV_TEST(test_null_args),
        ENV_TEST(test_accessors_and_refs_on_null),
        TWO_DEV_TEST(test_peer_copy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
