#!/usr/bin/env python3
"""The PyTorch peer: eager PyTorch timed by the course's method, written in the harness's JSON.

For each launch: the L2 flushed by a memset of twice its size (outside the timed region), one
CUDA event pair around the call alone; flushed warm-ups (at least 10, and for at least 50 ms, as
the harness: COURSE_WARMUP_MS overrides the time), then the median of 25 timed calls.
Bandwidth is the course's bytes model (common/harness/ops.cpp) over the median, and a percentage of
a 4 GiB device-to-device copy measured in the same process. Benchmark names follow the harness:
op/torch/dtype/rows:R/cols:C.

Inputs: the values the harness's benchmarks time (its fill, computed here on the GPU; --check-fill
DIR compares them with the inputs a chapter's --verify --save wrote): normal(0, 1), or with
--input-fill outliers, as the harness's flag, x with 1 value in 61 scaled by 20. The values change
the time: by a few percent at a few MB per tensor, and PyTorch's by much more on the outliers
(docs/harness.md, "What the inputs hold"). As in the harness, the backward's y is that fill, not a
softmax of it: both time the same values.

Backward: torch._softmax_backward_data / torch._log_softmax_backward_data (what autograd calls),
three tensors moved. scale_mask_softmax: the eager expression softmax((x * 1.7).masked_fill(mask,
-inf)), several kernels, timed as one call.

torch.compile (--compile): the same expressions through torch.compile (inductor) with dynamic
shapes, one compile per operation and dtype (a compile per shape would take hours over the shapes
sweep); the first calls, which compile, are among the warm-ups. Kernel name torch_compile.

Usage: torch_peers.py [--quick | --sweep shapes] [--compile] [--filter REGEX] [--input-fill
normal|outliers] --out FILE.json (exit 77 when PyTorch or a GPU is missing, or with --compile where
torch.compile cannot run), or torch_peers.py --check-fill DIR. --filter runs
only the benchmarks whose name REGEX matches (re.search), as Google Benchmark's --benchmark_filter
does for the harness.
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
WARMUP_MS = 50.0  # the harness's kWarmupMs (common/harness/bench.cu)
STANDARD = ([49152], [32, 64, 128, 256, 512, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 32768])
LONG = ([128], [2048, 8192, 32768, 131072, 524288, 2097152, 4194304])
FLAT = ([1], [1 << 20, 1 << 24, 1 << 28])
QUICK = ([49152], [128, 1024, 4096])
NORMS = ([4096, 16384], [768, 1024, 4096, 8192])  # chapter 15's second sweep (its main.cu): the norms' ops only
VOCAB = ([4096, 16384], [32000, 50257, 128256])  # chapter 16's second sweep: cross-entropy's ops only
# --sweep shapes: the harness's shapes_sweeps() (common/harness/harness.cu), the shapes a model brings
# that the standard sweep misses; tests/CMakeLists.txt checks that the two lists agree.
ODD = sorted([(1 << k) + d for k in range(5, 16) for d in (-1, 1)] + [1000, 3000, 5000, 10000])
SHAPES = [([49152], ODD),
          ([1, 8, 64, 512], [32000, 32768, 50257, 65536, 128256, 131072, 151936, 262144]),
          ([128, 2048], [65536, 131072, 262144, 524288, 1048576, 2097152]),
          ([65536], [32769])]


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


# --- The harness's fill (common/harness/device.cu), on the GPU through PyTorch ---------------------
# Every implementation is timed on the same values: at a few MB per tensor the values moved change
# the time (docs/harness.md, "What the inputs hold"). The hash is the harness's splitmix64 on int64
# tensors (PyTorch has no uint64 arithmetic; int64 adds and multiplies wrap, and a logical shift is
# an arithmetic one masked); the normal values are its Box-Muller, so they agree with the harness's
# to a few float ulps. `--check-fill DIR` compares them with what a chapter's --save wrote.

MASK64 = (1 << 64) - 1
FILL_SEED_MUL = 0x632BE59BD9B4E019
FILL_CHUNK = 1 << 25


def _s64(c):
    """A 64-bit pattern as the int64 with the same bits."""
    c &= MASK64
    return c - (1 << 64) if c >> 63 else c


def _shr(z, k):
    """Logical right shift of int64 bits."""
    return (z >> k) & ((1 << (64 - k)) - 1)


def _umod(z, m):
    """The uint64 that int64 z holds, modulo m > 0."""
    return ((_shr(z, 1) % m) * 2 + (z & 1)) % m


def splitmix64(z):
    """The harness's splitmix64 on int64 tensors (or numpy int64 arrays): same bits, as int64."""
    z = z + _s64(0x9E3779B97F4A7C15)
    z = (z ^ _shr(z, 30)) * _s64(0xBF58476D1CE4E5B9)
    z = (z ^ _shr(z, 27)) * _s64(0x94D049BB133111EB)
    return z ^ _shr(z, 31)


def harness_fill(torch, rows, cols, dtype, seed, outliers, scale=1.0, shift=0.0, device="cuda"):
    """fill_kernel of common/harness/device.cu (no special rows): element i from splitmix64(seed * C + i),
    normal(0, 1) by Box-Muller, about 1 in 61 scaled by 20 with `outliers`, then * scale + shift."""
    n = rows * cols
    out = torch.empty(n, dtype=dtype, device=device)
    base = _s64(seed * FILL_SEED_MUL)
    for i0 in range(0, n, FILL_CHUNK):
        i = torch.arange(i0, min(n, i0 + FILL_CHUNK), dtype=torch.int64, device=device)
        h = splitmix64(i + base)
        u1 = ((_shr(h, 40) & 0xFFFFFF).to(torch.float32) + 0.5) * (1.0 / 16777216.0)  # float, as the kernel
        u2 = (_shr(h, 16) & 0xFFFFFF).to(torch.float32) * (1.0 / 16777216.0)
        v = (torch.sqrt(-2.0 * torch.log(u1.double())) * torch.cos(math.pi * (2.0 * u2.double()))).float()
        if outliers:
            v = torch.where((h & 0xFFFF) % 61 == 0, v * 20.0, v)
        out[i0:i0 + len(i)] = (v * scale + shift).to(dtype)
    return out.view(rows, cols)


def harness_mask(torch, rows, cols, seed, device="cuda"):
    """fill_mask_kernel of common/harness/device.cu (1: masked): a quarter at random, every 11th row
    from row 3 fully masked, every 11th from row 7 all but one element."""
    n = rows * cols
    out = torch.empty(n, dtype=torch.uint8, device=device)
    base = _s64(seed * FILL_SEED_MUL)
    for i0 in range(0, n, FILL_CHUNK):
        i = torch.arange(i0, min(n, i0 + FILL_CHUNK), dtype=torch.int64, device=device)
        h = splitmix64(i + base)
        r, c = i // cols, i % cols
        k = splitmix64(r + seed)
        keep = _umod(k, cols)
        m = ((h & 3) == 0) | (r % 11 == 3)
        m = torch.where(r % 11 == 7, c != keep, m)
        out[i0:i0 + len(i)] = m.to(torch.uint8)
    return out.view(rows, cols)


# What a chapter's `--verify --rows R --cols C --save DIR` gives each input (common/harness/verify_case.cu):
# x from --seed (1) with outliers; input k > 0 from seed * 7919 + k, the first per-column one (gamma)
# 0.5 * normal + 1. The backward's y is replaced by a softmax there, so it is not compared.
SAVED_SIDE = {"gamma": (1, 0.5, 1.0), "beta": (2, 1.0, 0.0), "b": (1, 1.0, 0.0), "c": (2, 1.0, 0.0),
              "dy": (1, 1.0, 0.0), "mask": (1, 1.0, 0.0)}


def check_fill(torch, np, folder):
    """Compares every saved input of `folder` with harness_fill / harness_mask: 0 when all agree."""
    dtypes = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
    ulp = {"f32": 2.0 ** -21, "f16": 2.0 ** -10, "bf16": 2.0 ** -7}  # f32: a few ulps of libm difference
    checked, bad = 0, 0
    for f in sorted(os.listdir(folder)):
        m = re.fullmatch(r"(.+)_(f32|f16|bf16)_([a-z]+)\.npy", f)
        if not m or "_ref_" in f:
            continue
        stem, dt, name = m.groups()
        if name != "x" and name not in SAVED_SIDE:
            continue  # outputs (y, dx, mean, rstd) and the backward's y
        got = np.load(os.path.join(folder, f))
        rows, cols = (1, got.shape[0]) if got.ndim == 1 else got.shape
        if name == "mask":
            want = harness_mask(torch, rows, cols, 1 * 7919 + SAVED_SIDE[name][0]).cpu().numpy()
            n_bad = int((want.reshape(got.shape) != got).sum())
        else:
            store = "f32" if stem.startswith("cast_from_f32_") and name == "x" else dt
            seed, scale, shift = (1, 1.0, 0.0) if name == "x" else (1 * 7919 + SAVED_SIDE[name][0],) + SAVED_SIDE[name][1:]
            want = harness_fill(torch, rows, cols, dtypes[store], seed, name == "x", scale, shift).double().cpu().numpy()
            want, g = want.reshape(got.shape), got.astype(np.float64)
            # The shift (gamma's + 1) can cancel most of a value: its ulps count before the shift.
            tol = ulp[store] * (np.abs(want - shift) + abs(shift)) + 1e-7
            over = np.abs(g - want) > tol
            n_bad = int(over.sum())
            if n_bad:
                j = int(np.flatnonzero(over.ravel())[0])
                print(f"  first: element {j}: saved {g.ravel()[j]!r}, computed {want.ravel()[j]!r}")
        checked += 1
        if n_bad:
            bad += 1
            print(f"MISMATCH {f}: {n_bad} of {got.size} elements differ from the harness's fill")
    print(f"{checked} saved inputs compared, {bad} differ")
    if checked == 0:
        print(f"no saved inputs in {folder}: nothing was compared", file=sys.stderr)
        return 1
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sweep", choices=("standard", "shapes"), default="standard",
                    help="the harness's sweeps (standard), or the shapes a model brings (odd widths, vocabulary "
                    "rows, few long rows, one past 2^31 elements): the row-wise ops only")
    ap.add_argument("--print-sweep", action="store_true", help="print the shapes of --sweep as the harness's "
                    "--list prints its sweeps, and exit")
    ap.add_argument("--filter", default="", help="run only the benchmarks whose name this regex matches")
    ap.add_argument("--compile", action="store_true", help="time torch.compile (inductor, dynamic shapes) of each "
                    "expression instead of eager PyTorch: benchmark names op/torch_compile/...")
    ap.add_argument("--input-fill", choices=("normal", "outliers"), default="normal",
                    help="the timed values, as the harness's flag: normal(0, 1), or x with 1 value in 61 x 20")
    ap.add_argument("--check-fill", metavar="DIR", help="compare the inputs a chapter's --save wrote into DIR "
                    "with this script's fill, and exit (non-zero on a mismatch)")
    args = ap.parse_args()
    if args.quick and args.sweep != "standard":
        print("--quick and --sweep shapes exclude each other", file=sys.stderr)
        return 2
    if args.print_sweep:
        for rows, cols in (SHAPES if args.sweep == "shapes" else [STANDARD]):
            print("  sweep: rows " + " ".join(map(str, rows)) + "; cols " + " ".join(map(str, cols)))
        return 0
    if not args.out and not args.check_fill:
        print("--out FILE.json is required (or --check-fill DIR)", file=sys.stderr)
        return 2
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
    if args.compile:
        try:
            import triton  # noqa: F401  (inductor's GPU code generator)
        except ImportError:
            print("SKIPPED: torch.compile needs Triton, which is not installed here: the torch.compile peer is not run")
            return 77
        import torch._dynamo
        for limit in ("cache_size_limit", "recompile_limit"):  # one name or the other, by PyTorch version
            if hasattr(torch._dynamo.config, limit):
                setattr(torch._dynamo.config, limit, 64)
    dev = torch.device("cuda")
    if args.check_fill:
        import numpy as np
        return check_fill(torch, np, args.check_fill)
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
    kernel = "torch_compile" if args.compile else "torch"
    compiled = {}

    def C(key, fn):
        """fn, or with --compile its torch.compile (dynamic shapes), one per key (operation and dtype)."""
        if not args.compile:
            return fn
        if key not in compiled:
            compiled[key] = torch.compile(fn, dynamic=True)
        return compiled[key]

    ctx = {"chapter": f"peer_{kernel}",
           "peer": f"PyTorch {torch.__version__} " + ("torch.compile (inductor, dynamic shapes)" if args.compile else "eager"),
           "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
           "gpu_name": props.name, "gpu_slug": slug(props.name),
           "gpu_uuid": f"GPU-{props.uuid}" if getattr(props, "uuid", None) else "",
           "compute_capability": f"{props.major}.{props.minor}", "sm_count": str(props.multi_processor_count),
           "l2_bytes": str(l2), "memory_bytes": str(props.total_memory),
           "cuda_runtime_version": torch.version.cuda or "", "cudnn_version": str(torch.backends.cudnn.version()),
           "git_commit": git_commit(), "copy_bytes_per_second": f"{copy_bps:.6g}",
           "copy_method": f"torch copy_ device-to-device of {copy_bytes / 1e9:.1f} GB, bytes read + written, median of {ITERS}",
           "tensor_memory": "PyTorch's caching allocator (each benchmark's tensors from memory it keeps and reuses)",
           "timing_method": f"L2 flushed (memset of 2x L2) before each launch, one event pair per launch, at least "
                            f"{WARMUP} warm-up launches (flushed) and {warmup_s * 1e3:g} ms of them, median of {iters}",
           "input_fill": ("outliers: first input normal(0, 1), about 1 value in 61 x 20; other inputs normal(0, 1) "
                          "(LayerNorm's gamma + 1); a mask as the suite's" if args.input_fill == "outliers" else
                          "normal: every input normal(0, 1) (LayerNorm's gamma + 1); a mask as the suite's")
                         + " (the harness's fill, common/harness/device.cu, computed by this script)",
           "sweep": "quick" if args.quick else args.sweep}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    results = []

    def write():  # after every benchmark too: a run cut short keeps what it measured
        with open(args.out + ".part", "w") as f:
            json.dump({"context": ctx, "benchmarks": results}, f, indent=1)
        os.replace(args.out + ".part", args.out)


    def run(op, dt, rows, cols, make, bytes_moved):
        name = f"{op}/{kernel}/{dt}/rows:{rows}/cols:{cols}"
        if not selected.search(name):
            return
        free, _ = torch.cuda.mem_get_info()
        if 1.5 * bytes_moved + 256e6 > free:
            print(f"note: skipping {name}: not enough GPU memory")
            return
        fn = make()
        med, lo, hi, spread = measure(fn, iters)
        bps = bytes_moved / med
        # What one call allocates beyond what was allocated before it (its outputs and every
        # intermediate, as the allocator's peak): the harness reports its kernels' outputs and workspace.
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        out = fn()
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated() - before
        del out
        results.append({"name": name, "run_name": name, "run_type": "iteration", "iterations": iters,
                        "real_time": med * 1e6, "time_unit": "us", "bytes_per_second": bps,
                        "pct_of_copy": 100.0 * bps / copy_bps, "bytes": bytes_moved, "median_us": med * 1e6,
                        "min_us": lo * 1e6, "max_us": hi * 1e6, "spread_pct": 100.0 * spread / med,
                        "peak_alloc_bytes": peak})
        print(f"{name:52s} {med * 1e6:10.1f} us {bps / 1e9:8.0f} GB/s {100 * bps / copy_bps:5.0f}%", flush=True)
        write()
        del fn
        torch.cuda.empty_cache()

    # Every timed tensor holds what the harness's bench gives the same slot (common/harness/bench.cu):
    # input k from seed 1 + k, LayerNorm's gamma centred on 1, and with --input-fill outliers the
    # first input with the suite's outliers.
    def matrix(rows, cols, dt, seed=1, shift=0.0):
        return harness_fill(torch, rows, cols, dtypes[dt], seed, outliers=seed == 1 and args.input_fill == "outliers",
                            shift=shift, device=dev)

    def mask(rows, cols, seed=2):
        return harness_mask(torch, rows, cols, seed, device=dev).bool()

    rowwise = [QUICK] if args.quick else [STANDARD]
    shaped = args.sweep == "shapes"
    for dt in dtypes:
        s = size[dt]
        for shapes in SHAPES if shaped else rowwise + ([] if args.quick else [LONG]):
            for rows in shapes[0]:
                for cols in shapes[1]:
                    n = rows * cols
                    def softmax_maker(logf):
                        def make():
                            x = matrix(rows, cols, dt)
                            f = torch.log_softmax if logf else torch.softmax
                            g = C(("log_softmax" if logf else "softmax", dt), lambda x: f(x, dim=-1))
                            return lambda: g(x)
                        return make
                    run("softmax", dt, rows, cols, softmax_maker(False), 2 * n * s)
                    run("log_softmax", dt, rows, cols, softmax_maker(True), 2 * n * s)
        norms = [] if shaped or args.quick else [(r, c) for r in NORMS[0] for c in NORMS[1]]
        for rows, cols in [(r, c) for sh in (SHAPES if shaped else rowwise) for r in sh[0] for c in sh[1]] + norms:
            n = rows * cols
            only_norms = (rows, cols) in norms
            def backward_maker(logf):
                def make():
                    y, dy = matrix(rows, cols, dt), matrix(rows, cols, dt, 2)  # as the harness's bench
                    f = torch._log_softmax_backward_data if logf else torch._softmax_backward_data
                    g = C(("log_softmax_backward" if logf else "softmax_backward", dt),
                          lambda dy, y: f(dy, y, -1, dtypes[dt]))
                    return lambda: g(dy, y)
                return make
            if not only_norms:
                run("softmax_backward", dt, rows, cols, backward_maker(False), 3 * n * s)
            if not only_norms:
                run("log_softmax_backward", dt, rows, cols, backward_maker(True), 3 * n * s)
            def masked_make():  # what eager PyTorch runs for attention's scale-and-mask softmax
                x, m = matrix(rows, cols, dt), mask(rows, cols)
                g = C(("scale_mask_softmax", dt), lambda x, m: torch.softmax((x * 1.7).masked_fill(m, float("-inf")), dim=-1))
                return lambda: g(x, m)
            if not only_norms:
                run("scale_mask_softmax", dt, rows, cols, masked_make, 2 * n * s + n)
            def ln_make():
                x = matrix(rows, cols, dt)
                w = matrix(1, cols, dt, 2, shift=1.0).view(cols)
                bias = matrix(1, cols, dt, 3).view(cols)
                g = C(("layer_norm", dt), lambda x, w, bias: F.layer_norm(x, x.shape[-1:], w, bias, 1e-5))
                return lambda: g(x, w, bias)
            if not only_norms:
                run("layer_norm", dt, rows, cols, ln_make, 2 * n * s + 2 * cols * s + 8 * rows)
            # Chapter 15's ops, with its bytes (common/harness/ops.cpp: every input and output once;
            # dgamma and dbeta counted as fp32, as the chapter writes them; PyTorch writes them in T).
            def rms_make():
                x, w = matrix(rows, cols, dt), matrix(1, cols, dt, 2, shift=1.0).view(cols)
                g = C(("rms_norm", dt), lambda x, w: F.rms_norm(x, (cols,), w, 1e-5))
                return lambda: g(x, w)
            if not shaped:
                run("rms_norm", dt, rows, cols, rms_make, 2 * n * s + cols * s + 4 * rows)
            def norm_backward_maker(layer):
                def make():
                    x, dy = matrix(rows, cols, dt), matrix(rows, cols, dt, 2)
                    w = matrix(1, cols, dt, 3, shift=1.0).view(cols)
                    if layer:  # aten's LayerNorm backward from the forward's saved mean and rstd
                        b = torch.zeros_like(w)
                        _, mean, rstd = torch.native_layer_norm(x, (cols,), w, b, 1e-5)
                        g = C(("layer_norm_backward", dt), lambda dy, x, mean, rstd, w, b: torch.ops.aten.native_layer_norm_backward(
                            dy, x, (cols,), mean, rstd, w, b, [True, True, True]))
                        return lambda: g(dy, x, mean, rstd, w, b)
                    rstd = torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-5)
                    fused = getattr(torch.ops.aten, "_fused_rms_norm_backward", None)
                    if fused is not None and not args.compile:  # aten's fused kernel (PyTorch 2.8 on)
                        return lambda: fused(dy, x, (cols,), rstd, w, [True, True])
                    def rms_backward(dy, x, w, rstd):  # the formula, for inductor (or eager without the fused op)
                        g, xhat = dy.float() * w.float(), x.float() * rstd
                        dx = rstd * (g - xhat * (g * xhat).mean(-1, keepdim=True))
                        return dx.to(x.dtype), (dy.float() * xhat).sum(0)
                    g = C(("rms_norm_backward", dt), rms_backward)
                    return lambda: g(dy, x, w, rstd)
                return make
            if shaped:
                continue  # chapter 15 has no shapes sweep
            run("layer_norm_backward", dt, rows, cols, norm_backward_maker(True), 3 * n * s + cols * s + 8 * rows + 8 * cols)
            run("rms_norm_backward", dt, rows, cols, norm_backward_maker(False), 3 * n * s + cols * s + 4 * rows + 4 * cols)
        if shaped:
            continue  # the row-wise ops only: reduce_scale and the elementwise ops have their own shapes
        # Chapter 16's ops (#41) at its vocabulary shapes, with its bytes (every input and output once:
        # logits, 4-byte targets, per-row loss and lse, the reduction; dlogits for the backward and the
        # fused call). The targets are drawn here (uniform, none ignored, as the harness's benchmarks:
        # a kernel may skip an ignored row's logits, which the bytes count).
        for rows, cols in ([] if args.quick else [(r, c) for r in VOCAB[0] for c in VOCAB[1]]):
            n = rows * cols
            def targets():
                g = torch.Generator(device=dev).manual_seed(7)
                t = torch.randint(0, cols, (rows,), generator=g, device=dev)
                return t
            def ce_forward():
                x, t = matrix(rows, cols, dt), targets()
                g = C(("cross_entropy", dt), lambda x, t: F.cross_entropy(x, t))
                return lambda: g(x, t)
            run("cross_entropy", dt, rows, cols, ce_forward, n * s + 12 * rows + 4)
            def ce_fused():  # forward and backward, as training runs them: autograd's dlogits
                x, t = matrix(rows, cols, dt).requires_grad_(), targets()
                f = C(("cross_entropy_fused", dt), lambda x, t: F.cross_entropy(x, t))
                return lambda: torch.autograd.grad(f(x, t), x)
            run("cross_entropy_fused", dt, rows, cols, ce_fused, 2 * n * s + 8 * rows + 4)
            if not args.compile:
                def ce_backward():  # the backward alone, from the forward's saved graph
                    x, t = matrix(rows, cols, dt).requires_grad_(), targets()
                    loss = F.cross_entropy(x, t)
                    return lambda: torch.autograd.grad(loss, x, retain_graph=True)
                run("cross_entropy_backward", dt, rows, cols, ce_backward, 2 * n * s + 12 * rows)
        for rows, cols in ([(442368, 128)] if not args.quick else []) + [(r, c) for r in rowwise[0][0] for c in rowwise[0][1]]:
            def rs_make():
                x = matrix(rows, cols, dt)
                g = C(("reduce_scale", dt), lambda x: x / x.abs().amax(1, keepdim=True))
                return lambda: g(x)
            run("reduce_scale", dt, rows, cols, rs_make, 2 * rows * cols * s)
        flat = [1 << 20, 1 << 24] if args.quick else FLAT[1]
        for n in flat:
            def unary(key, f):
                def make():
                    x = matrix(1, n, dt)
                    g = C((key, dt), f)
                    return lambda: g(x)
                return make
            run("gelu", dt, 1, n, unary("gelu", lambda x: F.gelu(x)), 2 * n * s)
            run("relu", dt, 1, n, unary("relu", torch.relu), 2 * n * s)
            run("scale", dt, 1, n, unary("scale", lambda x: x * 1.7), 2 * n * s)
            def mul_make():
                x, y = matrix(1, n, dt), matrix(1, n, dt, 2)
                g = C(("mul", dt), lambda x, y: x * y)
                return lambda: g(x, y)
            run("mul", dt, 1, n, mul_make, 3 * n * s)
            def fma_make():
                x, y, z = matrix(1, n, dt), matrix(1, n, dt, 2), matrix(1, n, dt, 3)
                g = C(("fma", dt), lambda z, x, y: torch.addcmul(z, x, y))
                return lambda: g(z, x, y)
            run("fma", dt, 1, n, fma_make, 4 * n * s)
            if dt != "f32":
                def to32():
                    x = matrix(1, n, dt)
                    g = C(("cast_to_f32", dt), lambda x: x.to(torch.float32))
                    return lambda: g(x)
                run("cast_to_f32", dt, 1, n, to32, n * (s + 4))
                def from32():
                    x = matrix(1, n, "f32")
                    g = C(("cast_from_f32", dt), lambda x: x.to(dtypes[dt]))
                    return lambda: g(x)
                run("cast_from_f32", dt, 1, n, from32, n * (s + 4))

    write()
    print(f"wrote {args.out} ({len(results)} benchmarks)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
