#!/bin/bash
# l2_flush_variance.sh OUTDIR: how much do mid-size results move from one process (allocation) to
# the next, with the course's memset flush and with a clean flush (COURSE_L2_FLUSH=clean)?
# Runs chapter 04 and chapter 00's memcpy at 25-200 MB, three processes per mode, three
# repetitions (fresh allocations) each, and prints the medians side by side.
set -uo pipefail
out=$1
mkdir -p "$out"
for mode in memset clean; do
  for p in 1 2 3; do
    COURSE_L2_FLUSH=$mode bin/ch04_pack_vectorized_softmax \
      --benchmark_filter='(f32/rows:49152/cols:(128|256|1024)/|f16/rows:49152/cols:128/)' \
      --benchmark_repetitions=3 --benchmark_out="$out/$mode.$p.ch04.json" --benchmark_out_format=json > /dev/null
    COURSE_L2_FLUSH=$mode bin/ch00_bandwidth_ceiling --benchmark_filter='memcpy/f32/rows:49152/cols:(128|256)/' \
      --benchmark_repetitions=3 --benchmark_out="$out/$mode.$p.ch00.json" --benchmark_out_format=json > /dev/null
  done
done
python3 - "$out" > "$out/summary.txt" <<'PY'
import glob, json, sys, collections
res = collections.defaultdict(list)
for f in sorted(glob.glob(sys.argv[1] + "/*.json")):
    mode = f.split("/")[-1].split(".")[0]
    for b in json.load(open(f))["benchmarks"]:
        if b.get("run_type") == "iteration":
            res[(b["name"].split("/iter")[0], mode)].append(b["bytes_per_second"] / 1e9)
for (name, mode), v in sorted(res.items()):
    print(f"{name:48s} {mode:7s} min {min(v):6.0f} max {max(v):6.0f} spread {100*(max(v)-min(v))/min(v):5.1f}%  " + " ".join(f"{x:.0f}" for x in v))
PY
cat "$out/summary.txt"
