set -u
source scratch/env.sh
d=$OUT/r; mkdir -p $d/ab
t0=$(date +%s)
CFG="-G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=$PWD/.gpu-deps -DCUDNN_ROOT=$CUDNN_ROOT"
(cmake -S . -B /tmp/new $CFG > $d/cfg_new.txt 2>&1 && cmake --build /tmp/new --target ch12_production_softmax -j 10 > $d/build_new.txt 2>&1; echo new rc $? >> $d/log.txt) &
(cd scratch/old && cmake -S . -B /tmp/old $CFG > $d/cfg_old.txt 2>&1 && cmake --build /tmp/old --target ch12_production_softmax -j 6 > $d/build_old.txt 2>&1; echo old rc $? >> $d/log.txt) &
wait
echo "built at $(( $(date +%s) - t0 )) s" >> $d/log.txt
NEW=bin/ch12_production_softmax; OLD=scratch/old/bin/ch12_production_softmax
ls -la $NEW $OLD >> $d/log.txt 2>&1 || { tail -30 $d/build_*.txt; exit 1; }
cuobjdump --dump-resource-usage $NEW > $d/resource_new.txt 2>&1
cuobjdump -sass $OLD > /tmp/old.sass 2>&1; cuobjdump -sass $NEW > /tmp/new.sass 2>&1
python3 scratch/sass_diff.py /tmp/old.sass /tmp/new.sass 'softmax_backward_warp_kernel' > $d/sass_backward_warp.txt 2>&1
python3 scratch/sass_diff.py /tmp/old.sass /tmp/new.sass 'softmax_tile_kernel|softmax_warp_kernel' > $d/sass_forward.txt 2>&1
$NEW --device-info > $d/device.txt 2>&1
$NEW --verify --kernel 'backward/(tile|warp|production)' > $d/verify_bwd.txt 2>&1; echo "verify rc $? at $(( $(date +%s) - t0 )) s" >> $d/log.txt
for k in "0 tile" "1 warp"; do :; done
# sanitizers over the tile variant's quick suite, two at a time
san() { compute-sanitizer --tool $1 --error-exitcode 9 $NEW --verify --quick --kernel 'backward/tile' --dtype $2 > $d/san_$1_$2.txt 2>&1; echo "san $1 $2 rc $?" >> $d/log.txt; }
san memcheck f32 & san racecheck f32 & wait
san synccheck f32 & san memcheck f16 & wait
san racecheck bf16 & san memcheck bf16 & wait
echo "sanitized at $(( $(date +%s) - t0 )) s" >> $d/log.txt
# A/B: tile, warp and the old binary's warp, separate processes, order rotated per round
F='(f32|f16|bf16)/rows:49152/cols:(32|64|128|256)/'
arm() { case $1 in
  tile) $NEW --benchmark_filter="^(log_)?softmax_backward/tile/$F" --benchmark_out=$d/ab/tile_r$2.json --benchmark_out_format=json > /dev/null 2>&1 ;;
  warp) $NEW --benchmark_filter="^(log_)?softmax_backward/warp/$F" --benchmark_out=$d/ab/warp_r$2.json --benchmark_out_format=json > /dev/null 2>&1 ;;
  old) COURSE_GIT_COMMIT=$(cat scratch/old_head) $OLD --benchmark_filter="^(log_)?softmax_backward/warp/$F" --benchmark_out=$d/ab/old_r$2.json --benchmark_out_format=json > /dev/null 2>&1 ;;
esac; }
A=(tile warp old)
for r in 1 2 3 4 5 6 7 8 9 10; do
  for i in 0 1 2; do arm ${A[$(( (i + r) % 3 ))]} $r; done
  echo "round $r at $(( $(date +%s) - t0 )) s" >> $d/log.txt
  [ $(( $(date +%s) - t0 )) -gt 500 ] && break
done
cd $OUT && tar czf r.tgz r && rm -rf r
