/* The table of every_call.h for pool.h: each entry makes the pool it needs
 * (on world->ctx) and releases it. */
#include <string.h>
#include <unistd.h>

#include <cuscope/pool.h>

#include "every_call.h"

static cus_status make_pool(world *w, CUmemAllocationHandleType handles, cus_pool **out)
{
    cus_pool_options o = {.handle_types = handles};
    return cus_pool_create(w->ctx, &o, out);
}

static cus_status c_pool_create(world *w)
{
    cus_autoptr(cus_pool) p = NULL;
    EC_RETURN_OUT(cus_pool_create(w->ctx, NULL, &p), p && cus_pool_handle(p));
}

static cus_status c_pool_create_ipc(world *w)
{
    cus_pool_options o = {.max_size = (size_t)64 << 20,
                          .handle_types = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR};
    cus_autoptr(cus_pool) p = NULL;
    EC_RETURN_OUT(cus_pool_create(w->ctx, &o, &p),
                  p && cus_pool_handle_types(p) == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
}

static cus_status c_pool_default(world *w)
{
    cus_autoptr(cus_pool) p = NULL;
    EC_RETURN_OUT(cus_pool_default(w->ctx, &p), p && cus_pool_get_kind(p) == CUS_POOL_BORROWED);
}

static cus_status c_pool_current(world *w)
{
    cus_autoptr(cus_pool) p = NULL;
    EC_RETURN_OUT(cus_pool_current(w->ctx, &p), p && cus_pool_handle(p));
}

/* Made current, then the default again: the world's device is as it was. */
static cus_status c_pool_set_current(world *w)
{
    cus_autoptr(cus_pool) p = NULL;
    cus_autoptr(cus_pool) def = NULL;
    CUS_TRY(make_pool(w, CU_MEM_HANDLE_TYPE_NONE, &p));
    CUS_TRY(cus_pool_default(w->ctx, &def));
    CUS_TRY(cus_pool_set_current(p));
    return cus_pool_set_current(def);
}

static cus_status c_pool_set_release_threshold(world *w)
{
    cus_autoptr(cus_pool) p = NULL;
    CUS_TRY(make_pool(w, CU_MEM_HANDLE_TYPE_NONE, &p));
    return cus_pool_set_release_threshold(p, UINT64_MAX);
}

static cus_status c_pool_get_release_threshold(world *w)
{
    cus_autoptr(cus_pool) p = NULL;
    CUS_TRY(make_pool(w, CU_MEM_HANDLE_TYPE_NONE, &p));
    uint64_t t = 1;
    EC_RETURN_OUT(cus_pool_get_release_threshold(p, &t), t == 0);
}

static cus_status c_pool_set_reuse(world *w)
{
    cus_autoptr(cus_pool) p = NULL;
    CUS_TRY(make_pool(w, CU_MEM_HANDLE_TYPE_NONE, &p));
    return cus_pool_set_reuse(p, CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES, false);
}

static cus_status c_pool_get_reuse(world *w)
{
    cus_autoptr(cus_pool) p = NULL;
    CUS_TRY(make_pool(w, CU_MEM_HANDLE_TYPE_NONE, &p));
    bool on = false;
    EC_RETURN_OUT(cus_pool_get_reuse(p, CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES, &on), on);
}

static cus_status c_pool_get_usage(world *w)
{
    cus_autoptr(cus_pool) p = NULL;
    CUS_TRY(make_pool(w, CU_MEM_HANDLE_TYPE_NONE, &p));
    cus_pool_usage u;
    memset(&u, 0xff, sizeof u);
    EC_RETURN_OUT(cus_pool_get_usage(p, &u), u.used_current == 0 && u.used_high == 0);
}

static cus_status c_pool_reset_high_water(world *w)
{
    cus_autoptr(cus_pool) p = NULL;
    CUS_TRY(make_pool(w, CU_MEM_HANDLE_TYPE_NONE, &p));
    return cus_pool_reset_high_water(p);
}

static cus_status c_pool_trim(world *w)
{
    cus_autoptr(cus_pool) p = NULL;
    CUS_TRY(make_pool(w, CU_MEM_HANDLE_TYPE_NONE, &p));
    return cus_pool_trim(p, 0);
}

static cus_status c_pool_set_access(world *w)
{
    cus_autoptr(cus_pool) p = NULL;
    CUS_TRY(make_pool(w, CU_MEM_HANDLE_TYPE_NONE, &p));
    return cus_pool_set_access(p, w->dev, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
}

static cus_status c_pool_get_access(world *w)
{
    cus_autoptr(cus_pool) p = NULL;
    CUS_TRY(make_pool(w, CU_MEM_HANDLE_TYPE_NONE, &p));
    CUmemAccess_flags f = CU_MEM_ACCESS_FLAGS_PROT_NONE;
    EC_RETURN_OUT(cus_pool_get_access(p, w->dev, &f), f == CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
}

static cus_status c_pool_alloc_async(world *w)
{
    cus_autoptr(cus_pool) p = NULL;
    CUS_TRY(make_pool(w, CU_MEM_HANDLE_TYPE_NONE, &p));
    cus_autoptr(cus_buffer) b = NULL;
    EC_RETURN_OUT(cus_pool_alloc_async(p, w->stream, 256, &b),
                  b && cus_buffer_get_kind(b) == CUS_BUFFER_STREAM_ORDERED);
}

static cus_status c_pool_export(world *w)
{
    cus_autoptr(cus_pool) p = NULL;
    CUS_TRY(make_pool(w, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, &p));
    int fd = -1;
    CUS_TRY(cus_pool_export(p, &fd));
    if (fd < 0)
        return ec_out_not_set(__func__, "fd >= 0");
    close(fd);
    return CUS_SUCCESS;
}

/* Exported, then imported in the same process (the fake allows it). */
static cus_status c_pool_import(world *w)
{
    cus_autoptr(cus_pool) p = NULL;
    CUS_TRY(make_pool(w, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, &p));
    int fd = -1;
    CUS_TRY(cus_pool_export(p, &fd));
    cus_autoptr(cus_pool) imported = NULL;
    cus_status st = cus_pool_import(w->ctx, fd, &imported);
    close(fd);
    CUS_TRY(st);
    if (cus_pool_get_kind(imported) != CUS_POOL_IMPORTED)
        return ec_out_not_set(__func__, "an imported pool");
    return CUS_SUCCESS;
}

static cus_status c_pool_export_pointer(world *w)
{
    cus_autoptr(cus_pool) p = NULL;
    CUS_TRY(make_pool(w, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, &p));
    cus_autoptr(cus_buffer) b = NULL;
    CUS_TRY(cus_pool_alloc_async(p, w->stream, 256, &b));
    /* the pool first: the driver refuses a pointer of a pool not exported */
    int fd = -1;
    CUS_TRY(cus_pool_export(p, &fd));
    close(fd);
    CUmemPoolPtrExportData data;
    return cus_pool_export_pointer(p, b, &data);
}

/* The chain, the importer's buffer released before the exporter's. */
static cus_status c_pool_import_pointer(world *w)
{
    cus_autoptr(cus_pool) p = NULL;
    CUS_TRY(make_pool(w, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, &p));
    cus_autoptr(cus_buffer) b = NULL;
    CUS_TRY(cus_pool_alloc_async(p, w->stream, 256, &b));
    CUS_TRY(cus_stream_synchronize(w->stream));
    int fd = -1;
    CUS_TRY(cus_pool_export(p, &fd));
    CUmemPoolPtrExportData data;
    CUS_TRY(cus_pool_export_pointer(p, b, &data));
    cus_autoptr(cus_pool) imported = NULL;
    cus_status st = cus_pool_import(w->ctx, fd, &imported);
    close(fd);
    CUS_TRY(st);
    cus_autoptr(cus_buffer) view = NULL;
    EC_RETURN_OUT(cus_pool_import_pointer(imported, &data, 256, &view),
                  view && cus_buffer_size(view) == 256);
}

const every_call every_calls_pool[] = {
    {"cus_pool_create", c_pool_create, 0, NULL, NULL},
    {"cus_pool_create (POSIX file descriptors, a maximum size)", c_pool_create_ipc, 0, NULL,
     NULL},
    {"cus_pool_default", c_pool_default, 0, NULL, NULL},
    {"cus_pool_current", c_pool_current, 0, NULL, NULL},
    {"cus_pool_set_current", c_pool_set_current, 0, NULL, NULL},
    {"cus_pool_set_release_threshold", c_pool_set_release_threshold, 0, NULL, NULL},
    {"cus_pool_get_release_threshold", c_pool_get_release_threshold, 0, NULL, NULL},
    {"cus_pool_set_reuse", c_pool_set_reuse, 0, NULL, NULL},
    {"cus_pool_get_reuse", c_pool_get_reuse, 0, NULL, NULL},
    {"cus_pool_get_usage", c_pool_get_usage, 0, NULL, NULL},
    {"cus_pool_reset_high_water", c_pool_reset_high_water, 0, NULL, NULL},
    {"cus_pool_trim", c_pool_trim, 0, NULL, NULL},
    {"cus_pool_set_access", c_pool_set_access, 0, NULL, NULL},
    {"cus_pool_get_access", c_pool_get_access, 0, NULL, NULL},
    {"cus_pool_alloc_async", c_pool_alloc_async, 0, NULL, NULL},
    {"cus_pool_export", c_pool_export, 0, NULL, NULL},
    {"cus_pool_import", c_pool_import, 0, NULL, NULL},
    {"cus_pool_export_pointer", c_pool_export_pointer, 0, NULL, NULL},
    {"cus_pool_import_pointer", c_pool_import_pointer, 0, NULL, NULL},
    {NULL, NULL, 0, NULL, NULL},
};
