#!/usr/bin/env bash
# The one script to run on the GPU machine (through the remote device tool, which
# copies the working tree there; carry .deps so that cmocka comes along):
#   bash scripts/gpu-run.sh
#
# That machine has nvcc, meson, ninja and gcc but no cmocka and no network, so
# cmocka comes from the Debian packages in .deps/ (git-ignored; fill it with
#   mkdir -p .deps && cd .deps && apt-get download libcmocka0 libcmocka-dev).
# Builds build-gpu/ (release, with the kernels of kernels/), runs the examples
# (sum is the main job), compute-sanitizer memcheck over the examples and the
# gpu suite, the gpu suite, and every benchmark in build-gpu/bench/ (tables,
# and JSON beside them), in that order, the shortest and surest first, so that
# a run cut short by a time limit still says the most; leaves the logs in /tmp/gpu-run and, when $OUT is set,
# $OUT/gpu-run.tar.gz and $OUT/summary.txt; ends with a summary. Every run is
# under `timeout`. Exit status: 0 when the build, the gpu suite, the examples
# and the sanitizer runs all succeeded.
#
# GPU_RUN_PARTS=suite runs only the build and the gpu suite (the tables the
# differential tests write come back either way): for a quick run.
# GPU_RUN_PARTS=bench runs only the build (kept from an earlier call on a warm
# machine) and the benchmarks, with the baseline: the second half of a run
# that a call's time limit would not hold. GPU_RUN_BENCH names the benchmarks
# (e.g. "bench-scale"; default: every one), GPU_RUN_BENCH_ARGS adds arguments
# to each, and GPU_RUN_BASELINE_BENCH names the baseline's (default
# "bench-context bench-launch"), GPU_RUN_BASELINE_ROUNDS how many rounds (2).
# The gpu suite's differential tests write the real driver's tables where
# CUS_RULES_WRITE and CUS_CORPUS_WRITE say: $OUT (or the logs) keeps them as
# rules-<card>.txt and corpus-<card>.txt, to check in as the reference.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PARTS=${GPU_RUN_PARTS:-all}
# GPU_RUN_PARTS is also a list of parts by name: suite, examples, sanitizer,
# bench, baseline, rules (the build always runs), e.g. "suite examples
# sanitizer" for the first call on a fresh machine and "bench baseline" for
# the second. rules (never in "all") runs gpu-rules on the rows whose names
# contain one of GPU_RUN_RULES_ONLY's comma-separated texts (default: the
# groups whose rows were made on the fake) and writes rules-gpu-part.txt, for
#   scripts/rules-merge.py rules-gpu-part.txt test/rules/expected.txt
case $PARTS in
    all) PARTS_LIST="suite examples sanitizer bench baseline" ;;
    bench) PARTS_LIST="bench baseline" ;;
    *) PARTS_LIST=$PARTS ;;
esac
has() { [[ " $PARTS_LIST " == *" $1 "* ]]; }
# GPU_RUN_SKIP: a space-separated list of what to leave out: gpu tests by
# name, sanitizer, sanitizer-suite (the examples only), baseline. Unset, it is "gpu-rules": that table is checked
# in, and gpu-rules takes about 400 s on an H200 (a process per risky cell),
# slowing the tests beside it; GPU_RUN_SKIP="" runs it too.
SKIP=" ${GPU_RUN_SKIP-gpu-rules} "
skipping() { [[ "$SKIP" == *" $1 "* ]]; }

BUILD=build-gpu
PREFIX=/tmp/cmocka
OUT=${OUT:-}
[ -n "$OUT" ] && mkdir -p "$OUT"
LOGS=/tmp/gpu-run
rm -rf "$LOGS" && mkdir -p "$LOGS"
status=0

say() { echo "::: $*"; }
save() { cp "$@" "$LOGS/" 2>/dev/null; return 0; }

# --- cmocka from .deps --------------------------------------------------------------
if pkg-config --exists cmocka 2>/dev/null; then
    say "cmocka: $(pkg-config --modversion cmocka) (system)"
elif compgen -G '.deps/*.deb' >/dev/null; then
    rm -rf "$PREFIX" && mkdir -p "$PREFIX"
    for deb in .deps/*.deb; do dpkg -x "$deb" "$PREFIX"; done
    # Debian's cmocka.pc names /usr in its paths (prefix= in some versions,
    # -I/usr/include and -L/usr/lib/... in 1.1.5): point them at $PREFIX/usr.
    for pc in "$PREFIX"/usr/lib/*/pkgconfig/cmocka.pc; do
        sed -i -e "s|^prefix=/usr|prefix=$PREFIX/usr|" \
            -e "s|-I/usr/|-I$PREFIX/usr/|g" -e "s|-L/usr/|-L$PREFIX/usr/|g" "$pc"
        libdir=$(dirname "$(dirname "$pc")")
        export PKG_CONFIG_PATH="$(dirname "$pc")${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
        export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    done
    say "cmocka: $(pkg-config --modversion cmocka 2>/dev/null || echo 'NOT usable') (from .deps, in $PREFIX)"
else
    say "cmocka: missing and no .deps/*.deb: the gpu suite will not be built"
fi

# --- the card -----------------------------------------------------------------------
card=none driver=none
if command -v nvidia-smi >/dev/null; then
    q=$(timeout 30 nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)
    card=${q%%,*} driver=${q##*, }
fi
say "card: $card, driver: $driver"

# --- build --------------------------------------------------------------------------
if [ -f "$BUILD/meson-private/coredata.dat" ]; then
    setup=(meson setup --reconfigure "$BUILD")
else
    setup=(meson setup "$BUILD" --buildtype=release)
fi
built=yes
if ! timeout 300 "${setup[@]}" >"/tmp/gpu-run-setup.log" 2>&1; then
    cat /tmp/gpu-run-setup.log
    built=no
elif ! timeout 600 meson compile -C "$BUILD"; then
    built=no
fi
sed -n '/^  cuscope$/,/^$/p' /tmp/gpu-run-setup.log
save /tmp/gpu-run-setup.log
[ "$built" = yes ] || { say "build FAILED"; status=1; }

# --- the main job and the other examples ------------------------------------------------
main_rc="not run"
examples=""
example_list="sum saxpy rtc-sum tutorial-rtc tutorial-library tutorial-link device-query nccl-allreduce"
has examples || example_list=""
for ex in $example_list; do
    exe="$BUILD/docs/examples/$ex"
    if [ ! -x "$exe" ]; then
        examples+="${examples:+, }$ex not built"
        continue
    fi
    say "example: $ex"
    timeout -k 5 120 "$exe" 2>&1 | tee "$LOGS/example-$ex.txt"
    rc=${PIPESTATUS[0]}
    examples+="${examples:+, }$ex exit $rc"
    [ "$rc" = 0 ] || status=1
    [ "$ex" = sum ] && main_rc=$rc
done
[ "$built" = yes ] && has examples && [ "$main_rc" = "not run" ] && { say "the sum example was not built"; status=1; }
if has examples && [ -x "$BUILD/tools/cuscope-info" ]; then
    say "cuscope-info"
    timeout -k 5 60 "$BUILD/tools/cuscope-info" 2>&1 | tee "$LOGS/cuscope-info.txt"
    rc=${PIPESTATUS[0]}
    examples+=", cuscope-info exit $rc"
    [ "$rc" = 0 ] || status=1
fi

# --- compute-sanitizer memcheck over the gpu suite -------------------------------------
# gpu-sticky faults on purpose (an illegal address), so it runs without it.
# Over the suite, memory errors only: it provokes driver errors on purpose
# (bad images, unknown names, failed captures), each of which the sanitizer
# would report as an API error. The examples are correct programs: API errors
# are reported too, and there must be none (cuscope takes a kernel's
# parameter count from its image, lib/param_counts.c, and never asks the
# driver past the last parameter).
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
sanitized="not run"
if skipping sanitizer; then
    sanitized="left out (GPU_RUN_SKIP)"
elif ! has sanitizer; then
    sanitized="left out (GPU_RUN_PARTS=$PARTS)"
elif [ "$built" = yes ] && [ -x "$sanitizer" ]; then
    # the examples first: they are what must show 0 errors, and the suite's
    # runs are the long ones
    sanitized=""
    for ex in sum saxpy rtc-sum tutorial-library; do
        exe="$BUILD/docs/examples/$ex"
        [ -x "$exe" ] || continue
        timeout -k 10 300 "$sanitizer" --tool memcheck --leak-check full \
            --error-exitcode 99 "$exe" >"$LOGS/sanitizer-$ex.txt" 2>&1
        rc=$?
        sanitized+="${sanitized:+, }$ex exit $rc ($(grep -o 'ERROR SUMMARY: [0-9]* error' "$LOGS/sanitizer-$ex.txt" | tail -1))"
        [ "$rc" = 0 ] || status=1
    done
    suite_sanitized="gpu-scenarios gpu-modules"
    skipping sanitizer-suite && suite_sanitized=""
    for t in $suite_sanitized; do
        exe=$(find "$BUILD/test" -maxdepth 1 -name "$t" -type f -executable | head -1)
        [ -n "$exe" ] || continue
        say "compute-sanitizer memcheck: $t"
        timeout -k 10 300 "$sanitizer" --tool memcheck --leak-check full --report-api-errors no \
            --error-exitcode 99 "$exe" >"$LOGS/sanitizer-$t.txt" 2>&1
        rc=$?
        tail -5 "$LOGS/sanitizer-$t.txt"
        sanitized+="${sanitized:+, }$t exit $rc ($(grep -o 'ERROR SUMMARY: [0-9]* error' "$LOGS/sanitizer-$t.txt" | tail -1))"
        [ "$rc" = 0 ] || status=1
    done
elif [ "$built" = yes ]; then
    sanitized="no compute-sanitizer"
fi

# --- the gpu suite ------------------------------------------------------------------
counts="not run"
if [ "$built" = yes ] && ! has suite; then
    counts="left out (GPU_RUN_PARTS=$PARTS)"
elif [ "$built" = yes ]; then
    say "meson test --suite gpu"
    export CUS_RULES_WRITE="$LOGS/rules-gpu.txt" CUS_CORPUS_WRITE="$LOGS/corpus-gpu.txt"
    gpu_tests=()
    if [[ "$SKIP" == *" gpu-"* ]]; then
        # every gpu test but those, by name
        while IFS= read -r t; do skipping "$t" || gpu_tests+=("$t"); done < <(
            meson test -C "$BUILD" --suite gpu --list 2>/dev/null | grep -o 'gpu-[A-Za-z0-9_-]*$')
        say "gpu tests run (leaving out:${SKIP% }): ${gpu_tests[*]}"
        # none left would make meson run every test there is
        ((${#gpu_tests[@]})) || { say "no gpu test left to run"; gpu_tests=(--suite none-left); }
    else
        gpu_tests=(--suite gpu)
    fi
    timeout -k 10 900 meson test -C "$BUILD" "${gpu_tests[@]}" --print-errorlogs 2>&1 |
        tee /tmp/gpu-run-test.log
    rc=${PIPESTATUS[0]}
    [ "$rc" = 0 ] || status=1
    # newer meson leaves out the lines whose count is zero
    n() { local v; v=$(sed -n "s/^$1: *\([0-9]*\).*/\1/p" /tmp/gpu-run-test.log | head -1); echo "${v:-0}"; }
    if grep -q 'No suitable tests defined' /tmp/gpu-run-test.log; then
        counts="no gpu tests built (rc $rc)"
    else
        counts="ok $(n Ok), fail $(n Fail), skip $(n Skipped), timeout $(n Timeout) (rc $rc)"
    fi
    save "$BUILD/meson-logs/testlog.txt" /tmp/gpu-run-test.log
fi


# --- a part of the rules table -------------------------------------------------------
rules_part="not run"
if [ "$built" = yes ] && has rules; then
    only=${GPU_RUN_RULES_ONLY:-Green,DevResource,DevSmResource,cuGraph,cuKernel,cuLibrary,cuLink,CaptureToGraph,cuTensorMap,GraphMem}
    say "gpu-rules --only $only"
    timeout -k 10 500 "$BUILD/test/rules/gpu-rules" --only "$only" --write "$LOGS/rules-gpu-part.txt" \
        >"$LOGS/rules-part.txt" 2>&1
    rc=$?
    tail -3 "$LOGS/rules-part.txt"
    rules_part="exit $rc ($(grep -c '^cu' "$LOGS/rules-gpu-part.txt" 2>/dev/null || echo 0) rows written)"
fi

# --- benchmarks ---------------------------------------------------------------------
benches=()
if has bench && [ -d "$BUILD/bench" ]; then
    while IFS= read -r b; do benches+=("$b"); done < <(
        find "$BUILD/bench" -maxdepth 1 -type f -executable -name 'bench-*' ! -name '*.so*' | sort)
fi
if [ -n "${GPU_RUN_BENCH:-}" ]; then
    chosen=()
    for b in "${benches[@]}"; do
        [[ " $GPU_RUN_BENCH " == *" $(basename "$b") "* ]] && chosen+=("$b")
    done
    benches=("${chosen[@]}")
fi
read -r -a bench_args <<<"${GPU_RUN_BENCH_ARGS:-}"
bench_summary=none
if ((${#benches[@]})); then
    bench_summary=""
    for b in "${benches[@]}"; do
        name=$(basename "$b")
        # bench-scale's full sizes (1e5 allocations, captures of 1e5 launches,
        # each side, several rounds) would take minutes on a GPU: capped at
        # 1e4 and held to 120 s (it leaves out, and says so, what would not
        # fit), unless GPU_RUN_BENCH_ARGS says otherwise.
        extra=("${bench_args[@]}")
        [ "$name" = bench-scale ] && ((${#bench_args[@]} == 0)) && extra=(--max 10000 --time-limit 120)
        say "bench: $name ${extra[*]}"
        timeout -k 5 300 "$b" ${extra[@]+"${extra[@]}"} --json-file "$LOGS/$name.json" 2>&1 |
            tee "$LOGS/$name.txt"
        rc=${PIPESTATUS[0]}
        bench_summary+="${bench_summary:+, }$name exit $rc"
    done
fi

# --- a baseline, for before/after figures of one run ---------------------------------
# When .baseline/ holds another version's source tree (git-ignored; e.g.
#   rm -rf .baseline && mkdir .baseline && git archive OLD | tar -x -C .baseline
# and carry it), its bench-context and bench-launch run alternately with this
# tree's, two rounds each, so that before and after come from one machine and
# one run (each binary still compares cuscope with the raw driver in its own
# process). The JSON lands beside the others as baseline-*.json.
baseline="none"
if has baseline && ! skipping baseline && [ -f .baseline/meson.build ] && [ "$built" = yes ]; then
    if timeout 300 meson setup /tmp/build-baseline .baseline --buildtype=release \
        -Dtests=disabled -Dexamples=false -Ddocs=disabled -Dkernel_archs=90 \
        >"$LOGS/baseline-setup.log" 2>&1 &&
        timeout 600 meson compile -C /tmp/build-baseline >>"$LOGS/baseline-setup.log" 2>&1; then
        baseline=""
        for round in $(seq 1 "${GPU_RUN_BASELINE_ROUNDS:-2}"); do
            for name in ${GPU_RUN_BASELINE_BENCH:-bench-context bench-launch}; do
                for side in baseline now; do
                    b=/tmp/build-baseline/bench/$name
                    [ "$side" = now ] && b=$BUILD/bench/$name
                    [ -x "$b" ] || continue
                    say "bench ($side, round $round): $name"
                    timeout -k 5 300 "$b" "${bench_args[@]}" --json-file "$LOGS/$side-$name-$round.json" 2>&1 |
                        tee "$LOGS/$side-$name-$round.txt"
                done
            done
        done
        baseline="built and run (baseline-*/now-* in the archive)"
    else
        baseline="build FAILED (baseline-setup.log)"
    fi
fi


# --- summary ------------------------------------------------------------------------
{
    echo "card:         $card"
    echo "driver:       $driver"
    echo "date:         $(date -u +%Y-%m-%dT%H:%MZ)"
    echo "build:        $built"
    echo "gpu suite:    $counts"
    echo "examples:     $examples (main job: sum, exit $main_rc)"
    echo "sanitizer:    $sanitized"
    echo "benchmarks:   $bench_summary"
    echo "baseline:     $baseline"
    echo "rules part:   $rules_part"
    # The headline figures of each benchmark's JSON: every row's ratio of
    # the medians (cuscope/raw), labelled.
    for j in "$LOGS"/*.json; do
        [ -f "$j" ] || continue
        echo "  $(basename "$j" .json):"
        if [ "$(basename "$j")" = bench-scale.json ]; then
            # curves, not rows: each series' growth exponents and its last ratio
            python3 - "$j" <<'PY' 2>/dev/null || echo "    (unreadable)"
import json, sys
d = json.load(open(sys.argv[1]))
for c in d["curves"]:
    for s in c["series"]:
        p = s["points"][-1] if s["points"] else None
        e = s["exponent"]
        fmt = lambda v: "-" if v is None else "%.2f" % v
        print("    %s %s: exponent raw %s, cuscope %s; at %s = %s ratio %s" % (
            c["name"], s["name"], fmt(e["raw"]), fmt(e["cuscope"]), c["size_name"],
            p["size"] if p else "-", fmt(p["ratio"]) if p else "-"))
PY
            continue
        fi
        grep -o '"label":"[^"]*","median":[0-9.]*[^}]*"ratio":{"of_medians":[0-9.]*' "$j" |
            sed 's/"label":"\([^"]*\)","median":\([0-9.]*\).*"of_medians":\([0-9.]*\)/    \1: \2 ns, ratio \3/' |
            head -12
    done
} | tee "$LOGS/summary.txt"
# The device tool brings back at most 8 files: everything in one archive, and
# the summary beside it.
if [ -n "$OUT" ]; then
    cp "$LOGS/summary.txt" "$OUT/summary.txt"
    for t in rules corpus; do
        [ -f "$LOGS/$t-gpu.txt" ] && cp "$LOGS/$t-gpu.txt" "$OUT/$t-gpu.txt"
    done
    [ -f "$LOGS/rules-gpu-part.txt" ] && cp "$LOGS/rules-gpu-part.txt" "$OUT/"
    tar -C "$(dirname "$LOGS")" -czf "$OUT/gpu-run.tar.gz" "$(basename "$LOGS")"
fi
exit $status
