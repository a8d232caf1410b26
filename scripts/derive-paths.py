#!/usr/bin/env python3
"""Re-derives the production softmax's path rules (chapters 12-14, policy.h) from a GPU's measurements.

Every path of the dispatch is also a forced-path benchmark variant (softmax/warp, softmax/smem, ...
in chapter 12; tile and cluster in chapter 13; the backward's in chapter 14), timed at the sweeps'
shapes. For each shape the dispatch chose a path (`bin/ch14_softmax_backward --paths FILE` writes
the choices for every shape of the sweeps on that GPU). This script sets the two side by side:

  - per op, dtype and row count, the path at each column count that the measurements would choose
    (the policy's, unless another forced path read faster by more than the margin), and the bands
    they form;
  - every shape where the policy's choice reads less than (100 - margin)% of the fastest path,
    with both figures: where policy.h's thresholds do not fit this GPU.

Only the sweeps' column counts are measured, so a band's edges are known to within the gap between
two measured widths; the TUNING.md rows say which narrower runs set each threshold. scale_mask_softmax
has no forced-path variants and is left out.

Usage: derive-paths.py [--data DIR] [--margin PCT]
  DIR: a folder with ch12_production_softmax.json, ch13_hopper_softmax.json, ch14_softmax_backward.json
  and ch14_softmax_backward.paths.json (default: the one folder under plots/data/, else name it;
  `make ch12 ch13 ch14` writes them for your GPU, the last through `bin/ch14_softmax_backward --paths`).
  PCT: the noise allowed before a choice counts as a miss (default 3).
Exit 0 with the report, 2 when a file is missing or unreadable.
"""
import argparse
import json
import os
import re
import sys

CHAPTERS = ("ch12_production_softmax", "ch13_hopper_softmax", "ch14_softmax_backward")
PATHS_FILE = "ch14_softmax_backward.paths.json"
OPS = ("softmax", "log_softmax", "softmax_backward", "log_softmax_backward")
FORCED = ("warp", "tile", "block_regs", "smem", "cluster", "uncached")  # the dispatch's paths
NAME = re.compile(r"^([a-z_]+)/([a-z0-9_]+)/(f32|f16|bf16)/rows:(\d+)/cols:(\d+)")


def load_measurements(folder):
    """{(op, path, dtype, rows, cols): bytes_per_second} of the forced-path variants."""
    out = {}
    for ch in CHAPTERS:
        with open(os.path.join(folder, ch + ".json")) as f:
            data = json.load(f)
        for b in data.get("benchmarks", []):
            if b.get("run_type", "iteration") != "iteration" or "bytes_per_second" not in b:
                continue
            m = NAME.match(b["name"])
            if m and m[1] in OPS and m[2] in FORCED:
                out[(m[1], m[2], m[3], int(m[4]), int(m[5]))] = float(b["bytes_per_second"])
    return out


def bands(points):
    """[(path, first cols, last cols)] of consecutive column counts with the same fastest path."""
    out = []
    for cols, path in points:
        if out and out[-1][0] == path:
            out[-1] = (path, out[-1][1], cols)
        else:
            out.append((path, cols, cols))
    return out


def derive(measured, choices, margin):
    """The report's lines, and the number of shapes where the choice reads under 100 - margin %."""
    groups = {}
    for c in choices:
        if c["op"] in OPS:
            groups.setdefault((c["op"], c["dtype"], int(c["rows"])), []).append((int(c["cols"]), c["path"]))
    lines, misses, compared = [], [], 0
    for (op, dt, rows), shapes in sorted(groups.items(), key=lambda g: (OPS.index(g[0][0]), g[0][1], g[0][2])):
        fastest = []
        for cols, chosen in sorted(shapes):
            timed = {p: measured[(op, p, dt, rows, cols)] for p in FORCED if (op, p, dt, rows, cols) in measured}
            if not timed:
                continue
            best = max(timed, key=timed.get)
            ratio = 100.0 * timed[chosen] / timed[best] if chosen in timed else 0.0
            # Within the noise the policy's path stands: two paths a percent apart swap places
            # from run to run, and a band edge drawn through them would be noise.
            fastest.append((cols, chosen if ratio >= 100.0 - margin else best))
            if chosen in timed:
                compared += 1
                if ratio < 100.0 - margin:
                    misses.append(f"  {op} {dt} {rows} x {cols}: policy {chosen} {timed[chosen] / 1e9:.0f} GB/s, "
                                  f"{best} {timed[best] / 1e9:.0f} GB/s ({ratio:.1f}%)")
        if fastest:
            text = " | ".join(f"{p} {a}" + (f"-{b}" if b != a else "") for p, a, b in bands(fastest))
            lines.append(f"  {op:21s} {dt:4s} rows {rows:>6}: {text}")
    report = [f"The path by column count that this GPU's measurements would choose (the policy's, unless another "
              f"forced path read more than {margin:g}% faster):"] + lines
    report += ["", f"Shapes where the policy's path reads under {100 - margin:g}% of the fastest "
               f"({len(misses)} of {compared} compared):"] + (misses or ["  none"])
    return report, len(misses)


def default_folder(root):
    base = os.path.join(root, "plots", "data")
    found = [d for d in sorted(os.listdir(base)) if os.path.exists(os.path.join(base, d, PATHS_FILE))]
    if len(found) != 1:
        raise FileNotFoundError(f"{len(found)} folders under {base} have {PATHS_FILE}: name one with --data")
    return os.path.join(base, found[0])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", help="the folder of one GPU's JSON (default: the one under plots/data/)")
    ap.add_argument("--margin", type=float, default=3.0, help="percent of noise allowed (default 3)")
    args = ap.parse_args(argv)
    if not 0 <= args.margin < 100:
        print("--margin must be in [0, 100)", file=sys.stderr)
        return 2
    try:
        folder = args.data or default_folder(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        measured = load_measurements(folder)
        with open(os.path.join(folder, PATHS_FILE)) as f:
            paths = json.load(f)
    except (OSError, ValueError) as e:
        print(f"derive-paths.py: {e}", file=sys.stderr)
        return 2
    print(f"{paths.get('gpu_name', '?')} ({folder}): {paths.get('sm_count', '?')} SMs, "
          f"{paths.get('smem_per_block_optin', '?')} bytes of shared memory per block")
    report, _ = derive(measured, paths.get("paths", []), args.margin)
    print("\n".join(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
