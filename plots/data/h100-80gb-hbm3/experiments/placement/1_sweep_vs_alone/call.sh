set -u
source scratch/env.sh
d=$OUT/i; mkdir -p $d/ab
t0=$(date +%s)
if [ ! -x bin/ch11_elementwise_template ] || [ ! -x bin/ch00_bandwidth_ceiling ] || ! grep -q . /tmp/b/CMakeCache.txt 2>/dev/null; then
  CFG="-G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=$PWD/.gpu-deps -DCUDNN_ROOT=$CUDNN_ROOT"
  cmake -S . -B /tmp/b $CFG > $d/cfg.txt 2>&1
fi
cmake --build /tmp/b --target ch00_bandwidth_ceiling ch11_elementwise_template > $d/build.txt 2>&1 || { tail -30 $d/build.txt; exit 1; }
echo "built at $(( $(date +%s) - t0 )) s" >> $d/log.txt
nvidia-smi --query-gpu=uuid,name --format=csv > $d/smi.csv
B=bin/ch11_elementwise_template
one() { # name filter round
  $B --benchmark_filter="$2" --benchmark_out=$d/ab/$1_r$3.json --benchmark_out_format=json > /dev/null 2>&1
}
for r in 1 2 3 4 5 6 7 8; do
  for i in 0 1 2 3 4 5; do
    case $(( (i + r) % 6 )) in
      0) one gelu '^gelu/pack/f32/rows:1/cols:1048576/' $r ;;
      1) one relu '^relu/pack/f32/rows:1/cols:1048576/' $r ;;
      2) one scale '^scale/pack/f32/rows:1/cols:1048576/' $r ;;
      3) one cast '^cast_from_f32/pack/f16/rows:1/cols:1048576/' $r ;;
      4) one sweep '^(relu|gelu|scale)/pack/f32/|^cast_from_f32/pack/f16/' $r ;;
      5) bin/ch00_bandwidth_ceiling --rows 1 --cols 1048576 --dtype f32 --benchmark_filter='memcpy' --benchmark_out=$d/ab/memcpy_r$r.json --benchmark_out_format=json > /dev/null 2>&1 ;;
    esac
  done
  echo "round $r at $(( $(date +%s) - t0 )) s" >> $d/log.txt
done
cd $OUT && tar czf i.tgz i && rm -rf i
