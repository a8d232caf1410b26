// The production softmax's policy (chapters/12_production_softmax/policy.h): the forward and backward
// path rules at each threshold +-1 on three made-up GPUs, and the suite's boundary shapes
// (limits.h) on each side of the rules' changes. Host-only: no GPU needed.
#include <gtest/gtest.h>

#include <algorithm>
#include <initializer_list>
#include <utility>
#include <vector>

#include "12_production_softmax/block_regs_pick.h"
#include "12_production_softmax/limits.h"
#include "blocks/peel.h"
#include "12_production_softmax/policy.h"

namespace {

using ch12::Path;
using ch12::policy::Device;
using ch12::policy::Op;
namespace policy = ch12::policy;

// An H100: 132 SMs, 227 KB of opt-in shared memory per block, 2048 threads per SM, clusters and the
// bulk copy. An A100-like GPU without clusters or the bulk copy (163 KB, 108 SMs). A card with less
// shared memory (99 KB, 128 SMs of 1536 threads), no clusters, no bulk copy.
constexpr Device kH100{227 * 1024, 132, 2048, true, true, 2 * 2.619 * 640};
// An H200: the H100 but for its DRAM (3201 MHz, 6016 bits: 4814 GB/s).
constexpr Device kH200{227 * 1024, 132, 2048, true, true, 2 * 3.201 * 752};
constexpr Device kNoHopper{163 * 1024, 108, 2048, false, false};
constexpr Device kSmallSmem{99 * 1024, 128, 1536, false, false};

Path fwd(const Device& d, int64_t rows, int64_t cols, int elem = 4, bool packed = true, Op op = Op::softmax) {
  return policy::forward_path(d, op, rows, cols, elem, packed);
}
Path bwd(const Device& d, int64_t rows, int64_t cols, int elem = 4, bool packed = true, Op op = Op::softmax_backward) {
  return policy::backward_path(d, op, rows, cols, elem, packed);
}

TEST(SoftmaxPolicy, DerivedFromTheDevice) {
  EXPECT_EQ(policy::long_rows_min(kH100), 4224);  // 32 x 132
  EXPECT_EQ(policy::cluster_rows_below(kH100), 66);
  EXPECT_EQ(policy::cluster_rows_below(kNoHopper), 0);
  EXPECT_EQ(policy::half_wave_threads(kH100), 135168);
  EXPECT_EQ(policy::cols_in_smem(kH100, 4, 1), 57856);  // (232448 - 1024) / 4
  EXPECT_EQ(policy::cols_in_smem(kH100, 2, 1), 115712);
  EXPECT_EQ(policy::cols_in_smem(kH100, 4, 2), 28928);
  EXPECT_EQ(policy::cols_in_smem(kSmallSmem, 4, 1), 25088);
  EXPECT_EQ(policy::cols_in_smem(Device{}, 4, 1), 0);  // no GPU
  EXPECT_EQ(policy::backward_cluster_max_cols(kH100, 4), 16 * 28928);
  EXPECT_EQ(policy::warp_max_cols(4), 1024);
  EXPECT_EQ(policy::warp_max_cols(2), 3072);
}

TEST(SoftmaxPolicy, BytesInFlightScaleWithBandwidth) {
  const int64_t fwd48 = policy::kBlockRegsForwardInFlight;
  EXPECT_EQ(policy::in_flight_target(kH100, fwd48), fwd48);                         // measured there
  EXPECT_EQ(policy::in_flight_target(kNoHopper, fwd48), fwd48);                     // bandwidth unknown
  EXPECT_EQ(policy::in_flight_target(Device{}, fwd48), fwd48);                      // no GPU
  const double ratio = (2 * 3.201 * 752) / (2 * 2.619 * 640);                       // 1.436
  EXPECT_NEAR(double(policy::in_flight_target(kH200, fwd48)), fwd48 * ratio, 1.0);
  EXPECT_EQ(policy::in_flight_target(kH100, policy::kBlockRegsBackwardInFlight), policy::kBlockRegsBackwardInFlight);
  EXPECT_GT(policy::in_flight_target(kH200, policy::kBlockRegsBackwardInFlight), 90 * 1024);
}

// The block-registers block size (policy::block_regs_pick) on the candidates the launcher builds,
// with each kernel's resident rows from its registers (ptxas, sm_90; 2048 threads an SM): the
// choices the H200's rounds measured best (chapter 12's TUNING.md), and the H100's at 16-bit 4096.
TEST(SoftmaxPolicy, BlockRegsBlockSize) {
  using C = policy::BlockRegsCandidate;
  auto pick = [](std::initializer_list<C> c, int64_t row_bytes, int64_t in_flight) {
    const std::vector<C> v(c);
    const int i = policy::block_regs_pick(v.data(), int(v.size()), row_bytes, in_flight);
    return i < 0 ? 0 : v[size_t(i)].block;
  };
  const int64_t h200 = policy::in_flight_target(kH200, policy::kBlockRegsForwardInFlight);  // 69 KB
  const int64_t h100 = policy::kBlockRegsForwardInFlight;                                    // 48 KB
  // fp32 6144 columns (24 KB): 768 threads hold two rows (48 KB), 512 four (96 KB): three rows first.
  EXPECT_EQ(pick({{384, 4, 5}, {512, 3, 4}, {768, 2, 2}, {1024, 2, 2}}, 24576, h200), 512);
  // fp32 8192 (32 KB): 768 and 1024 hold two rows (64 KB, nearer the target), 512 four.
  EXPECT_EQ(pick({{512, 4, 4}, {768, 3, 2}, {1024, 2, 2}}, 32768, h200), 512);
  // fp32 3072 (12 KB): 384 threads, 60 KB (short), against 256, 96 KB: the shortfall weighs 1.5.
  EXPECT_EQ(pick({{256, 3, 8}, {384, 2, 5}, {512, 2, 4}, {768, 1, 2}, {1024, 1, 2}}, 12288, h200), 384);
  // fp32 1536 (6 KB): 256 threads, 48 KB, short by more than 128 threads' 96 KB is past.
  EXPECT_EQ(pick({{128, 3, 16}, {256, 2, 8}, {384, 1, 5}, {512, 1, 4}, {768, 1, 2}, {1024, 1, 2}}, 6144, h200), 128);
  // 16-bit 4096 (8 KB) on the H100: 384 threads (40 KB) against 256 (64 KB), the lesson's exercise 2.
  EXPECT_EQ(pick({{256, 2, 8}, {384, 2, 5}, {512, 1, 4}, {768, 1, 2}, {1024, 1, 2}}, 8192, h100), 384);
  // fp32 12289, peeled (48 KB): only 768 and 1024 hold it, one and two rows: none has three.
  EXPECT_EQ(pick({{768, 4, 2}, {1024, 4, 1}}, 49156, h200), 768);
  EXPECT_EQ(pick({{256, 2, 4}, {512, 1, 4}}, 16384, h200), 256);  // a tie: the smaller block
  EXPECT_EQ(pick({{1024, 4, 0}}, 65536, h200), 0);                 // no resident row: none
  EXPECT_EQ(pick({}, 65536, h200), 0);
}

TEST(SoftmaxPolicy, WarpPacksPerLane) {
  EXPECT_EQ(policy::warp_min_packs(4, 32), 1);
  EXPECT_EQ(policy::warp_min_packs(4, 33), 2);
  EXPECT_EQ(policy::warp_min_packs(4, 128), 2);
  EXPECT_EQ(policy::warp_min_packs(4, 129), 4);
  EXPECT_EQ(policy::warp_min_packs(4, 256), 4);
  EXPECT_EQ(policy::warp_min_packs(4, 257), 1);
  EXPECT_EQ(policy::warp_min_packs(8, 64), 1);  // 16-bit rows: one pack per lane
}

// Rows that are not whole packs but that the peel reads in packs (peel.h): the block-registers
// path takes them from more than 4 KB to 12288 columns in fp32, 16-bit ones past the warp path's 3072
// columns up to 8 KB (policy::block_regs_forward_peeled_fits),
// within its band for packed rows; the tile path, whose bulk copies move whole rows, never does.
TEST(SoftmaxPolicy, PeeledRows) {
  auto peeled = [](const Device& d, int64_t rows, int64_t cols, int elem, Op op = Op::softmax) {
    return policy::forward_path(d, op, rows, cols, elem, /*packed=*/false, /*peeled=*/true);
  };
  const int64_t many = policy::long_rows_min(kH100);
  EXPECT_EQ(peeled(kH100, many, 1025, 4), Path::block_regs);
  EXPECT_EQ(peeled(kH100, many, 2049, 4), Path::block_regs);   // fp32: to 12288 columns
  EXPECT_EQ(peeled(kH100, many, 12287, 4), Path::block_regs);
  EXPECT_EQ(peeled(kH100, many, 12289, 4), Path::smem);
  EXPECT_EQ(peeled(kH100, many, 16383, 4), Path::smem);
  EXPECT_EQ(peeled(kH100, many, 1023, 4), Path::warp);
  EXPECT_EQ(peeled(kH100, many - 1, 1025, 4), Path::smem);  // too few rows
  EXPECT_EQ(peeled(kH100, many, 2047, 2), Path::warp);      // 4 KB or less
  EXPECT_EQ(peeled(kH100, many, 2049, 2), Path::warp);        // 16-bit: the warp path to 3072
  EXPECT_EQ(peeled(kH100, many, 3071, 2), Path::warp);
  EXPECT_EQ(peeled(kH100, many, 3073, 2), Path::block_regs);
  EXPECT_EQ(peeled(kH100, many, 4095, 2), Path::block_regs);
  EXPECT_EQ(peeled(kH100, many, 4097, 2), Path::smem);
  EXPECT_EQ(peeled(kH100, many, 8191, 2), Path::smem);
  EXPECT_EQ(peeled(kH100, many, 33, 4), Path::warp);  // never tile
  EXPECT_EQ(peeled(kH100, many, 65, 2), Path::warp);
  EXPECT_EQ(peeled(kH100, many, 1025, 4, Op::scale_mask_softmax), Path::smem);  // plain ops only
  EXPECT_EQ(fwd(kH100, many, 1025, 4, /*packed=*/false), Path::smem);  // neither packed nor peeled
  EXPECT_EQ(fwd(kH100, many, 4092, 4), Path::block_regs);              // packed rows keep the whole band
  // The backward: y and dy of 4 KB to under 32 KB together, packed; peeled, over 4 KB up to 8 KB each;
  // fp32 rows, packed or peeled, to the path's 16384 columns.
  auto bpeeled = [](const Device& d, int64_t rows, int64_t cols, int elem) {
    return policy::backward_path(d, Op::softmax_backward, rows, cols, elem, /*packed=*/false, /*peeled=*/true);
  };
  EXPECT_EQ(bpeeled(kH100, many, 513, 4), Path::warp);
  EXPECT_EQ(bpeeled(kH100, many, 1025, 4), Path::block_regs);
  EXPECT_EQ(bpeeled(kH100, many, 2047, 4), Path::block_regs);
  EXPECT_EQ(bpeeled(kH100, many, 2049, 4), Path::block_regs);
  EXPECT_EQ(bpeeled(kH100, many, 16383, 4), Path::block_regs);
  EXPECT_EQ(bpeeled(kH100, many, 16385, 4), Path::smem);
  EXPECT_EQ(bpeeled(kH100, many, 1025, 2), Path::warp);
  EXPECT_EQ(bpeeled(kH100, many, 4095, 2), Path::block_regs);
  EXPECT_EQ(bpeeled(kH100, many, 4097, 2), Path::smem);
  EXPECT_EQ(bpeeled(kH100, many, 127, 4), Path::warp);  // never tile
  EXPECT_EQ(bwd(kH100, many, 513, 4, /*packed=*/false), Path::warp);
}

TEST(SoftmaxPolicy, ForwardBlockRegisters) {
  const int64_t r = policy::long_rows_min(kH100);
  EXPECT_EQ(fwd(kH100, r, 1024), Path::warp);        // 4 KB: not more than 4 KB
  EXPECT_EQ(fwd(kH100, r, 1028), Path::block_regs);  // the first packed row past 4 KB
  EXPECT_EQ(fwd(kH100, r - 1, 1028), Path::smem);    // rows too few
  EXPECT_EQ(fwd(kH100, r, 1029, 4, false), Path::smem);  // not packed
  EXPECT_EQ(fwd(kH100, r, 4096), Path::block_regs);    // fp32: to the path's limit
  EXPECT_EQ(fwd(kH100, r, 16384), Path::block_regs);
  EXPECT_EQ(fwd(kH100, r, 16388), Path::smem);          // past 16 elements a thread of 1024
  EXPECT_EQ(fwd(kH100, r, 2048, 2), Path::warp);        // 16-bit: in a warp's registers to 3072 columns
  EXPECT_EQ(fwd(kH100, r, 2056, 2), Path::warp);
  EXPECT_EQ(fwd(kH100, r, 3072, 2), Path::warp);
  EXPECT_EQ(fwd(kH100, r, 3080, 2), Path::block_regs);  // the first packed row past the warp path's
  EXPECT_EQ(fwd(kH100, r - 1, 3080, 2), Path::smem);    // rows too few
  EXPECT_EQ(fwd(kH100, r, 8192, 2), Path::block_regs);  // 16 KB
  EXPECT_EQ(fwd(kH100, r, 8200, 2), Path::smem);
  EXPECT_EQ(fwd(kH100, r, 3080, 2, true, Op::scale_mask_softmax), Path::smem);  // no block_regs: smem
  EXPECT_EQ(fwd(kH100, r, 1028, 4, true, Op::unfused_logits), Path::smem);
  const int64_t small = policy::long_rows_min(kSmallSmem);  // 4096
  EXPECT_EQ(fwd(kSmallSmem, small, 1028), Path::block_regs);
  EXPECT_EQ(fwd(kSmallSmem, small - 1, 1028), Path::smem);
}

TEST(SoftmaxPolicy, ForwardWarpRows) {
  const int64_t r = policy::long_rows_min(kH100);
  EXPECT_EQ(fwd(kH100, 1, 1024, 2), Path::warp);
  EXPECT_EQ(fwd(kH100, 1, 1025, 2), Path::smem);      // past 1024 columns, few rows
  EXPECT_EQ(fwd(kH100, r - 1, 1025, 2), Path::smem);
  EXPECT_EQ(fwd(kH100, r, 1025, 2), Path::warp);
  EXPECT_EQ(fwd(kH100, r, 3072, 2, false), Path::warp);
  EXPECT_EQ(fwd(kH100, r, 3073, 2, false), Path::smem);  // past the warp's registers
  EXPECT_EQ(fwd(kH100, r, 1025, 4, false), Path::smem);  // fp32: 1024 at most
}

TEST(SoftmaxPolicy, ForwardTile) {
  EXPECT_EQ(fwd(kH100, 4096, 16), Path::warp);  // 64 bytes
  EXPECT_EQ(fwd(kH100, 4096, 20), Path::tile);
  EXPECT_EQ(fwd(kH100, 4096, 64), Path::tile);  // 256 bytes
  EXPECT_EQ(fwd(kH100, 4096, 68), Path::warp);
  EXPECT_EQ(fwd(kH100, 4096, 21, 4, false), Path::warp);  // not packed
  EXPECT_EQ(fwd(kH100, 4096, 32, 2), Path::warp);   // 64 bytes
  EXPECT_EQ(fwd(kH100, 4096, 40, 2), Path::tile);
  EXPECT_EQ(fwd(kH100, 4096, 128, 2), Path::tile);
  EXPECT_EQ(fwd(kH100, 4096, 136, 2), Path::warp);
  EXPECT_EQ(fwd(kH100, 4096, 32, 4, true, Op::scale_mask_softmax), Path::warp);
  EXPECT_EQ(fwd(kH100, 4096, 32, 4, true, Op::unfused_logits), Path::tile);
  EXPECT_EQ(fwd(kNoHopper, 4096, 32), Path::warp);  // no bulk copy
  EXPECT_EQ(fwd(policy::without_hopper_paths(kH100), 4096, 32), Path::warp);
}

TEST(SoftmaxPolicy, ForwardSharedMemoryAndCluster) {
  EXPECT_EQ(fwd(kH100, 16, 57856), Path::smem);
  EXPECT_EQ(fwd(kH100, 16, 57857), Path::cluster);
  EXPECT_EQ(fwd(kH100, 65, 57860), Path::cluster);
  EXPECT_EQ(fwd(kH100, 66, 57860), Path::uncached);
  EXPECT_EQ(fwd(kH100, 16, 115712, 2), Path::smem);  // 16-bit rows cached as stored
  EXPECT_EQ(fwd(kH100, 16, 115713, 2), Path::cluster);
  // Very few rows (under 132 / 8) of 64 KB and more share a cluster even where one block holds them.
  EXPECT_EQ(policy::few_rows_below(kH100), 16);
  EXPECT_EQ(fwd(kH100, 1, 16383), Path::smem);
  EXPECT_EQ(fwd(kH100, 1, 16384), Path::cluster);
  EXPECT_EQ(fwd(kH100, 15, 16384), Path::cluster);
  EXPECT_EQ(fwd(kH100, 16, 16384), Path::smem);
  EXPECT_EQ(fwd(kH100, 1, 32768, 2), Path::cluster);
  EXPECT_EQ(fwd(kH100, 1, 32767, 2, false), Path::smem);
  EXPECT_EQ(fwd(kH100, 1, 50257, 4, false), Path::cluster);  // a vocabulary row, odd: the peel on the cluster path
  EXPECT_EQ(fwd(kNoHopper, 1, 16384), Path::smem);
  EXPECT_EQ(fwd(kH100, 1, 16384, 4, true, Op::scale_mask_softmax), Path::smem);  // a computed load: not measured
  EXPECT_EQ(fwd(kH100, 1, 16384, 4, true, Op::log_softmax), Path::cluster);
  // Where rule 3 takes the cluster, it streams (the bulk copy); past one block's shared memory it does not.
  EXPECT_TRUE(policy::forward_cluster_streams(kH100, 1, 16384, 4));
  EXPECT_TRUE(policy::forward_cluster_streams(kH100, 15, 57856, 4));
  EXPECT_FALSE(policy::forward_cluster_streams(kH100, 15, 57857, 4));
  EXPECT_FALSE(policy::forward_cluster_streams(kH100, 16, 16384, 4));
  EXPECT_FALSE(policy::forward_cluster_streams(kH100, 1, 16383, 4));
  EXPECT_FALSE(policy::forward_cluster_streams(kNoHopper, 1, 16384, 4));
  EXPECT_EQ(fwd(kH100, 1, 57857, 2, true, Op::scale_mask_softmax), Path::cluster);  // cached as fp32
  EXPECT_EQ(fwd(policy::without_hopper_paths(kH100), 1, 57857), Path::uncached);
  EXPECT_EQ(fwd(kNoHopper, 1, 41472), Path::smem);  // (166912 - 1024) / 4
  EXPECT_EQ(fwd(kNoHopper, 1, 41473), Path::uncached);
  EXPECT_EQ(fwd(kSmallSmem, 1, 25088), Path::smem);
  EXPECT_EQ(fwd(kSmallSmem, 1, 25089), Path::uncached);
}

TEST(SoftmaxPolicy, BackwardBlockRegistersAndTile) {
  const int64_t r = policy::long_rows_min(kH100);
  EXPECT_EQ(bwd(kH100, r, 508), Path::warp);  // y and dy: 4064 bytes
  EXPECT_EQ(bwd(kH100, r, 512), Path::block_regs);
  EXPECT_EQ(bwd(kH100, r - 1, 512), Path::warp);
  EXPECT_EQ(bwd(kH100, r, 513, 4, false), Path::warp);
  EXPECT_EQ(bwd(kH100, r, 4092), Path::block_regs);
  EXPECT_EQ(bwd(kH100, r, 4096), Path::block_regs);  // fp32: to the path's limit
  EXPECT_EQ(bwd(kH100, r, 16384), Path::block_regs);
  EXPECT_EQ(bwd(kH100, r, 16388), Path::smem);
  EXPECT_EQ(bwd(kH100, r - 1, 8192), Path::smem);
  EXPECT_EQ(bwd(kH100, r, 1024, 2), Path::block_regs);
  EXPECT_EQ(bwd(kH100, r, 1016, 2), Path::warp);
  EXPECT_EQ(bwd(kH100, r, 8184, 2), Path::block_regs);
  EXPECT_EQ(bwd(kH100, r, 8192, 2), Path::smem);
  EXPECT_EQ(bwd(kH100, 4096, 16), Path::warp);
  EXPECT_EQ(bwd(kH100, 4096, 20), Path::tile);
  EXPECT_EQ(bwd(kH100, 4096, 128), Path::tile);
  EXPECT_EQ(bwd(kH100, 4096, 132), Path::warp);
  EXPECT_EQ(bwd(kH100, 4096, 24, 2), Path::tile);  // in columns, whatever the dtype
  EXPECT_EQ(bwd(kH100, 4096, 136, 2), Path::warp);
  EXPECT_EQ(bwd(kH100, 4096, 17, 4, false), Path::warp);
  EXPECT_EQ(bwd(kNoHopper, 4096, 20), Path::warp);
}

TEST(SoftmaxPolicy, BackwardSharedMemoryClusterUncached) {
  const Op log = Op::log_softmax_backward;
  EXPECT_EQ(bwd(kH100, 16, 28928), Path::smem);  // y and dy both
  EXPECT_EQ(bwd(kH100, 16, 28929), Path::cluster);
  EXPECT_EQ(bwd(kH100, 16, 28929, 4, true, log), Path::smem);  // dy alone
  EXPECT_EQ(bwd(kH100, 16, 57857, 4, true, log), Path::cluster);
  // Very few rows of 64 KB of each of y and dy and more: a cluster where one block would hold them.
  EXPECT_EQ(bwd(kH100, 15, 16383), Path::smem);
  EXPECT_EQ(bwd(kH100, 15, 16384), Path::cluster);
  EXPECT_EQ(bwd(kH100, 16, 16384), Path::smem);
  EXPECT_EQ(bwd(kH100, 1, 28929, 4, true, log), Path::cluster);
  EXPECT_EQ(bwd(kH100, 1, 32768, 2), Path::cluster);
  EXPECT_EQ(bwd(kNoHopper, 1, 16384), Path::smem);
  EXPECT_EQ(bwd(kH100, 3, 16 * 28928), Path::cluster);
  EXPECT_EQ(bwd(kH100, 3, 16 * 28928 + 4), Path::uncached);  // one pack more than 16 blocks hold
  EXPECT_EQ(bwd(kNoHopper, 1, 20736), Path::smem);  // both: (166912 - 1024) / 2 / 4
  EXPECT_EQ(bwd(kNoHopper, 1, 20737), Path::smem);  // y alone
  EXPECT_EQ(bwd(kNoHopper, 1, 41473), Path::uncached);
  EXPECT_EQ(bwd(kSmallSmem, 1, 25089, 4, true, log), Path::uncached);
  // The cluster grows where a chunk of y and dy stops fitting, from the size that fills the SMs.
  EXPECT_EQ(policy::backward_cluster_size(kH100, 66, 2 * 28928, 4), 2);
  EXPECT_EQ(policy::backward_cluster_size(kH100, 66, 2 * 28928 + 4, 4), 4);
  EXPECT_EQ(policy::backward_cluster_size(kH100, 65, 28929, 4), 4);  // 65 x 2 < 132 SMs
  EXPECT_EQ(policy::backward_cluster_size(kH100, 1, 16 * 28928 + 4, 4), 0);  // one pack more than 16 blocks hold
  EXPECT_EQ(policy::backward_cluster_size(kH100, 1, 16 * 28928 + 1, 4), 16);  // peeled: the odd column is an edge
  EXPECT_EQ(policy::backward_cluster_size(kNoHopper, 1, 28929, 4), 0);
  // The backward's cluster streams with 8 rows a cluster of one block an SM, clusters of 8 at most,
  // and for every peeled row.
  EXPECT_TRUE(policy::backward_cluster_streams(kH100, 528, 2, false));  // 8 x 132 / 2
  EXPECT_FALSE(policy::backward_cluster_streams(kH100, 527, 2, false));
  EXPECT_TRUE(policy::backward_cluster_streams(kH100, 132, 8, false));
  EXPECT_FALSE(policy::backward_cluster_streams(kH100, 131, 8, false));
  EXPECT_FALSE(policy::backward_cluster_streams(kH100, 4096, 16, false));
  EXPECT_TRUE(policy::backward_cluster_streams(kH100, 1, 16, true));
}

// Each boundary shape pair the suite checks sits on each side of a change of the rule's path.
TEST(SoftmaxPolicy, SuiteShapesStraddleTheRules) {
  for (const Device& d : {kH100, kNoHopper, kSmallSmem})
    for (int elem : {4, 2}) {
      const int64_t r = policy::long_rows_min(d);
      const auto [first, end] = ch12::limits::block_regs_cols(elem, false);
      EXPECT_NE(fwd(d, r - 1, first, elem), Path::block_regs);
      EXPECT_EQ(fwd(d, r, first, elem), Path::block_regs);
      EXPECT_NE(fwd(d, r, first - 16 / elem, elem), Path::block_regs);
      EXPECT_EQ(fwd(d, r, end - 16 / elem, elem), Path::block_regs);
      EXPECT_NE(fwd(d, r, end, elem), Path::block_regs);
      const auto [bfirst, bend] = ch12::limits::block_regs_cols(elem, true);
      EXPECT_NE(bwd(d, r - 1, bfirst, elem), Path::block_regs);
      EXPECT_EQ(bwd(d, r, bfirst, elem), Path::block_regs);
      EXPECT_NE(bwd(d, r, bend, elem), Path::block_regs);
      // The peeled band's ends (limits.h's boundary shapes): in at lo and hi, out with a row fewer
      // and at the first peeled cols past hi, forward and backward.
      for (bool backward : {false, true}) {
        const auto [plo, phi] = ch12::limits::block_regs_peeled_cols(elem, backward);
        auto peeled = [&](int64_t rows, int64_t cols) {
          return backward ? policy::backward_path(d, Op::softmax_backward, rows, cols, elem, false, true)
                          : policy::forward_path(d, Op::softmax, rows, cols, elem, false, true);
        };
        EXPECT_EQ(peeled(r, plo), Path::block_regs) << plo;
        EXPECT_EQ(peeled(r, phi), Path::block_regs) << phi;
        EXPECT_NE(peeled(r - 1, plo), Path::block_regs) << plo;
        EXPECT_NE(peeled(r, phi + 2), Path::block_regs) << phi + 2;
      }
      for (auto [rows, cols] : ch12::limits::cluster_rows_boundary(d, policy::cols_in_smem(d, elem, 1)))
        EXPECT_EQ(fwd(d, rows, cols, elem) == Path::cluster, rows < policy::cluster_rows_below(d));
      // The very-few-rows rule: a cluster exactly where the rows are under SMs / 8 and 64 KB or more.
      for (auto [rows, cols] : ch12::limits::few_rows_boundary(d, elem)) {
        const bool in = rows < policy::few_rows_below(d) && cols * elem >= policy::kClusterFewRowsMinBytes;
        EXPECT_EQ(fwd(d, rows, cols, elem, cols % (16 / elem) == 0) == Path::cluster, in) << rows << " x " << cols;
        EXPECT_EQ(bwd(d, rows, cols, elem, cols % (16 / elem) == 0) == Path::cluster, in) << rows << " x " << cols;
      }
      // The cluster kernel's smaller block (paths_cluster.cuh): the shapes take the cluster path, at
      // the start size they name, with chunks of exactly kClusterBlock1024MinPacks packs, cached,
      // and more blocks than SMs.
      for (auto [rows, cols] : ch12::limits::cluster_block_shapes(d, elem)) {
        const int size = policy::cluster_start_size(d, rows);
        const int64_t chunk = course::ceil_div(cols / (16 / elem), int64_t(size));
        EXPECT_EQ(fwd(d, rows, cols, elem, cols % (16 / elem) == 0), Path::cluster) << rows << " x " << cols;
        EXPECT_EQ(policy::cluster_size(d, rows, cols, 16 / elem, elem, 1), size) << rows << " x " << cols;
        EXPECT_EQ(chunk, policy::kClusterBlock1024MinPacks) << rows << " x " << cols;
        EXPECT_GT(rows * size, d.sm_count) << rows << " x " << cols;
      }
      // The half-wave line: two rows per group from warp_two_rows_min rows, one below.
      for (bool backward : {false, true})
        for (int64_t cols : {32, 64, 256}) {
          const int64_t line = ch12::limits::warp_two_rows_min(d, elem, cols, backward);
          if (line <= 1) continue;
          const int width = elem == 4 && !backward && cols > 32 ? int(cols / 4 / policy::warp_min_packs(4, cols))
                                                                 : int(std::min<int64_t>(32, cols / (16 / elem)));
          EXPECT_TRUE(policy::half_wave(d, line, width, 2)) << cols;
          EXPECT_FALSE(policy::half_wave(d, line - 1, width, 2)) << cols;
        }
    }
  EXPECT_TRUE(ch12::limits::cluster_rows_boundary(kNoHopper, 41472).empty());
  EXPECT_TRUE(ch12::limits::cluster_block_shapes(kNoHopper, 4).empty());
  EXPECT_EQ(ch12::limits::cluster_block_shapes(kH100, 4).size(), 4u);  // 65 x 65536 and 32 x 131072, +1 column
  EXPECT_EQ(ch12::limits::cluster_block_shapes(kH100, 4).front(), std::make_pair(int64_t(65), int64_t(65536)));
  EXPECT_EQ(ch12::limits::backward_cluster_shapes(kH100, 4).front(), std::make_pair(int64_t(66), 2 * int64_t(28928)));
  EXPECT_TRUE(ch12::limits::dispatch(Op::softmax, 4, Device{}, true).shapes.empty());  // --list without a GPU
}

}  // namespace

// The peel (12_production_softmax/peel.h): for every phase and row, the packs and the edges cover
// each column exactly once, every pack starts on a kPack boundary, and the edges are fewer than
// two packs.
template <int kPack>
void check_peel() {
  for (int phase = 0; phase < kPack; ++phase)
    for (int64_t cols = 1; cols <= 70; ++cols)
      for (int64_t row = 0; row < 3 * kPack; ++row) {
        const course::RowPeel pl = course::RowPeel::of<kPack>(phase, row, cols);
        std::vector<int> seen(size_t(cols), 0);
        for (int p = 0; p < pl.packs; ++p) {
          const int64_t c0 = pl.head + int64_t(p) * kPack;
          EXPECT_EQ((phase + row * cols + c0) % kPack, 0) << "pack off a boundary";
          for (int j = 0; j < kPack; ++j) ++seen[size_t(c0 + j)];
        }
        EXPECT_LT(pl.edges, 2 * kPack);
        EXPECT_LT(pl.head, kPack);
        for (int i = 0; i < pl.edges; ++i) {
          const int c = pl.edge_col(i);
          ASSERT_TRUE(c >= 0 && c < cols) << c;
          ++seen[size_t(c)];
        }
        for (int64_t c = 0; c < cols; ++c)
          EXPECT_EQ(seen[size_t(c)], 1) << "phase " << phase << " row " << row << " cols " << cols << " col " << c;
      }
}
// pick_phase: the offset every pointer shares from a pack boundary, or -1: offsets that differ, a
// pointer not aligned to its element, or rows longer than RowPeel counts (kPeelMaxCols).
TEST(Peel, PhaseIsSharedOrNone) {
  auto at = [](uintptr_t a) { return reinterpret_cast<const void*>(a); };
  EXPECT_EQ((course::pick_phase<4>(1025, {{at(0x1000), 4}, {at(0x2000), 4}})), 0);
  EXPECT_EQ((course::pick_phase<4>(1025, {{at(0x1004), 4}, {at(0x2014), 4}})), 1);
  EXPECT_EQ((course::pick_phase<4>(1025, {{at(0x1004), 4}, {at(0x2008), 4}})), -1);  // 1 and 2 elements in
  EXPECT_EQ((course::pick_phase<4>(1025, {{at(0x1002), 4}, {at(0x2002), 4}})), -1);  // not aligned to a float
  EXPECT_EQ((course::pick_phase<8>(1025, {{at(0x100e), 2}, {at(0x200e), 2}, {at(0x3007), 1}})), 7);
  EXPECT_EQ((course::pick_phase<4>(course::kPeelMaxCols, {{at(0x1000), 4}})), 0);
  EXPECT_EQ((course::pick_phase<4>(course::kPeelMaxCols + 1, {{at(0x1000), 4}})), -1);  // not peeled
}

TEST(Peel, PacksAndEdgesCoverTheRowOnce) {
  check_peel<4>();
  check_peel<8>();
  // Whole packs on aligned rows: no edges at all.
  const course::RowPeel pl = course::RowPeel::of<8>(0, 5, 4096);
  EXPECT_EQ(pl.head, 0);
  EXPECT_EQ(pl.edges, 0);
  EXPECT_EQ(pl.packs, 512);
}
