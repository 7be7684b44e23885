// ---- groupnorm/resident/resident.cuh: a fused GroupNorm region whose units fit on chip, one kernel each way ----
//
//   x --Pro--> z --GroupNorm(G, eps, affine?)--> y --Epi--> v --reduction R/O--> out     (groupnorm/region.cuh)
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
// Linear outputs (plane == 1) with short slices take another forward, from registers with no tile
// (groupnorm/rows/forward.cuh; the same statistics and saved values); their backward is this one.
//
// A float16 / bfloat16 x of the output's dtype (resident_half_applies, groupnorm/resident/host.cuh) is copied as it
// lies (cp.async, 8-byte packs) into a tile of its own type, half a float32 tile's bytes, and converted exactly where a
// pass reads it. A forward that writes its tile (a prologue's z, the values a reduction reads) writes a float32 work
// tile beside it (TileStorage); the backward only reads its tiles. out without a reduction, dout and dx are in that
// dtype too. The arithmetic is the float32 path's on the same values, so are the bits.
//
// Forward (1 read of x, 1 write of out):
//   mean      per slice: sum of z = Pro(x) in double (z into the work tile: a float32 x's own), team of tpg threads
//   variance  per slice: sum of (z - mean)^2 and of (z - mean) in double, the corrected two-pass formula
//             (exact statistics: the data is on chip); mean kept as a (hi, lo) float pair as groupnorm/statistics.cuh
//   apply     per channel: y = (z - mean) rstd gamma + beta, v = Epi(y, z, x); kNone writes v out, the
//             other kinds write v back in place and then reduce it (a team of tpo threads per output,
//             natural order inside a thread, a fixed shuffle tree across threads: the FIRST extreme wins
//             ties, as PyTorch's max/min with dim and MaxPool).
// An epilogue that reads x itself (a residual of x) behind a prologue gets it from a 2-byte x's tile, or from
// global memory (L2: the tile was just read) for float32, whose tile then holds z; the compiler drops that
// load for every epilogue that does not use x.
//
// Backward (1 read of x and of dout for kNone; dout, out, aux of the other kinds are gathered per output):
//   pass A    per channel: recompute z, y, v; dv from the reduction's backward; Epi::backward -> dy, and
//             per channel sum dy, sum dy xhat, the epilogue's parameter gradients
//   groups    per slice: A = sum gamma dy, B = sum gamma dy xhat from the channel sums (double); -A/D, -B/D
//   pass B    per channel: recompute; dz = rstd gamma dy - rstd A / D - xhat rstd B / D + the epilogue's
//             direct dz; dx = Pro::backward(x, dz) + the epilogue's direct dx; the prologue's parameter
//             gradients per channel
// Per-(sample, channel) gradients of gamma, beta and every parameter go to a (N, K, C) buffer, K = 2 + Kp
// + Ke, summed over the batch by column_sums (core/sweeps.cuh): a fixed order, no atomics anywhere, so
// every result is bitwise reproducible. For Linear outputs that buffer is K times the input; where it would
// pass 256 MB the backward runs in SLABS instead (ResidentPlan::parts, slab_plan): each block keeps one
// channel slab and walks its samples, adding their gradients in shared memory in sample order, and writes
// one row: (rows, K, C), rows about the blocks that fit on the GPU at once.
//
// Team sizes: the statistics passes read 16-byte packs, a team of tpg threads per slice (tpg a power of
// two dividing the packs of a slice where that leaves no thread more than 8 packs: then the threads of a
// warp touch distinct banks), or the whole block for slices of more than 1024 values; the per-channel
// passes take tpc threads per channel (32 for planes of 64 values and more; the backward's, the whole block where a
// tile's channels would keep at most a quarter of its warps, on planes of a block's values or more); Linear outputs (plane == 1,
// D % 4 == 0) take a flat path instead: 4 channels per thread at a time, 16-byte shared, gamma / beta and
// output accesses, the loads of several such packs issued before the first is used.
// Every reduction across threads is an xor-butterfly over a fixed width (and over the block's warps in
// warp order): every thread ends with the same bits.
//
// region_resident_fits<R>(x, groups) says whether one unit (and a tile of it) fits in the shared memory a
// block may opt in to on x's device (queried once per device), forward and backward. On an H100 (227 KB):
// about 56 k values per unit forward; backward 4 bytes a value (x; 2 for a 2-byte x), as many for kNone (dout), + 8 per channel
// (sum dy, sum dy xhat): e.g. 28 k values for kNone with planes, 14 k for kNone with plane == 1.
#include <atomic>
#include <map>
#include <mutex>
#include <tuple>
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
  // Backward parameter sums. 0: one row per sample (partial is (N, K, C)). Else Linear outputs in SLABS:
  // the tile is one of `parts` channel slabs of a sample (tile_groups * parts == groups), block b always
  // takes slab b % parts, of samples b / parts, + rows, ..., adds its tiles' sums in shared memory and
  // writes them once: partial is (rows, K, C), rows * parts blocks.
  int parts;
  int64_t rows;
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
__host__ __device__ __forceinline__ int64_t align16(int64_t bytes) { return (bytes + 15) / 16 * 16; }

// How a kernel's tiles lie in shared memory: x (and dout) as they lie in memory, `elem` bytes a value (cp.async
// copies them without registers); `work`: a 2-byte forward that writes its tile (a prologue's z, the values a
// reduction reads) writes a float32 work tile beside it. A float32 tile is its own work tile.
struct TileStorage {
  int elem = 4;
  bool work = false;
};

// Shared memory, in bytes. Forward: `stages` tiles of x | the float32 work tile (TileStorage::work) | mean (double) |
// mean (hi, lo) | rstd.
__host__ __device__ __forceinline__ int64_t forward_tile_bytes(int64_t groups_in_tile, int64_t slice, TileStorage st) {
  return align16(groups_in_tile * slice * st.elem);
}
__host__ __device__ __forceinline__ int64_t forward_smem_bytes(int64_t groups_in_tile, int64_t slice, int stages,
                                                               TileStorage st) {
  return stages * forward_tile_bytes(groups_in_tile, slice, st) + (st.work ? align16(groups_in_tile * slice * 4) : 0) +
         4 * (4 * groups_in_tile + align4(groups_in_tile));
}
// Backward: x tile | dout tile (kNone), both as they lie | sum dy, sum dy xhat per tile channel | mean (hi, lo) |
// rstd | cA | cB.
__host__ __device__ __forceinline__ int64_t backward_tile_bytes(int64_t groups_in_tile, int64_t slice, int elem) {
  return align16(groups_in_tile * slice * elem);
}
__host__ __device__ __forceinline__ int64_t backward_smem_bytes(int64_t groups_in_tile, int64_t slice, int64_t cpg,
                                                                bool dout_tile, int elem) {
  return backward_tile_bytes(groups_in_tile, slice, elem) * (dout_tile ? 2 : 1) +
         4 * (2 * align4(groups_in_tile * cpg) + 5 * groups_in_tile);
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

// Pack `pack` of W values of a tile, as floats: a float32 tile's 16 bytes, a 2-byte tile's 8 (converted exactly).
template <int W, class S>
__device__ __forceinline__ void load_values(const S* smem, int pack, float (&v)[W]) {
  if constexpr (W == 4) {
    unpack_bits<S>(reinterpret_cast<const PackBits<S>*>(smem)[pack], v);
  } else {
    v[0] = to_float(smem[pack]);
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

// Starts the copy of `count` values (a multiple of W) into a tile of their own type, by cp.async: packs of W values
// (16 bytes of float32, 8 of a 2-byte type where W == 4), in flight without registers. copies_done (or copies_wait)
// and a barrier finish it.
template <int kBlock, int W, class T>
__device__ __forceinline__ void copy_tile(T* smem, const T* __restrict__ gmem, int count) {
  static_assert(W * sizeof(T) >= 4, "cp.async copies 4, 8 or 16 bytes");
  const int packs = count / W;
  for (int i = threadIdx.x; i < packs; i += kBlock) copy_async<W * sizeof(T)>(smem + W * i, gmem + W * int64_t(i));
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

__device__ __forceinline__ float4 join4(const float (&v)[4]) { return make_float4(v[0], v[1], v[2], v[3]); }

// Packs of 4 channels a thread takes together in the flat (plane == 1) per-channel passes.
constexpr int kFlatBatch = 4;
constexpr int kFlatBatchBack = 2;

// The loads of those passes: packs p = base + u * kBlock (u < kN) of the tile, each 4 channels' values with
// their (sample, channel), gamma and beta, all issued before the first is used.
template <int kN>
struct FlatPacks {
  float v[kN][4], gamma[kN][4], beta[kN][4];
  int c[kN];
  int64_t n[kN];

  template <int kBlock, int kGroups, class S>
  __device__ __forceinline__ void load(const TileOrigin<kGroups>& origin, const ResidentPlan& plan,
                                       const S* tile, const float* __restrict__ gamma_p,
                                       const float* __restrict__ beta_p, int base, int packs) {
#pragma unroll
    for (int u = 0; u < kN; ++u) {
      const int p = base + u * kBlock;
      if (p < packs) {
        origin.channel(plan, 4 * p, n[u], c[u]);
        load_values<4>(tile, p, v[u]);
        load_affine4(gamma_p, c[u], plan.affine_vec, 1.f, gamma[u]);
        load_affine4(beta_p, c[u], plan.affine_vec, 0.f, beta[u]);
      }
    }
  }
};

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

}  // namespace kgen
