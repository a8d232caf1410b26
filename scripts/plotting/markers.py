"""The README and lesson markers: each `<!-- KIND ARGS -->...<!-- /KIND -->` pair is rewritten
with what the data says, so that no number in the lessons is typed by hand. No matplotlib.

  <!-- results CHAPTER [GPU] -->                  the chapter's table
  <!-- profile FILE [GPU] -->                     the Nsight Compute table of FILE.ncu.csv
  <!-- sectors FILE [GPU] -->                     its memory pipeline (sectors per request, L1 to L2, DRAM)
  <!-- balance FILE [GPU] -->                     how evenly each launch kept the SMs busy
  <!-- peers CHAPTER OP ROWS [kernel=K] [GPU] --> its kernel K (or best kernel) for OP against each peer
  <!-- summary [GPU] -->                          each chapter's best at a few shapes (README)
  <!-- twins FILE [GPU] -->                       chapter 12's dispatch against the forced variant of
                                                  the path it chose (FILE: its --paths JSON)
  <!-- paths FILE [GPU] -->                       chapter 12's dispatch per shape (FILE: its --paths JSON)
  <!-- accuracy FILE [GPU] -->                    chapter 09's variance experiment
  <!-- vs_copy CHAPTER [op=OP kernel=K] [GPU] --> its best kernel (or OP's kernel K) against
                                                  cudaMemcpy of the same shape (chapter 00)
  <!-- shapes CHAPTER OP ROWS [from=C] [GPU] --> CHAPTER.shapes.json (make run's shapes sweep) for OP at
                                                  ROWS (cols C and up), each dtype: % of the copy of the
                                                  same bytes, and its GB/s over each peer's (peer_*.shapes.json)
  <!-- value CHAPTER NAME FIELD [GPU] -->         one number (VALUE_FIELDS); NAME is a benchmark name
                                                  (op/kernel/dtype/rows:R/cols:C) or '-'
  <!-- memory CHAPTER OP ROWS DTYPE [GPU] -->   the peak memory of OP (peak_alloc_bytes) at ROWS, ours and each peer
  <!-- fwd_bwd PEER FWD BWD DTYPES SHAPES [GPU] --> a layer's forward plus backward against PEER
                                                  (peer_PEER.json) and the copy of the same bytes; FWD,
                                                  BWD: CHAPTER/OP/KERNEL; DTYPES: bf16,f32; SHAPES:
                                                  16384x1024,49152x4096
  <!-- ratio CHAPTER NAME PEER [GPU] -->           how many times faster NAME is than PEER's result (peer_PEER.json)
                                                  for the same op, dtype and shape: "2.7x", their median times' ratio
FILE is relative to plots/data/<gpu>/ (a profile's without its .ncu.csv); GPU defaults to
REFERENCE_GPU. A marker that names data that does not exist raises DataError."""
import glob
import os
import re

from . import REFERENCE_GPU, DataError
from .load import data_file, load_chapter, parse_name
from .ncu import load_profile
from .peer_tables import fmt_fwd_bwd, fmt_memory, fmt_peers, fmt_twins
from .profile_tables import fmt_balance, fmt_profile, fmt_sectors
from .tables import fmt_accuracy, fmt_paths, fmt_shapes, fmt_summary, fmt_table, fmt_vs_copy

GPU = r"(?: (?P<gpu>[\w-]+))?"
MARKERS = {  # kind: the arguments of its opening marker
    "summary": GPU,
    "results": r" (?P<ch>\w+)" + GPU,
    "peers": r" (?P<ch>\w+) (?P<op>\w+) (?P<rows>\d+)(?: kernel=(?P<kernel>\w+))?" + GPU,
    "vs_copy": r" (?P<ch>\w+)(?: op=(?P<op>\w+))?(?: kernel=(?P<kernel>\w+))?" + GPU,
    "accuracy": r" (?P<file>[\w/.]+)" + GPU,
    "paths": r" (?P<file>[\w/.]+)" + GPU,
    "twins": r" (?P<file>[\w/.]+)" + GPU,
    "profile": r" (?P<file>[\w/.]+)" + GPU,
    "sectors": r" (?P<file>[\w/.]+)" + GPU,
    "balance": r" (?P<file>[\w/.]+)" + GPU,
    "shapes": r" (?P<ch>\w+) (?P<op>\w+) (?P<rows>\d+)(?: from=(?P<first>\d+))?" + GPU,
    "value": r" (?P<ch>\w+) (?P<name>\S+) (?P<field>\w+)" + GPU,
    "ratio": r" (?P<ch>\w+) (?P<name>\S+) (?P<peer>\w+)" + GPU,
    "memory": r" (?P<ch>\w+) (?P<op>\w+) (?P<rows>\d+) (?P<dtype>\w+)" + GPU,
    "fwd_bwd": r" (?P<peer>\w+) (?P<fwd>\w+/\w+/\w+) (?P<bwd>\w+/\w+/\w+) (?P<dtypes>[\w,]+) (?P<shapes>[\dx,]+)" + GPU,
}
MARKER_RE = {k: re.compile(rf"(?P<open><!-- {k}{args} -->)(?P<body>.*?)(?P<close><!-- /{k} -->)", re.S)
             for k, args in MARKERS.items()}
# Marker kinds that plot.py no longer writes (their data, plots/data/<gpu>/experiments/, left the
# repository): left as they are, with a note under --check.
RETIRED = ("rounds", "positions")

VALUE_FIELDS = {
    "gbps": lambda ch, r: f"{r['gbps']:.0f} GB/s",
    "pct_of_copy": lambda ch, r: f"{r['pct_of_copy']:.0f}%",
    "pct_of_matched_copy": lambda ch, r: f"{r['pct_of_matched_copy']:.0f}%",
    "matched_copy_gbps": lambda ch, r: f"{r['matched_copy_gbps']:.0f} GB/s",
    "median_us": lambda ch, r: f"{r['median_us']:.1f} us",
    "spread_pct": lambda ch, r: f"{r['spread_pct']:.1f}%",  # p90 - p10, % of the median
    "copy_gbps": lambda ch, r: f"{ch['copy_gbps']:.0f} GB/s",  # the process's one large copy; NAME '-'
}


def ratio(data, peers, chapter, name, peer, gpu=REFERENCE_GPU):
    """Peer time over ours for `chapter`'s result `name` and the peer's result of the same op,
    dtype, rows and cols, as "2.7x"."""
    ch = data.get(gpu, {}).get(chapter)
    key = parse_name(name)
    ours = next((r for r in ch["results"] if r["name"] == key["name"]), None) if ch else None
    if ours is None:
        raise DataError(f"ratio marker: {chapter} on {gpu} has no result named {name}")
    theirs = next((r for r in peers.get(gpu, {}).get(peer, {}).get("results", [])
                   if (r["op"], r["dtype"], r["rows"], r["cols"]) == (key["op"], key["dtype"], key["rows"], key["cols"])),
                  None)
    if theirs is None:
        raise DataError(f"ratio marker: peer_{peer}.json on {gpu} has no {key['op']} {key['dtype']} "
                        f"{key['rows']} x {key['cols']}")
    return f"{theirs['median_us'] / ours['median_us']:.1f}x"


class MissingCounter(DataError):
    """A value marker's result exists but its data has no such counter yet (the matched copy, in
    data measured before the harness timed it): rewrite_markers leaves the marker as it is."""


def value(data, chapter, name, field, gpu=REFERENCE_GPU):
    """One number of `chapter`'s result `name` (or, for copy_gbps, of the chapter's run)."""
    ch = data.get(gpu, {}).get(chapter)
    if ch is None:
        raise DataError(f"no data for {chapter} on {gpu}")
    if field not in VALUE_FIELDS:
        raise DataError(f"unknown field '{field}' (one of {', '.join(VALUE_FIELDS)})")
    if field == "copy_gbps":
        if ch["copy_gbps"] is None:
            raise DataError(f"{chapter} on {gpu} has no copy line (copy_bytes_per_second)")
        return VALUE_FIELDS[field](ch, None)
    key = parse_name(name)["name"]
    r = next((r for r in ch["results"] if r["name"] == key), None)
    if r is None:
        raise DataError(f"{chapter} on {gpu} has no result named {name}")
    source = {"pct_of_matched_copy": "pct_of_matched_copy", "matched_copy_gbps": "matched_copy_gbps",
              "pct_of_copy": "pct_of_copy"}.get(field)
    if source and r[source] is None:
        raise MissingCounter(f"{chapter} on {gpu}: {name} has no {field} (data measured before the harness timed it)")
    return VALUE_FIELDS[field](ch, r)


def check_markers(text, where):
    """DataError where a kind's opening and closing markers do not pair up (an unclosed marker is
    never rewritten again); the notes on retired kinds."""
    for kind in list(MARKERS) + list(RETIRED):
        opened = len(re.findall(rf"<!-- {kind}[ -]", text))
        closed = text.count(f"<!-- /{kind} -->")
        if opened != closed:
            raise DataError(f"{where}: {opened} '<!-- {kind}' markers, {closed} closing")
    return [f"{where}: {text.count(f'<!-- /{kind} -->')} '{kind}' markers are no longer generated (left as they are)"
            for kind in RETIRED if f"<!-- /{kind} -->" in text]


def rewrite_markers(text, data, peers=None, data_dir=None, notes=None):
    """`text` with every marker's body rewritten from `data` ({gpu: {chapter: data}}), `peers`
    ({gpu: {peer: data}}) and the files under `data_dir`/<gpu>/. A value marker whose data lacks
    its counter (MissingCounter) is left as it is, and said so in `notes` (a list)."""
    data_dir = data_dir or os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), "plots", "data")
    peers = peers or {}

    def chapters(m):
        return data.get(m["gpu"] or REFERENCE_GPU, {})

    def need(m, kind):
        ch = chapters(m).get(m["ch"])
        if ch is None:
            raise DataError(f"{kind} marker names {m['ch']} on {m['gpu'] or REFERENCE_GPU}: no such data")
        return ch

    def ncu(fmt, kind):
        def body(m):
            gpu = m["gpu"] or REFERENCE_GPU
            path = data_file(data_dir, gpu, f"{m['file']}.ncu.csv", kind, " (scripts/profile.sh makes it)")
            return fmt(load_profile(path), m["file"], gpu)
        return body

    def vs_copy(m):
        copy_name = next((n for n in sorted(chapters(m)) if n.startswith("ch00_")), None)
        if m["ch"] not in chapters(m) or copy_name is None:
            raise DataError(f"vs_copy marker needs {m['ch']} and chapter 00 on {m['gpu'] or REFERENCE_GPU}")
        return fmt_vs_copy(chapters(m)[m["ch"]], chapters(m)[copy_name], m["op"], m["kernel"])

    def peers_table(m):
        gpu = m["gpu"] or REFERENCE_GPU
        if m["ch"] not in chapters(m) or not peers.get(gpu):
            raise DataError(f"peers marker needs {m['ch']} and peer data (peer_*.json) on {gpu}")
        return fmt_peers(chapters(m), peers[gpu], m["ch"], m["op"], int(m["rows"]), m["kernel"])

    def memory(m):
        gpu = m["gpu"] or REFERENCE_GPU
        if m["ch"] not in chapters(m):
            raise DataError(f"memory marker needs {m['ch']} on {gpu}")
        return fmt_memory(chapters(m)[m["ch"]], peers.get(gpu, {}), m["op"], int(m["rows"]), m["dtype"])

    def fwd_bwd(m):
        gpu = m["gpu"] or REFERENCE_GPU
        peer = peers.get(gpu, {}).get(m["peer"])
        if peer is None:
            raise DataError(f"fwd_bwd marker needs peer_{m['peer']}.json on {gpu}")
        shapes = [tuple(int(v) for v in s.split("x")) for s in m["shapes"].split(",")]
        return fmt_fwd_bwd(chapters(m), peer, m["peer"], tuple(m["fwd"].split("/")), tuple(m["bwd"].split("/")),
                           m["dtypes"].split(","), shapes)

    def accuracy(m):
        gpu = m["gpu"] or REFERENCE_GPU
        return fmt_accuracy(data_file(data_dir, gpu, m["file"], "accuracy"), m["file"], gpu)

    def paths(m):
        gpu = m["gpu"] or REFERENCE_GPU
        return fmt_paths(data_file(data_dir, gpu, m["file"], "paths", " (ch14_softmax_backward --paths)"))

    def twins(m):
        gpu = m["gpu"] or REFERENCE_GPU
        name = os.path.basename(m["file"]).split(".")[0]
        path = data_file(data_dir, gpu, m["file"], "twins")
        if name not in data.get(gpu, {}):
            raise DataError(f"twins marker names {path}: needs {name}.json on {gpu} too")
        return fmt_twins(data[gpu][name], path)

    def summary(m):
        gpu = m["gpu"] or REFERENCE_GPU
        if gpu not in data:
            raise DataError(f"summary marker: no data for {gpu}")
        return fmt_summary(data[gpu], gpu=gpu)

    def shapes(m):
        gpu = m["gpu"] or REFERENCE_GPU
        ours = load_chapter(data_file(data_dir, gpu, f"{m['ch']}.shapes.json", "shapes",
                                      " (scripts/run-chapters.sh --sweep shapes makes it)"))
        peer_files = sorted(glob.glob(os.path.join(data_dir, gpu, "peer_*.shapes.json")))
        others = {os.path.basename(f)[len("peer_"):-len(".shapes.json")]: load_chapter(f) for f in peer_files}
        return fmt_shapes(ours, others, m["op"], int(m["rows"]), int(m["first"] or 0))

    bodies = {
        "summary": summary, "peers": peers_table, "memory": memory, "fwd_bwd": fwd_bwd, "accuracy": accuracy, "paths": paths, "twins": twins,
        "vs_copy": vs_copy, "shapes": shapes, "sectors": ncu(fmt_sectors, "sectors"),
        "balance": ncu(fmt_balance, "balance"),
        "results": lambda m: fmt_table(need(m, "results")), "profile": ncu(fmt_profile, "profile"),
    }
    def one_value(m):
        try:
            return f"{m['open']}{value(data, m['ch'], m['name'], m['field'], m['gpu'] or REFERENCE_GPU)}{m['close']}"
        except MissingCounter as e:
            if notes is not None:
                notes.append(f"value marker left as it is: {e}")
            return m.group(0)

    for kind, body in bodies.items():
        text = MARKER_RE[kind].sub(lambda m: f"{m['open']}\n{body(m)}\n{m['close']}", text)
    text = MARKER_RE["ratio"].sub(
        lambda m: f"{m['open']}{ratio(data, peers, m['ch'], m['name'], m['peer'], m['gpu'] or REFERENCE_GPU)}{m['close']}",
        text)
    return MARKER_RE["value"].sub(one_value, text)
