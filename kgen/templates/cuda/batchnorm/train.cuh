// ---- batchnorm/train.cuh: BatchNorm (batch or running statistics) -> element-wise ops -> optional window pooling ----
// (the forward kernels and what both directions share; the backward's: batchnorm/backward.cuh)
// out = Pool(F(BN(x))) for x (N, C, *) contiguous, F a generated functor of the Prologue concept
// (groupnorm/region.cuh) and Pool a max or mean over windows with kernel == stride (or none).
//
// Storage: x, out, a max pooling's extremes, dout and dx are of one type T (float, __half or __nv_bfloat16: the
// model's dtype; core/sweeps.cuh's loads and stores), every value a float in registers; the statistics, the
// parameters and the gradient sums are float32, merged in double. In float16 / bfloat16 the peeled convolution
// bias is added here (`shift`, BnShift): the step normalises z = x + b rounded to T, the reference's conv output
// (cuDNN convolves without the bias and PyTorch adds it after, a second rounding); in float32 the batch statistics
// remove it and it only enters the running mean.
//
// Every kernel here is "per channel": a block owns one channel c and a range of that channel's units,
// where a unit is a 4-value pack of a (sample, channel) plane (no pooling) or one pooling window. The
// units of a channel are numbered sample-major (unit q = sample q / P, unit q % P of its plane), so
// consecutive threads read consecutive addresses and a block's per-channel constants (scale, shift,
// F's parameters) are loaded once.
//
//   forward, batch statistics:  bn_moments_kernel (Welford moments of x per (channel, split), around the
//                               channel's first value) -> bn_finalize_kernel (one warp per channel merges
//                               the splits in double, fixed order; updates running_mean / running_var)
//   forward:                    bn_apply_kernel: y = x * a_c + b_c, v = F(y), pooled -> out; a max pooling
//                               whose backward follows (grad mode on) also writes each window's winning x
//                               (`extremes`, out's shape)
//   backward:                   bn_grad_sums_kernel: sums per channel gy = dL/dy and gy * xhat (and F's
//                               parameter gradients), recomputing y, v and the pooling's routing of dout; a
//                               max pooling's reads only dout and the extremes (the other values' gy is 0);
//                               bn_grad_totals_kernel adds the splits in double, fixed order;
//                               bn_grad_apply_kernel: dx = a_c (gy - mean(gy) - xhat mean(gy xhat))
//                               (running statistics: dx = a_c gy), recomputing gy and the winners.
// Nothing but the output, the per-channel statistics and a max pooling's extremes is stored between forward and
// backward; the reductions are fixed-order trees, so results are bitwise reproducible.
//
// Why the extremes: PyTorch's max pooling routes a window's gradient to its first maximum of F(y), and finding
// it takes F of every value (for a monotone F, the largest y can tie in F with an earlier one after rounding).
// Done in the backward's sums, that is four tanh a 2x2 window, and binds them (H100, L2-11: 72 % of issue slots,
// half of DRAM's rate). So a forward with a backward to follow keeps the winner's x, and the sums read two streams
// the size of out: L2-11's sums take 72 us against 185, that forward's apply 207 us against 152 (F of every value,
// and the extremes written), in one A/B run (H100). Without a backward (no_grad, as KernelBench times), the forward
// takes F of the window's largest y alone for a monotone F.
namespace kgen {

// The pooling window (kernel == stride, no padding) over the last three dims of (N, C, D, H, W); lower
// ranks use D = H = 1 (and window 1 there). Without pooling the window is 1 x 1 x 1.
struct BnShape {
  int64_t n, c, d, h, w;        // input
  int kd, kh, kw;               // window
  int64_t od, oh, ow;           // output (floor(d / kd) ...)
  resident_detail::FastDiv by_ow, by_oh;   // the pooled index split into (od, oh, ow) by a multiply
  __host__ __device__ int64_t plane() const { return d * h * w; }
  __host__ __device__ int64_t out_plane() const { return od * oh * ow; }
  __host__ __device__ bool covers_input() const { return od * kd == d && oh * kh == h && ow * kw == w; }
};

// How a channel's units are split between blocks: `splits` blocks per channel, `chunk` units each.
struct BnSplit {
  int64_t units_per_plane;
  int64_t units;                // n * units_per_plane
  int64_t chunk;
  int splits;
};

// A block's walk over its channel's units, q = begin + threadIdx.x, begin + threadIdx.x + kBlock, ...: the
// (sample, unit in the plane) pair advanced by adding, one division at the start only.
struct UnitCursor {
  int64_t n, j, per_plane, step_n, step_j;
  __device__ __forceinline__ UnitCursor(int64_t q, int64_t units_per_plane, int64_t stride)
      : n(q / units_per_plane), j(q - n * units_per_plane), per_plane(units_per_plane),
        step_n(stride / units_per_plane), step_j(stride - step_n * units_per_plane) {}
  __device__ __forceinline__ void advance() {
    j += step_j;
    n += step_n;
    if (j >= per_plane) {
      j -= per_plane;
      ++n;
    }
  }
};

template <int kBlock>
inline BnSplit plan_bn_split(int64_t units_per_plane, int64_t samples, int64_t channels, int device) {
  const int64_t units = units_per_plane * samples;
  // About eight blocks per SM in all (a full SM at 256 threads), never fewer than 8 units per thread.
  const int64_t wanted = std::max<int64_t>(1, (8 * int64_t(multiprocessors(device)) + channels - 1) / channels);
  const int64_t by_work = std::max<int64_t>(1, units / (8 * kBlock));
  const int splits = int(std::min<int64_t>({wanted, by_work, 1024}));
  const int64_t chunk = blocks_for(units, splits);
  return BnSplit{units_per_plane, units, chunk, int(blocks_for(units, chunk))};
}

// The value the step normalises, z: x, or in float16 / bfloat16 with a peeled convolution bias b (shift, one value a
// channel) x + b rounded to T. A float32 step never gets a shift (bn_forward).
template <class T>
struct BnShift {
  float b;
  bool on;
  __device__ __forceinline__ BnShift(const float* __restrict__ shift, int64_t c)
      : b(shift != nullptr ? __ldg(shift + c) : 0.f), on(shift != nullptr) {}
  __device__ __forceinline__ float operator()(float x) const {
    if constexpr (std::is_same_v<T, float>) {
      return x;
    } else {
      return on ? to_float(from_float<T>(x + b)) : x;
    }
  }
};

// Per-channel scale and shift of the normalisation, y = z a + b, from the channel's statistics.
__device__ __forceinline__ float2 bn_affine(const float* __restrict__ mean, const float* __restrict__ rstd,
                                            const float* __restrict__ weight, const float* __restrict__ bias,
                                            int64_t c) {
  const float a = rstd[c] * (weight ? __ldg(weight + c) : 1.f);
  const float b = (bias ? __ldg(bias + c) : 0.f) - mean[c] * a;
  return make_float2(a, b);
}

// ---------------------------------------------------------------- forward

template <int kBlock, bool kVec, class T>
__global__ void __launch_bounds__(kBlock)
bn_moments_kernel(const T* __restrict__ x, const float* __restrict__ shift, BnShape shape, BnSplit split,
                  Moments* __restrict__ partial) {
  const int64_t c = blockIdx.x / split.splits;
  const int s = blockIdx.x % split.splits;
  const int64_t plane = shape.plane();
  const BnShift<T> z(shift, c);
  const float pilot = z(load1(x + c * plane));  // the channel's first value: moments are taken around it
  const int64_t begin = s * split.chunk, end = min(begin + split.chunk, split.units);
  Moments acc{0.f, 0.f, 0.f};
  // kUnroll units' loads in flight per thread before the first is folded in.
  constexpr int W = kVec ? 4 : 1;
  UnitCursor u(begin + threadIdx.x, split.units_per_plane, kBlock);
  for (int64_t q = begin + threadIdx.x; q < end; q += kUnroll * kBlock) {
    float v[kUnroll][W];
#pragma unroll
    for (int r = 0; r < kUnroll; ++r) {
      if (q + r * kBlock < end) {
        const T* p = x + (u.n * shape.c + c) * plane;
        if constexpr (kVec) {
          const Pack<4> t = load_pack<4>(p, u.j);
#pragma unroll
          for (int k = 0; k < 4; ++k) v[r][k] = z(t.v[k]);
        } else {
          v[r][0] = z(load1(p + u.j));
        }
      }
      u.advance();
    }
#pragma unroll
    for (int r = 0; r < kUnroll; ++r) {
      if (q + r * kBlock < end) {
        if constexpr (kVec) {
          accumulate4(acc, v[r][0] - pilot, v[r][1] - pilot, v[r][2] - pilot, v[r][3] - pilot);
        } else {
          accumulate1(acc, v[r][0] - pilot);
        }
      }
    }
  }
  acc = block_combine<kBlock>(acc);
  if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

// One warp per channel. With running statistics given (factor > 0 or a cumulative average), updates them
// as nn.BatchNorm does: running_mean <- (1 - f) running_mean + f mean (the peeled convolution bias added
// back where the batch mean leaves it out, as the reference's includes it), running_var <- (1 - f) running_var +
// f var * M/(M-1).
template <class T>
__global__ void bn_finalize_kernel(const T* __restrict__ x, const float* __restrict__ shift, BnShape shape,
                                   const Moments* __restrict__ partial, int splits, double eps, double factor,
                                   const float* __restrict__ conv_bias, float* __restrict__ running_mean,
                                   float* __restrict__ running_var, float* __restrict__ mean,
                                   float* __restrict__ rstd) {
  const int64_t c = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kWarpSize;
  if (c >= shape.c) return;  // warp-uniform
  const MomentsD m = warp_merge(splits, [&](int s) { return partial[c * splits + s]; });
  if (threadIdx.x % kWarpSize != 0) return;
  const double mu = double(BnShift<T>(shift, c)(load1(x + c * shape.plane()))) + m.mu;  // the moments' pilot
  const double var = m.n > 0.0 ? fmax(m.m2 / m.n, 0.0) : 0.0;  // biased: the normalisation's
  mean[c] = float(mu);
  rstd[c] = float(1.0 / sqrt(var + eps));
  if (running_mean != nullptr) {
    const double true_mean = mu + (conv_bias ? double(__ldg(conv_bias + c)) : 0.0);
    running_mean[c] = float((1.0 - factor) * double(running_mean[c]) + factor * true_mean);
    const double unbiased = m.n > 1.0 ? m.m2 / (m.n - 1.0) : 0.0;
    running_var[c] = float((1.0 - factor) * double(running_var[c]) + factor * unbiased);
  }
}

// One pooling window of a (sample, channel) plane: its first element and the walk over its elements.
// A window whose size the emitted file knows (kWin, up to this many elements: 2x2, 2x2x2, 1D up to 8) is
// held in registers, its loops unrolled without predicates; any other window is walked element by element.
constexpr int kWindowRegs = 8;

// The plane offsets of a window's elements from its first one, in (kd, kh, kw) order: the same for every
// window, so each thread computes them once (an unrolled walk: the array stays in registers).
struct WindowOffsets {
  int off[kWindowRegs];
  int size;
};

__device__ __forceinline__ WindowOffsets window_offsets(const BnShape& s) {
  WindowOffsets w;
  w.size = s.kd * s.kh * s.kw;
  int a = 0, b = 0, e = 0;
#pragma unroll
  for (int k = 0; k < kWindowRegs; ++k) {
    w.off[k] = (a * int(s.h) + b) * int(s.w) + e;
    if (++e == s.kw) {
      e = 0;
      if (++b == s.kh) {
        b = 0;
        ++a;
      }
    }
  }
  return w;
}

// One pooling window of a (sample, channel) plane (planes hold fewer than 2^31 values: 32-bit offsets).
struct BnWindow {
  const BnShape& s;
  int base;         // plane offset of the window's first element
  __device__ __forceinline__ BnWindow(const BnShape& shape, int64_t j) : s(shape) {
    const uint32_t t = s.by_ow.div(int(j)), od = s.by_oh.div(int(t));
    const int ow = int(j) - int(t) * int(s.ow), oh = int(t) - int(od) * int(s.oh);
    base = (int(od) * s.kd * int(s.h) + oh * s.kh) * int(s.w) + ow * s.kw;
  }
  // body(k, offset) for the window's elements in (kd, kh, kw) order, k counting from 0.
  template <class Body>
  __device__ __forceinline__ void each(Body&& body) const {
    int k = 0;
    for (int a = 0; a < s.kd; ++a) {
      for (int b = 0; b < s.kh; ++b) {
        const int row = base + (a * int(s.h) + b) * int(s.w);
        for (int e = 0; e < s.kw; ++e) body(k++, row + e);
      }
    }
  }
  __device__ __forceinline__ int size() const { return s.kd * s.kh * s.kw; }
  // The kWin elements of a window of exactly that size and their plane offsets, every load issued before any
  // is used (the element arithmetic after a load would otherwise wait out each load's latency in turn).
  template <int kWin, class T>
  __device__ __forceinline__ void gather(const T* __restrict__ xp, const WindowOffsets& w, float (&v)[kWin],
                                         int (&at)[kWin]) const {
#pragma unroll
    for (int k = 0; k < kWin; ++k) {
      at[k] = base + w.off[k];
      v[k] = load1(xp + at[k]);
    }
  }
};

// Max pooling picks the first maximum in window order, and a NaN over any number (as PyTorch's kernel).
template <ReduceOp kOp>
__device__ __forceinline__ bool pool_takes(float v, float best) {
  return v > best || isnan(v);
}

// The units of this block's share of channel c (split s), kUnroll a thread at a time: load(r, p, j) for each
// of them first (its loads issued), then finish(r, p, j) for each, so a thread keeps kUnroll units' loads in
// flight, not one. p = n C + c is the unit's (sample, channel) plane, j the unit within it.
template <int kBlock, int kUnits, class Load, class Finish>
__device__ __forceinline__ void for_block_units_unrolled(const BnShape& shape, const BnSplit& split, int64_t c,
                                                         int s, Load&& load, Finish&& finish) {
  const int64_t begin = s * split.chunk, end = min(begin + split.chunk, split.units);
  UnitCursor u(begin + threadIdx.x, split.units_per_plane, kBlock);
  for (int64_t q = begin + threadIdx.x; q < end; q += kUnits * kBlock) {
    int64_t p[kUnits], j[kUnits];
#pragma unroll
    for (int r = 0; r < kUnits; ++r) {
      p[r] = u.n * shape.c + c;
      j[r] = u.j;
      if (q + r * kBlock < end) load(r, p[r], j[r]);
      u.advance();
    }
#pragma unroll
    for (int r = 0; r < kUnits; ++r) {
      if (q + r * kBlock < end) finish(r, p[r], j[r]);
    }
  }
}

// Whether a step's forward can keep its windows' winners for the backward: max pooling (the header says why).
template <bool kPool, ReduceOp kOp>
constexpr bool kSavesExtremes = kPool && kOp == ReduceOp::kMax;

// kUnroll units a thread in flight, in every storage type. (H100, L2-11's 2x2 windows, 0.38 GB: one window a thread
// at a time takes 172 us, DRAM 62 % busy at 80 % occupancy with 16 bytes in flight a thread; four at a time 148-153
// us at 64 registers. H200, L2-11 at bf16: twice as many units for a 2-byte type made the step's kernels 25% slower,
// four times 89%: they are issue-bound there, benchmarks/results/h200/bn_half/.) kSaveExtremes (a max pooling whose backward follows): each window's
// winning x -> extremes.
template <class F, ReduceOp kOp, bool kPool, bool kVec, int kWin, bool kMonotone, bool kSaveExtremes, int kBlock,
          class T>
__global__ void __launch_bounds__(kBlock)
bn_apply_kernel(const T* __restrict__ x, const float* __restrict__ shift, const float* __restrict__ mean,
                const float* __restrict__ rstd,
                const float* __restrict__ weight, const float* __restrict__ bias, BnShape shape, BnSplit split,
                RegionParams params, T* __restrict__ out, T* __restrict__ extremes) {
  static_assert(!kSaveExtremes || kSavesExtremes<kPool, kOp>, "bn_apply_kernel: extremes of a max pooling only");
  const int64_t c = blockIdx.x / split.splits;
  const int s = blockIdx.x % split.splits;
  const float2 ab = bn_affine(mean, rstd, weight, bias, c);
  const BnShift<T> z(shift, c);
  const F f = F::at(params, c);
  const WindowOffsets wo = window_offsets(shape);
  const int64_t plane = shape.plane(), out_plane = kPool ? shape.out_plane() : plane;
  // The values a unit loads ahead: a window held in registers (kWin), a pack, or one value; a window walked
  // element by element (kPool, kWin == 0) loads as it goes, in finish.
  constexpr int kHeld = kPool ? (kWin > 0 ? kWin : 1) : (kVec ? 4 : 1);
  float v[kUnroll][kHeld];
  const auto load = [&](int r, int64_t p, int64_t j) {
    const T* xp = x + p * plane;
    if constexpr (kPool) {
      if constexpr (kWin > 0) {
        int at[kWin];
        BnWindow(shape, j).gather(xp, wo, v[r], at);
#pragma unroll
        for (int k = 0; k < kWin; ++k) v[r][k] = z(v[r][k]);
      }
    } else if constexpr (kVec) {
      const Pack<4> t = load_pack<4>(xp, j);
#pragma unroll
      for (int k = 0; k < 4; ++k) v[r][k] = z(t.v[k]);
    } else {
      v[r][0] = z(load1(xp + j));
    }
  };
  const auto finish = [&](int r, int64_t p, int64_t j) {
    if constexpr (kPool) {
      float acc = kOp == ReduceOp::kMax ? -INFINITY : 0.f;
      // kMonotone: F never decreases (tanh, sigmoid, relu, clamps... planned so), so the window's max of F(y)
      // is F of its max y: one F per window instead of one per element, where no backward needs the winner
      // (which, after rounding, can be an earlier y than the max with the same F). A NaN y wins as it would in F(y).
      constexpr bool kMaxOfY = kOp == ReduceOp::kMax && kMonotone && !kSaveExtremes;
      // kSaveExtremes: the winner's z, the window's first z until one wins (PyTorch's index where every F(y) is
      // -inf).
      float winner = 0.f;
      const auto take = [&](int k, float xv) {
        const float y = fmaf(xv, ab.x, ab.y);
        if constexpr (kMaxOfY) {
          if (pool_takes<kOp>(y, acc)) acc = y;
        } else if constexpr (kOp == ReduceOp::kMax) {
          const float fv = f.value(y);
          const bool takes = pool_takes<kOp>(fv, acc);
          if constexpr (kSaveExtremes) winner = k == 0 || takes ? xv : winner;
          acc = takes ? fv : acc;
        } else {
          acc += f.value(y);
        }
      };
      if constexpr (kWin > 0) {
#pragma unroll
        for (int k = 0; k < kWin; ++k) take(k, v[r][k]);
      } else {
        const T* xp = x + p * plane;
        BnWindow(shape, j).each([&](int k, int at) { take(k, z(load1(xp + at))); });
      }
      const int size = kWin > 0 ? kWin : shape.kd * shape.kh * shape.kw;
      store1(out + p * out_plane + j, kMaxOfY ? f.value(acc) : (kOp == ReduceOp::kMax ? acc : acc / float(size)));
      if constexpr (kSaveExtremes) store1(extremes + p * out_plane + j, winner);
    } else if constexpr (kVec) {
      Pack<4> y;
#pragma unroll
      for (int k = 0; k < 4; ++k) y.v[k] = f.value(fmaf(v[r][k], ab.x, ab.y));
      store_pack<4>(out + p * out_plane, j, y);
    } else {
      store1(out + p * out_plane + j, f.value(fmaf(v[r][0], ab.x, ab.y)));
    }
  };
  for_block_units_unrolled<kBlock, kUnroll>(shape, split, c, s, load, finish);
}

}  // namespace kgen
