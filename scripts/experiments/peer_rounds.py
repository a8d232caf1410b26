#!/usr/bin/env python3
"""peer_rounds.py DIR [OURS:PEER,PEER ...] [--match TEXT]: the rounds of peer_rounds.sh as a
table (plot.py's fmt_rounds, which the lessons' `rounds` marker also uses): per point, each side's
median GB/s over the rounds, ours against the best peer's, and in how many rounds ours was at or
above every peer of that round. Files are <who>_r<round>.json; each OURS:PEERS argument names a
group (by default peer_rounds.sh's two: ours12:cudnn,torch12 and ours11:torch11)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import plot  # noqa: E402  (needs matplotlib: scripts/find-python.sh finds a python3 with it)

GROUPS = {"ours12": ("cudnn", "torch12"), "ours11": ("torch11",)}

if __name__ == "__main__":
    args = sys.argv[1:]
    match = ""
    if "--match" in args:
        i = args.index("--match")
        match = args[i + 1] if i + 1 < len(args) else sys.exit(__doc__)
        del args[i:i + 2]
    if not args or any(":" not in g for g in args[1:]):
        sys.exit(__doc__)
    groups = {g.split(":")[0]: tuple(g.split(":")[1].split(",")) for g in args[1:]} or GROUPS
    print(plot.fmt_rounds(os.path.abspath(args[0]), groups, match))
