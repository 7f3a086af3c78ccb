/* bench-conditional: work that stays on the device, against the host doing
 * the same, and cuscope against the raw driver for each, side by side in one
 * process, interleaved in blocks (bench_common.h has the method).
 *
 *   while:    a graph of a memset node (counter = K) then a WHILE conditional
 *             node whose body is kernels/countdown.cu (the counter decremented,
 *             the condition set with cudaGraphSetConditional), so one launch
 *             runs the kernel K times without returning to the host.
 *             (a) raw: built with cuGraphCreate, cuGraphConditionalHandleCreate,
 *             cuGraphAddMemsetNode, cuGraphAddNode and cuGraphAddKernelNode;
 *             each iteration cuGraphLaunch + cuStreamSynchronize.
 *             (b) cuscope: cus_graph_create, cus_graph_conditional_create,
 *             cus_graph_add_fill_u32, cus_graph_add_conditional and
 *             cus_graph_add_kernel; cus_graph_exec_launch + synchronize.
 *             (c) the host loop the WHILE node replaces: K x (a launch of
 *             kernels/empty.cu + a 4-byte cuMemcpyDtoH of the flag the host
 *             reads to decide whether to go on), raw and through cuscope
 *             (cus_launch + cus_copy_to_host).
 *             Per pass of the loop (iteration time / K).
 *   build:    building, instantiating and destroying that graph, raw and
 *             through cuscope (the argument check, the keep list, the body's
 *             cus_graph), per graph.
 *   pdl:      a pair of dependent kernels (kernels/pdl.cu: pdl_primary then
 *             pdl_secondary on 2^20 floats) + a synchronize, plain (two
 *             cuLaunchKernel; two cus_launch) and with programmatic dependent
 *             launch on the second (cuLaunchKernelEx with
 *             CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
 *             cus_launch_ex with programmatic_serialization). The overlap
 *             gained is plain - PDL, per pair; on the fake it means nothing.
 *
 * K is 1, 10 and 100 unless --passes gives a list. Runs on the real driver,
 * or on the fake when there is none (it says so; a host twin of countdown
 * plays the device's part there). Prints a table; --json prints JSON;
 * --quick runs a few iterations (CI checks it runs). Never asserts timings.
 * Exits 77 (skipped) on a driver before 12.3 (no conditional nodes). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cudaTypedefs.h>

#include <cuscope/cuscope.h>
#include <cuscope/fake.h>

#include "bench_common.h"
#include "cusk-images.h"

#define MAX_SIZES 8
#define PDL_N (1u << 20)
#define PDL_BLOCK 256u

typedef struct raw_api {
    PFN_cuLaunchKernel_v4000 launch;
    PFN_cuLaunchKernelEx_v11060 launch_ex;
    PFN_cuStreamSynchronize_v2000 sync;
    PFN_cuMemcpyDtoH_v3020 dtoh;
    PFN_cuGraphCreate_v10000 create;
    PFN_cuGraphConditionalHandleCreate_v12030 cond_create;
    PFN_cuGraphAddMemsetNode_v10000 add_memset;
    PFN_cuGraphAddNode_v12030 add_node;
    PFN_cuGraphAddKernelNode_v12000 add_kernel;
    PFN_cuGraphInstantiateWithFlags_v11040 instantiate;
    PFN_cuGraphLaunch_v10000 graph_launch;
    PFN_cuGraphExecDestroy_v10000 exec_destroy;
    PFN_cuGraphDestroy_v10000 graph_destroy;
} raw_api;

typedef struct cond_arg {
    raw_api raw;
    unsigned int k; /* passes of the loop */
    cus_context *ctx;
    CUcontext hctx;
    cus_function *countdown, *empty, *primary, *secondary;
    CUfunction h_countdown, h_empty, h_primary, h_secondary;
    cus_stream *stream;
    CUstream hs;
    cus_buffer *counter; /* the WHILE loop's, one unsigned int */
    CUdeviceptr dcounter;
    cus_buffer *in, *out, *out2; /* the PDL pair's, PDL_N floats each */
    CUdeviceptr din, dout, dout2;
    /* the graphs replayed: raw handles, and cuscope's */
    CUgraph raw_graph;
    CUgraphExec raw_exec;
    cus_graph *graph;
    cus_graph_exec *exec;
} cond_arg;

/* --- the WHILE graph, raw and through cuscope ------------------------------------- */

static int raw_while_graph(cond_arg *c, CUgraph *graph, CUgraphExec *exec)
{
    CUgraph g = NULL;
    if (c->raw.create(&g, 0))
        return 1;
    int bad = 0;
    CUgraphConditionalHandle h = 0;
    bad |= (int)c->raw.cond_create(&h, g, c->hctx, 1, CU_GRAPH_COND_ASSIGN_DEFAULT);
    CUDA_MEMSET_NODE_PARAMS ms;
    memset(&ms, 0, sizeof ms);
    ms.dst = c->dcounter;
    ms.value = c->k;
    ms.elementSize = 4;
    ms.width = 1;
    ms.height = 1;
    CUgraphNode set = NULL, loop = NULL;
    if (!bad)
        bad |= (int)c->raw.add_memset(&set, g, NULL, 0, &ms, c->hctx);
    CUgraphNodeParams np;
    memset(&np, 0, sizeof np);
    np.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
    np.conditional.handle = h;
    np.conditional.type = CU_GRAPH_COND_TYPE_WHILE;
    np.conditional.size = 1;
    np.conditional.ctx = c->hctx;
    if (!bad)
        bad |= (int)c->raw.add_node(&loop, g, &set, NULL, 1, &np);
    void *args[] = {&c->dcounter, &h};
    CUDA_KERNEL_NODE_PARAMS kp;
    memset(&kp, 0, sizeof kp);
    kp.func = c->h_countdown;
    kp.gridDimX = kp.gridDimY = kp.gridDimZ = 1;
    kp.blockDimX = 32;
    kp.blockDimY = kp.blockDimZ = 1;
    kp.kernelParams = args;
    CUgraphNode body_kernel = NULL;
    if (!bad)
        bad |= (int)c->raw.add_kernel(&body_kernel, np.conditional.phGraph_out[0], NULL, 0, &kp);
    if (!bad && exec)
        bad |= (int)c->raw.instantiate(exec, g, 0);
    if (bad) {
        c->raw.graph_destroy(g);
        return 1;
    }
    *graph = g;
    return 0;
}

static cus_status cus_while_graph(cond_arg *c, cus_graph **graph, cus_graph_exec **exec)
{
    cus_autoptr(cus_graph) g = NULL;
    CUS_TRY(cus_graph_create(c->ctx, &g));
    CUgraphConditionalHandle h = 0;
    CUS_TRY(cus_graph_conditional_create(g, 1, true, &h));
    cus_graph_node set;
    CUS_TRY(cus_graph_add_fill_u32(g, NULL, 0, &set, c->counter, 0, c->k, 1));
    cus_autoptr(cus_graph) body = NULL;
    CUS_TRY(cus_graph_add_conditional(g, &set, 1, NULL, h, CU_GRAPH_COND_TYPE_WHILE, 1, &body));
    CUS_TRY(cus_graph_add_kernel(body, NULL, 0, NULL, c->countdown, 1, 32, 0, c->counter, h));
    if (exec)
        CUS_TRY(cus_graph_instantiate(g, 0, exec));
    *graph = cus_steal(&g);
    return CUS_SUCCESS;
}

/* --- the timed bodies ------------------------------------------------------------- */

static BENCH_NOINLINE int loop_raw_while(void *p, int iters, uint64_t *ticks)
{
    cond_arg *c = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        bad |= (int)c->raw.graph_launch(c->raw_exec, c->hs);
        bad |= (int)c->raw.sync(c->hs);
    });
    return bad;
}

static BENCH_NOINLINE int loop_cus_while(void *p, int iters, uint64_t *ticks)
{
    cond_arg *c = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        bad |= cus_graph_exec_launch(c->exec, c->stream);
        bad |= cus_stream_synchronize(c->stream);
    });
    return bad;
}

static BENCH_NOINLINE int loop_raw_host(void *p, int iters, uint64_t *ticks)
{
    cond_arg *c = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        unsigned int flag = 0;
        for (unsigned int k = 0; k < c->k; k++) {
            bad |= (int)c->raw.launch(c->h_empty, 1, 1, 1, 32, 1, 1, 0, c->hs, NULL, NULL);
            bad |= (int)c->raw.sync(c->hs);
            bad |= (int)c->raw.dtoh(&flag, c->dcounter, sizeof flag);
        }
    });
    return bad;
}

static BENCH_NOINLINE int loop_cus_host(void *p, int iters, uint64_t *ticks)
{
    cond_arg *c = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        unsigned int flag = 0;
        for (unsigned int k = 0; k < c->k; k++) {
            bad |= cus_launch(c->empty, 1, 32, 0, c->stream);
            bad |= cus_stream_synchronize(c->stream);
            bad |= cus_copy_to_host(&flag, c->counter, 0, sizeof flag);
        }
    });
    return bad;
}

static BENCH_NOINLINE int loop_raw_build(void *p, int iters, uint64_t *ticks)
{
    cond_arg *c = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        CUgraph g = NULL;
        CUgraphExec e = NULL;
        if (raw_while_graph(c, &g, &e)) {
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
    cond_arg *c = p;
    int bad = 0;
    BENCH_LOOP(iters, ticks, {
        cus_graph *g = NULL;
        cus_graph_exec *e = NULL;
        if (cus_while_graph(c, &g, &e)) {
            bad = 1;
        } else {
            cus_graph_exec_unref(e);
            cus_graph_unref(g);
        }
    });
    return bad;
}

/* The PDL pair: the same grid for both kernels. */
static BENCH_NOINLINE int loop_raw_pair(void *p, int iters, uint64_t *ticks)
{
    cond_arg *c = p;
    int bad = 0;
    unsigned long long n = PDL_N;
    void *a1[] = {&c->din, &c->dout, &n};
    void *a2[] = {&c->dout, &c->dout2, &n};
    BENCH_LOOP(iters, ticks, {
        bad |= (int)c->raw.launch(c->h_primary, PDL_N / PDL_BLOCK, 1, 1, PDL_BLOCK, 1, 1, 0,
                                  c->hs, a1, NULL);
        bad |= (int)c->raw.launch(c->h_secondary, PDL_N / PDL_BLOCK, 1, 1, PDL_BLOCK, 1, 1, 0,
                                  c->hs, a2, NULL);
        bad |= (int)c->raw.sync(c->hs);
    });
    return bad;
}

static BENCH_NOINLINE int loop_raw_pair_pdl(void *p, int iters, uint64_t *ticks)
{
    cond_arg *c = p;
    int bad = 0;
    unsigned long long n = PDL_N;
    void *a1[] = {&c->din, &c->dout, &n};
    void *a2[] = {&c->dout, &c->dout2, &n};
    BENCH_LOOP(iters, ticks, {
        CUlaunchAttribute at[1];
        at[0].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        at[0].value.programmaticStreamSerializationAllowed = 1;
        CUlaunchConfig lc = {.gridDimX = PDL_N / PDL_BLOCK, .gridDimY = 1, .gridDimZ = 1,
                             .blockDimX = PDL_BLOCK, .blockDimY = 1, .blockDimZ = 1,
                             .hStream = c->hs, .attrs = at, .numAttrs = 1};
        bad |= (int)c->raw.launch(c->h_primary, PDL_N / PDL_BLOCK, 1, 1, PDL_BLOCK, 1, 1, 0,
                                  c->hs, a1, NULL);
        bad |= (int)c->raw.launch_ex(&lc, c->h_secondary, a2, NULL);
        bad |= (int)c->raw.sync(c->hs);
    });
    return bad;
}

static BENCH_NOINLINE int loop_cus_pair(void *p, int iters, uint64_t *ticks)
{
    cond_arg *c = p;
    int bad = 0;
    unsigned long long n = PDL_N;
    BENCH_LOOP(iters, ticks, {
        bad |= cus_launch(c->primary, PDL_N / PDL_BLOCK, PDL_BLOCK, 0, c->stream, c->in, c->out, n);
        bad |= cus_launch(c->secondary, PDL_N / PDL_BLOCK, PDL_BLOCK, 0, c->stream, c->out,
                          c->out2, n);
        bad |= cus_stream_synchronize(c->stream);
    });
    return bad;
}

static BENCH_NOINLINE int loop_cus_pair_pdl(void *p, int iters, uint64_t *ticks)
{
    cond_arg *c = p;
    int bad = 0;
    unsigned long long n = PDL_N;
    BENCH_LOOP(iters, ticks, {
        cus_launch_config cfg = {.grid = {PDL_N / PDL_BLOCK, 1, 1}, .block = {PDL_BLOCK, 1, 1},
                                 .stream = c->stream, .programmatic_serialization = true};
        bad |= cus_launch(c->primary, PDL_N / PDL_BLOCK, PDL_BLOCK, 0, c->stream, c->in, c->out, n);
        bad |= cus_launch_ex(c->secondary, &cfg, c->out, c->out2, n);
        bad |= cus_stream_synchronize(c->stream);
    });
    return bad;
}

/* --- reporting -------------------------------------------------------------------- */

static void destroy_graphs(cond_arg *c)
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

/* One K: the WHILE graph and the host loop interleaved, then the build. */
static int measure_while(const bench_opts *opt, cond_arg *c, bench_report *rep, int blocks)
{
    const unsigned int k = c->k;
    if (raw_while_graph(c, &c->raw_graph, &c->raw_exec) ||
        cus_while_graph(c, &c->graph, &c->exec)) {
        fprintf(stderr, "bench-conditional: building the WHILE graphs of %u passes failed: %s\n",
                k, cus_last_error_message());
        destroy_graphs(c);
        return -1;
    }
    /* Both graphs must really loop K times before anything is timed. */
    for (int side = 0; side < 2; side++) {
        unsigned int left = 12345;
        int bad = side ? (int)cus_graph_exec_launch(c->exec, c->stream) |
                             (int)cus_stream_synchronize(c->stream)
                       : (int)c->raw.graph_launch(c->raw_exec, c->hs) | (int)c->raw.sync(c->hs);
        bad |= (int)cus_copy_to_host(&left, c->counter, 0, sizeof left);
        if (bad || left != 0) {
            fprintf(stderr, "bench-conditional: the %s WHILE graph left the counter at %u "
                            "(want 0)%s%s\n",
                    side ? "cuscope" : "raw", left, bad ? ": " : "",
                    bad ? cus_last_error_message() : "");
            destroy_graphs(c);
            return -1;
        }
    }
    int iters = opt->iters ? opt->iters : opt->quick ? 3 : (k >= 100 ? 20 : (int)(200 / k));
    bench_variant v[] = {
        {.label = "raw WHILE graph: cuGraphLaunch + sync", .body = loop_raw_while, .arg = c,
         .per_call = true},
        {.label = "cuscope WHILE graph: cus_graph_exec_launch + sync", .body = loop_cus_while,
         .arg = c, .per_call = true},
        {.label = "raw host loop: K x (launch + sync + 4 B DtoH)",
         .body = loop_raw_host, .arg = c, .per_call = true},
        {.label = "cuscope host loop: K x (launch + sync + copy)",
         .body = loop_cus_host, .arg = c, .per_call = true},
    };
    enum { NV = sizeof v / sizeof v[0] };
    bench_run run = {.blocks = blocks, .iters = iters};
    int bad = bench_run_variants(&run, v, NV);
    if (!bad) {
        for (int i = 0; i < NV; i++)
            bench_variant_divide(&v[i], k);
        char title[160], basis[96], key[64];
        snprintf(title, sizeof title,
                 "K = %u: a WHILE loop of %u passes in one graph launch, against the host "
                 "driving it (%d per block)",
                 k, k, iters);
        snprintf(basis, sizeof basis, "over single iterations / %u (%s)", k, bench_clock_name());
        bench_report_section(rep, title, "ns per pass", basis, "median", "p99");
        snprintf(key, sizeof key, "raw_while_%u", k);
        bench_report_row_calls(rep, key, &v[0], NULL);
        snprintf(key, sizeof key, "cus_while_%u", k);
        bench_report_row_calls(rep, key, &v[1], &v[0]);
        snprintf(key, sizeof key, "raw_host_loop_%u", k);
        bench_report_row_calls(rep, key, &v[2], NULL);
        snprintf(key, sizeof key, "cus_host_loop_%u", k);
        bench_report_row_calls(rep, key, &v[3], &v[2]);
        double rw = bench_calls_median(&v[0]), rh = bench_calls_median(&v[2]);
        bench_report_note(rep, "K = %u: the WHILE graph / the host loop, per pass (raw): %.3f", k,
                          rh > 0 ? rw / rh : 0);
    }
    bench_run_free(&run, v, NV);
    destroy_graphs(c);
    if (bad)
        return -1;
    return 0;
}

static int measure_build(const bench_opts *opt, cond_arg *c, bench_report *rep, int blocks)
{
    int iters = opt->iters ? opt->iters : opt->quick ? 2 : 50;
    bench_variant b[] = {
        {.label = "raw: 5 graph calls + instantiate + destroy",
         .body = loop_raw_build, .arg = c, .per_call = true},
        {.label = "cuscope: the same calls + instantiate + unref", .body = loop_cus_build, .arg = c,
         .per_call = true},
    };
    bench_run run = {.blocks = blocks, .iters = iters};
    int bad = bench_run_variants(&run, b, 2);
    if (!bad) {
        char title[128], basis[96];
        snprintf(title, sizeof title, "building the WHILE graph (%d per block)", iters);
        snprintf(basis, sizeof basis, "over single builds (%s)", bench_clock_name());
        bench_report_section(rep, title, "ns per graph", basis, "median", "p99");
        bench_report_row_calls(rep, "raw_while_build", &b[0], NULL);
        bench_report_row_calls(rep, "cus_while_build", &b[1], &b[0]);
    }
    bench_run_free(&run, b, 2);
    return bad ? -1 : 0;
}

static int measure_pdl(const bench_opts *opt, cond_arg *c, bench_report *rep, int blocks)
{
    int iters = opt->iters ? opt->iters : opt->quick ? 3 : 100;
    bench_variant v[] = {
        {.label = "raw pair: 2 x cuLaunchKernel + sync", .body = loop_raw_pair, .arg = c,
         .per_call = true},
        {.label = "cuscope pair: 2 x cus_launch + sync", .body = loop_cus_pair, .arg = c,
         .per_call = true},
        {.label = "raw PDL pair: launch + launch_ex (PDL) + sync",
         .body = loop_raw_pair_pdl, .arg = c, .per_call = true},
        {.label = "cuscope PDL pair: the same + sync",
         .body = loop_cus_pair_pdl, .arg = c, .per_call = true},
    };
    enum { NV = sizeof v / sizeof v[0] };
    bench_run run = {.blocks = blocks, .iters = iters};
    int bad = bench_run_variants(&run, v, NV);
    if (!bad) {
        char title[160], basis[96];
        snprintf(title, sizeof title,
                 "a dependent kernel pair on %u floats, plain and with programmatic dependent "
                 "launch (%d per block)",
                 PDL_N, iters);
        snprintf(basis, sizeof basis, "over single pairs (%s)", bench_clock_name());
        bench_report_section(rep, title, "ns per pair", basis, "median", "p99");
        bench_report_row_calls(rep, "raw_pair", &v[0], NULL);
        bench_report_row_calls(rep, "cus_pair", &v[1], &v[0]);
        bench_report_row_calls(rep, "raw_pair_pdl", &v[2], NULL);
        bench_report_row_calls(rep, "cus_pair_pdl", &v[3], &v[2]);
        bench_report_note(rep, "PDL overlap gained per pair (plain - PDL): raw %.0f ns, "
                               "cuscope %.0f ns",
                          bench_calls_median(&v[0]) - bench_calls_median(&v[2]),
                          bench_calls_median(&v[1]) - bench_calls_median(&v[3]));
    }
    bench_run_free(&run, v, NV);
    return bad ? -1 : 0;
}

/* On the fake: countdown's host twin (the device's part), as the tests'
 * harness has it. */
static CUresult countdown_twin(const cus_fake_launch *l, void **args, void *user)
{
    (void)l;
    (void)user;
    CUdeviceptr p;
    memcpy(&p, args[0], sizeof p);
    unsigned int *counter = (unsigned int *)(uintptr_t)p;
    CUgraphConditionalHandle h;
    memcpy(&h, args[1], sizeof h);
    if (*counter)
        --*counter;
    return cus_fake_graph_set_conditional(h, *counter > 0) == CUS_SUCCESS
               ? CUDA_SUCCESS
               : CUDA_ERROR_ILLEGAL_ADDRESS;
}

static cus_status get_function(cus_context *ctx, const cusk_image *img, const char *name,
                               cus_module **mod, cus_function **fn)
{
    if (!*mod)
        CUS_TRY(cus_module_load_data(ctx, img->fatbin, img->fatbin_size, NULL, mod));
    return cus_module_get_function(*mod, name, fn);
}

int main(int argc, char **argv)
{
    int sizes[MAX_SIZES];
    static const int defaults[] = {1, 10, 100};
    int nsizes = bench_take_counts(&argc, argv, "--passes", sizes, MAX_SIZES, defaults, 3);
    if (nsizes < 0) {
        fprintf(stderr, "bench-conditional: --passes wants a comma-separated list of up to %d "
                        "counts from 1 to 100000\n", MAX_SIZES);
        return 2;
    }
    bench_opts opt;
    if (bench_parse_args("bench-conditional", argc, argv, &opt,
                         "  --passes K[,K...]  passes of the WHILE loop (default 1,10,100)"))
        return 2;
    bench_env env;
    if (bench_env_open("bench-conditional", &env))
        return 1;
    int version = 0;
    if (cus_driver_version(&version) || version < 12030 || !cus_driver_has("cuGraphAddNode") ||
        !cus_driver_has("cuGraphConditionalHandleCreate")) {
        fprintf(stderr, "bench-conditional: the %s driver (API %d) has no conditional nodes "
                        "(12.3+): skipped\n", env.driver, version);
        return 77;
    }
    cond_arg c;
    memset(&c, 0, sizeof c);
    const bench_sym syms[] = {
        {"cuLaunchKernel", 4000, &c.raw.launch},
        {"cuLaunchKernelEx", 11060, &c.raw.launch_ex},
        {"cuStreamSynchronize", 2000, &c.raw.sync},
        {"cuMemcpyDtoH", 3020, &c.raw.dtoh},
        {"cuGraphCreate", 10000, &c.raw.create},
        {"cuGraphConditionalHandleCreate", 12030, &c.raw.cond_create},
        {"cuGraphAddMemsetNode", 10000, &c.raw.add_memset},
        {"cuGraphAddNode", 12030, &c.raw.add_node},
        {"cuGraphAddKernelNode", 12000, &c.raw.add_kernel},
        {"cuGraphInstantiateWithFlags", 11040, &c.raw.instantiate},
        {"cuGraphLaunch", 10000, &c.raw.graph_launch},
        {"cuGraphExecDestroy", 10000, &c.raw.exec_destroy},
        {"cuGraphDestroy", 10000, &c.raw.graph_destroy},
    };
    if (bench_resolve(&env, syms, sizeof syms / sizeof syms[0]))
        return 1;
    if (env.fake && cus_fake_register_kernel("countdown", countdown_twin, NULL))
        return bench_fail(&env, "registering countdown's twin");

    cus_autoptr(cus_context) ctx = NULL;
    if (cus_context_retain_primary(env.dev, &ctx))
        return bench_fail(&env, "cus_context_retain_primary");
    if (cus_context_push(ctx))
        return bench_fail(&env, "cus_context_push");
    cus_autoptr(cus_stream) stream = NULL;
    cus_autoptr(cus_module) m_countdown = NULL;
    cus_autoptr(cus_module) m_empty = NULL;
    cus_autoptr(cus_module) m_pdl = NULL;
    cus_autoptr(cus_function) f_countdown = NULL;
    cus_autoptr(cus_function) f_empty = NULL;
    cus_autoptr(cus_function) f_primary = NULL;
    cus_autoptr(cus_function) f_secondary = NULL;
    cus_autoptr(cus_buffer) counter = NULL;
    cus_autoptr(cus_buffer) in = NULL;
    cus_autoptr(cus_buffer) out = NULL;
    cus_autoptr(cus_buffer) out2 = NULL;
    if (cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &stream))
        return bench_fail(&env, "cus_stream_create");
    if (get_function(ctx, &cusk_countdown, "countdown", &m_countdown, &f_countdown))
        return bench_fail(&env, "loading kernels/countdown.cu");
    if (get_function(ctx, &cusk_empty, "empty", &m_empty, &f_empty))
        return bench_fail(&env, "loading kernels/empty.cu");
    bool pdl = get_function(ctx, &cusk_pdl, "pdl_primary", &m_pdl, &f_primary) == CUS_SUCCESS &&
               get_function(ctx, &cusk_pdl, "pdl_secondary", &m_pdl, &f_secondary) ==
                   CUS_SUCCESS;
    if (!pdl)
        fprintf(stderr, "bench-conditional: kernels/pdl.cu did not load (%s): no PDL rows\n",
                cus_last_error_message());
    if (cus_buffer_alloc(ctx, sizeof(unsigned int), &counter) ||
        cus_buffer_alloc(ctx, PDL_N * sizeof(float), &in) ||
        cus_buffer_alloc(ctx, PDL_N * sizeof(float), &out) ||
        cus_buffer_alloc(ctx, PDL_N * sizeof(float), &out2) ||
        cus_buffer_fill_u32(in, 0, 0x3f800000u, PDL_N))
        return bench_fail(&env, "allocating the buffers");
    c.ctx = ctx;
    c.hctx = cus_context_handle(ctx);
    c.countdown = f_countdown;
    c.h_countdown = cus_function_handle(f_countdown);
    c.empty = f_empty;
    c.h_empty = cus_function_handle(f_empty);
    c.primary = f_primary;
    c.secondary = f_secondary;
    c.h_primary = pdl ? cus_function_handle(f_primary) : NULL;
    c.h_secondary = pdl ? cus_function_handle(f_secondary) : NULL;
    c.stream = stream;
    c.hs = cus_stream_handle(stream);
    c.counter = counter;
    c.dcounter = cus_buffer_ptr(counter);
    c.in = in;
    c.out = out;
    c.out2 = out2;
    c.din = cus_buffer_ptr(in);
    c.dout = cus_buffer_ptr(out);
    c.dout2 = cus_buffer_ptr(out2);

    const int blocks = opt.blocks ? opt.blocks : opt.quick ? 3 : 30;
    bench_report *rep = bench_report_new("conditional", &env, &opt, 0, 0);
    bench_report_note(rep, "%s", env.fake ? "on the fake driver: the figures are cuscope's own CPU "
                                            "cost (the fake's is the same on both sides); a host "
                                            "twin runs countdown, pdl.cu runs as nothing"
                                          : "on the real driver");
    bench_report_note(rep, "WHILE body: countdown of kernels/countdown.cu, grid 1, block 32; host "
                           "loop: empty of kernels/empty.cu, grid 1, block 32; a non-blocking "
                           "stream; the context current");
    bench_report_note(rep, "interleaved: %d rounds of every variant after a warm-up; each "
                           "iteration timed with %s (%.1f ns per reading pair)",
                      blocks, bench_clock_name(), bench_clock_overhead_ns());
    bench_report_note(rep, "ratio: cuscope/raw of the medians (>1: cuscope slower); in brackets "
                           "p5..p95 of the per-round ratio of block times");
    int rc = 0;
    for (int i = 0; i < nsizes && !rc; i++) {
        c.k = (unsigned int)sizes[i];
        rc = measure_while(&opt, &c, rep, blocks);
    }
    if (!rc) {
        c.k = 10;
        rc = measure_build(&opt, &c, rep, blocks);
    }
    if (!rc && pdl)
        rc = measure_pdl(&opt, &c, rep, blocks);
    bench_report_print(rep, rc ? false : opt.json);
    if (!rc && cus_stream_synchronize(stream))
        rc = bench_fail(&env, "the last synchronize");
    if (!rc && pdl && !env.fake) {
        /* The PDL pair's result: out2 = 2 * 1 + 1 everywhere. */
        float got[4] = {0};
        if (cus_copy_to_host(got, out2, (PDL_N - 4) * sizeof(float), sizeof got) ||
            got[0] != 3.0f || got[3] != 3.0f) {
            fprintf(stderr, "bench-conditional: the PDL pair computed %g, not 3\n", got[0]);
            rc = 1;
        }
    }
    cus_context_pop(NULL);
    return rc ? 1 : 0;
}
