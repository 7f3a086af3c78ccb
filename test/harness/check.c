#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

_Noreturn void child_exit(int status)
{
#ifdef CUS_TEST_COVERAGE
    exit(status);
#else
    _exit(status);
#endif
}

#ifdef CUS_TEST_FAKE
void check_calls(unsigned long from, const char *const *want, const char *what)
{
    unsigned long now = cus_fake_call_count();
    size_t n = 0;
    while (want[n])
        n++;
    char got[1024] = "";
    size_t len = 0;
    for (unsigned long i = from; i < now && len < sizeof got - 64; i++) {
        const char *c = cus_fake_call_name(i);
        len += (size_t)snprintf(got + len, sizeof got - len, "%s%s", i == from ? "" : ", ",
                                c ? c : "?");
    }
    if (now - from != n)
        fail_msg("calls: [%s], expected [%s]", got, what);
    for (size_t i = 0; i < n; i++)
        if (!cus_fake_call_name(from + i) || strcmp(cus_fake_call_name(from + i), want[i]) != 0)
            fail_msg("calls: [%s], expected [%s]", got, what);
}

void *raw_lookup(const char *symbol, int version)
{
    void *pfn = NULL;
    CUdriverProcAddressQueryResult qs = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (cus_fake_get_proc_address(symbol, &pfn, version, 0, &qs) != CUDA_SUCCESS ||
        qs != CU_GET_PROC_ADDRESS_SUCCESS)
        return NULL;
    return pfn;
}

void *raw_fn(const char *symbol, int version)
{
    void *pfn = NULL;
    CUdriverProcAddressQueryResult qs = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    assert_int_equal(cus_fake_get_proc_address(symbol, &pfn, version, 0, &qs), CUDA_SUCCESS);
    if (qs != CU_GET_PROC_ADDRESS_SUCCESS)
        fail_msg("%s at %d is not available", symbol, version);
    assert_non_null(pfn);
    return pfn;
}

void raw_pop_current(void)
{
    PFN_cuCtxPopCurrent_v4000 pop = RAW_FN(PFN_cuCtxPopCurrent_v4000, "cuCtxPopCurrent", 4000);
    CUcontext got = NULL;
    assert_int_equal(pop(&got), CUDA_SUCCESS);
}

int reconcile_fake_stack(void)
{
    PFN_cuCtxPopCurrent_v4000 pop = RAW_FN(PFN_cuCtxPopCurrent_v4000, "cuCtxPopCurrent", 4000);
    int popped = 0;
    while (cus_fake_thread_stack_depth() > (int)cus_context_stack_depth()) {
        CUcontext h;
        if (pop(&h) != CUDA_SUCCESS)
            fail_msg("cannot pop the fake's stack (%d deep, cuscope's %u)",
                     cus_fake_thread_stack_depth(), cus_context_stack_depth());
        popped++;
    }
    return popped;
}
#endif
