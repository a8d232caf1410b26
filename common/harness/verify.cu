// The correctness suite: its cases (suite_cases) and the run over a chapter's variants. One case
// is run by verify_case.cu.
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "harness/errors.h"
#include "harness/parallel.h"
#include "harness/verify.h"
#include "harness/verify_case.h"

namespace course {

using detail::Outcome;
using detail::case_name;
using detail::expect_refusal;
using detail::fits;
using detail::kNaNPoison;
using detail::run_case;

std::vector<Case> suite_cases(const Variant& v, bool quick, bool large) {
  std::vector<Case> cs;
  auto add = [&](int64_t r, int64_t c, std::string why, uint64_t seed = 1, int64_t off = 0, FillSpec f = {}) {
    if (fits(v, c)) cs.push_back({r, c, seed, off, f, std::move(why)});
  };
  if (large) {
    // More than 2^31 elements in one tensor: 64-bit offsets or bust.
    // Rows of 4096 and 131072 columns, or the kernel's longest row where it takes less.
    std::vector<int64_t> widths{4096, int64_t(1) << 17};
    if (v.limits.max_cols > 0 && v.limits.max_cols < 4096) widths = {v.limits.max_cols};
    for (int64_t c : widths) {
      if (!fits(v, c)) continue;
      add((int64_t(1) << 31) / c + 3, c, "more than 2^31 elements");
    }
    return cs;
  }
  const std::pair<int64_t, int64_t> shapes[] = {{1, 1},     {1, 2},    {2, 1},    {7, 1},     {1, 31},    {3, 33},
                                                {8, 8},     {64, 3},   {5, 127},  {13, 513},  {17, 1000}, {33, 1024},
                                                {31, 1025}, {9, 2051}, {3, 4099}, {2, 12289}, {4, 32768}};
  for (auto [r, c] : shapes)
    if (!quick || r * c <= 20000) add(r, c, "irregular shape");
  if (!quick) {
    for (uint64_t seed : {1, 2, 3}) add(1823, 781, "odd rows, prime-ish cols", seed);
    add(3, 300007, "long rows");
    add(2, 1048583, "long rows");
    add(1, 50257, "a vocabulary row (GPT-2's, odd)");  // sampling: one row of a vocabulary
    add(1, 151936, "a vocabulary row");
  }
  FillSpec special;
  special.specials = true;
  add(40, 37, "special values: -inf/+inf/NaN/masked/constant/shifted rows", 7, 0, special);
  add(24, 1024, "special values", 8, 0, special);
  if (!quick) add(16, 4099, "special values", 9, 0, special);
  // The norms of issue #42 (RMSNorm, the norms' backward): rows of a large mean, x = 1e4 + N(0, 1),
  // and constant rows (zero variance), without special values so that the column sums over every
  // row stay finite; and many rows of 64 columns, long column sums, past 2^24 elements in the
  // full suite (dx sampled, the column sums over every row read back a chunk at a time).
  if (v.op == Op::rms_norm || v.op == Op::rms_norm_backward || v.op == Op::layer_norm_backward) {
    FillSpec norm;
    norm.norm_rows = true;
    add(32, 1000, "norm rows: mean 1e4 + N(0, 1), constant (zero variance)", 11, 0, norm);
    add(17, 4099, "norm rows, misaligned view", 12, 3, norm);
    if (!quick) {
      add(100003, 64, "column sums over 100003 rows", 13, 0, norm);
      add(300007, 64, "column sums past 2^24 elements", 14);
    }
  }
  // Cross-entropy (#41): about 1 row in 16 ignored in every case (the targets' fill); here the
  // scalars and reductions, label smoothing and z-loss, every row ignored (the mean: NaN), and x's
  // special rows with row r % 8 == 4 -inf everywhere but its target (loss exactly 0).
  if (op_is_cross_entropy(v.op)) {
    auto add_ce = [&](int64_t r, int64_t c, std::string why, uint64_t seed, FillSpec f, float e, float z, Reduction red) {
      if (!fits(v, c)) return;
      Case k{r, c, seed, 0, f, std::move(why)};
      k.label_smoothing = e;
      k.z_loss = z;
      k.reduction = red;
      cs.push_back(k);
    };
    for (Reduction red : {Reduction::none, Reduction::mean, Reduction::sum})
      add_ce(37, 1000, std::string("cross-entropy, reduction ") + reduction_name(red), 21, {}, 0, 0, red);
    add_ce(37, 4099, "cross-entropy, label smoothing 0.1", 22, {}, 0.1f, 0, Reduction::mean);
    add_ce(37, 4099, "cross-entropy, z-loss 1e-4", 23, {}, 0, 1e-4f, Reduction::mean);
    add_ce(37, 4099, "cross-entropy, label smoothing 0.1 and z-loss 1e-4, sum", 24, {}, 0.1f, 1e-4f, Reduction::sum);
    FillSpec none;
    none.all_ignored = true;
    add_ce(16, 1000, "cross-entropy, every row ignored (mean of nothing: NaN)", 25, none, 0, 0, Reduction::mean);
    add_ce(16, 1000, "cross-entropy, every row ignored, sum", 25, none, 0, 0, Reduction::sum);
    FillSpec ce_special;
    ce_special.specials = true;
    ce_special.ce_rows = true;
    add_ce(40, 1000, "cross-entropy special rows: -inf but the target, all -inf, +inf, NaN", 26, ce_special, 0, 0,
           Reduction::none);
    if (!quick) {
      add_ce(4, int64_t(1) << 18, "cross-entropy, V = 262144", 27, {}, 0, 0, Reduction::mean);
      add_ce(64, 128256, "cross-entropy, Llama 3's vocabulary", 28, {}, 0, 0, Reduction::mean);
    }
  }
  FillSpec shifted;
  shifted.shift = 200.0f;  // exp(200) overflows fp32: the max must be subtracted first
  add(16, 1000, "common offset +200 (shift invariance)", 4, 0, shifted);
  for (int64_t off : {1, 2, 3}) add(37, 1000, "misaligned view", 5, off);
  // An odd width at every element offset of a 16-byte pack: each row starts at another offset
  // from the pack boundary, and the view itself at 0 to 7 elements past one (the peel's cases).
  for (int64_t off = 0; off < 8; ++off) add(19, 3001, "odd width, view offset " + std::to_string(off), 10, off);
  add(5, 4099, "misaligned view", 6, 5);
  add(11, 64, "misaligned view", 6, 1);
  // Each dispatch threshold at -1, 0, +1, and at -8, +8 (multiples of every pack width when t is,
  // so that vectorized paths are exercised on both sides of the boundary too).
  for (int64_t t : v.limits.thresholds)
    for (int64_t d : {-8, -1, 0, 1, 8})
      if (t + d >= 1)
        add(33, t + d,
            "dispatch threshold " + std::to_string(t) +
                (d == 0 ? "" : (d < 0 ? " - " : " + ") + std::to_string(d < 0 ? -d : d)));
  for (auto [r, c] : v.limits.shapes) add(r, c, "dispatch boundary (rows x cols)");
  if (!quick)
    for (auto [r, c] : v.limits.full_shapes) add(r, c, "dispatch boundary (rows x cols)");
  if (v.limits.max_cols > 0) {
    add(3, v.limits.max_cols - 1, "largest cols - 1");
    add(3, v.limits.max_cols, "largest cols");
  }
  return cs;
}

int run_verification(const Chapter& ch, const Options& opt, const DeviceInfo& dev) {
#ifdef M_MMAP_THRESHOLD
  // A case of 2^24 elements allocates and frees about a gigabyte of host buffers (raw bytes and
  // doubles of every input, output and reference). glibc maps each block past 32 MB afresh and
  // unmaps it on free, so every such case paid the kernel's page faults on all of it again, more
  // than its float64 work on 16 threads. Kept in the heap instead, the next case reuses the pages.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, -1);
#endif
  host_threads();  // a bad COURSE_HOST_THREADS is refused here, before any case runs
  cudaStream_t s;
  CUDA_CHECK(cudaStreamCreate(&s));
  int passed = 0, failed = 0, skipped = 0;
  auto report = [&](const std::string& name, const std::string& why, const Outcome& o) {
    const char* tag = o.kind == Outcome::pass ? "[  OK  ]" : o.kind == Outcome::fail ? "[ FAIL ]" : "[ SKIP ]";
    std::printf("%s %s%s%s: %s\n", tag, name.c_str(), why.empty() ? "" : " - ", why.c_str(), o.detail.c_str());
    std::fflush(stdout);
    (o.kind == Outcome::pass ? passed : o.kind == Outcome::fail ? failed : skipped)++;
  };
  std::printf("%s on %s (%d SMs, sm_%d%d)\n", ch.id().c_str(), dev.name.c_str(), dev.sm_count, dev.cc_major,
              dev.cc_minor);
  // The suite's wall time and its slowest cases, printed at the end: what to look at first when it
  // is too slow to run often.
  using Clock = std::chrono::steady_clock;
  auto seconds_since = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
  const Clock::time_point suite_start = Clock::now();
  std::vector<std::pair<double, std::string>> slowest;  // longest first, at most 5
  auto note_time = [&](double sec, const std::string& name) {
    slowest.emplace_back(sec, name);
    std::sort(slowest.begin(), slowest.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    if (slowest.size() > 5) slowest.pop_back();
  };
  int selected = 0;
  for (const Variant& v : ch.variants()) {
    if (!v.selected_by(opt.kernel)) continue;
    if (opt.dtype && *opt.dtype != v.dtype) continue;
    ++selected;
    if (opt.single_case()) {
      Case c{*opt.rows, *opt.cols, opt.seed, opt.offset, {}, "requested case"};
      std::string name = case_name(v, c);
      if (c.rows == 0) {
        report(name, "rows = 0", {Outcome::pass, "nothing to do"});
        continue;
      }
      if (!fits(v, c.cols)) {
        Args a;
        a.rows = c.rows;
        a.cols = c.cols;
        DeviceBuffer xb(16), yb(16);
        a.x = xb.get();
        a.y = yb.get();
        report(name, "past the kernel's limit (" + v.limits.text + ")", expect_refusal(v, a, s));
        continue;
      }
      report(name, c.why, run_case(v, c, s, opt.save_dir));
      continue;
    }
    for (const Case& c : suite_cases(v, opt.quick, opt.large)) {
      if (opt.max_cols && c.cols > *opt.max_cols) {  // racecheck's runs: see scripts/sanitize.sh
        report(case_name(v, c), c.why, {Outcome::skip, "not run: wider than --max-cols " + std::to_string(*opt.max_cols)});
        continue;
      }
      Outcome o;
      const Clock::time_point case_start = Clock::now();
      try {
        o = run_case(v, c, s, "");
      } catch (const CudaError& e) {
        report(case_name(v, c), c.why, {Outcome::fail, e.what()});
        std::printf("A CUDA error leaves the context unusable: stopping here.\n");
        std::printf("%s: %d passed, %d failed, %d skipped\n", ch.id().c_str(), passed, failed, skipped);
        return 1;
      }
      note_time(seconds_since(case_start), case_name(v, c));
      report(case_name(v, c), c.why, o);
    }
    if (opt.large) continue;
    // rows = 0 is a no-op: nothing launched, nothing written.
    {
      DeviceBuffer xb(64), yb(64);
      poison(yb.get(), 64, kNaNPoison, s);
      Args a;
      a.rows = 0;
      a.cols = 8;
      for (const InputSpec& t : op_spec(v.op).inputs) a.*(t.slot) = xb.get();
      for (const OutputSpec& t : op_spec(v.op).outputs) a.*(t.slot) = yb.get();
      Outcome o{Outcome::pass, "no-op"};
      try {
        v.launch(a, s);
        CUDA_CHECK(cudaStreamSynchronize(s));
        uint8_t back[64];
        CUDA_CHECK(cudaMemcpy(back, yb.get(), 64, cudaMemcpyDeviceToHost));
        if (!std::all_of(back, back + 64, [](uint8_t b) { return b == kNaNPoison; }))
          o = {Outcome::fail, "rows = 0 wrote to the output"};
      } catch (const UsageError& e) {
        o = {Outcome::fail, std::string("rows = 0 refused: ") + e.what()};
      }
      report(v.name(), "rows = 0", o);
    }
    // Bad arguments are refused with a message naming them.
    const OpSpec& spec = op_spec(v.op);
    DeviceBuffer xb(4096), yb(4096);
    // Every tensor of the op points at a valid buffer, except the one named `null_slot`.
    auto args = [&](int64_t r, int64_t c, const char* null_slot = "") {
      Args a;
      a.rows = r;
      a.cols = c;
      for (const InputSpec& t : spec.inputs) a.*(t.slot) = std::strcmp(t.name, null_slot) ? xb.get() : nullptr;
      for (const OutputSpec& t : spec.outputs) a.*(t.slot) = std::strcmp(t.name, null_slot) ? yb.get() : nullptr;
      return a;
    };
    const std::string base = v.name();
    report(base, "cols = 0", expect_refusal(v, args(4, 0), s));
    report(base, "cols = -1", expect_refusal(v, args(4, -1), s));
    report(base, "rows = -1", expect_refusal(v, args(-1, 8), s));
    for (const InputSpec& t : spec.inputs)
      report(base, std::string("null input ") + t.name, expect_refusal(v, args(4, 8, t.name), s));
    for (const OutputSpec& t : spec.outputs)
      report(base, std::string("null output ") + t.name, expect_refusal(v, args(4, 8, t.name), s));
    if (v.limits.max_cols > 0)
      report(base, "largest cols + 1 (" + v.limits.text + ")", expect_refusal(v, args(1, v.limits.max_cols + 1), s));
  }
  // The chapter's own checks (exhaustive casts, ...), selected like the variants.
  if (!opt.single_case() && !opt.large) {
    for (const Chapter::Check& chk : ch.checks()) {
      if (!name_selected(chk.name, opt.kernel)) continue;  // its name begins op/kernel/dtype
      if (opt.dtype && *opt.dtype != chk.dtype) continue;
      if (opt.quick) continue;  // the sanitizers' runs: these are long and launch nothing new
      ++selected;
      std::string detail;
      Outcome o;
      try {
        o = chk.run(s, &detail) ? Outcome{Outcome::pass, detail} : Outcome{Outcome::fail, detail};
      } catch (const std::exception& e) {
        o = {Outcome::fail, e.what()};
      }
      report(chk.name, "", o);
    }
  }
  CUDA_CHECK(cudaStreamDestroy(s));
  if (selected == 0)
    throw UsageError("no variant's name (--list) contains --kernel '" + opt.kernel + "'" +
                     (opt.dtype ? std::string(" and --dtype ") + dtype_name(*opt.dtype) : ""));
  for (size_t i = 0; i < slowest.size(); ++i)
    std::printf("%s %.2f s %s\n", i == 0 ? "slowest cases:" : "              ", slowest[i].first,
                slowest[i].second.c_str());
  std::printf("%s: %d passed, %d failed, %d skipped in %.0f s\n", ch.id().c_str(), passed, failed, skipped,
              seconds_since(suite_start));
  if (failed) return 1;
  return passed == 0 ? 77 : 0;
}

}  // namespace course
