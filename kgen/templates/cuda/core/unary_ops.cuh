// ---- core/unary_ops.cuh: the element-wise op a GroupNorm kernel applies to its input on the fly ----
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

// op(v + bias) for one channel: a convolution's bias, fused into the kernels that read its output (the
// conv then runs without its bias, and the separate full-size sweep in which PyTorch adds it disappears).
// __fadd_rn keeps the add a separately rounded float add, never contracted into an FMA with a nearby
// multiply: it is the very add PyTorch's bias sweep does, so u = v + bias is bitwise the reference's
// conv output. Without kChannelBias it is op(v), the same instructions as calling op directly.
template <class Op, bool kChannelBias>
struct ChannelOp {
  Op op;
  float bias;
  __device__ __forceinline__ float input(float v) const {
    if constexpr (kChannelBias) {
      return __fadd_rn(v, bias);
    } else {
      return v;
    }
  }
  __device__ __forceinline__ float operator()(float v) const { return op(input(v)); }
  __device__ __forceinline__ void value_and_derivative(float v, float& value, float& derivative) const {
    op.value_and_derivative(input(v), value, derivative);
  }
};

// The op of channel c; `bias` (C values) is read only when kChannelBias.
template <bool kChannelBias, class Op>
__device__ __forceinline__ ChannelOp<Op, kChannelBias> channel_op(const Op& op, const float* __restrict__ bias,
                                                                   int64_t c) {
  if constexpr (kChannelBias) {
    return ChannelOp<Op, true>{op, __ldg(bias + c)};
  } else {
    return ChannelOp<Op, false>{op, 0.f};
  }
}

}  // namespace kgen
