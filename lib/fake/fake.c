/* The fake driver's core: the lock, install/uninstall, the call prologue that
 * every counted entry point runs (count, log, the host-function rule, faults,
 * cuInit check, the stream-capture rule for unsafe calls), the call log, fault
 * injection and the misuse record. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/driver.h"
#include "cuscope/object.h"
#include "fake_core.h"

fake_state fake_g;

/* One lock for everything shared: the fake is a test tool, so simplicity and
 * TSan-cleanliness beat scalability. */
static pthread_mutex_t fake_mutex = PTHREAD_MUTEX_INITIALIZER;

void fake_lock(void)
{
    pthread_mutex_lock(&fake_mutex);
}

void fake_unlock(void)
{
    pthread_mutex_unlock(&fake_mutex);
}

/* --- areas ------------------------------------------------------------------------------ */

#define FAKE_MAX_AREAS 24

static const fake_area *areas[FAKE_MAX_AREAS]; /* in reset order */
static const fake_area *teardown_areas[FAKE_MAX_AREAS]; /* in teardown order */
static size_t area_count;
static const fake_op_executor *executors[FAKE_OP_KIND_SLOTS];

static void insert_ordered(const fake_area **list, const fake_area *a, bool by_teardown)
{
    size_t i = area_count;
    int key = by_teardown ? a->teardown_order : a->reset_order;
    while (i > 0 && (by_teardown ? list[i - 1]->teardown_order : list[i - 1]->reset_order) > key) {
        list[i] = list[i - 1];
        i--;
    }
    list[i] = a;
}

/* Called by the areas' constructors, before any entry point can run. */
void fake_area_register(const fake_area *a)
{
    if (area_count == FAKE_MAX_AREAS)
        abort(); /* a new area without room for it: a build mistake */
    insert_ordered(areas, a, false);
    insert_ordered(teardown_areas, a, true);
    area_count++;
    for (size_t i = 0; i < a->executor_count; i++) {
        int kind = a->executors[i].kind;
        if (kind < 0 || kind >= FAKE_OP_KIND_SLOTS || executors[kind])
            abort(); /* two areas claim a kind: a build mistake */
        executors[kind] = &a->executors[i];
    }
}

const fake_op_executor *fake_op_executor_of(int kind)
{
    return kind >= 0 && kind < FAKE_OP_KIND_SLOTS ? executors[kind] : NULL;
}

void fake_areas_doom_locked(CUcontext c, unsigned long ticket)
{
    for (size_t i = 0; i < area_count; i++)
        if (teardown_areas[i]->doom_locked)
            teardown_areas[i]->doom_locked(c, ticket);
}

void fake_areas_destroy_doomed_locked(CUcontext c, unsigned long ticket)
{
    for (size_t i = 0; i < area_count; i++)
        if (teardown_areas[i]->destroy_doomed_locked)
            teardown_areas[i]->destroy_doomed_locked(c, ticket);
}

static void areas_shutdown(void)
{
    for (size_t i = 0; i < area_count; i++)
        if (areas[i]->shutdown)
            areas[i]->shutdown();
}

/* fork(): the child has only the thread that forked. Another parent thread
 * may have held the lock, and the driver thread is gone: both are forgotten,
 * so the fake's queries, install and uninstall never hang in a child (its
 * entry points are not called there: cuscope refuses first). Registered by a
 * constructor: what it repairs is wrong in every child. */
static void fake_atfork_child(void)
{
    pthread_mutex_init(&fake_mutex, NULL);
    for (size_t i = 0; i < area_count; i++)
        if (areas[i]->fork_child)
            areas[i]->fork_child();
}

__attribute__((constructor)) static void fake_register_atfork(void)
{
    (void)pthread_atfork(NULL, NULL, fake_atfork_child);
}

_Thread_local bool fake_tls_driver_thread;
_Thread_local bool fake_tls_inline_host_fn;

bool fake_in_host_function(void)
{
    return fake_tls_driver_thread || fake_tls_inline_host_fn;
}

CUS_API bool cus_fake_on_driver_thread(void)
{
    return fake_tls_driver_thread;
}

void fake_wait_locked(pthread_cond_t *cv)
{
    const char *call = fake_g.current_call;
    fake_g.current_call = NULL; /* not ours while others hold the lock */
    pthread_cond_wait(cv, &fake_mutex);
    fake_g.current_call = call;
}

/* --- the call log and counters ---------------------------------------------------- */

#define FAKE_LOG_SIZE 4096

static unsigned long call_count;                 /* counted calls since install */
static unsigned long calls_by_entry[FAKE_ENTRY_COUNT];
static const char *call_log[FAKE_LOG_SIZE];      /* log names (static strings), a ring */

/* --- faults ------------------------------------------------------------------------- */

#define FAKE_MAX_ENTRY_FAULTS 16

static struct {
    bool armed;
    unsigned long at; /* the value of call_count that fires */
    CUresult result;
    bool persistent;
} global_fault;

typedef struct entry_fault {
    bool armed;
    bool matches[FAKE_ENTRY_COUNT]; /* resolved from the name when armed */
    unsigned long n, seen;          /* fire at the n-th matching call since arming */
    CUresult result;
    bool persistent;
} entry_fault;

static entry_fault entry_faults[FAKE_MAX_ENTRY_FAULTS];
static unsigned long faults_fired;

/* Decides whether this counted call fails. Every armed rule sees the call
 * (so their counts stay exact); the global fault wins, then the earliest
 * entry rule. */
static bool fault_fires_locked(fake_entry_id id, CUresult *result)
{
    bool fired = false;
    if (global_fault.armed && call_count >= global_fault.at) {
        if (call_count == global_fault.at || global_fault.persistent) {
            fired = true;
            *result = global_fault.result;
        }
        if (!global_fault.persistent)
            global_fault.armed = false;
    }
    for (int i = 0; i < FAKE_MAX_ENTRY_FAULTS; i++) {
        entry_fault *f = &entry_faults[i];
        if (!f->armed || !f->matches[id])
            continue;
        f->seen++;
        if (f->seen < f->n)
            continue;
        if (!fired) {
            fired = true;
            *result = f->result;
        }
        if (!f->persistent)
            f->armed = false;
    }
    return fired;
}

/* --- misuse -------------------------------------------------------------------------- */

/* A few message slots in a ring, so the pointer cus_fake_last_misuse() returned
 * stays intact at least until the next misuse even if the caller reads it
 * while another thread reports one. */
#define FAKE_MISUSE_SLOTS 8
#define FAKE_MISUSE_LEN 320

static unsigned long misuse_count;
static char misuse_text[FAKE_MISUSE_SLOTS][FAKE_MISUSE_LEN];

void fake_misuse_locked(const char *fmt, ...)
{
    char *slot = misuse_text[misuse_count % FAKE_MISUSE_SLOTS];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(slot, FAKE_MISUSE_LEN, fmt, ap);
    va_end(ap);
    if (n >= 0 && n < FAKE_MISUSE_LEN && fake_g.current_call)
        snprintf(slot + n, (size_t)(FAKE_MISUSE_LEN - n), " (in %s)", fake_g.current_call);
    misuse_count++;
}

/* Whether an area refuses a potentially unsafe call (a capture prohibits it);
 * a refusal invalidates the captures that prohibit it. */
bool fake_unsafe_call_refused_locked(void)
{
    for (size_t i = 0; i < area_count; i++)
        if (areas[i]->unsafe_call_locked && areas[i]->unsafe_call_locked())
            return true;
    return false;
}

bool fake_context_sync_refused_locked(CUcontext c)
{
    bool refused = false;
    for (size_t i = 0; i < area_count; i++)
        if (areas[i]->context_sync_refused_locked && areas[i]->context_sync_refused_locked(c))
            refused = true;
    return refused;
}

/* --- the prologue --------------------------------------------------------------------- */

bool fake_enter(fake_entry_id id, CUresult *result)
{
    fake_lock();
    fake_ensure_configured_locked();
    call_log[call_count % FAKE_LOG_SIZE] = fake_entries[id].name;
    call_count++;
    calls_by_entry[id]++;
    /* Before the faults: the rule is absolute, whatever else is armed. */
    if (fake_in_host_function()) {
        fake_misuse_locked("CUDA call inside a host function (%s)", fake_entries[id].name);
        *result = CUDA_ERROR_NOT_PERMITTED;
        fake_unlock();
        return false;
    }
    if (fault_fires_locked(id, result)) {
        faults_fired++;
        fake_unlock();
        return false;
    }
    if (!(fake_entries[id].flags & FAKE_BEFORE_INIT) && !fake_g.initialized) {
        *result = CUDA_ERROR_NOT_INITIALIZED;
        fake_unlock();
        return false;
    }
    /* A potentially unsafe call while a capture prohibits it: refused, and
     * the capture invalidated (fake_graph.c). */
    if ((fake_entries[id].flags & FAKE_CAPTURE_UNSAFE) && fake_unsafe_call_refused_locked()) {
        *result = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
        fake_unlock();
        return false;
    }
    fake_g.current_call = fake_entries[id].name;
    return true;
}

CUresult fake_leave(CUresult r)
{
    fake_g.current_call = NULL;
    fake_unlock();
    return r;
}

/* --- configuration ---------------------------------------------------------------------- */

/* --- configuration ---------------------------------------------------------------------- */

static bool config_valid(const cus_fake_config *cfg)
{
    if (cfg && cfg->driver_version < 0)
        return false;
    for (size_t i = 0; i < area_count; i++)
        if (areas[i]->config_valid && !areas[i]->config_valid(cfg))
            return false;
    return true;
}

/* Drops every handle, fault, counter and log entry, and applies cfg. */
static void reset_locked(const cus_fake_config *cfg)
{
    /* The areas in their reset order (the graphs first: their nodes hold
     * memory and launch payloads; then the queues, events and memory), all
     * before the registry: they point at records that it frees. */
    for (size_t i = 0; i < area_count; i++)
        if (areas[i]->reset_locked)
            areas[i]->reset_locked(cfg);
    fake_registry_clear_locked();
    fake_resolver_reset_locked();

    call_count = 0;
    memset(calls_by_entry, 0, sizeof calls_by_entry);
    memset(call_log, 0, sizeof call_log);
    memset(&global_fault, 0, sizeof global_fault);
    memset(entry_faults, 0, sizeof entry_faults);
    faults_fired = 0;
    misuse_count = 0;
    memset(misuse_text, 0, sizeof misuse_text);

    unsigned long generation = fake_g.generation + 1;
    memset(&fake_g, 0, sizeof fake_g);
    fake_g.generation = generation; /* every thread's stack is now stale, hence empty */
    fake_g.configured = true;
    fake_g.driver_version = cfg && cfg->driver_version ? cfg->driver_version : CUDA_VERSION;
}

void fake_ensure_configured_locked(void)
{
    if (!fake_g.configured)
        reset_locked(NULL);
}

CUS_API cus_status cus_fake_install(const cus_fake_config *cfg)
{
    /* The driver thread cannot join itself. */
    if (fake_in_host_function() || cus_debug_live_objects() != 0)
        return CUS_ERROR_BUSY;
    if (!config_valid(cfg))
        return CUS_ERROR_INVALID_ARGUMENT;
    areas_shutdown();
    fake_lock();
    reset_locked(cfg);
    fake_unlock();
    /* Outside the lock: cuscope's loader lock is taken before ours when it
     * loads through the resolver, so taking it under ours could deadlock. */
    return cus_driver_install(cus_fake_get_proc_address);
}

CUS_API cus_status cus_fake_uninstall(void)
{
    if (fake_in_host_function() || cus_debug_live_objects() != 0)
        return CUS_ERROR_BUSY;
    cus_status st = cus_driver_install(NULL);
    if (st != CUS_SUCCESS)
        return st;
    areas_shutdown();
    fake_lock();
    reset_locked(NULL);
    /* Back to "never installed": the next use applies the defaults again. */
    fake_g.configured = false;
    fake_unlock();
    return CUS_SUCCESS;
}

/* --- faults: control ----------------------------------------------------------------------- */

CUS_API void cus_fake_fail_call(unsigned long n, CUresult result, bool persistent)
{
    fake_lock();
    fake_ensure_configured_locked();
    /* n == 0 names no call: it disarms the global fault. */
    global_fault.armed = n != 0;
    global_fault.at = call_count + n;
    global_fault.result = result;
    global_fault.persistent = persistent;
    fake_unlock();
}

CUS_API cus_status cus_fake_fail_entry(const char *name, unsigned long n, CUresult result,
                                       bool persistent)
{
    /* An unknown name could never fire: refuse it, so a typo fails loudly. */
    if (!name || n == 0 || !fake_entry_name_known(name))
        return CUS_ERROR_INVALID_ARGUMENT;
    cus_status st = CUS_ERROR_INVALID_ARGUMENT; /* all slots in use */
    fake_lock();
    fake_ensure_configured_locked();
    for (int i = 0; i < FAKE_MAX_ENTRY_FAULTS; i++) {
        entry_fault *f = &entry_faults[i];
        if (f->armed)
            continue;
        memset(f, 0, sizeof *f);
        for (int id = 0; id < FAKE_ENTRY_COUNT; id++)
            f->matches[id] = !(fake_entries[id].flags & FAKE_UNCOUNTED) &&
                             fake_entry_matches((fake_entry_id)id, name);
        f->n = n;
        f->result = result;
        f->persistent = persistent;
        f->armed = true;
        st = CUS_SUCCESS;
        break;
    }
    fake_unlock();
    return st;
}

CUS_API void cus_fake_clear_faults(void)
{
    fake_lock();
    memset(&global_fault, 0, sizeof global_fault);
    memset(entry_faults, 0, sizeof entry_faults);
    fake_unlock();
}

CUS_API unsigned long cus_fake_faults_fired(void)
{
    fake_lock();
    unsigned long n = faults_fired;
    fake_unlock();
    return n;
}

/* --- queries ------------------------------------------------------------------------------------ */

CUS_API unsigned long cus_fake_call_count(void)
{
    fake_lock();
    unsigned long n = call_count;
    fake_unlock();
    return n;
}

CUS_API unsigned long cus_fake_calls_of(const char *name)
{
    if (!name)
        return 0;
    unsigned long n = 0;
    fake_lock();
    for (int id = 0; id < FAKE_ENTRY_COUNT; id++)
        if (fake_entry_matches((fake_entry_id)id, name))
            n += calls_by_entry[id];
    fake_unlock();
    return n;
}

CUS_API const char *cus_fake_call_name(unsigned long i)
{
    const char *name = NULL;
    fake_lock();
    if (i < call_count && call_count - i <= FAKE_LOG_SIZE)
        name = call_log[i % FAKE_LOG_SIZE];
    fake_unlock();
    return name;
}

CUS_API unsigned long cus_fake_misuse_count(void)
{
    fake_lock();
    unsigned long n = misuse_count;
    fake_unlock();
    return n;
}

CUS_API const char *cus_fake_last_misuse(void)
{
    fake_lock();
    const char *s = misuse_count ? misuse_text[(misuse_count - 1) % FAKE_MISUSE_SLOTS] : "";
    fake_unlock();
    return s;
}

CUS_API size_t cus_fake_live_handles(cus_fake_handle_kind kind)
{
    if ((int)kind < 0 || kind >= CUS_FAKE_HANDLE_KIND_COUNT_)
        return 0;
    fake_lock();
    size_t n = fake_handle_live_locked(kind);
    fake_unlock();
    return n;
}
