/* cuscope/version.h: compile-time version of the cuscope headers. */
#ifndef CUSCOPE_VERSION_H
#define CUSCOPE_VERSION_H

#define CUSCOPE_VERSION_MAJOR 0
#define CUSCOPE_VERSION_MINOR 1
#define CUSCOPE_VERSION_PATCH 0
#define CUSCOPE_VERSION_STRING "0.1.0"

/* The oldest driver API version cuscope runs on (cuDriverGetVersion format:
 * 1000 * major + 10 * minor). 12.0 is where cuGetProcAddress gained the
 * symbol-status argument that the loader relies on. */
#define CUSCOPE_MIN_DRIVER_VERSION 12000

#endif
