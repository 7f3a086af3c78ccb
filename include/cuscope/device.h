/* cuscope/device.h: CUDA devices.
 *
 * A device is a plain value (it has no lifetime to manage). Every function
 * loads the driver on first use (see cus_init()), is thread-safe, and on
 * failure returns the status and records the thread's last error; out
 * parameters are untouched on failure.
 */
#ifndef CUSCOPE_DEVICE_H
#define CUSCOPE_DEVICE_H

#include <cuda.h>
#include <stddef.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A device: a plain value, passed by value. */
typedef struct cus_device {
    CUdevice handle; /* the driver's ordinal */
} cus_device;

/* The number of devices the driver sees. */
CUS_API cus_status cus_device_count(int *count);

/* The device with this ordinal (0 .. count-1). CUDA_ERROR_INVALID_DEVICE past
 * the end. */
CUS_API cus_status cus_device_get(int ordinal, cus_device *out);

/* The device's name, NUL-terminated, truncated to len - 1 bytes. */
CUS_API cus_status cus_device_name(cus_device dev, char *name, size_t len);

/* The device's UUID, raw (cuDeviceGetUuid). */
CUS_API cus_status cus_device_uuid(cus_device dev, CUuuid *uuid);
/* The bytes of a UUID as text, NUL included (cus_device_uuid_string). */
#define CUS_DEVICE_UUID_STRING_LEN 41
/* The device's UUID as text in nvidia-smi's form
 * ("GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", 41 bytes with the NUL). */
CUS_API cus_status cus_device_uuid_string(cus_device dev, char out[CUS_DEVICE_UUID_STRING_LEN]);

/* Total device memory in bytes. */
CUS_API cus_status cus_device_total_memory(cus_device dev, size_t *bytes);

/* One attribute (cuDeviceGetAttribute). */
CUS_API cus_status cus_device_attribute(cus_device dev, CUdevice_attribute attr, int *value);

/* Compute capability, e.g. 9.0 for an H100 or H200. */
CUS_API cus_status cus_device_compute_capability(cus_device dev, int *major, int *minor);

#ifdef __cplusplus
}
#endif

#endif
