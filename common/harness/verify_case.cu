// One case of the correctness suite: see verify_case.h.
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <optional>
#include <random>

#include "harness/errors.h"
#include "harness/npy.h"
#include "harness/parallel.h"
#include "harness/reference.h"
#include "harness/verify.h"
#include "harness/verify_case.h"

namespace course {
namespace detail {
namespace {

constexpr int64_t kGuard = 64;              // poisoned elements after each view, checked untouched
constexpr int64_t kCheckAllUpTo = 1 << 24;  // beyond this many elements, sample rows
constexpr uint8_t kFinitePoison = 0x7B;     // 1.3e36 (f32, bf16), 61280 (f16): finite, far off

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

// Copies the listed rows of a device tensor to host, as stored.
std::vector<char> fetch_rows(const void* dev, DType t, int64_t cols, const std::vector<int64_t>& ids) {
  const int es = dtype_size(t);
  const size_t row_bytes = size_t(cols) * es;
  std::vector<char> raw(ids.size() * row_bytes);
  // One copy per run of consecutive rows: a case checked whole is one copy, not one per row.
  for (size_t i = 0, n; i < ids.size(); i += n) {
    for (n = 1; i + n < ids.size() && ids[i + n] == ids[i] + int64_t(n);) ++n;
    CUDA_CHECK(cudaMemcpy(raw.data() + i * row_bytes, static_cast<const char*>(dev) + ids[i] * row_bytes, n * row_bytes,
                          cudaMemcpyDeviceToHost));
  }
  return raw;
}

// The listed rows of a device tensor of extent e, as stored (per-column ones and column sums whole).
std::vector<char> fetch_tensor(const void* dev, DType t, Extent e, int64_t cols, const std::vector<int64_t>& ids) {
  static const std::vector<int64_t> row0{0};
  switch (e) {
    case Extent::matrix:
      return fetch_rows(dev, t, cols, ids);
    case Extent::per_row:
      return fetch_rows(dev, t, 1, ids);
    case Extent::scalar:
      return fetch_rows(dev, t, 1, row0);
    default:
      return fetch_rows(dev, t, cols, row0);
  }
}

// Host values of type t, widened exactly to double.
std::vector<double> widen(const std::vector<char>& raw, DType t) {
  std::vector<double> out(raw.size() / size_t(dtype_size(t)));
  parallel_for(int64_t(out.size()), [&](int64_t i) { out[i] = load_as_double(raw.data(), t, i); });
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


// How the inputs other than x are filled: normal(0, 1) without outliers or special rows, each
// from its own seed; the first per-column input (LayerNorm's gamma) centred on 1.
FillSpec side_input_fill(const FillSpec& x_fill, int k, bool first_per_col) {
  FillSpec f;
  f.seed = x_fill.seed * 7919 + uint64_t(k);
  f.outliers = false;
  f.scale = first_per_col ? 0.5f : 1.0f;
  f.shift = first_per_col ? 1.0f : 0.0f;
  return f;
}

// The backward's y as a forward pass gives it: the filled values (special rows included) taken as
// logits and replaced by their softmax (or log-softmax), in double, rounded to the storage type:
// NaN rows where the forward gives NaN, zeros (or -inf) where it masked. Cases too large to check
// whole keep the plain fill: they test offsets, not values.
void make_forward_output(void* dev, DType t, int64_t rows, int64_t cols, bool log, cudaStream_t s) {
  const int64_t n = rows * cols;
  const int es = dtype_size(t);
  std::vector<char> raw(size_t(n) * es);
  CUDA_CHECK(cudaStreamSynchronize(s));
  CUDA_CHECK(cudaMemcpy(raw.data(), dev, raw.size(), cudaMemcpyDeviceToHost));
  std::vector<double> x(static_cast<size_t>(n)), y(static_cast<size_t>(n));
  parallel_for(n, [&](int64_t i) { x[i] = load_as_double(raw.data(), t, i); });
  reference_parallel(log ? Op::log_softmax : Op::softmax, {x.data()}, rows, cols, {y.data()}, Args{});
  parallel_for(n, [&](int64_t i) { store_from_double(raw.data(), t, i, y[i]); });
  CUDA_CHECK(cudaMemcpy(dev, raw.data(), raw.size(), cudaMemcpyHostToDevice));
}

// The case's column sums over every row (Extent::col_sum outputs) and their magnitudes, from the
// inputs read back from the device kCheckAllUpTo elements at a time (column_sums_streamed): a
// case past that size checks a sample of the rows of dx, but each column sum needs them all.
ColumnSums case_column_sums(const Variant& v, const Case& c, const std::vector<View>& ins, const Args& a) {
  const OpSpec& spec = op_spec(v.op);
  auto fetch = [&](int64_t begin, int64_t end) {
    std::vector<int64_t> rows(size_t(end - begin));
    std::iota(rows.begin(), rows.end(), begin);
    std::vector<std::vector<double>> in;
    for (size_t k = 0; k < spec.inputs.size(); ++k) {
      const DType t = tensor_dtype(spec.inputs[k].elem, v.dtype);
      in.push_back(widen(fetch_tensor(ins[k].data, t, spec.inputs[k].extent, c.cols, rows), t));
    }
    return in;
  };
  return column_sums_streamed(v.op, c.rows, c.cols, a, std::max<int64_t>(1, kCheckAllUpTo / c.cols), fetch);
}

bool has_col_sums(const OpSpec& spec) {
  return std::any_of(spec.outputs.begin(), spec.outputs.end(), [](const OutputSpec& o) { return is_row_sum(o.extent); });
}

}  // namespace

std::string case_name(const Variant& v, const Case& c) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s/%s/%s rows=%lld cols=%lld seed=%llu offset=%lld", op_name(v.op), v.kernel.c_str(),
                dtype_name(v.dtype), (long long)c.rows, (long long)c.cols, (unsigned long long)c.seed,
                (long long)c.offset);
  std::string name = buf;
  if (op_is_cross_entropy(v.op)) {  // the scalars the case was run with
    std::snprintf(buf, sizeof buf, " reduction=%s label_smoothing=%g z_loss=%g", reduction_name(c.reduction),
                  double(c.label_smoothing), double(c.z_loss));
    name += buf;
  }
  return name;
}

// Runs one case: fill, poison NaN, launch, check guards; poison finite, launch, check the two outputs
// are bitwise equal; compare each output with the float64 reference.
Outcome run_case(const Variant& v, const Case& c, cudaStream_t s, const std::string& save_dir) {
  const OpSpec& spec = op_spec(v.op);
  auto elems = [&](Extent e) { return extent_elems(e, c.rows, c.cols); };
  size_t ws_bytes = v.workspace ? v.workspace(c.rows, c.cols, v.dtype) : 0;
  size_t need = ws_bytes + (size_t(64) << 20);
  for (const InputSpec& t : spec.inputs)
    need += size_t(elems(t.extent) + c.offset + kGuard) * dtype_size(tensor_dtype(t.elem, v.dtype));
  for (const OutputSpec& t : spec.outputs)
    need += size_t(elems(t.extent) + c.offset + kGuard) * dtype_size(tensor_dtype(t.elem, v.dtype));
  size_t free_b = 0, total_b = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  if (need > free_b) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "needs %.1f GB of GPU memory, %.1f GB free", need / 1e9, free_b / 1e9);
    return {Outcome::skip, buf};
  }
  // Every tensor gets its own view at the case's offset, with poisoned guards around it. An
  // in-place operation (ReduceScale) writes over its input: x and y are one view, refilled
  // before each launch, and only the guards around it carry the poison.
  const bool in_place = op_in_place(v.op);
  std::vector<View> ins, outs;
  ins.reserve(spec.inputs.size());
  outs.reserve(spec.outputs.size());
  for (const InputSpec& t : spec.inputs)
    ins.emplace_back(elems(t.extent), c.offset, dtype_size(tensor_dtype(t.elem, v.dtype)));
  for (size_t k = 0; k < spec.outputs.size(); ++k) {
    const OutputSpec& t = spec.outputs[k];
    if (in_place && k == 0)
      outs.emplace_back(0, 0, 1);  // never used: in place, y is the view of x
    else
      outs.emplace_back(elems(t.extent), c.offset, dtype_size(tensor_dtype(t.elem, v.dtype)));
  }
  auto out_view = [&](size_t k) -> View& { return in_place && k == 0 ? ins[0] : outs[k]; };
  DeviceBuffer ws(ws_bytes);
  FillSpec f = c.fill;
  f.seed = c.seed;
  Args a;
  a.rows = c.rows;
  a.cols = c.cols;
  a.alpha = 1.7f;  // scale: a factor that rounds (1.7 is not a short binary fraction)
  a.label_smoothing = c.label_smoothing;  // cross-entropy's scalars
  a.z_loss = c.z_loss;
  a.reduction = c.reduction;
  bool seen_per_col = false;
  std::vector<void*> in_ptrs;
  for (View& iv : ins) in_ptrs.push_back(iv.data);
  auto fill_inputs = [&] {
    for (size_t k = 0; k < spec.inputs.size(); ++k) {
      const InputSpec& t = spec.inputs[k];
      const DType dt = tensor_dtype(t.elem, v.dtype);
      if (t.source != Source::fill) {
        continue;  // derived from x, below
      } else if (k == 0) {
        fill(ins[0].data, dt, c.rows, c.cols, f, s);
      } else if (t.elem == Elem::i32) {  // cross-entropy's targets, one per row, coupled to x's special rows
        FillSpec tf = side_input_fill(f, int(k), false);
        tf.classes = c.cols;
        tf.ignore_index = int32_t(a.ignore_index);
        tf.all_ignored = f.all_ignored;
        tf.ce_rows = f.ce_rows && f.specials;
        tf.keep_seed = f.seed;
        fill(ins[k].data, dt, c.rows, 1, tf, s);
      } else {
        const bool first_per_col = t.extent == Extent::per_col && !seen_per_col;
        seen_per_col = seen_per_col || t.extent == Extent::per_col;
        const bool matrix = t.extent == Extent::matrix;  // a mask's pattern is per row
        fill(ins[k].data, dt, matrix ? c.rows : 1, matrix ? c.cols : elems(t.extent),
             side_input_fill(f, int(k), first_per_col), s);
      }
    }
    seen_per_col = false;
    fill_derived_inputs(v.op, v.dtype, c.rows, c.cols, a.eps, in_ptrs, s, a.ignore_index);  // saved mean, rstd, lse
  };
  fill_inputs();
  // Cross-entropy's targets, checked on the host as the kernels cannot afford to (a bad one is a
  // UsageError: exit 2), and counted: the mean's divisor for the references, which see sampled rows.
  if (op_is_cross_entropy(v.op)) {
    CUDA_CHECK(cudaStreamSynchronize(s));
    a.valid_rows = check_device_targets(ins[1].data, c.rows, c.cols, a.ignore_index);
  }
  if ((v.op == Op::softmax_backward || v.op == Op::log_softmax_backward) && c.rows * c.cols <= kCheckAllUpTo)
    make_forward_output(ins[0].data, v.dtype, c.rows, c.cols, v.op == Op::log_softmax_backward, s);
  for (size_t k = 0; k < spec.inputs.size(); ++k) a.*(spec.inputs[k].slot) = ins[k].data;
  for (size_t k = 0; k < spec.outputs.size(); ++k) a.*(spec.outputs[k].slot) = out_view(k).data;
  a.workspace = ws.get();
  a.workspace_bytes = ws_bytes;

  auto launch_with_poison = [&](uint8_t pattern) {
    for (size_t k = 0; k < spec.outputs.size(); ++k) poison(out_view(k).buf.get(), out_view(k).buf.bytes(), pattern, s);
    if (in_place) fill(ins[0].data, v.dtype, c.rows, c.cols, f, s);
    CUDA_CHECK(cudaStreamSynchronize(s));
    v.launch(a, s);
    CUDA_CHECK(cudaStreamSynchronize(s));
    CUDA_CHECK(cudaGetLastError());
  };
  auto guards_ok = [&](uint8_t pattern) {
    for (size_t k = 0; k < spec.outputs.size(); ++k)
      if (!guards_intact(out_view(k), c.offset, pattern)) return false;
    return true;
  };

  // The rows checked; per-row outputs are read at the same rows, per-column inputs whole.
  const auto ids = rows_to_check(c.rows, c.cols, c.seed);
  std::vector<std::vector<char>> in_raw(spec.inputs.size());  // read before any launch overwrites x
  std::vector<std::vector<double>> in_val(spec.inputs.size());
  CUDA_CHECK(cudaStreamSynchronize(s));
  for (size_t k = 0; k < spec.inputs.size(); ++k) {
    const DType it = tensor_dtype(spec.inputs[k].elem, v.dtype);
    in_raw[k] = fetch_tensor(ins[k].data, it, spec.inputs[k].extent, c.cols, ids);
    in_val[k] = widen(in_raw[k], it);
  }
  // Column sums over every row, from the inputs as they are before any launch.
  const ColumnSums sums = has_col_sums(spec) ? case_column_sums(v, c, ins, a) : ColumnSums{};
  try {
    launch_with_poison(kNaNPoison);
  } catch (const UsageError& e) {
    return {Outcome::fail, std::string("refused a shape inside its limits: ") + e.what()};
  }
  if (!guards_ok(kNaNPoison)) return {Outcome::fail, "wrote outside its output view"};
  const size_t nout = spec.outputs.size();
  std::vector<std::vector<char>> raw1(nout), raw2(nout);
  std::vector<std::vector<double>> got(nout);
  for (size_t k = 0; k < nout; ++k) {
    const DType ot = tensor_dtype(spec.outputs[k].elem, v.dtype);
    raw1[k] = fetch_tensor(out_view(k).data, ot, spec.outputs[k].extent, c.cols, ids);
    got[k] = widen(raw1[k], ot);
  }
  launch_with_poison(kFinitePoison);
  if (!guards_ok(kFinitePoison)) return {Outcome::fail, "wrote outside its output view"};
  for (size_t k = 0; k < nout; ++k) {
    const DType ot = tensor_dtype(spec.outputs[k].elem, v.dtype);
    const Extent ext = spec.outputs[k].extent;
    const int64_t width = ext == Extent::matrix ? c.cols : 1;
    raw2[k] = fetch_tensor(out_view(k).data, ot, ext, c.cols, ids);
    if (raw1[k] != raw2[k]) {
      size_t i = 0;
      while (i < raw1[k].size() && raw1[k][i] == raw2[k][i]) ++i;
      int64_t e = int64_t(i / dtype_size(ot));
      char where[80];  // a column sum is one row of cols sums, each over every row
      if (ext == Extent::col_sum)
        std::snprintf(where, sizeof where, "col %lld, a sum over every row", (long long)e);
      else if (ext == Extent::scalar)
        std::snprintf(where, sizeof where, "the reduction over every row");
      else
        std::snprintf(where, sizeof where, "row %lld, col %lld", (long long)ids[e / width], (long long)(e % width));
      char buf[280];
      std::snprintf(buf, sizeof buf,
                    "two launches on the same input differ (%s, %s): an element left "
                    "unwritten (it holds the poison) or a nondeterministic result",
                    spec.outputs[k].name, where);
      return {Outcome::fail, buf};
    }
  }
  std::vector<std::vector<double>> ref(nout);
  std::vector<const double*> in_ptr;
  std::vector<double*> ref_ptr;
  for (auto& iv : in_val) in_ptr.push_back(iv.data());
  for (size_t k = 0; k < nout; ++k) {
    ref[k].resize(got[k].size());
    ref_ptr.push_back(ref[k].data());
  }
  reference_parallel(v.op, in_ptr, int64_t(ids.size()), c.cols, ref_ptr, a);
  for (size_t k = 0; k < nout; ++k)  // the sampled rows' column sums give way to every row's
    if (is_row_sum(spec.outputs[k].extent)) std::copy(sums.sum[k].begin(), sums.sum[k].end(), ref[k].begin());

  if (!save_dir.empty()) {
    mkdir(save_dir.c_str(), 0755);
    std::string stem = save_dir + "/" + op_name(v.op) + "_" + v.kernel + "_" + dtype_name(v.dtype);
    auto shape_of = [&](Extent e) {
      return e == Extent::matrix    ? std::vector<int64_t>{int64_t(ids.size()), c.cols}
             : e == Extent::per_row ? std::vector<int64_t>{int64_t(ids.size())}
             : e == Extent::scalar  ? std::vector<int64_t>{1}
                                    : std::vector<int64_t>{c.cols};
    };
    for (size_t k = 0; k < spec.inputs.size(); ++k)
      write_npy_dtype(stem + "_" + spec.inputs[k].name + ".npy", in_raw[k].data(),
                      tensor_dtype(spec.inputs[k].elem, v.dtype), shape_of(spec.inputs[k].extent));
    for (size_t k = 0; k < nout; ++k) {
      const OutputSpec& o = spec.outputs[k];
      write_npy_dtype(stem + "_" + o.name + ".npy", raw1[k].data(), tensor_dtype(o.elem, v.dtype), shape_of(o.extent));
      write_npy(stem + "_ref_" + o.name + ".npy", ref[k].data(), "<f8", shape_of(o.extent));
    }
    std::printf("  saved %s_*.npy (inputs, outputs, float64 references)\n", stem.c_str());
  }

  std::string details, failures;
  bool all_ok = true;
  for (size_t k = 0; k < nout; ++k) {
    const OutputSpec& o = spec.outputs[k];
    const bool col_sum = is_row_sum(o.extent);  // a column sum, or cross-entropy's reduction (1 column)
    const CompareResult r =
        col_sum ? compare_col_sum(got[k].data(), ref[k].data(), sums.magnitude[k].data(), c.rows,
                                  extent_elems(o.extent, c.rows, c.cols))
                : compare_output(v.op, v.dtype, int(k), in_ptr, ref_ptr, got[k].data(), int64_t(ids.size()), c.cols,
                                 ids.data(), host_threads(), &a);
    char buf[240];
    std::snprintf(buf, sizeof buf, "%s%smax_abs_err %.3g, max_rel_err %.3g over %lld elements%s",
                  details.empty() ? "" : "; ", nout > 1 ? (std::string(o.name) + ": ").c_str() : "", r.max_abs_err,
                  r.max_rel_err, (long long)r.checked, col_sum ? " (sums over every row)" : "");
    details += buf;
    if (!r.ok()) {
      all_ok = false;
      char head[160];
      std::snprintf(head, sizeof head, "%s: %lld of %lld elements out of tolerance; first mismatches:\n", o.name,
                    (long long)r.failed, (long long)r.checked);
      failures += head + describe(r);
    }
  }
  if (ids.size() < size_t(c.rows)) details += " (sampled rows)";
  if (all_ok) return {Outcome::pass, details};
  return {Outcome::fail, failures + "    (" + details + ")"};
}

// Calls the launcher with arguments it must refuse: passes when it throws UsageError and leaves no CUDA error.
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

}  // namespace detail
}  // namespace course
