/* graph_nodes.c's changes of a node of a graph (not instantiated), for
 * graph_inspect.c's cus_graph_set_* functions: the packing and checks of the
 * add calls, the graph's context current, under its root's lock (refused
 * while the graph is captured into); the objects the new parameters name
 * are kept by the graph (room made before the driver call, kept on its
 * success); what the node used before stays kept until the graph dies. */
#ifndef CUSCOPE_LIB_GRAPH_SET_INTERNAL_H
#define CUSCOPE_LIB_GRAPH_SET_INTERNAL_H

#include "internal.h"

/* A kernel node (fn or k): taken is true for the macro's call, whose notes
 * (buffers and textures of the arguments) are taken or dropped. */
CUS_HIDDEN cus_status cus_graph_set_kernel_(cus_graph_node node, cus_function *fn, cus_kernel *k,
                                            cus_dim3 grid, cus_dim3 block,
                                            unsigned int shared_bytes, unsigned int nargs,
                                            void **args, const size_t *sizes, bool taken,
                                            const char *function);
/* Drops the macro's notes (a refused call that never reaches the above). */
CUS_HIDDEN void cus_graph_notes_drop_(void);
/* A 1-D copy node: one of dst and host_dst, one of src and host_src. */
CUS_HIDDEN cus_status cus_graph_set_copy_(cus_graph_node node, cus_buffer *dst, size_t dst_offset,
                                          const void *host_src, cus_buffer *src,
                                          size_t src_offset, void *host_dst, size_t bytes,
                                          const char *function);
/* A memset node of count elements of width bytes. */
CUS_HIDDEN cus_status cus_graph_set_fill_(cus_graph_node node, cus_buffer *buf, size_t offset,
                                          unsigned int value, unsigned int width, size_t count,
                                          const char *function);
/* A host function node's record: the driver calls cus_graph_host_trampoline_
 * with it. Freed with free() (graph_exec.c orphans such records, keyed on
 * free, when a replay could not be waited for). taken: NULL, or for an
 * executable graph's update (graph_inspect.c), the caller's flag, set when
 * the update took the record (from then on the update's to free). */
typedef struct cus_graph_host_record_ {
    cus_host_record_head_ head; /* first: read back by cus_graph_host_node_fn */
    bool *taken;
} cus_graph_host_record_;

/* Runs a record's function (cus_host_record_run_). */
CUS_HIDDEN void CUDA_CB cus_graph_host_trampoline_(void *record);

/* A host function node (a new record, kept by the graph). */
CUS_HIDDEN cus_status cus_graph_set_host_fn_(cus_graph_node node, cus_host_fn fn, void *user_data,
                                             const char *function);
/* An event record (record) or wait node. */
CUS_HIDDEN cus_status cus_graph_set_event_(cus_graph_node node, cus_event *event, bool record,
                                           const char *function);

#endif
