/* tutorial-stream: streams, host functions and deferred destruction
 * (docs/tutorial.md, "3. Stream").
 *
 * A stream with a validated priority, which keeps its context alive; host
 * functions that run in stream order on a driver thread, where cuscope
 * refuses calls and defers destruction; query and synchronize. Without a GPU
 * it runs on the fake driver.
 */
#include <stdbool.h>
#include <stdio.h>

#include <cuscope/cuscope.h>
#include <cuscope/fake.h>

/* What the host functions share with main: written on the driver's thread,
 * read after cus_stream_synchronize(), which orders the two. */
typedef struct host_log {
    int order[2];
    int n;
    cus_stream *stream;   /* borrowed */
    cus_status refused;   /* what a cuscope call inside a host function got */
    cus_event *to_drop;   /* a reference handed to the host function */
} host_log;

static void first(void *p)
{
    host_log *rec = p;
    rec->order[rec->n++] = 1;
}

static void second(void *p)
{
    host_log *rec = p;
    rec->order[rec->n++] = 2;
    /* Host functions must not call CUDA: cuscope refuses, with no driver call. */
    bool done;
    rec->refused = cus_stream_query(rec->stream, &done);
    /* Dropping a last reference is allowed: the destruction (which needs the
     * driver) is deferred to the next synchronizing call. */
    rec->to_drop = cus_event_unref(rec->to_drop);
}

static cus_status run(void)
{
    cus_device dev;
    CUS_TRY(cus_device_get(0, &dev));
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(cus_context_retain_primary(dev, &ctx));

    /* Priorities: numerically greatest <= least; anything outside is refused
     * before the driver sees it. */
    int least = 0, greatest = 0;
    CUS_TRY(cus_context_stream_priority_range(ctx, &least, &greatest));
    printf("stream priorities: %d (greatest) .. %d (least)\n", greatest, least);
    cus_stream *bad = NULL;
    cus_status st = cus_stream_create(ctx, 0, least + 1, &bad);
    printf("priority %d: %s\n  %s\n", least + 1, cus_status_name(st), cus_last_error_message());
    if (st != CUS_ERROR_INVALID_ARGUMENT)
        return CUS_ERROR_INVALID_ARGUMENT;

    cus_autoptr(cus_stream) stream = NULL;
    CUS_TRY(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, greatest, &stream));

    /* The stream holds its context: our reference can go first. */
    ctx = cus_context_unref(ctx);
    cus_context *borrowed = cus_stream_context(stream);
    printf("dropped our context reference; the stream still has context %p\n",
           (void *)cus_context_handle(borrowed));

    cus_autoptr(cus_event) event = NULL;
    CUS_TRY(cus_event_create(borrowed, CU_EVENT_DISABLE_TIMING, &event));
    printf("live cuscope objects: %zu (context, stream, event)\n", cus_debug_live_objects());

    host_log rec = {.stream = stream, .to_drop = cus_steal(&event)};
    CUS_TRY(cus_stream_launch_host_fn(stream, first, &rec));
    CUS_TRY(cus_stream_launch_host_fn(stream, second, &rec));

    /* Not-ready is a result, not an error. */
    bool done = false;
    CUS_TRY(cus_stream_query(stream, &done));
    printf("queued two host functions; done at once: %s\n", done ? "yes" : "not yet");

    CUS_TRY(cus_stream_synchronize(stream));
    printf("after synchronize: they ran in order %d, %d\n", rec.order[0], rec.order[1]);
    printf("  the call inside one got %s\n", cus_status_name(rec.refused));
    printf("  the event it dropped is gone: %zu live objects\n", cus_debug_live_objects());
    if (rec.n != 2 || rec.order[0] != 1 || rec.order[1] != 2 ||
        rec.refused != CUS_ERROR_IN_HOST_FUNCTION || cus_debug_live_objects() != 2)
        return CUS_ERROR_INVALID_ARGUMENT;

    /* The legacy default stream, as an object: it never destroys the
     * driver's stream. */
    cus_autoptr(cus_stream) legacy = NULL;
    CUS_TRY(cus_stream_legacy(borrowed, &legacy));
    CUS_TRY(cus_stream_synchronize(legacy));
    printf("the legacy default stream synchronizes too\n");
    return CUS_SUCCESS; /* legacy, then stream (and with it the context) released */
}

int main(void)
{
    bool on_fake = false;
    if (cus_init() != CUS_SUCCESS) {
        printf("%s\n", cus_last_error_message());
        printf("no GPU here: running on cuscope's fake driver\n");
        if (cus_fake_install(NULL) != CUS_SUCCESS || cus_init() != CUS_SUCCESS) {
            fprintf(stderr, "tutorial-stream: the fake driver failed: %s\n",
                    cus_last_error_message());
            return 1;
        }
        on_fake = true;
    }

    cus_status st = run();
    if (st != CUS_SUCCESS) {
        fprintf(stderr, "tutorial-stream: %s (%s)\n", cus_last_error_message(),
                cus_status_name(st));
        return 1;
    }
    if (cus_debug_live_objects() != 0) {
        fprintf(stderr, "tutorial-stream: %zu objects still alive\n", cus_debug_live_objects());
        return 1;
    }
    if (on_fake && cus_fake_uninstall() != CUS_SUCCESS) {
        fprintf(stderr, "tutorial-stream: %s\n", cus_last_error_message());
        return 1;
    }
    return 0;
}
