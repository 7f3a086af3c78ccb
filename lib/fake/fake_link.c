/* JIT linking: the cuLink* entry points. The fake cannot run ptxas or
 * nvlink, so it links what its parser reads: PTX. Each PTX input is checked
 * when added (the driver compiles it then: a syntax error answers
 * cuLinkAddData, CUDA_ERROR_INVALID_PTX with ptxas' message in the error
 * log); cuLinkComplete merges the inputs into one PTX module (one .version,
 * the highest; .target the link's target; the inputs' bodies one after the
 * other, so that an .extern .func of one input meets the .visible .func
 * that another defines) and parses it whole; the "cubin" it returns is that
 * PTX text, NUL-terminated, which the fake's cuModuleLoadData loads (and a
 * real driver would JIT-compile). What it refuses, and where it differs from
 * the driver, is in cuscope/fake.h ("JIT linking"). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_context.h"
#include "fake_image.h"

struct CUlinkState_st {
    fake_handle h; /* CUS_FAKE_HANDLE_LINK_STATE */
    struct CUctx_st *ctx;
    bool ctx_destroyed;  /* destroyed with its context */
    unsigned long doomed; /* the teardown ticket of its context, 0: none */
    unsigned target_cc;  /* FAKE_IMAGE_CC: CU_JIT_TARGET, or the device's */
    char *error_log, *info_log; /* the caller's buffers, or NULL */
    size_t error_size, info_size;
    /* cuLinkCreate's optionValues: the driver writes its output options
     * (the log sizes, the wall time) there during every later call, so the
     * caller must keep the array until cuLinkDestroy (cuda.h). -1: absent. */
    void **option_values;
    int error_at, info_at;           /* the log buffers' entries */
    int error_size_at, info_size_at; /* the sizes' (IN, then OUT) */
    int wall_time_at;
    char **inputs; /* PTX texts, NUL-terminated copies */
    size_t ninputs, capacity;
    unsigned version_major, version_minor; /* the highest .version seen */
    char *output; /* the merged PTX, once completed */
    size_t output_size;
};

static struct CUlinkState_st **states; /* every state since install, for teardown */
static size_t state_count, state_capacity;

static void free_payload(struct CUlinkState_st *s)
{
    for (size_t i = 0; i < s->ninputs; i++)
        free(s->inputs[i]);
    free(s->inputs);
    free(s->output);
    s->inputs = NULL;
    s->output = NULL;
    s->ninputs = s->capacity = 0;
}

static void link_reset_locked(const cus_fake_config *cfg)
{
    (void)cfg;
    for (size_t i = 0; i < state_count; i++)
        free_payload(states[i]); /* the registry frees the records */
    free(states);
    states = NULL;
    state_count = state_capacity = 0;
}

static void link_doom_locked(struct CUctx_st *c, unsigned long ticket)
{
    for (size_t i = 0; i < state_count; i++)
        if (states[i]->ctx == c && states[i]->h.state == FAKE_LIVE)
            states[i]->doomed = ticket;
}

static void link_destroy_doomed_locked(struct CUctx_st *c, unsigned long ticket)
{
    (void)c;
    for (size_t i = 0; i < state_count; i++) {
        struct CUlinkState_st *s = states[i];
        if (s->doomed == ticket && s->h.state == FAKE_LIVE) {
            s->ctx_destroyed = true;
            free_payload(s);
            fake_handle_set_state_locked(&s->h, FAKE_DESTROYED);
        }
    }
}

static const fake_area link_area = {
    .name = "link",
    .reset_order = 20,
    .teardown_order = 10,
    .reset_locked = link_reset_locked,
    .doom_locked = link_doom_locked,
    .destroy_doomed_locked = link_destroy_doomed_locked,
};
FAKE_AREA(link_area)

/* A link state argument: unknown or destroyed is misuse and
 * CUDA_ERROR_INVALID_HANDLE (NULL too, without the misuse); one destroyed
 * with its context CUDA_ERROR_CONTEXT_IS_DESTROYED; a poisoned context
 * answers its sticky error. As the events' calls, these find their context
 * through the state: no current context is needed (not checked on a GPU
 * yet: test/rules will tell). */
static CUresult state_arg_locked(CUlinkState hs, struct CUlinkState_st **out)
{
    if (!hs)
        return CUDA_ERROR_INVALID_HANDLE;
    fake_handle *h = fake_handle_find_locked((uintptr_t)hs);
    if (!h || h->kind != CUS_FAKE_HANDLE_LINK_STATE) {
        fake_misuse_locked("unknown link state 0x%" PRIxPTR, (uintptr_t)hs);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    struct CUlinkState_st *s = (struct CUlinkState_st *)h;
    if (h->state == FAKE_DESTROYED && !s->ctx_destroyed) {
        fake_misuse_locked("link state 0x%" PRIxPTR " used after cuLinkDestroy", (uintptr_t)hs);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    if (h->state == FAKE_DESTROYED || s->ctx->h.state != FAKE_LIVE) {
        fake_misuse_locked("link state 0x%" PRIxPTR " used after its context was destroyed",
                           (uintptr_t)hs);
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    }
    if (s->ctx->sticky != CUDA_SUCCESS)
        return s->ctx->sticky;
    *out = s;
    return CUDA_SUCCESS;
}

static void log_set(char *buf, size_t size, const char *text)
{
    if (buf && size)
        snprintf(buf, size, "%s", text);
}

/* Whether cuLinkCreate's optionValues still hold what they held then (the
 * log buffers' pointers, which the driver never rewrites): an array that
 * went out of scope since (a caller's stack) is caught when reused. */
static bool options_intact_locked(const struct CUlinkState_st *s)
{
    if ((s->error_at >= 0 && s->option_values[s->error_at] != s->error_log) ||
        (s->info_at >= 0 && s->option_values[s->info_at] != s->info_log)) {
        fake_misuse_locked("link state %p: cuLinkCreate's optionValues array no longer holds "
                           "its log buffers: with output options (the log sizes) it must stay "
                           "valid until cuLinkDestroy, as the driver writes it meanwhile",
                           (const void *)s);
        return false;
    }
    return true;
}

/* The output options, as the driver writes them after each call that
 * fills the logs: the bytes each log holds (without its NUL, as
 * cuModuleLoadDataEx's), the wall time (a float in the pointer's place). */
static void options_write_back_locked(struct CUlinkState_st *s)
{
    if (!s->option_values || !options_intact_locked(s))
        return;
    void **v = s->option_values;
    if (s->error_size_at >= 0)
        v[s->error_size_at] =
            (void *)(uintptr_t)(s->error_size ? strnlen(s->error_log, s->error_size) : 0);
    if (s->info_size_at >= 0)
        v[s->info_size_at] =
            (void *)(uintptr_t)(s->info_size ? strnlen(s->info_log, s->info_size) : 0);
    if (s->wall_time_at >= 0) {
        float ms = 0.0f;
        memcpy(&v[s->wall_time_at], &ms, sizeof ms);
    }
}

CUresult CUDAAPI fake_cuLinkCreate(unsigned int numOptions, CUjit_option *options,
                                   void **optionValues, CUlinkState *stateOut)
{
    FAKE_ENTER(cuLinkCreate);
    if (!stateOut || (numOptions && (!options || !optionValues)))
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    struct CUctx_st *c = NULL;
    CUresult r = fake_current_context_locked(&c);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    const int *a = fake_dev.devices[c->device].attributes;
    unsigned cc = FAKE_IMAGE_CC(a[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR],
                                a[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR]);
    char *err = NULL, *info = NULL;
    size_t err_size = 0, info_size = 0;
    int err_at = -1, info_at = -1, err_size_at = -1, info_size_at = -1, wall_at = -1;
    for (unsigned int i = 0; i < numOptions; i++) {
        uintptr_t v = (uintptr_t)optionValues[i];
        switch (options[i]) {
        case CU_JIT_ERROR_LOG_BUFFER: err = (char *)v, err_at = (int)i; break;
        case CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES: err_size = v, err_size_at = (int)i; break;
        case CU_JIT_INFO_LOG_BUFFER: info = (char *)v, info_at = (int)i; break;
        case CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES: info_size = v, info_size_at = (int)i; break;
        case CU_JIT_WALL_TIME: wall_at = (int)i; break;
        case CU_JIT_TARGET:
            /* CU_TARGET_COMPUTE_90 is 90; the arch-specific bits above are
             * not modelled */
            if ((v & 0xffff) < 30 || (v & 0xffff) > 1000)
                return fake_leave(CUDA_ERROR_INVALID_VALUE);
            cc = (unsigned)(v & 0xffff);
            break;
        default:
            if ((unsigned)options[i] >= CU_JIT_NUM_OPTIONS)
                return fake_leave(CUDA_ERROR_INVALID_VALUE);
            break; /* optimization, debug and the rest: nothing to do without ptxas */
        }
    }
    if (state_count == state_capacity) {
        size_t cap = state_capacity ? state_capacity * 2 : 16;
        struct CUlinkState_st **grown = realloc(states, cap * sizeof *grown);
        if (!grown)
            return fake_leave(CUDA_ERROR_OUT_OF_MEMORY);
        states = grown;
        state_capacity = cap;
    }
    struct CUlinkState_st *s = fake_handle_new_locked(CUS_FAKE_HANDLE_LINK_STATE, sizeof *s, 0);
    if (!s)
        return fake_leave(CUDA_ERROR_OUT_OF_MEMORY);
    s->ctx = c;
    s->target_cc = cc;
    s->error_log = err;
    s->error_size = err ? err_size : 0;
    s->info_log = info;
    s->info_size = info ? info_size : 0;
    s->option_values = optionValues;
    s->error_at = err_at;
    s->info_at = info_at;
    s->error_size_at = err_size_at;
    s->info_size_at = info_size_at;
    s->wall_time_at = wall_at;
    log_set(s->error_log, s->error_size, "");
    log_set(s->info_log, s->info_size, "");
    states[state_count++] = s;
    *stateOut = s;
    return fake_leave(CUDA_SUCCESS);
}

/* Whether the parser's error says only that a called function is not
 * defined in this input: what a relocatable compile (the driver's, for a
 * link input) accepts. */
static bool only_unresolved(const char *log)
{
    return strstr(log, "Unresolved extern function '") != NULL;
}

/* Adds len bytes of PTX text (not NUL-terminated) to s. */
static CUresult add_ptx_locked(struct CUlinkState_st *s, const char *text, size_t len)
{
    char *copy = malloc(len + 1);
    if (!copy)
        return CUDA_ERROR_OUT_OF_MEMORY;
    memcpy(copy, text, len);
    copy[len] = 0;
    char err[1024] = "";
    fake_image *img = NULL;
    CUresult r = fake_image_parse(copy, len + 1, s->target_cc, &img, err, sizeof err, NULL, 0);
    if (r == CUDA_SUCCESS) {
        fake_image_free(img);
    } else if (!(r == CUDA_ERROR_INVALID_PTX && only_unresolved(err))) {
        log_set(s->error_log, s->error_size, err);
        free(copy);
        /* Binary bytes given as PTX: ptxas' answer (the parser calls them an
         * invalid image) */
        return r == CUDA_ERROR_INVALID_IMAGE ? CUDA_ERROR_INVALID_PTX : r;
    }
    /* the .version: "major.minor" after the directive */
    const char *v = strstr(copy, ".version");
    unsigned major = 0, minor = 0;
    if (v && sscanf(v + 8, " %u.%u", &major, &minor) == 2 &&
        (major > s->version_major || (major == s->version_major && minor > s->version_minor))) {
        s->version_major = major;
        s->version_minor = minor;
    }
    if (s->ninputs == s->capacity) {
        size_t cap = s->capacity ? s->capacity * 2 : 4;
        char **grown = realloc(s->inputs, cap * sizeof *grown);
        if (!grown) {
            free(copy);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        s->inputs = grown;
        s->capacity = cap;
    }
    s->inputs[s->ninputs++] = copy;
    return CUDA_SUCCESS;
}

/* The checks of an add; then PTX only. */
static CUresult add_locked(CUlinkState state, CUjitInputType type, const char *data, size_t size,
                           struct CUlinkState_st **out)
{
    struct CUlinkState_st *s = NULL;
    CUresult r = state_arg_locked(state, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if ((unsigned)type >= CU_JIT_NUM_INPUT_TYPES)
        return CUDA_ERROR_INVALID_VALUE;
    if (s->output) {
        fake_misuse_locked("input added to link state %p after cuLinkComplete", (void *)s);
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (type != CU_JIT_INPUT_PTX) {
        fake_misuse_locked("the fake driver links PTX inputs only (it has no nvlink): input "
                           "type %d refused with CUDA_ERROR_NOT_SUPPORTED; link with nvJitLink "
                           "or give PTX", (int)type);
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    log_set(s->error_log, s->error_size, "");
    *out = s;
    r = add_ptx_locked(s, data, strnlen(data, size));
    options_write_back_locked(s);
    return r;
}

CUresult CUDAAPI fake_cuLinkAddData(CUlinkState state, CUjitInputType type, void *data,
                                    size_t size, const char *name, unsigned int numOptions,
                                    CUjit_option *options, void **optionValues)
{
    (void)name, (void)options, (void)optionValues;
    FAKE_ENTER(cuLinkAddData);
    if (!data || !size || (numOptions && (!options || !optionValues)))
        return fake_leave(state ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_INVALID_HANDLE);
    struct CUlinkState_st *s = NULL;
    return fake_leave(add_locked(state, type, data, size, &s));
}

CUresult CUDAAPI fake_cuLinkAddFile(CUlinkState state, CUjitInputType type, const char *path,
                                    unsigned int numOptions, CUjit_option *options,
                                    void **optionValues)
{
    (void)options, (void)optionValues;
    FAKE_ENTER(cuLinkAddFile);
    if (!path || (numOptions && (!options || !optionValues)))
        return fake_leave(state ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_INVALID_HANDLE);
    struct CUlinkState_st *s = NULL;
    CUresult r = state_arg_locked(state, &s);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    FILE *f = fopen(path, "rb");
    if (!f)
        return fake_leave(CUDA_ERROR_FILE_NOT_FOUND);
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 4096 > cap) {
            cap = cap ? cap * 2 : 65536;
            char *grown = realloc(buf, cap);
            if (!grown) {
                free(buf);
                fclose(f);
                return fake_leave(CUDA_ERROR_OUT_OF_MEMORY);
            }
            buf = grown;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0)
            break;
    }
    bool bad = ferror(f);
    fclose(f);
    if (bad || len == 0) {
        free(buf);
        return fake_leave(bad ? CUDA_ERROR_FILE_NOT_FOUND : CUDA_ERROR_INVALID_VALUE);
    }
    r = add_locked(state, type, buf, len, &s);
    free(buf);
    return fake_leave(r);
}

/* Appends n bytes to the growing text *t (length *len, capacity *cap). */
static bool append(char **t, size_t *len, size_t *cap, const char *s, size_t n)
{
    if (*len + n + 1 > *cap) {
        size_t want = (*len + n + 1) * 2;
        char *grown = realloc(*t, want);
        if (!grown)
            return false;
        *t = grown;
        *cap = want;
    }
    memcpy(*t + *len, s, n);
    *len += n;
    (*t)[*len] = 0;
    return true;
}

/* Whether the line at p (up to end) is one of the module header's
 * directives, which the merged module has once. */
static bool header_line(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    static const char *const dirs[] = {".version", ".target", ".address_size"};
    for (size_t i = 0; i < 3; i++) {
        size_t n = strlen(dirs[i]);
        if ((size_t)(end - p) > n && memcmp(p, dirs[i], n) == 0 &&
            (p[n] == ' ' || p[n] == '\t'))
            return true;
    }
    return false;
}

static CUresult merge_locked(struct CUlinkState_st *s, char **out, size_t *out_len)
{
    char *t = NULL;
    size_t len = 0, cap = 0;
    char head[128];
    int n = snprintf(head, sizeof head,
                     "// linked by the cuscope fake driver from %zu PTX input(s)\n"
                     ".version %u.%u\n.target sm_%u\n.address_size 64\n",
                     s->ninputs, s->version_major, s->version_minor, s->target_cc);
    if (!append(&t, &len, &cap, head, (size_t)n))
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (size_t i = 0; i < s->ninputs; i++) {
        for (const char *p = s->inputs[i]; *p;) {
            const char *nl = strchr(p, '\n');
            const char *end = nl ? nl + 1 : p + strlen(p);
            if (!header_line(p, end) && !append(&t, &len, &cap, p, (size_t)(end - p))) {
                free(t);
                return CUDA_ERROR_OUT_OF_MEMORY;
            }
            p = end;
        }
        if (!append(&t, &len, &cap, "\n", 1)) {
            free(t);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    *out = t;
    *out_len = len;
    return CUDA_SUCCESS;
}

/* The completion, once the state is known; the lock is held. */
static CUresult complete_locked(struct CUlinkState_st *s, void **cubinOut, size_t *sizeOut)
{
    CUresult r;
    if (!s->output) {
        /* Nothing to link: not checked on a GPU; nvJitLink 13.0 answers its
         * internal error. */
        if (!s->ninputs) {
            log_set(s->error_log, s->error_size, "error   : no input to link\n");
            return CUDA_ERROR_INVALID_VALUE;
        }
        char *text = NULL;
        size_t len = 0;
        if ((r = merge_locked(s, &text, &len)) != CUDA_SUCCESS)
            return r;
        char err[1024] = "";
        fake_image *img = NULL;
        r = fake_image_parse(text, len + 1, s->target_cc, &img, err, sizeof err, s->info_log,
                             s->info_size);
        if (r != CUDA_SUCCESS) {
            free(text);
            const char *u = strstr(err, "Unresolved extern function '");
            if (r == CUDA_ERROR_INVALID_PTX && u) {
                /* nvlink's words; CUDA_ERROR_UNKNOWN is nvJitLink 13.0's
                 * answer (its internal error): the driver's is not checked
                 * on a GPU yet */
                char msg[512];
                const char *name = u + strlen("Unresolved extern function '");
                const char *q = strchr(name, '\'');
                snprintf(msg, sizeof msg, "error   : Undefined reference to '%.*s'\n",
                         (int)(q ? q - name : 0), name);
                log_set(s->error_log, s->error_size, msg);
                return CUDA_ERROR_UNKNOWN;
            }
            log_set(s->error_log, s->error_size, err);
            return r;
        }
        fake_image_free(img);
        s->output = text;
        s->output_size = len + 1;
    }
    *cubinOut = s->output;
    if (sizeOut)
        *sizeOut = s->output_size;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuLinkComplete(CUlinkState state, void **cubinOut, size_t *sizeOut)
{
    FAKE_ENTER(cuLinkComplete);
    struct CUlinkState_st *s = NULL;
    CUresult r = state_arg_locked(state, &s);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (!cubinOut) /* sizeOut is "optional" (cuda.h) */
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    r = complete_locked(s, cubinOut, sizeOut);
    options_write_back_locked(s);
    return fake_leave(r);
}

CUresult CUDAAPI fake_cuLinkDestroy(CUlinkState state)
{
    FAKE_ENTER(cuLinkDestroy);
    struct CUlinkState_st *s = NULL;
    CUresult r = state_arg_locked(state, &s);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    free_payload(s);
    fake_handle_set_state_locked(&s->h, FAKE_DESTROYED);
    return fake_leave(CUDA_SUCCESS);
}
