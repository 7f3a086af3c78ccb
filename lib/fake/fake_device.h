/* The device area (fake_device.c): the configured devices and their attributes. */
#ifndef CUSCOPE_LIB_FAKE_DEVICE_H
#define CUSCOPE_LIB_FAKE_DEVICE_H

#include "fake_core.h"

/* --- devices (fake_device.c) ----------------------------------------------------- */

#define FAKE_DEVICE_NAME_MAX 256
/* Fixed sizes rather than CU_DEVICE_ATTRIBUTE_MAX / CU_LIMIT_MAX, which grow
 * with each toolkit: the fake answers the same with any headers. */
#define FAKE_ATTRIBUTE_SLOTS 256
#define FAKE_LIMIT_SLOTS 16

typedef struct fake_device {
    char name[FAKE_DEVICE_NAME_MAX];
    size_t total_memory;
    CUuuid uuid;
    int attributes[FAKE_ATTRIBUTE_SLOTS];
    /* The primary context: one record per device, created on the first
     * retain and kept (stable handle) until the next install. */
    struct CUctx_st *primary;
    int primary_retains;
} fake_device;

/* The configured devices (fake_device.c; applied by its reset hook). */
typedef struct fake_devices {
    bool no_devices;
    int count;
    fake_device devices[CUS_FAKE_MAX_DEVICES];
} fake_devices;

FAKE_HIDDEN extern fake_devices fake_dev;

/* The device for an ordinal, or NULL. */
static inline fake_device *fake_device_at_locked(CUdevice dev)
{
    return dev >= 0 && dev < fake_dev.count ? &fake_dev.devices[dev] : NULL;
}

#endif
