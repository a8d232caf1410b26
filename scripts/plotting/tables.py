"""The measured tables of the lessons: results (a chapter's table), summary (the README's),
vs_copy (a kernel against chapter 00's copy of the same shape), accuracy (chapter 09's variance
experiment) and paths (chapter 12's dispatch). No matplotlib.

Where every result has its copy of the same bytes (the harness's matched copy), the results and
summary tables show GB/s (percent of that copy); else GB/s (percent of the process's one large
copy, the copy line). The caption says which."""
from . import DTYPES, REFERENCE_GPU, DataError
from .load import cell, data_path, has_matched, main_op, pct_field, read_json, select


def fmt_flat_table(ch, field):
    """Markdown table of an elementwise chapter (rows = 1): one row per op/kernel/dtype, one column
    per element count."""
    keys = sorted({(r["op"], r["kernel"], r["dtype"]) for r in ch["results"]},
                  key=lambda k: (k[0], k[1] != "pack", k[1], DTYPES.index(k[2])))
    by = {(r["op"], r["kernel"], r["dtype"], r["cols"]): r for r in ch["results"]}
    sizes = sorted({r["cols"] for r in ch["results"]})
    head = ["op/kernel dtype"] + [f"2^{n.bit_length() - 1} elements" if n & (n - 1) == 0 else f"{n} elements"
                                  for n in sizes]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * len(sizes)]
    for op, kernel, dtype in keys:
        cells = [f"{op}/{kernel} {dtype}"]
        for n in sizes:
            r = by.get((op, kernel, dtype, n))
            cells.append(cell(r, field) if r else "")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def fmt_table(ch):
    """Markdown table: one row per cols, one column per kernel/dtype: GB/s (% of the copy)."""
    field = pct_field(ch["results"])
    if {r["rows"] for r in ch["results"]} == {1}:
        return "\n".join(fmt_flat_table(ch, field) + ["", table_caption(ch, field)])
    keys = sorted({(r["op"], r["kernel"], r["dtype"], r["rows"]) for r in ch["results"]},
                  key=lambda k: (k[0], k[1], DTYPES.index(k[2]), k[3]))
    by = {(r["op"], r["kernel"], r["dtype"], r["rows"], r["cols"]): r for r in ch["results"]}
    cols = sorted({r["cols"] for r in ch["results"]})
    multi_rows = len({k[3] for k in keys}) > 1
    head = ["cols"] + [f"{op}/{kernel} {dtype}" + (f" (rows {rows})" if multi_rows else "")
                       for op, kernel, dtype, rows in keys]
    lines = ["| " + " | ".join(head) + " |", "|" + "---:|" * len(head)]
    for c in cols:
        cells = [str(c)]
        for op, kernel, dtype, rows in keys:
            r = by.get((op, kernel, dtype, rows, c))
            cells.append(cell(r, field) if r else "")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines + ["", table_caption(ch, field)])


def matched_method(ctx):
    """How the harness timed the copy of the same bytes (context matched_copy_method)."""
    return ctx.get("matched_copy_method") or ("cudaMemcpyAsync device-to-device of the bytes the benchmark moves, "
                                              "timed by the same method in the same process")


def table_caption(ch, field):
    """The line under a results table: what the percent is of, and the environment stamp."""
    ctx = ch["context"]
    if field == "pct_of_matched_copy":
        what = f"percent of the copy of the same bytes: {matched_method(ctx)}"
    else:
        what = f"percent of the copy line, {ch['copy_gbps']:.0f} GB/s"
    return (f"GB/s ({what}). Measured on {ctx.get('gpu_name')}, "
            f"CUDA {ctx.get('cuda_runtime_version')}, driver {ctx.get('cuda_driver_version')}; "
            f"{ctx.get('timing_method', '')}. Data: `{data_path(ch)}`; its `context` holds the environment stamp "
            f"(commit, board, clocks).")


SUMMARY_SHAPES = [("f32", 128), ("f32", 1024), ("f32", 4096), ("f32", 32768), ("f16", 1024), ("f16", 4096)]


def fmt_summary(chapters, rows=49152, gpu=REFERENCE_GPU):
    """Markdown table for the README: each chapter's main operation, its best kernel at a few
    shapes; the percent of the copy of the same bytes where every cell has it."""
    table = []
    for name, ch in sorted(chapters.items()):
        op = main_op(ch, rows)
        if op is None:
            continue  # elementwise chapters (rows = 1) have their own table
        bests = [max((r for r in select(ch["results"], op, d, rows) if r["cols"] == c),
                     key=lambda r: r["gbps"], default=None) for d, c in SUMMARY_SHAPES]
        table.append((name, op, bests))
    field = pct_field([b for _, _, bests in table for b in bests if b])
    head = ["chapter", "operation"] + [f"{d}, {c} cols" for d, c in SUMMARY_SHAPES]
    lines = ["| " + " | ".join(head) + " |", "|---|---|" + "---:|" * len(SUMMARY_SHAPES)]
    for name, op, bests in table:
        lines.append("| " + " | ".join([name, op] + [cell(b, field) if b else "" for b in bests]) + " |")
    lines.append("")
    what = ("percent of the copy of the same bytes, timed in the same process" if field == "pct_of_matched_copy"
            else "percent of each run's copy line")
    lines.append(f"GB/s ({what}) of each chapter's best kernel for its operation, rows = "
                 f"{rows}; empty where the chapter's kernels do not reach that shape or type. Generated from "
                 f"`plots/data/{gpu}/` by `scripts/plot.py`.")
    return "\n".join(lines)


def fmt_vs_copy(ch, copy_ch, op=None, kernel=None):
    """Markdown table: the chapter's best kernel at each shape (or its `kernel` for `op`) against
    cudaMemcpy of the same shape, at the shapes chapter 00 copied. A copy moves two tensors, so
    the comparison is for ops that read one and write one."""
    memcpy = {(r["dtype"], r["rows"], r["cols"]): r["gbps"] for r in copy_ch["results"] if r["kernel"] == "memcpy"}
    best = {}
    for r in ch["results"]:
        if (op and r["op"] != op) or (kernel and r["kernel"] != kernel):
            continue
        key = (r["dtype"], r["rows"], r["cols"])
        if not any(m[1:] == key[1:] for m in memcpy):
            continue
        best[key] = max(best.get(key, 0), r["gbps"])
    if not best:
        raise DataError(f"vs_copy: no result of {op or 'any op'}/{kernel or 'any kernel'} at a shape chapter 00 copied")
    dtypes = [d for d in DTYPES if any(k[0] == d for k in best)]
    shapes = sorted({(k[1], k[2]) for k in best})
    lines = ["| rows x cols | " + " | ".join(f"{d}: kernel / memcpy (GB/s)" for d in dtypes) + " |",
             "|---|" + "---:|" * len(dtypes)]
    for rows, cols in shapes:
        cells = []
        for d in dtypes:
            k, m = best.get((d, rows, cols)), memcpy.get((d, rows, cols))
            cells.append(f"{k:.0f} / {m:.0f} ({100 * k / m:.0f}%)" if k and m else "")
        lines.append(f"| {rows} x {cols} | " + " | ".join(cells) + " |")
    lines.append("")
    which = f"`{op}/{kernel}` against the same shape" if op and kernel else "The same shape"
    lines.append(f"{which} copied by `cudaMemcpy` (chapter 00's data, same GPU and method): the ceiling "
                 "at that size, flush costs included.")
    return "\n".join(lines)



def fmt_accuracy(path, rel_path, gpu=REFERENCE_GPU):
    """Markdown table of chapter 09's variance experiment (`rel_path`: its file under plots/data/<gpu>/)."""
    doc = read_json(path)
    ctx, res = doc["context"], doc["results"]
    methods = []
    for r in res:
        if r["method"] not in methods:
            methods.append(r["method"])
    offsets = sorted({r["offset"] for r in res})
    by = {(r["offset"], r["method"]): r for r in res}
    lines = ["| offset | " + " | ".join(f"{m}: max / median relative error" for m in methods) + " |",
             "|---:|" + "---:|" * len(methods)]
    for o in offsets:
        cells = []
        for m in methods:
            r = by[(o, m)]
            bad = f", {r['nonpositive_rows']} rows <= 0" if r["nonpositive_rows"] else ""
            cells.append(f"{r['max_rel_err']:.2g} / {r['median_rel_err']:.2g}{bad}")
        lines.append(f"| {o:g} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(f"Variance of {ctx['rows']} rows of {ctx['cols']} fp32 values drawn from normal(offset, 1), against "
                 f"float64; {ctx['gpu_name']}. Data (its `context`: commit and GPU): "
                 f"`plots/data/{gpu}/{rel_path}`.")
    return "\n".join(lines)



def fmt_paths(path):
    """Markdown table of chapter 12's dispatch on the GPU that wrote `path` (--paths): the path per
    shape, for softmax (forward ops share it) and both backward ops, per dtype."""
    d = read_json(path)
    by = {}
    for p in d["paths"]:
        by[(p["op"], p["dtype"], p["rows"], p["cols"])] = p["path"] + (f" ({p['block']})" if "block" in p else "")
    shapes = sorted({(p["rows"], p["cols"]) for p in d["paths"]}, key=lambda s: (-s[0], s[1]))
    ops = ("softmax", "softmax_backward", "log_softmax_backward")
    head = ["rows", "cols"] + [f"{op} {dt}" for op in ops for dt in DTYPES]
    lines = ["| " + " | ".join(head) + " |", "|---:|---:|" + "---|" * (len(head) - 2)]
    for r, c in shapes:
        cells = [str(r), str(c)] + [by.get((op, dt, r, c), "") for op in ops for dt in DTYPES]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(f"The dispatch's choice on {d['gpu_name']} ({d['sm_count']} SMs, "
                 f"{d['smem_per_block_optin'] // 1024} KB of shared memory per block, clusters "
                 f"{'available' if d['clusters'] else 'not available'}; cluster path below "
                 f"{d['cluster_rows_below']} rows"
                 + (f"; the warp path past 1024 columns (16-bit rows, to {d['warp_max_cols']['f16']}), and the "
                    f"block_regs path, from {d['long_warp_rows_min']} rows" if isinstance(d.get("warp_max_cols"), dict) else "")
                 + "), written by `ch14_softmax_backward --paths`; block_regs shows its threads per block. "
                 "log_softmax follows softmax's column. scale_mask_softmax does too, except that it never takes "
                 "block_regs (its rows there stay on the warp path while they fit in registers and take shared "
                 "memory past that) or tile (warp), and, caching fp32 logits, leaves shared memory at half the "
                 "columns of 16-bit softmax.")
    return "\n".join(lines)



def fmt_shapes(ours, peers, op, rows, first=0):
    """Markdown table of a shapes sweep (`<chapter>.shapes.json`, loaded): `op` at `rows`, one row per
    cols, one column per dtype: its percent of the copy of the same bytes, then its GB/s over each
    peer's at that shape (`peers`: {name: a loaded peer_<name>.shapes.json}) where the peer has it;
    cols from `first` on."""
    mine = [r for r in ours["results"] if r["op"] == op and r["rows"] == rows and r["cols"] >= first]
    if not mine:
        raise DataError(f"{ours['chapter']} has no {op} results at rows {rows}")
    if not has_matched(mine):
        raise DataError(f"{ours['chapter']}: the shapes table needs the copy of the same bytes (pct_of_matched_copy)")
    best = {}  # (dtype, cols): the fastest of the file's kernels for op (one per op in make run's sweep)
    for r in mine:
        if r["gbps"] > best.get((r["dtype"], r["cols"]), {"gbps": 0})["gbps"]:
            best[(r["dtype"], r["cols"])] = r
    dtypes = [d for d in DTYPES if any(k[0] == d for k in best)]
    theirs = {(p, r["dtype"], r["cols"]): r["gbps"] for p, ch in sorted(peers.items())
              for r in ch["results"] if r["op"] == op and r["rows"] == rows}
    names = sorted({k[0] for k in theirs})
    lines = ["| cols | " + " | ".join(dtypes) + " |", "|---:|" + "---:|" * len(dtypes)]
    for c in sorted({k[1] for k in best}):
        cells = [str(c)]
        for d in dtypes:
            r = best.get((d, c))
            if r is None:
                cells.append("")
                continue
            ratios = [f"{r['gbps'] / theirs[(p, d, c)]:.2f}x {p}" for p in names if (p, d, c) in theirs]
            cells.append(f"{r['pct_of_matched_copy']:.0f}%" + (f" ({', '.join(ratios)})" if ratios else ""))
        lines.append("| " + " | ".join(cells) + " |")
    kernels = sorted({r["kernel"] for r in mine})
    label = {"cudnn": "cuDNN", "torch": "PyTorch eager", "torch_compile": "torch.compile"}
    src = "; ".join(f"{p}: {label.get(p, p)}, `{data_path(peers[p])}`" for p in names)  # the peers in the table
    lines += ["", f"{op} at rows = {rows}" + (f" from {first} columns" if first else "")
              + f", `{'`, `'.join(kernels)}`: percent of a copy of the same bytes "
              f"(the harness's matched copy), `{data_path(ours)}`"
              + (f"; in parentheses its GB/s over the peer's at the same shape, by the same method ({src})"
                 if names else "")
              + (". A peer missing from a cell did not run that shape (past what it takes, or its run ended "
                 "first)." if names else ".")]
    # Ours and a peer from different runs (another commit or board): say so, as the peers' tables do.
    def run_of(ch):
        c = ch.get("context", {})
        return (str(c.get("git_commit", "?")), str(c.get("gpu_uuid", "?")))
    apart = [p for p in names if run_of(peers[p]) != run_of(ours)]
    if apart:
        lines[-1] += (f" Ours and {', '.join(apart)} come from different runs (the files' `git_commit` or "
                      f"`gpu_uuid` differ): read differences of a percent or two as the boards', not the kernels'.")
    return "\n".join(lines)
