/// @file main.cu
/// @brief Chapter 14's executable: softmax and log-softmax backward on the full backward dispatch,
/// each path also registered on its own, so that the suite checks every path at its limits
/// (12_production_softmax/limits.h), and `--paths FILE` to write the dispatch's choice, forward
/// and backward, for every benchmark shape on this GPU (paths_file.cu).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdio>
#include <cstring>
#include <exception>

#include "12_production_softmax/limits.h"
#include "harness/harness.h"
#include "paths_file.h"
#include "softmax.cuh"

namespace {

using ch14::Path;
using course::Op;
using Fn = void (*)(const course::Args&, cudaStream_t, Path);

// `op` on the dispatch, and on each path forced (the tile and cluster paths where this GPU has them).
template <typename T>
void add_paths(course::Chapter& ch, Op op, Fn fn) {
  constexpr course::DType t = course::DTypeOf<T>::value;
  const ch14::policy::Device& d = ch14::device();
  const ch14::policy::Op rule = ch12::limits::policy_op(op);
  ch.add(op, "production", t, [fn](const course::Args& a, cudaStream_t s) { fn(a, s, Path::automatic); },
         ch12::limits::dispatch(rule, sizeof(T), d, true));
  for (Path p : {Path::warp, Path::tile, Path::block_regs, Path::smem, Path::uncached, Path::cluster})
    if ((p != Path::tile || d.bulk_copy) && (p != Path::cluster || d.clusters))
      ch.add(op, ch14::path_name(p), t, [fn, p](const course::Args& a, cudaStream_t s) { fn(a, s, p); },
             ch12::limits::forced(rule, p, sizeof(T), d));
}

template <typename T>
void add_type(course::Chapter& ch) {
  add_paths<T>(ch, Op::softmax_backward, ch14::softmax_backward<T>);
  add_paths<T>(ch, Op::log_softmax_backward, ch14::log_softmax_backward<T>);
}

}  // namespace

int main(int argc, char** argv) {
  course::Chapter ch("14_softmax_backward",
                     "The production softmax's backward: softmax and log-softmax backward over the warp, tile, "
                     "block-registers, shared-memory, cluster and uncached paths");
  add_type<float>(ch);
  add_type<__half>(ch);
  add_type<__nv_bfloat16>(ch);
  ch.add_sweep(course::long_row_sweep());
  ch.add_sweep({{16}, {131072, 1048576, 4194304}});  // very few rows: where several blocks share a row
  if (argc >= 2 && std::strcmp(argv[1], "--paths") == 0) {
    if (argc != 3) {
      std::fprintf(stderr, "usage: %s --paths FILE.json\n", argv[0]);
      return 2;
    }
    try {
      return ch14::write_paths_file(ch, argv[2]);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s --paths: %s\n", argv[0], e.what());
      return 1;
    }
  }
  return ch.run(argc, argv);
}
