/* cuscope/launch.h: kernel launch.
 *
 *   cus_launch(fn, grid, block, shared_bytes, stream, args...)
 *
 * is cuscope's <<<grid, block, shared_bytes, stream>>>: grid and block are a
 * cus_dim3 (CUS_DIM3(x, y, z)) or an integer (x, with y = z = 1); stream is a
 * cus_stream * or NULL (the legacy default stream of the function's
 * context). Each argument is copied into a compound literal of its own type
 * (so `2.0f` is a float, `2.0` a double and `(size_t)n` eight bytes), and its
 * size goes along: when the kernel's parameter layout is known
 * (cus_function_layout_known), the count and every size are checked first,
 * and a mismatch fails with CUS_ERROR_INVALID_ARGUMENT and a message such as
 * "saxpy: argument 4 is 4 bytes, the kernel's parameter is 8", without
 * reaching the driver. A cus_buffer * argument is passed as its device
 * address (CUdeviceptr), a cus_texture * (cuscope/array.h) as its
 * CUtexObject, a cus_tensor_map * (cuscope/tensor_map.h) by value as its
 * CUtensorMap (128 bytes, for a `const __grid_constant__ CUtensorMap`
 * parameter); a capture keeps them alive with its graph.
 *
 * The launch allocates nothing, takes no lock, and makes one driver call
 * (cuLaunchKernel) when the function's context is current on the calling
 * thread; otherwise it is made current for the call and the stack restored.
 * (While a stream capture begun through cuscope is open, it also notes what
 * the graph must keep alive, under a lock, and may ask the driver which
 * capture the stream is in; releases deferred out of host functions run
 * first when there are any.)
 * A stream of another context than the function's fails with
 * CUS_ERROR_CONTEXT_MISMATCH. Launch failures are reported by the launch;
 * faults inside the kernel by a later synchronizing call.
 * A configuration the driver refuses (CUDA_ERROR_INVALID_VALUE,
 * CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, CUDA_ERROR_INVALID_CLUSTER_SIZE) keeps
 * the driver's status, and its message names the launch and every limit it
 * broke, read from the device and the function after the refusal:
 * "saxpy<<<(1,70000,1), (256,1,1), 0 B>>>: grid.y 70000 exceeds the
 * device's 65535 (CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)". A successful launch
 * reads none of them.
 *
 * cus_launch_ex(fn, &config, args...) is the same over cuLaunchKernelEx
 * (drivers from 11.8), with thread-block clusters and cooperative launch.
 *
 * Both take a library kernel (cus_kernel *, cuscope/library.h) in place of
 * fn, with the same checks and fast path: it runs in the stream's context,
 * or with a NULL stream in the thread's current one, and nothing is
 * switched (see cus_kernel_launch).
 *
 * Thread-safe; must not be called from a host function.
 */
#ifndef CUSCOPE_LAUNCH_H
#define CUSCOPE_LAUNCH_H

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>

#include "array.h"
#include "function.h"
#include "library.h"
#include "memory.h"
#include "object.h"
#include "status.h"
#include "stream.h"
#include "tensor_map.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Grid or block dimensions, as CUDA's dim3 (unused dimensions are 1). */
typedef struct cus_dim3 {
    unsigned int x, y, z; /* the extents along each axis */
} cus_dim3;

/* A cus_dim3 value: cus_launch(fn, CUS_DIM3(8, 8, 1), ...). */
#define CUS_DIM3(x, y, z) ((cus_dim3){(x), (y), (z)})

/* A 1-D grid that covers n elements with blocks of `block` threads (at
 * least 1 block; clamped to the driver's 2^31 - 1 limit on x). */
static inline unsigned int cus_grid_for(size_t n, unsigned int block)
{
    if (block == 0)
        return 1;
    size_t g = n / block + (n % block != 0);
    if (g == 0)
        g = 1;
    return g > 0x7fffffffu ? 0x7fffffffu : (unsigned int)g;
}

/* The explicit form the macros expand to, also usable directly with an
 * argument array built at run time: args[i] points at argument i, sizes[i]
 * is its size (sizes may be NULL: no check). */
CUS_API cus_status cus_function_launch(cus_function *fn, cus_dim3 grid, cus_dim3 block,
                                       unsigned int shared_bytes, cus_stream *stream,
                                       unsigned int nargs, void **args, const size_t *sizes);

/* An L2 access-policy window over part of a buffer
 * (CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW): accesses to
 * [offset, offset + bytes) of buffer get hit_prop for a hit_ratio share of
 * their lines, miss_prop for the rest. */
typedef struct cus_launch_access_policy {
    cus_buffer *buffer;    /* NULL: no window; else of the function's context */
    size_t offset;         /* where the window starts in the buffer */
    size_t bytes;          /* its length; 0: to the buffer's end */
    float hit_ratio;       /* in [0, 1] */
    CUaccessProperty hit_prop;  /* NORMAL, STREAMING or PERSISTING */
    CUaccessProperty miss_prop; /* NORMAL or STREAMING */
} cus_launch_access_policy;

/* What cus_launch_ex and cus_function_launch_ex launch with. A config
 * zeroed but for grid and block launches as cus_launch does; every field
 * below `cooperative` is one launch attribute of cuLaunchKernelEx, sent only
 * when set, and checked before the driver is called: a value out of its
 * range fails with CUS_ERROR_INVALID_ARGUMENT and a message that names the
 * field and the rule ("access_policy.hit_ratio 1.5 is outside [0, 1]"). */
typedef struct cus_launch_config {
    cus_dim3 grid, block;      /* the grid of blocks, and each block's threads */
    unsigned int shared_bytes; /* dynamic shared memory per block */
    cus_stream *stream;   /* NULL: the legacy default stream */
    cus_dim3 cluster;     /* thread-block cluster dimensions; zeros: none */
    bool cooperative;     /* cuLaunchCooperativeKernel semantics */
    /* Programmatic dependent launch
     * (CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION): this kernel
     * may start before the previous kernel of the stream completes, once
     * that one's blocks have called cudaTriggerProgrammaticLaunchCompletion()
     * (or ended); it must call cudaGridDependencySynchronize() before it
     * reads what the previous kernel wrote. sm_90 and later. */
    bool programmatic_serialization;
    /* CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT: an event of the function's
     * context, made with CU_EVENT_DISABLE_TIMING (and not interprocess),
     * that fires once every block of this kernel has triggered (or ended);
     * NULL: none. A capture keeps it alive with the graph. */
    cus_event *programmatic_event;
    bool programmatic_event_at_block_start; /* each block triggers as it starts */
    /* CU_LAUNCH_ATTRIBUTE_PRIORITY: with set_priority, the kernel's priority,
     * within the context's stream priority range
     * (cus_context_stream_priority_range: greatest <= priority <= least). */
    bool set_priority;
    int priority; /* the priority sent with set_priority */
    /* CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE: SPREAD or
     * LOAD_BALANCING; DEFAULT (0) sends nothing (the function's own). */
    CUclusterSchedulingPolicy cluster_policy;
    /* CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION (CUDA 12.8 headers and
     * drivers): a larger cluster the device prefers when it fits; each of x
     * and y a multiple of cluster's that divides the grid, z equal to
     * cluster.z; it needs a regular cluster: `cluster`, or the kernel's
     * compile-time one (__cluster_dims__, which only the driver checks).
     * Zeros: none. CUS_ERROR_NOT_SUPPORTED when
     * cuscope was built with older headers. */
    cus_dim3 preferred_cluster;
    /* CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW; buffer NULL: none. A capture
     * keeps the buffer alive with the graph. */
    cus_launch_access_policy access_policy;
    /* CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN: with set_mem_sync_domain, the
     * memory synchronization domain, DEFAULT or REMOTE. */
    bool set_mem_sync_domain;
    CUlaunchMemSyncDomain mem_sync_domain; /* the domain sent with set_mem_sync_domain */
    /* CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP: with set_mem_sync_domain_map,
     * the domain ids the two logical domains map to, each below the
     * device's CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT. */
    bool set_mem_sync_domain_map;
    CUlaunchMemSyncDomainMap mem_sync_domain_map; /* the map sent with set_mem_sync_domain_map */
} cus_launch_config;

/* cus_function_launch with a cus_launch_config: over cuLaunchKernelEx, with
 * thread-block clusters, cooperative launch and the launch attributes of
 * cus_launch_config. CUS_ERROR_NOT_SUPPORTED without cuLaunchKernelEx.
 * CUS_ERROR_INVALID_ARGUMENT, before the driver, for an attribute out of its
 * range; CUS_ERROR_CONTEXT_MISMATCH for an event or window buffer of another
 * context. */
CUS_API cus_status cus_function_launch_ex(cus_function *fn, const cus_launch_config *config,
                                          unsigned int nargs, void **args, const size_t *sizes);

/* cus_function_launch for a library kernel (cuscope/library.h): the same
 * checks against the kernel's layout, no context switch. The launch runs in
 * the stream's context, or with a NULL stream in the thread's current one
 * (none current: CUDA_ERROR_INVALID_CONTEXT, before the driver is called).
 * A capture keeps the kernel's library alive with the graph. The macros
 * cus_launch and cus_launch_ex take a cus_kernel * as well as a
 * cus_function * and come here for one. Thread-safe; not from a host
 * function. */
CUS_API cus_status cus_kernel_launch(cus_kernel *k, cus_dim3 grid, cus_dim3 block,
                                     unsigned int shared_bytes, cus_stream *stream,
                                     unsigned int nargs, void **args, const size_t *sizes);

/* cus_function_launch_ex for a library kernel; CUS_ERROR_NOT_SUPPORTED
 * without cuLaunchKernelEx. The launch's context as cus_kernel_launch. */
CUS_API cus_status cus_kernel_launch_ex(cus_kernel *k, const cus_launch_config *config,
                                        unsigned int nargs, void **args, const size_t *sizes);

#ifndef __cplusplus
/* Launches fn, as fn<<<grid, block, shared_bytes, stream>>>(args...): the
 * arguments after shared_bytes are the stream, then the kernel's arguments,
 * checked against its parameters (the top of this file). fn is a
 * cus_function * or a library's cus_kernel * (_Generic picks the entry).
 * Returns the cus_status of the launch. */
#define cus_launch(fn, grid, block, shared_bytes, ...)                         \
    _Generic((fn), cus_kernel *: cus_kernel_launch_site_, default: cus_launch_site_)( \
        (fn), CUS_DIM_(grid), CUS_DIM_(block), (shared_bytes), CUS_PACK_(__VA_ARGS__))

/* Launches fn with a launch configuration: cus_launch_ex(fn, &config,
 * args...), over cuLaunchKernelEx (cus_function_launch_ex, or
 * cus_kernel_launch_ex for a cus_kernel *). */
#define cus_launch_ex(fn, ...)                                                 \
    _Generic((fn), cus_kernel *: cus_kernel_launch_ex_site_,                   \
             default: cus_launch_ex_site_)((fn), CUS_PACK_(__VA_ARGS__))
#else
/* C++ (11 and later): the same macros, through the function templates at the
 * end of this header instead of _Generic and compound literals. The same
 * checks, and the same fast path: the sizes array is a static one per list
 * of argument types, which never changes. */
#define cus_launch(fn, grid, block, shared_bytes, ...)                         \
    ::cus_cxx_::launch((fn), ::cus_cxx_::dim(grid), ::cus_cxx_::dim(block),    \
                       (shared_bytes), __VA_ARGS__)

#define cus_launch_ex(fn, ...) ::cus_cxx_::launch_ex((fn), __VA_ARGS__)
#endif

/* The sizes "array" of a launch without arguments: not NULL, so that a
 * kernel with parameters launched with none fails the check. */
CUS_API extern const size_t cus_launch_no_args_[1];

/* The macros' entry points: cus_function_launch(_ex), except that sizes must
 * be an array that never changes (the macros pass a static const one per
 * call site), which lets a launch from a site already checked skip the
 * comparison of every size. Not for direct use. */
CUS_API cus_status cus_launch_site_(cus_function *fn, cus_dim3 grid, cus_dim3 block,
                                    unsigned int shared_bytes, cus_stream *stream,
                                    unsigned int nargs, void **args, const size_t *sizes);
CUS_API cus_status cus_launch_ex_site_(cus_function *fn, const cus_launch_config *config,
                                       unsigned int nargs, void **args, const size_t *sizes);
/* The same for a library kernel (cus_kernel_launch, _ex). Not for direct use. */
CUS_API cus_status cus_kernel_launch_site_(cus_kernel *k, cus_dim3 grid, cus_dim3 block,
                                           unsigned int shared_bytes, cus_stream *stream,
                                           unsigned int nargs, void **args, const size_t *sizes);
CUS_API cus_status cus_kernel_launch_ex_site_(cus_kernel *k, const cus_launch_config *config,
                                              unsigned int nargs, void **args,
                                              const size_t *sizes);

/* --- the machinery behind the macros ---------------------------------------- */

/* An integer becomes (x, 1, 1); a cus_dim3 stays. The inner _Generic keeps
 * the unselected branch valid for either type. */
#define CUS_DIM_(d)                                                            \
    _Generic((d), cus_dim3: (d),                                               \
             default: (cus_dim3){(unsigned int)_Generic((d), cus_dim3: 0u, default: (d)), 1u, 1u})

/* cus_buffer_ptr(), and while a graph capture is active, a note of the buffer
 * for the launch to keep alive with the graph (cuscope/graph.h). */
CUS_API CUdeviceptr cus_buffer_arg_(const cus_buffer *buf);

/* The same for a cus_texture * (cuscope/array.h): its CUtexObject. */
CUS_API CUtexObject cus_texture_arg_(const cus_texture *tex);

/* The same for a cus_tensor_map * (cuscope/tensor_map.h): a copy of its
 * CUtensorMap (zeros for NULL). */
CUS_API CUtensorMap cus_tensor_map_arg_(const cus_tensor_map *map);

/* A cus_buffer * becomes its device address, a cus_texture * its handle, a
 * cus_tensor_map * its CUtensorMap; anything else stays itself. */
#define CUS_ARG_VALUE_(a)                                                      \
    _Generic((a), cus_buffer *: cus_buffer_arg_(CUS_AS_BUFFER_(a)),            \
             const cus_buffer *: cus_buffer_arg_(CUS_AS_BUFFER_(a)),           \
             cus_texture *: cus_texture_arg_(CUS_AS_TEXTURE_(a)),              \
             const cus_texture *: cus_texture_arg_(CUS_AS_TEXTURE_(a)),      \
             cus_tensor_map *: cus_tensor_map_arg_(CUS_AS_TENSOR_MAP_(a)),   \
             const cus_tensor_map *: cus_tensor_map_arg_(CUS_AS_TENSOR_MAP_(a)), default: (a))
#define CUS_AS_TENSOR_MAP_(a)                                                  \
    _Generic((a), cus_tensor_map *: (a), const cus_tensor_map *: (a),          \
             default: (const cus_tensor_map *)0)
#define CUS_AS_TEXTURE_(a)                                                     \
    _Generic((a), cus_texture *: (a), const cus_texture *: (a), default: (const cus_texture *)0)
#define CUS_AS_BUFFER_(a)                                                      \
    _Generic((a), cus_buffer *: (a), const cus_buffer *: (a), default: (const cus_buffer *)0)
/* An array of one, not a scalar literal: `(T){s}` would initialise a struct's
 * first member from s, while `(T[1]){s}` copies s whole. */
#define CUS_ARG_PTR_(a) ((void *)(__typeof__(CUS_ARG_VALUE_(a))[1]){CUS_ARG_VALUE_(a)})
#define CUS_ARG_SIZE_(a) sizeof(CUS_ARG_VALUE_(a))

#define CUS_CAT_(a, b, c) CUS_CAT_I_(a, b, c)
#define CUS_CAT_I_(a, b, c) a##b##c
/* head, then the arguments: head, count, pointers, sizes. */
#define CUS_PACK_(...) CUS_CAT_(CUS_PACK_, CUS_NARGS_(__VA_ARGS__), _)(__VA_ARGS__)
/* The sizes are a static const array (a GNU statement expression), one per
 * call site, built at compile time: see cus_launch_site_. */
#define CUS_ARRAYS_(n, ...)                                                    \
    (void *[]){CUS_CAT_(CUS_MAP_, n, _)(CUS_ARG_PTR_, __VA_ARGS__)}, __extension__({ \
        static const size_t cus_sizes_[] = {CUS_CAT_(CUS_MAP_, n, _)(CUS_ARG_SIZE_, __VA_ARGS__)}; \
        cus_sizes_;                                                            \
    })

/* Generated: up to 63 kernel arguments. */
/* clang-format off */
#define CUS_NARGS_(...) CUS_NARGS_I_(__VA_ARGS__, 64, 63, 62, 61, 60, 59, 58, 57, 56, 55, 54, 53, 52, 51, 50, 49, 48, 47, 46, 45, 44, 43, 42, 41, 40, 39, 38, 37, 36, 35, 34, 33, 32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1)
#define CUS_NARGS_I_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, _16, _17, _18, _19, _20, _21, _22, _23, _24, _25, _26, _27, _28, _29, _30, _31, _32, _33, _34, _35, _36, _37, _38, _39, _40, _41, _42, _43, _44, _45, _46, _47, _48, _49, _50, _51, _52, _53, _54, _55, _56, _57, _58, _59, _60, _61, _62, _63, _64, n, ...) n
#define CUS_MAP_1_(M, a) M(a)
#define CUS_MAP_2_(M, a, ...) M(a), CUS_MAP_1_(M, __VA_ARGS__)
#define CUS_MAP_3_(M, a, ...) M(a), CUS_MAP_2_(M, __VA_ARGS__)
#define CUS_MAP_4_(M, a, ...) M(a), CUS_MAP_3_(M, __VA_ARGS__)
#define CUS_MAP_5_(M, a, ...) M(a), CUS_MAP_4_(M, __VA_ARGS__)
#define CUS_MAP_6_(M, a, ...) M(a), CUS_MAP_5_(M, __VA_ARGS__)
#define CUS_MAP_7_(M, a, ...) M(a), CUS_MAP_6_(M, __VA_ARGS__)
#define CUS_MAP_8_(M, a, ...) M(a), CUS_MAP_7_(M, __VA_ARGS__)
#define CUS_MAP_9_(M, a, ...) M(a), CUS_MAP_8_(M, __VA_ARGS__)
#define CUS_MAP_10_(M, a, ...) M(a), CUS_MAP_9_(M, __VA_ARGS__)
#define CUS_MAP_11_(M, a, ...) M(a), CUS_MAP_10_(M, __VA_ARGS__)
#define CUS_MAP_12_(M, a, ...) M(a), CUS_MAP_11_(M, __VA_ARGS__)
#define CUS_MAP_13_(M, a, ...) M(a), CUS_MAP_12_(M, __VA_ARGS__)
#define CUS_MAP_14_(M, a, ...) M(a), CUS_MAP_13_(M, __VA_ARGS__)
#define CUS_MAP_15_(M, a, ...) M(a), CUS_MAP_14_(M, __VA_ARGS__)
#define CUS_MAP_16_(M, a, ...) M(a), CUS_MAP_15_(M, __VA_ARGS__)
#define CUS_MAP_17_(M, a, ...) M(a), CUS_MAP_16_(M, __VA_ARGS__)
#define CUS_MAP_18_(M, a, ...) M(a), CUS_MAP_17_(M, __VA_ARGS__)
#define CUS_MAP_19_(M, a, ...) M(a), CUS_MAP_18_(M, __VA_ARGS__)
#define CUS_MAP_20_(M, a, ...) M(a), CUS_MAP_19_(M, __VA_ARGS__)
#define CUS_MAP_21_(M, a, ...) M(a), CUS_MAP_20_(M, __VA_ARGS__)
#define CUS_MAP_22_(M, a, ...) M(a), CUS_MAP_21_(M, __VA_ARGS__)
#define CUS_MAP_23_(M, a, ...) M(a), CUS_MAP_22_(M, __VA_ARGS__)
#define CUS_MAP_24_(M, a, ...) M(a), CUS_MAP_23_(M, __VA_ARGS__)
#define CUS_MAP_25_(M, a, ...) M(a), CUS_MAP_24_(M, __VA_ARGS__)
#define CUS_MAP_26_(M, a, ...) M(a), CUS_MAP_25_(M, __VA_ARGS__)
#define CUS_MAP_27_(M, a, ...) M(a), CUS_MAP_26_(M, __VA_ARGS__)
#define CUS_MAP_28_(M, a, ...) M(a), CUS_MAP_27_(M, __VA_ARGS__)
#define CUS_MAP_29_(M, a, ...) M(a), CUS_MAP_28_(M, __VA_ARGS__)
#define CUS_MAP_30_(M, a, ...) M(a), CUS_MAP_29_(M, __VA_ARGS__)
#define CUS_MAP_31_(M, a, ...) M(a), CUS_MAP_30_(M, __VA_ARGS__)
#define CUS_MAP_32_(M, a, ...) M(a), CUS_MAP_31_(M, __VA_ARGS__)
#define CUS_MAP_33_(M, a, ...) M(a), CUS_MAP_32_(M, __VA_ARGS__)
#define CUS_MAP_34_(M, a, ...) M(a), CUS_MAP_33_(M, __VA_ARGS__)
#define CUS_MAP_35_(M, a, ...) M(a), CUS_MAP_34_(M, __VA_ARGS__)
#define CUS_MAP_36_(M, a, ...) M(a), CUS_MAP_35_(M, __VA_ARGS__)
#define CUS_MAP_37_(M, a, ...) M(a), CUS_MAP_36_(M, __VA_ARGS__)
#define CUS_MAP_38_(M, a, ...) M(a), CUS_MAP_37_(M, __VA_ARGS__)
#define CUS_MAP_39_(M, a, ...) M(a), CUS_MAP_38_(M, __VA_ARGS__)
#define CUS_MAP_40_(M, a, ...) M(a), CUS_MAP_39_(M, __VA_ARGS__)
#define CUS_MAP_41_(M, a, ...) M(a), CUS_MAP_40_(M, __VA_ARGS__)
#define CUS_MAP_42_(M, a, ...) M(a), CUS_MAP_41_(M, __VA_ARGS__)
#define CUS_MAP_43_(M, a, ...) M(a), CUS_MAP_42_(M, __VA_ARGS__)
#define CUS_MAP_44_(M, a, ...) M(a), CUS_MAP_43_(M, __VA_ARGS__)
#define CUS_MAP_45_(M, a, ...) M(a), CUS_MAP_44_(M, __VA_ARGS__)
#define CUS_MAP_46_(M, a, ...) M(a), CUS_MAP_45_(M, __VA_ARGS__)
#define CUS_MAP_47_(M, a, ...) M(a), CUS_MAP_46_(M, __VA_ARGS__)
#define CUS_MAP_48_(M, a, ...) M(a), CUS_MAP_47_(M, __VA_ARGS__)
#define CUS_MAP_49_(M, a, ...) M(a), CUS_MAP_48_(M, __VA_ARGS__)
#define CUS_MAP_50_(M, a, ...) M(a), CUS_MAP_49_(M, __VA_ARGS__)
#define CUS_MAP_51_(M, a, ...) M(a), CUS_MAP_50_(M, __VA_ARGS__)
#define CUS_MAP_52_(M, a, ...) M(a), CUS_MAP_51_(M, __VA_ARGS__)
#define CUS_MAP_53_(M, a, ...) M(a), CUS_MAP_52_(M, __VA_ARGS__)
#define CUS_MAP_54_(M, a, ...) M(a), CUS_MAP_53_(M, __VA_ARGS__)
#define CUS_MAP_55_(M, a, ...) M(a), CUS_MAP_54_(M, __VA_ARGS__)
#define CUS_MAP_56_(M, a, ...) M(a), CUS_MAP_55_(M, __VA_ARGS__)
#define CUS_MAP_57_(M, a, ...) M(a), CUS_MAP_56_(M, __VA_ARGS__)
#define CUS_MAP_58_(M, a, ...) M(a), CUS_MAP_57_(M, __VA_ARGS__)
#define CUS_MAP_59_(M, a, ...) M(a), CUS_MAP_58_(M, __VA_ARGS__)
#define CUS_MAP_60_(M, a, ...) M(a), CUS_MAP_59_(M, __VA_ARGS__)
#define CUS_MAP_61_(M, a, ...) M(a), CUS_MAP_60_(M, __VA_ARGS__)
#define CUS_MAP_62_(M, a, ...) M(a), CUS_MAP_61_(M, __VA_ARGS__)
#define CUS_MAP_63_(M, a, ...) M(a), CUS_MAP_62_(M, __VA_ARGS__)
#define CUS_PACK_1_(h) (h), 0u, (void **)0, cus_launch_no_args_
#define CUS_PACK_2_(h, ...) (h), 1u, CUS_ARRAYS_(1, __VA_ARGS__)
#define CUS_PACK_3_(h, ...) (h), 2u, CUS_ARRAYS_(2, __VA_ARGS__)
#define CUS_PACK_4_(h, ...) (h), 3u, CUS_ARRAYS_(3, __VA_ARGS__)
#define CUS_PACK_5_(h, ...) (h), 4u, CUS_ARRAYS_(4, __VA_ARGS__)
#define CUS_PACK_6_(h, ...) (h), 5u, CUS_ARRAYS_(5, __VA_ARGS__)
#define CUS_PACK_7_(h, ...) (h), 6u, CUS_ARRAYS_(6, __VA_ARGS__)
#define CUS_PACK_8_(h, ...) (h), 7u, CUS_ARRAYS_(7, __VA_ARGS__)
#define CUS_PACK_9_(h, ...) (h), 8u, CUS_ARRAYS_(8, __VA_ARGS__)
#define CUS_PACK_10_(h, ...) (h), 9u, CUS_ARRAYS_(9, __VA_ARGS__)
#define CUS_PACK_11_(h, ...) (h), 10u, CUS_ARRAYS_(10, __VA_ARGS__)
#define CUS_PACK_12_(h, ...) (h), 11u, CUS_ARRAYS_(11, __VA_ARGS__)
#define CUS_PACK_13_(h, ...) (h), 12u, CUS_ARRAYS_(12, __VA_ARGS__)
#define CUS_PACK_14_(h, ...) (h), 13u, CUS_ARRAYS_(13, __VA_ARGS__)
#define CUS_PACK_15_(h, ...) (h), 14u, CUS_ARRAYS_(14, __VA_ARGS__)
#define CUS_PACK_16_(h, ...) (h), 15u, CUS_ARRAYS_(15, __VA_ARGS__)
#define CUS_PACK_17_(h, ...) (h), 16u, CUS_ARRAYS_(16, __VA_ARGS__)
#define CUS_PACK_18_(h, ...) (h), 17u, CUS_ARRAYS_(17, __VA_ARGS__)
#define CUS_PACK_19_(h, ...) (h), 18u, CUS_ARRAYS_(18, __VA_ARGS__)
#define CUS_PACK_20_(h, ...) (h), 19u, CUS_ARRAYS_(19, __VA_ARGS__)
#define CUS_PACK_21_(h, ...) (h), 20u, CUS_ARRAYS_(20, __VA_ARGS__)
#define CUS_PACK_22_(h, ...) (h), 21u, CUS_ARRAYS_(21, __VA_ARGS__)
#define CUS_PACK_23_(h, ...) (h), 22u, CUS_ARRAYS_(22, __VA_ARGS__)
#define CUS_PACK_24_(h, ...) (h), 23u, CUS_ARRAYS_(23, __VA_ARGS__)
#define CUS_PACK_25_(h, ...) (h), 24u, CUS_ARRAYS_(24, __VA_ARGS__)
#define CUS_PACK_26_(h, ...) (h), 25u, CUS_ARRAYS_(25, __VA_ARGS__)
#define CUS_PACK_27_(h, ...) (h), 26u, CUS_ARRAYS_(26, __VA_ARGS__)
#define CUS_PACK_28_(h, ...) (h), 27u, CUS_ARRAYS_(27, __VA_ARGS__)
#define CUS_PACK_29_(h, ...) (h), 28u, CUS_ARRAYS_(28, __VA_ARGS__)
#define CUS_PACK_30_(h, ...) (h), 29u, CUS_ARRAYS_(29, __VA_ARGS__)
#define CUS_PACK_31_(h, ...) (h), 30u, CUS_ARRAYS_(30, __VA_ARGS__)
#define CUS_PACK_32_(h, ...) (h), 31u, CUS_ARRAYS_(31, __VA_ARGS__)
#define CUS_PACK_33_(h, ...) (h), 32u, CUS_ARRAYS_(32, __VA_ARGS__)
#define CUS_PACK_34_(h, ...) (h), 33u, CUS_ARRAYS_(33, __VA_ARGS__)
#define CUS_PACK_35_(h, ...) (h), 34u, CUS_ARRAYS_(34, __VA_ARGS__)
#define CUS_PACK_36_(h, ...) (h), 35u, CUS_ARRAYS_(35, __VA_ARGS__)
#define CUS_PACK_37_(h, ...) (h), 36u, CUS_ARRAYS_(36, __VA_ARGS__)
#define CUS_PACK_38_(h, ...) (h), 37u, CUS_ARRAYS_(37, __VA_ARGS__)
#define CUS_PACK_39_(h, ...) (h), 38u, CUS_ARRAYS_(38, __VA_ARGS__)
#define CUS_PACK_40_(h, ...) (h), 39u, CUS_ARRAYS_(39, __VA_ARGS__)
#define CUS_PACK_41_(h, ...) (h), 40u, CUS_ARRAYS_(40, __VA_ARGS__)
#define CUS_PACK_42_(h, ...) (h), 41u, CUS_ARRAYS_(41, __VA_ARGS__)
#define CUS_PACK_43_(h, ...) (h), 42u, CUS_ARRAYS_(42, __VA_ARGS__)
#define CUS_PACK_44_(h, ...) (h), 43u, CUS_ARRAYS_(43, __VA_ARGS__)
#define CUS_PACK_45_(h, ...) (h), 44u, CUS_ARRAYS_(44, __VA_ARGS__)
#define CUS_PACK_46_(h, ...) (h), 45u, CUS_ARRAYS_(45, __VA_ARGS__)
#define CUS_PACK_47_(h, ...) (h), 46u, CUS_ARRAYS_(46, __VA_ARGS__)
#define CUS_PACK_48_(h, ...) (h), 47u, CUS_ARRAYS_(47, __VA_ARGS__)
#define CUS_PACK_49_(h, ...) (h), 48u, CUS_ARRAYS_(48, __VA_ARGS__)
#define CUS_PACK_50_(h, ...) (h), 49u, CUS_ARRAYS_(49, __VA_ARGS__)
#define CUS_PACK_51_(h, ...) (h), 50u, CUS_ARRAYS_(50, __VA_ARGS__)
#define CUS_PACK_52_(h, ...) (h), 51u, CUS_ARRAYS_(51, __VA_ARGS__)
#define CUS_PACK_53_(h, ...) (h), 52u, CUS_ARRAYS_(52, __VA_ARGS__)
#define CUS_PACK_54_(h, ...) (h), 53u, CUS_ARRAYS_(53, __VA_ARGS__)
#define CUS_PACK_55_(h, ...) (h), 54u, CUS_ARRAYS_(54, __VA_ARGS__)
#define CUS_PACK_56_(h, ...) (h), 55u, CUS_ARRAYS_(55, __VA_ARGS__)
#define CUS_PACK_57_(h, ...) (h), 56u, CUS_ARRAYS_(56, __VA_ARGS__)
#define CUS_PACK_58_(h, ...) (h), 57u, CUS_ARRAYS_(57, __VA_ARGS__)
#define CUS_PACK_59_(h, ...) (h), 58u, CUS_ARRAYS_(58, __VA_ARGS__)
#define CUS_PACK_60_(h, ...) (h), 59u, CUS_ARRAYS_(59, __VA_ARGS__)
#define CUS_PACK_61_(h, ...) (h), 60u, CUS_ARRAYS_(60, __VA_ARGS__)
#define CUS_PACK_62_(h, ...) (h), 61u, CUS_ARRAYS_(61, __VA_ARGS__)
#define CUS_PACK_63_(h, ...) (h), 62u, CUS_ARRAYS_(62, __VA_ARGS__)
#define CUS_PACK_64_(h, ...) (h), 63u, CUS_ARRAYS_(63, __VA_ARGS__)
/* clang-format on */

#ifdef __cplusplus
}

/* What cus_launch and cus_launch_ex expand to in C++. Not for direct use. */
namespace cus_cxx_ {

inline cus_dim3 dim(cus_dim3 d) { return d; }
template <typename T> inline cus_dim3 dim(T x)
{
    cus_dim3 d = {static_cast<unsigned int>(x), 1u, 1u};
    return d;
}

/* A cus_buffer * becomes its device address, a cus_texture * its handle, a
 * cus_tensor_map * its CUtensorMap; anything else stays itself. */
template <typename T> inline T value(T a) { return a; }
inline CUdeviceptr value(cus_buffer *b) { return cus_buffer_arg_(b); }
inline CUdeviceptr value(const cus_buffer *b) { return cus_buffer_arg_(b); }
inline CUtexObject value(cus_texture *t) { return cus_texture_arg_(t); }
inline CUtexObject value(const cus_texture *t) { return cus_texture_arg_(t); }
inline CUtensorMap value(cus_tensor_map *m) { return cus_tensor_map_arg_(m); }
inline CUtensorMap value(const cus_tensor_map *m) { return cus_tensor_map_arg_(m); }

template <typename... V> struct sizes {
    static const size_t of[sizeof...(V) ? sizeof...(V) : 1];
};
template <typename... V> const size_t sizes<V...>::of[sizeof...(V) ? sizeof...(V) : 1] = {
    sizeof(V)...};

template <typename... V>
inline cus_status launch_values(cus_function *fn, cus_dim3 grid, cus_dim3 block,
                                unsigned int shared_bytes, cus_stream *stream, V... v)
{
    void *args[sizeof...(V) ? sizeof...(V) : 1] = {static_cast<void *>(&v)...};
    return cus_launch_site_(fn, grid, block, shared_bytes, stream,
                            static_cast<unsigned int>(sizeof...(V)), args,
                            sizeof...(V) ? sizes<V...>::of : cus_launch_no_args_);
}

template <typename... A>
inline cus_status launch(cus_function *fn, cus_dim3 grid, cus_dim3 block,
                         unsigned int shared_bytes, cus_stream *stream, A... a)
{
    return launch_values(fn, grid, block, shared_bytes, stream, value(a)...);
}

template <typename... V>
inline cus_status launch_ex_values(cus_function *fn, const cus_launch_config *config, V... v)
{
    void *args[sizeof...(V) ? sizeof...(V) : 1] = {static_cast<void *>(&v)...};
    return cus_launch_ex_site_(fn, config, static_cast<unsigned int>(sizeof...(V)), args,
                               sizeof...(V) ? sizes<V...>::of : cus_launch_no_args_);
}

template <typename... A>
inline cus_status launch_ex(cus_function *fn, const cus_launch_config *config, A... a)
{
    return launch_ex_values(fn, config, value(a)...);
}

/* The same for a library kernel (cuscope/library.h). */
template <typename... V>
inline cus_status launch_values(cus_kernel *k, cus_dim3 grid, cus_dim3 block,
                                unsigned int shared_bytes, cus_stream *stream, V... v)
{
    void *args[sizeof...(V) ? sizeof...(V) : 1] = {static_cast<void *>(&v)...};
    return cus_kernel_launch_site_(k, grid, block, shared_bytes, stream,
                                   static_cast<unsigned int>(sizeof...(V)), args,
                                   sizeof...(V) ? sizes<V...>::of : cus_launch_no_args_);
}

template <typename... A>
inline cus_status launch(cus_kernel *k, cus_dim3 grid, cus_dim3 block,
                         unsigned int shared_bytes, cus_stream *stream, A... a)
{
    return launch_values(k, grid, block, shared_bytes, stream, value(a)...);
}

template <typename... V>
inline cus_status launch_ex_values(cus_kernel *k, const cus_launch_config *config, V... v)
{
    void *args[sizeof...(V) ? sizeof...(V) : 1] = {static_cast<void *>(&v)...};
    return cus_kernel_launch_ex_site_(k, config, static_cast<unsigned int>(sizeof...(V)), args,
                                      sizeof...(V) ? sizes<V...>::of : cus_launch_no_args_);
}

template <typename... A>
inline cus_status launch_ex(cus_kernel *k, const cus_launch_config *config, A... a)
{
    return launch_ex_values(k, config, value(a)...);
}

} /* namespace cus_cxx_ */
#endif

#endif
