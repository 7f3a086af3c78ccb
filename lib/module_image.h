/* What module.c shares with library.c (cuscope/library.h): the image checks,
 * the JIT option array and the JIT logs of a load, and reading a file. A
 * library is loaded from the same images with the same options as a module,
 * and its failures read the same. Nothing here is API. */
#ifndef CUSCOPE_LIB_MODULE_IMAGE_H
#define CUSCOPE_LIB_MODULE_IMAGE_H

#include "internal.h"

/* The JIT's logs of a load (module.c says why these sizes). */
#define CUS_JIT_ERROR_LOG_SIZE_ CUS_ERROR_MESSAGE_MAX_
#define CUS_JIT_INFO_LOG_SIZE_PTX_ 16384
#define CUS_JIT_INFO_LOG_SIZE_BINARY_ 4096

typedef struct cus_jit_opts_ {
    CUjit_option keys[10];
    void *values[10];
    unsigned int n;
} cus_jit_opts_;

/* Checks an image before the driver reads it (cus_module_load_data's
 * rules); its format in *format. Failures recorded naming function. */
CUS_HIDDEN cus_status cus_image_check_(const void *image, size_t size, cus_image_format *format,
                                       const char *function);
/* The option array of a load: both logs, then what jit asks (may be NULL). */
CUS_HIDDEN cus_status cus_jit_opts_build_(const char *function, cus_jit_opts_ *o,
                                          const cus_jit_options *jit, char *error_log,
                                          size_t error_size, char *info_log, size_t info_size);
/* Records a failed load: st (already latched where sticky), with the JIT's
 * error log in the message. Returns st. */
CUS_HIDDEN cus_status cus_jit_load_fail_(cus_status st, const char *function,
                                         const char *driver_call, cus_image_format format,
                                         const char *error_log);
/* The info log to keep: NULL when empty (read as ""), else a trimmed copy in
 * *kept; false when that copy could not be made. */
CUS_HIDDEN bool cus_jit_info_keep_(const char *info_log, char **kept);
/* The whole file at path, with room for a NUL after it, in *data (to free). */
CUS_HIDDEN cus_status cus_file_read_(const char *path, unsigned char **data, size_t *size);

#endif
