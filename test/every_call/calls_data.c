/* The table of every_call.h for the memory, module, function, launch and
 * graph headers. */
#include "every_call.h"

static cus_status c_buffer_alloc(world *w)
{
    cus_autoptr(cus_buffer) b = NULL;
    return cus_buffer_alloc(w->ctx, 256, &b);
}

static cus_status c_copy_to_device(world *w)
{
    return cus_copy_to_device(w->buf, 0, w->bytes, 256);
}

static cus_status c_module_load_data(world *w)
{
    cus_autoptr(cus_module) m = NULL;
    return cus_module_load_data(w->ctx, every_call_ptx, every_call_ptx_size, NULL, &m);
}

static cus_status c_launch(world *w)
{
    return cus_launch(w->add, 1, 1, 0, w->stream, w->buf, 16u);
}

static cus_status c_graph_exec_launch(world *w)
{
    return cus_graph_exec_launch(w->exec, w->stream);
}

const every_call every_calls_data[] = {
    {"cus_buffer_alloc", c_buffer_alloc, 0, NULL},
    {"cus_copy_to_device", c_copy_to_device, 0, NULL},
    {"cus_module_load_data", c_module_load_data, 0, NULL},
    {"cus_launch", c_launch, 0, NULL},
    {"cus_graph_exec_launch", c_graph_exec_launch, 0, NULL},
    {NULL, NULL, 0, NULL},
};
