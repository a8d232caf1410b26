#!/bin/bash
# 16-bit forward on the block-registers path (CH12X_REGS16: rows of more than 4 KB and under 16 KB), A/B in rounds.
set -u
DIRTY=-dirty source scratch/env.sh
d=$OUT/regs16; mkdir -p $d
t0=$(date +%s)
nvidia-smi --query-gpu=uuid,clocks.sm,clocks.mem,temperature.gpu,vbios_version --format=csv > $d/smi.csv
cfg="-G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=$PWD/.gpu-deps"
rm -rf /tmp/xs; mkdir /tmp/xs; tar cf - --exclude=./xb --exclude=./bin . | tar xf - -C /tmp/xs
cp scratch/regs16.patch $d/
cd /tmp/xs && patch -p1 < scratch/regs16.patch > /dev/null && cmake -S . -B /tmp/xsb $cfg > /dev/null 2>&1 && cmake --build /tmp/xsb -j16 --target ch12_production_softmax > $d/build.log 2>&1; echo "build rc=$? $(( $(date +%s) - t0 )) s"
B=/tmp/xs/bin/ch12_production_softmax
$B --device-info > $d/device_info.txt 2>&1
$B --paths $d/paths_base.json > /dev/null 2>&1; CH12X_REGS16=1 $B --paths $d/paths_regs16.json > /dev/null 2>&1
mkdir -p $d/verify
R=$(( 32 * $($B --device-info | awk '/^sm_count:/ {print $2}') ))
echo "rows min $R"
for t in f16 bf16 f32; do
  CH12X_REGS16=1 $B --verify --quick --kernel production --dtype $t > $d/verify/quick_$t.txt 2>&1; echo "quick $t rc=$? $(tail -n 1 $d/verify/quick_$t.txt)"
done
for t in f16 bf16; do for op in softmax log_softmax; do for c in 2048 2049 3072 6144 8191 8192; do for r in $((R-1)) $R; do
  CH12X_REGS16=1 $B --verify --rows $r --cols $c --dtype $t --kernel ^$op/production/ >> $d/verify/edges.txt 2>&1 || echo "FAIL $op $t $r x $c"
done; done; done; done
echo "edges: $(grep -c passed $d/verify/edges.txt) passed lines, $(grep -ci fail $d/verify/edges.txt) fail lines; $(( $(date +%s) - t0 )) s"
F='^((softmax|log_softmax)/production/(f16|bf16)/rows:49152/cols:(1024|1536|2048|3072|4096|6144|8192)|(softmax|log_softmax)/production/f32/rows:49152/cols:(1024|2048|4096))/'
vars=(base regs16)
r=1
while [ $(( $(date +%s) - t0 )) -lt ${BUDGET:-540} ]; do
  for i in 0 1; do
    w=${vars[$(( (i + r) % 2 ))]}
    if [ $w = regs16 ]; then export CH12X_REGS16=1; else unset CH12X_REGS16; fi
    $B --benchmark_filter="$F" --benchmark_out=$d/${w}_r$r.json --benchmark_out_format=json > /dev/null 2>&1
  done
  unset CH12X_REGS16
  echo "round $r $(( $(date +%s) - t0 )) s"; r=$((r+1))
done
cd $OUT && tar czf regs16.tgz regs16 && rm -rf regs16
