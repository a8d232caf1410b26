set -u
source scratch/env.sh
d=$OUT/data; mkdir -p $d $OUT/ab
t0=$(date +%s)
CFG="-G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=$PWD/.gpu-deps -DCUDNN_ROOT=$CUDNN_ROOT"
cmake -S . -B /tmp/b $CFG > $OUT/cfg.txt 2>&1 && cmake --build /tmp/b --target ch00_bandwidth_ceiling ch09_welford_layernorm ch10_reduce_scale ch11_elementwise_template ch12_production_softmax peer_cudnn > $OUT/build.txt 2>&1 || { tail -30 $OUT/build.txt; exit 1; }
echo "built at $(( $(date +%s) - t0 )) s" >> $OUT/log.txt
nvidia-smi --query-gpu=uuid,name --format=csv > $OUT/smi.csv
NEW=bin/ch12_production_softmax
san() { compute-sanitizer --tool $1 --error-exitcode 9 $NEW --verify --quick --kernel backward/tile --dtype $2 > /tmp/san_$1_$2.txt 2>&1; echo "san $1 $2 rc $?" >> $OUT/log.txt; tail -3 /tmp/san_$1_$2.txt > $OUT/san_$1_$2.txt; }
san memcheck f32 & san racecheck f16 & san synccheck bf16 & wait
echo "sanitized at $(( $(date +%s) - t0 )) s" >> $OUT/log.txt
arm() { $NEW --rows 49152 --cols $4 --dtype $3 --benchmark_filter="^(log_)?softmax_backward/$1/" \
    --benchmark_out=$OUT/ab/$1_r$2.$3_$4.json --benchmark_out_format=json > /dev/null 2>&1; }
A=(tile warp)
for r in 1 2 3 4 5 6; do
  for s in "f32 72" "f32 96" "f32 120" "f16 144" "f16 192" "f16 240" "bf16 192"; do
    for i in 0 1; do arm ${A[$(( (i + r) % 2 ))]} $r $s; done
  done
  echo "round $r at $(( $(date +%s) - t0 )) s" >> $OUT/log.txt
done
scripts/run-chapters.sh --out $d ch12 > $OUT/ch12.txt 2>&1; echo "ch12 rc $? at $(( $(date +%s) - t0 )) s" >> $OUT/log.txt
scripts/run-peers.sh --out $d > $OUT/peers.txt 2>&1; echo "peers rc $? at $(( $(date +%s) - t0 )) s" >> $OUT/log.txt
$NEW --paths $d/ch12_production_softmax.paths.json > /dev/null 2>&1; echo "paths rc $?" >> $OUT/log.txt
for c in ch00 ch09 ch10 ch11; do scripts/run-chapters.sh --out $d $c > $OUT/$c.txt 2>&1; echo "$c rc $? at $(( $(date +%s) - t0 )) s" >> $OUT/log.txt; done
cd $OUT && tar czf all.tgz data ab *.txt smi.csv && rm -rf data ab
