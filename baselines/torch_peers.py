#!/usr/bin/env python3
"""The PyTorch peer: eager PyTorch timed by the course's method, written in the harness's JSON.

For each launch: the L2 flushed by a memset of twice its size (outside the timed region), one
CUDA event pair around the call alone; flushed warm-ups (at least 10, and for at least 50 ms, as
the harness: COURSE_WARMUP_MS overrides the time), then the median of 25 timed calls.
Bandwidth is the course's bytes model (common/course/ops.cpp) over the median, and a percentage of
a 4 GiB device-to-device copy measured in the same process. Benchmark names follow the harness:
op/torch/dtype/rows:R/cols:C.

Backward: torch._softmax_backward_data / torch._log_softmax_backward_data (what autograd calls),
three tensors moved. scale_mask_softmax: the eager expression softmax((x * 1.7).masked_fill(mask,
-inf)), several kernels, timed as one call.

Usage: torch_peers.py [--quick] [--filter REGEX] --out FILE.json    (exit 77 when PyTorch or a GPU
is missing). --filter runs only the benchmarks whose name REGEX matches (re.search), as Google
Benchmark's --benchmark_filter does for the harness.
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import time

WARMUP, ITERS = 10, 25
WARMUP_MS = 50.0  # the harness's kWarmupMs (common/course/bench.cu)
STANDARD = ([49152], [32, 64, 128, 256, 512, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 32768])
LONG = ([128], [2048, 8192, 32768, 131072, 524288, 2097152, 4194304])
FLAT = ([1], [1 << 20, 1 << 24, 1 << 28])
QUICK = ([49152], [128, 1024, 4096])


def slug(name):
    s = name.lower()
    for drop in ("nvidia ", "geforce ", "tesla "):
        s = s.replace(drop, "")
    s = re.sub(r"[^a-z0-9]+", "-", s).strip("-")
    return s or "unknown-gpu"


def git_commit():
    env = os.environ.get("COURSE_GIT_COMMIT")
    if env:
        return env if re.fullmatch(r"[0-9a-f]{7,64}(-dirty)?", env) else f"unknown (COURSE_GIT_COMMIT='{env[:40]}' is not a commit)"
    try:
        here = os.path.dirname(os.path.abspath(__file__))
        c = subprocess.run(["git", "-C", here, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
        return c if re.fullmatch(r"[0-9a-f]{40}", c) else "unknown (no git repository and no COURSE_GIT_COMMIT)"
    except OSError:
        return "unknown (no git)"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--filter", default="", help="run only the benchmarks whose name this regex matches")
    args = ap.parse_args()
    try:
        selected = re.compile(args.filter)
    except re.error as e:
        print(f"--filter: not a regular expression: {e}", file=sys.stderr)
        return 2
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        print("SKIPPED: PyTorch is not installed here: the PyTorch peer is not run")
        return 77
    if not torch.cuda.is_available():
        print("SKIPPED: PyTorch sees no CUDA GPU: the PyTorch peer is not run")
        return 77
    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(0)
    l2 = getattr(props, "L2_cache_size", 50 << 20)
    flush_buf = torch.empty(2 * l2, dtype=torch.uint8, device=dev)
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    flush_value = [0]

    def timed(fn):
        flush_value[0] = (flush_value[0] + 1) % 256
        flush_buf.fill_(flush_value[0])  # a memset, as the harness's L2Flusher
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        return start.elapsed_time(stop) * 1e-3

    env_ms = os.environ.get("COURSE_WARMUP_MS", "")
    try:
        warmup_s = (float(env_ms) if env_ms else WARMUP_MS) * 1e-3
    except ValueError:
        warmup_s = -1.0
    if not 0 <= warmup_s <= 60:
        print(f"COURSE_WARMUP_MS must be a number of milliseconds in [0, 60000], got '{env_ms}'", file=sys.stderr)
        return 2

    def measure(fn, iters):
        t0, n = time.perf_counter(), 0
        while n < WARMUP or time.perf_counter() - t0 < warmup_s:  # as the harness's EventPair::warm_up
            timed(fn)
            n += 1
        t = sorted(timed(fn) for _ in range(iters))
        med = t[len(t) // 2] if len(t) % 2 else 0.5 * (t[len(t) // 2 - 1] + t[len(t) // 2])
        q = lambda p: t[min(len(t) - 1, max(0, int(round(p * (len(t) - 1)))))]
        return med, t[0], t[-1], q(0.9) - q(0.1)

    iters = 10 if args.quick else ITERS
    free, _ = torch.cuda.mem_get_info()
    copy_bytes = min(4 << 30, free // 4) & ~4095
    a = torch.empty(copy_bytes, dtype=torch.uint8, device=dev).fill_(1)
    b = torch.empty_like(a)
    copy_med = measure(lambda: b.copy_(a), ITERS)[0]
    copy_bps = 2.0 * copy_bytes / copy_med
    del a, b
    print(f"copy line: {copy_bps / 1e9:.0f} GB/s (torch copy_ of {copy_bytes / 1e9:.1f} GB)")

    dtypes = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
    size = {"f32": 4, "f16": 2, "bf16": 2}
    results = []

    def run(op, dt, rows, cols, make, bytes_moved):
        name = f"{op}/torch/{dt}/rows:{rows}/cols:{cols}"
        if not selected.search(name):
            return
        free, _ = torch.cuda.mem_get_info()
        if 1.5 * bytes_moved + 256e6 > free:
            print(f"note: skipping {name}: not enough GPU memory")
            return
        fn = make()
        med, lo, hi, spread = measure(fn, iters)
        bps = bytes_moved / med
        results.append({"name": name, "run_name": name, "run_type": "iteration", "iterations": iters,
                        "real_time": med * 1e6, "time_unit": "us", "bytes_per_second": bps,
                        "pct_of_copy": 100.0 * bps / copy_bps, "bytes": bytes_moved, "median_us": med * 1e6,
                        "min_us": lo * 1e6, "max_us": hi * 1e6, "spread_pct": 100.0 * spread / med})
        print(f"{name:52s} {med * 1e6:10.1f} us {bps / 1e9:8.0f} GB/s {100 * bps / copy_bps:5.0f}%", flush=True)
        del fn
        torch.cuda.empty_cache()

    def matrix(rows, cols, dt, seed=1):
        g = torch.Generator(device=dev).manual_seed(seed)
        return torch.randn(rows, cols, device=dev, dtype=torch.float32, generator=g).to(dtypes[dt])

    rowwise = [QUICK] if args.quick else [STANDARD]
    for dt in dtypes:
        s = size[dt]
        for shapes in rowwise + ([] if args.quick else [LONG]):
            for rows in shapes[0]:
                for cols in shapes[1]:
                    n = rows * cols
                    def softmax_maker(logf):
                        def make():
                            x = matrix(rows, cols, dt)
                            f = torch.log_softmax if logf else torch.softmax
                            return lambda: f(x, dim=-1)
                        return make
                    run("softmax", dt, rows, cols, softmax_maker(False), 2 * n * s)
                    run("log_softmax", dt, rows, cols, softmax_maker(True), 2 * n * s)
        for rows in rowwise[0][0]:
            for cols in rowwise[0][1]:
                n = rows * cols
                def backward_maker(logf):
                    def make():
                        x, dy = matrix(rows, cols, dt), matrix(rows, cols, dt, 2)
                        if logf:
                            y = torch.log_softmax(x, dim=-1)
                            return lambda: torch._log_softmax_backward_data(dy, y, -1, dtypes[dt])
                        y = torch.softmax(x, dim=-1)
                        return lambda: torch._softmax_backward_data(dy, y, -1, dtypes[dt])
                    return make
                run("softmax_backward", dt, rows, cols, backward_maker(False), 3 * n * s)
                run("log_softmax_backward", dt, rows, cols, backward_maker(True), 3 * n * s)
                def masked_make():  # what eager PyTorch runs for attention's scale-and-mask softmax
                    x = matrix(rows, cols, dt)
                    g = torch.Generator(device=dev).manual_seed(3)
                    mask = torch.rand(rows, cols, device=dev, generator=g) < 0.25
                    return lambda: torch.softmax((x * 1.7).masked_fill(mask, float("-inf")), dim=-1)
                run("scale_mask_softmax", dt, rows, cols, masked_make, 2 * n * s + n)
                def ln_make():
                    x = matrix(rows, cols, dt)
                    w = (1 + 0.5 * torch.randn(cols, device=dev)).to(dtypes[dt])
                    bias = torch.randn(cols, device=dev).to(dtypes[dt])
                    return lambda: F.layer_norm(x, (cols,), w, bias, 1e-5)
                run("layer_norm", dt, rows, cols, ln_make, 2 * n * s + 2 * cols * s + 8 * rows)
        for rows, cols in ([(442368, 128)] if not args.quick else []) + [(r, c) for r in rowwise[0][0] for c in rowwise[0][1]]:
            def rs_make():
                x = matrix(rows, cols, dt)
                return lambda: x / x.abs().amax(1, keepdim=True)
            run("reduce_scale", dt, rows, cols, rs_make, 2 * rows * cols * s)
        flat = [1 << 20, 1 << 24] if args.quick else FLAT[1]
        for n in flat:
            def unary(f):
                def make():
                    x = matrix(1, n, dt)
                    return lambda: f(x)
                return make
            run("gelu", dt, 1, n, unary(lambda x: F.gelu(x)), 2 * n * s)
            run("relu", dt, 1, n, unary(torch.relu), 2 * n * s)
            run("scale", dt, 1, n, unary(lambda x: x * 1.7), 2 * n * s)
            def mul_make():
                x, y = matrix(1, n, dt), matrix(1, n, dt, 2)
                return lambda: x * y
            run("mul", dt, 1, n, mul_make, 3 * n * s)
            def fma_make():
                x, y, z = matrix(1, n, dt), matrix(1, n, dt, 2), matrix(1, n, dt, 3)
                return lambda: torch.addcmul(z, x, y)
            run("fma", dt, 1, n, fma_make, 4 * n * s)
            if dt != "f32":
                def to32():
                    x = matrix(1, n, dt)
                    return lambda: x.to(torch.float32)
                run("cast_to_f32", dt, 1, n, to32, n * (s + 4))
                def from32():
                    x = matrix(1, n, "f32")
                    return lambda: x.to(dtypes[dt])
                run("cast_from_f32", dt, 1, n, from32, n * (s + 4))

    ctx = {"chapter": "peer_torch", "peer": f"PyTorch {torch.__version__} eager",
           "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
           "gpu_name": props.name, "gpu_slug": slug(props.name),
           "gpu_uuid": f"GPU-{props.uuid}" if getattr(props, "uuid", None) else "",
           "compute_capability": f"{props.major}.{props.minor}", "sm_count": str(props.multi_processor_count),
           "l2_bytes": str(l2), "memory_bytes": str(props.total_memory),
           "cuda_runtime_version": torch.version.cuda or "", "cudnn_version": str(torch.backends.cudnn.version()),
           "git_commit": git_commit(), "copy_bytes_per_second": f"{copy_bps:.6g}",
           "copy_method": f"torch copy_ device-to-device of {copy_bytes / 1e9:.1f} GB, bytes read + written, median of {ITERS}",
           "timing_method": f"L2 flushed (memset of 2x L2) before each launch, one event pair per launch, at least "
                            f"{WARMUP} warm-up launches (flushed) and {warmup_s * 1e3:g} ms of them, median of {iters}",
           "input_fill": "torch.randn (the backward's y: softmax or log_softmax of randn; LayerNorm's weight 1 + "
                         "0.5 randn), not the harness's fill (docs/harness.md, \"What the inputs hold\")",
           "sweep": "quick" if args.quick else "standard"}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"context": ctx, "benchmarks": results}, f, indent=1)
    print(f"wrote {args.out} ({len(results)} benchmarks)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
