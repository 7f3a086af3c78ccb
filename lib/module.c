/* Modules: image checks, loading with JIT logs, globals, enumeration. The
 * function cache in the module is function.c's. */
#define _GNU_SOURCE /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "internal.h"
#include "module_image.h"

/* The JIT's logs. The error log only feeds the failure message, which holds
 * less than the last-error record: a buffer of the record's size on the stack
 * loses nothing of it. The info log is kept (cus_module_info_log): PTX is
 * always compiled, and its log may be long, so it gets 16 KiB from the heap,
 * noise next to the compilation; a cubin is never compiled, and a fatbin only
 * when none of its SASS runs on the device (its PTX then is), so theirs is a
 * smaller buffer on the stack and their loads allocate no log buffer. */
#define JIT_ERROR_LOG_SIZE CUS_JIT_ERROR_LOG_SIZE_
#define JIT_INFO_LOG_SIZE_PTX CUS_JIT_INFO_LOG_SIZE_PTX_
#define JIT_INFO_LOG_SIZE_BINARY CUS_JIT_INFO_LOG_SIZE_BINARY_
#define FATBIN_MAGIC 0xBA55ED50u
#define FATBIN_WRAPPER_MAGIC 0x466243b1u

/* --- image formats -------------------------------------------------------- */

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Whether the first n bytes of p equal magic's, reading no further than the
 * first mismatch (an image of unknown size may be a short string). */
static bool starts_with(const unsigned char *p, size_t size, const unsigned char *magic, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (i >= size || p[i] != magic[i])
            return false;
    return true;
}

/* PTX opens with directives (".version"), comments or blank lines. Reads at
 * most 16 bytes, and stops at a NUL. */
static bool looks_like_ptx(const unsigned char *p, size_t size)
{
    size_t limit = size < 16 ? size : 16;
    for (size_t i = 0; i < limit; i++) {
        unsigned char c = p[i];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
            continue;
        if (c == '.')
            return i + 1 < limit ? (p[i + 1] >= 'a' && p[i + 1] <= 'z') : true;
        if (c == '/')
            return i + 1 >= limit || p[i + 1] == '/' || p[i + 1] == '*';
        return false;
    }
    return false;
}

static cus_image_format sniff(const void *image, size_t size)
{
    static const unsigned char elf[4] = {0x7f, 'E', 'L', 'F'};
    static const unsigned char fat[4] = {0x50, 0xed, 0x55, 0xba};
    static const unsigned char wrap[4] = {0xb1, 0x43, 0x62, 0x46};
    const unsigned char *p = image;
    if (!p || size == 0)
        return CUS_IMAGE_UNKNOWN;
    if (starts_with(p, size, elf, 4))
        return CUS_IMAGE_CUBIN;
    if (starts_with(p, size, fat, 4))
        return CUS_IMAGE_FATBIN;
    if (starts_with(p, size, wrap, 4))
        return CUS_IMAGE_FATBIN_WRAPPER;
    return looks_like_ptx(p, size) ? CUS_IMAGE_PTX : CUS_IMAGE_UNKNOWN;
}

CUS_API cus_image_format cus_module_image_format(const void *image, size_t size)
{
    return sniff(image, size);
}

CUS_API const char *cus_image_format_name(cus_image_format format)
{
    switch (format) {
    case CUS_IMAGE_PTX: return "PTX";
    case CUS_IMAGE_CUBIN: return "cubin";
    case CUS_IMAGE_FATBIN: return "fatbin";
    case CUS_IMAGE_FATBIN_WRAPPER: return "fatbin wrapper";
    case CUS_IMAGE_UNKNOWN: break;
    }
    return "unknown";
}

/* With the size known, the checks the driver would make only by reading past
 * the end: the header fits, PTX is terminated, a fatbin's own size fits. */
/* Copies n bytes (at most 16) from p into out without touching p here: the
 * kernel reads them (process_vm_readv on this process), and an unreadable
 * address is EFAULT instead of a fault; valgrind does not check the remote
 * side. Where that call is not allowed (a seccomp filter), a pipe does the
 * same (the kernel copies the bytes into it). 1: copied; 0: not readable;
 * -1: cannot tell. */
static int read_checked(const void *p, size_t n, unsigned char *out)
{
    struct iovec local = {out, n}, remote = {(void *)(uintptr_t)p, n};
    ssize_t got = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
    if (got == (ssize_t)n)
        return 1;
    if (got >= 0 || errno == EFAULT)
        return 0;
    int fds[2];
    if (pipe2(fds, O_CLOEXEC | O_NONBLOCK))
        return -1;
    int r = -1;
    if (write(fds[1], p, n) == (ssize_t)n && read(fds[0], out, n) == (ssize_t)n)
        r = 1;
    else if (errno == EFAULT)
        r = 0;
    close(fds[0]);
    close(fds[1]);
    return r;
}

/* nvcc's wrapper: { int magic, version; const void *data; void *unused; },
 * data pointing at a fatbin. The driver follows the pointer blindly (and
 * so did the fake's parser); here it must point at readable memory that
 * starts with a fatbin header whose whole extent is readable. */
static cus_status check_wrapper(const unsigned char *p, const char *function)
{
    const unsigned char *fat;
    memcpy(&fat, p + 8, sizeof fat);
    if (!fat)
        return cus_fail_((cus_status)CUDA_ERROR_INVALID_IMAGE, function, NULL,
                         "fatbin wrapper with no fatbin (a NULL data pointer)");
    unsigned char head[16], last;
    int r = read_checked(fat, sizeof head, head);
    if (r == 0)
        return cus_fail_((cus_status)CUDA_ERROR_INVALID_IMAGE, function, NULL,
                         "fatbin wrapper whose data pointer %p is not readable memory",
                         (const void *)fat);
    if (r < 0)
        return CUS_SUCCESS; /* cannot tell: trusted, as the driver trusts it */
    if (le32(head) != 0xBA55ED50u)
        return cus_fail_((cus_status)CUDA_ERROR_INVALID_IMAGE, function, NULL,
                         "fatbin wrapper whose data pointer %p is not a fatbin (magic %08x)",
                         (const void *)fat, (unsigned)le32(head));
    uint64_t header = (uint64_t)head[6] | (uint64_t)head[7] << 8;
    uint64_t body = (uint64_t)le32(head + 8) | (uint64_t)le32(head + 12) << 32;
    /* The fatbin is one allocation: its first and last bytes readable, the
     * pages between them are. */
    if (header < 16 || body > ((uint64_t)1 << 40) ||
        read_checked(fat + header + body - 1, 1, &last) == 0)
        return cus_fail_((cus_status)CUDA_ERROR_INVALID_IMAGE, function, NULL,
                         "fatbin wrapper's fatbin at %p: its header says %llu bytes, which "
                         "are not all readable",
                         (const void *)fat, (unsigned long long)(header + body));
    return CUS_SUCCESS;
}

static cus_status check_image(const void *image, size_t size, cus_image_format *format,
                              const char *function)
{
    const unsigned char *p = image;
    cus_image_format f = sniff(image, size ? size : SIZE_MAX);
    *format = f;
    if (f == CUS_IMAGE_UNKNOWN) {
        /* Show what we saw, reading no byte past a NUL when the size is unknown. */
        char seen[16] = "";
        size_t n = 0;
        while (n < 4 && (size ? n < size : (n == 0 || p[n - 1] != 0))) {
            snprintf(seen + 3 * n, sizeof seen - 3 * n, " %02x", p[n]);
            n++;
        }
        return cus_fail_((cus_status)CUDA_ERROR_INVALID_IMAGE, function, NULL,
                        "%s image (first bytes:%s): neither PTX text, a cubin (ELF) nor a fatbin",
                        (size == 0 && p[0] == 0) ? "an empty" : "an unknown", n ? seen : " none");
    }
    if (f == CUS_IMAGE_FATBIN_WRAPPER && (size == 0 || size >= 16))
        CUS_TRY(check_wrapper(p, function));
    if (size == 0)
        return CUS_SUCCESS;
    switch (f) {
    case CUS_IMAGE_PTX:
        if (!memchr(p, 0, size))
            return cus_fail_((cus_status)CUDA_ERROR_INVALID_IMAGE, function, NULL,
                            "PTX image of %zu bytes is not NUL-terminated", size);
        break;
    case CUS_IMAGE_CUBIN:
        if (size < 64)
            return cus_fail_((cus_status)CUDA_ERROR_INVALID_IMAGE, function, NULL,
                            "cubin of %zu bytes is shorter than an ELF64 header", size);
        if (p[4] == 2 && p[5] == 1) { /* ELF64, little-endian: what nvcc writes */
            uint64_t shoff = (uint64_t)le32(p + 0x28) | (uint64_t)le32(p + 0x2c) << 32;
            uint64_t shsize = (uint64_t)(p[0x3a] | p[0x3b] << 8) * (uint64_t)(p[0x3c] | p[0x3d] << 8);
            uint64_t phoff = (uint64_t)le32(p + 0x20) | (uint64_t)le32(p + 0x24) << 32;
            uint64_t phsize = (uint64_t)(p[0x36] | p[0x37] << 8) * (uint64_t)(p[0x38] | p[0x39] << 8);
            if (shoff > size || shsize > size - shoff || phoff > size || phsize > size - phoff)
                return cus_fail_((cus_status)CUDA_ERROR_INVALID_IMAGE, function, NULL,
                                "truncated cubin: %zu bytes, its headers reach past them", size);
            /* Each section with contents must lie inside the image too: the
             * driver follows the offsets without knowing the size (found by
             * fuzzing, test/fuzz/corpus/image_check/crash-*). */
            unsigned shentsize = p[0x3a] | p[0x3b] << 8;
            unsigned shnum = p[0x3c] | p[0x3d] << 8;
            if (shnum && shentsize < 64)
                return cus_fail_((cus_status)CUDA_ERROR_INVALID_IMAGE, function, NULL,
                                 "cubin section headers of %u bytes, ELF64 needs 64", shentsize);
            for (unsigned i = 0; i < shnum; i++) {
                const unsigned char *sh = p + shoff + (uint64_t)i * shentsize;
                uint32_t type = le32(sh + 4);
                uint64_t off = (uint64_t)le32(sh + 0x18) | (uint64_t)le32(sh + 0x1c) << 32;
                uint64_t len = (uint64_t)le32(sh + 0x20) | (uint64_t)le32(sh + 0x24) << 32;
                if (type != 8 /* SHT_NOBITS: no contents */ && (off > size || len > size - off))
                    return cus_fail_((cus_status)CUDA_ERROR_INVALID_IMAGE, function, NULL,
                                     "truncated cubin: %zu bytes, section %u reaches past them",
                                     size, i);
            }
        }
        break;
    case CUS_IMAGE_FATBIN: {
        if (size < 16)
            return cus_fail_((cus_status)CUDA_ERROR_INVALID_IMAGE, function, NULL,
                            "fatbin of %zu bytes is shorter than its header", size);
        uint64_t header = (uint64_t)p[6] | (uint64_t)p[7] << 8;
        uint64_t body = (uint64_t)le32(p + 8) | (uint64_t)le32(p + 12) << 32;
        if (header > size || body > size - header)
            return cus_fail_((cus_status)CUDA_ERROR_INVALID_IMAGE, function, NULL,
                            "truncated fatbin: %zu bytes, its header says %llu", size,
                            (unsigned long long)(header + body));
        break;
    }
    case CUS_IMAGE_FATBIN_WRAPPER:
        if (size < 16)
            return cus_fail_((cus_status)CUDA_ERROR_INVALID_IMAGE, function, NULL,
                            "fatbin wrapper of %zu bytes is too short", size);
        break;
    case CUS_IMAGE_UNKNOWN:
        break;
    }
    return CUS_SUCCESS;
}

/* --- the module object ----------------------------------------------------- */

static CUresult unload_call(void *h)
{
    return cus_drv_.cuModuleUnload_((CUmodule)h);
}

static void module_destroy(cus_module *m)
{
    if (m->handle)
        cus_destroy_in_context_relaxed_(m->ctx, "cus_module_unref", "cuModuleUnload",
                                        unload_call, m->handle, "a module");
    cus_module_functions_free_(m);
    while (m->globals) {
        cus_global_ *g = m->globals;
        m->globals = g->next;
        free(g);
    }
    free(m->names);
    free(m->info_log);
    cus_param_counts_free_(m->param_counts);
    pthread_mutex_destroy(&m->lock);
    cus_context_unref(m->ctx);
    free(m);
}

CUS_DEFINE_REF_UNREF(cus_module, module_destroy)

/* The length of a JIT log without its trailing blank lines. */
static size_t log_length(const char *log)
{
    size_t n = strlen(log);
    while (n && (log[n - 1] == '\n' || log[n - 1] == ' '))
        n--;
    return n;
}

/* A trimmed copy of a JIT log; NULL when out of memory. */
static char *dup_log(const char *log)
{
    size_t n = log_length(log);
    char *s = cus_malloc_(n + 1);
    if (s) {
        memcpy(s, log, n);
        s[n] = 0;
    }
    return s;
}

typedef cus_jit_opts_ jit_opts;

static void jit_add(jit_opts *o, CUjit_option key, void *value)
{
    o->keys[o->n] = key;
    o->values[o->n] = value;
    o->n++;
}

static cus_status jit_build(const char *function, jit_opts *o, const cus_jit_options *jit,
                            char *error_log, size_t error_size, char *info_log, size_t info_size)
{
    o->n = 0;
    jit_add(o, CU_JIT_ERROR_LOG_BUFFER, error_log);
    jit_add(o, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, (void *)(uintptr_t)error_size);
    jit_add(o, CU_JIT_INFO_LOG_BUFFER, info_log);
    jit_add(o, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, (void *)(uintptr_t)info_size);
    if (!jit)
        return CUS_SUCCESS;
    if (jit->set_level) {
        if (jit->optimization_level < 0 || jit->optimization_level > 4)
            return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL,
                            "JIT optimization level %d is outside 0..4", jit->optimization_level);
        jit_add(o, CU_JIT_OPTIMIZATION_LEVEL, (void *)(uintptr_t)jit->optimization_level);
    }
    if (jit->max_registers)
        jit_add(o, CU_JIT_MAX_REGISTERS, (void *)(uintptr_t)jit->max_registers);
    if (jit->line_info)
        jit_add(o, CU_JIT_GENERATE_LINE_INFO, (void *)(uintptr_t)1);
    if (jit->debug_info)
        jit_add(o, CU_JIT_GENERATE_DEBUG_INFO, (void *)(uintptr_t)1);
    if (jit->target) {
        if (jit->target < 0)
            return cus_fail_(CUS_ERROR_INVALID_ARGUMENT, function, NULL, "JIT target %d", jit->target);
        jit_add(o, CU_JIT_TARGET, (void *)(uintptr_t)jit->target);
    }
    return CUS_SUCCESS;
}

/* cus_module_load_data and _load_file: errors name `function`. */
static cus_status module_load(cus_context *ctx, const void *image, size_t size,
                              const cus_jit_options *jit, cus_module **out, const char *function)
{
    cus_release_deferred_if_any_();
    cus_image_format format;
    CUS_TRY(check_image(image, size, &format, function));

    cus_autofree cus_module *m = cus_calloc_lines_(sizeof *m);
    bool ptx = format == CUS_IMAGE_PTX;
    char error_log[JIT_ERROR_LOG_SIZE], info_binary[JIT_INFO_LOG_SIZE_BINARY];
    cus_autofree char *info_ptx = ptx ? cus_malloc_(JIT_INFO_LOG_SIZE_PTX) : NULL;
    if (!m || (ptx && !info_ptx))
        return cus_fail_(CUS_ERROR_OUT_OF_HOST_MEMORY, function, NULL, "allocating a module");
    char *info_log = ptx ? info_ptx : info_binary;
    size_t info_size = ptx ? JIT_INFO_LOG_SIZE_PTX : JIT_INFO_LOG_SIZE_BINARY;
    error_log[0] = info_log[0] = 0; /* what a driver that writes no log leaves */
    jit_opts o;
    CUS_TRY(jit_build(function, &o, jit, error_log, sizeof error_log, info_log, info_size));

    CUmodule h = NULL;
    CUS_SWITCH_AS(sw, ctx, function);
    CUS_TRY(sw_status);
    CUresult r = cus_drv_.cuModuleLoadDataEx_(&h, image, o.n, o.keys, o.values);
    error_log[sizeof error_log - 1] = info_log[info_size - 1] = 0; /* a full log ends here */
    if (r) {
        cus_status st = cus_switch_check_(&sw, r, "cuModuleLoadDataEx"); /* latches a sticky r */
        return cus_jit_load_fail_(st, function, "cuModuleLoadDataEx", format, error_log);
    }
    /* An empty info log (the usual case) is stored as NULL, read as "". */
    if (log_length(info_log) && !(m->info_log = dup_log(info_log))) {
        CUresult ru = cus_drv_.cuModuleUnload_(h);
        if (ru)
            cus_destroy_error_((cus_status)ru, function, "cuModuleUnload",
                               "rolling back a module whose info log could not be kept");
        return cus_fail_(CUS_ERROR_OUT_OF_HOST_MEMORY, function, NULL,
                         "copying the JIT's info log (%zu bytes)", log_length(info_log));
    }
    cus_refcount_init_(&m->refs);
    pthread_mutex_init(&m->lock, NULL);
    atomic_init(&m->functions, NULL);
    m->handle = h;
    m->ctx = cus_context_ref(ctx);
    m->format = format;
    /* Read from what the driver accepted. A wrapper's fatbin was checked
     * readable (check_image), and its size is its header's. */
    m->param_counts = cus_param_counts_read_(
        image, size && format != CUS_IMAGE_FATBIN_WRAPPER ? size : SIZE_MAX);
    *out = cus_steal(&m);
    return CUS_SUCCESS;
}

CUS_API cus_status cus_module_load_data(cus_context *ctx, const void *image, size_t size,
                                        const cus_jit_options *jit, cus_module **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(ctx && image && out);
    CUS_CHECK_POISON(ctx);
    return module_load(ctx, image, size, jit, out, __func__);
}

static void fclose_cleanup(FILE **f)
{
    if (*f)
        fclose(*f);
}

/* The whole file at path, with room for a NUL after it, in *data (to free). */
static cus_status read_file(const char *path, unsigned char **data, size_t *size)
{
    __attribute__((cleanup(fclose_cleanup))) FILE *f = fopen(path, "rb");
    if (!f)
        return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL, "opening %s: %s", path, strerror(errno));
    cus_autofree unsigned char *buf = NULL;
    size_t n = 0, capacity = 0;
    for (;;) {
        if (n + 1 >= capacity) {
            size_t want = capacity ? capacity * 2 : 65536;
            unsigned char *grown = cus_realloc_(buf, want);
            if (!grown)
                return CUS_FAIL(CUS_ERROR_OUT_OF_HOST_MEMORY, NULL, "reading %s", path);
            buf = grown;
            capacity = want;
        }
        size_t got = fread(buf + n, 1, capacity - n - 1, f);
        n += got;
        if (got == 0)
            break;
    }
    if (ferror(f))
        return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL, "reading %s: %s", path, strerror(errno));
    *data = cus_steal(&buf);
    *size = n;
    return CUS_SUCCESS;
}

CUS_API cus_status cus_module_load_file(cus_context *ctx, const char *path,
                                        const cus_jit_options *jit, cus_module **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(ctx && path && out);
    CUS_CHECK_POISON(ctx);
    cus_autofree unsigned char *data = NULL;
    size_t size = 0;
    CUS_TRY(read_file(path, &data, &size));
    data[size] = 0; /* PTX files need not end with a NUL */
    cus_image_format format = sniff(data, size);
    /* The driver copies the image: data is freed at the end of the scope. */
    return module_load(ctx, data, format == CUS_IMAGE_PTX ? size + 1 : size, jit, out, __func__);
}

CUS_API CUmodule cus_module_handle(const cus_module *mod)
{
    return mod ? mod->handle : NULL;
}

CUS_API cus_context *cus_module_context(const cus_module *mod)
{
    return mod ? mod->ctx : NULL;
}

CUS_API cus_image_format cus_module_format(const cus_module *mod)
{
    return mod ? mod->format : CUS_IMAGE_UNKNOWN;
}

CUS_API const char *cus_module_info_log(const cus_module *mod)
{
    return mod && mod->info_log ? mod->info_log : "";
}

/* --- globals ---------------------------------------------------------------- */

static cus_status global_lookup(cus_module *mod, const char *name, CUdeviceptr *ptr,
                                size_t *bytes, const char *function)
{
    /* Looked up once per name: a global's address and size never change
     * while the module lives, and the bounds check of a copy then needs no
     * driver call. */
    pthread_mutex_lock(&mod->lock);
    for (cus_global_ *g = mod->globals; g; g = g->next) {
        if (strcmp(g->name, name) == 0) {
            *ptr = g->ptr;
            *bytes = g->size;
            pthread_mutex_unlock(&mod->lock);
            return CUS_SUCCESS;
        }
    }
    pthread_mutex_unlock(&mod->lock);
    CUdeviceptr p = 0;
    size_t n = 0;
    CUresult r = cus_drv_.cuModuleGetGlobal_(&p, &n, mod->handle, name);
    if (r == CUDA_ERROR_NOT_FOUND)
        return cus_fail_((cus_status)r, function, "cuModuleGetGlobal",
                         "no __device__ or __constant__ variable named \"%s\" in the module",
                         name);
    if (r)
        return cus_context_driver_fail_(mod->ctx, r, function, "cuModuleGetGlobal");
    size_t len = strlen(name);
    cus_global_ *g = cus_malloc_(sizeof *g + len + 1);
    if (!g) /* no memory: nothing cached, the next lookup asks again */
        cus_host_alloc_absorbed_();
    else {
        g->ptr = p;
        g->size = n;
        memcpy(g->name, name, len + 1);
        pthread_mutex_lock(&mod->lock);
        g->next = mod->globals;
        mod->globals = g;
        pthread_mutex_unlock(&mod->lock);
    }
    *ptr = p;
    *bytes = n;
    return CUS_SUCCESS;
}

CUS_API cus_status cus_module_get_global(cus_module *mod, const char *name, CUdeviceptr *ptr,
                                         size_t *bytes)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(mod && name);
    CUS_CHECK_POISON(mod->ctx);
    CUdeviceptr p;
    size_t n;
    CUS_TRY(global_lookup(mod, name, &p, &n, __func__));
    if (ptr)
        *ptr = p;
    if (bytes)
        *bytes = n;
    return CUS_SUCCESS;
}

static cus_status global_range(cus_module *mod, const char *name, size_t offset, size_t bytes,
                               CUdeviceptr *at, const char *function)
{
    CUdeviceptr p;
    size_t n;
    CUS_TRY(global_lookup(mod, name, &p, &n, function));
    if (offset > n || bytes > n - offset)
        return cus_fail_(CUS_ERROR_OUT_OF_RANGE, function, NULL,
                         "%zu bytes at offset %zu of global %s, which has %zu", bytes, offset,
                         name, n);
    *at = p + offset;
    return CUS_SUCCESS;
}

CUS_API cus_status cus_module_copy_to_global(cus_module *mod, const char *name, size_t offset,
                                             const void *src, size_t bytes)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(mod && name && (src || bytes == 0));
    CUS_CHECK_POISON(mod->ctx);
    CUdeviceptr at = 0; /* set by global_range on success; gcc -O3 cannot tell */
    CUS_TRY(global_range(mod, name, offset, bytes, &at, __func__));
    if (bytes == 0)
        return CUS_SUCCESS;
    CUS_IN_CONTEXT(mod->ctx, "cuMemcpyHtoD", cus_drv_.cuMemcpyHtoD_(at, src, bytes));
    return CUS_SUCCESS;
}

CUS_API cus_status cus_module_copy_from_global(void *dst, cus_module *mod, const char *name,
                                               size_t offset, size_t bytes)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(mod && name && (dst || bytes == 0));
    CUS_CHECK_POISON(mod->ctx);
    CUdeviceptr at = 0; /* set by global_range on success; gcc -O3 cannot tell */
    CUS_TRY(global_range(mod, name, offset, bytes, &at, __func__));
    if (bytes == 0)
        return CUS_SUCCESS;
    CUS_IN_CONTEXT(mod->ctx, "cuMemcpyDtoH", cus_drv_.cuMemcpyDtoH_(dst, at, bytes));
    return CUS_SUCCESS;
}

/* --- enumeration ------------------------------------------------------------ */

CUS_API cus_status cus_module_function_count(cus_module *mod, unsigned int *count)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(mod && count);
    CUS_CHECK_POISON(mod->ctx);
    if (!cus_drv_.cuModuleGetFunctionCount_)
        return CUS_FAIL(CUS_ERROR_NOT_SUPPORTED, "cuModuleGetFunctionCount",
                        "the driver has no cuModuleGetFunctionCount (needs 12.4)");
    unsigned int n = 0;
    CUresult r = cus_drv_.cuModuleGetFunctionCount_(&n, mod->handle);
    if (r)
        return cus_context_driver_fail_(mod->ctx, r, __func__, "cuModuleGetFunctionCount");
    *count = n;
    return CUS_SUCCESS;
}

/* Fills mod->names once, under the lock. */
static cus_status names_fill_locked(cus_module *mod, const char *function)
{
    unsigned int n = 0;
    CUresult r = cus_drv_.cuModuleGetFunctionCount_(&n, mod->handle);
    if (r)
        return cus_context_driver_fail_(mod->ctx, r, function, "cuModuleGetFunctionCount");
    CUfunction *fns = cus_calloc_(n ? n : 1, sizeof *fns);
    const char **names = cus_calloc_(n ? n : 1, sizeof *names);
    if (!fns || !names) {
        free(fns);
        free(names);
        return cus_fail_(CUS_ERROR_OUT_OF_HOST_MEMORY, function, NULL, "listing %u functions", n);
    }
    r = n ? cus_drv_.cuModuleEnumerateFunctions_(fns, n, mod->handle) : CUDA_SUCCESS;
    const char *call = "cuModuleEnumerateFunctions";
    for (unsigned int i = 0; !r && i < n; i++) {
        call = "cuFuncGetName";
        r = cus_drv_.cuFuncGetName_(&names[i], fns[i]); /* the driver's string, lives with the module */
    }
    free(fns);
    if (r) {
        free(names);
        return cus_context_driver_fail_(mod->ctx, r, function, call);
    }
    mod->names = names;
    mod->nnames = n;
    return CUS_SUCCESS;
}

CUS_API cus_status cus_module_function_names(cus_module *mod, const char **names,
                                             unsigned int capacity, unsigned int *count)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(mod && count && (names || capacity == 0));
    CUS_CHECK_POISON(mod->ctx);
    if (!cus_drv_.cuModuleGetFunctionCount_ || !cus_drv_.cuModuleEnumerateFunctions_ ||
        !cus_drv_.cuFuncGetName_)
        return CUS_FAIL(CUS_ERROR_NOT_SUPPORTED, NULL,
                        "enumerating functions needs cuModuleEnumerateFunctions and "
                        "cuFuncGetName (drivers from 12.4)");
    pthread_mutex_lock(&mod->lock);
    cus_status st = mod->names ? CUS_SUCCESS : names_fill_locked(mod, __func__);
    if (!st) {
        for (unsigned int i = 0; i < capacity && i < mod->nnames; i++)
            names[i] = mod->names[i];
        *count = mod->nnames;
    }
    pthread_mutex_unlock(&mod->lock);
    return st;
}

CUS_DEFINE_CAPTURE_KEEP(module, cus_module)

/* --- what library.c shares (module_image.h) ---------------------------------- */

cus_status cus_image_check_(const void *image, size_t size, cus_image_format *format,
                            const char *function)
{
    return check_image(image, size, format, function);
}

cus_status cus_jit_opts_build_(const char *function, cus_jit_opts_ *o, const cus_jit_options *jit,
                               char *error_log, size_t error_size, char *info_log, size_t info_size)
{
    return jit_build(function, o, jit, error_log, error_size, info_log, info_size);
}

cus_status cus_jit_load_fail_(cus_status st, const char *function, const char *driver_call,
                              cus_image_format format, const char *error_log)
{
    if (!error_log[0])
        return cus_fail_(st, function, driver_call, "loading a %s image (the JIT wrote no log)",
                         cus_image_format_name(format));
    cus_autofree char *log = dup_log(error_log);
    return cus_fail_(st, function, driver_call, "loading a %s image: %s",
                     cus_image_format_name(format), log ? log : error_log);
}

bool cus_jit_info_keep_(const char *info_log, char **kept)
{
    *kept = NULL;
    return !log_length(info_log) || (*kept = dup_log(info_log)) != NULL;
}

cus_status cus_file_read_(const char *path, unsigned char **data, size_t *size)
{
    return read_file(path, data, size);
}
