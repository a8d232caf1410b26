#!/bin/bash
# Is the time data-dependent? Ours (harness, x with the suite's outliers vs plain normal via
# CHX_BENCH_PLAIN), cuDNN (same harness), PyTorch (torch_data.py), alternating, on one board.
set -u
DIRTY=-dirty source scratch/env.sh
d=$OUT/data; mkdir -p $d; t0=$(date +%s)
nvidia-smi --query-gpu=uuid,name,vbios_version --format=csv > $d/smi.csv
cp scratch/plain.patch scratch/call5.sh $d/
rm -rf /tmp/xs; mkdir /tmp/xs; tar cf - --exclude=./xb --exclude=./bin . | tar xf - -C /tmp/xs
cd /tmp/xs && patch -p1 < scratch/plain.patch > /dev/null && cmake -S . -B /tmp/xsb -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=$PWD/.gpu-deps > /dev/null 2>&1 && cmake --build /tmp/xsb -j16 --target ch12_production_softmax ch11_elementwise_template peer_cudnn > $d/build.log 2>&1; echo "build rc=$? $(( $(date +%s) - t0 )) s"
rows='rows:49152/cols:(32|64|256)'
for r in 1 2 3; do
  for v in outliers plain; do
    if [ $v = plain ]; then export CHX_BENCH_PLAIN=1; else unset CHX_BENCH_PLAIN; fi
    bin/ch12_production_softmax --benchmark_filter="^(log_)?softmax/production/f32/$rows/" --benchmark_out=$d/ch12_${v}_r$r.json --benchmark_out_format=json > /dev/null 2>&1
    bin/peer_cudnn --benchmark_filter="^(log_)?softmax/cudnn/f32/$rows/" --benchmark_out=$d/cudnn_${v}_r$r.json --benchmark_out_format=json > /dev/null 2>&1
    bin/ch11_elementwise_template --benchmark_filter="^(gelu|cast_from_f32)/pack/(f32|f16|bf16)/rows:1/cols:(1048576|16777216)/" --benchmark_out=$d/ch11_${v}_r$r.json --benchmark_out_format=json > /dev/null 2>&1
  done
  unset CHX_BENCH_PLAIN
done
echo "harness runs $(( $(date +%s) - t0 )) s"
python3 scripts/experiments/torch_data.py 5 > $d/torch_data.txt 2>&1
echo "torch $(( $(date +%s) - t0 )) s"; cat $d/torch_data.txt
cd $OUT && tar czf data.tgz data && rm -rf data
