/* Modules, functions, globals, launches: cuModule*, cuFunc*, cuLaunchKernel*,
 * cuOccupancy*, the launch record and the host implementations of kernels.
 *
 * A module is a registered record (kind MODULE) in the context that was
 * current at load, holding the parsed image (fake_image.c), one function
 * record per kernel and one block of device memory per global. Function
 * records are not registry handles (they would count as live handles of some
 * kind): they live in their module's array, are found through a private
 * pointer set, and stay, like every record, until the next install, so that
 * a function of an unloaded module is recognised and reported rather than
 * undefined. Unloading (cuModuleUnload, or the context's death) frees the
 * image and the globals; the records and the kernel names stay (the launch
 * records point at the names).
 *
 * A launch is validated, its arguments are copied by the kernel's layout into
 * a record kept in a ring (cus_fake_launch_at), and a LAUNCH operation is
 * queued. When it executes, in stream order, the host implementation
 * registered for the kernel's name runs on the executing thread without the
 * lock (fake_stream_call_unlocked_locked), and a sticky result poisons the
 * context (struct CUctx_st's `sticky`). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/status.h"
#include "fake_image.h"
#include "fake_module.h"

/* --- records ---------------------------------------------------------------------------- */

struct CUfunc_st {
    struct CUmod_st *mod;
    char *name;                     /* owned; kept until install */
    const fake_image_function *fi;  /* the image's entry; NULL once the module is unloaded */
    int max_dynamic_shared;
    int carveout;
    int required_cluster[3];
    int non_portable_cluster;
    int cluster_policy;
    CUfunc_cache cache_config;
    CUsharedconfig shared_config;
};

struct CUmod_st {
    fake_handle h; /* kind MODULE */
    struct CUctx_st *ctx;
    fake_image *img;              /* NULL once unloaded */
    size_t nfunctions;
    struct CUfunc_st *functions;  /* kept until install */
    size_t nglobals;
    fake_mem **globals;           /* img->globals[i]'s memory; NULL once unloaded */
    size_t const_bytes;           /* the __constant__ globals */
    int num_regs;
    int ptx_version, binary_version;
    bool ctx_destroyed;           /* unloaded by its context's death */
    unsigned long doomed;
};

/* A queued launch: the record without its 4 KiB argument area, and only the
 * argument bytes the kernel has (a program that queues many launches holds
 * little per launch). The full cus_fake_launch is built when it runs. */
struct fake_launch_exec {
    struct CUfunc_st *fn;
    CUcontext context;
    CUstream stream;
    unsigned int grid[3], block[3], cluster[3];
    unsigned int shared_bytes;
    bool cooperative, extended;
    bool captured;          /* a graph node's (its stream was capturing) */
    CUgraphExec graph_exec; /* a replay's: the executable graph launched */
    size_t nargs, arg_bytes;
    unsigned char args[];
};

/* --- state ---------------------------------------------------------------------------- */

static struct CUmod_st **modules; /* every module since install */
static size_t module_count, module_capacity;

/* Every function record since install, for recognising CUfunction values:
 * open addressing, power-of-two capacity, at most half full, no removal. */
static struct CUfunc_st **fn_set;
static size_t fn_set_capacity, fn_set_used;

#define LAUNCH_RING 256
static cus_fake_launch launch_ring[LAUNCH_RING]; /* bytes past arg_bytes are zero */
static unsigned long launch_count;

#define MAX_KERNELS 64
static struct {
    char *name; /* NULL: a free slot */
    cus_fake_kernel_fn fn;
    void *user;
} kernels[MAX_KERNELS];

/* The CUjit_option values of CUDA 13.0 (CU_JIT_NUM_OPTIONS), fixed so that
 * the fake answers the same with any headers. */
#define JIT_OPTION_COUNT 35

static void module_reset_locked(const cus_fake_config *cfg)
{
    (void)cfg;
    for (size_t i = 0; i < module_count; i++) {
        struct CUmod_st *m = modules[i];
        fake_image_free(m->img);
        free(m->globals); /* the blocks went with the memory reset */
        for (size_t j = 0; j < m->nfunctions; j++)
            free(m->functions[j].name);
        free(m->functions);
        /* the registry frees the record */
    }
    free(modules);
    modules = NULL;
    module_count = module_capacity = 0;
    free(fn_set);
    fn_set = NULL;
    fn_set_capacity = fn_set_used = 0;
    launch_count = 0;
    memset(launch_ring, 0, sizeof launch_ring);
    for (int i = 0; i < MAX_KERNELS; i++)
        free(kernels[i].name);
    memset(kernels, 0, sizeof kernels);
}

/* --- the function set ---------------------------------------------------------------------- */

static size_t fn_slot(const void *p, size_t cap)
{
    return (size_t)(((uint64_t)(uintptr_t)p * UINT64_C(0x9E3779B97F4A7C15)) >> 17) & (cap - 1);
}

/* Room for n more entries. */
static bool fn_set_reserve(size_t n)
{
    if ((fn_set_used + n) * 2 <= fn_set_capacity)
        return true;
    size_t cap = fn_set_capacity ? fn_set_capacity : 64;
    while ((fn_set_used + n) * 2 > cap)
        cap *= 2;
    struct CUfunc_st **s = calloc(cap, sizeof *s);
    if (!s)
        return false;
    for (size_t i = 0; i < fn_set_capacity; i++) {
        if (!fn_set[i])
            continue;
        size_t j = fn_slot(fn_set[i], cap);
        while (s[j])
            j = (j + 1) & (cap - 1);
        s[j] = fn_set[i];
    }
    free(fn_set);
    fn_set = s;
    fn_set_capacity = cap;
    return true;
}

static void fn_set_add(struct CUfunc_st *f)
{
    size_t j = fn_slot(f, fn_set_capacity);
    while (fn_set[j])
        j = (j + 1) & (fn_set_capacity - 1);
    fn_set[j] = f;
    fn_set_used++;
}

/* Never dereferences f: only compares it. */
static struct CUfunc_st *fn_set_find(const void *f)
{
    if (!f || !fn_set_capacity)
        return NULL;
    for (size_t j = fn_slot(f, fn_set_capacity);; j = (j + 1) & (fn_set_capacity - 1)) {
        if (fn_set[j] == f)
            return fn_set[j];
        if (!fn_set[j])
            return NULL;
    }
}

/* --- argument checks ----------------------------------------------------------------------- */

static const int *device_attrs(const struct CUctx_st *c)
{
    return fake_dev.devices[c->device].attributes;
}

/* A module argument. Unknown and unloaded modules are misuse and
 * CUDA_ERROR_INVALID_HANDLE (NULL too, without the misuse); `healthy`: a
 * poisoned context answers its sticky error. */
static CUresult module_arg_locked(CUmodule hmod, bool healthy, struct CUmod_st **out)
{
    if (!hmod)
        return CUDA_ERROR_INVALID_HANDLE;
    fake_handle *h = fake_handle_find_locked((uintptr_t)hmod);
    if (!h || h->kind != CUS_FAKE_HANDLE_MODULE) {
        fake_misuse_locked("unknown module handle 0x%" PRIxPTR, (uintptr_t)hmod);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    struct CUmod_st *m = (struct CUmod_st *)h;
    if (h->state != FAKE_LIVE || m->ctx->h.state != FAKE_LIVE) {
        if (h->state != FAKE_LIVE && !m->ctx_destroyed)
            fake_misuse_locked("module 0x%" PRIxPTR " used after cuModuleUnload", (uintptr_t)hmod);
        else
            fake_misuse_locked("module 0x%" PRIxPTR " used after its context was destroyed",
                               (uintptr_t)hmod);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    if (healthy && m->ctx->sticky != CUDA_SUCCESS)
        return m->ctx->sticky;
    *out = m;
    return CUDA_SUCCESS;
}

/* A function argument, by the same rules; NULL answers if_null. */
static CUresult function_arg_locked(CUfunction hfunc, CUresult if_null, struct CUfunc_st **out)
{
    if (!hfunc)
        return if_null;
    struct CUfunc_st *f = fn_set_find(hfunc);
    if (!f) {
        fake_misuse_locked("unknown function handle 0x%" PRIxPTR, (uintptr_t)hfunc);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    struct CUmod_st *m = f->mod;
    if (m->h.state != FAKE_LIVE || m->ctx->h.state != FAKE_LIVE) {
        fake_misuse_locked("function 0x%" PRIxPTR " ('%s') used after its module 0x%" PRIxPTR
                           " was unloaded%s",
                           (uintptr_t)hfunc, f->name, (uintptr_t)m,
                           m->h.state == FAKE_LIVE || m->ctx_destroyed ? " with its context" : "");
        return CUDA_ERROR_INVALID_HANDLE;
    }
    if (m->ctx->sticky != CUDA_SUCCESS)
        return m->ctx->sticky;
    *out = f;
    return CUDA_SUCCESS;
}

/* --- function properties --------------------------------------------------------------------- */

static unsigned long long reqntid_threads(const fake_image_function *fi)
{
    if (!fi->reqntid[0])
        return 0;
    unsigned long long n = fi->reqntid[0];
    n *= fi->reqntid[1] ? fi->reqntid[1] : 1;
    n *= fi->reqntid[2] ? fi->reqntid[2] : 1;
    return n;
}

/* Threads per block the function allows: the device's limit, .maxntid and
 * .reqntid. */
static int max_threads_of(const struct CUfunc_st *f)
{
    const int *a = device_attrs(f->mod->ctx);
    unsigned long long n = (unsigned long long)a[CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK];
    if (f->fi->max_threads && f->fi->max_threads < n)
        n = f->fi->max_threads;
    unsigned long long req = reqntid_threads(f->fi);
    if (req && req < n)
        n = req;
    return (int)n;
}

static int static_shared_of(const struct CUfunc_st *f)
{
    return f->fi->static_shared > INT32_MAX ? INT32_MAX : (int)f->fi->static_shared;
}

/* The driver's default: the per-block limit minus the static shared memory. */
static int default_dynamic_shared(const struct CUfunc_st *f)
{
    int limit = device_attrs(f->mod->ctx)[CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK];
    int st = static_shared_of(f);
    return st > limit ? 0 : limit - st;
}

static int optin_dynamic_shared(const struct CUfunc_st *f)
{
    int limit = device_attrs(f->mod->ctx)[CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN];
    int st = static_shared_of(f);
    return st > limit ? 0 : limit - st;
}

/* What occupancy depends on, copied so that it can be computed unlocked. */
typedef struct occupancy_in {
    int max_threads;        /* of the function */
    int max_dynamic_shared; /* of the function */
    size_t static_shared;
    int num_regs;
    int warp, threads_per_sm, blocks_per_sm, regs_per_sm, shared_per_sm, reserved_shared;
    int sm_count;
} occupancy_in;

static occupancy_in occupancy_of(const struct CUfunc_st *f)
{
    const int *a = device_attrs(f->mod->ctx);
    occupancy_in o = {
        .max_threads = max_threads_of(f),
        .max_dynamic_shared = f->max_dynamic_shared,
        .static_shared = f->fi->static_shared,
        .num_regs = f->mod->num_regs,
        .warp = a[CU_DEVICE_ATTRIBUTE_WARP_SIZE] > 0 ? a[CU_DEVICE_ATTRIBUTE_WARP_SIZE] : 32,
        .threads_per_sm = a[CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR],
        .blocks_per_sm = a[CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR],
        .regs_per_sm = a[CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR],
        .shared_per_sm = a[CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR],
        .reserved_shared = a[CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK],
        .sm_count = a[CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT],
    };
    return o;
}

/* Resident blocks per multiprocessor: the smallest of the limits by warps,
 * blocks, registers (256-register granules per warp) and shared memory
 * (128-byte granules, the reserved 1 KiB per block included). */
static int blocks_per_sm(const occupancy_in *o, int block, size_t dynamic_shared)
{
    if (block <= 0 || block > o->max_threads || dynamic_shared > (size_t)o->max_dynamic_shared)
        return 0;
    long long warps = (block + o->warp - 1) / o->warp;
    long long n = o->blocks_per_sm;
    long long by_warps = (o->threads_per_sm / o->warp) / warps;
    if (by_warps < n)
        n = by_warps;
    long long regs_per_warp = ((long long)o->num_regs * o->warp + 255) / 256 * 256;
    if (regs_per_warp > 0) {
        long long by_regs = o->regs_per_sm / (regs_per_warp * warps);
        if (by_regs < n)
            n = by_regs;
    }
    unsigned long long smem = (unsigned long long)o->static_shared + dynamic_shared +
                              (unsigned long long)o->reserved_shared;
    smem = (smem + 127) / 128 * 128;
    if (smem > 0) {
        unsigned long long by_smem = (unsigned long long)o->shared_per_sm / smem;
        if (by_smem < (unsigned long long)n)
            n = (long long)by_smem;
    }
    return n < 0 ? 0 : (int)n;
}

/* --- loading --------------------------------------------------------------------------------- */

typedef struct jit_options {
    char *info, *error;            /* log buffers, or NULL */
    size_t info_size, error_size;  /* their sizes (0: nothing written) */
    int info_size_at, error_size_at, wall_time_at; /* option indexes to write back, or -1 */
    unsigned max_registers;        /* 0: none */
    int target;                    /* a CUjit_target, or 0 */
} jit_options;

/* An "sm_90a" or a CUjit_target: the number, and 'a' (1) or 'f' (2) variants. */
typedef struct arch {
    unsigned sm;
    unsigned variant;
} arch;

static arch arch_of_target_string(const char *t)
{
    arch a = {0, 0};
    const char *u = strchr(t, '_');
    if (!u)
        return a;
    for (u++; *u >= '0' && *u <= '9' && a.sm < 100000; u++)
        a.sm = a.sm * 10 + (unsigned)(*u - '0');
    a.variant = *u == 'a' ? 1 : *u == 'f' ? 2 : 0;
    return a;
}

static bool jit_target_known(int t)
{
    static const unsigned known[] = {30, 32, 35, 37, 50, 52, 53, 60, 61, 62, 70, 72,
                                     75, 80, 86, 87, 89, 90, 100, 101, 103, 110, 120, 121};
    unsigned base = (unsigned)t & 0xffffu, variant = (unsigned)t >> 16;
    if (t <= 0 || variant > 2 || (variant && base < 90))
        return false;
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (known[i] == base)
            return true;
    return false;
}

/* Whether SASS for a runs on a device of compute capability major.minor:
 * the same major version and a minor at or below the device's; the 'a'
 * variant only on exactly that one. */
static bool sass_runs_on(arch a, int major, int minor)
{
    if (a.variant == 1)
        return a.sm == (unsigned)(major * 10 + minor);
    return a.sm / 10 == (unsigned)major && a.sm % 10 <= (unsigned)minor;
}

/* The newest PTX ISA a driver of that version JIT-compiles. */
static unsigned ptx_isa_supported(int driver_version)
{
    int major = driver_version / 1000, minor = driver_version % 1000 / 10;
    if (major >= 13)
        return (unsigned)(90 + minor);
    if (major == 12) {
        static const unsigned by_minor[] = {80, 81, 82, 83, 84, 85, 85, 86, 87, 88};
        return minor < 10 ? by_minor[minor] : 88;
    }
    if (major == 11)
        return (unsigned)(70 + minor);
    return 63;
}

static void log_set(char *buf, size_t size, const char *fmt, ...) FAKE_PRINTF(3, 4);
static void log_set(char *buf, size_t size, const char *fmt, ...)
{
    if (!buf || !size)
        return;
    va_list ap;
    va_start(ap, fmt);
    (void)vsnprintf(buf, size, fmt, ap);
    va_end(ap);
}

/* Reads the options of cuModuleLoadDataEx; CUDA_ERROR_INVALID_VALUE for an
 * unknown option or a bad value. */
static CUresult jit_options_parse(unsigned int n, const CUjit_option *options, void **values,
                                  jit_options *jit)
{
    memset(jit, 0, sizeof *jit);
    jit->info_size_at = jit->error_size_at = jit->wall_time_at = -1;
    if (n == 0)
        return CUDA_SUCCESS;
    if (!options || !values || n > INT32_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned int i = 0; i < n; i++) {
        uintptr_t v = (uintptr_t)values[i];
        switch ((int)options[i]) {
        case CU_JIT_INFO_LOG_BUFFER:
            jit->info = values[i];
            break;
        case CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES:
            jit->info_size = (unsigned int)v;
            jit->info_size_at = (int)i;
            break;
        case CU_JIT_ERROR_LOG_BUFFER:
            jit->error = values[i];
            break;
        case CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES:
            jit->error_size = (unsigned int)v;
            jit->error_size_at = (int)i;
            break;
        case CU_JIT_OPTIMIZATION_LEVEL:
            if ((unsigned int)v > 4)
                return CUDA_ERROR_INVALID_VALUE;
            break;
        case CU_JIT_MAX_REGISTERS:
            jit->max_registers = (unsigned int)v; /* ptxas clamps it; any value goes */
            break;
        case CU_JIT_GENERATE_LINE_INFO:
        case CU_JIT_GENERATE_DEBUG_INFO:
        case CU_JIT_LOG_VERBOSE:
            if ((unsigned int)v > 1)
                return CUDA_ERROR_INVALID_VALUE;
            break;
        case CU_JIT_TARGET:
            if (!jit_target_known((int)v))
                return CUDA_ERROR_INVALID_VALUE;
            jit->target = (int)v;
            break;
        case CU_JIT_FALLBACK_STRATEGY:
            if ((unsigned int)v > CU_PREFER_BINARY)
                return CUDA_ERROR_INVALID_VALUE;
            break;
        case CU_JIT_CACHE_MODE:
            if ((unsigned int)v > CU_JIT_CACHE_OPTION_CA)
                return CUDA_ERROR_INVALID_VALUE;
            break;
        case CU_JIT_WALL_TIME:
            jit->wall_time_at = (int)i;
            break;
        default:
            /* The other options of the driver are accepted and have no effect. */
            if ((int)options[i] < 0 || (int)options[i] >= JIT_OPTION_COUNT)
                return CUDA_ERROR_INVALID_VALUE;
            break;
        }
    }
    if (!jit->info)
        jit->info_size = 0;
    if (!jit->error)
        jit->error_size = 0;
    return CUDA_SUCCESS;
}

/* The out values: the bytes each log holds (without its NUL), the wall time. */
static void jit_options_write_back(const jit_options *jit, void **values)
{
    if (jit->info_size_at >= 0)
        values[jit->info_size_at] =
            (void *)(uintptr_t)(jit->info_size ? strnlen(jit->info, jit->info_size) : 0);
    if (jit->error_size_at >= 0)
        values[jit->error_size_at] =
            (void *)(uintptr_t)(jit->error_size ? strnlen(jit->error, jit->error_size) : 0);
    if (jit->wall_time_at >= 0) {
        float ms = 0.0f; /* the driver stores a float in the pointer's place */
        memcpy(&values[jit->wall_time_at], &ms, sizeof ms);
    }
}

/* Checks an image against the context's device (and the JIT target), and
 * sets the module's versions. */
static CUresult check_image_locked(const struct CUctx_st *c, const fake_image *img,
                                   const jit_options *jit, struct CUmod_st *m)
{
    const int *a = device_attrs(c);
    int major = a[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR];
    int minor = a[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR];
    arch t = arch_of_target_string(img->target);
    m->ptx_version = m->binary_version = (int)t.sm;
    switch (img->format) {
    case FAKE_IMAGE_CUBIN:
        if (!sass_runs_on(t, major, minor))
            return CUDA_ERROR_NO_BINARY_FOR_GPU;
        break;
    case FAKE_IMAGE_PTX: {
        unsigned isa = img->ptx_version_major * 10 + img->ptx_version_minor;
        unsigned supported = ptx_isa_supported(fake_g.driver_version);
        if (isa > supported) {
            log_set(jit->error, jit->error_size,
                    "ptxas fatal   : Unsupported .version %u.%u; current version is '%u.%u'\n",
                    img->ptx_version_major, img->ptx_version_minor, supported / 10,
                    supported % 10);
            return CUDA_ERROR_UNSUPPORTED_PTX_VERSION;
        }
        arch j = {(unsigned)(major * 10 + minor), 0};
        if (jit->target)
            j = (arch){(unsigned)jit->target & 0xffffu, (unsigned)jit->target >> 16};
        if (t.sm > j.sm) {
            log_set(jit->error, jit->error_size,
                    "ptxas fatal   : SM version specified by .target is higher than default SM "
                    "version assumed\n");
            return CUDA_ERROR_INVALID_PTX;
        }
        if (!sass_runs_on(j, major, minor))
            return CUDA_ERROR_NO_BINARY_FOR_GPU;
        m->binary_version = (int)j.sm;
        if (jit->max_registers && jit->max_registers < (unsigned)m->num_regs)
            m->num_regs = jit->max_registers < 16 ? 16 : (int)jit->max_registers;
        break;
    }
    case FAKE_IMAGE_FATBIN:
        /* The parser took the newest code in it without knowing the device;
         * the driver would pick among the entries: accepted as it is. */
        break;
    }
    return CUDA_SUCCESS;
}

static bool reserve_module_slot_locked(void)
{
    if (module_count < module_capacity)
        return true;
    size_t cap = module_capacity ? module_capacity * 2 : 16;
    struct CUmod_st **list = realloc(modules, cap * sizeof *list);
    if (!list)
        return false;
    modules = list;
    module_capacity = cap;
    return true;
}

/* Frees what a module owns beyond its records (the image and the globals). */
static void unload_locked(struct CUmod_st *m, bool with_context)
{
    for (size_t i = 0; i < m->nglobals; i++)
        if (m->globals[i])
            fake_memory_global_release_locked(m->globals[i], with_context);
    free(m->globals);
    m->globals = NULL;
    for (size_t i = 0; i < m->nfunctions; i++)
        m->functions[i].fi = NULL;
    fake_image_free(m->img);
    m->img = NULL;
    m->ctx_destroyed = with_context;
    fake_handle_set_state_locked(&m->h, FAKE_DESTROYED);
}

/* Loads a parsed image into c; takes img (freed on failure). */
static CUresult create_module_locked(struct CUctx_st *c, fake_image *img, const jit_options *jit,
                                     CUmodule *out)
{
    struct CUmod_st proto = {.ctx = c, .num_regs = 32};
    CUresult r = check_image_locked(c, img, jit, &proto);
    if (r != CUDA_SUCCESS) {
        if (jit->info_size)
            jit->info[0] = '\0'; /* no info log from a failed load */
        fake_image_free(img);
        return r;
    }
    struct CUfunc_st *fns = calloc(img->nfunctions ? img->nfunctions : 1, sizeof *fns);
    fake_mem **globals = calloc(img->nglobals ? img->nglobals : 1, sizeof *globals);
    r = fns && globals && reserve_module_slot_locked() && fn_set_reserve(img->nfunctions)
            ? CUDA_SUCCESS
            : CUDA_ERROR_OUT_OF_MEMORY;
    for (size_t i = 0; r == CUDA_SUCCESS && i < img->nfunctions; i++) {
        const fake_image_function *fi = &img->functions[i];
        fns[i].name = strdup(fi->name);
        if (!fns[i].name)
            r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    for (size_t i = 0; r == CUDA_SUCCESS && i < img->nglobals; i++) {
        const fake_image_global *g = &img->globals[i];
        r = fake_memory_global_new_locked(c, g->size, &globals[i]);
        if (r == CUDA_SUCCESS && g->init && g->size)
            memcpy(fake_memory_global_base(globals[i]), g->init, g->size);
    }
    struct CUmod_st *m = NULL;
    if (r == CUDA_SUCCESS) {
        m = fake_handle_new_locked(CUS_FAKE_HANDLE_MODULE, sizeof *m, 0);
        if (!m)
            r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (r != CUDA_SUCCESS) {
        for (size_t i = 0; globals && i < img->nglobals; i++)
            if (globals[i])
                fake_memory_global_release_locked(globals[i], false);
        for (size_t i = 0; fns && i < img->nfunctions; i++)
            free(fns[i].name);
        free(fns);
        free(globals);
        fake_image_free(img);
        return r;
    }
    m->ctx = c;
    m->img = img;
    m->num_regs = proto.num_regs;
    m->ptx_version = proto.ptx_version;
    m->binary_version = proto.binary_version;
    m->nfunctions = img->nfunctions;
    m->functions = fns;
    m->nglobals = img->nglobals;
    m->globals = globals;
    for (size_t i = 0; i < img->nglobals; i++)
        if (img->globals[i].constant)
            m->const_bytes += img->globals[i].size;
    for (size_t i = 0; i < img->nfunctions; i++) {
        struct CUfunc_st *f = &fns[i];
        f->mod = m;
        f->fi = &img->functions[i];
        f->max_dynamic_shared = default_dynamic_shared(f);
        f->carveout = CU_SHAREDMEM_CARVEOUT_DEFAULT;
        f->cache_config = CU_FUNC_CACHE_PREFER_NONE;
        f->shared_config = CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE;
        fn_set_add(f);
    }
    modules[module_count++] = m;
    *out = m;
    return CUDA_SUCCESS;
}

/* The loads: parse `size` bytes (SIZE_MAX: unknown) into the current context. */
static CUresult load_locked(CUmodule *module, const void *image, size_t size, jit_options *jit)
{
    if (!module || !image)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUctx_st *c = NULL;
    CUresult r = fake_current_context_locked(&c);
    if (r != CUDA_SUCCESS)
        return r;
    fake_image *img = NULL;
    r = fake_image_parse(image, size, &img, jit->error, jit->error_size, jit->info,
                         jit->info_size);
    if (r != CUDA_SUCCESS)
        return r;
    return create_module_locked(c, img, jit, module);
}

CUresult CUDAAPI fake_cuModuleLoadData(CUmodule *module, const void *image)
{
    FAKE_ENTER(cuModuleLoadData);
    jit_options jit;
    (void)jit_options_parse(0, NULL, NULL, &jit);
    return fake_leave(load_locked(module, image, SIZE_MAX, &jit));
}

CUresult CUDAAPI fake_cuModuleLoadDataEx(CUmodule *module, const void *image,
                                         unsigned int numOptions, CUjit_option *options,
                                         void **optionValues)
{
    FAKE_ENTER(cuModuleLoadDataEx);
    jit_options jit;
    CUresult r = jit_options_parse(numOptions, options, optionValues, &jit);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    r = load_locked(module, image, SIZE_MAX, &jit);
    if (numOptions)
        jit_options_write_back(&jit, optionValues);
    return fake_leave(r);
}

CUresult CUDAAPI fake_cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{
    FAKE_ENTER(cuModuleLoadFatBinary);
    jit_options jit;
    (void)jit_options_parse(0, NULL, NULL, &jit);
    return fake_leave(load_locked(module, fatCubin, SIZE_MAX, &jit));
}

/* The whole file, NUL-terminated (so PTX is a string), and its size. */
static CUresult read_file(const char *path, unsigned char **data, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return CUDA_ERROR_FILE_NOT_FOUND;
    unsigned char *buf = NULL;
    size_t len = 0, cap = 0;
    CUresult r = CUDA_SUCCESS;
    for (;;) {
        if (cap - len < 4096 + 1) {
            size_t ncap = cap ? cap * 2 : 65536;
            unsigned char *nb = realloc(buf, ncap);
            if (!nb) {
                r = CUDA_ERROR_OUT_OF_MEMORY;
                break;
            }
            buf = nb;
            cap = ncap;
        }
        size_t n = fread(buf + len, 1, cap - len - 1, f);
        len += n;
        if (n == 0) {
            if (ferror(f))
                r = CUDA_ERROR_FILE_NOT_FOUND; /* a directory, an I/O error */
            break;
        }
    }
    fclose(f);
    if (r != CUDA_SUCCESS) {
        free(buf);
        return r;
    }
    buf[len] = '\0';
    *data = buf;
    *size = len;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuModuleLoad(CUmodule *module, const char *fname)
{
    FAKE_ENTER(cuModuleLoad);
    if (!module || !fname)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    struct CUctx_st *c = NULL;
    CUresult r = fake_current_context_locked(&c);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    unsigned char *data = NULL;
    size_t size = 0;
    r = read_file(fname, &data, &size);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    jit_options jit;
    (void)jit_options_parse(0, NULL, NULL, &jit);
    r = load_locked(module, data, size, &jit);
    free(data);
    return fake_leave(r);
}

CUresult CUDAAPI fake_cuModuleUnload(CUmodule hmod)
{
    FAKE_ENTER(cuModuleUnload);
    fake_handle *h = fake_handle_find_locked((uintptr_t)hmod);
    if (h && h->kind == CUS_FAKE_HANDLE_MODULE && h->state != FAKE_LIVE &&
        !((struct CUmod_st *)h)->ctx_destroyed) {
        fake_misuse_locked("double cuModuleUnload of module 0x%" PRIxPTR, (uintptr_t)hmod);
        return fake_leave(CUDA_ERROR_INVALID_HANDLE);
    }
    struct CUmod_st *m = NULL;
    CUresult r = module_arg_locked(hmod, false, &m); /* poisoned or not */
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    /* The driver synchronizes: the context's queued work (its launches of
     * this module among it) runs first. */
    fake_context_synchronize_locked(m->ctx);
    if (m->h.state != FAKE_LIVE) { /* unloaded meanwhile, by another thread or its context */
        if (m->ctx_destroyed)
            fake_misuse_locked("module 0x%" PRIxPTR " used after its context was destroyed",
                               (uintptr_t)hmod);
        else
            fake_misuse_locked("double cuModuleUnload of module 0x%" PRIxPTR, (uintptr_t)hmod);
        return fake_leave(CUDA_ERROR_INVALID_HANDLE);
    }
    unload_locked(m, false);
    return fake_leave(CUDA_SUCCESS);
}

static void module_doom_locked(struct CUctx_st *c, unsigned long ticket)
{
    for (size_t i = 0; i < module_count; i++)
        if (modules[i]->ctx == c && modules[i]->h.state == FAKE_LIVE)
            modules[i]->doomed = ticket;
}

static void module_destroy_doomed_locked(struct CUctx_st *c, unsigned long ticket)
{
    (void)c;
    for (size_t i = 0; i < module_count; i++)
        if (modules[i]->doomed == ticket && modules[i]->h.state == FAKE_LIVE)
            unload_locked(modules[i], true);
}

/* --- lookups ------------------------------------------------------------------------------------ */

CUresult CUDAAPI fake_cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
    FAKE_ENTER(cuModuleGetFunction);
    struct CUmod_st *m = NULL;
    CUresult r = module_arg_locked(hmod, true, &m);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (!hfunc || !name)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    for (size_t i = 0; i < m->nfunctions; i++) {
        if (strcmp(m->functions[i].name, name) == 0) {
            *hfunc = &m->functions[i];
            return fake_leave(CUDA_SUCCESS);
        }
    }
    return fake_leave(CUDA_ERROR_NOT_FOUND);
}

CUresult CUDAAPI fake_cuModuleGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod,
                                        const char *name)
{
    FAKE_ENTER(cuModuleGetGlobal);
    struct CUmod_st *m = NULL;
    CUresult r = module_arg_locked(hmod, true, &m);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (!name)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    for (size_t i = 0; i < m->nglobals; i++) {
        if (strcmp(m->img->globals[i].name, name) == 0) {
            if (dptr)
                *dptr = (CUdeviceptr)(uintptr_t)fake_memory_global_base(m->globals[i]);
            if (bytes)
                *bytes = m->img->globals[i].size;
            return fake_leave(CUDA_SUCCESS);
        }
    }
    return fake_leave(CUDA_ERROR_NOT_FOUND);
}

#ifdef FAKE_HAVE_12040_ENTRIES
CUresult CUDAAPI fake_cuModuleGetFunctionCount(unsigned int *count, CUmodule hmod)
{
    FAKE_ENTER(cuModuleGetFunctionCount);
    struct CUmod_st *m = NULL;
    CUresult r = module_arg_locked(hmod, true, &m);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (!count)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    *count = m->nfunctions > UINT32_MAX ? UINT32_MAX : (unsigned int)m->nfunctions;
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuModuleEnumerateFunctions(CUfunction *functions, unsigned int numFunctions,
                                                 CUmodule mod)
{
    FAKE_ENTER(cuModuleEnumerateFunctions);
    struct CUmod_st *m = NULL;
    CUresult r = module_arg_locked(mod, true, &m);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (!functions)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    for (size_t i = 0; i < m->nfunctions && i < numFunctions; i++)
        functions[i] = &m->functions[i];
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t *paramOffset,
                                         size_t *paramSize)
{
    FAKE_ENTER(cuFuncGetParamInfo);
    struct CUfunc_st *f = NULL;
    CUresult r = function_arg_locked(func, CUDA_ERROR_INVALID_HANDLE, &f);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (!paramOffset || paramIndex >= f->fi->nparams) /* past the last: as the driver */
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    *paramOffset = f->fi->params[paramIndex].offset;
    if (paramSize)
        *paramSize = f->fi->params[paramIndex].size;
    return fake_leave(CUDA_SUCCESS);
}
#endif

#ifdef FAKE_HAVE_12030_ENTRIES
CUresult CUDAAPI fake_cuFuncGetName(const char **name, CUfunction hfunc)
{
    FAKE_ENTER(cuFuncGetName);
    if (!name)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    struct CUfunc_st *f = NULL;
    CUresult r = function_arg_locked(hfunc, CUDA_ERROR_INVALID_VALUE, &f);
    if (r == CUDA_SUCCESS)
        *name = f->name;
    return fake_leave(r);
}
#endif

/* --- attributes ---------------------------------------------------------------------------------- */

CUresult CUDAAPI fake_cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc)
{
    FAKE_ENTER(cuFuncGetAttribute);
    struct CUfunc_st *f = NULL;
    CUresult r = function_arg_locked(hfunc, CUDA_ERROR_INVALID_HANDLE, &f);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (!pi)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    int v = 0;
    switch ((int)attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
        v = max_threads_of(f);
        break;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
        v = static_shared_of(f);
        break;
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES:
        v = f->mod->const_bytes > INT32_MAX ? INT32_MAX : (int)f->mod->const_bytes;
        break;
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:
        v = 0;
        break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS:
        v = f->mod->num_regs;
        break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION:
        v = f->mod->ptx_version;
        break;
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION:
        v = f->mod->binary_version;
        break;
    case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA:
        v = 0;
        break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
        v = f->max_dynamic_shared;
        break;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
        v = f->carveout;
        break;
    case CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET:
        v = 0;
        break;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
        v = f->required_cluster[(int)attrib - CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH];
        break;
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
        v = f->non_portable_cluster;
        break;
    case 15: /* CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE */
        v = f->cluster_policy;
        break;
    default:
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    }
    *pi = v;
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value)
{
    FAKE_ENTER(cuFuncSetAttribute);
    struct CUfunc_st *f = NULL;
    CUresult r = function_arg_locked(hfunc, CUDA_ERROR_INVALID_HANDLE, &f);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    switch ((int)attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
        if (value < 0 || value > optin_dynamic_shared(f))
            return fake_leave(CUDA_ERROR_INVALID_VALUE);
        f->max_dynamic_shared = value;
        break;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
        if (value < CU_SHAREDMEM_CARVEOUT_DEFAULT || value > CU_SHAREDMEM_CARVEOUT_MAX_SHARED)
            return fake_leave(CUDA_ERROR_INVALID_VALUE);
        f->carveout = value;
        break;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
        if (value < 0 || value > 16)
            return fake_leave(CUDA_ERROR_INVALID_VALUE);
        f->required_cluster[(int)attrib - CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH] = value;
        break;
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
        if (value != 0 && value != 1)
            return fake_leave(CUDA_ERROR_INVALID_VALUE);
        f->non_portable_cluster = value;
        break;
    case 15: /* CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE */
        if (value < 0 || value > 2)
            return fake_leave(CUDA_ERROR_INVALID_VALUE);
        f->cluster_policy = value;
        break;
    default: /* read-only, or unknown */
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    }
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config)
{
    FAKE_ENTER(cuFuncSetCacheConfig);
    struct CUfunc_st *f = NULL;
    CUresult r = function_arg_locked(hfunc, CUDA_ERROR_INVALID_HANDLE, &f);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if ((int)config < CU_FUNC_CACHE_PREFER_NONE || (int)config > CU_FUNC_CACHE_PREFER_EQUAL)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    f->cache_config = config;
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuFuncSetSharedMemConfig(CUfunction hfunc, CUsharedconfig config)
{
    FAKE_ENTER(cuFuncSetSharedMemConfig);
    struct CUfunc_st *f = NULL;
    CUresult r = function_arg_locked(hfunc, CUDA_ERROR_INVALID_HANDLE, &f);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if ((int)config < CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE ||
        (int)config > CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    f->shared_config = config; /* kept; a Hopper ignores it */
    return fake_leave(CUDA_SUCCESS);
}

/* --- occupancy -------------------------------------------------------------------------------------- */

CUresult CUDAAPI fake_cuOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, CUfunction func,
                                                                  int blockSize,
                                                                  size_t dynamicSMemSize)
{
    FAKE_ENTER(cuOccupancyMaxActiveBlocksPerMultiprocessor);
    struct CUfunc_st *f = NULL;
    CUresult r = function_arg_locked(func, CUDA_ERROR_INVALID_HANDLE, &f);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (!numBlocks || blockSize <= 0)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    occupancy_in o = occupancy_of(f);
    *numBlocks = blocks_per_sm(&o, blockSize, dynamicSMemSize);
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuOccupancyMaxPotentialBlockSize(int *minGridSize, int *blockSize,
                                                       CUfunction func,
                                                       CUoccupancyB2DSize blockSizeToDynamicSMemSize,
                                                       size_t dynamicSMemSize, int blockSizeLimit)
{
    FAKE_ENTER(cuOccupancyMaxPotentialBlockSize);
    struct CUfunc_st *f = NULL;
    CUresult r = function_arg_locked(func, CUDA_ERROR_INVALID_HANDLE, &f);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (!minGridSize || !blockSize || blockSizeLimit < 0)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    occupancy_in o = occupancy_of(f);
    /* The rest without the lock: the callback is the caller's code. */
    (void)fake_leave(CUDA_SUCCESS);

    int limit = o.max_threads;
    if (blockSizeLimit > 0 && blockSizeLimit < limit)
        limit = blockSizeLimit;
    int best = 0, best_blocks = 0;
    long long best_threads = 0;
    /* From the largest block down in warp steps, as the occupancy calculator
     * does; the first with the most resident threads wins. */
    for (int aligned = (limit + o.warp - 1) / o.warp * o.warp; aligned > 0; aligned -= o.warp) {
        int b = aligned < limit ? aligned : limit;
        size_t dyn = blockSizeToDynamicSMemSize ? blockSizeToDynamicSMemSize(b) : dynamicSMemSize;
        int n = blocks_per_sm(&o, b, dyn);
        long long threads = (long long)n * b;
        if (threads > best_threads) {
            best_threads = threads;
            best = b;
            best_blocks = n;
        }
        if (threads >= o.threads_per_sm)
            break;
    }
    *blockSize = best;
    *minGridSize = best_blocks * o.sm_count;
    return CUDA_SUCCESS;
}

/* --- launches ------------------------------------------------------------------------------------ */

typedef struct launch_cfg {
    unsigned int grid[3], block[3], cluster[3];
    unsigned int shared;
    CUstream stream;
    bool cooperative, extended;
} launch_cfg;

void fake_module_launch_free(fake_launch_exec *exec)
{
    free(exec);
}

/* The record of a launch, but for the argument bytes past arg_bytes. */
static void fill_record(cus_fake_launch *rec, const fake_launch_exec *x)
{
    rec->function = x->fn->name;
    rec->handle = x->fn;
    rec->context = x->context;
    rec->stream = x->stream;
    memcpy(rec->grid, x->grid, sizeof rec->grid);
    memcpy(rec->block, x->block, sizeof rec->block);
    memcpy(rec->cluster, x->cluster, sizeof rec->cluster);
    rec->shared_bytes = x->shared_bytes;
    rec->cooperative = x->cooperative;
    rec->extended = x->extended;
    rec->captured = x->captured;
    rec->graph_exec = x->graph_exec;
    rec->nargs = x->nargs;
    rec->arg_bytes = x->arg_bytes;
    memcpy(rec->args, x->args, x->arg_bytes);
}

/* Copies the arguments by the layout: kernelParams[i] (its size), or the
 * `extra` buffer whole. */
static CUresult copy_arguments_locked(const struct CUfunc_st *f, void **kernelParams, void **extra,
                                      fake_launch_exec *x)
{
    const fake_image_function *fi = f->fi;
    if (kernelParams && extra)
        return CUDA_ERROR_INVALID_VALUE; /* documented: only one of them */
    if (extra) {
        const void *buf = NULL;
        const size_t *bufsize = NULL;
        for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
            if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
                buf = extra[i + 1];
            else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
                bufsize = extra[i + 1];
            else
                return CUDA_ERROR_INVALID_VALUE;
        }
        if (fi->param_bytes) {
            if (!buf || !bufsize || *bufsize < fi->param_bytes)
                return CUDA_ERROR_INVALID_VALUE;
            memcpy(x->args, buf, fi->param_bytes);
        }
        return CUDA_SUCCESS;
    }
    if (fi->nparams && !kernelParams)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < fi->nparams; i++) {
        if (!kernelParams[i]) {
            fake_misuse_locked("kernelParams[%zu] of a launch of '%s' is NULL", i, f->name);
            return CUDA_ERROR_INVALID_VALUE;
        }
        memcpy(x->args + fi->params[i].offset, kernelParams[i], fi->params[i].size);
    }
    return CUDA_SUCCESS;
}

/* The configuration against the device and the function. */
static CUresult check_config_locked(const struct CUfunc_st *f, const launch_cfg *cfg)
{
    const int *a = device_attrs(f->mod->ctx);
    const unsigned int *g = cfg->grid, *b = cfg->block;
    for (int i = 0; i < 3; i++)
        if (g[i] == 0 || b[i] == 0)
            return CUDA_ERROR_INVALID_VALUE;
    if (b[0] > (unsigned)a[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X] ||
        b[1] > (unsigned)a[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y] ||
        b[2] > (unsigned)a[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z])
        return CUDA_ERROR_INVALID_VALUE;
    unsigned long long threads = (unsigned long long)b[0] * b[1] * b[2];
    if (threads > (unsigned long long)max_threads_of(f))
        return CUDA_ERROR_INVALID_VALUE;
    const unsigned *req = f->fi->reqntid;
    if (req[0] && (b[0] != req[0] || b[1] != (req[1] ? req[1] : 1) || b[2] != (req[2] ? req[2] : 1)))
        return CUDA_ERROR_INVALID_VALUE;
    if (g[0] > (unsigned)a[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X] ||
        g[1] > (unsigned)a[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y] ||
        g[2] > (unsigned)a[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z])
        return CUDA_ERROR_INVALID_VALUE;
    if (cfg->shared > (unsigned)f->max_dynamic_shared)
        return CUDA_ERROR_INVALID_VALUE;

    /* Clusters: the launch's, or the function's required one. */
    const unsigned *c = cfg->cluster;
    unsigned req_c[3] = {(unsigned)f->required_cluster[0], (unsigned)f->required_cluster[1],
                         (unsigned)f->required_cluster[2]};
    bool launch_cluster = c[0] || c[1] || c[2];
    bool required = req_c[0] || req_c[1] || req_c[2];
    if (launch_cluster || required) {
        if (!a[CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH])
            return CUDA_ERROR_NOT_SUPPORTED;
        const unsigned *use = launch_cluster ? c : req_c;
        if (launch_cluster && required &&
            (c[0] != req_c[0] || c[1] != req_c[1] || c[2] != req_c[2]))
            return CUDA_ERROR_INVALID_CLUSTER_SIZE;
        unsigned long long size = 1;
        for (int i = 0; i < 3; i++) {
            if (use[i] == 0 || g[i] % use[i] != 0)
                return CUDA_ERROR_INVALID_CLUSTER_SIZE;
            size *= use[i];
        }
        if (size > (f->non_portable_cluster ? 16u : 8u))
            return CUDA_ERROR_INVALID_CLUSTER_SIZE;
    }

    if (cfg->cooperative) {
        if (!a[CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH])
            return CUDA_ERROR_NOT_SUPPORTED;
        occupancy_in o = occupancy_of(f);
        unsigned long long fit =
            (unsigned long long)blocks_per_sm(&o, (int)threads, cfg->shared) * (unsigned)o.sm_count;
        if ((unsigned long long)g[0] * g[1] * g[2] > fit)
            return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
    }
    return CUDA_SUCCESS;
}

static CUresult launch_locked(CUfunction hfunc, const launch_cfg *cfg, void **kernelParams,
                              void **extra)
{
    struct CUfunc_st *f = NULL;
    CUresult r = function_arg_locked(hfunc, CUDA_ERROR_INVALID_HANDLE, &f);
    if (r != CUDA_SUCCESS)
        return r;
    struct CUctx_st *c = NULL;
    r = fake_current_context_locked(&c);
    if (r != CUDA_SUCCESS)
        return r;
    if (f->mod->ctx != c) {
        fake_misuse_locked("function 0x%" PRIxPTR " ('%s') of context 0x%" PRIxPTR
                           " launched with context 0x%" PRIxPTR " current",
                           (uintptr_t)f, f->name, (uintptr_t)f->mod->ctx, (uintptr_t)c);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    struct CUstream_st *s = NULL;
    r = fake_stream_arg_locked(cfg->stream, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if (s->ctx != c) /* as cuEventRecord: a stream of another context */
        return CUDA_ERROR_INVALID_HANDLE;
    r = check_config_locked(f, cfg);
    if (r != CUDA_SUCCESS)
        return r;
    const fake_image_function *fi = f->fi;
    if (fi->param_bytes > CUS_FAKE_MAX_LAUNCH_ARG_BYTES)
        return CUDA_ERROR_INVALID_VALUE; /* the fake's limit (the driver's is 32764) */

    fake_launch_exec *x = calloc(1, sizeof *x + fi->param_bytes);
    if (!x)
        return CUDA_ERROR_OUT_OF_MEMORY;
    x->fn = f;
    x->context = c;
    x->stream = cfg->stream;
    memcpy(x->grid, cfg->grid, sizeof x->grid);
    memcpy(x->block, cfg->block, sizeof x->block);
    memcpy(x->cluster, cfg->cluster, sizeof x->cluster);
    x->shared_bytes = cfg->shared;
    x->cooperative = cfg->cooperative;
    x->extended = cfg->extended;
    x->nargs = fi->nparams;
    x->arg_bytes = fi->param_bytes;
    r = copy_arguments_locked(f, kernelParams, extra, x);
    if (r != CUDA_SUCCESS) {
        free(x);
        return r;
    }
    x->captured = s->capture != NULL; /* then it becomes a graph node (fake_graph.c) */
    fake_op op = {.kind = FAKE_OP_LAUNCH, .u.launch = {x}};
    r = fake_stream_enqueue_locked(s, &op, NULL, 0);
    if (r != CUDA_SUCCESS) {
        free(x);
        return r;
    }
    /* x now belongs to the queue (or the graph); the record goes into the ring. */
    fake_module_record_launch_locked(x);
    return CUDA_SUCCESS;
}

void fake_module_record_launch_locked(const fake_launch_exec *x)
{
    cus_fake_launch *rec = &launch_ring[launch_count % LAUNCH_RING];
    size_t old_bytes = rec->arg_bytes;
    fill_record(rec, x);
    if (old_bytes > x->arg_bytes) /* keep the bytes past arg_bytes zero */
        memset(rec->args + x->arg_bytes, 0, old_bytes - x->arg_bytes);
    launch_count++;
}

fake_launch_exec *fake_module_launch_replay(const fake_launch_exec *x, CUgraphExec exec,
                                            CUstream stream)
{
    fake_launch_exec *r = malloc(sizeof *r + x->arg_bytes);
    if (!r)
        return NULL;
    memcpy(r, x, sizeof *r + x->arg_bytes);
    r->captured = false;
    r->graph_exec = exec;
    r->stream = stream;
    return r;
}

CUcontext fake_module_launch_context(const fake_launch_exec *x)
{
    return x->fn->mod->ctx;
}

bool fake_module_launch_cooperative(const fake_launch_exec *x)
{
    return x->cooperative;
}

CUresult CUDAAPI fake_cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                     unsigned int gridDimZ, unsigned int blockDimX,
                                     unsigned int blockDimY, unsigned int blockDimZ,
                                     unsigned int sharedMemBytes, CUstream hStream,
                                     void **kernelParams, void **extra)
{
    FAKE_ENTER(cuLaunchKernel);
    launch_cfg cfg = {
        .grid = {gridDimX, gridDimY, gridDimZ},
        .block = {blockDimX, blockDimY, blockDimZ},
        .shared = sharedMemBytes,
        .stream = hStream,
    };
    return fake_leave(launch_locked(f, &cfg, kernelParams, extra));
}

CUresult CUDAAPI fake_cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
                                       void **kernelParams, void **extra)
{
    FAKE_ENTER(cuLaunchKernelEx);
    if (!config || (config->numAttrs && !config->attrs))
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    launch_cfg cfg = {
        .grid = {config->gridDimX, config->gridDimY, config->gridDimZ},
        .block = {config->blockDimX, config->blockDimY, config->blockDimZ},
        .shared = config->sharedMemBytes,
        .stream = config->hStream,
        .extended = true,
    };
    for (unsigned int i = 0; i < config->numAttrs; i++) {
        const CUlaunchAttribute *at = &config->attrs[i];
        switch ((int)at->id) {
        case CU_LAUNCH_ATTRIBUTE_IGNORE:
            break;
        case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
            cfg.cooperative = at->value.cooperative != 0;
            break;
        case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
            cfg.cluster[0] = at->value.clusterDim.x;
            cfg.cluster[1] = at->value.clusterDim.y;
            cfg.cluster[2] = at->value.clusterDim.z;
            if (!cfg.cluster[0] || !cfg.cluster[1] || !cfg.cluster[2])
                return fake_leave(CUDA_ERROR_INVALID_CLUSTER_SIZE);
            break;
        case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
        case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
        case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
        case CU_LAUNCH_ATTRIBUTE_PRIORITY:
        case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
        case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
        case 11: /* PREFERRED_CLUSTER_DIMENSION */
        case 14: /* PREFERRED_SHARED_MEMORY_CARVEOUT */
        case 16: /* NVLINK_UTIL_CENTRIC_SCHEDULING */
            break; /* hints: no effect on the fake */
        case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT:
        case 12: /* LAUNCH_COMPLETION_EVENT */
            /* Events fired from inside a kernel are not emulated: refused
             * rather than silently never recorded. */
            return fake_leave(CUDA_ERROR_NOT_SUPPORTED);
        default: /* stream-only, graph-only (13) or unknown */
            return fake_leave(CUDA_ERROR_INVALID_VALUE);
        }
    }
    return fake_leave(launch_locked(f, &cfg, kernelParams, extra));
}

/* --- execution ---------------------------------------------------------------------------------- */

typedef struct kernel_call {
    cus_fake_kernel_fn fn;
    void *user;
    cus_fake_launch *rec;
    void **argv; /* argv[i] = rec->args + offset of parameter i */
    CUresult result;
} kernel_call;

static void run_kernel(void *arg)
{
    kernel_call *k = arg;
    k->result = k->fn(k->rec, k->argv, k->user);
}

static CUresult execute_launch_locked(const fake_op *op)
{
    fake_launch_exec *x = op->u.launch.exec;
    struct CUfunc_st *f = x->fn;
    if (f->mod->h.state != FAKE_LIVE) {
        fake_misuse_locked("a launch of '%s' queued on stream 0x%" PRIxPTR " executed after its "
                           "module 0x%" PRIxPTR " was unloaded; skipped",
                           f->name, op->stream->is_default ? (uintptr_t)0 : (uintptr_t)op->stream,
                           (uintptr_t)f->mod);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    /* A pointer-sized argument into freed memory (a replay whose buffer went,
     * above all) is reported, and the kernel skipped, as a copy would be. */
    for (size_t i = 0; i < x->nargs; i++) {
        const fake_image_param *p = &f->fi->params[i];
        uint64_t v = 0;
        if (p->size != sizeof v)
            continue;
        memcpy(&v, x->args + p->offset, sizeof v);
        char what[96];
        snprintf(what, sizeof what, "argument %zu of kernel '%s'", i, f->name);
        if (v && !fake_memory_pointer_usable_locked((uintptr_t)v, what, op))
            return CUDA_ERROR_INVALID_VALUE;
    }
    kernel_call k = {.result = CUDA_SUCCESS};
    for (int i = 0; i < MAX_KERNELS; i++) {
        if (kernels[i].name && strcmp(kernels[i].name, f->name) == 0) {
            k.fn = kernels[i].fn;
            k.user = kernels[i].user;
            break;
        }
    }
    if (!k.fn)
        return CUDA_SUCCESS; /* a kernel without a host implementation does nothing */
    /* The record and the argument pointers, for the kernel only: the module
     * stays loaded while it runs (an unload synchronizes the context first). */
    k.rec = calloc(1, sizeof *k.rec + x->nargs * sizeof *k.argv);
    if (!k.rec) {
        fake_misuse_locked("out of host memory to run the host implementation of '%s'; "
                           "skipped",
                           f->name);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    k.argv = (void **)(k.rec + 1);
    fill_record(k.rec, x);
    for (size_t i = 0; i < x->nargs; i++)
        k.argv[i] = k.rec->args + f->fi->params[i].offset;
    fake_stream_call_unlocked_locked(run_kernel, &k);
    free(k.rec);
    if (k.result == CUDA_SUCCESS)
        return CUDA_SUCCESS;
    if (cus_status_is_sticky((cus_status)k.result)) {
        struct CUctx_st *c = op->stream->ctx;
        if (c->sticky == CUDA_SUCCESS)
            c->sticky = k.result; /* the first fault is the one that sticks */
        return k.result;
    }
    fake_misuse_locked("the host implementation of kernel '%s' returned %d, which is neither "
                       "CUDA_SUCCESS nor a sticky error; ignored",
                       f->name, (int)k.result);
    return CUDA_SUCCESS;
}

/* --- control and queries -------------------------------------------------------------------------- */

CUS_API unsigned long cus_fake_launch_count(void)
{
    fake_lock();
    fake_ensure_configured_locked();
    unsigned long n = launch_count;
    fake_unlock();
    return n;
}

CUS_API cus_status cus_fake_launch_at(unsigned long i, cus_fake_launch *out)
{
    if (!out)
        return CUS_ERROR_INVALID_ARGUMENT;
    cus_status st = CUS_ERROR_OUT_OF_RANGE;
    fake_lock();
    fake_ensure_configured_locked();
    if (i < launch_count && launch_count - i <= LAUNCH_RING) {
        *out = launch_ring[i % LAUNCH_RING];
        st = CUS_SUCCESS;
    }
    fake_unlock();
    return st;
}

CUS_API cus_status cus_fake_last_launch(cus_fake_launch *out)
{
    if (!out)
        return CUS_ERROR_INVALID_ARGUMENT;
    cus_status st = CUS_ERROR_OUT_OF_RANGE;
    fake_lock();
    fake_ensure_configured_locked();
    if (launch_count) {
        *out = launch_ring[(launch_count - 1) % LAUNCH_RING];
        st = CUS_SUCCESS;
    }
    fake_unlock();
    return st;
}

CUS_API cus_status cus_fake_register_kernel(const char *name, cus_fake_kernel_fn fn, void *user)
{
    if (!name || !*name)
        return CUS_ERROR_INVALID_ARGUMENT;
    cus_status st = CUS_SUCCESS;
    fake_lock();
    fake_ensure_configured_locked();
    int slot = -1, free_slot = -1;
    for (int i = 0; i < MAX_KERNELS; i++) {
        if (kernels[i].name && strcmp(kernels[i].name, name) == 0)
            slot = i;
        else if (!kernels[i].name && free_slot < 0)
            free_slot = i;
    }
    if (!fn) { /* removal; nothing to remove is fine */
        if (slot >= 0) {
            free(kernels[slot].name);
            memset(&kernels[slot], 0, sizeof kernels[slot]);
        }
    } else if (slot >= 0) {
        kernels[slot].fn = fn;
        kernels[slot].user = user;
    } else if (free_slot < 0) {
        st = CUS_ERROR_INVALID_ARGUMENT; /* all 64 in use */
    } else {
        char *copy = strdup(name);
        if (!copy) {
            st = CUS_ERROR_OUT_OF_HOST_MEMORY;
        } else {
            kernels[free_slot].name = copy;
            kernels[free_slot].fn = fn;
            kernels[free_slot].user = user;
        }
    }
    fake_unlock();
    return st;
}

/* --- the area -------------------------------------------------------------------------------- */

static void launch_payload_free(fake_op *op)
{
    fake_module_launch_free(op->u.launch.exec);
}

static const fake_op_executor module_executors[] = {
    {FAKE_OP_LAUNCH, FAKE_OP_COUNTS_AS_WORK | FAKE_OP_DEAD_WHEN_POISONED, execute_launch_locked,
     launch_payload_free},
};

/* Reset after the memory (it drops globals), before the contexts; torn down
 * before the memory (its globals first). */
static const fake_area module_area = {
    .name = "module",
    .reset_order = 40,
    .teardown_order = 20,
    .reset_locked = module_reset_locked,
    .doom_locked = module_doom_locked,
    .destroy_doomed_locked = module_destroy_doomed_locked,
    .executors = module_executors,
    .executor_count = sizeof module_executors / sizeof module_executors[0],
};
FAKE_AREA(module_area)
