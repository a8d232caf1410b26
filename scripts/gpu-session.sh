#!/bin/bash
# gpu-session.sh OUTDIR [--archs LIST] [--no-bench] [--no-tests] [--ncu] [--peers]
# Everything a data run does on a GPU machine, in one go: configure and build with all cores, run
# every CTest label but docs (unit, cli, gpu, large, sanitize), run each chapter's verification and
# benchmark sweep into OUTDIR, and optionally collect ncu metrics and run the peers (cuDNN,
# PyTorch: scripts/run-peers.sh) in the same session.
# Run from the repository root. A GPU machine without Google Benchmark and GoogleTest installed
# can build against a copy of them in .gpu-deps/ (a CMake prefix: include/ and lib/), which this
# script adds to CMAKE_PREFIX_PATH and LD_LIBRARY_PATH.
set -uo pipefail
out=$1; shift
archs=""
bench=1 tests=1 ncu=0 peers=0
while [ $# -gt 0 ]; do
  case "$1" in
    --archs) archs=$2; shift ;;
    --no-bench) bench=0 ;;
    --no-tests) tests=0 ;;
    --ncu) ncu=1 ;;
    --peers) peers=1 ;;
    *) echo "unknown argument $1"; exit 2 ;;
  esac
  shift
done
root=$(pwd)
mkdir -p "$out"
export LD_LIBRARY_PATH="$root/.gpu-deps/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
export PATH="/usr/local/cuda/bin:$PATH"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$out/nvidia-smi.csv" 2>&1
cfg=(-S . -B /tmp/build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$root/.gpu-deps")
[ -n "$archs" ] && cfg+=(-DCMAKE_CUDA_ARCHITECTURES="$archs")
{ cmake "${cfg[@]}" && cmake --build /tmp/build -j "$(nproc)"; } > "$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 1; }
echo "build ok (archs: ${archs:-default})"
if [ $tests -eq 1 ]; then
  ctest --test-dir /tmp/build --output-on-failure -j 4 -E 'docs|plots' > "$out/ctest.log" 2>&1
  echo "ctest rc=$?"; grep -E 'tests passed|tests failed|Failed|\(Skipped\)' "$out/ctest.log" | tail -25
fi
if [ $bench -eq 1 ]; then
  scripts/run-chapters.sh --out "$out" > "$out/bench.log" 2>&1
  echo "bench rc=$?"; grep -E '^===|copy line|note:|failed|passed' "$out/bench.log" | tail -30
fi
if [ $ncu -eq 1 ] && command -v ncu >/dev/null; then
  scripts/profile.sh "$out" > "$out/ncu.log" 2>&1; echo "ncu rc=$?"; tail -5 "$out/ncu.log"
fi
if [ $peers -eq 1 ]; then
  scripts/run-peers.sh --out "$out" > "$out/peers.log" 2>&1; echo "peers rc=$?"; grep -E '===|passed|wrote' "$out/peers.log"
fi
