/* Internal: buffers over memory that cuscope does not free (memory.c makes
 * them; vmm.c's views and foreign.c's wrapped memory use them). */
#ifndef CUSCOPE_LIB_BUFFER_OWNER_H
#define CUSCOPE_LIB_BUFFER_OWNER_H

#include "internal.h"

/* What such a buffer holds instead of its memory: at the last unref,
 * release(obj, ptr, bytes) runs in place of the free (before the context is
 * let go). obj NULL: nothing is held (foreign memory). */
typedef struct cus_buffer_owner_ {
    void *obj;
    void (*release)(void *obj, CUdeviceptr ptr, size_t bytes);
} cus_buffer_owner_;

/* A new buffer of bytes at ptr in ctx, of a kind that is not freed
 * (CUS_BUFFER_VIEW, CUS_BUFFER_FOREIGN), holding owner. No driver call.
 * CUS_ERROR_OUT_OF_HOST_MEMORY (recorded, naming function); the owner is
 * then not taken (the caller still holds what it meant to hand over). */
CUS_HIDDEN cus_status cus_buffer_new_owned_(cus_context *ctx, CUdeviceptr ptr, size_t bytes,
                                            cus_buffer_kind kind, cus_buffer_owner_ owner,
                                            cus_buffer **out, const char *function);

/* Sets the address of a buffer made by cus_buffer_new_owned_ before its
 * memory existed (graph_memory.c: the record is made before the node, so
 * that a success cannot fail afterwards), before anyone else sees it. */
CUS_HIDDEN void cus_buffer_set_ptr_(cus_buffer *buf, CUdeviceptr ptr);

#endif
