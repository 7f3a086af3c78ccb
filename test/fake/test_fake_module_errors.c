/* The fake_module tests, part errors: sticky errors, module lifetime and
 * misuse, threads, fault injection. Their fixtures, and what the fake_module
 * tests are about: fake_module_fixtures.h. */
#include "fake_module_fixtures.h"

/* --- sticky errors -------------------------------------------------------------------------- */

static void CUDA_CB nop_host_fn(void *data)
{
    (void)data;
}

static void test_a_sticky_kernel_error_poisons_the_context(void **state)
{
    (void)state;
    add_probe pr;
    memset(&pr, 0, sizeof pr);
    pr.result = CUDA_ERROR_ILLEGAL_ADDRESS;
    assert_ok(cus_fake_register_kernel("add", add_twin, &pr));
    CUmodule m = load_text(test_ptx);
    CUfunction f = function(m, "add");
    CUdeviceptr buf = 0;
    assert_cu_ok(D.alloc(&buf, 64));
    assert_cu_ok(D.memset8(buf, 0xaa, 64));
    CUstream s = NULL;
    assert_cu_ok(D.stream_create(&s, 0));
    CUevent e = NULL;
    assert_cu_ok(D.event_create(&e, 0));
    CUdeviceptr abuf = 0;
    assert_cu_ok(D.alloc_async(&abuf, 32, s));
    assert_cu_ok(launch_add(f, s, buf, 1));
    assert_cu_ok(D.memset8_async(buf, 0x55, 64, s)); /* after the fault: never happens */
    assert_cu_ok(D.event_record(e, s));
    assert_cu(D.stream_sync(s), CUDA_ERROR_ILLEGAL_ADDRESS); /* the call that ran it */
    assert_int_equal(pr.runs, 1);
    assert_int_equal(((unsigned char *)(uintptr_t)buf)[0], 0xaa);

    /* Everything that uses the context answers the error now. */
    const CUresult E = CUDA_ERROR_ILLEGAL_ADDRESS;
    assert_cu(D.stream_sync(s), E);
    assert_cu(D.ctx_sync(), E);
    assert_cu(D.event_sync(e), E);
    assert_cu(D.stream_query(s), E);
    assert_cu(D.event_record(e, s), E);
    CUdeviceptr p = 0;
    assert_cu(D.alloc(&p, 16), E);
    CUstream s2 = NULL;
    assert_cu(D.stream_create(&s2, 0), E);
    unsigned char host[4] = {0};
    assert_cu(D.dtoh(host, buf, 4), E);
    assert_cu(D.htod(buf, host, 4), E);
    CUmodule m2 = NULL;
    assert_cu(D.load_data(&m2, test_ptx), E);
    CUfunction g = NULL;
    assert_cu(D.get_function(&g, m, "add"), E);
    assert_cu(D.get_global(&p, NULL, m, "counter"), E);
    int v = 0;
    assert_cu(D.get_attr(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, f), E);
    assert_cu(launch_add(f, s, buf, 1), E);
    assert_cu(D.host_fn(s, nop_host_fn, NULL), E);
    assert_int_equal(cus_fake_launch_count(), 1);
    /* So do the frees, destroys and unloads (as on the H200), and the
     * creations while it is current. */
    assert_cu(D.free_async(abuf, s), E);
    assert_cu(D.free(buf), E);
    assert_cu(D.event_destroy(e), E);
    assert_cu(D.stream_destroy(s), E);
    assert_cu(D.unload(m), E);
    CUcontext other = NULL;
    assert_cu(D.ctx_create(&other, 0, 0), E);
    CUcontext primary = NULL;
    assert_cu(D.retain(&primary, 0), E);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 1);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_STREAM), 1);
    /* The getters of the context and of its memory still answer. */
    CUdevice dev = -1;
    assert_cu_ok(D.ctx_get_device(&dev));
    assert_int_equal(dev, 0);
    CUcontext owner = NULL;
    assert_cu_ok(D.pointer_attr(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, buf));
    assert_ptr_equal(owner, ctx);

    /* Destroying the context releases everything it had. */
    assert_cu_ok(D.ctx_destroy(ctx));
    ctx = NULL;
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
    assert_int_equal(cus_fake_misuse_count(), 0);
    /* A new context is healthy. */
    assert_cu_ok(D.ctx_create(&ctx, 0, 0));
    assert_cu_ok(D.alloc(&p, 16));
    assert_cu_ok(D.free(p));
}

static void test_a_synchronous_copy_after_a_faulting_kernel_returns_the_error(void **state)
{
    (void)state;
    add_probe pr;
    memset(&pr, 0, sizeof pr);
    pr.result = CUDA_ERROR_LAUNCH_FAILED;
    assert_ok(cus_fake_register_kernel("add", add_twin, &pr));
    CUmodule m = load_text(test_ptx);
    CUdeviceptr buf = 0;
    assert_cu_ok(D.alloc(&buf, 16));
    assert_cu_ok(launch_add(function(m, "add"), NULL, buf, 1));
    unsigned char host[16];
    assert_cu(D.dtoh(host, buf, 16), CUDA_ERROR_LAUNCH_FAILED); /* the copy ran it */
    /* Another context is not affected (made with the poisoned one off the
     * stack: while it is current, creations answer its error). */
    CUcontext popped = NULL;
    assert_cu_ok(D.pop(&popped));
    CUcontext other = NULL;
    assert_cu_ok(D.ctx_create(&other, 0, 0));
    CUdeviceptr p = 0;
    assert_cu_ok(D.alloc(&p, 16));
    assert_cu_ok(D.free(p));
    assert_cu_ok(D.ctx_destroy(other));
    assert_cu_ok(D.push(popped));
    assert_cu(D.ctx_sync(), CUDA_ERROR_LAUNCH_FAILED);
    assert_cu(D.free(buf), CUDA_ERROR_LAUNCH_FAILED); /* its context's death frees it */
    assert_cu(D.unload(m), CUDA_ERROR_LAUNCH_FAILED);
}

static void test_a_poisoned_primary_context_is_reset_by_its_last_release(void **state)
{
    (void)state;
    add_probe pr;
    memset(&pr, 0, sizeof pr);
    pr.result = CUDA_ERROR_ILLEGAL_INSTRUCTION;
    assert_ok(cus_fake_register_kernel("add", add_twin, &pr));
    CUcontext primary = NULL;
    assert_cu_ok(D.retain(&primary, 0));
    assert_cu_ok(D.push(primary));
    CUmodule m = load_text(test_ptx);
    assert_cu_ok(launch_add(function(m, "add"), NULL, 0, 0));
    assert_cu(D.ctx_sync(), CUDA_ERROR_ILLEGAL_INSTRUCTION);
    /* A second retain: refused while it is current, as on the H200; off
     * the stack, the same context, still poisoned. */
    CUcontext again = NULL;
    assert_cu(D.retain(&again, 0), CUDA_ERROR_ILLEGAL_INSTRUCTION);
    CUcontext top = NULL;
    assert_cu_ok(D.pop(&top));
    assert_cu_ok(D.retain(&again, 0));
    assert_ptr_equal(again, primary);
    assert_cu_ok(D.push(primary));
    assert_cu(D.ctx_sync(), CUDA_ERROR_ILLEGAL_INSTRUCTION);
    assert_cu_ok(D.release(0));
    assert_cu(D.ctx_sync(), CUDA_ERROR_ILLEGAL_INSTRUCTION);
    assert_cu_ok(D.release(0)); /* the last: the module goes with it */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 0);
    assert_cu_ok(D.retain(&again, 0));
    assert_ptr_equal(again, primary);
    assert_cu_ok(D.ctx_sync()); /* reset: healthy again */
    CUdeviceptr p = 0;
    assert_cu_ok(D.alloc(&p, 16));
    assert_cu_ok(D.free(p));
    CUcontext popped = NULL;
    assert_cu_ok(D.pop(&popped));
    assert_ptr_equal(popped, primary);
    assert_cu_ok(D.release(0));
    assert_int_equal(cus_fake_misuse_count(), 0);
}

/* --- module lifetime and misuse ------------------------------------------------------------ */

static void test_unload_runs_the_queued_launches_first(void **state)
{
    (void)state;
    add_probe pr;
    memset(&pr, 0, sizeof pr);
    assert_ok(cus_fake_register_kernel("add", add_twin, &pr));
    CUmodule m = load_text(test_ptx);
    CUstream s = NULL;
    assert_cu_ok(D.stream_create(&s, CU_STREAM_NON_BLOCKING));
    assert_cu_ok(launch_add(function(m, "add"), s, 1, 2));
    assert_cu_ok(launch_add(function(m, "add"), NULL, 3, 4));
    assert_cu_ok(D.unload(m));
    assert_int_equal(pr.runs, 2);
    assert_int_equal(cus_fake_stream_pending(s), 0);
    assert_cu_ok(D.stream_destroy(s));
}

static void test_use_after_unload_is_misuse(void **state)
{
    (void)state;
    CUmodule m = load_text(test_ptx);
    CUfunction f = function(m, "add");
    assert_cu_ok(D.unload(m));
    CUfunction g = NULL;
    assert_cu(D.get_function(&g, m, "add"), CUDA_ERROR_INVALID_HANDLE);
    assert_int_equal(cus_fake_misuse_count(), 1);
    assert_contains(cus_fake_last_misuse(), "used after cuModuleUnload");
    assert_cu(D.unload(m), CUDA_ERROR_INVALID_HANDLE);
    assert_int_equal(cus_fake_misuse_count(), 2);
    assert_contains(cus_fake_last_misuse(), "double cuModuleUnload");
    int v = 0;
    assert_cu(D.get_attr(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, f), CUDA_ERROR_INVALID_HANDLE);
    assert_int_equal(cus_fake_misuse_count(), 3);
    assert_contains(cus_fake_last_misuse(), "('add') used after its module");
    assert_cu(launch_add(f, NULL, 1, 2), CUDA_ERROR_INVALID_HANDLE);
    assert_int_equal(cus_fake_misuse_count(), 4);
    /* Unknown handles */
    assert_cu(D.unload((CUmodule)(uintptr_t)0x1234), CUDA_ERROR_INVALID_HANDLE);
    assert_contains(cus_fake_last_misuse(), "unknown module handle 0x1234");
    assert_cu(D.get_attr(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, (CUfunction)(uintptr_t)0x5678),
              CUDA_ERROR_INVALID_HANDLE);
    assert_contains(cus_fake_last_misuse(), "unknown function handle 0x5678");
    assert_cu(D.unload((CUmodule)ctx), CUDA_ERROR_INVALID_HANDLE); /* a context is no module */
    assert_int_equal(cus_fake_misuse_count(), 7);
    assert_cu(D.unload(NULL), CUDA_ERROR_INVALID_HANDLE); /* NULL: an error, not a misuse */
    assert_int_equal(cus_fake_misuse_count(), 7);
    assert_int_equal(cus_fake_launch_count(), 0);
}

static void test_context_destroy_unloads_its_modules(void **state)
{
    (void)state;
    add_probe pr;
    memset(&pr, 0, sizeof pr);
    assert_ok(cus_fake_register_kernel("add", add_twin, &pr));
    CUmodule m = load_text(test_ptx);
    (void)load_text(test_ptx);
    assert_cu_ok(launch_add(function(m, "add"), NULL, 1, 2));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 2);
    assert_cu_ok(D.ctx_destroy(ctx));
    ctx = NULL;
    assert_int_equal(pr.runs, 1); /* its work ran first */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
    assert_int_equal(cus_fake_misuse_count(), 0);
}

static void test_a_module_of_a_destroyed_context_is_misuse(void **state)
{
    (void)state;
    CUmodule m = load_text(test_ptx);
    CUfunction f = function(m, "add");
    CUdeviceptr counter = 0;
    assert_cu_ok(D.get_global(&counter, NULL, m, "counter"));
    assert_cu_ok(D.ctx_destroy(ctx));
    ctx = NULL;
    assert_int_equal(cus_fake_misuse_count(), 0);
    assert_cu(D.unload(m), CUDA_ERROR_INVALID_HANDLE);
    assert_contains(cus_fake_last_misuse(), "used after its context was destroyed");
    int v = 0;
    assert_cu(D.get_attr(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, f), CUDA_ERROR_INVALID_HANDLE);
    assert_contains(cus_fake_last_misuse(), "with its context");
    assert_cu_ok(D.ctx_create(&ctx, 0, 0));
    uint32_t c = 0;
    assert_cu(D.dtoh(&c, counter, 4), CUDA_ERROR_INVALID_VALUE);
    assert_contains(cus_fake_last_misuse(), "use after free of module global");
    assert_int_equal(cus_fake_misuse_count(), 3);
}

/* --- threads ---------------------------------------------------------------------------------
 * Several threads share one context: each loads a module, launches on its own
 * stream a kernel whose host implementation bumps a counter in device memory,
 * and synchronizes, while another thread runs every stream. TSan checks that
 * host kernels (run without the lock, on whichever thread executes the queue)
 * and the fake's state do not race. */

enum { THREADS = 4, LAUNCHES = 50 };

static CUresult bump_twin(const cus_fake_launch *l, void **args, void *user)
{
    (void)l;
    (void)user;
    uint32_t *counter = ptr_arg_u32(args[0]);
    (*counter)++;
    return CUDA_SUCCESS;
}

typedef struct worker_arg {
    CUresult result;
    uint32_t count;
} worker_arg;

static void *launch_worker(void *p)
{
    worker_arg *w = p;
    w->result = D.push(ctx);
    CUmodule m = NULL;
    CUstream s = NULL;
    CUdeviceptr counter = 0;
    if (w->result == CUDA_SUCCESS)
        w->result = D.load_data(&m, test_ptx);
    if (w->result == CUDA_SUCCESS)
        w->result = D.stream_create(&s, CU_STREAM_NON_BLOCKING);
    if (w->result == CUDA_SUCCESS)
        w->result = D.alloc(&counter, 4);
    /* On s: the launches' stream is non-blocking, and cuMemsetD8 (the
     * legacy stream) may land after them. */
    if (w->result == CUDA_SUCCESS)
        w->result = D.memset8_async(counter, 0, 4, s);
    CUfunction f = NULL;
    if (w->result == CUDA_SUCCESS)
        w->result = D.get_function(&f, m, "add");
    for (int i = 0; w->result == CUDA_SUCCESS && i < LAUNCHES; i++) {
        w->result = launch_add(f, s, counter, (uint32_t)i);
        if (w->result == CUDA_SUCCESS && i % 7 == 0)
            w->result = D.stream_sync(s);
    }
    if (w->result == CUDA_SUCCESS)
        w->result = D.stream_sync(s);
    if (w->result == CUDA_SUCCESS)
        w->result = D.dtoh(&w->count, counter, 4);
    if (counter)
        (void)D.free(counter);
    if (s)
        (void)D.stream_destroy(s);
    if (m)
        (void)D.unload(m);
    CUcontext popped = NULL;
    (void)D.pop(&popped);
    return NULL;
}

static void *run_streams_worker(void *p)
{
    volatile bool *stop = p;
    while (!__atomic_load_n(stop, __ATOMIC_ACQUIRE))
        cus_fake_run_streams();
    return NULL;
}

static void test_threads_launch_and_run_host_kernels_concurrently(void **state)
{
    (void)state;
    assert_ok(cus_fake_register_kernel("add", bump_twin, NULL));
    pthread_t t[THREADS], runner;
    worker_arg w[THREADS];
    memset(w, 0, sizeof w);
    bool stop = false;
    assert_int_equal(pthread_create(&runner, NULL, run_streams_worker, &stop), 0);
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, launch_worker, &w[i]), 0);
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    __atomic_store_n(&stop, true, __ATOMIC_RELEASE);
    assert_int_equal(pthread_join(runner, NULL), 0);
    for (int i = 0; i < THREADS; i++) {
        assert_cu_ok(w[i].result);
        assert_int_equal(w[i].count, LAUNCHES);
    }
    assert_int_equal(cus_fake_launch_count(), THREADS * LAUNCHES);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 0);
}

/* --- fault injection -------------------------------------------------------------------------- */

static size_t CUDA_CB no_shared(int block)
{
    (void)block;
    return 0;
}

/* Calls entry point i the way that succeeds without a fault. */
static CUresult call_entry(int i, CUmodule m, CUfunction f, const char *path)
{
    CUmodule out = NULL;
    CUfunction fo = NULL;
    CUdeviceptr p = 0;
    size_t n = 0, off = 0;
    int v = 0, g = 0, b = 0;
    unsigned int count = 0;
    CUjit_option o[] = {CU_JIT_OPTIMIZATION_LEVEL};
    void *ov[] = {(void *)(uintptr_t)3};
    CUlaunchConfig cfg = {.gridDimX = 1, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 1,
                          .blockDimY = 1, .blockDimZ = 1};
    const char *name = NULL;
    CUresult r = CUDA_ERROR_UNKNOWN;
    (void)name;
    (void)off;
    (void)count;
    switch (i) {
    case 0:
        r = D.load(&out, path);
        break;
    case 1:
        r = D.load_data(&out, test_ptx);
        break;
    case 2:
        r = D.load_data_ex(&out, test_ptx, 1, o, ov);
        break;
    case 3:
        r = D.load_fatbin(&out, test_ptx);
        break;
    case 4: { /* unload a module of its own */
        CUmodule tmp = NULL;
        r = D.load_data(&tmp, test_ptx);
        if (r != CUDA_SUCCESS)
            return r;
        r = D.unload(tmp);
        if (r != CUDA_SUCCESS) /* the fault hit the unload: clean up */
            assert_cu_ok(D.unload(tmp));
        return r;
    }
    case 5:
        return D.get_function(&fo, m, "add");
    case 6:
        return D.get_global(&p, &n, m, "counter");
    case 7:
        return D.get_attr(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, f);
    case 8:
        return D.set_attr(f, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, 10);
    case 9:
        return D.set_cache(f, CU_FUNC_CACHE_PREFER_L1);
    case 10:
        return D.set_shared_config(f, CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE);
    case 11:
        return launch_add(f, NULL, 1, 2);
    case 12: {
        uint64_t a0 = 1;
        uint32_t a1 = 2;
        void *args[] = {&a0, &a1};
        return D.launch_ex(&cfg, f, args, NULL);
    }
    case 13:
        return D.max_block(&g, &b, f, no_shared, 0, 0);
    case 14:
        return D.max_active(&v, f, 128, 0);
#if CUDA_VERSION >= 12030
    case 15:
        return D.get_name(&name, f);
#endif
#if CUDA_VERSION >= 12040
    case 16:
        return D.function_count(&count, m);
    case 17:
        return D.enumerate(&fo, 1, m);
    case 18:
        return D.param_info(f, 0, &off, &n);
#endif
    default:
        fail_msg("no entry %d", i);
    }
    if (r == CUDA_SUCCESS)
        assert_cu_ok(D.unload(out));
    return r;
}

static void test_fault_injection_on_every_module_entry_point(void **state)
{
    (void)state;
    static const char *const names[] = {
        "cuModuleLoad", "cuModuleLoadData", "cuModuleLoadDataEx", "cuModuleLoadFatBinary",
        "cuModuleUnload", "cuModuleGetFunction", "cuModuleGetGlobal", "cuFuncGetAttribute",
        "cuFuncSetAttribute", "cuFuncSetCacheConfig", "cuFuncSetSharedMemConfig",
        "cuLaunchKernel", "cuLaunchKernelEx", "cuOccupancyMaxPotentialBlockSize",
        "cuOccupancyMaxActiveBlocksPerMultiprocessor", "cuFuncGetName",
        "cuModuleGetFunctionCount", "cuModuleEnumerateFunctions", "cuFuncGetParamInfo",
    };
    int n = (int)(sizeof names / sizeof names[0]);
#if CUDA_VERSION < 12030
    n = 15;
#elif CUDA_VERSION < 12040
    n = 16;
#endif
    char path[] = "/tmp/cuscope-fake-module-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, test_ptx, strlen(test_ptx)), (ssize_t)strlen(test_ptx));
    close(fd);
    CUmodule m = load_text(test_ptx);
    CUfunction f = function(m, "add");
    for (int i = 0; i < n; i++) {
        unsigned long fired = cus_fake_faults_fired();
        unsigned long launches = cus_fake_launch_count();
        assert_ok(cus_fake_fail_entry(names[i], 1, CUDA_ERROR_UNKNOWN, false));
        CUresult r = call_entry(i, m, f, path);
        if (r != CUDA_ERROR_UNKNOWN)
            fail_msg("%s under a fault: %d", names[i], (int)r);
        assert_int_equal(cus_fake_faults_fired(), fired + 1);
        assert_int_equal(cus_fake_launch_count(), launches); /* did nothing */
        assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 1);
        r = call_entry(i, m, f, path); /* the fault is spent */
        if (r != CUDA_SUCCESS)
            fail_msg("%s after the fault: %d", names[i], (int)r);
        assert_int_equal(cus_fake_calls_of(names[i]) > 0, 1);
    }
    unlink(path);
    assert_cu_ok(D.unload(m));
    assert_int_equal(cus_fake_misuse_count(), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        MOD_TEST(test_a_sticky_kernel_error_poisons_the_context),
        MOD_TEST(test_a_synchronous_copy_after_a_faulting_kernel_returns_the_error),
        MOD_TEST(test_a_poisoned_primary_context_is_reset_by_its_last_release),
        MOD_TEST(test_unload_runs_the_queued_launches_first),
        MISUSE_TEST(test_use_after_unload_is_misuse),
        MOD_TEST(test_context_destroy_unloads_its_modules),
        MISUSE_TEST(test_a_module_of_a_destroyed_context_is_misuse),
        MOD_TEST(test_threads_launch_and_run_host_kernels_concurrently),
        MOD_TEST(test_fault_injection_on_every_module_entry_point),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
