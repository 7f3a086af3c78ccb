/* cuscope/cuscope.h: the umbrella header. */
#ifndef CUSCOPE_CUSCOPE_H
#define CUSCOPE_CUSCOPE_H

#include "version.h"
#include "object.h"
#include "status.h"
#include "driver.h"
#include "device.h"
#include "context.h"
#include "stream.h"
#include "event.h"
#include "memory.h"
#include "pool.h"
#include "module.h"
#include "function.h"
#include "library.h"
#include "launch.h"
#include "graph.h"
#include "graph_nodes.h"
#include "graph_conditional.h"
#include "graph_inspect.h"
#include "graph_capture.h"
#include "graph_memory.h"
#include "ipc.h"
#include "array.h"
#include "vmm.h"
#include "raw.h"
#include "program.h"
#include "link.h"
#include "green.h"
#include "tensor_map.h"

#endif
