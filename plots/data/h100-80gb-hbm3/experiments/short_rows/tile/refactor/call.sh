#!/bin/bash
set -u
source scratch/env.sh
d=/tmp/refactor; mkdir -p $d
nvidia-smi --query-gpu=uuid,name,vbios_version,clocks.max.sm,clocks.max.mem --format=csv > $d/smi.csv
T0=$(date +%s)
root=$PWD
cfg="-G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=$root/.gpu-deps"
(cd scratch/old && cmake -S . -B build $cfg > $d/cmake_old.log 2>&1 && cmake --build build -j 8 --target ch12_production_softmax > $d/build_old.log 2>&1) &
cmake -S . -B build $cfg > $d/cmake_new.log 2>&1 && cmake --build build -j 8 --target ch12_production_softmax > $d/build_new.log 2>&1 || { tail -20 $d/build_new.log; exit 1; }
wait
ls scratch/old/bin/ch12_production_softmax bin/ch12_production_softmax || { tail -20 $d/build_old.log; exit 1; }
echo "builds $(( $(date +%s) - T0 )) s"
for b in old new; do
  B=bin/ch12_production_softmax; [ $b = old ] && B=scratch/old/bin/ch12_production_softmax
  cuobjdump -sass $B > /tmp/$b.sass 2>/dev/null
  python3 - /tmp/$b.sass > $d/sass_$b.txt <<'PY'
import re,sys
cur=None; c={}
for line in open(sys.argv[1]):
    m=re.search(r'Function : (\S+)', line)
    if m: cur=m.group(1); c[cur]=0; continue
    if cur and re.match(r'\s+/\*[0-9a-f]{4}\*/\s+\S', line): c[cur]+=1
for k,v in sorted(c.items()):
    if 'softmax_warp_kernel' in k: print(v, k)
PY
done
F='^(softmax|log_softmax|scale_mask_softmax)/(production|warp|fused)/(f32|f16|bf16)/rows:49152/cols:(32|64|128|256|512|1024|2048)/'
for r in 1 2 3 4; do
  order="old new"; [ $(( r % 2 )) -eq 0 ] && order="new old"
  for b in $order; do
    B=bin/ch12_production_softmax; [ $b = old ] && B=scratch/old/bin/ch12_production_softmax
    $B --benchmark_filter="$F" --benchmark_out=$d/${b}_r$r.json --benchmark_out_format=json > /dev/null 2>>$d/bench.err || echo "bench $b $r failed"
  done
done
echo "all done $(( $(date +%s) - T0 )) s"
cd /tmp && tar czf $OUT/refactor.tgz refactor/*.json refactor/*.txt refactor/smi.csv
