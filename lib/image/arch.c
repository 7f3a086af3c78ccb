/* Which code runs on which device: the rules the driver applies to SASS
 * and to PTX of each architecture variant (see fake_image.h), used by
 * fatbin.c to choose an entry and by the module area to check a cubin. */
#include "image_internal.h"

bool fake_image_sass_runs_on(unsigned sm, unsigned variant, unsigned device_cc)
{
    if (variant == FAKE_IMAGE_ARCH_SPECIFIC)
        return sm == device_cc;
    /* plain and family-specific: the same major, a minor at or below */
    return sm / 10 == device_cc / 10 && sm % 10 <= device_cc % 10;
}

bool fake_image_ptx_runs_on(unsigned arch, unsigned variant, unsigned device_cc)
{
    if (variant == FAKE_IMAGE_ARCH_SPECIFIC)
        return arch == device_cc;
    if (variant == FAKE_IMAGE_ARCH_FAMILY)
        return arch / 10 == device_cc / 10 && arch % 10 <= device_cc % 10;
    return arch <= device_cc;
}
