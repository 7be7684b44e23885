// ---- groupnorm/twopass/forward.cuh: the two-pass forward kernels (design: groupnorm/twopass/twopass.cuh) ----
namespace kgen {
namespace region_twopass {

// ---------------------------------------------------------------- forward: statistics

// The moments of z - pilot over one chunk of one plane, pilot = z of the group's first value (the same
// for every block of the group; the block of the group's first chunk stores it for stats_finalize).
// Full rounds fold four values at once (accumulate4), also on the scalar path. T: x's storage type.
// kTeam threads take one (plane, chunk) item: the block (kTeam = kBlock), or a warp of it (kTeam = 32, for planes
// of a few hundred values, which would leave most of a block idle: team_items).
template <class Pro, int kBlock, bool kVec, class T, int kTeam = kBlock>
__global__ void __launch_bounds__(kBlock)
stats_partial_kernel(const T* __restrict__ x, RegionParams params, RegionShape shape, SplitPlan plan,
                     Moments* __restrict__ partial, float* __restrict__ pilots, int64_t items) {
  static_assert(kUnroll == 4, "full rounds fold kUnroll scalar values with accumulate4");
  static_assert(kTeam == kBlock || kTeam == kWarpSize, "a team is the block or a warp");
  constexpr int W = kVec ? 4 : 1;
  const unsigned item = team_item<kBlock, kTeam>();
  if (item >= items) return;  // team-uniform: whole warps leave (no block barrier where kTeam is a warp)
  const int first = static_cast<int>(threadIdx.x % kTeam);
  const PlaneChunk b(shape, plan, item);
  const int64_t cpg = shape.channels_per_group();
  const int64_t k = b.c % cpg;  // channel within the group
  const float pilot = Pro::at(params, b.c - k).value(load1(x + (b.plane - k) * shape.plane));
  if (k == 0 && b.begin == 0 && first == 0) pilots[b.plane / cpg] = pilot;
  const Pro pro = Pro::at(params, b.c);
  const int64_t offset = b.plane * shape.plane + b.begin;
  const ChunkSpan<W> span(offset, b.count);
  const T* in = x + offset + span.head;
  const int64_t packs = span.packs;
  Moments acc{0.f, 0.f, 0.f};
  for (int64_t base = first; base < packs; base += int64_t(kTeam) * kUnroll) {
    Pack<W> v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t i = base + int64_t(u) * kTeam;
      if (i < packs) v[u] = load_pack<W>(in, i);
    }
    if (base + int64_t(kUnroll - 1) * kTeam < packs) {
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
        if (base + int64_t(u) * kTeam < packs) {
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
  for (int k = first; k < span.ends(); k += kTeam)
    accumulate1(acc, pro.value(load1(x + offset + span.end_at(k))) - pilot);
  if constexpr (kTeam == kBlock) {
    acc = block_combine<kBlock>(acc);
  } else {
    acc = warp_combine(acc);
  }
  if (first == 0) partial[item] = acc;
}

// One warp per (sample, group): its chunks are contiguous in `partial` (planes are), per_row of them.
template <int kBlock>
__global__ void __launch_bounds__(kBlock)
stats_finalize_kernel(const Moments* __restrict__ partial, int per_row, int64_t rows,
                      const float* __restrict__ pilots, double eps, int rounding, float2* __restrict__ mean,
                      float* __restrict__ rstd) {
  const int64_t row = (int64_t(blockIdx.x) * kBlock + threadIdx.x) / kWarpSize;
  if (row >= rows) return;  // warp-uniform
  const MomentsD m = warp_merge(per_row, [&](int s) { return partial[row * per_row + s]; });
  if (threadIdx.x % kWarpSize == 0) finish_statistics(m, double(pilots[row]), eps, rounding, mean[row], rstd[row]);
}

// ---------------------------------------------------------------- forward: apply

// kNone: v, written. kPlane / kSample: one reduction partial per block. T: x's and v's storage type.
// kTeam: as stats_partial_kernel's.
template <class Pro, class Epi, ReduceKind R, ReduceOp O, int kBlock, bool kVec, class T, int kTeam = kBlock>
__global__ void __launch_bounds__(kBlock)
plane_forward_kernel(const T* __restrict__ x, RegionParams params, RegionShape shape, SplitPlan plan,
                     const float2* __restrict__ mean, const float* __restrict__ rstd,
                     const float* __restrict__ gamma, const float* __restrict__ beta, T* __restrict__ v_out,
                     typename Reducer<O>::T* __restrict__ partial, int64_t items) {
  static_assert(kTeam == kBlock || kTeam == kWarpSize, "a team is the block or a warp");
  constexpr int W = kVec ? 4 : 1;
  const unsigned item = team_item<kBlock, kTeam>();
  if (item >= items) return;  // team-uniform, as in stats_partial_kernel
  const int first = static_cast<int>(threadIdx.x % kTeam);
  const PlaneChunk b(shape, plan, item);
  const auto ch = load_channel<Pro, Epi>(params, b.c, b.row, mean, rstd, gamma, beta);
  const int64_t offset = b.plane * shape.plane + b.begin;
  const ChunkSpan<W> span(offset, b.count);
  const T* in[1] = {x + offset + span.head};
  if constexpr (R == ReduceKind::kNone) {
    T* out = v_out + offset + span.head;
    sweep<kTeam, W, 1>(in, span.packs, [&](int64_t i, const Pack<W>(&v)[1]) {
      Pack<W> r;
#pragma unroll
      for (int j = 0; j < W; ++j) r.v[j] = ch.value(v[0].v[j]);
      store_pack<W>(out, i, r);
    }, first);
    for (int k = first; k < span.ends(); k += kTeam) {
      const int64_t e = offset + span.end_at(k);
      store1(v_out + e, ch.value(load1(x + e)));
    }
  } else {
    using Red = Reducer<O>;
    auto acc = Red::empty();
    // position in the reduction's order: within the plane (kPlane) or the sample (kSample)
    const int pos0 = static_cast<int>((R == ReduceKind::kSample ? b.c * shape.plane : 0) + b.begin);
    const int body0 = pos0 + static_cast<int>(span.head);
    sweep<kTeam, W, 1>(in, span.packs, [&](int64_t i, const Pack<W>(&v)[1]) {
#pragma unroll
      for (int j = 0; j < W; ++j) Red::push(acc, ch.value(v[0].v[j]), body0 + static_cast<int>(i) * W + j);
    }, first);
    for (int k = first; k < span.ends(); k += kTeam) {
      const int64_t e = span.end_at(k);
      Red::push(acc, ch.value(load1(x + offset + e)), pos0 + static_cast<int>(e));
    }
    if constexpr (kTeam == kBlock) {
      acc = block_reduce<kBlock, Red>(acc);
    } else {
      acc = warp_reduce<Red>(acc);
    }
    if (first == 0) partial[item] = acc;
  }
}

// kNone over planes of fewer than kFlatPlaneValues values (rows of one value a plane: a faithful region before a
// Linear): the apply as a flat element-wise map, a thread a plane, consecutive threads consecutive planes (x, out,
// gamma and beta read and written coalesced), each plane's Channel loaded by its thread. The plane sweeps gave every
// plane a warp at least, 31 of its 32 lanes idle at one value a plane (H200, 8192 x 4096 rows: 12.4 ms for 0.27 GB).
constexpr int64_t kFlatPlaneValues = 32;

template <class Pro, class Epi, int kBlock, class T>
__global__ void __launch_bounds__(kBlock)
flat_forward_kernel(const T* __restrict__ x, RegionParams params, RegionShape shape, FastDiv by_channels,
                    FastDiv by_group_channels, const float2* __restrict__ mean, const float* __restrict__ rstd,
                    const float* __restrict__ gamma, const float* __restrict__ beta, T* __restrict__ out) {
  const uint32_t planes = static_cast<uint32_t>(shape.batch * shape.channels);  // < 2^31 (check_grid)
  const uint32_t stride = gridDim.x * kBlock;
  for (uint32_t p = blockIdx.x * kBlock + threadIdx.x; p < planes; p += stride) {
    const uint32_t n = by_channels.div(p), c = p - n * static_cast<uint32_t>(shape.channels);
    const int64_t row = int64_t(n) * shape.groups + by_group_channels.div(c);
    const auto ch = load_channel<Pro, Epi>(params, c, row, mean, rstd, gamma, beta);
    const int64_t offset = int64_t(p) * shape.plane;
    for (int64_t k = 0; k < shape.plane; ++k) store1(out + offset + k, ch.value(load1(x + offset + k)));
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

// kChannel: out (N, S), float32. Block b covers kBlock * W consecutive positions of sample b / blocks_per_sample;
// each thread walks the C planes at its W positions, kLoads planes' loads in flight at a time. T: x's storage type.
template <class Pro, class Epi, ReduceOp O, int kBlock, int W, class T>
__global__ void __launch_bounds__(kBlock)
channel_forward_kernel(const T* __restrict__ x, RegionParams params, RegionShape shape,
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
  const T* column = x + n * channels * plane + pack * W;
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
      const T* tile_column = column + c0 * plane;
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
// in (d, h, w) order with 4 loads in flight; aux = the extreme's flat index within the window, and where
// extreme_x is given (saves_extreme_x), x at that index there (float32: x's value exactly). T: x's storage type.
// (Measured on the H100 at (128, 32, 254, 254), 2x2 windows: faster than 4 outputs per thread with 16 loads
// in flight, 1.49 against 1.75 ms for the whole forward: that variant needs 100 registers.)
template <class Pro, class Epi, ReduceOp O, int kBlock, class T>
__global__ void __launch_bounds__(kBlock)
window_forward_kernel(const T* __restrict__ x, RegionParams params, RegionShape shape, Geometry geo,
                      const float2* __restrict__ mean, const float* __restrict__ rstd,
                      const float* __restrict__ gamma, const float* __restrict__ beta, float* __restrict__ out,
                      int* __restrict__ aux, float* __restrict__ extreme_x, int64_t outs) {
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
  const T* base = x + int64_t(plane) * shape.plane + (int64_t(pd) * geo.window[0] * H + int64_t(ph) * kh) * Wd +
                      int64_t(pw) * kw;
  auto acc = Red::empty();
  float x_at_extreme = 0.f;
  int a = 0, bh = 0, e = 0;  // window coordinates of the next value to load
  for (int w0 = 0; w0 < geo.window_elems; w0 += 4) {
    float v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      if (w0 + u < geo.window_elems) {
        v[u] = load1(base + (int64_t(a) * H + bh) * Wd + e);
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
      if (w0 + u < geo.window_elems) {
        Red::push(acc, ch.value(v[u]), w0 + u);
        if constexpr (kHasAux<O>) x_at_extreme = acc.pos == w0 + u ? v[u] : x_at_extreme;  // it just took the lead
      }
    }
  }
  out[t] = Red::result(acc, geo.window_elems);
  if constexpr (kHasAux<O>) {
    aux[t] = acc.pos;
    if (extreme_x != nullptr) extreme_x[t] = x_at_extreme;
  }
}

}  // namespace region_twopass
}  // namespace kgen
