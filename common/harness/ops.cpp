#include "harness/ops.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "harness/errors.h"
#include "harness/reference.h"

namespace course {

namespace {

const InputSpec kX{"x", &Args::x, Extent::matrix, Elem::storage};
const OutputSpec kY{"y", &Args::y, Extent::matrix, Elem::storage};

}  // namespace

const OpSpec& op_spec(Op op) {
  static const OpSpec unary{{kX}, {kY}};
  static const OpSpec layer_norm{{kX, {"gamma", &Args::gamma, Extent::per_col, Elem::storage},
                                  {"beta", &Args::beta, Extent::per_col, Elem::storage}},
                                 {kY, {"mean", &Args::mean, Extent::per_row, Elem::f32},
                                  {"rstd", &Args::rstd, Extent::per_row, Elem::f32}}};
  static const OpSpec mul{{kX, {"b", &Args::b, Extent::matrix, Elem::storage}}, {kY}};
  static const OpSpec fma{{kX, {"b", &Args::b, Extent::matrix, Elem::storage}, {"c", &Args::c, Extent::matrix, Elem::storage}},
                          {kY}};
  static const OpSpec to_f32{{kX}, {{"y", &Args::y, Extent::matrix, Elem::f32}}};
  static const OpSpec from_f32{{{"x", &Args::x, Extent::matrix, Elem::f32}}, {kY}};
  // Backward: the forward output y (in Args::x) and the upstream gradient dy; dx in Args::y.
  static const OpSpec backward{{{"y", &Args::x, Extent::matrix, Elem::storage}, {"dy", &Args::dy, Extent::matrix, Elem::storage}},
                               {{"dx", &Args::y, Extent::matrix, Elem::storage}}};
  static const OpSpec masked{{kX, {"mask", &Args::b, Extent::matrix, Elem::u8}}, {kY}};
  static const InputSpec kDy{"dy", &Args::dy, Extent::matrix, Elem::storage};
  static const InputSpec kGamma{"gamma", &Args::gamma, Extent::per_col, Elem::storage};
  static const OutputSpec kDx{"dx", &Args::y, Extent::matrix, Elem::storage};
  static const OutputSpec kDgamma{"dgamma", &Args::dgamma, Extent::col_sum, Elem::f32};
  // The saved statistics are derived from x as the forward saves them (Source), not drawn.
  static const InputSpec kSavedRstd{"rstd", &Args::saved_rstd, Extent::per_row, Elem::f32, Source::saved_rstd};
  static const OpSpec layer_norm_backward{
      {kX, kDy, kGamma, {"mean", &Args::saved_mean, Extent::per_row, Elem::f32, Source::saved_mean}, kSavedRstd},
      {kDx, kDgamma, {"dbeta", &Args::dbeta, Extent::col_sum, Elem::f32}}};
  static const OpSpec rms_norm{{kX, kGamma}, {kY, {"rstd", &Args::rstd, Extent::per_row, Elem::f32}}};
  static const OpSpec rms_norm_backward{{kX, kDy, kGamma, kSavedRstd}, {kDx, kDgamma}};
  // Cross-entropy (#41): the targets are int32 per row; the losses and lse are fp32 whatever the
  // logits' type; the reduction is one fp32 judged against every row (Extent::scalar). The backward's
  // dloss is per row (see Op::cross_entropy_backward); the fused call's upstream gradient is a scalar
  // of Args (loss_grad), as loss.backward() gives it.
  static const InputSpec kTarget{"target", &Args::target, Extent::per_row, Elem::i32};
  static const OutputSpec kLoss{"loss", &Args::loss, Extent::per_row, Elem::f32};
  static const OutputSpec kReduced{"loss_reduced", &Args::loss_reduced, Extent::scalar, Elem::f32};
  static const OpSpec cross_entropy{{kX, kTarget}, {kLoss, {"lse", &Args::lse, Extent::per_row, Elem::f32}, kReduced}};
  static const OpSpec cross_entropy_backward{
      {kX, kTarget, {"lse", &Args::saved_lse, Extent::per_row, Elem::f32, Source::saved_lse},
       {"dloss", &Args::dloss, Extent::per_row, Elem::f32}},
      {kDx}};
  static const OpSpec cross_entropy_fused{{kX, kTarget}, {kDx, kLoss, kReduced}};
  switch (op) {
    case Op::cross_entropy:
      return cross_entropy;
    case Op::cross_entropy_backward:
      return cross_entropy_backward;
    case Op::cross_entropy_fused:
      return cross_entropy_fused;
    case Op::layer_norm:
      return layer_norm;
    case Op::layer_norm_backward:
      return layer_norm_backward;
    case Op::rms_norm:
      return rms_norm;
    case Op::rms_norm_backward:
      return rms_norm_backward;
    case Op::scale_mask_softmax:
      return masked;
    case Op::mul:
      return mul;
    case Op::fma:
      return fma;
    case Op::cast_to_f32:
      return to_f32;
    case Op::cast_from_f32:
      return from_f32;
    case Op::softmax_backward:
    case Op::log_softmax_backward:
      return backward;
    default:
      return unary;
  }
}

const char* op_name(Op op) {
  switch (op) {
    case Op::copy:
      return "copy";
    case Op::softmax:
      return "softmax";
    case Op::log_softmax:
      return "log_softmax";
    case Op::reduce_scale:
      return "reduce_scale";
    case Op::layer_norm:
      return "layer_norm";
    case Op::relu:
      return "relu";
    case Op::gelu:
      return "gelu";
    case Op::scale:
      return "scale";
    case Op::mul:
      return "mul";
    case Op::fma:
      return "fma";
    case Op::cast_to_f32:
      return "cast_to_f32";
    case Op::cast_from_f32:
      return "cast_from_f32";
    case Op::softmax_backward:
      return "softmax_backward";
    case Op::log_softmax_backward:
      return "log_softmax_backward";
    case Op::scale_mask_softmax:
      return "scale_mask_softmax";
    case Op::layer_norm_backward:
      return "layer_norm_backward";
    case Op::rms_norm:
      return "rms_norm";
    case Op::rms_norm_backward:
      return "rms_norm_backward";
    case Op::cross_entropy:
      return "cross_entropy";
    case Op::cross_entropy_backward:
      return "cross_entropy_backward";
    case Op::cross_entropy_fused:
      return "cross_entropy_fused";
  }
  return "?";
}

const char* reduction_name(Reduction r) {
  switch (r) {
    case Reduction::none:
      return "none";
    case Reduction::mean:
      return "mean";
    case Reduction::sum:
      return "sum";
  }
  return "?";
}

bool op_is_cross_entropy(Op op) {
  return op == Op::cross_entropy || op == Op::cross_entropy_backward || op == Op::cross_entropy_fused;
}

int64_t extent_elems(Extent e, int64_t rows, int64_t cols) {
  switch (e) {
    case Extent::matrix:
      return rows * cols;
    case Extent::per_col:
    case Extent::col_sum:
      return cols;
    case Extent::per_row:
      return rows;
    case Extent::scalar:
      return 1;
  }
  return 0;
}

int64_t bytes_moved(Op op, int64_t rows, int64_t cols, DType t) {
  const OpSpec& s = op_spec(op);
  int64_t bytes = 0;
  for (const InputSpec& i : s.inputs) bytes += extent_elems(i.extent, rows, cols) * dtype_size(tensor_dtype(i.elem, t));
  for (const OutputSpec& o : s.outputs)
    bytes += extent_elems(o.extent, rows, cols) * dtype_size(tensor_dtype(o.elem, t));
  // In place (ReduceScale): x read once, written once, as for any unary op. Cross-entropy: the logits
  // read once, 4 bytes a row of targets (and of the backward's lse and dloss), 4 bytes a row of each
  // per-row output, 4 bytes of the reduction, and dx written once (backward, fused).
  return bytes;
}

Tolerance op_tolerance(Op op, DType t, int output) {
  switch (op) {
    case Op::copy:
    case Op::relu:
    case Op::cast_to_f32:
    case Op::cast_from_f32:
      return {0, 0};  // exact (op_is_exact)
    // x - max - log(sum): the log of a sum over many columns carries about 1e-6 of absolute
    // fp32 error, so outputs near 0 need a wider absolute part.
    case Op::log_softmax:
      return tolerance_for(t, 10.0);
    case Op::layer_norm:  // mean and rstd are fp32 whatever the storage type
    case Op::rms_norm:
      return tolerance_for(output == 0 ? t : DType::f32);
    // dx (plus a per-row absolute part, op_row_tolerance). The column sums are judged per column
    // by compare_col_sum (col_sum_tolerance); this is not theirs.
    case Op::layer_norm_backward:
    case Op::rms_norm_backward:
      return output == 0 ? tolerance_for(t, 4.0) : tolerance_for(DType::f32);
    // Cross-entropy: dx in the storage type, the losses, lse and reduction in fp32, each widened per row
    // (op_row_tolerance) with the row's magnitude and upstream gradient.
    case Op::cross_entropy:
      return tolerance_for(DType::f32);
    case Op::cross_entropy_backward:
    case Op::cross_entropy_fused:
      return output == 0 ? tolerance_for(t) : tolerance_for(DType::f32);
    default:  // softmax, reduce_scale, gelu, scale, mul, fma, the backward ops (plus a per-row absolute part,
              // op_row_tolerance): the output's rounding and a few fp32 ulps
      return tolerance_for(t);
  }
}


bool op_is_exact(Op op) {
  return op == Op::copy || op == Op::relu || op == Op::cast_to_f32 || op == Op::cast_from_f32;
}

bool op_in_place(Op op) { return op == Op::reduce_scale; }

bool op_is_elementwise(Op op) {
  switch (op) {
    case Op::copy:
    case Op::relu:
    case Op::gelu:
    case Op::scale:
    case Op::mul:
    case Op::fma:
    case Op::cast_to_f32:
    case Op::cast_from_f32:
      return true;
    default:
      return false;
  }
}

}  // namespace course
