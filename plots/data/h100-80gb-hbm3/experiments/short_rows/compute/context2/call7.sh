#!/bin/bash
set -u
export PATH=/usr/local/cuda/bin:$PATH
d=$OUT/hc2; mkdir -p $d
nvidia-smi --query-gpu=uuid,name,vbios_version --format=csv > $d/smi.csv
cp scratch/call7.sh $d/
nvcc -std=c++17 -O3 -arch=sm_90 -Icommon -Ichapters/12_production_softmax -o /tmp/hc scripts/experiments/harness_context.cu || exit 1
cuobjdump -sass /tmp/hc | grep -E "Function|MUFU|CALL|BRA|BSSY" | sed 's/^ *//' | cut -c1-120 > $d/sass_branches.txt
for i in 1 2 3; do /tmp/hc 201 > $d/run$i.txt 2>&1; done
for f in $d/run*.txt; do grep -v "harness-order" $f; done
