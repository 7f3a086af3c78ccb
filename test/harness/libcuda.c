/* See libcuda.h. */
#include "libcuda.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cus_driver_resolver libcuda_resolver(char *why, size_t size)
{
    const char *lib = getenv("CUSCOPE_LIBCUDA");
    if (!lib || !*lib)
        lib = "libcuda.so.1";
    void *h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
    if (!h)
        h = dlopen(lib, RTLD_NOW);
    if (!h) {
        snprintf(why, size, "dlopen(%s): %s", lib, dlerror());
        return NULL;
    }
    void *p = dlsym(h, "cuGetProcAddress_v2");
    if (!p) {
        snprintf(why, size, "%s has no cuGetProcAddress_v2 (a driver older than 12.0)", lib);
        return NULL;
    }
    cus_driver_resolver resolve;
    memcpy(&resolve, &p, sizeof p);
    return resolve;
}
