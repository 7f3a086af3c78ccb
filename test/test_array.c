/* Arrays, mipmapped arrays, pitched buffers and 2D/3D copies
 * (include/cuscope/array.h): creation and descriptors, the argument checks
 * made before any driver call, the bounds checks of the copies, round trips
 * between host memory, buffers and arrays, captures keeping what their
 * copies use, and every failure path: the status returned and recorded, out
 * parameters untouched, nothing leaked. */
#include <string.h>

#include "stream_common.h"

static cus_buffer *new_buffer_of(cus_context *c, size_t bytes)
{
    cus_buffer *b = NULL;
    assert_ok(cus_buffer_alloc(c, bytes, &b));
    return b;
}

/* Latches a sticky error on c, as a faulting kernel would. */
static void poison_context(cus_context *c)
{
    cus_autoptr(cus_stream) s = new_stream(c, 0);
    assert_ok(cus_fake_fail_entry("cuStreamSynchronize", 1, CUDA_ERROR_ILLEGAL_ADDRESS, false));
    assert_status(cus_stream_synchronize(s), CU(CUDA_ERROR_ILLEGAL_ADDRESS));
}

static cus_array *new_array(cus_context *c, size_t w, size_t h, size_t d, unsigned int flags)
{
    cus_array *a = NULL;
    assert_ok(cus_array_create(c,
                               &(CUDA_ARRAY3D_DESCRIPTOR){.Width = w, .Height = h, .Depth = d,
                                                          .Format = CU_AD_FORMAT_FLOAT,
                                                          .NumChannels = 1, .Flags = flags},
                               &a));
    return a;
}

static void test_create_shapes_and_descriptor(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_autoptr(cus_array) a1 = new_array(c, 64, 0, 0, 0);
    cus_autoptr(cus_array) a2 = new_array(c, 64, 32, 0, 0);
    cus_autoptr(cus_array) a3 = new_array(c, 16, 8, 4, 0);
    cus_autoptr(cus_array) layered = new_array(c, 16, 8, 3, CUDA_ARRAY3D_LAYERED);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ARRAY), 4);
    assert_int_equal(cus_fake_calls_of("cuArrayCreate"), 2);
    assert_int_equal(cus_fake_calls_of("cuArray3DCreate"), 2);
    CUDA_ARRAY3D_DESCRIPTOR d;
    assert_ok(cus_array_descriptor(a3, &d));
    assert_int_equal(d.Width, 16);
    assert_int_equal(d.Height, 8);
    assert_int_equal(d.Depth, 4);
    assert_int_equal(d.Format, CU_AD_FORMAT_FLOAT);
    assert_int_equal(d.NumChannels, 1);
    assert_ok(cus_array_descriptor(layered, &d));
    assert_int_equal(d.Flags, CUDA_ARRAY3D_LAYERED);
    assert_int_equal(cus_array_element_bytes(a2), 4);
    assert_int_equal(cus_array_desc(a2).Height, 32);
    assert_ptr_equal(cus_array_context(a1), c);
    assert_non_null(cus_array_handle(a1));
    assert_null(cus_array_handle(NULL));
    assert_null(cus_array_context(NULL));
    assert_int_equal(cus_array_element_bytes(NULL), 0);
    assert_int_equal(cus_array_format_bytes(CU_AD_FORMAT_HALF), 2);
    assert_int_equal(cus_array_format_bytes(CU_AD_FORMAT_NV12), 0);
    assert_null(cus_array_ref(NULL));
    assert_null(cus_array_unref(NULL));
}

static void test_bad_descriptors_reach_no_driver(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    leak_snap before = leak_snap_now();
    unsigned long calls = cus_fake_call_count();
    cus_array *out = SENTINEL_PTR(out);
    CUDA_ARRAY3D_DESCRIPTOR ok = {.Width = 8, .Height = 8, .Format = CU_AD_FORMAT_FLOAT,
                                  .NumChannels = 1};
    CUDA_ARRAY3D_DESCRIPTOR zero = ok, format = ok, channels = ok, depth_only = ok;
    zero.Width = 0;
    format.Format = (CUarray_format)0x77;
    channels.NumChannels = 3;
    depth_only.Height = 0;
    depth_only.Depth = 4;
    assert_status(cus_array_create(NULL, &ok, &out), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_array_create(c, NULL, &out), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_array_create(c, &ok, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_array_create(c, &zero, &out), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_array_create(c, &format, &out), CUS_ERROR_INVALID_ARGUMENT);
    assert_contains(cus_last_error_message(), "format");
    assert_status(cus_array_create(c, &channels, &out), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_array_create(c, &depth_only, &out), CUS_ERROR_INVALID_ARGUMENT);
    cus_mipmapped_array *mm = SENTINEL_PTR(mm);
    assert_status(cus_mipmapped_array_create(c, &ok, 0, &mm), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_mipmapped_array_create(c, &zero, 1, &mm), CUS_ERROR_INVALID_ARGUMENT);
    assert_ptr_equal(out, SENTINEL_PTR(out));
    assert_ptr_equal(mm, SENTINEL_PTR(mm));
    assert_int_equal(cus_fake_call_count(), calls);
    assert_nothing_changed(before);
}

static void test_driver_refuses_what_is_too_large(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    leak_snap before = leak_snap_now();
    cus_array *out = SENTINEL_PTR(out);
    /* Above the device's 2D texture width. */
    assert_status(cus_array_create(c,
                                   &(CUDA_ARRAY3D_DESCRIPTOR){.Width = 1u << 20, .Height = 4,
                                                              .Format = CU_AD_FORMAT_FLOAT,
                                                              .NumChannels = 1},
                                   &out),
                  CU(CUDA_ERROR_INVALID_VALUE));
    assert_string_equal(cus_last_error()->driver_call, "cuArrayCreate");
    assert_ptr_equal(out, SENTINEL_PTR(out));
    assert_nothing_changed(before);
}

static void test_create_faults(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    CUDA_ARRAY3D_DESCRIPTOR d2 = {.Width = 8, .Height = 8, .Format = CU_AD_FORMAT_FLOAT,
                                  .NumChannels = 1};
    CUDA_ARRAY3D_DESCRIPTOR d3 = d2;
    d3.Depth = 2;
    cus_array *a = SENTINEL_PTR(a);
    assert_fault_surfaces("cuCtxPushCurrent", cus_array_create(c, &d2, &a));
    assert_fault_surfaces("cuArrayCreate", cus_array_create(c, &d2, &a));
    assert_fault_surfaces("cuArray3DCreate", cus_array_create(c, &d3, &a));
    assert_ptr_equal(a, SENTINEL_PTR(a));
    cus_mipmapped_array *m = SENTINEL_PTR(m);
    assert_fault_surfaces("cuMipmappedArrayCreate", cus_mipmapped_array_create(c, &d2, 2, &m));
    assert_ptr_equal(m, SENTINEL_PTR(m));
    cus_autoptr(cus_array) ok = new_array(c, 8, 8, 0, 0);
    CUDA_ARRAY3D_DESCRIPTOR got = {.Width = 99};
    assert_fault_surfaces("cuArray3DGetDescriptor", cus_array_descriptor(ok, &got));
    assert_int_equal(got.Width, 99);
    assert_status(cus_array_descriptor(NULL, &got), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_array_descriptor(ok, NULL), CUS_ERROR_INVALID_ARGUMENT);
}

static void test_destroy_failure_goes_to_the_handler(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_array *a = new_array(c, 8, 8, 0, 0);
    unsigned long errors = cus_destroy_error_count();
    assert_ok(cus_fake_fail_entry("cuArrayDestroy", 1, FAULT, false));
    a = cus_array_unref(a);
    cus_fake_clear_faults();
    assert_int_equal(cus_destroy_error_count(), errors + 1);
    /* The driver kept it: the fake counts it until the context goes. */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ARRAY), 1);
    assert_int_equal(cus_debug_live_objects(), 1);
}

static void test_array_keeps_its_context(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_array *a = new_array(c, 8, 8, 0, 0);
    c = cus_context_unref(c);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_CONTEXT), 1);
    CUDA_ARRAY3D_DESCRIPTOR d;
    assert_ok(cus_array_descriptor(a, &d));
    a = cus_array_unref(a);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_CONTEXT), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ARRAY), 0);
}

static void test_mipmapped_levels_keep_their_parent(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_mipmapped_array *m = NULL;
    assert_ok(cus_mipmapped_array_create(
        c,
        &(CUDA_ARRAY3D_DESCRIPTOR){.Width = 64, .Height = 32, .Format = CU_AD_FORMAT_UNSIGNED_INT8,
                                   .NumChannels = 4},
        4, &m));
    assert_int_equal(cus_mipmapped_array_levels(m), 4);
    assert_non_null(cus_mipmapped_array_handle(m));
    cus_array *level = SENTINEL_PTR(level);
    assert_status(cus_mipmapped_array_level(m, 4, &level), CUS_ERROR_OUT_OF_RANGE);
    assert_ptr_equal(level, SENTINEL_PTR(level));
    assert_ok(cus_mipmapped_array_level(m, 2, &level));
    assert_int_equal(cus_array_desc(level).Width, 16);
    assert_int_equal(cus_array_desc(level).Height, 8);
    assert_int_equal(cus_array_element_bytes(level), 4);
    CUDA_ARRAY3D_DESCRIPTOR d;
    assert_ok(cus_array_descriptor(level, &d));
    assert_int_equal(d.Width, 16);
    m = cus_mipmapped_array_unref(m); /* the level holds it */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MIPMAPPED_ARRAY), 1);
    unsigned long destroys = cus_fake_calls_of("cuArrayDestroy");
    level = cus_array_unref(level);
    assert_int_equal(cus_fake_calls_of("cuArrayDestroy"), destroys); /* the driver's to free */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MIPMAPPED_ARRAY), 0);
    assert_int_equal(cus_fake_calls_of("cuMipmappedArrayDestroy"), 1);
    /* A level's failure path. */
    assert_ok(cus_mipmapped_array_create(
        c,
        &(CUDA_ARRAY3D_DESCRIPTOR){.Width = 8, .Height = 8, .Format = CU_AD_FORMAT_FLOAT,
                                   .NumChannels = 1},
        2, &m));
    assert_fault_surfaces("cuMipmappedArrayGetLevel", cus_mipmapped_array_level(m, 1, &level));
    m = cus_mipmapped_array_unref(m);
}

static void test_pitched_buffers(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_buffer *b = NULL;
    size_t pitch = 0;
    assert_ok(cus_buffer_alloc_pitch(c, 1000, 7, 4, &b, &pitch));
    assert_true(pitch >= 1000);
    int align = 0;
    assert_ok(cus_device_attribute(dev_at(0), CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT, &align));
    assert_int_equal(pitch % (size_t)align, 0);
    assert_int_equal(cus_buffer_pitch(b), pitch);
    assert_int_equal(cus_buffer_height(b), 7);
    assert_int_equal(cus_buffer_size(b), pitch * 7);
    b = cus_buffer_unref(b);
    cus_autoptr(cus_buffer) linear = new_buffer_of(c, 64);
    assert_int_equal(cus_buffer_pitch(linear), 0);
    assert_int_equal(cus_buffer_height(linear), 0);
    assert_int_equal(cus_buffer_pitch(NULL), 0);
    unsigned long calls = cus_fake_call_count();
    b = SENTINEL_PTR(b);
    pitch = 42;
    assert_status(cus_buffer_alloc_pitch(c, 0, 7, 4, &b, &pitch), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_buffer_alloc_pitch(c, 8, 0, 4, &b, &pitch), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_buffer_alloc_pitch(c, 8, 8, 2, &b, &pitch), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_buffer_alloc_pitch(c, 8, 8, 4, NULL, &pitch), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_buffer_alloc_pitch(c, 8, 8, 4, &b, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(cus_fake_call_count(), calls);
    assert_fault_surfaces("cuMemAllocPitch", cus_buffer_alloc_pitch(c, 8, 8, 4, &b, &pitch));
    assert_ptr_equal(b, SENTINEL_PTR(b));
    assert_int_equal(pitch, 42);
}

#define IW 40
#define IH 12

static void fill_image(float img[IH][IW], float base)
{
    for (int y = 0; y < IH; y++)
        for (int x = 0; x < IW; x++)
            img[y][x] = base + (float)(y * 100 + x);
}

static void test_2d_round_trips(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    static float img[IH][IW], back[IH][IW];
    fill_image(img, 0.5f);
    size_t pitch = 0;
    cus_autoptr(cus_buffer) pitched = NULL;
    assert_ok(cus_buffer_alloc_pitch(c, sizeof img[0], IH, 4, &pitched, &pitch));
    cus_autoptr(cus_array) arr = new_array(c, IW, IH, 0, 0);
    cus_autoptr(cus_buffer) linear = new_buffer_of(c, sizeof img);
    /* host -> pitched -> array -> linear -> host */
    assert_ok(cus_copy_2d(&(cus_copy_2d_desc){cus_copy_buffer(pitched, 0, 0),
                                              cus_copy_host(img, sizeof img[0]), sizeof img[0],
                                              IH}));
    assert_ok(cus_copy_2d(&(cus_copy_2d_desc){cus_copy_array(arr, 0, 0),
                                              cus_copy_buffer(pitched, 0, 0), sizeof img[0], IH}));
    assert_ok(cus_copy_2d(&(cus_copy_2d_desc){cus_copy_buffer(linear, 0, 0),
                                              cus_copy_array(arr, 0, 0), sizeof img[0], IH}));
    assert_ok(cus_copy_2d(&(cus_copy_2d_desc){cus_copy_host(back, sizeof back[0]),
                                              cus_copy_buffer(linear, 0, 0), sizeof img[0], IH}));
    assert_memory_equal(img, back, sizeof img);
    assert_int_equal(cus_fake_calls_of("cuMemcpy2D"), 4);
    /* A sub-rectangle: 3 x 2 floats from (5, 4) of the array to (1, 1) of back. */
    memset(back, 0, sizeof back);
    cus_copy_2d_desc sub = {cus_copy_host(back, sizeof back[0]), cus_copy_array(arr, 5 * 4, 4),
                            3 * 4, 2};
    sub.dst.x_bytes = 4;
    sub.dst.y = 1;
    assert_ok(cus_copy_2d(&sub));
    assert_true(back[1][1] == img[4][5] && back[1][3] == img[4][7] && back[2][2] == img[5][6]);
    assert_true(back[0][0] == 0.0f && back[1][4] == 0.0f && back[3][1] == 0.0f);
    /* Async, on a stream. */
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    memset(back, 0, sizeof back);
    assert_ok(cus_copy_2d_async(&(cus_copy_2d_desc){cus_copy_host(back, sizeof back[0]),
                                                    cus_copy_array(arr, 0, 0), sizeof img[0], IH},
                                s));
    assert_ok(cus_stream_synchronize(s));
    assert_memory_equal(img, back, sizeof img);
    /* Nothing to copy: no driver call. */
    unsigned long calls = cus_fake_call_count();
    assert_ok(cus_copy_2d(&(cus_copy_2d_desc){cus_copy_host(back, sizeof back[0]),
                                              cus_copy_array(arr, 0, 0), 0, IH}));
    assert_int_equal(cus_fake_call_count(), calls);
}

static void test_3d_round_trips(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    static float vol[3][5][7], back[3][5][7];
    for (int z = 0; z < 3; z++)
        for (int y = 0; y < 5; y++)
            for (int x = 0; x < 7; x++)
                vol[z][y][x] = (float)(z * 1000 + y * 10 + x);
    cus_autoptr(cus_array) cube = new_array(c, 7, 5, 3, 0);
    cus_autoptr(cus_buffer) lin = new_buffer_of(c, sizeof vol);
    cus_copy_3d_desc in = {cus_copy_array(cube, 0, 0), cus_copy_host(vol, sizeof vol[0][0]),
                           sizeof vol[0][0], 5, 3};
    assert_ok(cus_copy_3d(&in));
    assert_ok(cus_copy_3d(&(cus_copy_3d_desc){cus_copy_buffer(lin, 0, 0), cus_copy_array(cube, 0, 0),
                                              sizeof vol[0][0], 5, 3}));
    cus_autoptr(cus_stream) s = new_stream(c, 0);
    assert_ok(cus_copy_3d_async(&(cus_copy_3d_desc){cus_copy_host(back, sizeof back[0][0]),
                                                    cus_copy_buffer(lin, 0, 0), sizeof vol[0][0],
                                                    5, 3},
                                s));
    assert_ok(cus_stream_synchronize(s));
    assert_memory_equal(vol, back, sizeof vol);
    /* One slice, from z = 2. */
    memset(back, 0, sizeof back);
    cus_copy_3d_desc one = {cus_copy_host(back, sizeof back[0][0]), cus_copy_array(cube, 0, 0),
                            sizeof vol[0][0], 5, 1};
    one.src.z = 2;
    assert_ok(cus_copy_3d(&one));
    assert_memory_equal(back[0], vol[2], sizeof vol[2]);
    assert_int_equal(cus_fake_calls_of("cuMemcpy3D"), 3);
    assert_int_equal(cus_fake_calls_of("cuMemcpy3DAsync"), 1);
}

static void test_copy_bounds_reach_no_driver(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    static float img[IH][IW];
    size_t pitch = 0;
    cus_autoptr(cus_buffer) pitched = NULL;
    assert_ok(cus_buffer_alloc_pitch(c, sizeof img[0], IH, 4, &pitched, &pitch));
    cus_autoptr(cus_array) arr = new_array(c, IW, IH, 0, 0);
    cus_autoptr(cus_buffer) small = new_buffer_of(c, 64);
    cus_autoptr(cus_stream) s = new_stream(c, 0);
    leak_snap before = leak_snap_now();
    unsigned long calls = cus_fake_call_count();
    const size_t row = sizeof img[0];
    /* One row too many, one byte too wide, an origin past the end. */
    assert_status(cus_copy_2d(&(cus_copy_2d_desc){cus_copy_buffer(pitched, 0, 0),
                                                  cus_copy_host(img, row), row, IH + 1}),
                  CUS_ERROR_OUT_OF_RANGE);
    assert_status(cus_copy_2d(&(cus_copy_2d_desc){cus_copy_array(arr, 0, 0),
                                                  cus_copy_host(img, row + 4), row + 4, 1}),
                  CUS_ERROR_OUT_OF_RANGE);
    assert_status(cus_copy_2d(&(cus_copy_2d_desc){cus_copy_array(arr, 4, IH - 1),
                                                  cus_copy_host(img, row), row, 1}),
                  CUS_ERROR_OUT_OF_RANGE);
    assert_status(cus_copy_2d(&(cus_copy_2d_desc){cus_copy_buffer(small, 0, 0),
                                                  cus_copy_host(img, row), 16, 5}),
                  CUS_ERROR_OUT_OF_RANGE);
    assert_status(cus_copy_2d(&(cus_copy_2d_desc){cus_copy_buffer(small, 65, 0),
                                                  cus_copy_host(img, row), 1, 1}),
                  CUS_ERROR_OUT_OF_RANGE);
    assert_status(cus_copy_2d_async(&(cus_copy_2d_desc){cus_copy_host(img, row),
                                                        cus_copy_array(arr, 0, 1), row, IH},
                                    s),
                  CUS_ERROR_OUT_OF_RANGE);
    /* Wider than the pitch. */
    assert_status(cus_copy_2d(&(cus_copy_2d_desc){cus_copy_buffer(pitched, 0, 0),
                                                  cus_copy_host(img, 16), 32, 2}),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_contains(cus_last_error_message(), "pitch");
    assert_status(cus_copy_2d(&(cus_copy_2d_desc){cus_copy_buffer(pitched, 0, 64),
                                                  cus_copy_host(img, row), 128, 2}),
                  CUS_ERROR_INVALID_ARGUMENT);
    /* 3D: a slice's rows, a depth past the array. */
    assert_status(cus_copy_3d(&(cus_copy_3d_desc){cus_copy_array(arr, 0, 0),
                                                  cus_copy_host(img, row), row, IH, 2}),
                  CUS_ERROR_OUT_OF_RANGE);
    cus_copy_3d_desc rows = {cus_copy_buffer(pitched, 0, 0), cus_copy_host(img, row), row, 4, 2};
    rows.dst.rows = 3;
    assert_status(cus_copy_3d(&rows), CUS_ERROR_OUT_OF_RANGE);
    /* What is not an endpoint, and host memory on both sides. */
    assert_status(cus_copy_2d(NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_copy_3d(NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_copy_2d_async(&(cus_copy_2d_desc){cus_copy_host(img, row),
                                                        cus_copy_array(arr, 0, 0), row, 1},
                                    NULL),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_copy_2d(&(cus_copy_2d_desc){.src = cus_copy_host(img, row), .width_bytes = 4,
                                                  .height = 1}),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_copy_2d(&(cus_copy_2d_desc){cus_copy_host(img, row), cus_copy_host(img, row),
                                                  4, 1}),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_copy_2d(&(cus_copy_2d_desc){cus_copy_buffer(NULL, 0, 0),
                                                  cus_copy_host(img, row), 4, 1}),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_copy_2d(&(cus_copy_2d_desc){cus_copy_array(NULL, 0, 0),
                                                  cus_copy_host(img, row), 4, 1}),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_copy_2d(&(cus_copy_2d_desc){cus_copy_array(arr, 0, 0),
                                                  cus_copy_host(NULL, row), 4, 1}),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(cus_fake_call_count(), calls);
    assert_nothing_changed(before);
}

static void test_copy_faults(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    static float img[IH][IW];
    cus_autoptr(cus_array) arr = new_array(c, IW, IH, 0, 0);
    cus_autoptr(cus_stream) s = new_stream(c, 0);
    cus_copy_2d_desc d2 = {cus_copy_array(arr, 0, 0), cus_copy_host(img, sizeof img[0]),
                           sizeof img[0], IH};
    cus_copy_3d_desc d3 = {cus_copy_array(arr, 0, 0), cus_copy_host(img, sizeof img[0]),
                           sizeof img[0], IH, 1};
    assert_fault_surfaces("cuMemcpy2D", cus_copy_2d(&d2));
    assert_fault_surfaces("cuMemcpy2DAsync", cus_copy_2d_async(&d2, s));
    assert_fault_surfaces("cuMemcpy3D", cus_copy_3d(&d3));
    assert_fault_surfaces("cuMemcpy3DAsync", cus_copy_3d_async(&d3, s));
    assert_fault_surfaces("cuCtxPushCurrent", cus_copy_2d(&d2));
}

static void test_copy_across_contexts_is_a_mismatch(void **state)
{
    (void)state;
    cus_autoptr(cus_context) a = new_ctx();
    cus_autoptr(cus_context) b = new_ctx();
    cus_autoptr(cus_array) arr = new_array(a, 8, 8, 0, 0);
    cus_autoptr(cus_buffer) buf = new_buffer_of(b, 8 * 8 * 4);
    cus_autoptr(cus_stream) sb = new_stream(b, 0);
    static float img[64];
    unsigned long calls = cus_fake_call_count();
    assert_status(cus_copy_2d(&(cus_copy_2d_desc){cus_copy_array(arr, 0, 0),
                                                  cus_copy_buffer(buf, 0, 0), 32, 8}),
                  CUS_ERROR_CONTEXT_MISMATCH);
    assert_status(cus_copy_2d_async(&(cus_copy_2d_desc){cus_copy_array(arr, 0, 0),
                                                        cus_copy_host(img, 32), 32, 8},
                                    sb),
                  CUS_ERROR_CONTEXT_MISMATCH);
    assert_int_equal(cus_fake_call_count(), calls);
}

static void test_capture_keeps_the_array_and_the_buffer(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    static float img[IH][IW], back[IH][IW];
    fill_image(img, 3.0f);
    cus_graph *g = NULL;
    {
        cus_autoptr(cus_array) arr = new_array(c, IW, IH, 0, 0);
        cus_autoptr(cus_buffer) lin = new_buffer_of(c, sizeof img);
        assert_ok(cus_copy_2d(&(cus_copy_2d_desc){cus_copy_array(arr, 0, 0),
                                                  cus_copy_host(img, sizeof img[0]),
                                                  sizeof img[0], IH}));
        cus_capture_scope(cap, s, CU_STREAM_CAPTURE_MODE_GLOBAL);
        assert_ok(cap.status);
        assert_ok(cus_copy_2d_async(&(cus_copy_2d_desc){cus_copy_buffer(lin, 0, 0),
                                                        cus_copy_array(arr, 0, 0), sizeof img[0],
                                                        IH},
                                    s));
        assert_ok(cus_copy_3d_async(&(cus_copy_3d_desc){cus_copy_host(back, sizeof back[0]),
                                                        cus_copy_buffer(lin, 0, 0),
                                                        sizeof img[0], IH, 1},
                                    s));
        assert_ok(cus_capture_end(&cap, &g));
        assert_int_equal(cus_graph_kept_objects(g), 2); /* the array and the buffer */
    } /* the user's references go; the graph's stay */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ARRAY), 1);
    cus_graph_exec *e = NULL;
    assert_ok(cus_graph_instantiate(g, 0, &e));
    assert_ok(cus_graph_exec_launch(e, s));
    assert_ok(cus_stream_synchronize(s));
    assert_memory_equal(img, back, sizeof img);
    e = cus_graph_exec_unref(e);
    g = cus_graph_unref(g);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ARRAY), 0);
}

static void test_poisoned_context_fails_fast(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_autoptr(cus_array) arr = new_array(c, 8, 8, 0, 0);
    poison_context(c);
    unsigned long calls = cus_fake_call_count();
    static float img[64];
    cus_array *out = SENTINEL_PTR(out);
    CUDA_ARRAY3D_DESCRIPTOR d = cus_array_desc(arr);
    assert_status(cus_array_create(c, &d, &out), CU(CUDA_ERROR_ILLEGAL_ADDRESS));
    assert_ptr_equal(out, SENTINEL_PTR(out));
    assert_status(cus_copy_2d(&(cus_copy_2d_desc){cus_copy_array(arr, 0, 0),
                                                  cus_copy_host(img, 32), 32, 8}),
                  CU(CUDA_ERROR_ILLEGAL_ADDRESS));
    assert_int_equal(cus_fake_call_count(), calls);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_create_shapes_and_descriptor),
        ENV_TEST(test_bad_descriptors_reach_no_driver),
        ENV_TEST(test_driver_refuses_what_is_too_large),
        ENV_TEST(test_create_faults),
        ENV_TEST(test_destroy_failure_goes_to_the_handler),
        ENV_TEST(test_array_keeps_its_context),
        ENV_TEST(test_mipmapped_levels_keep_their_parent),
        ENV_TEST(test_pitched_buffers),
        ENV_TEST(test_2d_round_trips),
        ENV_TEST(test_3d_round_trips),
        ENV_TEST(test_copy_bounds_reach_no_driver),
        ENV_TEST(test_copy_faults),
        ENV_TEST(test_copy_across_contexts_is_a_mismatch),
        ENV_TEST(test_capture_keeps_the_array_and_the_buffer),
        ENV_TEST(test_poisoned_context_fails_fast),
    };
    return cmocka_run_group_tests_name("array", tests, NULL, NULL);
}
