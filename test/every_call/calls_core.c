/* The table of every_call.h for the driver, status, device, context, stream,
 * event, object and version headers; what has no entry is listed above the
 * table. */
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "every_call.h"

/* --- driver.h ----------------------------------------------------------------------------- */

static cus_status c_init(world *w)
{
    (void)w;
    return cus_init();
}

static cus_status c_driver_version(world *w)
{
    (void)w;
    int v = 0;
    EC_RETURN_OUT(cus_driver_version(&v), v > 0);
}

static cus_status c_driver_proc(world *w)
{
    (void)w;
    void *fn = NULL;
    EC_RETURN_OUT(cus_driver_proc("cuMemAlloc", 3020, &fn), fn != NULL);
}

/* --- status.h ----------------------------------------------------------------------------- */

/* Returns a status, but reports rather than fails: CUS_SUCCESS after the
 * table's cus_clear_last_error(). */
static cus_status c_last_status(world *w)
{
    (void)w;
    return cus_last_status();
}

/* --- device.h ----------------------------------------------------------------------------- */

static cus_status c_device_count(world *w)
{
    (void)w;
    int n = 0;
    EC_RETURN_OUT(cus_device_count(&n), n >= 1);
}

static cus_status c_device_get(world *w)
{
    cus_device d = {-1};
    EC_RETURN_OUT(cus_device_get((int)w->dev.handle, &d), d.handle == w->dev.handle);
}

static cus_status c_device_name(world *w)
{
    char name[64] = "";
    EC_RETURN_OUT(cus_device_name(w->dev, name, sizeof name), name[0] != '\0');
}

static cus_status c_device_uuid(world *w)
{
    CUuuid u;
    return cus_device_uuid(w->dev, &u);
}

static cus_status c_device_uuid_string(world *w)
{
    char s[CUS_DEVICE_UUID_STRING_LEN] = "";
    EC_RETURN_OUT(cus_device_uuid_string(w->dev, s), strlen(s) == CUS_DEVICE_UUID_STRING_LEN - 1);
}

static cus_status c_device_total_memory(world *w)
{
    size_t n = 0;
    EC_RETURN_OUT(cus_device_total_memory(w->dev, &n), n > 0);
}

static cus_status c_device_attribute(world *w)
{
    int v = 0;
    EC_RETURN_OUT(cus_device_attribute(w->dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &v),
                  v > 0);
}

static cus_status c_device_compute_capability(world *w)
{
    int major = 0, minor = -1;
    EC_RETURN_OUT(cus_device_compute_capability(w->dev, &major, &minor), major > 0 && minor >= 0);
}

/* --- context.h: objects ------------------------------------------------------------------- */

static cus_status c_context_create(world *w)
{
    cus_autoptr(cus_context) c = NULL;
    EC_RETURN_OUT(cus_context_create(w->dev, CUS_CTX_NO_PUSH, &c), c != NULL);
}

/* Created pushed, as cuCtxCreate does, then popped. */
static cus_status c_context_create_pushed(world *w)
{
    cus_autoptr(cus_context) c = NULL;
    EC_CHECK_OUT(cus_context_create(w->dev, 0, &c), c != NULL && cus_context_current() == c);
    return cus_context_pop(NULL);
}

static cus_status c_context_retain_primary(world *w)
{
    cus_autoptr(cus_context) c = NULL;
    EC_RETURN_OUT(cus_context_retain_primary(w->dev, &c), c != NULL);
}

/* The handle of w->other: a foreign object over a live context. */
static cus_status c_context_wrap(world *w)
{
    cus_autoptr(cus_context) c = NULL;
    EC_RETURN_OUT(cus_context_wrap(cus_context_handle(w->other), &c),
                  c != NULL && cus_context_handle(c) == cus_context_handle(w->other));
}

/* Returns a status, but reports rather than fails: none, or the sticky
 * status that poisoned ctx. Anything else is wrong. */
static cus_status c_context_poisoned(world *w)
{
    cus_status p = cus_context_poisoned(w->ctx);
    return p == CUS_SUCCESS || cus_status_is_sticky(p) ? CUS_SUCCESS : p;
}

/* NVTX names: no-ops without CUSCOPE_NVTX (the tests' environment). */
static cus_status c_context_set_name(world *w)
{
    return cus_context_set_name(w->ctx, "every_call");
}

static cus_status c_stream_set_name(world *w)
{
    return cus_stream_set_name(w->stream, "every_call");
}

static cus_status c_event_set_name(world *w)
{
    return cus_event_set_name(w->event, "every_call");
}

/* --- context.h: calls on a context -------------------------------------------------------- */

static cus_status c_context_synchronize(world *w)
{
    return cus_context_synchronize(w->ctx);
}

static cus_status c_context_api_version(world *w)
{
    unsigned int v = 0;
    EC_RETURN_OUT(cus_context_api_version(w->ctx, &v), v != 0);
}

static cus_status c_context_flags(world *w)
{
    unsigned int f = UINT_MAX;
    EC_RETURN_OUT(cus_context_flags(w->ctx, &f), f != UINT_MAX);
}

static cus_status c_context_get_limit(world *w)
{
    size_t v = 0;
    EC_RETURN_OUT(cus_context_get_limit(w->ctx, CU_LIMIT_STACK_SIZE, &v), v > 0);
}

/* Another stack size, then the old one back. */
static cus_status c_context_set_limit(world *w)
{
    size_t old = 0;
    CUS_TRY(cus_context_get_limit(w->ctx, CU_LIMIT_STACK_SIZE, &old));
    CUS_TRY(cus_context_set_limit(w->ctx, CU_LIMIT_STACK_SIZE, old + 1024));
    return cus_context_set_limit(w->ctx, CU_LIMIT_STACK_SIZE, old);
}

static cus_status c_context_get_cache_config(world *w)
{
    CUfunc_cache c = (CUfunc_cache)-1;
    EC_RETURN_OUT(cus_context_get_cache_config(w->ctx, &c), c != (CUfunc_cache)-1);
}

static cus_status c_context_set_cache_config(world *w)
{
    CUfunc_cache old = CU_FUNC_CACHE_PREFER_NONE;
    CUS_TRY(cus_context_get_cache_config(w->ctx, &old));
    CUfunc_cache other =
        old == CU_FUNC_CACHE_PREFER_SHARED ? CU_FUNC_CACHE_PREFER_L1 : CU_FUNC_CACHE_PREFER_SHARED;
    CUS_TRY(cus_context_set_cache_config(w->ctx, other));
    return cus_context_set_cache_config(w->ctx, old);
}

static cus_status c_context_get_shared_mem_config(world *w)
{
    CUsharedconfig c = (CUsharedconfig)-1;
    EC_RETURN_OUT(cus_context_get_shared_mem_config(w->ctx, &c), c != (CUsharedconfig)-1);
}

static cus_status c_context_set_shared_mem_config(world *w)
{
    CUsharedconfig old = CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE;
    CUS_TRY(cus_context_get_shared_mem_config(w->ctx, &old));
    CUsharedconfig other = old == CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE
                               ? CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE
                               : CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE;
    CUS_TRY(cus_context_set_shared_mem_config(w->ctx, other));
    return cus_context_set_shared_mem_config(w->ctx, old);
}

static cus_status c_context_stream_priority_range(world *w)
{
    int least = INT_MIN, greatest = INT_MIN;
    EC_RETURN_OUT(cus_context_stream_priority_range(w->ctx, &least, &greatest),
                  least != INT_MIN && greatest != INT_MIN && greatest <= least);
}

/* memory.h. ctx and other share the fake's one device, which
 * cuDeviceCanAccessPeer says cannot access itself as a peer: the fake's
 * cuCtxEnablePeerAccess answers CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, which
 * cuscope passes through. That refusal, recorded and agreeing with
 * cus_context_can_access_peer, is this entry's success (and is then
 * forgotten); any other status is a failure. A driver that allows it
 * succeeds at once. Enable comes first: the refusals of the host-function
 * and poisoned modes must come before any driver call. */
/* --- context.h: the stack ----------------------------------------------------------------- */

static cus_status c_context_push(world *w)
{
    CUS_TRY(cus_context_push(w->ctx));
    return cus_context_pop(NULL);
}

/* Pop with `popped`: the stack's reference moves to the caller. */
static cus_status c_context_pop(world *w)
{
    CUS_TRY(cus_context_push(w->ctx));
    cus_autoptr(cus_context) popped = NULL;
    return cus_context_pop(&popped);
}

/* The top replaced by ctx, then by what was current (NULL on an empty stack:
 * that pops the top only). */
static cus_status c_context_set_current(world *w)
{
    cus_autoptr(cus_context) saved = cus_context_ref(cus_context_current());
    CUS_TRY(cus_context_set_current(w->ctx));
    return cus_context_set_current(saved);
}

static cus_status c_context_guard_enter(world *w)
{
    cus_context_guard guard = cus_context_guard_enter(w->ctx);
    if (guard.status)
        return guard.status;
    cus_context_guard_exit(&guard);
    return guard.status;
}

/* The declaration-style macro over the same pair, with a call inside that
 * finds ctx on top. */
static cus_status c_context_scope(world *w)
{
    cus_context_scope(g, w->ctx);
    if (g.status)
        return g.status;
    unsigned int f = UINT_MAX;
    EC_RETURN_OUT(cus_context_flags(w->ctx, &f), f != UINT_MAX);
}

/* --- stream.h ----------------------------------------------------------------------------- */

static cus_status c_stream_create(world *w)
{
    cus_autoptr(cus_stream) s = NULL;
    EC_RETURN_OUT(cus_stream_create(w->ctx, CU_STREAM_NON_BLOCKING, 0, &s), s != NULL);
}

static cus_status c_stream_legacy(world *w)
{
    cus_autoptr(cus_stream) s = NULL;
    EC_RETURN_OUT(cus_stream_legacy(w->ctx, &s), s != NULL);
}

static cus_status c_stream_per_thread(world *w)
{
    cus_autoptr(cus_stream) s = NULL;
    EC_RETURN_OUT(cus_stream_per_thread(w->ctx, &s), s != NULL);
}

static cus_status c_stream_wrap(world *w)
{
    cus_autoptr(cus_stream) s = NULL;
    EC_RETURN_OUT(cus_stream_wrap(w->ctx, cus_stream_handle(w->stream), &s),
                  s != NULL && cus_stream_handle(s) == cus_stream_handle(w->stream));
}

static cus_status c_stream_synchronize(world *w)
{
    return cus_stream_synchronize(w->stream);
}

static cus_status c_stream_query(world *w)
{
    bool done = false; /* the world's stream is idle */
    EC_RETURN_OUT(cus_stream_query(w->stream, &done), done);
}

static cus_status c_stream_wait_event(world *w)
{
    return cus_stream_wait_event(w->stream, w->event);
}

/* The host function owns its user_data once queued, and frees it; the
 * caller frees it only when the call fails (stream.h): what a caller does.
 * Were a call to fail with the function queued (a closing pop failing, before
 * the switch contract), the entry would free what the function then reads:
 * a use-after-free under ASan, and a run count that is off. */
static atomic_ulong host_fn_runs;
static unsigned long host_fn_runs_before;
enum { HOST_FN_MAGIC = 0x600d };

static void host_fn_owning(void *data)
{
    int *p = data;
    if (*p == HOST_FN_MAGIC)
        atomic_fetch_add(&host_fn_runs, 1);
    free(p);
}

static cus_status c_stream_launch_host_fn(world *w)
{
    int *data = malloc(sizeof *data);
    if (!data)
        return CUS_ERROR_OUT_OF_HOST_MEMORY;
    *data = HOST_FN_MAGIC;
    host_fn_runs_before = atomic_load(&host_fn_runs);
    cus_status st = cus_stream_launch_host_fn(w->stream, host_fn_owning, data);
    if (st) {
        free(data);
        return st;
    }
    return cus_stream_synchronize(w->stream);
}

/* It ran, once, with its user_data. */
static bool k_stream_launch_host_fn(world *w)
{
    (void)w;
    return atomic_load(&host_fn_runs) == host_fn_runs_before + 1;
}

static cus_status c_stream_priority(world *w)
{
    int p = INT_MIN;
    EC_RETURN_OUT(cus_stream_priority(w->stream, &p), p != INT_MIN);
}

static cus_status c_stream_flags(world *w)
{
    unsigned int f = UINT_MAX;
    EC_RETURN_OUT(cus_stream_flags(w->stream, &f), f != UINT_MAX);
}

/* --- event.h ------------------------------------------------------------------------------ */

static cus_status c_event_create(world *w)
{
    cus_autoptr(cus_event) e = NULL;
    EC_RETURN_OUT(cus_event_create(w->ctx, CU_EVENT_DISABLE_TIMING, &e), e != NULL);
}

static cus_status c_event_record(world *w)
{
    return cus_event_record(w->event, w->stream);
}

/* Recorded: once the streams finished, the event is complete. */
static bool k_event_record(world *w)
{
    bool done = false;
    return cus_event_query(w->event, &done) == CUS_SUCCESS && done;
}

static cus_status c_event_synchronize(world *w)
{
    return cus_event_synchronize(w->event);
}

static cus_status c_event_query(world *w)
{
    bool done = false; /* the world's events are complete */
    EC_RETURN_OUT(cus_event_query(w->event, &done), done);
}

static cus_status c_event_elapsed_ms(world *w)
{
    float ms = -1.0f;
    EC_RETURN_OUT(cus_event_elapsed_ms(w->event, w->event2, &ms), ms >= 0.0f);
}

/* --- the table ---------------------------------------------------------------------------- */

/* The public functions of driver.h, status.h, device.h, context.h, stream.h,
 * event.h, object.h and version.h with no entry, and why:
 *   cus_driver_install, cus_driver_set_library   fail with CUS_ERROR_BUSY while
 *       any object is alive (the world is), and on success drop the loaded
 *       driver table under the world: they need no live objects;
 *   cus_fake_* (fake.h)                          the test's own driver, not API
 *       under test; reinstalling would drop the world;
 *   cus_debug_fail_host_alloc, cus_debug_host_allocs,
 *   cus_debug_host_alloc_faults, cus_debug_host_alloc_absorbed,
 *   cus_debug_live_objects                       the test's instruments: calling
 *       them from an entry would disarm or reset the host-memory mode;
 *   cus_set_destroy_error_handler                void, cannot fail; setting it
 *       would unhook the harness's recorder;
 *   cus_driver_has, cus_status_name, cus_status_string, cus_status_is_sticky,
 *   cus_last_error, cus_last_error_message, cus_clear_last_error,
 *   cus_destroy_error_count, cus_version, cus_version_string,
 *   cus_release_deferred, cus_in_host_fn         no status, cannot fail;
 *   cus_context_ref/unref, cus_stream_ref/unref, cus_event_ref/unref,
 *   cus_context_handle/device/get_kind, cus_context_current,
 *   cus_context_stack_depth, cus_stream_handle/context/get_kind,
 *   cus_event_handle/context                     accessors and references: no
 *       status, cannot fail (used inside the entries below);
 *   cus_context_guard_exit                       void: in the guard's entry;
 *   cus_context_can_access_peer (memory.h)       used inside the peer entry.
 * cus_context_enable_peer_access is memory.h's: its entries are in calls_data.c.
 * cus_last_status and cus_context_poisoned return a status that reports
 * rather than fails: they have entries all the same. cus_context_scope is the
 * macro over guard_enter/exit.
 *
 * Notes shared by several entries: */
#define DEVICE_NOTE "EC_NOT_POISONED: takes a device value, no context object"
#define NEW_CTX_NOTE "EC_NOT_POISONED: makes a new context of its own; touches no object of ctx"

const every_call every_calls_core[] = {
    /* driver.h */
    {"cus_init", c_init, EC_HOST_FN_OK | EC_NOT_POISONED | EC_NO_DRIVER,
     "with the world's driver loaded it is one atomic load (driver.h: 'later calls cost one "
     "atomic load'), so it is not among the calls 'that could reach the driver' that a host "
     "function refuses (docs/design.md; lib/driver/loader.c:172 checks fork() only); no context "
     "object; no driver call", NULL},
    {"cus_driver_version", c_driver_version, EC_HOST_FN_OK | EC_NOT_POISONED | EC_NO_DRIVER,
     "the version read at load: no driver call once loaded, so allowed in a host function as "
     "cus_init is (lib/driver/loader.c:188 checks fork() only); no context object", NULL},
    {"cus_driver_proc", c_driver_proc, EC_NOT_POISONED | EC_NO_DRIVER,
     "asks the loaded source's resolver (cuGetProcAddress), no driver entry point; no context "
     "object", NULL},
    /* status.h */
    {"cus_last_status", c_last_status,
     EC_HOST_FN_OK | EC_NOT_POISONED | EC_NO_DRIVER | EC_FORK_OK,
     "reads the calling thread's error record: no driver call, no context; a report, not a "
     "failure", NULL},
    /* device.h */
    {"cus_device_count", c_device_count, EC_NOT_POISONED, DEVICE_NOTE, NULL},
    {"cus_device_get", c_device_get, EC_NOT_POISONED, DEVICE_NOTE, NULL},
    {"cus_device_name", c_device_name, EC_NOT_POISONED, DEVICE_NOTE, NULL},
    {"cus_device_uuid", c_device_uuid, EC_NOT_POISONED, DEVICE_NOTE, NULL},
    {"cus_device_uuid_string", c_device_uuid_string, EC_NOT_POISONED, DEVICE_NOTE, NULL},
    {"cus_device_total_memory", c_device_total_memory, EC_NOT_POISONED, DEVICE_NOTE, NULL},
    {"cus_device_attribute", c_device_attribute, EC_NOT_POISONED, DEVICE_NOTE, NULL},
    {"cus_device_compute_capability", c_device_compute_capability, EC_NOT_POISONED,
     DEVICE_NOTE, NULL},
    /* context.h: objects */
    {"cus_context_create", c_context_create, EC_NOT_POISONED | EC_POPS_ITSELF,
     NEW_CTX_NOTE "; EC_POPS_ITSELF: CUS_CTX_NO_PUSH takes the new context off the stack the "
     "driver pushed it on, and when that pop fails the context is destroyed (which pops it) and "
     "the pop's status returned, recorded (lib/context.c: not a temporary switch)",
     NULL},
    {"cus_context_create (pushed)", c_context_create_pushed, EC_NOT_POISONED | EC_POPS_ITSELF,
     NEW_CTX_NOTE "; EC_POPS_ITSELF: the entry pops the new context (cus_context_pop)", NULL},
    {"cus_context_retain_primary", c_context_retain_primary, EC_NOT_POISONED,
     "EC_NOT_POISONED: a new object for the device's primary context; touches no object of "
     "ctx", NULL},
    {"cus_context_wrap", c_context_wrap, EC_NOT_POISONED,
     "EC_NOT_POISONED: wraps w->other's handle into a new object (the latch is per object, "
     "docs/design.md); touches no object of ctx", NULL},
    {"cus_context_poisoned", c_context_poisoned,
     EC_HOST_FN_OK | EC_NOT_POISONED | EC_NO_DRIVER | EC_FORK_OK,
     "documented to report the poison of a poisoned ctx (context.h), not to refuse; reads an "
     "atomic: no driver call, so allowed in a host function", NULL},
    /* context.h: calls on a context */
    {"cus_context_synchronize", c_context_synchronize, 0, NULL, NULL},
    {"cus_context_api_version", c_context_api_version, 0, NULL, NULL},
    {"cus_context_flags", c_context_flags, 0, NULL, NULL},
    {"cus_context_get_limit", c_context_get_limit, 0, NULL, NULL},
    {"cus_context_set_limit", c_context_set_limit, 0, NULL, NULL},
    {"cus_context_get_cache_config", c_context_get_cache_config, 0, NULL, NULL},
    {"cus_context_set_cache_config", c_context_set_cache_config, 0, NULL, NULL},
    {"cus_context_get_shared_mem_config", c_context_get_shared_mem_config, 0, NULL, NULL},
    {"cus_context_set_shared_mem_config", c_context_set_shared_mem_config, 0, NULL, NULL},
    {"cus_context_stream_priority_range", c_context_stream_priority_range, 0, NULL, NULL},
    /* context.h: the stack */
    {"cus_context_push", c_context_push, EC_POPS_ITSELF, NULL, NULL},
    {"cus_context_pop", c_context_pop, EC_POPS_ITSELF, NULL, NULL},
    {"cus_context_set_current", c_context_set_current, 0, NULL, NULL},
    {"cus_context_guard_enter", c_context_guard_enter, EC_POPS_ITSELF, NULL, NULL},
    {"cus_context_scope", c_context_scope, EC_POPS_ITSELF, NULL, NULL},
    /* stream.h */
    {"cus_stream_create", c_stream_create, 0, NULL, NULL},
    {"cus_stream_legacy", c_stream_legacy, EC_NO_DRIVER, NULL, NULL},
    {"cus_stream_per_thread", c_stream_per_thread, EC_NO_DRIVER, NULL, NULL},
    {"cus_stream_wrap", c_stream_wrap, EC_NO_DRIVER, NULL, NULL},
    {"cus_stream_synchronize", c_stream_synchronize, 0, NULL, NULL},
    {"cus_stream_query", c_stream_query, 0, NULL, NULL},
    {"cus_context_set_name", c_context_set_name, EC_NOT_POISONED | EC_NO_DRIVER,
     "names the driver's context for a profiler (NVTX), no driver call; a poisoned context "
     "can be named too", NULL},
    {"cus_stream_set_name", c_stream_set_name, EC_NOT_POISONED | EC_NO_DRIVER,
     "as cus_context_set_name", NULL},
    {"cus_event_set_name", c_event_set_name, EC_NOT_POISONED | EC_NO_DRIVER,
     "as cus_context_set_name", NULL},
    {"cus_stream_wait_event", c_stream_wait_event, EC_QUEUES_WORK, NULL, NULL},
    {"cus_stream_launch_host_fn", c_stream_launch_host_fn, EC_QUEUES_WORK, NULL,
     k_stream_launch_host_fn},
    {"cus_stream_priority", c_stream_priority, 0, NULL, NULL},
    {"cus_stream_flags", c_stream_flags, 0, NULL, NULL},
    /* event.h */
    {"cus_event_create", c_event_create, 0, NULL, NULL},
    {"cus_event_record", c_event_record, EC_QUEUES_WORK, NULL, k_event_record},
    {"cus_event_synchronize", c_event_synchronize, 0, NULL, NULL},
    {"cus_event_query", c_event_query, 0, NULL, NULL},
    {"cus_event_elapsed_ms", c_event_elapsed_ms, 0, NULL, NULL},
    {NULL, NULL, 0, NULL, NULL},
};
