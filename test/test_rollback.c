/* Creations whose closing pop fails: a creation (a stream, an event, a buffer
 * of each kind, a module) makes its handle under a temporary switch, and the
 * pop that ends the switch fails for good (it and its retry). Before the
 * switch contract (docs/design.md, "Temporary switches") the creation rolled
 * the handle back and returned the pop's failure, and a failing rollback
 * leaked the handle (found by the fault sweep's persistent runs over the
 * stream scenarios). Now the handle was made, so it is returned: the call
 * succeeds, no destroy is attempted (one armed to fail never fires), the
 * object is usable and is freed normally at its last release, nothing leaks,
 * and the destroy handler gets one report, naming the creation and
 * cuCtxPopCurrent; the context stays pushed on the driver's stack above
 * cuscope's mirror until the test pops it. */
#include <stdio.h>
#include <string.h>

#include "stream_common.h"
#include "harness/check.h"

/* The other creations: each makes one handle with a temporary switch to c
 * (not current), and uses what it made once the stack is reconciled. */
typedef struct creation {
    const char *name;
    const char *create_entry;
    const char *destroy_entry;
    cus_fake_handle_kind kind;
    /* Creates into *made; the object is released by `release`. */
    cus_status (*create)(cus_context *c, cus_stream *s, void **made);
    /* Uses the object (with the stack reconciled): the proof it works. */
    void (*use)(void *made, cus_stream *s);
    void (*release)(void *made);
} creation;

static cus_status make_stream(cus_context *c, cus_stream *s, void **made)
{
    (void)s;
    return cus_stream_create(c, 0, 0, (cus_stream **)made);
}

static void bump(void *data)
{
    ++*(int *)data;
}

static void use_stream(void *made, cus_stream *s)
{
    (void)s;
    int ran = 0;
    assert_ok(cus_stream_launch_host_fn(made, bump, &ran));
    assert_ok(cus_stream_synchronize(made));
    assert_int_equal(ran, 1);
}

static void release_stream(void *made)
{
    cus_stream_unref(made);
}

static cus_status make_event(cus_context *c, cus_stream *s, void **made)
{
    (void)s;
    return cus_event_create(c, 0, (cus_event **)made);
}

static void use_event(void *made, cus_stream *s)
{
    assert_ok(cus_event_record(made, s));
    assert_ok(cus_event_synchronize(made));
    bool done = false;
    assert_ok(cus_event_query(made, &done));
    assert_true(done);
}

static void release_event(void *made)
{
    cus_event_unref(made);
}

static cus_status make_buffer(cus_context *c, cus_stream *s, void **made)
{
    (void)s;
    return cus_buffer_alloc(c, 64, (cus_buffer **)made);
}

static cus_status make_async_buffer(cus_context *c, cus_stream *s, void **made)
{
    (void)c;
    return cus_buffer_alloc_async(s, 64, (cus_buffer **)made);
}

static cus_status make_managed_buffer(cus_context *c, cus_stream *s, void **made)
{
    (void)s;
    return cus_buffer_alloc_managed(c, 64, CU_MEM_ATTACH_GLOBAL, (cus_buffer **)made);
}

static void use_buffer(void *made, cus_stream *s)
{
    assert_ok(cus_stream_synchronize(s)); /* an async allocation is stream-ordered */
    unsigned char in[64], out[64] = {0};
    for (size_t i = 0; i < sizeof in; i++)
        in[i] = (unsigned char)(i * 3 + 1);
    assert_ok(cus_copy_to_device(made, 0, in, sizeof in));
    assert_ok(cus_copy_to_host(out, made, 0, sizeof out));
    assert_memory_equal(in, out, sizeof in);
}

static void release_buffer(void *made)
{
    cus_buffer_unref(made);
}

static cus_status make_host_buffer(cus_context *c, cus_stream *s, void **made)
{
    (void)s;
    return cus_host_buffer_alloc(c, 64, 0, (cus_host_buffer **)made);
}

static void use_host_buffer(void *made, cus_stream *s)
{
    (void)s;
    assert_true(cus_host_buffer_size(made) >= 64);
    unsigned char *p = cus_host_buffer_data(made);
    assert_non_null(p);
    memset(p, 0x5a, 64);
    assert_int_equal(p[63], 0x5a);
}

static void release_host_buffer(void *made)
{
    cus_host_buffer_unref(made);
}

static const char rollback_ptx[] = ".version 8.0\n.target sm_80\n.address_size 64\n"
                                   ".visible .entry k()\n{\n\tret;\n}\n";

static cus_status make_module(cus_context *c, cus_stream *s, void **made)
{
    (void)s;
    return cus_module_load_data(c, rollback_ptx, sizeof rollback_ptx, NULL, (cus_module **)made);
}

static void use_module(void *made, cus_stream *s)
{
    cus_function *f = NULL;
    assert_ok(cus_module_get_function(made, "k", &f));
    unsigned long launches = cus_fake_launch_count();
    assert_ok(cus_launch(f, 1, 1, 0, s));
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(cus_fake_launch_count(), launches + 1);
    cus_function_unref(f);
}

static void release_module(void *made)
{
    cus_module_unref(made);
}

static const creation creations[] = {
    {"cus_stream_create", "cuStreamCreateWithPriority", "cuStreamDestroy",
     CUS_FAKE_HANDLE_STREAM, make_stream, use_stream, release_stream},
    {"cus_event_create", "cuEventCreate", "cuEventDestroy", CUS_FAKE_HANDLE_EVENT, make_event,
     use_event, release_event},
    {"cus_buffer_alloc", "cuMemAlloc", "cuMemFree", CUS_FAKE_HANDLE_DEVICE_MEMORY, make_buffer,
     use_buffer, release_buffer},
    {"cus_buffer_alloc_async", "cuMemAllocAsync", "cuMemFreeAsync", CUS_FAKE_HANDLE_DEVICE_MEMORY,
     make_async_buffer, use_buffer, release_buffer},
    {"cus_buffer_alloc_managed", "cuMemAllocManaged", "cuMemFree", CUS_FAKE_HANDLE_MANAGED_MEMORY,
     make_managed_buffer, use_buffer, release_buffer},
    {"cus_host_buffer_alloc", "cuMemHostAlloc", "cuMemFreeHost", CUS_FAKE_HANDLE_HOST_MEMORY,
     make_host_buffer, use_host_buffer, release_host_buffer},
    {"cus_module_load_data", "cuModuleLoadDataEx", "cuModuleUnload", CUS_FAKE_HANDLE_MODULE,
     make_module, use_module, release_module},
};

static void check_creation(const creation *k)
{
    cus_context *c = new_ctx();
    cus_stream *s = new_stream(c, 0);
    size_t objects = cus_debug_live_objects();
    size_t before = cus_fake_live_handles(k->kind);
    unsigned long creates = cus_fake_calls_of(k->create_entry);
    unsigned long destroys = cus_fake_calls_of(k->destroy_entry);
    unsigned long reports = env_destroyed.count;
    /* The creation's own switch pops first: cus_stream_create asks the
     * context's priority range only once per context, and new_stream above
     * did (test_stream_create_with_every_pop_failing_names_itself has the
     * first create, with its two switches). */
    assert_ok(cus_fake_fail_entry("cuCtxPopCurrent", 1, FAULT, true));
    assert_ok(cus_fake_fail_entry(k->destroy_entry, 1, FAULT, false));
    cus_clear_last_error();
    void *made = NULL;
    cus_status st = k->create(c, s, &made);
    cus_fake_clear_faults();
    if (st != CUS_SUCCESS || cus_last_status() != CUS_SUCCESS)
        fail_msg("%s: returned %s (last error %s: %s), want CUS_SUCCESS: the handle was made",
                 k->name, cus_status_name(st), cus_status_name(cus_last_status()),
                 cus_last_error_message());
    if (!made)
        fail_msg("%s: succeeded with no object", k->name);
    if (cus_fake_calls_of(k->create_entry) != creates + 1)
        fail_msg("%s: %lu %s call(s), want 1", k->name,
                 cus_fake_calls_of(k->create_entry) - creates, k->create_entry);
    if (cus_fake_calls_of(k->destroy_entry) != destroys)
        fail_msg("%s: %lu %s call(s) during the creation: a rollback", k->name,
                 cus_fake_calls_of(k->destroy_entry) - destroys, k->destroy_entry);
    if (cus_fake_live_handles(k->kind) != before + 1)
        fail_msg("%s: %zu new handle(s), want the one returned", k->name,
                 cus_fake_live_handles(k->kind) - before);
    assert_int_equal(cus_debug_live_objects(), objects + 1);
    env_assert_one_pop_report(reports, k->name);
    assert_int_equal(env_destroyed.last_status, FAULT);
    /* c stays pushed on the driver's stack, one above cuscope's mirror. */
    assert_int_equal(cus_context_stack_depth(), 0);
    assert_int_equal(cus_fake_thread_stack_depth(), 1);
    assert_ptr_equal(cus_fake_thread_stack_at(0), cus_context_handle(c));
    assert_int_equal(reconcile_fake_stack(), 1);
    /* Usable, and freed normally. */
    k->use(made, s);
    k->release(made);
    assert_ok(cus_stream_synchronize(s));
    if (cus_fake_calls_of(k->destroy_entry) != destroys + 1)
        fail_msg("%s: its release made %lu %s call(s), want 1", k->name,
                 cus_fake_calls_of(k->destroy_entry) - destroys, k->destroy_entry);
    assert_int_equal(cus_fake_live_handles(k->kind), before);
    assert_int_equal(cus_debug_live_objects(), objects);
    assert_int_equal(env_destroyed.count, reports + 1); /* nothing more */
    s = cus_stream_unref(s);
    c = cus_context_unref(c);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY), 0);
}

static void test_stream_create_whose_pop_fails_returns_the_stream(void **state)
{
    (void)state;
    check_creation(&creations[0]);
}

static void test_event_create_whose_pop_fails_returns_the_event(void **state)
{
    (void)state;
    check_creation(&creations[1]);
}

static void test_every_creation_whose_pop_fails_returns_its_object(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof creations / sizeof creations[0]; i++) {
        assert_int_equal(env_setup_with(NULL), 0);
        check_creation(&creations[i]);
    }
    assert_int_equal(env_setup_with(NULL), 0);
}

/* The first cus_stream_create on a context makes a switch of its own before
 * the creation's, its internal call to cus_context_stream_priority_range
 * (the range is kept from then on): with every pop failing, both switches'
 * pops fail, and each report names the function the user called,
 * cus_stream_create (as its error records do). */
static unsigned long nested_reports, nested_misnamed;
static char nested_last_function[64];

static void record_nested(const cus_error *e, void *data)
{
    (void)data;
    nested_reports++;
    if (strcmp(e->function, "cus_stream_create") != 0 ||
        strcmp(e->driver_call, "cuCtxPopCurrent") != 0) {
        nested_misnamed++;
        snprintf(nested_last_function, sizeof nested_last_function, "%s/%s", e->function,
                 e->driver_call);
    }
}

static void test_stream_create_with_every_pop_failing_names_itself(void **state)
{
    (void)state;
    cus_context *c = new_ctx();
    nested_reports = nested_misnamed = 0;
    cus_set_destroy_error_handler(record_nested, NULL);
    assert_ok(cus_fake_fail_entry("cuCtxPopCurrent", 1, FAULT, true));
    cus_stream *s = NULL;
    cus_status st = cus_stream_create(c, 0, 0, &s);
    cus_fake_clear_faults();
    cus_set_destroy_error_handler(NULL, NULL);
    int left = reconcile_fake_stack();
    assert_int_equal(st, CUS_SUCCESS);
    assert_non_null(s);
    /* Each switch pushed c (the first one's push stayed: c was not on
     * cuscope's mirror for the second), and each pop failed. */
    assert_int_equal(left, 2);
    assert_int_equal(nested_reports, 2);
    if (nested_misnamed)
        fail_msg("%lu report(s) named %s, not cus_stream_create/cuCtxPopCurrent", nested_misnamed,
                 nested_last_function);
    assert_ok(cus_stream_synchronize(s));
    s = cus_stream_unref(s);
    c = cus_context_unref(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_stream_create_whose_pop_fails_returns_the_stream),
        ENV_TEST(test_event_create_whose_pop_fails_returns_the_event),
        ENV_TEST(test_every_creation_whose_pop_fails_returns_its_object),
        ENV_TEST(test_stream_create_with_every_pop_failing_names_itself),
    };
    return cmocka_run_group_tests_name("rollback", tests, NULL, NULL);
}
