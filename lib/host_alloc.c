/* cuscope's own host allocations, and the fault injector that makes them fail
 * (cus_debug_fail_host_alloc), so that tests reach every out-of-host-memory
 * path. Disarmed, an allocation costs one relaxed load more than libc's. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Builds under ASan or TSan, and runs under valgrind, cache no record: each
 * is freed as it is released, so that a use after release is caught. */
#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif
#endif
#ifndef RUNNING_ON_VALGRIND
#define RUNNING_ON_VALGRIND 0
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CUS_RECORD_CACHE_ 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define CUS_RECORD_CACHE_ 0
#endif
#endif
#ifndef CUS_RECORD_CACHE_
#define CUS_RECORD_CACHE_ 1
#endif

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
static void *zeroed_malloc(size_t bytes)
{
    void *p = malloc(bytes);
    __asm__("" : "+r"(p)); /* else the compiler folds malloc and memset back into calloc */
    if (p)
        memset(p, 0, bytes);
    return p;
}

void *cus_calloc_(size_t count, size_t size)
{
    if (should_fail())
        return NULL;
    size_t bytes;
    if (__builtin_mul_overflow(count, size, &bytes) || bytes > SMALL_RECORD)
        return calloc(count, size);
    return zeroed_malloc(bytes);
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

/* --- records -----------------------------------------------------------------
 * An event's create and destroy each took a malloc and a free besides the
 * driver call; made in bulk (thousands created, then released), neither hit
 * glibc's small per-thread cache (7 blocks a size), and together they were
 * most of cuscope's cost over cuEventCreate and cuEventDestroy. Records come
 * in two size classes; a thread keeps up to RECORD_CACHE_MAX released ones of
 * each (at most 3 MiB), on a list through their first word, and frees them
 * at its exit. A record released on another thread than made it goes to the
 * releasing thread's cache: no list is ever shared, so none is locked. */
#define RECORD_CLASSES 2
#define RECORD_CACHE_MAX 16384
static const size_t record_class_bytes[RECORD_CLASSES] = {64, 128};

typedef struct cached_record {
    struct cached_record *next;
} cached_record;

static _Thread_local struct {
    cached_record *head[RECORD_CLASSES];
    unsigned int count[RECORD_CLASSES];
    bool keyed; /* the exit key holds this thread's cache */
    bool off;   /* cache nothing more: the thread's exit emptied it, or valgrind */
} records __attribute__((tls_model("initial-exec")));

static pthread_key_t records_key;
static pthread_once_t records_key_once = PTHREAD_ONCE_INIT;
static int records_key_error;

static int record_class(size_t size)
{
    for (int c = 0; c < RECORD_CLASSES; c++)
        if (size <= record_class_bytes[c])
            return c;
    return -1;
}

static void records_release_all(void *unused)
{
    (void)unused;
    records.off = true;
    for (int c = 0; c < RECORD_CLASSES; c++) {
        cached_record *r = records.head[c];
        while (r) {
            cached_record *next = r->next;
            free(r);
            r = next;
        }
        records.head[c] = NULL;
        records.count[c] = 0;
    }
}

static void make_records_key(void)
{
    records_key_error = pthread_key_create(&records_key, records_release_all);
}

void *cus_record_new_(size_t size)
{
    if (should_fail())
        return NULL;
    int c = record_class(size);
    if (c < 0)
        return calloc(1, size);
    cached_record *r = records.head[c];
    if (CUS_RECORD_CACHE_ && r) {
        records.head[c] = r->next;
        records.count[c]--;
        memset(r, 0, record_class_bytes[c]);
        return r;
    }
    return zeroed_malloc(record_class_bytes[c]);
}

void cus_record_free_(void *p, size_t size)
{
    int c = record_class(size);
    if (!CUS_RECORD_CACHE_ || !p || c < 0 || records.off ||
        records.count[c] >= RECORD_CACHE_MAX) {
        free(p);
        return;
    }
    if (CUS_UNLIKELY(!records.keyed)) {
        /* The key's value only makes its destructor run at the thread's exit. */
        pthread_once(&records_key_once, make_records_key);
        if (RUNNING_ON_VALGRIND || records_key_error ||
            pthread_setspecific(records_key, &records)) {
            records.off = RUNNING_ON_VALGRIND;
            free(p);
            return;
        }
        records.keyed = true;
    }
    cached_record *r = p;
    r->next = records.head[c];
    records.head[c] = r;
    records.count[c]++;
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
