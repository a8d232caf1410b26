#!/bin/bash
set -u
source scratch/env.sh
d=$OUT/rows2; mkdir -p $d
t0=$(date +%s)
nvidia-smi --query-gpu=uuid,clocks.sm,clocks.mem,temperature.gpu,vbios_version --format=csv > $d/smi.csv
cfg="-G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=$PWD/.gpu-deps"
rm -rf /tmp/r2src; mkdir /tmp/r2src; tar cf - --exclude=./xb --exclude=./bin . | tar xf - -C /tmp/r2src
(cd /tmp/r2src && patch -p1 < scratch/rows2.patch > /dev/null && cmake -S . -B /tmp/xr $cfg -DCMAKE_CUDA_FLAGS=-DCH09X_ROWS2=1 > /dev/null 2>&1 && cmake --build /tmp/xr -j8 --target ch09_welford_layernorm > $d/build_rows2.log 2>&1; echo "rows2 build rc=$?") &
( cmake -S . -B xb $cfg > /dev/null 2>&1 && cmake --build xb -j8 --target ch09_welford_layernorm > $d/build_base.log 2>&1; echo "base build rc=$?" ) &
wait
echo "builds $(( $(date +%s) - t0 )) s"
R2=/tmp/r2src/bin/ch09_welford_layernorm
$R2 --verify --kernel warp > $d/verify_rows2.txt 2>&1; echo "verify rows2 rc=$? $(tail -n 1 $d/verify_rows2.txt)"
F='layer_norm/(warp|dispatch)/(f16|bf16)/rows:49152/cols:(512|1024|1536)/'
r=1
while [ $(( $(date +%s) - t0 )) -lt ${BUDGET:-400} ]; do
  if [ $((r % 2)) -eq 1 ]; then order="base rows2"; else order="rows2 base"; fi
  for w in $order; do
    if [ $w = base ]; then b=bin/ch09_welford_layernorm; else b=$R2; fi
    $b --benchmark_filter="$F" --benchmark_out=$d/${w}_r$r.json --benchmark_out_format=json > /dev/null 2>&1
  done
  echo "round $r $(( $(date +%s) - t0 )) s"; r=$((r+1))
done
cd $OUT && tar czf rows2.tgz rows2 && rm -rf rows2
