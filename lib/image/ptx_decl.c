/* PTX: types, the declarations recorded for the checks at the end of the
 * module, and variable declarations: their sizes and alignments, their
 * initializers, the module's globals and the static shared memory. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_internal.h"

/* --- types --- */

static const ptx_type ptx_types[] = {
    {".u8", 1, EK_INT},      {".s8", 1, EK_INT},      {".b8", 1, EK_BITS},
    {".u16", 2, EK_INT},     {".s16", 2, EK_INT},     {".b16", 2, EK_BITS},
    {".f16", 2, EK_HALF},    {".bf16", 2, EK_HALF},   {".u32", 4, EK_INT},
    {".s32", 4, EK_INT},     {".b32", 4, EK_BITS},    {".f32", 4, EK_F32},
    {".f16x2", 4, EK_BITS},  {".bf16x2", 4, EK_BITS}, {".tf32", 4, EK_BITS},
    {".u64", 8, EK_INT},     {".s64", 8, EK_INT},     {".b64", 8, EK_BITS},
    {".f64", 8, EK_F64},     {".b128", 16, EK_BITS},
};

const ptx_type ptx_type_u64 = {".u64", 8, EK_INT};

const ptx_type *find_type(const token *t)
{
    if (t->kind != T_DIR)
        return NULL;
    for (size_t i = 0; i < sizeof ptx_types / sizeof *ptx_types; i++)
        if (tok_is(t, T_DIR, ptx_types[i].name))
            return &ptx_types[i];
    return NULL;
}

/* Textures, samplers and surfaces: handles, not memory (cuModuleGetGlobal
 * does not see them). */
bool is_opaque_type(const token *t)
{
    return tok_is(t, T_DIR, ".texref") || tok_is(t, T_DIR, ".samplerref") ||
           tok_is(t, T_DIR, ".surfref");
}

/* --- declarations, recorded for the checks at the end --- */

bool add_sym(ptx *ps, const token *name, int kind, size_t global)
{
    sym *s = grow(ps->syms, &ps->scap, ps->nsyms + 1, sizeof *s);
    if (!s)
        return ptx_oom(ps);
    ps->syms = s;
    s[ps->nsyms++] = (sym){{name->s, name->n}, name->line, kind, global};
    return true;
}

/* --- variables --- */

typedef struct {
    const ptx_type *type;
    unsigned vec;
    uint64_t elem; /* type size times vec */
    size_t ndims;  /* in ps->dims */
    uint64_t size;
} decl;

static void put_le(unsigned char *p, uint64_t v, size_t n)
{
    for (size_t i = 0; i < n; i++, v >>= 8)
        p[i] = (unsigned char)v;
}

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}
/* Narrowing, with what is out of range as an infinity (not UB). */
static float to_f32(double d)
{
    return d > FLT_MAX ? INFINITY : d < -FLT_MAX ? -INFINITY : (float)d;
}
static float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
static uint64_t f64_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}
static double bits_f64(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

/* One scalar of an initializer, into dst (elem bytes of ty->size each);
 * expressions other than a literal (addresses, generic(), arithmetic) are
 * accepted and left zero: the fake has no addresses to put there. */
static bool parse_scalar(ptx *ps, const ptx_type *ty, unsigned char *dst)
{
    bool neg = false;
    const token *nx = peek(ps);
    if ((at(ps, '-') || at(ps, '+')) && nx->kind == T_NUM) {
        neg = at(ps, '-');
        next(ps);
        nx = peek(ps);
    }
    if (ps->tok.kind == T_NUM && (is_punct(nx, ',') || is_punct(nx, '}') || is_punct(nx, ';'))) {
        number num;
        size_t line = ps->tok.line;
        if (!parse_number(ps->tok.s, ps->tok.n, &num))
            return syntax(ps);
        bool is_float = num.kind != NUM_INT;
        if ((ty->kind == EK_INT && is_float) ||
            ((ty->kind == EK_F32 || ty->kind == EK_F64) && !is_float))
            return ptx_fail(ps, line, "fatal   ", "Initial value type mismatch");
        double d = num.kind == NUM_F32   ? (double)bits_f32((uint32_t)num.u)
                   : num.kind == NUM_F64 ? bits_f64(num.u)
                                         : num.d;
        if (neg)
            d = -d;
        uint64_t v;
        if (ty->kind == EK_F32 || (ty->kind == EK_BITS && ty->size == 4 && num.kind != NUM_INT))
            v = f32_bits(to_f32(d));
        else if (ty->kind == EK_F64 || (ty->kind == EK_BITS && ty->size == 8 && num.kind != NUM_INT))
            v = f64_bits(d);
        else if (num.kind == NUM_INT)
            v = neg ? (uint64_t)0 - num.u : num.u;
        else
            v = 0; /* a float into 8/16 bits, or an .f16: not worth converting */
        if (dst)
            put_le(dst, v, ty->size < 8 ? ty->size : 8);
        next(ps);
        return true;
    }
    size_t depth = 0;
    bool any = false, operand = false;
    for (;; next(ps)) {
        const token *t = &ps->tok;
        if (t->kind == T_EOF || t->kind == T_BAD || at(ps, '{') || at(ps, '[') || at(ps, ']'))
            return syntax(ps);
        if (depth == 0 && (at(ps, ',') || at(ps, '}') || at(ps, ';')))
            return any ? true : syntax(ps);
        if (t->kind == T_IDENT || t->kind == T_NUM || t->kind == T_STR) {
            if (operand) /* two without an operator between */
                return syntax(ps);
            operand = true;
        } else if (at(ps, ')')) {
            if (depth-- == 0)
                return syntax(ps);
            operand = true;
        } else {
            depth += at(ps, '(');
            operand = false;
        }
        any = true;
    }
}

/* The number of elements of the outermost brace of an initializer, for
 * `x[] = {...}`; leaves the lexer where it was. */
static bool count_outer(ptx *ps, uint64_t *count)
{
    ptx_mark m = mark(ps);
    size_t depth = 0;
    uint64_t n = 0;
    bool elem = false;
    for (;;) {
        const token *t = &ps->tok;
        if (t->kind == T_EOF || t->kind == T_BAD || at(ps, ';'))
            return syntax(ps);
        if (at(ps, '{') || at(ps, '(')) {
            if (depth == 1 && at(ps, '{'))
                elem = true;
            depth++;
        } else if (at(ps, '}') || at(ps, ')')) {
            if (depth == 0)
                return syntax(ps);
            if (--depth == 0)
                break;
        } else if (depth == 1 && at(ps, ',')) {
            n++;
            elem = false;
        } else if (depth == 1) {
            elem = true;
        }
        next(ps);
    }
    *count = n + (elem ? 1 : 0);
    reset(ps, &m);
    return true;
}

/* An initializer after '=': a scalar, or braces nested as deep as the
 * dimensions (the vector width being the innermost one), shorter lists
 * zero-filled. Iterative; the nesting is bounded by the dimensions. */
static bool parse_init(ptx *ps, const decl *d, unsigned char *init)
{
    size_t nd = d->ndims + (d->vec > 1 ? 1 : 0);
    if (nd == 0) {
        if (at(ps, '{'))
            return ptx_fail(ps, ps->tok.line, "fatal   ", "Initial value type mismatch");
        return parse_scalar(ps, d->type, init);
    }
    if (!at(ps, '{'))
        return ptx_fail(ps, ps->tok.line, "fatal   ", "Initial value type mismatch");
    uint64_t outer;
    if (!count_outer(ps, &outer))
        return false;
    if (outer > (d->ndims ? ps->dims[0] : d->vec))
        return ptx_fail(ps, ps->tok.line, "fatal   ",
                        "Greater number of elements in array initializer");
    /* per level: its length, the stride of its elements, and the cursor */
    uint64_t *len = malloc(nd * 4 * sizeof *len);
    if (!len)
        return ptx_oom(ps);
    uint64_t *stride = len + nd, *base = stride + nd, *cnt = base + nd;
    for (size_t i = 0; i < nd; i++)
        len[i] = i < d->ndims ? ps->dims[i] : d->vec;
    stride[nd - 1] = d->type->size;
    for (size_t i = nd - 1; i > 0; i--)
        stride[i - 1] = stride[i] * len[i]; /* cannot overflow: d->size did not */
    size_t lvl = 0;
    base[0] = cnt[0] = 0;
    bool need_sep = false, ok = true;
    next(ps);
    for (;;) {
        if (at(ps, '}')) {
            if (!need_sep && cnt[lvl] > 0) {
                ok = syntax(ps); /* a trailing comma */
                break;
            }
            next(ps);
            if (lvl == 0)
                break;
            lvl--;
            cnt[lvl]++;
            need_sep = true;
        } else if (need_sep) {
            if (!at(ps, ',')) {
                ok = syntax(ps);
                break;
            }
            next(ps);
            need_sep = false;
        } else if (cnt[lvl] >= len[lvl]) {
            ok = ptx_fail(ps, ps->tok.line, "fatal   ",
                          "Greater number of elements in array initializer");
            break;
        } else if (at(ps, '{')) {
            if (lvl + 1 >= nd) {
                ok = ptx_fail(ps, ps->tok.line, "fatal   ", "Initial value type mismatch");
                break;
            }
            base[lvl + 1] = base[lvl] + cnt[lvl] * stride[lvl];
            lvl++;
            cnt[lvl] = 0;
            next(ps);
        } else {
            if (lvl + 1 != nd) {
                ok = ptx_fail(ps, ps->tok.line, "fatal   ", "Initial value type mismatch");
                break;
            }
            if (!parse_scalar(ps, d->type, init ? init + base[lvl] + cnt[lvl] * stride[lvl] : NULL)) {
                ok = false;
                break;
            }
            cnt[lvl]++;
            need_sep = true;
        }
    }
    free(len);
    return ok;
}

static bool add_global(ptx *ps, const token *name, const decl *d, uint64_t align, bool constant,
                       bool ext, size_t *index)
{
    fake_image *img = ps->img;
    if (!image_add_global(img, &ps->gcap, &ps->gbytes, name->s, name->n, d->size, align, constant))
        return ptx_oom(ps);
    bool *e = grow(ps->gext, &ps->gextcap, img->nglobals, sizeof *e);
    if (!e)
        return ptx_oom(ps);
    ps->gext = e;
    e[img->nglobals - 1] = ext;
    *index = img->nglobals - 1;
    return true;
}

/* A variable declaration, the current token being its state space:
 * [.align N] [.vN] .type name[dims] [= init] {, name[dims] [= init]} ;
 * Module-scope .global and .const become globals; .shared in an entry's body
 * adds to its static shared memory, at module scope it counts for the
 * entries that name it. */
bool parse_variable(ptx *ps, bool ext, size_t scope)
{
    bool global = is_dir(ps, ".global"), constant = is_dir(ps, ".const");
    bool shared = is_dir(ps, ".shared"), module = scope == SCOPE_MODULE;
    uint64_t align = 0;
    bool opaque = false;
    decl d = {NULL, 1, 0, 0, 0};
    next(ps);
    for (; ps->tok.kind == T_DIR; ) {
        if (is_dir(ps, ".align")) {
            size_t line = ps->tok.line;
            next(ps);
            if (!int_literal(ps, &align))
                return false;
            if (!is_pow2(align))
                return ptx_fail(ps, line, "error   ", "Alignment must be a power of two");
        } else if (is_dir(ps, ".v2") || is_dir(ps, ".v4") || is_dir(ps, ".v8")) {
            d.vec = (unsigned)(ps->tok.s[2] - '0');
            next(ps);
        } else if (is_dir(ps, ".attribute")) {
            next(ps);
            if (!at(ps, '('))
                return syntax(ps);
            if (!skip_group(ps))
                return false;
        } else if (!d.type && find_type(&ps->tok)) {
            d.type = find_type(&ps->tok);
            next(ps);
        } else if (!d.type && !opaque && is_opaque_type(&ps->tok)) {
            opaque = true;
            next(ps);
        } else {
            return syntax(ps);
        }
    }
    if (!d.type && !opaque)
        return syntax(ps);
    for (;;) {
        if (ps->tok.kind != T_IDENT)
            return syntax(ps);
        token name = ps->tok;
        next(ps);
        bool open = false;
        d.ndims = 0;
        while (at(ps, '[')) {
            uint64_t n = 0;
            next(ps);
            if (at(ps, ']')) {
                if (d.ndims)
                    return syntax(ps);
                open = true;
            } else if (!int_literal(ps, &n)) {
                return false;
            }
            uint64_t *dims = grow(ps->dims, &ps->dcap, d.ndims + 1, sizeof *dims);
            if (!dims)
                return ptx_oom(ps);
            ps->dims = dims;
            dims[d.ndims++] = n;
            if (!expect(ps, ']'))
                return false;
        }
        bool has_init = at(ps, '=');
        if (has_init) {
            if (!module || !(global || constant))
                return ptx_fail(ps, name.line, "error   ",
                                "No initial value is allowed for '%.*s' in this state space",
                                (int)(name.n < 256 ? name.n : 256), name.s);
            next(ps);
            if (open && !opaque && !at(ps, '{'))
                return ptx_fail(ps, ps->tok.line, "fatal   ", "Initial value type mismatch");
            if (open && !opaque && !count_outer(ps, &ps->dims[0]))
                return false;
        }
        if (opaque) {
            if (has_init && !skip_group(ps))
                return false;
        } else {
            d.elem = (uint64_t)d.type->size * d.vec;
            d.size = d.elem;
            bool empty = false;
            for (size_t i = 0; i < d.ndims; i++) {
                d.size = sat_mul(d.size, ps->dims[i]);
                empty |= ps->dims[i] == 0;
            }
            if (empty && !ext)
                return ptx_fail(ps, name.line, "error   ",
                                "Non-external variable '%.*s' has incomplete type",
                                (int)(name.n < 256 ? name.n : 256), name.s);
            if (d.size > SIZE_MAX / 2 || d.size > ((uint64_t)1 << 48))
                return ptx_fail(ps, name.line, "error   ", "Variable '%.*s' is too large",
                                (int)(name.n < 256 ? name.n : 256), name.s);
            uint64_t a = align > d.elem ? align : d.elem; /* a power of two */
            if (module && (global || constant)) {
                size_t gi = SIZE_MAX; /* set by add_global (gcc cannot tell) */
                if (!add_global(ps, &name, &d, a, constant, ext, &gi) ||
                    !add_sym(ps, &name, ext ? SYM_VAR_EXTERN : SYM_VAR, gi))
                    return false;
                if (has_init && !parse_init(ps, &d, ps->img->globals[gi].init))
                    return false;
            } else if (shared && !ext && scope < SCOPE_FUNC) {
                fake_image_function *f = &ps->img->functions[scope];
                uint64_t s = sat_add(align_up(f->static_shared, a), d.size);
                f->static_shared = s > SIZE_MAX / 2 ? SIZE_MAX / 2 : (size_t)s;
            } else if (shared && !ext && module) {
                mshared *m = grow(ps->msh, &ps->mshcap, ps->nmsh + 1, sizeof *m);
                if (!m)
                    return ptx_oom(ps);
                ps->msh = m;
                m[ps->nmsh++] = (mshared){{name.s, name.n}, d.size, a, 0};
                if (!add_sym(ps, &name, SYM_VAR, SIZE_MAX))
                    return false;
            }
        }
        if (at(ps, ',')) {
            next(ps);
            continue;
        }
        return expect(ps, ';');
    }
}
