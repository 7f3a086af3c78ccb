// cus_launch and cus_launch_ex from C++ (include/cuscope/launch.h's C++
// path), on the fake driver: the launches the C macros make, the same
// argument checks, buffers as their device addresses, and a capture keeping
// the buffers a C++ launch uses. Built with the C++ compiler CI gives
// (g++ in the gcc job, clang++ in the clang job), in the unit suite.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <cuscope/cuscope.h>
#include <cuscope/fake.h>

static int failures;

#define EXPECT(cond)                                                                   \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            std::fprintf(stderr, "%s:%d: expected %s (last error: %s)\n", __FILE__,    \
                         __LINE__, #cond, cus_last_error_message());                   \
            failures++;                                                                \
        }                                                                              \
    } while (0)

static const char ptx[] = ".version 7.0\n"
                          ".target sm_80\n"
                          ".address_size 64\n"
                          ".visible .entry axpy(.param .f32 a, .param .u64 x, .param .u64 y,\n"
                          "                     .param .u32 n)\n"
                          "{\n\tret;\n}\n"
                          ".visible .entry none()\n"
                          "{\n\tret;\n}\n";

// A kernel that takes a tensor map by value (as `const __grid_constant__
// CUtensorMap` compiles) and a pointer.
static const char tmap_ptx[] = ".version 8.0\n"
                               ".target sm_90\n"
                               ".address_size 64\n"
                               ".visible .entry tmap(.param .align 128 .b8 m[128], .param .u64 out)\n"
                               "{\n\tret;\n}\n";

int main()
{
    EXPECT(cus_fake_install(NULL) == CUS_SUCCESS);
    {
        cus_device dev;
        EXPECT(cus_device_get(0, &dev) == CUS_SUCCESS);
        cus_autoptr(cus_context) ctx = NULL;
        EXPECT(cus_context_retain_primary(dev, &ctx) == CUS_SUCCESS);
        cus_autoptr(cus_module) mod = NULL;
        EXPECT(cus_module_load_data(ctx, ptx, sizeof ptx, NULL, &mod) == CUS_SUCCESS);
        cus_autoptr(cus_function) axpy = NULL; // a function reference is one on its module
        cus_autoptr(cus_function) none = NULL;
        EXPECT(cus_module_get_function(mod, "axpy", &axpy) == CUS_SUCCESS);
        EXPECT(cus_module_get_function(mod, "none", &none) == CUS_SUCCESS);
        cus_autoptr(cus_stream) s = NULL;
        EXPECT(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &s) == CUS_SUCCESS);
        cus_autoptr(cus_buffer) x = NULL;
        cus_autoptr(cus_buffer) y = NULL;
        EXPECT(cus_buffer_alloc(ctx, 64, &x) == CUS_SUCCESS);
        EXPECT(cus_buffer_alloc(ctx, 64, &y) == CUS_SUCCESS);
        const cus_buffer *cx = x;

        unsigned long launches = cus_fake_calls_of("cuLaunchKernel");
        EXPECT(cus_launch(axpy, 1, 16, 0, s, 2.0f, cx, y, 16u) == CUS_SUCCESS);
        cus_dim3 grid = {2, 2, 1};
        EXPECT(cus_launch(axpy, grid, 16, 0, s, 2.0f, x, y, 16u) == CUS_SUCCESS);
        EXPECT(cus_launch(none, 1, 1, 0, s) == CUS_SUCCESS);
        EXPECT(cus_launch(none, 1, 1, 0, NULL) == CUS_SUCCESS);
        EXPECT(cus_fake_calls_of("cuLaunchKernel") == launches + 4);

        // The checks: a missing argument, a double where a float goes, an
        // argument too many; none reaches the driver.
        EXPECT(cus_launch(axpy, 1, 16, 0, s, 2.0f, x, y) == CUS_ERROR_INVALID_ARGUMENT);
        EXPECT(cus_launch(axpy, 1, 16, 0, s, 2.0, x, y, 16u) == CUS_ERROR_INVALID_ARGUMENT);
        EXPECT(cus_launch(none, 1, 1, 0, s, 1) == CUS_ERROR_INVALID_ARGUMENT);
        EXPECT(cus_launch(axpy, 1, 16, 0, s) == CUS_ERROR_INVALID_ARGUMENT);
        EXPECT(cus_fake_calls_of("cuLaunchKernel") == launches + 4);

        // A library kernel: the same macros, through the cus_kernel overloads.
        {
            cus_autoptr(cus_library) lib = NULL;
            EXPECT(cus_library_load_data(ptx, sizeof ptx, NULL, NULL, &lib) == CUS_SUCCESS);
            cus_autoptr(cus_kernel) k = NULL;
            EXPECT(cus_library_get_kernel(lib, "axpy", &k) == CUS_SUCCESS);
            unsigned long before = cus_fake_calls_of("cuLaunchKernel");
            EXPECT(cus_launch(k, 1, 16, 0, s, 2.0f, x, y, 16u) == CUS_SUCCESS);
            EXPECT(cus_launch(k, 1, 16, 0, s, 2.0, x, y, 16u) == CUS_ERROR_INVALID_ARGUMENT);
            EXPECT(cus_fake_calls_of("cuLaunchKernel") == before + 1);
            cus_launch_config kc = {};
            kc.grid = {1, 1, 1};
            kc.block = {16, 1, 1};
            kc.stream = s;
            EXPECT(cus_launch_ex(k, &kc, 2.0f, x, y, 16u) == CUS_SUCCESS);
            EXPECT(cus_stream_synchronize(s) == CUS_SUCCESS);
        }

        // A tensor map goes by value, its 128 bytes (the cus_tensor_map overloads).
        {
            cus_autoptr(cus_module) tm = NULL;
            EXPECT(cus_module_load_data(ctx, tmap_ptx, sizeof tmap_ptx, NULL, &tm) == CUS_SUCCESS);
            cus_autoptr(cus_function) f = NULL;
            EXPECT(cus_module_get_function(tm, "tmap", &f) == CUS_SUCCESS);
            cus_tensor_map_params p = {};
            p.data_type = CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
            p.rank = 1;
            p.global_dim[0] = 16;
            p.box_dim[0] = 16;
            cus_autoptr(cus_tensor_map) map = NULL;
            EXPECT(cus_tensor_map_create_tiled(x, &p, &map) == CUS_SUCCESS);
            EXPECT(cus_launch(f, 1, 1, 0, s, map, y) == CUS_SUCCESS);
            size_t off = 0;
            EXPECT(cus_function_param_info(f, 0, &off, NULL) == CUS_SUCCESS);
            cus_fake_launch l;
            EXPECT(cus_fake_last_launch(&l) == CUS_SUCCESS);
            EXPECT(std::memcmp(l.args + off, cus_tensor_map_get(map), sizeof(CUtensorMap)) == 0);
            const cus_tensor_map *cmap = map;
            cus_launch_config tc = {};
            tc.grid = {1, 1, 1};
            tc.block = {1, 1, 1};
            tc.stream = s;
            EXPECT(cus_launch_ex(f, &tc, cmap, y) == CUS_SUCCESS);
            // A pointer where the map goes: 8 bytes for 128.
            EXPECT(cus_launch(f, 1, 1, 0, s, x, y) == CUS_ERROR_INVALID_ARGUMENT);
            EXPECT(cus_stream_synchronize(s) == CUS_SUCCESS);
        }

        cus_launch_config config = {};
        config.grid = {1, 1, 1};
        config.block = {32, 1, 1};
        config.stream = s;
        EXPECT(cus_launch_ex(axpy, &config, 2.0f, x, y, 32u) == CUS_SUCCESS);
        EXPECT(cus_launch_ex(axpy, &config, 2.0f, x) == CUS_ERROR_INVALID_ARGUMENT);
        EXPECT(cus_launch_ex(none, &config) == CUS_SUCCESS);

        // A capture keeps what a C++ launch uses: the buffers, and the module.
        cus_autoptr(cus_graph) g = NULL;
        {
            cus_capture_scope(cap, s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
            EXPECT(cap.status == CUS_SUCCESS);
            EXPECT(cus_launch(axpy, 1, 16, 0, s, 2.0f, x, y, 16u) == CUS_SUCCESS);
            EXPECT(cus_launch(axpy, 1, 16, 0, s, 2.0f, y, x, 16u) == CUS_SUCCESS);
            EXPECT(cus_capture_end(&cap, &g) == CUS_SUCCESS);
        }
        EXPECT(cus_graph_kept_objects(g) == 3);
        EXPECT(cus_stream_synchronize(s) == CUS_SUCCESS);
    }
    EXPECT(cus_debug_live_objects() == 0);
    EXPECT(cus_fake_uninstall() == CUS_SUCCESS);
    if (failures)
        std::fprintf(stderr, "test_cxx_launch: %d failure(s)\n", failures);
    else
        std::puts("test_cxx_launch: every check passed");
    return failures ? 1 : 0;
}
