// ---- gn_region_twopass: the two-pass (large-tensor) kernels of a fused GroupNorm region ----
//
//   x --Pro--> z --GroupNorm(G, eps, optional affine)--> y --Epi--> v --reduction--> out
//
// Pro and Epi are the generated functors of gn_region_common.cuh; the reduction is one of its
// ReduceKind x ReduceOp. Nothing between x and out is stored: every kernel reads x and recomputes
// z, y, v on the fly, forward and backward. x is (N, C, *spatial) contiguous: a (sample, channel)
// plane is one contiguous run of S = prod(spatial) values, and every "sweep" kernel below is cut like
// groupnorm.cuh's, into blocks of (plane, chunk of plan_split(S)), so the channel (hence the functors'
// parameters, the group's statistics, gamma and beta) is fixed per block and kept in registers.
// 16-byte loads and stores wherever every stream is 16-byte aligned, scalar elsewhere; the forward sweeps take
// odd planes (S % 4 != 0) on the 16-byte path too, with a scalar head and tail per chunk (ChunkSpan), the
// backward sweeps only planes of whole packs.
//
// Forward, 2 reads of x + the output:
//   stats_partial     per (plane, chunk): Welford moments of z - pilot (pilot: z of the group's first
//                     value, also written to `pilots`), float, block tree
//   stats_finalize    one warp per (sample, group): the group's C/G * splits chunk moments merged in
//                     double in a fixed order (warp_merge) -> mean (hi, lo) and rstd (finish_statistics)
//   then by kind:
//   kNone             plane_forward: v written, 16-byte stores
//   kPlane, kSample   plane_forward: one reduction partial per block (sum; max/min with the first
//                     extreme's position; log-sum-exp as (max, sum exp(v - max))), then
//                     reduce_finish: one warp per output merges its partials in a fixed order
//                     (sums in double)
//   kChannel          channel_forward: one thread per 4 (or 1) positions s of a sample, looping over the
//                     channels (a warp reads 512 consecutive bytes of each plane); per-channel constants
//                     (functors, mean, rstd * gamma, beta) staged in shared memory, 128 channels at a time
//   kWindow           window_forward: one thread per pooled output, looping over its window in (d, h, w)
//                     order, 4 loads in flight
// Backward, given the saved (mean, rstd, out, aux), everything element-local:
//   backward_sweep<partial>   per (plane, chunk): dv from dout (the reduction's backward), Epi::backward
//                             -> dy; block sums of dy, dy (z - mean) (groupnorm.cuh's layout) and of the
//                             epilogue's parameter gradients
//   backward_group_kernel     (groupnorm.cuh) per (sample, group): plane sums and the coefficients B, C
//   param_grad_kernel         (groupnorm.cuh, affine only) dgamma, dbeta
//   backward_sweep<apply>     dz = rstd gamma dy + B (z - mean) + C + direct dz; dx = Pro::backward(dz)
//                             + direct dx, written; block sums of the prologue's parameter gradients
//   param_sums                one warp per (parameter, channel): its block sums over (n, chunk), double,
//                             fixed order
// No float atomics anywhere: every result is bitwise reproducible.
//
// The reduction's backward, per element: kNone dout[i]; kSum dout[o]; kMean dout[o] / count;
// kMax / kMin dout[o] where this element's position == aux[o], else 0; kLogSumExp dout[o] exp(v - out[o]);
// kWindow: elements in no window (the floor remainder) get 0; each element finds its window (and its
// position in it) with multiply-shift divisions (FastDiv).
//
// kGroups (the host functions' template argument) is accepted for the generated code's interface; the
// kernels read the group count at run time (every sweep forms its group once per block, so a compile-time
// count would save nothing), and any count that divides C is correct.
namespace kgen {
namespace region_twopass {

constexpr int kNoPosition = 0x7fffffff;  // "no value yet" in an argmax/argmin partial
constexpr int kChannelTile = 128;       // channels whose constants channel_forward stages at a time

// ---------------------------------------------------------------- small device helpers

// n / d for 0 <= n < 2^31 by a multiply and a shift (Granlund-Montgomery, as CUTLASS's FastDivmod).
struct FastDiv {
  uint32_t divisor;
  uint32_t multiplier;
  uint32_t shift;

  static FastDiv make(int64_t d) {
    FastDiv f{static_cast<uint32_t>(d), 0u, 0u};
    if (d != 1) {
      uint32_t log2_ceil = 0;
      while ((uint64_t(1) << log2_ceil) < uint64_t(d)) ++log2_ceil;
      const uint32_t p = 31 + log2_ceil;
      f.multiplier = static_cast<uint32_t>(((uint64_t(1) << p) + uint64_t(d) - 1) / uint64_t(d));
      f.shift = p - 32;
    }
    return f;
  }
  __device__ __forceinline__ uint32_t div(uint32_t n) const {
    return divisor == 1 ? n : (__umulhi(n, multiplier) >> shift);
  }
};

// The spatial geometry padded to 3 dims (front dims of size 1, window 1), with the divisors the window
// kernels need. For kinds other than kWindow the window is 1 everywhere.
struct Geometry {
  int64_t size[3];    // D, H, W
  int64_t window[3];  // kd, kh, kw
  int64_t pooled[3];  // PD, PH, PW
  int64_t pooled_plane;
  int window_elems;
  FastDiv div_hw, div_w, div_window[3];            // backward: s -> (d, h, w) -> window
  FastDiv div_pooled_plane, div_pw, div_ph, div_c, div_cpg;  // forward: output -> (plane, pd, ph, pw), c, group
};

// A reduction's per-thread state, its partials and how they merge. push() takes the position of the
// value in the reduction's natural order; a thread pushes its values in increasing position.
template <ReduceOp O>
struct Reducer;

template <>
struct Reducer<ReduceOp::kSum> {
  using T = float;
  static constexpr bool kSumLike = true;
  __device__ static T empty() { return 0.f; }
  __device__ __forceinline__ static void push(T& a, float v, int) { a += v; }
  __device__ __forceinline__ static T combine(T a, T b) { return a + b; }
  __device__ __forceinline__ static float result(T a, int64_t) { return a; }
};

template <>
struct Reducer<ReduceOp::kMean> : Reducer<ReduceOp::kSum> {
  __device__ __forceinline__ static float result(T a, int64_t count) { return a / static_cast<float>(count); }
};

struct ArgPartial {
  float value;
  int pos;
};

// The FIRST extreme: NaN beats any number (max/min propagate NaN, as torch), ties go to the lower position.
template <bool kMax>
struct ArgReducer {
  using T = ArgPartial;
  static constexpr bool kSumLike = false;
  __device__ static T empty() { return ArgPartial{0.f, kNoPosition}; }
  __device__ __forceinline__ static bool ahead(const T& a, const T& b) {  // a before b?
    if (b.pos == kNoPosition) return true;
    if (a.pos == kNoPosition) return false;
    const bool a_nan = a.value != a.value, b_nan = b.value != b.value;
    if (a_nan != b_nan) return a_nan;
    if (!a_nan && a.value != b.value) return kMax ? a.value > b.value : a.value < b.value;
    return a.pos < b.pos;
  }
  __device__ __forceinline__ static void push(T& a, float v, int pos) {
    const T b{v, pos};
    if (ahead(b, a)) a = b;
  }
  __device__ __forceinline__ static T combine(const T& a, const T& b) { return ahead(a, b) ? a : b; }
  __device__ __forceinline__ static float result(const T& a, int64_t) { return a.value; }
};

template <>
struct Reducer<ReduceOp::kMax> : ArgReducer<true> {};
template <>
struct Reducer<ReduceOp::kMin> : ArgReducer<false> {};

// e^x as ex2.approx.ftz(x log2 e): two instructions; results below 2^-126 flush to zero.
__device__ __forceinline__ float exp_ftz(float x) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x * 1.4426950408889634f));
  return r;
}

struct LsePartial {
  float max;  // -inf while empty
  float sum;  // sum of exp(v - max); 0 while empty
};

// Online log-sum-exp, one exponential per value. -inf values add nothing (exp(-inf) = 0), NaN poisons the
// sum, +inf gives +inf (as torch.logsumexp).
template <>
struct Reducer<ReduceOp::kLogSumExp> {
  using T = LsePartial;
  static constexpr bool kSumLike = false;
  __device__ static T empty() { return LsePartial{-INFINITY, 0.f}; }
  // exp(-|v - max|) rescales the sum when v is the new maximum and is the new term otherwise (as
  // gn_tail_lse.cuh's lse_push); v == max (also +inf == +inf) adds exp(0).
  __device__ __forceinline__ static void push(T& a, float v, int) {
    if (v == -INFINITY) return;
    const float d = v == a.max ? 0.f : v - a.max;
    const float e = __expf(-fabsf(d));
    const bool up = d > 0.f;
    a.sum = up ? fmaf(a.sum, e, 1.f) : a.sum + e;
    a.max = up ? v : a.max;
  }
  // N values at once (the channel sweep's kLoads channels of one position, in channel order): their maximum
  // m, then sum <- sum exp(max - m) + sum_k exp(v_k - m), one exponential a value and no per-value selects.
  // A maximum that is not finite (every value -inf, or +inf among them) takes the one-at-a-time push, which
  // treats those exactly; a NaN among finite values poisons the sum through its exponential. The terms are
  // exp2 with denormals flushed: a term below 2^-126 of the maximum's exp(0) = 1 is below the sum's rounding.
  template <int N>
  __device__ __forceinline__ static void push_many(T& a, const float (&v)[N]) {
    float m = a.max;
#pragma unroll
    for (int k = 0; k < N; ++k) m = fmaxf(m, v[k]);
    if (!isfinite(m)) {
#pragma unroll
      for (int k = 0; k < N; ++k) push(a, v[k], 0);
      return;
    }
    float terms = 0.f;
#pragma unroll
    for (int k = 0; k < N; ++k) terms += exp_ftz(v[k] - m);
    a.sum = fmaf(a.sum, exp_ftz(a.max - m), terms);
    a.max = m;
  }
  __device__ __forceinline__ static T combine(const T& a, const T& b) {
    if (b.sum == 0.f) return a;
    if (a.sum == 0.f) return b;
    const float m = fmaxf(a.max, b.max);
    const float ea = a.max == m ? 1.f : expf(a.max - m);
    const float eb = b.max == m ? 1.f : expf(b.max - m);
    return LsePartial{m, a.sum * ea + b.sum * eb};
  }
  __device__ __forceinline__ static float result(const T& a, int64_t) { return a.max + logf(a.sum); }
};

template <ReduceOp O>
constexpr bool kHasAux = O == ReduceOp::kMax || O == ReduceOp::kMin;

__device__ __forceinline__ float shfl_xor(float v, int offset) { return __shfl_xor_sync(0xffffffffu, v, offset); }
__device__ __forceinline__ ArgPartial shfl_xor(const ArgPartial& v, int offset) {
  return ArgPartial{__shfl_xor_sync(0xffffffffu, v.value, offset), __shfl_xor_sync(0xffffffffu, v.pos, offset)};
}
__device__ __forceinline__ LsePartial shfl_xor(const LsePartial& v, int offset) {
  return LsePartial{__shfl_xor_sync(0xffffffffu, v.max, offset), __shfl_xor_sync(0xffffffffu, v.sum, offset)};
}

template <class Red, class T>
__device__ __forceinline__ T warp_reduce(T v) {
#pragma unroll
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) v = Red::combine(v, shfl_xor(v, offset));
  return v;
}

// Fixed tree over the block; the result is valid in thread 0.
template <int kBlock, class Red, class T>
__device__ __forceinline__ T block_reduce(T v) {
  constexpr int kWarps = kBlock / kWarpSize;
  __shared__ T per_warp[kWarps];
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  v = warp_reduce<Red>(v);
  if (lane == 0) per_warp[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < kWarps ? per_warp[lane] : Red::empty();
    v = warp_reduce<Red>(v);
  }
  return v;
}

// K sums over the block at once (one shared round trip); the results are valid in thread 0.
template <int kBlock, int K>
__device__ __forceinline__ void block_sums(float (&v)[K]) {
  constexpr int kWarps = kBlock / kWarpSize;
  __shared__ float per_warp[K][kWarps];
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
#pragma unroll
  for (int k = 0; k < K; ++k) v[k] = warp_sum(v[k]);
  if (lane == 0) {
#pragma unroll
    for (int k = 0; k < K; ++k) per_warp[k][warp] = v[k];
  }
  __syncthreads();
  if (warp == 0) {
#pragma unroll
    for (int k = 0; k < K; ++k) v[k] = warp_sum(lane < kWarps ? per_warp[k][lane] : 0.f);
  }
}

// Everything one channel of one sample needs: its functors and its GroupNorm affine map.
template <class Pro, class Epi>
struct Channel {
  Pro pro;
  Epi epi;
  float2 mean;  // (hi, lo) of the group
  float scale;  // rstd * gamma[c]
  float shift;  // beta[c]

  __device__ __forceinline__ float value(float x) const {
    const float z = pro.value(x);
    return epi.value(centered(z, mean) * scale + shift, z, x);
  }
};

// Channel c of the (sample, group) statistics row `row`.
template <class Pro, class Epi>
__device__ __forceinline__ Channel<Pro, Epi> load_channel(const RegionParams& params, int64_t c, int64_t row,
                                                          const float2* __restrict__ mean,
                                                          const float* __restrict__ rstd,
                                                          const float* __restrict__ gamma,
                                                          const float* __restrict__ beta) {
  return Channel<Pro, Epi>{Pro::at(params, c), Epi::at(params, c), mean[row],
                           gamma != nullptr ? rstd[row] * __ldg(gamma + c) : rstd[row],
                           beta != nullptr ? __ldg(beta + c) : 0.f};
}

// A chunk's values as a 16-byte body and scalar ends (W = 4). With S % 4 != 0 a plane starts at any 4-byte
// offset, so the body starts at the chunk's first 16-byte boundary (the streams' base pointers are 16-byte
// aligned): `head` values (0-3) before it, `packs` whole packs, the values from `tail` on after them. With
// S % 4 == 0 (chunks are whole packs) head = 0 and no value is left after the body. W = 1: all body.
template <int W>
struct ChunkSpan {
  int64_t head, packs, tail, count;
  __device__ __forceinline__ ChunkSpan(int64_t offset, int64_t n) : count(n) {
    const int64_t gap = W == 4 ? (4 - offset % 4) % 4 : 0;
    head = gap < n ? gap : n;
    packs = (n - head) / W;
    tail = head + packs * W;
  }
  __device__ __forceinline__ int64_t ends() const { return head + (count - tail); }  // values outside the body
  __device__ __forceinline__ int64_t end_at(int64_t k) const { return k < head ? k : tail + (k - head); }
};

// A (plane, chunk) block of the sweep kernels.
struct PlaneChunk {
  int64_t plane, n, c, row, begin, count;  // row: the (sample, group) of the plane
  __device__ __forceinline__ PlaneChunk(const RegionShape& shape, const SplitPlan& plan) {
    plane = blockIdx.x / plan.splits;
    begin = int64_t(blockIdx.x % plan.splits) * plan.chunk;
    count = min(plan.chunk, shape.plane - begin);
    n = plane / shape.channels;
    c = plane - n * shape.channels;
    row = n * shape.groups + c / shape.channels_per_group();
  }
};

}  // namespace region_twopass
}  // namespace kgen
