// ---- gn_region_pointwise: element-wise ops on one tensor, outside any GroupNorm region ----
// v = F(x) for x (N, C, *) contiguous, F a generated functor of the Prologue concept (gn_region_common.cuh)
// with per-channel parameters. Forward: one read, one write. Backward: one read of x and dv, one write of
// dx; each block of a (sample, channel) plane also sums F's parameter gradients, and those block sums are
// added per channel in double and in a fixed order (column_sums): bitwise reproducible.
namespace kgen {

template <class F, int kBlock>
__global__ void __launch_bounds__(kBlock)
pointwise_forward_kernel(const float* __restrict__ x, float* __restrict__ v, int64_t channels, int64_t plane,
                         SplitPlan plan, RegionParams params) {
  const int64_t p = blockIdx.x / plan.splits;
  const int64_t begin = (blockIdx.x % plan.splits) * plan.chunk;
  const int64_t end = min(begin + plan.chunk, plane);
  const F f = F::at(params, p % channels);
  const int64_t offset = p * plane;
  for (int64_t i = begin + threadIdx.x; i < end; i += kBlock) v[offset + i] = f.value(__ldg(x + offset + i));
}

template <class F, int kBlock>
__global__ void __launch_bounds__(kBlock)
pointwise_backward_kernel(const float* __restrict__ dv, const float* __restrict__ x, float* __restrict__ dx,
                          int64_t channels, int64_t plane, SplitPlan plan, RegionParams params,
                          float* __restrict__ param_partial) {
  const int64_t p = blockIdx.x / plan.splits;
  const int64_t split = blockIdx.x % plan.splits;
  const int64_t begin = split * plan.chunk;
  const int64_t end = min(begin + plan.chunk, plane);
  const int64_t c = p % channels, n = p / channels;
  const F f = F::at(params, c);
  const int64_t offset = p * plane;
  float dparam[kMaxParams] = {0.f, 0.f, 0.f, 0.f};
  for (int64_t i = begin + threadIdx.x; i < end; i += kBlock) {
    dx[offset + i] = f.backward(__ldg(x + offset + i), __ldg(dv + offset + i), dparam);
  }
  if constexpr (F::kParams > 0) {
    // partial is (kParams, N * splits, C): one row of C per (sample, split), as column_sums reads it.
    const int64_t rows = gridDim.x / channels;
#pragma unroll
    for (int k = 0; k < F::kParams; ++k) {
      const float total = block_sum<kBlock>(dparam[k]);
      if (threadIdx.x == 0) param_partial[(k * rows + n * plan.splits + split) * channels + c] = total;
      __syncthreads();  // block_sum's shared scratch is reused by the next parameter's sum
    }
  }
}

inline void check_pointwise_input(const at::Tensor& x) {
  check_float_cuda(x, "input");
  TORCH_CHECK(x.dim() >= 2, "kgen: element-wise input must have shape (N, C, *), got ", str(x.sizes()));
}

template <class F, int kBlock>
at::Tensor pointwise_forward(const at::Tensor& input, const std::vector<at::Tensor>& params) {
  check_pointwise_input(input);
  const c10::cuda::CUDAGuard device_guard(input.device());
  const auto x = input.contiguous();
  auto v = at::empty_like(x, at::MemoryFormat::Contiguous);
  if (x.numel() == 0) return v;
  const int64_t channels = x.size(1), plane = x.numel() / (x.size(0) * channels);
  const RegionParams table{param_table(params, channels, x.device(), "element-wise"), ParamTable{}};
  const SplitPlan plan = plan_split<kBlock>(plane);
  pointwise_forward_kernel<F, kBlock><<<x.size(0) * channels * plan.splits, kBlock, 0,
                                        at::cuda::getCurrentCUDAStream()>>>(x.data_ptr<float>(), v.data_ptr<float>(),
                                                                            channels, plane, plan, table);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return v;
}

// Returns {dx, dparams (kParams, C)}.
template <class F, int kBlock>
std::vector<at::Tensor> pointwise_backward(const at::Tensor& grad, const at::Tensor& input,
                                           const std::vector<at::Tensor>& params) {
  check_pointwise_input(input);
  check_float_cuda(grad, "gradient of the output");
  TORCH_CHECK(grad.sizes() == input.sizes(), "kgen: output gradient has shape ", str(grad.sizes()), ", expected ",
              str(input.sizes()));
  const c10::cuda::CUDAGuard device_guard(input.device());
  const auto x = input.contiguous();
  const auto dv = grad.contiguous();
  auto dx = at::empty_like(x, at::MemoryFormat::Contiguous);
  const int64_t channels = x.size(1);
  at::Tensor dparams = at::zeros({int64_t(F::kParams), channels}, x.options());
  if (x.numel() == 0) return {dx, dparams};
  const int64_t plane = x.numel() / (x.size(0) * channels);
  const RegionParams table{param_table(params, channels, x.device(), "element-wise"), ParamTable{}};
  const SplitPlan plan = plan_split<kBlock>(plane);
  const int64_t rows = x.size(0) * plan.splits;
  at::Tensor partial = at::empty({std::max<int64_t>(1, int64_t(F::kParams)) * rows, channels}, x.options());
  pointwise_backward_kernel<F, kBlock><<<x.size(0) * channels * plan.splits, kBlock, 0,
                                         at::cuda::getCurrentCUDAStream()>>>(
      dv.data_ptr<float>(), x.data_ptr<float>(), dx.data_ptr<float>(), channels, plane, plan, table,
      partial.data_ptr<float>());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  for (int k = 0; k < F::kParams; ++k) {
    auto row = dparams.select(0, k);
    column_sums<kBlock>(partial.narrow(0, k * rows, rows), row);
  }
  return {dx, dparams};
}

}  // namespace kgen
