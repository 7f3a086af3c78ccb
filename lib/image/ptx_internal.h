/* The PTX parser's private interface, shared by its files (each calling only
 * those below it):
 *   ptx.c       functions, the module, the checks at its end, the info log
 *   ptx_body.c  the bodies of .entry and .func: instructions
 *   ptx_decl.c  types, recorded declarations, variables and initializers
 *   ptx_lex.c   errors, the lexer, number literals, skipping */
#ifndef CUSCOPE_LIB_FAKE_IMAGE_PTX_INTERNAL_H
#define CUSCOPE_LIB_FAKE_IMAGE_PTX_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "image_internal.h"

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
    uint64_t pbase;    /* the parameter area's start in constant bank 0 */
    unsigned jit_sm;   /* the device compiled for (FAKE_IMAGE_CC) */

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

/* --- ptx_lex.c -------------------------------------------------------------------------------- */

PRINTF_LIKE(4, 5) FAKE_IMAGE_API bool ptx_fail(ptx *ps, size_t line, const char *level,
                                               const char *fmt, ...);
FAKE_IMAGE_API bool ptx_oom(ptx *ps);
FAKE_IMAGE_API const char *printable(char out[68], const char *s, size_t n);
FAKE_IMAGE_API bool syntax(ptx *ps);

FAKE_IMAGE_API void next(ptx *ps);
FAKE_IMAGE_API const token *peek(ptx *ps);
FAKE_IMAGE_API ptx_mark mark(const ptx *ps);
FAKE_IMAGE_API void reset(ptx *ps, const ptx_mark *m);

static inline bool tok_is(const token *t, int kind, const char *s)
{
    size_t n = strlen(s);
    return t->kind == kind && t->n == n && memcmp(t->s, s, n) == 0;
}
static inline bool is_dir(const ptx *ps, const char *s) { return tok_is(&ps->tok, T_DIR, s); }
static inline bool is_punct(const token *t, char c) { return t->kind == T_PUNCT && t->s[0] == c; }
static inline bool at(const ptx *ps, char c) { return is_punct(&ps->tok, c); }

FAKE_IMAGE_API bool expect(ptx *ps, char c);

enum { NUM_INT, NUM_F32, NUM_F64, NUM_DEC };

typedef struct {
    int kind;
    uint64_t u; /* NUM_INT: the value; NUM_F32/F64: the bits */
    double d;   /* NUM_DEC */
} number;

FAKE_IMAGE_API bool parse_digits(const char *s, size_t n, unsigned base, uint64_t *out);
FAKE_IMAGE_API bool parse_number(const char *s, size_t n, number *out);
FAKE_IMAGE_API bool int_literal(ptx *ps, uint64_t *v);

FAKE_IMAGE_API bool skip_statement(ptx *ps);
FAKE_IMAGE_API bool skip_group(ptx *ps);
FAKE_IMAGE_API bool skip_line(ptx *ps);

/* --- ptx_decl.c ------------------------------------------------------------------------------- */

enum { EK_INT, EK_BITS, EK_F32, EK_F64, EK_HALF };

typedef struct {
    const char *name;
    unsigned size;
    int kind;
} ptx_type;

FAKE_IMAGE_API extern const ptx_type ptx_type_u64;
FAKE_IMAGE_API const ptx_type *find_type(const token *t);
FAKE_IMAGE_API bool is_opaque_type(const token *t);

FAKE_IMAGE_API bool add_sym(ptx *ps, const token *name, int kind, size_t global);
FAKE_IMAGE_API bool parse_variable(ptx *ps, bool ext, size_t scope);

/* --- ptx_body.c ------------------------------------------------------------------------------- */

FAKE_IMAGE_API bool parse_body(ptx *ps, size_t scope);

#endif
