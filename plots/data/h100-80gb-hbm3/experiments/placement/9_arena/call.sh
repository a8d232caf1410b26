set -u
source scratch/env.sh
export COURSE_GIT_COMMIT=$(cat scratch/head)
d=$OUT/data; mkdir -p $d $OUT/chk
t0=$(date +%s)
CFG="-G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=$PWD/.gpu-deps -DCUDNN_ROOT=$CUDNN_ROOT"
cmake -S . -B /tmp/b $CFG > $OUT/cfg.txt 2>&1 && cmake --build /tmp/b --target ch00_bandwidth_ceiling ch09_welford_layernorm ch10_reduce_scale ch11_elementwise_template ch12_production_softmax peer_cudnn > $OUT/build.txt 2>&1 || { tail -30 $OUT/build.txt; exit 1; }
echo "built at $(( $(date +%s) - t0 )) s" >> $OUT/log.txt
nvidia-smi --query-gpu=uuid,name --format=csv > $OUT/smi.csv
G='gelu/pack/f32/rows:1/cols:1048576'
for r in 1 2 3; do
  bin/ch11_elementwise_template --benchmark_filter="^$G/" --benchmark_repetitions=3 --benchmark_out=$OUT/chk/iso_r$r.json --benchmark_out_format=json > /dev/null 2>&1
  bin/ch11_elementwise_template --benchmark_filter="^(relu/pack/f32/rows:1/cols:1048576|$G)/" --benchmark_repetitions=2 --benchmark_out=$OUT/chk/small_r$r.json --benchmark_out_format=json > /dev/null 2>&1
  bin/ch12_production_softmax --benchmark_filter='^softmax/production/f32/rows:49152/cols:32/' --benchmark_repetitions=3 --benchmark_out=$OUT/chk/iso12_r$r.json --benchmark_out_format=json > /dev/null 2>&1
done
echo "checks at $(( $(date +%s) - t0 )) s" >> $OUT/log.txt
scripts/run-chapters.sh --out $d ch12 > $OUT/ch12.txt 2>&1; echo "ch12 rc $? at $(( $(date +%s) - t0 )) s" >> $OUT/log.txt
scripts/run-peers.sh --out $d > $OUT/peers.txt 2>&1; echo "peers rc $? at $(( $(date +%s) - t0 )) s" >> $OUT/log.txt
bin/ch12_production_softmax --paths $d/ch12_production_softmax.paths.json > /dev/null 2>&1; echo "paths rc $?" >> $OUT/log.txt
for c in ch00 ch09 ch10 ch11; do scripts/run-chapters.sh --out $d $c > $OUT/$c.txt 2>&1; echo "$c rc $? at $(( $(date +%s) - t0 )) s" >> $OUT/log.txt; done
cd $OUT && tar czf all.tgz data chk *.txt smi.csv && rm -rf data chk
