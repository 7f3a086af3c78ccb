/* gpu-pool-ipc: a memory pool shared between two processes on a real GPU
 * (include/cuscope/pool.h, IPC).
 *
 * The parent makes an exportable pool (CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
 * allocates a buffer from it, zeroes it and synchronizes, then forks and
 * execs itself as the child (`--child FD`: a fork child may not use the
 * driver, an exec'd one may), and sends it, over a Unix socket pair, the
 * pool's descriptor (SCM_RIGHTS) with the buffer's export data, its size and
 * a pattern. The child imports the pool and the pointer, fills the buffer
 * with the pattern, synchronizes, releases the import (cuMemFree) and exits
 * 0. The parent then reads the pattern back.
 *
 * Then, printed and not required: what the driver answers when a process
 * imports its own pool and pointer (the fake allows both; this tells whether
 * the driver does).
 *
 * Exits 77 (skipped) without a driver or a device, on cuscope's fake driver
 * (a fake's pools do not cross processes), and where the device has no
 * POSIX file descriptor pools. Prints "gpu-pool-ipc: ok" on success. */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/env.h"

#define WORDS 4096
#define PATTERN 0x1BADCAFEu

/* What travels with the descriptor. */
typedef struct message {
    CUmemPoolPtrExportData data;
    uint64_t bytes;
    uint32_t pattern;
} message;

#define CHECK(expr)                                                            \
    do {                                                                       \
        cus_status st_ = (expr);                                               \
        if (st_ != CUS_SUCCESS) {                                              \
            fprintf(stderr, "%s: %s -> %s: %s\n", role, #expr, cus_status_name(st_), \
                    cus_last_error_message());                                 \
            return 1;                                                          \
        }                                                                      \
    } while (0)

static const char *role = "gpu-pool-ipc";

static int send_fd(int sock, int fd, const message *m)
{
    struct iovec iov = {(void *)m, sizeof *m};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } ctl;
    memset(&ctl, 0, sizeof ctl);
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                         .msg_controllen = sizeof ctl.buf};
    struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
    if (!cm)
        return -1;
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), &fd, sizeof fd);
    return sendmsg(sock, &msg, 0) == (ssize_t)sizeof *m ? 0 : -1;
}

static int recv_fd(int sock, int *fd, message *m)
{
    struct iovec iov = {m, sizeof *m};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } ctl;
    memset(&ctl, 0, sizeof ctl);
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                         .msg_controllen = sizeof ctl.buf};
    if (recvmsg(sock, &msg, MSG_WAITALL) != (ssize_t)sizeof *m)
        return -1;
    struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
    if (!cm || cm->cmsg_type != SCM_RIGHTS)
        return -1;
    memcpy(fd, CMSG_DATA(cm), sizeof *fd);
    return 0;
}

/* --- the child ------------------------------------------------------------------ */

static int child(int sock)
{
    role = "gpu-pool-ipc child";
    message m;
    int fd = -1;
    if (recv_fd(sock, &fd, &m) != 0) {
        fprintf(stderr, "%s: receiving the pool's descriptor: %s\n", role, strerror(errno));
        return 1;
    }
    close(sock);
    cus_device dev;
    CHECK(cus_device_get(0, &dev));
    cus_autoptr(cus_context) ctx = NULL;
    CHECK(cus_context_retain_primary(dev, &ctx));
    cus_autoptr(cus_pool) pool = NULL;
    cus_status st = cus_pool_import(ctx, fd, &pool);
    close(fd); /* the descriptor stays ours: the import does not take it */
    CHECK(st);
    {
        cus_autoptr(cus_buffer) view = NULL;
        CHECK(cus_pool_import_pointer(pool, &m.data, (size_t)m.bytes, &view));
        CHECK(cus_buffer_fill_u32(view, 0, m.pattern, (size_t)m.bytes / 4));
        CHECK(cus_context_synchronize(ctx)); /* written before we say so */
    } /* the import released (cuMemFree) before the exporter frees */
    printf("%s: imported the pool and the pointer, wrote 0x%08" PRIx32 "\n", role, m.pattern);
    return 0;
}

/* --- the parent ------------------------------------------------------------------ */

/* What the driver answers to an import of this process's own pool. */
static void probe_same_process(cus_context *ctx, cus_pool *pool, cus_buffer *buf)
{
    int fd = -1;
    CUmemPoolPtrExportData data;
    if (cus_pool_export(pool, &fd) || cus_pool_export_pointer(pool, buf, &data)) {
        printf("gpu-pool-ipc: same-process probe: export failed: %s\n", cus_last_error_message());
        if (fd >= 0)
            close(fd);
        return;
    }
    cus_autoptr(cus_pool) imported = NULL;
    cus_status st = cus_pool_import(ctx, fd, &imported);
    close(fd);
    printf("gpu-pool-ipc: same-process probe: cus_pool_import -> %s\n", cus_status_name(st));
    if (st)
        return;
    cus_autoptr(cus_buffer) view = NULL;
    st = cus_pool_import_pointer(imported, &data, cus_buffer_size(buf), &view);
    printf("gpu-pool-ipc: same-process probe: cus_pool_import_pointer -> %s%s\n",
           cus_status_name(st),
           st ? "" : (cus_buffer_ptr(view) == cus_buffer_ptr(buf) ? " (the same address)"
                                                                  : " (another address)"));
}

static int parent(void)
{
    env_require_driver_or_skip();
    cus_device dev;
    if (cus_device_get(0, &dev) != CUS_SUCCESS) {
        printf("skipping: no device: %s\n", cus_last_error_message());
        return 77;
    }
    char name[128] = "";
    CHECK(cus_device_name(dev, name, sizeof name));
    if (strncmp(name, "cuscope fake", 12) == 0) {
        printf("skipping: the driver is cuscope's fake (%s): its pools do not cross processes\n",
               name);
        return 77;
    }
    int handles = 0;
    CHECK(cus_device_attribute(dev, CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES, &handles));
    if (!(handles & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)) {
        printf("skipping: %s has no POSIX file descriptor pools (handle types 0x%x)\n", name,
               handles);
        return 77;
    }

    cus_autoptr(cus_context) ctx = NULL;
    CHECK(cus_context_retain_primary(dev, &ctx));
    cus_autoptr(cus_stream) s = NULL;
    CHECK(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &s));
    cus_pool_options opts = {.handle_types = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR};
    cus_autoptr(cus_pool) pool = NULL;
    CHECK(cus_pool_create(ctx, &opts, &pool));
    cus_autoptr(cus_buffer) buf = NULL;
    CHECK(cus_pool_alloc_async(pool, s, WORDS * 4, &buf));
    CHECK(cus_buffer_fill_u32_async(buf, 0, 0, WORDS, s));
    CHECK(cus_stream_synchronize(s)); /* allocated, and zero, before the child looks */

    message m;
    memset(&m, 0, sizeof m);
    m.bytes = WORDS * 4;
    m.pattern = PATTERN;
    /* The driver's order, asked: a pointer exported before its pool was (on
     * the H200 of 2026-12-04, CUDA_ERROR_INVALID_VALUE), then after. */
    cus_status early = cus_pool_export_pointer(pool, buf, &m.data);
    printf("pointer export before the pool's: %s\n", cus_status_name(early));
    int fd = -1;
    CHECK(cus_pool_export(pool, &fd));
    CHECK(cus_pool_export_pointer(pool, buf, &m.data));

    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
        perror("gpu-pool-ipc: socketpair");
        return 1;
    }
    char arg[16];
    snprintf(arg, sizeof arg, "%d", sv[1]);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        perror("gpu-pool-ipc: fork");
        return 1;
    }
    if (pid == 0) {
        /* Only exec here: a fork child may not use the driver. */
        close(sv[0]);
        static char prog[] = "gpu-pool-ipc", flag[] = "--child";
        char *const argv[] = {prog, flag, arg, NULL};
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    close(sv[1]);
    int sent = send_fd(sv[0], fd, &m);
    close(fd);
    close(sv[0]);
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) {
        perror("gpu-pool-ipc: waitpid");
        return 1;
    }
    if (sent != 0) {
        fprintf(stderr, "gpu-pool-ipc: sending the descriptor: %s\n", strerror(errno));
        return 1;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "gpu-pool-ipc: the child failed (status 0x%x)\n", status);
        return 1;
    }

    static uint32_t host[WORDS];
    CHECK(cus_copy_to_host(host, buf, 0, sizeof host));
    for (size_t i = 0; i < WORDS; i++)
        if (host[i] != PATTERN) {
            fprintf(stderr, "gpu-pool-ipc: word %zu is 0x%08" PRIx32 ", want 0x%08" PRIx32 "\n",
                    i, host[i], PATTERN);
            return 1;
        }
    printf("gpu-pool-ipc: the parent read back the child's 0x%08" PRIx32 " in all %d words\n",
           PATTERN, WORDS);

    probe_same_process(ctx, pool, buf);
    printf("gpu-pool-ipc: ok\n");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--child") == 0)
        return child(atoi(argv[2]));
    return parent();
}
