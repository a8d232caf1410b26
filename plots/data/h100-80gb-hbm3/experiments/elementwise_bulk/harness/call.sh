#!/bin/bash
set -u
source scratch/env.sh
d=/tmp/ew; mkdir -p $d
nvidia-smi --query-gpu=uuid,name,vbios_version,clocks.max.sm,clocks.max.mem --format=csv > $d/smi.csv
T0=$(date +%s)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DCMAKE_PREFIX_PATH=$PWD/.gpu-deps -DCUDNN_ROOT=$CUDNN_ROOT > $d/cmake.log 2>&1 || { tail $d/cmake.log; exit 1; }
cmake --build build -j 16 --target ch11_elementwise_template ch12_production_softmax > $d/build.log 2>&1 || { tail -30 $d/build.log; exit 1; }
echo "build $(( $(date +%s) - T0 )) s"
B=bin/ch11_elementwise_template
$B --list > $d/list.txt 2>&1
for r in 1 2 3; do
  for t in f32 f16; do
    for e in 20 21 22 23 24 25; do
      n=$((1 << e))
      $B --rows 1 --cols $n --dtype $t --benchmark_out=$d/r${r}_${t}_$e.json --benchmark_out_format=json > /dev/null 2>>$d/bench.err || echo "bench $r $t $e failed"
    done
  done
done
echo "bench done $(( $(date +%s) - T0 )) s"
$B --verify > $d/verify_ch11.txt 2>&1; echo "ch11 verify rc=$? $(tail -1 $d/verify_ch11.txt)"
bin/ch12_production_softmax --verify --quick > $d/verify_ch12_quick.txt 2>&1; echo "ch12 quick rc=$? $(tail -1 $d/verify_ch12_quick.txt)"
for tool in memcheck racecheck synccheck; do for t in f32 f16; do
  compute-sanitizer --tool $tool --error-exitcode 9 $B --verify --quick --kernel pack --dtype $t > $d/san_${tool}_$t.txt 2>&1; echo "$tool $t rc=$? $(tail -1 $d/san_${tool}_$t.txt)"
done; done
echo "all done $(( $(date +%s) - T0 )) s"
cd /tmp && tar czf $OUT/ew.tgz ew
