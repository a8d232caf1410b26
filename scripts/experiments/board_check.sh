#!/bin/bash
# board_check.sh OUTDIR [ROUNDS]: which board this is, and how chapter 12's fp32 rows of 256
# columns read on it against cuDNN. Writes OUTDIR/<GPU UUID>/: board.csv and smi_before.txt /
# smi_after.txt (nvidia-smi: VBIOS, power limit, clocks, temperatures, ECC, row remapping), then
# ROUNDS (default 4) rounds of bin/ch12_production_softmax (production) and bin/peer_cudnn on the
# four ops at 49152 x 256 fp32, each in its own process, the order swapped every other round:
# ours_r<N>.json and cudnn_r<N>.json, each stamped with the board's UUID. Our kernels there read
# level with cuDNN on some H100s and under it on others (experiments/fp32_256/machines, whose
# folders this writes). Compare with: scripts/experiments/peer_rounds.py OUTDIR/<UUID> ours:cudnn
set -uo pipefail
out=$1
rounds=${2:-4}
bin=${BIN:-bin}
[ -x "$bin/ch12_production_softmax" ] && [ -x "$bin/peer_cudnn" ] || { echo "build ch12_production_softmax and peer_cudnn first" >&2; exit 1; }
uuid=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | head -1 | tr -d ' ')
[ -n "$uuid" ] || { echo "nvidia-smi names no GPU" >&2; exit 1; }
d=$out/$uuid
mkdir -p "$d"
nvidia-smi -q -d TEMPERATURE,POWER,CLOCK,ECC,ROW_REMAPPER,PERFORMANCE > "$d/smi_before.txt" 2>&1
nvidia-smi --query-gpu=uuid,vbios_version,driver_version,power.limit,clocks.max.sm,clocks.max.mem,temperature.gpu,temperature.memory \
  --format=csv > "$d/board.csv" 2>&1
f='^(softmax|log_softmax)(_backward)?/(production|cudnn)/f32/rows:49152/cols:256/'
for r in $(seq 1 "$rounds"); do
  if [ $((r % 2)) = 1 ]; then order="ours cudnn"; else order="cudnn ours"; fi
  for w in $order; do
    b=$bin/ch12_production_softmax
    [ "$w" = cudnn ] && b=$bin/peer_cudnn
    "$b" --benchmark_filter="$f" --benchmark_out="$d/${w}_r$r.json" --benchmark_out_format=json > /dev/null 2>&1 ||
      { echo "round $r: $w failed" >&2; exit 1; }
  done
done
nvidia-smi -q -d TEMPERATURE,POWER,CLOCK,PERFORMANCE > "$d/smi_after.txt" 2>&1
echo "$d"
