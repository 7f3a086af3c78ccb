/* The per-thread context stack: a mirror of what cuscope pushed on the
 * driver's stack, whose entries hold references, and the scoped guards. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The entries hold references, so that a context never dies while it is
 * current somewhere (docs/design.md). An entry directly above one of the
 * same context borrows the reference of the one below, which cannot leave
 * the stack first: pushing the top's context again (cus_context_push of the
 * current context, the push a library makes around its work on the caller's
 * context) writes no reference count, and neither does its pop. So an entry
 * holds a reference of its own iff the entry below it is another context, or
 * there is none: owns(). */
typedef struct mirror {
    cus_context **items;
    unsigned int depth, cap;
} mirror;

/* Whether entry i holds a reference of its own (see above). */
static inline bool owns(const mirror *m, unsigned int i)
{
    return i == 0 || m->items[i - 1] != m->items[i];
}

/* initial-exec: a direct %fs-relative load instead of a __tls_get_addr call
 * on every stack operation; 16 bytes fit the static TLS reserve even when
 * cuscope is dlopen()ed. */
#define CUS_TLS_FAST __attribute__((tls_model("initial-exec")))
static _Thread_local mirror *tls_mirror CUS_TLS_FAST;
/* The handle on top of tls_mirror, cached so that the "already current" test
 * is one thread-local load and a compare. */
_Thread_local CUcontext cus_tls_top_ CUS_TLS_FAST;

static pthread_key_t mirror_key;
static pthread_once_t mirror_key_once = PTHREAD_ONCE_INIT;
static int mirror_key_error;

static void sync_top(const mirror *m)
{
    cus_tls_top_ = m->depth ? m->items[m->depth - 1]->handle : NULL;
}

/* fork.c's child hook, run on the forking thread (the child's only one). The
 * launch fast path compares a function's context with this cached top, and
 * goes to the driver on a match: cleared, no thread of the child can match (a
 * new thread's is NULL, and every call that could set it fails), so every
 * launch takes the slow path, which checks cus_forked_. The launch path pays
 * nothing for fork. */
static void atfork_child(bool forked)
{
    if (forked)
        cus_tls_top_ = NULL;
}

__attribute__((constructor)) static void register_atfork_child(void)
{
    cus_fork_register_child_hook_(atfork_child);
}

/* Runs when a thread with a mirror exits: releases what it left pushed. No
 * driver pops: the driver's stack for the thread ends with the thread, and by
 * the time this key destructor runs the driver may have dropped it already
 * (on an H200 with driver 580, each pop then fails with
 * CUDA_ERROR_INVALID_CONTEXT). */
static void mirror_thread_exit(void *p)
{
    mirror *m = p;
    unsigned int left = m->depth;
    if (CUS_UNLIKELY(cus_is_forked_()))
        left = 0; /* a fork() child could not have popped them: nothing to report */
    while (m->depth) {
        bool own = owns(m, m->depth - 1);
        cus_context *c = m->items[--m->depth];
        sync_top(m);
        if (own)
            cus_context_unref(c);
    }
    if (left)
        cus_destroy_error_(CUS_ERROR_CONTEXTS_LEFT_PUSHED, "thread exit", NULL,
                           "a thread exited with %u context(s) pushed through cuscope; their "
                           "references were released (the thread's driver stack ends with it)",
                           left);
    free(m->items);
    free(m);
    tls_mirror = NULL;
    cus_tls_top_ = NULL;
}

static void make_key(void)
{
    mirror_key_error = pthread_key_create(&mirror_key, mirror_thread_exit);
}

cus_status cus_context_mirror_reserve_(const char *function)
{
    mirror *m = tls_mirror;
    if (CUS_LIKELY(m && m->depth < m->cap))
        return CUS_SUCCESS;
    if (!m) {
        pthread_once(&mirror_key_once, make_key);
        if (mirror_key_error)
            return cus_fail_(CUS_ERROR_OUT_OF_HOST_MEMORY, function, NULL,
                             "cannot create the thread-exit key for the context stack");
        m = cus_calloc_(1, sizeof *m);
        if (!m || pthread_setspecific(mirror_key, m)) {
            free(m);
            return cus_fail_(CUS_ERROR_OUT_OF_HOST_MEMORY, function, NULL,
                             "allocating the thread's context stack");
        }
        tls_mirror = m;
    }
    unsigned int cap = m->cap ? m->cap * 2 : 8;
    cus_context **items = cus_realloc_(m->items, cap * sizeof *items);
    if (!items)
        return cus_fail_(CUS_ERROR_OUT_OF_HOST_MEMORY, function, NULL,
                         "growing the thread's context stack to %u entries", cap);
    m->items = items;
    m->cap = cap;
    return CUS_SUCCESS;
}

void cus_context_mirror_push_(cus_context *ctx)
{
    mirror *m = tls_mirror;
    m->items[m->depth] = ctx;
    if (owns(m, m->depth))
        cus_context_ref(ctx);
    m->depth++;
    cus_tls_top_ = ctx->handle;
}

/* The driver's pop, expecting `expected` on top: the one place that undoes a
 * push. With `retry`, a failed pop is tried once more (a failed undo would
 * leave the caller's context switched). When the driver's top was another
 * context (pushed behind cuscope's back), that one is pushed back, so the
 * driver's stack is as it was, and CUS_ERROR_CONTEXT_MISMATCH is returned.
 * *failed_call names the driver call that failed; *driver_top receives what
 * the driver popped. Records nothing: the callers decide where errors go. */
static cus_status driver_pop_expect(CUcontext expected, bool retry, CUcontext *driver_top,
                                    const char **failed_call)
{
    CUcontext got = NULL;
    CUresult r = cus_drv_.cuCtxPopCurrent_(&got);
    if (CUS_UNLIKELY(r) && retry)
        r = cus_drv_.cuCtxPopCurrent_(&got);
    if (CUS_UNLIKELY(r)) {
        *failed_call = "cuCtxPopCurrent";
        return (cus_status)r;
    }
    if (CUS_UNLIKELY(got != expected)) {
        *driver_top = got;
        CUresult back = got ? cus_drv_.cuCtxPushCurrent_(got) : CUDA_SUCCESS;
        *failed_call = back ? "cuCtxPushCurrent" : "cuCtxPopCurrent";
        return CUS_ERROR_CONTEXT_MISMATCH;
    }
    return CUS_SUCCESS;
}

static cus_status switch_push(cus_switch_ *sw, CUcontext handle)
{
    if (CUS_LIKELY(handle == cus_tls_top_))
        return CUS_SUCCESS;
    CUresult r = cus_drv_.cuCtxPushCurrent_(handle);
    if (CUS_UNLIKELY(r))
        return cus_context_driver_fail_(sw->ctx, r, sw->function, "cuCtxPushCurrent");
    sw->pushed = handle;
    return CUS_SUCCESS;
}

cus_status cus_switch_enter_(cus_switch_ *sw, cus_context *ctx, const char *function)
{
    sw->ctx = ctx;
    sw->pushed = NULL;
    sw->function = function;
    if (CUS_UNLIKELY(atomic_load_explicit(&ctx->poison, memory_order_relaxed)))
        return cus_context_poisoned_fail_(ctx, function);
    return switch_push(sw, ctx->handle);
}

cus_status cus_switch_enter_handle_(cus_switch_ *sw, CUcontext handle, const char *function)
{
    sw->ctx = NULL;
    sw->pushed = NULL;
    sw->function = function;
    return switch_push(sw, handle);
}

void cus_switch_leave_(cus_switch_ *sw)
{
    CUcontext pushed = sw->pushed;
    if (CUS_LIKELY(!pushed))
        return;
    sw->pushed = NULL;
    CUcontext driver_top = NULL;
    const char *failed_call = NULL;
    cus_status st = driver_pop_expect(pushed, true, &driver_top, &failed_call);
    if (CUS_UNLIKELY(st)) {
        /* Named as the records are: after the public function the user
         * called, also when this switch is a nested one's (cus_stream_create's
         * cus_context_stream_priority_range). */
        const char *function = cus_api_name_(sw->function);
        if (st == CUS_ERROR_CONTEXT_MISMATCH)
            cus_destroy_error_(st, function, failed_call,
                               "restoring the stack after a temporary switch to context %p: the "
                               "driver's top was %p (raw cuCtx* calls on this thread?); %s",
                               (void *)pushed, (void *)driver_top,
                               strcmp(failed_call, "cuCtxPopCurrent") == 0
                                   ? "it was pushed back above the switch's context"
                                   : "pushing it back failed too");
        else
            cus_destroy_error_(st, function, failed_call,
                               "restoring the stack after a temporary switch: context %p stays "
                               "pushed on the driver's stack, above cuscope's mirror; the call "
                               "made under the switch stands",
                               (void *)pushed);
    }
}

/* A push onto the driver's stack and the mirror, with the mirror's reference
 * (borrowed from the entry below when that is ctx too: see mirror): what
 * cus_context_push and a guard's entry do. Inline, so that a guard's entry
 * with room on the mirror costs the driver call, a reference and two stores.
 * Records failures naming `function`. */
static inline __attribute__((always_inline)) cus_status mirror_push(cus_context *ctx,
                                                                    const char *function)
{
    if (CUS_UNLIKELY(atomic_load_explicit(&ctx->poison, memory_order_relaxed)))
        return cus_context_poisoned_fail_(ctx, function);
    mirror *m = tls_mirror;
    if (CUS_UNLIKELY(!m || m->depth == m->cap)) {
        CUS_TRY(cus_context_mirror_reserve_(function));
        m = tls_mirror;
    }
    CUresult r = cus_drv_.cuCtxPushCurrent_(ctx->handle);
    if (CUS_UNLIKELY(r))
        return cus_context_driver_fail_(ctx, r, function, "cuCtxPushCurrent");
    m->items[m->depth] = ctx;
    if (owns(m, m->depth))
        cus_refcount_inc_(&ctx->refs);
    m->depth++;
    cus_tls_top_ = ctx->handle;
    return CUS_SUCCESS;
}

CUS_API cus_status cus_context_push(cus_context *ctx)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(ctx);
    return mirror_push(ctx, __func__);
}

/* Pops the mirror's top through the driver (no retry: a pop the user asked
 * for fails as the driver's did). Records nothing: the callers decide where
 * an error goes (the thread's last error, or the destroy handler).
 * *failed_call receives the driver call that failed, if any. */
static inline cus_status pop_top(cus_context **popped, bool retry, CUcontext *driver_top,
                                 const char **failed_call)
{
    mirror *m = tls_mirror;
    if (CUS_UNLIKELY(!m || !m->depth))
        return CUS_ERROR_UNBALANCED_POP;
    cus_context *top = m->items[m->depth - 1];
    CUS_TRY(driver_pop_expect(top->handle, retry, driver_top, failed_call));
    bool own = owns(m, m->depth - 1);
    m->depth--;
    sync_top(m);
    if (popped) /* the entry's reference moves to the caller; a borrowed one is taken */
        *popped = own ? top : cus_context_ref(top);
    else if (own)
        cus_context_unref(top);
    return CUS_SUCCESS;
}

static cus_status pop_fail(cus_status st, const char *function, CUcontext driver_top,
                           const char *failed_call, bool to_handler)
{
    mirror *m = tls_mirror;
    CUcontext ours = m && m->depth ? m->items[m->depth - 1]->handle : NULL;
    char detail[256];
    if (st == CUS_ERROR_UNBALANCED_POP)
        snprintf(detail, sizeof detail, "this thread has no context pushed through cuscope");
    else if (st == CUS_ERROR_CONTEXT_MISMATCH)
        snprintf(detail, sizeof detail,
                 "the driver's current context was %p but cuscope pushed %p last (raw cuCtx* "
                 "calls on this thread?); %s",
                 (void *)driver_top, (void *)ours,
                 strcmp(failed_call, "cuCtxPopCurrent") == 0
                     ? "the driver's stack was restored"
                     : "restoring the driver's stack failed too");
    else
        snprintf(detail, sizeof detail, "popping context %p", (void *)ours);
    if (st == CUS_ERROR_UNBALANCED_POP || st == CUS_ERROR_CONTEXT_MISMATCH)
        failed_call = st == CUS_ERROR_CONTEXT_MISMATCH ? failed_call : NULL;
    if (to_handler) {
        cus_destroy_error_(st, function, failed_call, "%s", detail);
        return st;
    }
    if (m && m->depth && cus_status_is_sticky(st))
        return cus_context_driver_fail_(m->items[m->depth - 1], (CUresult)st, function,
                                        failed_call);
    return cus_fail_(st, function, failed_call, "%s", detail);
}

CUS_API cus_status cus_context_pop(cus_context **popped)
{
    CUS_API_ENTER();
    CUcontext driver_top = NULL;
    const char *failed_call = NULL;
    cus_status st = pop_top(popped, false, &driver_top, &failed_call);
    if (CUS_UNLIKELY(st))
        return pop_fail(st, __func__, driver_top, failed_call, false);
    return CUS_SUCCESS;
}

CUS_API cus_status cus_context_set_current(cus_context *ctx)
{
    CUS_API_ENTER();
    if (ctx) {
        CUS_CHECK_POISON(ctx);
        CUS_TRY(cus_context_mirror_reserve_(__func__));
    } else {
        CUS_TRY(cus_driver_ensure_());
    }
    CUresult r = cus_drv_.cuCtxSetCurrent_(ctx ? ctx->handle : NULL);
    if (r) {
        if (ctx)
            return cus_context_driver_fail_(ctx, r, __func__, "cuCtxSetCurrent");
        return CUS_FAIL((cus_status)r, "cuCtxSetCurrent", "setting no context current");
    }
    mirror *m = tls_mirror;
    cus_context *old = NULL; /* the reference the replaced or popped top held */
    if (ctx) {
        if (m->depth) {
            unsigned int top = m->depth - 1;
            if (owns(m, top))
                old = m->items[top];
            m->items[top] = ctx;
            if (owns(m, top))
                cus_context_ref(ctx);
        } else {
            m->items[0] = cus_context_ref(ctx);
            m->depth = 1;
        }
    } else if (m && m->depth) {
        if (owns(m, m->depth - 1))
            old = m->items[m->depth - 1];
        m->depth--;
    }
    if (m)
        sync_top(m);
    cus_context_unref(old);
    return CUS_SUCCESS;
}

CUS_API cus_context *cus_context_current(void)
{
    mirror *m = tls_mirror;
    return m && m->depth ? m->items[m->depth - 1] : NULL;
}

CUS_API unsigned int cus_context_stack_depth(void)
{
    mirror *m = tls_mirror;
    return m ? m->depth : 0;
}

CUS_API cus_context_guard cus_context_guard_enter(cus_context *ctx)
{
    cus_context_guard g = {NULL, 0, CUS_SUCCESS};
    if (CUS_UNLIKELY(!ctx)) {
        g.status = CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL, "invalid argument: ctx is NULL");
        return g;
    }
    if (CUS_LIKELY(ctx->handle == cus_tls_top_))
        return g; /* never in a fork() child: its handler cleared the top */
    if (CUS_UNLIKELY(cus_in_host_fn_ || cus_is_forked_())) {
        g.status = cus_refuse_call_(__func__);
        return g;
    }
    mirror *m = tls_mirror;
    g.depth = m ? m->depth : 0;
    g.status = mirror_push(ctx, __func__);
    if (CUS_LIKELY(g.status == CUS_SUCCESS))
        g.ctx = ctx;
    return g;
}

CUS_API void cus_context_guard_exit(cus_context_guard *guard)
{
    if (!guard)
        return;
    cus_context *ctx = guard->ctx;
    if (!ctx)
        return;
    guard->ctx = NULL;
    mirror *m = tls_mirror;
    if (CUS_UNLIKELY(cus_is_forked_())) {
        /* A guard entered before fork(), left in the child: the mirror's
         * entry and its reference go, the driver's stack (the parent's) is
         * not touched, and the top stays cleared (fork.c). */
        if (m && m->depth == guard->depth + 1 && m->items[m->depth - 1] == ctx) {
            bool own = owns(m, m->depth - 1);
            m->depth--;
            if (own)
                cus_context_unref(ctx);
        }
        return;
    }
    if (CUS_UNLIKELY(!m || m->depth != guard->depth + 1 || m->items[m->depth - 1] != ctx)) {
        /* ctx is not dereferenced: with its mirror entry replaced, the
         * guard's context may be gone. */
        cus_destroy_error_(CUS_ERROR_CONTEXT_MISMATCH, __func__, NULL,
                           "leaving a guard for context object %p: the stack is %u deep with %p "
                           "on top, expected %u with the guard's context; the stack was left alone",
                           (void *)ctx, m ? m->depth : 0,
                           (void *)(m && m->depth ? m->items[m->depth - 1]->handle : NULL),
                           guard->depth + 1);
        return;
    }
    /* Retried once, as every undo is: a failed pop would leave the caller's
     * context switched. */
    CUcontext driver_top = NULL;
    const char *failed_call = NULL;
    cus_status st = pop_top(NULL, true, &driver_top, &failed_call);
    if (CUS_UNLIKELY(st))
        pop_fail(st, __func__, driver_top, failed_call, true);
}
