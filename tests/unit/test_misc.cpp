// Launch arithmetic, the bytes model, .npy output, timing statistics and GPU slugs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "harness/device.h"
#include "harness/launch_math.h"
#include "harness/npy.h"
#include "harness/ops.h"
#include "harness/stats.h"

TEST(LaunchMath, CeilDivAndRoundUp) {
  EXPECT_EQ(course::ceil_div(0, 4), 0);
  EXPECT_EQ(course::ceil_div(1, 4), 1);
  EXPECT_EQ(course::ceil_div(8, 4), 2);
  EXPECT_EQ(course::ceil_div(9, 4), 3);
  EXPECT_EQ(course::ceil_div(int64_t(1) << 40, 256), int64_t(1) << 32);  // 64-bit sizes
  EXPECT_EQ(course::round_up(1025, 256), 1280);
}

TEST(LaunchMath, GridBlocksFillsTheGpuButNoMore) {
  // 132 SMs x 8 blocks x 4 waves = 4224 blocks at most.
  EXPECT_EQ(course::grid_blocks(int64_t(1) << 30, 256, 132, 8, 4), 4224);
  EXPECT_EQ(course::grid_blocks(1000, 256, 132, 8, 4), 4);
  EXPECT_EQ(course::grid_blocks(0, 256, 132, 8, 4), 1);
}

TEST(LaunchMath, MaxAlignedPack) {
  alignas(16) static float buf[64];
  EXPECT_EQ(course::max_aligned_pack(4, 4, 64, {buf, buf + 8}), 4);
  EXPECT_EQ(course::max_aligned_pack(4, 4, 64, {buf + 1}), 1);
  EXPECT_EQ(course::max_aligned_pack(4, 4, 64, {buf + 2}), 2);
  EXPECT_EQ(course::max_aligned_pack(4, 4, 62, {buf}), 2);  // 62 is not a multiple of 4
  EXPECT_EQ(course::max_aligned_pack(4, 4, 63, {buf}), 1);
}

TEST(Ops, BytesModelCountsEachTensorOnce) {
  using course::DType;
  using course::Op;
  EXPECT_EQ(course::bytes_moved(Op::softmax, 49152, 1024, DType::f32), 2LL * 49152 * 1024 * 4);
  EXPECT_EQ(course::bytes_moved(Op::softmax, 49152, 1024, DType::f16), 2LL * 49152 * 1024 * 2);
  EXPECT_EQ(course::bytes_moved(Op::copy, 3, 5, DType::bf16), 60);
  EXPECT_STREQ(course::op_name(Op::log_softmax), "log_softmax");
  EXPECT_EQ(course::bytes_moved(Op::reduce_scale, 442368, 128, DType::f32), 2LL * 442368 * 128 * 4);
  EXPECT_TRUE(course::op_in_place(Op::reduce_scale));
  EXPECT_FALSE(course::op_in_place(Op::softmax));
}

TEST(Npy, HeaderIsAlignedAndDescribesTheArray) {
  std::string h = course::npy_header("<f4", {3, 5});
  EXPECT_EQ(h.size() % 64, 0u);
  EXPECT_EQ(h.substr(0, 6), "\x93NUMPY");
  EXPECT_NE(h.find("'descr': '<f4'"), std::string::npos);
  EXPECT_NE(h.find("'shape': (3, 5)"), std::string::npos);
  EXPECT_EQ(h.back(), '\n');
  EXPECT_NE(course::npy_header("<f2", {7}).find("(7,)"), std::string::npos);
}

TEST(Npy, WritesHeaderThenData) {
  std::string path = ::testing::TempDir() + "/course_test.npy";
  float data[6] = {1, 2, 3, 4, 5, 6};
  course::write_npy(path, data, "<f4", {2, 3});
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string all = ss.str();
  std::string h = course::npy_header("<f4", {2, 3});
  ASSERT_EQ(all.size(), h.size() + sizeof data);
  EXPECT_EQ(all.substr(0, h.size()), h);
  EXPECT_EQ(0, std::memcmp(all.data() + h.size(), data, sizeof data));
  std::remove(path.c_str());
}

TEST(Stats, MedianAndSpread) {
  auto t = course::summarize({5, 1, 3, 2, 4});
  EXPECT_EQ(t.median, 3);
  EXPECT_EQ(t.min, 1);
  EXPECT_EQ(t.max, 5);
  EXPECT_EQ(course::summarize({4, 1, 3, 2}).median, 2.5);
  EXPECT_EQ(course::summarize({7}).p90, 7);
}

TEST(Slug, GpuNamesBecomeFolderNames) {
  EXPECT_EQ(course::gpu_slug("NVIDIA H100 80GB HBM3"), "h100-80gb-hbm3");
  EXPECT_EQ(course::gpu_slug("NVIDIA GeForce RTX 4090"), "rtx-4090");
  EXPECT_EQ(course::gpu_slug("Tesla T4"), "t4");
  EXPECT_EQ(course::gpu_slug("  "), "unknown-gpu");
}

TEST(Slug, UuidAsNvidiaSmiWritesIt) {
  const unsigned char b[16] = {0x3d, 0x4e, 0xe7, 0xa9, 0xee, 0xb0, 0xad, 0x9a,
                               0xee, 0xf8, 0xb8, 0x85, 0x25, 0x4a, 0xac, 0xd0};
  EXPECT_EQ(course::gpu_uuid_text(b), "GPU-3d4ee7a9-eeb0-ad9a-eef8-b885254aacd0");
  const unsigned char zero[16] = {};
  EXPECT_EQ(course::gpu_uuid_text(zero), "GPU-00000000-0000-0000-0000-000000000000");
}

TEST(Ops, TensorsOfEachOperation) {
  using course::Extent;
  using course::Op;
  const auto& ln = course::op_spec(Op::layer_norm);
  ASSERT_EQ(ln.inputs.size(), 3u);
  ASSERT_EQ(ln.outputs.size(), 3u);
  EXPECT_EQ(ln.inputs[1].extent, Extent::per_col);  // gamma
  EXPECT_EQ(ln.outputs[1].extent, Extent::per_row);  // mean
  EXPECT_EQ(ln.outputs[2].elem, course::Elem::f32);                   // rstd is fp32 whatever the storage type
  EXPECT_EQ(ln.inputs[1].slot, &course::Args::gamma);
  EXPECT_EQ(course::op_spec(Op::fma).inputs.size(), 3u);
  EXPECT_EQ(course::op_spec(Op::mul).inputs.size(), 2u);
  EXPECT_EQ(course::op_spec(Op::cast_to_f32).outputs[0].elem, course::Elem::f32);
  EXPECT_EQ(course::op_spec(Op::cast_from_f32).inputs[0].elem, course::Elem::f32);
  EXPECT_EQ(course::op_spec(Op::softmax).outputs[0].elem, course::Elem::storage);
  EXPECT_TRUE(course::op_is_elementwise(Op::gelu));
  EXPECT_FALSE(course::op_is_elementwise(Op::layer_norm));
  EXPECT_TRUE(course::op_is_exact(Op::cast_from_f32));
  EXPECT_TRUE(course::op_is_exact(Op::relu));
  EXPECT_FALSE(course::op_is_exact(Op::gelu));
}

TEST(Ops, BytesModelOfLayerNormAndElementwise) {
  using course::DType;
  using course::Op;
  // x read, y written, gamma and beta read once, fp32 mean and rstd written per row.
  EXPECT_EQ(course::bytes_moved(Op::layer_norm, 49152, 1024, DType::f16),
            2LL * 49152 * 1024 * 2 + 2LL * 1024 * 2 + 8LL * 49152);
  EXPECT_EQ(course::bytes_moved(Op::cast_from_f32, 1, 1 << 20, DType::f16), (4LL + 2) << 20);
  EXPECT_EQ(course::bytes_moved(Op::cast_to_f32, 1, 1 << 20, DType::bf16), (2LL + 4) << 20);
  EXPECT_EQ(course::bytes_moved(Op::fma, 1, 1000, DType::f32), 4LL * 1000 * 4);
  EXPECT_EQ(course::bytes_moved(Op::mul, 2, 500, DType::f16), 3LL * 1000 * 2);
}

TEST(Ops, LayerNormToleranceGrowsWithTheRowsConditioning) {
  using course::DType;
  using course::Op;
  // Two rows of 4: one centred on 0, one on 1000 with the same spread.
  std::vector<double> x{-1, 1, -1, 1, 999, 1001, 999, 1001}, g{1, 1, 1, 1}, b{0, 0, 0, 0};
  std::vector<double> y(8), mean(2), rstd(2);
  course::Args a;
  course::reference(Op::layer_norm, {x.data(), g.data(), b.data()}, 2, 4, {y.data(), mean.data(), rstd.data()}, a);
  const std::vector<const double*> in{x.data(), g.data(), b.data()};
  const std::vector<double*> ref{y.data(), mean.data(), rstd.data()};
  auto t0 = course::op_row_tolerance(Op::layer_norm, DType::f32, 0, in, ref, 0, 4);
  auto t1 = course::op_row_tolerance(Op::layer_norm, DType::f32, 0, in, ref, 1, 4);
  EXPECT_DOUBLE_EQ(t0.atol, course::op_tolerance(Op::layer_norm, DType::f32, 0).atol);
  EXPECT_GT(t1.atol, 500 * t0.atol);  // |mean| * rstd is about 1000 on the second row
  auto r1 = course::op_row_tolerance(Op::layer_norm, DType::f32, 2, in, ref, 1, 4);
  EXPECT_GT(r1.rtol, 1e-4);  // rstd's relative error: about 2^-24 * 1000 * 8
  // Other operations keep their fixed tolerance.
  auto s = course::op_row_tolerance(Op::softmax, DType::f16, 0, in, ref, 1, 4);
  EXPECT_DOUBLE_EQ(s.rtol, course::op_tolerance(Op::softmax, DType::f16, 0).rtol);
}

TEST(Ops, BackwardOperations) {
  using course::DType;
  using course::Op;
  const auto& bw = course::op_spec(Op::softmax_backward);
  ASSERT_EQ(bw.inputs.size(), 2u);
  EXPECT_EQ(bw.inputs[0].slot, &course::Args::x);   // the forward output y
  EXPECT_EQ(bw.inputs[1].slot, &course::Args::dy);  // the upstream gradient
  EXPECT_EQ(bw.outputs[0].slot, &course::Args::y);  // dx
  EXPECT_STREQ(course::op_name(Op::log_softmax_backward), "log_softmax_backward");
  // Three tensors moved: y and dy read, dx written.
  EXPECT_EQ(course::bytes_moved(Op::softmax_backward, 49152, 1024, DType::f32), 3LL * 49152 * 1024 * 4);
  EXPECT_EQ(course::bytes_moved(Op::log_softmax_backward, 7, 3, DType::bf16), 3LL * 21 * 2);
  // The reference through the operation: y = (0.25, 0.75), dy = (1, 0): dot 0.25, dx = y * (dy - dot).
  std::vector<double> y{0.25, 0.75}, dy{1, 0}, dx(2);
  course::Args a;
  course::reference(Op::softmax_backward, {y.data(), dy.data()}, 1, 2, {dx.data()}, a);
  EXPECT_DOUBLE_EQ(dx[0], 0.25 * 0.75);
  EXPECT_DOUBLE_EQ(dx[1], 0.75 * -0.25);
  // The absolute tolerance grows with the row's sum of |dy * y|.
  std::vector<double> big{100, 100};
  auto small_tol = course::op_row_tolerance(Op::softmax_backward, DType::f32, 0, {y.data(), dy.data()}, {dx.data()}, 0, 2);
  auto big_tol = course::op_row_tolerance(Op::softmax_backward, DType::f32, 0, {y.data(), big.data()}, {dx.data()}, 0, 2);
  EXPECT_DOUBLE_EQ(small_tol.atol, course::op_tolerance(Op::softmax_backward, DType::f32, 0).atol);
  EXPECT_GT(big_tol.atol, 50 * small_tol.atol);
}

TEST(Ops, ScaleMaskSoftmax) {
  using course::DType;
  using course::Op;
  const auto& spec = course::op_spec(Op::scale_mask_softmax);
  ASSERT_EQ(spec.inputs.size(), 2u);
  EXPECT_EQ(spec.inputs[1].slot, &course::Args::b);
  EXPECT_EQ(spec.inputs[1].elem, course::Elem::u8);  // the mask: one byte per element
  EXPECT_EQ(course::tensor_dtype(spec.inputs[1].elem, DType::f16), DType::u8);
  EXPECT_EQ(course::dtype_size(DType::u8), 1);
  DType parsed;
  EXPECT_FALSE(course::parse_dtype("u8", &parsed));  // a mask type, never a variant's storage type
  // x and y in the storage type, the mask a byte per element.
  EXPECT_EQ(course::bytes_moved(Op::scale_mask_softmax, 4, 8, DType::bf16), 4LL * 8 * (2 + 1 + 2));
  // Reference: masked positions are -inf (weight 0); a fully masked row is NaN, as in PyTorch.
  std::vector<double> x{1, 2, 3, 4, 5, 6}, mask{0, 1, 0, 1, 1, 1}, y(6);
  course::Args a;
  a.alpha = 0.5f;
  course::reference(Op::scale_mask_softmax, {x.data(), mask.data()}, 2, 3, {y.data()}, a);
  const double e0 = std::exp(0.5), e2 = std::exp(1.5);
  EXPECT_NEAR(y[0], e0 / (e0 + e2), 1e-12);
  EXPECT_EQ(y[1], 0.0);
  EXPECT_NEAR(y[2], e2 / (e0 + e2), 1e-12);
  EXPECT_TRUE(std::isnan(y[3]) && std::isnan(y[4]) && std::isnan(y[5]));
}
