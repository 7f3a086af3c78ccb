/* Memory: device, pinned host, managed and stream-ordered allocations, host
 * registrations, copies and memsets (synchronous and queued), pointer
 * attributes, prefetch and advice, and peer access.
 *
 * Every allocation is a host block whose address is the CUdeviceptr (and the
 * host pointer, for pinned and managed memory), registered under that address
 * and kept in `allocs`, sorted by address, for range lookups. Blocks are never
 * returned before the next install, so an address is never reused: a freed
 * block stays, quarantined (a large one, mmap()ed, loses its pages and becomes
 * PROT_NONE; a small one is poisoned under AddressSanitizer), and any later
 * use of it is reported as use after free. Host registrations cover memory the
 * caller owns; the live ones are kept sorted in `regs`.
 *
 * Checks happen twice: when a call is made (bounds, and the memory live), and
 * when a queued operation executes (the memory still live, and a
 * cuMemAllocAsync block inside its stream-ordered lifetime); a launch's
 * pointer-sized arguments are checked at execution too (fake_module.c).
 *
 * A cuMemAllocAsync during stream capture makes a graph allocation: a block
 * like the others, registered at the capture under its fixed address, which
 * each launch's allocation node makes usable (valid) and a free makes
 * unusable again, held by the graph bodies that allocate it and released
 * once none does, no launch left it allocated and no allocation or free of it
 * is queued (fake_graph.c keeps the launch rules). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fake_memory.h"

#if defined(__SANITIZE_ADDRESS__)
#define FAKE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FAKE_ASAN 1
#endif
#endif
#ifdef FAKE_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* From this size on, blocks are mmap()ed (lazily backed, and their pages
 * given back when freed); below it they come from the heap. */
#define MMAP_THRESHOLD ((size_t)1 << 20)
#define HEAP_ALIGNMENT 256 /* cuMemAlloc's guarantee */

struct fake_mem {
    fake_handle h; /* DEVICE_MEMORY, HOST_MEMORY, MANAGED_MEMORY or HOST_REGISTRATION */
    uintptr_t base;
    size_t size;           /* as requested */
    struct CUctx_st *ctx;  /* the owner (allocating or registering context) */
    CUdevice device;
    unsigned int flags;    /* cuMemHostAlloc, cuMemHostRegister or attach flags */
    bool async;            /* cuMemAllocAsync */
    bool valid;            /* async: its allocation executed */
    bool free_queued;      /* a cuMemFreeAsync of it is queued */
    bool ctx_destroyed;    /* freed by its context's destruction */
    bool mapped;           /* the block is mmap()ed */
    bool global;           /* a module global: unregistered, uncounted, freed with its module */
    size_t length;         /* of the block */
    unsigned long doomed;
    /* A graph allocation (async too): the bodies holding it, whether a launch
     * left it allocated with no free queued since, and its queued ALLOC and
     * FREE operations. */
    bool graph;
    bool outstanding;
    unsigned long holds, pending;
};

typedef struct peer_link {
    struct CUctx_st *from, *to; /* from may access to's memory */
    unsigned long doomed;
} peer_link;

static fake_mem **allocs; /* every allocation since install, by address */
static size_t alloc_count, alloc_capacity;
static fake_mem **regs; /* live registrations, by address */
static size_t reg_count, reg_capacity;
static peer_link *links;
static size_t link_count, link_capacity;
static size_t in_use[CUS_FAKE_MAX_DEVICES];

/* --- sorted arrays ----------------------------------------------------------------------- */

static bool reserve(fake_mem ***a, size_t count, size_t *capacity)
{
    if (count < *capacity)
        return true;
    size_t cap = *capacity ? *capacity * 2 : 64;
    fake_mem **list = realloc(*a, cap * sizeof *list);
    if (!list)
        return false;
    *a = list;
    *capacity = cap;
    return true;
}

/* The index of the first entry whose base is above addr. */
static size_t upper_bound(fake_mem *const *a, size_t n, uintptr_t addr)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a[mid]->base <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static fake_mem *containing(fake_mem *const *a, size_t n, uintptr_t addr)
{
    size_t i = upper_bound(a, n, addr);
    if (i == 0)
        return NULL;
    fake_mem *m = a[i - 1];
    return addr - m->base < m->size ? m : NULL;
}

/* Whether [addr, addr + n) meets an entry; returns the first one it meets. */
static fake_mem *overlapping(fake_mem *const *a, size_t count, uintptr_t addr, size_t n)
{
    size_t i = upper_bound(a, count, addr);
    if (i > 0 && addr - a[i - 1]->base < a[i - 1]->size)
        return a[i - 1];
    if (i < count && a[i]->base - addr < n)
        return a[i];
    return NULL;
}

static void insert_sorted(fake_mem **a, size_t *count, fake_mem *m)
{
    size_t i = upper_bound(a, *count, m->base);
    memmove(&a[i + 1], &a[i], (*count - i) * sizeof *a);
    a[i] = m;
    (*count)++;
}

static void remove_sorted(fake_mem **a, size_t *count, const fake_mem *m)
{
    for (size_t i = upper_bound(a, *count, m->base); i-- > 0;) {
        if (a[i] == m) {
            memmove(&a[i], &a[i + 1], (*count - i - 1) * sizeof *a);
            (*count)--;
            return;
        }
        if (a[i]->base != m->base)
            return;
    }
}

/* --- blocks ------------------------------------------------------------------------------ */

static bool is_alloc_kind(cus_fake_handle_kind k)
{
    return k == CUS_FAKE_HANDLE_DEVICE_MEMORY || k == CUS_FAKE_HANDLE_HOST_MEMORY ||
           k == CUS_FAKE_HANDLE_MANAGED_MEMORY;
}

static const char *noun(const fake_mem *m)
{
    return fake_kind_noun(m->h.kind);
}

/* A new live allocation of `size` bytes for context c. CUDA_ERROR_OUT_OF_MEMORY
 * when the host has no room for it (the device budget is checked by callers).
 * A module global (`global`) is device memory without a registry entry. */
static CUresult allocate_block_locked(cus_fake_handle_kind kind, size_t size, struct CUctx_st *c,
                                      unsigned int flags, bool global, fake_mem **out)
{
    if (!reserve(&allocs, alloc_count, &alloc_capacity))
        return CUDA_ERROR_OUT_OF_MEMORY;
    void *p = NULL;
    size_t length;
    bool mapped = size >= MMAP_THRESHOLD;
    if (mapped) {
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        if (size > SIZE_MAX - page)
            return CUDA_ERROR_OUT_OF_MEMORY;
        length = (size + page - 1) / page * page;
        p = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
        if (p == MAP_FAILED)
            return CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        length = (size + HEAP_ALIGNMENT - 1) / HEAP_ALIGNMENT * HEAP_ALIGNMENT;
        if (posix_memalign(&p, HEAP_ALIGNMENT, length) != 0)
            return CUDA_ERROR_OUT_OF_MEMORY;
    }
    fake_mem *m = global ? calloc(1, sizeof *m) : fake_handle_new_locked(kind, sizeof *m, (uintptr_t)p);
    if (m && global) { /* as the registry would set it up, without counting it */
        m->h.kind = kind;
        m->h.state = FAKE_LIVE;
        m->h.key = (uintptr_t)p;
        m->global = true;
    }
    if (!m) {
        if (mapped)
            munmap(p, length);
        else
            free(p);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    m->base = (uintptr_t)p;
    m->size = size;
    m->ctx = c;
    m->device = c->device;
    m->flags = flags;
    m->mapped = mapped;
    m->length = length;
    insert_sorted(allocs, &alloc_count, m);
    if (kind == CUS_FAKE_HANDLE_DEVICE_MEMORY && !global)
        in_use[c->device] += size;
    *out = m;
    return CUDA_SUCCESS;
}

static CUresult allocate_locked(cus_fake_handle_kind kind, size_t size, struct CUctx_st *c,
                                unsigned int flags, fake_mem **out)
{
    return allocate_block_locked(kind, size, c, flags, false, out);
}

/* Frees an allocation: it stops counting, and its block is quarantined. */
static void release_locked(fake_mem *m)
{
    if (m->global) {
        m->h.state = FAKE_DESTROYED; /* never counted: no registry entry */
    } else {
        if (m->h.kind == CUS_FAKE_HANDLE_DEVICE_MEMORY)
            in_use[m->device] -= m->size;
        fake_handle_set_state_locked(&m->h, FAKE_DESTROYED);
    }
    if (m->mapped) {
        (void)madvise((void *)m->base, m->length, MADV_DONTNEED);
        (void)mprotect((void *)m->base, m->length, PROT_NONE);
    } else {
        POISON((void *)m->base, m->length);
    }
}

/* The budget left on c's device for `size` more bytes of device memory. */
static bool fits_locked(const struct CUctx_st *c, size_t size)
{
    size_t total = fake_dev.devices[c->device].total_memory;
    return in_use[c->device] <= total && size <= total - in_use[c->device];
}

static void memory_reset_locked(const cus_fake_config *cfg)
{
    (void)cfg;
    for (size_t i = 0; i < alloc_count; i++) {
        fake_mem *m = allocs[i];
        if (m->mapped) {
            munmap((void *)m->base, m->length);
        } else {
            UNPOISON((void *)m->base, m->length);
            free((void *)m->base);
        }
        if (m->global)
            free(m); /* the registry frees the others */
    }
    free(allocs);
    allocs = NULL;
    alloc_count = alloc_capacity = 0;
    free(regs);
    regs = NULL;
    reg_count = reg_capacity = 0;
    free(links);
    links = NULL;
    link_count = link_capacity = 0;
    memset(in_use, 0, sizeof in_use);
}

/* --- teardown -------------------------------------------------------------------------------- */

static void memory_doom_locked(struct CUctx_st *c, unsigned long ticket)
{
    for (size_t i = 0; i < alloc_count; i++)
        if (allocs[i]->ctx == c && allocs[i]->h.state == FAKE_LIVE && !allocs[i]->global)
            allocs[i]->doomed = ticket; /* globals go with their module */
    for (size_t i = 0; i < reg_count; i++)
        if (regs[i]->ctx == c)
            regs[i]->doomed = ticket;
    for (size_t i = 0; i < link_count; i++)
        if (links[i].from == c || links[i].to == c)
            links[i].doomed = ticket;
}

static void memory_destroy_doomed_locked(struct CUctx_st *c, unsigned long ticket)
{
    (void)c;
    /* cuMemAllocAsync memory too, unlike the driver (whose pools are not
     * owned by a context): a test sees nothing outlive its context. */
    for (size_t i = 0; i < alloc_count; i++) {
        fake_mem *m = allocs[i];
        if (m->doomed == ticket && m->h.state == FAKE_LIVE) {
            m->ctx_destroyed = true;
            release_locked(m);
        }
    }
    for (size_t i = reg_count; i-- > 0;) {
        fake_mem *r = regs[i];
        if (r->doomed == ticket) {
            r->ctx_destroyed = true;
            fake_handle_set_state_locked(&r->h, FAKE_DESTROYED);
            memmove(&regs[i], &regs[i + 1], (reg_count - i - 1) * sizeof *regs);
            reg_count--;
        }
    }
    size_t k = 0;
    for (size_t i = 0; i < link_count; i++)
        if (links[i].doomed != ticket)
            links[k++] = links[i];
    link_count = k;
}

/* --- range checks ------------------------------------------------------------------------------ */

typedef enum side {
    SIDE_DEVICE, /* must be fake memory: allocated, or registered */
    SIDE_HOST,   /* host memory: checked if pinned, managed or registered */
    SIDE_ANY,    /* cuMemcpy: either */
} side;

/* Reports the use of a dead allocation. */
static void report_dead_locked(const fake_mem *m, uintptr_t addr, const char *what,
                               const char *by)
{
    if (m->global)
        fake_misuse_locked("use after free of module global 0x%" PRIxPTR " (%s), gone with its "
                           "module's unload%s%s%s",
                           addr, what, m->ctx_destroyed ? " (with its context)" : "",
                           by ? ", by " : "", by ? by : "");
    else if (m->graph)
        fake_misuse_locked("graph allocation 0x%" PRIxPTR " (%s) used after it was released "
                           "(its graph and executable graphs gone%s, and no launch holding it)%s%s",
                           addr, what, m->ctx_destroyed ? ", or its context" : "",
                           by ? ", by " : "", by ? by : "");
    else if (m->async)
        fake_misuse_locked("%s 0x%" PRIxPTR " (%s) used outside its stream-ordered lifetime: "
                           "its cuMemFreeAsync%s already executed%s%s",
                           noun(m), addr, what, m->ctx_destroyed ? " or its context's death" : "",
                           by ? ", by " : "", by ? by : "");
    else
        fake_misuse_locked("use after free of %s 0x%" PRIxPTR " (%s), %s%s%s", noun(m), addr,
                           what,
                           m->ctx_destroyed ? "freed with its context"
                           : m->h.kind == CUS_FAKE_HANDLE_HOST_MEMORY ? "freed by cuMemFreeHost"
                                                                      : "freed by cuMemFree",
                           by ? ", by " : "", by ? by : "");
}

/* Checks [addr, addr + n) at call time. *ref: the allocation to check again at
 * execution (NULL for unchecked host memory and registrations); *owner: the
 * allocation or registration holding the range, if any. */
static CUresult range_locked(uintptr_t addr, size_t n, side sd, const char *what, fake_mem **ref,
                             fake_mem **owner)
{
    fake_mem *dummy;
    if (!owner)
        owner = &dummy;
    *ref = *owner = NULL;
    if (addr == 0) {
        fake_misuse_locked("NULL pointer as %s", what);
        return CUDA_ERROR_INVALID_VALUE;
    }
    fake_mem *m = containing(allocs, alloc_count, addr);
    if (m) {
        if (m->h.state != FAKE_LIVE) {
            report_dead_locked(m, addr, what, NULL);
            return CUDA_ERROR_INVALID_VALUE;
        }
        if (sd == SIDE_HOST && m->h.kind == CUS_FAKE_HANDLE_DEVICE_MEMORY) {
            fake_misuse_locked("device memory 0x%" PRIxPTR " passed as a host pointer (%s)", addr,
                               what);
            return CUDA_ERROR_INVALID_VALUE;
        }
        if (n > m->size - (addr - m->base)) {
            fake_misuse_locked("%s range 0x%" PRIxPTR "+%zu overruns the %zu-byte %s at 0x%" PRIxPTR,
                               what, addr, n, m->size, noun(m), m->base);
            return CUDA_ERROR_INVALID_VALUE;
        }
        *ref = *owner = m;
        return CUDA_SUCCESS;
    }
    fake_mem *r = containing(regs, reg_count, addr);
    if (r) {
        if (n > r->size - (addr - r->base)) {
            fake_misuse_locked("%s range 0x%" PRIxPTR "+%zu overruns the %zu-byte host "
                               "registration at 0x%" PRIxPTR,
                               what, addr, n, r->size, r->base);
            return CUDA_ERROR_INVALID_VALUE;
        }
        *owner = r;
        return CUDA_SUCCESS;
    }
    if (sd == SIDE_DEVICE) {
        size_t i = upper_bound(allocs, alloc_count, addr);
        const fake_mem *below = i ? allocs[i - 1] : NULL;
        if (below && addr - below->base < below->length)
            fake_misuse_locked("%s 0x%" PRIxPTR " lies %zu bytes past the end of the %zu-byte "
                               "%s at 0x%" PRIxPTR,
                               what, addr, (size_t)(addr - below->base) - below->size, below->size,
                               noun(below), below->base);
        else
            fake_misuse_locked("%s 0x%" PRIxPTR " is not device memory (not allocated or "
                               "registered through the fake)",
                               what, addr);
        return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS; /* pageable host memory: the caller's business */
}

/* At execution: whether a referenced allocation may still be used. */
static bool usable_locked(const fake_mem *m, uintptr_t addr, const char *what, const fake_op *op)
{
    bool dead = m && m->h.state != FAKE_LIVE;
    bool early = m && !dead && m->async && !m->valid;
    if (!dead && !early)
        return true;
    char by[128];
    snprintf(by, sizeof by, "%s queued on stream 0x%" PRIxPTR, op->call ? op->call : "a call",
             op->stream && !op->stream->is_default ? (uintptr_t)op->stream : (uintptr_t)0);
    if (dead)
        report_dead_locked(m, addr, what, by);
    else if (m->graph)
        fake_misuse_locked("graph allocation 0x%" PRIxPTR " (%s) used outside its lifetime: no "
                           "graph launch's allocation node ran for it, or it was freed since, "
                           "by %s",
                           addr, what, by);
    else
        fake_misuse_locked("%s 0x%" PRIxPTR " (%s) used outside its stream-ordered lifetime: "
                           "its cuMemAllocAsync has not executed yet, by %s",
                           noun(m), addr, what, by);
    return false;
}

bool fake_memory_pointer_usable_locked(uintptr_t addr, const char *what, const fake_op *op)
{
    const fake_mem *m = containing(allocs, alloc_count, addr);
    /* Freed memory, and graph memory outside its lifetime; a plain
     * stream-ordered block used early is the stream order's business. */
    if (!m || (m->h.state == FAKE_LIVE && (!m->graph || m->valid)))
        return true;
    return usable_locked(m, addr, what, op);
}

/* --- graph allocations ------------------------------------------------------------------------ */

static void graph_retire_locked(fake_mem *m)
{
    if (m->graph && m->h.state == FAKE_LIVE && !m->holds && !m->outstanding && !m->pending)
        release_locked(m);
}

bool fake_memory_is_graph_alloc(const fake_mem *m)
{
    return m->graph && m->h.state == FAKE_LIVE;
}

void fake_memory_graph_hold_locked(fake_mem *m)
{
    m->holds++;
}

void fake_memory_graph_drop_locked(fake_mem *m)
{
    if (m->holds)
        m->holds--;
    graph_retire_locked(m);
}

bool fake_memory_graph_outstanding(const fake_mem *m)
{
    return m->outstanding;
}

void fake_memory_graph_set_outstanding_locked(fake_mem *m, bool outstanding)
{
    m->outstanding = outstanding;
    graph_retire_locked(m);
}

void fake_memory_graph_op_queued_locked(fake_mem *m)
{
    m->pending++;
}

void fake_memory_operand_kind(const fake_mem *m, CUdevice *device, bool *on_device)
{
    *on_device = m && m->h.kind != CUS_FAKE_HANDLE_HOST_MEMORY;
    *device = m ? m->device : -1;
}

static CUresult memory_execute_locked(const fake_op *op)
{
    switch (op->kind) {
    case FAKE_OP_COPY:
        if (!usable_locked(op->u.copy.dst_mem, op->u.copy.dst, "destination", op) ||
            !usable_locked(op->u.copy.src_mem, op->u.copy.src, "source", op))
            return CUDA_ERROR_INVALID_VALUE;
        memmove((void *)op->u.copy.dst, (const void *)op->u.copy.src, op->u.copy.n);
        return CUDA_SUCCESS;
    case FAKE_OP_MEMSET: {
        if (!usable_locked(op->u.memset.mem, op->u.memset.dst, "destination", op))
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
    case FAKE_OP_ALLOC:
        if (op->u.mem.mem->graph && op->u.mem.mem->pending)
            op->u.mem.mem->pending--;
        if (op->u.mem.mem->h.state == FAKE_LIVE)
            op->u.mem.mem->valid = true;
        return CUDA_SUCCESS;
    case FAKE_OP_FREE: {
        fake_mem *m = op->u.mem.mem;
        if (m->graph) { /* the block stays for the next launch, unless nothing holds it */
            if (m->pending)
                m->pending--;
            m->valid = false;
            graph_retire_locked(m);
            return CUDA_SUCCESS;
        }
        if (m->h.state == FAKE_LIVE) /* else gone with its context */
            release_locked(m);
        return CUDA_SUCCESS;
    }
    case FAKE_OP_PREFETCH:
        return usable_locked(op->u.mem.mem, op->u.mem.mem->base, "prefetch range", op)
                   ? CUDA_SUCCESS
                   : CUDA_ERROR_INVALID_VALUE;
    case FAKE_OP_HOST_FN:
    case FAKE_OP_RECORD:
    case FAKE_OP_WAIT:
    case FAKE_OP_LAUNCH:
        break;
    }
    return CUDA_SUCCESS;
}

/* --- helpers for the entry points ------------------------------------------------------------ */

#define GET_CURRENT(c)                                                         \
    struct CUctx_st *c = NULL;                                                 \
    do {                                                                       \
        CUresult cur_r_ = fake_current_context_locked(&c);                     \
        if (cur_r_ != CUDA_SUCCESS)                                            \
            return fake_leave(cur_r_);                                         \
    } while (0)

/* For the frees, which work on a poisoned context too. */
#define NEED_CURRENT()                                                         \
    do {                                                                       \
        struct CUctx_st *cur_c_ = NULL;                                        \
        CUresult cur_r_ = fake_current_context_any_locked(&cur_c_);            \
        if (cur_r_ != CUDA_SUCCESS)                                            \
            return fake_leave(cur_r_);                                         \
    } while (0)

/* The allocation that starts at p, in any state; NULL (and a misuse) if p is
 * not the start of one. */
static fake_mem *alloc_at_locked(uintptr_t p, const char *call)
{
    fake_handle *h = fake_handle_find_locked(p);
    if (h && is_alloc_kind(h->kind))
        return (fake_mem *)h;
    const fake_mem *m = containing(allocs, alloc_count, p);
    if (m && m->global)
        fake_misuse_locked("%s of 0x%" PRIxPTR ", in the %zu-byte module global at 0x%" PRIxPTR
                           " (it lives as long as its module)",
                           call, p, m->size, m->base);
    else if (m)
        fake_misuse_locked("%s of 0x%" PRIxPTR ", inside the %zu-byte %s at 0x%" PRIxPTR
                           " but not its start",
                           call, p, m->size, noun(m), m->base);
    else
        fake_misuse_locked("%s of 0x%" PRIxPTR ", which the fake never allocated", call, p);
    return NULL;
}

/* The double-free checks of the frees. */
static bool freeable_locked(const fake_mem *m, const char *call)
{
    if (m->h.state != FAKE_LIVE) {
        fake_misuse_locked("double free: %s of %s 0x%" PRIxPTR ", already freed%s", call, noun(m),
                           m->base, m->ctx_destroyed ? " with its context" : "");
        return false;
    }
    if (m->free_queued) {
        fake_misuse_locked("double free: %s of %s 0x%" PRIxPTR ", whose cuMemFreeAsync is "
                           "already queued",
                           call, noun(m), m->base);
        return false;
    }
    return true;
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

static bool device_ok(int dev)
{
    const fake_device *d = fake_device_at_locked(dev);
    return d && d->attributes[CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS];
}

/* A prefetch or advice range: inside one live managed allocation. Pageable
 * memory is refused, as on a device without PAGEABLE_MEMORY_ACCESS. */
static CUresult managed_range_locked(uintptr_t p, size_t n, const char *what, fake_mem **out)
{
    fake_mem *m = containing(allocs, alloc_count, p);
    if (!m)
        return CUDA_ERROR_INVALID_VALUE;
    if (m->h.state != FAKE_LIVE) {
        report_dead_locked(m, p, what, NULL);
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

/* --- allocation -------------------------------------------------------------------------------- */

CUresult CUDAAPI fake_cuMemGetInfo(size_t *free_bytes, size_t *total)
{
    FAKE_ENTER(cuMemGetInfo);
    if (!free_bytes || !total)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    GET_CURRENT(c);
    size_t t = fake_dev.devices[c->device].total_memory;
    *total = t;
    *free_bytes = in_use[c->device] < t ? t - in_use[c->device] : 0;
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuMemAlloc(CUdeviceptr *dptr, size_t bytesize)
{
    FAKE_ENTER(cuMemAlloc);
    if (!dptr || bytesize == 0) /* documented: 0 is CUDA_ERROR_INVALID_VALUE */
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    GET_CURRENT(c);
    if (!fits_locked(c, bytesize))
        return fake_leave(CUDA_ERROR_OUT_OF_MEMORY);
    fake_mem *m = NULL;
    CUresult r = allocate_locked(CUS_FAKE_HANDLE_DEVICE_MEMORY, bytesize, c, 0, &m);
    if (r == CUDA_SUCCESS)
        *dptr = (CUdeviceptr)m->base;
    return fake_leave(r);
}

CUresult CUDAAPI fake_cuMemFree(CUdeviceptr dptr)
{
    FAKE_ENTER(cuMemFree);
    NEED_CURRENT();
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
    if (m->graph) {
        /* Only what a launch left allocated, after that launch. */
        if (!graph_freeable_locked(m, "cuMemFree"))
            return fake_leave(CUDA_ERROR_INVALID_VALUE);
        fake_context_synchronize_locked(m->ctx);
        if (!freeable_locked(m, "cuMemFree") || !graph_freeable_locked(m, "cuMemFree"))
            return fake_leave(CUDA_ERROR_INVALID_VALUE);
        m->valid = false;
        m->outstanding = false;
        graph_retire_locked(m);
        return fake_leave(CUDA_SUCCESS);
    }
    if (!m->async) {
        /* "may perform implicit synchronization": the owner's queued work
         * (which may use the block) runs first; not for stream-ordered
         * blocks, as documented. */
        fake_context_synchronize_locked(m->ctx);
        if (!freeable_locked(m, "cuMemFree")) /* freed meanwhile by another thread */
            return fake_leave(CUDA_ERROR_INVALID_VALUE);
    }
    release_locked(m);
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
    if (!fits_locked(c, bytesize))
        return fake_leave(CUDA_ERROR_OUT_OF_MEMORY);
    fake_mem *m = NULL;
    r = allocate_locked(CUS_FAKE_HANDLE_DEVICE_MEMORY, bytesize, c, 0, &m);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    m->async = true;
    m->graph = s->capture != NULL; /* captured: an allocation node's (fake_graph.c) */
    fake_op op = {.kind = FAKE_OP_ALLOC, .u.mem = {m}};
    r = fake_stream_enqueue_locked(s, &op, NULL, 0);
    if (r != CUDA_SUCCESS) {
        m->graph = false;
        release_locked(m); /* never handed out */
        return fake_leave(r);
    }
    *dptr = (CUdeviceptr)m->base;
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    FAKE_ENTER(cuMemFreeAsync);
    struct CUstream_st *s = NULL;
    CUresult r = fake_stream_arg_any_locked(hStream, &s); /* frees work on a poisoned context */
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    fake_mem *m = alloc_at_locked((uintptr_t)dptr, "cuMemFreeAsync");
    if (!m)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    if (m->h.kind != CUS_FAKE_HANDLE_DEVICE_MEMORY) {
        fake_misuse_locked("cuMemFreeAsync of %s 0x%" PRIxPTR " (only device memory is freed in "
                           "stream order)",
                           noun(m), m->base);
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
    if (!freeable_locked(m, "cuMemFreeAsync"))
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
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
    r = allocate_locked(CUS_FAKE_HANDLE_HOST_MEMORY, bytesize, c, flags, &m);
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
    NEED_CURRENT();
    if (!p)
        return fake_leave(CUDA_SUCCESS);
    fake_mem *m = alloc_at_locked((uintptr_t)p, "cuMemFreeHost");
    if (!m)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    if (m->h.kind != CUS_FAKE_HANDLE_HOST_MEMORY) {
        fake_misuse_locked("cuMemFreeHost of %s 0x%" PRIxPTR " (it is freed with cuMemFree)",
                           noun(m), m->base);
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    }
    if (!freeable_locked(m, "cuMemFreeHost"))
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    fake_context_synchronize_locked(m->ctx);
    if (!freeable_locked(m, "cuMemFreeHost"))
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    release_locked(m);
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
    CUresult r = allocate_locked(CUS_FAKE_HANDLE_MANAGED_MEMORY, bytesize, c, flags, &m);
    if (r == CUDA_SUCCESS)
        *dptr = (CUdeviceptr)m->base;
    return fake_leave(r);
}

/* --- host registration ------------------------------------------------------------------------- */

CUresult CUDAAPI fake_cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags)
{
    FAKE_ENTER(cuMemHostRegister);
    const unsigned int known = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
                               CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY;
    uintptr_t base = (uintptr_t)p;
    if (!p || bytesize == 0 || (Flags & ~known) || bytesize > UINTPTR_MAX - base)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    GET_CURRENT(c);
    const fake_device *d = &fake_dev.devices[c->device];
    if (!d->attributes[CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED] ||
        ((Flags & CU_MEMHOSTREGISTER_READ_ONLY) &&
         !d->attributes[CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED]))
        return fake_leave(CUDA_ERROR_NOT_SUPPORTED);
    if (overlapping(regs, reg_count, base, bytesize))
        return fake_leave(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    const fake_mem *a = overlapping(allocs, alloc_count, base, bytesize);
    if (a && a->h.kind == CUS_FAKE_HANDLE_HOST_MEMORY && a->h.state == FAKE_LIVE)
        return fake_leave(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED); /* pinned already */
    if (a) {
        fake_misuse_locked("cuMemHostRegister of 0x%" PRIxPTR "+%zu, which meets the %s%s at "
                           "0x%" PRIxPTR,
                           base, bytesize, a->h.state == FAKE_LIVE ? "" : "freed ", noun(a),
                           a->base);
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    }
    if (!reserve(&regs, reg_count, &reg_capacity))
        return fake_leave(CUDA_ERROR_OUT_OF_MEMORY);
    /* Registered under the record's address: the same range may be
     * registered again once unregistered. */
    fake_mem *r = fake_handle_new_locked(CUS_FAKE_HANDLE_HOST_REGISTRATION, sizeof *r, 0);
    if (!r)
        return fake_leave(CUDA_ERROR_OUT_OF_MEMORY);
    r->base = base;
    r->size = bytesize;
    r->ctx = c;
    r->device = c->device;
    r->flags = Flags;
    insert_sorted(regs, &reg_count, r);
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuMemHostUnregister(void *p)
{
    FAKE_ENTER(cuMemHostUnregister);
    NEED_CURRENT();
    fake_mem *r = containing(regs, reg_count, (uintptr_t)p);
    if (!p || !r || r->base != (uintptr_t)p) /* the base given to cuMemHostRegister */
        return fake_leave(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
    fake_context_synchronize_locked(r->ctx); /* its queued copies run first */
    if (r->h.state != FAKE_LIVE) /* unregistered meanwhile */
        return fake_leave(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
    remove_sorted(regs, &reg_count, r);
    fake_handle_set_state_locked(&r->h, FAKE_DESTROYED);
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuMemHostGetDevicePointer(CUdeviceptr *pdptr, void *p, unsigned int Flags)
{
    FAKE_ENTER(cuMemHostGetDevicePointer);
    if (!pdptr || !p || Flags != 0)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    GET_CURRENT(c);
    (void)c;
    uintptr_t addr = (uintptr_t)p;
    const fake_mem *m = containing(allocs, alloc_count, addr);
    if (m && m->h.state != FAKE_LIVE) {
        report_dead_locked(m, addr, "cuMemHostGetDevicePointer", NULL);
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    }
    /* Unified addressing: the device pointer is the host pointer, for every
     * pinned allocation and registration (DEVICEMAP or not). */
    if ((m && m->h.kind == CUS_FAKE_HANDLE_HOST_MEMORY) || containing(regs, reg_count, addr)) {
        *pdptr = (CUdeviceptr)addr;
        return fake_leave(CUDA_SUCCESS);
    }
    return fake_leave(CUDA_ERROR_INVALID_VALUE);
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
    const fake_mem *m = containing(allocs, alloc_count, addr);
    if (m && m->h.state != FAKE_LIVE)
        m = NULL;
    if (!m)
        m = containing(regs, reg_count, addr);
    if (!m)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    if (m->ctx->sticky != CUDA_SUCCESS)
        return fake_leave(m->ctx->sticky);
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

/* --- copies and memsets -------------------------------------------------------------------------- */

static CUresult copy_locked(struct CUstream_st *s, struct CUctx_st *sync_ctx, uintptr_t dst,
                            side dst_side, uintptr_t src, side src_side, size_t n)
{
    if (n == 0)
        return CUDA_SUCCESS;
    fake_op op = {.kind = FAKE_OP_COPY, .u.copy = {.dst = dst, .src = src, .n = n}};
    CUresult r = range_locked(dst, n, dst_side, "destination", &op.u.copy.dst_mem, NULL);
    if (r == CUDA_SUCCESS)
        r = range_locked(src, n, src_side, "source", &op.u.copy.src_mem, NULL);
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
    CUresult r = range_locked(p, n, SIDE_DEVICE, what, ref, &owner);
    if (r != CUDA_SUCCESS)
        return r;
    bool portable = owner->h.kind == CUS_FAKE_HANDLE_MANAGED_MEMORY ||
                    (owner->h.kind != CUS_FAKE_HANDLE_DEVICE_MEMORY &&
                     (owner->flags & CU_MEMHOSTALLOC_PORTABLE)); /* == ..._REGISTER_PORTABLE */
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
    struct CUctx_st *dc = NULL, *sc = NULL;
    CUresult r = fake_context_arg_locked(dstContext, CUDA_ERROR_INVALID_CONTEXT, &dc);
    if (r == CUDA_SUCCESS)
        r = fake_context_arg_locked(srcContext, CUDA_ERROR_INVALID_CONTEXT, &sc);
    struct CUstream_st *s = NULL;
    if (r == CUDA_SUCCESS && async)
        r = fake_stream_arg_locked(hs, &s);
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
    r = range_locked(dst, count * elem, SIDE_DEVICE, "memset destination", &op.u.memset.mem, NULL);
    if (r != CUDA_SUCCESS)
        return r;
    return async ? fake_stream_enqueue_locked(s, &op, NULL, 0)
                 : fake_stream_submit_sync_locked(c, &op);
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

static CUresult advise_locked(CUdeviceptr devPtr, size_t count, int advice, bool on_device,
                              int device)
{
    if (advice < CU_MEM_ADVISE_SET_READ_MOSTLY || advice > CU_MEM_ADVISE_UNSET_ACCESSED_BY)
        return CUDA_ERROR_INVALID_VALUE;
    if (advice_needs_device(advice) && on_device && !device_ok(device))
        return CUDA_ERROR_INVALID_DEVICE;
    if (count == 0)
        return CUDA_SUCCESS;
    fake_mem *m = NULL;
    CUresult r = managed_range_locked(devPtr, count, "advice range", &m); /* no effect beyond checks */
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

/* --- peer access ----------------------------------------------------------------------------------- */

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
    CUresult r = fake_context_arg_locked(peerContext, CUDA_ERROR_INVALID_CONTEXT, &peer);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (Flags != 0)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    if (peer == c)
        return fake_leave(CUDA_ERROR_INVALID_CONTEXT);
    if (peer->device == c->device) /* cuDeviceCanAccessPeer says 0 */
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
    CUresult r = fake_context_arg_locked(peerContext, CUDA_ERROR_INVALID_CONTEXT, &peer);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    peer_link *l = find_link(c, peer);
    if (!l)
        return fake_leave(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
    *l = links[--link_count];
    return fake_leave(CUDA_SUCCESS);
}

/* --- module globals ----------------------------------------------------------------------------- */

CUresult fake_memory_global_new_locked(struct CUctx_st *c, size_t size, fake_mem **out)
{
    fake_mem *m = NULL;
    /* A block of at least one byte, so that even an empty global has an address. */
    CUresult r = allocate_block_locked(CUS_FAKE_HANDLE_DEVICE_MEMORY, size ? size : 1, c, 0, true, &m);
    if (r != CUDA_SUCCESS)
        return r;
    m->size = size;
    if (!m->mapped) /* mmap()ed pages are zero already */
        memset((void *)m->base, 0, m->length);
    *out = m;
    return CUDA_SUCCESS;
}

void *fake_memory_global_base(const fake_mem *m)
{
    return (void *)m->base;
}

void fake_memory_global_release_locked(fake_mem *m, bool with_context)
{
    if (m->h.state != FAKE_LIVE)
        return;
    m->ctx_destroyed = with_context;
    release_locked(m);
}

/* --- queries --------------------------------------------------------------------------------------- */

CUS_API size_t cus_fake_device_bytes_in_use(int ordinal)
{
    fake_lock();
    fake_ensure_configured_locked();
    size_t n = fake_device_at_locked(ordinal) ? in_use[ordinal] : 0;
    fake_unlock();
    return n;
}

/* --- the area -------------------------------------------------------------------------------- */

static const fake_op_executor memory_executors[] = {
    {FAKE_OP_COPY, FAKE_OP_COUNTS_AS_WORK | FAKE_OP_DEAD_WHEN_POISONED, memory_execute_locked, NULL},
    {FAKE_OP_MEMSET, FAKE_OP_COUNTS_AS_WORK | FAKE_OP_DEAD_WHEN_POISONED, memory_execute_locked, NULL},
    {FAKE_OP_ALLOC, FAKE_OP_COUNTS_AS_WORK, memory_execute_locked, NULL},
    {FAKE_OP_FREE, FAKE_OP_COUNTS_AS_WORK, memory_execute_locked, NULL},
    {FAKE_OP_PREFETCH, FAKE_OP_COUNTS_AS_WORK | FAKE_OP_DEAD_WHEN_POISONED, memory_execute_locked, NULL},
};

/* Reset after the queues and events, before the modules; torn down last (the
 * graphs and modules that a context owns let go of its memory first). */
static const fake_area memory_area = {
    .name = "memory",
    .reset_order = 30,
    .teardown_order = 30,
    .reset_locked = memory_reset_locked,
    .doom_locked = memory_doom_locked,
    .destroy_doomed_locked = memory_destroy_doomed_locked,
    .executors = memory_executors,
    .executor_count = sizeof memory_executors / sizeof memory_executors[0],
};
FAKE_AREA(memory_area)
