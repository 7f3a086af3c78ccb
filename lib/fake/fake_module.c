/* Modules, functions, globals, launches: cuModule*, cuFunc*, cuLaunchKernel*,
 * cuOccupancy*, the launch record and the host implementations of kernels.
 *
 * A module is a registered record (kind MODULE) in the context that was
 * current at load, holding the parsed image (fake_image.h), one function
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
#include "fake_module_records.h"

/* --- state ---------------------------------------------------------------------------- */

static struct CUmod_st **modules; /* every module since install */
static size_t module_count, module_capacity;

/* Every function record since install, for recognising CUfunction values:
 * open addressing, power-of-two capacity, at most half full, no removal. */
static struct CUfunc_st **fn_set;
static size_t fn_set_capacity, fn_set_used;

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
        free(m->by_name);
        /* the registry frees the record */
    }
    free(modules);
    modules = NULL;
    module_count = module_capacity = 0;
    free(fn_set);
    fn_set = NULL;
    fn_set_capacity = fn_set_used = 0;
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

const int *fake_module_device_attrs(const struct CUctx_st *c)
{
    return fake_dev.devices[c->device].attributes;
}

/* A module argument. Unknown and unloaded modules are misuse and
 * CUDA_ERROR_INVALID_HANDLE (NULL too, without the misuse); `healthy`: a
 * poisoned context answers its sticky error. */
CUresult fake_module_module_arg_locked(CUmodule hmod, bool healthy, struct CUmod_st **out)
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
CUresult fake_module_function_arg_locked(CUfunction hfunc, CUresult if_null, struct CUfunc_st **out)
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
int fake_module_max_threads_of(const struct CUfunc_st *f)
{
    const int *a = fake_module_device_attrs(f->mod->ctx);
    unsigned long long n = (unsigned long long)a[CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK];
    if (f->fi->max_threads && f->fi->max_threads < n)
        n = f->fi->max_threads;
    unsigned long long req = reqntid_threads(f->fi);
    if (req && req < n)
        n = req;
    return (int)n;
}

int fake_module_static_shared_of(const struct CUfunc_st *f)
{
    return f->fi->static_shared > INT32_MAX ? INT32_MAX : (int)f->fi->static_shared;
}

/* The driver's default: the per-block limit minus the static shared memory. */
static int default_dynamic_shared(const struct CUfunc_st *f)
{
    int limit = fake_module_device_attrs(f->mod->ctx)[CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK];
    int st = fake_module_static_shared_of(f);
    return st > limit ? 0 : limit - st;
}

int fake_module_optin_dynamic_shared(const struct CUfunc_st *f)
{
    int limit = fake_module_device_attrs(f->mod->ctx)[CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN];
    int st = fake_module_static_shared_of(f);
    return st > limit ? 0 : limit - st;
}

occupancy_in fake_module_occupancy_of(const struct CUfunc_st *f)
{
    const int *a = fake_module_device_attrs(f->mod->ctx);
    occupancy_in o = {
        .max_threads = fake_module_max_threads_of(f),
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
int fake_module_blocks_per_sm(const occupancy_in *o, int block, size_t dynamic_shared)
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

/* Whether SASS for a runs on a device of compute capability major.minor
 * (the image layer's rule, which also chooses fatbin entries). */
static bool sass_runs_on(arch a, int major, int minor)
{
    return fake_image_sass_runs_on(a.sm, a.variant, FAKE_IMAGE_CC(major, minor));
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
static CUresult check_image_locked(const int *a, const fake_image *img, const jit_options *jit,
                                   struct CUmod_st *m)
{
    int major = a[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR];
    int minor = a[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR];
    arch t = arch_of_target_string(img->target);
    m->ptx_version = m->binary_version = (int)t.sm;
    /* a fatbin: the entry the parser took for the device, SASS or PTX */
    switch (img->format == FAKE_IMAGE_FATBIN ? img->code : img->format) {
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
    case FAKE_IMAGE_FATBIN: /* not an entry's format */
        return CUDA_ERROR_INVALID_IMAGE;
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

static int by_name_order(const void *a, const void *b)
{
    const struct CUfunc_st *fa = *(struct CUfunc_st *const *)a, *fb = *(struct CUfunc_st *const *)b;
    int c = strcmp(fa->name, fb->name);
    return c ? c : (fa > fb) - (fa < fb); /* the functions are one array: image order */
}

struct CUfunc_st *fake_module_function_named(const struct CUmod_st *m, const char *name)
{
    size_t lo = 0, hi = m->nfunctions; /* the first whose name is >= name */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(m->by_name[mid]->name, name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < m->nfunctions && strcmp(m->by_name[lo]->name, name) == 0 ? m->by_name[lo] : NULL;
}

/* Loads a parsed image into c; takes img (freed on failure). */
static CUresult create_module_locked(struct CUctx_st *c, fake_image *img, const jit_options *jit,
                                     CUmodule *out)
{
    struct CUmod_st proto = {.ctx = c, .num_regs = 32};
    CUresult r = check_image_locked(fake_module_device_attrs(c), img, jit, &proto);
    if (r != CUDA_SUCCESS) {
        if (jit->info_size)
            jit->info[0] = '\0'; /* no info log from a failed load */
        fake_image_free(img);
        return r;
    }
    struct CUfunc_st *fns = calloc(img->nfunctions ? img->nfunctions : 1, sizeof *fns);
    struct CUfunc_st **by_name = calloc(img->nfunctions ? img->nfunctions : 1, sizeof *by_name);
    fake_mem **globals = calloc(img->nglobals ? img->nglobals : 1, sizeof *globals);
    bool room = fns && by_name && globals && reserve_module_slot_locked() &&
                fn_set_reserve(img->nfunctions);
    r = room ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
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
        free(by_name);
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
        by_name[i] = f;
    }
    qsort(by_name, img->nfunctions, sizeof *by_name, by_name_order);
    m->by_name = by_name;
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
    const int *a = fake_module_device_attrs(c);
    unsigned cc = FAKE_IMAGE_CC(a[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR],
                                a[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR]);
    fake_image *img = NULL;
    r = fake_image_parse(image, size, cc, &img, jit->error, jit->error_size, jit->info,
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

CUresult fake_module_read_file(const char *path, unsigned char **data, size_t *size)
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
    r = fake_module_read_file(fname, &data, &size);
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
    /* A module of a poisoned context answers its sticky error, as on the
     * H200 (it goes with its context), before and after the synchronization. */
    struct CUmod_st *m = NULL;
    CUresult r = fake_module_module_arg_locked(hmod, true, &m);
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
    if (m->ctx->sticky != CUDA_SUCCESS)
        return fake_leave(m->ctx->sticky);
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

/* --- what the library area (fake_library.c) builds on ------------------------------------------ */

CUresult fake_module_parse_for_device_locked(CUdevice dev, const void *image, size_t size,
                                             unsigned int n, CUjit_option *options, void **values,
                                             fake_image **out)
{
    jit_options jit;
    CUresult r = jit_options_parse(n, options, values, &jit);
    if (r != CUDA_SUCCESS)
        return r;
    const int *a = fake_dev.devices[dev].attributes;
    unsigned cc = FAKE_IMAGE_CC(a[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR],
                                a[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR]);
    fake_image *img = NULL;
    r = fake_image_parse(image, size, cc, &img, jit.error, jit.error_size, jit.info,
                         jit.info_size);
    if (r == CUDA_SUCCESS) {
        struct CUmod_st proto = {.num_regs = 32};
        r = check_image_locked(a, img, &jit, &proto);
        if (r != CUDA_SUCCESS) {
            if (jit.info_size)
                jit.info[0] = '\0';
            fake_image_free(img);
        } else {
            *out = img;
        }
    }
    if (n)
        jit_options_write_back(&jit, values);
    return r;
}

CUresult fake_module_load_into_locked(struct CUctx_st *c, const void *image, size_t size,
                                      struct CUmod_st **out)
{
    jit_options jit;
    (void)jit_options_parse(0, NULL, NULL, &jit);
    const int *a = fake_module_device_attrs(c);
    unsigned cc = FAKE_IMAGE_CC(a[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR],
                                a[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR]);
    fake_image *img = NULL;
    CUresult r = fake_image_parse(image, size, cc, &img, NULL, 0, NULL, 0);
    if (r != CUDA_SUCCESS)
        return r;
    CUmodule m = NULL;
    r = create_module_locked(c, img, &jit, &m);
    if (r == CUDA_SUCCESS)
        *out = m;
    return r;
}

void fake_module_unload_for_library_locked(struct CUmod_st *m)
{
    if (m->h.state != FAKE_LIVE)
        return; /* went with its context */
    fake_context_synchronize_locked(m->ctx);
    if (m->h.state == FAKE_LIVE)
        unload_locked(m, false);
}

bool fake_module_is_function(const void *f)
{
    return fn_set_find(f) != NULL;
}

/* --- the area -------------------------------------------------------------------------------- */

/* Reset after the memory (it drops globals), before the contexts; torn down
 * before the memory (its globals first). */
static const fake_area module_area = {
    .name = "module",
    .reset_order = 40,
    .teardown_order = 20,
    .reset_locked = module_reset_locked,
    .doom_locked = module_doom_locked,
    .destroy_doomed_locked = module_destroy_doomed_locked,
};
FAKE_AREA(module_area)
