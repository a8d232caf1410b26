#!/bin/bash
# ch12 log-softmax backward, fp32 exp by ex2.approx (CH12X_FAST32) against base and the peers.
set -u
source scratch/env.sh
d=$OUT/fast32; mkdir -p $d
t0=$(date +%s)
nvidia-smi --query-gpu=uuid,clocks.sm,clocks.mem,temperature.gpu,vbios_version --format=csv > $d/smi.csv
cfg="-G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=$PWD/.gpu-deps"
rm -rf /tmp/fastsrc; mkdir /tmp/fastsrc; tar cf - --exclude=./xb --exclude=./bin . | tar xf - -C /tmp/fastsrc; (cd /tmp/fastsrc && patch -p1 < scratch/fast32.patch > /dev/null && cmake -S . -B /tmp/xf $cfg -DCMAKE_CUDA_FLAGS=-DCH12X_FAST32=1 > /dev/null 2>&1 && cmake --build /tmp/xf -j8 --target ch12_production_softmax > $d/build_fast.log 2>&1; echo "fast build rc=$?") &
( cmake -S . -B xb $cfg > /dev/null 2>&1 && cmake --build xb -j8 --target ch12_production_softmax peer_cudnn > $d/build_base.log 2>&1; echo "base build rc=$?" ) &
wait
echo "builds $(( $(date +%s) - t0 )) s"
mkdir -p /tmp/binf && cp /tmp/fastsrc/bin/ch12_production_softmax /tmp/binf/ || exit 1
/tmp/binf/ch12_production_softmax --verify --dtype f32 --kernel production > $d/verify_fast_f32_production.txt 2>&1; echo "verify fast production f32 rc=$? $(tail -1 $d/verify_fast_f32_production.txt)"
/tmp/binf/ch12_production_softmax --verify --dtype f32 --kernel warp > $d/verify_fast_f32_warp.txt 2>&1; echo "verify fast warp f32 rc=$? $(tail -1 $d/verify_fast_f32_warp.txt)"
echo "verify $(( $(date +%s) - t0 )) s"
rows='rows:49152/cols:(32|64|128|256|512|1024)'
ops='(log_)?softmax_backward'
run() {
  case $1 in
    base) bin/ch12_production_softmax --benchmark_filter="^$ops/production/f32/$rows/" --benchmark_out=$d/base_r$2.json --benchmark_out_format=json > /dev/null ;;
    fast) /tmp/binf/ch12_production_softmax --benchmark_filter="^$ops/production/f32/$rows/" --benchmark_out=$d/fast_r$2.json --benchmark_out_format=json > /dev/null ;;
    cudnn) bin/peer_cudnn --benchmark_filter="^$ops/cudnn/f32/$rows/" --benchmark_out=$d/cudnn_r$2.json --benchmark_out_format=json > /dev/null ;;
    torch) python3 baselines/torch_peers.py --filter "^$ops/torch/f32/$rows\$" --out $d/torch_r$2.json > /dev/null ;;
  esac
}
who=(base fast cudnn torch)
r=1
while [ $(( $(date +%s) - t0 )) -lt ${BUDGET:-540} ]; do
  for i in 0 1 2 3; do w=${who[$(( (i + r) % 4 ))]}; run $w $r || echo "round $r $w failed"; done
  echo "round $r $(( $(date +%s) - t0 )) s"; r=$((r+1))
done
nvidia-smi --query-gpu=uuid,clocks.sm,clocks.mem,temperature.gpu --format=csv >> $d/smi.csv
cd $OUT && tar czf fast32.tgz fast32 && rm -rf fast32
