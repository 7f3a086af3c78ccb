/* tutorial-ipc: sharing a buffer and an event with another process
 * (docs/tutorial.md, "8. Sharing memory and events between processes").
 *
 * The exporter allocates a buffer and an interprocess event and exports
 * both: two handles of plain bytes. Importing them in the same process is
 * refused by the driver (CUDA_ERROR_INVALID_CONTEXT), which the program
 * shows. On a GPU it then starts itself again (fork, then exec: CUDA does
 * not survive a bare fork) as the importer, with the handles on its stdin;
 * the importer fills the buffer and records the event, and the exporter
 * waits for the event and reads the buffer. Without a GPU it runs on the
 * fake driver, which has one process's state only: it shows the exports and
 * the refusal, and says that it leaves out the second process.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuscope/cuscope.h>
#include <cuscope/fake.h>

#define N 4096u /* 32-bit words */

/* What goes over the pipe: the handles are plain bytes, and carry no size. */
typedef struct shared {
    CUipcMemHandle memory;
    CUipcEventHandle done;
    size_t bytes;
} shared;

static cus_status importer(void)
{
    shared msg;
    if (fread(&msg, sizeof msg, 1, stdin) != 1)
        return CUS_ERROR_INVALID_ARGUMENT;
    cus_device dev;
    CUS_TRY(cus_device_get(0, &dev));
    cus_autoptr(cus_context) ctx = NULL; /* its own context, on the same device */
    CUS_TRY(cus_context_create(dev, CUS_CTX_NO_PUSH, &ctx));
    cus_autoptr(cus_buffer) buf = NULL;
    CUS_TRY(cus_buffer_ipc_import(ctx, &msg.memory, 0, msg.bytes, &buf));
    cus_autoptr(cus_event) done = NULL;
    CUS_TRY(cus_event_ipc_import(ctx, &msg.done, &done));
    cus_autoptr(cus_stream) s = NULL;
    CUS_TRY(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &s));
    CUS_TRY(cus_buffer_fill_u32_async(buf, 0, 0xC0FFEEu, N, s));
    CUS_TRY(cus_event_record(done, s));
    CUS_TRY(cus_stream_synchronize(s));
    printf("importer: filled the exporter's buffer and recorded its event\n");
    return CUS_SUCCESS; /* the releases close the mapping and the event */
}

/* Starts this program again as the importer and sends it msg. */
static cus_status run_importer(const char *self, const shared *msg)
{
    int fds[2];
    if (pipe(fds) != 0)
        return CUS_ERROR_OUT_OF_HOST_MEMORY;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[0], STDIN_FILENO);
        close(fds[0]);
        close(fds[1]);
        execl(self, self, "--importer", (char *)NULL);
        _exit(127);
    }
    close(fds[0]);
    bool sent = write(fds[1], msg, sizeof *msg) == (ssize_t)sizeof *msg;
    close(fds[1]);
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !sent || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0)
        return CUS_ERROR_INVALID_ARGUMENT;
    return CUS_SUCCESS;
}

static cus_status exporter(const char *self, bool on_fake)
{
    cus_device dev;
    CUS_TRY(cus_device_get(0, &dev));
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(cus_context_create(dev, CUS_CTX_NO_PUSH, &ctx));
    cus_autoptr(cus_buffer) buf = NULL;
    CUS_TRY(cus_buffer_alloc_n(ctx, uint32_t, N, &buf));
    CUS_TRY(cus_buffer_fill_u32(buf, 0, 0, N));
    /* Only these flags make an event another process can open. */
    cus_autoptr(cus_event) done = NULL;
    CUS_TRY(cus_event_create(ctx, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING, &done));

    shared msg = {.bytes = cus_buffer_size(buf)};
    CUS_TRY(cus_buffer_ipc_export(buf, &msg.memory));
    CUS_TRY(cus_event_ipc_export(done, &msg.done));
    printf("exported a %zu-byte buffer and an event: %zu bytes of handles to send\n", msg.bytes,
           sizeof msg.memory + sizeof msg.done);

    /* In the exporting process, the driver refuses its own handle. */
    cus_buffer *mine = NULL;
    cus_status st = cus_buffer_ipc_import(ctx, &msg.memory, 0, msg.bytes, &mine);
    printf("importing it in this process: %s\n  %s\n", cus_status_name(st),
           cus_last_error_message());
    if (st != (cus_status)CUDA_ERROR_INVALID_CONTEXT)
        return CUS_ERROR_INVALID_ARGUMENT;

    if (on_fake) {
        printf("the fake driver holds one process's state: no second process here\n");
        return CUS_SUCCESS;
    }
    /* buf and done stay alive until the importer has closed them. */
    CUS_TRY(run_importer(self, &msg));
    CUS_TRY(cus_event_synchronize(done));
    uint32_t out[N];
    CUS_TRY(cus_copy_to_host(out, buf, 0, sizeof out));
    unsigned wrong = 0;
    for (unsigned i = 0; i < N; i++)
        wrong += out[i] != 0xC0FFEEu;
    printf("exporter: the importer's writes %s\n", wrong ? "are MISSING" : "are here");
    return wrong ? CUS_ERROR_INVALID_ARGUMENT : CUS_SUCCESS;
}

int main(int argc, char **argv)
{
    bool as_importer = argc > 1 && strcmp(argv[1], "--importer") == 0;
    bool on_fake = false;
    if (cus_init() != CUS_SUCCESS) {
        if (as_importer)
            return 1;
        printf("%s\n", cus_last_error_message());
        printf("no GPU here: running on cuscope's fake driver\n");
        if (cus_fake_install(NULL) != CUS_SUCCESS || cus_init() != CUS_SUCCESS) {
            fprintf(stderr, "tutorial-ipc: the fake driver failed: %s\n", cus_last_error_message());
            return 1;
        }
        on_fake = true;
    }
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = '\0';

    cus_status st = as_importer ? importer() : exporter(self, on_fake || n <= 0);
    if (st != CUS_SUCCESS) {
        fprintf(stderr, "tutorial-ipc: %s (%s)\n", cus_last_error_message(), cus_status_name(st));
        return 1;
    }
    if (cus_debug_live_objects() != 0) {
        fprintf(stderr, "tutorial-ipc: %zu objects still alive\n", cus_debug_live_objects());
        return 1;
    }
    if (on_fake && cus_fake_uninstall() != CUS_SUCCESS) {
        fprintf(stderr, "tutorial-ipc: %s\n", cus_last_error_message());
        return 1;
    }
    return 0;
}
