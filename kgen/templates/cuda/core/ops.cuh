// ---- core/ops.cuh: the element-wise ops of generated region functors, in PyTorch's formulas ----
// Values and derivatives as PyTorch's CUDA kernels and autograd formulas compute them (NaN propagation
// included where PyTorch propagates), so a fused op is the reference's op: its bits. A value must be where a library
// op rounds to TF32 after it (a convolution): there a last-bit difference turns into ~1e-3 (ref/plan_faithful.py), and
// such a region is faithful. The derivatives of sigmoid, SiLU and mish take cheaper forms (below), which measured
// faster in issue-bound backward kernels and stay within a few ulp of float64 (tests/gpu/test_region_ops.py holds
// each to PyTorch's own error against float64); so do the forward values of a region that is not faithful, whose
// normalisation is kgen's own and not PyTorch's bits (ref/functors.py, epilogue_functor's `cheap`).
namespace kgen {

__device__ __forceinline__ float reluf(float a) { return (a > 0.f || a != a) ? a : 0.f; }
// sigmoid and SiLU as PyTorch's 1 / (1 + exp(-a)) and a / (1 + exp(-a)), IEEE divisions (H200: equal to torch.sigmoid
// and F.silu for 2^24 values of 6 randn, benchmarks/results/h200/faithful/README.md).
__device__ __forceinline__ float sigmoidf(float a) { return 1.f / (1.f + expf(-a)); }
__device__ __forceinline__ float siluf(float a) { return a / (1.f + expf(-a)); }
// As a backward recomputes them (OpDef.recompute), and SiLU's derivative: the division as __fdividef (a reciprocal
// and a product, 1-2 ulp, no slow path; past a = -87.3 the denominator passes 2^126 and the result is 0 where IEEE
// gives one below 1.2e-38 (sigmoid) or 1.1e-36 (SiLU)). (H100, the pipelined backward, one process: L2-21 1324 us
// against 1462 with the IEEE division, L2-60 1702 against 1810.)
__device__ __forceinline__ float sigmoid_fast(float a) { return __fdividef(1.f, 1.f + expf(-a)); }
__device__ __forceinline__ float silu_fast(float a) { return __fdividef(a, 1.f + expf(-a)); }
__device__ __forceinline__ float silu_grad(float a) {
  const float s = sigmoid_fast(a);
  return s * (1.f + a * (1.f - s));
}
__device__ __forceinline__ float gelu_erf(float a) { return 0.5f * a * (1.f + erff(a * float(M_SQRT1_2))); }
__device__ __forceinline__ float gelu_erf_grad(float a) {
  constexpr float kBeta = float(M_2_SQRTPI * M_SQRT1_2 * 0.5);
  const float cdf = 0.5f * (1.f + erff(a * float(M_SQRT1_2)));
  return cdf + a * (kBeta * expf(-0.5f * a * a));
}
// The cube first, then the fused a + kappa cube, as PyTorch's kernel rounds it.
__device__ __forceinline__ float gelu_tanh(float a) {
  constexpr float kBeta = float(M_SQRT2 * M_2_SQRTPI * 0.5), kKappa = 0.044715f;
  const float cube = a * a * a;
  return 0.5f * a * (1.f + tanhf(kBeta * (a + kKappa * cube)));
}
__device__ __forceinline__ float gelu_tanh_grad(float a) {
  constexpr float kBeta = float(M_SQRT2 * M_2_SQRTPI * 0.5), kKappa = 0.044715f;
  const float a_sq = a * a;
  const float t = tanhf(kBeta * (a + kKappa * a_sq * a));
  return 0.5f * (1.f + t) + 0.5f * a * (1.f - t * t) * kBeta * (1.f + 3.f * kKappa * a_sq);
}
// a / 3 correctly rounded for |a| <= 3, without the IEEE division's range check and slow-path call (about 20
// instructions and two branches where this is 4): q = a * RN(1/3) is within an ulp, the remainder a - 3 q is exact
// in one fma, and one correction step rounds correctly (Markstein; nvcc's own fast path of a / 3.f, which it takes
// after checking the operands' range). The sign is a's: the correction turns -0 into +0. tests/gpu/test_region_ops.py
// compares it with a / 3.f for every float in [-3, 3], bit for bit (H100; without the copysign only -0 differs).
__device__ __forceinline__ float div3(float a) {
  constexpr float kThird = 1.f / 3.f;
  const float q = a * kThird;
  return copysignf(fmaf(fmaf(-3.f, q, a), kThird, q), a);
}

// F.hardswish: a * min(max(a + 3, 0), 6) / 6; its gradient as hardswish_backward. hardswish and hardsigmoid
// multiply by 1/6 as PyTorch's CUDA kernels do (the same bits; a division by 6 rounds differently and costs
// a dozen instructions with a slow-path branch). The gradient divides by 3 as PyTorch does (div3: the same bits).
__device__ __forceinline__ float hardswishf(float a) { return a * fminf(fmaxf(a + 3.f, 0.f), 6.f) * (1.f / 6.f); }
__device__ __forceinline__ float hardswish_grad(float a) {
  const float inside = div3(a) + 0.5f;  // taken always: selects, no branch
  return a < -3.f ? 0.f : (a <= 3.f ? inside : 1.f);
}
__device__ __forceinline__ float hardsigmoidf(float a) { return fminf(fmaxf(a + 3.f, 0.f), 6.f) * (1.f / 6.f); }
// clamp / hardtanh: NaN stays NaN, as torch.clamp.
__device__ __forceinline__ float clampf(float a, float lo, float hi) {
  return a != a ? a : fminf(fmaxf(a, lo), hi);
}
// torch.clamp's gradient: 1 strictly inside the bounds, 0 outside; for a value exactly ON a bound it is
// PyTorch's version that decides (2.11 passes the gradient there, 2.15 does not), so the emitted file asks
// the PyTorch that builds it and sets these two (hardtanh's gradient is 0 on its bounds in both).
#ifndef KGEN_CLAMP_GRAD_AT_LO
#define KGEN_CLAMP_GRAD_AT_LO 1
#endif
#ifndef KGEN_CLAMP_GRAD_AT_HI
#define KGEN_CLAMP_GRAD_AT_HI 1
#endif
__device__ __forceinline__ float clamp_grad(float a, float lo, float hi) {
  if (a > lo && a < hi) return 1.f;
  if (a == lo && a <= hi) return KGEN_CLAMP_GRAD_AT_LO ? 1.f : 0.f;
  if (a == hi && a >= lo) return KGEN_CLAMP_GRAD_AT_HI ? 1.f : 0.f;
  return 0.f;
}
__device__ __forceinline__ float minimumf(float a, float b) { return (a != a || b != b) ? a + b : fminf(a, b); }
__device__ __forceinline__ float maximumf(float a, float b) { return (a != a || b != b) ? a + b : fmaxf(a, b); }
// F.mish: a * tanh(softplus(a)), as PyTorch's kernel computes it, a * tanh(log1p(exp(a))): its bits.
__device__ __forceinline__ float mishf(float a) { return a * tanhf(log1pf(expf(a))); }
// As a backward recomputes it and its derivative, from e = exp(a): tanh(log1p(e)) = ((1 + e)^2 - 1) / ((1 + e)^2 + 1)
// = n / (n + 2) for n = e (e + 2) >= 0 (no cancellation), so one exp and a division give it, where PyTorch's formula
// takes exp, log1p and tanh and two exps more. The division is __fdividef (a reciprocal and a product, 2 ulp;
// d = n + 2 lies in [2, 2^58) where it holds). Within a few ulp of float64, as PyTorch's formula
// (tests/gpu/test_region_ops.py measures both). (H100, L2-94's rows backward, one process: 72.9 us with PyTorch's
// formula, 58.3 with this one and IEEE divisions, 50.6 with __fdividef.) Past a = 20 the tanh is 1.0f (and e^2 would
// overflow past 44), so the derivative is 1 (NaN at +inf, as PyTorch's inf * 1 * 0).
__device__ __forceinline__ float mish_fast(float a) {
  if (a > 20.f) return a;
  const float e = expf(a);
  const float n = e * (e + 2.f);
  return a * __fdividef(n, n + 2.f);
}
// d mish / da = t + a sigmoid(a) (1 - t^2), with t = n / d, d = n + 2, sigmoid(a) = e / (1 + e) and
// 1 - t^2 = 4 (1 + e)^2 / d^2: (n + 4 a e (1 + e) / d) / d.
__device__ __forceinline__ float mish_grad(float a) {
  if (a > 20.f) return 1.f + 0.f * a;
  const float e = expf(a);
  const float n = e * (e + 2.f);
  const float d = n + 2.f;
  const float r = __fdividef(1.f, d);
  return (n + 4.f * a * e * (1.f + e) * r) * r;
}
__device__ __forceinline__ float softplusf(float a, float beta, float threshold) {
  return a * beta > threshold ? a : log1pf(expf(a * beta)) / beta;
}
__device__ __forceinline__ float softplus_grad(float a, float beta, float threshold) {
  const float z = expf(a * beta);
  return a * beta > threshold ? 1.f : z / (z + 1.f);
}

// ELU, SELU and CELU as PyTorch's one kernel for the three: x <= 0 ? expm1(x input_scale) alpha scale :
// x scale; the derivative as elu_backward on the input: x <= 0 ? input_scale alpha scale exp(x input_scale)
// : scale.
__device__ __forceinline__ float eluf(float a, float alpha, float scale, float input_scale) {
  return a <= 0.f ? expm1f(a * input_scale) * (alpha * scale) : a * scale;
}
__device__ __forceinline__ float elu_grad(float a, float alpha, float scale, float input_scale) {
  return a <= 0.f ? input_scale * (alpha * scale) * expf(a * input_scale) : scale;
}
// F.logsigmoid: min(0, x) - log1p(exp(-|x|)); its derivative as log_sigmoid_backward.
__device__ __forceinline__ float logsigmoidf(float a) { return fminf(0.f, a) - log1pf(expf(-fabsf(a))); }
__device__ __forceinline__ float logsigmoid_grad(float a) {
  const float z = expf(-fabsf(a));
  return a < 0.f ? 1.f - z / (1.f + z) : z / (1.f + z);
}
// x ** p for a constant p, with PyTorch's special cases (x * x, x * x * x, sqrt, rsqrt, 1 / x, 1 / x^2);
// the derivative as pow_backward: p x^(p - 1), and 0 where p == 0.
__device__ __forceinline__ float pow_scalar(float a, float p) {
  if (p == 2.f) return a * a;
  if (p == 3.f) return a * a * a;
  if (p == 0.5f) return sqrtf(a);
  if (p == -0.5f) return rsqrtf(a);
  if (p == -1.f) return 1.f / a;
  if (p == -2.f) return 1.f / (a * a);
  return powf(a, p);
}
__device__ __forceinline__ float pow_grad(float a, float p) { return p == 0.f ? 0.f : p * pow_scalar(a, p - 1.f); }

}  // namespace kgen
