#!/bin/bash
# The harness's launch path: harness_context with `api` (ch12::softmax, as the harness calls it),
# and, if Nsight Systems is here, a timeline of the harness's benchmark and of the program.
set -u
source scratch/env.sh
d=$OUT/api; mkdir -p $d; t0=$(date +%s)
nvidia-smi --query-gpu=uuid,name,vbios_version --format=csv > $d/smi.csv
cp scratch/call6.sh $d/
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=$PWD/.gpu-deps > /dev/null 2>&1 && cmake --build /tmp/b -j16 --target ch12_production_softmax > $d/build.log 2>&1; echo "build rc=$? $(( $(date +%s) - t0 )) s"
O=/tmp/b/CMakeFiles/ch12_production_softmax.dir/chapters/12_production_softmax
nvcc -std=c++17 -O3 -arch=sm_90 -DWITH_API --expt-relaxed-constexpr -Icommon -Ichapters/12_production_softmax -o /tmp/hc_api \
  scripts/experiments/harness_context.cu $O/dispatch.cu.o $O/softmax_f32.cu.o $O/softmax_f16.cu.o $O/softmax_bf16.cu.o \
  /tmp/b/common/libcourse_harness.a /tmp/b/common/libcourse_host.a -L$PWD/.gpu-deps/lib/x86_64-linux-gnu -lbenchmark -lpthread > $d/link.log 2>&1
echo "link rc=$? $(( $(date +%s) - t0 )) s"; tail -5 $d/link.log
for i in 1 2 3; do /tmp/hc_api 201 > $d/run$i.txt 2>&1; done
echo "runs $(( $(date +%s) - t0 )) s"
if command -v nsys > /dev/null; then
  nsys --version > $d/nsys.txt
  nsys profile -t cuda -o /tmp/harness -f true bin/ch12_production_softmax --rows 49152 --cols 32 --benchmark_filter='^softmax/production/f32/' > /dev/null 2>&1
  nsys stats --report cuda_gpu_trace --format csv -o $d/harness /tmp/harness.nsys-rep > /dev/null 2>&1
  nsys stats --report cuda_api_trace --format csv -o $d/harness /tmp/harness.nsys-rep > /dev/null 2>&1
  nsys profile -t cuda -o /tmp/loop -f true /tmp/hc_api 20 > /dev/null 2>&1
  nsys stats --report cuda_gpu_trace --format csv -o $d/loop /tmp/loop.nsys-rep > /dev/null 2>&1
  nsys stats --report cuda_api_trace --format csv -o $d/loop /tmp/loop.nsys-rep > /dev/null 2>&1
  ls -la $d
else
  echo "no nsys" > $d/nsys.txt; ls /usr/local/cuda/bin | grep -i nsys; ls /opt/nvidia 2>/dev/null
fi
echo "done $(( $(date +%s) - t0 )) s"
for f in $d/run*.txt; do grep -v "harness-order" $f; done
cd $OUT && tar czf api.tgz api && rm -rf api
