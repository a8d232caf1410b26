set -u
source scratch/env.sh
export COURSE_GIT_COMMIT=$(cat scratch/head)
d=$OUT/ceil; mkdir -p $d/ab
t0=$(date +%s)
nvidia-smi --query-gpu=uuid,name --format=csv > $d/smi.csv
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=$PWD/.gpu-deps -DCUDNN_ROOT=$CUDNN_ROOT > $d/cfg.txt 2>&1
cmake --build /tmp/b --target ch00_bandwidth_ceiling ch11_elementwise_template > $d/build.txt 2>&1 || { tail -30 $d/build.txt; exit 1; }
echo "built at $(( $(date +%s) - t0 )) s" >> $d/log.txt
for r in 1 2 3 4 5 6 7 8; do
  for i in 0 1; do
    if [ $(( (i + r) % 2 )) = 0 ]; then
      bin/ch00_bandwidth_ceiling --rows 1 --cols 16777216 --dtype f32 --benchmark_out=$d/ab/copy_r$r.json --benchmark_out_format=json > /dev/null 2>&1
    else
      bin/ch11_elementwise_template --benchmark_filter='^gelu/pack/f32/rows:1/cols:16777216/' --benchmark_out=$d/ab/gelu_r$r.json --benchmark_out_format=json > /dev/null 2>&1
    fi
  done
done
echo "rounds at $(( $(date +%s) - t0 )) s" >> $d/log.txt
scripts/experiments/copy_shapes.sh $d/copy_shapes 64 > /dev/null 2>&1; echo "copy_shapes rc $? at $(( $(date +%s) - t0 )) s" >> $d/log.txt
cd $OUT && tar czf ceil.tgz ceil && rm -rf ceil
