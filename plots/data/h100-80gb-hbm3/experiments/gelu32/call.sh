set -u
source scratch/env.sh
d=$OUT/x; mkdir -p $d/ab
t0=$(date +%s)
CFG="-G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=$PWD/.gpu-deps -DCUDNN_ROOT=$CUDNN_ROOT"
cmake -S . -B /tmp/b $CFG > $d/cfg.txt 2>&1 && cmake --build /tmp/b --target ch00_bandwidth_ceiling ch11_elementwise_template > $d/build.txt 2>&1 || { tail -30 $d/build.txt; exit 1; }
cp bin/ch11_elementwise_template /tmp/base11
cmake -S . -B /tmp/p $CFG -DCMAKE_CUDA_FLAGS=-DCH11X_GELU32_PHI > $d/cfg_phi.txt 2>&1 && cmake --build /tmp/p --target ch11_elementwise_template > $d/build_phi.txt 2>&1 || { tail -30 $d/build_phi.txt; exit 1; }
cp bin/ch11_elementwise_template /tmp/phi11
echo "built at $(( $(date +%s) - t0 )) s" >> $d/log.txt
nvidia-smi --query-gpu=uuid,name,clocks.sm,clocks.mem --format=csv > $d/smi.csv
cuobjdump --dump-resource-usage /tmp/phi11 2>&1 | grep -A1 "Gelu<float>" | head -20 > $d/resource_phi.txt
cuobjdump --dump-resource-usage /tmp/base11 2>&1 | grep -A1 "Gelu<float>" | head -20 > $d/resource_base.txt
/tmp/phi11 --verify --kernel gelu --dtype f32 > $d/verify_phi_gelu_f32.txt 2>&1; echo "verify phi f32 rc $?" >> $d/log.txt
/tmp/phi11 --verify --quick --kernel gelu > $d/verify_phi_gelu_quick.txt 2>&1; echo "verify phi quick rc $?" >> $d/log.txt
echo "verified at $(( $(date +%s) - t0 )) s" >> $d/log.txt
F='^((gelu|scale|relu)/pack/f32/rows:1/cols:(1048576|16777216|268435456)|cast_from_f32/pack/f16/rows:1/cols:(1048576|16777216))/'
run() { # variant round
  case $1 in
    base) /tmp/base11 --benchmark_filter="$F" --benchmark_out=$d/ab/base_r$2.json --benchmark_out_format=json ;;
    phi)  /tmp/phi11 --benchmark_filter="$F" --benchmark_out=$d/ab/phi_r$2.json --benchmark_out_format=json ;;
    relupos) CH11X_SHIFT=8 /tmp/base11 --benchmark_filter='^relu/pack/f32/rows:1/cols:(1048576|16777216)/' --benchmark_out=$d/ab/relupos_r$2.json --benchmark_out_format=json ;;
    copy) bin/ch00_bandwidth_ceiling --rows 1 --cols 1048576 --dtype f32 --benchmark_out=$d/ab/copy20_r$2.json --benchmark_out_format=json
          bin/ch00_bandwidth_ceiling --rows 1 --cols 16777216 --dtype f32 --benchmark_out=$d/ab/copy24_r$2.json --benchmark_out_format=json ;;
  esac > /dev/null 2>&1
}
V=(base phi relupos copy)
for r in 1 2 3 4 5 6 7 8; do
  for i in 0 1 2 3; do run ${V[$(( (i + r) % 4 ))]} $r; done
  echo "round $r at $(( $(date +%s) - t0 )) s" >> $d/log.txt
  [ $(( $(date +%s) - t0 )) -gt 480 ] && break
done
cd $OUT && tar czf x.tgz x && rm -rf x
