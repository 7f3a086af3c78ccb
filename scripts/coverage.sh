#!/usr/bin/env bash
# Line and branch coverage of lib/ (not lib/fake) by the unit suite.
#
#   scripts/coverage.sh [BUILD_DIR]      (default: build-coverage)
#   COVERAGE_REPORT_ONLY=1 scripts/coverage.sh DIR   report on the data of the last run
#   COVERAGE_LIST_ERRORS=1 ...   also list the error-handling branches never taken
#
# Configures BUILD_DIR as a gcc debug build with -Db_coverage=true (once),
# builds, runs `meson test --suite unit`, then reads gcov's JSON output for
# every object of libcuscope and prints (scripts/coverage-report.py) line,
# branch and error-handling-branch coverage per file and in total, and the
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

python3 "$src/scripts/coverage-report.py" "$src" "$work" ${COVERAGE_LIST_ERRORS:+--list-error-branches}

if command -v gcovr >/dev/null 2>&1; then
    gcovr -r "$src" --filter "$src/lib/" --exclude "$src/lib/fake/" --branches "$build" || true
fi
exit $status
