#!/bin/bash
set -u
source scratch/env.sh
d=$OUT/prof; mkdir -p $d
t0=$(date +%s)
nvidia-smi --query-gpu=uuid,clocks.sm,clocks.mem,temperature.gpu,vbios_version --format=csv > $d/smi.csv
cfg="-G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=$PWD/.gpu-deps"
for v in kn pf; do
  rm -rf /tmp/${v}src; mkdir /tmp/${v}src; tar cf - --exclude=./xb --exclude=./bin . | tar xf - -C /tmp/${v}src
done
(cd /tmp/pfsrc && patch -p1 < scratch/pf.patch > /dev/null && cmake -S . -B /tmp/xp $cfg "-DCMAKE_CUDA_FLAGS=-DCH09X_PF -DCH12X_PF" > /dev/null 2>&1 && cmake --build /tmp/xp -j8 --target ch09_welford_layernorm ch12_production_softmax > $d/build_pf.log 2>&1; echo "pf build rc=$?") &
(cd /tmp/knsrc && patch -p1 < scratch/pf.patch > /dev/null && cmake -S . -B /tmp/xk $cfg > /dev/null 2>&1 && cmake --build /tmp/xk -j8 --target ch09_welford_layernorm ch12_production_softmax > $d/build_base.log 2>&1; echo "knob build rc=$?") &
wait
echo "builds $(( $(date +%s) - t0 )) s"
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__block_size,launch__grid_size,l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum,smsp__inst_executed.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,smsp__sass_inst_executed_op_global_ld.sum,smsp__sass_inst_executed_op_global_st.sum,sm__cycles_active.avg,sm__cycles_active.max,sm__cycles_active.min,sm__cycles_elapsed.max,launch__occupancy_limit_registers
for c in ch12 ch09; do
  if [ $c = ch12 ]; then exe=ch12_production_softmax; K='^softmax/warp/'; R=softmax_warp_kernel; else exe=ch09_welford_layernorm; K='^layer_norm/warp/'; R=layer_norm_warp_kernel; fi
  for dt in f16 f32; do
    cols=1024; [ $dt = f32 ] && cols=512
    csv=$d/${c}_${dt}_${cols}.ncu.csv
    { echo "# shape: rows=49152 cols=$cols"
      echo "# how: ncu --clock-control none --launch-count 1, each launch in its own process, caches flushed by ncu before it"
      echo "# launches: one row per group (the chapter's grid); one wave of resident blocks, looping; the loop with the next row prefetched"
    } > $csv
    for v in base w1 pf1; do
      case $v in base) b=/tmp/knsrc/bin/$exe; W= ;; w1) b=/tmp/knsrc/bin/$exe; W=1 ;; pf1) b=/tmp/pfsrc/bin/$exe; W=1 ;; esac
      if [ -n "$W" ]; then export CH09X_WAVES=$W CH12X_WAVES=$W; else unset CH09X_WAVES CH12X_WAVES; fi
      ncu --clock-control none --csv --page raw --metrics $M -k regex:$R --launch-count 1 $b --verify --rows 49152 --cols $cols --dtype $dt --kernel "$K" > /tmp/o.txt 2> $d/err_${c}_${dt}_$v.txt
      echo "$c $dt $v rc=$? $(grep -c '^"[0-9]' /tmp/o.txt) launches; $(grep -E 'passed|failed' /tmp/o.txt | tail -1)"
      grep '^"' /tmp/o.txt >> $csv
      unset CH09X_WAVES CH12X_WAVES
    done
  done
done
echo "done $(( $(date +%s) - t0 )) s"
find $d -size 0 -delete
cd $OUT && tar czf prof.tgz prof && rm -rf prof
