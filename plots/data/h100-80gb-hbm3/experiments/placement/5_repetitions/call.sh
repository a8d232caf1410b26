set -u
source scratch/env.sh
d=$OUT/h4; mkdir -p $d/ab
nvidia-smi --query-gpu=uuid,name --format=csv > $d/smi.csv
[ -f /tmp/b/CMakeCache.txt ] || cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=$PWD/.gpu-deps -DCUDNN_ROOT=$CUDNN_ROOT > $d/cfg.txt 2>&1
cmake --build /tmp/b --target ch11_elementwise_template ch12_production_softmax > $d/build.txt 2>&1 || { tail -30 $d/build.txt; exit 1; }
B=bin/ch11_elementwise_template
G='gelu/pack/f32/rows:1/cols:1048576'
one() { local n=$1 r=$2 f=$3; shift 3
  env "$@" $B --benchmark_filter="$f" --benchmark_repetitions=3 --benchmark_out=$d/ab/${n}_r$r.json --benchmark_out_format=json > /dev/null 2>&1; }
for r in 1 2 3 4 5 6; do
  if [ $((r % 2)) = 0 ]; then one isorep $r "^$G/" X=1; one smallrep $r "^(relu/pack/f32/rows:1/cols:1048576|$G)/" X=1
  else one smallrep $r "^(relu/pack/f32/rows:1/cols:1048576|$G)/" X=1; one isorep $r "^$G/" X=1; fi
done
C=bin/ch12_production_softmax
S='softmax/production/f32/rows:49152/cols:32'
two() { local n=$1 r=$2 f=$3 rep=$4; shift 4
  env "$@" $C --benchmark_filter="$f" --benchmark_repetitions=$rep --benchmark_out=$d/ab/${n}_r$r.json --benchmark_out_format=json > /dev/null 2>&1; }
for r in 1 2 3 4; do
  for i in 0 1 2; do
    case $(( (i + r) % 3 )) in
      0) two iso12 $r "^$S/" 3 X=1 ;;
      1) two eager12 $r "^$S/" 3 CUDA_MODULE_LOADING=EAGER ;;
      2) two seq12 $r "^(softmax/production/f32/rows:49152/cols:(32|64)|log_softmax/production/f32/rows:49152/cols:32|softmax/production/f16/rows:49152/cols:32)/" 1 X=1 ;;
    esac
  done
done
cd $OUT && tar czf h4.tgz h4 && rm -rf h4
