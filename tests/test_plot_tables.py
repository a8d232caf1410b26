#!/usr/bin/env python3
"""The generated tables that judge the course against its peers, on synthetic data whose answers
are known: test_plot_tables.py ROOT

- fmt_peers marks a point at or above every peer with **>=**, one under with (below), and lists
  each point under a peer with its gap and both sides' spreads (and no such line when none is),
  and names the points of either side whose launches spread over NOISY_SPREAD (scattered);
- fmt_twins compares `production` with the forced variant of the path the dispatch chose (warp,
  tile or block_regs only), and refuses data with no such pair;
- fmt_rounds takes medians over the rounds that have both sides and counts the rounds ours was
  at or above every peer, skipping a round's file left unreadable; its caption names the round
  files' commits only, and kernel= (also a marker option) compares one kernel of files that time
  several;
- fmt_profile takes its caption from a profile's "# how" line where it has one, and shows a
  metric the profile did not collect as "-";
- fmt_balance labels each run of one kernel from the "# launches" line and refuses a profile
  without those labels or the SM cycle metrics;
- fmt_positions numbers each benchmark by its place in its process (repetitions apart, aggregates
  left out), takes medians over the rounds per (process, place), filters by match=, and refuses a
  folder where nothing matches.
Exits 77 (CTest: skipped) without matplotlib (plot.py imports it), 1 on any failure.
"""
import json
import os
import sys
import tempfile

root = sys.argv[1]
sys.path.insert(0, os.path.join(root, "scripts"))
try:
    import plot  # noqa: E402
except ImportError as e:
    print(f"SKIPPED: {e} (scripts/install-deps.sh installs matplotlib)")
    sys.exit(77)

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL: {what}")


def result(op, kernel, dtype, cols, gbps, spread, rows=49152):
    return {"op": op, "kernel": kernel, "dtype": dtype, "rows": rows, "cols": cols, "gbps": gbps,
            "pct_of_copy": 100 * gbps / 3000, "median_us": 1.0, "spread_pct": spread}


def data(results, commit="abc1234"):
    return {"context": {"git_commit": commit, "peer": "x"}, "results": results, "chapter": "ch12_test",
            "copy_gbps": 3000.0}


# fmt_peers: ours 1000 at 32 columns (peer 990: ours ahead), 2000 at 64 (peer 2020: 1% under).
ours = data([result("softmax", "production", "f32", 32, 1000, 1.5), result("softmax", "production", "f32", 64, 2000, 2.5)])
peer = data([result("softmax", "cudnn", "f32", 32, 990, 0.5), result("softmax", "cudnn", "f32", 64, 2020, 0.7)])
table = plot.fmt_peers({"ch12_test": ours}, {"cudnn": peer}, "ch12_test", "softmax", 49152, "production")
check("| 32 | 1000 **>=** | 990 |" in table, "fmt_peers: a point above its peer is marked **>=**")
check("| 64 | 2000 (below) | 2020 |" in table, "fmt_peers: a point under its peer is marked (below)")
check("f32 at 64: -1.0% against cudnn (spread 2.5% ours, 0.7% cudnn's)" in table,
      "fmt_peers: the point under a peer is listed with its gap and both spreads")
check("f32 at 32:" not in table, "fmt_peers: a point above its peer is not listed as under")
level = data([result("softmax", "cudnn", "f32", 32, 1000, 0.5), result("softmax", "cudnn", "f32", 64, 1900, 0.7)])
table = plot.fmt_peers({"ch12_test": ours}, {"cudnn": level}, "ch12_test", "softmax", 49152, "production")
check("Under a peer" not in table, "fmt_peers: no 'Under a peer' line when every point is at or above (a tie counts)")
check("The sides timed different values" not in table and "same values: not recorded" in table,
      "fmt_peers: sides that both lack input_fill are the same (not recorded)")
# fmt_peers names the values each side timed, and says so loudly when they differ.
ours["context"]["input_fill"] = "normal: every input normal(0, 1)"
level["context"]["input_fill"] = "normal: every input normal(0, 1)"
table = plot.fmt_peers({"ch12_test": ours}, {"cudnn": level}, "ch12_test", "softmax", 49152, "production")
check("Every side timed the same values: normal" in table, "fmt_peers: equal input fills are named once")
level["context"]["input_fill"] = "outliers: first input normal(0, 1), about 1 value in 61 x 20"
table = plot.fmt_peers({"ch12_test": ours}, {"cudnn": level}, "ch12_test", "softmax", 49152, "production")
check("**The sides timed different values** (`input_fill`: ours normal; cudnn outliers)" in table,
      "fmt_peers: different input fills are flagged under the table")
check(plot.input_fill({"input_fill": "first input: normal(0, 1), about 1 value in 61 x 20"}) == "outliers"
      and plot.input_fill({}) == "not recorded", "input_fill: early stamps read as outliers, none as not recorded")
check("Scattered" not in table, "fmt_peers: no 'Scattered' line when every spread is small")
# fmt_peers names the results whose launches scattered (spread over NOISY_SPREAD), on either side.
noisy_peer = data([result("softmax", "cudnn", "f32", 32, 190, 79.1), result("softmax", "cudnn", "f32", 64, 1900, 25.0)])
table = plot.fmt_peers({"ch12_test": ours}, {"cudnn": noisy_peer}, "ch12_test", "softmax", 49152, "production")
check("Scattered in this run (spread over 25%" in table and "cudnn f32 at 32 (79%)" in table
      and "at 64 (" not in table, "fmt_peers: a peer's spread over 25% is flagged, one of exactly 25% is not")
noisy_ours = data([result("softmax", "production", "f32", 32, 1000, 30.0), result("softmax", "production", "f32", 64, 2000, 2.5)])
table = plot.fmt_peers({"ch12_test": noisy_ours}, {"cudnn": level}, "ch12_test", "softmax", 49152, "production")
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
    table = plot.fmt_twins(ch, p)
    # pairs: softmax 32 (+1.0%), softmax 64 (-2.0%), softmax 128 (tile, +1.0%), log_softmax 32 (follows
    # softmax's path: 0.0%)
    check("| f32 | 4 | 1.0% | -2.0% (softmax, 49152 x 64, block_regs) |" in table,
          f"fmt_twins: four pairs, median |difference| 1.0%, largest -2.0% at the block_regs pair; got:\n{table}")
    try:
        plot.fmt_twins(data([result("softmax", "production", "f32", 4096, 3000, 1)]), p)
        check(False, "fmt_twins: data with no twin pair is refused")
    except plot.DataError:
        pass

# fmt_rounds: three rounds; ours 95 (a tie), 90, 120 against a peer at 95 (round 3's peer file cut
# short, so round 3 does not count).
with tempfile.TemporaryDirectory() as d:
    def bench(who, r, kernel, gbps):
        with open(os.path.join(d, f"{who}_r{r}.json"), "w") as f:
            json.dump({"context": {"git_commit": "abc1234def"}, "benchmarks": [
                {"name": f"softmax/{kernel}/f32/rows:49152/cols:256/iterations:25", "bytes_per_second": gbps * 1e9}]}, f)
    for r, g in ((1, 95), (2, 90), (3, 120)):
        bench("ours", r, "production", g)
    bench("peer", 1, "cudnn", 95)
    bench("peer", 2, "cudnn", 95)
    with open(os.path.join(d, "peer_r3.json"), "w") as f:
        f.write("{")
    table = plot.fmt_rounds(d, {"ours": ("peer",)})
    check("| ours | softmax/f32/rows:49152/cols:256 | 2 | 92 | peer 95 | -2.6% | 1 of 2 |" in table,
          f"fmt_rounds: two usable rounds, median 92.5 against 95, at or above in one (the tie); got:\n{table}")
    check("| ours | softmax" not in plot.fmt_rounds(d, {"ours": ("peer",)}, "cols:512"),
          "fmt_rounds: match keeps only the points containing it")
    # A side file whose name holds "_r" (an experiment's paths_regs16.json) is not a round: the
    # caption lists the rounds' commits only.
    with open(os.path.join(d, "paths_regs16.json"), "w") as f:
        json.dump({"paths": []}, f)
    table = plot.fmt_rounds(d, {"ours": ("peer",)})
    check("commits abc1234." in table, f"fmt_rounds: the caption names the rounds' commit alone; got:\n{table}")
    try:
        plot.fmt_rounds(d, {"ours": ("nobody",)})
        check(False, "fmt_rounds: a group with no common round is refused")
    except plot.DataError:
        pass

# short_kernel_name: chapter 12's tile kernels (no Load<T> among their template arguments) are
# named by their storage type and their numbers.
for full, short in (("void ch12::softmax_backward_tile_kernel<float, 4, 4, 8, 2, 256>(ch12::DirectLoad<float>, "
                     "ch12::DirectLoad<float>, ch12::DirectStore<float>, long, long, bool)",
                     "softmax_backward_tile_kernel<f32, 4, 4, 8, 2, 256>"),
                    ("void ch12::softmax_tile_kernel<__half, ch12::DirectStore<__half>, 8, 8, 4, 1, 512>("
                     "ch12::DirectLoad<__half>, ch12::DirectStore<__half>, long, long, bool)",
                     "softmax_tile_kernel<f16, 8, 8, 4, 1, 512>")):
    check(plot.short_kernel_name(full) == short, f"short_kernel_name: {short}, got {plot.short_kernel_name(full)}")

# fmt_rounds with rounds timed in parts (a process per shape: <who>_r<N>.<part>.json): each
# round is the union of its parts, and every part's points appear.
with tempfile.TemporaryDirectory() as d:
    for who, r, part, cols, gbps in (("tile", 1, "f32_24", 24, 110), ("tile", 1, "f32_48", 48, 90),
                                     ("warp", 1, "f32_24", 24, 100), ("warp", 1, "f32_48", 48, 100),
                                     ("tile", 2, "f32_24", 24, 120), ("warp", 2, "f32_24", 24, 100)):
        with open(os.path.join(d, f"{who}_r{r}.{part}.json"), "w") as f:
            json.dump({"context": {"git_commit": "abc1234"}, "benchmarks": [
                {"name": f"softmax_backward/{who}/f32/rows:49152/cols:{cols}/iterations:25",
                 "bytes_per_second": gbps * 1e9}]}, f)
    table = plot.fmt_rounds(d, {"tile": ("warp",)})
    check("| tile | softmax_backward/f32/rows:49152/cols:24 | 2 | 115 | warp 100 | +15.0% | 2 of 2 |" in table and
          "| tile | softmax_backward/f32/rows:49152/cols:48 | 1 | 90 | warp 100 | -10.0% | 0 of 1 |" in table,
          f"fmt_rounds: a round's parts are merged, each point over the rounds that have it; got:\n{table}")

# fmt_rounds with a kernel: round files that time two kernels of one point (one binary's dispatch
# beside a forced path) compare the named kernel only.
with tempfile.TemporaryDirectory() as d:
    for who, gbps in (("knob", 100), ("base", 95)):
        with open(os.path.join(d, f"{who}_r1.json"), "w") as f:
            json.dump({"context": {"git_commit": "abc1234"}, "benchmarks": [
                {"name": f"softmax/{k}/f16/rows:49152/cols:4096/iterations:25", "bytes_per_second": g * 1e9}
                for k, g in (("production", gbps), ("smem", 90))]}, f)
    table = plot.fmt_rounds(d, {"knob": ("base",)}, kernel="production")
    check("| knob | softmax/f16/rows:49152/cols:4096 | 1 | 100 | base 95 | +5.3% | 1 of 1 |" in table,
          f"fmt_rounds: kernel= keeps the production benchmarks, not the forced path's; got:\n{table}")
    text = "<!-- rounds DIR knob:base kernel=production -->\n<!-- /rounds -->"
    check(plot.ROUNDS_RE.search(text) and plot.ROUNDS_RE.search(text)["kernel"] == "production",
          "ROUNDS_RE: a marker's kernel= option is read")

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
        return plot.fmt_profile(plot.load_profile(path), "x")
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
        return plot.fmt_balance(plot.load_profile(path), "x")
    table = balance("one shot; looping")
    check("| `k<f32>` | one shot | 96 x 128 |" in table and "| 2.0 |" in table and "| 90.0 | 95.5 | 120.0 |" in table,
          f"fmt_balance: first run labelled, its cycles in thousands; got:\n{table}")
    check("| `k<f32>` | looping | 12 x 128 |" in table and "| 60.0 | 95.5 | 120.0 |" in table,
          f"fmt_balance: the second run of the same kernel kept and labelled; got:\n{table}")
    for bad in ((None, True), ("one shot; looping", False)):
        try:
            balance(*bad)
            check(False, f"fmt_balance: refused without labels or cycle metrics ({bad})")
        except plot.DataError:
            pass

# fmt_positions: a process that ran one benchmark three times (as --benchmark_repetitions does),
# with its aggregate rows, in three rounds: 120, 100, 100 / 110, 90, 95 / 130, 80, 99.
with tempfile.TemporaryDirectory() as d:
    for r, vals in ((1, (120, 100, 100)), (2, (110, 90, 95)), (3, (130, 80, 99))):
        runs = [{"name": "gelu/pack/f32/rows:1/cols:1048576/iterations:25/repeats:3/manual_time",
                 "run_type": "iteration", "bytes_per_second": v * 1e9} for v in vals]
        runs.append({"name": "gelu/pack/f32/rows:1/cols:1048576/iterations:25/repeats:3/manual_time_mean",
                     "run_type": "aggregate", "bytes_per_second": 1e12})
        with open(os.path.join(d, f"rep_r{r}.json"), "w") as f:
            json.dump({"context": {"git_commit": "abc1234def"}, "benchmarks": runs}, f)
    table = plot.fmt_positions(d)
    check("| rep | 1 | gelu/pack/f32/rows:1/cols:1048576 | 120 | 110-130 | 3 |" in table and
          "| rep | 2 | gelu/pack/f32/rows:1/cols:1048576 | 90 | 80-100 | 3 |" in table and
          "| rep | 3 | gelu/pack/f32/rows:1/cols:1048576 | 99 | 95-100 | 3 |" in table and "| rep | 4 |" not in table,
          f"fmt_positions: each repetition its own place, medians over rounds, aggregates left out; got:\n{table}")
    check("commits abc1234." in table, f"fmt_positions: the caption names the commit; got:\n{table}")
    check(plot.fmt_positions(d, "rep") == table, "fmt_positions: match= on the process keeps its rows")
    try:
        plot.fmt_positions(d, "nothing")
        check(False, "fmt_positions: a folder where nothing matches is refused")
    except plot.DataError:
        pass

if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("all plot table checks passed")
