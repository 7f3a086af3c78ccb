/* The table of every_call.h for graph_nodes.h: graphs built by hand and
 * per-node updates. Each entry builds what it needs in a graph of its own
 * (the world's graph is shared by the other entries). */
#include <stdlib.h>
#include <string.h>

#include <cuscope/graph_inspect.h>
#include <cuscope/graph_nodes.h>

#include "every_call.h"

static cus_status c_graph_create(world *w)
{
    cus_autoptr(cus_graph) g = NULL;
    EC_RETURN_OUT(cus_graph_create(w->ctx, &g), g != NULL);
}

/* A graph of w->ctx with one empty node. */
static cus_status graph_with_node(world *w, cus_graph **g, cus_graph_node *node)
{
    CUS_TRY(cus_graph_create(w->ctx, g));
    return cus_graph_add_empty(*g, NULL, 0, node);
}

static cus_status c_graph_nodes(world *w)
{
    cus_autoptr(cus_graph) g = NULL;
    cus_graph_node node, got[2];
    CUS_TRY(graph_with_node(w, &g, &node));
    size_t n = 2;
    EC_RETURN_OUT(cus_graph_nodes(g, got, &n), n == 1 && got[0].handle == node.handle);
}

static cus_status c_graph_root_nodes(world *w)
{
    cus_autoptr(cus_graph) g = NULL;
    cus_graph_node node, got[2];
    CUS_TRY(graph_with_node(w, &g, &node));
    size_t n = 2;
    EC_RETURN_OUT(cus_graph_root_nodes(g, got, &n), n == 1 && got[0].graph == g);
}

static cus_status c_graph_add_dependencies(world *w)
{
    cus_autoptr(cus_graph) g = NULL;
    cus_graph_node a, b;
    CUS_TRY(graph_with_node(w, &g, &a));
    CUS_TRY(cus_graph_add_empty(g, NULL, 0, &b));
    return cus_graph_add_dependencies(g, &a, &b, 1);
}

static cus_status c_graph_add_empty(world *w)
{
    cus_autoptr(cus_graph) g = NULL;
    CUS_TRY(cus_graph_create(w->ctx, &g));
    cus_graph_node n = {0};
    EC_RETURN_OUT(cus_graph_add_empty(g, NULL, 0, &n), n.handle != NULL);
}

static cus_status c_graph_add_kernel_node(world *w)
{
    cus_autoptr(cus_graph) g = NULL;
    CUS_TRY(cus_graph_create(w->ctx, &g));
    CUdeviceptr p = cus_buffer_ptr(w->buf);
    unsigned int n = 4;
    void *args[] = {&p, &n};
    const size_t sizes[] = {8, 4};
    cus_graph_node node = {0};
    EC_RETURN_OUT(cus_graph_add_kernel_node(g, NULL, 0, &node, w->add, CUS_DIM3(1, 1, 1),
                                            CUS_DIM3(1, 1, 1), 0, 2, args, sizes),
                  node.handle != NULL);
}

static cus_status c_graph_add_kernel(world *w)
{
    cus_autoptr(cus_graph) g = NULL;
    CUS_TRY(cus_graph_create(w->ctx, &g));
    cus_graph_node node = {0};
    EC_RETURN_OUT(cus_graph_add_kernel(g, NULL, 0, &node, w->add, 1, 1, 0, w->buf, 4u),
                  node.handle != NULL && cus_graph_kept_objects(g) == 2);
}

static cus_status c_graph_add_library_kernel_node(world *w)
{
    cus_autoptr(cus_library) lib = NULL;
    CUS_TRY(cus_library_load_data(every_call_ptx, every_call_ptx_size, NULL, NULL, &lib));
    cus_autoptr(cus_kernel) k = NULL;
    CUS_TRY(cus_library_get_kernel(lib, "noargs", &k));
    cus_autoptr(cus_graph) g = NULL;
    CUS_TRY(cus_graph_create(w->ctx, &g));
    cus_graph_node node = {0};
    EC_RETURN_OUT(cus_graph_add_library_kernel_node(g, NULL, 0, &node, k, CUS_DIM3(1, 1, 1),
                                                    CUS_DIM3(1, 1, 1), 0, 0, NULL,
                                                    cus_launch_no_args_),
                  node.handle != NULL);
}

/* A configuration with two node attributes: a priority and a window over
 * buf2, which the graph keeps. */
static cus_launch_config node_config(world *w)
{
    return (cus_launch_config){.grid = {1, 1, 1}, .block = {1, 1, 1}, .set_priority = true,
                               .access_policy = {.buffer = w->buf2, .hit_ratio = 1.0f}};
}

static cus_status c_graph_add_kernel_node_ex(world *w)
{
    cus_autoptr(cus_graph) g = NULL;
    CUS_TRY(cus_graph_create(w->ctx, &g));
    CUdeviceptr p = cus_buffer_ptr(w->buf);
    unsigned int n = 4;
    void *args[] = {&p, &n};
    const size_t sizes[] = {8, 4};
    const cus_launch_config cfg = node_config(w);
    cus_graph_node node = {0};
    EC_RETURN_OUT(cus_graph_add_kernel_node_ex(g, NULL, 0, &node, w->add, &cfg, 2, args, sizes),
                  node.handle != NULL && cus_graph_kept_objects(g) == 2);
}

static cus_status c_graph_add_kernel_ex(world *w)
{
    cus_autoptr(cus_graph) g = NULL;
    CUS_TRY(cus_graph_create(w->ctx, &g));
    const cus_launch_config cfg = node_config(w);
    cus_graph_node node = {0};
    EC_RETURN_OUT(cus_graph_add_kernel_ex(g, NULL, 0, &node, w->add, &cfg, w->buf, 4u),
                  node.handle != NULL && cus_graph_kept_objects(g) == 3);
}

static cus_status c_graph_add_library_kernel_node_ex(world *w)
{
    cus_autoptr(cus_library) lib = NULL;
    CUS_TRY(cus_library_load_data(every_call_ptx, every_call_ptx_size, NULL, NULL, &lib));
    cus_autoptr(cus_kernel) k = NULL;
    CUS_TRY(cus_library_get_kernel(lib, "noargs", &k));
    cus_autoptr(cus_graph) g = NULL;
    CUS_TRY(cus_graph_create(w->ctx, &g));
    const cus_launch_config cfg = node_config(w);
    cus_graph_node node = {0};
    EC_RETURN_OUT(cus_graph_add_library_kernel_node_ex(g, NULL, 0, &node, k, &cfg, 0, NULL,
                                                       cus_launch_no_args_),
                  node.handle != NULL);
}

/* A graph of w->ctx with two kernel nodes, the first with node_config's
 * attributes. */
static cus_status graph_with_kernels(world *w, cus_graph **g, cus_graph_node *a, cus_graph_node *b)
{
    CUS_TRY(cus_graph_create(w->ctx, g));
    const cus_launch_config cfg = node_config(w);
    CUS_TRY(cus_graph_add_kernel_ex(*g, NULL, 0, a, w->add, &cfg, w->buf, 4u));
    return cus_graph_add_kernel(*g, NULL, 0, b, w->add, 1, 1, 0, w->buf, 4u);
}

static cus_status c_graph_kernel_node_attribute(world *w)
{
    cus_autoptr(cus_graph) g = NULL;
    cus_graph_node a, b;
    CUS_TRY(graph_with_kernels(w, &g, &a, &b));
    CUlaunchAttributeValue v;
    memset(&v, 0xff, sizeof v);
    EC_RETURN_OUT(cus_graph_kernel_node_attribute(a, CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW, &v),
                  (uintptr_t)v.accessPolicyWindow.base_ptr == cus_buffer_ptr(w->buf2));
}

static cus_status c_graph_copy_kernel_attributes(world *w)
{
    cus_autoptr(cus_graph) g = NULL;
    cus_graph_node a, b;
    CUS_TRY(graph_with_kernels(w, &g, &a, &b));
    return cus_graph_copy_kernel_attributes(b, a);
}

static cus_status c_graph_add_copy_to_device(world *w)
{
    cus_autoptr(cus_graph) g = NULL;
    CUS_TRY(cus_graph_create(w->ctx, &g));
    return cus_graph_add_copy_to_device(g, NULL, 0, NULL, w->buf, 0, w->bytes, 64);
}

static cus_status c_graph_add_copy_to_host(world *w)
{
    cus_autoptr(cus_graph) g = NULL;
    CUS_TRY(cus_graph_create(w->ctx, &g));
    return cus_graph_add_copy_to_host(g, NULL, 0, NULL, w->bytes, w->buf, 0, 64);
}

static cus_status c_graph_add_copy_device(world *w)
{
    cus_autoptr(cus_graph) g = NULL;
    CUS_TRY(cus_graph_create(w->ctx, &g));
    return cus_graph_add_copy_device(g, NULL, 0, NULL, w->buf2, 0, w->buf, 0, 64);
}

static cus_status c_graph_add_fill_u8(world *w)
{
    cus_autoptr(cus_graph) g = NULL;
    CUS_TRY(cus_graph_create(w->ctx, &g));
    return cus_graph_add_fill_u8(g, NULL, 0, NULL, w->buf, 0, 1, 64);
}

static cus_status c_graph_add_fill_u16(world *w)
{
    cus_autoptr(cus_graph) g = NULL;
    CUS_TRY(cus_graph_create(w->ctx, &g));
    return cus_graph_add_fill_u16(g, NULL, 0, NULL, w->buf, 0, 1, 32);
}

static cus_status c_graph_add_fill_u32(world *w)
{
    cus_autoptr(cus_graph) g = NULL;
    CUS_TRY(cus_graph_create(w->ctx, &g));
    return cus_graph_add_fill_u32(g, NULL, 0, NULL, w->buf, 0, 1, 16);
}

static void nothing(void *p)
{
    (void)p;
}

static cus_status c_graph_add_host_fn(world *w)
{
    cus_autoptr(cus_graph) g = NULL;
    CUS_TRY(cus_graph_create(w->ctx, &g));
    return cus_graph_add_host_fn(g, NULL, 0, NULL, nothing, NULL);
}

static cus_status c_graph_add_event_record(world *w)
{
    cus_autoptr(cus_graph) g = NULL;
    CUS_TRY(cus_graph_create(w->ctx, &g));
    return cus_graph_add_event_record(g, NULL, 0, NULL, w->event);
}

static cus_status c_graph_add_event_wait(world *w)
{
    cus_autoptr(cus_graph) g = NULL;
    CUS_TRY(cus_graph_create(w->ctx, &g));
    return cus_graph_add_event_wait(g, NULL, 0, NULL, w->event);
}

static cus_status c_graph_add_child(world *w)
{
    cus_autoptr(cus_graph) g = NULL;
    cus_autoptr(cus_graph) child = NULL;
    cus_graph_node node;
    CUS_TRY(graph_with_node(w, &child, &node));
    CUS_TRY(cus_graph_create(w->ctx, &g));
    return cus_graph_add_child(g, NULL, 0, NULL, child);
}

/* An executable graph of a kernel node, a fill node and a copy node. */
typedef struct exec_world {
    cus_graph *g;
    cus_graph_exec *e;
    cus_graph_node kernel, fill, up, down;
} exec_world;

static void exec_world_free(exec_world *x)
{
    x->e = cus_graph_exec_unref(x->e);
    x->g = cus_graph_unref(x->g);
}

static cus_status exec_world_build(world *w, exec_world *x)
{
    memset(x, 0, sizeof *x);
    CUS_TRY(cus_graph_create(w->ctx, &x->g));
    CUS_TRY(cus_graph_add_kernel(x->g, NULL, 0, &x->kernel, w->add, 1, 1, 0, w->buf, 4u));
    CUS_TRY(cus_graph_add_fill_u32(x->g, NULL, 0, &x->fill, w->buf, 0, 1, 16));
    CUS_TRY(cus_graph_add_copy_to_device(x->g, NULL, 0, &x->up, w->buf, 0, w->bytes, 64));
    CUS_TRY(cus_graph_add_copy_to_host(x->g, NULL, 0, &x->down, w->bytes, w->buf, 0, 64));
    return cus_graph_instantiate(x->g, 0, &x->e);
}

#define WITH_EXEC(w, x)                                                        \
    __attribute__((cleanup(exec_world_free))) exec_world x;                    \
    CUS_TRY(exec_world_build((w), &x))

static cus_status c_graph_exec_set_kernel_node(world *w)
{
    WITH_EXEC(w, x);
    CUdeviceptr p = cus_buffer_ptr(w->buf2);
    unsigned int n = 8;
    void *args[] = {&p, &n};
    const size_t sizes[] = {8, 4};
    return cus_graph_exec_set_kernel_node(x.e, x.kernel, w->add, CUS_DIM3(1, 1, 1),
                                          CUS_DIM3(1, 1, 1), 0, 2, args, sizes);
}

static cus_status c_graph_exec_set_kernel(world *w)
{
    WITH_EXEC(w, x);
    return cus_graph_exec_set_kernel(x.e, x.kernel, w->add, 1, 1, 0, w->buf2, 8u);
}

static cus_status c_graph_exec_set_library_kernel_node(world *w)
{
    cus_autoptr(cus_library) lib = NULL;
    CUS_TRY(cus_library_load_data(every_call_ptx, every_call_ptx_size, NULL, NULL, &lib));
    cus_autoptr(cus_kernel) k = NULL;
    CUS_TRY(cus_library_get_kernel(lib, "add", &k));
    WITH_EXEC(w, x);
    CUdeviceptr p = cus_buffer_ptr(w->buf2);
    unsigned int n = 8;
    void *args[] = {&p, &n};
    const size_t sizes[] = {8, 4};
    return cus_graph_exec_set_library_kernel_node(x.e, x.kernel, k, CUS_DIM3(1, 1, 1),
                                                  CUS_DIM3(1, 1, 1), 0, 2, args, sizes);
}

static cus_status c_graph_exec_set_copy_to_device(world *w)
{
    WITH_EXEC(w, x);
    return cus_graph_exec_set_copy_to_device(x.e, x.up, w->buf2, 0, w->bytes, 64);
}

static cus_status c_graph_exec_set_copy_to_host(world *w)
{
    WITH_EXEC(w, x);
    return cus_graph_exec_set_copy_to_host(x.e, x.down, w->bytes, w->buf2, 0, 64);
}

static cus_status c_graph_exec_set_fill_u32(world *w)
{
    WITH_EXEC(w, x);
    return cus_graph_exec_set_fill_u32(x.e, x.fill, w->buf2, 0, 7, 16);
}

static cus_status c_graph_exec_set_node_enabled(world *w)
{
    WITH_EXEC(w, x);
    return cus_graph_exec_set_node_enabled(x.e, x.kernel, false);
}

/* graph_inspect.h's changes of a node of the graph (not the executable graph). */
static cus_status c_graph_set_kernel_node(world *w)
{
    WITH_EXEC(w, x);
    CUdeviceptr p = cus_buffer_ptr(w->buf2);
    unsigned int n = 8;
    void *args[] = {&p, &n};
    const size_t sizes[] = {8, 4};
    return cus_graph_set_kernel_node(x.kernel, w->add, CUS_DIM3(1, 1, 1), CUS_DIM3(1, 1, 1), 0, 2,
                                     args, sizes);
}

static cus_status c_graph_set_kernel(world *w)
{
    WITH_EXEC(w, x);
    return cus_graph_set_kernel(x.kernel, w->add, 1, 1, 0, w->buf2, 8u);
}

static cus_status c_graph_set_library_kernel_node(world *w)
{
    cus_autoptr(cus_library) lib = NULL;
    CUS_TRY(cus_library_load_data(every_call_ptx, every_call_ptx_size, NULL, NULL, &lib));
    cus_autoptr(cus_kernel) k = NULL;
    CUS_TRY(cus_library_get_kernel(lib, "add", &k));
    WITH_EXEC(w, x);
    CUdeviceptr p = cus_buffer_ptr(w->buf2);
    unsigned int n = 8;
    void *args[] = {&p, &n};
    const size_t sizes[] = {8, 4};
    return cus_graph_set_library_kernel_node(x.kernel, k, CUS_DIM3(1, 1, 1), CUS_DIM3(1, 1, 1),
                                             0, 2, args, sizes);
}

static cus_status c_graph_set_copy_to_device(world *w)
{
    WITH_EXEC(w, x);
    return cus_graph_set_copy_to_device(x.up, w->buf2, 0, w->bytes, 64);
}

static cus_status c_graph_set_copy_to_host(world *w)
{
    WITH_EXEC(w, x);
    return cus_graph_set_copy_to_host(x.down, w->bytes, w->buf2, 0, 64);
}

static cus_status c_graph_set_fill_u32(world *w)
{
    WITH_EXEC(w, x);
    return cus_graph_set_fill_u32(x.fill, w->buf2, 0, 7, 16);
}

const every_call every_calls_graph_nodes[] = {
    {"cus_graph_create", c_graph_create, 0, NULL, NULL},
    {"cus_graph_nodes", c_graph_nodes, EC_NO_OWN_SWITCH,
     "cuGraphGetNodes needs no context (as cus_graph_node_count): no switch", NULL},
    {"cus_graph_root_nodes", c_graph_root_nodes, EC_NO_OWN_SWITCH,
     "cuGraphGetRootNodes needs no context: no switch", NULL},
    {"cus_graph_add_dependencies", c_graph_add_dependencies, 0, NULL, NULL},
    {"cus_graph_add_empty", c_graph_add_empty, 0, NULL, NULL},
    {"cus_graph_add_kernel_node", c_graph_add_kernel_node, 0, NULL, NULL},
    {"cus_graph_add_kernel", c_graph_add_kernel, 0, NULL, NULL},
    {"cus_graph_add_library_kernel_node", c_graph_add_library_kernel_node, EC_SKIP_REFUSALS,
     "loads its library first (cus_library_load_data: no context, driver calls), which a "
     "host function refuses and a poisoned context does not; the call itself refuses both "
     "(the other modes)",
     NULL},
    {"cus_graph_add_kernel_node_ex", c_graph_add_kernel_node_ex, 0, NULL, NULL},
    {"cus_graph_add_kernel_ex", c_graph_add_kernel_ex, 0, NULL, NULL},
    {"cus_graph_add_library_kernel_node_ex", c_graph_add_library_kernel_node_ex,
     EC_SKIP_REFUSALS, "loads its library first (as cus_graph_add_library_kernel_node's entry)",
     NULL},
    {"cus_graph_kernel_node_attribute", c_graph_kernel_node_attribute, EC_NO_OWN_SWITCH,
     "cuGraphKernelNodeGetAttribute needs no context: no switch", NULL},
    {"cus_graph_copy_kernel_attributes", c_graph_copy_kernel_attributes, EC_NO_OWN_SWITCH,
     "cuGraphKernelNodeCopyAttributes needs no context: no switch", NULL},
    {"cus_graph_add_copy_to_device", c_graph_add_copy_to_device, 0, NULL, NULL},
    {"cus_graph_add_copy_to_host", c_graph_add_copy_to_host, 0, NULL, NULL},
    {"cus_graph_add_copy_device", c_graph_add_copy_device, 0, NULL, NULL},
    {"cus_graph_add_fill_u8", c_graph_add_fill_u8, 0, NULL, NULL},
    {"cus_graph_add_fill_u16", c_graph_add_fill_u16, 0, NULL, NULL},
    {"cus_graph_add_fill_u32", c_graph_add_fill_u32, 0, NULL, NULL},
    {"cus_graph_add_host_fn", c_graph_add_host_fn, 0, NULL, NULL},
    {"cus_graph_add_event_record", c_graph_add_event_record, 0, NULL, NULL},
    {"cus_graph_add_event_wait", c_graph_add_event_wait, 0, NULL, NULL},
    {"cus_graph_add_child", c_graph_add_child, 0, NULL, NULL},
    {"cus_graph_exec_set_kernel_node", c_graph_exec_set_kernel_node, 0, NULL, NULL},
    {"cus_graph_exec_set_kernel", c_graph_exec_set_kernel, 0, NULL, NULL},
    {"cus_graph_exec_set_library_kernel_node", c_graph_exec_set_library_kernel_node,
     EC_SKIP_REFUSALS,
     "loads its library first (as cus_graph_add_library_kernel_node's entry)", NULL},
    {"cus_graph_exec_set_copy_to_device", c_graph_exec_set_copy_to_device, 0, NULL, NULL},
    {"cus_graph_exec_set_copy_to_host", c_graph_exec_set_copy_to_host, 0, NULL, NULL},
    {"cus_graph_exec_set_fill_u32", c_graph_exec_set_fill_u32, 0, NULL, NULL},
    {"cus_graph_exec_set_node_enabled", c_graph_exec_set_node_enabled, 0, NULL, NULL},
    {"cus_graph_set_kernel_node", c_graph_set_kernel_node, 0, NULL, NULL},
    {"cus_graph_set_kernel", c_graph_set_kernel, 0, NULL, NULL},
    {"cus_graph_set_library_kernel_node", c_graph_set_library_kernel_node, EC_SKIP_REFUSALS,
     "loads its library first (as cus_graph_add_library_kernel_node's entry)", NULL},
    {"cus_graph_set_copy_to_device", c_graph_set_copy_to_device, 0, NULL, NULL},
    {"cus_graph_set_copy_to_host", c_graph_set_copy_to_host, 0, NULL, NULL},
    {"cus_graph_set_fill_u32", c_graph_set_fill_u32, 0, NULL, NULL},
    {NULL, NULL, 0, NULL, NULL},
};
