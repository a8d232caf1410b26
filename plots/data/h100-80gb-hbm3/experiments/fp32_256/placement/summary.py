#!/usr/bin/env python3
"""summary.py: the placement rounds (<who>_p<pad>_r<round>.json in this folder) as a Markdown table."""
import glob, json, os, re, statistics as st

here = os.path.dirname(os.path.abspath(__file__))
vals = {}
for f in glob.glob(os.path.join(here, "*_p*_r*.json")):
    who, pad, _ = re.match(r"(\w+)_p(\d+)_r(\d+)\.json", os.path.basename(f)).groups()
    for b in json.load(open(f))["benchmarks"]:
        vals.setdefault((b["name"].split("/")[0], who, int(pad)), []).append(b["bytes_per_second"] / 1e9)
pads = sorted({k[2] for k in vals})
print("GB/s at 49152 x 256 fp32: median (min-max) of the rounds, per pad (MB allocated before the k-th tensor: pad x k).")
print()
print("| op | who | " + " | ".join(f"pad {p}" for p in pads) + " |")
print("|---|---|" + "---:|" * len(pads))
for op in sorted({k[0] for k in vals}):
    for who in ("ours", "cudnn"):
        cells = [vals[(op, who, p)] for p in pads]
        print(f"| {op} | {who} | " + " | ".join(f"{st.median(x):.0f} ({min(x):.0f}-{max(x):.0f})" for x in cells) + " |")
