#!/bin/sh
# fuzz-run.sh FUZZER CORPUS WORKDIR SECONDS DICT [SEED...]: one bounded libFuzzer
# run (the fuzz suite). The checked-in CORPUS is copied, less its reproducers
# (crash-*, ...), into WORKDIR/corpus together with the SEED files (nvcc's
# outputs), so the run adds to that writable copy and never to the source
# tree; what it finds goes to WORKDIR/artifacts/. WORKDIR/corpus is kept, so
# later runs start from what earlier ones found.
set -eu
fuzzer=$1 src=$2 work=$3 seconds=$4 dict=$5
shift 5
mkdir -p "$work/corpus" "$work/artifacts"
for f in "$src"/* "$@"; do
    [ -f "$f" ] || continue
    case ${f##*/} in
    crash-* | leak-* | oom-* | timeout-* | slow-unit-*) ;;
    *) cp "$f" "$work/corpus/" ;;
    esac
done
exec "$fuzzer" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -dict="$dict" \
    -artifact_prefix="$work/artifacts/" -print_final_stats=1 "$work/corpus"
