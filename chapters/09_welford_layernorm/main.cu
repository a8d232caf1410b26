/// @file main.cu
/// @brief Chapter 09's executable: the LayerNorm variants on the common harness, and
/// `--accuracy FILE` for the variance experiment.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "accuracy.cuh"
#include "blocks/occupancy.cuh"
#include "harness/harness.h"
#include "layer_norm.cuh"

int main(int argc, char** argv) {
  using course::DType;
  using course::Op;
  if (argc >= 2 && std::strcmp(argv[1], "--accuracy") == 0) {
    if (argc != 3) {
      std::fprintf(stderr, "usage: %s --accuracy FILE.json\n", argv[0]);
      return 2;
    }
    try {
      return ch09::run_accuracy_experiment(argv[2]);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s --accuracy: %s\n", argv[0], e.what());
      return 1;
    }
  }
  course::Chapter ch("09_welford_layernorm", "LayerNorm with Welford statistics: warp, shared-memory, uncached");
  // The warp path's shapes change at each of these (group width, then columns per lane).
  auto warp = [](int64_t max_cols) {
    std::vector<int64_t> shapes{8, 16, 32, 64, 128, 256, 512};
    for (int64_t c = 1024; c < max_cols; c += 512) shapes.push_back(c);
    return course::Limits{max_cols, shapes,
                          "cols <= " + std::to_string(max_cols) + "; the row in registers, 16-byte packs"};
  };
  // The shared-memory limit is read from the GPU (0 when there is none: --list still works).
  auto limit_text = [](int64_t max_cols) {
    return max_cols > 0 ? std::to_string(max_cols) : std::string("the GPU's shared memory");
  };
  auto smem = [&](int64_t max_cols) {
    return course::Limits{max_cols, {}, "cols <= " + limit_text(max_cols) + " (the row in shared memory); rows < 2^31"};
  };
  const course::Limits uncached{0, {}, "any cols (rows < 2^31); the row read twice"};
  // The dispatch's thresholds +-1, and its rows condition past 1024 columns (32 rows per SM) on
  // each side, at the first and last columns it covers.
  // fp32 (warp_max 1024): rows that are not whole packs past 512 columns take the same condition.
  auto dispatch = [&](int64_t warp_max, int64_t smem_max, int64_t rows_min) {
    std::vector<std::pair<int64_t, int64_t>> shapes;
    const int64_t first = warp_max > 1024 ? 1025 : 513, last = warp_max > 1024 ? warp_max : 1023;
    if (rows_min > 0)
      for (int64_t c : {first, last}) shapes.insert(shapes.end(), {{rows_min - 1, c}, {rows_min, c}});
    if (warp_max > 1024) {  // 16-bit: the warp kernel's table (affine_shift.cuh) from 64 MB of x and y, +-1 row
      const int64_t rows_shift = (ch09::kAffineShiftMinBytes + 4 * 1023 - 1) / (4 * 1023);
      shapes.insert(shapes.end(), {{rows_shift - 1, 1023}, {rows_shift, 1023}});
    }
    return course::Limits{0, {warp_max, smem_max},
                          "any cols: warp <= " + std::to_string(warp_max) +
                              (warp_max > 1024 ? " (past 1024: rows >= 32 x SMs)"
                                               : " (past 512, rows not whole packs: rows >= 32 x SMs)") +
                              " < shared memory <= " + limit_text(smem_max) + " < uncached",
                          shapes};
  };
  const int64_t rows_min = course::long_warp_rows_min();
  // The warp path's 16-bit rows that are not whole packs may read gamma and beta shifted per row
  // head (affine_shift.cuh): a table in the workspace.
  const course::WorkspaceFn table = [](int64_t, int64_t cols, DType d) {
    return d == DType::f32 ? size_t(0) : ch09::affine_shift_bytes<__half>(cols);
  };
  ch.add(Op::layer_norm, "warp", DType::f32, ch09::layer_norm_warp<float>, warp(ch09::layer_norm_warp_max_cols<float>()), table);
  ch.add(Op::layer_norm, "warp", DType::f16, ch09::layer_norm_warp<__half>, warp(ch09::layer_norm_warp_max_cols<__half>()), table);
  ch.add(Op::layer_norm, "warp", DType::bf16, ch09::layer_norm_warp<__nv_bfloat16>,
         warp(ch09::layer_norm_warp_max_cols<__nv_bfloat16>()), table);
  ch.add(Op::layer_norm, "smem", DType::f32, ch09::layer_norm_smem<float>, smem(ch09::layer_norm_smem_max_cols<float>()));
  ch.add(Op::layer_norm, "smem", DType::f16, ch09::layer_norm_smem<__half>, smem(ch09::layer_norm_smem_max_cols<__half>()));
  ch.add(Op::layer_norm, "smem", DType::bf16, ch09::layer_norm_smem<__nv_bfloat16>,
         smem(ch09::layer_norm_smem_max_cols<__nv_bfloat16>()));
  ch.add(Op::layer_norm, "uncached", DType::f32, ch09::layer_norm_uncached<float>, uncached);
  ch.add(Op::layer_norm, "uncached", DType::f16, ch09::layer_norm_uncached<__half>, uncached);
  ch.add(Op::layer_norm, "uncached", DType::bf16, ch09::layer_norm_uncached<__nv_bfloat16>, uncached);
  ch.add(Op::layer_norm, "dispatch", DType::f32, ch09::layer_norm<float>,
         dispatch(ch09::layer_norm_warp_up_to<float>(), ch09::layer_norm_smem_max_cols<float>(), rows_min), table);
  ch.add(Op::layer_norm, "dispatch", DType::f16, ch09::layer_norm<__half>,
         dispatch(ch09::layer_norm_warp_up_to<__half>(), ch09::layer_norm_smem_max_cols<__half>(), rows_min), table);
  ch.add(Op::layer_norm, "dispatch", DType::bf16, ch09::layer_norm<__nv_bfloat16>,
         dispatch(ch09::layer_norm_warp_up_to<__nv_bfloat16>(), ch09::layer_norm_smem_max_cols<__nv_bfloat16>(), rows_min), table);
  return ch.run(argc, argv);
}
