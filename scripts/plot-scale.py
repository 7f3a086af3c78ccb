#!/usr/bin/env python3
"""SVG plots of bench-scale's JSON (bench-scale --json FILE).

One file per curve, PREFIX-CURVE.svg: for each of the curve's series, the
time per item against the size on log-log axes, raw and cuscope (a flat line
is a cost that does not grow; the legend gives each side's growth exponent,
the least-squares slope of log total over log size), and under it the ratio
cuscope/raw against the size.

  plot-scale.py JSON [--out PREFIX] [--curve NAME ...] [--markdown]

  --out PREFIX  where the plots go (default: docs/plots/scale): PREFIX-capture-same.svg, ...
  --curve NAME  only these curves (repeatable)
  --markdown    no plots: the tables of docs/benchmarks.md on stdout instead
                (one per curve, "raw -> cuscope (ratio)" per series; needs no
                matplotlib)

Needs matplotlib (Debian/Ubuntu: apt-get install python3-matplotlib; that is
the system's python3, /usr/bin/python3, if another comes first on PATH). The
SVGs are reproducible: no date, fixed ids.
"""
import argparse
import json
import os
import sys


def load_matplotlib():
    try:
        import matplotlib
    except ImportError:
        sys.exit("plot-scale.py: matplotlib is missing for %s (%s): install it "
                 "(Debian/Ubuntu: apt-get install python3-matplotlib, then run this script "
                 "with /usr/bin/python3; or pip install matplotlib)"
                 % (sys.executable, sys.version.split()[0]))
    matplotlib.use("svg")
    matplotlib.rcParams.update({
        "svg.hashsalt": "cuscope-bench-scale",  # fixed ids: the same data, the same file
        "svg.fonttype": "none",                 # text stays text (small, greppable)
        "font.size": 9,
    })
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, LogLocator
    globals().update(FuncFormatter=FuncFormatter, LogLocator=LogLocator)
    return plt


def fmt_exp(v):
    return "-" if v is None else "%.2f" % v


def size_label(n):
    """10, 100, 1000, 1e4, 1e5; 2, 4, 16 as they are."""
    if n >= 10000 and str(n).rstrip("0") == "1":
        return "1e%d" % (len(str(n)) - 1)
    return str(n)


def size_ticks(ax, sizes):
    ax.set_xticks(sizes)
    ax.set_xticklabels([size_label(n) for n in sizes])
    ax.minorticks_off()


def plot_curve(plt, doc, c, path):
    series = [s for s in c["series"] if s["points"]]
    if not series:
        return False
    n = len(series)
    fig, axes = plt.subplots(2, n, figsize=(4.2 * n, 5.2), squeeze=False,
                             gridspec_kw={"height_ratios": [3, 1.4]})
    where = "the fake driver" if doc.get("fake") else doc.get("device", "?")
    fig.suptitle("%s: %s\n%s, driver API %d.%d, %s%s" % (
        c["name"], c["title"], where, doc["driver_version"] // 1000,
        doc["driver_version"] % 1000 // 10, doc.get("date", "?"),
        ", --quick" if doc.get("quick") else ""), fontsize=9)
    for i, s in enumerate(series):
        sizes = [p["size"] for p in s["points"]]
        raw = [p["raw_ns"] for p in s["points"]]
        cus = [p["cuscope_ns"] for p in s["points"]]
        ratio = [p["ratio"] for p in s["points"]]
        e = s["exponent"]
        ax = axes[0][i]
        ax.loglog(sizes, raw, "o-", color="#555555",
                  label="raw driver (exponent %s)" % fmt_exp(e["raw"]))
        ax.loglog(sizes, cus, "s-", color="#1f77b4",
                  label="cuscope (exponent %s)" % fmt_exp(e["cuscope"]))
        unit, _, detail = s["unit"].partition(" (")
        ax.set_title(s["name"] + ("\n(" + detail if detail else ""), fontsize=8)
        ax.set_ylabel(unit)
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: "%g" % v))
        ax.grid(True, which="major", alpha=0.3)
        size_ticks(ax, sizes)
        ax.legend(fontsize=8, loc="best")
        rx = axes[1][i]
        rx.semilogx(sizes, ratio, "d-", color="#d62728")
        rx.axhline(1.0, color="#888888", linewidth=0.8, linestyle="--")
        rx.set_xlabel(c["size_name"])
        rx.set_ylabel("cuscope / raw")
        if max(ratio) / max(min(ratio), 1e-9) > 20:
            rx.set_yscale("log")
        rx.grid(True, which="major", alpha=0.3)
        size_ticks(rx, sizes)
    notes = c.get("notes") or []
    if notes:
        fig.text(0.01, 0.005, "; ".join(notes), fontsize=7, color="#444444")
    fig.tight_layout(rect=(0, 0.03 if notes else 0, 1, 0.93))
    fig.savefig(path, metadata={"Date": None, "Creator": "scripts/plot-scale.py"})
    plt.close(fig)
    return True


def num(v):
    if v is None:
        return "-"
    a = abs(v)
    return "%.0f" % v if a >= 100 else "%.1f" % v if a >= 10 else "%.2f" % v


def markdown(doc, curves):
    out = []
    for c in curves:
        series = [s for s in c["series"] if s["points"]]
        if not series:
            continue
        out.append("#### `%s`: %s (%.1f s)\n" % (c["name"], c["title"], c.get("wall_s", 0)))
        out.append("| %s | %s |" % (c["size_name"], " | ".join(
            "%s, %s" % (s["name"], s["unit"].partition(" (")[0]) for s in series)))
        out.append("| ---: |%s" % (" --- |" * len(series)))
        sizes = [p["size"] for p in series[0]["points"]]
        for i, n in enumerate(sizes):
            cells = []
            for s in series:
                p = s["points"][i] if i < len(s["points"]) else None
                cells.append("%s → %s (%.2f)" % (num(p["raw_ns"]), num(p["cuscope_ns"]),
                                                  p["ratio"]) if p else "")
            out.append("| %s | %s |" % (size_label(n), " | ".join(cells)))
        out.append("| exponent | %s |" % " | ".join(
            "%s → %s (largest two: %s → %s)" % (
                fmt_exp(s["exponent"]["raw"]), fmt_exp(s["exponent"]["cuscope"]),
                fmt_exp(s["exponent"].get("raw_tail")),
                fmt_exp(s["exponent"].get("cuscope_tail"))) for s in series))
        for x in c.get("extra") or []:
            out.append("\n- %s: %s." % (x["name"], ", ".join(
                "%s = %s: %d" % (c["size_name"], size_label(v["size"]), v["value"])
                for v in x["values"])))
        for note in c.get("notes") or []:
            out.append("\n- note: %s." % note)
        out.append("")
    print("\n".join(out))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("json")
    ap.add_argument("--out", default="docs/plots/scale",
                    help="output prefix (default: docs/plots/scale)")
    ap.add_argument("--curve", action="append", help="only this curve (repeatable)")
    ap.add_argument("--markdown", action="store_true",
                    help="print markdown tables instead of plotting")
    a = ap.parse_args()
    try:
        with open(a.json) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit("plot-scale.py: %s: %s" % (a.json, e))
    if doc.get("bench") != "scale":
        sys.exit("plot-scale.py: %s is not bench-scale's JSON" % a.json)
    if a.markdown:
        markdown(doc, [c for c in doc["curves"] if not a.curve or c["name"] in a.curve])
        return
    plt = load_matplotlib()
    d = os.path.dirname(a.out)
    if d:
        os.makedirs(d, exist_ok=True)
    written = 0
    for c in doc["curves"]:
        if a.curve and c["name"] not in a.curve:
            continue
        path = "%s-%s.svg" % (a.out, c["name"])
        if plot_curve(plt, doc, c, path):
            print(path)
            written += 1
    if not written:
        sys.exit("plot-scale.py: no curve with points in %s" % a.json)


if __name__ == "__main__":
    main()
