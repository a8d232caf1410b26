#!/usr/bin/env python3
"""Figures and tables of the course, generated from the committed benchmark JSON.

    plot.py [--data plots/data] [--out plots/figures] [--tables] [--check]

Reads every plots/data/<gpu>/chNN_*.json written by the chapters' harness (Google Benchmark
JSON with the course's counters and environment stamp) and writes, per GPU:
  <out>/<gpu>/chNN_name.png/.svg   one figure per chapter: GB/s against cols, a line per
                                   kernel and dtype, the copy line at 100%
  <out>/<gpu>/progression.png/.svg each chapter's best softmax at each cols, per dtype
  <out>/<gpu>/peers.png/.svg       the course's best against the peers (peer_*.json: cuDNN,
                                   PyTorch, measured by `make compare`); chapter figures also
                                   draw the peers of their ops, dash-dotted
With --tables it also rewrites, between markers, the measured tables and figures quoted in
README.md and chapters/*/README.md, so that no number in the lessons is typed by hand:
  <!-- results CHAPTER [GPU] -->...<!-- /results -->          the chapter's table
  <!-- profile CHAPTER [GPU] -->...<!-- /profile -->          its Nsight Compute table
  <!-- sectors FILE [GPU] -->...<!-- /sectors -->            the memory pipeline (sectors per request,
                                                             L1 to L2, DRAM) of a profile that has
                                                             the l1tex/lts sector metrics
  <!-- balance FILE [GPU] -->...<!-- /balance -->            how evenly each launch of a profile kept
                                                             the SMs busy (sm__cycles_active min,
                                                             avg, max; its '# launches:' line
                                                             names the runs)
  <!-- peers CHAPTER OP ROWS [kernel=K] [GPU] -->...<!-- /peers -->
                                                             its kernel K (or best kernel) for OP
                                                             against each peer
  <!-- summary [GPU] -->...<!-- /summary -->                 each chapter's best at a few shapes (README)
  <!-- rounds DIR OURS:PEER,PEER... [match=TEXT] -->...<!-- /rounds -->
                                                             alternating rounds of ours and the peers
                                                             (DIR under plots/data/<gpu>/: peer_rounds.sh)
  <!-- positions DIR [match=TEXT] -->...<!-- /positions -->
                                                             each benchmark of each process by its
                                                             place in the process (DIR under
                                                             plots/data/<gpu>/: <variant>_r<N>.json)
  <!-- twins FILE [GPU] -->...<!-- /twins -->                 chapter 12's dispatch against the forced
                                                             variant of the path it chose (FILE: its
                                                             --paths JSON): the same kernel timed
                                                             twice in one run, the run's noise
  <!-- accuracy FILE [GPU] -->...<!-- /accuracy -->          chapter 09's variance experiment
                                                             (FILE under plots/data/<gpu>/experiments/)
  <!-- vs_copy CHAPTER [op=OP kernel=K] [GPU] -->...<!-- /vs_copy -->
                                                             its best kernel (or OP's kernel K)
                                                             against cudaMemcpy of the same shape
                                                             (chapter 00)
  <!-- value CHAPTER NAME FIELD [GPU] -->...<!-- /value -->     one number; NAME is a
      benchmark name (op/kernel/dtype/rows:R/cols:C) or '-', FIELD one of gbps,
      pct_of_copy, median_us, spread_pct (p90 - p10, % of the median), copy_gbps
--check fails when the data cannot be parsed or a marker names data that does not exist.
"""
import argparse
import glob
import json
import os
import re
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
matplotlib.rcParams["svg.hashsalt"] = "course"  # stable ids: regenerating unchanged data changes no file
import matplotlib.pyplot as plt  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REFERENCE_GPU = "h100-80gb-hbm3"  # the GPU whose numbers the lessons quote
DATA_DIR = os.path.join(ROOT, "plots", "data")
NAME_RE = re.compile(r"^(?P<op>[a-z_0-9]+)/(?P<kernel>[a-z_0-9]+)/(?P<dtype>f32|f16|bf16)"
                     r"/rows:(?P<rows>\d+)/cols:(?P<cols>\d+)")
DTYPES = ["f32", "f16", "bf16"]
DTYPE_STYLE = {"f32": "-", "f16": "--", "bf16": ":"}


class DataError(Exception):
    pass


def load_chapter(path):
    """One chapter's JSON: its context and its results as dicts."""
    with open(path) as f:
        doc = json.load(f)
    ctx = doc.get("context", {})
    if "copy_bytes_per_second" not in ctx:
        raise DataError(f"{path}: no environment stamp (copy_bytes_per_second) in its context")
    results = []
    for b in doc.get("benchmarks", []):
        if b.get("run_type", "iteration") != "iteration" or b.get("error_occurred"):
            continue
        m = NAME_RE.match(b["name"])
        if not m:
            raise DataError(f"{path}: benchmark name '{b['name']}' does not follow op/kernel/dtype/rows:R/cols:C")
        if "bytes_per_second" not in b or "pct_of_copy" not in b:
            raise DataError(f"{path}: {b['name']} lacks bytes_per_second or pct_of_copy")
        results.append({
            "name": "/".join(b["name"].split("/")[:5]),
            "op": m["op"], "kernel": m["kernel"], "dtype": m["dtype"],
            "rows": int(m["rows"]), "cols": int(m["cols"]),
            "gbps": b["bytes_per_second"] / 1e9, "pct_of_copy": b["pct_of_copy"],
            "median_us": b.get("median_us", float("nan")), "spread_pct": b.get("spread_pct", float("nan")),
        })
    return {"context": ctx, "results": results, "chapter": os.path.basename(path)[:-5],
            "copy_gbps": float(ctx["copy_bytes_per_second"]) / 1e9}


def load_all(data_dir):
    """{gpu: {chapter: data}} for every chapter JSON under data_dir/<gpu>/."""
    out = {}
    for path in sorted(glob.glob(os.path.join(data_dir, "*", "ch[0-9][0-9]_*.json"))):
        if os.path.basename(path).count(".") > 1:
            continue  # side files (chapter 12's dispatch table: <chapter>.paths.json)
        gpu = os.path.basename(os.path.dirname(path))
        out.setdefault(gpu, {})[os.path.basename(path)[:-5]] = load_chapter(path)
    return out


def load_peers(data_dir):
    """{gpu: {peer: data}} for every peer JSON (peer_cudnn.json, peer_torch.json) under data_dir/<gpu>/."""
    out = {}
    for path in sorted(glob.glob(os.path.join(data_dir, "*", "peer_*.json"))):
        gpu = os.path.basename(os.path.dirname(path))
        out.setdefault(gpu, {})[os.path.basename(path)[len("peer_"):-5]] = load_chapter(path)
    return out


PEER_STYLE = {"cudnn": {"color": "tab:gray", "marker": "x"}, "torch": {"color": "tab:brown", "marker": "+"}}


def series(results, rows=None):
    """{(op, kernel, dtype): [(cols, gbps), ...]} sorted by cols."""
    s = {}
    for r in results:
        if rows is not None and r["rows"] != rows:
            continue
        s.setdefault((r["op"], r["kernel"], r["dtype"]), []).append((r["cols"], r["gbps"]))
    return {k: sorted(v) for k, v in s.items()}


def style_axes(ax, copy_gbps, title, flat=False):
    ax.set_xscale("log", base=2)
    ax.set_xlabel("elements (log2)" if flat else "columns per row (log2)")
    ax.set_ylabel("effective bandwidth (GB/s)")
    ax.axhline(copy_gbps, color="black", linewidth=1.2)
    ax.annotate(f"device-to-device copy = 100% ({copy_gbps:.0f} GB/s)", xy=(0.01, copy_gbps),
                xycoords=("axes fraction", "data"), va="bottom", fontsize=8)
    ax.set_ylim(0, copy_gbps * 1.12)
    ax.grid(True, which="both", alpha=0.3)
    ax.set_title(title, fontsize=10)


def save(fig, out_dir, stem):
    os.makedirs(out_dir, exist_ok=True)
    for ext in ("png", "svg"):
        fig.savefig(os.path.join(out_dir, f"{stem}.{ext}"), dpi=120, bbox_inches="tight",
                    metadata={"Date": None} if ext == "svg" else {})
    plt.close(fig)


def plot_peers(ax, peers, op, dtypes, rows, labelled):
    """The peers' lines for (op, dtype, rows), dash-dotted, in their own colors."""
    for peer, pdata in sorted((peers or {}).items()):
        for dtype in dtypes:
            pts = series(pdata["results"], rows).get((op, peer, dtype))
            if not pts:
                continue
            xs, ys = zip(*pts)
            label = f"{peer} {op} {dtype} (peer)"
            ax.plot(xs, ys, linestyle="-.", linewidth=1.0, markersize=4, alpha=0.8,
                    label=label if label not in labelled else None, **PEER_STYLE.get(peer, {}))
            labelled.add(label)


def chapter_figure(ch, gpu_name, out_dir, peers=None):
    """GB/s against cols, a panel per rows value; an elementwise chapter (rows = 1, many ops) gets a
    panel per op instead. The peers' lines for the same op, dtype and rows are drawn dash-dotted."""
    rows_set = sorted({r["rows"] for r in ch["results"]})
    ops = sorted({r["op"] for r in ch["results"]})
    panels = [(rows, None) for rows in rows_set]
    focus = None
    if rows_set == [1] and len(ops) > 2:
        panels = [(1, op) for op in ops]
    elif len(ops) > 2:  # chapter 12: a panel per op and rows, its dispatched kernels only
        panels = [(rows, op) for op in ops for rows in rows_set]
        focus = {"production", "fused", "unfused"}
    ncols = min(len(panels), 4)
    nrows = (len(panels) + ncols - 1) // ncols
    fig, axes = plt.subplots(nrows, ncols, figsize=(7.5 * ncols, 4.5 * nrows), squeeze=False)
    # The course's lines avoid the peers' colors (brown and gray in tab20).
    ours = [c for i, c in enumerate(plt.cm.tab20.colors) if i not in (10, 11, 14, 15)]
    for i, (rows, only_op) in enumerate(panels):
        ax = axes[i // ncols][i % ncols]
        ax.set_prop_cycle(color=ours)
        labelled = set()
        shown = sorted(k for k in series(ch["results"], rows)
                       if only_op in (None, k[0]) and (focus is None or k[1] in focus))
        for (op, kernel, dtype), pts in [(k, series(ch["results"], rows)[k]) for k in shown]:
            xs, ys = zip(*pts)
            ax.plot(xs, ys, DTYPE_STYLE[dtype], marker="o", markersize=3, label=f"{op}/{kernel} {dtype}")
        for op in sorted({k[0] for k in shown}):
            plot_peers(ax, peers, op, sorted({k[2] for k in shown if k[0] == op}, key=DTYPES.index), rows, labelled)
        what = f"{only_op}, " if only_op else ""
        style_axes(ax, ch["copy_gbps"], f"{ch['chapter']}  ({what}rows = {rows}, {gpu_name})", flat=rows == 1)
        ax.legend(fontsize=7, loc="lower right")
    for j in range(len(panels), nrows * ncols):
        axes[j // ncols][j % ncols].axis("off")
    save(fig, out_dir, ch["chapter"])


def best_course(chapters, op, dtype, rows):
    """{cols: (gbps, chapter/kernel)}: the course's best kernel for op at each cols."""
    best = {}
    for name, ch in chapters.items():
        for r in ch["results"]:
            if r["op"] == op and r["dtype"] == dtype and r["rows"] == rows:
                if r["gbps"] > best.get(r["cols"], (0, ""))[0]:
                    best[r["cols"]] = (r["gbps"], f"{name[:4]}{r['kernel']}")
    return best


def peers_figure(chapters, peers, gpu_name, out_dir):
    """The course's best against each peer, same axes: softmax and LayerNorm at rows 49152, per dtype,
    and softmax on the long rows (rows 128)."""
    panels = [("softmax", 49152), ("layer_norm", 49152), ("softmax", 128)]
    fig, axes = plt.subplots(len(panels), 3, figsize=(18, 4.6 * len(panels)), squeeze=False)
    copy_gbps = next(iter(chapters.values()))["copy_gbps"]
    for i, (op, rows) in enumerate(panels):
        for j, dtype in enumerate(DTYPES):
            ax = axes[i][j]
            best = best_course(chapters, op, dtype, rows)
            if best:
                xs = sorted(best)
                ax.plot(xs, [best[x][0] for x in xs], "-", marker="o", markersize=3, color="tab:blue",
                        label="this course (best chapter)")
            plot_peers(ax, peers, op, [dtype], rows, set())
            style_axes(ax, copy_gbps, f"{op} {dtype}, rows = {rows} ({gpu_name})")
            ax.legend(fontsize=7, loc="lower right")
    save(fig, out_dir, "peers")


def progression_figure(chapters, gpu_name, out_dir, op="softmax", rows=49152):
    fig, axes = plt.subplots(1, 3, figsize=(18, 4.8), sharey=True)
    copy_gbps = None
    for ax, dtype in zip(axes, DTYPES):
        for name, ch in sorted(chapters.items()):
            copy_gbps = copy_gbps or ch["copy_gbps"]
            want = "copy" if name.startswith("ch00") else op
            best = {}
            for r in ch["results"]:
                if r["op"] == want and r["dtype"] == dtype and r["rows"] == rows:
                    best[r["cols"]] = max(best.get(r["cols"], 0), r["gbps"])
            if best:
                xs = sorted(best)
                label = "copy at the same shape (ch00)" if want == "copy" else name
                ax.plot(xs, [best[x] for x in xs], marker="o", markersize=3,
                        linestyle="--" if want == "copy" else "-", color="gray" if want == "copy" else None,
                        label=label)
        style_axes(ax, copy_gbps or 1, f"{op} {dtype}, rows = {rows} ({gpu_name})")
        ax.legend(fontsize=7, loc="center right")
    save(fig, out_dir, "progression")


def fmt_flat_table(ch):
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
            cells.append(f"{r['gbps']:.0f} ({r['pct_of_copy']:.0f}%)" if r else "")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def fmt_table(ch):
    """Markdown table: one row per cols, one column per kernel/dtype: GB/s (% of copy)."""
    if {r["rows"] for r in ch["results"]} == {1}:
        return "\n".join(fmt_flat_table(ch) + ["", table_caption(ch)])
    keys = sorted({(r["op"], r["kernel"], r["dtype"], r["rows"]) for r in ch["results"]},
                  key=lambda k: (k[0], k[1], DTYPES.index(k[2]), k[3]))
    by = {(r["op"], r["kernel"], r["dtype"], r["rows"], r["cols"]): r for r in ch["results"]}
    cols = sorted({r["cols"] for r in ch["results"]})
    multi_rows = len({k[3] for k in keys}) > 1
    head = ["cols"] + [f"{op}/{kernel} {dtype}" + (f" (rows {rows})" if multi_rows else "") for op, kernel, dtype, rows in keys]
    lines = ["| " + " | ".join(head) + " |", "|" + "---:|" * len(head)]
    for c in cols:
        cells = [str(c)]
        for op, kernel, dtype, rows in keys:
            r = by.get((op, kernel, dtype, rows, c))
            cells.append(f"{r['gbps']:.0f} ({r['pct_of_copy']:.0f}%)" if r else "")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines + ["", table_caption(ch)])


def table_caption(ch):
    """The line under a results table: the copy line and the environment stamp."""
    ctx = ch["context"]
    return (f"GB/s (percent of the copy line, {ch['copy_gbps']:.0f} GB/s). Measured on {ctx.get('gpu_name')}, "
            f"CUDA {ctx.get('cuda_runtime_version')}, driver {ctx.get('cuda_driver_version')}, "
            f"commit {str(ctx.get('git_commit', '?'))[:12]}; {ctx.get('timing_method', '')}.")


def value(data, chapter, name, field, gpu):
    ch = data.get(gpu, {}).get(chapter)
    if ch is None:
        raise DataError(f"no data for {chapter} on {gpu}")
    if field == "copy_gbps":
        return f"{ch['copy_gbps']:.0f} GB/s"
    for r in ch["results"]:
        if r["name"] == name:
            if field == "gbps":
                return f"{r['gbps']:.0f} GB/s"
            if field == "pct_of_copy":
                return f"{r['pct_of_copy']:.0f}%"
            if field == "median_us":
                return f"{r['median_us']:.1f} us"
            if field == "spread_pct":
                return f"{r['spread_pct']:.1f}%"
            raise DataError(f"unknown field '{field}'")
    raise DataError(f"{chapter} on {gpu} has no result named {name}")


TYPE_NAMES = {"float": "f32", "__half": "f16", "__nv_bfloat16": "bf16"}


def short_kernel_name(full):
    """'void softmax_warp_kernel<float, ...>(...)' -> 'softmax_warp_kernel<f32>'; CUB keeps its op."""
    name = full.replace("void ", "").replace("(anonymous namespace)::", "").replace("<unnamed>::", "")
    name = name.replace("course::", "").replace("detail::", "")
    base = name.split("(")[0]
    head = base.split("<")[0]
    if head.endswith("elementwise_kernel"):  # chapter 11: <pack, unroll, [loop,] factory, out, in...>
        m = re.match(r"[\w:]*elementwise_kernel<(\d+), (\d+), (?:(true|false|[01]), )?(?:ew::)?(?:SimpleFactory<)?(?:ew::)?(\w+)<(\w+)>", base)
        if m:
            loop = ", loop" if m[3] in ("true", "1") else ""
            return f"elementwise_kernel<pack {m[1]}, unroll {m[2]}{loop}> {m[4]}<{TYPE_NAMES.get(m[5], m[5])}>"
    # chapter 12: <cache, Load<T>, Store<T>, pack, block...>: name the storage. Nsight Compute
    # names the kernel with its namespace or, on some runs, without it.
    if head.startswith("ch12::") or re.match(r"softmax_\w+<(\w+, )?\w+Load<", base):
        head = head[len("ch12::"):] if head.startswith("ch12::") else head
        loads = re.findall(r"(\w+Load)<(\w+)>", base)
        nums = re.findall(r"(?<=[<,] )(\d+)|(?<=<)(\d+)", base.split(">", 1)[-1])
        cache = base.split("<", 1)[1].split(",")[0].strip() if head.startswith("softmax_smem") else None
        parts = [f"{loads[0][0]}<{TYPE_NAMES.get(loads[0][1], loads[0][1])}>"] if loads else []
        targs = base.split("<", 1)[1].rsplit(">", 1)[0] if "<" in base else ""
        first = targs.split(",")[0].strip()
        if not loads and first in TYPE_NAMES:  # the tile kernels: <T, [Store<T>,] numbers>
            flat = targs
            while re.search(r"<[^<>]*>", flat):
                flat = re.sub(r"<[^<>]*>", "", flat)
            parts = [TYPE_NAMES[first]]
            nums = [(a.strip(), "") for a in flat.split(",")[1:] if a.strip().isdigit()]
        if cache:
            parts.append(f"cache {TYPE_NAMES.get(cache, cache)}")
        parts += [n for pair in nums for n in pair if n]
        return f"{head}<{', '.join(parts)}>"
    if head.startswith("cub::"):
        op = "max" if "Max>" in base else "sum" if "plus" in base else ""
        return f"{head} ({op})" if op else head
    if "<" in base:
        targs = base[len(head) + 1:].rsplit(">", 1)[0]
        if len(targs) <= 40:  # short argument lists in full: <f16, 8, 128, 2>
            return f"{head}<{', '.join(TYPE_NAMES.get(a.strip(), a.strip()) for a in targs.split(','))}>"
        first = targs.split(",")[0].split(">")[0].strip()
        return f"{head}<{TYPE_NAMES.get(first, first)}>"
    return head


def load_profile(path):
    """The first launch of each kernel in an ncu --csv --page raw file, harness kernels left out."""
    import csv
    with open(path) as f:
        text = f.read()
    shape = re.search(r"^# shape: rows=(\d+) cols=(\d+)", text, re.M)
    how = re.search(r"^# how: (.+)$", text, re.M)  # how ncu ran, where not by scripts/profile.sh
    # what each profiled run was, in order, where one kernel was run several ways (the balance marker)
    labels = re.search(r"^# launches: (.+)$", text, re.M)
    labels = [x.strip() for x in labels[1].split(";")] if labels else []
    elements = int(shape[1]) * int(shape[2]) if shape else None
    rows = list(csv.reader([l for l in text.splitlines() if l.startswith('"')]))
    if len(rows) < 3:
        raise DataError(f"{path}: no kernel rows")
    head = rows[0]
    col = {h: i for i, h in enumerate(head)}

    def num(r, key):
        v = r[col[key]].replace(",", "") if key in col else ""
        return float(v) if v not in ("", "n/a") else float("nan")

    seen, out, run = set(), [], 0
    for r in rows[1:]:
        if r and r[0] == "ID":  # the header of the next profiled run (another dtype)
            run += 1
        if not r or not r[0].isdigit():  # the units row, or a repeated header
            continue
        full = r[col["Kernel Name"]]
        if "fill_kernel" in full or (run, full) in seen:
            continue
        seen.add((run, full))
        out.append({
            "kernel": short_kernel_name(full),
            "label": labels[len(out)] if len(out) < len(labels) else None,
            "us": num(r, "gpu__time_duration.sum") / 1e3,
            "read_mb": num(r, "dram__bytes_read.sum") / 1e6,
            "write_mb": num(r, "dram__bytes_write.sum") / 1e6,
            "dram_pct": num(r, "dram__throughput.avg.pct_of_peak_sustained_elapsed"),
            "occupancy": num(r, "sm__warps_active.avg.pct_of_peak_sustained_active"),
            "regs": num(r, "launch__registers_per_thread"),
            "grid": num(r, "launch__grid_size"),
            "block": num(r, "launch__block_size"),
            "local_b": num(r, "l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum"),
            "inst_m": num(r, "smsp__inst_executed.sum") / 1e6,
            "ldst_per_elem": (num(r, "smsp__sass_inst_executed_op_global_ld.sum")
                              + num(r, "smsp__sass_inst_executed_op_global_st.sum")) * 32 / elements
                             if elements else float("nan"),
            "inst_per_elem": num(r, "smsp__inst_executed.sum") * 32 / elements if elements else float("nan"),
            "conflicts": num(r, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum")
                         + num(r, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"),
            # The memory pipeline, where a profile has it (the sectors marker): requests are warp
            # instructions at L1, sectors the 32-byte pieces they touch; lts__ counts what L1 sends to L2.
            "ld_req": num(r, "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"),
            "ld_sec": num(r, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"),
            "st_req": num(r, "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"),
            "st_sec": num(r, "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"),
            "l2_rd_sec": num(r, "lts__t_sectors_srcunit_tex_op_read.sum"),
            "l2_wr_sec": num(r, "lts__t_sectors_srcunit_tex_op_write.sum"),
            # How evenly the SMs were kept busy, where a profile has it (the balance marker).
            "cyc_min": num(r, "sm__cycles_active.min"),
            "cyc_avg": num(r, "sm__cycles_active.avg"),
            "cyc_max": num(r, "sm__cycles_active.max"),
        })
    return out, shape, how[1].strip() if how else None


def ncu_table(columns, rows, shape, how, note, rel_path):
    """A Markdown table of profiled kernels (`columns` after the first, `kernel`; `rows` of cells) with
    its caption: how Nsight Compute ran, the shape, `note` and the data file."""
    lines = ["| kernel | " + " | ".join(columns) + " |", "|---|" + "---:|" * len(columns)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    where = f"{shape[1]} x {shape[2]}" if shape else "the recorded shape"
    lines += ["", f"Nsight Compute ({how}), {where}, first launch of each kernel{note} "
                  f"Data: `plots/data/{REFERENCE_GPU}/{rel_path}.ncu.csv`."]
    return "\n".join(lines)


def fmt_profile(prof, chapter):
    kernels, shape, how = prof
    count = lambda v: "-" if v != v else f"{v:.0f}"  # a metric the profile did not collect
    columns = ["blocks x threads", "time (us)", "DRAM read (MB)", "DRAM write (MB)", "DRAM throughput (% of peak)",
               "achieved occupancy (%)", "registers / thread", "local loads (B)", "thread instructions / element",
               "global load+store instructions x 32 / element", "shared bank conflicts"]
    rows = []
    for k in kernels:
        launch = f"{k['grid']:.0f} x {k['block']:.0f}" if k["grid"] == k["grid"] and k["block"] == k["block"] else "?"
        rows.append([f"`{k['kernel']}`", launch, f"{k['us']:.1f}", f"{k['read_mb']:.1f}", f"{k['write_mb']:.1f}",
                     f"{k['dram_pct']:.1f}", f"{k['occupancy']:.1f}", f"{k['regs']:.0f}", f"{k['local_b']:.0f}",
                     f"{k['inst_per_elem']:.1f}", f"{k['ldst_per_elem']:.2f}", count(k['conflicts'])])
    return ncu_table(columns, rows, shape, how or "`scripts/profile.sh`, clocks not locked",
                     "; instructions are per warp, so x 32 per element compares with one thread per element.", chapter)


def fmt_sectors(prof, rel_path):
    """Markdown table of the memory pipeline of each kernel of a profile with the sector metrics:
    how many 32-byte sectors each global load and store instruction touches at L1, and what L1
    passes on to L2 and L2 to DRAM."""
    kernels, shape, _ = prof
    need = ("ld_req", "ld_sec", "st_req", "st_sec", "l2_rd_sec", "l2_wr_sec")
    if any(k[m] != k[m] for k in kernels for m in need):
        raise DataError(f"{rel_path}: the sectors table needs the l1tex__t_requests/sectors and lts__t_sectors metrics")
    columns = ["time (us)", "global loads: requests (M)", "sectors / request", "global stores: requests (M)",
               "sectors / request", "L1 to L2: sectors read (M)", "sectors written (M)", "DRAM read (MB)",
               "DRAM write (MB)"]
    rows = [[f"`{k['kernel']}`", f"{k['us']:.1f}", f"{k['ld_req'] / 1e6:.2f}", f"{k['ld_sec'] / k['ld_req']:.0f}",
             f"{k['st_req'] / 1e6:.2f}", f"{k['st_sec'] / k['st_req']:.0f}", f"{k['l2_rd_sec'] / 1e6:.2f}",
             f"{k['l2_wr_sec'] / 1e6:.2f}", f"{k['read_mb']:.1f}", f"{k['write_mb']:.1f}"] for k in kernels]
    return ncu_table(columns, rows, shape, "clocks not locked, its own cache control: L2 clean before each launch",
                     ". A warp's 16-byte accesses to 512 contiguous bytes touch 16 sectors.", rel_path)


def fmt_balance(prof, rel_path):
    """Markdown table of how evenly each profiled launch kept the SMs busy: the cycles the least
    and the most busy SM were active, beside the launch, registers, occupancy and time. For one
    kernel run several ways: the file's `# launches:` line names each run."""
    kernels, shape, how = prof
    need = ("cyc_min", "cyc_avg", "cyc_max")
    if any(k[m] != k[m] for k in kernels for m in need) or any(not k["label"] for k in kernels):
        raise DataError(f"{rel_path}: the balance table needs the sm__cycles_active metrics and a '# launches:' line")
    columns = ["launch", "blocks x threads", "registers / thread", "achieved occupancy (%)", "time (us)",
               "DRAM throughput (% of peak)", "SM active cycles: least busy SM (k)", "mean (k)",
               "most busy SM (k)"]
    rows = [[f"`{k['kernel']}`", k["label"], f"{k['grid']:.0f} x {k['block']:.0f}", f"{k['regs']:.0f}",
             f"{k['occupancy']:.1f}", f"{k['us']:.1f}", f"{k['dram_pct']:.1f}", f"{k['cyc_min'] / 1e3:.1f}",
             f"{k['cyc_avg'] / 1e3:.1f}", f"{k['cyc_max'] / 1e3:.1f}"] for k in kernels]
    return ncu_table(columns, rows, shape, how or "`scripts/profile.sh`, clocks not locked",
                     "; SM active cycles: sm__cycles_active, least (min), mean (avg) and most (max) over the SMs.",
                     rel_path)


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
    ctxs = "; ".join(f"{p}: {peers[p]['context'].get('peer', p)}, copy line {peers[p]['copy_gbps']:.0f} GB/s, "
                     f"commit {str(peers[p]['context'].get('git_commit', '?'))[:7]}" for p in names)
    lines.append("")
    which = f"`{op}/{kernel}`" if kernel else "best kernel at each cols"
    lines.append(f"GB/s, {op}, rows = {rows}. Ours: `{chapter}`'s {which} (copy line "
                 f"{ch['copy_gbps']:.0f} GB/s, commit {str(ch['context'].get('git_commit', '?'))[:7]}). "
                 f"Peers, by the same method (`make compare`): {ctxs}. **>=** marks ours at or above every peer.")
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


def fmt_accuracy(path):
    """Markdown table of chapter 09's variance experiment."""
    with open(path) as f:
        doc = json.load(f)
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
                 f"float64; {ctx['gpu_name']}, commit {ctx['git_commit'][:7]}. Data: "
                 f"`plots/data/{REFERENCE_GPU}/experiments/ch09_variance/accuracy.json`.")
    return "\n".join(lines)


SUMMARY_SHAPES = [("f32", 128), ("f32", 1024), ("f32", 4096), ("f32", 32768), ("f16", 1024), ("f16", 4096)]


def fmt_paths(path):
    """Markdown table of chapter 12's dispatch on the GPU that wrote `path` (--paths): the path per
    shape, for softmax (forward ops share it) and both backward ops, per dtype."""
    with open(path) as f:
        d = json.load(f)
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
                 + "), written by `ch12_production_softmax --paths`; block_regs shows its threads per block. "
                 "log_softmax follows softmax's column. scale_mask_softmax does too, except that it never takes "
                 "block_regs (its rows there stay on the warp path while they fit in registers and take shared "
                 "memory past that) or tile (warp), and, caching fp32 logits, leaves shared memory at half the "
                 "columns of 16-bit softmax.")
    return "\n".join(lines)


def load_round(path, kernel=None):
    """One round's benchmark JSON: {op/dtype/rows/cols: GB/s} (the kernel left out; with `kernel`,
    that kernel's benchmarks only), and its commit; ({}, None) for a file a cut-short round left
    unreadable."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, json.JSONDecodeError):
        return {}, None
    out = {}
    for b in doc.get("benchmarks", []):
        if "bytes_per_second" not in b:
            continue
        op, bench_kernel, rest = b["name"].split("/iterations")[0].split("/", 2)
        if kernel is None or bench_kernel == kernel:
            out[f"{op}/{rest}"] = b["bytes_per_second"] / 1e9
    commit = doc.get("context", {}).get("git_commit", "?")
    return out, commit[:7] + ("-dirty" if commit.endswith("-dirty") else "")


def fmt_rounds(directory, groups, match="", kernel=None):
    """Markdown table of alternating rounds (scripts/experiments/peer_rounds.sh: files
    <who>_r<round>.json in `directory`, or a round's parts <who>_r<round>.<part>.json): for each group {ours: (peer, ...)} and each point (a
    benchmark name without its kernel) containing `match`, ours' median GB/s over the rounds
    that have both sides, the best peer's median, and the rounds in which ours was at or above
    every peer of that round. `kernel`: only that kernel's benchmarks (files that time several
    kernels of a point, as an A/B of one binary's dispatch beside a forced path)."""
    round_file = re.compile(r"_r(\d+)(?:\.[\w-]+)?\.json$")  # <who>_r<N>.json, or a part: <who>_r<N>.<part>.json

    def rounds(who):
        by = {}
        for f in glob.glob(os.path.join(directory, f"{who}_r*.json")):
            m = round_file.search(f)
            d = load_round(f, kernel)[0] if m else {}
            if d:  # a round timed in parts (a process per shape) is the union of its parts
                by.setdefault(int(m.group(1)), {}).update(d)
        return by

    stamps = {load_round(f)[1] for f in glob.glob(os.path.join(directory, "*_r*.json"))
              if round_file.search(f)} - {None}
    lines = ["| ours | point | rounds | GB/s | best peer | against the best peer | rounds at or above every peer |",
             "|---|---|---:|---:|---|---:|---:|"]
    for ours_name, peer_names in groups.items():
        ours = rounds(ours_name)
        peers = {p: rounds(p) for p in peer_names}
        common = sorted(set(ours).intersection(*[set(v) for v in peers.values()]))
        if not common:
            raise DataError(f"rounds: no round of {directory} has {ours_name} and {', '.join(peer_names)}")
        for point in sorted(ours[common[0]]):
            have = [r for r in common if point in ours[r] and any(point in peers[p][r] for p in peers)]
            if match not in point or not have:
                continue
            o = statistics.median(ours[r][point] for r in have)
            meds = {p.rstrip("0123456789"): statistics.median(peers[p][r][point] for r in have if point in peers[p][r])
                    for p in peers if any(point in peers[p][r] for r in have)}
            top = max(meds, key=meds.get)
            wins = sum(1 for r in have if all(ours[r][point] >= peers[p][r][point] for p in peers if point in peers[p][r]))
            lines.append(f"| {ours_name} | {point} | {len(have)} | {o:.0f} | {top} {meds[top]:.0f} | {100 * (o / meds[top] - 1):+.1f}% | "
                         f"{wins} of {len(have)} |")
    lines.append("")
    lines.append(f"GB/s, medians over rounds, each side a separate process timed by the course's method, in "
                 f"an order rotated each round (as `scripts/experiments/peer_rounds.sh` runs them; the data's "
                 f"notes say how); data: `{os.path.relpath(directory, ROOT)}`, commits "
                 f"{', '.join(sorted(stamps))}.")
    return "\n".join(lines)


def fmt_positions(directory, match=""):
    """Markdown table of processes that ran several benchmarks (files <variant>_r<round>.json in
    `directory`, one process each): each benchmark numbered by its place in its process (1: the
    first; repetitions count separately), and for each (variant, place, benchmark) whose variant or
    benchmark contains `match`, the median GB/s over the rounds, the lowest and highest, and the
    rounds (experiments/placement)."""
    acc, stamps = {}, set()
    for f in sorted(glob.glob(os.path.join(directory, "*_r*.json"))):
        m = re.match(r"(.+)_r(\d+)\.json$", os.path.basename(f))
        if not m:
            continue
        with open(f) as fh:
            doc = json.load(fh)
        stamps.add(load_round(f)[1])
        runs = [b for b in doc.get("benchmarks", []) if b.get("run_type") != "aggregate" and "bytes_per_second" in b]
        for place, b in enumerate(runs, 1):
            name = re.sub(r"/(iterations|repeats|manual_time).*", "", b["name"])
            if match in m.group(1) or match in name:
                acc.setdefault((m.group(1), place, name), []).append(b["bytes_per_second"] / 1e9)
    if not acc:
        raise DataError(f"positions: no benchmark of {directory} matches '{match}'")
    lines = ["| process | place | benchmark | GB/s | lowest-highest | rounds |", "|---|---:|---|---:|---|---:|"]
    for (variant, place, name), v in sorted(acc.items(), key=lambda kv: kv[0][:2]):
        lines.append(f"| {variant} | {place} | {name} | {statistics.median(v):.0f} | {min(v):.0f}-{max(v):.0f} | {len(v)} |")
    lines.append("")
    lines.append(f"GB/s, medians over rounds, one process per round and variant, the variants alternating; place: "
                 f"the benchmark's order in its process. Data: `{os.path.relpath(directory, ROOT)}`, commits "
                 f"{', '.join(sorted(s for s in stamps if s))}.")
    return "\n".join(lines)


TWIN_PATHS = ("warp", "tile", "block_regs")


def fmt_twins(chapter, path):
    """Markdown table: `production` against the forced variant of the path the dispatch chose
    (warp, tile or block_regs, whose forced launches take the dispatch's shape), per dtype: the same
    kernel and launch benchmarked twice in one process, so their differences are the run's noise."""
    with open(path) as f:
        d = json.load(f)
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
                 f"Commit {str(chapter['context'].get('git_commit', '?'))[:7]}.")
    return "\n".join(lines)


def fmt_summary(chapters, rows=49152):
    """Markdown table for the README: each chapter's main operation, its best kernel at a few shapes."""
    head = ["chapter", "operation"] + [f"{d}, {c} cols" for d, c in SUMMARY_SHAPES]
    lines = ["| " + " | ".join(head) + " |", "|---|---|" + "---:|" * len(SUMMARY_SHAPES)]
    copy = None
    for name, ch in sorted(chapters.items()):
        ops = [r["op"] for r in ch["results"] if r["rows"] == rows]
        if not ops:
            continue  # elementwise chapters (rows = 1) have their own table
        op = max(set(ops), key=ops.count)
        copy = copy or ch["copy_gbps"]
        cells = [name, op]
        for d, c in SUMMARY_SHAPES:
            best = max((r for r in ch["results"] if r["op"] == op and r["dtype"] == d and r["rows"] == rows
                        and r["cols"] == c), key=lambda r: r["gbps"], default=None)
            cells.append(f"{best['gbps']:.0f} ({best['pct_of_copy']:.0f}%)" if best else "")
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(f"GB/s (percent of each run's copy line) of each chapter's best kernel for its operation, rows = "
                 f"{rows}; empty where the chapter's kernels do not reach that shape or type. Generated from "
                 f"`plots/data/{REFERENCE_GPU}/` by `scripts/plot.py`.")
    return "\n".join(lines)


SUMMARY_RE = re.compile(r"(<!-- summary(?: (?P<gpu>[\w-]+))? -->)(.*?)(<!-- /summary -->)", re.S)
PEERS_RE = re.compile(r"(<!-- peers (?P<ch>\w+) (?P<op>\w+) (?P<rows>\d+)(?: kernel=(?P<kernel>\w+))?"
                      r"(?: (?P<gpu>[\w-]+))? -->)(.*?)(<!-- /peers -->)", re.S)
ACCURACY_RE = re.compile(r"(<!-- accuracy (?P<file>[\w/.]+)(?: (?P<gpu>[\w-]+))? -->)(.*?)(<!-- /accuracy -->)", re.S)
VS_COPY_RE = re.compile(r"(?P<open><!-- vs_copy (?P<ch>\w+)(?: op=(?P<op>\w+))?(?: kernel=(?P<kernel>\w+))?"
                        r"(?: (?P<gpu>[\w-]+))? -->)(.*?)(?P<close><!-- /vs_copy -->)", re.S)
SECTORS_RE = re.compile(r"(<!-- sectors (?P<ch>[\w./]+)(?: (?P<gpu>[\w-]+))? -->)(.*?)(<!-- /sectors -->)", re.S)
BALANCE_RE = re.compile(r"(<!-- balance (?P<ch>[\w./]+)(?: (?P<gpu>[\w-]+))? -->)(.*?)(<!-- /balance -->)", re.S)
PROFILE_RE = re.compile(r"(<!-- profile (?P<ch>[\w./]+)(?: (?P<gpu>[\w-]+))? -->)(.*?)(<!-- /profile -->)", re.S)
RESULTS_RE = re.compile(r"(<!-- results (?P<ch>\w+)(?: (?P<gpu>[\w-]+))? -->)(.*?)(<!-- /results -->)", re.S)
ROUNDS_RE = re.compile(r"(<!-- rounds (?P<dir>[\w/.]+)(?P<groups>(?: [\w]+:[\w,]+)+)(?: match=(?P<match>\S+))?"
                       r"(?: kernel=(?P<kernel>\w+))? -->)(.*?)(<!-- /rounds -->)", re.S)
POSITIONS_RE = re.compile(r"(<!-- positions (?P<dir>[\w/.]+)(?: match=(?P<match>\S+))? -->)(.*?)(<!-- /positions -->)",
                          re.S)
TWINS_RE = re.compile(r"(<!-- twins (?P<file>[\w/.]+)(?: (?P<gpu>[\w-]+))? -->)(.*?)(<!-- /twins -->)", re.S)
PATHS_RE = re.compile(r"(<!-- paths (?P<file>[\w/.]+)(?: (?P<gpu>[\w-]+))? -->)(.*?)(<!-- /paths -->)", re.S)
VALUE_RE = re.compile(r"(<!-- value (?P<ch>\w+) (?P<name>\S+) (?P<field>\w+)(?: (?P<gpu>[\w-]+))? -->)"
                      r"(.*?)(<!-- /value -->)", re.S)


def rewrite_markers(text, data, peers=None):
    def results(m):
        gpu = m["gpu"] or REFERENCE_GPU
        ch = data.get(gpu, {}).get(m["ch"])
        if ch is None:
            raise DataError(f"results marker names {m['ch']} on {gpu}: no such data")
        return f"{m.group(1)}\n{fmt_table(ch)}\n{m.group(5)}"

    def val(m):
        return f"{m.group(1)}{value(data, m['ch'], m['name'], m['field'], m['gpu'] or REFERENCE_GPU)}{m.group(7)}"

    def ncu_marker(m, kind, fmt):
        path = os.path.join(DATA_DIR, m["gpu"] or REFERENCE_GPU, f"{m['ch']}.ncu.csv")
        if not os.path.exists(path):
            raise DataError(f"{kind} marker names {path}: no such file (scripts/profile.sh makes it)")
        return f"{m.group(1)}\n{fmt(load_profile(path), m['ch'])}\n{m.group(5)}"

    def profile(m):
        return ncu_marker(m, "profile", fmt_profile)

    def sectors(m):
        return ncu_marker(m, "sectors", fmt_sectors)

    def balance(m):
        return ncu_marker(m, "balance", fmt_balance)

    def vs_copy(m):
        gpu = m["gpu"] or REFERENCE_GPU
        chapters = data.get(gpu, {})
        copy_name = next((n for n in chapters if n.startswith("ch00_")), None)
        if m["ch"] not in chapters or copy_name is None:
            raise DataError(f"vs_copy marker needs {m['ch']} and chapter 00 on {gpu}")
        table = fmt_vs_copy(chapters[m["ch"]], chapters[copy_name], m["op"], m["kernel"])
        return f"{m['open']}\n{table}\n{m['close']}"

    def peers_table(m):
        gpu = m["gpu"] or REFERENCE_GPU
        chapters, p = data.get(gpu, {}), (peers or {}).get(gpu, {})
        if m["ch"] not in chapters or not p:
            raise DataError(f"peers marker needs {m['ch']} and peer data (peer_*.json) on {gpu}")
        table = fmt_peers(chapters, p, m["ch"], m["op"], int(m["rows"]), m["kernel"])
        return f"{m.group(1)}\n{table}\n{m.group(8)}"

    def accuracy(m):
        gpu = m["gpu"] or REFERENCE_GPU
        path = os.path.join(DATA_DIR, gpu, "experiments", m["file"])
        if not os.path.exists(path):
            raise DataError(f"accuracy marker names {path}: no such file")
        return f"{m.group(1)}\n{fmt_accuracy(path)}\n{m.group(5)}"

    def paths(m):
        gpu = m["gpu"] or REFERENCE_GPU
        path = os.path.join(DATA_DIR, gpu, m["file"])
        if not os.path.exists(path):
            raise DataError(f"paths marker names {path}: no such file (ch12_production_softmax --paths)")
        return f"{m.group(1)}\n{fmt_paths(path)}\n{m.group(5)}"

    def twins(m):
        gpu = m["gpu"] or REFERENCE_GPU
        path = os.path.join(DATA_DIR, gpu, m["file"])
        name = os.path.basename(m["file"]).split(".")[0]
        if not os.path.exists(path) or name not in data.get(gpu, {}):
            raise DataError(f"twins marker names {path}: needs it and {name}.json on {gpu}")
        return f"{m.group(1)}\n{fmt_twins(data[gpu][name], path)}\n{m.group(5)}"

    def rounds(m):
        directory = os.path.join(DATA_DIR, REFERENCE_GPU, m["dir"])
        if not os.path.isdir(directory):
            raise DataError(f"rounds marker names {directory}: no such folder")
        groups = {g.split(":")[0]: tuple(g.split(":")[1].split(",")) for g in m["groups"].split()}
        return f"{m.group(1)}\n{fmt_rounds(directory, groups, m['match'] or '', m['kernel'])}\n{m.group(7)}"

    def positions(m):
        directory = os.path.join(DATA_DIR, REFERENCE_GPU, m["dir"])
        if not os.path.isdir(directory):
            raise DataError(f"positions marker names {directory}: no such folder")
        return f"{m.group(1)}\n{fmt_positions(directory, m['match'] or '')}\n{m.group(5)}"

    def summary(m):
        gpu = m["gpu"] or REFERENCE_GPU
        if gpu not in data:
            raise DataError(f"summary marker: no data for {gpu}")
        return f"{m.group(1)}\n{fmt_summary(data[gpu])}\n{m.group(4)}"

    text = SUMMARY_RE.sub(summary, text)
    text = PEERS_RE.sub(peers_table, text)
    text = ACCURACY_RE.sub(accuracy, text)
    text = PATHS_RE.sub(paths, text)
    text = TWINS_RE.sub(twins, text)
    text = ROUNDS_RE.sub(rounds, text)
    text = POSITIONS_RE.sub(positions, text)
    text = VS_COPY_RE.sub(vs_copy, text)
    text = SECTORS_RE.sub(sectors, text)
    text = BALANCE_RE.sub(balance, text)
    return PROFILE_RE.sub(profile, VALUE_RE.sub(val, RESULTS_RE.sub(results, text)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=os.path.join(ROOT, "plots", "data"))
    ap.add_argument("--out", default=os.path.join(ROOT, "plots", "figures"))
    ap.add_argument("--tables", action="store_true", help="rewrite the marked tables and values in the READMEs")
    ap.add_argument("--check", action="store_true", help="also check every marker in the READMEs resolves")
    args = ap.parse_args()
    global DATA_DIR
    DATA_DIR = args.data
    try:
        data = load_all(args.data)
        peers = load_peers(args.data)
        if not data:
            raise DataError(f"no chNN_*.json under {args.data}/<gpu>/")
        for gpu, chapters in data.items():
            gpu_name = next(iter(chapters.values()))["context"].get("gpu_name", gpu)
            out_dir = os.path.join(args.out, gpu)
            for ch in chapters.values():
                chapter_figure(ch, gpu_name, out_dir, peers.get(gpu))
            progression_figure(chapters, gpu_name, out_dir)
            extra = ""
            if peers.get(gpu):
                peers_figure(chapters, peers[gpu], gpu_name, out_dir)
                extra = f" + peers ({', '.join(sorted(peers[gpu]))})"
            print(f"{gpu}: {len(chapters)} chapter figures + progression{extra} -> {out_dir}")
        readmes = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "chapters", "*", "README.md")))
        for path in readmes:
            with open(path) as f:
                text = f.read()
            for kind in ("results", "value", "profile", "vs_copy", "peers", "accuracy", "summary", "paths"):
                opened = len(re.findall(rf"<!-- {kind}[ -]", text))
                closed = text.count(f"<!-- /{kind} -->")
                if opened != closed:  # an unclosed marker is never rewritten again: fail loudly
                    raise DataError(f"{os.path.relpath(path, ROOT)}: {opened} '<!-- {kind}' markers, {closed} closing")
            new = rewrite_markers(text, data, peers)  # raises on a marker without data
            if args.tables and new != text:
                with open(path, "w") as f:
                    f.write(new)
                print(f"updated {os.path.relpath(path, ROOT)}")
            elif args.check and new != text:
                print(f"note: {os.path.relpath(path, ROOT)} differs from the data (run make plots)")
    except DataError as e:
        print(f"plot.py: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
