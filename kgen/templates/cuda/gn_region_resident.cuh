// ---- gn_region_resident: a fused GroupNorm region whose units fit on chip, one kernel each way ----
//
//   x --Pro--> z --GroupNorm(G, eps, affine?)--> y --Epi--> v --reduction R/O--> out     (gn_region_common.cuh)
//
// The UNIT of work is what one set of statistics or one output needs whole: a (sample, group) slice of
// D = (C / G) * plane contiguous values for kNone, kPlane and kWindow; a whole sample row of C * plane
// values (all G slices) for kChannel and kSample, whose outputs cross groups. A block takes a TILE of M
// consecutive slices (M = G, one sample, for the sample kinds; for the others M is chosen so that a tile
// holds about 16 values per thread: hundreds of 16-value slices, or one slice of 50 k values), copies it
// into shared memory once (cp.async, 16 bytes where D % 4 == 0), and from there works on chip. The forward
// grid is persistent (as many blocks as fit on the GPU, each taking tiles b, b + grid, ...) and, where two
// tiles take at most 96 KB, double-buffered: the next tile's copy is in flight while this one is worked on.
// Where few blocks fit on an SM (registers), the forward takes larger tiles, up to 64 values per thread, so
// that an SM keeps kBytesInFlight of copies moving. Tiles never split a slice: the results do not depend
// on the tile size.
//
// Forward (1 read of x, 1 write of out):
//   mean      per slice: sum of z = Pro(x) in double (z overwrites x in place), team of tpg threads
//   variance  per slice: sum of (z - mean)^2 and of (z - mean) in double, the corrected two-pass formula
//             (exact statistics: the data is on chip); mean kept as a (hi, lo) float pair as groupnorm.cuh
//   apply     per channel: y = (z - mean) rstd gamma + beta, v = Epi(y, z, x); kNone writes v out, the
//             other kinds write v back in place and then reduce it (a team of tpo threads per output,
//             natural order inside a thread, a fixed shuffle tree across threads: the FIRST extreme wins
//             ties, as PyTorch's max/min with dim and MaxPool).
// An epilogue that reads x itself (a residual of x) gets it from global memory (L2: the tile was just
// read) when the prologue is not the identity, since the tile then holds z; the compiler drops that load
// for every epilogue that does not use x.
//
// Backward (1 read of x and of dout for kNone; dout, out, aux of the other kinds are gathered per output):
//   pass A    per channel: recompute z, y, v; dv from the reduction's backward; Epi::backward -> dy, and
//             per channel sum dy, sum dy xhat, the epilogue's parameter gradients
//   groups    per slice: A = sum gamma dy, B = sum gamma dy xhat from the channel sums (double); -A/D, -B/D
//   pass B    per channel: recompute; dz = rstd gamma dy - rstd A / D - xhat rstd B / D + the epilogue's
//             direct dz; dx = Pro::backward(x, dz) + the epilogue's direct dx; the prologue's parameter
//             gradients per channel
// Per-(sample, channel) gradients of gamma, beta and every parameter go to a (N, K, C) buffer, K = 2 + Kp
// + Ke, summed over the batch by column_sums (groupnorm.cuh): a fixed order, no atomics anywhere, so
// every result is bitwise reproducible.
//
// Team sizes: the statistics passes read 16-byte packs, a team of tpg threads per slice (tpg a power of
// two dividing the packs of a slice where that leaves no thread more than 8 packs: then the threads of a
// warp touch distinct banks), or the whole block for slices of more than 1024 values; the per-channel
// passes take tpc threads per channel (32 for planes of 64 values and more); Linear outputs (plane == 1,
// D % 4 == 0) take a flat path instead: 4 channels per thread at a time, 16-byte shared, gamma / beta and
// output accesses, the loads of several such packs issued before the first is used.
// Every reduction across threads is an xor-butterfly over a fixed width (and over the block's warps in
// warp order): every thread ends with the same bits.
//
// region_resident_fits<R>(x, groups) says whether one unit (and a tile of it) fits in the shared memory a
// block may opt in to on x's device (queried once per device), forward and backward. On an H100 (227 KB):
// about 56 k values per unit forward; backward 4 bytes a value (x), + 4 for kNone (dout), + 8 per channel
// (sum dy, sum dy xhat): e.g. 28 k values for kNone with planes, 14 k for kNone with plane == 1.
#include <atomic>
#include <map>
#include <mutex>
#include <type_traits>
#include <utility>

namespace kgen {

namespace resident_detail {

// q = n / d for 0 <= n, d < 2^31, by a multiply and a shift (PyTorch's IntDivider).
struct FastDiv {
  uint32_t divisor = 1;
  uint32_t magic = 1;
  int shift = 0;

  FastDiv() = default;
  explicit FastDiv(int64_t d) {
    divisor = static_cast<uint32_t>(d < 1 ? 1 : d);
    shift = 0;
    while (shift < 31 && (uint32_t(1) << shift) < divisor) ++shift;
    magic = static_cast<uint32_t>(((uint64_t(1) << 32) * ((uint64_t(1) << shift) - divisor)) / divisor + 1);
  }
  __device__ __forceinline__ int div(int n) const {
    return static_cast<int>((__umulhi(static_cast<uint32_t>(n), magic) + static_cast<uint32_t>(n)) >> shift);
  }
};

}  // namespace resident_detail

// Everything a resident kernel needs to know about the shape and the mapping of threads; one per
// direction (the backward tile may hold fewer slices: it keeps more per value).
struct ResidentPlan {
  int64_t batch;
  int64_t channels;
  int64_t groups;
  int64_t units;       // batch * groups slices
  int64_t tiles;       // blocks
  int cpg;             // channels per group
  int plane;           // prod(spatial)
  int slice;           // D = cpg * plane
  int tile_groups;     // M slices per tile (G for the sample kinds)
  int stages;          // forward: tiles held at once (2: the next one loads while this one is worked on)
  int64_t grid;        // forward: blocks of the persistent grid
  int tpg, rounds_g;   // statistics: threads per slice (kBlock: the block), rounds over the tile's slices
  int tpc, rounds_c;   // per-channel passes: threads per channel, rounds over the tile's channels
  int tpo, rounds_o;   // forward reduction: threads per output, rounds over the tile's outputs
  int tpq, rounds_q;   // backward group sums: threads per slice over its channels, rounds
  int size[3];         // spatial sizes, leading 1s (innermost last)
  int window[3];       // kWindow kernel (== stride) per dim, leading 1s
  int pooled[3];       // kWindow outputs per dim
  int pooled_plane;
  int window_elems;
  resident_detail::FastDiv div_plane, div_channels, div_cpg, div_groups, div_pooled_plane;
  int64_t smem_bytes;  // dynamic shared memory of one block
  bool affine_vec;     // gamma and beta (where given) allow 16-byte loads
  bool feasible;
};

namespace resident_detail {

constexpr int kValuesPerThread = 16;  // a tile's target size, in values per thread (the forward may raise it)
constexpr int kMaxValuesPerThread = 64;
// The forward keeps about one tile copy per block in flight while the block works on the other, so an SM
// moves (blocks per SM) x (tile bytes) at a time. Below this many bytes the copies cannot cover DRAM latency
// (~25 GB/s per H100 SM x 1-2 us under load): the forward then takes larger tiles, while they stay
// double-buffered. (H100, L2-37: 16 KB tiles, 2 blocks per SM by registers, 0.88 TB/s.)
constexpr int64_t kBytesInFlight = 48 * 1024;
constexpr int kReservedSmem = 1024;   // static shared memory of the kernels (reduction scratch) and slack
// Forward tiles are double-buffered while two of them take at most this much shared memory (beyond, a tile
// alone fills a good part of an SM, and other blocks' copies overlap its work instead).
constexpr int64_t kDoubleBufferLimit = 96 * 1024;

__host__ __device__ __forceinline__ int64_t align4(int64_t floats) { return (floats + 3) / 4 * 4; }

// Shared memory, in floats. Forward: `stages` tiles | mean (double) | mean (hi, lo) | rstd.
__host__ __device__ __forceinline__ int64_t forward_smem_floats(int64_t groups_in_tile, int64_t slice, int stages = 1) {
  return stages * align4(groups_in_tile * slice) + 4 * groups_in_tile + align4(groups_in_tile);
}
// Backward: x tile | dout tile (kNone) | sum dy, sum dy xhat per tile channel | mean (hi, lo) | rstd | cA | cB.
__host__ __device__ __forceinline__ int64_t backward_smem_floats(int64_t groups_in_tile, int64_t slice, int64_t cpg,
                                                                 bool dout_tile) {
  return align4(groups_in_tile * slice) * (dout_tile ? 2 : 1) + 2 * align4(groups_in_tile * cpg) +
         5 * groups_in_tile;
}

// ---- warp and block reductions over a team of `width` threads (a power of two up to 32, or kBlock)

struct Sum2 {
  double a, b;
};
struct Extreme {  // value and its position in the reduction's natural order
  float v;
  int i;
};

__device__ __forceinline__ double shfl_xor(double v, int o) { return __shfl_xor_sync(0xffffffffu, v, o); }
__device__ __forceinline__ float shfl_xor(float v, int o) { return __shfl_xor_sync(0xffffffffu, v, o); }
__device__ __forceinline__ Sum2 shfl_xor(Sum2 v, int o) { return Sum2{shfl_xor(v.a, o), shfl_xor(v.b, o)}; }
__device__ __forceinline__ Extreme shfl_xor(Extreme v, int o) {
  return Extreme{shfl_xor(v.v, o), __shfl_xor_sync(0xffffffffu, v.i, o)};
}

struct AddOp {
  __device__ __forceinline__ double operator()(double a, double b) const { return a + b; }
  __device__ __forceinline__ Sum2 operator()(Sum2 a, Sum2 b) const { return Sum2{a.a + b.a, a.b + b.b}; }
};

// Max with NaN winning (NaN propagates as in torch.logsumexp); symmetric.
struct MaxNanOp {
  __device__ __forceinline__ float operator()(float a, float b) const {
    return a != a ? a : (b != b ? b : fmaxf(a, b));
  }
};

// (a, ia) wins over (b, ib): NaN first (PyTorch's max/min propagate NaN), then the extreme, then the lower
// position. A strict total order for distinct positions, so the xor-butterfly gives every lane the same.
template <bool kMax>
__device__ __forceinline__ bool wins(float a, int ia, float b, int ib) {
  const bool an = a != a, bn = b != b;
  if (an || bn) return an && bn ? ia < ib : an;
  if (a == b) return ia < ib;
  return kMax ? a > b : a < b;
}

template <bool kMax>
struct ExtremeOp {
  __device__ __forceinline__ Extreme operator()(Extreme a, Extreme b) const {
    return wins<kMax>(a.v, a.i, b.v, b.i) ? a : b;
  }
};

// Every thread of the team gets the team's result, with the same bits. `width` is block-uniform; with
// width == kBlock every thread of the block must call (it synchronises).
template <int kBlock, class T, class Op>
__device__ __forceinline__ T team_allreduce(T v, int width, Op op, double2* scratch) {
  const int lanes = width < kWarpSize ? width : kWarpSize;
  for (int offset = lanes / 2; offset > 0; offset /= 2) v = op(v, shfl_xor(v, offset));
  if (width > kWarpSize) {
    static_assert(sizeof(T) <= sizeof(double2), "scratch slot too small");
    T* slot = reinterpret_cast<T*>(scratch);
    __syncthreads();  // earlier readers of the scratch are done
    if (threadIdx.x % kWarpSize == 0) slot[threadIdx.x / kWarpSize] = v;
    __syncthreads();
    v = slot[0];
#pragma unroll 1
    for (int w = 1; w < kBlock / kWarpSize; ++w) v = op(v, slot[w]);
  }
  return v;
}

// Starts the copy of `count` values (a multiple of W) into shared memory; copies_done + a barrier finish it.
template <int kBlock, int W>
__device__ __forceinline__ void copy_tile(float* smem, const float* __restrict__ gmem, int count) {
  const int packs = count / W;
  for (int i = threadIdx.x; i < packs; i += kBlock) {
    if constexpr (W == 4) {
      copy16(smem + 4 * i, gmem + 4 * int64_t(i));
    } else {
      copy4(smem + i, gmem + i);
    }
  }
}

template <int W>
__device__ __forceinline__ void load_values(const float* smem, int pack, float (&v)[W]) {
  if constexpr (W == 4) {
    const float4 f = reinterpret_cast<const float4*>(smem)[pack];
    v[0] = f.x, v[1] = f.y, v[2] = f.z, v[3] = f.w;
  } else {
    v[0] = smem[pack];
  }
}

template <int W>
__device__ __forceinline__ void store_values(float* smem, int pack, const float (&v)[W]) {
  if constexpr (W == 4) {
    reinterpret_cast<float4*>(smem)[pack] = make_float4(v[0], v[1], v[2], v[3]);
  } else {
    smem[pack] = v[0];
  }
}

// Where a tile starts: its first slice u0 = n0 G + g0, and the (sample, channel) of its channels.
template <int kGroups>
struct TileOrigin {
  int64_t u0;       // first slice
  int64_t n0;       // its sample
  int g0;           // its group
  int c0;           // its first channel
  int slices;       // slices in this tile (the last tile may hold fewer)

  __device__ __forceinline__ TileOrigin(const ResidentPlan& plan, int64_t tile) {
    const int64_t groups = kGroups > 0 ? int64_t(kGroups) : plan.groups;
    u0 = tile * plan.tile_groups;
    n0 = u0 / groups;
    g0 = static_cast<int>(u0 - n0 * groups);
    c0 = g0 * plan.cpg;
    slices = static_cast<int>(min(int64_t(plan.tile_groups), plan.units - u0));
  }
  // Global channel of the tile's first channel of slice gl, as an index into the per-channel parameters.
  __device__ __forceinline__ int slice_channel(const ResidentPlan& plan, int gl) const {
    int g = g0 + gl;
    if constexpr (kGroups > 0) {
      g %= kGroups;
    } else {
      g -= plan.div_groups.div(g) * static_cast<int>(plan.groups);
    }
    return g * plan.cpg;
  }
  // (sample, channel) of the tile's channel tc.
  __device__ __forceinline__ void channel(const ResidentPlan& plan, int tc, int64_t& n, int& c) const {
    const int t = c0 + tc;
    const int q = plan.div_channels.div(t);
    c = t - q * static_cast<int>(plan.channels);
    n = n0 + q;
  }
};

__device__ __forceinline__ float affine_weight(const float* __restrict__ gamma, int c) {
  return gamma != nullptr ? __ldg(gamma + c) : 1.f;
}
__device__ __forceinline__ float affine_bias(const float* __restrict__ beta, int c) {
  return beta != nullptr ? __ldg(beta + c) : 0.f;
}

// gamma / beta of channels c .. c + 3 (c % 4 == 0), or `value` x 4 without affine.
__device__ __forceinline__ void load_affine4(const float* __restrict__ p, int c, bool vec, float value,
                                             float (&out)[4]) {
  if (p == nullptr) {
    out[0] = out[1] = out[2] = out[3] = value;
  } else if (vec) {
    const float4 f = __ldg(reinterpret_cast<const float4*>(p + c));
    out[0] = f.x, out[1] = f.y, out[2] = f.z, out[3] = f.w;
  } else {
#pragma unroll
    for (int e = 0; e < 4; ++e) out[e] = __ldg(p + c + e);
  }
}

__device__ __forceinline__ void split4(const float4& f, float (&v)[4]) {
  v[0] = f.x, v[1] = f.y, v[2] = f.z, v[3] = f.w;
}
__device__ __forceinline__ float4 join4(const float (&v)[4]) { return make_float4(v[0], v[1], v[2], v[3]); }

// Packs of 4 channels a thread takes together in the flat (plane == 1) per-channel passes.
constexpr int kFlatBatch = 4;
constexpr int kFlatBatchBack = 2;

// Threads of one team and the team's index, for a team width of `width` threads (kBlock: one team).
template <int kBlock>
struct Team {
  int index, lane, count;
  __device__ __forceinline__ explicit Team(int width) {
    index = threadIdx.x / width;
    lane = threadIdx.x % width;
    count = kBlock / width;
  }
};

}  // namespace resident_detail

// ---------------------------------------------------------------- forward

// One tile, already in shared memory at `tile`: statistics, normalise, epilogue, reduction, out.
template <class Pro, class Epi, ReduceKind R, ReduceOp O, int kBlock, int kGroups, int W>
__device__ __forceinline__ void forward_tile(const resident_detail::TileOrigin<kGroups>& origin, float* tile,
                                             double* slice_mean, float2* slice_mean2, float* slice_rstd,
                                             double2* scratch,
                                             const float* __restrict__ x, const float* __restrict__ gamma,
                                             const float* __restrict__ beta, const RegionParams& params,
                                             const ResidentPlan& plan, double eps, float* __restrict__ out,
                                             int* __restrict__ aux, float2* __restrict__ mean_out,
                                             float* __restrict__ rstd_out) {
  using namespace resident_detail;
  constexpr bool kHasPro = !std::is_same<Pro, NoPrologue>::value;
  const int D = plan.slice;
  const int S = plan.plane;
  const int slices = origin.slices;
  const int64_t offset = origin.u0 * D;
  const float* xt = x + offset;

  // ---- mean of each slice (z = Pro(x) replaces x in the tile)
  {
    const Team<kBlock> team(plan.tpg);
    const int packs = D / W;
    for (int r = 0; r < plan.rounds_g; ++r) {
      const int gl = r * team.count + team.index;
      double sum = 0.0;
      if (gl < slices) {
        float* st = tile + gl * D;
        const int cbase = origin.slice_channel(plan, gl);
        for (int q = team.lane; q < packs; q += plan.tpg) {
          float v[W];
          load_values<W>(st, q, v);
          if constexpr (kHasPro) {
            int ch = plan.div_plane.div(q * W);
            int rem = q * W - ch * S;
            Pro pro = Pro::at(params, cbase + ch);
#pragma unroll
            for (int e = 0; e < W; ++e) {
              if (e > 0 && ++rem == S) {
                rem = 0;
                pro = Pro::at(params, cbase + (++ch));
              }
              v[e] = pro.value(v[e]);
            }
            store_values<W>(st, q, v);
          }
#pragma unroll
          for (int e = 0; e < W; ++e) sum += double(v[e]);
        }
      }
      sum = team_allreduce<kBlock>(sum, plan.tpg, AddOp{}, scratch);
      if (gl < slices && team.lane == 0) slice_mean[gl] = sum / double(D);
    }
  }
  __syncthreads();

  // ---- variance around the exact mean (corrected two-pass), rstd; statistics out
  {
    const Team<kBlock> team(plan.tpg);
    const int packs = D / W;
    for (int r = 0; r < plan.rounds_g; ++r) {
      const int gl = r * team.count + team.index;
      Sum2 s{0.0, 0.0};
      double mu = 0.0;
      if (gl < slices) {
        const float* st = tile + gl * D;
        mu = slice_mean[gl];
        for (int q = team.lane; q < packs; q += plan.tpg) {
          float v[W];
          load_values<W>(st, q, v);
#pragma unroll
          for (int e = 0; e < W; ++e) {
            const double d = double(v[e]) - mu;
            s.a += d;
            s.b += d * d;
          }
        }
      }
      s = team_allreduce<kBlock>(s, plan.tpg, AddOp{}, scratch);
      if (gl < slices && team.lane == 0) {
        const double var = fmax((s.b - s.a * s.a / double(D)) / double(D), 0.0);  // biased, as nn.GroupNorm
        const float hi = static_cast<float>(mu);
        const float2 m2 = make_float2(hi, static_cast<float>(mu - double(hi)));
        const float rs = static_cast<float>(1.0 / sqrt(var + eps));
        slice_mean2[gl] = m2;
        slice_rstd[gl] = rs;
        mean_out[origin.u0 + gl] = m2;
        rstd_out[origin.u0 + gl] = rs;
      }
    }
  }
  __syncthreads();

  // ---- normalise, epilogue; kNone writes v out, the others keep it in the tile
  if (W == 4 && S == 1) {
    // Linear outputs (plane == 1): a channel is one value, and a slice holds a multiple of 4 channels. Each
    // thread takes 4 channels at a time (16-byte shared, gamma, beta and output accesses), and the loads of
    // kFlatBatch such packs are issued before the first is used.
    const int packs = slices * plan.cpg / 4;
    float4* tile4 = reinterpret_cast<float4*>(tile);
    for (int base = threadIdx.x; base < packs; base += kBlock * kFlatBatch) {
      float zv[kFlatBatch][4], gv[kFlatBatch][4], bv[kFlatBatch][4];
      int cv[kFlatBatch];
#pragma unroll
      for (int u = 0; u < kFlatBatch; ++u) {
        const int p = base + u * kBlock;
        if (p < packs) {
          int64_t n;
          origin.channel(plan, 4 * p, n, cv[u]);
          split4(tile4[p], zv[u]);
          load_affine4(gamma, cv[u], plan.affine_vec, 1.f, gv[u]);
          load_affine4(beta, cv[u], plan.affine_vec, 0.f, bv[u]);
        }
      }
#pragma unroll
      for (int u = 0; u < kFlatBatch; ++u) {
        const int p = base + u * kBlock;
        if (p < packs) {
          const int gl = plan.div_cpg.div(4 * p);
          const float2 mu = slice_mean2[gl];
          const float rs = slice_rstd[gl];
          float xv[4];
          if constexpr (kHasPro) {
            split4(reinterpret_cast<const float4*>(xt)[p], xv);  // dropped unless the epilogue reads x
          } else {
#pragma unroll
            for (int e = 0; e < 4; ++e) xv[e] = zv[u][e];
          }
          float v[4];
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const Epi epi = Epi::at(params, cv[u] + e);
            const float y = centered(zv[u][e], mu) * (rs * gv[u][e]) + bv[u][e];
            v[e] = epi.value(y, zv[u][e], xv[e]);
          }
          if constexpr (R == ReduceKind::kNone) {
            reinterpret_cast<float4*>(out + offset)[p] = join4(v);
          } else {
            tile4[p] = join4(v);
          }
        }
      }
    }
  } else {
    const Team<kBlock> team(plan.tpc);
    const int tile_channels = slices * plan.cpg;
    for (int r = 0; r < plan.rounds_c; ++r) {
      const int tc = r * team.count + team.index;
      if (tc >= tile_channels) continue;
      int64_t n;
      int c;
      origin.channel(plan, tc, n, c);
      const int gl = plan.div_cpg.div(tc);
      const float2 mu = slice_mean2[gl];
      const float scale = slice_rstd[gl] * affine_weight(gamma, c);
      const float shift = affine_bias(beta, c);
      const Epi epi = Epi::at(params, c);
      const int base = tc * S;
      for (int s = team.lane; s < S; s += plan.tpc) {
        const int i = base + s;
        const float z = tile[i];
        const float xv = kHasPro ? xt[i] : z;  // dropped by the compiler unless the epilogue reads x
        const float y = centered(z, mu) * scale + shift;
        const float v = epi.value(y, z, xv);
        if constexpr (R == ReduceKind::kNone) {
          out[offset + i] = v;
        } else {
          tile[i] = v;
        }
      }
    }
  }
  if constexpr (R == ReduceKind::kNone) {
    return;
  } else {
    __syncthreads();
    // ---- the reduction: output o of this tile over its `len` values, at tile position pos(o, e)
    const int tile_channels = slices * plan.cpg;
    int nout, len;
    if constexpr (R == ReduceKind::kPlane) {
      nout = tile_channels, len = S;
    } else if constexpr (R == ReduceKind::kWindow) {
      nout = tile_channels * plan.pooled_plane, len = plan.window_elems;
    } else if constexpr (R == ReduceKind::kChannel) {
      nout = S, len = static_cast<int>(plan.channels);
    } else {
      nout = 1, len = static_cast<int>(plan.channels) * S;
    }
    auto pos = [&](int o, int e) -> int {
      if constexpr (R == ReduceKind::kPlane) {
        return o * S + e;
      } else if constexpr (R == ReduceKind::kWindow) {
        const int tc = plan.div_pooled_plane.div(o);
        const int p = o - tc * plan.pooled_plane;
        const int pw = p % plan.pooled[2], ph = (p / plan.pooled[2]) % plan.pooled[1],
                  pd = p / (plan.pooled[2] * plan.pooled[1]);
        const int ww = e % plan.window[2], wh = (e / plan.window[2]) % plan.window[1],
                  wd = e / (plan.window[2] * plan.window[1]);
        const int sp = ((pd * plan.window[0] + wd) * plan.size[1] + ph * plan.window[1] + wh) * plan.size[2] +
                       pw * plan.window[2] + ww;
        return tc * S + sp;
      } else if constexpr (R == ReduceKind::kChannel) {
        return e * S + o;
      } else {
        return e;
      }
    };
    auto out_index = [&](int o) -> int64_t {
      if constexpr (R == ReduceKind::kPlane || R == ReduceKind::kWindow) {
        return origin.u0 * plan.cpg * (R == ReduceKind::kWindow ? plan.pooled_plane : 1) + o;
      } else if constexpr (R == ReduceKind::kChannel) {
        return origin.n0 * S + o;
      } else {
        return origin.n0;
      }
    };
    const Team<kBlock> team(plan.tpo);
    for (int r = 0; r < plan.rounds_o; ++r) {
      const int o = r * team.count + team.index;
      const bool valid = o < nout;
      if constexpr (O == ReduceOp::kSum || O == ReduceOp::kMean) {
        double sum = 0.0;
        if (valid) {
          for (int e = team.lane; e < len; e += plan.tpo) sum += double(tile[pos(o, e)]);
        }
        sum = team_allreduce<kBlock>(sum, plan.tpo, AddOp{}, scratch);
        if (valid && team.lane == 0) {
          out[out_index(o)] = static_cast<float>(O == ReduceOp::kMean ? sum / double(len) : sum);
        }
      } else if constexpr (O == ReduceOp::kMax || O == ReduceOp::kMin) {
        constexpr bool kMax = O == ReduceOp::kMax;
        Extreme best{kMax ? -INFINITY : INFINITY, 0x7fffffff};
        if (valid) {
          for (int e = team.lane; e < len; e += plan.tpo) {
            const float v = tile[pos(o, e)];
            if (wins<kMax>(v, e, best.v, best.i)) best = Extreme{v, e};
          }
        }
        best = team_allreduce<kBlock>(best, plan.tpo, ExtremeOp<kMax>{}, scratch);
        if (valid && team.lane == 0) {
          out[out_index(o)] = best.v;
          aux[out_index(o)] = best.i;
        }
      } else {  // kLogSumExp: the maximum, then the sum of exp(v - max)
        float m = -INFINITY;
        if (valid) {
          for (int e = team.lane; e < len; e += plan.tpo) m = MaxNanOp{}(m, tile[pos(o, e)]);
        }
        m = team_allreduce<kBlock>(m, plan.tpo, MaxNanOp{}, scratch);
        double sum = 0.0;
        if (valid && isfinite(m)) {
          for (int e = team.lane; e < len; e += plan.tpo) sum += double(expf(tile[pos(o, e)] - m));
        }
        sum = team_allreduce<kBlock>(sum, plan.tpo, AddOp{}, scratch);
        if (valid && team.lane == 0) out[out_index(o)] = isfinite(m) ? m + static_cast<float>(log(sum)) : m;
      }
    }
  }
}

// A persistent grid: block b takes tiles b, b + grid, ... With plan.stages == 2 the next tile's copy is in
// flight (cp.async, its own commit group) while the current one is worked on.
template <class Pro, class Epi, ReduceKind R, ReduceOp O, int kBlock, int kGroups, int W>
__global__ void __launch_bounds__(kBlock)
region_resident_forward_kernel(const float* __restrict__ x, const float* __restrict__ gamma,
                               const float* __restrict__ beta, RegionParams params, ResidentPlan plan, double eps,
                               float* __restrict__ out, int* __restrict__ aux, float2* __restrict__ mean_out,
                               float* __restrict__ rstd_out) {
  using namespace resident_detail;
  extern __shared__ float4 resident_smem[];
  __shared__ double2 scratch[kBlock / kWarpSize];
  const int M = plan.tile_groups;
  const int64_t tile_floats = align4(int64_t(M) * plan.slice);
  float* buffer[2] = {reinterpret_cast<float*>(resident_smem),
                      reinterpret_cast<float*>(resident_smem) + (plan.stages == 2 ? tile_floats : 0)};
  double* slice_mean = reinterpret_cast<double*>(reinterpret_cast<float*>(resident_smem) + plan.stages * tile_floats);
  float2* slice_mean2 = reinterpret_cast<float2*>(slice_mean + M);
  float* slice_rstd = reinterpret_cast<float*>(slice_mean2 + M);

  auto start_copy = [&](int64_t tile, float* dst) {
    const TileOrigin<kGroups> o(plan, tile);
    copy_tile<kBlock, W>(dst, x + o.u0 * plan.slice, o.slices * plan.slice);
    copies_commit();
  };
  int64_t tile = blockIdx.x;
  if (tile < plan.tiles) start_copy(tile, buffer[0]);
  for (int k = 0; tile < plan.tiles; ++k, tile += gridDim.x) {
    const int64_t next = tile + gridDim.x;
    float* current = buffer[plan.stages == 2 ? (k & 1) : 0];
    if (plan.stages == 2 && next < plan.tiles) {
      start_copy(next, buffer[(k + 1) & 1]);  // that buffer's last tile was finished before the barrier below
      copies_wait<1>();  // every committed copy but the next tile's
    } else {
      copies_done();
    }
    __syncthreads();
    const TileOrigin<kGroups> origin(plan, tile);
    forward_tile<Pro, Epi, R, O, kBlock, kGroups, W>(origin, current, slice_mean, slice_mean2, slice_rstd, scratch, x,
                                                     gamma, beta, params, plan, eps, out, aux, mean_out, rstd_out);
    __syncthreads();  // the tile's buffer and the statistics are free again
    if (plan.stages == 1 && next < plan.tiles) start_copy(next, buffer[0]);
  }
}

// ---------------------------------------------------------------- backward

template <class Pro, class Epi, ReduceKind R, ReduceOp O, int kBlock, int kGroups, int W>
__global__ void __launch_bounds__(kBlock)
region_resident_backward_kernel(const float* __restrict__ dout, const float* __restrict__ x,
                                const float* __restrict__ gamma, const float* __restrict__ beta,
                                RegionParams params, ResidentPlan plan, const float2* __restrict__ mean,
                                const float* __restrict__ rstd, const float* __restrict__ out,
                                const int* __restrict__ aux, float* __restrict__ dx, float* __restrict__ partial) {
  using namespace resident_detail;
  constexpr bool kNone = R == ReduceKind::kNone;
  constexpr int kPro = Pro::kParams, kEpi = Epi::kParams;
  constexpr int K = 2 + kPro + kEpi;  // rows of `partial`: dgamma, dbeta, prologue, epilogue
  extern __shared__ float4 resident_smem[];
  __shared__ double2 scratch[kBlock / kWarpSize];

  const TileOrigin<kGroups> origin(plan, blockIdx.x);
  const int M = plan.tile_groups;
  const int D = plan.slice;
  const int S = plan.plane;
  const int C = static_cast<int>(plan.channels);
  const int slices = origin.slices;
  const int tile_channels = slices * plan.cpg;
  float* xs = reinterpret_cast<float*>(resident_smem);
  float* ds = xs + align4(int64_t(M) * D);  // dout (kNone only)
  float* chan_dy = ds + (kNone ? align4(int64_t(M) * D) : 0);
  float* chan_dyx = chan_dy + align4(int64_t(M) * plan.cpg);
  float2* slice_mean2 = reinterpret_cast<float2*>(chan_dyx + align4(int64_t(M) * plan.cpg));
  float* slice_rstd = reinterpret_cast<float*>(slice_mean2 + M);
  float* coef_a = slice_rstd + M;
  float* coef_b = coef_a + M;
  const int64_t offset = origin.u0 * D;

  copy_tile<kBlock, W>(xs, x + offset, slices * D);
  if constexpr (kNone) copy_tile<kBlock, W>(ds, dout + offset, slices * D);
  for (int i = threadIdx.x; i < slices; i += kBlock) {
    slice_mean2[i] = mean[origin.u0 + i];
    slice_rstd[i] = rstd[origin.u0 + i];
  }
  copies_done();
  __syncthreads();

  // dv of the value at tile position i = tc * S + s of channel (n, c), given v.
  const int64_t pooled_plane = plan.pooled_plane;
  auto grad_v = [&](int i, int64_t n, int c, int tc, int s, float v) -> float {
    int64_t o;
    int e;
    float scale = 1.f;
    if constexpr (kNone) {
      return ds[i];
    } else if constexpr (R == ReduceKind::kPlane) {
      o = n * C + c, e = s, scale = 1.f / float(S);
    } else if constexpr (R == ReduceKind::kChannel) {
      o = n * S + s, e = c, scale = 1.f / float(C);
    } else if constexpr (R == ReduceKind::kSample) {
      o = n, e = tc * S + s, scale = 1.f / (float(C) * float(S));
    } else {  // kWindow
      const int w = s % plan.size[2], h = (s / plan.size[2]) % plan.size[1], d = s / (plan.size[2] * plan.size[1]);
      const int pw = w / plan.window[2], ph = h / plan.window[1], pd = d / plan.window[0];
      if (pw >= plan.pooled[2] || ph >= plan.pooled[1] || pd >= plan.pooled[0]) return 0.f;  // in no window
      o = (n * C + c) * pooled_plane + (int64_t(pd) * plan.pooled[1] + ph) * plan.pooled[2] + pw;
      e = ((d - pd * plan.window[0]) * plan.window[1] + (h - ph * plan.window[1])) * plan.window[2] +
          (w - pw * plan.window[2]);
      scale = 1.f / float(plan.window_elems);
    }
    if constexpr (!kNone) {
      const float g = __ldg(dout + o);
      if constexpr (O == ReduceOp::kSum) {
        return g;
      } else if constexpr (O == ReduceOp::kMean) {
        return g * scale;
      } else if constexpr (O == ReduceOp::kMax || O == ReduceOp::kMin) {
        return __ldg(aux + o) == e ? g : 0.f;
      } else {
        return g * expf(v - __ldg(out + o));
      }
    }
  };

  const Team<kBlock> team(plan.tpc);
  // ---- pass A: per channel, sum dy, sum dy xhat and the epilogue's parameter gradients
  if (W == 4 && S == 1) {
    // Linear outputs: 4 channels (= values) per thread at a time, the loads of kFlatBatchBack packs first
    const int packs = tile_channels / 4;
    for (int base = threadIdx.x; base < packs; base += kBlock * kFlatBatchBack) {
      float xv[kFlatBatchBack][4], gv[kFlatBatchBack][4], bv[kFlatBatchBack][4];
      int cv[kFlatBatchBack];
      int64_t nv[kFlatBatchBack];
#pragma unroll
      for (int u = 0; u < kFlatBatchBack; ++u) {
        const int p = base + u * kBlock;
        if (p < packs) {
          origin.channel(plan, 4 * p, nv[u], cv[u]);
          split4(reinterpret_cast<const float4*>(xs)[p], xv[u]);
          load_affine4(gamma, cv[u], plan.affine_vec, 1.f, gv[u]);
          load_affine4(beta, cv[u], plan.affine_vec, 0.f, bv[u]);
        }
      }
#pragma unroll
      for (int u = 0; u < kFlatBatchBack; ++u) {
        const int p = base + u * kBlock;
        if (p < packs) {
          const int gl = plan.div_cpg.div(4 * p);
          const float2 mu = slice_mean2[gl];
          const float rs = slice_rstd[gl];
          float dyv[4], dyxv[4], pev[kMaxParams][4];
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int c = cv[u] + e;
            const Pro pro = Pro::at(params, c);
            const Epi epi = Epi::at(params, c);
            const float x1 = xv[u][e];
            const float z = pro.value(x1);
            const float xh = centered(z, mu) * rs;
            const float y = xh * gv[u][e] + bv[u][e];
            const float v = epi.value(y, z, x1);
            const float dv = grad_v(4 * p + e, nv[u], c, 4 * p + e, 0, v);
            float dy = 0.f, dz = 0.f, dxd = 0.f;
            float pe[kMaxParams] = {0.f, 0.f, 0.f, 0.f};
            epi.backward(y, z, x1, dv, dy, dz, dxd, pe);
            dyv[e] = dy;
            dyxv[e] = dy * xh;
#pragma unroll
            for (int k = 0; k < kMaxParams; ++k) pev[k][e] = pe[k];
          }
          reinterpret_cast<float4*>(chan_dy)[p] = join4(dyv);
          reinterpret_cast<float4*>(chan_dyx)[p] = join4(dyxv);
          float* row = partial + nv[u] * K * C + cv[u];
          *reinterpret_cast<float4*>(row) = join4(dyxv);  // dgamma
          *reinterpret_cast<float4*>(row + C) = join4(dyv);  // dbeta
#pragma unroll
          for (int k = 0; k < kEpi; ++k) *reinterpret_cast<float4*>(row + int64_t(2 + kPro + k) * C) = join4(pev[k]);
        }
      }
    }
  } else {
    for (int r = 0; r < plan.rounds_c; ++r) {
      const int tc = r * team.count + team.index;
      const bool valid = tc < tile_channels;
      float acc_dy = 0.f, acc_dyx = 0.f;
      float acc_epi[kMaxParams] = {0.f, 0.f, 0.f, 0.f};
      int64_t n = 0;
      int c = 0;
      if (valid) {
        origin.channel(plan, tc, n, c);
        const int gl = plan.div_cpg.div(tc);
        const float2 mu = slice_mean2[gl];
        const float rs = slice_rstd[gl];
        const float gm = affine_weight(gamma, c), bt = affine_bias(beta, c);
        const Pro pro = Pro::at(params, c);
        const Epi epi = Epi::at(params, c);
        for (int s = team.lane; s < S; s += plan.tpc) {
          const int i = tc * S + s;
          const float xv = xs[i];
          const float z = pro.value(xv);
          const float xh = centered(z, mu) * rs;
          const float y = xh * gm + bt;
          const float v = epi.value(y, z, xv);
          const float dv = grad_v(i, n, c, tc, s, v);
          float dy = 0.f, dz = 0.f, dxd = 0.f;
          epi.backward(y, z, xv, dv, dy, dz, dxd, acc_epi);
          acc_dy += dy;
          acc_dyx += dy * xh;
        }
      }
      const double sdy = team_allreduce<kBlock>(double(acc_dy), plan.tpc, AddOp{}, scratch);
      const double sdyx = team_allreduce<kBlock>(double(acc_dyx), plan.tpc, AddOp{}, scratch);
      double sepi[kMaxParams];
#pragma unroll
      for (int k = 0; k < kEpi; ++k) sepi[k] = team_allreduce<kBlock>(double(acc_epi[k]), plan.tpc, AddOp{}, scratch);
      if (valid && team.lane == 0) {
        chan_dy[tc] = static_cast<float>(sdy);
        chan_dyx[tc] = static_cast<float>(sdyx);
        float* row = partial + n * K * C + c;
        row[0] = static_cast<float>(sdyx);  // dgamma
        row[int64_t(C)] = static_cast<float>(sdy);  // dbeta
#pragma unroll
        for (int k = 0; k < kEpi; ++k) row[int64_t(2 + kPro + k) * C] = static_cast<float>(sepi[k]);
      }
    }
  }
  __syncthreads();

  // ---- per slice: A = sum gamma dy, B = sum gamma dy xhat -> dz = rs (gm dy + cA + cB xhat), cA = -A/D, cB = -B/D
  {
    const Team<kBlock> tq(plan.tpq);
    for (int r = 0; r < plan.rounds_q; ++r) {
      const int gl = r * tq.count + tq.index;
      Sum2 s{0.0, 0.0};
      if (gl < slices) {
        const int cbase = origin.slice_channel(plan, gl);
        for (int ch = tq.lane; ch < plan.cpg; ch += plan.tpq) {
          const int tc = gl * plan.cpg + ch;
          const double gm = affine_weight(gamma, cbase + ch);
          s.a += gm * double(chan_dy[tc]);
          s.b += gm * double(chan_dyx[tc]);
        }
      }
      s = team_allreduce<kBlock>(s, plan.tpq, AddOp{}, scratch);
      if (gl < slices && tq.lane == 0) {
        coef_a[gl] = static_cast<float>(-s.a / double(D));
        coef_b[gl] = static_cast<float>(-s.b / double(D));
      }
    }
  }
  __syncthreads();

  // ---- pass B: dx, and the prologue's parameter gradients per channel
  if (W == 4 && S == 1) {
    const int packs = tile_channels / 4;
    for (int base = threadIdx.x; base < packs; base += kBlock * kFlatBatchBack) {
      float xv[kFlatBatchBack][4], gv[kFlatBatchBack][4], bv[kFlatBatchBack][4];
      int cv[kFlatBatchBack];
      int64_t nv[kFlatBatchBack];
#pragma unroll
      for (int u = 0; u < kFlatBatchBack; ++u) {
        const int p = base + u * kBlock;
        if (p < packs) {
          origin.channel(plan, 4 * p, nv[u], cv[u]);
          split4(reinterpret_cast<const float4*>(xs)[p], xv[u]);
          load_affine4(gamma, cv[u], plan.affine_vec, 1.f, gv[u]);
          load_affine4(beta, cv[u], plan.affine_vec, 0.f, bv[u]);
        }
      }
#pragma unroll
      for (int u = 0; u < kFlatBatchBack; ++u) {
        const int p = base + u * kBlock;
        if (p < packs) {
          const int gl = plan.div_cpg.div(4 * p);
          const float2 mu = slice_mean2[gl];
          const float rs = slice_rstd[gl];
          const float ca = coef_a[gl], cb = coef_b[gl];
          float dxv[4], ppv[kMaxParams][4];
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int c = cv[u] + e;
            const Pro pro = Pro::at(params, c);
            const Epi epi = Epi::at(params, c);
            const float x1 = xv[u][e];
            const float z = pro.value(x1);
            const float xh = centered(z, mu) * rs;
            const float y = xh * gv[u][e] + bv[u][e];
            const float v = epi.value(y, z, x1);
            const float dv = grad_v(4 * p + e, nv[u], c, 4 * p + e, 0, v);
            float dy = 0.f, dzd = 0.f, dxd = 0.f;
            float unused[kMaxParams] = {0.f, 0.f, 0.f, 0.f};
            epi.backward(y, z, x1, dv, dy, dzd, dxd, unused);
            const float dz = rs * fmaf(cb, xh, __fadd_rn(__fmul_rn(gv[u][e], dy), ca)) + dzd;
            float pk[kMaxParams] = {0.f, 0.f, 0.f, 0.f};
            dxv[e] = pro.backward(x1, dz, pk) + dxd;
#pragma unroll
            for (int k = 0; k < kMaxParams; ++k) ppv[k][e] = pk[k];
          }
          reinterpret_cast<float4*>(dx + offset)[p] = join4(dxv);
          float* row = partial + nv[u] * K * C + cv[u];
#pragma unroll
          for (int k = 0; k < kPro; ++k) *reinterpret_cast<float4*>(row + int64_t(2 + k) * C) = join4(ppv[k]);
        }
      }
    }
    return;
  }
  for (int r = 0; r < plan.rounds_c; ++r) {
    const int tc = r * team.count + team.index;
    const bool valid = tc < tile_channels;
    float acc_pro[kMaxParams] = {0.f, 0.f, 0.f, 0.f};
    int64_t n = 0;
    int c = 0;
    if (valid) {
      origin.channel(plan, tc, n, c);
      const int gl = plan.div_cpg.div(tc);
      const float2 mu = slice_mean2[gl];
      const float rs = slice_rstd[gl];
      const float ca = coef_a[gl], cb = coef_b[gl];
      const float gm = affine_weight(gamma, c), bt = affine_bias(beta, c);
      const Pro pro = Pro::at(params, c);
      const Epi epi = Epi::at(params, c);
      for (int s = team.lane; s < S; s += plan.tpc) {
        const int i = tc * S + s;
        const float xv = xs[i];
        const float z = pro.value(xv);
        const float xh = centered(z, mu) * rs;
        const float y = xh * gm + bt;
        const float v = epi.value(y, z, xv);
        const float dv = grad_v(i, n, c, tc, s, v);
        float dy = 0.f, dzd = 0.f, dxd = 0.f;
        float unused[kMaxParams] = {0.f, 0.f, 0.f, 0.f};
        epi.backward(y, z, xv, dv, dy, dzd, dxd, unused);
        // rstd (gamma dy - A / D - xhat B / D): gamma dy rounded once, as the A it cancels against was formed,
        // so a one-value slice gives exactly 0
        const float dz = rs * fmaf(cb, xh, __fadd_rn(__fmul_rn(gm, dy), ca)) + dzd;
        dx[offset + i] = pro.backward(xv, dz, acc_pro) + dxd;
      }
    }
    if constexpr (kPro > 0) {
      double spro[kMaxParams];
#pragma unroll
      for (int k = 0; k < kPro; ++k) spro[k] = team_allreduce<kBlock>(double(acc_pro[k]), plan.tpc, AddOp{}, scratch);
      if (valid && team.lane == 0) {
        float* row = partial + n * K * C + c;
#pragma unroll
        for (int k = 0; k < kPro; ++k) row[int64_t(2 + k) * C] = static_cast<float>(spro[k]);
      }
    }
  }
}

// ---------------------------------------------------------------- host side

namespace resident_detail {

inline int pow2_floor(int64_t v) {
  int p = 1;
  while (int64_t(p) * 2 <= v && p < (1 << 30)) p *= 2;
  return p;
}
inline int pow2_ceil(int64_t v) {
  int p = 1;
  while (int64_t(p) < v && p < (1 << 30)) p *= 2;
  return p;
}
inline int lowest_bit(int64_t v) { return v <= 0 ? 1 : static_cast<int>(std::min<int64_t>(v & -v, 1 << 30)); }
inline int rounds_for(int64_t items, int width, int block) {
  const int64_t per_round = width >= block ? 1 : block / width;
  return static_cast<int>((items + per_round - 1) / per_round);
}

inline constexpr bool is_sample_kind(ReduceKind r) { return r == ReduceKind::kChannel || r == ReduceKind::kSample; }

struct RegionDims {
  int64_t batch, channels, plane;
  int dims;
  int64_t size[3];
};

inline RegionDims region_dims(const at::Tensor& x) {
  RegionDims d{x.size(0), x.size(1), 1, static_cast<int>(x.dim()) - 2, {1, 1, 1}};
  for (int k = 0; k < d.dims; ++k) {
    d.size[3 - d.dims + k] = x.size(2 + k);
    d.plane *= x.size(2 + k);
  }
  return d;
}

// The plan for one direction (backward: the tile also holds dout for kNone, and per-channel sums), for
// blocks of `block` threads, values in packs of `width` (4: 16-byte copies, or 1), within `budget` bytes.
// feasible == false where one unit does not fit.
template <ReduceKind R>
ResidentPlan make_plan(const RegionDims& dims, int64_t groups, const std::vector<int64_t>& window, int block,
                       int width, bool backward, int64_t budget, int values_per_thread = kValuesPerThread) {
  ResidentPlan p{};
  p.feasible = false;
  p.batch = dims.batch;
  p.channels = dims.channels;
  p.groups = groups;
  p.units = dims.batch * groups;
  if (groups <= 0 || dims.channels % groups != 0 || dims.channels >= (int64_t(1) << 30) ||
      groups >= (int64_t(1) << 30) || dims.plane >= (int64_t(1) << 30)) {
    return p;
  }
  const int64_t cpg = dims.channels / groups;
  const int64_t slice = cpg * dims.plane;
  const int64_t unit = is_sample_kind(R) ? slice * groups : slice;
  if (unit >= (int64_t(1) << 28)) return p;  // far beyond any shared memory
  const bool dout_tile = backward && R == ReduceKind::kNone;
  auto bytes = [&](int64_t m) {
    return 4 * (backward ? backward_smem_floats(m, slice, cpg, dout_tile) : forward_smem_floats(m, slice));
  };
  p.cpg = static_cast<int>(cpg);
  p.plane = static_cast<int>(dims.plane);
  p.slice = static_cast<int>(slice);
  // statistics: team of tpg threads per slice
  const int64_t packs = slice / width;
  if (packs > 8 * kWarpSize) {
    p.tpg = block;
  } else if (packs >= 2 * kWarpSize) {
    p.tpg = kWarpSize;
  } else {
    const int conflict_free = std::min(kWarpSize, lowest_bit(packs));  // packs / tpg odd: distinct banks
    p.tpg = conflict_free * 8 >= packs ? conflict_free
                                       : std::min(kWarpSize, pow2_floor(std::max<int64_t>(1, packs / 4)));
  }
  const int teams_g = p.tpg >= block ? 1 : block / p.tpg;
  int64_t m;
  if (is_sample_kind(R)) {
    m = groups;
  } else if (p.tpg >= block) {
    m = 1;
  } else {
    const int64_t target = int64_t(block) * values_per_thread;
    m = teams_g * std::max<int64_t>(1, target / (int64_t(teams_g) * slice));
  }
  m = std::max<int64_t>(1, std::min(m, std::max<int64_t>(1, p.units)));
  while (!is_sample_kind(R) && m > 1 && bytes(m) > budget) m = (m + 1) / 2;
  if (bytes(m) > budget) return p;
  p.tile_groups = static_cast<int>(m);
  p.tiles = (p.units + m - 1) / m;
  p.rounds_g = rounds_for(m, p.tpg, block);
  // per-channel passes: tpc threads per channel
  const int64_t tile_channels = m * cpg;
  if (dims.plane >= 2 * kWarpSize) {
    p.tpc = kWarpSize;
  } else {
    p.tpc = std::min(kWarpSize, lowest_bit(dims.plane));
    while (p.tpc < kWarpSize && p.tpc < dims.plane && tile_channels * p.tpc < block) p.tpc *= 2;
  }
  p.rounds_c = rounds_for(tile_channels, p.tpc, block);
  // spatial sizes and windows, leading 1s
  for (int k = 0; k < 3; ++k) {
    p.size[k] = static_cast<int>(dims.size[k]);
    p.window[k] = 1;
    p.pooled[k] = p.size[k];
  }
  if (R == ReduceKind::kWindow) {
    for (int k = 0; k < dims.dims; ++k) {
      const int d = 3 - dims.dims + k;
      p.window[d] = static_cast<int>(window[k]);
      p.pooled[d] = static_cast<int>(dims.size[d] / window[k]);
    }
  }
  p.pooled_plane = p.pooled[0] * p.pooled[1] * p.pooled[2];
  p.window_elems = p.window[0] * p.window[1] * p.window[2];
  // forward reduction: tpo threads per output
  int64_t nout = 0, len = 1;
  switch (R) {
    case ReduceKind::kPlane: nout = tile_channels, len = dims.plane; break;
    case ReduceKind::kWindow: nout = tile_channels * p.pooled_plane, len = p.window_elems; break;
    case ReduceKind::kChannel: nout = dims.plane, len = dims.channels; break;
    case ReduceKind::kSample: nout = 1, len = dims.channels * dims.plane; break;
    default: break;
  }
  if (nout == 1) {
    p.tpo = block;
  } else {
    p.tpo = std::min(kWarpSize, pow2_floor(std::max<int64_t>(1, len / 4)));
    while (p.tpo < kWarpSize && p.tpo < len && nout * p.tpo < block) p.tpo *= 2;
  }
  p.rounds_o = nout == 0 ? 0 : rounds_for(nout, p.tpo, block);
  // backward group sums: tpq threads per slice over its channels
  p.tpq = (m == 1 && cpg > 8 * kWarpSize) ? block : std::min(kWarpSize, pow2_ceil(cpg));
  p.rounds_q = rounds_for(m, p.tpq, block);
  p.div_plane = FastDiv(dims.plane);
  p.div_channels = FastDiv(dims.channels);
  p.div_cpg = FastDiv(cpg);
  p.div_groups = FastDiv(groups);
  p.div_pooled_plane = FastDiv(std::max(1, p.pooled_plane));
  p.stages = 1;
  p.smem_bytes = bytes(m);
  if (!backward && 4 * forward_smem_floats(m, slice, 2) <= std::min<int64_t>(budget, kDoubleBufferLimit)) {
    p.stages = 2;
    p.smem_bytes = 4 * forward_smem_floats(m, slice, 2);
  }
  p.grid = p.tiles;
  p.feasible = true;
  return p;
}

inline int64_t smem_budget(const at::Tensor& x) { return max_block_smem(x.get_device()) - kReservedSmem; }

// Raises a kernel's dynamic shared memory limit where a launch needs more than the default 48 KB; what
// was raised already, per kernel and device, is remembered.
inline void allow_smem(const void* kernel, int64_t bytes) {
  if (bytes <= 48 * 1024) return;
  static std::mutex lock;
  static std::map<std::pair<const void*, int>, int64_t> allowed;
  int device = 0;
  C10_CUDA_CHECK(cudaGetDevice(&device));
  const std::lock_guard<std::mutex> guard(lock);
  int64_t& done = allowed[{kernel, device}];
  if (done >= bytes) return;
  C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  done = bytes;
}

template <ReduceKind R>
inline std::vector<int64_t> region_out_shape(const at::Tensor& x, const std::vector<int64_t>& window) {
  std::vector<int64_t> shape{x.size(0)};
  switch (R) {
    case ReduceKind::kNone:
      return x.sizes().vec();
    case ReduceKind::kChannel:
      for (int64_t d = 2; d < x.dim(); ++d) shape.push_back(x.size(d));
      return shape;
    case ReduceKind::kPlane:
      return {x.size(0), x.size(1)};
    case ReduceKind::kSample:
      return shape;
    case ReduceKind::kWindow:
      shape.push_back(x.size(1));
      for (int64_t d = 2; d < x.dim(); ++d) shape.push_back(x.size(d) / window[d - 2]);
      return shape;
  }
  return shape;
}

inline void check_region_input(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta, int64_t groups) {
  check_float_cuda(x, "input");
  TORCH_CHECK(x.dim() >= 2 && x.dim() <= 5, "kgen: the region input must have shape (N, C, *spatial) with 0 to 3 ",
              "spatial dims, got ", str(x.sizes()));
  const int64_t channels = x.size(1);
  TORCH_CHECK(groups > 0 && channels % groups == 0, "kgen: ", str(channels), " channels are not divisible into ",
              str(groups), " groups");
  TORCH_CHECK(gamma.defined() == beta.defined(),
              "kgen: GroupNorm weight and bias must both be given (affine) or both be absent");
  for (const auto* t : {&gamma, &beta}) {
    if (!t->defined()) continue;
    check_float_cuda(*t, "GroupNorm weight/bias");
    TORCH_CHECK(t->dim() == 1 && t->size(0) == channels, "kgen: GroupNorm weight/bias must have shape (",
                str(channels), "), got ", str(t->sizes()));
    TORCH_CHECK(t->device() == x.device(), "kgen: GroupNorm weight/bias are on ", t->device().str(),
                " but the input is on ", x.device().str());
  }
}

template <ReduceKind R>
inline void check_window(const at::Tensor& x, const std::vector<int64_t>& window) {
  if (R != ReduceKind::kWindow) return;
  TORCH_CHECK(int64_t(window.size()) == x.dim() - 2, "kgen: the pooling window needs one size per spatial dim (",
              str(x.dim() - 2), "), got ", str(int64_t(window.size())));
  for (int64_t k : window) TORCH_CHECK(k >= 1, "kgen: pooling window sizes must be positive, got ", str(k));
}

template <class Pro, class Epi>
inline RegionParams region_params(const std::vector<at::Tensor>& prologue_params,
                                  const std::vector<at::Tensor>& epilogue_params, const at::Tensor& x) {
  TORCH_CHECK(int64_t(prologue_params.size()) == Pro::kParams, "kgen: the prologue takes ", str(Pro::kParams),
              " parameters, got ", str(int64_t(prologue_params.size())));
  TORCH_CHECK(int64_t(epilogue_params.size()) == Epi::kParams, "kgen: the epilogue takes ", str(Epi::kParams),
              " parameters, got ", str(int64_t(epilogue_params.size())));
  return RegionParams{param_table(prologue_params, x.size(1), x.device(), "prologue"),
                      param_table(epilogue_params, x.size(1), x.device(), "epilogue")};
}

inline const float* optional_data(const at::Tensor& t) { return t.defined() ? t.data_ptr<float>() : nullptr; }

}  // namespace resident_detail

// True where the resident path takes x (N, C, *spatial) with `groups` groups on x's device: one unit (a
// slice, or a sample for kChannel / kSample) fits in a block's shared memory, forward and backward.
template <ReduceKind R>
bool region_resident_fits(const at::Tensor& x, int64_t groups) {
  using namespace resident_detail;
  if (!x.is_cuda() || x.dim() < 2 || x.dim() > 5 || groups <= 0 || x.size(1) % groups != 0) return false;
  if (x.numel() == 0) return true;
  const RegionDims dims = region_dims(x);
  const int64_t budget = smem_budget(x);
  std::vector<int64_t> window(x.dim() - 2, 1);
  return make_plan<R>(dims, groups, window, 256, 1, false, budget).feasible &&
         make_plan<R>(dims, groups, window, 256, 1, true, budget).feasible;
}

// True where the resident path is also the faster one: it fits, and its forward keeps copies in flight while
// it works. A block copies its tile, then works on it from shared memory; the SM's DRAM traffic continues
// only through the copies of its other blocks or the block's own second stage. With double-buffered tiles
// (units up to 12 k values) or kMinResidentBlocks blocks per SM that holds; a unit that leaves one block per
// SM does not (H100, L2-27: 43.7 k-value slices, 1 block per SM, 0.48 TB/s), and the two-pass path (each
// sweep at 2.5-2.8 TB/s there, reading x twice) is faster.
constexpr int kMinResidentBlocks = 3;

template <ReduceKind R>
bool region_resident_pays(const at::Tensor& x, int64_t groups) {
  using namespace resident_detail;
  if (!region_resident_fits<R>(x, groups)) return false;
  if (x.numel() == 0) return true;
  std::vector<int64_t> window(x.dim() - 2, 1);
  const ResidentPlan plan = make_plan<R>(region_dims(x), groups, window, 256, 1, false, smem_budget(x));
  return plan.stages == 2 || sm_smem(x.get_device()) / (plan.smem_bytes + kReservedSmem) >= kMinResidentBlocks;
}

// Forward: {out, mean (N, G, 2) as (hi, lo) pairs, rstd (N, G), aux (int32, kMax / kMin only)}.
template <class Pro, class Epi, ReduceKind R, ReduceOp O, int kBlock, int kGroups>
std::vector<at::Tensor> region_forward_resident(const at::Tensor& input, const at::Tensor& gamma_in,
                                                const at::Tensor& beta_in,
                                                const std::vector<at::Tensor>& prologue_params,
                                                const std::vector<at::Tensor>& epilogue_params, int64_t groups,
                                                double eps, const std::vector<int64_t>& window) {
  using namespace resident_detail;
  static_assert(kBlock >= kWarpSize && kBlock <= 1024 && (kBlock & (kBlock - 1)) == 0,
                "kBlock: a power of two in 32..1024");
  constexpr bool kArg = O == ReduceOp::kMax || O == ReduceOp::kMin;
  check_region_input(input, gamma_in, beta_in, groups);
  check_window<R>(input, window);
  const c10::cuda::CUDAGuard device_guard(input.device());
  const RegionParams params = region_params<Pro, Epi>(prologue_params, epilogue_params, input);
  const at::Tensor x = input.contiguous();
  const at::Tensor gamma = gamma_in.defined() ? gamma_in.contiguous() : at::Tensor();
  const at::Tensor beta = beta_in.defined() ? beta_in.contiguous() : at::Tensor();
  const int64_t batch = x.size(0);
  const std::vector<int64_t> out_shape = region_out_shape<R>(x, window);
  at::Tensor out = at::empty(out_shape, x.options());
  at::Tensor aux = kArg ? at::empty(out_shape, x.options().dtype(at::kInt)) : at::Tensor();
  at::Tensor mean = at::empty({batch, groups, 2}, x.options());
  at::Tensor rstd = at::empty({batch, groups}, x.options());
  if (x.numel() == 0) {
    out.zero_(), mean.zero_(), rstd.zero_();
    if (kArg) aux.zero_();
    return {out, mean, rstd, aux};
  }
  const RegionDims dims = region_dims(x);
  const int64_t slice = dims.channels / groups * dims.plane;
  const int width = slice % 4 == 0 && is_16_byte_aligned(x.data_ptr<float>()) ? 4 : 1;
  ResidentPlan plan = make_plan<R>(dims, groups, window, kBlock, width, false, smem_budget(x));
  plan.affine_vec = !gamma.defined() || (is_16_byte_aligned(gamma.data_ptr<float>()) &&
                                         is_16_byte_aligned(beta.data_ptr<float>()));
  TORCH_CHECK(plan.feasible, "kgen: a GroupNorm unit of input ", str(x.sizes()), " with ", str(groups),
              " groups does not fit in shared memory (resident path); region_resident_fits tells beforehand");
  const auto stream = at::cuda::getCurrentCUDAStream();
  const float* x_ptr = x.data_ptr<float>();
  const float* gamma_ptr = optional_data(gamma);
  const float* beta_ptr = optional_data(beta);
  float* out_ptr = out.data_ptr<float>();
  int* aux_ptr = kArg ? aux.data_ptr<int>() : nullptr;
  float2* mean_ptr = as_float2(mean);
  float* rstd_ptr = rstd.data_ptr<float>();
  dispatch_groups<kGroups>(groups, [&](auto kg) {
    constexpr int kG = decltype(kg)::value;
    auto launch = [&](auto kernel) {
      auto blocks_per_sm = [&](const ResidentPlan& p) {
        allow_smem(reinterpret_cast<const void*>(kernel), p.smem_bytes);
        int per_sm = 0;
        C10_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kBlock, p.smem_bytes));
        return std::max(1, per_sm);
      };
      auto in_flight = [](const ResidentPlan& p, int per_sm) { return int64_t(per_sm) * p.tile_groups * p.slice * 4; };
      ResidentPlan launched = plan;
      int per_sm = blocks_per_sm(launched);
      for (int vpt = 2 * kValuesPerThread; vpt <= kMaxValuesPerThread && in_flight(launched, per_sm) < kBytesInFlight;
           vpt *= 2) {
        ResidentPlan bigger = make_plan<R>(dims, groups, window, kBlock, width, false, smem_budget(x), vpt);
        if (!bigger.feasible || bigger.stages != 2 || bigger.tile_groups <= launched.tile_groups) break;
        const int bigger_per_sm = blocks_per_sm(bigger);
        if (in_flight(bigger, bigger_per_sm) <= in_flight(launched, per_sm)) break;
        bigger.affine_vec = plan.affine_vec;
        launched = bigger;
        per_sm = bigger_per_sm;
      }
      launched.grid = std::min<int64_t>(launched.tiles, int64_t(per_sm) * multiprocessors(x.get_device()));
      kernel<<<launched.grid, kBlock, launched.smem_bytes, stream>>>(x_ptr, gamma_ptr, beta_ptr, params, launched,
                                                                     eps, out_ptr, aux_ptr, mean_ptr, rstd_ptr);
    };
    if (width == 4) {
      launch(region_resident_forward_kernel<Pro, Epi, R, O, kBlock, kG, 4>);
    } else {
      launch(region_resident_forward_kernel<Pro, Epi, R, O, kBlock, kG, 1>);
    }
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return {out, mean, rstd, aux};
}

// Backward: {dx, dgamma (C), dbeta (C) (undefined without affine), dprologue (Kp, C), depilogue (Ke, C)}.
template <class Pro, class Epi, ReduceKind R, ReduceOp O, int kBlock, int kGroups>
std::vector<at::Tensor> region_backward_resident(const at::Tensor& grad_out, const at::Tensor& input,
                                                 const at::Tensor& gamma_in, const at::Tensor& beta_in,
                                                 const std::vector<at::Tensor>& prologue_params,
                                                 const std::vector<at::Tensor>& epilogue_params,
                                                 const at::Tensor& mean, const at::Tensor& rstd,
                                                 const at::Tensor& out_in, const at::Tensor& aux_in, int64_t groups,
                                                 const std::vector<int64_t>& window) {
  using namespace resident_detail;
  constexpr bool kArg = O == ReduceOp::kMax || O == ReduceOp::kMin;
  constexpr bool kLse = O == ReduceOp::kLogSumExp && R != ReduceKind::kNone;
  constexpr int kPro = Pro::kParams, kEpi = Epi::kParams;
  constexpr int K = 2 + kPro + kEpi;
  check_region_input(input, gamma_in, beta_in, groups);
  check_window<R>(input, window);
  const std::vector<int64_t> out_shape = region_out_shape<R>(input, window);
  check_float_cuda(grad_out, "gradient of the region output");
  TORCH_CHECK(grad_out.sizes() == c10::IntArrayRef(out_shape), "kgen: the output gradient has shape ",
              str(grad_out.sizes()), ", expected ", str(c10::IntArrayRef(out_shape)));
  TORCH_CHECK(grad_out.device() == input.device(), "kgen: the output gradient is on ", grad_out.device().str(),
              " but the input is on ", input.device().str());
  const int64_t batch = input.size(0);
  for (const auto* t : {&mean, &rstd}) {
    check_float_cuda(*t, "saved GroupNorm statistics");
    TORCH_CHECK(t->device() == input.device(), "kgen: saved statistics are on another device than the input");
  }
  TORCH_CHECK(mean.is_contiguous() && mean.numel() == batch * groups * 2 && rstd.is_contiguous() &&
                  rstd.numel() == batch * groups,
              "kgen: saved statistics must be the forward's (N, G, 2) mean and (N, G) rstd");
  if (kLse) {
    check_float_cuda(out_in, "saved region output");
    TORCH_CHECK(out_in.sizes() == grad_out.sizes() && out_in.device() == input.device(),
                "kgen: the saved logsumexp output must be the forward's");
  }
  if (kArg) {
    TORCH_CHECK(aux_in.defined() && aux_in.scalar_type() == at::kInt && aux_in.sizes() == grad_out.sizes() &&
                    aux_in.device() == input.device(),
                "kgen: max/min backward needs the forward's int32 positions (aux)");
  }
  const c10::cuda::CUDAGuard device_guard(input.device());
  const RegionParams params = region_params<Pro, Epi>(prologue_params, epilogue_params, input);
  const at::Tensor x = input.contiguous();
  const at::Tensor dout = grad_out.contiguous();
  const at::Tensor out = kLse ? out_in.contiguous() : at::Tensor();
  const at::Tensor aux = kArg ? aux_in.contiguous() : at::Tensor();
  const at::Tensor gamma = gamma_in.defined() ? gamma_in.contiguous() : at::Tensor();
  const at::Tensor beta = beta_in.defined() ? beta_in.contiguous() : at::Tensor();
  const int64_t channels = x.size(1);
  auto dx = at::empty_like(x, at::MemoryFormat::Contiguous);
  auto sums = at::zeros({K, channels}, x.options());
  if (x.numel() > 0) {
    const RegionDims dims = region_dims(x);
    const int64_t slice = channels / groups * dims.plane;
    const bool aligned = is_16_byte_aligned(x.data_ptr<float>()) &&
                         (R != ReduceKind::kNone || is_16_byte_aligned(dout.data_ptr<float>()));
    const int width = slice % 4 == 0 && aligned ? 4 : 1;
    ResidentPlan plan = make_plan<R>(dims, groups, window, kBlock, width, true, smem_budget(x));
    plan.affine_vec = !gamma.defined() || (is_16_byte_aligned(gamma.data_ptr<float>()) &&
                                           is_16_byte_aligned(beta.data_ptr<float>()));
    TORCH_CHECK(plan.feasible, "kgen: a GroupNorm unit of input ", str(x.sizes()), " with ", str(groups),
                " groups does not fit in shared memory (resident backward); region_resident_fits tells beforehand");
    auto partial = at::empty({batch, K, channels}, x.options());
    const auto stream = at::cuda::getCurrentCUDAStream();
    const float* dout_ptr = dout.data_ptr<float>();
    const float* x_ptr = x.data_ptr<float>();
    const float* gamma_ptr = optional_data(gamma);
    const float* beta_ptr = optional_data(beta);
    const float2* mean_ptr = as_float2(mean);
    const float* rstd_ptr = rstd.data_ptr<float>();
    const float* out_ptr = kLse ? out.data_ptr<float>() : nullptr;
    const int* aux_ptr = kArg ? aux.data_ptr<int>() : nullptr;
    float* dx_ptr = dx.data_ptr<float>();
    float* partial_ptr = partial.data_ptr<float>();
    dispatch_groups<kGroups>(groups, [&](auto kg) {
      constexpr int kG = decltype(kg)::value;
      auto launch = [&](auto kernel) {
        allow_smem(reinterpret_cast<const void*>(kernel), plan.smem_bytes);
        kernel<<<plan.tiles, kBlock, plan.smem_bytes, stream>>>(dout_ptr, x_ptr, gamma_ptr, beta_ptr, params, plan,
                                                               mean_ptr, rstd_ptr, out_ptr, aux_ptr, dx_ptr,
                                                               partial_ptr);
      };
      if (width == 4) {
        launch(region_resident_backward_kernel<Pro, Epi, R, O, kBlock, kG, 4>);
      } else {
        launch(region_resident_backward_kernel<Pro, Epi, R, O, kBlock, kG, 1>);
      }
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    auto flat = sums.view({K * channels});
    column_sums<kBlock>(partial.view({batch, K * channels}), flat);
  }
  const bool affine = gamma.defined();
  return {dx, affine ? sums[0] : at::Tensor(), affine ? sums[1] : at::Tensor(),
          sums.narrow(0, 2, kPro).contiguous(), sums.narrow(0, 2 + kPro, kEpi).contiguous()};
}

}  // namespace kgen
