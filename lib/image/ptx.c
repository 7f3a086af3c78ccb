/* PTX text: functions (.entry names, their .param layouts and performance
 * directives, .func), the module (.version, .target, the top-level
 * directives), the checks of its declarations, and ptxas' info log.
 *
 * PTX is checked the way ptxas would catch the errors a test may plant
 * (statement structure, known opcodes and directives, balanced brackets,
 * declarations, initializers) and laid out the way ptxas lays it out; it is
 * not a full PTX grammar: operands are only checked for shape.
 *
 * The layers: ptx.c (here) calls ptx_body.c, which calls ptx_decl.c, which
 * calls ptx_lex.c; all share ptx_internal.h and image_util.c. */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_internal.h"

/* The start of the parameter area in constant bank 0 (what ptxas aligns
 * parameters against), by SM version; read off PARAM_CBANK in ptxas' cubins.
 * The JIT compiles for the device, so it is the device's that counts, not
 * the .target's (checked on an H200 with compute_80 PTX). */
static uint64_t param_base(unsigned sm)
{
    return sm >= 100 ? 0x380 : sm >= 90 ? 0x210 : 0x160;
}

/* The number in "sm_90a" or "compute_90"; 0 when there is none. */
static unsigned target_sm(const char *t)
{
    const char *u = strchr(t, '_');
    unsigned sm = 0;
    if (!u)
        return 0;
    for (u++; *u >= '0' && *u <= '9' && sm < 100000; u++)
        sm = sm * 10 + (unsigned)(*u - '0');
    return sm;
}

/* --- functions --- */

/* (.param ... , ...) of an .entry: the layout is what ptxas gives, see
 * fake_image.h. */
static bool parse_entry_params(ptx *ps, fake_image_function *f, size_t *pcap, size_t line)
{
    uint64_t end = 0;
    if (!expect(ps, '('))
        return false;
    if (at(ps, ')')) {
        next(ps);
        return true;
    }
    for (;;) {
        if (!is_dir(ps, ".param"))
            return syntax(ps);
        next(ps);
        uint64_t align = 0, count = 1;
        const ptx_type *type = NULL;
        bool ptr = false;
        while (ps->tok.kind == T_DIR) {
            size_t dline = ps->tok.line;
            if (is_dir(ps, ".align")) {
                uint64_t a;
                next(ps);
                if (!int_literal(ps, &a))
                    return false;
                if (!is_pow2(a))
                    return ptx_fail(ps, dline, "error   ", "Alignment must be a power of two");
                if (!ptr) /* after .ptr it is the pointee's */
                    align = a;
            } else if (is_dir(ps, ".ptr")) {
                ptr = true;
                next(ps);
            } else if (ptr && (is_dir(ps, ".global") || is_dir(ps, ".const") ||
                               is_dir(ps, ".local") || is_dir(ps, ".shared"))) {
                next(ps);
            } else if (is_dir(ps, ".attribute")) {
                next(ps);
                if (!at(ps, '('))
                    return syntax(ps);
                if (!skip_group(ps))
                    return false;
            } else if (is_dir(ps, ".v2") || is_dir(ps, ".v4") || is_dir(ps, ".v8")) {
                next(ps);
                if (find_type(&ps->tok))
                    next(ps);
                if (ps->tok.kind != T_IDENT)
                    return syntax(ps);
                char name[68];
                return ptx_fail(ps, dline, "error   ",
                                "Variable '%s' cannot be allocated in .param state space",
                                printable(name, ps->tok.s, ps->tok.n));
            } else if (!type && find_type(&ps->tok)) {
                type = find_type(&ps->tok);
                next(ps);
            } else if (!type && is_opaque_type(&ps->tok)) {
                type = &ptx_type_u64; /* a 64-bit handle */
                next(ps);
            } else {
                return syntax(ps);
            }
        }
        if (!type || ps->tok.kind != T_IDENT)
            return syntax(ps);
        next(ps);
        while (at(ps, '[')) {
            uint64_t n;
            next(ps);
            if (!int_literal(ps, &n) || !expect(ps, ']'))
                return false;
            count = sat_mul(count, n);
        }
        uint64_t a = align > type->size ? align : type->size;
        uint64_t size = sat_mul(count, type->size);
        uint64_t addr = align_up(sat_add(ps->pbase, end), a);
        uint64_t off = addr == UINT64_MAX ? UINT64_MAX : addr - ps->pbase;
        end = sat_add(off, size);
        if (end <= 0x7ffc) {
            fake_image_param *p = grow(f->params, pcap, f->nparams + 1, sizeof *p);
            if (!p)
                return ptx_oom(ps);
            f->params = p;
            p[f->nparams++] = (fake_image_param){(size_t)off, (size_t)size, (size_t)a};
            f->param_bytes = (size_t)end;
        }
        if (at(ps, ',')) {
            next(ps);
            continue;
        }
        if (!expect(ps, ')'))
            return false;
        break;
    }
    if (end > 0x7ffc)
        return ptx_fail(ps, line, "error   ",
                        "Entry function '%s' uses too much parameter space (0x%llx bytes, 0x7ffc max).",
                        f->name, (unsigned long long)end);
    return true;
}

/* 1 to 3 comma-separated integers. */
static bool parse_dims(ptx *ps, uint64_t v[3])
{
    v[0] = v[1] = v[2] = 1;
    for (int i = 0;; i++) {
        if (!int_literal(ps, &v[i]))
            return false;
        if (!at(ps, ',') || i == 2)
            return true;
        next(ps);
    }
}

static bool add_entry(ptx *ps, const token *name, size_t *index)
{
    fake_image *img = ps->img;
    if (!image_add_function(img, &ps->fcap, name->s, name->n))
        return ptx_oom(ps);
    *index = img->nfunctions - 1;
    return true;
}

/* .entry name (params) {performance directives} { body } | ;
 * .func [(results)] name [(params)] {directives} { body } | ; */
static bool parse_function(ptx *ps, bool entry, bool ext)
{
    size_t line = ps->tok.line;
    next(ps);
    while (!entry && is_dir(ps, ".attribute")) {
        next(ps);
        if (!at(ps, '('))
            return syntax(ps);
        if (!skip_group(ps))
            return false;
    }
    if (!entry && at(ps, '(') && !skip_group(ps))
        return false;
    if (ps->tok.kind != T_IDENT)
        return syntax(ps);
    token name = ps->tok;
    next(ps);
    size_t index = SIZE_MAX, pcap = 0;
    fake_image_function scratch = {0};
    fake_image_function *f = &scratch;
    if (entry) {
        if (!add_entry(ps, &name, &index))
            return false;
        f = &ps->img->functions[index];
        if (!parse_entry_params(ps, f, &pcap, line))
            return false;
    } else if (at(ps, '(') && !skip_group(ps)) {
        return false;
    }
    bool maxntid = false, reqntid = false;
    for (;;) {
        uint64_t v[3], one;
        size_t dline = ps->tok.line;
        if (is_dir(ps, ".maxntid") || is_dir(ps, ".reqntid")) {
            bool req = is_dir(ps, ".reqntid");
            next(ps);
            if (!parse_dims(ps, v))
                return false;
            if (req) {
                reqntid = true;
                for (int i = 0; i < 3; i++)
                    f->reqntid[i] = v[i] > UINT_MAX ? UINT_MAX : (unsigned)v[i];
            } else {
                maxntid = true;
                uint64_t n = sat_mul(sat_mul(v[0], v[1]), v[2]);
                f->max_threads = n > UINT_MAX ? UINT_MAX : (unsigned)n;
            }
            if (maxntid && reqntid)
                return ptx_fail(ps, dline, "error   ",
                                "Conflicting directives: .maxntid and .reqntid cannot both be specified");
        } else if (is_dir(ps, ".reqnctapercluster")) {
            next(ps);
            if (!parse_dims(ps, v))
                return false;
        } else if (is_dir(ps, ".minnctapersm") || is_dir(ps, ".maxnctapersm") ||
                   is_dir(ps, ".maxnreg") || is_dir(ps, ".maxclusterrank") ||
                   is_dir(ps, ".abi_preserve") || is_dir(ps, ".abi_preserve_control")) {
            next(ps);
            if (!int_literal(ps, &one))
                return false;
        } else if (is_dir(ps, ".noreturn") || is_dir(ps, ".explicitcluster") ||
                   is_dir(ps, ".blocksareclusters")) {
            next(ps);
        } else if (is_dir(ps, ".pragma")) {
            if (!skip_statement(ps))
                return false;
        } else {
            break;
        }
    }
    if (at(ps, ';')) {
        next(ps);
        if (entry) { /* a prototype: not a kernel of this module */
            fake_image *img = ps->img;
            free(img->functions[index].name);
            free(img->functions[index].params);
            img->nfunctions--;
        }
        return add_sym(ps, &name, ext ? SYM_FUNC_EXTERN : SYM_FUNC_DECL, SIZE_MAX);
    }
    if (!at(ps, '{'))
        return syntax(ps);
    if (!add_sym(ps, &name, entry ? SYM_ENTRY : SYM_FUNC, SIZE_MAX))
        return false;
    if (!parse_body(ps, entry ? index : SCOPE_FUNC))
        return false;
    if (entry) {
        f = &ps->img->functions[index];
        if (f->static_shared > 0xc000)
            return ptx_fail(ps, 0, "error   ",
                            "Entry function '%s' uses too much shared data (0x%zx bytes, 0xc000 max)",
                            f->name, f->static_shared);
    }
    return true;
}

/* --- the module --- */

static int cmp_slice(const slice *a, const slice *b)
{
    int c = memcmp(a->s, b->s, a->n < b->n ? a->n : b->n);
    return c ? c : (a->n > b->n) - (a->n < b->n);
}

static int cmp_sym(const void *a, const void *b)
{
    const sym *x = a, *y = b;
    int c = cmp_slice(&x->name, &y->name);
    return c ? c : (x->line > y->line) - (x->line < y->line);
}

static int cmp_slice_v(const void *a, const void *b) { return cmp_slice(a, b); }

/* What ptxas resolves itself in a whole-program compile, as the driver's
 * JIT does: the functions nvcc declares .extern for printf, malloc/free and
 * assert, and the device graph API of the CUDA runtime that nvcc 13 also
 * leaves as .extern (cuda_device_runtime_api.h) without -rdc: tail and
 * fire-and-forget launches, conditional nodes and device-side kernel node
 * updates. These are the cuda* names in ptxas 13.0's strings (but
 * cudaDeviceSynchronize, which it refuses from sm_90 on); each was checked
 * with ptxas 13.0 for sm_90, and cudaGraphSetConditional, cudaGraphLaunch
 * and cudaGraphKernelNodeSetParam with the driver on an H200. The rest of
 * the device runtime (cudaGetParameterBuffer, cudaLaunchDevice,
 * cudaGetLastError, cudaMalloc, cudaStreamCreateWithFlags,
 * cudaGetCurrentGraphExec, ...) lives in libcudadevrt.a, which needs -rdc
 * and a link step: ptxas and the driver (CUDA_ERROR_INVALID_PTX) report it
 * unresolved, and so does the fake. */
static bool is_builtin_function(const slice *s)
{
    static const char *const names[] = {
        "vprintf",
        "malloc",
        "free",
        "__assertfail",
        "cudaGraphLaunch",
        "cudaGraphSetConditional",
        "cudaGraphKernelNodeSetParam",
        "cudaGraphKernelNodeSetEnabled",
        "cudaGraphKernelNodeSetGridDim",
        "cudaGraphKernelNodeUpdatesApply",
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strlen(names[i]) == s->n && memcmp(names[i], s->s, s->n) == 0)
            return true;
    return false;
}

/* Duplicates, unresolved functions, and .extern variables (which ptxas
 * defines, with a warning, when nothing else does). */
static bool check_declarations(ptx *ps)
{
    if (ps->nsyms)
        qsort(ps->syms, ps->nsyms, sizeof *ps->syms, cmp_sym);
    if (ps->ncalls)
        qsort(ps->calls, ps->ncalls, sizeof *ps->calls, cmp_slice_v);
    for (size_t i = 0, j; i < ps->nsyms; i = j) {
        const sym *first_def = NULL, *fdecl = NULL, *ext = NULL;
        for (j = i; j < ps->nsyms && cmp_slice(&ps->syms[j].name, &ps->syms[i].name) == 0; j++) {
            const sym *s = &ps->syms[j];
            int name_len = (int)(s->name.n < 256 ? s->name.n : 256);
            bool def = s->kind == SYM_ENTRY || s->kind == SYM_FUNC || s->kind == SYM_VAR;
            if (def && first_def) {
                bool funcs = first_def->kind != SYM_VAR && s->kind != SYM_VAR;
                bool vars = first_def->kind == SYM_VAR && s->kind == SYM_VAR;
                return ptx_fail(ps, s->line, "error   ", "%s '%.*s'",
                                funcs  ? "Duplicate definition of function"
                                : vars ? "Duplicate definition of variable"
                                       : "Inconsistent redefinition of variable",
                                name_len, s->name.s);
            }
            if (def)
                first_def = s;
            else if (s->kind == SYM_FUNC_DECL || s->kind == SYM_FUNC_EXTERN)
                fdecl = fdecl && fdecl->kind == SYM_FUNC_DECL ? fdecl : s;
            else if (s->kind == SYM_VAR_EXTERN && !ext)
                ext = s;
        }
        const sym *s = &ps->syms[i];
        int name_len = (int)(s->name.n < 256 ? s->name.n : 256);
        if (!first_def && fdecl &&
            (fdecl->kind == SYM_FUNC_DECL ||
             (!is_builtin_function(&fdecl->name) && ps->ncalls &&
              bsearch(&fdecl->name, ps->calls, ps->ncalls, sizeof *ps->calls, cmp_slice_v))))
            return ptx_fail(ps, 0, "fatal   ", "Unresolved extern function '%.*s'", name_len,
                            s->name.s);
        /* the .extern variables stay globals only where nothing defines them */
        bool keep = !first_def;
        for (size_t k = i; k < j; k++) {
            const sym *v = &ps->syms[k];
            if (v->kind == SYM_VAR_EXTERN && v->global != SIZE_MAX)
                ps->gext[v->global] = !keep;
            if (v->kind == SYM_VAR_EXTERN)
                keep = false; /* one global per name */
        }
        if (ext && !first_def)
            log_add(ps->info,
                    "ptxas warning : Unresolved extern variable '%.*s' in whole program "
                    "compilation, ignoring extern qualifier\n",
                    name_len, s->name.s);
    }
    /* drop the .extern globals that something else defines */
    fake_image *img = ps->img;
    size_t n = 0;
    for (size_t i = 0; i < img->nglobals; i++) {
        if (ps->gext[i]) {
            free(img->globals[i].name);
            free(img->globals[i].init);
        } else {
            img->globals[n++] = img->globals[i];
        }
    }
    img->nglobals = n;
    return true;
}

static void ptx_info(ptx *ps)
{
    const fake_image *img = ps->img;
    uint64_t gmem = 0, cmem = 0;
    for (size_t i = 0; i < img->nglobals; i++) {
        if (img->globals[i].constant)
            cmem += img->globals[i].size;
        else
            gmem += img->globals[i].size;
    }
    log_add(ps->info, "ptxas info    : %llu bytes gmem", (unsigned long long)gmem);
    if (cmem)
        log_add(ps->info, ", %llu bytes cmem[3]", (unsigned long long)cmem);
    log_add(ps->info, "\n");
    for (size_t i = 0; i < img->nfunctions; i++) {
        const fake_image_function *f = &img->functions[i];
        log_add(ps->info,
                "ptxas info    : Compiling entry function '%s' for '%s'\n"
                "ptxas info    : Function properties for %s\n"
                "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
                "ptxas info    : Used 0 registers, used 0 barriers, %zu bytes smem\n",
                f->name, img->target, f->name, f->static_shared);
    }
}

static bool parse_target(ptx *ps, bool first)
{
    size_t line = ps->tok.line;
    next(ps);
    if (ps->tok.kind != T_IDENT)
        return first ? ptx_fail(ps, line, "fatal   ",
                                "Target architecture not defined at start of file "
                                "'application ptx input'")
                     : syntax(ps);
    token t = ps->tok;
    bool sm = t.n > 3 && memcmp(t.s, "sm_", 3) == 0;
    bool compute = t.n > 8 && memcmp(t.s, "compute_", 8) == 0;
    if ((!sm && !compute) || t.n >= sizeof ps->img->target)
        return ptx_fail(ps, line, "fatal   ",
                        "Target architecture not defined at start of file 'application ptx input'");
    if (first) {
        memcpy(ps->img->target, t.s, t.n);
        ps->img->target[t.n] = '\0';
        ps->pbase = param_base(ps->jit_sm ? ps->jit_sm : target_sm(ps->img->target));
    }
    next(ps);
    while (at(ps, ',')) { /* texmode_independent, debug, map_f64_to_f32 */
        next(ps);
        if (ps->tok.kind != T_IDENT)
            return syntax(ps);
        next(ps);
    }
    return true;
}

static bool parse_module(ptx *ps)
{
    next(ps);
    /* .version major.minor, then .target */
    size_t line = ps->tok.line;
    bool version = false;
    if (is_dir(ps, ".version")) {
        next(ps);
        const token *t = &ps->tok;
        const char *dot = t->kind == T_NUM ? memchr(t->s, '.', t->n) : NULL;
        uint64_t major, minor;
        if (dot && parse_digits(t->s, (size_t)(dot - t->s), 10, &major) &&
            parse_digits(dot + 1, t->n - (size_t)(dot - t->s) - 1, 10, &minor) &&
            major < 1000 && minor < 1000) {
            ps->img->ptx_version_major = (unsigned)major;
            ps->img->ptx_version_minor = (unsigned)minor;
            version = true;
            next(ps);
        }
    }
    if (!version)
        return ptx_fail(ps, line, "fatal   ",
                        "Missing .version directive at start of file 'application ptx input'");
    if (!is_dir(ps, ".target"))
        return ptx_fail(ps, ps->tok.line, "fatal   ",
                        "Missing .target directive at start of file 'application ptx input'");
    if (!parse_target(ps, true))
        return false;

    while (ps->tok.kind != T_EOF) {
        if (ps->tok.kind != T_DIR)
            return syntax(ps);
        bool ok;
        if (is_dir(ps, ".address_size")) {
            uint64_t bits;
            next(ps);
            ok = int_literal(ps, &bits);
        } else if (is_dir(ps, ".target")) {
            ok = parse_target(ps, false);
        } else if (is_dir(ps, ".file")) {
            ok = skip_line(ps);
        } else if (is_dir(ps, ".section")) { /* debug sections: .section .debug_info { ... } */
            next(ps);
            if (ps->tok.kind != T_DIR && ps->tok.kind != T_IDENT)
                return syntax(ps);
            next(ps);
            ok = at(ps, '{') ? skip_group(ps) : syntax(ps);
        } else if (is_dir(ps, ".pragma") || is_dir(ps, ".alias")) {
            ok = skip_statement(ps);
        } else {
            bool ext = false;
            while (is_dir(ps, ".visible") || is_dir(ps, ".extern") || is_dir(ps, ".weak") ||
                   is_dir(ps, ".common")) {
                ext |= is_dir(ps, ".extern");
                next(ps);
            }
            if (is_dir(ps, ".entry") || is_dir(ps, ".func"))
                ok = parse_function(ps, is_dir(ps, ".entry"), ext);
            else if (is_dir(ps, ".global") || is_dir(ps, ".const") || is_dir(ps, ".shared") ||
                     is_dir(ps, ".local") || is_dir(ps, ".tex"))
                ok = parse_variable(ps, ext, SCOPE_MODULE);
            else
                ok = syntax(ps);
        }
        if (!ok)
            return false;
    }
    return check_declarations(ps);
}

CUresult parse_ptx(const char *text, size_t len, unsigned device_cc, fake_image *img,
                   logbuf *err, logbuf *info)
{
    ptx ps = {0};
    ps.jit_sm = device_cc == FAKE_IMAGE_ANY_DEVICE ? 0 : device_cc;
    ps.p = text;
    ps.end = text + len;
    ps.line = 1;
    ps.img = img;
    ps.err = err;
    ps.info = info;
    ps.status = CUDA_SUCCESS;
    img->format = img->code = FAKE_IMAGE_PTX;
    bool ok = parse_module(&ps);
    if (ok)
        ptx_info(&ps);
    free(ps.gext);
    free(ps.syms);
    free(ps.calls);
    free(ps.msh);
    free(ps.dims);
    return ok ? CUDA_SUCCESS : ps.status;
}
