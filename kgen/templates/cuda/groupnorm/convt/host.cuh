// ---- groupnorm/convt/host.cuh: a region whose input is kgen's wgmma ConvTranspose2d (`--conv fused`) ----
//
//   x --ConvTranspose2d (conv/convt_wgmma.cuh, TF32, no bias)--> z --Pro--> --GroupNorm--> y --Epi--> out
//
// Forward: the conv's epilogue folds the GroupNorm moments of Pro(z) (the conv's bias is the prologue's parameter:
// the same single rounded add as PyTorch's) and stores z once; then the region's apply sweep (region_twopass::
// forward_apply) reads it back and writes out. So z is written once and read once, where the library conv followed
// by the region writes it once and reads it twice. Without autograd, where the epilogue reads y alone, the conv and the
// normalise run in one launch (conv/convt_wgmma_infer.cuh). Backward: the region's backward on the saved z writes
// z's gradient channels-last (groupnorm/convt/backward_channels_last.cuh), from which kgen's wgmma kernels (or cuDNN's
// NHWC ones, where kgen's do not apply) take the conv's input and weight gradients. A region without a reduction.
namespace kgen {
namespace region_convt {

// Why kgen's conv does not take this call ("" where it does): the GPU, the dtype, the conv's stride, dilation,
// groups or output padding, the shared memory it would need. The caller then runs the library conv and the region.
template <class Pro>
std::string unsupported(const at::Tensor& x, const at::Tensor& conv_weight, int64_t groups,
                        const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                        const std::vector<int64_t>& output_padding, const std::vector<int64_t>& dilation,
                        int64_t conv_groups) {
  return convt::convt_wgmma_unsupported<Pro>(x, conv_weight, groups, stride, padding, output_padding, dilation,
                                             conv_groups);
}

// The conv and the region, for autograd: {out, z (the conv without its bias, saved for the backward), mean, rstd}.
template <class Pro, class Epi, int kBlock>
std::vector<at::Tensor> forward(const at::Tensor& x, const at::Tensor& conv_weight, const at::Tensor& gamma_in,
                                const at::Tensor& beta_in, const std::vector<at::Tensor>& prologue_params,
                                const std::vector<at::Tensor>& epilogue_params, int64_t groups, double eps,
                                const std::vector<int64_t>& padding) {
  namespace rt = region_twopass;
  TORCH_CHECK(conv_weight.dim() == 4, "kgen: a ConvTranspose2d weight is (C_in, C_out, kH, kW), got ",
              str(conv_weight.dim()), " dims");
  const c10::cuda::CUDAGuard device_guard(x.device());
  // Never faithful (the convt entry points set no faithful scope), so the conv's plane need not be known here.
  const RegionParams params = rt::region_params<Pro, Epi>(prologue_params, epilogue_params, conv_weight.size(1),
                                                          x.device(), /*plane=*/0);
  // The conv's input by the bulk path where it applies (H100, L2-19: conv + moments 3.56-3.64 ms against the 4-byte
  // copies' 3.69-3.70).
  auto zs = convt::convt_wgmma_moments<Pro>(x, conv_weight, params, groups, eps, padding, /*chunks_in_flight=*/2,
                                            /*l2_prefetch=*/false, /*pitch_align=*/4, /*bulk_input=*/true);
  const at::Tensor &z = zs[0], &mean = zs[1], &rstd = zs[2];
  const RegionShape shape = rt::check_region(z, gamma_in, beta_in, groups, ReduceKind::kNone, {});
  const at::Tensor gamma = gamma_in.defined() ? gamma_in.contiguous() : at::Tensor();
  const at::Tensor beta = beta_in.defined() ? beta_in.contiguous() : at::Tensor();
  auto out = at::empty_like(z);
  at::Tensor aux;
  const SplitPlan plan = plan_split<kBlock>(shape.plane);
  rt::check_grid(shape.batch * shape.channels * plan.splits, "sweep");
  rt::forward_apply<Pro, Epi, ReduceKind::kNone, ReduceOp::kSum, kBlock>(
      z, params, shape, plan, as_float2(mean), rstd.data_ptr<float>(), rt::data_or_null(gamma), rt::data_or_null(beta),
      out, aux, true);
  return {out, z, mean, rstd};
}

// out alone, for a forward without autograd: the conv and the normalise in one launch where it takes the call and is
// predicted to pay (an epilogue of y alone), else forward's two kernels.
template <class Pro, class Epi, int kBlock>
at::Tensor inference(const at::Tensor& x, const at::Tensor& conv_weight, const at::Tensor& gamma,
                     const at::Tensor& beta, const std::vector<at::Tensor>& prologue_params,
                     const std::vector<at::Tensor>& epilogue_params, int64_t groups, double eps,
                     const std::vector<int64_t>& padding) {
  if constexpr (!DirectGrads<Epi>::value) {
    const c10::cuda::CUDAGuard device_guard(x.device());
    const RegionParams params = region_twopass::region_params<Pro, Epi>(prologue_params, epilogue_params,
                                                                        conv_weight.size(1), x.device(), /*plane=*/0);
    const at::Tensor y =
        convt::convt_wgmma_infer_where_it_pays<Pro, Epi>(x, conv_weight, params, gamma, beta, groups, eps, padding);
    if (y.defined()) return y;
  }
  return forward<Pro, Epi, kBlock>(x, conv_weight, gamma, beta, prologue_params, epilogue_params, groups, eps,
                                   padding)[0];
}

// {dx, dconv_weight (each undefined where not asked for), dgamma, dbeta, dprologue (Kp, C), depilogue (Ke, C)} from
// forward's saved z, mean and rstd.
template <class Pro, class Epi, int kBlock>
std::vector<at::Tensor> backward(const at::Tensor& dout, const at::Tensor& x, const at::Tensor& conv_weight,
                                 const at::Tensor& z, const at::Tensor& gamma, const at::Tensor& beta,
                                 const std::vector<at::Tensor>& prologue_params,
                                 const std::vector<at::Tensor>& epilogue_params, const at::Tensor& mean,
                                 const at::Tensor& rstd, int64_t groups, const std::vector<int64_t>& padding,
                                 bool input_grad, bool weight_grad) {
  auto grads = region_backward_channels_last<Pro, Epi, kBlock>(dout, z, gamma, beta, prologue_params, epilogue_params,
                                                               mean, rstd, groups);
  auto conv = convt::convt_wgmma_conv_backward(grads[0], x, conv_weight, padding, input_grad, weight_grad);
  return {conv[0], conv[1], grads[1], grads[2], grads[3], grads[4]};
}

}  // namespace region_convt
}  // namespace kgen
