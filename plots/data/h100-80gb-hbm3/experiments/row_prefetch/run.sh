#!/bin/bash
set -u
source scratch/env.sh
d=$OUT/pf; mkdir -p $d
t0=$(date +%s)
nvidia-smi --query-gpu=uuid,clocks.sm,clocks.mem,temperature.gpu,vbios_version --format=csv > $d/smi.csv
cfg="-G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=$PWD/.gpu-deps"
rm -rf /tmp/pfsrc; mkdir /tmp/pfsrc; tar cf - --exclude=./xb --exclude=./bin . | tar xf - -C /tmp/pfsrc
(cd /tmp/pfsrc && patch -p1 < scratch/pf.patch > /dev/null && cmake -S . -B /tmp/xp $cfg "-DCMAKE_CUDA_FLAGS=-DCH09X_PF -DCH12X_PF" > /dev/null 2>&1 && cmake --build /tmp/xp -j8 --target ch09_welford_layernorm ch12_production_softmax > $d/build_pf.log 2>&1; echo "pf build rc=$?") &
rm -rf /tmp/knsrc; mkdir /tmp/knsrc; tar cf - --exclude=./xb --exclude=./bin . | tar xf - -C /tmp/knsrc
(cd /tmp/knsrc && patch -p1 < scratch/pf.patch > /dev/null && cmake -S . -B /tmp/xk $cfg > /dev/null 2>&1 && cmake --build /tmp/xk -j8 --target ch09_welford_layernorm ch12_production_softmax > $d/build_base.log 2>&1; echo "knob build rc=$?") &
wait
echo "builds $(( $(date +%s) - t0 )) s"
P9=/tmp/pfsrc/bin/ch09_welford_layernorm; P12=/tmp/pfsrc/bin/ch12_production_softmax
for w in 0.05 1; do
  CH09X_WAVES=$w $P9 --verify --kernel warp > $d/verify_ch09_pf_w$w.txt 2>&1; echo "verify ch09 pf w$w rc=$? $(tail -n 1 $d/verify_ch09_pf_w$w.txt)"
  CH12X_WAVES=$w $P12 --verify --quick --kernel warp > $d/verify_ch12_pf_w$w.txt 2>&1; echo "verify ch12 pf w$w rc=$? $(tail -n 1 $d/verify_ch12_pf_w$w.txt)"
done
CH12X_WAVES=1 /tmp/knsrc/bin/ch12_production_softmax --verify --quick --kernel warp > $d/verify_ch12_base_w1.txt 2>&1; echo "verify ch12 base w1 rc=$? $(tail -n 1 $d/verify_ch12_base_w1.txt)"
echo "verify $(( $(date +%s) - t0 )) s"
F12='^((softmax|log_softmax)/warp/(f32|f16|bf16)/rows:49152/cols:(256|512|1024)|softmax/warp/(f16|bf16)/rows:49152/cols:2048)/'
F9='^layer_norm/warp/((f32|f16|bf16)/rows:49152/cols:(256|512|1024)|(f16|bf16)/rows:49152/cols:2048)/'
vars=(base w1 pf1 pf2)
r=1
while [ $(( $(date +%s) - t0 )) -lt ${BUDGET:-500} ]; do
  for i in 0 1 2 3; do
    w=${vars[$(( (i + r) % 4 ))]}
    case $w in
      base) b9=/tmp/knsrc/bin/ch09_welford_layernorm; b12=/tmp/knsrc/bin/ch12_production_softmax; W= ;;
      w1) b9=/tmp/knsrc/bin/ch09_welford_layernorm; b12=/tmp/knsrc/bin/ch12_production_softmax; W=1 ;;
      pf1) b9=$P9; b12=$P12; W=1 ;;
      pf2) b9=$P9; b12=$P12; W=2 ;;
    esac
    mkdir -p $d/ch09 $d/ch12
    if [ -n "$W" ]; then export CH09X_WAVES=$W CH12X_WAVES=$W; else unset CH09X_WAVES CH12X_WAVES; fi
    $b9 --benchmark_filter="$F9" --benchmark_out=$d/ch09/${w}_r$r.json --benchmark_out_format=json > /dev/null 2>&1
    $b12 --benchmark_filter="$F12" --benchmark_out=$d/ch12/${w}_r$r.json --benchmark_out_format=json > /dev/null 2>&1
  done
  unset CH09X_WAVES CH12X_WAVES
  echo "round $r $(( $(date +%s) - t0 )) s"; r=$((r+1))
done
cd $OUT && tar czf pf.tgz pf && rm -rf pf
