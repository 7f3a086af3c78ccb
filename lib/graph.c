/* Graphs (cus_graph): a captured graph (made by cus_capture_end, capture.c),
 * with the references its keep list holds for the objects its nodes use. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* A driver graph belongs to no context: it outlives its context's death and
 * its poisoning, and cuGraphDestroy needs no current context and works on a
 * poisoned one (the H200's answers, test/rules/expected.txt). So it is
 * destroyed even when the context is poisoned: skipping it would leak it. */
static void graph_destroy(cus_graph *g)
{
    /* A body graph's driver graph is its node's (graph_conditional.c,
     * graph_inspect.c). */
    if (g->handle && !g->parent && !cus_is_forked_()) {
        CUresult r = cus_drv_.cuGraphDestroy_(g->handle);
        if (r)
            cus_destroy_error_((cus_status)r, "cus_graph_unref", "cuGraphDestroy",
                               "destroying graph %p", (void *)g->handle);
    }
    cus_keep_list_release_(&g->keep);
    free(g->kept_set);
    free(g->cond_handles);
    free(g->lent);
    if (g->parent)
        cus_graph_unref(g->parent);
    cus_context_unref(g->ctx);
    pthread_mutex_destroy(&g->lock);
    free(g);
}

CUS_DEFINE_REF_UNREF(cus_graph, graph_destroy)

void cus_graph_body_init_(cus_graph *b, cus_graph *parent, CUgraph h)
{
    cus_refcount_init_(&b->refs);
    pthread_mutex_init(&b->lock, NULL);
    b->handle = h;
    b->ctx = cus_context_ref(parent->ctx);
    b->parent = cus_graph_ref(parent);
}

static void *graph_keep_ref(void *p)
{
    return cus_graph_ref(p);
}

static void graph_keep_release(void *p)
{
    (void)cus_graph_unref(p);
}

cus_keep_item_ cus_graph_keep_item_(cus_graph *g)
{
    return (cus_keep_item_){g, &g->refs, graph_keep_ref, graph_keep_release};
}

CUS_API CUgraph cus_graph_handle(const cus_graph *graph)
{
    return graph ? graph->handle : NULL;
}

CUS_API cus_context *cus_graph_context(const cus_graph *graph)
{
    return graph ? graph->ctx : NULL;
}

CUS_API size_t cus_graph_kept_objects(const cus_graph *graph)
{
    return graph ? graph->keep.count : 0;
}

CUS_API cus_status cus_graph_node_count(cus_graph *graph, size_t *count)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(graph && count);
    CUS_CHECK_POISON(graph->ctx);
    size_t n = 0;
    pthread_mutex_t *lock = &cus_graph_root_(graph)->lock;
    pthread_mutex_lock(lock);
    cus_status busy = cus_graph_idle_locked_(cus_graph_root_(graph), __func__);
    CUresult r = busy ? CUDA_SUCCESS : cus_drv_.cuGraphGetNodes_(graph->handle, NULL, &n);
    pthread_mutex_unlock(lock);
    if (busy)
        return busy;
    if (r)
        return cus_context_driver_fail_(graph->ctx, r, __func__, "cuGraphGetNodes");
    *count = n;
    return CUS_SUCCESS;
}
