/* The table of every_call.h for link.h: the driver's linker (cuLink*, which
 * the fake serves for PTX) on every_call_ptx, and the two nvJitLink calls
 * that make no driver call. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cuscope/link.h>

#include "every_call.h"

static const cus_link_options driver_link = {.backend = CUS_LINK_BACKEND_DRIVER};

static cus_status c_linker_create(world *w)
{
    cus_autoptr(cus_linker) l = NULL;
    EC_RETURN_OUT(cus_linker_create(w->ctx, &driver_link, &l), l != NULL);
}

/* A linker of w->ctx with every_call_ptx added: *out on success. */
static cus_status linker_with_ptx(world *w, cus_linker **out)
{
    cus_autoptr(cus_linker) l = NULL;
    CUS_TRY(cus_linker_create(w->ctx, &driver_link, &l));
    CUS_TRY(cus_linker_add_data(l, CUS_LINK_INPUT_PTX, every_call_ptx, every_call_ptx_size,
                                "every_call.ptx"));
    *out = cus_steal(&l);
    return CUS_SUCCESS;
}

static cus_status c_linker_add_data(world *w)
{
    cus_autoptr(cus_linker) l = NULL;
    return linker_with_ptx(w, &l);
}

/* every_call_ptx in a file (removed by the caller). */
static const char *ptx_file(char *path, size_t size)
{
    snprintf(path, size, "/tmp/cuscope-every-call-%ld.ptx", (long)getpid());
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(every_call_ptx, 1, every_call_ptx_size, f);
        fclose(f);
    }
    return path;
}

static cus_status c_linker_add_file(world *w)
{
    cus_autoptr(cus_linker) l = NULL;
    CUS_TRY(cus_linker_create(w->ctx, &driver_link, &l));
    char path[64];
    cus_status st = cus_linker_add_file(l, CUS_LINK_INPUT_PTX, ptx_file(path, sizeof path));
    unlink(path);
    return st;
}

static cus_status c_linker_complete(world *w)
{
    cus_autoptr(cus_linker) l = NULL;
    CUS_TRY(linker_with_ptx(w, &l));
    const void *cubin = NULL;
    size_t size = 0;
    EC_RETURN_OUT(cus_linker_complete(l, &cubin, &size), cubin && size);
}

static cus_status c_linker_load(world *w)
{
    cus_autoptr(cus_linker) l = NULL;
    CUS_TRY(linker_with_ptx(w, &l));
    cus_autoptr(cus_module) m = NULL;
    EC_RETURN_OUT(cus_linker_load(l, NULL, &m), m != NULL);
}

/* Absent nvJitLink is a valid outcome here. */
static cus_status c_link_nvjitlink_version(world *w)
{
    (void)w;
    cus_status st = cus_link_nvjitlink_version(NULL, NULL);
    return st == CUS_ERROR_NOT_SUPPORTED ? CUS_SUCCESS : st;
}

static cus_status c_link_set_nvjitlink_library(world *w)
{
    (void)w;
    return cus_link_set_nvjitlink_library(NULL);
}

const every_call every_calls_link[] = {
    {"cus_linker_create", c_linker_create, 0, NULL, NULL},
    {"cus_linker_add_data", c_linker_add_data, 0, NULL, NULL},
    {"cus_linker_add_file", c_linker_add_file, 0, NULL, NULL},
    {"cus_linker_complete", c_linker_complete, 0, NULL, NULL},
    {"cus_linker_load", c_linker_load, 0, NULL, NULL},
    {"cus_link_nvjitlink_version", c_link_nvjitlink_version,
     EC_HOST_FN_OK | EC_NOT_POISONED | EC_NO_DRIVER,
     "nvJitLink is no driver: it may be asked inside a host function and with a poisoned "
     "context; refused in a fork() child",
     NULL},
    {"cus_link_set_nvjitlink_library", c_link_set_nvjitlink_library,
     EC_HOST_FN_OK | EC_NOT_POISONED | EC_NO_DRIVER,
     "no driver call: allowed inside a host function and with a poisoned context; refused in "
     "a fork() child",
     NULL},
    {NULL, NULL, 0, NULL, NULL},
};
