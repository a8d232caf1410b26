#!/bin/bash
# run-peers.sh [--quick | --sweep shapes] [--no-verify] [--bin DIR] [--out DIR] [--input-fill normal|outliers]
# The peers, measured by the course's method in this process tree: cuDNN (bin/peer_cudnn, built
# where CMake found cuDNN) verified by the course's suite and then benchmarked, and PyTorch eager
# (baselines/torch_peers.py, where PyTorch is installed; then its torch.compile, where Triton is too).
# JSON to DIR/peer_<name>.json (default plots/data/<gpu-slug>/), beside the chapters'. A peer that
# is not available is skipped with a message; a peer that fails the suite is still timed, and its
# log kept (it is not ours to fix).
# --input-fill: the values timed, as run-chapters.sh's (normal by default). --sweep shapes: the
# shapes a model brings (as run-chapters.sh's), to DIR/peer_<name>.shapes.json. --no-verify: cuDNN's
# benchmarks only, where this same run has just verified it (make compare's second sweep).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/bin"
out=""
quick=()
fill=()
sweep=()
suffix=""
verify=1
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=(--quick) ;;
    --bin) bin=$2; shift ;;
    --out) out=$2; shift ;;
    --input-fill) fill=(--input-fill "$2"); shift ;;
    --sweep) sweep=(--sweep "$2"); [ "$2" = standard ] || suffix=".$2"; shift ;;
    --no-verify) verify=0 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "run-peers.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
probe=$(find "$bin" -maxdepth 1 -type f -name 'ch[0-9][0-9]_*' -perm -u+x | sort | head -1)
[ -n "$probe" ] || { echo "no chapter executables in $bin: build first (make)" >&2; exit 1; }
info=$("$probe" --device-info 2>&1) || {
  echo "$info"
  echo "No usable CUDA GPU on this machine: verifying and timing the peers (cuDNN, PyTorch) needs one."
  echo "Without a GPU you can still run 'make test' (host tests; the GPU tests report SKIPPED),"
  echo "'make docs' (the course site) and 'make plots' (figures from the committed measurements)."
  exit 1
}
slug=$(echo "$info" | awk '/^slug:/ {print $2}')
[ -n "$out" ] || out="$root/plots/data/$slug"
mkdir -p "$out"
status=0
if [ -x "$bin/peer_cudnn" ]; then
  if [ $verify -eq 1 ]; then
    echo "=== peer_cudnn: verify (the course's suite)"
    "$bin/peer_cudnn" --verify "${quick[@]}" > "$out/peer_cudnn.verify.log" 2>&1
    tail -n 1 "$out/peer_cudnn.verify.log"
    grep -m 10 'FAIL' "$out/peer_cudnn.verify.log" || rm -f "$out/peer_cudnn.verify.log"
  fi
  echo "=== peer_cudnn: benchmark"
  "$bin/peer_cudnn" "${quick[@]}" "${sweep[@]}" "${fill[@]}" --benchmark_out="$out/peer_cudnn$suffix.json" \
    --benchmark_out_format=json || status=1
else
  echo "peer_cudnn was not built (CMake found no cuDNN; configure with -DCUDNN_ROOT=...): skipped"
fi
py=${PYTHON:-python3}  # the one with PyTorch (matplotlib not needed)
echo "=== peer_torch"
"$py" "$root/baselines/torch_peers.py" "${quick[@]}" "${sweep[@]}" "${fill[@]}" --out "$out/peer_torch$suffix.json"
rc=$?
[ $rc -eq 0 ] || [ $rc -eq 77 ] || status=1
echo "=== peer_torch_compile"
"$py" "$root/baselines/torch_peers.py" --compile "${quick[@]}" "${sweep[@]}" "${fill[@]}" \
  --out "$out/peer_torch_compile$suffix.json"
rc=$?
[ $rc -eq 0 ] || [ $rc -eq 77 ] || status=1
exit $status
