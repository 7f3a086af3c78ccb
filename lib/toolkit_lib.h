/* Internal: opening a toolkit library (nvJitLink, NVRTC) at run time, by an
 * explicit path, an environment variable or a list of sonames
 * (toolkit_lib.c). Nothing here is API. */
#ifndef CUSCOPE_LIB_TOOLKIT_LIB_H
#define CUSCOPE_LIB_TOOLKIT_LIB_H

#include <stddef.h>

/* dlopen()s, RTLD_NOW | RTLD_LOCAL, the first of: `path` when not NULL (a
 * setter's), else the environment variable `env` when set and not empty
 * (read with secure_getenv: a setuid program ignores it, so that whoever
 * runs it cannot make it load a library of their choosing), else each of
 * the NULL-terminated `sonames` in turn. Returns the handle, or NULL with
 * what was tried and dlerror()'s reasons in tried[tried_size]. */
__attribute__((visibility("hidden"))) void *cus_toolkit_open_(const char *path, const char *env,
                                                             const char *const *sonames,
                                                             char *tried, size_t tried_size);

/* dlsym()s names[i] into fns[i] for i < n, returns the first name
 * missing (fns then partly written: unusable), or NULL on success. */
__attribute__((visibility("hidden"))) const char *cus_toolkit_resolve_(void *handle,
                                                                       const char *const *names,
                                                                       void **fns, size_t n);

#endif
