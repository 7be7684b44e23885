// ---- groupnorm/resident/backward.cuh: the resident backward kernel (design: groupnorm/resident/resident.cuh) ----
namespace kgen {

// T: the storage type of dout, x and dx (float, or float16 / bfloat16 of the output's dtype: resident_half_applies).
// The tiles hold x and dout as they lie (cp.async, no registers); the passes only read them, converting exactly.
template <class Pro, class Epi, ReduceKind R, ReduceOp O, int kBlock, int kGroups, int W, class T>
__global__ void __launch_bounds__(kBlock)
region_resident_backward_kernel(const T* __restrict__ dout, const T* __restrict__ x,
                                const float* __restrict__ gamma, const float* __restrict__ beta,
                                RegionParams params, ResidentPlan plan, const float2* __restrict__ mean,
                                const float* __restrict__ rstd, const float* __restrict__ out,
                                const int* __restrict__ aux, T* __restrict__ dx, float* __restrict__ partial) {
  using namespace resident_detail;
  constexpr bool kNone = R == ReduceKind::kNone;
  constexpr int kPro = Pro::kParams, kEpi = Epi::kParams;
  constexpr int K = 2 + kPro + kEpi;  // rows of `partial`: dgamma, dbeta, prologue, epilogue
  const int form = affine_form(params.faithful, gamma != nullptr, beta != nullptr);  // the forward's y (AffineForm)
  extern __shared__ float4 resident_smem[];
  __shared__ double2 scratch[kBlock / kWarpSize];
  const int M = plan.tile_groups;
  const int slab = M * plan.cpg;  // channels of a tile (a whole slab in the slab mode)
  // Slab mode: this block's running parameter sums, K rows of its slab's channels, after the tile's arrays.
  char* smem = reinterpret_cast<char*>(resident_smem);
  const int64_t tile_bytes = backward_tile_bytes(M, plan.slice, sizeof(T));
  float* acc = plan.parts > 0 ? reinterpret_cast<float*>(
                                    smem + align16(backward_smem_bytes(M, plan.slice, plan.cpg, kNone, sizeof(T))))
                              : nullptr;
  if (acc != nullptr) {
    for (int i = threadIdx.x; i < K * slab; i += kBlock) acc[i] = 0.f;  // ordered by the tile's first barrier
  }
  // Adds v to the sums of tile channel tc in row k (slab mode), or stores it as sample n's (c) partial.
  auto put = [&](int64_t n, int c, int tc, int k, float v) {
    if (acc != nullptr) {
      acc[k * slab + tc] += v;
    } else {
      partial[(n * K + k) * plan.channels + c] = v;
    }
  };
  auto put4 = [&](int64_t n, int c, int tc, int k, const float (&v)[4]) {
    if (acc != nullptr) {
      float4* a = reinterpret_cast<float4*>(acc + k * slab + tc);
      const float4 o = *a;
      *a = make_float4(o.x + v[0], o.y + v[1], o.z + v[2], o.w + v[3]);
    } else {
      *reinterpret_cast<float4*>(partial + (n * K + k) * plan.channels + c) = join4(v);
    }
  };

  auto backward_tile = [&](int64_t tile) {
    const TileOrigin<kGroups> origin(plan, tile);
    const int D = plan.slice;
    const int S = plan.plane;
    const int C = static_cast<int>(plan.channels);
    const int slices = origin.slices;
    const int tile_channels = slices * plan.cpg;
    T* xs = reinterpret_cast<T*>(smem);
    T* ds = reinterpret_cast<T*>(smem + tile_bytes);  // dout (kNone only)
    float* chan_dy = reinterpret_cast<float*>(smem + tile_bytes * (kNone ? 2 : 1));
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
        return to_float(ds[i]);
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
        const float g = load1(dout + o);
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
        FlatPacks<kFlatBatchBack> f;
        f.load<kBlock>(origin, plan, xs, gamma, beta, base, packs);
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
              const int c = f.c[u] + e;
              const Pro pro = Pro::at(params, c);
              const Epi epi = Epi::at(params, c);
              const float x1 = f.v[u][e];
              const float z = pro.value(x1);
              const float xh = centered(z, mu) * rs;
              const float y = affine_y(form, z, mu, rs, f.gamma[u][e], f.beta[u][e]);  // the forward's y
              const float v = epi.value(y, z, x1);
              const float dv = grad_v(4 * p + e, f.n[u], c, 4 * p + e, 0, v);
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
            put4(f.n[u], f.c[u], 4 * p, 0, dyxv);  // dgamma
            put4(f.n[u], f.c[u], 4 * p, 1, dyv);   // dbeta
#pragma unroll
            for (int k = 0; k < kEpi; ++k) put4(f.n[u], f.c[u], 4 * p, 2 + kPro + k, pev[k]);
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
            const float xv = to_float(xs[i]);
            const float z = pro.value(xv);
            const float xh = centered(z, mu) * rs;
            const float y = affine_y(form, z, mu, rs, gm, bt);  // the forward's y
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
          put(n, c, tc, 0, static_cast<float>(sdyx));  // dgamma
          put(n, c, tc, 1, static_cast<float>(sdy));   // dbeta
#pragma unroll
          for (int k = 0; k < kEpi; ++k) put(n, c, tc, 2 + kPro + k, static_cast<float>(sepi[k]));
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
        FlatPacks<kFlatBatchBack> f;
        f.load<kBlock>(origin, plan, xs, gamma, beta, base, packs);
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
              const int c = f.c[u] + e;
              const Pro pro = Pro::at(params, c);
              const Epi epi = Epi::at(params, c);
              const float x1 = f.v[u][e];
              const float z = pro.value(x1);
              const float xh = centered(z, mu) * rs;
              const float y = affine_y(form, z, mu, rs, f.gamma[u][e], f.beta[u][e]);  // the forward's y
              const float v = epi.value(y, z, x1);
              const float dv = grad_v(4 * p + e, f.n[u], c, 4 * p + e, 0, v);
              float dy = 0.f, dzd = 0.f, dxd = 0.f;
              float unused[kMaxParams] = {0.f, 0.f, 0.f, 0.f};
              epi.backward(y, z, x1, dv, dy, dzd, dxd, unused);
              const float dz = rs * fmaf(cb, xh, __fadd_rn(__fmul_rn(f.gamma[u][e], dy), ca)) + dzd;
              float pk[kMaxParams] = {0.f, 0.f, 0.f, 0.f};
              dxv[e] = pro.backward(x1, dz, pk) + dxd;
#pragma unroll
              for (int k = 0; k < kMaxParams; ++k) ppv[k][e] = pk[k];
            }
            store_pack<4>(dx + offset, p, Pack<4>{{dxv[0], dxv[1], dxv[2], dxv[3]}});
#pragma unroll
            for (int k = 0; k < kPro; ++k) put4(f.n[u], f.c[u], 4 * p, 2 + k, ppv[k]);
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
          const float xv = to_float(xs[i]);
          const float z = pro.value(xv);
          const float xh = centered(z, mu) * rs;
          const float y = affine_y(form, z, mu, rs, gm, bt);  // the forward's y
          const float v = epi.value(y, z, xv);
          const float dv = grad_v(i, n, c, tc, s, v);
          float dy = 0.f, dzd = 0.f, dxd = 0.f;
          float unused[kMaxParams] = {0.f, 0.f, 0.f, 0.f};
          epi.backward(y, z, xv, dv, dy, dzd, dxd, unused);
          // rstd (gamma dy - A / D - xhat B / D): gamma dy rounded once, as the A it cancels against was formed,
          // so a one-value slice gives exactly 0
          const float dz = rs * fmaf(cb, xh, __fadd_rn(__fmul_rn(gm, dy), ca)) + dzd;
          dx[offset + i] = from_float<T>(pro.backward(xv, dz, acc_pro) + dxd);
        }
      }
      if constexpr (kPro > 0) {
        double spro[kMaxParams];
#pragma unroll
        for (int k = 0; k < kPro; ++k) spro[k] = team_allreduce<kBlock>(double(acc_pro[k]), plan.tpc, AddOp{}, scratch);
        if (valid && team.lane == 0) {
#pragma unroll
          for (int k = 0; k < kPro; ++k) put(n, c, tc, 2 + k, static_cast<float>(spro[k]));
        }
      }
    }
  };  // backward_tile

  if (plan.parts == 0) {  // one tile, one row of partials per sample
    backward_tile(blockIdx.x);
    return;
  }
  const int part = static_cast<int>(blockIdx.x % plan.parts);
  const int64_t first = blockIdx.x / plan.parts;
  for (int64_t n = first; n < plan.batch; n += plan.rows) {
    backward_tile(n * plan.parts + part);
    __syncthreads();  // every thread is done with this tile's arrays before the next tile's copies land
  }
  float* row = partial + first * K * plan.channels + int64_t(part) * slab;
  for (int i = threadIdx.x; i < K * slab; i += kBlock) row[int64_t(i / slab) * plan.channels + i % slab] = acc[i];
}

}  // namespace kgen
