/* Every public call in every mode in which it must fail cleanly. The table
 * (every_call/every_call.h) calls each status-returning public function with
 * valid arguments on a world of objects; this runs it:
 *
 *   plain         each call succeeds, and leaves nothing behind;
 *   host function each call made inside a host function is refused with
 *                 CUS_ERROR_IN_HOST_FUNCTION and makes no driver call
 *                 (but for the documented exceptions);
 *   poisoned      each call on the world's poisoned context fails at once
 *                 with the poisoning status, and makes no driver call;
 *   driver faults with nothing pushed on the thread (so that each call
 *                 switches contexts), every driver call the call makes is
 *                 failed in turn, once: the call returns an error and
 *                 records it, the context stacks agree, nothing leaks;
 *   host memory   every host allocation cuscope makes in the call is failed
 *                 in turn (cus_debug_fail_host_alloc): the call returns
 *                 CUS_ERROR_OUT_OF_HOST_MEMORY, recorded, nothing leaks;
 *   failing pops  every cuCtxPopCurrent fails (cuscope retries one once):
 *                 the switch contract (docs/design.md, "Temporary
 *                 switches"): a call whose driver calls worked returns
 *                 CUS_SUCCESS with its out parameters set, its work done or
 *                 queued (EC_QUEUES_WORK: a queuing driver call was made,
 *                 and what it queued ran), and each switch's failed pop
 *                 reported once to the destroy handler, naming the public
 *                 function; the driver keeps one context pushed per report;
 *                 a pop the entry makes itself (EC_POPS_ITSELF) fails as
 *                 the user's pop does;
 *   fork() child  in the child of the process that built the world, each call
 *                 fails with CUS_ERROR_FORKED, recorded, and makes no driver
 *                 call (but for the documented exceptions).
 *
 * Each mode reports its figures (calls, failure points) on stdout. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cudaTypedefs.h>

#include "every_call/every_call.h"
#include "harness/check.h"

const char every_call_ptx[] = ".version 8.0\n"
                              ".target sm_80\n"
                              ".address_size 64\n"
                              "\n"
                              ".const .align 4 .b8 table[64];\n"
                              ".global .align 4 .u32 counter = 7;\n"
                              "\n"
                              ".visible .entry add(\n"
                              "\t.param .u64 add_param_0,\n"
                              "\t.param .u32 add_param_1\n"
                              ")\n"
                              "{\n"
                              "\tret;\n"
                              "}\n"
                              ".visible .entry noargs()\n"
                              "{\n"
                              "\tret;\n"
                              "}\n";
const size_t every_call_ptx_size = sizeof every_call_ptx;

char ec_out_failure[256];

cus_status ec_out_not_set(const char *entry_function, const char *what)
{
    snprintf(ec_out_failure, sizeof ec_out_failure, "%s: the call succeeded, but not (%s)",
             entry_function, what);
    return EC_OUT_NOT_SET;
}

/* A status for messages: EC_OUT_NOT_SET names the failed check. */
static const char *describe(cus_status st)
{
    return st == EC_OUT_NOT_SET ? ec_out_failure : cus_status_name(st);
}

/* The world's objects that cus_debug_live_objects counts (functions are
 * their module's: 13). */
#define WORLD_OBJECTS 13

static void world_build(world *w)
{
    memset(w, 0, sizeof *w);
    assert_ok(cus_device_get(0, &w->dev));
    assert_ok(cus_context_create(w->dev, CUS_CTX_NO_PUSH, &w->ctx));
    assert_ok(cus_context_create(w->dev, CUS_CTX_NO_PUSH, &w->other));
    assert_ok(cus_stream_create(w->ctx, 0, 0, &w->stream));
    assert_ok(cus_event_create(w->ctx, 0, &w->event));
    assert_ok(cus_event_create(w->ctx, 0, &w->event2));
    assert_ok(cus_buffer_alloc(w->ctx, 4096, &w->buf));
    assert_ok(cus_buffer_alloc(w->ctx, 4096, &w->buf2));
    assert_ok(cus_buffer_alloc(w->other, 4096, &w->other_buf));
    assert_ok(cus_buffer_alloc_managed(w->ctx, 4096, CU_MEM_ATTACH_GLOBAL, &w->managed));
    assert_ok(cus_host_buffer_alloc(w->ctx, 4096, 0, &w->host));
    assert_ok(cus_module_load_data(w->ctx, every_call_ptx, every_call_ptx_size, NULL, &w->mod));
    assert_ok(cus_module_get_function(w->mod, "add", &w->add));
    assert_ok(cus_module_get_function(w->mod, "noargs", &w->noargs));
    {
        cus_capture_guard cap = cus_capture_begin(w->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
        assert_ok(cap.status);
        assert_ok(cus_launch(w->add, 1, 1, 0, w->stream, w->buf, 16u));
        assert_ok(cus_capture_end(&cap, &w->graph));
    }
    assert_ok(cus_graph_instantiate(w->graph, 0, &w->exec));
    assert_ok(cus_event_record(w->event, w->stream));
    assert_ok(cus_event_record(w->event2, w->stream));
    assert_ok(cus_stream_synchronize(w->stream));
    for (size_t i = 0; i < sizeof w->bytes; i++)
        w->bytes[i] = (unsigned char)i;
    /* Distinct contents, so that the copies' checks see bytes move. */
    unsigned char *host = cus_host_buffer_data(w->host);
    for (size_t i = 0; i < 4096; i++)
        host[i] = (unsigned char)(i * 7 + 3);
    {
        unsigned char seed[4096];
        for (size_t i = 0; i < sizeof seed; i++)
            seed[i] = (unsigned char)(i * 13 + 5);
        assert_ok(cus_copy_to_device(w->buf, 0, seed, sizeof seed));
        for (size_t i = 0; i < sizeof seed; i++)
            seed[i] = (unsigned char)(i * 11 + 1);
        assert_ok(cus_copy_to_device(w->other_buf, 0, seed, sizeof seed));
    }
    assert_int_equal(cus_debug_live_objects(), WORLD_OBJECTS);
    assert_int_equal(cus_context_stack_depth(), 0);
}

static void world_free(world *w)
{
    cus_fake_run_streams();
    cus_graph_exec_unref(w->exec);
    cus_graph_unref(w->graph);
    cus_function_unref(w->noargs);
    cus_function_unref(w->add);
    cus_module_unref(w->mod);
    cus_host_buffer_unref(w->host);
    cus_buffer_unref(w->managed);
    cus_buffer_unref(w->other_buf);
    cus_buffer_unref(w->buf2);
    cus_buffer_unref(w->buf);
    cus_event_unref(w->event2);
    cus_event_unref(w->event);
    cus_stream_unref(w->stream);
    cus_context_unref(w->other);
    cus_context_unref(w->ctx);
    cus_release_deferred();
    memset(w, 0, sizeof *w);
}

static const every_call *const tables[] = {every_calls_core, every_calls_data, every_calls_pool,
                                            every_calls_vmm,
                                            every_calls_program, every_calls_link,
                                            every_calls_graph_nodes, every_calls_green,
                                            every_calls_graph_conditional,
                                            every_calls_graph_inspect};

#define FOR_EACH_CALL(e)                                                       \
    for (size_t t_ = 0; t_ < sizeof tables / sizeof tables[0]; t_++)           \
        for (const every_call *e = tables[t_]; e->name; e++)                   \
            if (!(e->flags & EC_KNOWN_BUG))

/* Pops what a call left pushed (a failed pop keeps its entry), lets the
 * fake's streams finish, and checks that only the world is alive. */
static void settle(const char *mode, const every_call *e, unsigned long k)
{
    if ((int)cus_context_stack_depth() != cus_fake_thread_stack_depth())
        fail_msg("%s: %s, point %lu: cuscope's stack is %u deep, the driver's %d", mode, e->name,
                 k, cus_context_stack_depth(), cus_fake_thread_stack_depth());
    while (cus_context_stack_depth())
        if (cus_context_pop(NULL) != CUS_SUCCESS)
            fail_msg("%s: %s, point %lu: cannot pop after the call: %s", mode, e->name, k,
                     cus_last_error_message());
    cus_fake_run_streams();
    cus_release_deferred();
    if (cus_debug_live_objects() != WORLD_OBJECTS)
        fail_msg("%s: %s, point %lu: %zu cuscope objects alive, the world has %d", mode, e->name,
                 k, cus_debug_live_objects(), WORLD_OBJECTS);
}

/* After world_free: nothing alive, no fake handle but the ones whose release
 * failed into the destroy handler, no misuse. */
static void check_empty(const char *mode, const every_call *e, unsigned long k)
{
    if (cus_debug_live_objects())
        fail_msg("%s: %s, point %lu: %zu cuscope objects leaked", mode, e->name, k,
                 cus_debug_live_objects());
    size_t handles = cus_fake_live_handles(CUS_FAKE_HANDLE_ANY);
    if (handles > env_destroyed.count * (e->flags & EC_RELEASE_LEAVES_2 ? 2 : 1))
        fail_msg("%s: %s, point %lu: %zu fake handles leaked", mode, e->name, k, handles);
    if (cus_fake_misuse_count())
        fail_msg("%s: %s, point %lu: driver misuse: %s", mode, e->name, k, cus_fake_last_misuse());
}

/* --- plain ------------------------------------------------------------------------------- */

static void test_every_call_succeeds(void **state)
{
    (void)state;
    unsigned n = 0;
    FOR_EACH_CALL(e)
    {
        assert_int_equal(env_setup_with(NULL), 0);
        world w;
        world_build(&w);
        cus_clear_last_error();
        cus_status st = e->call(&w);
        if (st != CUS_SUCCESS)
            fail_msg("plain: %s -> %s: %s", e->name, describe(st), cus_last_error_message());
        settle("plain", e, 0);
        world_free(&w);
        check_empty("plain", e, 0);
        if (env_destroyed.count)
            fail_msg("plain: %s: the destroy handler was called: %s", e->name,
                     env_destroyed.last_message);
        n++;
    }
    printf("every call: %u calls, each succeeds on its own\n", n);
}

/* --- inside a host function --------------------------------------------------------------- */

typedef struct host_fn_run {
    world *w;
    cus_status got[512];
    unsigned long driver_calls[512];
    cus_status last[512];
    size_t n;
} host_fn_run;

static void run_table_in_host_fn(void *data)
{
    host_fn_run *run = data;
    size_t i = 0;
    FOR_EACH_CALL(e)
    {
        if (i >= 512)
            break;
        cus_clear_last_error();
        unsigned long before = cus_fake_call_count();
        run->got[i] = e->call(run->w);
        run->driver_calls[i] = cus_fake_call_count() - before;
        run->last[i] = cus_last_status();
        i++;
    }
    run->n = i;
}

static void test_every_call_refused_in_a_host_function(void **state)
{
    (void)state;
    world w;
    world_build(&w);
    static host_fn_run run;
    memset(&run, 0, sizeof run);
    run.w = &w;
    assert_ok(cus_stream_launch_host_fn(w.stream, run_table_in_host_fn, &run));
    assert_ok(cus_stream_synchronize(w.stream));
    size_t i = 0;
    unsigned refused = 0, allowed = 0, bad = 0;
    FOR_EACH_CALL(e)
    {
        if (i >= run.n)
            break;
        if (e->flags & (EC_HOST_FN_OK | EC_SKIP_REFUSALS)) {
            allowed++;
        } else if (run.got[i] != CUS_ERROR_IN_HOST_FUNCTION || run.last[i] != run.got[i] ||
                   run.driver_calls[i]) {
            print_error("host function: %s -> %s (last error %s), %lu driver call(s); want "
                        "CUS_ERROR_IN_HOST_FUNCTION and none\n",
                        e->name, cus_status_name(run.got[i]), cus_status_name(run.last[i]),
                        run.driver_calls[i]);
            bad++;
        } else {
            refused++;
        }
        i++;
    }
    settle("host function", &(every_call){"(the table)", NULL, 0, NULL, NULL}, 0);
    world_free(&w);
    printf("every call in a host function: %u refused, %u allowed by their documentation\n",
           refused, allowed);
    assert_int_equal(bad, 0);
}

/* --- on a poisoned context ---------------------------------------------------------------- */

static void test_every_call_fails_fast_on_a_poisoned_context(void **state)
{
    (void)state;
    world w;
    world_build(&w);
    assert_ok(cus_fake_fail_entry("cuCtxSynchronize", 1, CUDA_ERROR_ILLEGAL_ADDRESS, false));
    assert_int_equal(cus_context_synchronize(w.ctx), CUDA_ERROR_ILLEGAL_ADDRESS);
    assert_int_equal(cus_context_poisoned(w.ctx), CUDA_ERROR_ILLEGAL_ADDRESS);
    unsigned refused = 0, exempt = 0, bad = 0;
    FOR_EACH_CALL(e)
    {
        if (e->flags & (EC_NOT_POISONED | EC_SKIP_REFUSALS)) {
            exempt++;
            continue;
        }
        cus_clear_last_error();
        unsigned long before = cus_fake_call_count();
        cus_status st = e->call(&w);
        unsigned long made = cus_fake_call_count() - before;
        if (st != CUDA_ERROR_ILLEGAL_ADDRESS || cus_last_status() != st || made ||
            !strstr(cus_last_error_message(), "poisoned")) {
            print_error("poisoned: %s -> %s (%s), %lu driver call(s); want "
                        "CUDA_ERROR_ILLEGAL_ADDRESS at once\n",
                        e->name, cus_status_name(st), cus_last_error_message(), made);
            bad++;
        } else {
            refused++;
        }
        settle("poisoned", e, 0);
    }
    world_free(&w);
    assert_int_equal(cus_debug_live_objects(), 0);
    printf("every call on a poisoned context: %u failed fast, %u exempt by their documentation\n",
           refused, exempt);
    assert_int_equal(bad, 0);
    /* The poisoned context's handles stay with the fake: a fresh install. */
    assert_int_equal(env_setup_with(NULL), 0);
}

/* --- every driver call failed in turn ------------------------------------------------------ */

#define INJECTED CUDA_ERROR_UNKNOWN

static void test_every_call_survives_each_driver_failure(void **state)
{
    (void)state;
    unsigned long points = 0, calls = 0;
    FOR_EACH_CALL(e)
    {
        if (e->flags & EC_NO_DRIVER)
            continue;
        calls++;
        for (unsigned long k = 1;; k++) {
            if (k > 10000)
                fail_msg("driver faults: %s still fails at point %lu", e->name, k);
            assert_int_equal(env_setup_with(NULL), 0);
            world w;
            world_build(&w);
            cus_clear_last_error();
            unsigned long base = cus_fake_call_count();
            cus_fake_fail_call(k, INJECTED, false);
            cus_status st = e->call(&w);
            unsigned long fired = cus_fake_faults_fired();
            cus_fake_clear_faults();
            const char *failed = cus_fake_call_name(base + k - 1);
            if (!fired) {
                if (st != CUS_SUCCESS)
                    fail_msg("driver faults: %s with no fault fired -> %s: %s", e->name,
                             cus_status_name(st), cus_last_error_message());
                settle("driver faults", e, k);
                world_free(&w);
                check_empty("driver faults", e, k);
                break;
            }
            points++;
            /* cuscope retries a pop that undoes its own switch once: a
             * transient failure of it is absorbed. */
            if (st == CUS_SUCCESS && failed && strcmp(failed, "cuCtxPopCurrent") == 0 &&
                !env_destroyed.count) {
                settle("driver faults", e, k);
                world_free(&w);
                check_empty("driver faults", e, k);
                continue;
            }
            if (st == CUS_SUCCESS && env_destroyed.count == 0)
                fail_msg("driver faults: %s, failure of its driver call %lu (%s) was swallowed",
                         e->name, k, failed ? failed : "?");
            /* An entry releases what it made: a failure there goes to the
             * destroy handler, as every release's does. So does the release
             * of a graph an update replaced, which later updates and
             * launches make ("releasing ...", naming the call). */
            if (st == CUS_SUCCESS && !strstr(env_destroyed.last_message, "_unref") &&
                !strstr(env_destroyed.last_message, ": releasing "))
                fail_msg("driver faults: %s, failure of its driver call %lu (%s) went to the "
                         "destroy handler outside a release: %s",
                         e->name, k, failed ? failed : "?", env_destroyed.last_message);
            if (st != CUS_SUCCESS && cus_last_status() != st)
                fail_msg("driver faults: %s, call %lu: returned %s, the last error records %s",
                         e->name, k, cus_status_name(st), cus_status_name(cus_last_status()));
            settle("driver faults", e, k);
            world_free(&w);
            check_empty("driver faults", e, k);
        }
    }
    printf("every call, each driver call failed in turn: %lu calls, %lu failure points\n", calls,
           points);
}

/* --- the pop that ends a switch failing, and its retry -------------------------------------- */

/* The failing-pops mode's view of the destroy handler: every report, and
 * those of a failed pop naming the entry's public function. (It keeps the
 * harness's log up to date too: check_empty reads its count.) */
static struct {
    char expect[64];       /* the entry's public function */
    unsigned long total;   /* reports */
    unsigned long pops;    /* reports of a failed cuCtxPopCurrent */
    unsigned long named;   /* ... naming `expect` */
    char other[512];       /* the first report that is not a pop's */
    char misnamed[128];    /* the first pop report naming no cus_ function */
} pop_log;

static void record_pop_report(const cus_error *e, void *data)
{
    (void)data;
    env_destroyed.count++;
    env_destroyed.last_status = e->status;
    snprintf(env_destroyed.last_message, sizeof env_destroyed.last_message, "%s", e->message);
    snprintf(env_destroyed.last_function, sizeof env_destroyed.last_function, "%s", e->function);
    snprintf(env_destroyed.last_driver_call, sizeof env_destroyed.last_driver_call, "%s",
             e->driver_call);
    pop_log.total++;
    if (strcmp(e->driver_call, "cuCtxPopCurrent") != 0) {
        if (!pop_log.other[0])
            snprintf(pop_log.other, sizeof pop_log.other, "%s", e->message);
        return;
    }
    pop_log.pops++;
    if (strcmp(e->function, pop_log.expect) == 0)
        pop_log.named++;
    else if (strncmp(e->function, "cus_", 4) != 0 && !pop_log.misnamed[0])
        snprintf(pop_log.misnamed, sizeof pop_log.misnamed, "%s", e->function);
}

/* The public function an entry calls: its name up to " (". */
static void entry_function(const every_call *e, char *out, size_t size)
{
    size_t n = strcspn(e->name, " ");
    if (n >= size)
        n = size - 1;
    memcpy(out, e->name, n);
    out[n] = '\0';
}

/* Driver calls that queue work on a stream. */
static bool queues_work(const char *call)
{
    static const char *const prefixes[] = {"cuLaunch",      "cuGraphLaunch", "cuGraphUpload",
                                           "cuEventRecord", "cuStreamWaitEvent"};
    if (!call)
        return false;
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (strncmp(call, prefixes[i], strlen(prefixes[i])) == 0)
            return true;
    return strstr(call, "Async") != NULL; /* copies, fills, prefetches */
}

/* cuscope retries a failed pop once, so the single faults above never make
 * a switch fail to end: here every pop fails. The switch contract: a call
 * whose driver calls worked succeeds, with its out parameters set (the
 * entries check them: EC_OUT_NOT_SET) and its work done or queued; each
 * switch's pop, tried twice, is reported once to the destroy handler, naming
 * the public function, and leaves its context on the driver's stack, one
 * above cuscope's mirror per report. An entry that pops itself
 * (EC_POPS_ITSELF) sees that pop fail as the user's does. */
static void test_every_call_reports_a_pop_that_keeps_failing(void **state)
{
    (void)state;
    unsigned long switching = 0, queuing = 0, checked = 0, popping = 0, bad = 0;
    FOR_EACH_CALL(e)
    {
        if (e->flags & EC_NO_DRIVER)
            continue;
        assert_int_equal(env_setup_with(NULL), 0);
        world w;
        world_build(&w);
        memset(&pop_log, 0, sizeof pop_log);
        entry_function(e, pop_log.expect, sizeof pop_log.expect);
        cus_set_destroy_error_handler(record_pop_report, NULL);
        cus_clear_last_error();
        ec_out_failure[0] = '\0';
        unsigned long pops = cus_fake_calls_of("cuCtxPopCurrent");
        unsigned long base = cus_fake_call_count();
        assert_ok(cus_fake_fail_entry("cuCtxPopCurrent", 1, INJECTED, true));
        cus_status st = e->call(&w);
        cus_fake_clear_faults();
        unsigned long end = cus_fake_call_count();
        unsigned long popped = cus_fake_calls_of("cuCtxPopCurrent") - pops;
        int left = cus_fake_thread_stack_depth() - (int)cus_context_stack_depth();
        const cus_error *last = cus_last_error();
        char why[1024] = "";
#define POP_BAD(...) (why[0] ? (void)0 : (void)snprintf(why, sizeof why, __VA_ARGS__))
        if (!popped) {
            if (st != CUS_SUCCESS)
                POP_BAD("popped nothing, -> %s: %s", describe(st), cus_last_error_message());
            if (pop_log.total)
                POP_BAD("popped nothing, and reported: %s", env_destroyed.last_message);
        } else if (e->flags & EC_POPS_ITSELF) {
            /* Its own pop (cus_context_pop: no retry) fails, recorded; a
             * guard's exit (retried) goes to the destroy handler. */
            popping++;
            if (st != CUS_SUCCESS &&
                (last->status != st || strcmp(last->driver_call, "cuCtxPopCurrent") != 0))
                POP_BAD("-> %s, the last error records %s from %s", describe(st),
                        cus_status_name(last->status), last->driver_call);
            if (st == CUS_SUCCESS && !pop_log.pops)
                POP_BAD("succeeded with its pops failing, and reported nothing");
            if (pop_log.other[0])
                POP_BAD("a report that is not a pop's: %s", pop_log.other);
        } else {
            switching++;
            if (st != CUS_SUCCESS)
                POP_BAD("-> %s (last error: %s); want CUS_SUCCESS: its driver calls worked",
                        describe(st), cus_last_error_message());
            if (last->status != CUS_SUCCESS && strcmp(last->driver_call, "cuCtxPopCurrent") == 0)
                POP_BAD("the failed pop went to the last error: %s", cus_last_error_message());
            if (pop_log.other[0])
                POP_BAD("a report that is not a pop's: %s", pop_log.other);
            if (popped != 2 * pop_log.pops)
                POP_BAD("%lu pop(s) made, %lu report(s): want each switch's pop tried twice and "
                        "reported once",
                        popped, pop_log.pops);
            if (!pop_log.named && !(e->flags & EC_NO_OWN_SWITCH))
                POP_BAD("no report names %s (last: %s)", pop_log.expect,
                        env_destroyed.last_message);
            if (pop_log.misnamed[0])
                POP_BAD("a report names \"%s\", not a public function", pop_log.misnamed);
            if (left != (int)pop_log.pops)
                POP_BAD("the driver's stack is %d above cuscope's mirror, want one per report "
                        "(%lu)",
                        left, pop_log.pops);
        }
        if (!why[0] && st == CUS_SUCCESS && (e->flags & EC_QUEUES_WORK)) {
            queuing++;
            bool made = false;
            for (unsigned long c = base; c < end && !made; c++)
                made = queues_work(cus_fake_call_name(c));
            if (!made)
                POP_BAD("queues work, but made no queuing driver call");
        }
        cus_set_destroy_error_handler(NULL, NULL);
        reconcile_fake_stack();
        cus_set_destroy_error_handler(record_pop_report, NULL);
        if (!why[0] && st == CUS_SUCCESS && (e->flags & EC_QUEUES_WORK) && e->check) {
            /* What it queued runs (and a host function finds its user_data). */
            checked++;
            cus_fake_run_streams();
            if (!e->check(&w))
                POP_BAD("the work it queued was not done (%s)", cus_last_error_message());
        }
#undef POP_BAD
        if (why[0]) {
            print_error("failing pops: %s: %s\n", e->name, why);
            bad++;
        }
        settle("failing pops", e, 0);
        world_free(&w);
        check_empty("failing pops", e, 0);
    }
    printf("every call with every pop failing: %lu calls switch contexts and succeed, each pop "
           "reported; %lu queue work (%lu checked for it done); %lu pop the stack themselves\n",
           switching, queuing, checked, popping);
    assert_int_equal(bad, 0);
}

/* --- every host allocation failed in turn --------------------------------------------------- */

static void test_every_call_survives_each_host_allocation_failure(void **state)
{
    (void)state;
    unsigned long points = 0, allocating = 0, absorbed_points = 0;
    FOR_EACH_CALL(e)
    {
        bool allocates = false;
        for (unsigned long k = 1;; k++) {
            if (k > 10000)
                fail_msg("host memory: %s still fails at point %lu", e->name, k);
            assert_int_equal(env_setup_with(NULL), 0);
            world w;
            world_build(&w);
            cus_clear_last_error();
            cus_debug_fail_host_alloc(k, false);
            cus_status st = e->call(&w);
            unsigned long fired = cus_debug_host_alloc_faults();
            unsigned long absorbed = cus_debug_host_alloc_absorbed();
            cus_debug_fail_host_alloc(0, false);
            if (!fired) {
                if (st != CUS_SUCCESS)
                    fail_msg("host memory: %s with no fault fired -> %s: %s", e->name,
                             cus_status_name(st), cus_last_error_message());
                settle("host memory", e, k);
                world_free(&w);
                check_empty("host memory", e, k);
                break;
            }
            allocates = true;
            points++;
            if (st == CUS_SUCCESS && absorbed) { /* by design: a cache, a fallback */
                absorbed_points++;
                settle("host memory", e, k);
                world_free(&w);
                check_empty("host memory", e, k);
                continue;
            }
            if (st != CUS_ERROR_OUT_OF_HOST_MEMORY || cus_last_status() != st)
                fail_msg("host memory: %s, allocation %lu failed: returned %s (last error %s: "
                         "%s), want CUS_ERROR_OUT_OF_HOST_MEMORY",
                         e->name, k, cus_status_name(st), cus_status_name(cus_last_status()),
                         cus_last_error_message());
            settle("host memory", e, k);
            world_free(&w);
            check_empty("host memory", e, k);
        }
        allocating += allocates;
    }
    printf("every call, each host allocation failed in turn: %lu calls allocate, %lu failure "
           "points (%lu absorbed by design)\n",
           allocating, points, absorbed_points);
}

/* --- in a fork() child --------------------------------------------------------------------- */

static int run_table_in_child(world *w)
{
    int bad = 0;
    FOR_EACH_CALL(e)
    {
        cus_clear_last_error();
        unsigned long before = cus_fake_call_count();
        cus_status st = e->call(w);
        unsigned long made = cus_fake_call_count() - before;
        if (e->flags & EC_FORK_OK) {
            if (made) {
                fprintf(stderr, "fork child: %s made %lu driver call(s)\n", e->name, made);
                bad++;
            }
            continue;
        }
        if (st != CUS_ERROR_FORKED || cus_last_status() != st || made) {
            fprintf(stderr,
                    "fork child: %s -> %s (last error %s), %lu driver call(s); want "
                    "CUS_ERROR_FORKED and none\n",
                    e->name, cus_status_name(st), cus_status_name(cus_last_status()), made);
            bad++;
        }
    }
    return bad > 100 ? 100 : bad;
}


static void test_every_call_refused_in_a_fork_child(void **state)
{
    (void)state;
    world w;
    world_build(&w);
    unsigned n = 0, exempt = 0;
    FOR_EACH_CALL(e)
    {
        n++;
        exempt += !!(e->flags & EC_FORK_OK);
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(30);
        child_exit(run_table_in_child(&w));
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    if (WEXITSTATUS(status))
        fail_msg("fork child: %d call(s) misbehaved (see stderr)", WEXITSTATUS(status));
    world_free(&w);
    printf("every call in a fork() child: %u refused, %u exempt by their documentation\n",
           n - exempt, exempt);
}

static void test_known_bugs(void **state)
{
    (void)state;
    for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
        for (const every_call *e = tables[t]; e->name; e++)
            if (e->flags & EC_KNOWN_BUG)
                print_message("KNOWN BUG (skipped in every mode): %s: %s\n", e->name,
                              e->note ? e->note : "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_known_bugs),
        ENV_TEST(test_every_call_succeeds),
        ENV_TEST(test_every_call_refused_in_a_host_function),
        ENV_TEST(test_every_call_fails_fast_on_a_poisoned_context),
        ENV_TEST(test_every_call_survives_each_driver_failure),
        ENV_TEST(test_every_call_reports_a_pop_that_keeps_failing),
        ENV_TEST(test_every_call_survives_each_host_allocation_failure),
        ENV_TEST(test_every_call_refused_in_a_fork_child),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
