/* Legacy CUDA IPC between two real processes (gpu suite; exits 77 without a
 * driver or device).
 *
 * The parent allocates a buffer and an interprocess event, exports both,
 * and checks that the driver refuses to import them in the exporting process
 * (CUDA_ERROR_INVALID_CONTEXT, as the fake answers). It then fork()s and
 * exec()s itself with --child (CUDA does not survive a bare fork), sending
 * the two handles, the size, and the handle of a buffer it already freed,
 * over a pipe that becomes the child's stdin. The child imports both into a
 * context of its own, copies a pattern into the buffer on a stream, records
 * the imported event on that stream, synchronizes and exits 0; it also
 * prints what the driver answers for the stale handle (the fake answers
 * CUDA_ERROR_INVALID_VALUE). The parent waits for it, synchronizes on its
 * own event, and reads the pattern back. Every step is printed. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuscope/cuscope.h>

#include "harness/env.h"

#define WORDS (256 * 1024) /* 1 MiB */
#define IPC_EVENT (CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING)

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "%s: %s:%d: check failed: %s (last error: %s)\n", role, __FILE__, \
                    __LINE__, #cond, cus_last_error_message());                \
            exit(1);                                                           \
        }                                                                      \
    } while (0)
#define OK(expr) CHECK((expr) == CUS_SUCCESS)

static const char *role = "parent";

/* What the parent sends the child, as plain bytes. */
typedef struct message {
    CUipcMemHandle buffer;
    CUipcEventHandle event;
    CUipcMemHandle stale; /* of a buffer freed before the child starts */
    uint64_t bytes;
} message;

static uint32_t pattern_at(size_t i)
{
    return (uint32_t)(i * 2654435761u) ^ 0x5EEDu;
}

static int child(void)
{
    role = "child";
    message m;
    size_t got = 0;
    while (got < sizeof m) {
        ssize_t n = read(STDIN_FILENO, (char *)&m + got, sizeof m - got);
        if (n < 0 && errno == EINTR)
            continue;
        CHECK(n > 0);
        got += (size_t)n;
    }
    OK(cus_init());
    cus_device dev;
    OK(cus_device_get(0, &dev));
    cus_autoptr(cus_context) ctx = NULL;
    OK(cus_context_create(dev, CUS_CTX_NO_PUSH, &ctx));

    cus_autoptr(cus_buffer) view = NULL;
    OK(cus_buffer_ipc_import(ctx, &m.buffer, 0, (size_t)m.bytes, &view));
    CHECK(cus_buffer_get_kind(view) == CUS_BUFFER_IMPORTED);
    cus_autoptr(cus_event) done = NULL;
    OK(cus_event_ipc_import(ctx, &m.event, &done));
    printf("child: imported %zu bytes at 0x%llx and the event\n", cus_buffer_size(view),
           (unsigned long long)cus_buffer_ptr(view));

    uint32_t *pattern = malloc(WORDS * sizeof *pattern);
    CHECK(pattern);
    for (size_t i = 0; i < WORDS; i++)
        pattern[i] = pattern_at(i);
    cus_autoptr(cus_stream) s = NULL;
    OK(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &s));
    OK(cus_copy_to_device_async(view, 0, pattern, WORDS * sizeof *pattern, s));
    OK(cus_event_record(done, s));
    OK(cus_stream_synchronize(s));
    free(pattern);
    /* A copy past the stated size is refused before the driver. */
    uint32_t word;
    CHECK(cus_copy_to_host(&word, view, (size_t)m.bytes, sizeof word) == CUS_ERROR_OUT_OF_RANGE);

    cus_buffer *stale = NULL;
    cus_status st = cus_buffer_ipc_import(ctx, &m.stale, 0, 4096, &stale);
    printf("child: a handle of freed memory -> %s (the fake answers CUDA_ERROR_INVALID_VALUE)%s\n",
           cus_status_name(st),
           st == (cus_status)CUDA_ERROR_INVALID_VALUE ? "" : ": update lib/fake/fake_ipc.c");
    stale = cus_buffer_unref(stale);
    printf("child: pattern written, event recorded, stream synchronized\n");
    return 0;
}

static int parent(const char *self)
{
    OK(cus_init());
    cus_device dev;
    OK(cus_device_get(0, &dev));
    cus_autoptr(cus_context) ctx = NULL;
    OK(cus_context_create(dev, CUS_CTX_NO_PUSH, &ctx));
    cus_autoptr(cus_buffer) buf = NULL;
    OK(cus_buffer_alloc(ctx, WORDS * sizeof(uint32_t), &buf));
    OK(cus_buffer_fill_u32(buf, 0, 0, WORDS));
    OK(cus_context_synchronize(ctx)); /* zeroed before the child writes */
    cus_autoptr(cus_event) done = NULL;
    OK(cus_event_create(ctx, IPC_EVENT, &done));

    message m;
    memset(&m, 0, sizeof m);
    m.bytes = cus_buffer_size(buf);
    OK(cus_buffer_ipc_export(buf, &m.buffer));
    OK(cus_event_ipc_export(done, &m.event));
    cus_buffer *gone = NULL;
    OK(cus_buffer_alloc(ctx, 4096, &gone));
    OK(cus_buffer_ipc_export(gone, &m.stale));
    gone = cus_buffer_unref(gone);
    printf("parent: exported a %zu-byte buffer and an interprocess event\n", cus_buffer_size(buf));

    /* In the exporting process the driver refuses both, as the fake does. */
    cus_buffer *self_view = NULL;
    cus_status st = cus_buffer_ipc_import(ctx, &m.buffer, 0, (size_t)m.bytes, &self_view);
    printf("parent: importing its own buffer -> %s\n", cus_status_name(st));
    CHECK(st == (cus_status)CUDA_ERROR_INVALID_CONTEXT);
    cus_event *self_event = NULL;
    st = cus_event_ipc_import(ctx, &m.event, &self_event);
    printf("parent: importing its own event -> %s\n", cus_status_name(st));
    CHECK(st == (cus_status)CUDA_ERROR_INVALID_CONTEXT);

    int fds[2];
    CHECK(pipe(fds) == 0);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        /* Nothing of CUDA here: exec at once. */
        dup2(fds[0], STDIN_FILENO);
        close(fds[0]);
        close(fds[1]);
        execl(self, self, "--child", (char *)NULL);
        _exit(127);
    }
    close(fds[0]);
    CHECK(write(fds[1], &m, sizeof m) == (ssize_t)sizeof m);
    close(fds[1]);
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    printf("parent: the child exited with %d\n", WEXITSTATUS(status));
    CHECK(WEXITSTATUS(status) == 0);

    OK(cus_event_synchronize(done));
    uint32_t *back = malloc(WORDS * sizeof *back);
    CHECK(back);
    OK(cus_copy_to_host(back, buf, 0, WORDS * sizeof *back));
    size_t bad = 0;
    for (size_t i = 0; i < WORDS; i++)
        bad += back[i] != pattern_at(i);
    free(back);
    printf("parent: %zu of %d words differ from the child's pattern\n", bad, WORDS);
    CHECK(bad == 0);
    printf("gpu-ipc: ok\n");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--child") == 0)
        return child();
    env_require_driver_or_skip();
    /* The child is this very program: /proc/self/exe survives a changed
     * working directory. */
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        printf("skipping: /proc/self/exe is not readable\n");
        return 77;
    }
    self[n] = '\0';
    return parent(self);
}
