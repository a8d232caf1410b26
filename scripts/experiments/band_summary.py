#!/usr/bin/env python3
"""band_summary.py: the forward block-registers block-size sweep (block_regs/forward_16bit/band), one
line per (op, dtype, cols): each forced block size's median GB/s over the rounds, with its resident
blocks per SM and bytes of x in flight per SM by the rule's model (registers from the run's own
stderr, allocated in multiples of 8; 2048 threads, 64K registers, 32 blocks per SM), the rule's
choice (*) and the best (!), and the best against the rule.
Usage: band_summary.py band.tgz|DIR"""
import collections
import io
import json
import re
import statistics
import sys
import tarfile


def files(src):
    if src.endswith(".tgz"):
        with tarfile.open(src) as t:
            for m in t.getmembers():
                if m.isfile():
                    yield m.name, t.extractfile(m).read().decode()
    else:
        import pathlib
        for p in sorted(pathlib.Path(src).iterdir()):
            if p.is_file():
                yield p.name, p.read_text()


res = collections.defaultdict(list)
rule, regs = {}, {}
for name, text in files(sys.argv[1]):
    m = re.search(r"b(\d+)_c(\d+)_r(\d+)\.json$", name)
    if m:
        for x in json.loads(text)["benchmarks"]:
            if x.get("run_type") == "aggregate":
                continue
            op, _, ty = x["name"].split("/")[:3]
            res[(op, ty, int(m.group(2)), int(m.group(1)))].append(x["bytes_per_second"] / 1e9)
    elif re.search(r"stderr_r\d+\.txt$", name):
        for m in re.finditer(r"elem (\d) cols (\d+) rule (\d+) x \d+, launched (\d+) x \d+ \((\d+) reg", text):
            e, c, rb, lb, rg = map(int, m.groups())
            rule[(e, c)] = rb
            regs[(e, c, lb)] = rg


def resident(e, c, b):
    ra = (regs[(e, c, b)] + 7) // 8 * 8
    blocks = min(2048 // b, 65536 // (ra * b), 32)
    return blocks, blocks * c * e / 1024


print("| op | dtype | cols | rounds | best vs rule | block: GB/s (blocks per SM : KB in flight) |")
print("|---|---|---:|---:|---:|---|")
for op, ty, c in sorted({k[:3] for k in res}, key=lambda k: (k[1] != "f32", k[1], k[0], k[2])):
    e = 4 if ty == "f32" else 2
    med = {b: statistics.median(v) for (o, t, cc, b), v in res.items() if (o, t, cc) == (op, ty, c)}
    rb, best = rule[(e, c)], max(med, key=med.get)
    cells = []
    for b in sorted(med):
        n, kb = resident(e, c, b)
        mark = ("*" if b == rb else "") + ("!" if b == best else "")
        cells.append(f"{b}{mark}: {med[b]:.0f} ({n}:{kb:.0f})")
    rounds = len(res[(op, ty, c, rb)])
    print(f"| {op} | {ty} | {c} | {rounds} | {100 * (med[best] / med[rb] - 1):+.1f}% | {'; '.join(cells)} |")
