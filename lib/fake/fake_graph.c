/* Stream capture and graphs: cuStreamBeginCapture, cuStreamEndCapture,
 * cuStreamIsCapturing, cuStreamGetCaptureInfo*, cuThreadExchangeStreamCaptureMode,
 * cuGraphDestroy, cuGraphGetNodes, cuGraphNodeGetType,
 * cuGraphInstantiateWithFlags, cuGraphExecDestroy, cuGraphLaunch,
 * cuGraphUpload and cuGraphExecUpdate.
 *
 * Capture. A capture is begun on one stream (its origin) and owns a graph
 * record from the start (what cuStreamGetCaptureInfo_v2 hands out). Every
 * stream taking part (the origin, and streams that waited on an event
 * recorded in the capture) is a member with its own dependency set: the nodes
 * the next operation captured on it depends on. An operation that would be
 * queued on a member (fake_stream_enqueue_locked calls the hook here) becomes
 * a node depending on that set, and the set becomes the node. cuEventRecord
 * on a member copies its set into the capture (the event then carries the
 * capture's id); cuStreamWaitEvent of such an event merges the set into the
 * waiting stream's, making it a member if it was not one (fork and join).
 * Records and waits are edges, not nodes, as with the driver. The nodes are
 * kept in capture order, in which every node comes after its dependencies: a
 * topological order, which replays follow.
 *
 * Graphs. What a graph is (its nodes) is an immutable body, shared by the
 * graph and the executable graphs made from it (instantiation snapshots it,
 * cuGraphExecUpdate points the executable graph at another body), and freed
 * with the last of them. Node records stay until the next install, so that a
 * node handle of a destroyed graph is recognised rather than undefined.
 *
 * Replay. cuGraphLaunch queues each node's operation, in order, on the
 * stream, as the call that captured it would have (with cuGraphLaunch as the
 * call in messages): nothing runs before the host waits for the stream, and
 * execution checks apply (memory freed since the capture is reported as use
 * after free, a kernel of an unloaded module as misuse), every time. Kernel
 * nodes are recorded as launches (cus_fake_launch.graph_exec) at each
 * cuGraphLaunch.
 *
 * Graph memory (cuMemAllocAsync and cuMemFreeAsync during capture) is
 * fake_memory.c's: an allocation node's block is registered at capture under
 * its fixed address, becomes usable when a launch's allocation node executes
 * and unusable at a free; this file holds it (per body) and keeps the
 * driver's launch rule (a launch that would allocate a block an earlier one
 * left allocated fails, unless instantiated with AUTO_FREE_ON_LAUNCH). */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fake_event.h"
#include "fake_module.h"

/* --- records ------------------------------------------------------------------------------ */

typedef struct fake_graph_body fake_graph_body;

struct CUgraphNode_st {
    fake_op_kind kind;
    union fake_op_payload u;      /* the operation, as its call would have queued it */
    const char *call;             /* the entry point that captured it */
    size_t index;                 /* in its body */
    size_t ndeps;
    struct CUgraphNode_st **deps; /* earlier nodes of the same body */
    bool released;                /* its body was freed: a tombstone */
};

struct fake_graph_body {
    unsigned long refs; /* the graph, and each executable graph that uses it */
    size_t nnodes, capacity;
    struct CUgraphNode_st **nodes; /* capture order: dependencies first */
    bool has_memory_nodes;
};

struct CUgraph_st {
    fake_handle h; /* kind GRAPH */
    struct CUctx_st *ctx;
    fake_graph_body *body;        /* NULL once destroyed */
    struct fake_capture *capture; /* being captured: neither instantiable nor destroyable */
    unsigned long execs_live;     /* executable graphs made from it, still alive */
    bool ctx_destroyed;
    unsigned long doomed;
};

struct CUgraphExec_st {
    fake_handle h; /* kind GRAPH_EXEC */
    struct CUctx_st *ctx;
    fake_graph_body *body;
    struct CUgraph_st *origin; /* the graph it was made from (records are never freed) */
    unsigned long long flags;
    bool ctx_destroyed;
    unsigned long doomed;
};

typedef struct capture_member {
    struct CUstream_st *stream;
    struct CUgraphNode_st **deps; /* what the next node captured on it depends on */
    size_t ndeps, capacity;
#ifdef FAKE_HAVE_12030_ENTRIES
    CUgraphEdgeData *edges; /* zeros, parallel to deps (cuStreamGetCaptureInfo_v3) */
    size_t edges_capacity;
#endif
} capture_member;

typedef struct capture_record {
    struct CUevent_st *event;
    struct CUgraphNode_st **deps; /* the recording stream's set at the record */
    size_t ndeps;
} capture_record;

struct fake_capture {
    struct fake_capture *next;
    unsigned long long id;
    CUstreamCaptureMode mode;
    pthread_t thread; /* that began it */
    struct CUstream_st *origin;
    struct CUgraph_st *graph;
    bool invalidated;
    unsigned long doomed;
    capture_member *members; /* [0] is the origin */
    size_t nmembers, members_capacity;
    capture_record *records;
    size_t nrecords, records_capacity;
};

/* --- state ---------------------------------------------------------------------------------- */

static struct fake_capture *captures;
/* Unique over the process, as the driver's ids: not reset by an install. */
static unsigned long long last_capture_id;

static struct CUgraph_st **graphs; /* every graph since install, for teardown */
static size_t graph_count, graph_capacity;
static struct CUgraphExec_st **execs;
static size_t exec_count, exec_capacity;
static struct CUgraphNode_st **nodes_all; /* every node since install: lookup and reset */
static size_t node_count, node_capacity;
static fake_graph_body **bodies; /* the live bodies, for the reset */
static size_t body_count, body_capacity;

/* The thread's capture interaction mode (cuThreadExchangeStreamCaptureMode),
 * GLOBAL unless set since the last install. */
static _Thread_local CUstreamCaptureMode tls_mode;
static _Thread_local unsigned long tls_mode_generation;

static CUstreamCaptureMode thread_mode(void)
{
    return tls_mode_generation == fake_g.generation ? tls_mode : CU_STREAM_CAPTURE_MODE_GLOBAL;
}

static bool mode_valid(int mode)
{
    return mode == CU_STREAM_CAPTURE_MODE_GLOBAL || mode == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL ||
           mode == CU_STREAM_CAPTURE_MODE_RELAXED;
}

/* Grows *array (of elem-byte entries) to hold one more than count. */
static bool reserve(void **array, size_t count, size_t *capacity, size_t elem)
{
    if (count < *capacity)
        return true;
    size_t cap = *capacity ? *capacity * 2 : 8;
    void *p = realloc(*array, cap * elem);
    if (!p)
        return false;
    *array = p;
    *capacity = cap;
    return true;
}

#define RESERVE(arr, count, cap) reserve((void **)&(arr), (count), &(cap), sizeof *(arr))

/* --- bodies ---------------------------------------------------------------------------------- */

static fake_graph_body *body_new_locked(void)
{
    if (!RESERVE(bodies, body_count, body_capacity))
        return NULL;
    fake_graph_body *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->refs = 1;
    bodies[body_count++] = b;
    return b;
}

/* Frees what a node owns; touch_memory: drop its hold on a graph allocation
 * (not at a reset, where the memory is going anyway). */
static void node_release(struct CUgraphNode_st *n, bool touch_memory)
{
    if (n->released)
        return;
    if (n->kind == FAKE_OP_LAUNCH)
        fake_module_launch_free(n->u.launch.exec);
    else if (n->kind == FAKE_OP_ALLOC && touch_memory)
        fake_memory_graph_drop_locked(n->u.mem.mem);
    free(n->deps);
    n->deps = NULL;
    n->ndeps = 0;
    n->released = true;
}

static void body_free(fake_graph_body *b, bool touch_memory)
{
    for (size_t i = 0; i < b->nnodes; i++)
        node_release(b->nodes[i], touch_memory);
    free(b->nodes);
    free(b);
}

static fake_graph_body *body_ref(fake_graph_body *b)
{
    b->refs++;
    return b;
}

static void body_unref_locked(fake_graph_body *b)
{
    if (!b || --b->refs)
        return;
    for (size_t i = 0; i < body_count; i++) {
        if (bodies[i] == b) {
            bodies[i] = bodies[--body_count];
            break;
        }
    }
    body_free(b, true);
}

static CUgraphNodeType node_type(fake_op_kind kind)
{
    switch (kind) {
    case FAKE_OP_LAUNCH:
        return CU_GRAPH_NODE_TYPE_KERNEL;
    case FAKE_OP_COPY:
        return CU_GRAPH_NODE_TYPE_MEMCPY;
    case FAKE_OP_MEMSET:
        return CU_GRAPH_NODE_TYPE_MEMSET;
    case FAKE_OP_HOST_FN:
        return CU_GRAPH_NODE_TYPE_HOST;
    case FAKE_OP_ALLOC:
        return CU_GRAPH_NODE_TYPE_MEM_ALLOC;
    case FAKE_OP_FREE:
        return CU_GRAPH_NODE_TYPE_MEM_FREE;
    case FAKE_OP_RECORD:
    case FAKE_OP_WAIT:
    case FAKE_OP_PREFETCH:
        break; /* never nodes */
    }
    return CU_GRAPH_NODE_TYPE_EMPTY;
}

/* Whether the body has a free node of m; an allocation node of m. */
static bool body_frees(const fake_graph_body *b, const fake_mem *m)
{
    for (size_t i = 0; i < b->nnodes; i++)
        if (b->nodes[i]->kind == FAKE_OP_FREE && b->nodes[i]->u.mem.mem == m)
            return true;
    return false;
}

static bool body_allocates(const fake_graph_body *b, const fake_mem *m)
{
    for (size_t i = 0; i < b->nnodes; i++)
        if (b->nodes[i]->kind == FAKE_OP_ALLOC && b->nodes[i]->u.mem.mem == m)
            return true;
    return false;
}

/* --- graphs and executable graphs: records and arguments ----------------------------------- */

/* Destroys a graph record: its handle dies, its body loses a reference. */
static void graph_release_locked(struct CUgraph_st *g)
{
    fake_handle_set_state_locked(&g->h, FAKE_DESTROYED);
    body_unref_locked(g->body);
    g->body = NULL;
}

static void exec_release_locked(struct CUgraphExec_st *x)
{
    fake_handle_set_state_locked(&x->h, FAKE_DESTROYED);
    if (x->origin->execs_live)
        x->origin->execs_live--;
    body_unref_locked(x->body);
    x->body = NULL;
}

/* A graph argument: NULL is CUDA_ERROR_INVALID_VALUE; unknown and destroyed
 * graphs are misuse too; `healthy`: a poisoned context answers its error. */
static CUresult graph_arg_locked(CUgraph hg, bool healthy, struct CUgraph_st **out)
{
    if (!hg)
        return CUDA_ERROR_INVALID_VALUE;
    fake_handle *h = fake_handle_find_locked((uintptr_t)hg);
    if (!h || h->kind != CUS_FAKE_HANDLE_GRAPH) {
        fake_misuse_locked("unknown graph handle 0x%" PRIxPTR, (uintptr_t)hg);
        return CUDA_ERROR_INVALID_VALUE;
    }
    struct CUgraph_st *g = (struct CUgraph_st *)h;
    if (h->state != FAKE_LIVE || g->ctx->h.state != FAKE_LIVE) {
        if (h->state != FAKE_LIVE && !g->ctx_destroyed)
            fake_misuse_locked("graph 0x%" PRIxPTR " used after cuGraphDestroy (or the end of "
                               "its failed capture)",
                               (uintptr_t)hg);
        else
            fake_misuse_locked("graph 0x%" PRIxPTR " used after its context was destroyed",
                               (uintptr_t)hg);
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (healthy && g->ctx->sticky != CUDA_SUCCESS)
        return g->ctx->sticky;
    *out = g;
    return CUDA_SUCCESS;
}

static CUresult exec_arg_locked(CUgraphExec he, bool healthy, struct CUgraphExec_st **out)
{
    if (!he)
        return CUDA_ERROR_INVALID_VALUE;
    fake_handle *h = fake_handle_find_locked((uintptr_t)he);
    if (!h || h->kind != CUS_FAKE_HANDLE_GRAPH_EXEC) {
        fake_misuse_locked("unknown executable graph handle 0x%" PRIxPTR, (uintptr_t)he);
        return CUDA_ERROR_INVALID_VALUE;
    }
    struct CUgraphExec_st *x = (struct CUgraphExec_st *)h;
    if (h->state != FAKE_LIVE || x->ctx->h.state != FAKE_LIVE) {
        if (h->state != FAKE_LIVE && !x->ctx_destroyed)
            fake_misuse_locked("executable graph 0x%" PRIxPTR " used after cuGraphExecDestroy",
                               (uintptr_t)he);
        else
            fake_misuse_locked("executable graph 0x%" PRIxPTR
                               " used after its context was destroyed",
                               (uintptr_t)he);
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (healthy && x->ctx->sticky != CUDA_SUCCESS)
        return x->ctx->sticky;
    *out = x;
    return CUDA_SUCCESS;
}

/* --- captures: membership, dependency sets, invalidation ------------------------------------- */

static struct fake_capture *capture_by_id(unsigned long long id)
{
    for (struct fake_capture *c = captures; c; c = c->next)
        if (c->id == id)
            return c;
    return NULL;
}

static size_t member_index(const struct fake_capture *cap, const struct CUstream_st *s)
{
    for (size_t i = 0; i < cap->nmembers; i++)
        if (cap->members[i].stream == s)
            return i;
    return SIZE_MAX; /* cannot happen for a stream whose capture is cap */
}

static bool set_has(struct CUgraphNode_st *const *set, size_t n, const struct CUgraphNode_st *x)
{
    for (size_t i = 0; i < n; i++)
        if (set[i] == x)
            return true;
    return false;
}

/* Makes member m's set hold n entries (contents unspecified). */
static bool member_resize(capture_member *m, size_t n)
{
    if (n > m->capacity) {
        size_t cap = m->capacity ? m->capacity : 4;
        while (cap < n)
            cap *= 2;
        struct CUgraphNode_st **d = realloc(m->deps, cap * sizeof *d);
        if (!d)
            return false;
        m->deps = d;
        m->capacity = cap;
    }
    return true;
}

/* Adds the nodes of set to member m's set, without duplicates. */
static bool member_merge(capture_member *m, struct CUgraphNode_st *const *set, size_t n)
{
    if (!member_resize(m, m->ndeps + n))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!set_has(m->deps, m->ndeps, set[i]))
            m->deps[m->ndeps++] = set[i];
    return true;
}

static bool any_blocking_member_of(const struct fake_capture *cap, const struct CUctx_st *c)
{
    for (size_t i = 0; i < cap->nmembers; i++) {
        const struct CUstream_st *t = cap->members[i].stream;
        if (t->ctx == c && !(t->flags & CU_STREAM_NON_BLOCKING))
            return true;
    }
    return false;
}

/* Whether a blocking stream of c captures: its legacy stream is then unusable. */
static bool legacy_blocked(const struct CUctx_st *c)
{
    for (struct fake_capture *cap = captures; cap; cap = cap->next)
        if (any_blocking_member_of(cap, c))
            return true;
    return false;
}

/* A use of c's legacy stream: the captures that block it are invalidated. */
static CUresult legacy_use_locked(const struct CUctx_st *c)
{
    bool blocked = false;
    for (struct fake_capture *cap = captures; cap; cap = cap->next) {
        if (any_blocking_member_of(cap, c)) {
            cap->invalidated = true;
            blocked = true;
        }
    }
    return blocked ? CUDA_ERROR_STREAM_CAPTURE_IMPLICIT : CUDA_SUCCESS;
}

/* Ends a capture: every member leaves it; keep_graph hands the graph over
 * (a success), otherwise the graph is destroyed (a failed capture). */
static void capture_finish_locked(struct fake_capture *cap, bool keep_graph)
{
    for (struct fake_capture **p = &captures; *p; p = &(*p)->next) {
        if (*p == cap) {
            *p = cap->next;
            break;
        }
    }
    fake_captures_active--;
    for (size_t i = 0; i < cap->nmembers; i++) {
        capture_member *m = &cap->members[i];
        if (m->stream->capture == cap)
            m->stream->capture = NULL;
        free(m->deps);
#ifdef FAKE_HAVE_12030_ENTRIES
        free(m->edges);
#endif
    }
    for (size_t i = 0; i < cap->nrecords; i++)
        free(cap->records[i].deps);
    free(cap->members);
    free(cap->records);
    cap->graph->capture = NULL;
    if (!keep_graph)
        graph_release_locked(cap->graph);
    free(cap);
}

/* A member stream leaves (destroyed, or its context died): the capture is
 * invalidated, as its work can no longer be joined. */
static void member_remove_locked(struct fake_capture *cap, size_t i)
{
    capture_member *m = &cap->members[i];
    m->stream->capture = NULL;
    free(m->deps);
#ifdef FAKE_HAVE_12030_ENTRIES
    free(m->edges);
#endif
    cap->members[i] = cap->members[--cap->nmembers];
    cap->invalidated = true;
}

/* Whether some member's work is not reachable from the origin's set: a fork
 * that was never joined back. Dependencies come earlier in the body, so one
 * backward sweep marks every ancestor. */
static bool unjoined(const struct fake_capture *cap, bool *out_of_memory)
{
    const fake_graph_body *b = cap->graph->body;
    *out_of_memory = false;
    if (cap->nmembers < 2 || b->nnodes == 0)
        return false;
    bool *reach = calloc(b->nnodes, sizeof *reach);
    if (!reach) {
        *out_of_memory = true;
        return false;
    }
    const capture_member *o = &cap->members[0];
    for (size_t i = 0; i < o->ndeps; i++)
        reach[o->deps[i]->index] = true;
    for (size_t i = b->nnodes; i-- > 0;)
        if (reach[i])
            for (size_t j = 0; j < b->nodes[i]->ndeps; j++)
                reach[b->nodes[i]->deps[j]->index] = true;
    bool found = false;
    for (size_t k = 1; k < cap->nmembers && !found; k++)
        for (size_t i = 0; i < cap->members[k].ndeps && !found; i++)
            found = !reach[cap->members[k].deps[i]->index];
    free(reach);
    return found;
}

/* Appends a node for proto to the capture, after member mi's set, which
 * becomes the node. CUDA_ERROR_OUT_OF_MEMORY leaves everything as it was. */
static CUresult capture_add_node_locked(struct fake_capture *cap, size_t mi, const fake_op *proto)
{
    fake_graph_body *b = cap->graph->body;
    capture_member *m = &cap->members[mi];
    if (!RESERVE(nodes_all, node_count, node_capacity) ||
        !RESERVE(b->nodes, b->nnodes, b->capacity) || !member_resize(m, 1))
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct CUgraphNode_st *n = calloc(1, sizeof *n);
    if (!n)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (m->ndeps) {
        n->deps = malloc(m->ndeps * sizeof *n->deps);
        if (!n->deps) {
            free(n);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        memcpy(n->deps, m->deps, m->ndeps * sizeof *n->deps);
        n->ndeps = m->ndeps;
    }
    n->kind = proto->kind;
    n->u = proto->u;
    n->call = proto->call ? proto->call : fake_g.current_call;
    n->index = b->nnodes;
    b->nodes[b->nnodes++] = n;
    nodes_all[node_count++] = n;
    m->deps[0] = n;
    m->ndeps = 1;
    return CUDA_SUCCESS;
}

/* --- the hooks of the other files ------------------------------------------------------------ */

static CUresult graph_enqueue_locked(struct CUstream_st *s, const fake_op *proto, bool *handled)
{
    *handled = false;
    struct fake_capture *cap = s->capture;
    if (!cap) {
        if (s->is_default && legacy_blocked(s->ctx)) {
            *handled = true;
            return legacy_use_locked(s->ctx);
        }
        return CUDA_SUCCESS;
    }
    *handled = true;
    if (cap->invalidated)
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    size_t mi = member_index(cap, s);
    CUresult r;
    switch (proto->kind) {
    case FAKE_OP_COPY:
    case FAKE_OP_MEMSET:
    case FAKE_OP_HOST_FN:
    case FAKE_OP_LAUNCH:
        return capture_add_node_locked(cap, mi, proto);
    case FAKE_OP_ALLOC:
        r = capture_add_node_locked(cap, mi, proto);
        if (r == CUDA_SUCCESS) {
            fake_memory_graph_hold_locked(proto->u.mem.mem);
            cap->graph->body->has_memory_nodes = true;
        }
        return r;
    case FAKE_OP_FREE:
        /* During capture a free is a free node, which takes a graph
         * allocation that this graph does not free already. */
        if (!fake_memory_is_graph_alloc(proto->u.mem.mem) ||
            body_frees(cap->graph->body, proto->u.mem.mem))
            return CUDA_ERROR_INVALID_VALUE;
        r = capture_add_node_locked(cap, mi, proto);
        if (r == CUDA_SUCCESS)
            cap->graph->body->has_memory_nodes = true;
        return r;
    case FAKE_OP_PREFETCH:
    case FAKE_OP_RECORD:
    case FAKE_OP_WAIT:
        break;
    }
    /* Not emulated as nodes (prefetches): the capture cannot take it. */
    cap->invalidated = true;
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

static CUresult graph_sync_check_locked(struct CUstream_st *s)
{
    if (s->capture) {
        s->capture->invalidated = true;
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    if (s->is_default)
        return legacy_use_locked(s->ctx);
    return CUDA_SUCCESS;
}

static CUresult graph_record_locked(struct CUstream_st *s, struct CUevent_st *e)
{
    struct fake_capture *cap = s->capture;
    if (cap->invalidated)
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    const capture_member *m = &cap->members[member_index(cap, s)];
    capture_record *rec = NULL;
    for (size_t i = 0; i < cap->nrecords && !rec; i++)
        if (cap->records[i].event == e)
            rec = &cap->records[i];
    if (!rec && !RESERVE(cap->records, cap->nrecords, cap->records_capacity))
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct CUgraphNode_st **deps = NULL;
    if (m->ndeps) {
        deps = malloc(m->ndeps * sizeof *deps);
        if (!deps)
            return CUDA_ERROR_OUT_OF_MEMORY;
        memcpy(deps, m->deps, m->ndeps * sizeof *deps);
    }
    if (!rec) {
        rec = &cap->records[cap->nrecords++];
        rec->event = e;
    } else {
        free(rec->deps);
    }
    rec->deps = deps;
    rec->ndeps = m->ndeps;
    e->capture_id = cap->id;
    e->generation++; /* a record still queued from before no longer stamps it */
    return CUDA_SUCCESS;
}

static CUresult graph_wait_locked(struct CUstream_st *s, struct CUevent_st *e, unsigned int flags,
                                bool *handled)
{
    *handled = true;
    if (s->is_default && legacy_blocked(s->ctx))
        return legacy_use_locked(s->ctx);
    if ((flags & CU_EVENT_WAIT_EXTERNAL) && (s->capture || e->capture_id)) {
        /* External event wait nodes are not emulated. */
        if (s->capture)
            s->capture->invalidated = true;
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    if (e->capture_id) {
        struct fake_capture *cap = capture_by_id(e->capture_id);
        if (!cap) /* recorded in a capture that is over */
            return CUDA_ERROR_CAPTURED_EVENT;
        const capture_record *rec = NULL;
        for (size_t i = 0; i < cap->nrecords && !rec; i++)
            if (cap->records[i].event == e)
                rec = &cap->records[i];
        if (s->is_default) { /* the legacy stream cannot take part in a capture */
            cap->invalidated = true;
            return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
        }
        if (!s->capture) { /* a fork: s joins, after the record */
            if (!RESERVE(cap->members, cap->nmembers, cap->members_capacity))
                return CUDA_ERROR_OUT_OF_MEMORY;
            capture_member m = {.stream = s};
            if (rec && !member_merge(&m, rec->deps, rec->ndeps)) {
                free(m.deps);
                return CUDA_ERROR_OUT_OF_MEMORY;
            }
            cap->members[cap->nmembers++] = m;
            s->capture = cap;
            return cap->invalidated ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED : CUDA_SUCCESS;
        }
        if (s->capture != cap) { /* two captures would merge */
            s->capture->invalidated = true;
            return CUDA_ERROR_STREAM_CAPTURE_MERGE;
        }
        if (cap->invalidated)
            return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
        if (rec && !member_merge(&cap->members[member_index(cap, s)], rec->deps, rec->ndeps))
            return CUDA_ERROR_OUT_OF_MEMORY;
        return CUDA_SUCCESS; /* a join */
    }
    if (!s->capture) {
        *handled = false; /* an ordinary wait */
        return CUDA_SUCCESS;
    }
    if (s->capture->invalidated)
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    if (!e->recorded)
        return CUDA_SUCCESS; /* nothing to wait for */
    /* Work outside the capture cannot be a dependency of captured work. */
    s->capture->invalidated = true;
    return CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
}

static bool graph_unsafe_call_locked(void)
{
    if (!fake_captures_active)
        return false;
    CUstreamCaptureMode mode = thread_mode();
    if (mode == CU_STREAM_CAPTURE_MODE_RELAXED)
        return false;
    pthread_t self = pthread_self();
    bool prohibited = false;
    for (struct fake_capture *cap = captures; cap; cap = cap->next) {
        if (cap->invalidated)
            continue; /* the harm is done: cleanup code may run */
        bool own = pthread_equal(cap->thread, self);
        if ((own && cap->mode != CU_STREAM_CAPTURE_MODE_RELAXED) ||
            (!own && mode == CU_STREAM_CAPTURE_MODE_GLOBAL &&
             cap->mode == CU_STREAM_CAPTURE_MODE_GLOBAL)) {
            cap->invalidated = true;
            prohibited = true;
        }
    }
    return prohibited;
}

static void graph_stream_destroyed_locked(struct CUstream_st *s)
{
    struct fake_capture *cap = s->capture;
    if (!cap)
        return;
    if (cap->origin == s)
        capture_finish_locked(cap, false);
    else
        member_remove_locked(cap, member_index(cap, s));
}

/* --- teardown and reset ---------------------------------------------------------------------- */

static void graph_doom_locked(struct CUctx_st *c, unsigned long ticket)
{
    for (size_t i = 0; i < graph_count; i++)
        if (graphs[i]->ctx == c && graphs[i]->h.state == FAKE_LIVE)
            graphs[i]->doomed = ticket;
    for (size_t i = 0; i < exec_count; i++)
        if (execs[i]->ctx == c && execs[i]->h.state == FAKE_LIVE)
            execs[i]->doomed = ticket;
    for (struct fake_capture *cap = captures; cap; cap = cap->next)
        if (cap->origin->ctx == c)
            cap->doomed = ticket;
}

static void graph_destroy_doomed_locked(struct CUctx_st *c, unsigned long ticket)
{
    /* Captures begun in c go with their graph; those that c's streams joined
     * lose them. */
    for (struct fake_capture *cap = captures, *next; cap; cap = next) {
        next = cap->next;
        if (cap->doomed == ticket) {
            cap->graph->ctx_destroyed = true;
            capture_finish_locked(cap, false);
            continue;
        }
        for (size_t i = cap->nmembers; i-- > 1;)
            if (cap->members[i].stream->ctx == c && cap->members[i].stream->torn_down)
                member_remove_locked(cap, i);
    }
    for (size_t i = 0; i < exec_count; i++) {
        struct CUgraphExec_st *x = execs[i];
        if (x->doomed == ticket && x->h.state == FAKE_LIVE) {
            x->ctx_destroyed = true;
            exec_release_locked(x);
        }
    }
    for (size_t i = 0; i < graph_count; i++) {
        struct CUgraph_st *g = graphs[i];
        if (g->doomed == ticket && g->h.state == FAKE_LIVE) {
            g->ctx_destroyed = true;
            graph_release_locked(g);
        }
    }
}

static void graph_reset_locked(const cus_fake_config *cfg)
{
    (void)cfg;
    while (captures) {
        struct fake_capture *cap = captures;
        captures = cap->next;
        for (size_t i = 0; i < cap->nmembers; i++) {
            free(cap->members[i].deps);
#ifdef FAKE_HAVE_12030_ENTRIES
            free(cap->members[i].edges);
#endif
        }
        for (size_t i = 0; i < cap->nrecords; i++)
            free(cap->records[i].deps);
        free(cap->members);
        free(cap->records);
        free(cap);
    }
    fake_captures_active = 0;
    for (size_t i = 0; i < body_count; i++)
        body_free(bodies[i], false);
    free(bodies);
    bodies = NULL;
    body_count = body_capacity = 0;
    for (size_t i = 0; i < node_count; i++)
        free(nodes_all[i]); /* released with their bodies above, or before */
    free(nodes_all);
    nodes_all = NULL;
    node_count = node_capacity = 0;
    free(graphs); /* the registry frees the records */
    graphs = NULL;
    graph_count = graph_capacity = 0;
    free(execs);
    execs = NULL;
    exec_count = exec_capacity = 0;
}

/* --- capture: entry points ------------------------------------------------------------------- */

CUresult CUDAAPI fake_cuStreamBeginCapture(CUstream hStream, CUstreamCaptureMode mode)
{
    FAKE_ENTER(cuStreamBeginCapture);
    struct CUstream_st *s = NULL;
    CUresult r = fake_stream_arg_locked(hStream, &s);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (!mode_valid((int)mode))
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    if (s->is_default) /* the legacy stream (CU_STREAM_PER_THREAD too, here) */
        return fake_leave(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    if (s->capture) /* capturing already, or joined to a capture */
        return fake_leave(CUDA_ERROR_ILLEGAL_STATE);
    if (!RESERVE(graphs, graph_count, graph_capacity))
        return fake_leave(CUDA_ERROR_OUT_OF_MEMORY);
    struct fake_capture *cap = calloc(1, sizeof *cap);
    capture_member *members = calloc(4, sizeof *members);
    fake_graph_body *b = cap && members ? body_new_locked() : NULL;
    struct CUgraph_st *g = b ? fake_handle_new_locked(CUS_FAKE_HANDLE_GRAPH, sizeof *g, 0) : NULL;
    if (!g) {
        if (b)
            body_unref_locked(b);
        free(members);
        free(cap);
        return fake_leave(CUDA_ERROR_OUT_OF_MEMORY);
    }
    g->ctx = s->ctx;
    g->body = b;
    g->capture = cap;
    graphs[graph_count++] = g;
    cap->id = ++last_capture_id;
    cap->mode = mode;
    cap->thread = pthread_self();
    cap->origin = s;
    cap->graph = g;
    cap->members = members;
    cap->members_capacity = 4;
    cap->members[0].stream = s;
    cap->nmembers = 1;
    cap->next = captures;
    captures = cap;
    fake_captures_active++;
    s->capture = cap;
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)
{
    FAKE_ENTER(cuStreamEndCapture);
    if (!phGraph)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    struct CUstream_st *s = NULL;
    CUresult r = fake_stream_arg_any_locked(hStream, &s); /* a poisoned capture still ends */
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    struct fake_capture *cap = s->capture;
    if (!cap)
        return fake_leave(CUDA_ERROR_ILLEGAL_STATE);
    if (cap->origin != s) { /* a joined stream: the capture is broken */
        cap->invalidated = true;
        return fake_leave(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED);
    }
    if (cap->mode != CU_STREAM_CAPTURE_MODE_RELAXED && !pthread_equal(cap->thread, pthread_self()))
        return fake_leave(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD); /* still capturing */
    /* From here the capture is over, whatever the outcome. */
    r = s->ctx->sticky;
    bool oom = false;
    if (r == CUDA_SUCCESS && cap->invalidated)
        r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    if (r == CUDA_SUCCESS && unjoined(cap, &oom))
        r = CUDA_ERROR_STREAM_CAPTURE_UNJOINED;
    if (r == CUDA_SUCCESS && oom)
        return fake_leave(CUDA_ERROR_OUT_OF_MEMORY); /* still capturing: may be retried */
    struct CUgraph_st *g = cap->graph;
    capture_finish_locked(cap, r == CUDA_SUCCESS);
    *phGraph = r == CUDA_SUCCESS ? g : NULL;
    return fake_leave(r);
}

static CUstreamCaptureStatus status_of(const struct CUstream_st *s)
{
    if (!s->capture)
        return CU_STREAM_CAPTURE_STATUS_NONE;
    return s->capture->invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                   : CU_STREAM_CAPTURE_STATUS_ACTIVE;
}

CUresult CUDAAPI fake_cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
    FAKE_ENTER(cuStreamIsCapturing);
    if (!captureStatus)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    struct CUstream_st *s = NULL;
    CUresult r = fake_stream_arg_locked(hStream, &s);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    /* The legacy stream while a blocking stream captures: an error, but
     * (documented) the capture is not invalidated. */
    if (s->is_default && legacy_blocked(s->ctx))
        return fake_leave(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    *captureStatus = status_of(s);
    return fake_leave(CUDA_SUCCESS);
}

/* Every variant of cuStreamGetCaptureInfo: the status always; the rest only
 * for an active capture (the driver's "valid data" rule), else untouched. */
static CUresult capture_info_locked(CUstream hStream, CUstreamCaptureStatus *status_out,
                                    cuuint64_t *id_out, CUgraph *graph_out,
                                    const CUgraphNode **deps_out, const void **edges_out,
                                    size_t *ndeps_out)
{
    if (!status_out || (edges_out && !deps_out))
        return CUDA_ERROR_INVALID_VALUE;
    struct CUstream_st *s = NULL;
    CUresult r = fake_stream_arg_locked(hStream, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if (s->is_default && legacy_blocked(s->ctx))
        return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    *status_out = status_of(s);
    if (*status_out != CU_STREAM_CAPTURE_STATUS_ACTIVE)
        return CUDA_SUCCESS;
    struct fake_capture *cap = s->capture;
    capture_member *m = &cap->members[member_index(cap, s)];
#ifdef FAKE_HAVE_12030_ENTRIES
    if (edges_out) { /* all zero: the fake's edges carry no data */
        if (m->ndeps > m->edges_capacity) {
            CUgraphEdgeData *e = realloc(m->edges, m->ndeps * sizeof *e);
            if (!e)
                return CUDA_ERROR_OUT_OF_MEMORY;
            m->edges = e;
            m->edges_capacity = m->ndeps;
        }
        if (m->ndeps)
            memset(m->edges, 0, m->ndeps * sizeof *m->edges);
        *edges_out = m->ndeps ? m->edges : NULL;
    }
#else
    (void)edges_out;
#endif
    if (id_out)
        *id_out = cap->id;
    if (graph_out)
        *graph_out = cap->graph;
    if (deps_out) /* the driver-owned array, valid until the next call on the stream */
        *deps_out = m->ndeps ? (const CUgraphNode *)m->deps : NULL;
    if (ndeps_out)
        *ndeps_out = m->ndeps;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuStreamGetCaptureInfo(CUstream hStream,
                                             CUstreamCaptureStatus *captureStatus_out,
                                             cuuint64_t *id_out)
{
    FAKE_ENTER(cuStreamGetCaptureInfo);
    return fake_leave(capture_info_locked(hStream, captureStatus_out, id_out, NULL, NULL, NULL,
                                          NULL));
}

CUresult CUDAAPI fake_cuStreamGetCaptureInfo_v2(CUstream hStream,
                                                CUstreamCaptureStatus *captureStatus_out,
                                                cuuint64_t *id_out, CUgraph *graph_out,
                                                const CUgraphNode **dependencies_out,
                                                size_t *numDependencies_out)
{
    FAKE_ENTER(cuStreamGetCaptureInfo_v2);
    return fake_leave(capture_info_locked(hStream, captureStatus_out, id_out, graph_out,
                                          dependencies_out, NULL, numDependencies_out));
}

#ifdef FAKE_HAVE_12030_ENTRIES
CUresult CUDAAPI fake_cuStreamGetCaptureInfo_v3(CUstream hStream,
                                                CUstreamCaptureStatus *captureStatus_out,
                                                cuuint64_t *id_out, CUgraph *graph_out,
                                                const CUgraphNode **dependencies_out,
                                                const CUgraphEdgeData **edgeData_out,
                                                size_t *numDependencies_out)
{
    FAKE_ENTER(cuStreamGetCaptureInfo_v3);
    const void *edges = NULL;
    CUresult r = capture_info_locked(hStream, captureStatus_out, id_out, graph_out,
                                     dependencies_out, edgeData_out ? &edges : NULL,
                                     numDependencies_out);
    if (r == CUDA_SUCCESS && edgeData_out && *captureStatus_out == CU_STREAM_CAPTURE_STATUS_ACTIVE)
        *edgeData_out = edges;
    return fake_leave(r);
}
#endif

CUresult CUDAAPI fake_cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
    FAKE_ENTER(cuThreadExchangeStreamCaptureMode);
    if (!mode || !mode_valid((int)*mode))
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    CUstreamCaptureMode old = thread_mode();
    tls_mode = *mode;
    tls_mode_generation = fake_g.generation;
    *mode = old;
    return fake_leave(CUDA_SUCCESS);
}

/* --- graphs: entry points -------------------------------------------------------------------- */

CUresult CUDAAPI fake_cuGraphDestroy(CUgraph hGraph)
{
    FAKE_ENTER(cuGraphDestroy);
    fake_handle *h = fake_handle_find_locked((uintptr_t)hGraph);
    if (h && h->kind == CUS_FAKE_HANDLE_GRAPH && h->state == FAKE_DESTROYED &&
        !((struct CUgraph_st *)h)->ctx_destroyed) {
        fake_misuse_locked("double destroy of graph 0x%" PRIxPTR, (uintptr_t)hGraph);
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    }
    struct CUgraph_st *g = NULL;
    CUresult r = graph_arg_locked(hGraph, false, &g); /* poisoned or not */
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (g->capture) /* the graph of a capture in progress: cuStreamEndCapture owns it */
        return fake_leave(CUDA_ERROR_ILLEGAL_STATE);
    /* Its executable graphs are independent of it: they keep the body. */
    graph_release_locked(g);
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes)
{
    FAKE_ENTER(cuGraphGetNodes);
    struct CUgraph_st *g = NULL;
    CUresult r = graph_arg_locked(hGraph, true, &g);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (!numNodes)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    const fake_graph_body *b = g->body;
    if (!nodes) {
        *numNodes = b->nnodes;
        return fake_leave(CUDA_SUCCESS);
    }
    /* Up to *numNodes entries; past the graph's nodes, NULL, and the count
     * obtained written back. */
    size_t want = *numNodes;
    for (size_t i = 0; i < want; i++)
        nodes[i] = i < b->nnodes ? b->nodes[i] : NULL;
    if (want > b->nnodes)
        *numNodes = b->nnodes;
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType *type)
{
    FAKE_ENTER(cuGraphNodeGetType);
    if (!hNode || !type)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    const struct CUgraphNode_st *n = NULL;
    for (size_t i = 0; i < node_count && !n; i++) /* compared, never dereferenced unknown */
        if (nodes_all[i] == hNode)
            n = nodes_all[i];
    if (!n) {
        fake_misuse_locked("unknown graph node handle 0x%" PRIxPTR, (uintptr_t)hNode);
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    }
    if (n->released) {
        fake_misuse_locked("graph node 0x%" PRIxPTR " used after its graph was destroyed",
                           (uintptr_t)hNode);
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    }
    *type = node_type(n->kind);
    return fake_leave(CUDA_SUCCESS);
}

/* The instantiation flags of CUDA 12 (CUDA_GRAPH_INSTANTIATE_FLAG_*). */
enum {
    FLAG_AUTO_FREE_ON_LAUNCH = 1,
    FLAG_UPLOAD = 2,
    FLAG_DEVICE_LAUNCH = 4,
    FLAG_USE_NODE_PRIORITY = 8,
};

CUresult CUDAAPI fake_cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
                                                  unsigned long long flags)
{
    FAKE_ENTER(cuGraphInstantiateWithFlags);
    if (!phGraphExec)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    struct CUgraph_st *g = NULL;
    CUresult r = graph_arg_locked(hGraph, true, &g);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    const unsigned long long known =
        FLAG_AUTO_FREE_ON_LAUNCH | FLAG_UPLOAD | FLAG_DEVICE_LAUNCH | FLAG_USE_NODE_PRIORITY;
    /* UPLOAD is for cuGraphInstantiateWithParams only; DEVICE_LAUNCH excludes AUTO_FREE. */
    if ((flags & ~known) || (flags & FLAG_UPLOAD) ||
        ((flags & FLAG_DEVICE_LAUNCH) && (flags & FLAG_AUTO_FREE_ON_LAUNCH)))
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    if (g->capture)
        return fake_leave(CUDA_ERROR_ILLEGAL_STATE); /* not instantiable before its end */
    const fake_graph_body *b = g->body;
    if (flags & FLAG_DEVICE_LAUNCH) {
        /* Device graphs: kernel, memcpy and memset nodes only, and at least one. */
        if (b->nnodes == 0)
            return fake_leave(CUDA_ERROR_INVALID_VALUE);
        for (size_t i = 0; i < b->nnodes; i++) {
            fake_op_kind k = b->nodes[i]->kind;
            if (k != FAKE_OP_LAUNCH && k != FAKE_OP_COPY && k != FAKE_OP_MEMSET)
                return fake_leave(CUDA_ERROR_INVALID_VALUE);
        }
    }
    /* A graph with memory nodes has one executable graph at a time. */
    if (b->has_memory_nodes && g->execs_live)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    if (!RESERVE(execs, exec_count, exec_capacity))
        return fake_leave(CUDA_ERROR_OUT_OF_MEMORY);
    struct CUgraphExec_st *x = fake_handle_new_locked(CUS_FAKE_HANDLE_GRAPH_EXEC, sizeof *x, 0);
    if (!x)
        return fake_leave(CUDA_ERROR_OUT_OF_MEMORY);
    x->ctx = g->ctx;
    x->body = body_ref(g->body); /* a snapshot: the body never changes */
    x->origin = g;
    x->flags = flags;
    g->execs_live++;
    execs[exec_count++] = x;
    *phGraphExec = x;
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuGraphExecDestroy(CUgraphExec hGraphExec)
{
    FAKE_ENTER(cuGraphExecDestroy);
    fake_handle *h = fake_handle_find_locked((uintptr_t)hGraphExec);
    if (h && h->kind == CUS_FAKE_HANDLE_GRAPH_EXEC && h->state == FAKE_DESTROYED &&
        !((struct CUgraphExec_st *)h)->ctx_destroyed) {
        fake_misuse_locked("double destroy of executable graph 0x%" PRIxPTR,
                           (uintptr_t)hGraphExec);
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    }
    struct CUgraphExec_st *x = NULL;
    CUresult r = exec_arg_locked(hGraphExec, false, &x); /* poisoned or not */
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    /* A launch still queued runs: its operations own copies of the nodes. */
    exec_release_locked(x);
    return fake_leave(CUDA_SUCCESS);
}

/* The checks that cuGraphLaunch and cuGraphUpload share: the executable
 * graph, the stream, their contexts, the stream's capture state. */
static CUresult exec_stream_locked(CUgraphExec he, CUstream hs, struct CUgraphExec_st **xo,
                                   struct CUstream_st **so)
{
    struct CUgraphExec_st *x = NULL;
    CUresult r = exec_arg_locked(he, true, &x);
    if (r != CUDA_SUCCESS)
        return r;
    struct CUstream_st *s = NULL;
    r = fake_stream_arg_locked(hs, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if (s->ctx != x->ctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (s->capture) {
        /* Child graph nodes are not emulated: a capture cannot take a launch. */
        if (s->capture->invalidated)
            return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
        s->capture->invalidated = true;
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    if (s->is_default && fake_captures_active) {
        r = legacy_use_locked(s->ctx);
        if (r != CUDA_SUCCESS)
            return r;
    }
    *xo = x;
    *so = s;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
    FAKE_ENTER(cuGraphLaunch);
    struct CUgraphExec_st *x = NULL;
    struct CUstream_st *s = NULL;
    CUresult r = exec_stream_locked(hGraphExec, hStream, &x, &s);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    const fake_graph_body *b = x->body;
    /* Graph memory first, so that a refused launch queues nothing. */
    for (size_t i = 0; i < b->nnodes; i++) {
        const struct CUgraphNode_st *n = b->nodes[i];
        if (n->kind == FAKE_OP_ALLOC && fake_memory_graph_outstanding(n->u.mem.mem) &&
            !(x->flags & FLAG_AUTO_FREE_ON_LAUNCH))
            return fake_leave(CUDA_ERROR_INVALID_VALUE); /* documented: still allocated */
        if (n->kind == FAKE_OP_FREE && !body_allocates(b, n->u.mem.mem) &&
            !fake_memory_graph_outstanding(n->u.mem.mem)) {
            fake_misuse_locked("cuGraphLaunch of executable graph 0x%" PRIxPTR
                               " frees graph allocation 0x%" PRIxPTR
                               " of another graph, which no launch left allocated (double free)",
                               (uintptr_t)x, (uintptr_t)fake_memory_global_base(n->u.mem.mem));
            return fake_leave(CUDA_ERROR_INVALID_VALUE);
        }
    }
    for (size_t i = 0; i < b->nnodes; i++) {
        const struct CUgraphNode_st *n = b->nodes[i];
        fake_op op = {.kind = n->kind, .call = "cuGraphLaunch", .u = n->u};
        if (n->kind == FAKE_OP_LAUNCH) {
            op.u.launch.exec = fake_module_launch_replay(n->u.launch.exec, x, hStream);
            if (!op.u.launch.exec)
                return fake_leave(CUDA_ERROR_OUT_OF_MEMORY);
        }
        /* An out-of-memory here leaves the nodes before it queued. */
        r = fake_stream_enqueue_locked(s, &op, NULL, 0);
        if (r != CUDA_SUCCESS) {
            if (n->kind == FAKE_OP_LAUNCH)
                fake_module_launch_free(op.u.launch.exec);
            return fake_leave(r);
        }
        if (n->kind == FAKE_OP_LAUNCH)
            fake_module_record_launch_locked(op.u.launch.exec); /* queued, not run yet */
        else if (n->kind == FAKE_OP_ALLOC || n->kind == FAKE_OP_FREE)
            fake_memory_graph_op_queued_locked(n->u.mem.mem);
    }
    /* What the launch leaves allocated, and what it frees of others'. */
    for (size_t i = 0; i < b->nnodes; i++) {
        const struct CUgraphNode_st *n = b->nodes[i];
        if (n->kind == FAKE_OP_ALLOC)
            fake_memory_graph_set_outstanding_locked(n->u.mem.mem, !body_frees(b, n->u.mem.mem));
        else if (n->kind == FAKE_OP_FREE && !body_allocates(b, n->u.mem.mem))
            fake_memory_graph_set_outstanding_locked(n->u.mem.mem, false);
    }
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream)
{
    FAKE_ENTER(cuGraphUpload);
    struct CUgraphExec_st *x = NULL;
    struct CUstream_st *s = NULL;
    /* Nothing to upload to: validated, and no operation queued. */
    return fake_leave(exec_stream_locked(hGraphExec, hStream, &x, &s));
}

/* Whether two copy operands are of the same kind of memory on the same
 * device (what an update may not change). */
static bool same_operand(const fake_mem *a, const fake_mem *b)
{
    CUdevice da = -1, db = -1;
    bool on_a = false, on_b = false;
    fake_memory_operand_kind(a, &da, &on_a);
    fake_memory_operand_kind(b, &db, &on_b);
    return on_a == on_b && (!on_a || da == db);
}

/* The update rules, node by node in order; the first failure is the result. */
static CUgraphExecUpdateResult compare_bodies(const fake_graph_body *from,
                                              const fake_graph_body *to, CUgraphNode *error_node,
                                              CUgraphNode *error_from)
{
    if (from->nnodes != to->nnodes)
        return CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED; /* no node to blame */
    for (size_t i = 0; i < to->nnodes; i++) {
        const struct CUgraphNode_st *a = from->nodes[i];
        struct CUgraphNode_st *n = to->nodes[i];
        *error_node = n;
        if (a->kind != n->kind)
            return CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED;
        if (a->ndeps != n->ndeps)
            return CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
        for (size_t j = 0; j < n->ndeps; j++) {
            if (a->deps[j]->index != n->deps[j]->index) {
                *error_from = n->deps[j];
                return CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
            }
        }
        switch (n->kind) {
        case FAKE_OP_LAUNCH:
            if (fake_module_launch_context(a->u.launch.exec) !=
                fake_module_launch_context(n->u.launch.exec))
                return CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE;
            if (fake_module_launch_cooperative(a->u.launch.exec) !=
                fake_module_launch_cooperative(n->u.launch.exec))
                return CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED;
            break;
        case FAKE_OP_COPY:
            if (!same_operand(a->u.copy.dst_mem, n->u.copy.dst_mem) ||
                !same_operand(a->u.copy.src_mem, n->u.copy.src_mem))
                return CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED;
            break;
        case FAKE_OP_MEMSET:
            if (!same_operand(a->u.memset.mem, n->u.memset.mem))
                return CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED;
            break;
        case FAKE_OP_ALLOC:
        case FAKE_OP_FREE:
            /* A memory node's allocation is fixed: it cannot change. */
            if (a->u.mem.mem != n->u.mem.mem)
                return CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED;
            break;
        case FAKE_OP_HOST_FN:
        case FAKE_OP_RECORD:
        case FAKE_OP_WAIT:
        case FAKE_OP_PREFETCH:
            break;
        }
    }
    *error_node = NULL;
    return CU_GRAPH_EXEC_UPDATE_SUCCESS;
}

/* Both variants: fills info (when the arguments get that far). */
static CUresult update_locked(CUgraphExec he, CUgraph hg, CUgraphExecUpdateResultInfo *info)
{
    memset(info, 0, sizeof *info);
    info->result = CU_GRAPH_EXEC_UPDATE_ERROR;
    struct CUgraphExec_st *x = NULL;
    struct CUgraph_st *g = NULL;
    CUresult r = exec_arg_locked(he, true, &x);
    if (r == CUDA_SUCCESS)
        r = graph_arg_locked(hg, true, &g);
    if (r != CUDA_SUCCESS)
        return r;
    if (g->capture)
        return CUDA_ERROR_ILLEGAL_STATE; /* its capture is not over */
    info->result = compare_bodies(x->body, g->body, &info->errorNode, &info->errorFromNode);
    if (info->result != CU_GRAPH_EXEC_UPDATE_SUCCESS)
        return CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE; /* the executable graph is unchanged */
    /* Future launches replay the new parameters; queued ones keep theirs. */
    fake_graph_body *old = x->body;
    x->body = body_ref(g->body);
    body_unref_locked(old);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuGraphExecUpdate(CUgraphExec hGraphExec, CUgraph hGraph,
                                        CUgraphNode *hErrorNode_out,
                                        CUgraphExecUpdateResult *updateResult_out)
{
    FAKE_ENTER(cuGraphExecUpdate);
    if (!hErrorNode_out || !updateResult_out)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    CUgraphExecUpdateResultInfo info;
    CUresult r = update_locked(hGraphExec, hGraph, &info);
    *hErrorNode_out = info.errorNode;
    *updateResult_out = info.result;
    return fake_leave(r);
}

CUresult CUDAAPI fake_cuGraphExecUpdate_v2(CUgraphExec hGraphExec, CUgraph hGraph,
                                           CUgraphExecUpdateResultInfo *resultInfo)
{
    FAKE_ENTER(cuGraphExecUpdate_v2);
    if (!resultInfo)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    return fake_leave(update_locked(hGraphExec, hGraph, resultInfo));
}

/* --- control and queries --------------------------------------------------------------------- */

CUS_API size_t cus_fake_active_captures(void)
{
    fake_lock();
    fake_ensure_configured_locked();
    size_t n = fake_captures_active;
    fake_unlock();
    return n;
}

/* --- the area -------------------------------------------------------------------------------- */

static const fake_capture_hooks graph_capture_hooks = {
    .enqueue_locked = graph_enqueue_locked,
    .sync_check_locked = graph_sync_check_locked,
    .record_locked = graph_record_locked,
    .wait_locked = graph_wait_locked,
    .stream_destroyed_locked = graph_stream_destroyed_locked,
};

/* Reset first (the nodes hold memory and launch payloads); torn down first
 * (its captures and graphs, before the memory). */
static const fake_area graph_area = {
    .name = "graph",
    .reset_order = 0,
    .teardown_order = 0,
    .reset_locked = graph_reset_locked,
    .unsafe_call_locked = graph_unsafe_call_locked,
    .doom_locked = graph_doom_locked,
    .destroy_doomed_locked = graph_destroy_doomed_locked,
};

__attribute__((constructor)) static void graph_register(void)
{
    fake_capture_ops = &graph_capture_hooks;
    fake_area_register(&graph_area);
}
