set -u
source scratch/env.sh
d=$OUT/h5; mkdir -p $d/ab
nvidia-smi --query-gpu=uuid,name --format=csv > $d/smi.csv
[ -f /tmp/b/CMakeCache.txt ] || cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=$PWD/.gpu-deps -DCUDNN_ROOT=$CUDNN_ROOT > $d/cfg.txt 2>&1
cmake --build /tmp/b --target ch11_elementwise_template > $d/build.txt 2>&1 || { tail -30 $d/build.txt; exit 1; }
B=bin/ch11_elementwise_template
G='gelu/pack/f32/rows:1/cols:1048576'
one() { local n=$1 r=$2; shift 2
  env "$@" $B --benchmark_filter="^$G/" --benchmark_repetitions=3 --benchmark_out=$d/ab/${n}_r$r.json --benchmark_out_format=json > /dev/null 2>&1; }
for r in 1 2 3 4 5 6; do
  for i in 0 1 2 3; do
    case $(( (i + r) % 4 )) in
      0) one iso $r X=1 ;;
      1) one static $r COURSE_X_EVSTATIC=1 ;;
      2) one burn $r COURSE_X_EVBURN=2 ;;
      3) one burn16 $r COURSE_X_EVBURN=16 ;;
    esac
  done
done
cd $OUT && tar czf h5.tgz h5 && rm -rf h5
