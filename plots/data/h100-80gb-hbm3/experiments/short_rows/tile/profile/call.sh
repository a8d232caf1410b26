#!/bin/bash
set -u
source scratch/env.sh
ls bin/ch12_production_softmax > /dev/null || exit 1
for c in 32 64; do for k in warp tile; do
  PROFILE_KERNEL=$k scripts/profile.sh /tmp/prof/${k}_$c 49152 $c ch12 2>&1 | tail -2
  mv /tmp/prof/${k}_$c/ch12_production_softmax.ncu.csv /tmp/prof/tile_49152x${c}_$k.ncu.csv
done; done
nvidia-smi --query-gpu=uuid,name --format=csv > /tmp/prof/smi.csv
cd /tmp && tar czf $OUT/prof.tgz prof/*.csv
