/// @file ops_reference.cpp
/// @brief The float64 reference of every operation (reference; cross-entropy's in ce_reference), on threads over row chunks
/// (reference_parallel), the norms' saved statistics as the forward saves them (saved_row_stat),
/// and the column sums over every row streamed a chunk of rows at a time (column_sums_streamed).
/// The operations' table, bytes and tolerances are in ops.cpp.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "harness/errors.h"
#include "harness/ops.h"
#include "harness/reference.h"

namespace course {

namespace {

// The mean's divisor of the cross-entropy operations: Args::valid_rows, else the rows given whose
// target is not ignore_index.
int64_t ce_valid_rows(const Args& a, const double* target, int64_t rows) {
  if (a.valid_rows >= 0) return a.valid_rows;
  int64_t n = 0;
  for (int64_t r = 0; r < rows; ++r) n += target[r] != double(a.ignore_index);
  return n;
}

// The weight of each row's loss in the reduction: 1 / count for a mean (inf where every row is
// ignored: 0 * inf gives the NaN of PyTorch's 0 / 0), 1 for a sum (and for none, whose scalar is the sum).
double ce_row_weight(const Args& a, const double* target, int64_t rows) {
  return a.reduction == Reduction::mean ? 1.0 / double(ce_valid_rows(a, target, rows)) : 1.0;
}

void ce_reference(Op op, const std::vector<const double*>& in, int64_t rows, int64_t cols,
                  const std::vector<double*>& out, const Args& a) {
  const double *x = in[0], *t = in[1];
  const double e = a.label_smoothing, z = a.z_loss, w = ce_row_weight(a, t, rows);
  if (op == Op::cross_entropy_backward) {
    std::vector<double> g(static_cast<size_t>(rows));  // each row's upstream gradient over the mean's count
    for (int64_t r = 0; r < rows; ++r) g[size_t(r)] = in[3][r] * w;
    return ref::cross_entropy_backward(x, t, in[2], g.data(), rows, cols, a.ignore_index, e, z, out[0]);
  }
  const bool fused = op == Op::cross_entropy_fused;
  double* loss = out[fused ? 1 : 0];
  double* reduced = out[2];
  std::vector<double> lse_buf;
  double* lse = fused ? (lse_buf.resize(size_t(rows)), lse_buf.data()) : out[1];
  ref::cross_entropy(x, t, rows, cols, a.ignore_index, e, z, loss, lse);
  for (int64_t r = 0; r < rows; ++r) *reduced += loss[r] * w;  // added to, as column sums are
  if (fused) {
    const std::vector<double> g(size_t(rows), double(a.loss_grad) * w);
    ref::cross_entropy_backward(x, t, lse, g.data(), rows, cols, a.ignore_index, e, z, out[0]);
  }
}

}  // namespace

int64_t check_targets(const int32_t* target, int64_t rows, int64_t cols, int64_t ignore_index) {
  int64_t valid = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t t = target[r];
    if (t == ignore_index) continue;
    require(t >= 0 && t < cols, "cross-entropy: target[", r, "] = ", t, " is outside [0, ", cols,
            ") and is not ignore_index (", ignore_index, ")");
    ++valid;
  }
  return valid;
}

void saved_lse(const double* x, const double* target, int64_t rows, int64_t cols, int64_t ignore_index,
               double* out) {
  std::vector<double> loss(static_cast<size_t>(rows)), lse(static_cast<size_t>(rows));
  ref::cross_entropy(x, target, rows, cols, ignore_index, 0.0, 0.0, loss.data(), lse.data());
  for (int64_t r = 0; r < rows; ++r) out[r] = ref::round_to_f32(lse[size_t(r)]);
}

void reference(Op op, const std::vector<const double*>& in, int64_t rows, int64_t cols,
               const std::vector<double*>& out, const Args& a) {
  const double* x = in[0];
  double* y = out[0];
  const int64_t n = rows * cols;
  switch (op) {
    case Op::copy:
    case Op::cast_to_f32:
    case Op::cast_from_f32:  // the comparison rounds to the output type
      for (int64_t i = 0; i < n; ++i) y[i] = x[i];
      return;
    case Op::softmax:
      return ref::softmax(x, rows, cols, y);
    case Op::log_softmax:
      return ref::log_softmax(x, rows, cols, y);
    case Op::reduce_scale:
      return ref::reduce_scale(x, rows, cols, y);
    case Op::layer_norm:
      return ref::layer_norm(x, in[1], in[2], rows, cols, a.eps, y, out[1], out[2]);
    case Op::relu:
      for (int64_t i = 0; i < n; ++i) y[i] = ref::relu(x[i]);
      return;
    case Op::gelu:
      for (int64_t i = 0; i < n; ++i) y[i] = ref::gelu(x[i]);
      return;
    case Op::scale:
      for (int64_t i = 0; i < n; ++i) y[i] = ref::scale(x[i], a.alpha);
      return;
    case Op::mul:
      for (int64_t i = 0; i < n; ++i) y[i] = x[i] * in[1][i];
      return;
    case Op::fma:
      for (int64_t i = 0; i < n; ++i) y[i] = ref::fma3(x[i], in[1][i], in[2][i]);
      return;
    case Op::softmax_backward:
      return ref::softmax_backward(x, in[1], rows, cols, y);
    case Op::log_softmax_backward:
      return ref::log_softmax_backward(x, in[1], rows, cols, y);
    case Op::scale_mask_softmax: {
      // The logits as the kernel forms them: x * alpha rounded to fp32 (exact in double, then
      // rounded once), -inf where the mask is set.
      std::vector<double> logits(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i)
        logits[i] = in[1][i] != 0 ? -INFINITY : ref::round_to_f32(x[i] * double(a.alpha));
      return ref::softmax(logits.data(), rows, cols, y);
    }
    case Op::layer_norm_backward:  // out[1], out[2]: column sums, added to (reference_parallel zeroes them)
      return ref::layer_norm_backward(x, in[1], in[2], in[3], in[4], rows, cols, y, out[1], out[2]);
    case Op::rms_norm:
      return ref::rms_norm(x, in[1], rows, cols, a.eps, y, out[1]);
    case Op::rms_norm_backward:
      return ref::rms_norm_backward(x, in[1], in[2], in[3], rows, cols, y, out[1]);
    case Op::cross_entropy:  // the reduction (Extent::scalar) is added to, as column sums are
    case Op::cross_entropy_backward:
    case Op::cross_entropy_fused:
      return ce_reference(op, in, rows, cols, out, a);
  }
}

void reference_parallel(Op op, const std::vector<const double*>& in, int64_t rows, int64_t cols,
                        const std::vector<double*>& out, const Args& a, int threads) {
  const OpSpec& spec = op_spec(op);
  if (op_is_elementwise(op)) {  // every tensor rows x cols, seen flat
    parallel_ranges(
        rows * cols, kHostGrain,
        [&](size_t, IndexRange r) {
          std::vector<const double*> i2;
          std::vector<double*> o2;
          for (const double* p : in) i2.push_back(p + r.begin);
          for (double* p : out) o2.push_back(p + r.begin);
          reference(op, i2, 1, r.end - r.begin, o2, a);
        },
        threads);
    return;
  }
  // Cross-entropy's mean divides by the rows not ignored in all `rows`, not in a chunk's.
  Args whole = a;
  if (op_is_cross_entropy(op)) whole.valid_rows = ce_valid_rows(a, in[1], rows);
  // Column sums over every row (Extent::col_sum, Extent::scalar): each chunk of rows adds into a
  // zeroed buffer of its own, and the buffers are summed in chunk order: the same result for the
  // same thread count (another count moves the last bits of a double, far inside any tolerance).
  const int64_t grain = std::max<int64_t>(1, kHostGrain / std::max<int64_t>(cols, 1));
  const size_t chunks = split_range(rows, grain, threads).size();
  std::vector<std::vector<std::vector<double>>> sums(out.size());
  for (size_t k = 0; k < out.size(); ++k)
    if (is_row_sum(spec.outputs[k].extent))
      sums[k].assign(chunks, std::vector<double>(size_t(extent_elems(spec.outputs[k].extent, rows, cols)), 0.0));
  parallel_ranges(
      rows, grain,
      [&](size_t chunk, IndexRange r) {
        auto at = [&](Extent e) { return e == Extent::matrix ? r.begin * cols : e == Extent::per_row ? r.begin : 0; };
        std::vector<const double*> i2;
        std::vector<double*> o2;
        for (size_t k = 0; k < in.size(); ++k) i2.push_back(in[k] + at(spec.inputs[k].extent));
        for (size_t k = 0; k < out.size(); ++k)
          o2.push_back(sums[k].empty() ? out[k] + at(spec.outputs[k].extent) : sums[k][chunk].data());
        reference(op, i2, r.end - r.begin, cols, o2, whole);
      },
      threads);
  for (size_t k = 0; k < out.size(); ++k)
    if (!sums[k].empty())
      for (int64_t c = 0; c < int64_t(sums[k].empty() ? 0 : sums[k][0].size()); ++c) {
        double s = 0;
        for (const auto& part : sums[k]) s += part[size_t(c)];
        out[k][c] = s;
      }
}

void saved_row_stat(Op op, Source s, const double* x, int64_t rows, int64_t cols, float eps, double* out) {
  if (s == Source::saved_lse)  // needs the targets: saved_lse()
    throw std::invalid_argument(std::string(op_name(op)) + ": the saved lse is derived from x and the targets (saved_lse)");
  const bool ln = op == Op::layer_norm_backward;
  if (s == Source::fill || (op != Op::rms_norm_backward && !ln) || (!ln && s == Source::saved_mean))
    throw std::invalid_argument(std::string(op_name(op)) + ": no such saved statistic");
  parallel_ranges(rows, std::max<int64_t>(1, kHostGrain / std::max<int64_t>(cols, 1)), [&](size_t, IndexRange r) {
    for (int64_t i = r.begin; i < r.end; ++i) {
      double mean = 0, rstd = 0;
      if (ln)
        ref::layer_norm_stats(x + i * cols, cols, eps, &mean, &rstd);
      else
        rstd = ref::rms_norm_rstd(x + i * cols, cols, eps);
      out[i] = ref::round_to_f32(s == Source::saved_mean ? mean : rstd);  // stored as fp32
    }
  });
}

namespace {

// Adds to mag[k] (null where output k is no column sum) the magnitudes of the terms of each column
// sum over `rows` rows: |dy * xhat| for dgamma, |dy| for dbeta. Each thread owns a range of columns,
// so every column is added in row order whatever the thread count.
void add_col_sum_magnitudes(Op op, const std::vector<const double*>& in, int64_t rows, int64_t cols,
                            const std::vector<double*>& mag, int threads) {
  const bool ln = op == Op::layer_norm_backward;
  if (!ln && op != Op::rms_norm_backward) return;  // the operations with column sums
  const double *x = in[0], *dy = in[1], *mean = ln ? in[3] : nullptr, *rstd = in[ln ? 4 : 3];
  parallel_ranges(
      cols, std::max<int64_t>(1, kHostGrain / std::max<int64_t>(rows, 1)),
      [&](size_t, IndexRange c) {
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t j = c.begin; j < c.end; ++j) {
            const int64_t i = r * cols + j;
            mag[1][j] += std::fabs(dy[i] * (x[i] - (mean ? mean[r] : 0.0)) * rstd[r]);  // dgamma
            if (ln) mag[2][j] += std::fabs(dy[i]);                                     // dbeta
          }
      },
      threads);
}

// Throws std::invalid_argument unless the fetched chunk holds each input at its size for n rows.
void check_chunk(Op op, const std::vector<std::vector<double>>& in, int64_t n, int64_t cols) {
  const OpSpec& spec = op_spec(op);
  if (in.size() != spec.inputs.size())
    throw std::invalid_argument(std::string(op_name(op)) + ": a row chunk of " + std::to_string(in.size()) +
                                " inputs, expected " + std::to_string(spec.inputs.size()));
  for (size_t k = 0; k < in.size(); ++k) {
    const int64_t want = extent_elems(spec.inputs[k].extent, n, cols);
    if (int64_t(in[k].size()) != want)
      throw std::invalid_argument(std::string(op_name(op)) + ": input '" + spec.inputs[k].name + "' has " +
                                  std::to_string(in[k].size()) + " elements in a chunk of " + std::to_string(n) +
                                  " rows x " + std::to_string(cols) + " cols, expected " + std::to_string(want));
  }
}

}  // namespace

ColumnSums column_sums_streamed(Op op, int64_t rows, int64_t cols, const Args& a, int64_t chunk_rows,
                                const RowChunkFetch& fetch, int threads) {
  const OpSpec& spec = op_spec(op);
  const size_t nout = spec.outputs.size();
  auto is_sum = [&](size_t k) { return is_row_sum(spec.outputs[k].extent); };
  auto width = [&](size_t k) { return size_t(extent_elems(spec.outputs[k].extent, rows, cols)); };
  if (op_is_cross_entropy(op) && a.valid_rows < 0)
    throw std::invalid_argument(std::string(op_name(op)) +
                                ": the mean over row chunks needs Args::valid_rows (check_targets counts it)");
  ColumnSums cs{std::vector<std::vector<double>>(nout), std::vector<std::vector<double>>(nout)};
  for (size_t k = 0; k < nout; ++k) {
    if (!is_sum(k)) continue;
    cs.sum[k].assign(width(k), 0.0);
    cs.magnitude[k].assign(width(k), 0.0);
  }
  chunk_rows = std::max<int64_t>(chunk_rows, 1);
  for (int64_t b = 0; b < rows; b += chunk_rows) {
    const int64_t n = std::min(rows - b, chunk_rows);
    const std::vector<std::vector<double>> in = fetch(b, b + n);
    check_chunk(op, in, n, cols);
    std::vector<const double*> in_ptr;
    for (const auto& v : in) in_ptr.push_back(v.data());
    // The chunk's outputs (its dx is not kept) and its magnitudes, then both added in row order.
    std::vector<std::vector<double>> out(nout), mag(nout);
    std::vector<double*> out_ptr, mag_ptr;
    for (size_t k = 0; k < nout; ++k) {
      out[k].resize(size_t(extent_elems(spec.outputs[k].extent, n, cols)));
      if (is_sum(k)) mag[k].assign(width(k), 0.0);
      out_ptr.push_back(out[k].data());
      mag_ptr.push_back(is_sum(k) ? mag[k].data() : nullptr);
    }
    reference_parallel(op, in_ptr, n, cols, out_ptr, a, threads);
    add_col_sum_magnitudes(op, in_ptr, n, cols, mag_ptr, threads);
    if (op_is_cross_entropy(op))  // the reduction's terms: each row's magnitude times its weight
      for (size_t k = 0; k < nout; ++k)
        if (spec.outputs[k].extent == Extent::scalar) {
          const double w = a.reduction == Reduction::mean ? 1.0 / double(a.valid_rows) : 1.0;
          for (int64_t r = 0; r < n; ++r) {
            const double* xr = in_ptr[0] + r * cols;
            const double lse = op == Op::cross_entropy ? out[1][size_t(r)] : ref::logsumexp(xr, cols);
            mag[k][0] += w * ce_row_magnitude(xr, cols, in_ptr[1][r], lse, a);
          }
        }
    for (size_t k = 0; k < nout; ++k)
      for (size_t c = 0; is_sum(k) && c < width(k); ++c) {
        cs.sum[k][c] += out[k][c];
        cs.magnitude[k][c] += mag[k][c];
      }
  }
  return cs;
}

}  // namespace course
