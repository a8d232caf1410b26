#!/bin/bash
set -u
source scratch/env.sh
d=$OUT/tile4; mkdir -p $d/exp
nvidia-smi --query-gpu=uuid,name,vbios_version,clocks.max.sm,clocks.max.mem --format=csv > $d/smi.csv
cp $d/smi.csv $d/exp/smi.csv
(nvcc -std=c++17 -O3 -arch=sm_90 -Icommon -Ichapters/12_production_softmax -o /tmp/srb scripts/experiments/short_rows_bulk.cu > $d/exp/nvcc.log 2>&1) &
t0=$(date +%s)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DCMAKE_PREFIX_PATH=$PWD/.gpu-deps -DCUDNN_ROOT=$CUDNN_ROOT > $d/cmake.log 2>&1 || { tail $d/cmake.log; exit 1; }
cmake --build build -j 16 --target ch12_production_softmax > $d/build.log 2>&1 || { tail -30 $d/build.log; exit 1; }
wait
echo "build $(( $(date +%s) - t0 )) s"
B=bin/ch12_production_softmax
cuobjdump -sass $B > /tmp/ch12.sass 2>/dev/null
python3 - > $d/sass_counts.txt <<'PY'
import re
cur=None; c={}
for line in open('/tmp/ch12.sass'):
    m=re.search(r'Function : (\S+)', line)
    if m: cur=m.group(1); c[cur]={'n':0,'LDS':0,'LDG':0,'UBLKCP':0,'STG':0}; continue
    if cur and re.match(r'\s+/\*[0-9a-f]{4}\*/\s+\S', line):
        c[cur]['n']+=1
        for k in ('LDS','LDG','UBLKCP','STG'):
            if re.search(r'\b'+k+r'(\.|\s)', line): c[cur][k]+=1
for k,v in c.items():
    if 'tile' in k or 'warp_kernel' in k: print(v, k)
PY
$B --list > $d/list.txt 2>&1
for i in 1 2; do /tmp/srb 201 > $d/exp/run$i.txt 2>&1 || echo "exp $i failed"; done
for f in $d/exp/run*.txt; do echo "== $f"; grep -v checked $f | grep -E "fp32|prod|bulk256|bulk128|bulk512|ch12tile|memcpy"; done
F='^(softmax|log_softmax)/(production|warp|tile)/(f32|f16|bf16)/rows:49152/cols:(32|64|128)/'
for r in 1 2 3 4 5 6; do
  $B --benchmark_filter="$F" --benchmark_out=$d/bench_r$r.json --benchmark_out_format=json > /dev/null 2>$d/bench_r$r.err || echo "bench $r failed"
done
t0=$(date +%s)
$B --verify > $d/verify_full.txt 2>&1; echo "verify full rc=$? $(( $(date +%s) - t0 )) s"; tail -2 $d/verify_full.txt
t0=$(date +%s)
for tool in memcheck racecheck synccheck; do for t in f32 f16; do
  compute-sanitizer --tool $tool --error-exitcode 9 $B --verify --quick --kernel tile --dtype $t > $d/san_${tool}_$t.txt 2>&1; echo "$tool $t rc=$? $(( $(date +%s) - t0 )) s"; tail -1 $d/san_${tool}_$t.txt
done; done
compute-sanitizer --tool memcheck --error-exitcode 9 $B --verify --quick --kernel production --dtype bf16 > $d/san_memcheck_prod_bf16.txt 2>&1; echo "memcheck prod bf16 rc=$?"; tail -1 $d/san_memcheck_prod_bf16.txt
cd $OUT && tar czf tile4.tgz tile4 && rm -rf tile4
echo "total done"
