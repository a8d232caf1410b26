/// @file npy.h
/// @brief Writes arrays as NumPy .npy files (format version 1.0), for checking a case in Python.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "harness/dtype.h"

namespace course {

/// Writes `data` (row-major, little-endian) with NumPy type string `descr` ("<f4", "<f2",
/// "<f8", "<u2") and `shape`. Throws std::runtime_error when the file cannot be written.
void write_npy(const std::string& path, const void* data, const std::string& descr, const std::vector<int64_t>& shape);

/// The .npy header (magic, version, length, dict, padding to 64 bytes), for tests.
std::string npy_header(const std::string& descr, const std::vector<int64_t>& shape);

/// Writes a host buffer of storage type t: f32 as "<f4", f16 as "<f2", bf16 widened exactly
/// to "<f4" (NumPy has no bfloat16).
void write_npy_dtype(const std::string& path, const void* data, DType t, const std::vector<int64_t>& shape);

}  // namespace course
