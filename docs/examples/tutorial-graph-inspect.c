/* tutorial-graph-inspect: looking into a graph, editing it, cloning it
 * (docs/tutorial.md, "Graphs built by hand": "Inspecting, editing and
 * cloning").
 *
 * Builds fill -> copy-out -> host function in a function whose buffer goes
 * out of scope at its end, clones the graph, lets the original go, finds
 * the clone's nodes from the original's, lists their types and edges,
 * writes the clone as a DOT file (render it with: dot -Tsvg FILE), removes
 * an edge, and replays the clone with its fill value and host function
 * switched in the executable graph; then puts the clone in another graph
 * as a child node and adds a host function inside that node through its
 * own graph. Without a GPU it runs on the fake driver.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cuscope/cuscope.h>
#include <cuscope/fake.h>

#define N 256

static void count_up(void *counter)
{
    atomic_fetch_add((atomic_int *)counter, 1);
}

static const char *type_name(CUgraphNodeType t)
{
    switch (t) {
    case CU_GRAPH_NODE_TYPE_MEMSET: return "memset";
    case CU_GRAPH_NODE_TYPE_MEMCPY: return "memcpy";
    case CU_GRAPH_NODE_TYPE_HOST: return "host function";
    case CU_GRAPH_NODE_TYPE_EMPTY: return "empty";
    default: return "other";
    }
}

/* The original graph and the node values the caller wants back. */
typedef struct built {
    cus_graph *graph;
    cus_graph_node fill, down, host;
} built;

/* out_host is pinned host memory of N uint32_t that outlives the graphs. */
static cus_status build(cus_context *ctx, uint32_t *out_host, atomic_int *counter, built *out)
{
    cus_autoptr(cus_buffer) buf = NULL;
    CUS_TRY(cus_buffer_alloc_n(ctx, uint32_t, N, &buf));
    cus_autoptr(cus_graph) g = NULL;
    CUS_TRY(cus_graph_create(ctx, &g));
    CUS_TRY(cus_graph_add_fill_u32(g, NULL, 0, &out->fill, buf, 0, 7, N));
    CUS_TRY(cus_graph_add_copy_to_host(g, &out->fill, 1, &out->down, out_host, buf, 0,
                                       N * sizeof(uint32_t)));
    /* The host function after both: one edge more than it needs. */
    cus_graph_node both[2] = {out->fill, out->down};
    CUS_TRY(cus_graph_add_host_fn(g, both, 2, &out->host, count_up, counter));
    out->graph = cus_steal(&g);
    return CUS_SUCCESS; /* buf is released here: the graph keeps it */
}

static cus_status run(void)
{
    cus_device dev;
    CUS_TRY(cus_device_get(0, &dev));
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(cus_context_retain_primary(dev, &ctx));
    cus_autoptr(cus_stream) stream = NULL;
    CUS_TRY(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &stream));
    cus_autoptr(cus_host_buffer) host = NULL;
    CUS_TRY(cus_host_buffer_alloc(ctx, N * sizeof(uint32_t), 0, &host));
    uint32_t *out = cus_host_buffer_data(host);
    atomic_int first = 0, second = 0;

    /* A clone keeps what the original keeps: the original can go. */
    built b;
    CUS_TRY(build(ctx, out, &first, &b));
    cus_autoptr(cus_graph) copy = NULL;
    cus_status st = cus_graph_clone(b.graph, &copy);
    cus_graph_node fill, down, hostfn;
    if (st == CUS_SUCCESS)
        st = cus_graph_node_in_clone(copy, b.fill, &fill);
    if (st == CUS_SUCCESS)
        st = cus_graph_node_in_clone(copy, b.down, &down);
    if (st == CUS_SUCCESS)
        st = cus_graph_node_in_clone(copy, b.host, &hostfn);
    b.graph = cus_graph_unref(b.graph);
    CUS_TRY(st);

    /* What is in it. */
    size_t count = 0;
    CUS_TRY(cus_graph_node_count(copy, &count));
    printf("the clone has %zu nodes\n", count);
    const cus_graph_node nodes[3] = {fill, down, hostfn};
    for (int i = 0; i < 3; i++) {
        CUgraphNodeType t;
        CUS_TRY(cus_graph_node_type(nodes[i], &t));
        size_t deps = 0;
        st = cus_graph_node_dependencies(nodes[i], NULL, &deps);
        if (st == CUS_ERROR_NOT_SUPPORTED) { /* a driver before 12.3 */
            printf("  %s (%s)\n", type_name(t), cus_last_error_message());
            continue;
        }
        CUS_TRY(st);
        printf("  %s, after %zu node%s\n", type_name(t), deps, deps == 1 ? "" : "s");
    }

    /* What the host function node calls: the function and data given to
     * cus_graph_add_host_fn, read through the clone's node. */
    cus_host_fn fn = NULL;
    void *data = NULL;
    CUS_TRY(cus_graph_host_node_fn(hostfn, &fn, &data));
    printf("the host function node calls %s with the first counter: %s\n",
           fn == count_up ? "count_up" : "something else", data == &first ? "yes" : "no");
    if (fn != count_up || data != &first)
        return CUS_ERROR_INVALID_ARGUMENT;

    /* The DOT file: the topology, the node types; VERBOSE adds parameters. */
    char path[64];
    snprintf(path, sizeof path, "/tmp/tutorial-graph-inspect-%d.dot", (int)getpid());
    CUS_TRY(cus_graph_debug_dot(copy, path, CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE));
    FILE *f = fopen(path, "r");
    long bytes = 0;
    if (f) {
        fseek(f, 0, SEEK_END);
        bytes = ftell(f);
        fclose(f);
    }
    unlink(path);
    printf("wrote %s: %ld bytes (dot -Tsvg renders it)\n", path, bytes);
    if (bytes <= 0)
        return CUS_ERROR_INVALID_ARGUMENT;

    /* Edit: the host function needs only the copy before it. */
    size_t edges = 0;
    st = cus_graph_remove_dependencies(copy, &fill, &hostfn, 1);
    if (st == CUS_SUCCESS)
        st = cus_graph_edges(copy, NULL, NULL, &edges);
    if (st == CUS_SUCCESS)
        printf("after removing fill -> host function: %zu edges\n", edges);
    else if (st != CUS_ERROR_NOT_SUPPORTED)
        return st;

    /* Replay the clone, then switch its host function in the executable
     * graph (the graph is unchanged) and replay again. */
    cus_autoptr(cus_graph_exec) exec = NULL;
    CUS_TRY(cus_graph_instantiate(copy, 0, &exec));
    CUS_TRY(cus_graph_exec_launch(exec, stream));
    CUS_TRY(cus_stream_synchronize(stream));
    CUS_TRY(cus_graph_exec_set_host_fn(exec, hostfn, count_up, &second));
    CUS_TRY(cus_graph_exec_launch(exec, stream));
    CUS_TRY(cus_stream_synchronize(stream));
    printf("replays: first host function %d, second %d; out[0] = %u\n", atomic_load(&first),
           atomic_load(&second), out[0]);
    if (atomic_load(&first) != 1 || atomic_load(&second) != 1 || out[0] != 7 || out[N - 1] != 7)
        return CUS_ERROR_INVALID_ARGUMENT;

    /* The clone as a child node of another graph (the node gets a copy),
     * then a host function added inside the node through its own graph. */
    atomic_int inside = 0;
    cus_autoptr(cus_graph) outer = NULL;
    CUS_TRY(cus_graph_create(ctx, &outer));
    cus_graph_node sub;
    CUS_TRY(cus_graph_add_child(outer, NULL, 0, &sub, copy));
    {
        cus_autoptr(cus_graph) own = NULL;
        CUS_TRY(cus_graph_child_graph(sub, &own));
        CUS_TRY(cus_graph_add_host_fn(own, NULL, 0, NULL, count_up, &inside));
    }
    cus_autoptr(cus_graph_exec) outer_exec = NULL;
    CUS_TRY(cus_graph_instantiate(outer, 0, &outer_exec));
    CUS_TRY(cus_graph_exec_launch(outer_exec, stream));
    CUS_TRY(cus_stream_synchronize(stream));
    printf("the child node ran its own graph: first host function %d, the added one %d\n",
           atomic_load(&first), atomic_load(&inside));
    if (atomic_load(&first) != 2 || atomic_load(&inside) != 1)
        return CUS_ERROR_INVALID_ARGUMENT;
    return CUS_SUCCESS;
}

int main(void)
{
    bool on_fake = false;
    if (cus_init() != CUS_SUCCESS) {
        printf("%s\n", cus_last_error_message());
        printf("no GPU here: running on cuscope's fake driver\n");
        if (cus_fake_install(NULL) != CUS_SUCCESS || cus_init() != CUS_SUCCESS) {
            fprintf(stderr, "tutorial-graph-inspect: the fake driver failed: %s\n",
                    cus_last_error_message());
            return 1;
        }
        on_fake = true;
    }
    cus_status st = run();
    if (st != CUS_SUCCESS) {
        fprintf(stderr, "tutorial-graph-inspect: %s (%s)\n", cus_last_error_message(),
                cus_status_name(st));
        return 1;
    }
    if (cus_debug_live_objects() != 0) {
        fprintf(stderr, "tutorial-graph-inspect: %zu objects still alive\n",
                cus_debug_live_objects());
        return 1;
    }
    if (on_fake && cus_fake_uninstall() != CUS_SUCCESS) {
        fprintf(stderr, "tutorial-graph-inspect: %s\n", cus_last_error_message());
        return 1;
    }
    return 0;
}
