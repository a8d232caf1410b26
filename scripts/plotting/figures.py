"""The figures: per chapter chNN_name.png/.svg (its kernels against the previous chapter's best
and the copy of the same bytes; the peers in the chapters about them), progression.png (each
chapter's best softmax) and peers.png (the course's best against cuDNN and PyTorch). x: columns
(log2), y: GB/s; a column of panels per dtype, a row per operation and row count."""
from . import DTYPES, chapter_number
from .style import PANEL_H
from .load import best_course, copy_reference, main_op, select
from .style import (OP_ORDER, PEER, PEER_CHAPTERS, PEER_STYLE, PREVIOUS, PREVIOUS_STEP, SHOWN_KERNELS, Legend,
                    chapter_color, draw_copy, finish, grid, kernel_styles, save, style_axes)

MIN_SWEEP = 3  # a (op, rows) with fewer cols than this is drawn as points in the op's main panel


def panel_rows(ch):
    """[(op, rows)], one row of panels each: the main operation at its main row count first, then
    its other row-count sweeps (the long rows), then the other operations at the main row count."""
    rows_main = max(sorted({r["rows"] for r in ch["results"]}),
                    key=lambda n: sum(r["rows"] == n for r in ch["results"]))
    n = chapter_number(ch["chapter"])
    ops = sorted({r["op"] for r in ch["results"]})
    first = main_op(ch, rows_main)
    order = [o for o in OP_ORDER.get(n, ()) if o in ops] or [first] + [o for o in ops if o != first]
    out = [(order[0], rows_main)]
    sweeps = sorted({r["rows"] for r in select(ch["results"], order[0])} - {rows_main}, reverse=True)
    out += [(order[0], rows) for rows in sweeps
            if len({r["cols"] for r in select(ch["results"], order[0], rows=rows)}) >= MIN_SWEEP]
    return out + [(op, rows_main) for op in order[1:] if select(ch["results"], op, rows=rows_main)]


def draw_kernels(ax, results, styles, color, prefix, legend, points=False):
    """A chapter's kernels in its colour: the first (its main kernel) wide and underneath, so that
    a kernel that coincides with it stays visible on top."""
    for i, (kernel, (ls, marker)) in enumerate(styles.items()):
        pts = sorted((r["cols"], r["gbps"]) for r in results if r["kernel"] == kernel)
        if not pts:
            continue
        xs, ys = zip(*pts)
        if points:  # a shape outside the panel's sweep: stars, named by their rows
            label = f"{prefix} {kernel}, {results[0]['rows']} rows"
            legend.plot(ax, xs, ys, label, linestyle="none", marker=marker, markersize=8, color=color,
                        markeredgecolor="black", markeredgewidth=0.8, zorder=6)
        else:
            wide = i == 0 and len(styles) > 1
            legend.plot(ax, xs, ys, f"{prefix} {kernel}", linestyle=ls, marker=marker, markersize=4 if wide else 3.5,
                        linewidth=2.6 if wide else 1.4, color=color, zorder=4 if wide else 5)


def draw_best(ax, best, label, legend, several, rank=PREVIOUS_STEP):
    """A best-of line ({cols: (GB/s, 'chNNkernel')}). One chapter's: a band in its colour. Several
    chapters': a grey band (under the kernels it is compared with) or line (`several` = 'band'
    or 'line'), each point a dot in the colour of the chapter it comes from, on top."""
    xs = sorted(best)
    ys = [best[x][0] for x in xs]
    sources = sorted({best[x][1][:4] for x in xs})
    if not several:  # a band in its colour, under the lines of the chapter it is compared with
        legend.plot(ax, xs, ys, label, rank, color=chapter_color(int(sources[0][2:])), linewidth=5, alpha=0.45,
                    solid_capstyle="round", zorder=3)
        return
    band = several == "band"
    legend.plot(ax, xs, ys, label, rank, color="#bbbbbb" if band else "#666666", linewidth=6 if band else 1.5,
                solid_capstyle="round", zorder=3)
    for src in sources:
        pts = [x for x in xs if best[x][1][:4] == src]
        legend.plot(ax, pts, [best[x][0] for x in pts], f"  dot: from {src}", rank, linestyle="none", marker="o",
                    markersize=5, color=chapter_color(int(src[2:])), markeredgecolor="white", zorder=6)


def draw_peers(ax, peers, op, dtype, rows, legend):
    for peer, data in sorted((peers or {}).items()):
        pts = sorted((r["cols"], r["gbps"]) for r in select(data["results"], op, dtype, rows))
        if pts:
            st = PEER_STYLE.get(peer, {"color": "#555555", "marker": "1", "label": peer})
            xs, ys = zip(*pts)
            legend.plot(ax, xs, ys, st["label"], PEER, linestyle="-.", linewidth=1.2, marker=st["marker"],
                        markersize=5, color=st["color"], zorder=4.5)


def previous_label(chapters, nums, op, dtype, rows):
    """The previous-step line's label and data, or None where those chapters lack the op."""
    prev = {k: v for k, v in chapters.items() if chapter_number(k) in nums}
    best = best_course(prev, op, dtype, rows)
    if not best:
        return None
    if len(nums) > 1:
        return f"the previous steps: best of ch{min(nums):02d}-ch{max(nums):02d} at each shape", best
    kernels = {r["kernel"] for ch in prev.values() for r in select(ch["results"], op, None, rows)}
    name = next(iter(prev))
    which = next(iter(kernels)) if len(kernels) == 1 else "best kernel at each shape"
    return f"{name[:4]} {which} (the previous step)", best


def chapter_figure(ch, gpu_name, out_dir, chapters=None, peers=None):
    """One chapter's figure: a row of panels per (op, rows) of panel_rows, a column per dtype."""
    n = chapter_number(ch["chapter"])
    shown = [r for r in ch["results"] if r["kernel"] in SHOWN_KERNELS.get(n, (r["kernel"],))]
    styles, color = kernel_styles(shown), chapter_color(n)
    dtypes = [d for d in DTYPES if any(r["dtype"] == d for r in shown)]
    layout = panel_rows(ch)
    in_panels = {(op, rows) for op, rows in layout}
    flat = all(rows == 1 for _, rows in layout)
    several_ops = len({op for op, _ in layout}) > 1
    fig, axes = grid(len(layout), len(dtypes), 2.5 if flat else PANEL_H)
    legend = Legend()
    for i, (op, rows) in enumerate(layout):
        for j, dtype in enumerate(dtypes):
            ax = axes[i][j]
            here = select(shown, op, dtype, rows)
            title = ", ".join(([op] if several_ops else []) + [dtype] + ([] if flat else [f"{rows} rows"]))
            if not here:
                ax.axis("off")
                ax.text(0.5, 0.5, f"{title}: not measured", ha="center", va="center", fontsize=9,
                        transform=ax.transAxes, color="#666666")
                continue
            draw_copy(ax, copy_reference(select(ch["results"], op, dtype, rows), ch["copy_gbps"]), legend)
            if n in PEER_CHAPTERS:
                draw_peers(ax, peers, op, dtype, rows, legend)
            prev = previous_label(chapters or {}, PREVIOUS[n], op, dtype, rows) if n in PREVIOUS else None
            if prev:
                draw_best(ax, prev[1], prev[0], legend, "band" if len(PREVIOUS[n]) > 1 else None)
            draw_kernels(ax, here, styles, color, ch["chapter"][:4], legend)
            if i == 0:  # shapes outside every sweep (chapter 10's headline 442368 x 128)
                for other in sorted({r["rows"] for r in select(shown, op, dtype)} - {rows}):
                    if (op, other) not in in_panels:
                        draw_kernels(ax, select(shown, op, dtype, other), styles, color, ch["chapter"][:4],
                                     legend, points=True)
            last = i == len(layout) - 1 or not select(shown, layout[i + 1][0], dtype, layout[i + 1][1])
            style_axes(ax, title, ("elements (log2)" if flat else "columns (log2)") if last else None, j == 0)
    finish(fig, axes, legend, f"{ch['chapter']}  ({gpu_name})", ncol=3 if len(dtypes) < 3 else 4)
    save(fig, out_dir, ch["chapter"])


def course_copy(chapters, op, dtype, rows):
    """A course-wide figure's copy: the copy of the same bytes where every result of op has one,
    else chapter 00's memcpy of the same shape (the same bytes for a one-in one-out op), else the
    copy line."""
    results = [r for ch in chapters.values() for r in select(ch["results"], op, dtype, rows)]
    kind, v = copy_reference(results, next(iter(chapters.values()))["copy_gbps"])
    ch00 = next((c for name, c in sorted(chapters.items()) if name.startswith("ch00_")), None)
    memcpy = {r["cols"]: r["gbps"] for r in select(ch00["results"], "copy", dtype, rows, "memcpy")} if ch00 else {}
    if kind == "line" and op in ("softmax", "log_softmax") and memcpy:
        return "ch00", memcpy
    return kind, v


def progression_figure(chapters, gpu_name, out_dir, op="softmax"):
    """Each chapter's best softmax at each cols, a colour per chapter; the long rows below."""
    row_counts = [n for n in (49152, 128) if any(select(c["results"], op, rows=n) for c in chapters.values())]
    fig, axes = grid(len(row_counts), len(DTYPES))
    legend = Legend(by_label=True)
    for i, rows in enumerate(row_counts):
        for j, dtype in enumerate(DTYPES):
            ax = axes[i][j]
            draw_copy(ax, course_copy(chapters, op, dtype, rows), legend)
            for name, ch in sorted(chapters.items()):
                best = best_course({name: ch}, op, dtype, rows)
                if best:
                    xs = sorted(best)
                    legend.plot(ax, xs, [best[x][0] for x in xs], name, color=chapter_color(chapter_number(name)),
                                marker="o", markersize=3.5, linewidth=1.6, zorder=3)
            style_axes(ax, f"{op}, {dtype}, {rows} rows", "columns (log2)" if i == len(row_counts) - 1 else None,
                       j == 0)
    finish(fig, axes, legend, f"Each chapter's best {op} at each shape  ({gpu_name})", ncol=4)
    save(fig, out_dir, "progression")


def peers_figure(chapters, peers, gpu_name, out_dir):
    """The course's best (any chapter, any kernel) against each peer, same axes: softmax and
    LayerNorm at 49152 rows and softmax on the long rows (128), per dtype."""
    layout = [("softmax", 49152), ("layer_norm", 49152), ("softmax", 128)]
    fig, axes = grid(len(layout), len(DTYPES))
    legend = Legend()
    for i, (op, rows) in enumerate(layout):
        for j, dtype in enumerate(DTYPES):
            ax = axes[i][j]
            draw_copy(ax, course_copy(chapters, op, dtype, rows), legend)
            draw_peers(ax, peers, op, dtype, rows, legend)
            best = best_course(chapters, op, dtype, rows)
            if best:
                draw_best(ax, best, "the course's best kernel at each shape", legend, "line", rank=0)
            style_axes(ax, f"{op}, {dtype}, {rows} rows", "columns (log2)" if i in (1, 2) else None, j == 0)
    finish(fig, axes, legend, f"The course's best against the peers  ({gpu_name})", ncol=4)
    save(fig, out_dir, "peers")
