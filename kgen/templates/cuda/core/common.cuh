// ---- core/common.cuh: headers, reductions and the split planner shared by every kgen kernel family ----
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/version.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

namespace kgen {

constexpr int kWarpSize = 32;
// Independent 16-byte loads each thread issues before it consumes the first one.
constexpr int kUnroll = 4;

// Blocks of `block` threads an SM that hold `warps` warps, at least one: the minimum __launch_bounds__ takes to
// cap a kernel's registers for that many warps.
constexpr int min_blocks_for_warps(int warps, int block) {
  return warps * kWarpSize / block > 0 ? warps * kWarpSize / block : 1;
}

// Running moments of a stream of values (Welford / Chan). `count` is a float: one block never
// folds more than 2^24 values, and the cross-block combine below runs in double.
struct Moments {
  float count;
  float mean;
  float m2;  // sum of squared deviations from `mean`
};

// Chan et al.'s pairwise combine: exact in real arithmetic, and it never forms E[x^2] - E[x]^2,
// so a large common offset in the data costs no precision.
__device__ __forceinline__ Moments combine(const Moments& a, const Moments& b) {
  const float n = a.count + b.count;
  if (n == 0.f) return a;
  const float delta = b.mean - a.mean;
  const float wb = b.count / n;
  return Moments{n, a.mean + delta * wb, a.m2 + b.m2 + delta * delta * a.count * wb};
}

// Folds four fresh values into a running state: their own mean and deviation first, then one combine.
__device__ __forceinline__ void accumulate4(Moments& acc, float a, float b, float c, float d) {
  const float m4 = 0.25f * ((a + b) + (c + d));
  const float q = (a - m4) * (a - m4) + (b - m4) * (b - m4) + (c - m4) * (c - m4) + (d - m4) * (d - m4);
  acc = combine(acc, Moments{4.f, m4, q});
}

__device__ __forceinline__ void accumulate1(Moments& acc, float v) {
  acc = combine(acc, Moments{1.f, v, 0.f});
}

__device__ __forceinline__ Moments warp_combine(Moments m) {
#pragma unroll
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    Moments other{__shfl_xor_sync(0xffffffffu, m.count, offset),
                  __shfl_xor_sync(0xffffffffu, m.mean, offset),
                  __shfl_xor_sync(0xffffffffu, m.m2, offset)};
    m = combine(m, other);
  }
  return m;
}

// Tree combine over the block; the result is valid in thread 0.
template <int kBlock>
__device__ __forceinline__ Moments block_combine(Moments m) {
  constexpr int kWarps = kBlock / kWarpSize;
  __shared__ Moments per_warp[kWarps];
  const int lane = threadIdx.x % kWarpSize;
  const int warp = threadIdx.x / kWarpSize;
  m = warp_combine(m);
  if (lane == 0) per_warp[warp] = m;
  __syncthreads();
  if (warp == 0) {
    m = lane < kWarps ? per_warp[lane] : Moments{0.f, 0.f, 0.f};
    m = warp_combine(m);
  }
  return m;
}

__device__ __forceinline__ float2 warp_sum(float2 v) {
#pragma unroll
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    v.x += __shfl_xor_sync(0xffffffffu, v.x, offset);
    v.y += __shfl_xor_sync(0xffffffffu, v.y, offset);
  }
  return v;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ __forceinline__ double warp_sum(double v) {
#pragma unroll
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// Tree sum of a pair over the block; the result is valid in thread 0.
template <int kBlock>
__device__ __forceinline__ float2 block_sum(float2 v) {
  constexpr int kWarps = kBlock / kWarpSize;
  __shared__ float2 per_warp[kWarps];
  const int lane = threadIdx.x % kWarpSize;
  const int warp = threadIdx.x / kWarpSize;
  v = warp_sum(v);
  if (lane == 0) per_warp[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < kWarps ? per_warp[lane] : make_float2(0.f, 0.f);
    v = warp_sum(v);
  }
  return v;
}

// Tree sum over the block; the result is valid in thread 0.
template <int kBlock>
__device__ __forceinline__ float block_sum(float v) {
  constexpr int kWarps = kBlock / kWarpSize;
  __shared__ float per_warp[kWarps];
  const int lane = threadIdx.x % kWarpSize;
  const int warp = threadIdx.x / kWarpSize;
  v = warp_sum(v);
  if (lane == 0) per_warp[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < kWarps ? per_warp[lane] : 0.f;
    v = warp_sum(v);
  }
  return v;
}

// How a reduction over `rows` independent slices of `elems` values each is cut into blocks. Every
// (sample, group) slice of L1-35 holds 2 M values and there are only 896 of them: one block per slice
// would leave most SMs idle, so each slice is split into chunks of about kTargetChunk values, each
// chunk a block, and the chunks' partial results are combined exactly by a small second kernel.
struct SplitPlan {
  int splits;     // blocks per slice
  int64_t chunk;  // values per block, a multiple of 4 so 16-byte loads stay aligned
};

template <int kBlock>
inline SplitPlan plan_split(int64_t elems) {
  constexpr int64_t kTargetChunk = int64_t(kBlock) * 4 * kUnroll * 4;
  int64_t splits = (elems + kTargetChunk - 1) / kTargetChunk;
  splits = std::max<int64_t>(1, std::min<int64_t>(splits, 4096));
  int64_t chunk = (elems + splits - 1) / splits;
  chunk = (chunk + 3) / 4 * 4;
  splits = std::max<int64_t>(1, (elems + chunk - 1) / chunk);
  return SplitPlan{static_cast<int>(splits), chunk};
}

inline bool is_16_byte_aligned(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

// Whether data starts on a pack of 4 values of its storage type (16 bytes of float32, 8 of a 2-byte type): what the
// 4-wide kernels' loads and stores need.
template <class T>
inline bool pack_aligned(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % (4 * sizeof(T)) == 0;
}

inline bool pack_aligned(const at::Tensor& t) {
  return reinterpret_cast<uintptr_t>(t.data_ptr()) % (4 * t.element_size()) == 0;
}

// Error messages format numbers with std::to_string, never by streaming an integer into TORCH_CHECK:
// an extension whose host compiler differs from PyTorch's can crash inside libstdc++'s numeric
// ostream formatting (seen on the H100 machine: a segfault instead of the error message).
inline std::string str(int64_t value) { return std::to_string(value); }

inline std::string str(c10::IntArrayRef sizes) {
  std::string text = "[";
  for (size_t i = 0; i < sizes.size(); ++i) text += (i ? ", " : "") + std::to_string(sizes[i]);
  return text + "]";
}

inline void check_float_cuda(const at::Tensor& t, const char* what) {
  TORCH_CHECK(t.is_cuda(), "kgen: ", what, " must be a CUDA tensor, got a tensor on ", t.device());
  TORCH_CHECK(t.scalar_type() == at::kFloat, "kgen: ", what,
              " must be float32 (these kernels are specialised for float32), got ", t.scalar_type());
}

// ---- storage types: what a kgen file takes at its entry points, and the float32 its kernels compute in

// The dtypes a model and its inputs may be moved to (`.to(torch.bfloat16)`, autocast's half convolutions): the
// entry points take any of them; float64 and integer tensors are an error.
inline bool is_storage_type(at::ScalarType t) { return t == at::kFloat || t == at::kHalf || t == at::kBFloat16; }

inline void check_storage(const at::Tensor& t, const char* what) {
  if (!t.defined()) return;
  TORCH_CHECK(t.is_cuda(), "kgen: ", what, " must be a CUDA tensor, got a tensor on ", t.device());
  TORCH_CHECK(is_storage_type(t.scalar_type()), "kgen: ", what, " must be float32, float16 or bfloat16, got ",
              t.scalar_type());
}

// t in float32 (t itself where it is already, or undefined): kernels that compute in float32 take a half tensor so.
inline at::Tensor as_float(const at::Tensor& t, const char* what) {
  check_storage(t, what);
  return t.defined() && t.scalar_type() != at::kFloat ? t.to(at::kFloat) : t;
}

inline std::vector<at::Tensor> as_float(const std::vector<at::Tensor>& ts, const char* what) {
  std::vector<at::Tensor> out;
  out.reserve(ts.size());
  for (const auto& t : ts) out.push_back(as_float(t, what));
  return out;
}

// The reference's rounding points for one call of an entry point: kExact where its output is float32; kStoredBf16 /
// kStoredFp16 where the reference computes in that type and stores every op's result in it. Set for the call by the
// binding (RoundingScope) and carried into the kernels by param_table (groupnorm/region.cuh), whose functors read it.
enum Rounding : int { kExact = 0, kStoredBf16 = 1, kStoredFp16 = 2 };

inline int& call_rounding() {
  thread_local int rounding = kExact;
  return rounding;
}

// The rounding of a GroupNorm's mean and rstd for the call (region_params carries it into RegionParams::statistics).
inline int& call_statistics_rounding() {
  thread_local int rounding = kExact;
  return rounding;
}

// Whether the call's GroupNorm forward reproduces native_group_norm bit for bit (RegionParams::faithful): set by a
// region whose output a library op that rounds float32 to TF32 reads (a convolution, a matmul), where a last-bit
// difference would grow to ~1e-3 (groupnorm/statistics_torch.cuh).
inline int& call_faithful() {
  thread_local int faithful = 0;
  return faithful;
}

struct RoundingScope {
  int saved, saved_statistics, saved_faithful;
  explicit RoundingScope(int64_t rounding, int64_t statistics = kExact, bool faithful = false)
      : saved(call_rounding()), saved_statistics(call_statistics_rounding()), saved_faithful(call_faithful()) {
    TORCH_CHECK(rounding >= kExact && rounding <= kStoredFp16, "kgen: rounding must be 0, 1 or 2, got ", str(rounding));
    call_rounding() = static_cast<int>(rounding);
    call_statistics_rounding() = static_cast<int>(statistics);
    call_faithful() = faithful ? 1 : 0;
  }
  ~RoundingScope() {
    call_rounding() = saved;
    call_statistics_rounding() = saved_statistics;
    call_faithful() = saved_faithful;
  }
  RoundingScope(const RoundingScope&) = delete;
  RoundingScope& operator=(const RoundingScope&) = delete;
};

// The storage type a rounding code stands for (at::kFloat for kExact).
inline at::ScalarType rounding_type(int64_t rounding) {
  return rounding == kStoredBf16 ? at::kBFloat16 : rounding == kStoredFp16 ? at::kHalf : at::kFloat;
}

// Whether the PyTorch this file builds against normalises a float16 / bfloat16 GroupNorm with its mean and rstd rounded
// to the dtype: up to 2.12 native_group_norm does; from 2.13 on it normalises with float32 copies and rounds only the
// statistics it returns (libtorch_cuda.so of 2.12.0 has RowwiseMomentsCUDAKernel<T>, that of 2.13.0
// RowwiseMomentsCUDAKernel<T, T_ACC>, which also writes the float32 mean and rstd the forward reads). Both keep eps in
// the dtype.
constexpr bool kTorchRoundsHalfStatistics = TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR <= 12;

// How a GroupNorm of the call's dtype normalises: up to PyTorch 2.12 with its mean and rstd in the input's dtype where
// the weight is of that dtype too (or absent), so `rounding` there; else (a float32 weight, a float32 call, PyTorch
// 2.13 and newer) with float32 statistics, kExact.
inline int64_t statistics_rounding(int64_t rounding, const at::Tensor& weight) {
  if (!kTorchRoundsHalfStatistics) return kExact;
  return weight.defined() && weight.scalar_type() != rounding_type(rounding) ? int64_t(kExact) : rounding;
}

inline at::Tensor or_undefined(const c10::optional<at::Tensor>& t) { return t.has_value() ? *t : at::Tensor(); }

inline int64_t blocks_for(int64_t work, int64_t per_block) { return (work + per_block - 1) / per_block; }

// A device attribute, asked of the driver once per device (every forward call plans on it).
template <cudaDeviceAttr kAttribute>
inline int cached_attribute(int device) {
  constexpr int kDevices = 256;
  static std::atomic<int> cache[kDevices];  // zero-initialised: not asked yet
  int value = device >= 0 && device < kDevices ? cache[device].load(std::memory_order_relaxed) : 0;
  if (value == 0) {
    C10_CUDA_CHECK(cudaDeviceGetAttribute(&value, kAttribute, device));
    if (device >= 0 && device < kDevices) cache[device].store(value, std::memory_order_relaxed);
  }
  return value;
}

// Shared memory one block may opt in to; shared memory of one SM; SMs.
inline int64_t max_block_smem(int device) { return cached_attribute<cudaDevAttrMaxSharedMemoryPerBlockOptin>(device); }
inline int64_t sm_smem(int device) { return cached_attribute<cudaDevAttrMaxSharedMemoryPerMultiprocessor>(device); }
inline int multiprocessors(int device) { return cached_attribute<cudaDevAttrMultiProcessorCount>(device); }

// Whether `kernel` was built for sm_90 or newer on `device` (a binary for an older GPU runs there only by the
// driver's JIT of its PTX, without what sm_90 brought: clusters), asked once per kernel and device.
inline bool built_for_sm90(const void* kernel, int device) {
  static std::mutex lock;
  static std::map<std::pair<const void*, int>, bool> built;
  const std::lock_guard<std::mutex> guard(lock);
  const auto key = std::make_pair(kernel, device);
  auto found = built.find(key);
  if (found == built.end()) {
    cudaFuncAttributes attr{};
    C10_CUDA_CHECK(cudaFuncGetAttributes(&attr, kernel));
    found = built.emplace(key, attr.binaryVersion >= 90).first;
  }
  return found->second;
}

// Raises a kernel's dynamic shared memory limit where a launch needs more than the default 48 KB; what
// was raised already, per kernel and device, is remembered.
inline void allow_smem(const void* kernel, int64_t bytes) {
  if (bytes <= 48 * 1024) return;
  static std::mutex lock;
  static std::map<std::pair<const void*, int>, int64_t> allowed;
  int device = 0;
  C10_CUDA_CHECK(cudaGetDevice(&device));
  const std::lock_guard<std::mutex> guard(lock);
  int64_t& done = allowed[{kernel, device}];
  if (done >= bytes) return;
  C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  done = bytes;
}

// ---- flags and counters between the blocks of one kernel (device scope)

__device__ __forceinline__ unsigned load_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ void store_release(unsigned* p, unsigned v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// Adds v, returns the old value; releases this thread's earlier writes and acquires those the other
// adders released.
__device__ __forceinline__ unsigned atomic_add_acq_rel(unsigned* p, unsigned v) {
  unsigned old;
  asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
}

// ---- global -> shared copies (cp.async on sm_80+: in flight without registers; plain copies below)

// kBytes (4, 8 or 16) from global to shared memory: cp.async where there is one (16 bytes bypass L1), a plain copy
// below sm_80. Both addresses on kBytes.
template <int kBytes>
__device__ __forceinline__ void copy_async(void* smem, const void* gmem) {
  static_assert(kBytes == 4 || kBytes == 8 || kBytes == 16, "cp.async copies 4, 8 or 16 bytes");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  if constexpr (kBytes == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem) : "memory");
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(s), "l"(gmem), "n"(kBytes) : "memory");
  }
#else
  if constexpr (kBytes == 16) {
    *reinterpret_cast<float4*>(smem) = *reinterpret_cast<const float4*>(gmem);
  } else if constexpr (kBytes == 8) {
    *reinterpret_cast<float2*>(smem) = *reinterpret_cast<const float2*>(gmem);
  } else {
    *reinterpret_cast<float*>(smem) = *reinterpret_cast<const float*>(gmem);
  }
#endif
}

__device__ __forceinline__ void copy16(float* smem, const float* gmem) { copy_async<16>(smem, gmem); }

// 4 bytes, or 0 written where !valid (gmem is then never read: it may point anywhere).
__device__ __forceinline__ void copy4_or_zero(float* smem, const float* gmem, bool valid) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(s), "l"(gmem), "r"(valid ? 4 : 0) : "memory");
#else
  *smem = valid ? *gmem : 0.f;
#endif
}

__device__ __forceinline__ void copy4(float* smem, const float* gmem) { copy4_or_zero(smem, gmem, true); }

__device__ __forceinline__ void copies_done() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void copies_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

// Waits until at most kPending of the committed copy groups are still in flight (the most recent ones).
template <int kPending>
__device__ __forceinline__ void copies_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
#endif
}

}  // namespace kgen
