#!/bin/sh
# Regenerates every figure and table from the committed JSON into a scratch folder, with no
# GPU (scripts/plot.py --check: it also fails on a lesson marker that names data that does not
# exist): the plot script must run and produce a figure per chapter's data, the progression, and
# the peers' figure where peer data is committed.
root=$1
py=$("$root/scripts/find-python.sh") || { echo "SKIPPED: no python3 with matplotlib (scripts/install-deps.sh installs it)"; exit 77; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$py" "$root/scripts/plot.py" --data "$root/plots/data" --out "$out" --check || exit 1
n_json=$(find "$root/plots/data" -mindepth 2 -maxdepth 2 -name 'ch*.json' ! -name '*.*.json' | wc -l)  # plots/data/<gpu>/ only (not experiments/), not side files (*.paths.json, *.accuracy.json)
n_png=$(find "$out" -name 'ch*.png' | wc -l)
echo "$n_json JSON files, $n_png chapter figures"
[ "$n_json" -gt 0 ] || { echo "no committed benchmark data under plots/data"; exit 1; }
[ "$n_png" -ge "$n_json" ] || { echo "fewer figures than chapter data files"; exit 1; }
[ -n "$(find "$out" -name 'progression*.png')" ] || { echo "no progression figure"; exit 1; }
if [ -n "$(find "$root/plots/data" -mindepth 2 -maxdepth 2 -name 'peer_*.json')" ]; then
  [ -n "$(find "$out" -name 'peers.png')" ] || { echo "peer data but no peers figure"; exit 1; }
fi
