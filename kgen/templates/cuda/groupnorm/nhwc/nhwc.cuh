// ---- groupnorm/nhwc/nhwc.cuh: a fused GroupNorm region whose input is channels-last (kgen emit --ref --conv fast) ----
//
//   x --Pro--> z --GroupNorm(G, eps, optional affine)--> y --Epi--> out        (no reduction: kNone)
//
// x is (N, C, *spatial) in channels-last memory: value (n, c, p), p the flat spatial position and
// P = prod(spatial), lives at (n P + p) C + c. A convolution that cuDNN runs channels-last writes this
// layout natively; reading it here spares cuDNN's transposing copy of the convolution's output back to
// NCHW (for L2-19's ConvTranspose2d, 1.77 of the 8.6 ms NCHW forward on the H100). The same functors as
// the two-pass kernels (groupnorm/region.cuh), the same statistics layouts: only the walk over memory differs.
//
// Every kernel works on tiles of kP pixels x kC channels of one sample (kC = 32, or 16 where C <= 16; see
// Tile). Rows (one pixel's kC channels, contiguous) are loaded from x, as 16-byte vectors when C % 4 == 0. The statistics fold them
// as they come (a thread's rows always hold the same channels). Apply and backward, which meet an NCHW
// stream, go through a shared [kP][33] tile and work on the column side, where warp w owns channels
// c0 + w, c0 + w + kWarps, ... and lane l pixels p0 + l, p0 + l + 32, ...: so the per-channel constants
// (functor parameters, the group's mean and rstd, gamma, beta) are warp-uniform, per-channel sums are warp
// sums, and the NCHW streams (out, dout) move as coalesced 128-byte column runs. The [kP][33] padding puts a row and a
// column of the tile in 32 distinct banks alike.
//
// Forward, 2 reads of x + 1 write of out (NCHW-contiguous, the reference's layout):
//   stats_partial     per (sample, channel tile, pixel split): per-channel Welford moments of z - pilot over
//                     the split's tiles, at (n C + c) splits + split: region_twopass's stats_partial layout,
//                     pilot included, so region_twopass::stats_finalize merges them unchanged
//   apply             one tile per block: out[n, c, p] = Epi(GN(Pro(x[n, p, c]))), column stores
// Backward, 2 reads of x and dout, 1 write of dx (channels-last, what cuDNN's channels-last backward takes):
//   backward_partial  per (sample, channel tile, split): sums of dy and dy (z - mean) and Epi's parameter
//                     gradients per (n, c, split), region_twopass's layouts
//   backward_group, param_grad (groupnorm/statistics.cuh) and param_sums (region_twopass), as in the two-pass backward
//   backward_apply    per (sample, channel tile, split): dx computed on the column side, turned back into
//                     rows through the shared tile, stored as rows; Pro's parameter gradients per (n, c, split)
// The split kernels prefetch the next tile's rows into registers while the current one is worked on. No float
// atomics: every result is bitwise reproducible.
namespace kgen {
namespace region_nhwc {

// Tile geometry for kBlock threads, W-float row vectors (W = 4 when C % 4 == 0, else 1) and kC channels:
// 32, or 16 where C <= 16 (16-byte rows, kBlock <= 512), whose tiles take twice the pixels so that no half of
// the block idles on channels that do not exist (L2-60 and L2-83 have 16).
//   rows:    kLanesPerPixel threads cover one pixel's kC channels, kPixelsPerStep pixels at once,
//            kRowSteps steps for the whole tile
//   columns: warp w owns the tile's channels w, w + kWarps, ... (kChannelsPerWarp of them), lane l the
//            pixels l, l + 32, ... (kColumnSteps of them)
template <int kBlock, int W, int kChannels>
struct Tile {
  static constexpr int kWarps = kBlock / kWarpSize;
  static constexpr int kC = kChannels;
  static constexpr int kP = (kBlock / 2 < 32 ? 32 : (kBlock / 2 > 128 ? 128 : kBlock / 2)) * (32 / kC);
  static constexpr int kLanesPerPixel = kC / W;
  static constexpr int kPixelsPerStep = kBlock / kLanesPerPixel;
  static constexpr int kRowSteps = kP / kPixelsPerStep;
  static constexpr int kChannelsPerWarp = kC / kWarps;
  static constexpr int kColumnSteps = kP / kWarpSize;
  static_assert(kBlock % kWarpSize == 0 && kBlock >= kWarpSize && kBlock <= 1024, "kBlock: whole warps, <= 1024");
  static_assert(kC == 32 || (kC == 16 && W == 4), "kgen: tiles of 32 channels, or 16 with 16-byte rows");
  static_assert(kC % kWarps == 0 && kP % kPixelsPerStep == 0 && kP % kWarpSize == 0,
                "kgen: a tile must split evenly over the block");
  using Buffer = float[kP][kC + 1];

  __device__ __forceinline__ static int row_lane() { return threadIdx.x % kLanesPerPixel; }
  __device__ __forceinline__ static int row_pixel() { return threadIdx.x / kLanesPerPixel; }

  // This thread's row vectors of the tile at (p0, c0) of `sample` (the sample's first value).
  __device__ __forceinline__ static void load_rows(const float* __restrict__ sample, int64_t channels, int64_t pixels,
                                                   int64_t p0, int64_t c0, Pack<W> (&v)[kRowSteps]) {
    const int64_t c = c0 + int64_t(row_lane()) * W;
#pragma unroll
    for (int k = 0; k < kRowSteps; ++k) {
      const int64_t p = p0 + row_pixel() + k * kPixelsPerStep;
      if (c < channels && p < pixels) v[k] = load_pack<W>(sample + p * channels + c, 0);
    }
  }

  __device__ __forceinline__ static void store_rows(float* __restrict__ sample, int64_t channels, int64_t pixels,
                                                    int64_t p0, int64_t c0, const Pack<W> (&v)[kRowSteps]) {
    const int64_t c = c0 + int64_t(row_lane()) * W;
#pragma unroll
    for (int k = 0; k < kRowSteps; ++k) {
      const int64_t p = p0 + row_pixel() + k * kPixelsPerStep;
      if (c < channels && p < pixels) store_pack<W>(sample + p * channels + c, 0, v[k]);
    }
  }

  // Row vectors <-> the shared tile (out-of-range slots are left alone: the column side never reads them).
  __device__ __forceinline__ static void rows_to_tile(Buffer& tile, const Pack<W> (&v)[kRowSteps]) {
#pragma unroll
    for (int k = 0; k < kRowSteps; ++k) {
#pragma unroll
      for (int j = 0; j < W; ++j) tile[row_pixel() + k * kPixelsPerStep][row_lane() * W + j] = v[k].v[j];
    }
  }

  __device__ __forceinline__ static void tile_to_rows(const Buffer& tile, Pack<W> (&v)[kRowSteps]) {
#pragma unroll
    for (int k = 0; k < kRowSteps; ++k) {
#pragma unroll
      for (int j = 0; j < W; ++j) v[k].v[j] = tile[row_pixel() + k * kPixelsPerStep][row_lane() * W + j];
    }
  }
};

// How the tiles of one problem are dealt to blocks: forward apply one tile per block; the statistics and
// both backward kernels one (sample, channel tile, split) per block, a split being tiles_per_split
// consecutive pixel tiles (about 64 K values per block, at most 4096 splits per (sample, channel tile)).
struct TilePlan {
  int64_t channel_tiles;
  int64_t pixel_tiles;
  int64_t tiles_per_split;
  int splits;
};

// A (sample, channel tile, split) block of the split kernels.
struct SplitBlock {
  int64_t n, c0, split, t_begin, t_end;
  __device__ __forceinline__ SplitBlock(const TilePlan& plan, int tile_channels) {
    const int64_t ct = blockIdx.x % plan.channel_tiles;
    const int64_t rest = blockIdx.x / plan.channel_tiles;
    split = rest % plan.splits;
    n = rest / plan.splits;
    c0 = ct * tile_channels;
    t_begin = split * plan.tiles_per_split;
    t_end = min(plan.pixel_tiles, t_begin + plan.tiles_per_split);
  }
};

// ---------------------------------------------------------------- forward: statistics

// Per (n, c, split): Welford moments of z - pilot, pilot = z of the group's first value, x[n, p = 0, first
// channel of the group] (region_twopass::stats_partial_kernel's pilot; the block of split 0 holding that
// channel stores it for stats_finalize).
//
// Statistics need no transpose: a thread's row vectors always hold the same W channels (c0 + row_lane W ..
// + W - 1) of pixels row_pixel, row_pixel + kPixelsPerStep, ..., so it keeps W running Moments and the Pro
// parameters of those channels in registers and folds its rows straight in, with no shared tile and no barrier
// per tile (through the shared tile, as apply goes, the statistics move 2.2 TB/s at L2-19's shape, 1.7 at
// L2-21's; H100). A thread issues its kRowSteps loads of a tile before it folds the first; the latency is hidden by
// many resident warps (few registers), as in region_twopass's statistics, not by a register prefetch of the
// next tile (which doubles the registers: 96, two blocks per SM). At the end, threads
// holding the same channels combine: across a warp by shuffles (the lanes kLanesPerPixel apart), across
// warps through shared memory, in a fixed order.
template <class Pro, int kBlock, bool kVec, int kC>
__global__ void __launch_bounds__(kBlock)
stats_partial_kernel(const float* __restrict__ x, RegionParams params, RegionShape shape, TilePlan plan,
                     Moments* __restrict__ partial, float* __restrict__ pilots) {
  constexpr int W = kVec ? 4 : 1;
  using T = Tile<kBlock, W, kC>;
  __shared__ Moments per_warp[T::kWarps][T::kC];
  const SplitBlock b(plan, T::kC);
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int64_t channels = shape.channels, pixels = shape.plane, cpg = shape.channels_per_group();
  const float* sample = x + b.n * pixels * channels;
  const int64_t c_first = b.c0 + int64_t(T::row_lane()) * W;  // this thread's channels: c_first .. + W - 1
  const bool mine = c_first < channels;                       // W = 4 needs C % 4 == 0: all W or none

  Pro pro[W];
  float pilot[W];
  Moments acc[W];
#pragma unroll
  for (int j = 0; j < W; ++j) {
    const int64_t c = mine ? c_first + j : 0;
    const int64_t first = c / cpg * cpg;
    pro[j] = Pro::at(params, c);
    pilot[j] = Pro::at(params, first).value(__ldg(sample + first));
    acc[j] = Moments{0.f, 0.f, 0.f};
    if (b.split == 0 && mine && c == first && T::row_pixel() == 0)
      pilots[b.n * shape.groups + c / cpg] = pilot[j];
  }

  for (int64_t t = b.t_begin; t < b.t_end; ++t) {
    const int64_t p0 = t * T::kP;
    Pack<W> v[T::kRowSteps];
    T::load_rows(sample, channels, pixels, p0, b.c0, v);  // kRowSteps independent loads before the first use
    bool folded = !mine;
    if constexpr (T::kRowSteps % 4 == 0) {
      if (!folded && p0 + T::kP <= pixels) {
#pragma unroll
        for (int k = 0; k < T::kRowSteps; k += 4) {
#pragma unroll
          for (int j = 0; j < W; ++j)
            accumulate4(acc[j], pro[j].value(v[k].v[j]) - pilot[j], pro[j].value(v[k + 1].v[j]) - pilot[j],
                        pro[j].value(v[k + 2].v[j]) - pilot[j], pro[j].value(v[k + 3].v[j]) - pilot[j]);
        }
        folded = true;
      }
    }
    if (!folded) {
#pragma unroll
      for (int k = 0; k < T::kRowSteps; ++k) {
        if (p0 + T::row_pixel() + k * T::kPixelsPerStep >= pixels) break;  // pixels only grow with k
#pragma unroll
        for (int j = 0; j < W; ++j) accumulate1(acc[j], pro[j].value(v[k].v[j]) - pilot[j]);
      }
    }
  }

  // Threads kLanesPerPixel apart in a warp hold the same channels.
#pragma unroll
  for (int j = 0; j < W; ++j) {
#pragma unroll
    for (int offset = T::kLanesPerPixel; offset < kWarpSize; offset *= 2) {
      const Moments other{__shfl_xor_sync(0xffffffffu, acc[j].count, offset),
                          __shfl_xor_sync(0xffffffffu, acc[j].mean, offset),
                          __shfl_xor_sync(0xffffffffu, acc[j].m2, offset)};
      acc[j] = combine(acc[j], other);
    }
    if (lane < T::kLanesPerPixel) per_warp[warp][lane * W + j] = acc[j];
  }
  __syncthreads();
  if (threadIdx.x < T::kC) {
    const int64_t c = b.c0 + threadIdx.x;
    Moments m = per_warp[0][threadIdx.x];
#pragma unroll
    for (int w = 1; w < T::kWarps; ++w) m = combine(m, per_warp[w][threadIdx.x]);
    if (c < channels) partial[(b.n * channels + c) * plan.splits + b.split] = m;
  }
}

// ---------------------------------------------------------------- forward: apply

// out[n, c, p] (NCHW) = Epi(GN(Pro(x[n, p, c]))): one tile per block.
template <class Pro, class Epi, int kBlock, bool kVec, int kC>
__global__ void __launch_bounds__(kBlock)
apply_kernel(const float* __restrict__ x, RegionParams params, RegionShape shape, TilePlan plan,
             const float2* __restrict__ mean, const float* __restrict__ rstd, const float* __restrict__ gamma,
             const float* __restrict__ beta, float* __restrict__ out) {
  using T = Tile<kBlock, kVec ? 4 : 1, kC>;
  __shared__ typename T::Buffer tile;
  const int64_t ct = blockIdx.x % plan.channel_tiles;
  const int64_t rest = blockIdx.x / plan.channel_tiles;
  const int64_t pt = rest % plan.pixel_tiles, n = rest / plan.pixel_tiles;
  const int64_t c0 = ct * T::kC, p0 = pt * T::kP;
  const int64_t channels = shape.channels, pixels = shape.plane, cpg = shape.channels_per_group();
  Pack<kVec ? 4 : 1> v[T::kRowSteps];
  T::load_rows(x + n * pixels * channels, channels, pixels, p0, c0, v);
  T::rows_to_tile(tile, v);
  __syncthreads();
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
#pragma unroll
  for (int i = 0; i < T::kChannelsPerWarp; ++i) {
    const int cl = warp + i * T::kWarps;
    const int64_t c = c0 + cl;
    if (c >= channels) break;  // warp-uniform
    const auto ch = region_twopass::load_channel<Pro, Epi>(params, c, n * shape.groups + c / cpg, mean, rstd, gamma,
                                                           beta);
    float* dst = out + (n * channels + c) * pixels;
#pragma unroll
    for (int m = 0; m < T::kColumnSteps; ++m) {
      const int pl = lane + m * kWarpSize;
      if (p0 + pl < pixels) dst[p0 + pl] = ch.value(tile[pl][cl]);
    }
  }
}

// ---------------------------------------------------------------- backward

// kApply = false: per (n, c, split) sums of dy, dy (z - mean) -> gn_partial and Epi's parameter gradients
// -> param_partial[k][(n C + c) splits + split]. kApply = true: dz = rstd gamma dy + B (z - mean) + C +
// direct dz, dx = Pro::backward(dz) + direct dx, written as rows; Pro's parameter gradients -> param_partial.
// The tile's per-channel constants sit in shared memory, not in registers, and dx goes through a second
// shared tile: a thread keeps only its prefetched rows, its sums and its parameter gradients, so that
// several blocks share an SM (everything kept in registers takes 128-158 of them).
template <class Pro, class Epi, int kBlock, bool kVec, int kC, bool kApply>
__global__ void __launch_bounds__(kBlock)
backward_kernel(const float* __restrict__ x, const float* __restrict__ dout, RegionParams params, RegionShape shape,
                TilePlan plan, const float2* __restrict__ mean, const float* __restrict__ rstd,
                const float* __restrict__ gamma, const float* __restrict__ beta, const float2* __restrict__ coef,
                float* __restrict__ dx, float2* __restrict__ gn_partial, float* __restrict__ param_partial) {
  constexpr int W = kVec ? 4 : 1;
  using T = Tile<kBlock, W, kC>;
  using Channel = region_twopass::Channel<Pro, Epi>;
  constexpr int kParams = kApply ? Pro::kParams : Epi::kParams;
  __shared__ typename T::Buffer tile;                    // x, [pixel][channel]
  __shared__ float dx_tile[kApply ? T::kP : 1][T::kC + 1];  // kApply: dx, [pixel][channel]
  __shared__ Channel consts[T::kC];
  __shared__ float2 coefs[T::kC];
  const SplitBlock b(plan, T::kC);
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int64_t channels = shape.channels, pixels = shape.plane, cpg = shape.channels_per_group();
  const float* sample = x + b.n * pixels * channels;
  if (threadIdx.x < T::kC) {  // read after the loop's first barrier
    const int64_t c = b.c0 + threadIdx.x;
    const int64_t cc = c < channels ? c : 0;
    const int64_t row = b.n * shape.groups + cc / cpg;
    consts[threadIdx.x] = region_twopass::load_channel<Pro, Epi>(params, cc, row, mean, rstd, gamma, beta);
    coefs[threadIdx.x] = kApply ? coef[row] : make_float2(0.f, 0.f);
  }

  float2 sums[T::kChannelsPerWarp];
  float dparam[T::kChannelsPerWarp][kMaxParams];
#pragma unroll
  for (int i = 0; i < T::kChannelsPerWarp; ++i) {
    sums[i] = make_float2(0.f, 0.f);
#pragma unroll
    for (int k = 0; k < kMaxParams; ++k) dparam[i][k] = 0.f;
  }
  float discard[kMaxParams] = {0.f, 0.f, 0.f, 0.f};

  Pack<W> v[T::kRowSteps];
  if (b.t_begin < b.t_end) T::load_rows(sample, channels, pixels, b.t_begin * T::kP, b.c0, v);
  for (int64_t t = b.t_begin; t < b.t_end; ++t) {
    const int64_t p0 = t * T::kP;
    __syncthreads();  // every thread is done with the previous tile (and dx_tile)
    T::rows_to_tile(tile, v);
    __syncthreads();
    if (t + 1 < b.t_end) T::load_rows(sample, channels, pixels, p0 + T::kP, b.c0, v);  // in flight meanwhile
#pragma unroll
    for (int i = 0; i < T::kChannelsPerWarp; ++i) {
      const int cl = warp + i * T::kWarps;
      const int64_t c = b.c0 + cl;
      if (c >= channels) break;  // warp-uniform, and channels only grow with i
      const Channel ch = consts[cl];
      const float2 bc = coefs[cl];
      const float* g = dout + (b.n * channels + c) * pixels + p0;
      float dv[T::kColumnSteps];
#pragma unroll
      for (int m = 0; m < T::kColumnSteps; ++m) {
        const int pl = lane + m * kWarpSize;
        dv[m] = p0 + pl < pixels ? __ldg(g + pl) : 0.f;
      }
#pragma unroll
      for (int m = 0; m < T::kColumnSteps; ++m) {
        const int pl = lane + m * kWarpSize;
        if (p0 + pl >= pixels) break;  // pixels only grow with m
        const float xv = tile[pl][cl];
        const float z = ch.pro.value(xv);
        const float zc = centered(z, ch.mean);
        const float y = __fmaf_rn(zc, ch.scale, ch.shift);  // kCentred, as the forward
        float dy = 0.f, dz_direct = 0.f, dx_direct = 0.f;
        if constexpr (kApply) {
          ch.epi.backward(y, z, xv, dv[m], dy, dz_direct, dx_direct, discard);
          const float dz = (ch.scale * dy + bc.x * zc + bc.y) + dz_direct;
          dx_tile[pl][cl] = ch.pro.backward(xv, dz, dparam[i]) + dx_direct;
        } else {
          ch.epi.backward(y, z, xv, dv[m], dy, dz_direct, dx_direct, dparam[i]);
          sums[i].x += dy;
          sums[i].y += dy * zc;
        }
      }
    }
    if constexpr (kApply) {  // dx back to rows
      __syncthreads();
      Pack<W> rows[T::kRowSteps];
      T::tile_to_rows(dx_tile, rows);
      T::store_rows(dx + b.n * pixels * channels, channels, pixels, p0, b.c0, rows);
    }
  }
  (void)discard;

#pragma unroll
  for (int i = 0; i < T::kChannelsPerWarp; ++i) {
    const int64_t c = b.c0 + warp + i * T::kWarps;
    const int64_t at = (b.n * channels + c) * plan.splits + b.split;
    if constexpr (!kApply) {
      const float2 s = warp_sum(sums[i]);
      if (lane == 0 && c < channels) gn_partial[at] = s;
    }
#pragma unroll
    for (int k = 0; k < kParams; ++k) {
      const float s = warp_sum(dparam[i][k]);
      if (lane == 0 && c < channels) param_partial[int64_t(k) * shape.batch * channels * plan.splits + at] = s;
    }
  }
}

}  // namespace region_nhwc
}  // namespace kgen
