#!/usr/bin/env python3
"""Checks the exported symbols of cuscope's libraries against their linker
maps and the public headers.

usage: check-symbols.py INCLUDE_DIR MAP LIBRARY [--headers H.h ...] [--exclude H.h ...]

Three sets must be equal, and each difference is printed:
  - the names the map (a GNU ld version script) lists under global:, one a
    line: no wildcard;
  - what the headers in INCLUDE_DIR (or only --headers; less --exclude)
    declare with CUS_API: functions, and the few variables. The ref/unref
    pair of each object type, that lib/internal.h's CUS_DEFINE_REF_UNREF
    defines, is declared with CUS_API in its type's header like any other;
  - what LIBRARY exports (nm -D --defined-only), less the map's version node.
Exits 0 when they agree, 1 when not, 2 on a usage error."""
import glob
import os
import re
import subprocess
import sys


def header_symbols(paths):
    found = {}
    for path in paths:
        text = open(path).read()
        text = re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)
        text = re.sub(r'//[^\n]*', ' ', text)
        # macro bodies declare nothing (CUS_API is defined, not used, there)
        text = re.sub(r'^[ \t]*#[^\n]*(?:\\\n[^\n]*)*', ' ', text, flags=re.M)
        for m in re.finditer(r'\bCUS_API\b([^;{]*)', text):
            decl = m.group(1)
            if '(' in decl:
                name = re.search(r'(\w+)\s*\($', decl[:decl.index('(')].rstrip() + '(')
            else:
                name = re.search(r'(\w+)\s*(?:\[[^\]]*\]\s*)*(?:=.*)?$', decl.strip(), re.S)
            if not name:
                sys.exit('check-symbols: cannot read the declaration "CUS_API%s" in %s'
                         % (decl, path))
            found.setdefault(name.group(1), os.path.basename(path))
    return found


def map_symbols(path):
    text = re.sub(r'/\*.*?\*/', ' ', open(path).read(), flags=re.S)
    text = re.sub(r'#[^\n]*', ' ', text)
    names, wild, scope = set(), [], None
    for tok in re.findall(r'[\w*?\[\]]+:|[^\s;{}]+', text):
        if tok in ('global:', 'local:'):
            scope = tok
        elif scope == 'global:':
            if re.search(r'[*?\[]', tok):
                wild.append(tok)
            else:
                names.add(tok)
    nodes = set(re.findall(r'(\w+)\s*\{', text))
    return names, wild, nodes


def exported(path):
    out = subprocess.run(['nm', '-D', '--defined-only', path], check=True,
                         capture_output=True, text=True).stdout
    return {line.split()[-1].split('@')[0] for line in out.splitlines() if line.split()}


def main(argv):
    args, headers, exclude = [], None, []
    it = iter(argv)
    for a in it:
        if a == '--headers':
            headers = []
            cur = headers
        elif a == '--exclude':
            cur = exclude
        elif a.startswith('--'):
            print(__doc__, file=sys.stderr)
            return 2
        elif len(args) < 3:
            args.append(a)
        else:
            cur.append(a)
    if len(args) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    include, map_path, lib = args
    paths = sorted(glob.glob(os.path.join(include, '*.h')))
    if headers is not None:
        paths = [p for p in paths if os.path.basename(p) in headers]
    paths = [p for p in paths if os.path.basename(p) not in exclude]
    declared = header_symbols(paths)
    listed, wild, nodes = map_symbols(map_path)
    have = exported(lib) - nodes
    bad = 0

    def report(what, names, where=None):
        nonlocal bad
        if names:
            bad += len(names)
            print('%s: %s (%d):' % (os.path.basename(map_path), what, len(names)))
            for n in sorted(names):
                print('    %s%s' % (n, ' (%s)' % where[n] if where and n in where else ''))

    report('wildcards in global: (list each symbol by name)', set(wild))
    report('declared with CUS_API but not in the map', set(declared) - listed, declared)
    report('in the map but declared with CUS_API in no header', listed - set(declared))
    report('in the map but not exported by %s' % os.path.basename(lib), listed - have)
    report('exported by %s but not in the map' % os.path.basename(lib), have - listed)
    if bad:
        return 1
    print('%s: %d symbols, as declared and as exported by %s'
          % (os.path.basename(map_path), len(listed), os.path.basename(lib)))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
