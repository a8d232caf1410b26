/// @file main.cu
/// @brief Chapter 12's executable: the production softmax, log-softmax and fused scale-and-mask
/// softmax on this chapter's dispatch (warp, block-registers, shared-memory and uncached paths),
/// each path of softmax and log-softmax also registered on its own, so that the suite checks every
/// path at its limits (limits.h: the boundaries, from the policy).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "harness/harness.h"
#include "limits.h"
#include "softmax.cuh"

namespace {

using ch12::Path;
using course::Op;
using Fn = void (*)(const course::Args&, cudaStream_t, Path);

// `op` on the dispatch, and on each of this chapter's paths forced.
template <typename T>
void add_paths(course::Chapter& ch, Op op, Fn fn, const ch12::policy::Device& d) {
  constexpr course::DType t = course::DTypeOf<T>::value;
  const ch12::policy::Op rule = ch12::limits::policy_op(op);
  ch.add(op, "production", t, [fn](const course::Args& a, cudaStream_t s) { fn(a, s, Path::automatic); },
         ch12::limits::dispatch(rule, sizeof(T), d, false));
  for (Path p : {Path::warp, Path::block_regs, Path::smem, Path::uncached})
    ch.add(op, ch12::path_name(p), t, [fn, p](const course::Args& a, cudaStream_t s) { fn(a, s, p); },
           ch12::limits::forced(rule, p, sizeof(T), d));
}

template <typename T>
void add_type(course::Chapter& ch) {
  constexpr course::DType t = course::DTypeOf<T>::value;
  // The device as this chapter's dispatch sees it: without chapter 13's tile and cluster paths.
  const ch12::policy::Device d = ch12::policy::without_hopper_paths(ch12::device());
  add_paths<T>(ch, Op::softmax, ch12::softmax<T>, d);
  add_paths<T>(ch, Op::log_softmax, ch12::log_softmax<T>, d);
  course::Limits p2 = ch12::limits::forced(ch12::policy::Op::softmax, Path::warp, sizeof(T), d);
  p2.text = "cols <= " + std::to_string(p2.max_cols) + "; short rows: two packs per lane";
  ch.add(Op::softmax, "warp_p2", t, ch12::softmax_warp_min_packs<T, 2>, p2);
  // Scale-and-mask: fused into the load, and as two kernels.
  ch.add(Op::scale_mask_softmax, "fused", t,
         [](const course::Args& a, cudaStream_t s) { ch12::scale_mask_softmax<T>(a, s); },
         ch12::limits::dispatch(ch12::policy::Op::scale_mask_softmax, sizeof(T), d, false));
  ch.add(Op::scale_mask_softmax, "unfused", t, ch12::scale_mask_softmax_unfused<T>,
         course::Limits{0, {}, "any cols; two kernels through an fp32 workspace"}, ch12::unfused_workspace);
}

}  // namespace

int main(int argc, char** argv) {
  course::Chapter ch("12_production_softmax",
                     "The production softmax: functors for fusion, one dispatch over the warp, block-registers, "
                     "shared-memory and uncached paths");
  add_type<float>(ch);
  add_type<__half>(ch);
  add_type<__nv_bfloat16>(ch);
  ch.add_sweep(course::long_row_sweep());
  ch.add_sweep({{16}, {131072, 1048576, 4194304}});  // very few rows: chapter 13's cluster path
  return ch.run(argc, argv);
}
