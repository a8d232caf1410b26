#!/bin/bash
# profile.sh OUTDIR [ROWS COLS]: the profiler evidence of each chapter, as data.
# Runs every chapter's single-case check (f32, 49152 x 4096 by default) under Nsight Compute
# with the clocks left as they are, and keeps a small metric set per kernel launch in
# OUTDIR/<chapter>.ncu.csv: DRAM bytes read/written and throughput, duration, achieved
# occupancy, registers per thread, local-memory (spill) traffic, instructions executed,
# shared-memory bank conflicts.
set -uo pipefail
out=$1
rows=${2:-49152}
cols=${3:-4096}
root=$(cd "$(dirname "$0")/.." && pwd)
metrics=(
  gpu__time_duration.sum
  dram__bytes_read.sum dram__bytes_write.sum dram__throughput.avg.pct_of_peak_sustained_elapsed
  sm__warps_active.avg.pct_of_peak_sustained_active launch__registers_per_thread
  launch__block_size launch__grid_size
  local_load_bytes:l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum
  smsp__inst_executed.sum
  l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum
  l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum
)
m=$(IFS=,; echo "${metrics[*]}" | sed 's/local_load_bytes://')
mkdir -p "$out"
for exe in "$root"/bin/ch[0-9][0-9]_*; do
  name=$(basename "$exe")
  echo "=== $name"
  ncu --clock-control none --csv --page raw --metrics "$m" \
      "$exe" --verify --rows "$rows" --cols "$cols" --dtype f32 > "$out/$name.ncu.csv" 2> "$out/$name.ncu.err"
  echo "rc=$? $(grep -c '^"' "$out/$name.ncu.csv") lines"
done
