/// @file main.cu
/// @brief Chapter 13's executable: the production softmax, log-softmax and fused scale-and-mask
/// softmax on the full forward dispatch (chapter 12's paths and Hopper's tile and cluster paths),
/// and the tile and cluster paths registered on their own, so that the suite checks them at their
/// limits (chapter 12 registers its own paths forced; the boundaries: 12_production_softmax/limits.h).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "12_production_softmax/limits.h"
#include "harness/harness.h"
#include "softmax.cuh"

namespace {

using ch13::Path;
using course::Op;
using Fn = void (*)(const course::Args&, cudaStream_t, Path);

// `op` on the full dispatch, and on the tile and cluster paths forced (where this GPU has them).
template <typename T>
void add_paths(course::Chapter& ch, Op op, Fn fn, const ch12::policy::Device& d) {
  constexpr course::DType t = course::DTypeOf<T>::value;
  const ch12::policy::Op rule = ch12::limits::policy_op(op);
  ch.add(op, "production", t, [fn](const course::Args& a, cudaStream_t s) { fn(a, s, Path::automatic); },
         ch12::limits::dispatch(rule, sizeof(T), d, true));
  if (d.bulk_copy)
    ch.add(op, "tile", t, [fn](const course::Args& a, cudaStream_t s) { fn(a, s, Path::tile); },
           ch12::limits::forced(rule, Path::tile, sizeof(T), d));
  if (d.clusters)
    ch.add(op, "cluster", t, [fn](const course::Args& a, cudaStream_t s) { fn(a, s, Path::cluster); },
           ch12::limits::forced(rule, Path::cluster, sizeof(T), d));
}

template <typename T>
void add_type(course::Chapter& ch) {
  constexpr course::DType t = course::DTypeOf<T>::value;
  const ch12::policy::Device& d = ch13::device();
  add_paths<T>(ch, Op::softmax, ch13::softmax<T>, d);
  add_paths<T>(ch, Op::log_softmax, ch13::log_softmax<T>, d);
  // Scale-and-mask: fused into the load, and as two kernels (the logits' softmax may take the tile path).
  ch.add(Op::scale_mask_softmax, "fused", t,
         [](const course::Args& a, cudaStream_t s) { ch13::scale_mask_softmax<T>(a, s); },
         ch12::limits::dispatch(ch12::policy::Op::scale_mask_softmax, sizeof(T), d, true));
  ch.add(Op::scale_mask_softmax, "unfused", t, ch13::scale_mask_softmax_unfused<T>,
         course::Limits{0, {}, "any cols; two kernels through an fp32 workspace"}, ch13::unfused_workspace);
}

}  // namespace

int main(int argc, char** argv) {
  course::Chapter ch("13_hopper_softmax",
                     "The production softmax on Hopper: the bulk copy (tile path) for short rows, thread-block "
                     "clusters (cluster path) for few long rows, added to chapter 12's dispatch");
  add_type<float>(ch);
  add_type<__half>(ch);
  add_type<__nv_bfloat16>(ch);
  ch.add_sweep(course::long_row_sweep());
  ch.add_sweep({{16}, {131072, 1048576, 4194304}});  // few rows: where several blocks share a row
  return ch.run(argc, argv);
}
