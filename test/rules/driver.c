/* The driver under test: the fake (built with CUS_TEST_FAKE) or libcuda.so.1,
 * its entry points resolved at each row's ABI version, as cuscope's loader
 * does (lib/driver/loader.c): cuGetProcAddress_v2 with an explicit version,
 * never a plain dlsym. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef CUS_TEST_FAKE
#include <cuscope/fake.h>
#else
#include "../harness/libcuda.h"
#endif

#include "rules.h"

static int device_count;

#ifdef CUS_TEST_FAKE
const bool rules_on_fake = true;

/* trap_kernel's host implementation: what a trap gives on a GPU, a sticky
 * error that poisons the context. */
static CUresult trap_twin(const cus_fake_launch *launch, void **args, void *user)
{
    (void)launch;
    (void)args;
    (void)user;
    return CUDA_ERROR_LAUNCH_FAILED;
}

static PFN_cuGetProcAddress_v12000 open_resolver(char *why, size_t size)
{
    /* Two devices, for the otherdev column. */
    const cus_fake_config cfg = {.device_count = 2};
    cus_status st = cus_fake_install(&cfg);
    if (st != CUS_SUCCESS) {
        snprintf(why, size, "cus_fake_install: %s", cus_status_name(st));
        return NULL;
    }
    st = cus_fake_register_kernel("trap_kernel", trap_twin, NULL);
    if (st != CUS_SUCCESS) {
        snprintf(why, size, "cus_fake_register_kernel: %s", cus_status_name(st));
        return NULL;
    }
    return cus_fake_get_proc_address;
}

void rules_driver_close(void)
{
    cus_fake_uninstall();
}

void rules_driver_describe(char *buf, size_t size)
{
    snprintf(buf, size, "the fake (cuscope-fake, CUDA_VERSION %d headers), %d devices",
             CUDA_VERSION, device_count);
}
#else
const bool rules_on_fake = false;

static PFN_cuGetProcAddress_v12000 open_resolver(char *why, size_t size)
{
    return libcuda_resolver(why, size);
}

void rules_driver_close(void)
{
}

void rules_driver_describe(char *buf, size_t size)
{
    int version = 0;
    char name[128] = "?";
    if (drv.cuDriverGetVersion_2020)
        drv.cuDriverGetVersion_2020(&version);
    if (drv.cuDeviceGetName_2000 && device_count > 0)
        drv.cuDeviceGetName_2000(name, (int)sizeof name, 0);
    snprintf(buf, size, "libcuda (driver API %d.%d), %s, %d device%s", version / 1000,
             version % 1000 / 10, name, device_count, device_count == 1 ? "" : "s");
}
#endif

bool rules_driver_open(char *why, size_t size)
{
    PFN_cuGetProcAddress_v12000 resolve = open_resolver(why, size);
    if (!resolve)
        return false;
    memset(&drv, 0, sizeof drv);
    for (size_t i = 0; i < rules_row_count; i++) {
        const rules_row *row = &rules_rows[i];
        void *p = NULL;
        CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        if (resolve(row->symbol, &p, row->version, CU_GET_PROC_ADDRESS_DEFAULT, &found) !=
                CUDA_SUCCESS ||
            found != CU_GET_PROC_ADDRESS_SUCCESS)
            p = NULL;
        memcpy((char *)&drv + row->driver_offset, &p, sizeof p);
    }
    if (!rules_fixture_ready(why, size))
        return false;
    CUresult r = drv.cuInit_2000(0);
    char name[64];
    if (r != CUDA_SUCCESS) {
        snprintf(why, size, "cuInit: %s", rules_result_name(r, name, sizeof name));
        return false;
    }
    r = drv.cuDeviceGetCount_2000(&device_count);
    if (r != CUDA_SUCCESS || device_count < 1) {
        snprintf(why, size, "no device (cuDeviceGetCount: %s, %d)",
                 rules_result_name(r, name, sizeof name), device_count);
        return false;
    }
    return true;
}

int rules_device_count(void)
{
    return device_count;
}

const char *rules_result_name(CUresult r, char *buf, size_t size)
{
    const char *s = NULL;
    if (drv.cuGetErrorName_6000 && drv.cuGetErrorName_6000(r, &s) == CUDA_SUCCESS && s)
        rules_copy(buf, size, s);
    else
        snprintf(buf, size, "CUresult_%d", (int)r);
    return buf;
}
