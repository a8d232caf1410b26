/// @file reference.h
/// @brief Float64 CPU references for every operation of the course.
///
/// Inputs are widened exactly to double; every function works row by row on row-major
/// `rows x cols` data. Special values follow PyTorch: a row holding NaN or +inf, or made only of
/// -inf, gives a NaN row; -inf elements of an otherwise finite row give exactly 0 (softmax) or
/// -inf (log-softmax).
#pragma once

#include <cstdint>

namespace course::ref {

/// y = exp(x - max) / sum(exp(x - max)) per row.
void softmax(const double* x, int64_t rows, int64_t cols, double* y);

/// y = x - max - log(sum(exp(x - max))) per row.
void log_softmax(const double* x, int64_t rows, int64_t cols, double* y);

/// Softmax backward: dx = y * (dy - sum(dy * y)) per row, y the forward output.
void softmax_backward(const double* y, const double* dy, int64_t rows, int64_t cols, double* dx);

/// Log-softmax backward: dx = dy - exp(y) * sum(dy) per row, y the forward output.
void log_softmax_backward(const double* y, const double* dy, int64_t rows, int64_t cols, double* dx);

/// LayerNorm over the last dimension: y = (x - mean) * rstd * gamma + beta, with
/// rstd = 1 / sqrt(var + eps), var the biased (population) variance, clamped at 0.
/// mean and rstd are per row. eps is taken as the kernels take it: an fp32 value. A row holding
/// an infinity or a NaN gives NaN y, mean and rstd (PyTorch's Welford reaches inf - inf).
void layer_norm(const double* x, const double* gamma, const double* beta, int64_t rows, int64_t cols, float eps,
                double* y, double* mean, double* rstd);

/// LayerNorm's statistics of one row of `cols` elements, as layer_norm() computes them: the mean and
/// 1 / sqrt(var + eps); both NaN for a row holding an infinity or a NaN.
void layer_norm_stats(const double* x, int64_t cols, float eps, double* mean, double* rstd);

/// LayerNorm backward from the forward's saved per-row mean and rstd: with xhat = (x - mean) * rstd
/// and g = dy * gamma, dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) per row; the column sums
/// of dy * xhat and of dy over these rows are ADDED to dgamma and dbeta (cols each), so that row
/// chunks accumulate into one sum.
void layer_norm_backward(const double* x, const double* dy, const double* gamma, const double* mean,
                         const double* rstd, int64_t rows, int64_t cols, double* dx, double* dgamma, double* dbeta);

/// RMSNorm: y = x * rstd * gamma, rstd = 1 / sqrt(mean(x^2) + eps) per row (saved).
void rms_norm(const double* x, const double* gamma, int64_t rows, int64_t cols, float eps, double* y, double* rstd);

/// RMSNorm's rstd of one row of `cols` elements, as rms_norm() computes it: 1 / sqrt(mean(x^2) + eps)
/// (0 for a row holding an infinity, NaN for one holding a NaN: IEEE arithmetic, as PyTorch's).
double rms_norm_rstd(const double* x, int64_t cols, float eps);

/// RMSNorm backward from the saved rstd: with xhat = x * rstd and g = dy * gamma,
/// dx = rstd * (g - xhat * mean(g * xhat)) per row; the column sums of dy * xhat are ADDED to dgamma.
void rms_norm_backward(const double* x, const double* dy, const double* gamma, const double* rstd, int64_t rows,
                       int64_t cols, double* dx, double* dgamma);

/// Cross-entropy's logsumexp of one row of `cols` logits: max + log(sum(exp(x - max))); NaN where
/// PyTorch's log_softmax gives a NaN row (a NaN, a +inf, or every element -inf).
double logsumexp(const double* x, int64_t cols);

/// Cross-entropy per row, target t[r] (a class index widened to double), e = `smoothing`,
/// z = `z_loss`: loss = (1 - e)(lse - x_t) + e (lse - mean_j x_j) + z lse^2 and lse = logsumexp(x).
/// A row whose target is `ignore_index` gives loss 0 and lse 0 (unread); a target outside [0, cols)
/// gives NaN for both. PyTorch's special values follow from the formula: a NaN row gives NaN, a row of
/// -inf but a finite x_t gives lse = x_t and loss 0 (with e > 0: +inf, mean(x) being -inf).
void cross_entropy(const double* x, const double* target, int64_t rows, int64_t cols, int64_t ignore_index,
                   double smoothing, double z_loss, double* loss, double* lse);

/// Cross-entropy backward per row from the saved `lse` and the row's scale `g` (the upstream gradient,
/// already divided by the count of rows not ignored for a mean):
/// dx_j = g (p_j (1 + 2 z lse) - (1 - e) [j == t] - e / cols), p_j = exp(x_j - lse).
/// Rows whose target is `ignore_index` give dx = 0; a target outside [0, cols) gives a NaN row.
void cross_entropy_backward(const double* x, const double* target, const double* lse, const double* g,
                            int64_t rows, int64_t cols, int64_t ignore_index, double smoothing, double z_loss,
                            double* dx);

/// ReduceScale: y = x / max(|x|) per row (PyTorch: `x / x.abs().amax(1, keepdim=True)`).
void reduce_scale(const double* x, int64_t rows, int64_t cols, double* y);

/// ReLU: max(x, 0); NaN stays NaN.
double relu(double x);
/// GELU, erf form: 0.5 * x * (1 + erf(x / sqrt(2))) = x * Phi(x), evaluated through erfc.
double gelu(double x);
/// x * s.
double scale(double x, double s);
/// Fused multiply-add a * b + c (ternary).
double fma3(double a, double b, double c);

/// The fp16 value nearest to v, ties to even; overflow gives +-inf, NaN stays NaN.
/// Written from the IEEE 754 binary16 definition, independent of the CUDA headers.
double round_to_f16(double v);
/// The bf16 value nearest to v, ties to even; overflow gives +-inf, NaN stays NaN.
double round_to_bf16(double v);
/// The fp32 value nearest to v (the hardware's round to nearest even).
double round_to_f32(double v);

}  // namespace course::ref
