#!/usr/bin/env python3
"""peer_rounds.py DIR [OURS:PEER,PEER ...]: the rounds of peer_rounds.sh, per point: each side's
median GB/s over the rounds, ours against the best peer's, and in how many rounds ours was at or
above every peer of that round. A point is a benchmark name without its kernel
(op/dtype/rows/cols). Files are <who>_r<round>.json; each OURS:PEERS argument names a group (by
default peer_rounds.sh's two: ours12:cudnn,torch12 and ours11:torch11)."""
import glob
import json
import os
import re
import statistics
import sys

GROUPS = {"ours12": ("cudnn", "torch12"), "ours11": ("torch11",)}


def load(path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, json.JSONDecodeError):  # a round cut short: its file is skipped
        return {}, None
    out = {}
    for b in doc["benchmarks"]:
        if "bytes_per_second" not in b:
            continue
        op, _kernel, rest = b["name"].split("/iterations")[0].split("/", 2)
        out[f"{op}/{rest}"] = b["bytes_per_second"] / 1e9
    return out, doc.get("context", {}).get("git_commit", "?")[:7]


def rounds(directory, who):
    by = {}
    for f in glob.glob(os.path.join(directory, f"{who}_r*.json")):
        data = load(f)[0]
        if data:
            by[int(re.search(r"_r(\d+)\.json$", f).group(1))] = data
    return by


def main(directory, groups):
    stamps = {load(f)[1] for f in glob.glob(os.path.join(directory, "*_r*.json"))} - {None}
    print(f"Rounds in {directory} (commits {', '.join(sorted(stamps))}); GB/s medians over the rounds.\n")
    print("| point | rounds | ours | best peer | ours vs best peer | rounds ours >= every peer |")
    print("|---|---:|---:|---|---:|---:|")
    for ours_name, peer_names in groups.items():
        ours = rounds(directory, ours_name)
        peers = {p: rounds(directory, p) for p in peer_names}
        common = sorted(set(ours).intersection(*[set(v) for v in peers.values()]))
        if not common:
            continue
        for point in sorted(ours[common[0]]):
            have = [r for r in common if point in ours[r] and any(point in peers[p][r] for p in peers)]
            if not have:
                continue
            o = statistics.median(ours[r][point] for r in have)
            meds = {p.rstrip("0123456789"): statistics.median(peers[p][r][point] for r in have if point in peers[p][r])
                    for p in peers if any(point in peers[p][r] for r in have)}
            top = max(meds, key=meds.get)
            wins = sum(1 for r in have if all(ours[r][point] >= peers[p][r][point] for p in peers if point in peers[p][r]))
            print(f"| {point} | {len(have)} | {o:.0f} | {top} {meds[top]:.0f} | {100 * (o / meds[top] - 1):+.1f}% | "
                  f"{wins} of {len(have)} |")


if __name__ == "__main__":
    if len(sys.argv) < 2 or any(":" not in g for g in sys.argv[2:]):
        sys.exit(__doc__)
    groups = {g.split(":")[0]: tuple(g.split(":")[1].split(",")) for g in sys.argv[2:]} or GROUPS
    main(sys.argv[1], groups)
