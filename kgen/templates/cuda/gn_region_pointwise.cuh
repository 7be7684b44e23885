// ---- gn_region_pointwise: element-wise ops on one tensor, outside any GroupNorm region ----
// v = F(x) for an output v of shape (N, C, *) (contiguous), F a generated functor of the Prologue concept
// (gn_region_common.cuh) with per-channel parameters. Forward: one read, one write. Backward: one read of x
// and dv, one write of dx; each block of a (sample, channel) plane also sums F's parameter gradients, and
// those block sums are added per channel in double and in a fixed order (column_sums): bitwise reproducible.
//
// x has v's shape but any strides: a non-contiguous view is read where it lies, and a broadcast input (L2-75:
// a min over channels (N, 1) plus a (1, C, 1, 1) bias gives (1, C, N, 1)) arrives as its expanded view, stride
// 0 along the dims it repeats over; the caller sums dx back to the input's shape. Blocks are cut as
// groupnorm.cuh's sweeps, (plane, chunk of plan_split(S)), so the channel and F's parameters are fixed per
// block; packs of 4 values where the plane is whole packs (16-byte stores of v and dx, and 16-byte loads of a
// contiguous x).
namespace kgen {

// Where the value (n, c, i) of the output lies in a strided x: i, the position in the (n, c) plane, split
// over the plane's dims with size-1 dims dropped and runs that are contiguous in x merged (at most 3 left,
// padded in front with size 1). Needs planes below 2^31 values (FastDiv).
struct StridedInput {
  int64_t stride_n, stride_c;
  int64_t stride[3];   // outer, middle, inner plane dims
  int size[3];
  resident_detail::FastDiv div_inner, div_middle;

  __device__ __forceinline__ int64_t offset(int64_t n, int64_t c, int64_t i) const {
    const int q = div_inner.div(static_cast<int>(i));
    const int inner = static_cast<int>(i) - q * size[2];
    const int outer = div_middle.div(q);
    const int middle = q - outer * size[1];
    return n * stride_n + c * stride_c + outer * stride[0] + middle * stride[1] + inner * stride[2];
  }
};

inline StridedInput strided_input(const at::Tensor& x) {
  StridedInput in{};
  in.stride_n = x.stride(0);
  in.stride_c = x.stride(1);
  std::vector<std::pair<int64_t, int64_t>> dims;  // (size, stride), outer first
  for (int64_t k = 2; k < x.dim(); ++k) {
    if (x.size(k) == 1) continue;
    if (!dims.empty() && dims.back().second == x.stride(k) * x.size(k)) {
      dims.back() = {dims.back().first * x.size(k), x.stride(k)};  // contiguous in x: one dim
    } else {
      dims.emplace_back(x.size(k), x.stride(k));
    }
  }
  TORCH_CHECK(dims.size() <= 3, "kgen: element-wise input with more than 3 spatial dims");
  const size_t pad = 3 - dims.size();
  for (size_t k = 0; k < 3; ++k) {
    in.size[k] = k < pad ? 1 : static_cast<int>(dims[k - pad].first);
    in.stride[k] = k < pad ? 0 : dims[k - pad].second;
  }
  in.div_inner = resident_detail::FastDiv(in.size[2]);
  in.div_middle = resident_detail::FastDiv(in.size[1]);
  return in;
}

// The (plane, chunk) a block of the element-wise kernels takes.
struct PointwiseChunk {
  int64_t p, n, c, begin, end;
  __device__ __forceinline__ PointwiseChunk(int64_t channels, int64_t plane, const SplitPlan& plan) {
    p = blockIdx.x / plan.splits;
    begin = (blockIdx.x % plan.splits) * plan.chunk;
    end = min(begin + plan.chunk, plane);
    n = p / channels;
    c = p - n * channels;
  }
};

// The W values of x at output positions i .. i + W - 1 of chunk `b` (W = 4: within one run of the innermost
// dim, as pointwise_width guarantees).
template <bool kStrided, int W>
__device__ __forceinline__ void load_input(const float* __restrict__ x, const PointwiseChunk& b, int64_t plane,
                                           int64_t i, const StridedInput& in, float (&v)[W]) {
  if constexpr (kStrided) {
    const int64_t at = in.offset(b.n, b.c, i);
#pragma unroll
    for (int e = 0; e < W; ++e) v[e] = __ldg(x + at + e * in.stride[2]);
  } else if constexpr (W == 4) {
    resident_detail::split4(__ldg(reinterpret_cast<const float4*>(x + b.p * plane + i)), v);
  } else {
    v[0] = __ldg(x + b.p * plane + i);
  }
}

template <class F, int kBlock, bool kStrided, int W>
__global__ void __launch_bounds__(kBlock)
pointwise_forward_kernel(const float* __restrict__ x, float* __restrict__ v, int64_t channels, int64_t plane,
                         SplitPlan plan, RegionParams params, StridedInput in) {
  const PointwiseChunk b(channels, plane, plan);
  const F f = F::at(params, b.c);
  for (int64_t i = b.begin + W * threadIdx.x; i < b.end; i += W * kBlock) {
    float xv[W], out[W];
    load_input<kStrided, W>(x, b, plane, i, in, xv);
#pragma unroll
    for (int e = 0; e < W; ++e) out[e] = f.value(xv[e]);
    if constexpr (W == 4) {
      reinterpret_cast<float4*>(v + b.p * plane + i)[0] = resident_detail::join4(out);
    } else {
      v[b.p * plane + i] = out[0];
    }
  }
}

template <class F, int kBlock, bool kStrided, int W>
__global__ void __launch_bounds__(kBlock)
pointwise_backward_kernel(const float* __restrict__ dv, const float* __restrict__ x, float* __restrict__ dx,
                          int64_t channels, int64_t plane, SplitPlan plan, RegionParams params, StridedInput in,
                          float* __restrict__ param_partial) {
  const PointwiseChunk b(channels, plane, plan);
  const F f = F::at(params, b.c);
  float dparam[kMaxParams] = {0.f, 0.f, 0.f, 0.f};
  for (int64_t i = b.begin + W * threadIdx.x; i < b.end; i += W * kBlock) {
    float xv[W], g[W], out[W];
    load_input<kStrided, W>(x, b, plane, i, in, xv);
    if constexpr (W == 4) {
      resident_detail::split4(__ldg(reinterpret_cast<const float4*>(dv + b.p * plane + i)), g);
    } else {
      g[0] = __ldg(dv + b.p * plane + i);
    }
#pragma unroll
    for (int e = 0; e < W; ++e) out[e] = f.backward(xv[e], g[e], dparam);
    if constexpr (W == 4) {
      reinterpret_cast<float4*>(dx + b.p * plane + i)[0] = resident_detail::join4(out);
    } else {
      dx[b.p * plane + i] = out[0];
    }
  }
  if constexpr (F::kParams > 0) {
    // partial is (kParams, N * splits, C): one row of C per (sample, split), as column_sums reads it.
    const int64_t rows = gridDim.x / channels;
    const int split = blockIdx.x % plan.splits;
#pragma unroll
    for (int k = 0; k < F::kParams; ++k) {
      const float total = block_sum<kBlock>(dparam[k]);
      if (threadIdx.x == 0) param_partial[(k * rows + b.n * plan.splits + split) * channels + b.c] = total;
      __syncthreads();  // block_sum's shared scratch is reused by the next parameter's sum
    }
  }
}

inline void check_pointwise_input(const at::Tensor& x) {
  check_float_cuda(x, "input");
  TORCH_CHECK(x.dim() >= 2, "kgen: element-wise input must have shape (N, C, *), got ", str(x.sizes()));
}

// x as the kernels read it: itself where it is contiguous or a strided view they can index (rank <= 5,
// planes below 2^31 values), else a contiguous copy.
inline at::Tensor pointwise_input(const at::Tensor& input, bool& strided) {
  const int64_t plane = input.numel() == 0 ? 0 : input.numel() / (input.size(0) * input.size(1));
  strided = !input.is_contiguous() && input.dim() <= 5 && plane < (int64_t(1) << 31);
  return strided || input.is_contiguous() ? input : input.contiguous();
}

// 4 values a thread where the plane is whole packs, the streams 16-byte aligned, and a strided x's packs lie
// within one run of its innermost dim; else 1.
inline int pointwise_width(const at::Tensor& x, bool strided, int64_t plane,
                           std::initializer_list<const at::Tensor*> streams) {
  if (plane % 4 != 0) return 1;
  for (const at::Tensor* t : streams) {
    if (!is_16_byte_aligned(t->data_ptr<float>())) return 1;
  }
  if (strided) return strided_input(x).size[2] % 4 == 0 ? 4 : 1;
  return is_16_byte_aligned(x.data_ptr<float>()) ? 4 : 1;
}

// Calls launch(kernel-template tag) for the (strided, width) instantiation in use.
template <class Launch>
void dispatch_pointwise(bool strided, int width, Launch&& launch) {
  if (strided) {
    width == 4 ? launch(std::integral_constant<bool, true>{}, std::integral_constant<int, 4>{})
               : launch(std::integral_constant<bool, true>{}, std::integral_constant<int, 1>{});
  } else {
    width == 4 ? launch(std::integral_constant<bool, false>{}, std::integral_constant<int, 4>{})
               : launch(std::integral_constant<bool, false>{}, std::integral_constant<int, 1>{});
  }
}

template <class F, int kBlock>
at::Tensor pointwise_forward(const at::Tensor& input, const std::vector<at::Tensor>& params) {
  check_pointwise_input(input);
  const c10::cuda::CUDAGuard device_guard(input.device());
  bool strided = false;
  const at::Tensor x = pointwise_input(input, strided);
  auto v = at::empty(x.sizes(), x.options().memory_format(at::MemoryFormat::Contiguous));
  if (x.numel() == 0) return v;
  const int64_t channels = x.size(1), plane = x.numel() / (x.size(0) * channels);
  const RegionParams table{param_table(params, channels, x.device(), "element-wise"), ParamTable{}};
  const SplitPlan plan = plan_split<kBlock>(plane);
  const StridedInput in = strided ? strided_input(x) : StridedInput{};
  const int width = pointwise_width(x, strided, plane, {&v});
  dispatch_pointwise(strided, width, [&](auto kStrided, auto kWidth) {
    pointwise_forward_kernel<F, kBlock, decltype(kStrided)::value, decltype(kWidth)::value>
        <<<x.size(0) * channels * plan.splits, kBlock, 0, at::cuda::getCurrentCUDAStream()>>>(
            x.data_ptr<float>(), v.data_ptr<float>(), channels, plane, plan, table, in);
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return v;
}

// Returns {dx (the output's shape, contiguous), dparams (kParams, C)}.
template <class F, int kBlock>
std::vector<at::Tensor> pointwise_backward(const at::Tensor& grad, const at::Tensor& input,
                                           const std::vector<at::Tensor>& params) {
  check_pointwise_input(input);
  check_float_cuda(grad, "gradient of the output");
  TORCH_CHECK(grad.sizes() == input.sizes(), "kgen: output gradient has shape ", str(grad.sizes()), ", expected ",
              str(input.sizes()));
  const c10::cuda::CUDAGuard device_guard(input.device());
  bool strided = false;
  const at::Tensor x = pointwise_input(input, strided);
  const auto dv = grad.contiguous();
  auto dx = at::empty(x.sizes(), x.options().memory_format(at::MemoryFormat::Contiguous));
  const int64_t channels = x.size(1);
  at::Tensor dparams = at::zeros({int64_t(F::kParams), channels}, x.options());
  if (x.numel() == 0) return {dx, dparams};
  const int64_t plane = x.numel() / (x.size(0) * channels);
  const RegionParams table{param_table(params, channels, x.device(), "element-wise"), ParamTable{}};
  const SplitPlan plan = plan_split<kBlock>(plane);
  const int64_t rows = x.size(0) * plan.splits;
  at::Tensor partial = at::empty({std::max<int64_t>(1, int64_t(F::kParams)) * rows, channels}, x.options());
  const StridedInput in = strided ? strided_input(x) : StridedInput{};
  const int width = pointwise_width(x, strided, plane, {&dv, &dx});
  dispatch_pointwise(strided, width, [&](auto kStrided, auto kWidth) {
    pointwise_backward_kernel<F, kBlock, decltype(kStrided)::value, decltype(kWidth)::value>
        <<<x.size(0) * channels * plan.splits, kBlock, 0, at::cuda::getCurrentCUDAStream()>>>(
            dv.data_ptr<float>(), x.data_ptr<float>(), dx.data_ptr<float>(), channels, plane, plan, table, in,
            partial.data_ptr<float>());
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  for (int k = 0; k < F::kParams; ++k) {
    auto row = dparams.select(0, k);
    column_sums<kBlock>(partial.narrow(0, k * rows, rows), row);
  }
  return {dx, dparams};
}

}  // namespace kgen
