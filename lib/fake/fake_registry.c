/* The handle registry: every record the fake issued since install, by key.
 *
 * An open-addressing hash table (linear probing, power-of-two capacity, at
 * most half full) from the key handed out to the record. Nothing is ever
 * removed before the next install: a destroyed handle stays as a tombstone
 * record, so a later use of it is recognised (and reported) rather than
 * undefined, and a new handle never reuses its address.
 *
 * Adding a kind (modules, graphs): add its value to
 * cus_fake_handle_kind, a line to kind_info below (its noun, and a finalizer if
 * the record owns more memory than itself), and a record struct that starts
 * with a fake_handle. Handles that are not pointers (CUdeviceptr) register
 * under their own key with fake_handle_new_locked(kind, size, key). */
#include <stdlib.h>
#include <string.h>

#include "fake_core.h"

typedef struct kind_info {
    const char *noun;
    void (*finalize)(fake_handle *h); /* frees what the record owns; NULL: nothing */
} kind_info;

static const kind_info kind_info_table[CUS_FAKE_HANDLE_KIND_COUNT_] = {
    [CUS_FAKE_HANDLE_ANY] = {"handle", NULL},
    [CUS_FAKE_HANDLE_CONTEXT] = {"context", NULL},
    [CUS_FAKE_HANDLE_PRIMARY_CONTEXT] = {"primary context", NULL},
    /* The records below own nothing the registry must free: the queues, the
     * memory blocks and the default streams are freed by the reset functions
     * of fake_stream.c, fake_event.c and fake_memory.c, which run first. */
    [CUS_FAKE_HANDLE_STREAM] = {"stream", NULL},
    [CUS_FAKE_HANDLE_EVENT] = {"event", NULL},
    [CUS_FAKE_HANDLE_DEVICE_MEMORY] = {"device memory", NULL},
    [CUS_FAKE_HANDLE_HOST_MEMORY] = {"pinned host memory", NULL},
    [CUS_FAKE_HANDLE_MANAGED_MEMORY] = {"managed memory", NULL},
    [CUS_FAKE_HANDLE_HOST_REGISTRATION] = {"host registration", NULL},
    [CUS_FAKE_HANDLE_IPC_MAPPING] = {"IPC mapping", NULL},
    [CUS_FAKE_HANDLE_ARRAY] = {"array", NULL},
    [CUS_FAKE_HANDLE_MIPMAPPED_ARRAY] = {"mipmapped array", NULL},
    [CUS_FAKE_HANDLE_TEXTURE] = {"texture object", NULL},
    [CUS_FAKE_HANDLE_SURFACE] = {"surface object", NULL},
    [CUS_FAKE_HANDLE_MEMORY_POOL] = {"memory pool", NULL},
    [CUS_FAKE_HANDLE_PHYSICAL_MEMORY] = {"physical allocation", NULL},
    [CUS_FAKE_HANDLE_VA_RESERVATION] = {"address reservation", NULL},
    [CUS_FAKE_HANDLE_LIBRARY] = {"library", NULL},
    [CUS_FAKE_HANDLE_LINK_STATE] = {"link state", NULL},
    [CUS_FAKE_HANDLE_GREEN_CONTEXT] = {"green context", NULL},
};

typedef struct slot {
    uintptr_t key; /* 0: empty (no handle is ever 0, the driver's NULL) */
    fake_handle *h;
} slot;

static slot *slots;
static size_t capacity; /* a power of two, or 0 */
static size_t used;
static unsigned long next_id;
static size_t live[CUS_FAKE_HANDLE_KIND_COUNT_];

/* Fibonacci hashing: spreads the aligned low bits of addresses. */
static size_t slot_of(uintptr_t key, size_t cap)
{
    return (size_t)(((uint64_t)key * UINT64_C(0x9E3779B97F4A7C15)) >> 17) & (cap - 1);
}

static bool grow_locked(void)
{
    size_t cap = capacity ? capacity * 2 : 64;
    slot *s = calloc(cap, sizeof *s);
    if (!s)
        return false;
    for (size_t i = 0; i < capacity; i++) {
        if (!slots[i].key)
            continue;
        size_t j = slot_of(slots[i].key, cap);
        while (s[j].key)
            j = (j + 1) & (cap - 1);
        s[j] = slots[i];
    }
    free(slots);
    slots = s;
    capacity = cap;
    return true;
}

fake_handle *fake_handle_find_locked(uintptr_t key)
{
    if (!key || !capacity)
        return NULL;
    for (size_t j = slot_of(key, capacity);; j = (j + 1) & (capacity - 1)) {
        if (slots[j].key == key)
            return slots[j].h;
        if (!slots[j].key)
            return NULL;
    }
}

void *fake_handle_new_locked(cus_fake_handle_kind kind, size_t size, uintptr_t key)
{
    if ((used + 1) * 2 > capacity && !grow_locked())
        return NULL;
    fake_handle *h = calloc(1, size < sizeof *h ? sizeof *h : size);
    if (!h)
        return NULL;
    if (!key)
        key = (uintptr_t)h;
    h->kind = kind;
    h->state = FAKE_LIVE;
    h->id = ++next_id;
    h->key = key;
    size_t j = slot_of(key, capacity);
    while (slots[j].key)
        j = (j + 1) & (capacity - 1);
    slots[j].key = key;
    slots[j].h = h;
    used++;
    live[kind]++;
    return h;
}

void fake_handle_uncount_locked(fake_handle *h)
{
    if (h->state == FAKE_LIVE)
        live[h->kind]--;
}

void fake_handle_set_state_locked(fake_handle *h, fake_handle_state state)
{
    if (h->state == state)
        return;
    if (h->state == FAKE_LIVE)
        live[h->kind]--;
    else if (state == FAKE_LIVE)
        live[h->kind]++;
    h->state = state;
}

size_t fake_handle_live_locked(cus_fake_handle_kind kind)
{
    if (kind != CUS_FAKE_HANDLE_ANY)
        return live[kind];
    size_t n = 0;
    for (int k = 0; k < CUS_FAKE_HANDLE_KIND_COUNT_; k++)
        n += live[k];
    return n;
}

const char *fake_kind_noun(cus_fake_handle_kind kind)
{
    if ((int)kind < 0 || kind >= CUS_FAKE_HANDLE_KIND_COUNT_ || !kind_info_table[kind].noun)
        return "handle";
    return kind_info_table[kind].noun;
}

void fake_registry_clear_locked(void)
{
    for (size_t i = 0; i < capacity; i++) {
        fake_handle *h = slots[i].h;
        if (!h)
            continue;
        void (*finalize)(fake_handle *) = kind_info_table[h->kind].finalize;
        if (finalize)
            finalize(h);
        free(h);
    }
    free(slots);
    slots = NULL;
    capacity = used = 0;
    next_id = 0;
    memset(live, 0, sizeof live);
}
