/// @file ops.h
/// @brief The operations of the course as the harness sees them: tensors, bytes model,
/// reference and tolerance. Host-only, so that it is unit-tested without a GPU.
#pragma once

#include <cstdint>

#include "course/compare.h"
#include "course/dtype.h"

namespace course {

/// An operation a chapter can register kernels for.
enum class Op {
  copy,          ///< y = x (chapter 00's ceiling): Args x -> y
  softmax,       ///< y = softmax(x) over each row: Args x -> y
  log_softmax,   ///< y = log_softmax(x) over each row: Args x -> y
  reduce_scale,  ///< x = x / max(|x|) over each row, in place: Args x == y
};

/// "copy", "softmax", "log_softmax": the first part of every benchmark name.
const char* op_name(Op op);

/// Bytes the operation must move through device memory: each input read once, each output
/// written once. The effective bandwidth of a kernel is this over its time.
int64_t bytes_moved(Op op, int64_t rows, int64_t cols, DType t);

/// Float64 reference for `rows` rows: x (and dy where the op has it) in, y out.
void reference(Op op, const double* x, const double* dy, int64_t rows, int64_t cols, double* y);

/// The comparison's tolerance for this op's output in storage type t.
Tolerance op_tolerance(Op op, DType t);

/// True when the output must equal the reference bit for bit (copy).
bool op_is_exact(Op op);

/// True when the operation overwrites its input (the launcher gets x == y).
bool op_in_place(Op op);

}  // namespace course
