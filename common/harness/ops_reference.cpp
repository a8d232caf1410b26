/// @file ops_reference.cpp
/// @brief The float64 reference of every operation (reference), on threads over row chunks
/// (reference_parallel), the norms' saved statistics as the forward saves them (saved_row_stat),
/// and the column sums over every row streamed a chunk of rows at a time (column_sums_streamed).
/// The operations' table, bytes and tolerances are in ops.cpp.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "harness/ops.h"
#include "harness/reference.h"

namespace course {

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
  // Column sums over every row (Extent::col_sum): each chunk of rows adds into a zeroed buffer of
  // its own, and the buffers are summed in chunk order: the same result for the same thread count
  // (another count moves the last bits of a double, far inside any tolerance).
  const int64_t grain = std::max<int64_t>(1, kHostGrain / std::max<int64_t>(cols, 1));
  const size_t chunks = split_range(rows, grain, threads).size();
  std::vector<std::vector<std::vector<double>>> sums(out.size());
  for (size_t k = 0; k < out.size(); ++k)
    if (spec.outputs[k].extent == Extent::col_sum) sums[k].assign(chunks, std::vector<double>(size_t(cols), 0.0));
  parallel_ranges(
      rows, grain,
      [&](size_t chunk, IndexRange r) {
        auto at = [&](Extent e) { return e == Extent::matrix ? r.begin * cols : e == Extent::per_row ? r.begin : 0; };
        std::vector<const double*> i2;
        std::vector<double*> o2;
        for (size_t k = 0; k < in.size(); ++k) i2.push_back(in[k] + at(spec.inputs[k].extent));
        for (size_t k = 0; k < out.size(); ++k)
          o2.push_back(sums[k].empty() ? out[k] + at(spec.outputs[k].extent) : sums[k][chunk].data());
        reference(op, i2, r.end - r.begin, cols, o2, a);
      },
      threads);
  for (size_t k = 0; k < out.size(); ++k)
    if (!sums[k].empty())
      for (int64_t c = 0; c < cols; ++c) {
        double s = 0;
        for (const auto& part : sums[k]) s += part[size_t(c)];
        out[k][c] = s;
      }
}

void saved_row_stat(Op op, Source s, const double* x, int64_t rows, int64_t cols, float eps, double* out) {
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
  auto is_sum = [&](size_t k) { return spec.outputs[k].extent == Extent::col_sum; };
  ColumnSums cs{std::vector<std::vector<double>>(nout), std::vector<std::vector<double>>(nout)};
  for (size_t k = 0; k < nout; ++k) {
    if (!is_sum(k)) continue;
    cs.sum[k].assign(size_t(cols), 0.0);
    cs.magnitude[k].assign(size_t(cols), 0.0);
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
      if (is_sum(k)) mag[k].assign(size_t(cols), 0.0);
      out_ptr.push_back(out[k].data());
      mag_ptr.push_back(is_sum(k) ? mag[k].data() : nullptr);
    }
    reference_parallel(op, in_ptr, n, cols, out_ptr, a, threads);
    add_col_sum_magnitudes(op, in_ptr, n, cols, mag_ptr, threads);
    for (size_t k = 0; k < nout; ++k)
      for (int64_t c = 0; is_sum(k) && c < cols; ++c) {
        cs.sum[k][size_t(c)] += out[k][size_t(c)];
        cs.magnitude[k][size_t(c)] += mag[k][size_t(c)];
      }
  }
  return cs;
}

}  // namespace course
