/* bench-graph: a captured graph of N kernels replayed, cost per kernel,
 * against N stream launches, raw and through cuscope, side by side in one
 * process, interleaved in blocks (bench_common.h has the method).
 *
 *   replay:   (a) raw: cuStreamBeginCapture, N cuLaunchKernel of the `empty`
 *             kernel (kernels/empty.cu), cuStreamEndCapture and
 *             cuGraphInstantiateWithFlags once; then each iteration is
 *             cuGraphLaunch + cuStreamSynchronize.
 *             (b) cuscope: the same graph built with cus_capture_begin,
 *             cus_launch, cus_capture_end and cus_graph_instantiate, each
 *             iteration cus_graph_exec_launch + cus_stream_synchronize.
 *   stream:   (c) N launches on the stream + a synchronize, raw
 *             cuLaunchKernel + cuStreamSynchronize and cus_launch +
 *             cus_stream_synchronize.
 *             The four run interleaved in the same rounds, so the graph and
 *             stream figures compare too. Each iteration is timed on its
 *             own with the cheap clock; a value is that time / N (per
 *             kernel).
 *   build:    capturing the N launches, ending the capture, instantiating
 *             and destroying the graph and the exec, raw and through cuscope
 *             (what cuscope's keep list costs while capturing), per kernel.
 *   by hand:  cuGraphCreate, N cuGraphAddKernelNode (each after the one
 *             before), cuGraphDestroy, against cus_graph_create, N
 *             cus_graph_add_kernel and the unref (graph_nodes.h: the argument
 *             check and the keep list), per kernel.
 *   into a graph: a graph made, one empty node added by hand, the N
 *             launches captured into it after that node and the capture
 *             ended, the graph destroyed: cuGraphCreate, cuGraphAddEmptyNode,
 *             cuStreamBeginCaptureToGraph, N cuLaunchKernel,
 *             cuStreamEndCapture, cuGraphDestroy against cus_graph_create,
 *             cus_graph_add_empty, cus_capture_begin_to_graph, N cus_launch,
 *             cus_capture_end and the unref (the keep list handed to the
 *             graph), per kernel; skipped on a driver before 12.3.
 *   attributes: a graph of ATTR_NODES kernel nodes, each with two
 *             attributes (a priority and a memory sync domain), built and
 *             destroyed: cuGraphCreate, per node cuGraphAddKernelNode and
 *             two cuGraphKernelNodeSetAttribute, cuGraphDestroy, against
 *             cus_graph_create, per node cus_graph_add_kernel_ex and the
 *             unref (the configuration's checks, the node's keep), per
 *             node; and one attribute read back,
 *             cuGraphKernelNodeGetAttribute against
 *             cus_graph_kernel_node_attribute, per call.
 *   update:   one kernel node's parameters set in an executable graph,
 *             cuGraphExecKernelNodeSetParams against cus_graph_exec_set_kernel
 *             (the same objects: nothing to keep or retire), per call.
 *   memory:   a graph of an allocation node (256 bytes), a kernel after it
 *             and the free after the kernel, built once by raw
 *             cuGraphAddMemAllocNode / cuGraphAddKernelNode /
 *             cuGraphAddMemFreeNode and once by cus_graph_add_alloc /
 *             cus_graph_add_kernel / cus_graph_add_free; each iteration is a
 *             launch + synchronize of its executable graph, per launch.
 *
 * N is 1, 10 and 100 unless --nodes gives a list. The function's context is
 * current on the thread (cuscope's fast path; the raw calls need it).
 * Runs on the real driver, or on the fake when there is none (it says so):
 * there the figures are cuscope's own CPU cost, plus the fake's, the same on
 * both sides. Prints a table; --json prints JSON. --quick runs a few
 * iterations (CI checks it runs). Never asserts timings. Exits 77 (skipped)
 * on a driver without graphs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cudaTypedefs.h>

#include <cuscope/cuscope.h>

#include "bench_common.h"
#include "cusk-images.h"

#define MAX_SIZES 8

typedef struct raw_api {
    PFN_cuLaunchKernel_v4000 launch;
    PFN_cuStreamSynchronize_v2000 sync;
    PFN_cuStreamBeginCapture_v10010 begin;
    PFN_cuStreamEndCapture_v10000 end;
    PFN_cuGraphInstantiateWithFlags_v11040 instantiate;
    PFN_cuGraphLaunch_v10000 graph_launch;
    PFN_cuGraphExecDestroy_v10000 exec_destroy;
    PFN_cuGraphDestroy_v10000 graph_destroy;
    PFN_cuGraphCreate_v10000 create;
    PFN_cuGraphAddKernelNode_v12000 add_kernel;
    PFN_cuGraphExecKernelNodeSetParams_v12000 set_kernel;
    PFN_cuGraphAddEmptyNode_v10000 add_empty;
    PFN_cuStreamBeginCaptureToGraph_v12030 begin_to_graph; /* NULL before 12.3 */
    PFN_cuGraphAddMemAllocNode_v11040 add_alloc;
    PFN_cuGraphAddMemFreeNode_v11040 add_free;
    PFN_cuGraphKernelNodeSetAttribute_v11000 set_attr;
    PFN_cuGraphKernelNodeGetAttribute_v11000 get_attr;
} raw_api;

typedef struct graph_arg {
    raw_api raw;
    int n; /* kernels per graph, launches per iteration */
    cus_context *ctx;
    cus_function *fn;
    CUfunction h;
    cus_stream *stream;
    CUstream hs;
    /* the graphs replayed: raw handles, and cuscope's */
    CUgraph raw_graph;
    CUgraphExec raw_exec;
    cus_graph *graph;
    cus_graph_exec *exec;
    /* the update's: a graph of one kernel node, raw and cuscope's */
    CUgraphNode raw_node;
    cus_graph_node node;
    int greatest; /* the context's greatest stream priority, for the attribute rows */
} graph_arg;

/* --- building ------------------------------------------------------------------ */

static int raw_build(graph_arg *c, CUgraph *graph, CUgraphExec *exec)
{
    if (c->raw.begin(c->hs, CU_STREAM_CAPTURE_MODE_GLOBAL))
        return 1;
    int bad = 0;
    for (int i = 0; i < c->n; i++)
        bad |= (int)c->raw.launch(c->h, 1, 1, 1, 1, 1, 1, 0, c->hs, NULL, NULL);
    CUgraph g = NULL;
    bad |= (int)c->raw.end(c->hs, &g);
    if (bad || !g) {
        if (g)
            c->raw.graph_destroy(g);
        return 1;
    }
    if (c->raw.instantiate(exec, g, 0)) {
        c->raw.graph_destroy(g);
        return 1;
    }
    *graph = g;
    return 0;
}

static cus_status cus_build(graph_arg *c, cus_graph **graph, cus_graph_exec **exec)
{
    cus_autoptr(cus_graph) g = NULL;
    {
        cus_capture_scope(cap, c->stream, CU_STREAM_CAPTURE_MODE_GLOBAL);
        CUS_TRY(cap.status);
        for (int i = 0; i < c->n; i++)
            CUS_TRY(cus_launch(c->fn, 1, 1, 0, c->stream));
        CUS_TRY(cus_capture_end(&cap, &g));
    }
    CUS_TRY(cus_graph_instantiate(g, 0, exec));
    *graph = cus_steal(&g);
    return CUS_SUCCESS;
}

/* --- the timed bodies (names start with loop_, as in bench-launch) --------------- */

static BENCH_NOINLINE int loop_raw_replay(void *p, int iters, uint64_t *ticks)
{
    graph_arg *c = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        bad |= (int)c->raw.graph_launch(c->raw_exec, c->hs);
        bad |= (int)c->raw.sync(c->hs);
    });
    return bad;
}

static BENCH_NOINLINE int loop_cus_replay(void *p, int iters, uint64_t *ticks)
{
    graph_arg *c = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        bad |= cus_graph_exec_launch(c->exec, c->stream);
        bad |= cus_stream_synchronize(c->stream);
    });
    return bad;
}

static BENCH_NOINLINE int loop_raw_stream(void *p, int iters, uint64_t *ticks)
{
    graph_arg *c = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        for (int k = 0; k < c->n; k++)
            bad |= (int)c->raw.launch(c->h, 1, 1, 1, 1, 1, 1, 0, c->hs, NULL, NULL);
        bad |= (int)c->raw.sync(c->hs);
    });
    return bad;
}

static BENCH_NOINLINE int loop_cus_stream(void *p, int iters, uint64_t *ticks)
{
    graph_arg *c = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        for (int k = 0; k < c->n; k++)
            bad |= cus_launch(c->fn, 1, 1, 0, c->stream);
        bad |= cus_stream_synchronize(c->stream);
    });
    return bad;
}

static BENCH_NOINLINE int loop_raw_build(void *p, int iters, uint64_t *ticks)
{
    graph_arg *c = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        CUgraph g = NULL;
        CUgraphExec e = NULL;
        if (raw_build(c, &g, &e)) {
            bad = 1;
        } else {
            bad |= (int)c->raw.exec_destroy(e);
            bad |= (int)c->raw.graph_destroy(g);
        }
    });
    return bad;
}

static BENCH_NOINLINE int loop_cus_build(void *p, int iters, uint64_t *ticks)
{
    graph_arg *c = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        cus_graph *g = NULL;
        cus_graph_exec *e = NULL;
        if (cus_build(c, &g, &e)) {
            bad = 1;
        } else {
            cus_graph_exec_unref(e);
            cus_graph_unref(g);
        }
    });
    return bad;
}

static CUDA_KERNEL_NODE_PARAMS empty_params(CUfunction h)
{
    CUDA_KERNEL_NODE_PARAMS p;
    memset(&p, 0, sizeof p);
    p.func = h;
    p.gridDimX = p.gridDimY = p.gridDimZ = 1;
    p.blockDimX = p.blockDimY = p.blockDimZ = 1;
    return p;
}

static BENCH_NOINLINE int loop_raw_hand(void *p, int iters, uint64_t *ticks)
{
    graph_arg *c = p;
    int bad = 0;
    CUDA_KERNEL_NODE_PARAMS kp = empty_params(c->h);
    BENCH_LOOP(iters, ticks, {
        CUgraph g = NULL;
        bad |= (int)c->raw.create(&g, 0);
        CUgraphNode prev = NULL;
        for (int i = 0; i < c->n && !bad; i++) {
            CUgraphNode node = NULL;
            bad |= (int)c->raw.add_kernel(&node, g, prev ? &prev : NULL, prev ? 1 : 0, &kp);
            prev = node;
        }
        if (g)
            bad |= (int)c->raw.graph_destroy(g);
    });
    return bad;
}

static BENCH_NOINLINE int loop_cus_hand(void *p, int iters, uint64_t *ticks)
{
    graph_arg *c = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        cus_graph *g = NULL;
        bad |= cus_graph_create(c->ctx, &g);
        cus_graph_node prev = {0};
        for (int i = 0; i < c->n && !bad; i++)
            bad |= cus_graph_add_kernel(g, prev.handle ? &prev : NULL, prev.handle ? 1 : 0,
                                        &prev, c->fn, 1, 1, 0);
        cus_graph_unref(g);
    });
    return bad;
}

static BENCH_NOINLINE int loop_raw_into(void *p, int iters, uint64_t *ticks)
{
    graph_arg *c = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        CUgraph g = NULL;
        CUgraphNode first = NULL;
        bad |= (int)c->raw.create(&g, 0);
        bad |= (int)c->raw.add_empty(&first, g, NULL, 0);
        bad |= (int)c->raw.begin_to_graph(c->hs, g, &first, NULL, 1,
                                          CU_STREAM_CAPTURE_MODE_GLOBAL);
        for (int i = 0; i < c->n; i++)
            bad |= (int)c->raw.launch(c->h, 1, 1, 1, 1, 1, 1, 0, c->hs, NULL, NULL);
        CUgraph same = NULL;
        bad |= (int)c->raw.end(c->hs, &same);
        bad |= same != g;
        if (g)
            bad |= (int)c->raw.graph_destroy(g);
    });
    return bad;
}

static cus_status cus_into(graph_arg *c)
{
    cus_autoptr(cus_graph) g = NULL;
    CUS_TRY(cus_graph_create(c->ctx, &g));
    cus_graph_node first;
    CUS_TRY(cus_graph_add_empty(g, NULL, 0, &first));
    cus_capture_scope_to_graph(cap, c->stream, g, &first, 1, CU_STREAM_CAPTURE_MODE_GLOBAL);
    CUS_TRY(cap.status);
    for (int i = 0; i < c->n; i++)
        CUS_TRY(cus_launch(c->fn, 1, 1, 0, c->stream));
    cus_autoptr(cus_graph) same = NULL;
    return cus_capture_end(&cap, &same);
}

static BENCH_NOINLINE int loop_cus_into(void *p, int iters, uint64_t *ticks)
{
    graph_arg *c = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, { bad |= cus_into(c); });
    return bad;
}

static BENCH_NOINLINE int loop_raw_update(void *p, int iters, uint64_t *ticks)
{
    graph_arg *c = p;
    int bad = 0;
    CUDA_KERNEL_NODE_PARAMS kp = empty_params(c->h);
    BENCH_LOOP(iters, ticks, { bad |= (int)c->raw.set_kernel(c->raw_exec, c->raw_node, &kp); });
    return bad;
}

static BENCH_NOINLINE int loop_cus_update(void *p, int iters, uint64_t *ticks)
{
    graph_arg *c = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, { bad |= cus_graph_exec_set_kernel(c->exec, c->node, c->fn, 1, 1, 0); });
    return bad;
}

#define ATTR_NODES 10

static BENCH_NOINLINE int loop_raw_attr_build(void *p, int iters, uint64_t *ticks)
{
    graph_arg *c = p;
    int bad = 0;
    CUDA_KERNEL_NODE_PARAMS kp = empty_params(c->h);
    CUlaunchAttributeValue prio, domain;
    memset(&prio, 0, sizeof prio);
    memset(&domain, 0, sizeof domain);
    prio.priority = c->greatest;
    domain.memSyncDomain = CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE;
    BENCH_LOOP(iters, ticks, {
        CUgraph g = NULL;
        bad |= (int)c->raw.create(&g, 0);
        for (int i = 0; i < ATTR_NODES && !bad; i++) {
            CUgraphNode node = NULL;
            bad |= (int)c->raw.add_kernel(&node, g, NULL, 0, &kp);
            bad |= (int)c->raw.set_attr(node, CU_LAUNCH_ATTRIBUTE_PRIORITY, &prio);
            bad |= (int)c->raw.set_attr(node, CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN, &domain);
        }
        if (g)
            bad |= (int)c->raw.graph_destroy(g);
    });
    return bad;
}

static BENCH_NOINLINE int loop_cus_attr_build(void *p, int iters, uint64_t *ticks)
{
    graph_arg *c = p;
    int bad = 0;
    const cus_launch_config cfg = {.grid = {1, 1, 1}, .block = {1, 1, 1}, .set_priority = true,
                                   .priority = c->greatest, .set_mem_sync_domain = true,
                                   .mem_sync_domain = CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE};
    BENCH_LOOP(iters, ticks, {
        cus_graph *g = NULL;
        bad |= cus_graph_create(c->ctx, &g);
        for (int i = 0; i < ATTR_NODES && !bad; i++)
            bad |= cus_graph_add_kernel_ex(g, NULL, 0, NULL, c->fn, &cfg);
        cus_graph_unref(g);
    });
    return bad;
}

static BENCH_NOINLINE int loop_raw_attr_read(void *p, int iters, uint64_t *ticks)
{
    graph_arg *c = p;
    int bad = 0;
    CUlaunchAttributeValue v;
    BENCH_LOOP(iters, ticks, {
        bad |= (int)c->raw.get_attr(c->raw_node, CU_LAUNCH_ATTRIBUTE_PRIORITY, &v);
    });
    return bad;
}

static BENCH_NOINLINE int loop_cus_attr_read(void *p, int iters, uint64_t *ticks)
{
    graph_arg *c = p;
    int bad = 0;
    CUlaunchAttributeValue v;
    BENCH_LOOP(iters, ticks, {
        bad |= cus_graph_kernel_node_attribute(c->node, CU_LAUNCH_ATTRIBUTE_PRIORITY, &v);
    });
    return bad;
}

/* --- reporting ------------------------------------------------------------------- */

static int load_empty(const bench_env *env, cus_context *ctx, cus_module **mod, const char **which)
{
    if (cus_module_load_data(ctx, cusk_empty.fatbin, cusk_empty.fatbin_size, NULL, mod) == 0) {
        *which = "fatbin";
        return 0;
    }
    fprintf(stderr, "%s: the fatbin of kernels/empty.cu did not load (%s); trying its PTX\n",
            env->prog, cus_last_error_message());
    if (cus_module_load_data(ctx, cusk_empty.ptx, cusk_empty.ptx_size + 1, NULL, mod) == 0) {
        *which = "PTX";
        return 0;
    }
    return -1;
}

static void destroy_graphs(graph_arg *c)
{
    if (c->raw_exec)
        c->raw.exec_destroy(c->raw_exec);
    if (c->raw_graph)
        c->raw.graph_destroy(c->raw_graph);
    c->raw_exec = NULL;
    c->raw_graph = NULL;
    c->exec = cus_graph_exec_unref(c->exec);
    c->graph = cus_graph_unref(c->graph);
}

/* One size: the replay and stream variants interleaved, then the build. */
static int measure(const bench_opts *opt, graph_arg *c, bench_report *rep, int blocks)
{
    const int n = c->n;
    int iters = opt->iters ? opt->iters : opt->quick ? 5 : (n >= 1000 ? 10 : 1000 / n);
    if (iters < 10 && !opt->quick && !opt->iters)
        iters = 10;
    if (raw_build(c, &c->raw_graph, &c->raw_exec) || cus_build(c, &c->graph, &c->exec)) {
        fprintf(stderr, "bench-graph: building the graphs of %d kernels failed: %s\n", n,
                cus_last_error_message());
        destroy_graphs(c);
        return -1;
    }
    size_t nodes = 0;
    if (cus_graph_node_count(c->graph, &nodes) || nodes != (size_t)n) {
        fprintf(stderr, "bench-graph: the graph has %zu nodes, not %d\n", nodes, n);
        destroy_graphs(c);
        return -1;
    }
    bench_variant v[] = {
        {.label = "raw cuGraphLaunch + sync", .body = loop_raw_replay, .arg = c, .per_call = true},
        {.label = "cus_graph_exec_launch + sync", .body = loop_cus_replay, .arg = c,
         .per_call = true},
        {.label = "raw N x cuLaunchKernel + sync", .body = loop_raw_stream, .arg = c,
         .per_call = true},
        {.label = "cus N x cus_launch + sync", .body = loop_cus_stream, .arg = c,
         .per_call = true},
    };
    enum { NV = sizeof v / sizeof v[0] };
    bench_run run = {.blocks = blocks, .iters = iters};
    int bad = bench_run_variants(&run, v, NV);
    if (!bad) {
        for (int k = 0; k < NV; k++)
            bench_variant_divide(&v[k], n);
        char title[128], basis[96], key[64];
        snprintf(title, sizeof title,
                 "N = %d: a graph of %d kernels replayed, against %d stream launches "
                 "(%d per block)",
                 n, n, n, iters);
        snprintf(basis, sizeof basis, "over single iterations / %d (%s)", n, bench_clock_name());
        bench_report_section(rep, title, "ns per kernel", basis, "median", "p99");
        snprintf(key, sizeof key, "raw_replay_%d", n);
        bench_report_row_calls(rep, key, &v[0], NULL);
        snprintf(key, sizeof key, "cus_replay_%d", n);
        bench_report_row_calls(rep, key, &v[1], &v[0]);
        snprintf(key, sizeof key, "raw_stream_%d", n);
        bench_report_row_calls(rep, key, &v[2], NULL);
        snprintf(key, sizeof key, "cus_stream_%d", n);
        bench_report_row_calls(rep, key, &v[3], &v[2]);
        double rg = bench_calls_median(&v[0]);
        double rs = bench_calls_median(&v[2]);
        double cg = bench_calls_median(&v[1]);
        double cs = bench_calls_median(&v[3]);
        bench_report_note(rep, "N = %d: replay / stream launches, per kernel: raw %.3f, cuscope %.3f",
                          n, rs > 0 ? rg / rs : 0, cs > 0 ? cg / cs : 0);
    }
    bench_run_free(&run, v, NV);
    destroy_graphs(c);
    if (bad)
        return -1;

    /* The build: far slower per iteration, so fewer of them. */
    int build_iters = opt->iters ? opt->iters : opt->quick ? 2 : (n >= 100 ? 5 : 500 / n);
    if (build_iters < 5 && !opt->quick && !opt->iters)
        build_iters = 5;
    int build_blocks = opt->quick ? blocks : blocks / 4 > 5 ? blocks / 4 : 5;
    if (opt->blocks)
        build_blocks = opt->blocks;
    bench_variant b[] = {
        {.label = "raw capture + end + instantiate + destroy", .body = loop_raw_build, .arg = c,
         .per_call = true},
        {.label = "cuscope capture + end + instantiate + unref", .body = loop_cus_build, .arg = c,
         .per_call = true},
    };
    bench_run brun = {.blocks = build_blocks, .iters = build_iters};
    bad = bench_run_variants(&brun, b, 2);
    if (!bad) {
        bench_variant_divide(&b[0], n);
        bench_variant_divide(&b[1], n);
        char title[128], basis[96], key[64];
        snprintf(title, sizeof title, "N = %d: building the graph (%d blocks of %d)", n,
                 build_blocks, build_iters);
        snprintf(basis, sizeof basis, "over single builds / %d (%s)", n, bench_clock_name());
        bench_report_section(rep, title, "ns per kernel", basis, "median", "p99");
        snprintf(key, sizeof key, "raw_build_%d", n);
        bench_report_row_calls(rep, key, &b[0], NULL);
        snprintf(key, sizeof key, "cus_build_%d", n);
        bench_report_row_calls(rep, key, &b[1], &b[0]);
    }
    bench_run_free(&brun, b, 2);
    if (bad)
        return -1;

    /* By hand: the same counts as the capture's build. */
    bench_variant h[] = {
        {.label = "raw cuGraphCreate + N x cuGraphAddKernelNode + destroy", .body = loop_raw_hand,
         .arg = c, .per_call = true},
        {.label = "cus_graph_create + N x cus_graph_add_kernel + unref", .body = loop_cus_hand,
         .arg = c, .per_call = true},
    };
    bench_run hrun = {.blocks = build_blocks, .iters = build_iters};
    bad = bench_run_variants(&hrun, h, 2);
    if (!bad) {
        bench_variant_divide(&h[0], n);
        bench_variant_divide(&h[1], n);
        char title[128], basis[96], key[64];
        snprintf(title, sizeof title, "N = %d: a graph of %d kernel nodes built by hand (%d blocks of %d)",
                 n, n, build_blocks, build_iters);
        snprintf(basis, sizeof basis, "over single builds / %d (%s)", n, bench_clock_name());
        bench_report_section(rep, title, "ns per kernel node", basis, "median", "p99");
        snprintf(key, sizeof key, "raw_hand_build_%d", n);
        bench_report_row_calls(rep, key, &h[0], NULL);
        snprintf(key, sizeof key, "cus_hand_build_%d", n);
        bench_report_row_calls(rep, key, &h[1], &h[0]);
    }
    bench_run_free(&hrun, h, 2);
    if (bad)
        return -1;

    /* Into a graph: the same counts, captured after a node added by hand. */
    if (!c->raw.begin_to_graph)
        return 0; /* a driver before 12.3 (noted) */
    bench_variant t[] = {
        {.label = "raw capture into a graph (+ create, node, destroy)",
         .body = loop_raw_into, .arg = c, .per_call = true},
        {.label = "cus_capture_begin_to_graph (+ create, node, unref)",
         .body = loop_cus_into, .arg = c, .per_call = true},
    };
    bench_run trun = {.blocks = build_blocks, .iters = build_iters};
    bad = bench_run_variants(&trun, t, 2);
    if (!bad) {
        bench_variant_divide(&t[0], n);
        bench_variant_divide(&t[1], n);
        char title[128], basis[96], key[64];
        snprintf(title, sizeof title,
                 "N = %d: %d launches captured into a graph after a node added by hand (%d "
                 "blocks of %d)",
                 n, n, build_blocks, build_iters);
        snprintf(basis, sizeof basis, "over single builds / %d (%s)", n, bench_clock_name());
        bench_report_section(rep, title, "ns per kernel", basis, "median", "p99");
        snprintf(key, sizeof key, "raw_capture_into_%d", n);
        bench_report_row_calls(rep, key, &t[0], NULL);
        snprintf(key, sizeof key, "cus_capture_into_%d", n);
        bench_report_row_calls(rep, key, &t[1], &t[0]);
    }
    bench_run_free(&trun, t, 2);
    return bad ? -1 : 0;
}

/* alloc -> kernel -> free, raw; the exec in c->raw_exec. */
static int raw_build_memory(graph_arg *c)
{
    CUDA_KERNEL_NODE_PARAMS kp = empty_params(c->h);
    CUDA_MEM_ALLOC_NODE_PARAMS ap;
    memset(&ap, 0, sizeof ap);
    ap.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    ap.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    ap.poolProps.location.id = cus_context_device(c->ctx).handle;
    ap.bytesize = 256;
    CUgraphNode alloc = NULL, kernel = NULL, freed = NULL;
    if (c->raw.create(&c->raw_graph, 0) ||
        c->raw.add_alloc(&alloc, c->raw_graph, NULL, 0, &ap) ||
        c->raw.add_kernel(&kernel, c->raw_graph, &alloc, 1, &kp) ||
        c->raw.add_free(&freed, c->raw_graph, &kernel, 1, ap.dptr))
        return 1;
    return c->raw.instantiate(&c->raw_exec, c->raw_graph, 0) != CUDA_SUCCESS;
}

/* The same through cuscope; the graph keeps nothing of the buffer (no node
 * but the free names it), released at once. */
static cus_status cus_build_memory(graph_arg *c)
{
    CUS_TRY(cus_graph_create(c->ctx, &c->graph));
    cus_autoptr(cus_buffer) tmp = NULL;
    cus_graph_node alloc, kernel;
    CUS_TRY(cus_graph_add_alloc(c->graph, NULL, 0, &alloc, 256, &tmp));
    CUS_TRY(cus_graph_add_kernel(c->graph, &alloc, 1, &kernel, c->fn, 1, 1, 0));
    CUS_TRY(cus_graph_add_free(c->graph, &kernel, 1, NULL, tmp));
    return cus_graph_instantiate(c->graph, 0, &c->exec);
}

/* Launches of a graph that allocates, runs a kernel and frees, raw and
 * through cuscope, interleaved. */
static int measure_memory(const bench_opts *opt, graph_arg *c, bench_report *rep, int blocks)
{
    if (!cus_driver_has("cuGraphAddMemAllocNode")) {
        bench_report_note(rep, "no graph memory nodes in this driver: the memory rows skipped");
        return 0;
    }
    if (raw_build_memory(c) || cus_build_memory(c)) {
        fprintf(stderr, "bench-graph: building the graphs with memory nodes failed: %s\n",
                cus_last_error_message());
        destroy_graphs(c);
        return -1;
    }
    int iters = opt->iters ? opt->iters : opt->quick ? 5 : 1000;
    bench_variant m[] = {
        {.label = "raw alloc + kernel + free: cuGraphLaunch + sync", .body = loop_raw_replay,
         .arg = c, .per_call = true},
        {.label = "cus alloc + kernel + free: cus_graph_exec_launch + sync",
         .body = loop_cus_replay, .arg = c, .per_call = true},
    };
    bench_run mrun = {.blocks = blocks, .iters = iters};
    int bad = bench_run_variants(&mrun, m, 2);
    if (!bad) {
        char title[128], basis[96];
        snprintf(title, sizeof title,
                 "a graph of an allocation, a kernel and a free, launched (%d per block)", iters);
        snprintf(basis, sizeof basis, "over single launches (%s)", bench_clock_name());
        bench_report_section(rep, title, "ns per launch", basis, "median", "p99");
        bench_report_row_calls(rep, "raw_alloc_kernel_free", &m[0], NULL);
        bench_report_row_calls(rep, "cus_alloc_kernel_free", &m[1], &m[0]);
    }
    bench_run_free(&mrun, m, 2);
    destroy_graphs(c);
    return bad ? -1 : 0;
}

/* A kernel node's update in an executable graph of one node, raw and
 * through cuscope, interleaved. */
static int measure_update(const bench_opts *opt, graph_arg *c, bench_report *rep, int blocks)
{
    CUDA_KERNEL_NODE_PARAMS kp = empty_params(c->h);
    cus_status st = cus_graph_create(c->ctx, &c->graph);
    if (!st)
        st = cus_graph_add_kernel(c->graph, NULL, 0, &c->node, c->fn, 1, 1, 0);
    if (!st)
        st = cus_graph_instantiate(c->graph, 0, &c->exec);
    int bad = st != CUS_SUCCESS;
    if (!bad && (c->raw.create(&c->raw_graph, 0) ||
                 c->raw.add_kernel(&c->raw_node, c->raw_graph, NULL, 0, &kp) ||
                 c->raw.instantiate(&c->raw_exec, c->raw_graph, 0)))
        bad = 1;
    if (bad) {
        fprintf(stderr, "bench-graph: building the update's graphs failed: %s\n",
                cus_last_error_message());
        destroy_graphs(c);
        return -1;
    }
    int iters = opt->iters ? opt->iters : opt->quick ? 5 : 1000;
    bench_variant u[] = {
        {.label = "raw cuGraphExecKernelNodeSetParams", .body = loop_raw_update, .arg = c,
         .per_call = true},
        {.label = "cus_graph_exec_set_kernel", .body = loop_cus_update, .arg = c,
         .per_call = true},
    };
    bench_run urun = {.blocks = blocks, .iters = iters};
    bad = bench_run_variants(&urun, u, 2);
    if (!bad) {
        char title[128], basis[96];
        snprintf(title, sizeof title, "a kernel node's update in an executable graph (%d per block)",
                 iters);
        snprintf(basis, sizeof basis, "over single calls (%s)", bench_clock_name());
        bench_report_section(rep, title, "ns per update", basis, "median", "p99");
        bench_report_row_calls(rep, "raw_node_update", &u[0], NULL);
        bench_report_row_calls(rep, "cus_node_update", &u[1], &u[0]);
    }
    bench_run_free(&urun, u, 2);
    destroy_graphs(c);
    return bad ? -1 : 0;
}

/* Kernel nodes with attributes: graphs built and destroyed, then one
 * attribute read back, raw and through cuscope, interleaved. */
static int measure_attributes(const bench_opts *opt, graph_arg *c, bench_report *rep, int blocks)
{
    int least = 0;
    if (cus_context_stream_priority_range(c->ctx, &least, &c->greatest)) {
        fprintf(stderr, "bench-graph: %s\n", cus_last_error_message());
        return -1;
    }
    int iters = opt->iters ? opt->iters : opt->quick ? 3 : 200;
    bench_variant b[] = {
        {.label = "raw 10 x (add node + 2 SetAttribute) + destroy",
         .body = loop_raw_attr_build, .arg = c, .per_call = true},
        {.label = "10 x cus_graph_add_kernel_ex + unref",
         .body = loop_cus_attr_build, .arg = c, .per_call = true},
    };
    bench_run brun = {.blocks = blocks, .iters = iters};
    int bad = bench_run_variants(&brun, b, 2);
    if (!bad) {
        bench_variant_divide(&b[0], ATTR_NODES);
        bench_variant_divide(&b[1], ATTR_NODES);
        char title[128], basis[96];
        snprintf(title, sizeof title,
                 "a graph of %d kernel nodes with 2 attributes each, built by hand (%d blocks of %d)",
                 ATTR_NODES, blocks, iters);
        snprintf(basis, sizeof basis, "over single builds / %d (%s)", ATTR_NODES,
                 bench_clock_name());
        bench_report_section(rep, title, "ns per kernel node", basis, "median", "p99");
        bench_report_row_calls(rep, "raw_attr_node_build", &b[0], NULL);
        bench_report_row_calls(rep, "cus_attr_node_build", &b[1], &b[0]);
    }
    bench_run_free(&brun, b, 2);
    if (bad)
        return -1;

    /* One attribute read back from a node of a graph of one. */
    CUDA_KERNEL_NODE_PARAMS kp = empty_params(c->h);
    const cus_launch_config cfg = {.grid = {1, 1, 1}, .block = {1, 1, 1}, .set_priority = true,
                                   .priority = c->greatest};
    CUlaunchAttributeValue prio;
    memset(&prio, 0, sizeof prio);
    prio.priority = c->greatest;
    bad = cus_graph_create(c->ctx, &c->graph) != CUS_SUCCESS ||
          cus_graph_add_kernel_ex(c->graph, NULL, 0, &c->node, c->fn, &cfg) != CUS_SUCCESS ||
          c->raw.create(&c->raw_graph, 0) ||
          c->raw.add_kernel(&c->raw_node, c->raw_graph, NULL, 0, &kp) ||
          c->raw.set_attr(c->raw_node, CU_LAUNCH_ATTRIBUTE_PRIORITY, &prio);
    if (bad) {
        fprintf(stderr, "bench-graph: building the attribute read's graphs failed: %s\n",
                cus_last_error_message());
        destroy_graphs(c);
        return -1;
    }
    iters = opt->iters ? opt->iters : opt->quick ? 5 : 1000;
    bench_variant r[] = {
        {.label = "raw cuGraphKernelNodeGetAttribute", .body = loop_raw_attr_read, .arg = c,
         .per_call = true},
        {.label = "cus_graph_kernel_node_attribute", .body = loop_cus_attr_read, .arg = c,
         .per_call = true},
    };
    bench_run rrun = {.blocks = blocks, .iters = iters};
    bad = bench_run_variants(&rrun, r, 2);
    if (!bad) {
        char title[128], basis[96];
        snprintf(title, sizeof title, "a kernel node's attribute read back (%d per block)", iters);
        snprintf(basis, sizeof basis, "over single calls (%s)", bench_clock_name());
        bench_report_section(rep, title, "ns per read", basis, "median", "p99");
        bench_report_row_calls(rep, "raw_attr_read", &r[0], NULL);
        bench_report_row_calls(rep, "cus_attr_read", &r[1], &r[0]);
    }
    bench_run_free(&rrun, r, 2);
    destroy_graphs(c);
    return bad ? -1 : 0;
}

int main(int argc, char **argv)
{
    int sizes[MAX_SIZES];
    static const int defaults[] = {1, 10, 100};
    int nsizes = bench_take_counts(&argc, argv, "--nodes", sizes, MAX_SIZES, defaults, 3);
    if (nsizes < 0) {
        fprintf(stderr, "bench-graph: --nodes wants a comma-separated list of up to %d counts "
                        "from 1 to 100000\n", MAX_SIZES);
        return 2;
    }
    bench_opts opt;
    if (bench_parse_args("bench-graph", argc, argv, &opt,
                         "  --nodes N[,N...]  kernels per graph (default 1,10,100)"))
        return 2;
    bench_env env;
    if (bench_env_open("bench-graph", &env))
        return 1;
    static const char *const needed[] = {"cuModuleLoadDataEx", "cuLaunchKernel",
                                         "cuStreamBeginCapture", "cuGraphLaunch",
                                         "cuGraphInstantiateWithFlags"};
    for (size_t i = 0; i < sizeof needed / sizeof needed[0]; i++)
        if (!cus_driver_has(needed[i])) {
            fprintf(stderr, "bench-graph: the %s driver has no %s: nothing to measure%s\n",
                    env.driver, needed[i], env.fake ? ": skipped" : "");
            return env.fake ? 77 : 1;
        }
    graph_arg c;
    memset(&c, 0, sizeof c);
    const bench_sym syms[] = {
        {"cuLaunchKernel", 4000, &c.raw.launch},
        {"cuStreamSynchronize", 2000, &c.raw.sync},
        {"cuStreamBeginCapture", 10010, &c.raw.begin},
        {"cuStreamEndCapture", 10000, &c.raw.end},
        {"cuGraphInstantiateWithFlags", 11040, &c.raw.instantiate},
        {"cuGraphLaunch", 10000, &c.raw.graph_launch},
        {"cuGraphExecDestroy", 10000, &c.raw.exec_destroy},
        {"cuGraphDestroy", 10000, &c.raw.graph_destroy},
        {"cuGraphCreate", 10000, &c.raw.create},
        {"cuGraphAddKernelNode", 12000, &c.raw.add_kernel},
        {"cuGraphExecKernelNodeSetParams", 12000, &c.raw.set_kernel},
        {"cuGraphAddEmptyNode", 10000, &c.raw.add_empty},
        {"cuGraphAddMemAllocNode", 11040, &c.raw.add_alloc},
        {"cuGraphAddMemFreeNode", 11040, &c.raw.add_free},
        {"cuGraphKernelNodeSetAttribute", 11000, &c.raw.set_attr},
        {"cuGraphKernelNodeGetAttribute", 11000, &c.raw.get_attr},
    };
    if (bench_resolve(&env, syms, sizeof syms / sizeof syms[0]))
        return 1;
    if (cus_driver_has("cuStreamBeginCaptureToGraph")) {
        const bench_sym into[] = {
            {"cuStreamBeginCaptureToGraph", 12030, &c.raw.begin_to_graph},
        };
        if (bench_resolve(&env, into, 1))
            return 1;
    }

    cus_autoptr(cus_context) ctx = NULL;
    if (cus_context_retain_primary(env.dev, &ctx))
        return bench_fail(&env, "cus_context_retain_primary");
    if (cus_context_push(ctx))
        return bench_fail(&env, "cus_context_push");
    cus_autoptr(cus_stream) stream = NULL;
    cus_autoptr(cus_module) mod = NULL;
    cus_autoptr(cus_function) fn = NULL;
    const char *image = "";
    if (cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &stream))
        return bench_fail(&env, "cus_stream_create");
    if (load_empty(&env, ctx, &mod, &image))
        return bench_fail(&env, "loading kernels/empty.cu");
    if (cus_module_get_function(mod, "empty", &fn))
        return bench_fail(&env, "cus_module_get_function");
    c.ctx = ctx;
    c.fn = fn;
    c.h = cus_function_handle(fn);
    c.stream = stream;
    c.hs = cus_stream_handle(stream);

    const int blocks = opt.blocks ? opt.blocks : opt.quick ? 3 : 60;
    bench_report *rep = bench_report_new("graph", &env, &opt, 0, 0);
    bench_report_note(rep, "%s", env.fake ? "on the fake driver: the figures are cuscope's own CPU "
                                            "cost (the fake's is the same on both sides)"
                                          : "on the real driver");
    bench_report_note(rep, "kernel `empty` of kernels/empty.cu (%s), grid 1, block 1; a "
                           "non-blocking stream created by cuscope; the context current",
                      image);
    bench_report_note(rep, "interleaved: %d rounds of every variant after a warm-up; each "
                           "iteration timed with %s (%.1f ns per reading pair), divided by N",
                      blocks, bench_clock_name(), bench_clock_overhead_ns());
    bench_report_note(rep, "ratio: cuscope/raw of the medians (>1: cuscope slower); in brackets "
                           "p5..p95 of the per-round ratio of block times");
    if (!c.raw.begin_to_graph)
        bench_report_note(rep, "the %s driver has no cuStreamBeginCaptureToGraph (12.3): no "
                               "capture-into-a-graph rows", env.driver);
    for (int i = 0; i < nsizes; i++) {
        c.n = sizes[i];
        if (measure(&opt, &c, rep, blocks)) {
            bench_report_print(rep, false);
            cus_context_pop(NULL);
            return 1;
        }
    }
    if (measure_update(&opt, &c, rep, blocks)) {
        bench_report_print(rep, false);
        cus_context_pop(NULL);
        return 1;
    }
    if (measure_attributes(&opt, &c, rep, blocks)) {
        bench_report_print(rep, false);
        cus_context_pop(NULL);
        return 1;
    }
    if (measure_memory(&opt, &c, rep, blocks)) {
        bench_report_print(rep, false);
        cus_context_pop(NULL);
        return 1;
    }
    bench_report_print(rep, opt.json);
    if (cus_stream_synchronize(stream))
        return bench_fail(&env, "the last synchronize");
    cus_context_pop(NULL);
    return 0;
}
