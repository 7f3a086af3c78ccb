/* Internal: the linker (link.c) and its two backends, nvJitLink
 * (link_nvjitlink.c) and the driver's cuLink* (link_driver.c). Nothing here
 * is API. */
#ifndef CUSCOPE_LIB_LINK_INTERNAL_H
#define CUSCOPE_LIB_LINK_INTERNAL_H

#include "cuscope/link.h"
#include "internal.h"

typedef enum cus_link_state_ {
    CUS_LINK_OPEN_ = 0, /* taking inputs */
    CUS_LINK_COMPLETE_, /* cubin made */
    CUS_LINK_FAILED_,   /* an add or the completion failed */
} cus_link_state_;

struct cus_linker {
    cus_refcount refs;
    /* Serializes the linker's calls: neither backend's state is thread-safe. */
    pthread_mutex_t lock;
    cus_context *ctx; /* a reference, or NULL (nvJitLink with an explicit arch) */
    const struct cus_link_ops_ *ops;
    void *handle; /* nvJitLinkHandle or CUlinkState; NULL once freed */
    cus_link_state_ state;
    int arch;                   /* the target, sm_<arch>; 0: the context's (driver) */
    char *error_log, *info_log; /* trimmed copies; NULL reads "" */
    void *cubin;                /* the linked cubin, ours */
    size_t cubin_size;
    /* The driver backend's log buffers, given to cuLinkCreate: the driver
     * writes them during every later call, so they live with the state. */
    char *driver_error, *driver_info;
    /* cuLinkCreate's option arrays: with output options (the log sizes) the
     * driver writes optionValues until cuLinkDestroy ("optionValues must
     * remain valid for the life of the CUlinkState if output options are
     * used", cuda.h), so they live with the state too, never on a stack. */
    CUjit_option driver_keys[8];
    void *driver_values[8];
};

/* A backend. Each call runs under the linker's lock, records its failure
 * naming `function`, and (add, complete) leaves the backend's error log in
 * l->error_log. complete sets l->cubin, l->cubin_size and l->info_log;
 * destroy frees the backend's state (a failure goes to the destroy
 * handler). */
typedef struct cus_link_ops_ {
    cus_link_backend backend;
    cus_status (*create)(cus_linker *l, const cus_link_options *o, const char *function);
    cus_status (*add_data)(cus_linker *l, cus_link_input type, const void *data, size_t size,
                           const char *name, const char *function);
    cus_status (*add_file)(cus_linker *l, cus_link_input type, const char *path,
                           const char *function);
    cus_status (*complete)(cus_linker *l, const char *function);
    void (*destroy)(cus_linker *l);
} cus_link_ops_;

CUS_HIDDEN extern const cus_link_ops_ cus_link_nvjitlink_ops_;
CUS_HIDDEN extern const cus_link_ops_ cus_link_driver_ops_;

/* Opens nvJitLink once (until cus_link_set_nvjitlink_library): CUS_SUCCESS,
 * or CUS_ERROR_NOT_SUPPORTED, recorded naming function when `record`. */
CUS_HIDDEN cus_status cus_nvjitlink_load_(const char *function, bool record);

/* Replaces l->error_log with a trimmed copy of log (NULL or "": none). A
 * copy that cannot be made leaves none (the message still has the log). */
CUS_HIDDEN void cus_link_keep_error_log_(cus_linker *l, const char *log);
/* A trimmed copy of log into *dst (NULL when empty); false when out of
 * memory. */
CUS_HIDDEN bool cus_link_copy_log_(char **dst, const char *log);

#endif
