/* tutorial-graphs: capture work into a graph, instantiate it, replay it
 * (docs/tutorial.md, "7. Graphs").
 *
 * Captures copy-in, saxpy, copy-out on a stream into a graph, in a function
 * whose module, function and device buffers all go out of scope at its end:
 * the graph keeps them (the keep-alive rule), so the executable graph replays
 * the work with new inputs afterwards. Host memory is not kept: it is the
 * caller's to keep alive. A capture that fails midway is ended by its scope,
 * and the stream works again. Without a GPU it runs on the fake driver, with
 * a host twin of the kernel.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <cuscope/cuscope.h>
#include <cuscope/fake.h>

#include "cusk-images.h"

#define N 1024
#define A 3.0f

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

/* x and y are pinned host arrays of N floats that outlive the graph. */
static cus_status capture(cus_context *ctx, cus_stream *stream, float *x, float *y,
                          cus_graph **out)
{
    cus_autoptr(cus_module) module = NULL;
    CUS_TRY(cus_module_load_data(ctx, cusk_saxpy.fatbin, cusk_saxpy.fatbin_size, NULL, &module));
    cus_autoptr(cus_function) saxpy = NULL;
    CUS_TRY(cus_module_get_function(module, "saxpy", &saxpy));
    /* Allocated before the capture: cuMemAlloc is not allowed during one. */
    cus_autoptr(cus_buffer) dx = NULL;
    cus_autoptr(cus_buffer) dy = NULL;
    CUS_TRY(cus_buffer_alloc_n(ctx, float, N, &dx));
    CUS_TRY(cus_buffer_alloc_n(ctx, float, N, &dy));

    /* Declared last, so it ends first: on an early return the capture is
     * abandoned before the buffers are released. */
    cus_capture_scope(cap, stream, CU_STREAM_CAPTURE_MODE_GLOBAL);
    CUS_TRY(cap.status);
    CUS_TRY(cus_copy_to_device_async(dx, 0, x, N * sizeof(float), stream));
    CUS_TRY(cus_copy_to_device_async(dy, 0, y, N * sizeof(float), stream));
    CUS_TRY(cus_launch(saxpy, cus_grid_for(N, 256), 256, 0, stream, A, dx, dy,
                       (unsigned long long)N));
    CUS_TRY(cus_copy_to_host_async(y, dy, 0, N * sizeof(float), stream));
    return cus_capture_end(&cap, out);
    /* module, saxpy, dx and dy are released here; the graph holds them. */
}

/* A capture whose second call fails (a range past the buffer's end). */
static cus_status capture_that_fails(cus_context *ctx, cus_stream *stream, float *x,
                                     cus_graph **out)
{
    cus_autoptr(cus_buffer) small = NULL;
    CUS_TRY(cus_buffer_alloc(ctx, 64, &small));
    cus_capture_scope(cap, stream, CU_STREAM_CAPTURE_MODE_GLOBAL);
    CUS_TRY(cap.status);
    CUS_TRY(cus_copy_to_device_async(small, 0, x, 64, stream));
    CUS_TRY(cus_copy_to_device_async(small, 32, x, 64, stream)); /* fails: the scope ends */
    return cus_capture_end(&cap, out);
}

static cus_status run(void)
{
    cus_device dev;
    CUS_TRY(cus_device_get(0, &dev));
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(cus_context_retain_primary(dev, &ctx));
    cus_context_scope(guard, ctx);
    if (guard.status)
        return guard.status;

    cus_autoptr(cus_host_buffer) hx = NULL;
    cus_autoptr(cus_host_buffer) hy = NULL;
    CUS_TRY(cus_host_buffer_alloc(ctx, N * sizeof(float), 0, &hx));
    CUS_TRY(cus_host_buffer_alloc(ctx, N * sizeof(float), 0, &hy));
    float *x = cus_host_buffer_data(hx), *y = cus_host_buffer_data(hy);
    /* Not the legacy default stream: it cannot be captured. */
    cus_autoptr(cus_stream) stream = NULL;
    CUS_TRY(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &stream));

    cus_autoptr(cus_graph) graph = NULL;
    CUS_TRY(capture(ctx, stream, x, y, &graph));
    size_t nodes = 0;
    CUS_TRY(cus_graph_node_count(graph, &nodes));
    printf("captured %zu nodes; the graph keeps %zu objects alive (module, two buffers)\n",
           nodes, cus_graph_kept_objects(graph));

    /* The executable graph holds the graph, which holds what it uses: our
     * graph reference can go now. */
    cus_autoptr(cus_graph_exec) exec = NULL;
    CUS_TRY(cus_graph_instantiate(graph, 0, &exec));
    graph = cus_graph_unref(graph);

    for (int replay = 1; replay <= 3; replay++) {
        for (int i = 0; i < N; i++) {
            x[i] = (float)replay;
            y[i] = (float)i;
        }
        CUS_TRY(cus_graph_exec_launch(exec, stream));
        CUS_TRY(cus_stream_synchronize(stream));
        unsigned wrong = 0;
        for (int i = 0; i < N; i++)
            wrong += y[i] != A * (float)replay + (float)i;
        printf("replay %d: y = %g * %d + i %s\n", replay, A, replay, wrong ? "WRONG" : "ok");
        if (wrong)
            return CUS_ERROR_INVALID_ARGUMENT;
    }

    /* A failed capture leaves no stream in capture mode and no graph. */
    cus_graph *none = NULL;
    cus_status st = capture_that_fails(ctx, stream, x, &none);
    bool capturing = true;
    CUS_TRY(cus_stream_is_capturing(stream, &capturing));
    printf("a capture that failed: %s; the stream is %s\n  %s\n", cus_status_name(st),
           capturing ? "STILL CAPTURING" : "usable again", cus_last_error_message());
    if (st != CUS_ERROR_OUT_OF_RANGE || capturing || none)
        return CUS_ERROR_INVALID_ARGUMENT;
    CUS_TRY(cus_stream_synchronize(stream));

    /* The replays are done (synchronized above): releasing exec now releases
     * the graph, and with it the module and the buffers. */
    return CUS_SUCCESS;
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
            fprintf(stderr, "tutorial-graphs: the fake driver failed: %s\n",
                    cus_last_error_message());
            return 1;
        }
        on_fake = true;
    }

    cus_status st = run();
    if (st != CUS_SUCCESS) {
        fprintf(stderr, "tutorial-graphs: %s (%s)\n", cus_last_error_message(),
                cus_status_name(st));
        return 1;
    }
    if (cus_debug_live_objects() != 0) {
        fprintf(stderr, "tutorial-graphs: %zu objects still alive\n", cus_debug_live_objects());
        return 1;
    }
    if (on_fake && cus_fake_uninstall() != CUS_SUCCESS) {
        fprintf(stderr, "tutorial-graphs: %s\n", cus_last_error_message());
        return 1;
    }
    return 0;
}
