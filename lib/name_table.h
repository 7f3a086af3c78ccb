/* A table from names to objects that lookups read without a lock: the
 * shape of function.c's function cache, for any object that embeds a
 * cus_name_key_ (library.c's kernels). Open addressing with linear probing,
 * keyed by the name's hash, at most half full, so that a probe always ends
 * at an empty slot. A slot goes from NULL to an object, published with
 * release, once, and never changes again; a table that grew is kept on
 * `older` until the owner dies, so that a lookup may probe any table it
 * loaded without the lock. Inserts (reserve, then put) are the owner's,
 * under its lock. */
#ifndef CUSCOPE_LIB_NAME_TABLE_H
#define CUSCOPE_LIB_NAME_TABLE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct cus_name_key_ {
    uint64_t hash;
    char *name;
} cus_name_key_;

typedef struct cus_name_table_ {
    struct cus_name_table_ *older;
    size_t mask; /* slots - 1; slots is a power of two */
    _Atomic(void *) slots[];
} cus_name_table_;

/* FNV-1a, 64 bits. */
static inline uint64_t cus_name_hash_(const char *name)
{
    uint64_t h = 0xcbf29ce484222325u;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        h = (h ^ *p) * 0x100000001b3u;
    return h;
}

static inline const cus_name_key_ *cus_name_key_of_(const void *obj, size_t key_offset)
{
    return (const cus_name_key_ *)(const void *)((const char *)obj + key_offset);
}

/* The object called name in t, or NULL; without the lock (see above). */
static inline void *cus_name_table_find_(const cus_name_table_ *t, const char *name,
                                         uint64_t hash, size_t key_offset)
{
    for (size_t i = (size_t)hash & t->mask;; i = (i + 1) & t->mask) {
        void *o = atomic_load_explicit(&t->slots[i], memory_order_acquire);
        if (!o)
            return NULL;
        const cus_name_key_ *k = cus_name_key_of_(o, key_offset);
        if (k->hash == hash && strcmp(k->name, name) == 0)
            return o;
    }
}

static inline void cus_name_table_put_(cus_name_table_ *t, void *obj, size_t key_offset)
{
    size_t i = (size_t)cus_name_key_of_(obj, key_offset)->hash & t->mask;
    while (atomic_load_explicit(&t->slots[i], memory_order_relaxed))
        i = (i + 1) & t->mask;
    atomic_store_explicit(&t->slots[i], obj, memory_order_release);
}

/* Room for one more object beside `used`, under the owner's lock: a table
 * twice the size replaces a half-full one. false when out of host memory,
 * the table unchanged. */
static inline bool cus_name_table_reserve_(_Atomic(cus_name_table_ *) *tp, size_t used,
                                           size_t key_offset)
{
    cus_name_table_ *t = atomic_load_explicit(tp, memory_order_relaxed);
    size_t slots = t ? t->mask + 1 : 0;
    if ((used + 1) * 2 <= slots)
        return true;
    size_t want = slots ? slots * 2 : 8;
    cus_name_table_ *grown = cus_calloc_(1, sizeof *grown + want * sizeof grown->slots[0]);
    if (!grown)
        return false;
    grown->older = t;
    grown->mask = want - 1;
    for (size_t i = 0; i < slots; i++) {
        void *o = atomic_load_explicit(&t->slots[i], memory_order_relaxed);
        if (o)
            cus_name_table_put_(grown, o, key_offset);
    }
    atomic_store_explicit(tp, grown, memory_order_release);
    return true;
}

/* Frees the tables, and each object with free_obj (the newest table holds
 * them all). */
static inline void cus_name_table_free_(_Atomic(cus_name_table_ *) *tp, void (*free_obj)(void *))
{
    cus_name_table_ *t = atomic_load_explicit(tp, memory_order_relaxed);
    for (size_t i = 0; t && i <= t->mask; i++) {
        void *o = atomic_load_explicit(&t->slots[i], memory_order_relaxed);
        if (o)
            free_obj(o);
    }
    while (t) {
        cus_name_table_ *older = t->older;
        free(t);
        t = older;
    }
    atomic_store_explicit(tp, NULL, memory_order_relaxed);
}

#endif
