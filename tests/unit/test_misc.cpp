// Launch arithmetic, the bytes model, .npy output, timing statistics and GPU slugs.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "course/device.h"
#include "course/launch_math.h"
#include "course/npy.h"
#include "course/ops.h"
#include "course/stats.h"

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
