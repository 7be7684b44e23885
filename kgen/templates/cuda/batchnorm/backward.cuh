// ---- batchnorm/backward.cuh: the batch norm step's backward kernels (design and forward: batchnorm/train.cuh):
// bn_grad_sums_kernel, bn_grad_totals_kernel, bn_grad_apply_kernel ----
namespace kgen {

// Units a thread has in flight in the backward kernels. (H100, L2-11's 2x2 windows after tanh, 0.38 GB, one
// run: bn_grad_sums 192 / 183 / 186 / 196 us at 1 / 4 / 2 / 8 units; bn_grad_apply, which also stores a
// window's 16 bytes a unit, 280 / 300 / 332 / 296 us.)
constexpr int kBnGradSumsUnits = 4;
constexpr int kBnGradApplyUnits = 1;

// One unit's backward in two steps, so that a thread can have kUnroll units' loads in flight (as bn_apply):
// load() issues the unit's loads (x of a window of known size or of a pack, dout), finish() calls
// body(offset in the plane, gy, xhat) for each element, with gy (dL/dy) through F and the pooling (a max
// pooling's winner found as the forward found it: reading the saved winner instead measured slower, its 4 bytes
// a window costing more than the F they save). A window of any other size is walked element by element in
// finish().
template <class F, ReduceOp kOp, bool kPool, bool kVec, int kWin>
struct BnUnitGradient {
  static constexpr int kHeld = kPool ? (kWin > 0 ? kWin : 1) : (kVec ? 4 : 1);
  float v[kHeld];               // z of the held elements (BnShift)
  float g[kPool ? 1 : kHeld];   // dout: the window's output, or each element's
  int base;                     // kPool: the window's first element

  template <class T>
  __device__ __forceinline__ void load(const T* __restrict__ xp, const T* __restrict__ dp, int64_t j,
                                       const BnShape& shape, const WindowOffsets& wo, const BnShift<T>& z) {
    if constexpr (kPool) {
      const BnWindow win(shape, j);
      base = win.base;
      g[0] = load1(dp + j);
      if constexpr (kWin > 0) {
        int at[kWin];
        win.gather(xp, wo, v, at);
#pragma unroll
        for (int k = 0; k < kWin; ++k) v[k] = z(v[k]);
      }
    } else if constexpr (kVec) {
      const Pack<4> xv = load_pack<4>(xp, j), gv = load_pack<4>(dp, j);
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        v[k] = z(xv.v[k]);
        g[k] = gv.v[k];
      }
    } else {
      v[0] = z(load1(xp + j));
      g[0] = load1(dp + j);
    }
  }

  template <class T, class Body>
  __device__ __forceinline__ void finish(const T* __restrict__ xp, const BnShift<T>& z, int64_t j,
                                         const BnShape& shape, const WindowOffsets& wo, float2 ab, float mean_c,
                                         float rstd_c, const F& f, float (&dparam)[kMaxParams], Body&& body) const {
    if constexpr (kPool && kWin > 0) {
      if constexpr (kOp == ReduceOp::kMax) {
        float best = -INFINITY;
        int arg = 0;
#pragma unroll
        for (int k = 0; k < kWin; ++k) {
          const float value = f.value(fmaf(v[k], ab.x, ab.y));
          if (pool_takes<kOp>(value, best)) {
            best = value;
            arg = k;
          }
        }
        // Only the winner's y goes through F's derivative: its value picked out, one backward call.
        float y_arg = 0.f;
#pragma unroll
        for (int k = 0; k < kWin; ++k) y_arg = k == arg ? v[k] : y_arg;
        const float gy_arg = f.backward(fmaf(y_arg, ab.x, ab.y), g[0], dparam);
#pragma unroll
        for (int k = 0; k < kWin; ++k) body(base + wo.off[k], k == arg ? gy_arg : 0.f, (v[k] - mean_c) * rstd_c);
      } else {
        const float share = g[0] / float(kWin);
#pragma unroll
        for (int k = 0; k < kWin; ++k) {
          body(base + wo.off[k], f.backward(fmaf(v[k], ab.x, ab.y), share, dparam), (v[k] - mean_c) * rstd_c);
        }
      }
    } else if constexpr (kPool) {
      const BnWindow win(shape, j);
      if constexpr (kOp == ReduceOp::kMax) {
        float best = -INFINITY;
        int arg = 0;
        win.each([&](int k, int at) {
          const float value = f.value(fmaf(z(load1(xp + at)), ab.x, ab.y));
          if (pool_takes<kOp>(value, best)) {
            best = value;
            arg = k;
          }
        });
        win.each([&](int k, int at) {
          const float xi = z(load1(xp + at));
          const float gy = k == arg ? f.backward(fmaf(xi, ab.x, ab.y), g[0], dparam) : 0.f;
          body(at, gy, (xi - mean_c) * rstd_c);
        });
      } else {
        const float share = g[0] / float(win.size());
        win.each([&](int, int at) {
          const float xi = z(load1(xp + at));
          body(at, f.backward(fmaf(xi, ab.x, ab.y), share, dparam), (xi - mean_c) * rstd_c);
        });
      }
    } else {
#pragma unroll
      for (int i = 0; i < kHeld; ++i) {
        body(j * kHeld + i, f.backward(fmaf(v[i], ab.x, ab.y), g[i], dparam), (v[i] - mean_c) * rstd_c);
      }
    }
  }
};

// partial is (2 + kParams, C, splits): sum gy, sum gy xhat, then F's parameter gradients. A max pooling's
// units are its outputs: dout and the winning z, the only value of the window whose gy is not 0.
template <class F, ReduceOp kOp, bool kPool, bool kVec, int kWin, int kBlock, class T>
__global__ void __launch_bounds__(kBlock)
bn_grad_sums_kernel(const T* __restrict__ dout, const T* __restrict__ x, const float* __restrict__ shift,
                    const T* __restrict__ extremes, const float* __restrict__ mean, const float* __restrict__ rstd,
                    const float* __restrict__ weight, const float* __restrict__ bias, BnShape shape, BnSplit split,
                    RegionParams params, float* __restrict__ partial) {
  const int64_t c = blockIdx.x / split.splits;
  const int s = blockIdx.x % split.splits;
  const float2 ab = bn_affine(mean, rstd, weight, bias, c);
  const float mean_c = mean[c], rstd_c = rstd[c];
  const BnShift<T> z(shift, c);
  const F f = F::at(params, c);
  const WindowOffsets wo = window_offsets(shape);
  const int64_t plane = shape.plane(), out_plane = kPool ? shape.out_plane() : plane;
  float sum_gy = 0.f, sum_gy_xhat = 0.f;
  float dparam[kMaxParams] = {0.f, 0.f, 0.f, 0.f};
  if constexpr (kSavesExtremes<kPool, kOp>) {
    float g[kBnGradSumsUnits], winner[kBnGradSumsUnits];
    for_block_units_unrolled<kBlock, kBnGradSumsUnits>(
        shape, split, c, s,
        [&](int r, int64_t p, int64_t j) {
          g[r] = load1(dout + p * out_plane + j);
          winner[r] = load1(extremes + p * out_plane + j);
        },
        [&](int r, int64_t, int64_t) {
          const float gy = f.backward(fmaf(winner[r], ab.x, ab.y), g[r], dparam);
          sum_gy += gy;
          sum_gy_xhat = fmaf(gy, (winner[r] - mean_c) * rstd_c, sum_gy_xhat);
        });
  } else {
    BnUnitGradient<F, kOp, kPool, kVec, kWin> unit[kBnGradSumsUnits];
    for_block_units_unrolled<kBlock, kBnGradSumsUnits>(
        shape, split, c, s,
        [&](int r, int64_t p, int64_t j) { unit[r].load(x + p * plane, dout + p * out_plane, j, shape, wo, z); },
        [&](int r, int64_t p, int64_t j) {
          unit[r].finish(x + p * plane, z, j, shape, wo, ab, mean_c, rstd_c, f, dparam,
                         [&](int64_t, float gy, float xhat) {
                           sum_gy += gy;
                           sum_gy_xhat = fmaf(gy, xhat, sum_gy_xhat);
                         });
        });
  }
  const int64_t stride = shape.c * split.splits, at = c * split.splits + s;
  // block_sum's shared scratch is reused by each sum: a barrier between them.
  const float t0 = block_sum<kBlock>(sum_gy);
  if (threadIdx.x == 0) partial[at] = t0;
  __syncthreads();
  const float t1 = block_sum<kBlock>(sum_gy_xhat);
  if (threadIdx.x == 0) partial[stride + at] = t1;
#pragma unroll
  for (int k = 0; k < F::kParams; ++k) {
    __syncthreads();
    const float t = block_sum<kBlock>(dparam[k]);
    if (threadIdx.x == 0) partial[(2 + k) * stride + at] = t;
  }
}

// One thread per (row, channel): the splits' sums in double, in order. totals is (2 + kParams, C).
__global__ void bn_grad_totals_kernel(const float* __restrict__ partial, int64_t rows, int64_t channels, int splits,
                                      float* __restrict__ totals) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= rows * channels) return;
  double t = 0.0;
  for (int s = 0; s < splits; ++s) t += double(partial[i * splits + s]);
  totals[i] = float(t);
}

template <class F, ReduceOp kOp, bool kPool, bool kVec, int kWin, bool kBatchStats, int kBlock, class T>
__global__ void __launch_bounds__(kBlock)
bn_grad_apply_kernel(const T* __restrict__ dout, const T* __restrict__ x, const float* __restrict__ shift,
                     const float* __restrict__ mean,
                     const float* __restrict__ rstd, const float* __restrict__ weight, const float* __restrict__ bias,
                     const float* __restrict__ totals, double inv_count, BnShape shape, BnSplit split,
                     RegionParams params, T* __restrict__ dx) {
  const int64_t c = blockIdx.x / split.splits;
  const int s = blockIdx.x % split.splits;
  const float2 ab = bn_affine(mean, rstd, weight, bias, c);
  const float mean_c = mean[c], rstd_c = rstd[c];
  const float mean_gy = kBatchStats ? float(double(totals[c]) * inv_count) : 0.f;
  const float mean_gy_xhat = kBatchStats ? float(double(totals[shape.c + c]) * inv_count) : 0.f;
  const BnShift<T> z(shift, c);
  const F f = F::at(params, c);
  const WindowOffsets wo = window_offsets(shape);
  float unused[kMaxParams] = {0.f, 0.f, 0.f, 0.f};
  const int64_t plane = shape.plane(), out_plane = kPool ? shape.out_plane() : plane;
  BnUnitGradient<F, kOp, kPool, kVec, kWin> unit[kBnGradApplyUnits];
  for_block_units_unrolled<kBlock, kBnGradApplyUnits>(
      shape, split, c, s,
      [&](int r, int64_t p, int64_t j) { unit[r].load(x + p * plane, dout + p * out_plane, j, shape, wo, z); },
      [&](int r, int64_t p, int64_t j) {
        T* dxp = dx + p * plane;
        if constexpr (kVec && !kPool) {
          // A pack's four values stored as one 16-byte (float) or 8-byte (2-byte type) store.
          Pack<4> d;
          unit[r].finish(x + p * plane, z, j, shape, wo, ab, mean_c, rstd_c, f, unused,
                         [&](int64_t i, float gy, float xhat) {
                           d.v[i - 4 * j] = ab.x * (gy - mean_gy - xhat * mean_gy_xhat);
                         });
          store_pack<4>(dxp, j, d);
        } else {
          unit[r].finish(x + p * plane, z, j, shape, wo, ab, mean_c, rstd_c, f, unused,
                         [&](int64_t i, float gy, float xhat) {
                           store1(dxp + i, ab.x * (gy - mean_gy - xhat * mean_gy_xhat));
                         });
        }
      });
  if constexpr (kPool && kBatchStats) {
    // Elements no window covers (a size not a multiple of the window) get no gradient from the output,
    // but the batch statistics still carry one to them.
    if (!shape.covers_input()) {
      const int64_t per_channel = shape.n * plane, share = (per_channel + split.splits - 1) / split.splits;
      for (int64_t q = s * share + threadIdx.x; q < min((s + 1) * share, per_channel); q += kBlock) {
        const int64_t n = q / plane, i = q - n * plane;
        const int64_t iw = i % shape.w, t = i / shape.w, ih = t % shape.h, id = t / shape.h;
        if (id < shape.od * shape.kd && ih < shape.oh * shape.kh && iw < shape.ow * shape.kw) continue;
        const int64_t p = n * shape.c + c;
        const float xhat = (z(load1(x + p * plane + i)) - mean_c) * rstd_c;
        store1(dx + p * plane + i, ab.x * (-mean_gy - xhat * mean_gy_xhat));
      }
    }
  }
}

}  // namespace kgen
