/* Stream capture: the captures cuscope began (capture records, in a
 * registry sharded by the driver's capture id), what each keeps alive for the
 * graph it will make (keep lists with a hash set beside them, filled by the
 * keep and adopt functions that the object files call before they queue work
 * on a stream), the stream-ordered frees each runs after its end, and the
 * capture guard's begin, end and abandon. The end hands its keep list to the
 * graph it makes (graph.c). */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void cus_keep_list_release_(keep_list *k)
{
    for (size_t i = 0; i < k->count; i++)
        k->items[i].release(k->items[i].obj);
    free(k->items);
    k->items = NULL;
    k->count = k->capacity = 0;
}

/* --- the captures cuscope began ------------------------------------------- */

typedef struct capture_record {
    struct capture_record *next; /* in its shard */
    cuuint64_t id;
    cus_stream *stream; /* the stream it began on */
    keep_list keep;     /* what the graph will hold, in the order kept */
    /* Which objects `keep` holds is told, for most of them, by the object
     * itself: its kept_by names this capture (a load, and no cache miss: the
     * launch reads the object's line anyway). An object that another open
     * capture holds already keeps that one's id; this capture then notes it
     * in `set`, an open-addressing set (linear probing, a power of two, at
     * most half full), so that it is kept once here too. Either way a graph
     * replaying one buffer a thousand times holds it once, and a capture of
     * N distinct buffers costs O(N), without probing a table of N entries
     * (which missed the cache on every launch at N = 10^5). */
    const void **set;
    size_t set_count, set_capacity;
    bool tabled; /* in open_ids (else counted in untabled) */
    /* Destructions that wait for the end: stream-ordered frees queued on a
     * stream of this capture (cus_refcount's deferred link). */
    cus_refcount *after_end;
    bool out_of_memory; /* a keep failed: the end reports it */
    /* A capture into a graph that exists (cus_capture_begin_to_graph): its
     * end cannot discard the graph, so a keep that fails for want of memory
     * fails the call that would have queued the work instead. */
    bool to_graph;
} capture_record;

/* The registry: records by id, in shards with a lock each, so that captures
 * on different threads take different locks (the driver numbers captures
 * in sequence, so consecutive ones fall in different shards). A shard's lock
 * also guards its records' keep lists, sets and after_end lists: a captured
 * launch takes one lock, once, for all it keeps. */
#define SHARDS 64
typedef struct shard {
    _Alignas(CUS_CACHE_LINE_) atomic_bool lock; /* a spin lock: see shard_lock */
    capture_record *head;
} shard;
static shard shards[SHARDS];

/* A shard's lock is held for a few dozen instructions (a keep, a record's
 * lookup, link or unlink; a list's growth at most) and is almost never
 * contended (one capture per shard, most often used from one thread): one
 * exchange to take and a store to give back, where a mutex took two locked
 * instructions and two calls on every captured launch that kept something
 * new. A waiter spins a little, then yields. */
static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static inline void shard_lock(shard *sh)
{
    unsigned int spins = 0;
    while (atomic_exchange_explicit(&sh->lock, true, memory_order_acquire))
        while (atomic_load_explicit(&sh->lock, memory_order_relaxed)) {
            if (++spins < 64)
                cpu_relax();
            else
                sched_yield();
        }
}

static inline void shard_unlock(shard *sh)
{
    atomic_store_explicit(&sh->lock, false, memory_order_release);
}

static inline shard *shard_of(cuuint64_t id)
{
    return &shards[id % SHARDS];
}

/* Which captures are open, without a lock: the id of each in open_ids[id %
 * OPEN_IDS], from before its id can be in any object's kept_by until after
 * its record has left the registry. One that finds its slot taken is counted
 * in `untabled` instead; while any is, a kept_by this table does not know is
 * taken to be open (that only costs its captures the set). */
#define OPEN_IDS 256
static _Atomic(cuuint64_t) open_ids[OPEN_IDS];
static atomic_uint untabled;

static void open_ids_add(capture_record *rec)
{
    cuuint64_t none = 0;
    rec->tabled = atomic_compare_exchange_strong_explicit(
        &open_ids[rec->id % OPEN_IDS], &none, rec->id, memory_order_seq_cst,
        memory_order_relaxed);
    if (!rec->tabled)
        atomic_fetch_add_explicit(&untabled, 1, memory_order_seq_cst);
}

static void open_ids_remove(capture_record *rec)
{
    if (rec->tabled)
        atomic_store_explicit(&open_ids[rec->id % OPEN_IDS], 0, memory_order_release);
    else
        atomic_fetch_sub_explicit(&untabled, 1, memory_order_release);
}

/* Whether the capture `id` may still be open: false only when it surely is
 * not (ended, or never a cuscope capture). */
static bool may_be_open(cuuint64_t id)
{
    return atomic_load_explicit(&open_ids[id % OPEN_IDS], memory_order_acquire) == id ||
           atomic_load_explicit(&untabled, memory_order_acquire) != 0;
}

static capture_record *find_locked(shard *sh, cuuint64_t id)
{
    for (capture_record *r = sh->head; r; r = r->next)
        if (r->id == id)
            return r;
    return NULL;
}

static void unlink_locked(shard *sh, capture_record *rec)
{
    for (capture_record **p = &sh->head; *p; p = &(*p)->next)
        if (*p == rec) {
            *p = rec->next;
            return;
        }
}


/* Where obj is in the set, or the empty slot where it would go. */
static const void **set_slot(const void **set, size_t capacity, const void *obj)
{
    size_t mask = capacity - 1;
    for (size_t i = cus_pointer_hash_(obj) & mask;; i = (i + 1) & mask)
        if (!set[i] || set[i] == obj)
            return &set[i];
}

static bool set_has(const capture_record *r, const void *obj)
{
    return r->set_count && *set_slot(r->set, r->set_capacity, obj);
}

/* Adds obj (not in it) to r's set; false when out of memory. */
static bool set_add(capture_record *r, const void *obj)
{
    if ((r->set_count + 1) * 2 > r->set_capacity) {
        size_t want = r->set_capacity ? r->set_capacity * 2 : 32;
        const void **set = cus_calloc_(want, sizeof *set);
        if (!set)
            return false;
        for (size_t i = 0; i < r->set_capacity; i++)
            if (r->set[i])
                *set_slot(set, want, r->set[i]) = r->set[i];
        free(r->set);
        r->set = set;
        r->set_capacity = want;
    }
    *set_slot(r->set, r->set_capacity, obj) = obj;
    r->set_count++;
    return true;
}

/* Room for one more entry in r's keep list. */
static bool reserve_one(capture_record *r)
{
    keep_list *k = &r->keep;
    if (k->count < k->capacity)
        return true;
    size_t want = k->capacity ? k->capacity * 2 : 16;
    keep_entry *grown = cus_realloc_(k->items, want * sizeof *grown);
    if (!grown)
        return false;
    k->items = grown;
    k->capacity = want;
    return true;
}

static void append(capture_record *r, const cus_keep_item_ *item)
{
    r->keep.items[r->keep.count++] = (keep_entry){item->ref(item->obj), item->release};
}

/* Keeps one item with r (its shard locked); false when out of memory (the
 * capture's end then fails). An object whose kept_by names no open capture
 * is claimed for r (a compare-and-swap: another capture may claim it at the
 * same time); one that another open capture holds goes into r's set. */
static bool keep_locked(capture_record *r, const cus_keep_item_ *item)
{
    if (!reserve_one(r))
        goto out_of_memory;
    if (!item->refs) { /* handed over whole: new, never kept before */
        append(r, item);
        return true;
    }
    cuuint64_t k = atomic_load_explicit(&item->refs->kept_by, memory_order_acquire);
    for (;;) {
        if (k == r->id)
            return true;
        if (k && may_be_open(k))
            break;
        /* Claimed by none: r may still hold it from a time another capture
         * did (then it is in r's set). */
        if (set_has(r, item->obj))
            return true;
        if (atomic_compare_exchange_weak_explicit(&item->refs->kept_by, &k, r->id,
                                                  memory_order_acq_rel, memory_order_acquire)) {
            append(r, item);
            return true;
        }
    }
    if (set_has(r, item->obj))
        return true;
    if (!set_add(r, item->obj))
        goto out_of_memory;
    append(r, item);
    return true;
out_of_memory:
    r->out_of_memory = true;
    return false;
}

/* The objects this thread kept lately for a capture that another open one
 * already held them for (their kept_by names that one): a hit needs no lock
 * (cus_capture_kept_, internal.h). An id is never reused, so an entry stays
 * true until its capture ends, and no later capture has its id. */
_Thread_local cus_capture_memo_entry_ cus_capture_memo_[CUS_CAPTURE_MEMO_]
    __attribute__((tls_model("initial-exec")));

static inline bool kept_already(cuuint64_t id, const cus_keep_item_ *item)
{
    return item->refs && cus_capture_kept_(id, item->refs, item->obj);
}

/* The id of the cuscope-visible capture that stream is in (0: none):
 * the capture begun on it, without asking the driver, or, for a stream that
 * may have joined one, the driver's answer with the stream's context
 * current. The legacy default stream cannot capture, nor join a capture. */
static cus_status capture_id_of(cus_stream *stream, cuuint64_t *id, const char *function)
{
    *id = 0;
    if (!stream || stream->kind == CUS_STREAM_LEGACY_DEFAULT)
        return CUS_SUCCESS;
    *id = atomic_load_explicit(&stream->capture_id, memory_order_acquire);
    if (*id)
        return CUS_SUCCESS;
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    cuuint64_t asked = 0;
    CUS_IN_CONTEXT_AS(function, stream->ctx, "cuStreamGetCaptureInfo",
                      cus_drv_.cuStreamGetCaptureInfo_(stream->handle, &status, &asked));
    if (status == CU_STREAM_CAPTURE_STATUS_ACTIVE)
        *id = asked;
    return CUS_SUCCESS;
}

static cus_status keep(cus_stream *stream, const cus_keep_item_ *items, unsigned int n,
                       const char *function)
{
    cuuint64_t id;
    CUS_TRY(capture_id_of(stream, &id, function));
    if (!id)
        return CUS_SUCCESS;
    unsigned int missed = 0;
    for (unsigned int i = 0; i < n; i++)
        missed += !kept_already(id, &items[i]);
    if (!missed)
        return CUS_SUCCESS;
    shard *sh = shard_of(id);
    shard_lock(sh);
    capture_record *r = find_locked(sh, id);
    bool refused = false;
    for (unsigned int i = 0; r && i < n; i++) {
        if (kept_already(id, &items[i]))
            continue;
        if (!keep_locked(r, &items[i])) {
            if (r->to_graph) { /* reported to the caller: the end has nothing to report */
                r->out_of_memory = false;
                refused = true;
                break;
            }
            continue;
        }
        if (items[i].refs &&
            atomic_load_explicit(&items[i].refs->kept_by, memory_order_relaxed) != id) {
            cus_capture_memo_entry_ *m = cus_capture_memo_of_(items[i].obj);
            m->id = id;
            m->obj = items[i].obj;
        }
    }
    shard_unlock(sh);
    if (refused)
        return cus_fail_(CUS_ERROR_OUT_OF_HOST_MEMORY, function, NULL,
                         "keeping what the work uses alive with the graph captured into: "
                         "nothing was queued");
    return CUS_SUCCESS; /* not a cuscope capture (r NULL): nothing to keep for */
}

static cus_status refuse_on(cus_stream *stream, const char *function, const char *what)
{
    bool capturing = atomic_load_explicit(&stream->capture_id, memory_order_acquire) != 0;
    if (!capturing && stream->kind != CUS_STREAM_LEGACY_DEFAULT) {
        CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
        cuuint64_t id;
        CUS_IN_CONTEXT_AS(function, stream->ctx, "cuStreamGetCaptureInfo",
                          cus_drv_.cuStreamGetCaptureInfo_(stream->handle, &status, &id));
        capturing = status != CU_STREAM_CAPTURE_STATUS_NONE;
    }
    if (capturing)
        return cus_fail_(CUS_ERROR_NOT_SUPPORTED, function, NULL,
                         "%s on a stream being captured: cuscope does not make graph "
                         "allocations (allocate before the capture)", what);
    return CUS_SUCCESS;
}

static void *ref_identity(void *p) { return p; }

static cus_status adopt_memory(cus_stream *stream, void *mem, bool *adopted,
                               const char *function)
{
    *adopted = false;
    cuuint64_t id;
    CUS_TRY(capture_id_of(stream, &id, function));
    if (!id)
        return CUS_SUCCESS;
    shard *sh = shard_of(id);
    shard_lock(sh);
    capture_record *r = find_locked(sh, id);
    if (r) {
        cus_keep_item_ item = {mem, NULL, ref_identity, free};
        *adopted = keep_locked(r, &item);
        if (!*adopted && r->to_graph)
            r->out_of_memory = false; /* the call fails: nothing for the end to report */
    }
    shard_unlock(sh);
    if (r && !*adopted)
        return cus_fail_(CUS_ERROR_OUT_OF_HOST_MEMORY, function, NULL,
                         "keeping a record alive with the graph being captured (the capture's "
                         "end will fail)");
    return CUS_SUCCESS;
}

/* A release in a destruction: nothing is recorded (cus_run_destroy_), and a
 * failed query (the context dead, most likely) lets the caller go on and
 * free now. */
static bool defer_to_end(cus_stream *stream, cus_refcount *ref, void *obj,
                         cus_destroy_fn_ destroy)
{
    cuuint64_t id;
    if (capture_id_of(stream, &id, "cus_buffer_unref") || !id)
        return false;
    shard *sh = shard_of(id);
    shard_lock(sh);
    capture_record *r = find_locked(sh, id);
    if (r) {
        ref->deferred_obj = obj;
        ref->deferred_destroy = destroy;
        ref->deferred_next = r->after_end;
        r->after_end = ref;
    }
    shard_unlock(sh);
    return r != NULL;
}

/* Runs what waited for a capture's end, on the thread that ended it. */
static void run_after_end(capture_record *rec)
{
    cus_refcount *list = rec->after_end;
    rec->after_end = NULL;
    while (list) {
        cus_refcount *next = list->deferred_next;
        list->deferred_next = NULL;
        /* As cus_release_deferred: a reference taken meanwhile parked the
         * count (reported then), and the object is kept. */
        if (CUS_LIKELY(atomic_load_explicit(&list->count, memory_order_relaxed) == 0))
            cus_run_destroy_(list->deferred_obj, list->deferred_destroy);
        list = next;
    }
}

static void record_free(capture_record *rec)
{
    cus_keep_list_release_(&rec->keep);
    free(rec->set);
    run_after_end(rec);
    free(rec);
}

__attribute__((constructor)) static void register_capture_ops(void)
{
    cus_capture_ops = (cus_capture_ops_){keep, refuse_on, adopt_memory, defer_to_end};
}

/* Ends a capture that cus_capture_begin could not track; what cannot be
 * undone goes to the destroy handler. */
static void drop_begun_capture(cus_stream *stream, bool own_graph, const char *function)
{
    CUgraph dropped = NULL;
    CUresult r = cus_drv_.cuStreamEndCapture_(stream->handle, &dropped);
    if (r && r != CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)
        cus_destroy_error_((cus_status)r, function, "cuStreamEndCapture",
                           "ending a capture it could not track");
    /* A graph captured into is the caller's (and holds nothing yet). */
    if (own_graph && dropped && (r = cus_drv_.cuGraphDestroy_(dropped)))
        cus_destroy_error_((cus_status)r, function, "cuGraphDestroy",
                           "discarding a capture it could not track");
}

/* What a begin captures into: nothing (the driver makes a graph), or graph
 * after the n driver nodes deps. */
typedef struct begin_target {
    cus_graph *graph;
    const CUgraphNode *deps;
    size_t ndeps;
} begin_target;

static CUresult begin_driver(cus_stream *stream, const begin_target *t, CUstreamCaptureMode mode)
{
    if (!t->graph)
        return cus_drv_.cuStreamBeginCapture_(stream->handle, mode);
    return cus_drv_.cuStreamBeginCaptureToGraph_(stream->handle, t->graph->handle, t->deps, NULL,
                                                 t->ndeps, mode);
}

static void unlock_graph(cus_graph **root)
{
    if (*root)
        pthread_mutex_unlock(&(*root)->lock);
}

/* The begin of both guards, errors recorded naming function. */
static cus_capture_guard begin_capture(cus_stream *stream, const begin_target *t,
                                       CUstreamCaptureMode mode, const char *function)
{
    cus_capture_guard g = {NULL, CUS_SUCCESS, false, NULL};
    cus_context *ctx = stream->ctx;
    if (atomic_load_explicit(&ctx->poison, memory_order_relaxed)) {
        g.status = cus_context_poisoned_fail_(ctx, function);
        return g;
    }
    cus_release_deferred_if_any_();
    capture_record *rec = cus_calloc_(1, sizeof *rec);
    if (!rec) {
        g.status = cus_fail_(CUS_ERROR_OUT_OF_HOST_MEMORY, function, NULL, "allocating a capture");
        return g;
    }
    /* Counted before the driver begins: work queued on any thread once the
     * capture is open sees the count, and keeps what it uses; and a release
     * that saw no capture open and waits for its context finishes first (its
     * cuCtxSynchronize would invalidate this capture: internal.h,
     * cus_context_wait_hold_). */
    atomic_fetch_add_explicit(&cus_captures_active_, 1, memory_order_seq_cst);
    cus_capture_begin_wait_();
    /* A graph captured into: its root's lock around the driver's begin (which
     * writes the graph), and its count of captures, which refuses cuscope's
     * calls on it until the end. */
    __attribute__((cleanup(unlock_graph))) cus_graph *root =
        t->graph ? cus_graph_root_(t->graph) : NULL;
    if (root) {
        pthread_mutex_lock(&root->lock);
        if (root->captures_into)
            g.status = cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL,
                                 "the graph is being captured into already");
    }
    if (!g.status) {
        CUS_SWITCH_AS(sw, ctx, function);
        g.status = sw_status;
        if (!g.status)
            g.status = cus_switch_check_(&sw, begin_driver(stream, t, mode),
                                         t->graph ? "cuStreamBeginCaptureToGraph"
                                                  : "cuStreamBeginCapture");
        if (!g.status) {
            CUstreamCaptureStatus status;
            g.status = cus_switch_check_(
                &sw, cus_drv_.cuStreamGetCaptureInfo_(stream->handle, &status, &rec->id),
                "cuStreamGetCaptureInfo");
            if (g.status) /* cannot track it: do not leave it open */
                drop_begun_capture(stream, !t->graph, function);
        }
    }
    if (g.status) {
        atomic_fetch_sub_explicit(&cus_captures_active_, 1, memory_order_relaxed);
        free(rec);
        return g;
    }
    if (root)
        root->captures_into++;
    rec->stream = stream;
    rec->to_graph = t->graph != NULL;
    open_ids_add(rec);
    shard *sh = shard_of(rec->id);
    shard_lock(sh);
    rec->next = sh->head;
    sh->head = rec;
    shard_unlock(sh);
    atomic_store_explicit(&stream->capture_id, rec->id, memory_order_release);
    g.stream = cus_stream_ref(stream);
    g.graph = cus_graph_ref(t->graph);
    g.open = true;
    return g;
}

/* The checks both begins make first; CUS_SUCCESS when the stream may capture. */
static cus_status begin_check(cus_stream *stream, const char *function)
{
    if (CUS_UNLIKELY(cus_is_forked_()))
        return cus_refuse_call_(function);
    if (CUS_UNLIKELY(cus_in_host_fn_))
        return cus_fail_(CUS_ERROR_IN_HOST_FUNCTION, function, NULL,
                         "capture inside a host function");
    if (!stream || stream->kind == CUS_STREAM_LEGACY_DEFAULT)
        return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL, "%s",
                         stream ? "the legacy default stream cannot be captured" : "no stream");
    return CUS_SUCCESS;
}

CUS_API cus_capture_guard cus_capture_begin(cus_stream *stream, CUstreamCaptureMode mode)
{
    cus_capture_guard g = {NULL, CUS_SUCCESS, false, NULL};
    g.status = begin_check(stream, __func__);
    if (g.status)
        return g;
    begin_target t = {NULL, NULL, 0};
    return begin_capture(stream, &t, mode, __func__);
}

CUS_API cus_capture_guard cus_capture_begin_to_graph(cus_stream *stream, cus_graph *graph,
                                                     const cus_graph_node *deps, size_t ndeps,
                                                     CUstreamCaptureMode mode)
{
    const char *function = __func__;
    cus_capture_guard g = {NULL, CUS_SUCCESS, false, NULL};
    g.status = begin_check(stream, function);
    if (!g.status && (!graph || (ndeps && !deps)))
        g.status = cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL, "invalid argument: %s",
                             graph ? "dependencies missing" : "graph");
    if (!g.status && !cus_drv_.cuStreamBeginCaptureToGraph_)
        g.status = cus_fail_(CUS_ERROR_NOT_SUPPORTED, function, NULL,
                             "driver API %d.%d does not provide cuStreamBeginCaptureToGraph: "
                             "capture into a graph needs driver 12.3 or later",
                             cus_driver_version_ / 1000, cus_driver_version_ % 1000 / 10);
    if (!g.status && graph->ctx->handle != stream->ctx->handle)
        g.status = cus_fail_(CUS_ERROR_CONTEXT_MISMATCH, function, NULL,
                             "the stream belongs to context %p, the graph to %p",
                             (void *)stream->ctx->handle, (void *)graph->ctx->handle);
    if (g.status)
        return g;
    CUgraphNode inline_deps[CUS_GRAPH_INLINE_NODES_], *h, *heap;
    g.status = cus_graph_node_handles_(graph, deps, ndeps, "dependency", inline_deps, &h, &heap,
                                       function);
    if (g.status)
        return g;
    __attribute__((unused)) cus_autofree CUgraphNode *owned = heap;
    begin_target t = {graph, h, ndeps};
    return begin_capture(stream, &t, mode, function);
}

/* Takes the record of the capture begun on stream out of the registry. */
static capture_record *record_take(cus_stream *stream)
{
    cuuint64_t id = atomic_exchange_explicit(&stream->capture_id, 0, memory_order_acq_rel);
    if (!id)
        return NULL;
    shard *sh = shard_of(id);
    shard_lock(sh);
    capture_record *rec = find_locked(sh, id);
    if (rec)
        unlink_locked(sh, rec);
    shard_unlock(sh);
    if (rec)
        open_ids_remove(rec);
    return rec;
}

/* Ends the driver's capture; *graph may be NULL. *over says whether the
 * capture is over: ended, invalidated (which ends it), or no longer there.
 * Making the context current failing, a capture ended from the wrong thread,
 * or an end that failed with the stream still capturing leave it open. The
 * record is taken out when the capture is over, or with `always`. */
static CUresult end_capture(cus_capture_guard *g, CUgraph *graph, capture_record **rec,
                            const char **call, bool always, bool *over, const char *function)
{
    cus_context *ctx = g->stream->ctx;
    *over = false;
    *rec = NULL;
    CUresult r;
    {
        /* No poison check: a capture must be able to end on a dead context,
         * or it would count as open for ever. */
        CUS_SWITCH_HANDLE_AS(sw, ctx->handle, function);
        *call = "cuCtxPushCurrent";
        r = (CUresult)sw_status;
        if (!r) {
            *call = "cuStreamEndCapture";
            r = cus_drv_.cuStreamEndCapture_(g->stream->handle, graph);
            if (!r || r == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) {
                *over = true;
            } else if (r != CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD) {
                CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
                *over = cus_drv_.cuStreamIsCapturing_(g->stream->handle, &status) ==
                            CUDA_SUCCESS &&
                        status == CU_STREAM_CAPTURE_STATUS_NONE;
            }
        }
    }
    if (*over || always) {
        *rec = record_take(g->stream);
        if (*rec)
            atomic_fetch_sub_explicit(&cus_captures_active_, 1, memory_order_relaxed);
    }
    return r;
}

static void guard_close(cus_capture_guard *g)
{
    g->open = false;
    g->stream = cus_stream_unref(g->stream);
    g->graph = cus_graph_unref(g->graph);
}

/* The end of a capture into a graph: the driver's end, with the graph's
 * root locked (the driver writes the graph), and, once the capture is over
 * (or given up, `always`), what it kept handed to the graph, whatever the
 * outcome: the driver may leave the nodes of a failed capture in the graph.
 * A graph that cannot grow its keep list holds the references for the rest
 * of the process instead (never freed under a replay). */
static CUresult end_to_graph(cus_capture_guard *g, const char **call, bool always, bool *over,
                             const char *function)
{
    cus_graph *root = cus_graph_root_(g->graph);
    CUgraph h = NULL;
    capture_record *rec = NULL;
    CUresult r;
    {
        CUS_LOCK_SCOPE(&root->lock);
        r = end_capture(g, &h, &rec, call, always, over, function);
        if (rec && !cus_graph_keep_adopt_locked_(root, &rec->keep)) {
            free(rec->keep.items); /* the references stay taken */
            rec->keep = (keep_list){0};
            cus_host_alloc_absorbed_();
        }
        if (*over || always)
            root->captures_into--;
    }
    if (rec)
        record_free(rec);
    return r;
}

/* The count of references the open capture begun on stream holds. */
static size_t kept_so_far(cus_stream *stream)
{
    cuuint64_t id = atomic_load_explicit(&stream->capture_id, memory_order_acquire);
    if (!id)
        return 0;
    shard *sh = shard_of(id);
    shard_lock(sh);
    capture_record *rec = find_locked(sh, id);
    size_t n = rec ? rec->keep.count : 0;
    shard_unlock(sh);
    return n;
}

/* cus_capture_end for a capture into a graph. */
static cus_status capture_end_to_graph(cus_capture_guard *guard, cus_graph **out,
                                       const char *function)
{
    cus_context *ctx = guard->stream->ctx;
    /* Room in the graph's keep list first, the capture still open (the call
     * may be retried): its end must not find the graph unable to hold what
     * its nodes use. Nothing else can take that room before the end: the
     * graph refuses cuscope's calls while captured into. */
    cus_graph *root = cus_graph_root_(guard->graph);
    pthread_mutex_lock(&root->lock);
    bool room = cus_graph_keep_reserve_locked_(root, kept_so_far(guard->stream));
    pthread_mutex_unlock(&root->lock);
    if (!room)
        return cus_fail_(CUS_ERROR_OUT_OF_HOST_MEMORY, function, NULL,
                         "making room for what the captured work uses in the graph: the "
                         "capture is still open");
    const char *call;
    bool over;
    CUresult r = end_to_graph(guard, &call, false, &over, function);
    if (r) {
        cus_status st = cus_context_driver_fail_(ctx, r, function, call);
        if (over)
            guard_close(guard); /* else still open: the scope's exit tries again */
        return st;
    }
    *out = cus_steal(&guard->graph); /* the guard's reference, to the same graph */
    guard_close(guard);
    return CUS_SUCCESS;
}

/* A record taken off the list, at the end of cus_capture_end's scope: the
 * references it kept are released, unless they moved to the graph. */
static void record_discard(capture_record **rec)
{
    if (*rec)
        record_free(*rec);
}

CUS_API cus_status cus_capture_end(cus_capture_guard *guard, cus_graph **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(guard && out);
    if (!guard->open)
        return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL, "the capture is not open");
    if (guard->graph)
        return capture_end_to_graph(guard, out, __func__);
    cus_context *ctx = guard->stream->ctx;
    cus_autofree cus_graph *g = cus_calloc_(1, sizeof *g);
    CUgraph h = NULL;
    __attribute__((cleanup(record_discard))) capture_record *rec = NULL;
    const char *call;
    bool over;
    CUresult r = end_capture(guard, &h, &rec, &call, false, &over, __func__);
    cus_status st = CUS_SUCCESS;
    if (r)
        st = cus_context_driver_fail_(ctx, r, __func__, call);
    else if (!g || (rec && rec->out_of_memory))
        st = CUS_FAIL(CUS_ERROR_OUT_OF_HOST_MEMORY, NULL,
                      "keeping the captured objects alive: the graph is discarded");
    if (st) {
        if (rec && rec->out_of_memory && st != CUS_ERROR_OUT_OF_HOST_MEMORY)
            cus_host_alloc_absorbed_(); /* the graph is discarded for another error */
        if (h) {
            CUresult rd = cus_drv_.cuGraphDestroy_(h);
            if (rd)
                cus_destroy_error_((cus_status)rd, __func__, "cuGraphDestroy",
                                   "discarding a captured graph");
        }
        if (over)
            guard_close(guard); /* else still open: the scope's exit tries again */
        return st;
    }
    cus_refcount_init_(&g->refs);
    pthread_mutex_init(&g->lock, NULL);
    g->handle = h;
    g->ctx = cus_context_ref(ctx);
    if (rec) {
        g->keep = rec->keep; /* the references move to the graph */
        rec->keep = (keep_list){0};
    }
    guard_close(guard);
    *out = cus_steal(&g);
    return CUS_SUCCESS;
}

CUS_API void cus_capture_abandon(cus_capture_guard *guard)
{
    if (!guard || !guard->open)
        return;
    if (CUS_UNLIKELY(cus_is_forked_())) {
        /* A capture the parent opened: the child cannot end it. Its record
         * stays with the parent's list; the guard lets go of its stream. */
        guard_close(guard);
        return;
    }
    cus_error_save saved;
    cus_error_save_(&saved); /* runs during early returns: keep their error */
    if (guard->graph) {
        /* The nodes captured stay in the graph, which keeps what they use. */
        const char *call;
        bool over;
        CUresult r = end_to_graph(guard, &call, false, &over, __func__);
        if (r && r != CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)
            cus_destroy_error_((cus_status)r, "cus_capture_abandon", call, "%s",
                               over ? "ending an abandoned capture into a graph"
                                    : "ending an abandoned capture into a graph (trying once "
                                      "more)");
        if (!over && (r = end_to_graph(guard, &call, true, &over, __func__)) &&
            r != CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)
            cus_destroy_error_((cus_status)r, "cus_capture_abandon", call, "%s",
                               over ? "ending an abandoned capture into a graph"
                                    : "ending an abandoned capture into a graph: the stream may "
                                      "still capture");
        guard_close(guard);
        cus_error_restore_(&saved);
        return;
    }
    CUgraph h = NULL;
    capture_record *rec = NULL;
    const char *call;
    bool over;
    CUresult r = end_capture(guard, &h, &rec, &call, false, &over, __func__);
    /* An invalidated capture is what error paths usually leave: not news. */
    if (r && r != CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)
        cus_destroy_error_((cus_status)r, "cus_capture_abandon", call, "%s",
                           over ? "ending an abandoned capture"
                                : "ending an abandoned capture (trying once more)");
    if (!over) { /* once more, then give up on it */
        r = end_capture(guard, &h, &rec, &call, true, &over, __func__);
        if (r && r != CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)
            cus_destroy_error_((cus_status)r, "cus_capture_abandon", call, "%s",
                               over ? "ending an abandoned capture"
                                    : "ending an abandoned capture: the stream may still capture");
    }
    if (h) {
        CUresult rd = cus_drv_.cuGraphDestroy_(h);
        if (rd)
            cus_destroy_error_((cus_status)rd, "cus_capture_abandon", "cuGraphDestroy",
                               "discarding an abandoned capture's graph");
    }
    if (rec && rec->out_of_memory)
        cus_host_alloc_absorbed_(); /* nothing was to come of the capture */
    if (rec)
        record_free(rec);
    guard_close(guard);
    cus_error_restore_(&saved);
}

CUS_API cus_status cus_capture_leaves(cus_capture_guard *guard, cus_graph_node *nodes,
                                      size_t *count)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(guard && count);
    if (!guard->open || !guard->graph)
        return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL, "%s",
                        guard->open ? "not a capture into a graph (cus_capture_begin_to_graph)"
                                    : "the capture is not open");
    cus_stream *stream = guard->stream;
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    cuuint64_t id;
    CUgraph g = NULL;
    const CUgraphNode *deps = NULL;
    size_t n = 0;
    CUS_IN_CONTEXT(stream->ctx, "cuStreamGetCaptureInfo",
                   cus_drv_.cuStreamGetCaptureInfo_v2_(stream->handle, &status, &id, &g, &deps,
                                                       &n));
    if (status != CU_STREAM_CAPTURE_STATUS_ACTIVE)
        return CUS_FAIL((cus_status)CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
                        "cuStreamGetCaptureInfo", "the capture %s",
                        status == CU_STREAM_CAPTURE_STATUS_NONE ? "is over"
                                                                : "was invalidated");
    if (nodes) {
        size_t written = n < *count ? n : *count;
        for (size_t i = 0; i < written; i++)
            nodes[i] = (cus_graph_node){deps[i], guard->graph};
        n = written;
    }
    *count = n;
    return CUS_SUCCESS;
}

CUS_API cus_status cus_stream_is_capturing(cus_stream *stream, bool *capturing)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(stream && capturing);
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    CUS_IN_CONTEXT(stream->ctx, "cuStreamIsCapturing",
                   cus_drv_.cuStreamIsCapturing_(stream->handle, &status));
    *capturing = status != CU_STREAM_CAPTURE_STATUS_NONE;
    return CUS_SUCCESS;
}

/* fork.c's child hook: a parent thread may have held a lock at fork time.
 * In a forked child no capture can end (cus_capture_end refuses), so none
 * counts as open: nothing is kept (the records stay, unreachable). */
static void atfork_child(bool forked)
{
    for (size_t i = 0; i < SHARDS; i++)
        atomic_store_explicit(&shards[i].lock, false, memory_order_relaxed);
    if (forked)
        atomic_store_explicit(&cus_captures_active_, 0, memory_order_relaxed);
}

__attribute__((constructor)) static void register_atfork_child(void)
{
    cus_fork_register_child_hook_(atfork_child);
}
