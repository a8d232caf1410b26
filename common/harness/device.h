/// @file device.h
/// @brief Device-side helpers of the harness: buffers, seeded inputs, poison, L2 flush, the GPU.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "harness/dtype.h"
#include "harness/ops.h"

namespace course {

/// An owning device allocation (cudaMalloc / cudaFree).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

/// How seeded inputs are drawn. Values are normal(0, 1) * scale + shift, the same for a given
/// seed and element index on any GPU.
struct FillSpec {
  uint64_t seed = 1;
  float scale = 1.0f;
  float shift = 0.0f;
  bool outliers = true;   ///< about 1 element in 61 multiplied by 20, so softmax is not flat
  bool specials = false;  ///< special rows (see fill())
  bool norm_rows = false;  ///< a norm's hard rows, without special values (see fill())
  // Cross-entropy (#41): the targets' fill (an i32 tensor), and its coupling with x's special rows.
  int64_t classes = 0;         ///< i32: targets in [0, classes) (the vocabulary, x's cols); must be >= 1
  int32_t ignore_index = -100;  ///< i32: the value of an ignored row (Args::ignore_index)
  bool all_ignored = false;    ///< i32: every row ignored (the mean of nothing: NaN, as PyTorch's)
  bool none_ignored = false;   ///< i32: no row ignored (the benchmarks: every row's logits are read,
                               ///< as the bytes model counts them)
  bool ce_rows = false;        ///< with specials: x's row r % 8 == 4 is -inf everywhere but its keep
                               ///< column, and (i32) that row's target is the keep column (loss 0)
  uint64_t keep_seed = 0;      ///< i32 with ce_rows: x's seed, which places each row's keep column
};

/// Fills rows x cols elements of type t at p, on the device, from spec.
/// With specials, row r gets, by r % 8: 0 random; 1 all -inf; 2 one +inf; 3 one NaN;
/// 4 about half -inf (masking, one column kept finite); 5 constant; 6 shifted by +1000;
/// 7 scaled by 30. With norm_rows, row r gets, by r % 4: 1 a large mean, 1e4 + normal(0, 1);
/// 2 constant (zero variance); 0 and 3 as without. A u8 tensor is a mask (1: masked): a quarter of
/// the elements at random, every 11th row from row 3 fully masked, every 11th from row 7 all but
/// one element masked. An i32 tensor is cross-entropy's targets, one per element (rows x cols of them:
/// the verification fills rows x 1): uniform in [0, spec.classes) from the seed, about 1 in 16 set to
/// spec.ignore_index (every one with all_ignored); with ce_rows, element r with r % 8 == 4 holds
/// row r's keep column of x's fill (seed keep_seed), never ignored. Throws std::invalid_argument for an
/// i32 fill with classes < 1 or past 2^31 - 1.
void fill(void* p, DType t, int64_t rows, int64_t cols, const FillSpec& spec, cudaStream_t s);

/// Fills the inputs that op_spec(op) derives from x (Source: a norm backward's saved mean and
/// rstd), x already filled: `in` holds the device pointers of every input, in op_spec order. x is
/// read back a chunk of rows at a time and each row's statistic computed on the host
/// (saved_row_stat: in double, rounded to fp32), as the forward would have saved it. Cross-entropy's
/// saved lse also needs the targets (in[1], read back whole) and `ignore_index` (saved_lse).
void fill_derived_inputs(Op op, DType t, int64_t rows, int64_t cols, float eps, const std::vector<void*>& in,
                         cudaStream_t s, int64_t ignore_index = -100);
/// The benchmarks' saved lse of a cross-entropy backward: each row's logsumexp in fp32 on the
/// device (0 where the row is ignored), one block per row. The suite derives it on the host in
/// float64 (fill_derived_inputs); a benchmark only needs plausible values, and the host's pass
/// over 8 GB of logits cost tens of seconds per shape.
void saved_lse_on_device(DType t, int64_t rows, int64_t cols, const void* x, const int32_t* target,
                         int64_t ignore_index, float* lse, cudaStream_t s);

/// Cross-entropy's targets (`rows` int32 at a device pointer) read back and checked against the
/// vocabulary `cols` (check_targets: UsageError naming the first bad row); returns the count of rows
/// not ignored (Args::valid_rows).
int64_t check_device_targets(const void* target, int64_t rows, int64_t cols, int64_t ignore_index);

/// Sets `bytes` bytes at p to `pattern` (0xFF is NaN in every dtype: an unwritten element
/// then fails the comparison).
void poison(void* p, size_t bytes, uint8_t pattern, cudaStream_t s);

/// The GPU the harness runs on, and its environment stamp.
struct DeviceInfo {
  int device = 0;
  std::string name;  ///< "NVIDIA H100 80GB HBM3"
  std::string slug;  ///< "h100-80gb-hbm3": the folder under plots/data/
  std::string uuid;  ///< "GPU-8a7c...": which board, as nvidia-smi names it (runs on one GPU model differ)
  int sm_count = 0;
  int cc_major = 0, cc_minor = 0;
  int64_t l2_bytes = 0;
  int64_t total_mem = 0;
  int sm_clock_khz = 0, mem_clock_khz = 0, mem_bus_bits = 0;
  int smem_per_block_optin = 0;
  int driver_version = 0, runtime_version = 0;
};

/// Returns true and fills `info` when a CUDA GPU is usable; false with `why` otherwise.
bool probe_device(DeviceInfo* info, std::string* why);

/// "NVIDIA H100 80GB HBM3" -> "h100-80gb-hbm3"; "NVIDIA GeForce RTX 4090" -> "rtx-4090".
std::string gpu_slug(const std::string& name);

/// A device UUID's 16 bytes as nvidia-smi writes them: "GPU-" and 8-4-4-4-12 lowercase hex digits.
std::string gpu_uuid_text(const unsigned char bytes[16]);

/// Multiprocessors of the current device (cached per device): launchers size grids with it.
int sm_count();

/// Threads one multiprocessor of the current device holds at once (cached per device): 2048 on
/// the A100 and H100, 1536 on sm_86 and sm_89 cards. Launchers count a wave with it.
int threads_per_sm();

/// Peak DRAM bandwidth of the current device in GB/s (cached per device): twice the memory clock
/// times the bus width, the number a data sheet gives (3352 on the H100 SXM, 4814 on the H200).
/// 0 where the device reports either as 0. Chapter 12's block size aims at bytes in flight in
/// proportion to it (Little's law).
double dram_peak_gbps();

/// The architecture the device code this build runs on the current device was compiled for (the
/// smaller of cudaFuncAttributes' binaryVersion and ptxVersion: 90 for sm_90 code, 80 for compute_80
/// PTX the driver compiled for an H100), 0 without a GPU; asked once. Kernels that use sm_90
/// features compile to nothing below it, so a launcher asks this before taking their path.
int device_code_version();

/// Whether the current device can run this build's bulk copies (chapter 12: bulk_copy.cuh): compute
/// capability 9.0 or later and device code built for it (device_code_version). Asked once; false
/// without a GPU.
bool bulk_copy_available();

/// One wave: the blocks of `block_threads` threads the current device holds at once, counted by
/// threads (SMs x threads per SM / block_threads, at least one per SM).
int64_t wave_blocks(int block_threads);

/// Blocks of `block_threads` threads for `items` work items, `items_per_block` per block: one for
/// every item, at most `waves` waves of the current device (grid_blocks in launch_math.h).
unsigned resident_grid(int64_t items, int64_t items_per_block, int block_threads, int waves);

/// How the flush runs, from the environment (read once, by L2Flusher).
struct FlushMode {
  bool clean = false;     ///< COURSE_L2_FLUSH=clean: the memset, then a read of a second buffer
  int fixed_byte = -1;    ///< COURSE_L2_FLUSH_BYTE=N: the memset writes N every time; -1: a new byte each flush
  std::string method;     ///< for the results' timing_method: "memset", "memset+read", each + " of 0xNN"
};
/// Parses COURSE_L2_FLUSH (`mode`: null, empty or "memset" for the course's method, or "clean") and
/// COURSE_L2_FLUSH_BYTE (`byte`: null, empty, or 0-255 in decimal). Anything else throws
/// std::runtime_error naming the variable.
FlushMode flush_mode(const char* mode, const char* byte);

/// Evicts L2 between timed launches by writing a buffer twice the L2's size (cudaMemsetAsync).
///
/// The memset leaves L2 full of *dirty* lines, which the timed kernel then writes back to DRAM as
/// it evicts them. `clean` mode (for experiments) follows the memset with a read of a second buffer
/// of the same size, so that the write-back happens before the timed region and the kernel finds L2
/// full of clean lines. The memset writes a new byte each time (1, 2, ..., 255, 0, 1, ...), or a
/// fixed one (for experiments: the lines the timed kernel writes back then all hold it). FlushMode
/// has the environment variables.
class L2Flusher {
 public:
  explicit L2Flusher(int64_t l2_bytes);
  void flush(cudaStream_t s);
  /// "memset" (the course's method), "memset+read" (clean mode), each with " of 0xNN" for a fixed byte.
  const std::string& method() const { return mode_.method; }

 private:
  DeviceBuffer buf_, read_buf_, sink_;
  uint8_t value_ = 0;
  FlushMode mode_;
};

}  // namespace course
