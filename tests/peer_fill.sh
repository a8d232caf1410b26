#!/bin/sh
# peer_fill.sh PYTHON DIR CHAPTER...: the PyTorch peer times the values the harness times.
# Each chapter saves its inputs for one small case (--verify --rows 37 --cols 1000 --save DIR), and
# baselines/torch_peers.py --check-fill compares every saved input (x, LayerNorm's gamma and beta,
# the elementwise b and c, the backward's dy, the attention mask) with its own fill of the same
# seed. Exit 77 (SKIPPED) without a GPU or without PyTorch.
py=$1
dir=$2
shift 2
rm -rf "$dir"
mkdir -p "$dir" || exit 1
for ch in "$@"; do
  "$ch" --verify --rows 37 --cols 1000 --save "$dir" >"$dir/verify.log" 2>&1
  rc=$?
  if [ "$rc" -eq 77 ]; then
    cat "$dir/verify.log"
    exit 77
  fi
  if [ "$rc" -ne 0 ]; then
    cat "$dir/verify.log"
    echo "$ch --verify --save exited $rc"
    exit 1
  fi
done
exec "$py" "$(dirname "$0")/../baselines/torch_peers.py" --check-fill "$dir"
