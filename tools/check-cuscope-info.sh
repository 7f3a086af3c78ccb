#!/bin/sh
# The checks of cuscope-info's interface (tools/meson.build):
#   check-cuscope-info.sh TOOL driver  the real driver: 0 with a GPU, 3 without
#                                      a driver, 4 with one but no device
#   check-cuscope-info.sh TOOL fake    --fake and --fake --json: 0, valid JSON
#   check-cuscope-info.sh TOOL flags   --help, -h, --version: 0 on stdout;
#                                      an unknown flag: 2, usage on stderr
set -u
tool=$1
what=$2
out=$(mktemp)
err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
fail() { echo "check-cuscope-info: $*"; echo "--- stdout"; cat "$out"; echo "--- stderr"; cat "$err"; exit 1; }

case $what in
driver)
    "$tool" > "$out" 2> "$err"
    rc=$?
    case $rc in
    0) grep -q "CUDA driver" "$out" || fail "exit 0 without the driver's line" ;;
    3) grep -q "no CUDA driver" "$err" || fail "exit 3 without saying so" ;;
    4) grep -q "no CUDA device" "$err" || fail "exit 4 without saying so" ;;
    *) fail "exit $rc (want 0, 3 or 4)" ;;
    esac
    echo "cuscope-info: exit $rc"
    ;;
fake)
    "$tool" --fake > "$out" 2> "$err" || fail "--fake: exit $?"
    grep -q "fake driver" "$out" || fail "--fake does not say it shows the fake"
    "$tool" --fake --json > "$out" 2> "$err" || fail "--fake --json: exit $?"
    if command -v python3 > /dev/null; then
        python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["driver"] == "fake" and d["devices"], d' "$out" \
            || fail "--fake --json is not the JSON expected"
    fi
    ;;
flags)
    for f in --help -h; do
        "$tool" $f > "$out" 2> "$err" || fail "$f: exit $?"
        grep -q "^usage: cuscope-info" "$out" || fail "$f: no usage on stdout"
    done
    "$tool" --version > "$out" 2> "$err" || fail "--version: exit $?"
    grep -q "^cuscope-info (cuscope [0-9]" "$out" || fail "--version: no version"
    "$tool" --bogus > "$out" 2> "$err"
    rc=$?
    [ $rc -eq 2 ] || fail "--bogus: exit $rc (want 2)"
    grep -q "usage: cuscope-info" "$err" || fail "--bogus: no usage on stderr"
    ;;
*)
    echo "usage: $0 TOOL driver|fake|flags"
    exit 2
    ;;
esac
exit 0
