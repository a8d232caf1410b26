#!/usr/bin/env python3
"""Tables of the placement experiment, from its JSON (see NOTES.md).

    python3 summarize.py [FOLDER...]     (default: every numbered folder here)

Each folder holds <variant>_r<round>.json, one process each, written by the course's harness
(Google Benchmark JSON). For each variant, the benchmarks are numbered in the order the process
ran them (1 is the first benchmark of the process; repetitions count separately), and each
(variant, position, benchmark) prints the median GB/s over the rounds, the lowest and highest
round, and the number of rounds.
"""
import glob
import json
import os
import re
import statistics
import sys
from collections import defaultdict


def table(folder):
    acc = defaultdict(list)
    order = []
    for f in sorted(glob.glob(os.path.join(folder, "*_r*.json"))):
        m = re.match(r"(.+)_r(\d+)\.json$", os.path.basename(f))
        if not m:
            continue
        with open(f) as fh:
            runs = [b for b in json.load(fh)["benchmarks"] if b.get("run_type") != "aggregate"]
        for pos, b in enumerate(runs, 1):
            key = (m.group(1), pos, re.sub(r"/(iterations|repeats|manual_time).*", "", b["name"]))
            if key not in acc:
                order.append(key)
            acc[key].append(b["bytes_per_second"] / 1e9)
    lines = [f"### {os.path.basename(folder.rstrip('/'))}", "",
             "| variant | position | benchmark | GB/s (median) | lowest-highest | rounds |",
             "|---|---:|---|---:|---|---:|"]
    for key in sorted(order, key=lambda k: (k[0], k[1])):
        v = acc[key]
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {statistics.median(v):.0f} | {min(v):.0f}-{max(v):.0f} | {len(v)} |")
    return "\n".join(lines) + "\n"


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    folders = sys.argv[1:] or sorted(d for d in glob.glob(os.path.join(here, "[0-9]_*")) if os.path.isdir(d))
    print("\n".join(table(f) for f in folders))


if __name__ == "__main__":
    main()
