/* Copies and memsets (synchronous and queued, peer copies too), prefetch and
 * advice, and the execution of their queued operations (COPY, MEMSET,
 * PREFETCH): part of the memory area (fake_memory.c has the records, blocks
 * and range checks). */
#include <inttypes.h>
#include <string.h>

#include "fake_memory_records.h"

/* --- helpers --------------------------------------------------------------------------------- */

static bool device_ok(int dev)
{
    const fake_device *d = fake_device_at_locked(dev);
    return d && d->attributes[CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS];
}

/* A prefetch or advice range: inside one live managed allocation. Pageable
 * memory is refused, as on a device without PAGEABLE_MEMORY_ACCESS. */
static CUresult managed_range_locked(uintptr_t p, size_t n, const char *what, fake_mem **out)
{
    fake_mem *m = fake_memory_allocation_containing_locked(p);
    if (!m)
        return CUDA_ERROR_INVALID_VALUE;
    if (m->h.state != FAKE_LIVE) {
        fake_memory_report_dead_locked(m, p, what, NULL);
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (m->h.kind != CUS_FAKE_HANDLE_MANAGED_MEMORY)
        return CUDA_ERROR_INVALID_VALUE;
    if (n > m->size - (p - m->base)) {
        fake_misuse_locked("%s 0x%" PRIxPTR "+%zu overruns the %zu-byte managed memory at "
                           "0x%" PRIxPTR,
                           what, p, n, m->size, m->base);
        return CUDA_ERROR_INVALID_VALUE;
    }
    *out = m;
    return CUDA_SUCCESS;
}

/* --- execution ------------------------------------------------------------------------------- */

static CUresult copy_execute_locked(const fake_op *op)
{
    switch (op->kind) {
    case FAKE_OP_COPY:
        if (!fake_memory_usable_locked(op->u.copy.dst_mem, op->u.copy.dst, "destination", op) ||
            !fake_memory_usable_locked(op->u.copy.src_mem, op->u.copy.src, "source", op))
            return CUDA_ERROR_INVALID_VALUE;
        if (!op->u.copy.rows) {
            memmove((void *)op->u.copy.dst, (const void *)op->u.copy.src, op->u.copy.n);
            return CUDA_SUCCESS;
        }
        for (size_t k = 0; k < op->u.copy.slices; k++)
            for (size_t i = 0; i < op->u.copy.rows; i++)
                memmove((void *)(op->u.copy.dst + k * op->u.copy.dst_slice +
                                 i * op->u.copy.dst_pitch),
                        (const void *)(op->u.copy.src + k * op->u.copy.src_slice +
                                       i * op->u.copy.src_pitch),
                        op->u.copy.n);
        return CUDA_SUCCESS;
    case FAKE_OP_MEMSET: {
        if (!fake_memory_usable_locked(op->u.memset.mem, op->u.memset.dst, "destination", op))
            return CUDA_ERROR_INVALID_VALUE;
        unsigned char *p = (unsigned char *)op->u.memset.dst;
        size_t count = op->u.memset.count;
        if (op->u.memset.elem == 1) {
            memset(p, (int)(op->u.memset.value & 0xff), count);
        } else if (op->u.memset.elem == 2) {
            uint16_t v = (uint16_t)op->u.memset.value;
            for (size_t i = 0; i < count; i++)
                memcpy(p + i * 2, &v, 2);
        } else {
            uint32_t v = (uint32_t)op->u.memset.value;
            for (size_t i = 0; i < count; i++)
                memcpy(p + i * 4, &v, 4);
        }
        return CUDA_SUCCESS;
    }
    case FAKE_OP_PREFETCH:
        return fake_memory_usable_locked(op->u.mem.mem, op->u.mem.mem->base, "prefetch range", op)
                   ? CUDA_SUCCESS
                   : CUDA_ERROR_INVALID_VALUE;
    case FAKE_OP_ALLOC:
    case FAKE_OP_FREE:
    case FAKE_OP_HOST_FN:
    case FAKE_OP_RECORD:
    case FAKE_OP_CONDITIONAL: /* replays only (fake_graph_conditional.c) */
    case FAKE_OP_WAIT:
    case FAKE_OP_LAUNCH:
        break;
    }
    return CUDA_SUCCESS;
}

/* --- copies and memsets -------------------------------------------------------------------------- */

static CUresult copy_locked(struct CUstream_st *s, struct CUctx_st *sync_ctx, uintptr_t dst,
                            side dst_side, uintptr_t src, side src_side, size_t n)
{
    if (n == 0)
        return CUDA_SUCCESS;
    fake_op op = {.kind = FAKE_OP_COPY, .u.copy = {.dst = dst, .src = src, .n = n}};
    CUresult r =
        fake_memory_range_locked(dst, n, dst_side, "destination", &op.u.copy.dst_mem, NULL);
    if (r == CUDA_SUCCESS)
        r = fake_memory_range_locked(src, n, src_side, "source", &op.u.copy.src_mem, NULL);
    if (r != CUDA_SUCCESS)
        return r;
    return s ? fake_stream_enqueue_locked(s, &op, NULL, 0)
             : fake_stream_submit_sync_locked(sync_ctx, &op);
}

/* A synchronous copy on the current context's default stream. */
static CUresult copy_sync_locked(uintptr_t dst, side dst_side, uintptr_t src, side src_side,
                                 size_t n)
{
    struct CUctx_st *c = NULL;
    CUresult r = fake_current_context_locked(&c);
    return r != CUDA_SUCCESS ? r : copy_locked(NULL, c, dst, dst_side, src, src_side, n);
}

static CUresult copy_async_locked(CUstream hs, uintptr_t dst, side dst_side, uintptr_t src,
                                  side src_side, size_t n)
{
    struct CUstream_st *s = NULL;
    CUresult r = fake_stream_arg_locked(hs, &s);
    return r != CUDA_SUCCESS ? r : copy_locked(s, NULL, dst, dst_side, src, src_side, n);
}

CUresult CUDAAPI fake_cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    FAKE_ENTER(cuMemcpy);
    return fake_leave(copy_sync_locked(dst, SIDE_ANY, src, SIDE_ANY, ByteCount));
}

CUresult CUDAAPI fake_cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount,
                                    CUstream hStream)
{
    FAKE_ENTER(cuMemcpyAsync);
    return fake_leave(copy_async_locked(hStream, dst, SIDE_ANY, src, SIDE_ANY, ByteCount));
}

CUresult CUDAAPI fake_cuMemcpyHtoD(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    FAKE_ENTER(cuMemcpyHtoD);
    return fake_leave(
        copy_sync_locked(dstDevice, SIDE_DEVICE, (uintptr_t)srcHost, SIDE_HOST, ByteCount));
}

CUresult CUDAAPI fake_cuMemcpyDtoH(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    FAKE_ENTER(cuMemcpyDtoH);
    return fake_leave(
        copy_sync_locked((uintptr_t)dstHost, SIDE_HOST, srcDevice, SIDE_DEVICE, ByteCount));
}

CUresult CUDAAPI fake_cuMemcpyDtoD(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
{
    FAKE_ENTER(cuMemcpyDtoD);
    return fake_leave(copy_sync_locked(dstDevice, SIDE_DEVICE, srcDevice, SIDE_DEVICE, ByteCount));
}

CUresult CUDAAPI fake_cuMemcpyHtoDAsync(CUdeviceptr dstDevice, const void *srcHost,
                                        size_t ByteCount, CUstream hStream)
{
    FAKE_ENTER(cuMemcpyHtoDAsync);
    return fake_leave(copy_async_locked(hStream, dstDevice, SIDE_DEVICE, (uintptr_t)srcHost,
                                        SIDE_HOST, ByteCount));
}

CUresult CUDAAPI fake_cuMemcpyDtoHAsync(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                                        CUstream hStream)
{
    FAKE_ENTER(cuMemcpyDtoHAsync);
    return fake_leave(copy_async_locked(hStream, (uintptr_t)dstHost, SIDE_HOST, srcDevice,
                                        SIDE_DEVICE, ByteCount));
}

CUresult CUDAAPI fake_cuMemcpyDtoDAsync(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                        size_t ByteCount, CUstream hStream)
{
    FAKE_ENTER(cuMemcpyDtoDAsync);
    return fake_leave(
        copy_async_locked(hStream, dstDevice, SIDE_DEVICE, srcDevice, SIDE_DEVICE, ByteCount));
}

/* A peer copy's range: device-side, and belonging to the named context
 * (pinned and registered memory made PORTABLE, and managed memory, belong to
 * every context). */
static CUresult peer_range_locked(uintptr_t p, size_t n, const struct CUctx_st *ctx,
                                  const char *what, fake_mem **ref)
{
    fake_mem *owner = NULL;
    CUresult r = fake_memory_range_locked(p, n, SIDE_DEVICE, what, ref, &owner);
    if (r != CUDA_SUCCESS)
        return r;
    bool portable = owner->h.kind == CUS_FAKE_HANDLE_MANAGED_MEMORY ||
                    (owner->h.kind != CUS_FAKE_HANDLE_DEVICE_MEMORY &&
                     (owner->flags & CU_MEMHOSTALLOC_PORTABLE)) || /* == ..._REGISTER_PORTABLE */
                    owner->mapping; /* a cuMemMap range belongs to no context */
    if (owner->ctx != ctx && !portable) {
        fake_misuse_locked("cuMemcpyPeer %s 0x%" PRIxPTR " belongs to context 0x%" PRIxPTR
                           ", not to the context 0x%" PRIxPTR " named for it",
                           what, p, (uintptr_t)owner->ctx, (uintptr_t)ctx);
        return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

static CUresult peer_copy_locked(CUdeviceptr dst, CUcontext dstContext, CUdeviceptr src,
                                 CUcontext srcContext, size_t n, CUstream hs, bool async)
{
    /* The stream first (so that one of a destroyed context answers
     * CUDA_ERROR_CONTEXT_IS_DESTROYED, as on the H200), then the contexts:
     * a destroyed one is misuse and CUDA_ERROR_INVALID_CONTEXT (the H200
     * crashes in cuMemcpyPeer: deliberate.txt). cuMemcpyPeer needs a current
     * context, whichever it is, as on the H200 (INVALID_CONTEXT with none);
     * cuMemcpyPeerAsync does not. */
    struct CUstream_st *s = NULL;
    struct CUctx_st *current = NULL;
    CUresult r = async ? fake_stream_arg_locked(hs, &s) : fake_current_context_locked(&current);
    struct CUctx_st *dc = NULL, *sc = NULL;
    if (r == CUDA_SUCCESS)
        r = fake_context_arg_locked(dstContext, CUDA_ERROR_INVALID_CONTEXT, &dc);
    if (r == CUDA_SUCCESS)
        r = fake_context_arg_locked(srcContext, CUDA_ERROR_INVALID_CONTEXT, &sc);
    if (r != CUDA_SUCCESS || n == 0)
        return r;
    fake_op op = {.kind = FAKE_OP_COPY, .u.copy = {.dst = dst, .src = src, .n = n}};
    r = peer_range_locked(dst, n, dc, "destination", &op.u.copy.dst_mem);
    if (r == CUDA_SUCCESS)
        r = peer_range_locked(src, n, sc, "source", &op.u.copy.src_mem);
    if (r != CUDA_SUCCESS)
        return r;
    if (async)
        return fake_stream_enqueue_locked(s, &op, NULL, 0);
    /* Synchronous: after the default-stream work of both contexts. */
    struct CUstream_st *sd = fake_default_stream_locked(sc);
    if (!sd)
        return CUDA_ERROR_OUT_OF_MEMORY;
    fake_stream_run_to_locked(sd, sd->enqueued);
    return fake_stream_submit_sync_locked(dc, &op);
}

CUresult CUDAAPI fake_cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext,
                                   CUdeviceptr srcDevice, CUcontext srcContext, size_t ByteCount)
{
    FAKE_ENTER(cuMemcpyPeer);
    return fake_leave(
        peer_copy_locked(dstDevice, dstContext, srcDevice, srcContext, ByteCount, NULL, false));
}

CUresult CUDAAPI fake_cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext,
                                        CUdeviceptr srcDevice, CUcontext srcContext,
                                        size_t ByteCount, CUstream hStream)
{
    FAKE_ENTER(cuMemcpyPeerAsync);
    return fake_leave(
        peer_copy_locked(dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream, true));
}

static CUresult memset_locked(CUdeviceptr dst, unsigned int value, unsigned int elem, size_t count,
                              CUstream hs, bool async)
{
    struct CUstream_st *s = NULL;
    struct CUctx_st *c = NULL;
    CUresult r = async ? fake_stream_arg_locked(hs, &s) : fake_current_context_locked(&c);
    if (r != CUDA_SUCCESS)
        return r;
    if ((uintptr_t)dst % elem != 0) /* cuMemsetD16 and D32 need aligned addresses */
        return CUDA_ERROR_INVALID_VALUE;
    if (count == 0)
        return CUDA_SUCCESS;
    if (count > SIZE_MAX / elem)
        return CUDA_ERROR_INVALID_VALUE;
    fake_op op = {.kind = FAKE_OP_MEMSET,
                  .u.memset = {.dst = dst, .value = value, .elem = elem, .count = count}};
    r = fake_memory_range_locked(dst, count * elem, SIDE_DEVICE, "memset destination",
                                 &op.u.memset.mem, NULL);
    if (r != CUDA_SUCCESS)
        return r;
    if (async)
        return fake_stream_enqueue_locked(s, &op, NULL, 0);
    /* The driver's "synchronous" memset of device memory returns before it
     * is done (it is fully synchronous for pinned host and managed memory
     * only). In the deferred mode it is left queued on the default stream,
     * to run when the host next waits for that stream, so that work of a
     * non-blocking stream can run before it, as on a GPU (an H200 did:
     * test_gpu_green.c); by default it runs now. */
    if (fake_stream_sync_memsets_deferred_locked() && op.u.memset.mem &&
        op.u.memset.mem->h.kind == CUS_FAKE_HANDLE_DEVICE_MEMORY) {
        struct CUstream_st *d = fake_default_stream_locked(c);
        return d ? fake_stream_enqueue_locked(d, &op, NULL, 0) : CUDA_ERROR_OUT_OF_MEMORY;
    }
    return fake_stream_submit_sync_locked(c, &op);
}

CUresult CUDAAPI fake_cuMemsetD8(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
    FAKE_ENTER(cuMemsetD8);
    return fake_leave(memset_locked(dstDevice, uc, 1, N, NULL, false));
}

CUresult CUDAAPI fake_cuMemsetD16(CUdeviceptr dstDevice, unsigned short us, size_t N)
{
    FAKE_ENTER(cuMemsetD16);
    return fake_leave(memset_locked(dstDevice, us, 2, N, NULL, false));
}

CUresult CUDAAPI fake_cuMemsetD32(CUdeviceptr dstDevice, unsigned int ui, size_t N)
{
    FAKE_ENTER(cuMemsetD32);
    return fake_leave(memset_locked(dstDevice, ui, 4, N, NULL, false));
}

CUresult CUDAAPI fake_cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N,
                                      CUstream hStream)
{
    FAKE_ENTER(cuMemsetD8Async);
    return fake_leave(memset_locked(dstDevice, uc, 1, N, hStream, true));
}

CUresult CUDAAPI fake_cuMemsetD16Async(CUdeviceptr dstDevice, unsigned short us, size_t N,
                                       CUstream hStream)
{
    FAKE_ENTER(cuMemsetD16Async);
    return fake_leave(memset_locked(dstDevice, us, 2, N, hStream, true));
}

CUresult CUDAAPI fake_cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N,
                                       CUstream hStream)
{
    FAKE_ENTER(cuMemsetD32Async);
    return fake_leave(memset_locked(dstDevice, ui, 4, N, hStream, true));
}

/* --- prefetch and advice ------------------------------------------------------------------------ */

static CUresult prefetch_locked(CUdeviceptr devPtr, size_t count, bool to_device, int device,
                                CUstream hs)
{
    struct CUstream_st *s = NULL;
    CUresult r = fake_stream_arg_locked(hs, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if (to_device && !device_ok(device))
        return CUDA_ERROR_INVALID_DEVICE;
    if (count == 0)
        return CUDA_SUCCESS;
    fake_op op = {.kind = FAKE_OP_PREFETCH};
    r = managed_range_locked(devPtr, count, "prefetch range", &op.u.mem.mem);
    if (r != CUDA_SUCCESS)
        return r;
    return fake_stream_enqueue_locked(s, &op, NULL, 0);
}

CUresult CUDAAPI fake_cuMemPrefetchAsync(CUdeviceptr devPtr, size_t count, CUdevice dstDevice,
                                         CUstream hStream)
{
    FAKE_ENTER(cuMemPrefetchAsync);
    return fake_leave(
        prefetch_locked(devPtr, count, dstDevice != CU_DEVICE_CPU, dstDevice, hStream));
}

/* Whether an advice names a processor (the others ignore the device). */
static bool advice_needs_device(int advice)
{
    return advice == CU_MEM_ADVISE_SET_PREFERRED_LOCATION ||
           advice == CU_MEM_ADVISE_SET_ACCESSED_BY || advice == CU_MEM_ADVISE_UNSET_ACCESSED_BY;
}

/* Both variants need a current context, whichever it is, as on the H200
 * (CUDA_ERROR_INVALID_CONTEXT with none; a poisoned one answers its error). */
static CUresult advise_locked(CUdeviceptr devPtr, size_t count, int advice, bool on_device,
                              int device)
{
    struct CUctx_st *c = NULL;
    CUresult r = fake_current_context_locked(&c);
    if (r != CUDA_SUCCESS)
        return r;
    if (advice < CU_MEM_ADVISE_SET_READ_MOSTLY || advice > CU_MEM_ADVISE_UNSET_ACCESSED_BY)
        return CUDA_ERROR_INVALID_VALUE;
    if (advice_needs_device(advice) && on_device && !device_ok(device))
        return CUDA_ERROR_INVALID_DEVICE;
    if (count == 0)
        return CUDA_SUCCESS;
    fake_mem *m = NULL;
    r = managed_range_locked(devPtr, count, "advice range", &m); /* no effect beyond checks */
    return r == CUDA_SUCCESS ? m->ctx->sticky : r;
}

CUresult CUDAAPI fake_cuMemAdvise(CUdeviceptr devPtr, size_t count, CUmem_advise advice,
                                  CUdevice device)
{
    FAKE_ENTER(cuMemAdvise);
    return fake_leave(advise_locked(devPtr, count, (int)advice, device != CU_DEVICE_CPU, device));
}

#ifdef FAKE_HAVE_12020_ENTRIES
/* A CUmemLocation: to_device and its ordinal, or the host. */
static CUresult location_locked(CUmemLocation loc, bool *to_device, int *device)
{
    switch ((int)loc.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
        *to_device = true;
        *device = loc.id;
        return CUDA_SUCCESS;
    case CU_MEM_LOCATION_TYPE_HOST:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
        *to_device = false;
        *device = CU_DEVICE_CPU;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

CUresult CUDAAPI fake_cuMemPrefetchAsync_v2(CUdeviceptr devPtr, size_t count,
                                            CUmemLocation location, unsigned int flags,
                                            CUstream hStream)
{
    FAKE_ENTER(cuMemPrefetchAsync_v2);
    bool to_device = false;
    int device = 0;
    CUresult r = location_locked(location, &to_device, &device);
    if (r == CUDA_SUCCESS && flags != 0)
        r = CUDA_ERROR_INVALID_VALUE;
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    return fake_leave(prefetch_locked(devPtr, count, to_device, device, hStream));
}

CUresult CUDAAPI fake_cuMemAdvise_v2(CUdeviceptr devPtr, size_t count, CUmem_advise advice,
                                     CUmemLocation location)
{
    FAKE_ENTER(cuMemAdvise_v2);
    bool to_device = false;
    int device = 0;
    if (advice_needs_device((int)advice)) {
        CUresult r = location_locked(location, &to_device, &device);
        if (r != CUDA_SUCCESS)
            return fake_leave(r);
    }
    return fake_leave(advise_locked(devPtr, count, (int)advice, to_device, device));
}
#endif

/* --- the area -------------------------------------------------------------------------------- */

static const fake_op_executor copy_executors[] = {
    {FAKE_OP_COPY, FAKE_OP_COUNTS_AS_WORK | FAKE_OP_DEAD_WHEN_POISONED, copy_execute_locked, NULL},
    {FAKE_OP_MEMSET, FAKE_OP_COUNTS_AS_WORK | FAKE_OP_DEAD_WHEN_POISONED, copy_execute_locked, NULL},
    {FAKE_OP_PREFETCH, FAKE_OP_COUNTS_AS_WORK | FAKE_OP_DEAD_WHEN_POISONED, copy_execute_locked, NULL},
};

/* Its executors only: what the operations use is fake_memory.c's, reset and
 * torn down there. */
static const fake_area copy_area = {
    .name = "memory copies",
    .reset_order = 30,
    .teardown_order = 30,
    .executors = copy_executors,
    .executor_count = sizeof copy_executors / sizeof copy_executors[0],
};
FAKE_AREA(copy_area)
