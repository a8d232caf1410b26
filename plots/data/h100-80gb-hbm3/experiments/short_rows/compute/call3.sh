#!/bin/bash
# Does fp32 softmax at 49152 x 32 read less as the first benchmark of a process (as in the data run)?
set -u
source scratch/env.sh
d=$OUT/ctx; mkdir -p $d; t0=$(date +%s)
nvidia-smi --query-gpu=uuid,name,vbios_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > $d/smi.csv
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=$PWD/.gpu-deps > /dev/null 2>&1 && cmake --build /tmp/b -j16 --target ch12_production_softmax > $d/build.log 2>&1; echo "build rc=$? $(( $(date +%s) - t0 )) s"
B=$PWD/bin/ch12_production_softmax; ls -la $B
F='^(softmax|log_softmax)/production/f32/rows:49152/cols:(32|64)/'
for i in 1 2 3; do
  $B --benchmark_filter="$F" --benchmark_repetitions=5 --benchmark_out=$d/reps_$i.json --benchmark_out_format=json > /dev/null 2>&1
  $B --benchmark_filter="$F" --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true --benchmark_out=$d/interleaved_$i.json --benchmark_out_format=json > /dev/null 2>&1
  $B --benchmark_filter='^softmax/production/f32/' --benchmark_out=$d/head_$i.json --benchmark_out_format=json > /dev/null 2>&1
done
echo "benchmarks $(( $(date +%s) - t0 )) s"
nvcc -std=c++17 -O3 -arch=sm_90 -Icommon -Ichapters/12_production_softmax -o /tmp/src scripts/experiments/short_rows_compute.cu && /tmp/src 101 > $d/short_rows_compute.txt 2>&1
echo "done $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf ctx.tgz ctx && rm -rf ctx
