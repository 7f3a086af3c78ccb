/* The library's version, for programs that check it against their headers. */
#include "internal.h"

CUS_API unsigned int cus_version(void)
{
    return CUSCOPE_VERSION;
}

CUS_API const char *cus_version_string(void)
{
    return CUSCOPE_VERSION_STRING;
}
