#!/usr/bin/env python3
"""File-level call graph of C sources: which file calls which.

    python3 scripts/lib-callgraph.py lib/*.c lib/driver/*.c
    python3 scripts/lib-callgraph.py --data lib/*.c lib/driver/*.c

For each .c file given: the functions it defines that are not static (its
offer to the other files), and every identifier it uses. A use of a function
that another given file defines is an edge "user -> definer". Prints the edges
(with the functions behind each), then the strongly connected components of
more than one file: the circles, where no file is below the other. Exits 1
when there is one (0 otherwise), so that a check can run it.

The headers a file includes with #include "..." are read too, and are
transparent: a use of one of their macros or static inline functions counts
as a use of what its body uses (CUS_CALL_IN -> cus_switch_enter_ ->
context_stack.c). A top-level invocation of a function-like macro whose body
pastes names (CUS_DEFINE_REF_UNREF(cus_stream, ...) -> cus_stream_ref) is
expanded to find the functions it defines.

--data also counts the non-static global variables a file defines (a read of
cus_forked_ is an edge to fork.c).

No preprocessor runs: #if branches are all read, and the parse is a
tokeniser's, good for the code here, not for any C. Only functions and
variables named in the given files count; a call through a pointer (a hook)
is, by design, no edge.
"""
import argparse
import os
import re
import sys

TOKEN_RE = re.compile(r"[A-Za-z_]\w*|\d[\w.]*|##|#|->|\.\.\.|\S")
IDENT_RE = re.compile(r"[A-Za-z_]\w*$")
KEYWORDS = {
    "if", "else", "while", "for", "do", "switch", "case", "default", "return", "break",
    "continue", "goto", "sizeof", "typedef", "struct", "union", "enum", "static", "extern",
    "const", "volatile", "inline", "void", "char", "short", "int", "long", "float", "double",
    "signed", "unsigned", "_Bool", "bool", "_Atomic", "_Thread_local", "__attribute__",
    "__extension__", "_Alignof", "_Alignas", "_Static_assert", "_Generic", "restrict",
    "__typeof__", "typeof", "register", "auto",
}


def strip_comments_and_strings(text):
    """Comments become a space; string and char literals become "" and ''."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(" " + "\n" * text.count("\n", i, j))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def split_preprocessor(text):
    """Returns (code without directives, [directive lines, continuations joined])."""
    code, directives = [], []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith("#"):
            full = line
            while full.endswith("\\") and i + 1 < len(lines):
                i += 1
                full = full[:-1] + " " + lines[i]
            directives.append(full.strip())
            code.append("")
        else:
            code.append(line)
        i += 1
    return "\n".join(code), directives


def tokens(text):
    return TOKEN_RE.findall(text)


def idents(toks):
    return {t for t in toks if IDENT_RE.match(t) and t not in KEYWORDS}


class Macro:
    def __init__(self, params, body):
        self.params = params  # None for an object-like macro
        self.body = body      # tokens


def parse_directives(directives):
    macros, includes = {}, []
    for d in directives:
        m = re.match(r"#\s*define\s+([A-Za-z_]\w*)(\(([^)]*)\))?\s*(.*)$", d)
        if m:
            params = None
            if m.group(2) is not None:
                params = [p.strip() for p in m.group(3).split(",") if p.strip()]
            macros[m.group(1)] = Macro(params, tokens(m.group(4)))
            continue
        m = re.match(r'#\s*include\s+"([^"]+)"', d)
        if m:
            includes.append(m.group(1))
    return macros, includes


def strip_attributes(toks):
    """Drops __attribute__((...)) and __extension__."""
    out, i = [], 0
    while i < len(toks):
        if toks[i] == "__attribute__" and i + 1 < len(toks) and toks[i + 1] == "(":
            depth, j = 0, i + 1
            while j < len(toks):
                depth += {"(": 1, ")": -1}.get(toks[j], 0)
                j += 1
                if depth == 0:
                    break
            i = j
        elif toks[i] == "__extension__":
            i += 1
        else:
            out.append(toks[i])
            i += 1
    return out


def expand_invocation(macro, args):
    """The tokens of a function-like macro call, parameters replaced and ## pasted."""
    sub = []
    for t in macro.body:
        if macro.params and t in macro.params:
            idx = macro.params.index(t)
            sub.extend(args[idx] if idx < len(args) else [])
        elif t == "__VA_ARGS__" and macro.params and macro.params[-1] == "...":
            sub.extend(sum(args[len(macro.params) - 1:], []))
        else:
            sub.append(t)
    out = []
    i = 0
    while i < len(sub):
        if sub[i] == "##" and out and i + 1 < len(sub):
            out[-1] = out[-1] + sub[i + 1]
            i += 2
        else:
            out.append(sub[i])
            i += 1
    return out


def split_args(toks, start):
    """toks[start] is '('; returns ([args as token lists], index after ')')."""
    args, cur, depth, i = [], [], 0, start
    while i < len(toks):
        t = toks[i]
        if t == "(":
            depth += 1
            if depth > 1:
                cur.append(t)
        elif t == ")":
            depth -= 1
            if depth == 0:
                args.append(cur)
                return args, i + 1
            cur.append(t)
        elif t == "," and depth == 1:
            args.append(cur)
            cur = []
        else:
            cur.append(t)
        i += 1
    return args, i


def top_level(toks, macros, want_data):
    """Definitions at file scope: ({name: is_static} functions, {name: is_static}
    variables, {function name: body tokens}). Expands pasting macros invoked at
    file scope."""
    funcs, data, bodies = {}, {}, {}
    toks = strip_attributes(toks)
    # Expand file-scope invocations of macros that paste names (definers).
    expanded, i, depth = [], 0, 0
    while i < len(toks):
        t = toks[i]
        if depth == 0 and t in macros and macros[t].params is not None \
                and "##" in macros[t].body and i + 1 < len(toks) and toks[i + 1] == "(":
            args, j = split_args(toks, i + 1)
            expanded.extend(strip_attributes(expand_invocation(macros[t], args)))
            i = j
            continue
        depth += {"{": 1, "}": -1}.get(t, 0)
        expanded.append(t)
        i += 1
    toks = expanded

    stmt, depth, i = [], 0, 0
    while i < len(toks):
        t = toks[i]
        if depth == 0 and t == "{" and stmt and stmt[-1] == ")":
            # A function definition: the name precedes the '(' matching stmt[-1].
            d, j = 0, len(stmt) - 1
            while j >= 0:
                d += {")": 1, "(": -1}.get(stmt[j], 0)
                if d == 0:
                    break
                j -= 1
            name = stmt[j - 1] if j > 0 else None
            # Find the body's end.
            d, k = 0, i
            while k < len(toks):
                d += {"{": 1, "}": -1}.get(toks[k], 0)
                if d == 0:
                    break
                k += 1
            if name and IDENT_RE.match(name):
                funcs[name] = "static" in stmt
                bodies[name] = toks[i + 1:k]
            stmt, i = [], k + 1
            continue
        if t == "{":
            depth += 1
        elif t == "}":
            depth -= 1
        if depth == 0 and t == ";":
            if want_data and stmt and not {"static", "extern", "typedef"} & set(stmt):
                head = stmt
                for stop in ("=", "["):
                    if stop in head:
                        head = head[:head.index(stop)]
                if "(" not in head and "{" not in stmt:
                    names = [x for x in head if IDENT_RE.match(x) and x not in KEYWORDS]
                    if len(names) >= 2:
                        data[names[-1]] = False
            stmt = []
        elif not (depth == 0 and t == "}"):
            if depth == 0:
                stmt.append(t)
        i += 1
    return funcs, data, bodies


class Source:
    def __init__(self, path):
        self.path = path
        with open(path, encoding="utf-8", errors="replace") as f:
            raw = f.read()
        # The include names before the strings are blanked.
        self.includes = re.findall(r'^\s*#\s*include\s+"([^"]+)"', raw, re.M)
        code, directives = split_preprocessor(strip_comments_and_strings(raw))
        self.macros, _ = parse_directives(directives)
        self.toks = tokens(code)


def header_closure(path, cache, seen=None):
    """Macros and static inline bodies of the headers path includes, recursively."""
    seen = set() if seen is None else seen
    macros, inlines = {}, {}
    src = cache.setdefault(path, Source(path))
    for inc in src.includes:
        hp = os.path.normpath(os.path.join(os.path.dirname(path), inc))
        if hp in seen or not os.path.exists(hp):
            continue
        seen.add(hp)
        hsrc = cache.setdefault(hp, Source(hp))
        macros.update(hsrc.macros)
        funcs, _, bodies = top_level(hsrc.toks, hsrc.macros, False)
        inlines.update({n: idents(b) for n, b in bodies.items()})
        m2, i2 = header_closure(hp, cache, seen)
        macros.update(m2)
        inlines.update(i2)
    return macros, inlines


def uses_of(src, macros, inlines):
    """Every identifier src uses, through the headers' macros and inline functions."""
    used = idents(src.toks)
    for m in src.macros.values():  # the file's own macros: their bodies count
        used |= idents(m.body)
    work, done = list(used), set()
    while work:
        n = work.pop()
        if n in done:
            continue
        done.add(n)
        more = set()
        if n in macros:
            more = idents(macros[n].body)
        elif n in inlines:
            more = inlines[n]
        for x in more - done:
            used.add(x)
            work.append(x)
    return used


def tarjan(nodes, edges):
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    for v in nodes:
        if v not in index:
            visit(v)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="+", help=".c files")
    ap.add_argument("--data", action="store_true",
                    help="count non-static global variables as well as functions")
    ap.add_argument("--quiet", action="store_true", help="print the circles only")
    args = ap.parse_args()

    cache, defs, statics, used = {}, {}, {}, {}
    for path in args.files:
        src = cache.setdefault(path, Source(path))
        macros, inlines = header_closure(path, cache)
        macros = {**macros, **src.macros}
        funcs, data, _ = top_level(src.toks, macros, args.data)
        statics[path] = {n for n, s in funcs.items() if s}
        for n, s in list(funcs.items()) + list(data.items()):
            if not s:
                defs.setdefault(n, path)
        used[path] = uses_of(src, macros, inlines)

    edges, why = {}, {}
    for path in args.files:
        for n in used[path]:
            d = defs.get(n)
            if d and d != path and n not in statics[path]:
                edges.setdefault(path, set()).add(d)
                why.setdefault((path, d), set()).add(n)

    if not args.quiet:
        print("edges (user -> definer: what it uses):")
        for (a, b) in sorted(why):
            print(f"  {a} -> {b}: {', '.join(sorted(why[(a, b)]))}")
    comps = [c for c in tarjan(args.files, edges) if len(c) > 1]
    print("strongly connected components of more than one file:" if comps else
          "no strongly connected component of more than one file")
    for c in comps:
        print(f"  {{{', '.join(c)}}}")
        for a in c:
            for b in sorted(edges.get(a, ())):
                if b in c:
                    print(f"    {a} -> {b}: {', '.join(sorted(why[(a, b)]))}")
    return 1 if comps else 0


if __name__ == "__main__":
    sys.exit(main())
