#!/bin/bash
set -u
export PATH=/usr/local/cuda/bin:$PATH
d=$OUT/hc; mkdir -p $d
nvidia-smi --query-gpu=uuid,name,vbios_version --format=csv > $d/smi.csv
nvcc -std=c++17 -O3 -arch=sm_90 -Icommon -Ichapters/12_production_softmax -o /tmp/hc scripts/experiments/harness_context.cu || exit 1
for i in 1 2 3; do /tmp/hc 201 > $d/run$i.txt 2>&1; done
cat $d/run*.txt
