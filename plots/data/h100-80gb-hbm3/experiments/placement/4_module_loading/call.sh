set -u
source scratch/env.sh
d=$OUT/h3; mkdir -p $d/ab
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
N=(iso small isoeager smalleager gg)
for r in 1 2 3 4 5 6; do
  for i in 0 1 2 3 4; do
    case ${N[$(( (i + r) % 5 ))]} in
      iso) one iso $r "^$G/" X=1 ;;
      small) one small $r "^(relu/pack/f32/rows:1/cols:1048576|$G)/" X=1 ;;
      isoeager) one isoeager $r "^$G/" CUDA_MODULE_LOADING=EAGER ;;
      smalleager) one smalleager $r "^(relu/pack/f32/rows:1/cols:1048576|$G)/" CUDA_MODULE_LOADING=EAGER ;;
      gg) one gg $r "^($G|gelu/pack/f16/rows:1/cols:1048576|gelu/pack/bf16/rows:1/cols:1048576|scale/pack/f32/rows:1/cols:1048576)/" X=1 ;;
    esac
  done
  echo "round $r at $(( $(date +%s) - t0 )) s" >> $d/log.txt
done
cd $OUT && tar czf h3.tgz h3 && rm -rf h3
