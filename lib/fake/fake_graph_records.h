/* What the graph area's files share (fake_graph.c: bodies, graph and
 * executable graph records, graphs; fake_graph_capture.c: stream capture;
 * fake_graph_exec.c: executable graphs, their launches and updates). Private
 * to the area. */
#ifndef CUSCOPE_LIB_FAKE_GRAPH_RECORDS_H
#define CUSCOPE_LIB_FAKE_GRAPH_RECORDS_H

#include <pthread.h>

#include "fake_event.h"
#include "fake_module.h"


/* --- records ------------------------------------------------------------------------------ */

typedef struct fake_graph_body fake_graph_body;

/* An edge's data (CUgraphEdgeData, 12.3), all zero for a default edge:
 * its upstream port (CU_GRAPH_KERNEL_NODE_PORT_*), downstream port (0), and
 * type (CUgraphDependencyType). */
typedef struct fake_edge {
    unsigned char from_port, to_port, type;
} fake_edge;

struct CUgraphNode_st {
    fake_op_kind kind;
    union fake_op_payload u;      /* the operation, as its call would have queued it */
    const char *call;             /* the entry point that captured it */
    size_t index;                 /* in its body */
    size_t ndeps;
    struct CUgraphNode_st **deps; /* earlier nodes of the same body */
    /* The data of each edge deps[i] -> this node (cuGraphAddDependencies_v2):
     * NULL while every edge is a default one. */
    fake_edge *edges;
    bool released;                /* its body was freed: a tombstone */
    /* Nodes added by hand (fake_graph_nodes.c), and the copies executable
     * graphs make of a body to change it: */
    fake_graph_body *body;         /* the body it is in (NULL: unknown, a tombstone) */
    bool typed;                    /* type below says what it is (else its kind does) */
    CUgraphNodeType type;
    fake_graph_body *child;        /* CHILD_GRAPH: a copy of the child's nodes (a reference) */
    /* CHILD_GRAPH, once cuGraphChildGraphNodeGetGraph asked: the graph
     * record of child (it holds a reference too), released with the node. */
    struct CUgraph_st *child_graph;
    struct CUgraphNode_st *origin; /* in an executable graph's copy: the graph's node */
    bool disabled;                 /* cuGraphNodeSetEnabled in an executable graph */
    struct fake_cond_node *cond;   /* CONDITIONAL: fake_graph_conditional.c's (shared by copies) */
    struct CUgraphNode_st *cloned_from; /* cuGraphClone: the original's node (fake_graph_inspect.c) */
    struct CUctx_st *ctx; /* a copy or memset node added by hand: the context it was given */
};

struct fake_graph_body {
    unsigned long refs; /* the graph, and each executable graph that uses it */
    size_t nnodes, capacity;
    struct CUgraphNode_st **nodes; /* capture order: dependencies first */
    bool has_memory_nodes;
    struct CUgraph_st *graph; /* the graph whose body it is (NULL: an executable graph's copy) */
    size_t slot;              /* its index in fake_graph.c's list of live bodies */
};

struct CUgraph_st {
    fake_handle h; /* kind GRAPH */
    /* The context it was captured in: its executable graphs' (while it
     * lives); the graph outlives it, as on the H200. */
    struct CUctx_st *ctx;
    fake_graph_body *body;        /* NULL once destroyed */
    struct fake_capture *capture; /* being captured: neither instantiable nor destroyable */
    unsigned long execs_live;     /* executable graphs made from it, still alive */
    bool ctx_destroyed;           /* its capture was discarded with its context */
    /* A graph that belongs to a node of parent, which alone destroys it: a
     * conditional node's body, or a child graph node's own graph
     * (cuGraphChildGraphNodeGetGraph; owner: that node, whose child body is
     * this graph's). Neither is instantiated or destroyed on its own, nor
     * takes memory nodes. */
    struct CUgraph_st *parent;
    struct CUgraphNode_st *owner;
    /* fake_graph_conditional.c's lists, so that a launch and a release cost
     * nothing for graphs without conditionals: on a root graph, the handles
     * of it and its bodies that assign a default at each launch; on any, its
     * conditional nodes. */
    struct cond_handle *cond_defaults;
    struct fake_cond_node *cond_nodes;
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
    /* Begun into a graph that existed (cuStreamBeginCaptureToGraph): the
     * graph is its owner's, whatever becomes of the capture. */
    bool to_graph;
};

/* --- state of fake_graph.c ---------------------------------------------------------------- */

/* Every graph since install, for teardown. */
FAKE_HIDDEN extern struct CUgraph_st **fake_graph_graphs;
FAKE_HIDDEN extern size_t fake_graph_graph_count, fake_graph_graph_capacity;
FAKE_HIDDEN extern struct CUgraphExec_st **fake_graph_execs;
FAKE_HIDDEN extern size_t fake_graph_exec_count, fake_graph_exec_capacity;

/* --- helpers of fake_graph.c that the other graph files use ----------------------------- */

/* Grows *array (of elem-byte entries) to hold one more than count. */
FAKE_HIDDEN bool fake_graph_reserve(void **array, size_t count, size_t *capacity, size_t elem);

#define RESERVE(arr, count, cap) fake_graph_reserve((void **)&(arr), (count), &(cap), sizeof *(arr))

/* Room for one more node in the set of every node (false: out
 * of memory, nothing changed); then fake_graph_node_register_locked, which cannot
 * fail, registers a new node. */
FAKE_HIDDEN bool fake_graph_node_reserve_locked(void);
FAKE_HIDDEN void fake_graph_node_register_locked(struct CUgraphNode_st *n);
/* The node record whose handle is hn (a tombstone too), or NULL when no node
 * since install had it; hn is never dereferenced. Constant time. */
FAKE_HIDDEN struct CUgraphNode_st *fake_graph_node_find_locked(CUgraphNode hn);
/* The node of body b (an executable graph's) that stands for the graph's
 * node gn (gn itself, or its copy), or NULL: O(1) unless the graph was
 * re-sorted since b was copied. */
FAKE_HIDDEN struct CUgraphNode_st *fake_graph_body_node_for_locked(const fake_graph_body *b,
                                                                   const struct CUgraphNode_st *gn);

FAKE_HIDDEN fake_graph_body *fake_graph_body_new_locked(void);
FAKE_HIDDEN fake_graph_body *fake_graph_body_ref(fake_graph_body *b);
FAKE_HIDDEN void fake_graph_body_unref_locked(fake_graph_body *b);
/* Whether the body has a free node of m; an allocation node of m. */
FAKE_HIDDEN bool fake_graph_body_frees(const fake_graph_body *b, const fake_mem *m);
FAKE_HIDDEN bool fake_graph_body_allocates(const fake_graph_body *b, const fake_mem *m);
/* Each node but keeper whose child body is b gets copy instead (a
 * reference), so that b, keeper's, can change alone and its node handles
 * stay valid. */
FAKE_HIDDEN void fake_graph_body_share_out_locked(fake_graph_body *b,
                                                  const struct CUgraphNode_st *keeper,
                                                  fake_graph_body *copy);
/* A new graph record of b (whose reference it takes) in ctx, registered
 * for teardown; NULL when out of memory, b untouched. */
FAKE_HIDDEN struct CUgraph_st *fake_graph_record_new_locked(struct CUctx_st *ctx,
                                                           fake_graph_body *b);
/* Destroys a graph record: its handle dies, its body loses a reference. */
FAKE_HIDDEN void fake_graph_graph_release_locked(struct CUgraph_st *g);
FAKE_HIDDEN void fake_graph_exec_release_locked(struct CUgraphExec_st *x);
/* A graph argument: NULL is CUDA_ERROR_INVALID_VALUE; unknown and destroyed
 * graphs are misuse too; its context's state does not matter (a graph
 * belongs to no context). An executable graph's: `healthy`, a poisoned
 * context answers its error; one of a dead context is misuse. */
FAKE_HIDDEN CUresult fake_graph_graph_arg_locked(CUgraph hg, struct CUgraph_st **out);
FAKE_HIDDEN CUresult fake_graph_exec_arg_locked(CUgraphExec he, bool healthy,
                                                struct CUgraphExec_st **out);

/* --- helpers of fake_graph_nodes.c (nodes built by hand) ------------------------------------ */

/* What cuGraphNodeGetType answers for n. */
FAKE_HIDDEN CUgraphNodeType fake_graph_node_type(const struct CUgraphNode_st *n);
/* A deep copy of b (new node records, origin set), NULL when out of memory. */
FAKE_HIDDEN fake_graph_body *fake_graph_body_clone_locked(const fake_graph_body *b);
/* Queues the nodes of b (and of its child graphs, in place) on s for a
 * launch of x; the operations' payloads are copies. */
FAKE_HIDDEN CUresult fake_graph_replay_body_locked(struct CUgraphExec_st *x, const fake_graph_body *b,
                                                   struct CUstream_st *s, CUstream hs);

/* --- for graph inspection and editing (fake_graph_inspect.c) ---------------------------- */

/* fake_graph_nodes.c's node arguments: a known node, not a tombstone (NULL:
 * CUDA_ERROR_INVALID_VALUE); a node of graph g. */
FAKE_HIDDEN CUresult fake_graph_node_arg_locked(CUgraphNode hn, struct CUgraphNode_st **out);
FAKE_HIDDEN CUresult fake_graph_node_of_locked(const struct CUgraph_st *g, CUgraphNode hn,
                                               struct CUgraphNode_st **out);
/* hn, a node of type of a graph (not an executable graph's copy: a misuse,
 * CUDA_ERROR_INVALID_VALUE; another type: CUDA_ERROR_INVALID_VALUE); for
 * an edit, the graph not being captured into (CUDA_ERROR_ILLEGAL_STATE) and
 * its executable graphs detached. */
FAKE_HIDDEN CUresult fake_graph_node_of_type_locked(CUgraphNode hn, CUgraphNodeType type, bool edit,
                                                    struct CUgraphNode_st **out);
/* The live graph whose body holds n (NULL: a node of an executable graph's
 * copy, or of a graph being destroyed). */
FAKE_HIDDEN struct CUgraph_st *fake_graph_of_node_locked(const struct CUgraphNode_st *n);
/* Before g's nodes change (an edit, or a capture into it,
 * fake_graph_capture.c): its executable graphs get a copy of its body. */
FAKE_HIDDEN CUresult fake_graph_detach_execs_locked(struct CUgraph_st *g);
/* The node of executable graph he that stands for the graph's node hn, of
 * type (-1: any), x's own copy (x's body copied first when shared). */
FAKE_HIDDEN CUresult fake_graph_exec_node_locked(CUgraphExec he, CUgraphNode hn,
                                                 CUgraphNodeType type,
                                                 struct CUgraphExec_st **xo,
                                                 struct CUgraphNode_st **out);
/* Edge data (fake_graph_nodes.c): the data of edge deps[j] -> n; whether
 * n has an edge with other data than the default; and a copy of n's edge
 * array for a node of ndeps dependencies (false: out of memory). */
FAKE_HIDDEN fake_edge fake_graph_edge_of(const struct CUgraphNode_st *n, size_t j);
FAKE_HIDDEN bool fake_graph_node_has_edge_data(const struct CUgraphNode_st *n);
FAKE_HIDDEN bool fake_graph_edges_copy(struct CUgraphNode_st *to, const struct CUgraphNode_st *from);
/* fake_graph.c's release of what a node owns (its record stays, a tombstone). */
FAKE_HIDDEN void fake_graph_node_release_locked(struct CUgraphNode_st *n);
/* fake_graph_exec.c's instantiation: with_params allows
 * CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD (cuGraphInstantiateWithParams, which
 * names the call in messages); *result and *err_node (may be NULL) say why
 * it failed, as cuGraphInstantiateWithParams reports. */
FAKE_HIDDEN CUresult fake_graph_instantiate_locked(CUgraphExec *phGraphExec, CUgraph hGraph,
                                                   unsigned long long flags, bool with_params,
                                                   CUgraphInstantiateResult *result,
                                                   CUgraphNode *err_node);

/* --- conditional nodes (fake_graph_conditional.c) ------------------------------------------ */

/* fake_graph_nodes.c's checks of an add (out, graph, dependencies), and
 * its append of a node of type (kind WAIT: no operation of its own); NULL
 * when out of memory. */
FAKE_HIDDEN CUresult fake_graph_add_prologue_locked(CUgraphNode *out, CUgraph hg,
                                                    const CUgraphNode *deps, size_t ndeps,
                                                    struct CUgraph_st **g);
FAKE_HIDDEN struct CUgraphNode_st *fake_graph_node_add_locked(struct CUgraph_st *g,
                                                              const CUgraphNode *deps,
                                                              size_t ndeps, CUgraphNodeType type);
/* Queues n's conditional operation on s for a launch of x. */
FAKE_HIDDEN CUresult fake_graph_conditional_replay_locked(struct CUgraphExec_st *x,
                                                          const struct CUgraphNode_st *n,
                                                          struct CUstream_st *s, CUstream hs);
/* At the start of a launch of x: queues the defaults of the handles of x's
 * graph and its bodies (when any asks for them). */
FAKE_HIDDEN CUresult fake_graph_conditional_launch_locked(struct CUgraphExec_st *x,
                                                          struct CUstream_st *s);
/* g is destroyed: so are its conditional nodes' body graphs. */
FAKE_HIDDEN void fake_graph_conditional_released_locked(struct CUgraph_st *g);

/* --- helpers of fake_graph_capture.c that fake_graph_exec.c uses ------------------------- */

/* A use of c's legacy stream: the captures that block it are invalidated. */
FAKE_HIDDEN CUresult fake_graph_legacy_use_locked(const struct CUctx_st *c);

#endif
