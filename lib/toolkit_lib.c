/* Opening a toolkit library at run time (toolkit_lib.h). The handles are
 * never dlclose()d: the toolkit's libraries keep threads and static state. */
#define _GNU_SOURCE /* secure_getenv */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "toolkit_lib.h"

/* Appends "'name' (why)" to tried, separated by "; ". */
static void note(char *tried, size_t size, const char *name, const char *why)
{
    size_t used = strlen(tried);
    if (used + 1 < size)
        snprintf(tried + used, size - used, "%s'%s' (%s)", used ? "; " : "", name,
                 why ? why : "unknown reason");
}

static void *open_one(const char *name, char *tried, size_t size)
{
    void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        note(tried, size, name, dlerror());
    return h;
}

void *cus_toolkit_open_(const char *path, const char *env, const char *const *sonames,
                        char *tried, size_t tried_size)
{
    if (tried_size)
        tried[0] = 0;
    if (path)
        return open_one(path, tried, tried_size);
    const char *from_env = env ? secure_getenv(env) : NULL;
    if (from_env && *from_env)
        return open_one(from_env, tried, tried_size);
    for (size_t i = 0; sonames && sonames[i]; i++) {
        void *h = open_one(sonames[i], tried, tried_size);
        if (h)
            return h;
    }
    return NULL;
}

const char *cus_toolkit_resolve_(void *handle, const char *const *names, void **fns, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!(fns[i] = dlsym(handle, names[i])))
            return names[i];
    return NULL;
}
