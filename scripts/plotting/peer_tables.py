"""The tables that judge the course against its peers: peers (a chapter's kernel against cuDNN and
PyTorch, measured by `make compare`) and twins (chapter 12's dispatch against the forced variant
of the path it chose, the run's noise). No matplotlib."""
from . import DTYPES, DataError
from .load import best_course, data_path, read_json


def input_fill(ctx):
    """The values a result file timed, from its context's `input_fill`: 'normal', 'outliers', or
    'not recorded' (files written before the harness stamped it). Early stamps, before the
    --input-fill flag, described the outlier fill without naming it."""
    f = str(ctx.get("input_fill", ""))
    if not f:
        return "not recorded"
    if f.startswith("normal"):
        return "normal"
    if f.startswith(("outliers", "first input", "the harness's")):
        return "outliers"
    return f.split(" (")[0][:40]


# A result whose timed launches spread (10th to 90th percentile) by more than this, in percent of
# their median, was disturbed (by the host, most often: PyTorch's small ops), and its median is less
# sure: its peer table says so.
NOISY_SPREAD = 25


def fmt_peers(chapters, peers, chapter, op, rows, kernel=None):
    """Markdown table: the chapter's kernel for op at each cols (`kernel`, or its best one) against
    each peer that has op, per dtype."""
    ch = chapters[chapter]
    if kernel:
        ch = dict(ch, results=[r for r in ch["results"] if r["kernel"] == kernel])
    dtypes = [d for d in DTYPES if any(r["op"] == op and r["dtype"] == d and r["rows"] == rows for r in ch["results"])]
    if not dtypes:
        raise DataError(f"{chapter} has no {op} results at rows {rows}" + (f" for kernel {kernel}" if kernel else ""))
    names = sorted(p for p in peers if any(r["op"] == op and r["rows"] == rows for r in peers[p]["results"]))
    head = ["cols"]
    for d in dtypes:
        head += [f"{d} ours"] + [f"{d} {p}" for p in names if any(
            r["op"] == op and r["dtype"] == d and r["rows"] == rows for r in peers[p]["results"])]
    lines = ["| " + " | ".join(head) + " |", "|" + "---:|" * len(head)]
    ours = {d: best_course({chapter: ch}, op, d, rows) for d in dtypes}
    theirs = {(p, d): {r["cols"]: r["gbps"] for r in peers[p]["results"]
                       if r["op"] == op and r["dtype"] == d and r["rows"] == rows} for p in names for d in dtypes}

    def spread(results, d, c, kernel_name=None):
        return next((r["spread_pct"] for r in results if r["op"] == op and r["dtype"] == d and r["rows"] == rows
                     and r["cols"] == c and (kernel_name is None or r["kernel"] == kernel_name)), float("nan"))

    under, noisy = [], []
    for c in sorted({c for d in dtypes for c in ours[d]}):
        cells = [str(c)]
        for d in dtypes:
            o = ours[d].get(c, (None,))[0]
            row_peers = [(p, theirs[(p, d)].get(c)) for p in names if theirs[(p, d)]]
            top = max((v for _, v in row_peers if v), default=None)
            mark = "" if o is None or top is None else (" **>=**" if o >= top else " (below)")
            cells.append(f"{o:.0f}{mark}" if o else "")
            cells += [f"{v:.0f}" if v else "" for _, v in row_peers]
            ours_spread = spread(ch["results"], d, c, ours[d][c][1][4:]) if o is not None else 0
            if ours_spread > NOISY_SPREAD:
                noisy.append(f"ours {d} at {c} ({ours_spread:.0f}%)")
            noisy += [f"{p} {d} at {c} ({spread(peers[p]['results'], d, c):.0f}%)" for p, v in row_peers
                      if v and spread(peers[p]["results"], d, c) > NOISY_SPREAD]
            if mark == " (below)":
                p = next(p for p, v in row_peers if v == top)
                k = ours[d][c][1][4:]  # best_course's "chNNkernel"
                under.append(f"{d} at {c}: {100 * (o / top - 1):+.1f}% against {p} "
                             f"(spread {spread(ch['results'], d, c, k):.1f}% ours, "
                             f"{spread(peers[p]['results'], d, c):.1f}% {p}'s)")
        lines.append("| " + " | ".join(cells) + " |")
    ctxs = "; ".join(f"{p}: {peers[p]['context'].get('peer', p)}, copy line {peers[p]['copy_gbps']:.0f} GB/s "
                     f"(`{data_path(peers[p])}`)" for p in names)
    lines.append("")
    which = f"`{op}/{kernel}`" if kernel else "best kernel at each cols"
    lines.append(f"GB/s, {op}, rows = {rows}. Ours: `{chapter}`'s {which} (copy line "
                 f"{ch['copy_gbps']:.0f} GB/s, `{data_path(ch)}`). "
                 f"Peers, by the same method (`make compare`): {ctxs}. **>=** marks ours at or above every peer.")
    # Ours and a peer from different runs (another commit or board): say so, since a reader would
    # otherwise take the table for one session on one board (boards of one model differ by a percent
    # or two). The stamps themselves are in the files named above.
    def run_of(c):
        return (str(c.get("git_commit", "?")), str(c.get("gpu_uuid", "?")))
    apart = [p for p in names if run_of(peers[p]["context"]) != run_of(ch["context"])]
    if apart:
        lines[-1] += (f" Ours and {', '.join(apart)} come from different runs (the files' `git_commit` or "
                      f"`gpu_uuid` differ): read differences of a percent or two as the boards', not the kernels'.")
    fills = {"ours": input_fill(ch["context"]), **{p: input_fill(peers[p]["context"]) for p in names}}
    if len(set(fills.values())) == 1:
        lines[-1] += f" Every side timed the same values: {fills['ours']} (`input_fill`)."
    else:
        lines.append("")
        lines.append("**The sides timed different values** (`input_fill`: " +
                     "; ".join(f"{k} {v}" for k, v in fills.items()) +
                     "): at a few MB per tensor, and for PyTorch's softmax at every size, the values change the "
                     "time (`docs/harness.md`, \"What the inputs hold\").")
    if under:
        lines.append("")
        lines.append("Under a peer in this run: " + "; ".join(under) + ". Spread: the 10th to 90th percentile "
                     "of the timed launches, in percent of their median.")
    if noisy:
        lines.append("")
        lines.append(f"Scattered in this run (spread over {NOISY_SPREAD}%: the launches were disturbed, by the host "
                     "most often, and the median is less sure than the others): " + "; ".join(noisy) + ".")
    return "\n".join(lines)



TWIN_PATHS = ("warp", "tile", "block_regs")


def fmt_twins(chapter, path):
    """Markdown table: `production` against the forced variant of the path the dispatch chose
    (warp, tile or block_regs, whose forced launches take the dispatch's shape), per dtype: the same
    kernel and launch benchmarked twice in one process, so their differences are the run's noise."""
    d = read_json(path)
    chosen = {(p["op"], p["dtype"], p["rows"], p["cols"]): p["path"] for p in d["paths"]}
    by = {(r["op"], r["kernel"], r["dtype"], r["rows"], r["cols"]): r for r in chapter["results"]}
    diffs = {}
    for (op, kernel, dt, rows, cols), r in by.items():
        # log_softmax follows softmax's path (the --paths file lists softmax for both)
        path_op = "softmax" if op == "log_softmax" else op
        forced = chosen.get((path_op, dt, rows, cols))
        if kernel != "production" or forced not in TWIN_PATHS or (op, forced, dt, rows, cols) not in by:
            continue
        twin = by[(op, forced, dt, rows, cols)]
        diffs.setdefault(dt, []).append((100 * (twin["gbps"] / r["gbps"] - 1), op, forced, rows, cols))
    if not diffs:
        raise DataError(f"twins: no production result of {chapter['chapter']} has a forced twin in {path}")
    lines = ["| dtype | pairs | median of the absolute differences | largest difference |",
             "|---|---:|---:|---|"]
    for dt in [t for t in DTYPES if t in diffs]:
        v = diffs[dt]
        absd = sorted(abs(x[0]) for x in v)
        mid = absd[len(absd) // 2] if len(absd) % 2 else (absd[len(absd) // 2 - 1] + absd[len(absd) // 2]) / 2
        top = max(v, key=lambda x: abs(x[0]))
        lines.append(f"| {dt} | {len(v)} | {mid:.1f}% | {top[0]:+.1f}% ({top[1]}, {top[3]} x {top[4]}, {top[2]}) |")
    lines.append("")
    lines.append(f"Each pair: `{chapter['chapter']}`'s `production` and the forced variant of the path its dispatch "
                 f"chose there (warp, tile or block_regs: the same kernel with the same launch), measured in the same "
                 f"process by the same method; difference: the forced variant's GB/s over production's, minus 1. "
                 f"Data: `{data_path(chapter)}`; its `context` holds the environment stamp (commit, board, clocks).")
    return "\n".join(lines)



def fmt_memory(ch, peers, op, rows, dtype):
    """Markdown table: the peak memory each side allocates for op (peak_alloc_bytes: ours, its
    outputs and workspace; a PyTorch peer, its allocator's peak over one call) at each cols, in MB
    (10^6 bytes), beside the bytes of one rows x cols tensor of dtype."""
    def peak(results):
        return {r["cols"]: r["peak_alloc_bytes"] for r in results
                if r["op"] == op and r["dtype"] == dtype and r["rows"] == rows and r.get("peak_alloc_bytes") is not None}
    ours = peak(ch["results"])
    if not ours:
        raise DataError(f"{ch['chapter']} has no peak_alloc_bytes for {op} {dtype} at rows {rows}")
    names = sorted(p for p in peers if peak(peers[p]["results"]))
    size = {"f32": 4, "f16": 2, "bf16": 2}[dtype]
    head = ["cols", "one N x V tensor", "ours"] + names
    lines = ["| " + " | ".join(head) + " |", "|" + "---:|" * len(head)]
    for c in sorted(ours):
        cells = [str(c), f"{rows * c * size / 1e6:.0f}", f"{ours[c] / 1e6:.0f}"]
        cells += [f"{peak(peers[p]['results']).get(c, float('nan')) / 1e6:.0f}" for p in names]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(f"MB allocated at the peak, {op}, {dtype}, rows = {rows} (`peak_alloc_bytes`). Ours: the "
                 f"outputs and workspace (`{data_path(ch)}`); "
                 + "; ".join(f"{p}: the allocator's peak over one call, less what was allocated before it "
                             f"(`{data_path(peers[p])}`)" for p in names) + ". The logits are not counted on either side.")
    return "\n".join(lines)


def fmt_fwd_bwd(chapters, peer, peer_name, fwd, bwd, dtypes, shapes):
    """Markdown table: a layer's forward and backward together (`fwd`, `bwd`: (chapter, op, kernel)
    of ours) against `peer`'s same two ops, at each (rows, cols) of `shapes` and dtype of `dtypes`:
    the two median times added on each side, their ratio, and the copy of the same bytes (each op's
    bytes over its matched copy's speed, from our results) as the bound on any kernel's time."""
    def find(results, op, kernel, dtype, rows, cols):
        for r in results:
            if (r["op"], r["dtype"], r["rows"], r["cols"]) == (op, dtype, rows, cols) and kernel in (None, r["kernel"]):
                return r
        return None

    head = ["shape", "dtype", "ours (us)", f"{peer_name} (us)", f"ours vs {peer_name}", "copy of the same bytes (us)",
            f"{peer_name} vs the copy"]
    lines = ["| " + " | ".join(head) + " |", "|---|---|" + "---:|" * (len(head) - 2)]
    files, scattered = set(), []
    for rows, cols in shapes:
        for dtype in dtypes:
            ours, theirs, copy = 0.0, 0.0, 0.0
            for ch_name, op, kernel in (fwd, bwd):
                ch = chapters.get(ch_name)
                if ch is None:
                    raise DataError(f"fwd_bwd marker names {ch_name}: no such data")
                r = find(ch["results"], op, kernel, dtype, rows, cols)
                p = find(peer["results"], op, None, dtype, rows, cols)
                if r is None or p is None or not r.get("matched_copy_gbps"):
                    missing = f"{ch_name} {op}/{kernel}" if r is None or not r.get("matched_copy_gbps") else peer_name
                    raise DataError(f"fwd_bwd marker: {missing} has no {op} {dtype} at {rows} x {cols}"
                                    " (with a matched copy)")
                files.add(data_path(ch))
                for side, x in (("ours", r), (peer_name, p)):
                    if x["spread_pct"] > NOISY_SPREAD:
                        scattered.append(f"{side} {op} {dtype} at {rows} x {cols} ({x['spread_pct']:.0f}%)")
                ours += r["median_us"]
                theirs += p["median_us"]
                copy += r["gbps"] * r["median_us"] / r["matched_copy_gbps"]  # bytes / copy speed, in us
            lines.append(f"| {rows} x {cols} | {dtype} | {ours:.1f} | {theirs:.1f} | {theirs / ours:.2f}x | "
                         f"{copy:.1f} | {theirs / copy:.2f}x |")
    lines.append("")
    lines.append(f"Median times in microseconds, forward ({fwd[1]}) plus backward ({bwd[1]}). Ours: "
                 + ", ".join(f"`{f}`" for f in sorted(files)) + f"; {peer_name}: `{data_path(peer)}`, by the same "
                 "method. The copy of the same bytes: each operation's bytes at the speed of its matched copy "
                 f"(chapter 00's copy of the same bytes, timed in our run): no kernel can beat it, so "
                 f"\"{peer_name} vs the copy\" is the most any kernel could gain over {peer_name}.")
    if scattered:
        lines.append("")
        lines.append(f"Scattered in this run (spread over {NOISY_SPREAD}%: the launches were disturbed, and the "
                     "median is less sure than the others; a disturbed run's matched copy may be slow with it): "
                     + "; ".join(scattered) + ".")
    return "\n".join(lines)
