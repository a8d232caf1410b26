#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "blocks/convert.cuh"
#include "harness/device.h"
#include "harness/errors.h"
#include "harness/launch_math.h"
#include "harness/parallel.h"

namespace course {

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  if (bytes > 0) CUDA_CHECK(cudaMalloc(&ptr_, bytes));
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) cudaFree(ptr_);
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) cudaFree(ptr_);
    ptr_ = std::exchange(o.ptr_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

namespace {

__host__ __device__ inline uint64_t splitmix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// A mask (1: masked): a quarter of the elements at random; every 11th row (from row 3) fully
// masked, which PyTorch's softmax turns into a NaN row; every 11th row from row 7 with a single
// element unmasked (its softmax is exactly 1 there).
__global__ void fill_mask_kernel(uint8_t* p, int64_t rows, int64_t cols, FillSpec spec) {
  const int64_t n = rows * cols;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const uint64_t h = splitmix64(spec.seed * 0x632BE59BD9B4E019ull + uint64_t(i));
    const int64_t r = i / cols, c = i % cols;
    const int64_t keep = int64_t(splitmix64(spec.seed + uint64_t(r)) % uint64_t(cols));
    uint8_t m = (h & 3) == 0;
    if (r % 11 == 3) m = 1;
    if (r % 11 == 7) m = c != keep;
    p[i] = m;
  }
}

// Cross-entropy's targets: see fill() in device.h.
__global__ void fill_target_kernel(int32_t* p, int64_t n, FillSpec spec) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const uint64_t h = splitmix64(spec.seed * 0x632BE59BD9B4E019ull + uint64_t(i));
    int32_t t = int32_t((h >> 8) % uint64_t(spec.classes));
    if (((h & 15) == 0 && !spec.none_ignored) || spec.all_ignored) t = spec.ignore_index;  // about 1 row in 16
    if (spec.ce_rows && i % 8 == 4) t = int32_t(splitmix64(spec.keep_seed + uint64_t(i)) % uint64_t(spec.classes));
    p[i] = t;
  }
}

template <typename T>
__global__ void fill_kernel(T* p, int64_t rows, int64_t cols, FillSpec spec) {
  const int64_t n = rows * cols;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    uint64_t h = splitmix64(spec.seed * 0x632BE59BD9B4E019ull + uint64_t(i));
    float u1 = (float((h >> 40) & 0xFFFFFF) + 0.5f) * (1.0f / 16777216.0f);
    float u2 = float((h >> 16) & 0xFFFFFF) * (1.0f / 16777216.0f);
    const float z = sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2);  // Box-Muller: normal(0, 1)
    float v = z;
    if (spec.outliers && (h & 0xFFFF) % 61 == 0) v *= 20.0f;
    v = v * spec.scale + spec.shift;
    if (spec.norm_rows) {
      const int64_t r = i / cols;
      if (r % 4 == 1) v = 10000.0f + z;  // a large mean against a spread of 1
      if (r % 4 == 2) v = 1.5f;          // zero variance: rstd = 1 / sqrt(eps)
    }
    if (spec.specials) {
      const int64_t r = i / cols, c = i % cols;
      const int64_t keep = int64_t(splitmix64(spec.seed + uint64_t(r)) % uint64_t(cols));
      switch (r % 8) {
        case 1:
          v = -INFINITY;
          break;
        case 2:
          if (c == keep) v = INFINITY;
          break;
        case 3:
          if (c == keep) v = NAN;
          break;
        case 4:
          if (c != keep && (spec.ce_rows || (h >> 63))) v = -INFINITY;  // ce_rows: all but keep
          break;
        case 5:
          v = 1.5f;
          break;
        case 6:
          v += 1000.0f;
          break;
        case 7:
          v *= 30.0f;
          break;
        default:
          break;
      }
    }
    p[i] = course::from_float<T>(v);
  }
}

}  // namespace

void fill(void* p, DType t, int64_t rows, int64_t cols, const FillSpec& spec, cudaStream_t s) {
  const int64_t n = rows * cols;
  if (n == 0) return;
  const int threads = 256;
  const unsigned blocks = resident_grid(n, threads, threads, 4);
  switch (t) {
    case DType::f32:
      fill_kernel<<<blocks, threads, 0, s>>>(static_cast<float*>(p), rows, cols, spec);
      break;
    case DType::f16:
      fill_kernel<<<blocks, threads, 0, s>>>(static_cast<__half*>(p), rows, cols, spec);
      break;
    case DType::bf16:
      fill_kernel<<<blocks, threads, 0, s>>>(static_cast<__nv_bfloat16*>(p), rows, cols, spec);
      break;
    case DType::u8:
      fill_mask_kernel<<<blocks, threads, 0, s>>>(static_cast<uint8_t*>(p), rows, cols, spec);
      break;
    case DType::i32:
      if (spec.classes < 1 || spec.classes > INT32_MAX)
        throw std::invalid_argument("fill: targets need classes in [1, 2^31 - 1], got " + std::to_string(spec.classes));
      fill_target_kernel<<<blocks, threads, 0, s>>>(static_cast<int32_t*>(p), n, spec);
      break;
  }
  CUDA_CHECK_LAUNCH();
}

int64_t check_device_targets(const void* target, int64_t rows, int64_t cols, int64_t ignore_index) {
  std::vector<int32_t> t(static_cast<size_t>(rows));
  if (rows > 0) CUDA_CHECK(cudaMemcpy(t.data(), target, t.size() * sizeof(int32_t), cudaMemcpyDeviceToHost));
  return check_targets(t.data(), rows, cols, ignore_index);
}

void fill_derived_inputs(Op op, DType t, int64_t rows, int64_t cols, float eps, const std::vector<void*>& in,
                         cudaStream_t s, int64_t ignore_index) {
  const OpSpec& spec = op_spec(op);
  std::vector<size_t> derived;  // which inputs, and each one's values (fp32, as the forward stores them)
  for (size_t k = 0; k < spec.inputs.size(); ++k)
    if (spec.inputs[k].source != Source::fill) derived.push_back(k);
  if (derived.empty() || rows * cols == 0) return;
  std::vector<std::vector<float>> stat(derived.size(), std::vector<float>(static_cast<size_t>(rows)));
  const DType xt = tensor_dtype(spec.inputs[0].elem, t);
  const int es = dtype_size(xt);
  const int64_t chunk = std::max<int64_t>(1, (int64_t(1) << 24) / cols);
  std::vector<char> raw;
  std::vector<double> x, v, target;
  CUDA_CHECK(cudaStreamSynchronize(s));  // x is filled
  if (op_is_cross_entropy(op)) {  // the saved lse needs each row's target (0 where ignored)
    std::vector<int32_t> t32(static_cast<size_t>(rows));
    CUDA_CHECK(cudaMemcpy(t32.data(), in[1], t32.size() * sizeof(int32_t), cudaMemcpyDeviceToHost));
    target.assign(t32.begin(), t32.end());
  }
  for (int64_t b = 0; b < rows; b += chunk) {
    const int64_t n = std::min(chunk, rows - b);
    raw.resize(static_cast<size_t>(n * cols * es));
    CUDA_CHECK(cudaMemcpy(raw.data(), static_cast<const char*>(in[0]) + b * cols * es, raw.size(),
                          cudaMemcpyDeviceToHost));
    x.resize(static_cast<size_t>(n * cols));
    v.resize(static_cast<size_t>(n));
    parallel_for(n * cols, [&](int64_t i) { x[i] = load_as_double(raw.data(), xt, i); });
    for (size_t d = 0; d < derived.size(); ++d) {
      if (spec.inputs[derived[d]].source == Source::saved_lse)
        saved_lse(x.data(), target.data() + b, n, cols, ignore_index, v.data());
      else
        saved_row_stat(op, spec.inputs[derived[d]].source, x.data(), n, cols, eps, v.data());
      for (int64_t i = 0; i < n; ++i) stat[d][size_t(b + i)] = static_cast<float>(v[size_t(i)]);  // exact: fp32 values
    }
  }
  for (size_t d = 0; d < derived.size(); ++d)
    CUDA_CHECK(cudaMemcpy(in[derived[d]], stat[d].data(), stat[d].size() * sizeof(float), cudaMemcpyHostToDevice));
}

namespace {
template <typename T>
__global__ void saved_lse_kernel(const T* __restrict__ x, const int32_t* __restrict__ target, int64_t cols,
                                 int64_t ignore_index, float* __restrict__ lse) {
  __shared__ float part[32];
  const T* xr = x + int64_t(blockIdx.x) * cols;
  float m = -INFINITY;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, to_float(xr[j]));
  for (int o = 16; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = m;
  __syncthreads();
  m = part[0];
  for (int w = 1; w < int(blockDim.x / 32); ++w) m = fmaxf(m, part[w]);
  __syncthreads();
  float d = 0.0f;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) d += expf(to_float(xr[j]) - m);
  for (int o = 16; o > 0; o /= 2) d += __shfl_xor_sync(0xffffffffu, d, o);
  if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = d;
  __syncthreads();
  if (threadIdx.x != 0) return;
  d = 0.0f;
  for (int w = 0; w < int(blockDim.x / 32); ++w) d += part[w];
  lse[blockIdx.x] = target[blockIdx.x] == ignore_index ? 0.0f : m + logf(d);
}
}  // namespace

void saved_lse_on_device(DType t, int64_t rows, int64_t cols, const void* x, const int32_t* target,
                         int64_t ignore_index, float* lse, cudaStream_t s) {
  if (rows == 0 || cols == 0) return;
  require(rows <= 2147483647, "saved_lse_on_device: rows < 2^31");
  const unsigned grid = unsigned(rows);
  switch (t) {
    case DType::f32:
      saved_lse_kernel<<<grid, 256, 0, s>>>(static_cast<const float*>(x), target, cols, ignore_index, lse);
      break;
    case DType::f16:
      saved_lse_kernel<<<grid, 256, 0, s>>>(static_cast<const __half*>(x), target, cols, ignore_index, lse);
      break;
    case DType::bf16:
      saved_lse_kernel<<<grid, 256, 0, s>>>(static_cast<const __nv_bfloat16*>(x), target, cols, ignore_index, lse);
      break;
    default:
      throw std::invalid_argument("saved_lse_on_device: logits are f32, f16 or bf16");
  }
  CUDA_CHECK_LAUNCH();
}

void poison(void* p, size_t bytes, uint8_t pattern, cudaStream_t s) {
  if (bytes) CUDA_CHECK(cudaMemsetAsync(p, pattern, bytes, s));
}

bool probe_device(DeviceInfo* info, std::string* why) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    if (why) *why = e != cudaSuccess ? std::string(cudaGetErrorString(e)) : "no CUDA device";
    cudaGetLastError();  // clear the sticky-free error so later calls start clean
    return false;
  }
  DeviceInfo d;
  CUDA_CHECK(cudaGetDevice(&d.device));
  cudaDeviceProp p;
  CUDA_CHECK(cudaGetDeviceProperties(&p, d.device));
  d.name = p.name;
  d.slug = gpu_slug(d.name);
  d.uuid = gpu_uuid_text(reinterpret_cast<const unsigned char*>(p.uuid.bytes));
  d.sm_count = p.multiProcessorCount;
  d.cc_major = p.major;
  d.cc_minor = p.minor;
  d.l2_bytes = p.l2CacheSize;
  d.total_mem = static_cast<int64_t>(p.totalGlobalMem);
  CUDA_CHECK(cudaDeviceGetAttribute(&d.sm_clock_khz, cudaDevAttrClockRate, d.device));
  CUDA_CHECK(cudaDeviceGetAttribute(&d.mem_clock_khz, cudaDevAttrMemoryClockRate, d.device));
  CUDA_CHECK(cudaDeviceGetAttribute(&d.mem_bus_bits, cudaDevAttrGlobalMemoryBusWidth, d.device));
  CUDA_CHECK(cudaDeviceGetAttribute(&d.smem_per_block_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, d.device));
  CUDA_CHECK(cudaDriverGetVersion(&d.driver_version));
  CUDA_CHECK(cudaRuntimeGetVersion(&d.runtime_version));
  *info = d;
  return true;
}

namespace {
// One attribute of the current device, asked once per device (devices past 64 are asked each time).
template <cudaDeviceAttr kAttr>
int cached_attribute() {
  static int cached[64] = {};
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  if (dev < 64 && cached[dev]) return cached[dev];
  int n = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&n, kAttr, dev));
  if (dev < 64) cached[dev] = n;
  return n;
}
}  // namespace

int sm_count() { return cached_attribute<cudaDevAttrMultiProcessorCount>(); }

namespace {
// An empty kernel compiled like the course's kernels: its binary's architecture is theirs.
__global__ void arch_probe_kernel() {}
}  // namespace

int device_code_version() {
  static const int version = [] {
    cudaFuncAttributes attr;
    const bool ok = cudaFuncGetAttributes(&attr, arch_probe_kernel) == cudaSuccess;
    cudaGetLastError();
    // The smaller of the SASS and the PTX it came from: a build of compute_80 PTX only, compiled
    // by the driver for an H100, has binaryVersion 90 but its device code saw __CUDA_ARCH__ 800.
    return ok ? std::min(attr.binaryVersion, attr.ptxVersion > 0 ? attr.ptxVersion : attr.binaryVersion) : 0;
  }();
  return version;
}

bool bulk_copy_available() {
  static const bool available = [] {
    int dev = 0, major = 0;
    const bool ok = cudaGetDevice(&dev) == cudaSuccess &&
                    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess;
    cudaGetLastError();
    return ok && major >= 9 && device_code_version() >= 90;
  }();
  return available;
}

int threads_per_sm() { return cached_attribute<cudaDevAttrMaxThreadsPerMultiProcessor>(); }

double dram_peak_gbps() {
  const double khz = cached_attribute<cudaDevAttrMemoryClockRate>();
  const double bits = cached_attribute<cudaDevAttrGlobalMemoryBusWidth>();
  return 2.0 * khz * 1e3 * (bits / 8) / 1e9;  // double data rate
}

int64_t wave_blocks(int block_threads) {
  return int64_t(sm_count()) * std::max(threads_per_sm() / block_threads, 1);
}

unsigned resident_grid(int64_t items, int64_t items_per_block, int block_threads, int waves) {
  return static_cast<unsigned>(
      grid_blocks(items, items_per_block, sm_count(), std::max(threads_per_sm() / block_threads, 1), waves));
}

namespace {
// Reads every 16 bytes of p; writes only if the impossible happens, so the loads stay.
__global__ void read_all_kernel(const uint4* __restrict__ p, int64_t n, uint4* sink) {
  uint32_t acc = 0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const uint4 v = p[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9E3779B9u) sink->x = acc;
}
}  // namespace

FlushMode flush_mode(const char* mode, const char* byte) {
  FlushMode m;
  const std::string ms = mode ? mode : "";
  m.clean = ms == "clean";
  if (!ms.empty() && !m.clean && ms != "memset")
    throw std::runtime_error("COURSE_L2_FLUSH: unknown mode '" + ms + "' (memset, the default, or clean)");
  m.method = m.clean ? "memset+read" : "memset";
  if (byte && *byte) {
    char* end = nullptr;
    const long v = std::strtol(byte, &end, 10);
    if (*end || v < 0 || v > 255)
      throw std::runtime_error(std::string("COURSE_L2_FLUSH_BYTE: '") + byte + "' is not a byte value (0-255)");
    m.fixed_byte = int(v);
    char hex[16];
    std::snprintf(hex, sizeof hex, " of 0x%02x", m.fixed_byte);
    m.method += hex;
  }
  return m;
}

L2Flusher::L2Flusher(int64_t l2_bytes)
    : buf_(static_cast<size_t>(2 * std::max<int64_t>(l2_bytes, 1 << 20))),
      mode_(flush_mode(std::getenv("COURSE_L2_FLUSH"), std::getenv("COURSE_L2_FLUSH_BYTE"))) {
  if (mode_.clean) {
    read_buf_ = DeviceBuffer(buf_.bytes());
    sink_ = DeviceBuffer(sizeof(uint4));
    CUDA_CHECK(cudaMemset(read_buf_.get(), 1, read_buf_.bytes()));
  }
}

void L2Flusher::flush(cudaStream_t s) {
  CUDA_CHECK(cudaMemsetAsync(buf_.get(), mode_.fixed_byte >= 0 ? mode_.fixed_byte : ++value_, buf_.bytes(), s));
  if (mode_.clean) {
    const int64_t n = int64_t(read_buf_.bytes() / sizeof(uint4));
    read_all_kernel<<<sm_count() * 4, 512, 0, s>>>(static_cast<const uint4*>(read_buf_.get()), n,
                                                   static_cast<uint4*>(sink_.get()));
    CUDA_CHECK_LAUNCH();
  }
}

}  // namespace course
