#!/usr/bin/env bash
# Checks the API reference: every public header is read by doxygen and is a
# dependency of the docs target, and doxygen reports no warning over them (a
# declaration without a comment of its own, a formatting error).
#
#   scripts/check-doxygen.sh [DOXYGEN]
#
# Needs no build directory: it fills in docs/Doxyfile.in itself and writes the
# HTML to a temporary directory. CI runs it (.ci/run, step docs), and so does
# `meson test -C build --suite docs` where doxygen is found. Exit 0: clean;
# 1: a header missed or a warning, each named with its file and line.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
top=$PWD
doxygen=${1:-doxygen}
fail=0

# 1. Every include/cuscope/*.h is in docs/meson.build's depend_files (so that
#    the docs target is rebuilt when it changes) and under the Doxyfile's INPUT
#    (the directory, with FILE_PATTERNS *.h, or the file itself).
input=$(sed -n '/^INPUT /,/[^\\]$/p' docs/Doxyfile.in)
for h in include/cuscope/*.h; do
    name=${h#include/cuscope/}
    if ! grep -q "'\.\./include/cuscope/$name'" docs/meson.build; then
        echo "$h: not in docs/meson.build's depend_files: add '../include/cuscope/$name'"
        fail=1
    fi
    if ! grep -Eq "@TOP_SRCDIR@/include/cuscope(/$name)?[[:space:]\\\\]*$" <<<"$input"; then
        echo "$h: not in docs/Doxyfile.in's INPUT"
        fail=1
    fi
done
# And nothing listed that is gone (a renamed header).
for f in $(grep -o "'\.\./include/cuscope/[a-z_0-9]*\.h'" docs/meson.build | tr -d "'"); do
    [ -f "docs/$f" ] || { echo "docs/meson.build: depend_files lists $f, which does not exist"; fail=1; }
done

# 2. doxygen over them, with the Doxyfile of the build (FAIL_ON_WARNINGS).
if ! command -v "$doxygen" >/dev/null; then
    echo "check-doxygen: $doxygen not found: the headers' coverage is checked, not their comments"
    exit "$fail"
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
sed -e "s|@VERSION@|check|; s|@TOP_SRCDIR@|$top|g; s|@OUTPUT_DIR@|$out|" \
    docs/Doxyfile.in >"$out/Doxyfile"
rc=0
"$doxygen" "$out/Doxyfile" >"$out/log" 2>&1 || rc=$?
# Paths relative to the source tree, and an undocumented member said plainly
# (doxygen names it "Member X (function) of file Y is not documented").
warnings=$(grep -E ':[0-9]+: (warning|error)' "$out/log" |
    sed -e "s|$top/||g" \
        -e 's/: \(warning\|error\): Member \(.*\) of \(file\|struct\|union\|enum\) \([^ ]*\) is not documented\./: \2 of \3 \4 has no comment of its own (a comment over several declarations documents the first only)/' \
        -e 's/: \(warning\|error\): Compound \(.*\) is not documented\./: \2 has no comment/' \
        -e 's/: error: /: warning: /' || true)
if [ -n "$warnings" ]; then
    echo "$warnings"
    echo "check-doxygen: $(wc -l <<<"$warnings") doxygen warning(s): every public declaration needs a comment of its own (docs/doxygen-filter.sed says which comments doxygen reads)"
    fail=1
elif [ "$rc" -ne 0 ]; then
    cat "$out/log"
    echo "check-doxygen: doxygen failed (exit $rc)"
    fail=1
fi
[ "$fail" -eq 0 ] && echo "check-doxygen: $(ls include/cuscope/*.h | wc -l) headers, no doxygen warning"
exit "$fail"
