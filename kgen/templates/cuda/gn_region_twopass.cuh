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
// 16-byte loads and stores wherever S % 4 == 0 and every stream is 16-byte aligned, scalar elsewhere.
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

// ---------------------------------------------------------------- forward: statistics

// The moments of z - pilot over one chunk of one plane, pilot = z of the group's first value (the same
// for every block of the group; the block of the group's first chunk stores it for stats_finalize).
// Full rounds fold four values at once (accumulate4), also on the scalar path.
template <class Pro, int kBlock, bool kVec>
__global__ void __launch_bounds__(kBlock)
stats_partial_kernel(const float* __restrict__ x, RegionParams params, RegionShape shape, SplitPlan plan,
                     Moments* __restrict__ partial, float* __restrict__ pilots) {
  static_assert(kUnroll == 4, "full rounds fold kUnroll scalar values with accumulate4");
  constexpr int W = kVec ? 4 : 1;
  const PlaneChunk b(shape, plan);
  const int64_t cpg = shape.channels_per_group();
  const int64_t k = b.c % cpg;  // channel within the group
  const float pilot = Pro::at(params, b.c - k).value(__ldg(x + (b.plane - k) * shape.plane));
  if (k == 0 && b.begin == 0 && threadIdx.x == 0) pilots[b.plane / cpg] = pilot;
  const Pro pro = Pro::at(params, b.c);
  const float* in = x + b.plane * shape.plane + b.begin;
  const int64_t packs = b.count / W;
  Moments acc{0.f, 0.f, 0.f};
  for (int64_t base = threadIdx.x; base < packs; base += int64_t(kBlock) * kUnroll) {
    Pack<W> v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t i = base + int64_t(u) * kBlock;
      if (i < packs) v[u] = load_pack<W>(in, i);
    }
    if (base + int64_t(kUnroll - 1) * kBlock < packs) {
      if constexpr (W == 4) {
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          accumulate4(acc, pro.value(v[u].v[0]) - pilot, pro.value(v[u].v[1]) - pilot,
                      pro.value(v[u].v[2]) - pilot, pro.value(v[u].v[3]) - pilot);
        }
      } else {
        accumulate4(acc, pro.value(v[0].v[0]) - pilot, pro.value(v[1].v[0]) - pilot, pro.value(v[2].v[0]) - pilot,
                    pro.value(v[3].v[0]) - pilot);
      }
    } else {
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        if (base + int64_t(u) * kBlock < packs) {
          if constexpr (W == 4) {
            accumulate4(acc, pro.value(v[u].v[0]) - pilot, pro.value(v[u].v[1]) - pilot,
                        pro.value(v[u].v[2]) - pilot, pro.value(v[u].v[3]) - pilot);
          } else {
            accumulate1(acc, pro.value(v[u].v[0]) - pilot);
          }
        }
      }
    }
  }
  acc = block_combine<kBlock>(acc);
  if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

// One warp per (sample, group): its chunks are contiguous in `partial` (planes are), per_row of them.
template <int kBlock>
__global__ void __launch_bounds__(kBlock)
stats_finalize_kernel(const Moments* __restrict__ partial, int per_row, int64_t rows,
                      const float* __restrict__ pilots, double eps, float2* __restrict__ mean,
                      float* __restrict__ rstd) {
  const int64_t row = (int64_t(blockIdx.x) * kBlock + threadIdx.x) / kWarpSize;
  if (row >= rows) return;  // warp-uniform
  const MomentsD m = warp_merge(per_row, [&](int s) { return partial[row * per_row + s]; });
  if (threadIdx.x % kWarpSize == 0) finish_statistics(m, double(pilots[row]), eps, mean[row], rstd[row]);
}

// ---------------------------------------------------------------- forward: apply

// kNone: v, written. kPlane / kSample: one reduction partial per block.
template <class Pro, class Epi, ReduceKind R, ReduceOp O, int kBlock, bool kVec>
__global__ void __launch_bounds__(kBlock)
plane_forward_kernel(const float* __restrict__ x, RegionParams params, RegionShape shape, SplitPlan plan,
                     const float2* __restrict__ mean, const float* __restrict__ rstd,
                     const float* __restrict__ gamma, const float* __restrict__ beta, float* __restrict__ v_out,
                     typename Reducer<O>::T* __restrict__ partial) {
  constexpr int W = kVec ? 4 : 1;
  const PlaneChunk b(shape, plan);
  const auto ch = load_channel<Pro, Epi>(params, b.c, b.row, mean, rstd, gamma, beta);
  const int64_t offset = b.plane * shape.plane + b.begin;
  const float* in[1] = {x + offset};
  if constexpr (R == ReduceKind::kNone) {
    float* out = v_out + offset;
    sweep<kBlock, W, 1>(in, b.count / W, [&](int64_t i, const Pack<W>(&v)[1]) {
      Pack<W> r;
#pragma unroll
      for (int j = 0; j < W; ++j) r.v[j] = ch.value(v[0].v[j]);
      store_pack<W>(out, i, r);
    });
  } else {
    using Red = Reducer<O>;
    auto acc = Red::empty();
    // position in the reduction's order: within the plane (kPlane) or the sample (kSample)
    const int pos0 = static_cast<int>((R == ReduceKind::kSample ? b.c * shape.plane : 0) + b.begin);
    sweep<kBlock, W, 1>(in, b.count / W, [&](int64_t i, const Pack<W>(&v)[1]) {
#pragma unroll
      for (int j = 0; j < W; ++j) Red::push(acc, ch.value(v[0].v[j]), pos0 + static_cast<int>(i) * W + j);
    });
    acc = block_reduce<kBlock, Red>(acc);
    if (threadIdx.x == 0) partial[blockIdx.x] = acc;
  }
}

// One warp per output: its per_out partials (contiguous) merged in a fixed order, sums in double.
template <ReduceOp O, int kBlock>
__global__ void __launch_bounds__(kBlock)
reduce_finish_kernel(const typename Reducer<O>::T* __restrict__ partial, int64_t per_out, int64_t outs,
                     int64_t count, float* __restrict__ out, int* __restrict__ aux) {
  using Red = Reducer<O>;
  const int64_t o = (int64_t(blockIdx.x) * kBlock + threadIdx.x) / kWarpSize;
  const int lane = threadIdx.x % kWarpSize;
  if (o >= outs) return;  // warp-uniform
  const auto* p = partial + o * per_out;
  if constexpr (Red::kSumLike) {
    double s = 0.0;
    for (int64_t i = lane; i < per_out; i += kWarpSize) s += double(p[i]);
    s = warp_sum(s);
    if (lane == 0) out[o] = static_cast<float>(O == ReduceOp::kMean ? s / double(count) : s);
  } else {
    auto acc = Red::empty();
    for (int64_t i = lane; i < per_out; i += kWarpSize) acc = Red::combine(acc, p[i]);
    acc = warp_reduce<Red>(acc);
    if (lane == 0) {
      out[o] = Red::result(acc, count);
      if constexpr (kHasAux<O>) aux[o] = acc.pos;
    }
  }
}

// kChannel: out (N, S). Block b covers kBlock * W consecutive positions of sample b / blocks_per_sample;
// each thread walks the C planes at its W positions, kLoads planes' loads in flight at a time.
template <class Pro, class Epi, ReduceOp O, int kBlock, int W>
__global__ void __launch_bounds__(kBlock)
channel_forward_kernel(const float* __restrict__ x, RegionParams params, RegionShape shape,
                       const float2* __restrict__ mean, const float* __restrict__ rstd,
                       const float* __restrict__ gamma, const float* __restrict__ beta, float* __restrict__ out,
                       int* __restrict__ aux, int64_t blocks_per_sample) {
  using Red = Reducer<O>;
  using Ch = Channel<Pro, Epi>;
  constexpr int kLoads = W == 4 ? 4 : 8;
  __shared__ __align__(16) unsigned char staged_bytes[kChannelTile * sizeof(Ch)];
  Ch* staged = reinterpret_cast<Ch*>(staged_bytes);
  const int64_t channels = shape.channels, plane = shape.plane;
  const int64_t n = blockIdx.x / blocks_per_sample;
  const int64_t pack = (blockIdx.x % blocks_per_sample) * kBlock + threadIdx.x;
  const bool active = pack < plane / W;
  const float* column = x + n * channels * plane + pack * W;
  typename Red::T acc[W];
#pragma unroll
  for (int j = 0; j < W; ++j) acc[j] = Red::empty();
  for (int64_t c0 = 0; c0 < channels; c0 += kChannelTile) {
    const int tile = static_cast<int>(min(int64_t(kChannelTile), channels - c0));
    __syncthreads();  // the previous tile is consumed
    for (int k = threadIdx.x; k < tile; k += kBlock) {
      const int64_t c = c0 + k;
      staged[k] = load_channel<Pro, Epi>(params, c, n * shape.groups + c / shape.channels_per_group(), mean, rstd,
                                         gamma, beta);
    }
    __syncthreads();
    if (active) {
      const float* tile_column = column + c0 * plane;
      for (int k0 = 0; k0 < tile; k0 += kLoads) {
        Pack<W> v[kLoads];
#pragma unroll
        for (int k = 0; k < kLoads; ++k) {
          if (k0 + k < tile) v[k] = load_pack<W>(tile_column + int64_t(k0 + k) * plane, 0);
        }
#pragma unroll
        for (int k = 0; k < kLoads; ++k) {
          if (k0 + k < tile) {
            const Ch ch = staged[k0 + k];
            const int c = static_cast<int>(c0 + k0 + k);
#pragma unroll
            for (int j = 0; j < W; ++j) Red::push(acc[j], ch.value(v[k].v[j]), c);
          }
        }
      }
    }
  }
  if (!active) return;
  Pack<W> result;
#pragma unroll
  for (int j = 0; j < W; ++j) result.v[j] = Red::result(acc[j], channels);
  const int64_t o = n * plane + pack * W;
  store_pack<W>(out + o, 0, result);
  if constexpr (kHasAux<O>) {
    if constexpr (W == 4) {
      reinterpret_cast<int4*>(aux + o)[0] = make_int4(acc[0].pos, acc[1].pos, acc[2].pos, acc[3].pos);
    } else {
      aux[o] = acc[0].pos;
    }
  }
}

// kWindow: one thread per pooled output (flat over (n, c, pooled), fewer than 2^31), its window walked
// in (d, h, w) order with 4 loads in flight; aux = the extreme's flat index within the window.
// (Measured on the H100 at (128, 32, 254, 254), 2x2 windows: faster than 4 outputs per thread with 16 loads
// in flight, 1.49 against 1.75 ms for the whole forward: that variant needs 100 registers.)
template <class Pro, class Epi, ReduceOp O, int kBlock>
__global__ void __launch_bounds__(kBlock)
window_forward_kernel(const float* __restrict__ x, RegionParams params, RegionShape shape, Geometry geo,
                      const float2* __restrict__ mean, const float* __restrict__ rstd,
                      const float* __restrict__ gamma, const float* __restrict__ beta, float* __restrict__ out,
                      int* __restrict__ aux, int64_t outs) {
  using Red = Reducer<O>;
  const int64_t t = int64_t(blockIdx.x) * kBlock + threadIdx.x;
  if (t >= outs) return;
  const uint32_t plane = geo.div_pooled_plane.div(static_cast<uint32_t>(t));
  const uint32_t p = static_cast<uint32_t>(t) - plane * static_cast<uint32_t>(geo.pooled_plane);
  const uint32_t pdh = geo.div_pw.div(p);
  const uint32_t pw = p - pdh * static_cast<uint32_t>(geo.pooled[2]);
  const uint32_t pd = geo.div_ph.div(pdh);
  const uint32_t ph = pdh - pd * static_cast<uint32_t>(geo.pooled[1]);
  const uint32_t n = geo.div_c.div(plane);
  const uint32_t c = plane - n * static_cast<uint32_t>(shape.channels);
  const uint32_t row = n * static_cast<uint32_t>(shape.groups) + geo.div_cpg.div(c);
  const auto ch = load_channel<Pro, Epi>(params, c, row, mean, rstd, gamma, beta);
  const int64_t H = geo.size[1], Wd = geo.size[2];
  const int kh = static_cast<int>(geo.window[1]), kw = static_cast<int>(geo.window[2]);
  const float* base = x + int64_t(plane) * shape.plane + (int64_t(pd) * geo.window[0] * H + int64_t(ph) * kh) * Wd +
                      int64_t(pw) * kw;
  auto acc = Red::empty();
  int a = 0, bh = 0, e = 0;  // window coordinates of the next value to load
  for (int w0 = 0; w0 < geo.window_elems; w0 += 4) {
    float v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      if (w0 + u < geo.window_elems) {
        v[u] = __ldg(base + (int64_t(a) * H + bh) * Wd + e);
        if (++e == kw) {
          e = 0;
          if (++bh == kh) {
            bh = 0;
            ++a;
          }
        }
      }
    }
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      if (w0 + u < geo.window_elems) Red::push(acc, ch.value(v[u]), w0 + u);
    }
  }
  out[t] = Red::result(acc, geo.window_elems);
  if constexpr (kHasAux<O>) aux[t] = acc.pos;
}

// ---------------------------------------------------------------- backward

// Streams the backward sweeps read besides x, at the element's own position: dout (kNone); dout and,
// for log-sum-exp, out or, for max/min, aux at (n, s) (kChannel).
template <ReduceKind R, ReduceOp O>
constexpr int backward_streams() {
  if (R == ReduceKind::kNone) return 1;
  if (R == ReduceKind::kChannel) return (O == ReduceOp::kLogSumExp || kHasAux<O>) ? 2 : 1;
  return 0;
}

// One sweep over (plane, chunk) blocks, two flavours:
//   kApply = false: block sums of dy, dy (z - mean) -> gn_partial[block]; of the epilogue's parameter
//                   gradients -> param_partial[k * blocks + block]
//   kApply = true:  dx written; block sums of the prologue's parameter gradients -> param_partial
template <class Pro, class Epi, ReduceKind R, ReduceOp O, int kBlock, bool kVec, bool kApply>
__global__ void __launch_bounds__(kBlock)
backward_sweep_kernel(const float* __restrict__ x, const float* __restrict__ dout, const float* __restrict__ out,
                      const int* __restrict__ aux, RegionParams params, RegionShape shape, Geometry geo,
                      SplitPlan plan, const float2* __restrict__ mean, const float* __restrict__ rstd,
                      const float* __restrict__ gamma, const float* __restrict__ beta,
                      const float2* __restrict__ coef, float* __restrict__ dx, float2* __restrict__ gn_partial,
                      float* __restrict__ param_partial) {
  constexpr int W = kVec ? 4 : 1;
  constexpr int kStreams = 1 + backward_streams<R, O>();
  constexpr int kSums = kApply ? Pro::kParams : 2 + Epi::kParams;
  const PlaneChunk b(shape, plan);
  const auto ch = load_channel<Pro, Epi>(params, b.c, b.row, mean, rstd, gamma, beta);
  float2 bc = make_float2(0.f, 0.f);
  if constexpr (kApply) bc = coef[b.row];
  const int64_t offset = b.plane * shape.plane + b.begin;

  // The upstream gradient's per-block part.
  float g_block = 0.f, ref_block = 0.f;
  int arg_block = 0, pos0 = 0;
  if constexpr (R == ReduceKind::kPlane || R == ReduceKind::kSample) {
    const int64_t o = R == ReduceKind::kPlane ? b.plane : b.n;
    g_block = dout[o];
    if constexpr (O == ReduceOp::kMean) {
      g_block = g_block / static_cast<float>(R == ReduceKind::kPlane ? shape.plane : shape.channels * shape.plane);
    }
    if constexpr (O == ReduceOp::kLogSumExp) ref_block = out[o];
    if constexpr (kHasAux<O>) arg_block = aux[o];
    pos0 = static_cast<int>((R == ReduceKind::kSample ? b.c * shape.plane : 0) + b.begin);
  }
  const int64_t out_plane = R == ReduceKind::kWindow ? b.plane * geo.pooled_plane : 0;

  const float* in[kStreams];
  in[0] = x + offset;
  if constexpr (R == ReduceKind::kNone) in[1] = dout + offset;
  if constexpr (R == ReduceKind::kChannel) {
    const int64_t at = b.n * shape.plane + b.begin;
    in[1] = dout + at;
    if constexpr (O == ReduceOp::kLogSumExp) in[2] = out + at;
    if constexpr (kHasAux<O>) in[2] = reinterpret_cast<const float*>(aux) + at;
  }

  float sums[kSums > 0 ? kSums : 1];
#pragma unroll
  for (int k = 0; k < kSums; ++k) sums[k] = 0.f;
  float dparam[kMaxParams] = {0.f, 0.f, 0.f, 0.f};  // this thread's running parameter gradients
  float discard[kMaxParams] = {0.f, 0.f, 0.f, 0.f};
  float* dst = kApply ? dx + offset : nullptr;

  sweep<kBlock, W, kStreams>(in, b.count / W, [&](int64_t i, const Pack<W>(&v)[kStreams]) {
    Pack<W> r;
#pragma unroll
    for (int j = 0; j < W; ++j) {
      const float xv = v[0].v[j];
      const float z = ch.pro.value(xv);
      const float zc = centered(z, ch.mean);
      const float y = zc * ch.scale + ch.shift;
      float dv = 0.f;
      if constexpr (R == ReduceKind::kNone) {
        dv = v[1].v[j];
      } else if constexpr (R == ReduceKind::kChannel) {
        const float g = v[1].v[j];
        if constexpr (O == ReduceOp::kSum) dv = g;
        if constexpr (O == ReduceOp::kMean) dv = g / static_cast<float>(shape.channels);
        if constexpr (kHasAux<O>) dv = __float_as_int(v[2].v[j]) == static_cast<int>(b.c) ? g : 0.f;
        if constexpr (O == ReduceOp::kLogSumExp) dv = g * __expf(ch.epi.value(y, z, xv) - v[2].v[j]);
      } else if constexpr (R == ReduceKind::kPlane || R == ReduceKind::kSample) {
        if constexpr (O == ReduceOp::kSum || O == ReduceOp::kMean) dv = g_block;
        if constexpr (kHasAux<O>) dv = pos0 + static_cast<int>(i) * W + j == arg_block ? g_block : 0.f;
        if constexpr (O == ReduceOp::kLogSumExp) dv = g_block * __expf(ch.epi.value(y, z, xv) - ref_block);
      } else {  // kWindow: the element's window, if any (dv = 0 in the floor remainder)
        // (Measured on the H100: this per-element form beat sharing (d, h) per 16-byte pack, 3.06 against
        // 4.13 ms for the whole backward at (128, 32, 254, 254), 2x2 windows.)
        const uint32_t s = static_cast<uint32_t>(b.begin + i * W + j);
        const uint32_t d = geo.div_hw.div(s);
        const uint32_t rem = s - d * static_cast<uint32_t>(geo.size[1] * geo.size[2]);
        const uint32_t h = geo.div_w.div(rem);
        const uint32_t w = rem - h * static_cast<uint32_t>(geo.size[2]);
        const uint32_t pd = geo.div_window[0].div(d), ph = geo.div_window[1].div(h), pw = geo.div_window[2].div(w);
        if (pd < geo.pooled[0] && ph < geo.pooled[1] && pw < geo.pooled[2]) {
          const int64_t o = out_plane + (int64_t(pd) * geo.pooled[1] + ph) * geo.pooled[2] + pw;
          const float g = dout[o];
          if constexpr (O == ReduceOp::kSum) dv = g;
          if constexpr (O == ReduceOp::kMean) dv = g / static_cast<float>(geo.window_elems);
          if constexpr (kHasAux<O>) {
            const uint32_t kd = geo.window[0], kh = geo.window[1], kw = geo.window[2];
            const int within = static_cast<int>(((d - pd * kd) * kh + (h - ph * kh)) * kw + (w - pw * kw));
            dv = within == aux[o] ? g : 0.f;
          }
          if constexpr (O == ReduceOp::kLogSumExp) dv = g * __expf(ch.epi.value(y, z, xv) - out[o]);
        }
      }
      float dy = 0.f, dz_direct = 0.f, dx_direct = 0.f;
      if constexpr (kApply) {
        ch.epi.backward(y, z, xv, dv, dy, dz_direct, dx_direct, discard);
        const float dz = (ch.scale * dy + bc.x * zc + bc.y) + dz_direct;
        r.v[j] = ch.pro.backward(xv, dz, dparam) + dx_direct;
      } else {
        ch.epi.backward(y, z, xv, dv, dy, dz_direct, dx_direct, dparam);
        sums[0] += dy;
        sums[1] += dy * zc;
      }
    }
    if constexpr (kApply) store_pack<W>(dst, i, r);
  });
  (void)discard;

  if constexpr (kSums > 0) {
    constexpr int kFirstParam = kApply ? 0 : 2;
#pragma unroll
    for (int k = kFirstParam; k < kSums; ++k) sums[k] = dparam[k - kFirstParam];
    block_sums<kBlock, kSums>(sums);
    if (threadIdx.x == 0) {
      if constexpr (!kApply) gn_partial[blockIdx.x] = make_float2(sums[0], sums[1]);
#pragma unroll
      for (int k = kFirstParam; k < kSums; ++k) param_partial[int64_t(k - kFirstParam) * gridDim.x + blockIdx.x] = sums[k];
    }
  }
}

// out[k][c] = sum over (n, split) of partial[k][(n C + c) splits + split], one warp per (k, c): lanes stride
// the (n, split) pairs, a double each, then a fixed shuffle tree.
__global__ void param_sums_kernel(const float* __restrict__ partial, int params, int64_t blocks, int splits,
                                  int64_t batch, int64_t channels, float* __restrict__ out) {
  const int64_t w = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kWarpSize;
  const int lane = threadIdx.x % kWarpSize;
  if (w >= int64_t(params) * channels) return;  // warp-uniform
  const int64_t k = w / channels, c = w - k * channels;
  const float* p = partial + k * blocks;
  double s = 0.0;
  for (int64_t j = lane; j < batch * splits; j += kWarpSize) {
    const int64_t n = j / splits, split = j - n * splits;
    s += double(p[(n * channels + c) * splits + split]);
  }
  s = warp_sum(s);
  if (lane == 0) out[w] = static_cast<float>(s);
}

// ---------------------------------------------------------------- host side

inline bool aligned(const at::Tensor& t) { return !t.defined() || is_16_byte_aligned(t.data_ptr()); }

inline const float* data_or_null(const at::Tensor& t) { return t.defined() ? t.data_ptr<float>() : nullptr; }

inline RegionShape check_region(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta, int64_t groups,
                                ReduceKind kind, const std::vector<int64_t>& window) {
  check_float_cuda(x, "input");
  TORCH_CHECK(x.dim() >= 2 && x.dim() <= 5, "kgen: the region input must have shape (N, C, *spatial) with 0 to 3 ",
              "spatial dims, got ", str(x.sizes()));
  RegionShape shape{};
  shape.batch = x.size(0);
  shape.channels = x.size(1);
  shape.groups = groups;
  shape.dims = static_cast<int>(x.dim()) - 2;
  shape.plane = 1;
  TORCH_CHECK(groups > 0 && shape.channels % groups == 0, "kgen: ", str(shape.channels),
              " channels are not divisible into ", str(groups), " groups");
  TORCH_CHECK(gamma.defined() == beta.defined(),
              "kgen: GroupNorm weight and bias must both be given (affine) or both be undefined (affine=False)");
  if (gamma.defined()) {
    for (const auto* t : {&gamma, &beta}) {
      check_float_cuda(*t, "GroupNorm weight/bias");
      TORCH_CHECK(t->dim() == 1 && t->size(0) == shape.channels, "kgen: GroupNorm weight/bias must have shape (",
                  str(shape.channels), "), got ", str(t->sizes()));
      TORCH_CHECK(t->device() == x.device(), "kgen: GroupNorm weight/bias are on ", t->device().str(),
                  " but the input is on ", x.device().str());
    }
  }
  for (int d = 0; d < shape.dims; ++d) {
    shape.size[d] = x.size(2 + d);
    shape.plane *= shape.size[d];
    shape.window[d] = 1;
    shape.pooled[d] = shape.size[d];
  }
  if (kind == ReduceKind::kWindow) {
    TORCH_CHECK(shape.dims >= 1, "kgen: a window reduction needs at least one spatial dim, got input ",
                str(x.sizes()));
    TORCH_CHECK(window.size() == size_t(shape.dims), "kgen: the window needs one size per spatial dim (",
                str(shape.dims), "), got ", str(c10::IntArrayRef(window)));
    for (int d = 0; d < shape.dims; ++d) {
      TORCH_CHECK(window[d] >= 1, "kgen: window sizes must be positive, got ", str(c10::IntArrayRef(window)));
      shape.window[d] = window[d];
      shape.pooled[d] = shape.size[d] / window[d];
    }
  }
  TORCH_CHECK(shape.plane < (int64_t(1) << 31), "kgen: at most 2^31 - 1 values per (sample, channel) plane, got ",
              str(shape.plane));
  return shape;
}

template <class Pro, class Epi>
inline RegionParams region_params(const std::vector<at::Tensor>& prologue, const std::vector<at::Tensor>& epilogue,
                                  int64_t channels, const at::Device& device) {
  TORCH_CHECK(prologue.size() == size_t(Pro::kParams), "kgen: the prologue takes ", str(Pro::kParams),
              " parameters, got ", str(int64_t(prologue.size())));
  TORCH_CHECK(epilogue.size() == size_t(Epi::kParams), "kgen: the epilogue takes ", str(Epi::kParams),
              " parameters, got ", str(int64_t(epilogue.size())));
  return RegionParams{param_table(prologue, channels, device, "prologue"),
                      param_table(epilogue, channels, device, "epilogue")};
}

inline Geometry geometry(const RegionShape& shape) {
  Geometry g{};
  const int pad = 3 - shape.dims;
  for (int d = 0; d < 3; ++d) {
    const bool real = d >= pad;
    g.size[d] = real ? shape.size[d - pad] : 1;
    g.window[d] = real ? shape.window[d - pad] : 1;
    g.pooled[d] = real ? shape.pooled[d - pad] : 1;
  }
  g.pooled_plane = g.pooled[0] * g.pooled[1] * g.pooled[2];
  g.window_elems = static_cast<int>(g.window[0] * g.window[1] * g.window[2]);
  g.div_hw = FastDiv::make(g.size[1] * g.size[2]);
  g.div_w = FastDiv::make(g.size[2]);
  for (int d = 0; d < 3; ++d) g.div_window[d] = FastDiv::make(g.window[d]);
  g.div_pooled_plane = FastDiv::make(std::max<int64_t>(g.pooled_plane, 1));
  g.div_pw = FastDiv::make(std::max<int64_t>(g.pooled[2], 1));
  g.div_ph = FastDiv::make(std::max<int64_t>(g.pooled[1], 1));
  g.div_c = FastDiv::make(std::max<int64_t>(shape.channels, 1));
  g.div_cpg = FastDiv::make(std::max<int64_t>(shape.channels_per_group(), 1));
  return g;
}

inline std::vector<int64_t> out_sizes(const at::Tensor& x, const RegionShape& shape, ReduceKind kind) {
  switch (kind) {
    case ReduceKind::kNone:
      return x.sizes().vec();
    case ReduceKind::kChannel: {
      std::vector<int64_t> s{shape.batch};
      for (int d = 0; d < shape.dims; ++d) s.push_back(shape.size[d]);
      return s;
    }
    case ReduceKind::kPlane:
      return {shape.batch, shape.channels};
    case ReduceKind::kSample:
      return {shape.batch};
    case ReduceKind::kWindow: {
      std::vector<int64_t> s{shape.batch, shape.channels};
      for (int d = 0; d < shape.dims; ++d) s.push_back(shape.pooled[d]);
      return s;
    }
  }
  return {};
}

// Values per output of the reduction (the extent it reduces over).
inline int64_t reduce_count(const RegionShape& shape, ReduceKind kind) {
  switch (kind) {
    case ReduceKind::kNone:
      return 1;
    case ReduceKind::kChannel:
      return shape.channels;
    case ReduceKind::kPlane:
      return shape.plane;
    case ReduceKind::kSample:
      return shape.channels * shape.plane;
    case ReduceKind::kWindow:
      return shape.window[0] * (shape.dims > 1 ? shape.window[1] : 1) * (shape.dims > 2 ? shape.window[2] : 1);
  }
  return 1;
}

template <ReduceKind R, ReduceOp O>
constexpr bool kRegionHasAux = R != ReduceKind::kNone && kHasAux<O>;

// The outputs of an empty input: a reduction over nothing is 0 (sum), NaN (mean), -inf (log-sum-exp), an
// error (max, min), as torch.
template <ReduceKind R, ReduceOp O>
void fill_empty(at::Tensor& out, at::Tensor& aux) {
  if (out.numel() == 0) return;
  if constexpr (R != ReduceKind::kNone) {
    TORCH_CHECK(!kHasAux<O>, "kgen: max/min of an empty reduction (input of zero elements)");
    out.fill_(O == ReduceOp::kSum ? 0.0 : O == ReduceOp::kMean ? NAN : -INFINITY);
  }
  if (aux.defined()) aux.zero_();
}

inline void check_grid(int64_t blocks, const char* what) {
  TORCH_CHECK(blocks < (int64_t(1) << 31), "kgen: too many blocks for the ", what, " kernel: ", str(blocks));
}

}  // namespace region_twopass

// Forward of a region: returns {out, mean (N, G, 2) as (hi, lo) pairs, rstd (N, G), aux (int32, out's shape,
// for max/min; else undefined)}. gamma and beta undefined: GroupNorm(affine=False).
template <class Pro, class Epi, ReduceKind R, ReduceOp O, int kBlock, int kGroups /*0 = runtime*/>
std::vector<at::Tensor> region_forward_twopass(const at::Tensor& input, const at::Tensor& gamma_in,
                                               const at::Tensor& beta_in,
                                               const std::vector<at::Tensor>& prologue_params,
                                               const std::vector<at::Tensor>& epilogue_params, int64_t groups,
                                               double eps, const std::vector<int64_t>& window) {
  namespace rt = region_twopass;
  static_assert(kBlock >= kWarpSize && kBlock <= 1024 && kBlock % kWarpSize == 0, "kBlock: whole warps, <= 1024");
  static_assert(kGroups >= 0, "kGroups: 0 (run time) or the group count");
  const RegionShape shape = rt::check_region(input, gamma_in, beta_in, groups, R, window);
  const c10::cuda::CUDAGuard device_guard(input.device());
  const RegionParams params = rt::region_params<Pro, Epi>(prologue_params, epilogue_params, shape.channels,
                                                          input.device());
  const auto x = input.contiguous();
  const at::Tensor gamma = gamma_in.defined() ? gamma_in.contiguous() : at::Tensor();
  const at::Tensor beta = beta_in.defined() ? beta_in.contiguous() : at::Tensor();
  const auto options = x.options();
  auto out = at::empty(rt::out_sizes(x, shape, R), options);
  auto aux = rt::kRegionHasAux<R, O> ? at::empty(out.sizes(), options.dtype(at::kInt)) : at::Tensor();
  auto mean = at::empty({shape.batch, shape.groups, 2}, options);
  auto rstd = at::empty({shape.batch, shape.groups}, options);
  if (x.numel() == 0) {
    mean.zero_();
    rstd.zero_();
    rt::fill_empty<R, O>(out, aux);
    return {out, mean, rstd, aux};
  }
  if constexpr (R == ReduceKind::kSample && rt::kHasAux<O>) {
    TORCH_CHECK(shape.channels * shape.plane < (int64_t(1) << 31),
                "kgen: max/min over a sample of 2^31 or more values (int32 positions)");
  }
  const auto stream = at::cuda::getCurrentCUDAStream();
  const int64_t planes = shape.batch * shape.channels;
  const int64_t rows = shape.batch * shape.groups;
  const float* x_ptr = x.data_ptr<float>();
  const float* gamma_ptr = rt::data_or_null(gamma);
  const float* beta_ptr = rt::data_or_null(beta);
  float2* mean_ptr = as_float2(mean);
  float* rstd_ptr = rstd.data_ptr<float>();
  const SplitPlan plan = plan_split<kBlock>(shape.plane);
  const int64_t blocks = planes * plan.splits;
  rt::check_grid(blocks, "sweep");

  // Statistics.
  {
    auto partial = at::empty({blocks * int64_t(sizeof(Moments))}, options.dtype(at::kByte));
    auto pilots = at::empty({rows}, options);
    auto* partial_ptr = reinterpret_cast<Moments*>(partial.data_ptr());
    const bool vec = shape.plane % 4 == 0 && rt::aligned(x);
    dispatch_vec(vec, [&](auto kv) {
      rt::stats_partial_kernel<Pro, kBlock, decltype(kv)::value><<<blocks, kBlock, 0, stream>>>(
          x_ptr, params, shape, plan, partial_ptr, pilots.data_ptr<float>());
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    const int64_t per_row = shape.channels_per_group() * plan.splits;
    TORCH_CHECK(per_row < (int64_t(1) << 31), "kgen: too many chunks per group");
    rt::stats_finalize_kernel<kBlock><<<blocks_for(rows * kWarpSize, kBlock), kBlock, 0, stream>>>(
        partial_ptr, static_cast<int>(per_row), rows, pilots.data_ptr<float>(), eps, mean_ptr, rstd_ptr);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }

  // The normalised, epilogued values and their reduction.
  if constexpr (R == ReduceKind::kNone || R == ReduceKind::kPlane || R == ReduceKind::kSample) {
    using T = typename rt::Reducer<O>::T;
    at::Tensor partial;
    T* partial_ptr = nullptr;
    if constexpr (R != ReduceKind::kNone) {
      partial = at::empty({blocks * int64_t(sizeof(T))}, options.dtype(at::kByte));
      partial_ptr = reinterpret_cast<T*>(partial.data_ptr());
    }
    float* v_ptr = R == ReduceKind::kNone ? out.data_ptr<float>() : nullptr;
    const bool vec = shape.plane % 4 == 0 && rt::aligned(x) && (R != ReduceKind::kNone || rt::aligned(out));
    dispatch_vec(vec, [&](auto kv) {
      rt::plane_forward_kernel<Pro, Epi, R, O, kBlock, decltype(kv)::value><<<blocks, kBlock, 0, stream>>>(
          x_ptr, params, shape, plan, mean_ptr, rstd_ptr, gamma_ptr, beta_ptr, v_ptr, partial_ptr);
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    if constexpr (R != ReduceKind::kNone) {
      const int64_t outs = R == ReduceKind::kPlane ? planes : shape.batch;
      const int64_t per_out = R == ReduceKind::kPlane ? plan.splits : shape.channels * plan.splits;
      rt::reduce_finish_kernel<O, kBlock><<<blocks_for(outs * kWarpSize, kBlock), kBlock, 0, stream>>>(
          partial_ptr, per_out, outs, rt::reduce_count(shape, R), out.data_ptr<float>(),
          rt::kRegionHasAux<R, O> ? aux.data_ptr<int>() : nullptr);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
  } else if constexpr (R == ReduceKind::kChannel) {
    const bool vec = shape.plane % 4 == 0 && rt::aligned(x) && rt::aligned(out) && rt::aligned(aux);
    int* aux_ptr = rt::kRegionHasAux<R, O> ? aux.data_ptr<int>() : nullptr;
    dispatch_vec(vec, [&](auto kv) {
      constexpr int W = decltype(kv)::value ? 4 : 1;
      const int64_t blocks_per_sample = blocks_for(shape.plane / W, kBlock);
      rt::check_grid(shape.batch * blocks_per_sample, "channel reduction");
      rt::channel_forward_kernel<Pro, Epi, O, kBlock, W><<<shape.batch * blocks_per_sample, kBlock, 0, stream>>>(
          x_ptr, params, shape, mean_ptr, rstd_ptr, gamma_ptr, beta_ptr, out.data_ptr<float>(), aux_ptr,
          blocks_per_sample);
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  } else {  // kWindow
    const int64_t outs = out.numel();
    if (outs > 0) {
      TORCH_CHECK(outs < (int64_t(1) << 31), "kgen: at most 2^31 - 1 pooled outputs, got ", str(outs));
      const rt::Geometry geo = rt::geometry(shape);
      rt::window_forward_kernel<Pro, Epi, O, kBlock><<<blocks_for(outs, kBlock), kBlock, 0, stream>>>(
          x_ptr, params, shape, geo, mean_ptr, rstd_ptr, gamma_ptr, beta_ptr, out.data_ptr<float>(),
          rt::kRegionHasAux<R, O> ? aux.data_ptr<int>() : nullptr, outs);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
  }
  return {out, mean, rstd, aux};
}

// Backward of a region: returns {dx, dgamma (C), dbeta (C) (both undefined when affine=False),
// dprologue (Kp, C), depilogue (Ke, C)} from the forward's saved mean, rstd, out and aux.
template <class Pro, class Epi, ReduceKind R, ReduceOp O, int kBlock, int kGroups /*0 = runtime*/>
std::vector<at::Tensor> region_backward_twopass(const at::Tensor& dout_in, const at::Tensor& input,
                                                const at::Tensor& gamma_in, const at::Tensor& beta_in,
                                                const std::vector<at::Tensor>& prologue_params,
                                                const std::vector<at::Tensor>& epilogue_params,
                                                const at::Tensor& mean, const at::Tensor& rstd,
                                                const at::Tensor& out_in, const at::Tensor& aux_in, int64_t groups,
                                                const std::vector<int64_t>& window) {
  namespace rt = region_twopass;
  static_assert(kBlock >= kWarpSize && kBlock <= 1024 && kBlock % kWarpSize == 0, "kBlock: whole warps, <= 1024");
  const RegionShape shape = rt::check_region(input, gamma_in, beta_in, groups, R, window);
  const c10::cuda::CUDAGuard device_guard(input.device());
  const RegionParams params = rt::region_params<Pro, Epi>(prologue_params, epilogue_params, shape.channels,
                                                          input.device());
  const auto expected = rt::out_sizes(input, shape, R);
  check_float_cuda(dout_in, "gradient of the output");
  TORCH_CHECK(dout_in.device() == input.device(), "kgen: the output gradient is on ", dout_in.device().str(),
              " but the input is on ", input.device().str());
  TORCH_CHECK(dout_in.sizes().equals(expected), "kgen: the output gradient has shape ", str(dout_in.sizes()),
              ", expected ", str(c10::IntArrayRef(expected)));
  const bool needs_out = R != ReduceKind::kNone && O == ReduceOp::kLogSumExp;
  if (needs_out) {
    check_float_cuda(out_in, "saved output");
    TORCH_CHECK(out_in.device() == input.device() && out_in.sizes().equals(expected),
                "kgen: the saved output must be the forward's, of shape ", str(c10::IntArrayRef(expected)), ", got ",
                str(out_in.sizes()));
  }
  if constexpr (rt::kRegionHasAux<R, O>) {
    TORCH_CHECK(aux_in.defined() && aux_in.is_cuda() && aux_in.scalar_type() == at::kInt &&
                    aux_in.device() == input.device() && aux_in.sizes().equals(expected),
                "kgen: the saved positions (aux) must be the forward's int32 tensor of shape ",
                str(c10::IntArrayRef(expected)));
  }
  const int64_t rows = shape.batch * shape.groups;
  for (const auto* t : {&mean, &rstd}) {
    check_float_cuda(*t, "saved GroupNorm statistics");
    TORCH_CHECK(t->device() == input.device(), "kgen: saved statistics are on ", t->device().str(),
                " but the input is on ", input.device().str());
  }
  TORCH_CHECK(mean.is_contiguous() && mean.numel() == rows * 2 && rstd.is_contiguous() && rstd.numel() == rows,
              "kgen: saved statistics must be the forward's (N, G, 2) mean and (N, G) rstd");

  const auto x = input.contiguous();
  const auto dout = dout_in.contiguous();
  const at::Tensor out = needs_out ? out_in.contiguous() : at::Tensor();
  const at::Tensor aux = rt::kRegionHasAux<R, O> ? aux_in.contiguous() : at::Tensor();
  const bool affine = gamma_in.defined();
  const at::Tensor gamma = affine ? gamma_in.contiguous() : at::Tensor();
  const at::Tensor beta = affine ? beta_in.contiguous() : at::Tensor();
  const auto options = x.options();
  auto dx = at::empty_like(x, at::MemoryFormat::Contiguous);
  auto dgamma = affine ? at::zeros({shape.channels}, options) : at::Tensor();
  auto dbeta = affine ? at::zeros({shape.channels}, options) : at::Tensor();
  auto dprologue = at::zeros({int64_t(Pro::kParams), shape.channels}, options);
  auto depilogue = at::zeros({int64_t(Epi::kParams), shape.channels}, options);
  if (x.numel() == 0) return {dx, dgamma, dbeta, dprologue, depilogue};

  const auto stream = at::cuda::getCurrentCUDAStream();
  const int64_t planes = shape.batch * shape.channels;
  const SplitPlan plan = plan_split<kBlock>(shape.plane);
  const int64_t blocks = planes * plan.splits;
  rt::check_grid(blocks, "sweep");
  const GroupShape gshape{shape.batch, shape.channels, shape.groups, shape.plane};
  const rt::Geometry geo = rt::geometry(shape);
  // backward_group_kernel reads gamma; affine=False is gamma = 1.
  const at::Tensor gamma_or_ones = affine ? gamma : at::ones({shape.channels}, options);
  auto gn_partial = at::empty({blocks, 2}, options);
  auto epi_partial = at::empty({int64_t(Epi::kParams) * blocks}, options);
  auto pro_partial = at::empty({int64_t(Pro::kParams) * blocks}, options);
  auto plane_sums = at::empty({planes, 2}, options.dtype(at::kDouble));
  auto coef = at::empty({rows, 2}, options);
  auto* plane_sums_ptr = reinterpret_cast<double2*>(plane_sums.data_ptr<double>());

  const float* x_ptr = x.data_ptr<float>();
  const float* dout_ptr = dout.data_ptr<float>();
  const float* out_ptr = rt::data_or_null(out);
  const int* aux_ptr = aux.defined() ? aux.data_ptr<int>() : nullptr;
  const float* gamma_ptr = rt::data_or_null(gamma);
  const float* beta_ptr = rt::data_or_null(beta);
  const float2* mean_ptr = as_float2(mean);
  const float* rstd_ptr = rstd.data_ptr<float>();
  // 16-byte loads when every stream read at the element's position allows them.
  bool vec = shape.plane % 4 == 0 && rt::aligned(x) && rt::aligned(dx);
  if (R == ReduceKind::kNone || R == ReduceKind::kChannel) vec = vec && rt::aligned(dout);
  if (R == ReduceKind::kChannel) vec = vec && rt::aligned(out) && rt::aligned(aux);

  dispatch_vec(vec, [&](auto kv) {
    rt::backward_sweep_kernel<Pro, Epi, R, O, kBlock, decltype(kv)::value, false><<<blocks, kBlock, 0, stream>>>(
        x_ptr, dout_ptr, out_ptr, aux_ptr, params, shape, geo, plan, mean_ptr, rstd_ptr, gamma_ptr, beta_ptr,
        nullptr, nullptr, as_float2(gn_partial), Epi::kParams > 0 ? epi_partial.data_ptr<float>() : nullptr);
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  backward_group_kernel<0, kBlock><<<blocks_for(rows * kWarpSize, kBlock), kBlock, 0, stream>>>(
      as_float2(gn_partial), plan.splits, gamma_or_ones.data_ptr<float>(), rstd_ptr, gshape, plane_sums_ptr,
      as_float2(coef));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  if (affine) {
    param_grad_kernel<0><<<blocks_for(shape.channels, 128), 128, 0, stream>>>(
        plane_sums_ptr, rstd_ptr, gshape, dgamma.data_ptr<float>(), dbeta.data_ptr<float>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
  dispatch_vec(vec, [&](auto kv) {
    rt::backward_sweep_kernel<Pro, Epi, R, O, kBlock, decltype(kv)::value, true><<<blocks, kBlock, 0, stream>>>(
        x_ptr, dout_ptr, out_ptr, aux_ptr, params, shape, geo, plan, mean_ptr, rstd_ptr, gamma_ptr, beta_ptr,
        as_float2(coef), dx.data_ptr<float>(), nullptr, Pro::kParams > 0 ? pro_partial.data_ptr<float>() : nullptr);
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  const int counts[2] = {Epi::kParams, Pro::kParams};
  const at::Tensor* partials[2] = {&epi_partial, &pro_partial};
  at::Tensor* grads[2] = {&depilogue, &dprologue};
  for (int f = 0; f < 2; ++f) {
    if (counts[f] == 0) continue;
    rt::param_sums_kernel<<<blocks_for(int64_t(counts[f]) * shape.channels * kWarpSize, 128), 128, 0, stream>>>(
        partials[f]->data_ptr<float>(), counts[f], blocks, plan.splits, shape.batch, shape.channels,
        grads[f]->data_ptr<float>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
  return {dx, dgamma, dbeta, dprologue, depilogue};
}

}  // namespace kgen
