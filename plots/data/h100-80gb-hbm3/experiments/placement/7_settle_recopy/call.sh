set -u
source scratch/env.sh
d=$OUT/h6; mkdir -p $d/ab
nvidia-smi --query-gpu=uuid,name --format=csv > $d/smi.csv
[ -f /tmp/b/CMakeCache.txt ] || cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=$PWD/.gpu-deps -DCUDNN_ROOT=$CUDNN_ROOT > $d/cfg.txt 2>&1
cmake --build /tmp/b --target ch11_elementwise_template ch12_production_softmax > $d/build.txt 2>&1 || { tail -30 $d/build.txt; exit 1; }
B=bin/ch11_elementwise_template
C=bin/ch12_production_softmax
G='gelu/pack/f32/rows:1/cols:1048576'
S='softmax/production/f32/rows:49152/cols:32'
one() { local n=$1 r=$2 x=$3 f=$4; shift 4
  env "$@" $x --benchmark_filter="^$f/" --benchmark_repetitions=3 --benchmark_out=$d/ab/${n}_r$r.json --benchmark_out_format=json > /dev/null 2>&1; }
for r in 1 2 3 4 5; do
  for i in 0 1 2 3 4 5; do
    case $(( (i + r) % 6 )) in
      0) one iso $r $B $G X=1 ;;
      1) one recopy $r $B $G COURSE_X_RECOPY=1 ;;
      2) one settle $r $B $G COURSE_X_SETTLE=1 ;;
      3) one iso12 $r $C $S X=1 ;;
      4) one settle12 $r $C $S COURSE_X_SETTLE=1 ;;
      5) one recopy12 $r $C $S COURSE_X_RECOPY=1 ;;
    esac
  done
done
cd $OUT && tar czf h6.tgz h6 && rm -rf h6
