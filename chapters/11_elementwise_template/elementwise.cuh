/// @file elementwise.cuh
/// @brief Chapter 11: one launcher for every elementwise operation. A functor says what to do
/// with one element (and, optionally, with two at once: `Apply2`); the template does the rest:
/// 16-byte packs, a tail for counts the pack does not divide, a scalar fallback for misaligned
/// pointers, and a grid sized in whole waves of resident threads.
#pragma once

#include <cuda_runtime_api.h>

#include <cuda/std/tuple>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "harness/device.h"
#include "harness/errors.h"
#include "harness/launch_math.h"
#include "blocks/pack.cuh"

namespace ew {

// H100: 128 threads no faster, 512 and 1024 lost up to 6-7% on 16-bit GELU at 2^28 (TUNING.md).
constexpr int kBlock = 256;
// Waves at most before threads loop. OneFlow caps at 32; here the cap only guards the grid limit.
// H100: a 32-wave cap with a grid-stride loop read 3% less on fp32 GELU at 2^28 (TUNING.md).
constexpr int64_t kMaxWaves = int64_t(1) << 20;
/// [unroll]
// Packs per thread per step. One: each thread loads one 16-byte pack per input, computes it and
// stores it. More packs in flight per thread hid the arithmetic of an erff-based 16-bit GELU on
// large tensors; with gelu_16bit (functors.cuh) one pack per thread is the faster for every
// shipped functor. The template parameter stays for the `unroll4` comparison variants.
// H100: one pack per thread +1.2-1.7% over four at 2^28 on 16-bit ReLU, GELU, scale (TUNING.md).
constexpr int kUnroll = 1;
/// [unroll]

/// [factory]
/// A factory builds the functor each thread uses. Most functors are plain values (SimpleFactory
/// copies one); a functor that needs per-thread state (a random generator seeded by the thread's
/// index, a pointer read once) gets a factory of its own.
template <typename F>
struct SimpleFactory {
  F f;
  __device__ F operator()() const { return f; }
};
/// [factory]

/// Whether functor F has `Apply2(out, in...)`, which computes two elements at once (half2 or
/// nv_bfloat162 arithmetic or paired conversions).
template <typename F, typename = void>
struct HasApply2 : std::false_type {};
template <typename F>
struct HasApply2<F, std::void_t<decltype(&F::Apply2)>> : std::true_type {};

/// [apply_pack]
// One pack: element by element, or two by two when the functor offers Apply2.
template <int kPack, typename F, typename R, typename... In>
__device__ __forceinline__ void apply_pack(const F& f, R* out, const In*... in) {
  if constexpr (HasApply2<F>::value && kPack % 2 == 0) {
#pragma unroll
    for (int j = 0; j < kPack; j += 2) f.Apply2(out + j, (in + j)...);
  } else {
#pragma unroll
    for (int j = 0; j < kPack; ++j) out[j] = f((in[j])...);
  }
}
/// [apply_pack]

/// [kernel]
// Each thread takes kUnroll packs per step, a grid-stride apart (so that a warp's accesses stay
// contiguous), and starts all their loads before computing: kUnroll x 16 bytes in flight per
// thread and input. With kLoop false the grid holds every thread's packs (grid_size without a wave
// cap) and the step is taken once: no loop bookkeeping in any thread. The last n % kPack
// elements, if any, one per thread.
// H100: 34.4 against 39.0 instructions per fp32 GELU element at 2^24 without the loop, and
// PyTorch's layout (packs a block apart) lost 2.0-2.4% on fp32 GELU and casts at 2^24 (TUNING.md).
template <int kPack, int kUnroll, bool kLoop, typename Factory, typename R, typename... In>
__global__ void __launch_bounds__(kBlock)
    elementwise_kernel(Factory factory, int64_t n, R* __restrict__ y, const In* __restrict__... x) {
  auto f = factory();
  const int64_t n_packs = n / kPack;
  const int64_t tid = int64_t(blockIdx.x) * kBlock + threadIdx.x;
  const int64_t stride = int64_t(gridDim.x) * kBlock;
  for (int64_t base = tid; base < n_packs; base += stride * kUnroll) {
    cuda::std::tuple<course::Pack<In, kPack>...> in[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t i = base + u * stride;
      if (i < n_packs) in[u] = cuda::std::make_tuple(course::load_pack<In, kPack>(x + i * kPack)...);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t i = base + u * stride;
      if (i < n_packs) {
        course::Pack<R, kPack> out;
        cuda::std::apply([&](const auto&... p) { apply_pack<kPack>(f, out.elem, p.elem...); }, in[u]);
        course::store_pack<R, kPack>(y + i * kPack, out);
      }
    }
    if constexpr (!kLoop) break;
  }
  const int64_t rest = n - n_packs * kPack;
  if (tid < rest) y[n_packs * kPack + tid] = f((x[n_packs * kPack + tid])...);
}
/// [kernel]

/// [grid]
// Blocks for n_packs packs: one pack per thread within one wave; beyond, kUnroll packs per thread
// on a grid rounded up to whole waves (a wave: the SMs times the blocks of kBlock threads that fit
// in an SM's thread slots, whatever the kernel's occupancy). A thread's packs lie a grid stride
// apart, so the rounding spreads the packs over every thread of the last wave; with kUnroll = 1 it
// only adds idle blocks. A grid capped at max_waves waves leaves threads to loop (kLoop in run);
// without a cap, run refuses a count past the hardware's 2^31 - 1 blocks rather than loop.
// One wave: the blocks of kBlock threads the GPU's thread slots hold at once.
inline int64_t resident_blocks() { return course::wave_blocks(kBlock); }

inline unsigned grid_size(int64_t n_packs, int unroll, int64_t max_waves) {
  // One pack per thread while that fits in one wave: unrolling a small tensor would only leave
  // SMs idle (2^20 fp16 elements are 512 blocks of one pack per thread, 128 blocks of four).
  // H100: two packs per thread under a wave cost 16-bit GELU 8-10% at 2^20 (TUNING.md).
  const int64_t one_each = std::max<int64_t>(1, course::ceil_div(n_packs, kBlock));
  if (one_each <= resident_blocks()) return unsigned(one_each);
  const int64_t needed = course::ceil_div(n_packs, int64_t(kBlock) * unroll);
  const int64_t waves = std::min(course::ceil_div(needed, resident_blocks()), max_waves);
  return unsigned(std::min<int64_t>(waves * resident_blocks(), (int64_t(1) << 31) - 1));
}
/// [grid]

/// The widest pack (at most 16 bytes of the widest type) to which every pointer is aligned.
template <typename R, typename... In>
int aligned_pack(int max_pack, const R* y, const In*... x) {
  auto aligned = [](const void* p, int bytes) { return reinterpret_cast<uintptr_t>(p) % uintptr_t(bytes) == 0; };
  int pack = max_pack;
  while (pack > 1 && !(aligned(y, pack * int(sizeof(R))) && (aligned(x, pack * int(sizeof(In))) && ...))) pack /= 2;
  return pack;
}

// Without a wave cap the grid holds every pack (kLoop false), up to grid_size's limits: 2^20 waves
// or 2^31 - 1 blocks, past any GPU's memory today, and refused rather than left unwritten.
template <int kPack, int kUnroll_, int64_t kWaves, typename Factory, typename R, typename... In>
void run(cudaStream_t stream, Factory factory, int64_t n, R* y, const In*... x) {
  static_assert(kUnroll_ >= 1, "elementwise: at least one pack per thread per step");
  constexpr bool kLoop = kWaves < kMaxWaves;
  const unsigned grid = grid_size(n / kPack, kUnroll_, kWaves);
  course::require(kLoop || int64_t(grid) * kBlock * kUnroll_ >= n / kPack, "elementwise: n = ", n,
                  " elements is past the largest grid (", grid, " blocks of ", kBlock, " threads)");
  elementwise_kernel<kPack, kUnroll_, kLoop><<<grid, kBlock, 0, stream>>>(factory, n, y, x...);
  CUDA_CHECK_LAUNCH();
}

/// [launch]
/// y[i] = factory()(x[i]...) for i < n, on `stream`. n may be any count; the pointers any
/// alignment (misaligned ones fall back to narrower packs, down to scalar). kMaxPack caps the
/// pack (1: scalar) and kWaves the grid (32: OneFlow's cap), for the lesson's comparisons.
template <int kMaxPack = 16, int64_t kWaves = kMaxWaves, int kUnroll_ = kUnroll, typename Factory, typename R,
          typename... In>
void launch(cudaStream_t stream, Factory factory, int64_t n, R* y, const In*... x) {
  course::require(n >= 0, "elementwise: n must be >= 0, got ", n);
  if (n == 0) return;
  course::require(y != nullptr && ((x != nullptr) && ...), "elementwise: a null pointer for ", n, " elements");
  constexpr int kWidest = int(std::max({sizeof(R), sizeof(In)...}));
  // H100: 16 bytes of the narrower type (8 per cast) lost 4.5-5% on the widening cast (TUNING.md).
  constexpr int kPack = std::min(16 / kWidest, kMaxPack);
  const int pack = aligned_pack(kPack, y, x...);
  if constexpr (kPack >= 8) {
    if (pack == 8) return run<8, kUnroll_, kWaves>(stream, factory, n, y, x...);
  }
  if constexpr (kPack >= 4) {
    if (pack == 4) return run<4, kUnroll_, kWaves>(stream, factory, n, y, x...);
  }
  if constexpr (kPack >= 2) {
    if (pack == 2) return run<2, kUnroll_, kWaves>(stream, factory, n, y, x...);
  }
  run<1, kUnroll_, kWaves>(stream, factory, n, y, x...);
}

/// The three arities by name: y = f(a), y = f(a, b), y = f(a, b, c).
template <int kMaxPack = 16, int64_t kWaves = kMaxWaves, int kUnroll_ = kUnroll, typename Factory, typename R,
          typename A>
void Unary(cudaStream_t s, Factory factory, int64_t n, R* y, const A* a) {
  launch<kMaxPack, kWaves, kUnroll_>(s, factory, n, y, a);
}
template <int kMaxPack = 16, int64_t kWaves = kMaxWaves, int kUnroll_ = kUnroll, typename Factory, typename R,
          typename A, typename B>
void Binary(cudaStream_t s, Factory factory, int64_t n, R* y, const A* a, const B* b) {
  launch<kMaxPack, kWaves, kUnroll_>(s, factory, n, y, a, b);
}
template <int kMaxPack = 16, typename Factory, typename R, typename A, typename B, typename C>
void Ternary(cudaStream_t s, Factory factory, int64_t n, R* y, const A* a, const B* b, const C* c) {
  launch<kMaxPack>(s, factory, n, y, a, b, c);
}
/// [launch]

}  // namespace ew
