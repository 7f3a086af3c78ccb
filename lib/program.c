/* Programs: CUDA C++ compiled at run time by NVRTC (rtc_loader.c), through
 * the compile cache (program_cache.c), loaded as modules (module.c). */
#include <stdio.h>
#include <string.h>

#include "cuscope/program.h"
#include "rtc_internal.h"

struct cus_program {
    cus_refcount refs;
    char *source, *name;
    size_t nheaders;
    char **header_names, **header_sources;
    /* Serializes compiles of the program. */
    pthread_mutex_t lock;
    /* The successful compile's outputs: set once, under the lock, with
     * release; read by the accessors with acquire and never changed again. */
    _Atomic(cus_rtc_output_ *) out;
    bool from_cache;
    char *failed_log; /* the last failed compile's log; under the lock */
};

static void program_destroy(cus_program *p)
{
    for (size_t i = 0; i < p->nheaders; i++) {
        free(p->header_names[i]);
        free(p->header_sources[i]);
    }
    free(p->header_names);
    free(p->header_sources);
    free(p->source);
    free(p->name);
    free(p->failed_log);
    cus_rtc_output_unref_(atomic_load_explicit(&p->out, memory_order_acquire));
    pthread_mutex_destroy(&p->lock);
    free(p);
}

CUS_DEFINE_REF_UNREF(cus_program, program_destroy)

CUS_API cus_status cus_program_create(const char *source, const char *name,
                                      const cus_program_header *headers, size_t nheaders,
                                      cus_program **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(source && out && (headers || nheaders == 0));
    for (size_t i = 0; i < nheaders; i++)
        if (!headers[i].name || !headers[i].source)
            return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,
                            "invalid argument: header %zu has no %s", i,
                            headers[i].name ? "source" : "name");
    cus_autofree cus_program *p = cus_calloc_(1, sizeof *p);
    cus_autofree char *src = cus_strdup_(source);
    cus_autofree char *nm = cus_strdup_(name ? name : "program.cu");
    cus_autofree char **hn = nheaders ? cus_calloc_(nheaders, sizeof *hn) : NULL;
    cus_autofree char **hs = nheaders ? cus_calloc_(nheaders, sizeof *hs) : NULL;
    bool ok = p && src && nm && (nheaders == 0 || (hn && hs));
    for (size_t i = 0; ok && i < nheaders; i++)
        ok = (hn[i] = cus_strdup_(headers[i].name)) && (hs[i] = cus_strdup_(headers[i].source));
    if (!ok) {
        for (size_t i = 0; i < nheaders && hn && hs; i++) {
            free(hn[i]);
            free(hs[i]);
        }
        return CUS_FAIL(CUS_ERROR_OUT_OF_HOST_MEMORY, NULL, "copying a program's source");
    }
    pthread_mutex_init(&p->lock, NULL);
    cus_refcount_init_(&p->refs);
    p->source = cus_steal(&src);
    p->name = cus_steal(&nm);
    p->nheaders = nheaders;
    p->header_names = cus_steal(&hn);
    p->header_sources = cus_steal(&hs);
    *out = cus_steal(&p);
    return CUS_SUCCESS;
}

/* --- options ------------------------------------------------------------------- */

/* The option strings of a compile: cuscope's, then the caller's, which
 * point at the caller's memory for the call. */
typedef struct option_list {
    const char **v;
    char **owned; /* the ones made here, freed with the list */
    size_t n, nowned, cap;
} option_list;

static void options_free(option_list *l)
{
    for (size_t i = 0; i < l->nowned; i++)
        free(l->owned[i]);
    free(l->owned);
    free(l->v);
}

static bool options_add(option_list *l, const char *opt, bool copy)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        const char **v = cus_realloc_(l->v, cap * sizeof *v);
        if (!v)
            return false;
        l->v = v;
        char **o = cus_realloc_(l->owned, cap * sizeof *o);
        if (!o)
            return false;
        l->owned = o;
        l->cap = cap;
    }
    if (copy) {
        char *c = cus_strdup_(opt);
        if (!c)
            return false;
        l->owned[l->nowned++] = c;
        opt = c;
    }
    l->v[l->n++] = opt;
    return true;
}

static bool options_addf(option_list *l, const char *prefix, const char *value)
{
    size_t n = strlen(prefix) + strlen(value) + 1;
    cus_autofree char *s = cus_malloc_(n);
    if (!s)
        return false;
    snprintf(s, n, "%s%s", prefix, value);
    return options_add(l, s, true);
}

static bool sets_arch(const char *opt)
{
    return strncmp(opt, "-arch", 5) == 0 || strncmp(opt, "--gpu-architecture", 18) == 0;
}

/* The architecture: the caller's, else ctx's device's, else device 0's. */
static cus_status default_arch(const cus_program_options *o, int *arch)
{
    if (o->arch) {
        *arch = o->arch;
        return CUS_SUCCESS;
    }
    cus_device dev;
    if (o->ctx) {
        dev = cus_context_device(o->ctx);
    } else {
        CUS_TRY(cus_device_get(0, &dev));
    }
    int major = 0, minor = 0;
    CUS_TRY(cus_device_compute_capability(dev, &major, &minor));
    *arch = major * 10 + minor;
    return CUS_SUCCESS;
}

static cus_status build_options(const cus_program_options *o, option_list *l)
{
    bool arch_given = false;
    for (size_t i = 0; i < o->noptions; i++)
        arch_given |= sets_arch(o->options[i]);
    bool ok = true;
    if (!arch_given) {
        int arch = 0;
        CUS_TRY(default_arch(o, &arch));
        if (arch < 50 || arch > 9999)
            return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,
                            "invalid argument: architecture %d (major * 10 + minor, from 50)",
                            arch);
        char a[32];
        snprintf(a, sizeof a, "-arch=%s_%d", o->target == CUS_PROGRAM_CUBIN ? "sm" : "compute",
                 arch);
        ok = options_add(l, a, true);
    }
    if (ok && o->target == CUS_PROGRAM_LTOIR)
        ok = options_add(l, "-dlto", false);
    if (ok && o->std)
        ok = options_addf(l, "-std=", o->std);
    if (ok && o->line_info)
        ok = options_add(l, "-lineinfo", false);
    if (ok && o->debug)
        ok = options_add(l, "-G", false);
    for (size_t i = 0; ok && i < o->ndefines; i++)
        ok = options_addf(l, "-D", o->defines[i]);
    for (size_t i = 0; ok && i < o->ninclude_paths; i++)
        ok = options_addf(l, "-I", o->include_paths[i]);
    for (size_t i = 0; ok && i < o->noptions; i++)
        ok = options_add(l, o->options[i], false);
    if (!ok)
        return CUS_FAIL(CUS_ERROR_OUT_OF_HOST_MEMORY, NULL, "building the option list");
    return CUS_SUCCESS;
}

static cus_status check_array(const char *const *v, size_t n, const char *what)
{
    if (n && !v)
        return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,
                        "invalid argument: %zu %s but a NULL array", n, what);
    for (size_t i = 0; i < n; i++)
        if (!v[i])
            return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,
                            "invalid argument: %s[%zu] is NULL", what, i);
    return CUS_SUCCESS;
}

static cus_rtc_key_ compile_key(const cus_program *p, const option_list *l,
                                const cus_program_options *o)
{
    cus_rtc_hasher_ h;
    cus_rtc_hash_init_(&h);
    cus_rtc_hash_string_(&h, "cuscope program 1");
    cus_rtc_hash_string_(&h, p->source);
    cus_rtc_hash_string_(&h, p->name);
    uint64_t n = p->nheaders;
    cus_rtc_hash_field_(&h, &n, sizeof n);
    for (size_t i = 0; i < p->nheaders; i++) {
        cus_rtc_hash_string_(&h, p->header_names[i]);
        cus_rtc_hash_string_(&h, p->header_sources[i]);
    }
    n = l->n;
    cus_rtc_hash_field_(&h, &n, sizeof n);
    for (size_t i = 0; i < l->n; i++)
        cus_rtc_hash_string_(&h, l->v[i]);
    n = o->nname_expressions;
    cus_rtc_hash_field_(&h, &n, sizeof n);
    for (size_t i = 0; i < o->nname_expressions; i++)
        cus_rtc_hash_string_(&h, o->name_expressions[i]);
    /* What is fetched after the compile depends on the target too. */
    uint32_t t = (uint32_t)o->target;
    cus_rtc_hash_field_(&h, &t, sizeof t);
    return cus_rtc_hash_end_(&h);
}

/* --- one compile through NVRTC ---------------------------------------------------- */

#define RTC_TRY(r, call, p)                                                    \
    do {                                                                       \
        nvrtcResult rr_ = (r);                                                 \
        if (rr_ != NVRTC_SUCCESS)                                              \
            return cus_fail_(cus_nvrtc_status_(rr_), "cus_program_compile", (call), \
                             "%s failed with %s compiling \"%s\"", (call),      \
                             cus_nvrtc_result_name_(rr_), (p)->name);           \
    } while (0)

/* Copies size bytes of an output NVRTC writes through get into *dst. */
static cus_status fetch(nvrtcProgram prog, const cus_program *p, nvrtcResult size_r,
                        size_t size, const char *size_call, int get_index, const char *get_call,
                        void **dst, size_t *dst_size)
{
    RTC_TRY(size_r, size_call, p);
    cus_autofree char *buf = cus_malloc_(size ? size : 1);
    if (!buf)
        return CUS_FAIL(CUS_ERROR_OUT_OF_HOST_MEMORY, NULL, "allocating %zu bytes for %s", size,
                        get_call);
    nvrtcResult r = cus_nvrtc_fault_(get_index);
    if (r == NVRTC_SUCCESS) {
        switch (get_index) {
        case CUS_NVRTC_IDX_nvrtcGetPTX: r = cus_nvrtc_.nvrtcGetPTX(prog, buf); break;
        case CUS_NVRTC_IDX_nvrtcGetCUBIN: r = cus_nvrtc_.nvrtcGetCUBIN(prog, buf); break;
        case CUS_NVRTC_IDX_nvrtcGetLTOIR: r = cus_nvrtc_.nvrtcGetLTOIR(prog, buf); break;
        default: r = cus_nvrtc_.nvrtcGetProgramLog(prog, buf); break;
        }
    }
    RTC_TRY(r, get_call, p);
    if (get_index == CUS_NVRTC_IDX_nvrtcGetProgramLog || get_index == CUS_NVRTC_IDX_nvrtcGetPTX)
        buf[size ? size - 1 : 0] = '\0';
    *dst = cus_steal(&buf);
    *dst_size = size;
    return CUS_SUCCESS;
}

/* The compile's log into *log (a failure to read it is recorded, and the
 * compile fails: a log lost would hide why). */
static cus_status read_log(nvrtcProgram prog, const cus_program *p, char **log)
{
    size_t size = 0;
    nvrtcResult r = CUS_NVRTC(nvrtcGetProgramLogSize, prog, &size);
    void *buf = NULL;
    size_t got = 0;
    CUS_TRY(fetch(prog, p, r, size, "nvrtcGetProgramLogSize", CUS_NVRTC_IDX_nvrtcGetProgramLog,
                  "nvrtcGetProgramLog", &buf, &got));
    *log = buf;
    return CUS_SUCCESS;
}

static cus_status compile_in(nvrtcProgram prog, cus_program *p, const option_list *l,
                             const cus_program_options *o, cus_rtc_output_ *out)
{
    for (size_t i = 0; i < o->nname_expressions; i++)
        RTC_TRY(CUS_NVRTC(nvrtcAddNameExpression, prog, o->name_expressions[i]),
                "nvrtcAddNameExpression", p);
    nvrtcResult cr = CUS_NVRTC(nvrtcCompileProgram, prog, (int)l->n, l->v);
    char *log = NULL;
    cus_status st = read_log(prog, p, &log);
    if (cr != NVRTC_SUCCESS) {
        /* The log is the point of the message: NVRTC's own words on the
         * source, as many lines as the record holds. */
        free(p->failed_log);
        p->failed_log = log;
        return cus_fail_(cus_nvrtc_status_(cr), "cus_program_compile", "nvrtcCompileProgram",
                         "nvrtcCompileProgram failed with %s compiling \"%s\":\n%s",
                         cus_nvrtc_result_name_(cr), p->name,
                         log && *log ? log : (st ? cus_last_error_message() : "(no log)"));
    }
    if (st)
        return st;
    out->log = log;
    if (o->target != CUS_PROGRAM_LTOIR) {
        size_t n = 0;
        nvrtcResult r = CUS_NVRTC(nvrtcGetPTXSize, prog, &n);
        void *buf = NULL;
        CUS_TRY(fetch(prog, p, r, n, "nvrtcGetPTXSize", CUS_NVRTC_IDX_nvrtcGetPTX, "nvrtcGetPTX",
                      &buf, &out->ptx_size));
        out->ptx = buf;
    }
    if (o->target == CUS_PROGRAM_CUBIN) {
        size_t n = 0;
        nvrtcResult r = CUS_NVRTC(nvrtcGetCUBINSize, prog, &n);
        /* Size 0: the caller's -arch was a virtual one (compute_XX), for
         * which NVRTC makes no cubin (nvrtc.h): the PTX is the output, and
         * cus_program_load loads it, rather than an empty "cubin". */
        if (r != NVRTC_SUCCESS || n)
            CUS_TRY(fetch(prog, p, r, n, "nvrtcGetCUBINSize", CUS_NVRTC_IDX_nvrtcGetCUBIN,
                          "nvrtcGetCUBIN", &out->cubin, &out->cubin_size));
    }
    if (o->target == CUS_PROGRAM_LTOIR) {
        size_t n = 0;
        nvrtcResult r = CUS_NVRTC(nvrtcGetLTOIRSize, prog, &n);
        CUS_TRY(fetch(prog, p, r, n, "nvrtcGetLTOIRSize", CUS_NVRTC_IDX_nvrtcGetLTOIR,
                      "nvrtcGetLTOIR", &out->ltoir, &out->ltoir_size));
    }
    size_t nn = o->nname_expressions;
    if (nn) {
        if (!(out->expressions = cus_calloc_(nn, sizeof(char *))) ||
            !(out->lowered = cus_calloc_(nn, sizeof(char *))))
            return CUS_FAIL(CUS_ERROR_OUT_OF_HOST_MEMORY, NULL, "allocating the lowered names");
        out->nnames = nn;
        for (size_t i = 0; i < nn; i++) {
            const char *lowered = NULL;
            nvrtcResult r = CUS_NVRTC(nvrtcGetLoweredName, prog, o->name_expressions[i],
                                      &lowered);
            if (r != NVRTC_SUCCESS)
                return cus_fail_(cus_nvrtc_status_(r), "cus_program_compile",
                                 "nvrtcGetLoweredName",
                                 "nvrtcGetLoweredName failed with %s for the name expression "
                                 "\"%s\" of \"%s\"",
                                 cus_nvrtc_result_name_(r), o->name_expressions[i], p->name);
            if (!(out->expressions[i] = cus_strdup_(o->name_expressions[i])) ||
                !(out->lowered[i] = cus_strdup_(lowered ? lowered : "")))
                return CUS_FAIL(CUS_ERROR_OUT_OF_HOST_MEMORY, NULL, "copying a lowered name");
        }
    }
    return CUS_SUCCESS;
}

static cus_status compile_nvrtc(cus_program *p, const option_list *l,
                                const cus_program_options *o, cus_rtc_output_ **outp)
{
    CUS_TRY(cus_nvrtc_ensure_("cus_program_compile"));
    cus_rtc_output_ *out = cus_calloc_(1, sizeof *out);
    if (!out)
        return CUS_FAIL(CUS_ERROR_OUT_OF_HOST_MEMORY, NULL, "allocating a program's outputs");
    atomic_init(&out->refs, 1);
    nvrtcProgram prog = NULL;
    nvrtcResult r = CUS_NVRTC(nvrtcCreateProgram, &prog, p->source, p->name, (int)p->nheaders,
                              (const char *const *)p->header_sources,
                              (const char *const *)p->header_names);
    cus_status st = CUS_SUCCESS;
    if (r != NVRTC_SUCCESS)
        st = cus_fail_(cus_nvrtc_status_(r), "cus_program_compile", "nvrtcCreateProgram",
                       "nvrtcCreateProgram failed with %s for \"%s\" (%s)",
                       cus_nvrtc_result_name_(r), p->name, cus_nvrtc_source_());
    else
        st = compile_in(prog, p, l, o, out);
    if (prog) {
        /* An injected failure (cus_debug_nvrtc_fail) is reported, but the
         * program is still destroyed: a test of the report leaks nothing. */
        r = cus_nvrtc_fault_(CUS_NVRTC_IDX_nvrtcDestroyProgram);
        nvrtcResult destroyed = cus_nvrtc_.nvrtcDestroyProgram(&prog);
        if (r == NVRTC_SUCCESS)
            r = destroyed;
        if (r != NVRTC_SUCCESS) /* its memory is NVRTC's: nothing to undo here */
            cus_destroy_error_(cus_nvrtc_status_(r), "cus_program_compile",
                               "nvrtcDestroyProgram",
                               "nvrtcDestroyProgram failed with %s for \"%s\": its memory may "
                               "have leaked",
                               cus_nvrtc_result_name_(r), p->name);
    }
    if (st) {
        cus_rtc_output_unref_(out);
        return st;
    }
    out->bytes = sizeof *out + out->ptx_size + out->cubin_size + out->ltoir_size +
                 strlen(out->log) + 1;
    for (size_t i = 0; i < out->nnames; i++)
        out->bytes += strlen(out->expressions[i]) + strlen(out->lowered[i]) + 2;
    *outp = out;
    return CUS_SUCCESS;
}

CUS_API cus_status cus_program_compile(cus_program *program, const cus_program_options *options)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(program);
    static const cus_program_options defaults;
    const cus_program_options *o = options ? options : &defaults;
    if (o->target != CUS_PROGRAM_PTX && o->target != CUS_PROGRAM_CUBIN &&
        o->target != CUS_PROGRAM_LTOIR)
        return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL, "invalid argument: target %d",
                        (int)o->target);
    CUS_TRY(check_array(o->defines, o->ndefines, "defines"));
    CUS_TRY(check_array(o->include_paths, o->ninclude_paths, "include_paths"));
    CUS_TRY(check_array(o->options, o->noptions, "options"));
    CUS_TRY(check_array(o->name_expressions, o->nname_expressions, "name_expressions"));
    CUS_LOCK_SCOPE(&program->lock);
    if (atomic_load_explicit(&program->out, memory_order_relaxed))
        return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,
                        "invalid argument: \"%s\" is compiled already (make another program "
                        "to compile it with other options)",
                        program->name);
    __attribute__((cleanup(options_free))) option_list l = {0};
    CUS_TRY(build_options(o, &l));

    bool cached = !o->no_cache && cus_rtc_cache_enabled_();
    cus_rtc_key_ key = {0, 0};
    cus_rtc_output_ *out = NULL;
    if (cached) {
        key = compile_key(program, &l, o);
        out = cus_rtc_cache_begin_(key);
        if (out) {
            program->from_cache = true;
            free(program->failed_log);
            program->failed_log = NULL;
            atomic_store_explicit(&program->out, out, memory_order_release);
            return CUS_SUCCESS;
        }
    }
    cus_status st = compile_nvrtc(program, &l, o, &out);
    if (cached)
        cus_rtc_cache_finish_(key, st ? NULL : out);
    if (st)
        return st;
    free(program->failed_log);
    program->failed_log = NULL;
    atomic_store_explicit(&program->out, out, memory_order_release);
    return CUS_SUCCESS;
}

/* --- results ------------------------------------------------------------------------ */

static const cus_rtc_output_ *output_of(const cus_program *p)
{
    return atomic_load_explicit(&((cus_program *)p)->out, memory_order_acquire);
}

#define CHECK_COMPILED(p, o)                                                   \
    do {                                                                       \
        if (!(o))                                                              \
            return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,                  \
                            "invalid argument: \"%s\" has not been compiled (cus_program_compile)", \
                            (p)->name);                                        \
    } while (0)

CUS_API const char *cus_program_log(const cus_program *program)
{
    if (!program)
        return "";
    const cus_rtc_output_ *o = output_of(program);
    if (o)
        return o->log;
    return program->failed_log ? program->failed_log : "";
}

CUS_API const char *cus_program_name(const cus_program *program)
{
    return program ? program->name : NULL;
}

CUS_API bool cus_program_from_cache(const cus_program *program)
{
    return program && output_of(program) && program->from_cache;
}

CUS_API cus_status cus_program_code(const cus_program *program, cus_program_target kind,
                                    const void **data, size_t *size)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(program && data && size);
    const cus_rtc_output_ *o = output_of(program);
    CHECK_COMPILED(program, o);
    const void *d = NULL;
    size_t n = 0;
    switch (kind) {
    case CUS_PROGRAM_PTX: d = o->ptx, n = o->ptx_size; break;
    case CUS_PROGRAM_CUBIN: d = o->cubin, n = o->cubin_size; break;
    case CUS_PROGRAM_LTOIR: d = o->ltoir, n = o->ltoir_size; break;
    default:
        return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL, "invalid argument: kind %d", (int)kind);
    }
    static const char *const kinds[] = {"PTX", "a cubin", "LTO-IR"};
    if (!d)
        return CUS_FAIL(CUDA_ERROR_NOT_FOUND, NULL,
                        "\"%s\" was not compiled to %s (see cus_program_options.target)",
                        program->name, kinds[kind]);
    *data = d;
    *size = n;
    return CUS_SUCCESS;
}

static const char *lowered_of(const cus_rtc_output_ *o, const char *expression)
{
    for (size_t i = 0; i < o->nnames; i++)
        if (strcmp(o->expressions[i], expression) == 0)
            return o->lowered[i];
    return NULL;
}

CUS_API cus_status cus_program_lowered_name(const cus_program *program, const char *expression,
                                            const char **lowered)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(program && expression && lowered);
    const cus_rtc_output_ *o = output_of(program);
    CHECK_COMPILED(program, o);
    const char *l = lowered_of(o, expression);
    if (!l)
        return CUS_FAIL(CUDA_ERROR_NOT_FOUND, NULL,
                        "\"%s\" is not a name expression of \"%s\"'s compile: give it in "
                        "cus_program_options.name_expressions",
                        expression, program->name);
    *lowered = l;
    return CUS_SUCCESS;
}

CUS_API cus_status cus_program_load(const cus_program *program, cus_context *ctx,
                                    const cus_jit_options *jit, cus_module **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(program && ctx && out);
    const cus_rtc_output_ *o = output_of(program);
    CHECK_COMPILED(program, o);
    if (o->cubin)
        return cus_module_load_data(ctx, o->cubin, o->cubin_size, jit, out);
    if (o->ptx)
        return cus_module_load_data(ctx, o->ptx, o->ptx_size, jit, out);
    return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,
                    "invalid argument: \"%s\" was compiled to LTO-IR only, which must be linked "
                    "(with nvJitLink) before it can be loaded",
                    program->name);
}

CUS_API cus_status cus_program_load_library(const cus_program *program,
                                            const cus_jit_options *jit, cus_library **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(program && out);
    const cus_rtc_output_ *o = output_of(program);
    CHECK_COMPILED(program, o);
    if (o->cubin)
        return cus_library_load_data(o->cubin, o->cubin_size, jit, NULL, out);
    if (o->ptx)
        return cus_library_load_data(o->ptx, o->ptx_size, jit, NULL, out);
    return CUS_FAIL(CUS_ERROR_INVALID_ARGUMENT, NULL,
                    "invalid argument: \"%s\" was compiled to LTO-IR only, which must be linked "
                    "(with nvJitLink) before it can be loaded",
                    program->name);
}

CUS_API cus_status cus_program_get_function(const cus_program *program, cus_module *module,
                                            const char *name, cus_function **out)
{
    CUS_API_ENTER();
    CUS_CHECK_ARG(program && module && name && out);
    const cus_rtc_output_ *o = output_of(program);
    CHECK_COMPILED(program, o);
    const char *lowered = lowered_of(o, name);
    return cus_module_get_function(module, lowered ? lowered : name, out);
}
