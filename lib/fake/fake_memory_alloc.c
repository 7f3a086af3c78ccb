/* The allocation entry points: cuMemAlloc, cuMemFree, cuMemAllocAsync,
 * cuMemFreeAsync, cuMemAllocHost, cuMemHostAlloc, cuMemFreeHost,
 * cuMemAllocManaged; part of the memory area (fake_memory.c has the records
 * and blocks). */
#include <inttypes.h>

#include "fake_memory_records.h"

/* --- helpers for the entry points ------------------------------------------------------------ */

static bool is_alloc_kind(cus_fake_handle_kind k)
{
    return k == CUS_FAKE_HANDLE_DEVICE_MEMORY || k == CUS_FAKE_HANDLE_HOST_MEMORY ||
           k == CUS_FAKE_HANDLE_MANAGED_MEMORY;
}

/* The allocation that starts at p, in any state; NULL (and a misuse) if p is
 * not the start of one. */
static fake_mem *alloc_at_locked(uintptr_t p, const char *call)
{
    fake_handle *h = fake_handle_find_locked(p);
    if (h && is_alloc_kind(h->kind))
        return (fake_mem *)h;
    const fake_mem *m = fake_memory_allocation_containing_locked(p);
    if (m && m->mapping)
        fake_misuse_locked("%s of 0x%" PRIxPTR ", in the cuMemMap range at 0x%" PRIxPTR
                           "+%zu (cuMemUnmap unmaps it)",
                           call, p, m->base, m->size);
    else if (m && m->global)
        fake_misuse_locked("%s of 0x%" PRIxPTR ", in the %zu-byte module global at 0x%" PRIxPTR
                           " (it lives as long as its module)",
                           call, p, m->size, m->base);
    else if (m)
        fake_misuse_locked("%s of 0x%" PRIxPTR ", inside the %zu-byte %s at 0x%" PRIxPTR
                           " but not its start",
                           call, p, m->size, fake_memory_noun(m), m->base);
    else
        fake_misuse_locked("%s of 0x%" PRIxPTR ", which the fake never allocated", call, p);
    return NULL;
}

/* The double-free checks of the frees. */
static bool freeable_locked(const fake_mem *m, const char *call)
{
    if (m->h.state != FAKE_LIVE) {
        fake_misuse_locked("double free: %s of %s 0x%" PRIxPTR ", already freed%s", call,
                           fake_memory_noun(m), m->base, m->ctx_destroyed ? " with its context" : "");
        return false;
    }
    if (m->free_queued) {
        fake_misuse_locked("double free: %s of %s 0x%" PRIxPTR ", whose cuMemFreeAsync is "
                           "already queued",
                           call, fake_memory_noun(m), m->base);
        return false;
    }
    return true;
}

/* The frees need no current context, but refuse the memory of a poisoned
 * context with its sticky error, as the H200 does: after a fault only the
 * context's destruction (or its primary context's reset) releases what it
 * has. Checked again after the implicit synchronization, which may run the
 * faulting kernel. */
static CUresult owner_sticky(const fake_mem *m)
{
    return m->ctx->sticky;
}

/* A graph allocation is freed outside its graph only once a launch left it
 * allocated (and it was not freed since). */
static bool graph_freeable_locked(const fake_mem *m, const char *call)
{
    if (m->outstanding)
        return true;
    fake_misuse_locked("%s of graph allocation 0x%" PRIxPTR ", which no graph launch left "
                       "allocated (never launched, freed in its graph, or freed already)",
                       call, m->base);
    return false;
}

/* --- allocation -------------------------------------------------------------------------------- */

CUresult CUDAAPI fake_cuMemAlloc(CUdeviceptr *dptr, size_t bytesize)
{
    FAKE_ENTER(cuMemAlloc);
    if (!dptr || bytesize == 0) /* documented: 0 is CUDA_ERROR_INVALID_VALUE */
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    GET_CURRENT(c);
    if (!fake_memory_fits_locked(c, bytesize))
        return fake_leave(CUDA_ERROR_OUT_OF_MEMORY);
    fake_mem *m = NULL;
    CUresult r = fake_memory_allocate_locked(CUS_FAKE_HANDLE_DEVICE_MEMORY, bytesize, c, 0, &m);
    if (r == CUDA_SUCCESS)
        *dptr = (CUdeviceptr)m->base;
    return fake_leave(r);
}

CUresult CUDAAPI fake_cuMemFree(CUdeviceptr dptr)
{
    FAKE_ENTER(cuMemFree);
    if (dptr == 0)
        return fake_leave(CUDA_SUCCESS); /* like free(NULL) */
    fake_mem *m = alloc_at_locked((uintptr_t)dptr, "cuMemFree");
    if (!m)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    if (m->h.kind == CUS_FAKE_HANDLE_HOST_MEMORY) {
        fake_misuse_locked("cuMemFree of pinned host memory 0x%" PRIxPTR
                           " (it is freed with cuMemFreeHost)",
                           m->base);
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    }
    if (!freeable_locked(m, "cuMemFree"))
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    if (owner_sticky(m) != CUDA_SUCCESS)
        return fake_leave(owner_sticky(m));
    if (m->graph) {
        /* Only what a launch left allocated, after that launch. */
        if (!graph_freeable_locked(m, "cuMemFree"))
            return fake_leave(CUDA_ERROR_INVALID_VALUE);
        fake_context_synchronize_locked(m->ctx);
        if (!freeable_locked(m, "cuMemFree") || !graph_freeable_locked(m, "cuMemFree"))
            return fake_leave(CUDA_ERROR_INVALID_VALUE);
        if (owner_sticky(m) != CUDA_SUCCESS)
            return fake_leave(owner_sticky(m));
        fake_memory_graph_set_valid_locked(m, false);
        m->outstanding = false;
        fake_memory_graph_retire_locked(m);
        return fake_leave(CUDA_SUCCESS);
    }
    if (!m->async) {
        /* "may perform implicit synchronization": the owner's queued work
         * (which may use the block) runs first; not for stream-ordered
         * blocks, as documented. */
        fake_context_synchronize_locked(m->ctx);
        if (!freeable_locked(m, "cuMemFree")) /* freed meanwhile by another thread */
            return fake_leave(CUDA_ERROR_INVALID_VALUE);
        if (owner_sticky(m) != CUDA_SUCCESS)
            return fake_leave(owner_sticky(m));
    }
    fake_memory_release_locked(m);
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    FAKE_ENTER(cuMemAllocAsync);
    struct CUstream_st *s = NULL;
    CUresult r = fake_stream_arg_locked(hStream, &s);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (!dptr || bytesize == 0)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    struct CUctx_st *c = s->ctx;
    if (!fake_dev.devices[c->device].attributes[CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED])
        return fake_leave(CUDA_ERROR_NOT_SUPPORTED);
    /* From the current pool of the stream's device (fake_pool.c). */
    return fake_leave(fake_pool_alloc_locked(s, fake_pool_current_locked(c->device), bytesize,
                                             dptr));
}

CUresult CUDAAPI fake_cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    FAKE_ENTER(cuMemFreeAsync);
    /* The stream of a poisoned context answers its sticky error. */
    struct CUstream_st *s = NULL;
    CUresult r = fake_stream_arg_locked(hStream, &s);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (dptr == 0)
        return fake_leave(CUDA_SUCCESS); /* as cuMemFree, and as the H200 answers */
    fake_mem *m = alloc_at_locked((uintptr_t)dptr, "cuMemFreeAsync");
    if (!m)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    if (m->h.kind != CUS_FAKE_HANDLE_DEVICE_MEMORY) {
        fake_misuse_locked("cuMemFreeAsync of %s 0x%" PRIxPTR " (only device memory is freed in "
                           "stream order)",
                           fake_memory_noun(m), m->base);
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    }
    if (s->capture) {
        /* A free node: of a live graph allocation only (fake_graph.c checks
         * that its graph does not free it already). */
        if (m->h.state != FAKE_LIVE && !freeable_locked(m, "cuMemFreeAsync"))
            return fake_leave(CUDA_ERROR_INVALID_VALUE);
        fake_op op = {.kind = FAKE_OP_FREE, .u.mem = {m}};
        return fake_leave(m->graph ? fake_stream_enqueue_locked(s, &op, NULL, 0)
                                   : CUDA_ERROR_INVALID_VALUE);
    }
    /* Outside a capture, a stream-ordered free is as unsafe as cuMemFree
     * (an H200 refuses it on another stream while a GLOBAL capture is open,
     * test/probes/probes.c: release-free-async-*). */
    if (fake_unsafe_call_refused_locked())
        return fake_leave(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    if (!freeable_locked(m, "cuMemFreeAsync"))
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    if (owner_sticky(m) != CUDA_SUCCESS)
        return fake_leave(owner_sticky(m));
    if (m->graph && !graph_freeable_locked(m, "cuMemFreeAsync"))
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    fake_op op = {.kind = FAKE_OP_FREE, .u.mem = {m}};
    r = fake_stream_enqueue_locked(s, &op, NULL, 0);
    if (r == CUDA_SUCCESS && m->graph) {
        m->outstanding = false;
        m->pending++;
    } else if (r == CUDA_SUCCESS) {
        m->free_queued = true;
    }
    return fake_leave(r);
}

static CUresult host_alloc_locked(void **pp, size_t bytesize, unsigned int flags)
{
    const unsigned int known =
        CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
    if (!pp || bytesize == 0 || (flags & ~known))
        return CUDA_ERROR_INVALID_VALUE;
    struct CUctx_st *c = NULL;
    CUresult r = fake_current_context_locked(&c);
    if (r != CUDA_SUCCESS)
        return r;
    fake_mem *m = NULL;
    r = fake_memory_allocate_locked(CUS_FAKE_HANDLE_HOST_MEMORY, bytesize, c, flags, &m);
    if (r == CUDA_SUCCESS)
        *pp = (void *)m->base;
    return r;
}

CUresult CUDAAPI fake_cuMemAllocHost(void **pp, size_t bytesize)
{
    FAKE_ENTER(cuMemAllocHost);
    return fake_leave(host_alloc_locked(pp, bytesize, 0));
}

CUresult CUDAAPI fake_cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    FAKE_ENTER(cuMemHostAlloc);
    return fake_leave(host_alloc_locked(pp, bytesize, Flags));
}

CUresult CUDAAPI fake_cuMemFreeHost(void *p)
{
    FAKE_ENTER(cuMemFreeHost);
    if (!p)
        return fake_leave(CUDA_SUCCESS);
    fake_mem *m = alloc_at_locked((uintptr_t)p, "cuMemFreeHost");
    if (!m)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    if (m->h.kind != CUS_FAKE_HANDLE_HOST_MEMORY) {
        fake_misuse_locked("cuMemFreeHost of %s 0x%" PRIxPTR " (it is freed with cuMemFree)",
                           fake_memory_noun(m), m->base);
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    }
    if (!freeable_locked(m, "cuMemFreeHost"))
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    if (owner_sticky(m) != CUDA_SUCCESS)
        return fake_leave(owner_sticky(m));
    fake_context_synchronize_locked(m->ctx);
    if (!freeable_locked(m, "cuMemFreeHost"))
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    if (owner_sticky(m) != CUDA_SUCCESS)
        return fake_leave(owner_sticky(m));
    fake_memory_release_locked(m);
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    FAKE_ENTER(cuMemAllocManaged);
    if (!dptr || bytesize == 0 || (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST))
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    GET_CURRENT(c);
    if (!fake_dev.devices[c->device].attributes[CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY])
        return fake_leave(CUDA_ERROR_NOT_SUPPORTED);
    fake_mem *m = NULL;
    CUresult r =
        fake_memory_allocate_locked(CUS_FAKE_HANDLE_MANAGED_MEMORY, bytesize, c, flags, &m);
    if (r == CUDA_SUCCESS)
        *dptr = (CUdeviceptr)m->base;
    return fake_leave(r);
}
