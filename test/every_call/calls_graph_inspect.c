/* The table of every_call.h for graph_inspect.h: graph inspection and
 * editing, and the event, host function and child graph updates. Each entry
 * builds what it needs in a graph of its own (the world's graph is shared by
 * the other entries). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuscope/graph_inspect.h>

#include "every_call.h"

/* A graph of w->ctx: a -> b (empty nodes), and a record node of w->event,
 * a wait node of it, a host function node and a child graph node, all
 * roots. */
typedef struct inspect_world {
    cus_graph *g, *child;
    cus_graph_exec *e;
    cus_graph_node a, b, rec, wait, host, sub;
} inspect_world;

static void host_noop(void *p)
{
    (void)p;
}

static void inspect_world_free(inspect_world *x)
{
    x->e = cus_graph_exec_unref(x->e);
    x->g = cus_graph_unref(x->g);
    x->child = cus_graph_unref(x->child);
}

static cus_status inspect_world_build(world *w, inspect_world *x, bool exec)
{
    memset(x, 0, sizeof *x);
    CUS_TRY(cus_graph_create(w->ctx, &x->child));
    CUS_TRY(cus_graph_add_empty(x->child, NULL, 0, NULL));
    CUS_TRY(cus_graph_create(w->ctx, &x->g));
    CUS_TRY(cus_graph_add_empty(x->g, NULL, 0, &x->a));
    CUS_TRY(cus_graph_add_empty(x->g, &x->a, 1, &x->b));
    CUS_TRY(cus_graph_add_event_record(x->g, NULL, 0, &x->rec, w->event));
    CUS_TRY(cus_graph_add_event_wait(x->g, NULL, 0, &x->wait, w->event));
    CUS_TRY(cus_graph_add_host_fn(x->g, NULL, 0, &x->host, host_noop, NULL));
    CUS_TRY(cus_graph_add_child(x->g, NULL, 0, &x->sub, x->child));
    return exec ? cus_graph_instantiate(x->g, 0, &x->e) : CUS_SUCCESS;
}

#define WITH_GRAPH(w, x, exec)                                                 \
    __attribute__((cleanup(inspect_world_free))) inspect_world x;              \
    CUS_TRY(inspect_world_build((w), &x, (exec)))

static cus_status c_graph_node_type(world *w)
{
    WITH_GRAPH(w, x, false);
    CUgraphNodeType t = CU_GRAPH_NODE_TYPE_KERNEL;
    EC_RETURN_OUT(cus_graph_node_type(x.host, &t), t == CU_GRAPH_NODE_TYPE_HOST);
}

static cus_status c_graph_node_dependencies(world *w)
{
    WITH_GRAPH(w, x, false);
    cus_graph_node got[2] = {{0}};
    size_t n = 2;
    EC_RETURN_OUT(cus_graph_node_dependencies(x.b, got, &n), n == 1 && got[0].handle == x.a.handle);
}

static cus_status c_graph_node_dependents(world *w)
{
    WITH_GRAPH(w, x, false);
    cus_graph_node got[2] = {{0}};
    size_t n = 2;
    EC_RETURN_OUT(cus_graph_node_dependents(x.a, got, &n), n == 1 && got[0].handle == x.b.handle);
}

static cus_status c_graph_edges(world *w)
{
    WITH_GRAPH(w, x, false);
    cus_graph_node from[2] = {{0}}, to[2] = {{0}};
    size_t n = 2;
    EC_RETURN_OUT(cus_graph_edges(x.g, from, to, &n),
                  n == 1 && from[0].handle == x.a.handle && to[0].handle == x.b.handle);
}

/* A graph of w->ctx: kernel nodes k1 and k2, joined (with edge) by a
 * programmatic edge. */
static cus_status kernel_pair(world *w, cus_graph **g, cus_graph_node *k1, cus_graph_node *k2,
                              bool edge)
{
    CUS_TRY(cus_graph_create(w->ctx, g));
    CUS_TRY(cus_graph_add_kernel(*g, NULL, 0, k1, w->add, 1, 1, 0, w->buf, 4u));
    CUS_TRY(cus_graph_add_kernel(*g, NULL, 0, k2, w->add, 1, 1, 0, w->buf, 4u));
    const cus_edge_kind prog = CUS_EDGE_PROGRAMMATIC;
    return edge ? cus_graph_add_edges(*g, k1, k2, &prog, 1) : CUS_SUCCESS;
}

static cus_status c_graph_add_edges(world *w)
{
    cus_autoptr(cus_graph) g = NULL;
    cus_graph_node k1, k2;
    CUS_TRY(kernel_pair(w, &g, &k1, &k2, false));
    const cus_edge_kind prog = CUS_EDGE_PROGRAMMATIC;
    return cus_graph_add_edges(g, &k1, &k2, &prog, 1);
}

static cus_status c_graph_remove_edges(world *w)
{
    cus_autoptr(cus_graph) g = NULL;
    cus_graph_node k1, k2;
    CUS_TRY(kernel_pair(w, &g, &k1, &k2, true));
    const cus_edge_kind prog = CUS_EDGE_PROGRAMMATIC;
    return cus_graph_remove_edges(g, &k1, &k2, &prog, 1);
}

static cus_status c_graph_node_dependencies_with_kinds(world *w)
{
    cus_autoptr(cus_graph) g = NULL;
    cus_graph_node k1, k2, got[2] = {{0}};
    CUS_TRY(kernel_pair(w, &g, &k1, &k2, true));
    cus_edge_kind kinds[2] = {CUS_EDGE_DEFAULT, CUS_EDGE_DEFAULT};
    size_t n = 2;
    EC_RETURN_OUT(cus_graph_node_dependencies_with_kinds(k2, got, kinds, &n),
                  n == 1 && got[0].handle == k1.handle && kinds[0] == CUS_EDGE_PROGRAMMATIC);
}

static cus_status c_graph_node_dependents_with_kinds(world *w)
{
    cus_autoptr(cus_graph) g = NULL;
    cus_graph_node k1, k2, got[2] = {{0}};
    CUS_TRY(kernel_pair(w, &g, &k1, &k2, true));
    cus_edge_kind kinds[2] = {CUS_EDGE_DEFAULT, CUS_EDGE_DEFAULT};
    size_t n = 2;
    EC_RETURN_OUT(cus_graph_node_dependents_with_kinds(k1, got, kinds, &n),
                  n == 1 && got[0].handle == k2.handle && kinds[0] == CUS_EDGE_PROGRAMMATIC);
}

static cus_status c_graph_edges_with_kinds(world *w)
{
    cus_autoptr(cus_graph) g = NULL;
    cus_graph_node k1, k2, from[2] = {{0}}, to[2] = {{0}};
    CUS_TRY(kernel_pair(w, &g, &k1, &k2, true));
    cus_edge_kind kinds[2] = {CUS_EDGE_DEFAULT, CUS_EDGE_DEFAULT};
    size_t n = 2;
    EC_RETURN_OUT(cus_graph_edges_with_kinds(g, from, to, kinds, &n),
                  n == 1 && from[0].handle == k1.handle && to[0].handle == k2.handle &&
                      kinds[0] == CUS_EDGE_PROGRAMMATIC);
}

static cus_status c_graph_event_node_event(world *w)
{
    WITH_GRAPH(w, x, false);
    cus_event *ev = NULL;
    cus_status st = cus_graph_event_node_event(x.wait, &ev);
    bool same = ev == w->event;
    cus_event_unref(ev);
    EC_RETURN_OUT(st, same);
}

static cus_status c_graph_child_graph(world *w)
{
    WITH_GRAPH(w, x, false);
    cus_graph *own = NULL;
    cus_status st = cus_graph_child_graph(x.sub, &own);
    size_t n = 0;
    if (!st)
        st = cus_graph_node_count(own, &n);
    cus_graph_unref(own);
    EC_RETURN_OUT(st, n == 1);
}

static cus_status c_graph_host_node_fn(world *w)
{
    WITH_GRAPH(w, x, false);
    cus_host_fn fn = NULL;
    void *data = w;
    EC_RETURN_OUT(cus_graph_host_node_fn(x.host, &fn, &data), fn == host_noop && !data);
}

static cus_status c_graph_node_enabled(world *w)
{
    cus_autoptr(cus_graph) g = NULL;
    CUS_TRY(cus_graph_create(w->ctx, &g));
    cus_graph_node fill;
    CUS_TRY(cus_graph_add_fill_u32(g, NULL, 0, &fill, w->buf, 0, 1, 16));
    cus_autoptr(cus_graph_exec) e = NULL;
    CUS_TRY(cus_graph_instantiate(g, 0, &e));
    bool on = false;
    EC_RETURN_OUT(cus_graph_node_enabled(e, fill, &on), on);
}

static cus_status c_graph_exec_flags(world *w)
{
    cuuint64_t flags = 1;
    EC_RETURN_OUT(cus_graph_exec_flags(w->exec, &flags), flags == 0);
}

static cus_status c_graph_debug_dot(world *w)
{
    WITH_GRAPH(w, x, false);
    char path[64];
    snprintf(path, sizeof path, "/tmp/cuscope-every-call-%d.dot", (int)getpid());
    cus_status st = cus_graph_debug_dot(x.g, path, 0);
    unlink(path);
    return st;
}

static cus_status c_graph_remove_dependencies(world *w)
{
    WITH_GRAPH(w, x, false);
    return cus_graph_remove_dependencies(x.g, &x.a, &x.b, 1);
}

static cus_status c_graph_destroy_node(world *w)
{
    WITH_GRAPH(w, x, false);
    return cus_graph_destroy_node(x.b);
}

static cus_status c_graph_clone(world *w)
{
    WITH_GRAPH(w, x, false);
    cus_autoptr(cus_graph) copy = NULL;
    EC_RETURN_OUT(cus_graph_clone(x.g, &copy), copy != NULL);
}

static cus_status c_graph_node_in_clone(world *w)
{
    WITH_GRAPH(w, x, false);
    cus_autoptr(cus_graph) copy = NULL;
    CUS_TRY(cus_graph_clone(x.g, &copy));
    cus_graph_node found = {0};
    EC_RETURN_OUT(cus_graph_node_in_clone(copy, x.b, &found),
                  found.handle != NULL && found.graph == copy);
}

static cus_status c_graph_exec_set_event_record(world *w)
{
    WITH_GRAPH(w, x, true);
    return cus_graph_exec_set_event_record(x.e, x.rec, w->event2);
}

static cus_status c_graph_exec_set_event_wait(world *w)
{
    WITH_GRAPH(w, x, true);
    return cus_graph_exec_set_event_wait(x.e, x.wait, w->event2);
}

static cus_status c_graph_exec_set_host_fn(world *w)
{
    WITH_GRAPH(w, x, true);
    return cus_graph_exec_set_host_fn(x.e, x.host, host_noop, w);
}

static cus_status c_graph_exec_set_child(world *w)
{
    WITH_GRAPH(w, x, true);
    cus_autoptr(cus_graph) child2 = NULL;
    CUS_TRY(cus_graph_create(w->ctx, &child2));
    CUS_TRY(cus_graph_add_empty(child2, NULL, 0, NULL));
    return cus_graph_exec_set_child(x.e, x.sub, child2);
}

static cus_status c_graph_set_event_record(world *w)
{
    WITH_GRAPH(w, x, false);
    return cus_graph_set_event_record(x.rec, w->event2);
}

static cus_status c_graph_set_event_wait(world *w)
{
    WITH_GRAPH(w, x, false);
    return cus_graph_set_event_wait(x.wait, w->event2);
}

static cus_status c_graph_set_host_fn(world *w)
{
    WITH_GRAPH(w, x, false);
    return cus_graph_set_host_fn(x.host, host_noop, w);
}

static cus_status c_graph_instantiate_with_params(world *w)
{
    cus_autoptr(cus_graph_exec) e = NULL;
    CUgraphInstantiateResult result = CUDA_GRAPH_INSTANTIATE_ERROR;
    EC_RETURN_OUT(cus_graph_instantiate_with_params(w->graph, CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD,
                                                    w->stream, &result, &e),
                  e != NULL && result == CUDA_GRAPH_INSTANTIATE_SUCCESS);
}

const every_call every_calls_graph_inspect[] = {
    {"cus_graph_node_type", c_graph_node_type, EC_NO_OWN_SWITCH,
     "cuGraphNodeGetType needs no context: no switch", NULL},
    {"cus_graph_node_dependencies", c_graph_node_dependencies, EC_NO_OWN_SWITCH,
     "cuGraphNodeGetDependencies needs no context: no switch", NULL},
    {"cus_graph_node_dependents", c_graph_node_dependents, EC_NO_OWN_SWITCH,
     "cuGraphNodeGetDependentNodes needs no context: no switch", NULL},
    {"cus_graph_edges", c_graph_edges, EC_NO_OWN_SWITCH,
     "cuGraphGetEdges needs no context: no switch", NULL},
    {"cus_graph_node_enabled", c_graph_node_enabled, EC_NO_OWN_SWITCH,
     "cuGraphNodeGetEnabled needs no context: no switch", NULL},
    {"cus_graph_exec_flags", c_graph_exec_flags, EC_NO_OWN_SWITCH,
     "cuGraphExecGetFlags needs no context: no switch", NULL},
    {"cus_graph_debug_dot", c_graph_debug_dot, EC_NO_OWN_SWITCH,
     "cuGraphDebugDotPrint needs no context: no switch", NULL},
    {"cus_graph_remove_dependencies", c_graph_remove_dependencies, 0, NULL, NULL},
    {"cus_graph_add_edges", c_graph_add_edges, 0, NULL, NULL},
    {"cus_graph_event_node_event", c_graph_event_node_event, EC_NO_OWN_SWITCH,
     "cuGraphEventWaitNodeGetEvent needs no context: no switch", NULL},
    {"cus_graph_child_graph", c_graph_child_graph, EC_NO_OWN_SWITCH | EC_RELEASE_LEAVES_2,
     "cuGraphChildGraphNodeGetGraph needs no context: no switch; a graph whose cuGraphDestroy "
     "fails keeps its child node's own graph (two fake handles)",
     NULL},
    {"cus_graph_host_node_fn", c_graph_host_node_fn, EC_NO_OWN_SWITCH,
     "cuGraphHostNodeGetParams needs no context: no switch", NULL},
    {"cus_graph_remove_edges", c_graph_remove_edges, 0, NULL, NULL},
    {"cus_graph_node_dependencies_with_kinds", c_graph_node_dependencies_with_kinds,
     EC_NO_OWN_SWITCH, "cuGraphNodeGetDependencies needs no context: no switch", NULL},
    {"cus_graph_node_dependents_with_kinds", c_graph_node_dependents_with_kinds,
     EC_NO_OWN_SWITCH, "cuGraphNodeGetDependentNodes needs no context: no switch", NULL},
    {"cus_graph_edges_with_kinds", c_graph_edges_with_kinds, EC_NO_OWN_SWITCH,
     "cuGraphGetEdges needs no context: no switch", NULL},
    {"cus_graph_destroy_node", c_graph_destroy_node, 0, NULL, NULL},
    {"cus_graph_clone", c_graph_clone, 0, NULL, NULL},
    {"cus_graph_node_in_clone", c_graph_node_in_clone, EC_NO_OWN_SWITCH,
     "cuGraphNodeFindInClone needs no context: no switch (the clone before it switches)", NULL},
    {"cus_graph_exec_set_event_record", c_graph_exec_set_event_record, 0, NULL, NULL},
    {"cus_graph_exec_set_event_wait", c_graph_exec_set_event_wait, 0, NULL, NULL},
    {"cus_graph_exec_set_host_fn", c_graph_exec_set_host_fn, 0, NULL, NULL},
    {"cus_graph_exec_set_child", c_graph_exec_set_child, 0, NULL, NULL},
    {"cus_graph_instantiate_with_params", c_graph_instantiate_with_params, 0, NULL, NULL},
    {"cus_graph_set_event_record", c_graph_set_event_record, 0, NULL, NULL},
    {"cus_graph_set_event_wait", c_graph_set_event_wait, 0, NULL, NULL},
    {"cus_graph_set_host_fn", c_graph_set_host_fn, 0, NULL, NULL},
    {NULL, NULL, 0, NULL, NULL},
};
