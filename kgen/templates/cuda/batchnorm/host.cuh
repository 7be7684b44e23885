// ---- batchnorm/host.cuh: the batch norm step's host side (kernels: batchnorm/train.cuh, batchnorm/backward.cuh) ----
// Argument checks (device, dtype, shapes of the per-channel vectors, the pooling window against the input),
// the split of each channel's units between blocks, the choice of kernel variant (the storage type; 4-value
// packs; the window size the file was emitted for), and the forward / backward sequences of launches.
namespace kgen {

struct BnTensors {
  at::Tensor weight, bias, running_mean, running_var, conv_bias;  // each may be undefined
};

inline const float* data_or_null(const at::Tensor& t) { return t.defined() ? t.data_ptr<float>() : nullptr; }
inline float* mutable_data_or_null(const at::Tensor& t) { return t.defined() ? t.data_ptr<float>() : nullptr; }

inline void check_channel_vector(const at::Tensor& t, int64_t channels, const at::Device& device, const char* what) {
  if (!t.defined()) return;
  check_float_cuda(t, what);
  TORCH_CHECK(t.numel() == channels && t.is_contiguous(), "kgen: batch norm ", what, " must have ", str(channels),
              " contiguous values, got shape ", str(t.sizes()));
  TORCH_CHECK(t.device() == device, "kgen: batch norm ", what, " is on ", t.device().str(), " but the input is on ",
              device.str());
}

// Whether the step's kernels read and write x's own float16 / bfloat16 storage: where the output is of x's dtype
// (the call's rounding is that dtype's). Elsewhere (float32 x, or a half x whose ops promote the output to float32)
// they take float32, a half x converted once.
inline bool bn_reads_storage(const at::Tensor& x, int64_t rounding) {
  const at::ScalarType type = x.scalar_type();
  return (type == at::kHalf || type == at::kBFloat16) && rounding_type(rounding) == type;
}

// The peeled convolution bias the kernels add to a float16 / bfloat16 x (BnShift, batchnorm/train.cuh), or nullptr: a
// float32 step's statistics drop it (the running mean adds it back).
inline const float* bn_shift(const at::Tensor& x, const at::Tensor& conv_bias) {
  return x.scalar_type() != at::kFloat && conv_bias.defined() ? conv_bias.data_ptr<float>() : nullptr;
}

inline BnShape bn_shape(const at::Tensor& x, const std::vector<int64_t>& window) {
  check_storage(x, "batch norm input");
  TORCH_CHECK(x.dim() >= 2 && x.dim() <= 5, "kgen: batch norm input must have shape (N, C, *) of rank 2 to 5, got ",
              str(x.sizes()));
  int64_t dims[3] = {1, 1, 1};
  for (int64_t k = 2; k < x.dim(); ++k) dims[3 - (x.dim() - k)] = x.size(k);
  int win[3] = {1, 1, 1};
  const int64_t given = int64_t(window.size());
  TORCH_CHECK(given == 0 || given == x.dim() - 2, "kgen: pooling window of ", str(given), " dims for an input of rank ",
              str(x.dim()));
  for (int64_t k = 0; k < given; ++k) {
    TORCH_CHECK(window[k] >= 1, "kgen: pooling window sizes must be positive");
    win[3 - given + k] = int(window[k]);
  }
  for (int k = 0; k < 3; ++k) {
    TORCH_CHECK(dims[k] >= win[k], "kgen: input of shape ", str(x.sizes()), " is smaller than the pooling window");
  }
  BnShape s{x.size(0), x.size(1), dims[0], dims[1], dims[2], win[0], win[1], win[2],
            dims[0] / win[0], dims[1] / win[1], dims[2] / win[2], {}, {}};
  TORCH_CHECK(s.plane() < (int64_t(1) << 31), "kgen: batch norm plane of ", str(s.plane()),
              " values: at most 2^31 - 1");
  s.by_ow = resident_detail::FastDiv(s.ow);
  s.by_oh = resident_detail::FastDiv(s.oh);
  return s;
}

inline std::vector<int64_t> bn_out_sizes(const at::Tensor& x, const BnShape& s, bool pool) {
  std::vector<int64_t> sizes(x.sizes().begin(), x.sizes().end());
  if (pool) {
    const int64_t out[3] = {s.od, s.oh, s.ow};
    for (int64_t k = 2; k < x.dim(); ++k) sizes[k] = out[3 - (x.dim() - k)];
  }
  return sizes;
}

// The units a channel's blocks walk: windows with pooling, else 4-value packs where the planes allow.
inline bool bn_vec(const at::Tensor& x, const BnShape& s, bool pool) {
  return !pool && s.plane() % 4 == 0 && pack_aligned(x);
}

template <int kBlock>
inline BnSplit bn_split(const at::Tensor& x, const BnShape& s, bool pool, bool vec) {
  const int64_t units = pool ? s.out_plane() : (vec ? s.plane() / 4 : s.plane());
  TORCH_CHECK(units * s.n < (int64_t(1) << 40), "kgen: batch norm channel too large");
  return plan_bn_split<kBlock>(units, s.n, s.c, x.get_device());
}

// Calls fn(vec, win) with compile-time values: without pooling, 4-value packs where `vec` allows; with
// pooling, the window size the file was emitted for (kWin) where the window has it, else 0 (the walk).
template <bool kPool, int kWin, class Fn>
inline void dispatch_bn_unit(bool vec, const BnShape& s, Fn&& fn) {
  using NoWin = std::integral_constant<int, 0>;
  if constexpr (kPool) {
    if constexpr (kWin > 0 && kWin <= kWindowRegs) {
      if (s.kd * s.kh * s.kw == kWin) {
        fn(std::false_type{}, std::integral_constant<int, kWin>{});
        return;
      }
    }
    fn(std::false_type{}, NoWin{});
  } else if (vec) {
    fn(std::true_type{}, NoWin{});
  } else {
    fn(std::false_type{}, NoWin{});
  }
}

// Returns {out, mean, rstd, extremes}: the statistics the normalisation used (batch or running) and, for a max
// pooling with a backward to follow (for_backward), each window's winning x (out's shape; else undefined). out and
// the extremes are of input's dtype (float32, float16 or bfloat16: bn_reads_storage), the statistics float32.
template <class F, ReduceOp kOp, bool kPool, int kWin, bool kMonotone, int kBlock>
std::vector<at::Tensor> bn_forward(const at::Tensor& input, const BnTensors& t, bool batch_stats, double factor,
                                   double eps, const std::vector<int64_t>& window, bool for_backward,
                                   const std::vector<at::Tensor>& params) {
  const BnShape shape = bn_shape(input, kPool ? window : std::vector<int64_t>{});
  const c10::cuda::CUDAGuard device_guard(input.device());
  const int64_t C = shape.c;
  for (const auto& [v, what] : {std::pair{&t.weight, "weight"}, {&t.bias, "bias"}, {&t.running_mean, "running_mean"},
                                {&t.running_var, "running_var"}, {&t.conv_bias, "convolution bias"}}) {
    check_channel_vector(*v, C, input.device(), what);
  }
  TORCH_CHECK(t.running_mean.defined() == t.running_var.defined(), "kgen: batch norm needs both running statistics or neither");
  TORCH_CHECK(batch_stats || t.running_mean.defined(), "kgen: batch norm without batch statistics needs running ones");
  const int64_t count = shape.n * shape.plane();
  TORCH_CHECK(!batch_stats || count > 1, "kgen: expected more than 1 value per channel when training, got input size ",
              str(input.sizes()));
  const at::Tensor x = input.contiguous();
  at::Tensor out = at::empty(bn_out_sizes(x, shape, kPool), x.options());
  const bool save_extremes = kSavesExtremes<kPool, kOp> && for_backward;
  at::Tensor extremes = save_extremes ? at::empty_like(out) : at::Tensor();
  at::Tensor mean, rstd;
  const auto stream = at::cuda::getCurrentCUDAStream();
  const auto floats = x.options().dtype(at::kFloat);
  const float* shift = bn_shift(x, t.conv_bias);
  if (batch_stats) {
    mean = at::empty({C}, floats);
    rstd = at::empty({C}, floats);
    if (x.numel() == 0) return {out, mean.zero_(), rstd.zero_(), extremes};
    const bool vec = bn_vec(x, shape, false);  // the statistics read the whole input, pooled or not
    const BnSplit split = bn_split<kBlock>(x, shape, false, vec);
    at::Tensor partial = at::empty({C * split.splits * int64_t(sizeof(Moments) / sizeof(float))}, floats);
    auto* moments = reinterpret_cast<Moments*>(partial.data_ptr<float>());
    dispatch_storage(x.scalar_type(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      dispatch_vec(vec, [&](auto v) {
        constexpr bool kVec = decltype(v)::value;
        bn_moments_kernel<kBlock, kVec><<<C * split.splits, kBlock, 0, stream>>>(data_as<const T>(x), shift, shape,
                                                                                  split, moments);
      });
      C10_CUDA_KERNEL_LAUNCH_CHECK();
      bn_finalize_kernel<<<blocks_for(C * kWarpSize, 128), 128, 0, stream>>>(
          data_as<const T>(x), shift, shape, moments, split.splits, eps, factor,
          shift != nullptr ? nullptr : data_or_null(t.conv_bias),
          mutable_data_or_null(t.running_mean), mutable_data_or_null(t.running_var), mean.data_ptr<float>(),
          rstd.data_ptr<float>());
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    });
  } else {
    // Running statistics: the peeled convolution bias moves into the mean (y = (x + b0 - rm) rstd), unless the kernels
    // add it (shift).
    mean = t.conv_bias.defined() && shift == nullptr ? t.running_mean - t.conv_bias : t.running_mean.clone();
    rstd = at::rsqrt(t.running_var.to(at::kDouble) + eps).to(at::kFloat);
    if (x.numel() == 0) return {out, mean, rstd, extremes};
  }
  if (out.numel() == 0) return {out, mean, rstd, extremes};
  const RegionParams table{param_table(params, C, x.device(), "batch norm element-wise"), ParamTable{}};
  const bool vec = bn_vec(x, shape, kPool);
  const BnSplit split = bn_split<kBlock>(x, shape, kPool, vec);
  dispatch_storage(x.scalar_type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    dispatch_bn_unit<kPool, kWin>(vec, shape, [&](auto v, auto w) {
      constexpr bool kV = decltype(v)::value;
      constexpr int kW = decltype(w)::value;
      const auto launch = [&](auto kernel) {
        kernel<<<C * split.splits, kBlock, 0, stream>>>(
            data_as<const T>(x), shift, mean.data_ptr<float>(), rstd.data_ptr<float>(), data_or_null(t.weight),
            data_or_null(t.bias), shape, split, table, data_as<T>(out),
            extremes.defined() ? data_as<T>(extremes) : nullptr);
      };
      if constexpr (kSavesExtremes<kPool, kOp>) {
        if (save_extremes) {
          launch(bn_apply_kernel<F, kOp, kPool, kV, kW, kMonotone, true, kBlock, T>);
          return;
        }
      }
      launch(bn_apply_kernel<F, kOp, kPool, kV, kW, kMonotone, false, kBlock, T>);
    });
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return {out, mean, rstd, extremes};
}

// Returns {dx, dweight (C), dbias (C), dconv_bias (C), dparams (kParams, C)}. grad, input, the extremes and dx are
// of one storage type (the forward's), the rest float32.
template <class F, ReduceOp kOp, bool kPool, int kWin, int kBlock>
std::vector<at::Tensor> bn_backward(const at::Tensor& grad, const at::Tensor& input, const at::Tensor& weight,
                                    const at::Tensor& bias, const at::Tensor& mean, const at::Tensor& rstd,
                                    const at::Tensor& extremes_in, const at::Tensor& conv_bias, bool batch_stats,
                                    const std::vector<int64_t>& window, const std::vector<at::Tensor>& params) {
  const BnShape shape = bn_shape(input, kPool ? window : std::vector<int64_t>{});
  const c10::cuda::CUDAGuard device_guard(input.device());
  const int64_t C = shape.c;
  check_channel_vector(weight, C, input.device(), "weight");
  check_channel_vector(bias, C, input.device(), "bias");
  check_channel_vector(conv_bias, C, input.device(), "convolution bias");
  const at::Tensor x = input.contiguous();
  const float* shift = bn_shift(x, conv_bias);
  check_storage(grad, "gradient of the output");
  TORCH_CHECK(grad.scalar_type() == x.scalar_type(), "kgen: batch norm output gradient of dtype ", grad.scalar_type(),
              " for an input of ", x.scalar_type());
  const std::vector<int64_t> out_sizes = bn_out_sizes(x, shape, kPool);
  TORCH_CHECK(grad.sizes() == c10::IntArrayRef(out_sizes), "kgen: output gradient has shape ", str(grad.sizes()),
              ", expected ", str(c10::IntArrayRef(out_sizes)));
  const at::Tensor dout = grad.contiguous();
  at::Tensor extremes;
  if constexpr (kSavesExtremes<kPool, kOp>) {
    TORCH_CHECK(extremes_in.defined(), "kgen: a max pooling's backward needs the forward's extremes");
    check_storage(extremes_in, "saved extremes");
    TORCH_CHECK(extremes_in.device() == x.device() && extremes_in.scalar_type() == x.scalar_type() &&
                    extremes_in.sizes() == c10::IntArrayRef(out_sizes),
                "kgen: the saved extremes must be the forward's, of shape ", str(c10::IntArrayRef(out_sizes)), ", got ",
                str(extremes_in.sizes()));
    extremes = extremes_in.contiguous();
  }
  at::Tensor dx = at::empty_like(x, at::MemoryFormat::Contiguous);
  const int64_t rows = 2 + F::kParams;
  const auto floats = x.options().dtype(at::kFloat);
  at::Tensor totals = at::zeros({rows, C}, floats);
  if (x.numel() > 0) {
    const RegionParams table{param_table(params, C, x.device(), "batch norm element-wise"), ParamTable{}};
    const bool vec = bn_vec(x, shape, kPool) && pack_aligned(dout);
    const BnSplit split = bn_split<kBlock>(x, shape, kPool, vec);
    const auto stream = at::cuda::getCurrentCUDAStream();
    at::Tensor partial = at::empty({rows * C * split.splits}, floats);
    if (!kPool || shape.out_plane() > 0) {
      dispatch_storage(x.scalar_type(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        dispatch_bn_unit<kPool, kWin>(vec, shape, [&](auto v, auto w) {
          constexpr bool kV = decltype(v)::value;
          constexpr int kW = decltype(w)::value;
          bn_grad_sums_kernel<F, kOp, kPool, kV, kW, kBlock><<<C * split.splits, kBlock, 0, stream>>>(
              data_as<const T>(dout), data_as<const T>(x), shift,
              extremes.defined() ? data_as<const T>(extremes) : nullptr,
              mean.data_ptr<float>(), rstd.data_ptr<float>(), data_or_null(weight), data_or_null(bias), shape, split,
              table, partial.data_ptr<float>());
        });
      });
      C10_CUDA_KERNEL_LAUNCH_CHECK();
      bn_grad_totals_kernel<<<blocks_for(rows * C, 128), 128, 0, stream>>>(partial.data_ptr<float>(), rows, C,
                                                                          split.splits, totals.data_ptr<float>());
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    if (kPool && !shape.covers_input()) dx.zero_();  // the elements no window covers, where batch stats don't reach
    const double inv_count = 1.0 / double(shape.n * shape.plane());
    dispatch_storage(x.scalar_type(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      dispatch_bn_unit<kPool, kWin>(vec, shape, [&](auto v, auto w) {
        constexpr bool kV = decltype(v)::value;
        constexpr int kW = decltype(w)::value;
        const auto launch = [&](auto kernel) {
          kernel<<<C * split.splits, kBlock, 0, stream>>>(data_as<const T>(dout), data_as<const T>(x), shift,
                                                          mean.data_ptr<float>(), rstd.data_ptr<float>(),
                                                          data_or_null(weight), data_or_null(bias),
                                                          totals.data_ptr<float>(), inv_count, shape, split, table,
                                                          data_as<T>(dx));
        };
        if (batch_stats) {
          launch(bn_grad_apply_kernel<F, kOp, kPool, kV, kW, true, kBlock, T>);
        } else {
          launch(bn_grad_apply_kernel<F, kOp, kPool, kV, kW, false, kBlock, T>);
        }
      });
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  } else {
    dx.zero_();
  }
  at::Tensor dgamma = totals.select(0, 1).clone();  // sum gy xhat
  at::Tensor dbeta = totals.select(0, 0).clone();   // sum gy
  // The peeled convolution bias: with batch statistics the normalisation removes any per-channel shift, so
  // its gradient is exactly zero (in float16 / bfloat16 too, where the kernels add it: the reference's is that zero
  // plus the rounding of each dx summed); with running ones it is sum(dx) = a_c sum(gy). The zero is 0 * (the channel's
  // sums and scale): NaN where a NaN or Inf reached the channel, as PyTorch's sum over dx is.
  at::Tensor a = weight.defined() ? rstd * weight : rstd;
  at::Tensor dconv_bias = batch_stats ? (dgamma + dbeta + a) * 0 : a * dbeta;
  at::Tensor dparams = totals.narrow(0, 2, F::kParams).clone();
  return {dx, dgamma, dbeta, dconv_bias, dparams};
}

}  // namespace kgen
