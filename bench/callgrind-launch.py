#!/usr/bin/env python3
"""Counts cuscope's own instructions per launch with callgrind.

Runs bench-launch under valgrind --tool=callgrind once per timed loop body
(--toggle-collect=<body>: each variant is one function) and sums the
instructions executed in the benchmark itself and in libcuscope, leaving out
the driver's (the fake's, or libcuda's) and libc's. The raw body's count is
what the caller spends on a raw launch (building the argument array, the
call); the cuscope body's is the same plus everything cuscope adds; the
difference per launch is cuscope's own cost, the caller's argument packing
included. Counting by object, not inclusively, keeps the driver's own
variation (allocation, queue growth) out of the figure.

usage: bench/callgrind-launch.py BUILD_DIR [--blocks B] [--iters I]

The launch counts follow bench/launch.c: every body runs a warm-up of I calls
and B blocks of I calls per run; the 0/1/16-argument bodies run twice (the
back-to-back run and the single-call run, with a clock read per call in the
latter, on both sides alike), the others once.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

PAIRS = [
    # (what, raw body, cuscope body, runs)
    ("fast path, 0 args", "loop_raw_launch0", "loop_cus_launch0", 2),
    ("fast path, 1 arg", "loop_raw_launch1", "loop_cus_launch1", 2),
    ("fast path, 16 mixed args (cus_launch, checked)", "loop_raw_launch16", "loop_cus_launch16", 2),
    ("slow path, 0 args (push/launch/pop)", "loop_raw_switched0", "loop_cus_switched0", 1),
    ("round trip, 0 args (launch + synchronize)", "loop_raw_roundtrip0", "loop_cus_roundtrip0", 1),
]
# cus_function_launch over a prebuilt array, against a raw launch over the
# same array.
SINGLE = [
    ("cus_function_launch, 16, sizes given", "loop_cus_fl16_checked"),
    ("cus_function_launch, 16, sizes=NULL", "loop_cus_fl16_unchecked"),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--blocks", type=int, default=5)
    ap.add_argument("--iters", type=int, default=1000)
    a = ap.parse_args()
    exe = os.path.join(a.build, "bench", "bench-launch")
    bodies = set()
    for _, raw, cus, _ in PAIRS:
        bodies |= {raw, cus}
    bodies |= {"loop_raw_launch16_prebuilt"} | {b for _, b in SINGLE}
    ir = {}
    with tempfile.TemporaryDirectory() as tmp:
        for body in sorted(bodies):
            out = os.path.join(tmp, body + ".out")
            subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out,
                            "--toggle-collect=" + body, exe, "--blocks", str(a.blocks),
                            "--iters", str(a.iters)],
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            text = subprocess.run(["callgrind_annotate", "--inclusive=no", "--threshold=100",
                                   out], check=True, capture_output=True, text=True).stdout
            total = 0
            for line in text.splitlines():
                m = re.match(r"\s*([\d,]+)\s+\([^)]*\)\s+\S*\s+\[(.*)\]\s*$", line)
                if m and re.search(r"/bench-launch$|/libcuscope\.so[.0-9]*$", m.group(2)):
                    total += int(m.group(1).replace(",", ""))
            ir[body] = total
    per_run = (a.blocks + 1) * a.iters

    def per_launch(body, runs):
        return ir[body] / (runs * per_run)

    print(f"callgrind, Ir per launch ({a.blocks} blocks of {a.iters} + a warm-up, per run)")
    print(f"  {'':52} {'raw':>9} {'cuscope':>9} {'cuscope own':>12}")
    for what, raw, cus, runs in PAIRS:
        r, c = per_launch(raw, runs), per_launch(cus, runs)
        print(f"  {what:52} {r:9.1f} {c:9.1f} {c - r:12.1f}")
    r16 = per_launch("loop_raw_launch16_prebuilt", 1)
    for what, body in SINGLE:
        c = per_launch(body, 1)
        print(f"  {what:52} {r16:9.1f} {c:9.1f} {c - r16:12.1f}")
    check = per_launch("loop_cus_fl16_checked", 1) - per_launch("loop_cus_fl16_unchecked", 1)
    print(f"  argument check of 16 parameters (sizes given - sizes=NULL): {check:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
