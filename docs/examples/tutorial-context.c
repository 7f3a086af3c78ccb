/* tutorial-context: contexts and the per-thread context stack
 * (docs/tutorial.md, "1. Context").
 *
 * A primary context (retained, never pushed), an owned context (created and
 * pushed, like cuCtxCreate), the stack calls, the two guard styles, and the
 * error a pop on an empty stack gives. Without a GPU it runs on the fake
 * driver.
 */
#include <stdbool.h>
#include <stdio.h>

#include <cuscope/cuscope.h>
#include <cuscope/fake.h>

static const char *kind_name(cus_context_kind kind)
{
    switch (kind) {
    case CUS_CONTEXT_OWNED: return "owned";
    case CUS_CONTEXT_PRIMARY: return "primary";
    case CUS_CONTEXT_FOREIGN: return "foreign";
    case CUS_CONTEXT_GREEN: return "green";
    }
    return "?";
}

/* A guard in declaration style: ctx is current from here to the end of the
 * function, on every return path. */
static cus_status print_limits(cus_context *ctx)
{
    cus_context_scope(guard, ctx);
    if (guard.status)
        return guard.status;
    size_t stack = 0, heap = 0;
    CUS_TRY(cus_context_get_limit(ctx, CU_LIMIT_STACK_SIZE, &stack));
    CUS_TRY(cus_context_get_limit(ctx, CU_LIMIT_MALLOC_HEAP_SIZE, &heap));
    printf("  in the scope: depth %u, %zu bytes of stack and %zu of heap per thread\n",
           cus_context_stack_depth(), stack, heap);
    return CUS_SUCCESS; /* the guard pops ctx here */
}

static cus_status run(void)
{
    cus_device dev;
    CUS_TRY(cus_device_get(0, &dev));

    /* The primary context: one cuDevicePrimaryCtxRetain, released with the
     * last reference. Retaining it does not make it current. */
    cus_autoptr(cus_context) primary = NULL;
    CUS_TRY(cus_context_retain_primary(dev, &primary));
    printf("retained the %s context: stack depth %u\n", kind_name(cus_context_get_kind(primary)),
           cus_context_stack_depth());

    /* Calls on a context make it current for themselves and restore the
     * stack: no guard needed for one call. */
    unsigned int version = 0;
    CUS_TRY(cus_context_api_version(primary, &version));
    printf("  its API version is %u.%u; stack depth still %u\n", version / 1000,
           version % 1000 / 10, cus_context_stack_depth());

    /* The guards. */
    CUS_TRY(print_limits(primary));
    printf("after the scope: stack depth %u\n", cus_context_stack_depth());

    /* An owned context: created and pushed, as cuCtxCreate does. The stack's
     * entry holds a reference of its own, so `owned` (the caller's
     * reference) and the stack each keep the context alive. */
    cus_autoptr(cus_context) owned = NULL;
    CUS_TRY(cus_context_create(dev, 0, &owned));
    printf("created an %s context: stack depth %u, current: %s\n",
           kind_name(cus_context_get_kind(owned)), cus_context_stack_depth(),
           cus_context_current() == owned ? "the new one" : "another");

    /* Push the primary context over it, then pop both. */
    CUS_TRY(cus_context_push(primary));
    printf("pushed the primary context: depth %u\n", cus_context_stack_depth());
    CUS_TRY(cus_context_pop(NULL));
    CUS_TRY(cus_context_pop(NULL)); /* the owned context, pushed by create */
    printf("popped both: depth %u\n", cus_context_stack_depth());

    /* A guard in block style: the block runs only if the push succeeded. */
    cus_status st;
    cus_with_context(owned, st)
    {
        printf("  in the block: the owned context is current (depth %u)\n",
               cus_context_stack_depth());
    }
    if (st)
        return st;

    /* Errors: a pop with nothing pushed fails without a driver call, and the
     * thread's last error says what happened. */
    st = cus_context_pop(NULL);
    printf("a pop on an empty stack: %s\n  %s\n", cus_status_name(st), cus_last_error_message());
    if (st != CUS_ERROR_UNBALANCED_POP)
        return CUS_ERROR_INVALID_ARGUMENT;

    /* owned is destroyed (cuCtxDestroy), then primary released, here. */
    return CUS_SUCCESS;
}

int main(void)
{
    bool on_fake = false;
    if (cus_init() != CUS_SUCCESS) {
        printf("%s\n", cus_last_error_message());
        printf("no GPU here: running on cuscope's fake driver\n");
        if (cus_fake_install(NULL) != CUS_SUCCESS || cus_init() != CUS_SUCCESS) {
            fprintf(stderr, "tutorial-context: the fake driver failed: %s\n",
                    cus_last_error_message());
            return 1;
        }
        on_fake = true;
    }

    cus_status st = run();
    if (st != CUS_SUCCESS) {
        fprintf(stderr, "tutorial-context: %s (%s)\n", cus_last_error_message(),
                cus_status_name(st));
        return 1;
    }
    if (cus_debug_live_objects() != 0) {
        fprintf(stderr, "tutorial-context: %zu objects still alive\n", cus_debug_live_objects());
        return 1;
    }
    if (on_fake && cus_fake_uninstall() != CUS_SUCCESS) {
        fprintf(stderr, "tutorial-context: %s\n", cus_last_error_message());
        return 1;
    }
    return 0;
}
