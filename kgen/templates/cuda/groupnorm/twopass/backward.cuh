// ---- groupnorm/twopass/backward.cuh: the two-pass backward sweeps and what the pipelined backward shares with them
// (design: groupnorm/twopass/twopass.cuh) ----
namespace kgen {
namespace region_twopass {

// Streams the backward sweeps read besides x, at the element's own position: dout (kNone); dout and,
// for log-sum-exp, out or, for max/min, aux at (n, s) (kChannel).
template <ReduceKind R, ReduceOp O>
constexpr int backward_streams() {
  if (R == ReduceKind::kNone) return 1;
  if (R == ReduceKind::kChannel) return (O == ReduceOp::kLogSumExp || kHasAux<O>) ? 2 : 1;
  return 0;
}

// A value's gradient of v from its window's saved output: g = dout there, a = aux there (max / min), ref = out
// there (log-sum-exp, with the value's v); `within` is the value's position in its window, -1 in no window.
template <ReduceOp O>
__device__ __forceinline__ float window_dv(float g, int within, int a, float ref, float v, int window_elems) {
  if constexpr (O == ReduceOp::kSum) return within >= 0 ? g : 0.f;
  if constexpr (O == ReduceOp::kMean) return within >= 0 ? g / static_cast<float>(window_elems) : 0.f;
  if constexpr (kHasAux<O>) return within == a ? g : 0.f;
  if constexpr (O == ReduceOp::kLogSumExp) return within >= 0 ? g * __expf(v - ref) : 0.f;
  return 0.f;
}

// The reduction's backward at one element: its v's gradient dv, element-local given the forward's saved out
// and aux (the list in groupnorm/twopass/twopass.cuh). Made once per plane; dv() per element, at position s of its
// plane, with its values of the streams backward_streams<R, O> names (kNone: dout; kChannel: dout, then out
// or aux). Shared by the two-pass sweeps and the cluster backward (groupnorm/cluster/cluster.cuh). T: dout's storage
// type (SweepDout).
template <ReduceKind R, ReduceOp O, class T = float>
struct Upstream {
  float g = 0.f, ref = 0.f;  // kPlane, kSample: the output's gradient (over the count for kMean) and value
  int arg = 0, base = 0;     // ... the saved extreme's position; the plane's first position in the output's order
  int64_t out_plane = 0;     // kWindow: the plane's first pooled output

  __device__ __forceinline__ Upstream(const RegionShape& shape, const Geometry& geo, int64_t plane, int64_t n,
                                      int64_t c, const T* __restrict__ dout, const float* __restrict__ out,
                                      const int* __restrict__ aux) {
    if constexpr (R == ReduceKind::kPlane || R == ReduceKind::kSample) {
      const int64_t o = R == ReduceKind::kPlane ? plane : n;
      g = to_float(dout[o]);
      if constexpr (O == ReduceOp::kMean) {
        g = g / static_cast<float>(R == ReduceKind::kPlane ? shape.plane : shape.channels * shape.plane);
      }
      if constexpr (O == ReduceOp::kLogSumExp) ref = out[o];
      if constexpr (kHasAux<O>) arg = aux[o];
      base = static_cast<int>(R == ReduceKind::kSample ? c * shape.plane : 0);
    }
    if constexpr (R == ReduceKind::kWindow) out_plane = plane * geo.pooled_plane;
  }

  template <class Ch>
  __device__ __forceinline__ float dv(const Ch& ch, float xv, float z, float y, uint32_t s, float s1, float s2,
                                     int64_t c, const RegionShape& shape, const Geometry& geo,
                                     const T* __restrict__ dout, const float* __restrict__ out,
                                     const int* __restrict__ aux) const {
    float dv = 0.f;
    if constexpr (R == ReduceKind::kNone) {
      dv = s1;
    } else if constexpr (R == ReduceKind::kChannel) {
      if constexpr (O == ReduceOp::kSum) dv = s1;
      if constexpr (O == ReduceOp::kMean) dv = s1 / static_cast<float>(shape.channels);
      if constexpr (kHasAux<O>) dv = __float_as_int(s2) == static_cast<int>(c) ? s1 : 0.f;
      if constexpr (O == ReduceOp::kLogSumExp) dv = s1 * __expf(ch.epi.value(y, z, xv) - s2);
    } else if constexpr (R == ReduceKind::kPlane || R == ReduceKind::kSample) {
      if constexpr (O == ReduceOp::kSum || O == ReduceOp::kMean) dv = g;
      if constexpr (kHasAux<O>) dv = base + static_cast<int>(s) == arg ? g : 0.f;
      if constexpr (O == ReduceOp::kLogSumExp) dv = g * __expf(ch.epi.value(y, z, xv) - ref);
    } else {  // kWindow: the element's window, if any (dv = 0 in the floor remainder)
      // (Only the pipelined kernel, forced by the tests, takes windows here: their backward is
      // groupnorm/twopass/window_backward.cuh's, which finds a value's window from its row instead.)
      const uint32_t d = geo.div_hw.div(s);
      const uint32_t rem = s - d * static_cast<uint32_t>(geo.size[1] * geo.size[2]);
      const uint32_t h = geo.div_w.div(rem);
      const uint32_t w = rem - h * static_cast<uint32_t>(geo.size[2]);
      const uint32_t pd = geo.div_window[0].div(d), ph = geo.div_window[1].div(h), pw = geo.div_window[2].div(w);
      if (pd < geo.pooled[0] && ph < geo.pooled[1] && pw < geo.pooled[2]) {
        const int64_t o = out_plane + (int64_t(pd) * geo.pooled[1] + ph) * geo.pooled[2] + pw;
        const uint32_t kd = geo.window[0], kh = geo.window[1], kw = geo.window[2];
        const int within = static_cast<int>(((d - pd * kd) * kh + (h - ph * kh)) * kw + (w - pw * kw));
        int a = 0;
        float ref = 0.f, v = 0.f;
        if constexpr (kHasAux<O>) a = aux[o];
        if constexpr (O == ReduceOp::kLogSumExp) {
          ref = out[o];
          v = ch.epi.value(y, z, xv);
        }
        dv = window_dv<O>(to_float(dout[o]), within, a, ref, v, geo.window_elems);
      }
    }
    return dv;
  }
};

// Stream k's value j of one step of sweep (0 where there are fewer streams).
template <int k, int W, int N>
__device__ __forceinline__ float stream_at(const Pack<W> (&v)[N], int j) {
  if constexpr (k < N) {
    return v[k].v[j];
  } else {
    return 0.f;
  }
}

// One value's part of the first pass, given its z, z - mean, y and the gradient dv of its v: dy and dy (z - mean)
// into the sums, the epilogue's parameter gradients into dparam. Returns dy.
template <class Pro, class Epi>
__device__ __forceinline__ float value_sums(const Channel<Pro, Epi>& ch, float xv, float z, float zc, float y, float dv,
                                            float& sum_dy, float& sum_dy_zc, float (&dparam)[kMaxParams]) {
  float dy = 0.f, dz_direct = 0.f, dx_direct = 0.f;
  ch.epi.backward(y, z, xv, dv, dy, dz_direct, dx_direct, dparam);
  sum_dy += dy;
  sum_dy_zc += dy * zc;
  return dy;
}

// One value's dx in the second pass, given the slice's coefficients bc = (B, C); the prologue's parameter
// gradients into dparam.
template <class Pro, class Epi>
__device__ __forceinline__ float value_dx(const Channel<Pro, Epi>& ch, float xv, float z, float zc, float y, float dv,
                                          float2 bc, float (&dparam)[kMaxParams]) {
  float dy = 0.f, dz_direct = 0.f, dx_direct = 0.f;
  float discard[kMaxParams] = {0.f, 0.f, 0.f, 0.f};
  ch.epi.backward(y, z, xv, dv, dy, dz_direct, dx_direct, discard);
  (void)discard;
  const float dz = (ch.scale * dy + bc.x * zc + bc.y) + dz_direct;
  return ch.pro.backward(xv, dz, dparam) + dx_direct;
}

// One value's backward, given everything but its own stream values: pass A's sums (dy, dy (z - mean) and the
// epilogue's parameter gradients) and pass B's dx. Shared by the sweeps below and the pipelined backward
// (groupnorm/twopass/backward_pipeline.cuh); v[k].v[j] is stream k's value j of one pack.
template <class Pro, class Epi, ReduceKind R, ReduceOp O, class T = float>
struct ValueBackward {
  const Channel<Pro, Epi>& ch;
  const Upstream<R, O, T>& up;
  const RegionShape& shape;
  const Geometry& geo;
  int64_t c;
  const T* __restrict__ dout;
  const float* __restrict__ out;
  const int* __restrict__ aux;

  // s: the value's position in its plane
  template <int W, int N>
  __device__ __forceinline__ void sums(const Pack<W> (&v)[N], int j, uint32_t s, float& sum_dy, float& sum_dy_zc,
                                       float (&dparam)[kMaxParams]) const {
    const float xv = v[0].v[j];
    const float z = ch.pro.value(xv);
    const float zc = centered(z, ch.mean);
    const float y = ch.normalized(z);  // the forward's y, to the bit (AffineForm)
    const float dv = up.dv(ch, xv, z, y, s, stream_at<1>(v, j), stream_at<2>(v, j), c, shape, geo, dout, out, aux);
    value_sums(ch, xv, z, zc, y, dv, sum_dy, sum_dy_zc, dparam);
  }

  // bc: the slice's coefficients (B, C); adds the prologue's parameter gradients into dparam
  template <int W, int N>
  __device__ __forceinline__ float dx(const Pack<W> (&v)[N], int j, uint32_t s, float2 bc,
                                      float (&dparam)[kMaxParams]) const {
    const float xv = v[0].v[j];
    const float z = ch.pro.value(xv);
    const float zc = centered(z, ch.mean);
    const float y = ch.normalized(z);  // the forward's y, to the bit (AffineForm)
    const float dv = up.dv(ch, xv, z, y, s, stream_at<1>(v, j), stream_at<2>(v, j), c, shape, geo, dout, out, aux);
    return value_dx(ch, xv, z, zc, y, dv, bc, dparam);
  }
};

// The storage type of dout as the backward sweeps read it: x's (T), but float32 for kChannel, whose dout stream sits
// at (n, s) beside its out or aux stream (float32, int32): the host passes a float32 copy there (1/C of x's size).
template <ReduceKind R, class T>
using SweepDout = std::conditional_t<R == ReduceKind::kChannel, float, T>;

// The streams a backward sweep reads at its chunk's values: x (storage type T) at x_in, and the backward_streams<R, O>
// more (dout's type D) in rest.
template <ReduceKind R, ReduceOp O, int kSize, class T, class D>
__device__ __forceinline__ void backward_stream_bases(const T*& x_in, const D* (&rest)[kSize], const T* __restrict__ x,
                                                      const D* __restrict__ dout, const float* __restrict__ out,
                                                      const int* __restrict__ aux, const RegionShape& shape,
                                                      const PlaneChunk& b) {
  x_in = x + b.plane * shape.plane + b.begin;
  if constexpr (R == ReduceKind::kNone) rest[0] = dout + b.plane * shape.plane + b.begin;
  if constexpr (R == ReduceKind::kChannel) {
    static_assert(std::is_same_v<D, float>, "kChannel's dout, out and aux streams are read as float32");
    const int64_t at = b.n * shape.plane + b.begin;
    rest[0] = dout + at;
    if constexpr (O == ReduceOp::kLogSumExp) rest[1] = out + at;
    if constexpr (kHasAux<O>) rest[1] = reinterpret_cast<const float*>(aux) + at;
  }
}

// The end of a backward pass: a thread's sums (first pass: dy and dy (z - mean) in sums[0..1]) and parameter
// gradients, summed over the team (the block, or a warp: kTeam) and written as the item's partials: the first pass's
// to gn_partial[item] and, for the epilogue's parameters, param_partial[k * items + item]; the second pass's (the
// prologue's) likewise.
template <int kBlock, int kTeam, bool kApply, int kSums>
__device__ __forceinline__ void write_team_sums(float (&sums)[kSums > 0 ? kSums : 1], const float (&dparam)[kMaxParams],
                                                unsigned item, int64_t items, float2* __restrict__ gn_partial,
                                                float* __restrict__ param_partial) {
  if constexpr (kSums > 0) {
    constexpr int kFirstParam = kApply ? 0 : 2;
#pragma unroll
    for (int k = kFirstParam; k < kSums; ++k) sums[k] = dparam[k - kFirstParam];
    if constexpr (kTeam == kBlock) {
      block_sums<kBlock, kSums>(sums);
    } else {
#pragma unroll
      for (int k = 0; k < kSums; ++k) sums[k] = warp_sum(sums[k]);
    }
    if (threadIdx.x % kTeam == 0) {
      if constexpr (!kApply) gn_partial[item] = make_float2(sums[0], sums[1]);
#pragma unroll
      for (int k = kFirstParam; k < kSums; ++k) param_partial[int64_t(k - kFirstParam) * items + item] = sums[k];
    }
  }
}

// Warps an SM the backward sweeps' registers are capped for: at 256 threads, 80 registers. (H100, both sweeps
// in one run each: L2-92's log-sum-exp over channels, 91 and 86 registers uncapped, 782 us capped against 962
// uncapped; L2-85 (68-72) and L2-83 (63-72) unchanged. A cap for 32 warps, 64 registers: L2-85 998 us, but
// L2-92 spills, 1196 us.)
constexpr int kSweepBackwardWarps = 24;

// One sweep over (plane, chunk) blocks, two flavours:
//   kApply = false: block sums of dy, dy (z - mean) -> gn_partial[block]; of the epilogue's parameter
//                   gradients -> param_partial[k * blocks + block]
//   kApply = true:  dx written; block sums of the prologue's parameter gradients -> param_partial
// T: the storage type of x and dx, and of dout (SweepDout: float32 for kChannel). kTeam threads take one (plane,
// chunk) item of the `items`: the block, or a
// warp where planes are small (warp_teams, as the forward sweeps'; a block a plane of a few values left most of its
// threads idle and launched a block per plane).
template <class Pro, class Epi, ReduceKind R, ReduceOp O, int kBlock, bool kVec, bool kApply, class T,
          int kTeam = kBlock>
__global__ void __launch_bounds__(kBlock, min_blocks_for_warps(kSweepBackwardWarps, kBlock))
backward_sweep_kernel(const T* __restrict__ x, const SweepDout<R, T>* __restrict__ dout, const float* __restrict__ out,
                      const int* __restrict__ aux, RegionParams params, RegionShape shape, Geometry geo,
                      SplitPlan plan, const float2* __restrict__ mean, const float* __restrict__ rstd,
                      const float* __restrict__ gamma, const float* __restrict__ beta,
                      const float2* __restrict__ coef, T* __restrict__ dx, float2* __restrict__ gn_partial,
                      float* __restrict__ param_partial, int64_t items) {
  static_assert(kTeam == kBlock || kTeam == kWarpSize, "a team is the block or a warp");
  constexpr int W = kVec ? 4 : 1;
  constexpr int kStreams = 1 + backward_streams<R, O>();
  constexpr int kSums = kApply ? Pro::kParams : 2 + Epi::kParams;
  const unsigned item = team_item<kBlock, kTeam>();
  if (item >= items) return;  // team-uniform: whole warps leave (no block barrier where kTeam is a warp)
  const int first = static_cast<int>(threadIdx.x % kTeam);
  const PlaneChunk b(shape, plan, item);
  const auto ch = load_channel<Pro, Epi>(params, b.c, b.row, mean, rstd, gamma, beta);
  float2 bc = make_float2(0.f, 0.f);
  if constexpr (kApply) bc = coef[b.row];
  using D = SweepDout<R, T>;
  constexpr int kRest = kStreams - 1, kRestSize = kRest > 0 ? kRest : 1;
  const Upstream<R, O, D> up(shape, geo, b.plane, b.n, b.c, dout, out, aux);
  const ValueBackward<Pro, Epi, R, O, D> value{ch, up, shape, geo, b.c, dout, out, aux};
  const T* x_in;
  const D* rest[kRestSize] = {};
  backward_stream_bases<R, O>(x_in, rest, x, dout, out, aux, shape, b);
  // A 16-byte body and scalar ends (odd planes; backward_vec: the streams share x's offset there)
  const ChunkSpan<W> span(b.plane * shape.plane + b.begin, b.count);
  const T* x_body = x_in + span.head;
  const D* rest_body[kRestSize] = {};
#pragma unroll
  for (int k = 0; k < kRest; ++k) rest_body[k] = rest[k] + span.head;

  float sums[kSums > 0 ? kSums : 1];
#pragma unroll
  for (int k = 0; k < kSums; ++k) sums[k] = 0.f;
  float dparam[kMaxParams] = {0.f, 0.f, 0.f, 0.f};  // this thread's running parameter gradients
  T* dst = kApply ? dx + b.plane * shape.plane + b.begin : nullptr;

  sweep_streams<kTeam, W, kRest>(x_body, rest_body, span.packs, [&](int64_t i, const Pack<W>(&v)[kStreams]) {
    Pack<W> r;
#pragma unroll
    for (int j = 0; j < W; ++j) {
      const uint32_t s = static_cast<uint32_t>(b.begin + span.head + i * W + j);
      if constexpr (kApply) {
        r.v[j] = value.dx(v, j, s, bc, dparam);
      } else {
        value.sums(v, j, s, sums[0], sums[1], dparam);
      }
    }
    if constexpr (kApply) store_pack<W>(dst + span.head, i, r);
  }, first);
  for (int k = first; k < span.ends(); k += kTeam) {
    const int e = span.end_at(k);
    Pack<1> v[kStreams];
    v[0].v[0] = load1(x_in + e);
#pragma unroll
    for (int t = 0; t < kRest; ++t) v[1 + t].v[0] = load1(rest[t] + e);
    const uint32_t s = static_cast<uint32_t>(b.begin + e);
    if constexpr (kApply) {
      store1(dst + e, value.dx(v, 0, s, bc, dparam));
    } else {
      value.sums(v, 0, s, sums[0], sums[1], dparam);
    }
  }

  write_team_sums<kBlock, kTeam, kApply, kSums>(sums, dparam, item, items, gn_partial, param_partial);
}

// out[k][c] = sum over (n, split) of partial[k][(n C + c) splits + split], a block of kParamSumThreads per (k, c):
// thread t sums the (n, split) pairs t, t + kParamSumThreads, ... in double, then a fixed tree (warps, then the
// warps' sums in order). (One warp per (k, c) takes 36 us for L2-19's 64 channels of 2176 pairs each on the H100:
// too few loads in flight.)
constexpr int kParamSumThreads = 256;

__global__ void __launch_bounds__(kParamSumThreads)
param_sums_kernel(const float* __restrict__ partial, int64_t blocks, int splits, int64_t batch, int64_t channels,
                  float* __restrict__ out) {
  constexpr int kWarps = kParamSumThreads / kWarpSize;
  __shared__ double per_warp[kWarps];
  const int64_t w = blockIdx.x;  // (k, c)
  const int64_t k = w / channels, c = w - k * channels;
  const float* p = partial + k * blocks;
  double s = 0.0;
  for (int64_t j = threadIdx.x; j < batch * splits; j += kParamSumThreads) {
    const int64_t n = j / splits, split = j - n * splits;
    s += double(p[(n * channels + c) * splits + split]);
  }
  s = warp_sum(s);
  if (threadIdx.x % kWarpSize == 0) per_warp[threadIdx.x / kWarpSize] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    double total = 0.0;
    for (int i = 0; i < kWarps; ++i) total += per_warp[i];
    out[w] = static_cast<float>(total);
  }
}

}  // namespace region_twopass
}  // namespace kgen
