/// @file paths_file.h
/// @brief `--paths FILE` of chapter 14's executable (paths_file.cu).
#pragma once

#include "harness/harness.h"

namespace ch14 {

/// Writes the dispatch's choice, forward (chapter 13's full dispatch) and backward, for every shape
/// of the chapter's sweeps, per op and dtype, to `path` as JSON (the lesson's table: the policy's
/// rules with 16-byte packs, and the block-registers path's threads per block). Returns the exit
/// code: 0, 1 when the file cannot be written, 77 without a GPU.
int write_paths_file(const course::Chapter& ch, const char* path);

}  // namespace ch14
