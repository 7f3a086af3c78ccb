/* Status names and descriptions: cuscope's own table (status.h) and the
 * driver's CUresult codes (generated from cuda.h), so both work without a
 * driver loaded. */
#include "internal.h"

typedef struct status_entry {
    int value;
    const char *name;
    const char *text;
} status_entry;

static const status_entry cuda_statuses[] = {
#define CUS_CUDA_STATUS(name, value, text) {value, #name, text},
#include "cuda_status_table.h"
#undef CUS_CUDA_STATUS
};

static const status_entry cus_statuses[] = {
    {CUS_SUCCESS, "CUS_SUCCESS", "no error"},
#define CUS_STATUS_ENTRY_(name, value, text) {value, "CUS_ERROR_" #name, text},
    CUS_STATUS_MAP(CUS_STATUS_ENTRY_)
#undef CUS_STATUS_ENTRY_
};

static const status_entry *find_status(cus_status status)
{
    const status_entry *table = status >= 10000 || status == 0 ? cus_statuses : cuda_statuses;
    size_t n = table == cus_statuses ? sizeof cus_statuses / sizeof cus_statuses[0]
                                     : sizeof cuda_statuses / sizeof cuda_statuses[0];
    for (size_t i = 0; i < n; i++)
        if (table[i].value == status)
            return &table[i];
    return NULL;
}

/* A code newer than the headers cuscope was built with: the loaded driver
 * knows its own codes. status.c sits below the driver table, so the loader
 * registers the asking (cus_status_set_describer_, from its constructor). */
static const char *(*describer)(cus_status status, bool name);

void cus_status_set_describer_(const char *(*fn)(cus_status status, bool name))
{
    describer = fn;
}

static const char *ask_driver(cus_status status, bool name)
{
    if (status <= 0 || status >= 10000 || !describer)
        return NULL;
    return describer(status, name);
}

CUS_API const char *cus_status_name(cus_status status)
{
    const status_entry *e = find_status(status);
    if (e)
        return e->name;
    const char *d = ask_driver(status, true);
    return d ? d : "CUS_UNKNOWN_STATUS";
}

CUS_API const char *cus_status_string(cus_status status)
{
    const status_entry *e = find_status(status);
    if (e)
        return e->text;
    const char *d = ask_driver(status, false);
    return d ? d : "unknown status code";
}

CUS_API bool cus_status_is_sticky(cus_status status)
{
    switch (status) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
        return true;
    default:
        return false;
    }
}
