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
/* Whether x was launched with CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
 * (a capture makes its edges from kernel nodes programmatic). */
FAKE_HIDDEN bool fake_module_launch_programmatic(const fake_launch_exec *x);
/* A kernel node's launch (fake_graph_nodes.c): p checked as cuLaunchKernel
 * checks its arguments, *out a new payload; nothing queued. like: the
 * node's launch before (a change of its parameters), whose attributes the
 * new one keeps and is checked with; NULL for a new node. */
FAKE_HIDDEN CUresult fake_module_node_launch_locked(const CUDA_KERNEL_NODE_PARAMS_v2 *p,
                                                    const fake_launch_exec *like,
                                                    fake_launch_exec **out);
/* A kernel node's attributes (fake_graph_kernel_attr.c): one set, checked
 * as cuLaunchKernelEx checks it and with the node's launch shape; one read
 * (zeros when never set); all of src's copied onto dst. A failure changes
 * nothing. */
FAKE_HIDDEN CUresult fake_module_node_attribute_set_locked(fake_launch_exec *x,
                                                           CUlaunchAttributeID id,
                                                           const CUlaunchAttributeValue *value);
FAKE_HIDDEN CUresult fake_module_node_attribute_get(const fake_launch_exec *x,
                                                    CUlaunchAttributeID id,
                                                    CUlaunchAttributeValue *out);
FAKE_HIDDEN CUresult fake_module_node_attributes_copy_locked(fake_launch_exec *dst,
                                                             const fake_launch_exec *src);
/* Whether a kernel node's function lives: CUDA_SUCCESS; its module or
 * context gone: a misuse, CUDA_ERROR_INVALID_HANDLE; with healthy, its
 * context's sticky error too. */
FAKE_HIDDEN CUresult fake_module_node_function_locked(const fake_launch_exec *x, bool healthy);

#endif
