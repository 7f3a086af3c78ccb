/* sum: the seed's complete example, in cuscope. Adds two vectors on the GPU:
 * initialise, take a context, load the `sum` kernel of kernels/sum.cu from
 * its fatbin file, make a stream and three buffers, launch, synchronize,
 * copy back and print the result.
 *
 *     sum [path/to/sum.fatbin]
 *
 * The fatbin is sum.fatbin next to the program unless a path is given. It
 * builds with nothing but an installed cuscope (the installed examples
 * directory, share/doc/cuscope/examples, holds sum.c and sum.fatbin):
 *
 *     cc sum.c $(pkg-config --cflags --libs cuscope-fake) -lm -o sum
 *     ./sum /usr/local/share/doc/cuscope/examples/sum.fatbin
 *
 * Without a GPU it says so and runs on cuscope's fake driver instead, with a
 * host twin of the kernel registered (cus_fake_register_kernel): the same
 * program, the same calls, the kernel run on the CPU.
 *
 * What to copy from here:
 *   - every object is a cus_autoptr: released at scope exit on every path, in
 *     any order (a buffer keeps its context alive, a function its module);
 *   - cus_launch(fn, grid, block, shared_bytes, stream, args...) is
 *     fn<<<grid, block, shared_bytes, stream>>>(args...): the arguments are
 *     checked against the kernel's parameters (count and sizes) before the
 *     driver sees them, and a cus_buffer * passes as its device address.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cuscope/cuscope.h>
#include <cuscope/fake.h>

#define N 10

/* The kernel image: the path given as the first argument, else sum.fatbin
 * in this program's directory, where the build puts it (kernels/sum.cu
 * compiled by nvcc -fatbin) and where an installed cuscope keeps it next to
 * this source (share/doc/cuscope/examples). */
static const char *kernel_image(int argc, char **argv, char *path, size_t size)
{
    if (argc > 1)
        return argv[1];
    ssize_t n = readlink("/proc/self/exe", path, size);
    char *slash = NULL;
    if (n > 0 && (size_t)n < size) {
        path[n] = '\0';
        slash = strrchr(path, '/');
    }
    if (!slash)
        return "sum.fatbin"; /* the current directory, then */
    size_t dir = (size_t)(slash + 1 - path);
    int w = snprintf(slash + 1, size - dir, "sum.fatbin");
    return w > 0 && (size_t)w < size - dir ? path : "sum.fatbin";
}

/* The kernel's host twin, for the fake driver: device pointers are host
 * addresses there. */
static CUresult sum_on_host(const cus_fake_launch *launch, void **args, void *user)
{
    (void)launch;
    (void)user;
    const float *x = (const float *)(uintptr_t) * (CUdeviceptr *)args[0];
    const float *y = (const float *)(uintptr_t) * (CUdeviceptr *)args[1];
    float *out = (float *)(uintptr_t) * (CUdeviceptr *)args[2];
    int count = *(int *)args[3];
    for (int i = 0; i < count; i++)
        out[i] = x[i] + y[i];
    return CUDA_SUCCESS;
}

static cus_status run(const char *image, float result[N])
{
    cus_device dev;
    CUS_TRY(cus_device_get(0, &dev));
    /* A context of our own, destroyed with its last reference; current on
     * this thread until the end of the scope (the guard pops it on every
     * return, before ctx is released). */
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(cus_context_create(dev, CUS_CTX_NO_PUSH, &ctx));
    cus_context_scope(guard, ctx);
    if (guard.status)
        return guard.status;

    /* The fatbin has SASS for the configured architectures and PTX for newer
     * ones, so it loads on any supported GPU. */
    cus_autoptr(cus_module) module = NULL;
    CUS_TRY(cus_module_load_file(ctx, image, NULL, &module));
    cus_autoptr(cus_function) sum = NULL;
    CUS_TRY(cus_module_get_function(module, "sum", &sum));

    cus_autoptr(cus_stream) stream = NULL;
    CUS_TRY(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &stream));

    float x[N], y[N];
    for (int i = 0; i < N; i++) {
        x[i] = 1.0f;
        y[i] = 2.0f * (float)i;
    }
    cus_autoptr(cus_buffer) dx = NULL;
    cus_autoptr(cus_buffer) dy = NULL;
    cus_autoptr(cus_buffer) dout = NULL;
    CUS_TRY(cus_buffer_alloc_array(ctx, N, sizeof(float), &dx));
    CUS_TRY(cus_buffer_alloc_array(ctx, N, sizeof(float), &dy));
    CUS_TRY(cus_buffer_alloc_array(ctx, N, sizeof(float), &dout));
    CUS_TRY(cus_copy_to_device(dx, 0, x, sizeof x));
    CUS_TRY(cus_copy_to_device(dy, 0, y, sizeof y));

    /* sum<<<1, N, 0, stream>>>(x, y, out, N) */
    CUS_TRY(cus_launch(sum, 1, N, 0, stream, dx, dy, dout, (int)N));
    CUS_TRY(cus_stream_synchronize(stream));

    CUS_TRY(cus_copy_to_host(result, dout, 0, N * sizeof(float)));
    return CUS_SUCCESS;
}

int main(int argc, char **argv)
{
    bool on_fake = false;
    if (cus_init() != CUS_SUCCESS) {
        printf("%s\n", cus_last_error_message());
        printf("no GPU here: running on cuscope's fake driver, the kernel on the CPU\n");
        if (cus_fake_install(NULL) != CUS_SUCCESS ||
            cus_fake_register_kernel("sum", sum_on_host, NULL) != CUS_SUCCESS ||
            cus_init() != CUS_SUCCESS) {
            fprintf(stderr, "sum: the fake driver failed: %s\n", cus_last_error_message());
            return 1;
        }
        on_fake = true;
    }

    char path[4096];
    const char *image = kernel_image(argc, argv, path, sizeof path);
    float result[N];
    cus_status st = run(image, result);
    if (st != CUS_SUCCESS) {
        fprintf(stderr, "sum: %s (%s)\n", cus_last_error_message(), cus_status_name(st));
        if (access(image, R_OK) != 0)
            fprintf(stderr, "usage: sum [path/to/sum.fatbin] (no %s)\n", image);
        return 1;
    }

    int wrong = 0;
    printf("sum of x = 1 and y = 2i, on %s:\n", on_fake ? "the fake driver" : "the GPU");
    for (int i = 0; i < N; i++) {
        float want = 1.0f + 2.0f * (float)i;
        printf("  out[%d] = %g\n", i, result[i]);
        wrong += fabsf(result[i] - want) > 0.0f;
    }
    if (wrong) {
        fprintf(stderr, "sum: %d wrong results\n", wrong);
        return 1;
    }
    printf("all %d correct\n", N);
    if (on_fake && (st = cus_fake_uninstall()) != CUS_SUCCESS) {
        /* its refusals do not record the last error: name the status */
        fprintf(stderr, "sum: the fake driver did not uninstall: %s\n", cus_status_name(st));
        return 1;
    }
    return 0;
}
