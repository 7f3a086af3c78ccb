/* gpu only: conditional nodes on the real driver. A WHILE node whose body
 * is kernels/countdown.cu (the counter decremented, the condition set with
 * cudaGraphSetConditional) brings a counter from 1000 to 0 in one graph
 * launch, twice (the handle's default applied anew at each launch); IF with
 * the values 0 and 1; SWITCH when the driver has it (12.8). Prints what each
 * did. Exits 77 (skipped) without a driver or device, or on a driver before
 * 12.3. */
#include <stdio.h>
#include <stdlib.h>

#include <cuscope/cuscope.h>

#include "cusk-images.h"
#include "harness/env.h"

#define START 1000u

static void need_12030(void)
{
    int version = 0;
    assert_ok(cus_driver_version(&version));
    if (version < 12030) {
        printf("skipping: driver API %d.%d has no conditional nodes (12.3+)\n", version / 1000,
               version % 1000 / 10);
        exit(77);
    }
}

static void test_while_countdown(void **state)
{
    (void)state;
    need_12030();
    cus_device dev;
    assert_ok(cus_device_get(0, &dev));
    cus_autoptr(cus_context) ctx = NULL;
    assert_ok(cus_context_retain_primary(dev, &ctx));
    cus_autoptr(cus_module) m = NULL;
    cus_status st = cus_module_load_data(ctx, cusk_countdown.fatbin, cusk_countdown.fatbin_size,
                                         NULL, &m);
    if (st != CUS_SUCCESS)
        fail_msg("loading countdown.cu (cudaGraphSetConditional, no -rdc): %s",
                 cus_last_error_message());
    cus_autoptr(cus_function) fn = NULL;
    assert_ok(cus_module_get_function(m, "countdown", &fn));
    cus_autoptr(cus_stream) s = NULL;
    assert_ok(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &s));
    cus_autoptr(cus_buffer) counter = NULL;
    assert_ok(cus_buffer_alloc(ctx, sizeof(unsigned int), &counter));
    const unsigned int start = START;
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_graph_create(ctx, &g));
    CUgraphConditionalHandle h = 0;
    assert_ok(cus_graph_conditional_create(g, 1, true, &h));
    cus_graph_node in, loop;
    assert_ok(cus_graph_add_copy_to_device(g, NULL, 0, &in, counter, 0, &start, sizeof start));
    cus_autoptr(cus_graph) body = NULL;
    assert_ok(cus_graph_add_conditional(g, &in, 1, &loop, h, CU_GRAPH_COND_TYPE_WHILE, 1, &body));
    assert_ok(cus_graph_add_kernel(body, NULL, 0, NULL, fn, 1, 32, 0, counter, h));
    cus_autoptr(cus_graph_exec) e = NULL;
    assert_ok(cus_graph_instantiate(g, 0, &e));
    for (int launch = 1; launch <= 2; launch++) {
        assert_ok(cus_graph_exec_launch(e, s));
        assert_ok(cus_stream_synchronize(s));
        unsigned int left = 12345;
        assert_ok(cus_copy_to_host(&left, counter, 0, sizeof left));
        printf("gpu-graph-conditional: WHILE launch %d: counter %u -> %u\n", launch, START, left);
        assert_int_equal(left, 0);
    }
}

/* An IF (or SWITCH) node of `size` bodies, body i filling word i with
 * 10 + i; the handle's default is value. Returns the words. */
static void branch(CUgraphConditionalNodeType type, unsigned int size, unsigned int value,
                   unsigned int *words)
{
    cus_device dev;
    assert_ok(cus_device_get(0, &dev));
    cus_autoptr(cus_context) ctx = NULL;
    assert_ok(cus_context_retain_primary(dev, &ctx));
    cus_autoptr(cus_stream) s = NULL;
    assert_ok(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &s));
    cus_autoptr(cus_buffer) buf = NULL;
    assert_ok(cus_buffer_alloc(ctx, 4 * sizeof(unsigned int), &buf));
    assert_ok(cus_buffer_fill_u32_async(buf, 0, 0, 4, s)); /* s: before the launch */
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_graph_create(ctx, &g));
    CUgraphConditionalHandle h = 0;
    assert_ok(cus_graph_conditional_create(g, value, true, &h));
    cus_graph *bodies[4] = {NULL};
    assert_ok(cus_graph_add_conditional(g, NULL, 0, NULL, h, type, size, bodies));
    for (unsigned int i = 0; i < size; i++) {
        assert_ok(cus_graph_add_fill_u32(bodies[i], NULL, 0, NULL, buf, i * 4, 10 + i, 1));
        cus_graph_unref(bodies[i]);
    }
    cus_autoptr(cus_graph_exec) e = NULL;
    assert_ok(cus_graph_instantiate(g, 0, &e));
    assert_ok(cus_graph_exec_launch(e, s));
    assert_ok(cus_stream_synchronize(s));
    assert_ok(cus_copy_to_host(words, buf, 0, 4 * sizeof(unsigned int)));
    printf("gpu-graph-conditional: %s of %u bodies, value %u: words %u %u %u %u\n",
           type == CU_GRAPH_COND_TYPE_IF ? "IF" : "SWITCH", size, value, words[0], words[1],
           words[2], words[3]);
}

static void test_if_and_switch(void **state)
{
    (void)state;
    need_12030();
    unsigned int w[4];
    branch(CU_GRAPH_COND_TYPE_IF, 1, 0, w);
    assert_int_equal(w[0], 0);
    branch(CU_GRAPH_COND_TYPE_IF, 1, 1, w);
    assert_int_equal(w[0], 10);
    int version = 0;
    assert_ok(cus_driver_version(&version));
    if (version < 12080) {
        printf("gpu-graph-conditional: driver %d: no IF/ELSE or SWITCH (12.8+)\n", version);
        return;
    }
    branch(CU_GRAPH_COND_TYPE_IF, 2, 0, w);
    assert_int_equal(w[0], 0);
    assert_int_equal(w[1], 11);
    branch(CU_GRAPH_COND_TYPE_SWITCH, 3, 2, w);
    assert_int_equal(w[0], 0);
    assert_int_equal(w[1], 0);
    assert_int_equal(w[2], 12);
    branch(CU_GRAPH_COND_TYPE_SWITCH, 3, 7, w);
    assert_int_equal(w[0] + w[1] + w[2], 0);
}

int main(void)
{
    env_require_driver_or_skip();
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_while_countdown),
        ENV_TEST(test_if_and_switch),
    };
    return cmocka_run_group_tests_name("gpu-graph-conditional", tests, NULL, NULL);
}
