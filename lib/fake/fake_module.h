/* The module area (fake_module*.c): modules, functions, globals, launches
 * and host kernels; what graph replay needs of a launch. */
#ifndef CUSCOPE_LIB_FAKE_MODULE_H
#define CUSCOPE_LIB_FAKE_MODULE_H

#include "fake_memory.h"

/* Frees a LAUNCH operation's payload (a queue dropped at reset, or done). */
FAKE_HIDDEN void fake_module_launch_free(fake_launch_exec *exec);
/* Graph replay (fake_graph.c): a copy of a captured launch's payload for one
 * cuGraphLaunch of exec on stream (as passed), NULL when out of memory; and
 * the launch record of a launch queued (or captured). */
FAKE_HIDDEN fake_launch_exec *fake_module_launch_replay(const fake_launch_exec *x, CUgraphExec exec,
                                                        CUstream stream);
FAKE_HIDDEN void fake_module_record_launch_locked(const fake_launch_exec *x);
/* The kernel's name when its module went with its context (a graph that
 * outlived the context it was captured in), NULL otherwise. */
FAKE_HIDDEN const char *fake_module_launch_lost_with_context(const fake_launch_exec *x);
/* What cuGraphExecUpdate compares: the function's context, cooperative. */
FAKE_HIDDEN CUcontext fake_module_launch_context(const fake_launch_exec *x);
FAKE_HIDDEN bool fake_module_launch_cooperative(const fake_launch_exec *x);
/* A kernel node's launch (fake_graph_nodes.c): p checked as cuLaunchKernel
 * checks its arguments, *out a new payload; nothing queued. */
FAKE_HIDDEN CUresult fake_module_node_launch_locked(const CUDA_KERNEL_NODE_PARAMS_v2 *p,
                                                    fake_launch_exec **out);

#endif
