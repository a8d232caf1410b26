#!/usr/bin/env python3
"""Tables of the placement experiment, from its JSON (see NOTES.md).

    python3 summarize.py [FOLDER...]     (default: every numbered folder here)

Each folder holds <variant>_r<round>.json, one process each. The table is scripts/plot.py's
`positions` marker (fmt_positions): each benchmark numbered by its place in its process, the
median GB/s over the rounds, the lowest and highest, and the number of rounds.
"""
import glob
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, *[os.pardir] * 5, "scripts"))
import plot  # noqa: E402


def main():
    folders = sys.argv[1:] or sorted(d for d in glob.glob(os.path.join(HERE, "[0-9]_*")) if os.path.isdir(d))
    for f in folders:
        print(f"### {os.path.basename(os.path.normpath(f))}\n\n{plot.fmt_positions(os.path.abspath(f))}\n")


if __name__ == "__main__":
    main()
