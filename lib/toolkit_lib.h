/* Opening a CUDA toolkit library (libnvrtc, libnvJitLink) at run time: the
 * one place that chooses which file, so that each such library is found the
 * same way. Nothing here is API. */
#ifndef CUSCOPE_LIB_TOOLKIT_LIB_H
#define CUSCOPE_LIB_TOOLKIT_LIB_H

#include <stddef.h>

#include "internal.h"

/* dlopen()s the library: `override` when set (a setter's path), else the
 * environment variable `env` when set and not empty (read with
 * secure_getenv: a setuid or setgid program ignores it, so whoever runs it
 * cannot make it load a library of their choosing), else each name of
 * `sonames` (NULL-terminated; newest first) in turn, on the loader's path,
 * then in the toolkit's lib64 directory under $CUDA_HOME, $CUDA_PATH (both
 * with secure_getenv) and /usr/local/cuda. On success *handle is
 * the library (RTLD_NOW | RTLD_LOCAL; never to be dlclose()d by callers that
 * keep pointers into it) and `tried` names the file that was loaded; on
 * failure *handle is NULL and `tried` says what was tried and why each
 * failed (dlerror), for the caller's message. Thread-safe (dlopen is);
 * records no error. */
CUS_HIDDEN void *cus_toolkit_lib_open_(const char *override, const char *env,
                                       const char *const *sonames, char *tried,
                                       size_t tried_size);

/* dlsym()s names[i] into fns[i] for i < n; returns the first name missing
 * (fns then partly written: unusable), or NULL on success. */
CUS_HIDDEN const char *cus_toolkit_lib_resolve_(void *handle, const char *const *names,
                                                void **fns, size_t n);

#endif
