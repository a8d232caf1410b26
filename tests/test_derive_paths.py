#!/usr/bin/env python3
"""scripts/derive-paths.py on synthetic measurements with known answers, then on the committed data."""
import importlib.util
import io
import json
import os
import sys
import tempfile
from contextlib import redirect_stdout

root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
spec = importlib.util.spec_from_file_location("derive_paths", os.path.join(root, "scripts", "derive-paths.py"))
dp = importlib.util.module_from_spec(spec)
spec.loader.exec_module(dp)
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def bench(name, gbps):
    return {"name": name + "/iterations:25/manual_time", "run_type": "iteration", "bytes_per_second": gbps * 1e9}


with tempfile.TemporaryDirectory() as d:
    # softmax f32 at 49152 rows: warp fastest at 512, smem 10% faster than the policy's warp at 1024
    # (a miss), smem and block_regs within 1% at 2048 (the policy's block_regs stands).
    ch12 = [bench("softmax/warp/f32/rows:49152/cols:512", 2000), bench("softmax/smem/f32/rows:49152/cols:512", 1500),
            bench("softmax/warp/f32/rows:49152/cols:1024", 2000), bench("softmax/smem/f32/rows:49152/cols:1024", 2200),
            bench("softmax/block_regs/f32/rows:49152/cols:2048", 2500),
            bench("softmax/smem/f32/rows:49152/cols:2048", 2520),
            bench("softmax/production/f32/rows:49152/cols:2048", 9999),  # not a forced path: ignored
            bench("scale_mask_softmax/fused/f32/rows:49152/cols:512", 9999)]
    for ch, bs in (("ch12_production_softmax", ch12), ("ch13_hopper_softmax", []), ("ch14_softmax_backward", [])):
        with open(os.path.join(d, ch + ".json"), "w") as f:
            json.dump({"context": {}, "benchmarks": bs}, f)
    paths = {"gpu_name": "test", "paths": [
        {"op": "softmax", "dtype": "f32", "rows": 49152, "cols": 512, "path": "warp"},
        {"op": "softmax", "dtype": "f32", "rows": 49152, "cols": 1024, "path": "warp"},
        {"op": "softmax", "dtype": "f32", "rows": 49152, "cols": 2048, "path": "block_regs"},
        {"op": "scale_mask_softmax", "dtype": "f32", "rows": 49152, "cols": 512, "path": "warp"}]}
    with open(os.path.join(d, dp.PATHS_FILE), "w") as f:
        json.dump(paths, f)
    measured = dp.load_measurements(d)
    check(len(measured) == 6, f"forced-path measurements: {len(measured)}, expected 6")
    report, misses = dp.derive(measured, paths["paths"], 3.0)
    text = "\n".join(report)
    check(misses == 1, f"misses: {misses}, expected 1\n{text}")
    check("softmax f32 49152 x 1024: policy warp 2000 GB/s, smem 2200 GB/s (90.9%)" in text, "the miss's line\n" + text)
    check("warp 512 | smem 1024 | block_regs 2048" in text, "the bands\n" + text)
    check("scale_mask" not in text, "scale_mask_softmax has no forced paths: left out\n" + text)
    _, misses_wide = dp.derive(measured, paths["paths"], 10.0)
    check(misses_wide == 0, "a 10% margin covers the 9% miss")
    out = io.StringIO()
    with redirect_stdout(out):
        rc = dp.main(["--data", d])
    check(rc == 0 and "(1 of 3 compared)" in out.getvalue(), "main on the synthetic folder\n" + out.getvalue())
    os.remove(os.path.join(d, dp.PATHS_FILE))
    check(dp.main(["--data", d]) == 2, "a missing paths file: exit 2")
    check(dp.main(["--data", d, "--margin", "100"]) == 2, "--margin 100: exit 2")

# The committed data: every folder with a paths file reads, with each op's bands.
base = os.path.join(root, "plots", "data")
for gpu in sorted(os.listdir(base)):
    folder = os.path.join(base, gpu)
    if not os.path.exists(os.path.join(folder, dp.PATHS_FILE)):
        continue
    out = io.StringIO()
    with redirect_stdout(out):
        rc = dp.main(["--data", folder])
    check(rc == 0, f"{gpu}: exit {rc}")
    for op in dp.OPS:
        check(f"  {op} " in out.getvalue(), f"{gpu}: no bands for {op}")

if failures:
    print("FAILED:\n" + "\n".join(failures))
    sys.exit(1)
print("derive-paths.py: all checks passed")
