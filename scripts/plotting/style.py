"""What each figure compares, as data, and how it is drawn: one colour per chapter in every
figure, the peers' and the copy's styles, panels, axes, the legend under the panels."""
import os

import matplotlib

matplotlib.use("Agg")
matplotlib.rcParams["svg.hashsalt"] = "course"  # stable ids: regenerating unchanged data changes no file
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import LogLocator, NullLocator  # noqa: E402

# One colour per chapter, in every figure; a chapter's kernels share it (KERNEL_STYLES tell them
# apart), and dtype is a panel, never a colour. Black is the copy.
CHAPTER_COLORS = {
    0: "#7f7f7f", 1: "#d62728", 2: "#ff7f0e", 3: "#bcbd22", 4: "#2ca02c", 5: "#17becf", 6: "#1f77b4",
    7: "#9467bd", 8: "#e377c2", 9: "#008080", 10: "#637939", 11: "#5254a3", 12: "#8c564b",
    13: "#b5179e", 14: "#3a0ca3", 15: "#e76f51", 16: "#2a9d8f",
}
PEER_STYLE = {"cudnn": {"color": "#76b900", "marker": "x", "label": "cuDNN"},
              "torch": {"color": "#ee4c2c", "marker": "+", "label": "PyTorch eager"},
              "torch_compile": {"color": "#9c27b0", "marker": "1", "label": "torch.compile"}}
KERNEL_STYLES = [("-", "o"), ("--", "s"), (":", "^"), ("-.", "D"), ((0, (5, 1, 1, 1)), "v"),
                 ((0, (1, 1)), "P"), ((0, (8, 2)), "X")]

# The step each chapter's figure shows: its kernels against the best kernel of the chapter(s)
# before it for the same operation and dtype, as its lesson compares them. A chapter not listed
# has no earlier chapter of its operation: 00 and 01 (the ceiling and the reference), 09
# (LayerNorm: against PyTorch instead), 10 (its baseline, the block kernel, is inside it), 11
# (elementwise: against PyTorch instead), 15 (the norms' backward) and 16 (cross-entropy): against
# PyTorch instead.
PREVIOUS = {
    2: (1,),  # fusion against the five naive kernels
    3: (2,),  # a warp per row against a block per row
    4: (3,),  # packs against one element per instruction
    5: (4,),  # paired conversions against chapter 04's kernel
    6: (2,),  # packed shared memory against chapter 02's unpacked block per row
    7: (6,),  # uncached long rows against the shared-memory kernels where those still fit
    8: (7,),  # one pass fewer than the uncached kernel
    12: (1, 2, 3, 4, 5, 6, 7, 8),  # one dispatch against the best of chapters 01-08 at each shape
    13: (12,),  # the Hopper paths added against chapter 12's dispatch without them
}
PEER_CHAPTERS = {9, 11, 12, 13, 14, 15, 16}  # chapters about the peers' operations: their figures draw the peers
SHOWN_KERNELS = {12: ("production", "fused", "unfused"), 13: ("production", "fused", "unfused"),
                 14: ("production",)}  # the dispatch, not every forced path
OP_ORDER = {  # the main operation first; chapters not listed: the op with the most results first
    11: ("gelu", "cast_from_f32", "cast_to_f32", "relu", "scale", "mul", "fma"),
    12: ("softmax", "log_softmax", "scale_mask_softmax"),
    13: ("softmax", "log_softmax", "scale_mask_softmax"),
    14: ("softmax_backward", "log_softmax_backward"),
    15: ("layer_norm_backward", "rms_norm_backward", "rms_norm"),
    16: ("cross_entropy_fused", "cross_entropy", "cross_entropy_backward"),
}
PANEL_W, PANEL_H = 4.6, 3.1


def chapter_color(n):
    return CHAPTER_COLORS.get(n, "#333333")


def kernel_styles(results):
    """{kernel: (linestyle, marker)}: the kernel with the most results first (solid, circles)."""
    counts = {}
    for r in results:
        counts[r["kernel"]] = counts.get(r["kernel"], 0) + 1
    order = sorted(counts, key=lambda k: (-counts[k], k))
    return {k: KERNEL_STYLES[i % len(KERNEL_STYLES)] for i, k in enumerate(order)}


def grid(nrows, ncols, panel_h=PANEL_H):
    fig, axes = plt.subplots(nrows, ncols, figsize=(PANEL_W * ncols, panel_h * nrows), squeeze=False)
    return fig, axes


def style_axes(ax, title, xlabel=None, ylabel=True):
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(LogLocator(base=2, numticks=7))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.grid(True, which="major", alpha=0.3)
    ax.set_title(title, fontsize=9)
    ax.tick_params(labelsize=8)
    if xlabel:
        ax.set_xlabel(xlabel, fontsize=8)
    if ylabel:
        ax.set_ylabel("GB/s", fontsize=8)


# The legend's order: this chapter's kernels, the previous step, the peers, the copy.
OURS, PREVIOUS_STEP, PEER, COPY = range(4)


class Legend:
    """The figure's legend entries, once each: by rank, then in the order first drawn."""

    def __init__(self, by_label=False):
        self.entries = {}
        self.by_label = by_label  # within a rank, by label rather than as drawn

    def plot(self, ax, xs, ys, label, rank=OURS, **kw):
        line, = ax.plot(xs, ys, **kw)
        self.entries.setdefault(label, (rank, len(self.entries), line))
        return line

    def add(self, label, rank=OURS, **kw):
        self.entries.setdefault(label, (rank, len(self.entries), Line2D([], [], **kw)))

    def sorted(self):
        return sorted(self.entries.items(), key=lambda kv: (kv[1][0], kv[0] if self.by_label else kv[1][1]))


def draw_copy(ax, ref, legend):
    """The copy the panel is drawn against: ('matched', {cols: GB/s}) the copy of the same bytes,
    ('ch00', {cols: GB/s}) chapter 00's memcpy of the same shape, or ('line', GB/s)."""
    kind, v = ref
    if kind == "line":
        if v:
            ax.axhline(v, color="black", linewidth=1.3, zorder=1)
            legend.add(f"copy line: one large device-to-device copy ({v:.0f} GB/s)", COPY, color="black",
                       linewidth=1.3)
        return
    if not v:
        return
    label = ("copy of the same bytes (cudaMemcpyAsync, same process)" if kind == "matched"
             else "cudaMemcpy of the same shape (chapter 00's run)")
    xs = sorted(v)
    legend.plot(ax, xs, [v[x] for x in xs], label, COPY, color="black", linewidth=1.6, zorder=1)


def finish(fig, axes, legend, suptitle, ncol=4):
    """One y scale for every panel, the title above, the legend under the panels."""
    top = max([max(line.get_ydata(), default=0) for ax in axes.flat for line in ax.get_lines()] +
              [1.0])
    for ax in axes.flat:
        ax.set_ylim(0, top * 1.08)
    fig.suptitle(suptitle, fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.985 if axes.shape[0] > 2 else 0.96))
    entries = legend.sorted()
    fig.legend([e[1][2] for e in entries], [e[0] for e in entries], loc="upper center", bbox_to_anchor=(0.5, 0.0),
               ncol=min(ncol, len(entries)), fontsize=8.5, frameon=False)


def save(fig, out_dir, stem):
    os.makedirs(out_dir, exist_ok=True)
    for ext in ("png", "svg"):
        fig.savefig(os.path.join(out_dir, f"{stem}.{ext}"), dpi=120, bbox_inches="tight",
                    metadata={"Date": None} if ext == "svg" else {})
    plt.close(fig)
