#!/bin/bash
# profile.sh OUTDIR [ROWS COLS [CHAPTER...]]: the profiler evidence of each chapter (or of the
# chapters named, e.g. ch06), as data.
# Runs every chapter's single-case check (49152 x 1024 by default: a shape every softmax chapter
# supports) in f32 and f16 where the chapter has them, under Nsight Compute with the clocks left
# as they are, and keeps a small metric set per kernel launch in OUTDIR/<chapter>.ncu.csv:
# duration, DRAM bytes read/written and throughput, achieved occupancy, registers per thread,
# local-memory (spill) loads, instructions executed (all, and global loads/stores), shared-memory
# bank conflicts. The first line of each file records the shape. PROFILE_KERNEL=NAME keeps only the
# variants whose name contains NAME (chapter 12 profiles its production dispatch).
set -uo pipefail
out=$1
rows=${2:-49152}
cols=${3:-1024}
shift $(( $# < 3 ? $# : 3 ))
only=("$@")
root=$(cd "$(dirname "$0")/.." && pwd)
base=(gpu__time_duration.sum dram__bytes_read.sum dram__bytes_write.sum
      dram__throughput.avg.pct_of_peak_sustained_elapsed sm__warps_active.avg.pct_of_peak_sustained_active
      launch__registers_per_thread launch__block_size launch__grid_size
      l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum smsp__inst_executed.sum
      l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum
      l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum)
extra=(smsp__sass_inst_executed_op_global_ld.sum smsp__sass_inst_executed_op_global_st.sum)
mkdir -p "$out"
for exe in "$root"/bin/ch[0-9][0-9]_*; do
  name=$(basename "$exe")
  if [ ${#only[@]} -gt 0 ]; then
    keep=0
    for c in "${only[@]}"; do case "$name" in "$c"|"$c"_*) keep=1 ;; esac; done
    [ $keep -eq 1 ] || continue
  fi
  csv="$out/$name.ncu.csv"
  echo "# shape: rows=$rows cols=$cols${PROFILE_KERNEL:+ kernel=$PROFILE_KERNEL}" > "$csv"
  for dtype in f32 f16; do
    "$exe" --list | grep "/$dtype " > /dev/null || continue  # not -q: with pipefail, an early exit fails the pipe
    tmp=$(mktemp)
    m=$(IFS=,; echo "${base[*]},${extra[*]}")
    ncu --clock-control none --csv --page raw --metrics "$m" \
        "$exe" --verify --rows "$rows" --cols "$cols" --dtype "$dtype" ${PROFILE_KERNEL:+--kernel "$PROFILE_KERNEL"} \
        > "$tmp" 2> "$out/$name.ncu.err"
    rc=$?
    if [ $rc -ne 0 ] || ! grep -q '^"ID"' "$tmp"; then  # retry without the optional metrics
      m=$(IFS=,; echo "${base[*]}")
      ncu --clock-control none --csv --page raw --metrics "$m" \
          "$exe" --verify --rows "$rows" --cols "$cols" --dtype "$dtype" ${PROFILE_KERNEL:+--kernel "$PROFILE_KERNEL"} \
          > "$tmp" 2>> "$out/$name.ncu.err"
      rc=$?
    fi
    grep '^"' "$tmp" >> "$csv"
    echo "$name $dtype: rc=$rc, $(grep -c '^"[0-9]' "$tmp") kernel launches"
    rm -f "$tmp"
  done
  [ -s "$out/$name.ncu.err" ] || rm -f "$out/$name.ncu.err"
done
