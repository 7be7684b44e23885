// ---- groupnorm/statistics_torch.cuh: native_group_norm's mean and rstd, bit for bit (faithful regions) ----
//
// cuDNN rounds a float32 convolution's inputs to TF32 (10-bit mantissa) by default, so a norm output one ulp away from
// the reference's flips some of those roundings and the conv after it moves by ~1e-3 of its terms: KernelBench's
// float32 check (atol = rtol = 1e-4) then fails a correctly rounded GroupNorm as it fails torch.compile's
// (benchmarks/results/h200/faithful/README.md). Where the planner sees such a reader, the region's forward takes
// mean and rstd as native_group_norm's RowwiseMomentsCUDAKernel does - one block per (sample, group), 32 threads for
// a slice under 512 values, else 512; thread t folds values t, t + blockDim, ... by Welford's update, then the
// warp's shuffle tree (offsets 16 .. 1) and the block's tree over its warps - and normalises as its forward does
// (Channel::value). The roundings are spelled out (_rn intrinsics) as nvcc contracts PyTorch's source: the updates
// of m2 and mean fused, b = -a mean + beta not (H200: this emulation equals F.group_norm for every value,
// tests/gpu/test_faithful.py). Needs core/sweeps.cuh and groupnorm/region.cuh before it.
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

// PyTorch's block size for a slice of `slice` values.
inline int torch_moments_threads(int64_t slice) { return slice < 512 ? kWarpSize : 512; }

// One block (torch_moments_threads) per (sample, group) row: z = Pro(x) over the row's slice, mean and rstd as
// native_group_norm normalises with them: eps in the call's dtype (ParamTable::rounding), mean and rstd rounded to it
// where PyTorch keeps them there (RegionParams::statistics, kTorchRoundsHalfStatistics). mean.y = 0: one float here.
template <class Pro, class T>
__global__ void __launch_bounds__(512)
torch_moments_kernel(const T* __restrict__ x, RegionParams params, int64_t groups, int64_t channels_per_group,
                     int64_t plane, double eps, float2* __restrict__ mean, float* __restrict__ rstd) {
  __shared__ TorchWelford per_warp[kWarpSize];
  const int64_t row = blockIdx.x, slice = channels_per_group * plane;
  const int64_t first_channel = (row % groups) * channels_per_group;
  const T* in = x + row * slice;
  TorchWelford v{0.f, 0.f, 0.f, 0};
  // The value's channel within the group, its prologue reloaded where it changes (32-bit: the host keeps a faithful
  // slice under 2^31 values).
  const uint32_t plane32 = static_cast<uint32_t>(plane);
  uint32_t k = threadIdx.x / plane32;
  Pro pro = Pro::at(params, first_channel + (k < channels_per_group ? k : 0));
  for (uint32_t j = threadIdx.x; j < slice; j += blockDim.x) {
    if constexpr (Pro::kParams > 0) {
      if (j / plane32 != k) {
        k = j / plane32;
        pro = Pro::at(params, first_channel + k);
      }
    }
    v = torch_welford_add(v, pro.value(load1(in + j)));
  }
  v = torch_welford_warp(v);
  if (blockDim.x > kWarpSize) {
    const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
    if (lane == 0) per_warp[warp] = v;
    __syncthreads();
    v = threadIdx.x < blockDim.x / kWarpSize ? per_warp[lane] : TorchWelford{0.f, 0.f, 0.f, 0};
    if (warp == 0) v = torch_welford_warp(v);
  }
  if (threadIdx.x == 0) {
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

}  // namespace kgen
