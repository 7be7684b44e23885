// ---- groupnorm/statistics_torch.cuh: native_group_norm's mean and rstd, bit for bit (faithful regions) ----
//
// cuDNN rounds a float32 convolution's inputs to TF32 (10-bit mantissa) by default, so a norm output one ulp away from
// the reference's flips some of those roundings and the conv after it moves by ~1e-3 of its terms: KernelBench's
// float32 check (atol = rtol = 1e-4) then fails a correctly rounded GroupNorm as it fails torch.compile's
// (benchmarks/results/h200/faithful/README.md). Where the planner sees such a reader, the region's forward takes
// mean and rstd as native_group_norm's RowwiseMomentsCUDAKernel does - per (sample, group) row, 32 chains for a slice
// under 512 values, else 512 (PyTorch's threads of one block, split here over blocks: torch_chains_kernel, or
// torch_chains_ring_kernel where few float rows leave few chains an SM); chain t folds values t, t + chains, ... by
// Welford's update, then each warp's shuffle tree (offsets 16 .. 1) and the tree over the warps' results
// (torch_moments_finish_kernel) - and normalises as its forward does (Channel::value). The roundings are spelled out
// (_rn intrinsics) as nvcc contracts PyTorch's source: the updates of m2 and mean fused, b = -a mean + beta not
// (H200: this emulation equals F.group_norm for every value, tests/gpu/test_faithful.py).
// In a file only where a region is faithful, after the two-pass family (groupnorm/twopass/), whose forward calls
// torch_statistics.
namespace kgen {

struct TorchWelford {
  float mean, m2, nf;  // running mean, sum of squared deviations, count (as a float, as PyTorch's combine keeps it)
  int n;               // count within one thread's fold (PyTorch's index_t; a block's fold stays far below 2^31)
};

__device__ __forceinline__ TorchWelford torch_welford_add(TorchWelford a, float x) {
  const int n = a.n + 1;
  const float nf = static_cast<float>(n);
  const float delta = __fsub_rn(x, a.mean);
  const float mean = __fadd_rn(a.mean, __fdiv_rn(delta, nf));
  return {mean, __fmaf_rn(delta, __fsub_rn(x, mean), a.m2), nf, n};
}

__device__ __forceinline__ TorchWelford torch_welford_combine(TorchWelford a, TorchWelford b) {
  if (a.nf == 0.f) return b;
  if (b.nf == 0.f) return a;
  const float delta = __fsub_rn(b.mean, a.mean);
  const float count = __fadd_rn(a.nf, b.nf);
  const float b_share = __fdiv_rn(b.nf, count);
  return {__fmaf_rn(delta, b_share, a.mean),
          __fmaf_rn(__fmul_rn(__fmul_rn(delta, delta), a.nf), b_share, __fadd_rn(a.m2, b.m2)), count, -1};
}

__device__ __forceinline__ TorchWelford torch_welford_warp(TorchWelford v) {
#pragma unroll
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    const TorchWelford other{__shfl_down_sync(0xffffffffu, v.mean, offset), __shfl_down_sync(0xffffffffu, v.m2, offset),
                             __shfl_down_sync(0xffffffffu, v.nf, offset), __shfl_down_sync(0xffffffffu, v.n, offset)};
    v = torch_welford_combine(v, other);
  }
  return v;
}

// PyTorch's block size for a slice of `slice` values: its fold runs torch_moments_threads chains per row.
inline int torch_moments_threads(int64_t slice) { return slice < 512 ? kWarpSize : 512; }

// The chains of one row split over `parts` blocks, so that a batch of few (sample, group) rows still fills the GPU
// (PyTorch's one block a row leaves most SMs idle below a row an SM): each part is a whole number of PyTorch's warps,
// so every warp's tree is PyTorch's, and the block stage runs over the warps' results after (torch_moments_finish).
inline int torch_moments_parts(int64_t rows, int64_t slice, int device) {
  const int chains = torch_moments_threads(slice);
  const int64_t want = 2 * int64_t(cached_attribute<cudaDevAttrMultiProcessorCount>(device));
  int parts = 1;
  while (parts * 2 * kWarpSize <= chains && rows * parts < want) parts *= 2;
  return parts;
}

// A chain's prologue functor at its value j of a (sample, group) slice: the channel's functor, reloaded only where j
// passes the end of the channel it holds. A chain's positions only grow, so a comparison a value finds the crossing and
// the division runs once a channel, not once a value (H200, two_norm_gate_large's chains with a bias prologue: a
// division a value halved their rate). Without prologue parameters it is the one functor.
template <class Pro>
struct ChainPrologue {
  const RegionParams& params;
  int64_t first_channel;  // the slice's first channel
  uint32_t plane, end;    // values a channel; the end of the held channel's values in the slice
  Pro pro;

  __device__ __forceinline__ ChainPrologue(const RegionParams& p, int64_t first, int64_t channels, int64_t plane_values,
                                           uint32_t j)
      : params(p), first_channel(first), plane(static_cast<uint32_t>(plane_values)) {
    const uint32_t k = j / plane;
    end = (k + 1) * plane;
    pro = Pro::at(params, first_channel + (k < channels ? k : 0));
  }

  __device__ __forceinline__ const Pro& at(uint32_t j) {
    if constexpr (Pro::kParams > 0) {
      if (j >= end) {
        const uint32_t k = j / plane;
        end = (k + 1) * plane;
        pro = Pro::at(params, first_channel + k);
      }
    }
    return pro;
  }
};

constexpr int kTorchChainsAhead = 4;  // loads of a chain in flight before they are folded, in order

// Block (row, part): chains part * blockDim.x + threadIdx.x of the row; chain t folds values t, t + chains, ... by
// Welford's update (kTorchChainsAhead loads ahead, folded in the same order), then each warp's shuffle tree; lane 0
// stores the warp's result at partial[row * (chains / 32) + warp of the row].
template <class Pro, class T>
__global__ void __launch_bounds__(512)
torch_chains_kernel(const T* __restrict__ x, RegionParams params, int64_t groups, int64_t channels_per_group,
                    int64_t plane, int chains, TorchWelford* __restrict__ partial) {
  const int64_t row = blockIdx.x, slice = channels_per_group * plane;
  const int64_t first_channel = (row % groups) * channels_per_group;
  const uint32_t chain = blockIdx.y * blockDim.x + threadIdx.x;
  const T* in = x + row * slice;
  // 32-bit positions: the host keeps a faithful slice under 2^31 values. A value's channel within the group gives its
  // prologue, reloaded where it changes (ChainPrologue: a chain's positions only grow).
  const uint32_t step = static_cast<uint32_t>(chains);
  const uint32_t count = static_cast<uint32_t>(slice);
  ChainPrologue<Pro> cursor(params, first_channel, channels_per_group, plane, chain);
  auto fold = [&](TorchWelford& v, uint32_t j, float value) {
    v = torch_welford_add(v, cursor.at(j).value(value));
  };
  TorchWelford v{0.f, 0.f, 0.f, 0};
  uint32_t j = chain;
  for (; j + (kTorchChainsAhead - 1) * step < count; j += kTorchChainsAhead * step) {
    float ahead[kTorchChainsAhead];
#pragma unroll
    for (int u = 0; u < kTorchChainsAhead; ++u) ahead[u] = load1(in + j + u * step);
#pragma unroll
    for (int u = 0; u < kTorchChainsAhead; ++u) fold(v, j + u * step, ahead[u]);
  }
  for (; j < count; j += step) fold(v, j, load1(in + j));
  v = torch_welford_warp(v);
  if (threadIdx.x % kWarpSize == 0) partial[row * (chains / kWarpSize) + chain / kWarpSize] = v;
}

// torch_chains_kernel's fold for float rows with the loads in a ring of shared memory: each chain keeps kRing of its
// values in flight by cp.async (4 bytes a copy, one commit group a step, no registers held), so a batch of few long
// rows, whose chains are a few warps an SM, still keeps the DRAM busy (H200, unet3d_block_large's 16 rows of 2.1 M
// values: 4 loads in flight a chain left the statistics at 0.1 TB/s). A chain's values are folded in the same order
// as torch_chains_kernel's: the same bits. Dynamic shared memory: kRing * blockDim.x floats, slot u of thread t at
// [u * blockDim.x + t] (a warp's copies land on 32 banks); each thread reads only its own slots, each after its own
// wait, and refills a slot only once the value it held is folded.
template <class Pro, int kRing>
__global__ void __launch_bounds__(512)
torch_chains_ring_kernel(const float* __restrict__ x, RegionParams params, int64_t groups, int64_t channels_per_group,
                         int64_t plane, int chains, TorchWelford* __restrict__ partial) {
  extern __shared__ float torch_ring[];
  const int64_t row = blockIdx.x, slice = channels_per_group * plane;
  const int64_t first_channel = (row % groups) * channels_per_group;
  const uint32_t chain = blockIdx.y * blockDim.x + threadIdx.x;
  const float* in = x + row * slice;
  const uint32_t step = static_cast<uint32_t>(chains);
  const uint32_t count = static_cast<uint32_t>(slice);
  const uint32_t steps = chain < count ? (count - chain - 1) / step + 1 : 0;  // values of this chain
  float* mine = torch_ring + threadIdx.x;
  auto fetch = [&](uint32_t s) {  // step s's value into slot s % kRing (nothing read past the chain's last value)
    copy4_or_zero(mine + (s % kRing) * blockDim.x, s < steps ? in + chain + s * step : in, s < steps);
    copies_commit();
  };
#pragma unroll
  for (int s = 0; s < kRing; ++s) fetch(s);
  ChainPrologue<Pro> cursor(params, first_channel, channels_per_group, plane, chain);
  TorchWelford v{0.f, 0.f, 0.f, 0};
  for (uint32_t s = 0; s < steps; ++s) {
    copies_wait<kRing - 1>();
    const uint32_t j = chain + s * step;
    v = torch_welford_add(v, cursor.at(j).value(mine[(s % kRing) * blockDim.x]));
    fetch(s + kRing);
  }
  copies_done();
  v = torch_welford_warp(v);
  if (threadIdx.x % kWarpSize == 0) partial[row * (chains / kWarpSize) + chain / kWarpSize] = v;
}

// The ring: 64 values a chain in flight (16 KB of shared memory for 64 chains), for blocks of at most 128 chains, where
// a row's 512 chains are split over 4 or more blocks because rows are few. Blocks of more chains keep 4 loads in
// registers (torch_chains_kernel): enough warps an SM are in flight there, and the ring's copies and waits cost more
// than they hide (H200, audio_encoder_1d_large's 4,096 rows: 72.6 us in registers, 109.0 with a 16-deep ring;
// unet3d_block_large's 16 rows: 1109 -> 811 us with the ring, poolformer_block_large's 17.5 -> 12.1;
// benchmarks/results/h200/cliffs/).
constexpr int kTorchRing = 64, kTorchRingThreads = 128;

// One warp per row: PyTorch's block stage over the row's warp results (lanes past them the identity; with one warp a
// row, as for slices under 512 values, the tree leaves its result as it is), then mean and rstd as native_group_norm
// normalises with them: eps in the call's dtype (ParamTable::rounding), mean and rstd rounded to it where PyTorch keeps
// them there (RegionParams::statistics, kTorchRoundsHalfStatistics). mean.y = 0: one float here.
template <int kBlock>
__global__ void __launch_bounds__(kBlock)
torch_moments_finish_kernel(const TorchWelford* __restrict__ partial, int64_t rows, int warps, RegionParams params,
                            double eps, float2* __restrict__ mean, float* __restrict__ rstd) {
  const int64_t row = (int64_t(blockIdx.x) * kBlock + threadIdx.x) / kWarpSize;
  const int lane = threadIdx.x % kWarpSize;
  if (row >= rows) return;  // warp-uniform
  TorchWelford v = lane < warps ? partial[row * warps + lane] : TorchWelford{0.f, 0.f, 0.f, 0};
  v = torch_welford_warp(v);
  if (lane == 0) {
    const float var = __fdiv_rn(v.m2, v.nf);
    float m = v.mean;
    float r = rsqrtf(__fadd_rn(var, stored(static_cast<float>(eps), params.prologue.rounding)));
    if (params.statistics != kExact) {
      m = stored(m, params.statistics);
      r = stored(r, params.statistics);
    }
    mean[row] = make_float2(m, 0.f);
    rstd[row] = r;
  }
}

// A faithful region's statistics (region_forward_twopass<..., kFaithful = true> where RegionParams::faithful): the
// chains (the ring kernel for float rows split over 4 or more blocks, else registers), then the finishing trees, into
// mean (hi, lo = 0) and rstd.
template <class Pro, ReduceKind R, int kBlock>
void torch_statistics(const at::Tensor& x, const RegionParams& params, const RegionShape& shape, double eps,
                      float2* mean, float* rstd, cudaStream_t stream) {
  const int64_t rows = shape.batch * shape.groups;
  const int chains = torch_moments_threads(shape.slice_elems());
  const int parts = torch_moments_parts(rows, shape.slice_elems(), x.get_device());
  auto partial = at::empty({rows * (chains / kWarpSize) * int64_t(sizeof(TorchWelford))}, x.options().dtype(at::kByte));
  auto* partial_ptr = reinterpret_cast<TorchWelford*>(partial.data_ptr());
  const dim3 grid(static_cast<unsigned>(rows), parts);
  const int threads = chains / parts;
  dispatch_storage(x.scalar_type(), [&](auto storage) {
    using T = typename decltype(storage)::type;
    if constexpr (std::is_same_v<T, float>) {
      if (threads <= kTorchRingThreads) {
        torch_chains_ring_kernel<Pro, kTorchRing><<<grid, threads, kTorchRing * threads * 4, stream>>>(
            data_as<const T>(x), params, shape.groups, shape.channels_per_group(), shape.plane, chains, partial_ptr);
        return;
      }
    }
    torch_chains_kernel<Pro><<<grid, threads, 0, stream>>>(
        data_as<const T>(x), params, shape.groups, shape.channels_per_group(), shape.plane, chains, partial_ptr);
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  torch_moments_finish_kernel<kBlock><<<blocks_for(rows * kWarpSize, kBlock), kBlock, 0, stream>>>(
      partial_ptr, rows, chains / kWarpSize, params, eps, mean, rstd);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace kgen
