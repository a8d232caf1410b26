#!/bin/bash
set -u
source scratch/env.sh
d=$OUT/tile; mkdir -p $d
nvidia-smi --query-gpu=uuid,name,vbios_version,clocks.max.sm,clocks.max.mem --format=csv > $d/smi.csv
t0=$(date +%s)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DCMAKE_PREFIX_PATH=$PWD/.gpu-deps -DCUDNN_ROOT=$CUDNN_ROOT > $d/cmake.log 2>&1 || { tail $d/cmake.log; exit 1; }
cmake --build build -j 16 --target ch12_production_softmax > $d/build.log 2>&1 || { tail -30 $d/build.log; exit 1; }
echo "build $(( $(date +%s) - t0 )) s"
B=bin/ch12_production_softmax
cuobjdump -sass $B > /tmp/ch12.sass 2>/dev/null
python3 - > $d/sass_tile.txt <<'PY'
import re
cur=None; c={}
for line in open('/tmp/ch12.sass'):
    m=re.search(r'Function : (\S+)', line)
    if m: cur=m.group(1); c[cur]={'n':0,'LDS':0,'LDG':0,'UBLKCP':0,'STG':0}; continue
    if cur and re.match(r'\s+/\*[0-9a-f]{4}\*/\s+\S', line):
        c[cur]['n']+=1
        for k in ('LDS','LDG','UBLKCP','STG'):
            if re.search(r'\b'+k+r'\b', line): c[cur][k]+=1
for k,v in c.items():
    if 'tile' in k or 'warp_kernel' in k: print(v, k)
PY
grep -c . $d/sass_tile.txt
$B --list > $d/list.txt 2>&1
t0=$(date +%s)
$B --verify --quick --kernel tile > $d/verify_tile_quick.txt 2>&1; echo "verify tile quick rc=$? $(( $(date +%s) - t0 )) s"; tail -3 $d/verify_tile_quick.txt
t0=$(date +%s)
$B --verify --kernel tile > $d/verify_tile_full.txt 2>&1; echo "verify tile full rc=$? $(( $(date +%s) - t0 )) s"; tail -3 $d/verify_tile_full.txt
t0=$(date +%s)
$B --verify --kernel production > $d/verify_prod_full.txt 2>&1; echo "verify production full rc=$? $(( $(date +%s) - t0 )) s"; tail -3 $d/verify_prod_full.txt
t0=$(date +%s)
for tool in memcheck racecheck synccheck; do
  compute-sanitizer --tool $tool --error-exitcode 9 $B --verify --quick --kernel tile --dtype f32 > $d/san_$tool.txt 2>&1; echo "$tool rc=$? $(( $(date +%s) - t0 )) s"; tail -2 $d/san_$tool.txt
done
F='^(softmax|log_softmax)/(production|warp|tile)/(f32|f16|bf16)/rows:49152/cols:(32|64|128|256|512)/'
for r in 1 2 3 4; do
  $B --benchmark_filter="$F" --benchmark_out=$d/bench_r$r.json --benchmark_out_format=json > /dev/null 2>$d/bench_r$r.err || echo "bench $r failed"
done
echo "total done"
