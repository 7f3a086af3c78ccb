/* Libraries and kernels (include/cuscope/library.h) on the fake: loading
 * with no context, the kernel cache, layouts, launches in the stream's or
 * the current context, attributes per device, globals, enumeration, every
 * driver call's failure, images for the wrong architecture, and the release
 * orders (a library released before its launches ran, or while a graph that
 * captured a launch lives). The module fixtures give the PTX. */
#include <cuscope/graph.h>
#include <cuscope/library.h>

#include "module_fixtures.h"

/* A library unload is made in relaxed capture interaction mode. */
#define UNLOAD_RELAXED                                                         \
    "cuThreadExchangeStreamCaptureMode", "cuLibraryUnload", "cuThreadExchangeStreamCaptureMode"

static cus_library *load_lib(const char *ptx)
{
    cus_library *lib = NULL;
    assert_ok(cus_library_load_data(ptx, 0, NULL, NULL, &lib));
    assert_non_null(lib);
    return lib;
}

static cus_kernel *get_kernel(cus_library *lib, const char *name)
{
    cus_kernel *k = NULL;
    assert_ok(cus_library_get_kernel(lib, name, &k));
    assert_non_null(k);
    return k;
}

/* The twin of `add(u64 p, u32 n)`: counts its runs in *user. */
static CUresult add_twin(const cus_fake_launch *launch, void **args, void *user)
{
    (void)launch, (void)args;
    (*(int *)user)++;
    return CUDA_SUCCESS;
}

/* --- loading and the kernel cache ----------------------------------------------------------- */

static void test_load_needs_no_context(void **state)
{
    (void)state;
    (void)dev_at(0); /* the driver initialised */
    stack_snap before = snap();
    unsigned long calls = cus_fake_call_count();
    cus_library *lib = load_lib(ptx_src);
    assert_calls_since(calls, "cuLibraryLoadData");
    assert_stack_unchanged(before);
    assert_non_null(cus_library_handle(lib));
    assert_int_equal(cus_library_format(lib), CUS_IMAGE_PTX);
    assert_contains(cus_library_info_log(lib), "ptxas info");
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_LIBRARY), 1);
    /* loaded into no context yet: no module */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 0);
    assert_int_equal(cus_debug_live_objects(), 1);
    calls = cus_fake_call_count();
    assert_null(cus_library_unref(lib));
    assert_calls_since(calls, UNLOAD_RELAXED);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
    assert_int_equal(cus_debug_live_objects(), 0);
    /* NULLs */
    assert_null(cus_library_ref(NULL));
    assert_null(cus_library_unref(NULL));
    assert_null(cus_library_handle(NULL));
    assert_string_equal(cus_library_info_log(NULL), "");
    assert_null(cus_kernel_ref(NULL));
    assert_null(cus_kernel_unref(NULL));
    assert_string_equal(cus_kernel_name(NULL), "");
    assert_null(cus_kernel_library(NULL));
    assert_false(cus_kernel_layout_known(NULL));
}

static void test_kernel_cache_and_layout(void **state)
{
    (void)state;
    cus_library *lib = load_lib(ptx_src);
    /* With a context current the layout is read at the lookup: two
     * parameters, two calls (the count is the image's, param_counts.c). */
    cus_context *c = new_ctx();
    assert_ok(cus_context_push(c));
    unsigned long calls = cus_fake_call_count();
    cus_kernel *k = get_kernel(lib, "add");
    assert_calls_since(calls, "cuLibraryGetKernel", "cuCtxGetCurrent", "cuKernelGetParamInfo",
                       "cuKernelGetParamInfo");
    cus_context *popped = NULL;
    assert_ok(cus_context_pop(&popped));
    assert_null(cus_context_unref(popped));
    assert_null(cus_context_unref(c));
    calls = cus_fake_call_count();
    cus_kernel *again = get_kernel(lib, "add");
    assert_no_calls_since(calls); /* a hit: no driver call */
    assert_ptr_equal(again, k);
    assert_string_equal(cus_kernel_name(k), "add");
    assert_ptr_equal(cus_kernel_library(k), lib);
    assert_non_null(cus_kernel_handle(k));
    assert_true(cus_kernel_layout_known(k));
    assert_int_equal(cus_kernel_param_count(k), 2);
    size_t off = 0, size = 0;
    assert_ok(cus_kernel_param_info(k, 0, &off, &size));
    assert_int_equal(off, 0);
    assert_int_equal(size, 8);
    assert_ok(cus_kernel_param_info(k, 1, &off, &size));
    assert_int_equal(off, 8);
    assert_int_equal(size, 4);
    assert_status(cus_kernel_param_info(k, 2, &off, &size), CUS_ERROR_OUT_OF_RANGE);
    cus_kernel *none = SENTINEL_PTR(none);
    assert_status(cus_library_get_kernel(lib, "nope", &none), CUDA_ERROR_NOT_FOUND);
    assert_contains(cus_last_error_message(), "nope");
    assert_ptr_equal(none, SENTINEL_PTR(none));
    /* a kernel reference keeps the library */
    assert_null(cus_library_unref(lib));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_LIBRARY), 1);
    assert_null(cus_kernel_unref(again));
    assert_null(cus_kernel_unref(k));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
    assert_int_equal(cus_debug_live_objects(), 0);
}

/* cuKernelGetParamInfo needs a current context (the H200's rule): a lookup
 * with none current leaves the layout to the first use that has one. */
static void test_layout_waits_for_a_context(void **state)
{
    (void)state;
    int runs = 0;
    assert_ok(cus_fake_register_kernel("add", add_twin, &runs));
    cus_autoptr(cus_library) lib = load_lib(ptx_src);
    unsigned long calls = cus_fake_call_count();
    cus_autoptr(cus_kernel) k = get_kernel(lib, "add");
    /* none current: not asked (the driver would refuse, and
     * compute-sanitizer report that), not read, not an error */
    assert_calls_since(calls, "cuLibraryGetKernel", "cuCtxGetCurrent");
    assert_false(cus_kernel_layout_known(k));
    assert_int_equal(cus_kernel_param_count(k), 0);
    /* the layout asked for with none current: the driver's error, said */
    size_t off = 99, size = 99;
    assert_status(cus_kernel_param_info(k, 0, &off, &size), CUDA_ERROR_INVALID_CONTEXT);
    assert_contains(cus_last_error_message(), "no context is current");
    assert_contains(cus_last_error_message(), "add");
    assert_int_equal(off, 99);
    /* a launch on a stream reads it in the stream's context, once, and
     * checks the arguments against it */
    cus_autoptr(cus_context) c = new_ctx();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    stack_snap before = snap();
    assert_status(cus_launch(k, 1, 1, 0, s, (CUdeviceptr)0, (size_t)5), CUS_ERROR_INVALID_ARGUMENT);
    assert_contains(cus_last_error_message(), "add: argument 2 is 8 bytes");
    assert_stack_unchanged(before);
    assert_true(cus_kernel_layout_known(k));
    assert_int_equal(cus_kernel_param_count(k), 2);
    calls = cus_fake_call_count();
    assert_ok(cus_launch(k, 1, 1, 0, s, (CUdeviceptr)0, 5u));
    assert_calls_since(calls, "cuLaunchKernel");
    assert_ok(cus_kernel_param_info(k, 1, &off, &size));
    assert_int_equal(off, 8);
    assert_int_equal(size, 4);
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(runs, 1);
}

/* A host function may ask a kernel's layout once it is read, not make the
 * read (a driver call). */
typedef struct host_ask {
    cus_kernel *k;
    cus_status st;
} host_ask;

static void ask_in_host_fn(void *user)
{
    host_ask *a = user;
    size_t off, size;
    a->st = cus_kernel_param_info(a->k, 0, &off, &size);
}

static void test_layout_not_read_in_a_host_function(void **state)
{
    (void)state;
    cus_autoptr(cus_library) lib = load_lib(ptx_src);
    cus_autoptr(cus_kernel) k = get_kernel(lib, "add"); /* none current: pending */
    cus_autoptr(cus_context) c = new_ctx();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    host_ask a = {k, CUS_SUCCESS};
    assert_ok(cus_stream_launch_host_fn(s, ask_in_host_fn, &a));
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(a.st, CUS_ERROR_IN_HOST_FUNCTION);
    assert_false(cus_kernel_layout_known(k));
    /* read (by a launch), then asked in a host function: allowed */
    assert_ok(cus_launch(k, 1, 1, 0, s, (CUdeviceptr)0, 5u));
    assert_ok(cus_stream_launch_host_fn(s, ask_in_host_fn, &a));
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(a.st, CUS_SUCCESS);
}

/* The deferred read in the current context, by cus_kernel_param_info, and
 * its failure: the layout stays unread and the next use asks again. */
static void test_layout_read_on_demand(void **state)
{
    (void)state;
    cus_autoptr(cus_library) lib = load_lib(ptx_src);
    cus_autoptr(cus_kernel) k = get_kernel(lib, "add");
    assert_false(cus_kernel_layout_known(k));
    cus_autoptr(cus_context) c = new_ctx();
    assert_ok(cus_context_push(c));
    assert_ok(cus_fake_fail_entry("cuKernelGetParamInfo", 1, CUDA_ERROR_UNKNOWN, false));
    size_t off = 0, size = 0;
    assert_status(cus_kernel_param_info(k, 0, &off, &size), CUDA_ERROR_UNKNOWN);
    assert_contains(cus_last_error_message(), "cuKernelGetParamInfo");
    assert_false(cus_kernel_layout_known(k));
    unsigned long calls = cus_fake_call_count();
    assert_ok(cus_kernel_param_info(k, 0, &off, &size));
    assert_calls_since(calls, "cuKernelGetParamInfo", "cuKernelGetParamInfo");
    assert_int_equal(size, 8);
    assert_true(cus_kernel_layout_known(k));
    calls = cus_fake_call_count();
    assert_ok(cus_kernel_param_info(k, 1, &off, &size)); /* read: no driver call */
    assert_no_calls_since(calls);
    cus_context *popped = NULL;
    assert_ok(cus_context_pop(&popped));
    assert_null(cus_context_unref(popped));
}

static void test_enumeration(void **state)
{
    (void)state;
    cus_autoptr(cus_library) lib = load_lib(ptx_src);
    unsigned int n = 0;
    assert_ok(cus_library_kernel_count(lib, &n));
    assert_int_equal(n, PTX_FUNCTIONS);
    const char *names[8] = {0};
    assert_ok(cus_library_kernel_names(lib, names, 8, &n));
    assert_int_equal(n, PTX_FUNCTIONS);
    assert_string_equal(names[0], "add");
    unsigned long calls = cus_fake_call_count();
    assert_ok(cus_library_kernel_names(lib, names, 1, &n)); /* asked once */
    assert_no_calls_since(calls);
}

/* --- launches -------------------------------------------------------------------------------- */

static void test_launch_in_stream_or_current_context(void **state)
{
    (void)state;
    int runs = 0;
    assert_ok(cus_fake_register_kernel("add", add_twin, &runs));
    cus_context *c = new_ctx();
    cus_stream *s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_library *lib = load_lib(ptx_src);
    cus_kernel *k = get_kernel(lib, "add");
    stack_snap before = snap();
    /* a stream: its context, with nothing current and nothing switched but
     * for the first launch's read of the layout (looked up with none
     * current), in c */
    unsigned long calls = cus_fake_call_count();
    assert_ok(cus_launch(k, 1, 32, 0, s, (CUdeviceptr)0, 5u));
    assert_calls_since(calls, "cuCtxPushCurrent", "cuKernelGetParamInfo", "cuKernelGetParamInfo",
                       "cuCtxPopCurrent", "cuLaunchKernel");
    assert_stack_unchanged(before);
    calls = cus_fake_call_count();
    assert_ok(cus_launch(k, 1, 32, 0, s, (CUdeviceptr)0, 5u));
    assert_calls_since(calls, "cuLaunchKernel");
    cus_fake_launch rec;
    assert_ok(cus_fake_last_launch(&rec));
    assert_string_equal(rec.function, "add");
    assert_ptr_equal(rec.context, cus_context_handle(c));
    /* loaded into c lazily, as a module of c */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 1);
    /* the NULL stream with no context current: refused before the driver */
    calls = cus_fake_call_count();
    assert_status(cus_launch(k, 1, 1, 0, NULL, (CUdeviceptr)0, 5u), CUDA_ERROR_INVALID_CONTEXT);
    assert_contains(cus_last_error_message(), "none is current");
    assert_no_calls_since(calls);
    /* with c current: there */
    assert_ok(cus_context_push(c));
    assert_ok(cus_launch(k, 1, 1, 0, NULL, (CUdeviceptr)0, 5u));
    assert_ok(cus_fake_last_launch(&rec));
    assert_ptr_equal(rec.context, cus_context_handle(c));
    /* the layout is checked, as for a function */
    calls = cus_fake_call_count();
    assert_status(cus_launch(k, 1, 1, 0, NULL, (CUdeviceptr)0, (size_t)5), CUS_ERROR_INVALID_ARGUMENT);
    assert_contains(cus_last_error_message(), "add: argument 2 is 8 bytes");
    assert_no_calls_since(calls);
    /* the explicit and the extended forms */
    void *args[] = {&(CUdeviceptr){0}, &(unsigned int){5}};
    assert_ok(cus_kernel_launch(k, CUS_DIM3(1, 1, 1), CUS_DIM3(1, 1, 1), 0, s, 2, args,
                                (const size_t[]){8, 4}));
    cus_launch_config cfg = {.grid = {1, 1, 1}, .block = {1, 1, 1}, .stream = s};
    assert_ok(cus_launch_ex(k, &cfg, (CUdeviceptr)0, 5u));
    assert_ok(cus_fake_last_launch(&rec));
    assert_true(rec.extended);
    cus_context *popped = NULL;
    assert_ok(cus_context_pop(&popped));
    assert_ptr_equal(popped, c);
    popped = cus_context_unref(popped);
    assert_ok(cus_stream_synchronize(s));
    assert_ok(cus_context_synchronize(c));
    assert_int_equal(runs, 5);
    /* the function in c: what the launches ran */
    CUfunction f = NULL;
    assert_ok(cus_kernel_function(k, c, &f));
    assert_non_null(f);
    assert_null(cus_kernel_unref(k));
    assert_null(cus_library_unref(lib));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 0);
    assert_null(cus_stream_unref(s));
    assert_null(cus_context_unref(c));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
}

static void test_library_released_before_its_launches_ran(void **state)
{
    (void)state;
    int runs = 0;
    assert_ok(cus_fake_register_kernel("add", add_twin, &runs));
    cus_context *c = new_ctx();
    cus_stream *s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_library *lib = load_lib(ptx_src);
    cus_kernel *k = get_kernel(lib, "add");
    for (int i = 0; i < 8; i++)
        assert_ok(cus_launch(k, 1, 1, 0, s, (CUdeviceptr)0, 5u));
    /* the unload waits for the context's work: every launch ran */
    assert_null(cus_kernel_unref(k));
    assert_null(cus_library_unref(lib));
    assert_int_equal(runs, 8);
    assert_int_equal(env_destroyed.count, 0);
    assert_null(cus_stream_unref(s));
    assert_null(cus_context_unref(c));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
}

static void test_graph_keeps_the_library(void **state)
{
    (void)state;
    int runs = 0;
    assert_ok(cus_fake_register_kernel("add", add_twin, &runs));
    cus_context *c = new_ctx();
    cus_stream *s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_library *lib = load_lib(ptx_src);
    cus_kernel *k = get_kernel(lib, "add");
    cus_graph *g = NULL;
    {
        cus_capture_scope(cap, s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
        assert_ok(cap.status);
        assert_ok(cus_launch(k, 1, 1, 0, s, (CUdeviceptr)0, 5u));
        assert_ok(cus_launch(k, 1, 1, 0, s, (CUdeviceptr)0, 6u)); /* kept once */
        assert_ok(cus_capture_end(&cap, &g));
    }
    /* released: the graph holds the library */
    assert_null(cus_kernel_unref(k));
    assert_null(cus_library_unref(lib));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_LIBRARY), 1);
    cus_graph_exec *x = NULL;
    assert_ok(cus_graph_instantiate(g, 0, &x));
    assert_null(cus_graph_unref(g));
    assert_ok(cus_graph_exec_launch(x, s));
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(runs, 2);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_LIBRARY), 1);
    assert_null(cus_graph_exec_unref(x));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_LIBRARY), 0);
    assert_null(cus_stream_unref(s));
    assert_null(cus_context_unref(c));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
}

/* A kernel node of a kernel whose layout is pending reads it in the graph's
 * context (none current here), and checks the arguments against it. */
static void test_kernel_node_reads_a_pending_layout(void **state)
{
    (void)state;
    int runs = 0;
    assert_ok(cus_fake_register_kernel("add", add_twin, &runs));
    cus_autoptr(cus_context) c = new_ctx();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_library) lib = load_lib(ptx_src);
    cus_autoptr(cus_kernel) k = get_kernel(lib, "add");
    assert_false(cus_kernel_layout_known(k));
    cus_autoptr(cus_graph) g = NULL;
    assert_ok(cus_graph_create(c, &g));
    stack_snap before = snap();
    cus_graph_node n;
    assert_status(cus_graph_add_kernel(g, NULL, 0, &n, k, 1, 1, 0, (CUdeviceptr)0, (size_t)5),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_contains(cus_last_error_message(), "add: argument 2 is 8 bytes");
    assert_stack_unchanged(before);
    assert_true(cus_kernel_layout_known(k));
    assert_ok(cus_graph_add_kernel(g, NULL, 0, &n, k, 1, 1, 0, (CUdeviceptr)0, 5u));
    /* none at the lookup (no context current), then the read, once, by
     * the first node */
    assert_int_equal(cus_fake_calls_of("cuKernelGetParamInfo"), 2);
    cus_autoptr(cus_graph_exec) x = NULL;
    assert_ok(cus_graph_instantiate(g, 0, &x));
    assert_ok(cus_graph_exec_launch(x, s));
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(runs, 1);
}

/* --- attributes, globals --------------------------------------------------------------------- */

static void test_attributes_per_device(void **state)
{
    (void)state;
    cus_autoptr(cus_library) lib = load_lib(ptx_src);
    cus_autoptr(cus_kernel) add = get_kernel(lib, "add");
    cus_autoptr(cus_kernel) bounded = get_kernel(lib, "bounded");
    int v = 0;
    assert_ok(cus_kernel_attribute(bounded, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, dev_at(0), &v));
    assert_int_equal(v, 128);
    assert_ok(cus_kernel_attribute(bounded, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, dev_at(0), &v));
    assert_int_equal(v, 1024);
    assert_ok(cus_kernel_set_attribute(add, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 65536,
                                       dev_at(0)));
    assert_ok(cus_kernel_attribute(add, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, dev_at(0),
                                   &v));
    assert_int_equal(v, 65536);
    /* and the function in a context of the device has it */
    cus_autoptr(cus_context) c = new_ctx();
    CUfunction f = NULL;
    assert_ok(cus_kernel_function(add, c, &f));
    assert_status(cus_kernel_set_attribute(add, CU_FUNC_ATTRIBUTE_NUM_REGS, 1, dev_at(0)),
                  CUDA_ERROR_INVALID_VALUE);
    assert_status(cus_kernel_attribute(add, CU_FUNC_ATTRIBUTE_NUM_REGS, (cus_device){7}, &v),
                  CUDA_ERROR_INVALID_DEVICE);
}

static void test_globals(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_autoptr(cus_library) lib = load_lib(ptx_src);
    stack_snap before = snap();
    CUdeviceptr p = 0;
    size_t n = 0;
    assert_ok(cus_library_get_global(lib, c, "counter", &p, &n));
    assert_stack_unchanged(before);
    assert_true(p != 0);
    assert_int_equal(n, 4);
    assert_status(cus_library_get_global(lib, c, "nope", &p, &n), CUDA_ERROR_NOT_FOUND);
    assert_contains(cus_last_error_message(), "nope");
    assert_status(cus_library_get_managed(lib, "counter", &p, &n), CUDA_ERROR_NOT_FOUND);
    void *fp = NULL;
    /* a kernel is no unified function: the H200's answer */
    assert_status(cus_library_get_unified_function(lib, "add", &fp), CUDA_ERROR_INVALID_VALUE);
    assert_contains(cus_last_error_message(), "no unified function named \"add\"");
}

/* --- images ------------------------------------------------------------------------------- */

static void test_images_for_the_wrong_architecture(void **state)
{
    (void)state;
    /* PTX whose .target is above the device's */
    static const char above[] = ".version 8.0\n.target sm_120\n.address_size 64\n"
                                ".visible .entry e()\n{\n\tret;\n}\n";
    cus_library *lib = SENTINEL_PTR(lib);
    assert_status(cus_library_load_data(above, sizeof above, NULL, NULL, &lib),
                  CUDA_ERROR_INVALID_PTX);
    assert_contains(cus_last_error_message(), "SM version specified by .target is higher");
    assert_ptr_equal(lib, SENTINEL_PTR(lib));
    /* a fatbin whose only entry is for a newer architecture */
    unsigned char fat[1024];
    size_t size = make_fatbin(fat, sizeof fat, ptx_src, 100);
    assert_status(cus_library_load_data(fat, size, NULL, NULL, &lib), CUDA_ERROR_NO_BINARY_FOR_GPU);
    /* refused before the driver, as a module's */
    unsigned long calls = cus_fake_call_count();
    assert_status(cus_library_load_data("garbage", 8, NULL, NULL, &lib), CUDA_ERROR_INVALID_IMAGE);
    assert_no_calls_since(calls);
    /* PTX that does not compile: loaded (the H200 compiles it at the first
     * use), refused at the lookup with the JIT's log */
    assert_ok(cus_library_load_data(ptx_bad, 0, NULL, NULL, &lib));
    cus_kernel *k = SENTINEL_PTR(k);
    assert_status(cus_library_get_kernel(lib, "bad", &k), CUDA_ERROR_INVALID_PTX);
    assert_contains(cus_last_error_message(), "did not compile at its first use");
    assert_contains(cus_last_error_message(), "frobnicate");
    assert_ptr_equal(k, SENTINEL_PTR(k));
    unsigned int n = 0;
    assert_status(cus_library_kernel_count(lib, &n), CUDA_ERROR_INVALID_PTX);
    assert_null(cus_library_unref(lib));
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
}

static void test_load_file_and_options(void **state)
{
    (void)state;
    const char *path = write_file("lib.ptx", ptx_src, strlen(ptx_src));
    cus_library *lib = NULL;
    assert_ok(cus_library_load_file(path, NULL, &lib));
    cus_kernel *k = get_kernel(lib, "noargs");
    assert_int_equal(cus_kernel_param_count(k), 0);
    assert_null(cus_kernel_unref(k));
    assert_null(cus_library_unref(lib));
    remove_file(path);
    assert_status(cus_library_load_file(path, NULL, &lib), CUS_ERROR_INVALID_ARGUMENT);
    /* a preserved binary: the caller keeps the fatbin */
    unsigned char fat[1024];
    size_t size = make_fatbin(fat, sizeof fat, ptx_src, 80);
    cus_library_options opts = {.binary_is_preserved = true};
    cus_jit_options jit = {.set_level = true, .optimization_level = 3};
    assert_ok(cus_library_load_data(fat, size, &jit, &opts, &lib));
    assert_int_equal(cus_library_format(lib), CUS_IMAGE_FATBIN);
    assert_null(cus_library_unref(lib));
    jit.optimization_level = 9;
    assert_status(cus_library_load_data(ptx_src, 0, &jit, NULL, &lib), CUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
}

/* The fake as the driver: CU_LIBRARY_BINARY_IS_PRESERVED given to
 * cuLibraryLoadFromFile is CUDA_ERROR_INVALID_VALUE (cuda.h); the fake took
 * it and copied the file anyway. */
static void test_load_from_file_refuses_preserved(void **state)
{
    (void)state;
    PFN_cuLibraryLoadFromFile_v12000 load_file =
        RAW_FN(PFN_cuLibraryLoadFromFile_v12000, "cuLibraryLoadFromFile", 12000);
    PFN_cuLibraryUnload_v12000 unload = RAW_FN(PFN_cuLibraryUnload_v12000, "cuLibraryUnload", 12000);
    int n = 0;
    assert_ok(cus_device_count(&n)); /* the driver initialized (cuInit) */
    const char *path = write_file("lib.ptx", ptx_src, strlen(ptx_src));
    CUlibraryOption key = CU_LIBRARY_BINARY_IS_PRESERVED;
    void *value = (void *)(uintptr_t)1;
    CUlibrary lib = NULL;
    assert_cu(load_file(&lib, path, NULL, NULL, 0, &key, &value, 1), CUDA_ERROR_INVALID_VALUE);
    assert_null(lib);
    value = NULL; /* specifying the option at all is what is invalid */
    assert_cu(load_file(&lib, path, NULL, NULL, 0, &key, &value, 1), CUDA_ERROR_INVALID_VALUE);
    assert_cu_ok(load_file(&lib, path, NULL, NULL, 0, NULL, NULL, 0));
    /* cuLibraryGetGlobal and cuLibraryGetManaged take a NULL dptr or bytes,
     * "not both" (cuda.h) */
    PFN_cuLibraryGetManaged_v12000 managed =
        RAW_FN(PFN_cuLibraryGetManaged_v12000, "cuLibraryGetManaged", 12000);
    PFN_cuLibraryGetGlobal_v12000 global =
        RAW_FN(PFN_cuLibraryGetGlobal_v12000, "cuLibraryGetGlobal", 12000);
    size_t bytes = 0;
    assert_cu(managed(NULL, NULL, lib, "m"), CUDA_ERROR_INVALID_VALUE);
    assert_cu(managed(NULL, &bytes, lib, "m"), CUDA_ERROR_NOT_FOUND);
    assert_cu(global(NULL, NULL, lib, "g"), CUDA_ERROR_INVALID_VALUE);
    assert_cu_ok(unload(lib));
    remove_file(path);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
}

/* --- failures ----------------------------------------------------------------------------- */

static void test_every_driver_call_can_fail(void **state)
{
    (void)state;
    cus_library *out = NULL;
    assert_fault_named("cuLibraryLoadData", cus_library_load_data(ptx_src, 0, NULL, NULL, &out));
    cus_autoptr(cus_context) c = new_ctx();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    cus_autoptr(cus_library) lib = load_lib(ptx_src);
    cus_kernel *k = NULL;
    assert_fault_named("cuLibraryGetKernel", cus_library_get_kernel(lib, "add", &k));
    {
        /* The layout is read at the lookup with a context current. */
        cus_context_scope(guard, c);
        assert_ok(guard.status);
        assert_fault_named("cuKernelGetParamInfo", cus_library_get_kernel(lib, "add", &k));
    }
    assert_null(k);
    assert_fault_named("cuCtxGetCurrent", cus_library_get_kernel(lib, "add", &k));
    assert_null(k);
    k = get_kernel(lib, "add");
    int v;
    assert_fault_named("cuKernelGetAttribute",
                       cus_kernel_attribute(k, CU_FUNC_ATTRIBUTE_NUM_REGS, dev_at(0), &v));
    assert_fault_named("cuKernelSetAttribute",
                       cus_kernel_set_attribute(k, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                0, dev_at(0)));
    CUfunction f;
    assert_fault_named("cuKernelGetFunction", cus_kernel_function(k, c, &f));
    CUdeviceptr p;
    size_t n;
    assert_fault_named("cuLibraryGetGlobal", cus_library_get_global(lib, c, "counter", &p, &n));
    assert_fault_named("cuLibraryGetManaged", cus_library_get_managed(lib, "counter", &p, &n));
    void *fp;
    assert_fault_named("cuLibraryGetUnifiedFunction",
                       cus_library_get_unified_function(lib, "add", &fp));
    unsigned int count;
    assert_fault_named("cuLibraryGetKernelCount", cus_library_kernel_count(lib, &count));
    const char *names[4];
    assert_fault_named("cuLibraryGetKernelCount", cus_library_kernel_names(lib, names, 4, &count));
    assert_fault_named("cuLibraryEnumerateKernels",
                       cus_library_kernel_names(lib, names, 4, &count));
    assert_fault_named("cuKernelGetName", cus_library_kernel_names(lib, names, 4, &count));
    assert_fault_surfaces("cuLaunchKernel", cus_launch(k, 1, 1, 0, s, (CUdeviceptr)0, 5u));
    cus_launch_config cfg = {.grid = {1, 1, 1}, .block = {1, 1, 1}, .stream = s};
    assert_fault_surfaces("cuLaunchKernelEx", cus_launch_ex(k, &cfg, (CUdeviceptr)0, 5u));
    assert_ok(cus_stream_synchronize(s));
    assert_null(cus_kernel_unref(k));
}

static void test_unload_failure_goes_to_the_handler(void **state)
{
    (void)state;
    cus_library *lib = load_lib(ptx_src);
    CUlibrary h = cus_library_handle(lib);
    cus_clear_last_error();
    assert_ok(cus_fake_fail_entry("cuLibraryUnload", 1, FAULT, false));
    assert_null(cus_library_unref(lib));
    cus_fake_clear_faults();
    assert_int_equal(env_destroyed.count, 1);
    assert_int_equal(env_destroyed.last_status, FAULT);
    assert_contains(env_destroyed.last_message, "cus_library_unref");
    assert_contains(env_destroyed.last_message, "cuLibraryUnload");
    assert_int_equal(cus_last_status(), CUS_SUCCESS);
    assert_int_equal(cus_debug_live_objects(), 0);
    /* the driver's library stays: unloaded here, raw */
    PFN_cuLibraryUnload_v12000 unload = RAW_FN(PFN_cuLibraryUnload_v12000, "cuLibraryUnload", 12000);
    assert_int_equal(unload(h), CUDA_SUCCESS);
}

static void test_out_of_host_memory(void **state)
{
    (void)state;
    /* every allocation of a load and a first lookup, failed in turn */
    for (unsigned long nth = 1;; nth++) {
        cus_debug_fail_host_alloc(nth, false);
        cus_library *lib = NULL;
        cus_status st = cus_library_load_data(ptx_src, 0, NULL, NULL, &lib);
        cus_kernel *k = NULL;
        if (!st)
            st = cus_library_get_kernel(lib, "add", &k);
        bool fired = cus_debug_host_alloc_faults() > 0;
        /* the image's parameter counts are optional: their loss is absorbed
         * (the layout is then asked of the driver) */
        bool absorbed = cus_debug_host_alloc_absorbed() > 0;
        cus_debug_fail_host_alloc(0, false);
        if (fired && !absorbed)
            assert_int_equal(st, CUS_ERROR_OUT_OF_HOST_MEMORY);
        if (absorbed)
            assert_int_equal(st, CUS_SUCCESS);
        k = cus_kernel_unref(k);
        lib = cus_library_unref(lib);
        assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
        assert_int_equal(cus_debug_live_objects(), 0);
        if (!fired)
            break;
    }
}

static int setup_no_library(void **state)
{
    (void)state;
    return setup_hiding((const char *const[]){"cuLibraryLoadData", NULL});
}

static void test_not_supported_before_12_0(void **state)
{
    (void)state;
    cus_library *lib = SENTINEL_PTR(lib);
    assert_status(cus_library_load_data(ptx_src, 0, NULL, NULL, &lib), CUS_ERROR_NOT_SUPPORTED);
    assert_contains(cus_last_error_message(), "12.0");
    assert_ptr_equal(lib, SENTINEL_PTR(lib));
}

static int setup_no_param_info_for_kernels(void **state)
{
    (void)state;
    return setup_hiding((const char *const[]){"cuKernelGetParamInfo", "cuLibraryGetKernelCount",
                                              NULL});
}

static void test_without_12_4_entries(void **state)
{
    (void)state;
    cus_autoptr(cus_library) lib = load_lib(ptx_src);
    cus_autoptr(cus_kernel) k = get_kernel(lib, "add");
    assert_false(cus_kernel_layout_known(k));
    assert_status(cus_kernel_param_info(k, 0, NULL, NULL), CUS_ERROR_NOT_SUPPORTED);
    unsigned int n;
    assert_status(cus_library_kernel_count(lib, &n), CUS_ERROR_NOT_SUPPORTED);
    assert_contains(cus_last_error_message(), "12.4");
    /* launches go unchecked */
    cus_autoptr(cus_context) c = new_ctx();
    cus_autoptr(cus_stream) s = new_stream(c, CU_STREAM_NON_BLOCKING);
    assert_ok(cus_launch(k, 1, 1, 0, s, (CUdeviceptr)0, 5u));
    assert_ok(cus_stream_synchronize(s));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_load_needs_no_context),
        ENV_TEST(test_kernel_cache_and_layout),
        ENV_TEST(test_layout_waits_for_a_context),
        ENV_TEST(test_layout_read_on_demand),
        ENV_TEST(test_layout_not_read_in_a_host_function),
        ENV_TEST(test_enumeration),
        ENV_TEST(test_launch_in_stream_or_current_context),
        ENV_TEST(test_library_released_before_its_launches_ran),
        ENV_TEST(test_graph_keeps_the_library),
        ENV_TEST(test_kernel_node_reads_a_pending_layout),
        ENV_TEST(test_attributes_per_device),
        ENV_TEST(test_globals),
        ENV_TEST(test_images_for_the_wrong_architecture),
        ENV_TEST(test_load_file_and_options),
        ENV_TEST(test_load_from_file_refuses_preserved),
        ENV_TEST(test_every_driver_call_can_fail),
        ENV_TEST(test_unload_failure_goes_to_the_handler),
        ENV_TEST(test_out_of_host_memory),
        TEST_WITH(test_not_supported_before_12_0, setup_no_library),
        TEST_WITH(test_without_12_4_entries, setup_no_param_info_for_kernels),
    };
    return cmocka_run_group_tests(tests, NULL, group_teardown);
}
