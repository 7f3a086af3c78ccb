#!/usr/bin/env python3
"""Who calls whom among a set of C files, and the circles it contains.

For each .c file given, finds the non-static functions (and non-static global
variables) it defines, then which other files name them (a call, an address
taken, a variable read). Reports each file's outgoing edges and the strongly
connected components with more than one file (a "circle"). Text-based:
comments and strings are stripped; token-pasted names (X-macros) are not seen.

    scripts/callgraph.py lib/fake/*.c [lib/fake/*/*.c]
"""
import re
import sys
from collections import defaultdict

IDENT = re.compile(r"\b[A-Za-z_]\w*\b")
# A definition at file scope: a line at column 0 that starts a declaration and
# whose declarator is followed (maybe on the next lines) by "{".
FUNC_DEF = re.compile(r"^(?!static\b)(?!typedef\b)(?![#}])[A-Za-z_][\w \t\*]*?\b([A-Za-z_]\w*)\s*\(", re.M)
VAR_DEF = re.compile(r"^(?!static\b)(?!extern\b)(?!typedef\b)(?!return\b)[A-Za-z_][\w \t\*]*?\b([A-Za-z_]\w*)\s*(?:\[[^\]]*\])?\s*(?:=|;)", re.M)
KEYWORDS = {"if", "while", "for", "switch", "return", "sizeof", "do", "else"}


def strip(text):
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)
    text = re.sub(r"'(?:\\.|[^'\\\n])*'", "''", text)
    return text


def definitions(text):
    defs = set()
    depth = 0
    # only definitions at brace depth 0 (file scope)
    lines = text.split("\n")
    scope0 = []
    for line in lines:
        scope0.append(line if depth == 0 else "")
        depth += line.count("{") - line.count("}")
    top = "\n".join(scope0)
    for m in FUNC_DEF.finditer(top):
        name = m.group(1)
        if name in KEYWORDS:
            continue
        # a definition, not a prototype: the next ';' or '{' after the ')' is '{'
        rest = top[m.end():]
        brace, semi = rest.find("{"), rest.find(";")
        if brace >= 0 and (semi < 0 or brace < semi):
            defs.add(name)
    for m in VAR_DEF.finditer(top):
        if m.group(1) not in KEYWORDS and "(" not in top[m.start():m.end()]:
            defs.add(m.group(1))
    return defs


def sccs(nodes, edges):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
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

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def main(paths):
    texts = {p: strip(open(p).read()) for p in paths}
    owner = {}
    for p, t in texts.items():
        for d in definitions(t):
            owner.setdefault(d, p)
    edges = defaultdict(set)
    why = defaultdict(set)
    for p, t in texts.items():
        for name in set(IDENT.findall(t)):
            q = owner.get(name)
            if q and q != p:
                edges[p].add(q)
                why[(p, q)].add(name)
    short = lambda p: p.split("lib/fake/")[-1]
    print("files: %d, edges: %d of %d possible pairs" % (
        len(paths), sum(len(v) for v in edges.values()), len(paths) * (len(paths) - 1)))
    for p in sorted(paths):
        if edges[p]:
            print("  %s -> %s" % (short(p), ", ".join(short(q) for q in sorted(edges[p]))))
    comps = [c for c in sccs(paths, edges) if len(c) > 1]
    print("strongly connected components (circles) of more than one file: %d" % len(comps))
    for c in comps:
        print("  [%d] %s" % (len(c), " ".join(short(p) for p in c)))
        if len(c) <= 3:
            for a in c:
                for b in c:
                    if b in edges[a]:
                        print("       %s -> %s: %s" % (short(a), short(b), ", ".join(sorted(why[(a, b)]))))
    return 1 if any(len(c) > 2 for c in comps) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
