/* bench-graph-edit: graph inspection and editing (cuscope/graph_inspect.h)
 * against the raw driver, interleaved in one process (bench_common.h):
 *   - clone + release of a graph of 100 kernel nodes (a chain, each a launch
 *     of touch(u64 p) on one buffer, built by hand through cuscope, which
 *     keeps the module and the buffer): cuGraphClone + cuGraphDestroy
 *     against cus_graph_clone + cus_graph_unref (the clone holds the
 *     original: one reference, one allocation of the record and its keep
 *     list);
 *   - the dependency list of one node of it: cuGraphNodeGetDependencies
 *     against cus_graph_node_dependencies (a scratch array and a lock);
 *   - a programmatic edge from the chain's first node to its last, added and
 *     removed: cuGraphAddDependencies_v2 + cuGraphRemoveDependencies_v2 with
 *     its CUgraphEdgeData against cus_graph_add_edges +
 *     cus_graph_remove_edges (the kinds converted, a lock and a switch each);
 *     and the last node's list with each edge's kind, with the edge there:
 *     cuGraphNodeGetDependencies_v2 with edgeData against
 *     cus_graph_node_dependencies_with_kinds (scratch arrays);
 *   - a child graph node's own graph (the chain as a child of another
 *     graph): cuGraphChildGraphNodeGetGraph against cus_graph_child_graph +
 *     cus_graph_unref (a body graph record made and freed, a lock, the lent
 *     list looked up);
 *   - a host function node's function read back: cuGraphHostNodeGetParams
 *     against cus_graph_host_node_fn (a lock, cuscope's record read
 *     through).
 * The kernel is PTX generated here, so no nvcc is needed. --quick: a few
 * blocks (CI checks that it runs). Never asserts timings. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cudaTypedefs.h>

#include <cuscope/cuscope.h>
#include <cuscope/fake.h>

#include "bench_common.h"

#define PROG "bench-graph-edit"
#define NODES 100

typedef struct raw_api {
    PFN_cuGraphClone_v10000 clone;
    PFN_cuGraphDestroy_v10000 destroy;
    PFN_cuGraphNodeGetDependencies_v12030 deps;
    PFN_cuGraphAddDependencies_v12030 add_deps;
    PFN_cuGraphRemoveDependencies_v12030 remove_deps;
    PFN_cuGraphChildGraphNodeGetGraph_v10000 child_graph;
    PFN_cuGraphHostNodeGetParams_v10000 host_params;
} raw_api;

typedef struct edit_arg {
    const raw_api *raw;
    cus_graph *graph;
    cus_graph_node node;  /* the chain's last node */
    cus_graph_node first; /* and its first */
    cus_graph_node sub;   /* a child node of another graph, whose child is graph */
    cus_graph_node host;  /* a host function node of that graph */
} edit_arg;

static BENCH_NOINLINE int loop_raw_clone(void *p, int iters, uint64_t *ticks)
{
    const edit_arg *a = p;
    int bad = 0;
    CUgraph h = cus_graph_handle(a->graph);
    BENCH_LOOP(iters, ticks, {
        CUgraph c = NULL;
        bad |= a->raw->clone(&c, h) != CUDA_SUCCESS;
        bad |= a->raw->destroy(c) != CUDA_SUCCESS;
    });
    return bad;
}

static BENCH_NOINLINE int loop_cus_clone(void *p, int iters, uint64_t *ticks)
{
    const edit_arg *a = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        cus_graph *c = NULL;
        bad |= cus_graph_clone(a->graph, &c) != CUS_SUCCESS;
        c = cus_graph_unref(c);
    });
    return bad;
}

static BENCH_NOINLINE int loop_raw_deps(void *p, int iters, uint64_t *ticks)
{
    const edit_arg *a = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        CUgraphNode d[2];
        size_t n = 2;
        bad |= a->raw->deps(a->node.handle, d, NULL, &n) != CUDA_SUCCESS;
    });
    return bad;
}

static BENCH_NOINLINE int loop_cus_deps(void *p, int iters, uint64_t *ticks)
{
    const edit_arg *a = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        cus_graph_node d[2];
        size_t n = 2;
        bad |= cus_graph_node_dependencies(a->node, d, &n) != CUS_SUCCESS;
    });
    return bad;
}

static BENCH_NOINLINE int loop_raw_child(void *p, int iters, uint64_t *ticks)
{
    const edit_arg *a = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        CUgraph own = NULL;
        bad |= a->raw->child_graph(a->sub.handle, &own) != CUDA_SUCCESS;
    });
    return bad;
}

static BENCH_NOINLINE int loop_cus_child(void *p, int iters, uint64_t *ticks)
{
    const edit_arg *a = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        cus_graph *own = NULL;
        bad |= cus_graph_child_graph(a->sub, &own) != CUS_SUCCESS;
        own = cus_graph_unref(own);
    });
    return bad;
}

static BENCH_NOINLINE int loop_raw_host(void *p, int iters, uint64_t *ticks)
{
    const edit_arg *a = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        CUDA_HOST_NODE_PARAMS hp;
        bad |= a->raw->host_params(a->host.handle, &hp) != CUDA_SUCCESS;
    });
    return bad;
}

static BENCH_NOINLINE int loop_cus_host(void *p, int iters, uint64_t *ticks)
{
    const edit_arg *a = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        cus_host_fn fn;
        void *data;
        bad |= cus_graph_host_node_fn(a->host, &fn, &data) != CUS_SUCCESS;
    });
    return bad;
}

static void host_noop(void *p)
{
    (void)p;
}

static CUgraphEdgeData programmatic(void)
{
    CUgraphEdgeData e;
    memset(&e, 0, sizeof e);
    e.type = CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC;
    e.from_port = CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC;
    return e;
}

static BENCH_NOINLINE int loop_raw_edge(void *p, int iters, uint64_t *ticks)
{
    const edit_arg *a = p;
    int bad = 0;
    CUgraph h = cus_graph_handle(a->graph);
    const CUgraphEdgeData e = programmatic();
    BENCH_LOOP(iters, ticks, {
        bad |= a->raw->add_deps(h, &a->first.handle, &a->node.handle, &e, 1) != CUDA_SUCCESS;
        bad |= a->raw->remove_deps(h, &a->first.handle, &a->node.handle, &e, 1) != CUDA_SUCCESS;
    });
    return bad;
}

static BENCH_NOINLINE int loop_cus_edge(void *p, int iters, uint64_t *ticks)
{
    const edit_arg *a = p;
    int bad = 0;
    const cus_edge_kind k = CUS_EDGE_PROGRAMMATIC;
    BENCH_LOOP(iters, ticks, {
        bad |= cus_graph_add_edges(a->graph, &a->first, &a->node, &k, 1) != CUS_SUCCESS;
        bad |= cus_graph_remove_edges(a->graph, &a->first, &a->node, &k, 1) != CUS_SUCCESS;
    });
    return bad;
}

static BENCH_NOINLINE int loop_raw_kinds(void *p, int iters, uint64_t *ticks)
{
    const edit_arg *a = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        CUgraphNode d[2];
        CUgraphEdgeData e[2];
        size_t n = 2;
        bad |= a->raw->deps(a->node.handle, d, e, &n) != CUDA_SUCCESS;
    });
    return bad;
}

static BENCH_NOINLINE int loop_cus_kinds(void *p, int iters, uint64_t *ticks)
{
    const edit_arg *a = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        cus_graph_node d[2];
        cus_edge_kind k[2];
        size_t n = 2;
        bad |= cus_graph_node_dependencies_with_kinds(a->node, d, k, &n) != CUS_SUCCESS;
    });
    return bad;
}

/* touch(.u64): does nothing, at a target the device's JIT takes. */
static char *touch_ptx(const bench_env *env, size_t *len)
{
    int major = 0, minor = 0;
    if (cus_device_compute_capability(env->dev, &major, &minor) || major * 10 + minor >= 80)
        major = 8, minor = 0;
    char *p = malloc(256);
    if (!p)
        return NULL;
    int n = snprintf(p, 256,
                     ".version 7.0\n.target sm_%d%d\n.address_size 64\n\n"
                     ".visible .entry touch(\n\t.param .u64 touch_p\n)\n{\n\tret;\n}\n",
                     major, minor);
    *len = (size_t)n + 1;
    return p;
}

static cus_status build_chain(cus_context *ctx, cus_function *fn, cus_buffer *buf,
                              cus_graph **out, cus_graph_node *first, cus_graph_node *last)
{
    cus_autoptr(cus_graph) g = NULL;
    CUS_TRY(cus_graph_create(ctx, &g));
    cus_graph_node prev = {0}, node;
    for (int i = 0; i < NODES; i++) {
        CUS_TRY(cus_graph_add_kernel(g, i ? &prev : NULL, i ? 1u : 0u, &node, fn, 1, 1, 0, buf));
        if (!i)
            *first = node;
        prev = node;
    }
    *last = prev;
    *out = cus_steal(&g);
    return CUS_SUCCESS;
}

static void report(bench_report *rep, const char *title, const char *unit, bench_variant *v,
                   const char *const *keys, int blocks)
{
    bench_report_section(rep, title, unit, "over blocks", "median", "p99");
    for (int i = 0; i < 2; i++) {
        bench_stats s = bench_stats_of(v[i].block_ns, blocks);
        bench_ratio q = i ? bench_ratio_of(&v[0], &v[1]) : (bench_ratio){0};
        bench_report_row(rep, keys[i], v[i].label, s.median, s.p99, s.n, i ? &q : NULL);
    }
}

int main(int argc, char **argv)
{
    bench_opts opt;
    if (bench_parse_args(PROG, argc, argv, &opt, NULL))
        return 2;
    bench_env env;
    if (bench_env_open(PROG, &env))
        return 1;
    if (env.version < 12030) {
        fprintf(stderr, "%s: driver %d has no cuGraphNodeGetDependencies_v2 (12.3): skipped\n",
                PROG, env.version);
        return 77;
    }
    raw_api raw;
    const bench_sym syms[] = {
        {"cuGraphClone", 10000, &raw.clone},
        {"cuGraphDestroy", 10000, &raw.destroy},
        {"cuGraphNodeGetDependencies", 12030, &raw.deps},
        {"cuGraphAddDependencies", 12030, &raw.add_deps},
        {"cuGraphRemoveDependencies", 12030, &raw.remove_deps},
        {"cuGraphChildGraphNodeGetGraph", 10000, &raw.child_graph},
        {"cuGraphHostNodeGetParams", 10000, &raw.host_params},
    };
    if (bench_resolve(&env, syms, sizeof syms / sizeof syms[0]))
        return 1;
    cus_autoptr(cus_context) ctx = NULL;
    if (cus_context_retain_primary(env.dev, &ctx))
        return bench_fail(&env, "cus_context_retain_primary");
    if (cus_context_push(ctx))
        return bench_fail(&env, "cus_context_push");
    size_t len = 0;
    char *ptx = touch_ptx(&env, &len);
    cus_autoptr(cus_module) mod = NULL;
    cus_status st = ptx ? cus_module_load_data(ctx, ptx, len, NULL, &mod) : CUS_ERROR_OUT_OF_HOST_MEMORY;
    free(ptx);
    if (st)
        return bench_fail(&env, "loading the generated PTX");
    cus_autoptr(cus_function) fn = NULL;
    if (cus_module_get_function(mod, "touch", &fn))
        return bench_fail(&env, "cus_module_get_function");
    cus_autoptr(cus_buffer) buf = NULL;
    if (cus_buffer_alloc(ctx, 256, &buf))
        return bench_fail(&env, "cus_buffer_alloc");
    cus_autoptr(cus_graph) g = NULL;
    edit_arg a = {.raw = &raw};
    if (build_chain(ctx, fn, buf, &g, &a.first, &a.node))
        return bench_fail(&env, "building the graph");
    a.graph = g;
    cus_autoptr(cus_graph) outer = NULL;
    if (cus_graph_create(ctx, &outer) || cus_graph_add_child(outer, NULL, 0, &a.sub, g) ||
        cus_graph_add_host_fn(outer, NULL, 0, &a.host, host_noop, NULL))
        return bench_fail(&env, "building the graph with a child node and a host node");

    const int blocks = opt.blocks ? opt.blocks : opt.quick ? 3 : 31;
    const int clone_iters = opt.iters ? opt.iters : opt.quick ? 4 : env.fake ? 200 : 100;
    const int deps_iters = opt.iters ? opt.iters : opt.quick ? 16 : 5000;
    bench_report *rep = bench_report_new("graph-edit", &env, &opt, blocks, clone_iters);
    bench_report_note(rep, "%s", env.fake ? "on the fake driver: a clone copies the fake's node "
                                            "records; the figures are cuscope's own CPU cost on "
                                            "top of the fake's"
                                          : "on the real driver");
    bench_report_note(rep, "a chain of %d kernel nodes built through cuscope (it keeps the "
                           "module and the buffer); ratio: cuscope/raw of the medians (>1: "
                           "cuscope slower), in brackets p5..p95 of the per-round ratio",
                      NODES);
    int bad = 0;
    {
        bench_variant v[] = {
            {.label = "raw cuGraphClone + cuGraphDestroy", .body = loop_raw_clone, .arg = &a},
            {.label = "cus_graph_clone + cus_graph_unref", .body = loop_cus_clone, .arg = &a},
        };
        bench_run run = {.blocks = blocks, .iters = clone_iters};
        bad = bench_run_variants(&run, v, 2);
        if (!bad) {
            char title[160];
            snprintf(title, sizeof title, "clone of a %d-node graph and its release (%d blocks "
                     "of %d)", NODES, blocks, clone_iters);
            static const char *const keys[] = {"raw_clone", "cus_clone"};
            report(rep, title, "ns per clone", v, keys, blocks);
        }
        bench_run_free(&run, v, 2);
    }
    if (!bad) {
        bench_variant v[] = {
            {.label = "raw cuGraphNodeGetDependencies_v2", .body = loop_raw_deps, .arg = &a},
            {.label = "cus_graph_node_dependencies", .body = loop_cus_deps, .arg = &a},
        };
        bench_run run = {.blocks = blocks, .iters = deps_iters};
        bad = bench_run_variants(&run, v, 2);
        if (!bad) {
            char title[160];
            snprintf(title, sizeof title, "the dependency list of one node (%d blocks of %d)",
                     blocks, deps_iters);
            static const char *const keys[] = {"raw_deps", "cus_deps"};
            report(rep, title, "ns per query", v, keys, blocks);
        }
        bench_run_free(&run, v, 2);
    }
    if (!bad) {
        bench_variant v[] = {
            {.label = "raw add + remove, programmatic CUgraphEdgeData", .body = loop_raw_edge,
             .arg = &a},
            {.label = "cus_graph_add_edges + cus_graph_remove_edges", .body = loop_cus_edge,
             .arg = &a},
        };
        bench_run run = {.blocks = blocks, .iters = deps_iters};
        bad = bench_run_variants(&run, v, 2);
        if (!bad) {
            char title[160];
            snprintf(title, sizeof title, "a programmatic edge added and removed (%d blocks of "
                     "%d)", blocks, deps_iters);
            static const char *const keys[] = {"raw_edge", "cus_edge"};
            report(rep, title, "ns per add + remove", v, keys, blocks);
        }
        bench_run_free(&run, v, 2);
    }
    const cus_edge_kind prog = CUS_EDGE_PROGRAMMATIC;
    if (!bad && cus_graph_add_edges(g, &a.first, &a.node, &prog, 1)) {
        fprintf(stderr, "%s: adding the programmatic edge: %s\n", PROG, cus_last_error_message());
        bad = 1;
    }
    if (!bad) {
        bench_variant v[] = {
            {.label = "raw cuGraphNodeGetDependencies_v2 + edgeData", .body = loop_raw_kinds,
             .arg = &a},
            {.label = "cus_graph_node_dependencies_with_kinds", .body = loop_cus_kinds,
             .arg = &a},
        };
        bench_run run = {.blocks = blocks, .iters = deps_iters};
        bad = bench_run_variants(&run, v, 2);
        if (!bad) {
            char title[160];
            snprintf(title, sizeof title, "a dependency list with kinds, one of them "
                     "programmatic (%d blocks of %d)", blocks, deps_iters);
            static const char *const keys[] = {"raw_kinds", "cus_kinds"};
            report(rep, title, "ns per query", v, keys, blocks);
        }
        bench_run_free(&run, v, 2);
    }
    if (!bad) {
        bench_variant v[] = {
            {.label = "raw cuGraphChildGraphNodeGetGraph", .body = loop_raw_child, .arg = &a},
            {.label = "cus_graph_child_graph + cus_graph_unref", .body = loop_cus_child,
             .arg = &a},
        };
        bench_run run = {.blocks = blocks, .iters = deps_iters};
        bad = bench_run_variants(&run, v, 2);
        if (!bad) {
            char title[160];
            snprintf(title, sizeof title, "a child graph node's own graph (%d blocks of %d)",
                     blocks, deps_iters);
            static const char *const keys[] = {"raw_child", "cus_child"};
            report(rep, title, "ns per call", v, keys, blocks);
        }
        bench_run_free(&run, v, 2);
    }
    if (!bad) {
        bench_variant v[] = {
            {.label = "raw cuGraphHostNodeGetParams", .body = loop_raw_host, .arg = &a},
            {.label = "cus_graph_host_node_fn", .body = loop_cus_host, .arg = &a},
        };
        bench_run run = {.blocks = blocks, .iters = deps_iters};
        bad = bench_run_variants(&run, v, 2);
        if (!bad) {
            char title[160];
            snprintf(title, sizeof title, "a host function node's function (%d blocks of %d)",
                     blocks, deps_iters);
            static const char *const keys[] = {"raw_host", "cus_host"};
            report(rep, title, "ns per call", v, keys, blocks);
        }
        bench_run_free(&run, v, 2);
    }
    bench_report_print(rep, opt.json);
    if (bad)
        return 1;
    cus_context_pop(NULL);
    return 0;
}
