/* tutorial-events: events for timing and for ordering across streams
 * (docs/tutorial.md, "6. Events").
 *
 * Stream `producer` fills a buffer between two timing events and records a
 * third; stream `consumer` waits for that one before it copies the buffer
 * back, so it sees the producer's data. An event recorded on a stream of
 * another context is refused. Without a GPU it runs on the fake driver.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <cuscope/cuscope.h>
#include <cuscope/fake.h>

#define N (1u << 20)

static cus_status run(void)
{
    cus_device dev;
    CUS_TRY(cus_device_get(0, &dev));
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(cus_context_retain_primary(dev, &ctx));

    cus_autoptr(cus_host_buffer) host = NULL;
    CUS_TRY(cus_host_buffer_alloc(ctx, N * sizeof(uint32_t), 0, &host));
    uint32_t *out = cus_host_buffer_data(host);
    cus_autoptr(cus_buffer) buf = NULL;
    CUS_TRY(cus_buffer_alloc_n(ctx, uint32_t, N, &buf));

    cus_autoptr(cus_stream) producer = NULL;
    cus_autoptr(cus_stream) consumer = NULL;
    CUS_TRY(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &producer));
    CUS_TRY(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &consumer));

    /* Timing events (the default flags), and one only for ordering. */
    cus_autoptr(cus_event) start = NULL;
    cus_autoptr(cus_event) stop = NULL;
    cus_autoptr(cus_event) ready = NULL;
    CUS_TRY(cus_event_create(ctx, 0, &start));
    CUS_TRY(cus_event_create(ctx, 0, &stop));
    CUS_TRY(cus_event_create(ctx, CU_EVENT_DISABLE_TIMING, &ready));

    CUS_TRY(cus_event_record(start, producer));
    CUS_TRY(cus_buffer_fill_u32_async(buf, 0, 0x5eedu, N, producer));
    CUS_TRY(cus_event_record(stop, producer));
    CUS_TRY(cus_event_record(ready, producer));

    /* The consumer's copy waits for `ready`: without the wait, the two
     * streams (both non-blocking) would be unordered. */
    CUS_TRY(cus_stream_wait_event(consumer, ready));
    CUS_TRY(cus_copy_to_host_async(out, buf, 0, N * sizeof(uint32_t), consumer));

    bool done = false;
    CUS_TRY(cus_event_query(stop, &done)); /* not-ready is a result */
    printf("work queued on two streams; the fill %s\n", done ? "is done already" : "is running");

    CUS_TRY(cus_stream_synchronize(consumer));
    unsigned wrong = 0;
    for (unsigned i = 0; i < N; i++)
        wrong += out[i] != 0x5eedu;
    printf("the consumer saw the producer's data: %s\n", wrong ? "NO" : "yes");
    if (wrong)
        return CUS_ERROR_INVALID_ARGUMENT;

    /* The wait on `ready` covered the producer's work up to that record, so
     * `stop` has completed too. */
    float ms = 0;
    CUS_TRY(cus_event_elapsed_ms(start, stop, &ms));
    printf("filling %u MiB took %.3f ms\n", (unsigned)(N * sizeof(uint32_t) >> 20), ms);

    /* Events belong to a context: recording on another context's stream is
     * refused before the driver is called. */
    cus_autoptr(cus_context) other = NULL;
    CUS_TRY(cus_context_create(dev, CUS_CTX_NO_PUSH, &other));
    cus_autoptr(cus_stream) elsewhere = NULL;
    CUS_TRY(cus_stream_create(other, 0, 0, &elsewhere));
    cus_status st = cus_event_record(ready, elsewhere);
    printf("recording on another context's stream: %s\n  %s\n", cus_status_name(st),
           cus_last_error_message());
    return st == CUS_ERROR_CONTEXT_MISMATCH ? CUS_SUCCESS : CUS_ERROR_INVALID_ARGUMENT;
}

int main(void)
{
    bool on_fake = false;
    if (cus_init() != CUS_SUCCESS) {
        printf("%s\n", cus_last_error_message());
        printf("no GPU here: running on cuscope's fake driver (its times mean nothing)\n");
        if (cus_fake_install(NULL) != CUS_SUCCESS || cus_init() != CUS_SUCCESS) {
            fprintf(stderr, "tutorial-events: the fake driver failed: %s\n",
                    cus_last_error_message());
            return 1;
        }
        on_fake = true;
    }

    cus_status st = run();
    if (st != CUS_SUCCESS) {
        fprintf(stderr, "tutorial-events: %s (%s)\n", cus_last_error_message(),
                cus_status_name(st));
        return 1;
    }
    if (cus_debug_live_objects() != 0) {
        fprintf(stderr, "tutorial-events: %zu objects still alive\n", cus_debug_live_objects());
        return 1;
    }
    if (on_fake && cus_fake_uninstall() != CUS_SUCCESS) {
        fprintf(stderr, "tutorial-events: %s\n", cus_last_error_message());
        return 1;
    }
    return 0;
}
