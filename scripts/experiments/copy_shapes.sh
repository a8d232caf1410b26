#!/bin/bash
# copy_shapes.sh OUTDIR: builds copy_shapes.cu for the GPU it runs on and times cudaMemcpyAsync
# against copy kernels of several shapes at 2-64 MB each way (MB = 2^20 bytes): chapter 11's 2^20
# elements in 16-bit and fp32 at 2 and 4 MB, chapter 12's 49152 x 32 rows in fp16 and fp32 at 3
# and 6 MB, 49152 x 64 and x 128 fp32 at 12 and 24 MB, chapter 11's 2^24 elements in 16-bit and
# fp32 at 32 and 64 MB. Then Nsight Compute lists the kernels that three rounds at 6 MB launch
# (their shapes and DRAM bytes; the memcpy is not among them: it runs as nothing Nsight Compute
# profiles).
# Output: OUTDIR/times.txt, OUTDIR/kernels.ncu.csv.
# copy_shapes.sh OUTDIR MB...: the given sizes only (MB each way), OUTDIR/times.txt, no profile.
set -uo pipefail
out=$1
shift
sizes=${*:-2 3 4 6 12 24 32 64}
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
exe=$(mktemp -d)/copy_shapes
nvcc -O2 -arch=native -o "$exe" "$here/copy_shapes.cu" || exit 1
for mb in $sizes; do "$exe" $mb 41 || exit 1; done | tee "$out/times.txt"
[ $# -eq 0 ] || exit 0
M=gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__registers_per_thread,dram__bytes_read.sum,dram__bytes_write.sum
ncu --clock-control none --cache-control none --replay-mode application --csv --page raw --metrics $M \
    --launch-count 60 "$exe" 6 3 2>&1 | grep '^"' > "$out/kernels.ncu.csv"
