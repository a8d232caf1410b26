#!/bin/bash
set -u
export PATH=/usr/local/cuda/bin:$PATH
d=$OUT/bulk; mkdir -p $d
nvidia-smi --query-gpu=uuid,name,vbios_version,clocks.max.sm,clocks.max.mem --format=csv > $d/smi.csv
nvcc -std=c++17 -O3 -arch=sm_90 -Icommon -Ichapters/12_production_softmax -o /tmp/srb scripts/experiments/short_rows_bulk.cu || exit 1
cuobjdump -sass /tmp/srb > /tmp/srb.sass 2>/dev/null && python3 - > $d/sass_counts.txt <<'PY'
import re
cur=None; counts={}
for line in open('/tmp/srb.sass'):
    m=re.search(r'Function : (\S+)', line)
    if m: cur=m.group(1); counts[cur]=0; continue
    if cur and re.match(r'\s+/\*[0-9a-f]{4}\*/\s+\S', line): counts[cur]+=1
for k,v in counts.items(): print(v, k)
PY
grep -c UBLKCP /tmp/srb.sass >> $d/sass_counts.txt
for i in 1 2 3; do /tmp/srb 201 > $d/run$i.txt 2>&1 || { echo "run $i failed"; tail $d/run$i.txt; }; done
for f in $d/run*.txt; do echo "== $f"; grep -v checked $f; done
