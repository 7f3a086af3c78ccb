/* Kernel nodes with a launch configuration (cus_graph_add_kernel_ex,
 * cus_graph_kernel_node_attribute, cus_graph_copy_kernel_attributes in
 * include/cuscope/graph_nodes.h) on the fake driver:
 *   - each attribute of the configuration is set on the node, read back as
 *     the driver holds it, and carried by every replay (the fake's launch
 *     records), with the kernel's results checked;
 *   - the window's buffer is kept alive by the graph, as an argument is;
 *   - a change of the node's parameters (graph and executable graph) keeps
 *     its attributes;
 *   - bad input refused before the driver (a stream, the programmatic
 *     fields, a value out of range, no configuration), each with nothing
 *     added, kept or noted;
 *   - the driver refusing an attribute: the node removed again, the message
 *     naming the attribute; each driver call failing in turn, and the
 *     removal failing too (the node stays, with what it uses kept);
 *   - copies between nodes of one graph, refused across graphs; a captured
 *     cus_launch_ex's attributes read and copied the same way;
 *   - nothing leaked (the harness's teardown). */
#include <cuscope/graph_inspect.h>
#include <cuscope/graph_nodes.h>

#include "graph_fixtures.h"

#ifdef CUS_TEST_HAVE_KERNELS

/* A graph of c with x and y uploaded; the caller adds the saxpy node. */
typedef struct saxpy_graph {
    cus_host_buffer *hx, *hy, *out;
    cus_buffer *x, *y;
    cus_graph *g;
    cus_graph_node up;
} saxpy_graph;

static saxpy_graph saxpy_graph_open(cus_context *c)
{
    saxpy_graph s = {.hx = new_pinned(c, G_N * 4), .hy = new_pinned(c, G_N * 4),
                     .out = new_pinned(c, G_N * 4), .x = new_buffer(c, G_N * 4),
                     .y = new_buffer(c, G_N * 4)};
    fill_floats(s.hx, 1.0f, 0.5f);
    fill_floats(s.hy, -3.0f, 0.25f);
    assert_ok(cus_graph_create(c, &s.g));
    cus_graph_node upx;
    assert_ok(cus_graph_add_copy_to_device(s.g, NULL, 0, &upx, s.x, 0,
                                           cus_host_buffer_data(s.hx), G_N * 4));
    assert_ok(cus_graph_add_copy_to_device(s.g, &upx, 1, &s.up, s.y, 0,
                                           cus_host_buffer_data(s.hy), G_N * 4));
    return s;
}

static void saxpy_graph_close(saxpy_graph *s)
{
    s->g = cus_graph_unref(s->g);
    s->x = cus_buffer_unref(s->x);
    s->y = cus_buffer_unref(s->y);
    s->hx = cus_host_buffer_unref(s->hx);
    s->hy = cus_host_buffer_unref(s->hy);
    s->out = cus_host_buffer_unref(s->out);
}

/* Replays e on st and checks out = 2x + y for every element. */
static void replay_and_check(cus_graph_exec *e, cus_stream *st, const saxpy_graph *s)
{
    memset(cus_host_buffer_data(s->out), 0, G_N * 4);
    assert_ok(cus_graph_exec_launch(e, st));
    assert_ok(cus_stream_synchronize(st));
    const float *o = cus_host_buffer_data(s->out), *px = cus_host_buffer_data(s->hx),
                *py = cus_host_buffer_data(s->hy);
    for (int i = 0; i < G_N; i++)
        assert_true(o[i] == 2.0f * px[i] + py[i]);
}

static CUlaunchAttributeValue attr(cus_graph_node n, CUlaunchAttributeID id)
{
    CUlaunchAttributeValue v;
    memset(&v, 0x5a, sizeof v);
    assert_ok(cus_graph_kernel_node_attribute(n, id, &v));
    return v;
}

static void test_config_becomes_node_attributes(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) st = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_function) fn = NULL;
    cus_autoptr(cus_module) m = load_saxpy(c, &fn);
    assert_non_null(m);
    saxpy_graph s = saxpy_graph_open(c);
    int least = 0, greatest = 0;
    assert_ok(cus_context_stream_priority_range(c, &least, &greatest));
    const cus_launch_config cfg = {
        .grid = {2, 1, 1}, .block = {32, 1, 1}, .cluster = {2, 0, 0},
        .set_priority = true, .priority = greatest,
        .cluster_policy = CU_CLUSTER_SCHEDULING_POLICY_SPREAD,
        .access_policy = {.buffer = s.x, .hit_ratio = 0.5f,
                          .hit_prop = CU_ACCESS_PROPERTY_PERSISTING,
                          .miss_prop = CU_ACCESS_PROPERTY_STREAMING},
        .set_mem_sync_domain = true, .mem_sync_domain = CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE,
    };
    cus_graph_node k, down;
    assert_ok(cus_graph_add_kernel_ex(s.g, &s.up, 1, &k, fn, &cfg, 2.0f, s.x, s.y,
                                      (unsigned long long)G_N));
    assert_ptr_equal(k.graph, s.g);
    assert_ok(cus_graph_add_copy_to_host(s.g, &k, 1, &down, cus_host_buffer_data(s.out), s.y, 0,
                                         G_N * 4));
    /* x, y and the module: the window's buffer is an argument too, kept once. */
    assert_int_equal(cus_graph_kept_objects(s.g), 3);
    assert_int_equal(cus_fake_calls_of("cuGraphKernelNodeSetAttribute"), 5);

    CUlaunchAttributeValue v = attr(k, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION);
    assert_int_equal(v.clusterDim.x, 2);
    assert_int_equal(v.clusterDim.y, 1);
    assert_int_equal(v.clusterDim.z, 1);
    assert_int_equal(attr(k, CU_LAUNCH_ATTRIBUTE_PRIORITY).priority, greatest);
    assert_int_equal(attr(k, CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE)
                         .clusterSchedulingPolicyPreference,
                     CU_CLUSTER_SCHEDULING_POLICY_SPREAD);
    v = attr(k, CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW);
    assert_true((uintptr_t)v.accessPolicyWindow.base_ptr == cus_buffer_ptr(s.x));
    assert_int_equal(v.accessPolicyWindow.num_bytes, G_N * 4);
    assert_true(v.accessPolicyWindow.hitRatio == 0.5f);
    assert_int_equal(v.accessPolicyWindow.hitProp, CU_ACCESS_PROPERTY_PERSISTING);
    assert_int_equal(v.accessPolicyWindow.missProp, CU_ACCESS_PROPERTY_STREAMING);
    assert_int_equal(attr(k, CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN).memSyncDomain,
                     CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE);
    /* Not set: the driver's default. */
    assert_int_equal(attr(k, CU_LAUNCH_ATTRIBUTE_COOPERATIVE).cooperative, 0);

    /* Every replay carries them. */
    cus_autoptr(cus_graph_exec) e = instantiate(s.g);
    for (int r = 0; r < 2; r++) {
        replay_and_check(e, st, &s);
        cus_fake_launch l;
        assert_ok(cus_fake_last_launch(&l));
        assert_string_equal(l.function, "saxpy");
        assert_ptr_equal(l.graph_exec, cus_graph_exec_handle(e));
        assert_int_equal(l.cluster[0], 2);
        assert_true(l.attributes.has_priority);
        assert_int_equal(l.attributes.priority, greatest);
        assert_int_equal(l.attributes.cluster_policy, CU_CLUSTER_SCHEDULING_POLICY_SPREAD);
        assert_true(l.attributes.has_access_policy);
        assert_int_equal(l.attributes.access_policy.num_bytes, G_N * 4);
        assert_true(l.attributes.has_mem_sync_domain);
        assert_int_equal(l.attributes.mem_sync_domain, CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE);
    }
    assert_int_equal(atomic_load(&saxpy_runs), 2);
    saxpy_graph_close(&s);
}

/* A cooperative node, and a window over a buffer no argument names: the
 * graph keeps it; released by the caller, the replays still find it. */
static void test_window_buffer_kept_and_cooperative(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) st = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_function) fn = NULL;
    cus_autoptr(cus_module) m = load_saxpy(c, &fn);
    assert_non_null(m);
    saxpy_graph s = saxpy_graph_open(c);
    cus_buffer *window = new_buffer(c, 4096);
    const cus_launch_config cfg = {
        .grid = {2, 1, 1}, .block = {32, 1, 1}, .cooperative = true,
        .access_policy = {.buffer = window, .offset = 1024, .bytes = 2048, .hit_ratio = 1.0f,
                          .hit_prop = CU_ACCESS_PROPERTY_PERSISTING},
    };
    cus_graph_node k;
    assert_ok(cus_graph_add_kernel_ex(s.g, &s.up, 1, &k, fn, &cfg, 2.0f, s.x, s.y,
                                      (unsigned long long)G_N));
    assert_ok(cus_graph_add_copy_to_host(s.g, &k, 1, NULL, cus_host_buffer_data(s.out), s.y, 0,
                                         G_N * 4));
    assert_int_equal(cus_graph_kept_objects(s.g), 4); /* x, y, the module, the window's */
    CUlaunchAttributeValue v = attr(k, CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW);
    assert_true((uintptr_t)v.accessPolicyWindow.base_ptr == cus_buffer_ptr(window) + 1024);
    assert_int_equal(v.accessPolicyWindow.num_bytes, 2048);
    assert_int_equal(attr(k, CU_LAUNCH_ATTRIBUTE_COOPERATIVE).cooperative, 1);
    size_t objects = cus_debug_live_objects();
    window = cus_buffer_unref(window);
    assert_int_equal(cus_debug_live_objects(), objects); /* the graph's reference */
    cus_autoptr(cus_graph_exec) e = instantiate(s.g);
    replay_and_check(e, st, &s);
    cus_fake_launch l;
    assert_ok(cus_fake_last_launch(&l));
    assert_true(l.cooperative);
    assert_true(l.attributes.has_access_policy);
    saxpy_graph_close(&s);
}

/* cus_graph_set_kernel and cus_graph_exec_set_kernel change the parameters;
 * the attributes stay (the driver keeps them apart from the parameters). */
static void test_parameter_changes_keep_attributes(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) st = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_function) fn = NULL;
    cus_autoptr(cus_module) m = load_saxpy(c, &fn);
    assert_non_null(m);
    saxpy_graph s = saxpy_graph_open(c);
    const cus_launch_config cfg = {.grid = {2, 1, 1}, .block = {32, 1, 1}, .cluster = {2, 1, 1},
                                   .set_mem_sync_domain = true,
                                   .mem_sync_domain = CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE};
    cus_graph_node k;
    assert_ok(cus_graph_add_kernel_ex(s.g, &s.up, 1, &k, fn, &cfg, 1.0f, s.x, s.y,
                                      (unsigned long long)G_N));
    assert_ok(cus_graph_add_copy_to_host(s.g, &k, 1, NULL, cus_host_buffer_data(s.out), s.y, 0,
                                         G_N * 4));
    /* a = 2 instead of 1: the graph's node. */
    assert_ok(cus_graph_set_kernel(k, fn, 2, 32, 0, 2.0f, s.x, s.y, (unsigned long long)G_N));
    assert_int_equal(attr(k, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION).clusterDim.x, 2);
    assert_int_equal(attr(k, CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN).memSyncDomain,
                     CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE);
    /* A shape the cluster does not divide: the driver's refusal. */
    assert_status(cus_graph_set_kernel(k, fn, 3, 32, 0, 2.0f, s.x, s.y, (unsigned long long)G_N),
                  CUDA_ERROR_INVALID_CLUSTER_SIZE);
    cus_autoptr(cus_graph_exec) e = instantiate(s.g);
    replay_and_check(e, st, &s);
    /* The executable graph's node: a new argument list, the cluster kept. */
    assert_ok(cus_graph_exec_set_kernel(e, k, fn, 2, 32, 0, 2.0f, s.x, s.y,
                                        (unsigned long long)G_N));
    replay_and_check(e, st, &s);
    cus_fake_launch l;
    assert_ok(cus_fake_last_launch(&l));
    assert_int_equal(l.cluster[0], 2);
    assert_true(l.attributes.has_mem_sync_domain);
    saxpy_graph_close(&s);
}

static void test_refused_before_the_driver(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) st = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_function) fn = NULL;
    cus_autoptr(cus_module) m = load_saxpy(c, &fn);
    assert_non_null(m);
    cus_autoptr(cus_buffer) x = new_buffer(c, G_N * 4);
    cus_autoptr(cus_event) ev = new_event(c, CU_EVENT_DISABLE_TIMING);
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_graph_create(c, &g));
    const unsigned long long n = G_N;
    cus_autoptr(cus_context) other = new_ctx();
    cus_autoptr(cus_buffer) far = new_buffer(other, 64);
    int least = 0, greatest = 0; /* read once: cuscope caches the range */
    assert_ok(cus_context_stream_priority_range(c, &least, &greatest));
    unsigned long calls = cus_fake_call_count();
    cus_launch_config cfg = {.grid = {1, 1, 1}, .block = {32, 1, 1}, .stream = st};
    cus_graph_node k = {0};
    assert_status(cus_graph_add_kernel_ex(g, NULL, 0, &k, fn, &cfg, 2.0f, x, x, n),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_contains(cus_last_error_message(), "config.stream must be NULL");
    assert_string_equal(cus_last_error()->function, "cus_graph_add_kernel_ex");
    cfg.stream = NULL;
    cfg.programmatic_serialization = true;
    assert_status(cus_graph_add_kernel_ex(g, NULL, 0, &k, fn, &cfg, 2.0f, x, x, n),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_contains(cus_last_error_message(), "programmatic dependent launch");
    cfg.programmatic_serialization = false;
    cfg.programmatic_event = ev;
    assert_status(cus_graph_add_kernel_ex(g, NULL, 0, &k, fn, &cfg, 2.0f, x, x, n),
                  CUS_ERROR_INVALID_ARGUMENT);
    cfg.programmatic_event = NULL;
    cfg.access_policy = (cus_launch_access_policy){.buffer = x, .hit_ratio = 1.5f};
    assert_status(cus_graph_add_kernel_ex(g, NULL, 0, &k, fn, &cfg, 2.0f, x, x, n),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_contains(cus_last_error_message(), "saxpy: access_policy.hit_ratio 1.5 is outside [0, 1]");
    cfg.access_policy = (cus_launch_access_policy){0};
    cfg.set_priority = true;
    cfg.priority = 1000;
    assert_status(cus_graph_add_kernel_ex(g, NULL, 0, &k, fn, &cfg, 2.0f, x, x, n),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_contains(cus_last_error_message(), "priority 1000 is outside");
    cfg.set_priority = false;
    /* the argument check of cus_launch */
    assert_status(cus_graph_add_kernel_ex(g, NULL, 0, &k, fn, &cfg, 2.0f, x, x),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_contains(cus_last_error_message(), "3 arguments given, the kernel takes 4");
    assert_status(cus_graph_add_kernel_ex(g, NULL, 0, &k, fn, NULL, 2.0f, x, x, n),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_contains(cus_last_error_message(), "no launch configuration");
    assert_status(cus_graph_add_kernel_node_ex(NULL, NULL, 0, &k, fn, &cfg, 0, NULL, NULL),
                  CUS_ERROR_INVALID_ARGUMENT);
    /* A window buffer of another context. */
    cfg.access_policy = (cus_launch_access_policy){.buffer = far, .hit_ratio = 1.0f};
    assert_status(cus_graph_add_kernel_ex(g, NULL, 0, &k, fn, &cfg, 2.0f, x, x, n),
                  CUS_ERROR_CONTEXT_MISMATCH);
    assert_int_equal(cus_fake_call_count(), calls);
    assert_null(k.handle);
    assert_int_equal(cus_graph_kept_objects(g), 0);
    /* The refusals dropped the macro's notes: this add keeps the module only. */
    cfg.access_policy = (cus_launch_access_policy){0};
    CUdeviceptr px = cus_buffer_ptr(x);
    assert_ok(cus_graph_add_kernel_ex(g, NULL, 0, &k, fn, &cfg, 2.0f, px, px, n));
    assert_int_equal(cus_graph_kept_objects(g), 1);
    assert_int_equal(cus_fake_calls_of("cuGraphKernelNodeSetAttribute"), 0);
}

/* The driver refuses an attribute: the node goes again, nothing is kept,
 * and the message names the attribute. */
static void test_driver_refuses_an_attribute(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_function) fn = NULL;
    cus_autoptr(cus_module) m = load_saxpy(c, &fn);
    assert_non_null(m);
    cus_autoptr(cus_buffer) x = new_buffer(c, G_N * 4);
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_graph_create(c, &g));
    const unsigned long long n = G_N;
    /* A cluster of 2 does not divide a grid of 3 (only the driver checks). */
    const cus_launch_config cfg = {.grid = {3, 1, 1}, .block = {32, 1, 1}, .cluster = {2, 1, 1}};
    cus_graph_node k = {0};
    assert_status(cus_graph_add_kernel_ex(g, NULL, 0, &k, fn, &cfg, 2.0f, x, x, n),
                  CUDA_ERROR_INVALID_CLUSTER_SIZE);
    assert_string_equal(cus_last_error()->driver_call, "cuGraphKernelNodeSetAttribute");
    assert_contains(cus_last_error_message(),
                    "saxpy: the driver refused the node's CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION "
                    "(attribute 1 of 1); the node was removed");
    assert_null(k.handle);
    size_t count = 1;
    assert_ok(cus_graph_node_count(g, &count));
    assert_int_equal(count, 0);
    assert_int_equal(cus_graph_kept_objects(g), 0);
}

/* Each driver call of an add failing in turn. */
static void test_driver_failures(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_function) fn = NULL;
    cus_autoptr(cus_module) m = load_saxpy(c, &fn);
    assert_non_null(m);
    cus_autoptr(cus_buffer) x = new_buffer(c, G_N * 4);
    cus_autoptr(cus_buffer) w = new_buffer(c, 256);
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_graph_create(c, &g));
    const unsigned long long n = G_N;
    const cus_launch_config cfg = {
        .grid = {2, 1, 1}, .block = {32, 1, 1}, .cluster = {2, 1, 1}, .cooperative = true,
        .access_policy = {.buffer = w, .hit_ratio = 1.0f}};
    cus_graph_node k = {0};
    size_t count = 0;
    /* the add */
    assert_ok(cus_fake_fail_entry("cuGraphAddKernelNode_v2", 1, FAULT, false));
    assert_status(cus_graph_add_kernel_ex(g, NULL, 0, &k, fn, &cfg, 2.0f, x, x, n), CU(FAULT));
    assert_string_equal(cus_last_error()->driver_call, "cuGraphAddKernelNode");
    assert_null(k.handle);
    /* each of the three attributes */
    const char *names[] = {"CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION",
                           "CU_LAUNCH_ATTRIBUTE_COOPERATIVE",
                           "CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW"};
    for (unsigned long i = 1; i <= 3; i++) {
        assert_ok(cus_fake_fail_entry("cuGraphKernelNodeSetAttribute", i, FAULT, false));
        assert_status(cus_graph_add_kernel_ex(g, NULL, 0, &k, fn, &cfg, 2.0f, x, x, n),
                      CU(FAULT));
        assert_string_equal(cus_last_error()->driver_call, "cuGraphKernelNodeSetAttribute");
        assert_contains(cus_last_error_message(), names[i - 1]);
        assert_contains(cus_last_error_message(), "the node was removed");
        assert_null(k.handle);
        assert_ok(cus_graph_node_count(g, &count));
        assert_int_equal(count, 0);
        assert_int_equal(cus_graph_kept_objects(g), 0);
    }
    /* The removal failing too: the node stays, and keeps what it uses. */
    assert_ok(cus_fake_fail_entry("cuGraphKernelNodeSetAttribute", 2, FAULT, false));
    assert_ok(cus_fake_fail_entry("cuGraphDestroyNode", 1, FAULT, false));
    assert_status(cus_graph_add_kernel_ex(g, NULL, 0, &k, fn, &cfg, 2.0f, x, x, n), CU(FAULT));
    assert_contains(cus_last_error_message(), "could not be removed");
    assert_null(k.handle);
    assert_ok(cus_graph_node_count(g, &count));
    assert_int_equal(count, 1);
    assert_int_equal(cus_graph_kept_objects(g), 3); /* the module, x, w */
    /* The context switch around the calls. */
    cus_autoptr(cus_context) other = new_ctx();
    {
        cus_context_scope(scope, other);
        assert_ok(scope.status);
        assert_ok(cus_fake_fail_entry("cuCtxPushCurrent", 1, FAULT, false));
        assert_status(cus_graph_add_kernel_ex(g, NULL, 0, &k, fn, &cfg, 2.0f, x, x, n),
                      CU(FAULT));
        assert_ok(cus_graph_node_count(g, &count));
        assert_int_equal(count, 1);
        /* the getter and the copy need no context (the H200's rule): no
         * switch, so a failing push does not touch them */
        cus_graph_node nodes[1];
        count = 1;
        assert_ok(cus_graph_nodes(g, nodes, &count));
        CUlaunchAttributeValue v;
        unsigned long calls = cus_fake_call_count();
        assert_ok(cus_graph_kernel_node_attribute(nodes[0], CU_LAUNCH_ATTRIBUTE_PRIORITY, &v));
        assert_calls_since(calls, "cuGraphKernelNodeGetAttribute");
        assert_ok(cus_fake_fail_entry("cuGraphKernelNodeGetAttribute", 1, FAULT, false));
        assert_status(cus_graph_kernel_node_attribute(nodes[0], CU_LAUNCH_ATTRIBUTE_PRIORITY, &v),
                      CU(FAULT));
        assert_string_equal(cus_last_error()->driver_call, "cuGraphKernelNodeGetAttribute");
        assert_ok(cus_fake_fail_entry("cuGraphKernelNodeCopyAttributes", 1, FAULT, false));
        assert_status(cus_graph_copy_kernel_attributes(nodes[0], nodes[0]), CU(FAULT));
        assert_string_equal(cus_last_error()->driver_call, "cuGraphKernelNodeCopyAttributes");
    }
}

static void test_copy_and_read(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_function) fn = NULL;
    cus_autoptr(cus_module) m = load_saxpy(c, &fn);
    assert_non_null(m);
    cus_autoptr(cus_buffer) x = new_buffer(c, G_N * 4);
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_graph_create(c, &g));
    const unsigned long long n = G_N;
    int least = 0, greatest = 0;
    assert_ok(cus_context_stream_priority_range(c, &least, &greatest));
    const cus_launch_config with = {.grid = {4, 1, 1}, .block = {32, 1, 1},
                                    .cluster = {2, 1, 1}, .set_priority = true,
                                    .priority = greatest};
    cus_graph_node a, b, empty;
    assert_ok(cus_graph_add_kernel_ex(g, NULL, 0, &a, fn, &with, 2.0f, x, x, n));
    assert_ok(cus_graph_add_kernel(g, NULL, 0, &b, fn, 4, 32, 0, 2.0f, x, x, n));
    assert_int_equal(attr(b, CU_LAUNCH_ATTRIBUTE_PRIORITY).priority, 0);
    assert_ok(cus_graph_copy_kernel_attributes(b, a));
    assert_int_equal(attr(b, CU_LAUNCH_ATTRIBUTE_PRIORITY).priority, greatest);
    assert_int_equal(attr(b, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION).clusterDim.x, 2);
    /* A node whose grid the cluster does not divide: the driver's refusal. */
    cus_graph_node odd;
    assert_ok(cus_graph_add_kernel(g, NULL, 0, &odd, fn, 3, 32, 0, 2.0f, x, x, n));
    assert_status(cus_graph_copy_kernel_attributes(odd, a), CUDA_ERROR_INVALID_CLUSTER_SIZE);
    assert_int_equal(attr(odd, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION).clusterDim.x, 0);
    /* Not a kernel node, not a node attribute: the driver's refusals. */
    assert_ok(cus_graph_add_empty(g, NULL, 0, &empty));
    CUlaunchAttributeValue v;
    assert_status(cus_graph_kernel_node_attribute(empty, CU_LAUNCH_ATTRIBUTE_PRIORITY, &v),
                  CUDA_ERROR_INVALID_VALUE);
    assert_contains(cus_last_error_message(), "CU_LAUNCH_ATTRIBUTE_PRIORITY");
    assert_status(cus_graph_kernel_node_attribute(a, CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT, &v),
                  CUDA_ERROR_INVALID_VALUE);
    assert_status(cus_graph_copy_kernel_attributes(empty, a), CUDA_ERROR_INVALID_VALUE);
    /* Bad input, before the driver. */
    unsigned long calls = cus_fake_call_count();
    assert_status(cus_graph_kernel_node_attribute(a, CU_LAUNCH_ATTRIBUTE_PRIORITY, NULL),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_kernel_node_attribute((cus_graph_node){0},
                                                  CU_LAUNCH_ATTRIBUTE_PRIORITY, &v),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_graph_copy_kernel_attributes((cus_graph_node){0}, a),
                  CUS_ERROR_INVALID_ARGUMENT);
    cus_autoptr(cus_graph) g2 = NULL;
    assert_ok(cus_graph_create(c, &g2));
    cus_graph_node far;
    assert_ok(cus_graph_add_kernel(g2, NULL, 0, &far, fn, 4, 32, 0, 2.0f, x, x, n));
    calls = cus_fake_call_count();
    assert_status(cus_graph_copy_kernel_attributes(far, a), CUS_ERROR_INVALID_ARGUMENT);
    assert_contains(cus_last_error_message(), "two graphs");
    assert_int_equal(cus_fake_call_count(), calls);
    /* A clone's nodes carry the attributes. */
    cus_autoptr(cus_graph) copy = NULL;
    assert_ok(cus_graph_clone(g, &copy));
    cus_graph_node ca;
    assert_ok(cus_graph_node_in_clone(copy, a, &ca));
    assert_int_equal(attr(ca, CU_LAUNCH_ATTRIBUTE_PRIORITY).priority, greatest);
}

/* A captured cus_launch_ex's attributes are its node's, read the same way;
 * and the captured node takes a copy of them onto a node added by hand. */
static void test_captured_launch_attributes(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_primary();
    cus_autoptr(cus_stream) st = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_function) fn = NULL;
    cus_autoptr(cus_module) m = load_saxpy(c, &fn);
    assert_non_null(m);
    cus_autoptr(cus_buffer) x = new_buffer(c, G_N * 4);
    int least = 0, greatest = 0;
    assert_ok(cus_context_stream_priority_range(c, &least, &greatest));
    const cus_launch_config cfg = {.grid = {2, 1, 1}, .block = {32, 1, 1}, .stream = st,
                                   .cluster = {2, 1, 1}, .set_priority = true,
                                   .priority = greatest};
    cus_autoptr(cus_graph) g = NULL;
    {
        cus_capture_scope(cap, st, CU_STREAM_CAPTURE_MODE_GLOBAL);
        assert_ok(cap.status);
        assert_ok(cus_launch_ex(fn, &cfg, 2.0f, x, x, (unsigned long long)G_N));
        assert_ok(cus_capture_end(&cap, &g));
    }
    cus_graph_node captured;
    size_t n = 1;
    assert_ok(cus_graph_nodes(g, &captured, &n));
    assert_int_equal(n, 1);
    assert_int_equal(attr(captured, CU_LAUNCH_ATTRIBUTE_PRIORITY).priority, greatest);
    assert_int_equal(attr(captured, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION).clusterDim.x, 2);
    cus_graph_node added;
    assert_ok(cus_graph_add_kernel(g, &captured, 1, &added, fn, 2, 32, 0, 2.0f, x, x,
                                   (unsigned long long)G_N));
    assert_ok(cus_graph_copy_kernel_attributes(added, captured));
    assert_int_equal(attr(added, CU_LAUNCH_ATTRIBUTE_PRIORITY).priority, greatest);
    cus_autoptr(cus_graph_exec) e = instantiate(g);
    assert_ok(cus_graph_exec_launch(e, st));
    assert_ok(cus_stream_synchronize(st));
    cus_fake_launch l;
    assert_ok(cus_fake_last_launch(&l));
    assert_ptr_equal(l.graph_exec, cus_graph_exec_handle(e));
    assert_int_equal(l.cluster[0], 2);
    assert_int_equal(l.attributes.priority, greatest);
    assert_int_equal(atomic_load(&saxpy_runs), 2);
}

#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
#ifdef CUS_TEST_HAVE_KERNELS
        ENV_TEST(test_config_becomes_node_attributes),
        ENV_TEST(test_window_buffer_kept_and_cooperative),
        ENV_TEST(test_parameter_changes_keep_attributes),
        ENV_TEST(test_refused_before_the_driver),
        ENV_TEST(test_driver_refuses_an_attribute),
        ENV_TEST(test_driver_failures),
        ENV_TEST(test_copy_and_read),
        ENV_TEST(test_captured_launch_attributes),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
