/* The table of every_call.h for the driver, status, device, context, stream
 * and event headers. */
#include "every_call.h"

static cus_status c_context_synchronize(world *w)
{
    return cus_context_synchronize(w->ctx);
}

static cus_status c_stream_create(world *w)
{
    cus_autoptr(cus_stream) s = NULL;
    return cus_stream_create(w->ctx, CU_STREAM_NON_BLOCKING, 0, &s);
}

static cus_status c_event_record(world *w)
{
    return cus_event_record(w->event, w->stream);
}

const every_call every_calls_core[] = {
    {"cus_context_synchronize", c_context_synchronize, 0, NULL},
    {"cus_stream_create", c_stream_create, 0, NULL},
    {"cus_event_record", c_event_record, 0, NULL},
    {NULL, NULL, 0, NULL},
};
