/* The fake_module tests, part launch: launches and host kernels. Their
 * fixtures, and what the fake_module tests are about:
 * fake_module_fixtures.h. */
#include "fake_module_fixtures.h"

/* --- launches ------------------------------------------------------------------------------ */

static void test_launch_is_recorded_with_the_arguments_at_their_offsets(void **state)
{
    (void)state;
    cus_fake_launch rec;
    assert_int_equal(cus_fake_last_launch(&rec), CUS_ERROR_OUT_OF_RANGE);
    assert_int_equal(cus_fake_launch_at(0, &rec), CUS_ERROR_OUT_OF_RANGE);
    CUmodule m = load_text(test_ptx);
    CUfunction f = function(m, "add");
    uint64_t p = 0x1122334455667788u;
    uint32_t v = 0xa1b2c3d4u;
    void *args[] = {&p, &v};
    assert_cu_ok(D.launch(f, 3, 2, 1, 32, 4, 2, 128, CU_STREAM_LEGACY, args, NULL));
    assert_int_equal(cus_fake_launch_count(), 1);
    assert_ok(cus_fake_last_launch(&rec));
    assert_string_equal(rec.function, "add");
    assert_ptr_equal(rec.handle, f);
    assert_ptr_equal(rec.context, ctx);
    assert_ptr_equal(rec.stream, CU_STREAM_LEGACY); /* as passed */
    assert_int_equal(rec.grid[0], 3);
    assert_int_equal(rec.grid[1], 2);
    assert_int_equal(rec.grid[2], 1);
    assert_int_equal(rec.block[0], 32);
    assert_int_equal(rec.block[1], 4);
    assert_int_equal(rec.block[2], 2);
    assert_int_equal(rec.cluster[0] | rec.cluster[1] | rec.cluster[2], 0);
    assert_int_equal(rec.shared_bytes, 128);
    assert_false(rec.cooperative);
    assert_false(rec.extended);
    assert_int_equal(rec.nargs, 2);
    assert_int_equal(rec.arg_bytes, 12);
    assert_memory_equal(rec.args, &p, 8);
    assert_memory_equal(rec.args + 8, &v, 4);
    cus_fake_launch first;
    assert_ok(cus_fake_launch_at(0, &first));
    assert_memory_equal(&first, &rec, sizeof rec);
    /* Queued, not run: it runs at synchronization. */
    assert_int_equal(cus_fake_stream_pending(NULL), 1);
    assert_cu_ok(D.ctx_sync());
    assert_int_equal(cus_fake_stream_pending(NULL), 0);
    /* noargs takes NULL parameters. */
    assert_cu_ok(D.launch(function(m, "noargs"), 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
    assert_ok(cus_fake_last_launch(&rec));
    assert_int_equal(rec.nargs, 0);
    assert_int_equal(rec.arg_bytes, 0);
    assert_null(rec.stream);
    assert_int_equal(cus_fake_launch_count(), 2);
    assert_int_equal(cus_fake_launch_at(2, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_cu_ok(D.unload(m)); /* runs the queued launch first */
    assert_int_equal(cus_fake_stream_pending(NULL), 0);
    assert_string_equal(rec.function, "noargs"); /* still valid after the unload */
}

static void test_launch_validates_the_configuration(void **state)
{
    (void)state;
    CUmodule m = load_text(test_ptx);
    CUfunction add = function(m, "add");
    CUfunction bounded = function(m, "bounded"), exact = function(m, "exact");
    CUfunction noargs = function(m, "noargs");
    uint64_t p = 1;
    uint32_t v = 2;
    void *args[] = {&p, &v};
    const CUresult INVAL = CUDA_ERROR_INVALID_VALUE;
    /* zeros */
    assert_cu(D.launch(add, 0, 1, 1, 1, 1, 1, 0, NULL, args, NULL), INVAL);
    assert_cu(D.launch(add, 1, 0, 1, 1, 1, 1, 0, NULL, args, NULL), INVAL);
    assert_cu(D.launch(add, 1, 1, 0, 1, 1, 1, 0, NULL, args, NULL), INVAL);
    assert_cu(D.launch(add, 1, 1, 1, 0, 1, 1, 0, NULL, args, NULL), INVAL);
    assert_cu(D.launch(add, 1, 1, 1, 1, 0, 1, 0, NULL, args, NULL), INVAL);
    assert_cu(D.launch(add, 1, 1, 1, 1, 1, 0, 0, NULL, args, NULL), INVAL);
    /* blocks */
    assert_cu_ok(D.launch(add, 1, 1, 1, 1024, 1, 1, 0, NULL, args, NULL));
    assert_cu(D.launch(add, 1, 1, 1, 1025, 1, 1, 0, NULL, args, NULL), INVAL);
    assert_cu(D.launch(add, 1, 1, 1, 32, 32, 2, 0, NULL, args, NULL), INVAL); /* 2048 threads */
    assert_cu(D.launch(add, 1, 1, 1, 1, 1025, 1, 0, NULL, args, NULL), INVAL);
    assert_cu(D.launch(add, 1, 1, 1, 1, 1, 65, 0, NULL, args, NULL), INVAL);
    assert_cu_ok(D.launch(add, 1, 1, 1, 1, 1, 64, 0, NULL, args, NULL));
    assert_cu_ok(D.launch(bounded, 1, 1, 1, 128, 1, 1, 0, NULL, args, NULL));
    assert_cu(D.launch(bounded, 1, 1, 1, 129, 1, 1, 0, NULL, args, NULL), INVAL); /* .maxntid */
    assert_cu(D.launch(bounded, 1, 1, 1, 8, 8, 4, 0, NULL, args, NULL), INVAL);
    assert_cu_ok(D.launch(exact, 1, 1, 1, 64, 2, 1, 0, NULL, NULL, NULL));
    assert_cu(D.launch(exact, 1, 1, 1, 128, 1, 1, 0, NULL, NULL, NULL), INVAL); /* .reqntid */
    assert_cu(D.launch(exact, 1, 1, 1, 32, 2, 1, 0, NULL, NULL, NULL), INVAL);
    /* grids */
    assert_cu_ok(D.launch(add, 0x7fffffffu, 65535, 65535, 1, 1, 1, 0, NULL, args, NULL));
    assert_cu(D.launch(add, 0x80000000u, 1, 1, 1, 1, 1, 0, NULL, args, NULL), INVAL);
    assert_cu(D.launch(add, 1, 65536, 1, 1, 1, 1, 0, NULL, args, NULL), INVAL);
    assert_cu(D.launch(add, 1, 1, 65536, 1, 1, 1, 0, NULL, args, NULL), INVAL);
    /* dynamic shared memory: up to the function's maximum */
    assert_cu_ok(D.launch(add, 1, 1, 1, 1, 1, 1, 49152, NULL, args, NULL));
    assert_cu(D.launch(add, 1, 1, 1, 1, 1, 1, 49153, NULL, args, NULL), INVAL);
    assert_cu(D.launch(bounded, 1, 1, 1, 1, 1, 1, 49152, NULL, args, NULL), INVAL);
    assert_cu_ok(D.set_attr(add, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 100000));
    assert_cu_ok(D.launch(add, 1, 1, 1, 1, 1, 1, 100000, NULL, args, NULL));
    assert_cu(D.launch(add, 1, 1, 1, 1, 1, 1, 100001, NULL, args, NULL), INVAL);
    /* parameters */
    assert_cu(D.launch(add, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL), INVAL);
    assert_cu_ok(D.launch(noargs, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
    size_t size = 12;
    unsigned char buf[16] = {0};
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                     CU_LAUNCH_PARAM_END};
    assert_cu(D.launch(add, 1, 1, 1, 1, 1, 1, 0, NULL, args, extra), INVAL); /* both */
    /* more than the fake's 4 KiB of arguments */
    unsigned char big[5000] = {0};
    void *bigargs[] = {big};
    assert_cu(D.launch(function(m, "big"), 1, 1, 1, 1, 1, 1, 0, NULL, bigargs, NULL), INVAL);
    assert_cu(D.launch(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL), CUDA_ERROR_INVALID_HANDLE);

    assert_int_equal(cus_fake_launch_count(), 8); /* the successful ones only */
    assert_cu_ok(D.ctx_sync());
    assert_cu_ok(D.unload(m));
    assert_int_equal(cus_fake_misuse_count(), 0);
}

static void test_launch_with_an_extra_buffer(void **state)
{
    (void)state;
    CUmodule m = load_text(test_ptx);
    CUfunction add = function(m, "add");
    unsigned char buf[16];
    for (int i = 0; i < 16; i++)
        buf[i] = (unsigned char)(0x40 + i);
    size_t size = sizeof buf;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                     CU_LAUNCH_PARAM_END};
    assert_cu_ok(D.launch(add, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, extra));
    cus_fake_launch rec;
    assert_ok(cus_fake_last_launch(&rec));
    assert_int_equal(rec.arg_bytes, 12);
    assert_memory_equal(rec.args, buf, 12);
    size = 8; /* smaller than the parameters */
    assert_cu(D.launch(add, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, extra), CUDA_ERROR_INVALID_VALUE);
    void *no_size[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_END};
    assert_cu(D.launch(add, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, no_size), CUDA_ERROR_INVALID_VALUE);
    void *unknown[] = {(void *)(uintptr_t)7, buf, CU_LAUNCH_PARAM_END};
    assert_cu(D.launch(add, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, unknown), CUDA_ERROR_INVALID_VALUE);
    void *empty[] = {CU_LAUNCH_PARAM_END};
    assert_cu_ok(D.launch(function(m, "noargs"), 1, 1, 1, 1, 1, 1, 0, NULL, NULL, empty));
    assert_int_equal(cus_fake_launch_count(), 2);
    assert_cu_ok(D.unload(m));
}

static void test_launch_ex_clusters_and_cooperative_launches(void **state)
{
    (void)state;
    CUmodule m = load_text(test_ptx);
    CUfunction add = function(m, "add");
    uint64_t p = 1;
    uint32_t v = 2;
    void *args[] = {&p, &v};
    CUlaunchAttribute at[2];
    memset(at, 0, sizeof at);
    at[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    at[0].value.clusterDim.x = 2;
    at[0].value.clusterDim.y = 1;
    at[0].value.clusterDim.z = 1;
    CUlaunchConfig cfg = {.gridDimX = 4, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 128,
                          .blockDimY = 1, .blockDimZ = 1, .attrs = at, .numAttrs = 1};
    assert_cu_ok(D.launch_ex(&cfg, add, args, NULL));
    cus_fake_launch rec;
    assert_ok(cus_fake_last_launch(&rec));
    assert_true(rec.extended);
    assert_int_equal(rec.cluster[0], 2);
    assert_int_equal(rec.cluster[1], 1);
    assert_int_equal(rec.cluster[2], 1);
    assert_false(rec.cooperative);
    cfg.gridDimX = 3; /* not a multiple of the cluster */
    assert_cu(D.launch_ex(&cfg, add, args, NULL), CUDA_ERROR_INVALID_CLUSTER_SIZE);
    cfg.gridDimX = 4;
    cfg.gridDimY = 4;
    at[0].value.clusterDim.x = 4;
    at[0].value.clusterDim.y = 4; /* 16: above the portable 8 */
    assert_cu(D.launch_ex(&cfg, add, args, NULL), CUDA_ERROR_INVALID_CLUSTER_SIZE);
    assert_cu_ok(D.set_attr(add, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1));
    assert_cu_ok(D.launch_ex(&cfg, add, args, NULL));
    at[0].value.clusterDim.z = 0;
    assert_cu(D.launch_ex(&cfg, add, args, NULL), CUDA_ERROR_INVALID_CLUSTER_SIZE);

    /* Cooperative: the grid must fit the device at once (2 x 132 blocks of 1024). */
    at[0].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    at[0].value.cooperative = 1;
    cfg.gridDimX = 264;
    cfg.gridDimY = 1;
    cfg.blockDimX = 1024;
    assert_cu_ok(D.launch_ex(&cfg, add, args, NULL));
    assert_ok(cus_fake_last_launch(&rec));
    assert_true(rec.cooperative);
    assert_int_equal(rec.cluster[0], 0);
    cfg.gridDimX = 265;
    assert_cu(D.launch_ex(&cfg, add, args, NULL), CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);

    /* Other attributes */
    at[0].id = CU_LAUNCH_ATTRIBUTE_PRIORITY; /* a hint */
    at[0].value.priority = -1;
    assert_cu_ok(D.launch_ex(&cfg, add, args, NULL));
    at[0].id = CU_LAUNCH_ATTRIBUTE_IGNORE;
    at[1].id = (CUlaunchAttributeID)12; /* LAUNCH_COMPLETION_EVENT: not emulated */
    cfg.numAttrs = 2;
    assert_cu(D.launch_ex(&cfg, add, args, NULL), CUDA_ERROR_NOT_SUPPORTED);
    at[1].id = CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY; /* streams only */
    assert_cu(D.launch_ex(&cfg, add, args, NULL), CUDA_ERROR_INVALID_VALUE);
    at[1].id = (CUlaunchAttributeID)99;
    assert_cu(D.launch_ex(&cfg, add, args, NULL), CUDA_ERROR_INVALID_VALUE);
    cfg.attrs = NULL;
    assert_cu(D.launch_ex(&cfg, add, args, NULL), CUDA_ERROR_INVALID_VALUE);
    cfg.numAttrs = 0; /* no attributes: a plain launch */
    assert_cu_ok(D.launch_ex(&cfg, add, args, NULL));
    cfg.blockDimX = 0;
    assert_cu(D.launch_ex(&cfg, add, args, NULL), CUDA_ERROR_INVALID_VALUE);
    assert_cu(D.launch_ex(NULL, add, args, NULL), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cus_fake_launch_count(), 5);
    assert_cu_ok(D.unload(m));
}

static void test_launch_ring_keeps_the_last_256(void **state)
{
    (void)state;
    CUmodule m = load_text(test_ptx);
    CUfunction f = function(m, "noargs");
    for (unsigned int i = 0; i < 300; i++)
        assert_cu_ok(D.launch(f, i + 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
    assert_int_equal(cus_fake_launch_count(), 300);
    cus_fake_launch rec;
    assert_int_equal(cus_fake_launch_at(0, &rec), CUS_ERROR_OUT_OF_RANGE);
    assert_int_equal(cus_fake_launch_at(43, &rec), CUS_ERROR_OUT_OF_RANGE);
    assert_ok(cus_fake_launch_at(44, &rec));
    assert_int_equal(rec.grid[0], 45);
    assert_ok(cus_fake_launch_at(299, &rec));
    assert_int_equal(rec.grid[0], 300);
    assert_int_equal(cus_fake_launch_at(300, &rec), CUS_ERROR_OUT_OF_RANGE);
    assert_ok(cus_fake_last_launch(&rec));
    assert_int_equal(rec.grid[0], 300);
    /* A slot reused by a launch with fewer argument bytes: the rest is zero. */
    CUfunction add = function(m, "add");
    for (int i = 0; i < 256; i++)
        assert_cu_ok(launch_add(add, NULL, UINT64_MAX, UINT32_MAX));
    for (int i = 0; i < 256; i++)
        assert_cu_ok(D.launch(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
    static const unsigned char zeros[CUS_FAKE_MAX_LAUNCH_ARG_BYTES];
    for (unsigned long i = 300 + 256; i < 300 + 512; i++) {
        assert_ok(cus_fake_launch_at(i, &rec));
        assert_string_equal(rec.function, "noargs");
        assert_memory_equal(rec.args, zeros, sizeof zeros);
    }
    assert_cu_ok(D.unload(m));
}

static void test_a_launch_counts_as_one_operation_for_event_timing(void **state)
{
    (void)state;
    CUmodule m = load_text(test_ptx);
    CUfunction f = function(m, "noargs");
    CUevent a = NULL, b = NULL;
    assert_cu_ok(D.event_create(&a, 0));
    assert_cu_ok(D.event_create(&b, 0));
    assert_cu_ok(D.event_record(a, NULL));
    assert_cu_ok(D.launch(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
    assert_cu_ok(D.launch(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
    assert_cu_ok(D.event_record(b, NULL));
    assert_cu_ok(D.event_sync(b));
    float ms = 0;
    assert_cu_ok(D.elapsed(&ms, a, b));
    assert_float_equal(ms, 0.002, 1e-6);
    assert_cu_ok(D.event_destroy(a));
    assert_cu_ok(D.event_destroy(b));
    assert_cu_ok(D.unload(m));
}

/* A function carries its context: a launch runs there with another context
 * current, or none, as on the H200 (test/rules/expected.txt), and the legacy
 * stream handles are that context's default stream. */
static void test_a_launch_runs_in_its_functions_context(void **state)
{
    (void)state;
    CUmodule m = load_text(test_ptx);
    CUfunction f = function(m, "add");
    CUcontext other = NULL;
    assert_cu_ok(D.ctx_create(&other, 0, 0)); /* now current */
    assert_cu_ok(launch_add(f, NULL, 1, 2));
    cus_fake_launch l;
    assert_ok(cus_fake_last_launch(&l));
    assert_ptr_equal(l.context, ctx);
    assert_int_equal(cus_fake_stream_pending(NULL), 0); /* not other's default stream */
    /* A stream of another context than the function's: the handle is wrong. */
    CUstream s = NULL;
    assert_cu_ok(D.stream_create(&s, 0));
    assert_cu(launch_add(f, s, 1, 2), CUDA_ERROR_INVALID_HANDLE);
    assert_int_equal(cus_fake_misuse_count(), 0); /* as cuEventRecord: no misuse */
    assert_cu_ok(D.ctx_destroy(other)); /* pops it; ctx current again, s destroyed */
    assert_int_equal(cus_fake_stream_pending(NULL), 1); /* ctx's default stream */
    CUcontext popped = NULL;
    assert_cu_ok(D.pop(&popped));
    assert_ptr_equal(popped, ctx);
    assert_cu_ok(launch_add(f, NULL, 1, 2)); /* with none current */
    assert_int_equal(cus_fake_launch_count(), 2);
    /* destroyed with other: as the H200 answers */
    assert_cu(launch_add(f, s, 1, 2), CUDA_ERROR_CONTEXT_IS_DESTROYED);
    assert_int_equal(cus_fake_misuse_count(), 1);
    uint64_t p = 1;
    void *args[] = {&p, NULL};
    assert_cu(D.launch(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cus_fake_misuse_count(), 2);
    assert_contains(cus_fake_last_misuse(), "kernelParams[1]");
    assert_cu_ok(D.push(ctx));
    assert_int_equal(cus_fake_stream_pending(NULL), 2);
    assert_cu_ok(D.ctx_sync());
    assert_cu_ok(D.unload(m));
}

static void test_host_kernel_runs_in_stream_order_on_the_synchronizing_thread(void **state)
{
    (void)state;
    add_probe pr;
    memset(&pr, 0, sizeof pr);
    assert_ok(cus_fake_register_kernel("add", add_twin, &pr));
    CUmodule m = load_text(test_ptx); /* registered before the load: works as well */
    CUfunction f = function(m, "add");
    CUstream s = NULL;
    assert_cu_ok(D.stream_create(&s, CU_STREAM_NON_BLOCKING));
    assert_cu_ok(launch_add(f, s, 0xabcdef, 77));
    assert_int_equal(pr.runs, 0); /* never at enqueue */
    assert_cu_ok(D.stream_sync(s));
    assert_int_equal(pr.runs, 1);
    assert_true(pthread_equal(pr.thread, pthread_self()));
    assert_false(pr.on_driver_thread);
    assert_int_equal(pr.p, 0xabcdef);
    assert_int_equal(pr.v, 77);
    assert_string_equal(pr.seen.function, "add");
    assert_ptr_equal(pr.seen.stream, s);
    /* An unregistered kernel does nothing; removal. */
    assert_cu_ok(D.launch(function(m, "noargs"), 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
    assert_ok(cus_fake_register_kernel("add", NULL, NULL));
    assert_ok(cus_fake_register_kernel("add", NULL, NULL)); /* nothing to remove: fine */
    assert_cu_ok(launch_add(f, s, 1, 1));
    assert_cu_ok(D.stream_sync(s));
    assert_int_equal(pr.runs, 1);
    /* Registered after the load, and queries run it as a step. */
    assert_ok(cus_fake_register_kernel("add", add_twin, &pr));
    assert_cu_ok(launch_add(f, s, 5, 6));
    assert_cu(D.stream_query(s), CUDA_ERROR_NOT_READY);
    assert_int_equal(pr.runs, 2);
    assert_cu_ok(D.stream_query(s));
    assert_cu_ok(D.stream_destroy(s));
    assert_cu_ok(D.unload(m));
}

static void test_register_kernel_limits(void **state)
{
    (void)state;
    /* Every name free: the harness registered the twins of kernels/. */
    twins_unregister();
    add_probe pr;
    memset(&pr, 0, sizeof pr);
    assert_int_equal(cus_fake_register_kernel(NULL, add_twin, &pr), CUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(cus_fake_register_kernel("", add_twin, &pr), CUS_ERROR_INVALID_ARGUMENT);
    char name[32];
    for (int i = 0; i < 64; i++) {
        snprintf(name, sizeof name, "k%d", i);
        assert_ok(cus_fake_register_kernel(name, add_twin, &pr));
    }
    assert_int_equal(cus_fake_register_kernel("add", add_twin, &pr), CUS_ERROR_INVALID_ARGUMENT);
    assert_ok(cus_fake_register_kernel("k5", add_twin, NULL)); /* replacing takes no slot */
    assert_ok(cus_fake_register_kernel("k5", NULL, NULL));
    assert_ok(cus_fake_register_kernel("add", add_twin, &pr)); /* the freed slot */
    CUmodule m = load_text(test_ptx);
    assert_cu_ok(launch_add(function(m, "add"), NULL, 1, 2));
    assert_cu_ok(D.ctx_sync());
    assert_int_equal(pr.runs, 1);
    assert_cu_ok(D.unload(m));
}

static void test_host_kernel_calling_the_driver_is_refused(void **state)
{
    (void)state;
    add_probe pr;
    memset(&pr, 0, sizeof pr);
    pr.call_driver = true;
    assert_ok(cus_fake_register_kernel("add", add_twin, &pr));
    CUmodule m = load_text(test_ptx);
    assert_cu_ok(launch_add(function(m, "add"), NULL, 1, 2));
    assert_cu_ok(D.ctx_sync());
    assert_int_equal(pr.runs, 1);
    assert_int_equal(pr.inner, CUDA_ERROR_NOT_PERMITTED);
    assert_int_equal(cus_fake_misuse_count(), 1);
    assert_contains(cus_fake_last_misuse(), "CUDA call inside a host function (cuCtxSynchronize)");
    assert_cu_ok(D.unload(m));
}

static void test_a_non_sticky_kernel_result_is_misuse(void **state)
{
    (void)state;
    add_probe pr;
    memset(&pr, 0, sizeof pr);
    pr.result = CUDA_ERROR_INVALID_VALUE;
    assert_ok(cus_fake_register_kernel("add", add_twin, &pr));
    CUmodule m = load_text(test_ptx);
    assert_cu_ok(launch_add(function(m, "add"), NULL, 1, 2));
    assert_cu_ok(D.ctx_sync()); /* not the kernel's fate: ignored */
    assert_int_equal(cus_fake_misuse_count(), 1);
    assert_contains(cus_fake_last_misuse(), "neither CUDA_SUCCESS nor a sticky error");
    assert_cu_ok(launch_add(function(m, "add"), NULL, 1, 2)); /* the context is fine */
    assert_cu_ok(D.unload(m));
}

static void test_kernels_without_a_twin_are_counted(void **state)
{
    (void)state;
    const char *last = "x";
    assert_int_equal(cus_fake_kernels_without_twin(&last), 0);
    assert_null(last);
    CUmodule m = load_text(test_ptx);
    assert_cu_ok(launch_add(function(m, "add"), NULL, 1, 2));
    assert_int_equal(cus_fake_kernels_without_twin(NULL), 0); /* queued: not run yet */
    assert_cu_ok(D.ctx_sync());
    assert_int_equal(cus_fake_kernels_without_twin(&last), 1);
    assert_string_equal(last, "add");
    /* one with a twin is not counted */
    add_probe pr;
    memset(&pr, 0, sizeof pr);
    assert_ok(cus_fake_register_kernel("add", add_twin, &pr));
    assert_cu_ok(launch_add(function(m, "add"), NULL, 1, 2));
    assert_cu_ok(D.ctx_sync());
    assert_int_equal(cus_fake_kernels_without_twin(NULL), 1);
    assert_int_equal(cus_fake_misuse_count(), 0);
    assert_cu_ok(D.unload(m));
}

static int strict_setup(void **state)
{
    (void)state;
    static const cus_fake_config cfg = {.strict_kernels = true};
    return setup_with(&cfg);
}

static void test_strict_kernels_fail_a_kernel_without_a_twin(void **state)
{
    (void)state;
    CUmodule m = load_text(test_ptx);
    CUfunction add = function(m, "add");
    add_probe pr;
    memset(&pr, 0, sizeof pr);
    assert_ok(cus_fake_register_kernel("add", add_twin, &pr));
    assert_cu_ok(launch_add(add, NULL, 1, 2)); /* a twin: fine */
    assert_cu_ok(D.ctx_sync());
    /* noargs has none: the launch is accepted, its execution fails as a
     * faulting kernel's does, and poisons the context */
    assert_cu_ok(D.launch(function(m, "noargs"), 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
    assert_cu(D.ctx_sync(), CUDA_ERROR_LAUNCH_FAILED);
    assert_int_equal(cus_fake_misuse_count(), 1);
    assert_contains(cus_fake_last_misuse(), "kernel 'noargs' ran with no host implementation");
    const char *last = NULL;
    assert_int_equal(cus_fake_kernels_without_twin(&last), 1);
    assert_string_equal(last, "noargs");
    assert_cu(launch_add(add, NULL, 1, 2), CUDA_ERROR_LAUNCH_FAILED);
    (void)D.unload(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        MOD_TEST(test_launch_is_recorded_with_the_arguments_at_their_offsets),
        MOD_TEST(test_launch_validates_the_configuration),
        MOD_TEST(test_launch_with_an_extra_buffer),
        MOD_TEST(test_launch_ex_clusters_and_cooperative_launches),
        MOD_TEST(test_launch_ring_keeps_the_last_256),
        MOD_TEST(test_a_launch_counts_as_one_operation_for_event_timing),
        MISUSE_TEST(test_a_launch_runs_in_its_functions_context),
        MOD_TEST(test_host_kernel_runs_in_stream_order_on_the_synchronizing_thread),
        MOD_TEST(test_register_kernel_limits),
        MISUSE_TEST(test_host_kernel_calling_the_driver_is_refused),
        MISUSE_TEST(test_a_non_sticky_kernel_result_is_misuse),
        MOD_TEST(test_kernels_without_a_twin_are_counted),
        cmocka_unit_test_setup_teardown(test_strict_kernels_fail_a_kernel_without_a_twin,
                                        strict_setup, mod_teardown_after_misuse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
