/* saxpy: y = a*x + y over 2^20 floats, the way a real program does it: the
 * primary context, page-locked host buffers, copies and the kernel queued on
 * one stream, a block size chosen by the occupancy calculator, events around
 * the kernel for its time, and the result checked on the CPU.
 *
 * Without a GPU it says so and runs on cuscope's fake driver, with a host twin
 * of the kernel (the time it prints is then the fake's, and means nothing).
 *
 *     saxpy [path/to/saxpy.fatbin]
 *
 * The kernel is kernels/saxpy.cu's fatbin, saxpy.fatbin next to the program
 * unless a path is given: it builds against an installed cuscope alone
 * (share/doc/cuscope/examples holds saxpy.c and saxpy.fatbin; see sum.c).
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cuscope/cuscope.h>
#include <cuscope/fake.h>

#define N (1u << 20)
#define A 2.5f

static CUresult saxpy_on_host(const cus_fake_launch *launch, void **args, void *user)
{
    (void)user;
    float a = *(float *)args[0];
    const float *x = (const float *)(uintptr_t) * (CUdeviceptr *)args[1];
    float *y = (float *)(uintptr_t) * (CUdeviceptr *)args[2];
    unsigned long long n = *(unsigned long long *)args[3];
    unsigned long long threads = (unsigned long long)launch->grid[0] * launch->block[0];
    for (unsigned long long i = 0; i < n && i < threads; i++)
        y[i] = a * x[i] + y[i];
    return CUDA_SUCCESS;
}

/* The kernel image: the path given as the first argument, else saxpy.fatbin
 * in this program's directory, where the build puts it (kernels/saxpy.cu
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
        return "saxpy.fatbin"; /* the current directory, then */
    size_t dir = (size_t)(slash + 1 - path);
    int w = snprintf(slash + 1, size - dir, "saxpy.fatbin");
    return w > 0 && (size_t)w < size - dir ? path : "saxpy.fatbin";
}

static cus_status run(const char *image, bool *correct)
{
    cus_device dev;
    CUS_TRY(cus_device_get(0, &dev));
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(cus_context_retain_primary(dev, &ctx));
    cus_context_scope(guard, ctx);
    if (guard.status)
        return guard.status;

    cus_autoptr(cus_module) module = NULL;
    CUS_TRY(cus_module_load_file(ctx, image, NULL, &module));
    cus_autoptr(cus_function) saxpy = NULL;
    CUS_TRY(cus_module_get_function(module, "saxpy", &saxpy));

    /* Page-locked, so that the copies are truly asynchronous. */
    cus_autoptr(cus_host_buffer) hx = NULL;
    cus_autoptr(cus_host_buffer) hy = NULL;
    CUS_TRY(cus_host_buffer_alloc(ctx, N * sizeof(float), 0, &hx));
    CUS_TRY(cus_host_buffer_alloc(ctx, N * sizeof(float), 0, &hy));
    float *x = cus_host_buffer_data(hx), *y = cus_host_buffer_data(hy);
    for (unsigned i = 0; i < N; i++) {
        x[i] = (float)(i % 1000) * 0.5f;
        y[i] = (float)(i % 7);
    }

    cus_autoptr(cus_buffer) dx = NULL;
    cus_autoptr(cus_buffer) dy = NULL;
    CUS_TRY(cus_buffer_alloc_array(ctx, N, sizeof(float), &dx));
    CUS_TRY(cus_buffer_alloc_array(ctx, N, sizeof(float), &dy));

    int min_grid = 0, block = 0;
    CUS_TRY(cus_function_max_potential_block(saxpy, 0, 0, &min_grid, &block));
    unsigned int grid = cus_grid_for(N, (unsigned int)block);

    /* Declared after the buffers it works on, so it is released before them
     * (cuMemFree and cuMemFreeHost wait for the work still queued on them). */
    cus_autoptr(cus_stream) stream = NULL;
    CUS_TRY(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &stream));
    cus_autoptr(cus_event) start = NULL;
    cus_autoptr(cus_event) stop = NULL;
    CUS_TRY(cus_event_create(ctx, 0, &start));
    CUS_TRY(cus_event_create(ctx, 0, &stop));

    CUS_TRY(cus_copy_to_device_async(dx, 0, x, N * sizeof(float), stream));
    CUS_TRY(cus_copy_to_device_async(dy, 0, y, N * sizeof(float), stream));
    CUS_TRY(cus_event_record(start, stream));
    /* The kernel's n is 64-bit: (unsigned long long)N, or the launch fails
     * with "argument 4 is 4 bytes, the kernel's parameter is 8". */
    CUS_TRY(cus_launch(saxpy, grid, (unsigned int)block, 0, stream, A, dx, dy,
                       (unsigned long long)N));
    CUS_TRY(cus_event_record(stop, stream));
    CUS_TRY(cus_copy_to_host_async(y, dy, 0, N * sizeof(float), stream));
    CUS_TRY(cus_stream_synchronize(stream));

    float ms = 0;
    CUS_TRY(cus_event_elapsed_ms(start, stop, &ms));
    printf("saxpy of %u floats: grid %u x block %d, kernel %.3f ms\n", N, grid, block, ms);

    unsigned wrong = 0;
    for (unsigned i = 0; i < N; i++) {
        float want = A * ((float)(i % 1000) * 0.5f) + (float)(i % 7);
        if (fabsf(y[i] - want) > 1e-5f * fabsf(want) + 1e-6f && wrong++ < 5)
            fprintf(stderr, "  y[%u] = %g, expected %g\n", i, y[i], want);
    }
    *correct = wrong == 0;
    if (wrong)
        fprintf(stderr, "saxpy: %u wrong results\n", wrong);
    else
        printf("all %u results correct\n", N);
    return CUS_SUCCESS;
}

int main(int argc, char **argv)
{
    bool on_fake = false;
    if (cus_init() != CUS_SUCCESS) {
        printf("%s\n", cus_last_error_message());
        printf("no GPU here: running on cuscope's fake driver, the kernel on the CPU\n");
        if (cus_fake_install(NULL) != CUS_SUCCESS ||
            cus_fake_register_kernel("saxpy", saxpy_on_host, NULL) != CUS_SUCCESS ||
            cus_init() != CUS_SUCCESS) {
            fprintf(stderr, "saxpy: the fake driver failed: %s\n", cus_last_error_message());
            return 1;
        }
        on_fake = true;
    }

    char path[4096];
    const char *image = kernel_image(argc, argv, path, sizeof path);
    bool correct = false;
    cus_status st = run(image, &correct);
    if (st != CUS_SUCCESS) {
        fprintf(stderr, "saxpy: %s (%s)\n", cus_last_error_message(), cus_status_name(st));
        if (access(image, R_OK) != 0)
            fprintf(stderr, "usage: saxpy [path/to/saxpy.fatbin] (no %s)\n", image);
        return 1;
    }
    if (on_fake && (st = cus_fake_uninstall()) != CUS_SUCCESS) {
        /* its refusals do not record the last error: name the status */
        fprintf(stderr, "saxpy: the fake driver did not uninstall: %s\n", cus_status_name(st));
        return 1;
    }
    return correct ? 0 : 1;
}
