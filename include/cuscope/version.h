/* cuscope/version.h: the version of the cuscope headers, and of the library
 * at run time.
 *
 * The ABI follows the soname (libcuscope.so.0) and the symbol version
 * (CUSCOPE_0): a program built against these headers runs with any library
 * of the same soname whose version is not older. Compare cus_version() with
 * CUSCOPE_VERSION to find a library older than the headers. */
#ifndef CUSCOPE_VERSION_H
#define CUSCOPE_VERSION_H

#include "object.h"

/* The headers' major version: a new one breaks the ABI (a new soname). */
#define CUSCOPE_VERSION_MAJOR 0
/* The headers' minor version. */
#define CUSCOPE_VERSION_MINOR 1
/* The headers' patch version. */
#define CUSCOPE_VERSION_PATCH 0
/* The headers' version as text, "major.minor.patch". */
#define CUSCOPE_VERSION_STRING "0.1.0"
/* 10000 * major + 100 * minor + patch: 100 for 0.1.0. */
#define CUSCOPE_VERSION                                                        \
    (CUSCOPE_VERSION_MAJOR * 10000 + CUSCOPE_VERSION_MINOR * 100 + CUSCOPE_VERSION_PATCH)
/* True when the headers are at least major.minor.patch. */
#define CUSCOPE_VERSION_AT_LEAST(major, minor, patch)                          \
    (CUSCOPE_VERSION >= (major) * 10000 + (minor) * 100 + (patch))

/* The oldest driver API version cuscope runs on (cuDriverGetVersion format:
 * 1000 * major + 10 * minor). 12.0 is where cuGetProcAddress gained the
 * symbol-status argument that the loader relies on. */
#define CUSCOPE_MIN_DRIVER_VERSION 12000

#ifdef __cplusplus
extern "C" {
#endif

/* The library's version in CUSCOPE_VERSION's form. Thread-safe; needs no
 * driver. */
CUS_API unsigned int cus_version(void);
/* The library's version as a static string ("0.1.0"). Thread-safe; needs no
 * driver. */
CUS_API const char *cus_version_string(void);

#ifdef __cplusplus
}
#endif

#endif
