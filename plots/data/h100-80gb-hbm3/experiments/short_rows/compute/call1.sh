#!/bin/bash
set -u
export PATH=/usr/local/cuda/bin:$PATH
cd "$(dirname "$0")/.."
nvidia-smi --query-gpu=uuid,name,vbios_version,clocks.max.sm,clocks.max.mem --format=csv > $OUT/smi.csv
nvcc -std=c++17 -O3 -arch=sm_90 -Icommon -Ichapters/12_production_softmax -o /tmp/src scripts/experiments/short_rows_compute.cu || exit 1
cuobjdump -sass /tmp/src > /tmp/src.sass 2>/dev/null && python3 - > $OUT/sass_counts.txt <<'PY'
import re
cur=None; counts={}
for line in open('/tmp/src.sass'):
    m=re.search(r'Function : (\S+)', line)
    if m: cur=m.group(1); counts[cur]=0; continue
    if cur and re.match(r'\s+/\*[0-9a-f]{4}\*/\s+\S', line): counts[cur]+=1
for k,v in counts.items(): print(v, k)
PY
for i in 1 2 3 4; do /tmp/src 301 > $OUT/run$i.txt 2>&1 || { echo "run $i failed"; cat $OUT/run$i.txt | tail; }; done
for f in $OUT/run*.txt; do echo "== $f"; grep -v checked $f; done
