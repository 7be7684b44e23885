// ---- groupnorm one-pass forward: each (sample, group) slice is read from DRAM once ----
//
// The two-pass forward (groupnorm.cuh) reads x twice: once for the statistics, once to normalise.
// Here a TEAM of co-resident blocks holds one slice in shared memory: each block loads its chunk
// (applying the op on the way in), folds it into Welford moments, publishes them, and waits at a
// team barrier; then every block of the team combines the team's moments -- the same values in the
// same order, so every block gets the same mean and rstd -- and normalises its chunk out of shared
// memory. DRAM traffic drops from 2 reads + 1 write of x to 1 read + 1 write.
//
// Measured on an H100 (L1-35, 112 x 64 x 512 x 512; benchmarks/h100/onepass_*.log): SLOWER than the two
// passes, 8.14 ms (512 threads x 2 blocks per SM) against 7.55 ms. Every round each block waits at its
// team's barrier for the slowest of ~88 loads, and its SM's DRAM traffic stalls meanwhile; the two-pass
// kernels never wait and stream at 3 TB/s. Prefetching the next chunk into L2 during the wait made it
// slower still (10.2 ms). So `--forward two-pass` is the default and this kernel is opt-in
// (`--forward one-pass`) until a design that keeps DRAM busy through the barrier exists.
//
// Sizing (plan_onepass, per shape and GPU): a slice of D values takes team_size blocks of
// chunk = D / team_size values each, chunk * 4 bytes within the shared memory one block may use.
// The grid is at most as many blocks as the GPU keeps resident at once, launched cooperatively so
// they ARE resident together (a team barrier never waits on a block that has not started), split
// into teams; team t normalises slices t, t + teams, t + 2 teams, ... Where a slice does not fit in
// the shared memory of the whole GPU, the caller falls back to the two-pass kernels.
//
// The barrier is a per-team arrival counter in global memory, zeroed before the launch: a block
// publishes its moments, fences, adds 1, and the slice's statistics are complete once the counter
// reaches team_size * (round + 1). Published moments are double-buffered by round parity: a block
// can overwrite round r's slot only in round r + 2, after every block of its team has passed round
// r + 1's barrier and so has finished reading round r.
namespace kgen {

template <int W>
__device__ __forceinline__ Pack<W> load_pack_shared(const float* p, int64_t i) {
  if constexpr (W == 4) {
    const float4 f = reinterpret_cast<const float4*>(p)[i];
    return Pack<4>{{f.x, f.y, f.z, f.w}};
  } else {
    return Pack<1>{{p[i]}};
  }
}

// 16-byte loads each thread keeps in flight while filling its chunk: the load phase is all the DRAM
// reading a block does per slice, so it should have as many bytes on the way as registers allow.
constexpr int kLoadUnroll = 8;

template <int W>
__device__ __forceinline__ void store_pack_streaming(float* p, int64_t i, const Pack<W>& v) {
  if constexpr (W == 4) {
    __stcs(reinterpret_cast<float4*>(p) + i, make_float4(v.v[0], v.v[1], v.v[2], v.v[3]));
  } else {
    __stcs(p + i, v.v[0]);
  }
}

struct OnePassPlan {
  bool feasible;
  int threads;        // per block
  int team_size;      // blocks per slice
  int teams;          // slices in flight
  int64_t chunk;      // values per block, a multiple of 4
  size_t smem_bytes;  // dynamic shared memory per block
};

__device__ __forceinline__ unsigned load_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ void team_barrier(unsigned* counter, unsigned target) {
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    atomicAdd(counter, 1u);
    while (load_acquire(counter) < target) __nanosleep(32);
    __threadfence();
  }
  __syncthreads();
}

// W = 4: 16-byte accesses (HW % 4 == 0, so a pack never straddles two channels; pointers aligned).
// kChannelBias: of op(x + channel_bias[c]) (a conv bias fused in, see ChannelOp).
// At least 1024 threads per SM stay resident (64 registers a thread): 1024 x 1, 512 x 2, 256 x 4.
template <class Op, int kThreads, int W, bool kChannelBias>
__global__ void __launch_bounds__(kThreads, 1024 / kThreads)
groupnorm_onepass_kernel(const float* __restrict__ x, const float* __restrict__ gamma,
                         const float* __restrict__ beta, float* __restrict__ y, float2* __restrict__ mean_out,
                         float* __restrict__ rstd_out, Moments* __restrict__ published,
                         unsigned* __restrict__ arrivals, GroupShape shape, OnePassPlan plan, double eps, Op op,
                         const float* __restrict__ channel_bias) {
  extern __shared__ float4 smem_raw[];
  float* held = reinterpret_cast<float*>(smem_raw);  // this block's chunk of op(x), plan.chunk values
  __shared__ float2 s_mean;
  __shared__ float s_rstd;

  const int team = blockIdx.x / plan.team_size;
  const int rank = blockIdx.x % plan.team_size;
  const int64_t rows = shape.batch * shape.groups;
  const int64_t slice_elems = shape.slice_elems();
  const int64_t cpg = shape.channels_per_group();
  const int64_t plane = shape.plane_elems;
  const int64_t begin = rank * plan.chunk;
  const int64_t count = max(int64_t(0), min(plan.chunk, slice_elems - begin));
  const int64_t packs = count / W;

  int round = 0;
  for (int64_t row = team; row < rows; row += plan.teams, ++round) {
    const float* xs = x + row * slice_elems + begin;
    const int64_t channel0 = (row % shape.groups) * cpg;
    // moments of z - pilot, pilot the slice's first z: see groupnorm.cuh
    const float pilot = channel_op<kChannelBias>(op, channel_bias, channel0)(x[row * slice_elems]);

    // 1. Load: z = op(x) into shared memory, Welford moments on the way.
    Moments acc{0.f, 0.f, 0.f};
    for (int64_t base = threadIdx.x; base < packs; base += int64_t(kThreads) * kLoadUnroll) {
      Pack<W> v[kLoadUnroll];
#pragma unroll
      for (int u = 0; u < kLoadUnroll; ++u) {
        const int64_t i = base + int64_t(u) * kThreads;
        if (i < packs) v[u] = load_pack<W>(xs, i);
      }
#pragma unroll
      for (int u = 0; u < kLoadUnroll; ++u) {
        const int64_t i = base + int64_t(u) * kThreads;
        if (i < packs) {
          const auto op_c = channel_op<kChannelBias>(op, channel_bias, channel0 + (begin + i * W) / plane);
          Pack<W> z;
#pragma unroll
          for (int j = 0; j < W; ++j) z.v[j] = op_c(v[u].v[j]);
          accumulate(acc, z, Identity{}, pilot);
          store_pack<W>(held, i, z);
        }
      }
    }
    acc = block_combine<kThreads>(acc);

    // 2. Publish, wait for the team, combine.
    Moments* slot = published + (int64_t(team) * 2 + (round & 1)) * plan.team_size;
    if (threadIdx.x == 0) slot[rank] = acc;
    team_barrier(arrivals + team, unsigned(plan.team_size) * unsigned(round + 1));
    if (threadIdx.x < kWarpSize) {
      // Every block of the team merges the same values in the same order: identical statistics. Reads
      // bypass L1 (__ldcg): the slots are rewritten every other round by other blocks.
      const MomentsD m = warp_merge(plan.team_size, [&](int s) {
        return Moments{__ldcg(&slot[s].count), __ldcg(&slot[s].mean), __ldcg(&slot[s].m2)};
      });
      if (threadIdx.x == 0) {
        finish_statistics(m, double(pilot), eps, s_mean, s_rstd);
        if (rank == 0) {
          mean_out[row] = s_mean;
          rstd_out[row] = s_rstd;
        }
      }
    }
    __syncthreads();

    // 3. Normalise out of shared memory (each thread reads back exactly the packs it stored).
    const float2 mu = s_mean;
    const float rstd = s_rstd;
    float* ys = y + row * slice_elems + begin;
    for (int64_t i = threadIdx.x; i < packs; i += kThreads) {
      const int64_t c = channel0 + (begin + i * W) / plane;
      const float scale = rstd * __ldg(gamma + c);
      const float shift = __ldg(beta + c);
      const Pack<W> z = load_pack_shared<W>(held, i);
      Pack<W> r;
#pragma unroll
      for (int j = 0; j < W; ++j) r.v[j] = centered(z.v[j], mu) * scale + shift;
      store_pack_streaming<W>(ys, i, r);  // evict-first: y is not read again
    }
    __syncthreads();  // `held` and s_mean are rewritten next round
  }
}

// Team sizes for one slice on this device, or feasible = false. blocks_per_sm blocks share each SM's
// shared memory: with more than one, one block's loads overlap another's barrier wait and stores.
template <class Op, int kThreads, bool kChannelBias>
inline OnePassPlan plan_onepass(const GroupShape& shape, bool vec, int blocks_per_sm) {
  OnePassPlan plan{false, kThreads, 0, 0, 0, 0};
  int device = 0, sms = 0, optin = 0, per_sm_bytes = 0;
  C10_CUDA_CHECK(cudaGetDevice(&device));
  C10_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  C10_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  C10_CUDA_CHECK(cudaDeviceGetAttribute(&per_sm_bytes, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device));
  const int64_t rows = shape.batch * shape.groups;
  const int64_t slice = shape.slice_elems();
  if (rows == 0 || slice == 0 || blocks_per_sm < 1) return plan;
  cudaFuncAttributes attributes;
  const void* kernel = vec ? reinterpret_cast<const void*>(groupnorm_onepass_kernel<Op, kThreads, 4, kChannelBias>)
                           : reinterpret_cast<const void*>(groupnorm_onepass_kernel<Op, kThreads, 1, kChannelBias>);
  C10_CUDA_CHECK(cudaFuncGetAttributes(&attributes, kernel));
  // What one block may hold as its chunk: its share of the SM, less its static arrays and the 1 KB
  // the runtime reserves per block.
  constexpr int64_t kReservedPerBlock = 1024;
  const int64_t share = int64_t(per_sm_bytes) / blocks_per_sm - kReservedPerBlock;
  const int64_t budget = (std::min<int64_t>(optin, share) - int64_t(attributes.sharedSizeBytes)) / 16 * 16;
  if (budget <= 0) return plan;
  const int64_t smallest_team = (slice * 4 + budget - 1) / budget;
  const int64_t resident = int64_t(blocks_per_sm) * sms;
  const int64_t teams = std::min<int64_t>(rows, resident / smallest_team);
  if (teams < 1) return plan;
  // Spread the teams over every resident block: smaller chunks, all SMs busy.
  const int64_t team_target = std::max<int64_t>(smallest_team, resident / teams);
  const int64_t chunk = ((slice + team_target - 1) / team_target + 3) / 4 * 4;
  const int64_t team_size = (slice + chunk - 1) / chunk;
  const size_t smem = size_t(chunk) * sizeof(float);
  C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  int per_sm = 0;
  C10_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, smem));
  // Fewer teams if fewer blocks fit than asked for (registers): a team must never wait on a block that
  // cannot be resident.
  const int64_t fitting_teams = std::min<int64_t>(teams, int64_t(per_sm) * sms / team_size);
  if (fitting_teams < 1) return plan;
  return OnePassPlan{true, kThreads, int(team_size), int(fitting_teams), chunk, smem};
}

// One-pass forward of op -> GroupNorm into y (contiguous, same shape as x); mean and rstd as the
// two-pass forward leaves them. Returns false, having launched nothing, if the slice does not fit.
template <class Op, int kThreads, bool kChannelBias>
bool groupnorm_forward_onepass(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta, at::Tensor& y,
                               at::Tensor& mean, at::Tensor& rstd, const GroupShape& shape, double eps, Op op,
                               const float* channel_bias, int blocks_per_sm) {
  const bool vec = shape.plane_elems % 4 == 0 && is_16_byte_aligned(x.data_ptr<float>()) &&
                   is_16_byte_aligned(y.data_ptr<float>());
  const OnePassPlan plan = plan_onepass<Op, kThreads, kChannelBias>(shape, vec, blocks_per_sm);
  if (!plan.feasible) return false;
  const int64_t words_per_team = 2 * int64_t(plan.team_size) * int64_t(sizeof(Moments) / sizeof(float));
  auto published = at::empty({plan.teams * words_per_team}, x.options());
  auto arrivals = at::zeros({plan.teams}, x.options().dtype(at::kInt));
  auto* published_ptr = reinterpret_cast<Moments*>(published.data_ptr<float>());
  auto* arrivals_ptr = reinterpret_cast<unsigned*>(arrivals.data_ptr<int>());
  const float* x_ptr = x.data_ptr<float>();
  const float* gamma_ptr = gamma.data_ptr<float>();
  const float* beta_ptr = beta.data_ptr<float>();
  float* y_ptr = y.data_ptr<float>();
  float2* mean_ptr = as_float2(mean);
  float* rstd_ptr = rstd.data_ptr<float>();
  void* args[] = {&x_ptr, &gamma_ptr, &beta_ptr, &y_ptr, &mean_ptr, &rstd_ptr, &published_ptr, &arrivals_ptr,
                  const_cast<GroupShape*>(&shape), const_cast<OnePassPlan*>(&plan), &eps, &op, &channel_bias};
  const void* kernel = vec ? reinterpret_cast<const void*>(groupnorm_onepass_kernel<Op, kThreads, 4, kChannelBias>)
                           : reinterpret_cast<const void*>(groupnorm_onepass_kernel<Op, kThreads, 1, kChannelBias>);
  C10_CUDA_CHECK(cudaLaunchCooperativeKernel(kernel, dim3(plan.teams * plan.team_size), dim3(kThreads), args,
                                             plan.smem_bytes, at::cuda::getCurrentCUDAStream()));
  return true;
}

}  // namespace kgen
