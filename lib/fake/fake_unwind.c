/* cus_fake_reset: the way back to a clean thread after a run with
 * persistent faults, for fault sweeps (docs/testing.md).
 *
 * A persistent fault fails the pops that cuscope's guards and temporary
 * switches make on the way out, so a run can end with contexts still on the
 * thread's stacks: on the fake's stack above cuscope's mirror (a switch's
 * failed pop, reported to the destroy handler) or on both (a guard's). The
 * references the mirror holds keep cuscope objects alive, and the next
 * cus_fake_install() would be refused as busy. This file sits above the
 * fake's areas and cuscope's public API, and calls both. */
#include "cuscope/context.h"
#include "fake_context.h"

CUS_API cus_status cus_fake_reset(unsigned int *popped)
{
    if (fake_in_host_function())
        return CUS_ERROR_IN_HOST_FUNCTION;
    cus_fake_clear_faults();
    /* First what the fake has above cuscope's mirror: those entries are the
     * top of its stack, since every later push was popped in order. */
    int mirror = (int)cus_context_stack_depth();
    fake_lock();
    unsigned int n = (unsigned int)fake_context_pop_thread_to_locked(mirror);
    fake_unlock();
    /* Then cuscope's own entries, through cuscope, which drops its
     * references; with the faults gone these pops work. */
    cus_status st = CUS_SUCCESS;
    while (cus_context_stack_depth() > 0) {
        st = cus_context_pop(NULL);
        if (st != CUS_SUCCESS)
            break;
        n++;
    }
    /* And the work that a failure left queued, whose records hold
     * references too. */
    cus_fake_run_streams();
    if (popped)
        *popped = n;
    return st;
}
