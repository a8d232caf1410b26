// The norms' backward in the suite (#42), host side: saved statistics derived from x, column sums
// over every row streamed in row chunks, their tolerance per column, and dx's per-row tolerance.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "15_norm_backward/plan.h"
#include "harness/ops.h"
#include "harness/reference.h"

namespace {

using course::Op;
using course::Source;

// A norm backward's inputs for rows x cols, in op_spec order: x normal with about one value in 61
// times 20 (the suite's fill), dy normal, gamma 1 + normal / 2, and the saved statistics derived
// from x (saved_row_stat), every value fp32.
struct Inputs {
  std::vector<std::vector<double>> in;
  std::vector<const double*> ptr() const {
    std::vector<const double*> p;
    for (const auto& v : in) p.push_back(v.data());
    return p;
  }
};

Inputs make_inputs(Op op, int64_t rows, int64_t cols, uint64_t seed) {
  const course::OpSpec& spec = course::op_spec(op);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd;
  Inputs t;
  for (size_t k = 0; k < spec.inputs.size(); ++k) {
    std::vector<double> v(size_t(course::extent_elems(spec.inputs[k].extent, rows, cols)));
    if (spec.inputs[k].source == Source::fill)
      for (double& e : v) {
        const float z = nd(rng);
        e = k == 0 ? (rng() % 61 == 0 ? 20.0f * z : z) : k == 2 ? 1.0f + 0.5f * z : z;
      }
    else
      course::saved_row_stat(op, spec.inputs[k].source, t.in[0].data(), rows, cols, 1e-5f, v.data());
    t.in.push_back(std::move(v));
  }
  return t;
}

// Serves rows [begin, end) of `t` as column_sums_streamed asks for them.
course::RowChunkFetch fetch_from(Op op, const Inputs& t, int64_t cols) {
  return [op, &t, cols](int64_t begin, int64_t end) {
    const course::OpSpec& spec = course::op_spec(op);
    std::vector<std::vector<double>> in;
    for (size_t k = 0; k < spec.inputs.size(); ++k) {
      const auto& v = t.in[k];
      switch (spec.inputs[k].extent) {
        case course::Extent::matrix:
          in.emplace_back(v.begin() + begin * cols, v.begin() + end * cols);
          break;
        case course::Extent::per_row:
          in.emplace_back(v.begin() + begin, v.begin() + end);
          break;
        default:
          in.push_back(v);
      }
    }
    return in;
  };
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// The saved mean and rstd are what the forward's reference gives for each row, rounded to fp32:
// a constant row's mean exactly, its rstd 1 / sqrt(eps); NaN where the forward gives NaN.
TEST(NormBackward, DerivedStatisticsMatchADirectComputation) {
  const int64_t cols = 6;
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> x{0.5,  -1.25, 2.0,  3.5,     -0.75, 1.0,   // ordinary
                        1.5,  1.5,   1.5,  1.5,     1.5,   1.5,   // constant
                        1e4 + 0.3, 1e4 - 1.1, 1e4 + 0.7, 1e4 - 0.2, 1e4 + 1.9, 1e4 - 0.4,  // large mean
                        1.0,  NAN,   2.0,  3.0,     4.0,   5.0,   // NaN
                        1.0,  inf,   2.0,  3.0,     4.0,   5.0};  // +inf
  const int64_t rows = int64_t(x.size()) / cols;
  const float eps = 1e-5f;
  std::vector<double> mean(rows), rstd(rows), rms(rows);
  course::saved_row_stat(Op::layer_norm_backward, Source::saved_mean, x.data(), rows, cols, eps, mean.data());
  course::saved_row_stat(Op::layer_norm_backward, Source::saved_rstd, x.data(), rows, cols, eps, rstd.data());
  course::saved_row_stat(Op::rms_norm_backward, Source::saved_rstd, x.data(), rows, cols, eps, rms.data());
  for (int64_t r = 0; r < 3; ++r) {  // the finite rows, by the definitions: two passes, fp32 results
    const double* xr = x.data() + r * cols;
    double m = 0, v = 0, ss = 0;
    for (int64_t c = 0; c < cols; ++c) m += xr[c] / cols;
    for (int64_t c = 0; c < cols; ++c) v += (xr[c] - m) * (xr[c] - m) / cols, ss += xr[c] * xr[c] / cols;
    EXPECT_EQ(mean[r], double(float(m))) << r;
    EXPECT_NEAR(rstd[r], double(float(1 / std::sqrt(v + double(eps)))), 1e-7 * rstd[r]) << r;
    EXPECT_NEAR(rms[r], double(float(1 / std::sqrt(ss + double(eps)))), 1e-7 * rms[r]) << r;
    EXPECT_EQ(rstd[r], double(float(rstd[r]))) << "rounded to fp32";
    EXPECT_EQ(rms[r], double(float(rms[r]))) << "rounded to fp32";
  }
  EXPECT_EQ(mean[1], 1.5);
  EXPECT_EQ(rstd[1], double(float(1 / std::sqrt(double(eps)))));
  EXPECT_NEAR(rstd[2], 1.0, 0.5);  // a spread of about 1 around 1e4
  for (int64_t r : {3, 4}) EXPECT_TRUE(std::isnan(mean[r]) && std::isnan(rstd[r])) << r;  // as PyTorch
  EXPECT_TRUE(std::isnan(rms[3]));
  EXPECT_EQ(rms[4], 0.0);  // 1 / sqrt(inf): IEEE, as PyTorch's rsqrt
  // Only the saved statistics are derived.
  EXPECT_THROW(course::saved_row_stat(Op::rms_norm_backward, Source::saved_mean, x.data(), 1, cols, eps, mean.data()),
               std::invalid_argument);
  EXPECT_THROW(course::saved_row_stat(Op::softmax, Source::saved_rstd, x.data(), 1, cols, eps, mean.data()),
               std::invalid_argument);
  const auto& spec = course::op_spec(Op::layer_norm_backward);
  EXPECT_EQ(spec.inputs[3].source, Source::saved_mean);
  EXPECT_EQ(spec.inputs[4].source, Source::saved_rstd);
  EXPECT_EQ(spec.inputs[0].source, Source::fill);
  EXPECT_EQ(course::op_spec(Op::rms_norm_backward).inputs[3].source, Source::saved_rstd);
}

// Streamed in chunks of rows (the last one short), the column sums equal the whole tensor's
// reference up to the order of the additions, and in one chunk they are the same bits. The
// magnitudes are the sums of |dy * xhat| and |dy|.
TEST(NormBackward, StreamedColumnSumsEqualTheWholeReference) {
  const int64_t rows = 5003, cols = 37;
  for (Op op : {Op::layer_norm_backward, Op::rms_norm_backward}) {
    SCOPED_TRACE(course::op_name(op));
    const Inputs t = make_inputs(op, rows, cols, 11);
    const course::OpSpec& spec = course::op_spec(op);
    std::vector<std::vector<double>> whole;
    std::vector<double*> whole_ptr;
    for (const auto& o : spec.outputs) whole.emplace_back(size_t(course::extent_elems(o.extent, rows, cols)), 0.0);
    for (auto& v : whole) whole_ptr.push_back(v.data());
    course::Args a;
    course::reference_parallel(op, t.ptr(), rows, cols, whole_ptr, a, 3);
    const auto streamed = course::column_sums_streamed(op, rows, cols, a, 1000, fetch_from(op, t, cols), 3);
    const auto one_chunk = course::column_sums_streamed(op, rows, cols, a, rows, fetch_from(op, t, cols), 3);
    const bool ln = op == Op::layer_norm_backward;
    for (size_t k = 0; k < spec.outputs.size(); ++k) {
      if (spec.outputs[k].extent != course::Extent::col_sum) {
        EXPECT_TRUE(streamed.sum[k].empty() && streamed.magnitude[k].empty());
        continue;
      }
      ASSERT_EQ(streamed.sum[k].size(), size_t(cols));
      for (int64_t c = 0; c < cols; ++c) {
        double mag = 0;  // directly
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t i = r * cols + c;
          const double xhat = (t.in[0][i] - (ln ? t.in[3][r] : 0.0)) * t.in[ln ? 4 : 3][r];
          mag += std::fabs(k == 1 ? t.in[1][i] * xhat : t.in[1][i]);
        }
        EXPECT_NEAR(streamed.magnitude[k][c], mag, 1e-12 * mag);
        EXPECT_NEAR(streamed.sum[k][c], whole[k][c], 1e-12 * mag) << "output " << k << " col " << c;
        EXPECT_TRUE(same_bits(one_chunk.sum[k][c], whole[k][c])) << "output " << k << " col " << c;
      }
    }
  }
}

// A chunk of the wrong size is refused, naming the input.
TEST(NormBackward, AChunkOfTheWrongSizeIsRefused) {
  const Inputs t = make_inputs(Op::layer_norm_backward, 10, 4, 1);
  auto short_mean = [&](int64_t begin, int64_t end) {
    auto in = fetch_from(Op::layer_norm_backward, t, 4)(begin, end);
    in[3].pop_back();
    return in;
  };
  try {
    course::column_sums_streamed(Op::layer_norm_backward, 10, 4, course::Args{}, 5, short_mean, 1);
    FAIL() << "accepted a short chunk";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("input 'mean' has 4 elements in a chunk of 5 rows"), std::string::npos)
        << e.what();
  }
}

// fp32 column sums of 100000 rows x 64 columns as a kernel gives them, against the float64
// reference: `block` rows per fp32 partial (all rows: one accumulator), the partials added in
// fp32; `skip` a block left out; `raw_x` sums dy * x instead of dy * xhat.
std::vector<double> fp32_col_sums(Op op, const Inputs& t, int64_t rows, int64_t cols, int output, int64_t block,
                                  int64_t skip = -1, bool raw_x = false) {
  const bool ln = op == Op::layer_norm_backward;
  std::vector<float> total(size_t(cols), 0.0f), part(size_t(cols), 0.0f);
  for (int64_t b = 0; b * block < rows; ++b) {
    std::fill(part.begin(), part.end(), 0.0f);
    for (int64_t r = b * block; r < std::min(rows, (b + 1) * block); ++r)
      for (int64_t c = 0; c < cols; ++c) {
        const int64_t i = r * cols + c;
        const float x = float(t.in[0][i]), dy = float(t.in[1][i]);
        const float xhat = raw_x ? x : (x - (ln ? float(t.in[3][r]) : 0.0f)) * float(t.in[ln ? 4 : 3][r]);
        part[c] += output == 1 ? dy * xhat : dy;
      }
    if (b != skip)
      for (int64_t c = 0; c < cols; ++c) total[c] += part[c];
  }
  return std::vector<double>(total.begin(), total.end());
}

TEST(NormBackward, ColumnSumToleranceAcceptsFp32AndRejectsWrongSums) {
  const int64_t rows = 100000, cols = 64;
  for (Op op : {Op::layer_norm_backward, Op::rms_norm_backward}) {
    const Inputs t = make_inputs(op, rows, cols, 5);
    const auto ref = course::column_sums_streamed(op, rows, cols, course::Args{}, rows, fetch_from(op, t, cols));
    const int nout = int(course::op_spec(op).outputs.size());
    for (int k = 1; k < nout; ++k) {
      SCOPED_TRACE(std::string(course::op_name(op)) + " output " + std::to_string(k));
      auto judge = [&](const std::vector<double>& got) {
        return course::compare_col_sum(got.data(), ref.sum[k].data(), ref.magnitude[k].data(), rows, cols);
      };
      // Correct: blocks of 256 rows, and one accumulator over every row (the longest chain).
      EXPECT_TRUE(judge(fp32_col_sums(op, t, rows, cols, k, 256)).ok());
      const auto one = judge(fp32_col_sums(op, t, rows, cols, k, rows));
      EXPECT_TRUE(one.ok()) << course::describe(one);
      // Wrong: a block of 256 rows missing moves each column by about 16 (256 terms of size about 1,
      // random signs) against a tolerance of about 10 to 12: caught in a quarter of the columns or more.
      const auto missing = judge(fp32_col_sums(op, t, rows, cols, k, 256, /*skip=*/17));
      EXPECT_GE(missing.failed, cols / 4) << missing.max_abs_err;
      if (k == 1) {  // dgamma summing dy * x instead of dy * xhat
        const auto raw = judge(fp32_col_sums(op, t, rows, cols, k, 256, -1, /*raw_x=*/true));
        EXPECT_GT(raw.failed, cols / 2);
      }
    }
  }
}

// Terms of one sign (a sum of |dy|) in one fp32 accumulator: inside the tolerance at 100000 rows.
TEST(NormBackward, ColumnSumToleranceAcceptsSameSignTermsInOneAccumulator) {
  const int64_t rows = 100000, cols = 64;
  Inputs t = make_inputs(Op::layer_norm_backward, rows, cols, 6);
  for (double& v : t.in[1]) v = std::fabs(v);
  const auto ref = course::column_sums_streamed(Op::layer_norm_backward, rows, cols, course::Args{}, rows,
                                                fetch_from(Op::layer_norm_backward, t, cols));
  for (int k : {1, 2}) {
    const auto got = fp32_col_sums(Op::layer_norm_backward, t, rows, cols, k, rows);
    const auto r = course::compare_col_sum(got.data(), ref.sum[k].data(), ref.magnitude[k].data(), rows, cols);
    EXPECT_TRUE(r.ok()) << "output " << k << ":\n" << course::describe(r);
  }
}

// The tolerance: (8 + 8 sqrt(rows)) fp32 roundoffs of the magnitude, and a mismatch names its column.
TEST(NormBackward, ColumnSumToleranceAndReport) {
  const double u = std::ldexp(1.0, -24);
  EXPECT_DOUBLE_EQ(course::col_sum_tolerance(1000.0, 1).atol, 16 * u * 1000);
  EXPECT_DOUBLE_EQ(course::col_sum_tolerance(1000.0, 10000).atol, 808 * u * 1000);
  EXPECT_EQ(course::col_sum_tolerance(1000.0, 10000).rtol, 0.0);
  EXPECT_GT(course::col_sum_tolerance(0.0, 5).atol, 0.0);  // fp32's smallest normal: flushed subnormals pass
  const std::vector<double> want{1.0, -2.0, 3.0, NAN}, mag{10.0, 10.0, 10.0, NAN};
  std::vector<double> got{1.0, -2.0, 3.001, NAN};
  auto r = course::compare_col_sum(got.data(), want.data(), mag.data(), 100, 4);
  ASSERT_EQ(r.failed, 1);
  EXPECT_EQ(r.first[0].row, -1);
  EXPECT_EQ(r.first[0].col, 2);
  EXPECT_NE(course::describe(r).find("col 2 (sum over every row): got 3.001"), std::string::npos) << course::describe(r);
  got[3] = 0.0;  // a NaN column (a NaN row of x) must stay NaN
  EXPECT_EQ(course::compare_col_sum(got.data(), want.data(), mag.data(), 100, 4).failed, 2);
  // compare_output is for the other outputs.
  std::vector<const double*> in;
  std::vector<double*> ref;
  EXPECT_THROW(course::compare_output(Op::rms_norm_backward, course::DType::f32, 1, in, ref, got.data(), 1, 4, nullptr),
               std::invalid_argument);
}

// dx's absolute tolerance grows with rstd and the row's terms: a constant row (rstd 1 / sqrt(eps))
// gets hundreds of times an ordinary row's.
TEST(NormBackward, DxToleranceGrowsWithRstd) {
  const int64_t cols = 4;
  std::vector<double> x{-1, 1, -1, 1, 1.5, 1.5, 1.5, 1.5}, dy{0.5, -1, 0.25, 1, 0.5, -1, 0.25, 1}, gamma{1, 1, 1, 1};
  std::vector<double> mean(2), rstd(2), dx(8), dgamma(4, 0.0), dbeta(4, 0.0);
  course::saved_row_stat(Op::layer_norm_backward, Source::saved_mean, x.data(), 2, cols, 1e-5f, mean.data());
  course::saved_row_stat(Op::layer_norm_backward, Source::saved_rstd, x.data(), 2, cols, 1e-5f, rstd.data());
  const std::vector<const double*> in{x.data(), dy.data(), gamma.data(), mean.data(), rstd.data()};
  const std::vector<double*> out{dx.data(), dgamma.data(), dbeta.data()};
  course::reference(Op::layer_norm_backward, in, 2, cols, out, course::Args{});
  const auto base = course::op_tolerance(Op::layer_norm_backward, course::DType::f32, 0);
  const auto ordinary = course::op_row_tolerance(Op::layer_norm_backward, course::DType::f32, 0, in, out, 0, cols);
  const auto constant = course::op_row_tolerance(Op::layer_norm_backward, course::DType::f32, 0, in, out, 1, cols);
  EXPECT_LT(ordinary.atol, 4 * base.atol);
  EXPECT_GT(constant.atol, 300 * base.atol);
  EXPECT_EQ(constant.rtol, base.rtol);
}

// Chapter 15's plan (plan.h): one wave of blocks or clusters, no more blocks than rows /
// kMinRowsPerBlock (rounded up), every row in exactly one block's range; and the blocks a row is split across.
TEST(NormBackwardPlan, OneWaveOfPartialRowsCoversEveryRow) {
  for (int64_t rows : {int64_t(1), int64_t(15), int64_t(16), int64_t(17), int64_t(4096), int64_t(49152),
                       int64_t(1) << 31}) {
    for (int64_t resident : {int64_t(1), int64_t(16), int64_t(132), int64_t(264)}) {
      const ch15::Plan p = ch15::plan_partials(rows, resident);
      EXPECT_GE(p.blocks, 1);
      EXPECT_LE(p.blocks, resident) << rows << " rows";
      EXPECT_GE(p.blocks * p.rows_per_block, rows);
      EXPECT_LT((p.blocks - 1) * p.rows_per_block, rows) << "a block with no rows";
      EXPECT_LE(p.blocks, (rows + ch15::kMinRowsPerBlock - 1) / ch15::kMinRowsPerBlock) << "blocks of too few rows";
    }
  }
  // 4096 rows: 256 blocks of 16 where 264 fit; 49152 rows on 264 slots: 263 blocks of 187.
  EXPECT_EQ(ch15::plan_partials(4096, 264).blocks, 256);
  EXPECT_EQ(ch15::plan_partials(49152, 264).rows_per_block, 187);
}

// Rows of one layout (plan.h: row_period) and a block per class: every row of every class in
// exactly one block's range, blocks a multiple of the period, within the workspace.
TEST(NormBackwardPlan, EachBlockTakesRowsOfOneClass) {
  EXPECT_EQ(ch15::row_period(1024, 8), 1);
  EXPECT_EQ(ch15::row_period(1028, 8), 2);
  EXPECT_EQ(ch15::row_period(1026, 8), 4);
  EXPECT_EQ(ch15::row_period(4097, 8), 8);
  EXPECT_EQ(ch15::row_period(4097, 4), 4);
  EXPECT_EQ(ch15::row_period(1, 1), 1);
  for (int period : {1, 2, 4, 8})
    for (int64_t rows : {int64_t(1), int64_t(7), int64_t(9), int64_t(129), int64_t(4096), int64_t(4097)})
      for (int64_t resident : {int64_t(16), int64_t(132), int64_t(264)}) {
        const ch15::Plan p = ch15::plan_partials(rows, resident, period);
        EXPECT_EQ(p.blocks % period, 0);
        EXPECT_LE(p.blocks, resident);
        EXPECT_LE(size_t(p.blocks) * 4, ch15::backward_workspace(rows, 1, 1, 66)) << "the workspace's bound";
        std::vector<int> seen(size_t(rows), 0);
        for (int64_t b = 0; b < p.blocks; ++b) {
          const int64_t cls = b % period, first = b / period * p.rows_per_block;
          for (int64_t i = first; i < first + p.rows_per_block; ++i)
            if (cls + i * period < rows) ++seen[size_t(cls + i * period)];
        }
        for (int64_t r = 0; r < rows; ++r) ASSERT_EQ(seen[size_t(r)], 1) << "row " << r << " period " << period;
      }
}

TEST(NormBackwardPlan, RowsAreSplitWhereOneBlockCannotKeepThemOnChip) {
  // A row one block keeps on chip stays whole up to kSplitFixedMinPacks (peeled or not: a block's
  // rows share one layout); one it does not is split, into slices of more than 512 packs (a group
  // of 512 a slice) for every row past 2048 packs (the rows that can be off chip).
  EXPECT_EQ(ch15::split_blocks(1, true, 8), 1);
  EXPECT_EQ(ch15::split_blocks(2048, true, 8), 1);
  EXPECT_EQ(ch15::split_blocks(2049, false, 8), 2);
  for (int accs : {4, 8, 16})
    for (int64_t packs = 2049; packs <= 300000; packs += 211) {
      const int c = ch15::split_blocks(packs, false, accs);
      EXPECT_GT((packs + c - 1) / c, 512) << packs;
    }
  EXPECT_EQ(ch15::split_blocks(ch15::kSplitFixedMinPacks, true, 8), 1);
  EXPECT_EQ(ch15::split_blocks(ch15::kSplitFixedMinPacks + 1, true, 8), 2);
  EXPECT_EQ(ch15::split_blocks(ch15::kSplitFixedMinPacks + 1, false, 8), 2);
  // The slices: 2048 packs, but 1024 where a pack has 16 register accumulators (16-bit
  // LayerNorm); the fewest blocks whose slices fit, at most kSplitMaxBlocks.
  EXPECT_EQ(ch15::split_slice_packs(8), ch15::kSplitSlicePacks);
  EXPECT_EQ(ch15::split_slice_packs(16), 1024);
  for (int accs : {4, 8, 16})
    for (int64_t packs = ch15::kSplitFixedMinPacks + 1; packs <= 40000; packs += 997) {
      const int c = ch15::split_blocks(packs, false, accs);
      const int64_t most = ch15::split_slice_packs(accs);
      EXPECT_TRUE(c == 2 || c == 4 || c == ch15::kSplitMaxBlocks) << packs;
      if (c < ch15::kSplitMaxBlocks) EXPECT_LE((packs + c - 1) / c, most) << packs;
      if (c > 2) EXPECT_GT((packs + c / 2 - 1) / (c / 2), most) << packs;
    }
  EXPECT_EQ(ch15::split_blocks(4 * ch15::kSplitSlicePacks, true, 8), 4);
  EXPECT_EQ(ch15::split_blocks(4 * ch15::kSplitSlicePacks + 1, true, 8), 8);
  EXPECT_EQ(ch15::split_blocks(4 * 1024 + 1, true, 16), 8);
  EXPECT_EQ(ch15::split_blocks(int64_t(1) << 28, false, 8), ch15::kSplitMaxBlocks);
  // Rows one block would hold at 4 packs a thread with over kSplitRegAccs register sums (16-bit
  // LayerNorm's 16 a pack: 1025-2048 packs) are split in two, slices of 513-1024 packs; rows of
  // 8 register sums a pack at the same widths, and 16-bit LayerNorm's of 8 packs, stay whole.
  EXPECT_EQ(ch15::split_blocks(1024, true, 16), 1);
  EXPECT_EQ(ch15::split_blocks(1025, true, 16), 2);
  EXPECT_EQ(ch15::split_blocks(2048, true, 16), 2);
  EXPECT_EQ(ch15::split_blocks(2049, true, 16), 1);
  for (int64_t packs = 1025; packs <= 2048; packs += 37) EXPECT_EQ(ch15::split_blocks(packs, true, 8), 1) << packs;
}

}  // namespace
