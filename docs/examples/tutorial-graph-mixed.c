/* tutorial-graph-mixed: one graph of nodes added by hand and work captured
 * from a stream (docs/tutorial.md, "Graphs built by hand", "Mixing added and
 * captured nodes").
 *
 * Adds the uploads of x and y by hand, captures saxpy into the same graph
 * after them (cus_capture_begin_to_graph), asks the capture for its last node
 * (cus_capture_leaves), and after the capture's end adds the download of y
 * as a 2D copy node: y comes back as ROWS rows of N / ROWS floats into a host
 * matrix whose rows are padded. Everything the graph uses is released by
 * build() before the replay: the graph keeps it, captured or added. Exits 77
 * (skipped) on a driver before 12.3. Without a GPU it runs on the fake
 * driver, with a host twin of the kernel.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <cuscope/cuscope.h>
#include <cuscope/fake.h>

#include "cusk-images.h"

#define N 1024
#define ROWS 16
#define COLS (N / ROWS)
#define PADDED (COLS + 8) /* the host matrix's row, in floats */

static CUresult saxpy_on_host(const cus_fake_launch *launch, void **args, void *user)
{
    (void)user;
    float a = *(float *)args[0];
    const float *x = (const float *)(uintptr_t) * (CUdeviceptr *)args[1];
    float *y = (float *)(uintptr_t) * (CUdeviceptr *)args[2];
    unsigned long long n = *(unsigned long long *)args[3];
    unsigned long long threads = (unsigned long long)launch->grid[0] * launch->block[0];
    for (unsigned long long i = 0; i < n && i < threads; i++)
        y[i] = a * x[i] + y[i];
    return CUDA_SUCCESS;
}

/* x and y: pinned host arrays of N floats; out: ROWS rows of PADDED floats. */
static cus_status build(cus_context *ctx, cus_stream *stream, float *x, float *y, float *out,
                        cus_graph **graph)
{
    cus_autoptr(cus_module) module = NULL;
    CUS_TRY(cus_module_load_data(ctx, cusk_saxpy.fatbin, cusk_saxpy.fatbin_size, NULL, &module));
    cus_autoptr(cus_function) saxpy = NULL;
    CUS_TRY(cus_module_get_function(module, "saxpy", &saxpy));
    cus_autoptr(cus_buffer) dx = NULL;
    cus_autoptr(cus_buffer) dy = NULL;
    CUS_TRY(cus_buffer_alloc_n(ctx, float, N, &dx));
    CUS_TRY(cus_buffer_alloc_n(ctx, float, N, &dy));

    cus_autoptr(cus_graph) g = NULL;
    CUS_TRY(cus_graph_create(ctx, &g));
    cus_graph_node up[2];
    CUS_TRY(cus_graph_add_copy_to_device(g, NULL, 0, &up[0], dx, 0, x, N * sizeof(float)));
    CUS_TRY(cus_graph_add_copy_to_device(g, NULL, 0, &up[1], dy, 0, y, N * sizeof(float)));

    /* Work queued on the stream now goes into g, after both uploads. */
    cus_graph_node last[4];
    size_t nlast = 4;
    {
        cus_capture_scope_to_graph(cap, stream, g, up, 2, CU_STREAM_CAPTURE_MODE_GLOBAL);
        CUS_TRY(cap.status);
        CUS_TRY(cus_launch(saxpy, cus_grid_for(N, 256), 256, 0, stream, 3.0f, dx, dy,
                           (unsigned long long)N));
        CUS_TRY(cus_capture_leaves(&cap, last, &nlast)); /* the kernel's node */
        cus_autoptr(cus_graph) same = NULL;
        CUS_TRY(cus_capture_end(&cap, &same)); /* same == g */
    }

    /* dy, as ROWS rows of COLS floats, into the padded host matrix. */
    cus_copy_2d_desc down = {
        .dst = cus_copy_host(out, PADDED * sizeof(float)),
        .src = cus_copy_buffer(dy, 0, COLS * sizeof(float)),
        .width_bytes = COLS * sizeof(float),
        .height = ROWS,
    };
    CUS_TRY(cus_graph_add_copy_2d(g, last, nlast, NULL, &down));
    *graph = cus_steal(&g);
    return CUS_SUCCESS;
    /* module, saxpy, dx and dy are released here; the graph holds them. */
}

static cus_status run(void)
{
    cus_device dev;
    CUS_TRY(cus_device_get(0, &dev));
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(cus_context_retain_primary(dev, &ctx));
    cus_autoptr(cus_host_buffer) hx = NULL;
    cus_autoptr(cus_host_buffer) hy = NULL;
    cus_autoptr(cus_host_buffer) hout = NULL;
    CUS_TRY(cus_host_buffer_alloc(ctx, N * sizeof(float), 0, &hx));
    CUS_TRY(cus_host_buffer_alloc(ctx, N * sizeof(float), 0, &hy));
    CUS_TRY(cus_host_buffer_alloc(ctx, ROWS * PADDED * sizeof(float), 0, &hout));
    float *x = cus_host_buffer_data(hx), *y = cus_host_buffer_data(hy);
    float *out = cus_host_buffer_data(hout);
    cus_autoptr(cus_stream) stream = NULL;
    CUS_TRY(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &stream));

    cus_autoptr(cus_graph) graph = NULL;
    cus_status st = build(ctx, stream, x, y, out, &graph);
    if (st == CUS_ERROR_NOT_SUPPORTED)
        return st; /* a driver before 12.3 */
    CUS_TRY(st);
    size_t nodes = 0;
    CUS_TRY(cus_graph_node_count(graph, &nodes));
    printf("%zu nodes (2 added, 1 captured, 1 added); the graph keeps %zu objects alive\n",
           nodes, cus_graph_kept_objects(graph));
    cus_autoptr(cus_graph_exec) exec = NULL;
    CUS_TRY(cus_graph_instantiate(graph, 0, &exec));

    for (int i = 0; i < N; i++) {
        x[i] = 2.0f;
        y[i] = (float)i;
    }
    CUS_TRY(cus_graph_exec_launch(exec, stream));
    CUS_TRY(cus_stream_synchronize(stream));
    unsigned wrong = 0;
    for (int r = 0; r < ROWS; r++)
        for (int c = 0; c < COLS; c++)
            wrong += out[r * PADDED + c] != 6.0f + (float)(r * COLS + c);
    printf("replay: y = 3 * x + i, row by row into a padded matrix: %s\n",
           wrong ? "WRONG" : "ok");
    return wrong ? CUS_ERROR_INVALID_ARGUMENT : CUS_SUCCESS;
}

int main(void)
{
    bool on_fake = false;
    if (cus_init() != CUS_SUCCESS) {
        printf("%s\n", cus_last_error_message());
        printf("no GPU here: running on cuscope's fake driver, the kernel on the CPU\n");
        if (cus_fake_install(NULL) != CUS_SUCCESS ||
            cus_fake_register_kernel("saxpy", saxpy_on_host, NULL) != CUS_SUCCESS ||
            cus_init() != CUS_SUCCESS) {
            fprintf(stderr, "tutorial-graph-mixed: the fake driver failed: %s\n",
                    cus_last_error_message());
            return 1;
        }
        on_fake = true;
    }
    cus_status st = run();
    if (st == CUS_ERROR_NOT_SUPPORTED) {
        printf("%s\n", cus_last_error_message());
        return 77;
    }
    if (st != CUS_SUCCESS) {
        fprintf(stderr, "tutorial-graph-mixed: %s (%s)\n", cus_last_error_message(),
                cus_status_name(st));
        return 1;
    }
    if (cus_debug_live_objects() != 0) {
        fprintf(stderr, "tutorial-graph-mixed: %zu objects still alive\n",
                cus_debug_live_objects());
        return 1;
    }
    if (on_fake && cus_fake_uninstall() != CUS_SUCCESS) {
        fprintf(stderr, "tutorial-graph-mixed: %s\n", cus_last_error_message());
        return 1;
    }
    return 0;
}
