#!/usr/bin/env python3
"""fill_compare.py: two data runs of the same commit's kernels, one timed on --input-fill outliers
and one on --input-fill normal (experiments/input_fill). For each result file and (op, kernel,
dtype): the median over the shapes of normal / outliers GB/s, its range, and the shapes that moved
by more than a threshold, largest first. Shapes whose timed launches spread by more than
--noisy PERCENT (10th to 90th percentile, of the median) in either run are left out and counted:
those are disturbed measurements (PyTorch's several small kernels at a few MB), not values. The two
runs' boards and copy lines are printed first: two boards of one model can read a short kernel 1-2%
apart, so only changes well past that say anything about the values.
Usage: fill_compare.py OUTLIERS.tgz NORMAL.tgz [--over PERCENT] [--noisy PERCENT]   (5 and 10)"""
import collections
import json
import statistics
import sys
import os
import tarfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from plot import input_fill  # noqa: E402  (the fill a result's context names)


def load(path):
    runs = {}
    with tarfile.open(path) as t:
        for m in t.getmembers():
            if m.isfile() and m.name.endswith(".json"):
                d = json.load(t.extractfile(m))
                name = m.name.rsplit("/", 1)[-1][:-5]
                runs[name] = (d["context"], {b["name"].split("/iterations")[0]: (b["bytes_per_second"], b["spread_pct"])
                                             for b in d["benchmarks"] if "bytes_per_second" in b})
    return runs


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    over = float(argv[argv.index("--over") + 1]) if "--over" in argv else 5.0
    noisy = float(argv[argv.index("--noisy") + 1]) if "--noisy" in argv else 10.0
    a, b = load(argv[1]), load(argv[2])
    out = ["| file | board (outliers / normal) | input_fill (outliers / normal) | copy line GB/s (outliers / normal) |",
           "|---|---|---|---:|"]
    for f in sorted(set(a) & set(b)):
        ca, cb = a[f][0], b[f][0]
        out.append(f"| {f} | {ca.get('gpu_uuid', '?')[:12]} / {cb.get('gpu_uuid', '?')[:12]} | "
                   f"{input_fill(ca)} / {input_fill(cb)} | "
                   f"{float(ca['copy_bytes_per_second']) / 1e9:.0f} / {float(cb['copy_bytes_per_second']) / 1e9:.0f} |")
    out += ["", f"Normal against outliers, GB/s ratio in percent (+: faster on normal values). Shapes past "
                f"{over:g}%: the largest five.", "",
            "| file | op/kernel/dtype | shapes | left out (noisy) | median | min | max | past the threshold |",
            "|---|---|---:|---:|---:|---:|---:|---|"]
    for f in sorted(set(a) & set(b)):
        groups = collections.defaultdict(list)
        dropped = collections.Counter()
        for name, (bps, spread) in b[f][1].items():
            if name in a[f][1]:
                op, kernel, dtype, rows, cols = name.split("/")
                g = f"{op}/{kernel}/{dtype}"
                if max(spread, a[f][1][name][1]) > noisy:
                    dropped[g] += 1
                    continue
                groups[g].append((100.0 * (bps / a[f][1][name][0] - 1), f"{rows[5:]}x{cols[5:]}"))
        for g in sorted(set(groups) | set(dropped)):
            r = sorted(groups[g])
            if not r:
                out.append(f"| {f} | {g} | 0 | {dropped[g]} | | | | |")
                continue
            big = sorted((x for x in r if abs(x[0]) > over), key=lambda x: -abs(x[0]))[:5]
            out.append(f"| {f} | {g} | {len(r)} | {dropped[g]} | {statistics.median(x[0] for x in r):+.1f} | "
                       f"{r[0][0]:+.1f} | {r[-1][0]:+.1f} | {', '.join(f'{s} {x:+.0f}%' for x, s in big)} |")
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
