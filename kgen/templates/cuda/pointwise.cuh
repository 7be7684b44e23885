// ---- pointwise: the element-wise op a GroupNorm kernel applies to its input on the fly ----
// Each op gives its value and, for backward, its derivative. Kernels are templated on the op, so a
// fused "op then GroupNorm" never stores the op's result: statistics, normalise and backward all
// recompute it from the input they read anyway.
namespace kgen {

struct Identity {
  __device__ __forceinline__ float operator()(float x) const { return x; }
  __device__ __forceinline__ void value_and_derivative(float x, float& value, float& derivative) const {
    value = x;
    derivative = 1.f;
  }
};

// F.gelu(x): 0.5 x (1 + erf(x / sqrt 2)), the formulas of PyTorch's own GELU kernels.
struct GeluErf {
  __device__ __forceinline__ float operator()(float x) const {
    return 0.5f * x * (1.f + erff(x * static_cast<float>(M_SQRT1_2)));
  }
  __device__ __forceinline__ void value_and_derivative(float x, float& value, float& derivative) const {
    constexpr float kBeta = static_cast<float>(M_2_SQRTPI * M_SQRT1_2 * 0.5);  // 1 / sqrt(2 pi)
    const float cdf = 0.5f * (1.f + erff(x * static_cast<float>(M_SQRT1_2)));
    value = x * cdf;
    derivative = cdf + x * (kBeta * expf(-0.5f * x * x));
  }
};

// F.gelu(x, approximate='tanh'): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
struct GeluTanh {
  static constexpr float kBeta = static_cast<float>(M_SQRT2 * M_2_SQRTPI * 0.5);  // sqrt(2 / pi)
  static constexpr float kKappa = 0.044715f;
  __device__ __forceinline__ float operator()(float x) const {
    const float inner = kBeta * (x + kKappa * x * x * x);
    return 0.5f * x * (1.f + tanhf(inner));
  }
  __device__ __forceinline__ void value_and_derivative(float x, float& value, float& derivative) const {
    const float x_sq = x * x;
    const float inner = kBeta * (x + kKappa * x_sq * x);
    const float t = tanhf(inner);
    value = 0.5f * x * (1.f + t);
    derivative = 0.5f * (1.f + t) + 0.5f * x * (1.f - t * t) * kBeta * (1.f + 3.f * kKappa * x_sq);
  }
};

}  // namespace kgen
