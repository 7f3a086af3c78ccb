#!/usr/bin/env bash
# Line and branch coverage of lib/ (not lib/fake) by the unit suite.
#
#   scripts/coverage.sh [BUILD_DIR]      (default: build-coverage)
#   COVERAGE_REPORT_ONLY=1 scripts/coverage.sh DIR   report on the data of the last run
#
# Configures BUILD_DIR as a gcc debug build with -Db_coverage=true (once),
# builds, runs `meson test --suite unit`, then reads gcov's JSON output for
# every object of libcuscope and prints totals and a per-file table, and the
# driver-call sites of lib/ (lines with `cus_drv_.cu`) the suite never ran.
# Uses gcovr for an extra summary when it is installed; the figures printed
# are this script's own (gcov's JSON, parsed with python3).
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build-coverage}
case $build in /*) ;; *) build=$PWD/$build ;; esac

if [ ! -f "$build/build.ninja" ]; then
    CC=${CC:-gcc} meson setup "$build" "$src" -Db_coverage=true --buildtype=debug \
        -Dbenchmarks=disabled -Ddocs=disabled -Dexamples=false -Dgpu_tests=disabled
fi
ninja -C "$build"
status=0
if [ "${COVERAGE_REPORT_ONLY:-0}" != 1 ]; then # 1: report on the last run's data
    find "$build" -name '*.gcda' -delete
    meson test -C "$build" --suite unit --print-errorlogs --num-processes "$(nproc)" || status=$?
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
objdir=$(find "$build/lib" -maxdepth 1 -type d -name 'libcuscope.so*.p' | head -n1)
[ -n "$objdir" ] || { echo "coverage: no libcuscope object directory in $build/lib" >&2; exit 1; }
(
    cd "$work"
    find "$objdir" -name '*.gcda' | while read -r gcda; do
        gcov --json-format --branch-probabilities --object-directory "$(dirname "$gcda")" \
            "$gcda" >/dev/null 2>&1 || true
    done
)

python3 - "$src" "$work" <<'PY'
import gzip, json, os, re, sys
src, work = sys.argv[1], sys.argv[2]
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
tl = th = tb = tbh = 0
rows = []
for path, rec in sorted(files.items()):
    l = len(rec['lines']); h = sum(1 for c in rec['lines'].values() if c)
    b = len(rec['branches']); bh = sum(1 for c in rec['branches'].values() if c)
    tl += l; th += h; tb += b; tbh += bh
    rows.append((os.path.relpath(path, src), h, l, bh, b))
pct = lambda a, b: 100.0 * a / b if b else 100.0
print('\ncoverage of lib/ (not lib/fake) by the unit suite')
print(f'{"file":32} {"lines":>15} {"":>7} {"branches":>15} {"":>7}')
for f, h, l, bh, b in rows:
    print(f'{f:32} {h:>7}/{l:<7} {pct(h,l):6.1f}% {bh:>7}/{b:<7} {pct(bh,b):6.1f}%')
print(f'{"TOTAL":32} {th:>7}/{tl:<7} {pct(th,tl):6.1f}% {tbh:>7}/{tb:<7} {pct(tbh,tb):6.1f}%')

# Driver-call sites: lines naming cus_drv_.cu* in lib/ (not lib/fake).
site = re.compile(r'cus_drv_\.cu\w*')
never = []; total_sites = 0
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
                if not counts.get(k, 0):
                    never.append(f'{os.path.relpath(path, src)}:{n}: {text.strip()}')
print(f'\ndriver-call sites (lines with cus_drv_.cu*): {total_sites}, never executed: {len(never)}')
for s in sorted(never):
    print('  ' + s)
PY

if command -v gcovr >/dev/null 2>&1; then
    gcovr -r "$src" --filter "$src/lib/" --exclude "$src/lib/fake/" --branches "$build" || true
fi
exit $status
