/* What the module area's files share (fake_module.c: modules, functions,
 * loading; fake_module_launch.c: lookups, attributes, occupancy, launches and
 * host kernels). Private to the area: other areas include fake_module.h. */
#ifndef CUSCOPE_LIB_FAKE_MODULE_RECORDS_H
#define CUSCOPE_LIB_FAKE_MODULE_RECORDS_H

#include "fake_image.h"
#include "fake_module.h"

/* --- records ---------------------------------------------------------------------------- */

struct CUfunc_st {
    struct CUmod_st *mod;
    char *name;                     /* owned; kept until install */
    const fake_image_function *fi;  /* the image's entry; NULL once the module is unloaded */
    int max_dynamic_shared;
    int carveout;
    int required_cluster[3];
    int non_portable_cluster;
    int cluster_policy;
    CUfunc_cache cache_config;
    CUsharedconfig shared_config;
};

struct CUmod_st {
    fake_handle h; /* kind MODULE */
    struct CUctx_st *ctx;
    fake_image *img;              /* NULL once unloaded */
    size_t nfunctions;
    struct CUfunc_st *functions;  /* kept until install */
    /* The functions sorted by name (ties in image order), for a lookup in
     * O(log n) in modules of thousands of kernels. Kept until install. */
    struct CUfunc_st **by_name;
    size_t nglobals;
    fake_mem **globals;           /* img->globals[i]'s memory; NULL once unloaded */
    size_t const_bytes;           /* the __constant__ globals */
    int num_regs;
    int ptx_version, binary_version;
    bool ctx_destroyed;           /* unloaded by its context's death */
    unsigned long doomed;
};

/* The hints a launch or kernel node was given, which change nothing on the
 * fake and are not in its record: kept for cuGraphKernelNodeGetAttribute. */
typedef struct fake_launch_hints {
    bool has_carveout, has_nvlink;
    unsigned int carveout, nvlink;
} fake_launch_hints;

/* A queued launch: the record without its 4 KiB argument area, and only the
 * argument bytes the kernel has (a program that queues many launches holds
 * little per launch). The full cus_fake_launch is built when it runs. */
struct fake_launch_exec {
    struct CUfunc_st *fn;
    CUcontext context;
    CUstream stream;
    unsigned int grid[3], block[3], cluster[3];
    unsigned int shared_bytes;
    bool cooperative, extended;
    bool captured;          /* a graph node's (its stream was capturing) */
    CUgraphExec graph_exec; /* a replay's: the executable graph launched */
    cus_fake_launch_attributes attrs; /* cuLaunchKernelEx's, for the record */
    fake_launch_hints hints;
    size_t nargs, arg_bytes;
    unsigned char args[];
};

/* What occupancy depends on, copied so that it can be computed unlocked. */
typedef struct occupancy_in {
    int max_threads;        /* of the function */
    int max_dynamic_shared; /* of the function */
    size_t static_shared;
    int num_regs;
    int warp, threads_per_sm, blocks_per_sm, regs_per_sm, shared_per_sm, reserved_shared;
    int sm_count;
} occupancy_in;

/* --- helpers of fake_module.c that fake_module_launch.c uses ------------------------------ */

FAKE_HIDDEN int fake_module_blocks_per_sm(const occupancy_in *o, int block, size_t dynamic_shared);
FAKE_HIDDEN const int *fake_module_device_attrs(const struct CUctx_st *c);
FAKE_HIDDEN CUresult fake_module_function_arg_locked(CUfunction hfunc, CUresult if_null, struct CUfunc_st **out);
FAKE_HIDDEN int fake_module_max_threads_of(const struct CUfunc_st *f);
FAKE_HIDDEN CUresult fake_module_module_arg_locked(CUmodule hmod, bool healthy, struct CUmod_st **out);
/* m's function of that name (the first in image order), or NULL. */
FAKE_HIDDEN struct CUfunc_st *fake_module_function_named(const struct CUmod_st *m, const char *name);
FAKE_HIDDEN occupancy_in fake_module_occupancy_of(const struct CUfunc_st *f);
FAKE_HIDDEN int fake_module_optin_dynamic_shared(const struct CUfunc_st *f);
FAKE_HIDDEN int fake_module_static_shared_of(const struct CUfunc_st *f);

/* --- what the library area (fake_library.c, libraries loaded per context as modules) uses --- */

/* cuLibraryLoadData's checks of an image for device dev, with the JIT
 * options and logs of cuModuleLoadDataEx (written back): *out the image as
 * parsed for that device (free with fake_image_free). */
/* The whole file at path, NUL-terminated (so PTX is a string), and its size
 * (without the NUL), for cuModuleLoad and cuLibraryLoadFromFile; the caller
 * frees *data. CUDA_ERROR_FILE_NOT_FOUND (missing, a directory, an I/O
 * error) or CUDA_ERROR_OUT_OF_MEMORY. */
FAKE_HIDDEN CUresult fake_module_read_file(const char *path, unsigned char **data, size_t *size);
FAKE_HIDDEN CUresult fake_module_parse_for_device_locked(CUdevice dev, const void *image, size_t size,
                                                         unsigned int n, CUjit_option *options,
                                                         void **values, fake_image **out);
/* Loads an image into c as cuModuleLoadData does: a module handle of c. */
FAKE_HIDDEN CUresult fake_module_load_into_locked(struct CUctx_st *c, const void *image, size_t size,
                                                  struct CUmod_st **out);
/* cuModuleUnload's work (the context synchronized first); nothing for a
 * module that went with its context. */
FAKE_HIDDEN void fake_module_unload_for_library_locked(struct CUmod_st *m);
/* Whether f is a function record (never dereferenced). */
FAKE_HIDDEN bool fake_module_is_function(const void *f);
/* A launch's function argument that is no function record: the library
 * area's kernels (a CUkernel cast to CUfunction). false: not a kernel. Else
 * *r and, on success, *out: the kernel's function in the launch's context
 * (the stream's, or the current one for a NULL or legacy stream). Set by
 * fake_library.c's constructor. */
typedef bool (*fake_kernel_resolver_fn)(CUfunction h, CUstream stream, CUresult *r,
                                        struct CUfunc_st **out);
FAKE_HIDDEN extern fake_kernel_resolver_fn fake_module_kernel_resolver;

#endif
