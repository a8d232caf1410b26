set -u
source scratch/env.sh
d=$OUT/r3; mkdir -p $d/ab $d/prof
t0=$(date +%s)
CFG="-G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=$PWD/.gpu-deps -DCUDNN_ROOT=$CUDNN_ROOT"
cmake -S . -B /tmp/new $CFG > $d/cfg_new.txt 2>&1 && cmake --build /tmp/new --target ch12_production_softmax > $d/build_new.txt 2>&1 || { tail -30 $d/build_new.txt; exit 1; }
echo "built at $(( $(date +%s) - t0 )) s" >> $d/log.txt
nvidia-smi --query-gpu=uuid,name --format=csv > $d/smi.csv
NEW=bin/ch12_production_softmax
for c in 32 64; do for k in warp tile; do
  PROFILE_KERNEL=softmax_backward/$k scripts/profile.sh /tmp/prof/${k}_$c 49152 $c ch12 > /dev/null 2>&1
  mv /tmp/prof/${k}_$c/ch12_production_softmax.ncu.csv $d/prof/backward_49152x${c}_$k.ncu.csv
done; done
echo "profiled at $(( $(date +%s) - t0 )) s" >> $d/log.txt
arm() {  # arm round dtype cols
  $NEW --rows 49152 --cols $4 --dtype $3 --benchmark_filter="^(log_)?softmax_backward/$1/" \
    --benchmark_out=$d/ab/$1_$3_$4_r$2.json --benchmark_out_format=json > /dev/null 2>&1
}
A=(tile warp)
for r in 1 2 3 4 5 6 7 8 9 10; do
  for s in "f32 8" "f32 12" "f32 16" "f32 20" "f16 8" "f16 16" "f16 56" "f16 64" "f16 72" "bf16 16" "bf16 64"; do
    for i in 0 1; do arm ${A[$(( (i + r) % 2 ))]} $r $s; done
  done
  echo "round $r at $(( $(date +%s) - t0 )) s" >> $d/log.txt
  [ $(( $(date +%s) - t0 )) -gt 420 ] && break
done
cd $OUT && tar czf r3.tgz r3 && rm -rf r3
