/* TMA tensor maps (include/cuscope/tensor_map.h): good maps of several data
 * types, ranks 1..5 and interleave/swizzle combinations; each documented
 * rule refused before the driver with a message naming it; the extent
 * against the buffer; the fake's own refusals and its encoding; rebinding;
 * a map passed to cus_launch by value (the twin of kernels/tma.cu copies
 * tiles through it) and kept, with its buffer, by a capture; the size check
 * against the kernel's 128-byte parameter; every driver call's failure; a
 * driver without the entry points; nothing leaked (the teardown). */
#include <string.h>

#include <cuscope/tensor_map.h>

#include "stream_common.h"
#if defined(CUS_TEST_HAVE_KERNELS) && defined(CUS_TEST_HAVE_TMA_KERNELS)
#include "cusk-tma.h"
#endif

/* A W x H float tensor with rows of `pitch` bytes, read in 32 x 8 boxes. */
static cus_tensor_map_params params_2d(cuuint64_t w, cuuint64_t h, cuuint64_t pitch)
{
    return (cus_tensor_map_params){
        .data_type = CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
        .rank = 2,
        .global_dim = {w, h},
        .global_strides = {pitch},
        .box_dim = {32, 8},
    };
}

static cus_buffer *new_buf(cus_context *c, size_t bytes)
{
    cus_buffer *b = NULL;
    assert_ok(cus_buffer_alloc(c, bytes, &b));
    return b;
}

static void test_tiled_map_holds_its_buffer(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_buffer *buf = new_buf(c, 64 * 16 * 4);
    cus_tensor_map_params p = params_2d(64, 16, 256);
    cus_tensor_map *m = NULL;
    unsigned long calls = cus_fake_call_count();
    assert_ok(cus_tensor_map_create_tiled(buf, &p, &m));
    /* In the buffer's context: the driver needs one current (an H200). */
    assert_calls_since(calls, "cuCtxPushCurrent", "cuTensorMapEncodeTiled", "cuCtxPopCurrent");
    calls = cus_fake_call_count();
    cus_tensor_map *m2 = NULL;
    assert_ok(cus_context_push(c));
    assert_ok(cus_tensor_map_create_tiled(buf, &p, &m2)); /* already current: no switch */
    assert_calls_since(calls, "cuCtxPushCurrent", "cuTensorMapEncodeTiled");
    cus_context *popped = NULL;
    assert_ok(cus_context_pop(&popped));
    assert_null(cus_context_unref(popped));
    assert_null(cus_tensor_map_unref(m2));
    assert_ptr_equal(cus_tensor_map_buffer(m), buf);
    const cus_tensor_map_params *got = cus_tensor_map_params_of(m);
    assert_int_equal(got->element_strides[0], 1); /* zeros became ones */
    assert_int_equal(got->element_strides[1], 1);
    cus_fake_tensor_map d;
    assert_true(cus_fake_tensor_map_decode(cus_tensor_map_get(m), &d));
    assert_false(d.im2col);
    assert_int_equal(d.rank, 2);
    assert_true(d.address == cus_buffer_ptr(buf));
    assert_int_equal(d.global_dim[0], 64);
    assert_int_equal(d.global_dim[1], 16);
    assert_int_equal(d.global_strides[0], 256);
    assert_int_equal(d.box_dim[0], 32);
    assert_int_equal(d.box_dim[1], 8);
    assert_int_equal(d.element_strides[1], 1);
    assert_int_equal(d.data_type, CU_TENSOR_MAP_DATA_TYPE_FLOAT32);
    assert_int_equal((uintptr_t)cus_tensor_map_get(m) % 64, 0);
    buf = cus_buffer_unref(buf); /* the map holds it */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY), 1);
    assert_ptr_equal(cus_tensor_map_ref(m), m);
    assert_null(cus_tensor_map_unref(m));
    unsigned long frees = cus_fake_calls_of("cuMemFree");
    m = cus_tensor_map_unref(m);
    assert_null(m);
    assert_int_equal(cus_fake_calls_of("cuMemFree"), frees + 1); /* the buffer's, no other */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY), 0);
    assert_null(cus_tensor_map_ref(NULL));
    assert_null(cus_tensor_map_unref(NULL));
    assert_null(cus_tensor_map_get(NULL));
    assert_null(cus_tensor_map_buffer(NULL));
    assert_null(cus_tensor_map_params_of(NULL));
    assert_false(cus_fake_tensor_map_decode(NULL, &d));
    CUtensorMap zero;
    memset(&zero, 0, sizeof zero);
    assert_false(cus_fake_tensor_map_decode(&zero, &d));
}

/* Good maps: each data type, ranks 1..5, interleave and swizzle. */
static void test_good_maps(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_autoptr(cus_buffer) buf = new_buf(c, 1 << 20);
    static const struct {
        CUtensorMapDataType type;
        unsigned int bits;
    } types[] = {
        {CU_TENSOR_MAP_DATA_TYPE_UINT8, 8},         {CU_TENSOR_MAP_DATA_TYPE_UINT16, 16},
        {CU_TENSOR_MAP_DATA_TYPE_UINT32, 32},       {CU_TENSOR_MAP_DATA_TYPE_INT32, 32},
        {CU_TENSOR_MAP_DATA_TYPE_UINT64, 64},       {CU_TENSOR_MAP_DATA_TYPE_INT64, 64},
        {CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 16},      {CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 32},
        {CU_TENSOR_MAP_DATA_TYPE_FLOAT64, 64},      {CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 16},
        {CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ, 32},  {CU_TENSOR_MAP_DATA_TYPE_TFLOAT32, 32},
        {CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ, 32}, {CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B, 4},
        {CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B, 8}, {CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B, 8},
    };
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        assert_int_equal(cus_tensor_map_element_bits(types[t].type), types[t].bits);
        /* 128 elements a row, rows of 1 KiB, a box row of 128 bytes. */
        cus_tensor_map_params p = {
            .data_type = types[t].type,
            .rank = 2,
            .global_dim = {128, 64},
            .global_strides = {1024},
            .box_dim = {128 * 8 / types[t].bits, 4},
        };
        if (types[t].bits == 4 || types[t].type == CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B ||
            types[t].type == CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B)
            p.box_dim[0] = types[t].bits == 4 ? 256 : 128;
        cus_autoptr(cus_tensor_map) m = NULL;
        if (cus_tensor_map_create_tiled(buf, &p, &m) != CUS_SUCCESS)
            fail_msg("type %d: %s", (int)types[t].type, cus_last_error_message());
        cus_fake_tensor_map d;
        assert_true(cus_fake_tensor_map_decode(cus_tensor_map_get(m), &d));
        assert_int_equal(d.data_type, types[t].type);
    }
    assert_int_equal(cus_tensor_map_element_bits((CUtensorMapDataType)99), 0);
    for (unsigned int rank = 1; rank <= 5; rank++) {
        cus_tensor_map_params p = {
            .data_type = CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
            .rank = rank,
            .global_dim = {16, 4, 4, 4, 4},
            .global_strides = {64, 256, 1024, 4096},
            .box_dim = {16, 2, 2, 2, 2},
            .element_strides = {1, 2, 1, 2, 1},
        };
        cus_autoptr(cus_tensor_map) m = NULL;
        if (cus_tensor_map_create_tiled(buf, &p, &m) != CUS_SUCCESS)
            fail_msg("rank %u: %s", rank, cus_last_error_message());
        cus_fake_tensor_map d;
        assert_true(cus_fake_tensor_map_decode(cus_tensor_map_get(m), &d));
        assert_int_equal(d.rank, rank);
        assert_int_equal(d.global_dim[rank - 1], rank == 1 ? 16 : 4);
        assert_int_equal(d.box_dim[rank - 1], rank == 1 ? 16 : 2);
        assert_int_equal(d.element_strides[rank - 1], rank % 2 ? 1 : 2);
    }
    /* Interleave and swizzle: the combinations the rules allow. */
    static const struct {
        CUtensorMapInterleave il;
        CUtensorMapSwizzle sw;
        cuuint32_t box0; /* floats */
    } combos[] = {
        {CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, 64},
        {CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_32B, 8},
        {CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_64B, 16},
        {CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, 32},
        {CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B, 32},
        {CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B, 32},
        {CU_TENSOR_MAP_INTERLEAVE_16B, CU_TENSOR_MAP_SWIZZLE_NONE, 4},
        {CU_TENSOR_MAP_INTERLEAVE_16B, CU_TENSOR_MAP_SWIZZLE_128B, 4},
        {CU_TENSOR_MAP_INTERLEAVE_32B, CU_TENSOR_MAP_SWIZZLE_32B, 8},
    };
    for (size_t i = 0; i < sizeof combos / sizeof combos[0]; i++) {
        cus_tensor_map_params p = {
            .data_type = CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
            .rank = 3,
            .global_dim = {64, 8, 8},
            .global_strides = {256, 2048},
            .box_dim = {combos[i].box0, 4, 4},
            .interleave = combos[i].il,
            .swizzle = combos[i].sw,
            .l2_promotion = CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
            .oob_fill = CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA,
        };
        cus_autoptr(cus_tensor_map) m = NULL;
        if (cus_tensor_map_create_tiled(buf, &p, &m) != CUS_SUCCESS)
            fail_msg("combination %zu: %s", i, cus_last_error_message());
        cus_fake_tensor_map d;
        assert_true(cus_fake_tensor_map_decode(cus_tensor_map_get(m), &d));
        assert_int_equal(d.interleave, combos[i].il);
        assert_int_equal(d.swizzle, combos[i].sw);
        assert_int_equal(d.l2_promotion, CU_TENSOR_MAP_L2_PROMOTION_L2_128B);
        assert_int_equal(d.oob_fill, CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA);
    }
}

/* One case per rule: a good 3-D float map (64 x 8 x 8, 32 x 4 x 4 boxes)
 * with one thing broken; the message, and no driver call. */
typedef struct rule_case {
    const char *what;
    void (*breaks)(cus_tensor_map_params *p, size_t *offset);
    const char *message;
} rule_case;

#define RULE(name, body, msg)                                                  \
    static void name(cus_tensor_map_params *p, size_t *offset)                 \
    {                                                                          \
        (void)p;                                                               \
        (void)offset;                                                          \
        body;                                                                  \
    }
RULE(bad_type, p->data_type = (CUtensorMapDataType)16, "data type 16 is not a CUtensorMapDataType")
RULE(bad_interleave, p->interleave = (CUtensorMapInterleave)3, "interleave 3 is not")
RULE(bad_swizzle, p->swizzle = (CUtensorMapSwizzle)7, "swizzle 7 is not")
RULE(bad_l2, p->l2_promotion = (CUtensorMapL2promotion)4, "L2 promotion 4 is not")
RULE(bad_oob, p->oob_fill = (CUtensorMapFloatOOBfill)2, "OOB fill 2 is not")
RULE(rank_0, p->rank = 0, "rank 0 is outside 1..5")
RULE(rank_6, p->rank = 6, "rank 6 is outside 1..5 (3..5 for im2col)")
RULE(interleave_rank, (p->rank = 2, p->interleave = CU_TENSOR_MAP_INTERLEAVE_16B,
                       p->box_dim[0] = 4),
     "rank 2 is below 3, which interleave needs")
RULE(unaligned, *offset = 8, "is not 16-byte aligned")
RULE(unaligned_32, (*offset = 16, p->interleave = CU_TENSOR_MAP_INTERLEAVE_32B,
                    p->swizzle = CU_TENSOR_MAP_SWIZZLE_32B, p->box_dim[0] = 8),
     "is not 32-byte aligned")
RULE(dim_zero, p->global_dim[1] = 0, "globalDim[1] = 0 is outside 1..2^32")
RULE(dim_big, p->global_dim[2] = (1ull << 32) + 1, "globalDim[2] = 4294967297 is outside 1..2^32")
RULE(packed_dim, (p->data_type = CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B, p->box_dim[0] = 128,
                  p->global_dim[0] = 100),
     "globalDim[0] = 100 is not a multiple of 128")
RULE(u4_dim, (p->data_type = CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B, p->box_dim[0] = 64,
              p->global_dim[0] = 63),
     "globalDim[0] = 63 is not a multiple of 2")
RULE(stride_16, p->global_strides[1] = 100, "globalStrides[1] = 100 is not a multiple of 16")
RULE(stride_32, (p->interleave = CU_TENSOR_MAP_INTERLEAVE_32B, p->swizzle = CU_TENSOR_MAP_SWIZZLE_32B,
                 p->box_dim[0] = 8, p->global_strides[0] = 272),
     "globalStrides[0] = 272 is not a multiple of 32")
RULE(stride_big, p->global_strides[1] = 1ull << 40, "globalStrides[1] = 1099511627776 is not below 2^40")
RULE(box_zero, p->box_dim[2] = 0, "boxDim[2] = 0 is outside 1..256")
RULE(box_big, p->box_dim[1] = 257, "boxDim[1] = 257 is outside 1..256")
RULE(box_inner_16, p->box_dim[0] = 5, "boxDim[0] * element size = 20 bytes is not a multiple of 16")
RULE(box_packed, (p->data_type = CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B, p->global_dim[0] = 128,
                  p->box_dim[0] = 64),
     "boxDim[0] = 64 is not 128")
RULE(elem_stride_0, p->element_strides[1] = 0, "elementStrides[1] = 0 is outside 1..8")
RULE(elem_stride_9, p->element_strides[2] = 9, "elementStrides[2] = 9 is outside 1..8")
RULE(swizzle_span, (p->swizzle = CU_TENSOR_MAP_SWIZZLE_128B, p->box_dim[0] = 48),
     "boxDim[0] * element size = 192 bytes exceeds the 128-byte swizzle span")
RULE(swizzle_span_32, (p->swizzle = CU_TENSOR_MAP_SWIZZLE_32B, p->box_dim[0] = 16),
     "boxDim[0] * element size = 64 bytes exceeds the 32-byte swizzle span")
RULE(interleave_swizzle, (p->interleave = CU_TENSOR_MAP_INTERLEAVE_32B, p->box_dim[0] = 8,
                          p->swizzle = CU_TENSOR_MAP_SWIZZLE_64B),
     "32-byte interleave needs the 32-byte swizzle, not swizzle 2")
RULE(u6_interleave, (p->data_type = CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B, p->global_dim[0] = 128,
                     p->box_dim[0] = 128, p->interleave = CU_TENSOR_MAP_INTERLEAVE_16B),
     "16U6_ALIGN16B needs interleave NONE")
RULE(packed_swizzle, (p->data_type = CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B, p->global_dim[0] = 128,
                      p->box_dim[0] = 128, p->swizzle = CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B_FLIP_8B),
     "swizzle 5 is not one a 16U*_ALIGN16B type takes")
RULE(nan_fill, (p->data_type = CU_TENSOR_MAP_DATA_TYPE_INT32,
                p->oob_fill = CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA),
     "the NaN OOB fill needs a floating-point data type")
RULE(extent, p->global_dim[2] = 9, "the tensor's extent passes the buffer's end")
RULE(extent_offset, *offset = 16, "the tensor's extent passes the buffer's end (offset 16")
RULE(extent_overflow, (p->global_dim[2] = 1ull << 32, p->global_strides[1] = (1ull << 40) - 16,
                       p->global_dim[1] = 1ull << 32),
     "overflows 64 bits")

static const rule_case rule_cases[] = {
    {"type", bad_type, "data type 16 is not a CUtensorMapDataType"},
    {"interleave enum", bad_interleave, "interleave 3 is not a CUtensorMapInterleave"},
    {"swizzle enum", bad_swizzle, "swizzle 7 is not a CUtensorMapSwizzle"},
    {"L2 enum", bad_l2, "L2 promotion 4 is not a CUtensorMapL2promotion"},
    {"OOB enum", bad_oob, "OOB fill 2 is not a CUtensorMapFloatOOBfill"},
    {"rank 0", rank_0, "rank 0 is outside 1..5 (3..5 for im2col)"},
    {"rank 6", rank_6, "rank 6 is outside 1..5 (3..5 for im2col)"},
    {"interleave rank", interleave_rank, "rank 2 is below 3, which interleave needs"},
    {"alignment", unaligned, "is not 16-byte aligned"},
    {"alignment 32", unaligned_32, "is not 32-byte aligned"},
    {"dim 0", dim_zero, "globalDim[1] = 0 is outside 1..2^32"},
    {"dim > 2^32", dim_big, "globalDim[2] = 4294967297 is outside 1..2^32"},
    {"packed dim", packed_dim, "globalDim[0] = 100 is not a multiple of 128"},
    {"u4 dim", u4_dim, "globalDim[0] = 63 is not a multiple of 2"},
    {"stride 16", stride_16, "globalStrides[1] = 100 is not a multiple of 16"},
    {"stride 32", stride_32, "globalStrides[0] = 272 is not a multiple of 32"},
    {"stride 2^40", stride_big, "globalStrides[1] = 1099511627776 is not below 2^40"},
    {"box 0", box_zero, "boxDim[2] = 0 is outside 1..256"},
    {"box 257", box_big, "boxDim[1] = 257 is outside 1..256"},
    {"box inner", box_inner_16, "boxDim[0] * element size = 20 bytes is not a multiple of 16"},
    {"box packed", box_packed, "boxDim[0] = 64 is not 128"},
    {"element stride 0", elem_stride_0, "elementStrides[1] = 0 is outside 1..8"},
    {"element stride 9", elem_stride_9, "elementStrides[2] = 9 is outside 1..8"},
    {"swizzle span", swizzle_span,
     "boxDim[0] * element size = 192 bytes exceeds the 128-byte swizzle span"},
    {"swizzle span 32", swizzle_span_32,
     "boxDim[0] * element size = 64 bytes exceeds the 32-byte swizzle span"},
    {"interleave swizzle", interleave_swizzle,
     "32-byte interleave needs the 32-byte swizzle, not swizzle 2"},
    {"u6 interleave", u6_interleave, "16U6_ALIGN16B needs interleave NONE"},
    {"packed swizzle", packed_swizzle, "swizzle 5 is not one a 16U*_ALIGN16B type takes"},
    {"NaN fill", nan_fill, "the NaN OOB fill needs a floating-point data type"},
    {"extent", extent, "the tensor's extent passes the buffer's end"},
    {"extent offset", extent_offset, "the tensor's extent passes the buffer's end (offset 16"},
    {"extent overflow", extent_overflow, "overflows 64 bits"},
};

static cus_tensor_map_params params_3d(void)
{
    return (cus_tensor_map_params){
        .data_type = CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
        .rank = 3,
        .global_dim = {64, 8, 8},
        .global_strides = {256, 2048},
        .box_dim = {32, 4, 4},
        .element_strides = {1, 1, 1},
    };
}

static void test_each_rule_refused(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_autoptr(cus_buffer) buf = new_buf(c, 64 * 8 * 8 * 4); /* exactly the tensor */
    cus_tensor_map_params good = params_3d();
    {
        cus_autoptr(cus_tensor_map) m = NULL;
        assert_ok(cus_tensor_map_create_tiled(buf, &good, &m));
    }
    for (size_t i = 0; i < sizeof rule_cases / sizeof rule_cases[0]; i++) {
        cus_tensor_map_params p = good;
        size_t offset = 0;
        rule_cases[i].breaks(&p, &offset);
        p.offset = offset;
        cus_tensor_map *m = SENTINEL_PTR(m);
        unsigned long calls = cus_fake_call_count();
        cus_status st = cus_tensor_map_create_tiled(buf, &p, &m);
        if (st != CUS_ERROR_INVALID_ARGUMENT)
            fail_msg("%s: %s (%s)", rule_cases[i].what, cus_status_name(st),
                     cus_last_error_message());
        assert_contains(cus_last_error_message(), rule_cases[i].message);
        assert_string_equal(cus_last_error()->function, "cus_tensor_map_create_tiled");
        assert_ptr_equal(m, SENTINEL_PTR(m));
        assert_no_calls_since(calls);
    }
}

/* The fake refuses what breaks a rule on its own, as the driver documents
 * (CUDA_ERROR_INVALID_VALUE), and a map that is not 64-byte aligned. */
static void test_fake_refuses(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_autoptr(cus_buffer) buf = new_buf(c, 4096);
    PFN_cuTensorMapEncodeTiled_v12000 encode =
        RAW_FN(PFN_cuTensorMapEncodeTiled_v12000, "cuTensorMapEncodeTiled", 12000);
    PFN_cuTensorMapEncodeIm2col_v12000 im2col =
        RAW_FN(PFN_cuTensorMapEncodeIm2col_v12000, "cuTensorMapEncodeIm2col", 12000);
    PFN_cuTensorMapReplaceAddress_v12000 replace =
        RAW_FN(PFN_cuTensorMapReplaceAddress_v12000, "cuTensorMapReplaceAddress", 12000);
    void *a = (void *)(uintptr_t)cus_buffer_ptr(buf);
    cuuint64_t dim[2] = {64, 16}, strides[1] = {256}, bad_strides[1] = {100};
    cuuint32_t box[2] = {32, 8}, es[2] = {1, 1};
    CUtensorMap map;
    /* no context current: refused, as an H200 refuses */
    assert_cu(encode(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, a, dim, strides, box, es,
                     CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                     CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
              CUDA_ERROR_INVALID_CONTEXT);
    assert_cu(replace(&map, a), CUDA_ERROR_INVALID_CONTEXT);
    cus_context_scope(g, c);
    assert_ok(g.status);
    assert_cu_ok(encode(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, a, dim, strides, box, es,
                        CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                        CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
    assert_cu(encode(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, a, dim, bad_strides, box, es,
                     CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                     CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
              CUDA_ERROR_INVALID_VALUE);
    assert_cu(encode(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, (char *)a + 4, dim, strides, box,
                     es, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                     CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
              CUDA_ERROR_INVALID_VALUE);
    assert_cu(encode(NULL, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, a, dim, strides, box, es,
                     CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                     CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
              CUDA_ERROR_INVALID_VALUE);
    /* 64-byte alignment of the map itself. */
    _Alignas(128) unsigned char raw[sizeof(CUtensorMap) + 32];
    assert_cu(encode((CUtensorMap *)(raw + 32), CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, a, dim,
                     strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                     CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
              CUDA_ERROR_INVALID_VALUE);
    /* im2col: rank 2 refused. */
    int lower[3] = {0}, upper[3] = {0};
    assert_cu(im2col(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, a, dim, strides, lower, upper, 8,
                     8, es, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                     CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
              CUDA_ERROR_INVALID_VALUE);
    /* Replace: the alignment kept; a map the fake never encoded refused. */
    assert_cu_ok(encode(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, a, dim, strides, box, es,
                        CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                        CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
    assert_cu(replace(&map, (char *)a + 8), CUDA_ERROR_INVALID_VALUE);
    assert_cu_ok(replace(&map, (char *)a + 16));
    cus_fake_tensor_map d;
    assert_true(cus_fake_tensor_map_decode(&map, &d));
    assert_true(d.address == cus_buffer_ptr(buf) + 16);
    CUtensorMap zero;
    memset(&zero, 0, sizeof zero);
    assert_cu(replace(&zero, a), CUDA_ERROR_INVALID_VALUE);
}

static cus_tensor_map_params params_im2col(void)
{
    /* NHWC: 16 channels, 10 x 10 pixels, 2 images; a 3 x 3 filter, padding 1. */
    return (cus_tensor_map_params){
        .data_type = CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
        .rank = 4,
        .global_dim = {16, 10, 10, 2},
        .global_strides = {32, 320, 3200},
        .element_strides = {1, 1, 1, 1},
        .pixel_box_lower = {-1, -1},
        .pixel_box_upper = {-1, -1},
        .channels_per_pixel = 16,
        .pixels_per_column = 64,
    };
}

static void test_im2col(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_autoptr(cus_buffer) buf = new_buf(c, 6400);
    cus_tensor_map_params p = params_im2col();
    cus_autoptr(cus_tensor_map) m = NULL;
    assert_ok(cus_tensor_map_create_im2col(buf, &p, &m));
    cus_fake_tensor_map d;
    assert_true(cus_fake_tensor_map_decode(cus_tensor_map_get(m), &d));
    assert_true(d.im2col);
    assert_int_equal(d.rank, 4);
    assert_int_equal(d.pixel_box_lower[0], -1);
    assert_int_equal(d.pixel_box_upper[1], -1);
    assert_int_equal(d.channels_per_pixel, 16);
    assert_int_equal(d.pixels_per_column, 64);
    /* Each im2col rule. */
    cus_tensor_map_params q;
    cus_tensor_map *out = SENTINEL_PTR(out);
#define IM2COL_REFUSED(change, msg)                                            \
    do {                                                                       \
        q = params_im2col();                                                   \
        change;                                                                \
        unsigned long calls_ = cus_fake_call_count();                          \
        assert_status(cus_tensor_map_create_im2col(buf, &q, &out), CUS_ERROR_INVALID_ARGUMENT); \
        assert_contains(cus_last_error_message(), msg);                        \
        assert_no_calls_since(calls_);                                         \
        assert_ptr_equal(out, SENTINEL_PTR(out));                              \
    } while (0)
    IM2COL_REFUSED(q.rank = 2, "rank 2 is outside 1..5 (3..5 for im2col)");
    IM2COL_REFUSED(q.pixel_box_lower[1] = -129, "pixelBoxLowerCorner[1] = -129 is outside -128..127");
    IM2COL_REFUSED(q.pixel_box_upper[0] = 128, "pixelBoxUpperCorner[0] = 128 is outside -128..127");
    IM2COL_REFUSED((q.pixel_box_lower[0] = 5, q.pixel_box_upper[0] = -5),
                   "the pixel box is empty along dimension 1");
    IM2COL_REFUSED(q.channels_per_pixel = 257, "channelsPerPixel = 257 is outside 1..256");
    IM2COL_REFUSED(q.pixels_per_column = 1025, "pixelsPerColumn = 1025 is outside 1..1024");
    IM2COL_REFUSED(q.pixels_per_column = 0, "pixelsPerColumn = 0 is outside 1..1024");
    IM2COL_REFUSED((q.swizzle = CU_TENSOR_MAP_SWIZZLE_32B, q.channels_per_pixel = 32),
                   "channelsPerPixel * element size = 64 bytes exceeds the 32-byte swizzle span");
    /* rank 3 and 5: the corners' ranges. */
    q = params_im2col();
    q.rank = 3;
    q.global_strides[1] = 320;
    q.pixel_box_lower[0] = -32768;
    q.pixel_box_upper[0] = 32767;
    cus_autoptr(cus_tensor_map) m3 = NULL;
    assert_ok(cus_tensor_map_create_im2col(buf, &q, &m3));
    IM2COL_REFUSED((q.rank = 5, q.global_dim[4] = 1, q.global_strides[3] = 6400,
                    q.pixel_box_lower[2] = -17),
                   "pixelBoxLowerCorner[2] = -17 is outside -16..15");
}

static void test_rebind(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_autoptr(cus_buffer) a = new_buf(c, 64 * 16 * 4);
    cus_autoptr(cus_buffer) b = new_buf(c, 64 * 16 * 4 + 32);
    cus_tensor_map_params p = params_2d(64, 16, 256);
    cus_autoptr(cus_tensor_map) m = NULL;
    assert_ok(cus_tensor_map_create_tiled(a, &p, &m));
    cus_tensor_map *r = NULL;
    unsigned long calls = cus_fake_call_count();
    assert_ok(cus_tensor_map_rebind(m, b, 32, &r));
    assert_calls_since(calls, "cuCtxPushCurrent", "cuTensorMapReplaceAddress", "cuCtxPopCurrent");
    cus_fake_tensor_map d;
    assert_true(cus_fake_tensor_map_decode(cus_tensor_map_get(r), &d));
    assert_true(d.address == cus_buffer_ptr(b) + 32);
    assert_int_equal(d.global_dim[0], 64);
    assert_ptr_equal(cus_tensor_map_buffer(r), b);
    assert_int_equal(cus_tensor_map_params_of(r)->offset, 32);
    /* The original is unchanged. */
    assert_true(cus_fake_tensor_map_decode(cus_tensor_map_get(m), &d));
    assert_true(d.address == cus_buffer_ptr(a));
    r = cus_tensor_map_unref(r);
    cus_tensor_map *out = SENTINEL_PTR(out);
    calls = cus_fake_call_count();
    assert_status(cus_tensor_map_rebind(m, b, 8, &out), CUS_ERROR_INVALID_ARGUMENT);
    assert_contains(cus_last_error_message(), "is not 16-byte aligned");
    assert_status(cus_tensor_map_rebind(m, b, 48, &out), CUS_ERROR_INVALID_ARGUMENT);
    assert_contains(cus_last_error_message(), "the tensor's extent passes the buffer's end");
    assert_status(cus_tensor_map_rebind(NULL, b, 0, &out), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_tensor_map_rebind(m, NULL, 0, &out), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_tensor_map_rebind(m, b, 0, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_no_calls_since(calls);
    assert_ptr_equal(out, SENTINEL_PTR(out));
}

static void test_null_args(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_autoptr(cus_buffer) buf = new_buf(c, 4096);
    cus_tensor_map_params p = params_2d(64, 16, 256);
    cus_tensor_map *m = SENTINEL_PTR(m);
    assert_status(cus_tensor_map_create_tiled(NULL, &p, &m), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_tensor_map_create_tiled(buf, NULL, &m), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_tensor_map_create_tiled(buf, &p, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_tensor_map_create_im2col(NULL, &p, &m), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_tensor_map_create_im2col(buf, NULL, &m), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_tensor_map_create_im2col(buf, &p, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_ptr_equal(m, SENTINEL_PTR(m));
}

/* Every driver call's failure: the status and record, nothing changed. */
static void test_faults(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_autoptr(cus_buffer) buf = new_buf(c, 6400);
    cus_tensor_map_params p = params_2d(64, 16, 256);
    cus_tensor_map *m = SENTINEL_PTR(m);
    assert_fault_surfaces("cuTensorMapEncodeTiled", cus_tensor_map_create_tiled(buf, &p, &m));
    assert_string_equal(cus_last_error()->driver_call, "cuTensorMapEncodeTiled");
    cus_tensor_map_params q = params_im2col();
    assert_fault_surfaces("cuTensorMapEncodeIm2col", cus_tensor_map_create_im2col(buf, &q, &m));
    assert_string_equal(cus_last_error()->driver_call, "cuTensorMapEncodeIm2col");
    assert_ptr_equal(m, SENTINEL_PTR(m));
    cus_autoptr(cus_tensor_map) good = NULL;
    assert_ok(cus_tensor_map_create_tiled(buf, &p, &good));
    assert_fault_surfaces("cuTensorMapReplaceAddress", cus_tensor_map_rebind(good, buf, 16, &m));
    assert_string_equal(cus_last_error()->driver_call, "cuTensorMapReplaceAddress");
    assert_ptr_equal(m, SENTINEL_PTR(m));
    assert_int_equal(cus_context_poisoned(c), CUS_SUCCESS);
}

/* A driver without the entry points (before 12.0). */
static void test_not_supported(void **state)
{
    (void)state;
    assert_ok(cus_fake_hide_entry("cuTensorMapEncodeTiled"));
    assert_ok(cus_fake_hide_entry("cuTensorMapEncodeIm2col"));
    assert_ok(cus_fake_hide_entry("cuTensorMapReplaceAddress"));
    cus_autoptr(cus_context) c = new_ctx();
    cus_autoptr(cus_buffer) buf = new_buf(c, 6400);
    cus_tensor_map_params p = params_2d(64, 16, 256);
    cus_tensor_map *m = SENTINEL_PTR(m);
    unsigned long calls = cus_fake_call_count();
    assert_status(cus_tensor_map_create_tiled(buf, &p, &m), CUS_ERROR_NOT_SUPPORTED);
    assert_contains(cus_last_error_message(), "cuTensorMapEncodeTiled (needs 12.0)");
    cus_tensor_map_params q = params_im2col();
    assert_status(cus_tensor_map_create_im2col(buf, &q, &m), CUS_ERROR_NOT_SUPPORTED);
    assert_contains(cus_last_error_message(), "cuTensorMapEncodeIm2col (needs 12.0)");
    assert_no_calls_since(calls);
    assert_ptr_equal(m, SENTINEL_PTR(m));
}

#if defined(CUS_TEST_HAVE_KERNELS) && defined(CUS_TEST_HAVE_TMA_KERNELS)
#define W 100u /* not a multiple of the box: the edge tiles are partial */
#define H 20u

static float host_at(unsigned int x, unsigned int y)
{
    return (float)(y * 1000 + x);
}

/* A W x H tensor with rows of 416 bytes (padded to 16), filled. */
static cus_buffer *filled_tensor(cus_context *c)
{
    static float rows[H][104];
    for (unsigned int y = 0; y < H; y++)
        for (unsigned int x = 0; x < 104; x++)
            rows[y][x] = x < W ? host_at(x, y) : -1.0f;
    cus_buffer *b = new_buf(c, sizeof rows);
    assert_ok(cus_copy_to_device(b, 0, rows, sizeof rows));
    return b;
}

static void check_copy(cus_buffer *out)
{
    static float got[H][W];
    assert_ok(cus_copy_to_host(got, out, 0, sizeof got));
    for (unsigned int y = 0; y < H; y++)
        for (unsigned int x = 0; x < W; x++)
            if (got[y][x] != host_at(x, y))
                fail_msg("(%u, %u): %g, want %g", x, y, (double)got[y][x],
                         (double)host_at(x, y));
}

static void test_launch_passes_and_keeps_the_map(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_autoptr(cus_module) mod = NULL;
    assert_ok(cus_module_load_data(c, cusk_tma_fatbin, cusk_tma_fatbin_size, NULL, &mod));
    cus_autoptr(cus_function) fn = NULL;
    assert_ok(cus_module_get_function(mod, "tma_copy_tile", &fn));
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_buffer) out = new_buf(c, W * H * 4);
    cus_dim3 grid = CUS_DIM3((W + 31) / 32, (H + 7) / 8, 1);
    unsigned int shared = 32 * 8 * 4 + 128;
    cus_graph *g = NULL;
    {
        cus_autoptr(cus_buffer) tensor = filled_tensor(c);
        cus_tensor_map_params p = params_2d(W, H, 416);
        cus_autoptr(cus_tensor_map) m = NULL;
        assert_ok(cus_tensor_map_create_tiled(tensor, &p, &m));
        /* Outside a capture: the 128 bytes go to the kernel, which copies. */
        assert_ok(cus_launch(fn, grid, CUS_DIM3(32, 8, 1), shared, s, m, out, W, H, 32u, 8u));
        assert_ok(cus_stream_synchronize(s));
        cus_fake_launch l;
        assert_ok(cus_fake_last_launch(&l));
        /* At the parameter's offset: 112 on sm_90, where the parameter area
         * (0x210 in constant bank 0) is aligned up to 128 bytes. */
        size_t offset = 0, size = 0;
        assert_ok(cus_function_param_info(fn, 0, &offset, &size));
        assert_int_equal(size, sizeof(CUtensorMap));
        assert_memory_equal(l.args + offset, cus_tensor_map_get(m), sizeof(CUtensorMap));
        check_copy(out);
        /* The size check: 8 bytes for the 128-byte parameter. */
        CUdeviceptr wrong = cus_buffer_ptr(tensor);
        assert_status(cus_launch(fn, grid, 1, shared, s, wrong, out, W, H, 32u, 8u),
                      CUS_ERROR_INVALID_ARGUMENT);
        assert_contains(cus_last_error_message(), "argument 1 is 8 bytes, the kernel's parameter is 128");
        /* Captured: the graph keeps the map, and so the tensor. */
        assert_ok(cus_buffer_fill_u32_async(out, 0, 0, W * H, s)); /* s: ordered before the replay */
        cus_capture_scope(cap, s, CU_STREAM_CAPTURE_MODE_GLOBAL);
        assert_ok(cap.status);
        assert_ok(cus_launch(fn, grid, CUS_DIM3(32, 8, 1), shared, s, m, out, W, H, 32u, 8u));
        assert_ok(cus_capture_end(&cap, &g));
        assert_int_equal(cus_graph_kept_objects(g), 3); /* module, out, the map */
    }
    /* The map and the tensor were released: the graph holds them. */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY), 2);
    cus_graph_exec *e = NULL;
    assert_ok(cus_graph_instantiate(g, 0, &e));
    assert_ok(cus_graph_exec_launch(e, s));
    assert_ok(cus_stream_synchronize(s));
    check_copy(out);
    e = cus_graph_exec_unref(e);
    g = cus_graph_unref(g);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_DEVICE_MEMORY), 1);
    assert_int_equal(cus_fake_kernels_without_twin(NULL), 0);
}
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_tiled_map_holds_its_buffer),
        ENV_TEST(test_good_maps),
        ENV_TEST(test_each_rule_refused),
        ENV_TEST(test_fake_refuses),
        ENV_TEST(test_im2col),
        ENV_TEST(test_rebind),
        ENV_TEST(test_null_args),
        ENV_TEST(test_faults),
        ENV_TEST(test_not_supported),
#if defined(CUS_TEST_HAVE_KERNELS) && defined(CUS_TEST_HAVE_TMA_KERNELS)
        ENV_TEST(test_launch_passes_and_keeps_the_map),
#endif
    };
    return cmocka_run_group_tests_name("tensor_map", tests, NULL, NULL);
}
