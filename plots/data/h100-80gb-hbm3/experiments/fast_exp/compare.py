#!/usr/bin/env python3
"""Median-of-rounds comparison of same-session A/B runs (chapter 12's fast exponential).

    compare.py DIR BASE OTHER [OTHER...] [--filter TEXT] [--min PCT]

DIR holds Google Benchmark JSON named <variant>_r<round>.json, written by the chapter's own
harness. Each benchmark prints BASE's median GB/s over its rounds and each OTHER's median as a
change from BASE's. --filter keeps names containing TEXT; --min keeps rows where some OTHER
moved by at least PCT percent either way.
"""
import argparse
import glob
import json
import os
import statistics


def load(path):
    with open(path) as f:
        data = json.load(f)
    return {b["name"].split("/iterations")[0]: b["bytes_per_second"] / 1e9
            for b in data["benchmarks"] if "bytes_per_second" in b}


def rounds(directory, variant):
    files = sorted(glob.glob(os.path.join(directory, f"{variant}_r*.json")))
    if not files:
        raise SystemExit(f"compare.py: no {variant}_r*.json in {directory}")
    return [load(f) for f in files]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir")
    ap.add_argument("base")
    ap.add_argument("others", nargs="+")
    ap.add_argument("--filter", default="")
    ap.add_argument("--min", type=float, default=0.0)
    a = ap.parse_args()
    base = rounds(a.dir, a.base)
    others = {v: rounds(a.dir, v) for v in a.others}
    print(f"| benchmark | {a.base} GB/s | " + " | ".join(others) + " |")
    print("|---|---:|" + "---:|" * len(others))
    for name in base[0]:
        if a.filter not in name or any(name not in r for rs in others.values() for r in rs):
            continue  # filtered out, or not timed by every variant
        b = statistics.median(r[name] for r in base)
        changes = [100 * (statistics.median(r[name] for r in rs) / b - 1) for rs in others.values()]
        if max(abs(c) for c in changes) < a.min:
            continue
        print(f"| {name} | {b:.0f} | " + " | ".join(f"{c:+.1f}%" for c in changes) + " |")


if __name__ == "__main__":
    main()
