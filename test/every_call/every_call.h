/* Every public call, one table: each entry calls one status-returning public
 * function of include/cuscope/ with valid arguments on a world of objects,
 * and test_every_call.c runs the table in every mode in which a call must
 * fail cleanly (see there). The tables are split by header:
 * calls_core.c (driver, status, device, context, stream, event) and
 * calls_data.c (memory, module, function, launch, graph). */
#ifndef CUSCOPE_TEST_EVERY_CALL_H
#define CUSCOPE_TEST_EVERY_CALL_H

#include <stdbool.h>

#include "../harness/env.h"

/* What every entry may use. world_build() makes it with nothing pushed on
 * the calling thread (so that every call that needs ctx current switches to
 * it) and world_free() releases it. An entry must not change the world's
 * objects in a way that a later entry can observe (it may write buffers), and
 * must release everything it makes on every path (cus_autoptr). */
typedef struct world {
    cus_device dev;
    cus_context *ctx;      /* created by cuscope: the one the calls use */
    cus_context *other;    /* a second context on the same device */
    cus_stream *stream;    /* of ctx */
    cus_event *event;      /* of ctx, recorded on stream */
    cus_event *event2;     /* of ctx, recorded on stream after event (timing flags) */
    cus_buffer *buf;       /* 4096 bytes of ctx */
    cus_buffer *buf2;      /* 4096 bytes of ctx */
    cus_buffer *other_buf; /* 4096 bytes of other */
    cus_buffer *managed;   /* 4096 managed bytes of ctx */
    cus_host_buffer *host; /* 4096 pinned bytes of ctx */
    cus_module *mod;       /* every_call_ptx, loaded into ctx */
    cus_function *add;     /* add(u64 ptr, u32 n) */
    cus_function *noargs;  /* noargs() */
    cus_graph *graph;      /* one launch of add, captured on stream */
    cus_graph_exec *exec;  /* graph, instantiated */
    unsigned char bytes[4096]; /* host bytes for copies */
} world;

/* add (.u64, .u32), noargs (), and the globals `counter` (.u32) and `table`
 * (16 .u32), for the module calls. */
extern const char every_call_ptx[];
extern const size_t every_call_ptx_size;

enum {
    /* Allowed inside a host function (the documented exceptions). */
    EC_HOST_FN_OK = 1u << 0,
    /* Does not refuse a poisoned world->ctx (it touches no object of ctx, or
     * it is documented to work on a poisoned one). */
    EC_NOT_POISONED = 1u << 1,
    /* Makes no driver call in any case (pure bookkeeping): skipped by the
     * driver-fault mode. */
    EC_NO_DRIVER = 1u << 2,
    /* Does not refuse in a host function or a poisoned context because it
     * fails earlier for another documented reason; see the entry's note. */
    EC_SKIP_REFUSALS = 1u << 3,
    /* A library bug, described in the note: every mode skips the entry and
     * prints the note, until the bug is fixed. */
    EC_KNOWN_BUG = 1u << 4,
    /* Not refused in a fork() child: it makes no driver call and reads only
     * what this process holds (driver.h's fork rule). */
    EC_FORK_OK = 1u << 5,
    /* Queues work on a stream (a launch, an async copy or fill, a prefetch,
     * an event record, a host function, a graph launch or upload, a stream
     * wait): with every pop failing, the work must still be queued and run
     * (the call returns CUS_SUCCESS, so the caller will not undo it). The
     * failing-pops mode checks that a queuing driver call was made, and runs
     * the entry's `check` after letting the streams finish. */
    EC_QUEUES_WORK = 1u << 6,
    /* Pops the thread's stack other than to end a temporary switch
     * (cus_context_pop, a guard's exit, cus_context_create taking a
     * CUS_CTX_NO_PUSH context off): with every pop failing, that pop fails as
     * a pop the user asked for does (its status, recorded; a guard's exit:
     * the destroy handler), rather than as the closing pop of a switch. */
    EC_POPS_ITSELF = 1u << 7,
    /* The function the entry is named after makes no temporary switch of
     * its own (or is a macro over others): the failing-pops mode does not
     * look for a report naming it; the reports name the calls around it. */
    EC_NO_OWN_SWITCH = 1u << 8,
    /* A release that fails leaves two fake handles, not one: a green
     * context and the retain of its device's primary context, which the
     * driver holds for it; a graph and a body graph of its node. */
    EC_RELEASE_LEAVES_2 = 1u << 9,
};

typedef struct every_call {
    const char *name;             /* the public function it calls */
    cus_status (*call)(world *w); /* CUS_SUCCESS, or the first failing status */
    unsigned flags;
    const char *note;             /* why a flag is set */
    /* EC_QUEUES_WORK: after a successful call and the streams' finishing,
     * whether the work it queued was done (NULL: the queuing driver call
     * is the check). */
    bool (*check)(world *w);
} every_call;

/* An entry's check of what a successful call returned (its out parameters
 * set): a failed check returns EC_OUT_NOT_SET, which every mode reports as a
 * failure, naming the check (ec_out_failure). */
#define EC_OUT_NOT_SET ((cus_status)19999)
extern char ec_out_failure[256];
cus_status ec_out_not_set(const char *entry_function, const char *what);
#define EC_CHECK_OUT(call, cond)                                               \
    do {                                                                       \
        CUS_TRY(call);                                                         \
        if (!(cond))                                                           \
            return ec_out_not_set(__func__, #cond);                            \
    } while (0)
/* The same as the entry's last statement. */
#define EC_RETURN_OUT(call, cond)                                              \
    do {                                                                       \
        EC_CHECK_OUT(call, cond);                                              \
        return CUS_SUCCESS;                                                    \
    } while (0)

/* NULL-name terminated. */
extern const every_call every_calls_core[];
extern const every_call every_calls_data[];
extern const every_call every_calls_pool[]; /* calls_pool.c: pool.h */
extern const every_call every_calls_vmm[]; /* calls_vmm.c: vmm.h, cus_buffer_wrap */
extern const every_call every_calls_program[]; /* calls_program.c: program.h */
extern const every_call every_calls_link[]; /* calls_link.c: link.h */
extern const every_call every_calls_graph_nodes[]; /* calls_graph_nodes.c: graph_nodes.h */
extern const every_call every_calls_green[]; /* calls_green.c: green.h */
extern const every_call every_calls_graph_conditional[]; /* calls_graph_conditional.c: graph_conditional.h */
extern const every_call every_calls_graph_inspect[]; /* calls_graph_inspect.c: graph_inspect.h */

#endif
