// ---- groupnorm/op/nhwc.cuh: op -> GroupNorm of a channels-last (NHWC) 4-D input, no separate layout sweep ----
//
// Needs core/common.cuh, core/unary_ops.cuh and groupnorm/op/twopass.cuh before it. x is (N, C, H, W) with channels-last
// memory: value (n, c, p) (p = h W + w, P = H W pixels) lives at (n P + p) C + c. One (sample, group)
// slice is therefore C/G channels of every pixel of the sample: strided, not one contiguous run, so
// these kernels differ from groupnorm/op/twopass.cuh's in how they walk memory, not in the arithmetic.
//
// Forward, 2 reads + 1 write, y written in ordinary NCHW memory:
//   nhwc_moments_partial  blocks take a run of pixels of one sample; threads own channel columns
//                         (16-byte loads along C when C % 4 == 0) and keep per-channel Welford
//                         moments of z - K (K: the slice's pilot, as in groupnorm/op/twopass.cuh); the block
//                         combines them per group in shared memory -> Moments per (sample, group, split)
//   moments_finalize      groupnorm/op/twopass.cuh's kernel, unchanged: fed the pilot values (plus their bias with
//                         kChannelBias, below) as a (N G) array with slice_elems = 1, it evaluates
//                         op(pilot) exactly as the partial kernel did
//   nhwc_normalize        tiles of kP pixels x 32 channels: rows read from NHWC into shared memory,
//                         columns written to NCHW, op recomputed on the way; coalesced on both sides
// Backward, 2 reads, then 2 reads + 1 write, dx written channels-last (what cuDNN's NHWC conv wants):
//   nhwc_backward_partial the same tiles: x rows through shared memory, dy read by column (NCHW) ->
//                         per (sample, channel, split) sums of dy and dy (z - mean), in exactly the
//                         float2 layout of groupnorm/op/twopass.cuh's backward_partial_kernel, so that
//   backward_group        and
//   param_grad            are groupnorm/op/twopass.cuh's kernels, unchanged
//   nhwc_backward_apply   dy columns through shared memory, x rows and dx rows in NHWC
// The shared tile is [kP][33] floats: a warp reading or writing a row (one pixel, 32 channels) and a
// warp reading or writing a column (one channel, 32 pixels) both hit 32 distinct banks.
// No atomics: every reduction is a fixed tree or a fixed-order loop, results are bitwise reproducible.
//
// kChannelBias (a convolution's bias fused in, as in groupnorm/op/twopass.cuh): every kernel reads x + bias[c] for
// x. Threads already own fixed channels (a W-channel vector on the row side, a channel per warp on the
// column side), so each keeps one ChannelOp per channel it owns. nhwc_backward_apply also sums the dx
// of its tile per channel (through the shared tile, in a fixed order) into one row of C values per
// (sample, pixel tile), which groupnorm/op/twopass.cuh's column_sums adds up: the bias gradient.
#include <cstdio>
#include <string>

namespace kgen {

// ---------------------------------------------------------------- tile shape

// Threads of a block see a tile in two orientations.
//   rows:    kLanesPerPixel threads cover one pixel's 32 channels with W-wide loads, kPixelsPerStep
//            pixels at once, kRowSteps steps for the whole tile (NHWC side).
//   columns: warp w owns channels w, w + kWarps, ... (kChannelsPerWarp of them), lane l pixels
//            l, l + 32, ... (kColumnSteps of them) (NCHW side).
template <int kBlock, int W>
struct TileShape {
  static constexpr int kWarps = kBlock / kWarpSize;
  static constexpr int kC = 32;
  static constexpr int kP = kBlock / 2 < 32 ? 32 : (kBlock / 2 > 128 ? 128 : kBlock / 2);
  static constexpr int kLanesPerPixel = kC / W;
  static constexpr int kPixelsPerStep = kBlock / kLanesPerPixel;
  static constexpr int kRowSteps = kP / kPixelsPerStep;
  static constexpr int kChannelsPerWarp = kC / kWarps;
  static constexpr int kColumnSteps = kP / kWarpSize;
  static_assert(kBlock % kWarpSize == 0 && kBlock <= 1024, "kgen: block size must be a multiple of 32, at most 1024");
  static_assert(kC % kWarps == 0, "kgen: tile channels must split evenly over the warps");
  static_assert(kBlock % kLanesPerPixel == 0 && kP % kPixelsPerStep == 0 && kP % kWarpSize == 0,
                "kgen: tile pixels must split evenly over the block");
  using Tile = float[kP][kC + 1];

  __device__ __forceinline__ static int row_lane() { return threadIdx.x % kLanesPerPixel; }
  __device__ __forceinline__ static int row_pixel() { return threadIdx.x / kLanesPerPixel; }

  // Row loads of src (NHWC) for the tile at (n, p0, c0): kRowSteps packs of W channels per thread.
  __device__ __forceinline__ static void load_rows(const float* __restrict__ src, const GroupShape& s, int64_t n,
                                                   int64_t p0, int64_t c0, Pack<W> (&v)[kRowSteps]) {
    const int64_t c = c0 + int64_t(row_lane()) * W;
#pragma unroll
    for (int k = 0; k < kRowSteps; ++k) {
      const int64_t p = p0 + row_pixel() + k * kPixelsPerStep;
      if (c < s.channels && p < s.plane_elems) v[k] = load_pack<W>(src + (n * s.plane_elems + p) * s.channels + c, 0);
    }
  }

  __device__ __forceinline__ static void store_rows(Tile& tile, const GroupShape& s, int64_t p0, int64_t c0,
                                                    const Pack<W> (&v)[kRowSteps]) {
    const int64_t c = c0 + int64_t(row_lane()) * W;
#pragma unroll
    for (int k = 0; k < kRowSteps; ++k) {
      const int pl = row_pixel() + k * kPixelsPerStep;
      if (c < s.channels && p0 + pl < s.plane_elems) {
#pragma unroll
        for (int j = 0; j < W; ++j) tile[pl][row_lane() * W + j] = v[k].v[j];
      }
    }
  }

  // Column loads of src (NCHW) for the tile at (n, p0, c0): one value per (channel, pixel step).
  __device__ __forceinline__ static void load_columns(const float* __restrict__ src, const GroupShape& s, int64_t n,
                                                      int64_t p0, int64_t c0,
                                                      float (&v)[kChannelsPerWarp][kColumnSteps]) {
    const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
#pragma unroll
    for (int i = 0; i < kChannelsPerWarp; ++i) {
      const int64_t c = c0 + warp + i * kWarps;
#pragma unroll
      for (int m = 0; m < kColumnSteps; ++m) {
        const int64_t p = p0 + lane + m * kWarpSize;
        if (c < s.channels && p < s.plane_elems) v[i][m] = __ldg(src + (n * s.channels + c) * s.plane_elems + p);
      }
    }
  }
};

// How the tiles of one problem are laid out over blocks.
struct NhwcTilePlan {
  int64_t channel_tiles;
  int64_t pixel_tiles;
  int64_t tiles_per_split;  // backward reduction: consecutive pixel tiles one block sums over
  int splits;               // backward reduction: blocks per (sample, channel tile)
};

template <int kBlock>
inline NhwcTilePlan plan_nhwc_tiles(const GroupShape& s) {
  using T = TileShape<kBlock, 1>;
  NhwcTilePlan plan;
  plan.channel_tiles = (s.channels + T::kC - 1) / T::kC;
  plan.pixel_tiles = (s.plane_elems + T::kP - 1) / T::kP;
  constexpr int64_t kTargetTiles = std::max<int64_t>(1, 65536 / (T::kP * T::kC));  // ~64 K values per block
  int64_t per_split = std::min<int64_t>(plan.pixel_tiles, kTargetTiles);
  int64_t splits = (plan.pixel_tiles + per_split - 1) / per_split;
  if (splits > 4096) {
    per_split = (plan.pixel_tiles + 4095) / 4096;
    splits = (plan.pixel_tiles + per_split - 1) / per_split;
  }
  plan.tiles_per_split = per_split;
  plan.splits = static_cast<int>(splits);
  return plan;
}

// (sample, group) row of the statistics for channel c of sample n.
template <int kGroups>
__device__ __forceinline__ int64_t nhwc_row(const GroupShape& s, int64_t n, int64_t c) {
  return n * s.group_count<kGroups>() + c / s.channels_per_group();
}

// ---------------------------------------------------------------- statistics

// Blocks per sample for the statistics: `cols` vectors of W channels per block row, `kBlock / cols`
// rows (pixels) at once; a pixel wider than the block (C > W kBlock) is cut into column tiles.
struct NhwcStatsPlan {
  int cols;
  int col_splits;
  int64_t chunk;  // pixels per block
  int splits;     // blocks per sample: pixel chunks x column tiles, the split index is pixel_split * col_splits + col_split
};

template <int kBlock>
inline NhwcStatsPlan plan_nhwc_stats(int64_t pixels, int64_t channels, int width) {
  const int64_t vectors = channels / width;
  const int cols = static_cast<int>(std::min<int64_t>(vectors, kBlock));
  const int col_splits = static_cast<int>((vectors + cols - 1) / cols);
  const int64_t step = int64_t(kBlock / cols) * kUnroll;  // pixels one sweep iteration of the block covers
  constexpr int64_t kTarget = int64_t(kBlock) * 4 * kUnroll * 8;  // values per block
  int64_t chunk = std::max<int64_t>(step, kTarget / (int64_t(cols) * width) / step * step);
  int64_t pixel_splits = (pixels + chunk - 1) / chunk;
  const int64_t max_pixel_splits = std::max<int64_t>(1, 4096 / col_splits);
  if (pixel_splits > max_pixel_splits) {
    chunk = ((pixels + max_pixel_splits - 1) / max_pixel_splits + step - 1) / step * step;
    pixel_splits = (pixels + chunk - 1) / chunk;
  }
  return NhwcStatsPlan{cols, col_splits, chunk, static_cast<int>(pixel_splits * col_splits)};
}

// Each thread visits kUnroll pixels of its W channels per step. When the W channels of a vector
// lie in one group (C/G % W == 0) it keeps ONE running state and folds each pixel's vector with
// accumulate4, as groupnorm/op/twopass.cuh does; otherwise (kSplitVector) it keeps one state per channel and folds
// the kUnroll pixels of each channel with accumulate4. The shift of a state is the pilot of its
// group, op(x[n, pixel 0, first channel of the group]). The block then stages the states in shared
// memory and one warp per group combines its entries in a fixed order. A split that holds no channel
// of a group (column tiles) writes empty moments, which moments_finalize skips. Blocks of split 0 also
// write the raw pilot values for moments_finalize_kernel.
template <class Op, int kBlock, bool kVec, bool kSplitVector, bool kChannelBias>
__global__ void __launch_bounds__(kBlock)
nhwc_moments_partial_kernel(const float* __restrict__ x, GroupShape shape, NhwcStatsPlan plan,
                            Moments* __restrict__ partial, float* __restrict__ pilots, Op op,
                            const float* __restrict__ channel_bias) {
  constexpr int W = kVec ? 4 : 1;
  constexpr int kStates = kSplitVector ? W : 1;  // running states per thread
  constexpr int kSpan = W / kStates;             // channels per state
  constexpr int kWarps = kBlock / kWarpSize;
  static_assert(kUnroll == 4, "the sweep folds kUnroll pixels with accumulate4");
  __shared__ Moments stage[kBlock * kStates];
  const int64_t channels = shape.channels, pixels = shape.plane_elems, groups = shape.groups;
  const int64_t cpg = shape.channels_per_group();
  const int64_t n = blockIdx.x / plan.splits;
  const int split = blockIdx.x % plan.splits;
  const int pixel_split = split / plan.col_splits, col_split = split % plan.col_splits;
  const int rows = kBlock / plan.cols;
  const int col = threadIdx.x % plan.cols, row = threadIdx.x / plan.cols;
  const int width = plan.cols * W;                    // channels in one stage row
  const int entries = plan.cols * kStates;            // states in one stage row
  const int64_t c_first = int64_t(col_split) * width;  // the block's first channel
  const int64_t c = c_first + int64_t(col) * W;        // this thread's first channel
  const bool active = row < rows && c < channels;
  const int64_t p_begin = pixel_split * plan.chunk;
  const int64_t p_end = min(pixels, p_begin + plan.chunk);
  const float* sample = x + n * pixels * channels;

  ChannelOp<Op, kChannelBias> f[W];  // the op of each of this thread's channels
#pragma unroll
  for (int j = 0; j < W; ++j) f[j] = channel_op<kChannelBias>(op, channel_bias, active ? c + j : 0);
  float pilot[kStates];
  Moments acc[kStates];
#pragma unroll
  for (int a = 0; a < kStates; ++a) {
    acc[a] = Moments{0.f, 0.f, 0.f};
    const int64_t first = (c + a * kSpan) / cpg * cpg;  // the group's first channel
    pilot[a] = active ? channel_op<kChannelBias>(op, channel_bias, first)(__ldg(sample + first)) : 0.f;
  }
  if (active) {
    // Register double buffer: the loads of step k + 1 are in flight while step k is folded.
    const int64_t stride = rows, step = stride * kUnroll;
    const float* column = sample + c;
    Pack<W> next[kUnroll];
    auto load_step = [&](int64_t base) {
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int64_t p = base + u * stride;
        if (p < p_end) next[u] = load_pack<W>(column + p * channels, 0);
      }
    };
    load_step(p_begin + row);
    for (int64_t base = p_begin + row; base < p_end; base += step) {
      Pack<W> v[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) v[u] = next[u];
      if (base + step < p_end) load_step(base + step);
      if constexpr (kSpan == 4) {  // one state, one pixel's vector at a time
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          if (base + u * stride < p_end) {
            accumulate4(acc[0], f[0](v[u].v[0]) - pilot[0], f[1](v[u].v[1]) - pilot[0],
                        f[2](v[u].v[2]) - pilot[0], f[3](v[u].v[3]) - pilot[0]);
          }
        }
      } else if (base + (kUnroll - 1) * stride < p_end) {  // one state per channel, kUnroll pixels at a time
#pragma unroll
        for (int a = 0; a < kStates; ++a) {
          accumulate4(acc[a], f[a](v[0].v[a]) - pilot[a], f[a](v[1].v[a]) - pilot[a], f[a](v[2].v[a]) - pilot[a],
                      f[a](v[3].v[a]) - pilot[a]);
        }
      } else {
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          if (base + u * stride < p_end) {
#pragma unroll
            for (int a = 0; a < kStates; ++a) accumulate1(acc[a], f[a](v[u].v[a]) - pilot[a]);
          }
        }
      }
    }
  }
  if (row < rows) {
#pragma unroll
    for (int a = 0; a < kStates; ++a) stage[row * entries + col * kStates + a] = acc[a];
  }
  if (split == 0) {
    for (int64_t g = threadIdx.x; g < groups; g += kBlock) {
      pilots[n * groups + g] = channel_op<kChannelBias>(op, channel_bias, g * cpg).input(__ldg(sample + g * cpg));
    }
  }
  __syncthreads();
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  for (int64_t g = warp; g < groups; g += kWarps) {  // warp-uniform
    // the group's channels inside the block's column tile; both ends are multiples of kSpan
    const int64_t lo = max(g * cpg, c_first);
    const int64_t hi = min(min((g + 1) * cpg, channels), c_first + width);
    Moments m{0.f, 0.f, 0.f};
    if (lo < hi) {
      const int64_t first = (lo - c_first) / kSpan, span = (hi - lo) / kSpan, total = int64_t(rows) * span;
      for (int64_t k = lane; k < total; k += kWarpSize) {
        const int64_t r = k / span;
        m = combine(m, stage[r * entries + first + (k - r * span)]);
      }
    }
    m = warp_combine(m);
    if (lane == 0) partial[(n * groups + g) * plan.splits + split] = m;
  }
}

// ---------------------------------------------------------------- normalise

// y[n, c, p] (NCHW) = (op(x[n, p, c]) - mean) * rstd * gamma[c] + beta[c]: one tile per block.
template <class Op, int kGroups, int kBlock, bool kVec, bool kChannelBias>
__global__ void __launch_bounds__(kBlock)
nhwc_normalize_kernel(const float* __restrict__ x, const float2* __restrict__ mean, const float* __restrict__ rstd,
                      const float* __restrict__ gamma, const float* __restrict__ beta, float* __restrict__ y,
                      GroupShape shape, NhwcTilePlan plan, Op op, const float* __restrict__ channel_bias) {
  constexpr int W = kVec ? 4 : 1;
  using T = TileShape<kBlock, W>;
  __shared__ typename T::Tile tile;
  const int64_t ct = blockIdx.x % plan.channel_tiles;
  const int64_t rest = blockIdx.x / plan.channel_tiles;
  const int64_t pt = rest % plan.pixel_tiles, n = rest / plan.pixel_tiles;
  const int64_t c0 = ct * T::kC, p0 = pt * T::kP;
  Pack<W> v[T::kRowSteps];
  T::load_rows(x, shape, n, p0, c0, v);
  T::store_rows(tile, shape, p0, c0, v);
  __syncthreads();
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
#pragma unroll
  for (int i = 0; i < T::kChannelsPerWarp; ++i) {
    const int cl = warp + i * T::kWarps;
    const int64_t c = c0 + cl;
    if (c >= shape.channels) break;  // warp-uniform, and channels only grow with i
    const int64_t row = nhwc_row<kGroups>(shape, n, c);
    const float2 mu = mean[row];
    const float scale = rstd[row] * gamma[c];
    const float shift = beta[c];
    const auto f = channel_op<kChannelBias>(op, channel_bias, c);
    float* out = y + (n * shape.channels + c) * shape.plane_elems;
#pragma unroll
    for (int m = 0; m < T::kColumnSteps; ++m) {
      const int pl = lane + m * kWarpSize;
      if (p0 + pl < shape.plane_elems) out[p0 + pl] = centered(f(tile[pl][cl]), mu) * scale + shift;
    }
  }
}

// ---------------------------------------------------------------- backward

// Per (sample, channel, split) sums of dy and dy (z - mean) over the split's pixel tiles, in
// backward_partial_kernel's layout: partial[(n C + c) splits + split]. The row side turns x into
// z - mean (op applied once per value) before it goes into the shared tile; each thread parks its own
// dy column values in shared memory too, so that both register sets are free to prefetch the next
// tile while the current one is summed.
template <class Op, int kGroups, int kBlock, bool kVec, bool kChannelBias>
__global__ void __launch_bounds__(kBlock)
nhwc_backward_partial_kernel(const float* __restrict__ dy, const float* __restrict__ x,
                             const float2* __restrict__ mean, GroupShape shape, NhwcTilePlan plan,
                             float2* __restrict__ partial, Op op, const float* __restrict__ channel_bias) {
  constexpr int W = kVec ? 4 : 1;
  using T = TileShape<kBlock, W>;
  __shared__ typename T::Tile tile;   // z - mean, [pixel][channel]
  __shared__ float parked[T::kC][T::kP];  // dy, [channel][pixel]: each thread reads back only its own values
  const int64_t ct = blockIdx.x % plan.channel_tiles;
  const int64_t rest = blockIdx.x / plan.channel_tiles;
  const int64_t split = rest % plan.splits, n = rest / plan.splits;
  const int64_t c0 = ct * T::kC;
  const int64_t t_begin = split * plan.tiles_per_split;
  const int64_t t_end = min(plan.pixel_tiles, t_begin + plan.tiles_per_split);
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;

  // row side: the means and ops of this thread's W channels
  const int64_t c_row = c0 + int64_t(T::row_lane()) * W;
  float2 mu[W];
  ChannelOp<Op, kChannelBias> f[W];
#pragma unroll
  for (int j = 0; j < W; ++j) {
    const bool inside = c_row + j < shape.channels;
    mu[j] = inside ? mean[nhwc_row<kGroups>(shape, n, c_row + j)] : make_float2(0.f, 0.f);
    f[j] = channel_op<kChannelBias>(op, channel_bias, inside ? c_row + j : 0);
  }
  float2 sums[T::kChannelsPerWarp];
#pragma unroll
  for (int i = 0; i < T::kChannelsPerWarp; ++i) sums[i] = make_float2(0.f, 0.f);

  Pack<W> v[T::kRowSteps];
  float d[T::kChannelsPerWarp][T::kColumnSteps];
  if (t_begin < t_end) {
    T::load_rows(x, shape, n, t_begin * T::kP, c0, v);
    T::load_columns(dy, shape, n, t_begin * T::kP, c0, d);
  }
  for (int64_t t = t_begin; t < t_end; ++t) {
    const int64_t p0 = t * T::kP;
#pragma unroll
    for (int k = 0; k < T::kRowSteps; ++k) {
#pragma unroll
      for (int j = 0; j < W; ++j) v[k].v[j] = centered(f[j](v[k].v[j]), mu[j]);
    }
    __syncthreads();  // every thread is done reading the previous tile
    T::store_rows(tile, shape, p0, c0, v);
#pragma unroll
    for (int i = 0; i < T::kChannelsPerWarp; ++i) {
#pragma unroll
      for (int m = 0; m < T::kColumnSteps; ++m) parked[warp + i * T::kWarps][lane + m * kWarpSize] = d[i][m];
    }
    __syncthreads();
    if (t + 1 < t_end) {  // prefetch: in flight while this tile is summed
      T::load_rows(x, shape, n, p0 + T::kP, c0, v);
      T::load_columns(dy, shape, n, p0 + T::kP, c0, d);
    }
#pragma unroll
    for (int i = 0; i < T::kChannelsPerWarp; ++i) {
      const int cl = warp + i * T::kWarps;
      if (c0 + cl >= shape.channels) break;  // warp-uniform
#pragma unroll
      for (int m = 0; m < T::kColumnSteps; ++m) {
        const int pl = lane + m * kWarpSize;
        if (p0 + pl < shape.plane_elems) {
          const float g = parked[cl][pl];
          sums[i].x += g;
          sums[i].y += g * tile[pl][cl];
        }
      }
    }
  }
#pragma unroll
  for (int i = 0; i < T::kChannelsPerWarp; ++i) {
    const float2 s = warp_sum(sums[i]);
    const int64_t c = c0 + warp + i * T::kWarps;
    if (lane == 0 && c < shape.channels) partial[(n * shape.channels + c) * plan.splits + split] = s;
  }
}

// dx[n, p, c] (NHWC) = op'(x) * (rstd gamma[c] dy[n, c, p] + B (z - mean) + C): dy columns through
// the shared tile, x and dx as rows. One tile per block. kChannelBias: the block also writes the tile's
// dx sum per channel to bias_partial[(n pixel_tiles + pt) C + c].
template <class Op, int kGroups, int kBlock, bool kVec, bool kChannelBias>
__global__ void __launch_bounds__(kBlock)
nhwc_backward_apply_kernel(const float* __restrict__ dy, const float* __restrict__ x, const float2* __restrict__ mean,
                           const float* __restrict__ rstd, const float* __restrict__ gamma,
                           const float2* __restrict__ coef, float* __restrict__ dx, GroupShape shape,
                           NhwcTilePlan plan, Op op, const float* __restrict__ channel_bias,
                           float* __restrict__ bias_partial) {
  constexpr int W = kVec ? 4 : 1;
  using T = TileShape<kBlock, W>;
  __shared__ typename T::Tile tile;
  const int64_t ct = blockIdx.x % plan.channel_tiles;
  const int64_t rest = blockIdx.x / plan.channel_tiles;
  const int64_t pt = rest % plan.pixel_tiles, n = rest / plan.pixel_tiles;
  const int64_t c0 = ct * T::kC, p0 = pt * T::kP;
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;

  Pack<W> v[T::kRowSteps];
  float d[T::kChannelsPerWarp][T::kColumnSteps];
  T::load_rows(x, shape, n, p0, c0, v);
  T::load_columns(dy, shape, n, p0, c0, d);

  // Row-side constants: this thread's W channels are the same for every row step.
  const int lane_c = T::row_lane() * W;
  const int64_t c = c0 + lane_c;
  float2 mu[W], bc[W];
  float a[W];
  ChannelOp<Op, kChannelBias> f[W];
#pragma unroll
  for (int j = 0; j < W; ++j) {
    f[j] = channel_op<kChannelBias>(op, channel_bias, c + j < shape.channels ? c + j : 0);
    if (c + j < shape.channels) {
      const int64_t row = nhwc_row<kGroups>(shape, n, c + j);
      mu[j] = mean[row];
      bc[j] = coef[row];
      a[j] = rstd[row] * gamma[c + j];
    } else {
      mu[j] = bc[j] = make_float2(0.f, 0.f);
      a[j] = 0.f;
    }
  }

#pragma unroll
  for (int i = 0; i < T::kChannelsPerWarp; ++i) {
    const int cl = warp + i * T::kWarps;
#pragma unroll
    for (int m = 0; m < T::kColumnSteps; ++m) {
      const int pl = lane + m * kWarpSize;
      if (c0 + cl < shape.channels && p0 + pl < shape.plane_elems) tile[pl][cl] = d[i][m];
    }
  }
  __syncthreads();
  float dx_sum[W];  // kChannelBias: this thread's dx sums, one per channel
#pragma unroll
  for (int j = 0; j < W; ++j) dx_sum[j] = 0.f;
  if (c < shape.channels) {
#pragma unroll
    for (int k = 0; k < T::kRowSteps; ++k) {
      const int pl = T::row_pixel() + k * T::kPixelsPerStep;
      const int64_t p = p0 + pl;
      if (p < shape.plane_elems) {
        Pack<W> r;
#pragma unroll
        for (int j = 0; j < W; ++j) {
          float z, dz_dx;
          f[j].value_and_derivative(v[k].v[j], z, dz_dx);
          r.v[j] = dz_dx * (a[j] * tile[pl][lane_c + j] + bc[j].x * centered(z, mu[j]) + bc[j].y);
          if constexpr (kChannelBias) dx_sum[j] += r.v[j];
        }
        store_pack<W>(dx + (n * shape.plane_elems + p) * shape.channels + c, 0, r);
      }
    }
  }
  if constexpr (kChannelBias) {
    // The tile is free again: row row_pixel() takes the sums of the threads of that pixel row, then one
    // thread per channel adds the kPixelsPerStep rows in order.
    __syncthreads();
#pragma unroll
    for (int j = 0; j < W; ++j) tile[T::row_pixel()][lane_c + j] = dx_sum[j];
    __syncthreads();
    if (threadIdx.x < T::kC && c0 + threadIdx.x < shape.channels) {
      float sum = 0.f;
      for (int r = 0; r < T::kPixelsPerStep; ++r) sum += tile[r][threadIdx.x];
      bias_partial[(n * plan.pixel_tiles + pt) * shape.channels + c0 + threadIdx.x] = sum;
    }
  }
}

// ---------------------------------------------------------------- host side

// Error messages are formatted with snprintf and raised through TORCH_CHECK as ONE C string. On the
// H100 test machine (PyTorch 2.11, nvcc-built extension), TORCH_CHECKs whose message c10::str-streams
// integers or sizes crash the process (SIGSEGV) while raising when they sit in this file (or in the
// test bindings after it), while the same kind of check in groupnorm/op/twopass.cuh raises cleanly and a
// single-C-string TORCH_CHECK raises cleanly everywhere; the cause is not known. Messages built here
// never go through an ostream, and they reach Python as ordinary RuntimeErrors (tested on that machine).
struct ErrorText {
  char text[512];
};

template <class... Args>
inline ErrorText error_text(const char* format, Args... args) {
  ErrorText e;
  std::snprintf(e.text, sizeof(e.text), format, args...);
  return e;
}

inline std::string sizes_text(at::IntArrayRef sizes) {  // "[2, 64, 8, 8]"
  std::string s = "[";
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(static_cast<long long>(sizes[i]));
  }
  return s + "]";
}

// Raises make_text()'s message unless ok; the message is only formatted on failure.
template <class MakeText>
inline void require(bool ok, MakeText&& make_text) {
  if (!ok) {
    const ErrorText e = make_text();
    TORCH_CHECK(false, static_cast<const char*>(e.text));
  }
}

// (N, C, H, W) float32 CUDA tensor with channels-last memory; returns its GroupShape (plane_elems = H W).
inline GroupShape check_groupnorm_nhwc_input(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta,
                                             int64_t groups) {
  check_float_cuda(x, "input");
  require(x.dim() == 4, [&] {
    return error_text("kgen: channels-last GroupNorm input must have shape (N, C, H, W), got %s",
                      sizes_text(x.sizes()).c_str());
  });
  require(x.is_contiguous(at::MemoryFormat::ChannelsLast), [&] {
    return error_text("kgen: channels-last GroupNorm input must be channels-last contiguous "
                      "(x.contiguous(memory_format=torch.channels_last)), got sizes %s and strides %s",
                      sizes_text(x.sizes()).c_str(), sizes_text(x.strides()).c_str());
  });
  const int64_t channels = x.size(1);
  require(groups > 0 && channels % groups == 0, [&] {
    return error_text("kgen: %lld channels are not divisible into %lld groups", static_cast<long long>(channels),
                      static_cast<long long>(groups));
  });
  for (const auto* t : {&gamma, &beta}) {
    check_float_cuda(*t, "GroupNorm weight/bias");
    require(t->dim() == 1 && t->size(0) == channels, [&] {
      return error_text("kgen: GroupNorm weight/bias must have shape (%lld), got %s",
                        static_cast<long long>(channels), sizes_text(t->sizes()).c_str());
    });
    require(t->device() == x.device(), [&] {
      return error_text("kgen: GroupNorm weight/bias are on %s but the input is on %s", t->device().str().c_str(),
                        x.device().str().c_str());
    });
  }
  return GroupShape{x.size(0), channels, groups, x.size(2) * x.size(3)};
}

// Statistics of op(x) per (sample, group) of a channels-last x: {mean (N, G, 2) as (hi, lo), rstd (N, G)}.
// kChannelBias: of op(x + channel_bias[c]).
template <class Op, int kBlock, bool kChannelBias = false>
std::vector<at::Tensor> groupnorm_moments_nhwc(const at::Tensor& x, const GroupShape& shape, double eps, Op op,
                                               const float* channel_bias = nullptr) {
  auto stats_options = x.options().dtype(at::kFloat);
  const int64_t rows = shape.batch * shape.groups;
  auto mean = at::empty({shape.batch, shape.groups, 2}, stats_options);
  auto rstd = at::empty({shape.batch, shape.groups}, stats_options);
  const bool vec = shape.channels % 4 == 0 && is_16_byte_aligned(x.data_ptr<float>());
  const NhwcStatsPlan plan = plan_nhwc_stats<kBlock>(shape.plane_elems, shape.channels, vec ? 4 : 1);
  auto partial = at::empty({rows * plan.splits * int64_t(sizeof(Moments) / sizeof(float))}, stats_options);
  auto pilots = at::empty({rows}, stats_options);
  auto* partial_ptr = reinterpret_cast<Moments*>(partial.data_ptr<float>());
  const auto stream = at::cuda::getCurrentCUDAStream();
  const dim3 grid(static_cast<unsigned>(shape.batch * plan.splits));
  if (!vec) {
    nhwc_moments_partial_kernel<Op, kBlock, false, false, kChannelBias><<<grid, kBlock, 0, stream>>>(
        x.data_ptr<float>(), shape, plan, partial_ptr, pilots.data_ptr<float>(), op, channel_bias);
  } else if (shape.channels_per_group() % 4 != 0) {  // a 16-byte vector can hold channels of two groups
    nhwc_moments_partial_kernel<Op, kBlock, true, true, kChannelBias><<<grid, kBlock, 0, stream>>>(
        x.data_ptr<float>(), shape, plan, partial_ptr, pilots.data_ptr<float>(), op, channel_bias);
  } else {
    nhwc_moments_partial_kernel<Op, kBlock, true, false, kChannelBias><<<grid, kBlock, 0, stream>>>(
        x.data_ptr<float>(), shape, plan, partial_ptr, pilots.data_ptr<float>(), op, channel_bias);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  // The pilots array stands in for x with one value per slice: moments_finalize reads op(pilots[row]).
  moments_finalize_kernel<Op, kBlock><<<blocks_for(rows * kWarpSize, kBlock), kBlock, 0, stream>>>(
      pilots.data_ptr<float>(), 1, partial_ptr, plan.splits, rows, eps, as_float2(mean), rstd.data_ptr<float>(), op);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return {mean, rstd};
}

// Forward of op -> GroupNorm on a channels-last x: returns {y (NCHW-contiguous), mean (N, G, 2), rstd (N, G)}.
// kChannelBias: of op(x + channel_bias[c]).
template <class Op, int kBlock, int kSpecialisedGroups, bool kChannelBias = false>
std::vector<at::Tensor> groupnorm_forward_nhwc(const at::Tensor& x, const at::Tensor& gamma_in,
                                               const at::Tensor& beta_in, int64_t groups, double eps, Op op,
                                               const at::Tensor& channel_bias_in = at::Tensor()) {
  const GroupShape shape = check_groupnorm_nhwc_input(x, gamma_in, beta_in, groups);
  if constexpr (kChannelBias) check_channel_bias(channel_bias_in, shape.channels, x.device());
  const c10::cuda::CUDAGuard device_guard(x.device());
  const auto gamma = gamma_in.contiguous(), beta = beta_in.contiguous();
  const auto channel_bias = kChannelBias ? channel_bias_in.contiguous() : at::Tensor();
  auto y = at::empty(x.sizes(), x.options());  // NCHW-contiguous
  if (x.numel() == 0) {
    return {y, at::zeros({shape.batch, shape.groups, 2}, x.options()), at::zeros({shape.batch, shape.groups}, x.options())};
  }
  const float* bias = channel_bias_data<kChannelBias>(channel_bias);
  const std::vector<at::Tensor> stats = groupnorm_moments_nhwc<Op, kBlock, kChannelBias>(x, shape, eps, op, bias);
  const NhwcTilePlan plan = plan_nhwc_tiles<kBlock>(shape);
  const bool vec = shape.channels % 4 == 0 && is_16_byte_aligned(x.data_ptr<float>());
  const auto stream = at::cuda::getCurrentCUDAStream();
  dispatch_groups<kSpecialisedGroups>(shape.groups, [&](auto kg) {
    dispatch_vec(vec, [&](auto kv) {
      nhwc_normalize_kernel<Op, decltype(kg)::value, kBlock, decltype(kv)::value, kChannelBias>
          <<<shape.batch * plan.pixel_tiles * plan.channel_tiles, kBlock, 0, stream>>>(
              x.data_ptr<float>(), as_float2(stats[0]), stats[1].data_ptr<float>(), gamma.data_ptr<float>(),
              beta.data_ptr<float>(), y.data_ptr<float>(), shape, plan, op, bias);
    });
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return {y, stats[0], stats[1]};
}

// Backward of op -> GroupNorm on a channels-last x: grad_y in any layout; returns {dx (channels-last),
// dgamma, dbeta}, and with kChannelBias (op(x + channel_bias[c])) the bias gradient as a fourth tensor.
template <class Op, int kBlock, int kSpecialisedGroups, bool kChannelBias = false>
std::vector<at::Tensor> groupnorm_backward_nhwc(const at::Tensor& grad_y, const at::Tensor& x,
                                                const at::Tensor& gamma_in, const at::Tensor& mean,
                                                const at::Tensor& rstd, int64_t groups, Op op,
                                                const at::Tensor& channel_bias_in = at::Tensor()) {
  const GroupShape shape = check_groupnorm_nhwc_input(x, gamma_in, gamma_in, groups);
  if constexpr (kChannelBias) check_channel_bias(channel_bias_in, shape.channels, x.device());
  check_float_cuda(grad_y, "gradient of the output");
  require(grad_y.sizes() == x.sizes(), [&] {
    return error_text("kgen: output gradient has shape %s, expected %s", sizes_text(grad_y.sizes()).c_str(),
                      sizes_text(x.sizes()).c_str());
  });
  require(grad_y.device() == x.device(), [&] {
    return error_text("kgen: output gradient is on %s but the input is on %s", grad_y.device().str().c_str(),
                      x.device().str().c_str());
  });
  const int64_t rows = shape.batch * shape.groups;
  for (const auto* t : {&mean, &rstd}) {
    check_float_cuda(*t, "saved GroupNorm statistics");
    require(t->device() == x.device(), [&] {
      return error_text("kgen: saved GroupNorm statistics are on %s but the input is on %s",
                        t->device().str().c_str(), x.device().str().c_str());
    });
  }
  TORCH_CHECK(mean.is_contiguous() && mean.numel() == rows * 2 && rstd.is_contiguous() && rstd.numel() == rows,
              "kgen: saved statistics must be the forward's (N, G, 2) mean and (N, G) rstd");
  const c10::cuda::CUDAGuard device_guard(x.device());
  const auto dy = grad_y.contiguous();  // NCHW
  const auto gamma = gamma_in.contiguous();
  const auto channel_bias = kChannelBias ? channel_bias_in.contiguous() : at::Tensor();
  auto dx = at::empty_like(x, at::MemoryFormat::ChannelsLast);
  auto dgamma = at::zeros_like(gamma);
  auto dbeta = at::zeros_like(gamma);
  auto dchannel_bias = kChannelBias ? at::zeros_like(channel_bias) : at::Tensor();
  if (x.numel() == 0) return backward_result<kChannelBias>(dx, dgamma, dbeta, dchannel_bias);

  const NhwcTilePlan plan = plan_nhwc_tiles<kBlock>(shape);
  const int64_t planes = shape.batch * shape.channels;
  auto partial = at::empty({planes * plan.splits, 2}, x.options());
  auto plane_sums = at::empty({planes, 2}, x.options().dtype(at::kDouble));
  auto coef = at::empty({rows, 2}, x.options());
  auto bias_partial =
      kChannelBias ? at::empty({shape.batch * plan.pixel_tiles, shape.channels}, x.options()) : at::Tensor();
  auto* partial_ptr = as_float2(partial);
  auto* plane_sums_ptr = reinterpret_cast<double2*>(plane_sums.data_ptr<double>());
  auto* coef_ptr = as_float2(coef);
  const float* bias = channel_bias_data<kChannelBias>(channel_bias);
  float* bias_partial_ptr = kChannelBias ? bias_partial.data_ptr<float>() : nullptr;
  const bool vec_x = shape.channels % 4 == 0 && is_16_byte_aligned(x.data_ptr<float>());
  const bool vec_apply = vec_x && is_16_byte_aligned(dx.data_ptr<float>());
  const auto stream = at::cuda::getCurrentCUDAStream();
  dispatch_groups<kSpecialisedGroups>(shape.groups, [&](auto kg) {
    constexpr int kGroups = decltype(kg)::value;
    dispatch_vec(vec_x, [&](auto kv) {
      nhwc_backward_partial_kernel<Op, kGroups, kBlock, decltype(kv)::value, kChannelBias>
          <<<shape.batch * plan.splits * plan.channel_tiles, kBlock, 0, stream>>>(
              dy.data_ptr<float>(), x.data_ptr<float>(), as_float2(mean), shape, plan, partial_ptr, op, bias);
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    backward_group_kernel<kGroups, kBlock><<<blocks_for(rows * kWarpSize, kBlock), kBlock, 0, stream>>>(
        partial_ptr, plan.splits, gamma.data_ptr<float>(), rstd.data_ptr<float>(), shape, plane_sums_ptr, coef_ptr);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    param_grad_kernel<kGroups><<<shape.channels, kParamGradThreads, 0, stream>>>(
        plane_sums_ptr, rstd.data_ptr<float>(), shape, dgamma.data_ptr<float>(), dbeta.data_ptr<float>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    dispatch_vec(vec_apply, [&](auto kv) {
      nhwc_backward_apply_kernel<Op, kGroups, kBlock, decltype(kv)::value, kChannelBias>
          <<<shape.batch * plan.pixel_tiles * plan.channel_tiles, kBlock, 0, stream>>>(
              dy.data_ptr<float>(), x.data_ptr<float>(), as_float2(mean), rstd.data_ptr<float>(),
              gamma.data_ptr<float>(), coef_ptr, dx.data_ptr<float>(), shape, plan, op, bias, bias_partial_ptr);
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  if constexpr (kChannelBias) column_sums<kBlock>(bias_partial, dchannel_bias);
  return backward_result<kChannelBias>(dx, dgamma, dbeta, dchannel_bias);
}

}  // namespace kgen
