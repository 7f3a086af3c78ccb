/* nccl-allreduce: an all-reduce (sum) across every GPU with NCCL, on cuscope
 * streams in the primary contexts (the contexts NCCL and the runtime API use).
 *
 * One cus_context_retain_primary, one cus_stream and two cus_buffers per
 * device; ncclCommInitAll over all of them; ncclAllReduce on each device's
 * raw stream (cus_stream_handle) and buffer addresses (cus_buffer_ptr) inside
 * ncclGroupStart/ncclGroupEnd; cus_stream_synchronize; the sums checked on
 * the host.
 *
 * NCCL is loaded at run time (dlopen, as cuscope loads libcuda), so this
 * builds without linking it; nccl.h gives the types. Without NCCL, without a
 * driver (NCCL needs real GPUs: the fake cannot run it) or with fewer than two
 * GPUs it says so and exits 0, having run nothing.
 *
 * NVLink multicast (NVLS) stays off: NCCL_NVLS_ENABLE=0 is set before NCCL
 * initialises. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nccl.h>

#include <cuscope/cuscope.h>

#define MAX_GPUS 16
#define COUNT (1u << 20) /* floats per device */

typedef struct nccl_api {
    __typeof__(&ncclCommInitAll) comm_init_all;
    __typeof__(&ncclCommDestroy) comm_destroy;
    __typeof__(&ncclGroupStart) group_start;
    __typeof__(&ncclGroupEnd) group_end;
    __typeof__(&ncclAllReduce) all_reduce;
    __typeof__(&ncclGetErrorString) error_string;
    __typeof__(&ncclGetVersion) get_version;
} nccl_api;

static void *nccl_open(nccl_api *api)
{
    static const char *const names[] = {"libnccl.so.2", "libnccl.so",
                                        "/usr/local/cuda/lib64/libnccl.so.2",
                                        "/usr/local/cuda/lib64/libnccl.so"};
    void *lib = NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !lib; i++)
        lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return NULL;
    void *p[7] = {dlsym(lib, "ncclCommInitAll"), dlsym(lib, "ncclCommDestroy"),
                  dlsym(lib, "ncclGroupStart"),  dlsym(lib, "ncclGroupEnd"),
                  dlsym(lib, "ncclAllReduce"),   dlsym(lib, "ncclGetErrorString"),
                  dlsym(lib, "ncclGetVersion")};
    for (int i = 0; i < 7; i++)
        if (!p[i]) {
            dlclose(lib);
            return NULL;
        }
    /* object to function pointers: through memcpy, as POSIX allows */
    memcpy(&api->comm_init_all, &p[0], sizeof p[0]);
    memcpy(&api->comm_destroy, &p[1], sizeof p[1]);
    memcpy(&api->group_start, &p[2], sizeof p[2]);
    memcpy(&api->group_end, &p[3], sizeof p[3]);
    memcpy(&api->all_reduce, &p[4], sizeof p[4]);
    memcpy(&api->error_string, &p[5], sizeof p[5]);
    memcpy(&api->get_version, &p[6], sizeof p[6]);
    return lib;
}

#define NCCL_TRY(api, call)                                                    \
    do {                                                                       \
        ncclResult_t r_ = (call);                                              \
        if (r_ != ncclSuccess) {                                               \
            fprintf(stderr, "nccl-allreduce: %s: %s\n", #call, (api)->error_string(r_)); \
            goto out;                                                          \
        }                                                                      \
    } while (0)

#define CUS_CHECK(call)                                                        \
    do {                                                                       \
        cus_status s_ = (call);                                                \
        if (s_ != CUS_SUCCESS) {                                               \
            fprintf(stderr, "nccl-allreduce: %s: %s\n", #call, cus_last_error_message()); \
            goto out;                                                          \
        }                                                                      \
    } while (0)

/* Device i contributes i + 1 + k at index k: the sum is n(n+1)/2 + n*k,
 * exact in floats for these sizes. */
static int run(const nccl_api *api, int n)
{
    int rc = 1;
    cus_context *ctx[MAX_GPUS] = {NULL};
    cus_stream *stream[MAX_GPUS] = {NULL};
    cus_buffer *send[MAX_GPUS] = {NULL}, *recv[MAX_GPUS] = {NULL};
    ncclComm_t comm[MAX_GPUS] = {NULL};
    int devs[MAX_GPUS];
    bool comms = false;
    unsigned long wrong = 0;
    float *host = malloc(COUNT * sizeof *host);
    if (!host) {
        fprintf(stderr, "nccl-allreduce: out of host memory\n");
        return 1;
    }
    for (int i = 0; i < n; i++) {
        cus_device dev;
        CUS_CHECK(cus_device_get(i, &dev));
        devs[i] = i;
        CUS_CHECK(cus_context_retain_primary(dev, &ctx[i]));
        CUS_CHECK(cus_stream_create(ctx[i], CU_STREAM_NON_BLOCKING, 0, &stream[i]));
        CUS_CHECK(cus_buffer_alloc_n(ctx[i], float, COUNT, &send[i]));
        CUS_CHECK(cus_buffer_alloc_n(ctx[i], float, COUNT, &recv[i]));
        for (unsigned k = 0; k < COUNT; k++)
            host[k] = (float)(i + 1) + (float)(k % 1024);
        CUS_CHECK(cus_copy_to_device(send[i], 0, host, COUNT * sizeof *host));
    }
    NCCL_TRY(api, api->comm_init_all(comm, n, devs));
    comms = true;
    NCCL_TRY(api, api->group_start());
    for (int i = 0; i < n; i++) {
        ncclResult_t r = api->all_reduce((const void *)(uintptr_t)cus_buffer_ptr(send[i]),
                                         (void *)(uintptr_t)cus_buffer_ptr(recv[i]), COUNT,
                                         ncclFloat, ncclSum, comm[i],
                                         (cudaStream_t)cus_stream_handle(stream[i]));
        if (r != ncclSuccess) {
            fprintf(stderr, "nccl-allreduce: ncclAllReduce on GPU %d: %s\n", i,
                    api->error_string(r));
            api->group_end();
            goto out;
        }
    }
    NCCL_TRY(api, api->group_end());
    for (int i = 0; i < n; i++)
        CUS_CHECK(cus_stream_synchronize(stream[i]));

    for (int i = 0; i < n; i++) {
        CUS_CHECK(cus_copy_to_host(host, recv[i], 0, COUNT * sizeof *host));
        for (unsigned k = 0; k < COUNT; k++) {
            float want = (float)(n * (n + 1) / 2) + (float)n * (float)(k % 1024);
            if (host[k] != want && wrong++ < 5)
                fprintf(stderr, "nccl-allreduce: GPU %d [%u] = %g, expected %g\n", i, k,
                        (double)host[k], (double)want);
        }
    }
    if (wrong) {
        fprintf(stderr, "nccl-allreduce: %lu wrong sums\n", wrong);
        goto out;
    }
    printf("all-reduce of %u floats across %d GPUs: every sum correct\n", COUNT, n);
    rc = 0;
out:
    for (int i = 0; i < n && comms; i++)
        if (comm[i])
            api->comm_destroy(comm[i]);
    for (int i = n - 1; i >= 0; i--) {
        recv[i] = cus_buffer_unref(recv[i]);
        send[i] = cus_buffer_unref(send[i]);
        stream[i] = cus_stream_unref(stream[i]);
        ctx[i] = cus_context_unref(ctx[i]);
    }
    free(host);
    return rc;
}

int main(void)
{
    /* Before NCCL reads its environment: no NVLink multicast. */
    if (setenv("NCCL_NVLS_ENABLE", "0", 1) != 0) {
        perror("nccl-allreduce: setenv");
        return 1;
    }
    if (cus_init() != CUS_SUCCESS) {
        printf("%s\n", cus_last_error_message());
        printf("no GPU here: NCCL needs real GPUs (the fake driver cannot run it); nothing run\n");
        return 0;
    }
    int n = 0;
    if (cus_device_count(&n) != CUS_SUCCESS) {
        fprintf(stderr, "nccl-allreduce: %s\n", cus_last_error_message());
        return 1;
    }
    if (n < 2) {
        printf("%d GPU here: an all-reduce needs two or more; nothing run\n", n);
        return 0;
    }
    if (n > MAX_GPUS)
        n = MAX_GPUS;
    nccl_api api;
    void *lib = nccl_open(&api);
    if (!lib) {
        const char *why = dlerror();
        printf("NCCL (libnccl.so.2) not found or incomplete: %s; nothing run\n",
               why ? why : "an entry point is missing");
        return 0;
    }
    int version = 0;
    api.get_version(&version);
    printf("NCCL %d on %d GPUs, NCCL_NVLS_ENABLE=%s\n", version, n, getenv("NCCL_NVLS_ENABLE"));
    int rc = run(&api, n);
    dlclose(lib);
    return rc;
}
