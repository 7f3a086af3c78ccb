#include <stdio.h>
#include <string.h>

#include "scenarios.h"

#define EXPECT(cond)                                                           \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "%s:%d: scenario check failed: %s\n", __FILE__, __LINE__, #cond); \
            return SCN_WRONG;                                                  \
        }                                                                      \
    } while (0)

static cus_status scn_init(void *arg)
{
    (void)arg;
    CUS_TRY(cus_init());
    int version = 0;
    CUS_TRY(cus_driver_version(&version));
    EXPECT(version >= CUSCOPE_MIN_DRIVER_VERSION);
    return CUS_SUCCESS;
}

static cus_status scn_device_query(void *arg)
{
    (void)arg;
    int n = 0;
    CUS_TRY(cus_device_count(&n));
    EXPECT(n >= 1);
    cus_device dev;
    CUS_TRY(cus_device_get(0, &dev));
    char name[128], uuid[CUS_DEVICE_UUID_STRING_LEN];
    CUS_TRY(cus_device_name(dev, name, sizeof name));
    EXPECT(name[0] != '\0');
    CUS_TRY(cus_device_uuid_string(dev, uuid));
    EXPECT(strncmp(uuid, "GPU-", 4) == 0 && strlen(uuid) == CUS_DEVICE_UUID_STRING_LEN - 1);
    size_t mem = 0;
    CUS_TRY(cus_device_total_memory(dev, &mem));
    EXPECT(mem > 0);
    int major = 0, minor = 0, sms = 0;
    CUS_TRY(cus_device_compute_capability(dev, &major, &minor));
    EXPECT(major >= 3);
    CUS_TRY(cus_device_attribute(dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &sms));
    EXPECT(sms > 0);
    return CUS_SUCCESS;
}

/* cus_context_create pushes; pop hands the stack's reference back. */
static cus_status scn_create_pushes(void *arg)
{
    (void)arg;
    cus_device dev;
    CUS_TRY(cus_device_get(0, &dev));
    unsigned int depth = cus_context_stack_depth();
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(cus_context_create(dev, 0, &ctx));
    EXPECT(cus_context_stack_depth() == depth + 1 && cus_context_current() == ctx);
    CUS_TRY(cus_context_synchronize(ctx));
    cus_autoptr(cus_context) popped = NULL;
    CUS_TRY(cus_context_pop(&popped));
    EXPECT(popped == ctx && cus_context_stack_depth() == depth);
    return CUS_SUCCESS;
}

static cus_status scn_create_no_push(void *arg)
{
    (void)arg;
    cus_device dev;
    CUS_TRY(cus_device_get(0, &dev));
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(cus_context_create(dev, CUS_CTX_NO_PUSH | CU_CTX_SCHED_BLOCKING_SYNC, &ctx));
    EXPECT(cus_context_stack_depth() == 0);
    unsigned int flags = 0;
    CUS_TRY(cus_context_flags(ctx, &flags));
    EXPECT(flags & CU_CTX_SCHED_BLOCKING_SYNC);
    EXPECT(cus_context_stack_depth() == 0);
    CUS_TRY(cus_context_push(ctx));
    CUS_TRY(cus_context_pop(NULL));
    return CUS_SUCCESS;
}

/* The primary context: retained, never pushed; queried under a guard. */
static cus_status scn_primary_queries(void *arg)
{
    (void)arg;
    cus_device dev;
    CUS_TRY(cus_device_get(0, &dev));
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(cus_context_retain_primary(dev, &ctx));
    EXPECT(cus_context_stack_depth() == 0);
    EXPECT(cus_context_get_kind(ctx) == CUS_CONTEXT_PRIMARY);

    cus_context_scope(g, ctx);
    CUS_TRY(g.status);
    EXPECT(cus_context_current() == ctx);
    unsigned int api = 0;
    CUS_TRY(cus_context_api_version(ctx, &api));
    EXPECT(api >= 3020);
    size_t stack = 0;
    CUS_TRY(cus_context_get_limit(ctx, CU_LIMIT_STACK_SIZE, &stack));
    CUS_TRY(cus_context_set_limit(ctx, CU_LIMIT_STACK_SIZE, stack + 1024));
    size_t stack2 = 0;
    CUS_TRY(cus_context_get_limit(ctx, CU_LIMIT_STACK_SIZE, &stack2));
    EXPECT(stack2 >= stack + 1024);
    CUS_TRY(cus_context_set_limit(ctx, CU_LIMIT_STACK_SIZE, stack));
    CUfunc_cache cache;
    CUS_TRY(cus_context_get_cache_config(ctx, &cache));
    CUS_TRY(cus_context_set_cache_config(ctx, cache));
    if (cus_driver_has("cuCtxGetSharedMemConfig")) { /* deprecated; gone from some drivers */
        CUsharedconfig banks;
        CUS_TRY(cus_context_get_shared_mem_config(ctx, &banks));
        CUS_TRY(cus_context_set_shared_mem_config(ctx, banks));
    }
    int least = 1, greatest = 1;
    CUS_TRY(cus_context_stream_priority_range(ctx, &least, &greatest));
    EXPECT(greatest <= least);
    CUS_TRY(cus_context_synchronize(ctx));
    return CUS_SUCCESS;
}

/* Guards nest, take the fast path when already current, and restore the
 * exact stack; the block form runs its body once. */
static cus_status scn_nested_guards(void *arg)
{
    (void)arg;
    cus_device dev;
    CUS_TRY(cus_device_get(0, &dev));
    cus_autoptr(cus_context) a = NULL;
    cus_autoptr(cus_context) b = NULL;
    CUS_TRY(cus_context_retain_primary(dev, &a));
    CUS_TRY(cus_context_create(dev, CUS_CTX_NO_PUSH, &b));
    {
        cus_context_scope(ga, a);
        CUS_TRY(ga.status);
        {
            cus_context_scope(gb, b);
            CUS_TRY(gb.status);
            EXPECT(cus_context_current() == b && cus_context_stack_depth() == 2);
            cus_context_scope(gb2, b); /* already on top: no push */
            CUS_TRY(gb2.status);
            EXPECT(cus_context_stack_depth() == 2);
            CUS_TRY(cus_context_synchronize(b));
            CUS_TRY(cus_context_synchronize(a)); /* not on top: a temporary switch */
            EXPECT(cus_context_current() == b && cus_context_stack_depth() == 2);
        }
        EXPECT(cus_context_current() == a && cus_context_stack_depth() == 1);
        cus_status st = CUS_SUCCESS;
        int runs = 0;
        cus_with_context(b, st)
        {
            runs++;
            EXPECT(cus_context_current() == b);
        }
        CUS_TRY(st);
        EXPECT(runs == 1 && cus_context_current() == a);
    }
    EXPECT(cus_context_stack_depth() == 0);
    return CUS_SUCCESS;
}

/* set_current replaces the top; NULL pops only the top. */
static cus_status scn_set_current(void *arg)
{
    (void)arg;
    cus_device dev;
    CUS_TRY(cus_device_get(0, &dev));
    cus_autoptr(cus_context) a = NULL;
    cus_autoptr(cus_context) b = NULL;
    CUS_TRY(cus_context_create(dev, CUS_CTX_NO_PUSH, &a));
    CUS_TRY(cus_context_create(dev, CUS_CTX_NO_PUSH, &b));
    CUS_TRY(cus_context_set_current(a)); /* empty stack: a becomes the top */
    EXPECT(cus_context_stack_depth() == 1 && cus_context_current() == a);
    CUS_TRY(cus_context_push(b));
    CUS_TRY(cus_context_set_current(a)); /* replaces b */
    EXPECT(cus_context_stack_depth() == 2 && cus_context_current() == a);
    CUS_TRY(cus_context_set_current(NULL)); /* pops only the top */
    EXPECT(cus_context_stack_depth() == 1 && cus_context_current() == a);
    CUS_TRY(cus_context_set_current(NULL));
    EXPECT(cus_context_stack_depth() == 0 && cus_context_current() == NULL);
    CUS_TRY(cus_context_set_current(NULL)); /* no-op on an empty stack */
    EXPECT(cus_context_stack_depth() == 0);
    return CUS_SUCCESS;
}

/* A foreign context: wrapped, used, never destroyed by cuscope. */
static cus_status scn_wrap_foreign(void *arg)
{
    (void)arg;
    cus_device dev;
    CUS_TRY(cus_device_get(0, &dev));
    cus_autoptr(cus_context) owner = NULL;
    CUS_TRY(cus_context_create(dev, CUS_CTX_NO_PUSH, &owner));
    {
        cus_autoptr(cus_context) view = NULL;
        CUS_TRY(cus_context_wrap(cus_context_handle(owner), &view));
        EXPECT(cus_context_get_kind(view) == CUS_CONTEXT_FOREIGN);
        EXPECT(cus_context_device(view).handle == dev.handle);
        EXPECT(cus_context_stack_depth() == 0);
        cus_context_scope(g, view);
        CUS_TRY(g.status);
        CUS_TRY(cus_context_synchronize(view));
    }
    /* The view is gone; the owner's context must still work. */
    CUS_TRY(cus_context_synchronize(owner));
    return CUS_SUCCESS;
}

/* Release order does not matter: the stack's reference keeps a context
 * alive after the caller drops its own. */
static cus_status scn_release_while_pushed(void *arg)
{
    (void)arg;
    cus_device dev;
    CUS_TRY(cus_device_get(0, &dev));
    cus_context *ctx = NULL;
    CUS_TRY(cus_context_create(dev, 0, &ctx));
    ctx = cus_context_unref(ctx); /* only the stack holds it now */
    cus_context *top = cus_context_current();
    EXPECT(top != NULL);
    CUS_TRY(cus_context_synchronize(top));
    CUS_TRY(cus_context_pop(NULL)); /* destroys it */
    EXPECT(cus_context_stack_depth() == 0);
    return CUS_SUCCESS;
}

const scenario context_scenarios[] = {
    {"init", scn_init},
    {"device_query", scn_device_query},
    {"create_pushes", scn_create_pushes},
    {"create_no_push", scn_create_no_push},
    {"primary_queries", scn_primary_queries},
    {"nested_guards", scn_nested_guards},
    {"set_current", scn_set_current},
    {"wrap_foreign", scn_wrap_foreign},
    {"release_while_pushed", scn_release_while_pushed},
    {NULL, NULL},
};
