#!/bin/bash
# run-chapters.sh [--quick | --sweep shapes] [--kernel K] [--no-verify] [--bin DIR] [--out DIR] [--input-fill normal|outliers] [chNN ...]
# For each chapter executable (all of them by default): its --verify suite, then its benchmark
# sweep, writing Google Benchmark JSON to DIR/<chapter>.json (default plots/data/<gpu-slug>/), and
# chapter 14's path choices to DIR/ch14_softmax_backward.paths.json (the standard sweep only).
# --sweep shapes: the shapes a model brings instead (odd widths, vocabulary rows, few long rows),
# to DIR/<chapter>.shapes.json. --kernel: the variants timed (the chapters' flag). --no-verify: the
# benchmarks only, for binaries this same run has just verified (make run's second sweep).
# --input-fill: the values the benchmarks time (the chapters' flag; normal by default).
# Stops at the first failed verification: numbers of a wrong kernel are not worth keeping.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/bin"
out=""
quick=()
fill=()
sweep=()
kernel=()
suffix=""
verify=1
chapters=()
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=(--quick) ;;
    --bin) bin=$2; shift ;;
    --out) out=$2; shift ;;
    --input-fill) fill=(--input-fill "$2"); shift ;;
    --sweep) sweep=(--sweep "$2"); [ "$2" = standard ] || suffix=".$2"; shift ;;
    --kernel) kernel=(--kernel "$2"); shift ;;
    --no-verify) verify=0 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    ch[0-9][0-9]*) chapters+=("$1") ;;
    *) echo "run-chapters.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done

mapfile -t all < <(find "$bin" -maxdepth 1 -type f -name 'ch[0-9][0-9]_*' -perm -u+x | sort)
[ ${#all[@]} -gt 0 ] || { echo "no chapter executables in $bin: build first (make)" >&2; exit 1; }
info=$("${all[0]}" --device-info 2>&1)
if [ $? -ne 0 ]; then
  echo "$info"
  # Called by make chNN (some chapters) or make run (all): name what was asked for.
  case ${#chapters[@]} in 0) asked="the chapters are" ;; 1) asked="${chapters[0]} is" ;; *) asked="${chapters[*]} are" ;; esac
  echo "No usable CUDA GPU on this machine: $asked built (in $bin), but verifying and benchmarking need one."
  echo "Without a GPU you can still run 'make test' (host tests; the GPU tests report SKIPPED),"
  echo "'make docs' (the course site) and 'make plots' (figures from the committed measurements)."
  exit 1
fi
slug=$(echo "$info" | awk '/^slug:/ {print $2}')
[ -n "$out" ] || out="$root/plots/data/$slug"
mkdir -p "$out"
echo "$info" | sed 's/^/  /'
echo "results -> $out"

selected=()
for exe in "${all[@]}"; do
  name=$(basename "$exe")
  if [ ${#chapters[@]} -eq 0 ]; then selected+=("$exe"); continue; fi
  for c in "${chapters[@]}"; do
    case "$name" in "$c"|"$c"_*) selected+=("$exe") ;; esac
  done
done
[ ${#selected[@]} -gt 0 ] || { echo "no chapter matches: ${chapters[*]}" >&2; exit 2; }

for exe in "${selected[@]}"; do
  name=$(basename "$exe")
  if [ $verify -eq 1 ]; then
    echo "=== $name: verify"
    "$exe" --verify "${quick[@]}" > "$out/$name.verify.log" 2>&1
    rc=$?
    tail -n 1 "$out/$name.verify.log"
    if [ $rc -ne 0 ]; then
      grep -m 20 'FAIL' "$out/$name.verify.log"
      echo "$name failed verification (log: $out/$name.verify.log): not benchmarking it." >&2
      exit 1
    fi
    rm -f "$out/$name.verify.log"
  fi
  echo "=== $name: benchmark"
  "$exe" "${quick[@]}" "${sweep[@]}" "${kernel[@]}" "${fill[@]}" --benchmark_out="$out/$name$suffix.json" \
    --benchmark_out_format=json || exit 1
  # Chapter 14 also writes the production softmax's path choices for this GPU (its lesson's table,
  # scripts/derive-paths.py): with the standard sweep, beside its JSON.
  if [ "$name" = ch14_softmax_backward ] && [ -z "$suffix" ] && [ ${#quick[@]} -eq 0 ]; then
    "$exe" --paths "$out/$name.paths.json" || exit 1
  fi
done
