/* Devices: plain values over the driver's ordinals. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

#define DEVICE_FAIL(r, call, dev)                                              \
    CUS_FAIL((cus_status)(r), (call), "device %d", (int)(dev).handle)

CUS_API cus_status cus_device_count(int *count)
{
    CUS_CHECK_ARG(count);
    CUS_API_ENTER();
    CUS_TRY(cus_driver_ensure_());
    int n = 0;
    CUresult r = cus_drv_.cuDeviceGetCount_(&n);
    if (r)
        return CUS_FAIL((cus_status)r, "cuDeviceGetCount", "counting devices");
    *count = n;
    return CUS_SUCCESS;
}

CUS_API cus_status cus_device_get(int ordinal, cus_device *out)
{
    CUS_CHECK_ARG(out);
    CUS_API_ENTER();
    CUS_TRY(cus_driver_ensure_());
    CUdevice d = 0;
    CUresult r = cus_drv_.cuDeviceGet_(&d, ordinal);
    if (r)
        return CUS_FAIL((cus_status)r, "cuDeviceGet", "device ordinal %d", ordinal);
    out->handle = d;
    return CUS_SUCCESS;
}

CUS_API cus_status cus_device_name(cus_device dev, char *name, size_t len)
{
    CUS_CHECK_ARG(name && len > 0);
    CUS_API_ENTER();
    CUS_TRY(cus_driver_ensure_());
    char buf[256];
    CUresult r = cus_drv_.cuDeviceGetName_(buf, (int)sizeof buf, dev.handle);
    if (r)
        return DEVICE_FAIL(r, "cuDeviceGetName", dev);
    buf[sizeof buf - 1] = '\0';
    snprintf(name, len, "%s", buf);
    return CUS_SUCCESS;
}

CUS_API cus_status cus_device_uuid(cus_device dev, CUuuid *uuid)
{
    CUS_CHECK_ARG(uuid);
    CUS_API_ENTER();
    CUS_TRY(cus_driver_ensure_());
    CUuuid u;
    CUresult r = cus_drv_.cuDeviceGetUuid_(&u, dev.handle);
    if (r)
        return DEVICE_FAIL(r, "cuDeviceGetUuid", dev);
    *uuid = u;
    return CUS_SUCCESS;
}

CUS_API cus_status cus_device_uuid_string(cus_device dev, char out[CUS_DEVICE_UUID_STRING_LEN])
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(out);
    CUuuid u;
    CUS_TRY(cus_device_uuid(dev, &u));
    const unsigned char *b = (const unsigned char *)u.bytes;
    snprintf(out, CUS_DEVICE_UUID_STRING_LEN,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
             b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
             b[15]);
    return CUS_SUCCESS;
}

CUS_API cus_status cus_device_total_memory(cus_device dev, size_t *bytes)
{
    CUS_CHECK_ARG(bytes);
    CUS_API_ENTER();
    CUS_TRY(cus_driver_ensure_());
    size_t n = 0;
    CUresult r = cus_drv_.cuDeviceTotalMem_(&n, dev.handle);
    if (r)
        return DEVICE_FAIL(r, "cuDeviceTotalMem", dev);
    *bytes = n;
    return CUS_SUCCESS;
}

CUS_API cus_status cus_device_attribute(cus_device dev, CUdevice_attribute attr, int *value)
{
    CUS_CHECK_ARG(value);
    CUS_API_ENTER();
    CUS_TRY(cus_driver_ensure_());
    int v = 0;
    CUresult r = cus_drv_.cuDeviceGetAttribute_(&v, attr, dev.handle);
    if (r)
        return CUS_FAIL((cus_status)r, "cuDeviceGetAttribute", "device %d, attribute %d",
                        (int)dev.handle, (int)attr);
    *value = v;
    return CUS_SUCCESS;
}

CUS_API cus_status cus_device_compute_capability(cus_device dev, int *major, int *minor)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(major && minor);
    int ma, mi;
    CUS_TRY(cus_device_attribute(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &ma));
    CUS_TRY(cus_device_attribute(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &mi));
    *major = ma;
    *minor = mi;
    return CUS_SUCCESS;
}
