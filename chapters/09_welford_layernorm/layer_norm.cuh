/// @file layer_norm.cuh
/// @brief Chapter 09's launchers (layer_norm.cu) and its accuracy experiment (accuracy.cu).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "course/ops.h"

/// The longest row the shared-memory path caches on this GPU (0 without a device).
template <typename T>
int64_t layer_norm_smem_max_cols();

/// The largest cols the dispatch sends to the warp path (512 for fp32, 3072 for 16-bit types;
/// past 1024 only with rows >= 32 x the SM count).
template <typename T>
int64_t layer_norm_warp_up_to();

/// Largest cols the warp path holds (its registers): 1024 for fp32, 3072 for f16 and bf16.
template <typename T>
int64_t layer_norm_warp_max_cols();

/// A group of lanes per row, the row in registers: cols <= layer_norm_warp_max_cols<T>(); short
/// rows give each lane at least kMinPacks packs (the chapter uses 2).
template <typename T, int kMinPacks = 2>
void layer_norm_warp(const course::Args& a, cudaStream_t stream);
/// A block per row, the row cached in shared memory: cols <= layer_norm_smem_max_cols<T>().
template <typename T>
void layer_norm_smem(const course::Args& a, cudaStream_t stream);
/// A block per row, the row read twice from global memory: any cols.
template <typename T>
void layer_norm_uncached(const course::Args& a, cudaStream_t stream);
/// The three above, chosen by cols.
template <typename T>
void layer_norm(const course::Args& a, cudaStream_t stream);

/// Runs the variance experiment (sum of squares, two-pass, Welford on data with a growing common
/// offset; errors against float64) and writes its JSON to `path`. Returns the exit code.
int run_accuracy_experiment(const std::string& path);
