#!/bin/bash
# peer_rounds.sh OUTDIR [SECONDS]: the points where one committed run put chapter 11 or 12 under a
# peer, timed again in alternating rounds, so that a gap can be told from a run's noise. Each round
# runs, in an order rotated by one per round, five processes: chapter 12's dispatch, the cuDNN
# peer and the PyTorch peer on the row-wise shapes below, then chapter 11 and PyTorch on the flat
# sizes below. Every process is the project's own harness (or torch_peers.py, which follows its
# method), measuring its own copy line. Rounds start until SECONDS (default 480) have passed; each
# writes <who>_r<round>.json into OUTDIR. peer_rounds.py OUTDIR prints the comparison.
set -uo pipefail
out=$1
budget=${2:-480}
bin=${BIN:-bin}
py=${PYTHON:-python3}
mkdir -p "$out"
rows='rows:49152/cols:(32|64|256|512|1536)'
ops='(log_)?softmax(_backward)?'
flat='rows:1/cols:(1048576|16777216)'
ew='(gelu|cast_from_f32)'
run() {  # who round
  case $1 in
    ours12) "$bin/ch12_production_softmax" --benchmark_filter="^$ops/production/(f32|bf16)/$rows/" \
              --benchmark_out="$out/ours12_r$2.json" --benchmark_out_format=json > /dev/null ;;
    cudnn) "$bin/peer_cudnn" --benchmark_filter="^$ops/cudnn/(f32|bf16)/$rows/" \
              --benchmark_out="$out/cudnn_r$2.json" --benchmark_out_format=json > /dev/null ;;
    torch12) "$py" baselines/torch_peers.py --filter "^$ops/torch/(f32|bf16)/$rows\$" --out "$out/torch12_r$2.json" > /dev/null ;;
    ours11) "$bin/ch11_elementwise_template" --benchmark_filter="^$ew/pack/(f32|f16|bf16)/$flat/" \
              --benchmark_out="$out/ours11_r$2.json" --benchmark_out_format=json > /dev/null ;;
    torch11) "$py" baselines/torch_peers.py --filter "^$ew/torch/(f32|f16|bf16)/$flat\$" --out "$out/torch11_r$2.json" > /dev/null ;;
  esac
}
who=(ours12 cudnn torch12 ours11 torch11)
start=$(date +%s)
r=1
while [ $(( $(date +%s) - start )) -lt "$budget" ]; do
  for i in 0 1 2 3 4; do
    w=${who[$(( (i + r) % 5 ))]}
    run "$w" "$r" || { echo "round $r: $w failed" >&2; exit 1; }
  done
  echo "round $r done at $(( $(date +%s) - start )) s"
  r=$((r + 1))
done
