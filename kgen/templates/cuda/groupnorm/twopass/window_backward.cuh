// ---- groupnorm/twopass/window_backward.cuh: the two-pass backward of a region pooled over windows (kWindow; design:
// groupnorm/twopass/twopass.cuh) ----
//
// The backward sweeps (groupnorm/twopass/backward.cuh) find each element's window from its flat position:
// five divisions and a gather of dout (and aux) per element, some 80 instructions a value, which makes them
// issue-bound at 3x their DRAM time (H100, L2-85's 126 x 126 planes and 4 x 4 windows: 558 + 496 us against a
// same-size copy's 400). These kernels cut that work two ways:
//   - window_sweep_kernel walks whole rows (a row: the W values along the last dim): a block takes `rows`
//     rows of one plane, whose window coordinates it tabulates once in shared memory, and its threads walk the
//     rows' values in order (coalesced 4-byte accesses), carrying (row, column) from one value to the next by
//     an add and a compare. A value's window is then a table read and one division by kw, and its saved dout
//     and aux are loaded with x.
//   - window_extreme_sums_kernel (max / min, where the epilogue's derivatives are finite: kZeroGradExact):
//     only the saved extreme of each window gets a gradient, so the first pass visits the windows, not the
//     values: one thread per pooled output reads its dout and the x the forward saved at its extreme
//     (saves_extreme_x, groupnorm/twopass/twopass.cuh). Where the epilogue has no direct gradients of z or x
//     (window_dy_from_extremes), it also writes each window's dy, the extreme's (every other value's is 0), and the
//     second pass reads that in dout's place: a value's dx is then the prologue's backward of
//     rstd gamma dy + B (z - mean) + C, without y or the epilogue's backward at every value.
// Both keep the sweeps' outputs and their layout (per-block partials of dy, dy (z - mean) and the parameter
// gradients, merged in a fixed order): deterministic, and the same group kernel follows. (H100, L2-85, one A/B
// run: the backward's kernels 590 us against the sweeps' 1057, 434 us of it the second sweep, at 72 % of DRAM, 36 us
// of that the gathers of dout and aux. The first pass takes 40 us reading the saved x, against 148 us gathering x
// at the extremes' positions.)
namespace kgen {
namespace region_twopass {

// Rows of one plane per window_sweep block (the last block of a plane may have fewer): the shared table holds
// one entry a row.
constexpr int kWindowMaxRows = 1024;

struct WindowPlan {
  int splits;  // blocks per plane
  int rows;    // rows per block
};

// About plan_split's values a block, in whole rows.
template <int kBlock>
inline WindowPlan window_plan(const Geometry& geo) {
  const int64_t width = std::max<int64_t>(geo.size[2], 1), total = geo.size[0] * geo.size[1];
  const int64_t target = int64_t(kBlock) * 4 * kUnroll * 4;
  int64_t rows = std::min<int64_t>(std::max<int64_t>(1, target / width), kWindowMaxRows);
  rows = std::min<int64_t>(rows, std::max<int64_t>(total, 1));
  const int64_t splits = std::max<int64_t>(1, (total + rows - 1) / rows);
  rows = std::max<int64_t>(1, (total + splits - 1) / splits);
  return WindowPlan{static_cast<int>(splits), static_cast<int>(rows)};
}

// Values a thread has in flight, each with its window's saved values. (H100, L2-85: 4 at 24 warps beat 8 at 24 and
// 16 at 16 warps, and 2- or 4-value accesses do not help.)
constexpr int kWindowValuesInFlight = 4;

// The plane of block blockIdx.x of a grid of `splits` blocks a plane: its split, channel and (sample, group) row.
struct SplitPlane {
  unsigned plane, split, c;
  int64_t row;
  __device__ __forceinline__ SplitPlane(const RegionShape& shape, int splits) {
    const unsigned s = static_cast<unsigned>(splits), channels = static_cast<unsigned>(shape.channels);
    plane = blockIdx.x / s;
    split = blockIdx.x - plane * s;
    const unsigned n = plane / channels;
    c = plane - n * channels;
    row = int64_t(n) * shape.groups + c / static_cast<unsigned>(shape.channels_per_group());
  }
};

// One pass over the values of `rows` rows of one plane, two flavours as backward_sweep_kernel:
//   kApply = false: block sums of dy, dy (z - mean) -> gn_partial[block]; of the epilogue's parameter
//                   gradients -> param_partial[k * blocks + block]
//   kApply = true:  dx written; block sums of the prologue's parameter gradients -> param_partial. Where
//                   window_dy_from_extremes, `dout` is each window's dy (window_extreme_sums_kernel's window_dy).
// T: x's and dx's storage type; dout, out and aux (the pooled outputs') are float32 and int32.
template <class Pro, class Epi, ReduceOp O, int kBlock, bool kApply, class T>
__global__ void __launch_bounds__(kBlock, min_blocks_for_warps(kSweepBackwardWarps, kBlock))
window_sweep_kernel(const T* __restrict__ x, const float* __restrict__ dout, const float* __restrict__ out,
                    const int* __restrict__ aux, RegionParams params, RegionShape shape, Geometry geo, WindowPlan plan,
                    const float2* __restrict__ mean, const float* __restrict__ rstd, const float* __restrict__ gamma,
                    const float* __restrict__ beta, const float2* __restrict__ coef, T* __restrict__ dx,
                    float2* __restrict__ gn_partial, float* __restrict__ param_partial) {
  constexpr int kSums = kApply ? Pro::kParams : 2 + Epi::kParams;
  constexpr int kInFlight = kWindowValuesInFlight;
  constexpr bool kFromDy = kApply && window_dy_from_extremes<Epi, O>();
  // Per row of the block: the plane offset of its windows' first pooled output (-1: the row is in no window,
  // the floor remainder) and the offset within a window of its first value.
  __shared__ int2 row_windows[kWindowMaxRows];
  const SplitPlane b(shape, plan.splits);
  const int H = static_cast<int>(geo.size[1]), W = static_cast<int>(geo.size[2]);
  const int kd = static_cast<int>(geo.window[0]), kh = static_cast<int>(geo.window[1]);
  const int kw = static_cast<int>(geo.window[2]);
  const int PH = static_cast<int>(geo.pooled[1]), PW = static_cast<int>(geo.pooled[2]);
  const int first_row = static_cast<int>(b.split) * plan.rows;
  const int rows = min(plan.rows, static_cast<int>(geo.size[0]) * H - first_row);
  for (int k = threadIdx.x; k < rows; k += kBlock) {
    const int r = first_row + k, d = r / H, h = r - d * H, pd = d / kd, ph = h / kh;
    const bool in = pd < geo.pooled[0] && ph < PH;
    row_windows[k] = in ? make_int2((pd * PH + ph) * PW, ((d - pd * kd) * kh + (h - ph * kh)) * kw)
                        : make_int2(-1, 0);
  }
  __syncthreads();

  const auto ch = load_channel<Pro, Epi>(params, b.c, b.row, mean, rstd, gamma, beta);
  float2 bc = make_float2(0.f, 0.f);
  if constexpr (kApply) bc = coef[b.row];
  const int64_t first = int64_t(b.plane) * shape.plane + int64_t(first_row) * W;
  const T* xs = x + first;
  T* dst = kApply ? dx + first : nullptr;
  // The plane's first output, in 32 bits (the host checks that the outputs are fewer than 2^32): a value's output
  // is then one 32-bit add from it, and its address one multiply-add.
  const uint32_t pooled_first = b.plane * static_cast<uint32_t>(geo.pooled_plane);  // 0 where there are no outputs
  const int count = rows * W;
  // Value e of the block is at (row e / W, column e % W); a thread's next value is kBlock further on. The threads
  // take the values in a frame aligned to 32 values of the tensor, so that a warp's accesses are whole 128-byte
  // lines (a plane's rows start anywhere): thread t first takes value t - lead, or t - lead + kBlock.
  const int lead = static_cast<int>(first & 31);
  const int step_rows = kBlock / W, step_cols = kBlock - step_rows * W;
  const int start = static_cast<int>(threadIdx.x) >= lead ? static_cast<int>(threadIdx.x) - lead
                                                           : static_cast<int>(threadIdx.x) - lead + kBlock;
  int at_row = start / W, at_col = start - at_row * W;

  float sums[kSums > 0 ? kSums : 1];
#pragma unroll
  for (int k = 0; k < kSums; ++k) sums[k] = 0.f;
  float dparam[kMaxParams] = {0.f, 0.f, 0.f, 0.f};

  // One round: kInFlight values kBlock apart from `base`; kFull: all of them in the block (no bounds to check).
  auto round = [&](int base, auto full) {
    constexpr bool kFull = decltype(full)::value;
    // Every load of the round first, x and its window's saved values together (one latency a round). A value's
    // window: a table read, a division by kw, no branch (a value in no window reads output 0 and drops it; where
    // the planes have no outputs at all, the host passes a zero in their place).
    float xv[kInFlight], g[kInFlight], ref[kInFlight] = {};  // ref: log-sum-exp's, a: max / min's
    int within[kInFlight], a[kInFlight] = {};
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {
      if (kFull || base + u * kBlock < count) {
        xv[u] = load1(xs + base + u * kBlock);
        const int2 rw = row_windows[at_row];
        const int pw = static_cast<int>(geo.div_window[2].div(static_cast<uint32_t>(at_col)));
        const bool in = rw.x >= 0 && pw < PW;
        const uint32_t o = pooled_first + (in ? static_cast<uint32_t>(rw.x + pw) : 0u);
        within[u] = in ? rw.y + at_col - pw * kw : -1;
        g[u] = __ldg(dout + o);
        if constexpr (kHasAux<O>) a[u] = __ldg(aux + o);
        if constexpr (O == ReduceOp::kLogSumExp) ref[u] = __ldg(out + o);
      }
      at_col += step_cols;
      at_row += step_rows;
      if (at_col >= W) {
        at_col -= W;
        ++at_row;
      }
    }
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {
      const int e = base + u * kBlock;
      if (!kFull && e >= count) break;
      const float z = ch.pro.value(xv[u]);
      const float zc = centered(z, ch.mean);
      if constexpr (kFromDy) {  // g: the window's dy, the extreme's
        const float dy = within[u] == a[u] ? g[u] : 0.f;
        store1(dst + e, ch.pro.backward(xv[u], ch.scale * dy + bc.x * zc + bc.y, dparam));
        continue;
      }
      const float y = ch.normalized(z);  // the forward's y, to the bit (AffineForm)
      float v = 0.f;
      if constexpr (O == ReduceOp::kLogSumExp) v = ch.epi.value(y, z, xv[u]);
      const float dv = window_dv<O>(g[u], within[u], a[u], ref[u], v, geo.window_elems);
      if constexpr (kApply) {
        store1(dst + e, value_dx(ch, xv[u], z, zc, y, dv, bc, dparam));
      } else {
        value_sums(ch, xv[u], z, zc, y, dv, sums[0], sums[1], dparam);
      }
    }
  };
  int base = start;
  for (; base + (kInFlight - 1) * kBlock < count; base += kBlock * kInFlight) round(base, std::true_type{});
  if (base < count) round(base, std::false_type{});
  write_team_sums<kBlock, kBlock, kApply, kSums>(sums, dparam, blockIdx.x, gridDim.x, gn_partial, param_partial);
}

// The first pass of a window max / min whose epilogue has finite derivatives (window_sums_sparse): only each
// window's saved extreme has a nonzero dv, so a thread takes a pooled output and reads its dout and the x the
// forward saved at its extreme (saves_extreme_x): two streams the size of out, both coalesced, no gather. Blocks as
// plan_split cuts the pooled outputs of a plane; outputs as window_sweep_kernel's first pass (the same sums: the
// other values add exact zeros there). Where window_dy_from_extremes, each window's dy to window_dy (out's size).
template <class Pro, class Epi, ReduceOp O, int kBlock>
__global__ void __launch_bounds__(kBlock, min_blocks_for_warps(kSweepBackwardWarps, kBlock))
window_extreme_sums_kernel(const float* __restrict__ dout, const float* __restrict__ extreme_x, RegionParams params,
                           RegionShape shape, Geometry geo, SplitPlan plan, const float2* __restrict__ mean,
                           const float* __restrict__ rstd, const float* __restrict__ gamma,
                           const float* __restrict__ beta, float2* __restrict__ gn_partial,
                           float* __restrict__ param_partial, float* __restrict__ window_dy) {
  static_assert(kHasAux<O>, "window_extreme_sums_kernel: the sums of a window max or min");
  constexpr bool kWriteDy = window_dy_from_extremes<Epi, O>();
  constexpr int kSums = 2 + Epi::kParams;
  const SplitPlane b(shape, plan.splits);
  const auto ch = load_channel<Pro, Epi>(params, b.c, b.row, mean, rstd, gamma, beta);
  const int64_t begin = int64_t(b.split) * plan.chunk;
  const int count = static_cast<int>(min(plan.chunk, geo.pooled_plane - begin));
  const int64_t first = int64_t(b.plane) * geo.pooled_plane + begin;
  const float* gp = dout + first;
  const float* xp = extreme_x + first;

  float sums[kSums];
#pragma unroll
  for (int k = 0; k < kSums; ++k) sums[k] = 0.f;
  float dparam[kMaxParams] = {0.f, 0.f, 0.f, 0.f};
  for (int base = threadIdx.x; base < count; base += kBlock * kUnroll) {
    float g[kUnroll], xv[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int i = base + u * kBlock;
      if (i < count) {
        g[u] = __ldg(gp + i);
        xv[u] = __ldg(xp + i);
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if (base + u * kBlock >= count) break;
      const float z = ch.pro.value(xv[u]);
      const float zc = centered(z, ch.mean);
      const float dy = value_sums(ch, xv[u], z, zc, ch.normalized(z), g[u], sums[0], sums[1], dparam);
      if constexpr (kWriteDy) window_dy[first + base + u * kBlock] = dy;
    }
  }
  write_team_sums<kBlock, kBlock, false, kSums>(sums, dparam, blockIdx.x, gridDim.x, gn_partial, param_partial);
}

}  // namespace region_twopass
}  // namespace kgen
