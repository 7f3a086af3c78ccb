/* Internal: the driver table. The only way cuscope reaches the driver.
 * Members carry a trailing underscore: cuda.h #defines many entry point names
 * to versioned ones (cuCtxCreate to cuCtxCreate_v4), and a pasted name is
 * never macro-expanded, so a member is always the ABI that entries.h names. */
#ifndef CUSCOPE_LIB_DRIVER_H
#define CUSCOPE_LIB_DRIVER_H

#include <cuda.h>
#include <cudaTypedefs.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "entries.h"

struct cus_driver_table {
#define CUS_DRIVER_FIELD_(field, symbol, version, need) PFN_##symbol##_v##version field##_;
    CUS_DRIVER_ENTRIES(CUS_DRIVER_FIELD_)
#undef CUS_DRIVER_FIELD_
};

/* Filled by cus_init(); read without locks once cus_driver_ready_ is set
 * (release/acquire). */
extern struct cus_driver_table cus_drv_;
extern atomic_bool cus_driver_ready_;
extern int cus_driver_version_;

/* Hooks the layer above sets (fork.c, from its constructor), so that the
 * loader calls nothing above it by name. Either may be NULL. */
typedef struct cus_driver_hooks_ {
    /* Under the load lock, before anything is loaded: a cus_status; a failure
     * (recorded by the hook) fails the load. */
    int (*before_load)(void);
    /* Right before cuscope's first call into a driver (the resolver). */
    void (*before_first_call)(void);
} cus_driver_hooks_;
/* Sets the hooks; *hooks must outlive the library. */
__attribute__((visibility("hidden"))) void cus_driver_set_hooks_(const cus_driver_hooks_ *hooks);

/* Cheap check used by every entry that needs the driver: one acquire load on
 * the fast path, cus_init() otherwise. */
__attribute__((visibility("hidden"))) int cus_driver_ensure_slow_(void);
static inline int cus_driver_ensure_(void)
{
    if (__builtin_expect(atomic_load_explicit(&cus_driver_ready_, memory_order_acquire), 1))
        return 0;
    return cus_driver_ensure_slow_();
}

#endif
