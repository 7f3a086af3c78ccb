/* The table of every_call.h for vmm.h, and memory.h's cus_buffer_wrap.
 * raw.h's cus_driver_mem_free and cus_driver_mem_release have no row: they
 * free a raw handle that no cuscope object can hand them (test_vmm.c's
 * test_raw_cleanups covers them). */
#include <unistd.h>

#include "every_call.h"

#define G ((size_t)2 << 20) /* the fake's granularity */

static cus_status c_physical_granularity(world *w)
{
    size_t g = 0;
    EC_RETURN_OUT(cus_physical_granularity(w->ctx, false, &g), g == G);
}

static cus_status c_physical_granularity_recommended(world *w)
{
    size_t g = 0;
    EC_RETURN_OUT(cus_physical_granularity(w->ctx, true, &g), g >= G);
}

static cus_status c_physical_create(world *w)
{
    cus_autoptr(cus_physical) p = NULL;
    EC_RETURN_OUT(cus_physical_create(w->ctx, G, 0, &p), p != NULL);
}

static cus_status c_physical_export_fd(world *w)
{
    cus_autoptr(cus_physical) p = NULL;
    CUS_TRY(cus_physical_create(w->ctx, G, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, &p));
    int fd = -1;
    cus_status st = cus_physical_export_fd(p, &fd);
    if (fd >= 0)
        close(fd);
    return st;
}

static cus_status c_physical_import_fd(world *w)
{
    cus_autoptr(cus_physical) p = NULL;
    CUS_TRY(cus_physical_create(w->ctx, G, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, &p));
    int fd = -1;
    CUS_TRY(cus_physical_export_fd(p, &fd));
    cus_autoptr(cus_physical) q = NULL;
    cus_status st = cus_physical_import_fd(w->ctx, fd, G, &q);
    close(fd);
    CUS_TRY(st);
    return q ? CUS_SUCCESS : ec_out_not_set(__func__, "q != NULL");
}

static cus_status c_reservation_create(world *w)
{
    cus_autoptr(cus_reservation) r = NULL;
    EC_RETURN_OUT(cus_reservation_create(w->ctx, 2 * G, 0, 0, &r), cus_reservation_ptr(r) != 0);
}

/* A reservation of two granules and a physical allocation of one. */
static cus_status make_pair(world *w, cus_reservation **r, cus_physical **p)
{
    CUS_TRY(cus_reservation_create(w->ctx, 2 * G, 0, 0, r));
    return cus_physical_create(w->ctx, G, 0, p);
}

static cus_status c_reservation_map(world *w)
{
    cus_autoptr(cus_reservation) r = NULL;
    cus_autoptr(cus_physical) p = NULL;
    CUS_TRY(make_pair(w, &r, &p));
    EC_RETURN_OUT(cus_reservation_map(r, G, p, 0, G), cus_reservation_mapped_bytes(r) == G);
}

static cus_status c_reservation_unmap(world *w)
{
    cus_autoptr(cus_reservation) r = NULL;
    cus_autoptr(cus_physical) p = NULL;
    CUS_TRY(make_pair(w, &r, &p));
    CUS_TRY(cus_reservation_map(r, 0, p, 0, G));
    EC_RETURN_OUT(cus_reservation_unmap(r, 0, G), cus_reservation_mapped_bytes(r) == 0);
}

static cus_status c_reservation_set_access(world *w)
{
    cus_autoptr(cus_reservation) r = NULL;
    cus_autoptr(cus_physical) p = NULL;
    CUS_TRY(make_pair(w, &r, &p));
    CUS_TRY(cus_reservation_map(r, 0, p, 0, G));
    return cus_reservation_set_access(r, 0, G, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
}

static cus_status c_reservation_get_access(world *w)
{
    cus_autoptr(cus_reservation) r = NULL;
    cus_autoptr(cus_physical) p = NULL;
    CUS_TRY(make_pair(w, &r, &p));
    CUS_TRY(cus_reservation_map(r, 0, p, 0, G));
    CUS_TRY(cus_reservation_set_access(r, 0, G, CU_MEM_ACCESS_FLAGS_PROT_READ));
    CUmemAccess_flags f = CU_MEM_ACCESS_FLAGS_PROT_NONE;
    EC_RETURN_OUT(cus_reservation_get_access(r, 0, &f), f == CU_MEM_ACCESS_FLAGS_PROT_READ);
}

static cus_status c_reservation_buffer(world *w)
{
    cus_autoptr(cus_reservation) r = NULL;
    cus_autoptr(cus_physical) p = NULL;
    CUS_TRY(make_pair(w, &r, &p));
    CUS_TRY(cus_reservation_map(r, 0, p, 0, G));
    CUS_TRY(cus_reservation_set_access(r, 0, G, CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
    cus_autoptr(cus_buffer) b = NULL;
    EC_CHECK_OUT(cus_reservation_buffer(r, 64, 4096, &b), cus_buffer_size(b) == 4096);
    return cus_copy_to_device(b, 0, w->bytes, 256);
}

static cus_status c_growable_reserve(world *w)
{
    cus_autoptr(cus_growable) g = NULL;
    EC_RETURN_OUT(cus_growable_reserve(w->ctx, 3 * G, &g), cus_growable_ptr(g) != 0);
}

static cus_status c_growable_grow(world *w)
{
    cus_autoptr(cus_growable) g = NULL;
    CUS_TRY(cus_growable_reserve(w->ctx, 3 * G, &g));
    CUS_TRY(cus_growable_grow(g, 100));
    EC_RETURN_OUT(cus_growable_grow(g, G + 100), cus_growable_capacity(g) == 2 * G);
}

static cus_status c_growable_buffer(world *w)
{
    cus_autoptr(cus_growable) g = NULL;
    CUS_TRY(cus_growable_reserve(w->ctx, 3 * G, &g));
    CUS_TRY(cus_growable_grow(g, 4096));
    cus_autoptr(cus_buffer) b = NULL;
    EC_CHECK_OUT(cus_growable_buffer(g, &b), cus_buffer_size(b) == 4096);
    /* The fill returns before it is done, and the release below unmaps
     * without waiting (vmm.h): wait for it first. */
    CUS_TRY(cus_buffer_fill_u32(b, 0, 7u, 1024));
    return cus_context_synchronize(w->ctx);
}

static cus_status c_buffer_wrap(world *w)
{
    cus_autoptr(cus_buffer) b = NULL;
    EC_CHECK_OUT(cus_buffer_wrap(w->ctx, cus_buffer_ptr(w->buf) + 256, 1024, &b),
                 cus_buffer_get_kind(b) == CUS_BUFFER_FOREIGN);
    return cus_copy_to_device(b, 0, w->bytes, 1024);
}

const every_call every_calls_vmm[] = {
    {"cus_physical_granularity", c_physical_granularity, 0, NULL, NULL},
    {"cus_physical_granularity (recommended)", c_physical_granularity_recommended, 0, NULL, NULL},
    {"cus_physical_create", c_physical_create, 0, NULL, NULL},
    {"cus_physical_export_fd", c_physical_export_fd, 0, NULL, NULL},
    {"cus_physical_import_fd", c_physical_import_fd, 0, NULL, NULL},
    {"cus_reservation_create", c_reservation_create, 0, NULL, NULL},
    {"cus_reservation_map", c_reservation_map, 0, NULL, NULL},
    {"cus_reservation_unmap", c_reservation_unmap, 0, NULL, NULL},
    {"cus_reservation_set_access", c_reservation_set_access, 0, NULL, NULL},
    {"cus_reservation_get_access", c_reservation_get_access, 0, NULL, NULL},
    {"cus_reservation_buffer", c_reservation_buffer, EC_NO_OWN_SWITCH,
     "EC_NO_OWN_SWITCH: a view makes no driver call; the reports name the calls around it",
     NULL},
    {"cus_growable_reserve", c_growable_reserve, 0, NULL, NULL},
    {"cus_growable_grow", c_growable_grow, 0, NULL, NULL},
    {"cus_growable_buffer", c_growable_buffer, EC_NO_OWN_SWITCH,
     "EC_NO_OWN_SWITCH: a view makes no driver call; the reports name the calls around it",
     NULL},
    {"cus_buffer_wrap", c_buffer_wrap, 0, NULL, NULL},
    {NULL, NULL, 0, NULL, NULL},
};
