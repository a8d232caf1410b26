#!/bin/bash
# Exercise 14's question: the 16-bit forward's block size at 4096 columns (CH12X_FWD_BLOCK forces it), against 384 (the rule) and the shared-memory path.
set -u
DIRTY=-dirty source scratch/env.sh
d=$OUT/blk4096; mkdir -p $d/verify; t0=$(date +%s)
nvidia-smi --query-gpu=uuid,clocks.sm,clocks.mem,temperature.gpu --format=csv > $d/smi.csv
cp scratch/fwdblock.patch scratch/d4.sh $d/
rm -rf /tmp/xs; mkdir /tmp/xs; tar cf - --exclude=./xb --exclude=./bin . | tar xf - -C /tmp/xs
cd /tmp/xs && patch -p1 < scratch/fwdblock.patch > /dev/null && cmake -S . -B /tmp/xsb -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=$PWD/.gpu-deps > /dev/null 2>&1 && cmake --build /tmp/xsb -j16 --target ch12_production_softmax > /dev/null 2>&1; echo "build rc=$? $(( $(date +%s) - t0 )) s"
B=/tmp/xs/bin/ch12_production_softmax
for b in 256 512; do for t in f16 bf16; do for op in softmax log_softmax; do
  CH12X_FWD_BLOCK=$b $B --verify --rows 4224 --cols 4096 --dtype $t --kernel ^$op/production/ >> $d/verify/b$b.txt 2>&1 || echo "FAIL b$b $t $op"
done; done; done
echo "verify: $(grep -c '\[  OK  \]' $d/verify/b256.txt) + $(grep -c '\[  OK  \]' $d/verify/b512.txt) OK; $(( $(date +%s) - t0 )) s"
F='^(softmax|log_softmax)/(production|smem)/(f16|bf16)/rows:49152/cols:4096/'
vars=(b384 b256 b512); r=1
while [ $(( $(date +%s) - t0 )) -lt ${BUDGET:-175} ]; do
  for i in 0 1 2; do
    w=${vars[$(( (i + r) % 3 ))]}
    if [ $w = b384 ]; then unset CH12X_FWD_BLOCK; else export CH12X_FWD_BLOCK=${w#b}; fi
    $B --benchmark_filter="$F" --benchmark_out=$d/${w}_r$r.json --benchmark_out_format=json > /dev/null 2>&1
  done
  unset CH12X_FWD_BLOCK; r=$((r+1))
done
echo "rounds $((r-1)) $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf blk4096.tgz blk4096 && rm -rf blk4096
