/* cuscope/green.h: green contexts, a share of a device's SMs (driver 12.4+).
 *
 * A green context runs its work on a set of the device's streaming
 * multiprocessors (SMs). The steps are the driver's:
 *   1. the device's SM resource: cus_device_sm_resource();
 *   2. split it into groups of at least min_count SMs:
 *      cus_sm_resource_split();
 *   3. make a green context of one or more groups of one split (or of the
 *      remaining group): cus_context_create_green(), which makes the
 *      descriptor (cus_sm_resource_desc()) and the green context.
 * The result is a cus_context of kind CUS_CONTEXT_GREEN: push it, guard it,
 * and make streams, events, buffers and modules on it and launch there as on
 * any context; its children hold it, and its last reference destroys the
 * green context (cuGreenCtxDestroy). Streams made on it
 * (cus_stream_create) are the green context's, so that their work runs on
 * its SMs only. The driver also retains the device's primary context for
 * the green context's life.
 * Work of one green context is ordered after another's with
 * cus_context_record_event and cus_context_wait_event (context-wide, on all
 * of a green context's streams).
 *
 * The split's arithmetic (cuda.h, CUDA 13.0). Groups all have one size:
 * min_count rounded up to the architecture's minimum and granularity:
 *   compute capability 6.x, 7.x  at least 2 SMs, a multiple of 2;
 *   8.x                          at least 4 SMs, a multiple of 2;
 *   9.0 and later                at least 8 SMs, a multiple of 8.
 * min_count 0 asks for the minimum. The resource's sm.minSmPartitionSize
 * gives the minimum on this device. As many groups are made as fit and as
 * asked; the SMs left go to the remaining group, which has none of the
 * groups' guarantees. An H200 (132 SMs, 9.0) split with min_count 16 gives
 * up to 8 groups of 16 (4 SMs left over); with min_count 12, groups of 16
 * too; asking for 1 group of 16 leaves 116 in the remaining group. A
 * split's outputs cannot be split again (a green context's resource can).
 * CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING lowers the minimum and
 * granularity (at the cost of large thread clusters).
 * Even disjoint green contexts are not promised to run concurrently, and a
 * green context's work may run on more SMs than provisioned, never fewer
 * (MPS; on 9.x, two more SMs once a module with dynamic parallelism is
 * loaded).
 *
 * A driver older than 12.4 has none of this: each function here then fails
 * with CUS_ERROR_NOT_SUPPORTED, naming the driver's version. Unless said
 * otherwise, functions are thread-safe, return a cus_status, record the
 * thread's last error on failure and leave out parameters untouched. The
 * driver makes a green context current to one thread at a time: do not push
 * one green context on two threads at once.
 */
#ifndef CUSCOPE_GREEN_H
#define CUSCOPE_GREEN_H

#include <cuda.h>

#include "context.h"
#include "device.h"
#include "event.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* dev's SM resource (cuDeviceGetDevResource, CU_DEV_RESOURCE_TYPE_SM): all of
 * the device's SMs (res->sm.smCount, or cus_sm_resource_count), with the
 * smallest group a split makes (res->sm.minSmPartitionSize). A CUdevResource
 * is a plain struct, owned by the caller; do not modify it. Errors:
 * CUS_ERROR_INVALID_ARGUMENT (NULL res), CUS_ERROR_NOT_SUPPORTED (driver
 * older than 12.4), the driver's (CUDA_ERROR_INVALID_DEVICE). */
CUS_API cus_status cus_device_sm_resource(cus_device dev, CUdevResource *res);

/* The SMs of an SM resource: res->sm.smCount; 0 for NULL or a resource of
 * another type. A plain accessor: no driver call, never fails. */
CUS_API unsigned int cus_sm_resource_count(const CUdevResource *res);

/* Splits an SM resource (cuDevSmResourceSplitByCount) into groups of at
 * least min_count SMs each, rounded as the header says, with
 * CUdevSmResourceSplit_flags (0 for the default). *ngroups gives the room in
 * groups and receives how many were made (fewer when fewer fit); groups NULL
 * asks only how many would be made (*ngroups receives it). remaining (may be
 * NULL) receives what is left over; in a query (groups NULL) it is what the
 * driver simulated, or, where the driver gives only the count (the fake),
 * a resource of type CU_DEV_RESOURCE_TYPE_INVALID and no SMs. res must come from
 * cus_device_sm_resource or cus_context_sm_resource, not from a split.
 * Errors: CUS_ERROR_INVALID_ARGUMENT for NULL res or ngroups, a resource that
 * is not of SMs, room for 0 groups, and a min_count above the resource's
 * SMs (checked before the driver is asked); the driver's
 * CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION when no group fits once rounded
 * (the message gives the rounding), CUDA_ERROR_INVALID_VALUE for bad flags;
 * CUS_ERROR_NOT_SUPPORTED before 12.4. Nothing is written on failure. */
CUS_API cus_status cus_sm_resource_split(const CUdevResource *res, unsigned int min_count,
                                         unsigned int flags, CUdevResource *groups,
                                         unsigned int *ngroups, CUdevResource *remaining);

/* A resource descriptor of n resources (cuDevResourceGenerateDesc): one, or
 * several outputs (groups, remaining) of one split. The driver owns
 * descriptors and has no call to free one. cus_context_create_green makes its
 * own: this is for raw cuGreenCtxCreate calls. Errors:
 * CUS_ERROR_INVALID_ARGUMENT (NULL res or out, n 0), the driver's
 * (CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION for resources of two splits or
 * devices, CUDA_ERROR_INVALID_RESOURCE_TYPE), CUS_ERROR_NOT_SUPPORTED before
 * 12.4. */
CUS_API cus_status cus_sm_resource_desc(const CUdevResource *res, unsigned int n,
                                        CUdevResourceDesc *out);

/* Creates a green context on dev with the n resources (as
 * cus_sm_resource_desc takes them) and CUgreenCtxCreate_flags
 * (CU_GREEN_CTX_DEFAULT_STREAM, which drivers up to 13.0 require, is always
 * added: pass 0). cuDevResourceGenerateDesc, cuGreenCtxCreate, then
 * cuCtxFromGreenCtx for its CUcontext (cus_context_handle). Unlike
 * cus_context_create, it is not pushed. *out receives a new reference to a
 * context of kind CUS_CONTEXT_GREEN. Errors: CUS_ERROR_INVALID_ARGUMENT (NULL
 * resources or out, n 0), the driver's (a failed cuCtxFromGreenCtx destroys
 * the new green context), CUS_ERROR_NOT_SUPPORTED before 12.4. */
CUS_API cus_status cus_context_create_green(cus_device dev, const CUdevResource *resources,
                                            unsigned int n, unsigned int flags,
                                            cus_context **out);

/* The SM resource of any context (cuCtxGetDevResource): a green context's
 * share, or all of the device's for another kind. A green context's resource
 * can be split again. Errors: CUS_ERROR_INVALID_ARGUMENT, a poisoned ctx's
 * status, the driver's, CUS_ERROR_NOT_SUPPORTED before 12.4. */
CUS_API cus_status cus_context_sm_resource(cus_context *ctx, CUdevResource *res);

/* The SMs ctx has: cus_context_sm_resource's count. Errors as there. */
CUS_API cus_status cus_context_sm_count(cus_context *ctx, unsigned int *count);

/* A green context's CUgreenCtx; NULL for a NULL ctx or another kind. A plain
 * accessor: no driver call, never fails. */
CUS_API CUgreenCtx cus_context_green_handle(const cus_context *ctx);

/* Records in event all the work submitted to the green context ctx so far,
 * on every one of its streams (cuGreenCtxRecordEvent): the event completes
 * once all of it has; cus_event_synchronize, cus_event_query,
 * cus_stream_wait_event and cus_context_wait_event then wait for or examine
 * it. Work submitted to ctx later is not part of it. event must be of ctx,
 * of another green context of the same device, or of the device's primary
 * context: the driver requires "the same primary context". Needs no current
 * context and switches none. Only a green context: any other kind is
 * CUS_ERROR_INVALID_ARGUMENT, since the driver's context-wide record of
 * other contexts (cuCtxRecordEvent) is a 12.5 call that cuscope does not
 * wrap; record on a stream there (cus_event_record).
 * Errors: CUS_ERROR_INVALID_ARGUMENT (NULL, a context that is not green),
 * CUS_ERROR_CONTEXT_MISMATCH (an event of a context cuscope knows to be of
 * another primary context: another device's, or one made by
 * cus_context_create), a poisoned ctx's or event's status, the driver's
 * (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED while a stream of ctx captures,
 * which invalidates that capture; CUDA_ERROR_INVALID_HANDLE for an event the
 * driver finds of another primary context), CUS_ERROR_NOT_SUPPORTED before
 * 12.4. Thread-safe as the driver makes it: not while another thread uses
 * ctx (see the top). */
CUS_API cus_status cus_context_record_event(cus_context *ctx, cus_event *event);

/* Makes all work submitted to the green context ctx from now on, on any of
 * its streams (those made later included), wait on the device for the work
 * recorded in event (cuGreenCtxWaitEvent); the calling thread does not
 * wait. event may be of any context, of any device; an event never recorded
 * gives nothing to wait for. Only a green context, as for
 * cus_context_record_event (any other kind: CUS_ERROR_INVALID_ARGUMENT; wait
 * on a stream there, cus_stream_wait_event). Needs no current context and
 * switches none.
 * Errors: CUS_ERROR_INVALID_ARGUMENT (NULL, a context that is not green), a
 * poisoned ctx's or event's status, the driver's
 * (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED when event was recorded in a
 * capture still open or a stream of ctx captures, which invalidates the
 * capture), CUS_ERROR_NOT_SUPPORTED before 12.4. Thread-safe as
 * cus_context_record_event. */
CUS_API cus_status cus_context_wait_event(cus_context *ctx, cus_event *event);

#ifdef __cplusplus
}
#endif

#endif
