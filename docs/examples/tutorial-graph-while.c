/* tutorial-graph-while: a loop that runs on the device without returning to
 * the host (docs/tutorial.md, "Graphs built by hand", conditional nodes).
 *
 * A graph copies a counter in, then a WHILE node runs its body (one launch
 * of kernels/countdown.cu, which decrements the counter and sets the node's
 * condition to counter > 0 with cudaGraphSetConditional) until the counter
 * reaches 0, then copies the counter out: one cus_graph_exec_launch, START
 * kernel launches. An IF node then runs a fill only when its handle's value
 * says so. Without a GPU it runs on the fake driver, with a host twin of the
 * kernel that sets the condition through cus_fake_graph_set_conditional.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cuscope/cuscope.h>
#include <cuscope/fake.h>

#include "cusk-images.h"

#define START 10u

static unsigned long twin_runs; /* on the fake: how many times the body ran */

/* countdown's twin: what the kernel does, on the CPU. */
static CUresult countdown_on_host(const cus_fake_launch *launch, void **args, void *user)
{
    (void)launch;
    (void)user;
    unsigned int *counter = (unsigned int *)(uintptr_t) * (CUdeviceptr *)args[0];
    CUgraphConditionalHandle h;
    memcpy(&h, args[1], sizeof h);
    if (*counter)
        --*counter;
    twin_runs++;
    return cus_fake_graph_set_conditional(h, *counter > 0) == CUS_SUCCESS
               ? CUDA_SUCCESS
               : CUDA_ERROR_ILLEGAL_ADDRESS;
}

/* copy in -> WHILE (countdown) -> copy out -> IF (fill flag with 1). */
static cus_status build(cus_context *ctx, const unsigned int *start, unsigned int *result,
                        cus_buffer *flag, unsigned int if_value, cus_graph **out)
{
    cus_autoptr(cus_module) module = NULL;
    CUS_TRY(cus_module_load_data(ctx, cusk_countdown.fatbin, cusk_countdown.fatbin_size, NULL,
                                 &module));
    cus_autoptr(cus_function) countdown = NULL;
    CUS_TRY(cus_module_get_function(module, "countdown", &countdown));
    cus_autoptr(cus_buffer) counter = NULL;
    CUS_TRY(cus_buffer_alloc(ctx, sizeof(unsigned int), &counter));

    cus_autoptr(cus_graph) g = NULL;
    CUS_TRY(cus_graph_create(ctx, &g));
    /* The loop's condition: 1 at the start of every launch. */
    CUgraphConditionalHandle loop_cond;
    CUS_TRY(cus_graph_conditional_create(g, 1, true, &loop_cond));
    cus_graph_node in, loop, back;
    CUS_TRY(cus_graph_add_copy_to_device(g, NULL, 0, &in, counter, 0, start, sizeof *start));
    cus_autoptr(cus_graph) body = NULL;
    CUS_TRY(cus_graph_add_conditional(g, &in, 1, &loop, loop_cond, CU_GRAPH_COND_TYPE_WHILE, 1,
                                      &body));
    /* The body is an ordinary graph to fill; the handle is a kernel
     * argument (8 bytes) like any scalar. */
    CUS_TRY(cus_graph_add_kernel(body, NULL, 0, NULL, countdown, 1, 32, 0, counter, loop_cond));
    CUS_TRY(cus_graph_add_copy_to_host(g, &loop, 1, &back, result, counter, 0, sizeof *result));

    /* IF: its body runs when the value (here a default) is non-zero. */
    CUgraphConditionalHandle if_cond;
    CUS_TRY(cus_graph_conditional_create(g, if_value, true, &if_cond));
    cus_autoptr(cus_graph) then = NULL;
    CUS_TRY(cus_graph_add_conditional(g, &back, 1, NULL, if_cond, CU_GRAPH_COND_TYPE_IF, 1, &then));
    CUS_TRY(cus_graph_add_fill_u32(then, NULL, 0, NULL, flag, 0, 1, 1));
    *out = cus_steal(&g);
    return CUS_SUCCESS;
    /* module, countdown, counter and the bodies go here: the graph keeps
     * what the nodes use, bodies included. */
}

static cus_status run(bool on_fake)
{
    cus_device dev;
    CUS_TRY(cus_device_get(0, &dev));
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(cus_context_retain_primary(dev, &ctx));
    cus_context_scope(guard, ctx);
    if (guard.status)
        return guard.status;
    cus_autoptr(cus_host_buffer) host = NULL;
    CUS_TRY(cus_host_buffer_alloc(ctx, 2 * sizeof(unsigned int), 0, &host));
    unsigned int *start = cus_host_buffer_data(host), *result = start + 1;
    *start = START;
    cus_autoptr(cus_stream) stream = NULL;
    CUS_TRY(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &stream));
    cus_autoptr(cus_buffer) flag = NULL;
    CUS_TRY(cus_buffer_alloc(ctx, sizeof(unsigned int), &flag));

    for (unsigned int if_value = 0; if_value < 2; if_value++) {
        /* On the graph's stream: a non-blocking stream does not wait for
         * cus_buffer_fill_u32's legacy-stream fill. */
        CUS_TRY(cus_buffer_fill_u32_async(flag, 0, 0, 1, stream));
        cus_autoptr(cus_graph) g = NULL;
        CUS_TRY(build(ctx, start, result, flag, if_value, &g));
        cus_autoptr(cus_graph_exec) exec = NULL;
        CUS_TRY(cus_graph_instantiate(g, 0, &exec));
        *result = 12345;
        twin_runs = 0;
        CUS_TRY(cus_graph_exec_launch(exec, stream));
        CUS_TRY(cus_stream_synchronize(stream));
        unsigned int f = 0;
        CUS_TRY(cus_copy_to_host(&f, flag, 0, sizeof f));
        printf("WHILE: counter %u -> %u in one launch", START, *result);
        if (on_fake)
            printf(" (the body ran %lu times)", twin_runs);
        printf("; IF with value %u: flag %u\n", if_value, f);
        if (*result != 0 || f != if_value || (on_fake && twin_runs != START))
            return CUS_ERROR_INVALID_ARGUMENT;
    }
    return CUS_SUCCESS;
}

int main(void)
{
    bool on_fake = false;
    if (cus_init() != CUS_SUCCESS) {
        printf("%s\n", cus_last_error_message());
        printf("no GPU here: running on cuscope's fake driver, the kernel on the CPU\n");
        if (cus_fake_install(NULL) != CUS_SUCCESS ||
            cus_fake_register_kernel("countdown", countdown_on_host, NULL) != CUS_SUCCESS ||
            cus_init() != CUS_SUCCESS) {
            fprintf(stderr, "tutorial-graph-while: the fake driver failed: %s\n",
                    cus_last_error_message());
            return 1;
        }
        on_fake = true;
    }
    cus_status st = run(on_fake);
    if (st == CUS_ERROR_NOT_SUPPORTED) {
        printf("%s: skipped\n", cus_last_error_message());
        return 77;
    }
    if (st != CUS_SUCCESS) {
        fprintf(stderr, "tutorial-graph-while: %s (%s)\n", cus_last_error_message(),
                cus_status_name(st));
        return 1;
    }
    if (cus_debug_live_objects() != 0) {
        fprintf(stderr, "tutorial-graph-while: %zu objects still alive\n",
                cus_debug_live_objects());
        return 1;
    }
    if (on_fake && cus_fake_uninstall() != CUS_SUCCESS) {
        fprintf(stderr, "tutorial-graph-while: %s\n", cus_last_error_message());
        return 1;
    }
    return 0;
}
