/* PTX: ptxas-style errors, the lexer (tokens, one token of lookahead, marks
 * to go back to), number literals, and skipping statements, bracketed groups
 * and lines. */
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_internal.h"

/* --- errors --- */

PRINTF_LIKE(4, 5) bool ptx_fail(ptx *ps, size_t line, const char *level, const char *fmt, ...)
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

bool ptx_oom(ptx *ps)
{
    if (ps->status == CUDA_SUCCESS)
        ps->status = CUDA_ERROR_OUT_OF_MEMORY;
    return false;
}

/* Up to 64 bytes of s, with anything unprintable as '?', for messages. */
const char *printable(char out[68], const char *s, size_t n)
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

bool syntax(ptx *ps)
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

void next(ptx *ps)
{
    if (ps->has_la) {
        ps->tok = ps->la;
        ps->has_la = false;
    } else {
        lex(ps, &ps->tok);
    }
}

const token *peek(ptx *ps)
{
    if (!ps->has_la) {
        lex(ps, &ps->la);
        ps->has_la = true;
    }
    return &ps->la;
}

ptx_mark mark(const ptx *ps)
{
    return (ptx_mark){ps->p, ps->line, ps->tok, ps->la, ps->has_la};
}

void reset(ptx *ps, const ptx_mark *m)
{
    ps->p = m->p;
    ps->line = m->line;
    ps->tok = m->tok;
    ps->la = m->la;
    ps->has_la = m->has_la;
}

bool expect(ptx *ps, char c)
{
    if (!at(ps, c))
        return syntax(ps);
    next(ps);
    return true;
}

/* --- numbers --- */

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
bool parse_digits(const char *s, size_t n, unsigned base, uint64_t *out)
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

bool parse_number(const char *s, size_t n, number *out)
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
bool int_literal(ptx *ps, uint64_t *v)
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
bool skip_statement(ptx *ps)
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
bool skip_group(ptx *ps)
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
bool skip_line(ptx *ps)
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
