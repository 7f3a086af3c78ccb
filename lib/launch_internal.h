/* What launch.c calls in the files beside it: the launch attributes of an
 * extended launch (launch_attr.c) and the diagnosis of a configuration the
 * driver refused (launch_diagnose.c). Nothing here is API. */
#ifndef CUSCOPE_LIB_LAUNCH_INTERNAL_H
#define CUSCOPE_LIB_LAUNCH_INTERNAL_H

#include "internal.h"

/* The most attributes an extended launch sends: cluster and cooperative
 * (launch.c), then the nine of cus_launch_attrs_. */
#define CUS_LAUNCH_ATTRS_MAX_ 12

/* Appends the launch attributes of config (cuscope/launch.h) to attrs, from
 * attrs[*n], and adds their count to *n; checks each against its rule
 * first, and fails (recorded, naming `function` and the kernel's `name`)
 * with CUS_ERROR_INVALID_ARGUMENT, or CUS_ERROR_CONTEXT_MISMATCH for an event
 * or buffer of another context than ctx (the launch's), before anything is
 * kept or sent.
 * Then, with keep, keeps the window's buffer and the programmatic event
 * alive with the graph when config->stream is being captured (a kernel
 * node's caller keeps them itself). Makes no driver call unless an
 * attribute needs the context's priority range (cached) or the device's
 * domain count. */
CUS_HIDDEN cus_status cus_launch_attrs_(cus_context *ctx, const char *name,
                                        const cus_launch_config *config, CUlaunchAttribute *attrs,
                                        unsigned int *n, bool keep, const char *function);

/* The attributes of config a kernel node takes (graph_kernel_attr.c), into
 * attrs[0..*n): its cluster, cooperative and cus_launch_attrs_'s, with the
 * same checks; config->stream and the programmatic fields are refused
 * (CUS_ERROR_INVALID_ARGUMENT: a node has no stream, and programmatic
 * dependent launch is not a node attribute). Nothing kept. */
CUS_HIDDEN cus_status cus_graph_kernel_attrs_(cus_context *ctx, const char *name,
                                              const cus_launch_config *config,
                                              CUlaunchAttribute *attrs, unsigned int *n,
                                              const char *function);
/* "CU_LAUNCH_ATTRIBUTE_PRIORITY" for its id, for messages. */
CUS_HIDDEN const char *cus_launch_attribute_name_(CUlaunchAttributeID id);

/* A launch the driver refused: when st is a refusal of the configuration
 * (CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
 * CUDA_ERROR_INVALID_CLUSTER_SIZE) and the thread's last error is that
 * driver_call's, rewrites its message to name the launch
 * ("saxpy<<<(1,70000,1), (256,1,1), 0 B>>>") and each limit it broke, read
 * from the device and the function now. Returns st, always; the calls it
 * makes change no status and poison nothing, and one that fails leaves its
 * limit out. config is an extended launch's (grid, block and shared_bytes
 * are then its own), NULL for a plain one. Cold: only failure paths call it. */
CUS_HIDDEN cus_status cus_launch_diagnose_(const cus_function *fn, cus_dim3 grid, cus_dim3 block,
                                           unsigned int shared_bytes,
                                           const cus_launch_config *config, cus_status st,
                                           const char *driver_call)
    __attribute__((cold, noinline));

#endif
