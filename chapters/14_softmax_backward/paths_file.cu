/// @file paths_file.cu
/// @brief `--paths FILE`: the dispatch's choice for every benchmark shape on this GPU, from the
/// same rules the dispatch runs (12_production_softmax/policy.h), forward and backward.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdio>
#include <string>

#include "12_production_softmax/limits.h"
#include "harness/device.h"
#include "paths_file.h"
#include "softmax.cuh"

namespace ch14 {
namespace {

/// [write_paths]
template <typename T>
void write_paths(std::FILE* f, const course::Chapter& ch, bool* first) {
  constexpr int64_t kPack = 16 / sizeof(T);
  for (course::Op op : {course::Op::softmax, course::Op::log_softmax, course::Op::scale_mask_softmax,
                        course::Op::softmax_backward, course::Op::log_softmax_backward})
    for (const course::Sweep& s : ch.sweeps())
      for (int64_t r : s.rows)
        for (int64_t c : s.cols) {  // aligned tensors: 16-byte packs where cols is a multiple of them
          const Path p = policy::path_for(device(), ch12::limits::policy_op(op), r, c, sizeof(T), c % kPack == 0);
          const int block = p == Path::block_regs ? block_regs_threads<T>(op, c) : 0;
          std::fprintf(f,
                       "%s  {\"op\": \"%s\", \"dtype\": \"%s\", \"rows\": %lld, \"cols\": %lld, \"path\": \"%s\"%s%s}",
                       *first ? "" : ",\n", course::op_name(op), course::dtype_name(course::DTypeOf<T>::value),
                       (long long)r, (long long)c, path_name(p), block ? ", \"block\": " : "",
                       block ? std::to_string(block).c_str() : "");
          *first = false;
        }
}
/// [write_paths]

}  // namespace

int write_paths_file(const course::Chapter& ch, const char* path) {
  course::DeviceInfo dev;
  std::string why;
  if (!course::probe_device(&dev, &why)) {
    std::printf("SKIPPED: no usable CUDA GPU (%s)\n", why.c_str());
    return 77;
  }
  std::FILE* f = std::fopen(path, "w");
  if (!f) {
    std::fprintf(stderr, "cannot write %s\n", path);
    return 1;
  }
  const policy::Device& d = device();
  std::fprintf(f, "{\"gpu_name\": \"%s\", \"sm_count\": %d, \"smem_per_block_optin\": %lld, \"clusters\": %s,\n",
               dev.name.c_str(), dev.sm_count, (long long)d.smem_optin, d.clusters ? "true" : "false");
  std::fprintf(f,
               " \"cluster_rows_below\": %lld, \"long_warp_rows_min\": %lld,\n"
               " \"warp_max_cols\": {\"f32\": %lld, \"f16\": %lld, \"bf16\": %lld},\n"
               " \"paths\": [\n",
               (long long)policy::cluster_rows_below(d), (long long)policy::long_rows_min(d),
               (long long)policy::warp_max_cols(4), (long long)policy::warp_max_cols(2),
               (long long)policy::warp_max_cols(2));
  bool first = true;
  write_paths<float>(f, ch, &first);
  write_paths<__half>(f, ch, &first);
  write_paths<__nv_bfloat16>(f, ch, &first);
  std::fprintf(f, "\n]}\n");
  std::fclose(f);
  std::printf("wrote %s\n", path);
  return 0;
}

}  // namespace ch14
