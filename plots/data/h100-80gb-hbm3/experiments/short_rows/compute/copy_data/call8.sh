#!/bin/bash
set -u
export PATH=/usr/local/cuda/bin:$PATH
d=$OUT/cd; mkdir -p $d
nvidia-smi --query-gpu=uuid,name,vbios_version --format=csv > $d/smi.csv
cp scratch/call8.sh $d/
nvcc -std=c++17 -O3 -arch=sm_90 -o /tmp/cd scripts/experiments/copy_data.cu || exit 1
for mb in 6 64 512; do /tmp/cd $mb $([ $mb = 512 ] && echo 41 || echo 201) > $d/copy_${mb}MB.txt 2>&1; cat $d/copy_${mb}MB.txt; done
