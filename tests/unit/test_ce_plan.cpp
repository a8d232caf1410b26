// Chapter 16's fused plan (16_cross_entropy/plan.h) on the host: the lesson's table of who caches a
// vocabulary row on an H100, the thresholds the suite checks +-1, and a GPU without clusters.
#include <gtest/gtest.h>

#include "16_cross_entropy/plan.h"

namespace {

using ch16::fused_limits;
using ch16::fused_plan;
using ch16::kChunkMaxBytes;

constexpr int64_t kH100Block = 232448 - 64;  // the opt-in maximum less a few bytes of static memory
constexpr int64_t packs(int64_t cols, int elem_bytes) { return cols / (16 / elem_bytes); }

TEST(CePlan, TheLessonsTable) {
  struct Row {
    int64_t cols;
    int elem_bytes, blocks;
    int64_t chunk_bytes;
  };
  for (const Row& r : {Row{32000, 2, 1, 64000}, Row{50257, 2, 1, 100512}, Row{128256, 2, 4, 64128},
                       Row{32000, 4, 2, 64000}, Row{50257, 4, 2, 100512}, Row{128256, 4, 8, 64128}}) {
    const ch16::FusedPlan p = fused_plan(packs(r.cols, r.elem_bytes), kH100Block, kH100Block, true);
    EXPECT_EQ(p.blocks, r.blocks) << r.cols << " columns of " << r.elem_bytes << " bytes";
    EXPECT_EQ(p.chunk_packs * 16, r.chunk_bytes) << r.cols << " columns of " << r.elem_bytes << " bytes";
  }
}

TEST(CePlan, EveryThresholdPlusMinusOne) {
  const ch16::FusedLimits l = fused_limits(kH100Block, kH100Block, true);
  EXPECT_EQ(l.one_block * 16, kChunkMaxBytes);
  EXPECT_EQ(fused_plan(l.one_block, kH100Block, kH100Block, true).blocks, 1);
  EXPECT_EQ(fused_plan(l.one_block + 1, kH100Block, kH100Block, true).blocks, 2);
  int c = 2;
  for (int64_t most : l.cluster) {
    EXPECT_EQ(fused_plan(most - 1, kH100Block, kH100Block, true).blocks, c);
    EXPECT_EQ(fused_plan(most, kH100Block, kH100Block, true).blocks, c);
    const ch16::FusedPlan past = fused_plan(most + 1, kH100Block, kH100Block, true);
    EXPECT_EQ(past.blocks, c == 16 ? 0 : 2 * c) << "past a cluster of " << c;
    c *= 2;
  }
}

TEST(CePlan, ChunksCoverTheRowAndFit) {
  for (int64_t p = 1; p < 300000; p += 997) {
    const ch16::FusedPlan f = fused_plan(p, kH100Block, kH100Block, true);
    if (f.blocks == 0) continue;
    EXPECT_GE(f.chunk_packs * f.blocks, p);
    EXPECT_LT(f.chunk_packs * (f.blocks - 1), p) << "a block with nothing to cache at " << p << " packs";
    EXPECT_LE(f.chunk_packs * 16, kChunkMaxBytes);
  }
}

TEST(CePlan, WithoutClustersOneBlockTakesAllItsSharedMemory) {
  const int64_t whole = kH100Block / 16;
  EXPECT_EQ(fused_plan(whole, kH100Block, 0, false).blocks, 1);
  EXPECT_EQ(fused_plan(whole + 1, kH100Block, 0, false).blocks, 0);
  const ch16::FusedLimits l = fused_limits(kH100Block, 0, false);
  EXPECT_EQ(l.one_block, whole);
  for (int64_t most : l.cluster) EXPECT_EQ(most, 0);
  EXPECT_EQ(fused_plan(1, 0, 0, false).blocks, 0);  // no device: nobody caches
}

}  // namespace
