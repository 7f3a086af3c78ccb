/* Contexts: the per-thread context stack emulation, the cuCtx* entry points
 * and primary contexts, with the real driver's rules (DESIGN.md §3):
 *   cuCtxCreate pushes; cuCtxSetCurrent replaces the top (NULL pops it);
 *   cuCtxDestroy kills the context for every thread but pops it only from the
 *   caller's stack, and only if it is on top; other threads keep it and their
 *   current-context calls get CUDA_ERROR_CONTEXT_IS_DESTROYED (but
 *   cuCtxGetDevice and cuCtxGetFlags, which answer); primary contexts are
 *   counted, never pushed, and inactive at a count of 0.
 * A poisoned context (a kernel's sticky error) answers its error to the
 * calls that use it, and while it is current to the creations (cuCtxCreate,
 * cuDevicePrimaryCtxRetain); the getters cuCtxGetDevice (both),
 * cuCtxGetFlags and cuCtxGetApiVersion still answer, and cuCtxDestroy (or
 * the last cuDevicePrimaryCtxRelease) still works: the H200's rules
 * (test/rules/expected.txt). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "fake_context.h"

/* --- the per-thread stacks -------------------------------------------------------------
 * Each thread's stack is a heap block reached from its _Thread_local pointer
 * and, for freeing, from a list of every stack made since install. The list
 * (not a pthread key destructor) owns the memory: a key destructor runs in an
 * unspecified order with the library's own thread-exit cleanup, which may
 * still pop contexts through the fake. The install generation tags the
 * pointer: after a reinstall the old block is gone and the stack reads empty.
 * Stacks are only touched with the lock held. */
typedef struct thread_stack {
    struct CUctx_st **entries; /* [0] is the bottom */
    int depth, capacity;
} thread_stack;

static _Thread_local unsigned long tls_generation;
static _Thread_local thread_stack *tls_stack;

static thread_stack **all_stacks;
static size_t all_stacks_count, all_stacks_capacity;

static void context_reset_locked(const cus_fake_config *cfg)
{
    (void)cfg;
    for (size_t i = 0; i < all_stacks_count; i++) {
        free(all_stacks[i]->entries);
        free(all_stacks[i]);
    }
    free(all_stacks);
    all_stacks = NULL;
    all_stacks_count = all_stacks_capacity = 0;
}

/* The calling thread's stack, NULL while empty and never allocated. */
static thread_stack *stack_locked(void)
{
    if (tls_generation != fake_g.generation) {
        tls_generation = fake_g.generation;
        tls_stack = NULL; /* freed by the install that changed the generation */
    }
    return tls_stack;
}

static struct CUctx_st *top_locked(void)
{
    thread_stack *s = stack_locked();
    return s && s->depth ? s->entries[s->depth - 1] : NULL;
}

/* Makes room for one more entry, so that the push after it cannot fail. */
static bool reserve_locked(void)
{
    thread_stack *s = stack_locked();
    if (!s) {
        if (all_stacks_count == all_stacks_capacity) {
            size_t cap = all_stacks_capacity ? all_stacks_capacity * 2 : 16;
            thread_stack **list = realloc(all_stacks, cap * sizeof *list);
            if (!list)
                return false;
            all_stacks = list;
            all_stacks_capacity = cap;
        }
        if (!(s = calloc(1, sizeof *s)))
            return false;
        all_stacks[all_stacks_count++] = s;
        tls_stack = s;
    }
    if (s->depth == s->capacity) {
        int cap = s->capacity ? s->capacity * 2 : 8;
        struct CUctx_st **e = realloc(s->entries, (size_t)cap * sizeof *e);
        if (!e)
            return false;
        s->entries = e;
        s->capacity = cap;
    }
    return true;
}

static void push_locked(struct CUctx_st *c)
{
    thread_stack *s = stack_locked();
    s->entries[s->depth++] = c;
}

static struct CUctx_st *pop_locked(void)
{
    thread_stack *s = stack_locked();
    return s && s->depth ? s->entries[--s->depth] : NULL;
}

CUS_API int cus_fake_thread_stack_depth(void)
{
    fake_lock();
    thread_stack *s = stack_locked();
    int depth = s ? s->depth : 0;
    fake_unlock();
    return depth;
}

CUS_API CUcontext cus_fake_thread_stack_at(int i)
{
    fake_lock();
    thread_stack *s = stack_locked();
    CUcontext c = s && i >= 0 && i < s->depth ? s->entries[i] : NULL;
    fake_unlock();
    return c;
}

int fake_context_pop_thread_to_locked(int depth)
{
    int n = 0;
    thread_stack *s = stack_locked();
    while (s && s->depth > depth && s->depth > 0) {
        s->depth--;
        n++;
    }
    return n;
}

/* --- per-context state ----------------------------------------------------------------------- */

/* CUlimit values by number, so the fake builds with older headers. */
enum {
    LIMIT_STACK_SIZE = 0,
    LIMIT_PRINTF_FIFO_SIZE = 1,
    LIMIT_MALLOC_HEAP_SIZE = 2,
    LIMIT_DEV_RUNTIME_SYNC_DEPTH = 3,
    LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT = 4,
    LIMIT_MAX_L2_FETCH_GRANULARITY = 5,
    LIMIT_PERSISTING_L2_CACHE_SIZE = 6,
    LIMIT_SHMEM_SIZE = 7,                   /* read-only (CIG) */
    LIMIT_CIG_ENABLED = 8,                  /* read-only (CIG) */
    LIMIT_CIG_SHMEM_FALLBACK_ENABLED = 9,   /* CIG contexts only */
    LIMIT_COUNT = 10,                       /* CU_LIMIT_MAX of CUDA 13.0 */
};
_Static_assert(LIMIT_COUNT <= FAKE_LIMIT_SLOTS, "grow FAKE_LIMIT_SLOTS");

void fake_context_defaults(struct CUctx_st *c)
{
    memset(c->limits, 0, sizeof c->limits);
    c->limits[LIMIT_STACK_SIZE] = 1024;
    c->limits[LIMIT_PRINTF_FIFO_SIZE] = 1048576;
    c->limits[LIMIT_MALLOC_HEAP_SIZE] = 8388608;
    c->limits[LIMIT_DEV_RUNTIME_SYNC_DEPTH] = 2;
    c->limits[LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT] = 2048;
    c->limits[LIMIT_MAX_L2_FETCH_GRANULARITY] = 32;
    c->limits[LIMIT_PERSISTING_L2_CACHE_SIZE] = 0;
    c->cache_config = CU_FUNC_CACHE_PREFER_NONE;
    c->shared_mem_config = CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE;
    c->sticky = CUDA_SUCCESS; /* a fresh (or reset primary) context is healthy */
}

/* Whether a limit exists for this context: CUDA_SUCCESS, or the driver's
 * answer for it. Values past the enum are invalid; the device-runtime sync
 * depth is gone from compute capability 9.0 on (CDP2), and the CIG fallback
 * switch exists only on CIG contexts, which the fake does not make. */
static CUresult limit_supported_locked(const struct CUctx_st *c, int limit)
{
    if (limit < 0 || limit >= LIMIT_COUNT)
        return CUDA_ERROR_INVALID_VALUE;
    if (limit == LIMIT_CIG_SHMEM_FALLBACK_ENABLED)
        return CUDA_ERROR_UNSUPPORTED_LIMIT;
    if (limit == LIMIT_DEV_RUNTIME_SYNC_DEPTH &&
        fake_dev.devices[c->device].attributes[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR] >= 9)
        return CUDA_ERROR_UNSUPPORTED_LIMIT;
    return CUDA_SUCCESS;
}

/* --- handle checks ------------------------------------------------------------------------------- */

static bool is_context_kind(const fake_handle *h)
{
    return h->kind == CUS_FAKE_HANDLE_CONTEXT || h->kind == CUS_FAKE_HANDLE_PRIMARY_CONTEXT;
}

/* An explicit context argument. Unknown and destroyed handles are misuse:
 * an unknown one is CUDA_ERROR_INVALID_CONTEXT, a destroyed one answers
 * `if_destroyed`, what the H200 answers for the entry point
 * (test/rules/expected.txt: CUDA_ERROR_INVALID_CONTEXT for cuCtxDestroy and
 * cuCtxGetApiVersion, CUDA_ERROR_CONTEXT_IS_DESTROYED for cuCtxSynchronize_v2
 * and the peer-access calls; where the driver crashes or accepts it, the fake
 * answers CUDA_ERROR_INVALID_CONTEXT, lib/fake/deliberate.txt). A primary
 * context released to a count of 0 is misuse too, answered with
 * `if_inactive`. */
static CUresult context_arg_locked(CUcontext ctx, CUresult if_destroyed, CUresult if_inactive,
                                   struct CUctx_st **out)
{
    fake_handle *h = fake_handle_find_locked((uintptr_t)ctx);
    if (!h || !is_context_kind(h)) {
        fake_misuse_locked("unknown context handle 0x%" PRIxPTR, (uintptr_t)ctx);
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    if (h->state == FAKE_DESTROYED) {
        fake_misuse_locked("context 0x%" PRIxPTR " used after cuCtxDestroy", (uintptr_t)ctx);
        return if_destroyed;
    }
    struct CUctx_st *c = (struct CUctx_st *)h;
    if (h->state == FAKE_INACTIVE) {
        fake_misuse_locked("primary context 0x%" PRIxPTR " of device %d used after its last "
                           "cuDevicePrimaryCtxRelease",
                           (uintptr_t)ctx, (int)c->device);
        return if_inactive;
    }
    *out = c;
    return CUDA_SUCCESS;
}

/* The calling thread's current context, live or not: the getters that the
 * H200 answers even for a context destroyed by another thread
 * (cuCtxGetDevice, cuCtxGetFlags); CUDA_ERROR_INVALID_CONTEXT with none. */
static CUresult top_any_locked(struct CUctx_st **out)
{
    struct CUctx_st *c = top_locked();
    if (!c)
        return CUDA_ERROR_INVALID_CONTEXT;
    *out = c;
    return CUDA_SUCCESS;
}

/* The calling thread's current context, for the calls that act on it. */
static CUresult current_locked(struct CUctx_st **out)
{
    struct CUctx_st *c = top_locked();
    if (!c)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (c->h.state != FAKE_LIVE)
        return CUDA_ERROR_CONTEXT_IS_DESTROYED; /* destroyed elsewhere, or a released primary */
    *out = c;
    return CUDA_SUCCESS;
}

/* The current context for the calls that use it: a poisoned one answers
 * its sticky error. */
static CUresult current_healthy_locked(struct CUctx_st **out)
{
    struct CUctx_st *c = NULL;
    CUresult r = current_locked(&c);
    if (r != CUDA_SUCCESS || !c)
        return r;
    if (c->sticky != CUDA_SUCCESS)
        return c->sticky;
    *out = c;
    return CUDA_SUCCESS;
}

CUresult fake_current_context_locked(struct CUctx_st **out)
{
    return current_healthy_locked(out);
}

CUresult fake_current_context_any_locked(struct CUctx_st **out)
{
    return current_locked(out);
}

CUresult fake_context_arg_locked(CUcontext ctx, CUresult if_dead, struct CUctx_st **out)
{
    struct CUctx_st *c = NULL;
    CUresult r = context_arg_locked(ctx, if_dead, if_dead, &c);
    if (r != CUDA_SUCCESS || !c)
        return r;
    if (c->sticky != CUDA_SUCCESS)
        return c->sticky;
    *out = c;
    return CUDA_SUCCESS;
}

#define GET_CURRENT(c)                                                         \
    struct CUctx_st *c = NULL;                                                 \
    do {                                                                       \
        CUresult cur_r_ = current_healthy_locked(&c);                          \
        if (cur_r_ != CUDA_SUCCESS)                                            \
            return fake_leave(cur_r_);                                         \
    } while (0)

/* --- creation and destruction ---------------------------------------------------------------------- */

/* The creations (cuCtxCreate, cuDevicePrimaryCtxRetain) with a poisoned
 * context current answer its sticky error, as on the H200: after a fault the
 * process makes no new context until the poisoned one is off the thread's
 * stack (or destroyed). */
static CUresult current_sticky_locked(void)
{
    const struct CUctx_st *c = top_locked();
    return c && c->h.state == FAKE_LIVE ? c->sticky : CUDA_SUCCESS;
}

static CUresult create_locked(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    /* Unknown bits, or more than one scheduling policy. */
    unsigned int sched = flags & CU_CTX_SCHED_MASK;
    if ((flags & ~(unsigned int)CU_CTX_FLAGS_MASK) || (sched & (sched - 1)))
        return CUDA_ERROR_INVALID_VALUE;
    if (!fake_device_at_locked(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    CUresult r = current_sticky_locked();
    if (r != CUDA_SUCCESS)
        return r;
    if (!reserve_locked())
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct CUctx_st *c = fake_handle_new_locked(CUS_FAKE_HANDLE_CONTEXT, sizeof *c, 0);
    if (!c)
        return CUDA_ERROR_OUT_OF_MEMORY;
    c->device = dev;
    c->flags = flags;
    fake_context_defaults(c);
    push_locked(c);
    *pctx = c;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice_v1 dev)
{
    FAKE_ENTER(cuCtxCreate);
    return fake_leave(create_locked(pctx, flags, dev));
}

/* Execution affinity (SM partitions) exists only under MPS, which the fake
 * does not emulate: the driver's answer without MPS. */
static CUresult affinity_check(const CUexecAffinityParam *params, int count)
{
    if (count < 0 || (count > 0 && !params))
        return CUDA_ERROR_INVALID_VALUE;
    return count > 0 ? CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY : CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *params, int count,
                                     unsigned int flags, CUdevice_v1 dev)
{
    FAKE_ENTER(cuCtxCreate_v3);
    CUresult r = affinity_check(params, count);
    return fake_leave(r != CUDA_SUCCESS ? r : create_locked(pctx, flags, dev));
}

CUresult CUDAAPI fake_cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *params,
                                     unsigned int flags, CUdevice dev)
{
    FAKE_ENTER(cuCtxCreate_v4);
    if (params) {
        bool affinity = params->execAffinityParams || params->numExecAffinityParams;
        if (affinity && params->cigParams)
            return fake_leave(CUDA_ERROR_INVALID_VALUE);
        if (params->cigParams) /* CUDA in Graphics needs a D3D12/Vulkan client */
            return fake_leave(CUDA_ERROR_NOT_SUPPORTED);
        CUresult r = affinity_check(params->execAffinityParams, params->numExecAffinityParams);
        if (r != CUDA_SUCCESS)
            return fake_leave(r);
    }
    return fake_leave(create_locked(pctx, flags, dev));
}

CUresult CUDAAPI fake_cuCtxDestroy(CUcontext ctx)
{
    FAKE_ENTER(cuCtxDestroy);
    if (!ctx)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    fake_handle *h = fake_handle_find_locked((uintptr_t)ctx);
    if (!h || !is_context_kind(h)) {
        fake_misuse_locked("unknown context handle 0x%" PRIxPTR, (uintptr_t)ctx);
        return fake_leave(CUDA_ERROR_INVALID_CONTEXT);
    }
    if (h->kind == CUS_FAKE_HANDLE_PRIMARY_CONTEXT) {
        fake_misuse_locked("cuCtxDestroy of primary context 0x%" PRIxPTR
                           " (primary contexts are released with cuDevicePrimaryCtxRelease)",
                           (uintptr_t)ctx);
        return fake_leave(CUDA_ERROR_INVALID_CONTEXT);
    }
    if (h->state == FAKE_DESTROYED) {
        fake_misuse_locked("double destroy of context 0x%" PRIxPTR, (uintptr_t)ctx);
        return fake_leave(CUDA_ERROR_INVALID_CONTEXT);
    }
    /* A green context's: it goes with cuGreenCtxDestroy. What the driver
     * answers is not known here (not probed on the H200): the fake refuses,
     * as for a primary context. */
    if (((struct CUctx_st *)h)->green) {
        fake_misuse_locked("cuCtxDestroy of green context 0x%" PRIxPTR
                           " (green contexts are destroyed with cuGreenCtxDestroy)",
                           (uintptr_t)ctx);
        return fake_leave(CUDA_ERROR_INVALID_CONTEXT);
    }
    fake_handle_set_state_locked(h, FAKE_DESTROYED);
    /* Only the caller's copy, and only on top; other threads keep theirs. */
    if (top_locked() == ctx)
        pop_locked();
    /* Its queued work runs, then its streams, events and memory go. */
    fake_context_work->teardown_locked((struct CUctx_st *)h);
    return fake_leave(CUDA_SUCCESS);
}

/* --- the stack ------------------------------------------------------------------------------------ */

CUresult CUDAAPI fake_cuCtxPushCurrent(CUcontext ctx)
{
    FAKE_ENTER(cuCtxPushCurrent);
    if (!ctx)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    struct CUctx_st *c = NULL;
    /* A destroyed context: the H200 pushes it (and the process dies in its
     * teardown); the fake reports the misuse and refuses (deliberate.txt). */
    CUresult r = context_arg_locked(ctx, CUDA_ERROR_INVALID_CONTEXT,
                                    CUDA_ERROR_CONTEXT_IS_DESTROYED, &c);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (!reserve_locked())
        return fake_leave(CUDA_ERROR_OUT_OF_MEMORY);
    push_locked(c);
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuCtxPopCurrent(CUcontext *pctx)
{
    FAKE_ENTER(cuCtxPopCurrent);
    /* A dead entry pops like any other: that is how a thread gets rid of it. */
    struct CUctx_st *c = pop_locked();
    if (!c)
        return fake_leave(CUDA_ERROR_INVALID_CONTEXT);
    if (pctx)
        *pctx = c;
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuCtxSetCurrent(CUcontext ctx)
{
    FAKE_ENTER(cuCtxSetCurrent);
    if (!ctx) {
        pop_locked(); /* NULL pops the top only; nothing on an empty stack */
        return fake_leave(CUDA_SUCCESS);
    }
    struct CUctx_st *c = NULL; /* a destroyed one: as cuCtxPushCurrent */
    CUresult r = context_arg_locked(ctx, CUDA_ERROR_INVALID_CONTEXT,
                                    CUDA_ERROR_CONTEXT_IS_DESTROYED, &c);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    thread_stack *s = stack_locked();
    if (s && s->depth) {
        s->entries[s->depth - 1] = c; /* replaces the top, dead or not */
    } else {
        if (!reserve_locked())
            return fake_leave(CUDA_ERROR_OUT_OF_MEMORY);
        push_locked(c);
    }
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuCtxGetCurrent(CUcontext *pctx)
{
    FAKE_ENTER(cuCtxGetCurrent);
    if (!pctx)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    *pctx = top_locked(); /* NULL on an empty stack; a dead top is still returned */
    return fake_leave(CUDA_SUCCESS);
}

/* --- calls on the current context -------------------------------------------------------------------- */

/* cuCtxGetDevice and cuCtxGetFlags answer for the current context whatever
 * its state, as the H200 does: poisoned, or destroyed by another thread while
 * current here. */
CUresult CUDAAPI fake_cuCtxGetDevice(CUdevice_v1 *device)
{
    FAKE_ENTER(cuCtxGetDevice);
    if (!device)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    struct CUctx_st *c = NULL;
    CUresult r = top_any_locked(&c);
    if (r == CUDA_SUCCESS)
        *device = c->device;
    return fake_leave(r);
}

CUresult CUDAAPI fake_cuCtxGetFlags(unsigned int *flags)
{
    FAKE_ENTER(cuCtxGetFlags);
    if (!flags)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    struct CUctx_st *c = NULL;
    CUresult r = top_any_locked(&c);
    if (r == CUDA_SUCCESS)
        *flags = c->flags;
    return fake_leave(r);
}

CUresult CUDAAPI fake_cuCtxSynchronize(void)
{
    FAKE_ENTER(cuCtxSynchronize);
    /* Poisoned or not: it runs what is queued, and reports a kernel's fault
     * (from before, or from the work it ran) after. */
    struct CUctx_st *c = NULL;
    CUresult r = current_locked(&c);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (fake_context_sync_refused_locked((CUcontext)c))
        return fake_leave(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    fake_context_work->synchronize_locked(c);
    return fake_leave(c->sticky);
}

#ifdef FAKE_HAVE_13000_ENTRIES
/* The CUDA 13.0 variants name their context; NULL means the current one.
 * Poisoned or not: the callers check. A destroyed one answers if_destroyed. */
static CUresult context_or_current_locked(CUcontext ctx, CUresult if_destroyed,
                                          struct CUctx_st **out)
{
    if (!ctx)
        return current_locked(out);
    return context_arg_locked(ctx, if_destroyed, CUDA_ERROR_INVALID_CONTEXT, out);
}

/* Poisoned or not, as the H200 answers. A destroyed context crashes the
 * H200; the fake reports the misuse and answers CUDA_ERROR_INVALID_CONTEXT
 * (deliberate.txt). */
CUresult CUDAAPI fake_cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
    FAKE_ENTER(cuCtxGetDevice_v2);
    if (!device)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    struct CUctx_st *c = NULL;
    CUresult r = context_or_current_locked(ctx, CUDA_ERROR_INVALID_CONTEXT, &c);
    if (r == CUDA_SUCCESS)
        *device = c->device;
    return fake_leave(r);
}

CUresult CUDAAPI fake_cuCtxSynchronize_v2(CUcontext ctx)
{
    FAKE_ENTER(cuCtxSynchronize_v2);
    struct CUctx_st *c = NULL;
    CUresult r = context_or_current_locked(ctx, CUDA_ERROR_CONTEXT_IS_DESTROYED, &c);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (fake_context_sync_refused_locked((CUcontext)c))
        return fake_leave(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    fake_context_work->synchronize_locked(c);
    return fake_leave(c->sticky);
}
#endif

CUresult CUDAAPI fake_cuCtxGetApiVersion(CUcontext ctx, unsigned int *version)
{
    FAKE_ENTER(cuCtxGetApiVersion);
    if (!version)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    /* Poisoned or not, as the H200 answers. */
    struct CUctx_st *c = NULL;
    CUresult r = ctx ? context_arg_locked(ctx, CUDA_ERROR_INVALID_CONTEXT,
                                          CUDA_ERROR_INVALID_CONTEXT, &c)
                     : current_locked(&c);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    /* The context ABI version, not the driver's: driver 580 (CUDA 13.0)
     * reports 3020 for every context, primary or created by any cuCtxCreate. */
    *version = 3020;
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuCtxGetLimit(size_t *value, CUlimit limit)
{
    FAKE_ENTER(cuCtxGetLimit);
    if (!value)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    GET_CURRENT(c);
    CUresult r = limit_supported_locked(c, (int)limit);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if ((int)limit == LIMIT_SHMEM_SIZE) /* a plain context has all of it */
        *value = (size_t)fake_dev.devices[c->device]
                     .attributes[CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN];
    else
        *value = c->limits[limit];
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuCtxSetLimit(CUlimit limit, size_t value)
{
    FAKE_ENTER(cuCtxSetLimit);
    GET_CURRENT(c);
    CUresult r = limit_supported_locked(c, (int)limit);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if ((int)limit == LIMIT_SHMEM_SIZE || (int)limit == LIMIT_CIG_ENABLED)
        return fake_leave(CUDA_ERROR_NOT_PERMITTED); /* query-only, as the driver answers */
    /* Kept as given: the real driver rounds some (the stack to 16 bytes, the
     * heap and FIFO up to its minimums), which no caller should rely on. */
    c->limits[limit] = value;
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuCtxGetCacheConfig(CUfunc_cache *config)
{
    FAKE_ENTER(cuCtxGetCacheConfig);
    if (!config)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    GET_CURRENT(c);
    *config = c->cache_config;
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuCtxSetCacheConfig(CUfunc_cache config)
{
    FAKE_ENTER(cuCtxSetCacheConfig);
    GET_CURRENT(c);
    if ((int)config < CU_FUNC_CACHE_PREFER_NONE || (int)config > CU_FUNC_CACHE_PREFER_EQUAL)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    c->cache_config = config;
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuCtxGetSharedMemConfig(CUsharedconfig *config)
{
    FAKE_ENTER(cuCtxGetSharedMemConfig);
    if (!config)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    GET_CURRENT(c);
    *config = c->shared_mem_config;
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuCtxSetSharedMemConfig(CUsharedconfig config)
{
    FAKE_ENTER(cuCtxSetSharedMemConfig);
    GET_CURRENT(c);
    if ((int)config < CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE ||
        (int)config > CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    /* Stored, so a getter returns what was set (a Hopper ignores it and keeps
     * reporting four-byte banks). */
    c->shared_mem_config = config;
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuCtxGetStreamPriorityRange(int *least, int *greatest)
{
    FAKE_ENTER(cuCtxGetStreamPriorityRange);
    GET_CURRENT(c);
    (void)c;
    if (least)
        *least = 0;
    if (greatest)
        *greatest = -5;
    return fake_leave(CUDA_SUCCESS);
}

/* --- primary contexts ------------------------------------------------------------------------------ */

CUresult fake_primary_retain_locked(CUdevice dev, struct CUctx_st **out)
{
    fake_device *d = fake_device_at_locked(dev);
    if (!d)
        return CUDA_ERROR_INVALID_DEVICE;
    if (!d->primary) {
        struct CUctx_st *c = fake_handle_new_locked(CUS_FAKE_HANDLE_PRIMARY_CONTEXT, sizeof *c, 0);
        if (!c)
            return CUDA_ERROR_OUT_OF_MEMORY;
        c->device = dev;
        fake_handle_set_state_locked(&c->h, FAKE_INACTIVE);
        d->primary = c;
    }
    if (d->primary_retains == 0) {
        /* (Re)activation: a fresh context behind the same handle. The driver
         * reports CU_CTX_MAP_HOST for primary contexts. */
        fake_context_defaults(d->primary);
        d->primary->flags = CU_CTX_MAP_HOST;
        fake_handle_set_state_locked(&d->primary->h, FAKE_LIVE);
    }
    d->primary_retains++;
    *out = d->primary;
    return CUDA_SUCCESS;
}

void fake_primary_release_locked(CUdevice dev)
{
    fake_device *d = fake_device_at_locked(dev);
    if (d && d->primary_retains > 0 && --d->primary_retains == 0) {
        fake_handle_set_state_locked(&d->primary->h, FAKE_INACTIVE);
        fake_context_work->teardown_locked(d->primary); /* as cuCtxDestroy */
    }
}

CUresult CUDAAPI fake_cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice_v1 dev)
{
    FAKE_ENTER(cuDevicePrimaryCtxRetain);
    if (!pctx)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    if (!fake_device_at_locked(dev))
        return fake_leave(CUDA_ERROR_INVALID_DEVICE);
    CUresult r = current_sticky_locked(); /* as cuCtxCreate */
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    struct CUctx_st *c = NULL;
    r = fake_primary_retain_locked(dev, &c);
    if (r == CUDA_SUCCESS)
        *pctx = c;
    return fake_leave(r);
}

CUresult CUDAAPI fake_cuDevicePrimaryCtxRelease(CUdevice_v1 dev)
{
    FAKE_ENTER(cuDevicePrimaryCtxRelease);
    fake_device *d = fake_device_at_locked(dev);
    if (!d)
        return fake_leave(CUDA_ERROR_INVALID_DEVICE);
    if (d->primary_retains == 0) {
        fake_misuse_locked("cuDevicePrimaryCtxRelease of device %d, whose primary context is "
                           "not retained",
                           (int)dev);
        return fake_leave(CUDA_ERROR_INVALID_CONTEXT);
    }
    fake_primary_release_locked(dev);
    return fake_leave(CUDA_SUCCESS);
}

struct CUctx_st *fake_context_new_green_locked(CUdevice dev)
{
    struct CUctx_st *c = fake_handle_new_locked(CUS_FAKE_HANDLE_CONTEXT, sizeof *c, 0);
    if (c) {
        /* Counted as its green context (CUS_FAKE_HANDLE_GREEN_CONTEXT). */
        fake_handle_uncount_locked(&c->h);
        c->device = dev;
        c->flags = CU_CTX_MAP_HOST; /* it is the primary context's, with fewer SMs */
        fake_context_defaults(c);
    }
    return c;
}

void fake_context_kill_green_locked(struct CUctx_st *c)
{
    c->h.state = FAKE_DESTROYED; /* uncounted */
    fake_context_work->teardown_locked(c);
}

CUS_API int cus_fake_primary_retain_count(int ordinal)
{
    fake_lock();
    fake_ensure_configured_locked();
    fake_device *d = fake_device_at_locked(ordinal);
    int n = d ? d->primary_retains : -1;
    fake_unlock();
    return n;
}

/* --- the area -------------------------------------------------------------------------------- */

const fake_context_work_hooks *fake_context_work;

static const fake_area context_area = {
    .name = "context",
    .reset_order = 50,
    .reset_locked = context_reset_locked,
};
FAKE_AREA(context_area)
