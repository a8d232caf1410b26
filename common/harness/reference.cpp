#include "harness/reference.h"

#include <cmath>
#include <limits>

namespace course::ref {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct RowStats {
  double max;    // largest element (NaN-aware: NaN if any element is NaN)
  bool nan_row;  // PyTorch gives a NaN row: a NaN, a +inf, or nothing but -inf
};

RowStats row_stats(const double* x, int64_t cols) {
  double m = -std::numeric_limits<double>::infinity();
  bool any_nan = false;
  for (int64_t j = 0; j < cols; ++j) {
    if (std::isnan(x[j]))
      any_nan = true;
    else if (x[j] > m)
      m = x[j];
  }
  bool nan_row = any_nan || std::isinf(m);  // +inf present, or every element -inf
  return {nan_row ? kNaN : m, nan_row};
}

// Rounds a finite or infinite double to a binary format with `mant` explicit mantissa bits,
// exponent range [emin, emax] (normal numbers), subnormals below, ties to even.
double round_to_format(double v, int mant, int emin, int emax) {
  if (std::isnan(v) || std::isinf(v) || v == 0) return v;
  double a = std::fabs(v);
  int e = std::ilogb(a);   // a in [2^e, 2^(e+1))
  if (e < emin) e = emin;  // subnormal range: fixed spacing 2^(emin - mant)
  double ulp = std::ldexp(1.0, e - mant);
  double q = a / ulp;  // exact: scaling by a power of two
  double fl = std::floor(q);
  double rem = q - fl;
  double r = fl;
  if (rem > 0.5 || (rem == 0.5 && std::fmod(fl, 2.0) != 0)) r = fl + 1;
  double out = r * ulp;
  double max_finite = std::ldexp(2.0 - std::ldexp(1.0, -mant), emax);
  // Round-to-nearest overflows to inf once the value reaches max_finite + ulp(max)/2.
  if (out > max_finite) out = std::numeric_limits<double>::infinity();
  return std::copysign(out, v);
}

}  // namespace

void softmax(const double* x, int64_t rows, int64_t cols, double* y) {
  for (int64_t r = 0; r < rows; ++r) {
    const double* xr = x + r * cols;
    double* yr = y + r * cols;
    RowStats s = row_stats(xr, cols);
    if (s.nan_row) {
      for (int64_t j = 0; j < cols; ++j) yr[j] = kNaN;
      continue;
    }
    double sum = 0;
    for (int64_t j = 0; j < cols; ++j) sum += std::exp(xr[j] - s.max);
    for (int64_t j = 0; j < cols; ++j) yr[j] = std::exp(xr[j] - s.max) / sum;
  }
}

void log_softmax(const double* x, int64_t rows, int64_t cols, double* y) {
  for (int64_t r = 0; r < rows; ++r) {
    const double* xr = x + r * cols;
    double* yr = y + r * cols;
    RowStats s = row_stats(xr, cols);
    if (s.nan_row) {
      for (int64_t j = 0; j < cols; ++j) yr[j] = kNaN;
      continue;
    }
    double sum = 0;
    for (int64_t j = 0; j < cols; ++j) sum += std::exp(xr[j] - s.max);
    double lse = std::log(sum);
    for (int64_t j = 0; j < cols; ++j) yr[j] = (xr[j] - s.max) - lse;
  }
}

void softmax_backward(const double* y, const double* dy, int64_t rows, int64_t cols, double* dx) {
  for (int64_t r = 0; r < rows; ++r) {
    const double* yr = y + r * cols;
    const double* dyr = dy + r * cols;
    double dot = 0;
    for (int64_t j = 0; j < cols; ++j) dot += dyr[j] * yr[j];
    for (int64_t j = 0; j < cols; ++j) dx[r * cols + j] = yr[j] * (dyr[j] - dot);
  }
}

void log_softmax_backward(const double* y, const double* dy, int64_t rows, int64_t cols, double* dx) {
  for (int64_t r = 0; r < rows; ++r) {
    const double* yr = y + r * cols;
    const double* dyr = dy + r * cols;
    double sum = 0;
    for (int64_t j = 0; j < cols; ++j) sum += dyr[j];
    for (int64_t j = 0; j < cols; ++j) dx[r * cols + j] = dyr[j] - std::exp(yr[j]) * sum;
  }
}

void layer_norm_stats(const double* x, int64_t cols, float eps, double* mean, double* rstd) {
  bool finite = true;
  for (int64_t j = 0; j < cols; ++j) finite = finite && std::isfinite(x[j]);
  if (!finite) {  // inf - inf inside any mean/variance update: NaN, as in PyTorch
    *mean = *rstd = kNaN;
    return;
  }
  double m = 0;
  for (int64_t j = 0; j < cols; ++j) m += x[j];
  m /= static_cast<double>(cols);
  double var = 0;  // two passes in double: exact enough to judge fp32 Welford
  for (int64_t j = 0; j < cols; ++j) var += (x[j] - m) * (x[j] - m);
  var /= static_cast<double>(cols);
  if (var < 0) var = 0;
  *mean = m;
  *rstd = 1.0 / std::sqrt(var + static_cast<double>(eps));
}

void layer_norm(const double* x, const double* gamma, const double* beta, int64_t rows, int64_t cols, float eps,
                double* y, double* mean, double* rstd) {
  for (int64_t r = 0; r < rows; ++r) {
    const double* xr = x + r * cols;
    layer_norm_stats(xr, cols, eps, &mean[r], &rstd[r]);
    const double m = mean[r], rs = rstd[r];  // NaN for a row with an infinity or a NaN: NaN y
    for (int64_t j = 0; j < cols; ++j) y[r * cols + j] = (xr[j] - m) * rs * gamma[j] + beta[j];
  }
}

void reduce_scale(const double* x, int64_t rows, int64_t cols, double* y) {
  for (int64_t r = 0; r < rows; ++r) {
    const double* xr = x + r * cols;
    double amax = 0;
    bool any_nan = false;
    for (int64_t j = 0; j < cols; ++j) {
      if (std::isnan(xr[j]))
        any_nan = true;
      else
        amax = std::fmax(amax, std::fabs(xr[j]));
    }
    if (any_nan) amax = kNaN;  // amax propagates NaN, as torch.amax does
    for (int64_t j = 0; j < cols; ++j) y[r * cols + j] = xr[j] / amax;
  }
}

double logsumexp(const double* x, int64_t cols) {
  const RowStats s = row_stats(x, cols);
  if (s.nan_row) return kNaN;
  double sum = 0;
  for (int64_t j = 0; j < cols; ++j) sum += std::exp(x[j] - s.max);
  return s.max + std::log(sum);
}

namespace {
// The class of a row, or -1 when it is ignored, or -2 when it is outside [0, cols).
int64_t row_class(double t, int64_t cols, int64_t ignore_index) {
  if (t == double(ignore_index)) return -1;
  if (!(t >= 0 && t < double(cols))) return -2;
  return int64_t(t);
}
}  // namespace

void cross_entropy(const double* x, const double* target, int64_t rows, int64_t cols, int64_t ignore_index,
                   double smoothing, double z_loss, double* loss, double* lse) {
  for (int64_t r = 0; r < rows; ++r) {
    const double* xr = x + r * cols;
    const int64_t t = row_class(target[r], cols, ignore_index);
    if (t == -1) {
      loss[r] = lse[r] = 0;
      continue;
    }
    const double l = logsumexp(xr, cols);
    if (t == -2) {
      loss[r] = lse[r] = kNaN;
      continue;
    }
    double v = (1 - smoothing) * (l - xr[t]);
    if (smoothing != 0) {
      double sum = 0;
      for (int64_t j = 0; j < cols; ++j) sum += xr[j];
      v += smoothing * (l - sum / double(cols));
    }
    if (z_loss != 0) v += z_loss * l * l;
    loss[r] = v;
    lse[r] = l;
  }
}

void cross_entropy_backward(const double* x, const double* target, const double* lse, const double* g,
                            int64_t rows, int64_t cols, int64_t ignore_index, double smoothing, double z_loss,
                            double* dx) {
  for (int64_t r = 0; r < rows; ++r) {
    const double* xr = x + r * cols;
    double* d = dx + r * cols;
    const int64_t t = row_class(target[r], cols, ignore_index);
    if (t < 0) {
      for (int64_t j = 0; j < cols; ++j) d[j] = t == -1 ? 0.0 : kNaN;
      continue;
    }
    const double l = lse[r], scale = g[r], zfac = 1 + 2 * z_loss * l, off = smoothing / double(cols);
    for (int64_t j = 0; j < cols; ++j) {
      const double p = std::exp(xr[j] - l);  // NaN for every j where lse is NaN
      d[j] = scale * (p * zfac - (j == t ? 1 - smoothing : 0.0) - off);
    }
  }
}

double relu(double x) { return std::isnan(x) ? x : (x > 0 ? x : 0.0); }
// 0.5 * x * (1 + erf(x / sqrt(2))) written with erfc: 1 + erf(t) = erfc(-t), which keeps its
// relative accuracy where 1 + erf cancels (x below about -5).
double gelu(double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }
double scale(double x, double s) { return x * s; }
double fma3(double a, double b, double c) { return a * b + c; }

double round_to_f16(double v) { return round_to_format(v, 10, -14, 15); }
double round_to_bf16(double v) { return round_to_format(v, 7, -126, 127); }
double round_to_f32(double v) { return round_to_format(v, 23, -126, 127); }

void layer_norm_backward(const double* x, const double* dy, const double* gamma, const double* mean,
                         const double* rstd, int64_t rows, int64_t cols, double* dx, double* dgamma, double* dbeta) {
  for (int64_t r = 0; r < rows; ++r) {
    const double* xr = x + r * cols;
    const double* dyr = dy + r * cols;
    const double mu = mean[r], rs = rstd[r];
    double sum_g = 0, sum_gx = 0;
    for (int64_t c = 0; c < cols; ++c) {
      const double xhat = (xr[c] - mu) * rs, g = dyr[c] * gamma[c];
      sum_g += g;
      sum_gx += g * xhat;
      dgamma[c] += dyr[c] * xhat;
      dbeta[c] += dyr[c];
    }
    const double mean_g = sum_g / double(cols), mean_gx = sum_gx / double(cols);
    for (int64_t c = 0; c < cols; ++c) {
      const double xhat = (xr[c] - mu) * rs;
      dx[r * cols + c] = rs * (dyr[c] * gamma[c] - mean_g - xhat * mean_gx);
    }
  }
}

double rms_norm_rstd(const double* x, int64_t cols, float eps) {
  double ss = 0;
  for (int64_t c = 0; c < cols; ++c) ss += x[c] * x[c];
  return 1.0 / std::sqrt(ss / double(cols) + double(eps));
}

void rms_norm(const double* x, const double* gamma, int64_t rows, int64_t cols, float eps, double* y, double* rstd) {
  for (int64_t r = 0; r < rows; ++r) {
    const double* xr = x + r * cols;
    const double rs = rms_norm_rstd(xr, cols, eps);
    rstd[r] = rs;
    for (int64_t c = 0; c < cols; ++c) y[r * cols + c] = xr[c] * rs * gamma[c];
  }
}

void rms_norm_backward(const double* x, const double* dy, const double* gamma, const double* rstd, int64_t rows,
                       int64_t cols, double* dx, double* dgamma) {
  for (int64_t r = 0; r < rows; ++r) {
    const double* xr = x + r * cols;
    const double* dyr = dy + r * cols;
    const double rs = rstd[r];
    double sum_gx = 0;
    for (int64_t c = 0; c < cols; ++c) {
      const double xhat = xr[c] * rs;
      sum_gx += dyr[c] * gamma[c] * xhat;
      dgamma[c] += dyr[c] * xhat;
    }
    const double mean_gx = sum_gx / double(cols);
    for (int64_t c = 0; c < cols; ++c) dx[r * cols + c] = rs * (dyr[c] * gamma[c] - xr[c] * rs * mean_gx);
  }
}

}  // namespace course::ref
