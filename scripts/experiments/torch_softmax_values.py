#!/usr/bin/env python3
"""torch_softmax_values.py: which values slow PyTorch's softmax (experiments/input_fill).

PyTorch's softmax read up to 2.75x slower on the suite's outlier fill than on normal values, its
log-softmax not. A softmax divides each exp(x - max) by the row's sum; with one value in 61 scaled
by 20, most of those exponentials are tiny, many below the smallest normal float. Timed here, by
the course's method in short (a memset of 100 MB before each launch, one event pair, the median of
15 after 5 warm-ups): softmax and log-softmax on several fills, with the share of outputs under
FLT_MIN; then fp32 exp, division and multiplication on operands or results that are normal or
tiny. Usage: torch_softmax_values.py (prints a text report). Its output on the H100, and what it
shows: plots/data/h100-80gb-hbm3/experiments/input_fill/torch_values and ../NOTES.md."""
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "baselines"))
import torch_peers as tp  # noqa: E402  (the harness's fill)

FLT_MIN = 1.17549435e-38
dev = "cuda"
flush = torch.empty(100 << 20, dtype=torch.uint8, device=dev)
start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)


def timed(fn, n=15):
    for _ in range(5):
        flush.fill_(1)
        fn()
    t = []
    for i in range(n):
        flush.fill_(i & 255)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        t.append(start.elapsed_time(stop) * 1e3)
    return statistics.median(t)


print(torch.__version__, torch.cuda.get_device_name(0), f"GPU-{torch.cuda.get_device_properties(0).uuid}")
rows, cols = 128, 131072
for dt in (torch.float32, torch.float16):
    base = tp.harness_fill(torch, rows, cols, torch.float32, 1, False)
    fills = {"normal": base.to(dt), "outliers (the suite's)": tp.harness_fill(torch, rows, cols, dt, 1, True),
             "normal x 5": (base * 5).to(dt), "normal x 20": (base * 20).to(dt)}
    for name, x in fills.items():
        y = torch.softmax(x.float(), -1)
        under = (y < FLT_MIN).float().mean().item()
        sm = timed(lambda: torch.softmax(x, -1))
        lsm = timed(lambda: torch.log_softmax(x, -1))
        print(f"{str(dt):14s} {rows}x{cols} {name:24s} softmax {sm:8.1f} us  log_softmax {lsm:8.1f} us  "
              f"outputs under FLT_MIN {100 * under:5.1f}%")
n = 1 << 26
z = tp.harness_fill(torch, 1, n, torch.float32, 1, False).view(n)
b = torch.full_like(z, 3.0)
for name, v in {"normal": z, "z x 20 - 60 (many tiny results)": z * 20 - 60}.items():
    r = torch.exp(v)
    print(f"exp  fp32 2^26 {name:34s} {timed(lambda: torch.exp(v)):8.1f} us  results under FLT_MIN "
          f"{100 * (r < FLT_MIN).float().mean().item():5.1f}%")
for name, a in {"normal": torch.exp(z), "tiny (exp(z x 20 - 80))": torch.exp(z * 20 - 80)}.items():
    sub = ((a > 0) & (a < FLT_MIN)).float().mean().item()
    print(f"div  fp32 2^26 a / 3, a {name:26s} {timed(lambda: a / b):8.1f} us   mul a * 3 {timed(lambda: a * b):8.1f} us  "
          f"a subnormal {100 * sub:5.1f}%")
