#!/bin/bash
# l2_evict_last.sh OUTDIR: does a buffer stored with an L2 evict_last policy survive the harness's
# flush? Builds l2_evict_last.cu, times a read of a 4-64 MB buffer written just before a 100 MB
# memset (plain stores, evict_last stores, and evict_last stores with
# cudaCtxResetPersistingL2Cache before the memset), and profiles one read at 4 and 32 MB with Nsight
# Compute (application replay, so that the one pass sees the flushed L2 as the loop leaves it).
# Needs sm_80 or newer (L2 cache policies); builds for the GPU it runs on.
# Output: OUTDIR/times.txt and OUTDIR/ncu_<MB>MB_p<policy>.ncu.csv.
set -uo pipefail
out=$1
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
exe=$(mktemp -d)/l2_evict_last
nvcc -O2 -arch=native -o "$exe" "$here/l2_evict_last.cu" || exit 1
for mb in 4 16 32 64; do for p in 0 1 2; do "$exe" $mb $p || exit 1; done; done | tee "$out/times.txt"
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum
for mb in 4 32; do for p in 0 1 2; do
  ncu --clock-control none --cache-control none --replay-mode application --csv --page raw --metrics $M \
      -k regex:read_kernel --launch-skip 10 --launch-count 1 "$exe" $mb $p 2>&1 | grep '^"' > "$out/ncu_${mb}MB_p$p.ncu.csv"
done; done
