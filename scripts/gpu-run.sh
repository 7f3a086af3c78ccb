#!/usr/bin/env bash
# The one script to run on the GPU machine (through the remote device tool, which
# copies the working tree there; carry .deps so that cmocka comes along):
#   bash scripts/gpu-run.sh
#
# That machine has nvcc, meson, ninja and gcc but no cmocka and no network, so
# cmocka comes from the Debian packages in .deps/ (git-ignored; fill it with
#   mkdir -p .deps && cd .deps && apt-get download libcmocka0 libcmocka-dev).
# Builds build-gpu/ (release), runs the gpu suite, the device query and any
# benchmark in build-gpu/bench/, copies logs and outputs to $OUT when it is set,
# and ends with a summary. Every run is under `timeout`. Exit status: 0 when the
# build, the gpu suite and the device query all succeeded.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

BUILD=build-gpu
PREFIX=/tmp/cmocka
OUT=${OUT:-}
[ -n "$OUT" ] && mkdir -p "$OUT"
status=0

say() { echo "::: $*"; }
save() { [ -n "$OUT" ] && cp "$@" "$OUT/" 2>/dev/null; return 0; }

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

# --- the gpu suite ------------------------------------------------------------------
counts="not run"
if [ "$built" = yes ]; then
    say "meson test --suite gpu"
    timeout -k 10 900 meson test -C "$BUILD" --suite gpu --print-errorlogs 2>&1 |
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

# --- the main job: the device query ----------------------------------------------------
main_rc="not run"
if [ -x "$BUILD/docs/examples/device-query" ]; then
    say "device-query"
    timeout -k 5 60 "$BUILD/docs/examples/device-query" 2>&1 | tee /tmp/device-query.txt
    main_rc=${PIPESTATUS[0]}
    [ "$main_rc" = 0 ] || status=1
    save /tmp/device-query.txt
elif [ "$built" = yes ]; then
    say "device-query was not built (examples or fake disabled)"
    status=1
fi

# --- benchmarks ---------------------------------------------------------------------
benches=()
if [ -d "$BUILD/bench" ]; then
    while IFS= read -r b; do benches+=("$b"); done < <(
        find "$BUILD/bench" -maxdepth 1 -type f -executable ! -name '*.so*' | sort)
fi
bench_summary=none
if ((${#benches[@]})); then
    bench_summary=""
    for b in "${benches[@]}"; do
        name=$(basename "$b")
        say "bench: $name"
        timeout -k 5 300 "$b" 2>&1 | tee "/tmp/$name.txt"
        rc=${PIPESTATUS[0]}
        bench_summary+="${bench_summary:+, }$name exit $rc"
        save "/tmp/$name.txt"
    done
fi

# --- summary ------------------------------------------------------------------------
{
    echo "card:         $card"
    echo "driver:       $driver"
    echo "build:        $built"
    echo "gpu suite:    $counts"
    echo "device-query: exit $main_rc"
    echo "benchmarks:   $bench_summary"
} | tee /tmp/gpu-run-summary.txt
save /tmp/gpu-run-summary.txt
exit $status
