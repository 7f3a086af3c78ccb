/* Graphs built by hand (cuscope/graph_nodes.h): cus_graph_create, the typed
 * adds, dependencies, node lists, and the per-node updates of executable
 * graphs. Each add checks its arguments as the matching stream call does,
 * makes room for what the node will keep before the driver call (so that a
 * success cannot fail afterwards), and on success takes a reference to each
 * object not kept yet: the graph's keep list, with a pointer set beside it,
 * holds each object once however many nodes use it. Updates hand what the
 * node now uses to the executable graph (graph_exec.c), which retires what
 * it used before. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "graph_set_internal.h"
#include "launch_internal.h"
#include "library_internal.h"

/* Defined beside the texture (texture.c). */
CUS_HIDDEN cus_keep_item_ cus_capture_item_texture_(cus_texture *tex);

/* --- the macros' notes ------------------------------------------------------------------------
 * The cus_graph_add_kernel and cus_graph_exec_set_kernel macros turn each
 * cus_buffer * and cus_texture * argument into its handle with the
 * functions below, evaluated just before the call on the same thread, which
 * note the object here; the call takes the notes. Plain pointers: the caller
 * holds the objects for the duration of the expression. */

#define NOTES_MAX 64
typedef struct note {
    void *obj;
    bool texture;
} note;
static _Thread_local note notes[NOTES_MAX];
/* initial-exec: read by every add, most with no notes, without a
 * __tls_get_addr call (4 bytes fit the static TLS reserve; the 1 KiB of
 * notes would not, when cuscope is dlopen()ed). */
static _Thread_local unsigned int nnotes __attribute__((tls_model("initial-exec")));

CUS_API CUdeviceptr cus_graph_buffer_arg_(const cus_buffer *buf)
{
    if (buf && nnotes < NOTES_MAX)
        notes[nnotes++] = (note){(void *)buf, false};
    return cus_buffer_ptr(buf);
}

CUS_API CUtexObject cus_graph_texture_arg_(const cus_texture *tex)
{
    if (tex && nnotes < NOTES_MAX)
        notes[nnotes++] = (note){(void *)tex, true};
    return cus_texture_handle(tex);
}

/* What a node keeps: at most one code object, one per argument, and the
 * buffer of a launch configuration's access-policy window. */
typedef struct keep_items {
    cus_keep_item_ items[NOTES_MAX + 2];
    unsigned int n;
} keep_items;

static void items_add(keep_items *k, cus_keep_item_ item)
{
    for (unsigned int i = 0; i < k->n; i++)
        if (k->items[i].obj == item.obj)
            return;
    k->items[k->n++] = item;
}

/* Takes the notes (of the macro's call, if taken is true) into k. */
static void take_notes(keep_items *k, bool taken)
{
    unsigned int n = nnotes;
    nnotes = 0;
    for (unsigned int i = 0; taken && i < n; i++)
        items_add(k, notes[i].texture ? cus_capture_item_texture_(notes[i].obj)
                                      : cus_capture_item_buffer_(notes[i].obj));
}

/* --- what a graph keeps -------------------------------------------------------------------------- */

static const void **set_slot(const void **set, size_t capacity, const void *obj)
{
    size_t mask = capacity - 1;
    for (size_t i = cus_pointer_hash_(obj) & mask;; i = (i + 1) & mask)
        if (!set[i] || set[i] == obj)
            return &set[i];
}

static bool set_has(const cus_graph *g, const void *obj)
{
    return g->kept_set_count && *set_slot(g->kept_set, g->kept_set_capacity, obj);
}

static void set_put(cus_graph *g, const void *obj)
{
    const void **slot = set_slot(g->kept_set, g->kept_set_capacity, obj);
    if (!*slot) {
        *slot = obj;
        g->kept_set_count++;
    }
}

/* Room for n more objects in g's keep list and set (the set is filled from
 * the list the first time: a captured graph's objects); false when out of
 * host memory. */
static bool keep_room_locked(cus_graph *g, size_t n)
{
    keep_list *k = &g->keep;
    if (k->count + n > k->capacity) {
        size_t want = k->capacity ? k->capacity : 16;
        while (want < k->count + n)
            want *= 2;
        keep_entry *grown = cus_realloc_(k->items, want * sizeof *grown);
        if (!grown)
            return false;
        k->items = grown;
        k->capacity = want;
    }
    if ((k->count + n) * 2 > g->kept_set_capacity) {
        size_t want = g->kept_set_capacity ? g->kept_set_capacity : 32;
        while (want < (k->count + n) * 2)
            want *= 2;
        const void **set = cus_calloc_(want, sizeof *set);
        if (!set)
            return false;
        free(g->kept_set);
        g->kept_set = set;
        g->kept_set_capacity = want;
        g->kept_set_count = 0;
        for (size_t i = 0; i < k->count; i++)
            set_put(g, k->items[i].obj);
    }
    return true;
}

static cus_status keep_reserve_locked(cus_graph *g, size_t n, const char *function)
{
    if (keep_room_locked(g, n))
        return CUS_SUCCESS;
    return cus_fail_(CUS_ERROR_OUT_OF_HOST_MEMORY, function, NULL,
                     "keeping what the node uses alive with its graph");
}

bool cus_graph_keep_reserve_locked_(cus_graph *root, size_t n)
{
    return keep_room_locked(root, n);
}

bool cus_graph_keep_adopt_locked_(cus_graph *root, keep_list *from)
{
    if (!keep_room_locked(root, from->count))
        return false;
    for (size_t i = 0; i < from->count; i++) {
        keep_entry e = from->items[i];
        if (set_has(root, e.obj)) {
            e.release(e.obj); /* held already: by a node added by hand */
            continue;
        }
        set_put(root, e.obj);
        root->keep.items[root->keep.count++] = e;
    }
    from->count = 0;
    return true;
}

/* Keeps the items (room reserved): a reference to each not kept yet. */
static void keep_commit_locked(cus_graph *g, const keep_items *k)
{
    for (unsigned int i = 0; i < k->n; i++) {
        const cus_keep_item_ *it = &k->items[i];
        if (set_has(g, it->obj))
            continue;
        set_put(g, it->obj);
        g->keep.items[g->keep.count++] = (keep_entry){it->ref(it->obj), it->release};
    }
}

/* --- the common path of an add ------------------------------------------------------------------- */

#define INLINE_DEPS CUS_GRAPH_INLINE_NODES_

cus_status cus_graph_node_handles_(const cus_graph *g, const cus_graph_node *nodes, size_t n,
                                   const char *noun, CUgraphNode *inline_h, CUgraphNode **out,
                                   CUgraphNode **heap, const char *function)
{
    *heap = NULL;
    *out = NULL;
    if (!n)
        return CUS_SUCCESS;
    if (!nodes)
        return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL,
                         "invalid argument: %zu nodes and no array", n);
    CUgraphNode *h = inline_h;
    if (n > CUS_GRAPH_INLINE_NODES_) {
        h = *heap = cus_malloc_(n * sizeof *h);
        if (!h)
            return cus_fail_(CUS_ERROR_OUT_OF_HOST_MEMORY, function, NULL, "a list of %zu nodes",
                             n);
    }
    for (size_t i = 0; i < n; i++) {
        if (!nodes[i].handle || nodes[i].graph != g) {
            free(*heap);
            *heap = NULL;
            return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL, "%s %zu is %s", noun,
                             i + 1, nodes[i].handle ? "a node of another graph" : "no node");
        }
        h[i] = nodes[i].handle;
    }
    *out = h;
    return CUS_SUCCESS;
}

static cus_status deps_of(const cus_graph *g, const cus_graph_node *deps, size_t ndeps,
                          CUgraphNode *inline_deps, CUgraphNode **out, CUgraphNode **heap,
                          const char *function)
{
    return cus_graph_node_handles_(g, deps, ndeps, "dependency", inline_deps, out, heap, function);
}

static void unlock_if(pthread_mutex_t **m)
{
    if (*m)
        pthread_mutex_unlock(*m);
}

/* One add: `add` makes the driver call (named call) with the graph's
 * context current, under its lock; what k names is kept on success and the
 * node written to *out. */
typedef CUresult (*add_fn)(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                           const void *arg);

static cus_status add_node_also(cus_graph *g, const cus_graph_node *deps, size_t ndeps,
                                cus_graph_node *out, const keep_items *k, const char *call,
                                add_fn add, const void *arg, pthread_mutex_t *also,
                                const bool *left, const char *function)
{
    CUgraphNode inline_deps[INLINE_DEPS], *hdeps, *heap;
    CUS_TRY(deps_of(g, deps, ndeps, inline_deps, &hdeps, &heap, function));
    __attribute__((unused)) cus_autofree CUgraphNode *owned = heap;
    /* A body graph's nodes are its root's: the root's lock and keep list. */
    cus_graph *root = cus_graph_root_(g);
    /* Two graphs' locks (a child's): taken in address order. */
    pthread_mutex_t *first = &root->lock, *second = also == &root->lock ? NULL : also;
    if (second && (uintptr_t)second < (uintptr_t)first)
        first = second, second = &root->lock;
    CUS_LOCK_SCOPE(first);
    pthread_mutex_t *second_held = second ? cus_mutex_lock_(second) : NULL;
    __attribute__((cleanup(unlock_if), unused)) pthread_mutex_t *second_scope = second_held;
    CUS_TRY(cus_graph_idle_locked_(root, function));
    CUS_TRY(keep_reserve_locked(root, k ? k->n : 0, function));
    CUgraphNode node = NULL;
    cus_status st = CUS_CALL_IN_AS(function, g->ctx, call, add(&node, g->handle, hdeps, ndeps, arg));
    /* A failure that left a node in the graph (*left) keeps what it uses. */
    if (k && (!st || (left && *left)))
        keep_commit_locked(root, k);
    if (st)
        return st;
    if (out)
        *out = (cus_graph_node){node, g};
    return CUS_SUCCESS;
}

cus_status cus_graph_add_raw_(cus_graph *g, const cus_graph_node *deps, size_t ndeps,
                              cus_graph_node *out, const char *call, cus_graph_add_fn_ add,
                              const void *arg, const char *function)
{
    return add_node_also(g, deps, ndeps, out, NULL, call, add, arg, NULL, NULL, function);
}

cus_status cus_graph_add_keeping_(cus_graph *g, const cus_graph_node *deps, size_t ndeps,
                                  cus_graph_node *out, const cus_keep_item_ *items,
                                  unsigned int n, const char *call, cus_graph_add_fn_ add,
                                  const void *arg, const char *function)
{
    keep_items k = {.n = 0};
    for (unsigned int i = 0; i < n && k.n < NOTES_MAX + 1; i++)
        items_add(&k, items[i]);
    return add_node_also(g, deps, ndeps, out, &k, call, add, arg, NULL, NULL, function);
}

static cus_status add_node(cus_graph *g, const cus_graph_node *deps, size_t ndeps,
                           cus_graph_node *out, const keep_items *k, const char *call, add_fn add,
                           const void *arg, const char *function)
{
    return add_node_also(g, deps, ndeps, out, k, call, add, arg, NULL, NULL, function);
}

/* The checks every public add starts with. */
#define ADD_PROLOGUE(g)                                                        \
    do {                                                                       \
        CUS_CHECK_ARG(g);                                                      \
        CUS_CHECK_POISON((g)->ctx);                                            \
    } while (0)

static cus_status same_context(CUcontext ctx, const cus_context *c, const char *what,
                               const char *function)
{
    if (c && c->handle != ctx)
        return cus_fail_(CUS_ERROR_CONTEXT_MISMATCH, function, NULL,
                         "the %s belongs to context %p, the graph to %p", what, (void *)c->handle,
                         (void *)ctx);
    return CUS_SUCCESS;
}

/* --- graphs -------------------------------------------------------------------------------- */

CUS_API cus_status cus_graph_create(cus_context *ctx, cus_graph **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(ctx && out);
    CUS_CHECK_POISON(ctx);
    cus_autofree cus_graph *g = cus_calloc_(1, sizeof *g);
    if (!g)
        return CUS_FAIL(CUS_ERROR_OUT_OF_HOST_MEMORY, NULL, "allocating a graph");
    CUgraph h = NULL;
    CUS_IN_CONTEXT(ctx, "cuGraphCreate", cus_drv_.cuGraphCreate_(&h, 0));
    cus_refcount_init_(&g->refs);
    pthread_mutex_init(&g->lock, NULL);
    g->handle = h;
    g->ctx = cus_context_ref(ctx);
    *out = cus_steal(&g);
    return CUS_SUCCESS;
}

typedef CUresult (*list_fn)(CUgraph g, CUgraphNode *nodes, size_t *count);

static CUresult get_nodes(CUgraph g, CUgraphNode *nodes, size_t *count)
{
    return cus_drv_.cuGraphGetNodes_(g, nodes, count);
}

static CUresult get_roots(CUgraph g, CUgraphNode *nodes, size_t *count)
{
    return cus_drv_.cuGraphGetRootNodes_(g, nodes, count);
}

/* The driver's list, wrapped: the handles written into the caller's array
 * and widened there (cus_graph_nodes_widen_), no scratch array. */
static cus_status list_nodes(cus_graph *g, cus_graph_node *nodes, size_t *count, list_fn list,
                             const char *call, const char *function)
{
    CUS_CHECK_POISON(g->ctx);
    size_t n = nodes ? *count : 0;
    size_t got = n;
    CUresult r;
    {
        CUS_GRAPH_LOCK_IDLE_(g, function);
        r = list(g->handle, n ? (CUgraphNode *)(void *)nodes : NULL, &got);
    }
    if (r)
        return cus_context_driver_fail_(g->ctx, r, function, call);
    cus_graph_nodes_widen_(nodes, n < got ? n : got, n, g);
    *count = got;
    return CUS_SUCCESS;
}

CUS_API cus_status cus_graph_nodes(cus_graph *graph, cus_graph_node *nodes, size_t *count)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(graph && count);
    return list_nodes(graph, nodes, count, get_nodes, "cuGraphGetNodes", __func__);
}

CUS_API cus_status cus_graph_root_nodes(cus_graph *graph, cus_graph_node *nodes, size_t *count)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(graph && count);
    return list_nodes(graph, nodes, count, get_roots, "cuGraphGetRootNodes", __func__);
}

CUS_API cus_status cus_graph_add_dependencies(cus_graph *graph, const cus_graph_node *from,
                                              const cus_graph_node *to, size_t n)
{
    CUS_API_ENTER();
    ADD_PROLOGUE(graph);
    CUS_CHECK_ARG((from && to) || !n);
    if (!n)
        return CUS_SUCCESS;
    CUgraphNode inline_from[INLINE_DEPS], inline_to[INLINE_DEPS], *hf, *ht, *heap_f, *heap_t;
    CUS_TRY(deps_of(graph, from, n, inline_from, &hf, &heap_f, __func__));
    __attribute__((unused)) cus_autofree CUgraphNode *owned_f = heap_f;
    CUS_TRY(deps_of(graph, to, n, inline_to, &ht, &heap_t, __func__));
    __attribute__((unused)) cus_autofree CUgraphNode *owned_t = heap_t;
    CUS_GRAPH_LOCK_IDLE_(graph, __func__);
    CUS_IN_CONTEXT(graph->ctx, "cuGraphAddDependencies",
                   cus_drv_.cuGraphAddDependencies_(graph->handle, hf, ht, n));
    return CUS_SUCCESS;
}

/* --- kernel nodes -------------------------------------------------------------------------- */

/* The argument check of cus_launch (launch.c), against a layout. */
static cus_status check_args(const char *name, bool known, unsigned int nparams,
                             const size_t *param_sizes, unsigned int nargs, void **args,
                             const size_t *sizes, const char *function)
{
    if (nargs && !args)
        return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL, "arguments missing");
    if (!sizes || !known)
        return CUS_SUCCESS;
    return cus_layout_mismatch_(name, nparams, param_sizes, nargs, sizes, function);
}

static CUDA_KERNEL_NODE_PARAMS kernel_params(cus_dim3 grid, cus_dim3 block,
                                             unsigned int shared_bytes, void **args)
{
    CUDA_KERNEL_NODE_PARAMS p;
    memset(&p, 0, sizeof p);
    p.gridDimX = grid.x, p.gridDimY = grid.y, p.gridDimZ = grid.z;
    p.blockDimX = block.x, p.blockDimY = block.y, p.blockDimZ = block.z;
    p.sharedMemBytes = shared_bytes;
    p.kernelParams = args;
    return p;
}

/* A kernel (function or library kernel) checked, with what its node keeps:
 * the code object, and the notes when taken. */
typedef struct kernel_ref {
    cus_function *fn;
    cus_kernel *k;
} kernel_ref;

static cus_status kernel_prepare(CUcontext ctx, kernel_ref kr, cus_dim3 grid, cus_dim3 block,
                                 unsigned int shared_bytes, unsigned int nargs, void **args,
                                 const size_t *sizes, bool taken, keep_items *k,
                                 CUDA_KERNEL_NODE_PARAMS *p, const char *function)
{
    k->n = 0;
    take_notes(k, taken);
    if (!kr.fn && !kr.k)
        return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL, "no function or kernel");
    *p = kernel_params(grid, block, shared_bytes, args);
    if (kr.fn) {
        cus_function *fn = kr.fn;
        if (fn->ctx_handle != ctx)
            return cus_fail_(CUS_ERROR_CONTEXT_MISMATCH, function, NULL,
                             "%s: the function belongs to context %p, the graph to %p", fn->name,
                             (void *)fn->ctx_handle, (void *)ctx);
        CUS_TRY(check_args(fn->name, fn->layout_known, fn->nparams, fn->param_sizes, nargs, args,
                           sizes, function));
        p->func = fn->handle;
        items_add(k, cus_capture_item_module_(fn->module));
    } else {
        cus_kernel *kn = kr.k;
        if (sizes)
            CUS_TRY(cus_kernel_layout_in_(kn, ctx, function));
        CUS_TRY(check_args(kn->key.name, cus_kernel_layout_known(kn), kn->nparams,
                           kn->param_sizes, nargs, args, sizes, function));
        p->kern = kn->handle;
        p->ctx = ctx;
        items_add(k, cus_capture_item_library_(kn->library));
    }
    return CUS_SUCCESS;
}

static CUresult add_kernel_call(CUgraphNode *node, CUgraph g, const CUgraphNode *deps,
                                size_t ndeps, const void *arg)
{
    return cus_drv_.cuGraphAddKernelNode_(node, g, deps, ndeps, arg);
}

/* A kernel node with attributes: added, then given each attribute; if the
 * driver refuses one, the node is removed again (left, when even that
 * fails: the node stays, and keeps what it uses). */
typedef struct kernel_ex_call {
    const CUDA_KERNEL_NODE_PARAMS *params;
    const CUlaunchAttribute *attrs;
    unsigned int nattrs;
    int refused; /* the attribute the driver refused, or -1 */
    bool left;
} kernel_ex_call;

static CUresult add_kernel_ex_call(CUgraphNode *node, CUgraph g, const CUgraphNode *deps,
                                   size_t ndeps, const void *arg)
{
    kernel_ex_call *c = (kernel_ex_call *)(uintptr_t)arg; /* its out fields */
    CUresult r = cus_drv_.cuGraphAddKernelNode_(node, g, deps, ndeps, c->params);
    for (unsigned int i = 0; r == CUDA_SUCCESS && i < c->nattrs; i++) {
        r = cus_drv_.cuGraphKernelNodeSetAttribute_(*node, c->attrs[i].id, &c->attrs[i].value);
        if (r != CUDA_SUCCESS) {
            c->refused = (int)i;
            c->left = cus_drv_.cuGraphDestroyNode_(*node) != CUDA_SUCCESS;
        }
    }
    return r;
}

static cus_status add_kernel_ex(cus_graph *g, const cus_graph_node *deps, size_t ndeps,
                                cus_graph_node *out, const char *name, keep_items *k,
                                const CUDA_KERNEL_NODE_PARAMS *p, const cus_launch_config *config,
                                const char *function)
{
    CUlaunchAttribute attrs[CUS_LAUNCH_ATTRS_MAX_];
    kernel_ex_call c = {.params = p, .attrs = attrs, .refused = -1};
    CUS_TRY(cus_graph_kernel_attrs_(g->ctx, name, config, attrs, &c.nattrs, function));
    if (config->access_policy.buffer)
        items_add(k, cus_capture_item_buffer_(config->access_policy.buffer));
    cus_status st = add_node_also(g, deps, ndeps, out, k, "cuGraphAddKernelNode",
                                  add_kernel_ex_call, &c, NULL, &c.left, function);
    if (st && c.refused >= 0)
        return cus_fail_(st, function, "cuGraphKernelNodeSetAttribute",
                         "%s: the driver refused the node's %s (attribute %d of %u); the node %s",
                         name, cus_launch_attribute_name_(attrs[c.refused].id), c.refused + 1,
                         c.nattrs,
                         c.left ? "could not be removed (cuGraphDestroyNode failed): it stays "
                                  "in the graph, with what it uses kept"
                                : "was removed");
    return st;
}

static cus_status add_kernel(cus_graph *g, const cus_graph_node *deps, size_t ndeps,
                             cus_graph_node *out, kernel_ref kr, cus_dim3 grid, cus_dim3 block,
                             unsigned int shared_bytes, unsigned int nargs, void **args,
                             const size_t *sizes, bool taken, const cus_launch_config *config,
                             const char *function)
{
    keep_items k;
    CUDA_KERNEL_NODE_PARAMS p;
    if (!g) {
        nnotes = 0;
        return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL, "invalid argument: graph");
    }
    CUS_TRY(kernel_prepare(g->ctx->handle, kr, grid, block, shared_bytes, nargs, args, sizes,
                           taken, &k, &p, function));
    CUS_CHECK_POISON(g->ctx);
    if (config)
        return add_kernel_ex(g, deps, ndeps, out, kr.fn ? kr.fn->name : kr.k->key.name, &k, &p,
                             config, function);
    return add_node(g, deps, ndeps, out, &k, "cuGraphAddKernelNode", add_kernel_call, &p,
                    function);
}

/* The same with a launch configuration (NULL: CUS_ERROR_INVALID_ARGUMENT,
 * the notes dropped). */
static cus_status add_kernel_config(cus_graph *g, const cus_graph_node *deps, size_t ndeps,
                                    cus_graph_node *out, kernel_ref kr,
                                    const cus_launch_config *config, unsigned int nargs,
                                    void **args, const size_t *sizes, bool taken,
                                    const char *function)
{
    if (!config) {
        nnotes = 0;
        return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL,
                         "invalid argument: no launch configuration");
    }
    return add_kernel(g, deps, ndeps, out, kr, config->grid, config->block, config->shared_bytes,
                      nargs, args, sizes, taken, config, function);
}

CUS_API cus_status cus_graph_add_kernel_node(cus_graph *graph, const cus_graph_node *deps,
                                             size_t ndeps, cus_graph_node *out, cus_function *fn,
                                             cus_dim3 grid, cus_dim3 block,
                                             unsigned int shared_bytes, unsigned int nargs,
                                             void **args, const size_t *sizes)
{
    CUS_API_ENTER();
    return add_kernel(graph, deps, ndeps, out, (kernel_ref){fn, NULL}, grid, block, shared_bytes,
                      nargs, args, sizes, false, NULL, __func__);
}

CUS_API cus_status cus_graph_add_library_kernel_node(cus_graph *graph, const cus_graph_node *deps,
                                                     size_t ndeps, cus_graph_node *out,
                                                     cus_kernel *k, cus_dim3 grid,
                                                     cus_dim3 block, unsigned int shared_bytes,
                                                     unsigned int nargs, void **args,
                                                     const size_t *sizes)
{
    CUS_API_ENTER();
    return add_kernel(graph, deps, ndeps, out, (kernel_ref){NULL, k}, grid, block, shared_bytes,
                      nargs, args, sizes, false, NULL, __func__);
}

/* The macro's entries drop the notes whatever happens (also when refused
 * in a host function, before the frame). */
#define MACRO_ENTER(name)                                                      \
    do {                                                                       \
        if (CUS_UNLIKELY(cus_in_host_fn_ || cus_is_forked_()))                 \
            nnotes = 0;                                                        \
    } while (0);                                                               \
    CUS_API_ENTER_AS(name)

CUS_API cus_status cus_graph_add_kernel_site_(cus_graph *graph, const cus_graph_node *deps,
                                              size_t ndeps, cus_graph_node *out, cus_function *fn,
                                              cus_dim3 grid, cus_dim3 block,
                                              unsigned int shared_bytes, unsigned int nargs,
                                              void **args, const size_t *sizes)
{
    MACRO_ENTER("cus_graph_add_kernel");
    return add_kernel(graph, deps, ndeps, out, (kernel_ref){fn, NULL}, grid, block, shared_bytes,
                      nargs, args, sizes, true, NULL, "cus_graph_add_kernel");
}

CUS_API cus_status cus_graph_add_library_kernel_site_(cus_graph *graph,
                                                      const cus_graph_node *deps, size_t ndeps,
                                                      cus_graph_node *out, cus_kernel *k,
                                                      cus_dim3 grid, cus_dim3 block,
                                                      unsigned int shared_bytes,
                                                      unsigned int nargs, void **args,
                                                      const size_t *sizes)
{
    MACRO_ENTER("cus_graph_add_kernel");
    return add_kernel(graph, deps, ndeps, out, (kernel_ref){NULL, k}, grid, block, shared_bytes,
                      nargs, args, sizes, true, NULL, "cus_graph_add_kernel");
}

CUS_API cus_status cus_graph_add_kernel_node_ex(cus_graph *graph, const cus_graph_node *deps,
                                                size_t ndeps, cus_graph_node *out,
                                                cus_function *fn, const cus_launch_config *config,
                                                unsigned int nargs, void **args,
                                                const size_t *sizes)
{
    CUS_API_ENTER();
    return add_kernel_config(graph, deps, ndeps, out, (kernel_ref){fn, NULL}, config, nargs, args,
                             sizes, false, __func__);
}

CUS_API cus_status cus_graph_add_library_kernel_node_ex(cus_graph *graph,
                                                        const cus_graph_node *deps, size_t ndeps,
                                                        cus_graph_node *out, cus_kernel *k,
                                                        const cus_launch_config *config,
                                                        unsigned int nargs, void **args,
                                                        const size_t *sizes)
{
    CUS_API_ENTER();
    return add_kernel_config(graph, deps, ndeps, out, (kernel_ref){NULL, k}, config, nargs, args,
                             sizes, false, __func__);
}

CUS_API cus_status cus_graph_add_kernel_ex_site_(cus_graph *graph, const cus_graph_node *deps,
                                                 size_t ndeps, cus_graph_node *out,
                                                 cus_function *fn, const cus_launch_config *config,
                                                 unsigned int nargs, void **args,
                                                 const size_t *sizes)
{
    MACRO_ENTER("cus_graph_add_kernel_ex");
    return add_kernel_config(graph, deps, ndeps, out, (kernel_ref){fn, NULL}, config, nargs, args,
                             sizes, true, "cus_graph_add_kernel_ex");
}

CUS_API cus_status cus_graph_add_library_kernel_ex_site_(cus_graph *graph,
                                                         const cus_graph_node *deps, size_t ndeps,
                                                         cus_graph_node *out, cus_kernel *k,
                                                         const cus_launch_config *config,
                                                         unsigned int nargs, void **args,
                                                         const size_t *sizes)
{
    MACRO_ENTER("cus_graph_add_kernel_ex");
    return add_kernel_config(graph, deps, ndeps, out, (kernel_ref){NULL, k}, config, nargs, args,
                             sizes, true, "cus_graph_add_kernel_ex");
}

/* --- copy and memset nodes ----------------------------------------------------------------- */

/* [offset, offset + bytes) inside buf, as memory.c checks it; 0 bytes is
 * refused (a node must do something). */
static cus_status check_range(const cus_buffer *buf, size_t offset, size_t bytes,
                              const char *function)
{
    size_t size = cus_buffer_size(buf);
    if (!bytes)
        return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL,
                         "a copy or fill node of 0 bytes");
    if (offset > size || bytes > size - offset)
        return cus_fail_(CUS_ERROR_OUT_OF_RANGE, function, NULL,
                         "%zu bytes at offset %zu of a %zu-byte buffer", bytes, offset, size);
    return CUS_SUCCESS;
}

/* A 1-D copy, as the runtime's cudaGraphAddMemcpyNode1D makes it. */
static CUDA_MEMCPY3D copy_params(CUmemorytype dst_type, uintptr_t dst, CUmemorytype src_type,
                                 uintptr_t src, size_t bytes)
{
    CUDA_MEMCPY3D p;
    memset(&p, 0, sizeof p);
    p.dstMemoryType = dst_type;
    p.srcMemoryType = src_type;
    if (dst_type == CU_MEMORYTYPE_HOST)
        p.dstHost = (void *)dst;
    else
        p.dstDevice = (CUdeviceptr)dst;
    if (src_type == CU_MEMORYTYPE_HOST)
        p.srcHost = (const void *)src;
    else
        p.srcDevice = (CUdeviceptr)src;
    p.dstPitch = p.srcPitch = bytes;
    p.dstHeight = p.srcHeight = 1;
    p.WidthInBytes = bytes;
    p.Height = p.Depth = 1;
    return p;
}

/* A copy node's parameters: p, and the context they run in. */
typedef struct copy_arg {
    CUDA_MEMCPY3D p;
    CUcontext ctx;
} copy_arg;

static CUresult add_copy_call(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                              const void *arg)
{
    const copy_arg *a = arg;
    return cus_drv_.cuGraphAddMemcpyNode_(node, g, deps, ndeps, &a->p, a->ctx);
}

/* The operands of a copy: buffers (kept, checked) and host memory. */
static cus_status copy_prepare(CUcontext ctx, cus_buffer *dst, size_t dst_offset,
                               const void *host_src, cus_buffer *src, size_t src_offset,
                               void *host_dst, size_t bytes, keep_items *k, copy_arg *a,
                               const char *function)
{
    k->n = 0;
    if (!dst && !host_dst)
        return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL, "invalid argument: no destination");
    if (!src && !host_src)
        return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL, "invalid argument: no source");
    if (dst) {
        CUS_TRY(same_context(ctx, cus_buffer_context(dst), "destination buffer", function));
        CUS_TRY(check_range(dst, dst_offset, bytes, function));
        items_add(k, cus_capture_item_buffer_(dst));
    }
    if (src) {
        CUS_TRY(same_context(ctx, cus_buffer_context(src), "source buffer", function));
        CUS_TRY(check_range(src, src_offset, bytes, function));
        items_add(k, cus_capture_item_buffer_(src));
    }
    a->p = copy_params(dst ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST,
                       dst ? (uintptr_t)(cus_buffer_ptr(dst) + dst_offset) : (uintptr_t)host_dst,
                       src ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST,
                       src ? (uintptr_t)(cus_buffer_ptr(src) + src_offset) : (uintptr_t)host_src,
                       bytes);
    a->ctx = ctx;
    return CUS_SUCCESS;
}

static cus_status add_copy(cus_graph *g, const cus_graph_node *deps, size_t ndeps,
                           cus_graph_node *out, cus_buffer *dst, size_t dst_offset,
                           const void *host_src, cus_buffer *src, size_t src_offset,
                           void *host_dst, size_t bytes, const char *function)
{
    keep_items k;
    copy_arg a;
    CUS_TRY(copy_prepare(g->ctx->handle, dst, dst_offset, host_src, src, src_offset, host_dst,
                         bytes, &k, &a, function));
    return add_node(g, deps, ndeps, out, &k, "cuGraphAddMemcpyNode", add_copy_call, &a, function);
}

CUS_API cus_status cus_graph_add_copy_to_device(cus_graph *graph, const cus_graph_node *deps,
                                                size_t ndeps, cus_graph_node *out,
                                                cus_buffer *dst, size_t dst_offset,
                                                const void *src, size_t bytes)
{
    CUS_API_ENTER();
    ADD_PROLOGUE(graph);
    CUS_CHECK_ARG(dst && src);
    return add_copy(graph, deps, ndeps, out, dst, dst_offset, src, NULL, 0, NULL, bytes, __func__);
}

CUS_API cus_status cus_graph_add_copy_to_host(cus_graph *graph, const cus_graph_node *deps,
                                              size_t ndeps, cus_graph_node *out, void *dst,
                                              cus_buffer *src, size_t src_offset, size_t bytes)
{
    CUS_API_ENTER();
    ADD_PROLOGUE(graph);
    CUS_CHECK_ARG(dst && src);
    return add_copy(graph, deps, ndeps, out, NULL, 0, NULL, src, src_offset, dst, bytes, __func__);
}

CUS_API cus_status cus_graph_add_copy_device(cus_graph *graph, const cus_graph_node *deps,
                                             size_t ndeps, cus_graph_node *out, cus_buffer *dst,
                                             size_t dst_offset, cus_buffer *src,
                                             size_t src_offset, size_t bytes)
{
    CUS_API_ENTER();
    ADD_PROLOGUE(graph);
    CUS_CHECK_ARG(dst && src);
    return add_copy(graph, deps, ndeps, out, dst, dst_offset, NULL, src, src_offset, NULL, bytes,
                    __func__);
}

typedef struct memset_arg {
    CUDA_MEMSET_NODE_PARAMS p;
    CUcontext ctx;
} memset_arg;

static CUresult add_memset_call(CUgraphNode *node, CUgraph g, const CUgraphNode *deps,
                                size_t ndeps, const void *arg)
{
    const memset_arg *a = arg;
    return cus_drv_.cuGraphAddMemsetNode_(node, g, deps, ndeps, &a->p, a->ctx);
}

/* A fill of count elements of width bytes, checked as memory.c's fills. */
static cus_status fill_prepare(CUcontext ctx, cus_buffer *buf, size_t offset,
                               unsigned int value, unsigned int width, size_t count,
                               keep_items *k, memset_arg *a, const char *function)
{
    k->n = 0;
    if (!buf)
        return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL, "invalid argument: buf");
    if (offset % width)
        return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL,
                         "offset %zu is not aligned to %u bytes", offset, width);
    size_t bytes;
    if (__builtin_mul_overflow(count, (size_t)width, &bytes))
        return cus_fail_(CUS_ERROR_OUT_OF_RANGE, function, NULL, "%zu elements overflow", count);
    CUS_TRY(same_context(ctx, cus_buffer_context(buf), "buffer", function));
    CUS_TRY(check_range(buf, offset, bytes, function));
    items_add(k, cus_capture_item_buffer_(buf));
    memset(&a->p, 0, sizeof a->p);
    a->p.dst = cus_buffer_ptr(buf) + offset;
    a->p.pitch = bytes;
    a->p.value = value;
    a->p.elementSize = width;
    a->p.width = count;
    a->p.height = 1;
    a->ctx = ctx;
    return CUS_SUCCESS;
}

static cus_status add_fill(cus_graph *g, const cus_graph_node *deps, size_t ndeps,
                           cus_graph_node *out, cus_buffer *buf, size_t offset,
                           unsigned int value, unsigned int width, size_t count,
                           const char *function)
{
    keep_items k;
    memset_arg a;
    CUS_TRY(fill_prepare(g->ctx->handle, buf, offset, value, width, count, &k, &a, function));
    return add_node(g, deps, ndeps, out, &k, "cuGraphAddMemsetNode", add_memset_call, &a,
                    function);
}

#define DEFINE_FILL_NODE(bits, T)                                              \
    CUS_API cus_status cus_graph_add_fill_u##bits(cus_graph *graph, const cus_graph_node *deps, \
                                                  size_t ndeps, cus_graph_node *out,           \
                                                  cus_buffer *buf, size_t offset, T value,     \
                                                  size_t count)                \
    {                                                                          \
        CUS_API_ENTER();                                                       \
        ADD_PROLOGUE(graph);                                                   \
        return add_fill(graph, deps, ndeps, out, buf, offset, value, (bits) / 8, count, __func__); \
    }
DEFINE_FILL_NODE(8, uint8_t)
DEFINE_FILL_NODE(16, uint16_t)
DEFINE_FILL_NODE(32, uint32_t)

/* --- host functions, events, empty and child nodes ------------------------------------------ */

typedef cus_graph_host_record_ host_record;

void CUDA_CB cus_graph_host_trampoline_(void *record)
{
    cus_host_record_run_(((const host_record *)record)->head);
}

static void *ref_identity(void *p)
{
    return p;
}

static CUresult add_host_call(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                              const void *arg)
{
    CUDA_HOST_NODE_PARAMS p = {cus_graph_host_trampoline_, (void *)arg};
    return cus_drv_.cuGraphAddHostNode_(node, g, deps, ndeps, &p);
}

CUS_API cus_status cus_graph_add_host_fn(cus_graph *graph, const cus_graph_node *deps,
                                         size_t ndeps, cus_graph_node *out, cus_host_fn fn,
                                         void *user_data)
{
    CUS_API_ENTER();
    ADD_PROLOGUE(graph);
    CUS_CHECK_ARG(fn);
    cus_autofree host_record *rec = cus_malloc_(sizeof *rec);
    if (!rec)
        return CUS_FAIL(CUS_ERROR_OUT_OF_HOST_MEMORY, NULL, "allocating a host function record");
    *rec = (host_record){{fn, user_data}, NULL};
    /* The graph frees the record (free: graph_exec.c orphans such records
     * when a replay could not be waited for). */
    keep_items k = {.n = 1};
    k.items[0] = (cus_keep_item_){rec, NULL, ref_identity, free};
    CUS_TRY(add_node(graph, deps, ndeps, out, &k, "cuGraphAddHostNode", add_host_call, rec,
                     __func__));
    rec = NULL; /* the graph's */
    return CUS_SUCCESS;
}

static CUresult add_record_call(CUgraphNode *node, CUgraph g, const CUgraphNode *deps,
                                size_t ndeps, const void *arg)
{
    return cus_drv_.cuGraphAddEventRecordNode_(node, g, deps, ndeps, (CUevent)arg);
}

static CUresult add_wait_call(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                              const void *arg)
{
    return cus_drv_.cuGraphAddEventWaitNode_(node, g, deps, ndeps, (CUevent)arg);
}

static cus_status add_event(cus_graph *g, const cus_graph_node *deps, size_t ndeps,
                            cus_graph_node *out, cus_event *ev, bool record, const char *function)
{
    keep_items k = {.n = 1};
    k.items[0] = cus_capture_item_event_(ev);
    return add_node(g, deps, ndeps, out, &k,
                    record ? "cuGraphAddEventRecordNode" : "cuGraphAddEventWaitNode",
                    record ? add_record_call : add_wait_call, ev->handle, function);
}

CUS_API cus_status cus_graph_add_event_record(cus_graph *graph, const cus_graph_node *deps,
                                              size_t ndeps, cus_graph_node *out,
                                              cus_event *event)
{
    CUS_API_ENTER();
    ADD_PROLOGUE(graph);
    CUS_CHECK_ARG(event);
    return add_event(graph, deps, ndeps, out, event, true, __func__);
}

CUS_API cus_status cus_graph_add_event_wait(cus_graph *graph, const cus_graph_node *deps,
                                            size_t ndeps, cus_graph_node *out, cus_event *event)
{
    CUS_API_ENTER();
    ADD_PROLOGUE(graph);
    CUS_CHECK_ARG(event);
    return add_event(graph, deps, ndeps, out, event, false, __func__);
}

static CUresult add_empty_call(CUgraphNode *node, CUgraph g, const CUgraphNode *deps,
                               size_t ndeps, const void *arg)
{
    (void)arg;
    return cus_drv_.cuGraphAddEmptyNode_(node, g, deps, ndeps);
}

CUS_API cus_status cus_graph_add_empty(cus_graph *graph, const cus_graph_node *deps,
                                       size_t ndeps, cus_graph_node *out)
{
    CUS_API_ENTER();
    ADD_PROLOGUE(graph);
    return add_node(graph, deps, ndeps, out, NULL, "cuGraphAddEmptyNode", add_empty_call, NULL,
                    __func__);
}

static CUresult add_child_call(CUgraphNode *node, CUgraph g, const CUgraphNode *deps,
                               size_t ndeps, const void *arg)
{
    return cus_drv_.cuGraphAddChildGraphNode_(node, g, deps, ndeps, (CUgraph)arg);
}

CUS_API cus_status cus_graph_add_child(cus_graph *graph, const cus_graph_node *deps,
                                       size_t ndeps, cus_graph_node *out, cus_graph *child)
{
    CUS_API_ENTER();
    ADD_PROLOGUE(graph);
    CUS_CHECK_ARG(child && child != graph);
    keep_items k = {.n = 1};
    k.items[0] = cus_graph_keep_item_(child);
    /* The child is read by the driver's copy: its lock too. */
    return add_node_also(graph, deps, ndeps, out, &k, "cuGraphAddChildGraphNode", add_child_call,
                         child->handle, &child->lock, NULL, __func__);
}

/* --- per-node updates ------------------------------------------------------------------------- */

/* The checks before an update's own: the node is checked against the graph
 * exec replays, and the context's poison, under exec's lock (graph_exec.c). */
static cus_status exec_node_check(cus_graph_exec *exec, cus_graph_node node, CUcontext *ctx,
                                  const char *function)
{
    if (!exec || !node.handle)
        return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL,
                         exec ? "invalid argument: no node" : "invalid argument: exec");
    *ctx = cus_graph_exec_context_handle_(exec);
    return CUS_SUCCESS;
}

/* Hands k's objects to exec for node, around the driver call `set`. */
static cus_status exec_update(cus_graph_exec *exec, cus_graph_node node, const keep_items *k,
                              const char *call, CUresult (*set)(CUgraphExec h, void *arg),
                              void *arg, const char *function)
{
    return cus_graph_exec_node_update_(exec, node, k->items, (int)k->n, call, set, arg,
                                       function);
}

typedef struct kernel_set {
    CUgraphNode node;
    CUDA_KERNEL_NODE_PARAMS p;
} kernel_set;

static CUresult set_kernel_call(CUgraphExec h, void *arg)
{
    kernel_set *a = arg;
    return cus_drv_.cuGraphExecKernelNodeSetParams_(h, a->node, &a->p);
}

static cus_status set_kernel(cus_graph_exec *exec, cus_graph_node node, kernel_ref kr,
                             cus_dim3 grid, cus_dim3 block, unsigned int shared_bytes,
                             unsigned int nargs, void **args, const size_t *sizes, bool taken,
                             const char *function)
{
    CUcontext ctx = NULL;
    cus_status st = exec_node_check(exec, node, &ctx, function);
    if (st) {
        nnotes = 0;
        return st;
    }
    keep_items k;
    kernel_set a = {node.handle, {0}};
    CUS_TRY(kernel_prepare(ctx, kr, grid, block, shared_bytes, nargs, args, sizes, taken, &k,
                           &a.p, function));
    return exec_update(exec, node, &k, "cuGraphExecKernelNodeSetParams", set_kernel_call, &a,
                       function);
}

CUS_API cus_status cus_graph_exec_set_kernel_node(cus_graph_exec *exec, cus_graph_node node,
                                                  cus_function *fn, cus_dim3 grid,
                                                  cus_dim3 block, unsigned int shared_bytes,
                                                  unsigned int nargs, void **args,
                                                  const size_t *sizes)
{
    CUS_API_ENTER();
    return set_kernel(exec, node, (kernel_ref){fn, NULL}, grid, block, shared_bytes, nargs, args,
                      sizes, false, __func__);
}

CUS_API cus_status cus_graph_exec_set_library_kernel_node(cus_graph_exec *exec,
                                                          cus_graph_node node, cus_kernel *k,
                                                          cus_dim3 grid, cus_dim3 block,
                                                          unsigned int shared_bytes,
                                                          unsigned int nargs, void **args,
                                                          const size_t *sizes)
{
    CUS_API_ENTER();
    return set_kernel(exec, node, (kernel_ref){NULL, k}, grid, block, shared_bytes, nargs, args,
                      sizes, false, __func__);
}

CUS_API cus_status cus_graph_exec_set_kernel_site_(cus_graph_exec *exec, cus_graph_node node,
                                                   cus_function *fn, cus_dim3 grid,
                                                   cus_dim3 block, unsigned int shared_bytes,
                                                   unsigned int nargs, void **args,
                                                   const size_t *sizes)
{
    MACRO_ENTER("cus_graph_exec_set_kernel");
    return set_kernel(exec, node, (kernel_ref){fn, NULL}, grid, block, shared_bytes, nargs, args,
                      sizes, true, "cus_graph_exec_set_kernel");
}

CUS_API cus_status cus_graph_exec_set_library_kernel_site_(cus_graph_exec *exec,
                                                           cus_graph_node node, cus_kernel *k,
                                                           cus_dim3 grid, cus_dim3 block,
                                                           unsigned int shared_bytes,
                                                           unsigned int nargs, void **args,
                                                           const size_t *sizes)
{
    MACRO_ENTER("cus_graph_exec_set_kernel");
    return set_kernel(exec, node, (kernel_ref){NULL, k}, grid, block, shared_bytes, nargs, args,
                      sizes, true, "cus_graph_exec_set_kernel");
}

typedef struct copy_set {
    CUgraphNode node;
    copy_arg a;
} copy_set;

static CUresult set_copy_call(CUgraphExec h, void *arg)
{
    copy_set *s = arg;
    return cus_drv_.cuGraphExecMemcpyNodeSetParams_(h, s->node, &s->a.p, s->a.ctx);
}

static cus_status set_copy(cus_graph_exec *exec, cus_graph_node node, cus_buffer *dst,
                           size_t dst_offset, const void *host_src, cus_buffer *src,
                           size_t src_offset, void *host_dst, size_t bytes, const char *function)
{
    CUcontext ctx = NULL;
    CUS_TRY(exec_node_check(exec, node, &ctx, function));
    keep_items k;
    copy_set s = {node.handle, {{0}, NULL}};
    CUS_TRY(copy_prepare(ctx, dst, dst_offset, host_src, src, src_offset, host_dst, bytes, &k, &s.a,
                         function));
    return exec_update(exec, node, &k, "cuGraphExecMemcpyNodeSetParams", set_copy_call, &s,
                       function);
}

CUS_API cus_status cus_graph_exec_set_copy_to_device(cus_graph_exec *exec, cus_graph_node node,
                                                     cus_buffer *dst, size_t dst_offset,
                                                     const void *src, size_t bytes)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(dst && src);
    return set_copy(exec, node, dst, dst_offset, src, NULL, 0, NULL, bytes, __func__);
}

CUS_API cus_status cus_graph_exec_set_copy_to_host(cus_graph_exec *exec, cus_graph_node node,
                                                   void *dst, cus_buffer *src, size_t src_offset,
                                                   size_t bytes)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(dst && src);
    return set_copy(exec, node, NULL, 0, NULL, src, src_offset, dst, bytes, __func__);
}

typedef struct memset_set {
    CUgraphNode node;
    memset_arg a;
} memset_set;

static CUresult set_memset_call(CUgraphExec h, void *arg)
{
    memset_set *s = arg;
    return cus_drv_.cuGraphExecMemsetNodeSetParams_(h, s->node, &s->a.p, s->a.ctx);
}

CUS_API cus_status cus_graph_exec_set_fill_u32(cus_graph_exec *exec, cus_graph_node node,
                                               cus_buffer *buf, size_t offset, uint32_t value,
                                               size_t count)
{
    CUS_API_ENTER();
    CUcontext ctx = NULL;
    CUS_TRY(exec_node_check(exec, node, &ctx, __func__));
    keep_items k;
    memset_set s = {node.handle, {{0}, NULL}};
    CUS_TRY(fill_prepare(ctx, buf, offset, value, 4, count, &k, &s.a, __func__));
    return exec_update(exec, node, &k, "cuGraphExecMemsetNodeSetParams", set_memset_call, &s,
                       __func__);
}

typedef struct enabled_set {
    CUgraphNode node;
    unsigned int enabled;
} enabled_set;

static CUresult set_enabled_call(CUgraphExec h, void *arg)
{
    enabled_set *s = arg;
    return cus_drv_.cuGraphNodeSetEnabled_(h, s->node, s->enabled);
}

CUS_API cus_status cus_graph_exec_set_node_enabled(cus_graph_exec *exec, cus_graph_node node,
                                                   bool enabled)
{
    CUS_API_ENTER();
    CUcontext ctx = NULL;
    CUS_TRY(exec_node_check(exec, node, &ctx, __func__));
    enabled_set s = {node.handle, enabled};
    return cus_graph_exec_node_update_(exec, node, NULL, -1, "cuGraphNodeSetEnabled",
                                       set_enabled_call, &s, __func__);
}

/* --- per-node changes of a graph (graph_inspect.c's cus_graph_set_*) ------------------------ */

typedef CUresult (*node_set_fn)(CUgraphNode node, const void *arg);

/* The common path: the node checked, the graph idle, room for k, the
 * driver call with the graph's context current, then k kept. What the
 * node used before stays kept (another node may use it, executable graphs
 * made before still replay it). */
static cus_status node_set(cus_graph_node node, const keep_items *k, const char *call,
                           node_set_fn set, const void *arg, const char *function)
{
    cus_graph *g = (cus_graph *)node.graph;
    cus_graph *root = cus_graph_root_(g);
    CUS_LOCK_SCOPE(&root->lock);
    CUS_TRY(cus_graph_idle_locked_(root, function));
    CUS_TRY(keep_reserve_locked(root, k ? k->n : 0, function));
    CUS_IN_CONTEXT_AS(function, g->ctx, call, set(node.handle, arg));
    if (k)
        keep_commit_locked(root, k);
    return CUS_SUCCESS;
}

/* The checks every change starts with: a node with its graph, the
 * context's poison. */
static cus_status node_set_check(cus_graph_node node, const char *function)
{
    if (!node.handle || !node.graph)
        return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL, "invalid argument: %s",
                         node.handle ? "a node without its graph" : "no node");
    const cus_context *ctx = node.graph->ctx;
    if (atomic_load_explicit(&ctx->poison, memory_order_relaxed))
        return cus_context_poisoned_fail_(ctx, function);
    return CUS_SUCCESS;
}

void cus_graph_notes_drop_(void)
{
    nnotes = 0;
}

static CUresult node_kernel_call(CUgraphNode node, const void *arg)
{
    return cus_drv_.cuGraphKernelNodeSetParams_(node, arg);
}

cus_status cus_graph_set_kernel_(cus_graph_node node, cus_function *fn, cus_kernel *k,
                                 cus_dim3 grid, cus_dim3 block, unsigned int shared_bytes,
                                 unsigned int nargs, void **args, const size_t *sizes, bool taken,
                                 const char *function)
{
    cus_status st = node_set_check(node, function);
    if (st) {
        nnotes = 0;
        return st;
    }
    keep_items kk;
    CUDA_KERNEL_NODE_PARAMS p;
    CUS_TRY(kernel_prepare(node.graph->ctx->handle, (kernel_ref){fn, k}, grid, block,
                           shared_bytes, nargs, args, sizes, taken, &kk, &p, function));
    return node_set(node, &kk, "cuGraphKernelNodeSetParams", node_kernel_call, &p, function);
}

static CUresult node_copy_call(CUgraphNode node, const void *arg)
{
    const copy_arg *a = arg;
    return cus_drv_.cuGraphMemcpyNodeSetParams_(node, &a->p);
}

cus_status cus_graph_set_copy_(cus_graph_node node, cus_buffer *dst, size_t dst_offset,
                               const void *host_src, cus_buffer *src, size_t src_offset,
                               void *host_dst, size_t bytes, const char *function)
{
    CUS_TRY(node_set_check(node, function));
    keep_items k;
    copy_arg a;
    CUS_TRY(copy_prepare(node.graph->ctx->handle, dst, dst_offset, host_src, src, src_offset,
                         host_dst, bytes, &k, &a, function));
    return node_set(node, &k, "cuGraphMemcpyNodeSetParams", node_copy_call, &a, function);
}

static CUresult node_memset_call(CUgraphNode node, const void *arg)
{
    const memset_arg *a = arg;
    return cus_drv_.cuGraphMemsetNodeSetParams_(node, &a->p);
}

cus_status cus_graph_set_fill_(cus_graph_node node, cus_buffer *buf, size_t offset,
                               unsigned int value, unsigned int width, size_t count,
                               const char *function)
{
    CUS_TRY(node_set_check(node, function));
    keep_items k;
    memset_arg a;
    CUS_TRY(fill_prepare(node.graph->ctx->handle, buf, offset, value, width, count, &k, &a,
                         function));
    return node_set(node, &k, "cuGraphMemsetNodeSetParams", node_memset_call, &a, function);
}

static CUresult node_host_call(CUgraphNode node, const void *arg)
{
    CUDA_HOST_NODE_PARAMS p = {cus_graph_host_trampoline_, (void *)arg};
    return cus_drv_.cuGraphHostNodeSetParams_(node, &p);
}

cus_status cus_graph_set_host_fn_(cus_graph_node node, cus_host_fn fn, void *user_data,
                                  const char *function)
{
    CUS_TRY(node_set_check(node, function));
    if (!fn)
        return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL, "invalid argument: fn");
    cus_autofree host_record *rec = cus_malloc_(sizeof *rec);
    if (!rec)
        return cus_fail_(CUS_ERROR_OUT_OF_HOST_MEMORY, function, NULL,
                         "allocating a host function record");
    *rec = (host_record){{fn, user_data}, NULL};
    keep_items k = {.n = 1};
    k.items[0] = (cus_keep_item_){rec, NULL, ref_identity, free};
    CUS_TRY(node_set(node, &k, "cuGraphHostNodeSetParams", node_host_call, rec, function));
    rec = NULL; /* the graph's */
    return CUS_SUCCESS;
}

static CUresult node_record_call(CUgraphNode node, const void *arg)
{
    return cus_drv_.cuGraphEventRecordNodeSetEvent_(node, (CUevent)arg);
}

static CUresult node_wait_call(CUgraphNode node, const void *arg)
{
    return cus_drv_.cuGraphEventWaitNodeSetEvent_(node, (CUevent)arg);
}

cus_status cus_graph_set_event_(cus_graph_node node, cus_event *event, bool record,
                                const char *function)
{
    CUS_TRY(node_set_check(node, function));
    if (!event)
        return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL, "invalid argument: event");
    CUS_TRY(same_context(node.graph->ctx->handle, event->ctx, "event", function));
    keep_items k = {.n = 1};
    k.items[0] = cus_capture_item_event_(event);
    return node_set(node, &k,
                    record ? "cuGraphEventRecordNodeSetEvent" : "cuGraphEventWaitNodeSetEvent",
                    record ? node_record_call : node_wait_call, event->handle, function);
}
