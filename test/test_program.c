/* Programs compiled at run time (include/cuscope/program.h): NVRTC loaded at
 * run time, compiles to PTX, cubins and LTO-IR, name expressions, headers and
 * options, a failed compile's log in the message, every NVRTC call failed in
 * turn, the compile cache (hits, misses, bounds of use, clearing), threads
 * compiling one source at once, and a kernel compiled from a string loaded
 * on the fake driver and launched with a host twin.
 *
 * NVRTC runs on the CPU: this needs the toolkit's libnvrtc, not a GPU. The
 * tests that need no NVRTC run first; the rest skip (exit 77, saying why)
 * where libnvrtc cannot be loaded. */
#include <nvrtc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream_common.h"

static const char scale_src[] =
    "extern \"C\" __global__ void scale(float *x, float a, unsigned n)\n"
    "{\n"
    "    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n)\n"
    "        x[i] *= a;\n"
    "}\n";

static const char template_src[] =
    "template <typename T> __global__ void twice(T *x, unsigned n)\n"
    "{\n"
    "    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n)\n"
    "        x[i] = x[i] + x[i];\n"
    "}\n"
    "__device__ int counter;\n";

static const char broken_src[] =
    "extern \"C\" __global__ void broken(float *x)\n"
    "{\n"
    "    x[0] = undeclared_thing;\n"
    "}\n";

/* scale's host twin for the fake driver. */
static CUresult scale_on_host(const cus_fake_launch *launch, void **args, void *user)
{
    (void)launch;
    (void)user;
    float *x = (float *)(uintptr_t) * (CUdeviceptr *)args[0];
    float a = *(float *)args[1];
    unsigned n = *(unsigned *)args[2];
    for (unsigned i = 0; i < n; i++)
        x[i] *= a;
    return CUDA_SUCCESS;
}

static cus_program *compiled(const char *src, const cus_program_options *o)
{
    cus_program *p = NULL;
    assert_ok(cus_program_create(src, "test.cu", NULL, 0, &p));
    assert_ok(cus_program_compile(p, o));
    return p;
}

/* --- without NVRTC ------------------------------------------------------------- */

static void test_create_and_bad_input(void **state)
{
    (void)state;
    cus_program *p = SENTINEL_PTR(p);
    cus_program_header bad[] = {{"a.h", NULL}};
    assert_status(cus_program_create(NULL, "x.cu", NULL, 0, &p), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_program_create(scale_src, "x.cu", NULL, 0, NULL),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_program_create(scale_src, "x.cu", NULL, 1, &p), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_program_create(scale_src, "x.cu", bad, 1, &p), CUS_ERROR_INVALID_ARGUMENT);
    assert_contains(cus_last_error_message(), "header 0 has no source");
    assert_ptr_equal(p, SENTINEL_PTR(p));

    cus_program_header hdr[] = {{"k.h", "#define K 3\n"}};
    assert_ok(cus_program_create(scale_src, NULL, hdr, 1, &p));
    assert_string_equal(cus_program_name(p), "program.cu");
    assert_string_equal(cus_program_log(p), "");
    assert_false(cus_program_from_cache(p));
    const void *data = SENTINEL_PTR(data);
    size_t size = 7;
    const char *lowered = SENTINEL_PTR(lowered);
    cus_module *m = SENTINEL_PTR(m);
    cus_function *f = SENTINEL_PTR(f);
    assert_status(cus_program_code(p, CUS_PROGRAM_PTX, &data, &size), CUS_ERROR_INVALID_ARGUMENT);
    assert_contains(cus_last_error_message(), "has not been compiled");
    assert_status(cus_program_lowered_name(p, "x", &lowered), CUS_ERROR_INVALID_ARGUMENT);
    cus_context *c = new_ctx();
    assert_status(cus_program_load(p, c, NULL, &m), CUS_ERROR_INVALID_ARGUMENT);
    assert_ptr_equal(data, SENTINEL_PTR(data));
    assert_int_equal(size, 7);
    assert_ptr_equal(lowered, SENTINEL_PTR(lowered));
    assert_ptr_equal(m, SENTINEL_PTR(m));
    assert_ptr_equal(f, SENTINEL_PTR(f));

    /* options checked before NVRTC is needed */
    const char *nulls[] = {NULL};
    cus_program_options o = {.arch = 90, .options = nulls, .noptions = 1};
    assert_status(cus_program_compile(p, &o), CUS_ERROR_INVALID_ARGUMENT);
    assert_contains(cus_last_error_message(), "options[0] is NULL");
    o = (cus_program_options){.arch = 90, .ndefines = 2};
    assert_status(cus_program_compile(p, &o), CUS_ERROR_INVALID_ARGUMENT);
    o = (cus_program_options){.arch = 90, .target = (cus_program_target)7};
    assert_status(cus_program_compile(p, &o), CUS_ERROR_INVALID_ARGUMENT);
    o = (cus_program_options){.arch = 10};
    assert_status(cus_program_compile(p, &o), CUS_ERROR_INVALID_ARGUMENT);
    assert_contains(cus_last_error_message(), "architecture 10");
    assert_status(cus_program_compile(NULL, &o), CUS_ERROR_INVALID_ARGUMENT);

    assert_null(cus_program_ref(NULL));
    assert_null(cus_program_unref(NULL));
    assert_string_equal(cus_program_log(NULL), "");
    assert_null(cus_program_name(NULL));
    assert_ptr_equal(cus_program_ref(p), p);
    assert_null(cus_program_unref(p));
    p = cus_program_unref(p);
    c = cus_context_unref(c);
}

static void test_library_missing(void **state)
{
    (void)state;
    int major = -1, minor = -1;
    assert_ok(cus_nvrtc_set_library("/nonexistent/libnvrtc-cuscope-test.so.13"));
    assert_status(cus_nvrtc_version(&major, &minor), CUS_ERROR_NOT_SUPPORTED);
    assert_contains(cus_last_error_message(), "/nonexistent/libnvrtc-cuscope-test.so.13");
    assert_int_equal(major, -1);
    cus_program *p = NULL;
    assert_ok(cus_program_create(scale_src, "missing.cu", NULL, 0, &p));
    cus_program_options o = {.arch = 90, .no_cache = true};
    assert_status(cus_program_compile(p, &o), CUS_ERROR_NOT_SUPPORTED);
    assert_contains(cus_last_error_message(), "cannot load NVRTC");
    assert_contains(cus_last_error_message(), "libnvrtc-cuscope-test.so.13");
    assert_string_equal(cus_program_log(p), "");
    assert_string_equal(cus_nvrtc_library(), "");

    /* a library that is not NVRTC */
    assert_ok(cus_nvrtc_set_library("libm.so.6"));
    assert_status(cus_program_compile(p, &o), CUS_ERROR_NOT_SUPPORTED);
    assert_contains(cus_last_error_message(), "is not NVRTC 12 or newer");
    assert_ok(cus_nvrtc_set_library(NULL));
    p = cus_program_unref(p);
}

static void test_debug_fail_arguments(void **state)
{
    (void)state;
    assert_status(cus_debug_nvrtc_fail("cuMemAlloc", 1, NVRTC_ERROR_INTERNAL_ERROR),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_debug_nvrtc_fail("nvrtcCompileProgram", 0, NVRTC_ERROR_INTERNAL_ERROR),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_debug_nvrtc_fail("nvrtcCompileProgram", 1, NVRTC_SUCCESS),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_ok(cus_debug_nvrtc_fail(NULL, 0, 0));
    assert_int_equal(cus_debug_nvrtc_faults(), 0);
}

/* --- with NVRTC ------------------------------------------------------------------ */

static void test_compile_load_launch_on_fake(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    /* the default architecture: the fake device's, 9.0 */
    cus_program_options o = {.ctx = c, .no_cache = true};
    cus_program *p = compiled(scale_src, &o);
    const void *ptx = NULL;
    size_t size = 0;
    assert_ok(cus_program_code(p, CUS_PROGRAM_PTX, &ptx, &size));
    assert_int_equal(strlen(ptx) + 1, size);
    assert_contains((const char *)ptx, ".target sm_90");
    assert_contains((const char *)ptx, ".entry scale");
    const void *cubin = SENTINEL_PTR(cubin);
    assert_status(cus_program_code(p, CUS_PROGRAM_CUBIN, &cubin, &size), CUDA_ERROR_NOT_FOUND);
    assert_ptr_equal(cubin, SENTINEL_PTR(cubin));

    assert_ok(cus_fake_register_kernel("scale", scale_on_host, NULL));
    cus_module *m = NULL;
    assert_ok(cus_program_load(p, c, NULL, &m));
    p = cus_program_unref(p); /* the module does not need it */
    cus_function *f = NULL;
    assert_ok(cus_module_get_function(m, "scale", &f));
    cus_stream *s = new_stream(c, 0);
    float x[8];
    for (int i = 0; i < 8; i++)
        x[i] = (float)i;
    cus_buffer *b = NULL;
    assert_ok(cus_buffer_alloc(c, sizeof x, &b));
    assert_ok(cus_copy_to_device(b, 0, x, sizeof x));
    assert_ok(cus_launch(f, 1, 8, 0, s, b, 2.5f, 8u));
    assert_ok(cus_stream_synchronize(s));
    assert_ok(cus_copy_to_host(x, b, 0, sizeof x));
    for (int i = 0; i < 8; i++)
        assert_true(x[i] == 2.5f * (float)i);
    assert_int_equal(cus_fake_kernels_without_twin(NULL), 0);
    b = cus_buffer_unref(b);
    s = cus_stream_unref(s);
    f = cus_function_unref(f);
    m = cus_module_unref(m);
    c = cus_context_unref(c);
}

/* cus_program_load_library: the PTX (the cubin when there is one) as a
 * library, whose kernel runs on the fake; the bad inputs leave *out alone. */
static void test_load_library(void **state)
{
    (void)state;
    cus_library *lib = SENTINEL_PTR(lib);
    cus_program *p = NULL;
    assert_ok(cus_program_create(scale_src, NULL, NULL, 0, &p));
    assert_status(cus_program_load_library(p, NULL, &lib), CUS_ERROR_INVALID_ARGUMENT);
    assert_contains(cus_last_error_message(), "has not been compiled");
    assert_status(cus_program_load_library(NULL, NULL, &lib), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_program_load_library(p, NULL, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_ptr_equal(lib, SENTINEL_PTR(lib));
    p = cus_program_unref(p);

    cus_program_options o = {.arch = 90, .no_cache = true};
    p = compiled(scale_src, &o);
    lib = NULL;
    assert_ok(cus_init());
    unsigned long calls = cus_fake_call_count();
    assert_ok(cus_program_load_library(p, NULL, &lib)); /* no context current */
    assert_calls_since(calls, "cuLibraryLoadData");
    assert_int_equal(cus_library_format(lib), CUS_IMAGE_PTX);
    p = cus_program_unref(p); /* the library does not need it */
    cus_kernel *k = NULL;
    assert_ok(cus_library_get_kernel(lib, "scale", &k));
    lib = cus_library_unref(lib); /* the kernel keeps it */
    assert_ok(cus_fake_register_kernel("scale", scale_on_host, NULL));
    cus_context *c = new_ctx();
    cus_stream *s = new_stream(c, 0);
    float x[8];
    for (int i = 0; i < 8; i++)
        x[i] = (float)i;
    cus_buffer *b = NULL;
    assert_ok(cus_buffer_alloc(c, sizeof x, &b));
    assert_ok(cus_copy_to_device(b, 0, x, sizeof x));
    assert_ok(cus_launch(k, 1, 8, 0, s, b, 3.0f, 8u));
    assert_ok(cus_stream_synchronize(s));
    assert_ok(cus_copy_to_host(x, b, 0, sizeof x));
    for (int i = 0; i < 8; i++)
        assert_true(x[i] == 3.0f * (float)i);
    b = cus_buffer_unref(b);
    s = cus_stream_unref(s);
    k = cus_kernel_unref(k);
    c = cus_context_unref(c);

    /* a cubin is loaded as such; LTO-IR alone is refused */
    o.target = CUS_PROGRAM_CUBIN;
    p = compiled(scale_src, &o);
    assert_ok(cus_program_load_library(p, NULL, &lib));
    assert_int_equal(cus_library_format(lib), CUS_IMAGE_CUBIN);
    lib = cus_library_unref(lib);
    p = cus_program_unref(p);
    o.target = CUS_PROGRAM_LTOIR;
    p = compiled(scale_src, &o);
    lib = SENTINEL_PTR(lib);
    assert_status(cus_program_load_library(p, NULL, &lib), CUS_ERROR_INVALID_ARGUMENT);
    assert_contains(cus_last_error_message(), "LTO-IR");
    assert_ptr_equal(lib, SENTINEL_PTR(lib));
    p = cus_program_unref(p);

    /* the driver's failure is the load's */
    p = compiled(scale_src, &(cus_program_options){.arch = 90, .no_cache = true});
    assert_ok(cus_fake_fail_entry("cuLibraryLoadData", 1, CUDA_ERROR_OUT_OF_MEMORY, false));
    assert_status(cus_program_load_library(p, NULL, &lib), CUDA_ERROR_OUT_OF_MEMORY);
    assert_ptr_equal(lib, SENTINEL_PTR(lib));
    p = cus_program_unref(p);
}

static void test_default_arch_device_0(void **state)
{
    (void)state;
    cus_program *p = compiled(scale_src, NULL); /* no options: device 0's arch, PTX */
    const void *ptx = NULL;
    size_t size = 0;
    assert_ok(cus_program_code(p, CUS_PROGRAM_PTX, &ptx, &size));
    assert_contains((const char *)ptx, ".target sm_90");
    p = cus_program_unref(p);
}

static void test_cubin_and_ltoir(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_program_options o = {.arch = 90, .target = CUS_PROGRAM_CUBIN, .no_cache = true};
    cus_program *p = compiled(scale_src, &o);
    const void *data = NULL;
    size_t size = 0;
    assert_ok(cus_program_code(p, CUS_PROGRAM_CUBIN, &data, &size));
    assert_int_equal(cus_module_image_format(data, size), CUS_IMAGE_CUBIN);
    assert_ok(cus_program_code(p, CUS_PROGRAM_PTX, &data, &size));
    cus_module *m = NULL;
    assert_ok(cus_program_load(p, c, NULL, &m));
    assert_int_equal(cus_module_format(m), CUS_IMAGE_CUBIN);
    cus_function *f = NULL;
    assert_ok(cus_program_get_function(p, m, "scale", &f));
    f = cus_function_unref(f);
    m = cus_module_unref(m);
    p = cus_program_unref(p);

    o.target = CUS_PROGRAM_LTOIR;
    p = compiled(scale_src, &o);
    assert_ok(cus_program_code(p, CUS_PROGRAM_LTOIR, &data, &size));
    assert_true(size > 0);
    assert_status(cus_program_code(p, CUS_PROGRAM_PTX, &data, &size), CUDA_ERROR_NOT_FOUND);
    m = SENTINEL_PTR(m);
    assert_status(cus_program_load(p, c, NULL, &m), CUS_ERROR_INVALID_ARGUMENT);
    assert_contains(cus_last_error_message(), "LTO-IR");
    assert_ptr_equal(m, SENTINEL_PTR(m));
    assert_status(cus_program_code(p, (cus_program_target)9, &data, &size),
                  CUS_ERROR_INVALID_ARGUMENT);
    p = cus_program_unref(p);

    /* CUBIN with the caller's virtual -arch: NVRTC makes no cubin
     * (nvrtcGetCUBINSize answers 0), so there is none, not an empty one,
     * and the PTX is what loads */
    const char *virt[] = {"-arch=compute_90"};
    o = (cus_program_options){.target = CUS_PROGRAM_CUBIN, .options = virt, .noptions = 1,
                              .no_cache = true};
    p = compiled(scale_src, &o);
    assert_status(cus_program_code(p, CUS_PROGRAM_CUBIN, &data, &size), CUDA_ERROR_NOT_FOUND);
    assert_ok(cus_program_code(p, CUS_PROGRAM_PTX, &data, &size));
    assert_true(size > 1);
    m = NULL;
    assert_ok(cus_program_load(p, c, NULL, &m));
    assert_int_equal(cus_module_format(m), CUS_IMAGE_PTX);
    m = cus_module_unref(m);
    p = cus_program_unref(p);
    c = cus_context_unref(c);
}

static void test_name_expressions(void **state)
{
    (void)state;
    const char *names[] = {"twice<float>", "twice<int>", "&counter"};
    cus_program_options o = {.arch = 90, .name_expressions = names, .nname_expressions = 3,
                             .no_cache = true};
    cus_program *p = compiled(template_src, &o);
    const char *lowered = NULL;
    assert_ok(cus_program_lowered_name(p, "twice<float>", &lowered));
    assert_string_equal(lowered, "_Z5twiceIfEvPT_j");
    assert_ok(cus_program_lowered_name(p, "twice<int>", &lowered));
    assert_string_equal(lowered, "_Z5twiceIiEvPT_j");
    assert_ok(cus_program_lowered_name(p, "&counter", &lowered));
    assert_string_equal(lowered, "counter");
    /* one the compile was not given */
    const char *none = SENTINEL_PTR(none);
    assert_status(cus_program_lowered_name(p, "twice<double>", &none), CUDA_ERROR_NOT_FOUND);
    assert_contains(cus_last_error_message(), "name_expressions");
    assert_ptr_equal(none, SENTINEL_PTR(none));

    /* loaded, the expression finds the kernel */
    cus_context *c = new_ctx();
    cus_module *m = NULL;
    assert_ok(cus_program_load(p, c, NULL, &m));
    cus_function *f = NULL;
    assert_ok(cus_program_get_function(p, m, "twice<int>", &f));
    assert_string_equal(cus_function_name(f), "_Z5twiceIiEvPT_j");
    f = cus_function_unref(f);
    assert_status(cus_program_get_function(p, m, "twice<char>", &f), CUDA_ERROR_NOT_FOUND);
    m = cus_module_unref(m);
    c = cus_context_unref(c);

    /* a compile is final */
    assert_status(cus_program_compile(p, &o), CUS_ERROR_INVALID_ARGUMENT);
    assert_contains(cus_last_error_message(), "compiled already");
    p = cus_program_unref(p);

    /* an expression that names nothing */
    const char *bad[] = {"no_such_kernel<float>"};
    o.name_expressions = bad;
    o.nname_expressions = 1;
    assert_ok(cus_program_create(template_src, "bad-name.cu", NULL, 0, &p));
    cus_status st = cus_program_compile(p, &o);
    assert_int_not_equal(st, CUS_SUCCESS);
    assert_contains(cus_last_error_message(), "no_such_kernel");
    p = cus_program_unref(p);
}

static void test_compile_error_log_in_message(void **state)
{
    (void)state;
    cus_program *p = NULL;
    assert_ok(cus_program_create(broken_src, "broken.cu", NULL, 0, &p));
    cus_program_options o = {.arch = 90};
    assert_status(cus_program_compile(p, &o), CUDA_ERROR_INVALID_SOURCE);
    assert_string_equal(cus_last_error()->driver_call, "nvrtcCompileProgram");
    assert_string_equal(cus_last_error()->function, "cus_program_compile");
    assert_contains(cus_last_error_message(), "NVRTC_ERROR_COMPILATION");
    assert_contains(cus_last_error_message(), "broken.cu");
    assert_contains(cus_last_error_message(), "undeclared_thing");
    assert_contains(cus_program_log(p), "undeclared_thing");
    /* not cached: it fails again, through NVRTC */
    cus_program_cache_stats before, after;
    cus_program_cache_get_stats(&before);
    assert_status(cus_program_compile(p, &o), CUDA_ERROR_INVALID_SOURCE);
    cus_program_cache_get_stats(&after);
    assert_int_equal(after.hits, before.hits);
    assert_contains(cus_program_log(p), "undeclared_thing");
    p = cus_program_unref(p);
}

static void test_bad_options(void **state)
{
    (void)state;
    cus_program *p = NULL;
    assert_ok(cus_program_create(scale_src, "opts.cu", NULL, 0, &p));
    const char *opts[] = {"--no-such-option-cuscope"};
    cus_program_options o = {.arch = 90, .options = opts, .noptions = 1};
    assert_status(cus_program_compile(p, &o), CUS_ERROR_INVALID_ARGUMENT);
    assert_contains(cus_last_error_message(), "NVRTC_ERROR_INVALID_OPTION");
    /* an architecture NVRTC does not know */
    o = (cus_program_options){.arch = 51, .no_cache = true};
    assert_status(cus_program_compile(p, &o), CUS_ERROR_INVALID_ARGUMENT);
    /* the caller's -arch replaces cuscope's; std, lineinfo, G, defines */
    const char *arch[] = {"--gpu-architecture=compute_80"};
    const char *defs[] = {"FACTOR=3"};
    o = (cus_program_options){.arch = 10, .options = arch, .noptions = 1, .std = "c++17",
                              .line_info = true, .debug = true, .defines = defs,
                              .ndefines = 1, .no_cache = true};
    assert_ok(cus_program_compile(p, &o));
    const void *ptx = NULL;
    size_t size = 0;
    assert_ok(cus_program_code(p, CUS_PROGRAM_PTX, &ptx, &size));
    assert_contains((const char *)ptx, ".target sm_80");
    assert_contains((const char *)ptx, ".loc"); /* line information */
    p = cus_program_unref(p);
}

static void test_headers_defines_includes(void **state)
{
    (void)state;
    static const char src[] =
        "#include \"factor.h\"\n"
        "extern \"C\" __global__ void k(float *x) { x[0] = FACTOR * OFFSET; }\n";
    cus_program_header hdr[] = {{"factor.h", "#define FACTOR 3.0f\n"}};
    cus_program *p = NULL;
    assert_ok(cus_program_create(src, "hdr.cu", hdr, 1, &p));
    const char *defs[] = {"OFFSET=2.0f"};
    const char *inc[] = {"/nonexistent-include-dir"};
    cus_program_options o = {.arch = 90, .defines = defs, .ndefines = 1, .include_paths = inc,
                             .ninclude_paths = 1, .no_cache = true};
    assert_ok(cus_program_compile(p, &o));
    const void *ptx = NULL;
    size_t size = 0;
    assert_ok(cus_program_code(p, CUS_PROGRAM_PTX, &ptx, &size));
    assert_contains((const char *)ptx, "1086324736"); /* 6.0f (0x40c00000), folded */
    p = cus_program_unref(p);

    /* without the define it does not compile */
    assert_ok(cus_program_create(src, "hdr.cu", hdr, 1, &p));
    o.ndefines = 0;
    o.defines = NULL;
    assert_status(cus_program_compile(p, &o), CUDA_ERROR_INVALID_SOURCE);
    assert_contains(cus_last_error_message(), "OFFSET");
    p = cus_program_unref(p);
}

/* Each NVRTC call cuscope makes, failed in turn: the mapped status, the call
 * named, nothing compiled, and a later compile works. */
static void test_each_nvrtc_call_fails(void **state)
{
    (void)state;
    static const struct {
        const char *call;
        cus_program_target target;
        int result;
        cus_status want;
    } rows[] = {
        {"nvrtcCreateProgram", CUS_PROGRAM_PTX, NVRTC_ERROR_PROGRAM_CREATION_FAILURE,
         CUDA_ERROR_UNKNOWN},
        {"nvrtcAddNameExpression", CUS_PROGRAM_PTX, NVRTC_ERROR_INVALID_INPUT,
         CUS_ERROR_INVALID_ARGUMENT},
        {"nvrtcCompileProgram", CUS_PROGRAM_PTX, NVRTC_ERROR_OUT_OF_MEMORY,
         CUS_ERROR_OUT_OF_HOST_MEMORY},
        {"nvrtcCompileProgram", CUS_PROGRAM_PTX, NVRTC_ERROR_BUILTIN_OPERATION_FAILURE,
         CUS_ERROR_NOT_SUPPORTED},
        {"nvrtcGetProgramLogSize", CUS_PROGRAM_PTX, NVRTC_ERROR_INVALID_PROGRAM,
         CUDA_ERROR_UNKNOWN},
        {"nvrtcGetProgramLog", CUS_PROGRAM_PTX, NVRTC_ERROR_INVALID_PROGRAM, CUDA_ERROR_UNKNOWN},
        {"nvrtcGetPTXSize", CUS_PROGRAM_PTX, NVRTC_ERROR_INVALID_PROGRAM, CUDA_ERROR_UNKNOWN},
        {"nvrtcGetPTX", CUS_PROGRAM_PTX, NVRTC_ERROR_INTERNAL_ERROR, CUDA_ERROR_UNKNOWN},
        {"nvrtcGetCUBINSize", CUS_PROGRAM_CUBIN, NVRTC_ERROR_INVALID_PROGRAM, CUDA_ERROR_UNKNOWN},
        {"nvrtcGetCUBIN", CUS_PROGRAM_CUBIN, NVRTC_ERROR_INVALID_INPUT,
         CUS_ERROR_INVALID_ARGUMENT},
        {"nvrtcGetLTOIRSize", CUS_PROGRAM_LTOIR, NVRTC_ERROR_INVALID_PROGRAM,
         CUDA_ERROR_UNKNOWN},
        {"nvrtcGetLTOIR", CUS_PROGRAM_LTOIR, NVRTC_ERROR_INVALID_PROGRAM, CUDA_ERROR_UNKNOWN},
        {"nvrtcGetLoweredName", CUS_PROGRAM_PTX, NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID,
         CUDA_ERROR_NOT_FOUND},
    };
    const char *names[] = {"twice<float>"};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        cus_program *p = NULL;
        assert_ok(cus_program_create(template_src, "faults.cu", NULL, 0, &p));
        cus_program_options o = {.arch = 90, .target = rows[i].target, .name_expressions = names,
                                 .nname_expressions = 1, .no_cache = true};
        assert_ok(cus_debug_nvrtc_fail(rows[i].call, 1, rows[i].result));
        cus_status st = cus_program_compile(p, &o);
        if (st != rows[i].want)
            fail_msg("%s: %s, want %s (%s)", rows[i].call, cus_status_name(st),
                     cus_status_name(rows[i].want), cus_last_error_message());
        assert_int_equal(cus_debug_nvrtc_faults(), 1);
        assert_string_equal(cus_last_error()->driver_call, rows[i].call);
        assert_contains(cus_last_error_message(), rows[i].call);
        assert_ok(cus_debug_nvrtc_fail(NULL, 0, 0));
        const void *data = SENTINEL_PTR(data);
        size_t size = 0;
        assert_status(cus_program_code(p, rows[i].target, &data, &size),
                      CUS_ERROR_INVALID_ARGUMENT);
        /* a failed compile may be retried */
        assert_ok(cus_program_compile(p, &o));
        assert_ok(cus_program_code(p, rows[i].target, &data, &size));
        p = cus_program_unref(p);
    }
    cus_program_cache_clear();

    /* a failed destroy goes to the handler; the compile succeeded */
    unsigned long before = env_destroyed.count;
    cus_program *p = NULL;
    assert_ok(cus_program_create(scale_src, "destroy.cu", NULL, 0, &p));
    assert_ok(cus_debug_nvrtc_fail("nvrtcDestroyProgram", 1, NVRTC_ERROR_INVALID_PROGRAM));
    cus_program_options o = {.arch = 90, .no_cache = true};
    assert_ok(cus_program_compile(p, &o));
    assert_int_equal(env_destroyed.count, before + 1);
    assert_string_equal(env_destroyed.last_driver_call, "nvrtcDestroyProgram");
    p = cus_program_unref(p);

    /* the second of a call's uses */
    const char *two[] = {"twice<float>", "twice<int>"};
    o = (cus_program_options){.arch = 90, .name_expressions = two, .nname_expressions = 2,
                              .no_cache = true};
    assert_ok(cus_program_create(template_src, "second.cu", NULL, 0, &p));
    assert_ok(cus_debug_nvrtc_fail("nvrtcGetLoweredName", 2, NVRTC_ERROR_INTERNAL_ERROR));
    assert_status(cus_program_compile(p, &o), CUDA_ERROR_UNKNOWN);
    assert_contains(cus_last_error_message(), "twice<int>");
    p = cus_program_unref(p);

    /* nvrtcVersion */
    int major = -1, minor = -1;
    assert_ok(cus_debug_nvrtc_fail("nvrtcVersion", 1, NVRTC_ERROR_INVALID_INPUT));
    assert_status(cus_nvrtc_version(&major, &minor), CUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(major, -1);
    assert_ok(cus_debug_nvrtc_fail(NULL, 0, 0));
    assert_ok(cus_nvrtc_version(&major, &minor));
    assert_true(major >= 12);
}

/* Out of host memory at each allocation of a compile: the call fails with
 * CUS_ERROR_OUT_OF_HOST_MEMORY (or succeeds), and nothing leaks. */
static void test_out_of_host_memory(void **state)
{
    (void)state;
    const char *names[] = {"twice<float>"};
    const char *defs[] = {"A=1"};
    cus_program_options o = {.arch = 90, .name_expressions = names, .nname_expressions = 1,
                             .defines = defs, .ndefines = 1, .std = "c++17",
                             .target = CUS_PROGRAM_CUBIN, .no_cache = true};
    for (unsigned long nth = 1;; nth++) {
        cus_program *p = NULL;
        cus_debug_fail_host_alloc(nth, false);
        cus_status st = cus_program_create(template_src, "oom.cu", NULL, 0, &p);
        if (st == CUS_SUCCESS)
            st = cus_program_compile(p, &o);
        unsigned long faults = cus_debug_host_alloc_faults();
        cus_debug_fail_host_alloc(0, false);
        p = cus_program_unref(p);
        if (faults == 0) {
            assert_int_equal(st, CUS_SUCCESS);
            break;
        }
        assert_int_equal(st, CUS_ERROR_OUT_OF_HOST_MEMORY);
    }
}

static void test_cache(void **state)
{
    (void)state;
    cus_program_cache_clear();
    cus_program_cache_stats s;
    cus_program_cache_get_stats(&s);
    assert_int_equal(s.entries, 0);
    assert_int_equal(s.hits, 0);
    const char *names[] = {"twice<float>"};
    cus_program_options o = {.arch = 90, .name_expressions = names, .nname_expressions = 1};
    cus_program *a = compiled(template_src, &o);
    assert_false(cus_program_from_cache(a));
    cus_program_cache_get_stats(&s);
    assert_int_equal(s.entries, 1);
    assert_int_equal(s.misses, 1);
    assert_true(s.bytes > 0);

    /* a hit calls no NVRTC function: an armed fault stays armed */
    assert_ok(cus_debug_nvrtc_fail("nvrtcCreateProgram", 1, NVRTC_ERROR_INTERNAL_ERROR));
    cus_program *b = compiled(template_src, &o);
    assert_int_equal(cus_debug_nvrtc_faults(), 0);
    assert_ok(cus_debug_nvrtc_fail(NULL, 0, 0));
    assert_true(cus_program_from_cache(b));
    const void *pa, *pb;
    size_t na, nb;
    assert_ok(cus_program_code(a, CUS_PROGRAM_PTX, &pa, &na));
    assert_ok(cus_program_code(b, CUS_PROGRAM_PTX, &pb, &nb));
    assert_ptr_equal(pa, pb); /* the same outputs, shared */
    const char *la, *lb;
    assert_ok(cus_program_lowered_name(b, "twice<float>", &lb));
    assert_ok(cus_program_lowered_name(a, "twice<float>", &la));
    assert_string_equal(la, lb);
    cus_program_cache_get_stats(&s);
    assert_int_equal(s.hits, 1);

    /* anything different misses: an option, a name expression, the name, the target */
    cus_program_options o2 = o;
    o2.line_info = true;
    cus_program *c = compiled(template_src, &o2);
    assert_false(cus_program_from_cache(c));
    c = cus_program_unref(c);
    o2 = o;
    o2.nname_expressions = 0;
    c = compiled(template_src, &o2);
    assert_false(cus_program_from_cache(c));
    c = cus_program_unref(c);
    assert_ok(cus_program_create(template_src, "other-name.cu", NULL, 0, &c));
    assert_ok(cus_program_compile(c, &o));
    assert_false(cus_program_from_cache(c));
    c = cus_program_unref(c);
    /* no_cache compiles, and adds nothing */
    o2 = o;
    o2.no_cache = true;
    cus_program_cache_get_stats(&s);
    size_t entries = s.entries;
    c = compiled(template_src, &o2);
    assert_false(cus_program_from_cache(c));
    cus_program_cache_get_stats(&s);
    assert_int_equal(s.entries, entries);
    c = cus_program_unref(c);
    /* turned off: compiles, adds nothing */
    cus_program_cache_set_enabled(false);
    c = compiled(template_src, &o);
    assert_false(cus_program_from_cache(c));
    c = cus_program_unref(c);
    cus_program_cache_set_enabled(true);

    /* cleared: programs keep their outputs, the next compile misses */
    cus_program_cache_clear();
    cus_program_cache_get_stats(&s);
    assert_int_equal(s.entries, 0);
    assert_int_equal(s.bytes, 0);
    assert_ok(cus_program_code(b, CUS_PROGRAM_PTX, &pb, &nb));
    assert_contains((const char *)pb, ".entry");
    c = compiled(template_src, &o);
    assert_false(cus_program_from_cache(c));
    c = cus_program_unref(c);
    cus_program_cache_get_stats(NULL);
    a = cus_program_unref(a);
    b = cus_program_unref(b);
    cus_program_cache_clear();
}

/* The bound: more distinct compiles than entries drop the oldest. */
static void test_cache_bound(void **state)
{
    (void)state;
    cus_program_cache_clear();
    char def[32];
    const char *defs[] = {def};
    cus_program_options o = {.arch = 90, .defines = defs, .ndefines = 1};
    cus_program *p = NULL;
    assert_ok(cus_program_create("__global__ void k() {}\n", "bound.cu", NULL, 0, &p));
    for (int i = 0; i < CUS_PROGRAM_CACHE_MAX_ENTRIES + 3; i++) {
        /* each compile needs a program of its own: compile one by hand */
        cus_program *q = NULL;
        snprintf(def, sizeof def, "V%d=1", i);
        assert_ok(cus_program_create("__global__ void k() {}\n", "bound.cu", NULL, 0, &q));
        assert_ok(cus_program_compile(q, &o));
        q = cus_program_unref(q);
    }
    cus_program_cache_stats s;
    cus_program_cache_get_stats(&s);
    assert_int_equal(s.entries, CUS_PROGRAM_CACHE_MAX_ENTRIES);
    assert_true(s.bytes <= CUS_PROGRAM_CACHE_MAX_BYTES);
    /* the last is there, the first was dropped */
    assert_ok(cus_program_compile(p, &o));
    assert_true(cus_program_from_cache(p));
    p = cus_program_unref(p);
    snprintf(def, sizeof def, "V0=1");
    assert_ok(cus_program_create("__global__ void k() {}\n", "bound.cu", NULL, 0, &p));
    assert_ok(cus_program_compile(p, &o));
    assert_false(cus_program_from_cache(p));
    p = cus_program_unref(p);
    cus_program_cache_clear();
}

/* Threads compiling the same source at once: one compile, the rest wait for
 * it and share its outputs. */
#define COMPILERS 4
static const void *thread_ptx[COMPILERS];
static void *compile_thread(void *arg)
{
    size_t i = (size_t)(uintptr_t)arg;
    cus_program_options o = {.arch = 90};
    cus_program *p = NULL;
    if (cus_program_create(scale_src, "threads.cu", NULL, 0, &p) ||
        cus_program_compile(p, &o))
        return (void *)cus_last_error_message();
    size_t n;
    if (cus_program_code(p, CUS_PROGRAM_PTX, &thread_ptx[i], &n))
        return (void *)"no ptx";
    cus_program_unref(p);
    return NULL;
}

static void test_threads_compile_one_source(void **state)
{
    (void)state;
    cus_program_cache_clear();
    pthread_t t[COMPILERS];
    for (size_t i = 0; i < COMPILERS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, compile_thread, (void *)(uintptr_t)i), 0);
    for (size_t i = 0; i < COMPILERS; i++) {
        void *err = NULL;
        assert_int_equal(pthread_join(t[i], &err), 0);
        if (err)
            fail_msg("thread %zu: %s", i, (const char *)err);
    }
    cus_program_cache_stats s;
    cus_program_cache_get_stats(&s);
    assert_int_equal(s.misses, 1);
    assert_int_equal(s.hits, COMPILERS - 1);
    for (size_t i = 1; i < COMPILERS; i++)
        assert_ptr_equal(thread_ptx[i], thread_ptx[0]);
    cus_program_cache_clear();
}

/* Valgrind runs its client with its preload libraries (vgpreload_*). */
static bool under_valgrind(void)
{
    const char *p = getenv("LD_PRELOAD");
    return p && strstr(p, "vgpreload");
}

int main(void)
{
    const struct CMUnitTest without_nvrtc[] = {
        ENV_TEST(test_create_and_bad_input),
        ENV_TEST(test_library_missing),
        ENV_TEST(test_debug_fail_arguments),
    };
    int failed = cmocka_run_group_tests_name("without NVRTC", without_nvrtc, NULL, NULL);
    int major = 0, minor = 0;
    if (cus_nvrtc_version(&major, &minor) != CUS_SUCCESS) {
        printf("skipping the NVRTC tests: %s\n", cus_last_error_message());
        return failed ? 1 : 77;
    }
    printf("NVRTC %d.%d from %s\n", major, minor, cus_nvrtc_library());
    if (under_valgrind()) {
        /* One NVRTC compile takes about 20 s under valgrind (libnvrtc is
         * large; memcheck finds nothing in it), and the full list makes
         * about 400: CI's valgrind step would time out. Under valgrind,
         * only what checks cuscope's own memory on each path that matters:
         * a compile, loaded and launched; a failed compile's log; threads
         * sharing one compile through the cache. The rest run in the
         * normal, ASan and TSan builds. */
        printf("under valgrind: the NVRTC tests reduced to three\n");
        const struct CMUnitTest few[] = {
            ENV_TEST(test_compile_load_launch_on_fake),
            ENV_TEST(test_compile_error_log_in_message),
            ENV_TEST(test_threads_compile_one_source),
        };
        return failed | cmocka_run_group_tests_name("with NVRTC, under valgrind", few, NULL, NULL);
    }
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_compile_load_launch_on_fake),
        ENV_TEST(test_default_arch_device_0),
        ENV_TEST(test_load_library),
        ENV_TEST(test_cubin_and_ltoir),
        ENV_TEST(test_name_expressions),
        ENV_TEST(test_compile_error_log_in_message),
        ENV_TEST(test_bad_options),
        ENV_TEST(test_headers_defines_includes),
        ENV_TEST(test_each_nvrtc_call_fails),
        ENV_TEST(test_out_of_host_memory),
        ENV_TEST(test_cache),
        ENV_TEST(test_cache_bound),
        ENV_TEST(test_threads_compile_one_source),
    };
    return failed | cmocka_run_group_tests_name("with NVRTC", tests, NULL, NULL);
}
