/* tutorial-tensor-map: TMA tensor maps (docs/tutorial.md, "Tensor maps (TMA)").
 *
 * A 100 x 20 float matrix, rows padded to 416 bytes, lives in a cus_buffer.
 * A cus_tensor_map describes it for the Tensor Memory Accelerator in 32 x 8
 * boxes; kernels/tma.cu's tma_copy_tile takes the map by value (a `const
 * __grid_constant__ CUtensorMap` parameter) and copies the matrix tile by
 * tile, through shared memory, into a packed output. Then it shows a rule
 * cuscope checks before the driver, and a graph that keeps the map (and so
 * the matrix) alive after the program let go of it. Without a GPU (or on a
 * GPU below sm_90) it runs on the fake driver, with a host version of the
 * kernel that decodes the fake's tensor map.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cuscope/cuscope.h>
#include <cuscope/fake.h>

#include "cusk-tma.h"

enum { W = 100, H = 20, PITCH = 416, BOX_W = 32, BOX_H = 8 };

/* tma_copy_tile's host version, for the fake driver: each block copies its
 * box of the map's tensor (zeros past its edges, as TMA fills them). */
static CUresult tma_copy_tile_on_host(const cus_fake_launch *l, void **args, void *user)
{
    (void)user;
    CUtensorMap map;
    CUdeviceptr out_ptr;
    unsigned int width, height, box_w, box_h;
    memcpy(&map, args[0], sizeof map);
    memcpy(&out_ptr, args[1], sizeof out_ptr);
    memcpy(&width, args[2], sizeof width);
    memcpy(&height, args[3], sizeof height);
    memcpy(&box_w, args[4], sizeof box_w);
    memcpy(&box_h, args[5], sizeof box_h);
    cus_fake_tensor_map d;
    if (!cus_fake_tensor_map_decode(&map, &d) || d.rank != 2)
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    float *out = (float *)(uintptr_t)out_ptr;
    const char *src = (const char *)(uintptr_t)d.address;
    for (unsigned int by = 0; by < l->grid[1]; by++)
        for (unsigned int bx = 0; bx < l->grid[0]; bx++)
            for (unsigned int j = 0; j < box_h; j++)
                for (unsigned int i = 0; i < box_w; i++) {
                    unsigned int x = bx * box_w + i, y = by * box_h + j;
                    if (x < width && y < height)
                        memcpy(&out[y * width + x], src + y * d.global_strides[0] + x * 4, 4);
                }
    return CUDA_SUCCESS;
}

static cus_status check(cus_buffer *out, const char *what)
{
    static float got[H][W];
    CUS_TRY(cus_copy_to_host(got, out, 0, sizeof got));
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            if (got[y][x] != (float)(y * 1000 + x)) {
                printf("%s: (%d, %d) = %g: wrong\n", what, x, y, (double)got[y][x]);
                return CUS_ERROR_INVALID_ARGUMENT;
            }
    printf("%s: all %d x %d elements copied\n", what, W, H);
    return CUS_SUCCESS;
}

static cus_status run(void)
{
    cus_device dev;
    CUS_TRY(cus_device_get(0, &dev));
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(cus_context_retain_primary(dev, &ctx));
    cus_autoptr(cus_module) module = NULL;
    CUS_TRY(cus_module_load_data(ctx, cusk_tma_fatbin, cusk_tma_fatbin_size, NULL, &module));
    cus_autoptr(cus_function) copy = NULL;
    CUS_TRY(cus_module_get_function(module, "tma_copy_tile", &copy));
    cus_autoptr(cus_stream) stream = NULL;
    CUS_TRY(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &stream));
    cus_autoptr(cus_buffer) out = NULL;
    CUS_TRY(cus_buffer_alloc(ctx, W * H * sizeof(float), &out));

    /* The matrix: rows of PITCH bytes (a multiple of 16, as TMA wants). */
    static float rows[H][PITCH / sizeof(float)];
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            rows[y][x] = (float)(y * 1000 + x);
    cus_buffer *matrix = NULL;
    CUS_TRY(cus_buffer_alloc(ctx, sizeof rows, &matrix));
    cus_status st = cus_copy_to_device(matrix, 0, rows, sizeof rows);

    /* 1. The map: dimension 0 is the contiguous one; strides in bytes. */
    cus_tensor_map_params params = {
        .data_type = CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
        .rank = 2,
        .global_dim = {W, H},
        .global_strides = {PITCH},
        .box_dim = {BOX_W, BOX_H},
    };
    cus_tensor_map *map = NULL;
    if (st == CUS_SUCCESS)
        st = cus_tensor_map_create_tiled(matrix, &params, &map);
    matrix = cus_buffer_unref(matrix); /* the map holds it now */
    CUS_TRY(st);

    /* 2. The launch: the map goes by value, 128 bytes, checked against the
     * kernel's parameter like every argument. */
    cus_dim3 grid = CUS_DIM3((W + BOX_W - 1) / BOX_W, (H + BOX_H - 1) / BOX_H, 1);
    unsigned int shared = BOX_W * BOX_H * sizeof(float) + 128;
    st = cus_launch(copy, grid, CUS_DIM3(32, 4, 1), shared, stream, map, out, (unsigned)W,
                    (unsigned)H, (unsigned)BOX_W, (unsigned)BOX_H);
    if (st == CUS_SUCCESS)
        st = cus_stream_synchronize(stream);
    if (st == CUS_SUCCESS)
        st = check(out, "copied through TMA");

    /* 3. A rule broken: checked before the driver, named in the message. */
    cus_tensor_map_params bad = params;
    bad.global_strides[0] = 408; /* not a multiple of 16 */
    cus_tensor_map *refused = NULL;
    cus_status why = cus_tensor_map_create_tiled(cus_tensor_map_buffer(map), &bad, &refused);
    printf("a 408-byte stride: %s\n  %s\n", cus_status_name(why), cus_last_error_message());
    refused = cus_tensor_map_unref(refused); /* NULL: nothing was made */

    /* 4. A graph keeps the map, and so the matrix, alive. */
    cus_autoptr(cus_graph) graph = NULL;
    if (st == CUS_SUCCESS)
        st = cus_buffer_fill_u32_async(out, 0, 0, W * H, stream); /* before the replay */
    if (st == CUS_SUCCESS) {
        cus_capture_scope(cap, stream, CU_STREAM_CAPTURE_MODE_GLOBAL);
        st = cap.status;
        if (st == CUS_SUCCESS)
            st = cus_launch(copy, grid, CUS_DIM3(32, 4, 1), shared, stream, map, out,
                            (unsigned)W, (unsigned)H, (unsigned)BOX_W, (unsigned)BOX_H);
        cus_status end = cus_capture_end(&cap, &graph);
        if (st == CUS_SUCCESS)
            st = end;
    }
    map = cus_tensor_map_unref(map);
    CUS_TRY(st);
    cus_autoptr(cus_graph_exec) exec = NULL;
    CUS_TRY(cus_graph_instantiate(graph, 0, &exec));
    CUS_TRY(cus_graph_exec_launch(exec, stream));
    CUS_TRY(cus_stream_synchronize(stream));
    return check(out, "replayed after the map was released");
}

int main(void)
{
    bool on_fake = false;
    cus_device dev;
    int major = 0, minor = 0;
    if (cus_init() != CUS_SUCCESS || cus_device_get(0, &dev) != CUS_SUCCESS ||
        cus_device_compute_capability(dev, &major, &minor) != CUS_SUCCESS || major < 9) {
        if (major)
            printf("compute capability %d.%d has no TMA\n", major, minor);
        else
            printf("%s\n", cus_last_error_message());
        printf("running on cuscope's fake driver\n");
        if (cus_fake_install(NULL) != CUS_SUCCESS || cus_init() != CUS_SUCCESS ||
            cus_fake_register_kernel("tma_copy_tile", tma_copy_tile_on_host, NULL) !=
                CUS_SUCCESS) {
            fprintf(stderr, "tutorial-tensor-map: the fake driver failed: %s\n",
                    cus_last_error_message());
            return 1;
        }
        on_fake = true;
    }
    cus_status st = run();
    if (st != CUS_SUCCESS) {
        fprintf(stderr, "tutorial-tensor-map: %s (%s)\n", cus_last_error_message(),
                cus_status_name(st));
        return 1;
    }
    if (cus_debug_live_objects() != 0) {
        fprintf(stderr, "tutorial-tensor-map: %zu objects still alive\n",
                cus_debug_live_objects());
        return 1;
    }
    if (on_fake && cus_fake_uninstall() != CUS_SUCCESS) {
        fprintf(stderr, "tutorial-tensor-map: %s\n", cus_last_error_message());
        return 1;
    }
    return 0;
}
