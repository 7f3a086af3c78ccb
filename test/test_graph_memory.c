/* Graph memory nodes (include/cuscope/graph_memory.h) on the fake driver:
 *   - alloc -> copy in -> fill -> copy out -> free, launched several times,
 *     the result checked each time; the nodes' parameters; the buffer's
 *     kind, size and keep (the graph keeps it through the nodes that use it);
 *   - a kernel on graph allocations (the saxpy twin), when kernels are built;
 *   - an allocation not freed in its graph: used by stream work after the
 *     launch, a relaunch refused while it lives, freed outside the graph
 *     (cus_graph_allocation_free) or by another graph's free node, and an
 *     executable graph instantiated with AUTO_FREE_ON_LAUNCH;
 *   - the device's graph memory: used and reserved before and after
 *     launches, frees and a trim; the high-water marks and their reset;
 *   - the driver's rules: one executable graph at a time, no child graph, no
 *     clone, no node or edge removed, a free once per graph and after its
 *     allocation, no free outside the graph of what the graph frees;
 *   - bad input (NULL, zero bytes, a buffer that is no graph allocation, of
 *     another context) and every new driver call's failure
 *     (cus_fake_fail_entry), adding, making and keeping nothing;
 *   - nothing leaked (the harness's teardown). */
#include <cuscope/graph_inspect.h>
#include <cuscope/graph_memory.h>
#include <cuscope/graph_nodes.h>

#include "graph_fixtures.h"

#define BYTES (G_N * 4)

static uint64_t graph_mem(cus_context *c, CUgraphMem_attribute attr)
{
    uint64_t v = UINT64_MAX;
    assert_ok(cus_device_graph_mem_attribute(cus_context_device(c), attr, &v));
    return v;
}

#define USED(c) graph_mem((c), CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT)
#define USED_HIGH(c) graph_mem((c), CU_GRAPH_MEM_ATTR_USED_MEM_HIGH)
#define RESERVED(c) graph_mem((c), CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT)
#define RESERVED_HIGH(c) graph_mem((c), CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH)

/* alloc -> in (H2D) -> tmp[half..] = fill -> tmp -> out (D2H) [-> free] */
static cus_status build_round_trip(cus_graph *g, const uint32_t *in, uint32_t *out,
                                   uint32_t fill, bool free_it, cus_buffer **tmp,
                                   cus_graph_node *alloc_node, cus_graph_node *free_node)
{
    cus_graph_node alloc, up, set, down;
    CUS_TRY(cus_graph_add_alloc(g, NULL, 0, &alloc, BYTES, tmp));
    CUS_TRY(cus_graph_add_copy_to_device(g, &alloc, 1, &up, *tmp, 0, in, BYTES));
    CUS_TRY(cus_graph_add_fill_u32(g, &up, 1, &set, *tmp, BYTES / 2, fill, G_N / 2));
    CUS_TRY(cus_graph_add_copy_to_host(g, &set, 1, &down, out, *tmp, 0, BYTES));
    if (alloc_node)
        *alloc_node = alloc;
    if (free_it)
        return cus_graph_add_free(g, &down, 1, free_node, *tmp);
    return CUS_SUCCESS;
}

/* --- freed in the graph ------------------------------------------------------------------------ */

static void test_round_trip_replayed(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_host_buffer) hin = new_pinned(c, BYTES);
    cus_autoptr(cus_host_buffer) hout = new_pinned(c, BYTES);
    seed(u32s(hin), 7);
    assert_ok(cus_device_graph_mem_trim(cus_context_device(c)));
    assert_int_equal(USED(c), 0);
    assert_int_equal(RESERVED(c), 0);
    cus_graph_exec *e = NULL;
    CUdeviceptr addr = 0;
    {
        cus_autoptr(cus_graph) g = NULL;
        assert_ok(cus_graph_create(c, &g));
        cus_buffer *tmp = NULL;
        cus_graph_node alloc = {0}, free_node = {0};
        assert_ok(build_round_trip(g, u32s(hin), u32s(hout), 0xc0ffeeu, true, &tmp, &alloc,
                                   &free_node));
        assert_int_equal(cus_buffer_get_kind(tmp), CUS_BUFFER_GRAPH);
        assert_int_equal(cus_buffer_size(tmp), BYTES);
        assert_ptr_equal(cus_buffer_context(tmp), c);
        addr = cus_buffer_ptr(tmp);
        assert_true(addr != 0);
        size_t bytes = 0;
        CUdeviceptr got = 0;
        assert_ok(cus_graph_alloc_node_params(alloc, &bytes, &got));
        assert_int_equal(bytes, BYTES);
        assert_true(got == addr);
        got = 0;
        assert_ok(cus_graph_alloc_node_params(alloc, NULL, &got));
        assert_true(got == addr);
        got = 0;
        assert_ok(cus_graph_free_node_ptr(free_node, &got));
        assert_true(got == addr);
        /* The getters refuse a node of the other kind (the driver's answer). */
        assert_status(cus_graph_free_node_ptr(alloc, &got), CUDA_ERROR_INVALID_VALUE);
        assert_status(cus_graph_alloc_node_params(free_node, &bytes, NULL),
                      CUDA_ERROR_INVALID_VALUE);
        /* tmp, kept once by its three nodes (the free keeps nothing) */
        assert_int_equal(cus_graph_kept_objects(g), 1);
        tmp = cus_buffer_unref(tmp);
        /* Allocations exist only while a launch runs: nothing yet. */
        assert_int_equal(USED(c), 0);
        e = instantiate(g);
    } /* the graph and the buffer go: the exec keeps them */
    for (uint32_t r = 0; r < 3; r++) {
        memset(u32s(hout), 0, BYTES);
        assert_ok(cus_graph_exec_launch(e, s));
        assert_ok(cus_stream_synchronize(s));
        assert_copies_result(u32s(hin), u32s(hout), 0xc0ffeeu);
        /* Freed in the graph: used by nothing after, reserved for the next. */
        assert_int_equal(USED(c), 0);
        assert_int_equal(USED_HIGH(c), BYTES);
        assert_int_equal(RESERVED(c), BYTES);
        assert_int_equal(RESERVED_HIGH(c), BYTES);
    }
    /* A trim gives back what no allocation uses; the marks stay until reset. */
    assert_ok(cus_device_graph_mem_trim(cus_context_device(c)));
    assert_int_equal(RESERVED(c), 0);
    assert_int_equal(RESERVED_HIGH(c), BYTES);
    assert_ok(cus_device_graph_mem_reset_high(cus_context_device(c)));
    assert_int_equal(USED_HIGH(c), 0);
    assert_int_equal(RESERVED_HIGH(c), 0);
    /* The next launch reserves again, at the same address. */
    assert_ok(cus_graph_exec_launch(e, s));
    assert_ok(cus_stream_synchronize(s));
    assert_copies_result(u32s(hin), u32s(hout), 0xc0ffeeu);
    assert_int_equal(RESERVED(c), BYTES);
    /* The allocation is its graph's (a part of it, not a handle of its own):
     * its bytes count until the graph and its exec are gone. */
    assert_int_equal(cus_fake_device_bytes_in_use(0), BYTES);
    e = cus_graph_exec_unref(e);
    assert_int_equal(cus_fake_device_bytes_in_use(0), 0);
    (void)addr;
}

#ifdef CUS_TEST_HAVE_KERNELS
/* saxpy(2, x, y) on two graph allocations; y comes back. */
static void test_kernel_on_graph_allocations(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_function) fn = NULL;
    cus_autoptr(cus_module) m = load_saxpy(c, &fn);
    assert_non_null(m);
    float in_x[G_N], in_y[G_N], out[G_N];
    for (int i = 0; i < G_N; i++) {
        in_x[i] = (float)i;
        in_y[i] = 1.0f;
    }
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_graph_create(c, &g));
    cus_autoptr(cus_buffer) x = NULL;
    cus_autoptr(cus_buffer) y = NULL;
    cus_graph_node allocs[2], ups[2], run, down, frees[2];
    assert_ok(cus_graph_add_alloc(g, NULL, 0, &allocs[0], G_N * 4, &x));
    assert_ok(cus_graph_add_alloc(g, NULL, 0, &allocs[1], G_N * 4, &y));
    assert_ok(cus_graph_add_copy_to_device(g, &allocs[0], 1, &ups[0], x, 0, in_x, G_N * 4));
    assert_ok(cus_graph_add_copy_to_device(g, &allocs[1], 1, &ups[1], y, 0, in_y, G_N * 4));
    assert_ok(cus_graph_add_kernel(g, ups, 2, &run, fn, cus_grid_for(G_N, 32), 32, 0, 2.0f, x, y,
                                   (unsigned long long)G_N));
    assert_ok(cus_graph_add_copy_to_host(g, &run, 1, &down, out, y, 0, G_N * 4));
    assert_ok(cus_graph_add_free(g, &down, 1, &frees[0], x));
    assert_ok(cus_graph_add_free(g, &down, 1, &frees[1], y));
    /* A copy past the allocation's end is refused, as for any buffer. */
    assert_status(cus_graph_add_copy_to_host(g, &run, 1, NULL, out, y, 4, G_N * 4),
                  CUS_ERROR_OUT_OF_RANGE);
    cus_autoptr(cus_graph_exec) e = instantiate(g);
    for (int r = 0; r < 3; r++) {
        memset(out, 0, sizeof out);
        assert_ok(cus_graph_exec_launch(e, s));
        assert_ok(cus_stream_synchronize(s));
        for (int i = 0; i < G_N; i++)
            assert_true(out[i] == 2.0f * (float)i + 1.0f);
    }
    assert_int_equal(USED(c), 0);
    assert_int_equal(USED_HIGH(c), 2 * G_N * 4);
}
#endif

/* --- not freed in the graph ------------------------------------------------------------------------ */

static void test_freed_outside_the_graph(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_host_buffer) hin = new_pinned(c, BYTES);
    cus_autoptr(cus_host_buffer) hout = new_pinned(c, BYTES);
    cus_autoptr(cus_host_buffer) hafter = new_pinned(c, BYTES);
    seed(u32s(hin), 40);
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_graph_create(c, &g));
    cus_autoptr(cus_buffer) tmp = NULL;
    assert_ok(build_round_trip(g, u32s(hin), u32s(hout), 9u, false, &tmp, NULL, NULL));
    cus_graph_exec *e = instantiate(g);
    assert_ok(cus_graph_exec_launch(e, s));
    /* Stream work after the launch may use the allocation until its free. */
    assert_ok(cus_copy_to_host_async(u32s(hafter), tmp, 0, BYTES, s));
    assert_ok(cus_stream_synchronize(s));
    assert_copies_result(u32s(hin), u32s(hafter), 9u);
    assert_int_equal(USED(c), BYTES);
    /* Still allocated: the driver refuses the next launch. */
    assert_status(cus_graph_exec_launch(e, s), CUDA_ERROR_INVALID_VALUE);
    /* A trim keeps what an allocation uses. */
    assert_ok(cus_device_graph_mem_trim(cus_context_device(c)));
    assert_int_equal(RESERVED(c), BYTES);
    assert_ok(cus_graph_allocation_free(tmp, s));
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(USED(c), 0);
    assert_ok(cus_graph_exec_launch(e, s));
    assert_ok(cus_stream_synchronize(s));
    assert_copies_result(u32s(hin), u32s(hout), 9u);
    /* Freed by another graph's free node this time. */
    {
        cus_autoptr(cus_graph) g2 = NULL;
        assert_ok(cus_graph_create(c, &g2));
        assert_ok(cus_graph_add_free(g2, NULL, 0, NULL, tmp));
        cus_autoptr(cus_graph_exec) e2 = instantiate(g2);
        assert_ok(cus_graph_exec_launch(e2, s));
        assert_ok(cus_stream_synchronize(s));
        assert_int_equal(USED(c), 0);
    }
    /* One executable graph at a time: this one goes, an auto-freeing one
     * replaces it and relaunches without a free in between. */
    e = cus_graph_exec_unref(e);
    cus_autoptr(cus_graph_exec) autofree = NULL;
    assert_ok(cus_graph_instantiate(g, CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH, &autofree));
    for (int r = 0; r < 3; r++) {
        assert_ok(cus_graph_exec_launch(autofree, s));
        assert_ok(cus_stream_synchronize(s));
        assert_copies_result(u32s(hin), u32s(hout), 9u);
    }
    assert_int_equal(USED(c), BYTES);
    assert_ok(cus_graph_allocation_free(tmp, s)); /* the last launch's, before the end */
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(USED(c), 0);
    autofree = cus_graph_exec_unref(autofree);
    g = cus_graph_unref(g);
    tmp = cus_buffer_unref(tmp);
    assert_int_equal(cus_fake_device_bytes_in_use(0), 0);
}

/* --- the driver's rules ----------------------------------------------------------------------------- */

static void test_driver_rules(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_graph_create(c, &g));
    cus_autoptr(cus_buffer) a = NULL;
    cus_autoptr(cus_buffer) b = NULL;
    cus_graph_node alloc_a, alloc_b, free_a;
    assert_ok(cus_graph_add_alloc(g, NULL, 0, &alloc_a, 64, &a));
    assert_ok(cus_graph_add_alloc(g, NULL, 0, &alloc_b, 64, &b));
    assert_true(cus_buffer_ptr(a) != cus_buffer_ptr(b));
    /* A free in the allocating graph comes after the allocation. */
    assert_status(cus_graph_add_free(g, NULL, 0, NULL, a), CUDA_ERROR_INVALID_VALUE);
    assert_status(cus_graph_add_free(g, &alloc_b, 1, NULL, a), CUDA_ERROR_INVALID_VALUE);
    assert_ok(cus_graph_add_free(g, &alloc_a, 1, &free_a, a));
    /* Once per graph. */
    assert_status(cus_graph_add_free(g, &free_a, 1, NULL, a), CUDA_ERROR_INVALID_VALUE);
    /* Nodes and edges stay; no clone (graph_inspect.h). */
    assert_status(cus_graph_destroy_node(free_a), CUDA_ERROR_INVALID_VALUE);
    assert_status(cus_graph_remove_dependencies(g, &alloc_a, &free_a, 1),
                  CUDA_ERROR_INVALID_VALUE);
    cus_graph *clone = NULL;
    assert_status(cus_graph_clone(g, &clone), CUDA_ERROR_INVALID_VALUE);
    assert_null(clone);
    /* No child graph. */
    cus_autoptr(cus_graph) parent = NULL;
    assert_ok(cus_graph_create(c, &parent));
    assert_status(cus_graph_add_child(parent, NULL, 0, NULL, g), CUDA_ERROR_INVALID_VALUE);
    /* One executable graph at a time. */
    cus_autoptr(cus_graph_exec) e = instantiate(g);
    cus_graph_exec *second = NULL;
    assert_status(cus_graph_instantiate(g, 0, &second), CUDA_ERROR_INVALID_VALUE);
    assert_null(second);
    e = cus_graph_exec_unref(e);
    e = instantiate(g);
    /* b is not freed in g: a launch leaves it allocated, freed here. */
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    assert_ok(cus_graph_exec_launch(e, s));
    assert_ok(cus_graph_allocation_free(b, s));
    assert_ok(cus_stream_synchronize(s));
}

/* The fake's own answer to a free node of memory no allocation node made
 * (cuscope refuses such a buffer before the driver). */
static void test_fake_free_of_other_memory(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_buffer) plain = new_buffer(c, 64);
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_graph_create(c, &g));
    PFN_cuGraphAddMemFreeNode_v11040 add_free = NULL;
    assert_int_equal(cus_fake_get_proc_address("cuGraphAddMemFreeNode", (void **)&add_free, 11040,
                                               0, NULL),
                     0);
    CUgraphNode node = NULL;
    assert_int_equal(add_free(&node, cus_graph_handle(g), NULL, 0, cus_buffer_ptr(plain)),
                     CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(add_free(&node, cus_graph_handle(g), NULL, 0, 0), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(add_free(&node, cus_graph_handle(g), NULL, 0, cus_buffer_ptr(plain) + 8),
                     CUDA_ERROR_INVALID_VALUE);
    assert_null(node);
    size_t n = 1;
    assert_ok(cus_graph_node_count(g, &n));
    assert_int_equal(n, 0);
}

/* What a graph frees cannot be freed outside it: the driver refuses it
 * (the fake reports the misuse). */
static void test_free_outside_of_what_the_graph_frees(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_graph_create(c, &g));
    cus_autoptr(cus_buffer) a = NULL;
    cus_graph_node alloc;
    assert_ok(cus_graph_add_alloc(g, NULL, 0, &alloc, 64, &a));
    assert_ok(cus_graph_add_free(g, &alloc, 1, NULL, a));
    cus_autoptr(cus_graph_exec) e = instantiate(g);
    assert_ok(cus_graph_exec_launch(e, s));
    assert_ok(cus_stream_synchronize(s));
    assert_status(cus_graph_allocation_free(a, s), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cus_fake_misuse_count(), 1);
}

/* --- bad input and driver failures ---------------------------------------------------------------- */

static void test_bad_input(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_context) other = new_ctx();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_stream) other_s = new_stream(other, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_buffer) plain = new_buffer(c, 64);
    cus_autoptr(cus_graph) g = NULL;
    cus_autoptr(cus_graph) g_other = NULL;
    assert_ok(cus_graph_create(c, &g));
    assert_ok(cus_graph_create(other, &g_other));
    cus_autoptr(cus_buffer) elsewhere = NULL;
    assert_ok(cus_graph_add_alloc(g_other, NULL, 0, NULL, 64, &elsewhere));
    cus_graph_node stranger;
    assert_ok(cus_graph_add_empty(g_other, NULL, 0, &stranger));
    cus_buffer *buf = NULL;
    CUdeviceptr p = 0;
    size_t bytes = 0;
    uint64_t v = 0;
    unsigned long calls = cus_fake_call_count();
    assert_status(cus_graph_add_alloc(NULL, NULL, 0, NULL, 64, &buf), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_add_alloc(g, NULL, 0, NULL, 64, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_add_alloc(g, NULL, 0, NULL, 0, &buf), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_add_alloc(g, NULL, 1, NULL, 64, &buf), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_add_alloc(g, &stranger, 1, NULL, 64, &buf),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_null(buf);
    assert_status(cus_graph_add_free(NULL, NULL, 0, NULL, plain), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_add_free(g, NULL, 0, NULL, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_add_free(g, NULL, 0, NULL, plain), CUS_ERROR_INVALID_ARGUMENT);
    assert_contains(cus_last_error_message(), "no graph allocation");
    assert_status(cus_graph_add_free(g, NULL, 0, NULL, elsewhere), CUS_ERROR_CONTEXT_MISMATCH);
    assert_status(cus_graph_allocation_free(NULL, s), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_allocation_free(elsewhere, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_allocation_free(plain, s), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_allocation_free(elsewhere, s), CUS_ERROR_CONTEXT_MISMATCH);
    assert_status(cus_graph_alloc_node_params((cus_graph_node){0}, &bytes, &p),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_alloc_node_params(stranger, NULL, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_free_node_ptr((cus_graph_node){0}, &p), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_free_node_ptr(stranger, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_device_graph_mem_attribute(cus_context_device(c),
                                                 CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, NULL),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(cus_fake_call_count(), calls);
    /* The driver's refusals. */
    assert_status(cus_device_graph_mem_attribute(cus_context_device(c), (CUgraphMem_attribute)99,
                                                 &v),
                  CUDA_ERROR_INVALID_VALUE);
    assert_status(cus_device_graph_mem_trim((cus_device){99}), CUDA_ERROR_INVALID_DEVICE);
    assert_status(cus_device_graph_mem_reset_high((cus_device){99}), CUDA_ERROR_INVALID_DEVICE);
    assert_status(cus_graph_alloc_node_params(stranger, &bytes, NULL), CUDA_ERROR_INVALID_VALUE);
    size_t n = 1;
    assert_ok(cus_graph_node_count(g, &n));
    assert_int_equal(n, 0);
    assert_int_equal(cus_graph_kept_objects(g), 0);
    (void)other_s;
}

static void test_driver_failures(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_graph_create(c, &g));
    cus_device dev = cus_context_device(c);
    size_t objects = cus_debug_live_objects();
    cus_buffer *buf = NULL;
    cus_graph_node node = {0};
    assert_ok(cus_fake_fail_entry("cuGraphAddMemAllocNode", 1, FAULT, false));
    assert_status(cus_graph_add_alloc(g, NULL, 0, &node, 64, &buf), CU(FAULT));
    assert_string_equal(cus_last_error()->driver_call, "cuGraphAddMemAllocNode");
    assert_string_equal(cus_last_error()->function, "cus_graph_add_alloc");
    assert_null(buf);
    assert_null(node.handle);
    assert_int_equal(cus_debug_live_objects(), objects);
    assert_int_equal(cus_fake_device_bytes_in_use(0), 0);
    /* The graph goes on. */
    cus_autoptr(cus_buffer) a = NULL;
    cus_graph_node alloc, free_node;
    assert_ok(cus_graph_add_alloc(g, NULL, 0, &alloc, 64, &a));
#define FAILS(call, expr)                                                      \
    do {                                                                       \
        assert_ok(cus_fake_fail_entry(call, 1, FAULT, false));                 \
        assert_status((expr), CU(FAULT));                                      \
        assert_string_equal(cus_last_error()->driver_call, call);              \
    } while (0)
    FAILS("cuGraphAddMemFreeNode", cus_graph_add_free(g, &alloc, 1, &node, a));
    assert_null(node.handle);
    assert_ok(cus_graph_add_free(g, &alloc, 1, &free_node, a));
    size_t bytes = 0;
    CUdeviceptr p = 0;
    uint64_t v = 7;
    FAILS("cuGraphMemAllocNodeGetParams", cus_graph_alloc_node_params(alloc, &bytes, &p));
    FAILS("cuGraphMemFreeNodeGetParams", cus_graph_free_node_ptr(free_node, &p));
    assert_int_equal(bytes, 0);
    assert_true(p == 0);
    FAILS("cuDeviceGraphMemTrim", cus_device_graph_mem_trim(dev));
    FAILS("cuDeviceGetGraphMemAttribute",
          cus_device_graph_mem_attribute(dev, CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH, &v));
    assert_int_equal(v, 7);
    FAILS("cuDeviceSetGraphMemAttribute", cus_device_graph_mem_reset_high(dev));
    /* An allocation left by a launch: its free outside the graph fails, then works. */
    cus_autoptr(cus_graph) g2 = NULL;
    assert_ok(cus_graph_create(c, &g2));
    cus_autoptr(cus_buffer) b = NULL;
    assert_ok(cus_graph_add_alloc(g2, NULL, 0, NULL, 64, &b));
    cus_autoptr(cus_graph_exec) e = instantiate(g2);
    assert_ok(cus_graph_exec_launch(e, s));
    FAILS("cuMemFreeAsync", cus_graph_allocation_free(b, s));
    assert_ok(cus_graph_allocation_free(b, s));
    assert_ok(cus_stream_synchronize(s));
#undef FAILS
    size_t n = 0;
    assert_ok(cus_graph_node_count(g, &n));
    assert_int_equal(n, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_round_trip_replayed),
#ifdef CUS_TEST_HAVE_KERNELS
        ENV_TEST(test_kernel_on_graph_allocations),
#endif
        ENV_TEST(test_freed_outside_the_graph),
        ENV_TEST(test_driver_rules),
        ENV_TEST(test_fake_free_of_other_memory),
        cmocka_unit_test_setup_teardown(test_free_outside_of_what_the_graph_frees, env_setup,
                                        teardown_after_misuse),
        ENV_TEST(test_bad_input),
        ENV_TEST(test_driver_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
