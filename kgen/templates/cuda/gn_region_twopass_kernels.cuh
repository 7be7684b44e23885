// ---- gn_region_twopass_kernels: the two-pass kernels, forward and backward (design: gn_region_twopass.cuh) ----
namespace kgen {
namespace region_twopass {

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
  const int64_t offset = b.plane * shape.plane + b.begin;
  const ChunkSpan<W> span(offset, b.count);
  const float* in = x + offset + span.head;
  const int64_t packs = span.packs;
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
  for (int64_t k = threadIdx.x; k < span.ends(); k += kBlock)
    accumulate1(acc, pro.value(__ldg(x + offset + span.end_at(k))) - pilot);
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
  const ChunkSpan<W> span(offset, b.count);
  const float* in[1] = {x + offset + span.head};
  if constexpr (R == ReduceKind::kNone) {
    float* out = v_out + offset + span.head;
    sweep<kBlock, W, 1>(in, span.packs, [&](int64_t i, const Pack<W>(&v)[1]) {
      Pack<W> r;
#pragma unroll
      for (int j = 0; j < W; ++j) r.v[j] = ch.value(v[0].v[j]);
      store_pack<W>(out, i, r);
    });
    for (int64_t k = threadIdx.x; k < span.ends(); k += kBlock) {
      const int64_t e = offset + span.end_at(k);
      v_out[e] = ch.value(__ldg(x + e));
    }
  } else {
    using Red = Reducer<O>;
    auto acc = Red::empty();
    // position in the reduction's order: within the plane (kPlane) or the sample (kSample)
    const int pos0 = static_cast<int>((R == ReduceKind::kSample ? b.c * shape.plane : 0) + b.begin);
    const int body0 = pos0 + static_cast<int>(span.head);
    sweep<kBlock, W, 1>(in, span.packs, [&](int64_t i, const Pack<W>(&v)[1]) {
#pragma unroll
      for (int j = 0; j < W; ++j) Red::push(acc, ch.value(v[0].v[j]), body0 + static_cast<int>(i) * W + j);
    });
    for (int64_t k = threadIdx.x; k < span.ends(); k += kBlock) {
      const int64_t e = span.end_at(k);
      Red::push(acc, ch.value(__ldg(x + offset + e)), pos0 + static_cast<int>(e));
    }
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
          v[k] = k0 + k < tile ? load_pack<W>(tile_column + int64_t(k0 + k) * plane, 0) : Pack<W>{};
        }
        if constexpr (O == ReduceOp::kLogSumExp) {
          // the kLoads channels' values of each position folded at once (Reducer::push_many); channels past
          // the tile are -inf, which add nothing
          float vals[W][kLoads];
#pragma unroll
          for (int k = 0; k < kLoads; ++k) {
            const bool in_tile = k0 + k < tile;
            const Ch ch = staged[in_tile ? k0 + k : 0];
#pragma unroll
            for (int j = 0; j < W; ++j) vals[j][k] = in_tile ? ch.value(v[k].v[j]) : -INFINITY;
          }
#pragma unroll
          for (int j = 0; j < W; ++j) Red::push_many(acc[j], vals[j]);
        } else {
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

// The reduction's backward at one element: its v's gradient dv, element-local given the forward's saved out
// and aux (the list in gn_region_twopass.cuh). Made once per plane; dv() per element, at position s of its
// plane, with its values of the streams backward_streams<R, O> names (kNone: dout; kChannel: dout, then out
// or aux). Shared by the two-pass sweeps and the cluster backward (gn_region_cluster.cuh).
template <ReduceKind R, ReduceOp O>
struct Upstream {
  float g = 0.f, ref = 0.f;  // kPlane, kSample: the output's gradient (over the count for kMean) and value
  int arg = 0, base = 0;     // ... the saved extreme's position; the plane's first position in the output's order
  int64_t out_plane = 0;     // kWindow: the plane's first pooled output

  __device__ __forceinline__ Upstream(const RegionShape& shape, const Geometry& geo, int64_t plane, int64_t n,
                                      int64_t c, const float* __restrict__ dout, const float* __restrict__ out,
                                      const int* __restrict__ aux) {
    if constexpr (R == ReduceKind::kPlane || R == ReduceKind::kSample) {
      const int64_t o = R == ReduceKind::kPlane ? plane : n;
      g = dout[o];
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
                                     const float* __restrict__ dout, const float* __restrict__ out,
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
      // (Measured on the H100: this per-element form beat sharing (d, h) per 16-byte pack, 3.06 against
      // 4.13 ms for the whole backward at (128, 32, 254, 254), 2x2 windows.)
      const uint32_t d = geo.div_hw.div(s);
      const uint32_t rem = s - d * static_cast<uint32_t>(geo.size[1] * geo.size[2]);
      const uint32_t h = geo.div_w.div(rem);
      const uint32_t w = rem - h * static_cast<uint32_t>(geo.size[2]);
      const uint32_t pd = geo.div_window[0].div(d), ph = geo.div_window[1].div(h), pw = geo.div_window[2].div(w);
      if (pd < geo.pooled[0] && ph < geo.pooled[1] && pw < geo.pooled[2]) {
        const int64_t o = out_plane + (int64_t(pd) * geo.pooled[1] + ph) * geo.pooled[2] + pw;
        const float gw = dout[o];
        if constexpr (O == ReduceOp::kSum) dv = gw;
        if constexpr (O == ReduceOp::kMean) dv = gw / static_cast<float>(geo.window_elems);
        if constexpr (kHasAux<O>) {
          const uint32_t kd = geo.window[0], kh = geo.window[1], kw = geo.window[2];
          const int within = static_cast<int>(((d - pd * kd) * kh + (h - ph * kh)) * kw + (w - pw * kw));
          dv = within == aux[o] ? gw : 0.f;
        }
        if constexpr (O == ReduceOp::kLogSumExp) dv = gw * __expf(ch.epi.value(y, z, xv) - out[o]);
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

// One value's backward, given everything but its own stream values: pass A's sums (dy, dy (z - mean) and the
// epilogue's parameter gradients) and pass B's dx. Shared by the sweeps below and the pipelined backward
// (gn_region_twopass_pipeline.cuh); v[k].v[j] is stream k's value j of one pack.
template <class Pro, class Epi, ReduceKind R, ReduceOp O>
struct ValueBackward {
  const Channel<Pro, Epi>& ch;
  const Upstream<R, O>& up;
  const RegionShape& shape;
  const Geometry& geo;
  int64_t c;
  const float* __restrict__ dout;
  const float* __restrict__ out;
  const int* __restrict__ aux;

  // s: the value's position in its plane
  template <int W, int N>
  __device__ __forceinline__ void sums(const Pack<W> (&v)[N], int j, uint32_t s, float& sum_dy, float& sum_dy_zc,
                                       float (&dparam)[kMaxParams]) const {
    const float xv = v[0].v[j];
    const float z = ch.pro.value(xv);
    const float zc = centered(z, ch.mean);
    const float y = zc * ch.scale + ch.shift;
    const float dv = up.dv(ch, xv, z, y, s, stream_at<1>(v, j), stream_at<2>(v, j), c, shape, geo, dout, out, aux);
    float dy = 0.f, dz_direct = 0.f, dx_direct = 0.f;
    ch.epi.backward(y, z, xv, dv, dy, dz_direct, dx_direct, dparam);
    sum_dy += dy;
    sum_dy_zc += dy * zc;
  }

  // bc: the slice's coefficients (B, C); adds the prologue's parameter gradients into dparam
  template <int W, int N>
  __device__ __forceinline__ float dx(const Pack<W> (&v)[N], int j, uint32_t s, float2 bc,
                                      float (&dparam)[kMaxParams]) const {
    const float xv = v[0].v[j];
    const float z = ch.pro.value(xv);
    const float zc = centered(z, ch.mean);
    const float y = zc * ch.scale + ch.shift;
    const float dv = up.dv(ch, xv, z, y, s, stream_at<1>(v, j), stream_at<2>(v, j), c, shape, geo, dout, out, aux);
    float dy = 0.f, dz_direct = 0.f, dx_direct = 0.f;
    float discard[kMaxParams] = {0.f, 0.f, 0.f, 0.f};
    ch.epi.backward(y, z, xv, dv, dy, dz_direct, dx_direct, discard);
    (void)discard;
    const float dz = (ch.scale * dy + bc.x * zc + bc.y) + dz_direct;
    return ch.pro.backward(xv, dz, dparam) + dx_direct;
  }
};

// The streams a backward sweep reads at its chunk's values, x first (backward_streams<R, O> more).
template <ReduceKind R, ReduceOp O, int kStreams>
__device__ __forceinline__ void backward_stream_bases(const float* (&in)[kStreams], const float* __restrict__ x,
                                                      const float* __restrict__ dout, const float* __restrict__ out,
                                                      const int* __restrict__ aux, const RegionShape& shape,
                                                      const PlaneChunk& b) {
  in[0] = x + b.plane * shape.plane + b.begin;
  if constexpr (R == ReduceKind::kNone) in[1] = dout + b.plane * shape.plane + b.begin;
  if constexpr (R == ReduceKind::kChannel) {
    const int64_t at = b.n * shape.plane + b.begin;
    in[1] = dout + at;
    if constexpr (O == ReduceOp::kLogSumExp) in[2] = out + at;
    if constexpr (kHasAux<O>) in[2] = reinterpret_cast<const float*>(aux) + at;
  }
}

// Warps an SM the backward sweeps' registers are capped for: at 256 threads, 80 registers. (H100, both sweeps
// in one run each, benchmarks/h100/s15/run3: L2-92's log-sum-exp over channels, 91 and 86 registers uncapped,
// 962 -> 782 us; L2-85 (68-72) and L2-83 (63-72) unchanged. A cap for 32 warps, 64 registers: L2-85 998 us, but
// L2-92 spills, 1196 us.)
constexpr int kSweepBackwardWarps = 24;

// One sweep over (plane, chunk) blocks, two flavours:
//   kApply = false: block sums of dy, dy (z - mean) -> gn_partial[block]; of the epilogue's parameter
//                   gradients -> param_partial[k * blocks + block]
//   kApply = true:  dx written; block sums of the prologue's parameter gradients -> param_partial
template <class Pro, class Epi, ReduceKind R, ReduceOp O, int kBlock, bool kVec, bool kApply>
__global__ void __launch_bounds__(kBlock, min_blocks_for_warps(kSweepBackwardWarps, kBlock))
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
  const Upstream<R, O> up(shape, geo, b.plane, b.n, b.c, dout, out, aux);
  const ValueBackward<Pro, Epi, R, O> value{ch, up, shape, geo, b.c, dout, out, aux};
  const float* in[kStreams];
  backward_stream_bases<R, O>(in, x, dout, out, aux, shape, b);

  float sums[kSums > 0 ? kSums : 1];
#pragma unroll
  for (int k = 0; k < kSums; ++k) sums[k] = 0.f;
  float dparam[kMaxParams] = {0.f, 0.f, 0.f, 0.f};  // this thread's running parameter gradients
  float* dst = kApply ? dx + b.plane * shape.plane + b.begin : nullptr;

  sweep<kBlock, W, kStreams>(in, b.count / W, [&](int64_t i, const Pack<W>(&v)[kStreams]) {
    Pack<W> r;
#pragma unroll
    for (int j = 0; j < W; ++j) {
      const uint32_t s = static_cast<uint32_t>(b.begin + i * W + j);
      if constexpr (kApply) {
        r.v[j] = value.dx(v, j, s, bc, dparam);
      } else {
        value.sums(v, j, s, sums[0], sums[1], dparam);
      }
    }
    if constexpr (kApply) store_pack<W>(dst, i, r);
  });

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

// out[k][c] = sum over (n, split) of partial[k][(n C + c) splits + split], a block of kParamSumThreads per (k, c):
// thread t sums the (n, split) pairs t, t + kParamSumThreads, ... in double, then a fixed tree (warps, then the
// warps' sums in order). (One warp per (k, c) took 36 us for L2-19's 64 channels of 2176 pairs each on the H100:
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
