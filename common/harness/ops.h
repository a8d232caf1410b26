/// @file ops.h
/// @brief The operations of the course as the harness sees them: their tensors, bytes model,
/// reference and tolerance. Host-only, so that it is unit-tested without a GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "harness/compare.h"
#include "harness/dtype.h"
#include "harness/parallel.h"

namespace course {

/// An operation a chapter can register kernels for. Row-wise operations see a rows x cols
/// matrix; elementwise ones see rows x cols contiguous elements as one flat array.
enum class Op {
  copy,           ///< y = x (chapter 00's ceiling)
  softmax,        ///< y = softmax(x) over each row
  log_softmax,    ///< y = log_softmax(x) over each row
  reduce_scale,   ///< x = x / max(|x|) over each row, in place (Args x == y)
  layer_norm,     ///< y = (x - mean) * rstd * gamma + beta over each row; mean, rstd per row (fp32)
  relu,           ///< y = max(x, 0), elementwise (NaN stays NaN)
  gelu,           ///< y = x * Phi(x) (the erf form), elementwise
  scale,          ///< y = alpha * x, elementwise
  mul,            ///< y = x * b, elementwise (binary)
  fma,            ///< y = x * b + c, elementwise (ternary)
  cast_to_f32,    ///< y (fp32) = x (the variant's fp16 or bf16)
  cast_from_f32,  ///< y (the variant's fp16 or bf16, nearest even) = x (fp32)
  softmax_backward,      ///< dx = y * (dy - sum(dy * y)) over each row: Args x = y (forward output), dy -> y = dx
  log_softmax_backward,  ///< dx = dy - exp(y) * sum(dy) over each row: Args x = y, dy -> y = dx
  scale_mask_softmax,    ///< y = softmax(mask ? -inf : x * alpha) over each row (x * alpha rounded to fp32);
                         ///< Args b = the mask, u8 (nonzero: masked), rows x cols
  layer_norm_backward,   ///< dx per row, dgamma and dbeta summed over every row, from x, dy, gamma and the
                         ///< forward's saved mean and rstd (Args saved_mean, saved_rstd, fp32)
  rms_norm,              ///< y = x * rstd * gamma over each row; rstd per row (fp32)
  rms_norm_backward,     ///< dx per row, dgamma summed over every row, from x, dy, gamma and saved rstd
  // Cross-entropy over a vocabulary of cols classes (issue #41): x the logits, Args target the class
  // of each row (int32; Args ignore_index marks a row left out), with Args label_smoothing, z_loss and
  // reduction. Each row's loss is (1 - e)(lse - x[t]) + e (lse - mean(x)) + z lse^2, lse = logsumexp(x).
  cross_entropy,           ///< loss and lse per row (fp32), and the reduction over every row (1 fp32)
  cross_entropy_backward,  ///< dx (Args y) from x, target, the saved lse and the rows' upstream gradient dloss
  cross_entropy_fused,     ///< loss per row, the reduction, and dx from one call (upstream gradient Args loss_grad)
};

/// How cross-entropy reduces the rows' losses (PyTorch's `reduction`).
enum class Reduction {
  none,  ///< each row's loss
  mean,  ///< the sum of the losses over the count of rows not ignored (NaN when every row is)
  sum,   ///< the sum of the losses
};

/// "none", "mean" or "sum".
const char* reduction_name(Reduction r);

/// Everything a launcher may need. Which fields an operation uses is listed by op_spec(); unused
/// pointers are null. Sizes are 64-bit: rows x cols passes 2^31 at realistic shapes.
struct Args {
  int64_t rows = 0;
  int64_t cols = 0;
  const void* x = nullptr;      ///< main input (softmax: x; backward: the forward output y)
  const void* dy = nullptr;     ///< backward: the upstream gradient
  const void* b = nullptr;      ///< elementwise: second operand; scale_mask_softmax: the u8 mask
  const void* c = nullptr;      ///< elementwise: third operand
  const void* gamma = nullptr;  ///< LayerNorm: scale, cols elements
  const void* beta = nullptr;   ///< LayerNorm: shift, cols elements
  void* y = nullptr;            ///< main output (softmax: y; backward: dx)
  void* mean = nullptr;         ///< LayerNorm: per-row mean, fp32, rows elements
  void* rstd = nullptr;         ///< LayerNorm: per-row 1 / sqrt(var + eps), fp32, rows elements
  float eps = 1e-5f;            ///< LayerNorm (PyTorch's default)
  float alpha = 1.0f;           ///< scale, scale_mask_softmax: the factor
  const void* saved_mean = nullptr;  ///< norm backward: the forward's per-row mean, fp32
  const void* saved_rstd = nullptr;  ///< norm backward: the forward's per-row rstd, fp32
  void* dgamma = nullptr;       ///< norm backward: the gradient of gamma, fp32, cols elements
  void* dbeta = nullptr;        ///< LayerNorm backward: the gradient of beta, fp32, cols elements
  void* workspace = nullptr;    ///< scratch memory, as many bytes as the variant asked for
  size_t workspace_bytes = 0;
  // Cross-entropy (issue #41). Defaults are PyTorch's F.cross_entropy (and no z-loss).
  const void* target = nullptr;     ///< cross-entropy: each row's class, int32, rows elements
  const void* saved_lse = nullptr;  ///< cross-entropy backward: the forward's per-row logsumexp, fp32
  const void* dloss = nullptr;      ///< cross-entropy backward: each row's upstream gradient, fp32 (see Op)
  void* loss = nullptr;             ///< cross-entropy: each row's loss, fp32, rows elements (0 where ignored)
  void* lse = nullptr;              ///< cross-entropy forward: each row's logsumexp, fp32 (0 where ignored)
  void* loss_reduced = nullptr;     ///< cross-entropy: 1 fp32, the mean or sum of the losses (sum for none)
  int64_t ignore_index = -100;      ///< cross-entropy: rows with this target give loss 0 and dx 0
  float label_smoothing = 0.0f;     ///< cross-entropy: e in [0, 1]
  float z_loss = 0.0f;              ///< cross-entropy: the coefficient z of z * lse^2 (PaLM's z-loss), >= 0
  Reduction reduction = Reduction::mean;
  float loss_grad = 1.0f;           ///< cross_entropy_fused: the upstream gradient of the reduced loss
  /// Cross-entropy, for the float64 references only: the rows not ignored in the whole tensor (the
  /// mean's divisor), set by the harness from every target because a reference may see a sample of
  /// the rows; -1: count them in the rows given. A launcher must not read it: it counts on the device
  /// (the targets are 4 bytes a row), as PyTorch's total_weight is a device value.
  int64_t valid_rows = -1;
};

/// How many elements a tensor of an operation has.
enum class Extent {
  matrix,   ///< rows x cols
  per_col,  ///< cols (gamma, beta)
  per_row,  ///< rows (mean, rstd)
  col_sum,  ///< cols, each a sum over every row (a norm's dgamma, dbeta): an output only
  scalar,   ///< 1, a reduction over every row (cross-entropy's mean or sum loss): an output only,
            ///< judged as a column sum is (column_sums_streamed, compare_col_sum with cols = 1)
};

/// Where a tensor goes in Args (a pointer to member).
using InputSlot = const void* Args::*;
using OutputSlot = void* Args::*;

/// The element type of a tensor: the variant's storage type, or a fixed one.
enum class Elem {
  storage,  ///< the variant's f32, f16 or bf16
  f32,      ///< fp32 whatever the storage type (LayerNorm's mean and rstd, the casts' wide side)
  u8,       ///< a byte per element (a mask)
  i32,      ///< an int32 per element (cross-entropy's class indices)
};

/// True for the extents of outputs summed over every row (col_sum, scalar): the float64 reference
/// adds into them, and column_sums_streamed / compare_col_sum judge them against every row.
inline bool is_row_sum(Extent e) { return e == Extent::col_sum || e == Extent::scalar; }

/// Where an input's values come from.
enum class Source {
  fill,        ///< drawn from a seed (device.h: fill)
  saved_mean,  ///< the forward's per-row mean of x, as it saves it (saved_row_stat)
  saved_rstd,  ///< the forward's per-row rstd of x (LayerNorm's or RMSNorm's, by the operation)
  saved_lse,   ///< the forward's per-row logsumexp of x (cross-entropy's; 0 where the row is ignored)
};

/// One input of an operation: where it goes in Args, its length, its element type, and whether
/// it is drawn or derived from x (a norm backward's saved statistics must be x's).
struct InputSpec {
  const char* name;
  InputSlot slot;
  Extent extent;
  Elem elem;
  Source source = Source::fill;
};

/// One output of an operation, likewise.
struct OutputSpec {
  const char* name;
  OutputSlot slot;
  Extent extent;
  Elem elem;
};

/// The tensors of an operation, in the order reference() takes them.
struct OpSpec {
  std::vector<InputSpec> inputs;
  std::vector<OutputSpec> outputs;
};

/// The tensors of `op`.
const OpSpec& op_spec(Op op);

/// "copy", "softmax", "layer_norm", ...: the first part of every benchmark name.
const char* op_name(Op op);

/// Elements of a tensor of this extent.
int64_t extent_elems(Extent e, int64_t rows, int64_t cols);

/// The element type of a tensor of an operation whose variant stores `t`.
inline DType tensor_dtype(Elem e, DType t) {
  return e == Elem::f32 ? DType::f32 : e == Elem::u8 ? DType::u8 : e == Elem::i32 ? DType::i32 : t;
}

/// True for the cross-entropy operations (their input 1 is the targets, Elem::i32).
bool op_is_cross_entropy(Op op);

/// Bytes the operation must move through device memory: each input read once, each output
/// written once (LayerNorm counts gamma, beta and the fp32 mean and rstd). The effective
/// bandwidth of a kernel is this over its time.
int64_t bytes_moved(Op op, int64_t rows, int64_t cols, DType t);

/// Float64 reference for `rows` rows. `in` holds the inputs in op_spec order, widened to double
/// (matrix inputs: those rows; per-column inputs: all cols); `out` the outputs likewise.
/// `a` supplies the scalars (eps, alpha; cross-entropy's, with Args::valid_rows for a mean over a
/// sample of the rows). Outputs summed over every row (is_row_sum) are ADDED to: zero them first
/// (reference_parallel does).
void reference(Op op, const std::vector<const double*>& in, int64_t rows, int64_t cols,
               const std::vector<double*>& out, const Args& a);

/// reference() on `threads` host threads: a row-wise operation in chunks of whole rows, an
/// elementwise one in chunks of elements. Each chunk is reference() on its part of the tensors,
/// so the values are the same, element for element.
void reference_parallel(Op op, const std::vector<const double*>& in, int64_t rows, int64_t cols,
                        const std::vector<double*>& out, const Args& a, int threads = host_threads());

/// A derived input (`s` not Source::fill) of `op` for `rows` rows of x (widened to double): each
/// row's statistic as the forward computes it (ref::layer_norm_stats, ref::rms_norm_rstd, in
/// double with the fp32 `eps`), rounded to fp32 as the forward stores it. NaN where the forward
/// gives NaN. Throws std::invalid_argument for an input that is not derived.
void saved_row_stat(Op op, Source s, const double* x, int64_t rows, int64_t cols, float eps, double* out);

/// Cross-entropy's saved lse (Source::saved_lse) for `rows` rows of x and their targets: each row's
/// logsumexp in double rounded to fp32, as the forward stores it; 0 where the target is
/// `ignore_index` (the forward need not read an ignored row), NaN where the forward gives NaN.
void saved_lse(const double* x, const double* target, int64_t rows, int64_t cols, int64_t ignore_index,
               double* out);

/// Checks cross-entropy's targets (int32, `rows` of them) against a vocabulary of `cols`: each is
/// in [0, cols) or equal to `ignore_index`, else UsageError naming the first bad row, its target
/// and the range. Returns the count of rows not ignored (Args::valid_rows). The kernels cannot
/// afford this check (it needs the targets read back before the launch): the harness makes it on
/// every target it fills, and a kernel that meets a bad target anyway writes NaN for that row's
/// loss, lse and dx (the references do the same) and never reads outside the row.
int64_t check_targets(const int32_t* target, int64_t rows, int64_t cols, int64_t ignore_index);

/// The comparison's tolerance for output `output` (op_spec order) stored as `t`.
Tolerance op_tolerance(Op op, DType t, int output = 0);

/// The tolerance for row `r` of output `output`, given that row's inputs `in` and references
/// `ref` (as reference() takes and fills them). Most operations use op_tolerance(); LayerNorm
/// widens it for rows whose mean is large against their spread (see ops.cpp: any fp32
/// implementation loses those bits).
/// Cross-entropy's rows need the scalars of `args` (the upstream gradient's scale, z, e); null: Args{}.
Tolerance op_row_tolerance(Op op, DType t, int output, const std::vector<const double*>& in,
                           const std::vector<double*>& ref, int64_t r, int64_t cols, const Args* args = nullptr);

/// The magnitude a cross-entropy row's fp32 loss (and lse) error scales with, in units of that row's
/// fp32 roundoff: log2(cols) + 4 (the sum's additions) + |lse| + |x_t| (their rounding and the
/// difference) + e (|lse| + mean|x|) + 3 z lse^2; 0 for an ignored row. `lse` is the row's logsumexp.
double ce_row_magnitude(const double* xr, int64_t cols, double target, double lse, const Args& a);

/// The tolerance of an fp32 column sum over `rows` rows (Extent::col_sum) whose terms' magnitudes
/// add up to `magnitude` (the sum of |term| over the column, ColumnSums::magnitude): an absolute
/// bound of (8 + 8 sqrt(rows)) fp32 units of roundoff times `magnitude` (ops.cpp says why).
Tolerance col_sum_tolerance(double magnitude, int64_t rows);

/// The float64 column sums of an operation's Extent::col_sum outputs, and the magnitude of each
/// (the sum of |term| over every row: what col_sum_tolerance scales with). Indexed by output in
/// op_spec order; empty for the outputs that are not column sums.
struct ColumnSums {
  std::vector<std::vector<double>> sum;
  std::vector<std::vector<double>> magnitude;
};

/// The inputs of rows [begin, end) widened to double, in op_spec order: matrix inputs
/// (end - begin) x cols, per-row inputs end - begin elements, per-column inputs all cols.
using RowChunkFetch = std::function<std::vector<std::vector<double>>(int64_t begin, int64_t end)>;

/// The column sums (and Extent::scalar reductions: cross-entropy's loss, whose magnitude is the sum
/// of ce_row_magnitude times the row's weight; Args::valid_rows must be set, else
/// std::invalid_argument) of `op` over all `rows` rows without holding the tensors whole: `fetch` gives
/// `chunk_rows` rows at a time (fewer at the end), reference_parallel sums each chunk, and the
/// chunks' sums are added in row order, in double. The magnitudes are summed the same way. A
/// chunk of the wrong size throws std::invalid_argument naming the input.
ColumnSums column_sums_streamed(Op op, int64_t rows, int64_t cols, const Args& a, int64_t chunk_rows,
                                const RowChunkFetch& fetch, int threads = host_threads());

/// Column-sum output `output` (cols elements, fp32) against its float64 reference `want`, each
/// column under col_sum_tolerance(magnitude[col], rows); a mismatch is reported with row -1 (a sum
/// over every row).
CompareResult compare_col_sum(const double* got, const double* want, const double* magnitude, int64_t rows,
                              int64_t cols);

/// The value v as stored in type t: rounded once to nearest even (f32, f16, bf16); u8 as is.
double round_to_type(DType t, double v);

/// Output `output` of `op` (variant storage `t`) against its float64 reference, for `rows` rows
/// (`cols` wide for a matrix output, 1 for a per-row one): `got` the kernel's values widened to
/// double, `in` and `ref` as reference() takes and fills them, `row_ids` the rows' indices in the
/// tensor for the report (nullptr: 0, 1, 2, ...). Exact operations must equal the reference
/// rounded to the output type (NaN matching NaN); the others must be within op_row_tolerance of
/// the reference as the output type holds it (a finite value past the type's range is +-inf
/// there). The work is split over `threads` host threads in chunks of whole rows (of elements,
/// for an elementwise operation) and merged in order: the same result, first mismatches
/// included, as one thread. Not for a column sum (compare_col_sum): std::invalid_argument.
CompareResult compare_output(Op op, DType t, int output, const std::vector<const double*>& in,
                             const std::vector<double*>& ref, const double* got, int64_t rows, int64_t cols,
                             const int64_t* row_ids, int threads = host_threads(), const Args* args = nullptr);

/// True when the output must equal the reference rounded to the output type (NaN matching NaN):
/// copy, ReLU and the casts.
bool op_is_exact(Op op);

/// True when the operation overwrites its input (the launcher gets x == y).
bool op_in_place(Op op);

/// True for elementwise operations: the tensor is rows x cols elements seen as one flat array,
/// with no row structure.
bool op_is_elementwise(Op op);

}  // namespace course
