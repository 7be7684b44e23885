// ---- groupnorm/resident/forward.cuh: the resident forward kernel (design: groupnorm/resident/resident.cuh) ----
namespace kgen {

// The resident forward's output storage: x's type T without a reduction, float32 after one (the caller rounds it).
template <ReduceKind R, class T>
using ResidentOut = std::conditional_t<R == ReduceKind::kNone, T, float>;

// How the forward's tiles lie (TileStorage): x as it lies; a 2-byte x beside a float32 work tile where the kernel
// writes one (a prologue's z, the values a reduction reads).
template <class Pro, ReduceKind R, class T>
constexpr resident_detail::TileStorage forward_storage() {
  constexpr bool kWrites = !std::is_same<Pro, NoPrologue>::value || R != ReduceKind::kNone;
  return resident_detail::TileStorage{static_cast<int>(sizeof(T)), !std::is_same_v<T, float> && kWrites};
}

// One tile, already in shared memory at `tile_x` as x lies: statistics, normalise, epilogue, reduction, out. `work`:
// the float32 tile the kernel writes (z where there is a prologue, the values a reduction reads); tile_x itself for
// float32 (in place), a tile of its own for a 2-byte x (forward_storage), unused where nothing is written.
// T: x's storage type (float, or float16 / bfloat16 of the output's dtype: resident_half_applies).
template <class Pro, class Epi, ReduceKind R, ReduceOp O, int kBlock, int kGroups, int W, class T>
__device__ __forceinline__ void forward_tile(const resident_detail::TileOrigin<kGroups>& origin, const T* tile_x,
                                             float* work,
                                             double* slice_mean, float2* slice_mean2, float* slice_rstd,
                                             double2* scratch,
                                             const T* __restrict__ x, const float* __restrict__ gamma,
                                             const float* __restrict__ beta, const RegionParams& params,
                                             const ResidentPlan& plan, double eps,
                                             ResidentOut<R, T>* __restrict__ out,
                                             int* __restrict__ aux, float2* __restrict__ mean_out,
                                             float* __restrict__ rstd_out) {
  using namespace resident_detail;
  constexpr bool kHasPro = !std::is_same<Pro, NoPrologue>::value;
  constexpr bool kHalf = !std::is_same_v<T, float>;
  // z = Pro(x) as the passes after the first read it: the work tile where there is a prologue, else x's tile
  using Z = std::conditional_t<kHasPro, float, T>;
  const Z* ztile =
      reinterpret_cast<const Z*>(kHasPro ? static_cast<const void*>(work) : static_cast<const void*>(tile_x));
  const int D = plan.slice;
  const int S = plan.plane;
  const int slices = origin.slices;
  const int64_t offset = origin.u0 * D;
  const T* xt = x + offset;

  // ---- mean of each slice (z = Pro(x) written to the work tile)
  {
    const Team<kBlock> team(plan.tpg);
    const int packs = D / W;
    for (int r = 0; r < plan.rounds_g; ++r) {
      const int gl = r * team.count + team.index;
      double sum = 0.0;
      if (gl < slices) {
        const T* sx = tile_x + gl * D;
        const int cbase = origin.slice_channel(plan, gl);
        for (int q = team.lane; q < packs; q += plan.tpg) {
          float v[W];
          load_values<W>(sx, q, v);
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
            store_values<W>(work + gl * D, q, v);
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
        const Z* sz = ztile + gl * D;
        mu = slice_mean[gl];
        for (int q = team.lane; q < packs; q += plan.tpg) {
          float v[W];
          load_values<W>(sz, q, v);
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
        float2 m2 = make_float2(hi, static_cast<float>(mu - double(hi)));
        float rs = static_cast<float>(1.0 / sqrt(var + eps));
        round_statistics(params.statistics, var, eps, m2, rs);
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
    for (int base = threadIdx.x; base < packs; base += kBlock * kFlatBatch) {
      FlatPacks<kFlatBatch> f;
      f.load<kBlock>(origin, plan, ztile, gamma, beta, base, packs);
#pragma unroll
      for (int u = 0; u < kFlatBatch; ++u) {
        const int p = base + u * kBlock;
        if (p < packs) {
          const int gl = plan.div_cpg.div(4 * p);
          const float2 mu = slice_mean2[gl];
          const float rs = slice_rstd[gl];
          float xv[4];  // dropped by the compiler unless the epilogue reads x
          if constexpr (kHasPro && kHalf) {
            load_values<4>(tile_x, p, xv);
          } else if constexpr (kHasPro) {  // the float32 tile holds z: x from global memory (L2)
            const Pack<4> px = load_pack<4>(xt, p);
#pragma unroll
            for (int e = 0; e < 4; ++e) xv[e] = px.v[e];
          } else {
#pragma unroll
            for (int e = 0; e < 4; ++e) xv[e] = f.v[u][e];
          }
          float v[4];
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const Epi epi = Epi::at(params, f.c[u] + e);
            const float y = affine_y(kCentred, f.v[u][e], mu, rs, f.gamma[u][e], f.beta[u][e]);
            v[e] = epi.value(y, f.v[u][e], xv[e]);
          }
          if constexpr (R == ReduceKind::kNone) {
            store_pack<4>(out + offset, p, Pack<4>{{v[0], v[1], v[2], v[3]}});
          } else {
            store_values<4>(work, p, v);
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
        const float z = to_float(ztile[i]);
        // x, dropped by the compiler unless the epilogue reads it: a 2-byte tile still holds it, a float32 one holds z
        const float xv = kHasPro ? to_float(kHalf ? tile_x[i] : xt[i]) : z;
        const float y = __fmaf_rn(centered(z, mu), scale, shift);  // kCentred (AffineForm)
        const float v = epi.value(y, z, xv);
        if constexpr (R == ReduceKind::kNone) {
          out[offset + i] = from_float<ResidentOut<R, T>>(v);
        } else {
          work[i] = v;
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
          for (int e = team.lane; e < len; e += plan.tpo) sum += double(work[pos(o, e)]);
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
            const float v = work[pos(o, e)];
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
          for (int e = team.lane; e < len; e += plan.tpo) m = MaxNanOp{}(m, work[pos(o, e)]);
        }
        m = team_allreduce<kBlock>(m, plan.tpo, MaxNanOp{}, scratch);
        double sum = 0.0;
        if (valid && isfinite(m)) {
          for (int e = team.lane; e < len; e += plan.tpo) sum += double(expf(work[pos(o, e)] - m));
        }
        sum = team_allreduce<kBlock>(sum, plan.tpo, AddOp{}, scratch);
        if (valid && team.lane == 0) out[out_index(o)] = isfinite(m) ? m + static_cast<float>(log(sum)) : m;
      }
    }
  }
}

// A persistent grid: block b takes tiles b, b + grid, ... With plan.stages == 2 the next tile's copy is in
// flight (cp.async, its own commit group) while the current one is worked on.
template <class Pro, class Epi, ReduceKind R, ReduceOp O, int kBlock, int kGroups, int W, class T>
__global__ void __launch_bounds__(kBlock)
region_resident_forward_kernel(const T* __restrict__ x, const float* __restrict__ gamma,
                               const float* __restrict__ beta, RegionParams params, ResidentPlan plan, double eps,
                               ResidentOut<R, T>* __restrict__ out, int* __restrict__ aux,
                               float2* __restrict__ mean_out, float* __restrict__ rstd_out) {
  using namespace resident_detail;
  constexpr TileStorage kStorage = forward_storage<Pro, R, T>();
  extern __shared__ float4 resident_smem[];
  __shared__ double2 scratch[kBlock / kWarpSize];
  char* smem = reinterpret_cast<char*>(resident_smem);
  const int M = plan.tile_groups;
  const int64_t tile_bytes = forward_tile_bytes(M, plan.slice, kStorage);
  T* buffer[2] = {reinterpret_cast<T*>(smem), reinterpret_cast<T*>(smem + (plan.stages == 2 ? tile_bytes : 0))};
  float* work_tile = reinterpret_cast<float*>(smem + plan.stages * tile_bytes);  // kStorage.work only
  double* slice_mean = reinterpret_cast<double*>(smem + plan.stages * tile_bytes +
                                                 (kStorage.work ? align16(int64_t(M) * plan.slice * 4) : 0));
  float2* slice_mean2 = reinterpret_cast<float2*>(slice_mean + M);
  float* slice_rstd = reinterpret_cast<float*>(slice_mean2 + M);

  auto start_copy = [&](int64_t tile, T* dst) {
    const TileOrigin<kGroups> o(plan, tile);
    copy_tile<kBlock, W>(dst, x + o.u0 * plan.slice, o.slices * plan.slice);
    copies_commit();
  };
  int64_t tile = blockIdx.x;
  if (tile < plan.tiles) start_copy(tile, buffer[0]);
  for (int k = 0; tile < plan.tiles; ++k, tile += gridDim.x) {
    const int64_t next = tile + gridDim.x;
    T* current = buffer[plan.stages == 2 ? (k & 1) : 0];
    float* work = std::is_same_v<T, float> ? reinterpret_cast<float*>(current) : work_tile;
    if (plan.stages == 2 && next < plan.tiles) {
      start_copy(next, buffer[(k + 1) & 1]);  // that buffer's last tile was finished before the barrier below
      copies_wait<1>();  // every committed copy but the next tile's
    } else {
      copies_done();
    }
    __syncthreads();
    const TileOrigin<kGroups> origin(plan, tile);
    forward_tile<Pro, Epi, R, O, kBlock, kGroups, W, T>(origin, current, work, slice_mean, slice_mean2, slice_rstd,
                                                        scratch, x, gamma, beta, params, plan, eps, out, aux,
                                                        mean_out, rstd_out);
    __syncthreads();  // the tile's buffer and the statistics are free again
    if (plan.stages == 1 && next < plan.tiles) start_copy(next, buffer[0]);
  }
}

}  // namespace kgen
