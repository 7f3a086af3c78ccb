/* Legacy IPC: cuIpcGetMemHandle, cuIpcOpenMemHandle, cuIpcCloseMemHandle,
 * cuIpcGetEventHandle, cuIpcOpenEventHandle (cuscope/fake.h states the
 * model). Part of the memory area (it reads the allocation records) and of
 * the event area (it makes events through fake_event_new_locked).
 *
 * A handle's bytes say who exported what: the exporting process's id, the
 * install (a handle of an earlier install is no handle), and the record's id
 * and address. The pid is what tells "another process": a fork() child has
 * another, and cus_fake_ipc_*_as_foreign writes 0, which no process has.
 *
 * The driver's answers followed here: a handle opened in the process that
 * made it is CUDA_ERROR_INVALID_CONTEXT (UCX and HIP's CUDA path report
 * "invalid device context" for memory and events); a handle the driver does
 * not know, CUDA_ERROR_INVALID_VALUE (NCCL #842); pool memory exported,
 * CUDA_ERROR_INVALID_VALUE (cudarc #521). Not confirmed on a GPU here, and
 * so chosen by analogy: a stale handle (the memory freed) answers as an
 * unknown one; managed memory as pool memory; an event without
 * CU_EVENT_INTERPROCESS CUDA_ERROR_INVALID_HANDLE (HIP's mirror of CUDA's
 * rule); a second context of one device opening a handle
 * CUDA_ERROR_ALREADY_MAPPED; cuIpcCloseMemHandle synchronizes its context
 * first, as cuMemFree may. test/test_gpu_ipc.c prints the real driver's
 * answers to the first ones. Measured there (H200, driver 580.159.04,
 * 2026-12-04): an import in the exporting process is
 * CUDA_ERROR_INVALID_CONTEXT for memory and events, as here; a stale handle
 * (its memory freed before the other process opened it) is CUDA_SUCCESS on
 * the driver, a mapping of memory nobody owns. The fake refuses it with
 * CUDA_ERROR_INVALID_VALUE on purpose, stricter than the driver: the one
 * difference of this file, named in fake.h. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake_event.h"
#include "fake_memory_records.h"

/* --- the handles' bytes ------------------------------------------------------------- */

#define MEM_MAGIC "cusfkIPM"
#define EVENT_MAGIC "cusfkIPE"

typedef struct wire {
    char magic[8];
    uint32_t pid; /* the exporting process; 0: another's (as_foreign) */
    uint32_t spare;
    uint64_t generation; /* fake_g.generation at the export */
    uint64_t id;         /* the record's fake_handle id */
    uint64_t key;        /* its address: the allocation's base, the event's handle */
    uint64_t size;       /* memory: the allocation's size */
} wire;
_Static_assert(sizeof(wire) <= CU_IPC_HANDLE_SIZE, "a handle holds the wire");

static void wire_write(char *reserved, const char *magic, uint64_t id, uint64_t key, uint64_t size)
{
    wire w;
    memset(&w, 0, sizeof w);
    memcpy(w.magic, magic, sizeof w.magic);
    w.pid = (uint32_t)getpid();
    w.generation = fake_g.generation;
    w.id = id;
    w.key = key;
    w.size = size;
    memset(reserved, 0, CU_IPC_HANDLE_SIZE);
    memcpy(reserved, &w, sizeof w);
}

static bool wire_read(const char *reserved, const char *magic, wire *w)
{
    memcpy(w, reserved, sizeof *w);
    return memcmp(w->magic, magic, sizeof w->magic) == 0;
}

/* The open's checks of a handle's bytes: CUDA_SUCCESS when they name a record
 * of this install exported by another process. */
static CUresult wire_openable_locked(const char *reserved, const char *magic, wire *w)
{
    if (!wire_read(reserved, magic, w) || w->generation != fake_g.generation)
        return CUDA_ERROR_INVALID_VALUE;
    if (w->pid == (uint32_t)getpid())
        return CUDA_ERROR_INVALID_CONTEXT;
    return CUDA_SUCCESS;
}

static cus_status as_foreign(char *reserved, const char *magic)
{
    wire w;
    if (!wire_read(reserved, magic, &w))
        return CUS_ERROR_INVALID_ARGUMENT;
    w.pid = 0;
    memcpy(reserved, &w, sizeof w);
    return CUS_SUCCESS;
}

CUS_API cus_status cus_fake_ipc_mem_handle_as_foreign(CUipcMemHandle *handle)
{
    return handle ? as_foreign(handle->reserved, MEM_MAGIC) : CUS_ERROR_INVALID_ARGUMENT;
}

CUS_API cus_status cus_fake_ipc_event_handle_as_foreign(CUipcEventHandle *handle)
{
    return handle ? as_foreign(handle->reserved, EVENT_MAGIC) : CUS_ERROR_INVALID_ARGUMENT;
}

/* --- mappings ----------------------------------------------------------------------- */

/* What cuIpcOpenMemHandle made in a context: a registered handle (so a
 * mapping never closed is a live handle at teardown), counting its opens. */
typedef struct mapping {
    fake_handle h; /* kind IPC_MAPPING */
    struct CUctx_st *ctx;
    fake_mem *mem;
    uintptr_t base;
    unsigned long opens;
    unsigned long doomed;
} mapping;

static mapping **mappings; /* every mapping since install */
static size_t mapping_count, mapping_capacity;

static void ipc_reset_locked(const cus_fake_config *cfg)
{
    (void)cfg;
    free(mappings); /* the registry frees the records */
    mappings = NULL;
    mapping_count = mapping_capacity = 0;
}

static void ipc_doom_locked(struct CUctx_st *c, unsigned long ticket)
{
    for (size_t i = 0; i < mapping_count; i++)
        if (mappings[i]->ctx == c && mappings[i]->h.state == FAKE_LIVE)
            mappings[i]->doomed = ticket;
}

/* A context's destruction closes its mappings, as the driver unmaps them. */
static void ipc_destroy_doomed_locked(struct CUctx_st *c, unsigned long ticket)
{
    (void)c;
    for (size_t i = 0; i < mapping_count; i++)
        if (mappings[i]->doomed == ticket && mappings[i]->h.state == FAKE_LIVE)
            fake_handle_set_state_locked(&mappings[i]->h, FAKE_DESTROYED);
}

static const fake_area ipc_area = {
    .name = "ipc",
    .reset_order = 30,
    .teardown_order = 5, /* before the memory it maps */
    .reset_locked = ipc_reset_locked,
    .doom_locked = ipc_doom_locked,
    .destroy_doomed_locked = ipc_destroy_doomed_locked,
};
FAKE_AREA(ipc_area)

static mapping *live_mapping_locked(const fake_mem *m, CUdevice device, bool same_ctx,
                                    const struct CUctx_st *c)
{
    for (size_t i = 0; i < mapping_count; i++) {
        mapping *x = mappings[i];
        if (x->h.state != FAKE_LIVE || x->mem != m)
            continue;
        if (same_ctx ? x->ctx == c : (x->ctx != c && x->ctx->device == device))
            return x;
    }
    return NULL;
}

static bool reserve_mapping_slot_locked(void)
{
    if (mapping_count < mapping_capacity)
        return true;
    size_t cap = mapping_capacity ? mapping_capacity * 2 : 16;
    mapping **list = realloc(mappings, cap * sizeof *list);
    if (!list)
        return false;
    mappings = list;
    mapping_capacity = cap;
    return true;
}

/* --- memory ------------------------------------------------------------------------- */

CUresult CUDAAPI fake_cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr)
{
    FAKE_ENTER(cuIpcGetMemHandle);
    if (!pHandle)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    GET_CURRENT(c);
    (void)c;
    /* The base of a live cuMemAlloc allocation, and nothing else. */
    fake_handle *h = fake_handle_find_locked((uintptr_t)dptr);
    fake_mem *m = h && h->kind == CUS_FAKE_HANDLE_DEVICE_MEMORY ? (fake_mem *)h : NULL;
    if (!m || m->h.state != FAKE_LIVE || m->async || m->graph)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    if (m->ctx->sticky != CUDA_SUCCESS)
        return fake_leave(m->ctx->sticky);
    wire_write(pHandle->reserved, MEM_MAGIC, m->h.id, m->base, m->size);
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle,
                                         unsigned int Flags)
{
    FAKE_ENTER(cuIpcOpenMemHandle);
    if (!pdptr || (Flags & ~(unsigned int)CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS))
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    GET_CURRENT(c);
    wire w;
    CUresult r = wire_openable_locked(handle.reserved, MEM_MAGIC, &w);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    fake_handle *h = fake_handle_find_locked((uintptr_t)w.key);
    fake_mem *m = h && h->kind == CUS_FAKE_HANDLE_DEVICE_MEMORY ? (fake_mem *)h : NULL;
    if (!m || m->h.id != w.id || m->h.state != FAKE_LIVE)
        return fake_leave(CUDA_ERROR_INVALID_VALUE); /* freed since: stale */
    /* Every pair of fake devices are peers (cuDeviceCanAccessPeer), so any
     * device may map it. */
    mapping *x = live_mapping_locked(m, c->device, true, c);
    if (x) {
        x->opens++;
        *pdptr = (CUdeviceptr)x->base;
        return fake_leave(CUDA_SUCCESS);
    }
    if (live_mapping_locked(m, c->device, false, c))
        return fake_leave(CUDA_ERROR_ALREADY_MAPPED);
    if (!reserve_mapping_slot_locked())
        return fake_leave(CUDA_ERROR_OUT_OF_MEMORY);
    x = fake_handle_new_locked(CUS_FAKE_HANDLE_IPC_MAPPING, sizeof *x, 0);
    if (!x)
        return fake_leave(CUDA_ERROR_OUT_OF_MEMORY);
    x->ctx = c;
    x->mem = m;
    x->base = m->base;
    x->opens = 1;
    mappings[mapping_count++] = x;
    *pdptr = (CUdeviceptr)x->base;
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuIpcCloseMemHandle(CUdeviceptr dptr)
{
    FAKE_ENTER(cuIpcCloseMemHandle);
    GET_CURRENT(c);
    mapping *x = NULL;
    for (size_t i = 0; i < mapping_count && !x; i++)
        if (mappings[i]->h.state == FAKE_LIVE && mappings[i]->ctx == c &&
            mappings[i]->base == (uintptr_t)dptr)
            x = mappings[i];
    if (!x) {
        fake_misuse_locked("cuIpcCloseMemHandle of 0x%" PRIxPTR
                           ", which cuIpcOpenMemHandle did not open in the current context",
                           (uintptr_t)dptr);
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    }
    fake_context_synchronize_locked(c); /* the work that may use it (see the top) */
    if (x->h.state != FAKE_LIVE || x->opens == 0) /* closed meanwhile by another thread */
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    if (c->sticky != CUDA_SUCCESS)
        return fake_leave(c->sticky);
    if (--x->opens == 0)
        fake_handle_set_state_locked(&x->h, FAKE_DESTROYED);
    return fake_leave(CUDA_SUCCESS);
}

/* --- events ------------------------------------------------------------------------- */

#define IPC_EVENT_FLAGS (CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING)

CUresult CUDAAPI fake_cuIpcGetEventHandle(CUipcEventHandle *pHandle, CUevent event)
{
    FAKE_ENTER(cuIpcGetEventHandle);
    /* The H200's order (test/rules/expected.txt): a current context first, a
     * NULL event is CUDA_ERROR_INVALID_VALUE, and an event whose context was
     * destroyed CUDA_ERROR_INVALID_HANDLE. */
    GET_CURRENT(c);
    (void)c;
    if (!event)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    struct CUevent_st *e = NULL;
    CUresult r = fake_event_arg_locked(event, &e);
    if (r == CUDA_ERROR_CONTEXT_IS_DESTROYED)
        r = CUDA_ERROR_INVALID_HANDLE;
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (!pHandle)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    if ((e->flags & IPC_EVENT_FLAGS) != IPC_EVENT_FLAGS)
        return fake_leave(CUDA_ERROR_INVALID_HANDLE);
    wire_write(pHandle->reserved, EVENT_MAGIC, e->h.id, (uint64_t)(uintptr_t)e, 0);
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuIpcOpenEventHandle(CUevent *phEvent, CUipcEventHandle handle)
{
    FAKE_ENTER(cuIpcOpenEventHandle);
    if (!phEvent)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    GET_CURRENT(c);
    wire w;
    /* Bytes that are no event's handle: CUDA_ERROR_MAP_FAILED on the H200
     * (its table, the zero handle) */
    if (!wire_read(handle.reserved, EVENT_MAGIC, &w))
        return fake_leave(CUDA_ERROR_MAP_FAILED);
    CUresult r = wire_openable_locked(handle.reserved, EVENT_MAGIC, &w);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    fake_handle *h = fake_handle_find_locked((uintptr_t)w.key);
    if (!h || h->kind != CUS_FAKE_HANDLE_EVENT || h->id != w.id || h->state != FAKE_LIVE)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    struct CUevent_st *e = NULL;
    r = fake_event_new_locked(c, IPC_EVENT_FLAGS, &e);
    if (r == CUDA_SUCCESS)
        *phEvent = e;
    return fake_leave(r);
}
