set -u
source scratch/env.sh
d=$OUT/s; mkdir -p $d
if [ ! -x /tmp/base11 ]; then
  CFG="-G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=$PWD/.gpu-deps -DCUDNN_ROOT=$CUDNN_ROOT"
  cmake -S . -B /tmp/b $CFG > $d/cfg.txt 2>&1 && cmake --build /tmp/b --target ch11_elementwise_template > $d/build.txt 2>&1 && cp bin/ch11_elementwise_template /tmp/base11
fi
cuobjdump -sass /tmp/base11 > /tmp/all.sass
python3 - /tmp/all.sass > $d/kernels.sass <<'PY'
import sys,re
txt=open(sys.argv[1]).read().split("\n")
keep=False; out=[]
for l in txt:
    if "Function :" in l:
        keep = ("elementwise_kernelILi4ELi1ELb0E" in l) and any(k in l for k in ["4ReluIf","4GeluIf","11ScaleFactoryIf","11CastFromF32I6__half"])
    if keep: out.append(l)
print("\n".join(out))
PY
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,smsp__inst_executed.sum,launch__grid_size,launch__registers_per_thread,sm__cycles_elapsed.avg,sm__cycles_active.avg,lts__t_sectors_srcunit_tex_op_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,smsp__warps_launched.sum,sm__warps_active.avg.pct_of_peak_sustained_active
for k in relu scale gelu; do
  for cc in all none; do
    ncu --clock-control none --cache-control $cc --csv --page raw --metrics $M -k regex:elementwise_kernel /tmp/base11 --verify --rows 1 --cols 1048576 --dtype f32 --kernel $k/pack > $d/ncu_${k}_$cc.csv 2>&1
  done
done
ncu --clock-control none --csv --page raw --metrics $M -k regex:elementwise_kernel /tmp/base11 --verify --rows 1 --cols 1048576 --dtype f16 --kernel cast_from_f32/pack > $d/ncu_cast_all.csv 2>&1
cd $OUT && tar czf s.tgz s && rm -rf s
