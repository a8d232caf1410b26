#!/bin/bash
set -u
source scratch/env.sh
d=/tmp/ewb_out; mkdir -p $d
nvidia-smi --query-gpu=uuid,name,vbios_version,clocks.max.sm,clocks.max.mem --format=csv > $d/smi.csv
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DCMAKE_PREFIX_PATH=$PWD/.gpu-deps -DCUDNN_ROOT=$CUDNN_ROOT > $d/cmake.log 2>&1 || { tail $d/cmake.log; exit 1; }
cmake --build build -j 16 --target course_harness course_host > $d/build.log 2>&1 || { tail -30 $d/build.log; exit 1; }
nvcc -std=c++17 -O3 -arch=sm_90 --expt-relaxed-constexpr -Icommon -Ichapters/11_elementwise_template -o /tmp/ewb scripts/experiments/elementwise_bulk.cu build/common/libcourse_harness.a build/common/libcourse_host.a -lpthread || exit 1
for i in 1 2 3; do /tmp/ewb 201 > $d/run$i.txt 2>&1 || { echo "run $i failed"; tail $d/run$i.txt; }; done
for f in $d/run*.txt; do echo "== $f"; grep -v checked $f; done
cd /tmp && tar czf $OUT/ewb.tgz ewb_out/*.txt ewb_out/smi.csv
