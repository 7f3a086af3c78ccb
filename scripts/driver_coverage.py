#!/usr/bin/env python3
"""Which Driver API entry points cuscope calls, and which it leaves unwrapped.

    driver_coverage.py CUDA_H ENTRIES_H            prints the counts and the
                                                   unwrapped names
    driver_coverage.py CUDA_H ENTRIES_H COVERAGE_MD
                                                   checks docs/coverage.md:
                                                   every unwrapped entry point
                                                   of this toolkit is listed
                                                   under "## Not wrapped", and
                                                   nothing listed there is
                                                   wrapped; exits 1 otherwise

An entry point is a `CUresult CUDAAPI cuX(` declaration of cuda.h, named
without its ABI suffix (_v2 and the like); cuscope calls it when
lib/driver/entries.h has an X(cuX, ...) row. A name the document lists that
this toolkit lacks (an older toolkit) is not an error.
"""
import re
import sys


def declared(cuda_h):
    text = open(cuda_h, encoding="utf-8", errors="replace").read()
    names = set(re.findall(r"CUresult\s+CUDAAPI\s+(cu[A-Za-z0-9_]+)\s*\(", text))
    # cuX_v2, cuX_ptsz, cuX_v2_ptds: the same entry point.
    return {re.sub(r"(_v[0-9]+)?(_ptsz|_ptds)?$", "", n) for n in names}


def wrapped(entries_h):
    text = open(entries_h, encoding="utf-8").read()
    return set(re.findall(r"\bX\((cu[A-Za-z0-9_]+)\s*,", text))


def listed(coverage_md):
    """The names under the "## Not wrapped" heading: lines made only of
    names in backticks (the lists; prose that names a call is not one)."""
    names, inside = set(), False
    for line in open(coverage_md, encoding="utf-8"):
        if line.startswith("## "):
            inside = line.strip().lower().startswith("## not wrapped")
            continue
        found = re.findall(r"`(cu[A-Za-z0-9_]+)`", line)
        if inside and found and not re.sub(r"`cu[A-Za-z0-9_]+`", "", line).strip():
            names.update(found)
    return names


def main(argv):
    if len(argv) not in (3, 4):
        sys.stderr.write(__doc__)
        return 2
    every, have = declared(argv[1]), wrapped(argv[2])
    missing = sorted(every - have)
    if len(argv) == 3:
        print(f"{len(every & have)} of {len(every)} entry points of {argv[1]} are called; "
              f"{len(missing)} are not:")
        for n in missing:
            print(f"  {n}")
        return 0
    doc = listed(argv[3])
    bad = 0
    for n in missing:
        if n not in doc:
            print(f"{argv[3]}: {n} is not wrapped and not listed under '## Not wrapped'")
            bad = 1
    for n in sorted(doc & have):
        print(f"{argv[3]}: {n} is listed under '## Not wrapped' but entries.h calls it")
        bad = 1
    if not bad:
        print(f"{argv[3]}: the {len(missing)} unwrapped entry points of this toolkit are "
              f"listed ({len(every & have)} of {len(every)} are called)")
    return bad


if __name__ == "__main__":
    sys.exit(main(sys.argv))
