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
/* Whether its memory exists now (an allocation executed, no free since),
 * counted in its device's graph memory (cuDeviceGetGraphMemAttribute). */
FAKE_HIDDEN void fake_memory_graph_set_valid_locked(fake_mem *m, bool valid);
/* A graph allocation of size bytes for an allocation node built by hand
 * (cuGraphAddMemAllocNode), registered at once under its fixed address, as
 * a captured one (held by no body yet: fake_memory_graph_hold_locked, or
 * fake_memory_graph_drop_locked to give it back), but not counted as a live
 * handle: a part of its graph's (its bytes are counted in use).
 * CUDA_ERROR_OUT_OF_MEMORY. */
FAKE_HIDDEN CUresult fake_memory_graph_new_locked(struct CUctx_st *c, size_t size,
                                                  fake_mem **out);
/* The live graph allocation that starts at addr, else NULL. */
FAKE_HIDDEN fake_mem *fake_memory_graph_at_locked(uintptr_t addr);
FAKE_HIDDEN size_t fake_memory_graph_size(const fake_mem *m);
FAKE_HIDDEN CUdevice fake_memory_graph_device(const fake_mem *m);
/* The device's graph memory, indexed by CUgraphMem_attribute; a high-water
 * mark reset to its current value (used: USED_MEM_HIGH, else RESERVED_MEM_HIGH);
 * the trim: reserved memory no executed allocation uses is given back. */
FAKE_HIDDEN void fake_memory_graph_usage_locked(CUdevice dev, cuuint64_t out[4]);
FAKE_HIDDEN void fake_memory_graph_reset_high_locked(CUdevice dev, bool used);
FAKE_HIDDEN void fake_memory_graph_trim_locked(CUdevice dev);
/* For cuGraphExecUpdate: the device of an operand, and whether it is device
 * memory (device or managed) rather than host memory; NULL is host memory. */
FAKE_HIDDEN void fake_memory_operand_kind(const fake_mem *m, CUdevice *device, bool *on_device);
/* At execution: false, with a misuse, when addr lies in freed memory (or in a
 * graph allocation outside its lifetime); true for live or unknown memory. */
FAKE_HIDDEN bool fake_memory_pointer_usable_locked(uintptr_t addr, const char *what,
                                                   const fake_op *op);

/* --- virtual memory mappings (fake_vmm.c) ----------------------------------------------
 * A cuMemMap range is device memory at an address the vmm area manages (its
 * reservation's pages, backed by its physical allocation): a record that the
 * range checks, pointer attributes and launch checks find as they find
 * allocations, but not a registered handle, not counted (the physical
 * allocation is: fake_memory_charge_locked), never doomed by a context's
 * teardown (a mapping belongs to its device, not to a context), and taken
 * out of the lookups by fake_memory_mapping_release_locked (cuMemUnmap), so
 * that the range can be mapped again; a use after that is reported. Memory
 * of a mapping whose device has no access (cuMemSetAccess) is refused with a
 * misuse and CUDA_ERROR_INVALID_VALUE. */
FAKE_HIDDEN fake_mem *fake_memory_mapping_new_locked(const void *mapping, CUdevice device,
                                                     uintptr_t base, size_t size);
FAKE_HIDDEN void fake_memory_mapping_release_locked(fake_mem *m);
/* The access `device` has all along [addr, addr + n) of a mapping (the
 * weakest of its pages'); set by the vmm area's constructor. */
typedef CUmemAccess_flags (*fake_mapping_access_fn)(const void *mapping, uintptr_t addr, size_t n,
                                                    CUdevice device);
FAKE_HIDDEN void fake_memory_set_mapping_access_fn(fake_mapping_access_fn fn);
/* Device memory that is no allocation of this area (a physical allocation):
 * false when the device's budget has no room for it. */
FAKE_HIDDEN bool fake_memory_charge_locked(CUdevice device, size_t size);
FAKE_HIDDEN void fake_memory_uncharge_locked(CUdevice device, size_t size);

#endif
