// The per-row tolerances and the comparison of each output of an operation with its float64
// reference (the tables of operations, their bytes and their whole-tensor tolerances: ops.cpp;
// the references they run: ops_reference.cpp). docs/testing.md says what each tolerance allows.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/errors.h"
#include "harness/ops.h"
#include "harness/reference.h"

namespace course {

double ce_row_magnitude(const double* xr, int64_t cols, double target, double lse, const Args& a) {
  if (target == double(a.ignore_index)) return 0;
  if (!(target >= 0 && target < double(cols))) return std::numeric_limits<double>::quiet_NaN();
  double m = std::log2(double(std::max<int64_t>(cols, 1))) + 4 + std::fabs(lse) + std::fabs(xr[int64_t(target)]);
  if (a.label_smoothing != 0) {
    double s = 0;
    for (int64_t j = 0; j < cols; ++j) s += std::fabs(xr[j]);
    m += a.label_smoothing * (std::fabs(lse) + s / double(cols));
  }
  if (a.z_loss != 0) m += 3 * a.z_loss * lse * lse;
  return m;
}

namespace {

// A cross-entropy row's tolerance. Losses and lse (fp32): tolerance_for(f32, ce_row_magnitude). dx:
// the storage type's, with both parts widened by 2 u m, m = |lse| + log2(cols) + 4 (a fused kernel's
// own lse carries u m of error into every p_j = exp(x_j - lse), relative, and into p_t - 1 where it
// cancels), the absolute part times the row's |g| (1 + 2 z |lse|), g its upstream gradient over the
// mean's count, and never below fp32's smallest normal (flushed) or fp16's subnormal spacing.
Tolerance ce_row_tolerance(Op op, DType t, int output, const std::vector<const double*>& in, int64_t r, int64_t cols,
                           const Args& a) {
  const double* xr = in[0] + r * cols;
  const double target = in[1][r];
  if (target == double(a.ignore_index)) return {0, 0};  // exactly 0
  const double lse = op == Op::cross_entropy_backward ? in[2][r] : ref::logsumexp(xr, cols);
  const bool dx = output == 0 && op != Op::cross_entropy;
  if (!dx) {
    const double m = ce_row_magnitude(xr, cols, target, lse, a);
    return std::isfinite(m) ? tolerance_for(DType::f32, m) : tolerance_for(DType::f32);
  }
  Tolerance tol = tolerance_for(t);
  const double u = std::ldexp(1.0, -24), m = std::fabs(lse) + std::log2(double(cols)) + 4;
  if (!std::isfinite(m)) return tol;  // a NaN row: NaN-aware compare
  int64_t valid = a.valid_rows;
  if (valid < 0) valid = 1;  // unknown here: the caller's rows are a sample
  const double w = a.reduction == Reduction::mean ? 1.0 / double(std::max<int64_t>(valid, 1)) : 1.0;
  const double g = (op == Op::cross_entropy_backward ? in[3][r] : double(a.loss_grad)) * w;
  const double gs = std::fabs(g) * (1 + 2 * double(a.z_loss) * std::fabs(lse));
  tol.rtol = std::max(tol.rtol, 2 * u * m);
  tol.atol = std::max({std::max(tol.atol, 2 * u * m) * gs, double(std::numeric_limits<float>::min()),
                       t == DType::f16 ? std::ldexp(1.0, -24) : 0.0});
  return tol;
}

}  // namespace

Tolerance op_row_tolerance(Op op, DType t, int output, const std::vector<const double*>& in,
                           const std::vector<double*>& ref, int64_t r, int64_t cols, const Args* args) {
  static const Args kDefaults;
  if (op_is_cross_entropy(op)) return ce_row_tolerance(op, t, output, in, r, cols, args ? *args : kDefaults);
  Tolerance tol = op_tolerance(op, t, output);
  if (op == Op::softmax_backward || op == Op::log_softmax_backward) {
    // The row's reduction (sum(dy * y), or sum(dy)) carries fp32 error relative to the sum of the
    // magnitudes of its terms, and every dx of the row inherits it (times y, or exp(y)): the
    // absolute part grows with that sum, as log-softmax's grows with |x|.
    const double* yr = in[0] + r * cols;
    const double* dyr = in[1] + r * cols;
    double terms = 0, scale = 0;
    for (int64_t j = 0; j < cols; ++j) {
      const double w = op == Op::softmax_backward ? yr[j] : std::exp(yr[j]);
      terms += std::fabs(dyr[j] * (op == Op::softmax_backward ? yr[j] : 1.0));
      scale = std::max(scale, std::fabs(w));
    }
    if (std::isfinite(terms) && std::isfinite(scale)) tol.atol *= std::max(1.0, terms * scale);
    return tol;
  }
  if ((op == Op::layer_norm_backward || op == Op::rms_norm_backward) && output == 0) {
    // dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * gamma: the two row means carry fp32
    // error relative to the means of their terms' magnitudes, and every dx of the row inherits it
    // (times rstd, and |xhat| for the second), beside the few ulps of each term. Where the terms
    // cancel, dx is near 0 and the absolute part must cover them: it grows with
    // rstd * (max|g| + mean|g| + max|xhat| * mean|g * xhat|), about 316 |g| for a constant row.
    const bool ln = op == Op::layer_norm_backward;
    const double* xr = in[0] + r * cols;
    const double* dyr = in[1] + r * cols;
    const double mu = ln ? in[3][r] : 0.0, rs = in[ln ? 4 : 3][r];
    double max_g = 0, sum_g = 0, max_xhat = 0, sum_gx = 0;
    for (int64_t j = 0; j < cols; ++j) {
      const double g = std::fabs(dyr[j] * in[2][j]), xhat = std::fabs((xr[j] - mu) * rs);
      max_g = std::max(max_g, g);
      sum_g += g;
      max_xhat = std::max(max_xhat, xhat);
      sum_gx += g * xhat;
    }
    const double terms = std::fabs(rs) * (max_g + sum_g / double(cols) + max_xhat * sum_gx / double(cols));
    if (std::isfinite(terms)) tol.atol *= std::max(1.0, terms);  // NaN rows: NaN-aware compare
    return tol;
  }
  if (op != Op::layer_norm) return tol;
  // fp32 statistics of a row hold its mean to a few ulps of |mean|: relative to the row's spread
  // that is ulp(|mean|) * rstd. A row far from zero (the +1000 special row) is ill-conditioned
  // for any fp32 implementation, so the tolerance grows with |mean| * rstd (and |gamma| for y).
  const double* xr = in[0] + r * cols;
  const double mean = ref[1][r], rstd = ref[2][r];
  if (!std::isfinite(mean) || !std::isfinite(rstd)) return tol;  // NaN rows: NaN-aware compare
  const double cond = std::max(1.0, std::fabs(mean) * rstd);
  double max_abs_x = 0, max_gamma = 1;
  for (int64_t j = 0; j < cols; ++j) max_abs_x = std::max(max_abs_x, std::fabs(xr[j]));
  for (int64_t j = 0; j < cols; ++j) max_gamma = std::max(max_gamma, std::fabs(in[1][j]));
  switch (output) {
    case 0:  // y = (x - mean) * rstd * gamma + beta
      tol.atol *= cond * max_gamma;
      break;
    case 1:  // mean: a sum of cols terms of size up to max|x|
      tol.atol = std::max(tol.atol, 1e-6 * max_abs_x);
      break;
    default:  // rstd: the variance carries the mean's relative error, about 2^-24 * |mean| / std
      tol.rtol = std::max(tol.rtol, 8.0 * std::ldexp(1.0, -24) * cond);
      break;
  }
  return tol;
}

// An fp32 column sum over `rows` rows, in units of u = 2^-24 (fp32's unit roundoff) of the sum of
// its terms' magnitudes M:
// - each term (dy * xhat, dy) is formed from fp32 values with at most three roundings, and the
//   sum is rounded once to fp32 at the end: 3.5 u M whatever the order (8 with a margin);
// - the additions: a kernel adds the rows in some tree of fp32 additions (rows in a thread, then
//   threads, then the blocks' partials) whose depth we do not know, at most `rows`. The worst case
//   grows like depth * u * M, but roundoff errors are unbiased and close to independent, and then
//   the error stays below lambda sqrt(depth) u M except with probability about
//   2 depth exp(-lambda^2 / 2) (Higham and Mary, "A new approach to probabilistic rounding error
//   analysis", SIAM J. Sci. Comput. 41(5), 2019): with lambda = 8, below 3e-8 up to 10^6 rows.
// The linear bound would pass wrong sums: at 100000 rows of 64 columns (M about 64000), a missing
// block of 256 rows moves a column by about 16 (256 terms of size 1 with random signs), inside
// rows * u * M = 380 but not (8 + 8 sqrt(rows)) u M = 10. What the square root assumes: no bias,
// which one fp32 accumulator adding many same-sign terms (a sum of |dy|) can break as it grows
// past them; a kernel's blocked partials stay far inside.
Tolerance col_sum_tolerance(double magnitude, int64_t rows) {
  const double units = 8.0 + 8.0 * std::sqrt(double(std::max<int64_t>(rows, 1)));
  // Below fp32's smallest normal, flushed subnormals are not an error of the sum.
  return {std::max(units * std::ldexp(magnitude, -24), double(std::numeric_limits<float>::min())), 0.0};
}

CompareResult compare_col_sum(const double* got, const double* want, const double* magnitude, int64_t rows,
                              int64_t cols) {
  CompareResult all;
  const int64_t every_row = -1;  // the report's row: a sum over every row
  for (int64_t c = 0; c < cols; ++c) {
    const Tolerance tol = col_sum_tolerance(magnitude[c], rows);
    CompareResult r = compare(got + c, want + c, 1, 1, tol, &every_row);
    for (Mismatch& m : r.first) m.col = c;
    // Reported, not judged (no rtol), where the sum is larger than its tolerance: not cancelled away.
    if (std::isfinite(got[c]) && std::isfinite(want[c]) && std::fabs(want[c]) >= tol.atol)
      r.max_rel_err = std::fabs(got[c] - want[c]) / std::fabs(want[c]);
    merge(all, r);
  }
  return all;
}

double round_to_type(DType t, double v) {
  switch (t) {
    case DType::f32:
      return ref::round_to_f32(v);
    case DType::f16:
      return ref::round_to_f16(v);
    case DType::bf16:
      return ref::round_to_bf16(v);
    case DType::u8:
    case DType::i32:
      return v;
  }
  return v;
}

CompareResult compare_output(Op op, DType t, int output, const std::vector<const double*>& in,
                             const std::vector<double*>& ref, const double* got, int64_t rows, int64_t cols,
                             const int64_t* row_ids, int threads, const Args* args) {
  const OpSpec& spec = op_spec(op);
  if (is_row_sum(spec.outputs[size_t(output)].extent))
    throw std::invalid_argument(std::string(op_name(op)) + ": output '" + spec.outputs[size_t(output)].name +
                                "' is a column sum over every row: compare_col_sum judges it");
  const DType ot = tensor_dtype(spec.outputs[size_t(output)].elem, t);
  const int64_t width = spec.outputs[size_t(output)].extent == Extent::matrix ? cols : 1;
  const double* want = ref[size_t(output)];
  // Only a value past the type's largest finite one can round to +-inf.
  const double max_finite = ot == DType::f16 ? 65504.0 : ot == DType::bf16 ? 0x1.fep127 : 0x1.fffffep127;
  const bool exact = op_is_exact(op);
  // Elementwise operations (the exact ones among them) in chunks of elements, under one
  // tolerance; row-wise ones in chunks of rows, under each row's.
  const bool flat = op_is_elementwise(op) || exact;
  const int64_t units = flat ? rows * width : rows, unit = flat ? 1 : width;
  std::vector<CompareResult> part(size_t(std::max(threads, 1)));
  parallel_ranges(
      units, std::max<int64_t>(1, kHostGrain / std::max<int64_t>(unit, 1)),
      [&](size_t k, IndexRange u) {
        const int64_t b = u.begin * unit, n = (u.end - u.begin) * unit;  // elements
        std::vector<double> w(want + b, want + b + n);
        for (double& v : w) {
          if (exact)
            v = round_to_type(ot, v);
          else if (std::isfinite(v) && std::fabs(v) > max_finite && std::isinf(round_to_type(ot, v)))
            v = round_to_type(ot, v);
        }
        CompareResult& p = part[k];
        if (flat) {
          // Exact: a tolerance of zero, and element_ok's NaN matching NaN.
          p = compare(got + b, w.data(), 1, n, exact ? Tolerance{0, 0} : op_tolerance(op, t, output));
          for (Mismatch& m : p.first) {  // chunk-relative columns to (row, col) of the tensor
            const int64_t e = b + m.col;
            m.row = row_ids ? row_ids[e / width] : e / width;
            m.col = e % width;
          }
        } else {
          for (int64_t i = u.begin; i < u.end; ++i) {
            const Tolerance tol = op_row_tolerance(op, t, output, in, ref, i, cols, args);
            const int64_t id = row_ids ? row_ids[i] : i;
            merge(p, compare(got + i * width, w.data() + (i - u.begin) * width, 1, width, tol, &id));
          }
        }
      },
      threads);
  CompareResult all;
  for (const CompareResult& p : part) merge(all, p);
  return all;
}

}  // namespace course
