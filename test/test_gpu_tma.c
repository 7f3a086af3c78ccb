/* TMA on the real driver (suite gpu; exit 77 without a driver or device,
 * below compute capability 9.0, or without the TMA kernel): a float tensor
 * filled on the host, tensor maps made by cuscope for several shapes and
 * boxes (partial edge tiles, an offset into the buffer, a rebind), and
 * kernels/tma.cu's tma_copy_tile fed each map through cus_launch: the
 * copied tensor is checked element by element against the host's, and so is
 * a replay of a captured launch after the map and its tensor were released. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuscope/cuscope.h>

#include "harness/env.h"

#ifdef CUS_TEST_HAVE_TMA_KERNELS
#include "cusk-tma.h"

static int failures;

#define CHECK(expr)                                                            \
    do {                                                                       \
        cus_status st_ = (expr);                                               \
        if (st_ != CUS_SUCCESS) {                                              \
            printf("FAIL %s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #expr,    \
                   cus_status_name(st_), cus_last_error_message());            \
            failures++;                                                        \
            return;                                                            \
        }                                                                      \
    } while (0)

static float value_at(unsigned int x, unsigned int y)
{
    return (float)y * 4096.0f + (float)x;
}

/* Copies a w x h tensor (rows of `pitch` bytes, at `offset` in its buffer)
 * tile by tile, box_w x box_h, and compares; graph: also captures the
 * launch, releases the map and tensor, replays and compares again. */
static void copy_case(cus_context *c, cus_function *fn, unsigned int w, unsigned int h,
                      size_t pitch, size_t offset, unsigned int box_w, unsigned int box_h,
                      bool graph)
{
    size_t bytes = offset + pitch * h;
    float *host = calloc(1, bytes);
    float *got = calloc((size_t)w * h, sizeof *got);
    if (!host || !got) {
        printf("FAIL: out of host memory\n");
        failures++;
        free(host);
        free(got);
        return;
    }
    for (unsigned int y = 0; y < h; y++)
        for (unsigned int x = 0; x < w; x++)
            ((float *)((char *)host + offset + y * pitch))[x] = value_at(x, y);
    cus_autoptr(cus_stream) s = NULL;
    cus_autoptr(cus_buffer) out = NULL;
    cus_autoptr(cus_graph) g = NULL;
    cus_status st = CUS_SUCCESS;
    cus_dim3 grid = CUS_DIM3((w + box_w - 1) / box_w, (h + box_h - 1) / box_h, 1);
    unsigned int shared = box_w * box_h * 4 + 128;
    do {
        if ((st = cus_stream_create(c, CU_STREAM_NON_BLOCKING, 0, &s)) ||
            (st = cus_buffer_alloc(c, (size_t)w * h * 4, &out)))
            break;
        cus_autoptr(cus_buffer) tensor = NULL;
        if ((st = cus_buffer_alloc(c, bytes, &tensor)) ||
            (st = cus_copy_to_device(tensor, 0, host, bytes)))
            break;
        cus_tensor_map_params p = {
            .data_type = CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
            .rank = 2,
            .offset = offset,
            .global_dim = {w, h},
            .global_strides = {pitch},
            .box_dim = {box_w, box_h},
        };
        cus_autoptr(cus_tensor_map) m = NULL;
        if ((st = cus_tensor_map_create_tiled(tensor, &p, &m)) ||
            (st = cus_buffer_fill_u32_async(out, 0, 0xffffffffu, (size_t)w * h, s)) ||
            (st = cus_launch(fn, grid, CUS_DIM3(32, 4, 1), shared, s, m, out, w, h, box_w,
                             box_h)) ||
            (st = cus_stream_synchronize(s)) ||
            (st = cus_copy_to_host(got, out, 0, (size_t)w * h * 4)))
            break;
        if (graph) {
            if ((st = cus_buffer_fill_u32_async(out, 0, 0xffffffffu, (size_t)w * h, s)))
                break;
            cus_capture_scope(cap, s, CU_STREAM_CAPTURE_MODE_GLOBAL);
            if ((st = cap.status))
                break;
            st = cus_launch(fn, grid, CUS_DIM3(32, 4, 1), shared, s, m, out, w, h, box_w, box_h);
            cus_status end = cus_capture_end(&cap, &g);
            if (st || (st = end))
                break;
        }
    } while (0);
    if (st) {
        printf("FAIL %ux%u pitch %zu offset %zu box %ux%u: %s\n", w, h, pitch, offset, box_w,
               box_h, cus_last_error_message());
        failures++;
        free(host);
        free(got);
        return;
    }
    unsigned long bad = 0;
    for (int pass = 0; pass < (graph ? 2 : 1); pass++) {
        if (pass == 1) {
            /* The map and the tensor are gone: the graph keeps them. */
            cus_autoptr(cus_graph_exec) e = NULL;
            memset(got, 0, (size_t)w * h * 4);
            if ((st = cus_graph_instantiate(g, 0, &e)) || (st = cus_graph_exec_launch(e, s)) ||
                (st = cus_stream_synchronize(s)) ||
                (st = cus_copy_to_host(got, out, 0, (size_t)w * h * 4))) {
                printf("FAIL replay: %s\n", cus_last_error_message());
                failures++;
                break;
            }
        }
        for (unsigned int y = 0; y < h; y++)
            for (unsigned int x = 0; x < w; x++)
                if (got[(size_t)y * w + x] != value_at(x, y) && bad++ < 5)
                    printf("FAIL %ux%u box %ux%u%s: (%u, %u) = %g, want %g\n", w, h, box_w,
                           box_h, pass ? " (replay)" : "", x, y,
                           (double)got[(size_t)y * w + x], (double)value_at(x, y));
    }
    if (bad)
        failures++;
    else
        printf("ok %ux%u floats, pitch %zu, offset %zu, box %ux%u%s\n", w, h, pitch, offset,
               box_w, box_h, graph ? ", and a replay after release" : "");
    free(host);
    free(got);
}

static void rebind_case(cus_context *c, cus_function *fn)
{
    enum { W = 64, H = 32 };
    static float a[H][W], b[H][W], got[H][W];
    for (unsigned int y = 0; y < H; y++)
        for (unsigned int x = 0; x < W; x++) {
            a[y][x] = value_at(x, y);
            b[y][x] = -value_at(x, y);
        }
    cus_autoptr(cus_buffer) ba = NULL;
    cus_autoptr(cus_buffer) bb = NULL;
    cus_autoptr(cus_buffer) out = NULL;
    CHECK(cus_buffer_alloc(c, sizeof a, &ba));
    CHECK(cus_buffer_alloc(c, sizeof b, &bb));
    CHECK(cus_buffer_alloc(c, sizeof got, &out));
    CHECK(cus_copy_to_device(ba, 0, a, sizeof a));
    CHECK(cus_copy_to_device(bb, 0, b, sizeof b));
    cus_tensor_map_params p = {.data_type = CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
                               .rank = 2,
                               .global_dim = {W, H},
                               .global_strides = {W * 4},
                               .box_dim = {32, 16}};
    cus_autoptr(cus_tensor_map) ma = NULL;
    cus_autoptr(cus_tensor_map) mb = NULL;
    CHECK(cus_tensor_map_create_tiled(ba, &p, &ma));
    CHECK(cus_tensor_map_rebind(ma, bb, 0, &mb));
    CHECK(cus_launch(fn, CUS_DIM3(2, 2, 1), CUS_DIM3(32, 4, 1), 32 * 16 * 4 + 128, NULL, mb, out,
                     (unsigned)W, (unsigned)H, 32u, 16u));
    CHECK(cus_context_synchronize(c));
    CHECK(cus_copy_to_host(got, out, 0, sizeof got));
    if (memcmp(got, b, sizeof b) != 0) {
        printf("FAIL rebind: the copy did not read the rebound tensor\n");
        failures++;
        return;
    }
    printf("ok rebind: the rebound map reads the other buffer\n");
}

#endif

int main(void)
{
    env_require_driver_or_skip();
#ifndef CUS_TEST_HAVE_TMA_KERNELS
    printf("skipping: no TMA kernel (no nvcc at build time, or no arch >= 90 in kernel_archs)\n");
    return 77;
#else
    cus_device dev;
    int major = 0, minor = 0;
    cus_context *c = NULL;
    if (cus_device_get(0, &dev) || cus_device_compute_capability(dev, &major, &minor)) {
        printf("FAIL: no device: %s\n", cus_last_error_message());
        return 1;
    }
    if (major < 9) {
        printf("skipping: compute capability %d.%d has no TMA\n", major, minor);
        return 77;
    }
    if (cus_context_retain_primary(dev, &c)) {
        printf("FAIL: no context: %s\n", cus_last_error_message());
        return 1;
    }
    {
        cus_autoptr(cus_module) mod = NULL;
        cus_autoptr(cus_function) fn = NULL;
        if (cus_module_load_data(c, cusk_tma_fatbin, cusk_tma_fatbin_size, NULL, &mod) ||
            cus_module_get_function(mod, "tma_copy_tile", &fn)) {
            printf("FAIL: loading tma_copy_tile: %s\n", cus_last_error_message());
            failures++;
        } else {
            copy_case(c, fn, 64, 32, 256, 0, 32, 16, false);
            copy_case(c, fn, 100, 20, 416, 0, 32, 8, true);   /* partial edge tiles */
            copy_case(c, fn, 1000, 300, 4096, 64, 64, 32, false); /* an offset, a pitch */
            copy_case(c, fn, 256, 256, 1024, 0, 256, 4, true);  /* the widest box */
            rebind_case(c, fn);
        }
    }
    c = cus_context_unref(c);
    printf("%s\n", failures ? "gpu-tma: FAILED" : "gpu-tma: every tile copied by TMA matches the host");
    return failures ? 1 : 0;
#endif
}
