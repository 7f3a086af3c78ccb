/* PTX: the bodies of .entry and .func: instructions (known opcodes, operands
 * checked for shape, the callees named), labels and the declarations a body
 * may hold. */
#include <stdint.h>
#include <string.h>

#include "ptx_internal.h"

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

/* --- bodies --- */

/* The body of an .entry or .func, the current token being its '{'. Blocks
 * nest by a counter. */
bool parse_body(ptx *ps, size_t scope)
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
