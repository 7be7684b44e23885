// ---- groupnorm/rows/backward.cuh: the backward of Linear outputs with short slices, from registers ----
//
// The rows forward's layout (groupnorm/rows/forward.cuh) run backward: Linear outputs (plane == 1), slices of
// D = C / G values held by a TEAM of L lanes, kPacks 16-byte packs a lane (the plan takes one:
// rows_backward_lanes); a team of up to a block, its warps' sums met in shared memory past 32 lanes. The
// resident backward's tiles (copy x and dout to shared memory, barrier, per-channel sweep, barrier, per-slice
// sums, barrier, dx sweep) keep too few bytes moving here (H100: L2-37 1.78 ms for
// 1.61 GB, 0.90 TB/s; the 1024 x 8192 problems 86-200 us for 0.10 GB, plus 45-55 us summing per-sample
// parameter rows as large as x).
//
// Each team owns ONE group g and strides over the samples (team t: g = t % G, samples t / G, t / G + R, ...
// with R = teams / G rows), so a lane's channels never change and their parameter gradients (dgamma, dbeta,
// the prologue's and epilogue's) add up in registers across the team's samples, then land as one row of
// `partial` (R, K, C), which column_sums adds in a fixed order: bitwise reproducible. Per slice: x and dout
// (kNone; a reduction's per-sample gradient otherwise) loaded one step ahead, everything
// recomputed from x and the saved (mean, rstd), A = sum gamma dy and B = sum gamma dy xhat (summed in float
// within a lane, then over the team by an xor butterfly in double, then over its warps in shared memory in
// warp order), then dx = Pro'(x) (rstd (gamma dy - A / D - xhat B / D) + dz_epi) + dx_epi stored. The step
// count is the same for every thread, so whole warps reach each shuffle and the whole block each barrier.
//
// Measured (H100, L2-37's (32768, 4096) Swish + bias region, 64-value slices, teams of 16 lanes; kernel time
// in one run each): 625 us as written (the functors in registers, one sigmoid a value, float lane sums, registers
// capped for 24 warps an SM: 80, no spill; the 94 uncapped leave 16); 707 us uncapped; 718 us with double lane
// sums; 860 us with the functors reloaded per value and pass 2 recomputing the sigmoid. Loads 2-3 steps ahead, or
// 32 warps (spills), are slower.
namespace kgen {

struct RowsBackwardPlan {
  int64_t batch;
  int groups;
  int slice;       // D
  int lanes;       // L
  int64_t rows;    // R = teams / groups
  int64_t steps;   // ceil(batch / rows)
  bool affine_vec;
};

// Warps an SM the registers are capped for at a pack a lane. Two packs a lane are left uncapped (139 registers
// at L2-37's functors; capped to 80 they spill 336 bytes: not measured).
constexpr int kRowsBackwardWarps = 24;

template <class Pro, class Epi, ReduceKind R, ReduceOp O, int kBlock, int kPacks, class T = float,
          int kRounding = kRuntimeRounding>
__global__ void __launch_bounds__(kBlock, kPacks == 1 ? min_blocks_for_warps(kRowsBackwardWarps, kBlock) : 1)
region_rows_backward_kernel(const T* __restrict__ dout, const T* __restrict__ x,
                            const float* __restrict__ gamma, const float* __restrict__ beta, RegionParams params_in,
                            RowsBackwardPlan plan, const float2* __restrict__ mean, const float* __restrict__ rstd,
                            const float* __restrict__ out, const int* __restrict__ aux, T* __restrict__ dx,
                            float* __restrict__ partial) {
  using namespace resident_detail;
  const RegionParams params = with_rounding<kRounding>(params_in);  // region.cuh
  static_assert(R == ReduceKind::kNone || R == ReduceKind::kChannel || R == ReduceKind::kSample,
                "the rows backward takes kNone, kChannel and kSample");
  constexpr bool kNone = R == ReduceKind::kNone;
  constexpr int kPro = Pro::kParams, kEpi = Epi::kParams;
  constexpr int K = 2 + kPro + kEpi;  // rows of `partial`: dgamma, dbeta, prologue, epilogue
  const int form = affine_form(params.faithful, gamma != nullptr, beta != nullptr);  // the forward's y (AffineForm)
  const int L = plan.lanes;
  const int D = plan.slice;
  const int64_t C = int64_t(plan.groups) * D;
  const int lane = threadIdx.x & (L - 1);
  const int64_t team = int64_t(blockIdx.x) * (kBlock / L) + threadIdx.x / L;
  const int group = static_cast<int>(team % plan.groups);
  const int64_t row = team / plan.groups;
  const int cbase = group * D;
  const double inv_d = 1.0 / double(D);
  // Teams wider than a warp: each warp's (A, B) per step, double-buffered by step parity so that one barrier
  // a step suffices (a warp writes a step's slot again only two steps later, past the next step's barrier,
  // which every reader of this step reaches after reading).
  __shared__ double2 team_sums[2][kBlock / kWarpSize];

  // A lane's channels never change: their gamma, beta and functors are loaded once, into registers (so the
  // compiler also sees that pass 2's recomputation of z is pass 1's).
  float gm[kPacks][4], bt[kPacks][4];
  Pro pros[kPacks][4];
  Epi epis[kPacks][4];
#pragma unroll
  for (int k = 0; k < kPacks; ++k) {
    load_affine4(gamma, cbase + 4 * (k * L + lane), plan.affine_vec, 1.f, gm[k]);
    load_affine4(beta, cbase + 4 * (k * L + lane), plan.affine_vec, 0.f, bt[k]);
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      pros[k][e] = Pro::at(params, cbase + 4 * (k * L + lane) + e);
      epis[k][e] = Epi::at(params, cbase + 4 * (k * L + lane) + e);
    }
  }
  float acc[K][kPacks][4];
#pragma unroll
  for (int r = 0; r < K; ++r) {
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[r][k][e] = 0.f;
    }
  }
  // x and (kNone) dout of the team's sample at step j: zeros past the last sample.
  // As bits, converted when the step takes them (rows/forward.cuh: rows_load_bits).
  auto load = [&](int64_t j, PackBits<T> (&xb)[kPacks], PackBits<T> (&gb)[kPacks]) {
    const int64_t n = row + j * plan.rows;
    const bool valid = n < plan.batch;
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
      xb[k] = rows_load_bits(x + n * C + cbase, k * L + lane, valid);
      if constexpr (kNone) gb[k] = rows_load_bits(dout + n * C + cbase, k * L + lane, valid);
    }
  };

  PackBits<T> xb[kPacks], gb[kPacks];
  load(0, xb, gb);
  for (int64_t j = 0; j < plan.steps; ++j) {
    PackBits<T> xn[kPacks], gn[kPacks];
    load(j + 1, xn, gn);  // predicated off past the last sample
    float xv[kPacks][4], gv[kPacks][4];
    rows_unpack<T>(xb, xv);
    if constexpr (kNone) rows_unpack<T>(gb, gv);
    const int64_t n = row + j * plan.rows;
    const bool valid = n < plan.batch;
    const int64_t u = n * plan.groups + group;
    const float2 mu = valid ? mean[u] : make_float2(0.f, 0.f);
    const float rs = valid ? rstd[u] : 0.f;
    float g_sample = 0.f, out_sample = 0.f;
    int at_sample = -1;
    if constexpr (!kNone) {
      if (valid) {
        g_sample = load1(dout + n);
        if constexpr (O == ReduceOp::kMax || O == ReduceOp::kMin) at_sample = __ldg(aux + n);
        if constexpr (O == ReduceOp::kLogSumExp) out_sample = __ldg(out + n);
      }
    }
    // pass 1: dy and the epilogue's derivatives of each value; the slice sums A, B
    float xh[kPacks][4], dy[kPacks][4], dzd[kPacks][4], dxd[kPacks][4];
    float lane_a = 0.f, lane_b = 0.f;  // this lane's share of A and B
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int c = cbase + 4 * (k * L + lane) + e;
        const Pro& pro = pros[k][e];
        const Epi& epi = epis[k][e];
        const float z = pro.value(xv[k][e]);
        xh[k][e] = centered(z, mu) * rs;
        const float y = affine_y(form, z, mu, rs, gm[k][e], bt[k][e]);  // the forward's y, to the bit
        const float v = epi.value(y, z, xv[k][e]);
        float dv;
        if constexpr (kNone) {
          dv = gv[k][e];
        } else if constexpr (O == ReduceOp::kSum) {
          dv = g_sample;
        } else if constexpr (O == ReduceOp::kMean) {
          dv = g_sample * (1.f / float(C));
        } else if constexpr (O == ReduceOp::kMax || O == ReduceOp::kMin) {
          dv = at_sample == c ? g_sample : 0.f;
        } else {
          dv = g_sample * expf(v - out_sample);
        }
        if (!valid) dv = 0.f;
        float pe[kMaxParams] = {0.f, 0.f, 0.f, 0.f};
        dzd[k][e] = 0.f;
        dxd[k][e] = 0.f;
        epi.backward(y, z, xv[k][e], dv, dy[k][e], dzd[k][e], dxd[k][e], pe);
        const float dyx = dy[k][e] * xh[k][e];
        acc[0][k][e] += dyx;       // dgamma
        acc[1][k][e] += dy[k][e];  // dbeta
#pragma unroll
        for (int p = 0; p < kEpi; ++p) acc[2 + kPro + p][k][e] += pe[p];
        lane_a = fmaf(gm[k][e], dy[k][e], lane_a);
        lane_b = fmaf(gm[k][e], dyx, lane_b);
      }
    }
    double a = lane_a, b = lane_b;
    for (int o = (L < kWarpSize ? L : kWarpSize) / 2; o > 0; o /= 2) {
      a += shfl_xor(a, o);
      b += shfl_xor(b, o);
    }
    if (L > kWarpSize) {  // a team of several warps: their sums meet in shared memory, added in warp order
      double2* slot = team_sums[j & 1];
      if ((threadIdx.x & (kWarpSize - 1)) == 0) slot[threadIdx.x / kWarpSize] = make_double2(a, b);
      __syncthreads();
      const int first = static_cast<int>(threadIdx.x) / L * (L / kWarpSize);
      a = 0.0;
      b = 0.0;
      for (int w = 0; w < L / kWarpSize; ++w) {
        a += slot[first + w].x;
        b += slot[first + w].y;
      }
    }
    const float ca = static_cast<float>(-a * inv_d), cb = static_cast<float>(-b * inv_d);
    // pass 2: dx, and the prologue's parameter gradients
    T* dst = dx + n * C + cbase;
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
      float d[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const Pro& pro = pros[k][e];
        // gamma dy rounded once, as the A it cancels against was formed: a one-value slice gives exactly 0
        const float dz = rs * fmaf(cb, xh[k][e], __fadd_rn(__fmul_rn(gm[k][e], dy[k][e]), ca)) + dzd[k][e];
        float pk[kMaxParams] = {0.f, 0.f, 0.f, 0.f};
        d[e] = pro.backward(xv[k][e], dz, pk) + dxd[k][e];
#pragma unroll
        for (int p = 0; p < kPro; ++p) acc[2 + p][k][e] += valid ? pk[p] : 0.f;
      }
      if (valid) rows_store4(dst, k * L + lane, d);
    }
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {  // the loads issued for the next step become this step's
      xb[k] = xn[k];
      if constexpr (kNone) gb[k] = gn[k];
    }
  }
  // this team's row of partial: (R, K, C)
#pragma unroll
  for (int r = 0; r < K; ++r) {
    float4* dst = reinterpret_cast<float4*>(partial + (row * K + r) * C + cbase);
#pragma unroll
    for (int k = 0; k < kPacks; ++k) dst[k * L + lane] = join4(acc[r][k]);
  }
}

}  // namespace kgen
