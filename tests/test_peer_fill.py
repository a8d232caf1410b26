#!/usr/bin/env python3
"""Host check of the PyTorch peer's copy of the harness's hash (baselines/torch_peers.py).

The peer fills its tensors with the harness's values through int64 tensor arithmetic (PyTorch has no
uint64): splitmix64 with wrapping adds and multiplies and masked shifts, and an unsigned modulo from
two signed ones. Here the same functions run on numpy int64 arrays, which wrap as PyTorch's do, and
are compared with plain uint64 arithmetic on Python integers. Usage: test_peer_fill.py REPO_ROOT
"""
import os
import random
import sys

import numpy as np

M = (1 << 64) - 1


def splitmix64_ref(z):
    z = (z + 0x9E3779B97F4A7C15) & M
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
    return z ^ (z >> 31)


def main():
    sys.path.insert(0, os.path.join(sys.argv[1], "baselines"))
    import torch_peers as tp

    fails = 0
    # The first output of a splitmix64 generator seeded with 0 (the published sequence).
    if splitmix64_ref(0) != 0xE220A8397B1DCDAF:
        print("FAIL: the reference splitmix64 is wrong")
        fails += 1
    rng = random.Random(7)
    vals = [0, 1, 2, (1 << 63) - 1, 1 << 63, M, 0x632BE59BD9B4E019] + [rng.getrandbits(64) for _ in range(20000)]
    arr = np.array([tp._s64(v) for v in vals], dtype=np.int64)
    with np.errstate(over="ignore"):
        got = tp.splitmix64(arr)
    for v, g in zip(vals, got.tolist()):
        if g & M != splitmix64_ref(v):
            print(f"FAIL: splitmix64({v:#x}) = {g & M:#x}, want {splitmix64_ref(v):#x}")
            fails += 1
            if fails > 5:
                break
    # The fill's index hash: seed * C + i, wrapping, for the seeds the bench and --save use.
    for seed in (1, 2, 3, 7920, 7921):
        i = np.arange(0, 5000, dtype=np.int64) * 977
        with np.errstate(over="ignore"):
            h = tp.splitmix64(i + tp._s64(seed * tp.FILL_SEED_MUL))
        for k in (0, 1, 4999):
            want = splitmix64_ref((seed * tp.FILL_SEED_MUL + int(i[k])) & M)
            if int(h[k]) & M != want:
                print(f"FAIL: the hash of seed {seed}, element {int(i[k])}")
                fails += 1
        # The fields the Box-Muller and the outlier rule take (logical shifts of the bits).
        for k in (0, 1, 4999):
            u = int(h[k]) & M
            if (int(tp._shr(h[k], 40)) & 0xFFFFFF, int(tp._shr(h[k], 16)) & 0xFFFFFF, int(h[k]) & 0xFFFF) != \
                    ((u >> 40) & 0xFFFFFF, (u >> 16) & 0xFFFFFF, u & 0xFFFF):
                print(f"FAIL: the bit fields of seed {seed}, element {int(i[k])}")
                fails += 1
    # The mask's kept column: the uint64 hash modulo cols, from int64 operations.
    for cols in (1, 2, 3, 1000, 4097, (1 << 31) + 11):
        r = np.arange(0, 3000, dtype=np.int64)
        with np.errstate(over="ignore"):
            k = tp.splitmix64(r + 2)
        keep = tp._umod(k, cols)
        for j in (0, 1, 2999):
            if int(keep[j]) != splitmix64_ref(2 + j) % cols:
                print(f"FAIL: kept column of row {j} at cols {cols}")
                fails += 1
    print("OK" if not fails else f"{fails} failures")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
