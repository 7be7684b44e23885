// ---- groupnorm/statistics.cuh: the GroupNorm arithmetic every GroupNorm kernel family shares ----
//
// A slice's mean is kept as a float pair (hi, lo) with hi + lo the double mean, and z - mean is formed
// as (z - hi) - lo: with data like 1e4 + 1e-2 randn, a float mean alone would be off by a sizeable
// fraction of the spread. The backward's per-(sample, group) coefficients of dz, over a group of D values:
//   dz = rstd gamma[c] dy + B (z - mean) + C,  B = -rstd^3 / D * sum gamma dy (z - mean),
//   C = -rstd / D * sum gamma dy,
// and the parameter gradients dgamma[c] = sum_n rstd * sum dy (z - mean), dbeta[c] = sum_n sum dy, from
// the per-(sample, channel) plane sums, in double and in a fixed order: bitwise reproducible. Needs
// core/common.cuh and core/sweeps.cuh before it.
namespace kgen {

// z - mean for a mean held as (hi, lo): z - hi is exact when z is near the mean.
__device__ __forceinline__ float centered(float z, float2 mean) { return (z - mean.x) - mean.y; }

// Sizes of one GroupNorm problem; kGroups > 0 makes the group count a compile-time constant.
struct GroupShape {
  int64_t batch;
  int64_t channels;
  int64_t groups;
  int64_t plane_elems;  // HW: product of the dimensions after the channel

  template <int kGroups>
  __host__ __device__ __forceinline__ int64_t group_count() const { return kGroups > 0 ? kGroups : groups; }
  __host__ __device__ __forceinline__ int64_t channels_per_group() const { return channels / groups; }
  __host__ __device__ __forceinline__ int64_t slice_elems() const { return channels_per_group() * plane_elems; }
  // (sample, group) row of the statistics for a (sample, channel) plane.
  template <int kGroups>
  __device__ __forceinline__ int64_t row_of_plane(int64_t plane) const {
    const int64_t n = plane / channels;
    const int64_t c = plane - n * channels;
    return n * group_count<kGroups>() + c / channels_per_group();
  }
};

// One warp per (sample, group): plane sums of its channels (kept for the parameter gradients) and
// the group's two coefficients B, C of dz.
template <int kGroups, int kBlock>
__global__ void __launch_bounds__(kBlock)
backward_group_kernel(const float2* __restrict__ partial, int splits, const float* __restrict__ gamma,
                      const float* __restrict__ rstd, GroupShape shape, double2* __restrict__ plane_sums,
                      float2* __restrict__ coef) {
  const int64_t groups = shape.group_count<kGroups>();
  const int64_t row = (int64_t(blockIdx.x) * kBlock + threadIdx.x) / kWarpSize;
  const int lane = threadIdx.x % kWarpSize;
  if (row >= shape.batch * groups) return;  // warp-uniform
  const int64_t n = row / groups, g = row - n * groups;
  const int64_t cpg = shape.channels_per_group();
  double sum_gamma_dy = 0.0, sum_gamma_dy_centered = 0.0;
  for (int64_t k = lane; k < cpg; k += kWarpSize) {
    const int64_t c = g * cpg + k;
    const int64_t plane = n * shape.channels + c;
    double s0 = 0.0, s1 = 0.0;
    for (int s = 0; s < splits; ++s) {
      const float2 p = partial[plane * splits + s];
      s0 += p.x;
      s1 += p.y;
    }
    plane_sums[plane] = make_double2(s0, s1);
    sum_gamma_dy += double(gamma[c]) * s0;
    sum_gamma_dy_centered += double(gamma[c]) * s1;
  }
  sum_gamma_dy = warp_sum(sum_gamma_dy);
  sum_gamma_dy_centered = warp_sum(sum_gamma_dy_centered);
  if (lane == 0) {
    const double r = rstd[row];
    const double d = double(cpg) * double(shape.plane_elems);
    coef[row] = make_float2(static_cast<float>(-r * r * r / d * sum_gamma_dy_centered),
                            static_cast<float>(-r / d * sum_gamma_dy));
  }
}

// A block of kParamGradThreads per channel: thread t sums its contiguous run of the batch in double, in
// order, and the runs' sums meet in a fixed tree: deterministic. (One thread a channel looping over the whole
// batch was latency-bound: H100, L2-27's 16 channels x 1024 samples took 303 us, 128-sample problems 40-50.)
constexpr int kParamGradThreads = 128;

template <int kGroups>
__global__ void __launch_bounds__(kParamGradThreads)
param_grad_kernel(const double2* __restrict__ plane_sums, const float* __restrict__ rstd, GroupShape shape,
                  float* __restrict__ dgamma, float* __restrict__ dbeta) {
  __shared__ double2 runs[kParamGradThreads];
  const int64_t c = blockIdx.x;
  const int64_t per = (shape.batch + kParamGradThreads - 1) / kParamGradThreads;
  const int64_t first = threadIdx.x * per;
  const int64_t last = min(first + per, shape.batch);
  double dg = 0.0, db = 0.0;
  for (int64_t n = first; n < last; ++n) {
    const int64_t plane = n * shape.channels + c;
    const double2 s = plane_sums[plane];
    dg += double(rstd[shape.row_of_plane<kGroups>(plane)]) * s.y;
    db += s.x;
  }
  runs[threadIdx.x] = make_double2(dg, db);
  __syncthreads();
  for (int stride = kParamGradThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) {
      runs[threadIdx.x].x += runs[threadIdx.x + stride].x;
      runs[threadIdx.x].y += runs[threadIdx.x + stride].y;
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    dgamma[c] = static_cast<float>(runs[0].x);
    dbeta[c] = static_cast<float>(runs[0].y);
  }
}

// The mean and rstd a GroupNorm normalises with, as the reference keeps them (RegionParams::statistics): at float16 /
// bfloat16 PyTorch's native_group_norm casts eps to the dtype, takes rstd = rsqrtf(var + eps) in float32 and stores
// mean and rstd in the dtype, then forms a = rstd gamma, b = beta - a mean in float32 from those (H200: its bfloat16
// output equals that emulation bit for bit, 69 % of it differs from one with float32 statistics:
// benchmarks/results/h200/precision/gn_rounding.txt). `var`: the biased variance. kExact: mean and rstd unchanged.
__device__ __forceinline__ void round_statistics(int rounding, double var, double eps, float2& mean, float& rstd) {
  if (rounding == kExact) return;
  mean = make_float2(stored(mean.x + mean.y, rounding), 0.f);
  rstd = stored(rsqrtf(static_cast<float>(var) + stored(static_cast<float>(eps), rounding)), rounding);
}

// Mean (as a (hi, lo) float pair) and rstd of a slice from its merged moments, taken around `pilot`, rounded as the
// reference keeps them (round_statistics).
__device__ __forceinline__ void finish_statistics(const MomentsD& m, double pilot, double eps, int rounding,
                                                  float2& mean, float& rstd) {
  const double var = m.n > 0.0 ? fmax(m.m2 / m.n, 0.0) : 0.0;  // biased, as nn.GroupNorm
  const double full_mean = pilot + m.mu;
  const float hi = static_cast<float>(full_mean);
  mean = make_float2(hi, static_cast<float>(full_mean - double(hi)));
  rstd = static_cast<float>(1.0 / sqrt(var + eps));
  round_statistics(rounding, var, eps, mean, rstd);
}

}  // namespace kgen
