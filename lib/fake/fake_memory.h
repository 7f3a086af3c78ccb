/* The memory area (fake_memory*.c): allocations, registrations, copies,
 * memsets, pointer attributes, peers; module globals and graph allocations. */
#ifndef CUSCOPE_LIB_FAKE_MEMORY_H
#define CUSCOPE_LIB_FAKE_MEMORY_H

#include "fake_stream.h"

/* A module global: device memory of c, as bounds-checked as any allocation,
 * but not a registered handle: not counted as device memory (live handles,
 * bytes in use, cuMemGetInfo), never freed by cuMemFree nor by its context's
 * teardown, only by fake_memory_global_release_locked (its module's unload).
 * Zero-filled. CUDA_ERROR_OUT_OF_MEMORY. */
FAKE_HIDDEN CUresult fake_memory_global_new_locked(struct CUctx_st *c, size_t size,
                                                   fake_mem **out);
FAKE_HIDDEN void *fake_memory_global_base(const fake_mem *m);
FAKE_HIDDEN void fake_memory_global_release_locked(fake_mem *m, bool with_context);

/* --- graph memory and pointer checks (fake_memory.c) ------------------------------
 * A cuMemAllocAsync during capture makes a graph allocation: device memory
 * registered at once under the fixed address the node hands out, owned by the
 * graph bodies that allocate it (holds), made usable by each launch's
 * allocation node (valid) and unusable again by a free, and released (its
 * handle and bytes) once no body holds it, no launch left it allocated
 * (outstanding) and no allocation or free of it is still queued. */
FAKE_HIDDEN bool fake_memory_is_graph_alloc(const fake_mem *m);
FAKE_HIDDEN void fake_memory_graph_hold_locked(fake_mem *m);
FAKE_HIDDEN void fake_memory_graph_drop_locked(fake_mem *m);
/* Whether an earlier launch left it allocated, with no free queued since. */
FAKE_HIDDEN bool fake_memory_graph_outstanding(const fake_mem *m);
FAKE_HIDDEN void fake_memory_graph_set_outstanding_locked(fake_mem *m, bool outstanding);
/* An ALLOC or FREE operation of it was queued (its execution counts it off). */
FAKE_HIDDEN void fake_memory_graph_op_queued_locked(fake_mem *m);
/* For cuGraphExecUpdate: the device of an operand, and whether it is device
 * memory (device or managed) rather than host memory; NULL is host memory. */
FAKE_HIDDEN void fake_memory_operand_kind(const fake_mem *m, CUdevice *device, bool *on_device);
/* At execution: false, with a misuse, when addr lies in freed memory (or in a
 * graph allocation outside its lifetime); true for live or unknown memory. */
FAKE_HIDDEN bool fake_memory_pointer_usable_locked(uintptr_t addr, const char *what,
                                                   const fake_op *op);

#endif
