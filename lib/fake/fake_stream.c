/* Streams: the queues and their execution, the legacy default stream's
 * rules, context synchronization and teardown, the driver thread that runs
 * host functions, and the cuStream* and cuLaunchHostFunc entry points.
 *
 * Execution. Nothing runs at enqueue. A thread that needs a stream at some
 * position (a synchronize call, a query by the query mode, a synchronous
 * copy) runs it there itself, under the lock: for the operation at the head,
 * it first meets the operation's dependencies in order (recursively running
 * the streams they name), then pops it, marks the stream busy and executes
 * it. Dependencies only ever name work queued earlier, so a valid program
 * cannot make a cycle; one is still detected (the stream is already on this
 * thread's run stack) and reported as misuse, and the dependency dropped.
 *
 * The lock is released in three places only: waiting for a stream that
 * another thread is executing (busy), waiting for a host function, which the
 * driver thread runs without the lock so that it can call back into the fake
 * (and get CUDA_ERROR_NOT_PERMITTED) instead of deadlocking, and running a
 * kernel's host implementation (fake_module.c), which the executing thread
 * runs itself, without the lock and under the same rule. Once a kernel
 * poisoned a context, its copies, memsets, launches and prefetches complete
 * without running (dead_when_poisoned). After any release
 * the runner looks at the queue again (lock_releases tells it one happened).
 * A query in CUS_FAKE_QUERY_STEP mode never waits (tls_nowait), as a real
 * query never blocks: not for another thread's work (it gives up), and not
 * for a host function it hands to the driver thread.
 *
 * A capturing stream queues nothing: fake_stream_enqueue_locked hands what
 * it is given to fake_graph.c, which makes it a graph node (or refuses it),
 * and a graph's replay comes back here as ordinary operations. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "fake_stream.h"

/* --- state ------------------------------------------------------------------------------ */

static struct CUstream_st **streams; /* every stream since install, default ones included */
static size_t stream_count, stream_capacity;
/* The per-thread default streams among them (a thread's, in each context it
 * used one in): found without a scan of every stream since install. */
static struct CUstream_st **per_thread_streams;
static size_t per_thread_count, per_thread_capacity;
static struct CUstream_st *pending_head; /* streams with work left, any order */
static uint64_t next_seq;                /* the last seq handed out */
static uint64_t work_done;
static unsigned long host_functions_run;
static unsigned long teardown_tickets;
static cus_fake_query_mode query_mode;
static bool sync_memsets_deferred; /* cus_fake_set_sync_memsets_deferred */

/* Broadcast whenever a stream stops being busy, a host function completes, or
 * the last thread waiting inside the fake wakes up. */
static pthread_cond_t progress_cv = PTHREAD_COND_INITIALIZER;
static unsigned long waiters;       /* threads inside the fake with the lock released */
static unsigned long lock_releases; /* bumped by each such release */

/* The driver thread, and its FIFO of host-function operations. */
static pthread_cond_t worker_cv = PTHREAD_COND_INITIALIZER;
static pthread_t worker;
static bool worker_started, worker_stop, worker_running;
static fake_op *job_head, *job_tail;
static fake_op *worker_op; /* the job the driver thread runs, for a fork() child to free */

static _Thread_local bool tls_nowait;         /* a STEP query: never wait for others */

/* The streams this thread is running, innermost last: cycle detection. */
#define RUN_DEPTH_MAX 256
static _Thread_local struct CUstream_st *tls_run_stack[RUN_DEPTH_MAX];
static _Thread_local int tls_run_depth;

unsigned long fake_captures_active;
const fake_capture_hooks *fake_capture_ops;

uint64_t fake_work_done_locked(void)
{
    return work_done;
}

/* Releases the lock until something progresses. */
static void wait_progress_locked(void)
{
    waiters++;
    lock_releases++;
    fake_wait_locked(&progress_cv);
    if (--waiters == 0)
        pthread_cond_broadcast(&progress_cv); /* a shutdown may wait for this */
}

/* --- the stream list and the pending list --------------------------------------------------- */

static bool reserve_stream_slot_locked(void)
{
    if (stream_count < stream_capacity)
        return true;
    size_t cap = stream_capacity ? stream_capacity * 2 : 32;
    struct CUstream_st **list = realloc(streams, cap * sizeof *list);
    if (!list)
        return false;
    streams = list;
    stream_capacity = cap;
    return true;
}

/* Keeps s on the pending list exactly while it has work left. */
static void pending_update_locked(struct CUstream_st *s)
{
    bool want = s->executed < s->enqueued;
    if (want == s->pending_listed)
        return;
    if (want) {
        s->pend_prev = NULL;
        s->pend_next = pending_head;
        if (pending_head)
            pending_head->pend_prev = s;
        pending_head = s;
    } else {
        if (s->pend_prev)
            s->pend_prev->pend_next = s->pend_next;
        else
            pending_head = s->pend_next;
        if (s->pend_next)
            s->pend_next->pend_prev = s->pend_prev;
        s->pend_prev = s->pend_next = NULL;
    }
    s->pending_listed = want;
}

/* A WAIT operation for (stream, pos), not yet queued; NULL when out of memory. */
static fake_op *wait_op_new(struct CUstream_st *stream, uint64_t pos)
{
    fake_op *op = calloc(1, sizeof *op + sizeof op->deps[0]);
    if (!op)
        return NULL;
    op->kind = FAKE_OP_WAIT;
    op->call = fake_g.current_call;
    op->deps[0] = (fake_dep){stream, pos};
    op->ndeps = 1;
    return op;
}

/* Queues op on s as it is: no legacy-stream dependencies, no capture. */
static void append_locked(struct CUstream_st *s, fake_op *op)
{
    op->stream = s;
    op->seq = ++next_seq;
    if (s->tail)
        s->tail->next = op;
    else
        s->head = op;
    s->tail = op;
    s->enqueued++;
    pending_update_locked(s);
}

/* A stream made in c after a context-wide wait (fake_context_wait_locked)
 * waits for it too: *gate is the WAIT to queue on it first, or NULL when
 * there is nothing to wait for. Made before the stream, so that an
 * allocation failure leaves nothing behind. */
static CUresult gate_op_locked(struct CUctx_st *c, fake_op **gate)
{
    *gate = NULL;
    struct CUstream_st *g = c->gate_stream;
    if (!g || g->executed >= c->gate_pos)
        return CUDA_SUCCESS;
    *gate = wait_op_new(g, c->gate_pos);
    return *gate ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

struct CUstream_st *fake_default_stream_locked(struct CUctx_st *c)
{
    if (c->default_stream)
        return c->default_stream;
    if (!reserve_stream_slot_locked())
        return NULL;
    fake_op *gate = NULL;
    if (gate_op_locked(c, &gate) != CUDA_SUCCESS)
        return NULL;
    struct CUstream_st *s = calloc(1, sizeof *s);
    if (!s) {
        free(gate);
        return NULL;
    }
    /* Not registered: no handle value names it, and it is never counted. */
    s->h.kind = CUS_FAKE_HANDLE_STREAM;
    s->h.state = FAKE_LIVE;
    s->ctx = c;
    s->is_default = true;
    streams[stream_count++] = s;
    c->default_stream = s;
    if (gate)
        append_locked(s, gate);
    return s;
}

/* Each thread's number, for its per-thread default streams: given on first
 * use under the lock, never reused. */
static _Thread_local unsigned long tls_thread_number;
static unsigned long thread_numbers;

struct CUstream_st *fake_per_thread_stream_locked(struct CUctx_st *c, bool create)
{
    if (!tls_thread_number)
        tls_thread_number = ++thread_numbers;
    for (size_t i = 0; i < per_thread_count; i++)
        if (per_thread_streams[i]->ctx == c && per_thread_streams[i]->owner == tls_thread_number)
            return per_thread_streams[i];
    if (!create || !reserve_stream_slot_locked())
        return NULL;
    if (per_thread_count == per_thread_capacity) {
        size_t cap = per_thread_capacity ? per_thread_capacity * 2 : 8;
        struct CUstream_st **list = realloc(per_thread_streams, cap * sizeof *list);
        if (!list)
            return NULL;
        per_thread_streams = list;
        per_thread_capacity = cap;
    }
    fake_op *gate = NULL;
    if (gate_op_locked(c, &gate) != CUDA_SUCCESS)
        return NULL;
    struct CUstream_st *s = calloc(1, sizeof *s);
    if (!s) {
        free(gate);
        return NULL;
    }
    s->h.kind = CUS_FAKE_HANDLE_STREAM;
    s->h.state = FAKE_LIVE;
    s->ctx = c;
    s->per_thread = true;
    s->owner = tls_thread_number;
    streams[stream_count++] = s;
    per_thread_streams[per_thread_count++] = s;
    if (gate)
        append_locked(s, gate);
    return s;
}

/* Frees an operation and what it owns. */
static void free_op(fake_op *op)
{
    const fake_op_executor *x = fake_op_executor_of(op->kind);
    if (x && x->free_payload)
        x->free_payload(op);
    free(op);
}

static void free_queue(fake_op *op)
{
    while (op) {
        fake_op *next = op->next;
        free_op(op);
        op = next;
    }
}

static void stream_reset_locked(const cus_fake_config *cfg)
{
    (void)cfg;
    for (size_t i = 0; i < stream_count; i++) {
        free_queue(streams[i]->head);
        if (streams[i]->is_default || streams[i]->per_thread || streams[i]->internal)
            free(streams[i]); /* the registry frees the others */
    }
    free(streams);
    streams = NULL;
    stream_count = stream_capacity = 0;
    free(per_thread_streams);
    per_thread_streams = NULL;
    per_thread_count = per_thread_capacity = 0;
    pending_head = NULL;
    free_queue(job_head); /* none: the shutdown before a reset waits for them */
    job_head = job_tail = NULL;
    next_seq = 0;
    work_done = 0;
    host_functions_run = 0;
    teardown_tickets = 0;
    query_mode = CUS_FAKE_QUERY_STEP;
    sync_memsets_deferred = false;
}

/* --- arguments --------------------------------------------------------------------------------- */

static bool is_special_stream(CUstream hs)
{
    return hs == NULL || hs == CU_STREAM_LEGACY || hs == CU_STREAM_PER_THREAD;
}

static CUresult stream_arg_locked(CUstream hs, bool healthy, struct CUstream_st **out)
{
    if (is_special_stream(hs)) {
        struct CUctx_st *c = NULL;
        CUresult r = healthy ? fake_current_context_locked(&c) : fake_current_context_any_locked(&c);
        if (r != CUDA_SUCCESS)
            return r;
        struct CUstream_st *s = hs == CU_STREAM_PER_THREAD ? fake_per_thread_stream_locked(c, true)
                                                           : fake_default_stream_locked(c);
        if (!s)
            return CUDA_ERROR_OUT_OF_MEMORY;
        *out = s;
        return CUDA_SUCCESS;
    }
    fake_handle *h = fake_handle_find_locked((uintptr_t)hs);
    if (!h || h->kind != CUS_FAKE_HANDLE_STREAM) {
        fake_misuse_locked("unknown stream handle 0x%" PRIxPTR, (uintptr_t)hs);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    /* The tombstones tell the two deaths apart. A stream destroyed with its
     * context answers CUDA_ERROR_CONTEXT_IS_DESTROYED, as on the H200; one
     * destroyed by cuStreamDestroy crashes the H200 (a use after free inside
     * the driver): the fake answers CUDA_ERROR_INVALID_HANDLE
     * (deliberate.txt). Both are misuse. */
    struct CUstream_st *s = (struct CUstream_st *)h;
    if (h->state == FAKE_DESTROYED && !s->ctx_destroyed) {
        fake_misuse_locked("stream 0x%" PRIxPTR " used after cuStreamDestroy", (uintptr_t)hs);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    if (h->state == FAKE_DESTROYED || s->ctx->h.state != FAKE_LIVE) { /* or being torn down */
        fake_misuse_locked("stream 0x%" PRIxPTR " used after its context was destroyed",
                           (uintptr_t)hs);
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    }
    if (healthy && s->ctx->sticky != CUDA_SUCCESS)
        return s->ctx->sticky;
    *out = s;
    return CUDA_SUCCESS;
}

CUresult fake_stream_arg_locked(CUstream hs, struct CUstream_st **out)
{
    return stream_arg_locked(hs, true, out);
}

CUresult fake_stream_arg_any_locked(CUstream hs, struct CUstream_st **out)
{
    return stream_arg_locked(hs, false, out);
}

CUresult fake_stream_arg_in_locked(CUstream hs, struct CUctx_st *c, struct CUstream_st **out)
{
    if (!is_special_stream(hs))
        return stream_arg_locked(hs, true, out);
    struct CUstream_st *s = hs == CU_STREAM_PER_THREAD ? fake_per_thread_stream_locked(c, true)
                                                       : fake_default_stream_locked(c);
    if (!s)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *out = s;
    return CUDA_SUCCESS;
}

/* A name for a stream in messages. */
static uintptr_t stream_value(const struct CUstream_st *s)
{
    return s->is_default ? 0 : (uintptr_t)s;
}

/* --- enqueue ----------------------------------------------------------------------------------- */

CUresult fake_stream_enqueue_locked(struct CUstream_st *s, const fake_op *proto,
                                    const fake_dep *extra, size_t nextra)
{
    /* A capturing stream records it instead, and a legacy stream may be
     * blocked by a capture (fake_graph.c). */
    if (fake_captures_active && (s->capture || s->is_default)) {
        bool handled = false;
        CUresult r = fake_capture_ops->enqueue_locked(s, proto, &handled);
        if (handled)
            return r;
    }
    /* The legacy default stream's implicit dependencies: on the default
     * stream, the earlier work of every blocking stream of the context; on a
     * blocking stream, the earlier work of the default stream. Only streams
     * with work left matter, and those are on the pending list. */
    struct CUstream_st *legacy = s->ctx->default_stream;
    bool after_legacy = !s->is_default && !(s->flags & CU_STREAM_NON_BLOCKING) && legacy &&
                        legacy->executed < legacy->enqueued;
    size_t n = nextra + (after_legacy ? 1 : 0);
    if (s->is_default)
        for (struct CUstream_st *t = pending_head; t; t = t->pend_next)
            if (t != s && t->ctx == s->ctx && !(t->flags & CU_STREAM_NON_BLOCKING))
                n++;

    fake_op *op = calloc(1, sizeof *op + n * sizeof op->deps[0]);
    if (!op)
        return CUDA_ERROR_OUT_OF_MEMORY;
    op->kind = proto->kind;
    op->call = proto->call ? proto->call : fake_g.current_call;
    op->result = proto->result;
    op->u = proto->u;
    op->stream = s;
    op->seq = ++next_seq;
    size_t k = 0;
    for (size_t i = 0; i < nextra; i++)
        op->deps[k++] = extra[i];
    if (after_legacy)
        op->deps[k++] = (fake_dep){legacy, legacy->enqueued};
    if (s->is_default)
        for (struct CUstream_st *t = pending_head; t; t = t->pend_next)
            if (t != s && t->ctx == s->ctx && !(t->flags & CU_STREAM_NON_BLOCKING))
                op->deps[k++] = (fake_dep){t, t->enqueued};
    op->ndeps = k;

    if (s->tail)
        s->tail->next = op;
    else
        s->head = op;
    s->tail = op;
    s->enqueued++;
    pending_update_locked(s);
    return CUDA_SUCCESS;
}

/* --- execution ----------------------------------------------------------------------------------- */

/* Ends an operation: the stream moves on and waiters wake up. */
static void complete_locked(struct CUstream_st *s, fake_op *op, CUresult r)
{
    if (op->result)
        *op->result = r;
    s->busy = false;
    s->executed++;
    pending_update_locked(s);
    free_op(op);
    pthread_cond_broadcast(&progress_cv);
}

static void *worker_main(void *arg)
{
    (void)arg;
    fake_tls_driver_thread = true;
    fake_lock();
    for (;;) {
        if (job_head) {
            fake_op *op = job_head;
            job_head = op->next;
            if (!job_head)
                job_tail = NULL;
            worker_running = true;
            worker_op = op;
            CUhostFn fn = op->u.host.fn;
            void *user_data = op->u.host.user_data;
            fake_unlock();
            fn(user_data); /* without the lock: it may call back (and be refused) */
            fake_lock();
            worker_running = false;
            worker_op = NULL;
            host_functions_run++;
            work_done++;
            complete_locked(op->stream, op, CUDA_SUCCESS);
            continue;
        }
        if (worker_stop)
            break;
        fake_wait_locked(&worker_cv);
    }
    fake_unlock();
    return NULL;
}

/* Hands a popped host-function operation to the driver thread, which
 * completes it, and waits for that; except in a query (tls_nowait), which
 * never blocks: there the stream stays busy until the function returns. */
static void run_host_function_locked(struct CUstream_st *s, fake_op *op)
{
    uint64_t seq = op->seq;
    if (!worker_started && pthread_create(&worker, NULL, worker_main, NULL) == 0)
        worker_started = true;
    if (!worker_started) {
        /* No driver thread: run it here, with the same rule and no lock. */
        const char *call = fake_g.current_call;
        fake_g.current_call = NULL;
        waiters++;
        lock_releases++;
        fake_tls_inline_host_fn = true;
        fake_unlock();
        op->u.host.fn(op->u.host.user_data);
        fake_lock();
        fake_tls_inline_host_fn = false;
        fake_g.current_call = call;
        waiters--;
        host_functions_run++;
        work_done++;
        complete_locked(s, op, CUDA_SUCCESS);
        return;
    }
    op->next = NULL;
    if (job_tail)
        job_tail->next = op;
    else
        job_head = op;
    job_tail = op;
    pthread_cond_signal(&worker_cv);
    while (!tls_nowait && s->busy && s->busy_seq == seq)
        wait_progress_locked();
}

void fake_stream_call_unlocked_locked(void (*fn)(void *), void *arg)
{
    /* As a host function run inline: the rule, no lock, and a visible release. */
    const char *call = fake_g.current_call;
    fake_g.current_call = NULL;
    waiters++;
    lock_releases++;
    bool outer = fake_tls_inline_host_fn;
    fake_tls_inline_host_fn = true;
    fake_unlock();
    fn(arg);
    fake_lock();
    fake_tls_inline_host_fn = outer;
    fake_g.current_call = call;
    if (--waiters == 0)
        pthread_cond_broadcast(&progress_cv); /* a shutdown may wait for this */
}

static void execute_locked(struct CUstream_st *s, fake_op *op)
{
    /* Through the executor its area registered for the kind. Once a kernel
     * poisoned the context, the device's work (copies, memsets, kernels,
     * prefetches) completes unrun; host functions, event records and the
     * stream-ordered allocator's bookkeeping queued before go on (the queue
     * drains; the context's destruction then releases what it has). */
    const fake_op_executor *x = fake_op_executor_of(op->kind);
    unsigned int flags = x ? x->flags : 0;
    if (s->ctx->sticky != CUDA_SUCCESS && (flags & FAKE_OP_DEAD_WHEN_POISONED)) {
        complete_locked(s, op, s->ctx->sticky);
        return;
    }
    if (op->kind == FAKE_OP_HOST_FN) {
        run_host_function_locked(s, op); /* completes it */
        return;
    }
    CUresult r = x && x->execute_locked ? x->execute_locked(op) : CUDA_SUCCESS; /* may release the lock */
    if (flags & FAKE_OP_COUNTS_AS_WORK)
        work_done++;
    complete_locked(s, op, r);
}

typedef enum run_result { RUN_DONE, RUN_CYCLE, RUN_GAVE_UP } run_result;

static bool on_run_stack(const struct CUstream_st *s)
{
    for (int i = 0; i < tls_run_depth; i++)
        if (tls_run_stack[i] == s)
            return true;
    return false;
}

static run_result run_to_locked(struct CUstream_st *s, uint64_t target)
{
    if (s->executed >= target)
        return RUN_DONE;
    if (on_run_stack(s)) {
        fake_misuse_locked("cyclic dependency between streams: stream 0x%" PRIxPTR
                           " waits for its own later work; the dependency is dropped",
                           stream_value(s));
        return RUN_CYCLE;
    }
    if (tls_run_depth == RUN_DEPTH_MAX) {
        fake_misuse_locked("stream dependencies nested deeper than %d streams; the dependency "
                           "is dropped",
                           RUN_DEPTH_MAX);
        return RUN_CYCLE;
    }
    tls_run_stack[tls_run_depth++] = s;
    run_result rr = RUN_DONE;
    while (s->executed < target) {
        if (s->busy) { /* another thread is executing its head */
            if (tls_nowait) {
                rr = RUN_GAVE_UP;
                break;
            }
            wait_progress_locked();
            continue;
        }
        fake_op *op = s->head;
        if (!op)
            break; /* cannot happen: executed + queued == enqueued when not busy */
        if (op->deps_done < op->ndeps) {
            fake_dep d = op->deps[op->deps_done];
            if (d.stream->executed < d.pos) {
                unsigned long before = lock_releases;
                run_result dr = run_to_locked(d.stream, d.pos);
                if (dr == RUN_GAVE_UP) {
                    rr = RUN_GAVE_UP;
                    break;
                }
                if (lock_releases != before)
                    continue; /* op may be gone: look at the queue again */
                /* met, or dropped as a cycle */
            }
            op->deps_done++;
            continue;
        }
        s->head = op->next;
        if (!s->head)
            s->tail = NULL;
        s->busy = true;
        s->busy_seq = op->seq;
        execute_locked(s, op);
    }
    tls_run_depth--;
    return rr;
}

void fake_stream_run_to_locked(struct CUstream_st *s, uint64_t pos)
{
    (void)run_to_locked(s, pos);
}

/* Runs, in c's streams (every stream for NULL), each operation queued with a
 * seq at or below limit, including the ones other threads are executing. */
static void run_until_locked(struct CUctx_st *c, uint64_t limit)
{
    for (;;) {
        struct CUstream_st *t = NULL;
        for (struct CUstream_st *p = pending_head; p && !t; p = p->pend_next) {
            if (c && p->ctx != c)
                continue;
            if ((p->busy && p->busy_seq <= limit) || (p->head && p->head->seq <= limit))
                t = p;
        }
        if (!t)
            return;
        if (t->busy)
            wait_progress_locked();
        else
            (void)run_to_locked(t, t->executed + 1);
    }
}

void fake_context_synchronize_locked(struct CUctx_st *c)
{
    run_until_locked(c, next_seq);
}

CUresult fake_stream_submit_sync_locked(struct CUctx_st *c, const fake_op *proto)
{
    struct CUstream_st *s = fake_default_stream_locked(c);
    if (!s)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult result = CUDA_SUCCESS;
    fake_op op = *proto;
    op.result = &result;
    CUresult r = fake_stream_enqueue_locked(s, &op, NULL, 0);
    if (r != CUDA_SUCCESS)
        return r;
    /* From the top level this always gets there (a cycle only drops a
     * dependency), so the operation has written its result before return. */
    (void)run_to_locked(s, s->enqueued);
    return result;
}

/* The query rule (cuStreamQuery, cuEventQuery): SUCCESS if s had reached
 * target on entry; otherwise NOT_READY, after running by the query mode. */
CUresult fake_stream_query_locked(struct CUstream_st *s, uint64_t target)
{
    if (s->executed >= target)
        return CUDA_SUCCESS;
    switch (query_mode) {
    case CUS_FAKE_QUERY_NONE:
        break;
    case CUS_FAKE_QUERY_ALL:
        (void)run_to_locked(s, target);
        return CUDA_SUCCESS;
    case CUS_FAKE_QUERY_STEP:
        tls_nowait = true;
        (void)run_to_locked(s, s->executed + 1);
        tls_nowait = false;
        break;
    }
    return CUDA_ERROR_NOT_READY;
}

/* --- teardown and shutdown ------------------------------------------------------------------------- */

void fake_context_teardown_locked(struct CUctx_st *c)
{
    /* What exists now is doomed; what a reactivated primary context makes
     * while the lock is released below is not. */
    unsigned long ticket = ++teardown_tickets;
    for (size_t i = 0; i < stream_count; i++) {
        struct CUstream_st *s = streams[i];
        if (s->ctx == c && !s->is_default && !s->per_thread && !s->internal && !s->torn_down)
            s->doomed = ticket;
    }
    fake_areas_doom_locked(c, ticket);

    /* The work already queued runs, as the device finishes it. */
    run_until_locked(c, next_seq);

    for (size_t i = 0; i < stream_count; i++) {
        struct CUstream_st *s = streams[i];
        if (s->doomed != ticket)
            continue;
        s->torn_down = true;
        if (s->h.state == FAKE_LIVE) {
            s->ctx_destroyed = true;
            fake_handle_set_state_locked(&s->h, FAKE_DESTROYED);
        }
    }
    /* In teardown order: its captures and graphs, events, modules (their
     * globals), and then the memory. */
    fake_areas_destroy_doomed_locked(c, ticket);
}

static void stream_shutdown(void)
{
    fake_lock();
    /* Jobs are queued only once the driver thread runs; in a fork() child it
     * does not, and its inherited jobs are only freed (by the reset). */
    while (waiters || worker_running || (job_head && worker_started))
        fake_wait_locked(&progress_cv);
    bool started = worker_started;
    pthread_t t = worker;
    if (started) {
        worker_stop = true;
        pthread_cond_signal(&worker_cv);
    }
    fake_unlock();
    if (started)
        pthread_join(t, NULL);
    fake_lock();
    if (started)
        worker_started = worker_stop = false;
    fake_unlock();
}

static void stream_fork_child(void)
{
    pthread_cond_init(&progress_cv, NULL);
    pthread_cond_init(&worker_cv, NULL);
    worker_started = worker_stop = worker_running = false;
    waiters = 0;
    /* The driver thread's queue stays, for the next reset to free (the job
     * it was running too); with no driver thread, fake_stream_shutdown does
     * not wait for it. */
    if (worker_op) {
        worker_op->next = job_head;
        job_head = worker_op;
        if (!job_tail)
            job_tail = worker_op;
        worker_op = NULL;
    }
}

/* --- the area ------------------------------------------------------------------------------------ */

/* The stream engine's own kinds: a wait is nothing but its dependency; a host
 * function is handed to the driver thread (run_host_function_locked). */
static const fake_op_executor stream_executors[] = {
    {.kind = FAKE_OP_WAIT},
    {.kind = FAKE_OP_HOST_FN},
};

static const fake_area stream_area = {
    .name = "stream",
    .reset_order = 10,
    .shutdown = stream_shutdown,
    .reset_locked = stream_reset_locked,
    .fork_child = stream_fork_child,
    .executors = stream_executors,
    .executor_count = sizeof stream_executors / sizeof stream_executors[0],
};
static const fake_context_work_hooks stream_context_work = {
    .synchronize_locked = fake_context_synchronize_locked,
    .teardown_locked = fake_context_teardown_locked,
};

__attribute__((constructor)) static void stream_register(void)
{
    fake_context_work = &stream_context_work;
    fake_area_register(&stream_area);
}

/* --- entry points -------------------------------------------------------------------------------- */

CUresult fake_stream_create_in_locked(struct CUctx_st *c, CUstream *phStream, unsigned int flags,
                                      int priority)
{
    if (!reserve_stream_slot_locked())
        return CUDA_ERROR_OUT_OF_MEMORY;
    fake_op *gate = NULL;
    if (gate_op_locked(c, &gate) != CUDA_SUCCESS)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct CUstream_st *s = fake_handle_new_locked(CUS_FAKE_HANDLE_STREAM, sizeof *s, 0);
    if (!s) {
        free(gate);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    s->ctx = c;
    s->flags = flags;
    /* Clamped to the range cuCtxGetStreamPriorityRange reports, [-5, 0]. */
    s->priority = priority < -5 ? -5 : priority > 0 ? 0 : priority;
    streams[stream_count++] = s;
    if (gate)
        append_locked(s, gate);
    *phStream = s;
    return CUDA_SUCCESS;
}

/* --- context-wide records and waits (green contexts) ------------------------------------------- */

/* One of c's internal streams, made on first use: non-blocking, so that the
 * legacy stream's implicit ordering never involves it. */
static struct CUstream_st *internal_stream_locked(struct CUctx_st *c, struct CUstream_st **slot)
{
    if (*slot)
        return *slot;
    if (!reserve_stream_slot_locked())
        return NULL;
    struct CUstream_st *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->h.kind = CUS_FAKE_HANDLE_STREAM;
    s->h.state = FAKE_LIVE;
    s->ctx = c;
    s->flags = CU_STREAM_NON_BLOCKING;
    s->internal = true;
    streams[stream_count++] = s;
    *slot = s;
    return s;
}

/* The streams of c that work can still be queued on. */
static bool usable_in(const struct CUstream_st *s, const struct CUctx_st *c)
{
    return s->ctx == c && !s->torn_down && s->h.state == FAKE_LIVE;
}

CUresult fake_context_capture_check_locked(struct CUctx_st *c)
{
    CUresult r = CUDA_SUCCESS;
    for (size_t i = 0; i < stream_count; i++)
        if (usable_in(streams[i], c) && streams[i]->capture &&
            fake_capture_ops->sync_check_locked(streams[i]) != CUDA_SUCCESS)
            r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; /* each one invalidated */
    return r;
}

CUresult fake_context_record_locked(struct CUctx_st *c, struct CUstream_st **stream,
                                    fake_dep **deps, size_t *n)
{
    struct CUstream_st *rs = internal_stream_locked(c, &c->record_stream);
    if (!rs)
        return CUDA_ERROR_OUT_OF_MEMORY;
    size_t count = 0;
    for (size_t i = 0; i < stream_count; i++)
        if (streams[i] != rs && usable_in(streams[i], c) &&
            streams[i]->executed < streams[i]->enqueued)
            count++;
    fake_dep *d = calloc(count ? count : 1, sizeof *d);
    if (!d)
        return CUDA_ERROR_OUT_OF_MEMORY;
    size_t k = 0;
    for (size_t i = 0; i < stream_count; i++)
        if (streams[i] != rs && usable_in(streams[i], c) &&
            streams[i]->executed < streams[i]->enqueued)
            d[k++] = (fake_dep){streams[i], streams[i]->enqueued};
    *stream = rs;
    *deps = d;
    *n = k;
    return CUDA_SUCCESS;
}

CUresult fake_context_wait_locked(struct CUctx_st *c, fake_dep d)
{
    struct CUstream_st *g = internal_stream_locked(c, &c->gate_stream);
    if (!g)
        return CUDA_ERROR_OUT_OF_MEMORY;
    /* Every operation first: nothing is queued unless all can be. */
    size_t count = 1;
    for (size_t i = 0; i < stream_count; i++)
        if (streams[i] != g && usable_in(streams[i], c))
            count++;
    fake_op **ops = calloc(count, sizeof *ops);
    if (!ops)
        return CUDA_ERROR_OUT_OF_MEMORY;
    uint64_t pos = g->enqueued + 1;
    ops[0] = wait_op_new(d.stream, d.pos);
    for (size_t i = 0, k = 1; i < stream_count; i++)
        if (streams[i] != g && usable_in(streams[i], c))
            ops[k++] = wait_op_new(g, pos);
    bool ok = true;
    for (size_t k = 0; k < count; k++)
        ok = ok && ops[k];
    if (!ok) {
        for (size_t k = 0; k < count; k++)
            free(ops[k]);
        free(ops);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    append_locked(g, ops[0]);
    c->gate_pos = pos;
    for (size_t i = 0, k = 1; i < stream_count; i++)
        if (streams[i] != g && usable_in(streams[i], c))
            append_locked(streams[i], ops[k++]);
    free(ops);
    return CUDA_SUCCESS;
}

static CUresult create_locked(CUstream *phStream, unsigned int flags, int priority)
{
    if (!phStream || (flags & ~(unsigned int)CU_STREAM_NON_BLOCKING))
        return CUDA_ERROR_INVALID_VALUE;
    struct CUctx_st *c = NULL;
    CUresult r = fake_current_context_locked(&c);
    if (r != CUDA_SUCCESS)
        return r;
    return fake_stream_create_in_locked(c, phStream, flags, priority);
}

CUresult CUDAAPI fake_cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
    FAKE_ENTER(cuStreamCreate);
    return fake_leave(create_locked(phStream, Flags, 0));
}

CUresult CUDAAPI fake_cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags,
                                                 int priority)
{
    FAKE_ENTER(cuStreamCreateWithPriority);
    return fake_leave(create_locked(phStream, flags, priority));
}

CUresult CUDAAPI fake_cuStreamDestroy(CUstream hStream)
{
    FAKE_ENTER(cuStreamDestroy);
    if (is_special_stream(hStream)) {
        fake_misuse_locked("cuStreamDestroy of the default stream 0x%" PRIxPTR,
                           (uintptr_t)hStream);
        return fake_leave(CUDA_ERROR_INVALID_HANDLE);
    }
    fake_handle *h = fake_handle_find_locked((uintptr_t)hStream);
    if (h && h->kind == CUS_FAKE_HANDLE_STREAM && h->state == FAKE_DESTROYED &&
        !((struct CUstream_st *)h)->ctx_destroyed) {
        fake_misuse_locked("double destroy of stream 0x%" PRIxPTR, (uintptr_t)hStream);
        return fake_leave(CUDA_ERROR_INVALID_HANDLE);
    }
    /* A stream of a poisoned context answers its sticky error, as on the
     * H200: it goes with its context. */
    struct CUstream_st *s = NULL;
    CUresult r = fake_stream_arg_locked(hStream, &s);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    /* A capture it takes part in loses it (fake_graph.c). */
    if (fake_capture_ops)
        fake_capture_ops->stream_destroyed_locked(s);
    /* Its queued work still runs (whoever synchronizes the context, or an
     * event recorded in it), as the driver releases a stream only once the
     * device is done with it. */
    fake_handle_set_state_locked(&s->h, FAKE_DESTROYED);
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuStreamSynchronize(CUstream hStream)
{
    FAKE_ENTER(cuStreamSynchronize);
    /* Poisoned or not: it runs the queue, and reports a kernel's fault (from
     * before, or from the work it ran) after. */
    struct CUstream_st *s = NULL;
    CUresult r = fake_stream_arg_any_locked(hStream, &s);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    /* A capturing stream cannot be waited for (and the capture breaks). */
    if (fake_captures_active && (r = fake_capture_ops->sync_check_locked(s)) != CUDA_SUCCESS)
        return fake_leave(r);
    (void)run_to_locked(s, s->enqueued);
    return fake_leave(s->ctx->sticky);
}

CUresult CUDAAPI fake_cuStreamQuery(CUstream hStream)
{
    FAKE_ENTER(cuStreamQuery);
    struct CUstream_st *s = NULL;
    CUresult r = fake_stream_arg_locked(hStream, &s);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (fake_captures_active && (r = fake_capture_ops->sync_check_locked(s)) != CUDA_SUCCESS)
        return fake_leave(r);
    r = fake_stream_query_locked(s, s->enqueued);
    /* A kernel the query ran may have poisoned the context. */
    return fake_leave(s->ctx->sticky != CUDA_SUCCESS ? s->ctx->sticky : r);
}

CUresult CUDAAPI fake_cuStreamGetPriority(CUstream hStream, int *priority)
{
    FAKE_ENTER(cuStreamGetPriority);
    if (!priority)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    struct CUstream_st *s = NULL;
    CUresult r = fake_stream_arg_locked(hStream, &s);
    if (r == CUDA_SUCCESS)
        *priority = s->priority;
    return fake_leave(r);
}

CUresult CUDAAPI fake_cuStreamGetFlags(CUstream hStream, unsigned int *flags)
{
    FAKE_ENTER(cuStreamGetFlags);
    if (!flags)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    struct CUstream_st *s = NULL;
    CUresult r = fake_stream_arg_locked(hStream, &s);
    if (r == CUDA_SUCCESS)
        *flags = s->flags;
    return fake_leave(r);
}

CUresult CUDAAPI fake_cuStreamGetCtx(CUstream hStream, CUcontext *pctx)
{
    FAKE_ENTER(cuStreamGetCtx);
    if (!pctx)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    struct CUstream_st *s = NULL;
    CUresult r = fake_stream_arg_locked(hStream, &s);
    if (r == CUDA_SUCCESS)
        *pctx = s->ctx;
    return fake_leave(r);
}

#ifdef FAKE_HAVE_12050_ENTRIES
CUresult CUDAAPI fake_cuStreamGetCtx_v2(CUstream hStream, CUcontext *pCtx, CUgreenCtx *pGreenCtx)
{
    FAKE_ENTER(cuStreamGetCtx_v2);
    if (!pCtx)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    struct CUstream_st *s = NULL;
    CUresult r = fake_stream_arg_locked(hStream, &s);
    if (r == CUDA_SUCCESS) {
        *pCtx = s->ctx;
        if (pGreenCtx)
            *pGreenCtx = s->ctx->green; /* NULL but for a green context's stream */
    }
    return fake_leave(r);
}
#endif

CUresult CUDAAPI fake_cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData)
{
    FAKE_ENTER(cuLaunchHostFunc);
    if (!fn)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    struct CUstream_st *s = NULL;
    CUresult r = fake_stream_arg_locked(hStream, &s);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    fake_op op = {.kind = FAKE_OP_HOST_FN, .u.host = {fn, userData}};
    return fake_leave(fake_stream_enqueue_locked(s, &op, NULL, 0));
}

/* --- control and queries ------------------------------------------------------------------------- */

CUS_API void cus_fake_set_query_mode(cus_fake_query_mode mode)
{
    fake_lock();
    fake_ensure_configured_locked();
    if (mode == CUS_FAKE_QUERY_STEP || mode == CUS_FAKE_QUERY_NONE || mode == CUS_FAKE_QUERY_ALL)
        query_mode = mode;
    fake_unlock();
}

CUS_API void cus_fake_set_sync_memsets_deferred(bool deferred)
{
    fake_lock();
    fake_ensure_configured_locked();
    sync_memsets_deferred = deferred;
    fake_unlock();
}

bool fake_stream_sync_memsets_deferred_locked(void)
{
    return sync_memsets_deferred;
}

CUS_API size_t cus_fake_stream_pending(CUstream stream)
{
    size_t n = 0;
    fake_lock();
    fake_ensure_configured_locked();
    const struct CUstream_st *s = NULL;
    if (is_special_stream(stream)) {
        struct CUctx_st *c = NULL;
        if (fake_current_context_any_locked(&c) == CUDA_SUCCESS)
            s = stream == CU_STREAM_PER_THREAD ? fake_per_thread_stream_locked(c, false)
                                               : c->default_stream;
    } else {
        fake_handle *h = fake_handle_find_locked((uintptr_t)stream);
        if (h && h->kind == CUS_FAKE_HANDLE_STREAM)
            s = (const struct CUstream_st *)h;
    }
    if (s)
        n = (size_t)(s->enqueued - s->executed);
    fake_unlock();
    return n;
}

CUS_API void cus_fake_run_streams(void)
{
    fake_lock();
    fake_ensure_configured_locked();
    if (fake_in_host_function())
        fake_misuse_locked("cus_fake_run_streams called inside a host function");
    else
        run_until_locked(NULL, UINT64_MAX);
    fake_unlock();
}

CUS_API unsigned long cus_fake_host_functions_run(void)
{
    fake_lock();
    unsigned long n = host_functions_run;
    fake_unlock();
    return n;
}
