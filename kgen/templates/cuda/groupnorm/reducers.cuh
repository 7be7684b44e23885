// ---- groupnorm/reducers.cuh: the reductions after a GroupNorm region, as per-thread partials that merge ----
//
// sum / mean, max / min with the position of the first extreme, and log-sum-exp (online: one exponential a
// value). A thread folds its values into a partial (push), partials merge in a fixed order (combine, then
// the warp's xor butterfly and the block's tree below), and result() gives the output: every kernel that
// reduces (the two-pass sweeps, the rows forward) gets the same semantics and the same bits for the same
// order.
namespace kgen {
namespace reduction {

constexpr int kNoPosition = 0x7fffffff;  // "no value yet" in an argmax/argmin partial

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
  // exp(-|v - max|) rescales the sum when v is the new maximum and is the new term otherwise: one exp a value;
  // v == max (also +inf == +inf) adds exp(0).
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

}  // namespace reduction
}  // namespace kgen
