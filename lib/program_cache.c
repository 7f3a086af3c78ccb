/* The compile cache: compiled outputs keyed by a 128-bit hash of everything
 * a compile reads (source, name, headers, options, name expressions), once
 * per process. Bounded (CUS_PROGRAM_CACHE_MAX_ENTRIES outputs, at most
 * CUS_PROGRAM_CACHE_MAX_BYTES bytes of them; the least recently used goes
 * first), thread-safe, with a single flight: threads that compile the same
 * inputs at once wait for the first one's output instead of compiling too. */
#include <string.h>

#include "cuscope/program.h"
#include "rtc_internal.h"

/* --- outputs -------------------------------------------------------------- */

cus_rtc_output_ *cus_rtc_output_ref_(cus_rtc_output_ *o)
{
    if (o)
        atomic_fetch_add_explicit(&o->refs, 1, memory_order_relaxed);
    return o;
}

void cus_rtc_output_unref_(cus_rtc_output_ *o)
{
    if (!o || atomic_fetch_sub_explicit(&o->refs, 1, memory_order_acq_rel) != 1)
        return;
    for (size_t i = 0; i < o->nnames; i++) {
        free(o->expressions ? o->expressions[i] : NULL);
        free(o->lowered ? o->lowered[i] : NULL);
    }
    free(o->expressions);
    free(o->lowered);
    free(o->ptx);
    free(o->cubin);
    free(o->ltoir);
    free(o->log);
    free(o);
}

/* --- the key: FNV-1a 128 ------------------------------------------------------
 * Not a cryptographic hash: crafted inputs could collide. The inputs are the
 * process's own sources; an accidental collision among 2^64 compiles is
 * about as likely as a bit flip. Each field is fed with its length first, so
 * that no two lists of fields feed the same bytes. */

#define FNV128_OFFSET                                                          \
    ((__extension__(unsigned __int128)0x6c62272e07bb0142ull << 64) | 0x62b821756295c58dull)
#define FNV128_PRIME ((__extension__(unsigned __int128)1 << 88) | 0x13bull)

static void feed(cus_rtc_hasher_ *s, const void *data, size_t size)
{
    const unsigned char *p = data;
    __extension__ unsigned __int128 h = s->h;
    for (size_t i = 0; i < size; i++) {
        h ^= p[i];
        h *= FNV128_PRIME;
    }
    s->h = h;
}

void cus_rtc_hash_init_(cus_rtc_hasher_ *s)
{
    s->h = FNV128_OFFSET;
}

void cus_rtc_hash_field_(cus_rtc_hasher_ *s, const void *data, size_t size)
{
    uint64_t n = size;
    feed(s, &n, sizeof n);
    feed(s, data, size);
}

void cus_rtc_hash_string_(cus_rtc_hasher_ *s, const char *str)
{
    if (!str) {
        uint64_t none = UINT64_MAX;
        feed(s, &none, sizeof none);
        return;
    }
    cus_rtc_hash_field_(s, str, strlen(str));
}

cus_rtc_key_ cus_rtc_hash_end_(const cus_rtc_hasher_ *s)
{
    return (cus_rtc_key_){(uint64_t)s->h, (uint64_t)(s->h >> 64)};
}

/* --- the cache ----------------------------------------------------------------- */

typedef struct slot {
    cus_rtc_key_ key;
    cus_rtc_output_ *out; /* NULL while pending */
    bool used, pending;
    unsigned long long stamp; /* last use, for eviction */
} slot;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done = PTHREAD_COND_INITIALIZER;
static slot slots[CUS_PROGRAM_CACHE_MAX_ENTRIES]; /* under lock */
static unsigned long long clock_now;
static size_t bytes_held;
static unsigned long hits, misses;
static atomic_bool enabled = true;

static bool same(cus_rtc_key_ a, cus_rtc_key_ b)
{
    return a.lo == b.lo && a.hi == b.hi;
}

static slot *find_locked(cus_rtc_key_ key)
{
    /* A linear scan of 256 keys: well under a microsecond, next to the
     * tens of milliseconds of the compile it saves. */
    for (size_t i = 0; i < CUS_PROGRAM_CACHE_MAX_ENTRIES; i++)
        if (slots[i].used && same(slots[i].key, key))
            return &slots[i];
    return NULL;
}

static void drop_locked(slot *s)
{
    if (s->out) {
        bytes_held -= s->out->bytes;
        cus_rtc_output_unref_(s->out);
    }
    memset(s, 0, sizeof *s);
}

/* A free slot, evicting the least recently used finished one when full;
 * NULL when every slot is pending. */
static slot *free_slot_locked(void)
{
    slot *oldest = NULL;
    for (size_t i = 0; i < CUS_PROGRAM_CACHE_MAX_ENTRIES; i++) {
        if (!slots[i].used)
            return &slots[i];
        if (!slots[i].pending && (!oldest || slots[i].stamp < oldest->stamp))
            oldest = &slots[i];
    }
    if (oldest)
        drop_locked(oldest);
    return oldest;
}

cus_rtc_output_ *cus_rtc_cache_begin_(cus_rtc_key_ key)
{
    CUS_LOCK_SCOPE(&lock);
    for (;;) {
        slot *s = find_locked(key);
        if (!s)
            break;
        if (!s->pending) {
            hits++;
            s->stamp = ++clock_now;
            return cus_rtc_output_ref_(s->out);
        }
        pthread_cond_wait(&done, &lock);
    }
    misses++;
    slot *s = free_slot_locked();
    if (s) { /* else all pending: compile without a flight of our own */
        s->used = s->pending = true;
        s->key = key;
    }
    return NULL;
}

void cus_rtc_cache_finish_(cus_rtc_key_ key, cus_rtc_output_ *out)
{
    CUS_LOCK_SCOPE(&lock);
    slot *s = find_locked(key);
    if (s && s->pending) {
        if (!out || !atomic_load_explicit(&enabled, memory_order_relaxed) ||
            out->bytes > CUS_PROGRAM_CACHE_MAX_BYTES) {
            drop_locked(s); /* waiters find no slot and compile themselves */
        } else {
            while (bytes_held + out->bytes > CUS_PROGRAM_CACHE_MAX_BYTES) {
                slot *oldest = NULL;
                for (size_t i = 0; i < CUS_PROGRAM_CACHE_MAX_ENTRIES; i++)
                    if (slots[i].used && !slots[i].pending &&
                        (!oldest || slots[i].stamp < oldest->stamp))
                        oldest = &slots[i];
                if (!oldest)
                    break;
                drop_locked(oldest);
            }
            s->out = cus_rtc_output_ref_(out);
            s->pending = false;
            s->stamp = ++clock_now;
            bytes_held += out->bytes;
        }
    }
    pthread_cond_broadcast(&done);
}

bool cus_rtc_cache_enabled_(void)
{
    return atomic_load_explicit(&enabled, memory_order_relaxed);
}

CUS_API void cus_program_cache_set_enabled(bool on)
{
    atomic_store_explicit(&enabled, on, memory_order_relaxed);
}

CUS_API void cus_program_cache_clear(void)
{
    CUS_LOCK_SCOPE(&lock);
    for (size_t i = 0; i < CUS_PROGRAM_CACHE_MAX_ENTRIES; i++)
        if (slots[i].used && !slots[i].pending)
            drop_locked(&slots[i]);
    hits = misses = 0;
}

CUS_API void cus_program_cache_get_stats(cus_program_cache_stats *stats)
{
    if (!stats)
        return;
    CUS_LOCK_SCOPE(&lock);
    size_t n = 0;
    for (size_t i = 0; i < CUS_PROGRAM_CACHE_MAX_ENTRIES; i++)
        n += slots[i].used && !slots[i].pending;
    *stats = (cus_program_cache_stats){.entries = n, .bytes = bytes_held, .hits = hits,
                                       .misses = misses};
}

static void atfork_child(bool forked)
{
    (void)forked;
    pthread_mutex_init(&lock, NULL);
    pthread_cond_init(&done, NULL);
    /* a parent thread's pending compile will never finish here */
    for (size_t i = 0; i < CUS_PROGRAM_CACHE_MAX_ENTRIES; i++)
        if (slots[i].pending)
            memset(&slots[i], 0, sizeof slots[i]);
}

__attribute__((constructor)) static void register_fork_hook(void)
{
    cus_fork_register_child_hook_(atfork_child);
}
