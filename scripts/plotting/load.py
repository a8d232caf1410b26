"""Loading: the chapters' and the peers' benchmark JSON, and chapter 12's and chapter 09's side
files, with the one parser of benchmark names. No matplotlib here."""
import glob
import json
import os
import re
import statistics

from . import DataError

# A benchmark name: op/kernel/dtype/rows:R/cols:C, then Google Benchmark's suffixes, each
# /word or /word:number (/iterations:25, /repeats:3, /manual_time, /min_time:0.5, ...), and on an
# aggregate row (--benchmark_repetitions) _mean, _median, _stddev or _cv after the last one.
NAME_RE = re.compile(r"^(?P<op>[a-z_0-9]+)/(?P<kernel>[a-z_0-9]+)/(?P<dtype>f32|f16|bf16)"
                     r"/rows:(?P<rows>\d+)/cols:(?P<cols>\d+)(?P<suffix>(?:/[a-z_]+(?::[0-9.]+)?)*)$")
AGGREGATES = ("mean", "median", "stddev", "cv")


def parse_name(name):
    """A benchmark name as a dict: op, kernel, dtype, rows, cols, `name` (the first five parts,
    the name the markers use), `options` ({'iterations': '25', 'manual_time': None, ...}) and
    `aggregate` (None, or 'mean', ... for an aggregate row). DataError for any other name."""
    aggregate = None
    head, _, tail = name.rpartition("_")
    if tail in AGGREGATES and NAME_RE.match(head) and NAME_RE.match(head)["suffix"]:
        name, aggregate = head, tail
    m = NAME_RE.match(name)
    if not m:
        raise DataError(f"benchmark name '{name}' does not follow op/kernel/dtype/rows:R/cols:C[/suffix...]")
    options = {}
    for part in m["suffix"].split("/")[1:]:
        key, _, val = part.partition(":")
        options[key] = val or None
    return {"op": m["op"], "kernel": m["kernel"], "dtype": m["dtype"], "rows": int(m["rows"]),
            "cols": int(m["cols"]), "name": "/".join(name.split("/")[:5]), "options": options,
            "aggregate": aggregate}


def _result(path, b):
    """One benchmark of a result file as the record every table and figure reads."""
    r = parse_name(b["name"])
    if "bytes_per_second" not in b:
        raise DataError(f"{path}: {b['name']} lacks bytes_per_second")
    matched = b.get("matched_copy_bytes_per_second")
    pct_matched = b.get("pct_of_matched_copy")
    if matched and pct_matched is None:
        pct_matched = 100 * b["bytes_per_second"] / matched
    if "pct_of_copy" not in b and pct_matched is None:
        raise DataError(f"{path}: {b['name']} lacks pct_of_copy (and pct_of_matched_copy)")
    del r["options"], r["aggregate"]
    r.update({
        "gbps": b["bytes_per_second"] / 1e9, "pct_of_copy": b.get("pct_of_copy"),
        "matched_copy_gbps": matched / 1e9 if matched else None, "pct_of_matched_copy": pct_matched,
        "median_us": b.get("median_us", float("nan")), "spread_pct": b.get("spread_pct", float("nan")),
        "peak_alloc_bytes": b.get("peak_alloc_bytes"),
    })
    return r


def load_chapter(path):
    """One chapter's (or peer's) JSON: {context, results, chapter, copy_gbps}. copy_gbps (the one
    large copy of the process, context copy_bytes_per_second) is None only where every result
    has its matched copy instead."""
    with open(path) as f:
        try:
            doc = json.load(f)
        except json.JSONDecodeError as e:
            raise DataError(f"{path}: not JSON ({e})")
    ctx = doc.get("context", {})
    results = [_result(path, b) for b in doc.get("benchmarks", [])
               if b.get("run_type", "iteration") == "iteration" and not b.get("error_occurred")]
    copy = ctx.get("copy_bytes_per_second")
    if copy is None and not (results and has_matched(results)):
        raise DataError(f"{path}: no environment stamp (copy_bytes_per_second) in its context")
    return {"context": ctx, "results": results, "chapter": os.path.basename(path)[:-5],
            "gpu": os.path.basename(os.path.dirname(os.path.abspath(path))),
            "copy_gbps": float(copy) / 1e9 if copy is not None else None}


def data_path(ch):
    """Where a loaded result file lives in the repository: its environment stamp (commit, board,
    clocks) is in its context, which the captions point to rather than repeat."""
    return f"plots/data/{ch.get('gpu', '?')}/{ch['chapter']}.json"


def load_all(data_dir):
    """{gpu: {chapter: data}} for every chapter JSON directly under data_dir/<gpu>/ (side files,
    <chapter>.<what>.json, left out)."""
    out = {}
    for path in sorted(glob.glob(os.path.join(data_dir, "*", "ch[0-9][0-9]_*.json"))):
        if os.path.basename(path).count(".") > 1:
            continue
        gpu = os.path.basename(os.path.dirname(path))
        out.setdefault(gpu, {})[os.path.basename(path)[:-5]] = load_chapter(path)
    return out


def load_peers(data_dir):
    """{gpu: {peer: data}} for every peer JSON (peer_cudnn.json, peer_torch.json) under data_dir/<gpu>/."""
    out = {}
    for path in sorted(glob.glob(os.path.join(data_dir, "*", "peer_*.json"))):
        if os.path.basename(path).count(".") > 1:
            continue
        gpu = os.path.basename(os.path.dirname(path))
        out.setdefault(gpu, {})[os.path.basename(path)[len("peer_"):-5]] = load_chapter(path)
    return out


def data_file(data_dir, gpu, rel, kind, hint=""):
    """The path of a marker's FILE (relative to data_dir/<gpu>/); DataError if there is none."""
    path = os.path.join(data_dir, gpu, rel)
    if not os.path.exists(path):
        raise DataError(f"{kind} marker names {path}: no such file{hint}")
    return path


def read_json(path):
    with open(path) as f:
        try:
            return json.load(f)
        except json.JSONDecodeError as e:
            raise DataError(f"{path}: not JSON ({e})")


# --- what a table or figure compares against ------------------------------------------------

def has_matched(results):
    """Whether every result has its copy of the same bytes (the harness's matched copy)."""
    return all(r["pct_of_matched_copy"] is not None for r in results)


def pct_field(results):
    """The percent a table of `results` shows: of the copy of the same bytes where every result
    has it, else of the process's one large copy."""
    return "pct_of_matched_copy" if results and has_matched(results) else "pct_of_copy"


def cell(r, field):
    """A table cell: 'GB/s (P%)'."""
    return f"{r['gbps']:.0f} ({r[field]:.0f}%)"


def select(results, op=None, dtype=None, rows=None, kernel=None):
    return [r for r in results if (op is None or r["op"] == op) and (dtype is None or r["dtype"] == dtype)
            and (rows is None or r["rows"] == rows) and (kernel is None or r["kernel"] == kernel)]


def copy_reference(results, copy_gbps):
    """What a figure's panel of `results` (one op, dtype and rows) is drawn against: ('matched',
    {cols: GB/s}), the median over the results at each cols of their copy of the same bytes,
    where every result has one; else ('line', copy_gbps), the process's one large copy."""
    if results and has_matched(results):
        by = {}
        for r in results:
            by.setdefault(r["cols"], []).append(r["matched_copy_gbps"])
        return "matched", {c: statistics.median(v) for c, v in sorted(by.items())}
    return "line", copy_gbps


def best_course(chapters, op, dtype, rows):
    """{cols: (gbps, 'chNNkernel')}: the best kernel of `chapters` for op at each cols."""
    best = {}
    for name, ch in sorted(chapters.items()):
        for r in select(ch["results"], op, dtype, rows):
            if r["gbps"] > best.get(r["cols"], (0, ""))[0]:
                best[r["cols"]] = (r["gbps"], f"{name[:4]}{r['kernel']}")
    return best


def main_op(ch, rows=None):
    """The operation a chapter is about: the one with the most results (at `rows`, if given)."""
    ops = [r["op"] for r in ch["results"] if rows is None or r["rows"] == rows]
    return max(sorted(set(ops)), key=ops.count) if ops else None
