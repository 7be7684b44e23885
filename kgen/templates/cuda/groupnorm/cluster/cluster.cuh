// ---- groupnorm/cluster/cluster.cuh: a region's backward (kPlane, kSample) and forward (kNone) with each slice held on chip
// by a thread-block cluster ----
//
// For the reductions over a plane or a sample (kPlane, kSample), the two-pass backward (groupnorm/twopass/twopass.cuh)
// reads x twice: a sweep for the group sums of dy and dy (z - mean), then a sweep for dx; dout is one value
// per plane or sample. Here a CLUSTER of K blocks (Hopper, sm_90 and newer) takes one (sample, group) slice of
// D = C/G * plane contiguous values. Block k copies its range [k R, k R + R) of x into its shared memory
// (cp.async) and works from there:
//
//   pass A   per channel piece of the range: z, y, v recomputed, dv (Upstream: the reduction's backward),
//            dy = Epi::backward; block sums of dy, dy (z - mean) and the epilogue's parameter gradients into
//            the block's TABLE (one row per channel of the group, 0 where the block holds none of it)
//   group    cluster barrier; warp 0 of every block reads the K tables through distributed shared memory in
//            rank order, in double, and forms the per-plane sums and the coefficients B, C exactly as
//            backward_group_kernel does, so every block gets the same bits; block 0 writes the plane sums
//            (param_grad_kernel's dgamma, dbeta) and the epilogue's parameter gradients per plane
//   pass B   per piece: dz = rstd gamma dy + B (z - mean) + C + direct dz, dx = Pro::backward + direct dx,
//            written; the prologue's parameter gradients into the table, which block 0 sums over the
//            cluster (a second barrier) per plane
//
// DRAM traffic is the floor: x read once, dx written once, against x twice for the two sweeps.
//
// Sizing (cluster_plan): the smallest K of 2, 4, 8, 16 whose range takes at most kClusterBlockBytes of
// shared memory, so that several blocks share an SM and one block's copy overlaps another's work (with one
// block per SM the copy and the work alternate: the resident path measured 0.48 TB/s that way on the H100,
// L2-27's 175 KB slices). The two-pass backward runs instead for the other reductions (cluster_takes), where
// no K fits (slices of more than 16 x 64 KB), on GPUs older than sm_90, where the kernel was not built for
// sm_90, and for planes shorter than kClusterMinPlane (a block tree per piece would dominate).
// region_backward_twopass (groupnorm/twopass/forward_host.cuh) tries it first, after the same checks.
// No float atomics anywhere: every result is bitwise reproducible.
namespace kgen {
namespace region_cluster {

using region_twopass::Geometry;
using region_twopass::Upstream;

constexpr int kMaxCluster = 16;                   // 16 is past the portable 8: opted in per kernel
constexpr int64_t kClusterBlockBytes = 64 * 1024;  // three blocks per H100 SM (228 KB)
constexpr int64_t kClusterMinPlane = 512;
constexpr int kClusterThreads = 256;               // threads of a block (the solution's kBlock is not used)

// The reductions the cluster backward takes: those whose dv is one number per plane or sample, so that a
// block holds x alone. Measured against the two-pass sweeps on the H100:
//   kNone     x and dout held, 8 bytes a value: L2-83 0.80-0.82 ms against 0.74-0.76, not taken
//   kWindow   a gather and divisions per element: L2-85 1.21 against 1.00 ms, not taken
//   kChannel  an exp of the epilogue's value and two loads at (n, s) per element: L2-92 0.97-1.18 against
//             0.86 ms, not taken
// The two-pass sweeps keep an SM full of warps to hide that work; the cluster's blocks hold shared memory.
template <ReduceKind R>
constexpr bool cluster_takes() {
  return R == ReduceKind::kPlane || R == ReduceKind::kSample;
}

struct ClusterPlan {
  int cluster;         // K: blocks per slice
  int cpg;             // channels per group
  int64_t slice;       // D
  int64_t range;       // R: values per block, a multiple of 4
  int64_t smem_bytes;  // dynamic shared memory of one block
  bool copy16;         // 16-byte copies in: D % 4 == 0 and x 16-byte aligned
  bool feasible;
};

// The table's columns per channel: sum dy, sum dy (z - mean), the epilogue's parameter gradients (pass A),
// then the prologue's (pass B).
template <class Pro, class Epi>
constexpr int table_columns() {
  return 2 + Epi::kParams + Pro::kParams;
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
__device__ __forceinline__ unsigned cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
// Every thread of every block of the cluster arrives (release: this block's shared writes become visible to
// the others) and, at the wait, has seen every other arrive (acquire).
__device__ __forceinline__ void cluster_arrive() {
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
}
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory"); }

// The float at `local`'s offset in block `rank`'s shared memory (distributed shared memory).
__device__ __forceinline__ float remote_load(const float* local, unsigned rank) {
  const unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(local));
  unsigned remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(addr), "r"(rank));
  float v;
  asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(remote) : "memory");
  return v;
}
#endif

// The channel pieces of a block's range [begin, begin + count) of a slice of planes of S values: body(k, lo, hi)
// for channel k of the group and the piece's values [lo, hi) in range coordinates.
template <class Body>
__device__ __forceinline__ void for_pieces(int64_t begin, int64_t count, int64_t S, Body&& body) {
  if (count <= 0) return;
  const int64_t end = begin + count;
  for (int64_t k = begin / S; k * S < end; ++k) body(k, max(begin, k * S) - begin, min(end, (k + 1) * S) - begin);
}

// W values of the held range at offset e (16-byte aligned where W = 4).
template <int W>
__device__ __forceinline__ Pack<W> held_pack(const float* held, int64_t e) {
  Pack<W> p;
  if constexpr (W == 4) {
    const float4 f = *reinterpret_cast<const float4*>(held + e);
    p.v[0] = f.x, p.v[1] = f.y, p.v[2] = f.z, p.v[3] = f.w;
  } else {
    p.v[0] = held[e];
  }
  return p;
}

// W = 4 where planes are whole packs and every stream at the element's position is 16-byte aligned (pieces
// then start and end on packs), else 1.
template <class Pro, class Epi, ReduceKind R, ReduceOp O, int kBlock, int W>
__global__ void __launch_bounds__(kBlock)
cluster_backward_kernel(const float* __restrict__ x, const float* __restrict__ dout, const float* __restrict__ out,
                        const int* __restrict__ aux, RegionParams params, RegionShape shape, Geometry geo,
                        ClusterPlan plan, const float2* __restrict__ mean, const float* __restrict__ rstd,
                        const float* __restrict__ gamma, const float* __restrict__ beta, float* __restrict__ dx,
                        double2* __restrict__ plane_sums, float* __restrict__ epi_grad,
                        float* __restrict__ pro_grad) {
  static_assert(cluster_takes<R>(), "the cluster backward takes kPlane and kSample");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  constexpr int kCols = table_columns<Pro, Epi>();
  constexpr int kSumsA = 2 + Epi::kParams;
  extern __shared__ float4 smem4[];
  float* held_x = reinterpret_cast<float*>(smem4);
  float* table = held_x + plan.range;  // [cpg][kCols]
  __shared__ float2 coef;

  const int K = plan.cluster;
  const unsigned rank = cluster_rank();
  const int64_t row = blockIdx.x / K;  // (sample, group)
  const int64_t S = shape.plane, cpg = plan.cpg, C = shape.channels;
  const int64_t n = row / shape.groups, g = row - n * shape.groups;
  const int64_t begin = int64_t(rank) * plan.range;
  const int64_t count = max(int64_t(0), min(plan.range, plan.slice - begin));
  const int64_t at = row * plan.slice + begin;  // the range's first value in x and dx
  const int64_t planes = shape.batch * C;

  // Copy the range in; the table starts at 0.
  if (plan.copy16) {
    for (int64_t i = threadIdx.x; i < count / 4; i += kBlock) copy16(held_x + 4 * i, x + at + 4 * i);
  } else {
    for (int64_t i = threadIdx.x; i < count; i += kBlock) copy4(held_x + i, x + at + i);
  }
  for (int i = threadIdx.x; i < cpg * kCols; i += kBlock) table[i] = 0.f;
  copies_done();
  __syncthreads();

  // One element recomputed from its x at position s of channel c's plane: z, z - mean, y, and v's gradient.
  struct Recomputed {
    float z, zc, y, dv;
  };
  auto recompute = [&](const auto& ch, const Upstream<R, O>& up, int64_t c, float xv, int64_t s) {
    Recomputed r;
    r.z = ch.pro.value(xv);
    r.zc = centered(r.z, ch.mean);
    r.y = __fmaf_rn(r.zc, ch.scale, ch.shift);  // kCentred (the cluster kernel is never faithful)
    r.dv = up.dv(ch, xv, r.z, r.y, static_cast<uint32_t>(s), 0.f, 0.f, c, shape, geo, dout, out, aux);
    return r;
  };

  // Pass A.
  for_pieces(begin, count, S, [&](int64_t k, int64_t lo, int64_t hi) {
    const int64_t c = g * cpg + k, pl = n * C + c;
    const auto ch = region_twopass::load_channel<Pro, Epi>(params, c, row, mean, rstd, gamma, beta);
    const Upstream<R, O> up(shape, geo, pl, n, c, dout, out, aux);
    float sums[kSumsA];
#pragma unroll
    for (int i = 0; i < kSumsA; ++i) sums[i] = 0.f;
    float dparam[kMaxParams] = {0.f, 0.f, 0.f, 0.f};
    const int64_t s0 = begin - k * S;  // plane position of range offset 0
#pragma unroll 4
    for (int64_t e = lo + int64_t(threadIdx.x) * W; e < hi; e += int64_t(kBlock) * W) {
      const Pack<W> xs = held_pack<W>(held_x, e);
#pragma unroll
      for (int j = 0; j < W; ++j) {
        const float xv = xs.v[j];
        const Recomputed el = recompute(ch, up, c, xv, s0 + e + j);
        float dy = 0.f, dz_direct = 0.f, dx_direct = 0.f;
        ch.epi.backward(el.y, el.z, xv, el.dv, dy, dz_direct, dx_direct, dparam);
        sums[0] += dy;
        sums[1] += dy * el.zc;
      }
    }
#pragma unroll
    for (int i = 2; i < kSumsA; ++i) sums[i] = dparam[i - 2];
    region_twopass::block_sums<kBlock, kSumsA>(sums);
    if (threadIdx.x == 0) {
#pragma unroll
      for (int i = 0; i < kSumsA; ++i) table[k * kCols + i] = sums[i];
    }
    __syncthreads();  // block_sums' scratch is free again
  });

  // The group's coefficients from the K tables (rank order, double), as backward_group_kernel forms them.
  cluster_arrive();
  cluster_wait();
  if (threadIdx.x < kWarpSize) {
    const int lane = threadIdx.x;
    double sum_gamma_dy = 0.0, sum_gamma_dy_centered = 0.0;
    for (int64_t k = lane; k < cpg; k += kWarpSize) {
      double s0 = 0.0, s1 = 0.0;
      for (int r = 0; r < K; ++r) {
        s0 += remote_load(table + k * kCols, r);
        s1 += remote_load(table + k * kCols + 1, r);
      }
      const int64_t c = g * cpg + k, pl = n * C + c;
      if (rank == 0) {
        plane_sums[pl] = make_double2(s0, s1);
#pragma unroll
        for (int p = 0; p < Epi::kParams; ++p) {
          double e = 0.0;
          for (int r = 0; r < K; ++r) e += remote_load(table + k * kCols + 2 + p, r);
          epi_grad[p * planes + pl] = static_cast<float>(e);
        }
      }
      const double gm = gamma != nullptr ? double(__ldg(gamma + c)) : 1.0;
      sum_gamma_dy += gm * s0;
      sum_gamma_dy_centered += gm * s1;
    }
    sum_gamma_dy = warp_sum(sum_gamma_dy);
    sum_gamma_dy_centered = warp_sum(sum_gamma_dy_centered);
    if (lane == 0) {
      const double r = rstd[row];
      const double d = double(cpg) * double(S);
      coef = make_float2(static_cast<float>(-r * r * r / d * sum_gamma_dy_centered),
                         static_cast<float>(-r / d * sum_gamma_dy));
    }
  }
  cluster_arrive();  // this block is done reading the others' tables
  __syncthreads();   // coef
  const float2 bc = coef;

  // Pass B.
  for_pieces(begin, count, S, [&](int64_t k, int64_t lo, int64_t hi) {
    const int64_t c = g * cpg + k, pl = n * C + c;
    const auto ch = region_twopass::load_channel<Pro, Epi>(params, c, row, mean, rstd, gamma, beta);
    const Upstream<R, O> up(shape, geo, pl, n, c, dout, out, aux);
    float dparam[kMaxParams] = {0.f, 0.f, 0.f, 0.f};
    float discard[kMaxParams] = {0.f, 0.f, 0.f, 0.f};
    const int64_t s0 = begin - k * S;
    float* dst = dx + at;
#pragma unroll 4
    for (int64_t e = lo + int64_t(threadIdx.x) * W; e < hi; e += int64_t(kBlock) * W) {
      const Pack<W> xs = held_pack<W>(held_x, e);
      Pack<W> r;
#pragma unroll
      for (int j = 0; j < W; ++j) {
        const float xv = xs.v[j];
        const Recomputed el = recompute(ch, up, c, xv, s0 + e + j);
        float dy = 0.f, dz_direct = 0.f, dx_direct = 0.f;
        ch.epi.backward(el.y, el.z, xv, el.dv, dy, dz_direct, dx_direct, discard);
        const float dz = (ch.scale * dy + bc.x * el.zc + bc.y) + dz_direct;
        r.v[j] = ch.pro.backward(xv, dz, dparam) + dx_direct;
      }
      store_pack<W>(dst + e, 0, r);
    }
    (void)discard;
    if constexpr (Pro::kParams > 0) {
      float sums[Pro::kParams];
#pragma unroll
      for (int i = 0; i < Pro::kParams; ++i) sums[i] = dparam[i];
      region_twopass::block_sums<kBlock, Pro::kParams>(sums);
      if (threadIdx.x == 0) {
#pragma unroll
        for (int i = 0; i < Pro::kParams; ++i) table[k * kCols + kSumsA + i] = sums[i];
      }
      __syncthreads();
    }
  });
  if constexpr (Pro::kParams > 0) {
    // The prologue's parameter gradients per plane: block 0 sums the K tables, rank order, double.
    cluster_wait();  // (pairs with the arrive after the group step)
    cluster_arrive();
    cluster_wait();  // every block's pass B columns are in its table
    if (rank == 0) {
      for (int64_t k = threadIdx.x; k < cpg; k += kBlock) {
        const int64_t pl = n * C + g * cpg + k;
#pragma unroll
        for (int i = 0; i < Pro::kParams; ++i) {
          double sum = 0.0;
          for (int r = 0; r < K; ++r) sum += remote_load(table + k * kCols + kSumsA + i, r);
          pro_grad[i * planes + pl] = static_cast<float>(sum);
        }
      }
    }
    cluster_arrive();
  }
  cluster_wait();  // no block leaves while another may still read its table
#else
  __trap();  // never launched: cluster_plan declines below sm_90
#endif
}

// ---- the forward of kNone regions with each slice held on chip (the same clusters)
//
// The two-pass forward reads x twice (statistics, then the normalise sweep): 3 units of traffic against 2. Here
// a cluster of K blocks holds a (sample, group) slice: block k copies its range in, folds the moments of
// z - pilot over it (pilot: the slice's first z, as the sweeps take it) into one Moments a block; at a cluster
// barrier thread 0 of every block merges the K blocks' moments through distributed shared memory in rank order,
// in double (MomentsD, as stats_finalize), so every block has the same mean and rstd bits, and block 0 writes
// them for the backward; then each block normalises its range from shared memory and writes v.
template <class Pro, class Epi, int kBlock, int W>
__global__ void __launch_bounds__(kBlock)
cluster_forward_kernel(const float* __restrict__ x, RegionParams params, RegionShape shape, ClusterPlan plan,
                       double eps, const float* __restrict__ gamma, const float* __restrict__ beta,
                       float* __restrict__ out, float2* __restrict__ mean_out, float* __restrict__ rstd_out) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ float4 smem4[];
  float* held_x = reinterpret_cast<float*>(smem4);
  __shared__ Moments block_moments;  // this block's, read by the cluster's blocks
  __shared__ float2 slice_mean;
  __shared__ float slice_rstd;

  const int K = plan.cluster;
  const unsigned rank = cluster_rank();
  const int64_t row = blockIdx.x / K;  // (sample, group)
  const int64_t S = shape.plane, cpg = plan.cpg, C = shape.channels;
  const int64_t n = row / shape.groups, g = row - n * shape.groups;
  const int64_t begin = int64_t(rank) * plan.range;
  const int64_t count = max(int64_t(0), min(plan.range, plan.slice - begin));
  const int64_t at = row * plan.slice + begin;  // the range's first value in x and out

  if (plan.copy16) {
    for (int64_t i = threadIdx.x; i < count / 4; i += kBlock) copy16(held_x + 4 * i, x + at + 4 * i);
  } else {
    for (int64_t i = threadIdx.x; i < count; i += kBlock) copy4(held_x + i, x + at + i);
  }
  const float pilot = Pro::at(params, g * cpg).value(__ldg(x + row * plan.slice));
  copies_done();
  __syncthreads();

  Moments acc{0.f, 0.f, 0.f};
  for_pieces(begin, count, S, [&](int64_t k, int64_t lo, int64_t hi) {
    const Pro pro = Pro::at(params, g * cpg + k);
#pragma unroll 4
    for (int64_t e = lo + int64_t(threadIdx.x) * W; e < hi; e += int64_t(kBlock) * W) {
      const Pack<W> xs = held_pack<W>(held_x, e);
      if constexpr (W == 4) {
        accumulate4(acc, pro.value(xs.v[0]) - pilot, pro.value(xs.v[1]) - pilot, pro.value(xs.v[2]) - pilot,
                    pro.value(xs.v[3]) - pilot);
      } else {
        accumulate1(acc, pro.value(xs.v[0]) - pilot);
      }
    }
  });
  acc = block_combine<kBlock>(acc);
  if (threadIdx.x == 0) block_moments = acc;
  cluster_arrive();
  cluster_wait();
  if (threadIdx.x == 0) {
    MomentsD m{0.0, 0.0, 0.0};
    for (int r = 0; r < K; ++r) {
      const float count_r = remote_load(&block_moments.count, r);
      if (count_r > 0.f) m.merge(count_r, remote_load(&block_moments.mean, r), remote_load(&block_moments.m2, r));
    }
    float2 mu;
    float rs;
    finish_statistics(m, double(pilot), eps, params.statistics, mu, rs);
    slice_mean = mu;
    slice_rstd = rs;
    if (rank == 0) {
      mean_out[row] = mu;
      rstd_out[row] = rs;
    }
  }
  cluster_arrive();  // this block is done reading the others' moments
  __syncthreads();   // slice_mean, slice_rstd
  const float2 mu = slice_mean;
  const float rs = slice_rstd;

  for_pieces(begin, count, S, [&](int64_t k, int64_t lo, int64_t hi) {
    const int64_t c = g * cpg + k;
    const region_twopass::Channel<Pro, Epi> ch{Pro::at(params, c), Epi::at(params, c), mu,
                                               gamma != nullptr ? rs * __ldg(gamma + c) : rs,
                                               beta != nullptr ? __ldg(beta + c) : 0.f};
    float* dst = out + at;
#pragma unroll 4
    for (int64_t e = lo + int64_t(threadIdx.x) * W; e < hi; e += int64_t(kBlock) * W) {
      const Pack<W> xs = held_pack<W>(held_x, e);
      Pack<W> v;
#pragma unroll
      for (int j = 0; j < W; ++j) v.v[j] = ch.value(xs.v[j]);
      store_pack<W>(dst + e, 0, v);
    }
  });
  cluster_wait();  // no block leaves while another may still read its moments
#else
  __trap();  // never launched: cluster_forward_plan declines below sm_90
#endif
}

}  // namespace region_cluster

namespace region_cluster {

// The cluster backward's plan for `shape` on x's device: infeasible where the two-pass backward must run.
template <class Pro, class Epi, ReduceKind R>
ClusterPlan cluster_plan(const RegionShape& shape, const at::Tensor& x, bool copy16, const void* kernel) {
  ClusterPlan p{};
  p.feasible = false;
  const int device = x.get_device();
  if (!cluster_takes<R>() || cached_attribute<cudaDevAttrComputeCapabilityMajor>(device) < 9 ||
      shape.plane < kClusterMinPlane) {
    return p;
  }
  p.cpg = static_cast<int>(shape.channels_per_group());
  p.slice = shape.slice_elems();
  p.copy16 = copy16 && p.slice % 4 == 0;
  const int64_t table = 4 * int64_t(p.cpg) * table_columns<Pro, Epi>();
  for (int k = 2; k <= kMaxCluster; k *= 2) {
    const int64_t range = ((p.slice + k - 1) / k + 3) / 4 * 4;
    const int64_t bytes = 4 * range + table;
    if (bytes <= kClusterBlockBytes) {
      p.cluster = k;
      p.range = range;
      p.smem_bytes = bytes;
      break;
    }
  }
  if (p.cluster == 0 || !built_for_sm90(kernel, device)) return p;  // clusters
  p.feasible = true;
  return p;
}

// Shared memory a block of the cluster forward may hold (three blocks an H100 SM: 3 x 72 KB of its 228), and its
// largest cluster: the portable 8. (H100: L2-83's 430 KB slices on 8 blocks of
// 54 KB 338.6 us against the sweeps' 467.5; L2-21's 1.03 MB slices on 16 blocks of 65 KB 1200.9 against 1120.6.)
constexpr int64_t kClusterForwardBlockBytes = 72 * 1024;
constexpr int kClusterForwardMaxCluster = 8;

// -1: as planned; 0: never (the two-pass sweeps); 1: wherever it is feasible. The tests' switch.
inline std::atomic<int>& cluster_forward_mode() {
  static std::atomic<int> mode{-1};
  return mode;
}

// Whether the kNone forward runs on clusters where a slice fits (else the two-pass sweeps).
constexpr bool kClusterForward = true;

// The cluster forward's plan for `shape` on x's device: the smallest K whose range fits a block.
inline ClusterPlan cluster_forward_plan(const RegionShape& shape, const at::Tensor& x, bool copy16,
                                        const void* kernel) {
  ClusterPlan p{};
  p.feasible = false;
  const int device = x.get_device();
  const int mode = cluster_forward_mode().load();
  if (!kClusterForward || mode == 0 || cached_attribute<cudaDevAttrComputeCapabilityMajor>(device) < 9 ||
      shape.plane < kClusterMinPlane) {
    return p;
  }
  p.cpg = static_cast<int>(shape.channels_per_group());
  p.slice = shape.slice_elems();
  p.copy16 = copy16 && p.slice % 4 == 0;
  for (int k = 2; k <= kClusterForwardMaxCluster; k *= 2) {
    const int64_t range = ((p.slice + k - 1) / k + 3) / 4 * 4;
    if (4 * range <= kClusterForwardBlockBytes) {
      p.cluster = k;
      p.range = range;
      p.smem_bytes = 4 * range;
      break;
    }
  }
  if (p.cluster == 0 || !built_for_sm90(kernel, device)) return p;
  p.feasible = true;
  return p;
}

// Launches `kernel` on clusters of plan.cluster blocks; false where the GPU cannot place one such cluster.
template <class Kernel, class... Args>
bool launch_clusters(Kernel kernel, const ClusterPlan& plan, int64_t blocks, int block, cudaStream_t stream,
                     Args... args) {
  const void* fn = reinterpret_cast<const void*>(kernel);
  allow_smem(fn, plan.smem_bytes);
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(blocks));
  config.blockDim = dim3(block);
  config.dynamicSmemBytes = static_cast<size_t>(plan.smem_bytes);
  config.stream = stream;
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeClusterDimension;
  attribute[0].val.clusterDim.x = plan.cluster;
  attribute[0].val.clusterDim.y = 1;
  attribute[0].val.clusterDim.z = 1;
  config.attrs = attribute;
  config.numAttrs = 1;
  // whether the GPU can place such a cluster, asked of the driver once per (kernel, device, size, shared memory)
  static std::mutex lock;
  static std::map<std::tuple<const void*, int, int, int64_t>, bool> placeable;
  {
    int device = 0;
    C10_CUDA_CHECK(cudaGetDevice(&device));
    const std::lock_guard<std::mutex> guard(lock);
    const auto key = std::make_tuple(fn, device, plan.cluster, plan.smem_bytes);
    auto found = placeable.find(key);
    if (found == placeable.end()) {
      if (plan.cluster > 8) C10_CUDA_CHECK(cudaFuncSetAttribute(fn, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
      int clusters = 0;
      C10_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&clusters, kernel, &config));
      found = placeable.emplace(key, clusters >= 1).first;
    }
    if (!found->second) return false;
  }
  C10_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, args...));
  return true;
}

}  // namespace region_cluster

}  // namespace kgen
