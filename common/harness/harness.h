/// @file harness.h
/// @brief What a chapter's `main` uses: register kernel variants, then hand over to the harness.
///
/// ```
/// int main(int argc, char** argv) {
///   course::Chapter ch("01_naive_softmax", "Softmax as five kernels");
///   ch.add(course::Op::softmax, "naive", course::DType::f32, naive_softmax<float>);
///   return ch.run(argc, argv);   // --verify, --list, or the benchmark sweep
/// }
/// ```
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "harness/dtype.h"
#include "harness/ops.h"

namespace course {

/// A kernel's entry point: validates the arguments (throwing UsageError), then launches on
/// `stream`. It must not synchronize or allocate: the harness times it.
using Launcher = std::function<void(const Args&, cudaStream_t)>;

/// Scratch bytes a variant needs for a shape (0 if none).
using WorkspaceFn = std::function<size_t(int64_t rows, int64_t cols, DType)>;

/// Where a variant works, so that the suite checks each limit and each dispatch boundary.
struct Limits {
  /// Largest cols the kernel accepts (0: no limit). Above it the launcher must throw
  /// UsageError; the suite checks max_cols - 1, max_cols and max_cols + 1.
  int64_t max_cols = 0;
  /// Cols at which the kernel's internal dispatch changes path; each is checked at -1, 0, +1.
  std::vector<int64_t> thresholds;
  /// One line for --list, e.g. "cols <= 1024; 16-byte packs when aligned, scalar otherwise".
  std::string text = "any rows x cols";
  /// More (rows, cols) shapes the suite checks: a dispatch that also turns on rows (chapter
  /// 12: several blocks per row when rows are too few to fill the GPU) lists its boundary here.
  std::vector<std::pair<int64_t, int64_t>> shapes = {};
  /// The same, checked by the full suite only: --quick (the sanitizers' runs) skips them. For
  /// boundaries that need rows of millions of elements, where --quick still runs the same kernel
  /// configurations on smaller shapes (chapter 12's backward cluster: racecheck takes a minute
  /// per such case).
  std::vector<std::pair<int64_t, int64_t>> full_shapes = {};
  /// The oldest GPU architecture the variant runs on (90: sm_90, Hopper), 0 for any: --list says
  /// so, and the launcher refuses older GPUs with a message naming it.
  int min_sm = 0;
};

/// Whether --kernel `filter` selects the variant or check called `name` (`op/kernel/dtype...`):
/// the name contains the filter, or, for a filter that starts with '^', begins with the rest
/// (`^softmax_backward/` leaves out `log_softmax_backward/...`). Filters separated by commas are
/// alternatives (`/dispatch/,/production/`: either).
inline bool name_selected(const std::string& name, const std::string& filter) {
  if (auto comma = filter.find(','); comma != std::string::npos)
    return name_selected(name, filter.substr(0, comma)) || name_selected(name, filter.substr(comma + 1));
  if (!filter.empty() && filter[0] == '^') return name.compare(0, filter.size() - 1, filter, 1) == 0;
  return name.find(filter) != std::string::npos;
}

/// One registered kernel for one operation and storage type.
struct Variant {
  Op op;
  std::string kernel;  ///< short name, used in benchmark names: `softmax/<kernel>/f16/...`
  DType dtype;
  Launcher launch;
  Limits limits;
  WorkspaceFn workspace;
  /// `op/kernel/dtype`, as --list prints it and benchmark names begin.
  std::string name() const;
  /// --kernel's selection (name_selected): the name contains `filter`, or begins with it after a
  /// leading '^'; an empty filter selects every variant.
  bool selected_by(const std::string& filter) const { return name_selected(name(), filter); }
};

/// The checks every row-wise launcher starts with: rows >= 0, cols >= 1, cols <= max_cols
/// (when max_cols > 0), and non-null x and y when there is work. Throws UsageError naming the
/// parameter, its value and the limit. Returns false when there is nothing to do (rows == 0).
bool check_rowwise_args(const Args& a, int64_t max_cols = 0, const char* limit_text = nullptr);

/// check_rowwise_args, plus the grid limit of the kernels that launch one block per row:
/// rows < 2^31.
bool check_block_per_row_args(const Args& a, int64_t max_cols = 0, const char* limit_text = nullptr);

/// check_rowwise_args, then every tensor that op_spec(op) names must be non-null (the message
/// names it, and says so of a norm backward's saved mean or rstd). Every tensor's size follows from
/// rows and cols (op_spec's extents), so no two can disagree. Cross-entropy (no Args::y in the forward)
/// also checks its scalars: label_smoothing in [0, 1], z_loss finite and >= 0, a known reduction,
/// ignore_index within int32, and loss and lse not one buffer; its targets' values are device data,
/// checked by check_targets (ops.h), not here. Returns false when there is nothing to do (rows == 0).
bool check_op_args(const Args& a, Op op, int64_t max_cols = 0, const char* limit_text = nullptr);

/// Benchmark shapes: every `rows` x `cols` pair, for each registered dtype.
struct Sweep {
  std::vector<int64_t> rows;
  std::vector<int64_t> cols;
};

/// The standard sweep: rows 49152 (BERT-base attention, 32 x 12 x 128), cols 32..32768
/// (powers of two plus 1536, 3072, 6144, 12288).
Sweep standard_sweep();
/// Few long rows (rows 128, cols 2048 to 4194304): the shapes where one block per row leaves the
/// GPU half empty and the row does not fit on chip.
Sweep long_row_sweep();
/// The quick sweep (--quick): a handful of shapes that run in seconds on any card.
Sweep quick_sweep();
/// The shapes a model brings that the standard sweep misses (--sweep shapes, row-wise chapters):
/// 49152 rows of odd widths (2^k - 1 and 2^k + 1 from 31 to 32769, and 1000, 3000, 5000, 10000),
/// vocabulary rows (1, 8, 64 and 512 rows of 32000 to 262144 columns), few long rows (128 and 2048
/// rows of 65536 to 2097152 columns) and 65536 x 32769, more than 2^31 elements at an odd width.
/// baselines/torch_peers.py holds the same list (a CTest checks that they agree).
std::vector<Sweep> shapes_sweeps();

/// A chapter: its variants, its sweep, and the one `run` that every chapter's main ends with.
class Chapter {
 public:
  /// `id` is the folder name ("01_naive_softmax"), `title` one line for --list.
  Chapter(std::string id, std::string title);

  /// Registers a kernel variant.
  void add(Op op, std::string kernel, DType dtype, Launcher launch, Limits limits = {}, WorkspaceFn workspace = {});

  /// Adds a second set of shapes to the benchmark sweep (the standard sweep is there first).
  void add_sweep(Sweep sweep) { sweeps_.push_back(std::move(sweep)); }

  /// Replaces the sweeps: flat sizes instead of the row-wise shapes (elementwise chapters), or
  /// row-wise shapes of the chapter's own (`rowwise`: chapter 16's vocabularies; --sweep shapes
  /// still applies).
  void set_sweeps(std::vector<Sweep> sweeps, bool rowwise = false) {
    sweeps_ = std::move(sweeps);
    rowwise_sweeps_ = rowwise;
  }
  /// Whether the chapter times row-wise shapes (--sweep shapes applies), not flat sizes.
  bool rowwise_sweeps() const { return rowwise_sweeps_; }

  /// A check of the chapter's own that --verify runs after the suite (for example: a cast over
  /// every bit pattern). It returns true when it passed and fills `detail` either way; it is
  /// selected by --kernel and --dtype as a variant is: `name` begins with `op/kernel/dtype`.
  struct Check {
    std::string name;
    DType dtype;
    std::function<bool(cudaStream_t, std::string* detail)> run;
  };
  void add_check(Check check) { checks_.push_back(std::move(check)); }
  const std::vector<Check>& checks() const { return checks_; }

  /// Parses the command line and does what it asks. Returns the process exit code:
  /// 0 ok, 1 a verification failed, 2 bad arguments, 77 no GPU.
  int run(int argc, char** argv);

  const std::string& id() const { return id_; }
  const std::string& title() const { return title_; }
  const std::vector<Variant>& variants() const { return variants_; }
  const std::vector<Sweep>& sweeps() const { return sweeps_; }

 private:
  std::string id_, title_;
  std::vector<Variant> variants_;
  std::vector<Sweep> sweeps_;
  bool rowwise_sweeps_ = true;
  std::vector<Check> checks_;
};

}  // namespace course
