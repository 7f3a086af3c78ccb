/* The table of every_call.h for green.h: SM resources, their split and
 * descriptors, green contexts, and a stream of a green context. */
#include <cuscope/green.h>

#include "every_call.h"

static cus_status c_device_sm_resource(world *w)
{
    CUdevResource res = {.type = CU_DEV_RESOURCE_TYPE_INVALID};
    EC_RETURN_OUT(cus_device_sm_resource(w->dev, &res), res.type == CU_DEV_RESOURCE_TYPE_SM);
}

/* One group of 16 of the device's SMs and the remaining group. */
static cus_status split16(world *w, CUdevResource *group, CUdevResource *rest)
{
    CUdevResource res;
    CUS_TRY(cus_device_sm_resource(w->dev, &res));
    unsigned int n = 1;
    EC_RETURN_OUT(cus_sm_resource_split(&res, 16, 0, group, &n, rest),
                  n == 1 && group->sm.smCount == 16);
}

static cus_status c_sm_resource_split(world *w)
{
    CUdevResource group, rest;
    return split16(w, &group, &rest);
}

static cus_status c_sm_resource_desc(world *w)
{
    CUdevResource group, rest;
    CUS_TRY(split16(w, &group, &rest));
    CUdevResourceDesc d = NULL;
    EC_RETURN_OUT(cus_sm_resource_desc(&group, 1, &d), d != NULL);
}

static cus_status green16(world *w, cus_context **out)
{
    CUdevResource group, rest;
    CUS_TRY(split16(w, &group, &rest));
    cus_context *g = NULL;
    EC_CHECK_OUT(cus_context_create_green(w->dev, &group, 1, 0, &g), g != NULL);
    *out = g;
    return CUS_SUCCESS;
}

static cus_status c_context_create_green(world *w)
{
    cus_autoptr(cus_context) g = NULL;
    EC_RETURN_OUT(green16(w, &g), cus_context_get_kind(g) == CUS_CONTEXT_GREEN);
}

static cus_status c_context_sm_resource(world *w)
{
    CUdevResource res = {.type = CU_DEV_RESOURCE_TYPE_INVALID};
    EC_RETURN_OUT(cus_context_sm_resource(w->ctx, &res), res.type == CU_DEV_RESOURCE_TYPE_SM);
}

static cus_status c_context_sm_count(world *w)
{
    unsigned int n = 0;
    EC_RETURN_OUT(cus_context_sm_count(w->ctx, &n), n > 0);
}

static cus_status c_stream_create_green(world *w)
{
    cus_autoptr(cus_context) g = NULL;
    CUS_TRY(green16(w, &g));
    cus_autoptr(cus_stream) s = NULL;
    EC_RETURN_OUT(cus_stream_create(g, 0, 0, &s), s != NULL);
}

/* An event of a green context of its own, recorded for it (the green
 * context has no stream: the record waits for nothing), then waited for. */
static cus_status c_context_record_event(world *w)
{
    cus_autoptr(cus_context) g = NULL;
    CUS_TRY(green16(w, &g));
    cus_autoptr(cus_event) e = NULL;
    CUS_TRY(cus_event_create(g, CU_EVENT_DISABLE_TIMING, &e));
    CUS_TRY(cus_context_record_event(g, e));
    return cus_event_synchronize(e);
}

/* A green context of its own waits for an event recorded for it. */
static cus_status c_context_wait_event(world *w)
{
    cus_autoptr(cus_context) g = NULL;
    CUS_TRY(green16(w, &g));
    cus_autoptr(cus_event) e = NULL;
    CUS_TRY(cus_event_create(g, CU_EVENT_DISABLE_TIMING, &e));
    CUS_TRY(cus_context_record_event(g, e));
    return cus_context_wait_event(g, e);
}

#define OWN_OBJECTS "touches no object of the world's context"

const every_call every_calls_green[] = {
    {"cus_device_sm_resource", c_device_sm_resource, EC_NOT_POISONED, OWN_OBJECTS, NULL},
    {"cus_sm_resource_split", c_sm_resource_split, EC_NOT_POISONED, OWN_OBJECTS, NULL},
    {"cus_sm_resource_desc", c_sm_resource_desc, EC_NOT_POISONED, OWN_OBJECTS, NULL},
    {"cus_context_create_green", c_context_create_green, EC_NOT_POISONED | EC_RELEASE_LEAVES_2,
     OWN_OBJECTS, NULL},
    {"cus_context_sm_resource", c_context_sm_resource, 0, NULL, NULL},
    {"cus_context_sm_count", c_context_sm_count, 0, NULL, NULL},
    {"cus_stream_create", c_stream_create_green, EC_NOT_POISONED | EC_RELEASE_LEAVES_2,
     "on a green context of its own: " OWN_OBJECTS, NULL},
    {"cus_context_record_event", c_context_record_event,
     EC_NOT_POISONED | EC_RELEASE_LEAVES_2 | EC_NO_OWN_SWITCH,
     "on a green context of its own, with an event of it (no switch: the calls name the green "
     "context): " OWN_OBJECTS, NULL},
    {"cus_context_wait_event", c_context_wait_event,
     EC_NOT_POISONED | EC_RELEASE_LEAVES_2 | EC_NO_OWN_SWITCH,
     "on a green context of its own, with an event of it (no switch): " OWN_OBJECTS, NULL},
    {NULL, NULL, 0, NULL, NULL},
};
