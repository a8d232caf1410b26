#!/bin/bash
# warmup.sh OUTDIR: does a result depend on what ran before it in the process? The harness warms
# each benchmark up with at least 10 launches and for at least 50 ms (COURSE_WARMUP_MS); this runs
# chapter 12's softmax (the `production` dispatch, then the identical `warp` kernels, after the
# production sweep's large tensors) and chapter 09's LayerNorm (the `warp` kernels first, the
# identical `dispatch` ones last), once with the count alone (COURSE_WARMUP_MS=0) and once with
# the default, and prints each pair of identical kernels side by side.
set -uo pipefail
out=$1
bin=${BIN:-bin}
mkdir -p "$out"
for ms in 0 50; do
  COURSE_WARMUP_MS=$ms "$bin/ch12_production_softmax" --benchmark_filter='^softmax/(production|warp)/.*/rows:49152/' \
    --benchmark_out="$out/warmup$ms.ch12.json" --benchmark_out_format=json > /dev/null || exit 1
  COURSE_WARMUP_MS=$ms "$bin/ch09_welford_layernorm" --benchmark_filter='^layer_norm/(warp|dispatch)/.*/rows:49152/' \
    --benchmark_out="$out/warmup$ms.ch09.json" --benchmark_out_format=json > /dev/null || exit 1
done
python3 - "$out" > "$out/summary.txt" <<'PY'
import glob, json, os, sys
pairs = {"ch12": ("production", "warp"), "ch09": ("warp", "dispatch")}
print("GB/s of identical kernels measured early (first) and late (second) in one process, and the late/early ratio")
for f in sorted(glob.glob(os.path.join(sys.argv[1], "warmup*.json"))):
    ms, ch = os.path.basename(f).split(".")[:2]
    ctx = json.load(open(f))["context"]
    res = {b["name"].split("/iter")[0]: b["bytes_per_second"] / 1e9 for b in json.load(open(f))["benchmarks"]}
    first, second = pairs[ch]
    print(f"\n{ch}, {ctx['timing_method']}, commit {ctx['git_commit'][:12]}")
    for name, gbps in res.items():
        op, kern, rest = name.split("/", 2)
        if kern != first or f"{op}/{second}/{rest}" not in res:
            continue
        late = res[f"{op}/{second}/{rest}"]
        print(f"  {op}/{{{first},{second}}}/{rest:28s} {gbps:6.0f} {late:6.0f}  {late / gbps:5.2f}")
PY
cat "$out/summary.txt"
