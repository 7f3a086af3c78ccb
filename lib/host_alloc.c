/* cuscope's own host allocations, and the fault injector that makes them fail
 * (cus_debug_fail_host_alloc), so that tests reach every out-of-host-memory
 * path. Disarmed, an allocation costs one relaxed load more than libc's. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static atomic_bool armed;
static atomic_bool fail_persistent;
static atomic_ulong fail_at;
static atomic_ulong allocs_seen;
static atomic_ulong faults_fired;
static atomic_ulong faults_absorbed;

static bool should_fail(void)
{
    if (CUS_LIKELY(!atomic_load_explicit(&armed, memory_order_relaxed)))
        return false;
    unsigned long n = atomic_fetch_add_explicit(&allocs_seen, 1, memory_order_relaxed) + 1;
    unsigned long at = atomic_load_explicit(&fail_at, memory_order_relaxed);
    if (n == at || (n > at && atomic_load_explicit(&fail_persistent, memory_order_relaxed))) {
        atomic_fetch_add_explicit(&faults_fired, 1, memory_order_relaxed);
        return true;
    }
    return false;
}

void *cus_malloc_(size_t size)
{
    return should_fail() ? NULL : malloc(size);
}

/* Small records through malloc and memset: glibc's calloc (before 2.42)
 * skips the per-thread cache and takes the arena's slow path on every call,
 * several times the cost of the cached malloc, and an object's record is made
 * and freed as often as the object. */
#define SMALL_RECORD 512
void *cus_calloc_(size_t count, size_t size)
{
    if (should_fail())
        return NULL;
    size_t bytes;
    if (__builtin_mul_overflow(count, size, &bytes) || bytes > SMALL_RECORD)
        return calloc(count, size);
    void *p = malloc(bytes);
    __asm__("" : "+r"(p)); /* else the compiler folds malloc and memset back into calloc */
    if (p)
        memset(p, 0, bytes);
    return p;
}

void *cus_calloc_lines_(size_t size)
{
    /* aligned_alloc wants a multiple of the alignment */
    size_t rounded = (size + CUS_CACHE_LINE_ - 1) & ~(size_t)(CUS_CACHE_LINE_ - 1);
    void *p = should_fail() ? NULL : aligned_alloc(CUS_CACHE_LINE_, rounded);
    if (p)
        memset(p, 0, rounded);
    return p;
}

/* A failure leaves p allocated, as realloc's does. */
void *cus_realloc_(void *p, size_t size)
{
    return should_fail() ? NULL : realloc(p, size);
}

char *cus_strdup_(const char *s)
{
    return should_fail() ? NULL : strdup(s);
}

void cus_host_alloc_absorbed_(void)
{
    if (atomic_load_explicit(&armed, memory_order_relaxed))
        atomic_fetch_add_explicit(&faults_absorbed, 1, memory_order_relaxed);
}

CUS_API void cus_debug_fail_host_alloc(unsigned long nth, bool persistent)
{
    atomic_store_explicit(&armed, false, memory_order_relaxed);
    atomic_store_explicit(&allocs_seen, 0, memory_order_relaxed);
    atomic_store_explicit(&faults_fired, 0, memory_order_relaxed);
    atomic_store_explicit(&faults_absorbed, 0, memory_order_relaxed);
    atomic_store_explicit(&fail_at, nth, memory_order_relaxed);
    atomic_store_explicit(&fail_persistent, persistent, memory_order_relaxed);
    atomic_store_explicit(&armed, nth != 0, memory_order_release);
}

CUS_API unsigned long cus_debug_host_allocs(void)
{
    return atomic_load_explicit(&allocs_seen, memory_order_relaxed);
}

CUS_API unsigned long cus_debug_host_alloc_faults(void)
{
    return atomic_load_explicit(&faults_fired, memory_order_relaxed);
}

CUS_API unsigned long cus_debug_host_alloc_absorbed(void)
{
    return atomic_load_explicit(&faults_absorbed, memory_order_relaxed);
}
