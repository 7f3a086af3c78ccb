/* Texture and surface objects (include/cuscope/array.h): creation over
 * arrays, mipmapped arrays, linear and pitch-2D buffers, the resources they
 * keep alive, the descriptors the driver refuses, the fake's fetches for host
 * twins (point and linear filtering, clamp, wrap, border), a cus_texture
 * passed to cus_launch (its handle, and kept by a capture), and every failure
 * path. */
#include <string.h>

#include "stream_common.h"
#ifdef CUS_TEST_HAVE_KERNELS
#include "cusk-images.h"
#endif

/* A 4 x 2 float array of 0, 1, 2, 3 / 10, 11, 12, 13. */
static cus_array *small_array(cus_context *c, unsigned int flags)
{
    static const float px[2][4] = {{0, 1, 2, 3}, {10, 11, 12, 13}};
    cus_array *a = NULL;
    assert_ok(cus_array_create(c,
                               &(CUDA_ARRAY3D_DESCRIPTOR){.Width = 4, .Height = 2,
                                                          .Format = CU_AD_FORMAT_FLOAT,
                                                          .NumChannels = 1, .Flags = flags},
                               &a));
    assert_ok(cus_copy_2d(&(cus_copy_2d_desc){cus_copy_array(a, 0, 0),
                                              cus_copy_host(px, sizeof px[0]), sizeof px[0], 2}));
    return a;
}

static void test_texture_over_an_array_keeps_it(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_array *a = small_array(c, 0);
    CUDA_TEXTURE_DESC td = cus_texture_desc(CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_POINT, 0);
    cus_texture *t = NULL;
    assert_ok(cus_texture_create_array(a, &td, NULL, &t));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_TEXTURE), 1);
    assert_ptr_equal(cus_texture_context(t), c);
    CUtexObject h = cus_texture_handle(t);
    assert_true(h != 0);
    a = cus_array_unref(a); /* the texture holds it */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ARRAY), 1);
    CUDA_RESOURCE_DESC res;
    assert_ok(cus_texture_resource_desc(t, &res));
    assert_int_equal(res.resType, CU_RESOURCE_TYPE_ARRAY);
    /* Unnormalized texel coordinates, point sampling: texel (2, 1). */
    assert_true(cus_fake_tex2d_float(h, 2.5f, 1.5f) == 12.0f);
    assert_ptr_equal(cus_texture_ref(t), t);
    assert_null(cus_texture_unref(t));
    t = cus_texture_unref(t);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_TEXTURE), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ARRAY), 0);
    assert_int_equal(cus_fake_calls_of("cuTexObjectDestroy"), 1);
    assert_int_equal(cus_texture_handle(NULL), 0);
    assert_null(cus_texture_context(NULL));
    assert_null(cus_texture_ref(NULL));
    assert_null(cus_texture_unref(NULL));
}

static void test_fake_fetch_modes(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_autoptr(cus_array) a = small_array(c, 0);
    struct {
        CUaddress_mode mode;
        CUfilter_mode filter;
        unsigned int flags;
        float x, y, want;
    } cases[] = {
        {CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_POINT, 0, -3.0f, 0.5f, 0.0f},
        {CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_POINT, 0, 9.0f, 9.0f, 13.0f},
        /* Linear: halfway between texels 1 and 2 of row 0. */
        {CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_LINEAR, 0, 2.0f, 0.5f, 1.5f},
        /* Linear, normalized: the middle of the image. */
        {CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_LINEAR, CU_TRSF_NORMALIZED_COORDINATES,
         0.5f, 0.5f, 6.5f},
        /* Wrap, normalized: x 1.125 is x 0.125, texel 0. */
        {CU_TR_ADDRESS_MODE_WRAP, CU_TR_FILTER_MODE_POINT, CU_TRSF_NORMALIZED_COORDINATES, 1.125f,
         0.25f, 0.0f},
        {CU_TR_ADDRESS_MODE_WRAP, CU_TR_FILTER_MODE_POINT, CU_TRSF_NORMALIZED_COORDINATES, -0.125f,
         0.75f, 13.0f},
        /* Border: the border colour (0) outside. */
        {CU_TR_ADDRESS_MODE_BORDER, CU_TR_FILTER_MODE_POINT, 0, -1.0f, 0.5f, 0.0f},
        {CU_TR_ADDRESS_MODE_BORDER, CU_TR_FILTER_MODE_POINT, 0, 3.5f, 1.5f, 13.0f},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CUDA_TEXTURE_DESC td = cus_texture_desc(cases[i].mode, cases[i].filter, cases[i].flags);
        cus_autoptr(cus_texture) t = NULL;
        assert_ok(cus_texture_create_array(a, &td, NULL, &t));
        float got = cus_fake_tex2d_float(cus_texture_handle(t), cases[i].x, cases[i].y);
        if (got != cases[i].want)
            fail_msg("case %zu: fetched %g, expected %g", i, (double)got, (double)cases[i].want);
    }
}

static void test_texture_over_buffers_and_mipmaps(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    CUDA_TEXTURE_DESC td = cus_texture_desc(CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_POINT, 0);
    /* Linear: 16 floats 0..15. */
    float data[16];
    for (int i = 0; i < 16; i++)
        data[i] = (float)i;
    cus_buffer *lin = NULL;
    assert_ok(cus_buffer_alloc(c, sizeof data, &lin));
    assert_ok(cus_copy_to_device(lin, 0, data, sizeof data));
    cus_autoptr(cus_texture) tl = NULL;
    assert_ok(cus_texture_create_linear(lin, CU_AD_FORMAT_FLOAT, 1, &td, &tl));
    lin = cus_buffer_unref(lin); /* held by the texture */
    assert_true(cus_fake_tex2d_float(cus_texture_handle(tl), 7.0f, 0) == 7.0f);
    /* Pitch 2D: 8 x 4 floats in a pitched buffer. */
    size_t pitch = 0;
    cus_autoptr(cus_buffer) p = NULL;
    assert_ok(cus_buffer_alloc_pitch(c, 8 * 4, 4, 4, &p, &pitch));
    float rows[4][8];
    for (int y = 0; y < 4; y++)
        for (int x = 0; x < 8; x++)
            rows[y][x] = (float)(y * 10 + x);
    assert_ok(cus_copy_2d(&(cus_copy_2d_desc){cus_copy_buffer(p, 0, 0),
                                              cus_copy_host(rows, sizeof rows[0]), sizeof rows[0],
                                              4}));
    cus_autoptr(cus_texture) tp = NULL;
    assert_ok(cus_texture_create_pitch2d(p, CU_AD_FORMAT_FLOAT, 1, 8, 4, &td, &tp));
    assert_true(cus_fake_tex2d_float(cus_texture_handle(tp), 5.5f, 3.5f) == 35.0f);
    cus_texture *out = SENTINEL_PTR(out);
    unsigned long calls = cus_fake_call_count();
    assert_status(cus_texture_create_pitch2d(p, CU_AD_FORMAT_FLOAT, 1, 8, 5, &td, &out),
                  CUS_ERROR_OUT_OF_RANGE);
    assert_status(cus_texture_create_pitch2d(p, CU_AD_FORMAT_FLOAT, 4, 1000, 4, &td, &out),
                  CUS_ERROR_OUT_OF_RANGE);
    cus_autoptr(cus_buffer) plain = NULL;
    assert_ok(cus_buffer_alloc(c, 256, &plain));
    calls = cus_fake_call_count();
    assert_status(cus_texture_create_pitch2d(plain, CU_AD_FORMAT_FLOAT, 1, 8, 2, &td, &out),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_texture_create_linear(plain, (CUarray_format)0x77, 1, &td, &out),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_texture_create_linear(plain, CU_AD_FORMAT_FLOAT, 3, &td, &out),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(cus_fake_call_count(), calls);
    assert_ptr_equal(out, SENTINEL_PTR(out));
    /* A mipmapped array: its level 0. */
    cus_mipmapped_array *m = NULL;
    assert_ok(cus_mipmapped_array_create(
        c,
        &(CUDA_ARRAY3D_DESCRIPTOR){.Width = 8, .Height = 8, .Format = CU_AD_FORMAT_FLOAT,
                                   .NumChannels = 1},
        3, &m));
    cus_autoptr(cus_texture) tm = NULL;
    assert_ok(cus_texture_create_mipmapped(m, &td, NULL, &tm));
    m = cus_mipmapped_array_unref(m);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MIPMAPPED_ARRAY), 1);
}

static void test_bad_arguments_and_descriptors(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_autoptr(cus_array) a = small_array(c, 0);
    CUDA_TEXTURE_DESC td = cus_texture_desc(CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_POINT, 0);
    cus_autoptr(cus_buffer) ints = NULL;
    assert_ok(cus_buffer_alloc(c, 256, &ints));
    leak_snap before = leak_snap_now();
    cus_texture *out = SENTINEL_PTR(out);
    unsigned long calls = cus_fake_call_count();
    assert_status(cus_texture_create_array(NULL, &td, NULL, &out), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_texture_create_array(a, NULL, NULL, &out), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_texture_create_array(a, &td, NULL, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_texture_create_mipmapped(NULL, &td, NULL, &out), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_texture_create_linear(NULL, CU_AD_FORMAT_FLOAT, 1, &td, &out),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_texture_resource_desc(NULL, NULL), CUS_ERROR_INVALID_ARGUMENT);
    cus_surface *s = SENTINEL_PTR(s);
    assert_status(cus_surface_create(NULL, &s), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_surface_create(a, &s), CUS_ERROR_INVALID_ARGUMENT); /* no SURFACE_LDST */
    assert_contains(cus_last_error_message(), "SURFACE_LDST");
    assert_int_equal(cus_fake_call_count(), calls);
    /* What the driver refuses: an unknown address mode, linear filtering of
     * integers read as such. */
    CUDA_TEXTURE_DESC bad = td;
    bad.addressMode[1] = (CUaddress_mode)9;
    assert_status(cus_texture_create_array(a, &bad, NULL, &out), CU(CUDA_ERROR_INVALID_VALUE));
    assert_string_equal(cus_last_error()->driver_call, "cuTexObjectCreate");
    bad = cus_texture_desc(CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_LINEAR,
                           CU_TRSF_READ_AS_INTEGER);
    assert_status(cus_texture_create_linear(ints, CU_AD_FORMAT_UNSIGNED_INT8, 1, &bad, &out),
                  CU(CUDA_ERROR_INVALID_VALUE));
    assert_ptr_equal(out, SENTINEL_PTR(out));
    assert_ptr_equal(s, SENTINEL_PTR(s));
    assert_nothing_changed(before);
}

static void test_faults(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_autoptr(cus_array) a = small_array(c, CUDA_ARRAY3D_SURFACE_LDST);
    CUDA_TEXTURE_DESC td = cus_texture_desc(CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_POINT, 0);
    cus_texture *t = SENTINEL_PTR(t);
    assert_fault_surfaces("cuCtxPushCurrent", cus_texture_create_array(a, &td, NULL, &t));
    assert_fault_surfaces("cuTexObjectCreate", cus_texture_create_array(a, &td, NULL, &t));
    assert_ptr_equal(t, SENTINEL_PTR(t));
    cus_surface *s = SENTINEL_PTR(s);
    assert_fault_surfaces("cuSurfObjectCreate", cus_surface_create(a, &s));
    assert_ptr_equal(s, SENTINEL_PTR(s));
    cus_autoptr(cus_texture) ok = NULL;
    assert_ok(cus_texture_create_array(a, &td, NULL, &ok));
    CUDA_RESOURCE_DESC res = {.flags = 77};
    assert_fault_surfaces("cuTexObjectGetResourceDesc", cus_texture_resource_desc(ok, &res));
    assert_int_equal(res.flags, 77);
    /* Destroy failures go to the handler. */
    unsigned long errors = cus_destroy_error_count();
    cus_texture *t2 = NULL;
    assert_ok(cus_texture_create_array(a, &td, NULL, &t2));
    assert_ok(cus_fake_fail_entry("cuTexObjectDestroy", 1, FAULT, false));
    t2 = cus_texture_unref(t2);
    cus_surface *s2 = NULL;
    assert_ok(cus_surface_create(a, &s2));
    assert_ok(cus_fake_fail_entry("cuSurfObjectDestroy", 1, FAULT, false));
    s2 = cus_surface_unref(s2);
    cus_fake_clear_faults();
    assert_int_equal(cus_destroy_error_count(), errors + 2);
}

static void test_surfaces(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_array *a = small_array(c, CUDA_ARRAY3D_SURFACE_LDST);
    cus_surface *s = NULL;
    assert_ok(cus_surface_create(a, &s));
    assert_true(cus_surface_handle(s) != 0);
    a = cus_array_unref(a);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_SURFACE), 1);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ARRAY), 1);
    assert_ptr_equal(cus_surface_ref(s), s);
    assert_null(cus_surface_unref(s));
    s = cus_surface_unref(s);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_SURFACE), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ARRAY), 0);
    assert_int_equal(cus_surface_handle(NULL), 0);
    assert_null(cus_surface_ref(NULL));
    assert_null(cus_surface_unref(NULL));
}

#ifdef CUS_TEST_HAVE_KERNELS
static CUtexObject seen_tex;

static CUresult record_tex(const cus_fake_launch *l, void **args, void *user)
{
    (void)l;
    (void)user;
    memcpy(&seen_tex, args[1], sizeof seen_tex);
    return CUDA_SUCCESS;
}

static void test_launch_passes_and_keeps_the_texture(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    assert_ok(cus_fake_register_kernel("rotate_texture", record_tex, NULL));
    cus_autoptr(cus_module) m = NULL;
    assert_ok(cus_module_load_data(c, cusk_texture.ptx, cusk_texture.ptx_size + 1, NULL, &m));
    cus_autoptr(cus_function) fn = NULL;
    assert_ok(cus_module_get_function(m, "rotate_texture", &fn));
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_buffer) out = NULL;
    assert_ok(cus_buffer_alloc(c, 64, &out));
    CUDA_TEXTURE_DESC td = cus_texture_desc(CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_POINT, 0);
    cus_graph *g = NULL;
    CUtexObject h = 0;
    {
        cus_autoptr(cus_array) a = small_array(c, 0);
        cus_autoptr(cus_texture) t = NULL;
        assert_ok(cus_texture_create_array(a, &td, NULL, &t));
        h = cus_texture_handle(t);
        /* Outside a capture: the handle goes to the kernel. */
        assert_ok(cus_launch(fn, 1, 1, 0, s, out, t, 4u, 2u, 1.0f, 0.0f));
        assert_ok(cus_stream_synchronize(s));
        assert_true(seen_tex == h);
        cus_capture_scope(cap, s, CU_STREAM_CAPTURE_MODE_GLOBAL);
        assert_ok(cap.status);
        assert_ok(cus_launch(fn, 1, 1, 0, s, out, t, 4u, 2u, 1.0f, 0.0f));
        assert_ok(cus_capture_end(&cap, &g));
        assert_int_equal(cus_graph_kept_objects(g), 3); /* module, buffer, texture */
    }
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_TEXTURE), 1);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ARRAY), 1);
    seen_tex = 0;
    cus_graph_exec *e = NULL;
    assert_ok(cus_graph_instantiate(g, 0, &e));
    assert_ok(cus_graph_exec_launch(e, s));
    assert_ok(cus_stream_synchronize(s));
    assert_true(seen_tex == h);
    e = cus_graph_exec_unref(e);
    g = cus_graph_unref(g);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_TEXTURE), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ARRAY), 0);
}
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_texture_over_an_array_keeps_it),
        ENV_TEST(test_fake_fetch_modes),
        ENV_TEST(test_texture_over_buffers_and_mipmaps),
        ENV_TEST(test_bad_arguments_and_descriptors),
        ENV_TEST(test_faults),
        ENV_TEST(test_surfaces),
#ifdef CUS_TEST_HAVE_KERNELS
        ENV_TEST(test_launch_passes_and_keeps_the_texture),
#endif
    };
    return cmocka_run_group_tests_name("texture", tests, NULL, NULL);
}
