#!/usr/bin/env python3
"""scripts/plotting/ on synthetic data whose answers are known: test_plot_tables.py ROOT

- parse_name, the one parser of benchmark names: the five parts, Google Benchmark's suffixes
  (/iterations:N, /repeats:N, /manual_time, /min_time:X) and aggregate rows (_mean, ...), and a
  refusal of any other name;
- the copy of the same bytes (matched_copy_bytes_per_second, pct_of_matched_copy): results and
  summary tables show its percent where every result has it, the process's copy line's where
  not, and their captions say which; a figure's panel is drawn against it per shape or against
  the line; the value marker's pct_of_matched_copy and matched_copy_gbps, and a marker whose
  data lacks the counter left as it is;
- markers: one that names data that does not exist raises (what --check fails on), unpaired
  markers raise, the retired kinds (rounds, positions) are left alone with a note;
- fmt_peers marks a point at or above every peer with **>=**, one under with (below), and lists
  each point under a peer with its gap and both sides' spreads (and no such line when none is),
  and names the points of either side whose launches spread over NOISY_SPREAD (scattered);
- fmt_twins compares `production` with the forced variant of the path the dispatch chose (warp,
  tile or block_regs only), and refuses data with no such pair;
- fmt_profile takes its caption from a profile's "# how" line where it has one, and shows a
  metric the profile did not collect as "-";
- fmt_shapes (the shapes marker) shows a shapes sweep's percent of the copy of the same bytes and
  ours over each peer's GB/s where the peer has the shape, names only the peers in the table, and
  raises where the data is missing;
- fmt_balance labels each run of one kernel from the "# launches" line and refuses a profile
  without those labels or the SM cycle metrics;
- with matplotlib: a chapter figure and the progression are drawn from synthetic data with and
  without the matched copy, and the previous-chapter table names earlier chapters only.
The tables need no matplotlib; without it the figure checks are skipped. Exits 1 on any failure.
"""
import json
import os
import sys
import tempfile

root = sys.argv[1]
sys.path.insert(0, os.path.join(root, "scripts"))
from plotting import DataError  # noqa: E402
from plotting import load, markers, ncu, peer_tables, profile_tables, tables  # noqa: E402

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL: {what}")


def raises(fn, what, error=DataError):
    try:
        fn()
    except error:
        return
    check(False, what)


def result(op, kernel, dtype, cols, gbps, spread, rows=49152):
    return {"op": op, "kernel": kernel, "dtype": dtype, "rows": rows, "cols": cols, "gbps": gbps,
            "name": f"{op}/{kernel}/{dtype}/rows:{rows}/cols:{cols}", "pct_of_copy": 100 * gbps / 3000,
            "matched_copy_gbps": None, "pct_of_matched_copy": None, "median_us": 1.0, "spread_pct": spread}


def data(results, commit="abc1234"):
    return {"context": {"git_commit": commit, "peer": "x"}, "results": results, "chapter": "ch12_test",
            "copy_gbps": 3000.0}


# parse_name: the one parser of a benchmark's name.
p = load.parse_name("softmax/warp_pack/bf16/rows:49152/cols:1024/iterations:25/manual_time")
check((p["op"], p["kernel"], p["dtype"], p["rows"], p["cols"]) == ("softmax", "warp_pack", "bf16", 49152, 1024)
      and p["name"] == "softmax/warp_pack/bf16/rows:49152/cols:1024"
      and p["options"] == {"iterations": "25", "manual_time": None} and p["aggregate"] is None,
      f"parse_name: the five parts and the suffixes; got {p}")
p = load.parse_name("layer_norm/torch/f16/rows:49152/cols:32")
check(p["name"] == "layer_norm/torch/f16/rows:49152/cols:32" and p["options"] == {},
      "parse_name: a name without suffixes (the PyTorch peer's)")
p = load.parse_name("gelu/pack/f32/rows:1/cols:1048576/iterations:25/repeats:3/manual_time_mean")
check(p["aggregate"] == "mean" and p["options"] == {"iterations": "25", "repeats": "3", "manual_time": None}
      and p["name"] == "gelu/pack/f32/rows:1/cols:1048576", f"parse_name: an aggregate row; got {p}")
check(load.parse_name("copy/memcpy/f32/rows:4/cols:8/min_time:0.5")["options"] == {"min_time": "0.5"},
      "parse_name: a suffix with a fractional value")
for bad in ("softmax/warp/f64/rows:1/cols:2", "softmax/warp/f32/cols:2/rows:1", "softmax/warp/f32/rows:1",
            "softmax/warp/f32/rows:1/cols:2x", "softmax/warp/f32/rows:1/cols:2/Iterations:3",
            "softmax/warp/f32/rows:1/cols:2_mean", "-"):
    raises(lambda: load.parse_name(bad), f"parse_name: '{bad}' is refused")


def write_chapter(d, name, benchmarks, matched=False, ctx=None):
    """A chapter JSON like the harness's: bytes_per_second, pct_of_copy against a 3000 GB/s copy
    line, and with `matched` the copy of the same bytes at (gbps of the benchmark) / 0.8."""
    rows = []
    for full, gbps in benchmarks:
        b = {"name": full, "run_type": "iteration", "bytes_per_second": gbps * 1e9, "pct_of_copy": 100 * gbps / 3000,
             "median_us": 2.0, "spread_pct": 1.0}
        if matched:
            b.update(matched_copy_bytes_per_second=gbps / 0.8 * 1e9, pct_of_matched_copy=80.0)
        rows.append(b)
    rows.append({"name": benchmarks[0][0] + "_mean", "run_type": "aggregate", "bytes_per_second": 1.0})
    context = {"copy_bytes_per_second": "3e+12", "gpu_name": "Test GPU", "git_commit": "0123456789abcdef",
               "cuda_runtime_version": "13.0", "cuda_driver_version": "13.0", "timing_method": "t"}
    if matched:
        context["matched_copy_method"] = "cudaMemcpyAsync of the same bytes"
    context.update(ctx or {})
    path = os.path.join(d, f"{name}.json")
    with open(path, "w") as f:
        json.dump({"context": context, "benchmarks": rows}, f)
    return path


SWEEP = [(f"softmax/{k}/{t}/rows:49152/cols:{c}/iterations:25/manual_time", g)
         for k, t, c, g in (("warp", "f32", 128, 2400), ("warp", "f32", 1024, 2700), ("smem", "f32", 1024, 2400),
                            ("warp", "f16", 1024, 2550), ("warp", "f32", 4096, 1500))]
with tempfile.TemporaryDirectory() as d:
    gpu_dir = os.path.join(d, "test-gpu")
    os.makedirs(gpu_dir)
    old = load.load_chapter(write_chapter(gpu_dir, "ch03_old", SWEEP))
    new = load.load_chapter(write_chapter(gpu_dir, "ch04_new", SWEEP, matched=True))
    check(len(old["results"]) == 5 and old["results"][0]["pct_of_matched_copy"] is None
          and new["results"][0]["matched_copy_gbps"] == 3000.0 and new["results"][0]["pct_of_matched_copy"] == 80.0,
          "load_chapter: iterations only (aggregates left out), the matched copy where the data has it")
    check(load.pct_field(old["results"]) == "pct_of_copy" and load.pct_field(new["results"]) == "pct_of_matched_copy"
          and load.pct_field(old["results"] + new["results"]) == "pct_of_copy",
          "pct_field: the matched percent only where every result has it")
    t_old, t_new = tables.fmt_table(old), tables.fmt_table(new)
    check("| 1024 | 2400 (80%) | 2700 (90%) | 2550 (85%) |" in t_old and "percent of the copy line, 3000 GB/s" in t_old,
          f"fmt_table without the matched copy: percent of the copy line; got:\n{t_old}")
    check("| 1024 | 2400 (80%) | 2700 (80%) | 2550 (80%) |" in t_new and
          "percent of the copy of the same bytes: cudaMemcpyAsync of the same bytes" in t_new,
          f"fmt_table with the matched copy: its percent, named in the caption; got:\n{t_new}")
    s_old = tables.fmt_summary({"ch03_old": old}, gpu="test-gpu")
    s_new = tables.fmt_summary({"ch04_new": new}, gpu="test-gpu")
    check("| ch03_old | softmax | 2400 (80%) | 2700 (90%) | 1500 (50%) |  | 2550 (85%) |  |" in s_old
          and "percent of each run's copy line" in s_old, f"fmt_summary: best kernel, copy line; got:\n{s_old}")
    check("| ch04_new | softmax | 2400 (80%) | 2700 (80%) | 1500 (80%) |  | 2550 (80%) |  |" in s_new
          and "percent of the copy of the same bytes" in s_new, f"fmt_summary: matched percent; got:\n{s_new}")
    both = tables.fmt_summary({"ch03_old": old, "ch04_new": new}, gpu="test-gpu")
    check("| ch04_new | softmax | 2400 (100%)" not in both and "| ch04_new | softmax | 2400 (80%) | 2700 (90%)" in both
          and "percent of each run's copy line" in both, "fmt_summary: one chapter without it: the copy line for all")
    kind, per_shape = load.copy_reference(load.select(new["results"], "softmax", "f32", 49152), 3000.0)
    check(kind == "matched" and per_shape == {128: 3000.0, 1024: 3187.5, 4096: 1875.0},
          f"copy_reference: the median matched copy per cols; got {kind} {per_shape}")
    check(load.copy_reference(old["results"], 3000.0) == ("line", 3000.0), "copy_reference: else the copy line")

    # value: the matched fields, and a marker whose data lacks them left as it is.
    all_data = {"test-gpu": {"ch03_old": old, "ch04_new": new}}
    v = lambda ch, name, field: markers.value(all_data, ch, name, field, "test-gpu")  # noqa: E731
    check(v("ch04_new", "softmax/warp/f32/rows:49152/cols:1024", "pct_of_matched_copy") == "80%"
          and v("ch04_new", "softmax/warp/f32/rows:49152/cols:1024", "matched_copy_gbps") == "3375 GB/s"
          and v("ch03_old", "softmax/warp/f32/rows:49152/cols:1024", "pct_of_copy") == "90%"
          and v("ch03_old", "-", "copy_gbps") == "3000 GB/s", "value: the matched and the copy-line fields")
    raises(lambda: v("ch03_old", "softmax/warp/f32/rows:49152/cols:1024", "pct_of_matched_copy"),
           "value: data without the matched copy raises MissingCounter", markers.MissingCounter)
    raises(lambda: v("ch03_old", "softmax/warp/f32/rows:49152/cols:64", "gbps"), "value: no such result")
    raises(lambda: v("ch03_old", "softmax/warp/f32/rows:49152/cols:1024", "gflops"), "value: unknown field")
    raises(lambda: v("ch09_none", "-", "copy_gbps"), "value: no such chapter")
    text = ("x <!-- value ch03_old softmax/warp/f32/rows:49152/cols:1024 pct_of_matched_copy test-gpu -->?%"
            "<!-- /value --> y <!-- value ch03_old softmax/warp/f32/rows:49152/cols:1024 gbps test-gpu -->"
            "0<!-- /value -->")
    notes = []
    out = markers.rewrite_markers(text, all_data, {}, d, notes)
    check(out == text.replace("-->0<!--", "-->2700 GB/s<!--") and len(notes) == 1,
          f"rewrite_markers: a value whose data lacks the counter is left as it is, with a note; got {out} {notes}")
    # Markers that name data that does not exist: --check fails on them.
    for bad in ("<!-- results ch07_none test-gpu -->\n<!-- /results -->",
                "<!-- value ch03_old softmax/warp/f32/rows:49152/cols:64 gbps test-gpu --><!-- /value -->",
                "<!-- profile ch03_old test-gpu -->\n<!-- /profile -->",
                "<!-- accuracy ch09_x.accuracy.json test-gpu -->\n<!-- /accuracy -->",
                "<!-- paths ch12_x.paths.json test-gpu -->\n<!-- /paths -->",
                "<!-- summary other-gpu -->\n<!-- /summary -->"):
        raises(lambda: markers.rewrite_markers(bad, all_data, {}, d),
               f"rewrite_markers: {bad.split(' -->')[0]} -> raises")
    raises(lambda: markers.check_markers("<!-- results ch03_old -->\n", "x.md"), "check_markers: unpaired marker")
    check(markers.check_markers("<!-- rounds D a:b -->\nold\n<!-- /rounds -->", "x.md")
          == ["x.md: 1 'rounds' markers are no longer generated (left as they are)"],
          "check_markers: a retired kind is noted")
    check(markers.rewrite_markers("<!-- rounds D a:b -->\nold\n<!-- /rounds -->", all_data, {}, d)
          == "<!-- rounds D a:b -->\nold\n<!-- /rounds -->", "rewrite_markers: a retired kind is left alone")
    # accuracy: FILE relative to plots/data/<gpu>/, named so in the caption.
    with open(os.path.join(gpu_dir, "ch09_x.accuracy.json"), "w") as f:
        json.dump({"context": {"rows": 4, "cols": 8, "gpu_name": "Test GPU", "git_commit": "0123456789"},
                   "results": [{"offset": 0, "method": "welford", "max_rel_err": 2e-7, "median_rel_err": 4e-8,
                                "nonpositive_rows": 0}]}, f)
    out = markers.rewrite_markers("<!-- accuracy ch09_x.accuracy.json test-gpu -->\n<!-- /accuracy -->",
                                  all_data, {}, d)
    check("| 0 | 2e-07 / 4e-08 |" in out and "Data (its `context`: commit and GPU): `plots/data/test-gpu/ch09_x.accuracy.json`." in out,
          f"accuracy marker: its file under plots/data/<gpu>/; got:\n{out}")
    check(sorted(load.load_all(d)["test-gpu"]) == ["ch03_old", "ch04_new"],
          "load_all: chapter JSON only, side files (<chapter>.<what>.json) left out")

# fmt_peers: ours 1000 at 32 columns (peer 990: ours ahead), 2000 at 64 (peer 2020: 1% under).
ours = data([result("softmax", "production", "f32", 32, 1000, 1.5),
             result("softmax", "production", "f32", 64, 2000, 2.5)])
peer = data([result("softmax", "cudnn", "f32", 32, 990, 0.5), result("softmax", "cudnn", "f32", 64, 2020, 0.7)])
table = peer_tables.fmt_peers({"ch12_test": ours}, {"cudnn": peer}, "ch12_test", "softmax", 49152, "production")
check("| 32 | 1000 **>=** | 990 |" in table, "fmt_peers: a point above its peer is marked **>=**")
check("| 64 | 2000 (below) | 2020 |" in table, "fmt_peers: a point under its peer is marked (below)")
check("f32 at 64: -1.0% against cudnn (spread 2.5% ours, 0.7% cudnn's)" in table,
      "fmt_peers: the point under a peer is listed with its gap and both spreads")
check("f32 at 32:" not in table, "fmt_peers: a point above its peer is not listed as under")
check("different runs" not in table, "fmt_peers: sides of one run (same commit and board) are not called different")
other = data([result("softmax", "cudnn", "f32", 32, 990, 0.5)], commit="def5678")
table = peer_tables.fmt_peers({"ch12_test": ours}, {"cudnn": other}, "ch12_test", "softmax", 49152, "production")
check("Ours and cudnn come from different runs" in table, "fmt_peers: sides of different commits are said to be")
level = data([result("softmax", "cudnn", "f32", 32, 1000, 0.5), result("softmax", "cudnn", "f32", 64, 1900, 0.7)])
table = peer_tables.fmt_peers({"ch12_test": ours}, {"cudnn": level}, "ch12_test", "softmax", 49152, "production")
check("Under a peer" not in table, "fmt_peers: no 'Under a peer' line when every point is at or above (a tie counts)")
check("The sides timed different values" not in table and "same values: not recorded" in table,
      "fmt_peers: sides that both lack input_fill are the same (not recorded)")
# fmt_peers names the values each side timed, and says so loudly when they differ.
ours["context"]["input_fill"] = "normal: every input normal(0, 1)"
level["context"]["input_fill"] = "normal: every input normal(0, 1)"
table = peer_tables.fmt_peers({"ch12_test": ours}, {"cudnn": level}, "ch12_test", "softmax", 49152, "production")
check("Every side timed the same values: normal" in table, "fmt_peers: equal input fills are named once")
level["context"]["input_fill"] = "outliers: first input normal(0, 1), about 1 value in 61 x 20"
table = peer_tables.fmt_peers({"ch12_test": ours}, {"cudnn": level}, "ch12_test", "softmax", 49152, "production")
check("**The sides timed different values** (`input_fill`: ours normal; cudnn outliers)" in table,
      "fmt_peers: different input fills are flagged under the table")
check(peer_tables.input_fill({"input_fill": "first input: normal(0, 1), about 1 value in 61 x 20"}) == "outliers"
      and peer_tables.input_fill({}) == "not recorded",
      "input_fill: early stamps read as outliers, none as not recorded")
check("Scattered" not in table, "fmt_peers: no 'Scattered' line when every spread is small")
# fmt_peers names the results whose launches scattered (spread over NOISY_SPREAD), on either side.
noisy_peer = data([result("softmax", "cudnn", "f32", 32, 190, 79.1), result("softmax", "cudnn", "f32", 64, 1900, 25.0)])
table = peer_tables.fmt_peers({"ch12_test": ours}, {"cudnn": noisy_peer}, "ch12_test", "softmax", 49152, "production")
check("Scattered in this run (spread over 25%" in table and "cudnn f32 at 32 (79%)" in table
      and "at 64 (" not in table, "fmt_peers: a peer's spread over 25% is flagged, one of exactly 25% is not")
noisy_ours = data([result("softmax", "production", "f32", 32, 1000, 30.0),
                   result("softmax", "production", "f32", 64, 2000, 2.5)])
table = peer_tables.fmt_peers({"ch12_test": noisy_ours}, {"cudnn": level}, "ch12_test", "softmax", 49152, "production")
check("ours f32 at 32 (30%)" in table and "cudnn f32" not in table, "fmt_peers: our own disturbed point is flagged too")

# fmt_twins: production against the forced path the dispatch chose.
paths = {"paths": [{"op": "softmax", "dtype": "f32", "rows": 49152, "cols": 32, "path": "warp"},
                   {"op": "softmax", "dtype": "f32", "rows": 49152, "cols": 64, "path": "block_regs"},
                   {"op": "softmax", "dtype": "f32", "rows": 49152, "cols": 128, "path": "tile"},
                   {"op": "softmax", "dtype": "f32", "rows": 49152, "cols": 4096, "path": "smem"}]}
ch = data([result("softmax", "production", "f32", 32, 1000, 1), result("softmax", "warp", "f32", 32, 1010, 1),
           result("softmax", "production", "f32", 64, 2000, 1), result("softmax", "block_regs", "f32", 64, 1960, 1),
           result("softmax", "warp", "f32", 64, 1000, 1),  # not the chosen path: no pair
           result("softmax", "production", "f32", 128, 1000, 1), result("softmax", "tile", "f32", 128, 1010, 1),
           result("softmax", "production", "f32", 4096, 3000, 1), result("softmax", "smem", "f32", 4096, 2000, 1),
           result("log_softmax", "production", "f32", 32, 1000, 1), result("log_softmax", "warp", "f32", 32, 1000, 1)])
with tempfile.TemporaryDirectory() as d:
    p = os.path.join(d, "paths.json")
    with open(p, "w") as f:
        json.dump(paths, f)
    table = peer_tables.fmt_twins(ch, p)
    # pairs: softmax 32 (+1.0%), softmax 64 (-2.0%), softmax 128 (tile, +1.0%), log_softmax 32 (follows
    # softmax's path: 0.0%)
    check("| f32 | 4 | 1.0% | -2.0% (softmax, 49152 x 64, block_regs) |" in table,
          f"fmt_twins: four pairs, median |difference| 1.0%, largest -2.0% at the block_regs pair; got:\n{table}")
    try:
        peer_tables.fmt_twins(data([result("softmax", "production", "f32", 4096, 3000, 1)]), p)
        check(False, "fmt_twins: data with no twin pair is refused")
    except DataError:
        pass

# short_kernel_name: chapter 12's tile kernels (no Load<T> among their template arguments) are
# named by their storage type and their numbers.
for full, short in (("void ch12::softmax_backward_tile_kernel<float, 4, 4, 8, 2, 256>(ch12::DirectLoad<float>, "
                     "ch12::DirectLoad<float>, ch12::DirectStore<float>, long, long, bool)",
                     "softmax_backward_tile_kernel<f32, 4, 4, 8, 2, 256>"),
                    ("void ch12::softmax_tile_kernel<__half, ch12::DirectStore<__half>, 8, 8, 4, 1, 512>("
                     "ch12::DirectLoad<__half>, ch12::DirectStore<__half>, long, long, bool)",
                     "softmax_tile_kernel<f16, 8, 8, 4, 1, 512>")):
    check(ncu.short_kernel_name(full) == short, f"short_kernel_name: {short}, got {ncu.short_kernel_name(full)}")

# fmt_profile: a profile's own "# how" line replaces the caption's default, and a metric the
# profile did not collect (here the bank conflicts) shows as "-", not as nan or 0.
with tempfile.TemporaryDirectory() as d:
    head = ["ID", "Kernel Name", "gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum",
            "launch__grid_size", "launch__block_size", "smsp__inst_executed.sum"]
    def profile(how):
        path = os.path.join(d, "p.ncu.csv")
        with open(path, "w") as f:
            f.write("# shape: rows=4 cols=8\n" + (f"# how: {how}\n" if how else ""))
            f.write(",".join(f'"{h}"' for h in head) + "\n" + ",".join('""' for _ in head) + "\n")
            f.write('"0","void k<float>(float *)","1,000","2,000,000","1,000,000","12","128","64"\n')
        return profile_tables.fmt_profile(ncu.load_profile(path), "x")
    table = profile("ncu on a peer, clocks not locked")
    check("Nsight Compute (ncu on a peer, clocks not locked), 4 x 8" in table,
          f"fmt_profile: the file's how line names how it ran; got:\n{table}")
    check("| `k<f32>` | 12 x 128 | 1.0 | 2.0 | 1.0 |" in table and table.splitlines()[2].endswith("| - |"),
          f"fmt_profile: kernel row, with '-' for the conflicts not collected; got:\n{table}")
    check("Nsight Compute (`scripts/profile.sh`, clocks not locked)" in profile(None),
          "fmt_profile: without a how line the caption names scripts/profile.sh")

# fmt_balance: one kernel run two ways, each run under its own header; the "# launches" line
# labels them in order, and the SM cycles come out in thousands. Without those metrics or
# labels the table is refused rather than drawn with holes.
with tempfile.TemporaryDirectory() as d:
    head = ["ID", "Kernel Name", "gpu__time_duration.sum", "launch__grid_size", "launch__block_size",
            "sm__cycles_active.min", "sm__cycles_active.avg", "sm__cycles_active.max"]
    def balance(labels, cycles=True):
        path = os.path.join(d, "b.ncu.csv")
        with open(path, "w") as f:
            f.write("# shape: rows=4 cols=8\n" + (f"# launches: {labels}\n" if labels else ""))
            for grid, lo in (("96", "90,000"), ("12", "60,000")):
                f.write(",".join(f'"{h}"' for h in head) + "\n" + ",".join('""' for _ in head) + "\n")
                f.write(f'"0","void k<float>(float *)","2,000","{grid}","128",'
                        + (f'"{lo}","95,500","120,000"' if cycles else '"","",""') + "\n")
        return profile_tables.fmt_balance(ncu.load_profile(path), "x")
    table = balance("one shot; looping")
    check("| `k<f32>` | one shot | 96 x 128 |" in table and "| 2.0 |" in table and "| 90.0 | 95.5 | 120.0 |" in table,
          f"fmt_balance: first run labelled, its cycles in thousands; got:\n{table}")
    check("| `k<f32>` | looping | 12 x 128 |" in table and "| 60.0 | 95.5 | 120.0 |" in table,
          f"fmt_balance: the second run of the same kernel kept and labelled; got:\n{table}")
    for bad in ((None, True), ("one shot; looping", False)):
        try:
            balance(*bad)
            check(False, f"fmt_balance: refused without labels or cycle metrics ({bad})")
        except DataError:
            pass

# Figures (matplotlib): a chapter drawn against the previous chapter and the copy of the same
# bytes (or the copy line), and the progression; the previous-chapter table names earlier chapters.
try:
    from plotting import figures, style
except ImportError as e:
    print(f"figure checks skipped: {e} (scripts/install-deps.sh plots installs matplotlib)")
else:
    check(all(all(p < n for p in prev) for n, prev in style.PREVIOUS.items()),
          "PREVIOUS: each chapter is compared with earlier chapters only")
    check(not style.PEER_CHAPTERS & set(style.PREVIOUS) - {12, 13}, "chapters 09 and 11 are compared with the peers")
    with tempfile.TemporaryDirectory() as d:
        gpu_dir = os.path.join(d, "test-gpu")
        os.makedirs(gpu_dir)
        chapters = {"ch03_warp": load.load_chapter(write_chapter(gpu_dir, "ch03_warp", SWEEP)),
                    "ch04_pack": load.load_chapter(write_chapter(gpu_dir, "ch04_pack", SWEEP, matched=True))}
        check(figures.previous_label(chapters, style.PREVIOUS[4], "softmax", "f32", 49152)[0]
              == "ch03 best kernel at each shape (the previous step)", "previous_label: the earlier chapter's best")
        check(figures.panel_rows(chapters["ch04_pack"]) == [("softmax", 49152)], "panel_rows: the main op first")
        for ch in chapters.values():
            figures.chapter_figure(ch, "Test GPU", os.path.join(d, "out"), chapters, {})
        figures.progression_figure(chapters, "Test GPU", os.path.join(d, "out"))
        made = sorted(os.listdir(os.path.join(d, "out")))
        check(made == ["ch03_warp.png", "ch03_warp.svg", "ch04_pack.png", "ch04_pack.svg", "progression.png",
                       "progression.svg"], f"figures: every chapter and the progression, png and svg; got {made}")

# fmt_shapes and the shapes marker: make run's shapes sweep (<chapter>.shapes.json) against each
# peer's (peer_<name>.shapes.json): the percent of the copy of the same bytes, and ours over the
# peer's GB/s where the peer has the shape; a blank where it does not.
with tempfile.TemporaryDirectory() as d:
    gpu_dir = os.path.join(d, "test-gpu")
    os.makedirs(gpu_dir)
    shaped = [(f"softmax/production/{t}/rows:49152/cols:{c}/iterations:25/manual_time", g)
              for t, c, g in (("f32", 1025, 2400), ("f32", 4097, 2000), ("f16", 1025, 2800))]
    os.rename(write_chapter(gpu_dir, "ch12_x", shaped, matched=True), os.path.join(gpu_dir, "ch12_x.shapes.json"))
    theirs = [("softmax/cudnn/f32/rows:49152/cols:1025/iterations:25/manual_time", 1200)]
    os.rename(write_chapter(gpu_dir, "peer_cudnn", theirs, matched=True),
              os.path.join(gpu_dir, "peer_cudnn.shapes.json"))
    text = markers.rewrite_markers("<!-- shapes ch12_x softmax 49152 test-gpu -->\n<!-- /shapes -->", {}, {}, d)
    check("| 1025 | 80% (2.00x cudnn) | 80% |" in text and "| 4097 | 80% |  |" in text
          and "ch12_x.shapes.json" in text and "peer_cudnn.shapes.json" in text,
          f"shapes marker: percent of the matched copy, ours over cuDNN where it has the shape; got {text}")
    other = [("layer_norm/torch/f32/rows:49152/cols:1025/iterations:25/manual_time", 900)]  # another op only
    os.rename(write_chapter(gpu_dir, "peer_torch", other, matched=True), os.path.join(gpu_dir, "peer_torch.shapes.json"))
    text = markers.rewrite_markers("<!-- shapes ch12_x softmax 49152 test-gpu -->\n<!-- /shapes -->", {}, {}, d)
    check("peer_torch.shapes.json" not in text and "cudnn: cuDNN" in text,
          f"shapes marker: the caption names the peers in the table only; got {text}")
    text = markers.rewrite_markers("<!-- shapes ch12_x softmax 49152 from=2000 test-gpu -->\n<!-- /shapes -->",
                                   {}, {}, d)
    check("| 4097 |" in text and "| 1025 |" not in text, f"shapes marker: from=C leaves out narrower cols; got {text}")
    raises(lambda: markers.rewrite_markers("<!-- shapes ch12_x softmax 128 test-gpu -->\n<!-- /shapes -->",
                                           {}, {}, d), "shapes marker: no results at those rows raises")
    raises(lambda: markers.rewrite_markers("<!-- shapes ch13_y softmax 49152 test-gpu -->\n<!-- /shapes -->",
                                           {}, {}, d), "shapes marker: no such file raises")

# fmt_memory and the memory marker: peak_alloc_bytes of ours and each peer that has it, in MB,
# beside one rows x cols tensor of the dtype; a chapter without the counter raises.
with tempfile.TemporaryDirectory() as d:
    gpu_dir = os.path.join(d, "test-gpu")
    os.makedirs(gpu_dir)

    def with_peak(path, peak):
        with open(path) as f:
            doc = json.load(f)
        for b in doc["benchmarks"]:
            if b["run_type"] == "iteration":
                b["peak_alloc_bytes"] = peak
        with open(path, "w") as f:
            json.dump(doc, f)
        return load.load_chapter(path)

    ours = with_peak(write_chapter(gpu_dir, "ch16_x", [
        ("cross_entropy_fused/rows/bf16/rows:1000/cols:500/iterations:25/manual_time", 2000)], matched=True), 1004000)
    torch = with_peak(write_chapter(gpu_dir, "peer_torch", [
        ("cross_entropy_fused/torch/bf16/rows:1000/cols:500/iterations:25/manual_time", 600)], matched=True), 3000000)
    text = markers.rewrite_markers("<!-- memory ch16_x cross_entropy_fused 1000 bf16 test-gpu -->\n<!-- /memory -->",
                                   {"test-gpu": {"ch16_x": ours}}, {"test-gpu": {"torch": torch}}, d)
    check("| 500 | 1 | 1 | 3 |" in text and "peer_torch.json" in text,
          f"memory marker: MB of one tensor, ours and the peer's peak; got {text}")
    plain = load.load_chapter(write_chapter(gpu_dir, "ch16_y", [
        ("cross_entropy_fused/rows/bf16/rows:1000/cols:500/iterations:25/manual_time", 2000)], matched=True))
    raises(lambda: markers.rewrite_markers("<!-- memory ch16_y cross_entropy_fused 1000 bf16 test-gpu -->\n<!-- /memory -->",
                                           {"test-gpu": {"ch16_y": plain}}, {}, d),
           "memory marker: data without peak_alloc_bytes raises")

# fmt_fwd_bwd and the fwd_bwd marker: forward plus backward, ours (two chapters) against a peer, and
# the copy of the same bytes (bytes over each result's matched copy); a missing shape raises; a
# disturbed result (spread over NOISY_SPREAD) is named.
with tempfile.TemporaryDirectory() as d:
    gpu_dir = os.path.join(d, "test-gpu")
    os.makedirs(gpu_dir)

    def with_fields(path, **fields):
        with open(path) as f:
            doc = json.load(f)
        for b in doc["benchmarks"]:
            if b["run_type"] == "iteration":
                b.update(fields)
        with open(path, "w") as f:
            json.dump(doc, f)
        return load.load_chapter(path)

    fwd = load.load_chapter(write_chapter(gpu_dir, "ch09_x", [
        ("layer_norm/dispatch/bf16/rows:1000/cols:500/iterations:25/manual_time", 2000)], matched=True))
    bwd = with_fields(write_chapter(gpu_dir, "ch15_x", [
        ("layer_norm_backward/partials/bf16/rows:1000/cols:500/iterations:25/manual_time", 2000)], matched=True),
        spread_pct=40.0)
    torch = with_fields(write_chapter(gpu_dir, "peer_torch", [
        ("layer_norm/torch/bf16/rows:1000/cols:500/iterations:25/manual_time", 600),
        ("layer_norm_backward/torch/bf16/rows:1000/cols:500/iterations:25/manual_time", 600)]), median_us=6.0)
    marker = ("<!-- fwd_bwd torch ch09_x/layer_norm/dispatch ch15_x/layer_norm_backward/partials bf16 {} test-gpu -->"
              "\n<!-- /fwd_bwd -->")
    text = markers.rewrite_markers(marker.format("1000x500"), {"test-gpu": {"ch09_x": fwd, "ch15_x": bwd}},
                                   {"test-gpu": {"torch": torch}}, d)
    check("| 1000 x 500 | bf16 | 4.0 | 12.0 | 3.00x | 3.2 | 3.75x |" in text,
          f"fwd_bwd marker: 2 + 2 us against 6 + 6, copies at 0.8 of each time; got {text}")
    check("ours layer_norm_backward bf16 at 1000 x 500 (40%)" in text, f"fwd_bwd marker names a disturbed result; got {text}")
    raises(lambda: markers.rewrite_markers(marker.format("1000x501"), {"test-gpu": {"ch09_x": fwd, "ch15_x": bwd}},
                                           {"test-gpu": {"torch": torch}}, d), "fwd_bwd marker: a missing shape raises")

if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("all plot table checks passed")
