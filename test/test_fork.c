/* fork() (cuscope/driver.h): in the child of a process that used the driver,
 * every cuscope call that could reach it fails with CUS_ERROR_FORKED, makes
 * no driver call (the fake counts them: the child's copy of the count must
 * not move) and never hangs; the last release of an inherited object frees
 * host memory only and tells the destroy handler nothing. Forks also happen
 * while another parent thread holds a cuscope lock (the loader's, a
 * module's), runs a host function, or has a capture open. The parent goes on
 * unaffected and frees everything normally.
 *
 * Children report through their exit status (0: all good; otherwise the
 * line of the failed check, also printed) and are guarded by alarm(): a hang
 * is SIGALRM, which the parent reports as such. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cudaTypedefs.h>

#include <cuscope/function.h>
#include <cuscope/graph.h>
#include <cuscope/launch.h>
#include <cuscope/library.h>
#include <cuscope/memory.h>
#include <cuscope/module.h>

#include "stream_common.h"
#include "harness/check.h"
#include "harness/gate.h"

static const char ptx_src[] = ".version 8.0\n"
                              ".target sm_80\n"
                              ".address_size 64\n"
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

/* --- the child's side ------------------------------------------------------------ */

#define CHILD_WATCHDOG_S 10

/* Fails the child: the exit status is the line (mod 256, never 0). */
#define CHILD_CHECK(cond)                                                      \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "child: %s:%d: check failed: %s (last error: %s)\n", __FILE__, \
                    __LINE__, #cond, cus_last_error_message());                \
            _exit(__LINE__ % 255 + 1);                                         \
        }                                                                      \
    } while (0)

/* The call fails with CUS_ERROR_FORKED, recorded with a message that names
 * `fname`, and the fake saw no call. */
#define CHILD_FORKED(expr, fname)                                           \
    do {                                                                       \
        unsigned long calls_ = cus_fake_call_count();                          \
        cus_clear_last_error();                                                \
        cus_status st_ = (expr);                                               \
        if (st_ != CUS_ERROR_FORKED) {                                         \
            fprintf(stderr, "child: %s:%d: %s -> %s, expected CUS_ERROR_FORKED (%s)\n", \
                    __FILE__, __LINE__, #expr, cus_status_name(st_),           \
                    cus_last_error_message());                                 \
            _exit(__LINE__ % 255 + 1);                                         \
        }                                                                      \
        CHILD_CHECK(cus_last_status() == CUS_ERROR_FORKED);                    \
        CHILD_CHECK(strcmp(cus_last_error()->function, (fname)) == 0);         \
        CHILD_CHECK(strstr(cus_last_error_message(), "fork()") != NULL);       \
        CHILD_CHECK(cus_fake_call_count() == calls_);                          \
    } while (0)

/* Runs child(arg) in a fork()ed child and asserts it exited with 0. */
static void run_in_child(int (*child)(void *), void *arg)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(CHILD_WATCHDOG_S);
        child_exit(child(arg));
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (WIFSIGNALED(status))
        fail_msg("the child died of signal %d%s", WTERMSIG(status),
                 WTERMSIG(status) == SIGALRM ? " (the watchdog: it hung)" : "");
    assert_true(WIFEXITED(status));
    if (WEXITSTATUS(status))
        fail_msg("the child failed a check (status %d; see its stderr)", WEXITSTATUS(status));
}

static unsigned long child_destroy_calls;
static void child_destroy_handler(const cus_error *e, void *data)
{
    (void)e;
    (void)data;
    child_destroy_calls++;
}

/* --- every kind of call, and every object's release -------------------------------- */

typedef struct world {
    cus_context *ctx;     /* owned, pushed: the launch fast path's case */
    cus_context *primary; /* inside a guard entered before the fork */
    cus_context_guard guard;
    cus_stream *stream;
    cus_event *event;
    cus_buffer *buf, *async_buf;
    cus_host_buffer *host;
    cus_module *mod;
    cus_function *add, *noargs;
    cus_graph *graph;
    cus_graph_exec *exec;
} world;

static void world_build(world *w)
{
    memset(w, 0, sizeof *w);
    assert_ok(cus_context_create(dev_at(0), 0, &w->ctx));
    w->stream = new_stream(w->ctx, 0);
    w->event = new_event(w->ctx, 0);
    assert_ok(cus_buffer_alloc(w->ctx, 256, &w->buf));
    assert_ok(cus_buffer_alloc_async(w->stream, 64, &w->async_buf));
    assert_ok(cus_host_buffer_alloc(w->ctx, 128, 0, &w->host));
    assert_ok(cus_module_load_data(w->ctx, ptx_src, sizeof ptx_src, NULL, &w->mod));
    assert_ok(cus_module_get_function(w->mod, "add", &w->add));
    assert_ok(cus_module_get_function(w->mod, "noargs", &w->noargs));
    /* The fast path is warm: the same call site launched in the child would
     * otherwise go straight to the driver. */
    for (int i = 0; i < 2; i++)
        assert_ok(cus_launch(w->noargs, 1, 1, 0, w->stream));
    {
        cus_capture_guard cap = cus_capture_begin(w->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
        assert_ok(cap.status);
        assert_ok(cus_launch(w->add, 1, 1, 0, w->stream, cus_buffer_ptr(w->buf), 7u));
        assert_ok(cus_capture_end(&cap, &w->graph));
    }
    assert_ok(cus_graph_instantiate(w->graph, 0, &w->exec));
    assert_ok(cus_graph_exec_launch(w->exec, w->stream)); /* its release would wait */
    assert_ok(cus_stream_synchronize(w->stream));
    w->primary = new_primary();
    w->guard = cus_context_guard_enter(w->primary);
    assert_ok(w->guard.status);
}

/* The objects world_build made, that cus_debug_live_objects counts. */
#define WORLD_OBJECTS 10

static void *child_thread_calls(void *arg)
{
    world *w = arg;
    /* A thread of the child: its cached top is NULL; the global flag stops it. */
    cus_status st = cus_launch(w->noargs, 1, 1, 0, w->stream);
    if (st == CUS_ERROR_FORKED)
        st = cus_stream_synchronize(w->stream);
    if (st == CUS_ERROR_FORKED)
        st = cus_context_push(w->ctx);
    return (void *)(intptr_t)(st == CUS_ERROR_FORKED && cus_last_status() == CUS_ERROR_FORKED);
}

static int child_every_call(void *arg)
{
    world *w = arg;
    unsigned long calls = cus_fake_call_count();
    unsigned long destroy_errors = cus_destroy_error_count();
    cus_set_destroy_error_handler(child_destroy_handler, NULL); /* no driver: allowed */
    CHILD_CHECK(cus_context_current() == w->primary);

    /* the driver */
    CHILD_FORKED(cus_init(), "cus_init");
    int version = 0;
    CHILD_FORKED(cus_driver_version(&version), "cus_driver_version");
    CHILD_CHECK(version == 0);
    CHILD_FORKED(cus_driver_install(NULL), "cus_driver_install");
    CHILD_FORKED(cus_driver_set_library("libcuda.so.1"), "cus_driver_set_library");
    CHILD_CHECK(!cus_driver_has("cuFuncGetParamInfo"));
    CHILD_CHECK(strcmp(cus_status_name(CUS_ERROR_FORKED), "CUS_ERROR_FORKED") == 0);
    CHILD_CHECK(strstr(cus_status_string(CUS_ERROR_FORKED), "fork()") != NULL);
    CHILD_CHECK(strcmp(cus_status_name(998), "CUS_UNKNOWN_STATUS") == 0); /* asks no driver */

    /* devices and contexts */
    int count = -1;
    CHILD_FORKED(cus_device_count(&count), "cus_device_count");
    cus_device d = {-1};
    CHILD_FORKED(cus_device_get(0, &d), "cus_device_get");
    char name[64];
    CHILD_FORKED(cus_device_name(cus_context_device(w->ctx), name, sizeof name),
                 "cus_device_name");
    cus_context *c = NULL;
    CHILD_FORKED(cus_context_create(cus_context_device(w->ctx), 0, &c), "cus_context_create");
    CHILD_FORKED(cus_context_retain_primary(cus_context_device(w->ctx), &c),
                 "cus_context_retain_primary");
    CHILD_FORKED(cus_context_wrap(cus_context_handle(w->ctx), &c), "cus_context_wrap");
    CHILD_CHECK(c == NULL);
    CHILD_FORKED(cus_context_push(w->ctx), "cus_context_push");
    CHILD_FORKED(cus_context_pop(NULL), "cus_context_pop");
    CHILD_FORKED(cus_context_set_current(w->ctx), "cus_context_set_current");
    CHILD_FORKED(cus_context_set_current(NULL), "cus_context_set_current");
    CHILD_FORKED(cus_context_synchronize(w->ctx), "cus_context_synchronize");
    unsigned int flags = 0;
    CHILD_FORKED(cus_context_flags(w->ctx, &flags), "cus_context_flags");
    CHILD_FORKED(cus_context_api_version(w->ctx, &flags), "cus_context_api_version");
    size_t limit = 0;
    CHILD_FORKED(cus_context_get_limit(w->ctx, CU_LIMIT_STACK_SIZE, &limit),
                 "cus_context_get_limit");
    {
        /* both guard paths: the context that the parent had on top, and another */
        unsigned long before = cus_fake_call_count();
        cus_context_guard g = cus_context_guard_enter(w->primary);
        CHILD_CHECK(g.status == CUS_ERROR_FORKED && g.ctx == NULL);
        g = cus_context_guard_enter(w->ctx);
        CHILD_CHECK(g.status == CUS_ERROR_FORKED && g.ctx == NULL);
        cus_context_guard_exit(&g);
        CHILD_CHECK(cus_fake_call_count() == before);
    }

    /* streams, events, memory */
    cus_stream *s = NULL;
    CHILD_FORKED(cus_stream_create(w->ctx, 0, 0, &s), "cus_stream_create");
    CHILD_FORKED(cus_stream_synchronize(w->stream), "cus_stream_synchronize");
    bool done = false;
    CHILD_FORKED(cus_stream_query(w->stream, &done), "cus_stream_query");
    CHILD_FORKED(cus_stream_wait_event(w->stream, w->event), "cus_stream_wait_event");
    cus_event *e = NULL;
    CHILD_FORKED(cus_event_create(w->ctx, 0, &e), "cus_event_create");
    CHILD_FORKED(cus_event_record(w->event, w->stream), "cus_event_record");
    CHILD_FORKED(cus_event_synchronize(w->event), "cus_event_synchronize");
    cus_buffer *b = NULL;
    CHILD_FORKED(cus_buffer_alloc(w->ctx, 16, &b), "cus_buffer_alloc");
    CHILD_FORKED(cus_buffer_alloc_async(w->stream, 16, &b), "cus_buffer_alloc_async");
    char host[16] = {0};
    CHILD_FORKED(cus_copy_to_device(w->buf, 0, host, sizeof host), "cus_copy_to_device");
    CHILD_FORKED(cus_copy_to_host(host, w->buf, 0, sizeof host), "cus_copy_to_host");
    CHILD_FORKED(cus_copy_to_device_async(w->buf, 0, host, sizeof host, w->stream),
                 "cus_copy_to_device_async");
    CHILD_FORKED(cus_buffer_fill_u8(w->buf, 0, 1, 16), "cus_buffer_fill_u8");
    size_t free_b = 0, total_b = 0;
    CHILD_FORKED(cus_memory_info(w->ctx, &free_b, &total_b), "cus_memory_info");

    /* modules, functions, launches */
    cus_module *m = NULL;
    CHILD_FORKED(cus_module_load_data(w->ctx, ptx_src, sizeof ptx_src, NULL, &m),
                 "cus_module_load_data");
    cus_function *f = NULL;
    CHILD_FORKED(cus_module_get_function(w->mod, "add", &f), "cus_module_get_function");
    CHILD_FORKED(cus_module_get_function(w->mod, "noargs", &f), "cus_module_get_function");
    int attr = 0;
    CHILD_FORKED(cus_function_attribute(w->add, CU_FUNC_ATTRIBUTE_NUM_REGS, &attr),
                 "cus_function_attribute");
    for (int i = 0; i < 2; i++) /* the warm call site's fast path */
        CHILD_FORKED(cus_launch(w->noargs, 1, 1, 0, w->stream), "cus_launch");
    CHILD_FORKED(cus_launch(w->add, 1, 1, 0, NULL, cus_buffer_ptr(w->buf), 3u), "cus_launch");
    CHILD_FORKED(cus_function_launch(w->noargs, CUS_DIM3(1, 1, 1), CUS_DIM3(1, 1, 1), 0, w->stream, 0,
                                     NULL, NULL),
                 "cus_function_launch");
    cus_launch_config cfg = {.grid = {1, 1, 1}, .block = {1, 1, 1}, .stream = w->stream};
    CHILD_FORKED(cus_launch_ex(w->noargs, &cfg), "cus_launch_ex");

    /* graphs and captures */
    {
        unsigned long before = cus_fake_call_count();
        cus_capture_guard cap = cus_capture_begin(w->stream, CU_STREAM_CAPTURE_MODE_GLOBAL);
        CHILD_CHECK(cap.status == CUS_ERROR_FORKED && !cap.open);
        CHILD_CHECK(strcmp(cus_last_error()->function, "cus_capture_begin") == 0);
        CHILD_CHECK(cus_fake_call_count() == before);
    }
    bool capturing = false;
    CHILD_FORKED(cus_stream_is_capturing(w->stream, &capturing), "cus_stream_is_capturing");
    size_t nodes = 0;
    CHILD_FORKED(cus_graph_node_count(w->graph, &nodes), "cus_graph_node_count");
    cus_graph_exec *x = NULL;
    CHILD_FORKED(cus_graph_instantiate(w->graph, 0, &x), "cus_graph_instantiate");
    CHILD_FORKED(cus_graph_exec_launch(w->exec, w->stream), "cus_graph_exec_launch");
    CHILD_FORKED(cus_graph_exec_upload(w->exec, w->stream), "cus_graph_exec_upload");
    CHILD_CHECK(cus_release_deferred() == 0);

    /* a thread the child starts */
    pthread_t t;
    CHILD_CHECK(pthread_create(&t, NULL, child_thread_calls, w) == 0);
    void *ok = NULL;
    CHILD_CHECK(pthread_join(t, &ok) == 0);
    CHILD_CHECK(ok == (void *)1);

    /* Every release, with no driver call and nothing to report. The guard's
     * exit drops its mirror entry; the owned context stays, held by the
     * mirror (it was pushed in the parent, and cannot be popped here). */
    CHILD_CHECK(cus_debug_live_objects() == WORLD_OBJECTS);
    cus_context_guard_exit(&w->guard);
    CHILD_CHECK(cus_context_current() == w->ctx);
    w->exec = cus_graph_exec_unref(w->exec);
    w->graph = cus_graph_unref(w->graph);
    w->add = cus_function_unref(w->add);
    w->noargs = cus_function_unref(w->noargs);
    w->mod = cus_module_unref(w->mod);
    w->host = cus_host_buffer_unref(w->host);
    w->async_buf = cus_buffer_unref(w->async_buf);
    w->buf = cus_buffer_unref(w->buf);
    w->event = cus_event_unref(w->event);
    w->stream = cus_stream_unref(w->stream);
    w->primary = cus_context_unref(w->primary);
    w->ctx = cus_context_unref(w->ctx);
    CHILD_CHECK(cus_debug_live_objects() == 1);
    CHILD_CHECK(cus_fake_call_count() == calls);
    CHILD_CHECK(child_destroy_calls == 0);
    CHILD_CHECK(cus_destroy_error_count() == destroy_errors);
    /* The fake's own queries and controls do not hang either. */
    CHILD_CHECK(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY) > 0); /* the parent's, copied */
    CHILD_CHECK(cus_fake_misuse_count() == 0);
    return 0;
}

static void world_use_and_free(world *w)
{
    /* The parent: unaffected, its driver state untouched by the child. */
    assert_ok(cus_launch(w->noargs, 1, 1, 0, w->stream));
    assert_ok(cus_launch(w->add, 1, 1, 0, w->stream, cus_buffer_ptr(w->buf), 3u));
    assert_ok(cus_graph_exec_launch(w->exec, w->stream));
    char host[16] = {1};
    assert_ok(cus_copy_to_device(w->buf, 0, host, sizeof host));
    assert_ok(cus_stream_synchronize(w->stream));
    cus_context_guard_exit(&w->guard);
    assert_ptr_equal(cus_context_current(), w->ctx);
    assert_ok(cus_context_pop(NULL));
    unsigned long destroy_errors = cus_destroy_error_count();
    cus_graph_exec_unref(w->exec);
    cus_graph_unref(w->graph);
    cus_function_unref(w->add);
    cus_function_unref(w->noargs);
    cus_module_unref(w->mod);
    cus_host_buffer_unref(w->host);
    cus_buffer_unref(w->async_buf);
    cus_buffer_unref(w->buf);
    cus_event_unref(w->event);
    cus_stream_unref(w->stream);
    cus_context_unref(w->primary);
    cus_context_unref(w->ctx);
    assert_int_equal(cus_destroy_error_count(), destroy_errors);
}

static void test_child_every_call_refused(void **state)
{
    (void)state;
    world w;
    world_build(&w);
    unsigned long calls = cus_fake_call_count();
    run_in_child(child_every_call, &w);
    assert_int_equal(cus_fake_call_count(), calls); /* the child's calls were its own */
    world_use_and_free(&w);
}

/* The same, twice: a child of a child; and the parent forks again after the
 * first one. */
static int child_forks_again(void *arg)
{
    world *w = arg;
    pid_t pid = fork();
    CHILD_CHECK(pid >= 0);
    if (pid == 0) {
        alarm(CHILD_WATCHDOG_S);
        child_exit(child_every_call(w));
    }
    int status = 0;
    CHILD_CHECK(waitpid(pid, &status, 0) == pid);
    CHILD_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    return child_every_call(w);
}

static void test_grandchild_and_second_fork(void **state)
{
    (void)state;
    world w;
    world_build(&w);
    run_in_child(child_forks_again, &w);
    run_in_child(child_every_call, &w);
    world_use_and_free(&w);
}

/* --- forks while another parent thread holds a lock, runs a host function, or
 * captures ------------------------------------------------------------------------------ */

/* A resolver over the fake's that can hold one call: the loader's lock is
 * held during resolution, and a module's lock during
 * cuModuleGetFunctionCount (cus_module_function_names; chosen because the
 * holding thread has allocated nothing yet: memory that only a vanished
 * thread points to is lost in the child, which valgrind, following the
 * child, would report). */
static PFN_cuModuleGetFunctionCount_v12040 real_function_count;

static CUresult gated_function_count(unsigned int *n, CUmodule m)
{
    gate_pass();
    return real_function_count(n, m);
}

static bool gate_resolution;

static CUresult gated_resolver(const char *symbol, void **pfn, int version, cuuint64_t flags,
                               CUdriverProcAddressQueryResult *qs)
{
    if (gate_resolution && strcmp(symbol, "cuDeviceGetCount") == 0)
        gate_pass();
    CUresult r = cus_fake_get_proc_address(symbol, pfn, version, flags, qs);
    if (r == CUDA_SUCCESS && *pfn && strcmp(symbol, "cuModuleGetFunctionCount") == 0) {
        memcpy(&real_function_count, pfn, sizeof *pfn);
        PFN_cuModuleGetFunctionCount_v12040 g = gated_function_count;
        memcpy(pfn, &g, sizeof g);
    }
    return r;
}

static void *thread_init(void *arg)
{
    (void)arg;
    return (void *)(intptr_t)cus_init();
}

static int child_during_load(void *arg)
{
    (void)arg;
    /* The loader's lock was held by the loading thread, which is gone. */
    CHILD_FORKED(cus_init(), "cus_init");
    int n = 0;
    CHILD_FORKED(cus_device_count(&n), "cus_device_count");
    CHILD_FORKED(cus_driver_install(NULL), "cus_driver_install");
    return 0;
}

static void test_fork_during_first_load(void **state)
{
    (void)state;
    assert_ok(cus_driver_install(gated_resolver));
    gate_resolution = true;
    gate_arm();
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, thread_init, NULL), 0);
    gate_wait_inside(); /* t is in cus_init, under the loader's lock */
    run_in_child(child_during_load, NULL);
    gate_release();
    void *st = NULL;
    assert_int_equal(pthread_join(t, &st), 0);
    assert_int_equal((intptr_t)st, CUS_SUCCESS);
    gate_resolution = false;
    int n = 0;
    assert_ok(cus_device_count(&n));
    assert_int_equal(n, 1);
}

typedef struct lock_case {
    cus_context *ctx;
    cus_module *mod;
    cus_stream *stream;
} lock_case;

static void *thread_function_names(void *arg)
{
    lock_case *lc = arg;
    const char *names[4];
    unsigned int n = 0;
    cus_status st = cus_module_function_names(lc->mod, names, 4, &n);
    return (void *)(intptr_t)(st ? st : n == 2 ? CUS_SUCCESS : -1);
}

static int child_module_locked(void *arg)
{
    lock_case *lc = arg;
    unsigned long calls = cus_fake_call_count();
    cus_function *f = NULL;
    /* The module's lock is held by a thread that does not exist here. */
    CHILD_FORKED(cus_module_get_function(lc->mod, "noargs", &f), "cus_module_get_function");
    const char *names[4];
    unsigned int n = 0;
    CHILD_FORKED(cus_module_function_names(lc->mod, names, 4, &n), "cus_module_function_names");
    CHILD_FORKED(cus_stream_synchronize(lc->stream), "cus_stream_synchronize");
    cus_stream_unref(lc->stream);
    cus_module_unref(lc->mod); /* the last release, lock held or not */
    cus_context_unref(lc->ctx);
    CHILD_CHECK(cus_debug_live_objects() == 0);
    CHILD_CHECK(cus_fake_call_count() == calls);
    return 0;
}

static void test_fork_while_module_lock_held(void **state)
{
    (void)state;
    assert_ok(cus_driver_install(gated_resolver));
    lock_case lc = {new_ctx(), NULL, NULL};
    lc.stream = new_stream(lc.ctx, 0);
    assert_ok(cus_module_load_data(lc.ctx, ptx_src, sizeof ptx_src, NULL, &lc.mod));
    gate_arm();
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, thread_function_names, &lc), 0);
    gate_wait_inside(); /* t holds the module's lock, inside the driver */
    run_in_child(child_module_locked, &lc);
    gate_release();
    void *st = NULL;
    assert_int_equal(pthread_join(t, &st), 0);
    assert_int_equal((intptr_t)st, CUS_SUCCESS);
    cus_function *f = NULL;
    assert_ok(cus_module_get_function(lc.mod, "noargs", &f));
    assert_ok(cus_launch(f, 1, 1, 0, lc.stream));
    assert_ok(cus_stream_synchronize(lc.stream));
    cus_function_unref(f);
    cus_stream_unref(lc.stream);
    cus_module_unref(lc.mod);
    cus_context_unref(lc.ctx);
}

/* A host function that waits for the test to let it go. */
static pthread_mutex_t hf_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hf_cv = PTHREAD_COND_INITIALIZER;
static bool hf_inside, hf_go;

static void blocking_host_fn(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&hf_lock);
    hf_inside = true;
    pthread_cond_broadcast(&hf_cv);
    while (!hf_go)
        pthread_cond_wait(&hf_cv, &hf_lock);
    pthread_mutex_unlock(&hf_lock);
}

typedef struct busy_case {
    cus_context *ctx;
    cus_stream *busy, *captured;
    cus_buffer *buf;
    cus_module *mod;
    cus_function *noargs;
    cus_capture_guard cap;
} busy_case;

static int child_busy(void *arg)
{
    busy_case *bc = arg;
    unsigned long calls = cus_fake_call_count();
    /* The driver thread, mid host function in the parent, is not here:
     * nothing waits for it. */
    CHILD_FORKED(cus_stream_synchronize(bc->busy), "cus_stream_synchronize");
    CHILD_FORKED(cus_context_synchronize(bc->ctx), "cus_context_synchronize");
    CHILD_FORKED(cus_launch(bc->noargs, 1, 1, 0, bc->captured), "cus_launch");
    cus_graph *g = NULL;
    CHILD_FORKED(cus_capture_end(&bc->cap, &g), "cus_capture_end");
    /* The parent's capture is open: releases still run at once here. */
    size_t live = cus_debug_live_objects();
    bc->buf = cus_buffer_unref(bc->buf);
    CHILD_CHECK(cus_debug_live_objects() == live - 1);
    cus_capture_abandon(&bc->cap); /* lets go of its stream only */
    CHILD_CHECK(!bc->cap.open);
    cus_function_unref(bc->noargs);
    cus_module_unref(bc->mod);
    cus_stream_unref(bc->captured);
    cus_stream_unref(bc->busy);
    cus_context_unref(bc->ctx);
    CHILD_CHECK(cus_debug_live_objects() == 0);
    CHILD_CHECK(cus_fake_call_count() == calls);
    CHILD_CHECK(child_destroy_calls == 0);
    /* With nothing alive, the fake's install resets it without waiting for
     * its driver thread (not in the child), then cuscope refuses it. */
    CHILD_CHECK(cus_fake_install(NULL) == CUS_ERROR_FORKED);
    CHILD_CHECK(cus_fake_live_handles(CUS_FAKE_HANDLE_ANY) == 0);
    return 0;
}

static void test_fork_during_host_function_and_capture(void **state)
{
    (void)state;
    busy_case bc;
    memset(&bc, 0, sizeof bc);
    bc.ctx = new_ctx();
    bc.busy = new_stream(bc.ctx, CU_STREAM_NON_BLOCKING);
    bc.captured = new_stream(bc.ctx, CU_STREAM_NON_BLOCKING);
    assert_ok(cus_buffer_alloc(bc.ctx, 64, &bc.buf));
    assert_ok(cus_module_load_data(bc.ctx, ptx_src, sizeof ptx_src, NULL, &bc.mod));
    assert_ok(cus_module_get_function(bc.mod, "noargs", &bc.noargs));
    hf_inside = hf_go = false;
    assert_ok(cus_stream_launch_host_fn(bc.busy, blocking_host_fn, NULL));
    bool done = true;
    assert_ok(cus_stream_query(bc.busy, &done)); /* starts it on the driver thread */
    pthread_mutex_lock(&hf_lock);
    while (!hf_inside)
        pthread_cond_wait(&hf_cv, &hf_lock);
    pthread_mutex_unlock(&hf_lock);
    bc.cap = cus_capture_begin(bc.captured, CU_STREAM_CAPTURE_MODE_RELAXED);
    assert_ok(bc.cap.status);
    cus_set_destroy_error_handler(child_destroy_handler, NULL);
    child_destroy_calls = 0;
    run_in_child(child_busy, &bc);
    pthread_mutex_lock(&hf_lock);
    hf_go = true;
    pthread_cond_broadcast(&hf_cv);
    pthread_mutex_unlock(&hf_lock);
    /* The parent: the capture goes on, the host function finishes. */
    assert_ok(cus_launch(bc.noargs, 1, 1, 0, bc.captured));
    cus_graph *g = NULL;
    assert_ok(cus_capture_end(&bc.cap, &g));
    assert_ok(cus_stream_synchronize(bc.busy));
    assert_int_equal(child_destroy_calls, 0);
    cus_graph_unref(g);
    cus_buffer_unref(bc.buf);
    cus_function_unref(bc.noargs);
    cus_module_unref(bc.mod);
    cus_stream_unref(bc.captured);
    cus_stream_unref(bc.busy);
    cus_context_unref(bc.ctx);
}

/* A library kernel looked up with no context current leaves its layout
 * pending (library.h); in a child, reading it is a driver call, refused. */
static int child_pending_layout(void *arg)
{
    cus_kernel *k = arg;
    size_t off = 0, size = 0;
    CHILD_FORKED(cus_kernel_param_info(k, 0, &off, &size), "cus_kernel_param_info");
    CHILD_CHECK(!cus_kernel_layout_known(k));
    return 0;
}

static void test_child_pending_layout_refused(void **state)
{
    (void)state;
    cus_autoptr(cus_library) lib = NULL;
    assert_ok(cus_library_load_data(ptx_src, sizeof ptx_src, NULL, NULL, &lib));
    cus_autoptr(cus_kernel) k = NULL;
    assert_ok(cus_library_get_kernel(lib, "add", &k));
    assert_false(cus_kernel_layout_known(k));
    run_in_child(child_pending_layout, k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_child_every_call_refused),
        ENV_TEST(test_grandchild_and_second_fork),
        ENV_TEST(test_fork_during_first_load),
        ENV_TEST(test_fork_while_module_lock_held),
        ENV_TEST(test_fork_during_host_function_and_capture),
        ENV_TEST(test_child_pending_layout_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
