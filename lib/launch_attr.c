/* The launch attributes of a cus_launch_config (cuscope/launch.h), for
 * cuLaunchKernelEx: each checked against its rule before the driver is
 * called, with a message that names the field and the rule, and what an
 * attribute uses (the window's buffer, the programmatic event) kept alive by
 * a capture, as a launch keeps its buffer arguments. */
#include <stdint.h>

#include "launch_internal.h"

/* The launch's context and its kernel's name, for the checks and messages. */
typedef struct launch_of_ {
    cus_context *ctx;
    CUcontext ctx_handle;
    const char *name;
} launch_of_;

#define BAD(function, ...) cus_fail_(CUS_ERROR_INVALID_ARGUMENT, (function), NULL, __VA_ARGS__)

static cus_status check_event(const launch_of_ *fn, const cus_launch_config *c,
                              const char *function)
{
    const cus_event *ev = c->programmatic_event;
    if (!ev) {
        if (c->programmatic_event_at_block_start)
            return BAD(function, "%s: programmatic_event_at_block_start needs a "
                                 "programmatic_event",
                       fn->name);
        return CUS_SUCCESS;
    }
    if (ev->ctx->handle != fn->ctx_handle)
        return cus_fail_(CUS_ERROR_CONTEXT_MISMATCH, function, NULL,
                         "%s: programmatic_event belongs to context %p, the function to %p",
                         fn->name, (void *)ev->ctx->handle, (void *)fn->ctx_handle);
    if (!(ev->flags & CU_EVENT_DISABLE_TIMING))
        return BAD(function, "%s: programmatic_event was made without CU_EVENT_DISABLE_TIMING, "
                             "which the driver requires of it",
                   fn->name);
    if (ev->flags & CU_EVENT_INTERPROCESS)
        return BAD(function, "%s: programmatic_event is an interprocess event, which the "
                             "driver refuses",
                   fn->name);
    return CUS_SUCCESS;
}

static cus_status check_cluster(const launch_of_ *fn, const cus_launch_config *c,
                                const char *function)
{
    if ((unsigned)c->cluster_policy > CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING)
        return BAD(function, "%s: cluster_policy %d is not a CUclusterSchedulingPolicy "
                             "(0, 1 or 2)",
                   fn->name, (int)c->cluster_policy);
    const cus_dim3 p = c->preferred_cluster;
    if (!p.x && !p.y && !p.z)
        return CUS_SUCCESS;
#if CUDA_VERSION < 12080
    return cus_fail_(CUS_ERROR_NOT_SUPPORTED, function, NULL,
                     "%s: preferred_cluster needs cuscope built with CUDA 12.8 headers or later",
                     fn->name);
#else
    const cus_dim3 k = c->cluster;
    if (!k.x && !k.y && !k.z) {
        /* The regular cluster may be the kernel's compile-time one
         * (__cluster_dims__), which only the driver reads: check what does
         * not depend on it, and leave the multiples to the driver. */
        if (!p.x || !p.y || !p.z || c->grid.x % p.x || c->grid.y % p.y)
            return BAD(function, "%s: preferred_cluster (%u, %u, %u) must be non-zero and "
                                 "divide the grid (%u, %u)",
                       fn->name, p.x, p.y, p.z, c->grid.x, c->grid.y);
        return CUS_SUCCESS;
    }
    const unsigned int kx = k.x ? k.x : 1, ky = k.y ? k.y : 1, kz = k.z ? k.z : 1;
    if (!p.x || p.x % kx || c->grid.x % p.x)
        return BAD(function, "%s: preferred_cluster.x %u must be a multiple of cluster.x %u "
                             "that divides grid.x %u",
                   fn->name, p.x, kx, c->grid.x);
    if (!p.y || p.y % ky || c->grid.y % p.y)
        return BAD(function, "%s: preferred_cluster.y %u must be a multiple of cluster.y %u "
                             "that divides grid.y %u",
                   fn->name, p.y, ky, c->grid.y);
    if (p.z != kz)
        return BAD(function, "%s: preferred_cluster.z %u must equal cluster.z %u", fn->name,
                   p.z, kz);
    return CUS_SUCCESS;
#endif
}

static cus_status check_window(const launch_of_ *fn, const cus_launch_access_policy *w,
                               size_t *bytes, const char *function)
{
    if (!w->buffer) {
        if (w->offset || w->bytes || w->hit_ratio != 0.0f || w->hit_prop || w->miss_prop)
            return BAD(function, "%s: access_policy has a window but no buffer", fn->name);
        return CUS_SUCCESS;
    }
    const cus_context *bctx = cus_buffer_context(w->buffer);
    if (bctx->handle != fn->ctx_handle)
        return cus_fail_(CUS_ERROR_CONTEXT_MISMATCH, function, NULL,
                         "%s: access_policy.buffer belongs to context %p, the function to %p",
                         fn->name, (void *)bctx->handle, (void *)fn->ctx_handle);
    size_t size = cus_buffer_size(w->buffer);
    if (w->offset >= size)
        return BAD(function, "%s: access_policy.offset %zu is past the buffer's end (%zu bytes)",
                   fn->name, w->offset, size);
    size_t n = w->bytes ? w->bytes : size - w->offset;
    if (n > size - w->offset)
        return BAD(function, "%s: access_policy window [%zu, %zu) ends past the buffer's %zu "
                             "bytes",
                   fn->name, w->offset, w->offset + n < w->offset ? SIZE_MAX : w->offset + n,
                   size);
    if (!(w->hit_ratio >= 0.0f && w->hit_ratio <= 1.0f)) /* NaN too */
        return BAD(function, "%s: access_policy.hit_ratio %g is outside [0, 1]", fn->name,
                   (double)w->hit_ratio);
    if ((unsigned)w->hit_prop > CU_ACCESS_PROPERTY_PERSISTING)
        return BAD(function, "%s: access_policy.hit_prop %d is not a CUaccessProperty "
                             "(0, 1 or 2)",
                   fn->name, (int)w->hit_prop);
    if ((unsigned)w->miss_prop > CU_ACCESS_PROPERTY_STREAMING)
        return BAD(function, "%s: access_policy.miss_prop %d must be NORMAL (0) or STREAMING (1)",
                   fn->name, (int)w->miss_prop);
    *bytes = n;
    return CUS_SUCCESS;
}

static cus_status check_domains(const launch_of_ *fn, const cus_launch_config *c,
                                const char *function)
{
    if (c->set_mem_sync_domain && (unsigned)c->mem_sync_domain > CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE)
        return BAD(function, "%s: mem_sync_domain %d is neither DEFAULT (0) nor REMOTE (1)",
                   fn->name, (int)c->mem_sync_domain);
    if (!c->set_mem_sync_domain_map)
        return CUS_SUCCESS;
    int count = 0;
    CUresult r = cus_drv_.cuDeviceGetAttribute_(&count, CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT,
                                                fn->ctx->device.handle);
    if (r != CUDA_SUCCESS)
        return cus_fail_((cus_status)r, function, "cuDeviceGetAttribute",
                         "%s: the device's CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT, for "
                         "mem_sync_domain_map",
                         fn->name);
    const CUlaunchMemSyncDomainMap *m = &c->mem_sync_domain_map;
    if (m->default_ >= count || m->remote >= count)
        return BAD(function, "%s: mem_sync_domain_map (default_ %u, remote %u) names a domain "
                             "not below the device's %d (CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT)",
                   fn->name, m->default_, m->remote, count);
    return CUS_SUCCESS;
}

cus_status cus_launch_attrs_(cus_context *ctx, const char *name, const cus_launch_config *c,
                             CUlaunchAttribute *attrs, unsigned int *n, bool keep,
                             const char *function)
{
    const launch_of_ of = {ctx, ctx->handle, name};
    const launch_of_ *fn = &of;
    /* Everything is checked before anything is kept or sent. */
    CUS_TRY(check_event(fn, c, function));
    if (c->set_priority) {
        int least = 0, greatest = 0;
        CUS_TRY(cus_context_priority_range_(fn->ctx, &least, &greatest));
        if (c->priority < greatest || c->priority > least)
            return BAD(function, "%s: priority %d is outside the context's range [%d, %d] "
                                 "(greatest, least)",
                       fn->name, c->priority, greatest, least);
    }
    CUS_TRY(check_cluster(fn, c, function));
    size_t window = 0;
    CUS_TRY(check_window(fn, &c->access_policy, &window, function));
    CUS_TRY(check_domains(fn, c, function));

    /* The capture keeps what the attributes name, before the launch is queued. */
    if (keep && c->access_policy.buffer)
        CUS_TRY(cus_capture_keep_buffer_(c->stream, c->access_policy.buffer, function));
    if (keep && c->programmatic_event)
        CUS_TRY(cus_capture_keep_event_(c->stream, c->programmatic_event, function));

    unsigned int k = *n;
    if (c->programmatic_serialization) {
        attrs[k] = (CUlaunchAttribute){.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION};
        attrs[k++].value.programmaticStreamSerializationAllowed = 1;
    }
    if (c->programmatic_event) {
        attrs[k] = (CUlaunchAttribute){.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT};
        attrs[k].value.programmaticEvent.event = c->programmatic_event->handle;
        attrs[k].value.programmaticEvent.flags = 0;
        attrs[k++].value.programmaticEvent.triggerAtBlockStart =
            c->programmatic_event_at_block_start;
    }
    if (c->set_priority) {
        attrs[k] = (CUlaunchAttribute){.id = CU_LAUNCH_ATTRIBUTE_PRIORITY};
        attrs[k++].value.priority = c->priority;
    }
    if (c->cluster_policy) {
        attrs[k] = (CUlaunchAttribute){.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE};
        attrs[k++].value.clusterSchedulingPolicyPreference = c->cluster_policy;
    }
#if CUDA_VERSION >= 12080
    if (c->preferred_cluster.x || c->preferred_cluster.y || c->preferred_cluster.z) {
        attrs[k] = (CUlaunchAttribute){.id = CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION};
        attrs[k].value.preferredClusterDim.x = c->preferred_cluster.x;
        attrs[k].value.preferredClusterDim.y = c->preferred_cluster.y;
        attrs[k++].value.preferredClusterDim.z = c->preferred_cluster.z;
    }
#endif
    if (c->access_policy.buffer) {
        const cus_launch_access_policy *w = &c->access_policy;
        attrs[k] = (CUlaunchAttribute){.id = CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW};
        attrs[k].value.accessPolicyWindow = (CUaccessPolicyWindow){
            .base_ptr = (void *)(uintptr_t)(cus_buffer_ptr(w->buffer) + w->offset),
            .num_bytes = window,
            .hitRatio = w->hit_ratio,
            .hitProp = w->hit_prop,
            .missProp = w->miss_prop,
        };
        k++;
    }
    if (c->set_mem_sync_domain) {
        attrs[k] = (CUlaunchAttribute){.id = CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN};
        attrs[k++].value.memSyncDomain = c->mem_sync_domain;
    }
    if (c->set_mem_sync_domain_map) {
        attrs[k] = (CUlaunchAttribute){.id = CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP};
        attrs[k++].value.memSyncDomainMap = c->mem_sync_domain_map;
    }
    *n = k;
    return CUS_SUCCESS;
}
