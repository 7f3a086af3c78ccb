/* tutorial-graph-memory: memory that a graph allocates and frees itself
 * (docs/tutorial.md, "Graphs built by hand", "Memory that the graph
 * allocates").
 *
 * A scratch buffer that exists only while the graph runs: allocated by a
 * node, filled in, added to the input, copied out, freed by a node; the
 * graph is replayed with new input each time. Then an allocation that
 * outlives the launch, read by ordinary stream work after it and freed
 * outside the graph; and the device's graph memory before and after a trim.
 * Without a GPU it runs on the fake driver.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <cuscope/cuscope.h>
#include <cuscope/fake.h>

#define N 1024
#define BYTES (N * sizeof(uint32_t))

static void print_graph_memory(cus_device dev, const char *when)
{
    uint64_t used = 0, reserved = 0, high = 0;
    if (cus_device_graph_mem_attribute(dev, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &used) ||
        cus_device_graph_mem_attribute(dev, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &reserved) ||
        cus_device_graph_mem_attribute(dev, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &high))
        printf("%s: %s\n", when, cus_last_error_message());
    else
        printf("%s: graph memory used %llu bytes (at most %llu), reserved %llu\n", when,
               (unsigned long long)used, (unsigned long long)high, (unsigned long long)reserved);
}

/* in -> dst, then dst[i] += 7 through a scratch buffer of the graph's own:
 * scratch = 7 (fill), dst <- in (copy), out <- dst and scratch, freed. */
static cus_status build(cus_context *ctx, const uint32_t *in, uint32_t *out, uint32_t *seven,
                        cus_graph **graph)
{
    cus_autoptr(cus_graph) g = NULL;
    CUS_TRY(cus_graph_create(ctx, &g));
    cus_autoptr(cus_buffer) scratch = NULL;
    cus_autoptr(cus_buffer) data = NULL;
    cus_graph_node alloc[2], up, fill, down[2], freed[2];
    /* Two allocation nodes: buffers whose memory exists from the node on. */
    CUS_TRY(cus_graph_add_alloc(g, NULL, 0, &alloc[0], BYTES, &scratch));
    CUS_TRY(cus_graph_add_alloc(g, NULL, 0, &alloc[1], BYTES, &data));
    /* Ordinary nodes use them as any buffer, bounds-checked: after their
     * allocation node, before their free. */
    CUS_TRY(cus_graph_add_copy_to_device(g, &alloc[1], 1, &up, data, 0, in, BYTES));
    CUS_TRY(cus_graph_add_fill_u32(g, &alloc[0], 1, &fill, scratch, 0, 7u, N));
    CUS_TRY(cus_graph_add_copy_to_host(g, &up, 1, &down[0], out, data, 0, BYTES));
    CUS_TRY(cus_graph_add_copy_to_host(g, &fill, 1, &down[1], seven, scratch, 0, BYTES));
    /* The free nodes come after every node that uses the memory. */
    CUS_TRY(cus_graph_add_free(g, &down[1], 1, &freed[0], scratch));
    CUS_TRY(cus_graph_add_free(g, &down[0], 1, &freed[1], data));
    size_t bytes = 0;
    CUdeviceptr where = 0;
    CUS_TRY(cus_graph_alloc_node_params(alloc[0], &bytes, &where));
    printf("allocation node: %zu bytes at 0x%llx, the same address at every launch\n", bytes,
           (unsigned long long)where);
    *graph = cus_steal(&g);
    return CUS_SUCCESS;
    /* scratch and data are released here: the graph keeps them (their
     * copy and fill nodes use them); the free nodes need only the address. */
}

static cus_status run(void)
{
    cus_device dev;
    CUS_TRY(cus_device_get(0, &dev));
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(cus_context_retain_primary(dev, &ctx));
    cus_autoptr(cus_host_buffer) hin = NULL;
    cus_autoptr(cus_host_buffer) hout = NULL;
    cus_autoptr(cus_host_buffer) hseven = NULL;
    CUS_TRY(cus_host_buffer_alloc(ctx, BYTES, 0, &hin));
    CUS_TRY(cus_host_buffer_alloc(ctx, BYTES, 0, &hout));
    CUS_TRY(cus_host_buffer_alloc(ctx, BYTES, 0, &hseven));
    uint32_t *in = cus_host_buffer_data(hin), *out = cus_host_buffer_data(hout);
    uint32_t *seven = cus_host_buffer_data(hseven);
    cus_autoptr(cus_stream) stream = NULL;
    CUS_TRY(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &stream));

    cus_autoptr(cus_graph) graph = NULL;
    CUS_TRY(build(ctx, in, out, seven, &graph));
    cus_autoptr(cus_graph_exec) exec = NULL;
    CUS_TRY(cus_graph_instantiate(graph, 0, &exec));
    print_graph_memory(dev, "before the first launch");
    for (uint32_t r = 0; r < 3; r++) {
        for (uint32_t i = 0; i < N; i++)
            in[i] = r * 1000 + i;
        CUS_TRY(cus_graph_exec_launch(exec, stream));
        CUS_TRY(cus_stream_synchronize(stream));
        unsigned wrong = 0;
        for (uint32_t i = 0; i < N; i++)
            wrong += out[i] != r * 1000 + i || seven[i] != 7u;
        printf("launch %u: %s\n", r + 1, wrong ? "WRONG" : "ok");
        if (wrong)
            return CUS_ERROR_INVALID_ARGUMENT;
    }
    print_graph_memory(dev, "after three launches");
    /* A second executable graph of a graph with memory nodes: the driver's
     * rule is one at a time. */
    cus_graph_exec *second = NULL;
    cus_status st = cus_graph_instantiate(graph, 0, &second);
    printf("a second executable graph: %s\n", cus_status_name(st));
    second = cus_graph_exec_unref(second);
    exec = cus_graph_exec_unref(exec);

    /* An allocation the graph does not free: stream work after the launch
     * may read it, until it is freed in stream order. */
    cus_autoptr(cus_graph) keep = NULL;
    CUS_TRY(cus_graph_create(ctx, &keep));
    cus_autoptr(cus_buffer) result = NULL;
    cus_graph_node alloc;
    CUS_TRY(cus_graph_add_alloc(keep, NULL, 0, &alloc, BYTES, &result));
    CUS_TRY(cus_graph_add_fill_u32(keep, &alloc, 1, NULL, result, 0, 42u, N));
    CUS_TRY(cus_graph_instantiate(keep, 0, &exec));
    CUS_TRY(cus_graph_exec_launch(exec, stream));
    CUS_TRY(cus_copy_to_host_async(out, result, 0, BYTES, stream));
    CUS_TRY(cus_stream_synchronize(stream));
    printf("read after the launch: %s\n", out[0] == 42u && out[N - 1] == 42u ? "ok" : "WRONG");
    print_graph_memory(dev, "an allocation left by the launch");
    st = cus_graph_exec_launch(exec, stream);
    printf("relaunched before its free: %s\n", cus_status_name(st));
    CUS_TRY(cus_graph_allocation_free(result, stream));
    CUS_TRY(cus_stream_synchronize(stream));
    if (out[0] != 42u || out[N - 1] != 42u)
        return CUS_ERROR_INVALID_ARGUMENT;
    exec = cus_graph_exec_unref(exec);

    CUS_TRY(cus_device_graph_mem_trim(dev));
    print_graph_memory(dev, "after the trim");
    return CUS_SUCCESS;
}

int main(void)
{
    bool on_fake = false;
    if (cus_init() != CUS_SUCCESS) {
        printf("%s\n", cus_last_error_message());
        printf("no GPU here: running on cuscope's fake driver\n");
        if (cus_fake_install(NULL) != CUS_SUCCESS || cus_init() != CUS_SUCCESS) {
            fprintf(stderr, "tutorial-graph-memory: the fake driver failed: %s\n",
                    cus_last_error_message());
            return 1;
        }
        on_fake = true;
    }
    cus_status st = run();
    if (st != CUS_SUCCESS) {
        fprintf(stderr, "tutorial-graph-memory: %s (%s)\n", cus_last_error_message(),
                cus_status_name(st));
        return 1;
    }
    if (cus_debug_live_objects() != 0) {
        fprintf(stderr, "tutorial-graph-memory: %zu objects still alive\n",
                cus_debug_live_objects());
        return 1;
    }
    if (on_fake && cus_fake_uninstall() != CUS_SUCCESS) {
        fprintf(stderr, "tutorial-graph-memory: %s\n", cus_last_error_message());
        return 1;
    }
    return 0;
}
