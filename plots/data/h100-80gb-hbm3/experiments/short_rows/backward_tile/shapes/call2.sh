set -u
source scratch/env.sh
d=$OUT/r2; mkdir -p $d/ab
t0=$(date +%s)
CFG="-G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=$PWD/.gpu-deps -DCUDNN_ROOT=$CUDNN_ROOT"
cmake -S . -B /tmp/new $CFG > $d/cfg_new.txt 2>&1 && cmake --build /tmp/new --target ch12_production_softmax > $d/build_new.txt 2>&1 || { tail -30 $d/build_new.txt; exit 1; }
echo "built at $(( $(date +%s) - t0 )) s" >> $d/log.txt
NEW=bin/ch12_production_softmax
cuobjdump --dump-resource-usage $NEW > $d/resource_new.txt 2>&1
for k in backward/tile backward/warp backward/production; do
  $NEW --verify --kernel $k > $d/verify_${k//\//_}.txt 2>&1; echo "verify $k rc $? at $(( $(date +%s) - t0 )) s" >> $d/log.txt
done
arm() {  # arm round dtype cols
  $NEW --rows 49152 --cols $4 --dtype $3 --benchmark_filter="^(log_)?softmax_backward/$1/" \
    --benchmark_out=$d/ab/$1_$3_$4_r$2.json --benchmark_out_format=json > /dev/null 2>&1
}
A=(tile warp)
for r in 1 2 3 4 5 6 7 8 9 10; do
  for s in "f32 24" "f32 48" "f16 24" "f16 48" "f16 96" "bf16 24" "bf16 96"; do
    for i in 0 1; do arm ${A[$(( (i + r) % 2 ))]} $r $s; done
  done
  echo "round $r at $(( $(date +%s) - t0 )) s" >> $d/log.txt
  [ $(( $(date +%s) - t0 )) -gt 480 ] && break
done
cd $OUT && tar czf r2.tgz r2 && rm -rf r2
