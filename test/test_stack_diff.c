/* A differential test of the per-thread context stack (DESIGN.md §3).
 *
 * Several threads each run a seeded pseudo-random sequence of stack
 * operations through cuscope's public API: create (pushed or CUS_CTX_NO_PUSH),
 * push, pop (with and without taking the popped reference), set_current(ctx),
 * set_current(NULL), destroy (dropping the last references), ref and unref,
 * primary retain and release, guard enter and exit (in and out of order), a
 * call that switches temporarily (cus_context_flags), and plain queries. Each
 * thread works on its own contexts and on shared ones: "pinned" contexts that
 * the main thread keeps alive, and "handoff" contexts whose only references
 * are the workers' (the last worker to let go destroys them, on its thread).
 *
 * A model (per thread: an array of slot indices for the stack, a count of the
 * references the thread holds per slot, the guards open) predicts every
 * observable result: the status, cus_context_current() mapped to the slot
 * index, cus_context_stack_depth(), the reports to the destroy handler. The
 * test asserts each, and that the driver's own view agrees after every
 * operation: on the fake, the thread's emulated stack entry by entry
 * (cus_fake_thread_stack_*); on the real driver, cuCtxGetCurrent (resolved
 * from libcuda directly, as cuscope exposes no raw entry points) against the
 * handle on top of the model.
 *
 * Every result goes into a per-thread trace hashed with FNV-1a; the seeds are
 * fixed, and the op mix keeps to results that cuscope defines (no handle
 * values, no fault injection, no driver error codes), so the digests printed
 * ("stack-diff digest thread i: <hex>") are the same on the fake (unit suite)
 * and on a GPU (gpu-stack-diff).
 *
 * Worker threads never call cmocka's asserts: they record the first
 * divergence and stop; the main thread fails the test after joining. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/env.h"

#ifndef CUS_TEST_FAKE
#include <dlfcn.h>
#endif

#define N_THREADS 4
#define OPS_PER_THREAD 26000u
#define SEED 0x5eedc0de2024ull

#define N_OWNED 6
#define N_PRIMARY 3
#define N_PINNED 2
#define N_HANDOFF 2
#define N_SLOTS (N_OWNED + N_PRIMARY + N_PINNED + N_HANDOFF)
#define FIRST_PRIMARY N_OWNED
#define FIRST_PINNED (FIRST_PRIMARY + N_PRIMARY)
#define FIRST_HANDOFF (FIRST_PINNED + N_PINNED)
#define MAX_DEPTH 10
#define MAX_GUARDS 6
#define MAX_HELD 4
/* The worker that leaves contexts pushed when it exits (the thread-exit
 * destructor pops them and reports once). */
#define LEAVER (N_THREADS - 1)

typedef enum slot_kind { SK_OWNED, SK_PRIMARY, SK_PINNED, SK_HANDOFF } slot_kind;

static slot_kind kind_of(int s)
{
    return s < FIRST_PRIMARY ? SK_OWNED
           : s < FIRST_PINNED ? SK_PRIMARY
           : s < FIRST_HANDOFF ? SK_PINNED
                               : SK_HANDOFF;
}

/* The handle identity of a slot: every primary object shares one handle. */
static int handle_key(int s)
{
    return kind_of(s) == SK_PRIMARY ? -1 : s;
}

enum op {
    OP_CREATE_PUSH,
    OP_CREATE_NOPUSH,
    OP_DESTROY,
    OP_PUSH,
    OP_PUSH_NULL,
    OP_POP,
    OP_POP_OUT,
    OP_SET,
    OP_SET_NULL,
    OP_REF,
    OP_UNREF,
    OP_RETAIN_PRIMARY,
    OP_GUARD_ENTER,
    OP_GUARD_ENTER_NULL,
    OP_GUARD_EXIT,
    OP_FLAGS,
    OP_QUERY,
    OP_COUNT_
};

static const char *const op_names[OP_COUNT_] = {
    "create", "create-nopush", "destroy", "push", "push-null", "pop", "pop-out", "set",
    "set-null", "ref", "unref", "retain-primary", "guard-enter", "guard-enter-null",
    "guard-exit", "flags", "query",
};

/* Weights of the random mix. Creates are rare: cuCtxCreate is slow on a GPU. */
static const unsigned op_weights[OP_COUNT_] = {
    3, 3, 5, 150, 5, 120, 60, 80, 60, 60, 70, 30, 100, 5, 100, 40, 20,
};

typedef struct slot {
    cus_context *obj; /* NULL: free (owned, primary) or let go (handoff) */
    unsigned held;    /* references the thread holds, besides its stack entries */
    unsigned guarded; /* references taken for the life of the thread's open guards */
} slot;

typedef struct model_guard {
    cus_context_guard g;
    int slot;
    bool pushed;
} model_guard;

typedef struct worker {
    pthread_t thread;
    int index;
    uint64_t rng;
    cus_device dev;
    slot slots[N_SLOTS];
    int stack[MAX_DEPTH + 2];
    unsigned depth;
    model_guard guards[MAX_GUARDS];
    unsigned nguards;
    /* results */
    uint64_t digest;
    unsigned long ops, random_ops;
    unsigned long per_op[OP_COUNT_];
    unsigned long destroyed, primary_released, handoffs_let_go, unbalanced, mismatches,
        fast_guards;
    unsigned long failures;
    char first[512];
} worker;

static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static int gate_arrived;

static void gate_wait(void)
{
    pthread_mutex_lock(&gate_lock);
    if (++gate_arrived == N_THREADS)
        pthread_cond_broadcast(&gate_cond);
    while (gate_arrived < N_THREADS)
        pthread_cond_wait(&gate_cond, &gate_lock);
    pthread_mutex_unlock(&gate_lock);
}

/* --- the destroy handler: per-thread counts (it runs on the thread that
 * raised the error, the thread-exit destructor included) --------------------- */

static _Thread_local unsigned long tl_reports;
static _Thread_local cus_status tl_last_report;
static atomic_ulong left_pushed_reports;
static atomic_ulong all_reports;

static void diff_handler(const cus_error *e, void *data)
{
    (void)data;
    tl_reports++;
    tl_last_report = e->status;
    atomic_fetch_add(&all_reports, 1);
    if (e->status == CUS_ERROR_CONTEXTS_LEFT_PUSHED)
        atomic_fetch_add(&left_pushed_reports, 1);
    /* Anything the model does not predict is shown (the first few). */
    static atomic_int shown;
    if (e->status != CUS_ERROR_CONTEXT_MISMATCH && e->status != CUS_ERROR_CONTEXTS_LEFT_PUSHED &&
        atomic_fetch_add(&shown, 1) < 8)
        printf("stack-diff: unexpected destroy report: %s\n", e->message);
}

/* --- the driver's own view ----------------------------------------------------- */

#ifndef CUS_TEST_FAKE
typedef CUresult (*get_current_fn)(CUcontext *);
static get_current_fn raw_get_current;

static bool raw_setup(void)
{
    const char *lib = getenv("CUSCOPE_LIBCUDA");
    if (!lib || !*lib)
        lib = "libcuda.so.1";
    void *h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
    if (!h)
        h = dlopen(lib, RTLD_NOW);
    if (!h)
        return false;
    /* As cuscope resolves: cuGetProcAddress_v2 at an explicit ABI version
     * (the only one cuCtxGetCurrent has), the exported symbol otherwise. */
    void *p = NULL, *gpa = dlsym(h, "cuGetProcAddress_v2");
    if (gpa) {
        cus_driver_resolver resolve;
        memcpy(&resolve, &gpa, sizeof gpa);
        CUdriverProcAddressQueryResult qs = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        if (resolve("cuCtxGetCurrent", &p, 4000, CU_GET_PROC_ADDRESS_DEFAULT, &qs) !=
                CUDA_SUCCESS ||
            qs != CU_GET_PROC_ADDRESS_SUCCESS)
            p = NULL;
    }
    if (!p)
        p = dlsym(h, "cuCtxGetCurrent");
    memcpy(&raw_get_current, &p, sizeof p);
    return p != NULL;
}
#endif

/* --- helpers ----------------------------------------------------------------------- */

static uint64_t next_rand(worker *w)
{
    /* splitmix64 */
    uint64_t z = (w->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static unsigned rand_below(worker *w, unsigned n)
{
    return (unsigned)(next_rand(w) % n);
}

static void mix(worker *w, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        w->digest ^= (v >> (8 * i)) & 0xff;
        w->digest *= 0x100000001b3ull;
    }
}

static void diverge(worker *w, unsigned long op_no, const char *what, long got, long want)
{
    if (w->failures++ == 0) {
        snprintf(w->first, sizeof w->first, "op %lu: %s: got %ld, model says %ld", op_no, what,
                 got, want);
        if (getenv("CUS_TEST_VERBOSE"))
            fprintf(stderr, "thread %d: %s\n", w->index, w->first);
    }
}

static unsigned stack_count(const worker *w, int s)
{
    unsigned n = 0;
    for (unsigned i = 0; i < w->depth; i++)
        n += w->stack[i] == s;
    return n;
}

static bool accessible(const worker *w, int s)
{
    return w->slots[s].obj != NULL;
}

/* After the thread dropped references to slot s: if it holds none and s is
 * not on its stack, cuscope dropped the thread's last one. */
static void settle(worker *w, int s)
{
    slot *sl = &w->slots[s];
    if (!sl->obj || kind_of(s) == SK_PINNED || sl->held || sl->guarded || stack_count(w, s))
        return;
    switch (kind_of(s)) {
    case SK_OWNED:
        w->destroyed++;
        break;
    case SK_PRIMARY:
        w->primary_released++;
        break;
    case SK_HANDOFF:
        w->handoffs_let_go++;
        break;
    case SK_PINNED:
        break;
    }
    sl->obj = NULL;
}

static cus_context *top_obj(const worker *w)
{
    return w->depth ? w->slots[w->stack[w->depth - 1]].obj : NULL;
}

/* The slot index + 1 of a context pointer, 0 for NULL, 255 for unknown. */
static int index_of(const worker *w, const cus_context *c)
{
    if (!c)
        return 0;
    for (int s = 0; s < N_SLOTS; s++)
        if (w->slots[s].obj == c)
            return s + 1;
    return 255;
}

/* Picks a random slot satisfying pred, or -1. */
static int pick(worker *w, bool (*pred)(const worker *, int))
{
    int cand[N_SLOTS], n = 0;
    for (int s = 0; s < N_SLOTS; s++)
        if (pred(w, s))
            cand[n++] = s;
    return n ? cand[rand_below(w, (unsigned)n)] : -1;
}

static bool free_owned(const worker *w, int s)
{
    return kind_of(s) == SK_OWNED && !w->slots[s].obj;
}
static bool free_primary(const worker *w, int s)
{
    return kind_of(s) == SK_PRIMARY && !w->slots[s].obj;
}
static bool held_any(const worker *w, int s)
{
    return w->slots[s].obj && w->slots[s].held > 0;
}
static bool held_owned(const worker *w, int s)
{
    return kind_of(s) == SK_OWNED && held_any(w, s);
}
static bool refable(const worker *w, int s)
{
    return accessible(w, s) && w->slots[s].held < MAX_HELD;
}

/* Records the observable state after an op, and checks it against the model
 * and the driver. */
static void observe(worker *w, int op, int arg, cus_status st, cus_status want, long extra,
                    unsigned long reports_before, unsigned long reports_want)
{
    unsigned long op_no = w->ops++;
    w->per_op[op]++;
    if (st != want)
        diverge(w, op_no, op_names[op], st, want);
    else if (want != CUS_SUCCESS && cus_last_status() != want)
        diverge(w, op_no, "last status", cus_last_status(), want);
    unsigned depth = cus_context_stack_depth();
    if (depth != w->depth)
        diverge(w, op_no, "depth", depth, w->depth);
    cus_context *cur = cus_context_current();
    int cur_index = index_of(w, cur);
    if (cur != top_obj(w))
        diverge(w, op_no, "current", cur_index, index_of(w, top_obj(w)));
    unsigned long reports = tl_reports - reports_before;
    if (reports != reports_want)
        diverge(w, op_no, "destroy-handler reports", (long)reports, (long)reports_want);
    if (reports_want && tl_last_report != CUS_ERROR_CONTEXT_MISMATCH)
        diverge(w, op_no, "destroy-handler status", tl_last_report, CUS_ERROR_CONTEXT_MISMATCH);
#ifdef CUS_TEST_FAKE
    int fd = cus_fake_thread_stack_depth();
    if (fd != (int)w->depth) {
        diverge(w, op_no, "fake driver stack depth", fd, w->depth);
    } else {
        for (unsigned i = 0; i < w->depth; i++)
            if (cus_fake_thread_stack_at((int)i) != cus_context_handle(w->slots[w->stack[i]].obj))
                diverge(w, op_no, "fake driver stack entry", (long)i, w->stack[i]);
    }
#else
    CUcontext h = (CUcontext)&h;
    CUresult r = raw_get_current(&h);
    if (r != CUDA_SUCCESS)
        diverge(w, op_no, "cuCtxGetCurrent", r, CUDA_SUCCESS);
    else if (h != cus_context_handle(top_obj(w)))
        diverge(w, op_no, "driver's current context (cuCtxGetCurrent)", index_of(w, cur), -1);
#endif
    mix(w, (uint64_t)op | (uint64_t)(arg + 1) << 8 | (uint64_t)(uint32_t)st << 16);
    mix(w, (uint64_t)cur_index | (uint64_t)depth << 8 | (uint64_t)reports << 16 |
               (uint64_t)(extra + 1) << 24);
}

static bool applicable(worker *w, int op)
{
    switch (op) {
    case OP_CREATE_PUSH:
    case OP_PUSH:
    case OP_GUARD_ENTER:
        if (w->depth >= MAX_DEPTH)
            return false;
        break;
    default:
        break;
    }
    switch (op) {
    case OP_CREATE_PUSH:
    case OP_CREATE_NOPUSH:
        for (int s = 0; s < N_SLOTS; s++)
            if (free_owned(w, s))
                return true;
        return false;
    case OP_DESTROY:
        for (int s = 0; s < N_SLOTS; s++)
            if (held_owned(w, s))
                return true;
        return false;
    case OP_UNREF:
        for (int s = 0; s < N_SLOTS; s++)
            if (held_any(w, s))
                return true;
        return false;
    case OP_RETAIN_PRIMARY:
        for (int s = 0; s < N_SLOTS; s++)
            if (free_primary(w, s))
                return true;
        return false;
    case OP_GUARD_ENTER:
        if (w->nguards >= MAX_GUARDS)
            return false;
        for (int s = 0; s < N_SLOTS; s++)
            if (accessible(w, s))
                return true;
        return false;
    case OP_GUARD_ENTER_NULL:
        return w->nguards < MAX_GUARDS;
    case OP_GUARD_EXIT:
        return w->nguards > 0;
    case OP_REF:
        for (int s = 0; s < N_SLOTS; s++)
            if (refable(w, s))
                return true;
        return false;
    case OP_PUSH:
    case OP_SET:
    case OP_FLAGS:
        for (int s = 0; s < N_SLOTS; s++)
            if (accessible(w, s))
                return true;
        return false;
    case OP_SET_NULL: /* set_current(NULL) on an empty stack is a no-op: allowed */
    default:
        return true;
    }
}

static bool accessible_pred(const worker *w, int s)
{
    return accessible(w, s);
}

static void do_guard_exit(worker *w, unsigned gi)
{
    model_guard mg = w->guards[gi];
    memmove(&w->guards[gi], &w->guards[gi + 1], (w->nguards - gi - 1) * sizeof w->guards[0]);
    w->nguards--;
    unsigned long before = tl_reports;
    unsigned long want_reports = 0;
    if (mg.pushed) {
        if (w->depth == mg.g.depth + 1 && w->stack[w->depth - 1] == mg.slot) {
            w->depth--;
        } else {
            want_reports = 1;
            w->mismatches++;
        }
    }
    cus_context_guard_cleanup_(&mg.g); /* what the scope macros run */
    /* The reference the test took for the guard's lifetime. */
    cus_context_unref(w->slots[mg.slot].obj);
    w->slots[mg.slot].guarded--;
    settle(w, mg.slot);
    observe(w, OP_GUARD_EXIT, mg.slot, CUS_SUCCESS, CUS_SUCCESS, (long)gi, before, want_reports);
}

static void run_op(worker *w, int op)
{
    cus_status st = CUS_SUCCESS, want = CUS_SUCCESS;
    int s = -1;
    long extra = 0;
    unsigned long before = tl_reports;
    switch (op) {
    case OP_CREATE_PUSH:
    case OP_CREATE_NOPUSH: {
        s = pick(w, free_owned);
        cus_context *c = NULL;
        st = cus_context_create(w->dev, op == OP_CREATE_PUSH ? 0 : CUS_CTX_NO_PUSH, &c);
        if (st == CUS_SUCCESS) {
            w->slots[s].obj = c;
            w->slots[s].held = 1;
            if (op == OP_CREATE_PUSH)
                w->stack[w->depth++] = s;
        }
        break;
    }
    case OP_DESTROY:
        s = pick(w, held_owned);
        extra = (long)w->slots[s].held;
        while (w->slots[s].held) {
            cus_context_unref(w->slots[s].obj);
            w->slots[s].held--;
        }
        settle(w, s);
        break;
    case OP_PUSH:
        s = pick(w, accessible_pred);
        st = cus_context_push(w->slots[s].obj);
        w->stack[w->depth++] = s;
        break;
    case OP_PUSH_NULL:
        st = cus_context_push(NULL);
        want = CUS_ERROR_INVALID_ARGUMENT;
        break;
    case OP_POP:
        st = cus_context_pop(NULL);
        if (w->depth) {
            s = w->stack[--w->depth];
            settle(w, s);
        } else {
            want = CUS_ERROR_UNBALANCED_POP;
            w->unbalanced++;
        }
        break;
    case OP_POP_OUT: {
        cus_context *out = (cus_context *)&out;
        st = cus_context_pop(&out);
        if (w->depth) {
            s = w->stack[--w->depth];
            if (out != w->slots[s].obj)
                diverge(w, w->ops, "pop-out's popped context", index_of(w, out), s + 1);
            else
                w->slots[s].held++;
        } else {
            want = CUS_ERROR_UNBALANCED_POP;
            w->unbalanced++;
            if (out != (cus_context *)&out)
                diverge(w, w->ops, "pop-out wrote its out parameter on failure", 1, 0);
        }
        break;
    }
    case OP_SET:
        s = pick(w, accessible_pred);
        st = cus_context_set_current(w->slots[s].obj);
        if (w->depth) {
            int old = w->stack[w->depth - 1];
            w->stack[w->depth - 1] = s;
            settle(w, old);
        } else {
            w->stack[w->depth++] = s;
        }
        break;
    case OP_SET_NULL:
        st = cus_context_set_current(NULL);
        if (w->depth) {
            s = w->stack[--w->depth];
            settle(w, s);
        }
        break;
    case OP_REF:
        s = pick(w, refable);
        if (cus_context_ref(w->slots[s].obj) != w->slots[s].obj)
            diverge(w, w->ops, "cus_context_ref's return", 0, 1);
        w->slots[s].held++;
        break;
    case OP_UNREF:
        s = pick(w, held_any);
        if (cus_context_unref(w->slots[s].obj) != NULL)
            diverge(w, w->ops, "cus_context_unref's return", 1, 0);
        w->slots[s].held--;
        settle(w, s);
        break;
    case OP_RETAIN_PRIMARY: {
        s = pick(w, free_primary);
        cus_context *c = NULL;
        st = cus_context_retain_primary(w->dev, &c);
        if (st == CUS_SUCCESS) {
            w->slots[s].obj = c;
            w->slots[s].held = 1;
            if (cus_context_get_kind(c) != CUS_CONTEXT_PRIMARY)
                diverge(w, w->ops, "kind of a retained primary", cus_context_get_kind(c),
                        CUS_CONTEXT_PRIMARY);
        }
        break;
    }
    case OP_GUARD_ENTER: {
        s = pick(w, accessible_pred);
        cus_context *c = cus_context_ref(w->slots[s].obj); /* kept for the guard's life */
        w->slots[s].guarded++;
        model_guard mg = {.slot = s};
        mg.g = cus_context_guard_enter(c);
        st = mg.g.status;
        bool fast = w->depth && handle_key(w->stack[w->depth - 1]) == handle_key(s);
        mg.pushed = !fast;
        extra = fast;
        if (fast) {
            w->fast_guards++;
            if (mg.g.ctx)
                diverge(w, w->ops, "guard on the current context pushed", 1, 0);
        } else {
            if (mg.g.ctx != c || mg.g.depth != w->depth)
                diverge(w, w->ops, "guard's record of its push", (long)mg.g.depth,
                        (long)w->depth);
            w->stack[w->depth++] = s;
        }
        w->guards[w->nguards++] = mg;
        break;
    }
    case OP_GUARD_ENTER_NULL: {
        cus_context_guard g = cus_context_guard_enter(NULL);
        st = g.status;
        want = CUS_ERROR_INVALID_ARGUMENT;
        if (g.ctx)
            diverge(w, w->ops, "guard for NULL pushed", 1, 0);
        break;
    }
    case OP_GUARD_EXIT: {
        /* Mostly the innermost guard; sometimes one further out (the stack
         * then may not be as that guard left it: a reported mismatch). */
        unsigned gi = rand_below(w, 8) ? w->nguards - 1 : rand_below(w, w->nguards);
        do_guard_exit(w, gi);
        return;
    }
    case OP_FLAGS: {
        s = pick(w, accessible_pred);
        unsigned int flags = 0;
        st = cus_context_flags(w->slots[s].obj, &flags);
        break;
    }
    case OP_QUERY:
    default:
        break;
    }
    observe(w, op, s, st, want, extra, before, 0);
}

static int draw_op(worker *w)
{
    unsigned total = 0;
    for (int i = 0; i < OP_COUNT_; i++)
        total += op_weights[i];
    for (int attempt = 0; attempt < 16; attempt++) {
        unsigned r = rand_below(w, total);
        int op = 0;
        while (r >= op_weights[op])
            r -= op_weights[op++];
        if (applicable(w, op))
            return op;
    }
    return OP_QUERY;
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    gate_wait();
    for (unsigned i = 0; i < OPS_PER_THREAD && !w->failures; i++) {
        run_op(w, draw_op(w));
        w->random_ops++;
    }
    if (w->failures)
        return NULL; /* diverged: the model no longer knows what is safe to release */
    /* Cleanup, through the same checked ops: guards innermost first, then the
     * stack (the leaver keeps some pushed for its thread-exit destructor),
     * then every reference held. */
    while (w->nguards && !w->failures)
        do_guard_exit(w, w->nguards - 1);
    if (w->index == LEAVER) {
        if (!w->depth)
            run_op(w, OP_SET); /* something for the destructor to pop */
    } else {
        while (w->depth && !w->failures)
            run_op(w, OP_POP);
    }
    for (int s = 0; s < N_SLOTS && !w->failures; s++) {
        while (w->slots[s].obj && w->slots[s].held) {
            cus_context_unref(w->slots[s].obj);
            w->slots[s].held--;
            settle(w, s);
            observe(w, OP_UNREF, s, CUS_SUCCESS, CUS_SUCCESS, 0, tl_reports, 0);
        }
    }
    if (w->index == LEAVER && !w->failures && !w->depth)
        diverge(w, w->ops, "leaver's depth at exit", 0, 1);
    return NULL; /* the leaver exits with its stack pushed */
}

static void test_stack_differential(void **state)
{
    (void)state;
    assert_ok(cus_init());
#ifndef CUS_TEST_FAKE
    if (!raw_setup())
        fail_msg("cannot resolve cuCtxGetCurrent from libcuda for the driver's view: %s",
                 dlerror());
#endif
    cus_device dev = {-1};
    assert_ok(cus_device_get(0, &dev));
    cus_set_destroy_error_handler(diff_handler, NULL);
    atomic_store(&left_pushed_reports, 0);
    atomic_store(&all_reports, 0);

    /* Shared contexts, made without touching the main thread's stack. */
    cus_context *pinned[N_PINNED] = {NULL}, *handoff[N_HANDOFF] = {NULL}, *primary = NULL;
    for (int i = 0; i < N_PINNED; i++)
        assert_ok(cus_context_create(dev, CUS_CTX_NO_PUSH, &pinned[i]));
    for (int i = 0; i < N_HANDOFF; i++)
        assert_ok(cus_context_create(dev, CUS_CTX_NO_PUSH, &handoff[i]));
    /* Held for the whole run, so that the workers' retains and releases only
     * count (the driver keeps the primary context alive). */
    assert_ok(cus_context_retain_primary(dev, &primary));
    assert_int_equal(cus_context_stack_depth(), 0);

    static worker w[N_THREADS];
    memset(w, 0, sizeof w);
    gate_arrived = 0;
    for (int t = 0; t < N_THREADS; t++) {
        w[t].index = t;
        w[t].rng = SEED ^ ((uint64_t)(t + 1) * 0x9e3779b97f4a7c15ull);
        w[t].digest = 0xcbf29ce484222325ull;
        w[t].dev = dev;
        for (int i = 0; i < N_PINNED; i++)
            w[t].slots[FIRST_PINNED + i].obj = pinned[i]; /* main's reference */
        for (int i = 0; i < N_HANDOFF; i++) {
            w[t].slots[FIRST_HANDOFF + i].obj = cus_context_ref(handoff[i]);
            w[t].slots[FIRST_HANDOFF + i].held = 1;
        }
    }
    for (int i = 0; i < N_HANDOFF; i++)
        handoff[i] = cus_context_unref(handoff[i]); /* now only the workers hold them */

    for (int t = 0; t < N_THREADS; t++)
        assert_int_equal(pthread_create(&w[t].thread, NULL, worker_main, &w[t]), 0);
    for (int t = 0; t < N_THREADS; t++)
        assert_int_equal(pthread_join(w[t].thread, NULL), 0);

    unsigned long total = 0, per_op[OP_COUNT_] = {0};
    unsigned long destroyed = 0, released = 0, let_go = 0, unbalanced = 0, mismatches = 0,
                  fast = 0;
    for (int t = 0; t < N_THREADS; t++) {
        printf("stack-diff digest thread %d: %016llx (%lu ops)\n", t,
               (unsigned long long)w[t].digest, w[t].ops);
        total += w[t].ops;
        for (int i = 0; i < OP_COUNT_; i++)
            per_op[i] += w[t].per_op[i];
        destroyed += w[t].destroyed;
        released += w[t].primary_released;
        let_go += w[t].handoffs_let_go;
        unbalanced += w[t].unbalanced;
        mismatches += w[t].mismatches;
        fast += w[t].fast_guards;
    }
    printf("stack-diff: %lu ops on %d threads (%u random each, then cleanup):", total,
           N_THREADS, OPS_PER_THREAD);
    for (int i = 0; i < OP_COUNT_; i++)
        printf(" %s %lu%s", op_names[i], per_op[i], i + 1 < OP_COUNT_ ? "," : "\n");
    printf("stack-diff: owned contexts destroyed by a worker %lu, primary objects released %lu, "
           "handoff contexts let go %lu, unbalanced pops %lu, guard mismatches %lu, guards on "
           "the current context %lu\n",
           destroyed, released, let_go, unbalanced, mismatches, fast);
    for (int t = 0; t < N_THREADS; t++)
        if (w[t].failures)
            fail_msg("thread %d diverged from the model (%lu failure(s)); first at %s", t,
                     w[t].failures, w[t].first);
    assert_true(total >= 100000);
    assert_true(destroyed > 0 && unbalanced > 0 && mismatches > 0 && fast > 0);
    /* Every worker but the leaver lets go of both (the leaver may still have
     * one pushed when it exits). */
    assert_true(let_go >= (unsigned long)(N_THREADS - 1) * N_HANDOFF);
    /* The leaver's thread-exit destructor reported once; nothing else
     * reported but the guards' mismatches. */
    assert_int_equal(atomic_load(&left_pushed_reports), 1);
    assert_int_equal(atomic_load(&all_reports), mismatches + 1);
#ifdef CUS_TEST_FAKE
    /* The handoff contexts died with their last worker reference. */
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_CONTEXT), N_PINNED);
    assert_int_equal(cus_fake_primary_retain_count(0), 1);
#endif
    for (int i = 0; i < N_PINNED; i++)
        pinned[i] = cus_context_unref(pinned[i]);
    primary = cus_context_unref(primary);
    assert_int_equal(cus_context_stack_depth(), 0);
}

int main(void)
{
    env_require_driver_or_skip();
    setvbuf(stdout, NULL, _IOLBF, 0);
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_stack_differential),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
