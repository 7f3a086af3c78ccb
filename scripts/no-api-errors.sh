#!/bin/sh
# no-api-errors.sh PROGRAM [ARGS...]: runs a correct program with the
# driver-call trace on failures only (CUSCOPE_TRACE=errors:FILE) and fails if
# any driver call it made failed. On the fake this mirrors what
# compute-sanitizer reports as API errors on a GPU: a correct program must
# make none (not even the probe one past a kernel's last parameter).
set -eu
log=$(mktemp)
trap 'rm -f "$log"' EXIT
CUSCOPE_TRACE="errors:$log" "$@" >/dev/null
failed=$(grep -v '^cuscope-trace: tracing' "$log" || true)
if [ -n "$failed" ]; then
    echo "$1: driver calls that failed:"
    echo "$failed"
    exit 1
fi
echo "$(basename "$1"): no driver call failed"
