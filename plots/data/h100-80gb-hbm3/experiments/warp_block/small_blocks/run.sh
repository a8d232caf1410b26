#!/bin/bash
set -u
source scratch/env.sh
d=$OUT/blk; mkdir -p $d
t0=$(date +%s)
nvidia-smi --query-gpu=uuid,clocks.sm,clocks.mem,temperature.gpu,vbios_version --format=csv > $d/smi.csv
cfg="-G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=$PWD/.gpu-deps"
rm -rf /tmp/bsrc; mkdir /tmp/bsrc; tar cf - --exclude=./xb --exclude=./bin . | tar xf - -C /tmp/bsrc
cd /tmp/bsrc && patch -p1 < scratch/blk.patch > /dev/null && cmake -S . -B /tmp/xbk $cfg > /dev/null 2>&1 && cmake --build /tmp/xbk -j16 --target ch09_welford_layernorm ch12_production_softmax > $d/build.log 2>&1; echo "build rc=$? $(( $(date +%s) - t0 )) s"
B9=/tmp/bsrc/bin/ch09_welford_layernorm; B12=/tmp/bsrc/bin/ch12_production_softmax
mkdir -p $d/verify
for b in 32 64; do
  CH09X_BLOCK=$b $B9 --verify --kernel warp > $d/verify/ch09_b$b.txt 2>&1; echo "verify ch09 b$b rc=$? $(tail -n 1 $d/verify/ch09_b$b.txt)"
  CH12X_BLOCK=$b $B12 --verify --quick --kernel warp > $d/verify/ch12_b$b.txt 2>&1; echo "verify ch12 b$b rc=$? $(tail -n 1 $d/verify/ch12_b$b.txt)"
done
echo "verify $(( $(date +%s) - t0 )) s"
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__block_size,launch__grid_size,l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum,smsp__inst_executed.sum,smsp__sass_inst_executed_op_global_ld.sum,smsp__sass_inst_executed_op_global_st.sum,sm__cycles_active.avg,sm__cycles_active.max,sm__cycles_active.min,sm__cycles_elapsed.max
mkdir -p $d/profile
for c in ch12 ch09; do
  if [ $c = ch12 ]; then exe=$B12; K='^softmax/warp/'; R=softmax_warp_kernel; V=CH12X_BLOCK; else exe=$B9; K='^layer_norm/warp/'; R=layer_norm_warp_kernel; V=CH09X_BLOCK; fi
  csv=$d/profile/${c}_f16_1024.ncu.csv
  { echo "# shape: rows=49152 cols=1024"
    echo "# how: ncu --clock-control none --launch-count 1, each launch in its own process, caches flushed by ncu before it"
    echo "# launches: blocks of 128 threads (the chapter's); blocks of 64 threads; blocks of 32 threads"
  } > $csv
  for b in 128 64 32; do
    env $V=$b ncu --clock-control none --csv --page raw --metrics $M -k regex:$R --launch-count 1 $exe --verify --rows 49152 --cols 1024 --dtype f16 --kernel "$K" > /tmp/o.txt 2> /dev/null
    echo "$c b$b rc=$? $(grep -c '^"[0-9]' /tmp/o.txt) launches; $(grep -E 'passed|failed' /tmp/o.txt | tail -1)"
    grep '^"' /tmp/o.txt >> $csv
  done
done
echo "profile $(( $(date +%s) - t0 )) s"
F12='^((softmax|log_softmax)/warp/(f32|f16|bf16)/rows:49152/cols:(256|512|1024)|softmax/warp/(f16|bf16)/rows:49152/cols:(1536|2048))/'
F9='^layer_norm/warp/((f32|f16|bf16)/rows:49152/cols:(256|512|1024)|(f16|bf16)/rows:49152/cols:(1536|2048))/'
vars=(b128 b64 b32)
mkdir -p $d/ch09 $d/ch12
r=1
while [ $(( $(date +%s) - t0 )) -lt ${BUDGET:-500} ]; do
  for i in 0 1 2; do
    w=${vars[$(( (i + r) % 3 ))]}
    CH09X_BLOCK=${w#b} $B9 --benchmark_filter="$F9" --benchmark_out=$d/ch09/${w}_r$r.json --benchmark_out_format=json > /dev/null 2>&1
    CH12X_BLOCK=${w#b} $B12 --benchmark_filter="$F12" --benchmark_out=$d/ch12/${w}_r$r.json --benchmark_out_format=json > /dev/null 2>&1
  done
  echo "round $r $(( $(date +%s) - t0 )) s"; r=$((r+1))
done
cd $OUT && tar czf blk.tgz blk && rm -rf blk
