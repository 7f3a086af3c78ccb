/* Pointer attributes (cuPointerGetAttribute) and peer access
 * (cuDeviceCanAccessPeer, cuCtxEnablePeerAccess, cuCtxDisablePeerAccess):
 * part of the memory area (fake_memory.c has the records), an area of its own
 * for the peer links. */
#include <stdlib.h>

#include "fake_memory_records.h"

typedef struct peer_link {
    struct CUctx_st *from, *to; /* from may access to's memory */
    unsigned long doomed;
} peer_link;

static peer_link *links;
static size_t link_count, link_capacity;

static void peer_reset_locked(const cus_fake_config *cfg)
{
    (void)cfg;
    free(links);
    links = NULL;
    link_count = link_capacity = 0;
}

static void peer_doom_locked(struct CUctx_st *c, unsigned long ticket)
{
    for (size_t i = 0; i < link_count; i++)
        if (links[i].from == c || links[i].to == c)
            links[i].doomed = ticket;
}

static void peer_destroy_doomed_locked(struct CUctx_st *c, unsigned long ticket)
{
    (void)c;
    size_t k = 0;
    for (size_t i = 0; i < link_count; i++)
        if (links[i].doomed != ticket)
            links[k++] = links[i];
    link_count = k;
}

/* --- pointer attributes ------------------------------------------------------------------------ */

CUresult CUDAAPI fake_cuPointerGetAttribute(void *data, CUpointer_attribute attribute,
                                            CUdeviceptr ptr)
{
    FAKE_ENTER(cuPointerGetAttribute);
    int attr = (int)attribute;
    if (!data || attr < CU_POINTER_ATTRIBUTE_CONTEXT || attr > 21)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    uintptr_t addr = (uintptr_t)ptr;
    /* A freed pointer is an unknown one, as with the driver (no misuse:
     * asking is how a caller finds out). */
    const fake_mem *m = fake_memory_allocation_containing_locked(addr);
    if (m && m->h.state != FAKE_LIVE)
        m = NULL;
    if (!m)
        m = fake_memory_registration_containing_locked(addr);
    if (!m)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    /* A poisoned context's memory still answers, as on the H200. */
    bool device = m->h.kind == CUS_FAKE_HANDLE_DEVICE_MEMORY;
    switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        *(CUcontext *)data = m->ctx;
        break;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: /* managed memory answers DEVICE */
        *(unsigned int *)data =
            device || m->h.kind == CUS_FAKE_HANDLE_MANAGED_MEMORY ? CU_MEMORYTYPE_DEVICE
                                                                  : CU_MEMORYTYPE_HOST;
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: {
        struct CUctx_st *c = NULL;
        CUresult r = fake_current_context_locked(&c);
        if (r != CUDA_SUCCESS)
            return fake_leave(r == CUDA_ERROR_CONTEXT_IS_DESTROYED ? r : CUDA_ERROR_INVALID_CONTEXT);
        *(CUdeviceptr *)data = ptr;
        break;
    }
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        if (device)
            return fake_leave(CUDA_ERROR_INVALID_VALUE);
        *(void **)data = (void *)addr;
        break;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
        *(unsigned long long *)data = m->h.id;
        break;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED: /* the driver writes an unsigned int */
        *(unsigned int *)data = m->h.kind == CUS_FAKE_HANDLE_MANAGED_MEMORY;
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        *(int *)data = (int)m->device;
        break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        *(CUdeviceptr *)data = (CUdeviceptr)m->base;
        break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        *(size_t *)data = m->size;
        break;
    default:
        return fake_leave(CUDA_ERROR_NOT_SUPPORTED); /* not emulated */
    }
    return fake_leave(CUDA_SUCCESS);
}

/* --- peer access -----------------------------------------------------------------------------------
 * A destroyed peer context is misuse and CUDA_ERROR_CONTEXT_IS_DESTROYED, as
 * the H200 answers. */

CUresult CUDAAPI fake_cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev, CUdevice peerDev)
{
    FAKE_ENTER(cuDeviceCanAccessPeer);
    if (!canAccessPeer)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    if (!fake_device_at_locked(dev) || !fake_device_at_locked(peerDev))
        return fake_leave(CUDA_ERROR_INVALID_DEVICE);
    *canAccessPeer = dev != peerDev; /* every pair of distinct fake devices */
    return fake_leave(CUDA_SUCCESS);
}

static peer_link *find_link(const struct CUctx_st *from, const struct CUctx_st *to)
{
    for (size_t i = 0; i < link_count; i++)
        if (links[i].from == from && links[i].to == to)
            return &links[i];
    return NULL;
}

CUresult CUDAAPI fake_cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags)
{
    FAKE_ENTER(cuCtxEnablePeerAccess);
    GET_CURRENT(c);
    struct CUctx_st *peer = NULL;
    CUresult r = fake_context_arg_locked(peerContext, CUDA_ERROR_CONTEXT_IS_DESTROYED, &peer);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (Flags != 0)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    /* The same device (the context itself too, as the H200 answers):
     * cuDeviceCanAccessPeer says 0. */
    if (peer->device == c->device)
        return fake_leave(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED);
    if (find_link(c, peer))
        return fake_leave(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED);
    if (link_count == link_capacity) {
        size_t cap = link_capacity ? link_capacity * 2 : 16;
        peer_link *l = realloc(links, cap * sizeof *l);
        if (!l)
            return fake_leave(CUDA_ERROR_OUT_OF_MEMORY);
        links = l;
        link_capacity = cap;
    }
    links[link_count++] = (peer_link){c, peer, 0};
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuCtxDisablePeerAccess(CUcontext peerContext)
{
    FAKE_ENTER(cuCtxDisablePeerAccess);
    GET_CURRENT(c);
    struct CUctx_st *peer = NULL;
    CUresult r = fake_context_arg_locked(peerContext, CUDA_ERROR_CONTEXT_IS_DESTROYED, &peer);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    peer_link *l = find_link(c, peer);
    if (!l)
        return fake_leave(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
    *l = links[--link_count];
    return fake_leave(CUDA_SUCCESS);
}

/* --- the area -------------------------------------------------------------------------------- */

/* The links name contexts only: reset and torn down with the memory. */
static const fake_area peer_area = {
    .name = "peer access",
    .reset_order = 31,
    .teardown_order = 31,
    .reset_locked = peer_reset_locked,
    .doom_locked = peer_doom_locked,
    .destroy_doomed_locked = peer_destroy_doomed_locked,
};
FAKE_AREA(peer_area)
