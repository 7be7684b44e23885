"""Test harness of kgen's wgmma ConvTranspose2d (kgen/templates/cuda/conv/convt_wgmma.cuh, sm_90a, stride 1): one
load_inline extension built straight from the .cuh building blocks, for sm_90a alone (torch adds no target of
its own once a flag names one; sm_90a code runs on sm_90 devices only).

The conv serves region prologues (groupnorm/region.cuh): the harness defines its own, each adding the conv's bias b
(its one parameter) with PyTorch's separately rounded add, then an op: GELU (erf, with a moments_value by
kgen::convt::gelu_erf_moments, as kgen's generated prologues have), identity, GELU (tanh). z is the conv WITHOUT its
bias; the statistics are of op(z + b).

  convt_wgmma_forward(x, w, b, groups, eps, padding, variant) -> [z, mean, rstd]
  convt_wgmma_gn_forward(x, w, b, gamma, beta, groups, eps, padding) -> [y, z, mean, rstd]   (GELU erf; y by the
      harness's own normalise sweep of op(z + b) with the kernel's statistics)
  convt_wgmma_unsupported(x, w, groups, stride, padding, output_padding, dilation, conv_groups) -> "" or why not
  convt_wgmma_input_grad(grad_z, w, padding, variant) -> grad_x        (grad_z read channels-last)
  convt_wgmma_weight_grad(grad_z, x, w, padding, variant) -> grad_w   (conv/convt_wgrad.cuh; variant 0 x truncated by
      the tensor cores, 1 x rounded to nearest, 14 for timing: the wgmma and A loads alone)
  convt_wgmma_conv_backward(grad_z, x, w, padding, input_grad, weight_grad) -> [grad_x, grad_w] (None where not asked;
      kgen's kernels where they take the call, else cuDNN)
  convt_wgmma_infer(x, w, b, gamma, beta, groups, eps, padding, variant, normalisers) -> y   (one launch,
      conv/convt_wgmma_infer.cuh; gamma and beta None for GroupNorm(affine=False): variant 0-2 as below; 3 GELU erf
      with a region epilogue y * b[c]; 10 + convt_wgmma_infer's mode 2-7 for comparisons, GELU erf; normalisers -1
      the default)
  convt_wgmma_ring(x, w, groups, padding) -> [K-major stages, raw slots (0: the 4-byte copies' input path)] of the
      plan the bulk input path asks for (variant 30, the one launch)
  tf32_roundings(x) -> [tf32_nearest's bits, cvt.rn.tf32.f32's bits] of each float32 element (int32)
  convt_wgmma_available() -> whether the kernel runs on the current GPU

variant: 0 GELU erf (L2-19), 1 identity (plain conv moments), 2 GELU tanh; for timing only, 10 the main loop
alone, 11 the epilogue alone, 13 the main loop's wgmma alone, 14 the main loop loading only the weights, 15 only
the input (GELU erf; none of them computes the conv); 16 GELU erf with 3 chunks of copies in flight a producer
thread (the default keeps 2); 17 and 18, the whole kernel and its main loop without the producer's rounding sweep
(timing only: the tensor cores truncate x); 19 and 20, the conv storing z without moments, whole and its epilogue
alone; 21 GELU erf without the epilogue's stores (timing only); 30 and 31, GELU erf by the bulk input path where it
applies (0-21 take the 4-byte copies'), whole and its main loop alone (timing only); 32 and 33, the bulk path with a
K-major ring of 2 stages (3 by default where its raw slots fit), whole and main loop alone (timing only); 34 and 35,
the bulk path's main loop with the weights copied once a stage and without the transposing sweep (timing only)."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

CUDA_DIR = Path(__file__).resolve().parents[2] / "kgen" / "templates" / "cuda"
PARTS = ("core/common.cuh", "core/sweeps.cuh", "groupnorm/statistics.cuh", "groupnorm/region.cuh", "core/ops.cuh",
         "core/layout.cuh", "conv/convt_common.cuh", "conv/convt_wgmma.cuh", "conv/convt_wgmma_produce.cuh",
         "conv/convt_wgmma_consume.cuh", "conv/convt_wgmma_host.cuh",
         "conv/convt_wgmma_infer.cuh", "conv/convt_wgrad.cuh")
SM90A = "-gencode=arch=compute_90a,code=sm_90a"

BINDINGS = r"""
namespace {

// Region prologues as kgen generates them for a conv whose bias it peels off: z = op(x + b[c]), the add
// PyTorch's own (one separately rounded float add).
struct BiasGeluErf {
  static constexpr int kParams = 1;
  float bias;
  __device__ static BiasGeluErf at(const kgen::RegionParams& p, int64_t c) {
    return BiasGeluErf{p.prologue.at(0, c)};
  }
  __device__ __forceinline__ float value(float x) const { return kgen::gelu_erf(__fadd_rn(x, bias)); }
  __device__ __forceinline__ float moments_value(float x) const {
    return kgen::convt::gelu_erf_moments(__fadd_rn(x, bias));
  }
};
struct BiasIdentity {
  static constexpr int kParams = 1;
  float bias;
  __device__ static BiasIdentity at(const kgen::RegionParams& p, int64_t c) {
    return BiasIdentity{p.prologue.at(0, c)};
  }
  __device__ __forceinline__ float value(float x) const { return __fadd_rn(x, bias); }
};
struct BiasGeluTanh {
  static constexpr int kParams = 1;
  float bias;
  __device__ static BiasGeluTanh at(const kgen::RegionParams& p, int64_t c) {
    return BiasGeluTanh{p.prologue.at(0, c)};
  }
  __device__ __forceinline__ float value(float x) const { return kgen::gelu_tanh(__fadd_rn(x, bias)); }
};

// A region epilogue of y alone: v = y * s[c].
struct ScaleEpilogue {
  static constexpr int kParams = 1;
  static constexpr bool kDirectGrads = false;
  float scale;
  __device__ static ScaleEpilogue at(const kgen::RegionParams& p, int64_t c) {
    return ScaleEpilogue{p.epilogue.at(0, c)};
  }
  __device__ __forceinline__ float value(float y, float, float) const { return y * scale; }
};

// The prologue's parameters: the conv bias b (C_out values, on the weight's device, checked there).
kgen::RegionParams bias_params(const at::Tensor& w, const at::Tensor& b) {
  kgen::RegionParams params{};
  params.prologue = kgen::param_table({b}, w.size(1), w.device(), "prologue");
  return params;
}

template <class Pro, int kPart = 0, bool kRoundInput = true>
std::vector<at::Tensor> forward_with(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, int64_t groups,
                                     double eps, std::vector<int64_t> padding, int chunks_in_flight = 2,
                                     bool bulk_input = false, int bulk_stages = 3) {
  return kgen::convt::convt_wgmma_moments<Pro, kPart, false, kRoundInput>(
      x, w, bias_params(w, b), groups, eps, padding, chunks_in_flight, false, 4, bulk_input, bulk_stages);
}

// y = (Pro(z) - mean) rstd gamma + beta from the kernel's statistics: a plain grid-stride sweep, for the tests.
template <class Pro>
__global__ void normalise_kernel(const float* __restrict__ z, const float2* __restrict__ mean,
                                 const float* __restrict__ rstd, const float* __restrict__ gamma,
                                 const float* __restrict__ beta, float* __restrict__ y, kgen::RegionParams params,
                                 int64_t channels, int64_t groups, int64_t plane, int64_t total) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t nc = i / plane, n = nc / channels, c = nc - n * channels;
    const int64_t row = n * groups + c / (channels / groups);
    const float u = Pro::at(params, c).value(z[i]);
    y[i] = kgen::centered(u, mean[row]) * (rstd[row] * gamma[c]) + beta[c];
  }
}

}  // namespace

std::vector<at::Tensor> convt_wgmma_forward(at::Tensor x, at::Tensor w, at::Tensor b, int64_t groups, double eps,
                                            std::vector<int64_t> padding, int64_t variant) {
  using kgen::convt::ConvOnly;
  switch (variant) {
    case 0: return forward_with<BiasGeluErf>(x, w, b, groups, eps, padding);
    case 1: return forward_with<BiasIdentity>(x, w, b, groups, eps, padding);
    case 2: return forward_with<BiasGeluTanh>(x, w, b, groups, eps, padding);
    // timing only: the main loop alone, the epilogue alone, the main loop's wgmma alone, loading only the weights,
    // only the input (GELU erf)
    case 10: return forward_with<BiasGeluErf, 1>(x, w, b, groups, eps, padding);
    case 11: return forward_with<BiasGeluErf, 2>(x, w, b, groups, eps, padding);
    case 13: return forward_with<BiasGeluErf, 4>(x, w, b, groups, eps, padding);
    case 14: return forward_with<BiasGeluErf, 5>(x, w, b, groups, eps, padding);
    case 15: return forward_with<BiasGeluErf, 6>(x, w, b, groups, eps, padding);
    // timing only: without the producer's rounding sweep (x truncated by the tensor cores), whole and main loop
    case 17: return forward_with<BiasGeluErf, 0, false>(x, w, b, groups, eps, padding);
    case 18: return forward_with<BiasGeluErf, 1, false>(x, w, b, groups, eps, padding);
    // timing only: the conv and its stores of z alone (no moments), whole and epilogue alone; GELU erf without the
    // epilogue's stores of z (its moments only)
    case 19: return forward_with<ConvOnly, 0>(x, w, b, groups, eps, padding);
    case 20: return forward_with<ConvOnly, 2>(x, w, b, groups, eps, padding);
    case 21: return forward_with<BiasGeluErf, 7>(x, w, b, groups, eps, padding);
    // GELU erf with 3 chunks of copies in flight a producer thread (2 by default; the 4-byte copies' path)
    case 16: return forward_with<BiasGeluErf>(x, w, b, groups, eps, padding, 3);
    // GELU erf by the bulk input path where it applies: whole, and its main loop alone (timing)
    case 30: return forward_with<BiasGeluErf>(x, w, b, groups, eps, padding, 2, true);
    case 31: return forward_with<BiasGeluErf, 1>(x, w, b, groups, eps, padding, 2, true);
    // the bulk input path with a K-major ring of 2 stages (more raw slots; 3 by default): whole and main loop alone
    // (timing); the main loop with each stage's weights copied once, and without the transposing sweep (timing only)
    case 32: return forward_with<BiasGeluErf>(x, w, b, groups, eps, padding, 2, true, 2);
    case 33: return forward_with<BiasGeluErf, 1>(x, w, b, groups, eps, padding, 2, true, 2);
    case 34: return forward_with<BiasGeluErf, 8>(x, w, b, groups, eps, padding, 2, true);
    case 35: return forward_with<BiasGeluErf, 9>(x, w, b, groups, eps, padding, 2, true);
  }
  TORCH_CHECK(false, "kgen test: no variant ", variant);
}

std::vector<at::Tensor> convt_wgmma_gn_forward(at::Tensor x, at::Tensor w, at::Tensor b, at::Tensor gamma,
                                               at::Tensor beta, int64_t groups, double eps,
                                               std::vector<int64_t> padding) {
  auto zs = forward_with<BiasGeluErf>(x, w, b, groups, eps, padding);
  const auto& z = zs[0];
  auto y = at::empty_like(z);
  const auto g = gamma.contiguous(), bt = beta.contiguous();
  const int64_t total = z.numel();
  if (total > 0) {
    normalise_kernel<BiasGeluErf><<<static_cast<unsigned>(std::min<int64_t>((total + 255) / 256, 8192)), 256, 0,
                                    at::cuda::getCurrentCUDAStream()>>>(
        z.data_ptr<float>(), kgen::as_float2(zs[1]), zs[2].data_ptr<float>(), g.data_ptr<float>(),
        bt.data_ptr<float>(), y.data_ptr<float>(), bias_params(w, b), z.size(1), groups, z.size(2) * z.size(3), total);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
  return {y, zs[0], zs[1], zs[2]};
}

std::string convt_wgmma_unsupported(at::Tensor x, at::Tensor w, int64_t groups, std::vector<int64_t> stride,
                                    std::vector<int64_t> padding, std::vector<int64_t> output_padding,
                                    std::vector<int64_t> dilation, int64_t conv_groups) {
  return kgen::convt::convt_wgmma_unsupported<BiasGeluErf>(x, w, groups, stride, padding, output_padding, dilation,
                                                           conv_groups);
}

// grad_x of conv_transpose2d(x, w, padding) at stride 1 for grad_z (read channels-last), NCHW; "" or why not
at::Tensor convt_wgmma_input_grad(at::Tensor grad_z, at::Tensor w, std::vector<int64_t> padding, int64_t variant) {
  using kgen::convt::convt_wgmma_input_grad;
  switch (variant) {
    case 0: return convt_wgmma_input_grad(grad_z, w, padding);
    case 1: return convt_wgmma_input_grad(grad_z, w, padding, /*l2_prefetch=*/true);
    case 2: return convt_wgmma_input_grad(grad_z, w, padding, true, /*pitch_align=*/1);
    case 3: return convt_wgmma_input_grad(grad_z, w, padding, true, /*pitch_align=*/16);
    case 4: return convt_wgmma_input_grad<0, true>(grad_z, w, padding);  // grad_z rounded to nearest
    // timing only: the main loop alone, the epilogue alone; the main loop alone with grad_z rounded
    case 10: return convt_wgmma_input_grad<1>(grad_z, w, padding);
    case 11: return convt_wgmma_input_grad<2>(grad_z, w, padding);
    case 12: return convt_wgmma_input_grad<1, true>(grad_z, w, padding);
  }
  TORCH_CHECK(false, "kgen test: no input gradient variant ", variant);
}
std::string convt_wgmma_input_grad_unsupported(at::Tensor grad_z, at::Tensor w, std::vector<int64_t> padding) {
  return kgen::convt::convt_wgmma_input_grad_unsupported(grad_z, w, padding);
}

// grad weight of conv_transpose2d(x, w, padding) at stride 1 for grad_z (read channels-last), x read NCHW
at::Tensor convt_wgmma_weight_grad(at::Tensor grad_z, at::Tensor x, at::Tensor w, std::vector<int64_t> padding,
                                   int64_t variant) {
  using kgen::convt::convt_wgmma_weight_grad;
  switch (variant) {
    case 0: return convt_wgmma_weight_grad(grad_z, x, w, padding);
    case 1: return convt_wgmma_weight_grad(grad_z, x, w, padding, /*round_x=*/true);
    // timing only: the wgmma and A loads alone (each slot filled once)
    case 14: return convt_wgmma_weight_grad<4>(grad_z, x, w, padding);
  }
  TORCH_CHECK(false, "kgen test: no weight gradient variant ", variant);
}
std::string convt_wgmma_weight_grad_unsupported(at::Tensor grad_z, at::Tensor x, at::Tensor w,
                                                std::vector<int64_t> padding) {
  return kgen::convt::convt_wgmma_weight_grad_unsupported(grad_z, x, w, padding);
}

// {grad_x, grad_w} of conv_transpose2d(x, w, padding) at stride 1 (conv/convt_wgrad.cuh's convt_wgmma_conv_backward)
std::vector<std::optional<at::Tensor>> convt_wgmma_conv_backward(at::Tensor grad_z, at::Tensor x, at::Tensor w,
                                                                 std::vector<int64_t> padding, bool input_grad,
                                                                 bool weight_grad) {
  const auto grads = kgen::convt::convt_wgmma_conv_backward(grad_z, x, w, padding, input_grad, weight_grad);
  std::vector<std::optional<at::Tensor>> out;
  for (const auto& g : grads) out.push_back(g.defined() ? std::optional<at::Tensor>(g) : std::nullopt);
  return out;
}

// y = GroupNorm(op(conv_transpose2d(x, w, padding) + b)) in one launch (conv/convt_wgmma_infer.cuh); gamma and beta
// None: GroupNorm(affine=False); variant as convt_wgmma_forward's 0-2, 3 with the epilogue y * b[c]; normalisers -1:
// the default
at::Tensor convt_wgmma_infer(at::Tensor x, at::Tensor w, at::Tensor b, std::optional<at::Tensor> gamma,
                             std::optional<at::Tensor> beta, int64_t groups, double eps, std::vector<int64_t> padding,
                             int64_t variant, int64_t normalisers) {
  using kgen::NoEpilogue;
  using kgen::convt::convt_wgmma_infer;
  const int r = static_cast<int>(normalisers);
  const at::Tensor g = gamma.value_or(at::Tensor()), bt = beta.value_or(at::Tensor());
  kgen::RegionParams params = bias_params(w, b);
  switch (variant) {
    case 0: return convt_wgmma_infer<BiasGeluErf, NoEpilogue>(x, w, params, g, bt, groups, eps, padding, r);
    case 1: return convt_wgmma_infer<BiasIdentity, NoEpilogue>(x, w, params, g, bt, groups, eps, padding, r);
    case 2: return convt_wgmma_infer<BiasGeluTanh, NoEpilogue>(x, w, params, g, bt, groups, eps, padding, r);
    case 3:
      params.epilogue = kgen::param_table({b}, w.size(1), w.device(), "epilogue");
      return convt_wgmma_infer<BiasGeluErf, ScaleEpilogue>(x, w, params, g, bt, groups, eps, padding, r);
    // GELU erf, convt_wgmma_infer's modes 2-7: the normalise without stores (timing only); the register path;
    // timing only, the normalise alone on `normalisers` blocks: bulk path, its chunks 48 KB, the register path;
    // the conv's input by 4-byte copies
    case 12: case 13: case 14: case 15: case 16: case 17:
      return convt_wgmma_infer<BiasGeluErf, NoEpilogue>(x, w, params, g, bt, groups, eps, padding, r,
                                                        static_cast<int>(variant) - 10);
  }
  TORCH_CHECK(false, "kgen test: no one-launch variant ", variant);
}
// GELU erf with the trace (conv/convt_wgmma_infer.cuh's InferArgs::trace): {y, trace}
std::vector<at::Tensor> convt_wgmma_infer_trace(at::Tensor x, at::Tensor w, at::Tensor b, at::Tensor gamma,
                                                at::Tensor beta, int64_t groups, double eps,
                                                std::vector<int64_t> padding, int64_t normalisers, int64_t mode) {
  at::Tensor trace;
  auto y = kgen::convt::convt_wgmma_infer<BiasGeluErf, kgen::NoEpilogue>(
      x, w, bias_params(w, b), gamma, beta, groups, eps, padding, static_cast<int>(normalisers),
      static_cast<int>(mode), &trace);
  return {y, trace};
}
std::string convt_wgmma_infer_unsupported(at::Tensor x, at::Tensor w, std::optional<at::Tensor> gamma,
                                          std::optional<at::Tensor> beta, int64_t groups,
                                          std::vector<int64_t> padding) {
  return kgen::convt::convt_wgmma_infer_unsupported<BiasGeluErf, kgen::NoEpilogue>(
      x, w, gamma.value_or(at::Tensor()), beta.value_or(at::Tensor()), groups, padding);
}

// The ring convt_wgmma_moments plans for this call: {K-major stages, raw slots of the bulk input path (0: 4-byte
// copies)}
std::vector<int64_t> convt_wgmma_ring(at::Tensor x, at::Tensor w, int64_t groups, std::vector<int64_t> padding) {
  const kgen::convt::ConvShape s = kgen::convt::check_convt(x, w, groups, {1, 1}, padding, {0, 0});
  const auto kernel = kgen::convt::convt_wgmma_kernel<BiasGeluErf, 0>;
  cudaFuncAttributes attributes{};
  C10_CUDA_CHECK(cudaFuncGetAttributes(&attributes, reinterpret_cast<const void*>(kernel)));
  kgen::convt::WgmmaGeometry g{};
  const std::string why = kgen::convt::convt_wgmma_plan(s, g, kgen::max_block_smem(x.get_device()),
      int64_t(attributes.sharedSizeBytes), 4, x.is_contiguous() && kgen::is_16_byte_aligned(x.data_ptr<float>()));
  TORCH_CHECK(why.empty(), why);
  return {g.stages, g.raw_slots};
}

// Both TF32 roundings of every element of x (float32): {tf32_nearest_bits, the integer form (the kernels' off sm_90),
// PTX's cvt.rn.tf32.f32 (one F2FP instruction on sm_90a: tf32_nearest's there)}, as int32 bit patterns.
__global__ void tf32_roundings_kernel(const float* x, int* nearest, int* cvt_rn, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    nearest[i] = static_cast<int>(__float_as_uint(kgen::convt::tf32_nearest_bits(x[i])));
    unsigned r = 0;
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm("cvt.rn.tf32.f32 %0, %1;" : "=r"(r) : "f"(x[i]));
#endif
    cvt_rn[i] = static_cast<int>(r);
  }
}
std::vector<at::Tensor> tf32_roundings(at::Tensor x) {
  TORCH_CHECK(x.is_cuda() && x.scalar_type() == at::kFloat, "kgen test: a float32 CUDA tensor");
  const auto xc = x.contiguous();
  auto nearest = at::empty(xc.sizes(), xc.options().dtype(at::kInt)), cvt_rn = at::empty_like(nearest);
  const int64_t n = xc.numel();
  if (n > 0) {
    tf32_roundings_kernel<<<static_cast<unsigned>(std::min<int64_t>((n + 255) / 256, 4096)), 256, 0,
                            at::cuda::getCurrentCUDAStream()>>>(xc.data_ptr<float>(), nearest.data_ptr<int>(),
                                                                cvt_rn.data_ptr<int>(), n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
  return {nearest, cvt_rn};
}

bool convt_wgmma_available() {
  int device = 0;
  C10_CUDA_CHECK(cudaGetDevice(&device));
  return kgen::convt::convt_wgmma_available(device);
}
"""

CPP_SOURCE = """
#include <torch/extension.h>
std::vector<at::Tensor> convt_wgmma_forward(at::Tensor x, at::Tensor w, at::Tensor b, int64_t groups, double eps,
    std::vector<int64_t> padding, int64_t variant);
std::vector<at::Tensor> convt_wgmma_gn_forward(at::Tensor x, at::Tensor w, at::Tensor b, at::Tensor gamma,
    at::Tensor beta, int64_t groups, double eps, std::vector<int64_t> padding);
std::string convt_wgmma_unsupported(at::Tensor x, at::Tensor w, int64_t groups, std::vector<int64_t> stride,
    std::vector<int64_t> padding, std::vector<int64_t> output_padding, std::vector<int64_t> dilation,
    int64_t conv_groups);
at::Tensor convt_wgmma_input_grad(at::Tensor grad_z, at::Tensor w, std::vector<int64_t> padding, int64_t variant);
std::string convt_wgmma_input_grad_unsupported(at::Tensor grad_z, at::Tensor w, std::vector<int64_t> padding);
at::Tensor convt_wgmma_weight_grad(at::Tensor grad_z, at::Tensor x, at::Tensor w, std::vector<int64_t> padding,
    int64_t variant);
std::string convt_wgmma_weight_grad_unsupported(at::Tensor grad_z, at::Tensor x, at::Tensor w,
    std::vector<int64_t> padding);
std::vector<std::optional<at::Tensor>> convt_wgmma_conv_backward(at::Tensor grad_z, at::Tensor x, at::Tensor w,
    std::vector<int64_t> padding, bool input_grad, bool weight_grad);
at::Tensor convt_wgmma_infer(at::Tensor x, at::Tensor w, at::Tensor b, std::optional<at::Tensor> gamma,
    std::optional<at::Tensor> beta, int64_t groups, double eps, std::vector<int64_t> padding, int64_t variant,
    int64_t normalisers);
std::string convt_wgmma_infer_unsupported(at::Tensor x, at::Tensor w, std::optional<at::Tensor> gamma,
    std::optional<at::Tensor> beta, int64_t groups, std::vector<int64_t> padding);
std::vector<at::Tensor> convt_wgmma_infer_trace(at::Tensor x, at::Tensor w, at::Tensor b, at::Tensor gamma,
    at::Tensor beta, int64_t groups, double eps, std::vector<int64_t> padding, int64_t normalisers, int64_t mode);
std::vector<int64_t> convt_wgmma_ring(at::Tensor x, at::Tensor w, int64_t groups, std::vector<int64_t> padding);
std::vector<at::Tensor> tf32_roundings(at::Tensor x);
bool convt_wgmma_available();
"""
FUNCTIONS = ["convt_wgmma_forward", "convt_wgmma_gn_forward", "convt_wgmma_unsupported", "convt_wgmma_input_grad",
             "convt_wgmma_input_grad_unsupported", "convt_wgmma_weight_grad",
             "convt_wgmma_weight_grad_unsupported", "convt_wgmma_conv_backward", "convt_wgmma_infer",
             "convt_wgmma_infer_unsupported", "convt_wgmma_infer_trace", "convt_wgmma_ring", "tf32_roundings",
             "convt_wgmma_available"]
VARIANTS = {"gelu_erf": 0, "identity": 1, "gelu_tanh": 2, "gelu_erf_3_in_flight": 16, "gelu_erf_bulk": 30,
            "gelu_erf_bulk_2_stages": 32}
INPUT_GRAD_VARIANTS = {"default": 0, "l2_prefetch": 1, "pitch_unpadded": 2, "pitch_align_16": 3, "grad_z_rounded": 4}
WEIGHT_GRAD_VARIANTS = {"default": 0, "x_rounded": 1}


def cuda_source() -> str:
    return "\n".join((CUDA_DIR / name).read_text() for name in PARTS) + BINDINGS


def build_extension(verbose: bool = False):
    from torch.utils.cpp_extension import load_inline

    source = cuda_source()
    digest = hashlib.sha256((CPP_SOURCE + source + SM90A).encode()).hexdigest()[:16]
    return load_inline(name="kgen_test_convt_wgmma_" + digest, cpp_sources=CPP_SOURCE, cuda_sources=source,
                       functions=FUNCTIONS, extra_cuda_cflags=["-O3", SM90A],
                       verbose=verbose or bool(os.environ.get("KGEN_VERBOSE_BUILD")))
