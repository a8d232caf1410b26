set -u
source scratch/env.sh
d=$OUT/h; mkdir -p $d/ab $d/addr
t0=$(date +%s)
[ -f /tmp/b/CMakeCache.txt ] || cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=$PWD/.gpu-deps -DCUDNN_ROOT=$CUDNN_ROOT > $d/cfg.txt 2>&1
cmake --build /tmp/b --target ch11_elementwise_template > $d/build.txt 2>&1 || { tail -30 $d/build.txt; exit 1; }
echo "built at $(( $(date +%s) - t0 )) s" >> $d/log.txt
nvidia-smi --query-gpu=uuid,name --format=csv > $d/smi.csv
B=bin/ch11_elementwise_template
G='gelu/pack/f32/rows:1/cols:1048576'
SW='^(relu|gelu|scale)/pack/f32/|^cast_from_f32/pack/f16/'
one() { # name round filter [env]
  env COURSE_X_ADDR=1 ${4:-} $B --benchmark_filter="$3" --benchmark_out=$d/ab/$1_r$2.json --benchmark_out_format=json > /dev/null 2> $d/addr/$1_r$2.txt
}
N=(iso big mid small bigalign sweep sweepalign)
for r in 1 2 3 4 5 6; do
  for i in 0 1 2 3 4 5 6; do
    case ${N[$(( (i + r) % 7 ))]} in
      iso) one iso $r "^$G/" ;;
      big) one big $r "^(relu/pack/f32/rows:1/cols:268435456|$G)/" ;;
      mid) one mid $r "^(relu/pack/f32/rows:1/cols:16777216|$G)/" ;;
      small) one small $r "^(relu/pack/f32/rows:1/cols:1048576|$G)/" ;;
      bigalign) one bigalign $r "^(relu/pack/f32/rows:1/cols:268435456|$G)/" COURSE_X_ALIGN=1 ;;
      sweep) one sweep $r "$SW" ;;
      sweepalign) one sweepalign $r "$SW" COURSE_X_ALIGN=1 ;;
    esac
  done
  echo "round $r at $(( $(date +%s) - t0 )) s" >> $d/log.txt
done
cd $OUT && tar czf h.tgz h && rm -rf h
