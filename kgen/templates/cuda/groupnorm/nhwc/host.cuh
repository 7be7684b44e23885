// ---- groupnorm/nhwc/host.cuh: planning and launches of the channels-last region kernels (design: groupnorm/nhwc/nhwc.cuh) ----
namespace kgen {
namespace region_nhwc {

// The tile width a launch takes (see Tile): 16 channels for C <= 16 on the 16-byte path, else 32.
template <int kBlock>
inline int tile_channels(bool vec, int64_t channels) {
  return kBlock <= 512 && vec && channels <= 16 ? 16 : 32;
}

// Calls f(kVec, kC) (std::integral_constant values) for the tile a launch takes.
template <int kBlock, class F>
inline void dispatch_tile(bool vec, int tile_c, F&& f) {
  if constexpr (kBlock <= 512) {
    if (tile_c == 16) return f(std::true_type{}, std::integral_constant<int, 16>{});  // 16 only on the 16-byte path
  }
  if (vec) return f(std::true_type{}, std::integral_constant<int, 32>{});
  f(std::false_type{}, std::integral_constant<int, 32>{});
}

template <int kBlock, int kC>
inline TilePlan plan_tiles_of(const RegionShape& shape) {
  using T = Tile<kBlock, 4, kC>;
  TilePlan plan;
  plan.channel_tiles = blocks_for(shape.channels, T::kC);
  plan.pixel_tiles = blocks_for(shape.plane, T::kP);
  constexpr int64_t kTargetTiles = std::max<int64_t>(1, 65536 / (T::kP * T::kC));
  int64_t per_split = std::min<int64_t>(std::max<int64_t>(plan.pixel_tiles, 1), kTargetTiles);
  int64_t splits = blocks_for(plan.pixel_tiles, per_split);
  if (splits > 4096) {
    per_split = blocks_for(plan.pixel_tiles, 4096);
    splits = blocks_for(plan.pixel_tiles, per_split);
  }
  plan.tiles_per_split = per_split;
  plan.splits = static_cast<int>(std::max<int64_t>(splits, 1));
  return plan;
}

template <int kBlock>
inline TilePlan plan_tiles(const RegionShape& shape, int tile_c) {
  if constexpr (kBlock <= 512) {
    if (tile_c == 16) return plan_tiles_of<kBlock, 16>(shape);
  }
  return plan_tiles_of<kBlock, 32>(shape);
}

// Whether x is (N, C, *spatial), 1 to 3 spatial dims, laid out channels-last (channel stride 1, the spatial
// dims dense outside it, the batch outside those). An NCHW-contiguous x (also when it is both, as with C == 1
// or a single position) is not: the NCHW kernels take it.
inline bool is_channels_last(const at::Tensor& x) {
  if (x.dim() < 3 || x.dim() > 5 || x.is_contiguous()) return false;
  int64_t expected = x.size(1);
  if (x.size(1) != 1 && x.stride(1) != 1) return false;
  for (int64_t d = x.dim() - 1; d >= 2; --d) {
    if (x.size(d) != 1 && x.stride(d) != expected) return false;
    expected *= x.size(d);
  }
  return x.size(0) == 1 || x.stride(0) == expected;
}

inline void check_channels_last(const at::Tensor& x) {
  TORCH_CHECK(is_channels_last(x), "kgen: the channels-last region kernels need a channels-last input ",
              "(x.contiguous(memory_format=torch.channels_last), or channels_last_3d), got sizes ", str(x.sizes()), " and strides ",
              str(x.strides()));
}

}  // namespace region_nhwc

// Forward of a region on a channels-last x (see region_nhwc::is_channels_last), no reduction: returns
// {out (NCHW-contiguous), mean (N, G, 2) as (hi, lo) pairs, rstd (N, G), undefined aux}.
template <class Pro, class Epi, ReduceKind R, ReduceOp O, int kBlock, int kGroups /*0 = runtime*/>
std::vector<at::Tensor> region_forward_nhwc(const at::Tensor& x, const at::Tensor& gamma_in, const at::Tensor& beta_in,
                                            const std::vector<at::Tensor>& prologue_params,
                                            const std::vector<at::Tensor>& epilogue_params, int64_t groups,
                                            double eps, const std::vector<int64_t>& window) {
  namespace rn = region_nhwc;
  namespace rt = region_twopass;
  static_assert(R == ReduceKind::kNone, "kgen: the channels-last region kernels take regions without a reduction");
  const RegionShape shape = rt::check_region(x, gamma_in, beta_in, groups, R, window);
  rn::check_channels_last(x);
  const c10::cuda::CUDAGuard device_guard(x.device());
  const RegionParams params = rt::region_params<Pro, Epi>(prologue_params, epilogue_params, shape.channels,
                                                          x.device(), shape.plane);
  const at::Tensor gamma = gamma_in.defined() ? gamma_in.contiguous() : at::Tensor();
  const at::Tensor beta = beta_in.defined() ? beta_in.contiguous() : at::Tensor();
  const auto options = x.options();
  auto out = at::empty(x.sizes(), options);  // NCHW-contiguous
  auto mean = at::empty({shape.batch, shape.groups, 2}, options);
  auto rstd = at::empty({shape.batch, shape.groups}, options);
  if (x.numel() == 0) {
    mean.zero_();
    rstd.zero_();
    return {out, mean, rstd, at::Tensor()};
  }
  const auto stream = at::cuda::getCurrentCUDAStream();
  const bool vec = shape.channels % 4 == 0 && rt::aligned(x);
  const int tile_c = rn::tile_channels<kBlock>(vec, shape.channels);
  const rn::TilePlan plan = rn::plan_tiles<kBlock>(shape, tile_c);
  const int64_t rows = shape.batch * shape.groups;
  const int64_t split_blocks = shape.batch * plan.channel_tiles * plan.splits;
  const int64_t tile_blocks = shape.batch * plan.channel_tiles * plan.pixel_tiles;
  rt::check_grid(tile_blocks, "channels-last apply");
  float2* mean_ptr = as_float2(mean);

  auto partial = at::empty({shape.batch * shape.channels * plan.splits * int64_t(sizeof(Moments))},
                           options.dtype(at::kByte));
  auto pilots = at::empty({rows}, options);
  auto* partial_ptr = reinterpret_cast<Moments*>(partial.data_ptr());
  rn::dispatch_tile<kBlock>(vec, tile_c, [&](auto kv, auto kc) {
    rn::stats_partial_kernel<Pro, kBlock, decltype(kv)::value, decltype(kc)::value><<<split_blocks, kBlock, 0, stream>>>(
        x.data_ptr<float>(), params, shape, plan, partial_ptr, pilots.data_ptr<float>());
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  const int64_t per_row = shape.channels_per_group() * plan.splits;
  TORCH_CHECK(per_row < (int64_t(1) << 31), "kgen: too many chunks per group");
  rt::stats_finalize_kernel<kBlock><<<blocks_for(rows * kWarpSize, kBlock), kBlock, 0, stream>>>(
      partial_ptr, static_cast<int>(per_row), rows, pilots.data_ptr<float>(), eps, params.statistics, mean_ptr,
      rstd.data_ptr<float>());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  rn::dispatch_tile<kBlock>(vec, tile_c, [&](auto kv, auto kc) {
    rn::apply_kernel<Pro, Epi, kBlock, decltype(kv)::value, decltype(kc)::value><<<tile_blocks, kBlock, 0, stream>>>(
        x.data_ptr<float>(), params, shape, plan, mean_ptr, rstd.data_ptr<float>(), rt::data_or_null(gamma),
        rt::data_or_null(beta), out.data_ptr<float>());
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return {out, mean, rstd, at::Tensor()};
}

// Backward of a region on a channels-last x: returns {dx (channels-last, x's strides), dgamma (C), dbeta (C)
// (both undefined when affine=False), dprologue (Kp, C), depilogue (Ke, C)}.
template <class Pro, class Epi, ReduceKind R, ReduceOp O, int kBlock, int kGroups /*0 = runtime*/>
std::vector<at::Tensor> region_backward_nhwc(const at::Tensor& dout_in, const at::Tensor& x, const at::Tensor& gamma_in,
                                             const at::Tensor& beta_in, const std::vector<at::Tensor>& prologue_params,
                                             const std::vector<at::Tensor>& epilogue_params, const at::Tensor& mean,
                                             const at::Tensor& rstd, const at::Tensor& out_in, const at::Tensor& aux_in,
                                             int64_t groups, const std::vector<int64_t>& window) {
  namespace rn = region_nhwc;
  namespace rt = region_twopass;
  static_assert(R == ReduceKind::kNone, "kgen: the channels-last region kernels take regions without a reduction");
  (void)out_in;
  (void)aux_in;
  const RegionShape shape = rt::check_region(x, gamma_in, beta_in, groups, R, window);
  rn::check_channels_last(x);
  const c10::cuda::CUDAGuard device_guard(x.device());
  const RegionParams params = rt::region_params<Pro, Epi>(prologue_params, epilogue_params, shape.channels,
                                                          x.device(), shape.plane);
  check_float_cuda(dout_in, "gradient of the output");
  TORCH_CHECK(dout_in.device() == x.device(), "kgen: the output gradient is on ", dout_in.device().str(),
              " but the input is on ", x.device().str());
  TORCH_CHECK(dout_in.sizes().equals(x.sizes()), "kgen: the output gradient has shape ", str(dout_in.sizes()),
              ", expected ", str(x.sizes()));
  const int64_t rows = shape.batch * shape.groups;
  rt::check_saved_statistics(mean, rstd, x, rows);

  const auto dout = dout_in.contiguous();  // NCHW
  const bool affine = gamma_in.defined();
  const at::Tensor gamma = affine ? gamma_in.contiguous() : at::Tensor();
  const at::Tensor beta = affine ? beta_in.contiguous() : at::Tensor();
  const auto options = x.options();
  auto dx = at::empty_like(x);  // x is dense: the same (channels-last) strides
  at::Tensor dgamma, dbeta, dprologue, depilogue;
  std::tie(dgamma, dbeta, dprologue, depilogue) =
      rt::param_grad_buffers<Pro, Epi>(shape.channels, affine, options, x.numel() == 0);
  if (x.numel() == 0) return {dx, dgamma, dbeta, dprologue, depilogue};

  const auto stream = at::cuda::getCurrentCUDAStream();
  const bool vec = shape.channels % 4 == 0 && rt::aligned(x) && rt::aligned(dx);
  const int tile_c = rn::tile_channels<kBlock>(vec, shape.channels);
  const rn::TilePlan plan = rn::plan_tiles<kBlock>(shape, tile_c);
  const int64_t planes = shape.batch * shape.channels;
  const int64_t entries = planes * plan.splits;  // per (n, c, split)
  const int64_t split_blocks = shape.batch * plan.channel_tiles * plan.splits;
  rt::check_grid(split_blocks, "channels-last backward");
  const GroupShape gshape{shape.batch, shape.channels, shape.groups, shape.plane};
  const at::Tensor gamma_or_ones = affine ? gamma : at::ones({shape.channels}, options);
  auto gn_partial = at::empty({entries, 2}, options);
  auto epi_partial = at::empty({int64_t(Epi::kParams) * entries}, options);
  auto pro_partial = at::empty({int64_t(Pro::kParams) * entries}, options);
  auto plane_sums = at::empty({planes, 2}, options.dtype(at::kDouble));
  auto coef = at::empty({rows, 2}, options);
  const float* gamma_ptr = rt::data_or_null(gamma);
  const float* beta_ptr = rt::data_or_null(beta);
  const float2* mean_ptr = as_float2(mean);
  const float* rstd_ptr = rstd.data_ptr<float>();

  rn::dispatch_tile<kBlock>(vec, tile_c, [&](auto kv, auto kc) {
    rn::backward_kernel<Pro, Epi, kBlock, decltype(kv)::value, decltype(kc)::value, false>
        <<<split_blocks, kBlock, 0, stream>>>(
        x.data_ptr<float>(), dout.data_ptr<float>(), params, shape, plan, mean_ptr, rstd_ptr, gamma_ptr, beta_ptr,
        nullptr, nullptr, as_float2(gn_partial), Epi::kParams > 0 ? epi_partial.data_ptr<float>() : nullptr);
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  rt::group_backward<kBlock>(gn_partial, plan.splits, gamma_or_ones, rstd, gshape, plane_sums, coef, dgamma, dbeta);
  rn::dispatch_tile<kBlock>(vec, tile_c, [&](auto kv, auto kc) {
    rn::backward_kernel<Pro, Epi, kBlock, decltype(kv)::value, decltype(kc)::value, true>
        <<<split_blocks, kBlock, 0, stream>>>(
        x.data_ptr<float>(), dout.data_ptr<float>(), params, shape, plan, mean_ptr, rstd_ptr, gamma_ptr, beta_ptr,
        as_float2(coef), dx.data_ptr<float>(), nullptr, Pro::kParams > 0 ? pro_partial.data_ptr<float>() : nullptr);
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  rt::param_sums(epi_partial, Epi::kParams, pro_partial, Pro::kParams, entries, plan.splits, shape, depilogue,
                 dprologue);
  return {dx, dgamma, dbeta, dprologue, depilogue};
}

}  // namespace kgen
