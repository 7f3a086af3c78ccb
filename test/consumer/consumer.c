/* A user's program and its test in one: it uses cuscope's public API (a
 * primary context, a stream, buffers, copies, an event) on the fake driver,
 * checks what it observes, and checks that the fake saw every handle
 * released. Built as a subproject consumer and against the installed
 * library (.ci/run). Exit status 0 when all is well. */
#include <stdio.h>
#include <string.h>

#include <cuscope/cuscope.h>
#include <cuscope/fake.h>

#define CHECK(expr)                                                            \
    do {                                                                       \
        cus_status st_ = (expr);                                               \
        if (st_ != CUS_SUCCESS) {                                              \
            fprintf(stderr, "consumer: %s: %s\n", #expr, cus_last_error_message()); \
            return st_;                                                        \
        }                                                                      \
    } while (0)

static cus_status round_trip(void)
{
    cus_device dev;
    CHECK(cus_device_get(0, &dev));
    cus_autoptr(cus_context) ctx = NULL;
    CHECK(cus_context_retain_primary(dev, &ctx));
    cus_context_scope(guard, ctx);
    CHECK(guard.status);

    cus_autoptr(cus_stream) stream = NULL;
    CHECK(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &stream));
    cus_autoptr(cus_buffer) a = NULL;
    cus_autoptr(cus_buffer) b = NULL;
    CHECK(cus_buffer_alloc_array(ctx, 256, sizeof(int), &a));
    CHECK(cus_buffer_alloc_array(ctx, 256, sizeof(int), &b));

    int in[256], out[256];
    for (int i = 0; i < 256; i++)
        in[i] = i * 3;
    memset(out, 0, sizeof out);
    CHECK(cus_copy_to_device_async(a, 0, in, sizeof in, stream));
    CHECK(cus_copy_device_async(b, 0, a, 0, sizeof in, stream));
    cus_autoptr(cus_event) done = NULL;
    CHECK(cus_event_create(ctx, CU_EVENT_DISABLE_TIMING, &done));
    CHECK(cus_event_record(done, stream));
    CHECK(cus_event_synchronize(done));
    CHECK(cus_copy_to_host(out, b, 0, sizeof out));
    if (memcmp(in, out, sizeof in) != 0) {
        fprintf(stderr, "consumer: the data came back wrong\n");
        return CUS_ERROR_INVALID_ARGUMENT;
    }

    /* An out-of-range copy is refused before the driver sees it. */
    if (cus_copy_to_host(out, b, 8, sizeof out) != CUS_ERROR_OUT_OF_RANGE) {
        fprintf(stderr, "consumer: an out-of-range copy was not refused\n");
        return CUS_ERROR_INVALID_ARGUMENT;
    }
    return CUS_SUCCESS;
}

int main(void)
{
    printf("cuscope %s (headers %s)\n", cus_version_string(), CUSCOPE_VERSION_STRING);
    if (cus_version() < CUSCOPE_VERSION) {
        fprintf(stderr, "consumer: the library is older than the headers\n");
        return 1;
    }
    if (cus_fake_install(NULL) != CUS_SUCCESS)
        return 1;
    if (round_trip() != CUS_SUCCESS)
        return 1;
    if (cus_fake_live_handles(CUS_FAKE_HANDLE_ANY) != 0) {
        fprintf(stderr, "consumer: %zu driver handles left alive\n",
                (size_t)cus_fake_live_handles(CUS_FAKE_HANDLE_ANY));
        return 1;
    }
    if (cus_fake_uninstall() != CUS_SUCCESS)
        return 1;
    printf("consumer: ok\n");
    return 0;
}
