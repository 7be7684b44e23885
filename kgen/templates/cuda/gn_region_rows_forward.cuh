// ---- gn_region_rows_forward: the forward of Linear outputs with short slices, from registers ----
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
// H100, benchmarks/h100/rows_v3): 16 lanes x 1 pack, 8 in flight (the first version) 676 us, ncu ~100
// instructions a value and 16 warps an SM; 4 x 4 packs, 8 in flight 505 us; 8 x 2, 4 in flight 446 us;
// 8 x 2, 2 in flight (one slice a team at a time, the loads of the next in flight) 420 us, 2.55 TB/s.
//
// The statistics: the sum of z = Pro(x) in double (a pack's four values added in double, then the pack to
// the lane's sum), reduced over the team by an xor butterfly (a fixed order: every lane gets the same bits,
// every run the same result); then the deviations d = z - mean (the mean a (hi, lo) float pair) summed with
// their squares in float within the lane (at most 32 of them, each small), in double over the team, for the
// corrected two-pass variance. The mean kept as (hi, lo) and rstd in float, as the resident backward reads
// them. kNone only: out = Epi(y, z, x) is stored where it is computed.
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

template <class Pro, class Epi, int kBlock, int kPacks>
__global__ void __launch_bounds__(kBlock)
region_rows_forward_kernel(const float* __restrict__ x, const float* __restrict__ gamma,
                           const float* __restrict__ beta, RegionParams params, RowsPlan plan, double eps,
                           float* __restrict__ out, float2* __restrict__ mean_out, float* __restrict__ rstd_out) {
  using namespace resident_detail;
  constexpr int kUnroll = rows_unroll(kPacks);
  constexpr bool kHasPro = !std::is_same<Pro, NoPrologue>::value;
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
      const float4* src = reinterpret_cast<const float4*>(x + u * D);
#pragma unroll
      for (int k = 0; k < kPacks; ++k) {
        const float4 f = u < plan.units ? __ldg(src + k * L + lane) : make_float4(0.f, 0.f, 0.f, 0.f);
        split4(f, v[j][k]);
      }
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
      float z[kPacks][4];
      double sum = 0.0;
#pragma unroll
      for (int k = 0; k < kPacks; ++k) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          z[k][e] = kHasPro ? Pro::at(params, cbase + 4 * (k * L + lane) + e).value(xv[j][k][e]) : xv[j][k][e];
        }
        sum += (double(z[k][0]) + double(z[k][1])) + (double(z[k][2]) + double(z[k][3]));
      }
      for (int o = L / 2; o > 0; o /= 2) sum += shfl_xor(sum, o);
      const double mu = sum * inv_d;
      const float hi = static_cast<float>(mu);
      const float2 m2 = make_float2(hi, static_cast<float>(mu - double(hi)));
      float d[kPacks][4];
      float da_lane = 0.f, db_lane = 0.f;
#pragma unroll
      for (int k = 0; k < kPacks; ++k) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          d[k][e] = centered(z[k][e], m2);
          da_lane += d[k][e];
          db_lane = fmaf(d[k][e], d[k][e], db_lane);
        }
      }
      double da = da_lane, db = db_lane;
      for (int o = L / 2; o > 0; o /= 2) {
        da += shfl_xor(da, o);
        db += shfl_xor(db, o);
      }
      const double var = fmax((db - da * da * inv_d) * inv_d, 0.0);  // biased, as nn.GroupNorm
      const float rs = static_cast<float>(rsqrt(var + eps));
      if (!valid) continue;
      if (lane == 0) {
        mean_out[u] = m2;
        rstd_out[u] = rs;
      }
      float4* dst = reinterpret_cast<float4*>(out + u * D);
#pragma unroll
      for (int k = 0; k < kPacks; ++k) {
        const int c0 = cbase + 4 * (k * L + lane);
        float g[4], b[4], v[4];
        load_affine4(gamma, c0, plan.affine_vec, 1.f, g);
        load_affine4(beta, c0, plan.affine_vec, 0.f, b);
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const float y = d[k][e] * (rs * g[e]) + b[e];
          v[e] = Epi::at(params, c0 + e).value(y, z[k][e], xv[j][k][e]);
        }
        dst[k * L + lane] = join4(v);
      }
    }
#pragma unroll
    for (int j = 0; j < kUnroll; ++j) {
#pragma unroll
      for (int k = 0; k < kPacks; ++k) {
#pragma unroll
        for (int e = 0; e < 4; ++e) xv[j][k][e] = next[j][k][e];
      }
    }
  }
}

}  // namespace kgen
