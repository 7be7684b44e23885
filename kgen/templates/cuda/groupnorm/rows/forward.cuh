// ---- groupnorm/rows/forward.cuh: the forward of Linear outputs with short slices, from registers ----
//
// Linear outputs (plane == 1) whose slices are short: D = C / G values, D % 4 == 0, at most 32 lanes x 8
// packs of 4. There the resident forward's shared-memory tile (copy, barrier, three sweeps of shared memory
// between barriers) keeps too few bytes moving per SM (H100, L2-37's 64-value slices: 1.18 ms for 1.07 GB,
// 0.9 TB/s). Here a TEAM of L lanes of one warp (L a power of two) holds a slice in registers, kPacks
// 16-byte packs per lane (lane l takes packs l, l + L, ...: a team reads contiguous bytes), and each team
// takes kUnroll slices at a time (rows_unroll: kRowsPacksInFlight packs a thread, at least one slice); the
// next kUnroll slices' loads are issued before this kUnroll's arithmetic, so they stay in flight through it.
// No shared memory, no barrier.
//
// Team width: as few lanes as give each lane kRowsPacksPerLane packs. A slice costs each of its lanes the
// same whatever the lane's share (two butterflies of log2(L) double shuffles, a double rsqrt, the group's
// index), so fewer lanes spread that cost over more values; more packs a lane and in flight cost registers,
// and with them warps. Measured at L2-37 (64-value slices, an expf and a division a value in the prologue;
// H100): 16 lanes x 1 pack, 8 in flight 676 us, ncu ~100
// instructions a value and 16 warps an SM; 4 x 4 packs, 8 in flight 505 us; 8 x 2, 4 in flight 446 us;
// 8 x 2, 2 in flight (one slice a team at a time, the loads of the next in flight) 420 us, 2.55 TB/s.
//
// The statistics: the sum of z = Pro(x) in double (a pack's four values added in double, then the pack to
// the lane's sum), reduced over the team by an xor butterfly (a fixed order: every lane gets the same bits,
// every run the same result); then the deviations d = z - mean (the mean a (hi, lo) float pair) summed with
// their squares in float within the lane (at most 32 of them, each small), in double over the team, for the
// corrected two-pass variance. The mean kept as (hi, lo) and rstd in float, as the resident backward reads
// them. kNone: out = Epi(y, z, x) is stored where it is computed; kChannel and kSample (a reduction over each
// sample's C values): region_rows_reduce_kernel below.
namespace kgen {

struct RowsPlan {
  int64_t units;  // batch * groups slices
  int groups;
  resident_detail::FastDiv div_groups;  // u % groups by a multiply while units < 2^31
  int slice;      // D = channels per group
  int lanes;      // L, the team width
  bool affine_vec;
};

constexpr int kRowsPacksInFlight = 2;  // 16-byte packs per thread loaded before the first is reduced
constexpr int kRowsPacksPerLane = 2;   // a lane's share of a slice where the slice is long enough
constexpr int kRowsMaxPacks = 8;       // per lane and slice

// Slices a team takes at a time with kPacks packs a lane: kRowsPacksInFlight packs a thread, at least one slice.
constexpr int rows_unroll(int packs) { return kRowsPacksInFlight / packs > 0 ? kRowsPacksInFlight / packs : 1; }

// Pack `pack` of 4 consecutive values from `base` as floats, zeros where `valid` is false: x, dout and dx are
// float (a 16-byte load) or, where the rows kernels take the tensors' own float16 / bfloat16 (rows_half), 8-byte
// loads of 2-byte values (core/sweeps.cuh: load_pack); arithmetic in float either way, stores rounded once.
template <class T>
__device__ __forceinline__ void rows_load4(const T* __restrict__ base, int64_t pack, bool valid, float (&v)[4]) {
  const Pack<4> p = valid ? load_pack<4>(base, pack) : Pack<4>{{0.f, 0.f, 0.f, 0.f}};
#pragma unroll
  for (int e = 0; e < 4; ++e) v[e] = p.v[e];
}

// Pack `pack` as it lies in memory (core/sweeps.cuh: PackBits), zeros where `valid` is false: the rows backward keeps
// the next step's x and dout in this form and converts them when the step takes them (rows_unpack). (The same in the
// forward kernels below, with the slice's functors and affine loaded first, was faster at L2-37's 64-value slices,
// 550 -> 542 us at bf16, and slower at L2-88's fp32 forward, 37.0 -> 41.9 us, and L2-75's reduction, 31.2 -> 36.5 us:
// not taken; benchmarks/results/h200/rows/README.md.)
template <class T>
__device__ __forceinline__ PackBits<T> rows_load_bits(const T* __restrict__ base, int64_t pack, bool valid) {
  return valid ? load_bits(base, pack) : PackBits<T>{};
}

template <class T, int kPacks>
__device__ __forceinline__ void rows_unpack(const PackBits<T> (&bits)[kPacks], float (&v)[kPacks][4]) {
#pragma unroll
  for (int k = 0; k < kPacks; ++k) unpack_bits<T>(bits[k], v[k]);
}

template <class T>
__device__ __forceinline__ void rows_store4(T* __restrict__ base, int64_t pack, const float (&v)[4]) {
  store_pack<4>(base, pack, Pack<4>{{v[0], v[1], v[2], v[3]}});
}

// The team width of the rows forward for Linear outputs (N, C) with `groups` groups, or 0 where it does not
// apply (planes, a slice not a multiple of 4 values, or its packs not a power of two up to 32 x
// kRowsMaxPacks). The fewest lanes that give each at most kRowsPacksPerLane packs, more only past 32 lanes.
__host__ __device__ inline int rows_lanes(int64_t channels, int64_t plane, int64_t groups) {
  if (plane != 1 || groups <= 0 || channels % groups != 0 || (channels / groups) % 4 != 0) return 0;
  const int64_t packs = channels / groups / 4;
  if ((packs & (packs - 1)) != 0 || packs > int64_t(kWarpSize) * kRowsMaxPacks) return 0;
  const int64_t wide = packs / kWarpSize;  // packs a lane at 32 lanes
  const int64_t per_lane = packs <= kRowsPacksPerLane ? packs : (wide > kRowsPacksPerLane ? wide : kRowsPacksPerLane);
  return static_cast<int>(packs / per_lane);
}

// One slice in a team's registers: z = Pro(x), its mean (hi, lo) and rstd, and the deviations d = z - mean.
// Every lane of the warp calls it (the butterflies shuffle over the whole warp); a team past the last slice
// computes on zeros.
// The loads issued for the next step become this step's values (register renames once unrolled).
template <int kUnroll, int kPacks>
__device__ __forceinline__ void take_loaded(const float (&next)[kUnroll][kPacks][4], float (&xv)[kUnroll][kPacks][4]) {
#pragma unroll
  for (int j = 0; j < kUnroll; ++j) {
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
#pragma unroll
      for (int e = 0; e < 4; ++e) xv[j][k][e] = next[j][k][e];
    }
  }
}

template <class Pro, int kPacks>
struct RowsSlice {
  float z[kPacks][4];
  float d[kPacks][4];
  float2 mean;
  float rstd;

  __device__ __forceinline__ RowsSlice(const RegionParams& params, const float (&x)[kPacks][4], int cbase,
                                       int lanes, int lane, double inv_d, double eps) {
    using resident_detail::shfl_xor;
    constexpr bool kHasPro = !std::is_same<Pro, NoPrologue>::value;
    double sum = 0.0;
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        z[k][e] = kHasPro ? Pro::at(params, cbase + 4 * (k * lanes + lane) + e).value(x[k][e]) : x[k][e];
      }
      sum += (double(z[k][0]) + double(z[k][1])) + (double(z[k][2]) + double(z[k][3]));
    }
    for (int o = lanes / 2; o > 0; o /= 2) sum += shfl_xor(sum, o);
    const double mu = sum * inv_d;
    const float hi = static_cast<float>(mu);
    mean = make_float2(hi, static_cast<float>(mu - double(hi)));
    float da_lane = 0.f, db_lane = 0.f;
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        d[k][e] = centered(z[k][e], mean);
        da_lane += d[k][e];
        db_lane = fmaf(d[k][e], d[k][e], db_lane);
      }
    }
    double da = da_lane, db = db_lane;
    for (int o = lanes / 2; o > 0; o /= 2) {
      da += shfl_xor(da, o);
      db += shfl_xor(db, o);
    }
    const double var = fmax((db - da * da * inv_d) * inv_d, 0.0);  // biased, as nn.GroupNorm
    rstd = static_cast<float>(rsqrt(var + eps));
    if (params.statistics != kExact) {  // the reference's rounded mean and rstd (round_statistics); d re-centred
      round_statistics(params.statistics, var, eps, mean, rstd);
#pragma unroll
      for (int k = 0; k < kPacks; ++k) {
#pragma unroll
        for (int e = 0; e < 4; ++e) d[k][e] = centered(z[k][e], mean);
      }
    }
  }

  // v = Epi(y, z, x) of pack k, channels c0 .. c0 + 3.
  template <class Epi>
  __device__ __forceinline__ void values(const RegionParams& params, const float* __restrict__ gamma,
                                         const float* __restrict__ beta, bool affine_vec, int k, int c0,
                                         const float (&x)[4], float (&v)[4]) const {
    using namespace resident_detail;
    float g[4], b[4];
    load_affine4(gamma, c0, affine_vec, 1.f, g);
    load_affine4(beta, c0, affine_vec, 0.f, b);
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float y = __fmaf_rn(d[k][e], rstd * g[e], b[e]);  // kCentred (AffineForm)
      v[e] = Epi::at(params, c0 + e).value(y, z[k][e], x[e]);
    }
  }
};

template <class Pro, class Epi, int kBlock, int kPacks, class T = float, int kRounding = kRuntimeRounding>
__global__ void __launch_bounds__(kBlock)
region_rows_forward_kernel(const T* __restrict__ x, const float* __restrict__ gamma,
                           const float* __restrict__ beta, RegionParams params_in, RowsPlan plan, double eps,
                           T* __restrict__ out, float2* __restrict__ mean_out, float* __restrict__ rstd_out) {
  using namespace resident_detail;
  const RegionParams params = with_rounding<kRounding>(params_in);  // region.cuh
  constexpr int kUnroll = rows_unroll(kPacks);
  const int L = plan.lanes;
  const int D = plan.slice;
  const int lane = threadIdx.x & (L - 1);
  const int64_t teams = int64_t(gridDim.x) * (kBlock / L);
  const int64_t team = int64_t(blockIdx.x) * (kBlock / L) + threadIdx.x / L;
  const double inv_d = 1.0 / double(D);  // per-slice arithmetic by multiplies: a thread holds few values of it
  // Loads kUnroll slices of the team, slices first + j * teams + team (zeros past the last slice).
  auto load = [&](int64_t first, float (&v)[kUnroll][kPacks][4]) {
#pragma unroll
    for (int j = 0; j < kUnroll; ++j) {
      const int64_t u = first + j * teams + team;
#pragma unroll
      for (int k = 0; k < kPacks; ++k) rows_load4(x + u * D, k * L + lane, u < plan.units, v[j][k]);
    }
  };
  // Every thread runs the same iterations (the bound is grid-uniform), so whole warps reach each shuffle; a
  // team past the last slice computes on zeros and stores nothing. The next iteration's loads are issued
  // before this one's slices are worked on: a thread keeps its packs in flight through the arithmetic.
  float xv[kUnroll][kPacks][4];
  load(0, xv);
  for (int64_t first = 0; first < plan.units; first += kUnroll * teams) {
    float next[kUnroll][kPacks][4];
    load(first + kUnroll * teams, next);  // predicated off past the last slice
#pragma unroll
    for (int j = 0; j < kUnroll; ++j) {
      const int64_t u = first + j * teams + team;
      const bool valid = u < plan.units;
      int group = 0;
      if (valid) {
        group = plan.units < (int64_t(1) << 31)
                    ? static_cast<int>(u) - plan.div_groups.div(static_cast<int>(u)) * plan.groups
                    : static_cast<int>(u % plan.groups);
      }
      const int cbase = group * D;
      const RowsSlice<Pro, kPacks> s(params, xv[j], cbase, L, lane, inv_d, eps);
      if (!valid) continue;
      if (lane == 0) {
        mean_out[u] = s.mean;
        rstd_out[u] = s.rstd;
      }
#pragma unroll
      for (int k = 0; k < kPacks; ++k) {
        float v[4];
        s.template values<Epi>(params, gamma, beta, plan.affine_vec, k, cbase + 4 * (k * L + lane), xv[j][k], v);
        rows_store4(out + u * D, k * L + lane, v);
      }
    }
    take_loaded(next, xv);
  }
}

// ---- the rows forward with a reduction over each sample's C values (kChannel and kSample, plane == 1)
//
// out[n] = reduce_c v[n, c], e.g. L2-75's min over the channels of a Linear output. A SUB-BLOCK of whole
// warps (plan.sub_warps: the fewest, up to the block, whose lanes cover a sample's G x L slice lanes) takes
// one sample at a time, kUnroll slices a team per step, the next step's loads in flight as above; each thread
// folds the v it computes into its partial (groupnorm/reducers.cuh: the sum, the first extreme and its
// channel, or (max, sum exp)), and at the sample's end the warp's partials merge by butterfly and the
// sub-block's warps in warp order, through shared memory: a fixed order, bitwise reproducible. (The resident
// tiles do this through a 32 KB shared-memory tile and 512 per-slice team reductions in double: H100, L2-75,
// 75 us for 33 MB.) Statistics are as the rows forward's; aux is the winning channel, as the resident
// backward reads it.
struct RowsReducePlan {
  int64_t batch;
  int groups;
  int slice;          // D
  int lanes;          // L
  bool affine_vec;
  int sub_warps;      // warps a sample
  int subs_per_block; // samples a block holds at a time
  int chunks;         // steps a sample: ceil(G / (teams of a sub-block x kUnroll))
  int64_t rounds;     // samples a sub-block takes in turn (the same for every block)
};

// Packs a thread loads before the first is reduced. A sample is a few steps of a few packs (L2-75: 4 steps of
// 2 packs a thread), and each step waits for its loads; more of them in flight per step keep the SM's DRAM
// traffic going through that wait (at the price of registers, and with them blocks an SM).
constexpr int kRowsReducePacksInFlight = 2;
constexpr int rows_reduce_unroll(int packs) {
  return kRowsReducePacksInFlight / packs > 0 ? kRowsReducePacksInFlight / packs : 1;
}

template <class Pro, class Epi, ReduceOp O, int kBlock, int kPacks, class X = float, int kRounding = kRuntimeRounding>
__global__ void __launch_bounds__(kBlock)
region_rows_reduce_kernel(const X* __restrict__ x, const float* __restrict__ gamma,
                          const float* __restrict__ beta, RegionParams params_in, RowsReducePlan plan, double eps,
                          float* __restrict__ out, int* __restrict__ aux, float2* __restrict__ mean_out,
                          float* __restrict__ rstd_out) {
  using namespace resident_detail;
  const RegionParams params = with_rounding<kRounding>(params_in);
  using Red = reduction::Reducer<O>;
  using T = typename Red::T;
  constexpr int kUnroll = rows_reduce_unroll(kPacks);
  constexpr int kWarps = kBlock / kWarpSize;
  __shared__ T per_warp[2][kWarps];  // by sample parity: one barrier a sample
  const int L = plan.lanes;
  const int D = plan.slice;
  const int G = plan.groups;
  const int lane = threadIdx.x & (L - 1);
  const int warp = threadIdx.x / kWarpSize;
  const int sub = warp / plan.sub_warps;
  const int sub_first = sub * plan.sub_warps * kWarpSize;  // the sub-block's first thread
  const int teams = plan.sub_warps * kWarpSize / L;
  const int team = (threadIdx.x - sub_first) / L;
  const int per_step = teams * kUnroll;
  const int64_t subs = int64_t(gridDim.x) * plan.subs_per_block;
  const int64_t my_sub = int64_t(blockIdx.x) * plan.subs_per_block + sub;
  const double inv_d = 1.0 / double(D);
  // Loads step `step` of round r: slices step * per_step + j * teams + team of sample r * subs + my_sub.
  auto load = [&](int64_t r, int step, float (&v)[kUnroll][kPacks][4]) {
    const int64_t n = r * subs + my_sub;
#pragma unroll
    for (int j = 0; j < kUnroll; ++j) {
      const int g = step * per_step + j * teams + team;
      const bool ok = n < plan.batch && g < G;
#pragma unroll
      for (int k = 0; k < kPacks; ++k) rows_load4(x + (n * G + g) * D, k * L + lane, ok, v[j][k]);
    }
  };
  float xv[kUnroll][kPacks][4];
  load(0, 0, xv);
  for (int64_t r = 0; r < plan.rounds; ++r) {  // rounds and chunks are grid-uniform: whole warps shuffle
    const int64_t n = r * subs + my_sub;
    T acc = Red::empty();
    for (int step = 0; step < plan.chunks; ++step) {
      float next[kUnroll][kPacks][4];
      const bool last = step + 1 == plan.chunks;
      load(last ? r + 1 : r, last ? 0 : step + 1, next);
#pragma unroll
      for (int j = 0; j < kUnroll; ++j) {
        const int g = step * per_step + j * teams + team;
        const bool valid = n < plan.batch && g < G;
        const int cbase = (g < G ? g : 0) * D;  // a slice past the sample's last computes on group 0's channels
        const RowsSlice<Pro, kPacks> s(params, xv[j], cbase, L, lane, inv_d, eps);
        if (!valid) continue;
        if (lane == 0) {
          mean_out[n * G + g] = s.mean;
          rstd_out[n * G + g] = s.rstd;
        }
#pragma unroll
        for (int k = 0; k < kPacks; ++k) {
          const int c0 = cbase + 4 * (k * L + lane);
          float v[4];
          s.template values<Epi>(params, gamma, beta, plan.affine_vec, k, c0, xv[j][k], v);
          if constexpr (O == ReduceOp::kLogSumExp) {
            Red::push_many(acc, v);
          } else {
#pragma unroll
            for (int e = 0; e < 4; ++e) Red::push(acc, v[e], c0 + e);
          }
        }
      }
      take_loaded(next, xv);
    }
    const T w = reduction::warp_reduce<Red>(acc);
    if (threadIdx.x % kWarpSize == 0) per_warp[r & 1][warp] = w;
    __syncthreads();
    if (threadIdx.x == sub_first && n < plan.batch) {
      T total = per_warp[r & 1][sub * plan.sub_warps];
      for (int k = 1; k < plan.sub_warps; ++k) total = Red::combine(total, per_warp[r & 1][sub * plan.sub_warps + k]);
      out[n] = Red::result(total, int64_t(G) * D);
      if constexpr (reduction::kHasAux<O>) aux[n] = total.pos;
    }
  }
}

}  // namespace kgen
