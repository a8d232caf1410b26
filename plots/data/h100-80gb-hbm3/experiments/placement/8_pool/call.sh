set -u
source scratch/env.sh
d=$OUT/h7; mkdir -p $d/ab
nvidia-smi --query-gpu=uuid,name --format=csv > $d/smi.csv
[ -f /tmp/b/CMakeCache.txt ] || cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=$PWD/.gpu-deps -DCUDNN_ROOT=$CUDNN_ROOT > $d/cfg.txt 2>&1
cmake --build /tmp/b --target ch11_elementwise_template > $d/build.txt 2>&1 || { tail -30 $d/build.txt; exit 1; }
B=bin/ch11_elementwise_template
G='gelu/pack/f32/rows:1/cols:1048576'
one() { local n=$1 r=$2 f=$3; shift 3
  env "$@" $B --benchmark_filter="$f" --benchmark_repetitions=3 --benchmark_out=$d/ab/${n}_r$r.json --benchmark_out_format=json > /dev/null 2>$d/ab/${n}_r$r.err; }
for r in 1 2 3 4 5 6; do
  for i in 0 1 2; do
    case $(( (i + r) % 3 )) in
      0) one iso $r "^$G/" X=1 ;;
      1) one pool $r "^$G/" COURSE_X_POOL=1 COURSE_X_ADDR=1 ;;
      2) one poolsmall $r "^(relu/pack/f32/rows:1/cols:1048576|$G)/" COURSE_X_POOL=1 COURSE_X_ADDR=1 ;;
    esac
  done
done
cd $OUT && tar czf h7.tgz h7 && rm -rf h7
