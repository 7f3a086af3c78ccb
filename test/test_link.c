/* JIT linking (include/cuscope/link.h): nvJitLink on the CPU (LTO-IR and
 * relocatable cubins linked into one sm_90 cubin that the fake loads and a
 * host twin runs), the driver's cuLink* on the fake (PTX inputs), an
 * unresolved symbol with its log in the message, every nvJitLink call and
 * every cuLink* call failed in turn, nvJitLink absent, bad arguments, and
 * nothing leaked. The link inputs are kernels/link (link_main.cu, link_lib.cu), built by nvcc:
 * without it the tests that need them skip and say so. */
#include <stdio.h>
#include <string.h>

#include <cuscope/cuscope.h>
#include <cuscope/fake.h>
#include <cuscope/link.h>

#include "stream_common.h"

#ifdef CUS_TEST_HAVE_LINK_KERNELS
#include "cusk-link.h"
#define NEED_INPUTS() ((void)0)
#else
#define NEED_INPUTS()                                                          \
    do {                                                                       \
        print_message("skipped: no nvcc at build time, no link inputs (kernels/link)\n"); \
        skip();                                                                \
    } while (0)
#endif

/* For a test that provokes fake-driver misuse on purpose: checks cuscope's
 * own invariants, then reinstalls the fake so env_teardown sees a clean one. */
static int teardown_after_misuse(void **state)
{
    assert_int_equal(cus_context_stack_depth(), 0);
    assert_int_equal(cus_debug_live_objects(), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
    assert_ok(cus_fake_install(NULL));
    return env_teardown(state);
}
#define MISUSE_TEST(f) cmocka_unit_test_setup_teardown(f, env_setup, teardown_after_misuse)

static bool have_nvjitlink(void)
{
    return cus_link_nvjitlink_version(NULL, NULL) == CUS_SUCCESS;
}

#define NEED_NVJITLINK()                                                       \
    do {                                                                       \
        if (!have_nvjitlink()) {                                               \
            print_message("skipped: nvJitLink does not load here: %s\n",      \
                          cus_last_error_message());                           \
            skip();                                                            \
        }                                                                      \
    } while (0)

/* link_scale's twin: x[i] = 2 * x[i] + 1 for i < n. */
static CUresult link_scale_twin(const cus_fake_launch *l, void **args, void *user)
{
    (void)user;
    CUdeviceptr p;
    int n;
    memcpy(&p, args[0], sizeof p);
    memcpy(&n, args[1], sizeof n);
    float *x = (float *)(uintptr_t)p;
    unsigned long long threads = (unsigned long long)l->grid[0] * l->block[0];
    for (unsigned long long i = 0; i < threads && i < (unsigned long long)n; i++)
        x[i] = 2.0f * x[i] + 1.0f;
    return CUDA_SUCCESS;
}

/* Loads the image into c, launches link_scale on 100 floats and checks
 * the result. */
static void run_linked(cus_context *c, cus_module *m)
{
    assert_ok(cus_fake_register_kernel("link_scale", link_scale_twin, NULL));
    cus_autoptr(cus_function) f = NULL;
    assert_ok(cus_module_get_function(m, "link_scale", &f));
    enum { N = 100 };
    float x[N];
    for (int i = 0; i < N; i++)
        x[i] = (float)i;
    cus_autoptr(cus_buffer) b = NULL;
    assert_ok(cus_buffer_alloc(c, sizeof x, &b));
    assert_ok(cus_copy_to_device(b, 0, x, sizeof x));
    assert_ok(cus_launch(f, cus_grid_for(N, 64), 64, 0, NULL, b, (int)N));
    assert_ok(cus_copy_to_host(x, b, 0, sizeof x));
    for (int i = 0; i < N; i++)
        assert_float_equal(x[i], 2.0f * (float)i + 1.0f, 0);
    assert_int_equal(cus_fake_kernels_without_twin(NULL), 0);
}

#ifdef CUS_TEST_HAVE_LINK_KERNELS
typedef struct input {
    cus_link_input type;
    const unsigned char *data;
    size_t size;
    const char *name;
} input;

#define LTOIR(k) {CUS_LINK_INPUT_LTOIR, cusk_##k##_ltoir, 0, #k ".ltoir"}
#define CUBIN(k) {CUS_LINK_INPUT_CUBIN, cusk_##k##_cubin, 0, #k ".cubin"}
#define PTX(k) {CUS_LINK_INPUT_PTX, cusk_##k##_ptx, 0, #k ".ptx"}

static size_t size_of(const unsigned char *data)
{
    if (data == cusk_link_main_ltoir) return cusk_link_main_ltoir_size;
    if (data == cusk_link_lib_ltoir) return cusk_link_lib_ltoir_size;
    if (data == cusk_link_main_cubin) return cusk_link_main_cubin_size;
    if (data == cusk_link_lib_cubin) return cusk_link_lib_cubin_size;
    if (data == cusk_link_main_ptx) return cusk_link_main_ptx_size + 1; /* with the NUL */
    return cusk_link_lib_ptx_size + 1;
}

/* Links the inputs with opts into a new linker: the status of the first
 * call that fails, or of the completion. */
static cus_status link_all(cus_context *c, const cus_link_options *opts, const input *in,
                           size_t n, cus_linker **out)
{
    cus_autoptr(cus_linker) l = NULL;
    CUS_TRY(cus_linker_create(c, opts, &l));
    for (size_t i = 0; i < n; i++)
        CUS_TRY(cus_linker_add_data(l, in[i].type, in[i].data, size_of(in[i].data), in[i].name));
    CUS_TRY(cus_linker_complete(l, NULL, NULL));
    *out = cus_steal(&l);
    return CUS_SUCCESS;
}
#endif

static void test_nvjitlink_ltoir_load_launch(void **state)
{
    (void)state;
    NEED_INPUTS();
    NEED_NVJITLINK();
#ifdef CUS_TEST_HAVE_LINK_KERNELS
    cus_autoptr(cus_context) c = new_primary();
    const input in[] = {LTOIR(link_main), LTOIR(link_lib)};
    cus_link_options o = {.backend = CUS_LINK_BACKEND_NVJITLINK, .lto = true};
    cus_autoptr(cus_linker) l = NULL;
    assert_ok(link_all(c, &o, in, 2, &l));
    assert_int_equal(cus_linker_backend(l), CUS_LINK_BACKEND_NVJITLINK);
    assert_ptr_equal(cus_linker_context(l), c);
    const void *cubin = NULL;
    size_t size = 0;
    assert_ok(cus_linker_complete(l, &cubin, &size)); /* again: the same cubin */
    assert_int_equal(cus_module_image_format(cubin, size), CUS_IMAGE_CUBIN);
    assert_string_equal(cus_linker_error_log(l), "");
    cus_autoptr(cus_module) m = NULL;
    assert_ok(cus_module_load_data(c, cubin, size, NULL, &m));
    run_linked(c, m);
    /* nvJitLink holds no driver object: one module load, no cuLink* */
    assert_int_equal(cus_fake_calls_of("cuLinkCreate"), 0);
#endif
}

static void test_nvjitlink_cubins_and_files(void **state)
{
    (void)state;
    NEED_INPUTS();
    NEED_NVJITLINK();
#ifdef CUS_TEST_HAVE_LINK_KERNELS
    cus_autoptr(cus_context) c = new_ctx();
    /* the default target: the context's device (9.0 on the fake); LTO-IR
     * needs -lto */
    cus_autoptr(cus_linker) l = NULL;
    cus_link_options lto = {.lto = true};
    assert_ok(cus_linker_create(c, &lto, &l));
    assert_int_equal(cus_linker_backend(l), CUS_LINK_BACKEND_NVJITLINK);
    assert_ok(cus_linker_add_file(l, CUS_LINK_INPUT_CUBIN, cusk_link_main_cubin_PATH));
    assert_ok(cus_linker_add_data(l, CUS_LINK_INPUT_LTOIR, cusk_link_lib_ltoir,
                                  cusk_link_lib_ltoir_size, NULL));
    cus_autoptr(cus_module) m = NULL;
    assert_ok(cus_linker_load(l, NULL, &m));
    run_linked(c, m);
    /* a completed linker takes no more inputs */
    assert_status(cus_linker_add_data(l, CUS_LINK_INPUT_CUBIN, cusk_link_lib_cubin,
                                      cusk_link_lib_cubin_size, NULL),
                  CUS_ERROR_INVALID_ARGUMENT);
    /* relocatable cubins alone, and without a context (an explicit arch) */
    cus_autoptr(cus_linker) l2 = NULL;
    cus_link_options o = {.arch = 90, .set_level = true, .optimization_level = 3,
                          .line_info = true};
    const input in[] = {CUBIN(link_main), CUBIN(link_lib)};
    assert_ok(link_all(NULL, &o, in, 2, &l2));
    assert_null(cus_linker_context(l2));
    cus_module *m2 = SENTINEL_PTR(m2);
    assert_status(cus_linker_load(l2, NULL, &m2), CUS_ERROR_INVALID_ARGUMENT);
    assert_ptr_equal(m2, SENTINEL_PTR(m2));
    /* a missing file */
    cus_autoptr(cus_linker) l3 = NULL;
    assert_ok(cus_linker_create(c, NULL, &l3));
    assert_status(cus_linker_add_file(l3, CUS_LINK_INPUT_CUBIN, "/nonexistent/x.cubin"),
                  CUDA_ERROR_INVALID_IMAGE);
    assert_non_null(strstr(cus_last_error_message(), "nvJitLinkAddFile") ? "" : NULL);
#endif
}

static void test_driver_backend_links_ptx_on_the_fake(void **state)
{
    (void)state;
    NEED_INPUTS();
#ifdef CUS_TEST_HAVE_LINK_KERNELS
    cus_autoptr(cus_context) c = new_ctx();
    cus_link_options o = {.backend = CUS_LINK_BACKEND_DRIVER};
    const input in[] = {PTX(link_main), PTX(link_lib)};
    cus_autoptr(cus_linker) l = NULL;
    stack_snap before = snap();
    assert_ok(link_all(c, &o, in, 2, &l));
    assert_stack_unchanged(before);
    assert_int_equal(cus_linker_backend(l), CUS_LINK_BACKEND_DRIVER);
    /* the link state goes with the linker */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_LINK_STATE), 1);
    assert_int_equal(cus_fake_calls_of("cuLinkDestroy"), 0);
    assert_non_null(strstr(cus_linker_info_log(l), "link_scale"));
    cus_autoptr(cus_module) m = NULL;
    assert_ok(cus_linker_load(l, NULL, &m));
    run_linked(c, m);
    /* from a file too */
    cus_autoptr(cus_linker) l2 = NULL;
    assert_ok(cus_linker_create(c, &o, &l2));
    assert_ok(cus_linker_add_file(l2, CUS_LINK_INPUT_PTX, cusk_link_main_ptx_PATH));
    assert_ok(cus_linker_add_file(l2, CUS_LINK_INPUT_PTX, cusk_link_lib_ptx_PATH));
    assert_ok(cus_linker_complete(l2, NULL, NULL));
    assert_status(cus_linker_add_file(l2, CUS_LINK_INPUT_PTX, "/nonexistent.ptx"),
                  CUS_ERROR_INVALID_ARGUMENT);
    cus_autoptr(cus_linker) l3 = NULL;
    assert_ok(cus_linker_create(c, &o, &l3));
    assert_status(cus_linker_add_file(l3, CUS_LINK_INPUT_PTX, "/nonexistent.ptx"),
                  CUDA_ERROR_FILE_NOT_FOUND);
    /* LTO-IR needs nvJitLink */
    cus_autoptr(cus_linker) l5 = NULL;
    assert_ok(cus_linker_create(c, &o, &l5));
    unsigned long calls = cus_fake_call_count();
    assert_status(cus_linker_add_data(l5, CUS_LINK_INPUT_LTOIR, cusk_link_lib_ltoir,
                                      cusk_link_lib_ltoir_size, NULL),
                  CUS_ERROR_NOT_SUPPORTED);
    assert_int_equal(cus_fake_call_count(), calls);
    /* PTX that does not parse: ptxas' message, at the add */
    cus_autoptr(cus_linker) l6 = NULL;
    assert_ok(cus_linker_create(c, &o, &l6));
    static const char bad[] = ".version 9.0\n.target sm_90\n.address_size 64\nfrobnicate;\n";
    assert_status(cus_linker_add_data(l6, CUS_LINK_INPUT_PTX, bad, sizeof bad, "bad.ptx"),
                  CUDA_ERROR_INVALID_PTX);
    assert_non_null(strstr(cus_last_error_message(), "ptxas"));
    assert_non_null(strstr(cus_linker_error_log(l6), "ptxas"));
#endif
}

/* The fake links PTX only: a cubin is refused, and said to be (a misuse). */
static void test_fake_refuses_other_inputs(void **state)
{
    (void)state;
    NEED_INPUTS();
#ifdef CUS_TEST_HAVE_LINK_KERNELS
    cus_autoptr(cus_context) c = new_ctx();
    cus_link_options o = {.backend = CUS_LINK_BACKEND_DRIVER};
    cus_autoptr(cus_linker) l4 = NULL;
    assert_ok(cus_linker_create(c, &o, &l4));
    unsigned long misuse = cus_fake_misuse_count();
    assert_status(cus_linker_add_data(l4, CUS_LINK_INPUT_CUBIN, cusk_link_lib_cubin,
                                      cusk_link_lib_cubin_size, "lib"),
                  CUDA_ERROR_NOT_SUPPORTED);
    assert_int_equal(cus_fake_misuse_count(), misuse + 1);
    assert_non_null(strstr(cus_fake_last_misuse(), "PTX inputs only"));
    /* a failed linker stays failed */
    assert_status(cus_linker_complete(l4, NULL, NULL), CUS_ERROR_INVALID_ARGUMENT);
#endif
}

static void test_unresolved_symbol_log_in_message(void **state)
{
    (void)state;
    NEED_INPUTS();
#ifdef CUS_TEST_HAVE_LINK_KERNELS
    cus_autoptr(cus_context) c = new_ctx();
    cus_linker *l = SENTINEL_PTR(l);
    /* the driver's linker (the fake) */
    cus_link_options o = {.backend = CUS_LINK_BACKEND_DRIVER};
    const input ptx[] = {PTX(link_main)};
    assert_status(link_all(c, &o, ptx, 1, &l), CUDA_ERROR_UNKNOWN);
    assert_ptr_equal(l, SENTINEL_PTR(l));
    assert_non_null(strstr(cus_last_error_message(), "Undefined reference to '_Z10link_twicef'"));
    assert_string_equal(cus_last_error()->driver_call, "cuLinkComplete");
    if (!have_nvjitlink())
        return;
    o.backend = CUS_LINK_BACKEND_NVJITLINK;
    const input cubin[] = {CUBIN(link_main)};
    cus_autoptr(cus_linker) l2 = NULL;
    assert_ok(cus_linker_create(c, &o, &l2));
    assert_ok(cus_linker_add_data(l2, cubin[0].type, cubin[0].data, size_of(cubin[0].data),
                                  "main.cubin"));
    assert_status(cus_linker_complete(l2, NULL, NULL), CUDA_ERROR_UNKNOWN);
    assert_non_null(strstr(cus_last_error_message(), "Undefined reference to '_Z10link_twicef'"));
    assert_non_null(strstr(cus_last_error_message(), "NVJITLINK_ERROR_INTERNAL"));
    assert_string_equal(cus_last_error()->driver_call, "nvJitLinkComplete");
    assert_non_null(strstr(cus_linker_error_log(l2), "Undefined reference"));
#endif
}

static void test_nvjitlink_calls_fail_in_turn(void **state)
{
    (void)state;
    NEED_INPUTS();
    NEED_NVJITLINK();
#ifdef CUS_TEST_HAVE_LINK_KERNELS
    cus_autoptr(cus_context) c = new_ctx();
    const input in[] = {LTOIR(link_main), LTOIR(link_lib)};
    cus_link_options o = {.backend = CUS_LINK_BACKEND_NVJITLINK, .lto = true};
    static const char *const calls[] = {
        "nvJitLinkCreate", "nvJitLinkAddData", "nvJitLinkComplete",
        "nvJitLinkGetLinkedCubinSize", "nvJitLinkGetLinkedCubin", "nvJitLinkGetInfoLogSize",
        "nvJitLinkGetInfoLog",
    };
    for (size_t i = 0; i < sizeof calls / sizeof *calls; i++) {
        leak_snap before = leak_snap_now();
        cus_linker *l = SENTINEL_PTR(l);
        cus_debug_fail_nvjitlink(calls[i], 1);
        assert_status(link_all(c, &o, in, 2, &l), CUDA_ERROR_UNKNOWN);
        assert_ptr_equal(l, SENTINEL_PTR(l));
        assert_string_equal(cus_last_error()->driver_call, calls[i]);
        assert_nothing_changed(before);
    }
    /* the second add */
    cus_linker *l = SENTINEL_PTR(l);
    cus_debug_fail_nvjitlink("nvJitLinkAddData", 2);
    assert_status(link_all(c, &o, in, 2, &l), CUDA_ERROR_UNKNOWN);
    /* the error log's calls, on a failure path: the failure still surfaces */
    static const char *const log_calls[] = {"nvJitLinkGetErrorLogSize", "nvJitLinkGetErrorLog"};
    const input one[] = {CUBIN(link_main)};
    cus_link_options plain = {.backend = CUS_LINK_BACKEND_NVJITLINK};
    for (size_t i = 0; i < 2; i++) {
        cus_debug_fail_nvjitlink(log_calls[i], 1);
        assert_status(link_all(c, &plain, one, 1, &l), CUDA_ERROR_UNKNOWN);
        assert_non_null(strstr(cus_last_error_message(), "could not be read"));
        assert_non_null(strstr(cus_last_error_message(), log_calls[i]));
    }
    /* add_file */
    cus_autoptr(cus_linker) lf = NULL;
    assert_ok(cus_linker_create(c, &plain, &lf));
    cus_debug_fail_nvjitlink("nvJitLinkAddFile", 1);
    assert_status(cus_linker_add_file(lf, CUS_LINK_INPUT_CUBIN, cusk_link_main_cubin_PATH),
                  CUDA_ERROR_UNKNOWN);
    /* the version */
    cus_debug_fail_nvjitlink("nvJitLinkVersion", 1);
    assert_status(cus_link_nvjitlink_version(NULL, NULL), CUDA_ERROR_UNKNOWN);
    /* destroy: the handler gets it; the link itself succeeded */
    unsigned long reports = env_destroyed.count;
    assert_ok(link_all(c, &o, in, 2, &l));
    cus_debug_fail_nvjitlink("nvJitLinkDestroy", 1);
    l = cus_linker_unref(l);
    assert_int_equal(env_destroyed.count, reports + 1);
    assert_string_equal(env_destroyed.last_driver_call, "nvJitLinkDestroy");
    cus_debug_fail_nvjitlink(NULL, 0);
#endif
}

static void test_cu_link_calls_fail_in_turn(void **state)
{
    (void)state;
    NEED_INPUTS();
#ifdef CUS_TEST_HAVE_LINK_KERNELS
    cus_autoptr(cus_context) c = new_ctx();
    cus_link_options o = {.backend = CUS_LINK_BACKEND_DRIVER};
    const input in[] = {PTX(link_main), PTX(link_lib)};
    static const char *const entries[] = {"cuCtxPushCurrent", "cuLinkCreate", "cuLinkAddData",
                                          "cuLinkComplete"};
    for (size_t i = 0; i < sizeof entries / sizeof *entries; i++) {
        cus_linker *l = SENTINEL_PTR(l);
        assert_fault_surfaces(entries[i], link_all(c, &o, in, 2, &l));
        assert_ptr_equal(l, SENTINEL_PTR(l));
    }
    cus_autoptr(cus_linker) lf = NULL;
    assert_ok(cus_linker_create(c, &o, &lf));
    assert_fault_surfaces("cuLinkAddFile",
                          cus_linker_add_file(lf, CUS_LINK_INPUT_PTX, cusk_link_main_ptx_PATH));
    lf = cus_linker_unref(lf);
    /* cuLinkDestroy: the handler gets it, the link succeeded */
    unsigned long reports = env_destroyed.count;
    cus_linker *l = NULL;
    assert_ok(link_all(c, &o, in, 2, &l));
    assert_ok(cus_fake_fail_entry("cuLinkDestroy", 1, FAULT, false));
    l = cus_linker_unref(l);
    cus_fake_clear_faults();
    assert_int_equal(env_destroyed.count, reports + 1);
    assert_string_equal(env_destroyed.last_driver_call, "cuLinkDestroy");
    /* the state whose destroy failed lives on, until its context goes */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_LINK_STATE), 1);
#endif
}

static void test_nvjitlink_absent(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    assert_ok(cus_link_set_nvjitlink_library("/nonexistent/libnvJitLink.so.13"));
    assert_status(cus_link_nvjitlink_version(NULL, NULL), CUS_ERROR_NOT_SUPPORTED);
    assert_non_null(strstr(cus_last_error_message(), "/nonexistent/libnvJitLink.so.13"));
    cus_linker *l = SENTINEL_PTR(l);
    cus_link_options o = {.backend = CUS_LINK_BACKEND_NVJITLINK};
    assert_status(cus_linker_create(c, &o, &l), CUS_ERROR_NOT_SUPPORTED);
    assert_non_null(strstr(cus_last_error_message(), "CUSCOPE_LIBNVJITLINK"));
    /* AUTO falls back on the driver, which needs a context */
    cus_link_options a = {.arch = 90};
    assert_status(cus_linker_create(NULL, &a, &l), CUS_ERROR_NOT_SUPPORTED);
    assert_ptr_equal(l, SENTINEL_PTR(l));
    assert_ok(cus_linker_create(c, NULL, &l));
    assert_int_equal(cus_linker_backend(l), CUS_LINK_BACKEND_DRIVER);
    l = cus_linker_unref(l);
    assert_ok(cus_link_set_nvjitlink_library(NULL));
    if (!have_nvjitlink())
        return;
    /* busy while a nvJitLink linker lives */
    assert_ok(cus_linker_create(c, NULL, &l));
    assert_status(cus_link_set_nvjitlink_library(NULL), CUS_ERROR_BUSY);
    l = cus_linker_unref(l);
    assert_ok(cus_link_set_nvjitlink_library(NULL));
    int major = 0;
    assert_ok(cus_link_nvjitlink_version(&major, NULL));
    assert_true(major >= 12);
}

static void test_bad_arguments(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_linker *l = SENTINEL_PTR(l);
    unsigned long calls = cus_fake_call_count();
    assert_status(cus_linker_create(c, NULL, NULL), CUS_ERROR_INVALID_ARGUMENT);
    cus_link_options o = {.set_level = true, .optimization_level = 4};
    assert_status(cus_linker_create(c, &o, &l), CUS_ERROR_INVALID_ARGUMENT);
    o = (cus_link_options){.arch = -1};
    assert_status(cus_linker_create(c, &o, &l), CUS_ERROR_INVALID_ARGUMENT);
    o = (cus_link_options){.backend = (cus_link_backend)7};
    assert_status(cus_linker_create(c, &o, &l), CUS_ERROR_INVALID_ARGUMENT);
    o = (cus_link_options){.extra_count = 1};
    assert_status(cus_linker_create(c, &o, &l), CUS_ERROR_INVALID_ARGUMENT);
    const char *const null_extra[] = {NULL};
    o = (cus_link_options){.extra = null_extra, .extra_count = 1};
    assert_status(cus_linker_create(c, &o, &l), CUS_ERROR_INVALID_ARGUMENT);
    o = (cus_link_options){.backend = CUS_LINK_BACKEND_DRIVER, .lto = true};
    assert_status(cus_linker_create(c, &o, &l), CUS_ERROR_NOT_SUPPORTED);
    const char *const extra[] = {"-maxrregcount=32"};
    o = (cus_link_options){.backend = CUS_LINK_BACKEND_DRIVER, .extra = extra, .extra_count = 1};
    assert_status(cus_linker_create(c, &o, &l), CUS_ERROR_NOT_SUPPORTED);
    o = (cus_link_options){.backend = CUS_LINK_BACKEND_DRIVER};
    assert_status(cus_linker_create(NULL, &o, &l), CUS_ERROR_INVALID_ARGUMENT);
    assert_ptr_equal(l, SENTINEL_PTR(l));
    assert_int_equal(cus_fake_call_count(), calls);
    assert_ok(cus_linker_create(c, &o, &l));
    static const char ptx[] = ".version 9.0\n.target sm_90\n";
    assert_status(cus_linker_add_data(NULL, CUS_LINK_INPUT_PTX, ptx, sizeof ptx, NULL),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_linker_add_data(l, CUS_LINK_INPUT_PTX, NULL, 1, NULL),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_linker_add_data(l, CUS_LINK_INPUT_PTX, ptx, 0, NULL),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_linker_add_data(l, (cus_link_input)0, ptx, sizeof ptx, NULL),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_linker_add_file(l, CUS_LINK_INPUT_PTX, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_linker_add_file(NULL, CUS_LINK_INPUT_PTX, "x"), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_linker_complete(NULL, NULL, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_linker_load(NULL, NULL, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_linker_load(l, NULL, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_string_equal(cus_linker_error_log(NULL), "");
    assert_string_equal(cus_linker_info_log(NULL), "");
    assert_int_equal(cus_linker_backend(NULL), CUS_LINK_BACKEND_AUTO);
    assert_null(cus_linker_context(NULL));
    assert_null(cus_linker_ref(NULL));
    assert_null(cus_linker_unref(NULL));
    /* nothing added: the fake's linker has nothing to link */
    assert_status(cus_linker_complete(l, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
    l = cus_linker_unref(l);
    if (!have_nvjitlink())
        return;
    const char *const unknown[] = {"-no-such-option"};
    o = (cus_link_options){.extra = unknown, .extra_count = 1};
    assert_status(cus_linker_create(c, &o, &l), CUS_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(cus_last_error_message(), "NVJITLINK_ERROR_UNRECOGNIZED_OPTION"));
}

/* The linker holds its context: any release order. */
/* A PTX module the fake's linker takes whole (no nvcc needed). */
static const char tiny_ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
                               ".visible .entry tiny_kernel()\n{\n\tret;\n}\n";
static const char broken_ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\nfrobnicate;\n";

/* Writes over the stack below the caller's frame: what a function that
 * returned left there (an array the driver was given) is gone after. */
__attribute__((noinline)) static void scribble_stack(void)
{
    volatile unsigned char junk[16384];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = 0xa5;
}

/* cuLinkCreate's optionValues hold output options (the log sizes), which the
 * driver writes during every later call: the array must live until
 * cuLinkDestroy (cuda.h). cuscope kept it on cuLinkCreate's caller's stack;
 * the fake, which never wrote the sizes back, could not tell. */
static void test_driver_link_options_live_with_the_state(void **state)
{
    (void)state;
    cus_autoptr(cus_context) c = new_ctx();
    cus_link_options o = {.backend = CUS_LINK_BACKEND_DRIVER};
    cus_autoptr(cus_linker) l = NULL;
    assert_ok(cus_linker_create(c, &o, &l));
    scribble_stack();
    unsigned long misuse = cus_fake_misuse_count();
    assert_ok(cus_linker_add_data(l, CUS_LINK_INPUT_PTX, tiny_ptx, sizeof tiny_ptx, "tiny"));
    scribble_stack();
    assert_ok(cus_linker_complete(l, NULL, NULL));
    assert_int_equal(cus_fake_misuse_count(), misuse);
    /* and a failing add, whose error log the driver sizes too */
    cus_autoptr(cus_linker) l2 = NULL;
    assert_ok(cus_linker_create(c, &o, &l2));
    scribble_stack();
    assert_status(cus_linker_add_data(l2, CUS_LINK_INPUT_PTX, broken_ptx, sizeof broken_ptx,
                                      "broken"),
                  CUDA_ERROR_INVALID_PTX);
    assert_int_equal(cus_fake_misuse_count(), misuse);
}

/* The fake as the driver: the log sizes written back after each add and
 * completion; an array that no longer holds its log buffers is misuse. */
static void test_fake_link_writes_output_options_back(void **state)
{
    (void)state;
    PFN_cuLinkAddData_v6050 add = RAW_FN(PFN_cuLinkAddData_v6050, "cuLinkAddData", 6050);
    PFN_cuLinkComplete_v5050 complete = RAW_FN(PFN_cuLinkComplete_v5050, "cuLinkComplete", 5050);
    PFN_cuLinkDestroy_v5050 destroy = RAW_FN(PFN_cuLinkDestroy_v5050, "cuLinkDestroy", 5050);
    cus_autoptr(cus_context) c = new_ctx();
    assert_ok(cus_context_push(c));
    char err[1024], info[1024];
    CUjit_option keys[5] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                            CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                            CU_JIT_WALL_TIME};
    void *values[5] = {err, (void *)(uintptr_t)sizeof err, info,
                       (void *)(uintptr_t)sizeof info, NULL};
    CUlinkState st = NULL;
    assert_cu_ok(RAW_FN(PFN_cuLinkCreate_v6050, "cuLinkCreate", 6050)(5, keys, values, &st));
    assert_cu(add(st, CU_JIT_INPUT_PTX, (void *)broken_ptx, sizeof broken_ptx, "b", 0, NULL,
                  NULL),
              CUDA_ERROR_INVALID_PTX);
    assert_true(strlen(err) > 0);
    assert_int_equal((uintptr_t)values[1], strlen(err));
    assert_cu_ok(add(st, CU_JIT_INPUT_PTX, (void *)tiny_ptx, sizeof tiny_ptx, "t", 0, NULL, NULL));
    assert_int_equal((uintptr_t)values[1], 0);
    void *cubin = NULL;
    size_t size = 0;
    assert_cu_ok(complete(st, &cubin, &size));
    assert_int_equal((uintptr_t)values[3], strlen(info));
    void *again = NULL;
    assert_cu_ok(complete(st, &again, NULL)); /* sizeOut is optional */
    assert_ptr_equal(again, cubin);
    assert_cu(complete(st, NULL, &size), CUDA_ERROR_INVALID_VALUE);
    assert_ptr_equal(values[0], err);
    assert_ptr_equal(values[2], info);
    assert_cu_ok(destroy(st));
    /* an array reused after cuLinkCreate (as a stack frame that returned
     * is): caught at the next call, and not written to */
    assert_cu_ok(RAW_FN(PFN_cuLinkCreate_v6050, "cuLinkCreate", 6050)(5, keys, values, &st));
    values[0] = values[2] = (void *)(uintptr_t)0xa5a5a5a5a5a5a5a5ull;
    values[1] = (void *)(uintptr_t)77;
    unsigned long misuse = cus_fake_misuse_count();
    assert_cu_ok(add(st, CU_JIT_INPUT_PTX, (void *)tiny_ptx, sizeof tiny_ptx, "t", 0, NULL, NULL));
    assert_int_equal(cus_fake_misuse_count(), misuse + 1);
    assert_non_null(strstr(cus_fake_last_misuse(), "optionValues"));
    assert_int_equal((uintptr_t)values[1], 77);
    assert_cu_ok(destroy(st));
    assert_ok(cus_context_pop(NULL));
}

static void test_linker_keeps_its_context(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    cus_link_options o = {.backend = CUS_LINK_BACKEND_DRIVER};
    cus_linker *l = NULL;
    assert_ok(cus_linker_create(c, &o, &l));
    assert_ptr_equal(cus_linker_ref(l), l);
    c = cus_context_unref(c);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_CONTEXT), 1);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_LINK_STATE), 1);
    assert_null(cus_linker_unref(l)); /* the second reference */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_LINK_STATE), 1);
    l = cus_linker_unref(l);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_LINK_STATE), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_CONTEXT), 0);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_nvjitlink_ltoir_load_launch),
        ENV_TEST(test_nvjitlink_cubins_and_files),
        ENV_TEST(test_driver_backend_links_ptx_on_the_fake),
        MISUSE_TEST(test_fake_refuses_other_inputs),
        ENV_TEST(test_unresolved_symbol_log_in_message),
        ENV_TEST(test_nvjitlink_calls_fail_in_turn),
        ENV_TEST(test_cu_link_calls_fail_in_turn),
        ENV_TEST(test_nvjitlink_absent),
        ENV_TEST(test_bad_arguments),
        ENV_TEST(test_linker_keeps_its_context),
        ENV_TEST(test_driver_link_options_live_with_the_state),
        MISUSE_TEST(test_fake_link_writes_output_options_back),
    };
    return cmocka_run_group_tests_name("link", tests, NULL, NULL);
}
