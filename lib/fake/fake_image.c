/* Module images: PTX, cubin and fatbin parsing (see fake_image.h).
 *
 * PTX is checked the way ptxas would catch the errors a test may plant
 * (statement structure, known opcodes and directives, balanced brackets,
 * declarations, initializers) and laid out the way ptxas lays it out; it is
 * not a full PTX grammar: operands are only checked for shape.
 *
 * Cubins are read through their section and symbol tables: a kernel is a
 * STT_FUNC symbol marked as an entry (st_other & 0x10), its parameters the
 * EIATTR_KPARAM_INFO records of its .nv.info.<name> section, its static
 * shared memory the size of its .nv.shared.<name> section, and the globals
 * the STT_OBJECT symbols of .nv.global* and the .nv.constant<bank> sections.
 *
 * Every read is bounded by `size`; nothing recurses on the input, so deep
 * nesting costs memory proportional to the input at most. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_image.h"

#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))

/* --- logs ----------------------------------------------------------------------------------- */

typedef struct {
    char *buf;
    size_t size, len;
} logbuf;

static void log_init(logbuf *l, char *buf, size_t size)
{
    l->buf = size ? buf : NULL;
    l->size = buf ? size : 0;
    l->len = 0;
    if (l->buf)
        l->buf[0] = '\0';
}

static void log_clear(logbuf *l)
{
    l->len = 0;
    if (l->buf)
        l->buf[0] = '\0';
}

PRINTF_LIKE(2, 0) static void log_vadd(logbuf *l, const char *fmt, va_list ap)
{
    if (!l->buf || l->len + 1 >= l->size)
        return;
    int n = vsnprintf(l->buf + l->len, l->size - l->len, fmt, ap);
    if (n < 0) {
        l->buf[l->len] = '\0';
        return;
    }
    size_t room = l->size - l->len - 1;
    l->len += (size_t)n < room ? (size_t)n : room;
}

PRINTF_LIKE(2, 3) static void log_add(logbuf *l, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_vadd(l, fmt, ap);
    va_end(ap);
}

/* --- small helpers ---------------------------------------------------------------------------- */

/* Grows an array to hold `need` elements; NULL (the old one intact) on
 * overflow or OOM. */
static void *grow(void *a, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return a;
    size_t c = *cap ? *cap : 8;
    while (c < need) {
        if (c > SIZE_MAX / 2)
            return NULL;
        c *= 2;
    }
    if (c > SIZE_MAX / elem)
        return NULL;
    void *p = realloc(a, c * elem);
    if (!p)
        return NULL;
    *cap = c;
    return p;
}

static char *dup_n(const char *s, size_t n)
{
    if (n == SIZE_MAX)
        return NULL;
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

/* Saturating arithmetic, for sizes that are checked against a limit after. */
static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }
static uint64_t sat_mul(uint64_t a, uint64_t b)
{
    return a && b > UINT64_MAX / a ? UINT64_MAX : a * b;
}
/* Rounds up to a power of two `a`, saturating. */
static uint64_t align_up(uint64_t v, uint64_t a)
{
    return v > UINT64_MAX - (a - 1) ? UINT64_MAX : (v + a - 1) & ~(a - 1);
}

static bool is_pow2(uint64_t v) { return v && !(v & (v - 1)); }

static uint16_t rd16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t rd32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t rd64(const unsigned char *p) { return rd32(p) | (uint64_t)rd32(p + 4) << 32; }

/* Whether [off, off + len) lies inside [0, size). */
static bool fits(uint64_t off, uint64_t len, size_t size)
{
    return off <= size && len <= size - off;
}

void fake_image_free(fake_image *img)
{
    if (!img)
        return;
    for (size_t i = 0; i < img->nfunctions; i++) {
        free(img->functions[i].name);
        free(img->functions[i].params);
    }
    free(img->functions);
    for (size_t i = 0; i < img->nglobals; i++) {
        free(img->globals[i].name);
        free(img->globals[i].init);
    }
    free(img->globals);
    free(img);
}

const fake_image_function *fake_image_find_function(const fake_image *img, const char *name)
{
    if (!img || !name)
        return NULL;
    for (size_t i = 0; i < img->nfunctions; i++)
        if (strcmp(img->functions[i].name, name) == 0)
            return &img->functions[i];
    return NULL;
}

const fake_image_global *fake_image_find_global(const fake_image *img, const char *name)
{
    if (!img || !name)
        return NULL;
    for (size_t i = 0; i < img->nglobals; i++)
        if (strcmp(img->globals[i].name, name) == 0)
            return &img->globals[i];
    return NULL;
}

/* The start of the parameter area in constant bank 0 (what ptxas aligns
 * parameters against), by SM version; read off PARAM_CBANK in ptxas' cubins. */
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

/* ============================================================================================ */
/* PTX                                                                                          */
/* ============================================================================================ */

enum { T_EOF, T_DIR, T_IDENT, T_NUM, T_STR, T_PUNCT, T_BAD };

typedef struct {
    int kind;
    const char *s;
    size_t n;
    size_t line;
    const char *bad; /* T_BAD: what ptxas says after "near '...': " */
} token;

typedef struct {
    const char *s;
    size_t n;
} slice;

enum { SYM_ENTRY, SYM_FUNC, SYM_FUNC_DECL, SYM_FUNC_EXTERN, SYM_VAR, SYM_VAR_EXTERN };

typedef struct {
    slice name;
    size_t line;
    int kind;
    size_t global; /* SYM_VAR*: the index in img->globals, or SIZE_MAX */
} sym;

typedef struct {
    slice name;
    uint64_t size, align;
    size_t last_entry; /* the entry that counted it last, plus one */
} mshared;

typedef struct {
    const char *end;
    const char *p; /* the lexer */
    size_t line;
    token tok, la;
    bool has_la;

    fake_image *img;
    size_t fcap, gcap;
    bool *gext; /* per global: declared .extern */
    size_t gextcap;
    uint64_t gbytes; /* of globals so far */
    uint64_t pbase;

    sym *syms;
    size_t nsyms, scap;
    slice *calls;
    size_t ncalls, ccap;
    mshared *msh;
    size_t nmsh, mshcap;
    uint64_t *dims; /* scratch for declarators */
    size_t dcap;

    logbuf *err, *info;
    CUresult status;
} ptx;

typedef struct {
    const char *p;
    size_t line;
    token tok, la;
    bool has_la;
} ptx_mark;

/* Where a declaration is: an entry's body (its index), a .func's, or the
 * module. */
#define SCOPE_FUNC (SIZE_MAX - 1)
#define SCOPE_MODULE SIZE_MAX

/* --- errors --- */

PRINTF_LIKE(4, 5) static bool ptx_fail(ptx *ps, size_t line, const char *level, const char *fmt, ...)
{
    if (ps->status != CUDA_SUCCESS)
        return false;
    ps->status = CUDA_ERROR_INVALID_PTX;
    if (line)
        log_add(ps->err, "ptxas application ptx input, line %zu; %s: ", line, level);
    else
        log_add(ps->err, "ptxas %s: ", level);
    va_list ap;
    va_start(ap, fmt);
    log_vadd(ps->err, fmt, ap);
    va_end(ap);
    log_add(ps->err, "\nptxas fatal   : Ptx assembly aborted due to errors\n");
    return false;
}

static bool ptx_oom(ptx *ps)
{
    if (ps->status == CUDA_SUCCESS)
        ps->status = CUDA_ERROR_OUT_OF_MEMORY;
    return false;
}

/* Up to 64 bytes of s, with anything unprintable as '?', for messages. */
static const char *printable(char out[68], const char *s, size_t n)
{
    size_t k = n < 64 ? n : 64, i;
    for (i = 0; i < k; i++) {
        unsigned char c = (unsigned char)s[i];
        out[i] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    if (n > k)
        out[i++] = '.', out[i++] = '.', out[i++] = '.';
    out[i] = '\0';
    return out;
}

static bool syntax(ptx *ps)
{
    char near[68];
    const token *t = &ps->tok;
    if (t->kind == T_BAD && t->bad)
        return ptx_fail(ps, t->line, "fatal   ", "Parsing error near '%s': %s",
                        printable(near, t->s, t->n), t->bad);
    return ptx_fail(ps, t->line, "fatal   ", "Parsing error near '%s': syntax error",
                    printable(near, t->s, t->kind == T_EOF ? 0 : t->n));
}

/* --- the lexer --- */

static bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_idc(char c) { return is_alpha(c) || is_digit(c) || c == '_' || c == '$'; }

static const char *scan_idc(const char *q, const char *e)
{
    while (q < e && is_idc(*q))
        q++;
    return q;
}

static void lex(ptx *ps, token *t)
{
    const char *p = ps->p, *e = ps->end;
    t->bad = NULL;
    for (;;) {
        if (p == e) {
            t->kind = T_EOF;
            t->s = p;
            t->n = 0;
            t->line = ps->line;
            ps->p = p;
            return;
        }
        char c = *p;
        if (c == '\n') {
            ps->line++;
            p++;
        } else if (c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f') {
            p++;
        } else if (c == '/' && e - p >= 2 && p[1] == '/') {
            while (p < e && *p != '\n')
                p++;
        } else if (c == '/' && e - p >= 2 && p[1] == '*') {
            const char *q = p + 2;
            while (q < e && !(*q == '*' && e - q >= 2 && q[1] == '/')) {
                if (*q == '\n')
                    ps->line++;
                q++;
            }
            if (q == e) {
                t->kind = T_BAD;
                t->s = e;
                t->n = 0;
                t->line = ps->line;
                t->bad = "unexpected EOF while scanning";
                ps->p = e;
                return;
            }
            p = q + 2;
        } else {
            break;
        }
    }
    const char *q = p + 1;
    char c = *p;
    t->s = p;
    t->line = ps->line;
    if (c == '.' && q < e && is_idc(*q)) {
        /* a directive or modifier; "::" continues it (.shared::cta, .L2::cache_hint) */
        t->kind = T_DIR;
        q = scan_idc(q, e);
        while (e - q >= 3 && q[0] == ':' && q[1] == ':' && is_idc(q[2]))
            q = scan_idc(q + 2, e);
    } else if (is_alpha(c) || c == '_' || c == '$' || (c == '%' && q < e && is_idc(*q))) {
        t->kind = T_IDENT;
        q = scan_idc(q, e);
    } else if (is_digit(c)) {
        /* numbers, loosely: 42, 0x1f, 017, 0b101, 1U, 0f3F800000, 0d..., 1.5e-3, 9.0 */
        bool dec = !(c == '0' && q < e && strchr("xXfFdDbB", *q) && *q);
        t->kind = T_NUM;
        while (q < e && (is_idc(*q) || *q == '.')) {
            char prev = *q++;
            if (dec && (prev == 'e' || prev == 'E') && q < e && (*q == '+' || *q == '-'))
                q++;
        }
    } else if (c == '"') {
        t->kind = T_STR;
        while (q < e && *q != '"' && *q != '\n') {
            if (*q == '\\' && e - q >= 2 && q[1] != '\n')
                q++;
            q++;
        }
        if (q == e || *q != '"') {
            t->kind = T_BAD;
            t->bad = "unterminated string";
        } else {
            q++;
        }
    } else if (c && strchr("{}()[];:,@!+-*/%<>=|&^~?", c)) {
        t->kind = T_PUNCT;
    } else {
        t->kind = T_BAD;
        t->bad = "syntax error";
    }
    t->n = (size_t)(q - p);
    ps->p = q;
}

static void next(ptx *ps)
{
    if (ps->has_la) {
        ps->tok = ps->la;
        ps->has_la = false;
    } else {
        lex(ps, &ps->tok);
    }
}

static const token *peek(ptx *ps)
{
    if (!ps->has_la) {
        lex(ps, &ps->la);
        ps->has_la = true;
    }
    return &ps->la;
}

static ptx_mark mark(const ptx *ps)
{
    return (ptx_mark){ps->p, ps->line, ps->tok, ps->la, ps->has_la};
}

static void reset(ptx *ps, const ptx_mark *m)
{
    ps->p = m->p;
    ps->line = m->line;
    ps->tok = m->tok;
    ps->la = m->la;
    ps->has_la = m->has_la;
}

static bool tok_is(const token *t, int kind, const char *s)
{
    size_t n = strlen(s);
    return t->kind == kind && t->n == n && memcmp(t->s, s, n) == 0;
}
static bool is_dir(const ptx *ps, const char *s) { return tok_is(&ps->tok, T_DIR, s); }
static bool is_punct(const token *t, char c) { return t->kind == T_PUNCT && t->s[0] == c; }
static bool at(const ptx *ps, char c) { return is_punct(&ps->tok, c); }

static bool expect(ptx *ps, char c)
{
    if (!at(ps, c))
        return syntax(ps);
    next(ps);
    return true;
}

/* --- numbers --- */

enum { NUM_INT, NUM_F32, NUM_F64, NUM_DEC };

typedef struct {
    int kind;
    uint64_t u; /* NUM_INT: the value; NUM_F32/F64: the bits */
    double d;   /* NUM_DEC */
} number;

static int hexval(char c)
{
    if (is_digit(c))
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Digits in base `base` (wrapping past 64 bits, as the value is truncated to
 * its type anyway); false on a bad digit or none. */
static bool parse_digits(const char *s, size_t n, unsigned base, uint64_t *out)
{
    uint64_t v = 0;
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        int d = hexval(s[i]);
        if (d < 0 || (unsigned)d >= base)
            return false;
        v = v * base + (unsigned)d;
    }
    *out = v;
    return true;
}

/* A decimal floating-point literal; close to, if not always exactly, the
 * nearest double (no locale, unlike strtod). */
static bool parse_decimal(const char *s, size_t n, double *out)
{
    size_t i = 0;
    uint64_t mant = 0;
    long exp10 = 0;
    int digits = 0;
    bool point = false, any = false;
    for (; i < n && (is_digit(s[i]) || s[i] == '.'); i++) {
        if (s[i] == '.') {
            if (point)
                return false;
            point = true;
            continue;
        }
        any = true;
        if (digits < 19) {
            if (mant || s[i] != '0')
                digits++;
            mant = mant * 10 + (uint64_t)(s[i] - '0');
            if (point)
                exp10--;
        } else if (!point) {
            exp10++;
        }
    }
    if (!any)
        return false;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        bool neg = false;
        long e = 0;
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            neg = s[i++] == '-';
        if (i == n)
            return false;
        for (; i < n && is_digit(s[i]); i++)
            if (e < 100000)
                e = e * 10 + (s[i] - '0');
        exp10 += neg ? -e : e;
    } else if (!point) {
        return false; /* an integer, not a float */
    }
    if (i != n)
        return false;
    double v = (double)mant;
    if (exp10 > 400)
        exp10 = 400;
    if (exp10 < -400)
        exp10 = -400;
    for (; exp10 > 0; exp10--)
        v *= 10.0;
    for (; exp10 < 0; exp10++)
        v /= 10.0;
    *out = v;
    return true;
}

static bool parse_number(const char *s, size_t n, number *out)
{
    out->u = 0;
    out->d = 0;
    if (n > 2 && s[0] == '0' && (s[1] == 'f' || s[1] == 'F'))
        return out->kind = NUM_F32, n == 10 && parse_digits(s + 2, 8, 16, &out->u);
    if (n > 2 && s[0] == '0' && (s[1] == 'd' || s[1] == 'D'))
        return out->kind = NUM_F64, n == 18 && parse_digits(s + 2, 16, 16, &out->u);
    out->kind = NUM_INT;
    size_t m = n && (s[n - 1] == 'U' || s[n - 1] == 'u') ? n - 1 : n;
    if (m > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        return parse_digits(s + 2, m - 2, 16, &out->u);
    if (m > 2 && s[0] == '0' && (s[1] == 'b' || s[1] == 'B'))
        return parse_digits(s + 2, m - 2, 2, &out->u);
    if (parse_digits(s, m, m > 1 && s[0] == '0' ? 8 : 10, &out->u))
        return true;
    out->kind = NUM_DEC;
    return parse_decimal(s, n, &out->d);
}

/* The current token as an unsigned integer literal. */
static bool int_literal(ptx *ps, uint64_t *v)
{
    number num;
    if (ps->tok.kind != T_NUM || !parse_number(ps->tok.s, ps->tok.n, &num) || num.kind != NUM_INT)
        return syntax(ps);
    *v = num.u;
    next(ps);
    return true;
}

/* --- skipping --- */

/* To the ';' that ends a statement, over balanced brackets. */
static bool skip_statement(ptx *ps)
{
    size_t depth = 0;
    for (;;) {
        const token *t = &ps->tok;
        if (t->kind == T_EOF || t->kind == T_BAD)
            return syntax(ps);
        if (t->kind == T_PUNCT) {
            char c = t->s[0];
            if (c == ';' && depth == 0) {
                next(ps);
                return true;
            }
            if (c == '(' || c == '[' || c == '{')
                depth++;
            else if (c == ')' || c == ']' || c == '}') {
                if (depth == 0)
                    return syntax(ps);
                depth--;
            }
        }
        next(ps);
    }
}

/* Over a bracketed group, the current token being its opener (debug
 * sections hold statements without ';', so anything goes inside). */
static bool skip_group(ptx *ps)
{
    size_t depth = 0;
    do {
        const token *t = &ps->tok;
        if (t->kind == T_EOF || t->kind == T_BAD)
            return syntax(ps);
        if (t->kind == T_PUNCT) {
            char c = t->s[0];
            if (c == '(' || c == '[' || c == '{')
                depth++;
            else if (c == ')' || c == ']' || c == '}') {
                if (depth == 0)
                    return syntax(ps);
                depth--;
            }
        }
        next(ps);
    } while (depth);
    return true;
}

/* .loc and .file end with their line. */
static bool skip_line(ptx *ps)
{
    size_t line = ps->tok.line;
    next(ps);
    while (ps->tok.kind != T_EOF && ps->tok.line == line) {
        if (ps->tok.kind == T_BAD)
            return syntax(ps);
        next(ps);
    }
    return true;
}

/* --- types --- */

enum { EK_INT, EK_BITS, EK_F32, EK_F64, EK_HALF };

typedef struct {
    const char *name;
    unsigned size;
    int kind;
} ptx_type;

static const ptx_type ptx_types[] = {
    {".u8", 1, EK_INT},      {".s8", 1, EK_INT},      {".b8", 1, EK_BITS},
    {".u16", 2, EK_INT},     {".s16", 2, EK_INT},     {".b16", 2, EK_BITS},
    {".f16", 2, EK_HALF},    {".bf16", 2, EK_HALF},   {".u32", 4, EK_INT},
    {".s32", 4, EK_INT},     {".b32", 4, EK_BITS},    {".f32", 4, EK_F32},
    {".f16x2", 4, EK_BITS},  {".bf16x2", 4, EK_BITS}, {".tf32", 4, EK_BITS},
    {".u64", 8, EK_INT},     {".s64", 8, EK_INT},     {".b64", 8, EK_BITS},
    {".f64", 8, EK_F64},     {".b128", 16, EK_BITS},
};

static const ptx_type ptx_type_u64 = {".u64", 8, EK_INT};

static const ptx_type *find_type(const token *t)
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
static bool is_opaque_type(const token *t)
{
    return tok_is(t, T_DIR, ".texref") || tok_is(t, T_DIR, ".samplerref") ||
           tok_is(t, T_DIR, ".surfref");
}

/* --- declarations, recorded for the checks at the end --- */

static bool add_sym(ptx *ps, const token *name, int kind, size_t global)
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
    ps->gbytes = sat_add(ps->gbytes, d->size);
    if (ps->gbytes > FAKE_IMAGE_MAX_GLOBAL_BYTES)
        return ptx_oom(ps);
    fake_image *img = ps->img;
    fake_image_global *g = grow(img->globals, &ps->gcap, img->nglobals + 1, sizeof *g);
    if (!g)
        return ptx_oom(ps);
    img->globals = g;
    bool *e = grow(ps->gext, &ps->gextcap, img->nglobals + 1, sizeof *e);
    if (!e)
        return ptx_oom(ps);
    ps->gext = e;
    g = &img->globals[img->nglobals];
    *g = (fake_image_global){dup_n(name->s, name->n), (size_t)d->size, (size_t)align, constant,
                             calloc(d->size ? (size_t)d->size : 1, 1)};
    if (!g->name || !g->init) {
        free(g->name);
        free(g->init);
        return ptx_oom(ps);
    }
    e[img->nglobals] = ext;
    *index = img->nglobals++;
    return true;
}

/* A variable declaration, the current token being its state space:
 * [.align N] [.vN] .type name[dims] [= init] {, name[dims] [= init]} ;
 * Module-scope .global and .const become globals; .shared in an entry's body
 * adds to its static shared memory, at module scope it counts for the
 * entries that name it. */
static bool parse_variable(ptx *ps, bool ext, size_t scope)
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
                size_t gi;
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

/* --- instructions --- */

/* Every PTX ISA 9.0 instruction, by the part of its name before the first
 * '.': cp.async.bulk is "cp", bar.warp.sync "bar", st.async "st". */
static const char *const ptx_opcodes[] = {
    "abs", "activemask", "add", "addc", "alloca", "and", "applypriority", "atom", "bar",
    "barrier", "bfe", "bfi", "bfind", "bmsk", "bra", "brev", "brkpt", "brx", "call", "clz",
    "clusterlaunchcontrol", "cnot", "copysign", "cos", "cp", "createpolicy", "cvt", "cvta",
    "discard", "div", "dp2a", "dp4a", "elect", "ex2", "exit", "fence", "fma", "fns",
    "getctarank", "griddepcontrol", "isspacep", "istypep", "ld", "ldmatrix", "ldu", "lg2",
    "lop3", "mad", "mad24", "madc", "mapa", "match", "max", "mbarrier", "membar", "min", "mma",
    "mov", "movmatrix", "mul", "mul24", "multimem", "nanosleep", "neg", "not", "or", "pmevent",
    "popc", "prefetch", "prefetchu", "prmt", "rcp", "red", "redux", "rem", "ret", "rsqrt", "sad",
    "selp", "set", "setmaxnreg", "setp", "shf", "shfl", "shl", "shr", "sin", "slct", "sqrt", "st",
    "stackrestore", "stacksave", "stmatrix", "sub", "subc", "suld", "suq", "sured", "sust",
    "szext", "tanh", "tcgen05", "tensormap", "testp", "tex", "tld4", "trap", "txq", "vabsdiff",
    "vabsdiff2", "vabsdiff4", "vadd", "vadd2", "vadd4", "vavrg2", "vavrg4", "vmad", "vmax",
    "vmax2", "vmax4", "vmin", "vmin2", "vmin4", "vote", "vset", "vset2", "vset4", "vshl", "vshr",
    "vsub", "vsub2", "vsub4", "wgmma", "wmma", "xor",
};

static bool known_opcode(const token *t)
{
    for (size_t i = 0; i < sizeof ptx_opcodes / sizeof *ptx_opcodes; i++)
        if (tok_is(t, T_IDENT, ptx_opcodes[i]))
            return true;
    return false;
}

/* A module-scope .shared variable named in an entry counts for it (the ones
 * its callees name do not: a simplification). */
static void note_shared_use(ptx *ps, const token *t, size_t entry)
{
    for (size_t i = 0; i < ps->nmsh; i++) {
        mshared *m = &ps->msh[i];
        if (m->last_entry != entry + 1 && m->name.n == t->n && memcmp(m->name.s, t->s, t->n) == 0) {
            fake_image_function *f = &ps->img->functions[entry];
            uint64_t s = sat_add(align_up(f->static_shared, m->align), m->size);
            f->static_shared = s > SIZE_MAX / 2 ? SIZE_MAX / 2 : (size_t)s;
            m->last_entry = entry + 1;
        }
    }
}

/* [@[!]p] opcode{.mod} operands ; -- operands are only checked for shape:
 * balanced brackets, and no two operands without a separator between them
 * (which catches a missing ';'). */
static bool parse_instruction(ptx *ps, size_t scope)
{
    if (at(ps, '@')) {
        next(ps);
        if (at(ps, '!'))
            next(ps);
        if (ps->tok.kind != T_IDENT)
            return syntax(ps);
        next(ps);
    }
    if (ps->tok.kind != T_IDENT)
        return syntax(ps);
    if (!known_opcode(&ps->tok)) {
        char name[68];
        return ptx_fail(ps, ps->tok.line, "error   ", "Not a name of any known instruction: '%s'",
                        printable(name, ps->tok.s, ps->tok.n));
    }
    bool call = tok_is(&ps->tok, T_IDENT, "call"), callee = false, operand = false;
    size_t depth = 0;
    next(ps);
    while (ps->tok.kind == T_DIR)
        next(ps);
    for (;; next(ps)) {
        const token *t = &ps->tok;
        switch (t->kind) {
        case T_EOF:
        case T_BAD:
            return syntax(ps);
        case T_DIR: /* %tid.x */
            break;
        case T_IDENT:
        case T_NUM:
        case T_STR:
            if (operand)
                return syntax(ps);
            operand = true;
            if (t->kind == T_IDENT) {
                if (call && !callee && depth == 0) {
                    slice *c = grow(ps->calls, &ps->ccap, ps->ncalls + 1, sizeof *c);
                    if (!c)
                        return ptx_oom(ps);
                    ps->calls = c;
                    c[ps->ncalls++] = (slice){t->s, t->n};
                    callee = true;
                }
                if (scope < SCOPE_FUNC)
                    note_shared_use(ps, t, scope);
            }
            break;
        default:
            switch (t->s[0]) {
            case ';':
                if (depth == 0) {
                    next(ps);
                    return true;
                }
                return syntax(ps);
            case '(': /* also generic(x) */
                depth++;
                operand = false;
                break;
            case '[':
            case '{':
                if (operand)
                    return syntax(ps);
                depth++;
                break;
            case ')':
            case ']':
            case '}':
                if (depth == 0)
                    return syntax(ps);
                depth--;
                operand = true;
                break;
            default:
                operand = false;
                break;
            }
        }
    }
}

/* --- functions --- */

/* The body of an .entry or .func, the current token being its '{'. Blocks
 * nest by a counter. */
static bool parse_body(ptx *ps, size_t scope)
{
    size_t depth = 0;
    for (;;) {
        const token *t = &ps->tok;
        if (t->kind == T_PUNCT && t->s[0] == '{') {
            depth++;
            next(ps);
        } else if (t->kind == T_PUNCT && t->s[0] == '}') {
            next(ps);
            if (--depth == 0)
                return true;
        } else if (t->kind == T_DIR) {
            if (is_dir(ps, ".reg") || is_dir(ps, ".local") || is_dir(ps, ".param") ||
                is_dir(ps, ".const") || is_dir(ps, ".global") || is_dir(ps, ".pragma") ||
                is_dir(ps, ".callprototype") || is_dir(ps, ".calltargets") ||
                is_dir(ps, ".branchtargets")) {
                if (!skip_statement(ps))
                    return false;
            } else if (is_dir(ps, ".shared")) {
                if (!parse_variable(ps, false, scope))
                    return false;
            } else if (is_dir(ps, ".extern")) {
                next(ps);
                if (!is_dir(ps, ".shared"))
                    return syntax(ps);
                if (!parse_variable(ps, true, scope))
                    return false;
            } else if (is_dir(ps, ".loc") || is_dir(ps, ".file")) {
                if (!skip_line(ps))
                    return false;
            } else {
                return syntax(ps);
            }
        } else if (t->kind == T_IDENT && is_punct(peek(ps), ':')) {
            next(ps); /* a label */
            next(ps);
        } else if (t->kind == T_IDENT || (t->kind == T_PUNCT && t->s[0] == '@')) {
            if (!parse_instruction(ps, scope))
                return false;
        } else {
            return syntax(ps);
        }
    }
}

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
    fake_image_function *f = grow(img->functions, &ps->fcap, img->nfunctions + 1, sizeof *f);
    if (!f)
        return ptx_oom(ps);
    img->functions = f;
    f = &img->functions[img->nfunctions];
    memset(f, 0, sizeof *f);
    if (!(f->name = dup_n(name->s, name->n)))
        return ptx_oom(ps);
    *index = img->nfunctions++;
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

/* What ptxas resolves itself in a whole-program compile. */
static bool is_builtin_function(const slice *s)
{
    static const char *const names[] = {"vprintf", "malloc", "free", "__assertfail"};
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
        ps->pbase = param_base(target_sm(ps->img->target));
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

static CUresult parse_ptx(const char *text, size_t len, fake_image *img, logbuf *err, logbuf *info)
{
    ptx ps = {0};
    ps.p = text;
    ps.end = text + len;
    ps.line = 1;
    ps.img = img;
    ps.err = err;
    ps.info = info;
    ps.status = CUDA_SUCCESS;
    img->format = FAKE_IMAGE_PTX;
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

/* Whether bytes are text, as PTX must be: UTF-8 (in comments and strings)
 * without control characters other than white space. */
static bool is_text(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = s[i];
        if (c < 0x80) {
            if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\v' && c != '\f') ||
                c == 0x7f)
                return false;
            continue;
        }
        size_t k = c >= 0xc2 && c <= 0xdf ? 1 : c >= 0xe0 && c <= 0xef ? 2 : c >= 0xf0 && c <= 0xf4 ? 3 : 0;
        if (k == 0 || n - i - 1 < k)
            return false;
        for (size_t j = 1; j <= k; j++)
            if ((s[i + j] & 0xc0) != 0x80)
                return false;
        i += k;
    }
    return true;
}

/* The length of the text at s: to its NUL, or size. */
static size_t text_length(const unsigned char *s, size_t size)
{
    size_t n = 0;
    while (n < size && s[n])
        n++;
    return n;
}

/* ============================================================================================ */
/* cubin                                                                                        */
/* ============================================================================================ */

enum {
    SHT_SYMTAB_ = 2,
    SHT_STRTAB_ = 3,
    SHT_NOBITS_ = 8,
    STT_OBJECT_ = 1,
    STT_FUNC_ = 2,
    STO_CUDA_ENTRY_ = 0x10,
    EM_CUDA_ = 190,
    SHN_LORESERVE_ = 0xff00,
    /* .nv.info attributes */
    EIFMT_SVAL_ = 4,
    EIATTR_MAX_THREADS_ = 0x05,
    EIATTR_REQNTID_ = 0x10,
    EIATTR_KPARAM_INFO_ = 0x17,
    EIATTR_CBANK_PARAM_SIZE_ = 0x19,
};

typedef struct {
    const unsigned char *b;
    size_t size;
    uint64_t shoff;
    unsigned shnum, shentsize, shstrndx;
    logbuf *err;
} elf;

typedef struct {
    uint32_t name, type, link, info;
    uint64_t offset, size, addralign, entsize;
} section;

static section sec(const elf *e, unsigned i)
{
    const unsigned char *h = e->b + e->shoff + (uint64_t)i * e->shentsize;
    return (section){rd32(h),      rd32(h + 4),  rd32(h + 40), rd32(h + 44),
                     rd64(h + 24), rd64(h + 32), rd64(h + 48), rd64(h + 56)};
}

/* The NUL-terminated string at off in string table section i; NULL when it
 * does not fit. */
static const char *elf_string(const elf *e, unsigned i, uint64_t off)
{
    if (i >= e->shnum)
        return NULL;
    section s = sec(e, i);
    if (s.type == SHT_NOBITS_ || off >= s.size)
        return NULL;
    const char *p = (const char *)e->b + s.offset + off;
    return memchr(p, 0, (size_t)(s.size - off)) ? p : NULL;
}

static const char *sec_name(const elf *e, unsigned i)
{
    return elf_string(e, e->shstrndx, sec(e, i).name);
}

PRINTF_LIKE(2, 3) static CUresult bad_image(logbuf *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_vadd(err, fmt, ap);
    va_end(ap);
    log_add(err, "\n");
    return CUDA_ERROR_INVALID_IMAGE;
}

static bool has_prefix(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* "1".."17": a constant bank other than 0 */
static bool is_bank(const char *s)
{
    if (*s < '1' || *s > '9')
        return false;
    while (is_digit(*s))
        s++;
    return *s == '\0';
}

/* The largest power of two dividing v, at most cap (v == 0: cap). */
static uint64_t pow2_dividing(uint64_t v, uint64_t cap)
{
    uint64_t a = 1;
    while (a < cap && !(v & a))
        a <<= 1;
    return a;
}

/* A kernel's attributes from its .nv.info.<name> section. */
static CUresult parse_nv_info(const elf *e, const section *s, fake_image_function *f)
{
    const unsigned char *d = e->b + s->offset;
    uint64_t n = s->size, p = 0, param_size = UINT64_MAX, pcap = 0;
    bool *seen = NULL;
    size_t seencap = 0;
    CUresult r = CUDA_SUCCESS;
    while (p < n && r == CUDA_SUCCESS) {
        if (n - p < 4) {
            r = bad_image(e->err, "cubin: truncated .nv.info attribute");
            break;
        }
        unsigned fmt = d[p], attr = d[p + 1], v = rd16(d + p + 2);
        p += 4;
        if (fmt < 1 || fmt > 4) {
            r = bad_image(e->err, "cubin: unknown .nv.info attribute format %u", fmt);
            break;
        }
        if (fmt != EIFMT_SVAL_) {
            if (attr == EIATTR_CBANK_PARAM_SIZE_)
                param_size = v;
            continue;
        }
        if (v > n - p) {
            r = bad_image(e->err, "cubin: truncated .nv.info attribute");
            break;
        }
        const unsigned char *a = d + p;
        p += v;
        if (attr == EIATTR_KPARAM_INFO_ && v >= 12) {
            /* {u32 index, u16 ordinal, u16 offset, u32 flags: size in bits 18..31} */
            size_t ordinal = rd16(a + 4);
            size_t off = rd16(a + 6), size = (rd32(a + 8) >> 18) & 0x3fff;
            fake_image_param *pa = grow(f->params, &pcap, ordinal + 1, sizeof *pa);
            bool *sn = pa ? grow(seen, &seencap, ordinal + 1, sizeof *sn) : NULL;
            if (pa)
                f->params = pa;
            if (!sn) {
                r = CUDA_ERROR_OUT_OF_MEMORY;
                break;
            }
            seen = sn;
            for (; f->nparams <= ordinal; f->nparams++)
                seen[f->nparams] = false;
            if (seen[ordinal]) {
                r = bad_image(e->err, "cubin: parameter %zu of '%s' described twice", ordinal, f->name);
                break;
            }
            seen[ordinal] = true;
            /* not recorded: the largest power of two dividing both, at most 16 */
            f->params[ordinal] = (fake_image_param){off, size, pow2_dividing(off | (size ? size : 1), 16)};
        } else if ((attr == EIATTR_MAX_THREADS_ || attr == EIATTR_REQNTID_) && v >= 12) {
            uint64_t x = rd32(a), y = rd32(a + 4), z = rd32(a + 8);
            if (attr == EIATTR_REQNTID_) {
                f->reqntid[0] = (unsigned)x, f->reqntid[1] = (unsigned)y, f->reqntid[2] = (unsigned)z;
            } else {
                uint64_t t = sat_mul(sat_mul(x, y), z);
                f->max_threads = t > UINT_MAX ? UINT_MAX : (unsigned)t;
            }
        }
    }
    for (size_t i = 0; r == CUDA_SUCCESS && i < f->nparams; i++) {
        if (!seen[i])
            r = bad_image(e->err, "cubin: parameter %zu of '%s' not described", i, f->name);
        else if (f->params[i].offset + f->params[i].size > f->param_bytes)
            f->param_bytes = f->params[i].offset + f->params[i].size;
    }
    /* The parameter bank's size, unless a parameter ends past it (the
     * launch copies each at its offset: found by fuzzing,
     * test/fuzz/corpus/fake_image/crash-*). */
    if (param_size != UINT64_MAX && r == CUDA_SUCCESS) {
        if (param_size < f->param_bytes)
            r = bad_image(e->err, "cubin: a parameter of '%s' ends past its %llu-byte bank",
                          f->name, (unsigned long long)param_size);
        else
            f->param_bytes = (size_t)param_size;
    }
    free(seen);
    return r;
}

static CUresult parse_cubin(const unsigned char *b, size_t size, fake_image *img, logbuf *err)
{
    img->format = FAKE_IMAGE_CUBIN;
    if (size < 64)
        return bad_image(err, "cubin: truncated ELF header");
    if (b[4] != 2 || b[5] != 1)
        return bad_image(err, "cubin: not a little-endian ELF64 image");
    if (rd16(b + 18) != EM_CUDA_)
        return bad_image(err, "cubin: not a CUDA ELF image (machine %u)", (unsigned)rd16(b + 18));
    elf e = {b, size, rd64(b + 40), rd16(b + 60), rd16(b + 58), rd16(b + 62), err};
    uint64_t phoff = rd64(b + 32);
    unsigned phentsize = rd16(b + 54), phnum = rd16(b + 56);
    if (e.shnum == 0 || e.shentsize < 64 || e.shstrndx >= e.shnum ||
        !fits(e.shoff, (uint64_t)e.shnum * e.shentsize, size))
        return bad_image(err, "cubin: section headers out of the image");
    if (phnum && (phentsize < 56 || !fits(phoff, (uint64_t)phnum * phentsize, size)))
        return bad_image(err, "cubin: program headers out of the image");
    unsigned symtab = 0;
    for (unsigned i = 0; i < e.shnum; i++) {
        section s = sec(&e, i);
        if (s.type != SHT_NOBITS_ && !fits(s.offset, s.size, size))
            return bad_image(err, "cubin: section %u out of the image", i);
    }
    for (unsigned i = 1; i < e.shnum; i++) {
        if (!sec_name(&e, i))
            return bad_image(err, "cubin: section %u has no name", i);
        if (sec(&e, i).type == SHT_SYMTAB_ && !symtab)
            symtab = i;
    }
    /* arch: bits 8..15 of e_flags from ELF ABI version 8 (CUDA 13), else 0..7 */
    unsigned flags = rd32(b + 48), sm = b[8] >= 8 ? (flags >> 8) & 0xff : flags & 0xff;
    if (sm)
        snprintf(img->target, sizeof img->target, "sm_%u", sm);
    if (!symtab)
        return CUDA_SUCCESS;

    section st = sec(&e, symtab);
    if (st.link >= e.shnum || sec(&e, st.link).type != SHT_STRTAB_)
        return bad_image(err, "cubin: symbol table without strings");
    uint64_t entsize = st.entsize < 24 ? 24 : st.entsize;
    /* per text section: its .nv.info.<name> and .nv.shared.<name> sections */
    unsigned *info_of = calloc(e.shnum, 2 * sizeof *info_of);
    if (!info_of)
        return CUDA_ERROR_OUT_OF_MEMORY;
    unsigned *shared_of = info_of + e.shnum;
    bool reserved = false; /* 1 KiB of shared memory reserved in every kernel's section */
    for (unsigned i = 1; i < e.shnum; i++) {
        section s = sec(&e, i);
        const char *n = sec_name(&e, i);
        if (has_prefix(n, ".nv.shared.reserved."))
            reserved = true;
        else if (has_prefix(n, ".nv.info.") && s.info && s.info < e.shnum)
            info_of[s.info] = i;
        else if (has_prefix(n, ".nv.shared.") && s.info && s.info < e.shnum)
            shared_of[s.info] = i;
    }
    CUresult r = CUDA_SUCCESS;
    size_t fcap = 0, gcap = 0;
    uint64_t gbytes = 0;
    for (uint64_t k = 1; r == CUDA_SUCCESS && k < st.size / entsize; k++) {
        const unsigned char *y = b + st.offset + k * entsize;
        unsigned type = y[4] & 0xf, other = y[5], shndx = rd16(y + 6);
        uint64_t value = rd64(y + 8), ssize = rd64(y + 16);
        if ((type != STT_FUNC_ && type != STT_OBJECT_) || shndx == 0 || shndx >= e.shnum ||
            shndx >= SHN_LORESERVE_)
            continue;
        const char *name = elf_string(&e, st.link, rd32(y));
        if (!name) {
            r = bad_image(err, "cubin: symbol %llu has no name", (unsigned long long)k);
            break;
        }
        if (!*name)
            continue;
        if (type == STT_FUNC_ && (other & STO_CUDA_ENTRY_)) {
            fake_image_function *f = grow(img->functions, &fcap, img->nfunctions + 1, sizeof *f);
            if (!f) {
                r = CUDA_ERROR_OUT_OF_MEMORY;
                break;
            }
            img->functions = f;
            f = &img->functions[img->nfunctions];
            memset(f, 0, sizeof *f);
            if (!(f->name = dup_n(name, strlen(name)))) {
                r = CUDA_ERROR_OUT_OF_MEMORY;
                break;
            }
            img->nfunctions++;
            if (info_of[shndx]) {
                section is = sec(&e, info_of[shndx]);
                if (is.type != SHT_NOBITS_)
                    r = parse_nv_info(&e, &is, f);
            }
            if (shared_of[shndx]) {
                uint64_t sh = sec(&e, shared_of[shndx]).size;
                if (reserved)
                    sh = sh > 1024 ? sh - 1024 : 0;
                f->static_shared = sh > SIZE_MAX / 2 ? SIZE_MAX / 2 : (size_t)sh;
            }
            continue;
        }
        if (type != STT_OBJECT_)
            continue;
        section s = sec(&e, shndx);
        const char *sn = sec_name(&e, shndx);
        /* a bank of its own (.nv.constant3), not a kernel's parameters (.nv.constant0.k) */
        bool constant = has_prefix(sn, ".nv.constant") && is_bank(sn + strlen(".nv.constant"));
        if (!constant && strcmp(sn, ".nv.global") != 0 && strcmp(sn, ".nv.global.init") != 0)
            continue;
        if (s.type != SHT_NOBITS_ && !fits(value, ssize, (size_t)s.size)) {
            r = bad_image(err, "cubin: global '%s' out of its section", name);
            break;
        }
        gbytes = sat_add(gbytes, ssize);
        if (gbytes > FAKE_IMAGE_MAX_GLOBAL_BYTES) {
            r = CUDA_ERROR_OUT_OF_MEMORY;
            break;
        }
        fake_image_global *g = grow(img->globals, &gcap, img->nglobals + 1, sizeof *g);
        if (!g) {
            r = CUDA_ERROR_OUT_OF_MEMORY;
            break;
        }
        img->globals = g;
        g = &img->globals[img->nglobals];
        /* not recorded either: guessed from the address, the section's and
         * the size's alignment */
        uint64_t cap = !is_pow2(s.addralign) ? 1 : s.addralign < 4096 ? s.addralign : 4096;
        while (cap > 1 && cap / 2 >= ssize)
            cap /= 2;
        *g = (fake_image_global){dup_n(name, strlen(name)), (size_t)ssize,
                                 (size_t)pow2_dividing(value, cap), constant,
                                 calloc(ssize ? (size_t)ssize : 1, 1)};
        if (!g->name || !g->init) {
            free(g->name);
            free(g->init);
            r = CUDA_ERROR_OUT_OF_MEMORY;
            break;
        }
        if (s.type != SHT_NOBITS_ && ssize)
            memcpy(g->init, b + s.offset + value, (size_t)ssize);
        img->nglobals++;
    }
    free(info_of);
    return r;
}

/* ============================================================================================ */
/* fatbin                                                                                       */
/* ============================================================================================ */

#define FATBIN_MAGIC 0xBA55ED50u
#define FATBIN_WRAPPER_MAGIC 0x466243B1u

enum {
    FATBIN_KIND_PTX = 1,
    FATBIN_KIND_ELF = 2,
    FATBIN_FLAG_COMPRESSED_LZ4 = 0x2000,
    FATBIN_FLAG_COMPRESSED_ZSTD = 0x8000,
};

/* A fatbin: {u32 magic, u16 version, u16 header_size, u64 size} then entries
 * {u16 kind, u16, u32 header_size, u64 payload_size, u32 compressed_size,
 * u32, u16 minor, u16 major, u32 arch, u32, u32, u64 flags, u64, u64
 * uncompressed_size, ...}. The ELF with the highest arch is taken, else the
 * PTX with the highest; compressed entries are skipped. */
static CUresult parse_fatbin(const unsigned char *b, size_t size, fake_image *img, logbuf *err,
                             logbuf *info)
{
    if (size < 16)
        return bad_image(err, "fatbin: truncated header");
    uint64_t hsize = rd16(b + 6), fsize = rd64(b + 8);
    if (hsize < 16 || !fits(hsize, fsize, size))
        return bad_image(err, "fatbin: entries out of the image");
    const unsigned char *best = NULL;
    uint64_t best_size = 0;
    unsigned best_kind = 0, best_arch = 0, compressed = 0;
    for (uint64_t p = hsize, end = hsize + fsize; end - p >= 16;) {
        const unsigned char *h = b + p;
        unsigned kind = rd16(h);
        uint64_t ehs = rd32(h + 4), psize = rd64(h + 8);
        if (kind == 0 && ehs == 0)
            break; /* padding */
        if (ehs < 0x40 || !fits(ehs, psize, (size_t)(end - p)))
            return bad_image(err, "fatbin: entry at 0x%llx out of the image", (unsigned long long)p);
        unsigned arch = rd32(h + 28);
        uint64_t flags = rd64(h + 40);
        if (kind == FATBIN_KIND_PTX || kind == FATBIN_KIND_ELF) {
            if (flags & (FATBIN_FLAG_COMPRESSED_LZ4 | FATBIN_FLAG_COMPRESSED_ZSTD)) {
                compressed++;
            } else if (kind > best_kind || (kind == best_kind && arch >= best_arch)) {
                best = h + ehs;
                best_size = psize;
                best_kind = kind;
                best_arch = arch;
            }
        }
        p += ehs + psize;
    }
    if (!best) {
        log_add(err, "fatbin: no usable code");
        if (compressed)
            log_add(err, " (%u compressed entries skipped: the fake driver cannot decompress; "
                         "build with nvcc --no-compress)", compressed);
        log_add(err, "\n");
        return CUDA_ERROR_NO_BINARY_FOR_GPU;
    }
    CUresult r;
    if (best_kind == FATBIN_KIND_ELF) {
        if (best_size < 4 || memcmp(best, "\177ELF", 4) != 0)
            return bad_image(err, "fatbin: ELF entry without an ELF image");
        r = parse_cubin(best, (size_t)best_size, img, err);
    } else {
        size_t len = text_length(best, (size_t)best_size);
        if (len == 0 || !is_text(best, len))
            return bad_image(err, "fatbin: PTX entry without PTX text");
        r = parse_ptx((const char *)best, len, img, err, info);
    }
    img->format = FAKE_IMAGE_FATBIN;
    if (r == CUDA_SUCCESS && !img->target[0] && best_arch && best_arch < 100000)
        snprintf(img->target, sizeof img->target, "sm_%u", best_arch);
    return r;
}

/* ============================================================================================ */

/* Whether the image starts with the 4 bytes of m, reading no further than a
 * mismatch (so never past the NUL of a short string). */
static bool magic_is(const unsigned char *b, size_t size, const unsigned char m[4])
{
    for (size_t i = 0; i < 4; i++)
        if (i >= size || b[i] != m[i])
            return false;
    return true;
}

CUresult fake_image_parse(const void *image, size_t size, fake_image **out, char *error_log,
                          size_t error_log_size, char *info_log, size_t info_log_size)
{
    logbuf err, info;
    log_init(&err, error_log, error_log_size);
    log_init(&info, info_log, info_log_size);
    if (!image || !out)
        return CUDA_ERROR_INVALID_VALUE;
    const unsigned char *b = image;
    static const unsigned char elf_magic[4] = {0x7f, 'E', 'L', 'F'};
    static const unsigned char fat_magic[4] = {0x50, 0xed, 0x55, 0xba};
    static const unsigned char wrap_magic[4] = {0xb1, 0x43, 0x62, 0x46};
    if (size == 0 || b[0] == 0)
        return bad_image(&err, "empty image");

    fake_image *img = calloc(1, sizeof *img);
    if (!img)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r;
    if (magic_is(b, size, elf_magic)) {
        r = parse_cubin(b, size, img, &err);
    } else if (magic_is(b, size, fat_magic)) {
        r = parse_fatbin(b, size, img, &err, &info);
    } else if (magic_is(b, size, wrap_magic)) {
        /* {int magic, int version, const unsigned long long *data, void *}: the
         * pointer can only be trusted when the caller vouches for nothing */
        const unsigned char *data = NULL;
        if (size != SIZE_MAX) {
            r = bad_image(&err, "fatbin wrapper: not followed with a known image size");
        } else {
            memcpy(&data, b + 8, sizeof data);
            r = data && magic_is(data, SIZE_MAX, fat_magic)
                    ? parse_fatbin(data, SIZE_MAX, img, &err, &info)
                    : bad_image(&err, "fatbin wrapper: no fatbin at its data pointer");
        }
    } else {
        size_t len = text_length(b, size);
        r = is_text(b, len) ? parse_ptx((const char *)b, len, img, &err, &info)
                            : bad_image(&err, "not PTX, a cubin or a fatbin");
    }
    if (r != CUDA_SUCCESS) {
        fake_image_free(img);
        log_clear(&info);
        if (r == CUDA_ERROR_OUT_OF_MEMORY && err.len == 0)
            log_add(&err, "out of memory\n");
        return r;
    }
    log_clear(&err);
    *out = img;
    return CUDA_SUCCESS;
}
