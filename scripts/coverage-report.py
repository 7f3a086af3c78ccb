#!/usr/bin/env python3
"""The report of scripts/coverage.sh: reads gcov's JSON files (WORK/*.gcov.json.gz)
for libcuscope's objects and prints, for lib/ (not lib/fake):

  - line and branch coverage per file and in total;
  - error-handling branches: the branch outcomes of every condition that
    guards error handling, and which ones the run never took;
  - the driver-call sites (lines naming cus_drv_.cu*) the run never executed.

An error-handling condition is the condition of an `if` whose body makes or
passes on an error: it calls CUS_FAIL, cus_fail_ or another *_fail_ helper,
cus_destroy_error_, names a CUS_ERROR_ status, jumps to a `fail` label,
returns a status variable (r, rc, st, status, left, back, ...) or a cast of
one, or returns NULL / false after an allocation or a driver call in the
condition. A line that invokes one of the checking macros (CUS_TRY,
CUS_CHECK_*, CUS_IN_CONTEXT*) counts too: the branches gcov gives it are the
macro's. All the outcomes gcov records on those lines are counted, the
success direction included.

  coverage-report.py SRC WORK [--list-error-branches]
"""
import gzip
import json
import os
import re
import sys

MACRO_LINE = re.compile(r'\b(CUS_TRY|CUS_CHECK_\w+|CUS_IN_CONTEXT\w*)\s*\(')
ERROR_BODY = re.compile(
    r'\bCUS_FAIL\b|\b\w*_fail_?\s*\(|\bcus_destroy_error_\b|\bCUS_ERROR_\w+|\bgoto\s+fail\b'
    r'|\breturn\s+\(\s*(cus_status|CUresult)\s*\)'
    r'|\breturn\s+(r|rc|rd|st|status|left|back|err|res)\s*;')
RETURN_NULL = re.compile(r'\breturn\s+(NULL|false)\s*;')
ALLOC_OR_DRIVER = re.compile(r'\bcus_(malloc|calloc|realloc|strdup)_\b|\bcus_drv_\.|\b(r|rc|st|status)\b|!\s*\w+\s*\)')


def strip_comments_and_strings(text):
    """Blanks comments, string and character literals, keeping newlines and offsets."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r'[^\n]', ' ', text[i:j]))
            i = j
        elif text.startswith('//', i):
            j = text.find('\n', i)
            j = n if j < 0 else j
            out.append(' ' * (j - i))
            i = j
        elif c in '"\'':
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == '\\' else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r'[^\n]', ' ', text[i + 1:j - 1]) + c if j - i >= 2 else text[i:j])
            i = j
        else:
            out.append(c)
            i += 1
    return ''.join(out)


def match(text, i, open_c, close_c):
    """Index just past the bracket that closes the one at text[i]."""
    depth = 0
    for j in range(i, len(text)):
        if text[j] == open_c:
            depth += 1
        elif text[j] == close_c:
            depth -= 1
            if depth == 0:
                return j + 1
    return len(text)


def statement_end(text, i):
    """Index just past the statement starting at text[i] (a block or up to ';')."""
    while i < len(text) and text[i].isspace():
        i += 1
    if i < len(text) and text[i] == '{':
        return match(text, i, '{', '}')
    depth = 0
    for j in range(i, len(text)):
        if text[j] in '({[':
            depth += 1
        elif text[j] in ')}]':
            depth -= 1
        elif text[j] == ';' and depth <= 0:
            return j + 1
    return len(text)


def error_condition_lines(path):
    """The line numbers of the conditions that guard error handling, in path."""
    with open(path) as f:
        raw = f.read()
    text = strip_comments_and_strings(raw)
    line_of = lambda k: text.count('\n', 0, k) + 1
    lines = set()
    # Skip preprocessor lines (the macros' own definitions).
    clean = re.sub(r'^[ \t]*#(?:[^\n]*\\\n)*[^\n]*', lambda m: re.sub(r'[^\n]', ' ', m.group(0)),
                   text, flags=re.M)
    for m in re.finditer(r'\bif\s*\(', clean):
        open_paren = m.end() - 1
        cond_end = match(clean, open_paren, '(', ')')
        cond = clean[open_paren:cond_end]
        body = clean[cond_end:statement_end(clean, cond_end)]
        if ERROR_BODY.search(body) or (RETURN_NULL.search(body) and ALLOC_OR_DRIVER.search(cond)):
            lines.update(range(line_of(m.start()), line_of(cond_end - 1) + 1))
    for n, line in enumerate(clean.splitlines(), 1):
        if MACRO_LINE.search(line):
            lines.add(n)
    return lines


def main():
    src, work = sys.argv[1], sys.argv[2]
    list_errors = '--list-error-branches' in sys.argv[3:]
    lib = os.path.join(src, 'lib') + os.sep
    fake = os.path.join(lib, 'fake') + os.sep
    files = {}
    for name in sorted(os.listdir(work)):
        if not name.endswith('.gcov.json.gz'):
            continue
        with gzip.open(os.path.join(work, name), 'rt') as f:
            data = json.load(f)
        cwd = data.get('current_working_directory', '')
        for fe in data['files']:
            path = os.path.normpath(os.path.join(cwd, fe['file']))
            if not path.startswith(lib) or path.startswith(fake):
                continue
            rec = files.setdefault(path, {'lines': {}, 'branches': {}})
            for ln in fe['lines']:
                n = ln['line_number']
                rec['lines'][n] = max(rec['lines'].get(n, 0), ln['count'])
                for i, br in enumerate(ln.get('branches', [])):
                    key = (n, i)
                    rec['branches'][key] = max(rec['branches'].get(key, 0), br['count'])
    if not files:
        sys.exit('coverage: gcov produced no data for lib/')

    pct = lambda a, b: 100.0 * a / b if b else 100.0
    tl = th = tb = tbh = te = teh = 0
    rows, untaken = [], []
    error_lines = {}
    for path, rec in sorted(files.items()):
        rel = os.path.relpath(path, src)
        l = len(rec['lines'])
        h = sum(1 for c in rec['lines'].values() if c)
        b = len(rec['branches'])
        bh = sum(1 for c in rec['branches'].values() if c)
        err_lines = error_condition_lines(path) if os.path.exists(path) else set()
        error_lines[path] = err_lines
        eb = [(k, c) for k, c in rec['branches'].items() if k[0] in err_lines]
        e = len(eb)
        eh = sum(1 for _, c in eb if c)
        missed = sorted({k[0] for k, c in eb if not c})
        untaken += [(rel, n) for n in missed]
        tl += l; th += h; tb += b; tbh += bh; te += e; teh += eh
        rows.append((rel, h, l, bh, b, eh, e))

    print('\ncoverage of lib/ (not lib/fake) by the unit suite')
    print(f'{"file":26} {"lines":>17} {"branches":>17} {"error branches":>17}')
    for f, h, l, bh, b, eh, e in rows:
        print(f'{f:26} {h:>5}/{l:<5} {pct(h, l):5.1f}% {bh:>5}/{b:<5} {pct(bh, b):5.1f}% '
              f'{eh:>5}/{e:<5} {pct(eh, e):5.1f}%')
    print(f'{"TOTAL":26} {th:>5}/{tl:<5} {pct(th, tl):5.1f}% {tbh:>5}/{tb:<5} {pct(tbh, tb):5.1f}% '
          f'{teh:>5}/{te:<5} {pct(teh, te):5.1f}%')
    print(f'\nerror-handling branches taken: {teh} of {te} ({pct(teh, te):.1f}%); '
          f'lines with an outcome never taken: {len(untaken)}')
    if list_errors:
        for rel, n in untaken:
            with open(os.path.join(src, rel)) as f:
                text = f.read().splitlines()[n - 1].strip()
            print(f'  {rel}:{n}: {text}')

    # Driver-call sites: lines naming cus_drv_.cu* in lib/ (not lib/fake).
    # A site's failure was handled when every outcome of the error check that
    # tests its result was taken: the check on its own line (CUS_IN_CONTEXT,
    # `if ((r = ...))`) or the first one in the 8 lines below it.
    site = re.compile(r'cus_drv_\.cu\w*')
    never, unfailed, total_sites, returned = [], [], 0, 0
    for root, _, names in os.walk(lib):
        if root.startswith(fake.rstrip(os.sep)):
            continue
        for name in sorted(names):
            if not name.endswith('.c'):
                continue
            path = os.path.join(root, name)
            counts = files.get(path, {'lines': {}})['lines']
            with open(path) as f:
                text_lines = f.read().splitlines()
            for n, text in enumerate(text_lines, 1):
                if not site.search(text) or text.lstrip().startswith(('/*', '*', '//')):
                    continue
                total_sites += 1
                # A call on a continuation line of a statement (a macro
                # argument) has no line record: use the statement's first
                # instrumented line above it.
                k = n
                while k not in counts and k > 1 and n - k < 6:
                    k -= 1
                where = f'{os.path.relpath(path, src)}:{n}: {text.strip()}'
                if not counts.get(k, 0):
                    never.append(where)
                    continue
                stripped = text.strip()
                if stripped.startswith(('return ', ': ')):
                    returned += 1  # a destroy callback's: its caller checks the result
                    continue
                err_lines = error_lines.get(path, set())
                check = next((m for m in range(n, n + 9) if m in err_lines), None)
                branches = files.get(path, {'branches': {}})['branches']
                outcomes = [c for (ln, _), c in branches.items() if ln == check]
                if check is None or not outcomes or not all(outcomes):
                    unfailed.append(where)
    print(f'\ndriver-call sites (lines with cus_drv_.cu*): {total_sites}, never executed: '
          f'{len(never)}; of the {total_sites - returned} that check their result where they '
          f'call ({returned} return it to a caller), {len(unfailed)} have a check with an '
          f'outcome never taken')
    for s in sorted(never):
        print('  never executed: ' + s)
    for s in sorted(unfailed):
        print('  never failed:   ' + s)


if __name__ == '__main__':
    main()
