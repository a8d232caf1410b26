#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>

#include "harness/bench.h"
#include "harness/cli.h"
#include "harness/errors.h"
#include "harness/harness.h"
#include "harness/verify.h"

namespace course {

Sweep standard_sweep() {
  return {{49152}, {32, 64, 128, 256, 512, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 32768}};
}

Sweep long_row_sweep() { return {{128}, {2048, 8192, 32768, 131072, 524288, 2097152, 4194304}}; }

Sweep quick_sweep() { return {{49152}, {128, 1024, 4096}}; }

std::vector<Sweep> shapes_sweeps() {
  std::vector<int64_t> odd{1000, 3000, 5000, 10000};  // widths a model brings that are no power of two
  for (int k = 5; k <= 15; ++k) odd.insert(odd.end(), {(int64_t(1) << k) - 1, (int64_t(1) << k) + 1});
  std::sort(odd.begin(), odd.end());
  return {{{49152}, odd},
          // vocabularies: LLaMA 2, 2^15, GPT-2, 2^16, LLaMA 3, 2^17, Qwen 2, 2^18
          {{1, 8, 64, 512}, {32000, 32768, 50257, 65536, 128256, 131072, 151936, 262144}},
          {{128, 2048}, {65536, 131072, 262144, 524288, 1048576, 2097152}},
          {{65536}, {32769}}};  // 2^31 + 2^16 elements: 64-bit offsets at an odd width
}

Chapter::Chapter(std::string id, std::string title)
    : id_(std::move(id)), title_(std::move(title)), sweeps_{standard_sweep()} {}

void Chapter::add(Op op, std::string kernel, DType dtype, Launcher launch, Limits limits, WorkspaceFn workspace) {
  variants_.push_back({op, std::move(kernel), dtype, std::move(launch), std::move(limits), std::move(workspace)});
}

bool check_rowwise_args(const Args& a, int64_t max_cols, const char* limit_text) {
  require(a.rows >= 0, "rows must be >= 0, got ", a.rows);
  require(a.cols >= 1, "cols must be >= 1, got ", a.cols);
  if (max_cols > 0)
    require(a.cols <= max_cols, "cols = ", a.cols, " is past this kernel's limit (",
            limit_text ? std::string(limit_text) : "cols <= " + std::to_string(max_cols), ")");
  if (a.rows == 0) return false;
  require(a.x != nullptr, "input pointer is null for a ", a.rows, " x ", a.cols, " tensor");
  require(a.y != nullptr, "output pointer is null for a ", a.rows, " x ", a.cols, " tensor");
  return true;
}

bool check_block_per_row_args(const Args& a, int64_t max_cols, const char* limit_text) {
  if (!check_rowwise_args(a, max_cols, limit_text)) return false;
  require(a.rows < (int64_t(1) << 31), "rows = ", a.rows, " is past the grid limit of 2^31 - 1 blocks (one per row)");
  return true;
}

bool check_op_args(const Args& a, Op op, int64_t max_cols, const char* limit_text) {
  const OpSpec& spec = op_spec(op);
  if (op_is_cross_entropy(op)) {
    // The forward has no Args::y: check_rowwise_args' sizes, then the scalars, then the tensors below.
    Args sizes = a;
    sizes.x = sizes.y = &sizes;  // non-null: the tensors are checked by name below
    if (!check_rowwise_args(sizes, max_cols, limit_text)) return false;
    require(a.label_smoothing >= 0.0f && a.label_smoothing <= 1.0f, op_name(op),
            ": label_smoothing must be in [0, 1], got ", a.label_smoothing);
    require(std::isfinite(a.z_loss) && a.z_loss >= 0.0f, op_name(op), ": z_loss must be finite and >= 0, got ",
            a.z_loss);
    require(a.reduction == Reduction::none || a.reduction == Reduction::mean || a.reduction == Reduction::sum,
            op_name(op), ": reduction must be none, mean or sum, got ", int(a.reduction));
    require(a.ignore_index >= INT32_MIN && a.ignore_index <= INT32_MAX, op_name(op), ": ignore_index = ",
            a.ignore_index, " does not fit the int32 targets");
  } else if (!check_rowwise_args(a, max_cols, limit_text)) {
    return false;
  }
  for (const InputSpec& t : spec.inputs)
    require(a.*(t.slot) != nullptr, op_name(op), ": input '", t.name, "' is null",
            t.source == Source::fill ? "" : " (the forward's saved per-row statistic, fp32, rows elements)");
  for (const OutputSpec& t : spec.outputs)
    require(a.*(t.slot) != nullptr, op_name(op), ": output '", t.name, "' is null");
  // After the null checks, so that the suite's refusals (every tensor on one buffer) are refused by name.
  if (op == Op::cross_entropy)
    require(a.loss != a.lse, op_name(op), ": loss and lse are one buffer (each holds rows fp32 values of its own)");
  return true;
}

std::string Variant::name() const { return std::string(op_name(op)) + "/" + kernel + "/" + dtype_name(dtype); }

namespace {

// The variants that --kernel and --dtype select, their limits, and the sweeps narrowed (as the
// benchmarks are) to the cols some selected variant accepts.
void print_list(const Chapter& ch, const Options& opt) {
  const std::vector<Sweep> sweeps = selected_sweeps(ch, opt);  // before any output: it may refuse
  std::vector<const Variant*> shown;
  for (const Variant& v : ch.variants())
    if (v.selected_by(opt.kernel) && (!opt.dtype || *opt.dtype == v.dtype)) shown.push_back(&v);
  if (shown.empty())
    throw UsageError("no variant's name (op/kernel/dtype) matches --kernel '" + opt.kernel + "'" +
                     (opt.dtype ? std::string(" and --dtype ") + dtype_name(*opt.dtype) : ""));
  std::printf("%s: %s\n", ch.id().c_str(), ch.title().c_str());
  std::printf("  %-36s %s\n", "variant (benchmark name prefix)", "limits");
  for (const Variant* v : shown) {
    std::string text = v->limits.text;
    if (v->limits.min_sm > 0) text += " [needs sm_" + std::to_string(v->limits.min_sm) + " or newer]";
    std::printf("  %-36s %s\n", v->name().c_str(), text.c_str());
  }
  for (const Sweep& s : sweeps) {
    std::printf("  sweep: rows");
    for (auto r : s.rows) std::printf(" %lld", (long long)r);
    std::printf("; cols");
    for (auto c : s.cols) {
      bool any = false;
      for (const Variant* v : shown) any = any || v->limits.max_cols == 0 || c <= v->limits.max_cols;
      if (any) std::printf(" %lld", (long long)c);
    }
    std::printf("\n");
  }
}

}  // namespace

int Chapter::run(int argc, char** argv) {
  const std::string prog = argc > 0 ? argv[0] : id_;
  Options opt;
  try {
    opt = parse_args(argc, argv);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "%s: %s\n\n%s", prog.c_str(), e.what(), usage(prog).c_str());
    return 2;
  }
  if (opt.mode == Mode::help) {
    std::printf("%s: %s\n\n%s", id_.c_str(), title_.c_str(), usage(prog).c_str());
    return 0;
  }
  if (opt.mode == Mode::list) {
    try {
      print_list(*this, opt);
    } catch (const UsageError& e) {
      std::fprintf(stderr, "%s: %s\n", prog.c_str(), e.what());
      return 2;
    }
    return 0;
  }
  DeviceInfo dev;
  std::string why;
  if (!probe_device(&dev, &why)) {
    std::printf("SKIPPED: %s needs a CUDA GPU and found none (%s)\n", id_.c_str(), why.c_str());
    return 77;
  }
  try {
    switch (opt.mode) {
      case Mode::device_info:
        std::printf(
            "name: %s\nslug: %s\nuuid: %s\ncompute_capability: %d.%d\nsm_count: %d\nl2_bytes: %lld\n"
            "memory_bytes: %lld\nsmem_per_block_optin: %d\n",
            dev.name.c_str(), dev.slug.c_str(), dev.uuid.c_str(), dev.cc_major, dev.cc_minor, dev.sm_count, (long long)dev.l2_bytes,
            (long long)dev.total_mem, dev.smem_per_block_optin);
        return 0;
      case Mode::verify:
        return run_verification(*this, opt, dev);
      case Mode::bench:
        return run_benchmarks(*this, opt, dev, prog.c_str());
      default:
        return 2;
    }
  } catch (const UsageError& e) {
    std::fprintf(stderr, "%s: %s\n", prog.c_str(), e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", prog.c_str(), e.what());
    return 1;
  }
}

}  // namespace course
