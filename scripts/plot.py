#!/usr/bin/env python3
"""Figures and tables of the course, generated from the committed benchmark JSON.

    plot.py [--data plots/data] [--out plots/figures] [--tables] [--check]

Reads every plots/data/<gpu>/chNN_*.json written by the chapters' harness (Google Benchmark JSON
with the course's counters and environment stamp) and the peers' peer_*.json (`make compare`),
and writes, per GPU:
  <out>/<gpu>/chNN_name.png/.svg   one figure per chapter: GB/s against columns, a panel per
                                   dtype (and per operation and long-row sweep); its kernels against
                                   the previous chapter's best (plotting/style.py: PREVIOUS), the
                                   copy of the same bytes, and the peers in chapters 09, 11 and 12
  <out>/<gpu>/progression.png/.svg each chapter's best softmax at each shape
  <out>/<gpu>/peers.png/.svg       the course's best against cuDNN and PyTorch
With --tables it also rewrites, between markers, the tables and numbers quoted in README.md and
chapters/*/README.md (plotting/markers.py lists the markers). --check fails when the data cannot
be parsed or a marker names data that does not exist, and notes a lesson that differs from the
data. The work is done by the package scripts/plotting/, one module per job.
"""
import argparse
import glob
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from plotting import DataError  # noqa: E402
from plotting.load import load_all, load_peers  # noqa: E402
from plotting.markers import check_markers, rewrite_markers  # noqa: E402


def figures(data, peers, out):
    from plotting.figures import chapter_figure, peers_figure, progression_figure  # matplotlib
    for gpu, chapters in data.items():
        gpu_name = next(iter(chapters.values()))["context"].get("gpu_name", gpu)
        out_dir = os.path.join(out, gpu)
        for ch in chapters.values():
            chapter_figure(ch, gpu_name, out_dir, chapters, peers.get(gpu))
        progression_figure(chapters, gpu_name, out_dir)
        extra = ""
        if peers.get(gpu):
            peers_figure(chapters, peers[gpu], gpu_name, out_dir)
            extra = f" + peers ({', '.join(sorted(peers[gpu]))})"
        print(f"{gpu}: {len(chapters)} chapter figures + progression{extra} -> {out_dir}")


def lessons(data, peers, data_dir, write, check):
    readmes = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "chapters", "*", "README.md")))
    for path in readmes:
        rel = os.path.relpath(path, ROOT)
        with open(path) as f:
            text = f.read()
        notes = check_markers(text, rel)  # raises on unpaired markers; notes on retired kinds
        waiting = []  # value markers whose data lacks their counter (the matched copy) yet
        new = rewrite_markers(text, data, peers, data_dir, waiting)  # raises on a marker without data
        if waiting:
            print(f"note: {rel}: {len(waiting)} value marker(s) left as they are, their data lacks the counter "
                  f"(a run of the current harness adds it); first: {waiting[0][len('value marker left as it is: '):]}")
        if write and new != text:
            with open(path, "w") as f:
                f.write(new)
            print(f"updated {rel}")
        elif check and new != text:
            print(f"note: {rel} differs from the data (run make plots)")
        for note in notes if check else ():
            print(f"note: {note}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=os.path.join(ROOT, "plots", "data"))
    ap.add_argument("--out", default=os.path.join(ROOT, "plots", "figures"))
    ap.add_argument("--tables", action="store_true", help="rewrite the marked tables and values in the READMEs")
    ap.add_argument("--check", action="store_true", help="also check every marker in the READMEs resolves")
    args = ap.parse_args()
    try:
        data = load_all(args.data)
        peers = load_peers(args.data)
        if not data:
            raise DataError(f"no chNN_*.json under {args.data}/<gpu>/")
        figures(data, peers, args.out)
        lessons(data, peers, args.data, args.tables, args.check)
    except DataError as e:
        print(f"plot.py: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
