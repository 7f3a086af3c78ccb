/* The per-thread context stack: a mirror of what cuscope pushed on the
 * driver's stack, whose entries hold references, and the scoped guards. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct mirror {
    cus_context **items;
    unsigned int depth, cap;
} mirror;

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
        cus_context *c = m->items[--m->depth];
        sync_top(m);
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
    m->items[m->depth++] = cus_context_ref(ctx);
    cus_tls_top_ = ctx->handle;
}

CUcontext cus_context_mirror_top_(void)
{
    return cus_tls_top_;
}

CUresult cus_context_enter_(const cus_context *ctx, cus_context_scope_ *scope)
{
    scope->pushed = NULL;
    if (CUS_LIKELY(ctx->handle == cus_tls_top_))
        return CUDA_SUCCESS;
    CUresult r = cus_drv_.cuCtxPushCurrent_(ctx->handle);
    if (r == CUDA_SUCCESS)
        scope->pushed = ctx->handle;
    return r;
}

cus_status cus_context_leave_(cus_context_scope_ *scope)
{
    if (!scope->pushed)
        return CUS_SUCCESS;
    CUcontext got = NULL;
    CUresult r = cus_drv_.cuCtxPopCurrent_(&got);
    if (r) /* once more: a failed pop would leave the caller's context switched */
        r = cus_drv_.cuCtxPopCurrent_(&got);
    if (r)
        return (cus_status)r;
    if (got != scope->pushed) {
        /* Someone pushed behind our back: give them their context back. */
        if (got)
            (void)cus_drv_.cuCtxPushCurrent_(got);
        return CUS_ERROR_CONTEXT_MISMATCH;
    }
    scope->pushed = NULL;
    return CUS_SUCCESS;
}

void cus_context_leave_failed_too_(cus_status left, const char *function)
{
    cus_destroy_error_(left, function, "cuCtxPopCurrent",
                       "restoring the stack after a failed call: the context it made current "
                       "stays pushed on the driver's stack");
}

CUS_API cus_status cus_context_push(cus_context *ctx)
{
    CUS_CHECK_NOT_IN_HOST_FN();
    CUS_CHECK_ARG(ctx);
    CUS_CHECK_POISON(ctx);
    CUS_TRY(cus_context_mirror_reserve_(__func__));
    CUresult r = cus_drv_.cuCtxPushCurrent_(ctx->handle);
    if (r)
        return cus_context_driver_fail_(ctx, r, __func__, "cuCtxPushCurrent");
    cus_context_mirror_push_(ctx);
    return CUS_SUCCESS;
}

/* Pops the mirror's top through the driver. Records nothing: the callers
 * decide where an error goes (the thread's last error, or the destroy
 * handler). *detail receives the driver call that failed, if any. */
static cus_status pop_top(cus_context **popped, CUcontext *driver_top, const char **failed_call)
{
    mirror *m = tls_mirror;
    if (!m || !m->depth)
        return CUS_ERROR_UNBALANCED_POP;
    cus_context *top = m->items[m->depth - 1];
    CUcontext got = NULL;
    CUresult r = cus_drv_.cuCtxPopCurrent_(&got);
    if (r) {
        *failed_call = "cuCtxPopCurrent";
        return (cus_status)r;
    }
    if (got != top->handle) {
        *driver_top = got;
        CUresult back = got ? cus_drv_.cuCtxPushCurrent_(got) : CUDA_SUCCESS;
        *failed_call = back ? "cuCtxPushCurrent" : "cuCtxPopCurrent";
        return CUS_ERROR_CONTEXT_MISMATCH;
    }
    m->depth--;
    sync_top(m);
    if (popped)
        *popped = top; /* the mirror's reference moves to the caller */
    else
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
    CUS_CHECK_NOT_IN_HOST_FN();
    CUcontext driver_top = NULL;
    const char *failed_call = NULL;
    cus_status st = pop_top(popped, &driver_top, &failed_call);
    if (CUS_UNLIKELY(st))
        return pop_fail(st, __func__, driver_top, failed_call, false);
    return CUS_SUCCESS;
}

CUS_API cus_status cus_context_set_current(cus_context *ctx)
{
    CUS_CHECK_NOT_IN_HOST_FN();
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
    cus_context *old = NULL;
    if (ctx) {
        if (m->depth)
            old = m->items[m->depth - 1];
        else
            m->depth = 1;
        m->items[m->depth - 1] = cus_context_ref(ctx);
    } else if (m && m->depth) {
        old = m->items[--m->depth];
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
    if (CUS_UNLIKELY(cus_is_forked_())) {
        g.status = cus_refuse_call_("cus_context_push");
        return g;
    }
    /* A real switch, inline: with room on the mirror and nothing unusual, a
     * driver push, the mirror entry and its reference; anything else goes
     * through cus_context_push. */
    mirror *m = tls_mirror;
    if (CUS_LIKELY(m && m->depth < m->cap && !cus_in_host_fn_ &&
                   !atomic_load_explicit(&ctx->poison, memory_order_relaxed))) {
        CUresult r = cus_drv_.cuCtxPushCurrent_(ctx->handle);
        if (CUS_LIKELY(r == CUDA_SUCCESS)) {
            g.depth = m->depth;
            cus_refcount_inc_(&ctx->refs);
            m->items[m->depth++] = ctx;
            cus_tls_top_ = ctx->handle;
            g.ctx = ctx;
            return g;
        }
        g.status = cus_context_driver_fail_(ctx, r, "cus_context_push", "cuCtxPushCurrent");
        return g;
    }
    g.depth = cus_context_stack_depth();
    g.status = cus_context_push(ctx);
    if (g.status == CUS_SUCCESS)
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
            m->depth--;
            cus_context_unref(ctx);
        }
        return;
    }
    if (!m || m->depth != guard->depth + 1 || m->items[m->depth - 1] != ctx) {
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
    /* The common case inline: the driver pops the guard's context. */
    CUcontext got = NULL;
    CUresult r = cus_drv_.cuCtxPopCurrent_(&got);
    if (CUS_LIKELY(r == CUDA_SUCCESS && got == ctx->handle)) {
        m->depth--;
        cus_tls_top_ = m->depth ? m->items[m->depth - 1]->handle : NULL;
        cus_context_unref(ctx);
        return;
    }
    CUcontext driver_top = NULL;
    const char *failed_call = NULL;
    cus_status st;
    if (r == CUDA_SUCCESS) {
        /* Someone pushed behind our back: give them their context back. */
        driver_top = got;
        CUresult back = got ? cus_drv_.cuCtxPushCurrent_(got) : CUDA_SUCCESS;
        failed_call = back ? "cuCtxPushCurrent" : "cuCtxPopCurrent";
        st = CUS_ERROR_CONTEXT_MISMATCH;
    } else {
        /* Once more, as cus_context_leave_ does: a failed pop would leave the
         * caller's context switched. */
        st = pop_top(NULL, &driver_top, &failed_call);
    }
    if (CUS_UNLIKELY(st))
        pop_fail(st, __func__, driver_top, failed_call, true);
}
