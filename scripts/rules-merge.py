#!/usr/bin/env python3
"""Merges the rows of a partial rules table (gpu-rules --only ... --write PART)
into the checked-in one: each row of PART whose cells all ran (no `?`)
replaces the row of the same name in TABLE, or is added; the other rows and
TABLE's header comments stay. Prints what changed, cell by cell.

    scripts/rules-merge.py PART test/rules/expected.txt
"""
import sys


def rows(path):
    out = {}
    for line in open(path):
        if line.startswith("cu"):
            out[line.split()[0]] = line.rstrip("\n")
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    part, table = sys.argv[1:]
    new = {k: v for k, v in rows(part).items() if "=?" not in v}
    lines = open(table).read().splitlines()
    seen, changed = set(), 0
    for i, line in enumerate(lines):
        name = line.split()[0] if line.startswith("cu") else None
        if name in new:
            seen.add(name)
            if line != new[name]:
                old_cells = dict(c.split("=", 1) for c in line.split()[1:])
                for c in new[name].split()[1:]:
                    k, v = c.split("=", 1)
                    if old_cells.get(k) != v:
                        print(f"{name} {k}: {old_cells.get(k)} -> {v}")
                        changed += 1
                lines[i] = new[name]
    for name in sorted(set(new) - seen):
        print(f"{name}: added")
        lines.append(new[name])
    open(table, "w").write("\n".join(lines) + "\n")
    print(f"{len(new)} rows merged, {changed} cells changed, {len(set(new) - seen)} rows added")


if __name__ == "__main__":
    main()
