#!/usr/bin/env python3
"""path_history.py OP[,OP...] DTYPE[,DTYPE...] COLS[,COLS...] VARIANT [COMMIT...]

Chapter 12's forced-path variants against its production dispatch, across the committed data runs:
for each commit (default: every commit that changed the H100's chapter 12 JSON, newest first) it
reads plots/data/h100-80gb-hbm3/ch12_production_softmax.json as committed there and prints, per op,
dtype and cols at rows = 49152, production's GB/s, VARIANT's GB/s and VARIANT's difference in
percent. A variant a run did not measure is left out. Nothing is measured here: it reads committed
benchmark JSON (the harness's medians), so that a dispatch rule can rest on several runs at once.
"""
import json
import subprocess
import sys

DATA = "plots/data/h100-80gb-hbm3/ch12_production_softmax.json"


def git(*args):
    return subprocess.run(["git", *args], capture_output=True, text=True, check=True).stdout


def gbps(benchmarks, name):
    for b in benchmarks:
        if b["name"] == name or b["name"].startswith(name + "/"):
            return b["bytes_per_second"] / 1e9
    return None


def main(argv):
    if len(argv) < 5:
        sys.exit(__doc__)
    ops, dtypes, cols, variant = argv[1].split(","), argv[2].split(","), argv[3].split(","), argv[4]
    commits = argv[5:] or git("log", "--format=%h", "--", DATA).split()
    print(f"| data commit | stamp | op | dtype | cols | production | {variant} | difference |")
    print("|---|---|---|---|---:|---:|---:|---:|")
    for c in commits:
        doc = json.loads(git("show", f"{c}:{DATA}"))
        stamp = doc.get("context", {}).get("git_commit", "?")[:7]
        for op in ops:
            for dt in dtypes:
                for n in cols:
                    shape = f"{dt}/rows:49152/cols:{n}"
                    p = gbps(doc["benchmarks"], f"{op}/production/{shape}")
                    v = gbps(doc["benchmarks"], f"{op}/{variant}/{shape}")
                    if p and v:
                        print(f"| {c} | {stamp} | {op} | {dt} | {n} | {p:.0f} | {v:.0f} | {100 * (v / p - 1):+.1f}% |")


if __name__ == "__main__":
    main(sys.argv)
