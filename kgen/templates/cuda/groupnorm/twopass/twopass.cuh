// ---- groupnorm/twopass/twopass.cuh: the two-pass (large-tensor) kernels of a fused GroupNorm region ----
//
//   x --Pro--> z --GroupNorm(G, eps, optional affine)--> y --Epi--> v --reduction--> out
//
// Pro and Epi are the generated functors of groupnorm/region.cuh; the reduction is one of its
// ReduceKind x ReduceOp. Nothing between x and out is stored: every kernel reads x and recomputes
// z, y, v on the fly, forward and backward. x is (N, C, *spatial) contiguous: a (sample, channel)
// plane is one contiguous run of S = prod(spatial) values, and every "sweep" kernel below is cut into
// blocks of (plane, chunk of plan_split(S), core/sweeps.cuh), so the channel (hence the functors'
// parameters, the group's statistics, gamma and beta) is fixed per block and kept in registers.
// x may be float16 or bfloat16 (packs of 4 values in 8 bytes, arithmetic in float): every kernel reads x and writes dx
// so, kNone writes its output so, and dout is read so where it lies at x's positions or is one value a plane or sample
// (kNone, kPlane, kSample); kChannel's and kWindow's dout, and every other stream, are float32 (SweepDout).
// 16-byte loads and stores wherever every stream is 16-byte aligned, scalar elsewhere; the sweeps take odd
// planes (S % 4 != 0) on the 16-byte path too, with a scalar head and tail per chunk (ChunkSpan), but for the
// backward of a reduction over channels (its streams at (n, s) are not at x's offset).
//
// Forward, 2 reads of x + the output (each (plane, chunk) item taken by a block, or by a warp where planes are small:
// warp_teams):
//   stats_partial     per (plane, chunk): Welford moments of z - pilot (pilot: z of the group's first
//                     value, also written to `pilots`), float, block tree
//   stats_finalize    one warp per (sample, group): the group's C/G * splits chunk moments merged in
//                     double in a fixed order (warp_merge) -> mean (hi, lo) and rstd (finish_statistics)
//   then by kind:
//   kNone             plane_forward: v written, 16-byte stores. On sm_90, where a slice fits 8 blocks of 72 KB,
//                     the cluster forward instead (groupnorm/cluster/cluster.cuh): x read once, the statistics merged
//                     through distributed shared memory
//   kPlane, kSample   plane_forward: one reduction partial per block (sum; max/min with the first
//                     extreme's position; log-sum-exp as (max, sum exp(v - max))), then
//                     reduce_finish: one warp per output merges its partials in a fixed order
//                     (sums in double)
//   kChannel          channel_forward: one thread per 4 (or 1) positions s of a sample, looping over the
//                     channels (a warp reads 512 consecutive bytes of each plane); per-channel constants
//                     (functors, mean, rstd * gamma, beta) staged in shared memory, 128 channels at a time
//   kWindow           window_forward: one thread per pooled output, looping over its window in (d, h, w)
//                     order, 4 loads in flight
// Backward, given the saved (mean, rstd, out, aux), everything element-local (each item taken by a block, or by a warp
// where planes are small: warp_teams, as the forward's):
//   backward_sweep<partial>   per (plane, chunk): dv from dout (the reduction's backward), Epi::backward
//                             -> dy; block sums of dy, dy (z - mean) (groupnorm/statistics.cuh's layout) and of the
//                             epilogue's parameter gradients
//   backward_group_kernel     (groupnorm/statistics.cuh) per (sample, group): plane sums and the coefficients B, C
//   param_grad_kernel         (groupnorm/statistics.cuh, affine only) dgamma, dbeta
//   backward_sweep<apply>     dz = rstd gamma dy + B (z - mean) + C + direct dz; dx = Pro::backward(dz)
//                             + direct dx, written; block sums of the prologue's parameter gradients
//   param_sums                one warp per (parameter, channel): its block sums over (n, chunk), double,
//                             fixed order
// kNone on 16-byte packs runs both sweeps in one persistent kernel instead, pass B an L2 behind pass A
// (groupnorm/twopass/backward_pipeline.cuh), where the lag it needs fits in L2. kWindow runs its own sweeps over whole rows
// and, for max / min, a first pass over the windows' extremes only, whose x the forward saved
// (groupnorm/twopass/window_backward.cuh).
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

using namespace reduction;  // Reducer<O> and its partials (groupnorm/reducers.cuh)

constexpr int kChannelTile = 128;       // channels whose constants channel_forward stages at a time

// A window max / min whose epilogue gives exact zeros for a zero gradient (below) keeps, beside each output's
// position, the input x at that position: aux is then (2, *out's shape) int32, positions first, then x's bits.
// Its backward's first pass reads those two planes and dout instead of gathering x at the positions: a gather
// touches most of x's sectors (L2-85's 4 x 4 windows: 148 us for 31 MB of outputs), the saved values cost the
// forward one more write the size of out.
//
// Whether a zero dv gives exactly zero everywhere in the epilogue's backward: then the values that are no window's
// extreme add nothing to the backward's sums, as in autograd. A generated epilogue says so (kZeroGradExact: none
// of its ops has a derivative that can be infinite at a finite input, where autograd's 0 * inf would be NaN); a
// functor that does not say is read densely.
template <class Epi, class = void>
struct ZeroGradExact : std::false_type {};
template <class Epi>
struct ZeroGradExact<Epi, std::void_t<decltype(Epi::kZeroGradExact)>> : std::bool_constant<Epi::kZeroGradExact> {};

template <class Epi, ReduceOp O>
constexpr bool window_sums_sparse() {
  return kHasAux<O> && ZeroGradExact<Epi>::value;
}

template <class Epi, ReduceKind R, ReduceOp O>
constexpr bool saves_extreme_x() {
  return R == ReduceKind::kWindow && window_sums_sparse<Epi, O>();
}

// A window max / min whose first backward pass reads only the extremes (window_sums_sparse) and whose epilogue has no
// direct gradients: that pass also writes each window's dy (the extreme's; every other value's is 0), and the second
// pass reads it in dout's place instead of running the epilogue's backward at every value (groupnorm/twopass/window_backward.cuh).
template <class Epi, ReduceOp O>
constexpr bool window_dy_from_extremes() {
  return window_sums_sparse<Epi, O>() && !DirectGrads<Epi>::value;
}

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

// K sums over each team of `team` threads (whole warps dividing kBlock) at once (one shared round trip); the
// results are valid in each team's first thread.
template <int kBlock, int K>
__device__ __forceinline__ void team_sums(float (&v)[K], int team) {
  constexpr int kWarps = kBlock / kWarpSize;
  __shared__ float per_warp[K][kWarps];
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int team_warps = team / kWarpSize, first = warp - warp % team_warps;
#pragma unroll
  for (int k = 0; k < K; ++k) v[k] = warp_sum(v[k]);
  if (lane == 0) {
#pragma unroll
    for (int k = 0; k < K; ++k) per_warp[k][warp] = v[k];
  }
  __syncthreads();
  if (warp == first) {
#pragma unroll
    for (int k = 0; k < K; ++k) v[k] = warp_sum(lane < team_warps ? per_warp[k][first + lane] : 0.f);
  }
}

// K sums over the block at once (one shared round trip); the results are valid in thread 0.
template <int kBlock, int K>
__device__ __forceinline__ void block_sums(float (&v)[K]) {
  team_sums<kBlock, K>(v, kBlock);
}

// Channel::value forms y from z in the region's AffineForm (groupnorm/region.cuh), with the channel's terms computed
// once: scale = rstd gamma and shift = beta (kCentred), torch = -scale mean + beta (kTorchAffine) or gamma
// (kTorchRows). The backward kernels read scale and shift as rstd gamma and beta in every form (dz = scale dy + ...).

// Everything one channel of one sample needs: its functors and its GroupNorm affine map.
template <class Pro, class Epi>
struct Channel {
  Pro pro;
  Epi epi;
  float2 mean;  // (hi, lo) of the group (lo = 0 where faithful)
  float scale;  // rstd * gamma[c]
  float shift;  // beta[c]
  float rstd;   // the group's rstd (kTorchCentred, kTorchRows)
  float torch;  // b (kTorchAffine), gamma[c] (kTorchRows)
  int form;     // AffineForm

  __device__ __forceinline__ float normalized(float z) const {
    if (form == kCentred) return __fmaf_rn(centered(z, mean), scale, shift);
    if (form == kTorchAffine) return __fmaf_rn(scale, z, torch);
    if (form == kTorchCentred) return __fmaf_rn(__fsub_rn(z, mean.x), rstd, shift);
    return __fmaf_rn(__fmul_rn(__fsub_rn(z, mean.x), rstd), torch, shift);
  }
  __device__ __forceinline__ float value(float x) const {
    const float z = pro.value(x);
    return epi.value(normalized(z), z, x);
  }
};

// Channel c of the (sample, group) statistics row `row`.
template <class Pro, class Epi>
__device__ __forceinline__ Channel<Pro, Epi> load_channel(const RegionParams& params, int64_t c, int64_t row,
                                                          const float2* __restrict__ mean,
                                                          const float* __restrict__ rstd,
                                                          const float* __restrict__ gamma,
                                                          const float* __restrict__ beta) {
  const float r = rstd[row];
  const float g = gamma != nullptr ? __ldg(gamma + c) : 1.f;
  const float b = beta != nullptr ? __ldg(beta + c) : 0.f;
  Channel<Pro, Epi> ch{Pro::at(params, c), Epi::at(params, c), mean[row], gamma != nullptr ? r * g : r, b, r, g,
                       kCentred};
  ch.form = affine_form(params.faithful, gamma != nullptr, beta != nullptr);
  if (ch.form == kTorchAffine) ch.torch = __fadd_rn(__fmul_rn(-ch.scale, ch.mean.x), b);
  return ch;
}

// A chunk's values as a 16-byte body and scalar ends (W = 4). With S % 4 != 0 a plane starts at any 4-byte
// offset, so the body starts at the chunk's first 16-byte boundary (the streams' base pointers are 16-byte
// aligned): `head` values (0-3) before it, `packs` whole packs, the values from `tail` on after them. With
// S % 4 == 0 (chunks are whole packs) head = 0 and no value is left after the body. W = 1: all body.
// In 32 bits (a chunk is part of a plane, and planes are shorter than 2^32 values: positions s are uint32_t).
template <int W>
struct ChunkSpan {
  int head, packs, tail, count;
  __device__ __forceinline__ ChunkSpan(int64_t offset, int64_t n) : count(static_cast<int>(n)) {
    const int gap = W == 4 ? (4 - static_cast<int>(offset & 3)) & 3 : 0;
    head = gap < count ? gap : count;
    packs = (count - head) / W;
    tail = head + packs * W;
  }
  __device__ __forceinline__ int ends() const { return head + (count - tail); }  // values outside the body
  __device__ __forceinline__ int end_at(int k) const { return k < head ? k : tail + (k - head); }
};

// A (plane, chunk) item of the sweep kernels: block `blockIdx.x`'s, or item `item` of a persistent kernel.
struct PlaneChunk {
  int64_t plane, n, c, row, begin, count;  // row: the (sample, group) of the plane
  __device__ __forceinline__ PlaneChunk(const RegionShape& shape, const SplitPlan& plan)
      : PlaneChunk(shape, plan, blockIdx.x) {}
  // In 32 bits: the planes (N C) and items (N C splits) are fewer than 2^31, and a 64-bit division is a
  // subroutine of some 70 instructions (per item of the pipelined backward, not only per block).
  __device__ __forceinline__ PlaneChunk(const RegionShape& shape, const SplitPlan& plan, unsigned item) {
    const unsigned splits = static_cast<unsigned>(plan.splits), channels = static_cast<unsigned>(shape.channels);
    const unsigned groups = static_cast<unsigned>(shape.groups);
    const unsigned p = item / splits, sample = p / channels, channel = p - sample * channels;
    plane = p;
    n = sample;
    c = channel;
    row = int64_t(sample) * groups + channel / (channels / groups);
    begin = int64_t(item - p * splits) * plan.chunk;
    count = min(plan.chunk, shape.plane - begin);
  }
};

// The sweeps' teams: a block takes one (plane, chunk) item, or each of its warps one where a chunk is a whole
// plane of at most kWarpTeamValues values (7x7 to 16x16 planes: a block of 256 threads for 49 to 64 16-byte packs
// left most of it idle and launched a block per plane; H200, 32 x 320 planes of 14 x 14, GroupNorm(1, 320): the
// statistics at 0.19 TB/s, benchmarks/results/h200/cliffs/).
constexpr int64_t kWarpTeamValues = 512;

inline bool warp_teams(const SplitPlan& plan, int64_t plane) { return plan.splits == 1 && plane <= kWarpTeamValues; }

// The grid of `items` items for teams of kTeam threads in blocks of kBlock.
template <int kBlock>
inline int64_t team_blocks(int64_t items, bool warps) {
  return warps ? (items + kBlock / kWarpSize - 1) / (kBlock / kWarpSize) : items;
}

// This thread's team's item: the block's, or its warp's where a warp is a team (kTeam = 32).
template <int kBlock, int kTeam>
__device__ __forceinline__ unsigned team_item() {
  return kTeam == kBlock ? blockIdx.x : blockIdx.x * unsigned(kBlock / kTeam) + threadIdx.x / kTeam;
}

}  // namespace region_twopass
}  // namespace kgen
