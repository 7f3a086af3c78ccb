/* Memory: device, pinned host, managed and stream-ordered allocations, host
 * registrations, copies and memsets (synchronous and queued), pointer
 * attributes, prefetch and advice, and peer access. This file has the
 * records, blocks, range checks, graph allocations (and the execution of
 * ALLOC and FREE), host registrations and module globals; the allocation
 * entry points are in fake_memory_alloc.c; copies, memsets, prefetch and
 * advice in fake_memory_copy.c; pointer attributes and peer access in
 * fake_memory_peer.c (fake_memory_records.h is private to the four).
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
 * is queued (fake_graph.c keeps the launch rules).
 *
 * The blocks of exportable pools are shared memory (memfd_create), mapped
 * once for the allocation and once more for each import, so that an
 * imported pointer sees the exporter's bytes, as across processes. */
#define _GNU_SOURCE /* memfd_create */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fake_memory_records.h"

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

static fake_mem **allocs; /* every allocation since install, by address */
static size_t alloc_count, alloc_capacity;
static fake_mem **regs; /* live registrations, by address */
static size_t reg_count, reg_capacity;
static size_t in_use[CUS_FAKE_MAX_DEVICES];
/* The graph allocator of each device (cuDeviceGetGraphMemAttribute): used,
 * the bytes of graph allocations between their allocation's execution and
 * their free; reserved, what it holds for them, grown by use and kept
 * across launches until cuDeviceGraphMemTrim; and their high-water marks. */
typedef struct graph_usage {
    cuuint64_t used, used_high, reserved, reserved_high;
} graph_usage;
static graph_usage graph_usage_of[CUS_FAKE_MAX_DEVICES];
/* Mapping records taken out of `allocs` by cuMemUnmap: kept, as queued work
 * may still name them, until the next reset. */
static fake_mem **gone_mappings;
static size_t gone_count, gone_capacity;
static fake_mapping_access_fn mapping_access;

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

fake_mem *fake_memory_allocation_containing_locked(uintptr_t addr)
{
    return containing(allocs, alloc_count, addr);
}

fake_mem *fake_memory_registration_containing_locked(uintptr_t addr)
{
    return containing(regs, reg_count, addr);
}

/* --- blocks ------------------------------------------------------------------------------ */

const char *fake_memory_noun(const fake_mem *m)
{
    return fake_kind_noun(m->h.kind);
}

/* A new live allocation of `size` bytes for context c. CUDA_ERROR_OUT_OF_MEMORY
 * when the host has no room for it (the device budget is checked by callers).
 * A module global (`global`) is device memory without a registry entry. */
/* share: NULL for a private block; else a shared one: new memory (*share
 * -1, set to the new memfd) or the memory of that descriptor mapped again. */
static CUresult allocate_block_locked(cus_fake_handle_kind kind, size_t size, struct CUctx_st *c,
                                      unsigned int flags, bool global, int *share, fake_mem **out)
{
    if (!reserve(&allocs, alloc_count, &alloc_capacity))
        return CUDA_ERROR_OUT_OF_MEMORY;
    void *p = NULL;
    size_t length;
    bool mapped = size >= MMAP_THRESHOLD || share;
    int made_fd = -1;
    if (mapped) {
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        if (size > SIZE_MAX - page)
            return CUDA_ERROR_OUT_OF_MEMORY;
        length = (size + page - 1) / page * page;
        if (share && *share < 0) {
            made_fd = memfd_create("cuscope-fake-pool", MFD_CLOEXEC);
            if (made_fd < 0)
                return CUDA_ERROR_OUT_OF_MEMORY;
            if (ftruncate(made_fd, (off_t)length) != 0) {
                close(made_fd);
                return CUDA_ERROR_OUT_OF_MEMORY;
            }
        }
        p = share ? mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_SHARED,
                         made_fd >= 0 ? made_fd : *share, 0)
                  : mmap(NULL, length, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) {
            if (made_fd >= 0)
                close(made_fd);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
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
        if (made_fd >= 0)
            close(made_fd);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    m->base = (uintptr_t)p;
    m->size = size;
    m->ctx = c;
    m->device = c->device;
    m->flags = flags;
    m->mapped = mapped;
    m->length = length;
    m->shared = share != NULL;
    if (made_fd >= 0) {
        m->owns_fd = true;
        m->shm_fd = made_fd;
        *share = made_fd;
    }
    insert_sorted(allocs, &alloc_count, m);
    if (kind == CUS_FAKE_HANDLE_DEVICE_MEMORY && !global)
        in_use[c->device] += size;
    *out = m;
    return CUDA_SUCCESS;
}

CUresult fake_memory_allocate_locked(cus_fake_handle_kind kind, size_t size, struct CUctx_st *c,
                                     unsigned int flags, fake_mem **out)
{
    return allocate_block_locked(kind, size, c, flags, false, NULL, out);
}

CUresult fake_memory_allocate_shared_locked(size_t size, struct CUctx_st *c, CUdevice dev,
                                            fake_mem *from, fake_mem **out)
{
    int share = from ? from->shm_fd : -1;
    fake_mem *m = NULL;
    CUresult r = allocate_block_locked(CUS_FAKE_HANDLE_DEVICE_MEMORY, size, c, 0, false, &share, &m);
    if (r != CUDA_SUCCESS)
        return r;
    /* Counted on the memory's device; an import is the same memory again. */
    in_use[c->device] -= size;
    m->device = dev;
    if (from) {
        m->imported = true;
        m->origin = from;
        from->imports++;
    } else {
        in_use[dev] += size;
    }
    *out = m;
    return CUDA_SUCCESS;
}

/* Frees an allocation: it stops counting, and its block is quarantined. */
void fake_memory_release_locked(fake_mem *m)
{
    if (m->graph) /* its memory goes: no longer counted as the graphs' */
        fake_memory_graph_set_valid_locked(m, false);
    if (m->global) {
        m->h.state = FAKE_DESTROYED; /* never counted: no registry entry */
    } else {
        if (m->h.kind == CUS_FAKE_HANDLE_DEVICE_MEMORY && !m->imported)
            in_use[m->device] -= m->size;
        if (m->graph_part)
            m->h.state = FAKE_DESTROYED; /* uncounted: fake_memory_graph_new_locked */
        else
            fake_handle_set_state_locked(&m->h, FAKE_DESTROYED);
        if (m->origin)
            m->origin->imports--;
        if (m->pool)
            fake_pool_released_locked(m);
    }
    if (m->mapped) {
        (void)madvise((void *)m->base, m->length, MADV_DONTNEED);
        (void)mprotect((void *)m->base, m->length, PROT_NONE);
    } else {
        POISON((void *)m->base, m->length);
    }
}

/* The budget left on c's device for `size` more bytes of device memory. */
bool fake_memory_fits_locked(const struct CUctx_st *c, size_t size)
{
    size_t total = fake_dev.devices[c->device].total_memory;
    return in_use[c->device] <= total && size <= total - in_use[c->device];
}

static void memory_reset_locked(const cus_fake_config *cfg)
{
    (void)cfg;
    for (size_t i = 0; i < alloc_count; i++) {
        fake_mem *m = allocs[i];
        if (m->owns_fd)
            close(m->shm_fd);
        if (m->mapping) { /* the vmm area owns the pages */
            free(m);
            continue;
        }
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
    memset(in_use, 0, sizeof in_use);
    memset(graph_usage_of, 0, sizeof graph_usage_of);
    for (size_t i = 0; i < gone_count; i++)
        free(gone_mappings[i]);
    free(gone_mappings);
    gone_mappings = NULL;
    gone_count = gone_capacity = 0;
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
            fake_memory_release_locked(m);
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
}

/* --- range checks ------------------------------------------------------------------------------ */

/* Reports the use of a dead allocation. */
void fake_memory_report_dead_locked(const fake_mem *m, uintptr_t addr, const char *what,
                                    const char *by)
{
    if (m->mapping)
        fake_misuse_locked("use of 0x%" PRIxPTR " (%s) after the cuMemUnmap of its mapping at "
                           "0x%" PRIxPTR "+%zu%s%s",
                           addr, what, m->base, m->size, by ? ", by " : "", by ? by : "");
    else if (m->global)
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
                           fake_memory_noun(m), addr, what,
                           m->ctx_destroyed ? " or its context's death" : "", by ? ", by " : "",
                           by ? by : "");
    else
        fake_misuse_locked("use after free of %s 0x%" PRIxPTR " (%s), %s%s%s", fake_memory_noun(m),
                           addr, what,
                           m->ctx_destroyed ? "freed with its context"
                           : m->h.kind == CUS_FAKE_HANDLE_HOST_MEMORY ? "freed by cuMemFreeHost"
                                                                      : "freed by cuMemFree",
                           by ? ", by " : "", by ? by : "");
}

/* A mapping's range has access for its device, as on the driver, where
 * memory mapped but not made accessible faults. */
static bool mapping_accessible_locked(const fake_mem *m, uintptr_t addr, size_t n,
                                      const char *what)
{
    size_t end = m->size - (addr - m->base);
    if (!mapping_access ||
        mapping_access(m->mapping, addr, n && n <= end ? n : 1, m->device) !=
            CU_MEM_ACCESS_FLAGS_PROT_NONE)
        return true;
    fake_misuse_locked("%s 0x%" PRIxPTR "+%zu lies in the mapping at 0x%" PRIxPTR "+%zu, which "
                       "device %d has no access to (cuMemSetAccess)",
                       what, addr, n, m->base, m->size, (int)m->device);
    return false;
}

/* A range in cuMemMap memory may run on through adjacent mappings (one
 * virtual range, several physical allocations): each piece must be mapped,
 * and accessible. */
static CUresult mapping_range_locked(const fake_mem *m, uintptr_t addr, size_t n,
                                     const char *what)
{
    size_t i = upper_bound(allocs, alloc_count, addr) - 1; /* m */
    uintptr_t at = addr;
    for (;;) {
        size_t here = m->size - (at - m->base);
        size_t take = n < here ? n : here;
        if (!mapping_accessible_locked(m, at, take, what))
            return CUDA_ERROR_INVALID_VALUE;
        n -= take;
        at += take;
        if (!n)
            return CUDA_SUCCESS;
        if (++i >= alloc_count || allocs[i]->base != at || !allocs[i]->mapping ||
            allocs[i]->h.state != FAKE_LIVE) {
            fake_misuse_locked("%s range 0x%" PRIxPTR "+%zu runs %zu bytes past the mappings at "
                               "0x%" PRIxPTR " (not mapped there)",
                               what, addr, (size_t)(at - addr) + n, n, at);
            return CUDA_ERROR_INVALID_VALUE;
        }
        m = allocs[i];
    }
}

/* Checks [addr, addr + n) at call time. *ref: the allocation to check again at
 * execution (NULL for unchecked host memory and registrations); *owner: the
 * allocation or registration holding the range, if any. */
CUresult fake_memory_range_locked(uintptr_t addr, size_t n, side sd, const char *what,
                                  fake_mem **ref, fake_mem **owner)
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
            fake_memory_report_dead_locked(m, addr, what, NULL);
            return CUDA_ERROR_INVALID_VALUE;
        }
        if (m->mapping) {
            CUresult mr = mapping_range_locked(m, addr, n, what);
            if (mr != CUDA_SUCCESS)
                return mr;
            *ref = *owner = m;
            return CUDA_SUCCESS;
        }
        if (sd == SIDE_HOST && m->h.kind == CUS_FAKE_HANDLE_DEVICE_MEMORY) {
            fake_misuse_locked("device memory 0x%" PRIxPTR " passed as a host pointer (%s)", addr,
                               what);
            return CUDA_ERROR_INVALID_VALUE;
        }
        if (n > m->size - (addr - m->base)) {
            fake_misuse_locked("%s range 0x%" PRIxPTR "+%zu overruns the %zu-byte %s at 0x%" PRIxPTR,
                               what, addr, n, m->size, fake_memory_noun(m), m->base);
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
                               fake_memory_noun(below), below->base);
        else
            fake_misuse_locked("%s 0x%" PRIxPTR " is not device memory (not allocated or "
                               "registered through the fake)",
                               what, addr);
        return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS; /* pageable host memory: the caller's business */
}

/* At execution: whether a referenced allocation may still be used. */
bool fake_memory_usable_locked(const fake_mem *m, uintptr_t addr, const char *what,
                               const fake_op *op)
{
    bool dead = m && m->h.state != FAKE_LIVE;
    bool early = m && !dead && m->async && !m->valid;
    if (!dead && !early)
        return true;
    char by[128];
    snprintf(by, sizeof by, "%s queued on stream 0x%" PRIxPTR, op->call ? op->call : "a call",
             op->stream && !op->stream->is_default ? (uintptr_t)op->stream : (uintptr_t)0);
    if (dead)
        fake_memory_report_dead_locked(m, addr, what, by);
    else if (m->graph)
        fake_misuse_locked("graph allocation 0x%" PRIxPTR " (%s) used outside its lifetime: no "
                           "graph launch's allocation node ran for it, or it was freed since, "
                           "by %s",
                           addr, what, by);
    else
        fake_misuse_locked("%s 0x%" PRIxPTR " (%s) used outside its stream-ordered lifetime: "
                           "its cuMemAllocAsync has not executed yet, by %s",
                           fake_memory_noun(m), addr, what, by);
    return false;
}

bool fake_memory_pointer_usable_locked(uintptr_t addr, const char *what, const fake_op *op)
{
    const fake_mem *m = containing(allocs, alloc_count, addr);
    if (m && m->mapping && m->h.state == FAKE_LIVE)
        return mapping_accessible_locked(m, addr, 1, what);
    /* Freed memory, and graph memory outside its lifetime; a plain
     * stream-ordered block used early is the stream order's business. */
    if (!m || (m->h.state == FAKE_LIVE && (!m->graph || m->valid)))
        return true;
    return fake_memory_usable_locked(m, addr, what, op);
}

/* --- graph allocations ------------------------------------------------------------------------ */

void fake_memory_graph_set_valid_locked(fake_mem *m, bool valid)
{
    if (!m->graph || m->valid == valid) {
        m->valid = valid;
        return;
    }
    m->valid = valid;
    graph_usage *u = &graph_usage_of[m->device];
    if (!valid) {
        u->used = u->used >= m->size ? u->used - m->size : 0;
        return;
    }
    u->used += m->size;
    if (u->used > u->used_high)
        u->used_high = u->used;
    if (u->used > u->reserved)
        u->reserved = u->used; /* else it reuses what an earlier launch reserved */
    if (u->reserved > u->reserved_high)
        u->reserved_high = u->reserved;
}

CUresult fake_memory_graph_new_locked(struct CUctx_st *c, size_t size, fake_mem **out)
{
    if (!fake_memory_fits_locked(c, size))
        return CUDA_ERROR_OUT_OF_MEMORY;
    fake_mem *m = NULL;
    CUresult r = fake_memory_allocate_locked(CUS_FAKE_HANDLE_DEVICE_MEMORY, size, c, 0, &m);
    if (r != CUDA_SUCCESS)
        return r;
    m->async = true;
    m->graph = true;
    /* A part of its graph's handle, as a green context's context is of its
     * green context: a graph whose cuGraphDestroy failed keeps it, and only
     * the graph is a handle left behind (its bytes still count). */
    fake_handle_uncount_locked(&m->h);
    m->graph_part = true;
    *out = m;
    return CUDA_SUCCESS;
}

fake_mem *fake_memory_graph_at_locked(uintptr_t addr)
{
    fake_mem *m = containing(allocs, alloc_count, addr);
    return m && m->graph && m->h.state == FAKE_LIVE && m->base == addr ? m : NULL;
}

size_t fake_memory_graph_size(const fake_mem *m)
{
    return m->size;
}

CUdevice fake_memory_graph_device(const fake_mem *m)
{
    return m->device;
}

void fake_memory_graph_usage_locked(CUdevice dev, cuuint64_t out[4])
{
    const graph_usage *u = &graph_usage_of[dev];
    out[CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT] = u->used;
    out[CU_GRAPH_MEM_ATTR_USED_MEM_HIGH] = u->used_high;
    out[CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT] = u->reserved;
    out[CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH] = u->reserved_high;
}

void fake_memory_graph_reset_high_locked(CUdevice dev, bool used)
{
    graph_usage *u = &graph_usage_of[dev];
    if (used)
        u->used_high = u->used;
    else
        u->reserved_high = u->reserved;
}

void fake_memory_graph_trim_locked(CUdevice dev)
{
    graph_usage *u = &graph_usage_of[dev];
    u->reserved = u->used;
}

void fake_memory_graph_retire_locked(fake_mem *m)
{
    if (m->graph && m->h.state == FAKE_LIVE && !m->holds && !m->outstanding && !m->pending)
        fake_memory_release_locked(m);
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
    fake_memory_graph_retire_locked(m);
}

bool fake_memory_graph_outstanding(const fake_mem *m)
{
    return m->outstanding;
}

void fake_memory_graph_set_outstanding_locked(fake_mem *m, bool outstanding)
{
    m->outstanding = outstanding;
    fake_memory_graph_retire_locked(m);
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
    case FAKE_OP_ALLOC:
        if (op->u.mem.mem->graph && op->u.mem.mem->pending)
            op->u.mem.mem->pending--;
        if (op->u.mem.mem->h.state == FAKE_LIVE)
            fake_memory_graph_set_valid_locked(op->u.mem.mem, true);
        return CUDA_SUCCESS;
    case FAKE_OP_FREE: {
        fake_mem *m = op->u.mem.mem;
        if (m->graph) { /* the block stays for the next launch, unless nothing holds it */
            if (m->pending)
                m->pending--;
            fake_memory_graph_set_valid_locked(m, false);
            fake_memory_graph_retire_locked(m);
            return CUDA_SUCCESS;
        }
        if (m->h.state == FAKE_LIVE) /* else gone with its context */
            fake_memory_release_locked(m);
        return CUDA_SUCCESS;
    }
    case FAKE_OP_COPY:
    case FAKE_OP_MEMSET:
    case FAKE_OP_PREFETCH:
    case FAKE_OP_HOST_FN:
    case FAKE_OP_RECORD:
    case FAKE_OP_CONDITIONAL: /* replays only (fake_graph_conditional.c) */
    case FAKE_OP_WAIT:
    case FAKE_OP_LAUNCH:
        break;
    }
    return CUDA_SUCCESS;
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
                           base, bytesize, a->h.state == FAKE_LIVE ? "" : "freed ",
                           fake_memory_noun(a), a->base);
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
    /* No current context needed; a poisoned owner refuses with its sticky
     * error (before and after the synchronization), as cuMemFree. */
    if (!p)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    fake_mem *r = containing(regs, reg_count, (uintptr_t)p);
    if (!r || r->base != (uintptr_t)p) /* the base given to cuMemHostRegister */
        return fake_leave(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
    if (r->ctx->sticky != CUDA_SUCCESS)
        return fake_leave(r->ctx->sticky);
    fake_context_synchronize_locked(r->ctx); /* its queued copies run first */
    if (r->h.state != FAKE_LIVE) /* unregistered meanwhile */
        return fake_leave(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
    if (r->ctx->sticky != CUDA_SUCCESS)
        return fake_leave(r->ctx->sticky);
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
        fake_memory_report_dead_locked(m, addr, "cuMemHostGetDevicePointer", NULL);
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

/* --- virtual memory mappings -------------------------------------------------------------- */

fake_mem *fake_memory_mapping_new_locked(const void *mapping, CUdevice device, uintptr_t base,
                                         size_t size)
{
    if (!reserve(&allocs, alloc_count, &alloc_capacity) ||
        !reserve(&gone_mappings, gone_count, &gone_capacity))
        return NULL; /* room for its retirement too: a release cannot fail */
    fake_mem *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    /* as the registry would set it up, without counting it (as a global) */
    m->h.kind = CUS_FAKE_HANDLE_DEVICE_MEMORY;
    m->h.state = FAKE_LIVE;
    m->h.key = base;
    m->base = base;
    m->size = m->length = size;
    m->device = device;
    m->mapping = mapping;
    insert_sorted(allocs, &alloc_count, m);
    return m;
}

void fake_memory_mapping_release_locked(fake_mem *m)
{
    m->h.state = FAKE_DESTROYED;
    remove_sorted(allocs, &alloc_count, m);
    if (!reserve(&gone_mappings, gone_count, &gone_capacity)) { /* reserved at its creation */
        fake_misuse_locked("fake: no room to retire a mapping record");
        return;
    }
    gone_mappings[gone_count++] = m;
}

void fake_memory_set_mapping_access_fn(fake_mapping_access_fn fn)
{
    mapping_access = fn;
}

bool fake_memory_charge_locked(CUdevice device, size_t size)
{
    size_t total = fake_dev.devices[device].total_memory;
    if (in_use[device] > total || size > total - in_use[device])
        return false;
    in_use[device] += size;
    return true;
}

void fake_memory_uncharge_locked(CUdevice device, size_t size)
{
    in_use[device] -= size;
}

/* --- module globals ----------------------------------------------------------------------------- */

CUresult fake_memory_global_new_locked(struct CUctx_st *c, size_t size, fake_mem **out)
{
    fake_mem *m = NULL;
    /* A block of at least one byte, so that even an empty global has an address. */
    CUresult r =
        allocate_block_locked(CUS_FAKE_HANDLE_DEVICE_MEMORY, size ? size : 1, c, 0, true, NULL, &m);
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
    fake_memory_release_locked(m);
}

/* --- queries --------------------------------------------------------------------------------------- */

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
    {FAKE_OP_ALLOC, FAKE_OP_COUNTS_AS_WORK, memory_execute_locked, NULL},
    {FAKE_OP_FREE, FAKE_OP_COUNTS_AS_WORK, memory_execute_locked, NULL},
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
