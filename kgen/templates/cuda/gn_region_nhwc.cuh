// ---- gn_region_nhwc: a fused GroupNorm region whose input is channels-last (kgen emit --ref --conv fast) ----
//
//   x --Pro--> z --GroupNorm(G, eps, optional affine)--> y --Epi--> out        (no reduction: kNone)
//
// x is (N, C, *spatial) in channels-last memory: value (n, c, p), p the flat spatial position and
// P = prod(spatial), lives at (n P + p) C + c. A convolution that cuDNN runs channels-last writes this
// layout natively; reading it here spares cuDNN's transposing copy of the convolution's output back to
// NCHW (for L2-19's ConvTranspose2d, 1.77 of the 8.6 ms NCHW forward on the H100). The same functors as
// the two-pass kernels (gn_region_common.cuh), the same statistics layouts: only the walk over memory differs.
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
//   backward_group, param_grad (groupnorm.cuh) and param_sums (region_twopass), as in the two-pass backward
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

// The tile width a launch takes (see Tile): 16 channels for C <= 16 on the 16-byte path, else 32.
template <int kBlock>
inline int tile_channels(bool vec, int64_t channels) {
  return kBlock <= 512 && vec && channels <= 16 ? 16 : 32;
}

// Calls f(kVec, kC) (std::integral_constant values) for the tile a launch takes.
template <int kBlock, class F>
inline void dispatch_tile(bool vec, int tile_c, F&& f) {
  if constexpr (kBlock <= 512) {
    if (vec && tile_c == 16) return f(std::true_type{}, std::integral_constant<int, 16>{});
  }
  if (vec) return f(std::true_type{}, std::integral_constant<int, 32>{});
  f(std::false_type{}, std::integral_constant<int, 32>{});
}

template <int kBlock, int kC>
inline TilePlan plan_tiles_of(const RegionShape& shape) {
  using T = Tile<kBlock, 4, kC>;
  TilePlan plan;
  plan.channel_tiles = blocks_for(shape.channels, T::kC);
  plan.pixel_tiles = blocks_for(shape.plane, T::kP);
  constexpr int64_t kTargetTiles = std::max<int64_t>(1, 65536 / (T::kP * T::kC));
  int64_t per_split = std::min<int64_t>(std::max<int64_t>(plan.pixel_tiles, 1), kTargetTiles);
  int64_t splits = blocks_for(plan.pixel_tiles, per_split);
  if (splits > 4096) {
    per_split = blocks_for(plan.pixel_tiles, 4096);
    splits = blocks_for(plan.pixel_tiles, per_split);
  }
  plan.tiles_per_split = per_split;
  plan.splits = static_cast<int>(std::max<int64_t>(splits, 1));
  return plan;
}

template <int kBlock>
inline TilePlan plan_tiles(const RegionShape& shape, int tile_c) {
  if constexpr (kBlock <= 512) {
    if (tile_c == 16) return plan_tiles_of<kBlock, 16>(shape);
  }
  return plan_tiles_of<kBlock, 32>(shape);
}

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
// per tile (the first version went through the shared tile as apply does: 2.2 TB/s at L2-19's shape, 1.7 at
// L2-21's). A thread issues its kRowSteps loads of a tile before it folds the first; the latency is hidden by
// many resident warps (few registers), as in region_twopass's statistics, not by a register prefetch of the
// next tile (which doubled the registers: 96, two blocks per SM). At the end, threads
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
// several blocks share an SM (a first version that kept everything in registers used 128-158 of them).
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
        const float y = zc * ch.scale + ch.shift;
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

// ---------------------------------------------------------------- host side

// Whether x is (N, C, *spatial), 1 to 3 spatial dims, laid out channels-last (channel stride 1, the spatial
// dims dense outside it, the batch outside those). An NCHW-contiguous x (also when it is both, as with C == 1
// or a single position) is not: the NCHW kernels take it.
inline bool is_channels_last(const at::Tensor& x) {
  if (x.dim() < 3 || x.dim() > 5 || x.is_contiguous()) return false;
  int64_t expected = x.size(1);
  if (x.size(1) != 1 && x.stride(1) != 1) return false;
  for (int64_t d = x.dim() - 1; d >= 2; --d) {
    if (x.size(d) != 1 && x.stride(d) != expected) return false;
    expected *= x.size(d);
  }
  return x.size(0) == 1 || x.stride(0) == expected;
}

inline void check_channels_last(const at::Tensor& x) {
  TORCH_CHECK(is_channels_last(x), "kgen: the channels-last region kernels need a channels-last input ",
              "(x.contiguous(memory_format=torch.channels_last)), got sizes ", str(x.sizes()), " and strides ",
              str(x.strides()));
}

inline bool aligned(const at::Tensor& t) { return is_16_byte_aligned(t.data_ptr()); }

inline void check_grid(int64_t blocks, const char* what) {
  TORCH_CHECK(blocks < (int64_t(1) << 31), "kgen: too many blocks for the channels-last ", what, " kernel: ",
              str(blocks));
}

}  // namespace region_nhwc

// Forward of a region on a channels-last x (see region_nhwc::is_channels_last), no reduction: returns
// {out (NCHW-contiguous), mean (N, G, 2) as (hi, lo) pairs, rstd (N, G), undefined aux}.
template <class Pro, class Epi, ReduceKind R, ReduceOp O, int kBlock, int kGroups /*0 = runtime*/>
std::vector<at::Tensor> region_forward_nhwc(const at::Tensor& x, const at::Tensor& gamma_in, const at::Tensor& beta_in,
                                            const std::vector<at::Tensor>& prologue_params,
                                            const std::vector<at::Tensor>& epilogue_params, int64_t groups,
                                            double eps, const std::vector<int64_t>& window) {
  namespace rn = region_nhwc;
  namespace rt = region_twopass;
  static_assert(R == ReduceKind::kNone, "kgen: the channels-last region kernels take regions without a reduction");
  const RegionShape shape = rt::check_region(x, gamma_in, beta_in, groups, R, window);
  rn::check_channels_last(x);
  const c10::cuda::CUDAGuard device_guard(x.device());
  const RegionParams params = rt::region_params<Pro, Epi>(prologue_params, epilogue_params, shape.channels,
                                                          x.device());
  const at::Tensor gamma = gamma_in.defined() ? gamma_in.contiguous() : at::Tensor();
  const at::Tensor beta = beta_in.defined() ? beta_in.contiguous() : at::Tensor();
  const auto options = x.options();
  auto out = at::empty(x.sizes(), options);  // NCHW-contiguous
  auto mean = at::empty({shape.batch, shape.groups, 2}, options);
  auto rstd = at::empty({shape.batch, shape.groups}, options);
  if (x.numel() == 0) {
    mean.zero_();
    rstd.zero_();
    return {out, mean, rstd, at::Tensor()};
  }
  const auto stream = at::cuda::getCurrentCUDAStream();
  const bool vec = shape.channels % 4 == 0 && rn::aligned(x);
  const int tile_c = rn::tile_channels<kBlock>(vec, shape.channels);
  const rn::TilePlan plan = rn::plan_tiles<kBlock>(shape, tile_c);
  const int64_t rows = shape.batch * shape.groups;
  const int64_t split_blocks = shape.batch * plan.channel_tiles * plan.splits;
  const int64_t tile_blocks = shape.batch * plan.channel_tiles * plan.pixel_tiles;
  rn::check_grid(tile_blocks, "apply");
  float2* mean_ptr = as_float2(mean);

  auto partial = at::empty({shape.batch * shape.channels * plan.splits * int64_t(sizeof(Moments))},
                           options.dtype(at::kByte));
  auto pilots = at::empty({rows}, options);
  auto* partial_ptr = reinterpret_cast<Moments*>(partial.data_ptr());
  rn::dispatch_tile<kBlock>(vec, tile_c, [&](auto kv, auto kc) {
    rn::stats_partial_kernel<Pro, kBlock, decltype(kv)::value, decltype(kc)::value><<<split_blocks, kBlock, 0, stream>>>(
        x.data_ptr<float>(), params, shape, plan, partial_ptr, pilots.data_ptr<float>());
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  const int64_t per_row = shape.channels_per_group() * plan.splits;
  TORCH_CHECK(per_row < (int64_t(1) << 31), "kgen: too many chunks per group");
  rt::stats_finalize_kernel<kBlock><<<blocks_for(rows * kWarpSize, kBlock), kBlock, 0, stream>>>(
      partial_ptr, static_cast<int>(per_row), rows, pilots.data_ptr<float>(), eps, mean_ptr, rstd.data_ptr<float>());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  rn::dispatch_tile<kBlock>(vec, tile_c, [&](auto kv, auto kc) {
    rn::apply_kernel<Pro, Epi, kBlock, decltype(kv)::value, decltype(kc)::value><<<tile_blocks, kBlock, 0, stream>>>(
        x.data_ptr<float>(), params, shape, plan, mean_ptr, rstd.data_ptr<float>(), rt::data_or_null(gamma),
        rt::data_or_null(beta), out.data_ptr<float>());
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return {out, mean, rstd, at::Tensor()};
}

// Backward of a region on a channels-last x: returns {dx (channels-last, x's strides), dgamma (C), dbeta (C)
// (both undefined when affine=False), dprologue (Kp, C), depilogue (Ke, C)}.
template <class Pro, class Epi, ReduceKind R, ReduceOp O, int kBlock, int kGroups /*0 = runtime*/>
std::vector<at::Tensor> region_backward_nhwc(const at::Tensor& dout_in, const at::Tensor& x, const at::Tensor& gamma_in,
                                             const at::Tensor& beta_in, const std::vector<at::Tensor>& prologue_params,
                                             const std::vector<at::Tensor>& epilogue_params, const at::Tensor& mean,
                                             const at::Tensor& rstd, const at::Tensor& out_in, const at::Tensor& aux_in,
                                             int64_t groups, const std::vector<int64_t>& window) {
  namespace rn = region_nhwc;
  namespace rt = region_twopass;
  static_assert(R == ReduceKind::kNone, "kgen: the channels-last region kernels take regions without a reduction");
  (void)out_in;
  (void)aux_in;
  const RegionShape shape = rt::check_region(x, gamma_in, beta_in, groups, R, window);
  rn::check_channels_last(x);
  const c10::cuda::CUDAGuard device_guard(x.device());
  const RegionParams params = rt::region_params<Pro, Epi>(prologue_params, epilogue_params, shape.channels,
                                                          x.device());
  check_float_cuda(dout_in, "gradient of the output");
  TORCH_CHECK(dout_in.device() == x.device(), "kgen: the output gradient is on ", dout_in.device().str(),
              " but the input is on ", x.device().str());
  TORCH_CHECK(dout_in.sizes().equals(x.sizes()), "kgen: the output gradient has shape ", str(dout_in.sizes()),
              ", expected ", str(x.sizes()));
  const int64_t rows = shape.batch * shape.groups;
  rt::check_saved_statistics(mean, rstd, x, rows);

  const auto dout = dout_in.contiguous();  // NCHW
  const bool affine = gamma_in.defined();
  const at::Tensor gamma = affine ? gamma_in.contiguous() : at::Tensor();
  const at::Tensor beta = affine ? beta_in.contiguous() : at::Tensor();
  const auto options = x.options();
  auto dx = at::empty_like(x);  // x is dense: the same (channels-last) strides
  auto dgamma = affine ? at::zeros({shape.channels}, options) : at::Tensor();
  auto dbeta = affine ? at::zeros({shape.channels}, options) : at::Tensor();
  auto dprologue = at::zeros({int64_t(Pro::kParams), shape.channels}, options);
  auto depilogue = at::zeros({int64_t(Epi::kParams), shape.channels}, options);
  if (x.numel() == 0) return {dx, dgamma, dbeta, dprologue, depilogue};

  const auto stream = at::cuda::getCurrentCUDAStream();
  const bool vec = shape.channels % 4 == 0 && rn::aligned(x) && rn::aligned(dx);
  const int tile_c = rn::tile_channels<kBlock>(vec, shape.channels);
  const rn::TilePlan plan = rn::plan_tiles<kBlock>(shape, tile_c);
  const int64_t planes = shape.batch * shape.channels;
  const int64_t entries = planes * plan.splits;  // per (n, c, split)
  const int64_t split_blocks = shape.batch * plan.channel_tiles * plan.splits;
  rn::check_grid(split_blocks, "backward");
  const GroupShape gshape{shape.batch, shape.channels, shape.groups, shape.plane};
  const at::Tensor gamma_or_ones = affine ? gamma : at::ones({shape.channels}, options);
  auto gn_partial = at::empty({entries, 2}, options);
  auto epi_partial = at::empty({int64_t(Epi::kParams) * entries}, options);
  auto pro_partial = at::empty({int64_t(Pro::kParams) * entries}, options);
  auto plane_sums = at::empty({planes, 2}, options.dtype(at::kDouble));
  auto coef = at::empty({rows, 2}, options);
  const float* gamma_ptr = rt::data_or_null(gamma);
  const float* beta_ptr = rt::data_or_null(beta);
  const float2* mean_ptr = as_float2(mean);
  const float* rstd_ptr = rstd.data_ptr<float>();

  rn::dispatch_tile<kBlock>(vec, tile_c, [&](auto kv, auto kc) {
    rn::backward_kernel<Pro, Epi, kBlock, decltype(kv)::value, decltype(kc)::value, false>
        <<<split_blocks, kBlock, 0, stream>>>(
        x.data_ptr<float>(), dout.data_ptr<float>(), params, shape, plan, mean_ptr, rstd_ptr, gamma_ptr, beta_ptr,
        nullptr, nullptr, as_float2(gn_partial), Epi::kParams > 0 ? epi_partial.data_ptr<float>() : nullptr);
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  rt::group_backward<kBlock>(gn_partial, plan.splits, gamma_or_ones, rstd, gshape, plane_sums, coef, dgamma, dbeta);
  rn::dispatch_tile<kBlock>(vec, tile_c, [&](auto kv, auto kc) {
    rn::backward_kernel<Pro, Epi, kBlock, decltype(kv)::value, decltype(kc)::value, true>
        <<<split_blocks, kBlock, 0, stream>>>(
        x.data_ptr<float>(), dout.data_ptr<float>(), params, shape, plan, mean_ptr, rstd_ptr, gamma_ptr, beta_ptr,
        as_float2(coef), dx.data_ptr<float>(), nullptr, Pro::kParams > 0 ? pro_partial.data_ptr<float>() : nullptr);
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  rt::param_sums(epi_partial, Epi::kParams, pro_partial, Pro::kParams, entries, plan.splits, shape, depilogue,
                 dprologue);
  return {dx, dgamma, dbeta, dprologue, depilogue};
}

}  // namespace kgen
