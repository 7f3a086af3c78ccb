/* Opening a CUDA toolkit library at run time (toolkit_lib.h). */
#define _GNU_SOURCE /* secure_getenv */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "toolkit_lib.h"

/* Appends "name (why)" to the list of what was tried. */
static void note_tried(char *tried, size_t size, const char *name, const char *why)
{
    size_t used = strlen(tried);
    if (used + 1 < size)
        snprintf(tried + used, size - used, "%s%s (%s)", used ? ", " : "", name,
                 why ? why : "unknown reason");
}

void *cus_toolkit_lib_open_(const char *override, const char *env, const char *const *sonames,
                            char *tried, size_t tried_size)
{
    if (tried_size)
        tried[0] = '\0';
    const char *path = override;
    if (!path && env) {
        path = secure_getenv(env);
        if (path && !*path)
            path = NULL;
    }
    if (path) {
        void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (h)
            snprintf(tried, tried_size, "%s", path);
        else
            note_tried(tried, tried_size, path, dlerror());
        return h;
    }
    for (const char *const *name = sonames; *name; name++) {
        void *h = dlopen(*name, RTLD_NOW | RTLD_LOCAL);
        if (h) {
            snprintf(tried, tried_size, "%s", *name);
            return h;
        }
        note_tried(tried, tried_size, *name, dlerror());
    }
    /* Not on the loader's path: the toolkit's own directory, where NVIDIA's
     * installers put it without always telling ld.so (CUDA_HOME and
     * CUDA_PATH as the toolkit's tools read them, then the default). */
    const char *roots[] = {secure_getenv("CUDA_HOME"), secure_getenv("CUDA_PATH"),
                           "/usr/local/cuda"};
    for (size_t r = 0; r < sizeof roots / sizeof roots[0]; r++) {
        if (!roots[r] || !*roots[r])
            continue;
        for (const char *const *name = sonames; *name; name++) {
            char file[4096];
            if (snprintf(file, sizeof file, "%s/lib64/%s", roots[r], *name) >= (int)sizeof file)
                continue;
            void *h = dlopen(file, RTLD_NOW | RTLD_LOCAL);
            if (h) {
                snprintf(tried, tried_size, "%s", file);
                return h;
            }
        }
    }
    note_tried(tried, tried_size, "the toolkit's lib64 (CUDA_HOME, CUDA_PATH, /usr/local/cuda)",
               "not there either");
    return NULL;
}

const char *cus_toolkit_lib_resolve_(void *handle, const char *const *names, void **fns, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!(fns[i] = dlsym(handle, names[i])))
            return names[i];
    return NULL;
}
