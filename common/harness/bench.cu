#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "harness/bench.h"
#include "harness/errors.h"
#include "harness/timing.h"

#ifndef COURSE_SOURCE_DIR
#define COURSE_SOURCE_DIR "."
#endif

namespace course {

namespace {

using timing::Arena;
using timing::EventPair;
using timing::warmup_seconds;
using timing::warmup_text;

constexpr int kIterations = 25;
constexpr int kQuickIterations = 10;

std::string run_cmd(const std::string& cmd) {
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[256];
    while (fgets(buf, sizeof buf, p)) out += buf;
    pclose(p);
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

// The 100% line: a device-to-device cudaMemcpy of a large buffer, bytes read + written.
double measure_copy_bandwidth(L2Flusher& l2, cudaStream_t s, size_t* bytes_used) {
  size_t free_b, total_b;
  CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  size_t bytes = std::min<size_t>(size_t(4) << 30, free_b / 4);  // large: averages over placement
  bytes &= ~size_t(4095);
  DeviceBuffer a(bytes), b(bytes);
  CUDA_CHECK(cudaMemsetAsync(a.get(), 1, bytes, s));
  auto copy = [&] { CUDA_CHECK(cudaMemcpyAsync(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice, s)); };
  EventPair ev;
  ev.warm_up(copy, l2, s);
  std::vector<double> t;
  for (int i = 0; i < kIterations; ++i) t.push_back(ev.time(copy, l2, s));
  *bytes_used = bytes;
  return 2.0 * double(bytes) / summarize(t).median;
}

// One tensor of a benchmark, with its `offset` elements before it.
size_t tensor_bytes(const Variant& v, Extent e, Elem elem, int64_t rows, int64_t cols, int64_t offset) {
  return size_t((extent_elems(e, rows, cols) + offset) * dtype_size(tensor_dtype(elem, v.dtype)));
}

// The arena bytes one benchmark takes: each tensor and the workspace, rounded as Arena::take does.
size_t arena_bytes(const Variant& v, int64_t rows, int64_t cols, int64_t offset) {
  const OpSpec& spec = op_spec(v.op);
  size_t total = v.workspace ? Arena::rounded(v.workspace(rows, cols, v.dtype)) : 0;
  for (const InputSpec& t : spec.inputs) total += Arena::rounded(tensor_bytes(v, t.extent, t.elem, rows, cols, offset));
  for (size_t k = 0; k < spec.outputs.size(); ++k)
    if (!(op_in_place(v.op) && k == 0))
      total += Arena::rounded(tensor_bytes(v, spec.outputs[k].extent, spec.outputs[k].elem, rows, cols, offset));
  return total;
}

// Benchmarks that failed (a launcher's error, an arena past its size): the process then exits 1.
int failed_benchmarks = 0;

// The copy of the same bytes: a cudaMemcpyAsync of half the bytes an operation moves reads and
// writes its bytes. It is the ceiling at that size (a copy of 100 MB reads a few percent less than
// one of 4 GB). Each benchmark times it in turn with its kernel, launch for launch, so that whatever
// disturbs the GPU during a benchmark disturbs both: timed once per size and reused, a single
// disturbed measurement moved the ceiling of every benchmark of that size (on the H100, 3 of about
// 60 sizes read 8-19% low). The size is rounded down to whole 4 KB: the driver's copy of a size that
// is not (LayerNorm's, with its per-row statistics) took a few microseconds more on the H100, 3.4 us
// at 6.5 MB and 37 us at 3.3 MB, a ceiling below what kernels reach. Bandwidth is counted on the
// bytes actually copied.
size_t matched_copy_bytes(double bytes_moved) {
  const size_t n = size_t(bytes_moved / 2);
  return n >= 4096 ? n / 4096 * 4096 : n;
}
size_t matched_copy_arena_bytes(double bytes_moved) { return 2 * Arena::rounded(matched_copy_bytes(bytes_moved)); }

struct Context {
  Arena* arena;
  L2Flusher* l2;
  cudaStream_t stream;
  double copy_bps;
  int iterations;
  bool outliers;  // --input-fill outliers
};

void bench_variant(benchmark::State& state, const Variant& v, int64_t rows, int64_t cols, int64_t offset,
                   Context& ctx) {
  try {
    const double bytes = double(bytes_moved(v.op, rows, cols, v.dtype));
    // Every tensor of the operation, at `offset` elements into its own buffer, each input from its
    // own seed with normal(0, 1) values (LayerNorm's gamma + 1) or, for a norm backward's saved mean
    // and rstd, computed from x on the host (fill_derived_inputs); with --input-fill outliers, x has
    // the suite's outliers (about 1 value in 61 x 20). Which values matters at a few MB per tensor,
    // and to some peers at every size (docs/harness.md, "What the inputs hold").
    // The tensors are taken from the arena (see Arena), at the same place for every benchmark.
    const OpSpec& spec = op_spec(v.op);
    const bool in_place = op_in_place(v.op);  // ReduceScale: y is x
    Arena& arena = *ctx.arena;
    arena.reserve(arena_bytes(v, rows, cols, offset) + matched_copy_arena_bytes(bytes));
    arena.reset();
    auto view = [&](Extent e, Elem elem) {
      char* p = static_cast<char*>(arena.take(tensor_bytes(v, e, elem, rows, cols, offset)));
      return static_cast<void*>(p + offset * dtype_size(tensor_dtype(elem, v.dtype)));
    };
    const size_t ws_bytes = v.workspace ? v.workspace(rows, cols, v.dtype) : 0;
    void* ws = arena.take(ws_bytes);
    Args a;
    a.rows = rows;
    a.cols = cols;
    std::vector<void*> in_ptrs;
    for (size_t k = 0; k < spec.inputs.size(); ++k) {
      const InputSpec& t = spec.inputs[k];
      void* p = view(t.extent, t.elem);
      a.*(t.slot) = p;
      in_ptrs.push_back(p);
      if (t.source != Source::fill) continue;  // derived from x, below
      FillSpec f;
      f.seed = 1 + k;
      f.outliers = k == 0 && ctx.outliers;
      if (t.extent == Extent::per_col && k == 1) f.shift = 1.0f;  // LayerNorm's gamma near 1
      if (t.elem == Elem::i32) {  // cross-entropy's targets, none ignored: the kernels skip an ignored
        f.classes = cols;         // row's logits, which the bytes model counts
        f.none_ignored = true;
      }
      if (k == 0 || t.extent == Extent::matrix)
        fill(p, tensor_dtype(t.elem, v.dtype), rows, cols, f, ctx.stream);
      else
        fill(p, tensor_dtype(t.elem, v.dtype), 1, extent_elems(t.extent, rows, cols), f, ctx.stream);
    }
    // A norm backward's saved mean and rstd: x's, as the forward saves them (the suite's too); a
    // cross-entropy backward's saved lse from x on the device (saved_lse_on_device).
    if (op_is_cross_entropy(v.op) && a.saved_lse)
      saved_lse_on_device(v.dtype, rows, cols, a.x, static_cast<const int32_t*>(a.target), a.ignore_index,
                          static_cast<float*>(const_cast<void*>(a.saved_lse)), ctx.stream);
    else
      fill_derived_inputs(v.op, v.dtype, rows, cols, a.eps, in_ptrs, ctx.stream, a.ignore_index);
    for (size_t k = 0; k < spec.outputs.size(); ++k) {
      const OutputSpec& t = spec.outputs[k];
      a.*(t.slot) = in_place && k == 0 ? const_cast<void*>(a.x) : view(t.extent, t.elem);
    }
    a.workspace = ws;
    a.workspace_bytes = ws_bytes;
    // The copy of the same bytes, in the arena after the tensors.
    const size_t copy_n = matched_copy_bytes(bytes);
    void* copy_src = arena.take(copy_n);
    void* copy_dst = arena.take(copy_n);
    if (copy_n > 0) CUDA_CHECK(cudaMemsetAsync(copy_src, 1, copy_n, ctx.stream));
    auto launch = [&] { v.launch(a, ctx.stream); };
    auto copy = [&] {
      if (copy_n > 0) CUDA_CHECK(cudaMemcpyAsync(copy_dst, copy_src, copy_n, cudaMemcpyDeviceToDevice, ctx.stream));
    };
    EventPair ev;
    ev.warm_up(launch, copy, *ctx.l2, ctx.stream);
    std::vector<double> samples, copy_samples;
    for (auto _ : state) {  // the kernel and the copy in turn, each flushed and timed alone
      samples.push_back(ev.time(launch, *ctx.l2, ctx.stream));
      state.SetIterationTime(samples.back());
      copy_samples.push_back(ev.time(copy, *ctx.l2, ctx.stream));
    }
    TimingStats t = summarize(samples);
    const double bps = bytes / t.median;
    const double matched_bps = copy_n > 0 ? 2.0 * double(copy_n) / summarize(copy_samples).median : 0.0;
    using C = benchmark::Counter;
    state.counters["bytes_per_second"] = C(bps, C::kDefaults, C::kIs1000);
    state.counters["pct_of_copy"] = C(100.0 * bps / ctx.copy_bps);
    state.counters["matched_copy_bytes_per_second"] = C(matched_bps, C::kDefaults, C::kIs1000);
    state.counters["pct_of_matched_copy"] = C(matched_bps > 0 ? 100.0 * bps / matched_bps : 0.0);
    state.counters["bytes"] = C(bytes, C::kDefaults, C::kIs1000);
    state.counters["median_us"] = C(t.median * 1e6);
    state.counters["min_us"] = C(t.min * 1e6);
    state.counters["max_us"] = C(t.max * 1e6);
    state.counters["spread_pct"] = C(100.0 * (t.p90 - t.p10) / t.median);  // p90 - p10, % of median
    // What the operation allocates beyond its inputs: its outputs (an in-place output none) and its
    // workspace. baselines/torch_peers.py reports a peer's from the allocator's peak, intermediates included.
    size_t alloc = ws_bytes;
    for (size_t k = 0; k < spec.outputs.size(); ++k)
      if (!(in_place && k == 0)) alloc += tensor_bytes(v, spec.outputs[k].extent, spec.outputs[k].elem, rows, cols, 0);
    state.counters["peak_alloc_bytes"] = C(double(alloc), C::kDefaults, C::kIs1000);
  } catch (const std::exception& e) {
    ++failed_benchmarks;
    state.SkipWithError(e.what());
  }
}

std::string human_bytes(double b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GB", b / 1e9);
  return buf;
}

}  // namespace

// The commit the numbers belong to: $COURSE_GIT_COMMIT, else git in the source tree, else
// "unknown". Anything that is not a hexadecimal hash (with an optional "-dirty") is not trusted.
static bool looks_like_commit(const std::string& c) {
  std::string h = c.size() > 6 && c.compare(c.size() - 6, 6, "-dirty") == 0 ? c.substr(0, c.size() - 6) : c;
  return h.size() >= 7 && h.size() <= 64 && h.find_first_not_of("0123456789abcdef") == std::string::npos;
}

std::string git_commit() {
  if (const char* e = std::getenv("COURSE_GIT_COMMIT"); e && *e) {
    std::string c = e;
    return looks_like_commit(c) ? c : "unknown (COURSE_GIT_COMMIT='" + c.substr(0, 40) + "' is not a commit)";
  }
  std::string dir = COURSE_SOURCE_DIR;
  std::string c = run_cmd("git -C '" + dir + "' rev-parse HEAD 2>/dev/null");
  if (!looks_like_commit(c)) return "unknown (no git repository and no COURSE_GIT_COMMIT)";
  if (!run_cmd("git -C '" + dir + "' status --porcelain --untracked-files=no 2>/dev/null").empty()) c += "-dirty";
  return c;
}

std::vector<Sweep> selected_sweeps(const Chapter& ch, const Options& opt) {
  if (opt.rows) return {Sweep{{*opt.rows}, {*opt.cols}}};
  if (opt.quick) return {quick_sweep()};
  if (!opt.shapes) return ch.sweeps();
  if (!ch.rowwise_sweeps()) throw UsageError("--sweep shapes is for the row-wise chapters; this one times flat sizes");
  return shapes_sweeps();
}

int run_benchmarks(const Chapter& ch, const Options& opt, const DeviceInfo& dev, const char* argv0) {
  warmup_seconds();  // a bad COURSE_WARMUP_MS fails here, before any timing
  cudaStream_t s;
  CUDA_CHECK(cudaStreamCreate(&s));
  static std::unique_ptr<L2Flusher> l2;  // lives until the process ends, past RunSpecifiedBenchmarks
  l2 = std::make_unique<L2Flusher>(dev.l2_bytes);
  size_t copy_bytes = 0;
  double copy_bps = measure_copy_bandwidth(*l2, s, &copy_bytes);
  static Arena arena;
  static Context ctx;
  ctx = {&arena, l2.get(), s, copy_bps, opt.quick ? kQuickIterations : kIterations, opt.outliers};
  size_t arena_size = 0;

  const std::vector<Sweep> sweeps = selected_sweeps(ch, opt);
  size_t free_b, total_b;
  CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  int registered = 0, skipped = 0;
  bool derived_inputs = false;  // a selected variant's inputs include a norm backward's saved statistics
  for (const Variant& v : ch.variants()) {
    if (!v.selected_by(opt.kernel)) continue;
    if (opt.dtype && *opt.dtype != v.dtype) continue;
    for (const InputSpec& t : op_spec(v.op).inputs) derived_inputs = derived_inputs || t.source != Source::fill;
    for (const Sweep& sw : sweeps) {
      for (int64_t rows : sw.rows) {
        for (int64_t cols : sw.cols) {
          if (v.limits.max_cols > 0 && cols > v.limits.max_cols) continue;  // the chapter narrows
          std::string name = v.name() + "/rows:" + std::to_string(rows) + "/cols:" + std::to_string(cols);
          // The tensors, the workspace and the copy of the same bytes (bytes_moved once more).
          double need = 2.0 * double(bytes_moved(v.op, rows, cols, v.dtype)) +
                        double(v.workspace ? v.workspace(rows, cols, v.dtype) : 0) + 256e6 + 64.0 * opt.offset;
          if (need > double(free_b)) {
            std::fprintf(stderr, "note: skipping %s: needs %s of GPU memory, %s free\n", name.c_str(),
                         human_bytes(need).c_str(), human_bytes(double(free_b)).c_str());
            ++skipped;
            continue;
          }
          arena_size = std::max(arena_size, arena_bytes(v, rows, cols, opt.offset) +
                                                matched_copy_arena_bytes(double(bytes_moved(v.op, rows, cols, v.dtype))));
          const Variant* vp = &v;
          const int64_t off = opt.offset;
          benchmark::RegisterBenchmark(
              name.c_str(),
              [vp, rows, cols, off](benchmark::State& st) { bench_variant(st, *vp, rows, cols, off, ctx); })
              ->UseManualTime()
              ->Iterations(ctx.iterations)
              ->Unit(benchmark::kMicrosecond);
          ++registered;
        }
      }
    }
  }
  if (registered == 0 && skipped == 0)
    throw UsageError("nothing to benchmark: no variant matches the filters" +
                     std::string(opt.rows ? " (or the shape is past every variant's limit)" : ""));
  arena.reserve(arena_size);  // once, after the copy line's buffers are freed and before any benchmark

  // Environment stamp: every JSON says where and how its numbers were taken.
  char buf[64];
  benchmark::AddCustomContext("chapter", ch.id());
  benchmark::AddCustomContext("gpu_name", dev.name);
  benchmark::AddCustomContext("gpu_slug", dev.slug);
  benchmark::AddCustomContext("gpu_uuid", dev.uuid);
  benchmark::AddCustomContext("compute_capability", std::to_string(dev.cc_major) + "." + std::to_string(dev.cc_minor));
  benchmark::AddCustomContext("sm_count", std::to_string(dev.sm_count));
  benchmark::AddCustomContext("l2_bytes", std::to_string(dev.l2_bytes));
  benchmark::AddCustomContext("memory_bytes", std::to_string(dev.total_mem));
  benchmark::AddCustomContext("sm_clock_khz", std::to_string(dev.sm_clock_khz));
  benchmark::AddCustomContext("mem_clock_khz", std::to_string(dev.mem_clock_khz));
  benchmark::AddCustomContext("mem_bus_bits", std::to_string(dev.mem_bus_bits));
  std::snprintf(buf, sizeof buf, "%d.%d", dev.driver_version / 1000, (dev.driver_version % 1000) / 10);
  benchmark::AddCustomContext("cuda_driver_version", buf);
  std::snprintf(buf, sizeof buf, "%d.%d", dev.runtime_version / 1000, (dev.runtime_version % 1000) / 10);
  benchmark::AddCustomContext("cuda_runtime_version", buf);
  benchmark::AddCustomContext("git_commit", git_commit());
  std::snprintf(buf, sizeof buf, "%.6g", copy_bps);
  benchmark::AddCustomContext("copy_bytes_per_second", buf);
  benchmark::AddCustomContext("copy_method", "cudaMemcpyAsync device-to-device of " + human_bytes(double(copy_bytes)) +
                                                 ", bytes read + written, median of " + std::to_string(kIterations));
  benchmark::AddCustomContext("matched_copy_method",
                              "cudaMemcpyAsync device-to-device of half the bytes each benchmark moves (its bytes read "
                              "+ written), rounded down to whole 4 KB, in the tensor arena after the benchmark's "
                              "tensors, timed by the same method in turn with each launch of the kernel");
  benchmark::AddCustomContext("tensor_memory", "one arena of " + human_bytes(double(arena_size)) +
                                                  ", allocated once; each benchmark's tensors from its start, "
                                                  "at 2 MB boundaries");
  benchmark::AddCustomContext("timing_method", "L2 flushed (" + std::string(l2->method()) +
                                                   " of 2x L2) before each launch, one event pair per "
                                                   "launch, " +
                                                   warmup_text() + ", median of " +
                                                   std::to_string(ctx.iterations));
  // What the timed tensors hold: at a few MB per tensor the values moved change the time (docs/harness.md,
  // "What the inputs hold"), so each result says which ones it moved.
  // A norm backward's saved mean and rstd are x's (fill_derived_inputs), whichever fill x has.
  benchmark::AddCustomContext("input_fill", std::string(opt.outliers ? "outliers: first input normal(0, 1), about 1 value in 61 x 20; "
                                                          "other inputs normal(0, 1) (LayerNorm's gamma + 1); a mask as the suite's"
                                                        : "normal: every input normal(0, 1) (LayerNorm's gamma + 1); a mask as the suite's") +
                                                (derived_inputs ? "; a norm backward's saved mean and rstd computed from x (a cross-entropy "
                                                                  "backward's saved lse on the device)"
                                                                : ""));
  benchmark::AddCustomContext("sweep", opt.rows ? "single" : opt.quick ? "quick" : opt.shapes ? "shapes" : "standard");
  benchmark::AddCustomContext("skipped_for_memory", std::to_string(skipped));
  std::printf("copy line: %.0f GB/s (cudaMemcpy device-to-device, %s)\n", copy_bps / 1e9,
              human_bytes(double(copy_bytes)).c_str());

  std::vector<std::string> args{argv0, "--benchmark_counters_tabular=true"};
  for (const auto& a : opt.benchmark_args) args.push_back(a);
  std::vector<char*> av;
  for (auto& a : args) av.push_back(a.data());
  int ac = static_cast<int>(av.size());
  benchmark::Initialize(&ac, av.data());
  if (benchmark::ReportUnrecognizedArguments(ac, av.data())) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (failed_benchmarks > 0) {
    std::fprintf(stderr, "%d benchmark(s) failed: the error_message of each in the output says why\n", failed_benchmarks);
    return 1;
  }
  return 0;
}

}  // namespace course
