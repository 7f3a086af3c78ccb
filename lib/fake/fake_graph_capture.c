/* Stream capture: cuStreamBeginCapture, cuStreamEndCapture,
 * cuStreamIsCapturing, cuStreamGetCaptureInfo*,
 * cuThreadExchangeStreamCaptureMode, the hooks of the streams and events, and
 * the capture-unsafe calls; part of the graph area (fake_graph.c has the
 * bodies and graphs, and describes capture). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fake_graph_records.h"

/* --- state ---------------------------------------------------------------------------------- */

static struct fake_capture *captures;
/* Unique over the process, as the driver's ids: not reset by an install. */
static unsigned long long last_capture_id;

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
CUresult fake_graph_legacy_use_locked(const struct CUctx_st *c)
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
    /* A graph captured into stays its owner's, with the nodes captured so
     * far (unsure: the driver's documentation does not say whether an
     * invalidated capture takes them back; cuscope keeps their objects
     * either way). */
    if (!keep_graph && !cap->to_graph)
        fake_graph_graph_release_locked(cap->graph);
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
    if (!fake_graph_node_reserve_locked() ||
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
        /* A programmatic dependent launch captured: its edges from kernel
         * nodes become programmatic ones, as the CUDA Programming Guide
         * describes PDL in captured graphs (not yet confirmed on our GPU:
         * gpu-pdl prints what the driver made). */
        if (proto->kind == FAKE_OP_LAUNCH && fake_module_launch_programmatic(proto->u.launch.exec)) {
            n->edges = calloc(m->ndeps, sizeof *n->edges);
            if (!n->edges) {
                free(n->deps);
                free(n);
                return CUDA_ERROR_OUT_OF_MEMORY;
            }
            for (size_t i = 0; i < m->ndeps; i++)
                if (fake_graph_node_type(m->deps[i]) == CU_GRAPH_NODE_TYPE_KERNEL)
                    n->edges[i] = (fake_edge){1, 0, 1}; /* PORT_PROGRAMMATIC, PROGRAMMATIC */
        }
    }
    n->kind = proto->kind;
    n->u = proto->u;
    n->call = proto->call ? proto->call : fake_g.current_call;
    n->index = b->nnodes;
    n->body = b;
    b->nodes[b->nnodes++] = n;
    fake_graph_node_register_locked(n);
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
            return fake_graph_legacy_use_locked(s->ctx);
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
            fake_graph_body_frees(cap->graph->body, proto->u.mem.mem))
            return CUDA_ERROR_INVALID_VALUE;
        r = capture_add_node_locked(cap, mi, proto);
        if (r == CUDA_SUCCESS)
            cap->graph->body->has_memory_nodes = true;
        return r;
    case FAKE_OP_PREFETCH:
    case FAKE_OP_CONDITIONAL: /* replays only (fake_graph_conditional.c) */
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
        return fake_graph_legacy_use_locked(s->ctx);
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
        return fake_graph_legacy_use_locked(s->ctx);
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

/* A context-wide wait cannot be ordered against work being captured: an
 * H200 refuses cuCtxSynchronize while any stream of the context captures,
 * in every interaction mode and from any thread (test/probes/probes.c,
 * release-ctx-sync-*), and the capture is invalidated. */
static bool graph_context_sync_refused_locked(CUcontext c)
{
    bool refused = false;
    for (struct fake_capture *cap = captures; cap; cap = cap->next) {
        if (cap->invalidated || (CUcontext)cap->origin->ctx != c)
            continue;
        cap->invalidated = true;
        refused = true;
    }
    return refused;
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

static void capture_doom_locked(struct CUctx_st *c, unsigned long ticket)
{
    for (struct fake_capture *cap = captures; cap; cap = cap->next)
        if (cap->origin->ctx == c)
            cap->doomed = ticket;
}

static void capture_destroy_doomed_locked(struct CUctx_st *c, unsigned long ticket)
{
    /* Captures begun in c go with their graph; those that c's streams joined
     * lose them. */
    for (struct fake_capture *cap = captures, *next; cap; cap = next) {
        next = cap->next;
        if (cap->doomed == ticket) {
            if (!cap->to_graph) /* a graph captured into outlives the context */
                cap->graph->ctx_destroyed = true;
            capture_finish_locked(cap, false);
            continue;
        }
        for (size_t i = cap->nmembers; i-- > 1;)
            if (cap->members[i].stream->ctx == c && cap->members[i].stream->torn_down)
                member_remove_locked(cap, i);
    }
}

static void capture_reset_locked(const cus_fake_config *cfg)
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
    if (s->is_default) /* the legacy stream; a per-thread one captures */
        return fake_leave(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    if (s->capture) /* capturing already, or joined to a capture */
        return fake_leave(CUDA_ERROR_ILLEGAL_STATE);
    if (!RESERVE(fake_graph_graphs, fake_graph_graph_count, fake_graph_graph_capacity))
        return fake_leave(CUDA_ERROR_OUT_OF_MEMORY);
    struct fake_capture *cap = calloc(1, sizeof *cap);
    capture_member *members = calloc(4, sizeof *members);
    fake_graph_body *b = cap && members ? fake_graph_body_new_locked() : NULL;
    struct CUgraph_st *g = b ? fake_handle_new_locked(CUS_FAKE_HANDLE_GRAPH, sizeof *g, 0) : NULL;
    if (!g) {
        if (b)
            fake_graph_body_unref_locked(b);
        free(members);
        free(cap);
        return fake_leave(CUDA_ERROR_OUT_OF_MEMORY);
    }
    g->ctx = s->ctx;
    g->body = b;
    b->graph = g;
    g->capture = cap;
    fake_graph_graphs[fake_graph_graph_count++] = g;
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

#ifdef FAKE_HAVE_CAPTURE_TO_GRAPH_ENTRIES
/* A capture whose nodes go into hGraph, the first after deps (the driver's
 * rules: the stream as cuStreamBeginCapture's; the graph not being captured
 * into, the dependencies its nodes, as an add's; edge data optional, and
 * only default edges are emulated, as cuGraphAddDependencies_v2's). */
static CUresult begin_to_graph_locked(CUstream hStream, CUgraph hGraph,
                                      const CUgraphNode *deps, const CUgraphEdgeData *edges,
                                      size_t ndeps, CUstreamCaptureMode mode)
{
    struct CUstream_st *s = NULL;
    CUresult r = fake_stream_arg_locked(hStream, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if (!mode_valid((int)mode))
        return CUDA_ERROR_INVALID_VALUE;
    if (s->is_default)
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (s->capture)
        return CUDA_ERROR_ILLEGAL_STATE;
    /* The graph, not in another capture (ILLEGAL_STATE, a guess: the
     * documentation names no code), and the dependencies, its nodes. */
    struct CUgraph_st *g = NULL;
    CUgraphNode unused;
    r = fake_graph_add_prologue_locked(&unused, hGraph, deps, ndeps, &g);
    if (r != CUDA_SUCCESS)
        return r;
    for (size_t i = 0; edges && i < ndeps; i++) {
        static const CUgraphEdgeData zero;
        if (memcmp(&edges[i], &zero, sizeof zero) != 0)
            return CUDA_ERROR_NOT_SUPPORTED;
    }
    r = fake_graph_detach_execs_locked(g); /* its executable graphs keep what they had */
    if (r != CUDA_SUCCESS)
        return r;
    struct fake_capture *cap = calloc(1, sizeof *cap);
    capture_member *members = calloc(4, sizeof *members);
    struct CUgraphNode_st **first = ndeps ? malloc(ndeps * sizeof *first) : NULL;
    if (!cap || !members || (ndeps && !first)) {
        free(first);
        free(members);
        free(cap);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (ndeps)
        memcpy(first, deps, ndeps * sizeof *first);
    g->capture = cap;
    cap->id = ++last_capture_id;
    cap->mode = mode;
    cap->thread = pthread_self();
    cap->origin = s;
    cap->graph = g;
    cap->to_graph = true;
    cap->members = members;
    cap->members_capacity = 4;
    cap->members[0] = (capture_member){.stream = s, .deps = first, .ndeps = ndeps,
                                       .capacity = ndeps};
    cap->nmembers = 1;
    cap->next = captures;
    captures = cap;
    fake_captures_active++;
    s->capture = cap;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph,
                                                  const CUgraphNode *dependencies,
                                                  const CUgraphEdgeData *dependencyData,
                                                  size_t numDependencies, CUstreamCaptureMode mode)
{
    FAKE_ENTER(cuStreamBeginCaptureToGraph);
    return fake_leave(begin_to_graph_locked(hStream, hGraph, dependencies, dependencyData,
                                            numDependencies, mode));
}
#endif

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

/* Reset first (the captures hold their graphs, whose nodes hold memory and
 * launch payloads); torn down first (its captures, before their graphs
 * (fake_graph.c) and the memory). */
static const fake_area capture_area = {
    .name = "capture",
    .reset_order = 0,
    .teardown_order = 0,
    .reset_locked = capture_reset_locked,
    .unsafe_call_locked = graph_unsafe_call_locked,
    .context_sync_refused_locked = graph_context_sync_refused_locked,
    .doom_locked = capture_doom_locked,
    .destroy_doomed_locked = capture_destroy_doomed_locked,
};

__attribute__((constructor)) static void capture_register(void)
{
    fake_capture_ops = &graph_capture_hooks;
    fake_area_register(&capture_area);
}
