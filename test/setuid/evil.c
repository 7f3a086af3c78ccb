/* A library that must never be loaded by a setuid program: CUSCOPE_LIBCUDA
 * names it in test_setuid.c. Its constructor says so on stdout, which is how
 * the test tells that it ran; it has no cuGetProcAddress_v2, so cus_init
 * fails after loading it (when it is loaded at all). */
#include <stdio.h>

__attribute__((constructor)) static void say_loaded(void)
{
    fputs("cuscope-test: the CUSCOPE_LIBCUDA library's constructor ran\n", stdout);
    fflush(stdout);
}
