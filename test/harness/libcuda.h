/* libcuda as the tests that go around cuscope open it (the differentials
 * against the real driver: test/rules, test/corpus, test/probes), resolving
 * every entry point as cuscope's loader does: through cuGetProcAddress_v2
 * at an explicit ABI version, never a plain dlsym. No cmocka. */
#ifndef CUSCOPE_TEST_LIBCUDA_H
#define CUSCOPE_TEST_LIBCUDA_H

#include <stddef.h>

#include "cuscope/driver.h"

/* $CUSCOPE_LIBCUDA, or libcuda.so.1 (the copy already loaded when there is
 * one), and its cuGetProcAddress_v2; kept open for the process. NULL when
 * either is missing, with why (size bytes, NUL-terminated) saying which: the
 * caller skips (exit 77). */
cus_driver_resolver libcuda_resolver(char *why, size_t size);

#endif
