#include <sys/stat.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <random>

#include "course/errors.h"
#include "course/npy.h"
#include "course/verify.h"

namespace course {
namespace {

constexpr int64_t kGuard = 64;              // poisoned elements after each view, checked untouched
constexpr int64_t kCheckAllUpTo = 1 << 24;  // beyond this many elements, sample rows
constexpr uint8_t kNaNPoison = 0xFF;        // NaN in f32, f16 and bf16
constexpr uint8_t kFinitePoison = 0x7B;     // 1.3e36 (f32, bf16), 61280 (f16): finite, far off

bool fits(const Variant& v, int64_t cols) { return v.limits.max_cols == 0 || cols <= v.limits.max_cols; }

// A tensor of the case: offset elements, the view, kGuard elements after.
struct View {
  DeviceBuffer buf;
  void* data = nullptr;
  int64_t elems = 0;
  int esize = 0;
  View(int64_t n, int64_t offset, int elem_size)
      : buf(static_cast<size_t>((offset + n + kGuard) * elem_size)), elems(n), esize(elem_size) {
    data = static_cast<char*>(buf.get()) + offset * elem_size;
  }
};

std::vector<int64_t> rows_to_check(int64_t rows, int64_t cols, uint64_t seed) {
  std::vector<int64_t> ids;
  if (rows * cols <= kCheckAllUpTo) {
    for (int64_t r = 0; r < rows; ++r) ids.push_back(r);
    return ids;
  }
  // First, last, around the 2^31st element (where 32-bit offsets would wrap), and a few random.
  const int64_t wrap = (int64_t(1) << 31) / cols;
  for (int64_t r : {int64_t(0), int64_t(1), wrap - 1, wrap, wrap + 1, rows - 2, rows - 1})
    if (r >= 0 && r < rows) ids.push_back(r);
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 8; ++i) ids.push_back(static_cast<int64_t>(rng() % uint64_t(rows)));
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

// Copies the listed rows of a device tensor to host, widened to double.
std::vector<double> fetch_rows(const void* dev, DType t, int64_t cols, const std::vector<int64_t>& ids,
                               std::vector<char>* raw_out = nullptr) {
  const int es = dtype_size(t);
  std::vector<char> raw(ids.size() * cols * es);
  for (size_t i = 0; i < ids.size(); ++i)
    CUDA_CHECK(cudaMemcpy(raw.data() + i * cols * es, static_cast<const char*>(dev) + ids[i] * cols * es, cols * es,
                          cudaMemcpyDeviceToHost));
  std::vector<double> out(ids.size() * cols);
  for (size_t i = 0; i < out.size(); ++i) out[i] = load_as_double(raw.data(), t, int64_t(i));
  if (raw_out) *raw_out = std::move(raw);
  return out;
}

// Checks that the bytes before the view and the guard after it still hold `pattern`.
bool guards_intact(const View& v, int64_t offset, uint8_t pattern) {
  std::vector<uint8_t> head(offset * v.esize), tail(kGuard * v.esize);
  if (!head.empty()) CUDA_CHECK(cudaMemcpy(head.data(), v.buf.get(), head.size(), cudaMemcpyDeviceToHost));
  CUDA_CHECK(
      cudaMemcpy(tail.data(), static_cast<char*>(v.data) + v.elems * v.esize, tail.size(), cudaMemcpyDeviceToHost));
  auto ok = [&](const std::vector<uint8_t>& b) {
    return std::all_of(b.begin(), b.end(), [&](uint8_t x) { return x == pattern; });
  };
  return ok(head) && ok(tail);
}

std::string case_name(const Variant& v, const Case& c) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s/%s/%s rows=%lld cols=%lld seed=%llu offset=%lld", op_name(v.op), v.kernel.c_str(),
                dtype_name(v.dtype), (long long)c.rows, (long long)c.cols, (unsigned long long)c.seed,
                (long long)c.offset);
  return buf;
}

struct Outcome {
  enum Kind { pass, fail, skip } kind;
  std::string detail;
};

// Runs one case: fill, poison NaN, launch, check guards; poison finite, launch, check the two
// outputs are bitwise equal; compare with the float64 reference.
Outcome run_case(const Variant& v, const Case& c, cudaStream_t s, const std::string& save_dir) {
  const int es = dtype_size(v.dtype);
  const int64_t n = c.rows * c.cols;
  size_t ws_bytes = v.workspace ? v.workspace(c.rows, c.cols, v.dtype) : 0;
  size_t need = size_t((2 * (n + c.offset + kGuard)) * es) + ws_bytes + (size_t(64) << 20);
  size_t free_b = 0, total_b = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  if (need > free_b) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "needs %.1f GB of GPU memory, %.1f GB free", need / 1e9, free_b / 1e9);
    return {Outcome::skip, buf};
  }
  // An in-place operation (ReduceScale) writes over its input: x and y are one view, refilled
  // before each launch, and only the guards around it carry the poison.
  const bool in_place = op_in_place(v.op);
  View x(n, c.offset, es);
  std::optional<View> y_own;
  if (!in_place) y_own.emplace(n, c.offset, es);
  View& y = in_place ? x : *y_own;
  DeviceBuffer ws(ws_bytes);
  FillSpec f = c.fill;
  f.seed = c.seed;
  fill(x.data, v.dtype, c.rows, c.cols, f, s);
  Args a;
  a.rows = c.rows;
  a.cols = c.cols;
  a.x = x.data;
  a.y = y.data;
  a.workspace = ws.get();
  a.workspace_bytes = ws_bytes;

  auto launch_with_poison = [&](uint8_t pattern) {
    poison(y.buf.get(), y.buf.bytes(), pattern, s);
    if (in_place) fill(x.data, v.dtype, c.rows, c.cols, f, s);
    CUDA_CHECK(cudaStreamSynchronize(s));
    v.launch(a, s);
    CUDA_CHECK(cudaStreamSynchronize(s));
    CUDA_CHECK(cudaGetLastError());
  };

  const auto ids = rows_to_check(c.rows, c.cols, c.seed);
  std::vector<char> xraw;  // the input, read before any launch can overwrite it
  CUDA_CHECK(cudaStreamSynchronize(s));
  std::vector<double> xin = fetch_rows(x.data, v.dtype, c.cols, ids, &xraw);
  try {
    launch_with_poison(kNaNPoison);
  } catch (const UsageError& e) {
    return {Outcome::fail, std::string("refused a shape inside its limits: ") + e.what()};
  }
  if (!guards_intact(y, c.offset, kNaNPoison)) return {Outcome::fail, "wrote outside its output view"};
  std::vector<char> raw1, raw2;
  std::vector<double> got = fetch_rows(y.data, v.dtype, c.cols, ids, &raw1);
  launch_with_poison(kFinitePoison);
  if (!guards_intact(y, c.offset, kFinitePoison)) return {Outcome::fail, "wrote outside its output view"};
  fetch_rows(y.data, v.dtype, c.cols, ids, &raw2);
  if (raw1 != raw2) {
    size_t i = 0;
    while (i < raw1.size() && raw1[i] == raw2[i]) ++i;
    int64_t e = int64_t(i / es);
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "two launches on the same input differ (row %lld, col %lld): an element left "
                  "unwritten (it holds the poison) or a nondeterministic result",
                  (long long)ids[e / c.cols], (long long)(e % c.cols));
    return {Outcome::fail, buf};
  }
  std::vector<double> ref(xin.size());
  reference(v.op, xin.data(), nullptr, int64_t(ids.size()), c.cols, ref.data());

  if (!save_dir.empty()) {
    mkdir(save_dir.c_str(), 0755);
    std::string stem = save_dir + "/" + op_name(v.op) + "_" + v.kernel + "_" + dtype_name(v.dtype);
    std::vector<int64_t> shape{int64_t(ids.size()), c.cols};
    write_npy_dtype(stem + "_x.npy", xraw.data(), v.dtype, shape);
    write_npy_dtype(stem + "_y.npy", raw1.data(), v.dtype, shape);
    write_npy(stem + "_ref.npy", ref.data(), "<f8", shape);
    std::printf("  saved %s_{x,y,ref}.npy\n", stem.c_str());
  }

  CompareResult r;
  if (op_is_exact(v.op)) {
    r.checked = int64_t(got.size());
    for (int64_t i = 0; i < r.checked; ++i) {
      if (load_bits(xraw.data(), v.dtype, i) != load_bits(raw1.data(), v.dtype, i)) {
        ++r.failed;
        if (r.first.size() < 8) r.first.push_back({ids[i / c.cols], i % c.cols, got[i], ref[i]});
      }
    }
  } else {
    r = compare(got.data(), ref.data(), int64_t(ids.size()), c.cols, op_tolerance(v.op, v.dtype), ids.data());
  }
  char buf[160];
  std::snprintf(buf, sizeof buf, "max_abs_err %.3g, max_rel_err %.3g over %lld elements%s", r.max_abs_err,
                r.max_rel_err, (long long)r.checked, ids.size() < size_t(c.rows) ? " (sampled rows)" : "");
  if (r.ok()) return {Outcome::pass, buf};
  char head[128];
  std::snprintf(head, sizeof head, "%lld of %lld elements out of tolerance; first mismatches:\n", (long long)r.failed,
                (long long)r.checked);
  return {Outcome::fail, std::string(head) + describe(r) + "    (" + buf + ")"};
}

// Calls the launcher with arguments it must refuse; passes when it throws UsageError, launches
// nothing and leaves no CUDA error behind.
Outcome expect_refusal(const Variant& v, Args a, cudaStream_t s) {
  try {
    v.launch(a, s);
    cudaStreamSynchronize(s);
    cudaGetLastError();
    return {Outcome::fail, "accepted it (expected a UsageError naming the limit)"};
  } catch (const UsageError& e) {
    if (cudaGetLastError() != cudaSuccess) return {Outcome::fail, "refused, but left a CUDA error"};
    return {Outcome::pass, std::string("refused: ") + e.what()};
  }
}

}  // namespace

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
  }
  FillSpec special;
  special.specials = true;
  add(40, 37, "special values: -inf/+inf/NaN/masked/constant/shifted rows", 7, 0, special);
  add(24, 1024, "special values", 8, 0, special);
  if (!quick) add(16, 4099, "special values", 9, 0, special);
  FillSpec shifted;
  shifted.shift = 200.0f;  // exp(200) overflows fp32: the max must be subtracted first
  add(16, 1000, "common offset +200 (shift invariance)", 4, 0, shifted);
  for (int64_t off : {1, 2, 3}) add(37, 1000, "misaligned view", 5, off);
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
  if (v.limits.max_cols > 0) {
    add(3, v.limits.max_cols - 1, "largest cols - 1");
    add(3, v.limits.max_cols, "largest cols");
  }
  return cs;
}

int run_verification(const Chapter& ch, const Options& opt, const DeviceInfo& dev) {
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
  int selected = 0;
  for (const Variant& v : ch.variants()) {
    if (!opt.kernel.empty() && v.kernel.find(opt.kernel) == std::string::npos) continue;
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
      Outcome o;
      try {
        o = run_case(v, c, s, "");
      } catch (const CudaError& e) {
        report(case_name(v, c), c.why, {Outcome::fail, e.what()});
        std::printf("A CUDA error leaves the context unusable: stopping here.\n");
        std::printf("%s: %d passed, %d failed, %d skipped\n", ch.id().c_str(), passed, failed, skipped);
        return 1;
      }
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
      a.x = xb.get();
      a.y = yb.get();
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
      report(std::string(op_name(v.op)) + "/" + v.kernel + "/" + dtype_name(v.dtype), "rows = 0", o);
    }
    // Bad arguments are refused with a message naming them.
    DeviceBuffer xb(4096), yb(4096);
    auto args = [&](int64_t r, int64_t c, bool null_x, bool null_y) {
      Args a;
      a.rows = r;
      a.cols = c;
      a.x = null_x ? nullptr : xb.get();
      a.y = null_y ? nullptr : yb.get();
      return a;
    };
    std::string base = std::string(op_name(v.op)) + "/" + v.kernel + "/" + dtype_name(v.dtype);
    report(base, "cols = 0", expect_refusal(v, args(4, 0, false, false), s));
    report(base, "cols = -1", expect_refusal(v, args(4, -1, false, false), s));
    report(base, "rows = -1", expect_refusal(v, args(-1, 8, false, false), s));
    report(base, "null input", expect_refusal(v, args(4, 8, true, false), s));
    report(base, "null output", expect_refusal(v, args(4, 8, false, true), s));
    if (v.limits.max_cols > 0)
      report(base, "largest cols + 1 (" + v.limits.text + ")",
             expect_refusal(v, args(1, v.limits.max_cols + 1, false, false), s));
  }
  CUDA_CHECK(cudaStreamDestroy(s));
  if (selected == 0)
    throw UsageError("no variant matches --kernel '" + opt.kernel + "'" +
                     (opt.dtype ? std::string(" and --dtype ") + dtype_name(*opt.dtype) : ""));
  std::printf("%s: %d passed, %d failed, %d skipped\n", ch.id().c_str(), passed, failed, skipped);
  if (failed) return 1;
  return passed == 0 ? 77 : 0;
}

}  // namespace course
