set -u
source scratch/env.sh
d=$OUT/h2; mkdir -p $d/ab
t0=$(date +%s)
[ -f /tmp/b/CMakeCache.txt ] || cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=$PWD/.gpu-deps -DCUDNN_ROOT=$CUDNN_ROOT > $d/cfg.txt 2>&1
cmake --build /tmp/b --target ch11_elementwise_template > $d/build.txt 2>&1 || { tail -30 $d/build.txt; exit 1; }
echo "built at $(( $(date +%s) - t0 )) s" >> $d/log.txt
nvidia-smi --query-gpu=uuid,name --format=csv > $d/smi.csv
B=bin/ch11_elementwise_template
G='gelu/pack/f32/rows:1/cols:1048576'
one() { # name round filter [env...]
  local n=$1 r=$2 f=$3; shift 3
  env "$@" $B --benchmark_filter="$f" --benchmark_out=$d/ab/${n}_r$r.json --benchmark_out_format=json > /dev/null 2>&1
}
N=(iso small smallkeep isowarm smallwarm)
for r in 1 2 3 4 5 6; do
  for i in 0 1 2 3 4; do
    case ${N[$(( (i + r) % 5 ))]} in
      iso) one iso $r "^$G/" X=1 ;;
      small) one small $r "^(relu/pack/f32/rows:1/cols:1048576|$G)/" X=1 ;;
      smallkeep) one smallkeep $r "^(relu/pack/f32/rows:1/cols:1048576|$G)/" COURSE_X_KEEP=1 ;;
      isowarm) one isowarm $r "^$G/" COURSE_WARMUP_MS=2000 ;;
      smallwarm) one smallwarm $r "^(relu/pack/f32/rows:1/cols:1048576|$G)/" COURSE_WARMUP_MS=2000 ;;
    esac
  done
  echo "round $r at $(( $(date +%s) - t0 )) s" >> $d/log.txt
done
# clocks while a two-benchmark process runs
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,utilization.gpu --format=csv -lms 10 > $d/clocks.csv 2>&1 &
P=$!
sleep 0.5; echo "start $(date +%H:%M:%S.%N)" >> $d/clocks_marks.txt
env COURSE_WARMUP_MS=1000 $B --benchmark_filter="^(relu/pack/f32/rows:1/cols:1048576|$G)/" --benchmark_out=$d/ab/smiwatch_r1.json --benchmark_out_format=json > $d/smiwatch_stdout.txt 2>&1
echo "end $(date +%H:%M:%S.%N)" >> $d/clocks_marks.txt
sleep 0.3; kill $P
cd $OUT && tar czf h2.tgz h2 && rm -rf h2
