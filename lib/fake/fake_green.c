/* Green contexts: SM resources, their split, descriptors, green contexts and
 * their streams, with the driver's rules as documented (cuda.h, CUDA 13.0):
 *   - a device's SM resource has the device's multiprocessor count;
 *   - cuDevSmResourceSplitByCount makes groups of one size, minCount rounded
 *     up to the architecture's minimum and granularity (compute capability
 *     6.x and 7.x: at least 2, a multiple of 2; 8.x: at least 4, a multiple
 *     of 2; 9.0 and later: at least 8, a multiple of 8), as many as fit and
 *     as asked; what is left goes to the remaining group; a split's outputs
 *     cannot be split again (only a green context's resource can);
 *   - a descriptor of several resources takes the outputs of one split;
 *   - cuGreenCtxCreate retains the device's primary context (released by
 *     cuGreenCtxDestroy), does not push, and requires
 *     CU_GREEN_CTX_DEFAULT_STREAM; its context (cuCtxFromGreenCtx) is a
 *     context like any other in the stack emulation, and owns what is made
 *     in it;
 *   - cuGreenCtxStreamCreate requires CU_STREAM_NON_BLOCKING and ignores the
 *     current context;
 *   - cuGreenCtxRecordEvent captures the work of all the green context's
 *     streams at the call, with an event of the same primary context
 *     (else CUDA_ERROR_INVALID_HANDLE); cuGreenCtxWaitEvent makes all later
 *     work of the green context wait for an event of any context; both
 *     refuse a green context with a capturing stream
 *     (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, the capture invalidated), the
 *     wait an event of an open capture too; neither uses the current
 *     context (fake_stream.c keeps the context's record and gate streams).
 * Not probed on a GPU, so the fake's guesses (each marked "guess" below):
 * the error codes of the cases the documentation does not name, the device
 * resource's co-scheduling alignment (2, a TPC), and what
 * CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING lowers the rules to (at
 * least 2, a multiple of 2). gpu-green prints the H200's answers. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "fake_event.h"

static unsigned int device_sm_count(CUdevice dev)
{
    int n = fake_dev.devices[dev].attributes[CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT];
    return n > 0 ? (unsigned int)n : 0;
}

#ifdef FAKE_HAVE_GREEN_ENTRIES

/* What the fake keeps in a CUdevResource's internal bytes, which the driver
 * says are not to be modified. */
#define RES_MAGIC 0x47524e31u /* "GRN1" */
typedef struct res_tag {
    uint32_t magic;
    int32_t device;
    uint32_t split_id; /* the split that made it; 0: not a split's output */
} res_tag;
_Static_assert(sizeof(res_tag) <= sizeof(((CUdevResource *)0)->_internal_padding),
               "the tag fits the internal bytes");

static bool res_tag_of(const CUdevResource *r, res_tag *t)
{
    memcpy(t, r->_internal_padding, sizeof *t);
    return t->magic == RES_MAGIC;
}

struct CUdevResourceDesc_st {
    uint32_t magic;
    CUdevice device;
    unsigned int sm_count;
};

struct CUgreenCtx_st {
    fake_handle h; /* kind GREEN_CONTEXT */
    CUdevice device;
    unsigned int sm_count;
    struct CUctx_st *ctx; /* its context, made and destroyed with it */
};

/* Descriptors have no destroy call: the fake keeps them until the next
 * install. */
static struct CUdevResourceDesc_st **descs;
static size_t desc_count, desc_capacity;
static uint32_t split_counter;

static void green_reset_locked(const cus_fake_config *cfg)
{
    (void)cfg;
    for (size_t i = 0; i < desc_count; i++)
        free(descs[i]);
    free(descs);
    descs = NULL;
    desc_count = desc_capacity = 0;
    split_counter = 0;
}

/* The minimum size and granularity of a group on dev (cuda.h's table). */
static void sm_rules(CUdevice dev, unsigned int flags, unsigned int *min, unsigned int *step)
{
    int major = fake_dev.devices[dev].attributes[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR];
    if (flags & CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING)
        *min = 2, *step = 2; /* guess */
    else if (major >= 9)
        *min = 8, *step = 8;
    else if (major == 8)
        *min = 4, *step = 2;
    else
        *min = 2, *step = 2;
}

static void sm_resource(CUdevResource *out, CUdevice dev, unsigned int count, unsigned int align,
                        uint32_t split_id)
{
    unsigned int min, step;
    sm_rules(dev, 0, &min, &step);
    memset(out, 0, sizeof *out);
    out->type = CU_DEV_RESOURCE_TYPE_SM;
    out->sm.smCount = count;
    out->sm.minSmPartitionSize = min;
    out->sm.smCoscheduledAlignment = align;
    res_tag t = {RES_MAGIC, (int32_t)dev, split_id};
    memcpy(out->_internal_padding, &t, sizeof t);
}

CUresult CUDAAPI fake_cuDeviceGetDevResource(CUdevice device, CUdevResource *resource,
                                             CUdevResourceType type)
{
    FAKE_ENTER(cuDeviceGetDevResource);
    if (!resource)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    if (!fake_device_at_locked(device))
        return fake_leave(CUDA_ERROR_INVALID_DEVICE);
    if (type != CU_DEV_RESOURCE_TYPE_SM)
        return fake_leave(CUDA_ERROR_INVALID_RESOURCE_TYPE);
    sm_resource(resource, device, device_sm_count(device), 2 /* guess */, 0);
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuCtxGetDevResource(CUcontext hCtx, CUdevResource *resource,
                                          CUdevResourceType type)
{
    FAKE_ENTER(cuCtxGetDevResource);
    if (!resource)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    struct CUctx_st *c = NULL;
    CUresult r = fake_context_arg_locked(hCtx, CUDA_ERROR_CONTEXT_IS_DESTROYED, &c);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (type != CU_DEV_RESOURCE_TYPE_SM)
        return fake_leave(CUDA_ERROR_INVALID_RESOURCE_TYPE);
    if (c->green) {
        unsigned int min, step;
        sm_rules(c->device, 0, &min, &step);
        sm_resource(resource, c->device, c->green->sm_count, step, 0);
    } else {
        sm_resource(resource, c->device, device_sm_count(c->device), 2 /* guess */, 0);
    }
    return fake_leave(CUDA_SUCCESS);
}

static CUresult split_locked(CUdevResource *result, unsigned int *nbGroups,
                             const CUdevResource *input, CUdevResource *remaining,
                             unsigned int flags, unsigned int minCount)
{
    if (!nbGroups || !input)
        return CUDA_ERROR_INVALID_VALUE;
    if (input->type != CU_DEV_RESOURCE_TYPE_SM)
        return CUDA_ERROR_INVALID_RESOURCE_TYPE;
    res_tag t;
    if (!res_tag_of(input, &t) || !fake_device_at_locked(t.device)) {
        fake_misuse_locked("cuDevSmResourceSplitByCount of a resource no get call made");
        return CUDA_ERROR_INVALID_VALUE; /* guess */
    }
    if (t.split_id) /* documented as a limitation, not misuse */
        return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION; /* guess */
    const unsigned int known = CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING |
                               CU_DEV_SM_RESOURCE_SPLIT_MAX_POTENTIAL_CLUSTER_SIZE;
    int major =
        fake_dev.devices[t.device].attributes[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR];
    if ((flags & ~known) ||
        ((flags & CU_DEV_SM_RESOURCE_SPLIT_MAX_POTENTIAL_CLUSTER_SIZE) && major < 9))
        return CUDA_ERROR_INVALID_VALUE; /* guess, for the second */
    if (result && *nbGroups == 0)
        return CUDA_ERROR_INVALID_VALUE; /* guess */
    unsigned int total = input->sm.smCount;
    if (minCount > total)
        return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION; /* guess */
    unsigned int min, step;
    sm_rules(t.device, flags, &min, &step);
    unsigned int size = minCount < min ? min : minCount;
    size = (size + step - 1) / step * step;
    unsigned int fit = size <= total ? total / size : 0;
    if (fit == 0)
        return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION; /* guess */
    if (!result) {
        *nbGroups = fit;
        return CUDA_SUCCESS;
    }
    unsigned int n = *nbGroups < fit ? *nbGroups : fit;
    uint32_t id = ++split_counter;
    for (unsigned int i = 0; i < n; i++)
        sm_resource(&result[i], t.device, size, step, id);
    if (remaining)
        sm_resource(remaining, t.device, total - n * size, 2 /* guess */, id);
    *nbGroups = n;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuDevSmResourceSplitByCount(CUdevResource *result, unsigned int *nbGroups,
                                                  const CUdevResource *input,
                                                  CUdevResource *remaining, unsigned int useFlags,
                                                  unsigned int minCount)
{
    FAKE_ENTER(cuDevSmResourceSplitByCount);
    return fake_leave(split_locked(result, nbGroups, input, remaining, useFlags, minCount));
}

static CUresult desc_locked(CUdevResourceDesc *phDesc, CUdevResource *resources,
                            unsigned int nbResources)
{
    if (!phDesc || !resources || nbResources == 0)
        return CUDA_ERROR_INVALID_VALUE;
    res_tag first = {0};
    unsigned int sms = 0;
    for (unsigned int i = 0; i < nbResources; i++) {
        if (resources[i].type != CU_DEV_RESOURCE_TYPE_SM)
            return CUDA_ERROR_INVALID_RESOURCE_TYPE;
        res_tag t;
        if (!res_tag_of(&resources[i], &t) || !fake_device_at_locked(t.device))
            return CUDA_ERROR_INVALID_VALUE; /* guess */
        if (i == 0)
            first = t;
        else if (t.device != first.device || !t.split_id || t.split_id != first.split_id)
            return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION; /* documented */
        sms += resources[i].sm.smCount;
    }
    if (desc_count == desc_capacity) {
        size_t cap = desc_capacity ? desc_capacity * 2 : 16;
        struct CUdevResourceDesc_st **d = realloc(descs, cap * sizeof *d);
        if (!d)
            return CUDA_ERROR_OUT_OF_MEMORY;
        descs = d;
        desc_capacity = cap;
    }
    struct CUdevResourceDesc_st *d = calloc(1, sizeof *d);
    if (!d)
        return CUDA_ERROR_OUT_OF_MEMORY;
    d->magic = RES_MAGIC;
    d->device = first.device;
    d->sm_count = sms;
    descs[desc_count++] = d;
    *phDesc = d;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuDevResourceGenerateDesc(CUdevResourceDesc *phDesc,
                                                CUdevResource *resources,
                                                unsigned int nbResources)
{
    FAKE_ENTER(cuDevResourceGenerateDesc);
    return fake_leave(desc_locked(phDesc, resources, nbResources));
}

static const struct CUdevResourceDesc_st *desc_find_locked(CUdevResourceDesc d)
{
    for (size_t i = 0; i < desc_count; i++)
        if (descs[i] == d)
            return d;
    return NULL;
}

CUresult CUDAAPI fake_cuGreenCtxCreate(CUgreenCtx *phCtx, CUdevResourceDesc desc, CUdevice dev,
                                       unsigned int flags)
{
    FAKE_ENTER(cuGreenCtxCreate);
    if (!phCtx || flags != CU_GREEN_CTX_DEFAULT_STREAM) /* required by 12.4 to 13.0 */
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    if (!fake_device_at_locked(dev))
        return fake_leave(CUDA_ERROR_INVALID_DEVICE);
    const struct CUdevResourceDesc_st *d = desc_find_locked(desc);
    if (!d) {
        fake_misuse_locked("cuGreenCtxCreate with an unknown descriptor");
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    }
    if (d->device != dev)
        return fake_leave(CUDA_ERROR_INVALID_VALUE); /* guess */
    /* A poisoned current context answers its error (the H200's cell; the
     * driver's poison is the device's, the fake's the context's). */
    struct CUctx_st *cur = NULL;
    if (fake_current_context_any_locked(&cur) == CUDA_SUCCESS && cur->sticky != CUDA_SUCCESS)
        return fake_leave(cur->sticky);
    struct CUgreenCtx_st *g =
        fake_handle_new_locked(CUS_FAKE_HANDLE_GREEN_CONTEXT, sizeof *g, 0);
    if (!g)
        return fake_leave(CUDA_ERROR_OUT_OF_MEMORY);
    struct CUctx_st *c = fake_context_new_green_locked(dev);
    struct CUctx_st *primary = NULL;
    if (!c || fake_primary_retain_locked(dev, &primary) != CUDA_SUCCESS) {
        /* Tombstones, never live to the caller. */
        if (c)
            c->h.state = FAKE_DESTROYED; /* uncounted */
        fake_handle_set_state_locked(&g->h, FAKE_DESTROYED);
        return fake_leave(CUDA_ERROR_OUT_OF_MEMORY);
    }
    g->device = dev;
    g->sm_count = d->sm_count;
    g->ctx = c;
    c->green = g;
    *phCtx = g;
    return fake_leave(CUDA_SUCCESS);
}

/* A green context argument: unknown is CUDA_ERROR_INVALID_CONTEXT; a
 * destroyed one answers if_destroyed. Both are misuse. */
static CUresult green_arg_locked(CUgreenCtx hCtx, CUresult if_destroyed,
                                 struct CUgreenCtx_st **out)
{
    fake_handle *h = fake_handle_find_locked((uintptr_t)hCtx);
    if (!h || h->kind != CUS_FAKE_HANDLE_GREEN_CONTEXT) {
        fake_misuse_locked("unknown green context handle 0x%" PRIxPTR, (uintptr_t)hCtx);
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    if (h->state == FAKE_DESTROYED) {
        fake_misuse_locked("green context 0x%" PRIxPTR " used after cuGreenCtxDestroy",
                           (uintptr_t)hCtx);
        return if_destroyed;
    }
    *out = (struct CUgreenCtx_st *)h;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuGreenCtxDestroy(CUgreenCtx hCtx)
{
    FAKE_ENTER(cuGreenCtxDestroy);
    struct CUgreenCtx_st *g = NULL;
    CUresult r = green_arg_locked(hCtx, CUDA_ERROR_CONTEXT_IS_DESTROYED, &g);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    fake_handle_set_state_locked(&g->h, FAKE_DESTROYED);
    fake_context_kill_green_locked(g->ctx);
    fake_primary_release_locked(g->device);
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuCtxFromGreenCtx(CUcontext *pContext, CUgreenCtx hCtx)
{
    FAKE_ENTER(cuCtxFromGreenCtx);
    if (!pContext)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    struct CUgreenCtx_st *g = NULL;
    CUresult r = green_arg_locked(hCtx, CUDA_ERROR_INVALID_CONTEXT, &g);
    if (r == CUDA_SUCCESS)
        *pContext = g->ctx;
    return fake_leave(r);
}

CUresult CUDAAPI fake_cuGreenCtxStreamCreate(CUstream *phStream, CUgreenCtx greenCtx,
                                             unsigned int flags, int priority)
{
    FAKE_ENTER(cuGreenCtxStreamCreate);
    if (!phStream || flags != CU_STREAM_NON_BLOCKING) /* "must be specified" */
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    struct CUgreenCtx_st *g = NULL;
    CUresult r = green_arg_locked(greenCtx, CUDA_ERROR_INVALID_CONTEXT, &g);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (g->ctx->sticky != CUDA_SUCCESS)
        return fake_leave(g->ctx->sticky);
    return fake_leave(fake_stream_create_in_locked(g->ctx, phStream, flags, priority));
}

/* An event of "the same primary context" as g (cuda.h: otherwise
 * CUDA_ERROR_INVALID_HANDLE): of the device's primary context or of one of
 * its green contexts, which all retain it. Which of these the driver takes
 * is a guess: the documentation names the rule only. */
static bool same_primary(const struct CUgreenCtx_st *g, const struct CUevent_st *e)
{
    const struct CUctx_st *c = e->ctx;
    return c->device == g->device &&
           (c->green || c->h.kind == CUS_FAKE_HANDLE_PRIMARY_CONTEXT);
}

/* Both calls: the green context (a destroyed one answers
 * CUDA_ERROR_INVALID_CONTEXT, a guess, as for cuGreenCtxStreamCreate), then
 * the event, then the context's poison, then its captures: a stream of it
 * in capture mode refuses the call and has its capture invalidated
 * (documented). */
static CUresult green_event_args_locked(CUgreenCtx hCtx, CUevent hEvent,
                                        struct CUgreenCtx_st **g, struct CUevent_st **e)
{
    CUresult r = green_arg_locked(hCtx, CUDA_ERROR_INVALID_CONTEXT, g);
    if (r == CUDA_SUCCESS)
        r = fake_event_arg_locked(hEvent, e);
    if (r == CUDA_SUCCESS && (*g)->ctx->sticky != CUDA_SUCCESS)
        r = (*g)->ctx->sticky;
    if (r == CUDA_SUCCESS)
        r = fake_context_capture_check_locked((*g)->ctx);
    return r;
}

/* The event takes the position of a record on the green context's record
 * stream that follows the work every stream of it had queued: it completes
 * once all of that has, and later work is not part of it. */
CUresult CUDAAPI fake_cuGreenCtxRecordEvent(CUgreenCtx hCtx, CUevent hEvent)
{
    FAKE_ENTER(cuGreenCtxRecordEvent);
    struct CUgreenCtx_st *g = NULL;
    struct CUevent_st *e = NULL;
    CUresult r = green_event_args_locked(hCtx, hEvent, &g, &e);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (!same_primary(g, e))
        return fake_leave(CUDA_ERROR_INVALID_HANDLE);
    struct CUstream_st *rs = NULL;
    fake_dep *deps = NULL;
    size_t n = 0;
    r = fake_context_record_locked(g->ctx, &rs, &deps, &n);
    if (r == CUDA_SUCCESS)
        r = fake_event_record_after_locked(e, rs, deps, n);
    free(deps);
    return fake_leave(r);
}

/* Every stream of the green context, and each one made in it later, waits
 * for the event's latest record; the event may be of any context or
 * device. */
CUresult CUDAAPI fake_cuGreenCtxWaitEvent(CUgreenCtx hCtx, CUevent hEvent)
{
    FAKE_ENTER(cuGreenCtxWaitEvent);
    struct CUgreenCtx_st *g = NULL;
    struct CUevent_st *e = NULL;
    CUresult r = green_event_args_locked(hCtx, hEvent, &g, &e);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (e->capture_id) {
        /* An event of an open capture: refused, and the capture invalidated
         * (documented), which is what the capture code does to a wait of the
         * context's legacy stream, which can take part in no capture. An
         * event of a capture that ended answers as for cuStreamWaitEvent. */
        struct CUstream_st *legacy = fake_default_stream_locked(g->ctx);
        if (!legacy)
            return fake_leave(CUDA_ERROR_OUT_OF_MEMORY);
        bool handled = false;
        r = fake_capture_ops->wait_locked(legacy, e, 0, &handled);
        return fake_leave(handled ? r : CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    }
    if (!e->recorded || e->stream->executed >= e->pos)
        return fake_leave(CUDA_SUCCESS);
    return fake_leave(fake_context_wait_locked(g->ctx, (fake_dep){e->stream, e->pos}));
}

#endif /* FAKE_HAVE_GREEN_ENTRIES */

CUS_API unsigned int cus_fake_context_sm_count(CUcontext ctx)
{
    unsigned int n = 0;
    fake_lock();
    fake_ensure_configured_locked();
    fake_handle *h = fake_handle_find_locked((uintptr_t)ctx);
    if (h && (h->kind == CUS_FAKE_HANDLE_CONTEXT || h->kind == CUS_FAKE_HANDLE_PRIMARY_CONTEXT)) {
        const struct CUctx_st *c = (const struct CUctx_st *)h;
#ifdef FAKE_HAVE_GREEN_ENTRIES
        if (c->green)
            n = c->green->sm_count;
        else
#endif
            n = device_sm_count(c->device);
    }
    fake_unlock();
    return n;
}

#ifdef FAKE_HAVE_GREEN_ENTRIES
static const fake_area green_area = {
    .name = "green",
    .reset_order = 55,
    .reset_locked = green_reset_locked,
};
FAKE_AREA(green_area)
#endif
